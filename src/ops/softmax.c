/* The softmax ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../nn_internal.h"
#include "../nn_ops.h"

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
NN_API nn_tensor nn_softmax(nn_graph *g, nn_tensor x, int dim) { return nn__rowwise(g, "nn_softmax", NN__OP_SOFTMAX, x, dim); }
NN_API nn_tensor nn_log_softmax(nn_graph *g, nn_tensor x, int dim) { return nn__rowwise(g, "nn_log_softmax", NN__OP_LOG_SOFTMAX, x, dim); }


static int64_t nn__last_dim(const nn__node *n) { return n->shape.dim[n->shape.ndim - 1]; }

/* ---- autograd rules ---- */

static void nn__grad_softmax(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__op2(g, NN__OP_SOFTMAX_GRAD, NN_F32, n.shape, id, gy.id));
    return;
}

static void nn__grad_log_softmax(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__op2(g, NN__OP_LOG_SOFTMAX_GRAD, NN_F32, n.shape, id, gy.id));
    return;
}

/* ---- CPU bodies ---- */

static nn_result nn__cpu_softmax(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__rows_run(g->ctx->threads, NN__RJ_SOFTMAX, n->op == NN__OP_LOG_SOFTMAX, y, NN__F(in[0]), NULL, NULL, NULL,
                 N / nn__last_dim(n), nn__last_dim(n));
    return NN_OK;
}

static nn_result nn__cpu_softmax_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__rows_run(g->ctx->threads, NN__RJ_SOFTMAX_GRAD, n->op == NN__OP_LOG_SOFTMAX_GRAD, y, NN__F(in[0]), NN__F(in[1]), NULL,
                 NULL, N / nn__last_dim(n), nn__last_dim(n));
    return NN_OK;
}

/* ---- device plans: launches of kernels/FAMILY.cl ---- */

static nn_result nn__dev_softmax(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int C = (int)nn__last_dim(n);
    r = nn__launch_add(g, id, "softmax", "softmax_forward", (size_t)(N / C), &l);
    if (r == NN_OK) r = nn__args(l, "mmiii", &g->nodes[in[0]].buf, y, N / C, C, n->op == NN__OP_LOG_SOFTMAX);
    return r;
}

static nn_result nn__dev_softmax_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int C = (int)nn__last_dim(n);
    r = nn__launch_add(g, id, "softmax", "softmax_backward", (size_t)(N / C), &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmiii", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, y, N / C, C, n->op == NN__OP_LOG_SOFTMAX_GRAD);
    return r;
}
