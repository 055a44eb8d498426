/* The segment family, one block each: builder (shape rule), registry aliases, autograd rule,
   plan, CPU body (its loop in src/cpu/segment.c) and kernel launches (kernels/segment.cl).
   An index is sorted once (SEGMENT_SORT: a stable counting sort on the CPU, a stable radix
   sort on a device, the same output), then each segment is reduced in index order: cost
   linear in the index count plus the output, no float atomics, the same bits every run, on
   every thread count and on both backends. Index tensors are int32; a value outside the
   range is left out of every segment, and an op that PyTorch raises on counts it (n->check).
   The gather ops' gradients (src/ops/gather.c) and nn_scatter_add are built on it. */
#include "../base/internal.h"
#include "../base/registry.h"

/* ==== shared: the int8 dims of a shape (ones after it) ==== */

static void nn__seg_dims8(const nn_shape *s, int *v) {
    int d;
    for (d = 0; d < 8; d++) v[d] = d < s->ndim ? (int)s->dim[d] : 1;
}

/* ==== segment_sort: sorted [E + NK + 1] int32 = the positions of index [...] (E values)
   sorted stably by key, then each key's first place (kernels/segment.cl says the keys: the
   value, or for scatter_add the index's column * L + value; NK after the last). No
   gradient. check: a message, and values outside [0, L) are counted for it. ==== */

static nn_tensor nn__segment_sort_op(nn_graph *g, const char *op, int index, int dim, int64_t L, const char *check) {
    const nn__node *ix;
    int64_t E, NK;
    nn_tensor t;
    int i;
    if (index <= 0 || g->status != NN_OK) return nn__tensor(-1);
    ix = &g->nodes[index];
    E = ix->numel;
    NK = dim < 0 ? L : E / ix->shape.dim[dim] * L;
    if (NK + 1 + E > INT32_MAX) {
        char si[128];
        nn__shape_str(&ix->shape, si, sizeof si);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: index %s into %lld segments: more than 2^31 - 1 keys and positions to sort",
                           op, si, (long long)L);
    }
    for (i = g->n_nodes - 1; i > 0 && !check; i--) { /* one sort per index and range */
        const nn__node *m = &g->nodes[i];
        if (m->op == NN__OP_SEGMENT_SORT && m->in[0] == index && m->a.seg.dim == dim && m->a.seg.L == L && !m->check)
            return nn__tensor(i);
    }
    t = nn__op1(g, NN__OP_SEGMENT_SORT, NN_I32, nn_shape1(E + NK + 1), index);
    if (t.id >= 0) {
        nn__segment_attr *a = &g->nodes[t.id].a.seg;
        memset(a, 0, sizeof *a);
        a->dim = dim;
        a->L = L;
        a->NK = NK;
        g->nodes[t.id].check = check;
    }
    return t;
}

#define nn__grad_segment_sort nn__grad_none

/* radix sort's block of keys a work-item counts and places: a few blocks a compute unit on
   a CPU, up to 4096 blocks of 64 or more on a GPU (the counts, 256 a block, are scanned by
   one work-group) */
static int64_t nn__segment_blk(const nn_graph *g, int64_t E) {
    int64_t cap = g->ctx->dev.cpu_tuned ? 4 * (int64_t)(g->ctx->dev.units > 2 ? g->ctx->dev.units : 2) : 4096;
    int64_t blk = (E + cap - 1) / cap, lo = g->ctx->dev.cpu_tuned ? 256 : 64;
    return blk > lo ? blk : lo;
}

/* scratch: the CPU's counts (NK + 2), a device's keys and positions twice and the counts of
   its blocks (4 E + 256 blocks) */
static void nn__plan_segment_sort(nn_graph *g, nn__node *n) {
    int64_t E = g->nodes[n->in[0]].numel, blk = nn__segment_blk(g, E), nb = (E + blk - 1) / blk;
    int64_t dev = 4 * E + 256 * nb, cpu = n->a.seg.NK + 2;
    n->scratch = g->ctx->backend->host_memory ? cpu : dev;
}

static nn_result nn__cpu_segment_sort(nn_graph *g, nn__node *n) {
    const nn__node *ix = &g->nodes[n->in[0]];
    int64_t id[NN_MAX_DIMS];
    int d;
    int32_t *c;
    for (d = 0; d < ix->shape.ndim; d++) id[d] = ix->shape.dim[d];
    if (n->check) {
        int64_t bad = nn__count_outside((const int32_t *)ix->buf.host, ix->numel, n->a.seg.L);
        c = (int32_t *)g->checks.host + n->check_slot;
        if (bad > 0) *c = (int32_t)((uint32_t)*c + (uint32_t)bad);
    }
    nn__segment_sort((int32_t *)n->buf.host, (int32_t *)n->scratch_buf.host, (const int32_t *)ix->buf.host, ix->numel,
                     ix->shape.ndim, n->a.seg.dim, id, n->a.seg.L, n->a.seg.NK);
    return NN_OK;
}

/* keys, then 8 bits a pass (histogram, scan, place) from the lowest, then the output */
static nn_result nn__launch_segment_sort(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__node *ix = &g->nodes[n->in[0]];
    int E = (int)ix->numel, blk = (int)nn__segment_blk(g, E), nb = (E + blk - 1) / blk, NK = (int)n->a.seg.NK;
    int K[2], P[2], hist = 4 * E, passes = 0, pass, idd[8];
    size_t wg = nn__reduce_wg(g);
    K[0] = 0, K[1] = E, P[0] = 2 * E, P[1] = 3 * E;
    while (passes < 4 && (passes == 0 || (NK >> (8 * passes)) > 0)) passes++;
    nn__seg_dims8(&ix->shape, idd);
    {
        NN__KSTART(segment_keys, "segment", "segment_keys", E);
        k.idx = &ix->buf;
        k.s = &n->scratch_buf;
        k.n = E;
        k.L = (int)n->a.seg.L;
        k.NK = NK;
        k.dim = n->a.seg.dim;
        k.idims = idd;
        k.check = n->check != NULL;
        k.bad = n->check ? &g->checks : &n->scratch_buf; /* unwritten without a check */
        k.slot = n->check ? n->check_slot : 0;
        if ((r = nn__kargs_segment_keys(l, &k)) != NN_OK) return r;
    }
    for (pass = 0; pass < passes; pass++) {
        int a = pass & 1, b = a ^ 1;
        {
            NN__KSTART(segment_hist, "segment", "segment_hist", nb);
            k.s = &n->scratch_buf;
            k.kin = K[a];
            k.hist = hist;
            k.n = E;
            k.nb = nb;
            k.blk = blk;
            k.shift = 8 * pass;
            if ((r = nn__kargs_segment_hist(l, &k)) != NN_OK) return r;
        }
        {
            NN__KSTART(segment_scan, "segment", "segment_scan", wg);
            l->lws[0] = wg;
            l->use_lws = 1;
            k.s = &n->scratch_buf;
            k.hist = hist;
            k.m = 256 * nb;
            k.part = wg * sizeof(int32_t);
            if ((r = nn__kargs_segment_scan(l, &k)) != NN_OK) return r;
        }
        {
            NN__KSTART(segment_place, "segment", "segment_place", nb);
            k.s = &n->scratch_buf;
            k.kin = K[a];
            k.kout = K[b];
            k.pin = pass == 0 ? -1 : P[a];
            k.pout = P[b];
            k.hist = hist;
            k.n = E;
            k.nb = nb;
            k.blk = blk;
            k.shift = 8 * pass;
            if ((r = nn__kargs_segment_place(l, &k)) != NN_OK) return r;
        }
    }
    {
        NN__KSTART(segment_finish, "segment", "segment_finish", E > NK + 1 ? E : NK + 1);
        k.s = &n->scratch_buf;
        k.out = &n->buf;
        k.keys = K[passes & 1];
        k.perm = P[passes & 1];
        k.n = E;
        k.NK = NK;
        return nn__kargs_segment_finish(l, &k);
    }
}

/* ==== segment_reduce: y [outer, S, inner] = src [outer, E, inner] reduced over the k with
   index[k] == s, in order of k (sum, from base when there is one; mean; max), the skipped
   segment 0. Its inputs: src, index, sorted[, base]. Gradients: base's is dy; src's a
   SEGMENT_GATHER of dy (sum, mean) or SEGMENT_MAX_GRAD (max). ==== */

static nn_tensor nn__segment_reduce_op(nn_graph *g, int reduce, nn_tensor src, nn_tensor index, nn_tensor sorted, int base,
                                       nn_shape shape, int64_t outer, int64_t E, int64_t inner, int64_t S, int64_t skip) {
    int in[4], t;
    if (src.id < 0 || index.id < 0 || sorted.id < 0 || g->status != NN_OK) return nn__tensor(-1);
    in[0] = src.id;
    in[1] = index.id;
    in[2] = sorted.id;
    in[3] = base;
    t = nn__new_node(g, NN__OP_SEGMENT_REDUCE, NN_F32, shape, in, base > 0 ? 4 : 3);
    if (t >= 0) {
        nn__segment_attr *a = &g->nodes[t].a.seg;
        memset(a, 0, sizeof *a);
        a->reduce = reduce;
        a->has_base = base > 0;
        a->outer = outer;
        a->E = E;
        a->inner = inner;
        a->S = S;
        a->skip = skip;
    }
    return nn__tensor(t);
}

/* src [outer, E, inner] along dim of src as seen by index [E] */
static void nn__seg_split(const nn_shape *s, int dim, int64_t *outer, int64_t *inner) {
    int d;
    *outer = *inner = 1;
    for (d = 0; d < dim; d++) *outer *= s->dim[d];
    for (d = dim + 1; d < s->ndim; d++) *inner *= s->dim[d];
}

static const char *const nn__seg_names[3] = {"nn_segment_sum", "nn_segment_mean", "nn_segment_max"};
static const char *const nn__seg_checks[3] = {"nn_segment_sum: index values outside [0, num_segments)",
                                              "nn_segment_mean: index values outside [0, num_segments)",
                                              "nn_segment_max: index values outside [0, num_segments)"};

static nn_tensor nn__segment_public(nn_graph *g, int reduce, nn_tensor src, nn_tensor index, int64_t num_segments) {
    const char *op = nn__seg_names[reduce];
    nn_tensor in[2];
    const nn__node *s, *ix;
    nn_shape out;
    int64_t inner;
    in[0] = src;
    in[1] = index;
    if (!nn__check(g, op, 2, in) || !nn__expect_f32(g, op, src, "src")) return nn__tensor(-1);
    s = nn__n(g, src);
    ix = nn__n(g, index);
    if (ix->dtype != NN_I32 || ix->shape.ndim != 1 || ix->shape.dim[0] != s->shape.dim[0] || num_segments < 1 ||
        num_segments > INT32_MAX) {
        char ss[128], si[128];
        nn__shape_str(&s->shape, ss, sizeof ss);
        nn__shape_str(&ix->shape, si, sizeof si);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: src %s, index %s %s, num_segments %lld (needs an int32 index [E] for src [E, ...] and num_segments in 1..2^31-1)",
                           op, ss, si, nn__dtype_name(ix->dtype), (long long)num_segments);
    }
    out = s->shape;
    out.dim[0] = num_segments;
    inner = s->numel / s->shape.dim[0];
    return nn__segment_reduce_op(g, reduce, src, index, nn__segment_sort_op(g, op, index.id, -1, num_segments, nn__seg_checks[reduce]),
                                 -1, out, 1, s->shape.dim[0], inner, num_segments, -1);
}

NN_API nn_tensor nn_segment_sum(nn_graph *g, nn_tensor src, nn_tensor index, int64_t num_segments) {
    return nn__segment_public(g, NN__SEG_SUM, src, index, num_segments);
}
NN_API nn_tensor nn_segment_mean(nn_graph *g, nn_tensor src, nn_tensor index, int64_t num_segments) {
    return nn__segment_public(g, NN__SEG_MEAN, src, index, num_segments);
}
NN_API nn_tensor nn_segment_max(nn_graph *g, nn_tensor src, nn_tensor index, int64_t num_segments) {
    return nn__segment_public(g, NN__SEG_MAX, src, index, num_segments);
}

/* torch.index_add: x [outer, L, inner] + source [outer, K, inner] summed by index [K] */
NN_API nn_tensor nn_index_add(nn_graph *g, nn_tensor x, int dim, nn_tensor index, nn_tensor source) {
    static const char *op = "nn_index_add";
    nn_tensor in[3];
    const nn__node *xs, *ix, *so;
    int nd, d, ok;
    int64_t outer, inner;
    in[0] = x;
    in[1] = index;
    in[2] = source;
    if (!nn__check(g, op, 3, in) || !nn__expect_f32(g, op, x, "x") || !nn__expect_f32(g, op, source, "source")) return nn__tensor(-1);
    xs = nn__n(g, x);
    ix = nn__n(g, index);
    so = nn__n(g, source);
    nd = xs->shape.ndim;
    ok = dim >= -nd && dim < nd;
    if (ok) dim = dim < 0 ? dim + nd : dim;
    ok = ok && ix->dtype == NN_I32 && ix->shape.ndim == 1 && so->shape.ndim == nd && so->shape.dim[dim] == ix->shape.dim[0];
    for (d = 0; ok && d < nd; d++) ok = d == dim || so->shape.dim[d] == xs->shape.dim[d];
    if (!ok) {
        char sx[128], si[128], ss[128];
        nn__shape_str(&xs->shape, sx, sizeof sx);
        nn__shape_str(&ix->shape, si, sizeof si);
        nn__shape_str(&so->shape, ss, sizeof ss);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s, dim %d, index %s %s, source %s (needs an int32 index [K], source x's shape with K at dim)",
                           op, sx, dim, si, nn__dtype_name(ix->dtype), ss);
    }
    nn__seg_split(&xs->shape, dim, &outer, &inner);
    return nn__segment_reduce_op(g, NN__SEG_SUM, source, index,
                                 nn__segment_sort_op(g, op, index.id, -1, xs->shape.dim[dim], "nn_index_add: index values outside [0, x.size(dim))"),
                                 x.id, xs->shape, outer, ix->shape.dim[0], inner, xs->shape.dim[dim], -1);
}

#define nn__plan_segment_reduce nn__no_plan

/* dsrc = dy gathered by the index (over the count: mean), or to the arg-max (max) */
static nn_tensor nn__segment_back(nn_graph *g, int op, const nn__node *n, nn_tensor dy, int src_shape_of) {
    int in[3], t;
    in[0] = op == NN__OP_SEGMENT_MAX_GRAD ? n->in[0] : dy.id;
    in[1] = op == NN__OP_SEGMENT_MAX_GRAD ? dy.id : n->in[1];
    in[2] = n->in[2];
    if (dy.id < 0) return dy;
    t = nn__new_node(g, op, NN_F32, g->nodes[src_shape_of].shape, in, 3);
    if (t >= 0) g->nodes[t].a = n->a;
    return nn__tensor(t);
}

static void nn__grad_segment_reduce(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (n.a.seg.has_base && g->nodes[n.in[3]].needs_grad) nn__acc_grad(g, n.in[3], gy);
    if (ga) nn__acc_grad(g, a, nn__segment_back(g, n.a.seg.reduce == NN__SEG_MAX ? NN__OP_SEGMENT_MAX_GRAD : NN__OP_SEGMENT_GATHER, &n, gy, a));
}

static nn_result nn__cpu_segment_reduce(nn_graph *g, nn__node *n) {
    const nn__segment_attr *a = &n->a.seg;
    nn__segment_reduce(g->ctx->threads, n->buf.host, NN__F(n->in[0]), a->has_base ? NN__F(n->in[3]) : NULL, NN__I(n->in[2]),
                       a->outer, a->E, a->S, a->inner, a->reduce, a->skip);
    return NN_OK;
}

static nn_result nn__launch_segment_reduce(nn_graph *g, int id) {
    NN__KLAUNCH(segment_reduce, "segment", "segment_reduce", n->numel);
    k.src = &g->nodes[n->in[0]].buf;
    k.base = n->a.seg.has_base ? &g->nodes[n->in[3]].buf : &g->one; /* unread without a base */
    k.sorted = &g->nodes[n->in[2]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.E = (int)n->a.seg.E;
    k.S = (int)n->a.seg.S;
    k.inner = (int)n->a.seg.inner;
    k.reduce = n->a.seg.reduce;
    k.has_base = n->a.seg.has_base;
    k.skip = (int)n->a.seg.skip;
    return nn__kargs_segment_reduce(l, &k);
}

/* ==== segment_gather: dsrc [outer, E, inner] = dy [outer, S, inner] at index (divided by
   the segment's count for mean; 0 outside [0, S) and at the skipped segment); inputs dy,
   index, sorted. Its gradient is SEGMENT_REDUCE (sum; mean for mean) of the incoming one.
   ==== */

#define nn__plan_segment_gather nn__no_plan

static void nn__grad_segment_gather(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (ga)
        nn__acc_grad(g, a, nn__segment_reduce_op(g, n.a.seg.reduce, gy, nn__tensor(n.in[1]), nn__tensor(n.in[2]), -1,
                                                 g->nodes[a].shape, n.a.seg.outer, n.a.seg.E, n.a.seg.inner, n.a.seg.S, n.a.seg.skip));
}

static nn_result nn__cpu_segment_gather(nn_graph *g, nn__node *n) {
    const nn__segment_attr *a = &n->a.seg;
    nn__segment_gather(n->buf.host, NN__F(n->in[0]), NN__I(n->in[1]), NN__I(n->in[2]), a->outer, a->E, a->S, a->inner,
                       a->reduce == NN__SEG_MEAN, a->skip);
    return NN_OK;
}

static nn_result nn__launch_segment_gather(nn_graph *g, int id) {
    NN__KLAUNCH(segment_gather, "segment", "segment_gather", n->numel);
    k.dy = &g->nodes[n->in[0]].buf;
    k.idx = &g->nodes[n->in[1]].buf;
    k.sorted = &g->nodes[n->in[2]].buf;
    k.dsrc = &n->buf;
    k.n = (int)n->numel;
    k.E = (int)n->a.seg.E;
    k.S = (int)n->a.seg.S;
    k.inner = (int)n->a.seg.inner;
    k.mean = n->a.seg.reduce == NN__SEG_MEAN;
    k.skip = (int)n->a.seg.skip;
    return nn__kargs_segment_gather(l, &k);
}

/* ==== segment_max_grad: dsrc [outer, E, inner] = dy at the first row of each segment (index
   order) that holds its maximum, 0 elsewhere; inputs src, dy, sorted. ==== */

#define nn__plan_segment_max_grad nn__no_plan
#define nn__grad_segment_max_grad nn__grad_none

static nn_result nn__cpu_segment_max_grad(nn_graph *g, nn__node *n) {
    const nn__segment_attr *a = &n->a.seg;
    nn__segment_max_grad(n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]), NN__I(n->in[2]), a->outer, a->E, a->S, a->inner);
    return NN_OK;
}

static nn_result nn__launch_segment_max_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    {
        NN__KSTART(segment_zero, "segment", "segment_zero", n->numel);
        k.y = &n->buf;
        k.n = (int)n->numel;
        if ((r = nn__kargs_segment_zero(l, &k)) != NN_OK) return r;
    }
    {
        NN__KSTART(segment_max_grad, "segment", "segment_max_grad", n->a.seg.outer * n->a.seg.S * n->a.seg.inner);
        k.src = &g->nodes[n->in[0]].buf;
        k.dy = &g->nodes[n->in[1]].buf;
        k.sorted = &g->nodes[n->in[2]].buf;
        k.dsrc = &n->buf;
        k.n = (int)(n->a.seg.outer * n->a.seg.S * n->a.seg.inner);
        k.E = (int)n->a.seg.E;
        k.S = (int)n->a.seg.S;
        k.inner = (int)n->a.seg.inner;
        return nn__kargs_segment_max_grad(l, &k);
    }
}

/* ==== embedding: y [*, D] = weight [N, D] at indices [*] (F.embedding; an index outside [0, N)
   gives zeros and is counted: PyTorch raises). y has the weight's storage type (a 16-bit
   table's rows are copied as they are). dweight sums dy's rows by index (SEGMENT_REDUCE over
   the sorted indices, in float32: a 16-bit dy is read through its float32 copy), the padding
   row none; nn__acc_grad rounds it to a 16-bit weight's type. ==== */

NN_API nn_tensor nn_embedding_lookup(nn_graph *g, nn_tensor weight, nn_tensor indices, const nn_embedding_desc *desc) {
    static const char *op = "nn_embedding_lookup";
    nn_tensor in[2], t;
    const nn__node *w, *ix;
    nn_shape s;
    int64_t pad = -1, N;
    in[0] = weight;
    in[1] = indices;
    if (!nn__check(g, op, 2, in)) return nn__tensor(-1);
    w = nn__n(g, weight);
    if (w->dtype != NN_F32 && !nn__dtype_half(w->dtype)) /* a 16-bit table gives rows of its type (F.embedding) */
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: weight must be float32, bfloat16 or float16, not %s", op, nn__dtype_name(w->dtype));
    ix = nn__n(g, indices);
    N = w->shape.dim[0];
    if (desc && desc->padding_idx) pad = desc->padding_idx == NN_ZERO ? 0 : desc->padding_idx < 0 ? desc->padding_idx + N : desc->padding_idx;
    if (w->shape.ndim != 2 || ix->dtype != NN_I32 || ix->shape.ndim >= NN_MAX_DIMS || pad < -1 || pad >= N) {
        char sw[128], si[128];
        nn__shape_str(&w->shape, sw, sizeof sw);
        nn__shape_str(&ix->shape, si, sizeof si);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: weight %s, indices %s %s, padding_idx %d (needs weight [num, dim], int32 indices of at most %d dims, padding_idx in [-num, num))",
                           op, sw, si, nn__dtype_name(ix->dtype), desc ? desc->padding_idx : 0, NN_MAX_DIMS - 1);
    }
    s = ix->shape;
    s.dim[s.ndim++] = w->shape.dim[1];
    t = nn__op2(g, NN__OP_EMBEDDING, w->dtype, s, weight.id, indices.id);
    if (t.id >= 0) {
        memset(&g->nodes[t.id].a.seg, 0, sizeof g->nodes[t.id].a.seg);
        g->nodes[t.id].a.seg.skip = pad;
        g->nodes[t.id].check = "nn_embedding_lookup: indices outside [0, num_embeddings)";
    }
    return t;
}

NN_API nn_tensor nn_embedding(nn_graph *g, nn_tensor indices, int64_t num_embeddings, int64_t embedding_dim,
                              const nn_embedding_desc *desc, const char *name) {
    char pn[256];
    nn_tensor w;
    nn_init init;
    int fresh, n0;
    if (!g) return nn__tensor(-1);
    if (!name || num_embeddings < 1 || embedding_dim < 1 || num_embeddings > INT32_MAX || embedding_dim > INT32_MAX) {
        if (g->status != NN_OK) return nn__tensor(-1);
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_embedding \"%s\": num_embeddings %lld, embedding_dim %lld (needs a name and sizes in 1..2^31-1)",
                           name ? name : "(null)", (long long)num_embeddings, (long long)embedding_dim);
    }
    snprintf(pn, sizeof pn, "%s.weight", name);
    memset(&init, 0, sizeof init);
    init.kind = NN_INIT_NORMAL;
    init.b = 1.0f;
    n0 = g->params ? g->params->n : 0;
    w = nn_param(g, pn, nn_shape2(num_embeddings, embedding_dim), init);
    if (w.id < 0) return w;
    fresh = g->params->n > n0;
    if (fresh && desc && desc->padding_idx) { /* PyTorch zeroes the padding row at init */
        nn__param *p = &g->params->p[g->nodes[w.id].param];
        int64_t pad = desc->padding_idx == NN_ZERO ? 0 : desc->padding_idx < 0 ? desc->padding_idx + num_embeddings : desc->padding_idx;
        if (p->init && pad >= 0 && pad < num_embeddings) memset(p->init + pad * embedding_dim, 0, (size_t)embedding_dim * sizeof(float));
    }
    return nn_embedding_lookup(g, w, indices, desc);
}

#define nn__plan_embedding nn__no_plan

static void nn__grad_embedding(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_shape ws = g->nodes[a].shape; /* copies: the nodes may move as nodes are added */
    int64_t N = ws.dim[0], D = ws.dim[1], E = g->nodes[b].numel;
    if (!ga) return;
    if (nn__dtype_half(g->nodes[gy.id].dtype)) gy = nn_to_dtype(g, gy, NN_F32); /* the sums in float32 */
    nn__acc_grad(g, a, nn__segment_reduce_op(g, NN__SEG_SUM, gy, nn__tensor(b), nn__segment_sort_op(g, "nn_embedding_lookup", b, -1, N, NULL), -1,
                                             ws, 1, E, D, N, n.a.seg.skip));
}

static nn_result nn__cpu_embedding(nn_graph *g, nn__node *n) {
    const nn__node *w = &g->nodes[n->in[0]], *ix = &g->nodes[n->in[1]];
    int64_t N = w->shape.dim[0], D = w->shape.dim[1], bad = nn__count_outside(NN__I(n->in[1]), ix->numel, N);
    int32_t *c = (int32_t *)g->checks.host + n->check_slot;
    if (bad > 0) *c = (int32_t)((uint32_t)*c + (uint32_t)bad);
    nn__gather_rows_bytes(n->buf.host, w->buf.host, NN__I(n->in[1]), ix->numel, N, (size_t)D * nn__dtype_size(n->dtype));
    return NN_OK;
}

static nn_result nn__launch_embedding(nn_graph *g, int id) {
    NN__KLAUNCH(embedding, "segment", "embedding", n->numel);
    l->store = n->dtype; /* 16-bit: the program built with NN_STORE_BF16 / _F16 */
    k.w = &g->nodes[n->in[0]].buf;
    k.idx = &g->nodes[n->in[1]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.N = (int)g->nodes[n->in[0]].shape.dim[0];
    k.D = (int)g->nodes[n->in[0]].shape.dim[1];
    k.bad = &g->checks;
    k.slot = n->check_slot;
    return nn__kargs_embedding(l, &k);
}

/* ==== moe_slots: the capacity-based dispatch of nn_moe_layer (GShard's and Switch
   Transformer's, with a fixed order): from kept [B, E] (nonzero: row b goes to expert e),
   idx [E * C] int32, slot e * C + c the c-th row (ascending) routed to e; rows past the
   capacity C are dropped for that expert. An empty slot holds 0 (which 0: the rows'
   gather index) or B (which 1: the combine's segment, one past the rows). No gradient. ==== */

static nn_tensor nn__moe_slots_op(nn_graph *g, nn_tensor kept, int64_t C, int which) {
    nn_tensor t;
    const nn__node *k;
    if (g->status != NN_OK || kept.id <= 0) return nn__tensor(-1);
    k = nn__n(g, kept);
    if (k->shape.dim[0] * k->shape.dim[1] > INT32_MAX || C * k->shape.dim[1] > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_moe_layer: %lld rows, %lld experts and capacity %lld are over 2^31 slots",
                           (long long)k->shape.dim[0], (long long)k->shape.dim[1], (long long)C);
    t = nn__op1(g, NN__OP_MOE_SLOTS, NN_I32, nn_shape1(k->shape.dim[1] * C), kept.id);
    if (t.id >= 0) {
        memset(&g->nodes[t.id].a.seg, 0, sizeof g->nodes[t.id].a.seg);
        g->nodes[t.id].a.seg.L = C;
        g->nodes[t.id].a.seg.dim = which;
    }
    return t;
}

#define nn__grad_moe_slots nn__grad_none
#define nn__plan_moe_slots nn__no_plan

static nn_result nn__cpu_moe_slots(nn_graph *g, nn__node *n) {
    const nn__node *k = &g->nodes[n->in[0]];
    int64_t B = k->shape.dim[0];
    nn__moe_slots((int32_t *)n->buf.host, k->buf.host, B, k->shape.dim[1], n->a.seg.L, n->a.seg.dim ? (int32_t)B : 0);
    return NN_OK;
}

static nn_result nn__launch_moe_slots(nn_graph *g, int id) {
    const nn__node *kn = &g->nodes[g->nodes[id].in[0]];
    NN__KLAUNCH(moe_slots, "segment", "moe_slots", kn->shape.dim[1]);
    k.kept = &kn->buf;
    k.idx = &n->buf;
    k.B = (int)kn->shape.dim[0];
    k.E = (int)kn->shape.dim[1];
    k.C = (int)n->a.seg.L;
    k.fill = n->a.seg.dim ? k.B : 0;
    return nn__kargs_moe_slots(l, &k);
}
