/* Philox4x32-10 (Salmon et al., SC'11): counter-based, so element i of a dropout mask is a
   pure function of (seed, op, step, i). src/base/internal.h has the same generator for the
   CPU backend, and both draw identical masks. */
#include "kargs.h"
#include "storage.h"
#include "random_args.h"


/* The 32x32 -> 64-bit products as ulong multiplies, not mul_hi: PoCL built mul_hi from
   16-bit pieces, scalar (dropout: 2% of the CNN step); the words are the same. */
inline uint4 nn_philox(uint4 c, uint2 k) {
    for (int r = 0; r < 10; r++) {
        ulong p0 = (ulong)0xD2511F53u * c.x, p1 = (ulong)0xCD9E8D57u * c.z;
        uint lo0 = (uint)p0, hi0 = (uint)(p0 >> 32);
        uint lo1 = (uint)p1, hi1 = (uint)(p1 >> 32);
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k += (uint2)(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

/* y = x * keep / (1 - p), keep = uniform >= p (a product: a dropped NaN or inf is NaN);
   the backward pass runs this on dy with the same key and step, so it applies the same
   mask. */
__kernel void dropout(NN__KPARAMS(dropout)) {
    int i = get_global_id(0);
    if (i >= n) return;
    uint4 r = nn_philox((uint4)((uint)i, node, step_lo, step_hi), (uint2)(seed_lo, seed_hi));
    float u = (float)(r.x >> 8) * (1.0f / 16777216.0f);
    NN__SSTORE(y, i, NN__SLOAD(x, i) * (u >= p ? 1.0f / (1.0f - p) : 0.0f));
}

/* The random ops (src/ops/random.c): element i of node `key` at step (step_hi, step_lo)
   takes the Philox words of counter (i, key, step_lo, step_hi) under key (seed_lo,
   seed_hi), and kernels/random.h's formulas, which the CPU bodies share, so both backends
   give the same bits. */

#include "random.h"

#define NN_RNG_WORDS(i) nn_philox((uint4)((uint)(i), key, step_lo, step_hi), (uint2)(seed_lo, seed_hi))

__kernel void rand_uniform(NN__KPARAMS(rand)) {
    int i = get_global_id(0);
    if (i >= n) return;
    uint4 r = NN_RNG_WORDS(i);
    y[i] = nn__rng_uniform(r.x);
}

__kernel void randn(NN__KPARAMS(randn)) {
    int i = get_global_id(0);
    if (i >= n) return;
    uint4 r = NN_RNG_WORDS(i);
    y[i] = nn__rng_normal(r.x, r.y);
}

/* range_m1 = high - low - 1 */
__kernel void randint(NN__KPARAMS(randint)) {
    int i = get_global_id(0);
    if (i >= n) return;
    uint4 r = NN_RNG_WORDS(i);
    y[i] = nn__rng_int(r.x, r.y, low, (ulong)range_m1 + 1);
}

/* y = u < p: 1 with probability p (on a grid of 2^-24); p outside [0, 1] (or NaN) counts
   into bad[slot] */
__kernel void bernoulli(NN__KPARAMS(bernoulli)) {
    int i = get_global_id(0);
    if (i >= n) return;
    float pi = p[i];
    if (!(pi >= 0.0f && pi <= 1.0f)) atomic_inc(bad + slot);
    uint4 r = NN_RNG_WORDS(i);
    y[i] = nn__rng_uniform(r.x) < pi ? 1.0f : 0.0f;
}

/* y = x + std z */
__kernel void gaussian_noise(NN__KPARAMS(gaussian_noise)) {
    int i = get_global_id(0);
    if (i >= n) return;
    uint4 r = NN_RNG_WORDS(i);
    y[i] = fma(std, nn__rng_normal(r.x, r.y), x[i]);
}

/* kept (u >= p): scale x + shift; dropped: the constant */
__kernel void alpha_dropout_forward(NN__KPARAMS(alpha_dropout)) {
    int i = get_global_id(0);
    if (i >= n) return;
    uint4 r = NN_RNG_WORDS(i);
    y[i] = nn__rng_uniform(r.x) >= p ? fma(scale, x[i], shift) : dropped;
}

/* dx = dy * mask * scale, the forward's mask (same key and step) */
__kernel void alpha_dropout_grad(NN__KPARAMS(alpha_dropout_grad)) {
    int i = get_global_id(0);
    if (i >= n) return;
    uint4 r = NN_RNG_WORDS(i);
    dx[i] = nn__rng_uniform(r.x) >= p ? scale * dy[i] : 0.0f;
}

/* nn_sample_logits: one work-group per row b of z [B, V]; work-item l runs the lanes l,
   l + wg, ... of kernels/random.h's split (any work-group size up to NN__SAMP_LANES gives
   the same bits), and work-item 0 combines the lanes in order. p [B, V]: the row's
   exp(s - max). Branches on arguments and on values read after a barrier are uniform. */
__kernel void sample_logits(NN__KPARAMS(sample_logits)) {
    __local float lf[NN__SAMP_LANES];
    __local uint lu[NN__SAMP_LANES];
    __local uint bu;
    __local float bf;
    int b = get_group_id(0), l = get_local_id(0), wg = get_local_size(0), j;
    int ch = (V + NN__SAMP_LANES - 1) / NN__SAMP_LANES;
    __global const float *zr = z + (long)b * V;
    __global float *pr = p + (long)b * V;
#define NN_LANE_RANGE(j) (j) * ch < V ? (j) * ch : V, (j) * ch + ch < V ? (j) * ch + ch : V
    for (j = l; j < NN__SAMP_LANES; j += wg) lu[j] = nn__samp_lane_max(zr, NN_LANE_RANGE(j), inv_t, greedy);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        uint m = 0u;
        for (j = 0; j < NN__SAMP_LANES; j++) m = lu[j] > m ? lu[j] : m;
        bu = m;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint mkey = bu;
    /* greedy: the first index of the largest (every phase below runs for every argument, so
       no barrier stands in a branch; with greedy, inv_t is 0 and they are cheap) */
    for (j = l; j < NN__SAMP_LANES; j += wg) lu[j] = (uint)nn__samp_lane_first(zr, NN_LANE_RANGE(j), inv_t, greedy, mkey);
    barrier(CLK_LOCAL_MEM_FENCE);
    int first = 0;
    for (j = 0; j < NN__SAMP_LANES; j++)
        if ((int)lu[j] >= 0) {
            first = (int)lu[j];
            break;
        }
    float m = greedy ? 0.0f : nn__samp_unkey(mkey);
    for (j = l; j < NN__SAMP_LANES; j += wg) nn__samp_lane_exp(zr, pr, NN_LANE_RANGE(j), inv_t, m);
    /* top-k: the largest key c with at least top_k keys >= c (each work-item reads back
       only the p it wrote itself) */
    uint tk = 0u;
    for (int bit = top_k > 0 && top_k < V && !greedy ? 31 : -1; bit >= 0; bit--) {
        uint c = tk | (1u << bit);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (j = l; j < NN__SAMP_LANES; j += wg) lu[j] = nn__samp_lane_count(zr, NN_LANE_RANGE(j), inv_t, c);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l == 0) bu = nn__samp_count_lanes(lu);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (bu >= (uint)top_k) tk = c;
    }
    /* top-p: the largest key c >= tk whose keys >= c hold at least top_p of the mass */
    barrier(CLK_LOCAL_MEM_FENCE);
    for (j = l; j < NN__SAMP_LANES; j += wg) lf[j] = nn__samp_lane_sum(zr, pr, NN_LANE_RANGE(j), inv_t, tk);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) bf = nn__samp_sum_lanes(lf);
    barrier(CLK_LOCAL_MEM_FENCE);
    float target = top_p * bf;
    uint res = 0u;
    for (int bit = top_p < 1.0f && !greedy ? 31 : -1; bit >= 0; bit--) {
        uint c = res | (1u << bit), cc = c > tk ? c : tk;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (j = l; j < NN__SAMP_LANES; j += wg) lf[j] = nn__samp_lane_sum(zr, pr, NN_LANE_RANGE(j), inv_t, cc);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l == 0) bf = nn__samp_sum_lanes(lf);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (bf >= target && bf > 0.0f) res = c; /* at least one token */
    }
    uint tau = res > tk ? res : tk;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (j = l; j < NN__SAMP_LANES; j += wg) lf[j] = nn__samp_lane_sum(zr, pr, NN_LANE_RANGE(j), inv_t, tau);
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (l == 0) { /* the draw: u in [0, 1) times the kept mass */
        uint4 r = nn_philox((uint4)((uint)b, key, run_lo, run_hi), (uint2)(seed_lo, seed_hi));
        float before, target = nn__rng_uniform(r.x) * nn__samp_sum_lanes(lf);
        int lane = nn__samp_pick_lane(lf, target, &before);
        int t = nn__samp_lane_pick(zr, pr, NN_LANE_RANGE(lane), inv_t, tau, before, target);
        y[b] = greedy ? first : t < 0 ? 0 : t;
    }
#undef NN_LANE_RANGE
}
