/* What a graph holds and what its memory plan needs: the parameters in insertion order
   (nn_graph_param_count / nn_graph_param_at), the planned bytes by kind
   (nn_graph_memory), the compile's memory_limit check, and a printable summary
   (nn_graph_summary). Everything here reads the plan nn_graph_compile made (src/engine/
   compile.c: each node's storage, schedule positions first..last and scratch); it
   allocates nothing on a device. */
#include "../base/internal.h"
#include "../base/registry.h"

/* The kinds of nn_memory_report, in its field order. */
enum {
    NN__MEM_PARAM,
    NN__MEM_GRAD,
    NN__MEM_OPT,
    NN__MEM_ACT,
    NN__MEM_WORK,
    NN__MEM_BUF,
    NN__MEM_INPUT,
    NN__MEM_OTHER,
    NN__MEM_KINDS
};
static const char *const nn__mem_kind_name[NN__MEM_KINDS] = {"parameters", "gradients", "optimizer state", "activations",
                                                             "workspace",  "buffers",   "inputs",          "other"};

/* A node's kind: leaves by what they are; the forward's outputs (and their recomputed
   copies, engine/checkpoint.c) are activations; what autograd added, and each parameter's gradient (an
   accumulator when steps accumulate), gradients; the rest (the update's sums, the
   clipping coefficient, constants) other. is_pgrad[id]: id is a parameter's gradient. */
static int nn__mem_kind(const nn_graph *g, int id, const unsigned char *is_pgrad) {
    const nn__node *n = &g->nodes[id];
    if (n->op == NN__OP_INPUT) return NN__MEM_INPUT;
    if (n->op == NN__OP_PARAM) return g->params->p[n->param].buffer ? NN__MEM_BUF : NN__MEM_PARAM;
    if (n->op == NN__OP_CAST && id < g->n_forward && g->nodes[n->in[0]].op == NN__OP_PARAM &&
        !g->params->p[g->nodes[n->in[0]].param].buffer)
        return NN__MEM_PARAM; /* a precision policy's 16-bit copy of a parameter (torch.autocast's cast weights) */
    if (nn__op(n->op)->flags & NN__OPF_CONST) return NN__MEM_OTHER;
    if (id < g->n_forward || n->recompute_of > 0) return NN__MEM_ACT;
    if (is_pgrad[id] || id < g->mem_backward_end) return NN__MEM_GRAD;
    return NN__MEM_OTHER;
}

/* Bytes of node n's persistent state buffers (n->aux: an update op's optimizer state, each
   of its parameter's size): what nn__allocate (src/engine/compile.c) allocates for each
   and what nn_graph_memory reports as optimizer state, from this one place. */
static size_t nn__aux_bytes(const nn_graph *g, const nn__node *n) { return nn__dtype_bytes(NN_F32, g->nodes[n->in[0]].numel); }

static int64_t *nn__mem_field(nn_memory_report *r, int kind) {
    switch (kind) {
    case NN__MEM_PARAM: return &r->parameters;
    case NN__MEM_GRAD: return &r->gradients;
    case NN__MEM_OPT: return &r->optimizer_state;
    case NN__MEM_ACT: return &r->activations;
    case NN__MEM_WORK: return &r->workspace;
    case NN__MEM_BUF: return &r->buffers;
    case NN__MEM_INPUT: return &r->inputs;
    default: return &r->other;
    }
}

/* The report of g's plan (made: g->mem_planned). Persistent storage (parameters, buffers,
   inputs, outputs, kept gradients, accumulators, optimizer state, constants) counts
   whole; the arena's tensors and scratch count as they are live at the schedule position
   where the arena's live bytes peak (ties: the first). */
static nn_result nn__memory_report(nn_graph *g, nn_memory_report *r) {
    int64_t *d, *ag, best = -1, persistent = 4; /* the constant 1.0 kernels take for absent operands */
    int64_t ag_live = 0, ag_persistent = 0;
    unsigned char *is_pgrad;
    int i, k, p, best_p = 0;
    memset(r, 0, sizeof *r);
    d = (int64_t *)nn__calloc(((size_t)g->n_sched + 1) * NN__MEM_KINDS, sizeof *d);
    ag = (int64_t *)nn__calloc((size_t)g->n_sched + 1, sizeof *ag); /* activation gradients: live-byte deltas */
    is_pgrad = (unsigned char *)nn__calloc((size_t)g->n_nodes + 1, 1);
    if (!d || !ag || !is_pgrad) {
        NN_FREE(d);
        NN_FREE(ag);
        NN_FREE(is_pgrad);
        return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_memory: out of memory");
    }
    for (i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == NN__OP_PARAM && g->nodes[i].grad > 0) is_pgrad[g->nodes[i].grad] = 1;
    for (i = 0; i < g->n_nodes; i++) {
        const nn__node *n = &g->nodes[i];
        int kind;
        int64_t bytes = (int64_t)nn__dtype_bytes(n->dtype, n->numel); /* 2 bytes an element in 16-bit storage */
        if (!n->live) continue;
        kind = nn__mem_kind(g, i, is_pgrad);
        if (n->storage == NN__ST_PARAM) bytes = (int64_t)nn__dtype_bytes(g->params->p[n->param].dtype, g->params->p[n->param].numel);
        if (kind == NN__MEM_GRAD && is_pgrad[i]) r->parameter_gradients += bytes;
        if (n->storage == NN__ST_PARAM || n->storage == NN__ST_OWN) {
            *nn__mem_field(r, kind) += bytes;
            persistent += bytes;
            if (kind == NN__MEM_GRAD && !is_pgrad[i]) ag_persistent += bytes;
        } else if (n->storage == NN__ST_ARENA && bytes > 0 && n->first >= 0) {
            d[(size_t)nn__live_from(n) * NN__MEM_KINDS + (size_t)kind] += bytes;
            d[(size_t)(n->last + 1) * NN__MEM_KINDS + (size_t)kind] -= bytes;
            if (kind == NN__MEM_GRAD && !is_pgrad[i]) {
                ag[nn__live_from(n)] += bytes;
                ag[n->last + 1] -= bytes;
            }
        }
        if (n->scratch > 0 && n->first >= 0) {
            d[(size_t)n->first * NN__MEM_KINDS + NN__MEM_WORK] += (int64_t)nn__dtype_bytes(NN_F32, n->scratch);
            d[(size_t)(n->first + 1) * NN__MEM_KINDS + NN__MEM_WORK] -= (int64_t)nn__dtype_bytes(NN_F32, n->scratch);
        }
        if (n->n_aux > 0) {
            r->optimizer_state += (int64_t)n->n_aux * (int64_t)nn__aux_bytes(g, n);
            persistent += (int64_t)n->n_aux * (int64_t)nn__aux_bytes(g, n);
        }
        if (n->check && n->first >= 0) { /* its counter */
            r->other += 4;
            persistent += 4;
        }
    }
    r->other += 4;
#ifdef NN_MPI
    { /* ZeRO-1 (src/dist/dist.c): the update runs there, on this rank's slices of the state */
        int64_t z = nn__dist_state_bytes(g);
        if (z > 0) {
            r->optimizer_state += z;
            persistent += z;
        }
    }
#endif
    for (p = 0; p < g->n_sched; p++) { /* running sums: d[p] becomes the bytes live at p */
        int64_t total = 0;
        for (k = 0; k < NN__MEM_KINDS; k++) {
            if (p > 0) d[(size_t)p * NN__MEM_KINDS + (size_t)k] += d[(size_t)(p - 1) * NN__MEM_KINDS + (size_t)k];
            total += d[(size_t)p * NN__MEM_KINDS + (size_t)k];
        }
        if (total > best) {
            best = total;
            best_p = p;
        }
        if (d[(size_t)p * NN__MEM_KINDS + NN__MEM_ACT] > r->activations_max) r->activations_max = d[(size_t)p * NN__MEM_KINDS + NN__MEM_ACT];
        if (d[(size_t)p * NN__MEM_KINDS + NN__MEM_GRAD] > r->gradients_max) r->gradients_max = d[(size_t)p * NN__MEM_KINDS + NN__MEM_GRAD];
        ag_live += ag[p];
        if (ag_live > r->activation_gradients_max) r->activation_gradients_max = ag_live;
    }
    r->activation_gradients_max += ag_persistent;
    if (g->n_sched > 0) {
        for (k = 0; k < NN__MEM_KINDS; k++) *nn__mem_field(r, k) += d[(size_t)best_p * NN__MEM_KINDS + (size_t)k];
        r->peak_op = nn__op(g->nodes[g->sched[best_p]].op)->name;
        r->peak_position = best_p;
    }
    r->activations_max += r->activations - (g->n_sched > 0 ? d[(size_t)best_p * NN__MEM_KINDS + NN__MEM_ACT] : 0);
    r->gradients_max += r->gradients - (g->n_sched > 0 ? d[(size_t)best_p * NN__MEM_KINDS + NN__MEM_GRAD] : 0);
    r->arena = (int64_t)g->arena_bytes;
    r->arena_buffers = g->arena_bytes == 0 ? 0 : g->arena_chunk == 0 ? 1 : (int)((g->arena_bytes + g->arena_chunk - 1) / g->arena_chunk);
    r->peak = persistent + (best < 0 ? 0 : best);
    r->persistent = persistent;
    r->allocated = persistent + r->arena;
    NN_FREE(d);
    NN_FREE(ag);
    NN_FREE(is_pgrad);
    return NN_OK;
}

NN_API nn_result nn_graph_memory(nn_graph *g, nn_memory_report *out) {
    if (!out) return g ? nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_memory: out is NULL") : NN_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (!g->mem_planned)
        return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_memory: the graph has no memory plan yet: nn_graph_compile makes it");
    return nn__memory_report(g, out);
}

/* ---- the compile's memory_limit ---- */

/* One tensor of the plan, for the message: its node and kind, bytes, and whether it is a
   node's scratch or a parameter's optimizer state. */
typedef struct nn__mem_top { int id, kind; int64_t bytes; } nn__mem_top;

static void nn__mem_top_add(nn__mem_top *top, int n_top, int id, int kind, int64_t bytes) {
    int i, j;
    for (i = 0; i < n_top && top[i].bytes >= bytes; i++) {}
    if (i == n_top) return;
    for (j = n_top - 1; j > i; j--) top[j] = top[j - 1];
    top[i].id = id;
    top[i].kind = kind;
    top[i].bytes = bytes;
}

/* NN_ERR_OUT_OF_MEMORY when the plan's allocation exceeds d->memory_limit (called after
   the plan, before anything is allocated): the message names the total, the limit, the
   kinds and the largest tensors (op, name, shape, bytes, kind). */
static nn_result nn__memory_check_limit(nn_graph *g, int64_t limit) {
    nn_memory_report r;
    nn__mem_top top[4];
    unsigned char *is_pgrad;
    char msg[1400], s[128];
    size_t used;
    int i, k, n_top = 4;
    nn_result res;
    if (limit <= 0) return NN_OK;
    res = nn__memory_report(g, &r);
    if (res != NN_OK) return res;
    if (r.allocated <= limit) return NN_OK;
    is_pgrad = (unsigned char *)nn__calloc((size_t)g->n_nodes + 1, 1);
    if (!is_pgrad) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
    for (i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == NN__OP_PARAM && g->nodes[i].grad > 0) is_pgrad[g->nodes[i].grad] = 1;
    memset(top, 0, sizeof top);
    for (i = 0; i < n_top; i++) top[i].bytes = -1;
    for (i = 0; i < g->n_nodes; i++) {
        const nn__node *n = &g->nodes[i];
        if (!n->live || n->storage == NN__ST_VIEW) continue;
        if (n->numel > 0) nn__mem_top_add(top, n_top, i, nn__mem_kind(g, i, is_pgrad), (int64_t)nn__dtype_bytes(n->dtype, n->numel));
        if (n->scratch > 0) nn__mem_top_add(top, n_top, i, NN__MEM_WORK, (int64_t)nn__dtype_bytes(NN_F32, n->scratch));
        if (n->n_aux > 0) nn__mem_top_add(top, n_top, n->in[0], NN__MEM_OPT, (int64_t)n->n_aux * (int64_t)nn__aux_bytes(g, n));
    }
    NN_FREE(is_pgrad);
    used = (size_t)snprintf(msg, sizeof msg,
                            "nn_graph_compile: the memory plan needs %lld bytes, over memory_limit %lld (", (long long)r.allocated,
                            (long long)limit);
    for (k = 0; k < NN__MEM_KINDS && used < sizeof msg; k++)
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s %lld", k ? ", " : "", nn__mem_kind_name[k],
                                 (long long)*nn__mem_field(&r, k));
    if (used < sizeof msg)
        used += (size_t)snprintf(msg + used, sizeof msg - used, " at the peak; arena %lld); the largest tensors:",
                                 (long long)r.arena);
    for (i = 0; i < n_top && top[i].bytes >= 0 && used < sizeof msg; i++) {
        const nn__node *n = &g->nodes[top[i].id];
        nn__shape_str(&n->shape, s, sizeof s);
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s %s%s%s %s %lld bytes (%s)", i ? "," : "",
                                 nn__op(n->op)->name, n->name ? " " : "", n->name ? n->name : "", s, (long long)top[i].bytes,
                                 nn__mem_kind_name[top[i].kind]);
    }
    return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "%s", msg);
}

/* ---- parameters, in insertion order ---- */

NN_API nn_result nn_graph_param_count(nn_graph *g, int *count) {
    int i, n = 0;
    if (!count) return g ? nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_param_count: count is NULL") : NN_ERR_INVALID_ARGUMENT;
    *count = 0;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    for (i = 1; i < g->n_nodes; i++)
        if (g->nodes[i].op == NN__OP_PARAM) n++;
    *count = n;
    return NN_OK;
}

NN_API nn_result nn_graph_param_at(nn_graph *g, int index, nn_param_info *out) {
    int i, n = 0;
    if (!out) return g ? nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_param_at: out is NULL") : NN_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    for (i = 1; i < g->n_nodes; i++) {
        const nn__node *nd = &g->nodes[i];
        if (nd->op != NN__OP_PARAM) continue;
        if (n++ == index) {
            out->name = g->params->p[nd->param].name;
            out->tensor = nn__tensor_of(g, i);
            out->shape = nd->shape;
            out->numel = nd->numel;
            out->buffer = g->params->p[nd->param].buffer;
            return NN_OK;
        }
    }
    return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_param_at: index %d is out of range (the graph has %d parameters and buffers)",
                    index, n);
}

/* ---- the summary ---- */

/* Where a summary goes: a FILE, or a buffer of cap bytes (len counts what did not fit too). */
typedef struct nn__sum_out { FILE *f; char *buf; size_t cap, len; } nn__sum_out;

static void nn__sum_printf(nn__sum_out *o, const char *fmt, ...) {
    char line[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    if (o->f) fputs(line, o->f);
    else if (o->buf && o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->buf + o->len, line, (size_t)n < room ? (size_t)n : room);
    }
    o->len += (size_t)n;
}

/* The rows: the forward's nodes (every node before compile) but the parameters, each with
   its op, name, output shape and the parameters it reads; then the parameters and buffers
   with their shapes and counts, and the totals; then, once compiled, the plan's bytes. */
static nn_result nn__summary(nn_graph *g, nn__sum_out *o) {
    int i, k, n_end = g->compiled && g->n_forward > 0 ? g->n_forward : g->n_nodes, n_param = 0, n_buf = 0;
    int64_t param_values = 0, buf_values = 0;
    char s[128];
    nn__sum_printf(o, "graph: %d nodes (%d built), %s on %s\n", g->n_nodes - 1, n_end - 1,
                   g->compiled ? (g->status == NN_OK ? "compiled" : "compile failed") : "not compiled", g->ctx->backend_name);
    nn__sum_printf(o, "  %-4s %-22s %-18s %-20s %s\n", "#", "op", "name", "output", "parameters");
    for (i = 1; i < n_end; i++) {
        const nn__node *n = &g->nodes[i];
        int col = 0;
        if (n->op == NN__OP_PARAM) continue;
        nn__shape_str(&n->shape, s, sizeof s);
        nn__sum_printf(o, "  %-4d %-22s %-18s %-20s", i, nn__op(n->op)->name, n->name ? n->name : "", s);
        for (k = 0; k < n->n_in; k++) {
            const nn__node *p = &g->nodes[n->in[k]];
            if (p->op != NN__OP_PARAM) continue;
            nn__sum_printf(o, "%s%s", col++ ? ", " : " ", p->name ? p->name : "?");
        }
        nn__sum_printf(o, "\n");
    }
    nn__sum_printf(o, "parameters and buffers, in insertion order:\n");
    nn__sum_printf(o, "  %-32s %-20s %12s\n", "name", "shape", "count");
    for (i = 1; i < g->n_nodes; i++) {
        const nn__node *n = &g->nodes[i];
        int buffer;
        if (n->op != NN__OP_PARAM) continue;
        buffer = g->params->p[n->param].buffer;
        nn__shape_str(&n->shape, s, sizeof s);
        nn__sum_printf(o, "  %-32s %-20s %12lld%s\n", n->name ? n->name : "?", s, (long long)n->numel, buffer ? " (buffer)" : "");
        if (buffer) {
            n_buf++;
            buf_values += n->numel;
        } else {
            n_param++;
            param_values += n->numel;
        }
    }
    nn__sum_printf(o, "total: %lld parameters in %d tensors (%lld bytes); %lld buffer values in %d tensors\n",
                   (long long)param_values, n_param, (long long)param_values * 4, (long long)buf_values, n_buf);
    if (g->mem_planned) {
        nn_memory_report r;
        nn_result res = nn__memory_report(g, &r);
        if (res != NN_OK) return res;
        nn__sum_printf(o, "memory plan, bytes at the peak (during %s, step position %d):\n", r.peak_op ? r.peak_op : "-",
                       r.peak_position);
        for (k = 0; k < NN__MEM_KINDS; k++)
            nn__sum_printf(o, "  %-16s %14lld\n", nn__mem_kind_name[k], (long long)*nn__mem_field(&r, k));
        nn__sum_printf(o, "  %-16s %14lld\n", "peak", (long long)r.peak);
        nn__sum_printf(o, "  %-16s %14lld (in %d buffer%s)\n", "arena", (long long)r.arena, r.arena_buffers,
                       r.arena_buffers == 1 ? "" : "s");
        nn__sum_printf(o, "  %-16s %14lld\n", "allocated", (long long)r.allocated);
    }
    return NN_OK;
}

NN_API nn_result nn_graph_summary(nn_graph *g, FILE *f) {
    nn__sum_out o;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (!f) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_summary: the FILE is NULL");
    memset(&o, 0, sizeof o);
    o.f = f;
    return nn__summary(g, &o);
}

NN_API nn_result nn_graph_summary_string(nn_graph *g, char *buf, size_t cap, size_t *len) {
    nn__sum_out o;
    nn_result r;
    if (len) *len = 0;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (!buf && cap > 0) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_summary_string: buf is NULL with cap %llu", (unsigned long long)cap);
    memset(&o, 0, sizeof o);
    o.buf = buf;
    o.cap = cap;
    r = nn__summary(g, &o);
    if (cap > 0) buf[o.len < cap ? o.len : cap - 1] = '\0';
    if (len) *len = o.len;
    return r;
}
