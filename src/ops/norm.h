/* The norm family's typed attributes (a node's a.norm), read and written by src/ops/norm.c
   and the CPU loops it calls. */
#ifndef NN__OPS_NORM_H
#define NN__OPS_NORM_H
#include <stdint.h>

typedef struct nn__norm_attr { /* x [A, C, S...] */
    int A, C, S;         /* leading elements, channels, elements per channel */
    int groups;          /* statistics groups per leading element (group norm) */
    int per_channel;     /* statistics per channel over A and S (batch norm) */
    int has_gamma, has_beta;
    int const_stats;     /* NORM_FORWARD, NORM_DX: the statistics are not x's (running stats) */
    int rms;             /* NORM_STATS: means 0 and mean squares for variances (RMS norm) */
    float eps, momentum;
} nn__norm_attr;

#endif
