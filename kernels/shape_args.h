/* kernels/shape.cl's kernel signatures (kernels/kargs.h says how to read them). The copies
   move 32-bit words (uin/uout), so they serve float32 and int32 tensors alike; half_permute,
   half_concat and half_slice, the twins of permute, concat_part and slice, move 16-bit
   words (hin/hout: bf16, fp16 storage). */
#ifndef NN__SHAPE_ARGS_H
#define NN__SHAPE_ARGS_H

/* dims: y's 6 dims (ones in front), xs: x's stride for each y dim */
#define NN__KARGS_permute(F, P) F(uin, x) P(uout, y) P(int, n) P(int8, dims) P(int8, xs)
NN__KSIG(permute)
/* flip: permute's geometry with signed strides, from x's element `base` */
#define NN__KARGS_strided(F, P) F(uin, x) P(uout, y) P(int, n) P(int8, dims) P(int8, xs) P(int, base)
NN__KSIG(strided)

/* one input x [outer, lx, inner] of y [outer, L, inner], at off along the axis */
#define NN__KARGS_concat_part(F, P) \
    F(uin, x) P(uout, y) P(int, n) P(int, lx) P(int, L) P(int, off) P(int, inner)
NN__KSIG(concat_part)
/* y [outer, len, inner] from x [outer, L, inner] (grad: the reverse, zeros elsewhere) */
#define NN__KARGS_slice(F, P) \
    F(uin, x) P(uout, y) P(int, n) P(int, L) P(int, len) P(int, inner) P(int, start) P(int, grad) P(int, step)
NN__KSIG(slice)
#define NN__KARGS_half_permute(F, P) F(hin, x) P(hout, y) P(int, n) P(int8, dims) P(int8, xs)
NN__KSIG(half_permute)
#define NN__KARGS_half_concat(F, P) \
    F(hin, x) P(hout, y) P(int, n) P(int, lx) P(int, L) P(int, off) P(int, inner)
NN__KSIG(half_concat)
#define NN__KARGS_half_slice(F, P) \
    F(hin, x) P(hout, y) P(int, n) P(int, L) P(int, len) P(int, inner) P(int, start) P(int, grad) P(int, step)
NN__KSIG(half_slice)

/* 6 dims each, ones in front */
#define NN__KARGS_repeat_forward(F, P) F(uin, x) P(uout, y) P(int, n) P(int8, ydims) P(int8, xdims)
NN__KSIG(repeat_forward)
#define NN__KARGS_repeat_backward(F, P) F(in, dy) P(out, dx) P(int, n) P(int8, xdims) P(int8, reps)
NN__KSIG(repeat_backward)

/* x, y [..., R, C] */
#define NN__KARGS_tril(F, P) \
    F(in, x) P(out, y) P(int, n) P(int, R) P(int, C) P(int, diagonal) P(int, upper)
NN__KSIG(tril)

/* geo = (H, W, OH, OW, top, left, reflect, -) */
#define NN__KARGS_pad2d_forward(F, P) F(in, x) P(out, y) P(int, n) P(int8, geo)
NN__KSIG(pad2d_forward)
#define NN__KARGS_pad2d_backward(F, P) F(in, dy) P(out, dx) P(int, n) P(int8, geo)
NN__KSIG(pad2d_backward)
/* geo = (H, W, scale_h, scale_w, bilinear, -, -, -) */
#define NN__KARGS_upsample2d_forward(F, P) F(in, x) P(out, y) P(int, n) P(int8, geo)
NN__KSIG(upsample2d_forward)
#define NN__KARGS_upsample2d_backward(F, P) F(in, dy) P(out, dx) P(int, n) P(int8, geo)
NN__KSIG(upsample2d_backward)

#endif
