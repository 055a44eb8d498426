/* The public API's conventions, each against the behaviour it promises: NN_ZERO for an
   exact zero in options whose zero is a default, and the fields that cannot be zero;
   NN_NONE for an absent operand. */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A graph of one float input x of shape xs and the output of build(g, x); runs it forward
   on xv and reads the output into out (n floats). 1 on success. */
typedef nn_tensor (*api_build)(nn_graph *g, nn_tensor x, const void *arg);
static int run_forward(nn_context *ctx, nn_shape xs, const float *xv, api_build build, const void *arg, float *out, long n) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, y;
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, xs);
    y = build(g, x, arg);
    if (!T_CHECK(y.id >= 0, "build failed: %s", nn_context_last_error(ctx))) goto done;
    if (!T_CHECK(t_numel(g, y) == n, "output of %lld elements, not %ld", (long long)t_numel(g, y), n)) goto done;
    nn_graph_output(g, y);
    memset(&cd, 0, sizeof cd);
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    ok = T_OK(nn_tensor_write(g, x, xv, (size_t)numel(xs) * 4), ctx) && T_OK(nn_graph_forward(g), ctx) &&
         T_OK(nn_tensor_read(g, y, out, (size_t)n * 4), ctx);
done:
    nn_graph_destroy(g);
    return ok;
}

/* ---- norms: eps 0 is PyTorch's 1e-5, NN_ZERO is 0 ---- */

typedef struct norm_arg { int kind; float eps; } norm_arg; /* kind: 0 layer, 1 group, 2 instance, 3 batch */

static nn_tensor b_norm(nn_graph *g, nn_tensor x, const void *p) {
    const norm_arg *a = (const norm_arg *)p;
    nn_tensor none = NN_NONE;
    nn_norm_desc bd;
    switch (a->kind) {
    case 0: return nn_layer_norm(g, x, 2, none, none, &(nn_norm_desc){.eps = a->eps});
    case 1: return nn_group_norm(g, x, 2, none, none, &(nn_norm_desc){.eps = a->eps});
    case 2: return nn_instance_norm(g, x, none, none, &(nn_norm_desc){.eps = a->eps});
    default:
        memset(&bd, 0, sizeof bd);
        bd.eps = a->eps;
        return nn_batch_norm(g, x, none, none, &bd);
    }
}

/* x [2, 4, 3]: sample 0 constant (every norm's statistics over it have variance 0, except
   batch norm's, which mixes in sample 1), sample 1 varied. */
static void check_norm_eps(const t_env *e) {
    static const char *const names[4] = {"layer_norm", "group_norm", "instance_norm", "batch_norm"};
    float x[24], y[24];
    double ref[24];
    int k, i;
    if (!t_begin(e, "NN_ZERO: every norm's eps (0: 1e-5, NN_ZERO: 0)")) return;
    for (i = 0; i < 24; i++) x[i] = i < 12 ? 1.5f : (float)((i * 7) % 5) - 2.0f;
    for (k = 0; k < 4; k++) {
        norm_arg a;
        int r, rows, len;
        a.kind = k;
        a.eps = 0.0f;
        if (!run_forward(e->ctx, nn_shape3(2, 4, 3), x, b_norm, &a, y, 24)) continue;
        for (i = 0; i < 24; i++)
            if (!T_CHECK(isfinite(y[i]), "%s with eps 0: y[%d] = %g (eps 0 must be 1e-5)", names[k], i, y[i])) break;
        if (k == 3) continue; /* batch norm's reference: below, with NN_ZERO */
        for (i = 0; i < 12; i++)
            if (!T_CHECK(y[i] == 0.0f, "%s with eps 0: a constant group gives %g, not 0", names[k], y[i])) break;
        /* NN_ZERO on the varied sample: (x - mean) / sqrt(var), no eps at all */
        a.eps = NN_ZERO;
        if (!run_forward(e->ctx, nn_shape3(2, 4, 3), x, b_norm, &a, y, 24)) continue;
        rows = k == 0 ? 2 : k == 1 ? 4 : 8;
        len = 24 / rows;
        for (r = rows / 2; r < rows; r++) {
            double m = 0, v = 0;
            for (i = 0; i < len; i++) m += x[r * len + i];
            m /= len;
            for (i = 0; i < len; i++) v += (x[r * len + i] - m) * (x[r * len + i] - m);
            v /= len;
            for (i = 0; i < len; i++) ref[r * len + i] = v > 0 ? (x[r * len + i] - m) / sqrt(v) : 0;
        }
        for (i = 12; i < 24; i++)
            if (!T_CHECK(fabs(y[i] - ref[i]) <= 1e-5 * (1 + fabs(ref[i])), "%s with eps NN_ZERO: y[%d] = %.9g, want %.9g",
                         names[k], i, y[i], ref[i]))
                break;
    }
    {   /* batch norm over channels: x [4, 2] with NN_ZERO gives exact +-1 */
        static const float xb[8] = {1, 10, 3, 20, 1, 10, 3, 20};
        norm_arg a;
        a.kind = 3;
        a.eps = NN_ZERO;
        if (run_forward(e->ctx, nn_shape2(4, 2), xb, b_norm, &a, y, 8))
            for (i = 0; i < 8; i++)
                if (!T_CHECK(fabsf(fabsf(y[i]) - 1.0f) <= 1e-6f, "batch_norm eps NN_ZERO: y[%d] = %.9g, want +-1", i, y[i])) break;
    }
    t_end();
}

/* ---- losses: NN_ZERO options ---- */

typedef struct loss_arg { int kind; float v; } loss_arg;

static nn_tensor b_loss(nn_graph *g, nn_tensor x, const void *p) {
    const loss_arg *a = (const loss_arg *)p;
    nn_loss_desc d;
    nn_tensor t = nn_mul_scalar(g, x, -0.5f);
    memset(&d, 0, sizeof d);
    d.reduction = NN_REDUCTION_NONE;
    switch (a->kind) {
    case 0: d.delta = a->v; return nn_smooth_l1_loss(g, x, t, &d);
    case 1: return nn_l1_loss(g, x, t, &d);
    case 2: d.delta = a->v; return nn_huber_loss(g, x, t, &d);
    default: d.tau = a->v; return nn_quantile_loss(g, x, t, &d);
    }
}

static void check_loss_zero(const t_env *e) {
    float x[6] = {-3, -0.4f, -0.1f, 0.2f, 0.5f, 2.5f}, y[6], l1[6];
    loss_arg a;
    int i;
    if (!t_begin(e, "NN_ZERO: loss options (smooth L1 beta NN_ZERO is L1)")) return;
    a.kind = 1;
    a.v = 0;
    if (run_forward(e->ctx, nn_shape1(6), x, b_loss, &a, l1, 6)) {
        a.kind = 0;
        a.v = NN_ZERO;
        if (run_forward(e->ctx, nn_shape1(6), x, b_loss, &a, y, 6))
            for (i = 0; i < 6; i++) T_CHECK(fabsf(y[i] - l1[i]) <= 1e-6f, "smooth_l1 beta NN_ZERO: %g, L1 %g", y[i], l1[i]);
        a.v = 0; /* beta 1: 0.5 d^2 inside |d| < 1 */
        if (run_forward(e->ctx, nn_shape1(6), x, b_loss, &a, y, 6))
            T_CHECK(fabsf(y[1] - 0.5f * 0.6f * 0.6f) <= 1e-6f, "smooth_l1 beta 0 (1.0): %g", y[1]);
        a.kind = 3; /* quantile tau NN_ZERO: max(0 * d, -d) = -d, d = t - p */
        a.v = NN_ZERO;
        if (run_forward(e->ctx, nn_shape1(6), x, b_loss, &a, y, 6))
            for (i = 0; i < 6; i++) T_CHECK(fabsf(y[i] - fmaxf(0, 1.5f * x[i])) <= 1e-6f, "quantile tau NN_ZERO: %g", y[i]);
    }
    a.kind = 2; /* Huber's delta must be > 0: NN_ZERO is refused */
    a.v = NN_ZERO;
    {
        nn_graph *g = NULL;
        if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
            T_CHECK(b_loss(g, nn_input(g, "x", NN_F32, nn_shape1(6)), &a).id < 0 &&
                        nn_graph_status(g) == NN_ERR_INVALID_ARGUMENT,
                    "huber delta NN_ZERO was accepted");
            nn_graph_destroy(g);
        }
    }
    t_end();
}

/* ---- schedules ---- */

static void check_schedule_zero(const t_env *e) {
    nn_lr_schedule s;
    if (!t_begin(e, "NN_ZERO: lr schedule fields")) return;
    memset(&s, 0, sizeof s);
    s.kind = NN_LR_STEP;
    s.lr = 0.5f;
    s.step_size = 2;
    T_CHECK(fabsf(t_lr_at(&s, 2) - 0.05f) < 1e-7f, "step gamma 0 (0.1): %g", t_lr_at(&s, 2));
    s.gamma = NN_ZERO;
    T_CHECK(t_lr_at(&s, 1) == 0.5f && t_lr_at(&s, 2) == 0.0f, "step gamma NN_ZERO: %g, %g", t_lr_at(&s, 1), t_lr_at(&s, 2));
    memset(&s, 0, sizeof s);
    s.kind = NN_LR_LINEAR;
    s.lr = 0.3f;
    s.warmup_steps = 4;
    s.total_steps = 8;
    s.min_lr = 0.3f;
    T_CHECK(fabsf(t_lr_at(&s, 0) - 0.1f) < 1e-7f, "warm-up factor 0 (1/3): %g", t_lr_at(&s, 0));
    s.warmup_start_factor = NN_ZERO;
    T_CHECK(t_lr_at(&s, 0) == 0.0f && fabsf(t_lr_at(&s, 2) - 0.15f) < 1e-7f, "warm-up factor NN_ZERO: %g, %g",
            t_lr_at(&s, 0), t_lr_at(&s, 2));
    t_end();
}

/* ---- fields that cannot be zero, and one that can ---- */

static void quiet_log(void *user, nn_log_level level, const char *message) {
    (void)user;
    (void)level;
    (void)message;
}

static void check_zero_refused(const t_env *e) {
    nn_context *ctx = e->ctx, *c2 = NULL;
    nn_context_desc cdd;
    nn_graph *g = NULL;
    nn_conv2d_desc cd;
    nn_pool2d_desc pd;
    nn_compile_desc comp;
    nn_tensor x, w, none = NN_NONE, loss;
    if (!t_begin(e, "NN_ZERO: refused where 0 is no value (stride, threads, accumulate_steps)")) return;
    memset(&cdd, 0, sizeof cdd);
    cdd.device = "cpu";
    cdd.threads = NN_ZERO;
    cdd.log = quiet_log;
    T_CHECK(nn_context_create(&cdd, &c2) == NN_ERR_INVALID_ARGUMENT && c2 == NULL, "threads NN_ZERO was accepted");
    nn_context_destroy(c2);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape4(1, 2, 5, 5));
    w = nn_input(g, "w", NN_F32, nn_shape4(3, 2, 3, 3));
    memset(&cd, 0, sizeof cd);
    cd.pad_h = cd.pad_w = NN_ZERO; /* 0 is the default anyway: the same 0 */
    T_CHECK(nn_conv2d(g, x, w, none, &cd).id >= 0, "pad NN_ZERO: %s", nn_context_last_error(ctx));
    memset(&pd, 0, sizeof pd);
    pd.kernel_h = pd.kernel_w = 2;
    pd.stride_w = NN_ZERO;
    T_CHECK(nn_max_pool2d(g, x, &pd).id < 0 && nn_graph_status(g) == NN_ERR_INVALID_ARGUMENT, "pool stride NN_ZERO accepted");
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape4(1, 2, 5, 5));
    w = nn_input(g, "w", NN_F32, nn_shape4(3, 2, 3, 3));
    cd.stride_h = NN_ZERO;
    T_CHECK(nn_conv2d(g, x, w, none, &cd).id < 0 && nn_graph_status(g) == NN_ERR_INVALID_ARGUMENT, "conv stride NN_ZERO accepted");
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    w = nn_param(g, "w", nn_shape1(3), (nn_init){NN_INIT_CONSTANT, 1, 0});
    loss = nn_sum(g, w);
    memset(&comp, 0, sizeof comp);
    comp.loss = loss;
    comp.optimizer.kind = NN_OPT_SGD;
    comp.optimizer.accumulate_steps = NN_ZERO;
    T_CHECK(nn_graph_compile(g, &comp) == NN_ERR_INVALID_ARGUMENT, "accumulate_steps NN_ZERO accepted");
done:
    nn_graph_destroy(g);
    t_end();
}

/* nn_graph_desc.seed: 0 is 1, NN_ZERO is the seed 0 (another stream). */
static void check_seed_zero(const t_env *e) {
    float v[3][8];
    uint64_t seeds[3] = {0, 1, NN_ZERO};
    int k;
    if (!t_begin(e, "NN_ZERO: graph seed 0 is 1, NN_ZERO is 0")) return;
    for (k = 0; k < 3; k++) {
        nn_graph *g = NULL;
        nn_graph_desc gd;
        nn_init init = {NN_INIT_NORMAL, 0, 1};
        nn_tensor p;
        nn_compile_desc cd;
        memset(&gd, 0, sizeof gd);
        gd.seed = seeds[k];
        memset(&cd, 0, sizeof cd);
        if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) break;
        p = nn_param(g, "p", nn_shape1(8), init);
        nn_graph_output(g, p);
        if (T_OK(nn_graph_compile(g, &cd), e->ctx)) T_OK(nn_tensor_read(g, p, v[k], sizeof v[k]), e->ctx);
        nn_graph_destroy(g);
    }
    T_CHECK(memcmp(v[0], v[1], sizeof v[0]) == 0, "seed 0 and seed 1 differ");
    T_CHECK(memcmp(v[0], v[2], sizeof v[0]) != 0, "seed NN_ZERO gives seed 1's values");
    t_end();
}

/* ---- NN_NONE ---- */

/* The first tensor a graph makes is a tensor like any other: a zeroed desc's NN_NONE loss
   is "no loss", and a loss set to the first tensor trains. */
static void check_none_loss(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor w;
    nn_init two = {NN_INIT_CONSTANT, 2, 0};
    float v = 0;
    if (!t_begin(e, "NN_NONE: zeroed compile desc has no loss; the first tensor can be the loss")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    w = nn_param(g, "w", nn_shape1(1), two);
    memset(&cd, 0, sizeof cd);
    cd.loss = w; /* L = w: dL/dw = 1 */
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.5f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx) || !T_OK(nn_graph_step(g), ctx) || !T_OK(nn_tensor_read(g, w, &v, 4), ctx)) goto done;
    T_CHECK(v == 1.5f, "w after one step: %g, not 1.5 (the loss was ignored?)", v);
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    w = nn_param(g, "w", nn_shape1(1), two);
    nn_graph_output(g, nn_mul_scalar(g, w, 3.0f));
    memset(&cd, 0, sizeof cd);
    cd.optimizer.kind = NN_OPT_SGD; /* no loss: nothing to update, so refused (tests/test_usability.c has its row) */
    T_CHECK(nn_graph_compile(g, &cd) == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(ctx), "no loss"),
            "an optimizer without a loss compiled: %s", nn_context_last_error(ctx));
    memset(&cd, 0, sizeof cd); /* a zeroed desc: forward-only */
    if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_graph_step(g), ctx) && T_OK(nn_tensor_read(g, w, &v, 4), ctx))
        T_CHECK(v == 2.0f && nn_graph_grad(g, w).id == 0, "a forward-only graph changed w to %g or has a gradient", v);
done:
    nn_graph_destroy(g);
    t_end();
}

/* Optional operands take NN_NONE; a failed tensor there fails the op (it is not "none"),
   NN_NONE where an operand is required is an error, and lookups that find nothing give
   NN_NONE. */
static void check_none_operands(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor x, w, y, bad;
    nn_loss_desc ld;
    nn_norm_desc bd;
    float buf[4];
    if (!t_begin(e, "NN_NONE: optional operands, failed operands, lookups")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape4(1, 2, 5, 5));
    w = nn_input(g, "w", NN_F32, nn_shape4(3, 2, 3, 3));
    T_CHECK(x.id > 0 && w.id > 0, "tensors have ids %d, %d (0 is NN_NONE)", x.id, w.id);
    y = nn_conv2d(g, x, w, NN_NONE, NULL);
    T_CHECK(y.id > 0, "conv2d without a bias: %s", nn_context_last_error(ctx));
    T_CHECK(nn_graph_find(g, "nothing").id == 0 && nn_graph_find(g, "w").id == w.id, "nn_graph_find: %d, %d", nn_graph_find(g, "nothing").id,
            nn_graph_find(g, "w").id);
    T_CHECK(nn_layer_norm(g, nn_input(g, "z", NN_F32, nn_shape2(2, 3)), 1, NN_NONE, NN_NONE, NULL).id > 0, "layer_norm: %s",
            nn_context_last_error(ctx));
    T_CHECK(nn_graph_status(g) == NN_OK, "status %d", (int)nn_graph_status(g));
    bad = nn_reshape(g, x, nn_shape1(7)); /* fails: 50 elements */
    T_CHECK(nn_conv2d(g, x, w, bad, NULL).id < 0, "a failed bias was taken as no bias");
    T_CHECK(nn_graph_status(g) == NN_ERR_SHAPE, "the first error (the reshape's) was not kept: %d", (int)nn_graph_status(g));
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(2, 3));
    T_CHECK(nn_relu(g, NN_NONE).id < 0 && nn_graph_status(g) == NN_ERR_INVALID_ARGUMENT &&
                strstr(nn_context_last_error(ctx), "NN_NONE") != NULL,
            "relu(NN_NONE): %d, \"%s\"", (int)nn_graph_status(g), nn_context_last_error(ctx));
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(2, 3));
    memset(&ld, 0, sizeof ld);
    ld.weight = nn_reshape(g, x, nn_shape1(5)); /* fails */
    T_CHECK(nn_mse_loss(g, x, x, &ld).id < 0 && nn_graph_status(g) == NN_ERR_SHAPE, "a failed loss weight was ignored");
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(2, 3));
    memset(&bd, 0, sizeof bd);
    bd.running_mean = nn_buffer(g, "rm", nn_shape1(3), (nn_init){NN_INIT_ZEROS, 0, 0});
    T_CHECK(nn_batch_norm(g, x, NN_NONE, NN_NONE, &bd).id < 0 && nn_graph_status(g) == NN_ERR_INVALID_ARGUMENT,
            "running_mean without running_var was accepted");
    nn_graph_destroy(g);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape1(4));
    nn_graph_output(g, nn_relu(g, x));
    if (T_OK(nn_graph_compile(g, NULL), ctx))
        T_CHECK(nn_tensor_read(g, NN_NONE, buf, sizeof buf) == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(ctx), "NN_NONE"),
                "nn_tensor_read(NN_NONE): \"%s\"", nn_context_last_error(ctx));
done:
    nn_graph_destroy(g);
    t_end();
}

/* ---- layers: per-dimension conv descs, bias = False ---- */

/* nn_conv1d_layer(no_bias = k & 1) and nn_linear_layer against references computed from the
   parameters read back: y[n, o, l] = sum w[o, c, j] x[n, c, l*stride + j] (+ b[o]). */
static void check_layers_bias(const t_env *e) {
    enum { N = 2, C = 3, L = 9, O = 4, KL = 3, S = 2, OL = (L - KL) / S + 1, F = 5 };
    nn_context *ctx = e->ctx;
    float xv[N * C * L], y[N * O * OL], w[O * C * KL], b[O], xd[N * F], yd[N * O], wd[O * F], bd[O];
    int k, n, o, l, c, j;
    if (!t_begin(e, "layers: conv1d stride is honoured; no_bias makes no NAME.bias (dense, conv1d/2d/3d)")) return;
    for (k = 0; k < N * C * L; k++) xv[k] = (float)t_uniform(-1, 1);
    for (k = 0; k < N * F; k++) xd[k] = (float)t_uniform(-1, 1);
    for (k = 0; k < 2; k++) {
        nn_graph *g = NULL;
        nn_conv1d_desc d1;
        nn_linear_desc dd;
        nn_tensor x, xdt, yc, ydt;
        nn_compile_desc cd;
        double err = 0;
        if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) break;
        memset(&d1, 0, sizeof d1);
        memset(&dd, 0, sizeof dd);
        d1.stride = S;
        d1.no_bias = dd.no_bias = k;
        x = nn_input(g, "x", NN_F32, nn_shape3(N, C, L));
        xdt = nn_input(g, "xd", NN_F32, nn_shape2(N, F));
        yc = nn_conv1d_layer(g, x, O, KL, &d1, "c1");
        ydt = nn_linear_layer(g, xdt, O, &dd, "fc");
        nn_graph_output(g, yc);
        nn_graph_output(g, ydt);
        T_CHECK((nn_graph_find(g, "c1.bias").id == 0) == k && (nn_graph_find(g, "fc.bias").id == 0) == k,
                "no_bias %d: c1.bias %d, fc.bias %d", k, nn_graph_find(g, "c1.bias").id, nn_graph_find(g, "fc.bias").id);
        memset(&cd, 0, sizeof cd);
        if (!T_OK(nn_graph_compile(g, &cd), ctx) || !T_OK(nn_tensor_write(g, x, xv, sizeof xv), ctx) ||
            !T_OK(nn_tensor_write(g, xdt, xd, sizeof xd), ctx) || !T_OK(nn_graph_forward(g), ctx) ||
            !T_OK(nn_tensor_read(g, yc, y, sizeof y), ctx) || !T_OK(nn_tensor_read(g, nn_graph_find(g, "c1.weight"), w, sizeof w), ctx) ||
            !T_OK(nn_tensor_read(g, ydt, yd, sizeof yd), ctx) || !T_OK(nn_tensor_read(g, nn_graph_find(g, "fc.weight"), wd, sizeof wd), ctx)) {
            nn_graph_destroy(g);
            break;
        }
        memset(b, 0, sizeof b);
        memset(bd, 0, sizeof bd);
        if (!k) {
            T_OK(nn_tensor_read(g, nn_graph_find(g, "c1.bias"), b, sizeof b), ctx);
            T_OK(nn_tensor_read(g, nn_graph_find(g, "fc.bias"), bd, sizeof bd), ctx);
        }
        for (n = 0; n < N; n++)
            for (o = 0; o < O; o++) {
                double acc = bd[o];
                for (j = 0; j < F; j++) acc += (double)wd[o * F + j] * xd[n * F + j];
                err = fmax(err, fabs(acc - yd[n * O + o]));
                for (l = 0; l < OL; l++) {
                    acc = b[o];
                    for (c = 0; c < C; c++)
                        for (j = 0; j < KL; j++) acc += (double)w[(o * C + c) * KL + j] * xv[(n * C + c) * L + l * S + j];
                    err = fmax(err, fabs(acc - y[(n * O + o) * OL + l]));
                }
            }
        T_CHECK(err < 1e-5, "no_bias %d: outputs differ from the reference by %.3g", k, err);
        nn_graph_destroy(g);
    }
    {   /* the 2-D and 3-D layers, and a functional conv given a bias with no_bias set */
        nn_graph *g = NULL;
        nn_conv2d_desc d2;
        nn_conv3d_desc d3;
        nn_tensor x2, x3;
        memset(&d2, 0, sizeof d2);
        memset(&d3, 0, sizeof d3);
        d2.no_bias = d3.no_bias = 1;
        if (T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
            x2 = nn_input(g, "x2", NN_F32, nn_shape4(1, 2, 5, 5));
            x3 = nn_input(g, "x3", NN_F32, nn_shape5(1, 2, 3, 4, 4));
            T_CHECK(nn_conv2d_layer(g, x2, 3, 3, 3, &d2, "c2").id > 0 && nn_conv3d_layer(g, x3, 3, 1, 3, 3, &d3, "c3").id > 0,
                    "layers without bias: %s", nn_context_last_error(ctx));
            T_CHECK(nn_graph_find(g, "c2.weight").id > 0 && nn_graph_find(g, "c2.bias").id == 0 && nn_graph_find(g, "c3.bias").id == 0,
                    "a bias was made with no_bias");
            T_CHECK(nn_conv2d(g, x2, nn_graph_find(g, "c2.weight"), nn_input(g, "b", NN_F32, nn_shape1(3)), &d2).id < 0 &&
                        nn_graph_status(g) == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(ctx), "no_bias"),
                    "conv2d with a bias and no_bias: \"%s\"", nn_context_last_error(ctx));
            nn_graph_destroy(g);
        }
    }
    t_end();
}

/* ---- labels PyTorch raises on ---- */

/* Labels outside [0, C) (other than ignore_index) are counted where the loss runs, never
   read, and reported by the next nn_tensor_read or nn_graph_finish; the losses themselves
   leave those rows out. */
static void check_label_errors(const t_env *e) {
    enum { B = 6, C = 4 };
    static const int32_t bad[B] = {1, -100, 7, 0, -3, 2}, good[B] = {1, 3, 0, 0, 2, 2};
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor x, y, l[3];
    nn_loss_desc nd;
    nn_compile_desc cd;
    float xv[B * C], v[3];
    double lse[B], want[3] = {0, 0, 0};
    int b, c, k, n_ce = 0, n_nll = 0;
    const char *msg;
    if (!t_begin(e, "labels outside [0, C): counted, reported at the next read or finish")) return;
    for (b = 0; b < B * C; b++) xv[b] = (float)t_uniform(-2, 2);
    for (b = 0; b < B; b++) {
        double m = xv[b * C], s = 0;
        for (c = 1; c < C; c++) m = fmax(m, xv[b * C + c]);
        for (c = 0; c < C; c++) s += exp(xv[b * C + c] - m);
        lse[b] = log(s) + m;
        if (bad[b] >= 0 && bad[b] < C) { /* ce (ignore -100) and the shorthand count it; nll ignores 0 */
            want[0] += lse[b] - xv[b * C + bad[b]];
            n_ce++;
            if (bad[b] != 0) {
                want[1] += lse[b] - xv[b * C + bad[b]];
                n_nll++;
            }
        }
    }
    want[2] = want[0] / B;
    want[0] /= n_ce;
    want[1] /= n_nll;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(B, C));
    y = nn_input(g, "y", NN_I32, nn_shape1(B));
    memset(&nd, 0, sizeof nd);
    nd.ignore_index = NN_ZERO;
    l[0] = nn_cross_entropy_loss(g, x, y, NULL);
    l[1] = nn_nll_loss(g, nn_log_softmax(g, x, -1), y, &nd);
    l[2] = nn_softmax_cross_entropy(g, x, y);
    for (k = 0; k < 3; k++) nn_graph_output(g, l[k]);
    memset(&cd, 0, sizeof cd);
    if (!T_OK(nn_graph_compile(g, &cd), ctx) || !T_OK(nn_tensor_write(g, x, xv, sizeof xv), ctx) ||
        !T_OK(nn_tensor_write(g, y, bad, sizeof bad), ctx) || !T_OK(nn_graph_forward(g), ctx))
        goto done;
    T_CHECK(nn_tensor_read(g, l[0], v, 4) == NN_ERR_INVALID_ARGUMENT, "a read after bad labels succeeded");
    msg = nn_context_last_error(ctx);
    T_CHECK(strstr(msg, "nn_cross_entropy_loss") && strstr(msg, "2 of them") && strstr(msg, "nn_nll_loss") &&
                strstr(msg, "3 of them") && strstr(msg, "nn_softmax_cross_entropy"),
            "message: %s", msg);
    for (k = 0; k < 3; k++) /* reported once; the losses leave the bad rows out */
        if (T_OK(nn_tensor_read(g, l[k], &v[k], 4), ctx))
            T_CHECK(fabs(v[k] - want[k]) <= 1e-5 * (1 + fabs(want[k])), "loss %d: %.9g, want %.9g", k, v[k], want[k]);
    T_OK(nn_graph_finish(g), ctx);
    if (T_OK(nn_tensor_write(g, y, good, sizeof good), ctx) && T_OK(nn_graph_forward(g), ctx)) {
        T_OK(nn_graph_finish(g), ctx);
        T_OK(nn_tensor_read(g, l[0], v, 4), ctx);
    }
    if (T_OK(nn_tensor_write(g, y, bad, sizeof bad), ctx) && T_OK(nn_graph_forward(g), ctx) && T_OK(nn_graph_forward(g), ctx))
        T_CHECK(nn_graph_finish(g) == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(ctx), "nn_graph_finish") &&
                    strstr(nn_context_last_error(ctx), "nn_cross_entropy_loss: labels outside [0, C) other than ignore_index: 4 of them"),
                "finish after two runs with bad labels: \"%s\"", nn_context_last_error(ctx));
done:
    nn_graph_destroy(g);
    t_end();
}

/* ---- contexts: log levels as they are named ---- */

typedef struct log_seen { int n, max_level; } log_seen;
static void api_log(void *user, nn_log_level level, const char *message) {
    log_seen *s = (log_seen *)user;
    (void)message;
    s->n++;
    if ((int)level > s->max_level) s->max_level = (int)level;
}

static void check_log_level(const t_env *e) {
    static const nn_log_level levels[3] = {NN_LOG_INFO, NN_LOG_WARN, (nn_log_level)9};
    int k;
    if (!t_begin(e, "nn_context_desc.log_level is the level itself")) return;
    for (k = 0; k < 3; k++) {
        nn_context_desc d;
        nn_context *c = NULL;
        log_seen seen = {0, 0};
        nn_result r;
        memset(&d, 0, sizeof d);
        d.device = "cpu";
        d.log = api_log;
        d.log_user = &seen;
        d.log_level = levels[k];
        r = nn_context_create(&d, &c);
        if (k == 2) {
            T_CHECK(r == NN_ERR_INVALID_ARGUMENT && !c, "log_level 9 was accepted");
        } else if (T_CHECK(r == NN_OK, "nn_context_create: %s", nn_result_string(r))) {
            if (k == 0) /* the one info line: the backend chosen */
                T_CHECK(seen.n == 1 && seen.max_level == NN_LOG_INFO, "at NN_LOG_INFO: %d messages, level %d", seen.n, seen.max_level);
            else
                T_CHECK(seen.n == 0, "at NN_LOG_WARN: %d messages (level %d)", seen.n, seen.max_level);
        }
        nn_context_destroy(c);
    }
    t_end();
}

/* ---- PyTorch's argument orders ---- */

static nn_tensor b_pad_left(nn_graph *g, nn_tensor x, const void *p) {
    (void)p;
    return nn_pad2d(g, x, 2, 0, 0, 1, NN_PAD_ZEROS); /* F.pad(x, (2, 0, 0, 1)) */
}

static void check_pad_order(const t_env *e) {
    float x[2] = {5, 6}, y[8];
    static const float want[8] = {0, 0, 5, 6, 0, 0, 0, 0}; /* [1, 1, 2, 4]: 2 zeros left, a zero row below */
    int i;
    if (!t_begin(e, "nn_pad2d takes F.pad's order (left, right, top, bottom)")) return;
    if (run_forward(e->ctx, nn_shape4(1, 1, 1, 2), x, b_pad_left, NULL, y, 8))
        for (i = 0; i < 8; i++) T_CHECK(y[i] == want[i], "y[%d] = %g, want %g", i, y[i], want[i]);
    t_end();
}

/* ---- item 7 of issue 15: dim arguments, queries through their last argument ---- */

static nn_tensor b_softmax_dim(nn_graph *g, nn_tensor x, const void *p) { return nn_softmax(g, x, *(const int *)p); }
static nn_tensor b_log_softmax_dim(nn_graph *g, nn_tensor x, const void *p) { return nn_log_softmax(g, x, *(const int *)p); }
static nn_tensor b_permute_neg(nn_graph *g, nn_tensor x, const void *p) {
    static const int dims[3] = {-1, 0, 1}; /* [2, 3, 4] -> [4, 2, 3] */
    (void)p;
    return nn_permute(g, x, dims, 3);
}

static void check_dims_and_queries(const t_env *e) {
    float x[24], y[24];
    int i, j, k, dim;
    if (!t_begin(e, "API: softmax/log_softmax along any dim, permute with negative dims, queries write through their last argument"))
        return;
    for (i = 0; i < 24; i++) x[i] = (float)((i * 7) % 11) * 0.25f - 1.0f;
    for (dim = -3; dim < 3; dim++) { /* x [2, 3, 4]: softmax along dim against double */
        int d = dim < 0 ? dim + 3 : dim, lg;
        for (lg = 0; lg < 2; lg++) {
            if (!run_forward(e->ctx, nn_shape3(2, 3, 4), x, lg ? b_log_softmax_dim : b_softmax_dim, &dim, y, 24)) continue;
            for (i = 0; i < 24; i++) {
                int c[3] = {i / 12, i / 4 % 3, i % 4}, n = d == 0 ? 2 : d == 1 ? 3 : 4;
                double m = -1e30, s = 0, v;
                for (j = 0; j < n; j++) {
                    int q[3] = {c[0], c[1], c[2]};
                    q[d] = j;
                    v = x[q[0] * 12 + q[1] * 4 + q[2]];
                    if (v > m) m = v;
                }
                for (j = 0; j < n; j++) {
                    int q[3] = {c[0], c[1], c[2]};
                    q[d] = j;
                    s += exp(x[q[0] * 12 + q[1] * 4 + q[2]] - m);
                }
                v = lg ? x[i] - m - log(s) : exp(x[i] - m) / s;
                T_CHECK(fabs(y[i] - v) <= 1e-6 * (1 + fabs(v)), "%s dim %d: y[%d] = %.9g, want %.9g", lg ? "log_softmax" : "softmax",
                        dim, i, y[i], v);
            }
        }
    }
    if (run_forward(e->ctx, nn_shape3(2, 3, 4), x, b_permute_neg, NULL, y, 24))
        for (k = 0; k < 4; k++)
            for (i = 0; i < 2; i++)
                for (j = 0; j < 3; j++)
                    T_CHECK(y[k * 6 + i * 3 + j] == x[i * 12 + j * 4 + k], "permute (-1, 0, 1): y[%d, %d, %d]", k, i, j);
    {
        nn_graph *g = NULL;
        nn_device_info dev;
        nn_shape s;
        int64_t n = 5;
        nn_tensor t, parts[2];
        static const int64_t sizes[2] = {1, 3};
        if (T_OK(nn_context_device(e->ctx, &dev), e->ctx))
            T_CHECK(dev.backend == (e->opencl ? NN_BACKEND_OPENCL : NN_BACKEND_CPU) && dev.name[0], "nn_context_device: backend %d, name '%s'",
                    (int)dev.backend, dev.name);
        if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
            t = nn_input(g, "t", NN_F32, nn_shape2(3, 4));
            T_CHECK(nn_tensor_shape(g, t, &s) == NN_OK && s.ndim == 2 && s.dim[1] == 4, "nn_tensor_shape");
            T_CHECK(nn_tensor_numel(g, t, &n) == NN_OK && n == 12, "nn_tensor_numel gave %lld", (long long)n);
            T_CHECK(nn_tensor_numel(g, NN_NONE, &n) == NN_ERR_INVALID_ARGUMENT && n == 0, "nn_tensor_numel of NN_NONE");
            T_CHECK(nn_split(g, t, sizes, 2, -1, parts).id == parts[0].id && parts[1].id > 0 &&
                        nn_tensor_shape(g, parts[1], &s) == NN_OK && s.dim[1] == 3,
                    "nn_split(g, x, sizes, n, dim, out)");
            T_CHECK(nn_graph_output(g, NN_NONE) != NN_OK, "nn_graph_output of NN_NONE");
            nn_graph_destroy(g);
        }
    }
    t_end();
}

void suite_api(const t_env *e) {
    T_RUN(e, check_dims_and_queries, check_norm_eps, check_loss_zero, check_schedule_zero, check_zero_refused,
          check_seed_zero, check_none_loss, check_none_operands, check_layers_bias, check_pad_order,
          check_label_errors, check_log_level);
}
