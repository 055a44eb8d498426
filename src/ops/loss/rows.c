/* The loss family's losses of whole rows (src/ops/loss/elementwise.c says how the family is
   laid out). */
#include "../../base/internal.h"
#include "../../base/registry.h"
#include "../../../kernels/loss.h"

/* ==== row losses (nn_dice_loss, nn_cosine_embedding_loss, nn_triplet_margin_loss:
   kernels/loss.h's NN__LOSS_ROW_KINDS): dice p, t [B, ...]; cosine x1, x2 [B, D] and
   target [B] (+-1); triplet anchor, positive, negative [B, D] -> LOSS_ROWS [B], one loss
   per row, then the desc's reduction. LOSS_ROWS_GRAD: d/d(input `wrt`) [its shape], one
   op per differentiated input (targets get none). ==== */

#define NN__R_NAME(E, name) "nn_" #name,
static const char *const nn__row_loss_names[NN__R_COUNT] = {NN__LOSS_ROW_KINDS(NN__R_NAME)};
#undef NN__R_NAME

static nn_tensor nn__row_loss(nn_graph *g, int kind, int n_in, const nn_tensor *x, const nn_loss_desc *desc) {
    const char *opname = nn__row_loss_names[kind];
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

/* nn__row_loss of inputs a, b and (n_in 3) c */
static nn_tensor nn__row_loss3(nn_graph *g, int kind, int n_in, nn_tensor a, nn_tensor b, nn_tensor c, const nn_loss_desc *d) {
    nn_tensor x[3];
    x[0] = a;
    x[1] = b;
    x[2] = c;
    return nn__row_loss(g, kind, n_in, x, d);
}

NN_API nn_tensor nn_dice_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) {
    return nn__row_loss3(g, NN__R_DICE, 2, p, t, NN_NONE, d);
}
NN_API nn_tensor nn_cosine_embedding_loss(nn_graph *g, nn_tensor x1, nn_tensor x2, nn_tensor t, const nn_loss_desc *d) {
    return nn__row_loss3(g, NN__R_COSINE, 3, x1, x2, t, d);
}
NN_API nn_tensor nn_triplet_margin_loss(nn_graph *g, nn_tensor a, nn_tensor p, nn_tensor n, const nn_loss_desc *d) {
    return nn__row_loss3(g, NN__R_TRIPLET, 3, a, p, n, d);
}

#define nn__plan_loss_rows nn__no_plan
#define nn__grad_loss_rows_grad nn__grad_none
#define nn__plan_loss_rows_grad nn__no_plan

static void nn__grad_loss_rows(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    /* inputs x0, x1, [x2], then dy */
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

static nn_result nn__launch_loss_rows(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__node *x0 = &g->nodes[n->in[0]];
    int B = (int)x0->shape.dim[0];
    NN__KSTART(rows_forward, "loss", "rows_forward", B);
    k.x0 = &x0->buf;
    k.x1 = &g->nodes[n->in[1]].buf;
    k.x2 = n->n_in > 2 ? &g->nodes[n->in[2]].buf : &g->one;
    k.y = &n->buf;
    k.B = B;
    k.D = (int)(x0->numel / B);
    k.kind = n->a.loss.kind;
    k.a = n->a.loss.margin;
    return nn__kargs_rows_forward(l, &k);
}

static nn_result nn__launch_loss_rows_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__node *x0 = &g->nodes[n->in[0]];
    int B = (int)x0->shape.dim[0];
    NN__KSTART(rows_backward, "loss", "rows_backward", B);
    k.x0 = &x0->buf;
    k.x1 = &g->nodes[n->in[1]].buf;
    k.x2 = n->n_in - 1 > 2 ? &g->nodes[n->in[2]].buf : &g->one;
    k.dy = &g->nodes[n->in[n->n_in - 1]].buf;
    k.dx = &n->buf;
    k.B = B;
    k.D = (int)(x0->numel / B);
    k.kind = n->a.loss.kind;
    k.which = n->a.loss.wrt;
    k.a = n->a.loss.margin;
    return nn__kargs_rows_backward(l, &k);
}
