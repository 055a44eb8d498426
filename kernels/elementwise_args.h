/* kernels/elementwise.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__ELEMENTWISE_ARGS_H
#define NN__ELEMENTWISE_ARGS_H

/* shared with other families' plans (conv, matmul, shape) */
#define NN__KARGS_channel_bias(F, P) F(in, x) P(in, b) P(out, y) P(int, n) P(int, C) P(int, S)
NN__KSIG(channel_bias)
#define NN__KARGS_copy(F, P) F(uin, x) P(uout, y) P(int, n)
NN__KSIG(copy)
#define NN__KARGS_sum_leading(F, P) F(in, x) P(out, y) P(int, n) P(int, nb) P(int, off)
NN__KSIG(sum_leading)

#endif
