/* The reduce family's typed attributes (a node's a.reduce), read and written by src/ops/reduce.c
   and the CPU loops it calls. */
#ifndef NN__OPS_REDUCE_H
#define NN__OPS_REDUCE_H
#include <stdint.h>

typedef struct nn__reduce_attr {
    float scale;         /* SUM_ALL, EXPAND_SCALAR: the factor (1, or 1/n for a mean) */
    float max_norm;      /* CLIP_SCALE: the gradient norm clipped to */
    int O, R, I;         /* RED_*, ARG*_DIM, CUMSUM*, REDUCE_GRAD: x viewed as [O, R, I], reduced
                            (or scanned) over R; the output is [O, I] */
    int fwd;             /* REDUCE_GRAD: the forward op (NN__OP_RED_*) */
    float p;             /* RED_NORM: the order p (INFINITY: the max norm) */
    float correction;    /* RED_VAR, RED_STD: divisor max(0, R - correction) */
    int acc;             /* SUM_ALL on a device: the ACCUMULATE node of its value whose addition
                            its kernel makes (src/ops/fuse.c's nn__fuse_tails), 0 none */
    int tail_correct, tail_grad; /* SUM_ALL of softmax cross-entropy's rows on a device: the
                            accuracy's SUM_ALL and the XENT_GRAD its launch makes too
                            (kernels/reduce.cl's xent_tail, nn__fuse_xent_tail), 0 none */
} nn__reduce_attr;

#endif
