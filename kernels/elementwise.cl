/* The elementwise family's kernels (the ops of src/ops/elementwise/ launch them), twins of the
   loops in src/cpu/elementwise.c; parameter lists in kernels/elementwise_args.h. Every
   kernel guards i < n because the host may round the global size up to a multiple of the
   work-group size. */
#include "kargs.h"
#include "storage.h"
#include "elementwise_args.h"
#include "activation.h"

/* ---- unary (src/ops/elementwise/unary.c): activations and math, scale, PReLU, fill,
   accumulate ---- */

/* Each unary function's pair of kernels, stamped from the tables of kernels/activation.h: v is
   the input, p0 and p1 its parameters. x, y, dy and dx are in the program's storage type
   (kernels/storage.h: float32, or 16-bit widened on load and rounded on store). */
#define NN__X(E, NAME, PARAMS, VALID, FWD, DER)                                             \
__kernel void NAME##_forward(NN__KPARAMS(unary_forward)) {                                 \
    int i = get_global_id(0);                                                              \
    if (i < n) { float v = NN__SLOAD(x, i); NN__SSTORE(y, i, (FWD)); }                     \
}                                                                                          \
__kernel void NAME##_backward(NN__KPARAMS(unary_backward)) {                               \
    int i = get_global_id(0);                                                              \
    if (i < n) { float v = NN__SLOAD(x, i); NN__SSTORE(dx, i, NN__SLOAD(dy, i) * (DER)); } \
}
NN__UNARY_ALL(NN__X)
#undef NN__X

__kernel void scale(NN__KPARAMS(scale)) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[i] * s;
}

/* PReLU over x [N, C, S] with the slope w[c] of its channel (C = 1: one shared slope) */
__kernel void prelu_forward(NN__KPARAMS(prelu_forward)) {
    int i = get_global_id(0);
    if (i < n) y[i] = nn__act_leaky(x[i], w[(i / S) % C]);
}

__kernel void prelu_backward_input(NN__KPARAMS(prelu_backward_input)) {
    int i = get_global_id(0);
    if (i < n) dx[i] = dy[i] * nn__act_leaky_der(x[i], w[(i / S) % C]);
}

/* part [N, C] = the sum over s of dy * dy/dw for each (n, c), in s order */
__kernel void prelu_backward_weight_part(NN__KPARAMS(prelu_backward_weight_part)) {
    int k = get_global_id(0);
    if (k >= N * C) return;
    size_t base = (size_t)k * S;
    float acc = 0.0f;
    for (int s = 0; s < S; s++) acc += dy[base + s] * nn__act_leaky_dslope(x[base + s]);
    part[k] = acc;
}

/* dw [C] = the sum over n of part[n, c], in n order: no atomics, the same bits every run */
__kernel void prelu_backward_weight_sum(NN__KPARAMS(prelu_backward_weight)) {
    int c = get_global_id(0);
    if (c >= C) return;
    float acc = 0.0f;
    for (int n = 0; n < N; n++) acc += part[n * C + c];
    dw[c] = acc;
}

__kernel void fill(NN__KPARAMS(fill)) {
    int i = get_global_id(0);
    if (i < n) y[i] = v;
}

__kernel void accumulate(NN__KPARAMS(accumulate)) {
    int i = get_global_id(0);
    if (i < n) acc[i] += x[i];
}

/* ---- broadcasting (src/ops/elementwise/broadcast.c): src/cpu/elementwise.c's
   nn__bcast geometry, nd merged dims (outermost first) and each operand's strides (0
   where broadcast) as int8s; expand and its gradient sum_to ---- */

/* The operands' offsets of output element i. */
static inline void nn__bc_offsets(int i, int nd, int8 dims, int8 s0, int8 s1, int8 s2, int *o0, int *o1, int *o2) {
    int D[8], A[8], B[8], C[8], a = 0, b = 0, c = 0;
    vstore8(dims, 0, D);
    vstore8(s0, 0, A);
    vstore8(s1, 0, B);
    vstore8(s2, 0, C);
    for (int d = nd - 1; d >= 0; d--) {
        int q = i / D[d], k = i - q * D[d];
        a += k * A[d];
        b += k * B[d];
        c += k * C[d];
        i = q;
    }
    *o0 = a;
    *o1 = b;
    *o2 = c;
}

__kernel void expand_bcast(NN__KPARAMS(expand_bcast)) {
    int i = get_global_id(0), ox, o1, o2;
    if (i >= n) return;
    nn__bc_offsets(i, nd, dims, sx, (int8)(0), (int8)(0), &ox, &o1, &o2);
    y[i] = x[ox];
}

/* y [m] = x summed over the dims where st is 0 (x's strides xs): element j of y is 0 plus
   its `reduced` elements of x in increasing index order, as the CPU backend adds them */
__kernel void sum_to(NN__KPARAMS(sum_to)) {
    int j = get_global_id(0), D[8], S[8], X[8], idx[8], off = 0, rem;
    float acc = 0.0f;
    if (j >= m) return;
    vstore8(dims, 0, D);
    vstore8(st, 0, S);
    vstore8(xs, 0, X);
    rem = j;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = 0;
        if (S[d] == 0) continue;
        off += (rem % D[d]) * X[d];
        rem /= D[d];
    }
    for (int r = 0; r < reduced; r++) {
        acc += NN__SLOAD(x, off);
        for (int d = nd - 1; d >= 0; d--) { /* the next summed index, innermost first */
            if (S[d] != 0) continue;
            off += X[d];
            if (++idx[d] < D[d]) break;
            off -= X[d] * D[d];
            idx[d] = 0;
        }
    }
    y[j] = acc;
}

/* ---- binary (src/ops/elementwise/binary.c): add, sub, mul, div, minimum, maximum, pow,
   comparisons, broadcast ---- */

/* f(u, w) and its derivatives, the formulas of kernels/activation.h's NN__BINARY_FNS */
static inline float nn__ew_binary(int fn, float u, float w) {
    switch (fn) {
#define NN__X(E, NAME, FWD, DA, DB) case NN__B_##E: return (FWD);
    NN__BINARY_FNS(NN__X)
#undef NN__X
    }
    return 0.0f;
}
static inline float nn__ew_binary_der(int fn, int wrt, float u, float w) {
    switch (fn) {
#define NN__X(E, NAME, FWD, DA, DB) case NN__B_##E: return wrt ? (DB) : (DA);
    NN__BINARY_FNS(NN__X)
#undef NN__X
    }
    return 0.0f;
}

/* one flat dim: a and b advance by sa and sb (1, or 0 for a one-element operand) */
__kernel void binary_flat(NN__KPARAMS(binary_flat)) {
    int i = get_global_id(0);
    if (i < n) NN__SSTORE(y, i, nn__ew_binary(fn, NN__SLOAD(a, i * sa), NN__SLOAD(b, i * sb)));
}

/* same shapes: one kernel per function (binary_same_add, ...), so that a CPU device's
   compiler sees straight-line code it can vectorise */
#define NN__X(E, NAME, FWD, DA, DB)                                                              \
    __kernel void binary_same_##NAME(NN__KPARAMS(binary_same)) {                                 \
        int i = get_global_id(0);                                                                \
        if (i < n) {                                                                             \
            float u = NN__SLOAD(a, i), w = NN__SLOAD(b, i);                                      \
            NN__SSTORE(y, i, (FWD));                                                             \
        }                                                                                        \
    }
NN__BINARY_FNS(NN__X)
#undef NN__X

/* a row broadcast, y [rows, C] from a [rows, C] and the row b [C] (arow 0) or the row a [C]
   and b [rows, C] (arow 1): one remainder an element instead of nn__bc_offsets' walk over
   the dims (binary_bcast on a [128, 256] bias add ran 4-16x slower than binary_same on PoCL) */
__kernel void binary_row(NN__KPARAMS(binary_row)) {
    int i = get_global_id(0);
    if (i < n) {
        int c = i % C;
        NN__SSTORE(y, i, nn__ew_binary(fn, NN__SLOAD(a, arow ? c : i), NN__SLOAD(b, arow ? i : c)));
    }
}

__kernel void binary_bcast(NN__KPARAMS(binary_bcast)) {
    int i = get_global_id(0), oa, ob, oc;
    if (i >= n) return;
    nn__bc_offsets(i, nd, dims, sa, sb, (int8)(0), &oa, &ob, &oc);
    NN__SSTORE(y, i, nn__ew_binary(fn, NN__SLOAD(a, oa), NN__SLOAD(b, ob)));
}

/* dx = dy * df/da (wrt 0) or df/db (wrt 1) for same shapes, one kernel per function */
#define NN__X(E, NAME, FWD, DA, DB)                                                              \
    __kernel void binary_same_grad_##NAME(NN__KPARAMS(binary_same_grad)) {                       \
        int i = get_global_id(0);                                                                \
        if (i < n) {                                                                             \
            float u = NN__SLOAD(a, i), w = NN__SLOAD(b, i);                                      \
            NN__SSTORE(dx, i, NN__SLOAD(dy, i) * (wrt ? (DB) : (DA)));                           \
        }                                                                                        \
    }
NN__BINARY_FNS(NN__X)
#undef NN__X

/* dx [n] = dy * df/da (wrt 0) or df/db (wrt 1), at the output's shape */
__kernel void binary_grad(NN__KPARAMS(binary_grad)) {
    int i = get_global_id(0), oa, ob, oc;
    if (i >= n) return;
    nn__bc_offsets(i, nd, dims, sa, sb, (int8)(0), &oa, &ob, &oc);
    NN__SSTORE(dx, i, NN__SLOAD(dy, i) * nn__ew_binary_der(fn, wrt, NN__SLOAD(a, oa), NN__SLOAD(b, ob)));
}

/* ---- select (src/ops/elementwise/select.c): where, masked_fill ---- */

__kernel void where_bcast(NN__KPARAMS(where_bcast)) {
    int i = get_global_id(0), oc, oa, ob;
    if (i >= n) return;
    nn__bc_offsets(i, nd, dims, sc, sa, sb, &oc, &oa, &ob);
    y[i] = c[oc] != 0.0f ? a[oa] : b[ob];
}

/* y = (mask != 0) != invert ? value : x */
__kernel void masked_fill_bcast(NN__KPARAMS(masked_fill_bcast)) {
    int i = get_global_id(0), om, ox, oc;
    if (i >= n) return;
    nn__bc_offsets(i, nd, dims, sm, sx, (int8)(0), &om, &ox, &oc);
    y[i] = (m[om] != 0.0f) != invert ? value : x[ox];
}

/* ---- helpers other families launch (conv, matmul, shape) ---- */

/* y [N, C, S] = x + b[c] */
__kernel void channel_bias(NN__KPARAMS(channel_bias)) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[i] + b[(i / S) % C];
}

/* a bit copy (reshape), for either dtype */
__kernel void copy(NN__KPARAMS(copy)) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[i];
}

/* y [nb] = sum over the leading dims of x [n / nb, nb] (at float offset off), in a fixed
   order; also the sum of a convolution's weight-gradient slices */
__kernel void sum_leading(NN__KPARAMS(sum_leading)) {
    int j = get_global_id(0);
    if (j < nb) {
        float s = 0.0f;
        for (int i = j; i < n; i += nb) s += x[off + i];
        y[j] = s;
    }
}
