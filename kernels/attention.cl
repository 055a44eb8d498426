/* Fused scaled dot-product attention (src/ops/attention.c; the CPU loops in
   src/cpu/attention.c): flash attention's forward (online softmax, the output and one
   log-sum-exp per row), delta = rowsum(dO * O), dQ (one work-item per query row) and
   dK/dV (one work-item per key row, over its query heads and every query). No atomics; each
   sum in a fixed order. */
#include "kargs.h"
#include "attention_args.h"

#define NN_ATTN_DMAX 256

/* Philox4x32-10, as kernels/random.cl's nn_philox (a separate program): dropout's mask is
   nn_dropout's formula, counter (element, key, step) under the graph's seed */
inline uint4 nn_attn_philox(uint4 c, uint2 k) {
    for (int r = 0; r < 10; r++) {
        uint lo0 = 0xD2511F53u * c.x, hi0 = mul_hi(0xD2511F53u, c.x);
        uint lo1 = 0xCD9E8D57u * c.z, hi1 = mul_hi(0xCD9E8D57u, c.z);
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k += (uint2)(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

/* dropout's factor of weight (b, h, i, j): 1 / (1 - p) kept, 0 dropped */
inline float nn_attn_keep(int8 dims, float p, uint seed_lo, uint seed_hi, uint key, uint step_lo, uint step_hi, int b, int h,
                          int i, int j) {
    uint idx = (uint)((((long)b * dims.s1 + h) * dims.s3 + i) * dims.s4 + j);
    uint4 r = nn_attn_philox((uint4)(idx, key, step_lo, step_hi), (uint2)(seed_lo, seed_hi));
    float u = (float)(r.x >> 8) * (1.0f / 16777216.0f);
    return u >= p ? 1.0f / (1.0f - p) : 0.0f;
}

/* 1 when (i, j) of head (b, h) is masked; else 0 and *bias the mask's addend */
inline int nn_attn_dead(int8 dims, int8 mk, __global const float *mask, __global const float *kpm, int b, int h, int i, int j,
                        float *bias) {
    *bias = 0.0f;
    if (dims.s7 && j > i) return 1;
    if (mk.s6 > 0) {
        int d = i - j;
        if (d >= mk.s6 || (!dims.s7 && -d >= mk.s6)) return 1;
    }
    if (mk.s5) {
        float kv = kpm[(long)b * dims.s4 + j];
        if (mk.s5 == 1 ? kv != 0.0f : as_int(kv) != 0) return 1;
    }
    if (mk.s4) {
        float m = mask[(long)b * mk.s0 + (long)h * mk.s1 + (long)i * mk.s2 + (long)j * mk.s3];
        if (mk.s4 == 2) return as_int(m) == 0;
        *bias = m;
        if (m == -INFINITY) return 1;
    }
    return 0;
}

/* the element offset of row t of head h of batch b in a [B, heads, T, D] (layout 0) or
   [B, T, heads, D] tensor */
inline long nn_attn_off(int layout, int heads, int T, int D, int b, int h, int t) {
    return layout ? (((long)b * T + t) * heads + h) * D : (((long)b * heads + h) * T + t) * D;
}

#define NN_ATTN_ROW                                                            \
    int B = dims.s0, H = dims.s1, Hkv = dims.s2, Tq = dims.s3, Tk = dims.s4, D = dims.s5, lay = dims.s6; \
    int Dv = vdim;                                                             \
    int r = get_global_id(0);                                                  \
    if (r >= B * H * Tq) return;                                               \
    int b = r / (H * Tq), h = r / Tq % H, i = r % Tq, hk = h / (H / Hkv);       \
    long qo = nn_attn_off(lay, H, Tq, D, b, h, i), oo = nn_attn_off(lay, H, Tq, Dv, b, h, i)

__kernel void attn_fwd(NN__KPARAMS(attn_fwd)) {
    NN_ATTN_ROW;
    float acc[NN_ATTN_DMAX], m = -INFINITY, l = 0.0f;
    for (int d = 0; d < Dv; d++) acc[d] = 0.0f;
    for (int j = 0; j < Tk; j++) {
        float bias, s = 0.0f;
        if (nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) continue;
        long ko = nn_attn_off(lay, Hkv, Tk, D, b, hk, j), vo = nn_attn_off(lay, Hkv, Tk, Dv, b, hk, j);
        for (int d = 0; d < D; d++) s += q[qo + d] * k[ko + d];
        s = s * scale + bias;
        if (s > m) {
            float alpha = m == -INFINITY ? 0.0f : exp(m - s);
            l *= alpha;
            for (int d = 0; d < Dv; d++) acc[d] *= alpha;
            m = s;
        }
        float pe = exp(s - m);
        l += pe;
        if (p > 0.0f) pe *= nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j);
        if (pe != 0.0f)
            for (int d = 0; d < Dv; d++) acc[d] += pe * v[vo + d];
    }
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int d = 0; d < Dv; d++) out[oo + d] = acc[d] * inv;
    out[(long)B * H * Tq * Dv + r] = l > 0.0f ? m + log(l) : -INFINITY;
}

__kernel void attn_delta(NN__KPARAMS(attn_delta)) {
    int B = dims.s0, H = dims.s1, Tq = dims.s3, D = vdim;
    int r = get_global_id(0);
    if (r >= B * H * Tq) return;
    long qo = nn_attn_off(dims.s6, H, Tq, D, r / (H * Tq), r / Tq % H, r % Tq);
    float acc = 0.0f;
    for (int d = 0; d < D; d++) acc += dout[qo + d] * o[qo + d];
    delta[r] = acc;
}

/* dq_i = scale sum_j P_ij (dP_ij z_ij - delta_i) k_j */
__kernel void attn_dq(NN__KPARAMS(attn_bwd)) {
    NN_ATTN_ROW;
    float acc[NN_ATTN_DMAX], lse = o[(long)B * H * Tq * Dv + r], dl = delta[r];
    for (int d = 0; d < D; d++) acc[d] = 0.0f;
    for (int j = 0; j < Tk; j++) {
        float bias, s = 0.0f, dp = 0.0f, z = 1.0f;
        if (nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) continue;
        long ko = nn_attn_off(lay, Hkv, Tk, D, b, hk, j), vo = nn_attn_off(lay, Hkv, Tk, Dv, b, hk, j);
        for (int d = 0; d < D; d++) s += q[qo + d] * k[ko + d];
        float pe = exp(s * scale + bias - lse);
        if (pe == 0.0f) continue;
        for (int d = 0; d < Dv; d++) dp += dout[oo + d] * v[vo + d];
        if (p > 0.0f) z = nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j);
        float ds = pe * (dp * z - dl);
        for (int d = 0; d < D; d++) acc[d] += ds * k[ko + d];
    }
    for (int d = 0; d < D; d++) out[qo + d] = acc[d] * scale;
}

/* key row j of key/value head hk: dv_j = sum_(h, i) P_ij z_ij dO_i, dk_j = scale sum_(h, i)
   dS_ij q_i, over the group's query heads h and every query i, in that order */
__kernel void attn_dkv(NN__KPARAMS(attn_bwd)) {
    int B = dims.s0, H = dims.s1, Hkv = dims.s2, Tq = dims.s3, Tk = dims.s4, D = dims.s5, lay = dims.s6, Dv = vdim;
    int r = get_global_id(0);
    if (r >= B * Hkv * Tk) return;
    int b = r / (Hkv * Tk), hk = r / Tk % Hkv, j = r % Tk, grp = H / Hkv;
    long ko = nn_attn_off(lay, Hkv, Tk, D, b, hk, j), vo = nn_attn_off(lay, Hkv, Tk, Dv, b, hk, j), nkv = (long)B * Hkv * Tk * D;
    float dk[NN_ATTN_DMAX], dv[NN_ATTN_DMAX];
    for (int d = 0; d < D; d++) dk[d] = 0.0f;
    for (int d = 0; d < Dv; d++) dv[d] = 0.0f;
    for (int h = hk * grp; h < (hk + 1) * grp; h++)
        for (int i = 0; i < Tq; i++) {
            float bias, s = 0.0f, dp = 0.0f, z = 1.0f;
            if (nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) continue;
            long qo = nn_attn_off(lay, H, Tq, D, b, h, i), oo = nn_attn_off(lay, H, Tq, Dv, b, h, i);
            long row = ((long)b * H + h) * Tq + i;
            for (int d = 0; d < D; d++) s += q[qo + d] * k[ko + d];
            float pe = exp(s * scale + bias - o[(long)B * H * Tq * Dv + row]);
            if (pe == 0.0f) continue;
            if (p > 0.0f) z = nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j);
            for (int d = 0; d < Dv; d++) dp += dout[oo + d] * v[vo + d];
            float pd = pe * z, ds = pe * (dp * z - delta[row]);
            for (int d = 0; d < Dv; d++) dv[d] += pd * dout[oo + d];
            for (int d = 0; d < D; d++) dk[d] += ds * q[qo + d];
        }
    for (int d = 0; d < D; d++) out[ko + d] = dk[d] * scale;
    for (int d = 0; d < Dv; d++) out[nkv + vo + d] = dv[d];
}

/* element r of an additive mask's gradient: the sum of dS_bhij = P_ij (dP_ij z_ij -
   delta_i) over the dims the mask broadcasts (strides mk.s0..s3 of 0), b, h, i, j in order */
__kernel void attn_dmask(NN__KPARAMS(attn_bwd)) {
    int B = dims.s0, H = dims.s1, Hkv = dims.s2, Tq = dims.s3, Tk = dims.s4, D = dims.s5, lay = dims.s6, Dv = vdim;
    int nb = mk.s0 ? B : 1, nh = mk.s1 ? H : 1, ni = mk.s2 ? Tq : 1, nj = mk.s3 ? Tk : 1;
    int r = get_global_id(0);
    if (r >= nb * nh * ni * nj) return;
    int b0 = mk.s0 ? r / mk.s0 % B : 0, h0 = mk.s1 ? r / mk.s1 % H : 0, i0 = mk.s2 ? r / mk.s2 % Tq : 0;
    int j0 = mk.s3 ? r / mk.s3 % Tk : 0;
    int b1 = mk.s0 ? b0 + 1 : B, h1 = mk.s1 ? h0 + 1 : H, i1 = mk.s2 ? i0 + 1 : Tq, j1 = mk.s3 ? j0 + 1 : Tk;
    float acc = 0.0f;
    for (int b = b0; b < b1; b++)
        for (int h = h0; h < h1; h++)
            for (int i = i0; i < i1; i++) {
                long qo = nn_attn_off(lay, H, Tq, D, b, h, i), oo = nn_attn_off(lay, H, Tq, Dv, b, h, i);
                long row = ((long)b * H + h) * Tq + i;
                float lse = o[(long)B * H * Tq * Dv + row], dl = delta[row];
                int hk = h / (H / Hkv);
                for (int j = j0; j < j1; j++) {
                    float bias, s = 0.0f, dp = 0.0f, z = 1.0f;
                    if (nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) continue;
                    long ko = nn_attn_off(lay, Hkv, Tk, D, b, hk, j), vo = nn_attn_off(lay, Hkv, Tk, Dv, b, hk, j);
                    for (int d = 0; d < D; d++) s += q[qo + d] * k[ko + d];
                    float pe = exp(s * scale + bias - lse);
                    if (pe == 0.0f) continue;
                    for (int d = 0; d < Dv; d++) dp += dout[oo + d] * v[vo + d];
                    if (p > 0.0f) z = nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j);
                    acc += pe * (dp * z - dl);
                }
            }
    out[r] = acc;
}
