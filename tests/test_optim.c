/* Optimizers against a scalar double-precision reference of PyTorch's update rules, over
   several steps, with two parameters so that global-norm clipping has something to do.
   The loss is L = 0.5 * sum(c1 * p1^2) + 0.5 * sum(c2 * p2^2), so dL/dp = c * p.
   Tolerance: 1e-5 relative to the parameters' scale after each of 6 steps. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* setenv (adam pairs) */
#endif
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N1 7
#define N2 33 /* p2 is [3, 11]: two dimensions, so no_decay_1d spares it */
#define NP (N1 + N2)
#define REF_PI 3.14159265358979323846
#define STEPS 8

typedef struct ref_state { double p[NP], s0[NP], s1[NP], s2[NP], mu_prod; } ref_state;

/* A field's value by the desc rule: 0 is the default d, NN_ZERO an exact 0. */
static float dz(float v, float d) { return v == 0 ? d : v == (float)NN_ZERO ? 0 : v; }

/* The documented zero-field defaults, written out again here. */
static nn_optimizer ref_defaults(nn_optimizer o) {
    int k = o.kind;
    o.lr = dz(o.lr, k == NN_OPT_SGD || k == NN_OPT_RMSPROP || k == NN_OPT_ADAGRAD ? 1e-2f
                    : k == NN_OPT_ADAMAX || k == NN_OPT_NADAM                 ? 2e-3f
                    : k == NN_OPT_ADADELTA || k == NN_OPT_LARS                ? 1.0f
                    : k == NN_OPT_LION                                        ? 1e-4f
                                                                              : 1e-3f);
    o.beta1 = dz(o.beta1, 0.9f);
    o.beta2 = dz(o.beta2, k == NN_OPT_LION ? 0.99f : 0.999f);
    o.eps = dz(o.eps, k == NN_OPT_ADAGRAD ? 1e-10f : k == NN_OPT_ADADELTA || k == NN_OPT_LAMB ? 1e-6f : 1e-8f);
    o.weight_decay = dz(o.weight_decay, k == NN_OPT_ADAMW ? 1e-2f : 0);
    o.momentum = dz(o.momentum, 0);
    o.dampening = dz(o.dampening, 0);
    o.alpha = dz(o.alpha, 0.99f);
    o.rho = dz(o.rho, 0.9f);
    o.momentum_decay = dz(o.momentum_decay, 4e-3f);
    o.trust_coef = dz(o.trust_coef, 1e-3f);
    o.lr_power = dz(o.lr_power, -0.5f);
    o.initial_accumulator_value = dz(o.initial_accumulator_value, k == NN_OPT_FTRL ? 0.1f : 0);
    o.lr_decay = dz(o.lr_decay, 0);
    o.l1 = dz(o.l1, 0);
    o.l2 = dz(o.l2, 0);
    o.beta = dz(o.beta, 0);
    return o;
}

static double sgn(double x) { return (x > 0) - (x < 0); }

/* One update of every parameter, straight from the published rules (torch.optim's
   _single_tensor_* functions; timm's Lamb and Lars; Keras's Ftrl; lion-pytorch), with
   g the (averaged) gradient, t the update count from 1, lr the scheduled rate and lrm,
   wdm each element's group multipliers. The two tensors are [0, N1) and [N1, NP). */
static void ref_update(nn_optimizer o, ref_state *s, const double *graw, int t, double lr0, const double *lrm,
                       const double *wdm) {
    double g[NP], norm = 0, clip = 1, b1 = o.beta1, b2 = o.beta2, eps = o.eps;
    double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t), u[NP], wn2[2] = {0, 0}, xn2[2] = {0, 0};
    int i, seg;
    for (i = 0; i < NP; i++) norm += graw[i] * graw[i];
    if (o.clip_norm > 0) clip = fmin(1.0, o.clip_norm / (sqrt(norm) + 1e-6));
    for (i = 0; i < NP; i++) {
        g[i] = graw[i] * clip;
        if (o.clip_value > 0) g[i] = fmax(-o.clip_value, fmin(o.clip_value, g[i]));
    }
    if (t == 1) s->mu_prod = 1;
    if (o.kind == NN_OPT_NADAM) s->mu_prod *= b1 * (1 - 0.5 * pow(0.96, t * (double)o.momentum_decay));
    if (o.kind == NN_OPT_LAMB)
        for (i = 0; i < NP; i++) {
            double gi = g[i];
            s->s0[i] = b1 * s->s0[i] + (1 - b1) * gi;
            s->s1[i] = b2 * s->s1[i] + (1 - b2) * gi * gi;
            u[i] = (s->s0[i] / bc1) / (sqrt(s->s1[i]) / sqrt(bc2) + eps) + o.weight_decay * wdm[i] * s->p[i];
        }
    for (i = 0; i < NP; i++) { /* per-tensor norms: LARS of w and g, LAMB of w and u */
        seg = i >= N1;
        wn2[seg] += s->p[i] * s->p[i];
        xn2[seg] += o.kind == NN_OPT_LAMB ? u[i] * u[i] : g[i] * g[i];
    }
    for (i = 0; i < NP; i++) {
        double gi = g[i], w = s->p[i], lr = lr0 * lrm[i], wd = o.weight_decay * wdm[i];
        double wn = sqrt(wn2[i >= N1]), xn = sqrt(xn2[i >= N1]);
        double *m = &s->s0[i], *v = &s->s1[i], *x = &s->s2[i];
        switch (o.kind) {
        case NN_OPT_SGD:
            gi += wd * w;
            if (o.momentum != 0) {
                *m = t == 1 ? gi : o.momentum * *m + (1 - o.dampening) * gi;
                gi = o.nesterov ? gi + o.momentum * *m : *m;
            }
            s->p[i] = w - lr * gi;
            break;
        case NN_OPT_ADAM: case NN_OPT_ADAMW:
            if (o.kind == NN_OPT_ADAMW) w *= 1 - lr * wd;
            else gi += wd * w;
            *m = b1 * *m + (1 - b1) * gi;
            *v = b2 * *v + (1 - b2) * gi * gi;
            *x = o.amsgrad ? fmax(*x, *v) : *v;
            s->p[i] = w - lr / bc1 * *m / (sqrt(*x) / sqrt(bc2) + eps);
            break;
        case NN_OPT_ADAMAX:
            gi += wd * w;
            *m = b1 * *m + (1 - b1) * gi;
            *v = fmax(b2 * *v, fabs(gi) + eps);
            s->p[i] = w - lr / bc1 * *m / *v;
            break;
        case NN_OPT_NADAM: {
            double mu = b1 * (1 - 0.5 * pow(0.96, t * (double)o.momentum_decay));
            double mu_next = b1 * (1 - 0.5 * pow(0.96, (t + 1) * (double)o.momentum_decay)), den;
            if (o.decoupled_weight_decay) w *= 1 - lr * wd;
            else gi += wd * w;
            *m = b1 * *m + (1 - b1) * gi;
            *v = b2 * *v + (1 - b2) * gi * gi;
            den = sqrt(*v / bc2) + eps;
            s->p[i] = w - lr * (1 - mu) / (1 - s->mu_prod) * gi / den - lr * mu_next / (1 - s->mu_prod * mu_next) * *m / den;
            break;
        }
        case NN_OPT_RADAM: {
            double rho_inf = 2 / (1 - b2) - 1, rho_t = rho_inf - 2 * t * pow(b2, t) / bc2;
            if (o.decoupled_weight_decay) w *= 1 - lr * wd;
            else gi += wd * w;
            *m = b1 * *m + (1 - b1) * gi;
            *v = b2 * *v + (1 - b2) * gi * gi;
            if (rho_t > 5) {
                double rect = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
                s->p[i] = w - (*m / bc1) * lr * (sqrt(bc2) / (sqrt(*v) + eps)) * rect;
            } else {
                s->p[i] = w - (*m / bc1) * lr;
            }
            break;
        }
        case NN_OPT_RMSPROP: {
            double avg;
            gi += wd * w;
            *m = o.alpha * *m + (1 - o.alpha) * gi * gi;
            if (o.centered) {
                *v = o.alpha * *v + (1 - o.alpha) * gi;
                avg = sqrt(*m - *v * *v) + eps;
            } else {
                avg = sqrt(*m) + eps;
            }
            if (o.momentum > 0) {
                *x = o.momentum * *x + gi / avg;
                s->p[i] = w - lr * *x;
            } else {
                s->p[i] = w - lr * gi / avg;
            }
            break;
        }
        case NN_OPT_ADAGRAD:
            gi += wd * w;
            if (t == 1) *m = o.initial_accumulator_value;
            *m += gi * gi;
            s->p[i] = w - lr / (1 + (t - 1) * (double)o.lr_decay) * gi / (sqrt(*m) + eps);
            break;
        case NN_OPT_ADADELTA: {
            double d;
            gi += wd * w;
            *m = o.rho * *m + (1 - o.rho) * gi * gi;
            d = sqrt(*v + eps) / sqrt(*m + eps) * gi;
            *v = o.rho * *v + (1 - o.rho) * d * d;
            s->p[i] = w - lr * d;
            break;
        }
        case NN_OPT_LION:
            w *= 1 - lr * wd;
            s->p[i] = w - lr * sgn(b1 * *m + (1 - b1) * gi);
            *m = b2 * *m + (1 - b2) * gi;
            break;
        case NN_OPT_LAMB:
            s->p[i] = w - lr * (wn > 0 && xn > 0 ? wn / xn : 1) * u[i];
            break;
        case NN_OPT_LARS: {
            double trust = wn > 0 && xn > 0 ? o.trust_coef * wn / (xn + wn * wd + eps) : 1;
            gi = (gi + wd * w) * trust;
            if (o.momentum != 0) {
                *m = t == 1 ? gi : o.momentum * *m + (1 - o.dampening) * gi;
                gi = o.nesterov ? gi + o.momentum * *m : *m;
            }
            s->p[i] = w - lr * gi;
            break;
        }
        case NN_OPT_FTRL: { /* Keras: l2 += beta / (2 lr); m = accumulator, v = linear */
            double l2 = o.l2 + o.beta / (2 * lr), p = -o.lr_power, acc = t == 1 ? o.initial_accumulator_value : *m;
            double acc1 = acc + gi * gi, q;
            *v += gi - (pow(acc1, p) - pow(acc, p)) / lr * w;
            q = pow(acc1, p) / lr + 2 * l2;
            s->p[i] = (fmax(-o.l1, fmin(o.l1, *v)) - *v) / q;
            *m = acc1;
            break;
        }
        default: break;
        }
    }
}

/* PyTorch's schedulers in their recursive (chainable) form, lr for updates 0..n-1:
   another derivation than nn_lr_schedule_at's closed forms. */
static void ref_lrs(const nn_lr_schedule *s, double *out, int n) {
    double lr = s->lr, gamma = s->gamma ? s->gamma : 0.1, f = s->warmup_start_factor ? s->warmup_start_factor : 1.0 / 3;
    int t, k, W = s->warmup_steps, T = s->total_steps;
    for (t = 0; t < n; t++) {
        switch (s->kind) {
        case NN_LR_STEP: if (t > 0 && t % s->step_size == 0) lr *= gamma; break;
        case NN_LR_MULTISTEP:
            for (k = 0; k < s->n_milestones; k++) if (s->milestones[k] == t) lr *= gamma;
            break;
        case NN_LR_EXPONENTIAL: if (t > 0) lr *= gamma; break;
        case NN_LR_COSINE: case NN_LR_LINEAR:
            if (t < W) { /* LinearLR(f, 1, W) */
                lr = t == 0 ? s->lr * f : lr * (1 + (1 - f) / (W * f + (t - 1) * (1 - f)));
            } else if (t == W) {
                lr = s->lr;
            } else if (t <= T) {
                int c = t - W, S = T - W;
                if (s->kind == NN_LR_COSINE) /* CosineAnnealingLR's recursion */
                    lr = (1 + cos(REF_PI * c / S)) / (1 + cos(REF_PI * (c - 1) / S)) * (lr - s->min_lr) + s->min_lr;
                else { /* LinearLR(1, e, S), e = min_lr / lr */
                    double e = s->min_lr / s->lr;
                    lr = lr * (1 + (e - 1) / (S * 1.0 + (c - 1) * (e - 1)));
                }
            }
            break;
        case NN_LR_ONECYCLE: { /* OneCycleLR.get_lr, two phases, cos annealing */
            double initial = s->lr / 25, minlr = initial / 1e4, e1 = 0.3 * T - 1, e2 = T - 1, pct;
            if (t <= e1) {
                pct = t / e1;
                lr = s->lr + (initial - s->lr) / 2 * (cos(REF_PI * pct) + 1);
            } else {
                pct = (t - e1) / (e2 - e1);
                lr = minlr + (s->lr - minlr) / 2 * (cos(REF_PI * pct) + 1);
            }
            break;
        }
        default: break;
        }
        out[t] = lr;
    }
}

/* Extras of one case: a schedule, and a parameter group on p2. */
typedef struct opt_case {
    const nn_lr_schedule *sched;
    int group;           /* nn_graph_param_group(g, "p2", 0.5, 3) */
} opt_case;

static void check_optimizer_x(const t_env *e, const char *name, nn_optimizer o, opt_case x) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor p1, p2, c1, c2, loss;
    nn_compile_desc cd;
    nn_init zero;
    nn_optimizer ro = ref_defaults(o);
    float f[NP], cf[NP], cs[NP], before[N1];
    double lrm[NP], wdm[NP], gsum[NP], lrs[STEPS * 4];
    ref_state s;
    int i, t, k = o.accumulate_steps > 1 ? o.accumulate_steps : 1, j;
    char label[160];
    snprintf(label, sizeof label, "optimizer %s", name);
    if (!t_begin_op(e, label)) return;
    memset(&s, 0, sizeof s);
    memset(&zero, 0, sizeof zero);
    t_seed(99);
    for (i = 0; i < NP; i++) {
        f[i] = (float)t_uniform(-1, 1);
        cf[i] = (float)t_uniform(0.1, 3);
        s.p[i] = f[i];
        lrm[i] = x.group && i >= N1 ? 0.5 : 1;
        wdm[i] = x.group && i >= N1 ? 3 : 1;
        if (o.no_decay_1d && i < N1) wdm[i] = 0;
    }
    if (x.sched) {
        nn_lr_schedule rs = *x.sched;
        if (rs.lr == 0) rs.lr = ro.lr;
        ref_lrs(&rs, lrs, STEPS);
    } else {
        for (t = 0; t < STEPS; t++) lrs[t] = ro.lr;
    }
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    p1 = nn_param(g, "p1", nn_shape1(N1), zero);
    p2 = nn_param(g, "p2", nn_shape2(3, 11), zero);
    c1 = nn_input(g, "c1", NN_F32, nn_shape1(N1));
    c2 = nn_input(g, "c2", NN_F32, nn_shape2(3, 11));
    loss = nn_mul_scalar(g, nn_add(g, nn_sum(g, nn_mul(g, nn_mul(g, p1, p1), c1)), nn_sum(g, nn_mul(g, nn_mul(g, p2, p2), c2))), 0.5f);
    if (x.group && !T_OK(nn_graph_param_group(g, "p2", 0.5f, 3.0f), ctx)) goto done;
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer = o;
    if (x.sched) cd.schedule = *x.sched;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (t_survey_graph(g)) goto done; /* NN_TEST_SURVEY: compiled, not run */
    T_OK(nn_tensor_write(g, p1, f, N1 * 4), ctx);
    T_OK(nn_tensor_write(g, p2, f + N1, N2 * 4), ctx);
    for (t = 1; t <= STEPS; t++) {
        double got[NP], err;
        for (i = 0; i < NP; i++) gsum[i] = 0;
        for (j = 0; j < k; j++) { /* micro-batches: a different c each, so the mean matters */
            double sc = 1 + 0.25 * (((t - 1) * k + j) % 3);
            for (i = 0; i < NP; i++) {
                cs[i] = (float)(cf[i] * sc);
                gsum[i] += (double)cs[i] * s.p[i] / k;
            }
            T_OK(nn_tensor_write(g, c1, cs, N1 * 4), ctx);
            T_OK(nn_tensor_write(g, c2, cs + N1, N2 * 4), ctx);
            if (!T_OK(nn_graph_step(g), ctx)) goto done;
            if (k > 1 && j == 0) T_OK(nn_tensor_read(g, p1, before, N1 * 4), ctx);
            if (k > 1 && j + 1 < k) { /* no update yet */
                T_OK(nn_tensor_read(g, p1, f, N1 * 4), ctx);
                for (i = 0; i < N1; i++)
                    if (!T_CHECK(f[i] == before[i], "update %d, micro-step %d: p1 changed before the update", t, j)) goto done;
            }
        }
        ref_update(ro, &s, gsum, t, lrs[t - 1], lrm, wdm);
        T_OK(nn_tensor_read(g, p1, f, N1 * 4), ctx);
        T_OK(nn_tensor_read(g, p2, f + N1, N2 * 4), ctx);
        for (i = 0; i < NP; i++) got[i] = f[i];
        err = t_relerr(got, s.p, NP);
        if (t == 1) t_cover_graph(g, 0, -1); /* the optimizer kind's update, compared */
        if (!T_CHECK(err <= 1e-5, "%s update %d: parameters differ from the reference by %.3g", name, t, err)) break;
    }
done:
    nn_graph_destroy(g);
    t_end();
}

static void check_optimizer(const t_env *e, const char *name, nn_optimizer o) {
    opt_case x;
    memset(&x, 0, sizeof x);
    check_optimizer_x(e, name, o, x);
}
static nn_optimizer opt(nn_optimizer_kind kind, float lr) {
    nn_optimizer o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.lr = lr;
    return o;
}

/* nn_lr_schedule_at against the recursive forms, for every kind, over 40 updates. */
static void check_schedules(const t_env *e) {
    nn_lr_schedule sc[7];
    const char *names[7] = {"constant", "step", "multistep", "exponential", "cosine warmup", "linear warmup", "onecycle"};
    double ref[40];
    int k, t;
    if (!t_begin(e, "lr schedules vs PyTorch's recursive forms")) return;
    memset(sc, 0, sizeof sc);
    for (k = 0; k < 7; k++) {
        sc[k].kind = (nn_lr_schedule_kind)k;
        sc[k].lr = 0.1f;
    }
    sc[1].step_size = 7;
    sc[1].gamma = 0.5f;
    sc[2].milestones[0] = 3;
    sc[2].milestones[1] = 10;
    sc[2].milestones[2] = 25;
    sc[2].n_milestones = 3;
    sc[3].gamma = 0.93f;
    sc[4].warmup_steps = 5;
    sc[4].warmup_start_factor = 0.1f;
    sc[4].total_steps = 40;
    sc[4].min_lr = 0.001f;
    sc[5].warmup_steps = 8;
    sc[5].total_steps = 40;
    sc[5].min_lr = 0.005f;
    sc[6].total_steps = 40;
    for (k = 0; k < 7; k++) {
        ref_lrs(&sc[k], ref, 40);
        for (t = 0; t < 40; t++) {
            double got = t_lr_at(&sc[k], t);
            if (!T_CHECK(fabs(got - ref[t]) <= 1e-6 * ref[0] + 1e-5 * fabs(ref[t]), "%s: update %d: %.9g, PyTorch %.9g",
                         names[k], t, got, ref[t]))
                break;
        }
    }
    /* the default warm-up factor is LinearLR's 1/3; the cosine stays at min_lr after total */
    sc[4].warmup_start_factor = 0;
    T_CHECK(fabs(t_lr_at(&sc[4], 0) - 0.1 / 3) < 1e-8, "default warm-up start %.9g", t_lr_at(&sc[4], 0));
    T_CHECK(fabs(t_lr_at(&sc[4], 100) - 0.001) < 1e-8, "cosine after total_steps %.9g", t_lr_at(&sc[4], 100));
    t_end();
}

/* Accumulation transfers nothing and skips the update's launches between updates. */
static void check_accumulation_launches(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor p, c, loss;
    nn_compile_desc cd;
    nn_init one;
    nn_stats st[4];
    int i;
    if (!t_begin(e, "accumulate_steps: no transfer, update launches skipped")) return;
    memset(&one, 0, sizeof one);
    one.kind = NN_INIT_CONSTANT;
    one.a = 1;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    p = nn_param(g, "w", nn_shape2(4, 5), one);
    c = nn_input(g, "c", NN_F32, nn_shape2(4, 5));
    loss = nn_sum(g, nn_mul(g, p, c));
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer = opt(NN_OPT_LAMB, 0.1f);
    cd.optimizer.accumulate_steps = 3;
    cd.optimizer.clip_norm = 1.0f;
    cd.schedule.kind = NN_LR_COSINE;
    cd.schedule.total_steps = 10;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_fill(g, c, 0.5f), ctx);
    T_OK(nn_graph_finish(g), ctx);
    for (i = 0; i < 4; i++) { /* steps 1, 2: no update; 3: update; 4: none */
        nn_context_reset_stats(ctx);
        T_OK(nn_graph_step(g), ctx);
        st[i] = t_stats(ctx);
        T_CHECK(st[i].h2d_transfers == 0 && st[i].d2h_transfers == 0, "step %d transferred %llu/%llu times", i + 1,
                (unsigned long long)st[i].h2d_transfers, (unsigned long long)st[i].d2h_transfers);
    }
    T_OK(nn_graph_finish(g), ctx);
    T_CHECK(st[0].kernel_launches == st[1].kernel_launches && st[1].kernel_launches == st[3].kernel_launches &&
                st[2].kernel_launches > st[1].kernel_launches,
            "launches per step %llu %llu %llu %llu: the update should run on the third only",
            (unsigned long long)st[0].kernel_launches, (unsigned long long)st[1].kernel_launches,
            (unsigned long long)st[2].kernel_launches, (unsigned long long)st[3].kernel_launches);
done:
    nn_graph_destroy(g);
    t_end();
}

/* Adam's groups (src/ops/optim.c: update ops the schedule runs back to back are one
   launch, adam2's pairs, or opt_adam_multi's up to six on a CPU-tuned device) against the
   one-launch-a-parameter path (NN_OPT_MULTI=0): 5 parameters of odd sizes, AdamW with a
   param group's lr and wd multipliers and clip_norm, 3 steps: the same bits of every
   parameter, and on a device two launches fewer a step tuned for a GPU (a pair, a pair, one
   alone), four tuned for a CPU (the five in one group); the CPU backend has no launches to
   save. With multi 0 into *launches the launches of the last step. */
static int adam_pairs_run(const t_env *e, int multi, float *out, uint64_t *launches) {
    static const int sizes[5] = {133, 19, 37, 5, 17};
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor p[5], c[5], loss;
    nn_compile_desc cd;
    nn_init in;
    const char *old = getenv("NN_OPT_MULTI");
    char *saved = old ? strdup(old) : NULL, name[16];
    float cv[133];
    int i, j, off = 0, ok = 0;
    nn_result r;
    memset(&in, 0, sizeof in);
    memset(&loss, 0, sizeof loss);
    in.kind = NN_INIT_CONSTANT;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    for (i = 0; i < 5; i++) {
        nn_tensor t;
        snprintf(name, sizeof name, "%sp%d", i == 2 ? "g." : "", i);
        in.a = 0.3f + 0.1f * (float)i;
        p[i] = nn_param(g, name, nn_shape1(sizes[i]), in);
        c[i] = nn_input(g, name + (i == 2 ? 2 : 0), NN_F32, nn_shape1(sizes[i]));
        t = nn_sum(g, nn_mul(g, nn_mul(g, p[i], p[i]), c[i]));
        loss = i ? nn_add(g, loss, t) : t;
    }
    T_OK(nn_graph_param_group(g, "g.", 0.5f, 3.0f), ctx);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer = opt(NN_OPT_ADAMW, 0.05f);
    cd.optimizer.weight_decay = 0.1f;
    cd.optimizer.clip_norm = 4.0f;
    if (multi) unsetenv("NN_OPT_MULTI");
    else setenv("NN_OPT_MULTI", "0", 1);
    r = nn_graph_compile(g, &cd);
    if (saved) setenv("NN_OPT_MULTI", saved, 1);
    else unsetenv("NN_OPT_MULTI");
    if (!T_OK(r, ctx)) goto done;
    for (i = 0; i < 5; i++) {
        for (j = 0; j < sizes[i]; j++) cv[j] = (float)((j * 7 + i * 3) % 11) * 0.25f - 1.2f;
        T_OK(nn_tensor_write(g, c[i], cv, (size_t)sizes[i] * 4), ctx);
    }
    for (j = 0; j < 3; j++) {
        nn_context_reset_stats(ctx);
        T_OK(nn_graph_step(g), ctx);
        *launches = t_stats(ctx).kernel_launches;
    }
    for (i = 0; i < 5; i++) {
        T_OK(nn_tensor_read(g, p[i], out + off, (size_t)sizes[i] * 4), ctx);
        off += sizes[i];
    }
    ok = 1;
done:
    free(saved);
    nn_graph_destroy(g);
    return ok;
}

static void check_adam_pairs(const t_env *e) {
    float a[211], b[211];
    uint64_t la = 0, lb = 0;
    int i, diff = -1, dev = e->opencl ? (t_gpu_tuned(e) ? 2 : 4) : 0; /* launches saved: on devices */
    if (!t_begin(e, "adam groups: one launch for several parameters, the bits of one launch each")) return;
    memset(a, 0, sizeof a);
    memset(b, 1, sizeof b);
    if (adam_pairs_run(e, 0, a, &la) && adam_pairs_run(e, 1, b, &lb)) {
        for (i = 0; i < 211 && diff < 0; i++)
            if (memcmp(&a[i], &b[i], 4) != 0) diff = i;
        T_CHECK(diff < 0, "element %d: %.9g one launch a parameter, %.9g paired", diff, diff < 0 ? 0.0 : (double)a[diff],
                diff < 0 ? 0.0 : (double)b[diff]);
        T_CHECK(a[0] != 0.3f && a[0] == a[0], "the parameters did not move (%g)", (double)a[0]);
        T_CHECK(lb + (uint64_t)dev == la, "%llu launches a step grouped, %llu alone (expected %d fewer)", (unsigned long long)lb,
                (unsigned long long)la, dev);
    }
    t_end();
}

/* Weight decay off for 1-D parameters, lr/wd multipliers by name prefix, accumulation and
   schedules, each against the same reference. */
static void suite_optim_options(const t_env *e) {
    nn_optimizer o;
    nn_lr_schedule sc;
    opt_case x;
    memset(&x, 0, sizeof x);
    o = opt(NN_OPT_SGD, 0.1f);
    o.momentum = 0.9f;
    o.weight_decay = 0.2f;
    o.no_decay_1d = 1;
    check_optimizer(e, "sgd no_decay_1d", o);
    x.group = 1;
    check_optimizer_x(e, "sgd param_group p2 lr*0.5 wd*3 no_decay_1d", o, x);
    o = opt(NN_OPT_ADAMW, 0.05f);
    o.weight_decay = 0.1f;
    check_optimizer_x(e, "adamw param_group", o, x);
    o = opt(NN_OPT_RMSPROP, 0.01f);
    o.weight_decay = 0.1f;
    o.no_decay_1d = 1;
    check_optimizer_x(e, "rmsprop param_group no_decay_1d", o, x);
    o = opt(NN_OPT_LAMB, 0.05f);
    o.weight_decay = 0.1f;
    check_optimizer_x(e, "lamb param_group", o, x);
    memset(&x, 0, sizeof x);
    o = opt(NN_OPT_SGD, 0.1f);
    o.momentum = 0.9f;
    o.accumulate_steps = 3;
    check_optimizer(e, "sgd momentum accumulate_steps 3", o);
    o = opt(NN_OPT_ADAM, 0.05f);
    o.accumulate_steps = 2;
    o.clip_norm = 0.5f;
    check_optimizer(e, "adam accumulate_steps 2 clip_norm", o);
    o = opt(NN_OPT_NADAM, 0.05f);
    o.accumulate_steps = 4;
    o.clip_value = 0.3f;
    check_optimizer(e, "nadam accumulate_steps 4 clip_value", o);
    o = opt(NN_OPT_LARS, 2.0f);
    o.accumulate_steps = 2;
    o.momentum = 0.9f;
    check_optimizer(e, "lars accumulate_steps 2", o);
    o = opt(NN_OPT_SGD, 0.1f);
    o.clip_value = 0.2f;
    check_optimizer(e, "sgd clip_value", o);
    memset(&sc, 0, sizeof sc);
    sc.kind = NN_LR_STEP;
    sc.step_size = 3;
    sc.gamma = 0.5f;
    x.sched = &sc;
    check_optimizer_x(e, "sgd step schedule", o, x);
    memset(&sc, 0, sizeof sc);
    sc.kind = NN_LR_COSINE;
    sc.warmup_steps = 3;
    sc.total_steps = 8;
    sc.min_lr = 0.001f;
    o = opt(NN_OPT_ADAMW, 0.05f);
    check_optimizer_x(e, "adamw cosine warmup schedule", o, x);
    memset(&sc, 0, sizeof sc);
    sc.kind = NN_LR_ONECYCLE;
    sc.total_steps = 8;
    o = opt(NN_OPT_ADAM, 0.05f);
    o.accumulate_steps = 2;
    check_optimizer_x(e, "adam onecycle accumulate_steps 2", o, x);
    check_schedules(e);
    check_accumulation_launches(e);
}

/* NN_ZERO where a zero field would take a non-zero default: the exact 0 is what runs. */
static void suite_optim_zero(const t_env *e) {
    nn_optimizer o;
    o = opt(NN_OPT_ADAMW, 0.05f);
    o.weight_decay = NN_ZERO;
    check_optimizer(e, "adamw weight_decay NN_ZERO (no decay)", o);
    o = opt(NN_OPT_ADAM, 0.05f);
    o.beta1 = NN_ZERO;
    check_optimizer(e, "adam beta1 NN_ZERO", o);
    o = opt(NN_OPT_ADAMW, 0.05f);
    o.beta1 = NN_ZERO;
    o.beta2 = NN_ZERO;
    o.amsgrad = 1;
    check_optimizer(e, "adamw amsgrad betas NN_ZERO", o);
    o = opt(NN_OPT_NADAM, 0.05f);
    o.momentum_decay = NN_ZERO;
    check_optimizer(e, "nadam momentum_decay NN_ZERO", o);
    o = opt(NN_OPT_RMSPROP, 0.01f);
    o.alpha = NN_ZERO;
    check_optimizer(e, "rmsprop alpha NN_ZERO", o);
    o = opt(NN_OPT_LION, 0.01f);
    o.beta1 = NN_ZERO;
    check_optimizer(e, "lion beta1 NN_ZERO", o);
    o = opt(NN_OPT_FTRL, 0.1f);
    o.initial_accumulator_value = NN_ZERO;
    o.lr_power = NN_ZERO;
    check_optimizer(e, "ftrl initial_accumulator lr_power NN_ZERO", o);
    o = opt(NN_OPT_SGD, NN_ZERO);
    o.momentum = 0.9f;
    check_optimizer(e, "sgd lr NN_ZERO (frozen)", o);
}

/* The family added after SGD and Adam, each with its defaults and with its options. */
static void suite_optim_family(const t_env *e) {
    nn_optimizer o;
    o = opt(NN_OPT_ADAM, 0.05f);
    o.amsgrad = 1;
    check_optimizer(e, "amsgrad", o);
    o.weight_decay = 0.1f;
    o.clip_value = 0.5f;
    check_optimizer(e, "amsgrad weight_decay clip_value", o);
    o = opt(NN_OPT_ADAMW, 0.05f);
    o.amsgrad = 1;
    o.clip_norm = 0.5f;
    check_optimizer(e, "adamw amsgrad clip_norm", o);
    check_optimizer(e, "adamax defaults", opt(NN_OPT_ADAMAX, 0));
    o = opt(NN_OPT_ADAMAX, 0.05f);
    o.weight_decay = 0.1f;
    o.beta2 = 0.9f;
    check_optimizer(e, "adamax weight_decay beta2", o);
    check_optimizer(e, "nadam defaults", opt(NN_OPT_NADAM, 0));
    o = opt(NN_OPT_NADAM, 0.05f);
    o.weight_decay = 0.1f;
    o.momentum_decay = 0.01f;
    check_optimizer(e, "nadam weight_decay momentum_decay", o);
    o.decoupled_weight_decay = 1;
    check_optimizer(e, "nadam decoupled", o);
    check_optimizer(e, "radam defaults", opt(NN_OPT_RADAM, 0));
    o = opt(NN_OPT_RADAM, 0.05f);
    o.beta2 = 0.9f; /* rho_t passes 5 at update 6: both branches */
    o.weight_decay = 0.1f;
    check_optimizer(e, "radam beta2 0.9 weight_decay", o);
    o.decoupled_weight_decay = 1;
    check_optimizer(e, "radam decoupled", o);
    check_optimizer(e, "rmsprop defaults", opt(NN_OPT_RMSPROP, 0));
    o = opt(NN_OPT_RMSPROP, 0.01f);
    o.centered = 1;
    o.momentum = 0.9f;
    o.weight_decay = 0.1f;
    o.alpha = 0.9f;
    check_optimizer(e, "rmsprop centered momentum weight_decay", o);
    check_optimizer(e, "adagrad defaults", opt(NN_OPT_ADAGRAD, 0));
    o = opt(NN_OPT_ADAGRAD, 0.1f);
    o.lr_decay = 0.1f;
    o.initial_accumulator_value = 0.5f;
    o.weight_decay = 0.05f;
    check_optimizer(e, "adagrad lr_decay initial_accumulator", o);
    check_optimizer(e, "adadelta defaults", opt(NN_OPT_ADADELTA, 0));
    o = opt(NN_OPT_ADADELTA, 0.5f);
    o.rho = 0.8f;
    o.weight_decay = 0.1f;
    check_optimizer(e, "adadelta rho weight_decay", o);
    check_optimizer(e, "lion defaults", opt(NN_OPT_LION, 0));
    o = opt(NN_OPT_LION, 0.01f);
    o.weight_decay = 0.5f;
    o.beta1 = 0.8f;
    check_optimizer(e, "lion weight_decay beta1", o);
    check_optimizer(e, "lamb defaults", opt(NN_OPT_LAMB, 0));
    o = opt(NN_OPT_LAMB, 0.05f);
    o.weight_decay = 0.1f;
    o.clip_norm = 0.5f;
    check_optimizer(e, "lamb weight_decay clip_norm", o);
    check_optimizer(e, "lars defaults", opt(NN_OPT_LARS, 0));
    o = opt(NN_OPT_LARS, 5.0f);
    o.momentum = 0.9f;
    o.weight_decay = 0.1f;
    o.trust_coef = 0.02f;
    check_optimizer(e, "lars momentum weight_decay trust", o);
    o.nesterov = 1;
    o.dampening = 0;
    check_optimizer(e, "lars nesterov", o);
    check_optimizer(e, "ftrl defaults", opt(NN_OPT_FTRL, 0));
    o = opt(NN_OPT_FTRL, 0.1f);
    o.l1 = 0.05f;
    o.l2 = 0.1f;
    o.beta = 0.5f;
    o.lr_power = -0.6f;
    check_optimizer(e, "ftrl l1 l2 beta lr_power", o);
    suite_optim_options(e);
    check_adam_pairs(e);
    suite_optim_zero(e);
}

/* skip_nonfinite: runs good, bad (a NaN or Inf in the data makes one gradient element
   non-finite), good steps. The bad step leaves every parameter bitwise as it was and
   counts one skip; the last step updates again. For rules with no step-count dependence
   (same_as_clean), the parameters after good, bad, good equal those after good, good
   bitwise, so the optimizer state was left untouched too. Without skip_nonfinite the bad
   step makes p2 non-finite (the data really is bad; not for Lion, whose sign() of NaN is 0
   as torch.sign's: its parameters stay finite while its momentum turns NaN). */
static int skip_run(const t_env *e, nn_optimizer o, int skip, const int *bad, int n_steps, float bad_value, float *out,
                    int64_t *skipped) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor p1, p2, c1, c2;
    nn_compile_desc cd;
    nn_init zero;
    float f[NP], c[NP];
    int i, t, ok = 0;
    memset(&zero, 0, sizeof zero);
    t_seed(7);
    for (i = 0; i < NP; i++) {
        f[i] = (float)t_uniform(-1, 1);
        c[i] = (float)t_uniform(0.1, 3);
    }
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    p1 = nn_param(g, "p1", nn_shape1(N1), zero);
    p2 = nn_param(g, "p2", nn_shape2(3, 11), zero);
    c1 = nn_input(g, "c1", NN_F32, nn_shape1(N1));
    c2 = nn_input(g, "c2", NN_F32, nn_shape2(3, 11));
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mul_scalar(g, nn_add(g, nn_sum(g, nn_mul(g, nn_mul(g, p1, p1), c1)), nn_sum(g, nn_mul(g, nn_mul(g, p2, p2), c2))), 0.5f);
    o.skip_nonfinite = skip;
    cd.optimizer = o;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (t_survey_graph(g)) goto done; /* NN_TEST_SURVEY: compiled, not run */
    T_OK(nn_tensor_write(g, p1, f, N1 * 4), ctx);
    T_OK(nn_tensor_write(g, p2, f + N1, N2 * 4), ctx);
    T_OK(nn_tensor_write(g, c1, c, N1 * 4), ctx);
    for (t = 0; t < n_steps; t++) {
        float cb[N2];
        memcpy(cb, c + N1, sizeof cb);
        if (bad[t]) cb[5] = bad_value;
        T_OK(nn_tensor_write(g, c2, cb, N2 * 4), ctx);
        if (!T_OK(nn_graph_step(g), ctx)) goto done;
        T_OK(nn_tensor_read(g, p1, out + t * NP, N1 * 4), ctx);
        T_OK(nn_tensor_read(g, p2, out + t * NP + N1, N2 * 4), ctx);
    }
    ok = T_OK(nn_graph_skipped_steps(g, skipped), ctx);
done:
    nn_graph_destroy(g);
    return ok;
}

static void check_skip_nonfinite(const t_env *e, const char *name, nn_optimizer o, int same_as_clean, int raw_nan) {
    static const int bad3[3] = {0, 1, 0}, good2[2] = {0, 0};
    float run[3 * NP], clean[2 * NP], raw[3 * NP];
    int64_t skipped = -1, skipped_raw = -1;
    int i, finite;
    char label[160];
    snprintf(label, sizeof label, "optimizer skip_nonfinite: %s", name);
    if (!t_begin_op(e, label)) return; /* skip_run's survey hook ends it in NN_TEST_SURVEY */
    if (!skip_run(e, o, 1, bad3, 3, NAN, run, &skipped)) goto done;
    T_CHECK(memcmp(run, run + NP, NP * sizeof(float)) == 0, "a NaN gradient changed the parameters");
    T_CHECK(skipped == 1, "%lld skipped updates counted, not 1", (long long)skipped);
    T_CHECK(memcmp(run + NP, run + 2 * NP, NP * sizeof(float)) != 0, "the step after the skip did not update");
    for (i = 0, finite = 1; i < 3 * NP; i++) finite = finite && isfinite(run[i]);
    T_CHECK(finite, "a parameter is not finite");
    if (same_as_clean && skip_run(e, o, 1, good2, 2, 0, clean, &skipped))
        T_CHECK(memcmp(run + 2 * NP, clean + NP, NP * sizeof(float)) == 0 && skipped == 0,
                "good, NaN, good differs from good, good (the state changed), or %lld skips counted", (long long)skipped);
    if (skip_run(e, o, 1, bad3, 3, INFINITY, run, &skipped))
        T_CHECK(memcmp(run, run + NP, NP * sizeof(float)) == 0 && skipped == 1, "an Inf gradient was not skipped");
    if (raw_nan && skip_run(e, o, 0, bad3, 3, NAN, raw, &skipped_raw)) {
        for (i = N1, finite = 1; i < NP; i++) finite = finite && isfinite(raw[NP + i]);
        T_CHECK(!finite && skipped_raw == 0, "without skip_nonfinite the NaN step left p2 finite (the test's data is not bad)");
    }
done:
    t_end();
}

void suite_optim(const t_env *e) {
    nn_optimizer o;
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_SGD;
    o.lr = 0.1f;
    check_optimizer(e, "sgd", o);
    o.momentum = 0.9f;
    check_optimizer(e, "sgd momentum", o);
    o.dampening = 0.3f;
    o.weight_decay = 0.01f;
    check_optimizer(e, "sgd momentum dampening weight_decay", o);
    o.dampening = 0;
    o.nesterov = 1;
    check_optimizer(e, "sgd nesterov", o);
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_ADAM;
    o.lr = 0.05f;
    check_optimizer(e, "adam", o);
    o.weight_decay = 0.1f;
    o.beta1 = 0.8f;
    o.beta2 = 0.99f;
    o.eps = 1e-6f;
    check_optimizer(e, "adam weight_decay betas eps", o);
    o.clip_norm = 0.5f;
    check_optimizer(e, "adam clip_norm 0.5", o);
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_ADAMW;
    o.lr = 0.05f;
    check_optimizer(e, "adamw", o);
    o.weight_decay = 0.3f;
    o.clip_norm = 0.25f;
    check_optimizer(e, "adamw weight_decay clip_norm", o);
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_SGD;
    o.lr = 0.2f;
    o.momentum = 0.5f;
    o.clip_norm = 0.1f;
    check_optimizer(e, "sgd momentum clip_norm", o);
    suite_optim_family(e);
    {
        nn_optimizer k;
        k = opt(NN_OPT_SGD, 0.1f);
        k.momentum = 0.9f;
        k.weight_decay = 0.01f;
        check_skip_nonfinite(e, "sgd momentum weight_decay", k, 1, 1);
        k.clip_norm = 0.5f;
        check_skip_nonfinite(e, "sgd momentum clip_norm", k, 1, 1);
        check_skip_nonfinite(e, "rmsprop", opt(NN_OPT_RMSPROP, 0.01f), 1, 1);
        check_skip_nonfinite(e, "lion", opt(NN_OPT_LION, 0.01f), 1, 0);
        check_skip_nonfinite(e, "adam", opt(NN_OPT_ADAM, 0.05f), 0, 1);
        k = opt(NN_OPT_ADAMW, 0.05f);
        k.amsgrad = 1;
        k.clip_norm = 0.25f;
        check_skip_nonfinite(e, "adamw amsgrad clip_norm", k, 0, 1);
        check_skip_nonfinite(e, "lamb", opt(NN_OPT_LAMB, 0.01f), 0, 1);
        k = opt(NN_OPT_LARS, 0.1f);
        k.momentum = 0.9f;
        check_skip_nonfinite(e, "lars momentum", k, 1, 1);
    }
}
