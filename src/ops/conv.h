/* The conv family's typed attributes (a node's a.conv), read and written by src/ops/conv/
   and the CPU loops they call. */
#ifndef NN__OPS_CONV_H
#define NN__OPS_CONV_H
#include <stdint.h>

typedef struct nn__conv_attr { /* per spatial dim, (h, w) or (d, h, w) */
    int stride[3], pad[3], dilation[3];
    int groups;
} nn__conv_attr;

#endif
