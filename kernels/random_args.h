/* kernels/random.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__RANDOM_ARGS_H
#define NN__RANDOM_ARGS_H

/* the dropout op's mask, counter (i, node, step_lo, step_hi) under key (seed_lo, seed_hi); x
   and y of the node's storage type */
#define NN__KARGS_dropout(F, P) \
    F(sin, x) P(sout, y) P(int, n) P(float, p) P(uint, seed_lo) P(uint, seed_hi) P(uint, node) P(ustep, step_lo) P(ustep, step_hi)
NN__KSIG(dropout)

/* The random ops' last five parameters: element i draws the Philox words of counter (i, key,
   step_lo, step_hi) under key (seed_lo, seed_hi); the step is the graph's, each run's. */
#define NN__KARGS_RNG(P) P(uint, seed_lo) P(uint, seed_hi) P(uint, key) P(ustep, step_lo) P(ustep, step_hi)

#define NN__KARGS_rand(F, P) F(out, y) P(int, n) NN__KARGS_RNG(P)
NN__KSIG(rand)
/* randn takes rand's signature */
#define NN__KARGS_randn NN__KARGS_rand
/* range_m1 = high - low - 1 */
#define NN__KARGS_randint(F, P) F(iout, y) P(int, n) P(int, low) P(uint, range_m1) NN__KARGS_RNG(P)
NN__KSIG(randint)
/* bad[slot] counts the p outside [0, 1] */
#define NN__KARGS_bernoulli(F, P) F(in, p) P(out, y) P(int, n) P(iout, bad) P(int, slot) NN__KARGS_RNG(P)
NN__KSIG(bernoulli)
#define NN__KARGS_gaussian_noise(F, P) F(in, x) P(out, y) P(int, n) P(float, std) NN__KARGS_RNG(P)
NN__KSIG(gaussian_noise)
#define NN__KARGS_alpha_dropout(F, P)                                                                        \
    F(in, x) P(out, y) P(int, n) P(float, p) P(float, scale) P(float, shift) P(float, dropped) NN__KARGS_RNG(P)
NN__KSIG(alpha_dropout)
#define NN__KARGS_alpha_dropout_grad(F, P) F(in, dy) P(out, dx) P(int, n) P(float, p) P(float, scale) NN__KARGS_RNG(P)
NN__KSIG(alpha_dropout_grad)
/* a token id y[b] drawn from logits z [B, V], p [B, V] the scratch of its probabilities;
   one work-group per row; the counter (b, key, run_lo, run_hi), the run the graph's */
#define NN__KARGS_sample_logits(F, P)                                                                     \
    F(in, z) P(out, p) P(iout, y) P(int, V) P(float, inv_t) P(int, greedy) P(int, top_k) P(float, top_p) \
    P(uint, seed_lo) P(uint, seed_hi) P(uint, key) P(ustep, run_lo) P(ustep, run_hi)
NN__KSIG(sample_logits)

#endif
