/* The gather ops, one block each: builder (shape rule), registry aliases, autograd rule,
   CPU body (its loop in src/cpu/gather.c) and kernel launch (kernels/gather.cl). Index
   tensors are int32; an index out of range reads zeros, and a checked op (n->check) also
   counts such indices, which PyTorch raises on. */
#include "../base/internal.h"
#include "../base/registry.h"

/* ==== shared: dims along one axis, the index checks and counters of bad indices, the
   operands of gather and scatter_add ==== */

/* A shape seen along dim: [outer, len, inner]. */
static void nn__gather_split(const nn_shape *s, int dim, int64_t *outer, int64_t *len, int64_t *inner) {
    int d;
    *outer = *inner = 1;
    for (d = 0; d < dim; d++) *outer *= s->dim[d];
    for (d = dim + 1; d < s->ndim; d++) *inner *= s->dim[d];
    *len = s->dim[dim];
}

/* A dim of x in [0, ndim) (negative: from the end), or -1 and the op fails. */
static int nn__gather_dim(nn_graph *g, const char *op, nn_tensor x, int dim) {
    int nd = nn__n(g, x)->shape.ndim;
    if (dim < -nd || dim >= nd) {
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        nn__op_fail(g, NN_ERR_SHAPE, "%s: dim %d out of range [%d, %d] for x %s", op, dim, -nd, nd - 1, sx);
        return -1;
    }
    return dim < 0 ? dim + nd : dim;
}

static int nn__expect_index(nn_graph *g, const char *op, nn_tensor index, nn_tensor x) {
    if (nn__n(g, index)->dtype != NN_I32) {
        char si[128], sx[128];
        nn__shape_str(&nn__n(g, index)->shape, si, sizeof si);
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        nn__op_fail(g, NN_ERR_SHAPE, "%s: index %s must be int32, not %s (x %s)", op, si, nn__dtype_name(nn__n(g, index)->dtype), sx);
        return 0;
    }
    return 1;
}

/* A checked op's index values outside [0, L), into its counter (the kernels' atomic_inc). */
static void nn__gather_count(nn_graph *g, const nn__node *n, const nn__node *idx, int64_t L) {
    int32_t *c;
    int64_t bad;
    if (!n->check) return;
    bad = nn__count_outside((const int32_t *)idx->buf.host, idx->numel, L);
    c = (int32_t *)g->checks.host + n->check_slot;
    if (bad > 0) *c = (int32_t)((uint32_t)*c + (uint32_t)bad);
}

/* A checked op's count of index values outside [0, L) (a launch before its own). */
static nn_result nn__launch_index_check(nn_graph *g, int id, const nn__node *idx, int64_t L) {
    if (!g->nodes[id].check) return NN_OK;
    NN__KSTART(index_check, "gather", "index_check", idx->numel);
    k.idx = &idx->buf;
    k.n = (int)idx->numel;
    k.L = (int)L;
    k.bad = &g->checks;
    k.slot = g->nodes[id].check_slot;
    return nn__kargs_index_check(l, &k);
}

/* A checked op's launch of `kernel`, one work-item per element of node id, after its count
   of index values outside [0, L). */
static nn_result nn__gather_launch(nn_graph *g, int id, const nn__node *idx, int64_t L, const char *kernel, nn__launch **l) {
    nn_result r = nn__launch_index_check(g, id, idx, L);
    return r != NN_OK ? r : nn__launch_kernel(g, id, "gather", kernel, (size_t)g->nodes[id].numel, l);
}

/* index has x's number of dims, and is no larger than `other` outside dim (than x for
   gather; for scatter_add also no larger than src in any dim) */
static int nn__index_fits(nn_graph *g, const char *op, nn_tensor x, int dim, nn_tensor index, const nn_tensor *src) {
    const nn_shape *xs = &nn__n(g, x)->shape, *is = &nn__n(g, index)->shape, *ss = src ? &nn__n(g, *src)->shape : NULL;
    int d, ok = is->ndim == xs->ndim && (!ss || ss->ndim == xs->ndim);
    for (d = 0; ok && d < xs->ndim; d++) ok = (d == dim || is->dim[d] <= xs->dim[d]) && (!ss || is->dim[d] <= ss->dim[d]);
    if (!ok) {
        char sx[128], si[128], sr[128];
        nn__shape_str(xs, sx, sizeof sx);
        nn__shape_str(is, si, sizeof si);
        if (ss) nn__shape_str(ss, sr, sizeof sr);
        nn__op_fail(g, NN_ERR_SHAPE, "%s: index %s does not fit x %s%s%s along dim %d (same number of dims; index.size(d) <= x.size(d) for d != dim%s)",
                    op, si, sx, ss ? " and src " : "", ss ? sr : "", dim, ss ? ", <= src.size(d) for every d" : "");
    }
    return ok;
}

/* A scatter_add node: out [shape] = base (or zeros) + src scattered by index; its inputs
   [base,] index, src and the index's sort by column and value (src/ops/segment.c). */
static nn_tensor nn__scatter_op(nn_graph *g, const nn__attr *at, nn_shape shape, int base, int index, int src) {
    int in[4], k = 0, t;
    nn_tensor sorted = nn__segment_sort_op(g, "nn_scatter_add", index, at->gather.dim, shape.dim[at->gather.dim], NULL);
    if (sorted.id < 0) return sorted;
    if (base >= 0) in[k++] = base;
    in[k++] = index;
    in[k++] = src;
    in[k++] = sorted.id;
    t = nn__new_node(g, NN__OP_SCATTER_ADD, NN_F32, shape, in, k);
    if (t >= 0) {
        g->nodes[t].a = *at;
        g->nodes[t].a.gather.has_base = base >= 0;
    }
    return nn__tensor(t);
}

/* dims of a node's shape, and the shapes of a gather's or scatter's operands */
static void nn__dims_of(const nn_shape *s, int64_t *d) {
    int k;
    for (k = 0; k < s->ndim; k++) d[k] = s->dim[k];
}

/* a shape's dims into an int8 argument, ones after them */
static void nn__gather_dims8(const nn_shape *s, int *v) {
    int d;
    for (d = 0; d < 8; d++) v[d] = d < s->ndim ? (int)s->dim[d] : 1;
}

/* ==== gather_rows: y [B, ...] = data [N, ...] at rows idx [B] (an embedding lookup: a
   dataset or table on the device, float32 or int32, copied as bits; a row out of range is
   zeros). Its gradient: ddata [N, ...] sums dy's rows by index (SEGMENT_REDUCE over the
   sorted idx, src/ops/segment.c). ==== */

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

#define nn__plan_gather_rows nn__no_plan
static void nn__grad_gather_rows(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    const nn__node *d = &g->nodes[a];
    int64_t N = d->shape.dim[0], B = g->nodes[b].numel;
    if (ga)
        nn__acc_grad(g, a, nn__segment_reduce_op(g, NN__SEG_SUM, gy, nn__tensor(b), nn__segment_sort_op(g, "nn_gather_rows", b, -1, N, NULL), -1,
                                                 d->shape, 1, B, d->numel / N, N, -1));
    return;
}

static nn_result nn__cpu_gather_rows(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__node *d = &g->nodes[in[0]];
    int64_t D = d->numel / d->shape.dim[0];
    nn__gather_rows_pool(g->ctx->threads, y, d->buf.host, NN__I(in[1]), n->shape.dim[0], d->shape.dim[0], D);
    return NN_OK;
}

static nn_result nn__launch_gather_rows(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__node *d = &g->nodes[n->in[0]];
    int cpu = g->ctx->dev.cpu_tuned; /* a work-item per row */
    NN__KSTART(gather_rows, "gather", cpu ? "gather_rows_by_row" : "gather_rows_forward", cpu ? n->shape.dim[0] : n->numel);
    k.data = &d->buf;
    k.idx = &g->nodes[n->in[1]].buf;
    k.y = &n->buf;
    k.B = (int)n->shape.dim[0];
    k.N = (int)d->shape.dim[0];
    k.D = (int)(d->numel / d->shape.dim[0]);
    return nn__kargs_gather_rows(l, &k);
}

/* ==== index_select: y [outer, K, inner] = x [outer, L, inner] at index [K] along dim
   (torch.index_select; as bits, either dtype). Its gradient: dx [outer, L, inner] sums dy
   over the k with index[k] == j, in order of k (SEGMENT_REDUCE over the sorted index). ==== */

NN_API nn_tensor nn_index_select(nn_graph *g, nn_tensor x, int dim, nn_tensor index) {
    nn_tensor in[2], t;
    nn_shape s;
    in[0] = x;
    in[1] = index;
    if (!nn__check(g, "nn_index_select", 2, in) || (dim = nn__gather_dim(g, "nn_index_select", x, dim)) < 0 ||
        !nn__expect_index(g, "nn_index_select", index, x))
        return nn__tensor(-1);
    if (nn__n(g, index)->shape.ndim != 1) {
        char si[128], sx[128];
        nn__shape_str(&nn__n(g, index)->shape, si, sizeof si);
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_index_select: index %s must have one dim (x %s, dim %d)", si, sx, dim);
    }
    s = nn__n(g, x)->shape;
    s.dim[dim] = nn__n(g, index)->shape.dim[0];
    t = nn__op2(g, NN__OP_INDEX_SELECT, nn__n(g, x)->dtype, s, x.id, index.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.gather.dim = dim;
        g->nodes[t.id].check = "nn_index_select: index values outside [0, x.size(dim))";
    }
    return t;
}

#define nn__plan_index_select nn__no_plan

static void nn__grad_index_select(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int64_t o, L, inner;
    nn__gather_split(&g->nodes[a].shape, n.a.gather.dim, &o, &L, &inner);
    if (ga)
        nn__acc_grad(g, a, nn__segment_reduce_op(g, NN__SEG_SUM, gy, nn__tensor(b), nn__segment_sort_op(g, "nn_index_select", b, -1, L, NULL), -1,
                                                 g->nodes[a].shape, o, g->nodes[b].numel, inner, L, -1));
    return;
}

static nn_result nn__cpu_index_select(nn_graph *g, nn__node *n) {
    const nn__node *x = &g->nodes[n->in[0]], *ix = &g->nodes[n->in[1]];
    int64_t o, L, inner;
    nn__gather_split(&x->shape, n->a.gather.dim, &o, &L, &inner);
    nn__gather_count(g, n, ix, L);
    nn__index_select(n->buf.host, NN__F(n->in[0]), (const int32_t *)ix->buf.host, o, L, ix->numel, inner);
    return NN_OK;
}

static nn_result nn__launch_index_select(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__node *ix = &g->nodes[n->in[1]];
    int64_t o, L, inner;
    nn__gather_split(&g->nodes[n->in[0]].shape, n->a.gather.dim, &o, &L, &inner);
    NN__KWITH(index_select, nn__gather_launch(g, id, ix, L, "index_select_forward", &l));
    k.x = &g->nodes[n->in[0]].buf;
    k.idx = &ix->buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.L = (int)L;
    k.K = (int)ix->numel;
    k.inner = (int)inner;
    return nn__kargs_index_select(l, &k);
}

/* ==== gather: y [index's shape] = x at c with c[dim] = index[c] along dim (torch.gather; an
   index out of range reads zero). Its gradient is scatter_add without a base. ==== */

NN_API nn_tensor nn_gather(nn_graph *g, nn_tensor x, int dim, nn_tensor index) {
    nn_tensor in[2], t;
    in[0] = x;
    in[1] = index;
    if (!nn__check(g, "nn_gather", 2, in) || (dim = nn__gather_dim(g, "nn_gather", x, dim)) < 0 ||
        !nn__expect_index(g, "nn_gather", index, x) || !nn__expect_f32(g, "nn_gather", x, "x") ||
        !nn__index_fits(g, "nn_gather", x, dim, index, NULL))
        return nn__tensor(-1);
    t = nn__op2(g, NN__OP_GATHER, NN_F32, nn__n(g, index)->shape, x.id, index.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.gather.dim = dim;
        g->nodes[t.id].check = "nn_gather: index values outside [0, x.size(dim))";
    }
    return t;
}

#define nn__plan_gather nn__no_plan

/* d(gather)/dx: gy scattered back by the index (summed where indices repeat, in a fixed
   order: a gather over the index's dim, no atomics) */
static void nn__grad_gather(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__scatter_op(g, &n.a, g->nodes[a].shape, -1, b, gy.id));
    return;
}

static nn_result nn__cpu_gather(nn_graph *g, nn__node *n) {
    const nn__node *x = &g->nodes[n->in[0]], *ix = &g->nodes[n->in[1]];
    int64_t yd[NN_MAX_DIMS], id[NN_MAX_DIMS], xd[NN_MAX_DIMS];
    nn__dims_of(&n->shape, yd);
    nn__dims_of(&ix->shape, id);
    nn__dims_of(&x->shape, xd);
    nn__gather_count(g, n, ix, x->shape.dim[n->a.gather.dim]);
    nn__gather_fwd(n->buf.host, x->buf.host, (const int32_t *)ix->buf.host, n->shape.ndim, n->a.gather.dim, yd, id, xd);
    return NN_OK;
}

static nn_result nn__launch_gather(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__node *x = &g->nodes[n->in[0]], *ix = &g->nodes[n->in[1]];
    int yd[8], idd[8], xd[8];
    nn__gather_dims8(&n->shape, yd);
    nn__gather_dims8(&ix->shape, idd);
    nn__gather_dims8(&x->shape, xd);
    NN__KWITH(gather, nn__gather_launch(g, id, ix, x->shape.dim[n->a.gather.dim], "gather_dim", &l));
    k.x = &x->buf;
    k.idx = &ix->buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.ydims = yd;
    k.idims = idd;
    k.xdims = xd;
    k.dim = n->a.gather.dim;
    return nn__kargs_gather(l, &k);
}

/* ==== scatter_add: y [x's shape] = x plus src at c added at c[dim] = index[c] along dim
   (torch.scatter_add); without a base (has_base 0, gather's gradient) zeros plus src.
   Over the index sorted by (column, value) once (SEGMENT_SORT): each y element sums its
   sources in order of the index's dim, no atomics; cost linear in the index and y. Its
   gradient is a gather of dy. ==== */

NN_API nn_tensor nn_scatter_add(nn_graph *g, nn_tensor x, int dim, nn_tensor index, nn_tensor src) {
    nn_tensor in[3], t;
    nn__attr at;
    in[0] = x;
    in[1] = index;
    in[2] = src;
    if (!nn__check(g, "nn_scatter_add", 3, in) || (dim = nn__gather_dim(g, "nn_scatter_add", x, dim)) < 0 ||
        !nn__expect_index(g, "nn_scatter_add", index, x) || !nn__expect_f32(g, "nn_scatter_add", x, "x") ||
        !nn__expect_f32(g, "nn_scatter_add", src, "src") || !nn__index_fits(g, "nn_scatter_add", x, dim, index, &src))
        return nn__tensor(-1);
    memset(&at, 0, sizeof at);
    at.gather.dim = dim;
    t = nn__scatter_op(g, &at, nn__n(g, x)->shape, x.id, index.id, src.id);
    if (t.id >= 0) {
        g->nodes[t.id].check = "nn_scatter_add: index values outside [0, x.size(dim))";
    }
    return t;
}

#define nn__plan_scatter_add nn__no_plan

/* scatter_add: dx = dy; dsrc = dy gathered by the index (src's shape, zeros outside the
   index's) */
static void nn__grad_scatter_add(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int has_base = n.a.gather.has_base, index = n.in[has_base], src = n.in[has_base + 1];
    nn_tensor t;
    if (has_base && ga) nn__acc_grad(g, a, gy);
    if (!g->nodes[src].needs_grad) return;
    t = nn__op2(g, NN__OP_GATHER, NN_F32, g->nodes[src].shape, gy.id, index);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, src, t);
    return;
}

static nn_result nn__cpu_scatter_add(nn_graph *g, nn__node *n) {
    int hb = n->a.gather.has_base;
    const nn__node *ix = &g->nodes[n->in[hb]], *src = &g->nodes[n->in[hb + 1]];
    int64_t yd[NN_MAX_DIMS], id[NN_MAX_DIMS], sd[NN_MAX_DIMS];
    nn__dims_of(&n->shape, yd);
    nn__dims_of(&ix->shape, id);
    nn__dims_of(&src->shape, sd);
    nn__gather_count(g, n, ix, n->shape.dim[n->a.gather.dim]);
    nn__segment_scatter_add(n->buf.host, hb ? NN__F(n->in[0]) : NULL, src->buf.host, NN__I(n->in[hb + 2]), n->shape.ndim,
                            n->a.gather.dim, yd, id, sd, ix->numel);
    return NN_OK;
}

static nn_result nn__launch_scatter_add(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int hb = n->a.gather.has_base;
    const nn__node *ix = &g->nodes[n->in[hb]], *src = &g->nodes[n->in[hb + 1]];
    int yd[8], idd[8], sd[8];
    nn__gather_dims8(&n->shape, yd);
    nn__gather_dims8(&ix->shape, idd);
    nn__gather_dims8(&src->shape, sd);
    {
        nn_result r = nn__launch_index_check(g, id, ix, n->shape.dim[n->a.gather.dim]);
        if (r != NN_OK) return r;
    }
    {
        NN__KSTART(segment_scatter_add, "segment", "segment_scatter_add", n->numel);
        k.base = hb ? &g->nodes[n->in[0]].buf : &g->one; /* unread when has_base is 0 */
        k.src = &src->buf;
        k.sorted = &g->nodes[n->in[hb + 2]].buf;
        k.y = &n->buf;
        k.n = (int)n->numel;
        k.E = (int)ix->numel;
        k.ydims = yd;
        k.idims = idd;
        k.sdims = sd;
        k.dim = n->a.gather.dim;
        k.has_base = hb;
        return nn__kargs_segment_scatter_add(l, &k);
    }
}

/* ==== one_hot: y [..., C] float32 = 1 where c == labels [...] (torch.nn.functional.one_hot;
   a label outside [0, C) gives a row of zeros and is counted) ==== */

NN_API nn_tensor nn_one_hot(nn_graph *g, nn_tensor labels, int64_t num_classes) {
    nn_shape s;
    nn_tensor t;
    if (!nn__check(g, "nn_one_hot", 1, &labels)) return nn__tensor(-1);
    s = nn__n(g, labels)->shape;
    if (nn__n(g, labels)->dtype != NN_I32 || s.ndim >= NN_MAX_DIMS || num_classes < 1 || num_classes > INT32_MAX) {
        char sl[128];
        nn__shape_str(&s, sl, sizeof sl);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_one_hot: labels %s %s with %lld classes (needs int32 labels of at most %d dims, num_classes in 1..2^31-1)",
                           sl, nn__dtype_name(nn__n(g, labels)->dtype), (long long)num_classes, NN_MAX_DIMS - 1);
    }
    s.dim[s.ndim++] = num_classes;
    t = nn__op1(g, NN__OP_ONE_HOT, NN_F32, s, labels.id);
    if (t.id >= 0) g->nodes[t.id].check = "nn_one_hot: labels outside [0, num_classes)";
    return t;
}

#define nn__grad_one_hot nn__grad_none
#define nn__plan_one_hot nn__no_plan

static nn_result nn__cpu_one_hot(nn_graph *g, nn__node *n) {
    int64_t C = n->shape.dim[n->shape.ndim - 1];
    nn__gather_count(g, n, &g->nodes[n->in[0]], C);
    nn__one_hot(n->buf.host, NN__I(n->in[0]), n->numel / C, C);
    return NN_OK;
}

static nn_result nn__launch_one_hot(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int C = (int)n->shape.dim[n->shape.ndim - 1];
    NN__KWITH(one_hot, nn__gather_launch(g, id, &g->nodes[n->in[0]], C, "one_hot", &l));
    k.labels = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.C = C;
    return nn__kargs_one_hot(l, &k);
}
