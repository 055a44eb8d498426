/* The activations of kernels/activation.h and PReLU, each against a double-precision reference
   written here from PyTorch's definition (not from the code under test):
   - the op checker (tests/op_check.c) at shapes [1], [7, 33] and [3, 127]: forward within
     1e-4 relative, gradients within 1e-4 relative of central differences of the
     reference, and on OpenCL devices CPU vs OpenCL within 1e-4 relative; inputs are kept
     KINK_GAP away from every kink, where no finite difference holds;
   - the kinks themselves and points beside them: forward and derivative against the
     reference's, which makes PyTorch's choices at the kinks (hardtanh's gradient is 0 at
     its bounds, hardswish's is -0.5 and 1.5 at -3 and 3, ...), within 1e-4 relative with a
     floor of 1e-3 (sigmoid's s * (1 - s) and GELU's 1 + erf(x / sqrt 2), PyTorch's
     formulas, lose about 2e-5 to cancellation in float in their tails). */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXACT_TOL 1e-4
#define KINK_GAP 1e-3

/* One activation: its builder, its forward and derivative in double (p: the parameters). */
#define ACT(ID, BUILD, FWD, DER)                                                                 \
    static nn_tensor b_##ID(nn_graph *g, nn_tensor x, const float *p) {                         \
        (void)p;                                                                                 \
        return BUILD;                                                                            \
    }                                                                                            \
    static double f_##ID(double v, const double *p) {                                            \
        (void)p;                                                                                 \
        return FWD;                                                                              \
    }                                                                                            \
    static double d_##ID(double v, const double *p) {                                            \
        (void)p;                                                                                 \
        return DER;                                                                              \
    }

/* The references, written to PyTorch's definitions so that they hold at NaN and +-inf too
   (the NaN rows below use them): comparisons put NaN in the propagating branch. */
static double sigm(double v) { return 1 / (1 + exp(-v)); }
static double np_clamp(double v, double lo, double hi) { return isnan(v) ? v : v < lo ? lo : v > hi ? hi : v; }
#define SELU_A 1.6732632423543772848170429916717
#define SELU_S 1.0507009873554804934193349852946
/* relu: clamp_min(x, 0) keeps NaN; threshold_backward: 0 where x <= 0, else dy (NaN too) */
ACT(relu, nn_relu(g, x), isnan(v) ? v : v > 0 ? v : 0, v <= 0 ? 0 : 1)
ACT(leaky_relu, nn_leaky_relu(g, x, p[0]), v > 0 ? v : p[0] * v, v > 0 ? 1 : p[0])
ACT(sigmoid, nn_sigmoid(g, x), sigm(v), sigm(v) * (1 - sigm(v)))
ACT(tanh, nn_tanh(g, x), tanh(v), 1 - tanh(v) * tanh(v))
/* -inf * 0 at -inf: NaN, as PyTorch's x * 0.5 * (1 + erf(x / sqrt 2)) */
ACT(gelu, nn_gelu(g, x), 0.5 * v * (1 + erf(v / sqrt(2.0))),
    0.5 * (1 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) / sqrt(2 * 3.14159265358979323846))
/* approximate="tanh": PyTorch's formula; at -inf 0.5 x (1 + tanh) is -inf * 0, NaN; its
   derivative at +-inf has (1 - t^2) * x^2 = 0 * inf, NaN */
#define GT_U(v) (sqrt(2 / 3.14159265358979323846) * ((v) + 0.044715 * (v) * (v) * (v)))
ACT(gelu_tanh, nn_gelu_tanh(g, x), 0.5 * v * (1 + tanh(GT_U(v))),
    0.5 * (1 + tanh(GT_U(v))) +
        0.5 * v * (1 - tanh(GT_U(v)) * tanh(GT_U(v))) * sqrt(2 / 3.14159265358979323846) * (1 + 3 * 0.044715 * v * v))
ACT(silu, nn_silu(g, x), v / (1 + exp(-v)), sigm(v) * (1 + v * (1 - sigm(v))))
/* ELU family at NaN: the vectorised backward's NaN (the scalar one gives dy) */
ACT(elu, nn_elu(g, x, p[0]), v > 0 ? v : p[0] * expm1(v), v > 0 ? 1 : p[0] * exp(v))
ACT(selu, nn_selu(g, x), SELU_S * (v > 0 ? v : SELU_A * expm1(v)), SELU_S * (v > 0 ? 1 : SELU_A * exp(v)))
ACT(celu, nn_celu(g, x, p[0]), v > 0 ? v : p[0] * expm1(v / p[0]), v > 0 ? 1 : exp(v / p[0]))
ACT(softplus, nn_softplus(g, x, p[0], p[1]), v * p[0] > p[1] ? v : log1p(exp(v * p[0])) / p[0],
    v * p[0] > p[1] ? 1 : sigm(v * p[0]))
ACT(mish, nn_mish(g, x), v * tanh(log1p(exp(v))),
    tanh(log1p(exp(v))) + v * sigm(v) * (1 - tanh(log1p(exp(v))) * tanh(log1p(exp(v)))))
/* hardswish: x * clamp(x + 3, 0, 6) / 6 (-inf * 0: NaN); its gradient at NaN is the scalar
   kernel's dy (the vectorised one gives NaN) */
ACT(hardswish, nn_hardswish(g, x), v * np_clamp(v + 3, 0, 6) / 6, v < -3 ? 0 : v <= 3 ? v / 3 + 0.5 : 1)
ACT(hardsigmoid, nn_hardsigmoid(g, x), np_clamp(v + 3, 0, 6) / 6, v > -3 && v < 3 ? 1.0 / 6 : 0)
/* hardtanh and relu6 at NaN: the scalar kernel's dy (the vectorised one gives 0) */
ACT(hardtanh, nn_hardtanh(g, x, p[0], p[1]), np_clamp(v, p[0], p[1]), v <= p[0] || v >= p[1] ? 0 : 1)
ACT(relu6, nn_relu6(g, x), np_clamp(v, 0, 6), v <= 0 || v >= 6 ? 0 : 1)
/* softsign is composite in PyTorch, x / (1 + |x|): inf / inf is NaN, and so is its autograd
   1 / (1 + |x|) - x sign(x) / (1 + |x|)^2 at +-inf */
ACT(softsign, nn_softsign(g, x), v / (1 + fabs(v)), 1 / (1 + fabs(v)) - v * (v > 0 ? 1 : v < 0 ? -1 : 0) / ((1 + fabs(v)) * (1 + fabs(v))))
ACT(log_sigmoid, nn_log_sigmoid(g, x), (v < 0 ? v : 0) - log1p(exp(-fabs(v))), sigm(-v))


typedef struct act_case {
    const char *name;
    nn_tensor (*build)(nn_graph *g, nn_tensor x, const float *p);
    double (*f)(double v, const double *p);
    double (*d)(double v, const double *p);
    float p[2];          /* the parameters */
    double lo, hi;       /* random inputs uniform in [lo, hi) */
    int n_kinks;
    double kinks[3];     /* where the derivative jumps (or the formula switches) */
} act_case;

static const act_case acts[] = {
    {"relu", b_relu, f_relu, d_relu, {0, 0}, -2, 2, 1, {0}},
    {"leaky_relu 0.1", b_leaky_relu, f_leaky_relu, d_leaky_relu, {0.1f, 0}, -2, 2, 1, {0}},
    {"sigmoid", b_sigmoid, f_sigmoid, d_sigmoid, {0, 0}, -6, 6, 0, {0}},
    {"tanh", b_tanh, f_tanh, d_tanh, {0, 0}, -3, 3, 0, {0}},
    {"gelu", b_gelu, f_gelu, d_gelu, {0, 0}, -3, 3, 0, {0}}, /* float's 1 + erf(x/sqrt 2) below -3: 2e-4 */
    {"gelu_tanh", b_gelu_tanh, f_gelu_tanh, d_gelu_tanh, {0, 0}, -3, 3, 0, {0}}, /* float's 1 + tanh(u) below -3, as gelu's */
    {"silu", b_silu, f_silu, d_silu, {0, 0}, -6, 6, 0, {0}},
    {"elu 1", b_elu, f_elu, d_elu, {1.0f, 0}, -5, 3, 1, {0}},
    {"elu 0.7", b_elu, f_elu, d_elu, {0.7f, 0}, -5, 3, 1, {0}},
    {"selu", b_selu, f_selu, d_selu, {0, 0}, -5, 3, 1, {0}},
    {"celu 1", b_celu, f_celu, d_celu, {1.0f, 0}, -5, 3, 1, {0}},
    {"celu 1.7", b_celu, f_celu, d_celu, {1.7f, 0}, -6, 3, 1, {0}},
    {"celu 0.4", b_celu, f_celu, d_celu, {0.4f, 0}, -3, 3, 1, {0}},
    {"softplus 1 20", b_softplus, f_softplus, d_softplus, {1, 20}, -30, 30, 1, {20}},
    {"softplus 2 3", b_softplus, f_softplus, d_softplus, {2, 3}, -4, 4, 1, {1.5}},
    {"softplus 0.5 5", b_softplus, f_softplus, d_softplus, {0.5f, 5}, -10, 16, 1, {10}},
    {"softplus -1 20", b_softplus, f_softplus, d_softplus, {-1, 20}, -30, 30, 1, {-20}},
    {"mish", b_mish, f_mish, d_mish, {0, 0}, -8, 8, 0, {0}},
    {"hardswish", b_hardswish, f_hardswish, d_hardswish, {0, 0}, -5, 5, 2, {-3, 3}},
    {"hardsigmoid", b_hardsigmoid, f_hardsigmoid, d_hardsigmoid, {0, 0}, -5, 5, 2, {-3, 3}},
    {"hardtanh -1 1", b_hardtanh, f_hardtanh, d_hardtanh, {-1, 1}, -3, 3, 2, {-1, 1}},
    {"hardtanh -0.5 1.5", b_hardtanh, f_hardtanh, d_hardtanh, {-0.5f, 1.5f}, -3, 3, 2, {-0.5, 1.5}},
    {"relu6", b_relu6, f_relu6, d_relu6, {0, 0}, -3, 9, 2, {0, 6}},
    {"softsign", b_softsign, f_softsign, d_softsign, {0, 0}, -5, 5, 0, {0}},
    {"log_sigmoid", b_log_sigmoid, f_log_sigmoid, d_log_sigmoid, {0, 0}, -10, 10, 0, {0}},
};
#define N_ACTS ((int)(sizeof acts / sizeof acts[0]))

/* Parameters a builder refuses: an error that names it, rather than NaN later. */
static nn_tensor bad_celu(nn_graph *g, nn_tensor x) { return nn_celu(g, x, 0.0f); }
static nn_tensor bad_softplus(nn_graph *g, nn_tensor x) { return nn_softplus(g, x, 0.0f, 20.0f); }
static nn_tensor bad_hardtanh(nn_graph *g, nn_tensor x) { return nn_hardtanh(g, x, 1.0f, -1.0f); }
static const struct {
    const char *builder;
    nn_tensor (*build)(nn_graph *g, nn_tensor x);
} refused[] = {
    {"nn_celu", bad_celu},
    {"nn_softplus", bad_softplus},
    {"nn_hardtanh", bad_hardtanh},
};

static void params(const act_case *a, double *p) {
    p[0] = a->p[0];
    p[1] = a->p[1];
}

/* ---- the op checker's build, reference and input fill; s->ip[0] is the case ---- */

static nn_tensor act_build(nn_graph *g, const nn_tensor *in, const spec *s) { return acts[s->ip[0]].build(g, in[0], acts[s->ip[0]].p); }

static void act_ref(const spec *s, double *const *in, double *out) {
    const act_case *a = &acts[s->ip[0]];
    long i, n = numel(s->out);
    double p[2];
    params(a, p);
    for (i = 0; i < n; i++) out[i] = a->f(in[0][i], p);
}

/* Moves inputs within KINK_GAP of a kink to KINK_GAP from it (on the side they were). */
static void act_fill(const spec *s, double *const *in) {
    const act_case *a = &acts[s->ip[0]];
    long i, n = numel(s->shape[0]);
    int k;
    for (i = 0; i < n; i++)
        for (k = 0; k < a->n_kinks; k++)
            if (fabs(in[0][i] - a->kinks[k]) < KINK_GAP)
                in[0][i] = (double)(float)(a->kinks[k] + (in[0][i] < a->kinks[k] ? -KINK_GAP : KINK_GAP));
}

/* Each kink, KINK_GAP and 0.25 either side of it, and a few points of the range: forward
   and derivative (the gradient of sum(y)) against the reference on e's backend. */
static void act_exact(const t_env *e, const act_case *a) {
    float x[64], y[64], dx[64];
    double p[2], fr, dr;
    int n = 0, k, j;
    char label[160];
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor in, out;
    snprintf(label, sizeof label, "activation %s: kinks and values", a->name);
    if (!t_begin(e, label)) return;
    params(a, p);
    for (k = 0; k < a->n_kinks; k++) {
        static const double off[5] = {0, -KINK_GAP, KINK_GAP, -0.25, 0.25};
        for (j = 0; j < 5; j++) x[n++] = (float)(a->kinks[k] + off[j]);
    }
    for (j = 0; j <= 8; j++) x[n++] = (float)(a->lo + (a->hi - a->lo) * j / 8.0);
    x[n++] = 0.0f;
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
    if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) goto done;
    in = nn_input(g, "x", NN_F32, nn_shape1(n));
    nn_graph_requires_grad(g, in);
    out = a->build(g, in, a->p);
    nn_graph_output(g, out);
    cd.loss = nn_sum(g, out);
    if (!T_OK(nn_graph_compile(g, &cd), e->ctx) || !T_OK(nn_tensor_write(g, in, x, sizeof(float) * (size_t)n), e->ctx) ||
        !T_OK(nn_graph_step(g), e->ctx) || !T_OK(nn_tensor_read(g, out, y, sizeof(float) * (size_t)n), e->ctx) ||
        !T_OK(nn_tensor_read(g, nn_graph_grad(g, in), dx, sizeof(float) * (size_t)n), e->ctx))
        goto done;
    for (j = 0; j < n; j++) {
        fr = a->f(x[j], p);
        dr = a->d(x[j], p);
        T_CHECK(fabs(y[j] - fr) <= EXACT_TOL * (fabs(fr) + 1e-3), "%s(%.9g) = %.9g, expected %.9g", a->name, x[j], y[j], fr);
        T_CHECK(fabs(dx[j] - dr) <= EXACT_TOL * (fabs(dr) + 1e-3), "%s'(%.9g) = %.9g, expected %.9g", a->name, x[j], dx[j],
                dr);
    }
done:
    nn_graph_destroy(g);
    t_end();
}

static void act_refused(const t_env *e) {
    int k;
    if (!t_begin(e, "activation parameters outside their domain")) return;
    for (k = 0; k < (int)(sizeof refused / sizeof refused[0]); k++) {
        nn_graph *g = NULL;
        nn_graph_desc gd;
        nn_tensor t;
        memset(&gd, 0, sizeof gd);
        if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) break;
        t = refused[k].build(g, nn_input(g, "x", NN_F32, nn_shape1(3)));
        T_CHECK(t.id < 0 && nn_graph_status(g) == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(e->ctx), refused[k].builder),
                "%s: not refused (%s)", refused[k].builder, nn_context_last_error(e->ctx));
        nn_graph_destroy(g);
    }
    t_end();
}

/* ---- PReLU: x [N, C, ...] with weight [C] (channels: dim 1) or [1] ---- */

static nn_tensor b_prelu(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return nn_prelu(g, in[0], in[1]);
}

static void r_prelu(const spec *s, double *const *in, double *out) {
    long n = numel(s->shape[0]), W = numel(s->shape[1]), i;
    long S = W > 1 ? n / ((long)s->shape[0].dim[0] * W) : 1; /* elements per channel and sample */
    for (i = 0; i < n; i++) {
        double v = in[0][i], w = in[1][W > 1 ? (i / S) % W : 0];
        out[i] = v > 0 ? v : w * v;
    }
}

/* x kept KINK_GAP from 0; slopes in [-0.15, 0.65) */
static void prelu_fill(const spec *s, double *const *in) {
    long i, n = numel(s->shape[0]);
    for (i = 0; i < n; i++)
        if (fabs(in[0][i]) < KINK_GAP) in[0][i] = in[0][i] < 0 ? -KINK_GAP : KINK_GAP;
    for (i = 0; i < numel(s->shape[1]); i++) in[1][i] = (double)(float)(0.25 + 0.2 * in[1][i]);
}

/* Builds sum(prelu(x, w)) on e's backend and returns its value, dx and dw (NULL: not read). */
static int prelu_run(const t_env *e, nn_shape xs, nn_shape ws, const float *x, const float *w, float *y, float *dx,
                     float *dw) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor tx, tw, out;
    int ok = 0;
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
    if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) return 0;
    tx = nn_input(g, "x", NN_F32, xs);
    tw = nn_input(g, "w", NN_F32, ws);
    nn_graph_requires_grad(g, tx);
    nn_graph_requires_grad(g, tw);
    out = nn_prelu(g, tx, tw);
    nn_graph_output(g, out);
    cd.loss = nn_sum(g, out);
    ok = T_OK(nn_graph_compile(g, &cd), e->ctx) && T_OK(nn_tensor_write(g, tx, x, 4 * (size_t)numel(xs)), e->ctx) &&
         T_OK(nn_tensor_write(g, tw, w, 4 * (size_t)numel(ws)), e->ctx) && T_OK(nn_graph_step(g), e->ctx) &&
         (!y || T_OK(nn_tensor_read(g, out, y, 4 * (size_t)numel(xs)), e->ctx)) &&
         (!dx || T_OK(nn_tensor_read(g, nn_graph_grad(g, tx), dx, 4 * (size_t)numel(xs)), e->ctx)) &&
         (!dw || T_OK(nn_tensor_read(g, nn_graph_grad(g, tw), dw, 4 * (size_t)numel(ws)), e->ctx));
    nn_graph_destroy(g);
    return ok;
}

/* At x = 0 PyTorch's PReLU gives dx = w and adds nothing to dw; beside it, the two sides. */
static void prelu_exact(const t_env *e) {
    static const float x[12] = {0.0f, -0.0f, 1e-3f, -1e-3f, 2.0f, -3.0f, 0.0f, 0.5f, -0.25f, -1.5f, 0.0f, 4.0f};
    static const float w[2] = {0.25f, -0.4f};
    float y[12], dx[12], dw[2];
    double dwr[2] = {0, 0};
    int i;
    if (!t_begin(e, "prelu: the kink at 0, forward and both gradients")) return;
    if (prelu_run(e, nn_shape3(3, 2, 2), nn_shape1(2), x, w, y, dx, dw)) {
        for (i = 0; i < 12; i++) {
            double wc = w[(i / 2) % 2], yr = x[i] > 0 ? x[i] : wc * x[i], dr = x[i] > 0 ? 1 : wc;
            if (!(x[i] > 0)) dwr[(i / 2) % 2] += x[i];
            T_CHECK(fabs(y[i] - yr) <= 1e-7 * (1 + fabs(yr)), "prelu(%g) = %.9g, expected %.9g", x[i], y[i], yr);
            T_CHECK(fabs(dx[i] - dr) <= 1e-7 * (1 + fabs(dr)), "prelu'(%g) = %.9g, expected %.9g", x[i], dx[i], dr);
        }
        for (i = 0; i < 2; i++)
            T_CHECK(fabs(dw[i] - dwr[i]) <= 1e-6 * (1 + fabs(dwr[i])), "dw[%d] = %.9g, expected %.9g", i, dw[i], dwr[i]);
    }
    t_end();
}

/* The weight gradient is a reduction over 8 * 33 * 31 elements per channel: two runs give
   the same bits (a fixed order, no atomics). */
static void prelu_deterministic(const t_env *e) {
    nn_shape xs = nn_shape4(8, 5, 33, 31);
    long n = numel(xs), i;
    float *x, w[5], dw1[5], dw2[5];
    if (!t_begin(e, "prelu: the weight gradient is the same bits every run")) return;
    x = (float *)malloc(4 * (size_t)n);
    t_seed(77);
    for (i = 0; i < n; i++) x[i] = (float)t_uniform(-2, 2);
    for (i = 0; i < 5; i++) w[i] = (float)t_uniform(0, 0.5);
    if (prelu_run(e, xs, nn_shape1(5), x, w, NULL, NULL, dw1) && prelu_run(e, xs, nn_shape1(5), x, w, NULL, NULL, dw2))
        T_CHECK(memcmp(dw1, dw2, sizeof dw1) == 0, "dw differs between runs: %.9g vs %.9g", dw1[0], dw2[0]);
    free(x);
    t_end();
}

/* nn_prelu_layer makes NAME.weight [num_parameters] of 0.25, as nn.PReLU. */
static void prelu_layer(const t_env *e) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y, w;
    float wv[7], xv[3 * 7 * 5], yv[3 * 7 * 5];
    int i;
    if (!t_begin(e, "prelu_layer: NAME.weight [C] initialised to 0.25")) return;
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
    if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) {
        t_end();
        return;
    }
    x = nn_input(g, "x", NN_F32, nn_shape3(3, 7, 5));
    y = nn_prelu_layer(g, x, 7, NULL, "act");
    nn_graph_output(g, y);
    w = nn_graph_find(g, "act.weight");
    if (T_CHECK(y.id > 0 && w.id > 0, "no layer: %s", nn_context_last_error(e->ctx)) && T_OK(nn_graph_compile(g, &cd), e->ctx)) {
        for (i = 0; i < 3 * 7 * 5; i++) xv[i] = (float)(i % 11) - 5.0f;
        if (T_OK(nn_tensor_read(g, w, wv, sizeof wv), e->ctx) && T_OK(nn_tensor_write(g, x, xv, sizeof xv), e->ctx) &&
            T_OK(nn_graph_forward(g), e->ctx) && T_OK(nn_tensor_read(g, y, yv, sizeof yv), e->ctx)) {
            for (i = 0; i < 7; i++) T_CHECK(wv[i] == 0.25f, "act.weight[%d] = %g", i, wv[i]);
            for (i = 0; i < 3 * 7 * 5; i++)
                T_CHECK(yv[i] == (xv[i] > 0 ? xv[i] : 0.25f * xv[i]), "y[%d] = %g for x %g", i, yv[i], xv[i]);
        }
    }
    nn_graph_destroy(g);
    t_end();
}

/* Shapes PReLU refuses, and the layer's arguments. */
static void prelu_refused(const t_env *e) {
    static const struct { nn_shape x, w; } bad[3] = {{{3, {3, 7, 33}}, {1, {5}}}, {{1, {33}}, {1, {33}}}, {{2, {3, 7}}, {2, {1, 7}}}};
    int k;
    if (!t_begin(e, "prelu: a weight that fits no channel dim is refused")) return;
    for (k = 0; k < 5; k++) {
        nn_graph *g = NULL;
        nn_graph_desc gd;
        nn_tensor x, t;
        memset(&gd, 0, sizeof gd);
        if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) break;
        x = nn_input(g, "x", NN_F32, k < 3 ? bad[k].x : nn_shape2(3, 7));
        if (k < 3) t = nn_prelu(g, x, nn_input(g, "w", NN_F32, bad[k].w));
        else t = nn_prelu_layer(g, x, k == 3 ? 0 : 7, NULL, k == 3 ? "act" : NULL);
        T_CHECK(t.id < 0 && nn_graph_status(g) != NN_OK && strstr(nn_context_last_error(e->ctx), k < 3 ? "nn_prelu" : "nn_prelu_layer"),
                "case %d not refused (%s)", k, nn_context_last_error(e->ctx));
        nn_graph_destroy(g);
    }
    t_end();
}

static void prelu_cases(const t_env *e) {
    static const struct { nn_shape x, w; } cases[5] = {
        {{3, {3, 7, 33}}, {1, {7}}}, {{2, {1, 33}}, {1, {33}}}, {{1, {127}}, {1, {1}}},
        {{3, {3, 7, 33}}, {1, {1}}}, {{4, {7, 3, 1, 127}}, {1, {3}}},
    };
    char name[160], sx[64], sw[32];
    int k, d;
    for (k = 0; k < 5; k++) {
        spec s;
        sx[0] = 0;
        for (d = 0; d < cases[k].x.ndim; d++)
            snprintf(sx + strlen(sx), sizeof sx - strlen(sx), d ? ", %d" : "%d", (int)cases[k].x.dim[d]);
        snprintf(sw, sizeof sw, "%d", (int)cases[k].w.dim[0]);
        snprintf(name, sizeof name, "prelu [%s] weight [%s]", sx, sw);
        s = mk(name, b_prelu, r_prelu, cases[k].x);
        in_f(&s, cases[k].x);
        in_f(&s, cases[k].w);
        s.fill = prelu_fill;
        check_case(e, &s);
    }
    prelu_exact(e);
    prelu_deterministic(e);
    prelu_layer(e);
    prelu_refused(e);
}

/* ==== NaN and infinity propagation (the op checker's expected-value mode: PyTorch's
   NaN, +-inf and values; the rules in tests/op_check.c) ==== */

/* ---- activations: every line of kernels/activation.h's table ---- */


typedef struct np_act {
    const char *name;
    nn_tensor (*build)(nn_graph *g, nn_tensor x, const float *p);
    double (*f)(double v, const double *p);
    double (*d)(double v, const double *p);
    float p[2];
} np_act;

static const np_act np_acts[] = {
    {"relu", b_relu, f_relu, d_relu, {0, 0}},
    {"leaky_relu", b_leaky_relu, f_leaky_relu, d_leaky_relu, {0.1f, 0}},
    {"sigmoid", b_sigmoid, f_sigmoid, d_sigmoid, {0, 0}},
    {"tanh", b_tanh, f_tanh, d_tanh, {0, 0}},
    {"gelu", b_gelu, f_gelu, d_gelu, {0, 0}},
    {"gelu_tanh", b_gelu_tanh, f_gelu_tanh, d_gelu_tanh, {0, 0}},
    {"silu", b_silu, f_silu, d_silu, {0, 0}},
    {"elu", b_elu, f_elu, d_elu, {0.7f, 0}},
    {"selu", b_selu, f_selu, d_selu, {0, 0}},
    {"celu", b_celu, f_celu, d_celu, {1.3f, 0}},
    {"softplus", b_softplus, f_softplus, d_softplus, {1, 20}},
    {"mish", b_mish, f_mish, d_mish, {0, 0}},
    {"hardswish", b_hardswish, f_hardswish, d_hardswish, {0, 0}},
    {"hardsigmoid", b_hardsigmoid, f_hardsigmoid, d_hardsigmoid, {0, 0}},
    {"hardtanh", b_hardtanh, f_hardtanh, d_hardtanh, {-1, 1}},
    {"relu6", b_relu6, f_relu6, d_relu6, {0, 0}},
    {"softsign", b_softsign, f_softsign, d_softsign, {0, 0}},
    {"log_sigmoid", b_log_sigmoid, f_log_sigmoid, d_log_sigmoid, {0, 0}},
};
#define NP_N_ACTS ((int)(sizeof np_acts / sizeof np_acts[0]))

static nn_tensor b_act(nn_graph *g, const nn_tensor *in, const spec *s_) {
    const np_act *a = (const np_act *)s_->arg;
    return a->build(g, in[0], a->p);
}

/* 37 elements: NaN and infinities at the start, in the middle (a vector loop's body) and
   in the last five (a scalar tail after 32), finite values between */
#define ACT_N 37
static void act_inputs(double *x) {
    static const int at[] = {0, 1, 2, 17, 18, 19, 33, 34, 35};
    static const double val[] = {NAN, INFINITY, -INFINITY, -INFINITY, NAN, INFINITY, INFINITY, -INFINITY, NAN};
    int i;
    np_fill(x, ACT_N, -4, 4, 11);
    x[3] = 0;
    x[4] = -3;
    x[5] = 3;
    for (i = 0; i < 9; i++) x[at[i]] = val[i];
}

static void nanprop_activations(const t_env *e) {
    double x[ACT_N], y[ACT_N], dx[ACT_N];
    int a, i;
    act_inputs(x);
    for (a = 0; a < NP_N_ACTS; a++) {
        const np_act *A = &np_acts[a];
        double p[2];
        np_case c;
        p[0] = A->p[0];
        p[1] = A->p[1];
        for (i = 0; i < ACT_N; i++) {
            y[i] = A->f(x[i], p);
            dx[i] = A->d(x[i], p);
        }
        np_init(&c, A->name, b_act, A);
        np_in(&c, nn_shape1(ACT_N), x, dx);
        c.y_expect = y;
        np_run(e, &c);
    }
}

/* ---- PReLU: x [2, 3, 4], a slope per channel ---- */

static void nanprop_prelu(const t_env *e) {
    double x[24], w[3] = {0.25, -0.5, 0}, y[24], dx[24], dw[3] = {0, 0, 0};
    np_case c;
    int i;
    np_fill(x, 24, -2, 2, 31);
    x[1] = NAN;       /* channel 0: dw[0] NaN (x * dy where x <= 0: NaN is not > 0) */
    x[5] = INFINITY;  /* channel 1: inf > 0, no slope term */
    x[6] = -INFINITY; /* channel 1: -inf * -0.5 = inf; dw[1] = -inf */
    x[21] = -INFINITY; /* channel 2 of sample 1, slope 0: 0 * -inf = NaN */
    for (i = 0; i < 24; i++) {
        int ch = (i / 4) % 3;
        double v = x[i];
        y[i] = v > 0 ? v : w[ch] * v;
        dx[i] = v > 0 ? 1 : w[ch];
        dw[ch] += v > 0 ? 0 : v;
    }
    np_init(&c, "prelu x[2, 3, 4] w[3]", b_prelu, NULL);
    np_in(&c, nn_shape3(2, 3, 4), x, dx);
    np_in(&c, nn_shape1(3), w, dw);
    c.y_expect = y;
    np_run(e, &c);
}

void suite_activation(const t_env *e) {
    static const int shapes[3][2] = {{1, 0}, {7, 33}, {3, 127}};
    char name[160];
    int k, j;
    for (k = 0; k < N_ACTS; k++) {
        for (j = 0; j < 3; j++) {
            nn_shape sh = shapes[j][1] ? nn_shape2(shapes[j][0], shapes[j][1]) : nn_shape1(shapes[j][0]);
            spec s;
            if (shapes[j][1]) snprintf(name, sizeof name, "activation %s [%d, %d]", acts[k].name, shapes[j][0], shapes[j][1]);
            else snprintf(name, sizeof name, "activation %s [%d]", acts[k].name, shapes[j][0]);
            s = mk(name, act_build, act_ref, sh);
            s.ip[0] = k;
            s.lo = acts[k].lo;
            s.hi = acts[k].hi;
            s.fill = act_fill;
            in_f(&s, sh);
            check_case(e, &s);
        }
        act_exact(e, &acts[k]);
    }
    T_RUN(e, act_refused, prelu_cases, nanprop_activations, nanprop_prelu);
}
