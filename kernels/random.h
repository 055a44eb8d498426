/* The random ops' formulas, written once for both backends: a part of nn.h (C99 and C++:
   the CPU bodies in src/ops/random.c) and included by kernels/random.cl (OpenCL C 1.2).
   Each turns Philox4x32-10 output words (the generator of src/base/internal.h and
   kernels/random.cl, counter (element, key, step) and key (seed)) into a sample.

   Identical bits on every backend: these functions use only operations that IEEE 754 and
   OpenCL C 1.2 (full profile) both round correctly: integer arithmetic, exact int-to-float
   conversions (24 bits at most), +, -, * and fma. No division, sqrt, log or cos from a
   math library (OpenCL allows them several ulp of error, and C libraries differ).
   Every a * b + c is an explicit fma, and no product feeds a sum otherwise, so a compiler
   that contracts (OpenCL C by default, gcc's -ffp-contract=fast) has nothing to fuse.
   What can still break it: -ffast-math (or -cl-fast-relaxed-math), and C targets that
   evaluate float in extended precision (x87, FLT_EVAL_METHOD != 0). Subnormal inputs and
   results of gaussian noise and alpha dropout may differ on devices that flush them.

   The normal sampler is Box-Muller: z = sqrt(-2 ln u1) cos(2 pi u2), with u1 in (0, 1]
   and u2 in [0, 1) on a grid of 2^-24 (so |z| <= sqrt(2 * 24 ln 2) = 5.77); ln by its
   exponent and a 16-term series on [2/3, 4/3) (truncation < 1e-9), sqrt as w * rsqrt(w)
   by 3 Newton steps from the classic bit-level estimate, cos by quadrant and the Taylor
   series of cos and sin (pi t / 2) on [0, 1) (truncation < 1e-8). Against Box-Muller in
   double from the same words, |z| is off by less than 1e-6 (tests/test_random.c). */
#ifndef NN__RANDOM_H
#define NN__RANDOM_H

#ifdef __OPENCL_VERSION__
#define NN__RG __global
#define NN__RL __local
#define NN__RU32 uint
#define NN__RU64 ulong
#define NN__RI64 long
#define NN__RFMA fma
static inline uint nn__rng_f2u(float v) { return as_uint(v); }
static inline float nn__rng_u2f(uint u) { return as_float(u); }
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
#define NN__RG
#define NN__RL
#define NN__RU32 uint32_t
#define NN__RU64 uint64_t
#define NN__RI64 int64_t
#define NN__RFMA fmaf
static inline uint32_t nn__rng_f2u(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}
static inline float nn__rng_u2f(uint32_t u) {
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}
#endif

/* uniform in [0, 1): the word's top 24 bits times 2^-24 (exact) */
static inline float nn__rng_uniform(NN__RU32 r) { return (float)(r >> 8) * 5.9604644775390625e-8f; }

/* ln(u) for a normal float u in (0, 1]: u = 2^e x, x in [2/3, 4/3), f = x - 1 (exact),
   ln(1 + f) = f (1 - f/2 + f^2/3 - ... - f^15/16) */
static inline float nn__rng_log(float u) {
    NN__RU32 b = nn__rng_f2u(u);
    int e = (int)((b >> 23) & 0xffu) - 127;
    float x = nn__rng_u2f((b & 0x7fffffu) | 0x3f800000u), f, p;
    if (x >= 1.33333333f) {
        x = x * 0.5f;
        e = e + 1;
    }
    f = x - 1.0f;
    p = NN__RFMA(-6.250000000e-02f, f, 6.666667014e-02f);
    p = NN__RFMA(p, f, -7.142857462e-02f);
    p = NN__RFMA(p, f, 7.692307979e-02f);
    p = NN__RFMA(p, f, -8.333333582e-02f);
    p = NN__RFMA(p, f, 9.090909362e-02f);
    p = NN__RFMA(p, f, -1.000000015e-01f);
    p = NN__RFMA(p, f, 1.111111119e-01f);
    p = NN__RFMA(p, f, -1.250000000e-01f);
    p = NN__RFMA(p, f, 1.428571492e-01f);
    p = NN__RFMA(p, f, -1.666666716e-01f);
    p = NN__RFMA(p, f, 2.000000030e-01f);
    p = NN__RFMA(p, f, -2.500000000e-01f);
    p = NN__RFMA(p, f, 3.333333433e-01f);
    p = NN__RFMA(p, f, -5.000000000e-01f);
    p = NN__RFMA(p, f, 1.0f);
    return NN__RFMA(f, p, (float)e * 6.931471825e-01f);
}

/* sqrt(w) for w >= 0 (not inf): w * y, y = 1/sqrt(w) by Newton's y (3/2 - w/2 y^2) */
static inline float nn__rng_sqrt(float w) {
    float h = 0.5f * w, y = nn__rng_u2f(0x5f3759dfu - (nn__rng_f2u(w) >> 1));
    y = y * NN__RFMA(-(h * y), y, 1.5f);
    y = y * NN__RFMA(-(h * y), y, 1.5f);
    y = y * NN__RFMA(-(h * y), y, 1.5f);
    return w * y;
}

/* cos(2 pi k / 2^24) for k in [0, 2^24): quadrant q = k >> 22, t = the rest / 2^22 in
   [0, 1), cos(q pi/2 + pi t/2) = cos(pi t/2), -sin, -cos, sin */
static inline float nn__rng_cos_turn(NN__RU32 k) {
    NN__RU32 q = k >> 22;
    float t = (float)(k & 0x3fffffu) * 2.384185791015625e-7f, s = t * t, c;
    if (q & 1u) {
        c = NN__RFMA(5.692172778e-08f, s, -3.598843250e-06f);
        c = NN__RFMA(c, s, 1.604411809e-04f);
        c = NN__RFMA(c, s, -4.681753926e-03f);
        c = NN__RFMA(c, s, 7.969262451e-02f);
        c = NN__RFMA(c, s, -6.459640861e-01f);
        c = NN__RFMA(c, s, 1.570796371e+00f);
        c = c * t;
    } else {
        c = NN__RFMA(4.710874748e-07f, s, -2.520204180e-05f);
        c = NN__RFMA(c, s, 9.192602593e-04f);
        c = NN__RFMA(c, s, -2.086348087e-02f);
        c = NN__RFMA(c, s, 2.536695004e-01f);
        c = NN__RFMA(c, s, -1.233700514e+00f);
        c = NN__RFMA(c, s, 1.0f);
    }
    return q == 1u || q == 2u ? -c : c;
}

/* standard normal from two words (Box-Muller, one of the pair) */
static inline float nn__rng_normal(NN__RU32 r0, NN__RU32 r1) {
    float u1 = (float)((r0 >> 8) + 1u) * 5.9604644775390625e-8f; /* (0, 1] */
    return nn__rng_sqrt(-2.0f * nn__rng_log(u1)) * nn__rng_cos_turn(r1 >> 8);
}

/* low + ((r1 r0 as 64 bits) mod range), range = high - low in [1, 2^32]: each value's
   probability is 1/range within a relative 2^-32 */
static inline int nn__rng_int(NN__RU32 r0, NN__RU32 r1, int low, NN__RU64 range) {
    NN__RU64 v = (((NN__RU64)r1 << 32) | (NN__RU64)r0) % range;
    return (int)((NN__RI64)low + (NN__RI64)v);
}

/* ---- sampling a token from a row of logits (nn_sample_logits), the same bits on every
   backend: a row of V logits is cut into NN__SAMP_LANES contiguous chunks (lane j: indices
   j*ch .. min(V, (j+1)*ch) - 1, ch = ceil(V / lanes)); every float sum is each lane's chunk
   in index order, then the lanes' sums in lane order; thresholds are searched bit by bit
   on the order-preserving keys of the scaled logits (integer counts and those sums), so
   nothing depends on a device's work-group size. The CPU body runs the lanes one after
   another, the kernel one work-group per row over them. ---- */
#define NN__SAMP_LANES 64

/* the scaled logit: z * inv_t (z itself when greedy), NaN as -inf, -0 as +0 */
static inline float nn__samp_s(float z, float inv_t, int greedy) {
    float v = greedy ? z : z * inv_t;
    return v != v ? -INFINITY : v == 0.0f ? 0.0f : v;
}
/* the float's order as an unsigned key: a < b exactly when key(a) < key(b) */
static inline NN__RU32 nn__samp_key(float v) {
    NN__RU32 b = nn__rng_f2u(v);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
static inline float nn__samp_unkey(NN__RU32 k) { return nn__rng_u2f((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k); }

/* exp(x) for x <= 0 (s - max), by exact operations: x = k ln2 + r (Cody-Waite), Taylor to r^7
   (|r| < 0.35: relative error < 1e-7), times 2^k; 0 below -87; NaN (inf - inf: the +inf
   logits) gives 1 */
static inline float nn__samp_exp(float x) {
    float kf, r, p;
    int k;
    if (x != x) return 1.0f;
    if (x < -87.0f) return 0.0f;
    k = (int)(x * 1.44269502162933349609f - 0.5f);
    kf = (float)k;
    r = NN__RFMA(kf, -0.693145751953125f, x);
    r = NN__RFMA(kf, -1.428606765330187e-06f, r);
    p = NN__RFMA(1.98412698e-04f, r, 1.38888889e-03f);
    p = NN__RFMA(p, r, 8.33333333e-03f);
    p = NN__RFMA(p, r, 4.16666667e-02f);
    p = NN__RFMA(p, r, 1.66666667e-01f);
    p = NN__RFMA(p, r, 0.5f);
    p = NN__RFMA(p, r, 1.0f);
    p = NN__RFMA(p, r, 1.0f);
    return p * nn__rng_u2f((NN__RU32)(k + 127) << 23);
}

/* lane work over z[i0..i1) (p: the row's probabilities, exp(s - max), written by
   nn__samp_lane_exp): the largest key; the first index of key m (-1: none); the count of
   keys >= c; the sum of p over keys >= c */
static inline NN__RU32 nn__samp_lane_max(NN__RG const float *z, int i0, int i1, float inv_t, int greedy) {
    NN__RU32 m = 0u, k;
    int i;
    for (i = i0; i < i1; i++) {
        k = nn__samp_key(nn__samp_s(z[i], inv_t, greedy));
        m = k > m ? k : m;
    }
    return m;
}
static inline int nn__samp_lane_first(NN__RG const float *z, int i0, int i1, float inv_t, int greedy, NN__RU32 m) {
    int i;
    for (i = i0; i < i1; i++)
        if (nn__samp_key(nn__samp_s(z[i], inv_t, greedy)) == m) return i;
    return -1;
}
static inline void nn__samp_lane_exp(NN__RG const float *z, NN__RG float *p, int i0, int i1, float inv_t, float m) {
    int i;
    for (i = i0; i < i1; i++) p[i] = nn__samp_exp(nn__samp_s(z[i], inv_t, 0) - m);
}
static inline NN__RU32 nn__samp_lane_count(NN__RG const float *z, int i0, int i1, float inv_t, NN__RU32 c) {
    NN__RU32 n = 0u;
    int i;
    for (i = i0; i < i1; i++) n += nn__samp_key(nn__samp_s(z[i], inv_t, 0)) >= c ? 1u : 0u;
    return n;
}
static inline float nn__samp_lane_sum(NN__RG const float *z, NN__RG const float *p, int i0, int i1, float inv_t, NN__RU32 c) {
    float acc = 0.0f;
    int i;
    for (i = i0; i < i1; i++)
        if (nn__samp_key(nn__samp_s(z[i], inv_t, 0)) >= c) acc += p[i];
    return acc;
}
/* the draw inside lane z[i0..i1): from acc (the lanes before it), the first kept index where
   the running sum passes target, else the lane's last kept index */
static inline int nn__samp_lane_pick(NN__RG const float *z, NN__RG const float *p, int i0, int i1, float inv_t, NN__RU32 c,
                                     float acc, float target) {
    int i, last = -1;
    for (i = i0; i < i1; i++)
        if (nn__samp_key(nn__samp_s(z[i], inv_t, 0)) >= c) {
            acc += p[i];
            last = i;
            if (acc > target) return i;
        }
    return last;
}
/* the lanes' values combined in lane order: a sum, a count, and the lane of the draw (the
   first whose running sum passes target; the last non-empty one otherwise), *before: the
   lanes' sum before it */
static inline float nn__samp_sum_lanes(NN__RL const float *lf) {
    float acc = 0.0f;
    int j;
    for (j = 0; j < NN__SAMP_LANES; j++) acc += lf[j];
    return acc;
}
static inline NN__RU32 nn__samp_count_lanes(NN__RL const NN__RU32 *lu) {
    NN__RU32 n = 0u;
    int j;
    for (j = 0; j < NN__SAMP_LANES; j++) n += lu[j];
    return n;
}
static inline int nn__samp_pick_lane(NN__RL const float *lf, float target, float *before) {
    float acc = 0.0f;
    int j, last = 0;
    for (j = 0; j < NN__SAMP_LANES; j++) {
        if (lf[j] > 0.0f) last = j;
        if (acc + lf[j] > target) {
            *before = acc;
            return j;
        }
        acc += lf[j];
    }
    acc = 0.0f;
    for (j = 0; j < last; j++) acc += lf[j];
    *before = acc;
    return last;
}
#endif /* NN__RANDOM_H */
