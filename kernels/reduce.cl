#include "kargs.h"
#include "reduce_args.h"
#include "loss.h"

/* Reductions to a scalar: one work-group, a strided pass then a tree, so the order of the
   additions is fixed and the result is the same run to run. The work-group size (a power
   of two) is the size of `tmp`. */

inline float nn_tree(__local float *tmp, float s) {
    int l = get_local_id(0);
    tmp[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = get_local_size(0) / 2; o > 0; o >>= 1) {
        if (l < o) tmp[l] += tmp[l + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return tmp[0];
}

/* y[0] = scale * sum(x); has_acc: acc[0] += y[0] (accumulate's addition) */
inline void sum_store(__global float *y, __global float *acc, int has_acc, float s, float scale) {
    const float v = s * scale;
    y[0] = v;
    if (has_acc) acc[0] += v;
}

__kernel void sum_all(NN__KPARAMS(sum_all)) {
    float s = 0.0f;
    for (int i = get_local_id(0); i < n; i += get_local_size(0)) s += x[i];
    s = nn_tree(tmp, s);
    if (get_local_id(0) == 0) sum_store(y, acc, has_acc, s, scale);
}

/* sum_all over the values of rows b = 0..B-1 made here, in sum_all's order (work-item l adds
   rows l, l + wg, ..., then the tree), each row's value the float its own kernel stores:
   loss.cl's xent_forward (0 and a count in bad[slot] for a label outside [0, C)), and
   correct_rows (below). The same bits as the op's kernel then sum_all. */
/* a work-item's terms of xent_sum, before the tree (xent_tail's too) */
inline float xent_rows_part(__global const float *x, __global const int *label, __global const int *lidx, int ln,
                            __global int *bad, int slot, int B, int C) {
    float s = 0.0f;
    for (int b = get_local_id(0); b < B; b += get_local_size(0)) {
        const int t = nn_label_at(label, lidx, ln, b);
        float v = 0.0f;
        if (t < 0 || t >= C) atomic_inc(bad + slot);
        else v = nn_xent_row(x + (size_t)b * C, t, C);
        s += v;
    }
    return s;
}
__kernel void xent_sum(NN__KPARAMS(rows_sum)) {
    float s = nn_tree(tmp, xent_rows_part(x, label, lidx, ln, bad, slot, B, C));
    if (get_local_id(0) == 0) sum_store(y, acc, has_acc, s, scale);
}


/* y[0] = (has_prev ? prev[0] : 0) + sum(g^2): a chain over all gradients for clipping */
__kernel void grad_sumsq(NN__KPARAMS(grad_sumsq)) {
    float s = 0.0f;
    for (int i = get_local_id(0); i < n; i += get_local_size(0)) s += g[i] * g[i];
    s = nn_tree(tmp, s);
    if (get_local_id(0) == 0) y[0] = (has_prev ? prev[0] : 0.0f) + s;
}

/* Sums over many work-groups (GPU devices, src/ops/reduce/all.c's nn__sum_plan), in two
   passes with a fixed order: group grp sums the terms of x[grp * chunk, min(n, (grp + 1) *
   chunk)) (term 0: x, 1: x^2), each work-item every wg-th element, then a tree, into
   part[grp]; sum_finish sums the parts in one work-group the same way, then adds prev and
   scales. The partition comes from n alone, so the bits depend on n and the work-group
   size, never on how many groups the device runs at once. */
inline float sum_term(float v, int term) { return term == 1 ? v * v : v; }

__kernel void sum_parts(NN__KPARAMS(sum_parts)) {
    int grp = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    int lo = grp * chunk, hi = n - lo < chunk ? n : lo + chunk;
    float s = 0.0f;
    for (int i = lo + l; i < hi; i += wg) s += sum_term(x[i], term);
    s = nn_tree(tmp, s);
    if (l == 0) part[grp] = s;
}

/* y[0] = ((has_prev ? prev[0] : 0) + the sum of part[0, parts)) * scale */
__kernel void sum_finish(NN__KPARAMS(sum_finish)) {
    int l = get_local_id(0), wg = get_local_size(0);
    float s = 0.0f;
    for (int i = l; i < parts; i += wg) s += part[i];
    s = nn_tree(tmp, s);
    if (l == 0) y[0] = ((has_prev ? prev[0] : 0.0f) + s) * scale;
}

/* PyTorch's clip_grad_norm_: coefficient min(1, max_norm / (norm + 1e-6)) */
__kernel void clip_scale(NN__KPARAMS(clip_scale)) {
    /* not fmin: a NaN norm must give NaN (torch's clamp keeps it), not 1 */
    float c = max_norm / (sqrt(sumsq[0]) + 1e-6f);
    if (get_global_id(0) == 0) y[0] = c > 1.0f ? 1.0f : c;
}

/* ---- reductions along dims: x viewed as [O, R, I], reduced over R (src/ops/reduce.c) ----
   The kinds (src/ops/reduce.c's NN__RK_*, the same values). Each kind takes one or two
   passes over a row; a pass maps each element to a term and combines the terms in a mode:
   add, multiply, max, min (a NaN wins and stays), or max/min with the first index (a NaN
   counts as the max, the first of ties wins). Two-pass kinds (var, std: the mean, then the
   squared deviations; logsumexp: the max, then the exponentials) centre the second pass
   on the first's result. */
#define RK_SUM 0
#define RK_PROD 1
#define RK_AMAX 2
#define RK_AMIN 3
#define RK_MAX 4
#define RK_MIN 5
#define RK_VAR 6
#define RK_STD 7
#define RK_LSE 8
#define RK_NORM 9
#define RK_ARGMAX 10
#define RK_ARGMIN 11

#define RM_ADD 0
#define RM_MUL 1
#define RM_MAX 2
#define RM_MIN 3
#define RM_ARGMAX 4
#define RM_ARGMIN 5

inline int red_passes(int kind) { return kind == RK_VAR || kind == RK_STD || kind == RK_LSE ? 2 : 1; }

inline int red_mode(int kind, int pass, float p) {
    switch (kind) {
    case RK_PROD: return RM_MUL;
    case RK_AMAX: return RM_MAX;
    case RK_AMIN: return RM_MIN;
    case RK_MAX: case RK_ARGMAX: return RM_ARGMAX;
    case RK_MIN: case RK_ARGMIN: return RM_ARGMIN;
    case RK_LSE: return pass == 0 ? RM_MAX : RM_ADD;
    case RK_NORM: return isinf(p) ? RM_MAX : RM_ADD;
    default: return RM_ADD;
    }
}

inline float red_term(int kind, int pass, float v, float c, float p) {
    if (pass == 1) {
        if (kind == RK_LSE) return exp(v - c);
        return (v - c) * (v - c); /* var, std */
    }
    if (kind == RK_NORM) {
        float a = fabs(v);
        if (isinf(p) || p == 1.0f) return a;
        if (p == 2.0f) return a * a;
        if (p == 0.0f) return a != 0.0f ? 1.0f : 0.0f;
        return pow(a, p);
    }
    return v;
}

inline void red_init(int mode, float *a, int *ia) {
    *ia = 0x7fffffff;
    *a = mode == RM_ADD ? 0.0f : mode == RM_MUL ? 1.0f : mode == RM_MAX || mode == RM_ARGMAX ? -INFINITY : INFINITY;
}

/* a = a combined with b (b's index ib) */
inline void red_comb(int mode, float *a, int *ia, float b, int ib) {
    float av = *a;
    switch (mode) {
    case RM_ADD: *a = av + b; break;
    case RM_MUL: *a = av * b; break;
    case RM_MAX: if (b > av || isnan(b)) *a = b; break;
    case RM_MIN: if (b < av || isnan(b)) *a = b; break;
    default: {
        int better = mode == RM_ARGMAX ? b > av : b < av;
        int tie = b == av || (isnan(b) && isnan(av));
        if ((isnan(b) && !isnan(av)) || (!isnan(av) && better) || (tie && ib < *ia)) {
            *a = b;
            *ia = ib;
        }
    }
    }
}

/* the second pass's centre from the first pass's result */
inline float red_centre(int kind, float a, int R) {
    if (kind == RK_LSE) return isinf(a) ? 0.0f : a; /* PyTorch's: an infinite max is not subtracted */
    return a / (float)R;
}

inline void red_store(int kind, __global float *y, __global int *yi, int k, float a, int ia, float c, int R, float p,
                      float scale, float corr) {
    float d;
    switch (kind) {
    case RK_SUM: y[k] = a * scale; break;
    case RK_ARGMAX: case RK_ARGMIN: yi[k] = ia; break;
    case RK_VAR: case RK_STD:
        d = (float)R - corr;
        a = a / (d > 0.0f ? d : 0.0f);
        y[k] = kind == RK_STD ? sqrt(a) : a;
        break;
    case RK_LSE: y[k] = log(a) + c; break;
    case RK_NORM:
        y[k] = isinf(p) || p == 1.0f || p == 0.0f ? a : p == 2.0f ? sqrt(a) : pow(a, 1.0f / p);
        break;
    default: y[k] = a; break;
    }
}

/* One work-item per output element k = (o, i), walking x[o, r, i] over r. */
__kernel void reduce_cols(NN__KPARAMS(reduce_cols)) {
    int k = get_global_id(0);
    if (k >= O * I) return;
    int o = k / I, i = k - o * I;
    __global const float *xr = x + o * R * I + i;
    float a, c = 0.0f;
    int ia;
    if (kind == RK_SUM) { /* the common case, without the general loop's switches */
        if (I == 1) { /* a contiguous row (CPU devices): eight chains, then a fixed tree */
            float8 s8 = (float8)(0.0f);
            int r = 0;
            for (; r + 8 <= R; r += 8) s8 += vload8(0, xr + r);
            float4 s4 = s8.lo + s8.hi;
            float2 s2 = s4.lo + s4.hi;
            a = s2.lo + s2.hi;
            for (; r < R; r++) a += xr[r];
        } else {
            a = 0.0f;
            for (int r = 0; r < R; r++) a += xr[r * I];
        }
        y[k] = a * scale;
        return;
    }
    for (int pass = 0; pass < red_passes(kind); pass++) {
        int mode = red_mode(kind, pass, p);
        red_init(mode, &a, &ia);
        for (int r = 0; r < R; r++) red_comb(mode, &a, &ia, red_term(kind, pass, xr[r * I], c, p), r);
        if (pass == 0) c = red_centre(kind, a, R);
    }
    red_store(kind, y, yi, k, a, ia, c, R, p, scale, corr);
}

/* One work-group per row o of x [O, R] (I = 1): each work-item combines r = lid, lid + wg,
   ...; then a tree in local memory (tf, ti: the work-group size, a power of two). */
__kernel void reduce_rows(NN__KPARAMS(reduce_rows)) {
    int o = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    __global const float *xr = x + o * R;
    float a, c = 0.0f;
    int ia;
    if (kind == RK_SUM) { /* the common case, without the general loop's switches */
        a = 0.0f;
        for (int r = l; r < R; r += wg) a += xr[r];
        a = nn_tree(tf, a);
        if (l == 0) y[o] = a * scale;
        return;
    }
    for (int pass = 0; pass < red_passes(kind); pass++) {
        int mode = red_mode(kind, pass, p);
        red_init(mode, &a, &ia);
        for (int r = l; r < R; r += wg) red_comb(mode, &a, &ia, red_term(kind, pass, xr[r], c, p), r);
        tf[l] = a;
        ti[l] = ia;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = wg / 2; s > 0; s >>= 1) {
            if (l < s) {
                float v = tf[l];
                int iv = ti[l];
                red_comb(mode, &v, &iv, tf[l + s], ti[l + s]);
                tf[l] = v;
                ti[l] = iv;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        a = tf[0];
        ia = ti[0];
        barrier(CLK_LOCAL_MEM_FENCE); /* every work-item has read tf[0] before the next pass */
        if (pass == 0) c = red_centre(kind, a, R);
    }
    if (l == 0) red_store(kind, y, yi, o, a, ia, c, R, p, scale, corr);
}

inline float red_sign(float v) { return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : 0.0f; }

/* d|x|_p / dx times g; 0 where the norm or (p < 1) the element is 0, as PyTorch's */
inline float red_norm_grad(float g, float v, float y, float p) {
    if (y == 0.0f || p == 0.0f) return 0.0f;
    if (p == 1.0f) return g * red_sign(v);
    if (p == 2.0f) return g * v / y;
    if (v == 0.0f) return 0.0f;
    return g * red_sign(v) * pow(fabs(v), p - 1.0f) / pow(y, p - 1.0f);
}

/* dx [O, R, I] element by element, for kinds whose gradient needs only gy, x and y:
   sum (and mean), logsumexp, finite-p norms. */
__kernel void reduce_grad_elems(NN__KPARAMS(reduce_grad)) {
    int j = get_global_id(0);
    if (j >= O * R * I) return;
    int o = j / (R * I), i = j - (j / I) * I, k = o * I + i;
    float g = gy[k];
    if (kind == RK_SUM) dx[j] = g * scale;
    else if (kind == RK_LSE) dx[j] = g * exp(x[j] - y[k]);
    else dx[j] = red_norm_grad(g, x[j], y[k], p);
}

/* dx for one row (o, i) of the kinds that need its statistics: ties (amax, amin, the max
   norm), the first max (max, min), the mean (var, std), the zeros (prod). */
__kernel void reduce_grad_cols(NN__KPARAMS(reduce_grad)) {
    int k = get_global_id(0);
    if (k >= O * I) return;
    int o = k / I, i = k - o * I;
    __global const float *xr = x + o * R * I + i;
    __global float *dr = dx + o * R * I + i;
    float g = gy[k], yv = y[k];
    if (kind == RK_AMAX || kind == RK_AMIN || kind == RK_NORM) { /* NORM here: p = inf */
        int cnt = 0;
        for (int r = 0; r < R; r++) cnt += (kind == RK_NORM ? fabs(xr[r * I]) : xr[r * I]) == yv;
        for (int r = 0; r < R; r++) {
            float v = xr[r * I];
            if (kind == RK_NORM) dr[r * I] = fabs(v) == yv ? g * red_sign(v) / (float)cnt : 0.0f;
            else dr[r * I] = v == yv ? g / (float)cnt : 0.0f;
        }
    } else if (kind == RK_MAX || kind == RK_MIN) {
        int mode = kind == RK_MAX ? RM_ARGMAX : RM_ARGMIN, ia;
        float a;
        red_init(mode, &a, &ia);
        for (int r = 0; r < R; r++) red_comb(mode, &a, &ia, xr[r * I], r);
        for (int r = 0; r < R; r++) dr[r * I] = r == ia ? g : 0.0f;
    } else if (kind == RK_VAR || kind == RK_STD) {
        float s = 0.0f, d = (float)R - corr, c;
        for (int r = 0; r < R; r++) s += xr[r * I];
        s /= (float)R;
        d = d > 0.0f ? d : 0.0f;
        if (kind == RK_VAR) c = 2.0f * g / d;
        else c = yv == 0.0f ? 0.0f : g / (d * yv); /* PyTorch's: no gradient where std is 0 */
        for (int r = 0; r < R; r++) dr[r * I] = c * (xr[r * I] - s);
    } else { /* prod */
        int zeros = 0, zr = 0;
        float others = 1.0f;
        for (int r = 0; r < R; r++) {
            float v = xr[r * I];
            if (v == 0.0f) {
                zeros++;
                zr = r;
            } else {
                others *= v;
            }
        }
        for (int r = 0; r < R; r++)
            dr[r * I] = zeros == 0 ? g * (others / xr[r * I]) : zeros == 1 && r == zr ? g * others : 0.0f;
    }
}

/* y [O, R, I] = the running sum of x over R (from the end when reverse), one work-item per
   (o, i). */
__kernel void cumsum(NN__KPARAMS(cumsum)) {
    int k = get_global_id(0);
    if (k >= O * I) return;
    int o = k / I, i = k - o * I;
    float s = 0.0f;
    for (int r = 0; r < R; r++) {
        int j = o * R * I + (reverse ? R - 1 - r : r) * I + i;
        s += x[j];
        y[j] = s;
    }
}

/* y [n] = x[0] * s: the gradient of a sum */
__kernel void expand_scalar(NN__KPARAMS(expand_scalar)) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[0] * s;
}

/* the first maximum, a NaN counting as the maximum (torch.argmax) */
inline int nn_argmax_row(__global const float *xr, int C) {
    int best = 0;
    for (int c = 1; c < C; c++)
        if (xr[c] > xr[best] || (isnan(xr[c]) && !isnan(xr[best]))) best = c;
    return best;
}

__kernel void argmax_rows(NN__KPARAMS(argmax_rows)) {
    int b = get_global_id(0);
    if (b < B) y[b] = nn_argmax_row(x + (size_t)b * C, C);
}

__kernel void correct_rows(NN__KPARAMS(correct_rows)) {
    int b = get_global_id(0);
    if (b < B) y[b] = nn_argmax_row(x + (size_t)b * C, C) == label[b] ? 1.0f : 0.0f;
}

/* correct_rows then sum_all, folded (xent_sum above says how) */
/* a work-item's terms of correct_sum, before the tree (xent_tail's too) */
inline float correct_rows_part(__global const float *x, __global const int *label, __global const int *lidx, int ln,
                               int B, int C) {
    float s = 0.0f;
    for (int b = get_local_id(0); b < B; b += get_local_size(0))
        s += nn_argmax_row(x + (size_t)b * C, C) == nn_label_at(label, lidx, ln, b) ? 1.0f : 0.0f;
    return s;
}
__kernel void correct_sum(NN__KPARAMS(rows_sum)) {
    float s = nn_tree(tmp, correct_rows_part(x, label, lidx, ln, B, C));
    if (get_local_id(0) == 0) sum_store(y, acc, has_acc, s, scale);
}

/* Softmax cross-entropy's tail in one launch (src/ops/fuse.c's nn__fuse_xent_tail). In groups
   (GPUs): group 0 is xent_sum, group 1 correct_sum (the accuracy's mean of the same rows)
   where has_correct, the others xent_backward's rows, a work-item each, the gradient's factor
   dloss[0] * dscale (a mean's of the seed 1). In one group (devices tuned as CPUs, small
   batches: src/ops/reduce/all.c): each work-item its rows of all three, a label read once a
   row, then the two trees: in three groups PoCL's second thread, woken late, held up a launch
   of microseconds' work and each group read every label again. Each part the bits of its own
   kernel either way (the sums' groups of the same size, the same terms in the same tree).
   Every group runs both trees, so the barriers are outside the branches (PoCL loops forever
   on a barrier under one, uniform or not). */
__kernel void xent_tail(NN__KPARAMS(xent_tail)) {
    const int grp = get_group_id(0), one = get_num_groups(0) == 1;
    const int part = one ? 3 : grp == 0 ? 0 : grp == 1 && has_correct ? 1 : 2;
    float s = 0.0f, s2 = 0.0f;
    /* one group: the rows in turns of a row an item, each turn's labels read into tmp first
       (before a barrier, so that PoCL reads them in a loop of their own: in the loop over
       rows, each label's miss waited for the row before it); only the item reads its slot */
    for (int b0 = 0; b0 < (part == 3 ? B : 0); b0 += (int)get_local_size(0)) {
        const int l = get_local_id(0), b = b0 + l;
        tmp[l] = as_float(b < B ? nn_label_at(label, lidx, ln, b) : 0);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (b < B) {
            const int t = as_int(tmp[l]);
            float v = 0.0f;
            if (t < 0 || t >= C) {
                atomic_inc(bad + slot);
                if (has_grad) nn_xent_grad_row(x + (size_t)b * C, dx + (size_t)b * C, t, C, dloss[0] * dscale);
            } else if (has_grad) {
                v = nn_xent_row_grad(x + (size_t)b * C, dx + (size_t)b * C, t, C, dloss[0] * dscale);
            } else {
                v = nn_xent_row(x + (size_t)b * C, t, C);
            }
            s += v;
            if (has_correct) s2 += nn_argmax_row(x + (size_t)b * C, C) == t ? 1.0f : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (part == 0) {
        s = xent_rows_part(x, label, lidx, ln, bad, slot, B, C);
    } else if (part == 1) {
        s2 = correct_rows_part(x, label, lidx, ln, B, C);
    } else if (part == 2) {
        const int b = (grp - 1 - has_correct) * (int)get_local_size(0) + (int)get_local_id(0);
        if (b < B)
            nn_xent_grad_row(x + (size_t)b * C, dx + (size_t)b * C, nn_label_at(label, lidx, ln, b), C, dloss[0] * dscale);
    }
    s = nn_tree(tmp, s);
    if (get_local_id(0) == 0 && (part == 0 || part == 3)) sum_store(y, acc, has_acc, s, scale);
    barrier(CLK_LOCAL_MEM_FENCE); /* every item has read tmp[0] before the second tree writes it */
    s2 = nn_tree(tmp, s2);
    if (get_local_id(0) == 0 && (part == 1 || (part == 3 && has_correct))) sum_store(y2, acc2, has_acc2, s2, scale2);
}
