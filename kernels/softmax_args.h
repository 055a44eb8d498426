/* kernels/softmax.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__SOFTMAX_ARGS_H
#define NN__SOFTMAX_ARGS_H

/* rows of C values, the last dim; log_space: log-softmax */
#define NN__KARGS_softmax_forward(F, P) F(in, x) P(out, y) P(int, rows) P(int, C) P(int, log_space)
NN__KSIG(softmax_forward)
#define NN__KARGS_softmax_backward(F, P) F(in, y) P(in, dy) P(out, dx) P(int, rows) P(int, C) P(int, log_space)
NN__KSIG(softmax_backward)

#endif
