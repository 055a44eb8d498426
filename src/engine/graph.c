/* The graph core: graphs, nodes and the checks every builder uses, parameters and their
   initialisation, and reading and writing tensors. Op builders are in src/ops/. */
#include "../base/internal.h"
#include "../base/registry.h"
#include "../../kernels/storage.h"

/* Registry names (src/base/registry.h: nn__cpu_STEM, nn__launch_STEM, nn__grad_STEM,
   nn__plan_STEM): the functions an op shares with another, and the ones it has none of. */
#define nn__cpu_input nn__cpu_leaf
#define nn__launch_input nn__launch_leaf
#define nn__grad_input nn__grad_none
#define nn__plan_input nn__no_plan
#define nn__cpu_param nn__cpu_leaf
#define nn__launch_param nn__launch_leaf
#define nn__grad_param nn__grad_none
#define nn__plan_param nn__no_plan

static const char *const nn__op_names[] = {
#define NN__X(e, s, stem, flags) s,
    NN__OPS(NN__X)
#undef NN__X
};

/* ---- graphs and nodes ---- */

static void nn__params_release(nn__params *ps) {
    int i;
    if (!ps || --ps->refs > 0) return;
    for (i = 0; i < ps->n; i++) {
        NN_FREE(ps->p[i].name);
        NN_FREE(ps->p[i].init);
        nn__buf_free(ps->ctx, &ps->p[i].buf);
    }
    NN_FREE(ps->p);
    NN_FREE(ps->index);
    NN_FREE(ps);
}

static uint32_t nn__name_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The entry named name, or -1; lookups are a hash probe, so a network of thousands of
   parameters builds in linear time. */
static int nn__params_find(const nn__params *ps, const char *name) {
    uint32_t mask, k;
    if (!ps->index_cap) return -1;
    mask = (uint32_t)ps->index_cap - 1;
    for (k = nn__name_hash(name) & mask; ps->index[k]; k = (k + 1) & mask)
        if (strcmp(ps->p[ps->index[k] - 1].name, name) == 0) return ps->index[k] - 1;
    return -1;
}

/* Indexes entry i (its name is new); grows the table to keep it at most half full. */
static int nn__params_index(nn__params *ps, int i) {
    uint32_t mask, k;
    if (2 * (ps->n + 1) > ps->index_cap) {
        int cap = ps->index_cap ? ps->index_cap * 2 : 64, j;
        int *t = (int *)nn__calloc((size_t)cap, sizeof *t);
        if (!t) return 0;
        NN_FREE(ps->index);
        ps->index = t;
        ps->index_cap = cap;
        for (j = 0; j < ps->n; j++)
            if (j != i) nn__params_index(ps, j);
    }
    mask = (uint32_t)ps->index_cap - 1;
    for (k = nn__name_hash(ps->p[i].name) & mask; ps->index[k]; k = (k + 1) & mask) {}
    ps->index[k] = i + 1;
    return 1;
}

static int nn__new_node(nn_graph *g, int op, nn_dtype dt, nn_shape shape, const int *in, int n_in);
static const char *nn__dtype_name(nn_dtype d);

/* The tag of a new graph's handles (nn_tensor.graph): a counter through a bijection of 32
   bits (murmur3's finaliser), so that no two of the last 2^32 - 1 graphs of the process
   share one, it is never 0, and a made-up tag (1, 2, ...) is some graph's only by a chance
   of one in 2^32. */
static uint32_t nn__graph_serial(void) {
    static uint32_t last;
    uint32_t s;
    do {
#if defined(__GNUC__) || defined(__clang__)
        s = __atomic_add_fetch(&last, 1u, __ATOMIC_RELAXED);
#else
        static struct nn__mutex m = NN__MUTEX_INIT;
        nn__mutex_lock(&m);
        s = ++last;
        nn__mutex_unlock(&m);
#endif
        s ^= s >> 16;
        s *= 0x85ebca6bu;
        s ^= s >> 13;
        s *= 0xc2b2ae35u;
        s ^= s >> 16;
    } while (s == 0);
    return s;
}

/* Frees g; 1 when its context was destroyed before it and g was its last graph (the
   caller frees the context, after leaving it). */
static int nn__graph_free(nn_graph *g) {
    nn_context *ctx = g->ctx;
    int i;
    if (g->model_free) g->model_free(g);      /* src/engine/model.c's: the variants, set by nn_graph_build */
    nn__graph_release_compiled(g);
    nn__groups_free(g);
    if (g->datasets_free) g->datasets_free(g); /* files/ckpt.c's, set by nn_dataset_create */
    if (g->dist_free) g->dist_free(g);         /* src/dist/dist.c's (NN_MPI), set by the compile */
    if (g->notes_free) g->notes_free(g);       /* src/engine/layer_notes.c's, set with the first note */
    for (i = 0; i < g->n_nodes; i++) NN_FREE(g->nodes[i].name);
    NN_FREE(g->nodes);
    NN_FREE(g->param_node);
    nn__params_release(g->params);
    nn__ctx_unlink(g);
    NN_FREE(g);
    return ctx->dead_refs > 0 && --ctx->dead_refs == 0; /* the last graph of a destroyed context */
}

/* Creating and destroying graphs change the context's list of graphs and the parameter
   stores graphs share: they wait for another thread's call on the context to return. */
static nn_result nn__graph_create(nn_context *ctx, const nn_graph_desc *desc, nn_graph **out) {
    nn_graph *g = (nn_graph *)nn__calloc(1, sizeof *g);
    if (!g) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_create: out of memory");
    g->ctx = ctx;
    g->serial = nn__graph_serial();
    g->loss = -1;
    g->clip_node = -1;
    g->seed = 1;
    if (desc) {
        g->eval = desc->eval;
        g->seed = nn__defu64(desc->seed, 1);
        if (desc->precision < NN_PRECISION_FP32 || desc->precision > NN_PRECISION_FP16) {
            NN_FREE(g);
            return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_create: precision %d is not NN_PRECISION_FP32, "
                            "NN_PRECISION_BF16 or NN_PRECISION_FP16", (int)desc->precision);
        }
        g->precision = (int)desc->precision;
        g->param_dtype = desc->param_dtype;
        if (g->param_dtype == NN_F32 && desc->share_params && nn__dtype_half(desc->share_params->param_dtype)) {
            /* sharing 16-bit parameters: their type, and the policy that reads them, unless asked otherwise */
            g->param_dtype = desc->share_params->param_dtype;
            if (!g->precision) g->precision = desc->share_params->precision;
        }
        if (g->param_dtype != NN_F32 && !nn__dtype_half(g->param_dtype)) {
            NN_FREE(g);
            return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_create: param_dtype %d is not NN_F32, NN_BF16 or NN_F16",
                            (int)desc->param_dtype);
        }
        if (nn__dtype_half(g->param_dtype) &&
            g->precision != (g->param_dtype == NN_BF16 ? NN_PRECISION_BF16 : NN_PRECISION_FP16)) {
            nn_dtype pd = g->param_dtype;
            int prec = g->precision;
            NN_FREE(g);
            return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_create: param_dtype %s needs precision %s (the "
                            "policy converts the float32 ops' inputs), not %d", nn__dtype_name(pd),
                            pd == NN_BF16 ? "NN_PRECISION_BF16" : "NN_PRECISION_FP16", prec);
        }
        if (desc->share_params) {
            if (desc->share_params->ctx != ctx) {
                NN_FREE(g);
                return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_create: share_params is a graph of another context");
            }
            g->params = desc->share_params->params;
            g->params->refs++;
        }
    }
    if (!g->params) {
        g->params = (nn__params *)nn__calloc(1, sizeof *g->params);
        if (!g->params) {
            NN_FREE(g);
            return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_create: out of memory");
        }
        g->params->refs = 1;
        g->params->ctx = ctx;
    }
    nn__ctx_link(ctx, g);
    if (nn__new_node(g, NN__OP_INPUT, NN_F32, nn_shape1(1), NULL, 0) != 0) { /* node 0: NN_NONE, never live */
        nn__graph_free(g);
        return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_create: out of memory");
    }
    *out = g;
    return NN_OK;
}

NN_API nn_result nn_graph_create(nn_context *ctx, const nn_graph_desc *desc, nn_graph **out) {
    nn_result r;
    int held;
    if (!out) return NN_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!ctx) return NN_ERR_INVALID_ARGUMENT;
    held = nn__ctx_wait(ctx);
    r = nn__graph_create(ctx, desc, out);
    if (held) nn__ctx_leave(ctx);
    return r;
}

NN_API void nn_graph_destroy(nn_graph *g) {
    nn_context *ctx;
    int held, last;
    if (!g) return;
    ctx = g->ctx;
    held = nn__ctx_wait(ctx);
    last = nn__graph_free(g);
    if (held) nn__ctx_leave(ctx);
    if (last) nn__ctx_free(ctx);
}

NN_API nn_result nn_graph_status(const nn_graph *g) { return g ? g->status : NN_ERR_INVALID_ARGUMENT; }

/* The graph that a call on g runs on: the variant of g's model that nn_graph_set_batch and
   nn_graph_train selected (src/engine/model.c; it shares g's handles), or g itself. */
static nn_graph *nn__active(nn_graph *g) { return g && g->active ? g->active : g; }

/* The handle of node id of g, stamped with g's serial number (a failed or absent handle:
   0). Within the library nn__tensor(id) is the handle of a node of the g in scope. */
static nn_tensor nn__tensor_of(const nn_graph *g, int id) {
    nn_tensor t;
    t.id = id;
    t.graph = g && id > 0 ? g->serial : 0;
    return t;
}
#define nn__tensor(id) nn__tensor_of(g, (id))

/* Records the graph's first error (later ones are consequences) and returns a failed tensor. */
static nn_tensor nn__op_fail(nn_graph *g, nn_result code, const char *fmt, ...) {
    if (g->status == NN_OK) {
        va_list ap;
        g->status = code;
        va_start(ap, fmt);
        vsnprintf(g->ctx->err, sizeof g->ctx->err, fmt, ap);
        va_end(ap);
    }
    return nn__tensor(-1);
}

/* Handles carry their graph's tag (nn__graph_serial), and a graph takes only its own: why
   a handle whose tag is not g's names no node of g, for the messages. */
static const char *nn__foreign(nn_tensor t) {
    return t.graph == 0 ? "its handle carries no graph tag (made by hand, not returned by a builder)"
                        : "it is a tensor of another graph (or a handle not returned by this graph's builders)";
}

/* What a graph that takes no more ops is, for the messages. */
static const char *nn__graph_state(const nn_graph *g) {
    if (g->ctx->dead_refs) return "orphaned (its context was destroyed)";
    if (g->status != NN_OK) return "compiled, and its compile failed";
    return g->loss > 0 ? "compiled (a training graph)" : "compiled (a forward-only graph)";
}

/* 1 when every tensor is a usable node of g; else the op fails (quietly if an input had
   already failed, since that error is on record). */
/* The inputs of an op: tensors of g, and not rank 0 unless rank0 (the ops whose code
   handles a scalar [] call nn__check0; every other builder refuses one here, before it
   reads a dim). */
static int nn__check_in(nn_graph *g, const char *op, int n, const nn_tensor *t, int rank0) {
    int i;
    if (!g) return 0;
    if (g->compiled) { /* refused here, and the graph is left as it was: a compiled graph still runs */
        nn__fail(g->ctx, NN_ERR_STATE, "%s: the graph is %s, so nothing can be added to it: build every op before "
                 "nn_graph_compile, or build another graph (nn_graph_desc.share_params to use this one's parameters)",
                 op, nn__graph_state(g));
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (t[i].id < 0) {
            if (g->status == NN_OK) nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: input %d is not a tensor", op, i);
            return 0;
        }
        if (t[i].id == 0) {
            nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: input %d is NN_NONE, and it is not optional", op, i);
            return 0;
        }
        if (t[i].graph != g->serial) {
            nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: input %d is not a tensor of this graph: %s", op, i, nn__foreign(t[i]));
            return 0;
        }
        if (t[i].id >= g->n_nodes) {
            nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: input %d is not a tensor of this graph", op, i);
            return 0;
        }
        if (!rank0 && g->nodes[t[i].id].shape.ndim == 0) {
            nn__op_fail(g, NN_ERR_SHAPE, "%s: input %d is rank 0 (a scalar []), which this op does not take; nn_reshape it to [1]",
                        op, i);
            return 0;
        }
    }
    return 1;
}
/* The result of a nn_result call whose nn__check failed: the refusal of a compiled graph
   (which keeps its status), or the graph's first error. */
static nn_result nn__check_result(const nn_graph *g) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return g->compiled ? NN_ERR_STATE : g->status;
}
static int nn__check(nn_graph *g, const char *op, int n, const nn_tensor *t) { return nn__check_in(g, op, n, t, 0); }
static int nn__check0(nn_graph *g, const char *op, int n, const nn_tensor *t) { return nn__check_in(g, op, n, t, 1); }

/* Tensors hold at most NN__MAX_NUMEL elements: kernels and CPU loops index them with
   32-bit ints, so a larger one is refused when it is built, before anything is allocated,
   rather than wrapping around later. The product is checked without overflowing. */
static int nn__shape_fits(nn_graph *g, const char *op, const nn_shape *s) {
    int64_t n = 1;
    int i;
    for (i = 0; i < s->ndim; i++) {
        if (s->dim[i] < 0 || (s->dim[i] > 0 && n > NN__MAX_NUMEL / s->dim[i])) {
            char b[128];
            nn__shape_str(s, b, sizeof b);
            nn__op_fail(g, NN_ERR_SHAPE, "%s: shape %s has more than %lld elements, the most a tensor can hold", op,
                        b, (long long)NN__MAX_NUMEL);
            return 0;
        }
        n *= s->dim[i];
    }
    return 1;
}

/* The precision policy (nn_graph_desc.precision), in one place for every builder: the
   16-bit storage type the graph's matmuls (and the ops that take 16-bit storage after them)
   produce, or NN_F32 with the default NN_PRECISION_FP32. */
static NN__MAYBE_UNUSED nn_dtype nn__policy_dtype(const nn_graph *g) {
    return g->precision == NN_PRECISION_BF16 ? NN_BF16 : g->precision == NN_PRECISION_FP16 ? NN_F16 : NN_F32;
}

static int nn__new_node(nn_graph *g, int op, nn_dtype dt, nn_shape shape, const int *in, int n_in);

/* Under a 16-bit policy, the float32 copy of 16-bit node x that an op without 16-bit bodies
   reads (torch.autocast's float32 ops: norms, softmax, losses, reductions, shapes): one CAST
   node per (x, recompute segment), made on first use and found again after. -1 on failure. */
static int nn__policy_f32_id(nn_graph *g, int x) {
    int i, in[1];
    for (i = x + 1; i < g->n_nodes; i++)
        if (g->nodes[i].op == NN__OP_CAST && g->nodes[i].in[0] == x && g->nodes[i].dtype == NN_F32 &&
            g->nodes[i].ckpt == g->ckpt_open)
            return i;
    in[0] = x;
    return nn__new_node(g, NN__OP_CAST, NN_F32, g->nodes[x].shape, in, 1);
}

static int nn__new_node(nn_graph *g, int op, nn_dtype dt, nn_shape shape, const int *in, int n_in) {
    nn__node *n = NULL;
    int i;
    if (g->compiled) { /* a builder that checks no input (a constant) on a compiled graph */
        nn__check_in(g, nn__op_names[op], 0, NULL, 0);
        return -1;
    }
    if (!nn__shape_fits(g, nn__op_names[op], &shape)) return -1;
    if (!(nn__op(op)->flags & NN__OPF_RANK0)) { /* a scalar (rank 0) input only where the op's code handles one
                                                    (the optimizers' nodes have no shape: their 0 dims are no scalar) */
        int bad = 0;
        for (i = 0; i < n_in; i++) bad |= in[i] >= 0 && in[i] < g->n_nodes && g->nodes[in[i]].shape.ndim == 0;
        if (bad) {
            nn__op_fail(g, NN_ERR_SHAPE, "%s: takes no rank 0 (scalar []) tensor; nn_reshape it to [1]", nn__op_names[op]);
            return -1;
        }
    }
    if (!(nn__op(op)->flags & NN__OPF_HALF) && nn__policy_dtype(g) != NN_F32 && n_in <= NN__MAX_IN) {
        /* the policy: a 16-bit input of an op that computes in float32 is converted first */
        for (i = 0; i < n_in; i++)
            if (in[i] >= 0 && in[i] < g->n_nodes && nn__dtype_half(g->nodes[in[i]].dtype)) break;
        if (i < n_in) {
            int conv[NN__MAX_IN];
            for (i = 0; i < n_in; i++) {
                conv[i] = in[i];
                if (in[i] >= 0 && in[i] < g->n_nodes && nn__dtype_half(g->nodes[in[i]].dtype)) {
                    conv[i] = nn__policy_f32_id(g, in[i]);
                    if (conv[i] < 0) return -1;
                }
            }
            /* and computes in float32: its output is float32 whatever the builder asked (a view
               such as RESHAPE takes its input's dtype, now the float32 copy's) */
            return nn__new_node(g, op, nn__dtype_half(dt) ? NN_F32 : dt, shape, conv, n_in);
        }
    }
    if (!(nn__op(op)->flags & NN__OPF_HALF)) { /* 16-bit storage only where the op's bodies and kernels read it */
        for (i = 0; i < n_in; i++) {
            if (in[i] >= 0 && in[i] < g->n_nodes && nn__dtype_half(g->nodes[in[i]].dtype)) {
                nn__op_fail(g, NN_ERR_SHAPE, "%s: takes no %s tensor (input %d); convert it with nn_to_dtype(x, NN_F32) "
                            "first", nn__op_names[op], nn__dtype_name(g->nodes[in[i]].dtype), i);
                return -1;
            }
        }
    }
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        nn__node *p = (nn__node *)NN_REALLOC(g->nodes, (size_t)cap * sizeof *p);
        if (!p) {
            nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", nn__op_names[op]);
            return -1;
        }
        g->nodes = p;
        g->cap_nodes = cap;
    }
    n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->dtype = dt;
    n->shape = shape;
    n->numel = nn__numel(&shape);
    n->n_in = n_in;
    for (i = 0; i < n_in; i++) n->in[i] = in[i];
    n->grad = -1;
    n->param = -1;
    n->ckpt = g->ckpt_open; /* in a recompute segment (engine/checkpoint.c) */
    return g->n_nodes++;
}

static nn__node *nn__n(nn_graph *g, nn_tensor t) { return &g->nodes[t.id]; }

/* An optional operand: 0 when it is NN_NONE, 1 when it is a tensor of g, and -1 (the op
   fails, quietly if t had failed) otherwise. */
static int nn__optional(nn_graph *g, const char *op, nn_tensor t) {
    if (t.id == 0) return 0;
    return nn__check(g, op, 1, &t) ? 1 : -1;
}

/* A user's handle names a tensor of g: not NN_NONE, not failed, not out of range. */
static int nn__is_tensor(const nn_graph *g, nn_tensor t) {
    return g && t.id > 0 && t.id < g->n_nodes && t.graph == g->serial;
}

static const char *nn__dtype_name(nn_dtype d) {
    return d == NN_I32 ? "int32" : d == NN_BF16 ? "bfloat16" : d == NN_F16 ? "float16" : "float32";
}

static int nn__shape_eq(const nn_shape *a, const nn_shape *b) {
    int i;
    if (a->ndim != b->ndim) return 0;
    for (i = 0; i < a->ndim; i++) if (a->dim[i] != b->dim[i]) return 0;
    return 1;
}

/* A shape of 0 (a scalar, PyTorch's rank 0) to NN_MAX_DIMS dims, each 1 or more. */
static int nn__check_shape(nn_graph *g, const char *op, nn_shape s) {
    int i;
    if (s.ndim < 0 || s.ndim > NN_MAX_DIMS) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: a shape needs 0 to %d dims, not %d", op, NN_MAX_DIMS, s.ndim);
        return 0;
    }
    for (i = 0; i < s.ndim; i++) {
        if (s.dim[i] < 1 || s.dim[i] > NN__MAX_NUMEL) {
            char b[128];
            nn__shape_str(&s, b, sizeof b);
            nn__op_fail(g, NN_ERR_SHAPE, "%s: shape %s has a dim out of range", op, b);
            return 0;
        }
    }
    return nn__shape_fits(g, op, &s);
}

static int nn__expect_f32(nn_graph *g, const char *op, nn_tensor t, const char *what) {
    if (nn__n(g, t)->dtype != NN_F32 && !(nn__dtype_half(nn__n(g, t)->dtype) && nn__policy_dtype(g) != NN_F32)) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: %s must be float32, not %s%s", op, what, nn__dtype_name(nn__n(g, t)->dtype),
                    nn__dtype_half(nn__n(g, t)->dtype) ? " (16-bit storage: convert it with nn_to_dtype(x, NN_F32) first)" : "");
        return 0;
    }
    return 1;
}

static int nn__check_logits_labels(nn_graph *g, const char *opname, nn_tensor logits, nn_tensor labels) {
    nn_tensor in[2];
    nn__node *a, *b;
    in[0] = logits;
    in[1] = labels;
    if (!nn__check(g, opname, 2, in)) return 0;
    a = nn__n(g, logits);
    b = nn__n(g, labels);
    if ((a->dtype != NN_F32 && !(nn__dtype_half(a->dtype) && nn__policy_dtype(g) != NN_F32)) || a->shape.ndim != 2 ||
        b->dtype != NN_I32 || b->shape.ndim != 1 ||
        b->shape.dim[0] != a->shape.dim[0]) {
        char sa[128], sb[128];
        nn__shape_str(&a->shape, sa, sizeof sa);
        nn__shape_str(&b->shape, sb, sizeof sb);
        nn__op_fail(g, NN_ERR_SHAPE, "%s: needs logits [B, C] float32 and labels [B] int32, got %s %s and %s %s",
                    opname, sa, nn__dtype_name(a->dtype), sb, nn__dtype_name(b->dtype));
        return 0;
    }
    return 1;
}

NN_API nn_tensor nn_input(nn_graph *g, const char *name, nn_dtype dtype, nn_shape shape) {
    int id;
    if (!nn__check(g, "nn_input", 0, NULL)) return nn__tensor(-1);
    {
        char label[160];
        snprintf(label, sizeof label, "nn_input \"%s\"", name ? name : "");
        if (!nn__check_shape(g, label, shape)) return nn__tensor(-1);
    }
    if (dtype != NN_F32 && dtype != NN_I32 && !nn__dtype_half(dtype))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_input: unknown dtype %d", (int)dtype);
    id = nn__new_node(g, NN__OP_INPUT, dtype, shape, NULL, 0);
    if (id < 0) return nn__tensor(-1);
    g->nodes[id].name = nn__strdup(name ? name : "input");
    if (!g->nodes[id].name) return nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "nn_input: out of memory");
    return nn__tensor(id);
}

NN_API nn_result nn_graph_requires_grad(nn_graph *g, nn_tensor t) {
    if (!nn__check0(g, "nn_graph_requires_grad", 1, &t)) return nn__check_result(g);
    if (nn__n(g, t)->dtype == NN_I32) { /* PyTorch: only floating point tensors require gradients */
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_graph_requires_grad: %s is int32; only float32 tensors have gradients",
                    nn__n(g, t)->name ? nn__n(g, t)->name : "the tensor");
        return NN_ERR_INVALID_ARGUMENT;
    }
    nn__n(g, t)->requires_grad = 1;
    return NN_OK;
}

NN_API nn_result nn_graph_output(nn_graph *g, nn_tensor t) {
    if (!nn__check0(g, "nn_graph_output", 1, &t)) return nn__check_result(g);
    nn__n(g, t)->is_output = 1;
    return NN_OK;
}

/* Uniform [0,1) and standard normal draws for initialisation, from Philox keyed by the
   graph's seed: the same on every backend and machine. One Philox call gives four
   uniforms (elements 4k..4k+3) or two normals (Box-Muller's cos and sin). */
static void nn__init_block(uint64_t seed, int param, uint64_t block, float u[4]) {
    uint32_t ctr[4], key[2];
    int k;
    ctr[0] = (uint32_t)block;
    ctr[1] = (uint32_t)(block >> 32);
    ctr[2] = (uint32_t)param;
    ctr[3] = 0x1A17u;
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    nn__philox(ctr, key);
    for (k = 0; k < 4; k++) u[k] = (float)(ctr[k] >> 8) * (1.0f / 16777216.0f);
}

/* Draw i of a parameter; *cached remembers the last block so a fill calls Philox once per
   four uniforms or two normals. */
static float nn__init_draw(uint64_t seed, int param, uint64_t i, int normal, float u[4], uint64_t *cached) {
    uint64_t block = normal ? i >> 1 : i >> 2;
    double r, a;
    if (block != *cached) {
        nn__init_block(seed, param, block, u);
        *cached = block;
    }
    if (!normal) return u[i & 3];
    r = sqrt(-2.0 * log(u[0] + 1.0 / 33554432.0));
    a = 6.283185307179586 * u[1];
    return (float)(r * ((i & 1) ? sin(a) : cos(a)));
}

static void nn__init_fill(float *p, const nn_shape *s, nn_init init, uint64_t seed, int param) {
    int64_t n = nn__numel(s), i, rf = 1;
    double fan_in, fan_out, bound = 0, std = 0, gain;
    uint64_t cached = ~(uint64_t)0;
    float u[4];
    int k;
    for (k = 2; k < s->ndim; k++) rf *= s->dim[k];
    fan_in = s->ndim >= 2 ? (double)(s->dim[1] * rf) : (double)s->dim[0];
    fan_out = (double)(s->dim[0] * rf);
    switch (init.kind) { /* the gains: 0 is the default, NN_ZERO an exact 0 */
    case NN_INIT_KAIMING_UNIFORM: gain = init.a == 0.0f ? sqrt(2.0) : nn__deff(init.a, 0.0f); bound = gain * sqrt(3.0 / fan_in); break;
    case NN_INIT_KAIMING_NORMAL: gain = init.a == 0.0f ? sqrt(2.0) : nn__deff(init.a, 0.0f); std = gain / sqrt(fan_in); break;
    case NN_INIT_XAVIER_UNIFORM: gain = nn__deff(init.a, 1.0f); bound = gain * sqrt(6.0 / (fan_in + fan_out)); break;
    case NN_INIT_XAVIER_NORMAL: gain = nn__deff(init.a, 1.0f); std = gain * sqrt(2.0 / (fan_in + fan_out)); break;
    default: /* values, not options: 0 and NN_ZERO are both 0 */
        init.a = nn__deff(init.a, 0.0f);
        init.b = nn__deff(init.b, 0.0f);
        break;
    }
    for (i = 0; i < n; i++) {
        switch (init.kind) {
        case NN_INIT_ZEROS: p[i] = 0.0f; break;
        case NN_INIT_CONSTANT: p[i] = init.a; break;
        /* in double: a product of two floats is exact there, so a compiler that fuses the
           multiply and add (-march=native, -ffp-contract=fast) gives the same bits */
        case NN_INIT_UNIFORM:
            p[i] = (float)((double)init.a + (double)(init.b - init.a) * nn__init_draw(seed, param, (uint64_t)i, 0, u, &cached));
            break;
        case NN_INIT_NORMAL:
            p[i] = (float)((double)init.a + (double)init.b * nn__init_draw(seed, param, (uint64_t)i, 1, u, &cached));
            break;
        case NN_INIT_KAIMING_UNIFORM:
        case NN_INIT_XAVIER_UNIFORM:
            p[i] = (float)(bound * (2.0 * nn__init_draw(seed, param, (uint64_t)i, 0, u, &cached) - 1.0));
            break;
        default: p[i] = (float)(std * nn__init_draw(seed, param, (uint64_t)i, 1, u, &cached)); break;
        }
    }
}

/* A parameter-store entry and its node; buffer: state that is not trained (nn_buffer). */
static nn_tensor nn__store_entry(nn_graph *g, const char *fn, const char *name, nn_shape shape, nn_init init, int buffer) {
    nn__params *ps;
    int i, id, pi = -1;
    if (!nn__check(g, fn, 0, NULL)) return nn__tensor(-1);
    if (!name || !name[0]) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: a parameter needs a name", fn);
    if ((int)init.kind < NN_INIT_ZEROS || (int)init.kind > NN_INIT_XAVIER_NORMAL)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s \"%s\": init kind %d is not one of nn_init_kind", fn, name,
                           (int)init.kind);
    { /* torch.nn.init's checks (uniform_: from <= to, normal_: std >= 0), and no NaN or
         infinity in a draw's bounds or a gain (CONSTANT may fill any value, -inf a mask) */
        double a = nn__deff(init.a, 0.0f), b = nn__deff(init.b, 0.0f);
        const char *bad = NULL;
        if (init.kind == NN_INIT_UNIFORM && !(isfinite(a) && isfinite(b) && a <= b))
            bad = "uniform init U(a, b) needs finite a <= b";
        else if (init.kind == NN_INIT_NORMAL && !(isfinite(a) && isfinite(b) && b >= 0))
            bad = "normal init N(a, b) needs a finite mean a and std b >= 0";
        else if (init.kind >= NN_INIT_KAIMING_UNIFORM && !isfinite(a))
            bad = "the init's gain a must be finite";
        if (bad)
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s \"%s\": %s, not a = %g, b = %g", fn, name, bad, a, b);
    }
    {
        char label[160];
        snprintf(label, sizeof label, "%s \"%s\"", fn, name);
        if (!nn__check_shape(g, label, shape)) return nn__tensor(-1);
        if (shape.ndim == 0) return nn__op_fail(g, NN_ERR_SHAPE, "%s: a parameter needs 1 to %d dims, not 0 (make a scalar [1])", label, NN_MAX_DIMS);
    }
    ps = g->params;
    i = nn__params_find(ps, name);
    if (i >= 0) {
        char a[128], b[128];
        if (ps->p[i].buffer != buffer)
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: %s exists as a %s", fn, name,
                               ps->p[i].buffer ? "buffer" : "trainable parameter");
        if (!nn__shape_eq(&ps->p[i].shape, &shape)) {
            nn__shape_str(&ps->p[i].shape, a, sizeof a);
            nn__shape_str(&shape, b, sizeof b);
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: %s exists with shape %s, asked for %s", fn, name, a, b);
        }
        pi = i;
        if (pi < g->param_node_cap && g->param_node[pi]) { /* the same name twice in one graph */
            if (g->share_names) return nn__tensor(g->param_node[pi] - 1); /* asked for: the same tensor */
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                               "%s: this graph already has a %s named %s: give each layer its own name, or call "
                               "nn_graph_share_names(g, 1) first to reuse its weights (weight tying)",
                               fn, buffer ? "buffer" : "parameter", name);
        }
    }
    if (pi < 0) {
        nn__param *p;
        if (ps->n == ps->cap) {
            int cap = ps->cap ? ps->cap * 2 : 16;
            nn__param *np = (nn__param *)NN_REALLOC(ps->p, (size_t)cap * sizeof *np);
            if (!np) return nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
            ps->p = np;
            ps->cap = cap;
        }
        p = &ps->p[ps->n];
        memset(p, 0, sizeof *p);
        p->shape = shape;
        p->numel = nn__numel(&shape);
        p->name = nn__strdup(name);
        p->init = (float *)nn__calloc((size_t)p->numel, sizeof(float));
        if (!p->name || !p->init) {
            NN_FREE(p->name);
            NN_FREE(p->init);
            return nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "%s: %s: out of memory", fn, name);
        }
        p->buffer = buffer;
        p->dtype = buffer ? NN_F32 : g->param_dtype;
        if (!nn__params_index(ps, ps->n)) {
            NN_FREE(p->name);
            NN_FREE(p->init);
            return nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "%s: %s: out of memory", fn, name);
        }
        nn__init_fill(p->init, &shape, init, g->seed, ps->n);
        pi = ps->n++;
    }
    if (pi >= g->param_node_cap) {
        int cap = g->param_node_cap ? g->param_node_cap : 64, *t;
        while (cap <= pi) cap *= 2;
        t = (int *)NN_REALLOC(g->param_node, (size_t)cap * sizeof *t);
        if (!t) return nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        memset(t + g->param_node_cap, 0, (size_t)(cap - g->param_node_cap) * sizeof *t);
        g->param_node = t;
        g->param_node_cap = cap;
    }
    id = nn__new_node(g, NN__OP_PARAM, ps->p[pi].dtype, shape, NULL, 0);
    if (id < 0) return nn__tensor(-1);
    g->nodes[id].param = pi;
    g->param_node[pi] = id + 1;
    g->nodes[id].storage = NN__ST_PARAM;
    g->nodes[id].name = nn__strdup(name);
    if (!g->nodes[id].name) return nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    return nn__tensor(id);
}

/* The parameter store may be shared with graphs that other calls on the context compile,
   run, save or load: an entry is made holding the context (waiting for another thread's
   call to return). */
static nn_tensor nn__store_entry_held(nn_graph *g, const char *fn, const char *name, nn_shape shape, nn_init init, int buffer) {
    nn_tensor t;
    int held;
    if (!g) return nn__tensor(-1);
    held = nn__ctx_wait(g->ctx);
    t = nn__store_entry(g, fn, name, shape, init, buffer);
    if (held) nn__ctx_leave(g->ctx);
    return t;
}

NN_API nn_result nn_graph_share_names(nn_graph *g, int on) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (on != 0 && on != 1) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_share_names: on is %d, not 0 or 1", on);
    g->share_names = on;
    return NN_OK;
}

NN_API nn_tensor nn_param(nn_graph *g, const char *name, nn_shape shape, nn_init init) {
    return nn__store_entry_held(g, "nn_param", name, shape, init, 0);
}

/* ---- ops: shape rules ---- */

static nn_tensor nn__op1(nn_graph *g, int op, nn_dtype dt, nn_shape s, int a) {
    int in[1];
    in[0] = a;
    return nn__tensor(nn__new_node(g, op, dt, s, in, 1));
}

static nn_tensor nn__op2(nn_graph *g, int op, nn_dtype dt, nn_shape s, int a, int b) {
    int in[2];
    in[0] = a;
    in[1] = b;
    return nn__tensor(nn__new_node(g, op, dt, s, in, 2));
}

/* The policy's helper for builders that read a tensor's data themselves: t, or its float32
   copy when t is 16-bit (nn__new_node converts the inputs of ops without 16-bit bodies by
   the same rule, so most builders need not call it). */
static NN__MAYBE_UNUSED nn_tensor nn__policy_f32_input(nn_graph *g, nn_tensor t) {
    if (t.id < 0 || !nn__dtype_half(nn__n(g, t)->dtype)) return t;
    return nn__tensor(nn__policy_f32_id(g, t.id));
}

static nn_tensor nn__op3(nn_graph *g, int op, nn_dtype dt, nn_shape s, int a, int b, int c) {
    int in[3];
    in[0] = a;
    in[1] = b;
    in[2] = c;
    return nn__tensor(nn__new_node(g, op, dt, s, in, 3));
}


NN_API nn_tensor nn_buffer(nn_graph *g, const char *name, nn_shape shape, nn_init init) {
    return nn__store_entry_held(g, "nn_buffer", name, shape, init, 1);
}



NN_API nn_result nn_graph_set_lr(nn_graph *g, float lr) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (nn__graph_orphaned(g, "nn_graph_set_lr") != NN_OK) return NN_ERR_STATE;
    if (!(lr >= 0.0f)) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_set_lr: lr %g is not >= 0", lr);
    g->schedule.lr = lr;
    g->lr = nn__lr_at(&g->schedule, g->clock.t > 0 ? (int64_t)g->clock.t - 1 : 0);
    return NN_OK;
}

NN_API nn_tensor nn_graph_find(nn_graph *g, const char *name) {
    int i;
    if (!g || !name) return nn__tensor(-1);
    for (i = 1; i < g->n_nodes; i++)
        if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0) return nn__tensor(i);
    return nn__tensor(0);
}

NN_API nn_tensor nn_graph_grad(nn_graph *g, nn_tensor t) {
    g = nn__active(g);
    if (!nn__is_tensor(g, t)) return nn__tensor(-1);
    return nn__tensor(g->nodes[t.id].grad > 0 ? g->nodes[t.id].grad : 0);
}

NN_API nn_result nn_tensor_shape(nn_graph *g, nn_tensor t, nn_shape *out) {
    if (!out) return NN_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    g = nn__active(g);
    if (!nn__is_tensor(g, t)) return NN_ERR_INVALID_ARGUMENT;
    *out = g->nodes[t.id].shape;
    return NN_OK;
}

NN_API nn_result nn_tensor_numel(nn_graph *g, nn_tensor t, int64_t *out) {
    if (!out) return NN_ERR_INVALID_ARGUMENT;
    *out = 0;
    g = nn__active(g);
    if (!nn__is_tensor(g, t)) return NN_ERR_INVALID_ARGUMENT;
    *out = g->nodes[t.id].numel;
    return NN_OK;
}

NN_API nn_result nn_tensor_dtype(nn_graph *g, nn_tensor t, nn_dtype *out) {
    if (!out) return NN_ERR_INVALID_ARGUMENT;
    *out = NN_F32;
    g = nn__active(g);
    if (!nn__is_tensor(g, t)) return NN_ERR_INVALID_ARGUMENT;
    *out = g->nodes[t.id].dtype;
    return NN_OK;
}

/* The node's buffer if the user may touch it (write: inputs and params only). */
static nn_result nn__user_buf(nn_graph *g, nn_tensor t, size_t bytes, int write, const char *fn, nn__node **out) {
    nn__node *n = NULL;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (t.id > 0 && t.graph != g->serial)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: not a tensor of this graph: %s", fn, nn__foreign(t));
    if (!nn__is_tensor(g, t))
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: %s", fn, t.id == 0 ? "the tensor is NN_NONE" : "not a tensor of this graph");
    if (!g->compiled || g->status != NN_OK) return nn__fail(g->ctx, NN_ERR_STATE, "%s: compile the graph first", fn);
    n = &g->nodes[t.id];
    if (!n->live && n->op != NN__OP_INPUT && n->op != NN__OP_PARAM)
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: %s is not used by the compiled graph", fn, nn__op_names[n->op]);
    if (write && n->op != NN__OP_INPUT && n->op != NN__OP_PARAM && !(nn__op(n->op)->flags & NN__OPF_WRITABLE))
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: only inputs, parameters and accumulators can be written", fn);
    if (!write && (n->storage == NN__ST_ARENA || (n->storage == NN__ST_VIEW && g->nodes[n->view_of].storage == NN__ST_ARENA))) {
        int i;
        for (i = 1; i < g->n_nodes && g->nodes[i].grad != t.id; i++) {}
        if (i < g->n_nodes && g->nodes[i].op == NN__OP_PARAM) /* a gradient nn_graph_grad gave */
            return nn__fail(g->ctx, NN_ERR_STATE, "%s: the gradient of parameter %s is not kept after a step: compile with "
                            "nn_compile_desc.keep_grads = 1 to read it", fn, g->nodes[i].name);
        if (i < g->n_nodes)
            return nn__fail(g->ctx, NN_ERR_STATE, "%s: the gradient of %s%s%s is not kept after a step: mark that tensor with "
                            "nn_graph_requires_grad() before compile (or compile with nn_compile_desc.keep_grads = 1 for "
                            "parameters' gradients)", fn, g->nodes[i].name ? "input " : "the ", g->nodes[i].name ? g->nodes[i].name : nn__op_names[g->nodes[i].op], g->nodes[i].name ? "" : " output");
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: the output of %s is not kept after a run (its memory is reused): mark it "
                        "with nn_graph_output() before compile", fn, nn__op_names[n->op]);
    }
    if (bytes != (size_t)n->numel * 4) { /* 4 bytes an element for every dtype: 16-bit ones as float32 values */
        char s[128];
        nn__shape_str(&n->shape, s, sizeof s);
        return nn__fail(g->ctx, NN_ERR_SHAPE, "%s: %llu bytes given for a tensor %s of %llu bytes", fn,
                        (unsigned long long)bytes, s, (unsigned long long)n->numel * 4);
    }
    if (!n->live && n->op == NN__OP_INPUT) /* no storage was planned for it */
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: input %s is not used by the compiled graph", fn, n->name);
    if (n->storage == NN__ST_PARAM && !g->params->p[n->param].allocated)
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: parameter %s is not used by the compiled graph", fn, n->name);
    if (n->storage == NN__ST_PARAM) n->buf = g->params->p[n->param].buf;
    *out = n;
    return NN_OK;
}

/* A 16-bit tensor's storage from float32 values (src; NULL: every element `value`), each
   rounded to nearest even (kernels/storage.h), through a host copy of its 2-byte words. */
static nn_result nn__half_write(nn_graph *g, nn__node *n, const float *src, float value, const char *fn) {
    size_t bytes = nn__dtype_bytes(n->dtype, n->numel);
    uint16_t *h = (uint16_t *)nn__calloc(bytes / 2, 2);
    int64_t i;
    nn_result r;
    if (!h) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (i = 0; i < n->numel; i++) {
        float v = src ? src[i] : value;
        h[i] = n->dtype == NN_BF16 ? nn__f32_to_bf16(v) : nn__f32_to_f16(v);
    }
    r = nn__buf_write(g->ctx, &n->buf, h, bytes);
    NN_FREE(h);
    return r;
}
/* A 16-bit tensor's storage widened to float32 values into dst (exact). */
static nn_result nn__half_read(nn_graph *g, nn__node *n, float *dst) {
    size_t bytes = nn__dtype_bytes(n->dtype, n->numel);
    uint16_t *h = (uint16_t *)nn__calloc(bytes / 2, 2);
    int64_t i;
    nn_result r;
    if (!h) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_tensor_read: out of memory");
    r = nn__buf_read(g->ctx, &n->buf, h, bytes);
    for (i = 0; r == NN_OK && i < n->numel; i++) dst[i] = n->dtype == NN_BF16 ? nn__bf16_to_f32(h[i]) : nn__f16_to_f32(h[i]);
    NN_FREE(h);
    return r;
}

/* Reading and writing tensors go through the context's backend: one thread at a time
   (nn__ctx_enter). The library's own callers hold the context already and call the
   nn__ forms. */
static nn_result nn__tensor_write(nn_graph *g, nn_tensor t, const void *data, size_t bytes) {
    nn__node *n = NULL;
    nn_result r = nn__user_buf(g, t, bytes, 1, "nn_tensor_write", &n);
    if (r != NN_OK) return r;
    if (!data) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_tensor_write: data is NULL");
    if (nn__dtype_half(n->dtype)) r = nn__half_write(g, n, (const float *)data, 0.0f, "nn_tensor_write");
    else r = nn__buf_write(g->ctx, &n->buf, data, bytes);
    if (r == NN_OK && n->op == NN__OP_INPUT) n->written = 1;
    return r;
}

/* The counters of the checked ops (nn__node.check), read when a run has happened since the
   last time: inputs PyTorch raises on (a label out of range) are counted on the device,
   never read out of bounds, and reported here, at the next read or finish. Reported
   counts start again from 0. */
static nn_result nn__report_checks(nn_graph *g, const char *fn) {
    int32_t counts[64];
    char msg[NN__ERRLEN];
    size_t used = 0;
    int i, k, n = g->n_checks < 64 ? g->n_checks : 64;
    nn_result r;
    if (!g->checks_pending || n == 0) return NN_OK;
    g->checks_pending = 0;
    r = nn__buf_read(g->ctx, &g->checks, counts, nn__dtype_bytes(NN_I32, n));
    if (r != NN_OK) return r;
    msg[0] = 0;
    for (k = 0; k < n; k++) {
        if (counts[k] == 0) continue;
        for (i = 0; i < g->n_nodes && !(g->nodes[i].check && g->nodes[i].live && g->nodes[i].check_slot == k); i++) {}
        if (i < g->n_nodes && used < sizeof msg)
            used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s: %lu of them", used ? "; " : "", g->nodes[i].check,
                                     (unsigned long)(uint32_t)counts[k]);
    }
    if (!msg[0]) return NN_OK;
    r = g->ctx->backend->fill(g->ctx, &g->checks, 0.0f, nn__dtype_bytes(NN_I32, g->n_checks));
    if (r != NN_OK) return r;
    return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: %s in the runs since the last read or finish (PyTorch raises on these)",
                    fn, msg);
}

static nn_result nn__tensor_read(nn_graph *g, nn_tensor t, void *data, size_t bytes) {
    nn__node *n = NULL;
    nn_result r = nn__user_buf(g, t, bytes, 0, "nn_tensor_read", &n);
    if (r != NN_OK) return r;
    if (!data) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_tensor_read: data is NULL");
    r = nn__report_checks(g, "nn_tensor_read");
    if (r != NN_OK) return r;
    if (nn__dtype_half(n->dtype)) return nn__half_read(g, n, (float *)data);
    return nn__buf_read(g->ctx, &n->buf, data, bytes);
}

static nn_result nn__tensor_fill(nn_graph *g, nn_tensor t, float value) {
    nn__node *n = NULL;
    nn_result r;
    if (!nn__is_tensor(g, t)) return nn__user_buf(g, t, 0, 1, "nn_tensor_fill", &n);
    r = nn__user_buf(g, t, (size_t)g->nodes[t.id].numel * 4, 1, "nn_tensor_fill", &n);
    if (r != NN_OK) return r;
    if (n->dtype == NN_I32) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_tensor_fill: the tensor is not float32");
    if (nn__dtype_half(n->dtype)) r = nn__half_write(g, n, NULL, value, "nn_tensor_fill");
    else r = g->ctx->backend->fill(g->ctx, &n->buf, value, nn__dtype_bytes(n->dtype, n->numel));
    if (r == NN_OK && n->op == NN__OP_INPUT) n->written = 1;
    return r;
}

NN_API nn_result nn_tensor_write(nn_graph *g, nn_tensor t, const void *data, size_t bytes) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_tensor_write", nn__tensor_write(nn__active(g), t, data, bytes));
}
NN_API nn_result nn_tensor_read(nn_graph *g, nn_tensor t, void *data, size_t bytes) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_tensor_read", nn__tensor_read(nn__active(g), t, data, bytes));
}
NN_API nn_result nn_tensor_fill(nn_graph *g, nn_tensor t, float value) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_tensor_fill", nn__tensor_fill(nn__active(g), t, value));
}


/* Inputs and parameters are storage, not computation: they never run. */
static nn_result nn__cpu_leaf(nn_graph *g, nn__node *n) {
    return nn__fail(g->ctx, NN_ERR_STATE, "%s: a leaf has no body", nn__op_names[n->op]);
}
static nn_result nn__launch_leaf(nn_graph *g, int id) {
    return nn__fail(g->ctx, NN_ERR_STATE, "%s: a leaf has no kernels", nn__op_names[g->nodes[id].op]);
}
