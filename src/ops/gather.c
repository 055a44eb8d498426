/* The gather ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../nn_internal.h"
#include "../nn_ops.h"

NN_API nn_tensor nn_gather_rows(nn_graph *g, nn_tensor data, nn_tensor idx) {
    nn_tensor in[2];
    nn__node *d, *ix;
    nn_shape s;
    in[0] = data;
    in[1] = idx;
    if (!nn__check(g, "nn_gather_rows", 2, in)) return nn__tensor(-1);
    d = nn__n(g, data);
    ix = nn__n(g, idx);
    if (ix->dtype != NN_I32 || ix->shape.ndim != 1) {
        char sa[128], sb[128];
        nn__shape_str(&d->shape, sa, sizeof sa);
        nn__shape_str(&ix->shape, sb, sizeof sb);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_gather_rows: needs data [N, ...] and idx [B] int32, got %s %s and %s %s",
                           sa, nn__dtype_name(d->dtype), sb, nn__dtype_name(ix->dtype));
    }
    s = d->shape;
    s.dim[0] = ix->shape.dim[0];
    return nn__op2(g, NN__OP_GATHER_ROWS, d->dtype, s, data.id, idx.id);
}


/* ---- autograd rules ---- */

static void nn__grad_gather_rows(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (ga) nn__acc_grad(g, a, nn__op2(g, NN__OP_GATHER_ROWS_GRAD, NN_F32, g->nodes[a].shape, b, gy.id));
    return;
}

/* ---- CPU bodies ---- */

static nn_result nn__cpu_gather_rows(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__node *d = &g->nodes[in[0]];
    int64_t D = d->numel / d->shape.dim[0];
    nn__gather_rows_forward(y, d->buf.host, NN__I(in[1]), n->shape.dim[0], d->shape.dim[0], D);
    return NN_OK;
}

static nn_result nn__cpu_gather_rows_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__node *gy = &g->nodes[in[1]];
    nn__gather_rows_backward(y, NN__I(in[0]), gy->buf.host, gy->shape.dim[0], n->shape.dim[0], N / n->shape.dim[0]);
    return NN_OK;
}

/* ---- device plans: launches of kernels/FAMILY.cl ---- */

static nn_result nn__dev_gather_rows(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    nn__node *d = &g->nodes[in[0]];
    int B = (int)n->shape.dim[0], D = (int)(d->numel / d->shape.dim[0]);
    r = nn__launch_add(g, id, "gather", "gather_rows", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmmiii", &d->buf, &g->nodes[in[1]].buf, y, B, (int)d->shape.dim[0], D);
    return r;
}

static nn_result nn__dev_gather_rows_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int B = (int)g->nodes[in[1]].shape.dim[0], R = (int)n->shape.dim[0];
    r = nn__launch_add(g, id, "gather", "gather_rows_backward", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmmiii", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, y, B, R, N / R);
    return r;
}
