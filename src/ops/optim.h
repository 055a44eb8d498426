/* The optim family's typed attributes (a node's a.optim), read and written by src/ops/optim.c
   and the CPU loops it calls. */
#ifndef NN__OPS_OPTIM_H
#define NN__OPS_OPTIM_H
#include <stdint.h>

typedef struct nn__optim_attr {
    int kind;            /* OPT_*: the nn_optimizer_kind */
    float lr_mult, wd_mult; /* OPT_*: the parameter's multipliers of lr and weight decay */
    float inv_steps;     /* GRAD_ACC: 1 / the accumulation steps */
    /* LOSS_SCALE (and LOSS_SEED: init, state): nn_loss_scale's settings, the clipping norm */
    float init, growth, backoff, max_norm;
    int interval;
    int state;           /* LOSS_SEED: the LOSS_SCALE node whose buffer holds the scale */
} nn__optim_attr;

#endif
