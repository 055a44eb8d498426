/* The loss ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../base/internal.h"
#include "../base/registry.h"

/* Registry names (src/base/registry.h: nn__cpu_STEM, nn__launch_STEM, nn__grad_STEM,
   nn__plan_STEM): the functions an op shares with another, and the ones it has none of. */
#define nn__plan_xent_rows nn__no_plan
#define nn__grad_xent_grad nn__grad_none
#define nn__plan_xent_grad nn__no_plan
#define nn__plan_bce_logits nn__no_plan
#define nn__grad_bce_logits_grad nn__grad_none
#define nn__plan_bce_logits_grad nn__no_plan
#define nn__plan_loss_ew nn__no_plan
#define nn__launch_loss_ew_grad nn__launch_loss_ew
#define nn__grad_loss_ew_grad nn__grad_none
#define nn__plan_loss_ew_grad nn__no_plan
#define nn__plan_ce_rows nn__no_plan
#define nn__launch_ce_rows_grad nn__launch_ce_rows
#define nn__grad_ce_rows_grad nn__grad_none
#define nn__plan_ce_rows_grad nn__no_plan
#define nn__grad_ce_weights nn__grad_none
#define nn__plan_ce_weights nn__no_plan
#define nn__plan_div_scalar nn__no_plan
#define nn__plan_loss_rows nn__no_plan
#define nn__launch_loss_rows_grad nn__launch_loss_rows
#define nn__grad_loss_rows_grad nn__grad_none
#define nn__plan_loss_rows_grad nn__no_plan


NN_API nn_tensor nn_softmax_cross_entropy(nn_graph *g, nn_tensor logits, nn_tensor labels) {
    nn_tensor rows;
    if (!nn__check_logits_labels(g, "nn_softmax_cross_entropy", logits, labels)) return nn__tensor(-1);
    rows = nn__op2(g, NN__OP_XENT_ROWS, NN_F32, nn_shape1(nn__n(g, logits)->shape.dim[0]), logits.id, labels.id);
    if (rows.id > 0) g->nodes[rows.id].check = "nn_softmax_cross_entropy: labels outside [0, C)";
    return nn_mean(g, rows);
}

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

NN_API nn_tensor nn_mse(nn_graph *g, nn_tensor pred, nn_tensor target) {
    nn_tensor d;
    if (!nn__check_same(g, "nn_mse", pred, target)) return nn__tensor(-1);
    d = nn_sub(g, pred, target);
    return nn_mean(g, nn_mul(g, d, d));
}

NN_API nn_tensor nn_bce_with_logits(nn_graph *g, nn_tensor logits, nn_tensor target) {
    if (!nn__check_same(g, "nn_bce_with_logits", logits, target)) return nn__tensor(-1);
    return nn_mean(g, nn__op2(g, NN__OP_BCE_LOGITS, NN_F32, nn__n(g, logits)->shape, logits.id, target.id));
}


/* ---- losses with options (nn_loss_desc; bodies in cpu/loss.c) ---- */

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

/* Per-element or per-row losses l, reduced as desc asks. */
static nn_tensor nn__reduce_loss(nn_graph *g, nn_tensor l, const nn_loss_desc *d) {
    if (l.id < 0 || d->reduction == NN_REDUCTION_NONE) return l;
    return nn__sum_all_op(g, l.id,
                          d->reduction == NN_REDUCTION_SUM ? 1.0f
                          : (float)(1.0 / (double)(d->reduction == NN_REDUCTION_BATCHMEAN ? g->nodes[l.id].shape.dim[0]
                                                                                             : g->nodes[l.id].numel)));
}

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

NN_API nn_tensor nn_mse_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_mse_loss", NN__L_MSE, p, t, d); }
NN_API nn_tensor nn_l1_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_l1_loss", NN__L_L1, p, t, d); }
NN_API nn_tensor nn_huber_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_huber_loss", NN__L_HUBER, p, t, d); }
NN_API nn_tensor nn_smooth_l1_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_smooth_l1_loss", NN__L_SMOOTH_L1, p, t, d); }
NN_API nn_tensor nn_log_cosh_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_log_cosh_loss", NN__L_LOG_COSH, p, t, d); }
NN_API nn_tensor nn_quantile_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_quantile_loss", NN__L_QUANTILE, p, t, d); }
NN_API nn_tensor nn_hinge_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_hinge_loss", NN__L_HINGE, p, t, d); }
NN_API nn_tensor nn_squared_hinge_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_squared_hinge_loss", NN__L_SQ_HINGE, p, t, d); }
NN_API nn_tensor nn_bce_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_bce_loss", NN__L_BCE, p, t, d); }
NN_API nn_tensor nn_bce_with_logits_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_bce_with_logits_loss", NN__L_BCE_LOGITS, p, t, d); }
NN_API nn_tensor nn_sigmoid_focal_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_sigmoid_focal_loss", NN__L_FOCAL, p, t, d); }
NN_API nn_tensor nn_kl_div_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_kl_div_loss", NN__L_KL, p, t, d); }

static nn_tensor nn__ce_loss(nn_graph *g, const char *opname, int log_input, nn_tensor x, nn_tensor labels, const nn_loss_desc *desc) {
    nn_loss_desc d;
    nn_tensor rows, den, s;
    int ins[3], k, has_w;
    int64_t C;
    if (desc) d = *desc;
    else memset(&d, 0, sizeof d);
    if (!nn__check_logits_labels(g, opname, x, labels) || !nn__loss_desc_ok(g, opname, &d, 0, NN_REDUCTION_MEAN))
        return nn__tensor(-1);
    C = nn__n(g, x)->shape.dim[1];
    d.label_smoothing = nn__deff(d.label_smoothing, 0.0f);
    if (!(d.label_smoothing >= 0.0f && d.label_smoothing <= 1.0f) || (log_input && d.label_smoothing != 0.0f))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: label_smoothing %g is not in [0, 1]%s", opname, d.label_smoothing,
                           log_input ? " or is given to NLL, which has none" : "");
    has_w = nn__optional(g, opname, d.weight);
    if (has_w < 0) return nn__tensor(-1);
    if (d.pos_weight.id != 0) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: pos_weight is for nn_bce_with_logits_loss", opname);
    if (has_w) {
        nn__node *w;
        if (!nn__expect_f32(g, opname, d.weight, "weight")) return nn__tensor(-1);
        w = nn__n(g, d.weight);
        if (w->shape.ndim != 1 || w->shape.dim[0] != C) {
            char sw[128];
            nn__shape_str(&w->shape, sw, sizeof sw);
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: weight %s must be [C] = [%lld]", opname, sw, (long long)C);
        }
    }
    ins[0] = x.id;
    ins[1] = labels.id;
    ins[2] = has_w ? d.weight.id : -1;
    rows = nn__tensor(nn__new_node(g, NN__OP_CE_ROWS, NN_F32, nn_shape1(nn__n(g, x)->shape.dim[0]), ins, has_w ? 3 : 2));
    if (rows.id < 0) return rows;
    g->nodes[rows.id].a.loss.ignore_index = nn__defi(d.ignore_index, -100);
    g->nodes[rows.id].a.loss.log_input = log_input;
    g->nodes[rows.id].a.loss.smoothing = d.label_smoothing;
    g->nodes[rows.id].check = log_input ? "nn_nll_loss: labels outside [0, C) other than ignore_index"
                                        : "nn_cross_entropy_loss: labels outside [0, C) other than ignore_index";
    if (d.reduction != NN_REDUCTION_MEAN) return nn__reduce_loss(g, rows, &d);
    den = nn__tensor(nn__new_node(g, NN__OP_CE_WEIGHTS, NN_F32, nn_shape1(nn__n(g, x)->shape.dim[0]), ins + 1, has_w ? 2 : 1));
    if (den.id < 0) return den;
    g->nodes[den.id].a.loss.ignore_index = g->nodes[rows.id].a.loss.ignore_index;
    g->nodes[den.id].a.loss.classes = (int)C;
    d.reduction = NN_REDUCTION_SUM;
    s = nn__reduce_loss(g, rows, &d);
    den = nn__reduce_loss(g, den, &d);
    if (s.id < 0 || den.id < 0) return nn__tensor(-1);
    k = nn__op2(g, NN__OP_DIV_SCALAR, NN_F32, nn_shape1(1), s.id, den.id).id;
    return nn__tensor(k);
}

NN_API nn_tensor nn_cross_entropy_loss(nn_graph *g, nn_tensor x, nn_tensor labels, const nn_loss_desc *d) {
    return nn__ce_loss(g, "nn_cross_entropy_loss", 0, x, labels, d);
}
NN_API nn_tensor nn_nll_loss(nn_graph *g, nn_tensor x, nn_tensor labels, const nn_loss_desc *d) {
    return nn__ce_loss(g, "nn_nll_loss", 1, x, labels, d);
}

/* x0, x1 (and x2 for triplet) of one shape [B, ...]; cosine's target [B] float32. */
static nn_tensor nn__row_loss(nn_graph *g, const char *opname, int kind, int n_in, const nn_tensor *x, const nn_loss_desc *desc) {
    nn_loss_desc d;
    nn_tensor l;
    int ins[3], k;
    if (desc) d = *desc;
    else memset(&d, 0, sizeof d);
    if (!nn__check(g, opname, n_in, x) || !nn__loss_desc_ok(g, opname, &d, 0, NN_REDUCTION_MEAN)) return nn__tensor(-1);
    if (d.weight.id != 0 || d.pos_weight.id != 0)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: takes no %s", opname, d.weight.id != 0 ? "weight" : "pos_weight");
    for (k = 0; k < n_in; k++) {
        nn__node *a = nn__n(g, x[0]), *b = nn__n(g, x[k]);
        int target = kind == NN__R_COSINE && k == 2;
        if (!nn__expect_f32(g, opname, x[k], "every input")) return nn__tensor(-1);
        if (a->shape.ndim < (kind == NN__R_DICE ? 1 : 2) ||
            (target ? b->shape.ndim != 1 || b->shape.dim[0] != a->shape.dim[0] : !nn__shape_eq(&a->shape, &b->shape)) ||
            (kind != NN__R_DICE && a->shape.ndim != 2)) {
            char sa[128], sb[128];
            nn__shape_str(&a->shape, sa, sizeof sa);
            nn__shape_str(&b->shape, sb, sizeof sb);
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: input %d %s does not fit input 0 %s (%s)", opname, k, sb, sa,
                               kind == NN__R_DICE ? "both [B, ...]" : kind == NN__R_COSINE ? "x1, x2 [B, D], target [B]" : "all [B, D]");
        }
        ins[k] = x[k].id;
    }
    l = nn__tensor(nn__new_node(g, NN__OP_LOSS_ROWS, NN_F32, nn_shape1(nn__n(g, x[0])->shape.dim[0]), ins, n_in));
    if (l.id < 0) return l;
    g->nodes[l.id].a.loss.kind = kind;
    g->nodes[l.id].a.loss.margin = kind == NN__R_DICE ? nn__deff(d.smooth, 1.0f) : kind == NN__R_TRIPLET ? nn__deff(d.margin, 1.0f) : nn__deff(d.margin, 0.0f);
    return nn__reduce_loss(g, l, &d);
}

NN_API nn_tensor nn_dice_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) {
    nn_tensor x[2];
    x[0] = p;
    x[1] = t;
    return nn__row_loss(g, "nn_dice_loss", NN__R_DICE, 2, x, d);
}
NN_API nn_tensor nn_cosine_embedding_loss(nn_graph *g, nn_tensor x1, nn_tensor x2, nn_tensor t, const nn_loss_desc *d) {
    nn_tensor x[3];
    x[0] = x1;
    x[1] = x2;
    x[2] = t;
    return nn__row_loss(g, "nn_cosine_embedding_loss", NN__R_COSINE, 3, x, d);
}
NN_API nn_tensor nn_triplet_margin_loss(nn_graph *g, nn_tensor a, nn_tensor p, nn_tensor n, const nn_loss_desc *d) {
    nn_tensor x[3];
    x[0] = a;
    x[1] = p;
    x[2] = n;
    return nn__row_loss(g, "nn_triplet_margin_loss", NN__R_TRIPLET, 3, x, d);
}


/* ---- autograd rules ---- */

static void nn__grad_xent_rows(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (ga) nn__acc_grad(g, a, nn__op3(g, NN__OP_XENT_GRAD, NN_F32, g->nodes[a].shape, a, b, gy.id));
    return;
}

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

static void nn__grad_loss_ew(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    /* inputs x, t, [pos_weight]; d-based losses give t minus x's gradient */
    int ins[4], has_pw = n.n_in > 2, gt = gb && n.a.loss.kind <= NN__L_QUANTILE;
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

static void nn__grad_ce_rows(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    /* inputs x, labels, [weight] */
    int ins[4];
    if (!ga) return;
    ins[0] = a;
    ins[1] = b;
    ins[2] = gy.id;
    ins[3] = n.n_in > 2 ? n.in[2] : -1;
    t = nn__tensor(nn__new_node(g, NN__OP_CE_ROWS_GRAD, NN_F32, g->nodes[a].shape, ins, n.n_in > 2 ? 4 : 3));
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
    return;
}

static void nn__grad_div_scalar(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    /* the divisor (a count of weights) is not differentiated */
    if (ga) nn__acc_grad(g, a, nn__op2(g, NN__OP_DIV_SCALAR, NN_F32, n.shape, gy.id, b));
    return;
}

static void nn__grad_loss_rows(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    /* one gradient op per differentiated input; targets get none */
    int k, ins[4], n_x = n.a.loss.kind == NN__R_COSINE ? 2 : n.a.loss.kind == NN__R_DICE ? 1 : 3;
    for (k = 0; k < n_x; k++) {
        if (!g->nodes[n.in[k]].needs_grad) continue;
        memcpy(ins, n.in, sizeof ins);
        ins[n.n_in] = gy.id;
        t = nn__tensor(nn__new_node(g, NN__OP_LOSS_ROWS_GRAD, NN_F32, g->nodes[n.in[k]].shape, ins, n.n_in + 1));
        if (t.id >= 0) {
            g->nodes[t.id].a = n.a;
            g->nodes[t.id].a.loss.wrt = k;
        }
        nn__acc_grad(g, n.in[k], t);
    }
    return;
}

/* ---- CPU bodies ---- */

/* A checked op's bad inputs, into its counter (a device kernel's atomic_inc on the CPU). */
static void nn__count_check(nn_graph *g, const nn__node *n, int64_t bad) {
    int32_t *c = (int32_t *)g->checks.host + n->check_slot;
    if (bad > 0) *c = (int32_t)((uint32_t)*c + (uint32_t)bad);
}

static nn_result nn__cpu_xent_rows(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__node *x = &g->nodes[in[0]];
    nn__count_check(g, n, nn__xent_rows(g->ctx->threads, y, (const float *)x->buf.host, NN__I(in[1]), NULL,
                                         x->shape.dim[0], x->shape.dim[1]));
    return NN_OK;
}

static nn_result nn__cpu_xent_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    (void)nn__xent_rows(g->ctx->threads, y, NN__F(in[0]), NN__I(in[1]), NN__F(in[2]), n->shape.dim[0], n->shape.dim[1]);
    return NN_OK;
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

static nn_result nn__cpu_loss_ew(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__loss_ew_run(g->ctx->threads, y, NN__F(in[0]), NN__F(in[1]), n->a.loss.has_pos_weight ? NN__F(in[2]) : NULL,
                    n->a.loss.has_pos_weight ? g->nodes[in[2]].numel : 1, NULL, N, n->a.loss.kind, n->a.loss.a, n->a.loss.b,
                    n->a.loss.log_target);
    return NN_OK;
}

static nn_result nn__cpu_loss_ew_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__loss_ew_run(g->ctx->threads, y, NN__F(in[0]), NN__F(in[1]), n->a.loss.has_pos_weight ? NN__F(in[3]) : NULL,
                    n->a.loss.has_pos_weight ? g->nodes[in[3]].numel : 1, NN__F(in[2]), N, n->a.loss.kind, n->a.loss.a,
                    n->a.loss.b, n->a.loss.log_target);
    return NN_OK;
}

static nn_result nn__cpu_ce_rows(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__node *x = &g->nodes[in[0]];
    nn__count_check(g, n, nn__ce_rows_run(g->ctx->threads, y, (const float *)x->buf.host, NN__I(in[1]), n->n_in > 2 ? NN__F(in[2]) : NULL,
                                          NULL, x->shape.dim[0], x->shape.dim[1], n->a.loss.ignore_index, n->a.loss.log_input,
                                          n->a.loss.smoothing));
    return NN_OK;
}

static nn_result nn__cpu_ce_rows_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__ce_rows_run(g->ctx->threads, y, NN__F(in[0]), NN__I(in[1]), n->n_in > 3 ? NN__F(in[3]) : NULL, NN__F(in[2]),
                    n->shape.dim[0], n->shape.dim[1], n->a.loss.ignore_index, n->a.loss.log_input, n->a.loss.smoothing);
    return NN_OK;
}

static nn_result nn__cpu_ce_weights(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__ce_weights_forward(y, NN__I(in[0]), n->n_in > 1 ? NN__F(in[1]) : NULL, N, n->a.loss.classes, n->a.loss.ignore_index);
    return NN_OK;
}

static nn_result nn__cpu_div_scalar(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    const float *x = NN__F(in[0]);
    float d = NN__F(in[1])[0];
    int64_t i;
    for (i = 0; i < N; i++) y[i] = x[i] / d;
    return NN_OK;
}

static nn_result nn__cpu_loss_rows(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__node *x = &g->nodes[in[0]];
    nn__row_loss_forward(y, n->a.loss.kind, x->buf.host, NN__F(in[1]), n->n_in > 2 ? NN__F(in[2]) : NULL, N, x->numel / N, n->a.loss.margin);
    return NN_OK;
}

static nn_result nn__cpu_loss_rows_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t B = g->nodes[in[0]].shape.dim[0];
    nn__row_loss_backward(y, n->a.loss.kind, n->a.loss.wrt, NN__F(in[0]), NN__F(in[1]), n->n_in > 3 ? NN__F(in[2]) : NULL,
                          NN__F(in[n->n_in - 1]), B, g->nodes[in[0]].numel / B, n->a.loss.margin);
    return NN_OK;
}

/* ---- device plans: launches of kernels/FAMILY.cl ---- */

static nn_result nn__launch_xent_rows(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    nn__node *x = &g->nodes[in[0]];
    r = nn__launch_kernel(g, id, "loss", "xent_forward", (size_t)x->shape.dim[0], &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmiimi", &x->buf, &g->nodes[in[1]].buf, y, (int)x->shape.dim[0], (int)x->shape.dim[1], &g->checks,
                     n->check_slot);
    return r;
}

static nn_result nn__launch_xent_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_kernel(g, id, "loss", "xent_backward", (size_t)n->shape.dim[0], &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmmii", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, &g->nodes[in[2]].buf, y, (int)n->shape.dim[0],
                        (int)n->shape.dim[1]);
    return r;
}

static nn_result nn__launch_bce_logits(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_kernel(g, id, "loss", "bce_logits_forward", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmmi", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, y, N);
    return r;
}

static nn_result nn__launch_bce_logits_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_kernel(g, id, "loss", "bce_logits_backward", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmmmi", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, &g->nodes[in[2]].buf, y, N);
    return r;
}

static nn_result nn__launch_loss_ew(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int grad = n->op == NN__OP_LOSS_EW_GRAD, pwi = grad ? 3 : 2;
    const nn__buf *pw = n->a.loss.has_pos_weight ? &g->nodes[in[pwi]].buf : &g->one;
    int npw = n->a.loss.has_pos_weight ? (int)g->nodes[in[pwi]].numel : 1;
    r = nn__launch_kernel(g, id, "loss", grad ? "loss_ew_backward" : "loss_ew_forward", (size_t)N, &l);
    if (r != NN_OK) return r;
    return nn__args(l, "mmmmmiiiiff", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, pw, grad ? &g->nodes[in[2]].buf : &g->one, y, N,
                       npw, n->a.loss.kind, n->a.loss.log_target, (double)n->a.loss.a, (double)n->a.loss.b);
}

static nn_result nn__launch_ce_rows(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int grad = n->op == NN__OP_CE_ROWS_GRAD, wi = grad ? 3 : 2, B = (int)g->nodes[in[0]].shape.dim[0];
    r = nn__launch_kernel(g, id, "loss", grad ? "ce_rows_backward" : "ce_rows_forward", (size_t)B, &l);
    if (r != NN_OK) return r;
    if (grad) /* the backward pass counts nothing: the forward did */
        return nn__args(l, "mmmmmiiiiif", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, n->n_in > wi ? &g->nodes[in[wi]].buf : &g->one,
                        &g->nodes[in[2]].buf, y, B, (int)g->nodes[in[0]].shape.dim[1], n->a.loss.ignore_index, n->a.loss.log_input, n->n_in > wi,
                        (double)n->a.loss.smoothing);
    return nn__args(l, "mmmmiiiiifmi", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, n->n_in > wi ? &g->nodes[in[wi]].buf : &g->one,
                    y, B, (int)g->nodes[in[0]].shape.dim[1], n->a.loss.ignore_index, n->a.loss.log_input, n->n_in > wi, (double)n->a.loss.smoothing, &g->checks,
                    n->check_slot);
}

static nn_result nn__launch_ce_weights(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_kernel(g, id, "loss", "ce_weights", (size_t)N, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmiiii", &g->nodes[in[0]].buf, n->n_in > 1 ? &g->nodes[in[1]].buf : &g->one, y, N,
                     n->a.loss.classes, n->a.loss.ignore_index, n->n_in > 1);
    return r;
}

static nn_result nn__launch_div_scalar(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_kernel(g, id, "loss", "div_scalar", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmmi", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, y, N);
    return r;
}

static nn_result nn__launch_loss_rows(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int grad = n->op == NN__OP_LOSS_ROWS_GRAD, nx = n->n_in - grad, B = (int)g->nodes[in[0]].shape.dim[0];
    r = nn__launch_kernel(g, id, "loss", grad ? "rows_backward" : "rows_forward", (size_t)B, &l);
    if (r != NN_OK) return r;
    return nn__args(l, "mmmmmiiiif", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, nx > 2 ? &g->nodes[in[2]].buf : &g->one,
                       grad ? &g->nodes[in[n->n_in - 1]].buf : &g->one, y, B, (int)(g->nodes[in[0]].numel / B), n->a.loss.kind,
                       grad ? n->a.loss.wrt : 0, (double)n->a.loss.margin);
}
