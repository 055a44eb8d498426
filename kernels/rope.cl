#include "kargs.h"
#include "rope_args.h"

/* No contraction: the float-float steps below need each product rounded as written, and the
   CPU twin (src/cpu/rope.c) rounds the same operations the same way. */
#pragma OPENCL FP_CONTRACT OFF

/* (ah, al) *= (bh, bl) in float-float: the product's rounding error kept by fma */
#define NN_FF_MUL(ah, al, bh, bl)                                                                  \
    do {                                                                                         \
        float h_ = (ah) * (bh);                                                                  \
        float l_ = fma((ah), (bh), -h_) + ((ah) * (bl) + (al) * (bh));                            \
        float s_ = h_ + l_;                                                                      \
        (al) = l_ - (s_ - h_);                                                                   \
        (ah) = s_;                                                                               \
    } while (0)

/* p * r^i (r = theta^(-2/rot) as r_hi + r_lo) reduced to about [-pi, pi]: float-float powers
   and product, then the multiple of 2 pi (two floats) taken off with fma, so the angle is
   good to about 1e-7 at any position on every device (exp2 and a float product lost up to
   1e-5 at position 129); the twin of nn__rope_angle in src/cpu/rope.c, operation for
   operation. */
float nn_rope_angle(float r_hi, float r_lo, int i, int p) {
    float fh = 1.0f, fl = 0.0f, bh = r_hi, bl = r_lo, P = (float)p, ah, al, n, r;
    while (i) {
        if (i & 1) NN_FF_MUL(fh, fl, bh, bl);
        i >>= 1;
        if (i) NN_FF_MUL(bh, bl, bh, bl);
    }
    ah = P * fh;
    al = fma(P, fh, -ah) + P * fl;
    n = rint(ah * 0.159154936671257019f);
    r = fma(-n, 6.28318548202514648f, ah);
    r = fma(-n, -1.74845553146951720e-7f, r);
    return r + al;
}

/* Rotary position embeddings, the twin of src/cpu/rope.c: one work-item per element of y.
   Pair i of the rotated dims of the token at position p turns by p * theta^(-2i/rot)
   (inverse: the other way, the gradient); GPT-NeoX / LLaMA pair dims i and i + rot/2, GPT-J
   (interleaved) 2i and 2i + 1; dims from rot on are copied. */
__kernel void rope(NN__KPARAMS(rope)) {
    int e = get_global_id(0);
    if (e >= B * H * T * D) return;
    int r = e / D, d = e % D, hr = rot / 2;
    if (d >= rot) {
        y[e] = x[e];
        return;
    }
    int t = bthd ? (r / H) % T : r % T, b = r / (H * T);
    int p = (pos_kind == 0 ? t : pos_kind == 1 ? pos[t] : pos[b * T + t]) + offset;
    int i, lower, other;
    if (interleaved) {
        i = d / 2;
        lower = (d & 1) == 0;
        other = lower ? e + 1 : e - 1;
    } else {
        i = d < hr ? d : d - hr;
        lower = d < hr;
        other = lower ? e + hr : e - hr;
    }
    float ang = nn_rope_angle(r_hi, r_lo, i, p);
    float c = cos(ang), s = inverse ? -sin(ang) : sin(ang);
    y[e] = lower ? x[e] * c - x[other] * s : x[e] * c + x[other] * s;
}
