/* Device kernels shaped for GPUs (issue 19, item 5), on every backend: the gpu-tuning pass
   runs the GPU variants on PoCL, the others the kept kernels. Sums to one value over many
   work-groups in two passes (sum, mean, the losses' reductions, clip_norm's gradient norm:
   kernels/reduce.cl's sum_parts and sum_finish, above 2048 elements): the op checker at odd
   sizes not a multiple of the work-group, sums of up to 2,100,001 elements against double,
   the same bits run to run, the launch count that shows which path ran. */
#include "test.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ==== sums and means over all elements, and a loss's mean, through the op checker ==== */

static nn_tensor b_sum(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return nn_sum(g, in[0]);
}
static nn_tensor b_mean(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return nn_mean(g, in[0]);
}
static nn_tensor b_mse(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return nn_mse_loss(g, in[0], in[1], NULL);
}
static void r_sum(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) out[0] += in[0][i];
}
static void r_mean(const spec *s, double *const *in, double *out) {
    r_sum(s, in, out);
    out[0] /= (double)numel(s->shape[0]);
}
static void r_mse(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) out[0] += (in[0][i] - in[1][i]) * (in[0][i] - in[1][i]);
    out[0] /= (double)n;
}

static void sum_cases(const t_env *e) {
    /* 2049: one past a part; 7007 = 4 parts of 1752 (the last 1751); 4191 = 3 parts of 1397 */
    static const long shapes[][2] = {{1, 2049}, {7, 1001}, {33, 127}};
    int i, k;
    for (i = 0; i < 3; i++)
        for (k = 0; k < 3; k++) {
            char name[96];
            nn_shape sh = nn_shape2(shapes[i][0], shapes[i][1]);
            spec s;
            snprintf(name, sizeof name, "%s of [%ld, %ld] (two passes on GPU devices)", k == 0 ? "sum" : k == 1 ? "mean" : "mse_loss",
                     shapes[i][0], shapes[i][1]);
            s = mk(name, k == 0 ? b_sum : k == 1 ? b_mean : b_mse, k == 0 ? r_sum : k == 1 ? r_mean : r_mse, nn_shape1(1));
            in_f(&s, sh);
            if (k == 2) in_f(&s, sh);
            s.dirs = 2; /* directional derivatives: a few thousand elements each */
            check_case(e, &s);
        }
}

/* ==== long sums against double, twice, and the path they took ==== */

/* y = sum(x) (mean when mean) of n floats on ctx; its kernel launches in *launches */
static int run_sum(nn_context *ctx, const float *x, long n, int mean, float *y, unsigned long long *launches) {
    nn_graph *g = NULL;
    nn_tensor xt, yt;
    nn_stats st;
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    xt = nn_input(g, "x", NN_F32, nn_shape1(n));
    yt = mean ? nn_mean(g, xt) : nn_sum(g, xt);
    nn_graph_output(g, yt);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, xt, x, (size_t)n * 4), ctx)) goto done;
    nn_context_reset_stats(ctx);
    if (!T_OK(nn_graph_forward(g), ctx)) goto done;
    if (!T_OK(nn_graph_finish(g), ctx)) goto done;
    nn_context_stats(ctx, &st);
    *launches = st.kernel_launches;
    if (!T_OK(nn_tensor_read(g, yt, y, 4), ctx)) goto done;
    ok = 1;
done:
    nn_graph_destroy(g);
    return ok;
}

static void test_long_sums(const t_env *e) {
    /* 2049: two parts; 700,001: 342 parts; 2,100,001: 1024 parts (the cap) of 2051 */
    static const long sizes[] = {2048, 2049, 700001, 2100001};
    int si, mean;
    if (!t_begin(e, "gpu shapes: sums and means of up to 2,100,001 within 1e-6 of double, the same bits twice")) return;
    t_seed(1919);
    for (si = 0; si < 4; si++) {
        long n = sizes[si], i;
        float *x = (float *)malloc((size_t)n * 4);
        double ref = 0;
        for (i = 0; i < n; i++) {
            x[i] = (float)t_uniform(0, 1);
            ref += x[i];
        }
        for (mean = 0; mean < 2; mean++) {
            float a = 0, b = 0;
            unsigned long long la = 0, lb = 0, want = e->opencl && t_gpu_tuned(e) && n > 2048 ? 2 : 1;
            double r = mean ? ref / (double)n : ref;
            if (!run_sum(e->ctx, x, n, mean, &a, &la) || !run_sum(e->ctx, x, n, mean, &b, &lb)) continue;
            T_CHECK(fabs(a - r) <= 1e-6 * fabs(r), "%s of %ld: %.9g, double gives %.9g", mean ? "mean" : "sum", n, a, r);
            T_CHECK(memcmp(&a, &b, 4) == 0, "%s of %ld: two runs differ (%.9g, %.9g)", mean ? "mean" : "sum", n, a, b);
            if (e->opencl)
                T_CHECK(la == want, "%s of %ld: %llu launches, expected %llu", mean ? "mean" : "sum", n, la, want);
        }
        free(x);
    }
    t_end();
}

/* ==== clip_norm's global gradient norm over two parameters of 5,001 and 3,333 elements:
   SGD with lr 1 after one step, p = 1 - c * min(1, max_norm / (|c| + 1e-6)) for the
   loss sum(p1 * c1) + sum(p2 * c2), against double; twice, the same bits ==== */

static int run_clip(nn_context *ctx, const float *c1, const float *c2, float *p1v, float *p2v) {
    nn_graph *g = NULL;
    nn_tensor p1, p2, x1, x2, loss;
    nn_compile_desc cd;
    nn_init one;
    int ok = 0;
    memset(&one, 0, sizeof one);
    one.kind = NN_INIT_CONSTANT;
    one.a = 1;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    p1 = nn_param(g, "p1", nn_shape1(5001), one);
    p2 = nn_param(g, "p2", nn_shape2(3, 1111), one);
    x1 = nn_input(g, "c1", NN_F32, nn_shape1(5001));
    x2 = nn_input(g, "c2", NN_F32, nn_shape2(3, 1111));
    loss = nn_add(g, nn_sum(g, nn_mul(g, p1, x1)), nn_sum(g, nn_mul(g, p2, x2)));
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 1.0f;
    cd.optimizer.clip_norm = 2.0f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x1, c1, 5001 * 4), ctx) || !T_OK(nn_tensor_write(g, x2, c2, 3333 * 4), ctx)) goto done;
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    if (!T_OK(nn_tensor_read(g, p1, p1v, 5001 * 4), ctx) || !T_OK(nn_tensor_read(g, p2, p2v, 3333 * 4), ctx)) goto done;
    ok = 1;
done:
    nn_graph_destroy(g);
    return ok;
}

static void test_clip_norm(const t_env *e) {
    float *c = (float *)malloc(8334 * 4), *a = (float *)malloc(8334 * 4), *b = (float *)malloc(8334 * 4);
    double norm = 0, coef, err = 0;
    long i;
    if (!t_begin(e, "gpu shapes: clip_norm over parameters of 5,001 and 3,333 within 1e-6 of double, the same bits twice")) goto out;
    t_seed(2020);
    for (i = 0; i < 8334; i++) {
        c[i] = (float)t_uniform(-1, 1);
        norm += (double)c[i] * c[i];
    }
    coef = 2.0 / (sqrt(norm) + 1e-6);
    if (coef > 1) coef = 1;
    if (run_clip(e->ctx, c, c + 5001, a, a + 5001) && run_clip(e->ctx, c, c + 5001, b, b + 5001)) {
        for (i = 0; i < 8334; i++) {
            double d = fabs(a[i] - (1.0 - c[i] * coef));
            if (d > err) err = d;
        }
        T_CHECK(err <= 1e-6, "parameters after one clipped step: error %.3g > 1e-6 (coefficient %.9g)", err, coef);
        T_CHECK(memcmp(a, b, 8334 * 4) == 0, "two runs give different parameters");
    }
    t_end();
out:
    free(c);
    free(a);
    free(b);
}

/* ==== softmax, log-softmax and the fused cross-entropy at long rows (one work-group per
   row on GPU devices from 128 classes) and just short of them, through the op checker ==== */

static nn_tensor b_softmax(nn_graph *g, const nn_tensor *in, const spec *s) {
    return s->ip[0] == 1 ? nn_log_softmax(g, in[0], -1) : nn_softmax(g, in[0], -1);
}
static void r_softmax(const spec *s, double *const *in, double *out) {
    long R = s->shape[0].dim[0], C = s->shape[0].dim[1], r, c;
    for (r = 0; r < R; r++) {
        const double *x = in[0] + r * C;
        double m = x[0], sum = 0;
        for (c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
        for (c = 0; c < C; c++) sum += exp(x[c] - m);
        for (c = 0; c < C; c++) out[r * C + c] = s->ip[0] == 1 ? x[c] - m - log(sum) : exp(x[c] - m) / sum;
    }
}
static nn_tensor b_xent(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return nn_softmax_cross_entropy(g, in[0], in[1]);
}
/* the mean over rows of logsumexp(x[b]) - x[b, label[b]] */
static void r_xent(const spec *s, double *const *in, double *out) {
    long R = s->shape[0].dim[0], C = s->shape[0].dim[1], r, c;
    out[0] = 0;
    for (r = 0; r < R; r++) {
        const double *x = in[0] + r * C;
        double m = x[0], sum = 0;
        for (c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
        for (c = 0; c < C; c++) sum += exp(x[c] - m);
        out[0] += log(sum) + m - x[(long)in[1][r]];
    }
    out[0] /= (double)R;
}

/* k 3: cross-entropy with class weights, label smoothing 0.1 and ignore_index 3 (labels
   drawn in [0, 8)), the weighted mean; k 4: NLL of log-probabilities, summed */
static nn_tensor b_ce(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_loss_desc d;
    memset(&d, 0, sizeof d);
    if (s->ip[0] == 3) {
        d.weight = in[2];
        d.label_smoothing = 0.1f;
        d.ignore_index = 3;
        return nn_cross_entropy_loss(g, in[0], in[1], &d);
    }
    d.reduction = NN_REDUCTION_SUM;
    return nn_nll_loss(g, in[0], in[1], &d);
}
static void r_ce(const spec *s, double *const *in, double *out) {
    long R = s->shape[0].dim[0], C = s->shape[0].dim[1], r, c;
    double num = 0, den = 0;
    for (r = 0; r < R; r++) {
        const double *x = in[0] + r * C;
        long t = (long)in[1][r];
        if (s->ip[0] == 3) {
            double m = x[0], sum = 0, lse, sm = 0;
            if (t == 3) continue;
            for (c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
            for (c = 0; c < C; c++) sum += exp(x[c] - m);
            lse = m + log(sum);
            for (c = 0; c < C; c++) sm += in[2][c] * (lse - x[c]);
            num += 0.9 * in[2][t] * (lse - x[t]) + 0.1 / (double)C * sm;
            den += in[2][t];
        } else {
            num -= x[t];
        }
    }
    out[0] = s->ip[0] == 3 ? num / den : num;
}

/* the first row counted (not label 3), the last of several ignored (label 3), so that the
   ignored rows' path runs and the mean is defined */
static void fill_ignored(const spec *s, double *const *in) {
    if (in[1][0] == 3) in[1][0] = 0;
    if (s->shape[0].dim[0] > 1) in[1][s->shape[0].dim[0] - 1] = 3;
}

static void row_cases(const t_env *e) {
    /* 127: one work-item per row everywhere; 128: a group of 128; 1000, 1031, 4097: groups
       of 256 over rows not a multiple of it */
    static const long shapes[][2] = {{2, 127}, {1, 128}, {3, 1000}, {7, 1031}, {1, 4097}};
    int i, k;
    static const char *const names[] = {"softmax", "log_softmax", "softmax_cross_entropy",
                                        "cross_entropy_loss weight smoothing ignore_index", "nll_loss sum"};
    for (i = 0; i < 5; i++)
        for (k = 0; k < 5; k++) {
            char name[128];
            nn_shape sh = nn_shape2(shapes[i][0], shapes[i][1]);
            spec s;
            snprintf(name, sizeof name, "%s of [%ld, %ld] (long rows)", names[k], shapes[i][0], shapes[i][1]);
            s = mk(name, k < 2 ? b_softmax : k == 2 ? b_xent : b_ce, k < 2 ? r_softmax : k == 2 ? r_xent : r_ce,
                   k < 2 ? sh : nn_shape1(1));
            s.ip[0] = k == 1 ? 1 : k;
            in_f(&s, sh);
            if (k >= 2) in_i(&s, nn_shape1(shapes[i][0]), 0, k == 3 ? 8 : (int)shapes[i][1]);
            if (k == 3) {
                in_fr(&s, nn_shape1(shapes[i][1]), 0.5, 1.5);
                s.grad[2] = 0; /* class weights take no gradient (PyTorch's) */
                s.fill = fill_ignored;
            }
            s.dirs = 2;
            check_case(e, &s);
        }
}

/* softmax, log-softmax [5, 3001] forward and backward, and the cross-entropy's, twice: the
   same bits */
static int run_rows(nn_context *ctx, const float *xv, const int32_t *lab, int kind, float *y, float *dx) {
    nn_graph *g = NULL;
    nn_tensor x, lt, out, loss;
    nn_compile_desc cd;
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(5, 3001));
    lt = kind == 2 ? nn_input(g, "labels", NN_I32, nn_shape1(5)) : NN_NONE;
    nn_graph_requires_grad(g, x);
    out = kind == 2 ? nn_softmax_cross_entropy(g, x, lt) : kind ? nn_log_softmax(g, x, -1) : nn_softmax(g, x, -1);
    loss = kind == 2 ? out : nn_sum(g, nn_mul(g, out, nn_sin(g, x)));
    nn_graph_output(g, out);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, xv, 5 * 3001 * 4), ctx) || (kind == 2 && !T_OK(nn_tensor_write(g, lt, lab, 5 * 4), ctx))) goto done;
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    if (!T_OK(nn_tensor_read(g, out, y, kind == 2 ? 4 : 5 * 3001 * 4), ctx)) goto done;
    if (!T_OK(nn_tensor_read(g, nn_graph_grad(g, x), dx, 5 * 3001 * 4), ctx)) goto done;
    ok = 1;
done:
    nn_graph_destroy(g);
    return ok;
}

static void test_row_bits(const t_env *e) {
    static const int32_t lab[5] = {0, 3000, 17, 1500, 2999};
    float *x = (float *)malloc(5 * 3001 * 4), *y[2], *dx[2];
    int kind, i;
    for (i = 0; i < 2; i++) {
        y[i] = (float *)calloc(5 * 3001, 4);
        dx[i] = (float *)calloc(5 * 3001, 4);
    }
    if (!t_begin(e, "gpu shapes: softmax, log_softmax, cross-entropy of [5, 3001], the same bits twice")) goto out;
    t_seed(3001);
    for (i = 0; i < 5 * 3001; i++) x[i] = (float)t_uniform(-8, 8);
    for (kind = 0; kind < 3; kind++) {
        if (!run_rows(e->ctx, x, lab, kind, y[0], dx[0]) || !run_rows(e->ctx, x, lab, kind, y[1], dx[1])) continue;
        T_CHECK(memcmp(y[0], y[1], 5 * 3001 * 4) == 0 && memcmp(dx[0], dx[1], 5 * 3001 * 4) == 0,
                "%s: two runs differ", kind == 0 ? "softmax" : kind == 1 ? "log_softmax" : "cross-entropy");
    }
    t_end();
out:
    free(x);
    for (i = 0; i < 2; i++) {
        free(y[i]);
        free(dx[i]);
    }
}

void suite_gpu_shapes(const t_env *e) {
    sum_cases(e);
    row_cases(e);
    T_RUN(e, test_long_sums, test_clip_norm, test_row_bits);
}
