/* The elementwise family's broadcasting (NumPy's and PyTorch's rules): the shape rule and
   the geometry that the binary ops (binary.c) and where/masked_fill (select.c) share, and
   the two ops that broadcast alone, expand and its gradient sum_to. The geometry is
   src/cpu/elementwise.c's nn__bcast: the output's dims merged where every operand allows,
   each operand's strides 0 where it is broadcast. */
#include "../../base/internal.h"
#include "../../base/registry.h"
#include "../../../kernels/kargs.h"
#include "../../../kernels/elementwise_args.h"

/* ==== shared by the broadcasting ops: the shape rule, the CPU geometry of a node, the
   kernels' int8 form of it ==== */

/* The shape the n shapes broadcast to: aligned at their last dims, each dim 1 or the
   largest, missing leading dims 1. 0 (and the op fails, naming the operands and shapes)
   when they do not broadcast. */
static int nn__broadcast_shape(nn_graph *g, const char *opname, int n, const nn_tensor *t, const char *const *names,
                               nn_shape *out) {
    int k, d;
    memset(out, 0, sizeof *out);
    for (k = 0; k < n; k++)
        if (nn__n(g, t[k])->shape.ndim > out->ndim) out->ndim = nn__n(g, t[k])->shape.ndim;
    for (d = 0; d < out->ndim; d++) out->dim[d] = 1;
    for (k = 0; k < n; k++) {
        const nn_shape *s = &nn__n(g, t[k])->shape;
        for (d = 0; d < s->ndim; d++) {
            int od = out->ndim - s->ndim + d;
            if (s->dim[d] == out->dim[od] || s->dim[d] == 1) continue;
            if (out->dim[od] == 1) {
                out->dim[od] = s->dim[d];
                continue;
            }
            {
                char msg[512], sh[128];
                size_t used = 0;
                int j;
                for (j = 0; j < n && used < sizeof msg; j++) {
                    nn__shape_str(&nn__n(g, t[j])->shape, sh, sizeof sh);
                    used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s %s", j ? (j == n - 1 ? " and " : ", ") : "",
                                             names[j], sh);
                }
                nn__op_fail(g, NN_ERR_SHAPE, "%s: shapes %s do not broadcast (dim %d from the end: %lld against %lld)",
                            opname, msg, out->ndim - od, (long long)s->dim[d], (long long)out->dim[od]);
                return 0;
            }
        }
    }
    return nn__shape_fits(g, opname, out);
}

/* The broadcast geometry of node n over its first n_op inputs (the output's shape). */
static void nn__bcast_node(nn_graph *g, const nn__node *n, int n_op, nn__bcast *bc) {
    const nn_shape *s[3];
    int k;
    for (k = 0; k < n_op; k++) s[k] = &g->nodes[n->in[k]].shape;
    nn__bcast_init(bc, &n->shape, s, n_op);
}

/* The geometry as kernels/elementwise.cl's broadcast kernels take it: dims and each
   operand's strides as int8s (dims beyond nd are 1, strides 0). */
static void nn__bcast_ints(const nn__bcast *bc, int dims[8], int st[3][8]) {
    int d, k;
    memset(st, 0, 3 * 8 * sizeof(int));
    for (d = 0; d < 8; d++) dims[d] = d < bc->nd ? (int)bc->dim[d] : 1;
    for (k = 0; k < bc->n_op; k++)
        for (d = 0; d < bc->nd; d++) st[k][d] = (int)bc->st[k][d];
}

/* A broadcast kernel's launch function's opening, node n over its first n_op inputs: n,
   dims and st (nn__bcast_ints), and NN__KSTART's l, r and k (one work-item per element;
   its element count n, nd and dims set). */
#define NN__BCAST_KLAUNCH(sig, n_op)                  \
    nn__node *n = &g->nodes[id];                      \
    int dims[8], st[3][8];                            \
    nn__bcast bc;                                     \
    nn__bcast_node(g, n, n_op, &bc);                  \
    nn__bcast_ints(&bc, dims, st);                    \
    NN__KSTART(sig, "elementwise", #sig, n->numel);   \
    k.n = (int)n->numel;                              \
    k.nd = bc.nd;                                     \
    k.dims = dims

/* ==== sum_to: y [sh] = x [...] summed over the dims where sh is 1 or missing, sh a shape
   that broadcasts to x's: the gradient of every broadcast (add, mul, where, expand, ...);
   its own gradient is EXPAND back to x's shape. x float32 or 16-bit (NN__OPF_HALF: read
   as the float32 values it widens to), y float32 ==== */

/* Node x summed to shape sh: x itself when the shapes are the same. */
static nn_tensor nn__sum_to_op(nn_graph *g, int x, nn_shape sh) {
    if (nn__shape_eq(&g->nodes[x].shape, &sh)) return nn__tensor(x);
    return nn__op1(g, NN__OP_SUM_TO, NN_F32, sh, x);
}

#define nn__plan_sum_to nn__no_plan

static void nn__grad_sum_to(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__op1(g, NN__OP_EXPAND, NN_F32, g->nodes[a].shape, gy.id));
}

/* The geometry of a sum to n's shape: over the input's shape, with n's as its operand. */
static void nn__sum_to_geometry(nn_graph *g, const nn__node *n, nn__bcast *bc) {
    const nn_shape *s = &n->shape;
    nn__bcast_init(bc, &g->nodes[n->in[0]].shape, &s, 1);
}

static nn_result nn__cpu_sum_to(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__sum_to_geometry(g, n, &bc);
    nn__sum_to_forward(g->ctx->threads, n->buf.host, g->nodes[n->in[0]].buf.host, g->nodes[n->in[0]].dtype, &bc);
    return NN_OK;
}

/* One work item per element of the result, adding its elements of x in index order (the
   CPU backend's order: the same bits). A float32 x [R, M] summed over its rows (a bias's
   gradient) runs sum_leading: the same additions in the same order without sum_to's index
   walk an element, which PoCL ran scalar (the MLP step's three bias sums: 5.6% of it). */
static nn_result nn__launch_sum_to(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int M = (int)n->numel, dims[8], st[3][8], xs[8], d;
    nn__bcast bc;
    nn__sum_to_geometry(g, n, &bc);
    if (bc.nd == 2 && bc.st[0][0] == 0 && bc.st[0][1] == 1 && g->nodes[n->in[0]].dtype == NN_F32 &&
        bc.n < (int64_t)1 << 31) {
        NN__KSTART(sum_leading, "elementwise", "sum_leading", M);
        k.x = &g->nodes[n->in[0]].buf;
        k.y = &n->buf;
        k.n = (int)bc.n;
        k.nb = M;
        k.off = 0;
        return nn__kargs_sum_leading(l, &k);
    }
    nn__bcast_ints(&bc, dims, st);
    memset(xs, 0, sizeof xs);
    for (d = bc.nd - 1; d >= 0; d--) xs[d] = d == bc.nd - 1 ? 1 : xs[d + 1] * dims[d + 1];
    NN__KSTART(sum_to, "elementwise", "sum_to", M);
    l->store = g->nodes[n->in[0]].dtype; /* x read through kernels/storage.h, y float32 */
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.m = M;
    k.reduced = (int)(bc.n / M);
    k.nd = bc.nd;
    k.dims = dims;
    k.st = st[0];
    k.xs = xs;
    return nn__kargs_sum_to(l, &k);
}

/* ==== expand: y [shape] = x broadcast to shape (torch.Tensor.expand: each dim of x 1 or
   the new size, -1 keeps it, new leading dims); its gradient is SUM_TO x's shape ==== */

NN_API nn_tensor nn_expand(nn_graph *g, nn_tensor x, nn_shape shape) {
    nn__node *nx;
    nn_shape out;
    int d;
    if (!nn__check0(g, "nn_expand", 1, &x) || !nn__expect_f32(g, "nn_expand", x, "x")) return nn__tensor(-1);
    nx = nn__n(g, x);
    out = shape;
    if (shape.ndim >= nx->shape.ndim && shape.ndim <= NN_MAX_DIMS)
        for (d = 0; d < shape.ndim; d++) {
            int xd = d - (shape.ndim - nx->shape.ndim);
            if (xd >= 0 && shape.dim[d] == -1) out.dim[d] = nx->shape.dim[xd];
        }
    for (d = 0; shape.ndim >= nx->shape.ndim && shape.ndim <= NN_MAX_DIMS && d < shape.ndim; d++) {
        int xd = d - (shape.ndim - nx->shape.ndim);
        if (out.dim[d] < 1 || (xd >= 0 && nx->shape.dim[xd] != 1 && nx->shape.dim[xd] != out.dim[d])) break;
    }
    if (shape.ndim < nx->shape.ndim || shape.ndim > NN_MAX_DIMS || d < shape.ndim) {
        char sx[128], ss[128];
        nn__shape_str(&nx->shape, sx, sizeof sx);
        if (shape.ndim >= 0 && shape.ndim <= NN_MAX_DIMS) nn__shape_str(&shape, ss, sizeof ss);
        else snprintf(ss, sizeof ss, "of %d dims", shape.ndim);
        return nn__op_fail(g, NN_ERR_SHAPE,
                           "nn_expand: x %s cannot expand to %s (each dim of x must be 1 or the new size, -1 keeps it; "
                           "new leading dims >= 1)", sx, ss);
    }
    if (!nn__check_shape(g, "nn_expand", out)) return nn__tensor(-1);
    if (nn__shape_eq(&out, &nx->shape)) return x;
    return nn__op1(g, NN__OP_EXPAND, NN_F32, out, x.id);
}

#define nn__plan_expand nn__no_plan

static void nn__grad_expand(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__sum_to_op(g, gy.id, g->nodes[a].shape));
}

static nn_result nn__cpu_expand(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__bcast_node(g, n, 1, &bc);
    nn__expand_forward(g->ctx->threads, n->buf.host, NN__F(n->in[0]), &bc);
    return NN_OK;
}

static nn_result nn__launch_expand(nn_graph *g, int id) {
    NN__BCAST_KLAUNCH(expand_bcast, 1);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.sx = st[0];
    return nn__kargs_expand_bcast(l, &k);
}
