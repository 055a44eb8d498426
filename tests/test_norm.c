/* Normalisation layers: batch, layer, group and instance norm through the op checker
   (forward vs a double reference, gradients for x, gamma and beta vs finite differences,
   CPU parity), batch norm's running statistics after 1 and 3 training steps, an eval graph
   that shares them, and the shape errors. Shapes are odd on purpose (C odd, spatial 1/3/7,
   N = 1 where the statistics allow it). */
#include "test.h"
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

static const char *shape_name(nn_shape sh, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "[");
    int k;
    for (k = 0; k < sh.ndim && used < n; k++) used += (size_t)snprintf(buf + used, n - used, k ? ", %lld" : "%lld", (long long)sh.dim[k]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
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
    /* instance norm */
    norm_case(e, "instance_norm", b_instance_norm, r_instance_norm, nn_shape4(1, 3, 7, 7), nn_shape1(3), 1, 1, 0, 1e-5f);
    norm_case(e, "instance_norm", b_instance_norm, r_instance_norm, nn_shape3(2, 5, 3), nn_shape1(5), 0, 0, 0, 1e-5f);
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
    if (!t_begin(e, label)) goto done;
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
    enum { N = 3, C = 5, S = 7, n = N * C * S };
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y, w, gam, bet;
    float xv[n], wv[n], rmv[C], rvv[C], gv[C], bv[C], got[n];
    double xd[n], mean[C], var[C], dx[n], dg[C], db[C], gd64[n], err;
    long i, c;
    if (!t_begin(e, "batch_norm eval graph gradients (constant statistics)")) return;
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

void suite_norm(const t_env *e) {
    checker_cases(e);
    running_case(e, nn_shape4(4, 3, 3, 7), 1);
    running_case(e, nn_shape4(4, 3, 3, 7), 3);
    running_case(e, nn_shape2(5, 7), 3);
    running_case(e, nn_shape3(2, 5, 3), 3);
    eval_grad_case(e);
    error_cases(e);
}
