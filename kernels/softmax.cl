/* Row-wise ops over the last axis (rows of C values): softmax, log-softmax. One work-item
   per row; on GPU devices, rows of 128 and more one work-group per row (the _group_
   kernels, below). (The fused cross-entropy is in loss.cl, argmax in reduce.cl.) */
#include "kargs.h"
#include "softmax_args.h"

__kernel void softmax_forward(NN__KPARAMS(softmax_forward)) {
    int r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xr = x + (size_t)r * C;
    __global float *yr = y + (size_t)r * C;
    float m = xr[0], s = 0.0f;
    for (int c = 1; c < C; c++) m = fmax(m, xr[c]);
    for (int c = 0; c < C; c++) s += exp(xr[c] - m);
    if (log_space) {
        float ls = log(s) + m;
        for (int c = 0; c < C; c++) yr[c] = xr[c] - ls;
    } else {
        float inv = 1.0f / s;
        for (int c = 0; c < C; c++) yr[c] = exp(xr[c] - m) * inv;
    }
}

/* softmax: dx = y * (dy - sum(dy * y)); log-softmax: dx = dy - exp(y) * sum(dy) */
__kernel void softmax_backward(NN__KPARAMS(softmax_backward)) {
    int r = get_global_id(0);
    if (r >= rows) return;
    size_t o = (size_t)r * C;
    float s = 0.0f;
    if (log_space) {
        for (int c = 0; c < C; c++) s += dy[o + c];
        for (int c = 0; c < C; c++) dx[o + c] = dy[o + c] - exp(y[o + c]) * s;
    } else {
        for (int c = 0; c < C; c++) s += dy[o + c] * y[o + c];
        for (int c = 0; c < C; c++) dx[o + c] = y[o + c] * (dy[o + c] - s);
    }
}

/* ---- one work-group per row (GPU devices, long rows: src/ops/softmax.c's nn__row_group_wg).
   Each work-item takes c = lid, lid + wg, ...; the max and the sums then go through a tree
   in local memory (tmp: the work-group size, a power of two), so the order is fixed. ---- */

/* the work-group's max (is_max; NaN ignored, as fmax in the per-row kernels) or sum of v,
   in every work-item; tmp is free again on return */
inline float sm_tree(__local float *tmp, float v, int is_max) {
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

__kernel void softmax_group_forward(NN__KPARAMS(softmax_group_forward)) {
    int r = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    if (r >= rows) return; /* uniform over the work-group */
    __global const float *xr = x + (size_t)r * C;
    __global float *yr = y + (size_t)r * C;
    float m = -INFINITY, s = 0.0f;
    for (int c = l; c < C; c += wg) m = fmax(m, xr[c]);
    m = sm_tree(tmp, m, 1);
    for (int c = l; c < C; c += wg) s += exp(xr[c] - m);
    s = sm_tree(tmp, s, 0);
    if (log_space) {
        float ls = log(s) + m;
        for (int c = l; c < C; c += wg) yr[c] = xr[c] - ls;
    } else {
        float inv = 1.0f / s;
        for (int c = l; c < C; c += wg) yr[c] = exp(xr[c] - m) * inv;
    }
}

__kernel void softmax_group_backward(NN__KPARAMS(softmax_group_backward)) {
    int r = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    if (r >= rows) return; /* uniform over the work-group */
    size_t o = (size_t)r * C;
    float s = 0.0f;
    for (int c = l; c < C; c += wg) s += log_space ? dy[o + c] : dy[o + c] * y[o + c];
    s = sm_tree(tmp, s, 0);
    if (log_space) {
        for (int c = l; c < C; c += wg) dx[o + c] = dy[o + c] - exp(y[o + c]) * s;
    } else {
        for (int c = l; c < C; c += wg) dx[o + c] = y[o + c] * (dy[o + c] - s);
    }
}
