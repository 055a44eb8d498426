/* The CPU backend: buffers are host memory, and a run calls each scheduled op's CPU body
   (src/ops/FAMILY.c) in order. Always present, and tried last. */
#include "../base/internal.h"
#include "../base/registry.h"

/* 1 when this build fuses a*b + c into one rounding although src/base/fp_begin.h turns
   contraction off (clang's -ffp-contract=fast and -ffast-math override every pragma): its
   CPU results then differ in the last bits from other builds', and the log says so. Probed
   as the vector code is compiled (FMA enabled, where the CPU has it) and as the rest is, on
   (1 + 2^-12) * (1 + 2^-12) - (1 + 2^-11): 2^-24 fused, 0 rounded. */
static float nn__fp_probe(const volatile float *v) { return v[0] * v[1] + v[2]; }
#if defined(NN__VM_X86)
__attribute__((target("avx2,fma"))) static float nn__fp_probe_fma(const volatile float *v) { return v[0] * v[1] + v[2]; }
#endif
static int nn__fp_fuses(void) {
    static const volatile float v[3] = {1.000244140625f, 1.000244140625f, -1.00048828125f};
#if defined(NN__VM_X86)
    if (nn__vm_isa() >= 1 && nn__fp_probe_fma(v) != 0.0f) return 1;
#endif
    return nn__fp_probe(v) != 0.0f;
}

static nn_result nn__cpub_open(nn_context *ctx, const char *device, const nn_context_desc *desc) {
    if (device && strcmp(device, "cpu") != 0) {
        nn__reason(ctx, NN_ERR_UNAVAILABLE, "the CPU backend takes only \"cpu\"");
        return NN_ERR_UNAVAILABLE;
    }
    /* the pool, and in it the workspace that GEMMs fall back on when their packing buffers
       cannot be allocated (nn__gemm_small): a run never depends on an allocation for its
       results */
    ctx->threads = nn__threadpool_create(desc->threads);
    if (!ctx->threads || !nn__threadpool_workspace(ctx->threads, nn__sgemm_small_bytes())) {
        nn__threadpool_destroy(ctx->threads);
        ctx->threads = NULL;
        return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "the CPU backend: out of memory for its thread pool");
    }
    strcpy(ctx->backend_name, "cpu");
    memset(&ctx->dev, 0, sizeof ctx->dev);
    ctx->dev.cpu_tuned = 1;
    ctx->dev.align = 64;
    ctx->dev.info.backend = NN_BACKEND_CPU;
    ctx->dev.info.index = -1;
    ctx->dev.info.is_cpu = 1;
    strcpy(ctx->dev.info.name, "cpu");
    {
        const char *prof = getenv("NN_CL_PROFILE");
        if (prof && prof[0] && strcmp(prof, "0") != 0)
            nn__log(ctx, NN_LOG_WARN, "NN_CL_PROFILE=%s has no effect on the CPU backend (it times OpenCL kernels): pick "
                    "an OpenCL device (NN_DEVICE=opencl) to profile, or unset it", prof);
    }
    if (nn__fp_fuses())
        nn__log(ctx, NN_LOG_INFO, "nn.h was compiled with multiply-adds fused (clang's -ffp-contract=fast or "
                "-ffast-math, which override its pragmas): CPU results differ in the last bits from other builds'; "
                "compile with -ffp-contract=on to match them");
    return NN_OK;
}

static void nn__cpub_close(nn_context *ctx) {
    nn__threadpool_destroy(ctx->threads);
    ctx->threads = NULL;
}

static nn_result nn__cpub_alloc(nn_context *ctx, nn__buf *b, size_t bytes, int zero, const char *what) {
    (void)zero; /* calloc'd either way */
    b->bytes = bytes;
    b->host = (float *)nn__calloc(1, bytes ? bytes : 4);
    if (!b->host)
        return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %llu bytes", what, (unsigned long long)bytes);
    b->owned = 1;
    return NN_OK;
}

static nn_result nn__cpub_view(nn_context *ctx, const nn__buf *base, size_t offset, size_t bytes, nn__buf *out,
                              const char *what) {
    (void)ctx;
    (void)what;
    memset(out, 0, sizeof *out);
    out->bytes = bytes;
    out->offset = offset;
    out->host = (float *)((char *)base->host + offset);
    return NN_OK;
}

static void nn__cpub_release(nn_context *ctx, nn__buf *b) {
    (void)ctx;
    if (b->owned) NN_FREE(b->host);
}

static nn_result nn__cpub_write(nn_context *ctx, nn__buf *b, const void *src, size_t bytes) {
    (void)ctx;
    memcpy(b->host, src, bytes);
    return NN_OK;
}

static nn_result nn__cpub_read(nn_context *ctx, const nn__buf *b, void *dst, size_t bytes) {
    (void)ctx;
    memcpy(dst, b->host, bytes);
    return NN_OK;
}

static nn_result nn__cpub_fill(nn_context *ctx, nn__buf *b, float value, size_t bytes) {
    size_t i, n = bytes / sizeof(float);
    (void)ctx;
    for (i = 0; i < n; i++) b->host[i] = value;
    return NN_OK;
}

static nn_result nn__cpub_prepare(nn_graph *g) {
    (void)g;
    return NN_OK;
}

/* A fused chain's nodes (nn__node.fused, src/ops/fuse.c) run as one pass at its last node:
   one launch for the chain. */
static nn_result nn__cpub_run(nn_graph *g, int n_sched) {
    int i, runs = 0;
    for (i = g->run_from; i < n_sched; i++) { /* run_from: 0 but for a data-parallel update part */
        nn__node *n = &g->nodes[g->sched[i]];
        nn_result r = NN_OK;
        if (n->fused >= 0) {
            r = n->fused > 0 ? nn__fuse()->cpu(g, n) : nn__op(n->op)->cpu(g, n);
            runs++;
        }
        if (r != NN_OK) return r;
        g->progress++;
    }
    g->ctx->stats.kernel_launches += (uint64_t)runs;
    return NN_OK;
}

static nn_result nn__cpub_finish(nn_context *ctx) {
    (void)ctx;
    return NN_OK;
}

static void nn__cpub_release_graph(nn_graph *g) { (void)g; }

static const nn__backend nn__cpu_backend = {
    "cpu", NN_BACKEND_CPU, 1, nn__cpub_open, nn__cpub_close, NULL, nn__cpub_alloc, nn__cpub_view, nn__cpub_release,
    nn__cpub_write, nn__cpub_read, nn__cpub_fill, nn__cpub_prepare, nn__cpub_run, nn__cpub_finish, nn__cpub_release_graph};
