/* Contexts: the backend chosen once per context (nn__backends[], tried in order, the CPU
   last), its buffers, and what a program asks of a context (its name, errors, counters). */
#include "../base/internal.h"
#include "../base/registry.h"
#include "../../kernels/storage.h"

/* Device backends define NN__BACKEND_<NAME> as a pointer to their nn__backend and a comma;
   one that is not compiled in leaves its slot empty. */
#ifndef NN__BACKEND_OPENCL
#  define NN__BACKEND_OPENCL
#endif
static const nn__backend *const nn__backends[] = {NN__BACKEND_OPENCL &nn__cpu_backend};
#define NN__N_BACKENDS ((int)(sizeof nn__backends / sizeof nn__backends[0]))

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
NN_API nn_shape nn_shape5(int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t d4) {
    nn_shape s = nn_shape4(d0, d1, d2, d3);
    s.ndim = 5;
    s.dim[4] = d4;
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
    case NN_ERR_UNAVAILABLE: return "unavailable";
    }
    return "unknown result";
}

/* ---- contexts ---- */

/* The program cache's directory when none is given: $XDG_CACHE_HOME/nn, else
   ~/.cache/nn, else none (*out NULL, and 1). 0 only when the copy cannot be allocated. */
static int nn__default_cache_dir(char **out) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char buf[1024];
    *out = NULL;
    if (xdg && xdg[0]) snprintf(buf, sizeof buf, "%s/nn", xdg);
    else if (home && home[0]) snprintf(buf, sizeof buf, "%s/.cache/nn", home);
    else return 1;
    *out = nn__strdup(buf);
    return *out != NULL;
}


/* The log level: desc.log_level, or for NN_LOG_DEFAULT $NN_LOG, else info. */
static int nn__log_level(const nn_context_desc *desc) {
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    const char *env = getenv("NN_LOG");
    int k;
    if (desc->log_level != NN_LOG_DEFAULT) return desc->log_level;
    for (k = 0; env && k < 4; k++)
        if (strcmp(env, levels[k]) == 0) return NN_LOG_ERROR + k;
    return NN_LOG_INFO;
}

/* Opens the first backend that takes the device asked for: a device backend that finds
   nothing (NN_ERR_UNAVAILABLE) falls through to the next. With none named the log says
   why; a named device that no backend takes fails with NN_ERR_UNAVAILABLE and the first
   backend's reason (the CPU backend's "takes only cpu" says less). */
static nn_result nn__open_backend(nn_context *ctx, const char *device, const nn_context_desc *desc) {
    nn_result r = NN_ERR_UNAVAILABLE;
    int k;
    char why[NN__ERRLEN];
    why[0] = 0;
    for (k = 0; k < NN__N_BACKENDS; k++) {
        const nn__backend *b = nn__backends[k];
        ctx->err[0] = 0;
        r = b->open(ctx, device, desc);
        if (r == NN_OK) {
            ctx->backend = b;
            if (why[0]) nn__log(ctx, NN_LOG_INFO, "%s", why);
            return NN_OK;
        }
        if (r != NN_ERR_UNAVAILABLE) return r;
        if (ctx->err[0] && (!device || !why[0])) snprintf(why, sizeof why, "%s", ctx->err);
    }
    if (device) /* the CPU backend's own "takes only cpu" says less than a device backend's reason */
        nn__reason(ctx, r, "NN_DEVICE=%s: %s", device, /* nn_context_create logs it */
                 why[0] && strstr(why, "takes only") == NULL ? why : "no backend takes this device: it takes cpu"
#ifndef NN_NO_OPENCL
                 " (OpenCL: opencl, gpu, an index or a substring of a device's name)"
#else
                 " (nn.h was built with NN_NO_OPENCL)"
#endif
        );
    return r;
}

NN_API nn_result nn_context_create(const nn_context_desc *desc_in, nn_context **out) {
    nn_context_desc desc;
    nn_context *ctx;
    const char *device, *cache, *kdir;
    nn_result r = NN_OK;
    if (!out) return NN_ERR_INVALID_ARGUMENT;
    *out = NULL;
    memset(&desc, 0, sizeof desc);
    if (desc_in) desc = *desc_in;
    ctx = (nn_context *)nn__calloc(1, sizeof *ctx);
    if (!ctx) { /* no context to hold the message: straight to the log */
        if (desc.log) desc.log(desc.log_user, NN_LOG_ERROR, "nn_context_create: out of memory");
        else fprintf(stderr, "nn: nn_context_create: out of memory\n");
        return NN_ERR_OUT_OF_MEMORY;
    }
    ctx->log = desc.log;
    ctx->log_user = desc.log_user;
    ctx->log_level = nn__log_level(&desc);
#ifdef NN__TLS
    if (nn__refused_ctx == ctx) nn__refused_ctx = NULL; /* a refusal on an earlier context at this address */
#endif
    ctx->op_compiled = (uint64_t *)nn__calloc(NN__OP_COUNT, sizeof(uint64_t));
    ctx->lock = (struct nn__lock *)nn__calloc(1, sizeof *ctx->lock);
    if (ctx->lock && !nn__lock_init(ctx->lock)) {
        NN_FREE(ctx->lock);
        ctx->lock = NULL;
    }
    if (!ctx->op_compiled || !ctx->lock) {
        nn__log(ctx, NN_LOG_ERROR, "nn_context_create: out of memory");
        NN_FREE(ctx->op_compiled);
        NN_FREE(ctx->lock);
        NN_FREE(ctx);
        return NN_ERR_OUT_OF_MEMORY;
    }
    if (desc.threads < 0) /* NN_ZERO too: no thread at all */
        r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_context_create: threads %d is not >= 0 (0: all cores)", desc.threads);
    if ((int)desc.log_level < NN_LOG_DEFAULT || desc.log_level > NN_LOG_DEBUG) {
        ctx->log_level = NN_LOG_ERROR;
        r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_context_create: log_level %d is not an nn_log_level", (int)desc.log_level);
    }
    device = desc.device ? desc.device : getenv("NN_DEVICE");
    if (device && !device[0]) device = NULL;
    cache = desc.backend.cache_dir ? desc.backend.cache_dir : getenv("NN_CACHE_DIR");
    if (cache && strcmp(cache, "off") == 0) {
        ctx->cache_dir = NULL;
    } else if (cache && cache[0] ? !(ctx->cache_dir = nn__strdup(cache)) : !nn__default_cache_dir(&ctx->cache_dir)) {
        if (r == NN_OK) r = nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "nn_context_create: out of memory");
    }
    kdir = desc.backend.kernel_dir ? desc.backend.kernel_dir : getenv("NN_KERNEL_DIR");
    if (r == NN_OK && kdir && kdir[0] && !(ctx->kernel_dir = nn__strdup(kdir)))
        r = nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "nn_context_create: out of memory");
    if (r == NN_OK) r = nn__open_backend(ctx, device, &desc);
    if (r != NN_OK) {
        nn__log(ctx, NN_LOG_ERROR, "%s", ctx->err[0] ? ctx->err : nn_result_string(r));
        nn_context_destroy(ctx);
        return r;
    }
    ctx->err[0] = 0;
    nn__log(ctx, NN_LOG_INFO, "backend: %s%s", ctx->backend->kind == NN_BACKEND_OPENCL ? "OpenCL device " : "",
            ctx->backend_name);
    *out = ctx;
    return NN_OK;
}

/* ---- buffers, through the context's backend ---- */

static void nn__buf_free(nn_context *ctx, nn__buf *b) {
    ctx->backend->release(ctx, b);
    memset(b, 0, sizeof *b);
}

/* A buffer of its own, zero-filled when `zero` (the arena and parameters are written
   before they are read, and filling a large buffer costs start-up time). */
static nn_result nn__buf_alloc(nn_context *ctx, nn__buf *b, size_t bytes, int zero, const char *what) {
    memset(b, 0, sizeof *b);
    return ctx->backend->alloc(ctx, b, bytes, zero, what);
}

static nn_result nn__buf_write(nn_context *ctx, nn__buf *b, const void *data, size_t bytes) {
    ctx->stats.h2d_bytes += bytes;
    ctx->stats.h2d_transfers++;
    return ctx->backend->write(ctx, b, data, bytes);
}

static nn_result nn__buf_read(nn_context *ctx, nn__buf *b, void *data, size_t bytes) {
    ctx->stats.d2h_bytes += bytes;
    ctx->stats.d2h_transfers++;
    return ctx->backend->read(ctx, b, data, bytes);
}

/* n float32 values into a buffer of storage type dt (a 16-bit parameter: each rounded to
   nearest even, kernels/storage.h), and back (widened, exact); through a host copy of the
   2-byte words. */
static nn_result nn__buf_write_f32(nn_context *ctx, nn__buf *b, nn_dtype dt, const float *src, int64_t n) {
    size_t bytes = nn__dtype_bytes(dt, n);
    uint16_t *h;
    int64_t i;
    nn_result r;
    if (!nn__dtype_half(dt)) return nn__buf_write(ctx, b, src, bytes);
    h = (uint16_t *)nn__calloc(bytes / 2, 2);
    if (!h) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "out of memory converting %lld values to %s", (long long)n,
                            dt == NN_BF16 ? "bfloat16" : "float16");
    for (i = 0; i < n; i++) h[i] = dt == NN_BF16 ? nn__f32_to_bf16(src[i]) : nn__f32_to_f16(src[i]);
    r = nn__buf_write(ctx, b, h, bytes);
    NN_FREE(h);
    return r;
}

static nn_result nn__buf_read_f32(nn_context *ctx, nn__buf *b, nn_dtype dt, float *dst, int64_t n) {
    size_t bytes = nn__dtype_bytes(dt, n);
    uint16_t *h;
    int64_t i;
    nn_result r;
    if (!nn__dtype_half(dt)) return nn__buf_read(ctx, b, dst, bytes);
    h = (uint16_t *)nn__calloc(bytes / 2, 2);
    if (!h) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "out of memory converting %lld values from %s", (long long)n,
                            dt == NN_BF16 ? "bfloat16" : "float16");
    r = nn__buf_read(ctx, b, h, bytes);
    for (i = 0; i < n && r == NN_OK; i++) dst[i] = dt == NN_BF16 ? nn__bf16_to_f32(h[i]) : nn__f16_to_f32(h[i]);
    NN_FREE(h);
    return r;
}

/* ---- graphs that outlive their context ---- */

/* What a graph whose context was destroyed runs on: every call that would reach a device
   fails with NN_ERR_STATE, and its graphs' later calls (nn_graph_destroy included) are
   safe. The destroyed context itself is the stand-in (its backend closed, this one in its
   place), freed with the last of its graphs: destroying needs no allocation that could
   fail and leave the graphs behind. */
static nn_result nn__dead_fail(nn_context *ctx) {
    return nn__fail(ctx, NN_ERR_STATE, "the graph's context was destroyed (nn_context_destroy) before the graph");
}
static nn_result nn__dead_open(nn_context *ctx, const char *device, const nn_context_desc *desc) {
    (void)device;
    (void)desc;
    return nn__dead_fail(ctx);
}
static void nn__dead_close(nn_context *ctx) { (void)ctx; }
static nn_result nn__dead_alloc(nn_context *ctx, nn__buf *b, size_t bytes, int zero, const char *what) {
    (void)b, (void)bytes, (void)zero, (void)what;
    return nn__dead_fail(ctx);
}
static nn_result nn__dead_view(nn_context *ctx, const nn__buf *base, size_t offset, size_t bytes, nn__buf *out,
                               const char *what) {
    (void)base, (void)offset, (void)bytes, (void)out, (void)what;
    return nn__dead_fail(ctx);
}
static void nn__dead_release(nn_context *ctx, nn__buf *b) {
    (void)ctx;
    if (b->owned) NN_FREE(b->host);
}
static nn_result nn__dead_write(nn_context *ctx, nn__buf *b, const void *src, size_t bytes) {
    (void)b, (void)src, (void)bytes;
    return nn__dead_fail(ctx);
}
static nn_result nn__dead_read(nn_context *ctx, const nn__buf *b, void *dst, size_t bytes) {
    (void)b, (void)dst, (void)bytes;
    return nn__dead_fail(ctx);
}
static nn_result nn__dead_fill(nn_context *ctx, nn__buf *b, float v, size_t bytes) {
    (void)b, (void)v, (void)bytes;
    return nn__dead_fail(ctx);
}
static nn_result nn__dead_prepare(nn_graph *g) { return nn__dead_fail(g->ctx); }
static nn_result nn__dead_run(nn_graph *g, int n) {
    (void)n;
    return nn__dead_fail(g->ctx);
}
static void nn__dead_release_graph(nn_graph *g) { (void)g; }

static const nn__backend nn__dead_backend = {
    "destroyed", NN_BACKEND_CPU, 1, nn__dead_open, nn__dead_close, NULL, nn__dead_alloc, nn__dead_view,
    nn__dead_release, nn__dead_write, nn__dead_read, nn__dead_fill, nn__dead_prepare, nn__dead_run, nn__dead_fail,
    nn__dead_release_graph};

/* What a context's going takes from its graphs (and nn_graph_destroy from its own). */
/* The store's device buffers, when its context goes first. */
static void nn__params_release_device(nn__params *ps) {
    int i;
    for (i = 0; i < ps->n; i++) {
        nn__buf_free(ps->ctx, &ps->p[i].buf);
        ps->p[i].allocated = 0;
    }
}

/* A compiled graph's device objects and plan (the graph keeps its nodes). */
static void nn__graph_release_compiled(nn_graph *g) {
    int i, k;
    for (i = g->n_nodes - 1; i >= 0; i--) { /* views (higher ids) before the buffers they alias */
        nn__node *n = &g->nodes[i];
        if (n->storage != NN__ST_PARAM) nn__buf_free(g->ctx, &n->buf);
        nn__buf_free(g->ctx, &n->scratch_buf);
        for (k = 0; k < n->n_aux; k++) nn__buf_free(g->ctx, &n->aux[k]);
    }
    g->ctx->backend->release_graph(g);
    NN_FREE(g->launches);
    g->launches = NULL;
    g->n_launches = g->cap_launches = 0;
    NN_FREE(g->sched_launch);
    g->sched_launch = NULL;
    nn__buf_free(g->ctx, &g->one);
    nn__buf_free(g->ctx, &g->checks);
    nn__buf_free(g->ctx, &g->claim);
    g->n_checks = g->checks_pending = 0;
    nn__buf_free(g->ctx, &g->arena);
    for (i = 0; i < g->n_arena_parts; i++) nn__buf_free(g->ctx, &g->arena_parts[i]);
    NN_FREE(g->arena_parts);
    g->arena_parts = NULL;
    g->n_arena_parts = 0;
    NN_FREE(g->sched);
    g->sched = NULL;
    if (g->fusion_free) g->fusion_free(g); /* src/ops/fuse.c's chains, set by the compile that found them */
    g->fusion_free = NULL;
}

static void nn__ctx_link(nn_context *ctx, nn_graph *g) {
    g->ctx = ctx;
    g->ctx_prev = NULL;
    g->ctx_next = ctx->graphs;
    if (ctx->graphs) ctx->graphs->ctx_prev = g;
    ctx->graphs = g;
}

static void nn__ctx_unlink(nn_graph *g) {
    nn_context *ctx = g->ctx;
    if (g->ctx_prev) g->ctx_prev->ctx_next = g->ctx_next;
    else ctx->graphs = g->ctx_next;
    if (g->ctx_next) g->ctx_next->ctx_prev = g->ctx_prev;
    g->ctx_prev = g->ctx_next = NULL;
}

static void nn__ctx_free(nn_context *ctx) {
    nn__lock_fini(ctx->lock);
    NN_FREE(ctx->lock);
    NN_FREE(ctx->cache_dir);
    NN_FREE(ctx->kernel_dir);
    NN_FREE(ctx->op_compiled);
    NN_FREE(ctx);
}

/* A graph's context is going: its device objects go now (through the backend still open),
   and it runs on the stand-in from now on. Shared parameters are released once per graph
   sharing them; releasing a released buffer does nothing. */
static void nn__graph_orphan(nn_graph *g) {
    nn__graph_release_compiled(g);
    nn__params_release_device(g->params);
    g->compiled = 1; /* nothing more can be built or compiled */
    if (g->status == NN_OK) g->status = NN_ERR_STATE;
}

/* Destroying a context invalidates its graphs: each keeps its host memory until
   nn_graph_destroy, and every call on it then fails with NN_ERR_STATE. */
NN_API void nn_context_destroy(nn_context *ctx) {
    nn_graph *g;
    int n = 0;
    if (!ctx || ctx->dead_refs) return;
#ifdef NN__TLS
    if (nn__refused_ctx == ctx) nn__refused_ctx = NULL;
#endif
    for (g = ctx->graphs; g; g = g->ctx_next, n++) nn__graph_orphan(g);
    if (ctx->backend) ctx->backend->close(ctx);
    if (n == 0) {
        nn__ctx_free(ctx);
        return;
    }
    NN_FREE(ctx->cache_dir);
    NN_FREE(ctx->kernel_dir);
    ctx->cache_dir = ctx->kernel_dir = NULL;
    memset(&ctx->dev, 0, sizeof ctx->dev);
    ctx->backend = &nn__dead_backend;
    strcpy(ctx->backend_name, "destroyed");
    ctx->dead_refs = n;
    nn__log(ctx, NN_LOG_WARN, "nn_context_destroy: %d graph(s) still use this context; they now fail with NN_ERR_STATE", n);
}

/* One call at a time per context (and its graphs). A call that touches the context's
   backend, parameters or counters holds the context's lock for its whole run:
   - nn__ctx_enter: a call that returns an nn_result is refused with NN_ERR_STATE, and
     changes nothing, while another thread's call runs (the API's promise); the message is
     the refused thread's own (nn_context_last_error there), so the running call's is not touched;
   - nn__ctx_wait: a call that cannot report a refusal (nn_graph_create, nn_graph_destroy,
     nn_param, the counters) waits for the running call to return instead.
   A call made from inside a call on the same thread (a log callback) is refused by the
   first and goes on under the running call by the second. */
static nn_result nn__ctx_enter(nn_context *ctx, const char *fn) {
    int r = nn__lock_try(ctx->lock);
    const char *why;
    if (r == 1) return NN_OK;
    why = r == 0 ? "the context is in use by another thread (a context and its graphs are one thread's at a time: use "
                   "one context per thread, or hand it over when the other thread's call returns)"
                 : "called from inside another call on the same context (a log callback)";
#ifdef NN__TLS
    snprintf(nn__refused_msg, sizeof nn__refused_msg, "%s: %s", fn, why);
    nn__refused_ctx = ctx;
    nn__log(ctx, NN_LOG_DEBUG, "error: %s", nn__refused_msg);
    return NN_ERR_STATE;
#else
    return nn__fail(ctx, NN_ERR_STATE, "%s: %s", fn, why); /* where there is no thread-local storage */
#endif
}

static void nn__ctx_leave(nn_context *ctx) { nn__lock_release(ctx->lock); }

/* Waits for another thread's call on ctx to return; 1 when this call must leave. */
static int nn__ctx_wait(const nn_context *ctx) { return nn__lock_wait(ctx->lock); }

/* An nn_result call on ctx, run holding the context (refused when another thread's call
   runs): `return NN__EXCLUSIVE(ctx, "nn_x", nn__x(...));`. */
#define NN__EXCLUSIVE(ctx, fn, call) (nn__ctx_enter((ctx), (fn)) != NN_OK ? NN_ERR_STATE : nn__ctx_left((ctx), (call)))
static nn_result nn__ctx_left(nn_context *ctx, nn_result r) {
    nn__ctx_leave(ctx);
    return r;
}

NN_API const char *nn_context_last_error(const nn_context *ctx) {
    if (!ctx) return "no context";
#ifdef NN__TLS
    if (nn__refused_ctx == ctx) return nn__refused_msg;
#endif
    return ctx->err;
}
NN_API nn_result nn_context_device(const nn_context *ctx, nn_device_info *out) {
    if (!out) return NN_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    if (!ctx) return NN_ERR_INVALID_ARGUMENT;
    *out = ctx->dev.info;
    out->backend = ctx->backend ? ctx->backend->kind : NN_BACKEND_CPU;
    snprintf(out->name, sizeof out->name, "%.127s", ctx->backend_name); /* "destroyed" after nn_context_destroy */
    return NN_OK;
}
/* The counters change during calls: reading them waits for another thread's call. */
NN_API nn_result nn_context_stats(const nn_context *ctx, nn_stats *out) {
    int held;
    if (!out) return NN_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    if (!ctx) return NN_ERR_INVALID_ARGUMENT;
    held = nn__ctx_wait(ctx);
    *out = ctx->stats;
    if (held) nn__lock_release(ctx->lock);
    return NN_OK;
}
NN_API void nn_context_reset_stats(nn_context *ctx) {
    if (ctx) {
        int held = nn__ctx_wait(ctx);
        memset(&ctx->stats, 0, sizeof ctx->stats);
        if (held) nn__ctx_leave(ctx);
    }
}

NN_API int nn_op_count(void) { return NN__OP_COUNT; }
NN_API const char *nn_op_name(int op) { return op >= 0 && op < NN__OP_COUNT ? nn__op(op)->name : NULL; }
NN_API nn_result nn_context_op_compiled(const nn_context *ctx, int op, uint64_t *count) {
    int held;
    if (!count) return NN_ERR_INVALID_ARGUMENT;
    *count = 0;
    if (!ctx || op < 0 || op >= NN__OP_COUNT) return NN_ERR_INVALID_ARGUMENT;
    held = nn__ctx_wait(ctx);
    *count = ctx->op_compiled[op];
    if (held) nn__lock_release(ctx->lock);
    return NN_OK;
}

/* Devices of every device backend, numbered in backend order. */
NN_API nn_result nn_list_devices(nn_device_info *out, int max, int *count) {
    int k, n = 0;
    if (!count || max < 0 || (max > 0 && !out)) {
        if (count) *count = 0;
        return NN_ERR_INVALID_ARGUMENT;
    }
    for (k = 0; k < NN__N_BACKENDS; k++) {
        if (!nn__backends[k]->list_devices) continue;
        n += nn__backends[k]->list_devices(out && n < max ? out + n : NULL, max > n ? max - n : 0);
    }
    *count = n;
    return NN_OK;
}
