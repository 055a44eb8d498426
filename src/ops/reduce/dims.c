/* The reduce family's reductions along dims (PyTorch's torch.sum(x, dim, keepdim) and its
   kin) and the running sum (src/ops/reduce/all.c says how the family is laid out). */
#include "../../base/internal.h"
#include "../../base/registry.h"

/* ==== shared by the reductions along dims: x is viewed as [O, R, I] with the reduced dims
   in R. When the reduced dims are not adjacent (size-1 dims aside), x is first permuted
   (nn_permute) so that they come last, in their order, after the kept ones: then I = 1. ==== */

/* The kernels' reduction kinds (kernels/reduce.cl's RK_*, the same values). */
enum { NN__RK_SUM, NN__RK_PROD, NN__RK_AMAX, NN__RK_AMIN, NN__RK_MAX, NN__RK_MIN, NN__RK_VAR, NN__RK_STD,
       NN__RK_LSE, NN__RK_NORM, NN__RK_ARGMAX, NN__RK_ARGMIN };

static int nn__red_kind(int op) {
    switch (op) {
    case NN__OP_RED_PROD: return NN__RK_PROD;
    case NN__OP_RED_AMAX: return NN__RK_AMAX;
    case NN__OP_RED_AMIN: return NN__RK_AMIN;
    case NN__OP_RED_MAX: return NN__RK_MAX;
    case NN__OP_RED_MIN: return NN__RK_MIN;
    case NN__OP_RED_VAR: return NN__RK_VAR;
    case NN__OP_RED_STD: return NN__RK_STD;
    case NN__OP_RED_LSE: return NN__RK_LSE;
    case NN__OP_RED_NORM: return NN__RK_NORM;
    case NN__OP_ARGMAX_DIM: return NN__RK_ARGMAX;
    case NN__OP_ARGMIN_DIM: return NN__RK_ARGMIN;
    default: return NN__RK_SUM;
    }
}

/* mask[d] = 1 for each dim of x in dims (negative: from the end; n_dims = 0: every dim);
   0 and an error naming the op and x's shape when one is out of range or repeated. */
static int nn__red_mask(nn_graph *g, const char *opname, nn_tensor x, const int *dims, int n_dims, int *mask) {
    nn__node *nx = nn__n(g, x);
    int nd = nx->shape.ndim, k;
    char sx[128];
    nn__shape_str(&nx->shape, sx, sizeof sx);
    for (k = 0; k < nd; k++) mask[k] = n_dims == 0;
    if (n_dims < 0 || (n_dims > 0 && !dims)) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: n_dims = %d with dims %s, for x %s", opname, n_dims,
                    dims ? "given" : "NULL", sx);
        return 0;
    }
    if (nd == 0) { /* a scalar: dim 0 or -1, once (PyTorch's rule); nothing to reduce */
        for (k = 0; k < n_dims; k++)
            if ((dims[k] != 0 && dims[k] != -1) || n_dims > 1) {
                nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: dims of a rank 0 x [] must be 0 or -1, once (got %d of %d)",
                            opname, dims[k], n_dims);
                return 0;
            }
        return 1;
    }
    for (k = 0; k < n_dims; k++) {
        int d = dims[k] < 0 ? dims[k] + nd : dims[k];
        if (d < 0 || d >= nd) {
            nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: dim %d is out of range for x %s (expected %d to %d)", opname,
                        dims[k], sx, -nd, nd - 1);
            return 0;
        }
        if (mask[d]) {
            nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: dim %d appears more than once in dims, for x %s", opname, d, sx);
            return 0;
        }
        mask[d] = 1;
    }
    return 1;
}

/* The node of op reducing x over the dims in mask; scale: RED_SUM's factor (1/R for a
   mean: scale < 0 asks for it); p: RED_NORM's order; correction: RED_VAR/STD's. */
static nn_tensor nn__red_build(nn_graph *g, int op, nn_tensor x, const int *mask, int keepdim, float scale, float p,
                               float correction) {
    nn__node *nx = nn__n(g, x);
    nn_shape xs = nx->shape, ys;
    int nd = xs.ndim, d, first = -1, last = -1, split = 0, perm[NN_MAX_DIMS], np = 0;
    int64_t O = 1, R = 1, I = 1;
    nn_tensor src = x, t;
    for (d = 0; d < nd; d++)
        if (mask[d] && xs.dim[d] > 1) {
            if (first < 0) first = d;
            last = d;
        }
    for (d = first + 1; first >= 0 && d < last; d++) split |= !mask[d] && xs.dim[d] > 1;
    if (split) { /* the kept dims first, then the reduced ones */
        for (d = 0; d < nd; d++) if (!mask[d]) perm[np++] = d;
        for (d = 0; d < nd; d++) if (mask[d]) perm[np++] = d;
        for (d = 0; d < nd; d++) {
            if (mask[d]) R *= xs.dim[d];
            else O *= xs.dim[d];
        }
        src = nn_permute(g, x, perm, nd);
        if (src.id < 0) return src;
    } else if (first < 0) {
        O = nx->numel;
    } else {
        for (d = 0; d < nd; d++) {
            if (d < first) O *= xs.dim[d];
            else if (d <= last) R *= xs.dim[d];
            else I *= xs.dim[d];
        }
    }
    ys.ndim = 0;
    for (d = 0; d < nd; d++) {
        if (keepdim) ys.dim[ys.ndim++] = mask[d] ? 1 : xs.dim[d];
        else if (!mask[d]) ys.dim[ys.ndim++] = xs.dim[d];
    }
    if (ys.ndim == 0 && nd > 0) ys = nn_shape1(1); /* every dim reduced: [1] (a rank-0 x stays rank 0) */
    t = nn__op1(g, op, op == NN__OP_ARGMAX_DIM || op == NN__OP_ARGMIN_DIM ? NN_I32 : NN_F32, ys, src.id);
    if (t.id >= 0) {
        nn__reduce_attr *ra = &g->nodes[t.id].a.reduce;
        ra->O = (int)O;
        ra->R = (int)R;
        ra->I = (int)I;
        ra->scale = scale < 0.0f ? (float)(1.0 / (double)R) : scale;
        ra->p = p;
        ra->correction = correction;
    }
    return t;
}

static nn_tensor nn__red_dims(nn_graph *g, const char *opname, int op, nn_tensor x, const int *dims, int n_dims,
                              int keepdim, float scale, float p, float correction) {
    int mask[NN_MAX_DIMS];
    if (!nn__check0(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    if (!nn__red_mask(g, opname, x, dims, n_dims, mask)) return nn__tensor(-1);
    return nn__red_build(g, op, x, mask, keepdim, scale, p, correction);
}

static nn_tensor nn__red_dim1(nn_graph *g, const char *opname, int op, nn_tensor x, int dim, int keepdim) {
    return nn__red_dims(g, opname, op, x, &dim, 1, keepdim, 1.0f, 0.0f, 0.0f);
}

/* ==== reductions along dims: x [..] -> y [x's shape without the reduced dims, or with them
   as 1 under keepdim; [1] when every dim goes], over R of the [O, R, I] view: RED_SUM (sum,
   mean: scale 1/R), RED_PROD, RED_AMAX/AMIN, RED_MAX/MIN (with ARGMAX_DIM/ARGMIN_DIM for
   their indices, int32), RED_VAR/STD (correction), RED_LSE, RED_NORM (p). One CPU loop and
   one kernel pair take the kind (nn__red_kind): the ops share nn__cpu_reduce,
   nn__launch_reduce and nn__grad_reduce. REDUCE_GRAD, dx [x's view] from gy (and x and y
   where the rule needs them), is their gradient. ==== */

NN_API nn_tensor nn_sum_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int keepdim) {
    return nn__red_dims(g, "nn_sum_dim", NN__OP_RED_SUM, x, dims, n_dims, keepdim, 1.0f, 0.0f, 0.0f);
}
NN_API nn_tensor nn_mean_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int keepdim) {
    return nn__red_dims(g, "nn_mean_dim", NN__OP_RED_SUM, x, dims, n_dims, keepdim, -1.0f, 0.0f, 0.0f);
}
NN_API nn_tensor nn_prod_dim(nn_graph *g, nn_tensor x, int dim, int keepdim) {
    return nn__red_dim1(g, "nn_prod_dim", NN__OP_RED_PROD, x, dim, keepdim);
}
NN_API nn_tensor nn_amax_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int keepdim) {
    return nn__red_dims(g, "nn_amax_dim", NN__OP_RED_AMAX, x, dims, n_dims, keepdim, 1.0f, 0.0f, 0.0f);
}
NN_API nn_tensor nn_amin_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int keepdim) {
    return nn__red_dims(g, "nn_amin_dim", NN__OP_RED_AMIN, x, dims, n_dims, keepdim, 1.0f, 0.0f, 0.0f);
}

static nn_tensor nn__max_min_dim(nn_graph *g, const char *opname, int op, int arg_op, nn_tensor x, int dim, int keepdim,
                                 nn_tensor *indices) {
    nn_tensor v = nn__red_dim1(g, opname, op, x, dim, keepdim);
    if (indices) *indices = v.id < 0 ? v : nn__red_dim1(g, opname, arg_op, x, dim, keepdim);
    return v;
}
NN_API nn_tensor nn_max_dim(nn_graph *g, nn_tensor x, int dim, int keepdim, nn_tensor *indices) {
    return nn__max_min_dim(g, "nn_max_dim", NN__OP_RED_MAX, NN__OP_ARGMAX_DIM, x, dim, keepdim, indices);
}
NN_API nn_tensor nn_min_dim(nn_graph *g, nn_tensor x, int dim, int keepdim, nn_tensor *indices) {
    return nn__max_min_dim(g, "nn_min_dim", NN__OP_RED_MIN, NN__OP_ARGMIN_DIM, x, dim, keepdim, indices);
}
NN_API nn_tensor nn_argmax_dim(nn_graph *g, nn_tensor x, int dim, int keepdim) {
    return nn__red_dim1(g, "nn_argmax_dim", NN__OP_ARGMAX_DIM, x, dim, keepdim);
}
NN_API nn_tensor nn_argmin_dim(nn_graph *g, nn_tensor x, int dim, int keepdim) {
    return nn__red_dim1(g, "nn_argmin_dim", NN__OP_ARGMIN_DIM, x, dim, keepdim);
}

static nn_tensor nn__var_std(nn_graph *g, const char *opname, int op, nn_tensor x, const int *dims, int n_dims,
                             int correction, int keepdim) {
    if (!nn__check0(g, opname, 1, &x)) return nn__tensor(-1);
    if (correction < 0)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: correction = %d, not >= 0", opname, correction);
    return nn__red_dims(g, opname, op, x, dims, n_dims, keepdim, 1.0f, 0.0f, (float)correction);
}
NN_API nn_tensor nn_var_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int correction, int keepdim) {
    return nn__var_std(g, "nn_var_dim", NN__OP_RED_VAR, x, dims, n_dims, correction, keepdim);
}
NN_API nn_tensor nn_std_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int correction, int keepdim) {
    return nn__var_std(g, "nn_std_dim", NN__OP_RED_STD, x, dims, n_dims, correction, keepdim);
}
NN_API nn_tensor nn_logsumexp_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int keepdim) {
    return nn__red_dims(g, "nn_logsumexp_dim", NN__OP_RED_LSE, x, dims, n_dims, keepdim, 1.0f, 0.0f, 0.0f);
}
NN_API nn_tensor nn_norm_dim(nn_graph *g, nn_tensor x, float p, const int *dims, int n_dims, int keepdim) {
    if (!nn__check0(g, "nn_norm_dim", 1, &x)) return nn__tensor(-1);
    if (!(p >= 0.0f)) /* NaN too */
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_norm_dim: p = %g, not >= 0 (or INFINITY)", p);
    return nn__red_dims(g, "nn_norm_dim", NN__OP_RED_NORM, x, dims, n_dims, keepdim, 1.0f, p, 0.0f);
}

#define nn__cpu_red_sum nn__cpu_reduce
#define nn__launch_red_sum nn__launch_reduce
#define nn__grad_red_sum nn__grad_reduce
#define nn__plan_red_sum nn__no_plan
#define nn__cpu_red_prod nn__cpu_reduce
#define nn__launch_red_prod nn__launch_reduce
#define nn__grad_red_prod nn__grad_reduce
#define nn__plan_red_prod nn__no_plan
#define nn__cpu_red_amax nn__cpu_reduce
#define nn__launch_red_amax nn__launch_reduce
#define nn__grad_red_amax nn__grad_reduce
#define nn__plan_red_amax nn__no_plan
#define nn__cpu_red_amin nn__cpu_reduce
#define nn__launch_red_amin nn__launch_reduce
#define nn__grad_red_amin nn__grad_reduce
#define nn__plan_red_amin nn__no_plan
#define nn__cpu_red_max nn__cpu_reduce
#define nn__launch_red_max nn__launch_reduce
#define nn__grad_red_max nn__grad_reduce
#define nn__plan_red_max nn__no_plan
#define nn__cpu_red_min nn__cpu_reduce
#define nn__launch_red_min nn__launch_reduce
#define nn__grad_red_min nn__grad_reduce
#define nn__plan_red_min nn__no_plan
#define nn__cpu_red_var nn__cpu_reduce
#define nn__launch_red_var nn__launch_reduce
#define nn__grad_red_var nn__grad_reduce
#define nn__plan_red_var nn__no_plan
#define nn__cpu_red_std nn__cpu_reduce
#define nn__launch_red_std nn__launch_reduce
#define nn__grad_red_std nn__grad_reduce
#define nn__plan_red_std nn__no_plan
#define nn__cpu_red_lse nn__cpu_reduce
#define nn__launch_red_lse nn__launch_reduce
#define nn__grad_red_lse nn__grad_reduce
#define nn__plan_red_lse nn__no_plan
#define nn__cpu_red_norm nn__cpu_reduce
#define nn__launch_red_norm nn__launch_reduce
#define nn__grad_red_norm nn__grad_reduce
#define nn__plan_red_norm nn__no_plan
#define nn__cpu_argmax_dim nn__cpu_reduce
#define nn__launch_argmax_dim nn__launch_reduce
#define nn__grad_argmax_dim nn__grad_none
#define nn__plan_argmax_dim nn__no_plan
#define nn__cpu_argmin_dim nn__cpu_reduce
#define nn__launch_argmin_dim nn__launch_reduce
#define nn__grad_argmin_dim nn__grad_none
#define nn__plan_argmin_dim nn__no_plan
#define nn__grad_reduce_grad nn__grad_none
#define nn__plan_reduce_grad nn__no_plan

/* d(loss)/dx of a reduction: a REDUCE_GRAD node from gy (and x and the output where the
   rule needs them). */
static void nn__grad_reduce(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (n.op == NN__OP_RED_SUM) t = nn__op1(g, NN__OP_REDUCE_GRAD, NN_F32, g->nodes[a].shape, gy.id);
    else t = nn__op3(g, NN__OP_REDUCE_GRAD, NN_F32, g->nodes[a].shape, gy.id, a, id);
    if (t.id >= 0) {
        g->nodes[t.id].a = n.a;
        g->nodes[t.id].a.reduce.fwd = n.op;
    }
    nn__acc_grad(g, a, t);
}

static nn_result nn__cpu_reduce(nn_graph *g, nn__node *n) {
    nn__reduce_forward(g->ctx->threads, n->op, &n->a.reduce, n->buf.host, NN__F(n->in[0]));
    return NN_OK;
}

static nn_result nn__cpu_reduce_grad(nn_graph *g, nn__node *n) {
    nn__reduce_backward(g->ctx->threads, &n->a.reduce, n->buf.host, NN__F(n->in[0]),
                        n->n_in > 1 ? NN__F(n->in[1]) : NULL, n->n_in > 2 ? NN__F(n->in[2]) : NULL);
    return NN_OK;
}

/* A reduction of the innermost axis (I = 1) of long enough rows runs one work-group per
   row (a strided pass, then a tree in local memory); otherwise one work-item per output
   element walks its R elements (consecutive work-items: consecutive i, coalesced). CPU
   devices take the second form for every shape. */
/* The fields both reduction kernels take */
#define NN__REDUCE_KFIELDS(k)              \
    do {                                   \
        (k).x = &g->nodes[n->in[0]].buf;   \
        (k).y = (k).yi = &n->buf;          \
        (k).R = ra->R;                     \
        (k).kind = kind;                   \
        (k).p = ra->p;                     \
        (k).scale = ra->scale;             \
        (k).corr = ra->correction;         \
    } while (0)

static nn_result nn__launch_reduce(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__reduce_attr *ra = &n->a.reduce;
    int kind = nn__red_kind(n->op);
    if (ra->I == 1 && ra->R > 32 && !g->ctx->dev.cpu_tuned) {
        size_t wg = nn__reduce_wg(g);
        NN__KWITH(reduce_rows, nn__launch_groups(g, id, "reduce", "reduce_rows", (size_t)ra->O, wg, &l));
        NN__REDUCE_KFIELDS(k);
        k.tf = k.ti = wg * 4;
        return nn__kargs_reduce_rows(l, &k);
    } else {
        NN__KSTART(reduce_cols, "reduce", "reduce_cols", (size_t)ra->O * ra->I);
        NN__REDUCE_KFIELDS(k);
        k.O = ra->O;
        k.I = ra->I;
        return nn__kargs_reduce_cols(l, &k);
    }
}

/* Gradients that need no statistics of the row (sum, mean, logsumexp, finite-p norms): one
   work-item per element of dx; the others one work-item per row (o, i), which walks it. */
static nn_result nn__launch_reduce_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__reduce_attr *ra = &n->a.reduce;
    int kind = nn__red_kind(ra->fwd);
    int elementwise = kind == NN__RK_SUM || kind == NN__RK_LSE || (kind == NN__RK_NORM && !isinf(ra->p));
    NN__KSTART(reduce_grad, "reduce", elementwise ? "reduce_grad_elems" : "reduce_grad_cols", elementwise ? (size_t)n->numel : (size_t)ra->O * ra->I);
    k.gy = &g->nodes[n->in[0]].buf;
    k.x = n->n_in > 1 ? &g->nodes[n->in[1]].buf : k.gy;
    k.y = n->n_in > 2 ? &g->nodes[n->in[2]].buf : k.gy;
    k.dx = &n->buf;
    k.O = ra->O;
    k.R = ra->R;
    k.I = ra->I;
    k.kind = kind;
    k.p = ra->p;
    k.scale = ra->scale;
    k.corr = ra->correction;
    return nn__kargs_reduce_grad(l, &k);
}

/* ==== cumsum: y [x's shape] = the running sum of x along dim (torch.cumsum), on the
   [O, R, I] view; CUMSUM_REV, the reverse running sum, is its gradient (and the reverse's
   gradient is cumsum) ==== */

NN_API nn_tensor nn_cumsum(nn_graph *g, nn_tensor x, int dim) {
    nn__node *nx;
    nn_tensor t;
    int nd, d, k;
    if (!nn__check(g, "nn_cumsum", 1, &x) || !nn__expect_f32(g, "nn_cumsum", x, "x")) return nn__tensor(-1);
    nx = nn__n(g, x);
    nd = nx->shape.ndim;
    d = dim < 0 ? dim + nd : dim;
    if (d < 0 || d >= nd) {
        char sx[128];
        nn__shape_str(&nx->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_cumsum: dim %d is out of range for x %s (expected %d to %d)",
                           dim, sx, -nd, nd - 1);
    }
    t = nn__op1(g, NN__OP_CUMSUM, NN_F32, nx->shape, x.id);
    if (t.id >= 0) {
        nn__reduce_attr *ra = &g->nodes[t.id].a.reduce;
        int64_t O = 1, I = 1;
        for (k = 0; k < d; k++) O *= nx->shape.dim[k];
        for (k = d + 1; k < nd; k++) I *= nx->shape.dim[k];
        ra->O = (int)O;
        ra->R = (int)nx->shape.dim[d];
        ra->I = (int)I;
    }
    return t;
}

#define nn__plan_cumsum nn__no_plan
#define nn__cpu_cumsum_rev nn__cpu_cumsum
#define nn__launch_cumsum_rev nn__launch_cumsum
#define nn__grad_cumsum_rev nn__grad_cumsum
#define nn__plan_cumsum_rev nn__no_plan

/* cumsum's gradient is the reverse running sum of gy, and the reverse's is cumsum. */
static void nn__grad_cumsum(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t = nn__op1(g, n.op == NN__OP_CUMSUM ? NN__OP_CUMSUM_REV : NN__OP_CUMSUM, NN_F32, n.shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
}

static nn_result nn__cpu_cumsum(nn_graph *g, nn__node *n) {
    nn__cumsum_forward(n->buf.host, NN__F(n->in[0]), &n->a.reduce, n->op == NN__OP_CUMSUM_REV);
    return NN_OK;
}

static nn_result nn__launch_cumsum(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__reduce_attr *ra = &n->a.reduce;
    NN__KSTART(cumsum, "reduce", "cumsum", ra->O * ra->I);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.O = ra->O;
    k.R = ra->R;
    k.I = ra->I;
    k.reverse = n->op == NN__OP_CUMSUM_REV;
    return nn__kargs_cumsum(l, &k);
}
