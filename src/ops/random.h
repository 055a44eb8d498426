/* The random family's typed attributes (a node's a.random), read and written by src/ops/random.c
   and the CPU loops it calls. */
#ifndef NN__OPS_RANDOM_H
#define NN__OPS_RANDOM_H
#include <stdint.h>

typedef struct nn__random_attr {
    int key;             /* the draw's Philox key (the forward node's id), shared by its backward op
                            (DROPOUT's mask too) */
    int low;             /* RANDINT: the least value */
    uint32_t range;      /*   high - low - 1 (the count of values, less 1) */
    float std;           /* GAUSSIAN_NOISE: the noise's standard deviation */
    float p;             /* DROPOUT, ALPHA_DROPOUT*: the probability of a drop */
    float scale, shift;  /*   kept elements: scale x + shift; */
    float dropped;       /*   dropped ones: this value */
    float inv_t;         /* SAMPLE_LOGITS: 1 / temperature (greedy: 0) */
    int top_k;           /*   0: all tokens */
    float top_p;         /*   1: all tokens */
} nn__random_attr;

#endif
