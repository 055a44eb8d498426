/* The loss family (the files of src/ops/loss/; attributes nn__loss_attr in src/ops/loss.h),
   one block per op: builder, registry aliases, autograd rule, CPU body (the loops in
   src/cpu/loss.c) and kernel launch (kernels/loss.cl); the kinds of the elementwise and row
   losses are kernels/loss.h's lists. This file: the family's shared checks and the
   elementwise losses, PyTorch's BCE with logits and MSE shorthands among them;
   cross_entropy.c: softmax cross-entropy, cross-entropy and NLL; rows.c: the losses of
   whole rows. */
#include "../../base/internal.h"
#include "../../base/registry.h"
#include "../../../kernels/loss.h"

/* ==== shared by the family: input checks, nn_loss_desc's reduction, the bad-label count ==== */

/* prediction and target: float32 and one shape */
static int nn__check_same(nn_graph *g, const char *opname, nn_tensor a, nn_tensor b) {
    nn_tensor in[2];
    in[0] = a;
    in[1] = b;
    if (!nn__check(g, opname, 2, in)) return 0;
    if (!nn__expect_f32(g, opname, a, "the prediction") || !nn__expect_f32(g, opname, b, "the target")) return 0;
    if (!nn__shape_eq(&nn__n(g, a)->shape, &nn__n(g, b)->shape)) {
        char sa[128], sb[128];
        nn__shape_str(&nn__n(g, a)->shape, sa, sizeof sa);
        nn__shape_str(&nn__n(g, b)->shape, sb, sizeof sb);
        nn__op_fail(g, NN_ERR_SHAPE, "%s: prediction %s and target %s differ in shape", opname, sa, sb);
        return 0;
    }
    return 1;
}

/* Checks d's reduction and puts the loss's default (dflt) in place of NN_REDUCTION_DEFAULT. */
static int nn__loss_desc_ok(nn_graph *g, const char *opname, nn_loss_desc *d, int batchmean_ok, nn_reduction dflt) {
    if ((int)d->reduction < 0 || (int)d->reduction > NN_REDUCTION_BATCHMEAN ||
        (d->reduction == NN_REDUCTION_BATCHMEAN && !batchmean_ok)) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: reduction %d is not one this loss takes", opname, (int)d->reduction);
        return 0;
    }
    if (d->reduction == NN_REDUCTION_DEFAULT) d->reduction = dflt;
    return 1;
}

/* Per-element or per-row losses l [N] or [B, ...], reduced as desc asks: l itself, or [1]. */
static nn_tensor nn__reduce_loss(nn_graph *g, nn_tensor l, const nn_loss_desc *d) {
    if (l.id < 0 || d->reduction == NN_REDUCTION_NONE) return l;
    return nn__sum_all_op(g, l.id,
                          d->reduction == NN_REDUCTION_SUM ? 1.0f
                          : (float)(1.0 / (double)(d->reduction == NN_REDUCTION_BATCHMEAN ? g->nodes[l.id].shape.dim[0]
                                                                                             : g->nodes[l.id].numel)));
}

/* A checked op's bad inputs, into its counter (a device kernel's atomic_inc on the CPU). */
static void nn__count_check(nn_graph *g, const nn__node *n, int64_t bad) {
    int32_t *c = (int32_t *)g->checks.host + n->check_slot;
    if (bad > 0) *c = (int32_t)((uint32_t)*c + (uint32_t)bad);
}

/* ==== mse (nn_mse): pred, target [any] -> [1], mean((pred - target)^2), composed of sub,
   mul and mean (nn_mse_loss is the LOSS_EW form) ==== */

NN_API nn_tensor nn_mse(nn_graph *g, nn_tensor pred, nn_tensor target) {
    nn_tensor d;
    if (!nn__check_same(g, "nn_mse", pred, target)) return nn__tensor(-1);
    d = nn_sub(g, pred, target);
    return nn_mean(g, nn_mul(g, d, d));
}

/* ==== bce with logits (nn_bce_with_logits): logits, target [any] -> BCE_LOGITS [same],
   (1 - t) x + max(-x, 0) + log(1 + exp(-|x|)) (PyTorch's form), then its mean [1];
   BCE_LOGITS_GRAD, d/dx = dy * (sigmoid(x) - t); d/dt = -dy * x ==== */

NN_API nn_tensor nn_bce_with_logits(nn_graph *g, nn_tensor logits, nn_tensor target) {
    if (!nn__check_same(g, "nn_bce_with_logits", logits, target)) return nn__tensor(-1);
    return nn_mean(g, nn__op2(g, NN__OP_BCE_LOGITS, NN_F32, nn__n(g, logits)->shape, logits.id, target.id));
}

#define nn__plan_bce_logits nn__no_plan
#define nn__grad_bce_logits_grad nn__grad_none
#define nn__plan_bce_logits_grad nn__no_plan

static void nn__grad_bce_logits(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (ga) nn__acc_grad(g, a, nn__op3(g, NN__OP_BCE_LOGITS_GRAD, NN_F32, n.shape, a, b, gy.id));
    if (gb) { /* d/dt = -x */
        t = nn__op2(g, NN__OP_MUL, NN_F32, n.shape, gy.id, a);
        nn__acc_grad(g, b, nn__scale_op(g, n.shape, t.id, -1.0f));
    }
    return;
}

static nn_result nn__cpu_bce_logits(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__bce_rows(g->ctx->threads, y, NN__F(in[0]), NN__F(in[1]), NULL, N);
    return NN_OK;
}

static nn_result nn__cpu_bce_logits_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__bce_rows(g->ctx->threads, y, NN__F(in[0]), NN__F(in[1]), NN__F(in[2]), N);
    return NN_OK;
}

static nn_result nn__launch_bce_logits(nn_graph *g, int id) {
    NN__KLAUNCH(bce_logits_forward, "loss", "bce_logits_forward", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.t = &g->nodes[n->in[1]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    return nn__kargs_bce_logits_forward(l, &k);
}

static nn_result nn__launch_bce_logits_grad(nn_graph *g, int id) {
    NN__KLAUNCH(bce_logits_backward, "loss", "bce_logits_backward", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.t = &g->nodes[n->in[1]].buf;
    k.dy = &g->nodes[n->in[2]].buf;
    k.dx = &n->buf;
    k.n = (int)n->numel;
    return nn__kargs_bce_logits_backward(l, &k);
}

/* ==== elementwise losses (nn_mse_loss, nn_l1_loss, ... nn_kl_div_loss: kernels/loss.h's
   NN__LOSS_EW_KINDS): pred, target [any] (and bce's pos_weight [trailing dims of pred])
   -> LOSS_EW [pred's shape], the loss of each element by its kind, then weight and the
   desc's reduction; LOSS_EW_GRAD, d/d(pred) [same] given dy (a loss of d = x - t gives the
   target its negation) ==== */

static nn_tensor nn__loss_ew(nn_graph *g, const char *opname, int kind, nn_tensor x, nn_tensor t, const nn_loss_desc *desc) {
    nn_loss_desc d;
    nn_tensor l;
    nn__node *n;
    float a = 0.0f, b = 0.0f;
    int has_pw;
    if (desc) d = *desc;
    else memset(&d, 0, sizeof d);
    /* torchvision's sigmoid_focal_loss defaults to no reduction; torch.nn's losses to the mean */
    if (!nn__check_same(g, opname, x, t) ||
        !nn__loss_desc_ok(g, opname, &d, kind == NN__L_KL, kind == NN__L_FOCAL ? NN_REDUCTION_NONE : NN_REDUCTION_MEAN))
        return nn__tensor(-1);
    switch (kind) {
    case NN__L_HUBER: a = nn__deff(d.delta, 1.0f); break;
    case NN__L_SMOOTH_L1: a = nn__deff(d.delta, 1.0f); break;
    case NN__L_QUANTILE: a = nn__deff(d.tau, 0.5f); break;
    case NN__L_HINGE: case NN__L_SQ_HINGE: a = nn__deff(d.margin, 1.0f); break;
    case NN__L_FOCAL: a = nn__deff(d.alpha, 0.25f); b = nn__deff(d.gamma, 2.0f); break;
    default: break;
    }
    if ((kind == NN__L_HUBER && !(a > 0.0f)) || (kind == NN__L_SMOOTH_L1 && !(a >= 0.0f)) ||
        (kind == NN__L_QUANTILE && !(a >= 0.0f && a <= 1.0f)) || (kind == NN__L_FOCAL && !(b >= 0.0f)))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: %s %g is out of range (%s)", opname,
                           kind == NN__L_HUBER ? "delta" : kind == NN__L_SMOOTH_L1 ? "beta (desc delta)" : kind == NN__L_QUANTILE ? "tau" : "gamma",
                           kind == NN__L_FOCAL ? b : a,
                           kind == NN__L_HUBER ? "> 0" : kind == NN__L_QUANTILE ? "[0, 1]" : ">= 0");
    has_pw = nn__optional(g, opname, d.pos_weight);
    if (has_pw < 0 || nn__optional(g, opname, d.weight) < 0) return nn__tensor(-1);
    if (has_pw) {
        nn_tensor pw = d.pos_weight;
        nn__node *nx, *np;
        int k, fits;
        if (kind != NN__L_BCE_LOGITS)
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: pos_weight is for nn_bce_with_logits_loss", opname);
        if (!nn__expect_f32(g, opname, pw, "pos_weight")) return nn__tensor(-1);
        nx = nn__n(g, x);
        np = nn__n(g, pw);
        fits = np->shape.ndim <= nx->shape.ndim;
        for (k = 1; fits && k <= np->shape.ndim; k++) fits = np->shape.dim[np->shape.ndim - k] == nx->shape.dim[nx->shape.ndim - k];
        if (!fits) {
            char sa[128], sb[128];
            nn__shape_str(&nx->shape, sa, sizeof sa);
            nn__shape_str(&np->shape, sb, sizeof sb);
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: pos_weight %s must match the trailing dims of logits %s", opname, sb, sa);
        }
        l = nn__op3(g, NN__OP_LOSS_EW, NN_F32, nn__n(g, x)->shape, x.id, t.id, pw.id);
    } else {
        l = nn__op2(g, NN__OP_LOSS_EW, NN_F32, nn__n(g, x)->shape, x.id, t.id);
    }
    if (l.id < 0) return l;
    n = &g->nodes[l.id];
    n->a.loss.kind = kind;
    n->a.loss.has_pos_weight = has_pw;
    n->a.loss.log_target = d.log_target != 0;
    n->a.loss.a = a;
    n->a.loss.b = b;
    if (d.weight.id != 0) l = nn__binary(g, NN__OP_MUL, opname, l, d.weight);
    return nn__reduce_loss(g, l, &d);
}

/* nn_<name>(g, pred, target, desc) for each line of NN__LOSS_EW_KINDS */
#define NN__L_BUILDER(E, name, of_d)                                                                  \
    NN_API nn_tensor nn_##name(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) {       \
        return nn__loss_ew(g, "nn_" #name, NN__L_##E, p, t, d);                                        \
    }
NN__LOSS_EW_KINDS(NN__L_BUILDER)
#undef NN__L_BUILDER

#define nn__plan_loss_ew nn__no_plan
#define nn__grad_loss_ew_grad nn__grad_none
#define nn__plan_loss_ew_grad nn__no_plan

/* whether the target gets a gradient (-dx): the of_d column */
#define NN__L_OF_D(E, name, of_d) of_d,
static const unsigned char nn__loss_of_d[NN__L_COUNT] = {NN__LOSS_EW_KINDS(NN__L_OF_D)};
#undef NN__L_OF_D

static void nn__grad_loss_ew(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    /* inputs x, t, [pos_weight] */
    int ins[4], has_pw = n.n_in > 2, gt = gb && nn__loss_of_d[n.a.loss.kind];
    if (!ga && !gt) return;
    ins[0] = a;
    ins[1] = b;
    ins[2] = gy.id;
    ins[3] = has_pw ? n.in[2] : -1;
    t = nn__tensor(nn__new_node(g, NN__OP_LOSS_EW_GRAD, NN_F32, n.shape, ins, has_pw ? 4 : 3));
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    if (ga) nn__acc_grad(g, a, t);
    if (gt) nn__acc_grad(g, b, nn__scale_op(g, n.shape, t.id, -1.0f));
    return;
}

static nn_result nn__cpu_loss_ew(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__loss_ew_run(g->ctx->threads, y, NN__F(in[0]), NN__F(in[1]), n->a.loss.has_pos_weight ? NN__F(in[2]) : NULL,
                    n->a.loss.has_pos_weight ? g->nodes[in[2]].numel : 1, NULL, N, n->a.loss.kind, n->a.loss.a, n->a.loss.b,
                    n->a.loss.log_target);
    return NN_OK;
}

/* inputs x, t, dy, [pos_weight] */
static nn_result nn__cpu_loss_ew_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__loss_ew_run(g->ctx->threads, y, NN__F(in[0]), NN__F(in[1]), n->a.loss.has_pos_weight ? NN__F(in[3]) : NULL,
                    n->a.loss.has_pos_weight ? g->nodes[in[3]].numel : 1, NN__F(in[2]), N, n->a.loss.kind, n->a.loss.a,
                    n->a.loss.b, n->a.loss.log_target);
    return NN_OK;
}

static nn_result nn__launch_loss_ew(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    int has_pw = n->a.loss.has_pos_weight;
    NN__KSTART(loss_ew_forward, "loss", "loss_ew_forward", n->numel);
    k.x = &g->nodes[in[0]].buf;
    k.t = &g->nodes[in[1]].buf;
    k.pw = has_pw ? &g->nodes[in[2]].buf : &g->one;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.npw = has_pw ? (int)g->nodes[in[2]].numel : 1;
    k.kind = n->a.loss.kind;
    k.log_target = n->a.loss.log_target;
    k.a = n->a.loss.a;
    k.b = n->a.loss.b;
    return nn__kargs_loss_ew_forward(l, &k);
}

static nn_result nn__launch_loss_ew_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    int has_pw = n->a.loss.has_pos_weight;
    NN__KSTART(loss_ew_backward, "loss", "loss_ew_backward", n->numel);
    k.x = &g->nodes[in[0]].buf;
    k.t = &g->nodes[in[1]].buf;
    k.pw = has_pw ? &g->nodes[in[3]].buf : &g->one;
    k.dy = &g->nodes[in[2]].buf;
    k.dx = &n->buf;
    k.n = (int)n->numel;
    k.npw = has_pw ? (int)g->nodes[in[3]].numel : 1;
    k.kind = n->a.loss.kind;
    k.log_target = n->a.loss.log_target;
    k.a = n->a.loss.a;
    k.b = n->a.loss.b;
    return nn__kargs_loss_ew_backward(l, &k);
}
