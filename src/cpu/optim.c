/* The optimizer family's CPU side: SGD's and Adam's loops (OPT_SGD, OPT_ADAM), defaults,
   learning-rate schedules, parameter groups, the per-update constants the host computes,
   and the loops of the OPT_STEP and GRAD_ACC ops. kernels/optim.cl has the twin of every
   rule; the kinds are kernels/optim.h's list.

   One OPT_STEP node updates one parameter; its attributes (nn__optim_attr) are the
   nn_optimizer_kind and the parameter's lr and weight-decay multipliers. A rule sees:
     h[5]  hyperparameters fixed at compile time (nn__opt_hparams, a table per kind)
     c[4]  constants of the running update (bias corrections, ...), g->clock.c
     aux   up to three state tensors of the parameter's size (nn__opt_n_aux)
   LAMB and LARS need the L2 norms of whole tensors: LARS reduces |w| and |g| before its
   elementwise pass; LAMB writes its update u into the node's scratch, reduces |w| and |u|,
   then applies p -= lr * trust * u. The norms' sums of squares sit in the scratch too. */

#include "../../kernels/optim.h"
#include "../../kernels/storage.h"

/* ---- optimizers (PyTorch's update rules); g is scaled by clip first ---- */

static void nn__sgd_update(float *p, const float *grad, float *buf, int64_t n, float lr, float momentum,
                           float dampening, float wd, int nesterov, int first_step, float clip, float cv) {
    int64_t i;
    for (i = 0; i < n; i++) {
        float g = grad[i] * clip;
        g = (g > cv ? cv : g < -cv ? -cv : g) + wd * p[i];
        if (momentum != 0.0f) {
            float b = first_step ? g : momentum * buf[i] + (1.0f - dampening) * g;
            buf[i] = b;
            g = nesterov ? g + momentum * b : b;
        }
        p[i] -= lr * g;
    }
}

/* Adam and AdamW, one parameter tensor. keep = 1 - lr*wd for AdamW (decoupled decay) and
   l2 = wd for Adam; step = lr / (1 - beta1^t); inv_sbc2 = 1 / sqrt(1 - beta2^t):
   p = p*keep - step * m / (sqrt(v) * inv_sbc2 + eps), with g = clamp(grad*clip, +-cv) + l2*p. */
typedef struct nn__adam_args {
    float *p, *m, *v;
    const float *g;
    int64_t n;
    float clip, b1, b2, step, inv_sbc2, eps, keep, l2, cv;
} nn__adam_args;

static void nn__adam_range(const nn__adam_args *a, int64_t i0, int64_t i1) {
    int64_t i;
    for (i = i0; i < i1; i++) {
        float w = a->p[i], g = a->g[i] * a->clip;
        g = (g > a->cv ? a->cv : g < -a->cv ? -a->cv : g) + a->l2 * w;
        float m = a->b1 * a->m[i] + (1.0f - a->b1) * g;
        float v = a->b2 * a->v[i] + (1.0f - a->b2) * g * g;
        a->m[i] = m;
        a->v[i] = v;
        a->p[i] = w * a->keep - a->step * m / (sqrtf(v) * a->inv_sbc2 + a->eps);
    }
}

#if defined(NN__VM_X86)
/* The same update eight lanes at a time: sqrtf's errno semantics keep compilers from
   vectorising the scalar loop at -O2. */
__attribute__((target("avx2,fma"))) static void nn__adam_range_avx2(const nn__adam_args *a, int64_t i0, int64_t i1) {
    __m256 clip = _mm256_set1_ps(a->clip), l2 = _mm256_set1_ps(a->l2), b1 = _mm256_set1_ps(a->b1);
    __m256 c1 = _mm256_set1_ps(1.0f - a->b1), b2 = _mm256_set1_ps(a->b2), c2 = _mm256_set1_ps(1.0f - a->b2);
    __m256 keep = _mm256_set1_ps(a->keep), step = _mm256_set1_ps(a->step), isb = _mm256_set1_ps(a->inv_sbc2);
    __m256 eps = _mm256_set1_ps(a->eps), cv = _mm256_set1_ps(a->cv), ncv = _mm256_set1_ps(-a->cv);
    int64_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        __m256 w = _mm256_loadu_ps(a->p + i);
        /* min/max return their second operand when one is NaN: x second, so NaN stays */
        __m256 gc = _mm256_max_ps(ncv, _mm256_min_ps(cv, _mm256_mul_ps(_mm256_loadu_ps(a->g + i), clip)));
        __m256 g = _mm256_add_ps(gc, _mm256_mul_ps(l2, w));
        __m256 m = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(a->m + i)), _mm256_mul_ps(c1, g));
        __m256 v = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(a->v + i)), _mm256_mul_ps(c2, _mm256_mul_ps(g, g)));
        __m256 den = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(v), isb), eps);
        _mm256_storeu_ps(a->m + i, m);
        _mm256_storeu_ps(a->v + i, v);
        _mm256_storeu_ps(a->p + i, _mm256_sub_ps(_mm256_mul_ps(w, keep), _mm256_div_ps(_mm256_mul_ps(step, m), den)));
    }
    nn__adam_range(a, i, i1);
}
#endif

/* Chunks are whole multiples of 8 elements, so the vector and scalar code see the same
   elements for any thread count (the scalar tail is always the tensor's last n % 8) and
   the result has the same bits with 1 thread or 8. */
static void nn__adam_task(void *arg, int t, int n_tasks) {
    const nn__adam_args *a = (const nn__adam_args *)arg;
    int64_t chunk = ((a->n + n_tasks - 1) / n_tasks + 7) / 8 * 8, i0 = chunk * t;
    int64_t i1 = i0 + chunk < a->n ? i0 + chunk : a->n;
    if (i0 >= i1) return;
#if defined(NN__VM_X86)
    if (nn__vm_isa() >= 1) {
        nn__adam_range_avx2(a, i0, i1);
        return;
    }
#endif
    nn__adam_range(a, i0, i1);
}

static void nn__adam_update(nn__threadpool *pool, float *p, const float *grad, float *m, float *v, int64_t n, float lr,
                            float b1, float b2, float eps, float wd, int decoupled, float bc1, float bc2, float clip,
                            float cv) {
    nn__adam_args a;
    a.p = p;
    a.g = grad;
    a.m = m;
    a.v = v;
    a.n = n;
    a.clip = clip;
    a.b1 = b1;
    a.b2 = b2;
    a.step = lr / bc1;
    a.inv_sbc2 = 1.0f / sqrtf(bc2);
    a.eps = eps;
    a.keep = decoupled ? 1.0f - lr * wd : 1.0f;
    a.l2 = decoupled ? 0.0f : wd;
    a.cv = cv;
    nn__threadpool_run(pool, nn__adam_task, &a, n >= NN__PAR_MIN ? nn__threadpool_size(pool) : 1);
}


/* ---- defaults ---- */

static nn_optimizer nn__opt_defaults(nn_optimizer o) {
    int k = o.kind;
    float lr;
    switch (k) {
    case NN_OPT_SGD: case NN_OPT_RMSPROP: case NN_OPT_ADAGRAD: lr = 1e-2f; break;
    case NN_OPT_ADAMAX: case NN_OPT_NADAM: lr = 2e-3f; break;
    case NN_OPT_ADADELTA: case NN_OPT_LARS: lr = 1.0f; break;
    case NN_OPT_LION: lr = 1e-4f; break;
    default: lr = 1e-3f; break;
    }
    o.lr = nn__deff(o.lr, lr);
    o.momentum = nn__deff(o.momentum, 0.0f);
    o.dampening = nn__deff(o.dampening, 0.0f);
    o.weight_decay = nn__deff(o.weight_decay, k == NN_OPT_ADAMW ? 1e-2f : 0.0f);
    o.beta1 = nn__deff(o.beta1, 0.9f);
    o.beta2 = nn__deff(o.beta2, k == NN_OPT_LION ? 0.99f : 0.999f);
    o.eps = nn__deff(o.eps, k == NN_OPT_ADAGRAD ? 1e-10f : (k == NN_OPT_ADADELTA || k == NN_OPT_LAMB) ? 1e-6f : 1e-8f);
    o.clip_norm = nn__deff(o.clip_norm, 0.0f);
    o.clip_value = nn__deff(o.clip_value, 0.0f);
    o.momentum_decay = nn__deff(o.momentum_decay, 4e-3f);
    o.alpha = nn__deff(o.alpha, 0.99f);
    o.lr_decay = nn__deff(o.lr_decay, 0.0f);
    o.initial_accumulator_value = nn__deff(o.initial_accumulator_value, k == NN_OPT_FTRL ? 0.1f : 0.0f);
    o.rho = nn__deff(o.rho, 0.9f);
    o.trust_coef = nn__deff(o.trust_coef, 1e-3f);
    o.l1 = nn__deff(o.l1, 0.0f);
    o.l2 = nn__deff(o.l2, 0.0f);
    o.beta = nn__deff(o.beta, 0.0f);
    o.lr_power = nn__deff(o.lr_power, -0.5f);
    o.accumulate_steps = nn__defi(o.accumulate_steps, 1);
    return o;
}

/* The optimizer's name in "nn.optimizer" and in messages (kernels/optim.h's list, by nn_optimizer_kind). */
#define NN__OPT_NAME(E, name) name,
static const char *nn__opt_kind_name(int k) {
    static const char *const names[] = {NN__OPTIMIZERS(NN__OPT_NAME)};
    return k >= 0 && k < NN__OPT_COUNT ? names[k] : "?";
}
#undef NN__OPT_NAME

/* What nn__opt_defaults leaves that no optimizer takes. */
static nn_result nn__opt_check(nn_graph *g, const nn_optimizer *o) {
    if ((int)o->kind < 0 || (int)o->kind >= NN__OPT_COUNT)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: optimizer kind %d is not one of nn_optimizer_kind",
                        (int)o->kind);
    if (o->accumulate_steps < 1)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: accumulate_steps %d is not >= 1", o->accumulate_steps);
    {   /* the ranges torch.optim checks, and NaN nowhere: each field by name and value */
        struct { const char *name; float v, lo, hi; int hi_open; } f[] = {
            {"lr", o->lr, 0, 3.4e38f, 0},
            {"eps", o->eps, 0, 3.4e38f, 0},
            {"momentum", o->momentum, 0, 3.4e38f, 0},
            {"dampening", o->dampening, -3.4e38f, 3.4e38f, 0},
            {"weight_decay", o->weight_decay, 0, 3.4e38f, 0},
            {"beta1", o->beta1, 0, 1, o->kind != NN_OPT_LION},
            {"beta2", o->beta2, 0, 1, o->kind != NN_OPT_LION},
            {"clip_norm", o->clip_norm, 0, 3.4e38f, 0},
            {"clip_value", o->clip_value, 0, 3.4e38f, 0},
            {"momentum_decay", o->momentum_decay, 0, 3.4e38f, 0},
            {"alpha", o->alpha, 0, 3.4e38f, 0},
            {"lr_decay", o->lr_decay, 0, 3.4e38f, 0},
            {"initial_accumulator_value", o->initial_accumulator_value, 0, 3.4e38f, 0},
            {"rho", o->rho, 0, 1, 0},
            {"trust_coef", o->trust_coef, 0, 3.4e38f, 0},
            {"l1", o->l1, 0, 3.4e38f, 0},
            {"l2", o->l2, 0, 3.4e38f, 0},
            {"beta", o->beta, 0, 3.4e38f, 0},
            {"lr_power", o->lr_power, -3.4e38f, 0, 0},
            {"skip_nonfinite", (float)o->skip_nonfinite, 0, 1, 0},
            {"stochastic_rounding", (float)o->stochastic_rounding, 0, 1, 0},
        };
        size_t k;
        for (k = 0; k < sizeof f / sizeof f[0]; k++) {
            float v = f[k].v;
            if (!(v >= f[k].lo) || !(f[k].hi_open ? v < f[k].hi : v <= f[k].hi))
                return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: optimizer %s = %g is outside %s%g, %g%s",
                                f[k].name, (double)v, "[", (double)f[k].lo, (double)f[k].hi, f[k].hi_open ? ")" : "]");
        }
    }
    return NN_OK;
}

/* State tensors per parameter, in aux[] order (checkpoints save them by this order). */
static int nn__opt_n_aux(const nn_optimizer *o) {
    switch (o->kind) {
    case NN_OPT_SGD: return o->momentum != 0.0f;           /* momentum buffer */
    case NN_OPT_ADAM: case NN_OPT_ADAMW: return o->amsgrad ? 3 : 2; /* m, v, max v */
    case NN_OPT_RMSPROP: return o->momentum > 0.0f ? 3 : o->centered ? 2 : 1; /* square avg, grad avg, buffer */
    case NN_OPT_ADAGRAD: return 1;                         /* sum of squares */
    case NN_OPT_LION: return 1;                            /* m */
    case NN_OPT_LARS: return o->momentum != 0.0f;          /* momentum buffer */
    default: return 2; /* Adamax (m, u), NAdam, RAdam, LAMB (m, v), AdaDelta (square avg,
                          delta avg), FTRL (accumulator n, linear z) */
    }
}

/* Whether the kind runs as OPT_STEP (the others are OPT_SGD and OPT_ADAM). */
static int nn__opt_generic(const nn_optimizer *o) {
    if (o->kind == NN_OPT_SGD) return 0;
    if (o->kind == NN_OPT_ADAM || o->kind == NN_OPT_ADAMW) return o->amsgrad != 0;
    return 1;
}

/* h[] per kind: see each rule in nn__opt_rule. */
static void nn__opt_hparams(const nn_optimizer *o, float h[5]) {
    memset(h, 0, 5 * sizeof *h);
    switch (o->kind) {
    case NN_OPT_RMSPROP: h[0] = o->alpha; h[2] = o->eps; h[3] = o->momentum; h[4] = (float)o->centered; break;
    case NN_OPT_ADAGRAD: h[2] = o->eps; h[4] = o->initial_accumulator_value; break;
    case NN_OPT_ADADELTA: h[0] = o->rho; h[2] = o->eps; break;
    case NN_OPT_LARS:
        h[0] = o->momentum; h[1] = o->dampening; h[2] = o->eps; h[3] = (float)o->nesterov; h[4] = o->trust_coef;
        break;
    case NN_OPT_FTRL: h[0] = o->l1; h[1] = o->l2; h[2] = o->beta; h[3] = o->lr_power; h[4] = o->initial_accumulator_value; break;
    default: /* the Adam family, Lion, LAMB */
        h[0] = o->beta1; h[1] = o->beta2; h[2] = o->eps;
        h[3] = (float)(o->kind == NN_OPT_ADAMW || o->decoupled_weight_decay);
        break;
    }
}

/* ---- learning-rate schedules ---- */

/* PyTorch's _cosine_anneal: from a (pct 0) to b (pct 1). */
static double nn__cos_anneal(double a, double b, double pct) { return b + (a - b) / 2.0 * (cos(3.14159265358979323846 * pct) + 1.0); }

/* The schedule with its defaults in place (every field, so NN_ZERO never reaches a formula). */
static nn_lr_schedule nn__schedule_defaults(const nn_lr_schedule *in) {
    nn_lr_schedule s = *in;
    int i;
    s.lr = nn__deff(s.lr, 0.0f);
    s.gamma = nn__deff(s.gamma, 0.1f);
    s.step_size = nn__defi(s.step_size, 1);
    for (i = 0; i < NN_LR_MAX_MILESTONES; i++) s.milestones[i] = nn__defi(s.milestones[i], 0);
    s.warmup_steps = nn__defi(s.warmup_steps, 0);
    s.warmup_start_factor = nn__deff(s.warmup_start_factor, 1.0f / 3.0f);
    s.total_steps = nn__defi(s.total_steps, 0);
    s.min_lr = nn__deff(s.min_lr, 0.0f);
    s.pct_start = nn__deff(s.pct_start, 0.3f);
    s.div_factor = nn__deff(s.div_factor, 25.0f);
    s.final_div_factor = nn__deff(s.final_div_factor, 1e4f);
    return s;
}

static float nn__lr_at(const nn_lr_schedule *sched, int64_t t) {
    nn_lr_schedule d;
    const nn_lr_schedule *s = &d;
    double lr, gamma, f;
    int i, n;
    if (!sched) return 0.0f;
    d = nn__schedule_defaults(sched);
    lr = s->lr;
    gamma = s->gamma;
    if (t < 0) t = 0;
    switch (s->kind) {
    case NN_LR_STEP: return (float)(lr * pow(gamma, (double)(t / (s->step_size > 0 ? s->step_size : 1))));
    case NN_LR_MULTISTEP:
        for (i = n = 0; i < s->n_milestones && i < NN_LR_MAX_MILESTONES; i++) n += s->milestones[i] <= t;
        return (float)(lr * pow(gamma, (double)n));
    case NN_LR_EXPONENTIAL: return (float)(lr * pow(gamma, (double)t));
    case NN_LR_COSINE: case NN_LR_LINEAR: {
        int64_t W = s->warmup_steps > 0 ? s->warmup_steps : 0, S = s->total_steps - W;
        double pct;
        if (t < W) {
            f = s->warmup_start_factor;
            return (float)(lr * (f + (1.0 - f) * (double)t / (double)W));
        }
        pct = S > 0 ? (double)(t - W < S ? t - W : S) / (double)S : 1.0;
        if (s->kind == NN_LR_COSINE) return (float)nn__cos_anneal(lr, s->min_lr, pct);
        return (float)(lr + (s->min_lr - lr) * pct);
    }
    case NN_LR_ONECYCLE: {
        double pct_start = s->pct_start, div = s->div_factor, fdiv = s->final_div_factor;
        double lo = lr / div, end1 = pct_start * (double)s->total_steps - 1.0, end2 = (double)s->total_steps - 1.0;
        if ((double)t <= end1) return (float)nn__cos_anneal(lo, lr, end1 > 0 ? (double)t / end1 : 1.0);
        f = end2 > end1 ? ((double)t - end1) / (end2 - end1) : 1.0;
        return (float)nn__cos_anneal(lr, lo / fdiv, f < 1.0 ? f : 1.0);
    }
    default: return (float)lr;
    }
}

NN_API nn_result nn_lr_schedule_at(const nn_lr_schedule *s, int64_t t, float *lr) {
    if (!lr) return NN_ERR_INVALID_ARGUMENT;
    *lr = 0.0f;
    if (!s || s->lr == 0.0f) return NN_ERR_INVALID_ARGUMENT; /* 0 is "the optimizer's rate", and there is none here */
    *lr = nn__lr_at(s, t);
    return NN_OK;
}

NN_API nn_result nn_graph_set_schedule(nn_graph *g, const nn_lr_schedule *s) {
    nn_lr_schedule d;
    float base;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (nn__graph_orphaned(g, "nn_graph_set_schedule") != NN_OK) return NN_ERR_STATE;
    if (!s) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_set_schedule: the schedule is NULL");
    d = nn__schedule_defaults(s);
    if ((int)s->kind < NN_LR_CONSTANT || s->kind > NN_LR_ONECYCLE || s->n_milestones < 0 ||
        s->n_milestones > NN_LR_MAX_MILESTONES || !(d.lr >= 0.0f) || d.step_size < 1 || !(d.div_factor > 0.0f) ||
        !(d.final_div_factor > 0.0f))
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT,
                        "nn_graph_set_schedule: kind %d, %d milestones, lr %g, step_size %d or a div_factor out of range",
                        (int)s->kind, s->n_milestones, d.lr, d.step_size);
    if ((s->kind == NN_LR_COSINE || s->kind == NN_LR_LINEAR) && (d.warmup_steps < 0 || d.total_steps <= d.warmup_steps))
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT,
                        "nn_graph_set_schedule: a %s schedule needs total_steps > warmup_steps >= 0 (it anneals over "
                        "the steps between), not total_steps %d, warmup_steps %d",
                        s->kind == NN_LR_COSINE ? "cosine" : "linear", d.total_steps, d.warmup_steps);
    if (s->kind == NN_LR_ONECYCLE && d.total_steps < 1)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT,
                        "nn_graph_set_schedule: a one-cycle schedule needs total_steps >= 1, not total_steps %d", d.total_steps);
    base = g->schedule.lr;
    g->schedule = *s;
    if (s->lr == 0.0f) g->schedule.lr = base; /* NN_ZERO: a rate of 0 */
    return NN_OK;
}

/* ---- parameter groups ---- */

typedef struct nn__pgroup { char *prefix; float lr_mult, wd_mult; } nn__pgroup;

NN_API nn_result nn_graph_param_group(nn_graph *g, const char *prefix, float lr_mult, float wd_mult) {
    nn__pgroup *p;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (!prefix) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_param_group: the prefix is NULL");
    if (g->compiled) return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_param_group: call it before nn_graph_compile");
    if (!(lr_mult >= 0.0f) || !(wd_mult >= 0.0f))
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_param_group: multipliers %g, %g are not >= 0", lr_mult, wd_mult);
    p = (nn__pgroup *)NN_REALLOC(g->groups, (size_t)(g->n_groups + 1) * sizeof *p);
    if (!p) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_param_group: out of memory");
    g->groups = p;
    p += g->n_groups;
    p->prefix = nn__strdup(prefix);
    if (!p->prefix) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_param_group: out of memory");
    p->lr_mult = lr_mult;
    p->wd_mult = wd_mult;
    g->n_groups++;
    return NN_OK;
}

static void nn__groups_free(nn_graph *g) {
    int i;
    for (i = 0; i < g->n_groups; i++) NN_FREE(g->groups[i].prefix);
    NN_FREE(g->groups);
    g->groups = NULL;
    g->n_groups = 0;
}

/* The multipliers of parameter node p: its last matching group's, then no_decay_1d. */
static void nn__param_mults(const nn_graph *g, const nn__node *p, float *lr_mult, float *wd_mult) {
    int i;
    *lr_mult = *wd_mult = 1.0f;
    for (i = g->n_groups - 1; i >= 0; i--) {
        const char *pre = g->groups[i].prefix;
        if (p->name && strncmp(p->name, pre, strlen(pre)) == 0) {
            *lr_mult = g->groups[i].lr_mult;
            *wd_mult = g->groups[i].wd_mult;
            break;
        }
    }
    if (g->opt.no_decay_1d && p->shape.ndim <= 1) *wd_mult = 0.0f;
}

/* ---- the host's part of each update ---- */

/* Called by nn_graph_step before it runs: whether this step updates the parameters and,
   if so, advances the clock and sets this update's rate and constants (doubles, as
   PyTorch computes its scalars). */
static int nn__opt_begin(nn_graph *g) {
    const nn_optimizer *o = &g->opt;
    nn__opt_clock *k = &g->clock;
    double t, b1 = o->beta1, b2 = o->beta2, bc1, bc2;
    if (g->step % (uint64_t)g->accum_steps) return 0;
    k->t++;
    t = (double)k->t;
    g->lr = nn__lr_at(&g->schedule, (int64_t)k->t - 1);
    bc1 = 1.0 - pow(b1, t);
    bc2 = 1.0 - pow(b2, t);
    memset(k->c, 0, sizeof k->c);
    k->c[3] = k->t == 1; /* first update: state starts from its initial value */
    switch (o->kind) {
    case NN_OPT_ADAM: case NN_OPT_ADAMW: case NN_OPT_LAMB:
        k->c[0] = (float)(1.0 / bc1);
        k->c[1] = (float)(1.0 / sqrt(bc2));
        break;
    case NN_OPT_ADAMAX: k->c[0] = (float)(1.0 / bc1); break;
    case NN_OPT_NADAM: {
        double mu = b1 * (1.0 - 0.5 * pow(0.96, t * o->momentum_decay));
        double mu_next = b1 * (1.0 - 0.5 * pow(0.96, (t + 1.0) * o->momentum_decay));
        if (k->t == 1) k->mu_prod = 1.0;
        k->mu_prod *= mu;
        k->c[0] = (float)(1.0 / bc2);
        k->c[1] = (float)((1.0 - mu) / (1.0 - k->mu_prod));
        k->c[2] = (float)(mu_next / (1.0 - k->mu_prod * mu_next));
        break;
    }
    case NN_OPT_RADAM: {
        double rho_inf = 2.0 / (1.0 - b2) - 1.0, rho_t = rho_inf - 2.0 * t * pow(b2, t) / bc2;
        k->c[0] = (float)(1.0 / bc1);
        if (rho_t > 5.0) { /* the variance is tractable: rectified adaptive step */
            k->c[1] = (float)(sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) * sqrt(bc2));
            k->c[2] = 1.0f;
        }
        break;
    }
    case NN_OPT_ADAGRAD: k->c[0] = (float)(1.0 / (1.0 + (t - 1.0) * o->lr_decay)); break;
    default: break;
    }
    return 1;
}

/* ---- CPU bodies ---- */

typedef struct nn__optk {
    int kind;
    float lr, wd, cv;  /* this parameter's rate and decay; clip value (FLT_MAX: none) */
    float h[5], c[4];
    float wn2, gn2;    /* LARS: sums of squares of w and g; LAMB: of w and u */
} nn__optk;

/* One element of one update. g is the gradient after clipping; s0..s2 the state (NULL
   where the kind keeps less). The rules, in torch.optim's order of operations: */
static void nn__opt_rule(const nn__optk *k, float *p, float g, float *s0, float *s1, float *s2) {
    float w = *p, lr = k->lr, wd = k->wd, h0 = k->h[0], h1 = k->h[1], eps = k->h[2], h3 = k->h[3], h4 = k->h[4];
    const float *c = k->c;
    switch (k->kind) {
    case NN_OPT_ADAM: case NN_OPT_ADAMW: { /* AMSGrad. h: b1 b2 eps decoupled; c: 1/bc1, 1/sqrt(bc2) */
        if (h3 != 0.0f) w *= 1.0f - lr * wd;
        else g += wd * w;
        *s0 = h0 * *s0 + (1.0f - h0) * g;
        *s1 = h1 * *s1 + (1.0f - h1) * g * g;
        *s2 = *s2 > *s1 ? *s2 : *s1;
        *p = w - lr * c[0] * *s0 / (sqrtf(*s2) * c[1] + eps);
        return;
    }
    case NN_OPT_ADAMAX: /* h: b1 b2 eps; c: 1/bc1. s0 m, s1 infinity norm u */
        g += wd * w;
        *s0 = h0 * *s0 + (1.0f - h0) * g;
        *s1 = fmaxf(h1 * *s1, fabsf(g) + eps);
        *p = w - lr * c[0] * *s0 / *s1;
        return;
    case NN_OPT_NADAM: { /* h: b1 b2 eps decoupled; c: 1/bc2, (1-mu)/(1-prod mu), mu'/(1-prod mu * mu') */
        float den;
        if (h3 != 0.0f) w *= 1.0f - lr * wd;
        else g += wd * w;
        *s0 = h0 * *s0 + (1.0f - h0) * g;
        *s1 = h1 * *s1 + (1.0f - h1) * g * g;
        den = sqrtf(*s1 * c[0]) + eps;
        *p = w - lr * (c[1] * g + c[2] * *s0) / den;
        return;
    }
    case NN_OPT_RADAM: /* h: b1 b2 eps decoupled; c: 1/bc1, rect * sqrt(bc2), rectified? */
        if (h3 != 0.0f) w *= 1.0f - lr * wd;
        else g += wd * w;
        *s0 = h0 * *s0 + (1.0f - h0) * g;
        *s1 = h1 * *s1 + (1.0f - h1) * g * g;
        if (c[2] != 0.0f) *p = w - lr * c[0] * *s0 * c[1] / (sqrtf(*s1) + eps);
        else *p = w - lr * c[0] * *s0;
        return;
    case NN_OPT_RMSPROP: { /* h: alpha _ eps momentum centered. s0 square avg, s1 grad avg, s2 buffer */
        float avg;
        g += wd * w;
        *s0 = h0 * *s0 + (1.0f - h0) * g * g;
        if (h4 != 0.0f) {
            *s1 = h0 * *s1 + (1.0f - h0) * g;
            avg = sqrtf(*s0 - *s1 * *s1) + eps;
        } else {
            avg = sqrtf(*s0) + eps;
        }
        if (h3 > 0.0f) {
            *s2 = h3 * *s2 + g / avg;
            *p = w - lr * *s2;
        } else {
            *p = w - lr * g / avg;
        }
        return;
    }
    case NN_OPT_ADAGRAD: /* h: _ _ eps _ initial accumulator; c: 1/(1 + (t-1) lr_decay), _, _, first */
        g += wd * w;
        *s0 = (c[3] != 0.0f ? h4 : *s0) + g * g;
        *p = w - lr * c[0] * g / (sqrtf(*s0) + eps);
        return;
    case NN_OPT_ADADELTA: { /* h: rho _ eps. s0 square avg, s1 delta avg */
        float d;
        g += wd * w;
        *s0 = h0 * *s0 + (1.0f - h0) * g * g;
        d = sqrtf(*s1 + eps) / sqrtf(*s0 + eps) * g;
        *s1 = h0 * *s1 + (1.0f - h0) * d * d;
        *p = w - lr * d;
        return;
    }
    case NN_OPT_LION: { /* h: b1 b2. s0 m */
        float u = h0 * *s0 + (1.0f - h0) * g;
        w *= 1.0f - lr * wd;
        *p = w - lr * (float)((u > 0.0f) - (u < 0.0f));
        *s0 = h1 * *s0 + (1.0f - h1) * g;
        return;
    }
    case NN_OPT_LAMB: /* first pass: h: b1 b2 eps; c: 1/bc1, 1/sqrt(bc2). s2 = u (scratch) */
        *s0 = h0 * *s0 + (1.0f - h0) * g;
        *s1 = h1 * *s1 + (1.0f - h1) * g * g;
        *s2 = *s0 * c[0] / (sqrtf(*s1) * c[1] + eps) + wd * w;
        return;
    case NN_OPT_LARS: { /* h: momentum dampening eps nesterov trust_coef; c: _, _, _, first */
        float wn = sqrtf(k->wn2), gn = sqrtf(k->gn2);
        float trust = wn > 0.0f && gn > 0.0f ? h4 * wn / (gn + wd * wn + eps) : 1.0f;
        g = (g + wd * w) * trust;
        if (h0 != 0.0f) {
            *s0 = c[3] != 0.0f ? g : h0 * *s0 + (1.0f - h1) * g;
            g = h3 != 0.0f ? g + h0 * *s0 : *s0;
        }
        *p = w - lr * g;
        return;
    }
    case NN_OPT_FTRL: { /* h: l1 l2 beta lr_power initial accumulator; c: _, _, _, first. s0 n, s1 z */
        float n0 = c[3] != 0.0f ? h4 : *s0, n1 = n0 + g * g, q, beta = k->h[2];
        float p1 = powf(n1, -h3), p0 = powf(n0, -h3);
        *s1 += g - (p1 - p0) / lr * w;
        q = (p1 + beta) / lr + 2.0f * h1;
        *p = fabsf(*s1) > h0 ? (((*s1 > 0.0f) ? h0 : -h0) - *s1) / q : 0.0f;
        *s0 = n1;
        return;
    }
    default: return;
    }
}

typedef struct nn__optrun {
    nn__optk k;
    float *p, *s[3], *u;
    const float *g;
    float scale;
    int64_t n;
} nn__optrun;

static float nn__clampf(float x, float lim) { return x > lim ? lim : x < -lim ? -lim : x; }

static void nn__opt_task(void *arg, int t, int n_tasks) {
    const nn__optrun *a = (const nn__optrun *)arg;
    int64_t chunk = (a->n + n_tasks - 1) / n_tasks, i0 = chunk * t, i1 = i0 + chunk < a->n ? i0 + chunk : a->n, i;
    for (i = i0; i < i1; i++)
        nn__opt_rule(&a->k, a->p + i, nn__clampf(a->g[i] * a->scale, a->k.cv), a->s[0] ? a->s[0] + i : NULL,
                     a->s[1] ? a->s[1] + i : NULL, a->u ? a->u + i : a->s[2] ? a->s[2] + i : NULL);
}

/* Sums of squares in a fixed order (double, like the reductions on the device in spirit). */
static double nn__sumsq(const float *x, int64_t n, float scale, float cv) {
    double s = 0.0;
    int64_t i;
    for (i = 0; i < n; i++) {
        double v = nn__clampf(x[i] * scale, cv);
        s += v * v;
    }
    return s;
}

/* The arguments every backend's rule gets for OPT_STEP node n. */
static float nn__opt_cv(const nn_graph *g) { return g->opt.clip_value > 0.0f ? g->opt.clip_value : 3.40282347e38f; }

static void nn__opt_args(const nn_graph *g, const nn__node *n, nn__optk *k) {
    memset(k, 0, sizeof *k);
    k->kind = n->a.optim.kind;
    k->lr = g->lr * n->a.optim.lr_mult;
    k->wd = g->opt.weight_decay * n->a.optim.wd_mult;
    k->cv = nn__opt_cv(g);
    nn__opt_hparams(&g->opt, k->h);
    memcpy(k->c, g->clock.c, sizeof k->c);
}

/* w: the parameter's float32 values (its buffer, or a 16-bit parameter's copy) */
static void nn__opt_step_cpu(nn_graph *g, const nn__node *n, float *w) {
    const nn__node *p = &g->nodes[n->in[0]];
    nn__optrun a;
    int i, nt;
    memset(&a, 0, sizeof a);
    nn__opt_args(g, n, &a.k);
    a.p = w;
    a.g = g->nodes[n->in[1]].buf.host;
    a.scale = n->n_in > 2 ? g->nodes[n->in[2]].buf.host[0] : 1.0f;
    if (a.scale < 0.0f) return; /* skipped: a gradient is not finite (skip_gate) */
    a.n = p->numel;
    for (i = 0; i < n->n_aux; i++) a.s[i] = n->aux[i].host;
    if (a.k.kind == NN_OPT_LAMB) a.u = n->scratch_buf.host;
    if (a.k.kind == NN_OPT_LARS) {
        a.k.wn2 = (float)nn__sumsq(a.p, a.n, 1.0f, 3.40282347e38f);
        a.k.gn2 = (float)nn__sumsq(a.g, a.n, a.scale, a.k.cv);
    }
    nt = a.n >= NN__PAR_MIN ? nn__threadpool_size(g->ctx->threads) : 1;
    nn__threadpool_run(g->ctx->threads, nn__opt_task, &a, nt);
    if (a.k.kind == NN_OPT_LAMB) { /* second pass: the trust ratio |w| / |u| */
        double wn = sqrt(nn__sumsq(a.p, a.n, 1.0f, 3.40282347e38f)), un = sqrt(nn__sumsq(a.u, a.n, 1.0f, 3.40282347e38f));
        float step = a.k.lr * (float)(wn > 0.0 && un > 0.0 ? wn / un : 1.0);
        int64_t j;
        for (j = 0; j < a.n; j++) a.p[j] -= step * a.u[j];
    }
}

/* acc = (reset ? 0 : acc) + g * inv_k: the running mean of a cycle's gradients. */
static void nn__grad_acc_cpu(float *acc, const float *g, int64_t n, float inv_k, int reset) {
    int64_t i;
    for (i = 0; i < n; i++) acc[i] = (reset ? 0.0f : acc[i]) + g[i] * inv_k;
}

/* A 16-bit parameter's float32 copy w [n] back into its bfloat16 storage p, rounded
   stochastically with the bits nn__sr_bits(i, key) (kernels/storage.h; kernels/optim.cl's
   param_round): the same bits whatever the thread count. */
static void nn__param_round_sr(uint16_t *p, const float *w, int64_t n, uint32_t key) {
    int64_t i;
    for (i = 0; i < n; i++) p[i] = nn__f32_to_bf16_sr(w[i], nn__sr_bits((uint32_t)i, key));
}
