/* The loss family's cross-entropies over rows of classes: the fused softmax cross-entropy
   (nn_softmax_cross_entropy), and nn_cross_entropy_loss / nn_nll_loss with class weights,
   ignore_index and label smoothing (src/ops/loss/elementwise.c says how the family is laid
   out). */
#include "../../base/internal.h"
#include "../../base/registry.h"
#include "../../../kernels/loss.h"

/* ==== softmax cross-entropy (nn_softmax_cross_entropy, fused): logits [B, C] float32,
   labels [B] int32 -> XENT_ROWS [B], logsumexp(x[b]) - x[b, label[b]], then its mean [1];
   XENT_GRAD, its gradient dx [B, C] = dy[b] * (softmax(x[b]) - onehot(label[b])). A label
   outside [0, C) gives 0 and counts as a bad input. ==== */

NN_API nn_tensor nn_softmax_cross_entropy(nn_graph *g, nn_tensor logits, nn_tensor labels) {
    nn_tensor rows;
    if (!nn__check_logits_labels(g, "nn_softmax_cross_entropy", logits, labels)) return nn__tensor(-1);
    rows = nn__op2(g, NN__OP_XENT_ROWS, NN_F32, nn_shape1(nn__n(g, logits)->shape.dim[0]), logits.id, labels.id);
    if (rows.id > 0) g->nodes[rows.id].check = "nn_softmax_cross_entropy: labels outside [0, C)";
    return nn_mean(g, rows);
}

#define nn__plan_xent_rows nn__no_plan
#define nn__grad_xent_grad nn__grad_none
#define nn__plan_xent_grad nn__no_plan

static void nn__grad_xent_rows(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (ga) nn__acc_grad(g, a, nn__op3(g, NN__OP_XENT_GRAD, NN_F32, g->nodes[a].shape, a, b, gy.id));
    return;
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

/* XENT_GRAD n's dloss on a device: its input dy [B], or, when dy is the mean's expand of a
   scalar folded in (src/ops/fuse.c's nn__fuse_tails), that scalar (g->one for a folded fill
   of 1, the loss's seed) and the expand's factor */
static void nn__xent_dloss(const nn_graph *g, const nn__node *n, const nn__buf **d, float *scale, int *stride) {
    const nn__node *e = &g->nodes[n->in[2]];
    int folded = e->fused < 0 && e->op == NN__OP_EXPAND_SCALAR;
    *d = !folded ? &e->buf : g->nodes[e->in[0]].fused < 0 ? &g->one : &g->nodes[e->in[0]].buf;
    *scale = folded ? e->a.reduce.scale : 1.0f;
    *stride = !folded;
}

/* one work-group per row (GPU devices, long rows: softmax.c's nn__row_group_wg) */
static nn_result nn__launch_xent_rows_group(nn_graph *g, int id, size_t wg) {
    nn__node *n = &g->nodes[id];
    const nn__node *x = &g->nodes[n->in[0]];
    NN__KWITH(xent_group_forward, nn__launch_groups(g, id, "loss", "xent_group_forward", (size_t)x->shape.dim[0], wg, &l));
    k.x = &x->buf;
    k.label = &g->nodes[n->in[1]].buf;
    k.loss = &n->buf;
    k.B = (int)x->shape.dim[0];
    k.C = (int)x->shape.dim[1];
    k.bad = &g->checks;
    k.slot = n->check_slot;
    k.tmp = wg * 4;
    return nn__kargs_xent_group_forward(l, &k);
}

static nn_result nn__launch_xent_grad_group(nn_graph *g, int id, size_t wg) {
    nn__node *n = &g->nodes[id];
    NN__KWITH(xent_group_backward, nn__launch_groups(g, id, "loss", "xent_group_backward", (size_t)n->shape.dim[0], wg, &l));
    k.x = &g->nodes[n->in[0]].buf;
    k.label = &g->nodes[n->in[1]].buf;
    nn__xent_dloss(g, n, &k.dloss, &k.dscale, &k.dstride);
    k.dx = &n->buf;
    k.B = (int)n->shape.dim[0];
    k.C = (int)n->shape.dim[1];
    k.tmp = wg * 4;
    return nn__kargs_xent_group_backward(l, &k);
}

static nn_result nn__launch_xent_rows(nn_graph *g, int id) {
    const nn__node *x0 = &g->nodes[g->nodes[id].in[0]];
    size_t wg = nn__row_group_wg(g, x0->shape.dim[1]);
    if (wg && x0->shape.dim[0] > 0) return nn__launch_xent_rows_group(g, id, wg);
    NN__KROWS(xent_forward, "loss");
    k.label = &g->nodes[n->in[1]].buf;
    k.loss = &n->buf;
    k.bad = &g->checks;
    k.slot = n->check_slot;
    return nn__kargs_xent_forward(l, &k);
}

static nn_result nn__launch_xent_grad(nn_graph *g, int id) {
    size_t wg = nn__row_group_wg(g, g->nodes[id].shape.dim[1]);
    if (wg && g->nodes[id].shape.dim[0] > 0) return nn__launch_xent_grad_group(g, id, wg);
    NN__KLAUNCH(xent_backward, "loss", "xent_backward", n->shape.dim[0]);
    k.x = &g->nodes[n->in[0]].buf;
    nn__rows_operand(g, n->in[1], &k.label, &k.lidx, &k.ln);
    nn__xent_dloss(g, n, &k.dloss, &k.dscale, &k.dstride);
    k.dx = &n->buf;
    k.B = (int)n->shape.dim[0];
    k.C = (int)n->shape.dim[1];
    return nn__kargs_xent_backward(l, &k);
}

/* ==== cross-entropy and NLL (nn_cross_entropy_loss, nn_nll_loss): x [B, C] (logits, or
   log-probabilities for NLL), labels [B] int32, class weights w [C] -> CE_ROWS [B],
   (1 - eps) * w[t] * -logp[t] + eps / C * sum_c w[c] * -logp[c] (eps: label smoothing;
   0 for ignore_index), then the reduction: the mean divides by the rows' weights
   (CE_WEIGHTS, DIV_SCALAR below), as PyTorch's. CE_ROWS_GRAD: dx [B, C] given dy [B]. A
   label outside [0, C) other than ignore_index counts as a bad input. ==== */

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

#define nn__plan_ce_rows nn__no_plan
#define nn__grad_ce_rows_grad nn__grad_none
#define nn__plan_ce_rows_grad nn__no_plan

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

static nn_result nn__cpu_ce_rows(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__node *x = &g->nodes[in[0]];
    nn__count_check(g, n, nn__ce_rows_run(g->ctx->threads, y, (const float *)x->buf.host, NN__I(in[1]), n->n_in > 2 ? NN__F(in[2]) : NULL,
                                          NULL, x->shape.dim[0], x->shape.dim[1], n->a.loss.ignore_index, n->a.loss.log_input,
                                          n->a.loss.smoothing));
    return NN_OK;
}

/* inputs x, labels, dy, [weight] */
static nn_result nn__cpu_ce_rows_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__ce_rows_run(g->ctx->threads, y, NN__F(in[0]), NN__I(in[1]), n->n_in > 3 ? NN__F(in[3]) : NULL, NN__F(in[2]),
                    n->shape.dim[0], n->shape.dim[1], n->a.loss.ignore_index, n->a.loss.log_input, n->a.loss.smoothing);
    return NN_OK;
}

/* one work-group per row (GPU devices, long rows: softmax.c's nn__row_group_wg) */
static nn_result nn__launch_ce_rows_group(nn_graph *g, int id, size_t wg) {
    nn__node *n = &g->nodes[id];
    const nn__node *x = &g->nodes[n->in[0]];
    NN__KWITH(ce_group_forward, nn__launch_groups(g, id, "loss", "ce_group_forward", (size_t)x->shape.dim[0], wg, &l));
    k.x = &x->buf;
    k.B = (int)x->shape.dim[0];
    k.C = (int)x->shape.dim[1];
    k.label = &g->nodes[n->in[1]].buf;
    k.w = n->n_in > 2 ? &g->nodes[n->in[2]].buf : &g->one;
    k.loss = &n->buf;
    k.ignore = n->a.loss.ignore_index;
    k.log_input = n->a.loss.log_input;
    k.has_w = n->n_in > 2;
    k.eps = n->a.loss.smoothing;
    k.bad = &g->checks;
    k.slot = n->check_slot;
    k.tmp = wg * 4;
    return nn__kargs_ce_group_forward(l, &k);
}

static nn_result nn__launch_ce_rows_grad_group(nn_graph *g, int id, size_t wg) {
    nn__node *n = &g->nodes[id];
    const nn__node *x = &g->nodes[n->in[0]];
    NN__KWITH(ce_group_backward, nn__launch_groups(g, id, "loss", "ce_group_backward", (size_t)x->shape.dim[0], wg, &l));
    k.x = &x->buf;
    k.B = (int)x->shape.dim[0];
    k.C = (int)x->shape.dim[1];
    k.label = &g->nodes[n->in[1]].buf;
    k.w = n->n_in > 3 ? &g->nodes[n->in[3]].buf : &g->one;
    k.dloss = &g->nodes[n->in[2]].buf;
    k.dx = &n->buf;
    k.ignore = n->a.loss.ignore_index;
    k.log_input = n->a.loss.log_input;
    k.has_w = n->n_in > 3;
    k.eps = n->a.loss.smoothing;
    k.tmp = wg * 4;
    return nn__kargs_ce_group_backward(l, &k);
}

static nn_result nn__launch_ce_rows(nn_graph *g, int id) {
    const nn__node *x0 = &g->nodes[g->nodes[id].in[0]];
    size_t wg = nn__row_group_wg(g, x0->shape.dim[1]);
    if (wg && x0->shape.dim[0] > 0) return nn__launch_ce_rows_group(g, id, wg);
    NN__KROWS(ce_rows_forward, "loss");
    k.label = &g->nodes[n->in[1]].buf;
    k.w = n->n_in > 2 ? &g->nodes[n->in[2]].buf : &g->one;
    k.loss = &n->buf;
    k.ignore = n->a.loss.ignore_index;
    k.log_input = n->a.loss.log_input;
    k.has_w = n->n_in > 2;
    k.eps = n->a.loss.smoothing;
    k.bad = &g->checks;
    k.slot = n->check_slot;
    return nn__kargs_ce_rows_forward(l, &k);
}

/* the backward pass counts nothing: the forward did */
static nn_result nn__launch_ce_rows_grad(nn_graph *g, int id) {
    const nn__node *x0 = &g->nodes[g->nodes[id].in[0]];
    size_t wg = nn__row_group_wg(g, x0->shape.dim[1]);
    if (wg && x0->shape.dim[0] > 0) return nn__launch_ce_rows_grad_group(g, id, wg);
    NN__KROWS(ce_rows_backward, "loss");
    k.label = &g->nodes[n->in[1]].buf;
    k.w = n->n_in > 3 ? &g->nodes[n->in[3]].buf : &g->one;
    k.dloss = &g->nodes[n->in[2]].buf;
    k.dx = &n->buf;
    k.ignore = n->a.loss.ignore_index;
    k.log_input = n->a.loss.log_input;
    k.has_w = n->n_in > 3;
    k.eps = n->a.loss.smoothing;
    return nn__kargs_ce_rows_backward(l, &k);
}

/* ==== cross-entropy weights: labels [B] int32, w [C] -> CE_WEIGHTS [B], the weight each row
   counts with in cross-entropy's mean: w[label] (1 without w), 0 for an ignored label.
   Made by nn__ce_loss above; no gradient flows (the labels are integers). ==== */

#define nn__grad_ce_weights nn__grad_none
#define nn__plan_ce_weights nn__no_plan

static nn_result nn__cpu_ce_weights(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__ce_weights_forward(y, NN__I(in[0]), n->n_in > 1 ? NN__F(in[1]) : NULL, N, n->a.loss.classes, n->a.loss.ignore_index);
    return NN_OK;
}

static nn_result nn__launch_ce_weights(nn_graph *g, int id) {
    NN__KLAUNCH(ce_weights, "loss", "ce_weights", n->numel);
    k.label = &g->nodes[n->in[0]].buf;
    k.w = n->n_in > 1 ? &g->nodes[n->in[1]].buf : &g->one;
    k.y = &n->buf;
    k.B = (int)n->numel;
    k.C = n->a.loss.classes;
    k.ignore = n->a.loss.ignore_index;
    k.has_w = n->n_in > 1;
    return nn__kargs_ce_weights(l, &k);
}

/* ==== div scalar: x [any], d [1] -> DIV_SCALAR [x's shape], x / d[0]: cross-entropy's
   weighted mean, the sum over the sum of weights. Its gradient divides dy by the same d
   (the weights, a count of labels, are not differentiated). ==== */

#define nn__plan_div_scalar nn__no_plan

static void nn__grad_div_scalar(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (ga) nn__acc_grad(g, a, nn__op2(g, NN__OP_DIV_SCALAR, NN_F32, n.shape, gy.id, b));
    return;
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

static nn_result nn__launch_div_scalar(nn_graph *g, int id) {
    NN__KLAUNCH(div_scalar, "loss", "div_scalar", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.d = &g->nodes[n->in[1]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    return nn__kargs_div_scalar(l, &k);
}
