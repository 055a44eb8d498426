/* The elementwise family: broadcasting binary ops, elementwise math, comparisons and
   selection, expand and detach, each against a double-precision reference written here
   from PyTorch's definitions (not from the code under test).
   - The op checker (tests/op_check.c): forward within 1e-4 relative, gradients within
     1e-4 of central differences of the reference, CPU vs OpenCL within 1e-4; shapes with
     size-1 dims in either operand, missing leading dims, ranks 0 (a scalar [],
     PyTorch's 0-d tensor) to 6 and [1]. Ties of minimum/maximum
     are in the data on purpose: there the central difference is 1/2, PyTorch's split.
   - Exact values: NaN through minimum, maximum and clamp (it propagates, as PyTorch's),
     clamp's absent bounds, torch.round's halves to even, sign(NaN) = 0 (ATen's), the
     logical ops on NaN, detach stopping the gradient, and no gradient through a
     comparison.
   - The CPU backend's loops give the same bits for 1 to 8 threads on tensors large enough
     to be split, broadcasting and its gradient sums included.
   - Shapes that do not broadcast fail with NN_ERR_SHAPE naming the op and the shapes. */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static nn_shape shape0(void) { /* rank 0: a scalar [] */
    nn_shape s;
    memset(&s, 0, sizeof s);
    return s;
}

static nn_shape shape6(long a, long b, long c, long d, long e, long f) {
    nn_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = 6;
    s.dim[0] = a, s.dim[1] = b, s.dim[2] = c, s.dim[3] = d, s.dim[4] = e, s.dim[5] = f;
    return s;
}

/* The broadcast shape of a and b, NumPy's rule (the cases only use shapes that fit). */
static nn_shape bshape(nn_shape a, nn_shape b) {
    nn_shape o;
    int d, n = a.ndim > b.ndim ? a.ndim : b.ndim;
    memset(&o, 0, sizeof o);
    o.ndim = n;
    for (d = 0; d < n; d++) {
        int da = d - (n - a.ndim), db = d - (n - b.ndim);
        long x = da >= 0 ? (long)a.dim[da] : 1, y = db >= 0 ? (long)b.dim[db] : 1;
        o.dim[d] = x > y ? x : y;
    }
    return o;
}

/* The element of an operand of shape sh that output element i of shape out reads: i
   unravelled over out, then ravelled over sh with its size-1 dims at index 0. */
static long bidx(nn_shape out, nn_shape sh, long i) {
    long idx = 0, stride = 1;
    int d;
    for (d = out.ndim - 1; d >= 0; d--) {
        long c = i % (long)out.dim[d];
        int sd = d - (out.ndim - sh.ndim);
        i /= (long)out.dim[d];
        if (sd < 0) continue;
        if (sh.dim[sd] != 1) idx += c * stride;
        stride *= (long)sh.dim[sd];
    }
    return idx;
}

static void shape_name(nn_shape s, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "[");
    int d;
    for (d = 0; d < s.ndim && used < n; d++) used += (size_t)snprintf(buf + used, n - used, d ? ", %ld" : "%ld", (long)s.dim[d]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

/* ---- binary ops ---- */

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MIN, B_MAX, B_POW, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_AND, B_OR, B_COUNT };
static const char *const bin_names[B_COUNT] = {"add", "sub", "mul", "div", "minimum", "maximum", "pow", "eq",
                                               "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"};

static double f_bin(int op, double u, double w) {
    switch (op) {
    case B_ADD: return u + w;
    case B_SUB: return u - w;
    case B_MUL: return u * w;
    case B_DIV: return u / w;
    case B_MIN: return isnan(u) || isnan(w) ? NAN : u < w ? u : w;
    case B_MAX: return isnan(u) || isnan(w) ? NAN : u > w ? u : w;
    case B_POW: return pow(u, w);
    case B_EQ: return u == w;
    case B_NE: return u != w;
    case B_LT: return u < w;
    case B_LE: return u <= w;
    case B_GT: return u > w;
    case B_GE: return u >= w;
    case B_AND: return u != 0 && w != 0;
    default: return u != 0 || w != 0;
    }
}

static nn_tensor b_bin(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor a = in[0], b = in[1];
    switch (s->ip[0]) {
    case B_ADD: return nn_add(g, a, b);
    case B_SUB: return nn_sub(g, a, b);
    case B_MUL: return nn_mul(g, a, b);
    case B_DIV: return nn_div(g, a, b);
    case B_MIN: return nn_minimum(g, a, b);
    case B_MAX: return nn_maximum(g, a, b);
    case B_POW: return nn_pow(g, a, b);
    case B_EQ: return nn_eq(g, a, b);
    case B_NE: return nn_ne(g, a, b);
    case B_LT: return nn_lt(g, a, b);
    case B_LE: return nn_le(g, a, b);
    case B_GT: return nn_gt(g, a, b);
    case B_GE: return nn_ge(g, a, b);
    case B_AND: return nn_logical_and(g, a, b);
    default: return nn_logical_or(g, a, b);
    }
}
static void r_bin(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++)
        out[i] = f_bin(s->ip[0], in[0][bidx(s->out, s->shape[0], i)], in[1][bidx(s->out, s->shape[1], i)]);
}

/* the inputs each case needs: b away from 0 (div), a base in [0.2, 2.2) (pow), values on
   a grid of halves (ties for minimum, maximum and the comparisons), 0/1 masks (logic) */
static void fill_div(const spec *s, double *const *in) {
    long i, n = numel(s->shape[1]);
    for (i = 0; i < n; i++) in[1][i] = in[1][i] >= 0 ? in[1][i] + 0.5 : in[1][i] - 0.5;
}
static void fill_pow(const spec *s, double *const *in) {
    long i, n = numel(s->shape[0]);
    for (i = 0; i < n; i++) in[0][i] = fabs(in[0][i]) + 0.2;
}
static void fill_halves(const spec *s, double *const *in) {
    int k;
    long i;
    for (k = 0; k < s->n_in; k++)
        for (i = 0; i < numel(s->shape[k]); i++) in[k][i] = floor(in[k][i] * 2 + 0.5) / 2;
}
static void fill_masks(const spec *s, double *const *in) {
    int k;
    long i;
    for (k = 0; k < s->n_in; k++)
        for (i = 0; i < numel(s->shape[k]); i++) in[k][i] = in[k][i] > 0 ? 1.0 : in[k][i] > -1 ? 0.0 : -3.5;
}

static void binary_cases(const t_env *e) {
    struct { nn_shape a, b; } pairs[11];
    char name[200], sa[64], sb[64];
    int op, p, n_pairs = 0;
    pairs[n_pairs].a = nn_shape3(3, 1, 7), pairs[n_pairs++].b = nn_shape3(1, 33, 1);
    pairs[n_pairs].a = nn_shape1(127), pairs[n_pairs++].b = nn_shape3(5, 1, 127);
    pairs[n_pairs].a = nn_shape1(1), pairs[n_pairs++].b = nn_shape2(7, 33);
    pairs[n_pairs].a = nn_shape2(7, 33), pairs[n_pairs++].b = nn_shape2(7, 33);
    pairs[n_pairs].a = nn_shape2(33, 1), pairs[n_pairs++].b = nn_shape1(1);
    pairs[n_pairs].a = nn_shape5(2, 3, 1, 5, 1), pairs[n_pairs++].b = nn_shape4(3, 4, 1, 3);
    pairs[n_pairs].a = shape6(2, 1, 3, 1, 2, 1), pairs[n_pairs++].b = shape6(1, 2, 1, 3, 1, 2);
    pairs[n_pairs].a = nn_shape4(1, 3, 7, 1), pairs[n_pairs++].b = nn_shape2(1, 5);
    pairs[n_pairs].a = shape0(), pairs[n_pairs++].b = nn_shape2(7, 33); /* rank 0 against any rank */
    pairs[n_pairs].a = nn_shape3(3, 1, 7), pairs[n_pairs++].b = shape0();
    pairs[n_pairs].a = shape0(), pairs[n_pairs++].b = shape0();
    for (op = 0; op < B_COUNT; op++)
        for (p = 0; p < n_pairs; p++) {
            spec s;
            int logic = op >= B_EQ;
            if (logic && p % 2 && p != 3) continue; /* the comparisons at half the shapes */
            shape_name(pairs[p].a, sa, sizeof sa);
            shape_name(pairs[p].b, sb, sizeof sb);
            snprintf(name, sizeof name, "%s %s with %s", bin_names[op], sa, sb);
            s = mk(name, b_bin, r_bin, bshape(pairs[p].a, pairs[p].b));
            s.ip[0] = op;
            in_f(&s, pairs[p].a);
            in_f(&s, pairs[p].b);
            if (op == B_DIV) s.fill = fill_div;
            if (op == B_POW) s.fill = fill_pow;
            if (op == B_MIN || op == B_MAX) s.fill = p % 2 ? fill_halves : NULL; /* ties at half the shapes */
            if (op >= B_EQ && op <= B_GE) s.fill = fill_halves;
            if (op >= B_AND) s.fill = fill_masks;
            if (logic) s.grad[0] = s.grad[1] = 0;
            check_case(e, &s);
        }
}

/* ---- unary math ---- */

enum {
    U_NEG, U_ABS, U_SIGN, U_EXP, U_EXPM1, U_LOG, U_LOG1P, U_SQRT, U_RSQRT, U_RECIP, U_SQUARE, U_SIN, U_COS, U_ERF,
    U_FLOOR, U_ROUND, U_CLAMP, U_ADDS, U_POWS, U_NOT, U_DETACH
};

static nn_tensor b_un(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor x = in[0];
    switch (s->ip[0]) {
    case U_NEG: return nn_neg(g, x);
    case U_ABS: return nn_abs(g, x);
    case U_SIGN: return nn_sign(g, x);
    case U_EXP: return nn_exp(g, x);
    case U_EXPM1: return nn_expm1(g, x);
    case U_LOG: return nn_log(g, x);
    case U_LOG1P: return nn_log1p(g, x);
    case U_SQRT: return nn_sqrt(g, x);
    case U_RSQRT: return nn_rsqrt(g, x);
    case U_RECIP: return nn_reciprocal(g, x);
    case U_SQUARE: return nn_square(g, x);
    case U_SIN: return nn_sin(g, x);
    case U_COS: return nn_cos(g, x);
    case U_ERF: return nn_erf(g, x);
    case U_FLOOR: return nn_floor(g, x);
    case U_ROUND: return nn_round(g, x);
    case U_CLAMP: return nn_clamp(g, x, s->fp[0], s->fp[1]);
    case U_ADDS: return nn_add_scalar(g, x, s->fp[0]);
    case U_POWS: return nn_pow_scalar(g, x, s->fp[0]);
    case U_NOT: return nn_logical_not(g, x);
    default: return nn_detach(g, x);
    }
}
static double f_un(const spec *s, double v) {
    double lo = s->fp[0], hi = s->fp[1], t;
    switch (s->ip[0]) {
    case U_NEG: return -v;
    case U_ABS: return fabs(v);
    case U_SIGN: return v > 0 ? 1 : v < 0 ? -1 : 0;
    case U_EXP: return exp(v);
    case U_EXPM1: return expm1(v);
    case U_LOG: return log(v);
    case U_LOG1P: return log1p(v);
    case U_SQRT: return sqrt(v);
    case U_RSQRT: return 1 / sqrt(v);
    case U_RECIP: return 1 / v;
    case U_SQUARE: return v * v;
    case U_SIN: return sin(v);
    case U_COS: return cos(v);
    case U_ERF: return erf(v);
    case U_FLOOR: return floor(v);
    case U_ROUND: return nearbyint(v); /* the default rounding mode: halves to even */
    case U_CLAMP:
        t = isnan(lo) || !(v < lo) ? v : lo;
        return isnan(hi) || !(t > hi) ? t : hi;
    case U_ADDS: return v + (double)s->fp[0];
    case U_POWS: return pow(v, (double)s->fp[0]);
    case U_NOT: return v == 0;
    default: return v;
    }
}
static void r_un(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++) out[i] = f_un(s, in[0][i]);
}
static void fill_recip(const spec *s, double *const *in) {
    long i, n = numel(s->shape[0]);
    for (i = 0; i < n; i++) in[0][i] = in[0][i] >= 0 ? in[0][i] + 0.3 : in[0][i] - 0.3;
}
/* clamp: no input within 1e-3 of a bound, where no finite difference holds */
static void fill_clamp(const spec *s, double *const *in) {
    long i, n = numel(s->shape[0]);
    int k;
    for (i = 0; i < n; i++)
        for (k = 0; k < 2; k++)
            if (!isnan(s->fp[k]) && fabs(in[0][i] - s->fp[k]) < 1e-3) in[0][i] = s->fp[k] + 2e-3;
}

static void unary_cases(const t_env *e) {
    static const struct {
        const char *name;
        int op;
        double lo, hi;
        float p0, p1;
        int grad;
    } u[] = {
        {"neg", U_NEG, -2, 2, 0, 0, 1},          {"abs", U_ABS, -2, 2, 0, 0, 1},
        {"sign", U_SIGN, -2, 2, 0, 0, 1},        {"exp", U_EXP, -3, 3, 0, 0, 1},
        {"expm1", U_EXPM1, -3, 3, 0, 0, 1},      {"log", U_LOG, 0.1, 4, 0, 0, 1},
        {"log1p", U_LOG1P, -0.9, 4, 0, 0, 1},    {"sqrt", U_SQRT, 0.1, 4, 0, 0, 1},
        {"rsqrt", U_RSQRT, 0.1, 4, 0, 0, 1},     {"reciprocal", U_RECIP, -2, 2, 0, 0, 1},
        {"square", U_SQUARE, -2, 2, 0, 0, 1},    {"sin", U_SIN, -4, 4, 0, 0, 1},
        {"cos", U_COS, -4, 4, 0, 0, 1},          {"erf", U_ERF, -3, 3, 0, 0, 1},
        {"floor", U_FLOOR, -3, 3, 0, 0, 1},      {"round", U_ROUND, -3, 3, 0, 0, 1},
        {"clamp(-0.5, 0.7)", U_CLAMP, -2, 2, -0.5f, 0.7f, 1},
        {"clamp(NAN, 0.7)", U_CLAMP, -2, 2, NAN, 0.7f, 1},
        {"clamp(-0.5, NAN)", U_CLAMP, -2, 2, -0.5f, NAN, 1},
        {"clamp(1, -1)", U_CLAMP, -2, 2, 1.0f, -1.0f, 1},
        {"add_scalar 1.5", U_ADDS, -2, 2, 1.5f, 0, 1},
        {"pow_scalar 2", U_POWS, -2, 2, 2.0f, 0, 1},
        {"pow_scalar 3", U_POWS, -2, 2, 3.0f, 0, 1},
        {"pow_scalar 0.5", U_POWS, 0.1, 3, 0.5f, 0, 1},
        {"pow_scalar -1.5", U_POWS, 0.2, 3, -1.5f, 0, 1},
        {"pow_scalar 0", U_POWS, -2, 2, 0.0f, 0, 1},
        {"logical_not", U_NOT, -1, 1, 0, 0, 0},
        {"detach", U_DETACH, -2, 2, 0, 0, 0},
    };
    nn_shape shapes[3];
    char name[160], sn[64];
    int k, j;
    shapes[0] = shape0(); /* rank 0 ([1] is among the binary shapes) */
    shapes[1] = nn_shape2(7, 33);
    shapes[2] = nn_shape4(3, 1, 5, 7);
    for (k = 0; k < (int)(sizeof u / sizeof u[0]); k++)
        for (j = 0; j < 3; j++) {
            spec s;
            if (j == 2 && k % 3) continue; /* the rank-4 shape for a third of them */
            shape_name(shapes[j], sn, sizeof sn);
            snprintf(name, sizeof name, "%s %s", u[k].name, sn);
            s = mk(name, b_un, r_un, shapes[j]);
            s.ip[0] = u[k].op;
            s.fp[0] = u[k].p0;
            s.fp[1] = u[k].p1;
            s.lo = u[k].lo;
            s.hi = u[k].hi;
            in_f(&s, shapes[j]);
            s.grad[0] = u[k].grad;
            if (u[k].op == U_RECIP) s.fill = fill_recip;
            if (u[k].op == U_CLAMP) s.fill = fill_clamp;
            if (u[k].op == U_NOT) s.fill = fill_masks;
            check_case(e, &s);
        }
}

/* ---- where, masked_fill, expand ---- */

static nn_tensor b_where(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_where(g, in[0], in[1], in[2]); }
static void r_where(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++)
        out[i] = in[0][bidx(s->out, s->shape[0], i)] != 0 ? in[1][bidx(s->out, s->shape[1], i)]
                                                            : in[2][bidx(s->out, s->shape[2], i)];
}
static void fill_cond(const spec *s, double *const *in) {
    long i, n = numel(s->shape[0]);
    for (i = 0; i < n; i++) in[0][i] = in[0][i] > 0.3 ? 1.0 : in[0][i] < -1.5 ? -2.0 : 0.0; /* nonzero is true */
}

static nn_tensor b_masked_fill(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_masked_fill(g, in[0], in[1], s->fp[0]); }
static void r_masked_fill(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++) out[i] = in[1][bidx(s->out, s->shape[1], i)] != 0 ? (double)s->fp[0] : in[0][i];
}
static void fill_mask1(const spec *s, double *const *in) {
    long i, n = numel(s->shape[1]);
    for (i = 0; i < n; i++) in[1][i] = in[1][i] > 0.5 ? 1.0 : 0.0;
}

static nn_tensor b_expand(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_shape t = s->out;
    int d;
    for (d = 0; d < 8 && d < t.ndim; d++)
        if (s->ip[d]) t.dim[d] = -1; /* -1: keep x's size */
    return nn_expand(g, in[0], t);
}
static void r_expand(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++) out[i] = in[0][bidx(s->out, s->shape[0], i)];
}

static void select_cases(const t_env *e) {
    static const struct { nn_shape c, a, b; } w[4] = {
        {{3, {3, 1, 7}}, {3, {1, 33, 1}}, {1, {7}}},
        {{1, {127}}, {3, {5, 1, 127}}, {1, {1}}},
        {{2, {7, 33}}, {2, {7, 33}}, {2, {7, 33}}},
        {{5, {2, 1, 3, 1, 4}}, {4, {3, 1, 5, 4}}, {5, {2, 3, 1, 1, 1}}},
    };
    static const struct { nn_shape x, m; } mf[3] = {
        {{3, {5, 1, 127}}, {1, {127}}},
        {{3, {3, 33, 7}}, {3, {3, 1, 7}}},
        {{2, {7, 33}}, {1, {1}}},
    };
    char name[200], s0[64], s1[64], s2[64];
    int k;
    spec s;
    for (k = 0; k < 4; k++) {
        shape_name(w[k].c, s0, sizeof s0);
        shape_name(w[k].a, s1, sizeof s1);
        shape_name(w[k].b, s2, sizeof s2);
        snprintf(name, sizeof name, "where %s, %s, %s", s0, s1, s2);
        s = mk(name, b_where, r_where, bshape(bshape(w[k].c, w[k].a), w[k].b));
        in_f(&s, w[k].c);
        in_f(&s, w[k].a);
        in_f(&s, w[k].b);
        s.grad[0] = 0;
        s.fill = fill_cond;
        check_case(e, &s);
    }
    for (k = 0; k < 3; k++) {
        shape_name(mf[k].x, s0, sizeof s0);
        shape_name(mf[k].m, s1, sizeof s1);
        snprintf(name, sizeof name, "masked_fill %s by %s", s0, s1);
        s = mk(name, b_masked_fill, r_masked_fill, mf[k].x);
        s.fp[0] = -0.25f;
        in_f(&s, mf[k].x);
        in_f(&s, mf[k].m);
        s.grad[1] = 0;
        s.fill = fill_mask1;
        check_case(e, &s);
    }
    s = mk("expand [3, 1, 7] to [2, 3, 5, 7]", b_expand, r_expand, nn_shape4(2, 3, 5, 7));
    in_f(&s, nn_shape3(3, 1, 7));
    check_case(e, &s);
    s = mk("expand [3, 1, 7] to [4, -1, 33, -1]", b_expand, r_expand, nn_shape4(4, 3, 33, 7));
    s.ip[1] = s.ip[3] = 1;
    in_f(&s, nn_shape3(3, 1, 7));
    check_case(e, &s);
    s = mk("expand [1] to [7, 33]", b_expand, r_expand, nn_shape2(7, 33));
    in_f(&s, nn_shape1(1));
    check_case(e, &s);
    s = mk("expand [127, 1] to [127, 129]", b_expand, r_expand, nn_shape2(127, 129));
    in_f(&s, nn_shape2(127, 1));
    check_case(e, &s);
}

/* ---- exact values: NaN, halves, detach ---- */

/* Runs y = f(a, b) forward on e's backend for n-element inputs (b NULL: f takes a alone
   and gets NN_NONE); 0 on failure. */
typedef nn_tensor (*pair_fn)(nn_graph *g, nn_tensor a, nn_tensor b);
static int run_pair(const t_env *e, pair_fn f, const float *a, const float *b, float *y, int n) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor ta, tb, ty;
    int ok = 0;
    if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) return 0;
    ta = nn_input(g, "a", NN_F32, nn_shape1(n));
    tb = b ? nn_input(g, "b", NN_F32, nn_shape1(n)) : NN_NONE;
    ty = f(g, ta, tb);
    nn_graph_output(g, ty);
    memset(&cd, 0, sizeof cd);
    ok = T_OK(nn_graph_compile(g, &cd), e->ctx) && T_OK(nn_tensor_write(g, ta, a, (size_t)n * 4), e->ctx) &&
         (!b || T_OK(nn_tensor_write(g, tb, b, (size_t)n * 4), e->ctx)) && T_OK(nn_graph_forward(g), e->ctx) &&
         T_OK(nn_tensor_read(g, ty, y, (size_t)n * 4), e->ctx);
    nn_graph_destroy(g);
    return ok;
}
static nn_tensor p_min(nn_graph *g, nn_tensor a, nn_tensor b) { return nn_minimum(g, a, b); }
static nn_tensor p_max(nn_graph *g, nn_tensor a, nn_tensor b) { return nn_maximum(g, a, b); }
static nn_tensor p_and(nn_graph *g, nn_tensor a, nn_tensor b) { return nn_logical_and(g, a, b); }
static nn_tensor p_ne(nn_graph *g, nn_tensor a, nn_tensor b) { return nn_ne(g, a, b); }
static nn_tensor p_clamp(nn_graph *g, nn_tensor a, nn_tensor b) { (void)b; return nn_clamp(g, a, -1.0f, 1.0f); }
static nn_tensor p_clamp_lo(nn_graph *g, nn_tensor a, nn_tensor b) { (void)b; return nn_clamp(g, a, -1.0f, NAN); }
static nn_tensor p_clamp_hi(nn_graph *g, nn_tensor a, nn_tensor b) { (void)b; return nn_clamp(g, a, NAN, 1.0f); }
static nn_tensor p_round(nn_graph *g, nn_tensor a, nn_tensor b) { (void)b; return nn_round(g, a); }
static nn_tensor p_sign(nn_graph *g, nn_tensor a, nn_tensor b) { (void)b; return nn_sign(g, a); }
static nn_tensor p_not(nn_graph *g, nn_tensor a, nn_tensor b) { (void)b; return nn_logical_not(g, a); }

/* same: equal values, NaN equal to NaN, -0 to +0 */
static int same(float x, float y) { return (isnan(x) && isnan(y)) || x == y; }

static void exact_cases(const t_env *e) {
    enum { N = 19 }; /* past 16, so the SIMD rows and their scalar tails both see NaN */
    static const struct {
        const char *name;
        pair_fn f;
        int unary;
        float want[N];
    } cases[] = {
        {"minimum", p_min, 0, {NAN, NAN, NAN, -1, 2, -3, 0.5f, 1, 1, 1, 1, 1, 1, 1, 1, 1, NAN, 1, 0}},
        {"maximum", p_max, 0, {NAN, NAN, NAN, 1, 3, 4, 0.5f, 2, 2, 2, 2, 2, 2, 2, 2, 2, NAN, 2, 0}},
        {"logical_and", p_and, 0, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0}},
        {"ne", p_ne, 0, {1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}},
        {"clamp(-1, 1)", p_clamp, 1, {NAN, 1, NAN, -1, 1, -1, 0.5f, 1, 1, 1, 1, 1, 1, 1, 1, 1, NAN, 1, 0}},
        {"clamp(-1, NAN)", p_clamp_lo, 1, {NAN, 1, NAN, -1, 2, -1, 0.5f, 1, 1, 1, 1, 1, 1, 1, 1, 1, NAN, 1, 0}},
        {"clamp(NAN, 1)", p_clamp_hi, 1, {NAN, 1, NAN, -1, 1, -3, 0.5f, 1, 1, 1, 1, 1, 1, 1, 1, 1, NAN, 1, 0}},
        {"sign", p_sign, 1, {0, 1, 0, -1, 1, -1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0}},
        {"logical_not", p_not, 1, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
    };
    static const float a[N] = {NAN, 1, NAN, -1, 2, -3, 0.5f, 1, 1, 1, 1, 1, 1, 1, 1, 1, NAN, 1, 0};
    static const float b[N] = {NAN, NAN, 1, 1, 3, 4, 0.5f, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 2, 0};
    static const float halves[N] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f, 0.49999997f, -0.49999997f, 1e9f,
                                    4.5f, 5.5f, -4.5f, 0.7f, -0.7f, 1.2f, 2.6f, 6.5f, -6.5f};
    static const float halves_want[N] = {0, 2, 2, -0.0f, -2, -2, 4, 0, -0.0f, 1e9f, 4, 6, -4, 1, -1, 1, 3, 6, -6};
    float y[N];
    int k, i;
    for (k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        char name[96];
        snprintf(name, sizeof name, "elementwise exact: %s with NaN", cases[k].name);
        if (!t_begin(e, name)) continue;
        if (run_pair(e, cases[k].f, a, cases[k].unary ? NULL : b, y, N))
            for (i = 0; i < N; i++)
                if (!T_CHECK(same(y[i], cases[k].want[i]), "%s(%g, %g) = %g, want %g", cases[k].name, a[i], b[i], y[i],
                             cases[k].want[i]))
                    break;
        t_end();
    }
    if (t_begin(e, "elementwise exact: round halves to even")) {
        if (run_pair(e, p_round, halves, NULL, y, N))
            for (i = 0; i < N; i++)
                if (!T_CHECK(same(y[i], halves_want[i]) && signbit(y[i]) == signbit(halves_want[i]),
                             "round(%.9g) = %g, want %g", halves[i], y[i], halves_want[i]))
                    break;
        t_end();
    }
}

/* detach: y = detach(x) * 3 + x * x has dy/dx = 2x; a comparison passes no gradient (x
   reaches the loss only through gt(x, 0) and where's condition: its gradient is NN_NONE). */
static void gradient_stop_cases(const t_env *e) {
    enum { N = 37 };
    float xs[N], gx[N];
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, z, y;
    int i;
    if (!t_begin(e, "elementwise: detach and comparisons stop the gradient")) return;
    for (i = 0; i < N; i++) xs[i] = (float)(i - 18) / 7.0f;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        x = nn_input(g, "x", NN_F32, nn_shape1(N));
        z = nn_input(g, "z", NN_F32, nn_shape1(N));
        nn_graph_requires_grad(g, x);
        nn_graph_requires_grad(g, z);
        y = nn_add(g, nn_mul_scalar(g, nn_detach(g, x), 3.0f), nn_mul(g, x, x));
        y = nn_add(g, y, nn_where(g, nn_gt(g, z, nn_detach(g, x)), z, nn_neg(g, z)));
        memset(&cd, 0, sizeof cd);
        cd.loss = nn_sum(g, y);
        if (T_OK(nn_graph_compile(g, &cd), e->ctx) && T_OK(nn_tensor_write(g, x, xs, sizeof xs), e->ctx) &&
            T_OK(nn_tensor_write(g, z, xs, sizeof xs), e->ctx) && T_OK(nn_graph_step(g), e->ctx) &&
            T_CHECK(nn_graph_grad(g, x).id > 0, "no gradient for x") &&
            T_OK(nn_tensor_read(g, nn_graph_grad(g, x), gx, sizeof gx), e->ctx)) {
            for (i = 0; i < N; i++)
                if (!T_CHECK(fabs(gx[i] - 2.0 * xs[i]) <= 1e-6, "d/dx[%d] = %g, want 2x = %g", i, gx[i], 2.0 * xs[i])) break;
            /* z > x never holds (z == x): the gradient of z is -1 throughout */
            if (T_CHECK(nn_graph_grad(g, z).id > 0, "no gradient for z") && T_OK(nn_tensor_read(g, nn_graph_grad(g, z), gx, sizeof gx), e->ctx))
                for (i = 0; i < N; i++)
                    if (!T_CHECK(gx[i] == -1.0f, "d/dz[%d] = %g, want -1", i, gx[i])) break;
        }
    }
    nn_graph_destroy(g);
    g = NULL;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        x = nn_input(g, "x", NN_F32, nn_shape1(N));
        z = nn_input(g, "z", NN_F32, nn_shape1(N));
        nn_graph_requires_grad(g, x);
        memset(&cd, 0, sizeof cd);
        cd.loss = nn_sum(g, nn_add(g, nn_mul(g, nn_ge(g, x, z), z), z));
        if (T_OK(nn_graph_compile(g, &cd), e->ctx))
            T_CHECK(nn_graph_grad(g, x).id == 0, "x reaches the loss only through a comparison, yet has a gradient");
    }
    nn_graph_destroy(g);
    t_end();
}

/* ---- threads: the same bits for 1..8 threads ---- */

/* y = maximum(a [3, 257, 129] * b [257, 1] + c [129], a) / (1 + b), loss sum(y * w): the
   forward loops and the sums to [257, 1] (summed innermost) and [129] (kept innermost) are
   split between threads above 64K elements. */
static void thread_cases(const t_env *e) {
    enum { A0 = 3, A1 = 257, A2 = 129, NA = A0 * A1 * A2 };
    static float av[NA], wv[NA], bv[A1], cv[A2], ref[3][NA], got[NA];
    const long sizes[3] = {NA, A1, A2};
    int threads, i, k;
    if (!t_begin_cpu(e, "elementwise: the same bits for 1..8 threads", "thread counts are a CPU-backend setting")) return;
    for (i = 0; i < NA; i++) av[i] = (float)(((long)i * 7919) % 1000) / 500.0f - 1.0f, wv[i] = (float)(((long)i * 104729) % 997) / 498.5f - 1.0f;
    for (i = 0; i < A1; i++) bv[i] = (float)((i * 31) % 17) / 8.0f + 0.25f;
    for (i = 0; i < A2; i++) cv[i] = (float)((i * 13) % 11) / 5.0f - 1.0f;
    for (threads = 1; threads <= 8; threads++) {
        nn_context_desc cdsc;
        nn_context *ctx = NULL;
        nn_graph *g = NULL;
        nn_compile_desc cd;
        nn_tensor a, b, c, w, y, t[3];
        memset(&cdsc, 0, sizeof cdsc);
        cdsc.device = "cpu";
        cdsc.threads = threads;
        cdsc.log_level = NN_LOG_WARN;
        if (!T_CHECK(nn_context_create(&cdsc, &ctx) == NN_OK, "cannot create a CPU context with %d threads", threads)) break;
        if (T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
            a = nn_input(g, "a", NN_F32, nn_shape3(A0, A1, A2));
            b = nn_input(g, "b", NN_F32, nn_shape2(A1, 1));
            c = nn_input(g, "c", NN_F32, nn_shape1(A2));
            w = nn_input(g, "w", NN_F32, nn_shape3(A0, A1, A2));
            for (k = 0; k < 3; k++) nn_graph_requires_grad(g, k == 0 ? a : k == 1 ? b : c);
            y = nn_div(g, nn_maximum(g, nn_add(g, nn_mul(g, a, b), c), a), nn_add_scalar(g, b, 1.0f));
            y = nn_exp(g, nn_mul_scalar(g, y, 0.1f));
            memset(&cd, 0, sizeof cd);
            cd.loss = nn_sum(g, nn_mul(g, y, w));
            if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_tensor_write(g, a, av, sizeof av), ctx) &&
                T_OK(nn_tensor_write(g, b, bv, sizeof bv), ctx) && T_OK(nn_tensor_write(g, c, cv, sizeof cv), ctx) &&
                T_OK(nn_tensor_write(g, w, wv, sizeof wv), ctx) && T_OK(nn_graph_step(g), ctx)) {
                t[0] = a, t[1] = b, t[2] = c;
                for (k = 0; k < 3; k++) {
                    if (!T_OK(nn_tensor_read(g, nn_graph_grad(g, t[k]), threads == 1 ? ref[k] : got, (size_t)sizes[k] * 4), ctx)) break;
                    if (threads > 1)
                        for (i = 0; i < sizes[k]; i++)
                            if (!T_CHECK(memcmp(&ref[k][i], &got[i], 4) == 0, "%d threads: gradient %d [%d] = %.9g, 1 thread: %.9g",
                                         threads, k, i, got[i], ref[k][i]))
                                break;
                }
            }
        }
        nn_graph_destroy(g);
        nn_context_destroy(ctx);
    }
    t_end();
}

/* ---- errors ---- */

static void error_cases(const t_env *e) {
    nn_graph *g = NULL;
    nn_tensor a, b, t;
    if (!t_begin(e, "elementwise: shapes that do not broadcast")) return;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        a = nn_input(g, "a", NN_F32, nn_shape2(3, 4));
        b = nn_input(g, "b", NN_F32, nn_shape1(5));
        t = nn_add(g, a, b);
        T_CHECK(t.id < 0 && nn_graph_status(g) == NN_ERR_SHAPE, "nn_add [3, 4] + [5] did not fail with NN_ERR_SHAPE");
        T_CHECK(strstr(nn_context_last_error(e->ctx), "nn_add") && strstr(nn_context_last_error(e->ctx), "[3, 4]") &&
                    strstr(nn_context_last_error(e->ctx), "[5]"),
                "the message names neither the op nor the shapes: %s", nn_context_last_error(e->ctx));
    }
    nn_graph_destroy(g);
    g = NULL;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        a = nn_input(g, "a", NN_F32, nn_shape2(3, 1));
        b = nn_input(g, "b", NN_F32, nn_shape2(3, 4));
        t = nn_masked_fill(g, a, b, 0.0f); /* the mask is larger than x */
        T_CHECK(t.id < 0 && nn_graph_status(g) == NN_ERR_SHAPE, "nn_masked_fill with a larger mask did not fail");
        T_CHECK(strstr(nn_context_last_error(e->ctx), "nn_masked_fill") != NULL, "message: %s", nn_context_last_error(e->ctx));
    }
    nn_graph_destroy(g);
    g = NULL;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        a = nn_input(g, "a", NN_F32, nn_shape2(3, 2));
        t = nn_expand(g, a, nn_shape2(3, 4));
        T_CHECK(t.id < 0 && nn_graph_status(g) == NN_ERR_SHAPE, "nn_expand [3, 2] to [3, 4] did not fail");
        T_CHECK(strstr(nn_context_last_error(e->ctx), "nn_expand") && strstr(nn_context_last_error(e->ctx), "[3, 2]"), "message: %s",
                nn_context_last_error(e->ctx));
    }
    nn_graph_destroy(g);
    g = NULL;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        a = nn_input(g, "a", NN_F32, nn_shape2(3, 2));
        t = nn_expand(g, a, nn_shape1(2)); /* fewer dims than x */
        T_CHECK(t.id < 0 && nn_graph_status(g) == NN_ERR_SHAPE, "nn_expand [3, 2] to [2] did not fail");
    }
    nn_graph_destroy(g);
    g = NULL;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        a = nn_input(g, "a", NN_F32, nn_shape3(2, 1, 4));
        b = nn_input(g, "b", NN_F32, nn_shape2(3, 1));
        t = nn_where(g, nn_input(g, "c", NN_F32, nn_shape1(5)), a, b);
        T_CHECK(t.id < 0 && nn_graph_status(g) == NN_ERR_SHAPE, "nn_where with cond [5] against [2, 3, 4] did not fail");
        T_CHECK(strstr(nn_context_last_error(e->ctx), "nn_where") && strstr(nn_context_last_error(e->ctx), "cond [5]"), "message: %s",
                nn_context_last_error(e->ctx));
    }
    nn_graph_destroy(g);
    t_end();
}

/* Rank 0 through the shape ops and as the loss: squeeze([1]) is [], unsqueeze([]) is [1],
   [] broadcast with [2, 3] is [2, 3], and loss = r * r (rank 0) trains: d/dr at 3 is 6. */
static void rank0_cases(const t_env *e) {
    nn_graph *g = NULL;
    nn_tensor r, one, sq, un, b, loss;
    nn_compile_desc cd;
    nn_shape z, s;
    float v = 3.0f, gr = 0.0f, lv = 0.0f;
    if (!t_begin(e, "rank 0: squeeze, unsqueeze, broadcasting and a rank-0 loss")) return;
    memset(&z, 0, sizeof z);
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        r = nn_input(g, "r", NN_F32, z);
        one = nn_input(g, "one", NN_F32, nn_shape1(1));
        nn_graph_requires_grad(g, r);
        sq = nn_squeeze(g, one, 0);
        un = nn_unsqueeze(g, r, 0);
        b = nn_add(g, r, nn_input(g, "m", NN_F32, nn_shape2(2, 3)));
        loss = nn_mul(g, r, r);
        s = t_shape(g, sq);
        T_CHECK(sq.id > 0 && s.ndim == 0, "squeeze([1], 0): ndim %d", s.ndim);
        s = t_shape(g, un);
        T_CHECK(un.id > 0 && s.ndim == 1 && s.dim[0] == 1, "unsqueeze([], 0): ndim %d", s.ndim);
        s = t_shape(g, b);
        T_CHECK(b.id > 0 && s.ndim == 2 && s.dim[0] == 2 && s.dim[1] == 3, "[] + [2, 3]: ndim %d", s.ndim);
        s = t_shape(g, loss);
        T_CHECK(s.ndim == 0, "[] * []: ndim %d", s.ndim);
        nn_graph_output(g, loss);
        memset(&cd, 0, sizeof cd);
        cd.loss = loss;
        if (T_OK(nn_graph_compile(g, &cd), e->ctx) && T_OK(nn_tensor_write(g, r, &v, 4), e->ctx) &&
            T_OK(nn_graph_step(g), e->ctx) && T_OK(nn_tensor_read(g, loss, &lv, 4), e->ctx) &&
            T_OK(nn_tensor_read(g, nn_graph_grad(g, r), &gr, 4), e->ctx)) {
            T_CHECK(lv == 9.0f, "loss r * r at 3: %g, expected 9", (double)lv);
            T_CHECK(gr == 6.0f, "d(r * r)/dr at 3: %g, expected 6", (double)gr);
        }
    }
    nn_graph_destroy(g);
    t_end();
}

/* A row broadcast on its own, unfused (OpenCL's binary_row; the op checker's graphs fuse the
   op with their loss's product): a [7, 33] with b [33] and a [33] with b [7, 33], sub and
   div (the operands' order shows), against the same arithmetic on the host in float32; sub
   exactly, div within OpenCL's 2.5 ulp. */
static void row_bcast_cases(const t_env *e) {
    int op, arow, i;
    if (!t_begin(e, "elementwise: row broadcasts unfused, [7, 33] with [33] and [33] with [7, 33] (sub, div)")) return;
    for (op = 0; op < 2; op++)
        for (arow = 0; arow < 2; arow++) {
            nn_graph *g = NULL;
            nn_compile_desc cd;
            nn_tensor a, b, y;
            float A[7 * 33], B[7 * 33], Y[7 * 33];
            int na = arow ? 33 : 7 * 33, nb = arow ? 7 * 33 : 33;
            for (i = 0; i < na; i++) A[i] = (float)t_uniform(-2, 2);
            for (i = 0; i < nb; i++) B[i] = (float)t_uniform(0.5, 2);
            memset(&cd, 0, sizeof cd);
            if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
                a = nn_input(g, "a", NN_F32, arow ? nn_shape1(33) : nn_shape2(7, 33));
                b = nn_input(g, "b", NN_F32, arow ? nn_shape2(7, 33) : nn_shape1(33));
                y = op ? nn_div(g, a, b) : nn_sub(g, a, b);
                nn_graph_output(g, y);
                if (T_OK(t_compile_unfused(g, &cd), e->ctx) && T_OK(nn_tensor_write(g, a, A, (size_t)na * 4), e->ctx) &&
                    T_OK(nn_tensor_write(g, b, B, (size_t)nb * 4), e->ctx) && T_OK(nn_graph_forward(g), e->ctx) &&
                    T_OK(nn_tensor_read(g, y, Y, sizeof Y), e->ctx)) {
                    int bad = -1;
                    for (i = 0; i < 7 * 33 && bad < 0; i++) {
                        float u = A[arow ? i % 33 : i], w = B[arow ? i : i % 33], want = op ? u / w : u - w;
                        if (op ? fabsf(Y[i] - want) > 3e-7f * fabsf(want) : Y[i] != want) bad = i;
                    }
                    T_CHECK(bad < 0, "%s %s: element %d is %.9g, expected %.9g", op ? "div" : "sub",
                            arow ? "[33] with [7, 33]" : "[7, 33] with [33]", bad, bad < 0 ? 0.0 : (double)Y[bad],
                            bad < 0 ? 0.0
                                    : (double)(op ? A[arow ? bad % 33 : bad] / B[arow ? bad : bad % 33]
                                                  : A[arow ? bad % 33 : bad] - B[arow ? bad : bad % 33]));
                }
            }
            nn_graph_destroy(g);
        }
    t_end();
}

/* ==== NaN and infinity propagation (the op checker's expected-value mode: PyTorch's
   NaN, +-inf and values; the rules in tests/op_check.c) ==== */

/* ---- binary ops and scale ---- */

static nn_tensor b_add(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
    return nn_add(g, in[0], in[1]);
}
static nn_tensor b_sub(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
    return nn_sub(g, in[0], in[1]);
}
static nn_tensor b_scale_p(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_mul_scalar(g, in[0], s->p); }
static nn_tensor b_mul(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
    return nn_mul(g, in[0], in[1]);
}

/* a [4, 5] against b [5] (broadcast) or b [4, 5]: inf - inf, inf * 0, NaN + x */
static void nanprop_binary(const t_env *e) {
    double a[20], b[20], y[20], da[20], db[20];
    static const char *names[3][2] = {{"add a[4, 5] + b[5]", "add a[4, 5] + b[4, 5]"},
                                      {"sub a[4, 5] - b[5]", "sub a[4, 5] - b[4, 5]"},
                                      {"mul a[4, 5] * b[5]", "mul a[4, 5] * b[4, 5]"}};
    static const build_fn builds[3] = {b_add, b_sub, b_mul};
    int op, full, i;
    np_fill(a, 20, -2, 2, 21);
    np_fill(b, 20, -2, 2, 22);
    a[1] = NAN;
    a[7] = INFINITY;
    a[12] = INFINITY;
    a[13] = -INFINITY;
    a[19] = -INFINITY;
    b[2] = INFINITY;  /* a[7] - b[2]: inf - inf */
    b[3] = -INFINITY; /* a[13] + b[3]: -inf; a[13] - b[3]: NaN */
    b[4] = 0;         /* a[19] * b[4]: NaN */
    b[17] = NAN;
    for (op = 0; op < 3; op++)
        for (full = 0; full < 2; full++) {
            long nb = full ? 20 : 5;
            np_case c;
            for (i = 0; i < 20; i++) {
                double u = a[i], v = b[i % nb];
                y[i] = op == 0 ? u + v : op == 1 ? u - v : u * v;
                da[i] = op == 2 ? v : 1;
            }
            for (i = 0; i < nb; i++) {
                long r;
                db[i] = 0;
                for (r = i; r < 20; r += nb) db[i] += op == 0 ? 1 : op == 1 ? -1 : a[r];
            }
            np_init(&c, names[op][full], builds[op], NULL);
            np_in(&c, nn_shape2(4, 5), a, da);
            np_in(&c, full ? nn_shape2(4, 5) : nn_shape1(5), b, db);
            c.y_expect = y;
            np_run(e, &c);
        }
    {
        double x[8] = {NAN, INFINITY, -INFINITY, 1.5, -0.25, 0, INFINITY, 3};
        double y0[8], y2[8], d0[8], d2[8];
        np_case c;
        for (i = 0; i < 8; i++) {
            y0[i] = x[i] * 0.0; /* inf * 0: NaN */
            y2[i] = x[i] * -2.5;
            d0[i] = 0;
            d2[i] = -2.5;
        }
        np_init(&c, "scale by 0", b_scale_p, NULL);
        c.p = 0.0f;
        np_in(&c, nn_shape1(8), x, d0);
        c.y_expect = y0;
        np_run(e, &c);
        np_init(&c, "scale by -2.5", b_scale_p, NULL);
        c.p = -2.5f;
        np_in(&c, nn_shape1(8), x, d2);
        c.y_expect = y2;
        np_run(e, &c);
    }
}


/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- elementwise ---- */

B(e_add_shape, nn_add(g, F(g, S2(3, 4)), F(g, S2(4, 3))))
B(e_sub_rank, nn_sub(g, F(g, S2(3, 4)), F(g, S2(2, 4))))
B(e_mul_int, nn_mul(g, I(g, S2(2, 2)), F(g, S2(2, 2))))
B(e_scale_int, nn_mul_scalar(g, I(g, S1(5)), 2.0f))
B(e_relu_int, nn_relu(g, I(g, S1(5))))
B(e_gelu_none, nn_gelu(g, NN_NONE))
B(e_hardtanh_nan, nn_hardtanh(g, F(g, S1(3)), NAN, 1.0f))
B(e_softplus_neg0, nn_softplus(g, F(g, S1(3)), -0.0f, 20.0f))
B(e_prelu_size, nn_prelu(g, F(g, S3(2, 3, 4)), F(g, S1(2))))
B(e_prelu_rank, nn_prelu(g, F(g, S3(2, 3, 4)), F(g, S2(1, 3))))
B(e_prelu_int, nn_prelu(g, F(g, S3(2, 3, 4)), I(g, S1(3))))
B(e_prelu_xint, nn_prelu(g, I(g, S3(2, 3, 4)), F(g, S1(3))))
B(e_prelu_layer_n, nn_prelu_layer(g, F(g, S3(2, 3, 4)), 0, NULL, "act"))
B(e_prelu_layer_c, nn_prelu_layer(g, F(g, S3(2, 3, 4)), 5, NULL, "act"))
B(e_prelu_layer_name, nn_prelu_layer(g, F(g, S3(2, 3, 4)), 1, NULL, ""))
B(e_dropout_neg, nn_dropout(g, F(g, S1(4)), -0.1f))
B(e_dropout_one, nn_dropout(g, F(g, S1(4)), 1.0f))
B(e_dropout_nan, nn_dropout(g, F(g, S1(4)), NAN))
B(e_dropout_int, nn_dropout(g, I(g, S1(4)), 0.5f))
B(e_accumulate_int, nn_accumulate(g, I(g, S1(4))))

static const bad_row elementwise_bad[] = {
    {"elementwise", "add [3, 4] + [4, 3]", e_add_shape, R_SHAPE, "nn_add|[3, 4]|[4, 3]", 0},
    {"elementwise", "sub [3, 4] - [2, 4] (3 against 2 does not broadcast)", e_sub_rank, R_SHAPE, "nn_sub|[3, 4]|[2, 4]", 0},
    {"elementwise", "mul of int32", e_mul_int, R_SHAPE, "nn_mul|int32", 0},
    {"elementwise", "scale of int32", e_scale_int, R_SHAPE, "nn_mul_scalar|int32", 0},
    {"elementwise", "relu of int32", e_relu_int, R_SHAPE, "nn_relu|int32", 0},
    {"elementwise", "gelu of NN_NONE", e_gelu_none, R_INV, "nn_gelu|NN_NONE", 0},
    {"elementwise", "hardtanh min NaN", e_hardtanh_nan, R_INV, "nn_hardtanh|nan", 0},
    {"elementwise", "softplus beta -0", e_softplus_neg0, R_INV, "nn_softplus|p0 = -0", 0},
    {"elementwise", "prelu weight [2] for 3 channels", e_prelu_size, R_SHAPE, "nn_prelu|[2]|[2, 3, 4]", 0},
    {"elementwise", "prelu weight [1, 3]", e_prelu_rank, R_SHAPE, "nn_prelu|[1, 3]", 0},
    {"elementwise", "prelu weight int32", e_prelu_int, R_SHAPE, "nn_prelu|weight|int32", 0},
    {"elementwise", "prelu of int32", e_prelu_xint, R_SHAPE, "nn_prelu|x|int32", 0},
    {"elementwise", "prelu_layer num_parameters 0", e_prelu_layer_n, R_INV, "nn_prelu_layer|num_parameters = 0", 0},
    {"elementwise", "prelu_layer num_parameters 5 for 3 channels", e_prelu_layer_c, R_SHAPE, "nn_prelu|[5]|[3]", 0},
    {"elementwise", "prelu_layer name \"\"", e_prelu_layer_name, R_INV, "nn_prelu_layer|name", 0},
    {"elementwise", "dropout p -0.1", e_dropout_neg, R_INV, "nn_dropout|-0.1", 0},
    {"elementwise", "dropout p 1", e_dropout_one, R_INV, "nn_dropout|p = 1 ", 0},
    {"elementwise", "dropout p NaN", e_dropout_nan, R_INV, "nn_dropout|nan", 0},
    {"elementwise", "dropout of int32", e_dropout_int, R_SHAPE, "nn_dropout|int32", 0},
    {"elementwise", "accumulate of int32", e_accumulate_int, R_SHAPE, "nn_accumulate|int32", 0},
};

/* ---- add, sub, mul (same shape, a bias, a scalar) and scale through the op checker ---- */

static void r_binary(const spec *s, double *const *in, double *out, int op) {
    long n = numel(s->shape[0]), nb = numel(s->shape[1]), i;
    for (i = 0; i < n; i++) {
        double a = in[0][i], b = in[1][i % nb];
        out[i] = op == 0 ? a + b : op == 1 ? a - b : a * b;
    }
}
static void r_add(const spec *s, double *const *in, double *out) { r_binary(s, in, out, 0); }
static void r_sub(const spec *s, double *const *in, double *out) { r_binary(s, in, out, 1); }
static void r_mul(const spec *s, double *const *in, double *out) { r_binary(s, in, out, 2); }

static void r_scale(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++) out[i] = in[0][i] * (double)s->p;
}


static void arith_cases(const t_env *e) {
    static const t_odd scale[] = {{"scale", b_scale_p, r_scale, 0, -0.37f}};
    char name[96];
    int j;
    spec s;
    t_odd_cases(e, scale, 1);
    for (j = 0; j < 3; j++) {
        static const char *nm[3] = {"add", "sub", "mul"};
        static const build_fn bb[3] = {b_add, b_sub, b_mul};
        static const ref_fn rr[3] = {r_add, r_sub, r_mul};
        int v;
        for (v = 0; v < 3; v++) { /* same shape, a bias [33], a scalar [1] */
            nn_shape bs = v == 0 ? nn_shape3(3, 7, 33) : v == 1 ? nn_shape1(33) : nn_shape1(1);
            snprintf(name, sizeof name, "%s [3, 7, 33] with %s", nm[j], v == 0 ? "[3, 7, 33]" : v == 1 ? "[33]" : "[1]");
            s = mk(name, bb[j], rr[j], nn_shape3(3, 7, 33));
            in_f(&s, nn_shape3(3, 7, 33));
            in_f(&s, bs);
            check_case(e, &s);
        }
    }
}

void suite_elementwise(const t_env *e) {
    T_RUN(e, rank0_cases, binary_cases, unary_cases, select_cases, exact_cases, gradient_stop_cases, thread_cases,
          error_cases, nanprop_binary, row_bcast_cases);
    t_bad_rows(e, elementwise_bad, (int)(sizeof elementwise_bad / sizeof elementwise_bad[0]));
    arith_cases(e);
}
