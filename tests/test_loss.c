/* The losses of the nn_loss_desc family through the op checker (tests/op_check.c): forward
   against double references of PyTorch's definitions, gradients against finite differences,
   CPU vs OpenCL parity, each reduction. Inputs are drawn away from kinks (|x - t| from 0
   and delta, hinge margins from 0) so finite differences mean something. */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MSE, L1, HUBER, SMOOTH_L1, LOG_COSH, QUANTILE, HINGE, SQ_HINGE, BCE, BCE_LOGITS, FOCAL, KL, N_EW };
static const char *const ew_names[N_EW] = {"mse", "l1", "huber", "smooth_l1", "log_cosh", "quantile", "hinge",
                                           "squared_hinge", "bce", "bce_with_logits", "sigmoid_focal", "kl_div"};
static const char *const red_names[5] = {"default", "mean", "sum", "none", "batchmean"};

/* The reduction a case runs: NN_REDUCTION_DEFAULT is the mean, but none for torchvision's
   sigmoid_focal_loss. */
static int red_eff(int focal, int red) { return red != NN_REDUCTION_DEFAULT ? red : focal ? NN_REDUCTION_NONE : NN_REDUCTION_MEAN; }

static nn_loss_desc desc_of(const spec *s, const nn_tensor *in) {
    nn_loss_desc d;
    memset(&d, 0, sizeof d);
    d.reduction = (nn_reduction)s->ip[1];
    d.delta = d.tau = d.margin = d.alpha = d.smooth = s->fp[0];
    d.gamma = s->fp[1];
    d.label_smoothing = s->fp[2];
    d.log_target = s->ip[3];
    if (s->ip[2]) d.pos_weight = in[2];
    if (s->ip[4]) d.weight = in[s->ip[4]];
    if (s->ip[6]) d.ignore_index = s->ip[5] ? s->ip[5] : NN_ZERO; /* 0 alone would be -100 */
    return d;
}

/* ---- elementwise losses ---- */

static nn_tensor b_ew(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_loss_desc d = desc_of(s, in);
    typedef nn_tensor (*fn)(nn_graph *, nn_tensor, nn_tensor, const nn_loss_desc *);
    static const fn f[N_EW] = {nn_mse_loss, nn_l1_loss, nn_huber_loss, nn_smooth_l1_loss, nn_log_cosh_loss,
                               nn_quantile_loss, nn_hinge_loss, nn_squared_hinge_loss, nn_bce_loss,
                               nn_bce_with_logits_loss, nn_sigmoid_focal_loss, nn_kl_div_loss};
    return f[s->ip[0]](g, in[0], in[1], &d);
}

static double sgm(double x) { return 1 / (1 + exp(-x)); }

/* PyTorch's definitions in double; a: the option after defaults */
static double ew_ref1(int kind, double x, double t, double a, double b, double pw, int log_target) {
    double d = x - t, ad = fabs(d), m, p, ce, pt, l;
    switch (kind) {
    case MSE: return d * d;
    case L1: return ad;
    case HUBER: return ad < a ? 0.5 * d * d : a * (ad - 0.5 * a);
    case SMOOTH_L1: return ad < a ? 0.5 * d * d / a : ad - 0.5 * a;
    case LOG_COSH: return log(cosh(d));
    case QUANTILE: return fmax(a * (t - x), (a - 1) * (t - x));
    case HINGE: return fmax(0, a - t * x);
    case SQ_HINGE: m = fmax(0, a - t * x); return m * m;
    case BCE: return -(t * fmax(log(x), -100) + (1 - t) * fmax(log(1 - x), -100));
    case BCE_LOGITS: return -(pw * t * log(sgm(x)) + (1 - t) * log(1 - sgm(x)));
    case FOCAL:
        p = sgm(x);
        ce = -(t * log(p) + (1 - t) * log(1 - p));
        pt = p * t + (1 - p) * (1 - t);
        l = ce * pow(1 - pt, b);
        return a >= 0 ? (a * t + (1 - a) * (1 - t)) * l : l;
    case KL: return log_target ? exp(t) * (t - x) : t > 0 ? t * (log(t) - x) : 0;
    default: return 0;
    }
}

static double ew_default(int kind, double v) {
    if (v != 0) return v;
    return kind == QUANTILE ? 0.5 : kind == FOCAL ? 0.25 : 1.0;
}

static void reduce_ref(const spec *s, const double *l, long n, long batch, double *out) {
    long i;
    double acc = 0;
    int red = red_eff(s->build == b_ew && s->ip[0] == FOCAL, s->ip[1]);
    if (red == NN_REDUCTION_NONE) {
        for (i = 0; i < n; i++) out[i] = l[i];
        return;
    }
    for (i = 0; i < n; i++) acc += l[i];
    out[0] = red == NN_REDUCTION_SUM ? acc : red == NN_REDUCTION_MEAN ? acc / (double)n : acc / (double)batch;
}

static void r_ew(const spec *s, double *const *in, double *out) {
    long n = numel(s->shape[0]), i, npw = s->ip[2] ? numel(s->shape[2]) : 1, nw = s->ip[4] ? numel(s->shape[s->ip[4]]) : 1;
    double *l = (double *)malloc((size_t)n * sizeof(double));
    int k = s->ip[0];
    for (i = 0; i < n; i++) {
        l[i] = ew_ref1(k, in[0][i], in[1][i], ew_default(k, s->fp[0]), s->fp[1] != 0 ? s->fp[1] : 2.0,
                       s->ip[2] ? in[2][i % npw] : 1.0, s->ip[3]);
        if (s->ip[4]) l[i] *= in[s->ip[4]][i % nw];
    }
    reduce_ref(s, l, n, s->shape[0].dim[0], out);
    free(l);
}

static double fl(double v) { return (double)(float)v; }

/* targets and predictions per kind, away from kinks */
static void fill_ew(const spec *s, double *const *in) {
    long n = numel(s->shape[0]), i;
    int k = s->ip[0];
    double a = ew_default(k, s->fp[0]);
    for (i = 0; i < n; i++) {
        double *x = &in[0][i], *t = &in[1][i];
        if (k <= QUANTILE) { /* |x - t| in [0.1, 0.9] or [1.1, 1.9] times a scale */
            double off = 0.1 + 0.8 * fabs(*t) / 2, sc = k == HUBER || k == SMOOTH_L1 ? a : 1.0;
            if (i % 2) off += 1.0;
            *t = fl(*x - (*t >= 0 ? 1 : -1) * off * sc);
        } else if (k == HINGE || k == SQ_HINGE) {
            *t = (i * 7 % 3) ? 1.0 : -1.0;
            if (fabs(a - *t * *x) < 0.1) *x = fl(*x + 0.3);
        } else if (k == BCE) {
            *x = fl(0.05 + 0.9 * (*x + 2) / 4);
            *t = fl((*t + 2) / 4);
        } else if (k == BCE_LOGITS || k == FOCAL) {
            *t = (i % 3 == 0) ? fl((*t + 2) / 4) : (i % 3 == 1 ? 1.0 : 0.0);
        } else if (k == KL && !s->ip[3]) {
            *t = (i % 5 == 0) ? 0.0 : fl((*t + 2) / 4);
        }
    }
    if (s->ip[2]) for (i = 0; i < numel(s->shape[2]); i++) in[2][i] = fl(0.5 + 0.75 * (in[2][i] + 2) / 2);
    if (s->ip[4]) for (i = 0; i < numel(s->shape[s->ip[4]]); i++) in[s->ip[4]][i] = fl(0.25 + (in[s->ip[4]][i] + 2) / 4);
}

static void ew_case(const t_env *e, int kind, int red, nn_shape sh, float a, float b, int pos_weight, int log_target,
                    int weight) {
    char name[160];
    spec s;
    nn_shape out = red_eff(kind == FOCAL, red) == NN_REDUCTION_NONE ? sh : nn_shape1(1);
    snprintf(name, sizeof name, "loss %s %s [%ld]%s%s%s a=%g", ew_names[kind], red_names[red], numel(sh),
             pos_weight ? " pos_weight" : "", log_target ? " log_target" : "", weight ? " weight" : "", (double)a);
    s = mk(name, b_ew, r_ew, out);
    in_f(&s, sh);
    in_f(&s, sh);
    s.grad[1] = kind <= QUANTILE; /* the d-based losses differentiate the target too */
    if (pos_weight) {
        in_f(&s, nn_shape1(sh.dim[sh.ndim - 1]));
        s.grad[2] = 0;
    }
    if (weight) {
        s.ip[4] = s.n_in;
        in_f(&s, nn_shape1(sh.dim[sh.ndim - 1]));
        s.grad[s.ip[4]] = 0;
    }
    s.ip[0] = kind;
    s.ip[1] = red;
    s.ip[2] = pos_weight;
    s.ip[3] = log_target;
    s.fp[0] = a;
    s.fp[1] = b;
    s.fill = fill_ew;
    check_case(e, &s);
}

/* ---- cross-entropy and NLL ---- */

static nn_tensor b_ce(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_loss_desc d = desc_of(s, in);
    return s->ip[7] ? nn_nll_loss(g, in[0], in[1], &d) : nn_cross_entropy_loss(g, in[0], in[1], &d);
}

static void r_ce(const spec *s, double *const *in, double *out) {
    long B = s->shape[0].dim[0], C = s->shape[0].dim[1], b, c;
    double *l = (double *)malloc((size_t)B * sizeof(double)), den = 0, eps = s->fp[2];
    int ignore = s->ip[6] ? s->ip[5] : -100;
    for (b = 0; b < B; b++) {
        const double *x = in[0] + b * C;
        long t = (long)in[1][b];
        double m = x[0], sum = 0, lse = 0, sm = 0, wt;
        l[b] = 0;
        if (t == ignore || t < 0 || t >= C) continue;
        if (!s->ip[7]) {
            for (c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
            for (c = 0; c < C; c++) sum += exp(x[c] - m);
            lse = log(sum) + m;
        }
        for (c = 0; c < C; c++) sm += (s->ip[4] ? in[2][c] : 1.0) * (lse - x[c]);
        wt = s->ip[4] ? in[2][t] : 1.0;
        den += wt;
        l[b] = (1 - eps) * wt * (lse - x[t]) + eps / (double)C * sm;
    }
    if (red_eff(0, s->ip[1]) == NN_REDUCTION_MEAN) {
        out[0] = 0;
        for (b = 0; b < B; b++) out[0] += l[b];
        out[0] /= den;
    } else {
        reduce_ref(s, l, B, B, out);
    }
    free(l);
}

static void fill_ce(const spec *s, double *const *in) {
    long i;
    if (s->ip[4]) for (i = 0; i < numel(s->shape[2]); i++) in[2][i] = fl(0.25 + (in[2][i] + 2) / 4);
}

static void ce_case(const t_env *e, int nll, int red, long B, long C, int weight, int ignore, float smoothing) {
    char name[160];
    spec s;
    snprintf(name, sizeof name, "loss %s %s [%ld, %ld]%s%s smoothing=%g", nll ? "nll" : "cross_entropy", red_names[red],
             B, C, weight ? " weight" : "", ignore >= 0 ? " ignore_index" : "", (double)smoothing);
    s = mk(name, b_ce, r_ce, red_eff(0, red) == NN_REDUCTION_NONE ? nn_shape1(B) : nn_shape1(1));
    in_f(&s, nn_shape2(B, C));
    in_i(&s, nn_shape1(B), 0, (int)C);
    if (weight) {
        in_f(&s, nn_shape1(C));
        s.grad[2] = 0;
        s.ip[4] = 2;
    }
    s.ip[1] = red;
    s.ip[5] = ignore;
    s.ip[6] = ignore >= 0;
    s.ip[7] = nll;
    s.fp[2] = smoothing;
    s.lo = nll ? -4 : -3;
    s.hi = nll ? -0.1 : 3;
    s.fill = fill_ce;
    check_case(e, &s);
}

/* ---- row losses ---- */

enum { DICE, COSINE, TRIPLET };

static nn_tensor b_rows(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_loss_desc d = desc_of(s, in);
    if (s->ip[0] == DICE) return nn_dice_loss(g, in[0], in[1], &d);
    if (s->ip[0] == COSINE) return nn_cosine_embedding_loss(g, in[0], in[1], in[2], &d);
    return nn_triplet_margin_loss(g, in[0], in[1], in[2], &d);
}

static void r_rows(const spec *s, double *const *in, double *out) {
    long B = s->shape[0].dim[0], D = numel(s->shape[0]) / B, b, j;
    double *l = (double *)malloc((size_t)B * sizeof(double));
    for (b = 0; b < B; b++) {
        const double *u = in[0] + b * D, *v = in[1] + b * D;
        double s0 = 0, s1 = 0, s2 = 0;
        if (s->ip[0] == DICE) {
            double sm = s->fp[0] != 0 ? s->fp[0] : 1.0;
            for (j = 0; j < D; j++) { s0 += u[j] * v[j]; s1 += u[j]; s2 += v[j]; }
            l[b] = 1 - (2 * s0 + sm) / (s1 + s2 + sm);
        } else if (s->ip[0] == COSINE) {
            double c, y = in[2][b];
            for (j = 0; j < D; j++) { s0 += u[j] * v[j]; s1 += u[j] * u[j]; s2 += v[j] * v[j]; }
            c = s0 / sqrt((s1 + 1e-12) * (s2 + 1e-12));
            l[b] = y == 1 ? 1 - c : fmax(0, c - s->fp[0]);
        } else {
            const double *n = in[2] + b * D;
            double mg = s->fp[0] != 0 ? s->fp[0] : 1.0;
            for (j = 0; j < D; j++) {
                s0 += (u[j] - v[j] + 1e-6) * (u[j] - v[j] + 1e-6);
                s1 += (u[j] - n[j] + 1e-6) * (u[j] - n[j] + 1e-6);
            }
            l[b] = fmax(0, sqrt(s0) - sqrt(s1) + mg);
        }
    }
    reduce_ref(s, l, B, B, out);
    free(l);
}

static void fill_rows(const spec *s, double *const *in) {
    long i, n = numel(s->shape[0]);
    if (s->ip[0] == DICE)
        for (i = 0; i < n; i++) {
            in[0][i] = fl((in[0][i] + 2) / 4);
            in[1][i] = (i % 3) ? fl((in[1][i] + 2) / 4) : (double)(i % 2);
        }
    if (s->ip[0] == COSINE)
        for (i = 0; i < s->shape[2].dim[0]; i++) in[2][i] = (i % 3) ? -1.0 : 1.0;
}

static void rows_case(const t_env *e, int kind, int red, nn_shape sh, float a) {
    static const char *const names[3] = {"dice", "cosine_embedding", "triplet_margin"};
    char name[160];
    spec s;
    snprintf(name, sizeof name, "loss %s %s [%ld, %ld] a=%g", names[kind], red_names[red], (long)sh.dim[0],
             numel(sh) / (long)sh.dim[0], (double)a);
    s = mk(name, b_rows, r_rows, red_eff(0, red) == NN_REDUCTION_NONE ? nn_shape1(sh.dim[0]) : nn_shape1(1));
    in_f(&s, sh);
    in_f(&s, sh);
    if (kind == DICE) s.grad[1] = 0;
    if (kind == COSINE) {
        in_f(&s, nn_shape1(sh.dim[0]));
        s.grad[2] = 0;
    }
    if (kind == TRIPLET) in_f(&s, sh);
    s.ip[0] = kind;
    s.ip[1] = red;
    s.fp[0] = a;
    s.fill = fill_rows;
    check_case(e, &s);
}

static void suite_loss_errors(const t_env *e);

/* ==== NaN and infinity propagation (the op checker's expected-value mode: PyTorch's
   NaN, +-inf and values; the rules in tests/op_check.c) ==== */

/* ---- losses: the values PyTorch 1.13 returns (reduction none unless named; the gradient
   is that of the sum) ---- */

typedef struct np_loss {
    nn_tensor (*fn)(nn_graph *g, nn_tensor a, nn_tensor b, const nn_loss_desc *d);
    nn_loss_desc d;
    int pw; /* in[2] is pos_weight, class weights, or a third operand */
} np_loss;

static nn_tensor b_loss(nn_graph *g, const nn_tensor *in, const spec *s_) {
    const np_loss *l = (const np_loss *)s_->arg;
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
    c.y_expect = y;
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
        c.y_expect = bl_y;
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

static nn_tensor b_bce_logits_legacy(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
    return nn_bce_with_logits(g, in[0], in[1]);
}
static nn_tensor b_mse_legacy(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
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
    c.y_expect = y;
    np_run(e, &c);
    l.fn = nn_bce_with_logits_loss;
    np_loss_case(e, "bce_with_logits_loss mean", &l, nn_shape1(3), lx, lt, ly, ldx);
    np_init(&c, "bce_with_logits (nn_bce_with_logits)", b_bce_logits_legacy, NULL);
    np_in(&c, nn_shape1(3), lx, ldx);
    np_in(&c, nn_shape1(3), lt, NULL);
    c.y_expect = ly;
    np_run(e, &c);
}

static nn_tensor np_b_ce(nn_graph *g, const nn_tensor *in, const spec *s_) {
    const np_loss *l = (const np_loss *)s_->arg;
    nn_loss_desc d = l->d;
    if (l->pw == 2) d.weight = in[2];
    return l->fn(g, in[0], in[1], &d);
}
static nn_tensor b_xent_legacy(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
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
    np_init(&c, "cross_entropy_loss", np_b_ce, &l);
    np_in(&c, nn_shape2(6, 3), x, ce_d);
    np_in_i(&c, nn_shape1(6), lab);
    c.y_expect = ce_y;
    np_run(e, &c);
    l.d.label_smoothing = 0.1f;
    np_init(&c, "cross_entropy_loss smoothing, ignore_index", np_b_ce, &l);
    np_in(&c, nn_shape2(6, 3), x, ls_d);
    np_in_i(&c, nn_shape1(6), lab_ign);
    c.y_expect = ls_y;
    np_run(e, &c);
    l.d.label_smoothing = 0;
    l.pw = 2;
    np_init(&c, "cross_entropy_loss class weights", np_b_ce, &l);
    np_in(&c, nn_shape2(6, 3), x, cw_d);
    np_in_i(&c, nn_shape1(6), lab);
    np_in(&c, nn_shape1(3), cw, NULL);
    c.y_expect = cw_y;
    np_run(e, &c);
    l.pw = 0;
    l.d.reduction = NN_REDUCTION_MEAN;
    np_init(&c, "cross_entropy_loss mean", np_b_ce, &l);
    np_in(&c, nn_shape2(3, 3), mx, m_d);
    np_in_i(&c, nn_shape1(3), mlab);
    c.y_expect = m_y;
    np_run(e, &c);
    np_init(&c, "softmax_cross_entropy (legacy)", b_xent_legacy, NULL);
    np_in(&c, nn_shape2(3, 3), mx, m_d);
    np_in_i(&c, nn_shape1(3), mlab);
    c.y_expect = m_y;
    np_run(e, &c);
    l.fn = nn_nll_loss;
    l.d.reduction = NN_REDUCTION_NONE;
    np_init(&c, "nll_loss", np_b_ce, &l);
    np_in(&c, nn_shape2(4, 3), nx, n_d);
    np_in_i(&c, nn_shape1(4), nlab);
    c.y_expect = n_y;
    np_run(e, &c);
}

static nn_tensor b_cosine(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
    nn_loss_desc d;
    memset(&d, 0, sizeof d);
    d.reduction = NN_REDUCTION_NONE;
    return nn_cosine_embedding_loss(g, in[0], in[1], in[2], &d);
}
static nn_tensor b_triplet(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
    nn_loss_desc d;
    memset(&d, 0, sizeof d);
    d.reduction = NN_REDUCTION_NONE;
    return nn_triplet_margin_loss(g, in[0], in[1], in[2], &d);
}
static nn_tensor b_dice(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
    nn_loss_desc d;
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
    c.y_expect = c_y;
    np_run(e, &c);
    np_init(&c, "triplet_margin_loss", b_triplet, NULL);
    np_in(&c, nn_shape2(4, 2), ta, t_da);
    np_in(&c, nn_shape2(4, 2), tp, t_dp);
    np_in(&c, nn_shape2(4, 2), tn, t_dn);
    c.y_expect = t_y;
    np_run(e, &c);
    np_init(&c, "dice_loss", b_dice, NULL);
    np_in(&c, nn_shape2(3, 2), dp, d_d);
    np_in(&c, nn_shape2(3, 2), dt, NULL);
    c.y_expect = d_y;
    np_run(e, &c);
}

/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- losses ---- */

static nn_loss_desc LD(nn_reduction r) {
    nn_loss_desc d;
    memset(&d, 0, sizeof d);
    d.reduction = r;
    return d;
}
static nn_tensor l_opt(nn_graph *g, int which) {
    nn_loss_desc d = LD(NN_REDUCTION_DEFAULT);
    nn_tensor p = F(g, S2(4, 3)), t = F(g, S2(4, 3));
    switch (which) {
    case 0: d.delta = -1.0f; return nn_huber_loss(g, p, t, &d);
    case 1: d.delta = NAN; return nn_smooth_l1_loss(g, p, t, &d);
    case 2: d.tau = 1.5f; return nn_quantile_loss(g, p, t, &d);
    case 3: d.gamma = -1.0f; return nn_sigmoid_focal_loss(g, p, t, &d);
    case 4: d.reduction = (nn_reduction)9; return nn_mse_loss(g, p, t, &d);
    case 5: d.reduction = (nn_reduction)-1; return nn_l1_loss(g, p, t, &d);
    case 6: d.reduction = NN_REDUCTION_BATCHMEAN; return nn_mse_loss(g, p, t, &d);
    case 7: d.pos_weight = F(g, S1(3)); return nn_mse_loss(g, p, t, &d);
    case 8: d.pos_weight = F(g, S1(4)); return nn_bce_with_logits_loss(g, p, t, &d);
    case 9: d.weight = F(g, S1(4)); return nn_mse_loss(g, p, t, &d);
    case 10: d.pos_weight = I(g, S1(3)); return nn_bce_with_logits_loss(g, p, t, &d);
    case 11: d.weight = T(-3); return nn_l1_loss(g, p, t, &d);
    default: return T(-1);
    }
}
#define LOPT(N) \
    static nn_tensor l_opt##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return l_opt(g, N); }
LOPT(0) LOPT(1) LOPT(2) LOPT(3) LOPT(4) LOPT(5) LOPT(6) LOPT(7) LOPT(8) LOPT(9) LOPT(10) LOPT(11)
B(l_mse_shape, nn_mse_loss(g, F(g, S2(4, 3)), F(g, S2(3, 4)), NULL))
B(l_l1_int, nn_l1_loss(g, F(g, S1(4)), I(g, S1(4)), NULL))
B(l_kl_none, nn_kl_div_loss(g, F(g, S1(4)), NN_NONE, NULL))
static nn_tensor l_ce(nn_graph *g, int which) {
    nn_loss_desc d = LD(NN_REDUCTION_DEFAULT);
    nn_tensor x = F(g, S2(5, 4)), y = I(g, S1(5));
    switch (which) {
    case 0: return nn_cross_entropy_loss(g, F(g, S3(2, 3, 4)), I(g, S1(2)), &d);
    case 1: return nn_cross_entropy_loss(g, x, F(g, S1(5)), &d);
    case 2: return nn_cross_entropy_loss(g, x, I(g, S1(6)), &d);
    case 3: d.label_smoothing = 1.5f; return nn_cross_entropy_loss(g, x, y, &d);
    case 4: d.label_smoothing = NAN; return nn_cross_entropy_loss(g, x, y, &d);
    case 5: d.weight = F(g, S1(3)); return nn_cross_entropy_loss(g, x, y, &d);
    case 6: d.label_smoothing = 0.1f; return nn_nll_loss(g, x, y, &d);
    case 7: d.pos_weight = F(g, S1(4)); return nn_cross_entropy_loss(g, x, y, &d);
    case 8: d.reduction = NN_REDUCTION_BATCHMEAN; return nn_nll_loss(g, x, y, &d);
    case 9: d.weight = I(g, S1(4)); return nn_nll_loss(g, x, y, &d);
    case 10: return nn_cross_entropy_loss(g, x, I(g, S2(5, 1)), &d);
    default: return T(-1);
    }
}
#define LCE(N) \
    static nn_tensor l_ce##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return l_ce(g, N); }
LCE(0) LCE(1) LCE(2) LCE(3) LCE(4) LCE(5) LCE(6) LCE(7) LCE(8) LCE(9) LCE(10)
B(l_cos_target, nn_cosine_embedding_loss(g, F(g, S2(4, 3)), F(g, S2(4, 3)), F(g, S2(4, 1)), NULL))
B(l_cos_rank, nn_cosine_embedding_loss(g, F(g, S1(4)), F(g, S1(4)), F(g, S1(4)), NULL))
B(l_triplet_shape, nn_triplet_margin_loss(g, F(g, S2(4, 3)), F(g, S2(4, 3)), F(g, S2(4, 2)), NULL))
B(l_triplet_int, nn_triplet_margin_loss(g, F(g, S2(4, 3)), I(g, S2(4, 3)), F(g, S2(4, 3)), NULL))
static nn_tensor l_dice_weight(nn_graph *g, nn_compile_desc *cd) {
    nn_loss_desc d = LD(NN_REDUCTION_DEFAULT);
    (void)cd;
    d.weight = F(g, S1(3));
    return nn_dice_loss(g, F(g, S2(4, 3)), F(g, S2(4, 3)), &d);
}
B(l_xent_rank, nn_softmax_cross_entropy(g, F(g, S1(5)), I(g, S1(5))))
B(l_bcel_shape, nn_bce_with_logits(g, F(g, S2(2, 3)), F(g, S2(3, 2))))
B(l_mse_legacy, nn_mse(g, F(g, S1(3)), F(g, S1(4))))

static const bad_row loss_bad[] = {
    {"loss", "huber delta -1", l_opt0, R_INV, "nn_huber_loss|delta -1", 0},
    {"loss", "smooth_l1 beta NaN", l_opt1, R_INV, "nn_smooth_l1_loss|beta|nan", 0},
    {"loss", "quantile tau 1.5", l_opt2, R_INV, "nn_quantile_loss|tau 1.5", 0},
    {"loss", "focal gamma -1", l_opt3, R_INV, "nn_sigmoid_focal_loss|gamma -1", 0},
    {"loss", "reduction 9", l_opt4, R_INV, "nn_mse_loss|reduction 9", 0},
    {"loss", "reduction -1", l_opt5, R_INV, "nn_l1_loss|reduction -1", 0},
    {"loss", "batchmean for mse", l_opt6, R_INV, "nn_mse_loss|reduction 4", 0},
    {"loss", "pos_weight for mse", l_opt7, R_INV, "nn_mse_loss|pos_weight", 0},
    {"loss", "pos_weight [4] for logits [4, 3]", l_opt8, R_SHAPE, "nn_bce_with_logits_loss|pos_weight [4]|[4, 3]", 0},
    {"loss", "weight [4] for [4, 3]", l_opt9, R_SHAPE, "nn_mse_loss|[4, 3]|[4]", 0},
    {"loss", "pos_weight int32", l_opt10, R_SHAPE, "nn_bce_with_logits_loss|pos_weight|int32", 0},
    {"loss", "weight of a failed id", l_opt11, R_INV, "nn_l1_loss|not a tensor", 0},
    {"loss", "mse [4, 3] against [3, 4]", l_mse_shape, R_SHAPE, "nn_mse_loss|[4, 3]|[3, 4]", 0},
    {"loss", "l1 target int32", l_l1_int, R_SHAPE, "nn_l1_loss|target|int32", 0},
    {"loss", "kl_div target NN_NONE", l_kl_none, R_INV, "nn_kl_div_loss|NN_NONE", 0},
    {"loss", "cross_entropy logits [2, 3, 4]", l_ce0, R_SHAPE, "nn_cross_entropy_loss|[2, 3, 4]", 0},
    {"loss", "cross_entropy float labels", l_ce1, R_SHAPE, "nn_cross_entropy_loss|[5] float32", 0},
    {"loss", "cross_entropy 6 labels for 5 rows", l_ce2, R_SHAPE, "nn_cross_entropy_loss|[5, 4]|[6]", 0},
    {"loss", "cross_entropy label_smoothing 1.5", l_ce3, R_INV, "nn_cross_entropy_loss|label_smoothing 1.5", 0},
    {"loss", "cross_entropy label_smoothing NaN", l_ce4, R_INV, "nn_cross_entropy_loss|label_smoothing nan", 0},
    {"loss", "cross_entropy weight [3] for 4 classes", l_ce5, R_SHAPE, "nn_cross_entropy_loss|weight [3]|[4]", 0},
    {"loss", "nll label_smoothing 0.1", l_ce6, R_INV, "nn_nll_loss|label_smoothing 0.1", 0},
    {"loss", "cross_entropy pos_weight", l_ce7, R_INV, "nn_cross_entropy_loss|pos_weight", 0},
    {"loss", "nll batchmean", l_ce8, R_INV, "nn_nll_loss|reduction 4", 0},
    {"loss", "nll weight int32", l_ce9, R_SHAPE, "nn_nll_loss|weight|int32", 0},
    {"loss", "cross_entropy labels [5, 1]", l_ce10, R_SHAPE, "nn_cross_entropy_loss|[5, 1]", 0},
    {"loss", "cosine_embedding target [4, 1]", l_cos_target, R_SHAPE, "nn_cosine_embedding_loss|[4, 1]", 0},
    {"loss", "cosine_embedding of [4]", l_cos_rank, R_SHAPE, "nn_cosine_embedding_loss|[4]", 0},
    {"loss", "triplet negative [4, 2]", l_triplet_shape, R_SHAPE, "nn_triplet_margin_loss|[4, 2]|[4, 3]", 0},
    {"loss", "triplet positive int32", l_triplet_int, R_SHAPE, "nn_triplet_margin_loss|int32", 0},
    {"loss", "dice with a weight", l_dice_weight, R_INV, "nn_dice_loss|weight", 0},
    {"loss", "softmax_cross_entropy logits [5]", l_xent_rank, R_SHAPE, "nn_softmax_cross_entropy|[5]", 0},
    {"loss", "bce_with_logits [2, 3] and [3, 2]", l_bcel_shape, R_SHAPE, "nn_bce_with_logits|[2, 3]|[3, 2]", 0},
    {"loss", "mse [3] and [4]", l_mse_legacy, R_SHAPE, "nn_mse|[3]|[4]", 0},
};

/* ---- the shorthands nn_softmax_cross_entropy, nn_mse, nn_bce_with_logits through the op
   checker ---- */

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

static void r_mse(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) out[0] += (in[0][i] - in[1][i]) * (in[0][i] - in[1][i]);
    out[0] /= (double)n;
}

static void r_bce(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) { /* -[t log sigmoid(x) + (1-t) log(1 - sigmoid(x))] */
        double x = in[0][i], t = in[1][i], sg = 1 / (1 + exp(-x));
        out[0] += -(t * log(sg) + (1 - t) * log(1 - sg));
    }
    out[0] /= (double)n;
}

static void shorthand_cases(const t_env *e) {
    char name[96];
    int j;
    spec s;
    for (j = 0; j < T_N_ODD; j++) {
        s = mk_odd(name, sizeof name, "softmax_cross_entropy", j, b_xent_legacy, r_xent, 1);
        s.lo = -4;
        s.hi = 4;
        in_i(&s, nn_shape1(s.shape[0].dim[0]), 0, (int)s.shape[0].dim[1]);
        check_case(e, &s);
        s = mk_odd(name, sizeof name, "mse", j, b_mse_legacy, r_mse, 1);
        in_f(&s, s.shape[0]);
        check_case(e, &s);
        s = mk_odd(name, sizeof name, "bce_with_logits", j, b_bce_logits_legacy, r_bce, 1);
        s.lo = -5;
        s.hi = 5;
        in_f(&s, s.shape[0]); /* targets in [0, 1) after the range below */
        s.lo = -3;
        s.hi = 3;
        check_case(e, &s);
    }
}

void suite_loss(const t_env *e) {
    static const long shapes[3][2] = {{7, 33}, {3, 7}, {1, 3}};
    static const int reds[3] = {NN_REDUCTION_DEFAULT, NN_REDUCTION_SUM, NN_REDUCTION_NONE};
    int k, r;
    for (k = 0; k < N_EW; k++)
        for (r = 0; r < 3; r++) ew_case(e, k, reds[r], nn_shape2(shapes[r][0], shapes[r][1]), 0.0f, 0.0f, 0, 0, 0);
    ew_case(e, HUBER, NN_REDUCTION_MEAN, nn_shape2(3, 7), 0.5f, 0, 0, 0, 0);
    ew_case(e, SMOOTH_L1, NN_REDUCTION_SUM, nn_shape2(3, 7), 2.0f, 0, 0, 0, 0);
    ew_case(e, QUANTILE, NN_REDUCTION_MEAN, nn_shape1(33), 0.9f, 0, 0, 0, 0);
    ew_case(e, HINGE, NN_REDUCTION_MEAN, nn_shape2(3, 7), 0.5f, 0, 0, 0, 0);
    ew_case(e, BCE_LOGITS, NN_REDUCTION_MEAN, nn_shape2(7, 3), 0, 0, 1, 0, 0);
    ew_case(e, BCE_LOGITS, NN_REDUCTION_NONE, nn_shape3(3, 7, 3), 0, 0, 1, 0, 0);
    ew_case(e, FOCAL, NN_REDUCTION_SUM, nn_shape2(3, 7), 0.75f, 1.5f, 0, 0, 0);
    ew_case(e, FOCAL, NN_REDUCTION_MEAN, nn_shape2(3, 7), -1.0f, 0.5f, 0, 0, 0);
    ew_case(e, KL, NN_REDUCTION_BATCHMEAN, nn_shape2(7, 33), 0, 0, 0, 0, 0);
    ew_case(e, KL, NN_REDUCTION_BATCHMEAN, nn_shape2(3, 7), 0, 0, 0, 1, 0);
    ew_case(e, MSE, NN_REDUCTION_MEAN, nn_shape2(3, 7), 0, 0, 0, 0, 1);
    ew_case(e, BCE, NN_REDUCTION_SUM, nn_shape2(3, 7), 0, 0, 0, 0, 1);

    for (r = 0; r < 3; r++) {
        ce_case(e, 0, reds[r], 7, 5, 0, -1, 0.0f);
        ce_case(e, 0, reds[r], 33, 7, 1, 2, 0.1f);
        ce_case(e, 1, reds[r], 7, 5, 1, 1, 0.0f);
    }
    ce_case(e, 0, NN_REDUCTION_MEAN, 1, 3, 0, -1, 0.2f);
    ce_case(e, 0, NN_REDUCTION_MEAN, 7, 33, 1, -1, 0.0f);
    ce_case(e, 1, NN_REDUCTION_MEAN, 33, 3, 0, -1, 0.0f);
    ce_case(e, 0, NN_REDUCTION_MEAN, 7, 5, 0, 0, 0.0f); /* ignore_index = NN_ZERO: class 0 */
    ce_case(e, 1, NN_REDUCTION_SUM, 7, 5, 1, 0, 0.0f);

    for (r = 0; r < 3; r++) {
        rows_case(e, DICE, reds[r], nn_shape2(shapes[r][0], shapes[r][1]), 0.0f);
        rows_case(e, COSINE, reds[r], nn_shape2(shapes[r][0], shapes[r][1]), r == 1 ? 0.1f : 0.0f);
        rows_case(e, TRIPLET, reds[r], nn_shape2(shapes[r][0], shapes[r][1]), r == 2 ? 0.5f : 0.0f);
    }
    rows_case(e, DICE, NN_REDUCTION_SUM, nn_shape3(3, 2, 5), 0.5f);
    T_RUN(e, suite_loss_errors, nanprop_losses_ew, nanprop_losses_mean, nanprop_losses_rows, nanprop_losses_pairs);
    t_bad_rows(e, loss_bad, (int)(sizeof loss_bad / sizeof loss_bad[0]));
    shorthand_cases(e);
}

/* Bad options and shapes fail the build with a message that names the loss. */
static void suite_loss_errors(const t_env *e) {
    static const struct { int what; nn_result code; const char *needle; } cases[] = {
        {0, NN_ERR_SHAPE, "nn_cross_entropy_loss: weight [4] must be [C] = [5]"},
        {1, NN_ERR_INVALID_ARGUMENT, "nn_mse_loss: reduction 4"},
        {2, NN_ERR_INVALID_ARGUMENT, "nn_l1_loss: pos_weight"},
        {3, NN_ERR_SHAPE, "nn_triplet_margin_loss: input 2"},
        {4, NN_ERR_INVALID_ARGUMENT, "nn_nll_loss: label_smoothing"},
        {5, NN_ERR_SHAPE, "nn_bce_with_logits_loss: pos_weight [4]"},
    };
    size_t k;
    if (!t_begin(e, "loss: bad options and shapes name the loss")) return;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nn_graph *g = NULL;
        nn_graph_desc gd;
        nn_loss_desc d;
        nn_tensor x, t, l;
        memset(&gd, 0, sizeof gd);
        memset(&d, 0, sizeof d);
        if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) break;
        x = nn_input(g, "x", NN_F32, nn_shape2(3, 5));
        t = nn_input(g, "t", NN_F32, nn_shape2(3, 5));
        switch (cases[k].what) {
        case 0:
            d.weight = nn_input(g, "w", NN_F32, nn_shape1(4));
            l = nn_cross_entropy_loss(g, x, nn_input(g, "y", NN_I32, nn_shape1(3)), &d);
            break;
        case 1: d.reduction = NN_REDUCTION_BATCHMEAN; l = nn_mse_loss(g, x, t, &d); break;
        case 2: d.pos_weight = t; l = nn_l1_loss(g, x, t, &d); break;
        case 3: l = nn_triplet_margin_loss(g, x, t, nn_input(g, "n", NN_F32, nn_shape2(3, 4)), &d); break;
        case 4: d.label_smoothing = 0.1f; l = nn_nll_loss(g, x, nn_input(g, "y", NN_I32, nn_shape1(3)), &d); break;
        default:
            d.pos_weight = nn_input(g, "pw", NN_F32, nn_shape1(4));
            l = nn_bce_with_logits_loss(g, x, t, &d);
            break;
        }
        T_CHECK(l.id < 0 && nn_graph_status(g) == cases[k].code, "case %d: status %d", (int)k, (int)nn_graph_status(g));
        T_CHECK(strstr(nn_context_last_error(e->ctx), cases[k].needle) != NULL, "case %d: message \"%s\"", (int)k, nn_context_last_error(e->ctx));
        nn_graph_destroy(g);
    }
    t_end();
}
