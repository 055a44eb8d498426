/* The shape ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../base/internal.h"
#include "../base/registry.h"

/* Registry names (src/base/registry.h: nn__cpu_STEM, nn__launch_STEM, nn__grad_STEM,
   nn__plan_STEM): the functions an op shares with another, and the ones it has none of. */
#define nn__plan_reshape nn__no_plan
#define nn__plan_permute nn__no_plan
#define nn__plan_concat nn__no_plan
#define nn__plan_slice nn__no_plan
#define nn__cpu_slice_grad nn__cpu_slice
#define nn__launch_slice_grad nn__launch_slice
#define nn__grad_slice_grad nn__grad_none
#define nn__plan_slice_grad nn__no_plan
#define nn__plan_flip nn__no_plan
#define nn__plan_repeat nn__no_plan
#define nn__cpu_repeat_grad nn__cpu_repeat
#define nn__launch_repeat_grad nn__launch_repeat
#define nn__grad_repeat_grad nn__grad_none
#define nn__plan_repeat_grad nn__no_plan
#define nn__plan_tril nn__no_plan
#define nn__grad_const nn__grad_none
#define nn__plan_const nn__no_plan
#define nn__launch_pad2d nn__launch_pad_upsample
#define nn__grad_pad2d nn__grad_pad_upsample
#define nn__plan_pad2d nn__no_plan
#define nn__cpu_pad2d_grad nn__cpu_pad2d
#define nn__launch_pad2d_grad nn__launch_pad_upsample
#define nn__grad_pad2d_grad nn__grad_none
#define nn__plan_pad2d_grad nn__no_plan
#define nn__launch_upsample2d nn__launch_pad_upsample
#define nn__grad_upsample2d nn__grad_pad_upsample
#define nn__plan_upsample2d nn__no_plan
#define nn__cpu_upsample2d_grad nn__cpu_upsample2d
#define nn__launch_upsample2d_grad nn__launch_pad_upsample
#define nn__grad_upsample2d_grad nn__grad_none
#define nn__plan_upsample2d_grad nn__no_plan

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
        nn__op_fail(g, NN_ERR_SHAPE, "%s: dim out of range for x %s", op, sx);
        return -1;
    }
    return axis;
}

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

/* One CONCAT node of k <= NN__MAX_IN inputs, checked by nn_concat. */
static nn_tensor nn__concat_node(nn_graph *g, const nn_tensor *xs, int k, int axis) {
    int in[NN__MAX_IN], j;
    nn_shape s = nn__n(g, xs[0])->shape;
    nn_tensor t;
    s.dim[axis] = 0;
    for (j = 0; j < k; j++) {
        in[j] = xs[j].id;
        s.dim[axis] += nn__n(g, xs[j])->shape.dim[axis];
    }
    t = nn__tensor(nn__new_node(g, NN__OP_CONCAT, nn__n(g, xs[0])->dtype, s, in, k));
    if (t.id >= 0) g->nodes[t.id].a.shape.axis = axis;
    return t;
}

NN_API nn_tensor nn_concat(nn_graph *g, const nn_tensor *xs, int n, int dim) {
    nn_tensor part[(64 + NN__MAX_IN - 1) / NN__MAX_IN];
    int k, d, parts, axis;
    if (!g) return nn__tensor(-1);
    if (!xs || n < 1 || n > 64) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_concat: needs 1 to 64 tensors, not %d", n);
    if (!nn__check(g, "nn_concat", n, xs)) return nn__tensor(-1);
    if ((axis = nn__axis(g, "nn_concat", xs[0], dim)) < 0) return nn__tensor(-1);
    for (k = 1; k < n; k++) {
        const nn__node *a = nn__n(g, xs[0]), *b = nn__n(g, xs[k]);
        for (d = 0; d < a->shape.ndim && a->shape.ndim == b->shape.ndim; d++)
            if (d != axis && a->shape.dim[d] != b->shape.dim[d]) break;
        if (a->shape.ndim != b->shape.ndim || d < a->shape.ndim || a->dtype != b->dtype) {
            char x[128], y[128];
            nn__shape_str(&a->shape, x, sizeof x);
            nn__shape_str(&b->shape, y, sizeof y);
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_concat: tensor 0 %s %s and tensor %d %s %s differ outside dim %d", x,
                               nn__dtype_name(a->dtype), k, y, nn__dtype_name(b->dtype), axis);
        }
    }
    if (n == 1) return xs[0];
    if (n <= NN__MAX_IN) return nn__concat_node(g, xs, n, axis);
    /* more inputs than a node holds: groups of NN__MAX_IN, then one node of the groups */
    for (parts = 0, k = 0; k < n; k += NN__MAX_IN, parts++)
        part[parts] = nn__concat_node(g, xs + k, n - k < NN__MAX_IN ? n - k : NN__MAX_IN, axis);
    for (k = 0; k < parts; k++)
        if (part[k].id < 0) return nn__tensor(-1);
    return nn__concat_node(g, part, parts, axis);
}

NN_API nn_tensor nn_stack(nn_graph *g, const nn_tensor *xs, int n, int dim) {
    nn_tensor u[64];
    int k, nd;
    if (!g) return nn__tensor(-1);
    if (!xs || n < 1 || n > 64) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_stack: needs 1 to 64 tensors, not %d", n);
    if (!nn__check(g, "nn_stack", n, xs)) return nn__tensor(-1);
    nd = nn__n(g, xs[0])->shape.ndim;
    for (k = 1; k < n; k++)
        if (!nn__shape_eq(&nn__n(g, xs[k])->shape, &nn__n(g, xs[0])->shape) || nn__n(g, xs[k])->dtype != nn__n(g, xs[0])->dtype) {
            char x[128], y[128];
            nn__shape_str(&nn__n(g, xs[0])->shape, x, sizeof x);
            nn__shape_str(&nn__n(g, xs[k])->shape, y, sizeof y);
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_stack: tensor 0 %s and tensor %d %s differ (stack needs equal shapes and dtypes)",
                               x, k, y);
        }
    if (dim < -(nd + 1) || dim > nd) {
        char x[128];
        nn__shape_str(&nn__n(g, xs[0])->shape, x, sizeof x);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_stack: dim %d out of range [%d, %d] for tensors %s", dim, -(nd + 1), nd, x);
    }
    if (dim < 0) dim += nd + 1;
    for (k = 0; k < n; k++) u[k] = nn_unsqueeze(g, xs[k], dim); /* views: no copy */
    return nn_concat(g, u, n, dim);
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

static nn_tensor nn__slice_op(nn_graph *g, int op, int src, nn_shape s, int axis, int64_t start, int64_t step) {
    nn_tensor t = nn__op1(g, op, g->nodes[src].dtype, s, src);
    if (t.id >= 0) {
        g->nodes[t.id].a.shape.axis = axis;
        g->nodes[t.id].a.shape.start = (int)start;
        g->nodes[t.id].a.shape.step = (int)step;
    }
    return t;
}

static nn_tensor nn__slice_checked(nn_graph *g, const char *op, nn_tensor x, int axis, int64_t start, int64_t len, int64_t step) {
    nn_shape s;
    if (!nn__check(g, op, 1, &x)) return nn__tensor(-1);
    if ((axis = nn__axis(g, op, x, axis)) < 0) return nn__tensor(-1);
    s = nn__n(g, x)->shape;
    /* no start + (len - 1) * step: it can overflow */
    if (step < 1 || start < 0 || len < 1 || start >= s.dim[axis] || (len - 1) > (s.dim[axis] - 1 - start) / step) {
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: start %lld, length %lld, step %lld is outside dim %d of x %s", op,
                           (long long)start, (long long)len, (long long)step, axis, sx);
    }
    s.dim[axis] = len;
    if (len == 1) step = 1; /* one index: any step reads the same */
    return nn__slice_op(g, NN__OP_SLICE, x.id, s, axis, start, step);
}

NN_API nn_tensor nn_slice(nn_graph *g, nn_tensor x, int dim, int64_t start, int64_t len) {
    return nn__slice_checked(g, "nn_slice", x, dim, start, len, 1);
}

NN_API nn_tensor nn_slice_step(nn_graph *g, nn_tensor x, int dim, int64_t start, int64_t len, int64_t step) {
    return nn__slice_checked(g, "nn_slice_step", x, dim, start, len, step);
}

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

NN_API nn_tensor nn_repeat(nn_graph *g, nn_tensor x, const int64_t *repeats, int n) {
    nn_shape s, xs;
    int d, pad;
    if (!nn__check(g, "nn_repeat", 1, &x)) return nn__tensor(-1);
    xs = nn__n(g, x)->shape;
    if (!repeats || n < xs.ndim || n > NN_MAX_DIMS) {
        char sx[128];
        nn__shape_str(&xs, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_repeat: %d repeats for x %s (needs x's %d dims to %d%s)", n, sx,
                           xs.ndim, NN_MAX_DIMS, repeats ? "" : "; repeats is NULL");
    }
    pad = n - xs.ndim;
    s.ndim = n;
    memset(s.dim, 0, sizeof s.dim);
    for (d = 0; d < n; d++) {
        int64_t xd = d < pad ? 1 : xs.dim[d - pad];
        if (repeats[d] < 1 || repeats[d] > NN__MAX_NUMEL / xd) {
            char sx[128];
            nn__shape_str(&xs, sx, sizeof sx);
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_repeat: repeat %lld of dim %d for x %s (each at least 1)", (long long)repeats[d],
                               d, sx);
        }
        s.dim[d] = xd * repeats[d];
    }
    return nn__op1(g, NN__OP_REPEAT, nn__n(g, x)->dtype, s, x.id); /* the repeats: its dims over x's */
}

static nn_tensor nn__tri(nn_graph *g, const char *op, nn_tensor x, int diagonal, int upper) {
    nn_tensor t;
    if (!nn__check(g, op, 1, &x) || !nn__expect_f32(g, op, x, "x")) return nn__tensor(-1);
    if (nn__n(g, x)->shape.ndim < 2) {
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s needs at least 2 dims (matrices in the last two)", op, sx);
    }
    t = nn__op1(g, NN__OP_TRIL, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.shape.diagonal = diagonal;
        g->nodes[t.id].a.shape.upper = upper;
    }
    return t;
}

NN_API nn_tensor nn_tril(nn_graph *g, nn_tensor x, int diagonal) { return nn__tri(g, "nn_tril", x, diagonal, 0); }
NN_API nn_tensor nn_triu(nn_graph *g, nn_tensor x, int diagonal) { return nn__tri(g, "nn_triu", x, diagonal, 1); }

enum { NN__CONST_ARANGE = 0, NN__CONST_EYE = 1 };

NN_API nn_tensor nn_arange(nn_graph *g, double start, double end, double step) {
    double len;
    nn_tensor t;
    if (!nn__check(g, "nn_arange", 0, NULL)) return nn__tensor(-1);
    len = step != 0.0 ? ceil((end - start) / step) : 0.0;
    if (!(step != 0.0) || !(len >= 1.0) || len > (double)NN__MAX_NUMEL) /* NaN fails too */
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                           "nn_arange: start %g, end %g, step %g give %g elements (needs 1 to %lld: step nonzero, its sign end - start's)",
                           start, end, step, len == len ? len : 0.0, (long long)NN__MAX_NUMEL);
    t = nn__tensor(nn__new_node(g, NN__OP_CONST, NN_F32, nn_shape1((int64_t)len), NULL, 0));
    if (t.id >= 0) {
        g->nodes[t.id].a.shape.kind = NN__CONST_ARANGE;
        g->nodes[t.id].a.shape.c_start = start;
        g->nodes[t.id].a.shape.c_step = step;
    }
    return t;
}

NN_API nn_tensor nn_eye(nn_graph *g, int64_t n, int64_t m) {
    nn_tensor t;
    if (!nn__check(g, "nn_eye", 0, NULL)) return nn__tensor(-1);
    if (m == 0) m = n;
    if (n < 1 || m < 1) return nn__op_fail(g, NN_ERR_SHAPE, "nn_eye: n %lld, m %lld (each at least 1)", (long long)n, (long long)m);
    t = nn__tensor(nn__new_node(g, NN__OP_CONST, NN_F32, nn_shape2(n, m), NULL, 0));
    if (t.id >= 0) g->nodes[t.id].a.shape.kind = NN__CONST_EYE;
    return t;
}

NN_API nn_tensor nn_split(nn_graph *g, nn_tensor x, const int64_t *sizes, int n, int dim, nn_tensor *out) {
    int64_t start = 0, total = 0;
    int k, axis = dim;
    if (!g) return nn__tensor(-1);
    if (!sizes || !out || n < 1) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_split: needs sizes, out and n >= 1");
    if (nn__check(g, "nn_split", 1, &x) && (axis = nn__axis(g, "nn_split", x, axis)) >= 0) {
        int64_t dim = nn__n(g, x)->shape.dim[axis];
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        for (k = 0; k < n && g->status == NN_OK; k++) { /* each in 1..dim: the total cannot overflow */
            if (sizes[k] < 1 || sizes[k] > dim)
                nn__op_fail(g, NN_ERR_SHAPE, "nn_split: size %lld of part %d is outside 1..%lld, dim %d of x %s",
                            (long long)sizes[k], k, (long long)dim, axis, sx);
            else
                total += sizes[k];
        }
        if (g->status == NN_OK && total != dim)
            nn__op_fail(g, NN_ERR_SHAPE, "nn_split: sizes add up to %lld, dim %d of x %s is %lld", (long long)total, axis, sx,
                        (long long)dim);
    }
    for (k = 0; k < n; k++) {
        out[k] = g->status == NN_OK ? nn_slice(g, x, axis, start, sizes[k]) : nn__tensor(-1);
        if (g->status == NN_OK) start += sizes[k]; /* checked sizes only: no overflow */
    }
    return out[0];
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
    return nn_reshape(g, nn_permute(g, x, perm, 6), nn_shape4(s.dim[0], C, s.dim[2] * r, s.dim[3] * r));
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
    nn__acc_grad(g, a, nn_permute(g, gy, inv, n.shape.ndim));
    return;
}

static void nn__grad_concat(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int ax = n.a.shape.axis, k;
    int64_t off = 0;
    for (k = 0; k < n.n_in; k++) {
        int x = n.in[k];
        if (g->nodes[x].needs_grad) nn__acc_grad(g, x, nn__slice_op(g, NN__OP_SLICE, gy.id, g->nodes[x].shape, ax, off, 1));
        off += g->nodes[x].shape.dim[ax];
    }
    return;
}

static void nn__grad_slice(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__slice_op(g, NN__OP_SLICE_GRAD, gy.id, g->nodes[a].shape, n.a.shape.axis, n.a.shape.start, n.a.shape.step));
    return;
}

static void nn__grad_flip(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t = nn__op1(g, NN__OP_FLIP, NN_F32, n.shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
    return;
}

static void nn__grad_repeat(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t = nn__op1(g, NN__OP_REPEAT_GRAD, NN_F32, g->nodes[a].shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
    return;
}

static void nn__grad_tril(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t = nn__op1(g, NN__OP_TRIL, NN_F32, n.shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
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
    if (n->storage != NN__ST_VIEW) memcpy(n->buf.host, NN__F(n->in[0]), (size_t)n->numel * 4); /* a parameter's copy */
    return NN_OK;
}

static nn_result nn__cpu_permute(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t dims[NN_MAX_DIMS], xs[NN_MAX_DIMS];
    nn__permute_geom(n, &g->nodes[in[0]].shape, dims, xs);
    nn__permute_forward(y, NN__F(in[0]), NN_MAX_DIMS, dims, xs);
    return NN_OK;
}

static nn_result nn__cpu_concat(nn_graph *g, nn__node *n) {
    int64_t o, L, inner, off = 0;
    int k;
    nn__axis_split(&n->shape, n->a.shape.axis, &o, &L, &inner);
    for (k = 0; k < n->n_in; k++) {
        int64_t lx = g->nodes[n->in[k]].shape.dim[n->a.shape.axis];
        nn__concat_part(n->buf.host, NN__F(n->in[k]), o, lx, L, off, inner);
        off += lx;
    }
    return NN_OK;
}

static nn_result nn__cpu_slice(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int grad = n->op == NN__OP_SLICE_GRAD;
    int64_t o, L, inner, len;
    nn__axis_split(grad ? &n->shape : &g->nodes[in[0]].shape, n->a.shape.axis, &o, &L, &inner);
    len = (grad ? g->nodes[in[0]].shape : n->shape).dim[n->a.shape.axis];
    nn__slice(y, NN__F(in[0]), o, L, inner, n->a.shape.start, len, n->a.shape.step, grad);
    return NN_OK;
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
    nn__permute_forward(n->buf.host, NN__F(n->in[0]) + base, NN_MAX_DIMS, dims, xs);
    return NN_OK;
}

/* repeat geometry: the output's dims and x's, x padded with leading ones (REPEAT_GRAD:
   the forward's, from its own shape and its input's) */
static int nn__repeat_geom(nn_graph *g, const nn__node *n, int64_t *ydims, int64_t *xdims) {
    const nn_shape *ys = n->op == NN__OP_REPEAT ? &n->shape : &g->nodes[n->in[0]].shape;
    const nn_shape *xs = n->op == NN__OP_REPEAT ? &g->nodes[n->in[0]].shape : &n->shape;
    int d, pad = ys->ndim - xs->ndim;
    for (d = 0; d < ys->ndim; d++) {
        ydims[d] = ys->dim[d];
        xdims[d] = d < pad ? 1 : xs->dim[d - pad];
    }
    return ys->ndim;
}

static nn_result nn__cpu_repeat(nn_graph *g, nn__node *n) {
    int64_t yd[NN_MAX_DIMS], xd[NN_MAX_DIMS];
    int nd = nn__repeat_geom(g, n, yd, xd);
    nn__repeat(n->buf.host, NN__F(n->in[0]), nd, yd, xd, n->op == NN__OP_REPEAT_GRAD);
    return NN_OK;
}

static nn_result nn__cpu_tril(nn_graph *g, nn__node *n) {
    int nd = n->shape.ndim;
    int64_t R = n->shape.dim[nd - 2], C = n->shape.dim[nd - 1];
    nn__tril(n->buf.host, NN__F(n->in[0]), n->numel / (R * C), R, C, n->a.shape.diagonal, n->a.shape.upper);
    return NN_OK;
}

/* Runs once, at compile time (NN__OPF_CONST), on every backend. */
static nn_result nn__cpu_const(nn_graph *g, nn__node *n) {
    float *y = n->buf.host;
    int64_t i;
    (void)g;
    if (n->a.shape.kind == NN__CONST_ARANGE) {
        for (i = 0; i < n->numel; i++) y[i] = (float)(n->a.shape.c_start + (double)i * n->a.shape.c_step);
    } else {
        int64_t m = n->shape.dim[1];
        memset(y, 0, (size_t)n->numel * sizeof(float));
        for (i = 0; i < n->shape.dim[0] && i < m; i++) y[i * m + i] = 1.0f;
    }
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

static nn_result nn__launch_reshape(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r;
    if (n->storage == NN__ST_VIEW) return NN_OK; /* the input's own storage: nothing to run */
    r = nn__launch_kernel(g, id, "elementwise", "copy", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmi", &g->nodes[n->in[0]].buf, &n->buf, N);
    return r;
}

static nn_result nn__launch_permute(nn_graph *g, int id) {
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
    r = nn__launch_kernel(g, id, "shape", "permute", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmi88", &g->nodes[in[0]].buf, y, N, vd, vs);
    return r;
}

static nn_result nn__launch_concat(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    int64_t o, L, inner, off = 0;
    int k;
    nn__axis_split(&n->shape, n->a.shape.axis, &o, &L, &inner);
    for (k = 0; k < n->n_in && r == NN_OK; k++) { /* one launch per input: each written once */
        const nn__node *x = &g->nodes[n->in[k]];
        int64_t lx = x->shape.dim[n->a.shape.axis];
        r = nn__launch_kernel(g, id, "shape", "concat_part", (size_t)x->numel, &l);
        if (r == NN_OK) r = nn__args(l, "mmiiiii", &x->buf, &n->buf, (int)x->numel, (int)lx, (int)L, (int)off, (int)inner);
        off += lx;
    }
    return r;
}

static nn_result nn__launch_slice(nn_graph *g, int id) {
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
    r = nn__launch_kernel(g, id, "shape", "slice", (size_t)N, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmiiiiiii", &g->nodes[in[0]].buf, y, N, (int)L, (int)len, (int)inner, n->a.shape.start, grad,
                     n->a.shape.step);
    return r;
}

/* six dims into an int8 argument (the last two unused) */
static void nn__dims8(const int64_t *dims, int nd, int fill, int *v) {
    int d;
    for (d = 0; d < 8; d++) v[d] = d < nd ? (int)dims[d] : fill;
}

static nn_result nn__launch_flip(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int64_t dims[NN_MAX_DIMS], xs[NN_MAX_DIMS], base = nn__flip_geom(n, dims, xs);
    int vd[8], vs[8];
    nn__launch *l = NULL;
    nn_result r;
    nn__dims8(dims, NN_MAX_DIMS, 1, vd);
    nn__dims8(xs, NN_MAX_DIMS, 0, vs);
    r = nn__launch_kernel(g, id, "shape", "strided", (size_t)n->numel, &l);
    if (r == NN_OK) r = nn__args(l, "mmi88i", &g->nodes[n->in[0]].buf, &n->buf, (int)n->numel, vd, vs, (int)base);
    return r;
}

static nn_result nn__launch_repeat(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int64_t yd[NN_MAX_DIMS], xd[NN_MAX_DIMS], p6[NN_MAX_DIMS], q6[NN_MAX_DIMS];
    int nd = nn__repeat_geom(g, n, yd, xd), pad = NN_MAX_DIMS - nd, d, v1[8], v2[8];
    nn__launch *l = NULL;
    nn_result r;
    for (d = 0; d < NN_MAX_DIMS; d++) { /* ones in front: the kernels read six dims */
        p6[d] = d < pad ? 1 : (n->op == NN__OP_REPEAT ? yd[d - pad] : xd[d - pad]);
        q6[d] = d < pad ? 1 : (n->op == NN__OP_REPEAT ? xd[d - pad] : yd[d - pad] / xd[d - pad]);
    }
    nn__dims8(p6, NN_MAX_DIMS, 1, v1);
    nn__dims8(q6, NN_MAX_DIMS, 1, v2);
    r = nn__launch_kernel(g, id, "shape", n->op == NN__OP_REPEAT ? "repeat_forward" : "repeat_backward", (size_t)n->numel, &l);
    if (r == NN_OK) r = nn__args(l, "mmi88", &g->nodes[n->in[0]].buf, &n->buf, (int)n->numel, v1, v2);
    return r;
}

static nn_result nn__launch_tril(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int nd = n->shape.ndim;
    nn__launch *l = NULL;
    nn_result r = nn__launch_kernel(g, id, "shape", "tril", (size_t)n->numel, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmiiiii", &g->nodes[n->in[0]].buf, &n->buf, (int)n->numel, (int)n->shape.dim[nd - 2],
                     (int)n->shape.dim[nd - 1], n->a.shape.diagonal, n->a.shape.upper);
    return r;
}

static nn_result nn__launch_const(nn_graph *g, int id) { /* never scheduled: computed at compile time */
    return nn__fail(g->ctx, NN_ERR_STATE, "%s: a constant has no kernels", nn__op_names[g->nodes[id].op]);
}

static nn_result nn__launch_pad_upsample(nn_graph *g, int id) {
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
    r = nn__launch_kernel(g, id, "shape",
                   pad ? (fwd ? "pad2d_forward" : "pad2d_backward") : (fwd ? "upsample2d_forward" : "upsample2d_backward"),
                   (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmi8", &g->nodes[in[0]].buf, y, N, geo);
    return r;
}
