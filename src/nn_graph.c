/* The graph engine: contexts, building graphs of symbolic tensors, reverse-mode autograd,
   memory planning by liveness, and running compiled graphs on either backend. The op
   bodies are in nn_cpu.c (CPU) and kernels/ (OpenCL); nn_ops.c binds them to nodes. */

static const char *const nn__op_names[] = {
#define NN__X(e, s) s,
    NN__OPS(NN__X)
#undef NN__X
};

static nn_result nn__cpu_run(nn_graph *g, int id);
#if !defined(NN_NO_OPENCL)
static nn_result nn__cl_prepare(nn_graph *g, int id);
#endif

NN_API nn_shape nn_shape1(int64_t d0) {
    nn_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = 1;
    s.dim[0] = d0;
    return s;
}
NN_API nn_shape nn_shape2(int64_t d0, int64_t d1) {
    nn_shape s = nn_shape1(d0);
    s.ndim = 2;
    s.dim[1] = d1;
    return s;
}
NN_API nn_shape nn_shape3(int64_t d0, int64_t d1, int64_t d2) {
    nn_shape s = nn_shape2(d0, d1);
    s.ndim = 3;
    s.dim[2] = d2;
    return s;
}
NN_API nn_shape nn_shape4(int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    nn_shape s = nn_shape3(d0, d1, d2);
    s.ndim = 4;
    s.dim[3] = d3;
    return s;
}

NN_API const char *nn_result_string(nn_result r) {
    switch (r) {
    case NN_OK: return "ok";
    case NN_ERR_INVALID_ARGUMENT: return "invalid argument";
    case NN_ERR_SHAPE: return "shape mismatch";
    case NN_ERR_OUT_OF_MEMORY: return "out of memory";
    case NN_ERR_DEVICE: return "device error";
    case NN_ERR_BUILD: return "kernel build failed";
    case NN_ERR_IO: return "i/o error";
    case NN_ERR_STATE: return "invalid state";
    }
    return "unknown result";
}

/* ---- contexts ---- */

static char *nn__default_cache_dir(void) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char buf[1024];
    if (xdg && xdg[0]) snprintf(buf, sizeof buf, "%s/nn", xdg);
    else if (home && home[0]) snprintf(buf, sizeof buf, "%s/.cache/nn", home);
    else return NULL;
    return nn__strdup(buf);
}

NN_API nn_result nn_context_create(nn_context **out, const nn_context_desc *desc_in) {
    nn_context_desc desc;
    nn_context *ctx;
    const char *device, *cache, *kdir;
    nn_result r = NN_OK;
    if (!out) return NN_ERR_INVALID_ARGUMENT;
    *out = NULL;
    memset(&desc, 0, sizeof desc);
    if (desc_in) desc = *desc_in;
    ctx = (nn_context *)nn__calloc(1, sizeof *ctx);
    if (!ctx) return NN_ERR_OUT_OF_MEMORY;
    ctx->log = desc.log;
    ctx->log_user = desc.log_user;
    ctx->log_level = NN_LOG_INFO;
    if (desc.log_level) ctx->log_level = desc.log_level - 1;
    else if (getenv("NN_LOG")) {
        static const char *const levels[] = {"error", "warn", "info", "debug"};
        int k;
        for (k = 0; k < 4; k++)
            if (strcmp(getenv("NN_LOG"), levels[k]) == 0) ctx->log_level = k;
    }
    device = desc.device ? desc.device : getenv("NN_DEVICE");
    if (device && !device[0]) device = NULL;
    cache = desc.cache_dir ? desc.cache_dir : getenv("NN_CACHE_DIR");
    if (cache && strcmp(cache, "off") == 0) ctx->cache_dir = NULL;
    else ctx->cache_dir = (cache && cache[0]) ? nn__strdup(cache) : nn__default_cache_dir();
    kdir = desc.kernel_dir ? desc.kernel_dir : getenv("NN_KERNEL_DIR");
    if (kdir && kdir[0] && !(ctx->kernel_dir = nn__strdup(kdir))) r = NN_ERR_OUT_OF_MEMORY;
    strcpy(ctx->backend_name, "cpu");
    if (r == NN_OK && !(device && strcmp(device, "cpu") == 0)) {
#if !defined(NN_NO_OPENCL)
        cl_platform_id plats[NN__CL_MAX_DEVICES];
        cl_device_id devs[NN__CL_MAX_DEVICES];
        int n = nn__cl_enumerate(plats, devs, NN__CL_MAX_DEVICES);
        int pick = nn__cl_pick(device, plats, devs, n);
        if (pick >= 0) {
            r = nn__cl_open(ctx, plats[pick], devs[pick], desc.tuning);
            if (r == NN_OK) {
                ctx->opencl = 1;
                snprintf(ctx->backend_name, sizeof ctx->backend_name, "%s", ctx->cl.name);
            } else {
                nn__log(ctx, NN_LOG_ERROR, "%s", ctx->err);
            }
        } else if (device) {
            nn__log(ctx, NN_LOG_ERROR, "NN_DEVICE=%s: no such OpenCL device (%d found)", device, n);
            r = NN_ERR_INVALID_ARGUMENT;
        }
#else
        if (device) {
            nn__log(ctx, NN_LOG_ERROR, "NN_DEVICE=%s: built with NN_NO_OPENCL, only \"cpu\" exists", device);
            r = NN_ERR_INVALID_ARGUMENT;
        }
#endif
    }
    if (r == NN_OK && !ctx->opencl) {
        ctx->pool = nn__pool_create(desc.threads);
    }
    if (r != NN_OK) {
        nn_context_destroy(ctx);
        return r;
    }
    nn__log(ctx, NN_LOG_INFO, "backend: %s%s", ctx->opencl ? "OpenCL device " : "", ctx->backend_name);
    *out = ctx;
    return NN_OK;
}

NN_API void nn_context_destroy(nn_context *ctx) {
    if (!ctx) return;
#if !defined(NN_NO_OPENCL)
    if (ctx->opencl) nn__cl_close(ctx);
#endif
    nn__pool_destroy(ctx->pool);
    NN_FREE(ctx->cache_dir);
    NN_FREE(ctx->kernel_dir);
    NN_FREE(ctx);
}

NN_API const char *nn_last_error(const nn_context *ctx) { return ctx ? ctx->err : "no context"; }
NN_API const char *nn_backend_name(const nn_context *ctx) { return ctx ? ctx->backend_name : ""; }
NN_API int nn_backend_is_opencl(const nn_context *ctx) { return ctx ? ctx->opencl : 0; }
NN_API nn_stats nn_get_stats(const nn_context *ctx) {
    nn_stats s;
    memset(&s, 0, sizeof s);
    return ctx ? ctx->stats : s;
}
NN_API void nn_reset_stats(nn_context *ctx) {
    if (ctx) memset(&ctx->stats, 0, sizeof ctx->stats);
}
#if defined(NN_NO_OPENCL)
NN_API int nn_list_devices(nn_device_info *out, int max) {
    (void)out;
    (void)max;
    return 0;
}
#endif

/* ---- buffers, either backend ---- */

static void nn__buf_free(nn_context *ctx, nn__buf *b) {
    (void)ctx;
#if !defined(NN_NO_OPENCL)
    if (b->mem) clReleaseMemObject(b->mem);
#endif
    if (b->host_owned) NN_FREE(b->host);
    memset(b, 0, sizeof *b);
}

/* A buffer of its own, zero-filled when `zero` (the arena and parameters are written
   before they are read, and filling a large buffer costs start-up time). */
static nn_result nn__buf_alloc(nn_context *ctx, nn__buf *b, size_t bytes, int zero, const char *what) {
    memset(b, 0, sizeof *b);
#if !defined(NN_NO_OPENCL)
    if (ctx->opencl) {
        nn_result r = nn__cl_alloc(ctx, b, bytes, what);
        if (r != NN_OK || !zero) return r;
        return nn__cl_fill(ctx, b->mem, 0.0f, bytes ? bytes : 4);
    }
#endif
    (void)zero;
    b->bytes = bytes;
    b->host = (float *)nn__calloc(1, bytes ? bytes : 4);
    if (!b->host)
        return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %llu bytes", what, (unsigned long long)bytes);
    b->host_owned = 1;
    return NN_OK;
}

static nn_result nn__buf_write(nn_context *ctx, nn__buf *b, const void *data, size_t bytes) {
    ctx->stats.h2d_bytes += bytes;
    ctx->stats.h2d_transfers++;
#if !defined(NN_NO_OPENCL)
    if (ctx->opencl) {
        cl_int err = clEnqueueWriteBuffer(ctx->cl.queue, b->mem, CL_TRUE, 0, bytes, data, 0, NULL, NULL);
        if (err != CL_SUCCESS) return nn__fail(ctx, NN_ERR_DEVICE, "clEnqueueWriteBuffer: %s (%d)", nn__cl_errstr(err), err);
        return NN_OK;
    }
#endif
    memcpy(b->host, data, bytes);
    return NN_OK;
}

static nn_result nn__buf_read(nn_context *ctx, nn__buf *b, void *data, size_t bytes) {
    ctx->stats.d2h_bytes += bytes;
    ctx->stats.d2h_transfers++;
#if !defined(NN_NO_OPENCL)
    if (ctx->opencl) {
        cl_int err = clEnqueueReadBuffer(ctx->cl.queue, b->mem, CL_TRUE, 0, bytes, data, 0, NULL, NULL);
        if (err != CL_SUCCESS) return nn__fail(ctx, NN_ERR_DEVICE, "clEnqueueReadBuffer: %s (%d)", nn__cl_errstr(err), err);
        return NN_OK;
    }
#endif
    memcpy(data, b->host, bytes);
    return NN_OK;
}

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
    NN_FREE(ps);
}

NN_API nn_result nn_graph_create(nn_context *ctx, const nn_graph_desc *desc, nn_graph **out) {
    nn_graph *g;
    if (!out) return NN_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!ctx) return NN_ERR_INVALID_ARGUMENT;
    g = (nn_graph *)nn__calloc(1, sizeof *g);
    if (!g) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_create: out of memory");
    g->ctx = ctx;
    g->loss = -1;
    g->clip_node = -1;
    g->seed = 1;
    if (desc) {
        g->eval = desc->eval;
        if (desc->seed) g->seed = desc->seed;
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
    *out = g;
    return NN_OK;
}

static void nn__graph_release_compiled(nn_graph *g) {
    int i, k;
    for (i = 0; i < g->n_nodes; i++) {
        nn__node *n = &g->nodes[i];
        if (n->storage != NN__ST_PARAM) nn__buf_free(g->ctx, &n->buf);
        nn__buf_free(g->ctx, &n->scratch_buf);
        for (k = 0; k < n->n_aux; k++) nn__buf_free(g->ctx, &n->aux[k]);
    }
#if !defined(NN_NO_OPENCL)
    for (i = 0; i < g->n_launches; i++)
        if (g->launches[i].kernel) clReleaseKernel(g->launches[i].kernel);
    NN_FREE(g->launches);
    g->launches = NULL;
    g->n_launches = g->cap_launches = 0;
    if (g->one) clReleaseMemObject(g->one);
    g->one = NULL;
#endif
    nn__buf_free(g->ctx, &g->arena);
    NN_FREE(g->sched);
    g->sched = NULL;
}

NN_API void nn_graph_destroy(nn_graph *g) {
    int i;
    if (!g) return;
    nn__graph_release_compiled(g);
    nn__groups_free(g);
    nn__datasets_free(g);
    for (i = 0; i < g->n_nodes; i++) NN_FREE(g->nodes[i].name);
    NN_FREE(g->nodes);
    nn__params_release(g->params);
    NN_FREE(g);
}

NN_API nn_result nn_graph_status(const nn_graph *g) { return g ? g->status : NN_ERR_INVALID_ARGUMENT; }

static nn_tensor nn__tensor(int id) {
    nn_tensor t;
    t.id = id;
    return t;
}

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

/* 1 when every tensor is a usable node of g; else the op fails (quietly if an input had
   already failed, since that error is on record). */
static int nn__check(nn_graph *g, const char *op, int n, const nn_tensor *t) {
    int i;
    if (!g) return 0;
    if (g->compiled) {
        nn__op_fail(g, NN_ERR_STATE, "%s: the graph is already compiled", op);
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (t[i].id < 0) {
            if (g->status == NN_OK) nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: input %d is not a tensor", op, i);
            return 0;
        }
        if (t[i].id >= g->n_nodes) {
            nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: input %d is not a tensor of this graph", op, i);
            return 0;
        }
    }
    return 1;
}

static int nn__new_node(nn_graph *g, int op, nn_dtype dt, nn_shape shape, const int *in, int n_in) {
    nn__node *n = NULL;
    int i;
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
    return g->n_nodes++;
}

static nn__node *nn__n(nn_graph *g, nn_tensor t) { return &g->nodes[t.id]; }

static const char *nn__dtype_name(nn_dtype d) { return d == NN_I32 ? "int32" : "float32"; }

static int nn__shape_eq(const nn_shape *a, const nn_shape *b) {
    int i;
    if (a->ndim != b->ndim) return 0;
    for (i = 0; i < a->ndim; i++) if (a->dim[i] != b->dim[i]) return 0;
    return 1;
}

static int nn__check_shape(nn_graph *g, const char *op, nn_shape s) {
    int i;
    if (s.ndim < 1 || s.ndim > NN_MAX_DIMS) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: a shape needs 1 to %d dims, not %d", op, NN_MAX_DIMS, s.ndim);
        return 0;
    }
    for (i = 0; i < s.ndim; i++) {
        if (s.dim[i] < 1 || s.dim[i] > ((int64_t)1 << 40) || nn__numel(&s) > ((int64_t)1 << 42)) {
            char b[128];
            nn__shape_str(&s, b, sizeof b);
            nn__op_fail(g, NN_ERR_SHAPE, "%s: shape %s has a dim out of range", op, b);
            return 0;
        }
    }
    return 1;
}

static int nn__expect_f32(nn_graph *g, const char *op, nn_tensor t, const char *what) {
    if (nn__n(g, t)->dtype != NN_F32) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: %s must be float32, not %s", op, what, nn__dtype_name(nn__n(g, t)->dtype));
        return 0;
    }
    return 1;
}

NN_API nn_tensor nn_input(nn_graph *g, const char *name, nn_dtype dtype, nn_shape shape) {
    int id;
    if (!nn__check(g, "nn_input", 0, NULL)) return nn__tensor(-1);
    if (!nn__check_shape(g, "nn_input", shape)) return nn__tensor(-1);
    if (dtype != NN_F32 && dtype != NN_I32) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_input: unknown dtype %d", (int)dtype);
    id = nn__new_node(g, NN__OP_INPUT, dtype, shape, NULL, 0);
    if (id < 0) return nn__tensor(-1);
    g->nodes[id].name = nn__strdup(name ? name : "input");
    if (!g->nodes[id].name) return nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "nn_input: out of memory");
    return nn__tensor(id);
}

NN_API void nn_requires_grad(nn_graph *g, nn_tensor t) {
    if (nn__check(g, "nn_requires_grad", 1, &t)) nn__n(g, t)->requires_grad = 1;
}

NN_API void nn_output(nn_graph *g, nn_tensor t) {
    if (nn__check(g, "nn_output", 1, &t)) nn__n(g, t)->is_output = 1;
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
    switch (init.kind) {
    case NN_INIT_KAIMING_UNIFORM: gain = init.a ? init.a : sqrt(2.0); bound = gain * sqrt(3.0 / fan_in); break;
    case NN_INIT_KAIMING_NORMAL: gain = init.a ? init.a : sqrt(2.0); std = gain / sqrt(fan_in); break;
    case NN_INIT_XAVIER_UNIFORM: gain = init.a ? init.a : 1.0; bound = gain * sqrt(6.0 / (fan_in + fan_out)); break;
    case NN_INIT_XAVIER_NORMAL: gain = init.a ? init.a : 1.0; std = gain * sqrt(2.0 / (fan_in + fan_out)); break;
    default: break;
    }
    for (i = 0; i < n; i++) {
        switch (init.kind) {
        case NN_INIT_ZEROS: p[i] = 0.0f; break;
        case NN_INIT_CONSTANT: p[i] = init.a; break;
        case NN_INIT_UNIFORM: p[i] = init.a + (init.b - init.a) * nn__init_draw(seed, param, (uint64_t)i, 0, u, &cached); break;
        case NN_INIT_NORMAL: p[i] = init.a + init.b * nn__init_draw(seed, param, (uint64_t)i, 1, u, &cached); break;
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
    if (!nn__check_shape(g, fn, shape)) return nn__tensor(-1);
    ps = g->params;
    for (i = 0; i < ps->n; i++) {
        if (strcmp(ps->p[i].name, name) == 0) {
            char a[128], b[128];
            if (ps->p[i].buffer != buffer)
                return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: %s exists as a %s", fn, name,
                                   ps->p[i].buffer ? "buffer" : "trainable parameter");
            if (nn__shape_eq(&ps->p[i].shape, &shape)) {
                pi = i;
                break;
            }
            nn__shape_str(&ps->p[i].shape, a, sizeof a);
            nn__shape_str(&shape, b, sizeof b);
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: %s exists with shape %s, asked for %s", fn, name, a, b);
        }
    }
    for (i = 0; i < g->n_nodes && pi >= 0; i++) /* the same name twice in one graph: the same tensor */
        if (g->nodes[i].op == NN__OP_PARAM && g->nodes[i].param == pi) return nn__tensor(i);
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
        nn__init_fill(p->init, &shape, init, g->seed, ps->n);
        pi = ps->n++;
    }
    id = nn__new_node(g, NN__OP_PARAM, NN_F32, shape, NULL, 0);
    if (id < 0) return nn__tensor(-1);
    g->nodes[id].param = pi;
    g->nodes[id].storage = NN__ST_PARAM;
    g->nodes[id].name = nn__strdup(name);
    if (!g->nodes[id].name) return nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    return nn__tensor(id);
}

NN_API nn_tensor nn_param(nn_graph *g, const char *name, nn_shape shape, nn_init init) {
    return nn__store_entry(g, "nn_param", name, shape, init, 0);
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

static nn_tensor nn__op3(nn_graph *g, int op, nn_dtype dt, nn_shape s, int a, int b, int c) {
    int in[3];
    in[0] = a;
    in[1] = b;
    in[2] = c;
    return nn__tensor(nn__new_node(g, op, dt, s, in, 3));
}

NN_API nn_tensor nn_matmul(nn_graph *g, nn_tensor a, nn_tensor b, int trans_a, int trans_b) {
    nn_tensor in[2], t;
    nn__node *na, *nb;
    int64_t M, Ka, Kb, N;
    in[0] = a;
    in[1] = b;
    if (!nn__check(g, "nn_matmul", 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_matmul", a, "a") || !nn__expect_f32(g, "nn_matmul", b, "b")) return nn__tensor(-1);
    na = nn__n(g, a);
    nb = nn__n(g, b);
    if (na->shape.ndim != 2 || nb->shape.ndim != 2) {
        char sa[128], sb[128];
        nn__shape_str(&na->shape, sa, sizeof sa);
        nn__shape_str(&nb->shape, sb, sizeof sb);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: a %s and b %s must both be 2-D", sa, sb);
    }
    M = trans_a ? na->shape.dim[1] : na->shape.dim[0];
    Ka = trans_a ? na->shape.dim[0] : na->shape.dim[1];
    Kb = trans_b ? nb->shape.dim[1] : nb->shape.dim[0];
    N = trans_b ? nb->shape.dim[0] : nb->shape.dim[1];
    if (Ka != Kb) {
        char sa[128], sb[128];
        nn__shape_str(&na->shape, sa, sizeof sa);
        nn__shape_str(&nb->shape, sb, sizeof sb);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: inner dims differ: a %s%s and b %s%s", sa,
                           trans_a ? " (transposed)" : "", sb, trans_b ? " (transposed)" : "");
    }
    if (M > INT32_MAX || N > INT32_MAX || Ka > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: dims beyond 2^31 are not supported");
    t = nn__op2(g, NN__OP_MATMUL, NN_F32, nn_shape2(M, N), a.id, b.id);
    if (t.id >= 0) {
        g->nodes[t.id].i[0] = trans_a != 0;
        g->nodes[t.id].i[1] = trans_b != 0;
    }
    return t;
}

static nn_tensor nn__binary(nn_graph *g, int op, const char *opname, nn_tensor a, nn_tensor b) {
    nn_tensor in[2];
    nn__node *na, *nb;
    int k, fits;
    in[0] = a;
    in[1] = b;
    if (!nn__check(g, opname, 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, opname, a, "a") || !nn__expect_f32(g, opname, b, "b")) return nn__tensor(-1);
    na = nn__n(g, a);
    nb = nn__n(g, b);
    fits = nb->shape.ndim <= na->shape.ndim || nb->numel == 1;
    for (k = 1; fits && k <= nb->shape.ndim && nb->numel != 1; k++)
        fits = nb->shape.dim[nb->shape.ndim - k] == na->shape.dim[na->shape.ndim - k];
    if (!fits) {
        char sa[128], sb[128];
        nn__shape_str(&na->shape, sa, sizeof sa);
        nn__shape_str(&nb->shape, sb, sizeof sb);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: shapes a %s and b %s do not fit (b must match a's trailing dims)",
                           opname, sa, sb);
    }
    return nn__op2(g, op, NN_F32, na->shape, a.id, b.id);
}

NN_API nn_tensor nn_add(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_ADD, "nn_add", a, b); }
NN_API nn_tensor nn_sub(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_SUB, "nn_sub", a, b); }
NN_API nn_tensor nn_mul(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_MUL, "nn_mul", a, b); }

NN_API nn_tensor nn_scale(nn_graph *g, nn_tensor a, float s) {
    nn_tensor t;
    if (!nn__check(g, "nn_scale", 1, &a) || !nn__expect_f32(g, "nn_scale", a, "x")) return nn__tensor(-1);
    t = nn__op1(g, NN__OP_SCALE, NN_F32, nn__n(g, a)->shape, a.id);
    if (t.id >= 0) g->nodes[t.id].f[0] = s;
    return t;
}

static nn_tensor nn__activation(nn_graph *g, const char *opname, int fn, float alpha, nn_tensor x) {
    nn_tensor t;
    if (!nn__check(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    t = nn__op1(g, NN__OP_UNARY, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].i[0] = fn;
        g->nodes[t.id].f[0] = alpha;
    }
    return t;
}

NN_API nn_tensor nn_relu(nn_graph *g, nn_tensor x) { return nn__activation(g, "nn_relu", NN__U_RELU, 0.0f, x); }
NN_API nn_tensor nn_leaky_relu(nn_graph *g, nn_tensor x, float slope) { return nn__activation(g, "nn_leaky_relu", NN__U_LEAKY_RELU, slope, x); }
NN_API nn_tensor nn_sigmoid(nn_graph *g, nn_tensor x) { return nn__activation(g, "nn_sigmoid", NN__U_SIGMOID, 0.0f, x); }
NN_API nn_tensor nn_tanh(nn_graph *g, nn_tensor x) { return nn__activation(g, "nn_tanh", NN__U_TANH, 0.0f, x); }
NN_API nn_tensor nn_gelu(nn_graph *g, nn_tensor x) { return nn__activation(g, "nn_gelu", NN__U_GELU, 0.0f, x); }
NN_API nn_tensor nn_silu(nn_graph *g, nn_tensor x) { return nn__activation(g, "nn_silu", NN__U_SILU, 0.0f, x); }

static nn_tensor nn__rowwise(nn_graph *g, const char *opname, int op, nn_tensor x) {
    if (!nn__check(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    return nn__op1(g, op, NN_F32, nn__n(g, x)->shape, x.id);
}
NN_API nn_tensor nn_softmax(nn_graph *g, nn_tensor x) { return nn__rowwise(g, "nn_softmax", NN__OP_SOFTMAX, x); }
NN_API nn_tensor nn_log_softmax(nn_graph *g, nn_tensor x) { return nn__rowwise(g, "nn_log_softmax", NN__OP_LOG_SOFTMAX, x); }

static nn_tensor nn__sum_all(nn_graph *g, const char *opname, nn_tensor x, int mean) {
    nn_tensor t;
    if (!nn__check(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    t = nn__op1(g, NN__OP_SUM_ALL, NN_F32, nn_shape1(1), x.id);
    if (t.id >= 0) g->nodes[t.id].f[0] = mean ? (float)(1.0 / (double)g->nodes[x.id].numel) : 1.0f;
    return t;
}
NN_API nn_tensor nn_sum(nn_graph *g, nn_tensor x) { return nn__sum_all(g, "nn_sum", x, 0); }
NN_API nn_tensor nn_mean(nn_graph *g, nn_tensor x) { return nn__sum_all(g, "nn_mean", x, 1); }

/* logits [B, C] float32 with labels [B] int32 */
static int nn__check_logits_labels(nn_graph *g, const char *opname, nn_tensor logits, nn_tensor labels) {
    nn_tensor in[2];
    nn__node *a, *b;
    in[0] = logits;
    in[1] = labels;
    if (!nn__check(g, opname, 2, in)) return 0;
    a = nn__n(g, logits);
    b = nn__n(g, labels);
    if (a->dtype != NN_F32 || a->shape.ndim != 2 || b->dtype != NN_I32 || b->shape.ndim != 1 ||
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

NN_API nn_tensor nn_softmax_cross_entropy(nn_graph *g, nn_tensor logits, nn_tensor labels) {
    nn_tensor rows;
    if (!nn__check_logits_labels(g, "nn_softmax_cross_entropy", logits, labels)) return nn__tensor(-1);
    rows = nn__op2(g, NN__OP_XENT_ROWS, NN_F32, nn_shape1(nn__n(g, logits)->shape.dim[0]), logits.id, labels.id);
    return nn_mean(g, rows);
}

static int nn__check_same(nn_graph *g, const char *opname, nn_tensor a, nn_tensor b) {
    nn_tensor in[2];
    in[0] = a;
    in[1] = b;
    if (!nn__check(g, opname, 2, in)) return 0;
    if (!nn__expect_f32(g, opname, a, "the prediction") || !nn__expect_f32(g, opname, b, "the target")) return 0;
    if (!nn__shape_eq(&nn__n(g, a)->shape, &nn__n(g, b)->shape)) {
        char sa[128], sb[128];
        nn__shape_str(&nn__n(g, a)->shape, sa, sizeof sa);
        nn__shape_str(&nn__n(g, b)->shape, sb, sizeof sb);
        nn__op_fail(g, NN_ERR_SHAPE, "%s: prediction %s and target %s differ in shape", opname, sa, sb);
        return 0;
    }
    return 1;
}

NN_API nn_tensor nn_mse(nn_graph *g, nn_tensor pred, nn_tensor target) {
    nn_tensor d;
    if (!nn__check_same(g, "nn_mse", pred, target)) return nn__tensor(-1);
    d = nn_sub(g, pred, target);
    return nn_mean(g, nn_mul(g, d, d));
}

NN_API nn_tensor nn_bce_with_logits(nn_graph *g, nn_tensor logits, nn_tensor target) {
    if (!nn__check_same(g, "nn_bce_with_logits", logits, target)) return nn__tensor(-1);
    return nn_mean(g, nn__op2(g, NN__OP_BCE_LOGITS, NN_F32, nn__n(g, logits)->shape, logits.id, target.id));
}

NN_API nn_tensor nn_dropout(nn_graph *g, nn_tensor x, float p) {
    nn_tensor t;
    if (!nn__check(g, "nn_dropout", 1, &x) || !nn__expect_f32(g, "nn_dropout", x, "x")) return nn__tensor(-1);
    if (!(p >= 0.0f && p < 1.0f)) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_dropout: p = %g is outside [0, 1)", p);
    if (g->eval || p == 0.0f) return x;
    t = nn__op1(g, NN__OP_DROPOUT, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].f[0] = p;
        g->nodes[t.id].i[0] = t.id; /* the mask's key, shared with the backward op */
    }
    return t;
}

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

NN_API nn_tensor nn_argmax(nn_graph *g, nn_tensor x) {
    nn__node *n = NULL;
    if (!nn__check(g, "nn_argmax", 1, &x) || !nn__expect_f32(g, "nn_argmax", x, "x")) return nn__tensor(-1);
    n = nn__n(g, x);
    if (n->shape.ndim != 2) return nn__op_fail(g, NN_ERR_SHAPE, "nn_argmax: x must be 2-D [B, C]");
    return nn__op1(g, NN__OP_ARGMAX, NN_I32, nn_shape1(n->shape.dim[0]), x.id);
}

NN_API nn_tensor nn_accuracy(nn_graph *g, nn_tensor logits, nn_tensor labels) {
    if (!nn__check_logits_labels(g, "nn_accuracy", logits, labels)) return nn__tensor(-1);
    return nn_mean(g, nn__op2(g, NN__OP_CORRECT_ROWS, NN_F32, nn_shape1(nn__n(g, logits)->shape.dim[0]), logits.id, labels.id));
}

NN_API nn_tensor nn_accumulate(nn_graph *g, nn_tensor x) {
    nn_tensor t;
    if (!nn__check(g, "nn_accumulate", 1, &x) || !nn__expect_f32(g, "nn_accumulate", x, "x")) return nn__tensor(-1);
    t = nn__op1(g, NN__OP_ACCUMULATE, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) g->nodes[t.id].is_output = 1;
    return t;
}

NN_API nn_tensor nn_dense(nn_graph *g, nn_tensor x, int64_t out_features, const char *name) {
    char wn[256], bn[256];
    nn_tensor w, b;
    nn_init init;
    int64_t in_features;
    if (!nn__check(g, "nn_dense", 1, &x) || !nn__expect_f32(g, "nn_dense", x, "x")) return nn__tensor(-1);
    if (nn__n(g, x)->shape.ndim != 2) {
        char s[128];
        nn__shape_str(&nn__n(g, x)->shape, s, sizeof s);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_dense %s: x %s must be 2-D [B, in]", name ? name : "", s);
    }
    if (!name || !name[0] || strlen(name) > 200) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_dense: needs a name (at most 200 chars)");
    in_features = nn__n(g, x)->shape.dim[1];
    /* nn.Linear: kaiming_uniform(a=sqrt(5)) for the weight is U(+-1/sqrt(in)), the bias too */
    init.kind = NN_INIT_UNIFORM;
    init.a = (float)(-1.0 / sqrt((double)in_features));
    init.b = -init.a;
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    w = nn_param(g, wn, nn_shape2(out_features, in_features), init);
    b = nn_param(g, bn, nn_shape1(out_features), init);
    return nn_add(g, nn_matmul(g, x, w, 0, 1), b);
}

NN_API nn_tensor nn_conv2d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv2d_desc *desc) {
    nn_tensor in[3], t;
    nn__node *nx, *nw;
    nn_conv2d_desc d;
    int64_t OH, OW;
    int attr[7], k, has_bias = bias.id >= 0;
    char sx[128], sw[128];
    in[0] = x;
    in[1] = w;
    in[2] = bias;
    if (!nn__check(g, "nn_conv2d", has_bias ? 3 : 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_conv2d", x, "x") || !nn__expect_f32(g, "nn_conv2d", w, "w")) return nn__tensor(-1);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    attr[0] = d.stride_h ? d.stride_h : 1;
    attr[1] = d.stride_w ? d.stride_w : 1;
    attr[2] = d.pad_h;
    attr[3] = d.pad_w;
    attr[4] = d.dilation_h ? d.dilation_h : 1;
    attr[5] = d.dilation_w ? d.dilation_w : 1;
    attr[6] = d.groups ? d.groups : 1;
    nx = nn__n(g, x);
    nw = nn__n(g, w);
    nn__shape_str(&nx->shape, sx, sizeof sx);
    nn__shape_str(&nw->shape, sw, sizeof sw);
    for (k = 0; k < 7; k++)
        if (attr[k] < (k == 2 || k == 3 ? 0 : 1))
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv2d: stride, dilation and groups must be >= 1 and padding >= 0");
    if (nx->shape.ndim != 4 || nw->shape.ndim != 4)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d: x %s must be [N, C, H, W] and w %s [K, C/groups, KH, KW]", sx, sw);
    if (nx->shape.dim[1] % attr[6] || nw->shape.dim[0] % attr[6] || nw->shape.dim[1] * attr[6] != nx->shape.dim[1])
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d: x %s and w %s do not fit groups = %d", sx, sw, attr[6]);
    OH = (nx->shape.dim[2] + 2 * attr[2] - attr[4] * (nw->shape.dim[2] - 1) - 1) / attr[0] + 1;
    OW = (nx->shape.dim[3] + 2 * attr[3] - attr[5] * (nw->shape.dim[3] - 1) - 1) / attr[1] + 1;
    if (nx->shape.dim[2] + 2 * attr[2] < attr[4] * (nw->shape.dim[2] - 1) + 1 ||
        nx->shape.dim[3] + 2 * attr[3] < attr[5] * (nw->shape.dim[3] - 1) + 1)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d: the kernel w %s is larger than the padded input x %s", sw, sx);
    if (has_bias) {
        nn__node *nb = nn__n(g, bias);
        if (nb->dtype != NN_F32 || nb->shape.ndim != 1 || nb->shape.dim[0] != nw->shape.dim[0]) {
            char sb[128];
            nn__shape_str(&nb->shape, sb, sizeof sb);
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d: bias %s must be [%lld] float32", sb, (long long)nw->shape.dim[0]);
        }
    }
    t = has_bias ? nn__op3(g, NN__OP_CONV2D, NN_F32, nn_shape4(nx->shape.dim[0], nw->shape.dim[0], OH, OW), x.id, w.id, bias.id)
                 : nn__op2(g, NN__OP_CONV2D, NN_F32, nn_shape4(nx->shape.dim[0], nw->shape.dim[0], OH, OW), x.id, w.id);
    if (t.id >= 0) memcpy(g->nodes[t.id].i, attr, sizeof attr);
    return t;
}

NN_API nn_tensor nn_conv2d_layer(nn_graph *g, nn_tensor x, int64_t out_channels, int kh, int kw,
                                 const nn_conv2d_desc *desc, const char *name) {
    char wn[256], bn[256];
    nn_init init;
    int64_t cin, groups = desc && desc->groups ? desc->groups : 1;
    if (!nn__check(g, "nn_conv2d_layer", 1, &x)) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv2d_layer: needs a name (at most 200 chars)");
    if (nn__n(g, x)->shape.ndim != 4 || kh < 1 || kw < 1 || out_channels < 1 || groups < 1 ||
        nn__n(g, x)->shape.dim[1] % groups) {
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d_layer %s: x %s must be [N, C, H, W] with C divisible by groups, "
                           "kernel %dx%d", name, sx, kh, kw);
    }
    cin = nn__n(g, x)->shape.dim[1] / groups;
    init.kind = NN_INIT_UNIFORM; /* kaiming_uniform(a=sqrt(5)) is U(+-1/sqrt(fan_in)); so is the bias */
    init.a = (float)(-1.0 / sqrt((double)(cin * kh * kw)));
    init.b = -init.a;
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    return nn_conv2d(g, x, nn_param(g, wn, nn_shape4(out_channels, cin, kh, kw), init),
                     nn_param(g, bn, nn_shape1(out_channels), init), desc);
}

NN_API nn_tensor nn_conv1d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv2d_desc *desc) {
    nn_conv2d_desc d;
    nn_shape xs, ws;
    nn_tensor in[2], y;
    in[0] = x;
    in[1] = w;
    if (!nn__check(g, "nn_conv1d", 2, in)) return nn__tensor(-1);
    xs = nn__n(g, x)->shape;
    ws = nn__n(g, w)->shape;
    if (xs.ndim != 3 || ws.ndim != 3) {
        char a[128], b[128];
        nn__shape_str(&xs, a, sizeof a);
        nn__shape_str(&ws, b, sizeof b);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv1d: x %s must be [N, C, L] and w %s [K, C/groups, KL]", a, b);
    }
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    d.stride_h = d.dilation_h = 1;
    d.pad_h = 0;
    y = nn_conv2d(g, nn_reshape(g, x, nn_shape4(xs.dim[0], xs.dim[1], 1, xs.dim[2])),
                  nn_reshape(g, w, nn_shape4(ws.dim[0], ws.dim[1], 1, ws.dim[2])), bias, &d);
    if (y.id < 0) return y;
    return nn_reshape(g, y, nn_shape3(nn__n(g, y)->shape.dim[0], nn__n(g, y)->shape.dim[1], nn__n(g, y)->shape.dim[3]));
}

/* y [N, C, ...] = x + b[c]: a per-channel bias (its gradient is channel_sum) */
static nn_tensor nn__channel_bias(nn_graph *g, const char *op, nn_tensor x, nn_tensor b) {
    nn_tensor in[2];
    nn__node *nx, *nb;
    in[0] = x;
    in[1] = b;
    if (!nn__check(g, op, 2, in)) return nn__tensor(-1);
    nx = nn__n(g, x);
    nb = nn__n(g, b);
    if (nb->dtype != NN_F32 || nb->shape.ndim != 1 || nx->shape.ndim < 2 || nb->shape.dim[0] != nx->shape.dim[1]) {
        char sb[128], sx[128];
        nn__shape_str(&nb->shape, sb, sizeof sb);
        nn__shape_str(&nx->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: bias %s must be float32 [C] for an output %s", op, sb, sx);
    }
    return nn__op2(g, NN__OP_CHANNEL_BIAS, NN_F32, nx->shape, x.id, b.id);
}

NN_API nn_tensor nn_conv_transpose2d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv2d_desc *desc,
                                     int output_pad_h, int output_pad_w) {
    nn_tensor in[2], t;
    nn_conv2d_desc d;
    nn_shape xs, ws;
    int attr[7], k;
    int64_t OH, OW;
    char a[128], b[128];
    in[0] = x;
    in[1] = w;
    if (!nn__check(g, "nn_conv_transpose2d", 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_conv_transpose2d", x, "x") || !nn__expect_f32(g, "nn_conv_transpose2d", w, "w"))
        return nn__tensor(-1);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    attr[0] = d.stride_h ? d.stride_h : 1;
    attr[1] = d.stride_w ? d.stride_w : 1;
    attr[2] = d.pad_h;
    attr[3] = d.pad_w;
    attr[4] = d.dilation_h ? d.dilation_h : 1;
    attr[5] = d.dilation_w ? d.dilation_w : 1;
    attr[6] = d.groups ? d.groups : 1;
    xs = nn__n(g, x)->shape;
    ws = nn__n(g, w)->shape;
    nn__shape_str(&xs, a, sizeof a);
    nn__shape_str(&ws, b, sizeof b);
    for (k = 0; k < 7; k++)
        if (attr[k] < (k == 2 || k == 3 ? 0 : 1))
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv_transpose2d: stride, dilation and groups must be >= 1, padding >= 0");
    if (xs.ndim != 4 || ws.ndim != 4 || xs.dim[1] != ws.dim[0] || ws.dim[0] % attr[6])
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv_transpose2d: x %s must be [N, Cin, H, W] and w %s [Cin, Cout/groups, KH, KW] (groups %d)",
                           a, b, attr[6]);
    if (output_pad_h < 0 || output_pad_w < 0 || (output_pad_h >= attr[0] && output_pad_h >= attr[4]) ||
        (output_pad_w >= attr[1] && output_pad_w >= attr[5]))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv_transpose2d: output padding (%d, %d) must be below the stride or the dilation",
                           output_pad_h, output_pad_w);
    OH = (xs.dim[2] - 1) * attr[0] - 2 * attr[2] + attr[4] * (ws.dim[2] - 1) + output_pad_h + 1;
    OW = (xs.dim[3] - 1) * attr[1] - 2 * attr[3] + attr[5] * (ws.dim[3] - 1) + output_pad_w + 1;
    if (OH < 1 || OW < 1) return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv_transpose2d: x %s with w %s gives an empty output", a, b);
    /* conv2d's input gradient with w [K = Cin, C/G = Cout/G, KH, KW] and dy = x */
    t = nn__op2(g, NN__OP_CONV2D_DX, NN_F32, nn_shape4(xs.dim[0], ws.dim[1] * attr[6], OH, OW), w.id, x.id);
    if (t.id >= 0) memcpy(g->nodes[t.id].i, attr, sizeof attr);
    return bias.id >= 0 ? nn__channel_bias(g, "nn_conv_transpose2d", t, bias) : t;
}

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
    if (t.id >= 0) memcpy(g->nodes[t.id].i, perm, (size_t)nd * sizeof(int));
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
    if (t.id >= 0) g->nodes[t.id].i[0] = axis;
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
        g->nodes[t.id].i[0] = axis;
        g->nodes[t.id].i[1] = (int)start;
    }
    return t;
}

NN_API nn_tensor nn_slice(nn_graph *g, nn_tensor x, int axis, int64_t start, int64_t len) {
    nn_shape s;
    if (!nn__check(g, "nn_slice", 1, &x)) return nn__tensor(-1);
    if ((axis = nn__axis(g, "nn_slice", x, axis)) < 0) return nn__tensor(-1);
    s = nn__n(g, x)->shape;
    if (start < 0 || len < 1 || start + len > s.dim[axis]) {
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_slice: [%lld, %lld) is outside axis %d of x %s", (long long)start,
                           (long long)(start + len), axis, sx);
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
    for (k = 0; k < n; k++) total += sizes[k];
    if (nn__check(g, "nn_split", 1, &x) && (axis = nn__axis(g, "nn_split", x, axis)) >= 0 &&
        total != nn__n(g, x)->shape.dim[axis]) {
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        nn__op_fail(g, NN_ERR_SHAPE, "nn_split: sizes add up to %lld, axis %d of x %s is %lld", (long long)total, axis, sx,
                    (long long)nn__n(g, x)->shape.dim[axis]);
    }
    for (k = 0; k < n; k++) {
        out[k] = g->status == NN_OK ? nn_slice(g, x, axis, start, sizes[k]) : nn__tensor(-1);
        start += sizes[k];
    }
    return g->status;
}

NN_API nn_tensor nn_pad2d(nn_graph *g, nn_tensor x, int top, int bottom, int left, int right, nn_pad_mode mode) {
    nn_shape s;
    nn_tensor t;
    int nd;
    if (!nn__check(g, "nn_pad2d", 1, &x) || !nn__expect_f32(g, "nn_pad2d", x, "x")) return nn__tensor(-1);
    s = nn__n(g, x)->shape;
    nd = s.ndim;
    if (nd < 2 || top < 0 || bottom < 0 || left < 0 || right < 0 ||
        (mode == NN_PAD_REFLECT && (top >= s.dim[nd - 2] || bottom >= s.dim[nd - 2] || left >= s.dim[nd - 1] ||
                                    right >= s.dim[nd - 1]))) {
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_pad2d: pads (%d, %d, %d, %d) do not fit x %s%s", top, bottom, left, right, sx,
                           mode == NN_PAD_REFLECT ? " (reflection needs each pad below its dim)" : "");
    }
    s.dim[nd - 2] += top + bottom;
    s.dim[nd - 1] += left + right;
    t = nn__op1(g, NN__OP_PAD2D, NN_F32, s, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].i[0] = top;
        g->nodes[t.id].i[1] = left;
        g->nodes[t.id].i[2] = mode == NN_PAD_REFLECT;
    }
    return t;
}

NN_API nn_tensor nn_upsample2d(nn_graph *g, nn_tensor x, int scale_h, int scale_w, nn_upsample_mode mode) {
    nn_shape s;
    nn_tensor t;
    int nd;
    if (!nn__check(g, "nn_upsample2d", 1, &x) || !nn__expect_f32(g, "nn_upsample2d", x, "x")) return nn__tensor(-1);
    s = nn__n(g, x)->shape;
    nd = s.ndim;
    if (nd < 2 || scale_h < 1 || scale_w < 1 || scale_h > 64 || scale_w > 64)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_upsample2d: scales %d, %d (1 to 64) of a tensor with >= 2 dims",
                           scale_h, scale_w);
    s.dim[nd - 2] *= scale_h;
    s.dim[nd - 1] *= scale_w;
    t = nn__op1(g, NN__OP_UPSAMPLE2D, NN_F32, s, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].i[0] = scale_h;
        g->nodes[t.id].i[1] = scale_w;
        g->nodes[t.id].i[2] = mode == NN_UPSAMPLE_BILINEAR;
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

/* ---- normalisation (batch, layer, group, instance norm; src/nn_norm.c) ---- */

NN_API nn_tensor nn_buffer(nn_graph *g, const char *name, nn_shape shape, nn_init init) {
    return nn__store_entry(g, "nn_buffer", name, shape, init, 1);
}

/* x of a norm op: float32, at least min_ndim dims, indexable by int in the kernels. */
static int nn__norm_check_x(nn_graph *g, const char *fn, nn_tensor x, int min_ndim, const char *layout, char *sx, size_t n) {
    nn__node *nx;
    if (!nn__check(g, fn, 1, &x) || !nn__expect_f32(g, fn, x, "x")) return 0;
    nx = nn__n(g, x);
    nn__shape_str(&nx->shape, sx, n);
    if (nx->shape.ndim < min_ndim) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s must be %s", fn, sx, layout);
        return 0;
    }
    if (nx->numel > INT32_MAX) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s has more than 2^31 elements", fn, sx);
        return 0;
    }
    return 1;
}

/* An optional tensor of a norm op (gamma, beta, a running statistic): absent (id < 0) or
   float32 of shape want. */
static int nn__norm_check_vec(nn_graph *g, const char *fn, nn_tensor t, const char *what, const nn_shape *want, const char *sx) {
    nn__node *nt;
    char st[128], sw[128];
    if (t.id < 0) return 1;
    if (!nn__check(g, fn, 1, &t)) return 0;
    nt = nn__n(g, t);
    if (nt->dtype == NN_F32 && nn__shape_eq(&nt->shape, want)) return 1;
    nn__shape_str(&nt->shape, st, sizeof st);
    nn__shape_str(want, sw, sizeof sw);
    nn__op_fail(g, NN_ERR_SHAPE, "%s: %s %s %s does not fit x %s: it must be %s float32", fn, what, st,
                nn__dtype_name(nt->dtype), sx, sw);
    return 0;
}

/* Sets a norm node's attributes: geometry attr[5] = A, C, S, G, per_channel, then the
   flags i[5..7] and eps, momentum. i holds 8 ints (a node's first 8). */
static nn_tensor nn__norm_attrs(nn_graph *g, nn_tensor t, const int *i, const float *f) {
    if (t.id < 0) return t;
    memcpy(g->nodes[t.id].i, i, 8 * sizeof(int));
    memcpy(g->nodes[t.id].f, f, sizeof g->nodes[t.id].f);
    return t;
}

/* y = normalise(x) by stats [2, R] (computed from x unless const_stats) * gamma + beta. */
static nn_tensor nn__norm_apply(nn_graph *g, nn_tensor x, int stats, nn_tensor gamma, nn_tensor beta, int *i, float *f,
                                int const_stats) {
    int in[4], n_in = 0;
    if (stats < 0) return nn__tensor(-1);
    in[n_in++] = x.id;
    in[n_in++] = stats;
    if (gamma.id >= 0) in[n_in++] = gamma.id;
    if (beta.id >= 0) in[n_in++] = beta.id;
    i[5] = gamma.id >= 0;
    i[6] = beta.id >= 0;
    i[7] = const_stats;
    return nn__norm_attrs(g, nn__tensor(nn__new_node(g, NN__OP_NORM_FORWARD, NN_F32, nn__n(g, x)->shape, in, n_in)), i, f);
}

/* stats [2, R] of x: R groups (channels for batch norm) */
static int nn__norm_stats_node(nn_graph *g, nn_tensor x, const int *i, const float *f) {
    int64_t R = i[4] ? i[1] : (int64_t)i[0] * i[3];
    return nn__norm_attrs(g, nn__op1(g, NN__OP_NORM_STATS, NN_F32, nn_shape2(2, R), x.id), i, f).id;
}

/* Group norm, and instance norm (instance: groups = C, x with spatial dims); x [N, C, ...] */
static nn_tensor nn__group_norm(nn_graph *g, const char *fn, nn_tensor x, nn_tensor gamma, nn_tensor beta, int groups,
                                float eps, int instance) {
    char sx[128];
    nn__node *nx;
    nn_shape c;
    int i[8], k;
    float f[4];
    if (!nn__norm_check_x(g, fn, x, instance ? 3 : 2, instance ? "[N, C, spatial...]" : "[N, C, ...]", sx, sizeof sx))
        return nn__tensor(-1);
    nx = nn__n(g, x);
    if (instance) groups = (int)nx->shape.dim[1];
    if (groups < 1 || nx->shape.dim[1] % groups)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: groups = %d must be >= 1 and divide the %lld channels of x %s", fn, groups,
                           (long long)nx->shape.dim[1], sx);
    if (!(eps >= 0.0f)) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: eps %g is not >= 0", fn, eps);
    c = nn_shape1(nx->shape.dim[1]);
    if (!nn__norm_check_vec(g, fn, gamma, "gamma", &c, sx) || !nn__norm_check_vec(g, fn, beta, "beta", &c, sx))
        return nn__tensor(-1);
    memset(i, 0, sizeof i);
    memset(f, 0, sizeof f);
    i[0] = (int)nx->shape.dim[0];
    i[1] = (int)nx->shape.dim[1];
    i[2] = 1;
    for (k = 2; k < nx->shape.ndim; k++) i[2] *= (int)nx->shape.dim[k];
    i[3] = groups;
    f[0] = eps;
    return nn__norm_apply(g, x, nn__norm_stats_node(g, x, i, f), gamma, beta, i, f, 0);
}

NN_API nn_tensor nn_group_norm(nn_graph *g, nn_tensor x, nn_tensor gamma, nn_tensor beta, int groups, float eps) {
    return nn__group_norm(g, "nn_group_norm", x, gamma, beta, groups, eps, 0);
}

NN_API nn_tensor nn_instance_norm(nn_graph *g, nn_tensor x, nn_tensor gamma, nn_tensor beta, float eps) {
    return nn__group_norm(g, "nn_instance_norm", x, gamma, beta, 0, eps, 1);
}

/* Layer norm is group norm of x viewed as [rows, features, 1] with one group. */
NN_API nn_tensor nn_layer_norm(nn_graph *g, nn_tensor x, nn_tensor gamma, nn_tensor beta, int n_norm_dims, float eps) {
    char sx[128];
    nn__node *nx;
    nn_shape tail;
    int i[8], k;
    float f[4];
    if (!nn__norm_check_x(g, "nn_layer_norm", x, 1, "at least 1-D", sx, sizeof sx)) return nn__tensor(-1);
    nx = nn__n(g, x);
    if (n_norm_dims < 1 || n_norm_dims > nx->shape.ndim)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_layer_norm: n_norm_dims %d is not in 1..%d for x %s", n_norm_dims,
                           nx->shape.ndim, sx);
    if (!(eps >= 0.0f)) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_layer_norm: eps %g is not >= 0", eps);
    memset(&tail, 0, sizeof tail);
    tail.ndim = n_norm_dims;
    for (k = 0; k < n_norm_dims; k++) tail.dim[k] = nx->shape.dim[nx->shape.ndim - n_norm_dims + k];
    if (!nn__norm_check_vec(g, "nn_layer_norm", gamma, "gamma", &tail, sx) ||
        !nn__norm_check_vec(g, "nn_layer_norm", beta, "beta", &tail, sx))
        return nn__tensor(-1);
    memset(i, 0, sizeof i);
    memset(f, 0, sizeof f);
    i[1] = (int)nn__numel(&tail);
    i[0] = (int)(nx->numel / i[1]);
    i[2] = i[3] = 1;
    f[0] = eps;
    return nn__norm_apply(g, x, nn__norm_stats_node(g, x, i, f), gamma, beta, i, f, 0);
}

NN_API nn_tensor nn_batch_norm(nn_graph *g, nn_tensor x, nn_tensor gamma, nn_tensor beta, const nn_batch_norm_desc *desc) {
    nn_batch_norm_desc d;
    char sx[128];
    nn__node *nx;
    nn_shape c;
    int i[8], k, stats, in[3];
    float f[4];
    if (!nn__norm_check_x(g, "nn_batch_norm", x, 2, "[N, C, ...]", sx, sizeof sx)) return nn__tensor(-1);
    nx = nn__n(g, x);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (d.momentum == 0.0f) d.momentum = 0.1f;
    if (d.eps == 0.0f) d.eps = 1e-5f;
    if (!(d.momentum > 0.0f && d.momentum <= 1.0f) || !(d.eps > 0.0f))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_batch_norm: momentum %g is not in (0, 1] or eps %g is not > 0",
                           d.momentum, d.eps);
    c = nn_shape1(nx->shape.dim[1]);
    if (!nn__norm_check_vec(g, "nn_batch_norm", gamma, "gamma", &c, sx) ||
        !nn__norm_check_vec(g, "nn_batch_norm", beta, "beta", &c, sx))
        return nn__tensor(-1);
    if (d.has_running_stats) {
        if (d.running_mean.id < 0 || d.running_var.id < 0)
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_batch_norm: has_running_stats without running_mean and running_var");
        if (!nn__norm_check_vec(g, "nn_batch_norm", d.running_mean, "running_mean", &c, sx) ||
            !nn__norm_check_vec(g, "nn_batch_norm", d.running_var, "running_var", &c, sx))
            return nn__tensor(-1);
    }
    memset(i, 0, sizeof i);
    memset(f, 0, sizeof f);
    i[0] = (int)nx->shape.dim[0];
    i[1] = (int)nx->shape.dim[1];
    i[2] = 1;
    for (k = 2; k < nx->shape.ndim; k++) i[2] *= (int)nx->shape.dim[k];
    i[3] = i[4] = 1;
    f[0] = d.eps;
    f[1] = d.momentum;
    in[0] = d.running_mean.id;
    in[1] = d.running_var.id;
    if (g->eval && d.has_running_stats) { /* normalise with the running statistics */
        stats = nn__norm_attrs(g, nn__tensor(nn__new_node(g, NN__OP_BN_PACK, NN_F32, nn_shape2(2, i[1]), in, 2)), i, f).id;
        return nn__norm_apply(g, x, stats, gamma, beta, i, f, 1);
    }
    if ((int64_t)i[0] * i[2] < 2) /* PyTorch refuses too: the variance of one value */
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_batch_norm: x %s has 1 value per channel; batch statistics need more", sx);
    stats = nn__norm_stats_node(g, x, i, f);
    if (stats >= 0 && !g->eval && d.has_running_stats) { /* a root that updates the buffers in place */
        nn_shape none;
        int u;
        memset(&none, 0, sizeof none);
        in[2] = stats;
        u = nn__norm_attrs(g, nn__tensor(nn__new_node(g, NN__OP_BN_RUNNING, NN_F32, none, in, 3)), i, f).id;
        if (u < 0) return nn__tensor(-1);
        g->nodes[u].numel = 0;
        g->nodes[u].is_output = 1;
    }
    return nn__norm_apply(g, x, stats, gamma, beta, i, f, 0);
}

/* PyTorch's BatchNorm module: NAME.weight, NAME.bias and the running-statistics buffers. */
static nn_tensor nn__batch_norm_layer(nn_graph *g, nn_tensor x, const char *name, const char *fn, int lo, int hi,
                                      const char *layout) {
    char nm[4][256], sx[128];
    static const char *const suffix[4] = {"weight", "bias", "running_mean", "running_var"};
    nn_batch_norm_desc d;
    nn_tensor t[4];
    nn_init init;
    nn_shape c;
    int k;
    if (!nn__norm_check_x(g, fn, x, lo, layout, sx, sizeof sx)) return nn__tensor(-1);
    if (nn__n(g, x)->shape.ndim > hi) return nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s must be %s", fn, sx, layout);
    if (!name || !name[0] || strlen(name) > 200) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a name (at most 200 chars)", fn);
    c = nn_shape1(nn__n(g, x)->shape.dim[1]);
    for (k = 0; k < 4; k++) {
        init.kind = (k == 0 || k == 3) ? NN_INIT_CONSTANT : NN_INIT_ZEROS;
        init.a = 1.0f;
        init.b = 0.0f;
        snprintf(nm[k], sizeof nm[k], "%s.%s", name, suffix[k]);
        t[k] = k < 2 ? nn_param(g, nm[k], c, init) : nn_buffer(g, nm[k], c, init);
        if (t[k].id < 0) return nn__tensor(-1);
    }
    memset(&d, 0, sizeof d);
    d.has_running_stats = 1;
    d.running_mean = t[2];
    d.running_var = t[3];
    return nn_batch_norm(g, x, t[0], t[1], &d);
}

NN_API nn_tensor nn_batch_norm2d_layer(nn_graph *g, nn_tensor x, const char *name) {
    return nn__batch_norm_layer(g, x, name, "nn_batch_norm2d_layer", 4, 4, "[N, C, H, W]");
}

NN_API nn_tensor nn_batch_norm1d_layer(nn_graph *g, nn_tensor x, const char *name) {
    return nn__batch_norm_layer(g, x, name, "nn_batch_norm1d_layer", 2, 3, "[N, C] or [N, C, L]");
}

/* ---- pooling ---- */

/* PyTorch's pooling_output_shape: floor (or ceil) division, and in ceil mode a last window
   that would start in the right padding is dropped. Below 1: the window does not fit. */
static int64_t nn__pool_out(int64_t n, int k, int s, int p, int d, int ceil_mode) {
    int64_t span = n + 2 * (int64_t)p - (int64_t)d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t o = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= n + p) o--;
    return o;
}

/* "3x2" (h x w) for 2-D pooling, "2" for 1-D, in messages */
static const char *nn__pool_pair(char *buf, size_t n, int dims, int h, int w) {
    if (dims == 1) snprintf(buf, n, "%d", w);
    else snprintf(buf, n, "%dx%d", h, w);
    return buf;
}

/* x as a pooling input: float32 [N, C, H, W] (dims 2) or [N, C, L] (dims 1); NULL on error. */
static nn__node *nn__pool_input(nn_graph *g, const char *opname, nn_tensor x, int dims) {
    char sx[128];
    if (!nn__check(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return NULL;
    nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
    if (nn__n(g, x)->shape.ndim != dims + 2) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s must be %s", opname, sx, dims == 2 ? "[N, C, H, W]" : "[N, C, L]");
        return NULL;
    }
    if (nn__n(g, x)->numel > INT32_MAX) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s has more than 2^31 elements", opname, sx);
        return NULL;
    }
    return nn__n(g, x);
}

/* A pooling node. attr (node->i): kh, kw, sh, sw, ph, pw, then dh, dw for max pooling or
   exclude_pad, adaptive for average pooling (which has no dilation). 1-D pooling is 2-D
   pooling with H = 1 on the [N, C, L] tensor itself: kh = sh = 1, ph = 0. */
static nn_tensor nn__pooling_node(nn_graph *g, const char *opname, int op, nn_tensor x, int dims, const int *attr, int ceil_mode) {
    char sx[128], k[32], s[32], p[32], d[32];
    nn__node *nx = nn__pool_input(g, opname, x, dims);
    int is_max = op == NN__OP_MAXPOOL2D, dh = is_max ? attr[6] : 1, dw = is_max ? attr[7] : 1;
    int64_t H, W, OH, OW;
    nn_shape out;
    nn_tensor t;
    if (!nx) return nn__tensor(-1);
    nn__shape_str(&nx->shape, sx, sizeof sx);
    nn__pool_pair(k, sizeof k, dims, attr[0], attr[1]);
    nn__pool_pair(s, sizeof s, dims, attr[2], attr[3]);
    nn__pool_pair(p, sizeof p, dims, attr[4], attr[5]);
    nn__pool_pair(d, sizeof d, dims, dh, dw);
    if (attr[0] < 1 || attr[1] < 1 || attr[2] < 1 || attr[3] < 1 || attr[4] < 0 || attr[5] < 0 || dh < 1 || dw < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: kernel %s, stride %s%s%s must be >= 1 and padding %s >= 0",
                           opname, k, s, is_max ? " and dilation " : "", is_max ? d : "", p);
    if (attr[4] > attr[0] / 2 || attr[5] > attr[1] / 2)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: padding %s is more than half the kernel %s (x %s)", opname,
                           p, k, sx);
    H = dims == 2 ? nx->shape.dim[2] : 1;
    W = nx->shape.dim[dims + 1];
    OH = nn__pool_out(H, attr[0], attr[2], attr[4], dh, ceil_mode);
    OW = nn__pool_out(W, attr[1], attr[3], attr[5], dw, ceil_mode);
    if (OH < 1 || OW < 1)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: the window (kernel %s%s%s) is larger than the padded input x %s (padding %s)",
                           opname, k, is_max ? ", dilation " : "", is_max ? d : "", sx, p);
    out = nx->shape;
    if (dims == 2) out.dim[2] = OH;
    out.dim[dims + 1] = OW;
    if (nn__numel(&out) > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: the output of x %s has more than 2^31 elements", opname, sx);
    t = nn__op1(g, op, NN_F32, out, x.id);
    if (t.id >= 0) memcpy(g->nodes[t.id].i, attr, 8 * sizeof(int));
    return t;
}

static nn_tensor nn__pooling2d(nn_graph *g, const char *opname, int op, nn_tensor x, const nn_pool2d_desc *d) {
    int attr[8];
    if (!nn__check(g, opname, 1, &x)) return nn__tensor(-1);
    if (!d) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a desc with the kernel size", opname);
    attr[0] = d->kernel_h;
    attr[1] = d->kernel_w;
    attr[2] = d->stride_h ? d->stride_h : d->kernel_h;
    attr[3] = d->stride_w ? d->stride_w : d->kernel_w;
    attr[4] = d->pad_h;
    attr[5] = d->pad_w;
    if (op == NN__OP_MAXPOOL2D) {
        attr[6] = d->dilation_h ? d->dilation_h : 1;
        attr[7] = d->dilation_w ? d->dilation_w : 1;
    } else {
        if (d->dilation_h > 1 || d->dilation_w > 1 || d->dilation_h < 0 || d->dilation_w < 0)
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: dilation %dx%d: average pooling has no dilation", opname,
                               d->dilation_h, d->dilation_w);
        attr[6] = d->exclude_pad != 0;
        attr[7] = 0;
    }
    return nn__pooling_node(g, opname, op, x, 2, attr, d->ceil_mode != 0);
}

static nn_tensor nn__pooling1d(nn_graph *g, const char *opname, int op, nn_tensor x, const nn_pool1d_desc *d) {
    int attr[8];
    if (!nn__check(g, opname, 1, &x)) return nn__tensor(-1);
    if (!d) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a desc with the kernel size", opname);
    if (op != NN__OP_MAXPOOL2D && (d->dilation > 1 || d->dilation < 0))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: dilation %d: average pooling has no dilation", opname, d->dilation);
    attr[0] = 1;
    attr[1] = d->kernel;
    attr[2] = 1;
    attr[3] = d->stride ? d->stride : d->kernel;
    attr[4] = 0;
    attr[5] = d->pad;
    attr[6] = op == NN__OP_MAXPOOL2D ? 1 : d->exclude_pad != 0;
    attr[7] = op == NN__OP_MAXPOOL2D ? (d->dilation ? d->dilation : 1) : 0;
    return nn__pooling_node(g, opname, op, x, 1, attr, d->ceil_mode != 0);
}

NN_API nn_tensor nn_max_pool2d(nn_graph *g, nn_tensor x, const nn_pool2d_desc *desc) {
    return nn__pooling2d(g, "nn_max_pool2d", NN__OP_MAXPOOL2D, x, desc);
}
NN_API nn_tensor nn_avg_pool2d(nn_graph *g, nn_tensor x, const nn_pool2d_desc *desc) {
    return nn__pooling2d(g, "nn_avg_pool2d", NN__OP_AVGPOOL2D, x, desc);
}
NN_API nn_tensor nn_max_pool1d(nn_graph *g, nn_tensor x, const nn_pool1d_desc *desc) {
    return nn__pooling1d(g, "nn_max_pool1d", NN__OP_MAXPOOL2D, x, desc);
}
NN_API nn_tensor nn_avg_pool1d(nn_graph *g, nn_tensor x, const nn_pool1d_desc *desc) {
    return nn__pooling1d(g, "nn_avg_pool1d", NN__OP_AVGPOOL2D, x, desc);
}

/* One window over the whole plane. */
static nn_tensor nn__global_pool(nn_graph *g, const char *opname, int op, nn_tensor x) {
    nn__node *nx = nn__pool_input(g, opname, x, 2);
    int attr[8];
    if (!nx) return nn__tensor(-1);
    attr[0] = attr[2] = (int)nx->shape.dim[2];
    attr[1] = attr[3] = (int)nx->shape.dim[3];
    attr[4] = attr[5] = 0;
    attr[6] = op == NN__OP_MAXPOOL2D; /* dilation 1, or exclude_pad 0 */
    attr[7] = op == NN__OP_MAXPOOL2D;
    return nn__pooling_node(g, opname, op, x, 2, attr, 0);
}
NN_API nn_tensor nn_global_avg_pool2d(nn_graph *g, nn_tensor x) { return nn__global_pool(g, "nn_global_avg_pool2d", NN__OP_AVGPOOL2D, x); }
NN_API nn_tensor nn_global_max_pool2d(nn_graph *g, nn_tensor x) { return nn__global_pool(g, "nn_global_max_pool2d", NN__OP_MAXPOOL2D, x); }

NN_API nn_tensor nn_adaptive_avg_pool2d(nn_graph *g, nn_tensor x, int64_t oh, int64_t ow) {
    nn__node *nx = nn__pool_input(g, "nn_adaptive_avg_pool2d", x, 2);
    static const int attr[8] = {1, 1, 1, 1, 0, 0, 0, 1}; /* adaptive: the bins replace kernel and stride */
    nn_shape out;
    nn_tensor t;
    if (!nx) return nn__tensor(-1);
    out = nn_shape4(nx->shape.dim[0], nx->shape.dim[1], oh, ow);
    if (oh < 1 || ow < 1 || nn__numel(&out) > INT32_MAX) {
        char sx[128];
        nn__shape_str(&nx->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_adaptive_avg_pool2d: output %lldx%lld for x %s must be >= 1x1 and below 2^31 elements",
                           (long long)oh, (long long)ow, sx);
    }
    t = nn__op1(g, NN__OP_AVGPOOL2D, NN_F32, out, x.id);
    if (t.id >= 0) memcpy(g->nodes[t.id].i, attr, sizeof attr);
    return t;
}

/* ---- losses with options (nn_loss_desc; bodies in nn_loss.c) ---- */

/* An option's value: PyTorch's default for 0, an exact 0 for NN_LOSS_ZERO (-0.0f). */
static float nn__loss_opt(float v, float dflt) { return v == 0.0f ? (signbit(v) ? 0.0f : dflt) : v; }

static int nn__loss_desc_ok(nn_graph *g, const char *opname, const nn_loss_desc *d, int batchmean_ok) {
    if ((int)d->reduction < 0 || (int)d->reduction > NN_REDUCTION_BATCHMEAN ||
        (d->reduction == NN_REDUCTION_BATCHMEAN && !batchmean_ok)) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: reduction %d is not one this loss takes", opname, (int)d->reduction);
        return 0;
    }
    return 1;
}

/* Per-element or per-row losses l, reduced as desc asks. */
static nn_tensor nn__reduce_loss(nn_graph *g, nn_tensor l, const nn_loss_desc *d) {
    nn_tensor t;
    if (l.id < 0 || d->reduction == NN_REDUCTION_NONE) return l;
    t = nn__op1(g, NN__OP_SUM_ALL, NN_F32, nn_shape1(1), l.id);
    if (t.id >= 0)
        g->nodes[t.id].f[0] = d->reduction == NN_REDUCTION_SUM ? 1.0f
                              : (float)(1.0 / (double)(d->reduction == NN_REDUCTION_BATCHMEAN ? g->nodes[l.id].shape.dim[0]
                                                                                                 : g->nodes[l.id].numel));
    return t;
}

static nn_tensor nn__loss_ew(nn_graph *g, const char *opname, int kind, nn_tensor x, nn_tensor t, const nn_loss_desc *desc) {
    nn_loss_desc d;
    nn_tensor l;
    nn__node *n;
    float a = 0.0f, b = 0.0f;
    if (desc) d = *desc;
    else memset(&d, 0, sizeof d);
    if (!nn__check_same(g, opname, x, t) || !nn__loss_desc_ok(g, opname, &d, kind == NN__L_KL)) return nn__tensor(-1);
    switch (kind) {
    case NN__L_HUBER: a = nn__loss_opt(d.delta, 1.0f); break;
    case NN__L_SMOOTH_L1: a = nn__loss_opt(d.delta, 1.0f); break;
    case NN__L_QUANTILE: a = nn__loss_opt(d.tau, 0.5f); break;
    case NN__L_HINGE: case NN__L_SQ_HINGE: a = nn__loss_opt(d.margin, 1.0f); break;
    case NN__L_FOCAL: a = nn__loss_opt(d.alpha, 0.25f); b = nn__loss_opt(d.gamma, 2.0f); break;
    default: break;
    }
    if ((kind == NN__L_HUBER && !(a > 0.0f)) || (kind == NN__L_SMOOTH_L1 && !(a >= 0.0f)) ||
        (kind == NN__L_QUANTILE && !(a >= 0.0f && a <= 1.0f)) || (kind == NN__L_FOCAL && !(b >= 0.0f)))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: option %g is out of range", opname, kind == NN__L_FOCAL ? b : a);
    if (d.has_pos_weight) {
        nn_tensor pw = d.pos_weight;
        nn__node *nx, *np;
        int k, fits;
        if (kind != NN__L_BCE_LOGITS)
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: pos_weight is for nn_bce_with_logits_loss", opname);
        if (!nn__check(g, opname, 1, &pw) || !nn__expect_f32(g, opname, pw, "pos_weight")) return nn__tensor(-1);
        nx = nn__n(g, x);
        np = nn__n(g, pw);
        fits = np->shape.ndim <= nx->shape.ndim;
        for (k = 1; fits && k <= np->shape.ndim; k++) fits = np->shape.dim[np->shape.ndim - k] == nx->shape.dim[nx->shape.ndim - k];
        if (!fits) {
            char sa[128], sb[128];
            nn__shape_str(&nx->shape, sa, sizeof sa);
            nn__shape_str(&np->shape, sb, sizeof sb);
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: pos_weight %s must match the trailing dims of logits %s", opname, sb, sa);
        }
        l = nn__op3(g, NN__OP_LOSS_EW, NN_F32, nn__n(g, x)->shape, x.id, t.id, pw.id);
    } else {
        l = nn__op2(g, NN__OP_LOSS_EW, NN_F32, nn__n(g, x)->shape, x.id, t.id);
    }
    if (l.id < 0) return l;
    n = &g->nodes[l.id];
    n->i[0] = kind;
    n->i[1] = d.has_pos_weight != 0;
    n->i[2] = d.log_target != 0;
    n->f[0] = a;
    n->f[1] = b;
    if (d.has_weight) {
        if (!nn__check(g, opname, 1, &d.weight)) return nn__tensor(-1);
        l = nn__binary(g, NN__OP_MUL, opname, l, d.weight);
    }
    return nn__reduce_loss(g, l, &d);
}

NN_API nn_tensor nn_mse_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_mse_loss", NN__L_MSE, p, t, d); }
NN_API nn_tensor nn_l1_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_l1_loss", NN__L_L1, p, t, d); }
NN_API nn_tensor nn_huber_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_huber_loss", NN__L_HUBER, p, t, d); }
NN_API nn_tensor nn_smooth_l1_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_smooth_l1_loss", NN__L_SMOOTH_L1, p, t, d); }
NN_API nn_tensor nn_log_cosh_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_log_cosh_loss", NN__L_LOG_COSH, p, t, d); }
NN_API nn_tensor nn_quantile_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_quantile_loss", NN__L_QUANTILE, p, t, d); }
NN_API nn_tensor nn_hinge_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_hinge_loss", NN__L_HINGE, p, t, d); }
NN_API nn_tensor nn_squared_hinge_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_squared_hinge_loss", NN__L_SQ_HINGE, p, t, d); }
NN_API nn_tensor nn_bce_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_bce_loss", NN__L_BCE, p, t, d); }
NN_API nn_tensor nn_bce_with_logits_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_bce_with_logits_loss", NN__L_BCE_LOGITS, p, t, d); }
NN_API nn_tensor nn_sigmoid_focal_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_sigmoid_focal_loss", NN__L_FOCAL, p, t, d); }
NN_API nn_tensor nn_kl_div_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) { return nn__loss_ew(g, "nn_kl_div_loss", NN__L_KL, p, t, d); }

static nn_tensor nn__ce_loss(nn_graph *g, const char *opname, int log_input, nn_tensor x, nn_tensor labels, const nn_loss_desc *desc) {
    nn_loss_desc d;
    nn_tensor rows, den, s;
    int ins[3], k;
    int64_t C;
    if (desc) d = *desc;
    else memset(&d, 0, sizeof d);
    if (!nn__check_logits_labels(g, opname, x, labels) || !nn__loss_desc_ok(g, opname, &d, 0)) return nn__tensor(-1);
    C = nn__n(g, x)->shape.dim[1];
    if (!(d.label_smoothing >= 0.0f && d.label_smoothing <= 1.0f) || (log_input && d.label_smoothing != 0.0f))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: label_smoothing %g is not in [0, 1]%s", opname, d.label_smoothing,
                           log_input ? " or is given to NLL, which has none" : "");
    if (d.has_weight) {
        nn__node *w;
        if (!nn__check(g, opname, 1, &d.weight) || !nn__expect_f32(g, opname, d.weight, "weight")) return nn__tensor(-1);
        w = nn__n(g, d.weight);
        if (w->shape.ndim != 1 || w->shape.dim[0] != C) {
            char sw[128];
            nn__shape_str(&w->shape, sw, sizeof sw);
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: weight %s must be [C] = [%lld]", opname, sw, (long long)C);
        }
    }
    ins[0] = x.id;
    ins[1] = labels.id;
    ins[2] = d.has_weight ? d.weight.id : -1;
    rows = nn__tensor(nn__new_node(g, NN__OP_CE_ROWS, NN_F32, nn_shape1(nn__n(g, x)->shape.dim[0]), ins, d.has_weight ? 3 : 2));
    if (rows.id < 0) return rows;
    g->nodes[rows.id].i[0] = d.has_ignore_index ? d.ignore_index : -100;
    g->nodes[rows.id].i[1] = log_input;
    g->nodes[rows.id].f[0] = d.label_smoothing;
    if (d.reduction != NN_REDUCTION_MEAN) return nn__reduce_loss(g, rows, &d);
    den = nn__tensor(nn__new_node(g, NN__OP_CE_WEIGHTS, NN_F32, nn_shape1(nn__n(g, x)->shape.dim[0]), ins + 1, d.has_weight ? 2 : 1));
    if (den.id < 0) return den;
    g->nodes[den.id].i[0] = g->nodes[rows.id].i[0];
    g->nodes[den.id].i[1] = (int)C;
    d.reduction = NN_REDUCTION_SUM;
    s = nn__reduce_loss(g, rows, &d);
    den = nn__reduce_loss(g, den, &d);
    if (s.id < 0 || den.id < 0) return nn__tensor(-1);
    k = nn__op2(g, NN__OP_DIV_SCALAR, NN_F32, nn_shape1(1), s.id, den.id).id;
    return nn__tensor(k);
}

NN_API nn_tensor nn_cross_entropy_loss(nn_graph *g, nn_tensor x, nn_tensor labels, const nn_loss_desc *d) {
    return nn__ce_loss(g, "nn_cross_entropy_loss", 0, x, labels, d);
}
NN_API nn_tensor nn_nll_loss(nn_graph *g, nn_tensor x, nn_tensor labels, const nn_loss_desc *d) {
    return nn__ce_loss(g, "nn_nll_loss", 1, x, labels, d);
}

/* x0, x1 (and x2 for triplet) of one shape [B, ...]; cosine's target [B] float32. */
static nn_tensor nn__row_loss(nn_graph *g, const char *opname, int kind, int n_in, const nn_tensor *x, const nn_loss_desc *desc) {
    nn_loss_desc d;
    nn_tensor l;
    int ins[3], k;
    if (desc) d = *desc;
    else memset(&d, 0, sizeof d);
    if (!nn__check(g, opname, n_in, x) || !nn__loss_desc_ok(g, opname, &d, 0)) return nn__tensor(-1);
    for (k = 0; k < n_in; k++) {
        nn__node *a = nn__n(g, x[0]), *b = nn__n(g, x[k]);
        int target = kind == NN__R_COSINE && k == 2;
        if (!nn__expect_f32(g, opname, x[k], "every input")) return nn__tensor(-1);
        if (a->shape.ndim < (kind == NN__R_DICE ? 1 : 2) ||
            (target ? b->shape.ndim != 1 || b->shape.dim[0] != a->shape.dim[0] : !nn__shape_eq(&a->shape, &b->shape)) ||
            (kind != NN__R_DICE && a->shape.ndim != 2)) {
            char sa[128], sb[128];
            nn__shape_str(&a->shape, sa, sizeof sa);
            nn__shape_str(&b->shape, sb, sizeof sb);
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: input %d %s does not fit input 0 %s (%s)", opname, k, sb, sa,
                               kind == NN__R_DICE ? "both [B, ...]" : kind == NN__R_COSINE ? "x1, x2 [B, D], target [B]" : "all [B, D]");
        }
        ins[k] = x[k].id;
    }
    l = nn__tensor(nn__new_node(g, NN__OP_LOSS_ROWS, NN_F32, nn_shape1(nn__n(g, x[0])->shape.dim[0]), ins, n_in));
    if (l.id < 0) return l;
    g->nodes[l.id].i[0] = kind;
    g->nodes[l.id].f[0] = kind == NN__R_DICE ? nn__loss_opt(d.smooth, 1.0f) : kind == NN__R_TRIPLET ? nn__loss_opt(d.margin, 1.0f) : d.margin;
    return nn__reduce_loss(g, l, &d);
}

NN_API nn_tensor nn_dice_loss(nn_graph *g, nn_tensor p, nn_tensor t, const nn_loss_desc *d) {
    nn_tensor x[2];
    x[0] = p;
    x[1] = t;
    return nn__row_loss(g, "nn_dice_loss", NN__R_DICE, 2, x, d);
}
NN_API nn_tensor nn_cosine_embedding_loss(nn_graph *g, nn_tensor x1, nn_tensor x2, nn_tensor t, const nn_loss_desc *d) {
    nn_tensor x[3];
    x[0] = x1;
    x[1] = x2;
    x[2] = t;
    return nn__row_loss(g, "nn_cosine_embedding_loss", NN__R_COSINE, 3, x, d);
}
NN_API nn_tensor nn_triplet_margin_loss(nn_graph *g, nn_tensor a, nn_tensor p, nn_tensor n, const nn_loss_desc *d) {
    nn_tensor x[3];
    x[0] = a;
    x[1] = p;
    x[2] = n;
    return nn__row_loss(g, "nn_triplet_margin_loss", NN__R_TRIPLET, 3, x, d);
}

static nn_shape nn__shape5(int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t d4) {
    nn_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = 5;
    s.dim[0] = d0;
    s.dim[1] = d1;
    s.dim[2] = d2;
    s.dim[3] = d3;
    s.dim[4] = d4;
    return s;
}

NN_API nn_tensor nn_conv3d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv3d_desc *desc) {
    nn_tensor in[3], t;
    nn__node *nx, *nw;
    nn_conv3d_desc d;
    int64_t O[3];
    int attr[10], k, has_bias = bias.id >= 0;
    char sx[128], sw[128];
    in[0] = x;
    in[1] = w;
    in[2] = bias;
    if (!nn__check(g, "nn_conv3d", has_bias ? 3 : 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_conv3d", x, "x") || !nn__expect_f32(g, "nn_conv3d", w, "w")) return nn__tensor(-1);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    /* node->i: stride d/h/w, pad d/h/w, dilation d/h/w, groups */
    attr[0] = d.stride_d ? d.stride_d : 1;
    attr[1] = d.stride_h ? d.stride_h : 1;
    attr[2] = d.stride_w ? d.stride_w : 1;
    attr[3] = d.pad_d;
    attr[4] = d.pad_h;
    attr[5] = d.pad_w;
    attr[6] = d.dilation_d ? d.dilation_d : 1;
    attr[7] = d.dilation_h ? d.dilation_h : 1;
    attr[8] = d.dilation_w ? d.dilation_w : 1;
    attr[9] = d.groups ? d.groups : 1;
    nx = nn__n(g, x);
    nw = nn__n(g, w);
    nn__shape_str(&nx->shape, sx, sizeof sx);
    nn__shape_str(&nw->shape, sw, sizeof sw);
    for (k = 0; k < 10; k++)
        if (attr[k] < (k >= 3 && k < 6 ? 0 : 1))
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv3d: stride, dilation and groups must be >= 1 and padding >= 0");
    if (nx->shape.ndim != 5 || nw->shape.ndim != 5)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d: x %s must be [N, C, D, H, W] and w %s [K, C/groups, KD, KH, KW]", sx, sw);
    if (nx->shape.dim[1] % attr[9] || nw->shape.dim[0] % attr[9] || nw->shape.dim[1] * attr[9] != nx->shape.dim[1])
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d: x %s and w %s do not fit groups = %d", sx, sw, attr[9]);
    for (k = 0; k < 3; k++) {
        int64_t span = (int64_t)attr[6 + k] * (nw->shape.dim[2 + k] - 1) + 1;
        if (nx->shape.dim[2 + k] + 2 * attr[3 + k] < span)
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d: the kernel w %s is larger than the padded input x %s", sw, sx);
        O[k] = (nx->shape.dim[2 + k] + 2 * attr[3 + k] - span) / attr[k] + 1;
    }
    if (has_bias) {
        nn__node *nb = nn__n(g, bias);
        if (nb->dtype != NN_F32 || nb->shape.ndim != 1 || nb->shape.dim[0] != nw->shape.dim[0]) {
            char sb[128];
            nn__shape_str(&nb->shape, sb, sizeof sb);
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d: bias %s must be [%lld] float32", sb, (long long)nw->shape.dim[0]);
        }
    }
    {
        nn_shape ys = nn__shape5(nx->shape.dim[0], nw->shape.dim[0], O[0], O[1], O[2]);
        t = has_bias ? nn__op3(g, NN__OP_CONV3D, NN_F32, ys, x.id, w.id, bias.id) : nn__op2(g, NN__OP_CONV3D, NN_F32, ys, x.id, w.id);
    }
    if (t.id >= 0) memcpy(g->nodes[t.id].i, attr, sizeof attr);
    return t;
}

NN_API nn_tensor nn_conv3d_layer(nn_graph *g, nn_tensor x, int64_t out_channels, int kd, int kh, int kw,
                                 const nn_conv3d_desc *desc, const char *name) {
    char wn[256], bn[256];
    nn_init init;
    int64_t cin, groups = desc && desc->groups ? desc->groups : 1;
    if (!nn__check(g, "nn_conv3d_layer", 1, &x)) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv3d_layer: needs a name (at most 200 chars)");
    if (nn__n(g, x)->shape.ndim != 5 || kd < 1 || kh < 1 || kw < 1 || out_channels < 1 || groups < 1 ||
        nn__n(g, x)->shape.dim[1] % groups) {
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d_layer %s: x %s must be [N, C, D, H, W] with C divisible by groups, "
                           "kernel %dx%dx%d", name, sx, kd, kh, kw);
    }
    cin = nn__n(g, x)->shape.dim[1] / groups;
    init.kind = NN_INIT_UNIFORM; /* kaiming_uniform(a=sqrt(5)) is U(+-1/sqrt(fan_in)); so is the bias */
    init.a = (float)(-1.0 / sqrt((double)(cin * kd * kh * kw)));
    init.b = -init.a;
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    return nn_conv3d(g, x, nn_param(g, wn, nn__shape5(out_channels, cin, kd, kh, kw), init),
                     nn_param(g, bn, nn_shape1(out_channels), init), desc);
}

/* ---- autograd ---- */

/* Adds gx to the gradient of node x (a sum when x feeds several ops). */
static void nn__acc_grad(nn_graph *g, int x, nn_tensor gx) {
    if (gx.id < 0) return;
    if (g->nodes[x].grad < 0) g->nodes[x].grad = gx.id;
    else g->nodes[x].grad = nn__op2(g, NN__OP_ADD, NN_F32, g->nodes[x].shape, g->nodes[x].grad, gx.id).id;
}

/* The gradient of a broadcast operand b from a gradient of a's shape. */
static nn_tensor nn__reduce_to(nn_graph *g, nn_tensor gy, int b) {
    if (g->nodes[gy.id].numel == g->nodes[b].numel) return gy;
    return nn__op1(g, NN__OP_SUM_LEAD, NN_F32, g->nodes[b].shape, gy.id);
}

/* Emits the backward ops of node id, given gy = d(loss)/d(node). Nodes may move (realloc):
   copy what is needed out of the node first. */
static void nn__backward(nn_graph *g, int id) {
    nn__node n = g->nodes[id];
    nn_tensor gy = nn__tensor(n.grad), t;
    int a = n.in[0], b = n.n_in > 1 ? n.in[1] : -1;
    int ga = a >= 0 && g->nodes[a].needs_grad, gb = b >= 0 && g->nodes[b].needs_grad;
    switch (n.op) {
    case NN__OP_MATMUL: {
        int ta = n.i[0], tb = n.i[1];
        nn_tensor A = nn__tensor(a), B = nn__tensor(b);
        if (ga) {
            if (!ta) t = nn_matmul(g, gy, B, 0, !tb);
            else t = tb ? nn_matmul(g, B, gy, 1, 1) : nn_matmul(g, B, gy, 0, 1);
            nn__acc_grad(g, a, t);
        }
        if (gb) {
            if (!tb) t = ta ? nn_matmul(g, A, gy, 0, 0) : nn_matmul(g, A, gy, 1, 0);
            else t = ta ? nn_matmul(g, gy, A, 1, 1) : nn_matmul(g, gy, A, 1, 0);
            nn__acc_grad(g, b, t);
        }
        break;
    }
    case NN__OP_ADD:
    case NN__OP_SUB:
        if (ga) nn__acc_grad(g, a, gy);
        if (gb) {
            t = nn__reduce_to(g, gy, b);
            if (n.op == NN__OP_SUB) {
                t = nn__op1(g, NN__OP_SCALE, NN_F32, g->nodes[b].shape, t.id);
                if (t.id >= 0) g->nodes[t.id].f[0] = -1.0f;
            }
            nn__acc_grad(g, b, t);
        }
        break;
    case NN__OP_MUL:
        if (ga) nn__acc_grad(g, a, nn__op2(g, NN__OP_MUL, NN_F32, n.shape, gy.id, b));
        if (gb) nn__acc_grad(g, b, nn__reduce_to(g, nn__op2(g, NN__OP_MUL, NN_F32, n.shape, gy.id, a), b));
        break;
    case NN__OP_SCALE:
        t = nn__op1(g, NN__OP_SCALE, NN_F32, n.shape, gy.id);
        if (t.id >= 0) g->nodes[t.id].f[0] = n.f[0];
        nn__acc_grad(g, a, t);
        break;
    case NN__OP_UNARY:
        t = nn__op2(g, NN__OP_UNARY_GRAD, NN_F32, n.shape, a, gy.id);
        if (t.id >= 0) {
            g->nodes[t.id].i[0] = n.i[0];
            g->nodes[t.id].f[0] = n.f[0];
        }
        nn__acc_grad(g, a, t);
        break;
    case NN__OP_SOFTMAX:
        nn__acc_grad(g, a, nn__op2(g, NN__OP_SOFTMAX_GRAD, NN_F32, n.shape, id, gy.id));
        break;
    case NN__OP_LOG_SOFTMAX:
        nn__acc_grad(g, a, nn__op2(g, NN__OP_LOG_SOFTMAX_GRAD, NN_F32, n.shape, id, gy.id));
        break;
    case NN__OP_SUM_ALL:
        t = nn__op1(g, NN__OP_EXPAND_SCALAR, NN_F32, g->nodes[a].shape, gy.id);
        if (t.id >= 0) g->nodes[t.id].f[0] = n.f[0];
        nn__acc_grad(g, a, t);
        break;
    case NN__OP_EXPAND_SCALAR:
        t = nn__op1(g, NN__OP_SUM_ALL, NN_F32, nn_shape1(1), gy.id);
        if (t.id >= 0) g->nodes[t.id].f[0] = n.f[0];
        nn__acc_grad(g, a, t);
        break;
    case NN__OP_XENT_ROWS:
        if (ga) nn__acc_grad(g, a, nn__op3(g, NN__OP_XENT_GRAD, NN_F32, g->nodes[a].shape, a, b, gy.id));
        break;
    case NN__OP_BCE_LOGITS:
        if (ga) nn__acc_grad(g, a, nn__op3(g, NN__OP_BCE_LOGITS_GRAD, NN_F32, n.shape, a, b, gy.id));
        if (gb) { /* d/dt = -x */
            t = nn__op2(g, NN__OP_MUL, NN_F32, n.shape, gy.id, a);
            t = nn__op1(g, NN__OP_SCALE, NN_F32, n.shape, t.id);
            if (t.id >= 0) g->nodes[t.id].f[0] = -1.0f;
            nn__acc_grad(g, b, t);
        }
        break;
    case NN__OP_DROPOUT:
        t = nn__op1(g, NN__OP_DROPOUT, NN_F32, n.shape, gy.id);
        if (t.id >= 0) {
            g->nodes[t.id].f[0] = n.f[0];
            g->nodes[t.id].i[0] = n.i[0];
        }
        nn__acc_grad(g, a, t);
        break;
    case NN__OP_GATHER_ROWS:
        if (ga) nn__acc_grad(g, a, nn__op2(g, NN__OP_GATHER_ROWS_GRAD, NN_F32, g->nodes[a].shape, b, gy.id));
        break;
    case NN__OP_CONV2D:
        if (ga) {
            t = nn__op2(g, NN__OP_CONV2D_DX, NN_F32, g->nodes[a].shape, b, gy.id);
            if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
            nn__acc_grad(g, a, t);
        }
        if (gb) {
            t = nn__op2(g, NN__OP_CONV2D_DW, NN_F32, g->nodes[b].shape, a, gy.id);
            if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
            nn__acc_grad(g, b, t);
        }
        if (n.n_in > 2 && g->nodes[n.in[2]].needs_grad)
            nn__acc_grad(g, n.in[2], nn__op1(g, NN__OP_CHANNEL_SUM, NN_F32, g->nodes[n.in[2]].shape, gy.id));
        break;
    case NN__OP_RESHAPE:
        nn__acc_grad(g, a, nn__op1(g, NN__OP_RESHAPE, NN_F32, g->nodes[a].shape, gy.id));
        break;
    case NN__OP_CHANNEL_BIAS:
        if (ga) nn__acc_grad(g, a, gy);
        if (gb) nn__acc_grad(g, b, nn__op1(g, NN__OP_CHANNEL_SUM, NN_F32, g->nodes[b].shape, gy.id));
        break;
    case NN__OP_CONV2D_DX: /* as a transposed convolution: inputs (w, x) */
        if (gb) { /* d/dx: the forward convolution of gy */
            t = nn__op2(g, NN__OP_CONV2D, NN_F32, g->nodes[b].shape, gy.id, a);
            if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
            nn__acc_grad(g, b, t);
        }
        if (ga) { /* d/dw: conv2d's weight gradient with gy as the input and x as dy */
            t = nn__op2(g, NN__OP_CONV2D_DW, NN_F32, g->nodes[a].shape, gy.id, b);
            if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
            nn__acc_grad(g, a, t);
        }
        break;
    case NN__OP_PERMUTE: {
        int inv[NN_MAX_DIMS], d;
        for (d = 0; d < n.shape.ndim; d++) inv[n.i[d]] = d;
        nn__acc_grad(g, a, nn_permute(g, gy, inv));
        break;
    }
    case NN__OP_CONCAT2: {
        int ax = n.i[0];
        if (ga) nn__acc_grad(g, a, nn__slice_op(g, NN__OP_SLICE, gy.id, g->nodes[a].shape, ax, 0));
        if (gb) nn__acc_grad(g, b, nn__slice_op(g, NN__OP_SLICE, gy.id, g->nodes[b].shape, ax, g->nodes[a].shape.dim[ax]));
        break;
    }
    case NN__OP_SLICE:
        nn__acc_grad(g, a, nn__slice_op(g, NN__OP_SLICE_GRAD, gy.id, g->nodes[a].shape, n.i[0], n.i[1]));
        break;
    case NN__OP_PAD2D: case NN__OP_UPSAMPLE2D:
        t = nn__op1(g, n.op == NN__OP_PAD2D ? NN__OP_PAD2D_GRAD : NN__OP_UPSAMPLE2D_GRAD, NN_F32, g->nodes[a].shape, gy.id);
        if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
        nn__acc_grad(g, a, t);
        break;
    case NN__OP_NORM_FORWARD: { /* inputs x, stats, [gamma], [beta]; the stats path is in NORM_DX */
        int k = 2, gi = n.i[5] ? n.in[k++] : -1, bi = n.i[6] ? n.in[k++] : -1, din[4];
        din[0] = a;
        din[1] = b;
        din[2] = gy.id;
        din[3] = gi;
        if (ga) nn__acc_grad(g, a, nn__norm_attrs(g, nn__tensor(nn__new_node(g, NN__OP_NORM_DX, NN_F32, g->nodes[a].shape, din,
                                                                                 gi >= 0 ? 4 : 3)), n.i, n.f));
        if (gi >= 0 && g->nodes[gi].needs_grad)
            nn__acc_grad(g, gi, nn__norm_attrs(g, nn__op3(g, NN__OP_NORM_DGAMMA, NN_F32, g->nodes[gi].shape, a, b, gy.id), n.i, n.f));
        if (bi >= 0 && g->nodes[bi].needs_grad)
            nn__acc_grad(g, bi, nn__norm_attrs(g, nn__op1(g, NN__OP_NORM_DBETA, NN_F32, g->nodes[bi].shape, gy.id), n.i, n.f));
        break;
    }
    case NN__OP_MAXPOOL2D: /* dx gathers dy through the windows' argmax, which the backward
                              pass recomputes so inference graphs keep no indices */
        t = nn__op1(g, NN__OP_MAXPOOL2D_ARGMAX, NN_I32, n.shape, a);
        if (t.id < 0) break;
        memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
        t = nn__op2(g, NN__OP_MAXPOOL2D_GRAD, NN_F32, g->nodes[a].shape, t.id, gy.id);
        if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
        nn__acc_grad(g, a, t);
        break;
    case NN__OP_AVGPOOL2D:
        t = nn__op1(g, NN__OP_AVGPOOL2D_GRAD, NN_F32, g->nodes[a].shape, gy.id);
        if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
        nn__acc_grad(g, a, t);
        break;
    case NN__OP_LOSS_EW: { /* inputs x, t, [pos_weight]; d-based losses give t minus x's gradient */
        int ins[4], has_pw = n.n_in > 2, gt = gb && n.i[0] <= NN__L_QUANTILE;
        if (!ga && !gt) break;
        ins[0] = a;
        ins[1] = b;
        ins[2] = gy.id;
        ins[3] = has_pw ? n.in[2] : -1;
        t = nn__tensor(nn__new_node(g, NN__OP_LOSS_EW_GRAD, NN_F32, n.shape, ins, has_pw ? 4 : 3));
        if (t.id >= 0) {
            memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
            memcpy(g->nodes[t.id].f, n.f, sizeof n.f);
        }
        if (ga) nn__acc_grad(g, a, t);
        if (gt) {
            t = nn__op1(g, NN__OP_SCALE, NN_F32, n.shape, t.id);
            if (t.id >= 0) g->nodes[t.id].f[0] = -1.0f;
            nn__acc_grad(g, b, t);
        }
        break;
    }
    case NN__OP_CE_ROWS: { /* inputs x, labels, [weight] */
        int ins[4];
        if (!ga) break;
        ins[0] = a;
        ins[1] = b;
        ins[2] = gy.id;
        ins[3] = n.n_in > 2 ? n.in[2] : -1;
        t = nn__tensor(nn__new_node(g, NN__OP_CE_ROWS_GRAD, NN_F32, g->nodes[a].shape, ins, n.n_in > 2 ? 4 : 3));
        if (t.id >= 0) {
            memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
            memcpy(g->nodes[t.id].f, n.f, sizeof n.f);
        }
        nn__acc_grad(g, a, t);
        break;
    }
    case NN__OP_DIV_SCALAR: /* the divisor (a count of weights) is not differentiated */
        if (ga) nn__acc_grad(g, a, nn__op2(g, NN__OP_DIV_SCALAR, NN_F32, n.shape, gy.id, b));
        break;
    case NN__OP_LOSS_ROWS: { /* one gradient op per differentiated input; targets get none */
        int k, ins[4], n_x = n.i[0] == NN__R_COSINE ? 2 : n.i[0] == NN__R_DICE ? 1 : 3;
        for (k = 0; k < n_x; k++) {
            if (!g->nodes[n.in[k]].needs_grad) continue;
            memcpy(ins, n.in, sizeof ins);
            ins[n.n_in] = gy.id;
            t = nn__tensor(nn__new_node(g, NN__OP_LOSS_ROWS_GRAD, NN_F32, g->nodes[n.in[k]].shape, ins, n.n_in + 1));
            if (t.id >= 0) {
                memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
                memcpy(g->nodes[t.id].f, n.f, sizeof n.f);
                g->nodes[t.id].i[1] = k;
            }
            nn__acc_grad(g, n.in[k], t);
        }
        break;
    }
    case NN__OP_CONV3D:
        if (ga) {
            t = nn__op2(g, NN__OP_CONV3D_DX, NN_F32, g->nodes[a].shape, b, gy.id);
            if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
            nn__acc_grad(g, a, t);
        }
        if (gb) {
            t = nn__op2(g, NN__OP_CONV3D_DW, NN_F32, g->nodes[b].shape, a, gy.id);
            if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
            nn__acc_grad(g, b, t);
        }
        if (n.n_in > 2 && g->nodes[n.in[2]].needs_grad)
            nn__acc_grad(g, n.in[2], nn__op1(g, NN__OP_CHANNEL_SUM, NN_F32, g->nodes[n.in[2]].shape, gy.id));
        break;
    default:
        break; /* not differentiable: no gradient flows */
    }
}

static int nn__differentiable(int op) {
    switch (op) {
    case NN__OP_ARGMAX: case NN__OP_CORRECT_ROWS: case NN__OP_ACCUMULATE: case NN__OP_FILL:
    case NN__OP_CE_WEIGHTS:
        return 0;
    default:
        return 1;
    }
}

/* ---- compiling ---- */

/* Adds gradient accumulation, clipping and one update op per trainable parameter (the
   rules, defaults and multipliers are in nn_optim.c). Nodes from g->first_update_node on
   run on update steps only. */
static nn_result nn__add_optimizer(nn_graph *g) {
    int i, n0 = g->n_nodes, scale = -1, acc = -1, k = g->accum_steps;
    int op = nn__opt_generic(&g->opt) ? NN__OP_OPT_STEP : g->opt.kind == NN_OPT_SGD ? NN__OP_OPT_SGD : NN__OP_OPT_ADAM;
    if (g->opt.kind == NN_OPT_NONE) return NN_OK;
    for (i = 0; i < n0 && k > 1; i++) { /* every step: each gradient into its running mean */
        int a;
        if (g->nodes[i].op != NN__OP_PARAM || g->nodes[i].grad < 0) continue;
        a = nn__op1(g, NN__OP_GRAD_ACC, NN_F32, g->nodes[i].shape, g->nodes[i].grad).id;
        if (a < 0) return g->status;
        g->nodes[a].f[0] = 1.0f / (float)k;
        g->nodes[a].is_output = 1; /* persistent across the cycle, and what nn_grad reads */
        g->nodes[i].grad = a;
    }
    g->first_update_node = g->n_nodes;
    if (g->opt.clip_norm > 0.0f) {
        for (i = 0; i < n0; i++) {
            if (g->nodes[i].op != NN__OP_PARAM || g->nodes[i].grad < 0) continue;
            acc = acc < 0 ? nn__op1(g, NN__OP_GRAD_SUMSQ, NN_F32, nn_shape1(1), g->nodes[i].grad).id
                          : nn__op2(g, NN__OP_GRAD_SUMSQ, NN_F32, nn_shape1(1), g->nodes[i].grad, acc).id;
        }
        if (acc >= 0) {
            scale = nn__op1(g, NN__OP_CLIP_SCALE, NN_F32, nn_shape1(1), acc).id;
            if (scale >= 0) g->nodes[scale].f[0] = g->opt.clip_norm;
        }
    }
    for (i = 0; i < n0; i++) {
        nn__node *u;
        nn_shape none;
        int id;
        if (g->nodes[i].op != NN__OP_PARAM || g->nodes[i].grad < 0) continue;
        memset(&none, 0, sizeof none);
        id = scale >= 0 ? nn__op3(g, op, NN_F32, none, i, g->nodes[i].grad, scale).id
                        : nn__op2(g, op, NN_F32, none, i, g->nodes[i].grad).id;
        if (id < 0) break;
        u = &g->nodes[id];
        u->numel = 0;
        u->is_output = 1; /* a root: it has an effect */
        u->n_aux = nn__opt_n_aux(&g->opt);
        u->i[0] = g->opt.kind;
        nn__param_mults(g, &g->nodes[i], &u->f[0], &u->f[1]);
        if (g->opt.kind == NN_OPT_LAMB) u->scratch = g->nodes[i].numel + 2; /* u, then two sums of squares */
        if (g->opt.kind == NN_OPT_LARS) u->scratch = 2;
    }
    return g->status;
}

/* An arena item: a node's output (live from its definition to its last use) or its
   scratch (live during its own run only). */
typedef struct nn__item { int id, scratch, first, last; size_t bytes, offset; } nn__item;

/* Places arena items: each at the lowest aligned offset free for its whole lifetime. */
static nn_result nn__plan_memory(nn_graph *g, size_t align) {
    nn__item *it = (nn__item *)nn__calloc((size_t)g->n_sched * 2 + 1, sizeof *it);
    int n = 0, i, j;
    size_t top = 0;
    if (!it) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
    for (i = 0; i < g->n_sched; i++) { /* in schedule order, so sorted by first use */
        nn__node *nd = &g->nodes[g->sched[i]];
        if (nd->storage == NN__ST_ARENA && nd->numel > 0) {
            it[n].id = g->sched[i];
            it[n].first = nd->first;
            it[n].last = nd->last;
            it[n++].bytes = ((size_t)nd->numel * 4 + align - 1) / align * align;
        }
        if (nd->scratch > 0) {
            it[n].id = g->sched[i];
            it[n].scratch = 1;
            it[n].first = it[n].last = nd->first;
            it[n++].bytes = ((size_t)nd->scratch * 4 + align - 1) / align * align;
        }
    }
    for (i = 0; i < n; i++) {
        nn__item *a = &it[i];
        size_t off = 0;
        int moved = 1;
        while (moved) { /* first fit against every placed item alive at the same time */
            moved = 0;
            for (j = 0; j < i; j++) {
                nn__item *b = &it[j];
                if (b->last < a->first || a->last < b->first) continue;
                if (off < b->offset + b->bytes && b->offset < off + a->bytes) {
                    off = b->offset + b->bytes;
                    moved = 1;
                }
            }
        }
        a->offset = off;
        if (a->scratch) g->nodes[a->id].scratch_offset = off;
        else g->nodes[a->id].offset = off;
        if (off + a->bytes > top) top = off + a->bytes;
    }
    g->arena_bytes = top;
    NN_FREE(it);
    return NN_OK;
}

/* A view of the arena at offset: a pointer on the CPU, a sub-buffer on a device. */
static nn_result nn__arena_view(nn_graph *g, nn__buf *b, size_t offset, size_t bytes, const char *what) {
    b->bytes = bytes;
#if !defined(NN_NO_OPENCL)
    if (g->ctx->opencl) {
        cl_buffer_region reg;
        cl_int err;
        reg.origin = offset;
        reg.size = bytes;
        b->mem = clCreateSubBuffer(g->arena.mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg, &err);
        if (!b->mem) return nn__fail(g->ctx, NN_ERR_DEVICE, "%s: clCreateSubBuffer: %s (%d)", what, nn__cl_errstr(err), err);
        return NN_OK;
    }
#else
    (void)what;
#endif
    b->host = (float *)((char *)g->arena.host + offset);
    return NN_OK;
}

static nn_result nn__allocate(nn_graph *g) {
    nn_context *ctx = g->ctx;
    nn_result r = NN_OK;
    int i, k;
    char what[300];
    if (g->arena_bytes) {
        r = nn__buf_alloc(ctx, &g->arena, g->arena_bytes, 0, "the activation arena");
        if (r != NN_OK) return r;
    }
    for (i = 0; i < g->n_nodes && r == NN_OK; i++) {
        nn__node *n = &g->nodes[i];
        if (!n->live) continue;
        snprintf(what, sizeof what, "%s %s", nn__op_names[n->op], n->name ? n->name : "");
        if (n->storage == NN__ST_PARAM) {
            nn__param *p = &g->params->p[n->param];
            if (!p->allocated) {
                r = nn__buf_alloc(ctx, &p->buf, (size_t)p->numel * 4, 0, what);
                if (r == NN_OK) r = nn__buf_write(ctx, &p->buf, p->init, (size_t)p->numel * 4);
                if (r != NN_OK) break;
                p->allocated = 1;
#if !defined(NN_NO_OPENCL)
                if (ctx->opencl) { /* the device holds it now */
                    NN_FREE(p->init);
                    p->init = NULL;
                }
#endif
            }
            n->buf = p->buf;
        } else if (n->storage == NN__ST_OWN) { /* inputs are written before use: no fill */
            r = nn__buf_alloc(ctx, &n->buf, (size_t)n->numel * 4, n->op != NN__OP_INPUT, what);
        } else if (n->numel > 0) {
            r = nn__arena_view(g, &n->buf, n->offset, (size_t)n->numel * 4, what);
        }
        if (n->scratch > 0 && r == NN_OK) r = nn__arena_view(g, &n->scratch_buf, n->scratch_offset, (size_t)n->scratch * 4, what);
        for (k = 0; k < n->n_aux && r == NN_OK; k++) r = nn__buf_alloc(ctx, &n->aux[k], (size_t)g->nodes[n->in[0]].numel * 4, 1, what);
    }
    return r;
}

NN_API nn_result nn_graph_compile(nn_graph *g, const nn_compile_desc *desc) {
    nn_compile_desc d;
    nn_result r;
    int i, k, n_user;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (g->compiled) return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_compile: the graph is already compiled");
    if (g->status != NN_OK) return g->status;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    g->opt = nn__opt_defaults(d.optimizer);
    if ((int)g->opt.kind < NN_OPT_NONE || g->opt.kind > NN_OPT_FTRL)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: optimizer kind %d is not one of nn_optimizer_kind",
                        (int)g->opt.kind);
    g->accum_steps = g->opt.accumulate_steps;
    g->first_update_node = -1;
    g->schedule.lr = g->opt.lr;
    r = nn_graph_set_schedule(g, &d.schedule);
    if (r != NN_OK) return r;
    g->lr = nn_lr_at(&g->schedule, 0);
    n_user = g->n_forward = g->n_nodes;
    if (d.has_loss) {
        nn__node *L;
        if (d.loss.id < 0 || d.loss.id >= g->n_nodes)
            return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: the loss is not a tensor of this graph");
        L = &g->nodes[d.loss.id];
        if (L->numel != 1 || L->dtype != NN_F32) {
            char s[128];
            nn__shape_str(&L->shape, s, sizeof s);
            return nn__fail(g->ctx, NN_ERR_SHAPE, "nn_graph_compile: the loss must be a float32 scalar, not %s %s", s,
                            nn__dtype_name(L->dtype));
        }
        g->loss = d.loss.id;
        L->is_output = 1;
        for (i = 0; i < n_user; i++) { /* which nodes does the loss need gradients through? */
            nn__node *n = &g->nodes[i];
            if (n->op == NN__OP_PARAM) n->needs_grad = !g->params->p[n->param].buffer;
            else if (n->op == NN__OP_INPUT) n->needs_grad = n->requires_grad && n->dtype == NN_F32;
            else if (nn__differentiable(n->op))
                for (k = 0; k < n->n_in; k++) n->needs_grad |= g->nodes[n->in[k]].needs_grad;
        }
        if (g->nodes[g->loss].needs_grad) {
            int seed = nn__new_node(g, NN__OP_FILL, NN_F32, nn_shape1(1), NULL, 0);
            if (seed >= 0) {
                g->nodes[seed].f[0] = 1.0f;
                g->nodes[g->loss].grad = seed;
            }
            for (i = g->loss; i >= 0 && g->status == NN_OK; i--)
                if (g->nodes[i].needs_grad && g->nodes[i].grad >= 0 && g->nodes[i].op != NN__OP_PARAM &&
                    g->nodes[i].op != NN__OP_INPUT)
                    nn__backward(g, i);
        }
        for (i = 0; i < n_user; i++) {
            nn__node *n = &g->nodes[i];
            int keep = (n->op == NN__OP_INPUT && n->requires_grad) ||
                       (n->op == NN__OP_PARAM && (d.keep_grads || g->opt.kind == NN_OPT_NONE));
            if (keep && n->grad >= 0) g->nodes[n->grad].is_output = 1;
        }
        if (g->status == NN_OK) nn__add_optimizer(g);
    }
    g->compiled = 1;
    if (g->status != NN_OK) return g->status;

    /* liveness: everything a root depends on; roots are outputs (loss, accumulators,
       kept gradients, updates) */
    for (i = g->n_nodes - 1; i >= 0; i--) {
        nn__node *n = &g->nodes[i];
        if (n->is_output) n->live = 1;
        if (n->live)
            for (k = 0; k < n->n_in; k++) g->nodes[n->in[k]].live = 1;
    }
    g->sched = (int *)nn__calloc((size_t)g->n_nodes + 1, sizeof(int));
    if (!g->sched) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
    g->n_sched = g->n_sched_forward = 0;
    for (i = 0; i < g->n_nodes; i++) {
        nn__node *n = &g->nodes[i];
        n->first = n->last = -1;
        if (n->op == NN__OP_INPUT) n->storage = NN__ST_OWN;
        else if (n->op != NN__OP_PARAM) n->storage = (n->is_output && n->numel > 0) ? NN__ST_OWN : NN__ST_ARENA;
        if (!n->live || n->op == NN__OP_INPUT || n->op == NN__OP_PARAM) continue;
        n->first = n->last = g->n_sched;
        for (k = 0; k < n->n_in; k++) {
            nn__node *in = &g->nodes[n->in[k]];
            if (in->last < g->n_sched) in->last = g->n_sched;
        }
        g->sched[g->n_sched++] = i;
        if (i < n_user) g->n_sched_forward = g->n_sched;
    }
    g->n_sched_update = g->n_sched; /* where the part that runs on update steps only starts */
    for (i = 0; i < g->n_sched && g->first_update_node >= 0; i++)
        if (g->sched[i] >= g->first_update_node) {
            g->n_sched_update = i;
            break;
        }
    for (i = 0; i < g->n_sched; i++) { /* the convolutions' algorithm and im2col space */
        nn__node *n = &g->nodes[g->sched[i]];
        nn__conv2d c;
        if (n->op == NN__OP_CONV2D) nn__conv2d_geom(&c, &g->nodes[n->in[0]].shape, &g->nodes[n->in[1]].shape, n->i);
        else if (n->op == NN__OP_CONV2D_DX) nn__conv2d_geom(&c, &n->shape, &g->nodes[n->in[0]].shape, n->i);
        else if (n->op == NN__OP_CONV2D_DW) nn__conv2d_geom(&c, &g->nodes[n->in[0]].shape, &n->shape, n->i);
        else if (g->ctx->opencl) continue; /* conv3d on OpenCL: direct kernels, no scratch */
        else if (n->op == NN__OP_CONV3D || n->op == NN__OP_CONV3D_DX || n->op == NN__OP_CONV3D_DW) {
            nn__conv3d c3;
            if (n->op == NN__OP_CONV3D) nn__conv3d_geom(&c3, &g->nodes[n->in[0]].shape, &g->nodes[n->in[1]].shape, n->i);
            else if (n->op == NN__OP_CONV3D_DX) nn__conv3d_geom(&c3, &n->shape, &g->nodes[n->in[0]].shape, n->i);
            else nn__conv3d_geom(&c3, &g->nodes[n->in[0]].shape, &n->shape, n->i);
            n->scratch = nn__conv3d_scratch(&c3);
            continue;
        } else continue;
#if !defined(NN_NO_OPENCL)
        if (g->ctx->opencl) {
            nn__cl_conv_plan p;
            nn__cl_conv2d_plan(g->ctx, n->op, &c, &p);
            n->algo = p.algo;
            n->scratch = p.scratch;
            continue;
        }
#endif
        n->algo = nn__conv2d_is_depthwise(&c) ? NN__CONV_DIRECT : NN__CONV_GEMM; /* direct: no scratch */
        n->scratch = n->algo == NN__CONV_DIRECT ? 0 : nn__conv2d_scratch(&c);
    }
#if !defined(NN_NO_OPENCL)
    r = nn__plan_memory(g, g->ctx->opencl ? g->ctx->cl.align : 64);
#else
    r = nn__plan_memory(g, 64);
#endif
    if (r == NN_OK) r = nn__allocate(g);
#if !defined(NN_NO_OPENCL)
    if (r == NN_OK && g->ctx->opencl) {
        nn__buf one;
        float v = 1.0f;
        memset(&one, 0, sizeof one);
        r = nn__cl_alloc(g->ctx, &one, 4, "a constant");
        g->one = one.mem;
        if (r == NN_OK) r = nn__cl_fill(g->ctx, g->one, v, 4);
        for (i = 0; i < g->n_sched && r == NN_OK; i++) {
            if (i == g->n_sched_update) g->n_launches_update = g->n_launches;
            r = nn__cl_prepare(g, g->sched[i]);
            if (i + 1 == g->n_sched_forward) g->n_launches_forward = g->n_launches;
        }
        if (g->n_sched_update == g->n_sched) g->n_launches_update = g->n_launches;
        if (r == NN_OK) {
            cl_int err = clFinish(g->ctx->cl.queue);
            if (err != CL_SUCCESS) r = nn__fail(g->ctx, NN_ERR_DEVICE, "nn_graph_compile: clFinish: %s (%d)", nn__cl_errstr(err), err);
        }
    }
#endif
    if (r != NN_OK) {
        g->status = r;
        return r;
    }
    nn__log(g->ctx, NN_LOG_DEBUG, "compiled: %d nodes, %d scheduled, arena %llu bytes", g->n_nodes, g->n_sched,
            (unsigned long long)g->arena_bytes);
    return NN_OK;
}

/* ---- running ---- */

static nn_result nn__run(nn_graph *g, int n_steps) {
    int i;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (!g->compiled || g->status != NN_OK)
        return nn__fail(g->ctx, NN_ERR_STATE, "the graph is not compiled (or failed to compile)");
#if !defined(NN_NO_OPENCL)
    if (g->ctx->opencl) {
        int n = n_steps == g->n_sched ? g->n_launches : n_steps == g->n_sched_update ? g->n_launches_update
                                                                                      : g->n_launches_forward;
        for (i = 0; i < n; i++) {
            nn__launch *l = &g->launches[i];
            cl_int err;
            if (l->update) l->update(g, l);
            err = clEnqueueNDRangeKernel(g->ctx->cl.queue, l->kernel, l->dims, NULL, l->gws, l->use_lws ? l->lws : NULL,
                                         0, NULL, NULL);
            if (err != CL_SUCCESS)
                return nn__fail(g->ctx, NN_ERR_DEVICE, "%s: clEnqueueNDRangeKernel: %s (%d)",
                                nn__op_names[g->nodes[l->node].op], nn__cl_errstr(err), err);
        }
        g->ctx->stats.kernel_launches += (uint64_t)n;
        return NN_OK;
    }
#endif
    for (i = 0; i < n_steps; i++) {
        nn_result r = nn__cpu_run(g, g->sched[i]);
        if (r != NN_OK) return r;
    }
    g->ctx->stats.kernel_launches += (uint64_t)n_steps;
    return NN_OK;
}

/* forward, backward (and gradient accumulation); the update on update steps only */
NN_API nn_result nn_graph_step(nn_graph *g) {
    nn_result r;
    nn__opt_clock clock;
    float lr;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (!g->compiled || g->status != NN_OK) return nn__run(g, 0);
    g->step++;
    clock = g->clock;
    lr = g->lr;
    r = nn__run(g, nn__opt_begin(g) ? g->n_sched : g->n_sched_update);
    if (r != NN_OK) {
        g->step--;
        g->clock = clock;
        g->lr = lr;
    }
    return r;
}

NN_API nn_result nn_graph_forward(nn_graph *g) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return nn__run(g, g->n_sched_forward);
}

NN_API nn_result nn_graph_finish(nn_graph *g) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
#if !defined(NN_NO_OPENCL)
    if (g->ctx->opencl) {
        cl_int err = clFinish(g->ctx->cl.queue);
        if (err != CL_SUCCESS) return nn__fail(g->ctx, NN_ERR_DEVICE, "clFinish: %s (%d)", nn__cl_errstr(err), err);
    }
#endif
    return NN_OK;
}

NN_API nn_result nn_graph_set_lr(nn_graph *g, float lr) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (!(lr >= 0.0f)) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_set_lr: lr %g is not >= 0", lr);
    g->schedule.lr = lr;
    g->lr = nn_lr_at(&g->schedule, g->clock.t > 0 ? (int64_t)g->clock.t - 1 : 0);
    return NN_OK;
}

NN_API nn_tensor nn_find(nn_graph *g, const char *name) {
    int i;
    if (!g || !name) return nn__tensor(-1);
    for (i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0) return nn__tensor(i);
    return nn__tensor(-1);
}

NN_API nn_tensor nn_grad(nn_graph *g, nn_tensor t) {
    if (!g || t.id < 0 || t.id >= g->n_nodes) return nn__tensor(-1);
    return nn__tensor(g->nodes[t.id].grad);
}

NN_API nn_shape nn_tensor_shape(nn_graph *g, nn_tensor t) {
    nn_shape s;
    memset(&s, 0, sizeof s);
    if (!g || t.id < 0 || t.id >= g->n_nodes) return s;
    return g->nodes[t.id].shape;
}

NN_API int64_t nn_tensor_numel(nn_graph *g, nn_tensor t) {
    if (!g || t.id < 0 || t.id >= g->n_nodes) return 0;
    return g->nodes[t.id].numel;
}

/* The node's buffer if the user may touch it (write: inputs and params only). */
static nn_result nn__user_buf(nn_graph *g, nn_tensor t, size_t bytes, int write, const char *fn, nn__node **out) {
    nn__node *n = NULL;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (t.id < 0 || t.id >= g->n_nodes) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: not a tensor of this graph", fn);
    if (!g->compiled || g->status != NN_OK) return nn__fail(g->ctx, NN_ERR_STATE, "%s: compile the graph first", fn);
    n = &g->nodes[t.id];
    if (!n->live && n->op != NN__OP_INPUT && n->op != NN__OP_PARAM)
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: %s is not used by the compiled graph", fn, nn__op_names[n->op]);
    if (write && n->op != NN__OP_INPUT && n->op != NN__OP_PARAM && n->op != NN__OP_ACCUMULATE)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: only inputs, parameters and accumulators can be written", fn);
    if (!write && n->storage == NN__ST_ARENA)
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: the %s tensor is not kept after a run; mark it with nn_output()", fn,
                        nn__op_names[n->op]);
    if (bytes != (size_t)n->numel * 4) {
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

NN_API nn_result nn_tensor_write(nn_graph *g, nn_tensor t, const void *data, size_t bytes) {
    nn__node *n = NULL;
    nn_result r = nn__user_buf(g, t, bytes, 1, "nn_tensor_write", &n);
    if (r != NN_OK) return r;
    if (!data) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_tensor_write: data is NULL");
    return nn__buf_write(g->ctx, &n->buf, data, bytes);
}

NN_API nn_result nn_tensor_read(nn_graph *g, nn_tensor t, void *data, size_t bytes) {
    nn__node *n = NULL;
    nn_result r = nn__user_buf(g, t, bytes, 0, "nn_tensor_read", &n);
    if (r != NN_OK) return r;
    if (!data) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_tensor_read: data is NULL");
    return nn__buf_read(g->ctx, &n->buf, data, bytes);
}

NN_API nn_result nn_tensor_fill(nn_graph *g, nn_tensor t, float value) {
    nn__node *n = NULL;
    nn_result r;
    int64_t i;
    if (!g || t.id < 0 || t.id >= g->n_nodes) return NN_ERR_INVALID_ARGUMENT;
    r = nn__user_buf(g, t, (size_t)g->nodes[t.id].numel * 4, 1, "nn_tensor_fill", &n);
    if (r != NN_OK) return r;
    if (n->dtype != NN_F32) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_tensor_fill: the tensor is not float32");
#if !defined(NN_NO_OPENCL)
    if (g->ctx->opencl) return nn__cl_fill(g->ctx, n->buf.mem, value, n->buf.bytes);
#endif
    for (i = 0; i < n->numel; i++) n->buf.host[i] = value;
    return NN_OK;
}
