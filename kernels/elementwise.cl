/* Elementwise ops. Twins of the loops in src/nn_cpu.c; every kernel guards i < n because
   the host may round the global size up to a multiple of the work-group size. */

#include "activation.h"

/* Each activation's pair of kernels, stamped from the table of kernels/activation.h: v is
   the input, p0 and p1 its parameters. */
#define NN__X(E, NAME, PARAMS, VALID, FWD, DER)                                             \
__kernel void NAME##_forward(__global const float *x, __global float *y, const int n,       \
                             const float p0, const float p1) {                             \
    int i = get_global_id(0);                                                              \
    if (i < n) { float v = x[i]; y[i] = (FWD); }                                           \
}                                                                                          \
__kernel void NAME##_backward(__global const float *x, __global const float *dy,           \
                              __global float *dx, const int n, const float p0,             \
                              const float p1) {                                            \
    int i = get_global_id(0);                                                              \
    if (i < n) { float v = x[i]; dx[i] = dy[i] * (DER); }                                  \
}
NN__ACTIVATIONS(NN__X)
#undef NN__X

/* PReLU over x [N, C, S] with the slope w[c] of its channel (C = 1: one shared slope) */
__kernel void prelu_forward(__global const float *x, __global const float *w, __global float *y, const int n,
                            const int C, const int S) {
    int i = get_global_id(0);
    if (i < n) y[i] = nn__act_leaky(x[i], w[(i / S) % C]);
}

__kernel void prelu_backward_input(__global const float *x, __global const float *w, __global const float *dy,
                                   __global float *dx, const int n, const int C, const int S) {
    int i = get_global_id(0);
    if (i < n) dx[i] = dy[i] * nn__act_leaky_der(x[i], w[(i / S) % C]);
}

/* part [N, C] = the sum over s of dy * dy/dw for each (n, c), in s order */
__kernel void prelu_backward_weight_part(__global const float *x, __global const float *dy, __global float *part,
                                         const int N, const int C, const int S) {
    int k = get_global_id(0);
    if (k >= N * C) return;
    size_t base = (size_t)k * S;
    float acc = 0.0f;
    for (int s = 0; s < S; s++) acc += dy[base + s] * nn__act_leaky_dslope(x[base + s]);
    part[k] = acc;
}

/* dw [C] = the sum over n of part[n, c], in n order: no atomics, the same bits every run */
__kernel void prelu_backward_weight(__global const float *part, __global float *dw, const int N, const int C) {
    int c = get_global_id(0);
    if (c >= C) return;
    float acc = 0.0f;
    for (int n = 0; n < N; n++) acc += part[n * C + c];
    dw[c] = acc;
}

/* y = a (op) b with b [nb] repeated over a's leading dims */
#define BINARY(NAME, EXPR)                                                                  \
__kernel void NAME(__global const float *a, __global const float *b, __global float *y,    \
                   const int n, const int nb) {                                            \
    int i = get_global_id(0);                                                              \
    if (i < n) { float u = a[i], w = b[nb == n ? i : i % nb]; y[i] = (EXPR); }             \
}
BINARY(add, u + w)
BINARY(sub, u - w)
BINARY(mul, u * w)

/* y [N, C, S] = x + b[c] */
__kernel void channel_bias(__global const float *x, __global const float *b, __global float *y, const int n,
                           const int C, const int S) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[i] + b[(i / S) % C];
}

__kernel void scale(__global const float *x, __global float *y, const int n, const float s) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[i] * s;
}

/* a bit copy (reshape), for either dtype */
__kernel void copy(__global const uint *x, __global uint *y, const int n) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[i];
}

__kernel void fill(__global float *y, const int n, const float v) {
    int i = get_global_id(0);
    if (i < n) y[i] = v;
}

/* y [n] = x[0] * s: the gradient of a sum */
__kernel void expand_scalar(__global const float *x, __global float *y, const int n, const float s) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[0] * s;
}

/* y [nb] = sum over the leading dims of x [n / nb, nb] (at float offset off), in a fixed
   order; also the sum of a convolution's weight-gradient slices */
__kernel void sum_leading(__global const float *x, __global float *y, const int n, const int nb, const int off) {
    int j = get_global_id(0);
    if (j < nb) {
        float s = 0.0f;
        for (int i = j; i < n; i += nb) s += x[off + i];
        y[j] = s;
    }
}

__kernel void accumulate(__global const float *x, __global float *acc, const int n) {
    int i = get_global_id(0);
    if (i < n) acc[i] += x[i];
}

/* BCE with logits, elementwise, in PyTorch's form: (1 - t) x + max(-x, 0) + log(1 + exp(-|x|)) */
__kernel void bce_logits_forward(__global const float *x, __global const float *t, __global float *y, const int n) {
    int i = get_global_id(0);
    if (i < n) { float v = x[i]; y[i] = (1.0f - t[i]) * v + (v < 0.0f ? -v : 0.0f) + log1p(exp(-fabs(v))); }
}

__kernel void bce_logits_backward(__global const float *x, __global const float *t, __global const float *dy,
                                  __global float *dx, const int n) {
    int i = get_global_id(0);
    if (i < n) dx[i] = dy[i] * (nn__act_sigmoid(x[i]) - t[i]);
}
