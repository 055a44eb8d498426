/* The softmax family: softmax and log-softmax over the last dim, rows of C values
   (x [..., C], y of x's shape), and their gradients; another dim is moved last and back
   by the builder. One CPU loop and one kernel pair serve
   both, told apart by a log-space flag (the log-softmax ops' aliases say so). */
#include "../base/internal.h"
#include "../base/registry.h"
#include "../../kernels/kargs.h"
#include "../../kernels/softmax_args.h"

/* ==== shared by the family: the builder, and the row length ==== */

/* The op normalises the last dim; another dim is moved last and back (two permutes). */
static nn_tensor nn__rowwise(nn_graph *g, const char *opname, int op, nn_tensor x, int dim) {
    int nd;
    if (!nn__check(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    nd = nn__n(g, x)->shape.ndim;
    if (dim < -nd || dim >= nd) {
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: dim %d out of range for x %s", opname, dim, sx);
    }
    if (dim < 0) dim += nd;
    if (dim != nd - 1) return nn_transpose(g, nn__rowwise(g, opname, op, nn_transpose(g, x, dim, nd - 1), nd - 1), dim, nd - 1);
    return nn__op1(g, op, NN_F32, nn__n(g, x)->shape, x.id);
}

static int64_t nn__last_dim(const nn__node *n) { return n->shape.dim[n->shape.ndim - 1]; }

/* The work-group size for one work-group per row of C values (softmax, log-softmax, the
   fused cross-entropy: the _group_ kernels), or 0 for one work-item per row (the kernels
   kept for short rows and CPU devices): on a GPU device, rows of NN__ROW_GROUP_MIN and
   more get nn__reduce_wg's size (from the device's largest work-group, 256 at most),
   halved while half of it still covers the row. */
#define NN__ROW_GROUP_MIN 128
static size_t nn__row_group_wg(const nn_graph *g, int64_t C) {
    size_t wg;
    if (g->ctx->dev.cpu_tuned || C < NN__ROW_GROUP_MIN) return 0;
    wg = nn__reduce_wg((nn_graph *)g);
    while (wg > 32 && (int64_t)(wg / 2) >= C) wg /= 2;
    return wg;
}

/* ==== softmax: y [..., C] = exp(x - max) / sum(exp(x - max)) along the last dim
   (torch.softmax(x, dim): dim moved last); SOFTMAX_GRAD (y, gy) is dx = y * (gy - sum(gy * y)) ==== */

NN_API nn_tensor nn_softmax(nn_graph *g, nn_tensor x, int dim) { return nn__rowwise(g, "nn_softmax", NN__OP_SOFTMAX, x, dim); }

#define nn__plan_softmax nn__no_plan
#define nn__grad_softmax_grad nn__grad_none
#define nn__plan_softmax_grad nn__no_plan

/* SOFTMAX and LOG_SOFTMAX: dx = the op's gradient op of (y, gy) */
static void nn__grad_softmax(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int grad_op = n.op == NN__OP_LOG_SOFTMAX ? NN__OP_LOG_SOFTMAX_GRAD : NN__OP_SOFTMAX_GRAD;
    nn__acc_grad(g, a, nn__op2(g, grad_op, NN_F32, n.shape, id, gy.id));
}

/* SOFTMAX and LOG_SOFTMAX */
static nn_result nn__cpu_softmax(nn_graph *g, nn__node *n) {
    int64_t C = nn__last_dim(n);
    nn__softmax_rows(g->ctx->threads, n->op == NN__OP_LOG_SOFTMAX, n->buf.host, NN__F(n->in[0]), NULL, n->numel / C, C);
    return NN_OK;
}

/* SOFTMAX_GRAD and LOG_SOFTMAX_GRAD: (y, gy) */
static nn_result nn__cpu_softmax_grad(nn_graph *g, nn__node *n) {
    int64_t C = nn__last_dim(n);
    nn__softmax_rows(g->ctx->threads, n->op == NN__OP_LOG_SOFTMAX_GRAD, n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]),
                     n->numel / C, C);
    return NN_OK;
}

/* one work-group per row (nn__row_group_wg) */
static nn_result nn__launch_softmax_group(nn_graph *g, int id, size_t wg) {
    nn__node *n = &g->nodes[id];
    int N = (int)n->numel, C = (int)nn__last_dim(n);
    NN__KWITH(softmax_group_forward, nn__launch_groups(g, id, "softmax", "softmax_group_forward", (size_t)(N / C), wg, &l));
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.rows = N / C;
    k.C = C;
    k.log_space = n->op == NN__OP_LOG_SOFTMAX;
    k.tmp = wg * 4;
    return nn__kargs_softmax_group_forward(l, &k);
}

static nn_result nn__launch_softmax_grad_group(nn_graph *g, int id, size_t wg) {
    nn__node *n = &g->nodes[id];
    int N = (int)n->numel, C = (int)nn__last_dim(n);
    NN__KWITH(softmax_group_backward, nn__launch_groups(g, id, "softmax", "softmax_group_backward", (size_t)(N / C), wg, &l));
    k.y = &g->nodes[n->in[0]].buf;
    k.dy = &g->nodes[n->in[1]].buf;
    k.dx = &n->buf;
    k.rows = N / C;
    k.C = C;
    k.log_space = n->op == NN__OP_LOG_SOFTMAX_GRAD;
    k.tmp = wg * 4;
    return nn__kargs_softmax_group_backward(l, &k);
}

/* one work-item per row, or one work-group (GPU devices, long rows) */
static nn_result nn__launch_softmax(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int N = (int)n->numel, C = (int)nn__last_dim(n);
    size_t wg = nn__row_group_wg(g, C);
    if (wg && N / C > 0) return nn__launch_softmax_group(g, id, wg);
    NN__KSTART(softmax_forward, "softmax", "softmax_forward", (N / C));
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.rows = N / C;
    k.C = C;
    k.log_space = n->op == NN__OP_LOG_SOFTMAX;
    return nn__kargs_softmax_forward(l, &k);
}

static nn_result nn__launch_softmax_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int N = (int)n->numel, C = (int)nn__last_dim(n);
    size_t wg = nn__row_group_wg(g, C);
    if (wg && N / C > 0) return nn__launch_softmax_grad_group(g, id, wg);
    NN__KSTART(softmax_backward, "softmax", "softmax_backward", (N / C));
    k.y = &g->nodes[n->in[0]].buf;
    k.dy = &g->nodes[n->in[1]].buf;
    k.dx = &n->buf;
    k.rows = N / C;
    k.C = C;
    k.log_space = n->op == NN__OP_LOG_SOFTMAX_GRAD;
    return nn__kargs_softmax_backward(l, &k);
}

/* ==== log_softmax: y [..., C] = x - max - log(sum(exp(x - max))) along the last dim
   (torch.log_softmax(x, dim): dim moved last); LOG_SOFTMAX_GRAD (y, gy) is dx = gy - exp(y) * sum(gy).
   Softmax's loop and kernels in log space ==== */

NN_API nn_tensor nn_log_softmax(nn_graph *g, nn_tensor x, int dim) {
    return nn__rowwise(g, "nn_log_softmax", NN__OP_LOG_SOFTMAX, x, dim);
}

#define nn__cpu_log_softmax nn__cpu_softmax
#define nn__launch_log_softmax nn__launch_softmax
#define nn__plan_log_softmax nn__no_plan
#define nn__cpu_log_softmax_grad nn__cpu_softmax_grad
#define nn__launch_log_softmax_grad nn__launch_softmax_grad
#define nn__grad_log_softmax_grad nn__grad_none
#define nn__plan_log_softmax_grad nn__no_plan
#define nn__grad_log_softmax nn__grad_softmax
