/* Whole graphs: training converges, a step moves nothing between host and device, an
   evaluation graph shares the parameters, accumulators, argmax and accuracy. */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* XOR with a 2-16-1 tanh network, BCE with logits and Adam: it must be solved. */
static void test_xor(const t_env *e) {
    static const float X[8] = {0, 0, 0, 1, 1, 0, 1, 1}, Y[4] = {0, 1, 1, 0};
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor x, y, logits, loss;
    nn_compile_desc cd;
    nn_graph_desc gd;
    float out[4], l = 1;
    int i;
    if (!t_begin(e, "convergence: xor 2-16-1 adam")) return;
    memset(&gd, 0, sizeof gd);
    gd.seed = 7;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(4, 2));
    y = nn_input(g, "y", NN_F32, nn_shape2(4, 1));
    logits = nn_linear_layer(g, nn_tanh(g, nn_linear_layer(g, x, 16, NULL, "fc1")), 1, NULL, "fc2");
    loss = nn_bce_with_logits(g, logits, y);
    nn_graph_output(g, logits);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 0.05f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_write(g, x, X, sizeof X), ctx);
    T_OK(nn_tensor_write(g, y, Y, sizeof Y), ctx);
    for (i = 0; i < 300; i++)
        if (!T_OK(nn_graph_step(g), ctx)) goto done;
    T_OK(nn_tensor_read(g, loss, &l, 4), ctx);
    T_OK(nn_tensor_read(g, logits, out, sizeof out), ctx);
    T_CHECK(l < 0.05f, "loss after 300 steps is %g, not < 0.05", l);
    for (i = 0; i < 4; i++) T_CHECK((out[i] > 0) == (Y[i] > 0.5f), "xor(%g, %g): logit %g", X[2 * i], X[2 * i + 1], out[i]);
done:
    nn_graph_destroy(g);
    t_end();
}

/* An MLP trained on a device-resident dataset: a step with the batch indices written
   moves exactly those bytes up and nothing down; the loss accumulator is read once. An
   evaluation graph of another batch size sees the trained parameters. */
static void test_resident_training(const t_env *e) {
    enum { N = 300, D = 13, C = 5, B = 32, EB = 7 };
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *ev = NULL;
    nn_tensor data, idx, xb, yb, logits, loss, acc, lsum, edata, eidx, eout;
    nn_compile_desc cd;
    nn_graph_desc gd;
    nn_stats s0, s1;
    float *X = (float *)malloc(N * D * 4), first = 0, last = 0, w_train[C * 64], w_eval[C * 64];
    int32_t Y[N], I[B];
    int i, step;
    if (!t_begin(e, "device-resident training, stats, eval graph")) goto done;
    t_seed(3);
    for (i = 0; i < N; i++) { /* separable classes: the label is the argmax of the first C features */
        int j, best = 0;
        for (j = 0; j < D; j++) X[i * D + j] = (float)t_uniform(-1, 1);
        for (j = 1; j < C; j++) if (X[i * D + j] > X[i * D + best]) best = j;
        Y[i] = best;
    }
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    data = nn_input(g, "data", NN_F32, nn_shape2(N, D));
    idx = nn_input(g, "idx", NN_I32, nn_shape1(B));
    xb = nn_gather_rows(g, data, idx);
    yb = nn_input(g, "yb", NN_I32, nn_shape1(B));
    logits = nn_linear_layer(g, nn_relu(g, nn_linear_layer(g, xb, 64, NULL, "fc1")), C, NULL, "fc2");
    loss = nn_softmax_cross_entropy(g, logits, yb);
    lsum = nn_accumulate(g, loss);
    acc = nn_accumulate(g, nn_accuracy(g, logits, yb));
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 0.01f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_write(g, data, X, N * D * 4), ctx);
    for (step = 0; step < 200; step++) {
        int32_t yv[B];
        for (i = 0; i < B; i++) {
            I[i] = (step * B + i) % N;
            yv[i] = Y[I[i]];
        }
        if (step == 100) {
            nn_graph_finish(g);
            s0 = t_stats(ctx);
        }
        T_OK(nn_tensor_write(g, idx, I, sizeof I), ctx);
        T_OK(nn_tensor_write(g, yb, yv, sizeof yv), ctx);
        if (!T_OK(nn_graph_step(g), ctx)) goto done;
        if (step == 100) { /* the step alone: finish then reads the loss's label-check counter (4 bytes) */
            s1 = t_stats(ctx);
            nn_graph_finish(g);
            T_CHECK(s1.h2d_bytes - s0.h2d_bytes == 2 * B * 4, "a step moved %llu bytes up, not the %d written",
                    (unsigned long long)(s1.h2d_bytes - s0.h2d_bytes), 2 * B * 4);
            T_CHECK(s1.d2h_bytes == s0.d2h_bytes, "a step moved %llu bytes down",
                    (unsigned long long)(s1.d2h_bytes - s0.d2h_bytes));
            T_CHECK(s1.kernel_launches > s0.kernel_launches, "no kernels counted");
        }
        if (step == 9 || step == 199) {
            float v;
            T_OK(nn_tensor_read(g, lsum, &v, 4), ctx);
            if (step == 9) first = v / 10;
            else last = v / 190;
            T_OK(nn_tensor_fill(g, lsum, 0.0f), ctx);
        }
    }
    T_CHECK(last < 0.5f * first, "mean loss went from %g to %g: not learning", first, last);
    {
        float a;
        T_OK(nn_tensor_read(g, acc, &a, 4), ctx);
        T_CHECK(a / 200 > 0.6f, "mean training accuracy %g", a / 200);
    }
    /* the evaluation graph: batch EB, same parameters */
    memset(&gd, 0, sizeof gd);
    gd.share_params = g;
    gd.eval = 1;
    if (!T_OK(nn_graph_create(ctx, &gd, &ev), ctx)) goto done;
    edata = nn_input(ev, "data", NN_F32, nn_shape2(N, D));
    eidx = nn_input(ev, "idx", NN_I32, nn_shape1(EB));
    eout = nn_linear_layer(ev, nn_relu(ev, nn_linear_layer(ev, nn_gather_rows(ev, edata, eidx), 64, NULL, "fc1")), C, NULL, "fc2");
    nn_graph_output(ev, eout);
    if (!T_OK(nn_graph_compile(ev, NULL), ctx)) goto done;
    T_OK(nn_tensor_write(ev, edata, X, N * D * 4), ctx);
    T_OK(nn_tensor_write(ev, eidx, I, EB * 4), ctx);
    T_OK(nn_graph_forward(ev), ctx);
    T_OK(nn_tensor_read(ev, nn_graph_find(ev, "fc2.weight"), w_eval, C * 64 * 4), ctx);
    T_OK(nn_tensor_read(g, nn_graph_find(g, "fc2.weight"), w_train, C * 64 * 4), ctx);
    T_CHECK(memcmp(w_eval, w_train, sizeof w_eval) == 0, "the eval graph does not see the trained weights");
    {
        float o[EB * C];
        int correct = 0;
        T_OK(nn_tensor_read(ev, eout, o, sizeof o), ctx);
        for (i = 0; i < EB; i++) {
            int j, best = 0;
            for (j = 1; j < C; j++) if (o[i * C + j] > o[i * C + best]) best = j;
            correct += best == Y[I[i]];
        }
        T_CHECK(correct >= EB - 3, "eval graph: %d of %d right", correct, EB);
    }
done:
    free(X);
    nn_graph_destroy(ev);
    nn_graph_destroy(g);
    t_end();
}

/* argmax and accuracy against a reference, with ties (first index wins). */
static void test_argmax(const t_env *e) {
    enum { B = 129, C = 7 };
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor x, y, am, acc;
    float X[B * C], a = -1;
    int32_t Y[B], got[B];
    int i, j, want_correct = 0;
    if (!t_begin_op(e, "argmax and accuracy [129, 7]")) return; /* a reference check: no gradient */
    t_seed(11);
    for (i = 0; i < B * C; i++) X[i] = (float)t_randint(5); /* many ties */
    for (i = 0; i < B; i++) Y[i] = t_randint(C);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(B, C));
    y = nn_input(g, "y", NN_I32, nn_shape1(B));
    am = nn_argmax_rows(g, x);
    acc = nn_accuracy(g, x, y);
    nn_graph_output(g, am);
    nn_graph_output(g, acc);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    if (t_survey_graph(g)) goto done; /* NN_TEST_SURVEY: compiled, not run */
    T_OK(nn_tensor_write(g, x, X, sizeof X), ctx);
    T_OK(nn_tensor_write(g, y, Y, sizeof Y), ctx);
    T_OK(nn_graph_forward(g), ctx);
    T_OK(nn_tensor_read(g, am, got, sizeof got), ctx);
    T_OK(nn_tensor_read(g, acc, &a, 4), ctx);
    for (i = 0; i < B; i++) {
        int best = 0;
        for (j = 1; j < C; j++) if (X[i * C + j] > X[i * C + best]) best = j;
        T_CHECK(got[i] == best, "row %d: argmax %d, want %d", i, got[i], best);
        want_correct += best == Y[i];
    }
    T_CHECK(fabsf(a - (float)want_correct / B) < 1e-6f, "accuracy %g, want %g", a, (double)want_correct / B);
done:
    nn_graph_destroy(g);
    t_end();
}

/* nn_accumulate against a reference: three forward runs add x * 2 each time, a fill resets
   the sum, one more run adds once. */
static void test_accumulate(const t_env *e) {
    enum { N = 7 };
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor x, acc;
    float X[N], got[N];
    int i, run;
    if (!t_begin_op(e, "accumulate [7]: three runs, a fill, one run")) return; /* a reference check: no gradient */
    t_seed(12);
    for (i = 0; i < N; i++) X[i] = (float)t_uniform(-2, 2);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape1(N));
    acc = nn_accumulate(g, nn_mul_scalar(g, x, 2.0f));
    nn_graph_output(g, acc);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    if (t_survey_graph(g)) goto done; /* NN_TEST_SURVEY: compiled, not run */
    T_OK(nn_tensor_write(g, x, X, sizeof X), ctx);
    for (run = 0; run < 3; run++) T_OK(nn_graph_forward(g), ctx);
    if (T_OK(nn_tensor_read(g, acc, got, sizeof got), ctx))
        for (i = 0; i < N; i++)
            if (!T_CHECK(got[i] == 6.0f * X[i], "after 3 runs: [%d] = %g, want %g", i, got[i], 6.0 * X[i])) break;
    T_OK(nn_tensor_fill(g, acc, 0.0f), ctx);
    T_OK(nn_graph_forward(g), ctx);
    if (T_OK(nn_tensor_read(g, acc, got, sizeof got), ctx))
        for (i = 0; i < N; i++)
            if (!T_CHECK(got[i] == 2.0f * X[i], "after a fill and 1 run: [%d] = %g, want %g", i, got[i], 2.0 * X[i])) break;
done:
    nn_graph_destroy(g);
    t_end();
}

/* Labels live on the device too: gather_rows copies int32 rows exactly; rows of 1 and 37
   (CPU devices copy a row in uint16s and a tail). */
static void test_gather_int(const t_env *e) {
    enum { N = 33, B = 7, DMAX = 37 };
    static const int dims[2] = {1, DMAX};
    nn_context *ctx = e->ctx;
    int32_t L[N * DMAX], I[B] = {0, 32, 5, -1, 33, 5, 16}, got[B * DMAX];
    int i, j, t;
    if (!t_begin(e, "gather_rows of int32 data [33] and [33, 37] by [7]")) return;
    for (i = 0; i < N * DMAX; i++) L[i] = (i * 7919) ^ 0x7f7f7f7f; /* bit patterns that are NaNs as floats */
    for (t = 0; t < 2; t++) {
        int D = dims[t];
        nn_graph *g = NULL;
        nn_tensor lab, idx, out;
        if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) break;
        lab = nn_input(g, "labels", NN_I32, D == 1 ? nn_shape1(N) : nn_shape2(N, D));
        idx = nn_input(g, "idx", NN_I32, nn_shape1(B));
        out = nn_gather_rows(g, lab, idx);
        nn_graph_output(g, out);
        if (T_OK(nn_graph_compile(g, NULL), ctx)) {
            T_OK(nn_tensor_write(g, lab, L, (size_t)N * D * 4), ctx);
            T_OK(nn_tensor_write(g, idx, I, sizeof I), ctx);
            T_OK(nn_graph_forward(g), ctx);
            if (T_OK(nn_tensor_read(g, out, got, (size_t)B * D * 4), ctx))
                for (i = 0; i < B; i++)
                    for (j = 0; j < D; j++) {
                        int32_t want = (I[i] >= 0 && I[i] < N) ? L[I[i] * D + j] : 0;
                        T_CHECK(got[i * D + j] == want, "D %d row %d (index %d) column %d: %d, want %d", D, i, I[i], j,
                                got[i * D + j], want);
                    }
        }
        nn_graph_destroy(g);
    }
    t_end();
}

/* Initialisers: the bounds and moments of what they draw, and the layers' names/shapes. */
static void test_init(const t_env *e) {
    enum { O = 64, I = 129 };
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_init in;
    nn_tensor t[6], x, y;
    static float v[O * I];
    double bound;
    int k, i;
    if (!t_begin(e, "parameter initialisers and layer parameters")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    memset(&in, 0, sizeof in);
    in.kind = NN_INIT_UNIFORM, in.a = -0.5f, in.b = 1.5f;
    t[0] = nn_param(g, "u", nn_shape2(O, I), in);
    in.kind = NN_INIT_NORMAL, in.a = 0.25f, in.b = 2.0f;
    t[1] = nn_param(g, "n", nn_shape2(O, I), in);
    in.kind = NN_INIT_KAIMING_UNIFORM, in.a = 0;
    t[2] = nn_param(g, "ku", nn_shape2(O, I), in);
    in.kind = NN_INIT_KAIMING_NORMAL;
    t[3] = nn_param(g, "kn", nn_shape2(O, I), in);
    in.kind = NN_INIT_XAVIER_UNIFORM;
    t[4] = nn_param(g, "xu", nn_shape2(O, I), in);
    in.kind = NN_INIT_CONSTANT, in.a = 3.0f;
    t[5] = nn_param(g, "c", nn_shape2(O, I), in);
    x = nn_input(g, "x", NN_F32, nn_shape4(2, 3, 5, 5));
    y = nn_conv2d_layer(g, x, 4, 3, 3, NULL, "conv");
    for (k = 0; k < 6; k++) nn_graph_output(g, nn_mul_scalar(g, t[k], 1.0f)); /* keep the params in the graph */
    nn_graph_output(g, y);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    for (k = 0; k < 6; k++) {
        double m = 0, sq = 0, lo = 1e30, hi = -1e30, want_m, want_sd;
        if (!T_OK(nn_tensor_read(g, t[k], v, sizeof v), ctx)) continue;
        for (i = 0; i < O * I; i++) {
            m += v[i];
            sq += (double)v[i] * v[i];
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
        }
        m /= O * I;
        sq = sqrt(sq / (O * I) - m * m);
        switch (k) {
        case 0: want_m = 0.5, want_sd = 2.0 / sqrt(12.0); bound = 0; T_CHECK(lo >= -0.5 && hi < 1.5, "uniform range"); break;
        case 1: want_m = 0.25, want_sd = 2.0; break;
        case 2: want_m = 0, want_sd = sqrt(2.0 / I); bound = sqrt(6.0 / I); T_CHECK(-lo <= bound && hi <= bound, "kaiming bound"); break;
        case 3: want_m = 0, want_sd = sqrt(2.0 / I); break;
        case 4: want_m = 0, want_sd = sqrt(2.0 / (O + I)); break;
        default: want_m = 3, want_sd = 0; break;
        }
        /* O*I = 8256 draws: the mean within 4 standard errors, the sd within 5% */
        T_CHECK(fabs(m - want_m) <= 4 * want_sd / sqrt((double)O * I) + 1e-6, "init %d: mean %g, want %g", k, m, want_m);
        T_CHECK(fabs(sq - want_sd) <= 0.05 * want_sd + 1e-6, "init %d: sd %g, want %g", k, sq, want_sd);
    }
    {
        nn_tensor w = nn_graph_find(g, "conv.weight"), b = nn_graph_find(g, "conv.bias");
        nn_shape ws = t_shape(g, w);
        float wv[4 * 3 * 3 * 3];
        T_CHECK(w.id > 0 && b.id > 0 && ws.ndim == 4 && ws.dim[0] == 4 && ws.dim[1] == 3 && ws.dim[2] == 3 && ws.dim[3] == 3,
                "conv layer parameters");
        if (T_OK(nn_tensor_read(g, w, wv, sizeof wv), ctx))
            for (i = 0; i < (int)(sizeof wv / 4); i++) T_CHECK(fabsf(wv[i]) <= 1.0f / sqrtf(27.0f), "conv weight %g", wv[i]);
    }
done:
    nn_graph_destroy(g);
    t_end();
}

/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- the graph itself: handles, leaves, compiling ---- */

B(g_none_unary, nn_relu(g, NN_NONE))
B(g_none_second, nn_matmul(g, F(g, S2(2, 3)), NN_NONE, 0, 0))
B(g_id_range, nn_sigmoid(g, T(1000)))
B(g_id_negative, nn_tanh(g, T(-5)))
B(g_input_negdim, F(g, S2(-3, 4)))
/* a rank-0 tensor is a valid input, but an op that handles none refuses it */
static nn_tensor g_input_ndim0(nn_graph *g, nn_compile_desc *cd) {
    nn_shape s;
    (void)cd;
    memset(&s, 0, sizeof s);
    return nn_softmax(g, nn_input(g, "x0", NN_F32, s), -1);
}
static nn_tensor g_param_ndim0(nn_graph *g, nn_compile_desc *cd) {
    nn_shape s;
    nn_init z;
    (void)cd;
    memset(&s, 0, sizeof s);
    memset(&z, 0, sizeof z);
    return nn_param(g, "w0", s, z);
}
static nn_tensor g_sum_dim_ndim0(nn_graph *g, nn_compile_desc *cd) {
    nn_shape s;
    int d = 1;
    (void)cd;
    memset(&s, 0, sizeof s);
    return nn_sum_dim(g, nn_input(g, "x0", NN_F32, s), &d, 1, 0);
}
B(g_input_dtype, nn_input(g, "x", (nn_dtype)5, S1(3)))
static nn_tensor g_input_ndim7(nn_graph *g, nn_compile_desc *cd) {
    nn_shape s = S2(2, 2);
    (void)cd;
    s.ndim = 7;
    return nn_input(g, "x7", NN_F32, s);
}
static nn_tensor g_param_zero(nn_graph *g, nn_compile_desc *cd) {
    nn_init z;
    (void)cd;
    memset(&z, 0, sizeof z);
    return nn_param(g, "w", S2(0, 3), z);
}
static nn_tensor g_param_noname(nn_graph *g, nn_compile_desc *cd) {
    nn_init z;
    (void)cd;
    memset(&z, 0, sizeof z);
    return nn_param(g, NULL, S1(3), z);
}
static nn_tensor g_param_reshape(nn_graph *g, nn_compile_desc *cd) {
    nn_init z;
    (void)cd;
    memset(&z, 0, sizeof z);
    nn_param(g, "fc.weight", S2(4, 3), z);
    return nn_param(g, "fc.weight", S2(3, 4), z);
}
static nn_tensor g_buffer_clash(nn_graph *g, nn_compile_desc *cd) {
    nn_init z;
    (void)cd;
    memset(&z, 0, sizeof z);
    nn_param(g, "bn.weight", S1(4), z);
    return nn_buffer(g, "bn.weight", S1(4), z);
}
static nn_tensor g_grad_int(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    nn_graph_requires_grad(g, I(g, S1(4)));
    return NN_NONE;
}
static nn_tensor g_output_none(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    F(g, S1(2));
    nn_graph_output(g, NN_NONE);
    return NN_NONE;
}
/* leaves and ops on a compiled graph: refused at the call (R_CALL), the compiled graph
   left as it was and still running */
static nn_tensor g_compiled(nn_graph *g, int which) {
    nn_tensor x = F(g, S2(2, 3)), t;
    char msg[512];
    nn_graph_output(g, nn_sigmoid(g, x));
    if (nn_graph_compile(g, NULL) != NN_OK) return T(-1);
    if (which == 0) t = F(g, S1(3));
    else if (which == 1) {
        nn_init z;
        memset(&z, 0, sizeof z);
        t = nn_param(g, "late", S1(3), z);
    } else t = nn_softmax(g, x, -1);
    snprintf(msg, sizeof msg, "%s", nn_context_last_error(t_row_ctx));
    if (t.id >= 0 || nn_tensor_fill(g, x, 0.5f) != NN_OK || nn_graph_forward(g) != NN_OK) return CALL(NN_OK);
    snprintf(t_call_msg, sizeof t_call_msg, "%s", msg);
    return CALL(NN_ERR_STATE);
}
static nn_tensor g_compiled_input(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    return g_compiled(g, 0);
}
static nn_tensor g_compiled_param(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    return g_compiled(g, 1);
}
static nn_tensor g_compiled_op(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    return g_compiled(g, 2);
}
/* compile-time refusals */
static nn_tensor c_loss_int(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor a = nn_argmax_rows(g, F(g, S2(1, 4)));
    cd->loss = a;
    return a;
}
static nn_tensor c_loss_foreign(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor x = F(g, S1(1));
    cd->loss = T(77);
    return x;
}
static nn_tensor c_opt_kind(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l = nn_sum(g, F(g, S1(3)));
    cd->loss = l;
    cd->optimizer.kind = (nn_optimizer_kind)99;
    return l;
}
static nn_tensor c_schedule_kind(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l = nn_sum(g, F(g, S1(3)));
    cd->loss = l;
    cd->optimizer.kind = NN_OPT_SGD;
    cd->schedule.kind = (nn_lr_schedule_kind)42;
    return l;
}
static nn_tensor c_schedule_milestones(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l = nn_sum(g, F(g, S1(3)));
    cd->loss = l;
    cd->optimizer.kind = NN_OPT_SGD;
    cd->schedule.kind = NN_LR_MULTISTEP;
    cd->schedule.n_milestones = NN_LR_MAX_MILESTONES + 1;
    return l;
}
static nn_tensor c_schedule_step(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l = nn_sum(g, F(g, S1(3)));
    cd->loss = l;
    cd->optimizer.kind = NN_OPT_SGD;
    cd->schedule.kind = NN_LR_STEP;
    cd->schedule.step_size = -3;
    return l;
}

/* Schedules with nothing to anneal over (total_steps 0, or no more than the warm-up):
   PyTorch divides by zero there; the refusal names the kind and the steps. */
static nn_tensor c_schedule_total(nn_graph *g, nn_compile_desc *cd, nn_lr_schedule_kind kind, int total, int warmup) {
    nn_tensor l = nn_sum(g, F(g, S1(3)));
    cd->loss = l;
    cd->optimizer.kind = NN_OPT_SGD;
    cd->schedule.kind = kind;
    cd->schedule.total_steps = total;
    cd->schedule.warmup_steps = warmup;
    return l;
}
B(c_schedule_cosine_0, c_schedule_total(g, cd, NN_LR_COSINE, 0, 0))
B(c_schedule_cosine_warmup, c_schedule_total(g, cd, NN_LR_COSINE, 10, 10))
B(c_schedule_linear_0, c_schedule_total(g, cd, NN_LR_LINEAR, 0, 0))
B(c_schedule_onecycle_0, c_schedule_total(g, cd, NN_LR_ONECYCLE, 0, 0))
B(c_schedule_cosine_negwarm, c_schedule_total(g, cd, NN_LR_COSINE, 10, -2))

/* Initialisations torch.nn.init refuses (uniform_: from <= to, normal_: std >= 0), and NaN
   or infinite bounds and gains, which would fill the parameter with NaN. */
static nn_tensor g_param_init(nn_graph *g, nn_init_kind kind, float a, float b) {
    nn_init in;
    in.kind = kind;
    in.a = a;
    in.b = b;
    return nn_param(g, "w", S2(3, 4), in);
}
B(g_init_uniform_nan, g_param_init(g, NN_INIT_UNIFORM, (float)NAN, 1.0f))
B(g_init_uniform_inf, g_param_init(g, NN_INIT_UNIFORM, -1.0f, (float)INFINITY))
B(g_init_uniform_order, g_param_init(g, NN_INIT_UNIFORM, 1.0f, -1.0f))
B(g_init_normal_std, g_param_init(g, NN_INIT_NORMAL, 0.0f, -1.0f))
B(g_init_normal_nan, g_param_init(g, NN_INIT_NORMAL, (float)NAN, 1.0f))
B(g_init_kaiming_nan, g_param_init(g, NN_INIT_KAIMING_UNIFORM, (float)NAN, 0.0f))
B(g_init_xavier_inf, g_param_init(g, NN_INIT_XAVIER_NORMAL, (float)-INFINITY, 0.0f))

static const bad_row graph_bad[] = {
    {"graph", "NN_NONE as the input of nn_relu", g_none_unary, R_INV, "nn_relu|NN_NONE", 0},
    {"graph", "NN_NONE as matmul's b", g_none_second, R_INV, "nn_matmul|input 1|NN_NONE", 0},
    {"graph", "tensor id 1000 of a 1-node graph", g_id_range, R_INV, "nn_sigmoid|not a tensor of this graph", 0},
    {"graph", "tensor id -5 with no earlier error", g_id_negative, R_INV, "nn_tanh|not a tensor", 0},
    {"graph", "nn_input [-3, 4]", g_input_negdim, R_SHAPE, "nn_input|[-3, 4]", 0},
    {"graph", "softmax of a rank-0 input", g_input_ndim0, R_SHAPE, "nn_softmax|rank 0|[1]", 0},
    {"graph", "nn_param of 0 dims", g_param_ndim0, R_SHAPE, "nn_param|w0|not 0", 0},
    {"graph", "nn_sum_dim dim 1 of a rank-0 input", g_sum_dim_ndim0, R_INV, "nn_sum_dim|rank 0|0 or -1", 0},
    {"graph", "nn_input of 7 dims", g_input_ndim7, R_SHAPE, "nn_input|7", 0},
    {"graph", "nn_input dtype 5", g_input_dtype, R_INV, "nn_input|dtype 5", 0},
    {"graph", "nn_param [0, 3]", g_param_zero, R_SHAPE, "nn_param|w|[0, 3]", 0},
    {"graph", "nn_param without a name", g_param_noname, R_INV, "nn_param|name", 0},
    {"graph", "nn_param again with another shape", g_param_reshape, R_SHAPE, "nn_param|fc.weight|[4, 3]|[3, 4]", 0},
    {"graph", "nn_buffer over a parameter's name", g_buffer_clash, R_INV, "nn_buffer|bn.weight", 0},
    {"graph", "nn_graph_requires_grad on int32", g_grad_int, R_INV, "nn_graph_requires_grad|int32", 0},
    {"graph", "nn_graph_output(NN_NONE)", g_output_none, R_INV, "nn_graph_output|NN_NONE", 0},
    {"graph", "nn_input on a compiled graph", g_compiled_input, R_STATE, "nn_input|compiled (a forward-only graph)|before nn_graph_compile", R_CALL},
    {"graph", "nn_param on a compiled graph", g_compiled_param, R_STATE, "nn_param|compiled|share_params", R_CALL},
    {"graph", "nn_softmax on a compiled graph", g_compiled_op, R_STATE, "nn_softmax|compiled|nothing can be added", R_CALL},
    {"graph", "an int32 loss", c_loss_int, R_SHAPE, "nn_graph_compile|loss|float32|int32", 1},
    {"graph", "a loss of id 77", c_loss_foreign, R_INV, "nn_graph_compile|loss", 1},
    {"graph", "optimizer kind 99", c_opt_kind, R_INV, "nn_graph_compile|optimizer kind 99", 1},
    {"graph", "schedule kind 42", c_schedule_kind, R_INV, "schedule|kind 42", 1},
    {"graph", "17 milestones", c_schedule_milestones, R_INV, "schedule|17 milestones", 1},
    {"graph", "schedule step_size -3", c_schedule_step, R_INV, "schedule|step_size -3", 1},
    {"graph", "cosine schedule total_steps 0", c_schedule_cosine_0, R_INV, "nn_graph_set_schedule|cosine|total_steps 0", 1},
    {"graph", "cosine schedule total_steps 10 = warmup_steps", c_schedule_cosine_warmup, R_INV,
     "cosine|total_steps > warmup_steps|total_steps 10, warmup_steps 10", 1},
    {"graph", "cosine schedule warmup_steps -2", c_schedule_cosine_negwarm, R_INV, "cosine|warmup_steps -2", 1},
    {"graph", "linear schedule total_steps 0", c_schedule_linear_0, R_INV, "linear|total_steps 0", 1},
    {"graph", "one-cycle schedule total_steps 0", c_schedule_onecycle_0, R_INV, "one-cycle|total_steps >= 1|total_steps 0", 1},
    {"graph", "uniform init U(NaN, 1)", g_init_uniform_nan, R_INV, "nn_param \"w\"|uniform|finite a <= b|nan", 0},
    {"graph", "uniform init U(-1, inf)", g_init_uniform_inf, R_INV, "nn_param \"w\"|uniform|b = inf", 0},
    {"graph", "uniform init U(1, -1)", g_init_uniform_order, R_INV, "nn_param \"w\"|uniform|a = 1, b = -1", 0},
    {"graph", "normal init std -1", g_init_normal_std, R_INV, "nn_param \"w\"|normal|std b >= 0|b = -1", 0},
    {"graph", "normal init mean NaN", g_init_normal_nan, R_INV, "nn_param \"w\"|normal|finite mean|nan", 0},
    {"graph", "kaiming init gain NaN", g_init_kaiming_nan, R_INV, "nn_param \"w\"|gain|nan", 0},
    {"graph", "xavier init gain -inf", g_init_xavier_inf, R_INV, "nn_param \"w\"|gain|-inf", 0},
};

/* Writes that do not block (a device backend's staging ring): the caller's buffer is
   clobbered as soon as nn_tensor_write returns, 40 writes and 20 forward runs go by with
   a read only every 5th run (more writes than the ring's 8 slots in between), and a write
   over the ring's 1 MiB; every result is the one of the data written, y = 2 x + w. */
static void test_staged_writes(const t_env *e) {
    enum { N = 257, BIG = 300000 };
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor x, w, y, xb, yb;
    float *buf = (float *)malloc(sizeof(float) * BIG), *out = (float *)malloc(sizeof(float) * BIG);
    int i, k, bad = 0;
    if (!t_begin(e, "graph: writes that do not block keep the data written (staging ring)")) goto done;
    if (!T_CHECK(buf && out, "out of memory") || !T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape1(N));
    w = nn_input(g, "w", NN_F32, nn_shape1(N));
    xb = nn_input(g, "xb", NN_F32, nn_shape1(BIG));
    y = nn_add(g, nn_mul_scalar(g, x, 2.0f), w);
    yb = nn_mul_scalar(g, xb, 3.0f);
    nn_graph_output(g, y);
    nn_graph_output(g, yb);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    for (k = 0; k < BIG; k++) buf[k] = (float)(k % 1000) * 0.5f;
    if (!T_OK(nn_tensor_write(g, xb, buf, sizeof(float) * BIG), ctx)) goto done;
    for (k = 0; k < BIG; k++) buf[k] = -1.0f;
    for (i = 0; i < 20; i++) {
        for (k = 0; k < N; k++) buf[k] = (float)(i * 1000 + k);
        if (!T_OK(nn_tensor_write(g, x, buf, sizeof(float) * N), ctx)) goto done;
        for (k = 0; k < N; k++) buf[k] = (float)(i - k);
        if (!T_OK(nn_tensor_write(g, w, buf, sizeof(float) * N), ctx)) goto done;
        for (k = 0; k < N; k++) buf[k] = 1e30f; /* the caller's buffer, reused at once */
        if (!T_OK(nn_graph_forward(g), ctx)) goto done;
        if (i % 5 != 4) continue;
        if (!T_OK(nn_tensor_read(g, y, out, sizeof(float) * N), ctx)) goto done;
        for (k = 0; k < N; k++) bad += out[k] != 2.0f * (float)(i * 1000 + k) + (float)(i - k);
    }
    T_CHECK(bad == 0, "%d of 4 x %d results differ from 2 x + w of the data written", bad, N);
    if (T_OK(nn_tensor_read(g, yb, out, sizeof(float) * BIG), ctx)) {
        for (bad = 0, k = 0; k < BIG; k++) bad += out[k] != 3.0f * ((float)(k % 1000) * 0.5f);
        T_CHECK(bad == 0, "%d of %d results of the 1.2 MB write differ", bad, BIG);
    }
done:
    nn_graph_destroy(g);
    free(buf);
    free(out);
    t_end();
}

void suite_graph(const t_env *e) {
    T_RUN(e, test_init, test_gather_int, test_xor, test_resident_training, test_argmax, test_accumulate, test_staged_writes);
    t_bad_rows(e, graph_bad, (int)(sizeof graph_bad / sizeof graph_bad[0]));
}
