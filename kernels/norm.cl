#include "kargs.h"
#include "storage.h"
#include "norm_args.h"

/* Normalisation (batch, layer, group, instance norm), the twins of src/cpu/norm.c: x is
   viewed as [A, C, S]; statistics are per channel over A and S when pc (batch norm), else
   per (a, group of C/G channels). stats [2, R] holds the means, then the biased variances.
   Reductions: one work-group per statistics group (or channel), a strided pass then a tree
   in local memory of the work-group's size (a power of two), so the order is fixed.
   x, y, dy and dx are read and written through kernels/storage.h (NN__SLOAD, NN__SSTORE, and
   NORM_LD16 / NORM_ST16 for sixteen in a row): built with -DNN_STORE_BF16 / -DNN_STORE_F16
   these are the 16-bit norms (float32 sums and statistics, one rounding per output), built
   with neither the float32 ones, the same code as plain accesses. */

#if defined(NN_STORE_BF16)
#define NORM_LD16(p, i) as_float16(convert_uint16(vload16(0, (p) + (i))) << 16)
inline void norm_st16_bf16(float16 v, __global ushort *p) {
    float a[16];
    vstore16(v, 0, a);
    for (int k = 0; k < 16; k++) p[k] = nn__f32_to_bf16(a[k]);
}
#define NORM_ST16(v, p, i) norm_st16_bf16((v), (p) + (i))
#elif defined(NN_STORE_F16)
#define NORM_LD16(p, i) vload_half16(0, (__global const half *)((p) + (i)))
#define NORM_ST16(v, p, i) vstore_half16_rte((v), 0, (__global half *)((p) + (i)))
#else
#define NORM_LD16(p, i) vload16(0, (p) + (i))
#define NORM_ST16(v, p, i) vstore16((v), 0, (p) + (i))
#endif

/* The sum over the work-group; every work-item gets it, and tmp is free again on return. */
inline float norm_tree(__local float *tmp, float s) {
    int l = get_local_id(0);
    tmp[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = get_local_size(0) / 2; o > 0; o >>= 1) {
        if (l < o) tmp[l] += tmp[l + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    s = tmp[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return s;
}

inline int norm_groups(int A, int C, int G, int pc) { return pc ? C : A * G; }
inline int norm_count(int A, int C, int S, int G, int pc) { return pc ? A * S : C / G * S; }

/* Element k of statistics group r: its index in x, and its channel in *ch. */
inline int norm_index(int r, int k, int C, int S, int G, int pc, int *ch) {
    if (pc) {
        *ch = r;
        return (k / S) * C * S + r * S + k % S;
    }
    int Cg = C / G;
    *ch = (r % G) * Cg + k / S;
    return r * Cg * S + k;
}

/* One work-group per group r: its mean and biased variance (two passes); with rms, mean 0
   and the mean square (RMS norm's weight gradient reads them). */
__kernel void norm_stats(NN__KPARAMS(norm_stats)) {
    int r = get_group_id(0), l = get_local_id(0), wg = get_local_size(0), ch;
    int R = norm_groups(A, C, G, pc), n = norm_count(A, C, S, G, pc);
    float s = 0.0f, mean = 0.0f;
    if (!rms) { /* uniform over the work-group, so the barriers inside are too */
        for (int k = l; k < n; k += wg) s += NN__SLOAD(x, norm_index(r, k, C, S, G, pc, &ch));
        mean = norm_tree(tmp, s) / n;
    }
    s = 0.0f;
    for (int k = l; k < n; k += wg) {
        float d = NN__SLOAD(x, norm_index(r, k, C, S, G, pc, &ch)) - mean;
        s += d * d;
    }
    float var = norm_tree(tmp, s) / n;
    if (l == 0) {
        stats[r] = mean;
        stats[R + r] = var;
    }
}

/* y = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c], one work-item per element */
__kernel void norm_forward(NN__KPARAMS(norm_forward)) {
    int i = get_global_id(0);
    if (i >= A * C * S) return;
    int c = (i / S) % C, a = i / (C * S);
    int R = norm_groups(A, C, G, pc), r = pc ? c : a * G + c / (C / G);
    float scale = (has_gamma ? gamma[c] : 1.0f) / sqrt(stats[R + r] + eps);
    NN__SSTORE(y, i, (NN__SLOAD(x, i) - stats[r]) * scale + (has_beta ? beta[c] : 0.0f));
}

/* dx, one work-group per group r: rstd * (d - mean(d) - xhat * mean(d * xhat)) with
   d = dy * gamma[c]; rstd * d alone when the statistics are constants (eval batch norm). */
__kernel void norm_backward_data(NN__KPARAMS(norm_backward_data)) {
    int r = get_group_id(0), l = get_local_id(0), wg = get_local_size(0), ch;
    int R = norm_groups(A, C, G, pc), n = norm_count(A, C, S, G, pc);
    float mean = stats[r], rs = 1.0f / sqrt(stats[R + r] + eps), m1 = 0.0f, m2 = 0.0f;
    if (!const_stats) { /* uniform over the work-group, so the barriers inside are too */
        float s1 = 0.0f, s2 = 0.0f;
        for (int k = l; k < n; k += wg) {
            int i = norm_index(r, k, C, S, G, pc, &ch);
            float d = NN__SLOAD(dy, i) * (has_gamma ? gamma[ch] : 1.0f);
            s1 += d;
            s2 += d * (NN__SLOAD(x, i) - mean) * rs;
        }
        m1 = norm_tree(tmp, s1) / n;
        m2 = norm_tree(tmp, s2) / n;
    }
    for (int k = l; k < n; k += wg) {
        int i = norm_index(r, k, C, S, G, pc, &ch);
        float d = NN__SLOAD(dy, i) * (has_gamma ? gamma[ch] : 1.0f);
        NN__SSTORE(dx, i, rs * (d - m1 - (NN__SLOAD(x, i) - mean) * rs * m2));
    }
}

/* out [C], one work-group per channel c: the sum over A and S of dy * xhat (with_xhat: the
   weight's gradient) or of dy (the bias's) */
__kernel void norm_backward_affine(NN__KPARAMS(norm_backward_affine)) {
    int c = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    int R = norm_groups(A, C, G, pc);
    float s = 0.0f;
    for (int k = l; k < A * S; k += wg) {
        int a = k / S, i = (a * C + c) * S + k % S;
        if (with_xhat) {
            int r = pc ? c : a * G + c / (C / G);
            s += NN__SLOAD(dy, i) * ((NN__SLOAD(x, i) - stats[r]) / sqrt(stats[R + r] + eps));
        } else {
            s += NN__SLOAD(dy, i);
        }
    }
    s = norm_tree(tmp, s);
    if (l == 0) out[c] = s;
}

/* PyTorch's running statistics, one work-item per channel: running = (1 - m) * running +
   m * batch, the variance unbiased by unbias = n / (n - 1). */
__kernel void batch_norm_running(NN__KPARAMS(batch_norm_running)) {
    int c = get_global_id(0);
    if (c >= C) return;
    rmean[c] = (1.0f - m) * rmean[c] + m * stats[c];
    rvar[c] = (1.0f - m) * rvar[c] + m * stats[C + c] * unbias;
}

/* stats [2, C] from the running mean and variance, for evaluation graphs */
__kernel void batch_norm_pack(NN__KPARAMS(batch_norm_pack)) {
    int c = get_global_id(0);
    if (c >= C) return;
    stats[c] = rmean[c];
    stats[C + c] = rvar[c];
}

/* RMS norm (F.rms_norm) of x [A, C], one work-group per row: y = x * rstd * w[c], rstd =
   1 / sqrt(mean(x^2) + eps). */
__kernel void rms_norm_forward(NN__KPARAMS(rms_norm_forward)) {
    int r = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    __global const float *xr = x + (long)r * C;
    float s = 0.0f;
    for (int c = l; c < C; c += wg) s += xr[c] * xr[c];
    float rs = 1.0f / sqrt(norm_tree(tmp, s) / C + eps);
    for (int c = l; c < C; c += wg) y[(long)r * C + c] = has_w ? xr[c] * rs * w[c] : xr[c] * rs;
}

/* dx of RMS norm, one work-group per row (d = dy * w, xhat = x * rstd):
   rstd * (d - xhat * mean(d * xhat)) */
__kernel void rms_norm_backward_data(NN__KPARAMS(rms_norm_backward_data)) {
    int r = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    __global const float *xr = x + (long)r * C, *dr = dy + (long)r * C;
    float s = 0.0f, s2 = 0.0f;
    for (int c = l; c < C; c += wg) {
        s += xr[c] * xr[c];
        s2 += (has_w ? dr[c] * w[c] : dr[c]) * xr[c];
    }
    float rs = 1.0f / sqrt(norm_tree(tmp, s) / C + eps);
    float m2 = norm_tree(tmp, s2) * rs / C;
    for (int c = l; c < C; c += wg) {
        float d = has_w ? dr[c] * w[c] : dr[c];
        dx[(long)r * C + c] = rs * (d - xr[c] * rs * m2);
    }
}

/* Devices tuned as CPUs, for channels of S >= NN__NORM_RUN_MIN floats (batch, group and
   instance norm over images; src/ops/norm.c chooses): the same four operations with one
   work-item per statistics group (norm_runs_stats, norm_runs_dx), per channel
   (norm_runs_affine) or per row (a, c) of S floats (norm_runs_forward), in work-groups of
   one item for the first three. A group's elements are runs of S contiguous floats, one
   channel each (batch norm: channel r of each a; group norm: the group's channels of one
   a), read in float16s: the driver compiles them to whole vector registers, where the
   one-item-per-element and strided forms above divided twice an element and ran scalar.
   Sums go to 16 lanes across the runs (the tail of each run to a 17th), added in a fixed
   tree: the order is fixed. */
inline int norm_runs(int A, int C, int G, int pc) { return pc ? A : C / G; }
inline int norm_run_at(int r, int j, int C, int S, int G, int pc) { return pc ? (j * C + r) * S : (r * (C / G) + j) * S; }
inline int norm_run_ch(int r, int j, int C, int G, int pc) { return pc ? r : (r % G) * (C / G) + j; }
inline float norm_lanes(float16 v, float t) {
    float8 a = v.lo + v.hi;
    float4 b = a.lo + a.hi;
    float2 c = b.lo + b.hi;
    return (c.x + c.y) + t;
}

__kernel void norm_runs_stats(NN__KPARAMS(norm_stats)) {
    int r = get_global_id(0), R = norm_groups(A, C, G, pc), nr = norm_runs(A, C, G, pc);
    if (r >= R) return;
    float n = (float)nr * (float)S, mean = 0.0f, t = 0.0f;
    float16 v = (float16)(0.0f);
    if (!rms) {
        for (int j = 0; j < nr; j++) {
            __global const NN__STORE_T *p = x + norm_run_at(r, j, C, S, G, pc);
            int s = 0;
            for (; s + 16 <= S; s += 16) v += NORM_LD16(p, s);
            for (; s < S; s++) t += NN__SLOAD(p, s);
        }
        mean = norm_lanes(v, t) / n;
    }
    v = (float16)(0.0f);
    t = 0.0f;
    for (int j = 0; j < nr; j++) {
        __global const NN__STORE_T *p = x + norm_run_at(r, j, C, S, G, pc);
        int s = 0;
        for (; s + 16 <= S; s += 16) {
            float16 d = NORM_LD16(p, s) - mean;
            v += d * d;
        }
        for (; s < S; s++) t += (NN__SLOAD(p, s) - mean) * (NN__SLOAD(p, s) - mean);
    }
    stats[r] = mean;
    stats[R + r] = norm_lanes(v, t) / n;
}

__kernel void norm_runs_forward(NN__KPARAMS(norm_forward)) {
    int q = get_global_id(0);
    if (q >= A * C) return;
    int c = q % C, a = q / C, R = norm_groups(A, C, G, pc), r = pc ? c : a * G + c / (C / G);
    float mean = stats[r], scale = (has_gamma ? gamma[c] : 1.0f) / sqrt(stats[R + r] + eps);
    float shift = has_beta ? beta[c] : 0.0f;
    __global const NN__STORE_T *p = x + (size_t)q * S;
    __global NN__STORE_T *o = y + (size_t)q * S;
    int s = 0;
    for (; s + 16 <= S; s += 16) NORM_ST16((NORM_LD16(p, s) - mean) * scale + shift, o, s);
    for (; s < S; s++) NN__SSTORE(o, s, (NN__SLOAD(p, s) - mean) * scale + shift);
}

__kernel void norm_runs_dx(NN__KPARAMS(norm_backward_data)) {
    int r = get_global_id(0), R = norm_groups(A, C, G, pc), nr = norm_runs(A, C, G, pc);
    if (r >= R) return;
    float n = (float)nr * (float)S, mean = stats[r], rs = 1.0f / sqrt(stats[R + r] + eps), m1 = 0.0f, m2 = 0.0f;
    if (!const_stats) {
        float16 v1 = (float16)(0.0f), v2 = (float16)(0.0f);
        float t1 = 0.0f, t2 = 0.0f;
        for (int j = 0; j < nr; j++) {
            int at = norm_run_at(r, j, C, S, G, pc);
            float ga = has_gamma ? gamma[norm_run_ch(r, j, C, G, pc)] : 1.0f;
            int s = 0;
            for (; s + 16 <= S; s += 16) {
                float16 d = NORM_LD16(dy, at + s) * ga;
                v1 += d;
                v2 += d * (NORM_LD16(x, at + s) - mean) * rs;
            }
            for (; s < S; s++) {
                float d = NN__SLOAD(dy, at + s) * ga;
                t1 += d;
                t2 += d * (NN__SLOAD(x, at + s) - mean) * rs;
            }
        }
        m1 = norm_lanes(v1, t1) / n;
        m2 = norm_lanes(v2, t2) / n;
    }
    for (int j = 0; j < nr; j++) {
        int at = norm_run_at(r, j, C, S, G, pc);
        float ga = has_gamma ? gamma[norm_run_ch(r, j, C, G, pc)] : 1.0f;
        int s = 0;
        for (; s + 16 <= S; s += 16) {
            float16 d = NORM_LD16(dy, at + s) * ga;
            NORM_ST16(rs * (d - m1 - (NORM_LD16(x, at + s) - mean) * rs * m2), dx, at + s);
        }
        for (; s < S; s++) {
            float d = NN__SLOAD(dy, at + s) * ga;
            NN__SSTORE(dx, at + s, rs * (d - m1 - (NN__SLOAD(x, at + s) - mean) * rs * m2));
        }
    }
}

__kernel void norm_runs_affine(NN__KPARAMS(norm_backward_affine)) {
    int c = get_global_id(0), R = norm_groups(A, C, G, pc);
    if (c >= C) return;
    float16 v = (float16)(0.0f);
    float t = 0.0f;
    for (int a = 0; a < A; a++) {
        int at = (a * C + c) * S, s = 0;
        if (with_xhat) {
            int r = pc ? c : a * G + c / (C / G);
            float mean = stats[r], rs = sqrt(stats[R + r] + eps);
            for (; s + 16 <= S; s += 16) v += NORM_LD16(dy, at + s) * ((NORM_LD16(x, at + s) - mean) / rs);
            for (; s < S; s++) t += NN__SLOAD(dy, at + s) * ((NN__SLOAD(x, at + s) - mean) / rs);
        } else {
            for (; s + 16 <= S; s += 16) v += NORM_LD16(dy, at + s);
            for (; s < S; s++) t += NN__SLOAD(dy, at + s);
        }
    }
    out[c] = norm_lanes(v, t);
}
