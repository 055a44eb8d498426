/* Losses: twins of src/cpu/loss.c, same formulas in the same order. The kinds are
   kernels/loss.h's lists (nn__loss_kind, nn__row_kind), the C side's too. No fmax where NaN
   must stay NaN (fmax returns the other operand): comparisons written so that NaN falls
   through. */
#include "kargs.h"
#include "loss_args.h"
#include "activation.h"
#include "loss.h"

inline float nn_sgn(float v) { return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : 0.0f; }

/* max(v, -100) that keeps NaN (not fmax) */
inline float nn_log_floor(float v) { return v < -100.0f ? -100.0f : v; }

/* a: delta / beta / tau / margin / alpha, b: gamma, pw: pos_weight */
inline float nn_loss1(int kind, float x, float t, float a, float b, float pw, int log_target) {
    float d = x - t, ad = fabs(d), m, p, ce, pt, l;
    switch (kind) {
    case NN__L_MSE: return d * d;
    case NN__L_L1: return ad;
    case NN__L_HUBER: return ad < a ? 0.5f * d * d : a * (ad - 0.5f * a);
    case NN__L_SMOOTH_L1: return a == 0.0f ? ad : ad < a ? 0.5f * d * d / a : ad - 0.5f * a;
    case NN__L_LOG_COSH: return ad + log1p(exp(-2.0f * ad)) - 0.69314718055994531f;
    case NN__L_QUANTILE: return -d > 0.0f ? a * -d : (a - 1.0f) * -d;
    case NN__L_HINGE: m = a - t * x; return m <= 0.0f ? 0.0f : m;
    case NN__L_SQ_HINGE: m = a - t * x; return m <= 0.0f ? 0.0f : m * m;
    case NN__L_BCE: return -(t * nn_log_floor(log(x)) + (1.0f - t) * nn_log_floor(log(1.0f - x)));
    case NN__L_BCE_LOGITS: return (1.0f - t) * x + (1.0f + (pw - 1.0f) * t) * (log1p(exp(-fabs(x))) + fmax(-x, 0.0f));
    case NN__L_FOCAL:
        p = 1.0f / (1.0f + exp(-x));
        ce = (1.0f - t) * x + fmax(-x, 0.0f) + log1p(exp(-fabs(x)));
        pt = p * t + (1.0f - p) * (1.0f - t);
        l = ce * pow(1.0f - pt, b);
        return a >= 0.0f ? l * (a * t + (1.0f - a) * (1.0f - t)) : l;
    case NN__L_KL:
        if (log_target) return exp(t) * (t - x);
        return (t == 0.0f ? 0.0f : t * log(t)) - t * x;
    default: return 0.0f;
    }
}

inline float nn_loss1_dx(int kind, float x, float t, float a, float b, float pw, int log_target) {
    float d = x - t, ad = fabs(d), m, p, ce, pt, q, at;
    switch (kind) {
    case NN__L_MSE: return 2.0f * d;
    case NN__L_L1: return nn_sgn(d);
    case NN__L_HUBER: return ad < a ? d : ad >= a ? a * nn_sgn(d) : d;
    case NN__L_SMOOTH_L1: return ad < a ? d / a : ad >= a ? nn_sgn(d) : d;
    case NN__L_LOG_COSH: return tanh(d);
    case NN__L_QUANTILE: return d < 0.0f ? -a : d >= 0.0f ? 1.0f - a : d;
    case NN__L_HINGE: m = a - t * x; return m > 0.0f ? -t : m <= 0.0f ? 0.0f : m;
    case NN__L_SQ_HINGE: m = a - t * x; return m > 0.0f ? -2.0f * t * m : m <= 0.0f ? 0.0f : m;
    case NN__L_BCE: return (x - t) / fmax((1.0f - x) * x, 1e-12f);
    case NN__L_BCE_LOGITS: return (1.0f - t) - (1.0f + (pw - 1.0f) * t) / (1.0f + exp(x));
    case NN__L_FOCAL:
        p = 1.0f / (1.0f + exp(-x));
        ce = (1.0f - t) * x + fmax(-x, 0.0f) + log1p(exp(-fabs(x)));
        pt = p * t + (1.0f - p) * (1.0f - t);
        q = 1.0f - pt;
        at = a >= 0.0f ? a * t + (1.0f - a) * (1.0f - t) : 1.0f;
        return at * ((q > 0.0f ? -b * pow(q, b - 1.0f) * (2.0f * t - 1.0f) * p * (1.0f - p) * ce : 0.0f) +
                     pow(q, b) * (p - t));
    case NN__L_KL:
        if (log_target) return -exp(t);
        return -t;
    default: return 0.0f;
    }
}

/* y [n] = loss(x, t); pw repeats with period npw */
__kernel void loss_ew_forward(NN__KPARAMS(loss_ew_forward)) {
    int i = get_global_id(0);
    if (i < n) y[i] = nn_loss1(kind, x[i], t[i], a, b, pw[i % npw], log_target);
}

__kernel void loss_ew_backward(NN__KPARAMS(loss_ew_backward)) {
    int i = get_global_id(0);
    if (i < n) dx[i] = dy[i] * nn_loss1_dx(kind, x[i], t[i], a, b, pw[i % npw], log_target);
}

inline int nn_ce_ignored(int t, int C, int ignore) { return t == ignore || t < 0 || t >= C; }

/* One work-item per row: (1 - eps) * w[t] * -logp[t] + eps / C * sum_c w[c] * -logp[c].
   A label outside [0, C) that is not ignore_index counts in bad[slot] (reported to the
   host at its next read) and gives 0. */
__kernel void ce_rows_forward(NN__KPARAMS(ce_rows_forward)) {
    int b = get_global_id(0);
    if (b >= B) return;
    __global const float *xr = x + (size_t)b * C;
    int t = label[b];
    if (t != ignore && (t < 0 || t >= C)) atomic_inc(bad + slot);
    if (nn_ce_ignored(t, C, ignore)) { loss[b] = 0.0f; return; }
    float m = xr[0], s = 0.0f, lse = 0.0f, sm = 0.0f;
    if (!log_input) {
        for (int c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        for (int c = 0; c < C; c++) s += exp(xr[c] - m);
        lse = log(s) + m;
    }
    for (int c = 0; c < C && eps != 0.0f; c++) sm += (has_w ? w[c] : 1.0f) * (lse - xr[c]);
    loss[b] = (1.0f - eps) * (has_w ? w[t] : 1.0f) * (lse - xr[t]) + eps / (float)C * sm;
}

__kernel void ce_rows_backward(NN__KPARAMS(ce_rows_backward)) {
    int b = get_global_id(0);
    if (b >= B) return;
    __global const float *xr = x + (size_t)b * C;
    __global float *dxr = dx + (size_t)b * C;
    int t = label[b];
    if (nn_ce_ignored(t, C, ignore)) { for (int c = 0; c < C; c++) dxr[c] = 0.0f; return; }
    float m = xr[0], s = 0.0f, Q = 0.0f, g = dloss[b];
    for (int c = 0; c < C; c++)
        Q += (1.0f - eps) * (c == t ? (has_w ? w[t] : 1.0f) : 0.0f) + eps / (float)C * (has_w ? w[c] : 1.0f);
    if (!log_input) {
        for (int c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        for (int c = 0; c < C; c++) s += exp(xr[c] - m);
    }
    for (int c = 0; c < C; c++) {
        float q = (1.0f - eps) * (c == t ? (has_w ? w[t] : 1.0f) : 0.0f) + eps / (float)C * (has_w ? w[c] : 1.0f);
        dxr[c] = log_input ? -g * q : g * (exp(xr[c] - m) / s * Q - q);
    }
}

__kernel void ce_weights(NN__KPARAMS(ce_weights)) {
    int b = get_global_id(0);
    if (b < B) y[b] = nn_ce_ignored(label[b], C, ignore) ? 0.0f : has_w ? w[label[b]] : 1.0f;
}

__kernel void div_scalar(NN__KPARAMS(div_scalar)) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[i] / d[0];
}

/* Row losses of [B, D] inputs, one work-item per row; x2: cosine's target [B], triplet's
   negative. */
__kernel void rows_forward(NN__KPARAMS(rows_forward)) {
    int b = get_global_id(0);
    if (b >= B) return;
    __global const float *u = x0 + (size_t)b * D, *v = x1 + (size_t)b * D;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, r = 0.0f;
    if (kind == NN__R_DICE) {
        for (int j = 0; j < D; j++) {
            s0 += u[j] * v[j];
            s1 += u[j] + v[j];
        }
        r = 1.0f - (2.0f * s0 + a) / (s1 + a);
    } else if (kind == NN__R_COSINE) {
        float yb = x2[b], c;
        for (int j = 0; j < D; j++) {
            s0 += u[j] * v[j];
            s1 += u[j] * u[j];
            s2 += v[j] * v[j];
        }
        c = s0 / sqrt((s1 + 1e-12f) * (s2 + 1e-12f));
        r = yb == 1.0f ? 1.0f - c : yb == -1.0f ? (c - a <= 0.0f ? 0.0f : c - a) : 0.0f;
    } else if (kind == NN__R_TRIPLET) {
        __global const float *n = x2 + (size_t)b * D;
        for (int j = 0; j < D; j++) {
            float dp = u[j] - v[j] + 1e-6f, dn = u[j] - n[j] + 1e-6f;
            s0 += dp * dp;
            s1 += dn * dn;
        }
        r = sqrt(s0) - sqrt(s1) + a;
        r = r <= 0.0f ? 0.0f : r;
    }
    y[b] = r;
}

/* d(row loss)/d(input `which`) times dy[b] */
__kernel void rows_backward(NN__KPARAMS(rows_backward)) {
    int b = get_global_id(0);
    if (b >= B) return;
    __global const float *u = x0 + (size_t)b * D, *v = x1 + (size_t)b * D;
    __global float *o = dx + (size_t)b * D;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, g = dy[b];
    if (kind == NN__R_DICE) {
        for (int j = 0; j < D; j++) {
            s0 += u[j] * v[j];
            s1 += u[j] + v[j];
        }
        float N = 2.0f * s0 + a, S = s1 + a;
        for (int j = 0; j < D; j++) o[j] = g * (N - 2.0f * v[j] * S) / (S * S);
    } else if (kind == NN__R_COSINE) {
        float yb = x2[b];
        __global const float *self = which == 0 ? u : v, *other = which == 0 ? v : u;
        for (int j = 0; j < D; j++) {
            s0 += u[j] * v[j];
            s1 += u[j] * u[j];
            s2 += v[j] * v[j];
        }
        float m1 = s1 + 1e-12f, m2 = s2 + 1e-12f, den = sqrt(m1 * m2), c = s0 / den;
        float k = yb == 1.0f ? -g : (yb == -1.0f && c - a > 0.0f) ? g : 0.0f;
        for (int j = 0; j < D; j++) o[j] = k * (other[j] / den - c * self[j] / (which == 0 ? m1 : m2));
    } else if (kind == NN__R_TRIPLET) {
        __global const float *n = x2 + (size_t)b * D;
        for (int j = 0; j < D; j++) {
            float dp = u[j] - v[j] + 1e-6f, dn = u[j] - n[j] + 1e-6f;
            s0 += dp * dp;
            s1 += dn * dn;
        }
        float dap = sqrt(s0), dan = sqrt(s1), l = dap - dan + a > 0.0f ? g : 0.0f;
        for (int j = 0; j < D; j++) {
            float gp = l * ((u[j] - v[j] + 1e-6f) / dap);
            float gn = l * ((u[j] - n[j] + 1e-6f) / dan);
            o[j] = which == 0 ? gp - gn : which == 1 ? -gp : gn;
        }
    } else {
        for (int j = 0; j < D; j++) o[j] = 0.0f;
    }
}

/* The fused softmax cross-entropy (nn_softmax_cross_entropy): one work-item per row. */

/* loss[b] = logsumexp(x[b]) - x[b, label[b]]; a label outside [0, C) gives 0 and counts in
   bad[slot] (reported to the host at its next read) */
__kernel void xent_forward(NN__KPARAMS(xent_forward)) {
    int b = get_global_id(0);
    if (b >= B) return;
    __global const float *xr = x + (size_t)b * C;
    int t = label[b];
    if (t < 0 || t >= C) { atomic_inc(bad + slot); loss[b] = 0.0f; return; }
    loss[b] = nn_xent_row(xr, t, C);
}

__kernel void xent_backward(NN__KPARAMS(xent_backward)) {
    int b = get_global_id(0);
    if (b >= B) return;
    __global const float *xr = x + (size_t)b * C;
    __global float *dxr = dx + (size_t)b * C;
    nn_xent_grad_row(xr, dxr, nn_label_at(label, lidx, ln, b), C, dstride ? dloss[b] : dloss[0] * dscale);
}

/* The same, one work-group per row (GPU devices, rows of 128 classes and more: src/ops/softmax.c's
   nn__row_group_wg): each work-item takes c = lid, lid + wg, ...; the max and the sum go
   through a tree in local memory (tmp: the work-group size, a power of two), a fixed order.
   The label is the row's, so the early returns are uniform over the work-group. */

/* the work-group's max (is_max; NaN ignored, as fmax) or sum of v, in every work-item */
inline float loss_row_tree(__local float *tmp, float v, int is_max) {
    int l = get_local_id(0);
    tmp[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = get_local_size(0) / 2; o > 0; o >>= 1) {
        if (l < o) tmp[l] = is_max ? fmax(tmp[l], tmp[l + o]) : tmp[l] + tmp[l + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    v = tmp[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return v;
}

/* the row's max and sum of exp(x - max), in every work-item */
inline void loss_row_stats(__local float *tmp, __global const float *xr, int C, float *m, float *s) {
    int l = get_local_id(0), wg = get_local_size(0);
    float a = -INFINITY, b = 0.0f;
    for (int c = l; c < C; c += wg) a = fmax(a, xr[c]);
    a = loss_row_tree(tmp, a, 1);
    for (int c = l; c < C; c += wg) b += exp(xr[c] - a);
    *m = a;
    *s = loss_row_tree(tmp, b, 0);
}

__kernel void xent_group_forward(NN__KPARAMS(xent_group_forward)) {
    int b = get_group_id(0), l = get_local_id(0);
    if (b >= B) return;
    __global const float *xr = x + (size_t)b * C;
    int t = label[b];
    if (t < 0 || t >= C) {
        if (l == 0) {
            atomic_inc(bad + slot);
            loss[b] = 0.0f;
        }
        return;
    }
    float m, s;
    loss_row_stats(tmp, xr, C, &m, &s);
    if (l == 0) loss[b] = log(s) + m - xr[t];
}

__kernel void xent_group_backward(NN__KPARAMS(xent_group_backward)) {
    int b = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    if (b >= B) return;
    __global const float *xr = x + (size_t)b * C;
    __global float *dxr = dx + (size_t)b * C;
    int t = label[b];
    if (t < 0 || t >= C) {
        for (int c = l; c < C; c += wg) dxr[c] = 0.0f;
        return;
    }
    float m, s, g = dstride ? dloss[b] : dloss[0] * dscale;
    loss_row_stats(tmp, xr, C, &m, &s);
    for (int c = l; c < C; c += wg) dxr[c] = g * (exp(xr[c] - m) / s - (c == t ? 1.0f : 0.0f));
}

/* nn_cross_entropy_loss / nn_nll_loss's rows, one work-group per row (GPU devices, rows
   of 128 classes and more), as ce_rows_forward and ce_rows_backward: every sum over the
   classes goes through loss_row_tree; the label is the row's, so the early returns are
   uniform over the work-group. */
__kernel void ce_group_forward(NN__KPARAMS(ce_group_forward)) {
    int b = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    if (b >= B) return;
    __global const float *xr = x + (size_t)b * C;
    int t = label[b];
    if (l == 0 && t != ignore && (t < 0 || t >= C)) atomic_inc(bad + slot);
    if (nn_ce_ignored(t, C, ignore)) {
        if (l == 0) loss[b] = 0.0f;
        return;
    }
    /* every tree runs, over 0 classes where an option turns it off: no barrier in a branch
       (HACKING.md, nn_sample_logits: PoCL) */
    float m, s, lse, sm = 0.0f;
    loss_row_stats(tmp, xr, log_input ? 0 : C, &m, &s);
    lse = log_input ? 0.0f : log(s) + m;
    for (int c = l; c < (eps != 0.0f ? C : 0); c += wg) sm += (has_w ? w[c] : 1.0f) * (lse - xr[c]);
    sm = loss_row_tree(tmp, sm, 0);
    if (l == 0) loss[b] = (1.0f - eps) * (has_w ? w[t] : 1.0f) * (lse - xr[t]) + eps / (float)C * sm;
}

__kernel void ce_group_backward(NN__KPARAMS(ce_group_backward)) {
    int b = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    if (b >= B) return;
    __global const float *xr = x + (size_t)b * C;
    __global float *dxr = dx + (size_t)b * C;
    int t = label[b];
    if (nn_ce_ignored(t, C, ignore)) {
        for (int c = l; c < C; c += wg) dxr[c] = 0.0f;
        return;
    }
    float m, s, Q = 0.0f, g = dloss[b];
    for (int c = l; c < C; c += wg)
        Q += (1.0f - eps) * (c == t ? (has_w ? w[t] : 1.0f) : 0.0f) + eps / (float)C * (has_w ? w[c] : 1.0f);
    Q = loss_row_tree(tmp, Q, 0);
    loss_row_stats(tmp, xr, log_input ? 0 : C, &m, &s); /* over 0 classes for NLL: no barrier in a branch */
    for (int c = l; c < C; c += wg) {
        float q = (1.0f - eps) * (c == t ? (has_w ? w[t] : 1.0f) : 0.0f) + eps / (float)C * (has_w ? w[c] : 1.0f);
        dxr[c] = log_input ? -g * q : g * (exp(xr[c] - m) / s * Q - q);
    }
}

/* BCE with logits, elementwise, in PyTorch's form: (1 - t) x + max(-x, 0) + log(1 + exp(-|x|)) */
__kernel void bce_logits_forward(NN__KPARAMS(bce_logits_forward)) {
    int i = get_global_id(0);
    if (i < n) { float v = x[i]; y[i] = (1.0f - t[i]) * v + (v < 0.0f ? -v : 0.0f) + log1p(exp(-fabs(v))); }
}

__kernel void bce_logits_backward(NN__KPARAMS(bce_logits_backward)) {
    int i = get_global_id(0);
    if (i < n) dx[i] = dy[i] * (nn__act_sigmoid(x[i]) - t[i]);
}
