/* Row-wise ops over the last axis (rows of C values): softmax, log-softmax, the fused
   softmax cross-entropy, argmax. One work-item per row. */

__kernel void softmax_forward(__global const float *x, __global float *y, const int rows, const int C,
                              const int log_space) {
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
__kernel void softmax_backward(__global const float *y, __global const float *dy, __global float *dx,
                               const int rows, const int C, const int log_space) {
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

/* loss[b] = logsumexp(x[b]) - x[b, label[b]]; a label outside [0, C) gives 0 and counts in
   bad[slot] (reported to the host at its next read) */
__kernel void xent_forward(__global const float *x, __global const int *label, __global float *loss,
                           const int B, const int C, __global int *bad, const int slot) {
    int b = get_global_id(0);
    if (b >= B) return;
    __global const float *xr = x + (size_t)b * C;
    int t = label[b];
    if (t < 0 || t >= C) { atomic_inc(bad + slot); loss[b] = 0.0f; return; }
    float m = xr[0], s = 0.0f;
    for (int c = 1; c < C; c++) m = fmax(m, xr[c]);
    for (int c = 0; c < C; c++) s += exp(xr[c] - m);
    loss[b] = log(s) + m - xr[t];
}

__kernel void xent_backward(__global const float *x, __global const int *label, __global const float *dloss,
                            __global float *dx, const int B, const int C) {
    int b = get_global_id(0);
    if (b >= B) return;
    __global const float *xr = x + (size_t)b * C;
    __global float *dxr = dx + (size_t)b * C;
    int t = label[b];
    if (t < 0 || t >= C) { for (int c = 0; c < C; c++) dxr[c] = 0.0f; return; }
    float m = xr[0], s = 0.0f, g = dloss[b];
    for (int c = 1; c < C; c++) m = fmax(m, xr[c]);
    for (int c = 0; c < C; c++) s += exp(xr[c] - m);
    for (int c = 0; c < C; c++) dxr[c] = g * (exp(xr[c] - m) / s - (c == t ? 1.0f : 0.0f));
}

/* the first maximum, a NaN counting as the maximum (torch.argmax) */
inline int nn_argmax_row(__global const float *xr, int C) {
    int best = 0;
    for (int c = 1; c < C; c++)
        if (xr[c] > xr[best] || (isnan(xr[c]) && !isnan(xr[best]))) best = c;
    return best;
}

__kernel void argmax_rows(__global const float *x, __global int *y, const int B, const int C) {
    int b = get_global_id(0);
    if (b < B) y[b] = nn_argmax_row(x + (size_t)b * C, C);
}

__kernel void correct_rows(__global const float *x, __global const int *label, __global float *y,
                           const int B, const int C) {
    int b = get_global_id(0);
    if (b < B) y[b] = nn_argmax_row(x + (size_t)b * C, C) == label[b] ? 1.0f : 0.0f;
}
