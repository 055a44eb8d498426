/* kernels/conv3d.cl's kernel signatures (kernels/kargs.h says how to read them). Layout
   NCDHW, weights [K, C/G, KD, KH, KW]; the geometry in two int8s: ga = (sd, sh, sw, pd, ph,
   pw, dd, dh), gb = (dw, G, unused...). */
#ifndef NN__CONV3D_ARGS_H
#define NN__CONV3D_ARGS_H

#define NN__KARGS_conv3d_forward(F, P)                                                                  \
    F(in, x) P(in, w) P(in, b) P(out, y) P(int, N) P(int, C) P(int, D) P(int, H) P(int, W) P(int, K)  \
    P(int, KD) P(int, KH) P(int, KW) P(int, OD) P(int, OH) P(int, OW) P(int8, ga) P(int8, gb)         \
    P(int, has_bias)
NN__KSIG(conv3d_forward)
#define NN__KARGS_conv3d_backward_data(F, P)                                                            \
    F(in, w) P(in, dy) P(out, dx) P(int, N) P(int, C) P(int, D) P(int, H) P(int, W) P(int, K)          \
    P(int, KD) P(int, KH) P(int, KW) P(int, OD) P(int, OH) P(int, OW) P(int8, ga) P(int8, gb)
NN__KSIG(conv3d_backward_data)
#define NN__KARGS_conv3d_backward_weight(F, P)                                                          \
    F(in, x) P(in, dy) P(out, dw) P(int, N) P(int, C) P(int, D) P(int, H) P(int, W) P(int, K)          \
    P(int, KD) P(int, KH) P(int, KW) P(int, OD) P(int, OH) P(int, OW) P(int8, ga) P(int8, gb)
NN__KSIG(conv3d_backward_weight)

#endif
