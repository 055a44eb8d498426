/* Compiling and running a graph: autograd and the optimizer's ops added, the schedule,
   the memory plan (an arena placed by liveness), buffers, the backend's preparation; then
   runs of the schedule or its forward part. */
#include "../base/internal.h"
#include "../base/registry.h"

typedef struct nn__item { int id, scratch, first, last; size_t bytes, offset; } nn__item;

/* The free space of the arena while items are placed: gaps sorted by offset, coalesced;
   the last one is unbounded. */
typedef struct nn__gaps { size_t *off, *len; int n, cap; } nn__gaps;

static int nn__gaps_insert(nn__gaps *f, int at, size_t off, size_t len) {
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 64;
        size_t *o = (size_t *)NN_REALLOC(f->off, (size_t)cap * sizeof *o), *l;
        if (!o) return 0;
        f->off = o;
        l = (size_t *)NN_REALLOC(f->len, (size_t)cap * sizeof *l);
        if (!l) return 0;
        f->len = l;
        f->cap = cap;
    }
    memmove(f->off + at + 1, f->off + at, (size_t)(f->n - at) * sizeof *f->off);
    memmove(f->len + at + 1, f->len + at, (size_t)(f->n - at) * sizeof *f->len);
    f->off[at] = off;
    f->len[at] = len;
    f->n++;
    return 1;
}

static void nn__gaps_remove(nn__gaps *f, int at) {
    memmove(f->off + at, f->off + at + 1, (size_t)(f->n - at - 1) * sizeof *f->off);
    memmove(f->len + at, f->len + at + 1, (size_t)(f->n - at - 1) * sizeof *f->len);
    f->n--;
}

/* Returns [off, off + len) to the free space, merged with its neighbours. */
static int nn__gaps_free(nn__gaps *f, size_t off, size_t len) {
    int lo = 0, hi = f->n; /* the first gap after off */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (f->off[mid] < off) lo = mid + 1;
        else hi = mid;
    }
    if (lo > 0 && f->off[lo - 1] + f->len[lo - 1] == off) { /* extends the gap before */
        f->len[lo - 1] += len;
        if (lo < f->n && off + len == f->off[lo]) {
            f->len[lo - 1] = f->len[lo] == (size_t)-1 ? (size_t)-1 : f->len[lo - 1] + f->len[lo];
            nn__gaps_remove(f, lo);
        }
        return 1;
    }
    if (lo < f->n && off + len == f->off[lo]) { /* extends the gap after */
        f->off[lo] = off;
        if (f->len[lo] != (size_t)-1) f->len[lo] += len;
        return 1;
    }
    return nn__gaps_insert(f, lo, off, len);
}

/* Items alive, as a min-heap of their last use. */
static void nn__heap_push(int *h, int *n, const nn__item *it, int x) {
    int i = (*n)++;
    while (i > 0 && it[h[(i - 1) / 2]].last > it[x].last) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static int nn__heap_pop(int *h, int *n, const nn__item *it) {
    int top = h[0], x = h[--(*n)], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && it[h[c + 1]].last < it[h[c]].last) c++;
        if (it[h[c]].last >= it[x].last) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = x;
    return top;
}

/* Places arena items, in order of first use, each at the lowest aligned offset free for
   its whole lifetime (first fit). Items whose last use is before the next item's first
   give their space back; the free space is a short list of gaps, so a graph of n nodes
   plans in about n log n unless its free space is very fragmented. An item takes the
   device's guard bytes after its end too (none unless NN_CL_GUARDS). chunk > 0: the arena
   will be buffers of chunk bytes (the device's largest allocation), so no item may cross
   a multiple of chunk: one that would starts at the next multiple instead, if its gap
   still holds it. */
static nn_result nn__plan_memory(nn_graph *g, size_t align, size_t chunk) {
    nn__item *it = (nn__item *)nn__calloc((size_t)g->n_sched * 2 + 1, sizeof *it);
    int *heap = (int *)nn__calloc((size_t)g->n_sched * 2 + 1, sizeof *heap);
    nn__gaps free_space;
    const nn__item *too_big = NULL; /* an item larger than a chunk: refused */
    int n = 0, n_heap = 0, i, ok;
    size_t top = 0, guard = g->ctx->dev.guard; /* each item's guard bytes after its end are its own */
    memset(&free_space, 0, sizeof free_space);
    ok = it && heap && nn__gaps_insert(&free_space, 0, 0, (size_t)-1);
    for (i = 0; ok && i < g->n_sched; i++) { /* in schedule order, so sorted by first use */
        nn__node *nd = &g->nodes[g->sched[i]];
        if (nd->storage == NN__ST_ARENA && nd->numel > 0) {
            it[n].id = g->sched[i];
            it[n].first = nn__live_from(nd);
            it[n].last = nd->last;
            it[n++].bytes = (nn__dtype_bytes(nd->dtype, nd->numel) + guard + align - 1) / align * align;
        }
        if (nd->scratch > 0) {
            it[n].id = g->sched[i];
            it[n].scratch = 1;
            it[n].first = it[n].last = nd->first;
            it[n++].bytes = (nn__dtype_bytes(NN_F32, nd->scratch) + guard + align - 1) / align * align;
        }
    }
    /* a node a fold writes before its own position (nn__live_from) moves up to there; the
       others keep their order (insertion: such nodes are few) */
    for (i = 1; ok && i < n; i++) {
        nn__item t = it[i];
        int j = i;
        while (j > 0 && it[j - 1].first > t.first) {
            it[j] = it[j - 1];
            j--;
        }
        it[j] = t;
    }
    for (i = 0; ok && i < n; i++) {
        nn__item *a = &it[i];
        int k;
        while (ok && n_heap > 0 && it[heap[0]].last < a->first) {
            nn__item *b = &it[nn__heap_pop(heap, &n_heap, it)];
            ok = nn__gaps_free(&free_space, b->offset, b->bytes);
        }
        if (!ok) break;
        if (chunk && a->bytes > chunk) {
            too_big = a;
            break;
        }
        for (k = 0;; k++) { /* the first gap that holds it (the last gap is unbounded) */
            size_t o = free_space.off[k];
            if (chunk && o / chunk != (o + a->bytes - 1) / chunk) o = (o / chunk + 1) * chunk;
            if (free_space.len[k] == (size_t)-1 || o + a->bytes <= free_space.off[k] + free_space.len[k]) {
                a->offset = o;
                break;
            }
        }
        if (a->offset > free_space.off[k]) { /* moved to a chunk's start: the gap keeps what lies before it */
            size_t len = free_space.len[k], end = a->offset + a->bytes;
            free_space.len[k] = a->offset - free_space.off[k];
            if (len == (size_t)-1) ok = nn__gaps_insert(&free_space, k + 1, end, (size_t)-1);
            else if (free_space.off[k] + len > end) ok = nn__gaps_insert(&free_space, k + 1, end, free_space.off[k] + len - end);
        } else if (free_space.len[k] == (size_t)-1 || free_space.len[k] > a->bytes) {
            free_space.off[k] += a->bytes;
            if (free_space.len[k] != (size_t)-1) free_space.len[k] -= a->bytes;
        } else {
            nn__gaps_remove(&free_space, k);
        }
        nn__heap_push(heap, &n_heap, it, i);
        if (a->scratch) g->nodes[a->id].scratch_offset = a->offset;
        else g->nodes[a->id].offset = a->offset;
        if (a->offset + a->bytes > top) top = a->offset + a->bytes;
    }
    g->arena_bytes = top;
    if (too_big) {
        char s[128];
        const nn__node *nd = &g->nodes[too_big->id];
        nn__shape_str(&nd->shape, s, sizeof s);
        nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY,
                 "nn_graph_compile: the %s of %s %s (%llu bytes) exceeds the device's largest allocation (%llu bytes)",
                 too_big->scratch ? "workspace" : "output", nn__op(nd->op)->name, s, (unsigned long long)too_big->bytes,
                 (unsigned long long)chunk);
    }
    NN_FREE(it);
    NN_FREE(heap);
    NN_FREE(free_space.off);
    NN_FREE(free_space.len);
    if (!ok) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
    return too_big ? NN_ERR_OUT_OF_MEMORY : NN_OK;
}

/* A view of bytes at offset of the arena: of its one buffer, or of the part holding it (an
   item never crosses a part's end: nn__plan_memory). */
static nn_result nn__arena_view(nn_graph *g, size_t offset, size_t bytes, nn__buf *out, const char *what) {
    if (!g->arena_chunk) return g->ctx->backend->view(g->ctx, &g->arena, offset, bytes, out, what);
    return g->ctx->backend->view(g->ctx, &g->arena_parts[offset / g->arena_chunk], offset % g->arena_chunk, bytes, out, what);
}

/* A model's variant (src/engine/model.c) keeps its own activations but not its state: node
   i's storage is the primary's (g->model_of) node p's when p holds the same thing. Inputs
   whose shape does not change with the batch (a dataset's samples) are shared, and each
   update node's optimizer state is its parameter's update node's in the primary; 0 when
   none (an update with no counterpart is refused: the state would be the variant's own). */
static int nn__model_source(const nn_graph *g, int i) {
    const nn_graph *p = g->model_of;
    const nn__node *n = &g->nodes[i];
    int k;
    if (!p) return 0;
    if (n->op == NN__OP_INPUT)
        return i < p->n_nodes && p->nodes[i].op == NN__OP_INPUT && p->nodes[i].live && nn__shape_eq(&p->nodes[i].shape, &n->shape) &&
               p->nodes[i].buf.bytes >= nn__dtype_bytes(n->dtype, n->numel) ? i : 0;
    if (!n->n_aux) return 0;
    for (k = p->n_forward; k < p->n_nodes; k++) {
        const nn__node *u = &p->nodes[k];
        if (u->op == n->op && u->n_aux == n->n_aux && u->n_in > 0 && p->nodes[u->in[0]].op == NN__OP_PARAM &&
            g->nodes[n->in[0]].op == NN__OP_PARAM && p->nodes[u->in[0]].param == g->nodes[n->in[0]].param)
            return k;
    }
    return 0;
}

static nn_result nn__allocate(nn_graph *g) {
    nn_context *ctx = g->ctx;
    nn_result r = NN_OK;
    int i, k;
    char what[300];
    if (g->arena_bytes && !g->arena_chunk) {
        r = nn__buf_alloc(ctx, &g->arena, g->arena_bytes, 0, "the activation arena");
        if (r != NN_OK) return r;
    } else if (g->arena_bytes) { /* buffers of arena_chunk bytes, the last one shorter */
        int n = (int)((g->arena_bytes + g->arena_chunk - 1) / g->arena_chunk);
        g->arena_parts = (nn__buf *)nn__calloc((size_t)n, sizeof *g->arena_parts);
        if (!g->arena_parts) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
        g->n_arena_parts = n;
        for (i = 0; i < n && r == NN_OK; i++) {
            size_t at = (size_t)i * g->arena_chunk, bytes = g->arena_bytes - at < g->arena_chunk ? g->arena_bytes - at : g->arena_chunk;
            snprintf(what, sizeof what, "the activation arena (buffer %d of %d)", i + 1, n);
            r = nn__buf_alloc(ctx, &g->arena_parts[i], bytes, 0, what);
        }
        if (r != NN_OK) return r;
    }
    for (i = 0; i < g->n_nodes && r == NN_OK; i++) {
        nn__node *n = &g->nodes[i];
        if (!n->live) continue;
        snprintf(what, sizeof what, "%s %s", nn__op(n->op)->name, n->name ? n->name : "");
        if (n->storage == NN__ST_PARAM) {
            nn__param *p = &g->params->p[n->param];
            if (!p->allocated) {
                r = nn__buf_alloc(ctx, &p->buf, nn__dtype_bytes(p->dtype, p->numel), 0, what);
                if (r == NN_OK) r = nn__buf_write_f32(ctx, &p->buf, p->dtype, p->init, p->numel); /* rounded once */
                if (r != NN_OK) break;
                p->allocated = 1;
                if (!ctx->backend->host_memory) { /* the device holds it now */
                    NN_FREE(p->init);
                    p->init = NULL;
                }
            }
            n->buf = p->buf;
        } else if (n->storage == NN__ST_OWN && n->op == NN__OP_INPUT && nn__model_source(g, i)) {
            r = ctx->backend->view(ctx, &g->model_of->nodes[i].buf, 0, nn__dtype_bytes(n->dtype, n->numel), &n->buf, what);
        } else if (n->storage == NN__ST_OWN) { /* inputs are written before use: no fill */
            r = nn__buf_alloc(ctx, &n->buf, nn__dtype_bytes(n->dtype, n->numel), n->op != NN__OP_INPUT, what);
        } else if (n->storage == NN__ST_VIEW) { /* the storage of view_of (a lower id: allocated already) */
            const nn__node *v = &g->nodes[n->view_of];
            if (v->storage == NN__ST_ARENA) r = nn__arena_view(g, v->offset, nn__dtype_bytes(n->dtype, n->numel), &n->buf, what);
            else r = ctx->backend->view(ctx, &v->buf, 0, nn__dtype_bytes(n->dtype, n->numel), &n->buf, what);
        } else if (n->numel > 0) {
            r = nn__arena_view(g, n->offset, nn__dtype_bytes(n->dtype, n->numel), &n->buf, what);
        }
        if (n->scratch > 0 && r == NN_OK) r = nn__arena_view(g, n->scratch_offset, nn__dtype_bytes(NN_F32, n->scratch), &n->scratch_buf, what);
        if (n->n_aux && g->model_of && r == NN_OK) { /* a model's variant: the primary's optimizer state */
            int src = nn__model_source(g, i);
            if (!src) return nn__fail(ctx, NN_ERR_STATE, "%s: no update of this parameter in the graph the variant was built from", what);
            for (k = 0; k < n->n_aux && r == NN_OK; k++)
                r = ctx->backend->view(ctx, &g->model_of->nodes[src].aux[k], 0, nn__aux_bytes(g, n), &n->aux[k], what);
            continue;
        }
        for (k = 0; k < n->n_aux && r == NN_OK; k++) r = nn__buf_alloc(ctx, &n->aux[k], nn__aux_bytes(g, n), 1, what);
    }
    return r;
}

/* Views (ops flagged NN__OPF_VIEW: a reshape): a view takes the storage of the node it
   reads, or of that node's own source when it is a view too, so a chain of reshapes
   shares one buffer and nothing is copied. The source then lives as long as its last view
   is used, and is kept after a run (NN__ST_OWN) when a view is an output. A parameter is
   not viewed: the optimizer updates it in place, after which a view would no longer hold
   the value of its step; the op copies it instead. */
static void nn__plan_views(nn_graph *g) {
    int i;
    for (i = 0; i < g->n_sched; i++) { /* in schedule order: a view's source is settled first */
        nn__node *n = &g->nodes[g->sched[i]], *src;
        int s;
        if (!(nn__op(n->op)->flags & NN__OPF_VIEW)) continue;
        s = g->nodes[n->in[0]].storage == NN__ST_VIEW ? g->nodes[n->in[0]].view_of : n->in[0];
        src = &g->nodes[s];
        if (src->storage == NN__ST_PARAM || src->numel != n->numel) continue;
        if (n->is_output && src->storage == NN__ST_ARENA) src->storage = NN__ST_OWN;
        n->storage = NN__ST_VIEW;
        n->view_of = s;
    }
    for (i = 0; i < g->n_sched; i++) {
        nn__node *n = &g->nodes[g->sched[i]];
        if (n->storage == NN__ST_VIEW && g->nodes[n->view_of].last < n->last) g->nodes[n->view_of].last = n->last;
    }
}

/* Constants (ops flagged NN__OPF_CONST): each computed once by its CPU body, into its
   buffer on a host-memory backend, else into a host copy written to the device. */
static nn_result nn__compute_constants(nn_graph *g) {
    nn_result r = NN_OK;
    int i;
    for (i = 0; i < g->n_nodes && r == NN_OK; i++) {
        nn__node *n = &g->nodes[i];
        nn__buf dev;
        float *host;
        if (!n->live || !(nn__op(n->op)->flags & NN__OPF_CONST)) continue;
        if (g->ctx->backend->host_memory) {
            r = nn__op(n->op)->cpu(g, n);
            continue;
        }
        host = (float *)nn__calloc((size_t)n->numel, sizeof(float));
        if (!host) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
        dev = n->buf;
        n->buf.host = host;
        r = nn__op(n->op)->cpu(g, n);
        n->buf = dev;
        if (r == NN_OK) r = nn__buf_write(g->ctx, &n->buf, host, nn__dtype_bytes(n->dtype, n->numel));
        NN_FREE(host);
    }
    return r;
}

/* ---- device plans: the launches an op records for a device backend ---- */

#define NN__BUF(id) (&g->nodes[(id)].buf)

/* Appends a launch of kernel `kname` from kernels/FILE.cl for node id, returned via *out,
   with n work-items; a plan that needs a work-group shape sets lws and use_lws, otherwise
   the backend picks it (on GPUs it rounds the global size up to whole groups of 64: every
   kernel checks its bound). */
static nn_result nn__launch_kernel(nn_graph *g, int id, const char *file, const char *kname, size_t n, nn__launch **out) {
    nn__launch *l;
    if (g->n_launches == g->cap_launches) {
        int cap = g->cap_launches ? g->cap_launches * 2 : 64;
        nn__launch *p = (nn__launch *)NN_REALLOC(g->launches, (size_t)cap * sizeof *p);
        if (!p) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
        g->launches = p;
        g->cap_launches = cap;
    }
    if (strlen(kname) >= sizeof l->kernel)
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: kernel name %s is too long", nn__op(g->nodes[id].op)->name, kname);
    l = &g->launches[g->n_launches++];
    memset(l, 0, sizeof *l);
    l->file = file;
    strcpy(l->kernel, kname);
    l->node = id;
    l->dims = 1;
    l->gws[0] = n == 0 ? 1 : n; /* the backend chooses the work-groups (and may pad) unless the plan does */
    *out = l;
    return NN_OK;
}

/* A launch function's opening. NN__KWITH declares l, the launch that `launch` (a call that
   fills &l: nn__launch_kernel, or a family's helper over it) records, returning on error;
   k, the arguments of kernel signature SIG, zeroed; and r. NN__KSTART is NN__KWITH over
   nn__launch_kernel of kernel `kname` from kernels/FILE.cl with `work` work-items;
   NN__KLAUNCH also declares n, the node, first. The fields of k follow, then
   `return nn__kargs_SIG(l, &k);`. */
#define NN__KWITH(sig, launch)    \
    nn__launch *l = NULL;         \
    nn__k_##sig k;                \
    nn_result r = (launch);       \
    if (r != NN_OK) return r;     \
    memset(&k, 0, sizeof k)
#define NN__KSTART(sig, file, kname, work) \
    NN__KWITH(sig, nn__launch_kernel(g, id, file, kname, (size_t)(work), &l))
#define NN__KLAUNCH(sig, file, kname, work) \
    nn__node *n = &g->nodes[id];            \
    NN__KSTART(sig, file, kname, work)

/* A single work-group of a power-of-two size, for the tree reductions of reduce.cl. */
static size_t nn__reduce_wg(nn_graph *g) {
    size_t wg = 1;
    while (wg * 2 <= g->ctx->dev.max_wg && wg * 2 <= 256) wg *= 2;
    return wg;
}

/* A launch function's opening for kernel SIG from kernels/FILE.cl, one work-item per row
   of input 0, x [B, C]: n, x, and NN__KSTART's l, r and k, with k.x, k.B and k.C set */
#define NN__KROWS(sig, file)                              \
    nn__node *n = &g->nodes[id];                          \
    const nn__node *x = &g->nodes[n->in[0]];              \
    NN__KSTART(sig, file, #sig, x->shape.dim[0]);         \
    k.x = &x->buf;                                        \
    k.B = (int)x->shape.dim[0];                           \
    k.C = (int)x->shape.dim[1]

/* nn__launch_kernel over `groups` work-groups of wg work-items each (tree reductions) */
static nn_result nn__launch_groups(nn_graph *g, int id, const char *file, const char *kname, size_t groups, size_t wg,
                                   nn__launch **out) {
    nn_result r = nn__launch_kernel(g, id, file, kname, groups * wg, out);
    if (r != NN_OK) return r;
    (*out)->gws[0] = groups * wg;
    (*out)->lws[0] = wg;
    (*out)->use_lws = 1;
    return NN_OK;
}

/* A launch function's opening for kernel SIG from kernels/FILE.cl over one work-group of
   nn__reduce_wg's size: n, wg, and NN__KWITH's l, r and k */
#define NN__KGROUP(sig, file)        \
    nn__node *n = &g->nodes[id];     \
    size_t wg = nn__reduce_wg(g);    \
    NN__KWITH(sig, nn__launch_groups(g, id, file, #sig, 1, wg, &l))

/* Records every scheduled op's launches, in schedule order; sched_launch[i] is the first
   launch of schedule position i. For device backends' prepare. */
static nn_result nn__record_launches(nn_graph *g) {
    int i;
    nn_result r = NN_OK;
    g->sched_launch = (int *)nn__calloc((size_t)g->n_sched + 1, sizeof(int));
    if (!g->sched_launch) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
    for (i = 0; i < g->n_sched && r == NN_OK; i++) {
        const nn__node *n = &g->nodes[g->sched[i]];
        g->sched_launch[i] = g->n_launches;
        char c0 = g->ctx->err[0]; /* an earlier call's message, hidden while the launch may write its own */
        if (n->fused < 0) continue; /* launched by its fused chain's last node (src/ops/fuse.c) */
        g->ctx->err[0] = 0;
        r = n->fused > 0 ? nn__fuse()->launch(g, g->sched[i]) : nn__op(n->op)->launch(g, g->sched[i]);
        if (r != NN_ERR_STATE && !g->ctx->err[0]) g->ctx->err[0] = c0;
        if (r == NN_ERR_STATE && !g->ctx->err[0]) {
            const nn__launch *l = g->n_launches ? &g->launches[g->n_launches - 1] : NULL;
            char what[160] = "";
            if (l && l->node == g->sched[i])
                snprintf(what, sizeof what, " (kernel %s%s%s)", l->kernel, l->bad_arg ? ", argument " : "",
                         l->bad_arg ? l->bad_arg : "");
            nn__fail(g->ctx, r, "%s: bad launch arguments%s", nn__op(g->nodes[g->sched[i]].op)->name, what);
        }
    }
    g->sched_launch[g->n_sched] = g->n_launches;
    return r;
}

/* Appends node i to the schedule (its first and last use, its inputs' last), after the
   recomputed copies it reads that are not scheduled yet, each after its own. */
static void nn__sched_node(nn_graph *g, int i) {
    nn__node *n = &g->nodes[i];
    int k;
    for (k = 0; k < n->n_in; k++) {
        const nn__node *in = &g->nodes[n->in[k]];
        if (in->recompute_of > 0 && in->first < 0) nn__sched_node(g, n->in[k]);
    }
    n = &g->nodes[i];
    n->first = n->last = g->n_sched;
    for (k = 0; k < n->n_in; k++) {
        nn__node *in = &g->nodes[n->in[k]];
        if (in->last < g->n_sched) in->last = g->n_sched;
    }
    g->sched[g->n_sched++] = i;
}

static nn_result nn__graph_compile(nn_graph *g, const nn_compile_desc *desc) {
    nn_compile_desc d;
    nn_result r;
    int i, k, n_user, pass;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (g->compiled) return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_compile: the graph is already compiled");
    if (g->status != NN_OK) return g->status;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    g->compile_desc = d; /* a model's variants compile with it (src/engine/model.c) */
    if (d.loss.id == 0 && d.optimizer.kind != NN_OPT_NONE) /* else a forward-only graph whose steps change nothing */
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: an optimizer is set but no loss: set "
                        "nn_compile_desc.loss to the scalar to minimise (or leave the optimizer zeroed for a forward-only graph)");
    r = nn__optim()->configure(g, &d);
    if (r != NN_OK) return r;
#ifdef NN_MPI /* ZeRO stage 1 (src/dist/dist.c): decided before the optimizer's ops are added */
    r = nn__dist_plan(g, &d);
    if (r != NN_OK) return r;
#endif
    n_user = g->n_forward = g->n_nodes;
    g->mem_backward_end = g->n_nodes;
    if (g->ckpt_open)
        return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_compile: recompute segment %d was begun (nn_checkpoint_begin) and not ended "
                        "(nn_checkpoint_end)", g->ckpt_open);
    if (d.memory_limit < 0)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: memory_limit %lld is negative (0: no limit)",
                        (long long)d.memory_limit);
    if (d.loss.id != 0) {
        nn__node *L;
        if (!nn__is_tensor(g, d.loss))
            return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: the loss is not a tensor of this graph%s%s",
                            d.loss.id > 0 && d.loss.graph != g->serial ? ": " : "",
                            d.loss.id > 0 && d.loss.graph != g->serial ? nn__foreign(d.loss) : "");
        L = &g->nodes[d.loss.id];
        if (L->numel != 1 || L->dtype != NN_F32) {
            char s[128];
            nn__shape_str(&L->shape, s, sizeof s);
            return nn__fail(g->ctx, NN_ERR_SHAPE, "nn_graph_compile: the loss must be a float32 scalar, not %s %s", s,
                            nn__dtype_name(L->dtype));
        }
        g->loss = d.loss.id;
        L->is_output = 1;
        nn__autograd(g, g->loss, n_user);
        g->mem_backward_end = g->n_nodes;
        nn__checkpoint_apply(g, n_user); /* the backward reads recomputed copies of the segments */
        for (i = 0; i < n_user; i++) {
            nn__node *n = &g->nodes[i];
            int keep = (n->op == NN__OP_INPUT && n->requires_grad) ||
                       (n->op == NN__OP_PARAM && (d.keep_grads || !nn__optim()->updates(g)));
            if (keep && n->grad >= 0) g->nodes[n->grad].is_output = 1;
        }
        if (g->status == NN_OK) nn__optim()->add(g);
    }
    g->compiled = 1;
    if (g->status != NN_OK) return g->status;

    /* liveness: everything a root depends on; roots are outputs (loss, accumulators,
       kept gradients, updates); again after the attention's views (src/ops/attention.c)
       leave the slices they read through dead */
    for (pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (!nn__attn_views(g)) break;
            for (i = 0; i < g->n_nodes; i++) g->nodes[i].live = 0;
        }
        for (k = 0; k < (g->n_ckpt ? 2 : 1); k++) /* twice with recompute: copies have higher ids than their readers */
            for (i = g->n_nodes - 1; i >= 0; i--) {
                nn__node *n = &g->nodes[i];
                int j;
                if (n->is_output) n->live = 1;
                if (n->live)
                    for (j = 0; j < n->n_in; j++) g->nodes[n->in[j]].live = 1;
            }
    }
    g->sched = (int *)nn__calloc((size_t)g->n_nodes + 1, sizeof(int));
    if (!g->sched) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
    g->n_sched = g->n_sched_forward = 0;
    for (i = 0; i < g->n_nodes; i++) {
        nn__node *n = &g->nodes[i];
        unsigned flags = nn__op(n->op)->flags;
        n->first = n->last = -1;
        if (n->op == NN__OP_INPUT || (flags & NN__OPF_CONST)) n->storage = NN__ST_OWN;
        else if (n->op != NN__OP_PARAM) n->storage = (n->is_output && n->numel > 0) ? NN__ST_OWN : NN__ST_ARENA;
    }
    for (i = 0; i < g->n_nodes; i++) { /* in id order, but a recomputed copy just before its first reader */
        nn__node *n = &g->nodes[i];
        unsigned flags = nn__op(n->op)->flags;
        if (!n->live || n->op == NN__OP_INPUT || n->op == NN__OP_PARAM || (flags & NN__OPF_CONST) || n->recompute_of > 0)
            continue;
        nn__sched_node(g, i);
        if (i < n_user) g->n_sched_forward = g->n_sched;
    }
    nn__plan_views(g);
    g->n_sched_update = g->n_sched; /* where the part that runs on update steps only starts */
    for (i = 0; i < g->n_sched && g->first_update_node >= 0; i++)
        if (g->sched[i] >= g->first_update_node) {
            g->n_sched_update = i;
            break;
        }
    for (i = 0; i < g->n_sched; i++) { /* algorithms and working memory chosen per op */
        nn__node *n = &g->nodes[g->sched[i]];
        if (nn__op(n->op)->plan) nn__op(n->op)->plan(g, n);
    }
    r = nn__fuse()->plan(g); /* elementwise chains as one pass (src/ops/fuse.c; NN_FUSE=0: off) */
    if (r != NN_OK) {
        g->status = r;
        return r;
    }
    r = nn__plan_memory(g, g->ctx->dev.align, 0);
    if (r == NN_OK && g->ctx->dev.max_alloc > 0 && g->arena_bytes > g->ctx->dev.max_alloc) {
        /* more than one buffer may hold: planned again in parts of the largest allocation */
        g->arena_chunk = (size_t)g->ctx->dev.max_alloc / g->ctx->dev.align * g->ctx->dev.align;
        r = nn__plan_memory(g, g->ctx->dev.align, g->arena_chunk);
        if (r == NN_OK)
            nn__log(g->ctx, NN_LOG_DEBUG, "the arena of %llu bytes is split in buffers of %llu (the device's largest allocation)",
                    (unsigned long long)g->arena_bytes, (unsigned long long)g->arena_chunk);
    }
    if (r == NN_OK) g->mem_planned = 1;
    if (r == NN_OK) r = nn__memory_check_limit(g, d.memory_limit);
    if (r == NN_OK) r = nn__allocate(g);
    if (r == NN_OK) r = nn__compute_constants(g);
    if (r == NN_OK) r = nn__buf_alloc(g->ctx, &g->one, 4, 0, "a constant");
    if (r == NN_OK) r = g->ctx->backend->fill(g->ctx, &g->one, 1.0f, 4);
    for (i = 0; i < g->n_sched; i++) { /* a counter for each checked op (nn__report_checks) */
        nn__node *n = &g->nodes[g->sched[i]];
        if (n->check) n->check_slot = g->n_checks++;
    }
    if (r == NN_OK && g->n_checks) r = nn__buf_alloc(g->ctx, &g->checks, nn__dtype_bytes(NN_I32, g->n_checks), 1, "the input checks");
    if (r == NN_OK && g->n_checks) r = g->ctx->backend->fill(g->ctx, &g->checks, 0.0f, nn__dtype_bytes(NN_I32, g->n_checks));
    if (r == NN_OK && !g->ctx->backend->host_memory) r = nn__buf_alloc(g->ctx, &g->claim, 16, 1, "the GEMM's item counters");
    if (r == NN_OK && !g->ctx->backend->host_memory) r = g->ctx->backend->fill(g->ctx, &g->claim, 0.0f, 16);
    if (r == NN_OK && !g->ctx->backend->host_memory) r = nn__record_launches(g);
    if (r == NN_OK) r = g->ctx->backend->prepare(g);
    if (r != NN_OK) {
        g->status = r;
        return r;
    }
#ifdef NN_MPI /* data-parallel training (src/dist/dist.c): the ranks compare their graphs */
    r = nn__dist_compile(g, &d);
    if (r != NN_OK) {
        g->status = r;
        return r;
    }
#endif
    for (i = 0; i < g->n_sched; i++) g->ctx->op_compiled[g->nodes[g->sched[i]].op]++;
    for (i = 0; i < g->n_nodes; i++) /* constants: computed at compile time, not scheduled */
        if (g->nodes[i].live && (nn__op(g->nodes[i].op)->flags & NN__OPF_CONST)) g->ctx->op_compiled[g->nodes[i].op]++;
    nn__log(g->ctx, NN_LOG_DEBUG, "compiled: %d nodes, %d scheduled, arena %llu bytes", g->n_nodes, g->n_sched,
            (unsigned long long)g->arena_bytes);
    return NN_OK;
}

/* Compiling, running and finishing use the context's backend: one thread at a time
   (nn__ctx_enter). */
NN_API nn_result nn_graph_compile(nn_graph *g, const nn_compile_desc *desc) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_compile", nn__graph_compile(g, desc));
}

/* ---- running ---- */

/* A dataset's batch indices (its NAME.idx input, nn__node.per_step) before a run: written
   at least once, and on a step (fn "nn_graph_step") written since the last step, so that a
   forgotten nn_dataset_next_batch is an error, not row 0 or the last batch again. Other
   inputs keep their contents across steps until written again (api.h, nn_input). */
static nn_result nn__check_inputs(nn_graph *g, const char *fn) {
    int i;
    for (i = 1; i < g->n_nodes; i++) {
        const nn__node *n = &g->nodes[i];
        if (n->op != NN__OP_INPUT || !n->live || !n->per_step) continue;
        if (n->written == 0)
            return nn__fail(g->ctx, NN_ERR_STATE, "%s: no batch was taken from dataset input %s: call "
                            "nn_dataset_next_batch() before each step", fn, n->name);
        if (n->written == 2 && strcmp(fn, "nn_graph_step") == 0)
            return nn__fail(g->ctx, NN_ERR_STATE, "%s: dataset input %s was not written since the last step (the same "
                            "batch again): call nn_dataset_next_batch() before each step", fn, n->name);
    }
    return NN_OK;
}

static nn_result nn__run(nn_graph *g, int n_sched) {
    if (!g->compiled || g->status != NN_OK) {
        if (g->ctx->dead_refs) return g->status;
        if (!g->compiled) return nn__fail(g->ctx, NN_ERR_STATE, "the graph is not compiled: call nn_graph_compile first");
        return nn__fail(g->ctx, NN_ERR_STATE, "the graph failed to compile (%s); it cannot run", nn_result_string(g->status));
    }
    if (g->broken)
        return nn__fail(g->ctx, NN_ERR_STATE, "an earlier step failed part way, so parameters and optimizer state may be "
                                              "partly updated: load a training state (nn_graph_load_state) to go on");
    g->progress = 0;
    g->checks_pending = g->n_checks > 0;
    g->runs++;
    return g->ctx->backend->run(g, n_sched);
}

/* forward, backward (and gradient accumulation); the update on update steps only. A step
   that fails before anything ran leaves the graph as it was (counters restored); one that
   fails part way leaves it broken until a training state is loaded. */
static nn_result nn__graph_step(nn_graph *g) {
    nn_result r;
    nn__opt_clock clock;
    float lr;
    if (!g->compiled || g->status != NN_OK) return nn__run(g, 0);
    if ((r = nn__check_inputs(g, "nn_graph_step")) != NN_OK) return r;
    g->step++;
    g->progress = 0;
    clock = g->clock;
    lr = g->lr;
#ifdef NN_MPI
    if (g->dist) { /* data-parallel (src/dist/dist.c): this rank is micro-step rank + 1 of the N
                      that one process accumulating N steps would run (dropout's draws);
                      its gradients are averaged across ranks, then every rank updates */
        uint64_t step0 = g->step - 1;
        int progress;
        g->step = step0 + (uint64_t)g->dist_rank + 1;
        r = nn__dist_backward(g, nn__run); /* forward, backward, the reduction overlapped */
        progress = g->progress;
        g->step = step0 + (uint64_t)g->dist_size;
        if (r == NN_OK && g->zero && nn__opt_begin(g)) { /* ZeRO-1: this rank's slice, then the all-gather */
            r = nn__dist_zero_update(g);
            progress += g->progress;
        } else if (r == NN_OK && !g->zero && nn__opt_begin(g)) {
            g->run_from = g->n_sched_update;
            r = nn__run(g, g->n_sched);
            g->run_from = 0;
            progress += g->progress;
        }
        g->progress = progress;
        if (r != NN_OK) g->step = step0 + 1; /* restored to step0 below */
    } else
#endif
    r = nn__run(g, nn__opt_begin(g) ? g->n_sched : g->n_sched_update);
    if (r != NN_OK && g->progress > 0 && !g->broken) g->broken = 1; /* some of it ran: a retry would update twice */
    if (r != NN_OK) {
        g->step--;
        g->clock = clock;
        g->lr = lr;
    } else {
        int i;
        for (i = 1; i < g->n_nodes; i++) /* read by this step (nn__check_inputs) */
            if (g->nodes[i].op == NN__OP_INPUT && g->nodes[i].written) g->nodes[i].written = 2;
    }
    return r;
}

/* A model's variant (src/engine/model.c) runs in its graph's place: what a run advances
   (steps, runs, the optimizer's clock, the rate, a failure part way) is the graph's, copied
   into the variant before the run and back after it. */
static void nn__sync_run_state(nn_graph *to, const nn_graph *from) {
    to->step = from->step;
    to->runs = from->runs;
    to->clock = from->clock;
    to->lr = from->lr;
    to->schedule = from->schedule;
    to->broken = from->broken;
}

static nn_result nn__active_run(nn_graph *g, nn_result (*run)(nn_graph *)) {
    nn_graph *v = g->active;
    nn_result r;
    if (!v) return run(g);
    nn__sync_run_state(v, g);
    r = run(v);
    nn__sync_run_state(g, v);
    return r;
}

static nn_result nn__active_step(nn_graph *g) {
    if (g->active && g->active->eval)
        return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_step: the graph is in eval mode (nn_graph_train(g, 0)), which does not "
                        "train: call nn_graph_train(g, 1) first, or nn_graph_forward to evaluate");
    return nn__active_run(g, nn__graph_step);
}

NN_API nn_result nn_graph_step(nn_graph *g) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_step", nn__active_step(g));
}

static nn_result nn__graph_forward(nn_graph *g) {
    nn_result r;
    if (g->compiled && g->status == NN_OK && (r = nn__check_inputs(g, "nn_graph_forward")) != NN_OK) return r;
    return nn__run(g, g->n_sched_forward);
}

NN_API nn_result nn_graph_forward(nn_graph *g) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_forward", nn__active_run(g, nn__graph_forward));
}

static nn_result nn__graph_finish(nn_graph *g) {
    nn_result r = g->ctx->backend->finish(g->ctx);
    return r == NN_OK ? nn__report_checks(g, "nn_graph_finish") : r;
}

NN_API nn_result nn_graph_finish(nn_graph *g) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_finish", nn__graph_finish(g->active ? g->active : g));
}
