#include "kargs.h"
#include "rope_args.h"

/* No contraction: rope_angle.h's float-float steps need each product rounded as written, as
   the CPU backend rounds them. */
#pragma OPENCL FP_CONTRACT OFF

#include "rope_angle.h"

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
    float ang = nn__rope_angle(r_hi, r_lo, i, p);
    float c = cos(ang), s = inverse ? -sin(ang) : sin(ang);
    y[e] = lower ? x[e] * c - x[other] * s : x[e] * c + x[other] * s;
}
