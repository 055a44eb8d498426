/* Parameters stored in bfloat16 (nn_graph_desc.param_dtype, float16 too) with no float32
   master copy, updated in float32 and written back rounded to nearest even or, with
   nn_optimizer.stochastic_rounding, stochastically (kernels/storage.h's nn__f32_to_bf16_sr,
   src/ops/optim.c's 16-bit parameter block).

   The rounding itself through one SGD step on w [SR_N] with the gradient exactly 1
   (loss = sum(w)), so w - lr is exact in float32 and the only rounding is the write back:
   round to nearest equals nn_f32_to_bf16 of it bit for bit; stochastic rounding gives one
   of its two bfloat16 neighbours, each element, with the mean of the draws within 5 sigma
   of the float32 value; the same bits run to run and on the CPU backend. Then the reason
   it exists: steps under half a unit of the last place stall round to nearest and move
   stochastic rounding's mean by the float32 amount; an MLP against float32 parameters;
   exact resume; the files' BF16; the memory report; the refusals. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SR_N 65536

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* w [SR_N] of param_dtype dt under its policy, loss = sum(w), SGD at lr; w0 written (rounded),
   `steps` steps run; the values after into out (float32), 0 on a failure (reported) */
static int sum_steps(nn_context *ctx, nn_dtype dt, int sr, float lr, const float *w0, int steps, float *out) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_init init;
    nn_tensor w;
    int ok = 0, i;
    memset(&gd, 0, sizeof gd);
    gd.precision = dt == NN_BF16 ? NN_PRECISION_BF16 : dt == NN_F16 ? NN_PRECISION_FP16 : NN_PRECISION_FP32;
    gd.param_dtype = dt;
    gd.seed = 7;
    memset(&init, 0, sizeof init);
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return 0;
    w = nn_param(g, "w", nn_shape1(SR_N), init);
    {
        nn_dtype wd = NN_I32;
        T_CHECK(nn_tensor_dtype(g, w, &wd) == NN_OK && wd == dt, "nn_tensor_dtype of a parameter under param_dtype %d: got %d",
                (int)dt, (int)wd);
    }
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, w);
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = lr;
    cd.optimizer.stochastic_rounding = sr;
    cd.loss_scale.enabled = NN_ZERO;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, w, w0, SR_N * sizeof(float)), ctx)) goto done;
    for (i = 0; i < steps; i++)
        if (!T_OK(nn_graph_step(g), ctx)) goto done;
    ok = T_OK(nn_tensor_read(g, w, out, SR_N * sizeof(float)), ctx);
done:
    nn_graph_destroy(g);
    return ok;
}

/* w0: bfloat16 values in [1, 2) and [-4, -2) (every mantissa), the step lr = 2^-9, a quarter
   of a unit at [1, 2), an eighth at [2, 4): w - lr is exact in float32 */
static void sr_inputs(float *w0) {
    int i;
    for (i = 0; i < SR_N; i++) {
        uint32_t m = (uint32_t)(i % 128) << 16;
        w0[i] = i % 2 ? from_bits(0x3f800000u | m) : -from_bits(0x40000000u | m);
    }
}

static void rounding_case(const t_env *e) {
    static float w0[SR_N], rn[SR_N], sr[SR_N], sr2[SR_N], cpu[SR_N];
    const float lr = 1.0f / 512.0f;
    double sum_up = 0, up_exp = 0, var = 0;
    int i, bad_rn = 0, bad_nb = 0;
    if (!t_begin(e, "bf16param: one SGD step's write back: nearest even bitwise, stochastic between the neighbours, mean, "
                 "run to run, CPU parity")) return;
    sr_inputs(w0);
    if (!sum_steps(e->ctx, NN_BF16, 0, lr, w0, 1, rn) || !sum_steps(e->ctx, NN_BF16, 1, lr, w0, 1, sr) ||
        !sum_steps(e->ctx, NN_BF16, 1, lr, w0, 1, sr2))
        goto done;
    for (i = 0; i < SR_N; i++) {
        float v = w0[i] - lr; /* exact */
        uint32_t lo = bits(v) & 0xffff0000u, hi = lo + 0x10000u;
        double p = (double)(bits(v) & 0xffffu) / 65536.0, ulp = fabs((double)from_bits(hi) - (double)from_bits(lo));
        uint16_t ref = 0;
        nn_f32_to_bf16(&v, &ref, 1);
        bad_rn += bits(rn[i]) != (uint32_t)ref << 16;
        bad_nb += bits(sr[i]) != lo && bits(sr[i]) != hi;
        sum_up += bits(sr[i]) == hi;
        up_exp += p;
        var += p * (1 - p) * ulp * ulp;
    }
    T_CHECK(bad_rn == 0, "%d of %d round-to-nearest values differ from nn_f32_to_bf16", bad_rn, SR_N);
    T_CHECK(bad_nb == 0, "%d of %d stochastic values are not a neighbour", bad_nb, SR_N);
    { /* the sum of the draws against the float32 sum: within 5 sigma (sigma from each element's variance) */
        double s = 0, s32 = 0;
        for (i = 0; i < SR_N; i++) {
            s += sr[i];
            s32 += (double)(w0[i] - lr);
        }
        T_CHECK(fabs(s - s32) <= 5 * sqrt(var), "stochastic sum %.6f, float32 %.6f, 5 sigma %.6f", s, s32, 5 * sqrt(var));
        T_CHECK(fabs(sum_up - up_exp) <= 5 * sqrt(up_exp), "%g rounded up, %g expected", sum_up, up_exp);
    }
    T_CHECK(memcmp(sr, sr2, sizeof sr) == 0, "stochastic rounding differs run to run");
    if (e->cpu && sum_steps(e->cpu, NN_BF16, 1, lr, w0, 1, cpu))
        T_CHECK(memcmp(sr, cpu, sizeof sr) == 0, "stochastic rounding differs from the CPU backend's");
    if (e->cpu && sum_steps(e->cpu, NN_BF16, 0, lr, w0, 1, cpu))
        T_CHECK(memcmp(rn, cpu, sizeof rn) == 0, "round to nearest differs from the CPU backend's");
done:
    t_end();
}

/* 16 steps of 2^-9 from 1.5 (ulp 2^-7: a quarter of one each): nearest even stalls at 1.5,
   stochastic rounding's mean moves by 16 * 2^-9 = 1/32 as float32's (within 5 sigma, sigma
   under sqrt(16 / 4) ulp / sqrt(SR_N)); float16 parameters round to nearest (ulp 2^-10
   there: the steps are exact) */
static void stall_case(const t_env *e) {
    static float w0[SR_N], out[SR_N];
    const float lr = 1.0f / 512.0f;
    double mean = 0;
    int i, moved = 0;
    if (!t_begin(e, "bf16param: updates under half a unit: nearest even stalls, stochastic rounding moves the mean")) return;
    for (i = 0; i < SR_N; i++) w0[i] = 1.5f;
    if (!sum_steps(e->ctx, NN_BF16, 0, lr, w0, 16, out)) goto done;
    for (i = 0; i < SR_N; i++) moved += out[i] != 1.5f;
    T_CHECK(moved == 0, "round to nearest moved %d of %d values", moved, SR_N);
    if (!sum_steps(e->ctx, NN_BF16, 1, lr, w0, 16, out)) goto done;
    for (i = 0; i < SR_N; i++) mean += out[i];
    mean /= SR_N;
    T_CHECK(fabs(mean - (1.5 - 16.0 / 512.0)) <= 5 * 2.0 / 128.0 / sqrt((double)SR_N), "stochastic mean %.7f, float32 %.7f",
            mean, 1.5 - 16.0 / 512.0);
    if (!sum_steps(e->ctx, NN_F16, 0, lr, w0, 16, out)) goto done;
    for (i = 0; i < SR_N && out[i] == 1.5f - 16.0f / 512.0f; i++) {}
    T_CHECK(i == SR_N, "float16 parameter %d: %.7f, not %.7f", i, (double)out[i < SR_N ? i : 0], 1.5 - 16.0 / 512.0);
done:
    t_end();
}

/* ---- an MLP regression (tests/test_mixed.c's) under the bf16 policy, float32 parameters
   against bfloat16 ones (nearest even, stochastic), Adam ---- */

#define TN 64
#define TI 16
#define TH 32

static int train_mlp(nn_context *ctx, nn_dtype pd, int sr, nn_optimizer_kind kind, float lr, int steps, const float *xv,
                     const float *yv, float *first, float *last) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y, h, out, loss;
    int ok = 0;
    memset(&gd, 0, sizeof gd);
    gd.precision = NN_PRECISION_BF16;
    gd.param_dtype = pd;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(TN, TI));
    y = nn_input(g, "y", NN_F32, nn_shape2(TN, 1));
    h = nn_tanh(g, nn_linear_layer(g, x, TH, NULL, "fc1"));
    out = nn_linear_layer(g, h, 1, NULL, "fc2");
    loss = nn_mse_loss(g, out, y, NULL);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = kind;
    cd.optimizer.lr = lr;
    cd.optimizer.stochastic_rounding = sr;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_write(g, x, xv, TN * TI * sizeof(float)), ctx);
    T_OK(nn_tensor_write(g, y, yv, TN * sizeof(float)), ctx);
    ok = t_train_losses(g, ctx, loss, steps, first, last);
done:
    nn_graph_destroy(g);
    return ok;
}

static int train_mlp_opt(nn_context *ctx, nn_optimizer_kind kind, int amsgrad, float lr, const float *xv, const float *yv,
                         float *first, float *last) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y, loss;
    int ok = 0;
    memset(&gd, 0, sizeof gd);
    gd.precision = NN_PRECISION_BF16;
    gd.param_dtype = NN_BF16;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(TN, TI));
    y = nn_input(g, "y", NN_F32, nn_shape2(TN, 1));
    loss = nn_mse_loss(g, nn_linear_layer(g, nn_tanh(g, nn_linear_layer(g, x, TH, NULL, "fc1")), 1, NULL, "fc2"), y, NULL);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = kind;
    cd.optimizer.lr = lr;
    cd.optimizer.amsgrad = amsgrad;
    cd.optimizer.momentum = kind == NN_OPT_SGD ? 0.9f : 0.0f;
    cd.optimizer.stochastic_rounding = 1;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_write(g, x, xv, TN * TI * sizeof(float)), ctx);
    T_OK(nn_tensor_write(g, y, yv, TN * sizeof(float)), ctx);
    ok = t_train_losses(g, ctx, loss, 20, first, last);
done:
    nn_graph_destroy(g);
    return ok;
}

static void mlp_data(float *xv, float *yv) {
    int i, k;
    t_seed(20);
    for (i = 0; i < TN; i++) {
        double s = 0;
        for (k = 0; k < TI; k++) {
            xv[i * TI + k] = (float)t_uniform(-1, 1);
            s += sin(1.5 * xv[i * TI + k] * (k % 3 + 1));
        }
        yv[i] = (float)(s / 4);
    }
}

static void mlp_case(const t_env *e) {
    static float xv[TN * TI], yv[TN];
    float f0 = 0, f1 = 0, b0 = 0, b1 = 0, s0 = 0, s1 = 0;
    if (!t_begin(e, "bf16param: an MLP with bfloat16 parameters against float32 ones (60 Adam steps, bf16 policy)")) return;
    mlp_data(xv, yv);
    if (!train_mlp(e->ctx, NN_F32, 0, NN_OPT_ADAM, 1e-2f, 60, xv, yv, &f0, &f1) ||
        !train_mlp(e->ctx, NN_BF16, 0, NN_OPT_ADAM, 1e-2f, 60, xv, yv, &b0, &b1) ||
        !train_mlp(e->ctx, NN_BF16, 1, NN_OPT_ADAM, 1e-2f, 60, xv, yv, &s0, &s1))
        goto done;
    T_CHECK(f1 < 0.25f * f0, "float32 parameters did not train: %g -> %g", (double)f0, (double)f1);
    T_CHECK(fabs((double)b0 - (double)f0) <= 0.02 * f0, "first loss %g, float32 parameters %g", (double)b0, (double)f0);
    T_CHECK(fabs((double)b1 - (double)f1) <= 0.10 * f1, "bf16 final loss %g, float32 parameters %g", (double)b1, (double)f1);
    T_CHECK(fabs((double)s1 - (double)f1) <= 0.10 * f1, "bf16 stochastic final loss %g, float32 parameters %g", (double)s1,
            (double)f1);
done:
    t_end();
}

/* Adam at lr 1e-4: each step moves a weight by about 1e-4, under half a unit of most
   weights in bfloat16 (|w| > 0.026): nearest even barely trains, stochastic rounding as
   float32 parameters do */
static void tiny_lr_case(const t_env *e) {
    static float xv[TN * TI], yv[TN];
    float f0 = 0, f1 = 0, b0 = 0, b1 = 0, s0 = 0, s1 = 0;
    double df, db, ds;
    if (!t_begin(e, "bf16param: Adam at lr 1e-4, 200 steps: nearest even stalls, stochastic rounding trains")) return;
    mlp_data(xv, yv);
    if (!train_mlp(e->ctx, NN_F32, 0, NN_OPT_ADAM, 1e-4f, 200, xv, yv, &f0, &f1) ||
        !train_mlp(e->ctx, NN_BF16, 0, NN_OPT_ADAM, 1e-4f, 200, xv, yv, &b0, &b1) ||
        !train_mlp(e->ctx, NN_BF16, 1, NN_OPT_ADAM, 1e-4f, 200, xv, yv, &s0, &s1))
        goto done;
    df = f0 - f1;
    db = b0 - b1;
    ds = s0 - s1;
    T_CHECK(df > 0.02 * f0, "float32 parameters: %g -> %g", (double)f0, (double)f1);
    T_CHECK(db < 0.3 * df, "nearest even gained %g of float32's %g", db, df);
    T_CHECK(ds > 0.7 * df && ds < 1.3 * df, "stochastic rounding gained %g, float32 %g", ds, df);
done:
    t_end();
}

/* every optimizer that takes 16-bit parameters (all but LAMB and LARS), with stochastic
   rounding: 20 steps lower the loss, and on OpenCL the loss is the CPU backend's within 2%
   (the float32 rules may round differently there, which can flip a stochastic rounding) */
static void optimizers_case(const t_env *e) {
    static float xv[TN * TI], yv[TN];
    static const struct { nn_optimizer_kind kind; float lr; int amsgrad; } rows[] = {
        {NN_OPT_SGD, 5e-2f, 0}, {NN_OPT_ADAM, 1e-2f, 0}, {NN_OPT_ADAM, 1e-2f, 1}, {NN_OPT_ADAMW, 1e-2f, 0},
        {NN_OPT_ADAMAX, 1e-2f, 0}, {NN_OPT_NADAM, 1e-2f, 0}, {NN_OPT_RADAM, 1e-2f, 0}, {NN_OPT_RMSPROP, 1e-3f, 0},
        {NN_OPT_ADAGRAD, 5e-2f, 0}, {NN_OPT_ADADELTA, 1.0f, 0}, {NN_OPT_LION, 1e-3f, 0}, {NN_OPT_FTRL, 5e-2f, 0},
    };
    size_t i;
    if (!t_begin(e, "bf16param: every optimizer but LAMB and LARS on bfloat16 parameters, stochastic rounding (20 steps)"))
        return;
    mlp_data(xv, yv);
    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        float f = 0, l = 0, cf = 0, cl = 0;
        if (!train_mlp_opt(e->ctx, rows[i].kind, rows[i].amsgrad, rows[i].lr, xv, yv, &f, &l)) break;
        T_CHECK(l < f, "row %d (kind %d): loss %g -> %g", (int)i, (int)rows[i].kind, (double)f, (double)l);
        if (e->cpu && train_mlp_opt(e->cpu, rows[i].kind, rows[i].amsgrad, rows[i].lr, xv, yv, &cf, &cl))
            T_CHECK(fabs((double)l - (double)cl) <= 0.02 * cl, "row %d (kind %d): loss %g, the CPU backend's %g", (int)i,
                    (int)rows[i].kind, (double)l, (double)cl);
    }
    t_end();
}

/* ---- files: exact resume with bfloat16 parameters and stochastic rounding, the
   parameters saved as BF16 (the state file and nn_graph_save_safetensors) and loaded back ---- */

static nn_graph *ck_graph(nn_context *ctx, nn_tensor *w1) {
    static float xv[TN * TI], yv[TN];
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y;
    memset(&gd, 0, sizeof gd);
    gd.precision = NN_PRECISION_BF16;
    gd.param_dtype = NN_BF16;
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return NULL;
    mlp_data(xv, yv);
    x = nn_input(g, "x", NN_F32, nn_shape2(TN, TI));
    y = nn_input(g, "y", NN_F32, nn_shape2(TN, 1));
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mse_loss(g, nn_linear_layer(g, nn_tanh(g, nn_linear_layer(g, x, TH, NULL, "fc1")), 1, NULL, "fc2"), y, NULL);
    cd.optimizer.kind = NN_OPT_ADAMW;
    cd.optimizer.lr = 1e-3f;
    cd.optimizer.weight_decay = 0.01f;
    cd.optimizer.stochastic_rounding = 1;
    *w1 = nn_graph_find(g, "fc1.weight");
    if (nn_graph_compile(g, &cd) != NN_OK || nn_tensor_write(g, x, xv, sizeof xv) != NN_OK ||
        nn_tensor_write(g, y, yv, sizeof yv) != NN_OK) {
        nn_graph_destroy(g);
        return NULL;
    }
    return g;
}

static int file_has(const char *path, const char *what) {
    char buf[4096];
    size_t n;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf + 8, what) != NULL;
}

static void ckpt_case(const t_env *e) {
    static float a[TH * TI], b[TH * TI], c[TH * TI];
    char state[] = "/tmp/nn_bf16p_XXXXXX", st[] = "/tmp/nn_bf16s_XXXXXX";
    nn_graph *g = NULL, *h = NULL;
    nn_tensor w = NN_NONE, wh = NN_NONE;
    int i, fd1 = -1, fd2 = -1;
    if (!t_begin(e, "bf16param: exact resume with stochastic rounding; BF16 in the state file and safetensors")) return;
    fd1 = mkstemp(state);
    fd2 = mkstemp(st);
    if (!T_CHECK(fd1 >= 0 && fd2 >= 0, "mkstemp failed")) goto done;
    close(fd1);
    close(fd2);
    g = ck_graph(e->ctx, &w);
    if (!T_CHECK(g != NULL, "graph: %s", nn_context_last_error(e->ctx))) goto done;
    for (i = 0; i < 5; i++) T_OK(nn_graph_step(g), e->ctx);
    T_OK(nn_graph_save_state(g, state), e->ctx);
    T_OK(nn_graph_save_safetensors(g, st), e->ctx);
    T_OK(nn_tensor_read(g, w, c, sizeof c), e->ctx);
    for (i = 0; i < 5; i++) T_OK(nn_graph_step(g), e->ctx);
    T_OK(nn_tensor_read(g, w, a, sizeof a), e->ctx);
    h = ck_graph(e->ctx, &wh);
    if (!T_CHECK(h != NULL, "graph: %s", nn_context_last_error(e->ctx))) goto done;
    T_OK(nn_graph_load_safetensors(h, st, 0), e->ctx);
    T_OK(nn_tensor_read(h, wh, b, sizeof b), e->ctx);
    T_CHECK(memcmp(b, c, sizeof b) == 0, "the safetensors round trip changed fc1.weight");
    T_OK(nn_graph_load_state(h, state), e->ctx);
    for (i = 0; i < 5; i++) T_OK(nn_graph_step(h), e->ctx);
    T_OK(nn_tensor_read(h, wh, b, sizeof b), e->ctx);
    T_CHECK(memcmp(a, b, sizeof a) == 0, "5 + 5 steps resumed differ from 10 straight");
    T_CHECK(memcmp(a, c, sizeof a) != 0, "the last 5 steps did not move fc1.weight");
    for (i = 0; i < TH * TI; i++)
        if (!T_CHECK((bits(a[i]) & 0xffffu) == 0, "fc1.weight[%d] = %.9g is not a bfloat16", i, (double)a[i])) break;
    T_CHECK(file_has(st, "\"fc1.weight\":{\"dtype\":\"BF16\""), "%s: fc1.weight not BF16", st);
    T_CHECK(file_has(state, "\"fc1.weight\":{\"dtype\":\"BF16\""), "%s: fc1.weight not BF16", state);
    T_CHECK(file_has(state, "\"fc1.weight.__opt.0\":{\"dtype\":\"F32\""), "%s: Adam's m not F32", state);
done:
    nn_graph_destroy(g);
    nn_graph_destroy(h);
    remove(state);
    remove(st);
    t_end();
}

/* a graph made with share_params of one with bfloat16 parameters (desc zeroed otherwise, as
   an inference graph is) takes their type and policy: it compiles an embedding, a norm and
   a linear layer over them and reads the parameters' bits */
static void share_case(const t_env *e) {
    static float a[16 * 8], b[16 * 8];
    nn_graph *g = NULL, *h = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor wg = NN_NONE, wh = NN_NONE;
    int k;
    if (!t_begin(e, "bf16param: a graph sharing bfloat16 parameters takes their type and policy")) return;
    for (k = 0; k < 2; k++) {
        nn_graph **pg = k ? &h : &g;
        nn_tensor idx, y, emb;
        memset(&gd, 0, sizeof gd);
        if (k) gd.share_params = g;
        else {
            gd.precision = NN_PRECISION_BF16;
            gd.param_dtype = NN_BF16;
        }
        if (!T_OK(nn_graph_create(e->ctx, &gd, pg), e->ctx)) goto done;
        idx = nn_input(*pg, "idx", NN_I32, nn_shape1(4));
        emb = nn_embedding(*pg, idx, 16, 8, NULL, "emb");
        y = nn_linear_layer(*pg, nn_layer_norm_layer(*pg, emb, 1, NULL, "ln"), 3, NULL, "fc");
        memset(&cd, 0, sizeof cd);
        if (!k) {
            cd.loss = nn_sum(*pg, y);
            cd.optimizer.kind = NN_OPT_ADAM;
            cd.optimizer.lr = 1e-2f;
        } else {
            nn_graph_output(*pg, y);
        }
        if (!T_OK(nn_graph_compile(*pg, &cd), e->ctx)) goto done;
        {
            static const int32_t iv[4] = {1, 5, 15, 1};
            if (!T_OK(nn_tensor_write(*pg, idx, iv, sizeof iv), e->ctx)) goto done;
        }
        if (k) wh = nn_graph_find(h, "emb.weight");
        else wg = nn_graph_find(g, "emb.weight");
    }
    T_OK(nn_graph_step(g), e->ctx);
    T_OK(nn_graph_forward(h), e->ctx);
    T_OK(nn_tensor_read(g, wg, a, sizeof a), e->ctx);
    T_OK(nn_tensor_read(h, wh, b, sizeof b), e->ctx);
    T_CHECK(memcmp(a, b, sizeof a) == 0, "the sharing graph reads other values");
    for (k = 0; k < 16 * 8; k++)
        if (!T_CHECK((bits(a[k]) & 0xffffu) == 0, "emb.weight[%d] = %.9g is not a bfloat16", k, (double)a[k])) break;
done:
    nn_graph_destroy(h);
    nn_graph_destroy(g);
    t_end();
}

/* nn_graph_memory: the parameters' bytes halved */
static int mem_params(nn_context *ctx, nn_dtype pd, int64_t *bytes) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_memory_report m;
    nn_tensor x, y;
    int ok = 0;
    memset(&gd, 0, sizeof gd);
    gd.precision = NN_PRECISION_BF16;
    gd.param_dtype = pd;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(8, 64));
    y = nn_input(g, "y", NN_F32, nn_shape2(8, 1));
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mse_loss(g, nn_linear_layer(g, nn_relu(g, nn_linear_layer(g, x, 128, NULL, "fc1")), 1, NULL, "fc2"), y, NULL);
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-3f;
    if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_graph_memory(g, &m), ctx)) {
        *bytes = m.parameters;
        ok = 1;
    }
    nn_graph_destroy(g);
    return ok;
}

static void memory_case(const t_env *e) {
    int64_t f = 0, b = 0, n = 64 * 128 + 128 + 128 + 1;
    if (!t_begin(e, "bf16param: nn_graph_memory counts bfloat16 parameters at 2 bytes")) return;
    if (mem_params(e->ctx, NN_F32, &f) && mem_params(e->ctx, NN_BF16, &b)) {
        /* float32 parameters: 4 bytes each and the policy's 16-bit copies of the weights */
        T_CHECK(b == 2 * n + 2, "bf16 parameters: %lld bytes, expected %lld", (long long)b, (long long)(2 * n + 2));
        T_CHECK(f >= 4 * n, "float32 parameters: %lld bytes, expected >= %lld", (long long)f, (long long)(4 * n));
    }
    t_end();
}

/* ---- refusals ---- */

static nn_result refused(nn_context *ctx, nn_precision prec, nn_dtype pd, nn_optimizer_kind kind, int sr) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_init init;
    nn_result r;
    memset(&gd, 0, sizeof gd);
    gd.precision = prec;
    gd.param_dtype = pd;
    r = nn_graph_create(ctx, &gd, &g);
    if (r != NN_OK) return r;
    memset(&init, 0, sizeof init);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_param(g, "w", nn_shape1(8), init));
    cd.optimizer.kind = kind;
    cd.optimizer.lr = 1e-3f;
    cd.optimizer.stochastic_rounding = sr;
    r = nn_graph_compile(g, &cd);
    nn_graph_destroy(g);
    return r;
}

static void refusal_case(const t_env *e) {
    static const struct {
        nn_precision prec;
        nn_dtype pd;
        nn_optimizer_kind kind;
        int sr;
        const char *words[3];
    } rows[] = {
        {NN_PRECISION_BF16, NN_BF16, NN_OPT_LAMB, 0, {"optimizer lamb", "bfloat16", "w"}},
        {NN_PRECISION_BF16, NN_BF16, NN_OPT_LARS, 1, {"optimizer lars", "bfloat16", "param_dtype NN_F32"}},
        {NN_PRECISION_FP16, NN_F16, NN_OPT_ADAM, 1, {"stochastic_rounding", "bfloat16", "float16"}},
        {NN_PRECISION_FP32, NN_BF16, NN_OPT_ADAM, 0, {"nn_graph_create", "param_dtype bfloat16", "NN_PRECISION_BF16"}},
        {NN_PRECISION_FP16, NN_BF16, NN_OPT_ADAM, 0, {"nn_graph_create", "param_dtype bfloat16", "NN_PRECISION_BF16"}},
        {NN_PRECISION_BF16, NN_I32, NN_OPT_ADAM, 0, {"nn_graph_create", "param_dtype 1", "NN_BF16"}},
        {NN_PRECISION_BF16, NN_BF16, NN_OPT_ADAM, 2, {"stochastic_rounding", "2", "[0, 1]"}},
        {NN_PRECISION_BF16, NN_F32, NN_OPT_ADAM, 1, {"stochastic_rounding", "float32", "param_dtype = NN_BF16"}},
        {NN_PRECISION_FP32, NN_F32, NN_OPT_SGD, 1, {"stochastic_rounding", "float32", "param_dtype = NN_BF16"}},
    };
    size_t i;
    int k;
    if (!t_begin(e, "bf16param: refusals (LAMB, LARS, stochastic float16 or float32, no policy, another policy, int32, bad flag)"))
        return;
    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        nn_result r = refused(e->ctx, rows[i].prec, rows[i].pd, rows[i].kind, rows[i].sr);
        const char *msg = nn_context_last_error(e->ctx);
        T_CHECK(r == NN_ERR_INVALID_ARGUMENT, "row %d: %d, not NN_ERR_INVALID_ARGUMENT (%s)", (int)i, (int)r, msg);
        for (k = 0; k < 3; k++) T_CHECK(strstr(msg, rows[i].words[k]) != NULL, "row %d: no \"%s\" in: %s", (int)i, rows[i].words[k], msg);
    }
    t_end();
}

void suite_bf16param(const t_env *e) {
    rounding_case(e);
    stall_case(e);
    mlp_case(e);
    tiny_lr_case(e);
    optimizers_case(e);
    ckpt_case(e);
    share_case(e);
    memory_case(e);
    refusal_case(e);
}
