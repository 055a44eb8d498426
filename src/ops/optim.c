/* The optimizer ops, one block per op: the parameters' updates (OPT_SGD, OPT_ADAM, OPT_STEP)
   and what runs before them (GRAD_ACC, NONFINITE_COUNT, SKIP_GATE, loss scaling's
   LOSS_SCALE and LOSS_SEED; the clipping's
   GRAD_SUMSQ and CLIP_SCALE are in src/ops/reduce.c), each with its registry aliases, CPU
   body (the rules, defaults and schedules in src/cpu/optim.c) and kernel launches
   (kernels/optim.cl). No op has a gradient: they run after autograd, added by the compile
   hooks of the first block. The kinds are kernels/optim.h's list. */
#include "../base/internal.h"
#include "../base/registry.h"
#include "../../kernels/optim.h"
#include "../../kernels/storage.h"

/* ==== the optimizer's compile hooks (src/ops/registry.c's nn__optim): settings and
   schedule, then the update ops after autograd ==== */

/* nn_loss_scale with its defaults into *o (0 fields as documented in api.h; o->enabled: 1
   on, 0 off), or an error naming the bad field. */
static nn_result nn__loss_scale_settings(nn_graph *g, const nn_compile_desc *d, nn_loss_scale *o) {
    const nn_loss_scale *s = &d->loss_scale;
    const char *fn = "nn_graph_compile";
    int on;
    memset(o, 0, sizeof *o);
    if (s->enabled != 0 && s->enabled != 1 && s->enabled != NN_ZERO)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: loss_scale.enabled %d is not 0 (the default), 1 (on) or NN_ZERO (off)",
                        fn, s->enabled);
    o->enabled = on = s->enabled == 1 || (s->enabled == 0 && g->precision == NN_PRECISION_FP16 && d->optimizer.kind != NN_OPT_NONE);
    o->init_scale = nn__deff(s->init_scale, 65536.0f);
    o->growth_factor = nn__deff(s->growth_factor, 2.0f);
    o->backoff_factor = nn__deff(s->backoff_factor, 0.5f);
    o->growth_interval = nn__defi(s->growth_interval, 2000);
    if (!(o->init_scale > 0.0f && o->init_scale <= 3.40282347e38f))
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: loss_scale.init_scale %g must be finite and > 0", fn,
                        (double)o->init_scale);
    if (!(o->growth_factor > 1.0f && o->growth_factor <= 3.40282347e38f))
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: loss_scale.growth_factor %g must be finite and > 1", fn,
                        (double)o->growth_factor);
    if (!(o->backoff_factor > 0.0f && o->backoff_factor < 1.0f))
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: loss_scale.backoff_factor %g must be in (0, 1)", fn,
                        (double)o->backoff_factor);
    if (o->growth_interval < 1)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: loss_scale.growth_interval %d must be >= 1", fn,
                        o->growth_interval);
    if (on && d->optimizer.kind == NN_OPT_NONE)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: loss_scale.enabled 1 needs an optimizer (the scale is undone by "
                        "the update)", fn);
    return NN_OK;
}

/* 16-bit parameters (nn_graph_desc.param_dtype): what their update can do, checked before
   autograd (the update ops' block below) */
static nn_result nn__param16_check(nn_graph *g) {
    int i, n16 = 0;
    for (i = 0; i < g->n_nodes && g->opt.kind != NN_OPT_NONE; i++) {
        const nn__node *p = &g->nodes[i];
        const char *dt;
        if (p->op != NN__OP_PARAM || g->params->p[p->param].buffer || !nn__dtype_half(p->dtype)) continue;
        dt = nn__dtype_name(p->dtype);
        n16++;
        if (g->opt.kind == NN_OPT_LAMB || g->opt.kind == NN_OPT_LARS)
            return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: optimizer %s does not update %s parameters "
                            "(%s: its trust ratio's norms are not kept in 16 bits); use param_dtype NN_F32 or another optimizer",
                            nn__opt_kind_name(g->opt.kind), dt, p->name);
        if (g->opt.stochastic_rounding && p->dtype != NN_BF16)
            return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: stochastic_rounding rounds bfloat16 "
                            "parameters, and %s is %s", p->name, dt);
    }
    if (g->opt.stochastic_rounding && n16 == 0 && g->opt.kind != NN_OPT_NONE) /* it would do nothing */
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: stochastic_rounding rounds bfloat16 "
                        "parameters, and this graph's are float32: set nn_graph_desc.param_dtype = NN_BF16 (with "
                        "precision NN_PRECISION_BF16), or stochastic_rounding = 0");
    return NN_OK;
}

static nn_result nn__optim_configure(nn_graph *g, const nn_compile_desc *d) {
    nn_loss_scale ls;
    nn_result r;
    r = nn__loss_scale_settings(g, d, &ls);
    if (r != NN_OK) return r;
    g->opt = nn__opt_defaults(d->optimizer);
    r = nn__opt_check(g, &g->opt);
    if (r == NN_OK) r = nn__param16_check(g);
    if (r != NN_OK) return r;
    g->accum_steps = g->opt.accumulate_steps;
    g->loss_scaling = ls.enabled;
    g->first_update_node = -1;
    g->schedule.lr = g->opt.lr;
    r = nn_graph_set_schedule(g, &d->schedule);
    if (r != NN_OK) return r;
    g->lr = nn__lr_at(&g->schedule, 0);
    return NN_OK;
}

static int nn__optim_updates(const nn_graph *g) { return g->opt.kind != NN_OPT_NONE; }

/* Adds gradient accumulation, clipping and one update op per trainable parameter (the
   rules, defaults and multipliers are in cpu/optim.c). Nodes from g->first_update_node on
   run on update steps only. */
static int nn__loss_scale_op(nn_graph *g, int cnt, int sumsq, const nn_loss_scale *ls);

static nn_result nn__add_optimizer(nn_graph *g) {
    int i, n0 = g->n_nodes, scale = -1, acc = -1, k = g->accum_steps;
    int op = nn__opt_generic(&g->opt) ? NN__OP_OPT_STEP : g->opt.kind == NN_OPT_SGD ? NN__OP_OPT_SGD : NN__OP_OPT_ADAM;
    nn_loss_scale ls;
    if (g->opt.kind == NN_OPT_NONE) return NN_OK;
    if (nn__loss_scale_settings(g, &g->compile_desc, &ls) != NN_OK) return NN_ERR_INVALID_ARGUMENT; /* configure checked it */
    for (i = 0; i < n0 && k > 1; i++) { /* every step: each gradient into its running mean */
        int a;
        if (g->nodes[i].op != NN__OP_PARAM || g->nodes[i].grad < 0) continue;
        a = nn__op1(g, NN__OP_GRAD_ACC, NN_F32, g->nodes[i].shape, g->nodes[i].grad).id;
        if (a < 0) return g->status;
        g->nodes[a].a.optim.inv_steps = 1.0f / (float)k;
        g->nodes[a].is_output = 1; /* persistent across the cycle, and what nn_graph_grad reads */
        g->nodes[i].grad = a;
    }
    g->first_update_node = g->n_nodes;
    if (g->zero) { /* ZeRO stage 1 (src/dist/dist.c updates this rank's slice): the gradients only */
        for (i = 0; i < n0; i++)
            if (g->nodes[i].op == NN__OP_PARAM && g->nodes[i].grad >= 0) g->nodes[g->nodes[i].grad].is_output = 1;
        return g->status;
    }
    if (g->opt.clip_norm > 0.0f) {
        for (i = 0; i < n0; i++) {
            if (g->nodes[i].op != NN__OP_PARAM || g->nodes[i].grad < 0) continue;
            acc = acc < 0 ? nn__op1(g, NN__OP_GRAD_SUMSQ, NN_F32, nn_shape1(1), g->nodes[i].grad).id
                          : nn__op2(g, NN__OP_GRAD_SUMSQ, NN_F32, nn_shape1(1), g->nodes[i].grad, acc).id;
        }
        if (acc >= 0 && !ls.enabled) { /* with loss scaling the scale node clips the unscaled norm */
            scale = nn__clip_scale_op(g, acc, g->opt.clip_norm).id;
        }
    }
    if (g->opt.skip_nonfinite || ls.enabled) { /* the gate replaces the clipping coefficient */
        int cnt = -1, in[2];
        for (i = 0; i < n0; i++) {
            if (g->nodes[i].op != NN__OP_PARAM || g->nodes[i].grad < 0) continue;
            cnt = cnt < 0 ? nn__op1(g, NN__OP_NONFINITE_COUNT, NN_F32, nn_shape1(1), g->nodes[i].grad).id
                          : nn__op2(g, NN__OP_NONFINITE_COUNT, NN_F32, nn_shape1(1), g->nodes[i].grad, cnt).id;
            if (cnt < 0) return g->status;
        }
        if (cnt >= 0 && ls.enabled) {
            scale = nn__loss_scale_op(g, cnt, acc, &ls);
            if (scale < 0) return g->status;
        } else if (cnt >= 0) {
            in[0] = cnt;
            in[1] = scale;
            scale = nn__new_node(g, NN__OP_SKIP_GATE, NN_F32, nn_shape1(2), in, scale >= 0 ? 2 : 1);
            if (scale < 0) return g->status;
            g->nodes[scale].is_output = 1; /* y[1], the count of skipped updates, persists */
            g->skip_node = scale;
        }
    }
    for (i = 0; i < n0; i++) {
        nn__node *u;
        nn_shape none;
        int id;
        int gr = g->nodes[i].grad, half = nn__dtype_half(g->nodes[i].dtype);
        if (g->nodes[i].op != NN__OP_PARAM || gr < 0) continue;
        memset(&none, 0, sizeof none);
        if (nn__dtype_half(g->nodes[gr].dtype)) gr = nn__policy_f32_id(g, gr); /* the rules read float32 */
        if (gr < 0) break;
        id = scale >= 0 ? nn__op3(g, op, NN_F32, none, i, gr, scale).id : nn__op2(g, op, NN_F32, none, i, gr).id;
        if (id < 0) break;
        u = &g->nodes[id];
        u->numel = 0;
        u->is_output = 1; /* a root: it has an effect */
        u->n_aux = nn__opt_n_aux(&g->opt);
        u->a.optim.kind = g->opt.kind;
        nn__param_mults(g, &g->nodes[i], &u->a.optim.lr_mult, &u->a.optim.wd_mult);
        if (g->opt.kind == NN_OPT_LAMB) u->scratch = g->nodes[i].numel + 2; /* u, then two sums of squares */
        if (g->opt.kind == NN_OPT_LARS) u->scratch = 2;
        if (half) u->scratch = g->nodes[i].numel; /* the float32 copy the rule runs on (LAMB, LARS refused above) */
    }
    return g->status;
}

/* ==== 16-bit parameters (nn_graph_desc.param_dtype), the update ops' part: the parameter
   p (in[0]) is widened into the update node's scratch [numel], the rule runs there in
   float32 (its state and gradient float32 as for any parameter), and the copy is written
   back rounded to nearest even, or stochastically with nn_optimizer.stochastic_rounding
   (bfloat16; kernels/storage.h's nn__f32_to_bf16_sr). No float32 copy outlives the update:
   the scratch is the arena's, reused by the next update. ==== */

static int nn__param16(const nn_graph *g, const nn__node *n) { return nn__dtype_half(g->nodes[n->in[0]].dtype); }

/* the stochastic rounding's key for the parameter of update node n at update t: the graph's
   seed, the update count and the parameter's index mixed (kernels/storage.h's nn__sr_mix) */
static uint32_t nn__sr_key(const nn_graph *g, const nn__node *n) {
    uint32_t h = nn__sr_mix((uint32_t)(g->seed >> 32) ^ 0x5352u);
    h = nn__sr_mix(h ^ (uint32_t)g->seed);
    h = nn__sr_mix(h ^ (uint32_t)(g->clock.t >> 32));
    h = nn__sr_mix(h ^ (uint32_t)g->clock.t);
    return nn__sr_mix(h ^ (uint32_t)g->nodes[n->in[0]].param);
}

/* the values the CPU rule updates: the parameter's own, or a 16-bit one widened into the scratch */
static float *nn__param16_widen(nn_graph *g, nn__node *n) {
    nn__node *p = &g->nodes[n->in[0]];
    if (!nn__dtype_half(p->dtype)) return p->buf.host;
    nn__cast(g->ctx->threads, p->buf.host, p->dtype, n->scratch_buf.host, NN_F32, p->numel);
    return n->scratch_buf.host;
}

static void nn__param16_round(nn_graph *g, nn__node *n) {
    nn__node *p = &g->nodes[n->in[0]];
    if (!nn__dtype_half(p->dtype)) return;
    if (g->opt.stochastic_rounding)
        nn__param_round_sr((uint16_t *)(void *)p->buf.host, n->scratch_buf.host, p->numel, nn__sr_key(g, n));
    else
        nn__cast(g->ctx->threads, n->scratch_buf.host, NN_F32, p->buf.host, p->dtype, p->numel);
}

/* the buffer an update kernel updates: the parameter's, or a 16-bit one's float32 copy */
static const nn__buf *nn__param16_buf(nn_graph *g, nn__node *n) {
    return nn__param16(g, n) ? &n->scratch_buf : &g->nodes[n->in[0]].buf;
}

static nn_result nn__launch_param_widen(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id], *p = &g->nodes[n->in[0]];
    if (!nn__dtype_half(p->dtype)) return NN_OK;
    {
        NN__KSTART(param_widen, "optim", "param_widen", p->numel);
        l->store = p->dtype;
        k.p = &p->buf;
        k.w = &n->scratch_buf;
        k.n = (int)p->numel;
        return nn__kargs_param_widen(l, &k);
    }
}

static void nn__update_param_round(nn_graph *g, nn__launch *l) {
    nn__k_param_round k;
    memset(&k, 0, sizeof k);
    k.key = nn__sr_key(g, &g->nodes[l->node]);
    nn__kstep_param_round(l, &k);
}

static nn_result nn__launch_param_round(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id], *p = &g->nodes[n->in[0]];
    if (!nn__dtype_half(p->dtype)) return NN_OK;
    {
        NN__KSTART(param_round, "optim", "param_round", p->numel);
        l->store = p->dtype;
        l->update = nn__update_param_round;
        k.w = &n->scratch_buf;
        k.p = &p->buf;
        k.n = (int)p->numel;
        k.sr = g->opt.stochastic_rounding;
        k.key = 0;
        return nn__kargs_param_round(l, &k);
    }
}

/* ==== sgd: OPT_SGD, parameter p [any] and its gradient (and the clipping coefficient [1])
   -> p updated in place, torch.optim.SGD (momentum, dampening, Nesterov, L2 decay); the
   momentum buffer is aux[0]. Output: none (a root with an effect). ==== */

#define nn__grad_opt_sgd nn__grad_none
#define nn__plan_opt_sgd nn__no_plan

static nn_result nn__cpu_opt_sgd(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    nn__node *p = &g->nodes[in[0]];
    float clip = n->n_in > 2 ? NN__F(in[2])[0] : 1.0f;
    if (clip < 0.0f) return NN_OK; /* skipped: a gradient is not finite (skip_gate) */
    nn__sgd_update(nn__param16_widen(g, n), NN__F(in[1]), n->n_aux ? n->aux[0].host : NULL, p->numel, g->lr * n->a.optim.lr_mult,
                   g->opt.momentum, g->opt.dampening, g->opt.weight_decay * n->a.optim.wd_mult, g->opt.nesterov, g->clock.t == 1,
                   clip, nn__opt_cv(g));
    nn__param16_round(g, n);
    return NN_OK;
}

/* the scheduled rate with the parameter's multiplier, and whether this is the first update */
static void nn__update_sgd(nn_graph *g, nn__launch *l) {
    nn__k_sgd k;
    memset(&k, 0, sizeof k);
    k.lr = g->lr * g->nodes[l->node].a.optim.lr_mult;
    k.first_step = g->clock.t == 1;
    nn__kstep_sgd(l, &k);
}

static nn_result nn__launch_sgd_rule(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__node *p = &g->nodes[n->in[0]];
    NN__KSTART(sgd, "optim", "sgd", p->numel);
    l->update = nn__update_sgd;
    k.p = nn__param16_buf(g, n);
    k.grad = &g->nodes[n->in[1]].buf;
    k.buf = n->n_aux ? &n->aux[0] : &g->one;
    k.clip = n->n_in > 2 ? &g->nodes[n->in[2]].buf : &g->one;
    k.n = (int)p->numel;
    k.lr = g->lr;
    k.momentum = g->opt.momentum;
    k.dampening = g->opt.dampening;
    k.wd = g->opt.weight_decay * n->a.optim.wd_mult;
    k.nesterov = g->opt.nesterov;
    k.first_step = 1;
    k.cv = nn__opt_cv(g);
    return nn__kargs_sgd(l, &k);
}

static nn_result nn__launch_opt_sgd(nn_graph *g, int id) {
    nn_result r = nn__launch_param_widen(g, id);
    if (r == NN_OK) r = nn__launch_sgd_rule(g, id);
    return r == NN_OK ? nn__launch_param_round(g, id) : r;
}

/* ==== adam: OPT_ADAM, parameter p [any] and its gradient (and the clipping coefficient)
   -> p updated in place, torch.optim.Adam and AdamW (decoupled decay) without AMSGrad
   (which runs as OPT_STEP); m and v are aux[0] and aux[1]. ==== */

#define nn__grad_opt_adam nn__grad_none
#define nn__plan_opt_adam nn__no_plan

/* Adam's bias corrections for the update about to run, in double as PyTorch computes them. */
static void nn__adam_bc(const nn_graph *g, float *bc1, float *bc2) {
    *bc1 = (float)(1.0 - pow((double)g->opt.beta1, (double)g->clock.t));
    *bc2 = (float)(1.0 - pow((double)g->opt.beta2, (double)g->clock.t));
}

static nn_result nn__cpu_opt_adam(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    nn__node *p = &g->nodes[in[0]];
    float clip = n->n_in > 2 ? NN__F(in[2])[0] : 1.0f, bc1, bc2;
    if (clip < 0.0f) return NN_OK; /* skipped: a gradient is not finite (skip_gate) */
    nn__adam_bc(g, &bc1, &bc2);
    nn__adam_update(g->ctx->threads, nn__param16_widen(g, n), NN__F(in[1]), n->aux[0].host, n->aux[1].host, p->numel,
                    g->lr * n->a.optim.lr_mult, g->opt.beta1, g->opt.beta2, g->opt.eps, g->opt.weight_decay * n->a.optim.wd_mult,
                    g->opt.kind == NN_OPT_ADAMW, bc1, bc2, clip, nn__opt_cv(g));
    nn__param16_round(g, n);
    return NN_OK;
}

/* the scheduled rate with the parameter's multiplier, and this update's bias corrections */
static void nn__update_adam(nn_graph *g, nn__launch *l) {
    nn__k_adam k;
    memset(&k, 0, sizeof k);
    k.lr = g->lr * g->nodes[l->node].a.optim.lr_mult;
    nn__adam_bc(g, &k.bc1, &k.bc2);
    nn__kstep_adam(l, &k);
}

static nn_result nn__launch_adam_rule(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__node *p = &g->nodes[n->in[0]];
    int cpu = g->ctx->dev.cpu_tuned; /* 16 elements an item */
    NN__KSTART(adam, "optim", cpu ? "opt_adam_vec" : "adam", cpu ? (p->numel + 15) / 16 : p->numel);
    l->update = nn__update_adam;
    k.p = nn__param16_buf(g, n);
    k.grad = &g->nodes[n->in[1]].buf;
    k.m = &n->aux[0];
    k.v = &n->aux[1];
    k.clip = n->n_in > 2 ? &g->nodes[n->in[2]].buf : &g->one;
    k.n = (int)p->numel;
    k.lr = g->lr;
    k.b1 = g->opt.beta1;
    k.b2 = g->opt.beta2;
    k.eps = g->opt.eps;
    k.wd = g->opt.weight_decay * n->a.optim.wd_mult;
    k.decoupled = g->opt.kind == NN_OPT_ADAMW;
    k.bc1 = 1.0f;
    k.bc2 = 1.0f;
    k.cv = nn__opt_cv(g);
    return nn__kargs_adam(l, &k);
}

/* Pairs: two OPT_ADAM nodes that the schedule runs back to back, of float32 parameters and
   the same clipping coefficient, are one launch of adam2 (on devices tuned as CPUs groups of
   up to six, opt_adam_multi: nn__adam_group below), recorded by the second: each element's update is the same expression as adam's, so the
   bits are too, and nothing runs between the two. In a run of such nodes the 1st and 2nd
   pair, the 3rd and 4th, ...; a last odd one launches alone. NN_OPT_MULTI=0 turns pairs off
   (tests/test_optim.c compares the two). On PoCL in a 2-core VM, where the runtime's work
   between two kernels is 10-16 us with its two worker threads (NN_CL_PROFILE), the MLP step
   (784-256-128-10, 3 pairs, 30 -> 27 launches) took 1.213 ms against 1.262 unpaired and
   1.182 against 1.218 the other way round (medians of 25 alternating blocks of 40 steps in
   one process), and the same with one worker thread (1.118 vs 1.114 ms), where that work
   is about 2 us. */
static int nn__adam_pairable(const nn_graph *g, int a, int b) {
    const nn__node *x = &g->nodes[a], *y = &g->nodes[b];
    return x->op == NN__OP_OPT_ADAM && y->op == NN__OP_OPT_ADAM && !nn__param16(g, x) && !nn__param16(g, y) &&
           x->n_in == y->n_in && (x->n_in <= 2 || x->in[2] == y->in[2]) && x->fused == 0 && y->fused == 0;
}

/* node id's group: a run of pairable OPT_ADAM nodes back to back in the schedule is cut, from
   its start, into groups of 2 (adam2), or of NN__ADAM_GROUP on devices tuned as CPUs, where a
   group of 2 or more is one launch of adam6 (opt_adam_multi: opt_adam_vec's 16 elements an item,
   each parameter's items after the one's before): PoCL's
   work between two kernels is several microseconds, and the MLP's six parameters become one
   launch. Returns the group's size when id is its last node (id launches the group, whose
   first schedule position goes to *first), 0 when a later node of its group launches it, 1
   when id is alone. */
#define NN__ADAM_GROUP 6
static int nn__adam_group(const nn_graph *g, int id, int *first) {
    const char *env = getenv("NN_OPT_MULTI");
    int s = g->nodes[id].first, j = s, size = g->ctx->dev.cpu_tuned ? NN__ADAM_GROUP : 2, last = s;
    *first = s;
    if ((env && strcmp(env, "0") == 0) || s < 0 || s >= g->n_sched || g->sched[s] != id) return 1;
    while (j > 0 && g->nodes[g->sched[j - 1]].first == j - 1 && nn__adam_pairable(g, g->sched[j - 1], g->sched[j])) j--;
    *first = s - (s - j) % size;
    while (last + 1 < g->n_sched && last + 1 - *first < size && g->nodes[g->sched[last + 1]].first == last + 1 &&
           nn__adam_pairable(g, g->sched[last], g->sched[last + 1]))
        last++;
    return last == s ? s - *first + 1 : 0;
}

static void nn__update_adam2(nn_graph *g, nn__launch *l) {
    nn__k_adam2 k;
    /* the pair's first node runs just before l->node in the schedule (nn__launch_adam2's
       record): no partner search, and no environment read, at every step */
    int a = g->sched[g->nodes[l->node].first - 1];
    memset(&k, 0, sizeof k);
    k.lr = g->lr * g->nodes[a].a.optim.lr_mult;
    k.lr1 = g->lr * g->nodes[l->node].a.optim.lr_mult;
    nn__adam_bc(g, &k.bc1, &k.bc2);
    nn__kstep_adam2(l, &k);
}

/* the pair (a, id), recorded as id's launch */
static nn_result nn__launch_adam2(nn_graph *g, int a, int id) {
    nn__node *x = &g->nodes[a], *y = &g->nodes[id];
    int64_t n0 = g->nodes[x->in[0]].numel, n1 = g->nodes[y->in[0]].numel;
    NN__KSTART(adam2, "optim", "adam2", n0 + n1);
    l->update = nn__update_adam2;
    k.p = &g->nodes[x->in[0]].buf;
    k.grad = &g->nodes[x->in[1]].buf;
    k.m = &x->aux[0];
    k.v = &x->aux[1];
    k.p1 = &g->nodes[y->in[0]].buf;
    k.grad1 = &g->nodes[y->in[1]].buf;
    k.m1 = &y->aux[0];
    k.v1 = &y->aux[1];
    k.clip = y->n_in > 2 ? &g->nodes[y->in[2]].buf : &g->one;
    k.n = (int)n0;
    k.n1 = (int)n1;
    k.lr = g->lr;
    k.lr1 = g->lr;
    k.b1 = g->opt.beta1;
    k.b2 = g->opt.beta2;
    k.eps = g->opt.eps;
    k.wd = g->opt.weight_decay * x->a.optim.wd_mult;
    k.wd1 = g->opt.weight_decay * y->a.optim.wd_mult;
    k.decoupled = g->opt.kind == NN_OPT_ADAMW;
    k.bc1 = 1.0f;
    k.bc2 = 1.0f;
    k.cv = nn__opt_cv(g);
    return nn__kargs_adam2(l, &k);
}

/* the rate, each parameter's multiplier applied in the kernel, and the bias corrections */
static void nn__update_adam6(nn_graph *g, nn__launch *l) {
    nn__k_adam6 k;
    memset(&k, 0, sizeof k);
    k.lr = g->lr;
    nn__adam_bc(g, &k.bc1, &k.bc2);
    nn__kstep_adam6(l, &k);
}

/* the group of `count` (2 to 6) at schedule positions first.., recorded as its last node's launch */
static nn_result nn__launch_adam6(nn_graph *g, int first, int count) {
    int id = g->sched[first + count - 1], j, sizes[8], lrm[8], wd[8];
    int64_t items = 0;
    const nn__node *o[6];
    for (j = 0; j < 8; j++) sizes[j] = lrm[j] = wd[j] = 0;
    for (j = 0; j < 6; j++) {
        o[j] = &g->nodes[g->sched[first + (j < count ? j : 0)]];
        if (j < count) {
            float f = o[j]->a.optim.lr_mult, w = g->opt.weight_decay * o[j]->a.optim.wd_mult;
            sizes[j] = (int)g->nodes[o[j]->in[0]].numel;
            memcpy(&lrm[j], &f, sizeof f);
            memcpy(&wd[j], &w, sizeof w);
            items += (sizes[j] + 15) / 16;
        }
    }
    {
        NN__KSTART(adam6, "optim", "opt_adam_multi", items);
        l->update = nn__update_adam6;
#define NN__ADAM6_SET(J)                                \
    k.p##J = &g->nodes[o[J]->in[0]].buf;                \
    k.g##J = &g->nodes[o[J]->in[1]].buf;                \
    k.m##J = &o[J]->aux[0];                             \
    k.v##J = &o[J]->aux[1];
        NN__ADAM6_SET(0)
        NN__ADAM6_SET(1)
        NN__ADAM6_SET(2)
        NN__ADAM6_SET(3)
        NN__ADAM6_SET(4)
        NN__ADAM6_SET(5)
#undef NN__ADAM6_SET
        k.clip = o[0]->n_in > 2 ? &g->nodes[o[0]->in[2]].buf : &g->one;
        k.count = count;
        k.n = sizes;
        k.lrm = lrm;
        k.wd = wd;
        k.lr = g->lr;
        k.b1 = g->opt.beta1;
        k.b2 = g->opt.beta2;
        k.eps = g->opt.eps;
        k.decoupled = g->opt.kind == NN_OPT_ADAMW;
        k.bc1 = 1.0f;
        k.bc2 = 1.0f;
        k.cv = nn__opt_cv(g);
        return nn__kargs_adam6(l, &k);
    }
}

static nn_result nn__launch_opt_adam(nn_graph *g, int id) {
    int first, count = nn__adam_group(g, id, &first);
    nn_result r;
    if (count == 0) return NN_OK; /* a later node launches its group */
    if (count >= 2 && g->ctx->dev.cpu_tuned) return nn__launch_adam6(g, first, count);
    if (count == 2) return nn__launch_adam2(g, g->sched[first], id);
    r = nn__launch_param_widen(g, id);
    if (r == NN_OK) r = nn__launch_adam_rule(g, id);
    return r == NN_OK ? nn__launch_param_round(g, id) : r;
}

/* ==== optimizer step: OPT_STEP, parameter p [any] and its gradient (and the clipping
   coefficient) -> p updated in place by the rule of a.optim.kind (every kind but SGD and
   plain Adam/AdamW: src/cpu/optim.c's nn__opt_rule, kernels/optim.cl's opt_step), its state
   in aux[0..2]. LARS reduces |w| and |g| first; LAMB computes its update u into the node's
   scratch [numel + 2], reduces |w| and |u| into the scratch's last two floats, then
   applies. ==== */

#define nn__grad_opt_step nn__grad_none
#define nn__plan_opt_step nn__no_plan

static nn_result nn__cpu_opt_step(nn_graph *g, nn__node *n) {
    if (n->n_in > 2 && NN__F(n->in[2])[0] < 0.0f) return NN_OK; /* skipped: a gradient is not finite */
    nn__opt_step_cpu(g, n, nn__param16_widen(g, n));
    nn__param16_round(g, n);
    return NN_OK;
}

/* the rate (with the parameter's multiplier) and this update's constants c0..c3 */
static void nn__update_opt(nn_graph *g, nn__launch *l) {
    nn__k_opt_step k;
    memset(&k, 0, sizeof k);
    k.lr = g->lr * g->nodes[l->node].a.optim.lr_mult;
    k.c0 = g->clock.c[0];
    k.c1 = g->clock.c[1];
    k.c2 = g->clock.c[2];
    k.c3 = g->clock.c[3];
    nn__kstep_opt_step(l, &k);
}

static void nn__update_lamb_apply(nn_graph *g, nn__launch *l) {
    nn__k_lamb_apply k;
    memset(&k, 0, sizeof k);
    k.lr = g->lr * g->nodes[l->node].a.optim.lr_mult;
    nn__kstep_lamb_apply(l, &k);
}

/* opt_norms over one work-group: out[off], out[off + 1] = the sums of squares of p and of
   x (clipped by clip and cv) */
static nn_result nn__launch_opt_norms(nn_graph *g, int id, const nn__buf *p, const nn__buf *x, const nn__buf *clip, float cv,
                                      int np, const nn__buf *out, int off) {
    size_t wg = nn__reduce_wg(g);
    NN__KWITH(opt_norms, nn__launch_groups(g, id, "optim", "opt_norms", 1, wg, &l));
    k.p = p;
    k.x = x;
    k.clip = clip;
    k.cv = cv;
    k.n = np;
    k.out = out;
    k.off = off;
    k.tmp = wg * 8;
    return nn__kargs_opt_norms(l, &k);
}

static nn_result nn__launch_step_rule(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id], *p = &g->nodes[n->in[0]];
    const nn__buf *grad = &g->nodes[n->in[1]].buf, *clip = n->n_in > 2 ? &g->nodes[n->in[2]].buf : &g->one;
    const nn__buf *s[3], *norms = n->scratch > 0 ? &n->scratch_buf : &g->one;
    int np = (int)p->numel, k, lamb = n->a.optim.kind == NN_OPT_LAMB;
    float h[5], cv = nn__opt_cv(g);
    nn__launch *l = NULL;
    nn__k_opt_step ks;
    nn__k_lamb_apply ka;
    nn_result r;
    for (k = 0; k < 3; k++) s[k] = k < n->n_aux ? &n->aux[k] : &g->one; /* &g->one: never written */
    if (lamb) s[2] = &n->scratch_buf;
    nn__opt_hparams(&g->opt, h);
    if (n->a.optim.kind == NN_OPT_LARS) {
        r = nn__launch_opt_norms(g, id, &p->buf, grad, clip, cv, np, norms, 0);
        if (r != NN_OK) return r;
    }
    r = nn__launch_kernel(g, id, "optim", "opt_step", (size_t)np, &l);
    if (r != NN_OK) return r;
    l->update = nn__update_opt;
    memset(&ks, 0, sizeof ks);
    ks.p = nn__param16_buf(g, n);
    ks.grad = grad;
    ks.clip = clip;
    ks.s0 = s[0];
    ks.s1 = s[1];
    ks.s2 = s[2];
    ks.norms = norms;
    ks.n = np;
    ks.kind = n->a.optim.kind;
    ks.lr = g->lr;
    ks.wd = g->opt.weight_decay * n->a.optim.wd_mult;
    ks.cv = cv;
    ks.h0 = h[0];
    ks.h1 = h[1];
    ks.eps = h[2];
    ks.h3 = h[3];
    ks.h4 = h[4];
    r = nn__kargs_opt_step(l, &ks);
    if (r != NN_OK || !lamb) return r;
    r = nn__launch_opt_norms(g, id, &p->buf, norms, &g->one, 3.40282347e38f, np, norms, np);
    if (r != NN_OK) return r;
    r = nn__launch_kernel(g, id, "optim", "lamb_apply", (size_t)np, &l);
    if (r != NN_OK) return r;
    l->update = nn__update_lamb_apply;
    memset(&ka, 0, sizeof ka);
    ka.p = &p->buf;
    ka.u = norms;
    ka.clip = clip;
    ka.n = np;
    ka.lr = g->lr;
    return nn__kargs_lamb_apply(l, &ka);
}

static nn_result nn__launch_opt_step(nn_graph *g, int id) {
    nn_result r = nn__launch_param_widen(g, id);
    if (r == NN_OK) r = nn__launch_step_rule(g, id);
    return r == NN_OK ? nn__launch_param_round(g, id) : r;
}

/* ==== gradient accumulation: GRAD_ACC, a gradient [any] -> its running mean over a cycle of
   accumulate_steps steps [same], acc = (first step of the cycle ? 0 : acc) + g / steps; a
   persistent output, what the update ops and nn_graph_grad read. ==== */

#define nn__grad_grad_acc nn__grad_none
#define nn__plan_grad_acc nn__no_plan

static nn_result nn__cpu_grad_acc(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__grad_acc_cpu(y, NN__F(in[0]), N, n->a.optim.inv_steps, (g->step - 1) % (uint64_t)g->accum_steps == 0);
    return NN_OK;
}

/* whether this step starts a cycle */
static void nn__update_grad_acc(nn_graph *g, nn__launch *l) {
    nn__k_grad_acc k;
    memset(&k, 0, sizeof k);
    k.reset = (g->step - 1) % (uint64_t)g->accum_steps == 0;
    nn__kstep_grad_acc(l, &k);
}

static nn_result nn__launch_grad_acc(nn_graph *g, int id) {
    NN__KLAUNCH(grad_acc, "optim", "grad_acc", n->numel);
    l->update = nn__update_grad_acc;
    k.acc = &n->buf;
    k.g = &g->nodes[n->in[0]].buf;
    k.n = (int)n->numel;
    k.inv_k = n->a.optim.inv_steps;
    k.reset = 1;
    return nn__kargs_grad_acc(l, &k);
}

/* ==== non-finite count: NONFINITE_COUNT, a gradient [any] (and the previous parameter's
   count [1]) -> [1], the running count of NaN and Inf over the gradients (skip_nonfinite);
   one chain of these nodes covers every parameter. ==== */

#define nn__grad_nonfinite_count nn__grad_none
#define nn__plan_nonfinite_count nn__no_plan

static nn_result nn__cpu_nonfinite_count(nn_graph *g, nn__node *n) {
    const float *x = NN__F(n->in[0]);
    int64_t i, m = g->nodes[n->in[0]].numel, c = 0;
    for (i = 0; i < m; i++) c += !isfinite(x[i]);
    n->buf.host[0] = (n->n_in > 1 ? NN__F(n->in[1])[0] : 0.0f) + (float)c;
    return NN_OK;
}

static nn_result nn__launch_nonfinite_count(nn_graph *g, int id) {
    NN__KGROUP(nonfinite_count, "optim");
    k.x = &g->nodes[n->in[0]].buf;
    k.n = (int)g->nodes[n->in[0]].numel;
    k.prev = n->n_in > 1 ? &g->nodes[n->in[1]].buf : &g->one;
    k.has_prev = n->n_in > 1;
    k.out = &n->buf;
    k.tmp = wg * 4;
    return nn__kargs_nonfinite_count(l, &k);
}

/* ==== skip gate: SKIP_GATE, the non-finite count [1] (and the clipping coefficient [1]) ->
   [2]: y[0] = -1 when the count is not 0 (every update skips), else the coefficient (1
   without clipping); y[1], persistent, counts the skipped updates (nn_graph_skipped_steps
   reads it). ==== */

#define nn__grad_skip_gate nn__grad_none
#define nn__plan_skip_gate nn__no_plan

static nn_result nn__cpu_skip_gate(nn_graph *g, nn__node *n) {
    float *y = n->buf.host;
    int skip = NN__F(n->in[0])[0] != 0.0f;
    y[0] = skip ? -1.0f : n->n_in > 1 ? NN__F(n->in[1])[0] : 1.0f;
    y[1] += skip ? 1.0f : 0.0f;
    return NN_OK;
}

static nn_result nn__launch_skip_gate(nn_graph *g, int id) {
    NN__KLAUNCH(skip_gate, "optim", "skip_gate", 1);
    k.cnt = &g->nodes[n->in[0]].buf;
    k.clip = n->n_in > 1 ? &g->nodes[n->in[1]].buf : &g->one;
    k.y = &n->buf;
    return nn__kargs_skip_gate(l, &k);
}

/* ==== loss scale: LOSS_SCALE, the non-finite count [1] (and the gradients' sum of squares
   [1] with clip_norm) -> [5], torch.cuda.amp.GradScaler's unscale_, step and update on the
   device; a persistent output (zeroed at allocation):
     y[0]  what the updates multiply each gradient by: -1 (skip) when a gradient is not
           finite (or the sum of squares overflowed), else min(1, max_norm / (norm / S +
           1e-6)) / S with clip_norm, 1 / S without (S the scale this step seeded with)
     y[1]  the updates skipped (as SKIP_GATE's y[1]: nn_graph_skipped_steps reads it)
     y[2]  the scale the next step seeds with; y[3] good updates since the scale last
           changed; y[4] 1 once y[2] holds the scale (0 at first: init).
   It replaces SKIP_GATE and CLIP_SCALE; a.optim holds the settings. ==== */

#define nn__grad_loss_scale nn__grad_none
#define nn__plan_loss_scale nn__no_plan

/* the scale seeded with: the state's once written, else the initial one */
static float nn__loss_scale_now(const float *st, float init) { return st[4] != 0.0f ? st[2] : init; }

/* Adds LOSS_SCALE over cnt (and sumsq, or -1) and turns autograd's seed of the loss's
   gradient (a FILL of 1) into LOSS_SEED, which reads the scale from it: the node's id, or -1. */
static int nn__loss_scale_op(nn_graph *g, int cnt, int sumsq, const nn_loss_scale *ls) {
    int in[2], id, seed = g->loss > 0 ? g->nodes[g->loss].grad : -1;
    nn__optim_attr *a;
    in[0] = cnt;
    in[1] = sumsq;
    id = nn__new_node(g, NN__OP_LOSS_SCALE, NN_F32, nn_shape1(5), in, sumsq >= 0 ? 2 : 1);
    if (id < 0) return -1;
    a = &g->nodes[id].a.optim;
    a->init = ls->init_scale;
    a->growth = ls->growth_factor;
    a->backoff = ls->backoff_factor;
    a->interval = ls->growth_interval;
    a->max_norm = g->opt.clip_norm;
    g->nodes[id].is_output = 1; /* its state persists across steps */
    g->skip_node = id;
    if (seed > 0 && g->nodes[seed].op == NN__OP_FILL) { /* loss scaling: the seed (src/engine/autograd.c) */
        g->nodes[seed].op = NN__OP_LOSS_SEED;
        g->nodes[seed].a.optim = *a;
        g->nodes[seed].a.optim.state = id;
    }
    return id;
}

static nn_result nn__cpu_loss_scale(nn_graph *g, nn__node *n) {
    const nn__optim_attr *a = &n->a.optim;
    float *y = n->buf.host, s = nn__loss_scale_now(y, a->init), inv = 1.0f / s;
    float ss = n->n_in > 1 ? NN__F(n->in[1])[0] : 0.0f;
    if (NN__F(n->in[0])[0] != 0.0f || !isfinite(ss)) {
        y[0] = -1.0f;
        y[1] += 1.0f;
        y[2] = s * a->backoff;
        y[3] = 0.0f;
    } else {
        float c = inv, t = y[3] + 1.0f;
        if (n->n_in > 1) {
            float cl = a->max_norm / (sqrtf(ss) * inv + 1e-6f);
            c = (cl > 1.0f ? 1.0f : cl) * inv;
        }
        y[0] = c;
        y[2] = t >= (float)a->interval && isfinite(s * a->growth) ? s * a->growth : s;
        y[3] = t >= (float)a->interval ? 0.0f : t;
    }
    y[4] = 1.0f;
    return NN_OK;
}

static nn_result nn__launch_loss_scale(nn_graph *g, int id) {
    NN__KLAUNCH(loss_scale, "optim", "loss_scale", 1);
    k.cnt = &g->nodes[n->in[0]].buf;
    k.sumsq = n->n_in > 1 ? &g->nodes[n->in[1]].buf : &g->one;
    k.has_sumsq = n->n_in > 1;
    k.y = &n->buf;
    k.init = n->a.optim.init;
    k.growth = n->a.optim.growth;
    k.backoff = n->a.optim.backoff;
    k.interval = (float)n->a.optim.interval;
    k.max_norm = n->a.optim.max_norm;
    return nn__kargs_loss_scale(l, &k);
}

/* ==== loss seed: LOSS_SEED, no input -> the loss's shape (one element): the gradient of
   the loss seeded with the current loss scale (torch's scaler.scale(loss).backward()), read
   from the LOSS_SCALE node a.optim.state; autograd's FILL of 1 turned into it. ==== */

#define nn__grad_loss_seed nn__grad_none
#define nn__plan_loss_seed nn__no_plan

static nn_result nn__cpu_loss_seed(nn_graph *g, nn__node *n) {
    float s = nn__loss_scale_now(g->nodes[n->a.optim.state].buf.host, n->a.optim.init);
    int64_t i;
    for (i = 0; i < n->numel; i++) n->buf.host[i] = s;
    return NN_OK;
}

static nn_result nn__launch_loss_seed(nn_graph *g, int id) {
    NN__KLAUNCH(loss_seed, "optim", "loss_seed", n->numel);
    k.st = &g->nodes[n->a.optim.state].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.init = n->a.optim.init;
    return nn__kargs_loss_seed(l, &k);
}

/* skip_nonfinite's (or loss scaling's) count of skipped updates, from the gate's persistent
   y[1]. */
static nn_result nn__graph_skipped_steps(nn_graph *g, int64_t *count) {
    float y[5];
    nn_result r;
    if (!g || !count) return NN_ERR_INVALID_ARGUMENT;
    *count = 0;
    if ((r = nn__graph_orphaned(g, "nn_graph_skipped_steps")) != NN_OK) return r;
    if (!g->compiled) return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_skipped_steps: the graph is not compiled");
    if (g->skip_node <= 0) return NN_OK;
    r = nn__tensor_read(g, nn__tensor(g->skip_node), y, (size_t)g->nodes[g->skip_node].numel * sizeof(float));
    if (r == NN_OK) *count = (int64_t)y[1];
    return r;
}

/* the loss scale (1 without) and its skipped updates, from LOSS_SCALE's state */
static nn_result nn__graph_loss_scale(nn_graph *g, float *scale, int64_t *skipped) {
    float y[5];
    const nn__node *n;
    nn_result r;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (scale) *scale = 1.0f;
    if (skipped) *skipped = 0;
    if ((r = nn__graph_orphaned(g, "nn_graph_loss_scale")) != NN_OK) return r;
    if (!g->compiled) return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_loss_scale: the graph is not compiled");
    if (g->skip_node <= 0 || g->nodes[g->skip_node].op != NN__OP_LOSS_SCALE) return NN_OK;
    n = &g->nodes[g->skip_node];
    r = nn__tensor_read(g, nn__tensor(g->skip_node), y, sizeof y);
    if (r != NN_OK) return r;
    if (scale) *scale = nn__loss_scale_now(y, n->a.optim.init);
    if (skipped) *skipped = (int64_t)y[1];
    return NN_OK;
}

NN_API nn_result nn_graph_loss_scale(nn_graph *g, float *scale, int64_t *skipped) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_loss_scale", nn__graph_loss_scale(g, scale, skipped));
}

NN_API nn_result nn_graph_skipped_steps(nn_graph *g, int64_t *count) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_skipped_steps", nn__graph_skipped_steps(g, count));
}
