/* Rotary embeddings' angle, written once for the CPU loop (src/cpu/rope.c) and the kernel
   (kernels/rope.cl): C99 and OpenCL C. Neither contracts (nn.h turns contraction off in its
   implementation, kernels/rope.cl by its pragma), so both backends get the same bits.

   nn__rope_angle: p * r^i (r = theta^(-2/rot) = r_hi + r_lo, from the host in double)
   reduced to about [-pi, pi]: float-float powers and product (each product's rounding error
   kept by fma), then the multiple of 2 pi (two floats) taken off with fma. Good to about
   1e-7 at any position; exp2 and one float product lost up to 1e-5 at position 129 (as
   much as NVIDIA's exp2 and glibc's exp2f differed) and 1.2% at 32765. */
#ifndef NN__ROPE_ANGLE_H
#define NN__ROPE_ANGLE_H

#ifdef __OPENCL_VERSION__
#define NN__RA_FMA fma
#define NN__RA_RINT rint
#define NN__RA_FN inline
#else
#define NN__RA_FMA fmaf
#define NN__RA_RINT rintf
#define NN__RA_FN static
#endif

/* (ah, al) *= (bh, bl) in float-float */
#define NN__FF_MUL(ah, al, bh, bl)                                                                 \
    do {                                                                                         \
        float h_ = (ah) * (bh);                                                                  \
        float l_ = NN__RA_FMA((ah), (bh), -h_) + ((ah) * (bl) + (al) * (bh));                     \
        float s_ = h_ + l_;                                                                      \
        (al) = l_ - (s_ - h_);                                                                   \
        (ah) = s_;                                                                               \
    } while (0)

NN__RA_FN float nn__rope_angle(float r_hi, float r_lo, int i, int p) {
    float fh = 1.0f, fl = 0.0f, bh = r_hi, bl = r_lo, P = (float)p, ah, al, n, r;
    while (i) {
        if (i & 1) NN__FF_MUL(fh, fl, bh, bl);
        i >>= 1;
        if (i) NN__FF_MUL(bh, bl, bh, bl);
    }
    ah = P * fh;
    al = NN__RA_FMA(P, fh, -ah) + P * fl;
    n = NN__RA_RINT(ah * 0.159154936671257019f);
    r = NN__RA_FMA(-n, 6.28318548202514648f, ah);
    r = NN__RA_FMA(-n, -1.74845553146951720e-7f, r);
    return r + al;
}

#endif
