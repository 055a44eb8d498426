/* The pool family's typed attributes (a node's a.pool), read and written by src/ops/pool.c
   and the CPU loops it calls. */
#ifndef NN__OPS_POOL_H
#define NN__OPS_POOL_H
#include <stdint.h>

typedef struct nn__pool_attr { /* (h, w); 1-D pooling has h = 1 */
    int kernel[2], stride[2], pad[2];
    int dilation[2];     /* max pooling */
    int exclude_pad;     /* average pooling: count_include_pad = False */
    int adaptive;        /* average pooling: PyTorch's adaptive bins, not kernel and stride */
} nn__pool_attr;

#endif
