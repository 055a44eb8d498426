/* Philox4x32-10 (Salmon et al., SC'11): counter-based, so element i of a dropout mask is a
   pure function of (seed, op, step, i). src/nn_internal.h has the same generator for the
   CPU backend, and both draw identical masks. */

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
__kernel void dropout(__global const float *x, __global float *y, const int n, const float p,
                      const uint seed_lo, const uint seed_hi, const uint node, const uint step_lo,
                      const uint step_hi) {
    int i = get_global_id(0);
    if (i >= n) return;
    uint4 r = nn_philox((uint4)((uint)i, node, step_lo, step_hi), (uint2)(seed_lo, seed_hi));
    float u = (float)(r.x >> 8) * (1.0f / 16777216.0f);
    y[i] = x[i] * (u >= p ? 1.0f / (1.0f - p) : 0.0f);
}
