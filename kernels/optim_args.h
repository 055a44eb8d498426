/* kernels/optim.cl's kernel signatures (kernels/kargs.h says how to read them). The step
   fields are what changes between updates: the scheduled rate, the bias corrections and
   the other per-update constants, whether this is the first step or a new cycle. */
#ifndef NN__OPTIM_ARGS_H
#define NN__OPTIM_ARGS_H

/* one parameter p [n] with its gradient; clip[0]: the clipping coefficient (negative: skip) */
#define NN__KARGS_sgd(F, P)                                                                                  \
    F(out, p) P(in, grad) P(out, buf) P(in, clip) P(int, n) P(fstep, lr) P(float, momentum) P(float, dampening) \
    P(float, wd) P(int, nesterov) P(istep, first_step) P(float, cv)
NN__KSIG(sgd)
#define NN__KARGS_adam(F, P)                                                                                     \
    F(out, p) P(in, grad) P(out, m) P(out, v) P(in, clip) P(int, n) P(fstep, lr) P(float, b1) P(float, b2) \
    P(float, eps) P(float, wd) P(int, decoupled) P(fstep, bc1) P(fstep, bc2) P(float, cv)
NN__KSIG(adam)
/* adam over two parameters in one launch (src/ops/optim.c's pairs): p, grad, m, v, n, lr and
   wd the first's, p1..wd1 the second's */
#define NN__KARGS_adam2(F, P)                                                                                    \
    F(out, p) P(in, grad) P(out, m) P(out, v) P(out, p1) P(in, grad1) P(out, m1) P(out, v1) P(in, clip) P(int, n)  \
    P(int, n1) P(fstep, lr) P(fstep, lr1) P(float, b1) P(float, b2) P(float, eps) P(float, wd)       \
    P(float, wd1) P(int, decoupled) P(fstep, bc1) P(fstep, bc2) P(float, cv)
NN__KSIG(adam2)
/* adam over up to six parameters in one launch on devices tuned as CPUs (src/ops/optim.c's
   groups): p0..v5 the count in use (unused ones repeat the first, never read), n their sizes,
   lrm their rate multipliers and wd their decays (floats' bits), lr the scheduled rate */
#define NN__KARGS_adam6(F, P)                                                                                    \
    F(out, p0) P(in, g0) P(out, m0) P(out, v0) P(out, p1) P(in, g1) P(out, m1) P(out, v1) P(out, p2) P(in, g2)     \
    P(out, m2) P(out, v2) P(out, p3) P(in, g3) P(out, m3) P(out, v3) P(out, p4) P(in, g4) P(out, m4) P(out, v4)   \
    P(out, p5) P(in, g5) P(out, m5) P(out, v5) P(in, clip) P(int, count) P(int8, n) P(int8, lrm) P(int8, wd)      \
    P(fstep, lr) P(float, b1) P(float, b2) P(float, eps) P(int, decoupled) P(fstep, bc1) P(fstep, bc2) P(float, cv)
NN__KSIG(adam6)
/* kind: nn_optimizer_kind; h0..h4 (h2 is eps) from nn__opt_hparams, c0..c3 the update's
   constants (g->clock.c); s0..s2 the state, norms LARS's sums of squares */
#define NN__KARGS_opt_step(F, P)                                                                                    \
    F(out, p) P(in, grad) P(in, clip) P(out, s0) P(out, s1) P(out, s2) P(in, norms) P(int, n) P(int, kind)       \
    P(fstep, lr) P(float, wd) P(float, cv) P(float, h0) P(float, h1) P(float, eps) P(float, h3) P(float, h4)     \
    P(fstep, c0) P(fstep, c1) P(fstep, c2) P(fstep, c3)
NN__KSIG(opt_step)
/* out[off], out[off + 1]: the sums of squares of p and of x (clipped), one work-group;
   tmp: two floats per work-item */
#define NN__KARGS_opt_norms(F, P) \
    F(in, p) P(in, x) P(in, clip) P(float, cv) P(int, n) P(out, out) P(int, off) P(lfloat, tmp)
NN__KSIG(opt_norms)
#define NN__KARGS_lamb_apply(F, P) F(out, p) P(in, u) P(in, clip) P(int, n) P(fstep, lr)
NN__KSIG(lamb_apply)

/* a 16-bit parameter p [n] (nn_graph_desc.param_dtype, the program's storage type) widened
   into the float32 copy w the update rule runs on, then w written back into p: rounded to
   nearest even, or with sr (bfloat16) stochastically by the bits nn__sr_bits(i, key) */
#define NN__KARGS_param_widen(F, P) F(sin, p) P(out, w) P(int, n)
NN__KSIG(param_widen)
#define NN__KARGS_param_round(F, P) F(in, w) P(sout, p) P(int, n) P(int, sr) P(ustep, key)
NN__KSIG(param_round)

/* skip_nonfinite: the count of NaN and Inf over the gradients, then the gate */
#define NN__KARGS_nonfinite_count(F, P) F(in, x) P(int, n) P(in, prev) P(int, has_prev) P(out, out) P(lint, tmp)
NN__KSIG(nonfinite_count)
#define NN__KARGS_skip_gate(F, P) F(in, cnt) P(in, clip) P(out, y)
NN__KSIG(skip_gate)

/* loss scaling: the scale's state y[5] from the count (and the sum of squares), then the
   loss's gradient seeded from the state st (src/ops/optim.c's LOSS_SCALE, LOSS_SEED) */
#define NN__KARGS_loss_scale(F, P)                                                                      \
    F(in, cnt) P(in, sumsq) P(int, has_sumsq) P(out, y) P(float, init) P(float, growth) P(float, backoff) \
    P(float, interval) P(float, max_norm)
NN__KSIG(loss_scale)
#define NN__KARGS_loss_seed(F, P) F(in, st) P(out, y) P(int, n) P(float, init)
NN__KSIG(loss_seed)

/* acc [n] = (reset ? 0 : acc) + g * inv_k */
#define NN__KARGS_grad_acc(F, P) F(out, acc) P(in, g) P(int, n) P(float, inv_k) P(istep, reset)
NN__KSIG(grad_acc)

#endif
