/* The loss family's typed attributes (a node's a.loss), read and written by src/ops/loss.c
   and the CPU loops it calls. */
#ifndef NN__OPS_LOSS_H
#define NN__OPS_LOSS_H
#include <stdint.h>

typedef struct nn__loss_attr {
    int kind;            /* LOSS_EW*: NN__L_*; LOSS_ROWS*: NN__R_* */
    int has_pos_weight;  /* LOSS_EW*: a pos_weight operand (the last before dy) */
    int log_target;      /* LOSS_EW* (KL divergence): the target is log-probabilities */
    float a, b;          /* LOSS_EW*: delta, tau, margin or alpha; gamma (focal) */
    int ignore_index;    /* CE_ROWS*, CE_WEIGHTS: the label that counts for nothing */
    int log_input;       /* CE_ROWS*: x holds log-probabilities (NLL), not logits */
    float smoothing;     /* CE_ROWS*: label smoothing */
    int classes;         /* CE_WEIGHTS: C */
    int wrt;             /* LOSS_ROWS_GRAD: the input differentiated */
    float margin;        /* LOSS_ROWS*: margin (cosine, triplet) or smooth (dice) */
} nn__loss_attr;

#endif
