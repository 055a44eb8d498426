/* kernels/reduce.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__REDUCE_ARGS_H
#define NN__REDUCE_ARGS_H

/* to a scalar in one work-group; tmp: the work-group's floats */
/* has_acc: acc[0] += y[0] too (an nn_accumulate of the sum folded in: src/ops/fuse.c's
   nn__fuse_tails) */
#define NN__KARGS_sum_all(F, P) F(in, x) P(out, y) P(out, acc) P(int, n) P(int, has_acc) P(float, scale) P(lfloat, tmp)
NN__KSIG(sum_all)
/* sum_all of the rows' values an op made, folded in (nn__fuse_tails): xent_sum, softmax
   cross-entropy's (bad, slot: xent_forward's count of labels outside [0, C)), and
   correct_sum, accuracy's correct rows (bad, slot unused) */
#define NN__KARGS_rows_sum(F, P) \
    F(in, x) P(iin, label) P(out, y) P(out, acc) P(int, B) P(int, C) P(int, has_acc) P(float, scale) P(iout, bad) P(int, slot) \
    P(iin, lidx) P(int, ln) P(lfloat, tmp)
NN__KSIG(rows_sum)
/* rows_sum's xent_sum, correct_sum's (y2 .. scale2, where has_correct) and xent_backward's
   (dx: the gradient, factor dloss[0] * dscale, where has_grad) in one launch */
#define NN__KARGS_xent_tail(F, P)                                                                                     \
    F(in, x) P(iin, label) P(iin, lidx) P(int, ln) P(out, y) P(out, acc) P(int, has_acc) P(float, scale) P(iout, bad) \
    P(int, slot) P(int, has_correct) P(out, y2) P(out, acc2) P(int, has_acc2) P(float, scale2) P(in, dloss)         \
    P(out, dx) P(float, dscale) P(int, has_grad) P(int, B) P(int, C) P(lfloat, tmp)
NN__KSIG(xent_tail)
#define NN__KARGS_grad_sumsq(F, P) F(in, g) P(in, prev) P(out, y) P(int, n) P(int, has_prev) P(lfloat, tmp)
NN__KSIG(grad_sumsq)
/* to a scalar over many work-groups, two passes (part: the groups' sums, the node's scratch) */
#define NN__KARGS_sum_parts(F, P) F(in, x) P(out, part) P(int, n) P(int, chunk) P(int, term) P(lfloat, tmp)
NN__KSIG(sum_parts)
#define NN__KARGS_sum_finish(F, P) \
    F(in, part) P(in, prev) P(out, y) P(int, parts) P(int, has_prev) P(float, scale) P(lfloat, tmp)
NN__KSIG(sum_finish)
#define NN__KARGS_clip_scale(F, P) F(in, sumsq) P(out, y) P(float, max_norm)
NN__KSIG(clip_scale)

/* x [O, R, I] reduced over R; y and yi are one buffer (floats, or ints for argmax/argmin) */
#define NN__KARGS_reduce_cols(F, P) \
    F(in, x) P(out, y) P(iout, yi) P(int, O) P(int, R) P(int, I) P(int, kind) P(float, p) P(float, scale) P(float, corr)
NN__KSIG(reduce_cols)
#define NN__KARGS_reduce_rows(F, P)                                                                  \
    F(in, x) P(out, y) P(iout, yi) P(int, R) P(int, kind) P(float, p) P(float, scale) P(float, corr) \
    P(lfloat, tf) P(lint, ti)
NN__KSIG(reduce_rows)
/* reduce_grad_elems and reduce_grad_cols */
#define NN__KARGS_reduce_grad(F, P)                                                                      \
    F(in, gy) P(in, x) P(in, y) P(out, dx) P(int, O) P(int, R) P(int, I) P(int, kind) P(float, p) \
    P(float, scale) P(float, corr)
NN__KSIG(reduce_grad)

#define NN__KARGS_cumsum(F, P) F(in, x) P(out, y) P(int, O) P(int, R) P(int, I) P(int, reverse)
NN__KSIG(cumsum)
#define NN__KARGS_expand_scalar(F, P) F(in, x) P(out, y) P(int, n) P(float, s)
NN__KSIG(expand_scalar)
#define NN__KARGS_argmax_rows(F, P) F(in, x) P(iout, y) P(int, B) P(int, C)
NN__KSIG(argmax_rows)
#define NN__KARGS_correct_rows(F, P) F(in, x) P(iin, label) P(out, y) P(int, B) P(int, C)
NN__KSIG(correct_rows)

#endif
