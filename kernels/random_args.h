/* kernels/random.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__RANDOM_ARGS_H
#define NN__RANDOM_ARGS_H

/* the dropout op's mask, counter (i, node, step_lo, step_hi) under key (seed_lo, seed_hi) */
#define NN__KARGS_dropout(F, P) \
    F(in, x) P(out, y) P(int, n) P(float, p) P(uint, seed_lo) P(uint, seed_hi) P(uint, node) P(ustep, step_lo) P(ustep, step_hi)
NN__KSIG(dropout)

#endif
