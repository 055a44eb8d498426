/* NaN and infinity propagation, op family by op family, against what PyTorch gives: inputs
   hold NaN, +inf and -inf at chosen positions, and every forward output and gradient
   element must be NaN where PyTorch's is NaN, the same infinity where PyTorch's is
   infinite, and finite (within 1e-4 relative, 1e-5 absolute, where a value is given)
   where PyTorch's is finite. The loss of every case is sum(op(...) * w) with w = 1 or
   another finite w, or with a w that holds NaN or inf itself where the case says so (the
   backward passes must carry a non-finite incoming gradient to where PyTorch's do, and
   nowhere else).

   The expectations are written here, from PyTorch's definitions (ATen's kernels and
   autograd formulas, PyTorch 1.13): double-precision references that follow those rules
   element by element (activations, binary ops, matmul, convolutions, pooling, resampling),
   or the values PyTorch returns, written out (losses). The rules that decide most cases:
   - comparisons are written so that NaN falls into the propagating branch: relu(NaN),
     hardtanh(NaN), clamp_min(NaN, 0) (the hinge, cosine-embedding and triplet losses) and
     BCE's max(log p, -100) are NaN; max pooling takes a NaN as the window's maximum;
   - products are products: inf * 0 is NaN wherever PyTorch multiplies (dropout's dropped
     elements are x * 0, matmul and convolution sums, the zero padding of a convolution
     times a NaN weight), and nowhere it copies (nearest upsampling, padding, gathers);
   - a statistic over a group holding NaN or inf (softmax and log-softmax rows, norms' means
     and variances, a sum) is NaN, or +-inf for a sum of one-signed infinities;
   - gradients follow PyTorch's backward formulas: relu's threshold_backward passes the
     gradient at NaN (the test of NaN <= 0 is false), leaky ReLU and PReLU send slope * dy,
     hardsigmoid 0; l1's sign(NaN) is 0 (torch.sign); Huber and smooth L1 give NaN.
   Where PyTorch 1.13's vectorised and scalar kernels disagree at NaN (the gradients of
   ELU/SELU/CELU: NaN vs dy; hardswish: NaN vs dy; hardtanh, ReLU6: 0 vs dy), either is
   PyTorch's: the expectation is the one written in the reference, and it is noted there.
   Where only finiteness is the point (a norm's other groups) the value is left to the
   family's own suite.
   The losses PyTorch lacks (log-cosh, quantile, hinge, squared hinge, dice) are held to the
   IEEE arithmetic of their formulas (src/api/api.h) in the forward, and to NaN in, NaN out
   in the gradient (the derivative's own value at +-inf: log-cosh's tanh is +-1 there). */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NP_MAXIN 4
#define NP_REL 1e-4
#define NP_ABS 1e-5
#define FIN 1e300  /* expected: any finite value */

typedef nn_tensor (*np_build)(nn_graph *g, const nn_tensor *in, const void *arg);

typedef struct np_case {
    const char *name;
    np_build build;
    const void *arg;
    int n_in;
    nn_shape shape[NP_MAXIN];
    int i32[NP_MAXIN];
    const double *x[NP_MAXIN];
    const double *dx[NP_MAXIN]; /* expected d(loss)/d(input); NULL: no gradient asked */
    const double *y;            /* expected output */
    const double *w;            /* the loss's weights (NULL: ones) */
    int eval;
} np_case;

static void np_init(np_case *c, const char *name, np_build build, const void *arg) {
    memset(c, 0, sizeof *c);
    c->name = name;
    c->build = build;
    c->arg = arg;
}
static void np_in(np_case *c, nn_shape s, const double *x, const double *dx) {
    c->shape[c->n_in] = s;
    c->x[c->n_in] = x;
    c->dx[c->n_in] = dx;
    c->n_in++;
}
static void np_in_i(np_case *c, nn_shape s, const double *x) {
    c->i32[c->n_in] = 1;
    np_in(c, s, x, NULL);
}

static long np_numel(nn_shape s) {
    long n = 1;
    int i;
    for (i = 0; i < s.ndim; i++) n *= (long)s.dim[i];
    return n;
}

static const char *np_desc(double w, char *buf, size_t n) {
    if (isnan(w)) return "NaN";
    if (w == FIN) return "finite";
    if (isinf(w)) return w > 0 ? "+inf" : "-inf";
    snprintf(buf, n, "%.7g", w);
    return buf;
}

/* got against want element by element; reports the first few differences */
static int np_compare(const char *name, const char *what, const float *got, const double *want, long n) {
    long i, bad = 0;
    for (i = 0; i < n; i++) {
        double w = want[i], v = got[i];
        int ok;
        char b[40];
        if (isnan(w)) ok = isnan(v);
        else if (isinf(w)) ok = v == w;
        else if (w == FIN) ok = isfinite(v);
        else ok = isfinite(v) && fabs(v - w) <= NP_REL * fabs(w) + NP_ABS;
        if (!ok && bad++ < 4) T_CHECK(0, "%s: %s[%ld] = %g, PyTorch gives %s", name, what, i, v, np_desc(w, b, sizeof b));
    }
    if (bad > 4) T_CHECK(0, "%s: %s: %ld elements differ in all", name, what, bad);
    return bad == 0;
}

static void np_write(nn_context *ctx, nn_graph *g, nn_tensor t, const double *v, long n, int i32) {
    long i;
    if (i32) {
        int32_t *b = (int32_t *)malloc((size_t)n * 4);
        for (i = 0; i < n; i++) b[i] = (int32_t)v[i];
        T_OK(nn_tensor_write(g, t, b, (size_t)n * 4), ctx);
        free(b);
    } else {
        float *b = (float *)malloc((size_t)n * 4);
        for (i = 0; i < n; i++) b[i] = (float)v[i];
        T_OK(nn_tensor_write(g, t, b, (size_t)n * 4), ctx);
        free(b);
    }
}

/* Builds the case on e's backend, runs one step and compares the output and gradients.
   got_dx (optional): receives the gradient of input k read back (for dropout's mask). */
static void np_exec(const t_env *e, const np_case *c, float **got_y, float **got_dx) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor in[NP_MAXIN], out, wt;
    long ny, k;
    float *y = NULL;
    memset(&gd, 0, sizeof gd);
    gd.seed = 99;
    gd.eval = c->eval;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return;
    for (k = 0; k < c->n_in; k++) {
        char nm[32];
        snprintf(nm, sizeof nm, "x%ld", k);
        in[k] = nn_input(g, nm, c->i32[k] ? NN_I32 : NN_F32, c->shape[k]);
        if (c->dx[k]) nn_graph_requires_grad(g, in[k]);
    }
    out = c->build(g, in, c->arg);
    if (!T_CHECK(out.id > 0, "%s: the op failed: %s", c->name, nn_context_last_error(ctx))) goto done;
    ny = (long)t_numel(g, out);
    nn_graph_output(g, out);
    wt = c->w ? nn_input(g, "w", NN_F32, t_shape(g, out)) : NN_NONE;
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, c->w ? nn_mul(g, out, wt) : out);
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    for (k = 0; k < c->n_in; k++) np_write(ctx, g, in[k], c->x[k], np_numel(c->shape[k]), c->i32[k]);
    if (c->w) np_write(ctx, g, wt, c->w, ny, 0);
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    y = (float *)malloc((size_t)ny * 4);
    if (T_OK(nn_tensor_read(g, out, y, (size_t)ny * 4), ctx)) {
        if (c->y) np_compare(c->name, "y", y, c->y, ny);
        if (got_y) {
            *got_y = y;
            y = NULL;
        }
    }
    for (k = 0; k < c->n_in; k++) {
        long n = np_numel(c->shape[k]);
        float *d;
        char what[32];
        if (!c->dx[k]) continue;
        d = (float *)malloc((size_t)n * 4);
        snprintf(what, sizeof what, "d/dx%ld", k);
        if (T_OK(nn_tensor_read(g, nn_graph_grad(g, in[k]), d, (size_t)n * 4), ctx)) {
            np_compare(c->name, what, d, c->dx[k], n);
            if (got_dx && k == 0) {
                *got_dx = d;
                d = NULL;
            }
        }
        free(d);
    }
done:
    free(y);
    nn_graph_destroy(g);
}

static void np_run(const t_env *e, const np_case *c) {
    char label[120];
    snprintf(label, sizeof label, "nanprop: %s", c->name);
    if (!t_begin(e, label)) return;
    np_exec(e, c, NULL, NULL);
    t_end();
}

/* A deterministic fill in [lo, hi) */
static void np_fill(double *v, long n, double lo, double hi, unsigned long long seed) {
    long i;
    t_seed(seed);
    for (i = 0; i < n; i++) v[i] = (double)(float)t_uniform(lo, hi);
}

/* ---- activations: every line of kernels/activation.h's table ---- */

static double sigm(double v) { return 1 / (1 + exp(-v)); }
static double np_clamp(double v, double lo, double hi) { return isnan(v) ? v : v < lo ? lo : v > hi ? hi : v; }

typedef struct np_act {
    const char *name;
    nn_tensor (*build)(nn_graph *g, nn_tensor x, const float *p);
    double (*f)(double v, const double *p);
    double (*d)(double v, const double *p);
    float p[2];
} np_act;

#define ACT(ID, BUILD, FWD, DER)                                                                 \
    static nn_tensor ab_##ID(nn_graph *g, nn_tensor x, const float *p) {                        \
        (void)p;                                                                                 \
        return BUILD;                                                                            \
    }                                                                                            \
    static double af_##ID(double v, const double *p) {                                           \
        (void)p;                                                                                 \
        return FWD;                                                                              \
    }                                                                                            \
    static double ad_##ID(double v, const double *p) {                                           \
        (void)p;                                                                                 \
        return DER;                                                                              \
    }
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

static const np_act np_acts[] = {
    {"relu", ab_relu, af_relu, ad_relu, {0, 0}},
    {"leaky_relu", ab_leaky_relu, af_leaky_relu, ad_leaky_relu, {0.1f, 0}},
    {"sigmoid", ab_sigmoid, af_sigmoid, ad_sigmoid, {0, 0}},
    {"tanh", ab_tanh, af_tanh, ad_tanh, {0, 0}},
    {"gelu", ab_gelu, af_gelu, ad_gelu, {0, 0}},
    {"silu", ab_silu, af_silu, ad_silu, {0, 0}},
    {"elu", ab_elu, af_elu, ad_elu, {0.7f, 0}},
    {"selu", ab_selu, af_selu, ad_selu, {0, 0}},
    {"celu", ab_celu, af_celu, ad_celu, {1.3f, 0}},
    {"softplus", ab_softplus, af_softplus, ad_softplus, {1, 20}},
    {"mish", ab_mish, af_mish, ad_mish, {0, 0}},
    {"hardswish", ab_hardswish, af_hardswish, ad_hardswish, {0, 0}},
    {"hardsigmoid", ab_hardsigmoid, af_hardsigmoid, ad_hardsigmoid, {0, 0}},
    {"hardtanh", ab_hardtanh, af_hardtanh, ad_hardtanh, {-1, 1}},
    {"relu6", ab_relu6, af_relu6, ad_relu6, {0, 0}},
    {"softsign", ab_softsign, af_softsign, ad_softsign, {0, 0}},
    {"log_sigmoid", ab_log_sigmoid, af_log_sigmoid, ad_log_sigmoid, {0, 0}},
};
#define NP_N_ACTS ((int)(sizeof np_acts / sizeof np_acts[0]))

static nn_tensor b_act(nn_graph *g, const nn_tensor *in, const void *arg) {
    const np_act *a = (const np_act *)arg;
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
        c.y = y;
        np_run(e, &c);
    }
}

/* ---- binary ops and scale ---- */

static nn_tensor b_add(nn_graph *g, const nn_tensor *in, const void *arg) { (void)arg; return nn_add(g, in[0], in[1]); }
static nn_tensor b_sub(nn_graph *g, const nn_tensor *in, const void *arg) { (void)arg; return nn_sub(g, in[0], in[1]); }
static nn_tensor b_mul(nn_graph *g, const nn_tensor *in, const void *arg) { (void)arg; return nn_mul(g, in[0], in[1]); }
static nn_tensor b_scale(nn_graph *g, const nn_tensor *in, const void *arg) { return nn_mul_scalar(g, in[0], *(const float *)arg); }

/* a [4, 5] against b [5] (broadcast) or b [4, 5]: inf - inf, inf * 0, NaN + x */
static void nanprop_binary(const t_env *e) {
    double a[20], b[20], y[20], da[20], db[20];
    static const char *names[3][2] = {{"add a[4, 5] + b[5]", "add a[4, 5] + b[4, 5]"},
                                      {"sub a[4, 5] - b[5]", "sub a[4, 5] - b[4, 5]"},
                                      {"mul a[4, 5] * b[5]", "mul a[4, 5] * b[4, 5]"}};
    static const np_build builds[3] = {b_add, b_sub, b_mul};
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
            c.y = y;
            np_run(e, &c);
        }
    {
        static const float s0 = 0.0f, s2 = -2.5f;
        double x[8] = {NAN, INFINITY, -INFINITY, 1.5, -0.25, 0, INFINITY, 3};
        double y0[8], y2[8], d0[8], d2[8];
        np_case c;
        for (i = 0; i < 8; i++) {
            y0[i] = x[i] * 0.0; /* inf * 0: NaN */
            y2[i] = x[i] * -2.5;
            d0[i] = 0;
            d2[i] = -2.5;
        }
        np_init(&c, "scale by 0", b_scale, &s0);
        np_in(&c, nn_shape1(8), x, d0);
        c.y = y0;
        np_run(e, &c);
        np_init(&c, "scale by -2.5", b_scale, &s2);
        np_in(&c, nn_shape1(8), x, d2);
        c.y = y2;
        np_run(e, &c);
    }
}

/* ---- PReLU: x [2, 3, 4], a slope per channel ---- */

static nn_tensor b_prelu(nn_graph *g, const nn_tensor *in, const void *arg) { (void)arg; return nn_prelu(g, in[0], in[1]); }

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
    c.y = y;
    np_run(e, &c);
}

/* ---- dropout: the kept elements are x / (1 - p), the dropped ones x * 0 (NaN for NaN
   and inf, as PyTorch's x * mask / (1 - p)). The mask is read from the gradient
   (dy * mask / (1 - p), dy = 1), which must itself be finite. ---- */

static nn_tensor b_dropout(nn_graph *g, const nn_tensor *in, const void *arg) { (void)arg; return nn_dropout(g, in[0], 0.5f); }

static void nanprop_dropout(const t_env *e) {
    enum { N = 64 };
    double x[N], dx[N];
    float *y = NULL, *d = NULL;
    np_case c;
    int i, kept = 0, dropped = 0, nonfinite_dropped = 0;
    if (!t_begin(e, "nanprop: dropout p = 0.5")) return;
    np_fill(x, N, -2, 2, 41);
    for (i = 0; i < N; i += 3) x[i] = i % 2 ? INFINITY : NAN;
    for (i = 0; i < N; i++) dx[i] = FIN;
    np_init(&c, "dropout p = 0.5", b_dropout, NULL);
    np_in(&c, nn_shape1(N), x, dx);
    np_exec(e, &c, &y, &d);
    if (y && d) {
        for (i = 0; i < N; i++) {
            double m = d[i], want;
            char b[40];
            if (!T_CHECK(m == 0 || m == 2, "dropout: gradient[%d] = %g, not 0 or 1 / (1 - p)", i, m)) break;
            kept += m == 2;
            dropped += m == 0;
            nonfinite_dropped += m == 0 && !isfinite(x[i]);
            want = x[i] * m;
            if (!(isnan(want) ? isnan(y[i]) : y[i] == (float)want))
                T_CHECK(0, "dropout: y[%d] = %g for x = %g, mask %g: PyTorch gives %s", i, y[i], x[i], m / 2,
                        np_desc(want, b, sizeof b));
        }
        T_CHECK(kept > 0 && nonfinite_dropped > 0, "dropout: %d kept, %d dropped (%d of them NaN or inf): the case tests nothing",
                kept, dropped, nonfinite_dropped);
    }
    free(y);
    free(d);
    t_end();
}

/* ---- matmul and dense ---- */

typedef struct np_mm { int ta, tb; } np_mm;
static nn_tensor b_matmul(nn_graph *g, const nn_tensor *in, const void *arg) {
    const np_mm *m = (const np_mm *)arg;
    return nn_matmul(g, in[0], in[1], m->ta, m->tb);
}

/* y [M, N] = op(A) op(B) and the gradients of sum(y * w) in double */
static void mm_ref(const double *A, const double *B, const double *w, double *y, double *dA, double *dB, int M, int K, int N,
                   int ta, int tb) {
    int i, j, k;
    for (i = 0; i < M * K; i++) dA[i] = 0;
    for (i = 0; i < K * N; i++) dB[i] = 0;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double s = 0;
            for (k = 0; k < K; k++) {
                double a = ta ? A[k * M + i] : A[i * K + k], b = tb ? B[j * K + k] : B[k * N + j];
                s += a * b;
                if (ta) dA[k * M + i] += w[i * N + j] * b;
                else dA[i * K + k] += w[i * N + j] * b;
                if (tb) dB[j * K + k] += w[i * N + j] * a;
                else dB[k * N + j] += w[i * N + j] * a;
            }
            y[i * N + j] = s;
        }
}

static void nanprop_matmul_one(const t_env *e, const char *name, int M, int K, int N, int ta, int tb, unsigned seed) {
    double *A = (double *)malloc(sizeof(double) * M * K), *B = (double *)malloc(sizeof(double) * K * N);
    double *y = (double *)malloc(sizeof(double) * M * N), *w = (double *)malloc(sizeof(double) * M * N);
    double *dA = (double *)malloc(sizeof(double) * M * K), *dB = (double *)malloc(sizeof(double) * K * N);
    np_mm mm;
    np_case c;
    int i;
    np_fill(A, (long)M * K, -1, 1, seed);
    np_fill(B, (long)K * N, -1, 1, seed + 1);
    for (i = 0; i < M * N; i++) w[i] = 1;
    /* a NaN row of op(A) and an inf in another whose column of op(B) holds a 0, a -inf
       in B, a column of B that meets +inf and -inf */
    A[(ta ? 2 * M + 1 : 1 * K + 2)] = NAN;
    A[(ta ? 0 * M + M - 1 : (M - 1) * K)] = INFINITY;
    B[(tb ? 1 * K + 0 : 0 * N + 1)] = 0;
    B[(tb ? (N - 1) * K + K - 1 : (K - 1) * N + N - 1)] = -INFINITY;
    mm_ref(A, B, w, y, dA, dB, M, K, N, ta, tb);
    mm.ta = ta;
    mm.tb = tb;
    np_init(&c, name, b_matmul, &mm);
    np_in(&c, ta ? nn_shape2(K, M) : nn_shape2(M, K), A, dA);
    np_in(&c, tb ? nn_shape2(N, K) : nn_shape2(K, N), B, dB);
    c.y = y;
    np_run(e, &c);
    free(A);
    free(B);
    free(y);
    free(w);
    free(dA);
    free(dB);
}

/* nn_linear_layer (x W^T + b with its own parameters fc.weight and fc.bias): x [3, 4] with NaN in
   row 1, inf in W row 2, NaN in b[4]; the parameters written before the step */
static void nanprop_dense(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, y, W, bt;
    double xv[12], Wv[20], bv[5], ry[15], w1[15], rdx[12], rdW[20], rdb[5];
    float f[20];
    int i, j;
    if (!t_begin(e, "nanprop: dense x[3, 4] -> 5")) return;
    np_fill(xv, 12, -1, 1, 56);
    np_fill(Wv, 20, -1, 1, 57);
    np_fill(bv, 5, -1, 1, 58);
    xv[5] = NAN;
    Wv[9] = INFINITY;
    bv[4] = NAN;
    for (i = 0; i < 15; i++) w1[i] = 1;
    mm_ref(xv, Wv, w1, ry, rdx, rdW, 3, 4, 5, 0, 1);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 5; j++) ry[i * 5 + j] += bv[j];
    for (j = 0; j < 5; j++) rdb[j] = 3;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(3, 4));
    nn_graph_requires_grad(g, x);
    y = nn_linear_layer(g, x, 5, NULL, "fc");
    W = nn_graph_find(g, "fc.weight");
    bt = nn_graph_find(g, "fc.bias");
    nn_graph_output(g, y);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, y); /* no optimizer: the parameters' gradients are kept */
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    np_write(ctx, g, x, xv, 12, 0);
    np_write(ctx, g, W, Wv, 20, 0);
    np_write(ctx, g, bt, bv, 5, 0);
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    if (T_OK(nn_tensor_read(g, y, f, 15 * 4), ctx)) np_compare("dense", "y", f, ry, 15);
    if (T_OK(nn_tensor_read(g, nn_graph_grad(g, x), f, 12 * 4), ctx)) np_compare("dense", "d/dx", f, rdx, 12);
    if (T_OK(nn_tensor_read(g, nn_graph_grad(g, W), f, 20 * 4), ctx)) np_compare("dense", "d/dW", f, rdW, 20);
    if (T_OK(nn_tensor_read(g, nn_graph_grad(g, bt), f, 5 * 4), ctx)) np_compare("dense", "d/db", f, rdb, 5);
done:
    nn_graph_destroy(g);
    t_end();
}

static void nanprop_matmul(const t_env *e) {
    nanprop_matmul_one(e, "matmul [5, 7] x [7, 6]", 5, 7, 6, 0, 0, 51);
    nanprop_matmul_one(e, "matmul [5, 7]^T x [7, 6]^T", 5, 7, 6, 1, 1, 52);
    nanprop_matmul_one(e, "matmul [37, 70] x [70, 45]", 37, 70, 45, 0, 0, 53); /* the blocked kernels */
    nanprop_matmul_one(e, "matmul [37, 70] x [45, 70]^T", 37, 70, 45, 0, 1, 54);
    nanprop_matmul_one(e, "matmul [130, 33]^T x [33, 67]", 130, 33, 67, 1, 0, 55);
    nanprop_dense(e);
}

/* ---- sum and mean ---- */

static nn_tensor b_sum(nn_graph *g, const nn_tensor *in, const void *arg) { (void)arg; return nn_sum(g, in[0]); }
static nn_tensor b_mean(nn_graph *g, const nn_tensor *in, const void *arg) { (void)arg; return nn_mean(g, in[0]); }

static void nanprop_reduce(const t_env *e) {
    enum { N = 1000 };
    static double x[N], dsum[N], dmean[N];
    static const struct {
        const char *name;
        int at[2];
        double v[2];
        double want;
    } cases[] = {
        {"NaN", {777, -1}, {NAN, 0}, NAN},
        {"+inf", {5, -1}, {INFINITY, 0}, INFINITY},
        {"-inf", {999, -1}, {-INFINITY, 0}, -INFINITY},
        {"+inf and -inf", {3, 640}, {INFINITY, -INFINITY}, NAN},
        {"NaN and +inf", {0, 512}, {NAN, INFINITY}, NAN},
    };
    int k, i, m;
    for (i = 0; i < N; i++) {
        dsum[i] = 1;
        dmean[i] = 1.0 / N;
    }
    for (k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++)
        for (m = 0; m < 2; m++) {
            char name[80];
            double want = cases[k].want;
            np_case c;
            np_fill(x, N, -1, 1, 61);
            for (i = 0; i < 2; i++)
                if (cases[k].at[i] >= 0) x[cases[k].at[i]] = cases[k].v[i];
            snprintf(name, sizeof name, "%s of [1000] with %s", m ? "mean" : "sum", cases[k].name);
            np_init(&c, name, m ? b_mean : b_sum, NULL);
            np_in(&c, nn_shape1(N), x, m ? dmean : dsum);
            c.y = &want;
            np_run(e, &c);
        }
}

/* argmax and accuracy: a NaN is the maximum, the first one (torch.argmax) */
static void nanprop_argmax(const t_env *e) {
    static const float x[16] = {1, NAN, 3, NAN, NAN, 1, 2, 3, 1, 2, INFINITY, -1, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    static const int32_t labels[4] = {1, 3, 2, 0}, want[4] = {1, 0, 2, 0};
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor xt, lt, am, acc;
    int32_t got[4];
    float a;
    int i;
    if (!t_begin(e, "nanprop: argmax and accuracy rows with NaN, +-inf")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    xt = nn_input(g, "x", NN_F32, nn_shape2(4, 4));
    lt = nn_input(g, "labels", NN_I32, nn_shape1(4));
    am = nn_argmax_rows(g, xt);
    acc = nn_accuracy(g, xt, lt);
    nn_graph_output(g, am);
    nn_graph_output(g, acc);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    T_OK(nn_tensor_write(g, xt, x, sizeof x), ctx);
    T_OK(nn_tensor_write(g, lt, labels, sizeof labels), ctx);
    if (!T_OK(nn_graph_forward(g), ctx)) goto done;
    if (T_OK(nn_tensor_read(g, am, got, sizeof got), ctx))
        for (i = 0; i < 4; i++) T_CHECK(got[i] == want[i], "argmax of row %d = %d, PyTorch gives %d", i, got[i], want[i]);
    if (T_OK(nn_tensor_read(g, acc, &a, sizeof a), ctx)) T_CHECK(a == 0.75f, "accuracy %g, PyTorch's argmax gives 0.75", a);
done:
    nn_graph_destroy(g);
    t_end();
}

/* ---- softmax and log-softmax over rows of 5 ---- */

static nn_tensor b_softmax(nn_graph *g, const nn_tensor *in, const void *arg) { (void)arg; return nn_softmax(g, in[0], -1); }
static nn_tensor b_log_softmax(nn_graph *g, const nn_tensor *in, const void *arg) { (void)arg; return nn_log_softmax(g, in[0], -1); }

static void nanprop_softmax(const t_env *e) {
    enum { R = 7, C = 5 };
    /* a finite row; NaN in the middle; NaN first; +inf; -inf (a probability 0, finite
       elsewhere); all -inf (NaN: -inf - -inf); +inf and -inf */
    static const double x[R * C] = {
        0.5, -1, 2, 0.25, 1,       0.5, -1, NAN, 0.25, 1,       NAN, -1, 2, 0.25, 1,
        0.5, INFINITY, 2, 0.25, 1, 0.5, -1, -INFINITY, 0.25, 1, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
        INFINITY, -1, -INFINITY, 0.25, 1};
    double w[R * C], y[R * C], ly[R * C], dy[R * C], dly[R * C];
    int r, c, lg;
    np_fill(w, R * C, 0.5, 2, 71); /* dy, so that the gradients are not all 0 */
    for (r = 0; r < R; r++) {
        const double *xr = x + r * C;
        int poison = 0;
        double m = -INFINITY, s = 0, sw = 0, swy = 0;
        for (c = 0; c < C; c++) {
            poison |= isnan(xr[c]) || xr[c] == INFINITY; /* exp(inf - inf) */
            if (xr[c] > m) m = xr[c];
        }
        poison |= m == -INFINITY; /* a row of -inf: -inf - -inf */
        for (c = 0; c < C; c++) s += exp(xr[c] - m);
        for (c = 0; c < C; c++) {
            y[r * C + c] = poison ? NAN : exp(xr[c] - m) / s;
            ly[r * C + c] = poison ? NAN : xr[c] - m - log(s);
            sw += w[r * C + c];
            swy += w[r * C + c] * y[r * C + c];
        }
        for (c = 0; c < C; c++) { /* PyTorch's backward formulas */
            dy[r * C + c] = y[r * C + c] * (w[r * C + c] - swy);
            dly[r * C + c] = w[r * C + c] - exp(ly[r * C + c]) * sw;
        }
    }
    for (lg = 0; lg < 2; lg++) {
        np_case k;
        np_init(&k, lg ? "log_softmax rows with NaN, +-inf" : "softmax rows with NaN, +-inf", lg ? b_log_softmax : b_softmax, NULL);
        np_in(&k, nn_shape2(R, C), x, lg ? dly : dy);
        k.y = lg ? ly : y;
        k.w = w;
        np_run(e, &k);
    }
}

/* ---- losses: the values PyTorch 1.13 returns (reduction none unless named; the gradient
   is that of the sum) ---- */

typedef struct np_loss {
    nn_tensor (*fn)(nn_graph *g, nn_tensor a, nn_tensor b, const nn_loss_desc *d);
    nn_loss_desc d;
    int pw; /* in[2] is pos_weight, class weights, or a third operand */
} np_loss;

static nn_tensor b_loss(nn_graph *g, const nn_tensor *in, const void *arg) {
    const np_loss *l = (const np_loss *)arg;
    nn_loss_desc d = l->d;
    if (l->pw == 1) d.pos_weight = in[2];
    if (l->pw == 2) d.weight = in[2];
    return l->fn(g, in[0], in[1], &d);
}

static void np_loss_case(const t_env *e, const char *name, const np_loss *l, nn_shape s, const double *x, const double *t,
                         const double *y, const double *dx) {
    np_case c;
    np_init(&c, name, b_loss, l);
    np_in(&c, s, x, dx);
    np_in(&c, s, t, NULL);
    c.y = y;
    np_run(e, &c);
}

static void nanprop_losses_ew(const t_env *e) {
    /* pred NaN, +inf, -inf, finite against targets 0.5 and NaN, inf, 1 */
    static const double x[6] = {NAN, INFINITY, -INFINITY, 0.5, 0.25, 0.75};
    static const double t[6] = {0.5, 0.5, 0.5, NAN, INFINITY, 1.0};
    static const double mse_y[6] = {NAN, INFINITY, INFINITY, NAN, INFINITY, 0.0625};
    static const double mse_d[6] = {NAN, INFINITY, -INFINITY, NAN, -INFINITY, -0.5};
    static const double l1_y[6] = {NAN, INFINITY, INFINITY, NAN, INFINITY, 0.25};
    static const double l1_d[6] = {0, 1, -1, 0, -1, -1}; /* sign(NaN) = 0 (torch.sign) */
    static const double hub_y[6] = {NAN, INFINITY, INFINITY, NAN, INFINITY, 0.03125};
    static const double hub_d[6] = {NAN, 1, -1, NAN, -1, -0.25};
    static const double sl1_y[6] = {NAN, INFINITY, INFINITY, NAN, INFINITY, 0.0625}; /* beta 0.5 */
    static const double sl1_d[6] = {NAN, 1, -1, NAN, -1, -0.5};
    static const double sl0_d[6] = {NAN, 1, -1, NAN, -1, -1}; /* beta NN_ZERO: PyTorch's backward formula at NaN */
    /* log(cosh(d)), no PyTorch builtin: d' = tanh(d) */
    static const double lc_y[6] = {NAN, INFINITY, INFINITY, NAN, INFINITY, 0.0309298007};
    static const double lc_d[6] = {NAN, 1, -1, NAN, -1, -0.244918662};
    /* max(tau d, (tau - 1) d), d = t - p, tau 0.3 */
    static const double q_y[6] = {NAN, INFINITY, INFINITY, NAN, INFINITY, 0.075};
    static const double q_d[6] = {NAN, 0.7, -0.3, NAN, -0.3, -0.3};
    /* hinge max(0, 1 - t x) and its square, targets +-1 */
    static const double hx[6] = {NAN, INFINITY, -INFINITY, 0.5, 2, -0.5};
    static const double ht[6] = {1, 1, 1, NAN, -1, 1};
    static const double h_y[6] = {NAN, 0, INFINITY, NAN, 3, 1.5};
    static const double h_d[6] = {NAN, 0, -1, NAN, 1, -1};
    static const double sh_y[6] = {NAN, 0, INFINITY, NAN, 9, 2.25};
    static const double sh_d[6] = {NAN, 0, -INFINITY, NAN, 6, -3};
    /* BCE on probabilities: PyTorch refuses a NaN probability; its formula, with std::max
       keeping NaN, gives NaN */
    static const double bx[6] = {NAN, 0, 1, 0.5, 0.25, 0.5};
    static const double bt[6] = {0.5, 0.2, 0.2, NAN, 0, INFINITY};
    static const double b_y[6] = {NAN, 20, 80, NAN, 0.287682086, NAN};
    static const double b_d[6] = {NAN, -1.99999996e+11, 7.99999984e+11, NAN, 1.33333337, -INFINITY};
    /* BCE with logits: (1 - t) x + log1p(exp(-|x|)) + max(-x, 0), PyTorch's form (NaN at
       -inf: -inf + inf; at +inf with t = 1: 0 * inf) */
    static const double lx[6] = {NAN, INFINITY, -INFINITY, 0.5, 0.25, INFINITY};
    static const double lt[6] = {0.5, 0.2, 0.2, NAN, 0, 1};
    static const double pw[6] = {2, 0.5, 2, 2, 3, 2};
    static const double bl_y[6] = {NAN, INFINITY, NAN, NAN, 0.825939417, NAN};
    static const double bl_d[6] = {NAN, 0.800000012, -0.200000003, NAN, 0.562176526, 0};
    static const double blp_d[6] = {NAN, 0.800000012, -0.400000006, NAN, 0.562176526, 0};
    /* torchvision's sigmoid_focal_loss, alpha 0.25, gamma 2 */
    static const double fx[6] = {NAN, INFINITY, -INFINITY, 0.5, 0.25, 3.0};
    static const double ft[6] = {0.5, 0.2, 1.0, NAN, 0, 1};
    static const double f_y[6] = {NAN, INFINITY, NAN, NAN, 0.195773944, 2.73208097e-05};
    static const double f_d[6] = {NAN, NAN, NAN, NAN, 0.304682583, -7.87179088e-05};
    /* KL divergence, xlogy(t, t) - t x: a target 0 meets a NaN input as 0 * NaN; a
       negative target gives NaN (log) */
    static const double kx[7] = {NAN, INFINITY, -INFINITY, -0.5, -1.0, -0.7, NAN};
    static const double kt[7] = {0.2, 0.2, 0.2, NAN, 0, -0.5, 0};
    static const double k_y[7] = {NAN, -INFINITY, INFINITY, NAN, 0, NAN, NAN};
    static const double k_d[7] = {-0.2, -0.2, -0.2, NAN, 0, 0.5, 0};
    static const double klx[6] = {NAN, INFINITY, -INFINITY, -0.5, -1.0, -0.7};
    static const double klt[6] = {-1.6, -1.6, -1.6, NAN, -INFINITY, INFINITY};
    static const double kl_y[6] = {NAN, -INFINITY, INFINITY, NAN, NAN, INFINITY};
    static const double kl_d[6] = {-0.201896518, -0.201896518, -0.201896518, NAN, 0, -INFINITY};
    np_loss l;
    nn_shape s6 = nn_shape1(6);
    memset(&l, 0, sizeof l);
    l.d.reduction = NN_REDUCTION_NONE;
    l.fn = nn_mse_loss;
    np_loss_case(e, "mse_loss", &l, s6, x, t, mse_y, mse_d);
    l.fn = nn_l1_loss;
    np_loss_case(e, "l1_loss", &l, s6, x, t, l1_y, l1_d);
    l.fn = nn_huber_loss;
    np_loss_case(e, "huber_loss", &l, s6, x, t, hub_y, hub_d);
    l.fn = nn_smooth_l1_loss;
    l.d.delta = 0.5f;
    np_loss_case(e, "smooth_l1_loss beta 0.5", &l, s6, x, t, sl1_y, sl1_d);
    l.d.delta = (float)NN_ZERO;
    np_loss_case(e, "smooth_l1_loss beta 0", &l, s6, x, t, l1_y, sl0_d);
    l.d.delta = 0;
    l.fn = nn_log_cosh_loss;
    np_loss_case(e, "log_cosh_loss", &l, s6, x, t, lc_y, lc_d);
    l.fn = nn_quantile_loss;
    l.d.tau = 0.3f;
    np_loss_case(e, "quantile_loss tau 0.3", &l, s6, x, t, q_y, q_d);
    l.d.tau = 0;
    l.fn = nn_hinge_loss;
    np_loss_case(e, "hinge_loss", &l, s6, hx, ht, h_y, h_d);
    l.fn = nn_squared_hinge_loss;
    np_loss_case(e, "squared_hinge_loss", &l, s6, hx, ht, sh_y, sh_d);
    l.fn = nn_bce_loss;
    np_loss_case(e, "bce_loss", &l, s6, bx, bt, b_y, b_d);
    l.fn = nn_bce_with_logits_loss;
    np_loss_case(e, "bce_with_logits_loss", &l, s6, lx, lt, bl_y, bl_d);
    {
        np_case c;
        l.pw = 1;
        np_init(&c, "bce_with_logits_loss pos_weight", b_loss, &l);
        np_in(&c, s6, lx, blp_d);
        np_in(&c, s6, lt, NULL);
        np_in(&c, s6, pw, NULL);
        c.y = bl_y;
        np_run(e, &c);
        l.pw = 0;
    }
    l.fn = nn_sigmoid_focal_loss;
    np_loss_case(e, "sigmoid_focal_loss", &l, s6, fx, ft, f_y, f_d);
    l.fn = nn_kl_div_loss;
    np_loss_case(e, "kl_div_loss", &l, nn_shape1(7), kx, kt, k_y, k_d);
    l.d.log_target = 1;
    np_loss_case(e, "kl_div_loss log_target", &l, s6, klx, klt, kl_y, kl_d);
}

static nn_tensor b_bce_logits_legacy(nn_graph *g, const nn_tensor *in, const void *arg) {
    (void)arg;
    return nn_bce_with_logits(g, in[0], in[1]);
}
static nn_tensor b_mse_legacy(nn_graph *g, const nn_tensor *in, const void *arg) {
    (void)arg;
    return nn_mse(g, in[0], in[1]);
}

/* mean reductions: one NaN or inf makes the scalar NaN; the gradient stays finite wherever
   the element's own gradient is */
static void nanprop_losses_mean(const t_env *e) {
    static const double x[4] = {1, NAN, 2, 3}, t[4] = {0, 0, 0, 0};
    static const double y[1] = {NAN}, dx[4] = {0.5, NAN, 1, 1.5};
    static const double lx[3] = {-INFINITY, 0.5, 0.25}, lt[3] = {0.2, 0.3, 0};
    static const double ly[1] = {NAN}, ldx[3] = {-0.0666666701, 0.107486449, 0.187392175};
    np_loss l;
    np_case c;
    memset(&l, 0, sizeof l);
    l.fn = nn_mse_loss;
    np_loss_case(e, "mse_loss mean", &l, nn_shape1(4), x, t, y, dx);
    np_init(&c, "mse (nn_mse)", b_mse_legacy, NULL);
    np_in(&c, nn_shape1(4), x, dx);
    np_in(&c, nn_shape1(4), t, NULL);
    c.y = y;
    np_run(e, &c);
    l.fn = nn_bce_with_logits_loss;
    np_loss_case(e, "bce_with_logits_loss mean", &l, nn_shape1(3), lx, lt, ly, ldx);
    np_init(&c, "bce_with_logits (nn_bce_with_logits)", b_bce_logits_legacy, NULL);
    np_in(&c, nn_shape1(3), lx, ldx);
    np_in(&c, nn_shape1(3), lt, NULL);
    c.y = ly;
    np_run(e, &c);
}

static nn_tensor b_ce(nn_graph *g, const nn_tensor *in, const void *arg) {
    const np_loss *l = (const np_loss *)arg;
    nn_loss_desc d = l->d;
    if (l->pw == 2) d.weight = in[2];
    return l->fn(g, in[0], in[1], &d);
}
static nn_tensor b_xent_legacy(nn_graph *g, const nn_tensor *in, const void *arg) {
    (void)arg;
    return nn_softmax_cross_entropy(g, in[0], in[1]);
}

static void nanprop_losses_rows(const t_env *e) {
    /* logits [6, 3]: NaN in a row; a finite row; -inf at the label (inf) and elsewhere
       (finite); +inf (NaN); a finite row */
    static const double x[18] = {1, NAN, 2, 1, 2, 3, 1, -INFINITY, 2, 1, -INFINITY, 2, INFINITY, 1, 2, 0.5, 1, -1};
    static const double lab[6] = {0, 1, 1, 0, 0, 2}, lab_ign[6] = {0, 1, 1, 0, 0, -100};
    static const double cw[3] = {1, 2, 0.5};
    static const double ce_y[6] = {NAN, 1.40760589, INFINITY, 1.31326163, NAN, 2.55495691};
    static const double ce_d[18] = {NAN, NAN, NAN, 0.0900305808, -0.755271494, 0.665241003, 0.268941432, -1, 0.731058598,
                                    -0.731058598, 0, 0.731058598, NAN, NAN, NAN, 0.348207414, 0.574096978, -0.922304392};
    static const double ls_y[6] = {NAN, 1.40760589, INFINITY, INFINITY, NAN, 0};
    static const double ls_d[18] = {NAN, NAN, NAN, 0.0566972457, -0.688604832, 0.631907642, 0.235608101, -0.933333337,
                                    0.697725236, -0.664391875, -0.0333333351, 0.697725236, NAN, NAN, NAN, 0, 0, 0};
    static const double cw_y[6] = {NAN, 2.81521177, INFINITY, 1.31326163, NAN, 1.27747846};
    static const double cw_d[18] = {NAN, NAN, NAN, 0.180061162, -1.51054299, 1.33048201, 0.537882864, -2, 1.4621172,
                                    -0.731058598, 0, 0.731058598, NAN, NAN, NAN, 0.174103707, 0.287048489, -0.461152196};
    /* mean over 3 rows, one of them NaN */
    static const double mx[9] = {1, 2, 3, 1, NAN, 2, 0.5, 1, -1}, mlab[3] = {1, 0, 2};
    static const double m_y[1] = {NAN};
    static const double m_d[9] = {0.0300101936, -0.251757175, 0.221747011, NAN, NAN, NAN, 0.116069138, 0.191365659, -0.307434827};
    /* NLL picks one log-probability per row: NaN elsewhere in the row does not matter */
    static const double nx[12] = {-1, NAN, -2, -1, NAN, -3, -1, -INFINITY, -2, -1, INFINITY, -2};
    static const double nlab[4] = {0, 1, 1, 1};
    static const double n_y[4] = {1, NAN, INFINITY, -INFINITY};
    static const double n_d[12] = {-1, 0, 0, 0, -1, 0, 0, -1, 0, 0, -1, 0};
    np_loss l;
    np_case c;
    memset(&l, 0, sizeof l);
    l.fn = nn_cross_entropy_loss;
    l.d.reduction = NN_REDUCTION_NONE;
    np_init(&c, "cross_entropy_loss", b_ce, &l);
    np_in(&c, nn_shape2(6, 3), x, ce_d);
    np_in_i(&c, nn_shape1(6), lab);
    c.y = ce_y;
    np_run(e, &c);
    l.d.label_smoothing = 0.1f;
    np_init(&c, "cross_entropy_loss smoothing, ignore_index", b_ce, &l);
    np_in(&c, nn_shape2(6, 3), x, ls_d);
    np_in_i(&c, nn_shape1(6), lab_ign);
    c.y = ls_y;
    np_run(e, &c);
    l.d.label_smoothing = 0;
    l.pw = 2;
    np_init(&c, "cross_entropy_loss class weights", b_ce, &l);
    np_in(&c, nn_shape2(6, 3), x, cw_d);
    np_in_i(&c, nn_shape1(6), lab);
    np_in(&c, nn_shape1(3), cw, NULL);
    c.y = cw_y;
    np_run(e, &c);
    l.pw = 0;
    l.d.reduction = NN_REDUCTION_MEAN;
    np_init(&c, "cross_entropy_loss mean", b_ce, &l);
    np_in(&c, nn_shape2(3, 3), mx, m_d);
    np_in_i(&c, nn_shape1(3), mlab);
    c.y = m_y;
    np_run(e, &c);
    np_init(&c, "softmax_cross_entropy (legacy)", b_xent_legacy, NULL);
    np_in(&c, nn_shape2(3, 3), mx, m_d);
    np_in_i(&c, nn_shape1(3), mlab);
    c.y = m_y;
    np_run(e, &c);
    l.fn = nn_nll_loss;
    l.d.reduction = NN_REDUCTION_NONE;
    np_init(&c, "nll_loss", b_ce, &l);
    np_in(&c, nn_shape2(4, 3), nx, n_d);
    np_in_i(&c, nn_shape1(4), nlab);
    c.y = n_y;
    np_run(e, &c);
}

static nn_tensor b_cosine(nn_graph *g, const nn_tensor *in, const void *arg) {
    nn_loss_desc d;
    (void)arg;
    memset(&d, 0, sizeof d);
    d.reduction = NN_REDUCTION_NONE;
    return nn_cosine_embedding_loss(g, in[0], in[1], in[2], &d);
}
static nn_tensor b_triplet(nn_graph *g, const nn_tensor *in, const void *arg) {
    nn_loss_desc d;
    (void)arg;
    memset(&d, 0, sizeof d);
    d.reduction = NN_REDUCTION_NONE;
    return nn_triplet_margin_loss(g, in[0], in[1], in[2], &d);
}
static nn_tensor b_dice(nn_graph *g, const nn_tensor *in, const void *arg) {
    nn_loss_desc d;
    (void)arg;
    memset(&d, 0, sizeof d);
    d.reduction = NN_REDUCTION_NONE;
    return nn_dice_loss(g, in[0], in[1], &d);
}

static void nanprop_losses_pairs(const t_env *e) {
    /* cosine embedding, margin 0: rows NaN (t = 1), finite (t = -1), inf (t = 1: inf/inf),
       clamped (t = -1, cos < 0: 0), inf (t = -1: clamp_min(NaN, 0) is NaN) */
    static const double c1[10] = {1, NAN, 1, 2, INFINITY, 1, 1, 2, INFINITY, 1};
    static const double c2[10] = {1, 1, 1, 1, 1, 1, 1, -2, 1, 1};
    static const double ct[5] = {1, -1, 1, -1, -1};
    static const double c_y[5] = {NAN, 0.948683262, NAN, 0, NAN};
    static const double c_d1[10] = {NAN, NAN, 0.126491114, -0.0632455349, NAN, NAN, 0, 0, NAN, NAN};
    static const double c_d2[10] = {NAN, NAN, -0.158113867, 0.158113897, NAN, NAN, 0, 0, NAN, NAN};
    /* triplet, margin 1: NaN in the anchor; clamped; inf - inf; clamped */
    static const double ta[8] = {1, NAN, 1, 2, INFINITY, 1, 1, 2};
    static const double tp[8] = {1, 1, 1, 1, 1, 1, 1, 1.5};
    static const double tn[8] = {0, 1, 5, 1, 1, 1, 3, 2};
    static const double t_y[4] = {NAN, 0, NAN, 0};
    static const double t_da[8] = {NAN, NAN, 0, 0, NAN, 0, 0, 0};
    static const double t_dp[8] = {NAN, NAN, 0, 0, NAN, 0, 0, 0};
    static const double t_dn[8] = {NAN, NAN, 0, 0, NAN, 0, 0, 0};
    /* dice (smooth 1) per row: a NaN or inf probability makes its row NaN */
    static const double dp[6] = {0.5, NAN, 0.5, INFINITY, 0.2, 0.3}, dt[6] = {1, 0, 1, 0, 1, 0};
    static const double d_y[3] = {NAN, NAN, 0.439999998};
    static const double d_d[6] = {NAN, NAN, NAN, NAN, -0.575999975, 0.224000007};
    np_case c;
    np_init(&c, "cosine_embedding_loss", b_cosine, NULL);
    np_in(&c, nn_shape2(5, 2), c1, c_d1);
    np_in(&c, nn_shape2(5, 2), c2, c_d2);
    np_in(&c, nn_shape1(5), ct, NULL);
    c.y = c_y;
    np_run(e, &c);
    np_init(&c, "triplet_margin_loss", b_triplet, NULL);
    np_in(&c, nn_shape2(4, 2), ta, t_da);
    np_in(&c, nn_shape2(4, 2), tp, t_dp);
    np_in(&c, nn_shape2(4, 2), tn, t_dn);
    c.y = t_y;
    np_run(e, &c);
    np_init(&c, "dice_loss", b_dice, NULL);
    np_in(&c, nn_shape2(3, 2), dp, d_d);
    np_in(&c, nn_shape2(3, 2), dt, NULL);
    c.y = d_y;
    np_run(e, &c);
}

/* ---- convolutions: a double reference in which the zero padding takes part in the
   products (PyTorch's im2col and oneDNN kernels: a NaN weight makes every output of its
   channel NaN, those at the border too) ---- */

typedef struct np_conv {
    int N, C, D, H, W, K, KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw, G;
    int dims; /* 2 or 3 */
} np_conv;

static int np_conv_out(int n, int k, int s, int p, int d) { return (n + 2 * p - d * (k - 1) - 1) / s + 1; }

/* y = conv(x, w) + b (b may be NULL) and the gradients of sum(y * dy); the padding's
   products with the weight and with dy are taken (0 * NaN is NaN) */
static void conv_ref(const np_conv *q, const double *x, const double *w, const double *b, const double *dy, double *y,
                     double *dx, double *dw, double *db) {
    int OD = np_conv_out(q->D, q->KD, q->sd, q->pd, q->dd), OH = np_conv_out(q->H, q->KH, q->sh, q->ph, q->dh);
    int OW = np_conv_out(q->W, q->KW, q->sw, q->pw, q->dw), Cg = q->C / q->G, Kg = q->K / q->G;
    long nx = (long)q->N * q->C * q->D * q->H * q->W, nw = (long)q->K * Cg * q->KD * q->KH * q->KW, i;
    int n, k, od, oh, ow, ci, a, bb, cc;
    for (i = 0; i < nx; i++) dx[i] = 0;
    for (i = 0; i < nw; i++) dw[i] = 0;
    for (k = 0; k < q->K; k++) db[k] = 0;
    for (n = 0; n < q->N; n++)
        for (k = 0; k < q->K; k++)
            for (od = 0; od < OD; od++)
                for (oh = 0; oh < OH; oh++)
                    for (ow = 0; ow < OW; ow++) {
                        long o = (((long)n * q->K + k) * OD + od) * OH * OW + oh * OW + ow;
                        double s = b ? b[k] : 0, g = dy[o];
                        int grp = k / Kg;
                        db[k] += g;
                        for (ci = 0; ci < Cg; ci++)
                            for (a = 0; a < q->KD; a++)
                                for (bb = 0; bb < q->KH; bb++)
                                    for (cc = 0; cc < q->KW; cc++) {
                                        int id = od * q->sd - q->pd + a * q->dd, ih = oh * q->sh - q->ph + bb * q->dh;
                                        int iw = ow * q->sw - q->pw + cc * q->dw, c = grp * Cg + ci;
                                        long wi = (((long)k * Cg + ci) * q->KD + a) * q->KH * q->KW + bb * q->KW + cc;
                                        int inside = id >= 0 && id < q->D && ih >= 0 && ih < q->H && iw >= 0 && iw < q->W;
                                        long xi = inside ? ((((long)n * q->C + c) * q->D + id) * q->H + ih) * q->W + iw : -1;
                                        double xv = inside ? x[xi] : 0.0;
                                        s += w[wi] * xv;
                                        dw[wi] += xv * g;
                                        if (inside) dx[xi] += w[wi] * g;
                                    }
                        y[o] = s;
                    }
}

static nn_tensor b_conv(nn_graph *g, const nn_tensor *in, const void *arg) {
    const np_conv *q = (const np_conv *)arg;
    nn_tensor bias = in[2];
    if (q->dims == 2) {
        nn_conv2d_desc d;
        memset(&d, 0, sizeof d);
        d.stride_h = q->sh;
        d.stride_w = q->sw;
        d.pad_h = q->ph ? q->ph : NN_ZERO;
        d.pad_w = q->pw ? q->pw : NN_ZERO;
        d.dilation_h = q->dh;
        d.dilation_w = q->dw;
        d.groups = q->G;
        return nn_conv2d(g, in[0], in[1], bias, &d);
    } else {
        nn_conv3d_desc d;
        memset(&d, 0, sizeof d);
        d.stride_d = q->sd;
        d.stride_h = q->sh;
        d.stride_w = q->sw;
        d.pad_d = q->pd ? q->pd : NN_ZERO;
        d.pad_h = q->ph ? q->ph : NN_ZERO;
        d.pad_w = q->pw ? q->pw : NN_ZERO;
        d.dilation_d = q->dd;
        d.dilation_h = q->dh;
        d.dilation_w = q->dw;
        d.groups = q->G;
        return nn_conv3d(g, in[0], in[1], bias, &d);
    }
}

/* x_bad: (flat index, value) pairs written into x; w_bad likewise into the weight; dy_bad
   (optional, nyb pairs) into dy, the incoming gradient */
static void nanprop_conv_one(const t_env *e, const char *name, const np_conv *q, const long *xi, const double *xv, int nxb,
                             const long *wi, const double *wv, int nwb, const long *yi, const double *yv, int nyb) {
    int OD = np_conv_out(q->D, q->KD, q->sd, q->pd, q->dd), OH = np_conv_out(q->H, q->KH, q->sh, q->ph, q->dh);
    int OW = np_conv_out(q->W, q->KW, q->sw, q->pw, q->dw);
    long nx = (long)q->N * q->C * q->D * q->H * q->W, nw = (long)q->K * (q->C / q->G) * q->KD * q->KH * q->KW;
    long ny = (long)q->N * q->K * OD * OH * OW;
    double *x = (double *)malloc(sizeof(double) * nx), *w = (double *)malloc(sizeof(double) * nw), b[16];
    double *y = (double *)malloc(sizeof(double) * ny), *dx = (double *)malloc(sizeof(double) * nx);
    double *dw = (double *)malloc(sizeof(double) * nw), db[16], *g = (double *)malloc(sizeof(double) * ny);
    np_case c;
    long i;
    np_fill(x, nx, -1, 1, 81);
    np_fill(w, nw, -1, 1, 82);
    np_fill(b, q->K, -1, 1, 83);
    for (i = 0; i < nxb; i++) x[xi[i]] = xv[i];
    for (i = 0; i < nwb; i++) w[wi[i]] = wv[i];
    for (i = 0; i < ny; i++) g[i] = 1;
    for (i = 0; i < nyb; i++) g[yi[i]] = yv[i];
    conv_ref(q, x, w, b, g, y, dx, dw, db);
    np_init(&c, name, b_conv, q);
    if (q->dims == 2) {
        np_in(&c, nn_shape4(q->N, q->C, q->H, q->W), x, dx);
        np_in(&c, nn_shape4(q->K, q->C / q->G, q->KH, q->KW), w, dw);
    } else {
        np_in(&c, nn_shape5(q->N, q->C, q->D, q->H, q->W), x, dx);
        np_in(&c, nn_shape5(q->K, q->C / q->G, q->KD, q->KH, q->KW), w, dw);
    }
    np_in(&c, nn_shape1(q->K), b, db);
    c.y = y;
    c.w = g;
    np_run(e, &c);
    free(x);
    free(w);
    free(y);
    free(dx);
    free(dw);
    free(g);
}

static np_conv np_conv2(int N, int C, int H, int W, int K, int KH, int KW, int s, int p, int G) {
    np_conv q;
    memset(&q, 0, sizeof q);
    q.dims = 2;
    q.N = N;
    q.C = C;
    q.D = 1;
    q.H = H;
    q.W = W;
    q.K = K;
    q.KD = 1;
    q.KH = KH;
    q.KW = KW;
    q.sd = q.dd = 1;
    q.sh = q.sw = s;
    q.ph = q.pw = p;
    q.dh = q.dw = 1;
    q.G = G;
    return q;
}

static void nanprop_conv(const t_env *e) {
    static np_conv q1, q2, q3, q4, q5;
    /* x [2, 3, 6, 7], w [4, 3, 3, 3], pad 1: NaN inside, inf in a corner, -inf meeting a
       zero weight; a NaN weight without padding */
    long xi1[3] = {1 * 42 + 2 * 7 + 3, 3 * 42 + 0, 4 * 42 + 3 * 7 + 3};
    double xv1[3] = {NAN, INFINITY, -INFINITY};
    long wi1[1] = {2 * 27 + 13}; /* the centre tap of output channel 2, input channel 1 */
    double wv1[1] = {0};
    long wi2[1] = {1 * 27 + 5};
    double wv2[1] = {NAN};
    q1 = np_conv2(2, 3, 6, 7, 4, 3, 3, 1, 1, 1);
    /* dy: NaN at a corner output of channel 1 (its window reaches the padding: every tap's
       weight gradient of channel 1 is NaN), inf inside channel 3 */
    long yi1[2] = {1 * 42 + 0, 42 * 4 + 3 * 42 + 2 * 7 + 3};
    double yv1[2] = {NAN, INFINITY};
    nanprop_conv_one(e, "conv2d x[2, 3, 6, 7] w[4, 3, 3, 3] pad 1", &q1, xi1, xv1, 3, wi1, wv1, 1, NULL, NULL, 0);
    nanprop_conv_one(e, "conv2d pad 1, NaN and inf in dy", &q1, xi1, xv1, 0, wi1, wv1, 0, yi1, yv1, 2);
    q2 = np_conv2(2, 3, 6, 7, 4, 3, 3, 1, 0, 1);
    nanprop_conv_one(e, "conv2d NaN weight, no padding", &q2, xi1, xv1, 0, wi2, wv2, 1, NULL, NULL, 0);
    /* the NaN weight with padding: its products with the padding are NaN too */
    nanprop_conv_one(e, "conv2d NaN weight, pad 1", &q1, xi1, xv1, 0, wi2, wv2, 1, NULL, NULL, 0);
    /* strided, and depthwise (its own CPU kernels) */
    q3 = np_conv2(2, 3, 6, 7, 6, 3, 3, 2, 1, 1);
    nanprop_conv_one(e, "conv2d stride 2", &q3, xi1, xv1, 3, wi1, wv1, 0, NULL, NULL, 0);
    q4 = np_conv2(1, 4, 9, 40, 4, 3, 3, 1, 1, 4);
    {
        long xi4[3] = {0 * 360 + 4 * 40 + 17, 2 * 360 + 8 * 40 + 39, 3 * 360 + 0};
        long wi4[1] = {2 * 9 + 0};
        double wv4[1] = {NAN};
        long yi4[3] = {1 * 360 + 8 * 40 + 39, 2 * 360 + 4 * 40 + 20, 3 * 360 + 5};
        double yv4[3] = {INFINITY, NAN, NAN};
        nanprop_conv_one(e, "conv2d depthwise x[1, 4, 9, 40]", &q4, xi4, xv1, 3, wi1, wv1, 0, NULL, NULL, 0);
        nanprop_conv_one(e, "conv2d depthwise NaN weight, pad 1", &q4, xi4, xv1, 0, wi4, wv4, 1, NULL, NULL, 0);
        nanprop_conv_one(e, "conv2d depthwise, NaN and inf in dy", &q4, xi4, xv1, 0, wi4, wv4, 0, yi4, yv4, 3);
    }
    /* conv3d x [1, 2, 4, 5, 5], w [3, 2, 2, 3, 3], pad 1 */
    memset(&q5, 0, sizeof q5);
    q5.dims = 3;
    q5.N = 1;
    q5.C = 2;
    q5.D = 4;
    q5.H = q5.W = 5;
    q5.K = 3;
    q5.KD = 2;
    q5.KH = q5.KW = 3;
    q5.sd = q5.sh = q5.sw = 1;
    q5.pd = q5.ph = q5.pw = 1;
    q5.dd = q5.dh = q5.dw = 1;
    q5.G = 1;
    {
        long xi5[3] = {0 * 100 + 1 * 25 + 2 * 5 + 2, 1 * 100 + 3 * 25 + 4 * 5 + 4, 1 * 100 + 0};
        long wi5[1] = {1 * 36 + 18 + 4};
        double wv5[1] = {0};
        long wi6[1] = {2 * 36 + 7};
        double wv6[1] = {NAN};
        long yi5[2] = {0 * 125 + 0, 2 * 125 + 2 * 25 + 2 * 5 + 2};
        double yv5[2] = {NAN, -INFINITY};
        nanprop_conv_one(e, "conv3d x[1, 2, 4, 5, 5] w[3, 2, 2, 3, 3] pad 1", &q5, xi5, xv1, 3, wi5, wv5, 1, NULL, NULL, 0);
        nanprop_conv_one(e, "conv3d NaN weight, pad 1", &q5, xi5, xv1, 0, wi6, wv6, 1, NULL, NULL, 0);
        nanprop_conv_one(e, "conv3d pad 1, NaN and inf in dy", &q5, xi5, xv1, 0, wi6, wv6, 0, yi5, yv5, 2);
    }
}

/* ---- normalisation: a NaN or inf makes its statistics group NaN (mean inf, variance
   inf - inf), and nothing else; the weight's gradient sums over groups, the bias's does
   not see x ---- */

typedef struct np_norm { int kind, groups; } np_norm; /* kind: 0 batch, 1 layer, 2 group, 3 instance */
static nn_tensor b_norm(nn_graph *g, const nn_tensor *in, const void *arg) {
    const np_norm *q = (const np_norm *)arg;
    nn_norm_desc bd;
    switch (q->kind) {
    case 0:
        memset(&bd, 0, sizeof bd);
        return nn_batch_norm(g, in[0], in[1], in[2], &bd);
    case 1: return nn_layer_norm(g, in[0], 1, in[1], in[2], NULL);
    case 2: return nn_group_norm(g, in[0], q->groups, in[1], in[2], NULL);
    default: return nn_instance_norm(g, in[0], in[1], in[2], NULL);
    }
}

/* x [A, C, S] with the group of element (a, c) given by group(a, c); bad: groups that hold
   a NaN or inf. Output and dx: NaN in the bad groups, finite elsewhere; dgamma[c]: NaN when
   channel c meets a bad group; dbeta: finite. */
static void nanprop_norm_one(const t_env *e, const char *name, const np_norm *q, nn_shape s, int A, int C, int S,
                             const long *at, const double *v, int nbad) {
    double x[96], y[96], dx[96], ga[16], be[16], dga[16], dbe[16];
    int bad[96], a, c, k, i;
    long n = (long)A * C * S;
    np_case cs;
    np_fill(x, n, -2, 2, 91);
    np_fill(ga, C, 0.5, 1.5, 92);
    np_fill(be, C, -1, 1, 93);
    memset(bad, 0, sizeof bad);
    for (i = 0; i < nbad; i++) x[at[i]] = v[i];
    for (k = 0; k < nbad; k++) {
        int ak = (int)(at[k] / (C * S)), ck = (int)(at[k] / S % C);
        for (a = 0; a < A; a++)
            for (c = 0; c < C; c++) {
                int same = q->kind == 0 ? c == ck
                         : q->kind == 1 ? a == ak
                         : q->kind == 2 ? a == ak && c / (C / q->groups) == ck / (C / q->groups)
                                        : a == ak && c == ck;
                if (same) bad[a * C + c] = 1;
            }
    }
    for (c = 0; c < C; c++) {
        dga[c] = FIN;
        dbe[c] = FIN;
        for (a = 0; a < A; a++)
            if (bad[a * C + c]) dga[c] = NAN;
    }
    for (i = 0; i < n; i++) {
        int ac = (int)(i / S);
        y[i] = dx[i] = bad[ac] ? NAN : FIN;
    }
    np_init(&cs, name, b_norm, q);
    np_in(&cs, s, x, dx);
    np_in(&cs, nn_shape1(C), ga, dga);
    np_in(&cs, nn_shape1(C), be, dbe);
    cs.y = y;
    {
        double w[96];
        np_fill(w, n, 0.5, 2, 94); /* a dy that is not constant: the gradients are not all 0 */
        cs.w = w;
        np_run(e, &cs);
    }
}

static void nanprop_norm(const t_env *e) {
    static const np_norm bn = {0, 0}, ln = {1, 0}, gn = {2, 2}, in = {3, 0};
    long at1[1] = {1 * 12 + 0 * 4 + 2}; /* x [3, 3, 4]: sample 1, channel 0 (layer norm [3, 12]: row 1) */
    long at2[2] = {1 * 12 + 0 * 4 + 2, 2 * 12 + 2 * 4 + 3}; /* and sample 2, channel 2 (row 2) */
    long atg[2] = {1 * 12 + 0 * 3 + 1, 0 * 12 + 3 * 3 + 2}; /* x [2, 4, 3]: (1, 0) and (0, 3) */
    double nan1[1] = {NAN}, naninf[2] = {NAN, INFINITY}, ninf[1] = {-INFINITY};
    nanprop_norm_one(e, "batch_norm x[3, 3, 4] NaN", &bn, nn_shape3(3, 3, 4), 3, 3, 4, at1, nan1, 1);
    nanprop_norm_one(e, "batch_norm x[3, 3, 4] NaN, +inf", &bn, nn_shape3(3, 3, 4), 3, 3, 4, at2, naninf, 2);
    nanprop_norm_one(e, "layer_norm x[3, 12] NaN, +inf", &ln, nn_shape2(3, 12), 3, 12, 1, at2, naninf, 2);
    nanprop_norm_one(e, "layer_norm x[3, 12] -inf", &ln, nn_shape2(3, 12), 3, 12, 1, at1, ninf, 1);
    nanprop_norm_one(e, "group_norm x[2, 4, 3] 2 groups", &gn, nn_shape3(2, 4, 3), 2, 4, 3, atg, naninf, 2);
    nanprop_norm_one(e, "instance_norm x[3, 3, 4]", &in, nn_shape3(3, 3, 4), 3, 3, 4, at2, naninf, 2);
}

/* batch norm's running statistics take the batch's NaN (PyTorch's too), channel by
   channel; an eval graph normalising with finite running statistics keeps a NaN to its
   element */
static void nanprop_bn_running(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_norm_desc bd;
    nn_init ones, zeros;
    nn_tensor x, y, rm, rv;
    double xv[24];
    float xf[24], yf[24], m[3], v[3];
    int i;
    if (!t_begin(e, "nanprop: batch_norm running statistics, eval")) return;
    np_fill(xv, 24, -2, 2, 95);
    xv[1 * 12 + 1 * 4 + 2] = NAN; /* channel 1 */
    for (i = 0; i < 24; i++) xf[i] = (float)xv[i];
    memset(&ones, 0, sizeof ones);
    ones.kind = NN_INIT_CONSTANT;
    ones.a = 1;
    memset(&zeros, 0, sizeof zeros);
    memset(&gd, 0, sizeof gd);
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape3(2, 3, 4));
    rm = nn_buffer(g, "bn.running_mean", nn_shape1(3), zeros);
    rv = nn_buffer(g, "bn.running_var", nn_shape1(3), ones);
    memset(&bd, 0, sizeof bd);
    bd.running_mean = rm;
    bd.running_var = rv;
    y = nn_batch_norm(g, x, NN_NONE, NN_NONE, &bd);
    nn_graph_output(g, y);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    T_OK(nn_tensor_write(g, x, xf, sizeof xf), ctx);
    if (!T_OK(nn_graph_forward(g), ctx)) goto done;
    if (T_OK(nn_tensor_read(g, rm, m, sizeof m), ctx) && T_OK(nn_tensor_read(g, rv, v, sizeof v), ctx))
        for (i = 0; i < 3; i++)
            T_CHECK(i == 1 ? isnan(m[i]) && isnan(v[i]) : isfinite(m[i]) && isfinite(v[i]),
                    "running statistics of channel %d: mean %g, var %g (the NaN is in channel 1)", i, m[i], v[i]);
    nn_graph_destroy(g);
    g = NULL;
    /* eval: the running statistics (0, 1) normalise; the NaN stays where it is */
    gd.eval = 1;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape3(2, 3, 4));
    bd.running_mean = nn_buffer(g, "bn.running_mean", nn_shape1(3), zeros);
    bd.running_var = nn_buffer(g, "bn.running_var", nn_shape1(3), ones);
    y = nn_batch_norm(g, x, NN_NONE, NN_NONE, &bd);
    nn_graph_output(g, y);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    xf[5] = INFINITY;
    T_OK(nn_tensor_write(g, x, xf, sizeof xf), ctx);
    if (!T_OK(nn_graph_forward(g), ctx)) goto done;
    if (T_OK(nn_tensor_read(g, y, yf, sizeof yf), ctx))
        for (i = 0; i < 24; i++)
            T_CHECK(i == 18 ? isnan(yf[i]) : i == 5 ? yf[i] == INFINITY : isfinite(yf[i]), "eval batch_norm y[%d] = %g for x = %g", i,
                    yf[i], xf[i]);
done:
    nn_graph_destroy(g);
    t_end();
}

/* ---- pooling: references with PyTorch's rules (max: a NaN wins, val > max || isnan(val),
   the gradient to the first maximum; a window of -inf gives -inf; average: the sum over
   the window, inf - inf is NaN) ---- */

typedef struct np_pool {
    int max, kh, kw, sh, sw, ph, pw, dh, dw, ceil, exclude, global, adaptive, oh, ow, one_d;
} np_pool;

static nn_tensor b_pool(nn_graph *g, const nn_tensor *in, const void *arg) {
    const np_pool *p = (const np_pool *)arg;
    if (p->global) return p->max ? nn_global_max_pool2d(g, in[0]) : nn_global_avg_pool2d(g, in[0]);
    if (p->adaptive) return nn_adaptive_avg_pool2d(g, in[0], p->oh, p->ow);
    if (p->one_d) {
        nn_pool1d_desc d;
        memset(&d, 0, sizeof d);
        d.kernel = p->kw;
        d.stride = p->sw;
        d.pad = p->pw ? p->pw : NN_ZERO;
        d.dilation = p->dw;
        d.ceil_mode = p->ceil;
        d.exclude_pad = p->exclude;
        return p->max ? nn_max_pool1d(g, in[0], &d) : nn_avg_pool1d(g, in[0], &d);
    } else {
        nn_pool2d_desc d;
        memset(&d, 0, sizeof d);
        d.kernel_h = p->kh;
        d.kernel_w = p->kw;
        d.stride_h = p->sh;
        d.stride_w = p->sw;
        d.pad_h = p->ph ? p->ph : NN_ZERO;
        d.pad_w = p->pw ? p->pw : NN_ZERO;
        d.dilation_h = p->dh;
        d.dilation_w = p->dw;
        d.ceil_mode = p->ceil;
        d.exclude_pad = p->exclude;
        return p->max ? nn_max_pool2d(g, in[0], &d) : nn_avg_pool2d(g, in[0], &d);
    }
}

/* one plane [H, W] -> [OH, OW] (floor mode, no ceil windows) and dx of sum(y * w) */
static void pool_ref(const np_pool *p, const double *x, int H, int W, int OH, int OW, const double *w, double *y, double *dx) {
    int oh, ow, i, j;
    for (i = 0; i < H * W; i++) dx[i] = 0;
    for (oh = 0; oh < OH; oh++)
        for (ow = 0; ow < OW; ow++) {
            int h0, h1, w0, w1, cnt;
            if (p->adaptive) {
                h0 = oh * H / OH;
                h1 = ((oh + 1) * H + OH - 1) / OH;
                w0 = ow * W / OW;
                w1 = ((ow + 1) * W + OW - 1) / OW;
            } else {
                h0 = oh * p->sh - p->ph;
                h1 = h0 + (p->kh - 1) * p->dh + 1;
                w0 = ow * p->sw - p->pw;
                w1 = w0 + (p->kw - 1) * p->dw + 1;
            }
            if (p->max) {
                double m = -INFINITY;
                int arg = -1;
                for (i = h0; i < h1; i += p->dh)
                    for (j = w0; j < w1; j += p->dw) {
                        double v;
                        if (i < 0 || i >= H || j < 0 || j >= W) continue;
                        v = x[i * W + j];
                        if (arg < 0 || v > m || isnan(v)) {
                            m = v;
                            arg = i * W + j;
                        }
                    }
                y[oh * OW + ow] = m;
                if (arg >= 0) dx[arg] += w[oh * OW + ow];
            } else {
                double s = 0;
                int n = 0;
                cnt = (h1 < H + p->ph ? h1 : H + p->ph) - h0;
                cnt *= (w1 < W + p->pw ? w1 : W + p->pw) - w0;
                for (i = h0; i < h1; i++)
                    for (j = w0; j < w1; j++)
                        if (i >= 0 && i < H && j >= 0 && j < W) {
                            s += x[i * W + j];
                            n++;
                        }
                if (p->adaptive || p->exclude) cnt = n;
                y[oh * OW + ow] = s / cnt;
                for (i = h0; i < h1; i++)
                    for (j = w0; j < w1; j++)
                        if (i >= 0 && i < H && j >= 0 && j < W) dx[i * W + j] += w[oh * OW + ow] / cnt;
            }
        }
}

static void nanprop_pool_one(const t_env *e, const char *name, const np_pool *p, int NC, int H, int W, int OH, int OW,
                             const long *at, const double *v, int nbad, const long *wat, const double *wv, int nwb) {
    double x[512], y[512], dx[512], w[512];
    long i;
    int c;
    np_case cs;
    np_fill(x, (long)NC * H * W, -2, 2, 101);
    for (i = 0; i < NC * OH * OW; i++) w[i] = 1;
    for (i = 0; i < nbad; i++) x[at[i]] = v[i];
    for (i = 0; i < nwb; i++) w[wat[i]] = wv[i];
    for (c = 0; c < NC; c++) pool_ref(p, x + c * H * W, H, W, OH, OW, w + c * OH * OW, y + c * OH * OW, dx + c * H * W);
    np_init(&cs, name, b_pool, p);
    np_in(&cs, p->one_d ? nn_shape3(1, NC, W) : nn_shape4(1, NC, H, W), x, dx);
    cs.y = y;
    cs.w = w;
    np_run(e, &cs);
}

static void nanprop_pool(const t_env *e) {
    static np_pool mp, mp2, mp1, gmp, ap, ap2, gap, aap;
    /* x [1, 2, 7, 7], kernel 3, stride 2, pad 1: NaN in overlapping windows, +inf, -inf
       beside finite values */
    long at[8] = {1 * 7 + 1, 2 * 7 + 2, 3 * 7 + 6, 0 * 7 + 3, 0 * 7 + 4, 49 + 5 * 7 + 5, 49 + 6 * 7 + 0, 49 + 2 * 7 + 4};
    double v[8] = {NAN, INFINITY, INFINITY, -INFINITY, -INFINITY, NAN, -INFINITY, NAN};
    /* an incoming gradient with NaN and inf: it reaches the argmax alone */
    long wat[2] = {1, 16 + 5};
    double wv[2] = {NAN, INFINITY};
    memset(&mp, 0, sizeof mp);
    mp.max = 1;
    mp.kh = mp.kw = 3;
    mp.sh = mp.sw = 2;
    mp.ph = mp.pw = 1;
    mp.dh = mp.dw = 1;
    nanprop_pool_one(e, "max_pool2d 3x3 stride 2 pad 1", &mp, 2, 7, 7, 4, 4, at, v, 8, NULL, NULL, 0);
    nanprop_pool_one(e, "max_pool2d, NaN and inf in dy", &mp, 2, 7, 7, 4, 4, at, v, 5, wat, wv, 2);
    /* the CPU's branch-free 2x2 path: windows inside the plane */
    mp2 = mp;
    mp2.kh = mp2.kw = 2;
    mp2.ph = mp2.pw = 0;
    {
        /* NaN and inf in one window; a window of -inf alone (-inf, the gradient to its first) */
        long at2[7] = {0, 9, 2 * 8 + 5, 4 * 8 + 4, 4 * 8 + 5, 5 * 8 + 4, 5 * 8 + 5};
        double v2[7] = {NAN, INFINITY, NAN, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        nanprop_pool_one(e, "max_pool2d 2x2 stride 2", &mp2, 2, 6, 8, 3, 4, at2, v2, 7, NULL, NULL, 0);
        mp2.dh = mp2.dw = 2;
        mp2.kh = mp2.kw = 3;
        mp2.sh = mp2.sw = 1;
        nanprop_pool_one(e, "max_pool2d 3x3 dilation 2", &mp2, 2, 6, 8, 2, 4, at2, v2, 7, NULL, NULL, 0);
    }
    memset(&mp1, 0, sizeof mp1);
    mp1.max = 1;
    mp1.one_d = 1;
    mp1.kh = mp1.sh = mp1.dh = 1;
    mp1.kw = 3;
    mp1.sw = 2;
    mp1.dw = 1;
    {
        long at1[4] = {2, 5, 9 + 0, 9 + 8};
        double v1[4] = {NAN, INFINITY, -INFINITY, NAN};
        nanprop_pool_one(e, "max_pool1d 3 stride 2", &mp1, 2, 1, 9, 1, 4, at1, v1, 4, NULL, NULL, 0);
    }
    memset(&gmp, 0, sizeof gmp);
    gmp.max = gmp.global = 1;
    gmp.kh = 5;
    gmp.kw = 6;
    gmp.sh = gmp.sw = gmp.dh = gmp.dw = 1;
    {
        long atg[4] = {7, 30 + 4, 30 + 29, 60 + 11};
        double vg[4] = {NAN, INFINITY, NAN, -INFINITY};
        nanprop_pool_one(e, "global_max_pool2d", &gmp, 3, 5, 6, 1, 1, atg, vg, 4, NULL, NULL, 0);
    }
    memset(&ap, 0, sizeof ap);
    ap.kh = ap.kw = 3;
    ap.sh = ap.sw = 2;
    ap.ph = ap.pw = 1;
    ap.dh = ap.dw = 1;
    nanprop_pool_one(e, "avg_pool2d 3x3 stride 2 pad 1", &ap, 2, 7, 7, 4, 4, at, v, 8, NULL, NULL, 0);
    ap2 = ap;
    ap2.exclude = 1;
    nanprop_pool_one(e, "avg_pool2d, NaN and inf in dy", &ap2, 2, 7, 7, 4, 4, at, v, 5, wat, wv, 2);
    memset(&gap, 0, sizeof gap);
    gap.global = 1;
    gap.kh = 5;
    gap.kw = 6;
    gap.sh = gap.sw = gap.dh = gap.dw = 1;
    {
        long atg[3] = {7, 30 + 4, 30 + 29};
        double vg[3] = {NAN, INFINITY, -INFINITY};
        nanprop_pool_one(e, "global_avg_pool2d", &gap, 3, 5, 6, 1, 1, atg, vg, 3, NULL, NULL, 0);
    }
    memset(&aap, 0, sizeof aap);
    aap.adaptive = 1;
    aap.oh = 2;
    aap.ow = 3;
    aap.dh = aap.dw = 1;
    {
        long ata[3] = {2 * 7 + 2, 25 + 0, 25 + 4 * 5 + 4};
        double va[3] = {NAN, INFINITY, -INFINITY};
        nanprop_pool_one(e, "adaptive_avg_pool2d 5x5 -> 2x3", &aap, 2, 5, 5, 2, 3, ata, va, 3, NULL, NULL, 0);
    }
}

/* ---- copying ops: pad, upsample, concat, slice, permute, gather. The forward copies
   NaN and inf to where they go (nearest upsampling is a copy: no inf * 0), bilinear
   upsampling multiplies (PyTorch's formula, whose zero weights at the edges still meet
   their element); the backward carries an incoming NaN or inf back to its source ---- */

typedef struct np_shape { int kind, a, b, c, d, mode; } np_shape;
static nn_tensor b_shape(nn_graph *g, const nn_tensor *in, const void *arg) {
    const np_shape *q = (const np_shape *)arg;
    switch (q->kind) {
    case 0: return nn_pad2d(g, in[0], q->a, q->b, q->c, q->d, (nn_pad_mode)q->mode);
    case 1: return nn_upsample2d(g, in[0], q->a, q->b, (nn_upsample_mode)q->mode);
    case 2: return nn_concat(g, in, 2, q->a);
    case 3: return nn_slice(g, in[0], q->a, q->b, q->c);
    case 4: {
        int perm[3];
        perm[0] = q->a;
        perm[1] = q->b;
        perm[2] = q->c;
        return nn_permute(g, in[0], perm, 3);
    }
    default: return nn_gather_rows(g, in[0], in[1]);
    }
}

/* a copy y[o] = x[src[o]] (src -1: zero) and its gradient dx[i] = sum of w[o] over src[o] == i */
static void copy_ref(const long *src, long ny, const double *x, long nx, const double *w, double *y, double *dx) {
    long o;
    for (o = 0; o < nx; o++) dx[o] = 0;
    for (o = 0; o < ny; o++) {
        y[o] = src[o] < 0 ? 0 : x[src[o]];
        if (src[o] >= 0) dx[src[o]] += w[o];
    }
}

static void np_copy_case(const t_env *e, const char *name, const np_shape *q, nn_shape sx, const double *x, long nx,
                         const long *src, long ny, const double *w) {
    double y[512], dx[512];
    np_case c;
    copy_ref(src, ny, x, nx, w, y, dx);
    np_init(&c, name, b_shape, q);
    np_in(&c, sx, x, dx);
    c.y = y;
    c.w = w;
    np_run(e, &c);
}

static long reflect(long i, long n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
    return i;
}

static void nanprop_shape(const t_env *e) {
    static np_shape pz, pr, un, ub, cc, sl, pm, ga;
    double x[64], x2[64], w[512];
    long src[512], o;
    int P = 2, H = 3, W = 4, OH, OW, p, i, j;
    np_fill(x, 64, -2, 2, 111);
    x[1 * 4 + 2] = NAN;
    x[2 * 4 + 0] = INFINITY;
    x[12 + 0] = -INFINITY;
    x[12 + 2 * 4 + 3] = NAN;
    /* pad (left 1, right 2, top 2, bottom 0), zeros and reflect; dy holds NaN on the
       padding (dropped) and inf on a copied element (passed) */
    for (p = 0; p < 2; p++) {
        np_shape *q = p ? &pr : &pz;
        char name[80];
        q->kind = 0;
        q->a = 1;
        q->b = 2;
        q->c = 2;
        q->d = 0;
        q->mode = p ? NN_PAD_REFLECT : NN_PAD_ZEROS;
        OH = H + 2;
        OW = W + 3;
        for (o = 0; o < P * OH * OW; o++) {
            long pl = o / (OH * OW), oh = o / OW % OH, ow = o % OW, ih = oh - 2, iw = ow - 1;
            if (p) {
                ih = reflect(ih, H);
                iw = reflect(iw, W);
            }
            src[o] = ih < 0 || ih >= H || iw < 0 || iw >= W ? -1 : (pl * H + ih) * W + iw;
            w[o] = 1;
        }
        w[0] = NAN;                      /* a padding element of plane 0 */
        w[OH * OW + 3 * OW + 2] = INFINITY; /* a copied element of plane 1 */
        snprintf(name, sizeof name, "pad2d %s, NaN and inf in dy", p ? "reflect" : "zeros");
        np_copy_case(e, name, q, nn_shape4(1, P, H, W), x, P * H * W, src, P * OH * OW, w);
    }
    /* nearest upsampling x2, x3: a copy */
    un.kind = 1;
    un.a = 2;
    un.b = 3;
    un.mode = NN_UPSAMPLE_NEAREST;
    OH = H * 2;
    OW = W * 3;
    for (o = 0; o < P * OH * OW; o++) {
        long pl = o / (OH * OW), oh = o / OW % OH, ow = o % OW;
        src[o] = (pl * H + oh / 2) * W + ow / 3;
        w[o] = 1;
    }
    w[5] = INFINITY;
    w[OH * OW + 7] = NAN;
    np_copy_case(e, "upsample2d nearest, NaN and inf in dy", &un, nn_shape4(1, P, H, W), x, P * H * W, src, P * OH * OW, w);
    /* bilinear x2: PyTorch's h0l * (w0l * x00 + w1l * x01) + h1l * (w0l * x10 + w1l * x11),
       and its backward, which adds the four terms one by one: a term of weight 0 still
       carries a NaN or inf dy to its pixel (0 * inf) */
    ub = un;
    ub.b = 2;
    ub.mode = NN_UPSAMPLE_BILINEAR;
    for (p = 0; p < 2; p++) {
        double y[512], dx[64];
        np_case c;
        OH = H * 2;
        OW = W * 2;
        for (o = 0; o < P * OH * OW; o++) w[o] = 1;
        if (p) {
            w[0] = INFINITY;               /* output (0, 0): weight 0 on its neighbours */
            w[OH * OW + 3 * OW + 5] = NAN; /* plane 1 */
        }
        for (i = 0; i < P * H * W; i++) dx[i] = 0;
        for (o = 0; o < P * OH * OW; o++) {
            long pl = o / (OH * OW), oh = o / OW % OH, ow = o % OW, h0, h1, w0, w1;
            double sh = (oh + 0.5) / 2 - 0.5, sw = (ow + 0.5) / 2 - 0.5, lh, lw;
            const double *xp = x + pl * H * W;
            double *dp = dx + pl * H * W;
            if (sh < 0) sh = 0;
            if (sw < 0) sw = 0;
            h0 = (long)sh;
            w0 = (long)sw;
            h1 = h0 + (h0 < H - 1);
            w1 = w0 + (w0 < W - 1);
            lh = sh - h0;
            lw = sw - w0;
            y[o] = (1 - lh) * ((1 - lw) * xp[h0 * W + w0] + lw * xp[h0 * W + w1]) + lh * ((1 - lw) * xp[h1 * W + w0] + lw * xp[h1 * W + w1]);
            dp[h0 * W + w0] += (1 - lh) * (1 - lw) * w[o];
            dp[h0 * W + w1] += (1 - lh) * lw * w[o];
            dp[h1 * W + w0] += lh * (1 - lw) * w[o];
            dp[h1 * W + w1] += lh * lw * w[o];
        }
        np_init(&c, p ? "upsample2d bilinear, NaN and inf in dy" : "upsample2d bilinear", b_shape, &ub);
        np_in(&c, nn_shape4(1, P, H, W), x, dx);
        c.y = y;
        c.w = w;
        np_run(e, &c);
    }
    /* concat along dim 1 of [2, 3, 4] and [2, 2, 4] */
    np_fill(x2, 16, -2, 2, 112);
    x2[5] = NAN;
    x2[9] = -INFINITY;
    {
        double y[80], dx[24], dx2[16];
        np_case c;
        cc.kind = 2;
        cc.a = 1;
        for (o = 0; o < 40; o++) {
            long n = o / 20, r = o / 4 % 5, k = o % 4;
            y[o] = r < 3 ? x[(n * 3 + r) * 4 + k] : x2[(n * 2 + r - 3) * 4 + k];
            w[o] = 1;
        }
        w[7] = NAN;
        w[20 + 3 * 4 + 1] = INFINITY;
        for (o = 0; o < 24; o++) dx[o] = 1;
        for (o = 0; o < 16; o++) dx2[o] = 1;
        dx[7] = NAN;               /* x[0, 1, 3] */
        dx2[2 * 4 + 1] = INFINITY; /* x2[1, 0, 1] */
        np_init(&c, "concat [2, 3, 4] [2, 2, 4] dim 1, NaN and inf in dy", b_shape, &cc);
        np_in(&c, nn_shape3(2, 3, 4), x, dx);
        np_in(&c, nn_shape3(2, 2, 4), x2, dx2);
        c.y = y;
        c.w = w;
        np_run(e, &c);
    }
    /* slice [2, 3, 4] dim 2, start 1, length 2 */
    sl.kind = 3;
    sl.a = 2;
    sl.b = 1;
    sl.c = 2;
    for (o = 0; o < 12; o++) {
        src[o] = o / 2 * 4 + 1 + o % 2;
        w[o] = 1;
    }
    w[3] = NAN;
    w[10] = -INFINITY;
    np_copy_case(e, "slice dim 2 [1, 3), NaN and inf in dy", &sl, nn_shape3(2, 3, 4), x, 24, src, 12, w);
    /* permute [2, 3, 4] -> [4, 2, 3] */
    pm.kind = 4;
    pm.a = 2;
    pm.b = 0;
    pm.c = 1;
    for (i = 0; i < 4; i++)
        for (j = 0; j < 6; j++) {
            src[i * 6 + j] = j * 4 + i; /* y[k, n, r] = x[n, r, k] */
            w[i * 6 + j] = 1;
        }
    w[4] = INFINITY;
    w[13] = NAN;
    np_copy_case(e, "permute (2, 0, 1), NaN and inf in dy", &pm, nn_shape3(2, 3, 4), x, 24, src, 24, w);
    /* gather rows of data [6, 4] by idx [5] (a row twice) */
    {
        static const double idx[5] = {1, 0, 5, 1, 3};
        double y[20], dx[24];
        np_case c;
        ga.kind = 5;
        for (o = 0; o < 20; o++) {
            src[o] = (long)idx[o / 4] * 4 + o % 4;
            w[o] = 1;
        }
        w[13] = NAN;     /* row 3 of y = data row 1 */
        w[9] = INFINITY; /* row 2 = data row 5 */
        copy_ref(src, 20, x, 24, w, y, dx);
        np_init(&c, "gather_rows, NaN and inf in dy", b_shape, &ga);
        np_in(&c, nn_shape2(6, 4), x, dx);
        np_in_i(&c, nn_shape1(5), idx);
        c.y = y;
        c.w = w;
        np_run(e, &c);
    }
}

void suite_nanprop(const t_env *e) {
    nanprop_activations(e);
    nanprop_binary(e);
    nanprop_prelu(e);
    nanprop_dropout(e);
    nanprop_matmul(e);
    nanprop_reduce(e);
    nanprop_softmax(e);
    nanprop_argmax(e);
    nanprop_losses_ew(e);
    nanprop_losses_mean(e);
    nanprop_losses_rows(e);
    nanprop_losses_pairs(e);
    nanprop_conv(e);
    nanprop_norm(e);
    nanprop_bn_running(e);
    nanprop_pool(e);
    nanprop_shape(e);
}
