/* The elementwise family's selections: masked_fill and where, each operand broadcast to
   the output's shape (broadcast.c); their gradients pass gy through a mask. */
#include "../../base/internal.h"
#include "../../base/registry.h"
#include "../../../kernels/kargs.h"
#include "../../../kernels/elementwise_args.h"

/* ==== masked_fill: y [x's shape] = (mask != 0) != invert ? value : x, mask broadcast to
   x's shape (torch.Tensor.masked_fill); inputs (mask, x); its gradient is gy where x was
   kept, itself a masked fill of 0 ==== */

/* y = (mask != 0) != invert ? value : x, of x's shape (mask broadcast to it) */
static nn_tensor nn__masked_fill_op(nn_graph *g, nn_shape sh, int mask, int x, float value, int invert) {
    nn_tensor t = nn__op2(g, NN__OP_MASKED_FILL, NN_F32, sh, mask, x);
    if (t.id >= 0) {
        g->nodes[t.id].a.ew.s = value;
        g->nodes[t.id].a.ew.invert = invert;
    }
    return t;
}

NN_API nn_tensor nn_masked_fill(nn_graph *g, nn_tensor x, nn_tensor mask, float value) {
    static const char *const names[2] = {"x", "mask"};
    nn_tensor in[2];
    nn_shape out;
    in[0] = x;
    in[1] = mask;
    if (!nn__check0(g, "nn_masked_fill", 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_masked_fill", x, "x") || !nn__expect_f32(g, "nn_masked_fill", mask, "mask"))
        return nn__tensor(-1);
    if (!nn__broadcast_shape(g, "nn_masked_fill", 2, in, names, &out)) return nn__tensor(-1);
    if (!nn__shape_eq(&out, &nn__n(g, x)->shape)) {
        char sx[128], sm[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        nn__shape_str(&nn__n(g, mask)->shape, sm, sizeof sm);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_masked_fill: mask %s must broadcast to x's shape %s", sm, sx);
    }
    return nn__masked_fill_op(g, out, mask.id, x.id, value, 0);
}

#define nn__plan_masked_fill nn__no_plan

/* inputs (mask, x): gy where x was kept */
static void nn__grad_masked_fill(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (gb) nn__acc_grad(g, b, nn__masked_fill_op(g, n.shape, a, gy.id, 0.0f, n.a.ew.invert));
}

static nn_result nn__cpu_masked_fill(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__bcast_node(g, n, 2, &bc);
    nn__masked_fill_forward(g->ctx->threads, n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]), n->a.ew.s, n->a.ew.invert, &bc);
    return NN_OK;
}

static nn_result nn__launch_masked_fill(nn_graph *g, int id) {
    NN__BCAST_KLAUNCH(masked_fill_bcast, 2);
    k.m = &g->nodes[n->in[0]].buf;
    k.x = &g->nodes[n->in[1]].buf;
    k.y = &n->buf;
    k.value = n->a.ew.s;
    k.invert = n->a.ew.invert;
    k.sm = st[0];
    k.sx = st[1];
    return nn__kargs_masked_fill_bcast(l, &k);
}

/* ==== where: y = cond != 0 ? a : b, the three broadcast together (torch.where); a's
   gradient is gy where cond is nonzero, b's gy elsewhere (masked fills of gy, summed to
   each operand's shape); cond gets none ==== */

NN_API nn_tensor nn_where(nn_graph *g, nn_tensor cond, nn_tensor a, nn_tensor b) {
    static const char *const names[3] = {"cond", "a", "b"};
    nn_tensor in[3];
    nn_shape out;
    in[0] = cond;
    in[1] = a;
    in[2] = b;
    if (!nn__check0(g, "nn_where", 3, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_where", cond, "cond") || !nn__expect_f32(g, "nn_where", a, "a") ||
        !nn__expect_f32(g, "nn_where", b, "b"))
        return nn__tensor(-1);
    if (!nn__broadcast_shape(g, "nn_where", 3, in, names, &out)) return nn__tensor(-1);
    return nn__op3(g, NN__OP_WHERE, NN_F32, out, cond.id, a.id, b.id);
}

#define nn__plan_where nn__no_plan

/* inputs (cond, a, b): gy where cond reaches a, gy elsewhere reaches b; cond gets none */
static void nn__grad_where(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int k;
    for (k = 1; k <= 2; k++) {
        int x = n.in[k];
        nn_tensor t;
        if (!g->nodes[x].needs_grad) continue;
        t = nn__masked_fill_op(g, n.shape, n.in[0], gy.id, 0.0f, k == 1);
        if (t.id < 0) return;
        nn__acc_grad(g, x, nn__sum_to_op(g, t.id, g->nodes[x].shape));
    }
}

static nn_result nn__cpu_where(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__bcast_node(g, n, 3, &bc);
    nn__where_forward(g->ctx->threads, n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]), NN__F(n->in[2]), &bc);
    return NN_OK;
}

static nn_result nn__launch_where(nn_graph *g, int id) {
    NN__BCAST_KLAUNCH(where_bcast, 3);
    k.c = &g->nodes[n->in[0]].buf;
    k.a = &g->nodes[n->in[1]].buf;
    k.b = &g->nodes[n->in[2]].buf;
    k.y = &n->buf;
    k.sc = st[0];
    k.sa = st[1];
    k.sb = st[2];
    return nn__kargs_where_bcast(l, &k);
}
