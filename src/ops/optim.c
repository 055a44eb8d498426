/* The optim ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../base/internal.h"
#include "../base/registry.h"

/* Registry names (src/base/registry.h: nn__cpu_STEM, nn__launch_STEM, nn__grad_STEM,
   nn__plan_STEM): the functions an op shares with another, and the ones it has none of. */
#define nn__grad_opt_sgd nn__grad_none
#define nn__plan_opt_sgd nn__no_plan
#define nn__grad_opt_adam nn__grad_none
#define nn__plan_opt_adam nn__no_plan
#define nn__grad_opt_step nn__grad_none
#define nn__plan_opt_step nn__no_plan
#define nn__grad_grad_acc nn__grad_none
#define nn__plan_grad_acc nn__no_plan
#define nn__grad_nonfinite_count nn__grad_none
#define nn__plan_nonfinite_count nn__no_plan
#define nn__grad_skip_gate nn__grad_none
#define nn__plan_skip_gate nn__no_plan

static nn_result nn__optim_configure(nn_graph *g, const nn_compile_desc *d) {
    nn_result r;
    g->opt = nn__opt_defaults(d->optimizer);
    r = nn__opt_check(g, &g->opt);
    if (r != NN_OK) return r;
    g->accum_steps = g->opt.accumulate_steps;
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
static nn_result nn__add_optimizer(nn_graph *g) {
    int i, n0 = g->n_nodes, scale = -1, acc = -1, k = g->accum_steps;
    int op = nn__opt_generic(&g->opt) ? NN__OP_OPT_STEP : g->opt.kind == NN_OPT_SGD ? NN__OP_OPT_SGD : NN__OP_OPT_ADAM;
    if (g->opt.kind == NN_OPT_NONE) return NN_OK;
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
    if (g->opt.clip_norm > 0.0f) {
        for (i = 0; i < n0; i++) {
            if (g->nodes[i].op != NN__OP_PARAM || g->nodes[i].grad < 0) continue;
            acc = acc < 0 ? nn__op1(g, NN__OP_GRAD_SUMSQ, NN_F32, nn_shape1(1), g->nodes[i].grad).id
                          : nn__op2(g, NN__OP_GRAD_SUMSQ, NN_F32, nn_shape1(1), g->nodes[i].grad, acc).id;
        }
        if (acc >= 0) {
            scale = nn__clip_scale_op(g, acc, g->opt.clip_norm).id;
        }
    }
    if (g->opt.skip_nonfinite) { /* the gate replaces the clipping coefficient */
        int cnt = -1, in[2];
        for (i = 0; i < n0; i++) {
            if (g->nodes[i].op != NN__OP_PARAM || g->nodes[i].grad < 0) continue;
            cnt = cnt < 0 ? nn__op1(g, NN__OP_NONFINITE_COUNT, NN_F32, nn_shape1(1), g->nodes[i].grad).id
                          : nn__op2(g, NN__OP_NONFINITE_COUNT, NN_F32, nn_shape1(1), g->nodes[i].grad, cnt).id;
            if (cnt < 0) return g->status;
        }
        if (cnt >= 0) {
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
        if (g->nodes[i].op != NN__OP_PARAM || g->nodes[i].grad < 0) continue;
        memset(&none, 0, sizeof none);
        id = scale >= 0 ? nn__op3(g, op, NN_F32, none, i, g->nodes[i].grad, scale).id
                        : nn__op2(g, op, NN_F32, none, i, g->nodes[i].grad).id;
        if (id < 0) break;
        u = &g->nodes[id];
        u->numel = 0;
        u->is_output = 1; /* a root: it has an effect */
        u->n_aux = nn__opt_n_aux(&g->opt);
        u->a.optim.kind = g->opt.kind;
        nn__param_mults(g, &g->nodes[i], &u->a.optim.lr_mult, &u->a.optim.wd_mult);
        if (g->opt.kind == NN_OPT_LAMB) u->scratch = g->nodes[i].numel + 2; /* u, then two sums of squares */
        if (g->opt.kind == NN_OPT_LARS) u->scratch = 2;
    }
    return g->status;
}

/* An arena item: a node's output (live from its definition to its last use) or its
   scratch (live during its own run only). */


/* Adam's bias corrections for the update about to run, in double as PyTorch computes them. */
static void nn__adam_bc(const nn_graph *g, float *bc1, float *bc2) {
    *bc1 = (float)(1.0 - pow((double)g->opt.beta1, (double)g->clock.t));
    *bc2 = (float)(1.0 - pow((double)g->opt.beta2, (double)g->clock.t));
}

/* ---- CPU bodies ---- */

static nn_result nn__cpu_opt_sgd(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    nn__node *p = &g->nodes[in[0]];
    float clip = n->n_in > 2 ? NN__F(in[2])[0] : 1.0f;
    if (clip < 0.0f) return NN_OK; /* skipped: a gradient is not finite (skip_gate) */
    nn__sgd_update(p->buf.host, NN__F(in[1]), n->n_aux ? n->aux[0].host : NULL, p->numel, g->lr * n->a.optim.lr_mult,
                   g->opt.momentum, g->opt.dampening, g->opt.weight_decay * n->a.optim.wd_mult, g->opt.nesterov, g->clock.t == 1,
                   clip, nn__opt_cv(g));
    return NN_OK;
}

static nn_result nn__cpu_opt_adam(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    nn__node *p = &g->nodes[in[0]];
    float clip = n->n_in > 2 ? NN__F(in[2])[0] : 1.0f, bc1, bc2;
    if (clip < 0.0f) return NN_OK; /* skipped: a gradient is not finite (skip_gate) */
    nn__adam_bc(g, &bc1, &bc2);
    nn__adam_update(g->ctx->threads, p->buf.host, NN__F(in[1]), n->aux[0].host, n->aux[1].host, p->numel,
                    g->lr * n->a.optim.lr_mult, g->opt.beta1, g->opt.beta2, g->opt.eps, g->opt.weight_decay * n->a.optim.wd_mult,
                    g->opt.kind == NN_OPT_ADAMW, bc1, bc2, clip, nn__opt_cv(g));
    return NN_OK;
}

static nn_result nn__cpu_opt_step(nn_graph *g, nn__node *n) {
    nn__opt_step_cpu(g, n); return NN_OK;

}

static nn_result nn__cpu_nonfinite_count(nn_graph *g, nn__node *n) {
    const float *x = NN__F(n->in[0]);
    int64_t i, m = g->nodes[n->in[0]].numel, c = 0;
    for (i = 0; i < m; i++) c += !isfinite(x[i]);
    n->buf.host[0] = (n->n_in > 1 ? NN__F(n->in[1])[0] : 0.0f) + (float)c;
    return NN_OK;
}

static nn_result nn__cpu_skip_gate(nn_graph *g, nn__node *n) {
    float *y = n->buf.host;
    int skip = NN__F(n->in[0])[0] != 0.0f;
    y[0] = skip ? -1.0f : n->n_in > 1 ? NN__F(n->in[1])[0] : 1.0f;
    y[1] += skip ? 1.0f : 0.0f;
    return NN_OK;
}

static nn_result nn__cpu_grad_acc(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__grad_acc_cpu(y, NN__F(in[0]), N, n->a.optim.inv_steps, (g->step - 1) % (uint64_t)g->accum_steps == 0); return NN_OK;

}

static void nn__update_sgd(nn_graph *g, nn__launch *l) {
    nn__arg_f(l, 0, g->lr * g->nodes[l->node].a.optim.lr_mult);
    nn__arg_i(l, 1, g->clock.t == 1);
}

static void nn__update_adam(nn_graph *g, nn__launch *l) {
    float bc1, bc2;
    nn__adam_bc(g, &bc1, &bc2);
    nn__arg_f(l, 0, g->lr * g->nodes[l->node].a.optim.lr_mult);
    nn__arg_f(l, 1, bc1);
    nn__arg_f(l, 2, bc2);
}

/* opt_step: the rate (with the parameter's multiplier) and this update's constants c0..c3 */
static void nn__update_opt(nn_graph *g, nn__launch *l) {
    int k;
    nn__arg_f(l, 0, g->lr * g->nodes[l->node].a.optim.lr_mult);
    for (k = 0; k < 4; k++) nn__arg_f(l, 1 + k, g->clock.c[k]);
}

static void nn__update_lamb_apply(nn_graph *g, nn__launch *l) { nn__arg_f(l, 0, g->lr * g->nodes[l->node].a.optim.lr_mult); }

static void nn__update_grad_acc(nn_graph *g, nn__launch *l) { nn__arg_i(l, 0, (g->step - 1) % (uint64_t)g->accum_steps == 0); }

/* OPT_STEP's launches: LARS reduces |w| and |g| first; LAMB computes u, reduces |w| and
   |u|, then applies (see cpu/optim.c). */
static nn_result nn__launch_opt_step(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id], *p = &g->nodes[n->in[0]];
    const nn__buf *grad = &g->nodes[n->in[1]].buf, *clip = n->n_in > 2 ? &g->nodes[n->in[2]].buf : &g->one;
    const nn__buf *s[3], *norms = n->scratch > 0 ? &n->scratch_buf : &g->one;
    int np = (int)p->numel, k, lamb = n->a.optim.kind == NN_OPT_LAMB;
    size_t wg = nn__reduce_wg(g);
    float h[5], cv = nn__opt_cv(g);
    nn__launch *l = NULL;
    nn_result r;
    for (k = 0; k < 3; k++) s[k] = k < n->n_aux ? &n->aux[k] : &g->one; /* &g->one: never written */
    if (lamb) s[2] = &n->scratch_buf;
    nn__opt_hparams(&g->opt, h);
    if (n->a.optim.kind == NN_OPT_LARS) {
        r = nn__launch_kernel(g, id, "optim", "opt_norms", wg, &l);
        if (r != NN_OK) return r;
        l->gws[0] = l->lws[0] = wg;
        l->use_lws = 1;
        r = nn__args(l, "mmmfimiL", &p->buf, grad, clip, (double)cv, np, norms, 0, wg * 8);
        if (r != NN_OK) return r;
    }
    r = nn__launch_kernel(g, id, "optim", "opt_step", (size_t)np, &l);
    if (r != NN_OK) return r;
    l->update = nn__update_opt;
    r = nn__args(l, "mmmmmmmii@ffffffff@f@f@f@f", &p->buf, grad, clip, s[0], s[1], s[2], norms, np, n->a.optim.kind,
                    (double)g->lr, (double)(g->opt.weight_decay * n->a.optim.wd_mult), (double)cv, (double)h[0], (double)h[1],
                    (double)h[2], (double)h[3], (double)h[4], 0.0, 0.0, 0.0, 0.0);
    if (r != NN_OK || !lamb) return r;
    r = nn__launch_kernel(g, id, "optim", "opt_norms", wg, &l);
    if (r != NN_OK) return r;
    l->gws[0] = l->lws[0] = wg;
    l->use_lws = 1;
    r = nn__args(l, "mmmfimiL", &p->buf, norms, &g->one, (double)3.40282347e38f, np, norms, np, wg * 8);
    if (r != NN_OK) return r;
    r = nn__launch_kernel(g, id, "optim", "lamb_apply", (size_t)np, &l);
    if (r != NN_OK) return r;
    l->update = nn__update_lamb_apply;
    return nn__args(l, "mmmi@f", &p->buf, norms, clip, np, (double)g->lr);
}

/* ---- device plans: launches of kernels/FAMILY.cl ---- */

static nn_result nn__launch_opt_sgd(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    nn__node *p = &g->nodes[in[0]];
    int np = (int)p->numel;
    r = nn__launch_kernel(g, id, "optim", "sgd", (size_t)np, &l);
    if (r != NN_OK) return r;
    l->update = nn__update_sgd;
    return nn__args(l, "mmmmi@ffffi@if", &p->buf, &g->nodes[in[1]].buf, n->n_aux ? &n->aux[0] : &g->one,
                       n->n_in > 2 ? &g->nodes[in[2]].buf : &g->one, np, (double)g->lr, (double)g->opt.momentum,
                       (double)g->opt.dampening, (double)(g->opt.weight_decay * n->a.optim.wd_mult), g->opt.nesterov, 1,
                       (double)nn__opt_cv(g));
}

static nn_result nn__launch_opt_adam(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    nn__node *p = &g->nodes[in[0]];
    int np = (int)p->numel;
    r = nn__launch_kernel(g, id, "optim", "adam", (size_t)np, &l);
    if (r != NN_OK) return r;
    l->update = nn__update_adam;
    return nn__args(l, "mmmmmi@fffffi@f@ff", &p->buf, &g->nodes[in[1]].buf, &n->aux[0], &n->aux[1],
                       n->n_in > 2 ? &g->nodes[in[2]].buf : &g->one, np, (double)g->lr, (double)g->opt.beta1,
                       (double)g->opt.beta2, (double)g->opt.eps, (double)(g->opt.weight_decay * n->a.optim.wd_mult),
                       g->opt.kind == NN_OPT_ADAMW, 1.0, 1.0, (double)nn__opt_cv(g));
}


static nn_result nn__launch_grad_acc(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_kernel(g, id, "optim", "grad_acc", (size_t)N, &l);
    if (r != NN_OK) return r;
    l->update = nn__update_grad_acc;
    return nn__args(l, "mmif@i", y, &g->nodes[in[0]].buf, N, (double)n->a.optim.inv_steps, 1);
}

static nn_result nn__launch_nonfinite_count(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__launch *l = NULL;
    size_t wg = nn__reduce_wg(g);
    nn_result r = nn__launch_kernel(g, id, "optim", "nonfinite_count", wg, &l);
    if (r != NN_OK) return r;
    l->gws[0] = l->lws[0] = wg;
    l->use_lws = 1;
    return nn__args(l, "mimimL", &g->nodes[n->in[0]].buf, (int)g->nodes[n->in[0]].numel,
                    n->n_in > 1 ? &g->nodes[n->in[1]].buf : &g->one, n->n_in > 1, &n->buf, wg * 4);
}

static nn_result nn__launch_skip_gate(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__launch *l = NULL;
    nn_result r = nn__launch_kernel(g, id, "optim", "skip_gate", 1, &l);
    if (r != NN_OK) return r;
    return nn__args(l, "mmm", &g->nodes[n->in[0]].buf, n->n_in > 1 ? &g->nodes[n->in[1]].buf : &g->one, &n->buf);
}

/* skip_nonfinite's count of skipped updates, from the gate's persistent y[1]. */
NN_API nn_result nn_graph_skipped_steps(nn_graph *g, int64_t *count) {
    float y[2];
    nn_result r;
    if (!g || !count) return NN_ERR_INVALID_ARGUMENT;
    *count = 0;
    if (!g->compiled) return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_skipped_steps: the graph is not compiled");
    if (g->skip_node <= 0) return NN_OK;
    r = nn_tensor_read(g, nn__tensor(g->skip_node), y, sizeof y);
    if (r == NN_OK) *count = (int64_t)y[1];
    return r;
}
