/* Every op of the foundation, through the op checker (tests/op_check.c). Shapes are odd on
   purpose (1, 3, 7, 33, 129). */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- builders and double references ---- */

static nn_tensor b_add(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_add(g, in[0], in[1]); }
static nn_tensor b_sub(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_sub(g, in[0], in[1]); }
static nn_tensor b_mul(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_mul(g, in[0], in[1]); }
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

static nn_tensor b_scale(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_scale(g, in[0], s->p); }
static void r_scale(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++) out[i] = in[0][i] * (double)s->p;
}

static nn_tensor b_relu(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_relu(g, in[0]); }
static nn_tensor b_leaky(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_leaky_relu(g, in[0], s->p); }
static nn_tensor b_sigmoid(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_sigmoid(g, in[0]); }
static nn_tensor b_tanh(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_tanh(g, in[0]); }
static nn_tensor b_gelu(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_gelu(g, in[0]); }
static nn_tensor b_silu(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_silu(g, in[0]); }
#define UNARY_REF(NAME, EXPR)                                                  \
    static void NAME(const spec *s, double *const *in, double *out) {          \
        long i, n = numel(s->out);                                             \
        double p = s->p;                                                       \
        (void)p;                                                               \
        for (i = 0; i < n; i++) { double v = in[0][i]; out[i] = (EXPR); }     \
    }
UNARY_REF(r_relu, v > 0 ? v : 0)
UNARY_REF(r_leaky, v > 0 ? v : p * v)
UNARY_REF(r_sigmoid, 1 / (1 + exp(-v)))
UNARY_REF(r_tanh, tanh(v))
UNARY_REF(r_gelu, 0.5 * v * (1 + erf(v / sqrt(2.0))))
UNARY_REF(r_silu, v / (1 + exp(-v)))

static nn_tensor b_sum(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_sum(g, in[0]); }
static nn_tensor b_mean(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_mean(g, in[0]); }
static void r_sum(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) out[0] += in[0][i];
}
static void r_mean(const spec *s, double *const *in, double *out) {
    r_sum(s, in, out);
    out[0] /= (double)numel(s->shape[0]);
}

static nn_tensor b_xent(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_softmax_cross_entropy(g, in[0], in[1]); }
static void r_xent(const spec *s, double *const *in, double *out) {
    long B = s->shape[0].dim[0], C = s->shape[0].dim[1], b, c;
    double total = 0;
    for (b = 0; b < B; b++) {
        const double *x = in[0] + b * C;
        long t = (long)in[1][b];
        double m = x[0], sum = 0;
        if (t < 0 || t >= C) continue; /* never here: such labels are errors (tests/test_api.c) */
        for (c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
        for (c = 0; c < C; c++) sum += exp(x[c] - m);
        total += log(sum) + m - x[t];
    }
    out[0] = total / (double)B;
}

static nn_tensor b_mse(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_mse(g, in[0], in[1]); }
static void r_mse(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) out[0] += (in[0][i] - in[1][i]) * (in[0][i] - in[1][i]);
    out[0] /= (double)n;
}

static nn_tensor b_bce(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_bce_with_logits(g, in[0], in[1]); }
static void r_bce(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) { /* -[t log sigmoid(x) + (1-t) log(1 - sigmoid(x))] */
        double x = in[0][i], t = in[1][i], sg = 1 / (1 + exp(-x));
        out[0] += -(t * log(sg) + (1 - t) * log(1 - sg));
    }
    out[0] /= (double)n;
}

static nn_tensor b_gather(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_gather_rows(g, in[0], in[1]); }
static void r_gather(const spec *s, double *const *in, double *out) {
    long N = s->shape[0].dim[0], D = numel(s->shape[0]) / N, B = s->shape[1].dim[0], b, j;
    for (b = 0; b < B; b++) {
        long r = (long)in[1][b];
        for (j = 0; j < D; j++) out[b * D + j] = (r >= 0 && r < N) ? in[0][r * D + j] : 0.0;
    }
}

static nn_tensor b_dense(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return nn_add(g, nn_matmul(g, in[0], in[1], 0, 1), in[2]);
}
static void r_dense(const spec *s, double *const *in, double *out) {
    long B = s->shape[0].dim[0], I = s->shape[0].dim[1], O = s->shape[1].dim[0], b, o, i;
    for (b = 0; b < B; b++)
        for (o = 0; o < O; o++) {
            double acc = in[2][o];
            for (i = 0; i < I; i++) acc += in[0][b * I + i] * in[1][o * I + i];
            out[b * O + o] = acc;
        }
}

/* The dropout reference: the mask of element i is keyed by (graph seed, the dropout
   tensor's id, step) through the test's own Philox (t_philox). */
static int dropout_id;
static nn_tensor b_dropout(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor t = nn_dropout(g, in[0], s->p);
    dropout_id = t.id;
    return t;
}
static void r_dropout(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++) {
        unsigned c[4];
        double u;
        c[0] = (unsigned)i;
        c[1] = (unsigned)dropout_id;
        c[2] = 1; /* the first step */
        c[3] = 0;
        t_philox(c, 1234u, 0u);
        u = (double)(c[0] >> 8) / 16777216.0;
        out[i] = u >= s->p ? in[0][i] / (1.0 - (double)(float)s->p) : 0.0;
    }
}


/* ---- the cases ---- */



void suite_ops(const t_env *e) {
    static const struct { const char *name; build_fn b; ref_fn r; float p; double lo, hi; } unary[] = {
        {"relu", b_relu, r_relu, 0, -2, 2},       {"leaky_relu", b_leaky, r_leaky, 0.1f, -2, 2},
        {"sigmoid", b_sigmoid, r_sigmoid, 0, -6, 6}, {"tanh", b_tanh, r_tanh, 0, -3, 3},
        {"gelu", b_gelu, r_gelu, 0, -4, 4},       {"silu", b_silu, r_silu, 0, -6, 6},
        {"scale", b_scale, r_scale, -0.37f, -2, 2},
    };
    static const int odd[][2] = {{7, 33}, {1, 129}, {129, 3}};
    char name[96];
    int k, j;
    spec s;
    for (k = 0; k < (int)(sizeof unary / sizeof unary[0]); k++)
        for (j = 0; j < 3; j++) {
            snprintf(name, sizeof name, "%s [%d, %d]", unary[k].name, odd[j][0], odd[j][1]);
            s = mk(name, unary[k].b, unary[k].r, nn_shape2(odd[j][0], odd[j][1]));
            s.p = unary[k].p;
            s.lo = unary[k].lo;
            s.hi = unary[k].hi;
            in_f(&s, s.out);
            check_case(e, &s);
        }
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
    for (j = 0; j < 3; j++) {
        nn_shape sh = nn_shape2(odd[j][0], odd[j][1]);
        snprintf(name, sizeof name, "sum [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_sum, r_sum, nn_shape1(1));
        in_f(&s, sh);
        check_case(e, &s);
        snprintf(name, sizeof name, "mean [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_mean, r_mean, nn_shape1(1));
        in_f(&s, sh);
        check_case(e, &s);
        snprintf(name, sizeof name, "softmax_cross_entropy [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_xent, r_xent, nn_shape1(1));
        s.lo = -4;
        s.hi = 4;
        in_f(&s, sh);
        in_i(&s, nn_shape1(odd[j][0]), 0, odd[j][1]);
        check_case(e, &s);
        snprintf(name, sizeof name, "mse [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_mse, r_mse, nn_shape1(1));
        in_f(&s, sh);
        in_f(&s, sh);
        check_case(e, &s);
        snprintf(name, sizeof name, "bce_with_logits [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_bce, r_bce, nn_shape1(1));
        s.lo = -5;
        s.hi = 5;
        in_f(&s, sh);
        in_f(&s, sh); /* targets in [0, 1) after the range below */
        s.lo = -3;
        s.hi = 3;
        check_case(e, &s);
        snprintf(name, sizeof name, "dropout p=0.3 [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_dropout, r_dropout, sh);
        s.p = 0.3f;
        in_f(&s, sh);
        check_case(e, &s);
    }
    s = mk("gather_rows [33, 7] by [129]", b_gather, r_gather, nn_shape2(129, 7));
    in_f(&s, nn_shape2(33, 7));
    in_i(&s, nn_shape1(129), -2, 35); /* some out of range: zero rows */
    check_case(e, &s);
    s = mk("gather_rows [3, 2, 5] by [1]", b_gather, r_gather, nn_shape3(1, 2, 5));
    in_f(&s, nn_shape3(3, 2, 5));
    in_i(&s, nn_shape1(1), 0, 3);
    check_case(e, &s);
    s = mk("dense [7, 33] -> 129", b_dense, r_dense, nn_shape2(7, 129));
    in_f(&s, nn_shape2(7, 33));
    in_f(&s, nn_shape2(129, 33));
    in_f(&s, nn_shape1(129));
    check_case(e, &s);
}
