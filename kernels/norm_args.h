/* kernels/norm.cl's kernel signatures (kernels/kargs.h says how to read them). x is viewed
   as [A, C, S]; G statistics groups per a, or per channel over A and S when pc (batch norm);
   stats [2, R]: the means, then the biased variances. tmp: the work-group's floats. x, y, dy
   and dx (sin, sout) are of the program's storage type (16-bit layer norm, src/ops/norm.c);
   the statistics, gamma, beta and the affine gradients float32. */
#ifndef NN__NORM_ARGS_H
#define NN__NORM_ARGS_H

#define NN__KARGS_norm_stats(F, P) \
    F(sin, x) P(out, stats) P(int, A) P(int, C) P(int, S) P(int, G) P(int, pc) P(int, rms) P(lfloat, tmp)
NN__KSIG(norm_stats)
#define NN__KARGS_norm_forward(F, P)                                                                     \
    F(sin, x) P(in, stats) P(in, gamma) P(in, beta) P(sout, y) P(int, A) P(int, C) P(int, S) P(int, G)   \
    P(int, pc) P(int, has_gamma) P(int, has_beta) P(float, eps)
NN__KSIG(norm_forward)
#define NN__KARGS_norm_backward_data(F, P)                                                               \
    F(sin, x) P(in, stats) P(sin, dy) P(in, gamma) P(sout, dx) P(int, A) P(int, C) P(int, S) P(int, G)    \
    P(int, pc) P(int, has_gamma) P(int, const_stats) P(float, eps) P(lfloat, tmp)
NN__KSIG(norm_backward_data)
/* out [C]: sum of dy * xhat (with_xhat, gamma's gradient) or of dy (beta's) */
#define NN__KARGS_norm_backward_affine(F, P)                                                             \
    F(sin, x) P(in, stats) P(sin, dy) P(out, out) P(int, A) P(int, C) P(int, S) P(int, G) P(int, pc)     \
    P(int, with_xhat) P(float, eps) P(lfloat, tmp)
NN__KSIG(norm_backward_affine)
/* rmean, rvar [C] updated in place from stats [2, C] */
#define NN__KARGS_batch_norm_running(F, P) \
    F(out, rmean) P(out, rvar) P(in, stats) P(int, C) P(float, m) P(float, unbias)
NN__KSIG(batch_norm_running)
#define NN__KARGS_batch_norm_pack(F, P) F(in, rmean) P(in, rvar) P(out, stats) P(int, C)
NN__KSIG(batch_norm_pack)
/* RMS norm of x [A, C], one work-group per row; w [C] read when has_w */
#define NN__KARGS_rms_norm_forward(F, P) \
    F(in, x) P(in, w) P(out, y) P(int, A) P(int, C) P(int, has_w) P(float, eps) P(lfloat, tmp)
NN__KSIG(rms_norm_forward)
#define NN__KARGS_rms_norm_backward_data(F, P) \
    F(in, x) P(in, dy) P(in, w) P(out, dx) P(int, A) P(int, C) P(int, has_w) P(float, eps) P(lfloat, tmp)
NN__KSIG(rms_norm_backward_data)

#endif
