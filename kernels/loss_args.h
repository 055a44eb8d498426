/* kernels/loss.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__LOSS_ARGS_H
#define NN__LOSS_ARGS_H

/* the fused softmax cross-entropy, x [B, C], label [B]; bad[slot] counts labels outside [0, C) */
#define NN__KARGS_xent_forward(F, P) F(in, x) P(iin, label) P(out, loss) P(int, B) P(int, C) P(iout, bad) P(int, slot)
NN__KSIG(xent_forward)
/* the gradient dloss [B], or with dstride 0 the scalar dloss[0] * dscale for every row (an
   expand of the mean's gradient folded in: src/ops/fuse.c's nn__fuse_tails) */
#define NN__KARGS_xent_backward(F, P) \
    F(in, x) P(iin, label) P(in, dloss) P(out, dx) P(int, B) P(int, C) P(float, dscale) P(int, dstride) P(iin, lidx) \
    P(int, ln)
NN__KSIG(xent_backward)
/* the same, one work-group per row; tmp: the work-group's floats */
#define NN__KARGS_xent_group_forward(F, P) \
    F(in, x) P(iin, label) P(out, loss) P(int, B) P(int, C) P(iout, bad) P(int, slot) P(lfloat, tmp)
NN__KSIG(xent_group_forward)
#define NN__KARGS_xent_group_backward(F, P) \
    F(in, x) P(iin, label) P(in, dloss) P(out, dx) P(int, B) P(int, C) P(float, dscale) P(int, dstride) P(lfloat, tmp)
NN__KSIG(xent_group_backward)

/* BCE with logits, n elements */
#define NN__KARGS_bce_logits_forward(F, P) F(in, x) P(in, t) P(out, y) P(int, n)
NN__KSIG(bce_logits_forward)
#define NN__KARGS_bce_logits_backward(F, P) F(in, x) P(in, t) P(in, dy) P(out, dx) P(int, n)
NN__KSIG(bce_logits_backward)

/* the elementwise losses (kind: nn__loss_kind); pw [npw] repeats, a: delta / beta / tau /
   margin / alpha, b: gamma */
#define NN__KARGS_loss_ew_forward(F, P) \
    F(in, x) P(in, t) P(in, pw) P(out, y) P(int, n) P(int, npw) P(int, kind) P(int, log_target) P(float, a) P(float, b)
NN__KSIG(loss_ew_forward)
#define NN__KARGS_loss_ew_backward(F, P)                                                                              \
    F(in, x) P(in, t) P(in, pw) P(in, dy) P(out, dx) P(int, n) P(int, npw) P(int, kind) P(int, log_target) P(float, a) \
    P(float, b)
NN__KSIG(loss_ew_backward)

/* cross-entropy / NLL rows, x [B, C], label [B], w [C] (has_w), eps: label smoothing */
#define NN__KARGS_ce_rows_forward(F, P)                                                                           \
    F(in, x) P(iin, label) P(in, w) P(out, loss) P(int, B) P(int, C) P(int, ignore) P(int, log_input) P(int, has_w) \
    P(float, eps) P(iout, bad) P(int, slot)
NN__KSIG(ce_rows_forward)
#define NN__KARGS_ce_rows_backward(F, P)                                                                            \
    F(in, x) P(iin, label) P(in, w) P(in, dloss) P(out, dx) P(int, B) P(int, C) P(int, ignore) P(int, log_input) \
    P(int, has_w) P(float, eps)
NN__KSIG(ce_rows_backward)
/* the same, one work-group per row; tmp: the work-group's floats */
#define NN__KARGS_ce_group_forward(F, P)                                                                          \
    F(in, x) P(iin, label) P(in, w) P(out, loss) P(int, B) P(int, C) P(int, ignore) P(int, log_input) P(int, has_w) \
    P(float, eps) P(iout, bad) P(int, slot) P(lfloat, tmp)
NN__KSIG(ce_group_forward)
#define NN__KARGS_ce_group_backward(F, P)                                                                           \
    F(in, x) P(iin, label) P(in, w) P(in, dloss) P(out, dx) P(int, B) P(int, C) P(int, ignore) P(int, log_input) \
    P(int, has_w) P(float, eps) P(lfloat, tmp)
NN__KSIG(ce_group_backward)
#define NN__KARGS_ce_weights(F, P) F(iin, label) P(in, w) P(out, y) P(int, B) P(int, C) P(int, ignore) P(int, has_w)
NN__KSIG(ce_weights)
#define NN__KARGS_div_scalar(F, P) F(in, x) P(in, d) P(out, y) P(int, n)
NN__KSIG(div_scalar)

/* the row losses of [B, D] inputs (kind: nn__row_kind), a: margin or smooth; which: the
   input differentiated */
#define NN__KARGS_rows_forward(F, P) F(in, x0) P(in, x1) P(in, x2) P(out, y) P(int, B) P(int, D) P(int, kind) P(float, a)
NN__KSIG(rows_forward)
#define NN__KARGS_rows_backward(F, P) \
    F(in, x0) P(in, x1) P(in, x2) P(in, dy) P(out, dx) P(int, B) P(int, D) P(int, kind) P(int, which) P(float, a)
NN__KSIG(rows_backward)

#endif
