/* Fused scaled dot-product attention (src/ops/attention.c; the CPU loops in
   src/cpu/attention.c): flash attention's forward (online softmax, the output and one
   log-sum-exp per row), delta = rowsum(dO * O), dQ and dK/dV. Three shapes of each:
   attn_tiled_* (GPUs), a work-group per tile of query rows (forward, dQ) or key rows
   (dK/dV) with the other side's tiles in local memory (kernels/attention_tile.h);
   attn_block_* (CPU drivers), one work-item a group per block of rows, the head dim in
   vectors; the row kernels attn_fwd, attn_dq, attn_dkv (GPUs whose local memory holds no
   tile), one work-item per query or key row. No atomics; each sum in a fixed order. */
#include "kargs.h"
#include "storage.h"
#include "attention_args.h"
#include "attention_tile.h"

/* q, k, v, the output and dO are the program's storage type (kernels/storage.h): built
   with -DNN_STORE_BF16 / -DNN_STORE_F16 these are the 16-bit attention (every sum, the
   softmax's statistics and the log-sum-exp in float32, each output rounded once), built
   with neither the float32 kernels, the same accesses as before. NN_ATTN_LD reads one
   element, NN_ATTN_V8 eight from p; the log-sum-exp after an output of n elements is
   float32 words from element n (rounded up to even in 16-bit storage: NN_ATTN_LSE_OFF). */
#define NN_ATTN_LD(p, i) NN__SLOAD(p, i)
#if defined(NN_STORE_BF16)
#define NN_ATTN_V8(p) as_float8(convert_uint8(vload8(0, p)) << 16)
#define NN_ATTN_LSE_OFF(n) ((n) + ((n) & 1))
#elif defined(NN_STORE_F16)
#define NN_ATTN_V8(p) vload_half8(0, (__global const half *)(p))
#define NN_ATTN_LSE_OFF(n) ((n) + ((n) & 1))
#else
#define NN_ATTN_V8(p) vload8(0, p)
#define NN_ATTN_LSE_OFF(n) (n)
#endif
#define NN_ATTN_LSE_IN(p, n) ((__global const float *)((p) + NN_ATTN_LSE_OFF(n)))
#define NN_ATTN_LSE_OUT(p, n) ((__global float *)((p) + NN_ATTN_LSE_OFF(n)))

#define NN_ATTN_DMAX 256

/* Philox4x32-10, as kernels/random.cl's nn_philox (a separate program): dropout's mask is
   nn_dropout's formula, counter (element, key, step) under the graph's seed; its products
   as ulong multiplies, as there (PoCL builds mul_hi from scalar 16-bit pieces) */
inline uint4 nn_attn_philox(uint4 c, uint2 k) {
    for (int r = 0; r < 10; r++) {
        ulong p0 = (ulong)0xD2511F53u * c.x, p1 = (ulong)0xCD9E8D57u * c.z;
        uint lo0 = (uint)p0, hi0 = (uint)(p0 >> 32);
        uint lo1 = (uint)p1, hi1 = (uint)(p1 >> 32);
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
        if (mk.s4 >= 2) return (as_int(m) == 0) == (mk.s4 == 2); /* int32: 2 nonzero attends, 3 hides */
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

/* the same of an operand read through a view (layout 1 only): rows of rs elements, the
   head's columns from off (src/ops/attention.c, nn__attn_views; rs = heads D and off 0:
   its own layout) */
inline long nn_attn_voff(int layout, int heads, int T, int D, int rs, int off, int b, int h, int t) {
    return layout ? ((long)b * T + t) * rs + off + (long)h * D : nn_attn_off(0, heads, T, D, b, h, t);
}
/* q's, k's and v's rows (vw: their row strides and offsets), dout's (o's layout), and
   where dq, dk and dv go: at q's, k's and v's places in one gradient (vw.s6), else dq in
   q's own layout and [dk, dv] in theirs */
#define NN_ATTN_QO(b, h, i) nn_attn_voff(lay, H, Tq, D, vw.s0, vw.s1, b, h, i)
#define NN_ATTN_KO(b, hk, j) nn_attn_voff(lay, Hkv, Tk, D, vw.s2, vw.s3, b, hk, j)
#define NN_ATTN_VO(b, hk, j) nn_attn_voff(lay, Hkv, Tk, vdim, vw.s4, vw.s5, b, hk, j)
#define NN_ATTN_OO(b, h, i) nn_attn_off(lay, H, Tq, vdim, b, h, i)
#define NN_ATTN_DQO(b, h, i) (vw.s6 ? NN_ATTN_QO(b, h, i) : nn_attn_off(lay, H, Tq, D, b, h, i))
#define NN_ATTN_DKO(b, hk, j) (vw.s6 ? NN_ATTN_KO(b, hk, j) : nn_attn_off(lay, Hkv, Tk, D, b, hk, j))
#define NN_ATTN_DVO(b, hk, j) (vw.s6 ? NN_ATTN_VO(b, hk, j) : (long)B * Hkv * Tk * D + nn_attn_off(lay, Hkv, Tk, vdim, b, hk, j))

#define NN_ATTN_ROW                                                            \
    int B = dims.s0, H = dims.s1, Hkv = dims.s2, Tq = dims.s3, Tk = dims.s4, D = dims.s5, lay = dims.s6; \
    int Dv = vdim;                                                             \
    int r = get_global_id(0);                                                  \
    if (r >= B * H * Tq) return;                                               \
    int b = r / (H * Tq), h = r / Tq % H, i = r % Tq, hk = h / (H / Hkv);       \
    long qo = NN_ATTN_QO(b, h, i), oo = nn_attn_off(lay, H, Tq, Dv, b, h, i)

__kernel void attn_fwd(NN__KPARAMS(attn_fwd)) {
    NN_ATTN_ROW;
    float acc[NN_ATTN_DMAX], m = -INFINITY, l = 0.0f;
    for (int d = 0; d < Dv; d++) acc[d] = 0.0f;
    for (int j = 0; j < Tk; j++) {
        float bias, s = 0.0f;
        if (nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) continue;
        long ko = NN_ATTN_KO(b, hk, j), vo = NN_ATTN_VO(b, hk, j);
        for (int d = 0; d < D; d++) s += NN_ATTN_LD(q, qo + d) * NN_ATTN_LD(k, ko + d);
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
            for (int d = 0; d < Dv; d++) acc[d] += pe * NN_ATTN_LD(v, vo + d);
    }
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int d = 0; d < Dv; d++) NN__SSTORE(out, oo + d, acc[d] * inv);
    NN_ATTN_LSE_OUT(out, (long)B * H * Tq * Dv)[r] = l > 0.0f ? m + log(l) : -INFINITY;
}

__kernel void attn_delta(NN__KPARAMS(attn_delta)) {
    int B = dims.s0, H = dims.s1, Tq = dims.s3, D = vdim;
    int r = get_global_id(0);
    if (r >= B * H * Tq) return;
    long qo = nn_attn_off(dims.s6, H, Tq, D, r / (H * Tq), r / Tq % H, r % Tq);
    float acc = 0.0f;
    for (int d = 0; d < D; d++) acc += NN_ATTN_LD(dout, qo + d) * NN_ATTN_LD(o, qo + d);
    delta[r] = acc;
}

/* dq_i = scale sum_j P_ij (dP_ij z_ij - delta_i) k_j */
__kernel void attn_dq(NN__KPARAMS(attn_bwd)) {
    NN_ATTN_ROW;
    float acc[NN_ATTN_DMAX], lse = NN_ATTN_LSE_IN(o, (long)B * H * Tq * Dv)[r], dl = delta[r];
    for (int d = 0; d < D; d++) acc[d] = 0.0f;
    for (int j = 0; j < Tk; j++) {
        float bias, s = 0.0f, dp = 0.0f, z = 1.0f;
        if (nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) continue;
        long ko = NN_ATTN_KO(b, hk, j), vo = NN_ATTN_VO(b, hk, j);
        for (int d = 0; d < D; d++) s += NN_ATTN_LD(q, qo + d) * NN_ATTN_LD(k, ko + d);
        float pe = exp(s * scale + bias - lse);
        if (pe == 0.0f) continue;
        for (int d = 0; d < Dv; d++) dp += NN_ATTN_LD(dout, oo + d) * NN_ATTN_LD(v, vo + d);
        if (p > 0.0f) z = nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j);
        float ds = pe * (dp * z - dl);
        for (int d = 0; d < D; d++) acc[d] += ds * NN_ATTN_LD(k, ko + d);
    }
    for (int d = 0; d < D; d++) NN__SSTORE(out, NN_ATTN_DQO(b, h, i) + d, acc[d] * scale);
}

/* key row j of key/value head hk: dv_j = sum_(h, i) P_ij z_ij dO_i, dk_j = scale sum_(h, i)
   dS_ij q_i, over the group's query heads h and every query i, in that order */
__kernel void attn_dkv(NN__KPARAMS(attn_bwd)) {
    int B = dims.s0, H = dims.s1, Hkv = dims.s2, Tq = dims.s3, Tk = dims.s4, D = dims.s5, lay = dims.s6, Dv = vdim;
    int r = get_global_id(0);
    if (r >= B * Hkv * Tk) return;
    int b = r / (Hkv * Tk), hk = r / Tk % Hkv, j = r % Tk, grp = H / Hkv;
    long ko = NN_ATTN_KO(b, hk, j), vo = NN_ATTN_VO(b, hk, j);
    float dk[NN_ATTN_DMAX], dv[NN_ATTN_DMAX];
    for (int d = 0; d < D; d++) dk[d] = 0.0f;
    for (int d = 0; d < Dv; d++) dv[d] = 0.0f;
    for (int h = hk * grp; h < (hk + 1) * grp; h++)
        for (int i = 0; i < Tq; i++) {
            float bias, s = 0.0f, dp = 0.0f, z = 1.0f;
            if (nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) continue;
            long qo = NN_ATTN_QO(b, h, i), oo = nn_attn_off(lay, H, Tq, Dv, b, h, i);
            long row = ((long)b * H + h) * Tq + i;
            for (int d = 0; d < D; d++) s += NN_ATTN_LD(q, qo + d) * NN_ATTN_LD(k, ko + d);
            float pe = exp(s * scale + bias - NN_ATTN_LSE_IN(o, (long)B * H * Tq * Dv)[row]);
            if (pe == 0.0f) continue;
            if (p > 0.0f) z = nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j);
            for (int d = 0; d < Dv; d++) dp += NN_ATTN_LD(dout, oo + d) * NN_ATTN_LD(v, vo + d);
            float pd = pe * z, ds = pe * (dp * z - delta[row]);
            for (int d = 0; d < Dv; d++) dv[d] += pd * NN_ATTN_LD(dout, oo + d);
            for (int d = 0; d < D; d++) dk[d] += ds * NN_ATTN_LD(q, qo + d);
        }
    for (int d = 0; d < D; d++) NN__SSTORE(out, NN_ATTN_DKO(b, hk, j) + d, dk[d] * scale);
    for (int d = 0; d < Dv; d++) NN__SSTORE(out, NN_ATTN_DVO(b, hk, j) + d, dv[d]);
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
                long qo = NN_ATTN_QO(b, h, i), oo = nn_attn_off(lay, H, Tq, Dv, b, h, i);
                long row = ((long)b * H + h) * Tq + i;
                float lse = NN_ATTN_LSE_IN(o, (long)B * H * Tq * Dv)[row], dl = delta[row];
                int hk = h / (H / Hkv);
                for (int j = j0; j < j1; j++) {
                    float bias, s = 0.0f, dp = 0.0f, z = 1.0f;
                    if (nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) continue;
                    long ko = NN_ATTN_KO(b, hk, j), vo = NN_ATTN_VO(b, hk, j);
                    for (int d = 0; d < D; d++) s += NN_ATTN_LD(q, qo + d) * NN_ATTN_LD(k, ko + d);
                    float pe = exp(s * scale + bias - lse);
                    if (pe == 0.0f) continue;
                    for (int d = 0; d < Dv; d++) dp += NN_ATTN_LD(dout, oo + d) * NN_ATTN_LD(v, vo + d);
                    if (p > 0.0f) z = nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j);
                    acc += pe * (dp * z - dl);
                }
            }
    ((__global float *)out)[r] = acc; /* the mask's gradient: float32 */
}

/* ==== the tiled kernels: a work-group of NN_ATTN_WG items per tile of BT rows, WG / BT
   items per row (row r = lid / tpr, lane t = lid % tpr); lane t owns the output columns
   t, t + tpr, ... (NN_ATTN_OWN at most) and the tile's columns c = t, t + tpr, ... of the
   score tiles. Every barrier is outside any branch, in loops whose bounds are the group's
   own; rows and keys past the ends are zeros in local memory and dead in the scores. ==== */

#ifndef NN_ATTN_WG /* build options (src/opencl/gemm_plan.c, nn__attn_cl_config) */
#define NN_ATTN_WG 1
#define NN_ATTN_LMEM 1
#define NN_ATTN_OWN 1
#endif

/* rows [r0, r0 + BT) of a [B, heads, T, D] (or [B, T, heads, D]) head into a [BT, D + 1]
   local tile, zeros past n */
inline void nn_attn_load(__local float *dst, __global const NN__STORE_T *src, int lay, int heads, int T, int D, int rs, int off, int b,
                         int h, int r0, int n, int BT) {
    for (int e = get_local_id(0); e < BT * D; e += NN_ATTN_WG) {
        int rr = e / D, d = e - rr * D;
        dst[rr * (D + 1) + d] = r0 + rr < n ? NN_ATTN_LD(src, nn_attn_voff(lay, heads, T, D, rs, off, b, h, r0 + rr) + d) : 0.0f;
    }
}

/* the key range [*lo, *hi) that queries [i0, i1) may attend (causal, window) */
inline void nn_attn_keys(int8 dims, int8 mk, int i0, int i1, int *lo, int *hi) {
    *lo = 0, *hi = dims.s4;
    if (dims.s7) *hi = min(*hi, i1);
    if (mk.s6 > 0) {
        *lo = max(0, i0 - mk.s6 + 1);
        if (!dims.s7) *hi = min(*hi, i1 - 1 + mk.s6);
    }
}

/* the query range [*lo, *hi) that may attend keys [j0, j1) */
inline void nn_attn_queries(int8 dims, int8 mk, int j0, int j1, int *lo, int *hi) {
    *lo = 0, *hi = dims.s3;
    if (dims.s7) *lo = j0;
    if (mk.s6 > 0) {
        *hi = min(*hi, j1 - 1 + mk.s6);
        if (!dims.s7) *lo = max(*lo, j0 - mk.s6 + 1);
    }
}

#define NN_ATTN_TILED_HEAD(LF, NROW, HEADS)                                                        \
    __local float lm[NN_ATTN_LMEM];                                                                \
    int B = dims.s0, H = dims.s1, Hkv = dims.s2, Tq = dims.s3, Tk = dims.s4, D = dims.s5, lay = dims.s6; \
    int BT = NN__ATTN_TILE(LF, D, NN_ATTN_LMEM, NN_ATTN_WG);                                       \
    if (BT == 0) return;                                                                           \
    int tpr = NN_ATTN_WG / BT, lid = get_local_id(0), r = lid / tpr, t = lid % tpr;                 \
    int nblk = (NROW + BT - 1) / BT, grp = get_group_id(0);                                        \
    if (grp >= B * HEADS * nblk) return;                                                           \
    int b = grp / (HEADS * nblk), hh = grp / nblk % HEADS, r0 = grp % nblk * BT, ld = D + 1, ls = BT + 1; \
    (void)Hkv

/* O and the log-sum-exp of query rows [i0, i0 + BT) of head (b, h): per key tile, S = Q K^T
   scale + mask (dead: -inf), the rows' new maxima, P = exp(S - m) (dropped weights stored
   negated: the row sum counts them, the output not), then O = O alpha + P V */
__kernel __attribute__((reqd_work_group_size(NN_ATTN_WG, 1, 1))) void attn_tiled_fwd(NN__KPARAMS(attn_fwd)) {
    NN_ATTN_TILED_HEAD(NN__ATTN_LF_FWD, Tq, H);
    int h = hh, hk = h / (H / Hkv), i = r0 + r, jlo, jhi;
    __local float *Qs = lm, *KVs = Qs + BT * ld, *Ss = KVs + BT * ld, *Ps = Ss + BT * ls;
    float acc[NN_ATTN_OWN], m = -INFINITY, l = 0.0f;
    for (int u = 0; u < NN_ATTN_OWN; u++) acc[u] = 0.0f;
    nn_attn_keys(dims, mk, r0, min(r0 + BT, Tq), &jlo, &jhi);
    nn_attn_load(Qs, q, lay, H, Tq, D, vw.s0, vw.s1, b, h, r0, Tq, BT);
    for (int j0 = jlo; j0 < jhi; j0 += BT) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the last tile's reads of KVs and Ps are done */
        nn_attn_load(KVs, k, lay, Hkv, Tk, D, vw.s2, vw.s3, b, hk, j0, jhi, BT);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int c = t; c < BT; c += tpr) {
            int j = j0 + c;
            float s = -INFINITY, bias;
            if (i < Tq && j < jhi && !nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) {
                float dot = 0.0f;
                for (int d = 0; d < D; d++) dot += Qs[r * ld + d] * KVs[c * ld + d];
                s = dot * scale + bias;
            }
            Ss[r * ls + c] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* the scores are written; K is read */
        nn_attn_load(KVs, v, lay, Hkv, Tk, D, vw.s4, vw.s5, b, hk, j0, jhi, BT);
        float mt = m;
        for (int c = 0; c < BT; c++) {
            float s = Ss[r * ls + c];
            mt = s > mt ? s : mt;
        }
        float alpha = mt == -INFINITY ? 0.0f : exp(m - mt);
        for (int c = t; c < BT; c += tpr) {
            float s = Ss[r * ls + c], pe = s == -INFINITY ? 0.0f : exp(s - mt);
            if (p > 0.0f && i < Tq && nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j0 + c) == 0.0f)
                pe = -pe;
            Ps[r * ls + c] = pe;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* V and the weights are written */
        l *= alpha;
        for (int u = 0; u < NN_ATTN_OWN; u++) acc[u] *= alpha;
        for (int c = 0; c < BT; c++) {
            float pe = Ps[r * ls + c], w = pe < 0.0f ? 0.0f : pe;
            l += fabs(pe);
            for (int u = 0; u < NN_ATTN_OWN; u++) {
                int d = t + u * tpr;
                if (d < D) acc[u] += w * KVs[c * ld + d];
            }
        }
        m = mt;
    }
    if (i < Tq) {
        long qo = nn_attn_off(lay, H, Tq, D, b, h, i);
        float inv = l > 0.0f ? 1.0f / l : 0.0f;
        if (p > 0.0f) inv *= 1.0f / (1.0f - p);
        for (int u = 0; u < NN_ATTN_OWN; u++) {
            int d = t + u * tpr;
            if (d < D) NN__SSTORE(out, qo + d, acc[u] * inv);
        }
        if (t == 0) NN_ATTN_LSE_OUT(out, (long)B * H * Tq * D)[((long)b * H + h) * Tq + i] = l > 0.0f ? m + log(l) : -INFINITY;
    }
}

/* dq of query rows [i0, i0 + BT): per key tile, dS = P (dP z - delta) with P = exp(S - lse),
   dP = dO V^T, then dq += dS K; dq = scale dq */
__kernel __attribute__((reqd_work_group_size(NN_ATTN_WG, 1, 1))) void attn_tiled_dq(NN__KPARAMS(attn_bwd)) {
    NN_ATTN_TILED_HEAD(NN__ATTN_LF_BWD, Tq, H);
    int h = hh, hk = h / (H / Hkv), i = r0 + r, jlo, jhi;
    __local float *Qs = lm, *dOs = Qs + BT * ld, *Ks = dOs + BT * ld, *Vs = Ks + BT * ld, *Ss = Vs + BT * ld;
    long row = ((long)b * H + h) * Tq + (i < Tq ? i : 0);
    float acc[NN_ATTN_OWN], lse = NN_ATTN_LSE_IN(o, (long)B * H * Tq * D)[row], dl = delta[row];
    for (int u = 0; u < NN_ATTN_OWN; u++) acc[u] = 0.0f;
    nn_attn_keys(dims, mk, r0, min(r0 + BT, Tq), &jlo, &jhi);
    nn_attn_load(Qs, q, lay, H, Tq, D, vw.s0, vw.s1, b, h, r0, Tq, BT);
    nn_attn_load(dOs, dout, lay, H, Tq, D, H * D, 0, b, h, r0, Tq, BT);
    for (int j0 = jlo; j0 < jhi; j0 += BT) {
        barrier(CLK_LOCAL_MEM_FENCE);
        nn_attn_load(Ks, k, lay, Hkv, Tk, D, vw.s2, vw.s3, b, hk, j0, jhi, BT);
        nn_attn_load(Vs, v, lay, Hkv, Tk, D, vw.s4, vw.s5, b, hk, j0, jhi, BT);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int c = t; c < BT; c += tpr) {
            int j = j0 + c;
            float bias, ds = 0.0f;
            if (i < Tq && j < jhi && !nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) {
                float s = 0.0f, dp = 0.0f, z = 1.0f;
                for (int d = 0; d < D; d++) s += Qs[r * ld + d] * Ks[c * ld + d];
                float pe = exp(s * scale + bias - lse);
                if (pe != 0.0f) {
                    for (int d = 0; d < D; d++) dp += dOs[r * ld + d] * Vs[c * ld + d];
                    if (p > 0.0f) z = nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j);
                    ds = pe * (dp * z - dl);
                }
            }
            Ss[r * ls + c] = ds;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int c = 0; c < BT; c++) {
            float ds = Ss[r * ls + c];
            for (int u = 0; u < NN_ATTN_OWN; u++) {
                int d = t + u * tpr;
                if (d < D) acc[u] += ds * Ks[c * ld + d];
            }
        }
    }
    if (i < Tq) {
        long qo = NN_ATTN_DQO(b, h, i);
        for (int u = 0; u < NN_ATTN_OWN; u++) {
            int d = t + u * tpr;
            if (d < D) NN__SSTORE(out, qo + d, acc[u] * scale);
        }
    }
}

/* dk, dv of key rows [j0, j0 + BT) of key/value head hk: over its query heads h and their
   query tiles in order, Pz = P z and dS = P (dP z - delta) (tiles [key, query]), then
   dv += Pz dO, dk += dS Q; dk = scale dk */
__kernel __attribute__((reqd_work_group_size(NN_ATTN_WG, 1, 1))) void attn_tiled_dkv(NN__KPARAMS(attn_bwd)) {
    NN_ATTN_TILED_HEAD(NN__ATTN_LF_BWD, Tk, Hkv);
    int hk = hh, j = r0 + r, grp_h = H / Hkv, ilo, ihi;
    __local float *Ks = lm, *Vs = Ks + BT * ld, *Qs = Vs + BT * ld, *dOs = Qs + BT * ld, *Ps = dOs + BT * ld, *Ss = Ps + BT * ls;
    float dk[NN_ATTN_OWN], dv[NN_ATTN_OWN];
    for (int u = 0; u < NN_ATTN_OWN; u++) dk[u] = dv[u] = 0.0f;
    nn_attn_queries(dims, mk, r0, min(r0 + BT, Tk), &ilo, &ihi);
    nn_attn_load(Ks, k, lay, Hkv, Tk, D, vw.s2, vw.s3, b, hk, r0, Tk, BT);
    nn_attn_load(Vs, v, lay, Hkv, Tk, D, vw.s4, vw.s5, b, hk, r0, Tk, BT);
    for (int h = hk * grp_h; h < (hk + 1) * grp_h; h++)
        for (int i0 = ilo; i0 < ihi; i0 += BT) {
            barrier(CLK_LOCAL_MEM_FENCE);
            nn_attn_load(Qs, q, lay, H, Tq, D, vw.s0, vw.s1, b, h, i0, ihi, BT);
            nn_attn_load(dOs, dout, lay, H, Tq, D, H * D, 0, b, h, i0, ihi, BT);
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int c = t; c < BT; c += tpr) {
                int i = i0 + c;
                float bias, pz = 0.0f, ds = 0.0f;
                if (j < Tk && i < ihi && !nn_attn_dead(dims, mk, mask, kpm, b, h, i, j, &bias)) {
                    long row = ((long)b * H + h) * Tq + i;
                    float s = 0.0f, dp = 0.0f, z = 1.0f;
                    for (int d = 0; d < D; d++) s += Qs[c * ld + d] * Ks[r * ld + d];
                    float pe = exp(s * scale + bias - NN_ATTN_LSE_IN(o, (long)B * H * Tq * D)[row]);
                    if (pe != 0.0f) {
                        if (p > 0.0f) z = nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j);
                        for (int d = 0; d < D; d++) dp += dOs[c * ld + d] * Vs[r * ld + d];
                        pz = pe * z;
                        ds = pe * (dp * z - delta[row]);
                    }
                }
                Ps[r * ls + c] = pz;
                Ss[r * ls + c] = ds;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int c = 0; c < BT; c++) {
                float pz = Ps[r * ls + c], ds = Ss[r * ls + c];
                for (int u = 0; u < NN_ATTN_OWN; u++) {
                    int d = t + u * tpr;
                    if (d < D) {
                        dv[u] += pz * dOs[c * ld + d];
                        dk[u] += ds * Qs[c * ld + d];
                    }
                }
            }
        }
    if (j < Tk) {
        long ko = NN_ATTN_DKO(b, hk, j), vo = NN_ATTN_DVO(b, hk, j);
        for (int u = 0; u < NN_ATTN_OWN; u++) {
            int d = t + u * tpr;
            if (d < D) {
                NN__SSTORE(out, ko + d, dk[u] * scale);
                NN__SSTORE(out, vo + d, dv[u]);
            }
        }
    }
}

/* ==== the block kernels (CPU drivers): one work-item a group, NN_ATTN_RB rows of one head
   per item, four rows or keys at a time against one row of the other side (its loads
   shared); the head dim in float8 lanes (a dot's lanes summed in order at its end), so a
   CPU compiler's vectors carry it. ==== */

#define NN_ATTN_RB NN__ATTN_RB
#define NN_ATTN_CB 64

/* the dots of x with y0..y3 (a row missing from a group of four: y0 again, weight 0) */
inline float4 nn_attn_dot4(__global const NN__STORE_T *x, __global const NN__STORE_T *y0, __global const NN__STORE_T *y1,
                           __global const NN__STORE_T *y2, __global const NN__STORE_T *y3, int D) {
    float8 a0 = (float8)(0.0f), a1 = a0, a2 = a0, a3 = a0;
    int d = 0;
    for (; d + 8 <= D; d += 8) {
        float8 xv = NN_ATTN_V8(x + d);
        a0 += xv * NN_ATTN_V8(y0 + d);
        a1 += xv * NN_ATTN_V8(y1 + d);
        a2 += xv * NN_ATTN_V8(y2 + d);
        a3 += xv * NN_ATTN_V8(y3 + d);
    }
    float4 lo = (a0.s0123 + a0.s4567), r;
    r.x = (lo.x + lo.y) + (lo.z + lo.w);
    lo = a1.s0123 + a1.s4567;
    r.y = (lo.x + lo.y) + (lo.z + lo.w);
    lo = a2.s0123 + a2.s4567;
    r.z = (lo.x + lo.y) + (lo.z + lo.w);
    lo = a3.s0123 + a3.s4567;
    r.w = (lo.x + lo.y) + (lo.z + lo.w);
    for (; d < D; d++) r += NN_ATTN_LD(x, d) * (float4)(NN_ATTN_LD(y0, d), NN_ATTN_LD(y1, d), NN_ATTN_LD(y2, d), NN_ATTN_LD(y3, d));
    return r;
}

/* acc += w.x y0 + w.y y1 + w.z y2 + w.w y3, in that order */
inline void nn_attn_axpy4(__local float *acc, float4 w, __global const NN__STORE_T *y0, __global const NN__STORE_T *y1,
                          __global const NN__STORE_T *y2, __global const NN__STORE_T *y3, int D) {
    int d = 0;
    for (; d + 8 <= D; d += 8)
        vstore8(vload8(0, acc + d) + w.x * NN_ATTN_V8(y0 + d) + w.y * NN_ATTN_V8(y1 + d) + w.z * NN_ATTN_V8(y2 + d) +
                    w.w * NN_ATTN_V8(y3 + d),
                0, acc + d);
    for (; d < D; d++) acc[d] = acc[d] + w.x * NN_ATTN_LD(y0, d) + w.y * NN_ATTN_LD(y1, d) + w.z * NN_ATTN_LD(y2, d) + w.w * NN_ATTN_LD(y3, d);
}

/* acc_r += w_r y for the rows acc, acc + D, acc + 2 D, acc + 3 D (n of them) */
inline void nn_attn_axpy_rows(__local float *acc, int n, float4 w, __global const NN__STORE_T *y, int D) {
    int d = 0;
    __local float *a1 = acc + D * (n > 1), *a2 = acc + 2 * D * (n > 2), *a3 = acc + 3 * D * (n > 3);
    w = (float4)(w.x, n > 1 ? w.y : 0.0f, n > 2 ? w.z : 0.0f, n > 3 ? w.w : 0.0f);
    if (n < 4) { /* fewer rows: one at a time (a missing row aliases acc) */
        for (int r = 0; r < n; r++) {
            float wr = r == 0 ? w.x : r == 1 ? w.y : w.z;
            for (d = 0; d + 8 <= D; d += 8) vstore8(vload8(0, acc + r * D + d) + wr * NN_ATTN_V8(y + d), 0, acc + r * D + d);
            for (; d < D; d++) acc[r * D + d] += wr * NN_ATTN_LD(y, d);
        }
        return;
    }
    for (; d + 8 <= D; d += 8) {
        float8 yv = NN_ATTN_V8(y + d);
        vstore8(vload8(0, acc + d) + w.x * yv, 0, acc + d);
        vstore8(vload8(0, a1 + d) + w.y * yv, 0, a1 + d);
        vstore8(vload8(0, a2 + d) + w.z * yv, 0, a2 + d);
        vstore8(vload8(0, a3 + d) + w.w * yv, 0, a3 + d);
    }
    for (; d < D; d++) {
        acc[d] += w.x * NN_ATTN_LD(y, d);
        a1[d] += w.y * NN_ATTN_LD(y, d);
        a2[d] += w.z * NN_ATTN_LD(y, d);
        a3[d] += w.w * NN_ATTN_LD(y, d);
    }
}

#define NN_ATTN_BLOCK_HEAD(NROW, HEADS)                                                            \
    int B = dims.s0, H = dims.s1, Hkv = dims.s2, Tq = dims.s3, Tk = dims.s4, D = dims.s5, lay = dims.s6; \
    int nblk = (NROW + NN_ATTN_RB - 1) / NN_ATTN_RB, grp = get_group_id(0);                       \
    if (grp >= B * HEADS * nblk) return;                                                           \
    int b = grp / (HEADS * nblk), hh = grp / nblk % HEADS, r0 = grp % nblk * NN_ATTN_RB;           \
    int r1 = min(r0 + NN_ATTN_RB, NROW);                                                           \
    (void)Hkv

/* the rows of head (b, h) of an operand at t, t+1, t+2, t+3 (OFF: NN_ATTN_QO, _KO, _VO or
   _OO), those at or past n replaced by row t */
#define NN_ATTN_ROWS4(p, OFF, h, t, n)                                                            \
    p + OFF(b, h, t), p + OFF(b, h, (t) + 1 < (n) ? (t) + 1 : (t)), p + OFF(b, h, (t) + 2 < (n) ? (t) + 2 : (t)), \
        p + OFF(b, h, (t) + 3 < (n) ? (t) + 3 : (t))

/* rows [i0, i1) of head (b, h): per tile of keys, each row's scores (four keys at a time),
   its new maximum, then O = O alpha + sum_j P_j z_j v_j */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void attn_block_fwd(NN__KPARAMS(attn_fwd)) {
    __local float acc[NN_ATTN_RB * NN_ATTN_DMAX];
    NN_ATTN_BLOCK_HEAD(Tq, H);
    int h = hh, hk = h / (H / Hkv), jlo, jhi;
    float s[NN_ATTN_CB + 3], m[NN_ATTN_RB], l[NN_ATTN_RB];
    for (int r = 0; r < NN_ATTN_RB; r++) m[r] = -INFINITY, l[r] = 0.0f;
    for (int e = 0; e < NN_ATTN_RB * D; e++) acc[e] = 0.0f;
    nn_attn_keys(dims, mk, r0, r1, &jlo, &jhi);
    for (int j0 = jlo; j0 < jhi; j0 += NN_ATTN_CB) {
        int nc = min(NN_ATTN_CB, jhi - j0);
        for (int i = r0; i < r1; i++) {
            int r = i - r0;
            long qo = NN_ATTN_QO(b, h, i);
            float mt = m[r];
            for (int c = 0; c < nc; c += 4) {
                float4 d4 = nn_attn_dot4(q + qo, NN_ATTN_ROWS4(k, NN_ATTN_KO, hk, j0 + c, jhi), D);
                float dd[4] = {d4.x, d4.y, d4.z, d4.w};
                for (int e = 0; e < 4; e++) {
                    float bias;
                    s[c + e] = -INFINITY;
                    if (c + e >= nc || nn_attn_dead(dims, mk, mask, kpm, b, h, i, j0 + c + e, &bias)) continue;
                    s[c + e] = dd[e] * scale + bias;
                    mt = s[c + e] > mt ? s[c + e] : mt;
                }
            }
            if (mt == -INFINITY) continue; /* no key of the row alive yet */
            float alpha = exp(m[r] - mt);
            __local float *a = acc + r * D;
            l[r] *= alpha;
            for (int d = 0; d < D; d++) a[d] *= alpha;
            for (int c = 0; c < nc; c += 4) {
                float w[4];
                for (int e = 0; e < 4; e++) {
                    float pe = s[c + e] == -INFINITY ? 0.0f : exp(s[c + e] - mt);
                    l[r] += pe;
                    if (p > 0.0f && pe != 0.0f)
                        pe *= nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j0 + c + e);
                    w[e] = pe;
                }
                nn_attn_axpy4(a, (float4)(w[0], w[1], w[2], w[3]), NN_ATTN_ROWS4(v, NN_ATTN_VO, hk, j0 + c, jhi), D);
            }
            m[r] = mt;
        }
    }
    for (int i = r0; i < r1; i++) {
        int r = i - r0;
        long qo = nn_attn_off(lay, H, Tq, D, b, h, i);
        float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
        for (int d = 0; d < D; d++) NN__SSTORE(out, qo + d, acc[r * D + d] * inv);
        NN_ATTN_LSE_OUT(out, (long)B * H * Tq * D)[((long)b * H + h) * Tq + i] = l[r] > 0.0f ? m[r] + log(l[r]) : -INFINITY;
    }
}

/* dq of rows [i0, i1): per key j, four rows at a time, dS = P (dP z - delta), dq += dS k_j */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void attn_block_dq(NN__KPARAMS(attn_bwd)) {
    __local float acc[NN_ATTN_RB * NN_ATTN_DMAX];
    NN_ATTN_BLOCK_HEAD(Tq, H);
    int h = hh, hk = h / (H / Hkv), jlo, jhi;
    for (int e = 0; e < NN_ATTN_RB * D; e++) acc[e] = 0.0f;
    nn_attn_keys(dims, mk, r0, r1, &jlo, &jhi);
    for (int j = jlo; j < jhi; j++) {
        long ko = NN_ATTN_KO(b, hk, j), vo = NN_ATTN_VO(b, hk, j);
        for (int i = r0; i < r1; i += 4) {
            float4 s4 = nn_attn_dot4(k + ko, NN_ATTN_ROWS4(q, NN_ATTN_QO, h, i, r1), D);
            float4 p4 = nn_attn_dot4(v + vo, NN_ATTN_ROWS4(dout, NN_ATTN_OO, h, i, r1), D);
            float ss[4] = {s4.x, s4.y, s4.z, s4.w}, dp[4] = {p4.x, p4.y, p4.z, p4.w}, w[4];
            for (int e = 0; e < 4; e++) {
                long row = ((long)b * H + h) * Tq + i + e;
                float bias, z = 1.0f, pe = 0.0f;
                w[e] = 0.0f;
                if (i + e >= r1 || nn_attn_dead(dims, mk, mask, kpm, b, h, i + e, j, &bias)) continue;
                pe = exp(ss[e] * scale + bias - NN_ATTN_LSE_IN(o, (long)B * H * Tq * D)[row]);
                if (pe == 0.0f) continue;
                if (p > 0.0f) z = nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i + e, j);
                w[e] = pe * (dp[e] * z - delta[row]);
            }
            nn_attn_axpy_rows(acc + (i - r0) * D, min(4, r1 - i), (float4)(w[0], w[1], w[2], w[3]), k + ko, D);
        }
    }
    for (int i = r0; i < r1; i++) {
        long qo = NN_ATTN_DQO(b, h, i);
        for (int d = 0; d < D; d++) NN__SSTORE(out, qo + d, acc[(i - r0) * D + d] * scale);
    }
}

/* dk, dv of key rows [j0, j1) of key/value head hk: over its query heads and their queries
   in order, four keys at a time, dv_j += P z dO_i, dk_j += dS q_i */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void attn_block_dkv(NN__KPARAMS(attn_bwd)) {
    __local float dk[NN_ATTN_RB * NN_ATTN_DMAX], dv[NN_ATTN_RB * NN_ATTN_DMAX];
    NN_ATTN_BLOCK_HEAD(Tk, Hkv);
    int hk = hh, grp_h = H / Hkv, ilo, ihi;
    for (int e = 0; e < NN_ATTN_RB * D; e++) dk[e] = dv[e] = 0.0f;
    nn_attn_queries(dims, mk, r0, r1, &ilo, &ihi);
    for (int h = hk * grp_h; h < (hk + 1) * grp_h; h++)
        for (int i = ilo; i < ihi; i++) {
            long qo = NN_ATTN_QO(b, h, i), oo = NN_ATTN_OO(b, h, i), row = ((long)b * H + h) * Tq + i;
            float lse = NN_ATTN_LSE_IN(o, (long)B * H * Tq * D)[row], dl = delta[row];
            for (int j = r0; j < r1; j += 4) {
                float4 s4 = nn_attn_dot4(q + qo, NN_ATTN_ROWS4(k, NN_ATTN_KO, hk, j, r1), D);
                float4 p4 = nn_attn_dot4(dout + oo, NN_ATTN_ROWS4(v, NN_ATTN_VO, hk, j, r1), D);
                float ss[4] = {s4.x, s4.y, s4.z, s4.w}, dp[4] = {p4.x, p4.y, p4.z, p4.w}, wv[4], wk[4];
                for (int e = 0; e < 4; e++) {
                    float bias, z = 1.0f, pe;
                    wv[e] = wk[e] = 0.0f;
                    if (j + e >= r1 || nn_attn_dead(dims, mk, mask, kpm, b, h, i, j + e, &bias)) continue;
                    pe = exp(ss[e] * scale + bias - lse);
                    if (pe == 0.0f) continue;
                    if (p > 0.0f) z = nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j + e);
                    wv[e] = pe * z;
                    wk[e] = pe * (dp[e] * z - dl);
                }
                int n = min(4, r1 - j);
                nn_attn_axpy_rows(dv + (j - r0) * D, n, (float4)(wv[0], wv[1], wv[2], wv[3]), dout + oo, D);
                nn_attn_axpy_rows(dk + (j - r0) * D, n, (float4)(wk[0], wk[1], wk[2], wk[3]), q + qo, D);
            }
        }
    for (int j = r0; j < r1; j++) {
        long ko = NN_ATTN_DKO(b, hk, j), vo = NN_ATTN_DVO(b, hk, j);
        for (int d = 0; d < D; d++) {
            NN__SSTORE(out, ko + d, dk[(j - r0) * D + d] * scale);
            NN__SSTORE(out, vo + d, dv[(j - r0) * D + d]);
        }
    }
}

/* ==== the flash kernels (GPUs, NN_CL_ATTN flash; kernels/attention_tile.h): a work-group of
   NN_ATTN_FBR items, one query row (forward, dQ) or key row (dK/dV) each, its operand rows
   and accumulators in registers as NN_ATTN_FV float4 (columns past D zeros); the other
   side's rows NN_ATTN_FBC at a time in local memory, [FBC, FD] floats, read by every item
   at the same address (broadcast, four columns a read). The per-item arrays are indexed by
   compile-time constants only (unrolled loops), so a GPU compiler keeps them in registers.
   Barriers stand in loops whose bounds are the group's own; rows past the ends are zeros
   in local memory and dead in the scores. Sums: each dot in four column lanes summed
   ((x + y) + (z + w)), the keys (queries) in order. ==== */
#if defined(NN_ATTN_FD) && NN_ATTN_FD > 0
#define NN_ATTN_FBR NN__ATTN_FBR
#define NN_ATTN_FBC NN__ATTN_FBC
#define NN_ATTN_FV (NN_ATTN_FD / 4)

/* element d of a row at p (offset o) when d < D and the row lives, else 0 */
#define NN_ATTN_LD0(p_, o_, d_) (live && (d_) < D ? NN_ATTN_LD(p_, (o_) + (d_)) : 0.0f)
#define NN_ATTN_LD4(p_, o_, u_)                                                                    \
    (float4)(NN_ATTN_LD0(p_, o_, 4 * (u_)), NN_ATTN_LD0(p_, o_, 4 * (u_) + 1), NN_ATTN_LD0(p_, o_, 4 * (u_) + 2), \
             NN_ATTN_LD0(p_, o_, 4 * (u_) + 3))
/* a float4's lanes to a row at p (offset o), the columns before D */
#define NN_ATTN_ST4(p_, o_, u_, x_)                                                                \
    do {                                                                                           \
        float4 w4_ = (x_);                                                                         \
        if (4 * (u_) < D) NN__SSTORE(p_, (o_) + 4 * (u_), w4_.s0);                                 \
        if (4 * (u_) + 1 < D) NN__SSTORE(p_, (o_) + 4 * (u_) + 1, w4_.s1);                         \
        if (4 * (u_) + 2 < D) NN__SSTORE(p_, (o_) + 4 * (u_) + 2, w4_.s2);                         \
        if (4 * (u_) + 3 < D) NN__SSTORE(p_, (o_) + 4 * (u_) + 3, w4_.s3);                         \
    } while (0)
#define NN_ATTN_HSUM(a_) (((a_).s0 + (a_).s1) + ((a_).s2 + (a_).s3))

/* rows [r0, r0 + FBC) of a head into an [FBC, FD] local tile: zeros past row n and column D;
   consecutive items take consecutive columns */
inline void nn_attn_fload(__local float4 *dst4, __global const NN__STORE_T *src, int lay, int heads, int T, int D, int rs, int off,
                          int b, int h, int r0, int n) {
    __local float *dst = (__local float *)dst4;
    for (int e = get_local_id(0); e < NN_ATTN_FBC * NN_ATTN_FD; e += NN_ATTN_FBR) {
        int rr = e / NN_ATTN_FD, d = e % NN_ATTN_FD;
        dst[e] = r0 + rr < n && d < D ? NN_ATTN_LD(src, nn_attn_voff(lay, heads, T, D, rs, off, b, h, r0 + rr) + d) : 0.0f;
    }
}

#define NN_ATTN_FLASH_HEAD(NROW, HEADS)                                                            \
    int B = dims.s0, H = dims.s1, Hkv = dims.s2, Tq = dims.s3, Tk = dims.s4, D = dims.s5, lay = dims.s6; \
    int nblk = (NROW + NN_ATTN_FBR - 1) / NN_ATTN_FBR, grp = get_group_id(0);                      \
    if (grp >= B * HEADS * nblk) return;                                                           \
    int b = grp / (HEADS * nblk), hh = grp / nblk % HEADS, r0 = grp % nblk * NN_ATTN_FBR;          \
    int me = r0 + (int)get_local_id(0), live = me < NROW;                                          \
    (void)Hkv

/* query row i of head (b, h): per tile of FBC keys, the FBC scores (q from registers, K from
   local memory; kept in the item's own column of a local [FBC, FBR] tile), the row's new
   maximum, then O = O alpha + sum_c P_c z_c V_c (the row sum counts the dropped weights,
   the output not) */
__kernel __attribute__((reqd_work_group_size(NN_ATTN_FBR, 1, 1))) void attn_flash_fwd(NN__KPARAMS(attn_fwd)) {
    __local float4 Ks[NN_ATTN_FBC * NN_ATTN_FV], Vs[NN_ATTN_FBC * NN_ATTN_FV];
    __local float Ss[NN_ATTN_FBC * NN_ATTN_FBR];
    NN_ATTN_FLASH_HEAD(Tq, H);
    int h = hh, hk = h / (H / Hkv), i = me, t = get_local_id(0), jlo, jhi;
    long qo = NN_ATTN_QO(b, h, live ? i : 0);
    float4 qr[NN_ATTN_FV], acc[NN_ATTN_FV];
    float m = -INFINITY, l = 0.0f;
#pragma unroll
    for (int u = 0; u < NN_ATTN_FV; u++) {
        qr[u] = NN_ATTN_LD4(q, qo, u);
        acc[u] = (float4)(0.0f);
    }
    nn_attn_keys(dims, mk, r0, min(r0 + NN_ATTN_FBR, Tq), &jlo, &jhi);
    for (int j0 = jlo; j0 < jhi; j0 += NN_ATTN_FBC) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the last tile's reads are done */
        nn_attn_fload(Ks, k, lay, Hkv, Tk, D, vw.s2, vw.s3, b, hk, j0, jhi);
        nn_attn_fload(Vs, v, lay, Hkv, Tk, D, vw.s4, vw.s5, b, hk, j0, jhi);
        barrier(CLK_LOCAL_MEM_FENCE);
        float mt = m;
        for (int c = 0; c < NN_ATTN_FBC; c++) {
            float4 a = (float4)(0.0f);
            float bias, sc = -INFINITY;
#pragma unroll
            for (int u = 0; u < NN_ATTN_FV; u++) a += qr[u] * Ks[c * NN_ATTN_FV + u];
            if (live && j0 + c < jhi && !nn_attn_dead(dims, mk, mask, kpm, b, h, i, j0 + c, &bias)) sc = NN_ATTN_HSUM(a) * scale + bias;
            Ss[c * NN_ATTN_FBR + t] = sc;
            mt = sc > mt ? sc : mt;
        }
        if (mt != -INFINITY) { /* a live key so far */
            float alpha = exp(m - mt);
            l *= alpha;
#pragma unroll
            for (int u = 0; u < NN_ATTN_FV; u++) acc[u] *= alpha;
            for (int c = 0; c < NN_ATTN_FBC; c++) {
                float sc = Ss[c * NN_ATTN_FBR + t], pe = sc == -INFINITY ? 0.0f : exp(sc - mt);
                l += pe;
                if (p > 0.0f && pe != 0.0f) pe *= nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j0 + c);
#pragma unroll
                for (int u = 0; u < NN_ATTN_FV; u++) acc[u] += pe * Vs[c * NN_ATTN_FV + u];
            }
            m = mt;
        }
    }
    if (live) {
        long oo = nn_attn_off(lay, H, Tq, D, b, h, i);
        float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
        for (int u = 0; u < NN_ATTN_FV; u++) NN_ATTN_ST4(out, oo, u, acc[u] * inv);
        NN_ATTN_LSE_OUT(out, (long)B * H * Tq * D)[((long)b * H + h) * Tq + i] = l > 0.0f ? m + log(l) : -INFINITY;
    }
}

/* dq of query row i: per key j of each tile, dS = P (dP z - delta) with P = exp(S - lse),
   dP = dO v_j, then dq += dS k_j (q, dO and dq in registers); dq = scale dq */
__kernel __attribute__((reqd_work_group_size(NN_ATTN_FBR, 1, 1))) void attn_flash_dq(NN__KPARAMS(attn_bwd)) {
    __local float4 Ks[NN_ATTN_FBC * NN_ATTN_FV], Vs[NN_ATTN_FBC * NN_ATTN_FV];
    NN_ATTN_FLASH_HEAD(Tq, H);
    int h = hh, hk = h / (H / Hkv), i = me, jlo, jhi;
    long qo = NN_ATTN_QO(b, h, live ? i : 0), oo = nn_attn_off(lay, H, Tq, D, b, h, live ? i : 0);
    long row = ((long)b * H + h) * Tq + (live ? i : 0);
    float4 qr[NN_ATTN_FV], dor[NN_ATTN_FV], dq[NN_ATTN_FV];
    float lse = NN_ATTN_LSE_IN(o, (long)B * H * Tq * D)[row], dl = delta[row];
#pragma unroll
    for (int u = 0; u < NN_ATTN_FV; u++) {
        qr[u] = NN_ATTN_LD4(q, qo, u);
        dor[u] = NN_ATTN_LD4(dout, oo, u);
        dq[u] = (float4)(0.0f);
    }
    nn_attn_keys(dims, mk, r0, min(r0 + NN_ATTN_FBR, Tq), &jlo, &jhi);
    for (int j0 = jlo; j0 < jhi; j0 += NN_ATTN_FBC) {
        barrier(CLK_LOCAL_MEM_FENCE);
        nn_attn_fload(Ks, k, lay, Hkv, Tk, D, vw.s2, vw.s3, b, hk, j0, jhi);
        nn_attn_fload(Vs, v, lay, Hkv, Tk, D, vw.s4, vw.s5, b, hk, j0, jhi);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int c = 0; c < NN_ATTN_FBC; c++) {
            float bias;
            if (!live || j0 + c >= jhi || nn_attn_dead(dims, mk, mask, kpm, b, h, i, j0 + c, &bias)) continue;
            float4 a = (float4)(0.0f);
#pragma unroll
            for (int u = 0; u < NN_ATTN_FV; u++) a += qr[u] * Ks[c * NN_ATTN_FV + u];
            float pe = exp(NN_ATTN_HSUM(a) * scale + bias - lse);
            if (pe == 0.0f) continue;
            float z = p > 0.0f ? nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i, j0 + c) : 1.0f;
            a = (float4)(0.0f);
#pragma unroll
            for (int u = 0; u < NN_ATTN_FV; u++) a += dor[u] * Vs[c * NN_ATTN_FV + u];
            float ds = pe * (NN_ATTN_HSUM(a) * z - dl);
#pragma unroll
            for (int u = 0; u < NN_ATTN_FV; u++) dq[u] += ds * Ks[c * NN_ATTN_FV + u];
        }
    }
    if (live) {
        long dqo = NN_ATTN_DQO(b, h, i);
#pragma unroll
        for (int u = 0; u < NN_ATTN_FV; u++) NN_ATTN_ST4(out, dqo, u, dq[u] * scale);
    }
}

/* dk, dv of key row j of key/value head hk: over its query heads h and their queries in
   order (FBC at a time in local memory, with their log-sum-exps and deltas), P z and dS =
   P (dP z - delta), then dv += P z dO_i, dk += dS q_i; k, dk and dv in registers, the
   group's v rows in local memory as columns (item t reads column t: no bank conflicts) */
__kernel __attribute__((reqd_work_group_size(NN_ATTN_FBR, 1, 1))) void attn_flash_dkv(NN__KPARAMS(attn_bwd)) {
    __local float4 Qs[NN_ATTN_FBC * NN_ATTN_FV], Os[NN_ATTN_FBC * NN_ATTN_FV];
    __local float Vt[NN_ATTN_FD * NN_ATTN_FBR], Ls[NN_ATTN_FBC], Dl[NN_ATTN_FBC];
    NN_ATTN_FLASH_HEAD(Tk, Hkv);
    int hk = hh, j = me, grp_h = H / Hkv, t = get_local_id(0), ilo, ihi;
    long ko = NN_ATTN_KO(b, hk, live ? j : 0), vo = NN_ATTN_VO(b, hk, live ? j : 0);
    float4 kr[NN_ATTN_FV], dk[NN_ATTN_FV], dv[NN_ATTN_FV];
#pragma unroll
    for (int u = 0; u < NN_ATTN_FV; u++) {
        kr[u] = NN_ATTN_LD4(k, ko, u);
        dk[u] = dv[u] = (float4)(0.0f);
    }
    for (int d = 0; d < NN_ATTN_FD; d++) Vt[d * NN_ATTN_FBR + t] = NN_ATTN_LD0(v, vo, d); /* the item's own column */
    nn_attn_queries(dims, mk, r0, min(r0 + NN_ATTN_FBR, Tk), &ilo, &ihi);
    for (int h = hk * grp_h; h < (hk + 1) * grp_h; h++)
        for (int i0 = ilo; i0 < ihi; i0 += NN_ATTN_FBC) {
            barrier(CLK_LOCAL_MEM_FENCE);
            nn_attn_fload(Qs, q, lay, H, Tq, D, vw.s0, vw.s1, b, h, i0, ihi);
            nn_attn_fload(Os, dout, lay, H, Tq, D, H * D, 0, b, h, i0, ihi);
            for (int e = t; e < NN_ATTN_FBC; e += NN_ATTN_FBR) {
                long row = ((long)b * H + h) * Tq + (i0 + e < ihi ? i0 + e : 0);
                Ls[e] = NN_ATTN_LSE_IN(o, (long)B * H * Tq * D)[row];
                Dl[e] = delta[row];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int c = 0; c < NN_ATTN_FBC; c++) {
                float bias;
                if (!live || i0 + c >= ihi || nn_attn_dead(dims, mk, mask, kpm, b, h, i0 + c, j, &bias)) continue;
                float4 a = (float4)(0.0f);
#pragma unroll
                for (int u = 0; u < NN_ATTN_FV; u++) a += kr[u] * Qs[c * NN_ATTN_FV + u];
                float pe = exp(NN_ATTN_HSUM(a) * scale + bias - Ls[c]);
                if (pe == 0.0f) continue;
                float z = p > 0.0f ? nn_attn_keep(dims, p, seed_lo, seed_hi, key, step_lo, step_hi, b, h, i0 + c, j) : 1.0f;
                a = (float4)(0.0f);
#pragma unroll
                for (int u = 0; u < NN_ATTN_FV; u++) {
                    float4 vv = (float4)(Vt[(4 * u) * NN_ATTN_FBR + t], Vt[(4 * u + 1) * NN_ATTN_FBR + t],
                                         Vt[(4 * u + 2) * NN_ATTN_FBR + t], Vt[(4 * u + 3) * NN_ATTN_FBR + t]);
                    a += vv * Os[c * NN_ATTN_FV + u];
                }
                float pz = pe * z, ds = pe * (NN_ATTN_HSUM(a) * z - Dl[c]);
#pragma unroll
                for (int u = 0; u < NN_ATTN_FV; u++) {
                    dv[u] += pz * Os[c * NN_ATTN_FV + u];
                    dk[u] += ds * Qs[c * NN_ATTN_FV + u];
                }
            }
        }
    if (live) {
        long dko = NN_ATTN_DKO(b, hk, j), dvo = NN_ATTN_DVO(b, hk, j);
#pragma unroll
        for (int u = 0; u < NN_ATTN_FV; u++) {
            NN_ATTN_ST4(out, dko, u, dk[u] * scale);
            NN_ATTN_ST4(out, dvo, u, dv[u]);
        }
    }
}
#endif
