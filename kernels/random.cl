/* Philox4x32-10 (Salmon et al., SC'11): counter-based, so element i of a dropout mask is a
   pure function of (seed, op, step, i). src/base/internal.h has the same generator for the
   CPU backend, and both draw identical masks. */
#include "kargs.h"
#include "random_args.h"


inline uint4 nn_philox(uint4 c, uint2 k) {
    for (int r = 0; r < 10; r++) {
        uint lo0 = 0xD2511F53u * c.x, hi0 = mul_hi(0xD2511F53u, c.x);
        uint lo1 = 0xCD9E8D57u * c.z, hi1 = mul_hi(0xCD9E8D57u, c.z);
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
    y[i] = x[i] * (u >= p ? 1.0f / (1.0f - p) : 0.0f);
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
