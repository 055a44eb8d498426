/* kernels/rope.cl's kernel signature (kernels/kargs.h says how to read it): x, y [B, H, T, D]
   or [B, T, H, D] (bthd); pos int32 [T] (pos_kind 1) or [B, T] (2), unread for 0. */
#ifndef NN__ROPE_ARGS_H
#define NN__ROPE_ARGS_H

#define NN__KARGS_rope(F, P)                                                                            \
    F(in, x) P(iin, pos) P(out, y) P(int, B) P(int, H) P(int, T) P(int, D) P(int, bthd) P(int, rot)  \
    P(int, interleaved) P(int, inverse) P(int, pos_kind) P(int, offset) P(float, r_hi)       \
    P(float, r_lo)
NN__KSIG(rope)

#endif
