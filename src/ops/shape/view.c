/* The shape family's views and reorderings, one block each: builder (shape rule), registry
   aliases, autograd rule, CPU body (its loop in src/cpu/shape.c) and kernel launch
   (kernels/shape.cl). reshape and its forms, permute and its forms, flip. The family's
   other ops: index.c (slice, concat, repeat, tril), pad.c (pad2d, upsample2d), constant.c
   (arange, eye); their attributes in nn__shape_attr (src/ops/shape.h). */
#include "../../base/internal.h"
#include "../../base/registry.h"

/* ==== shared by the shape family's files: an axis argument, dims as an int8 argument ==== */

/* An axis in [0, ndim), a negative one counted from the end; -1 (and a failed op) if out
   of range. */
static int nn__axis(nn_graph *g, const char *op, nn_tensor x, int axis) {
    int nd = nn__n(g, x)->shape.ndim;
    if (axis < 0) axis += nd;
    if (axis < 0 || axis >= nd) {
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        nn__op_fail(g, NN_ERR_SHAPE, "%s: dim out of range for x %s", op, sx);
        return -1;
    }
    return axis;
}

/* the first nd of dims into an int8 argument, `fill` after them (the kernels read six) */
static void nn__dims8(const int64_t *dims, int nd, int fill, int *v) {
    int d;
    for (d = 0; d < 8; d++) v[d] = d < nd ? (int)dims[d] : fill;
}

/* ==== reshape: y [shape] = x [any shape of the same numel], in x's own storage (a view,
   NN__OPF_VIEW; a copy only of a parameter, whose storage is its own). flatten [N, rest],
   squeeze and unsqueeze are reshapes. Its gradient is dy reshaped back. ==== */

NN_API nn_tensor nn_reshape(nn_graph *g, nn_tensor x, nn_shape shape) {
    char a[128], b[128];
    if (!nn__check0(g, "nn_reshape", 1, &x) || !nn__check_shape(g, "nn_reshape", shape)) return nn__tensor(-1);
    if (nn__numel(&shape) != nn__n(g, x)->numel) {
        nn__shape_str(&nn__n(g, x)->shape, a, sizeof a);
        nn__shape_str(&shape, b, sizeof b);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_reshape: x %s and shape %s differ in element count", a, b);
    }
    if (nn__shape_eq(&shape, &nn__n(g, x)->shape)) return x;
    return nn__op1(g, NN__OP_RESHAPE, nn__n(g, x)->dtype, shape, x.id);
}

/* What an op that is the identity in eval mode returns there (dropout, batch norm's slot
   for its running update): x itself, or in an eval variant of a model (src/engine/model.c)
   a view of x in one node, so that the eval build keeps the training build's node ids. */
static nn_tensor nn__eval_identity(nn_graph *g, nn_tensor x) {
    if (!g->eval_ids) return x;
    return nn__op1(g, NN__OP_RESHAPE, nn__n(g, x)->dtype, nn__n(g, x)->shape, x.id);
}

NN_API nn_tensor nn_flatten(nn_graph *g, nn_tensor x) {
    if (!nn__check(g, "nn_flatten", 1, &x)) return nn__tensor(-1);
    return nn_reshape(g, x, nn_shape2(nn__n(g, x)->shape.dim[0], nn__n(g, x)->numel / nn__n(g, x)->shape.dim[0]));
}

NN_API nn_tensor nn_squeeze(nn_graph *g, nn_tensor x, int dim) {
    nn_shape s;
    int d;
    if (!nn__check0(g, "nn_squeeze", 1, &x)) return nn__tensor(-1);
    if (nn__n(g, x)->shape.ndim == 0 && (dim == 0 || dim == -1)) return x; /* torch.squeeze of a scalar */
    if ((dim = nn__axis(g, "nn_squeeze", x, dim)) < 0) return nn__tensor(-1);
    s = nn__n(g, x)->shape;
    if (s.dim[dim] != 1) return x; /* torch.squeeze: a dim that is not 1 stays */
    for (d = dim; d < s.ndim - 1; d++) s.dim[d] = s.dim[d + 1];
    s.dim[--s.ndim] = 0;
    return nn_reshape(g, x, s);
}

NN_API nn_tensor nn_unsqueeze(nn_graph *g, nn_tensor x, int dim) {
    nn_shape s;
    int d, nd;
    if (!nn__check0(g, "nn_unsqueeze", 1, &x)) return nn__tensor(-1);
    s = nn__n(g, x)->shape;
    nd = s.ndim;
    if (dim < -(nd + 1) || dim > nd || nd == NN_MAX_DIMS) {
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_unsqueeze: dim %d out of range [%d, %d] for x %s (at most %d dims)", dim,
                           -(nd + 1), nd, sx, NN_MAX_DIMS);
    }
    if (dim < 0) dim += nd + 1;
    for (d = nd; d > dim; d--) s.dim[d] = s.dim[d - 1];
    s.dim[dim] = 1;
    s.ndim++;
    return nn_reshape(g, x, s);
}

#define nn__plan_reshape nn__no_plan

static void nn__grad_reshape(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__op1(g, NN__OP_RESHAPE, g->nodes[gy.id].dtype, g->nodes[a].shape, gy.id));
    return;
}

static nn_result nn__cpu_reshape(nn_graph *g, nn__node *n) {
    if (n->storage != NN__ST_VIEW) /* a parameter's copy */
        memcpy(n->buf.host, g->nodes[n->in[0]].buf.host, (size_t)n->numel * nn__dtype_size(n->dtype));
    return NN_OK;
}

static nn_result nn__launch_reshape(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    if (n->storage == NN__ST_VIEW) return NN_OK; /* the input's own storage: nothing to run */
    NN__KSTART(copy, "elementwise", "copy", nn__dtype_bytes(n->dtype, n->numel) / 4);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)(nn__dtype_bytes(n->dtype, n->numel) / 4); /* 32-bit words: 16-bit storage whole, padding too */
    return nn__kargs_copy(l, &k);
}

/* ==== permute: y [x.dim[dims[0]], ..., x.dim[dims[nd - 1]]] = x with its dims reordered
   (torch.permute(x, dims)); transpose swaps two dims, and pixel_shuffle [N, C*r*r, H, W] ->
   [N, C, H*r, W*r] is a reshape, a permute and a reshape. Its gradient is dy permuted by
   the inverse permutation. ==== */

NN_API nn_tensor nn_permute(nn_graph *g, nn_tensor x, const int *dims, int n_dims) {
    nn_shape s;
    int d, seen = 0, nd, perm[NN_MAX_DIMS];
    nn_tensor t;
    if (!nn__check(g, "nn_permute", 1, &x)) return nn__tensor(-1);
    if (!dims) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_permute: dims is NULL");
    s = nn__n(g, x)->shape;
    nd = s.ndim;
    if (n_dims != nd) {
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_permute: %d dims given for x %s of %d dims", n_dims, sx, nd);
    }
    for (d = 0; d < nd; d++) { /* negative dims count from the end, as torch.permute's */
        perm[d] = dims[d] < 0 ? dims[d] + nd : dims[d];
        if (perm[d] < 0 || perm[d] >= nd || (seen >> perm[d]) & 1) {
            char sx[128];
            nn__shape_str(&s, sx, sizeof sx);
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_permute: dims is not a permutation of x %s's dims", sx);
        }
        seen |= 1 << perm[d];
        s.dim[d] = nn__n(g, x)->shape.dim[perm[d]];
    }
    t = nn__op1(g, NN__OP_PERMUTE, nn__n(g, x)->dtype, s, x.id);
    if (t.id >= 0) memcpy(g->nodes[t.id].a.shape.perm, perm, (size_t)nd * sizeof(int));
    return t;
}

NN_API nn_tensor nn_transpose(nn_graph *g, nn_tensor x, int dim0, int dim1) {
    int perm[NN_MAX_DIMS], d, t;
    if (!nn__check(g, "nn_transpose", 1, &x)) return nn__tensor(-1);
    if ((dim0 = nn__axis(g, "nn_transpose", x, dim0)) < 0 || (dim1 = nn__axis(g, "nn_transpose", x, dim1)) < 0)
        return nn__tensor(-1);
    for (d = 0; d < NN_MAX_DIMS; d++) perm[d] = d;
    t = perm[dim0];
    perm[dim0] = perm[dim1];
    perm[dim1] = t;
    return nn_permute(g, x, perm, nn__n(g, x)->shape.ndim);
}

NN_API nn_tensor nn_pixel_shuffle(nn_graph *g, nn_tensor x, int r) {
    static const int perm[6] = {0, 1, 4, 2, 5, 3};
    nn_shape s;
    int64_t C;
    if (!nn__check(g, "nn_pixel_shuffle", 1, &x)) return nn__tensor(-1);
    s = nn__n(g, x)->shape;
    if (s.ndim != 4 || r < 1 || s.dim[1] % ((int64_t)r * r)) {
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_pixel_shuffle: x %s must be [N, C*r*r, H, W] for r = %d", sx, r);
    }
    C = s.dim[1] / ((int64_t)r * r);
    /* [N, C, r, r, H, W] -> [N, C, H, r, W, r] -> [N, C, H*r, W*r] */
    {
        nn_shape s6 = nn_shape4(s.dim[0], C, r, r);
        s6.ndim = 6;
        s6.dim[4] = s.dim[2];
        s6.dim[5] = s.dim[3];
        x = nn_reshape(g, x, s6);
    }
    return nn_reshape(g, nn_permute(g, x, perm, 6), nn_shape4(s.dim[0], C, s.dim[2] * r, s.dim[3] * r));
}

#define nn__plan_permute nn__no_plan

static void nn__grad_permute(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int inv[NN_MAX_DIMS], d;
    for (d = 0; d < n.shape.ndim; d++) inv[n.a.shape.perm[d]] = d;
    nn__acc_grad(g, a, nn_permute(g, gy, inv, n.shape.ndim));
    return;
}

/* permute geometry: y's dims and, for each, x's stride (padded to 6 dims in front) */
static void nn__permute_geom(const nn__node *n, const nn_shape *xs, int64_t *dims, int64_t *xstride) {
    int64_t st[NN_MAX_DIMS];
    int d, nd = n->shape.ndim, pad = NN_MAX_DIMS - nd;
    st[nd - 1] = 1;
    for (d = nd - 2; d >= 0; d--) st[d] = st[d + 1] * xs->dim[d + 1];
    for (d = 0; d < NN_MAX_DIMS; d++) {
        dims[d] = d < pad ? 1 : n->shape.dim[d - pad];
        xstride[d] = d < pad ? 0 : st[n->a.shape.perm[d - pad]];
    }
}

static nn_result nn__cpu_permute(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    void *y = n->buf.host;
    int64_t dims[NN_MAX_DIMS], xs[NN_MAX_DIMS];
    nn__permute_geom(n, &g->nodes[in[0]].shape, dims, xs);
    nn__permute_forward(y, g->nodes[in[0]].buf.host, (int)nn__dtype_size(n->dtype), NN_MAX_DIMS, dims, xs);
    return NN_OK;
}

static nn_result nn__launch_permute(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int64_t dims[NN_MAX_DIMS], xs[NN_MAX_DIMS];
    int vd[8], vs[8], d;
    nn__permute_geom(n, &g->nodes[n->in[0]].shape, dims, xs);
    for (d = 0; d < 8; d++) {
        vd[d] = d < NN_MAX_DIMS ? (int)dims[d] : 1;
        vs[d] = d < NN_MAX_DIMS ? (int)xs[d] : 0;
    }
    if (nn__dtype_half(n->dtype)) { /* 16-bit words */
        NN__KSTART(half_permute, "shape", "half_permute", n->numel);
        k.x = &g->nodes[n->in[0]].buf;
        k.y = &n->buf;
        k.n = (int)n->numel;
        k.dims = vd;
        k.xs = vs;
        return nn__kargs_half_permute(l, &k);
    } else {
        NN__KSTART(permute, "shape", "permute", n->numel);
        k.x = &g->nodes[n->in[0]].buf;
        k.y = &n->buf;
        k.n = (int)n->numel;
        k.dims = vd;
        k.xs = vs;
        return nn__kargs_permute(l, &k);
    }
}

/* ==== flip: y [x's shape] = x reversed along dims (torch.flip): permute's loop, and the
   kernel strided, reading x with negative strides. Its gradient is dy flipped alike. ==== */

NN_API nn_tensor nn_flip(nn_graph *g, nn_tensor x, const int *dims, int n_dims) {
    int k, d, mask = 0;
    nn_tensor t;
    if (!nn__check(g, "nn_flip", 1, &x)) return nn__tensor(-1);
    if (n_dims < 0 || n_dims > NN_MAX_DIMS || (n_dims > 0 && !dims))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_flip: needs 0 to %d dims, not %d%s", NN_MAX_DIMS, n_dims,
                           n_dims > 0 && !dims ? " (dims is NULL)" : "");
    for (k = 0; k < n_dims; k++) {
        if ((d = nn__axis(g, "nn_flip", x, dims[k])) < 0) return nn__tensor(-1);
        if ((mask >> d) & 1) {
            char sx[128];
            nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_flip: dim %d appears twice for x %s", dims[k], sx);
        }
        mask |= 1 << d;
    }
    for (d = 0; d < nn__n(g, x)->shape.ndim; d++) /* a dim of one element reads the same either way */
        if (nn__n(g, x)->shape.dim[d] == 1) mask &= ~(1 << d);
    if (!mask) return x;
    t = nn__op1(g, NN__OP_FLIP, nn__n(g, x)->dtype, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) g->nodes[t.id].a.shape.flip = mask;
    return t;
}

#define nn__plan_flip nn__no_plan

static void nn__grad_flip(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t = nn__op1(g, NN__OP_FLIP, NN_F32, n.shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
    return;
}

/* flip geometry: y's dims and x's signed stride for each (6 dims, ones in front), and the
   offset in x of y's first element */
static int64_t nn__flip_geom(const nn__node *n, int64_t *dims, int64_t *xstride) {
    int64_t st = 1, base = 0;
    int d, nd = n->shape.ndim, pad = NN_MAX_DIMS - nd;
    for (d = NN_MAX_DIMS - 1; d >= 0; d--) {
        dims[d] = d < pad ? 1 : n->shape.dim[d - pad];
        xstride[d] = d < pad ? 0 : st;
        if (d >= pad && ((n->a.shape.flip >> (d - pad)) & 1)) {
            base += (dims[d] - 1) * st;
            xstride[d] = -st;
        }
        st *= dims[d];
    }
    return base;
}

static nn_result nn__cpu_flip(nn_graph *g, nn__node *n) {
    int64_t dims[NN_MAX_DIMS], xs[NN_MAX_DIMS], base = nn__flip_geom(n, dims, xs);
    nn__permute_forward(n->buf.host, NN__F(n->in[0]) + base, 4, NN_MAX_DIMS, dims, xs);
    return NN_OK;
}

static nn_result nn__launch_flip(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int64_t dims[NN_MAX_DIMS], xs[NN_MAX_DIMS], base = nn__flip_geom(n, dims, xs);
    int vd[8], vs[8];
    nn__dims8(dims, NN_MAX_DIMS, 1, vd);
    nn__dims8(xs, NN_MAX_DIMS, 0, vs);
    NN__KSTART(strided, "shape", "strided", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.dims = vd;
    k.xs = vs;
    k.base = (int)base;
    return nn__kargs_strided(l, &k);
}
