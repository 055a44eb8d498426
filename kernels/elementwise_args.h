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

/* The broadcast kernels' geometry (src/cpu/elementwise.c's nn__bcast after merging): nd
   dims, outermost first, and each operand's strides in elements (0 where broadcast). */

/* expand: y [n] = x at its broadcast offset */
#define NN__KARGS_expand_bcast(F, P) F(in, x) P(out, y) P(int, n) P(int, nd) P(int8, dims) P(int8, sx)
NN__KSIG(expand_bcast)
/* sum_to: y [m] = x summed over the dims where st is 0, `reduced` elements each; xs: x's
   contiguous strides; x of the program's storage type, y float32 */
#define NN__KARGS_sum_to(F, P) \
    F(sin, x) P(out, y) P(int, m) P(int, reduced) P(int, nd) P(int8, dims) P(int8, st) P(int8, xs)
NN__KSIG(sum_to)

/* the unary functions of kernels/activation.h: every NAME_forward and NAME_backward */
#define NN__KARGS_unary_forward(F, P) F(sin, x) P(sout, y) P(int, n) P(float, p0) P(float, p1)
NN__KSIG(unary_forward)
#define NN__KARGS_unary_backward(F, P) F(sin, x) P(sin, dy) P(sout, dx) P(int, n) P(float, p0) P(float, p1)
NN__KSIG(unary_backward)
#define NN__KARGS_scale(F, P) F(in, x) P(out, y) P(int, n) P(float, s)
NN__KSIG(scale)
/* PReLU: x [N, C, S], w [C] */
#define NN__KARGS_prelu_forward(F, P) F(in, x) P(in, w) P(out, y) P(int, n) P(int, C) P(int, S)
NN__KSIG(prelu_forward)
#define NN__KARGS_prelu_backward_input(F, P) F(in, x) P(in, w) P(in, dy) P(out, dx) P(int, n) P(int, C) P(int, S)
NN__KSIG(prelu_backward_input)
#define NN__KARGS_prelu_backward_weight_part(F, P) F(in, x) P(in, dy) P(out, part) P(int, N) P(int, C) P(int, S)
NN__KSIG(prelu_backward_weight_part)
#define NN__KARGS_prelu_backward_weight(F, P) F(in, part) P(out, dw) P(int, N) P(int, C)
NN__KSIG(prelu_backward_weight)
#define NN__KARGS_fill(F, P) F(out, y) P(int, n) P(float, v)
NN__KSIG(fill)
/* acc [n] += x: acc is read and written */
#define NN__KARGS_accumulate(F, P) F(in, x) P(out, acc) P(int, n)
NN__KSIG(accumulate)

/* binary functions (NN__B_*, kernels/activation.h): every binary_same_NAME (same shapes),
   and binary_same_grad_NAME; their operands in the program's storage type (all one dtype) */
#define NN__KARGS_binary_same(F, P) F(sin, a) P(sin, b) P(sout, y) P(int, n)
NN__KSIG(binary_same)
#define NN__KARGS_binary_same_grad(F, P) F(sin, a) P(sin, b) P(sin, dy) P(sout, dx) P(int, n) P(int, wrt)
NN__KSIG(binary_same_grad)
/* one flat dim: a and b advance by sa and sb (1, or 0 for a one-element operand) */
#define NN__KARGS_binary_flat(F, P) F(sin, a) P(sin, b) P(sout, y) P(int, n) P(int, fn) P(int, sa) P(int, sb)
NN__KSIG(binary_flat)
/* a row broadcast (a linear layer's bias add): a [rows, C] and the row b [C] (arow 0), or the
   row a [C] and b [rows, C] (arow 1) */
#define NN__KARGS_binary_row(F, P) F(sin, a) P(sin, b) P(sout, y) P(int, n) P(int, fn) P(int, C) P(int, arow)
NN__KSIG(binary_row)
#define NN__KARGS_binary_bcast(F, P) \
    F(sin, a) P(sin, b) P(sout, y) P(int, n) P(int, fn) P(int, nd) P(int8, dims) P(int8, sa) P(int8, sb)
NN__KSIG(binary_bcast)
#define NN__KARGS_binary_grad(F, P)                                                                      \
    F(sin, a) P(sin, b) P(sin, dy) P(sout, dx) P(int, n) P(int, fn) P(int, wrt) P(int, nd) P(int8, dims) \
    P(int8, sa) P(int8, sb)
NN__KSIG(binary_grad)

/* where (c, a, b) and masked_fill (m, x) */
#define NN__KARGS_where_bcast(F, P)                                                                    \
    F(in, c) P(in, a) P(in, b) P(out, y) P(int, n) P(int, nd) P(int8, dims) P(int8, sc) P(int8, sa) \
    P(int8, sb)
NN__KSIG(where_bcast)
#define NN__KARGS_masked_fill_bcast(F, P)                                                                  \
    F(in, m) P(in, x) P(out, y) P(int, n) P(float, value) P(int, invert) P(int, nd) P(int8, dims) \
    P(int8, sm) P(int8, sx)
NN__KSIG(masked_fill_bcast)

#endif
