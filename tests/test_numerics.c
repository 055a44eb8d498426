/* Numerics the optimizers owe PyTorch: a NaN gradient makes its parameter NaN (and only
   that one), on every backend; and on the CPU backend the same bits for any thread count. */
#include "test.h"
#include <math.h>
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
    cd.has_loss = 1;
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
    if (!t_begin(e, "optimizer adam: the same bits for 1..8 threads")) return;
    if (e->opencl) {
        t_skip("thread counts are a CPU-backend setting");
        t_end();
        return;
    }
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
        cdsc.log_level = NN_LOG_WARN + 1;
        if (!T_CHECK(nn_context_create(&ctx, &cdsc) == NN_OK, "cannot create a CPU context with %d threads", threads)) break;
        memset(&init, 0, sizeof init);
        init.kind = NN_INIT_UNIFORM;
        init.a = -1;
        init.b = 1;
        if (T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
            w = nn_param(g, "w", nn_shape1(N), init);
            x = nn_input(g, "x", NN_F32, nn_shape1(N));
            memset(&cd, 0, sizeof cd);
            cd.loss = nn_sum(g, nn_mul(g, nn_mul(g, w, w), x));
            cd.has_loss = 1;
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
    if (!t_begin(e, "cnn: the same bits for 1..8 threads")) return;
    if (e->opencl) {
        t_skip("thread counts are a CPU-backend setting");
        t_end();
        return;
    }
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
        cdsc.log_level = NN_LOG_WARN + 1;
        if (!T_CHECK(nn_context_create(&ctx, &cdsc) == NN_OK, "cannot create a CPU context with %d threads", threads)) break;
        if (T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
            memset(&conv, 0, sizeof conv);
            conv.pad_h = conv.pad_w = 1;
            memset(&pool, 0, sizeof pool);
            pool.kernel_h = pool.kernel_w = 2;
            x = nn_input(g, "x", NN_F32, nn_shape4(B, 3, H, W));
            y = nn_input(g, "y", NN_I32, nn_shape1(B));
            h = nn_relu(g, nn_batch_norm2d_layer(g, nn_conv2d_layer(g, x, C, 3, 3, &conv, "conv"), "bn"));
            h = nn_dense(g, nn_flatten(g, nn_max_pool2d(g, h, &pool)), K, "fc");
            memset(&cd, 0, sizeof cd);
            cd.loss = nn_softmax_cross_entropy(g, h, y);
            cd.has_loss = 1;
            cd.optimizer.kind = NN_OPT_ADAMW;
            cd.optimizer.lr = 0.01f;
            if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_tensor_write(g, x, xs, sizeof xs), ctx) &&
                T_OK(nn_tensor_write(g, y, ys, sizeof ys), ctx)) {
                for (t = 0; t < 3; t++) T_OK(nn_graph_step(g), ctx);
                T_OK(nn_tensor_read(g, nn_find(g, "fc.weight"), threads == 1 ? ref : got, (size_t)nw * 4), ctx);
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

void suite_numerics(const t_env *e) {
    check_nan_update(e, "sgd momentum", NN_OPT_SGD, 0);
    check_nan_update(e, "adam", NN_OPT_ADAM, 0);
    check_nan_update(e, "adamw clip_norm", NN_OPT_ADAMW, 1.0f);
    check_nan_update(e, "rmsprop", NN_OPT_RMSPROP, 0);
    check_adam_threads(e);
    check_cnn_threads(e);
}
