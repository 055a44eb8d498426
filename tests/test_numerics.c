/* Numerics the optimizers owe PyTorch: a NaN gradient makes its parameter NaN (and only
   that one), on every backend; and on the CPU backend the same bits for any thread count. */
#include "test.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAN_N 37
#define NAN_AT 5

/* loss = sum(w * x) with x[NAN_AT] = NaN: d(loss)/dw = x, so only w[NAN_AT] sees NaN. */
static void check_nan_update(const t_env *e, const char *name, nn_optimizer_kind kind, float clip_norm) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor w, x;
    nn_compile_desc cd;
    nn_init init;
    float xs[NAN_N], w0[NAN_N], w1[NAN_N];
    char label[120];
    int i;
    snprintf(label, sizeof label, "optimizer %s: a NaN gradient stays NaN", name);
    if (!t_begin(e, label)) return;
    memset(&init, 0, sizeof init);
    init.kind = NN_INIT_UNIFORM;
    init.a = -1;
    init.b = 1;
    for (i = 0; i < NAN_N; i++) xs[i] = (float)(0.5 + 0.01 * i);
    xs[NAN_AT] = (float)NAN;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    w = nn_param(g, "w", nn_shape1(NAN_N), init);
    x = nn_input(g, "x", NN_F32, nn_shape1(NAN_N));
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, w, x));
    cd.optimizer.kind = kind;
    cd.optimizer.lr = 0.1f;
    cd.optimizer.momentum = kind == NN_OPT_SGD ? 0.9f : 0.0f;
    cd.optimizer.clip_value = 10.0f; /* the clamp must keep NaN too */
    cd.optimizer.clip_norm = clip_norm;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_read(g, w, w0, sizeof w0), ctx);
    T_OK(nn_tensor_write(g, x, xs, sizeof xs), ctx);
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    T_OK(nn_tensor_read(g, w, w1, sizeof w1), ctx);
    if (clip_norm > 0) { /* the global norm is NaN, so every parameter is (as torch's clip_grad_norm_) */
        for (i = 0; i < NAN_N; i++) T_CHECK(isnan(w1[i]), "w[%d] = %g after a NaN global norm, not NaN", i, w1[i]);
    } else {
        for (i = 0; i < NAN_N; i++) {
            if (i == NAN_AT) T_CHECK(isnan(w1[i]), "w[%d] = %g after a NaN gradient, not NaN", i, w1[i]);
            else T_CHECK(isfinite(w1[i]) && w1[i] != w0[i], "w[%d]: %g -> %g, not a finite update", i, w0[i], w1[i]);
        }
    }
done:
    nn_graph_destroy(g);
    t_end();
}

/* Adam over a tensor large enough to be split between threads: the parameters after three
   steps must have the same bits with 1..8 threads. */
static void check_adam_threads(const t_env *e) {
    enum { N = 100003 };
    static float ref[N], got[N], xs[N];
    int threads, i, t;
    if (!t_begin_cpu(e, "optimizer adam: the same bits for 1..8 threads", "thread counts are a CPU-backend setting")) return;
    for (i = 0; i < N; i++) xs[i] = (float)(0.25 + (i % 97) * 0.013);
    for (threads = 1; threads <= 8; threads++) {
        nn_context_desc cdsc;
        nn_context *ctx = NULL;
        nn_graph *g = NULL;
        nn_compile_desc cd;
        nn_init init;
        nn_tensor w, x;
        memset(&cdsc, 0, sizeof cdsc);
        cdsc.device = "cpu";
        cdsc.threads = threads;
        cdsc.log_level = NN_LOG_WARN;
        if (!T_CHECK(nn_context_create(&cdsc, &ctx) == NN_OK, "cannot create a CPU context with %d threads", threads)) break;
        memset(&init, 0, sizeof init);
        init.kind = NN_INIT_UNIFORM;
        init.a = -1;
        init.b = 1;
        if (T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
            w = nn_param(g, "w", nn_shape1(N), init);
            x = nn_input(g, "x", NN_F32, nn_shape1(N));
            memset(&cd, 0, sizeof cd);
            cd.loss = nn_sum(g, nn_mul(g, nn_mul(g, w, w), x));
            cd.optimizer.kind = NN_OPT_ADAMW;
            cd.optimizer.lr = 0.01f;
            if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_tensor_write(g, x, xs, sizeof xs), ctx)) {
                for (t = 0; t < 3; t++) T_OK(nn_graph_step(g), ctx);
                T_OK(nn_tensor_read(g, w, threads == 1 ? ref : got, sizeof ref), ctx);
                if (threads > 1)
                    for (i = 0; i < N; i++)
                        if (!T_CHECK(memcmp(&ref[i], &got[i], 4) == 0, "%d threads: w[%d] = %.9g, 1 thread: %.9g", threads,
                                     i, got[i], ref[i]))
                            break;
            }
        }
        nn_graph_destroy(g);
        nn_context_destroy(ctx);
    }
    t_end();
}

/* A small CNN (conv, batch norm, max pool, dense, cross-entropy, AdamW) large enough that
   the CPU backend splits its loops between threads: 3 steps must give the same bits with
   1..8 threads. */
static void check_cnn_threads(const t_env *e) {
    enum { B = 8, C = 16, H = 16, W = 16, K = 10 };
    static float xs[B * 3 * H * W], ref[K * C * (H / 2) * (W / 2)], got[K * C * (H / 2) * (W / 2)];
    int32_t ys[B];
    int threads, i, t;
    long nw = K * C * (H / 2) * (W / 2);
    if (!t_begin_cpu(e, "cnn: the same bits for 1..8 threads", "thread counts are a CPU-backend setting")) return;
    for (i = 0; i < B * 3 * H * W; i++) xs[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    for (i = 0; i < B; i++) ys[i] = (i * 3) % K;
    for (threads = 1; threads <= 8; threads++) {
        nn_context_desc cdsc;
        nn_context *ctx = NULL;
        nn_graph *g = NULL;
        nn_compile_desc cd;
        nn_conv2d_desc conv;
        nn_pool2d_desc pool;
        nn_tensor x, y, h;
        memset(&cdsc, 0, sizeof cdsc);
        cdsc.device = "cpu";
        cdsc.threads = threads;
        cdsc.log_level = NN_LOG_WARN;
        if (!T_CHECK(nn_context_create(&cdsc, &ctx) == NN_OK, "cannot create a CPU context with %d threads", threads)) break;
        if (T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
            memset(&conv, 0, sizeof conv);
            conv.pad_h = conv.pad_w = 1;
            memset(&pool, 0, sizeof pool);
            pool.kernel_h = pool.kernel_w = 2;
            x = nn_input(g, "x", NN_F32, nn_shape4(B, 3, H, W));
            y = nn_input(g, "y", NN_I32, nn_shape1(B));
            h = nn_relu(g, nn_batch_norm2d_layer(g, nn_conv2d_layer(g, x, C, 3, 3, &conv, "conv"), NULL, "bn"));
            h = nn_linear_layer(g, nn_flatten(g, nn_max_pool2d(g, h, &pool)), K, NULL, "fc");
            memset(&cd, 0, sizeof cd);
            cd.loss = nn_softmax_cross_entropy(g, h, y);
            cd.optimizer.kind = NN_OPT_ADAMW;
            cd.optimizer.lr = 0.01f;
            if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_tensor_write(g, x, xs, sizeof xs), ctx) &&
                T_OK(nn_tensor_write(g, y, ys, sizeof ys), ctx)) {
                for (t = 0; t < 3; t++) T_OK(nn_graph_step(g), ctx);
                T_OK(nn_tensor_read(g, nn_graph_find(g, "fc.weight"), threads == 1 ? ref : got, (size_t)nw * 4), ctx);
                if (threads > 1)
                    for (i = 0; i < nw; i++)
                        if (!T_CHECK(memcmp(&ref[i], &got[i], 4) == 0, "%d threads: fc.weight[%d] = %.9g, 1 thread: %.9g",
                                     threads, i, got[i], ref[i]))
                            break;
            }
        }
        nn_graph_destroy(g);
        nn_context_destroy(ctx);
    }
    t_end();
}

/* The CPU backend's exp and expm1 (a vector exp of its own, not libm's) against double
   precision exp and expm1 over the float range: every 251st float bit pattern from 0 to 89
   and from -0 to -104 (beyond them e^x is inf or 0 in float), then the edges, in one
   tensor of odd length (the last partial vector goes through the masked loads and stores).
   Where the result is a normal float the relative error must be at most 2e-7 (under 2
   ulp; the largest seen over every 7th float is 8.4e-8 for exp and 1.2e-7 for expm1,
   about 1 ulp); in the denormals at most one denormal step; above
   log(FLT_MAX) inf, below the smallest denormal's half 0; NaN stays NaN, exp(+-inf) is
   inf and 0, expm1(-inf) -1, and expm1 keeps the sign of a zero. */
#define EXP_STRIDE 251u
static void check_exp_accuracy(const t_env *e, int m1) {
    static const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.7228317f, 88.72283f, 88.72284f, 88.7229f, 89.0f,
                                  1e30f, -1e30f, -87.3365402f, -87.3365479f, -103.972076f, -103.972084f, -104.0f, 1e-30f,
                                  -1e-30f, 1e-45f, -1e-45f, 0.3465736f, -0.3465736f, 0.35f, -0.35f, 1.0f, -1.0f, 3.4e38f};
    const uint32_t top[2] = {0x42B20000u, 0x42D00000u}; /* 89, 104 */
    float *x = NULL, *y = NULL;
    long n = 0, cap, i;
    double worst = 0.0;
    float worst_x = 0.0f;
    nn_graph *g = NULL;
    nn_tensor in, out;
    nn_compile_desc cd;
    int sgn;
    if (!t_begin_cpu(e, m1 ? "numerics: the CPU backend's expm1 against double expm1" : "numerics: the CPU backend's exp against double exp", "the CPU backend's exp (a device's exp is its driver's)")) return;
    cap = (long)((top[0] + top[1]) / EXP_STRIDE) + 2 + (long)(sizeof edges / sizeof edges[0]);
    x = (float *)malloc((size_t)cap * 4);
    y = (float *)malloc((size_t)cap * 4);
    if (!T_CHECK(x && y, "out of memory")) goto done;
    for (sgn = 0; sgn < 2; sgn++) {
        uint32_t b;
        for (b = 0; b <= top[sgn]; b += EXP_STRIDE) {
            uint32_t v = b | (sgn ? 0x80000000u : 0u);
            memcpy(&x[n++], &v, 4);
        }
    }
    for (i = 0; i < (long)(sizeof edges / sizeof edges[0]); i++) x[n++] = edges[i];
    if (n % 2 == 0) x[n++] = 0.5f; /* odd: a partial vector at the end */
    if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) goto done;
    in = nn_input(g, "x", NN_F32, nn_shape1(n));
    out = m1 ? nn_expm1(g, in) : nn_exp(g, in);
    nn_graph_output(g, out);
    memset(&cd, 0, sizeof cd);
    if (!T_OK(nn_graph_compile(g, &cd), e->ctx) || !T_OK(nn_tensor_write(g, in, x, (size_t)n * 4), e->ctx) ||
        !T_OK(nn_graph_forward(g), e->ctx) || !T_OK(nn_tensor_read(g, out, y, (size_t)n * 4), e->ctx))
        goto done;
    for (i = 0; i < n; i++) {
        double v = x[i], r = m1 ? expm1(v) : exp(v), a = fabs(r);
        float got = y[i];
        if (isnan(v)) {
            if (!T_CHECK(isnan(got), "x = NaN gave %g", got)) break;
        } else if (a > FLT_MAX) { /* beyond FLT_MAX: rounds to inf (FLT_MAX + half an ulp is where it starts) */
            if (!T_CHECK(a < 3.4028235677973366e38 ? (got == FLT_MAX || isinf(got)) : isinf(got) && got > 0,
                         "x = %.9g (%a): %.9g, not inf", v, x[i], got))
                break;
        } else if (a >= FLT_MIN) {
            double rel = fabs(got - r) / a;
            if (rel > worst) worst = rel, worst_x = x[i];
            if (!T_CHECK(rel <= 2e-7, "x = %.9g (%a): %.9g, double gives %.9g: relative error %.3g", v, x[i], got, r, rel)) break;
        } else if (!T_CHECK(fabs(got - r) <= 1.401298464324817e-45, "x = %.9g (%a): %.9g, double gives %.9g (denormal)", v, x[i],
                            got, r)) {
            break;
        }
        if (v == 0.0 && !T_CHECK(got == (m1 ? 0.0f : 1.0f) && (!m1 || !signbit(got) == !signbit(v)),
                                 "x = %g: %g (sign of zero)", v, got))
            break;
        if (isinf(v) && !T_CHECK(got == (v > 0 ? INFINITY : m1 ? -1.0f : 0.0f), "x = %g: %g", v, got)) break;
    }
    printf("  %ld inputs: max relative error %.3g (%.2f ulp of 2^-23) at x = %.9g\n", n, worst, worst / 1.1920928955078125e-7,
           (double)worst_x);
done:
    nn_graph_destroy(g);
    free(x);
    free(y);
    t_end();
}

/* The CPU backend's erf and exact GELU (src/cpu/simd.c's vector erf on AVX-512 and AVX2,
   libm's erff elsewhere), forward and gradient, against double precision: every 1009th float
   bit pattern of [-6, 6] (beyond, erf is +-1 in float), then the edges, in one tensor of
   odd length. erf: at most 1.5 ulp of the float result (the largest seen is about 1 ulp);
   GELU within 4 float ulps of |y| + |x|/2 and its derivative's first term of 1/2 + |erf|/2
   (1 + erf cancels for x < 0: libm's erff has that error too); the derivatives within 3 + x^2 ulps of the terms they add (x^2 is rounded
   before exp(-x^2) or exp(-x^2/2): its relative error times x^2, as with libm); NaN stays
   NaN, erf(+-inf) = +-1, GELU(+inf) = inf and its gradient's NaN at +-inf is PyTorch's
   (inf * 0). */
#define ERF_STRIDE 1009u
static double ulp_of(double r) {
    float f = (float)fabs(r);
    if (f < FLT_MIN) return 1.401298464324817e-45;
    return (double)nextafterf(f, INFINITY) - (double)f;
}
static void check_erf_accuracy(const t_env *e, int gelu) {
    static const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0.927734375f, -0.927734375f, 0.92773443f, -0.92773443f,
                                  10.0f, -10.0f, 1e30f, -1e30f, 1e-30f, -1e-30f, 1e-45f, 3.9f, -3.9f, 7.0f, -7.0f};
    const uint32_t top = 0x40C00000u; /* 6 */
    float *x = NULL, *y = NULL, *dx = NULL;
    long n = 0, cap, i;
    double worst = 0.0, worst_d = 0.0;
    float worst_x = 0.0f, worst_dx = 0.0f;
    nn_graph *g = NULL;
    nn_tensor in, out;
    nn_compile_desc cd;
    int sgn;
    if (!t_begin_cpu(e, gelu ? "numerics: the CPU backend's exact GELU and its gradient against double" : "numerics: the CPU backend's erf and its gradient against double erf", "the CPU backend's erf (a device's erf is its driver's)")) return;
    cap = (long)(2 * (top / ERF_STRIDE)) + 4 + (long)(sizeof edges / sizeof edges[0]);
    x = (float *)malloc((size_t)cap * 4);
    y = (float *)malloc((size_t)cap * 4);
    dx = (float *)malloc((size_t)cap * 4);
    if (!T_CHECK(x && y && dx, "out of memory")) goto done;
    for (sgn = 0; sgn < 2; sgn++) {
        uint32_t b;
        for (b = 0; b <= top; b += ERF_STRIDE) {
            uint32_t v = b | (sgn ? 0x80000000u : 0u);
            memcpy(&x[n++], &v, 4);
        }
    }
    for (i = 0; i < (long)(sizeof edges / sizeof edges[0]); i++) x[n++] = edges[i];
    if (n % 2 == 0) x[n++] = 0.5f;
    if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) goto done;
    in = nn_input(g, "x", NN_F32, nn_shape1(n));
    nn_graph_requires_grad(g, in);
    out = gelu ? nn_gelu(g, in) : nn_erf(g, in);
    nn_graph_output(g, out);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, out);
    if (!T_OK(nn_graph_compile(g, &cd), e->ctx) || !T_OK(nn_tensor_write(g, in, x, (size_t)n * 4), e->ctx) ||
        !T_OK(nn_graph_step(g), e->ctx) || !T_OK(nn_tensor_read(g, out, y, (size_t)n * 4), e->ctx) ||
        !T_OK(nn_tensor_read(g, nn_graph_grad(g, in), dx, (size_t)n * 4), e->ctx))
        goto done;
    for (i = 0; i < n; i++) {
        double v = x[i], ef = erf(v * (gelu ? 0.70710678118654752 : 1.0)), dens = exp(-0.5 * v * v) * 0.39894228040143268;
        double r = gelu ? 0.5 * v * (1.0 + ef) : ef, d = gelu ? 0.5 * (1.0 + ef) + v * dens : 1.1283791670955126 * exp(-v * v);
        double scale = gelu ? fabs(r) + 0.5 * fabs(v) : 0.0, dscale = gelu ? 0.5 * (1.0 + fabs(ef)) + fabs(v * dens) : fabs(d);
        double err, derr;
        if (isnan(v) || isinf(v)) {
            float want = isnan(v) ? NAN : gelu ? (v > 0 ? INFINITY : NAN) : (v > 0 ? 1.0f : -1.0f);
            float dwant = isnan(v) ? NAN : gelu ? NAN : 0.0f;
            if (!T_CHECK(isnan(want) ? isnan(y[i]) : y[i] == want, "x = %g: %g, not %g", v, y[i], want) ||
                !T_CHECK(isnan(dwant) ? isnan(dx[i]) : dx[i] == dwant, "x = %g: gradient %g, not %g", v, dx[i], dwant))
                break;
            continue;
        }
        err = fabs(y[i] - r) / (gelu ? ulp_of(scale) : ulp_of(r));
        derr = fabs(dx[i] - d) / ulp_of(dscale);
        if (err > worst) worst = err, worst_x = x[i];
        if (derr / (3.0 + v * v) > worst_d / (3.0 + (double)worst_dx * worst_dx)) worst_d = derr, worst_dx = x[i];
        if (!T_CHECK(err <= (gelu ? 4.0 : 1.5), "x = %.9g (%a): %.9g, double gives %.9g: %.3g ulp", v, x[i], y[i], r, err) ||
            !T_CHECK(derr <= 3.0 + v * v, "x = %.9g (%a): gradient %.9g, double gives %.9g: %.3g ulp", v, x[i], dx[i], d, derr))
            break;
        if (v == 0.0 && !gelu && !T_CHECK(y[i] == 0.0f && !signbit(y[i]) == !signbit(v), "x = %g: %g (sign of zero)", v, y[i])) break;
    }
    printf("  %ld inputs: max error %.3g ulp at x = %.9g, gradient %.3g ulp at x = %.9g (of 3 + x^2 allowed)\n", n, worst, (double)worst_x, worst_d,
           (double)worst_dx);
done:
    nn_graph_destroy(g);
    free(x);
    free(y);
    free(dx);
    t_end();
}

/* The loops on the vector exp, and the losses and sum split between threads: sigmoid, silu,
   elu, log_softmax, softmax, the fused cross-entropy, cross_entropy_loss with smoothing,
   BCE with logits and MSE over [B, C] = [67, 1031] (odd, so threads' ranges and the rows'
   ends fall inside vectors); the gradient of x after a step must have the same bits with
   1..8 threads. */
static void check_exp_rows_threads(const t_env *e) {
    enum { B = 67, C = 1031, N = B * C };
    static float xs[N], ts[N], ref[N], got[N];
    int32_t ys[B];
    int threads, i;
    if (!t_begin_cpu(e, "numerics: exp-based activations, softmax rows and losses: the same bits for 1..8 threads", "thread counts are a CPU-backend setting")) return;
    for (i = 0; i < N; i++) xs[i] = (float)(((long)i * 7919) % 2001) / 200.0f - 5.0f, ts[i] = (float)((i * 13) % 7) / 6.0f;
    for (i = 0; i < B; i++) ys[i] = (i * 37) % C;
    for (threads = 1; threads <= 8; threads++) {
        nn_context_desc cdsc;
        nn_context *ctx = NULL;
        nn_graph *g = NULL;
        nn_compile_desc cd;
        nn_loss_desc ld;
        nn_tensor x, t, y, h, l;
        memset(&cdsc, 0, sizeof cdsc);
        cdsc.device = "cpu";
        cdsc.threads = threads;
        cdsc.log_level = NN_LOG_WARN;
        if (!T_CHECK(nn_context_create(&cdsc, &ctx) == NN_OK, "cannot create a CPU context with %d threads", threads)) break;
        if (T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
            x = nn_input(g, "x", NN_F32, nn_shape2(B, C));
            t = nn_input(g, "t", NN_F32, nn_shape2(B, C));
            y = nn_input(g, "y", NN_I32, nn_shape1(B));
            nn_graph_requires_grad(g, x);
            h = nn_add(g, nn_mul(g, nn_sigmoid(g, x), nn_silu(g, x)), nn_elu(g, x, 1.0f));
            memset(&ld, 0, sizeof ld);
            ld.label_smoothing = 0.1f;
            l = nn_add(g, nn_mse_loss(g, h, t, NULL), nn_softmax_cross_entropy(g, h, y));
            l = nn_add(g, l, nn_cross_entropy_loss(g, x, y, &ld));
            l = nn_add(g, l, nn_bce_with_logits_loss(g, h, t, NULL));
            l = nn_add(g, l, nn_mean(g, nn_mul(g, nn_log_softmax(g, h, -1), t)));
            l = nn_add(g, l, nn_mean(g, nn_mul(g, nn_softmax(g, x, -1), t)));
            memset(&cd, 0, sizeof cd);
            cd.loss = l;
            if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_tensor_write(g, x, xs, sizeof xs), ctx) &&
                T_OK(nn_tensor_write(g, t, ts, sizeof ts), ctx) && T_OK(nn_tensor_write(g, y, ys, sizeof ys), ctx) &&
                T_OK(nn_graph_step(g), ctx) &&
                T_OK(nn_tensor_read(g, nn_graph_grad(g, x), threads == 1 ? ref : got, sizeof ref), ctx) && threads > 1)
                for (i = 0; i < N; i++)
                    if (!T_CHECK(memcmp(&ref[i], &got[i], 4) == 0, "%d threads: dx[%d] = %.9g, 1 thread: %.9g", threads, i,
                                 got[i], ref[i]))
                        break;
            if (threads == 1)
                for (i = 0; i < N; i++)
                    if (!T_CHECK(isfinite(ref[i]) && ref[i] != 0.0f, "1 thread: dx[%d] = %g", i, ref[i])) break;
        }
        nn_graph_destroy(g);
        nn_context_destroy(ctx);
    }
    t_end();
}

void suite_numerics(const t_env *e) {
    check_exp_accuracy(e, 0);
    check_exp_accuracy(e, 1);
    check_erf_accuracy(e, 0);
    check_erf_accuracy(e, 1);
    check_exp_rows_threads(e);
    check_nan_update(e, "sgd momentum", NN_OPT_SGD, 0);
    check_nan_update(e, "adam", NN_OPT_ADAM, 0);
    check_nan_update(e, "adamw clip_norm", NN_OPT_ADAMW, 1.0f);
    check_nan_update(e, "rmsprop", NN_OPT_RMSPROP, 0);
    T_RUN(e, check_adam_threads, check_cnn_threads);
}
