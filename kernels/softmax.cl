/* Row-wise ops over the last axis (rows of C values): softmax, log-softmax. One work-item
   per row. (The fused cross-entropy is in loss.cl, argmax in reduce.cl.) */
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
