/* kernels/pool.cl's kernel signatures (kernels/kargs.h says how to read them). Planes
   NC = N*C of x [NC, H, W] and y [NC, OH, OW]; geo = (kh, kw, sh, sw, ph, pw, dh, dw). A
   kernel's variant for CPU devices (_rows, _planes) takes the kernel's own signature. x, y,
   dy, dx: NN__STORE_T storage (float32, or 16-bit in the NN_STORE_BF16 / _F16 builds). */
#ifndef NN__POOL_ARGS_H
#define NN__POOL_ARGS_H

#define NN__KARGS_max_pool2d_forward(F, P) \
    F(sin, x) P(sout, y) P(int, NC) P(int, H) P(int, W) P(int, OH) P(int, OW) P(int8, geo)
NN__KSIG(max_pool2d_forward)
#define NN__KARGS_max_pool2d_argmax(F, P) \
    F(sin, x) P(iout, idx) P(int, NC) P(int, H) P(int, W) P(int, OH) P(int, OW) P(int8, geo)
NN__KSIG(max_pool2d_argmax)
#define NN__KARGS_max_pool2d_backward(F, P) \
    F(iin, idx) P(sin, dy) P(sout, dx) P(int, NC) P(int, H) P(int, W) P(int, OH) P(int, OW) P(int8, geo)
NN__KSIG(max_pool2d_backward)

/* exclude_pad: count_include_pad = False; adaptive: PyTorch's adaptive bins */
#define NN__KARGS_avg_pool2d_forward(F, P)                                                         \
    F(sin, x) P(sout, y) P(int, NC) P(int, H) P(int, W) P(int, OH) P(int, OW) P(int8, geo) P(int, exclude_pad) \
    P(int, adaptive)
NN__KSIG(avg_pool2d_forward)
#define NN__KARGS_avg_pool2d_backward(F, P)                                                          \
    F(sin, dy) P(sout, dx) P(int, NC) P(int, H) P(int, W) P(int, OH) P(int, OW) P(int8, geo) P(int, exclude_pad) \
    P(int, adaptive)
NN__KSIG(avg_pool2d_backward)

#endif
