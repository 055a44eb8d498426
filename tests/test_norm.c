/* Normalisation layers: batch, layer, group and instance norm through the op checker
   (forward vs a double reference, gradients for x, gamma and beta vs finite differences,
   CPU parity), batch norm's running statistics after 1 and 3 training steps, an eval graph
   that shares them, and the shape errors. Shapes are odd on purpose (C odd, spatial 1/3/7,
   N = 1 where the statistics allow it). */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a double reference for the whole family ---- */

/* x viewed as [A, C, S]; statistics per channel over A and S (pc: batch norm) or per
   (a, group of C/G channels). Biased variance. gamma, beta may be NULL. */
typedef struct geo { long A, C, S, G; int pc; } geo;

static long group_of(const geo *q, long a, long c) { return q->pc ? c : a * q->G + c / (q->C / q->G); }

/* mean and biased variance of every group, R = pc ? C : A * G */
static void ref_stats(const geo *q, const double *x, double *mean, double *var) {
    long R = q->pc ? q->C : q->A * q->G, a, c, s, r;
    double *cnt = (double *)calloc((size_t)R, sizeof(double));
    for (r = 0; r < R; r++) mean[r] = var[r] = 0;
    for (a = 0; a < q->A; a++)
        for (c = 0; c < q->C; c++)
            for (s = 0; s < q->S; s++) {
                r = group_of(q, a, c);
                mean[r] += x[(a * q->C + c) * q->S + s];
                cnt[r] += 1;
            }
    for (r = 0; r < R; r++) mean[r] /= cnt[r];
    for (a = 0; a < q->A; a++)
        for (c = 0; c < q->C; c++)
            for (s = 0; s < q->S; s++) {
                double d;
                r = group_of(q, a, c);
                d = x[(a * q->C + c) * q->S + s] - mean[r];
                var[r] += d * d;
            }
    for (r = 0; r < R; r++) var[r] /= cnt[r];
    free(cnt);
}

static void ref_apply(const geo *q, const double *x, const double *mean, const double *var, const double *gamma,
                      const double *beta, double eps, double *out) {
    long a, c, s;
    for (a = 0; a < q->A; a++)
        for (c = 0; c < q->C; c++)
            for (s = 0; s < q->S; s++) {
                long i = (a * q->C + c) * q->S + s, r = group_of(q, a, c);
                out[i] = (x[i] - mean[r]) / sqrt(var[r] + eps) * (gamma ? gamma[c] : 1.0) + (beta ? beta[c] : 0.0);
            }
}

static void ref_norm(const geo *q, const double *x, const double *gamma, const double *beta, double eps, double *out) {
    long R = q->pc ? q->C : q->A * q->G;
    double *mean = (double *)malloc((size_t)R * sizeof(double)), *var = (double *)malloc((size_t)R * sizeof(double));
    ref_stats(q, x, mean, var);
    ref_apply(q, x, mean, var, gamma, beta, eps, out);
    free(mean);
    free(var);
}

/* ---- the op checker's builders: in[0] = x, then gamma if ip[0], then beta if ip[1] ---- */

static void affine_of(const spec *s, const nn_tensor *in, nn_tensor *gamma, nn_tensor *beta) {
    int k = 1;
    *gamma = *beta = NN_NONE;
    if (s->ip[0]) *gamma = in[k++];
    if (s->ip[1]) *beta = in[k++];
}
static void affine_ref(const spec *s, double *const *in, const double **gamma, const double **beta) {
    int k = 1;
    *gamma = s->ip[0] ? in[k++] : NULL;
    *beta = s->ip[1] ? in[k++] : NULL;
}

/* [N, C, rest...] -> A = N, C, S = rest */
static geo geo_nc(const nn_shape *x, long G, int pc) {
    geo q;
    int k;
    q.A = (long)x->dim[0];
    q.C = (long)x->dim[1];
    q.S = 1;
    for (k = 2; k < x->ndim; k++) q.S *= (long)x->dim[k];
    q.G = G;
    q.pc = pc;
    return q;
}

static nn_tensor b_batch_norm(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_norm_desc d;
    nn_tensor gamma, beta;
    nn_init zeros, ones;
    nn_shape c = nn_shape1(s->shape[0].dim[1]);
    affine_of(s, in, &gamma, &beta);
    memset(&d, 0, sizeof d);
    memset(&zeros, 0, sizeof zeros);
    ones = zeros;
    ones.kind = NN_INIT_CONSTANT;
    ones.a = 1;
    d.eps = s->fp[0];
    d.running_mean = nn_buffer(g, "bn.running_mean", c, zeros); /* the update runs in the checked graph too */
    d.running_var = nn_buffer(g, "bn.running_var", c, ones);
    return nn_batch_norm(g, in[0], gamma, beta, &d);
}
static void r_batch_norm(const spec *s, double *const *in, double *out) {
    const double *gamma, *beta;
    geo q = geo_nc(&s->shape[0], 1, 1);
    affine_ref(s, in, &gamma, &beta);
    ref_norm(&q, in[0], gamma, beta, s->fp[0] ? s->fp[0] : 1e-5, out);
}

static nn_tensor b_layer_norm(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor gamma, beta;
    affine_of(s, in, &gamma, &beta);
    return nn_layer_norm(g, in[0], s->ip[2], gamma, beta, &(nn_norm_desc){.eps = s->fp[0]});
}
static void r_layer_norm(const spec *s, double *const *in, double *out) {
    const double *gamma, *beta;
    geo q;
    int k;
    affine_ref(s, in, &gamma, &beta);
    q.C = 1;
    for (k = s->shape[0].ndim - s->ip[2]; k < s->shape[0].ndim; k++) q.C *= (long)s->shape[0].dim[k];
    q.A = numel(s->shape[0]) / q.C;
    q.S = q.G = 1;
    q.pc = 0;
    ref_norm(&q, in[0], gamma, beta, s->fp[0], out);
}

static nn_tensor b_group_norm(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor gamma, beta;
    affine_of(s, in, &gamma, &beta);
    return nn_group_norm(g, in[0], s->ip[2], gamma, beta, &(nn_norm_desc){.eps = s->fp[0]});
}
static void r_group_norm(const spec *s, double *const *in, double *out) {
    const double *gamma, *beta;
    geo q = geo_nc(&s->shape[0], s->ip[2], 0);
    affine_ref(s, in, &gamma, &beta);
    ref_norm(&q, in[0], gamma, beta, s->fp[0], out);
}

static nn_tensor b_instance_norm(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor gamma, beta;
    affine_of(s, in, &gamma, &beta);
    return nn_instance_norm(g, in[0], gamma, beta, &(nn_norm_desc){.eps = s->fp[0]});
}
static void r_instance_norm(const spec *s, double *const *in, double *out) {
    const double *gamma, *beta;
    geo q = geo_nc(&s->shape[0], (long)s->shape[0].dim[1], 0);
    affine_ref(s, in, &gamma, &beta);
    ref_norm(&q, in[0], gamma, beta, s->fp[0], out);
}

/* RMS norm (F.rms_norm): x * rsqrt(mean of x^2 over the last ip[2] dims + eps) * weight;
   fp[0] 0 takes PyTorch's default, float32's eps 2^-23 */
static nn_tensor b_rms_norm(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor gamma, beta;
    affine_of(s, in, &gamma, &beta);
    return nn_rms_norm(g, in[0], s->ip[2], gamma, &(nn_norm_desc){.eps = s->fp[0]});
}
static void ref_rms(const double *x, const double *w, long A, long C, double eps, double *out) {
    long a, c;
    for (a = 0; a < A; a++) {
        double ms = 0;
        for (c = 0; c < C; c++) ms += x[a * C + c] * x[a * C + c];
        ms /= (double)C;
        for (c = 0; c < C; c++) out[a * C + c] = x[a * C + c] / sqrt(ms + eps) * (w ? w[c] : 1.0);
    }
}
static void r_rms_norm(const spec *s, double *const *in, double *out) {
    const double *gamma, *beta;
    long C = 1;
    int k;
    affine_ref(s, in, &gamma, &beta);
    for (k = s->shape[0].ndim - s->ip[2]; k < s->shape[0].ndim; k++) C *= (long)s->shape[0].dim[k];
    ref_rms(in[0], gamma, numel(s->shape[0]) / C, C, s->fp[0] ? s->fp[0] : 1.1920928955078125e-07, out);
}

static const char *shape_name(nn_shape sh, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "[");
    int k;
    for (k = 0; k < sh.ndim && used < n; k++) used += (size_t)snprintf(buf + used, n - used, k ? ", %lld" : "%lld", (long long)sh.dim[k]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

/* the layers: nn.LayerNorm (ip[3]: bias=False) and nn.RMSNorm over the last ip[2] dims;
   ip[4] picks RMS; NAME.weight and NAME.bias are the checker's parameters */
static nn_tensor b_norm_layer(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_norm_desc d;
    memset(&d, 0, sizeof d);
    d.no_bias = s->ip[3];
    return s->ip[4] ? nn_rms_norm_layer(g, in[0], s->ip[2], &d, "ln") : nn_layer_norm_layer(g, in[0], s->ip[2], &d, "ln");
}
static void r_norm_layer(const spec *s, double *const *in, double *out) {
    long C = 1;
    int k;
    geo q;
    for (k = s->shape[0].ndim - s->ip[2]; k < s->shape[0].ndim; k++) C *= (long)s->shape[0].dim[k];
    if (s->ip[4]) {
        ref_rms(in[0], in[1], numel(s->shape[0]) / C, C, 1.1920928955078125e-07, out);
        return;
    }
    q.C = C;
    q.A = numel(s->shape[0]) / C;
    q.S = q.G = 1;
    q.pc = 0;
    ref_norm(&q, in[0], in[1], s->ip[3] ? NULL : in[2], 1e-5, out);
}
static void norm_layer_case(const t_env *e, nn_shape x, int n_norm_dims, int no_bias, int rms) {
    char name[128], sx[64];
    nn_shape tail;
    spec s;
    int k;
    memset(&tail, 0, sizeof tail);
    tail.ndim = n_norm_dims;
    for (k = 0; k < n_norm_dims; k++) tail.dim[k] = x.dim[x.ndim - n_norm_dims + k];
    snprintf(name, sizeof name, "%s x%s%s", rms ? "rms_norm_layer" : "layer_norm_layer", shape_name(x, sx, sizeof sx),
             no_bias ? " bias=False" : "");
    s = mk(name, b_norm_layer, r_norm_layer, x);
    s.kind = "layer";
    s.ip[2] = n_norm_dims;
    s.ip[3] = no_bias;
    s.ip[4] = rms;
    in_f(&s, x);
    in_param(&s, "ln.weight", tail, 0.5, 1.5);
    if (!rms && !no_bias) in_param(&s, "ln.bias", tail, -0.5, 0.5);
    check_case(e, &s);
}

/* One case: x of shape x, affine tensors of shape aff (when has_gamma / has_beta). */
static void norm_case(const t_env *e, const char *what, build_fn b, ref_fn r, nn_shape x, nn_shape aff, int has_gamma,
                      int has_beta, int param, float eps) {
    char name[160], sx[64];
    spec s;
    snprintf(name, sizeof name, "%s x%s%s%s", what, shape_name(x, sx, sizeof sx), has_gamma ? " gamma" : "",
             has_beta ? " beta" : "");
    s = mk(name, b, r, x);
    s.ip[0] = has_gamma;
    s.ip[1] = has_beta;
    s.ip[2] = param;
    s.fp[0] = eps;
    in_f(&s, x);
    if (has_gamma) in_f(&s, aff);
    if (has_beta) in_f(&s, aff);
    check_case(e, &s);
}

static void checker_cases(const t_env *e) {
    char what[64];
    /* rms norm: rows 1 to 129, 1 and 2 normalised dims, with and without the weight, a row
       longer than a work-group (300), eps 1e-5 and PyTorch's default */
    norm_case(e, "rms_norm 1 dim", b_rms_norm, r_rms_norm, nn_shape2(1, 7), nn_shape1(7), 1, 0, 1, 0);
    norm_case(e, "rms_norm 1 dim", b_rms_norm, r_rms_norm, nn_shape3(3, 5, 33), nn_shape1(33), 1, 0, 1, 1e-5f);
    norm_case(e, "rms_norm 2 dims", b_rms_norm, r_rms_norm, nn_shape3(1, 3, 7), nn_shape2(3, 7), 1, 0, 2, 0);
    norm_case(e, "rms_norm 1 dim", b_rms_norm, r_rms_norm, nn_shape2(129, 3), nn_shape1(3), 0, 0, 1, 0);
    norm_case(e, "rms_norm 1 dim", b_rms_norm, r_rms_norm, nn_shape2(3, 300), nn_shape1(300), 1, 0, 1, 0);
    norm_case(e, "rms_norm 1 dim", b_rms_norm, r_rms_norm, nn_shape2(2, 1), nn_shape1(1), 1, 0, 1, 1e-5f);
    norm_layer_case(e, nn_shape3(2, 3, 7), 1, 0, 0);
    norm_layer_case(e, nn_shape3(2, 3, 7), 1, 1, 0);
    norm_layer_case(e, nn_shape3(2, 3, 7), 2, 1, 0);
    norm_layer_case(e, nn_shape3(2, 3, 7), 1, 0, 1);
    norm_layer_case(e, nn_shape2(5, 33), 1, 0, 1);
    /* batch norm: N >= 2, C odd, spatial 1, 3, 7 (1d [N, C], [N, C, L], 2d [N, C, H, W]). Two
       values per channel normalise to +-1 whatever they are, so dx is ~0 and all rounding:
       spatial-1 cases take N >= 3. */
    norm_case(e, "batch_norm", b_batch_norm, r_batch_norm, nn_shape2(3, 3), nn_shape1(3), 1, 1, 0, 0);
    norm_case(e, "batch_norm", b_batch_norm, r_batch_norm, nn_shape2(7, 5), nn_shape1(5), 1, 1, 0, 0);
    norm_case(e, "batch_norm", b_batch_norm, r_batch_norm, nn_shape3(3, 5, 7), nn_shape1(5), 1, 0, 0, 0);
    norm_case(e, "batch_norm", b_batch_norm, r_batch_norm, nn_shape4(4, 3, 1, 1), nn_shape1(3), 1, 1, 0, 0);
    norm_case(e, "batch_norm", b_batch_norm, r_batch_norm, nn_shape4(2, 3, 3, 3), nn_shape1(3), 0, 1, 0, 0);
    norm_case(e, "batch_norm", b_batch_norm, r_batch_norm, nn_shape4(3, 5, 7, 7), nn_shape1(5), 1, 1, 0, 0);
    norm_case(e, "batch_norm eps 1e-3", b_batch_norm, r_batch_norm, nn_shape4(2, 1, 3, 7), nn_shape1(1), 0, 0, 0, 1e-3f);
    /* spatial 16 and more: CPU devices' norm_runs_* kernels (whole float16s only, and a tail) */
    norm_case(e, "batch_norm", b_batch_norm, r_batch_norm, nn_shape4(2, 3, 4, 8), nn_shape1(3), 1, 0, 0, 0);
    norm_case(e, "batch_norm", b_batch_norm, r_batch_norm, nn_shape3(3, 2, 37), nn_shape1(2), 1, 1, 0, 0);
    /* layer norm: N = 1, one and two normalised dims, no affine */
    norm_case(e, "layer_norm 1 dim", b_layer_norm, r_layer_norm, nn_shape2(1, 7), nn_shape1(7), 1, 1, 1, 1e-5f);
    norm_case(e, "layer_norm 1 dim", b_layer_norm, r_layer_norm, nn_shape3(3, 5, 33), nn_shape1(33), 1, 1, 1, 1e-5f);
    norm_case(e, "layer_norm 2 dims", b_layer_norm, r_layer_norm, nn_shape3(1, 3, 7), nn_shape2(3, 7), 1, 1, 2, 1e-5f);
    norm_case(e, "layer_norm 3 dims", b_layer_norm, r_layer_norm, nn_shape3(1, 3, 7), nn_shape3(1, 3, 7), 0, 0, 3, 1e-5f);
    norm_case(e, "layer_norm 1 dim", b_layer_norm, r_layer_norm, nn_shape2(129, 3), nn_shape1(3), 0, 1, 1, 1e-5f);
    /* group norm */
    norm_case(e, "group_norm G=3", b_group_norm, r_group_norm, nn_shape4(1, 9, 3, 3), nn_shape1(9), 1, 1, 3, 1e-5f);
    norm_case(e, "group_norm G=1", b_group_norm, r_group_norm, nn_shape3(2, 3, 7), nn_shape1(3), 1, 1, 1, 1e-5f);
    norm_case(e, "group_norm G=3", b_group_norm, r_group_norm, nn_shape4(2, 3, 1, 7), nn_shape1(3), 1, 0, 3, 1e-5f);
    norm_case(e, "group_norm G=5", b_group_norm, r_group_norm, nn_shape2(3, 15), nn_shape1(15), 1, 1, 5, 1e-5f);
    norm_case(e, "group_norm G=2", b_group_norm, r_group_norm, nn_shape4(2, 6, 4, 5), nn_shape1(6), 1, 1, 2, 1e-5f);
    /* instance norm */
    norm_case(e, "instance_norm", b_instance_norm, r_instance_norm, nn_shape4(1, 3, 7, 7), nn_shape1(3), 1, 1, 0, 1e-5f);
    norm_case(e, "instance_norm", b_instance_norm, r_instance_norm, nn_shape3(2, 5, 3), nn_shape1(5), 0, 0, 0, 1e-5f);
    norm_case(e, "instance_norm", b_instance_norm, r_instance_norm, nn_shape3(2, 3, 17), nn_shape1(3), 0, 0, 0, 1e-5f);
    snprintf(what, sizeof what, "instance_norm");
    norm_case(e, what, b_instance_norm, r_instance_norm, nn_shape4(3, 1, 3, 7), nn_shape1(1), 1, 1, 0, 1e-5f);
}

/* ---- running statistics and the eval graph ---- */

static float *random_floats(long n, double lo, double hi) {
    float *v = (float *)malloc((size_t)n * 4);
    long i;
    for (i = 0; i < n; i++) v[i] = (float)t_uniform(lo, hi);
    return v;
}

/* A training graph with a batch-norm layer (SGD, so gamma and beta move too) runs `steps`
   steps on fresh batches; the running statistics are checked against a double reference
   after step 1 and step `steps`, then an eval graph of another batch size that shares the
   parameters normalises with them. */
static void running_case(const t_env *e, nn_shape xs, int steps) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *ev = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y, w, loss, ex, ey;
    geo q = geo_nc(&xs, 1, 1);
    long n = numel(xs), C = q.C, i, step;
    double *rm = (double *)calloc((size_t)C, sizeof(double)), *rv = (double *)malloc((size_t)C * sizeof(double));
    double *mean = (double *)malloc((size_t)C * sizeof(double)), *var = (double *)malloc((size_t)C * sizeof(double));
    float *got = (float *)malloc((size_t)C * 4), *wv = NULL, *xv = NULL;
    char label[128], sx[64];
    int four = xs.ndim == 4;
    snprintf(label, sizeof label, "batch_norm%s running stats x%s, %d steps, eval", four ? "2d" : "1d",
             shape_name(xs, sx, sizeof sx), steps);
    if (!t_begin_op(e, label)) goto done; /* a reference check of the running statistics */
    t_seed(0xb47c + (unsigned long long)n);
    for (i = 0; i < C; i++) rv[i] = 1.0;
    memset(&gd, 0, sizeof gd);
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, xs);
    y = four ? nn_batch_norm2d_layer(g, x, NULL, "bn1") : nn_batch_norm1d_layer(g, x, NULL, "bn1");
    w = nn_input(g, "w", NN_F32, xs);
    loss = nn_sum(g, nn_mul(g, y, w));
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.1f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (t_survey_graph(g)) goto done; /* NN_TEST_SURVEY: compiled, not run */
    T_CHECK(nn_graph_grad(g, nn_graph_find(g, "bn1.running_mean")).id == 0 && nn_graph_grad(g, nn_graph_find(g, "bn1.weight")).id > 0,
            "a buffer got a gradient, or the weight none");
    wv = random_floats(n, -1, 1);
    T_OK(nn_tensor_write(g, w, wv, (size_t)n * 4), ctx);
    for (step = 1; step <= steps; step++) {
        double *xd = (double *)malloc((size_t)n * sizeof(double));
        free(xv);
        xv = random_floats(n, -1.0 + (double)step, 2.0 + 2.0 * (double)step); /* the mean and spread drift */
        for (i = 0; i < n; i++) xd[i] = xv[i];
        T_OK(nn_tensor_write(g, x, xv, (size_t)n * 4), ctx);
        T_OK(nn_graph_step(g), ctx);
        ref_stats(&q, xd, mean, var);
        for (i = 0; i < C; i++) { /* PyTorch: momentum 0.1, unbiased variance for running_var */
            double cnt = (double)(n / C);
            rm[i] = 0.9 * rm[i] + 0.1 * mean[i];
            rv[i] = 0.9 * rv[i] + 0.1 * var[i] * cnt / (cnt - 1);
        }
        free(xd);
        if (step == 1 || step == steps) {
            double gm[64], gv[64], err;
            T_OK(nn_tensor_read(g, nn_graph_find(g, "bn1.running_mean"), got, (size_t)C * 4), ctx);
            for (i = 0; i < C; i++) gm[i] = got[i];
            T_OK(nn_tensor_read(g, nn_graph_find(g, "bn1.running_var"), got, (size_t)C * 4), ctx);
            for (i = 0; i < C; i++) gv[i] = got[i];
            err = t_relerr(gm, rm, C);
            T_CHECK(err <= 1e-5, "running_mean after step %ld: relative error %.3g", step, err);
            err = t_relerr(gv, rv, C);
            T_CHECK(err <= 1e-5, "running_var after step %ld: relative error %.3g", step, err);
        }
    }
    /* the eval graph: batch 1, the same parameters and buffers */
    {
        nn_shape es = xs;
        long en, k;
        float *exv, *eyv, *gam = (float *)malloc((size_t)C * 4), *bet = (float *)malloc((size_t)C * 4);
        double *exd, *eyd, *ref, gd64[64], bd64[64], err;
        es.dim[0] = 1;
        en = numel(es);
        memset(&gd, 0, sizeof gd);
        gd.share_params = g;
        gd.eval = 1;
        if (!T_OK(nn_graph_create(ctx, &gd, &ev), ctx)) {
            free(gam);
            free(bet);
            goto done;
        }
        ex = nn_input(ev, "x", NN_F32, es);
        ey = four ? nn_batch_norm2d_layer(ev, ex, NULL, "bn1") : nn_batch_norm1d_layer(ev, ex, NULL, "bn1");
        nn_graph_output(ev, ey);
        if (T_OK(nn_graph_compile(ev, NULL), ctx)) {
            exv = random_floats(en, -3, 5);
            eyv = (float *)malloc((size_t)en * 4);
            exd = (double *)malloc((size_t)en * sizeof(double));
            eyd = (double *)malloc((size_t)en * sizeof(double));
            ref = (double *)malloc((size_t)en * sizeof(double));
            T_OK(nn_tensor_write(ev, ex, exv, (size_t)en * 4), ctx);
            T_OK(nn_graph_forward(ev), ctx);
            T_OK(nn_tensor_read(ev, ey, eyv, (size_t)en * 4), ctx);
            T_OK(nn_tensor_read(g, nn_graph_find(g, "bn1.weight"), gam, (size_t)C * 4), ctx);
            T_OK(nn_tensor_read(g, nn_graph_find(g, "bn1.bias"), bet, (size_t)C * 4), ctx);
            for (k = 0; k < C; k++) {
                gd64[k] = gam[k];
                bd64[k] = bet[k];
                mean[k] = (float)rm[k]; /* what the device holds */
                var[k] = (float)rv[k];
            }
            for (k = 0; k < en; k++) {
                exd[k] = exv[k];
                eyd[k] = eyv[k];
            }
            q.A = 1;
            ref_apply(&q, exd, mean, var, gd64, bd64, 1e-5, ref);
            err = t_relerr(eyd, ref, en);
            T_CHECK(err <= 1e-4, "eval graph vs the running-statistics reference: relative error %.3g", err);
            /* and the eval graph left the running statistics alone */
            T_OK(nn_tensor_read(g, nn_graph_find(g, "bn1.running_mean"), got, (size_t)C * 4), ctx);
            for (k = 0; k < C; k++) gd64[k] = got[k];
            err = t_relerr(gd64, rm, C);
            T_CHECK(err <= 1e-5, "running_mean changed by an eval run: %.3g", err);
            free(exv);
            free(eyv);
            free(exd);
            free(eyd);
            free(ref);
        }
        free(gam);
        free(bet);
    }
done:
    nn_graph_destroy(ev);
    nn_graph_destroy(g);
    free(rm);
    free(rv);
    free(mean);
    free(var);
    free(got);
    free(wv);
    free(xv);
    t_end();
}

/* An eval graph with a loss: the running statistics are constants, so dx = dy * gamma /
   sqrt(running_var + eps), dgamma = sum dy * xhat, dbeta = sum dy (all exact, in double). */
static void eval_grad_case(const t_env *e) {
    enum { N = 3, C = 5, S = 17, n = N * C * S }; /* S >= 16: CPU devices' norm_runs_* kernels */
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y, w, gam, bet;
    float xv[n], wv[n], rmv[C], rvv[C], gv[C], bv[C], got[n];
    double xd[n], mean[C], var[C], dx[n], dg[C], db[C], gd64[n], err;
    long i, c;
    if (!t_begin_op(e, "batch_norm eval graph gradients (constant statistics)")) return; /* a reference check */
    t_seed(0xe7a1);
    memset(&gd, 0, sizeof gd);
    gd.eval = 1;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape3(N, C, S));
    nn_graph_requires_grad(g, x);
    y = nn_batch_norm1d_layer(g, x, NULL, "bn");
    w = nn_input(g, "w", NN_F32, nn_shape3(N, C, S));
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, y, w)); /* no optimizer: the parameters' gradients are kept */
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (t_survey_graph(g)) goto done; /* NN_TEST_SURVEY: compiled, not run */
    for (i = 0; i < n; i++) {
        xv[i] = (float)t_uniform(-2, 3);
        wv[i] = (float)t_uniform(-1, 1);
        xd[i] = xv[i];
    }
    for (c = 0; c < C; c++) {
        rmv[c] = (float)t_uniform(-1, 1);
        rvv[c] = (float)t_uniform(0.5, 2);
        gv[c] = (float)t_uniform(0.5, 1.5);
        bv[c] = (float)t_uniform(-1, 1);
        mean[c] = rmv[c];
        var[c] = rvv[c];
        dg[c] = db[c] = 0;
    }
    gam = nn_graph_find(g, "bn.weight");
    bet = nn_graph_find(g, "bn.bias");
    T_OK(nn_tensor_write(g, x, xv, sizeof xv), ctx);
    T_OK(nn_tensor_write(g, w, wv, sizeof wv), ctx);
    T_OK(nn_tensor_write(g, nn_graph_find(g, "bn.running_mean"), rmv, sizeof rmv), ctx);
    T_OK(nn_tensor_write(g, nn_graph_find(g, "bn.running_var"), rvv, sizeof rvv), ctx);
    T_OK(nn_tensor_write(g, gam, gv, sizeof gv), ctx);
    T_OK(nn_tensor_write(g, bet, bv, sizeof bv), ctx);
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    for (i = 0; i < n; i++) {
        long ch = (i / S) % C;
        double rs = 1.0 / sqrt(var[ch] + 1e-5);
        dx[i] = wv[i] * gv[ch] * rs;
        dg[ch] += wv[i] * (xd[i] - mean[ch]) * rs;
        db[ch] += wv[i];
    }
    T_OK(nn_tensor_read(g, nn_graph_grad(g, x), got, sizeof got), ctx);
    for (i = 0; i < n; i++) gd64[i] = got[i];
    err = t_relerr(gd64, dx, n);
    T_CHECK(err <= 1e-5, "dx: relative error %.3g", err);
    T_OK(nn_tensor_read(g, nn_graph_grad(g, gam), got, C * 4), ctx);
    for (i = 0; i < C; i++) gd64[i] = got[i];
    err = t_relerr(gd64, dg, C);
    T_CHECK(err <= 1e-5, "dgamma: relative error %.3g", err);
    T_OK(nn_tensor_read(g, nn_graph_grad(g, bet), got, C * 4), ctx);
    for (i = 0; i < C; i++) gd64[i] = got[i];
    err = t_relerr(gd64, db, C);
    T_CHECK(err <= 1e-5, "dbeta: relative error %.3g", err);
    T_CHECK(nn_graph_grad(g, nn_graph_find(g, "bn.running_var")).id == 0, "a buffer got a gradient");
done:
    nn_graph_destroy(g);
    t_end();
}

/* ---- errors ---- */

static int msg_has(nn_context *ctx, const char *a, const char *b, const char *c) {
    const char *m = nn_context_last_error(ctx);
    return strstr(m, a) && strstr(m, b) && (!c || strstr(m, c));
}

static void error_cases(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor x, gm, bt, none;
    nn_init ones;
    if (!t_begin(e, "norm errors name the op and shapes")) return;
    none = NN_NONE;
    memset(&ones, 0, sizeof ones);
    ones.kind = NN_INIT_CONSTANT;
    ones.a = 1;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape4(2, 3, 5, 5));
    gm = nn_input(g, "gamma", NN_F32, nn_shape1(4));
    T_CHECK(nn_batch_norm(g, x, gm, none, NULL).id < 0, "batch_norm with gamma [4] for C = 3");
    T_CHECK(msg_has(ctx, "nn_batch_norm", "[4]", "[2, 3, 5, 5]"), "message: %s", nn_context_last_error(ctx));
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape4(2, 6, 5, 5));
    T_CHECK(nn_group_norm(g, x, 4, none, none, &(nn_norm_desc){.eps = 1e-5f}).id < 0, "group_norm with 4 groups of 6 channels");
    T_CHECK(msg_has(ctx, "nn_group_norm", "[2, 6, 5, 5]", "4"), "message: %s", nn_context_last_error(ctx));
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape3(2, 6, 5));
    bt = nn_input(g, "beta", NN_F32, nn_shape1(6));
    T_CHECK(nn_layer_norm(g, x, 2, none, bt, &(nn_norm_desc){.eps = 1e-5f}).id < 0, "layer_norm over [6, 5] with beta [6]");
    T_CHECK(msg_has(ctx, "nn_layer_norm", "[6]", "[6, 5]"), "message: %s", nn_context_last_error(ctx));
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(2, 6));
    T_CHECK(nn_instance_norm(g, x, none, none, &(nn_norm_desc){.eps = 1e-5f}).id < 0, "instance_norm of [2, 6] (no spatial dims)");
    T_CHECK(msg_has(ctx, "nn_instance_norm", "[2, 6]", NULL), "message: %s", nn_context_last_error(ctx));
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(1, 6));
    T_CHECK(nn_batch_norm1d_layer(g, x, NULL, "bn").id < 0, "training batch_norm of [1, 6] (1 value per channel)");
    T_CHECK(msg_has(ctx, "nn_batch_norm", "[1, 6]", NULL), "message: %s", nn_context_last_error(ctx));
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape3(2, 6, 3));
    T_CHECK(nn_batch_norm2d_layer(g, x, NULL, "bn").id < 0, "batch_norm2d of [2, 6, 3]");
    T_CHECK(msg_has(ctx, "nn_batch_norm2d_layer", "[2, 6, 3]", NULL), "message: %s", nn_context_last_error(ctx));
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    nn_buffer(g, "s", nn_shape1(3), ones);
    T_CHECK(nn_param(g, "s", nn_shape1(3), ones).id < 0, "a buffer's name reused for a parameter");
    T_CHECK(msg_has(ctx, "nn_param", "buffer", NULL), "message: %s", nn_context_last_error(ctx));
done:
    nn_graph_destroy(g);
    t_end();
}

/* ==== NaN and infinity propagation (the op checker's expected-value mode: PyTorch's
   NaN, +-inf and values; the rules in tests/op_check.c) ==== */

/* ---- normalisation: a NaN or inf makes its statistics group NaN (mean inf, variance
   inf - inf), and nothing else; the weight's gradient sums over groups, the bias's does
   not see x ---- */

typedef struct np_norm { int kind, groups; } np_norm; /* kind: 0 batch, 1 layer, 2 group, 3 instance */
static nn_tensor b_norm(nn_graph *g, const nn_tensor *in, const spec *s_) {
    const np_norm *q = (const np_norm *)s_->arg;
    nn_norm_desc bd;
    switch (q->kind) {
    case 0:
        memset(&bd, 0, sizeof bd);
        return nn_batch_norm(g, in[0], in[1], in[2], &bd);
    case 1: return nn_layer_norm(g, in[0], 1, in[1], in[2], NULL);
    case 2: return nn_group_norm(g, in[0], q->groups, in[1], in[2], NULL);
    default: return nn_instance_norm(g, in[0], in[1], in[2], 0);
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
    cs.y_expect = y;
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

/* rms norm, PyTorch's x * rsqrt(mean(x^2) + eps) * w (its CPU rms_norm): a NaN makes its row
   NaN; an inf makes its element NaN (inf * 0) and the row's others 0; the gradients of such
   rows and the weight's are NaN (inf * 0 in the mean's path) */
static nn_tensor b_rms_np(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return nn_rms_norm(g, in[0], 1, in[1], NULL);
}
static void nanprop_rms(const t_env *e) {
    static const double x[16] = {1, -2, 3, 0.5, 1, NAN, 2, 1, 1, INFINITY, -2, 1, 1, -INFINITY, 2, 1};
    static const double w[4] = {1, 0.5, 2, 1.5}, dy[16] = {1, 0.7, 1.2, 0.9, 1, 0.7, 1.2, 0.9, 1, 0.7, 1.2, 0.9, 1, 0.7, 1.2, 0.9};
    static const double y[16] = {FIN, FIN, FIN, FIN, NAN, NAN, NAN, NAN, 0, NAN, 0, 0, 0, NAN, 0, 0};
    static const double dx[16] = {FIN, FIN, FIN, FIN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    static const double dw[4] = {NAN, NAN, NAN, NAN};
    np_case cs;
    np_init(&cs, "rms_norm x[4, 4] NaN, +inf, -inf", b_rms_np, NULL);
    np_in(&cs, nn_shape2(4, 4), x, dx);
    np_in(&cs, nn_shape1(4), w, dw);
    cs.y_expect = y;
    cs.w = dy;
    np_run(e, &cs);
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

/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- normalisation ---- */

static nn_tensor bn(nn_graph *g, int which) {
    nn_norm_desc d;
    nn_init z;
    nn_tensor x = F(g, S4(2, 3, 4, 4));
    memset(&d, 0, sizeof d);
    memset(&z, 0, sizeof z);
    switch (which) {
    case 0: return nn_batch_norm(g, F(g, S1(5)), NN_NONE, NN_NONE, &d);
    case 1: return nn_batch_norm(g, x, F(g, S1(4)), NN_NONE, &d);
    case 2: d.momentum = 1.5f; return nn_batch_norm(g, x, NN_NONE, NN_NONE, &d);
    case 3: d.eps = -1e-5f; return nn_batch_norm(g, x, NN_NONE, NN_NONE, &d);
    case 4: d.running_mean = nn_buffer(g, "rm", S1(3), z); return nn_batch_norm(g, x, NN_NONE, NN_NONE, &d);
    case 5:
        d.running_mean = nn_buffer(g, "rm", S1(3), z);
        d.running_var = nn_buffer(g, "rv", S1(4), z);
        return nn_batch_norm(g, x, NN_NONE, NN_NONE, &d);
    case 6: return nn_batch_norm(g, F(g, S2(1, 3)), NN_NONE, NN_NONE, &d);
    case 7: return nn_batch_norm(g, I(g, S4(2, 3, 4, 4)), NN_NONE, NN_NONE, &d);
    case 8: d.momentum = NAN; return nn_batch_norm(g, x, NN_NONE, NN_NONE, &d);
    case 9: return nn_batch_norm(g, x, NN_NONE, I(g, S1(3)), &d);
    case 10: return nn_batch_norm1d_layer(g, x, NULL, "bn");
    case 11: return nn_batch_norm2d_layer(g, x, NULL, NULL);
    case 12: return nn_layer_norm(g, F(g, S2(3, 4)), 0, NN_NONE, NN_NONE, NULL);
    case 13: return nn_layer_norm(g, F(g, S2(3, 4)), 3, NN_NONE, NN_NONE, NULL);
    case 14: return nn_layer_norm(g, F(g, S2(3, 4)), 1, F(g, S1(3)), NN_NONE, NULL);
    case 15: return nn_layer_norm(g, F(g, S2(3, 4)), 1, NN_NONE, NN_NONE, &(nn_norm_desc){.eps = NAN});
    case 16: return nn_group_norm(g, F(g, S3(2, 6, 4)), 0, NN_NONE, NN_NONE, NULL);
    case 17: return nn_group_norm(g, F(g, S3(2, 6, 4)), 4, NN_NONE, NN_NONE, NULL);
    case 18: return nn_group_norm(g, F(g, S3(2, 6, 4)), 3, NN_NONE, I(g, S1(6)), NULL);
    case 19: return nn_instance_norm(g, F(g, S2(4, 3)), NN_NONE, NN_NONE, 0);
    case 20: return nn_instance_norm(g, F(g, S3(4, 3, 1)), NN_NONE, NN_NONE, 0);
    case 21: return nn_instance_norm(g, F(g, S3(4, 3, 5)), F(g, S1(4)), NN_NONE, &(nn_norm_desc){.eps = -1.0f});
    case 22: return nn_group_norm(g, F(g, S3(2, 6, 4)), 3, T(500), NN_NONE, NULL);
    case 23: return nn_layer_norm(g, I(g, S2(3, 4)), 1, NN_NONE, NN_NONE, NULL);
    case 24: return nn_rms_norm(g, F(g, S2(3, 4)), 0, NN_NONE, NULL);
    case 25: return nn_rms_norm(g, F(g, S2(3, 4)), 1, F(g, S1(3)), NULL);
    case 26: return nn_rms_norm(g, F(g, S2(3, 4)), 1, NN_NONE, &(nn_norm_desc){.eps = -1.0f});
    case 27: return nn_rms_norm(g, I(g, S2(3, 4)), 1, NN_NONE, NULL);
    case 28: return nn_rms_norm_layer(g, F(g, S2(3, 4)), 1, NULL, "");
    case 29: return nn_layer_norm_layer(g, F(g, S2(3, 4)), 3, NULL, "ln");
    case 30: d.running_mean = nn_buffer(g, "rm", S1(4), z); return nn_layer_norm_layer(g, F(g, S2(3, 4)), 1, &d, "ln");
    default: return T(-1);
    }
}
#define BN(N) \
    static nn_tensor n_bn##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return bn(g, N); }
BN(0) BN(1) BN(2) BN(3) BN(4) BN(5) BN(6) BN(7) BN(8) BN(9) BN(10) BN(11) BN(12) BN(13) BN(14) BN(15) BN(16) BN(17)
BN(18) BN(19) BN(20) BN(21) BN(22) BN(23) BN(24) BN(25) BN(26) BN(27) BN(28) BN(29) BN(30)

static const bad_row norm_bad[] = {
    {"norm", "batch_norm of [5]", n_bn0, R_SHAPE, "nn_batch_norm|[5]", 0},
    {"norm", "batch_norm gamma [4] for 3 channels", n_bn1, R_SHAPE, "nn_batch_norm|gamma [4]|[3]", 0},
    {"norm", "batch_norm momentum 1.5", n_bn2, R_INV, "nn_batch_norm|momentum 1.5", 0},
    {"norm", "batch_norm eps -1e-5", n_bn3, R_INV, "nn_batch_norm|eps -1e-05", 0},
    {"norm", "batch_norm running_mean alone", n_bn4, R_INV, "nn_batch_norm|running_mean|running_var", 0},
    {"norm", "batch_norm running_var [4]", n_bn5, R_SHAPE, "nn_batch_norm|running_var [4]", 0},
    {"norm", "batch_norm of [1, 3]", n_bn6, R_SHAPE, "nn_batch_norm|[1, 3]|1 value", 0},
    {"norm", "batch_norm of int32", n_bn7, R_SHAPE, "nn_batch_norm|int32", 0},
    {"norm", "batch_norm momentum NaN", n_bn8, R_INV, "nn_batch_norm|momentum nan", 0},
    {"norm", "batch_norm beta int32", n_bn9, R_SHAPE, "nn_batch_norm|beta|int32", 0},
    {"norm", "batch_norm1d_layer of [2, 3, 4, 4]", n_bn10, R_SHAPE, "nn_batch_norm1d_layer|[2, 3, 4, 4]", 0},
    {"norm", "batch_norm2d_layer without a name", n_bn11, R_INV, "nn_batch_norm2d_layer|name", 0},
    {"norm", "layer_norm n_norm_dims 0", n_bn12, R_SHAPE, "nn_layer_norm|n_norm_dims 0|[3, 4]", 0},
    {"norm", "layer_norm n_norm_dims 3 of 2-D", n_bn13, R_SHAPE, "nn_layer_norm|n_norm_dims 3", 0},
    {"norm", "layer_norm gamma [3] for [3, 4]", n_bn14, R_SHAPE, "nn_layer_norm|gamma [3]|[4]", 0},
    {"norm", "layer_norm eps NaN", n_bn15, R_INV, "nn_layer_norm|eps nan", 0},
    {"norm", "group_norm groups 0", n_bn16, R_SHAPE, "nn_group_norm|groups = 0", 0},
    {"norm", "group_norm groups 4 of 6 channels", n_bn17, R_SHAPE, "nn_group_norm|groups = 4|[2, 6, 4]", 0},
    {"norm", "group_norm beta int32", n_bn18, R_SHAPE, "nn_group_norm|beta|int32", 0},
    {"norm", "instance_norm of [4, 3]", n_bn19, R_SHAPE, "nn_instance_norm|[4, 3]", 0},
    {"norm", "instance_norm of 1 spatial value", n_bn20, R_SHAPE, "nn_instance_norm|[4, 3, 1]", 0},
    {"norm", "instance_norm eps -1", n_bn21, R_INV, "nn_instance_norm|eps -1", 0},
    {"norm", "group_norm gamma id 500", n_bn22, R_INV, "nn_group_norm|not a tensor of this graph", 0},
    {"norm", "layer_norm of int32", n_bn23, R_SHAPE, "nn_layer_norm|int32", 0},
    {"norm", "rms_norm n_norm_dims 0", n_bn24, R_SHAPE, "nn_rms_norm|n_norm_dims 0|[3, 4]", 0},
    {"norm", "rms_norm weight [3] for [3, 4]", n_bn25, R_SHAPE, "nn_rms_norm|weight [3]|[4]", 0},
    {"norm", "rms_norm eps -1", n_bn26, R_INV, "nn_rms_norm|eps -1", 0},
    {"norm", "rms_norm of int32", n_bn27, R_SHAPE, "nn_rms_norm|int32", 0},
    {"norm", "rms_norm_layer without a name", n_bn28, R_INV, "nn_rms_norm_layer|name", 0},
    {"norm", "layer_norm_layer n_norm_dims 3 of 2-D", n_bn29, R_SHAPE, "nn_layer_norm_layer|n_norm_dims 3|[3, 4]", 0},
    {"norm", "layer_norm_layer running_mean", n_bn30, R_INV, "nn_layer_norm_layer|running", 0},
};

/* ---- the CPU backend's vector loops (layer norm's rows, batch and instance norm's sums over
   images, src/cpu/norm.c) against its plain loops: the same bits for y, dx, dgamma, dbeta ---- */
static int vec_run(nn_context *ctx, int kind, const long *d, float *out) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, ga, be, w, y, t[4];
    long n = d[0] * d[1] * d[2] * d[3], C = kind == 3 ? d[3] : d[1], i, off = 0;
    float *buf = (float *)malloc((size_t)n * 4);
    int k, ok = buf != NULL && nn_graph_create(ctx, NULL, &g) == NN_OK;
    if (!ok) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape4(d[0], d[1], d[2], d[3]));
    w = nn_input(g, "w", NN_F32, nn_shape4(d[0], d[1], d[2], d[3]));
    ga = nn_input(g, "g", NN_F32, nn_shape1(C));
    be = nn_input(g, "b", NN_F32, nn_shape1(C));
    y = kind == 0 ? nn_batch_norm(g, x, ga, be, NULL)
        : kind == 1 ? nn_instance_norm(g, x, ga, be, NULL)
        : kind == 2 ? nn_group_norm(g, x, 2, ga, be, NULL)
                    : nn_layer_norm(g, x, 1, ga, be, NULL);
    ok = nn_graph_requires_grad(g, x) == NN_OK && nn_graph_requires_grad(g, ga) == NN_OK &&
         nn_graph_requires_grad(g, be) == NN_OK && nn_graph_output(g, y) == NN_OK;
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, y, w));
    ok = ok && nn_graph_compile(g, &cd) == NN_OK;
    t_seed(5);
    for (k = 0; ok && k < 4; k++) {
        long m = k < 2 ? n : C;
        for (i = 0; i < m; i++) buf[i] = (float)t_uniform(-2, 2) * (k == 0 ? 1.0f + (float)(i % 5) : 1.0f);
        ok = nn_tensor_write(g, k == 0 ? x : k == 1 ? w : k == 2 ? ga : be, buf, (size_t)m * 4) == NN_OK;
    }
    ok = ok && nn_graph_step(g) == NN_OK;
    if (ok) t[0] = y, t[1] = nn_graph_grad(g, x), t[2] = nn_graph_grad(g, ga), t[3] = nn_graph_grad(g, be);
    for (k = 0; ok && k < 4; k++) {
        long m = k < 2 ? n : C;
        ok = nn_tensor_read(g, t[k], out + off, (size_t)m * 4) == NN_OK;
        off += m;
    }
done:
    nn_graph_destroy(g);
    free(buf);
    return ok;
}

static void vec_bits(const t_env *e) {
    static const long shapes[][4] = {{3, 2, 1, 3}, {7, 3, 3, 3}, {5, 4, 4, 4}, {2, 6, 7, 5}, {9, 2, 11, 3}, {4, 2, 1, 17}, {33, 2, 2, 2}, {2, 2, 3, 136}};
    int kind, si;
    if (e->opencl) return; /* the CPU backend's loops */
    if (!t_begin(e, "norm: the CPU's vector loops (batch/instance sums over images, layer norm rows) give the plain loops' bits")) return;
    for (kind = 0; kind < 4; kind++)
        for (si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++) {
            const long *d = shapes[si];
            long n = 2 * d[0] * d[1] * d[2] * d[3] + 2 * (d[1] > d[3] ? d[1] : d[3]), k, bad = 0;
            float *r0 = (float *)calloc((size_t)n, 4), *r1 = (float *)calloc((size_t)n, 4);
            int ok;
            if (kind == 2 && d[1] % 2) { /* group norm's 2 groups need an even C */
                free(r0);
                free(r1);
                continue;
            }
            t_norm_vec(1);
            ok = r0 && r1 && vec_run(e->ctx, kind, d, r0);
            t_norm_vec(0);
            ok = ok && vec_run(e->ctx, kind, d, r1);
            t_norm_vec(1);
            T_CHECK(ok, "kind %d [%ld, %ld, %ld, %ld]: %s", kind, d[0], d[1], d[2], d[3], nn_context_last_error(e->ctx));
            for (k = 0; ok && k < n; k++)
                if (memcmp(&r0[k], &r1[k], 4) != 0 || !isfinite(r0[k])) bad++;
            T_CHECK(bad == 0, "kind %d [%ld, %ld, %ld, %ld]: %ld values differ", kind, d[0], d[1], d[2], d[3], bad);
            free(r0);
            free(r1);
        }
    t_end();
}

void suite_norm(const t_env *e) {
    checker_cases(e);
    running_case(e, nn_shape4(4, 3, 3, 7), 1);
    running_case(e, nn_shape4(4, 3, 3, 7), 3);
    running_case(e, nn_shape2(5, 7), 3);
    running_case(e, nn_shape3(2, 5, 3), 3);
    running_case(e, nn_shape4(2, 3, 4, 5), 3);
    T_RUN(e, eval_grad_case, error_cases, nanprop_norm, nanprop_bn_running, nanprop_rms, vec_bits);
    t_bad_rows(e, norm_bad, (int)(sizeof norm_bad / sizeof norm_bad[0]));
}
