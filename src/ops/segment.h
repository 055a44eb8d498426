/* The segment family's typed attributes (a node's a.seg), read and written by src/ops/segment.c,
   the gather ops built on it (src/ops/gather.c) and the CPU loops they call. */
#ifndef NN__OPS_SEGMENT_H
#define NN__OPS_SEGMENT_H
#include <stdint.h>

/* the reductions of SEGMENT_REDUCE */
enum { NN__SEG_SUM = 0, NN__SEG_MEAN = 1, NN__SEG_MAX = 2 };

typedef struct nn__segment_attr {
    /* SEGMENT_SORT: the index's keys. dim < 0: the index flattened, key = its value; else
       key = (the position's coordinates without dim, as a row-major number) * L + value
       (scatter_add's columns). A value outside [0, L) gets the key NK = cols * L, after
       every segment. */
    int dim;
    int64_t L, NK;
    /* SEGMENT_REDUCE, SEGMENT_GATHER, SEGMENT_MAX_GRAD: src [outer, E, inner] reduced by
       the index [E] into y [outer, S, inner] */
    int reduce;           /* NN__SEG_* */
    int has_base;         /* in[0] is added to (index_add); else zeros */
    int64_t outer, E, inner, S;
    int64_t skip;         /* a segment left 0 and given no gradient (padding_idx); -1: none */
} nn__segment_attr;

/* nn_moe_layer's dispatch slots (MOE_SLOTS, src/ops/segment.c): idx [E * C] from kept [B, E] */
static nn_tensor nn__moe_slots_op(nn_graph *g, nn_tensor kept, int64_t C, int which);

#endif
