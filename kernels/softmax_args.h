/* kernels/softmax.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__SOFTMAX_ARGS_H
#define NN__SOFTMAX_ARGS_H

/* rows of C values, the last dim; log_space: log-softmax */
#define NN__KARGS_softmax_forward(F, P) F(in, x) P(out, y) P(int, rows) P(int, C) P(int, log_space)
NN__KSIG(softmax_forward)
#define NN__KARGS_softmax_backward(F, P) F(in, y) P(in, dy) P(out, dx) P(int, rows) P(int, C) P(int, log_space)
NN__KSIG(softmax_backward)
/* the same, one work-group per row; tmp: the work-group's floats */
#define NN__KARGS_softmax_group_forward(F, P) F(in, x) P(out, y) P(int, rows) P(int, C) P(int, log_space) P(lfloat, tmp)
NN__KSIG(softmax_group_forward)
#define NN__KARGS_softmax_group_backward(F, P) \
    F(in, y) P(in, dy) P(out, dx) P(int, rows) P(int, C) P(int, log_space) P(lfloat, tmp)
NN__KSIG(softmax_group_backward)

#endif
