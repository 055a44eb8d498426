/* The shape ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../nn_internal.h"
#include "../nn_ops.h"

NN_API nn_tensor nn_reshape(nn_graph *g, nn_tensor x, nn_shape shape) {
    char a[128], b[128];
    if (!nn__check(g, "nn_reshape", 1, &x) || !nn__check_shape(g, "nn_reshape", shape)) return nn__tensor(-1);
    if (nn__numel(&shape) != nn__n(g, x)->numel) {
        nn__shape_str(&nn__n(g, x)->shape, a, sizeof a);
        nn__shape_str(&shape, b, sizeof b);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_reshape: x %s and shape %s differ in element count", a, b);
    }
    return nn__op1(g, NN__OP_RESHAPE, nn__n(g, x)->dtype, shape, x.id);
}

NN_API nn_tensor nn_flatten(nn_graph *g, nn_tensor x) {
    if (!nn__check(g, "nn_flatten", 1, &x)) return nn__tensor(-1);
    return nn_reshape(g, x, nn_shape2(nn__n(g, x)->shape.dim[0], nn__n(g, x)->numel / nn__n(g, x)->shape.dim[0]));
}

/* An axis in [0, ndim), a negative one counted from the end; -1 (and a failed op) if out
   of range. */
static int nn__axis(nn_graph *g, const char *op, nn_tensor x, int axis) {
    int nd = nn__n(g, x)->shape.ndim;
    if (axis < 0) axis += nd;
    if (axis < 0 || axis >= nd) {
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        nn__op_fail(g, NN_ERR_SHAPE, "%s: axis out of range for x %s", op, sx);
        return -1;
    }
    return axis;
}

NN_API nn_tensor nn_permute(nn_graph *g, nn_tensor x, const int *perm) {
    nn_shape s;
    int d, seen = 0, nd;
    nn_tensor t;
    if (!nn__check(g, "nn_permute", 1, &x)) return nn__tensor(-1);
    if (!perm) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_permute: perm is NULL");
    s = nn__n(g, x)->shape;
    nd = s.ndim;
    for (d = 0; d < nd; d++) {
        if (perm[d] < 0 || perm[d] >= nd || (seen >> perm[d]) & 1) {
            char sx[128];
            nn__shape_str(&s, sx, sizeof sx);
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_permute: perm is not a permutation of x %s's dims", sx);
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
    return nn_permute(g, x, perm);
}

static nn_tensor nn__concat2(nn_graph *g, nn_tensor a, nn_tensor b, int axis) {
    nn_tensor in[2], t;
    nn_shape sa, sb;
    int d;
    in[0] = a;
    in[1] = b;
    if (!nn__check(g, "nn_concat", 2, in)) return nn__tensor(-1);
    sa = nn__n(g, a)->shape;
    sb = nn__n(g, b)->shape;
    for (d = 0; d < sa.ndim && sa.ndim == sb.ndim; d++)
        if (d != axis && sa.dim[d] != sb.dim[d]) break;
    if (sa.ndim != sb.ndim || d < sa.ndim || nn__n(g, a)->dtype != nn__n(g, b)->dtype) {
        char x[128], y[128];
        nn__shape_str(&sa, x, sizeof x);
        nn__shape_str(&sb, y, sizeof y);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_concat: %s and %s differ outside axis %d (or in dtype)", x, y, axis);
    }
    sa.dim[axis] += sb.dim[axis];
    t = nn__op2(g, NN__OP_CONCAT2, nn__n(g, a)->dtype, sa, a.id, b.id);
    if (t.id >= 0) g->nodes[t.id].a.shape.axis = axis;
    return t;
}

NN_API nn_tensor nn_concat(nn_graph *g, const nn_tensor *xs, int n, int axis) {
    nn_tensor acc;
    int k;
    if (!g) return nn__tensor(-1);
    if (!xs || n < 1 || n > 64) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_concat: needs 1 to 64 tensors");
    if (!nn__check(g, "nn_concat", n, xs)) return nn__tensor(-1);
    if ((axis = nn__axis(g, "nn_concat", xs[0], axis)) < 0) return nn__tensor(-1);
    /* a chain of pairwise joins: each is one pass, and the backward of each is two slices */
    for (acc = xs[0], k = 1; k < n; k++) acc = nn__concat2(g, acc, xs[k], axis);
    return acc;
}

static nn_tensor nn__slice_op(nn_graph *g, int op, int src, nn_shape s, int axis, int64_t start) {
    nn_tensor t = nn__op1(g, op, g->nodes[src].dtype, s, src);
    if (t.id >= 0) {
        g->nodes[t.id].a.shape.axis = axis;
        g->nodes[t.id].a.shape.start = (int)start;
    }
    return t;
}

NN_API nn_tensor nn_slice(nn_graph *g, nn_tensor x, int axis, int64_t start, int64_t len) {
    nn_shape s;
    if (!nn__check(g, "nn_slice", 1, &x)) return nn__tensor(-1);
    if ((axis = nn__axis(g, "nn_slice", x, axis)) < 0) return nn__tensor(-1);
    s = nn__n(g, x)->shape;
    if (start < 0 || len < 1 || start >= s.dim[axis] || len > s.dim[axis] - start) { /* no start + len: it can overflow */
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_slice: start %lld, length %lld is outside axis %d of x %s",
                           (long long)start, (long long)len, axis, sx);
    }
    s.dim[axis] = len;
    return nn__slice_op(g, NN__OP_SLICE, x.id, s, axis, start);
}

NN_API nn_result nn_split(nn_graph *g, nn_tensor x, int axis, const int64_t *sizes, int n, nn_tensor *out) {
    int64_t start = 0, total = 0;
    int k;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (!sizes || !out || n < 1) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_split: needs sizes, out and n >= 1");
        return g->status;
    }
    if (nn__check(g, "nn_split", 1, &x) && (axis = nn__axis(g, "nn_split", x, axis)) >= 0) {
        int64_t dim = nn__n(g, x)->shape.dim[axis];
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        for (k = 0; k < n && g->status == NN_OK; k++) { /* each in 1..dim: the total cannot overflow */
            if (sizes[k] < 1 || sizes[k] > dim)
                nn__op_fail(g, NN_ERR_SHAPE, "nn_split: size %lld of part %d is outside 1..%lld, axis %d of x %s",
                            (long long)sizes[k], k, (long long)dim, axis, sx);
            else
                total += sizes[k];
        }
        if (g->status == NN_OK && total != dim)
            nn__op_fail(g, NN_ERR_SHAPE, "nn_split: sizes add up to %lld, axis %d of x %s is %lld", (long long)total, axis, sx,
                        (long long)dim);
    }
    for (k = 0; k < n; k++) {
        out[k] = g->status == NN_OK ? nn_slice(g, x, axis, start, sizes[k]) : nn__tensor(-1);
        if (g->status == NN_OK) start += sizes[k]; /* checked sizes only: no overflow */
    }
    return g->status;
}

NN_API nn_tensor nn_pad2d(nn_graph *g, nn_tensor x, int left, int right, int top, int bottom, nn_pad_mode mode) {
    nn_shape s;
    nn_tensor t;
    int nd;
    if (!nn__check(g, "nn_pad2d", 1, &x) || !nn__expect_f32(g, "nn_pad2d", x, "x")) return nn__tensor(-1);
    if (mode != NN_PAD_ZEROS && mode != NN_PAD_REFLECT)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_pad2d: mode %d is not one of nn_pad_mode", (int)mode);
    s = nn__n(g, x)->shape;
    nd = s.ndim;
    if (nd < 2 || top < 0 || bottom < 0 || left < 0 || right < 0 ||
        (mode == NN_PAD_REFLECT && (top >= s.dim[nd - 2] || bottom >= s.dim[nd - 2] || left >= s.dim[nd - 1] ||
                                    right >= s.dim[nd - 1]))) {
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_pad2d: pads (left %d, right %d, top %d, bottom %d) do not fit x %s%s", left,
                           right, top, bottom, sx,
                           mode == NN_PAD_REFLECT ? " (reflection needs each pad below its dim)" : "");
    }
    s.dim[nd - 2] += (int64_t)top + bottom; /* in 64 bits: two int pads can overflow an int */
    s.dim[nd - 1] += (int64_t)left + right;
    t = nn__op1(g, NN__OP_PAD2D, NN_F32, s, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.shape.top = top;
        g->nodes[t.id].a.shape.left = left;
        g->nodes[t.id].a.shape.reflect = mode == NN_PAD_REFLECT;
    }
    return t;
}

NN_API nn_tensor nn_upsample2d(nn_graph *g, nn_tensor x, int scale_h, int scale_w, nn_upsample_mode mode) {
    nn_shape s;
    nn_tensor t;
    int nd;
    if (!nn__check(g, "nn_upsample2d", 1, &x) || !nn__expect_f32(g, "nn_upsample2d", x, "x")) return nn__tensor(-1);
    if (mode != NN_UPSAMPLE_NEAREST && mode != NN_UPSAMPLE_BILINEAR)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_upsample2d: mode %d is not one of nn_upsample_mode", (int)mode);
    s = nn__n(g, x)->shape;
    nd = s.ndim;
    if (nd < 2) {
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_upsample2d: x %s needs >= 2 dims", sx);
    }
    if (scale_h < 1 || scale_w < 1 || scale_h > 64 || scale_w > 64)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_upsample2d: scales %d, %d are not in 1 to 64", scale_h, scale_w);
    s.dim[nd - 2] *= scale_h;
    s.dim[nd - 1] *= scale_w;
    t = nn__op1(g, NN__OP_UPSAMPLE2D, NN_F32, s, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.shape.scale_h = scale_h;
        g->nodes[t.id].a.shape.scale_w = scale_w;
        g->nodes[t.id].a.shape.bilinear = mode == NN_UPSAMPLE_BILINEAR;
    }
    return t;
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
    return nn_reshape(g, nn_permute(g, x, perm), nn_shape4(s.dim[0], C, s.dim[2] * r, s.dim[3] * r));
}


/* A shape seen along axis: [outer, len, inner]. */
static void nn__axis_split(const nn_shape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner) {
    int d;
    *outer = *inner = 1;
    for (d = 0; d < axis; d++) *outer *= s->dim[d];
    for (d = axis + 1; d < s->ndim; d++) *inner *= s->dim[d];
    *len = s->dim[axis];
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

/* ---- autograd rules ---- */

static void nn__grad_reshape(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__op1(g, NN__OP_RESHAPE, NN_F32, g->nodes[a].shape, gy.id));
    return;
}

static void nn__grad_permute(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int inv[NN_MAX_DIMS], d;
    for (d = 0; d < n.shape.ndim; d++) inv[n.a.shape.perm[d]] = d;
    nn__acc_grad(g, a, nn_permute(g, gy, inv));
    return;
}

static void nn__grad_concat2(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int ax = n.a.shape.axis;
    if (ga) nn__acc_grad(g, a, nn__slice_op(g, NN__OP_SLICE, gy.id, g->nodes[a].shape, ax, 0));
    if (gb) nn__acc_grad(g, b, nn__slice_op(g, NN__OP_SLICE, gy.id, g->nodes[b].shape, ax, g->nodes[a].shape.dim[ax]));
    return;
}

static void nn__grad_slice(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__slice_op(g, NN__OP_SLICE_GRAD, gy.id, g->nodes[a].shape, n.a.shape.axis, n.a.shape.start));
    return;
}

static void nn__grad_pad_upsample(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    t = nn__op1(g, n.op == NN__OP_PAD2D ? NN__OP_PAD2D_GRAD : NN__OP_UPSAMPLE2D_GRAD, NN_F32, g->nodes[a].shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
    return;
}

/* ---- CPU bodies ---- */

static nn_result nn__cpu_reshape(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    memcpy(y, NN__F(in[0]), (size_t)N * 4); return NN_OK;

}

static nn_result nn__cpu_permute(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t dims[NN_MAX_DIMS], xs[NN_MAX_DIMS];
    nn__permute_geom(n, &g->nodes[in[0]].shape, dims, xs);
    nn__permute_forward(y, NN__F(in[0]), NN_MAX_DIMS, dims, xs);
    return NN_OK;
}

static nn_result nn__cpu_concat2(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t o, la, lb, inner;
    nn__axis_split(&g->nodes[in[0]].shape, n->a.shape.axis, &o, &la, &inner);
    lb = g->nodes[in[1]].shape.dim[n->a.shape.axis];
    nn__concat_forward(y, NN__F(in[0]), NN__F(in[1]), o, la, lb, inner);
    return NN_OK;
}

static nn_result nn__cpu_slice(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int grad = n->op == NN__OP_SLICE_GRAD;
    int64_t o, L, inner, len;
    nn__axis_split(grad ? &n->shape : &g->nodes[in[0]].shape, n->a.shape.axis, &o, &L, &inner);
    len = (grad ? g->nodes[in[0]].shape : n->shape).dim[n->a.shape.axis];
    nn__slice(y, NN__F(in[0]), o, L, inner, n->a.shape.start, len, grad);
    return NN_OK;
}

static nn_result nn__cpu_pad2d(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    const nn_shape *xs = n->op == NN__OP_PAD2D ? &g->nodes[in[0]].shape : &n->shape;
    const nn_shape *ys = n->op == NN__OP_PAD2D ? &n->shape : &g->nodes[in[0]].shape;
    int nd = xs->ndim;
    int64_t H = xs->dim[nd - 2], W = xs->dim[nd - 1], P = nn__numel(xs) / (H * W);
    if (n->op == NN__OP_PAD2D)
        nn__pad2d_forward(y, NN__F(in[0]), P, H, W, ys->dim[nd - 2], ys->dim[nd - 1], n->a.shape.top, n->a.shape.left, n->a.shape.reflect);
    else
        nn__pad2d_backward(y, NN__F(in[0]), P, H, W, ys->dim[nd - 2], ys->dim[nd - 1], n->a.shape.top, n->a.shape.left, n->a.shape.reflect);
    return NN_OK;
}

static nn_result nn__cpu_upsample2d(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    const nn_shape *xs = n->op == NN__OP_UPSAMPLE2D ? &g->nodes[in[0]].shape : &n->shape;
    int nd = xs->ndim;
    int64_t H = xs->dim[nd - 2], W = xs->dim[nd - 1];
    nn__upsample2d(y, NN__F(in[0]), nn__numel(xs) / (H * W), H, W, n->a.shape.scale_h, n->a.shape.scale_w, n->a.shape.bilinear,
                   n->op == NN__OP_UPSAMPLE2D_GRAD);
    return NN_OK;
}

/* ---- device plans: launches of kernels/FAMILY.cl ---- */

static nn_result nn__dev_reshape(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_add(g, id, "elementwise", "copy", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmi", &g->nodes[in[0]].buf, y, N);
    return r;
}

static nn_result nn__dev_permute(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int64_t dims[NN_MAX_DIMS], xs[NN_MAX_DIMS];
    int vd[8], vs[8], d;
    nn__permute_geom(n, &g->nodes[in[0]].shape, dims, xs);
    for (d = 0; d < 8; d++) {
        vd[d] = d < NN_MAX_DIMS ? (int)dims[d] : 1;
        vs[d] = d < NN_MAX_DIMS ? (int)xs[d] : 0;
    }
    r = nn__launch_add(g, id, "shape", "permute", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmi88", &g->nodes[in[0]].buf, y, N, vd, vs);
    return r;
}

static nn_result nn__dev_concat2(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int64_t o, la, lb, inner;
    nn__axis_split(&g->nodes[in[0]].shape, n->a.shape.axis, &o, &la, &inner);
    lb = g->nodes[in[1]].shape.dim[n->a.shape.axis];
    r = nn__launch_add(g, id, "shape", "concat", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmmiiii", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, y, N, (int)la, (int)lb, (int)inner);
    return r;
}

static nn_result nn__dev_slice(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int grad = n->op == NN__OP_SLICE_GRAD;
    int64_t o, L, inner, len;
    nn__axis_split(grad ? &n->shape : &g->nodes[in[0]].shape, n->a.shape.axis, &o, &L, &inner);
    len = (grad ? g->nodes[in[0]].shape : n->shape).dim[n->a.shape.axis];
    r = nn__launch_add(g, id, "shape", "slice", (size_t)N, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmiiiiii", &g->nodes[in[0]].buf, y, N, (int)L, (int)len, (int)inner, n->a.shape.start, grad);
    return r;
}

static nn_result nn__dev_pad_upsample(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int fwd = n->op == NN__OP_PAD2D || n->op == NN__OP_UPSAMPLE2D, pad = n->op == NN__OP_PAD2D || n->op == NN__OP_PAD2D_GRAD;
    const nn_shape *xs = fwd ? &g->nodes[in[0]].shape : &n->shape;
    const nn_shape *ys = fwd ? &n->shape : &g->nodes[in[0]].shape;
    int nd = xs->ndim, geo[8];
    memset(geo, 0, sizeof geo);
    geo[0] = (int)xs->dim[nd - 2];
    geo[1] = (int)xs->dim[nd - 1];
    if (pad) {
        geo[2] = (int)ys->dim[nd - 2];
        geo[3] = (int)ys->dim[nd - 1];
        geo[4] = n->a.shape.top;
        geo[5] = n->a.shape.left;
        geo[6] = n->a.shape.reflect;
    } else {
        geo[2] = n->a.shape.scale_h;
        geo[3] = n->a.shape.scale_w;
        geo[4] = n->a.shape.bilinear;
    }
    r = nn__launch_add(g, id, "shape",
                   pad ? (fwd ? "pad2d_forward" : "pad2d_backward") : (fwd ? "upsample2d_forward" : "upsample2d_backward"),
                   (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmi8", &g->nodes[in[0]].buf, y, N, geo);
    return r;
}
