/* The softmax ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../base/internal.h"
#include "../base/registry.h"

/* Registry names (src/base/registry.h: nn__cpu_STEM, nn__launch_STEM, nn__grad_STEM,
   nn__plan_STEM): the functions an op shares with another, and the ones it has none of. */
#define nn__plan_softmax nn__no_plan
#define nn__cpu_log_softmax nn__cpu_softmax
#define nn__launch_log_softmax nn__launch_softmax
#define nn__plan_log_softmax nn__no_plan
#define nn__grad_softmax_grad nn__grad_none
#define nn__plan_softmax_grad nn__no_plan
#define nn__cpu_log_softmax_grad nn__cpu_softmax_grad
#define nn__launch_log_softmax_grad nn__launch_softmax_grad
#define nn__grad_log_softmax_grad nn__grad_none
#define nn__plan_log_softmax_grad nn__no_plan

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
    nn__softmax_rows(g->ctx->threads, n->op == NN__OP_LOG_SOFTMAX, y, NN__F(in[0]), NULL, N / nn__last_dim(n),
                     nn__last_dim(n));
    return NN_OK;
}

static nn_result nn__cpu_softmax_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__softmax_rows(g->ctx->threads, n->op == NN__OP_LOG_SOFTMAX_GRAD, y, NN__F(in[0]), NN__F(in[1]),
                     N / nn__last_dim(n), nn__last_dim(n));
    return NN_OK;
}

/* ---- device plans: launches of kernels/FAMILY.cl ---- */

static nn_result nn__launch_softmax(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int C = (int)nn__last_dim(n);
    r = nn__launch_kernel(g, id, "softmax", "softmax_forward", (size_t)(N / C), &l);
    if (r == NN_OK) r = nn__args(l, "mmiii", &g->nodes[in[0]].buf, y, N / C, C, n->op == NN__OP_LOG_SOFTMAX);
    return r;
}

static nn_result nn__launch_softmax_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int C = (int)nn__last_dim(n);
    r = nn__launch_kernel(g, id, "softmax", "softmax_backward", (size_t)(N / C), &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmiii", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, y, N / C, C, n->op == NN__OP_LOG_SOFTMAX_GRAD);
    return r;
}
