/* Dynamic loss scaling (nn_compile_desc.loss_scale, src/ops/optim.c's LOSS_SCALE and
   LOSS_SEED): an overflowing step skipped with the parameters and the optimizer state
   bitwise as they were and the scale halved; growth after growth_interval good updates,
   against torch.cuda.amp.GradScaler's update rule written here (the same sequence on every
   backend); a float16 MLP whose gradients underflow without scaling and train as float32's
   with it; the refusals of bad settings. */
#include "test.h"
#include "bad_rows.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LN 7   /* elements of the parameter: an odd count */
#define LSTEPS 8

/* GradScaler's update (torch._amp_update_scale_), the reference: the scale after each step */
static void ref_scales(const int *bad, int n, float init, float growth, float backoff, int interval, float *out) {
    float s = init;
    int t, tracker = 0;
    for (t = 0; t < n; t++) {
        if (bad[t]) {
            s *= backoff;
            tracker = 0;
        } else if (++tracker == interval) {
            s *= growth;
            tracker = 0;
        }
        out[t] = s;
    }
}

/* loss = 0.5 * sum(c * p^2) over p [LN]; bad steps put bad_value in c[5] (1e36: the scale
   of 1024 makes it overflow in the backward, c * scale, though the loss stays finite). After
   each step: p into params, the scale and the skips. */
static int ls_run(const t_env *e, nn_context *ctx, nn_optimizer o, const nn_loss_scale *ls, const int *bad, int n,
                  float bad_value, float *params, float *scales, int64_t *skipped) {
    nn_graph *g = NULL;
    nn_tensor p, c;
    nn_compile_desc cd;
    nn_init zero;
    float f[LN], cv[LN];
    int i, t, ok = 0;
    (void)e;
    memset(&zero, 0, sizeof zero);
    t_seed(11);
    for (i = 0; i < LN; i++) {
        f[i] = (float)t_uniform(0.25, 1);
        cv[i] = (float)t_uniform(0.1, 3);
    }
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    p = nn_param(g, "p", nn_shape1(LN), zero);
    c = nn_input(g, "c", NN_F32, nn_shape1(LN));
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mul_scalar(g, nn_sum(g, nn_mul(g, nn_mul(g, p, p), c)), 0.5f);
    cd.optimizer = o;
    cd.loss_scale = *ls;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (t_survey_graph(g)) goto done; /* NN_TEST_SURVEY: compiled, not run */
    T_OK(nn_tensor_write(g, p, f, sizeof f), ctx);
    for (t = 0; t < n; t++) {
        float cb[LN];
        memcpy(cb, cv, sizeof cb);
        if (bad[t]) cb[5] = bad_value;
        T_OK(nn_tensor_write(g, c, cb, sizeof cb), ctx);
        if (!T_OK(nn_graph_step(g), ctx)) goto done;
        if (params) T_OK(nn_tensor_read(g, p, params + t * LN, LN * sizeof(float)), ctx);
        if (!T_OK(nn_graph_loss_scale(g, scales ? scales + t : NULL, t == n - 1 ? skipped : NULL), ctx)) goto done;
    }
    ok = 1;
done:
    nn_graph_destroy(g);
    return ok;
}

static nn_optimizer ls_opt(nn_optimizer_kind kind, float lr) {
    nn_optimizer o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.lr = lr;
    return o;
}

/* The step that overflows leaves p as it was, counts one skip and halves the scale; with SGD
   momentum (no step-count dependence), good, overflow, good gives good, good's parameters
   bitwise: the momentum buffer was left as it was. Good steps scaled give the unscaled
   run's parameters bitwise (clip_norm: the norm is the unscaled one). */
static void skip_case(const t_env *e, const char *name, nn_optimizer o, int same_as_clean) {
    static const int bad3[3] = {0, 1, 0}, good2[2] = {0, 0};
    float run[3 * LN], clean[2 * LN], sc[3];
    int64_t skipped = -1;
    nn_loss_scale ls;
    char label[128];
    int i, finite = 1;
    snprintf(label, sizeof label, "lossscale: an overflowing step skipped (%s)", name);
    if (!t_begin_op(e, label)) return;
    memset(&ls, 0, sizeof ls);
    ls.enabled = 1;
    ls.init_scale = 1024.0f;
    if (!ls_run(e, e->ctx, o, &ls, bad3, 3, 1e36f, run, sc, &skipped)) goto done;
    T_CHECK(memcmp(run, run + LN, LN * sizeof(float)) == 0, "the overflowing step changed the parameters");
    T_CHECK(memcmp(run + LN, run + 2 * LN, LN * sizeof(float)) != 0, "the step after the skip did not update");
    T_CHECK(skipped == 1, "%lld skipped updates counted, not 1", (long long)skipped);
    T_CHECK(sc[0] == 1024.0f && sc[1] == 512.0f && sc[2] == 512.0f, "scales %g %g %g, want 1024 512 512", (double)sc[0],
            (double)sc[1], (double)sc[2]);
    for (i = 0; i < 3 * LN; i++) finite = finite && isfinite(run[i]);
    T_CHECK(finite, "a parameter is not finite");
    if (same_as_clean && ls_run(e, e->ctx, o, &ls, good2, 2, 0, clean, NULL, &skipped))
        T_CHECK(memcmp(run + 2 * LN, clean + LN, LN * sizeof(float)) == 0 && skipped == 0,
                "good, overflow, good differs from good, good (the state changed), or %lld skips", (long long)skipped);
    ls.enabled = NN_ZERO; /* the same data without scaling: nothing overflows, nothing skipped */
    if (ls_run(e, e->ctx, o, &ls, bad3, 3, 1e36f, run, sc, &skipped))
        T_CHECK(skipped == 0 && sc[2] == 1.0f && memcmp(run, run + LN, LN * sizeof(float)) != 0,
                "without scaling: %lld skips, scale %g", (long long)skipped, (double)sc[2]);
    /* good steps: a scale of 2^10 is undone exactly (before clipping too), so the parameters
       are those of the run without scaling, bitwise */
    if (ls_run(e, e->ctx, o, &ls, good2, 2, 0, run, NULL, &skipped)) {
        ls.enabled = 1;
        if (ls_run(e, e->ctx, o, &ls, good2, 2, 0, clean, NULL, &skipped))
            T_CHECK(memcmp(run, clean, 2 * LN * sizeof(float)) == 0, "two good steps scaled differ from unscaled ones");
    }
done:
    t_end();
}

/* The scale after each of 8 steps (growth_interval 2, factors 2 and 0.5 from 4; and 3, 1.5
   and 0.25 from 10, with clip_norm), an Inf in the data at steps 3 and 6, against the
   reference, on this backend and the CPU; with accumulate_steps 2, a change per update. */
static void growth_case(const t_env *e) {
    static const int bad[LSTEPS] = {0, 0, 0, 1, 0, 0, 1, 0};
    float got[LSTEPS], want[LSTEPS], cpu[LSTEPS];
    int64_t skipped = -1;
    nn_loss_scale ls;
    nn_optimizer o = ls_opt(NN_OPT_ADAM, 0.01f);
    int t, k;
    if (!t_begin_op(e, "lossscale: growth and backoff of the scale against GradScaler's rule")) return;
    for (k = 0; k < 2; k++) {
        memset(&ls, 0, sizeof ls);
        ls.enabled = 1;
        ls.init_scale = k ? 10.0f : 4.0f;
        ls.growth_interval = k ? 3 : 2;
        ls.growth_factor = k ? 1.5f : 0.0f;
        ls.backoff_factor = k ? 0.25f : 0.0f;
        o.clip_norm = k ? 0.5f : 0.0f;
        ref_scales(bad, LSTEPS, ls.init_scale, k ? 1.5f : 2.0f, k ? 0.25f : 0.5f, ls.growth_interval, want);
        if (!ls_run(e, e->ctx, o, &ls, bad, LSTEPS, INFINITY, NULL, got, &skipped)) break;
        for (t = 0; t < LSTEPS; t++)
            if (!T_CHECK(got[t] == want[t], "set %d step %d: scale %g, want %g", k, t, (double)got[t], (double)want[t])) break;
        T_CHECK(skipped == 2, "set %d: %lld skips, want 2", k, (long long)skipped);
        if (e->cpu && ls_run(e, e->cpu, o, &ls, bad, LSTEPS, INFINITY, NULL, cpu, &skipped))
            T_CHECK(memcmp(cpu, got, sizeof got) == 0, "set %d: the CPU backend's scales differ", k);
    }
    { /* accumulate_steps 2: the scale changes on update steps only (every second step) */
        static const int good[4] = {0, 0, 0, 0};
        memset(&ls, 0, sizeof ls);
        ls.enabled = 1;
        ls.init_scale = 4.0f;
        ls.growth_interval = 1;
        o = ls_opt(NN_OPT_ADAM, 0.01f);
        o.accumulate_steps = 2;
        if (ls_run(e, e->ctx, o, &ls, good, 4, 0, NULL, got, &skipped))
            T_CHECK(got[0] == 4.0f && got[1] == 8.0f && got[2] == 8.0f && got[3] == 16.0f,
                    "accumulate_steps 2: scales %g %g %g %g, want 4 8 8 16", (double)got[0], (double)got[1], (double)got[2],
                    (double)got[3]);
    }
    t_end();
}

/* ---- float16 training: a two-layer MLP regression whose loss is weighted by 1e-7, so the
   gradients of the matmuls' float16 outputs (about 1e-9) are under half of float16's smallest
   subnormal (6e-8) and flush to 0 unscaled (at 1e-6 some round to the subnormal and Adam,
   blind to scale, trains on their signs); Adam (eps 1e-12: nearly invariant to the
   loss's scale) for 60 steps from the same initial weights. Scaled by 65536 (the default),
   the final loss is within 1% of float32's (0.2% measured); without scaling it stays above half of the
   first loss while float32's falls under a quarter. ---- */

#define MN 64
#define MI 16
#define MH 32

static int ls_mlp(nn_context *ctx, nn_precision prec, int enabled, const float *xv, const float *yv, float *first,
                  float *last, float *scale) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y, h, out, loss;
    int s, ok = 0;
    memset(&gd, 0, sizeof gd);
    gd.precision = prec;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(MN, MI));
    y = nn_input(g, "y", NN_F32, nn_shape2(MN, 1));
    h = nn_tanh(g, nn_linear_layer(g, x, MH, NULL, "fc1"));
    out = nn_linear_layer(g, h, 1, NULL, "fc2");
    loss = nn_mul_scalar(g, nn_mse_loss(g, out, y, NULL), 1e-7f);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-2f;
    cd.optimizer.eps = 1e-12f;
    cd.loss_scale.enabled = enabled;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (t_survey_graph(g)) goto done;
    T_OK(nn_tensor_write(g, x, xv, MN * MI * sizeof(float)), ctx);
    T_OK(nn_tensor_write(g, y, yv, MN * sizeof(float)), ctx);
    for (s = 0; s < 60; s++) {
        if (!T_OK(nn_graph_step(g), ctx)) goto done;
        if (s == 0 && !T_OK(nn_tensor_read(g, loss, first, sizeof *first), ctx)) goto done;
    }
    if (!T_OK(nn_graph_forward(g), ctx) || !T_OK(nn_tensor_read(g, loss, last, sizeof *last), ctx)) goto done;
    ok = T_OK(nn_graph_loss_scale(g, scale, NULL), ctx);
done:
    nn_graph_destroy(g);
    return ok;
}

static void fp16_case(const t_env *e) {
    static float xv[MN * MI], yv[MN];
    float f32_first = 0, f32_last = 0, first = 0, last = 0, raw_first = 0, raw_last = 0, scale = 0, raw_scale = 0, s32 = 0;
    int i, k;
    if (!t_begin_op(e, "lossscale: an fp16 MLP with a loss of 1e-7 trains as float32 with scaling, not without")) return;
    t_seed(20);
    for (i = 0; i < MN; i++) {
        double s = 0;
        for (k = 0; k < MI; k++) {
            xv[i * MI + k] = (float)t_uniform(-1, 1);
            s += sin(1.5 * xv[i * MI + k] * (k % 3 + 1));
        }
        yv[i] = (float)(s / 4);
    }
    if (!ls_mlp(e->ctx, NN_PRECISION_FP32, 0, xv, yv, &f32_first, &f32_last, &s32)) goto done;
    if (!ls_mlp(e->ctx, NN_PRECISION_FP16, 0, xv, yv, &first, &last, &scale)) goto done;
    if (!ls_mlp(e->ctx, NN_PRECISION_FP16, NN_ZERO, xv, yv, &raw_first, &raw_last, &raw_scale)) goto done;
    T_CHECK(s32 == 1.0f && raw_scale == 1.0f && scale == 65536.0f, "scales: float32 %g, fp16 off %g, fp16 default %g",
            (double)s32, (double)raw_scale, (double)scale);
    T_CHECK(f32_last < 0.25f * f32_first, "float32 did not train: %g -> %g", (double)f32_first, (double)f32_last);
    T_CHECK(fabs((double)last - (double)f32_last) <= 0.01 * f32_last, "fp16 scaled: final loss %g, float32 %g (from %g)",
            (double)last, (double)f32_last, (double)f32_first);
    T_CHECK(raw_last > 0.5f * raw_first, "fp16 unscaled trained (%g -> %g): the gradients did not underflow", (double)raw_first,
            (double)raw_last);
    if (getenv("NN_TEST_VERBOSE"))
        printf("  losses x1e6: float32 %.6g -> %.6g, fp16 scaled %.6g -> %.6g, fp16 unscaled %.6g -> %.6g\n",
               1e6 * f32_first, 1e6 * f32_last, 1e6 * first, 1e6 * last, 1e6 * raw_first, 1e6 * raw_last);
done:
    t_end();
}

/* ---- refusals ---- */

static nn_tensor ls_bad(nn_graph *g, nn_compile_desc *cd, int opt, int enabled, float init, float growth, float backoff,
                        int interval) {
    nn_init zero;
    nn_tensor l;
    memset(&zero, 0, sizeof zero);
    l = nn_sum(g, nn_param(g, "w", S1(3), zero));
    cd->loss = l;
    cd->optimizer.kind = opt ? NN_OPT_SGD : NN_OPT_NONE;
    cd->loss_scale.enabled = enabled;
    cd->loss_scale.init_scale = init;
    cd->loss_scale.growth_factor = growth;
    cd->loss_scale.backoff_factor = backoff;
    cd->loss_scale.growth_interval = interval;
    return l;
}
B(ls_enabled, ls_bad(g, cd, 1, 5, 0, 0, 0, 0))
B(ls_no_opt, ls_bad(g, cd, 0, 1, 0, 0, 0, 0))
B(ls_init_neg, ls_bad(g, cd, 1, 1, -1.0f, 0, 0, 0))
B(ls_init_inf, ls_bad(g, cd, 1, 1, INFINITY, 0, 0, 0))
B(ls_growth_1, ls_bad(g, cd, 1, 1, 0, 1.0f, 0, 0))
B(ls_growth_nan, ls_bad(g, cd, 1, 1, 0, NAN, 0, 0))
B(ls_backoff_1, ls_bad(g, cd, 1, 1, 0, 0, 1.0f, 0))
B(ls_backoff_0, ls_bad(g, cd, 1, 1, 0, 0, (float)NN_ZERO, 0))
B(ls_interval_0, ls_bad(g, cd, 1, 1, 0, 0, 0, NN_ZERO))
B(ls_interval_neg, ls_bad(g, cd, 1, 0, 0, 0, 0, -3))

static const bad_row ls_rows[] = {
    {"lossscale", "enabled 5", ls_enabled, R_INV, "nn_graph_compile|loss_scale.enabled 5", 1},
    {"lossscale", "enabled without an optimizer", ls_no_opt, R_INV, "nn_graph_compile|loss_scale.enabled 1|optimizer", 1},
    {"lossscale", "init_scale -1", ls_init_neg, R_INV, "nn_graph_compile|loss_scale.init_scale -1", 1},
    {"lossscale", "init_scale inf", ls_init_inf, R_INV, "nn_graph_compile|loss_scale.init_scale inf", 1},
    {"lossscale", "growth_factor 1", ls_growth_1, R_INV, "nn_graph_compile|loss_scale.growth_factor 1|> 1", 1},
    {"lossscale", "growth_factor nan", ls_growth_nan, R_INV, "nn_graph_compile|loss_scale.growth_factor nan", 1},
    {"lossscale", "backoff_factor 1", ls_backoff_1, R_INV, "nn_graph_compile|loss_scale.backoff_factor 1|(0, 1)", 1},
    {"lossscale", "backoff_factor NN_ZERO", ls_backoff_0, R_INV, "nn_graph_compile|loss_scale.backoff_factor 0", 1},
    {"lossscale", "growth_interval NN_ZERO", ls_interval_0, R_INV, "nn_graph_compile|loss_scale.growth_interval 0", 1},
    {"lossscale", "growth_interval -3 (scaling off)", ls_interval_neg, R_INV, "nn_graph_compile|loss_scale.growth_interval -3",
     1},
};

void suite_lossscale(const t_env *e) {
    nn_optimizer o = ls_opt(NN_OPT_SGD, 0.1f);
    o.momentum = 0.9f;
    skip_case(e, "sgd momentum", o, 1);
    o.clip_norm = 0.5f;
    skip_case(e, "sgd momentum clip_norm", o, 1);
    skip_case(e, "adam", ls_opt(NN_OPT_ADAM, 0.05f), 0);
    o = ls_opt(NN_OPT_LAMB, 0.01f);
    skip_case(e, "lamb", o, 0);
    growth_case(e);
    fp16_case(e);
    t_bad_rows(e, ls_rows, (int)(sizeof ls_rows / sizeof ls_rows[0]));
}
