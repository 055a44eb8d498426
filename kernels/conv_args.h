/* kernels/conv.cl's kernel signatures (kernels/kargs.h says how to read them). Layout NCHW,
   weights [K, C/G, KH, KW]; geo is (sh, sw, ph, pw, dh, dw, G, unused). */
#ifndef NN__CONV_ARGS_H
#define NN__CONV_ARGS_H

/* the direct kernels: one work-item per element of y, dx or dw */
#define NN__KARGS_conv2d_forward(F, P)                                                                  \
    F(sin, x) P(sin, w) P(sin, b) P(sout, y) P(int, N) P(int, C) P(int, H) P(int, W) P(int, K) P(int, KH) \
    P(int, KW) P(int, OH) P(int, OW) P(int8, geo) P(int, has_bias)
NN__KSIG(conv2d_forward)
#define NN__KARGS_conv2d_backward_data(F, P)                                                             \
    F(sin, w) P(sin, dy) P(sout, dx) P(int, N) P(int, C) P(int, H) P(int, W) P(int, K) P(int, KH) P(int, KW) \
    P(int, OH) P(int, OW) P(int8, geo)
NN__KSIG(conv2d_backward_data)
#define NN__KARGS_conv2d_backward_weight(F, P)                                                           \
    F(sin, x) P(sin, dy) P(sout, dw) P(int, N) P(int, C) P(int, H) P(int, W) P(int, K) P(int, KH) P(int, KW) \
    P(int, OH) P(int, OW) P(int8, geo)
NN__KSIG(conv2d_backward_weight)

/* y [C] = sum of x [N, C, S] over N and S */
#define NN__KARGS_channel_sum(F, P) F(in, x) P(out, y) P(int, N) P(int, C) P(int, S)
NN__KSIG(channel_sum)

/* The GEMM path: column matrices [C*KH*KW, ld] at float offset off of the scratch buffer.
   Each signature serves the element-wise kernel and its by-rows twin for CPU devices:
   conv2d_im2col_elems and conv2d_im2col_rows; conv2d_col2im_elems and conv2d_col2im_planes;
   conv2d_unpack_elems and conv2d_unpack_rows; conv2d_pack_elems and conv2d_pack_rows. */
#define NN__KARGS_conv2d_im2col(F, P)                                                                    \
    F(in, x) P(out, col) P(int, off) P(int, N) P(int, C) P(int, H) P(int, W) P(int, KH) P(int, KW)     \
    P(int, OH) P(int, OW) P(int8, geo) P(int, ld)
NN__KSIG(conv2d_im2col)
#define NN__KARGS_conv2d_col2im(F, P)                                                                    \
    F(in, dcol) P(out, dx) P(int, off) P(int, N) P(int, C) P(int, H) P(int, W) P(int, KH) P(int, KW)   \
    P(int, OH) P(int, OW) P(int8, geo) P(int, ld)
NN__KSIG(conv2d_col2im)
/* y [N, K, S] = out [K, ld] (+ b [K]) */
#define NN__KARGS_conv2d_unpack(F, P) \
    F(in, out) P(in, b) P(out, y) P(int, off) P(int, N) P(int, K) P(int, S) P(int, ld) P(int, has_bias)
NN__KSIG(conv2d_unpack)
/* dyg [K, ld] = dy [N, K, S], zero-padded */
#define NN__KARGS_conv2d_pack(F, P) F(in, dy) P(out, dyg) P(int, off) P(int, N) P(int, K) P(int, S) P(int, ld)
NN__KSIG(conv2d_pack)

/* The implicit GEMM on CPU devices: y [N, M, OH, OW] = a [M, C*KH*KW] col(x) (+ b [M]), x
   [N, C, H, W], stride 1; rows: output rows an item (src/ops/conv/conv2d.c); exact: a is
   conv2d_flip_w's, its rows' flags after it */
#define NN__KARGS_conv2d_implicit(F, P)                                                                  \
    F(in, x) P(in, a) P(in, b) P(out, y) P(int, N) P(int, C) P(int, H) P(int, W) P(int, M) P(int, KH)     \
    P(int, KW) P(int, OH) P(int, OW) P(int8, geo) P(int, has_bias) P(int, rows) P(int, exact)
NN__KSIG(conv2d_implicit)
/* its weight gradient: part [items, K, C*KH*KW] = each item's sum over its per images of
   dy [N, K, OH, OW] col(x)^T */
#define NN__KARGS_conv2d_dw_implicit(F, P)                                                               \
    F(in, x) P(in, dy) P(out, part) P(int, N) P(int, C) P(int, H) P(int, W) P(int, K) P(int, KH) P(int, KW) \
    P(int, OH) P(int, OW) P(int8, geo) P(int, per)
NN__KSIG(conv2d_dw_implicit)
/* wf [C, K, KH, KW] = w [K, C, KH, KW] turned by 180 degrees in (KH, KW): the input gradient's
   weights as a forward convolution's, then C flags (a row not all finite) */
#define NN__KARGS_conv2d_flip_w(F, P) F(in, w) P(out, wf) P(int, K) P(int, C) P(int, KH) P(int, KW)
NN__KSIG(conv2d_flip_w)

#endif
