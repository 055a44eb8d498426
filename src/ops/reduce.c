/* The reduce ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../nn_internal.h"
#include "../nn_ops.h"

/* scale * the sum of node x's elements, [1] (other families: losses' reductions). */
static nn_tensor nn__sum_all_op(nn_graph *g, int x, float scale) {
    nn_tensor t = nn__op1(g, NN__OP_SUM_ALL, NN_F32, nn_shape1(1), x);
    if (t.id >= 0) g->nodes[t.id].a.reduce.scale = scale;
    return t;
}

/* min(1, max_norm / (sqrt(node sumsq) + 1e-6)), [1]: the optimizer's gradient clipping. */
static nn_tensor nn__clip_scale_op(nn_graph *g, int sumsq, float max_norm) {
    nn_tensor t = nn__op1(g, NN__OP_CLIP_SCALE, NN_F32, nn_shape1(1), sumsq);
    if (t.id >= 0) g->nodes[t.id].a.reduce.max_norm = max_norm;
    return t;
}

static nn_tensor nn__sum_all(nn_graph *g, const char *opname, nn_tensor x, int mean) {
    if (!nn__check(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    return nn__sum_all_op(g, x.id, mean ? (float)(1.0 / (double)g->nodes[x.id].numel) : 1.0f);
}
NN_API nn_tensor nn_sum(nn_graph *g, nn_tensor x) { return nn__sum_all(g, "nn_sum", x, 0); }
NN_API nn_tensor nn_mean(nn_graph *g, nn_tensor x) { return nn__sum_all(g, "nn_mean", x, 1); }

/* logits [B, C] float32 with labels [B] int32 */

NN_API nn_tensor nn_argmax(nn_graph *g, nn_tensor x) {
    nn__node *n = NULL;
    if (!nn__check(g, "nn_argmax", 1, &x) || !nn__expect_f32(g, "nn_argmax", x, "x")) return nn__tensor(-1);
    n = nn__n(g, x);
    if (n->shape.ndim != 2) return nn__op_fail(g, NN_ERR_SHAPE, "nn_argmax: x must be 2-D [B, C]");
    return nn__op1(g, NN__OP_ARGMAX, NN_I32, nn_shape1(n->shape.dim[0]), x.id);
}

NN_API nn_tensor nn_accuracy(nn_graph *g, nn_tensor logits, nn_tensor labels) {
    if (!nn__check_logits_labels(g, "nn_accuracy", logits, labels)) return nn__tensor(-1);
    return nn_mean(g, nn__op2(g, NN__OP_CORRECT_ROWS, NN_F32, nn_shape1(nn__n(g, logits)->shape.dim[0]), logits.id, labels.id));
}


/* ---- autograd rules ---- */

static void nn__grad_sum_all(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    t = nn__op1(g, NN__OP_EXPAND_SCALAR, NN_F32, g->nodes[a].shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
    return;
}

static void nn__grad_expand_scalar(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    t = nn__sum_all_op(g, gy.id, n.a.reduce.scale);
    nn__acc_grad(g, a, t);
    return;
}

/* ---- CPU bodies ---- */

static nn_result nn__cpu_sum_all(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__sum_all_forward(y, NN__F(in[0]), g->nodes[in[0]].numel, n->a.reduce.scale); return NN_OK;

}

static nn_result nn__cpu_expand_scalar(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__expand_scalar_forward(y, NN__F(in[0]), N, n->a.reduce.scale); return NN_OK;

}

static nn_result nn__cpu_argmax(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__node *x = &g->nodes[in[0]];
    nn__argmax_forward((int32_t *)y, x->buf.host, x->shape.dim[0], x->shape.dim[1]);
    return NN_OK;
}

static nn_result nn__cpu_correct_rows(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__node *x = &g->nodes[in[0]];
    nn__correct_forward(y, x->buf.host, NN__I(in[1]), x->shape.dim[0], x->shape.dim[1]);
    return NN_OK;
}

/* The global gradient norm for clipping (optimizer ops, kernels in reduce.cl). */
static nn_result nn__cpu_grad_sumsq(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    const float *x = NN__F(in[0]);
    int64_t i, m = g->nodes[in[0]].numel;
    double s = n->n_in > 1 ? NN__F(in[1])[0] : 0.0;
    for (i = 0; i < m; i++) s += (double)x[i] * x[i];
    y[0] = (float)s;
    return NN_OK;
}

static nn_result nn__cpu_clip_scale(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    float c = n->a.reduce.max_norm / (sqrtf(NN__F(in[0])[0]) + 1e-6f);
    y[0] = c > 1.0f ? 1.0f : c; /* a NaN norm gives NaN, as torch.clamp */
    return NN_OK;
}

/* ---- device plans: launches of kernels/FAMILY.cl ---- */

static nn_result nn__dev_sum_all(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    size_t wg = nn__reduce_wg(g);
    int m = (int)g->nodes[in[0]].numel;
    r = nn__launch_add(g, id, "reduce", n->op == NN__OP_SUM_ALL ? "sum_all" : "grad_sumsq", wg, &l);
    if (r != NN_OK) return r;
    l->gws[0] = l->lws[0] = wg;
    l->use_lws = 1;
    if (n->op == NN__OP_SUM_ALL) return nn__args(l, "mmifL", &g->nodes[in[0]].buf, y, m, (double)n->a.reduce.scale, wg * 4);
    return nn__args(l, "mmmiiL", &g->nodes[in[0]].buf, n->n_in > 1 ? &g->nodes[in[1]].buf : &g->one, y, m, n->n_in > 1, wg * 4);
}

static nn_result nn__dev_expand_scalar(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_add(g, id, "elementwise", "expand_scalar", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmif", &g->nodes[in[0]].buf, y, N, (double)n->a.reduce.scale);
    return r;
}

static nn_result nn__dev_argmax_rows(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    nn__node *x = &g->nodes[in[0]];
    int B = (int)x->shape.dim[0], C = (int)x->shape.dim[1];
    if (n->op == NN__OP_ARGMAX) {
        r = nn__launch_add(g, id, "softmax", "argmax_rows", (size_t)B, &l);
        if (r == NN_OK) r = nn__args(l, "mmii", &x->buf, y, B, C);
    } else {
        r = nn__launch_add(g, id, "softmax", "correct_rows", (size_t)B, &l);
        if (r == NN_OK) r = nn__args(l, "mmmii", &x->buf, &g->nodes[in[1]].buf, y, B, C);
    }
    return r;
}

static nn_result nn__dev_clip_scale(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_add(g, id, "reduce", "clip_scale", 1, &l);
    if (r == NN_OK) r = nn__args(l, "mmf", &g->nodes[in[0]].buf, y, (double)n->a.reduce.max_norm);
    return r;
}
