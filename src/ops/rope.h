/* The rope family's typed attributes (a node's a.rope), read and written by src/ops/rope.c
   and the CPU loop it calls (src/cpu/rope.c). */
#ifndef NN__OPS_ROPE_H
#define NN__OPS_ROPE_H
#include <stdint.h>

typedef struct nn__rope_attr { /* x [B, H, T, D], or [B, T, H, D] when bthd */
    int B, H, T, D;
    int bthd;            /* x's layout is [B, T, H, D] */
    int rot;             /* the rotated dims: the first rot of D (even) */
    int interleaved;     /* GPT-J's pairs (2i, 2i + 1), not GPT-NeoX's halves (i, i + rot/2) */
    int inverse;         /* rotate by -angle (the gradient) */
    int pos;             /* positions: 0 none (t), 1 int32 [T], 2 int32 [B, T] (input 1) */
    int offset;          /* added to every position */
    float r_hi, r_lo;    /* theta^(-2 / rot) as a float-float pair (double on the host): the angle
                            of pair i at position p is p * (r_hi + r_lo)^i (src/cpu/rope.c) */
} nn__rope_attr;

#endif
