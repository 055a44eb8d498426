/* The gather family's typed attributes (a node's a.gather), read and written by src/ops/gather.c
   and the CPU loops it calls. */
#ifndef NN__OPS_GATHER_H
#define NN__OPS_GATHER_H
#include <stdint.h>

typedef struct nn__gather_attr {
    int dim;             /* INDEX_SELECT*, GATHER, SCATTER_ADD: the dim indexed */
    int has_base;        /* SCATTER_ADD: in[0] is the tensor added to (else zeros: gather's backward) */
} nn__gather_attr;

#endif
