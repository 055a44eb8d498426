/* The matmul family's typed attributes (a node's a.matmul), read and written by src/ops/matmul.c
   and the CPU loops it calls. */
#ifndef NN__OPS_MATMUL_H
#define NN__OPS_MATMUL_H
#include <stdint.h>

typedef struct nn__matmul_attr {
    int trans_a, trans_b; /* the operands' last two dims are swapped */
    int vec[3];          /* a, b, the output: NN__MM_MATRIX [..., rows, cols], NN__MM_ROW
                            [..., cols] (1 row), NN__MM_COL [..., rows] (1 column) */
    int bsum;            /* on a device: the SUM_TO node whose sums of op(A)'s rows (a bias's
                            gradient beside its weight's, dy^T x) this product's kernel makes
                            (src/ops/fuse.c's nn__fuse_tails), 0 none */
} nn__matmul_attr;

#endif
