/* The shape family's ops that pick elements by index along axes, one block each: builder
   (shape rule), registry aliases, autograd rule, CPU body (its loop in src/cpu/shape.c)
   and kernel launch (kernels/shape.cl). slice (and split), concat (and stack), repeat,
   tril/triu. The family's shared helpers are in view.c. */
#include "../../base/internal.h"
#include "../../base/registry.h"

/* ==== shared: a shape seen along one axis, [outer, len, inner] ==== */

/* A shape seen along axis: [outer, len, inner]. */
static void nn__axis_split(const nn_shape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner) {
    int d;
    *outer = *inner = 1;
    for (d = 0; d < axis; d++) *outer *= s->dim[d];
    for (d = axis + 1; d < s->ndim; d++) *inner *= s->dim[d];
    *len = s->dim[axis];
}

/* ==== slice: y [..., len, ...] = x [..., L, ...] at start, start + step, ... along axis
   (torch.narrow, x[..., start::step] with a length); split cuts x into slices. SLICE_GRAD:
   dx [..., L, ...] = dy put back at those indices, zeros elsewhere; one loop and one
   kernel serve both directions (their grad flag). Slices of one tensor with disjoint runs
   give it one CONCAT as gradient instead (nn__grad_slice_merge). ==== */

/* A SLICE or SLICE_GRAD node (also concat's gradient) */
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

#define nn__plan_slice nn__no_plan
#define nn__cpu_slice_grad nn__cpu_slice
#define nn__launch_slice_grad nn__launch_slice
#define nn__grad_slice_grad nn__grad_none
#define nn__plan_slice_grad nn__no_plan

static nn_tensor nn__concat_node(nn_graph *g, const nn_tensor *xs, int k, int axis);

/* One run of a gradient along an axis: a tensor (id) or zeros (id -1) over [start, start + len). */
typedef struct {
    int id;
    int64_t start, len;
} nn__grad_piece;

/* x's gradient so far (of x's storage type), seen along axis as runs that tile the axis (at most
   NN__MAX_IN): a SLICE_GRAD of step 1 is [zeros, dy, zeros], a CONCAT along axis is its
   inputs (a FILL of 0 among them is zeros); 0 runs when it is anything else. */
static int nn__grad_pieces(const nn_graph *g, int x, int axis, nn__grad_piece *p) {
    const nn__node *G = g->nodes[x].grad >= 0 ? &g->nodes[g->nodes[x].grad] : NULL;
    int64_t L = g->nodes[x].shape.dim[axis], off = 0;
    int k, m = 0;
    if (!G || G->dtype != g->nodes[x].dtype || !nn__shape_eq(&G->shape, &g->nodes[x].shape)) return 0;
    if (G->op == NN__OP_SLICE_GRAD && G->a.shape.axis == axis && G->a.shape.step == 1) {
        int64_t s = G->a.shape.start, len = g->nodes[G->in[0]].shape.dim[axis];
        if (s > 0) p[m].id = -1, p[m].start = 0, p[m++].len = s;
        p[m].id = G->in[0], p[m].start = s, p[m++].len = len;
        if (s + len < L) p[m].id = -1, p[m].start = s + len, p[m++].len = L - s - len;
        return m;
    }
    if (G->op != NN__OP_CONCAT || G->a.shape.axis != axis) return 0;
    for (k = 0; k < G->n_in; k++) {
        const nn__node *in = &g->nodes[G->in[k]];
        int zero = in->op == NN__OP_FILL && in->n_in == 0 && in->a.ew.s == 0.0f;
        p[m].id = zero ? -1 : G->in[k], p[m].start = off, p[m++].len = in->shape.dim[axis];
        off += in->shape.dim[axis];
    }
    return m;
}

/* Slices of one tensor with disjoint runs along one axis (q, k and v out of one
   projection): the gradient of x is one CONCAT of the slices' dy and zeros for the runs
   no slice covers, not a zero-padded SLICE_GRAD per slice and their sum. The same values:
   a sum with zeros is exact. 0 when the slice is not of that kind (step > 1, overlapping
   another, more than NN__MAX_IN runs): the caller sums as for any other gradient. */
static int nn__grad_slice_merge(nn_graph *g, int x, int dy, int axis, int64_t start) {
    nn__grad_piece p[NN__MAX_IN + 2];
    nn_tensor in[NN__MAX_IN];
    int64_t len = g->nodes[dy].shape.dim[axis];
    int m = nn__grad_pieces(g, x, axis, p), k, j, n = 0, r;
    if (m == 0 || g->nodes[dy].dtype != g->nodes[x].dtype) return 0;
    for (k = 0; k < m && !(p[k].id < 0 && p[k].start <= start && start + len <= p[k].start + p[k].len); k++) continue;
    if (k == m) return 0; /* not inside one run of zeros: overlapping, summed */
    for (j = 0; j < m; j++) { /* run k split into zeros, dy, zeros */
        nn__grad_piece q[3];
        int nq = 0, i;
        if (j != k) q[nq++] = p[j];
        else {
            if (start > p[k].start) q[nq].id = -1, q[nq].start = p[k].start, q[nq++].len = start - p[k].start;
            q[nq].id = dy, q[nq].start = start, q[nq++].len = len;
            if (start + len < p[k].start + p[k].len)
                q[nq].id = -1, q[nq].start = start + len, q[nq++].len = p[k].start + p[k].len - start - len;
        }
        for (i = 0; i < nq; i++) {
            nn_shape s = g->nodes[x].shape;
            if (n == NN__MAX_IN) return 0;
            s.dim[axis] = q[i].len;
            in[n] = q[i].id >= 0 ? nn__tensor(q[i].id) : nn__tensor(nn__new_node(g, NN__OP_FILL, g->nodes[x].dtype, s, NULL, 0));
            if (in[n].id < 0) return 0;
            if (q[i].id < 0) g->nodes[in[n].id].a.ew.s = 0.0f;
            n++;
        }
    }
    r = nn__concat_node(g, in, n, axis).id;
    if (r < 0) return 0;
    g->nodes[x].grad = r;
    return 1;
}

static void nn__grad_slice(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (n.a.shape.step == 1 && nn__grad_slice_merge(g, a, gy.id, n.a.shape.axis, n.a.shape.start)) return;
    nn__acc_grad(g, a, nn__slice_op(g, NN__OP_SLICE_GRAD, gy.id, g->nodes[a].shape, n.a.shape.axis, n.a.shape.start, n.a.shape.step));
    return;
}

static nn_result nn__cpu_slice(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    void *y = n->buf.host;
    int grad = n->op == NN__OP_SLICE_GRAD;
    int64_t o, L, inner, len;
    nn__axis_split(grad ? &n->shape : &g->nodes[in[0]].shape, n->a.shape.axis, &o, &L, &inner);
    len = (grad ? g->nodes[in[0]].shape : n->shape).dim[n->a.shape.axis];
    nn__slice(g->ctx->threads, y, g->nodes[in[0]].buf.host, (int)nn__dtype_size(n->dtype), o, L, inner, n->a.shape.start, len, n->a.shape.step, grad);
    return NN_OK;
}

static nn_result nn__launch_slice(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    int grad = n->op == NN__OP_SLICE_GRAD;
    int64_t o, L, inner, len;
    nn__axis_split(grad ? &n->shape : &g->nodes[in[0]].shape, n->a.shape.axis, &o, &L, &inner);
    len = (grad ? g->nodes[in[0]].shape : n->shape).dim[n->a.shape.axis];
#define NN__SLICE_ARGS                  \
    k.x = &g->nodes[in[0]].buf;         \
    k.y = &n->buf;                      \
    k.n = (int)n->numel;                \
    k.L = (int)L;                       \
    k.len = (int)len;                   \
    k.inner = (int)inner;               \
    k.start = n->a.shape.start;         \
    k.grad = grad;                      \
    k.step = n->a.shape.step
    if (nn__dtype_half(n->dtype)) { /* 16-bit words */
        NN__KSTART(half_slice, "shape", "half_slice", n->numel);
        NN__SLICE_ARGS;
        return nn__kargs_half_slice(l, &k);
    } else {
        NN__KSTART(slice, "shape", "slice", n->numel);
        NN__SLICE_ARGS;
        return nn__kargs_slice(l, &k);
    }
#undef NN__SLICE_ARGS
}

/* ==== concat: y [..., L_0 + L_1 + ..., ...] = the xs [..., L_k, ...] joined along axis
   (torch.cat); stack joins them along a new dim. Its gradient is a slice of dy per
   input. ==== */

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

#define nn__plan_concat nn__no_plan

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

static nn_result nn__cpu_concat(nn_graph *g, nn__node *n) {
    int64_t o, L, inner, off = 0;
    int k;
    nn__axis_split(&n->shape, n->a.shape.axis, &o, &L, &inner);
    for (k = 0; k < n->n_in; k++) {
        int64_t lx = g->nodes[n->in[k]].shape.dim[n->a.shape.axis];
        nn__concat_part(g->ctx->threads, n->buf.host, g->nodes[n->in[k]].buf.host, (int)nn__dtype_size(n->dtype), o, lx, L, off, inner);
        off += lx;
    }
    return NN_OK;
}

static nn_result nn__launch_concat(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__launch *l = NULL;
    nn__k_concat_part k;
    nn__k_half_concat kh;
    nn_result r = NN_OK;
    int64_t o, L, inner, off = 0;
    int j, half = nn__dtype_half(n->dtype);
    nn__axis_split(&n->shape, n->a.shape.axis, &o, &L, &inner);
    for (j = 0; j < n->n_in && r == NN_OK; j++) { /* one launch per input: each written once */
        const nn__node *x = &g->nodes[n->in[j]];
        int64_t lx = x->shape.dim[n->a.shape.axis];
        r = nn__launch_kernel(g, id, "shape", half ? "half_concat" : "concat_part", (size_t)x->numel, &l);
        if (r != NN_OK) return r;
        if (half) { /* 16-bit words */
            memset(&kh, 0, sizeof kh);
            kh.x = &x->buf;
            kh.y = &n->buf;
            kh.n = (int)x->numel;
            kh.lx = (int)lx;
            kh.L = (int)L;
            kh.off = (int)off;
            kh.inner = (int)inner;
            r = nn__kargs_half_concat(l, &kh);
        } else {
            memset(&k, 0, sizeof k);
            k.x = &x->buf;
            k.y = &n->buf;
            k.n = (int)x->numel;
            k.lx = (int)lx;
            k.L = (int)L;
            k.off = (int)off;
            k.inner = (int)inner;
            r = nn__kargs_concat_part(l, &k);
        }
        off += lx;
    }
    return r;
}

/* ==== repeat: y [x.dim[d] * repeats[d]] tiles x (torch.Tensor.repeat; more repeats than
   x's dims put ones in front of x's). REPEAT_GRAD: dx [x's shape] sums dy over the tiles,
   in order of y; one CPU loop serves both (its grad flag), each has a kernel. ==== */

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

#define nn__plan_repeat nn__no_plan
#define nn__cpu_repeat_grad nn__cpu_repeat
#define nn__grad_repeat_grad nn__grad_none
#define nn__plan_repeat_grad nn__no_plan

static void nn__grad_repeat(nn_graph *g, int id) { nn__grad_by_op(g, id, NN__OP_REPEAT_GRAD); }

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

/* a repeat's nd dims as the kernels' six, ones in front, in an int8 argument */
static void nn__repeat_dims8(const int64_t *dims, int nd, int *v) {
    int64_t d6[NN_MAX_DIMS];
    int d, pad = NN_MAX_DIMS - nd;
    for (d = 0; d < NN_MAX_DIMS; d++) d6[d] = d < pad ? 1 : dims[d - pad];
    nn__dims8(d6, NN_MAX_DIMS, 1, v);
}

static nn_result nn__launch_repeat(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int64_t yd[NN_MAX_DIMS], xd[NN_MAX_DIMS];
    int nd = nn__repeat_geom(g, n, yd, xd), vy[8], vx[8];
    nn__repeat_dims8(yd, nd, vy);
    nn__repeat_dims8(xd, nd, vx);
    NN__KSTART(repeat_forward, "shape", "repeat_forward", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.ydims = vy;
    k.xdims = vx;
    return nn__kargs_repeat_forward(l, &k);
}

static nn_result nn__launch_repeat_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int64_t yd[NN_MAX_DIMS], xd[NN_MAX_DIMS], reps[NN_MAX_DIMS];
    int nd = nn__repeat_geom(g, n, yd, xd), vx[8], vr[8], d;
    for (d = 0; d < nd; d++) reps[d] = yd[d] / xd[d];
    nn__repeat_dims8(xd, nd, vx);
    nn__repeat_dims8(reps, nd, vr);
    NN__KSTART(repeat_backward, "shape", "repeat_backward", n->numel);
    k.dy = &g->nodes[n->in[0]].buf;
    k.dx = &n->buf;
    k.n = (int)n->numel;
    k.xdims = vx;
    k.reps = vr;
    return nn__kargs_repeat_backward(l, &k);
}

/* ==== tril: y [..., R, C] = x with the elements above (tril) or below (triu) the
   diagonal zeroed (torch.tril, torch.triu; float32). Its gradient is dy masked alike. ==== */

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

#define nn__plan_tril nn__no_plan

static void nn__grad_tril(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t = nn__op1(g, NN__OP_TRIL, NN_F32, n.shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
    return;
}

static nn_result nn__cpu_tril(nn_graph *g, nn__node *n) {
    int nd = n->shape.ndim;
    int64_t R = n->shape.dim[nd - 2], C = n->shape.dim[nd - 1];
    nn__tril(n->buf.host, NN__F(n->in[0]), n->numel / (R * C), R, C, n->a.shape.diagonal, n->a.shape.upper);
    return NN_OK;
}

static nn_result nn__launch_tril(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int nd = n->shape.ndim;
    NN__KSTART(tril, "shape", "tril", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.R = (int)n->shape.dim[nd - 2];
    k.C = (int)n->shape.dim[nd - 1];
    k.diagonal = n->a.shape.diagonal;
    k.upper = n->a.shape.upper;
    return nn__kargs_tril(l, &k);
}
