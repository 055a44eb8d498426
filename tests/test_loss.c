/* The losses of the nn_loss_desc family through the op checker (tests/op_check.c): forward
   against double references of PyTorch's definitions, gradients against finite differences,
   CPU vs OpenCL parity, each reduction. Inputs are drawn away from kinks (|x - t| from 0
   and delta, hinge margins from 0) so finite differences mean something. */
#include "test.h"
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
    suite_loss_errors(e);
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
