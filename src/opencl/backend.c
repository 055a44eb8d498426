/* The OpenCL backend: device discovery, programs built from kernels/NAME.cl with an on-disk
   cache, buffers, and the launches that ops' device plans record (nn__launch) turned into
   kernels with their arguments set once, at compile time, so a step only enqueues. */
#include "../base/internal.h"
#include "../base/registry.h"
#include "../../kernels/attention_tile.h" /* NN__ATTN_FLASH_DEFAULT */
#include "cl_api.h" /* the cl* declarations; the library is loaded by nn__cl_load() (opencl/loader.c) */

#define NN__CL_MAX_DEVICES 32

/* The backend's state (ctx->bk). */
typedef struct nn__cl {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    char name[128], vendor[128], driver[128], version[128];
    cl_ulong max_alloc;
    cl_program programs[3 * 64];      /* one per kernels/NAME.cl and storage type (f32, bf16, f16: the
                                         launch's store), built on first use */
    cl_program *gen;                  /* programs of generated source (nn__launch.source: fused chains,
                                         src/ops/fuse.c), each built once, found by gen_key */
    uint64_t *gen_key;
    int n_gen, cap_gen;
    unsigned char *guard_seen;        /* NN_CL_GUARDS: each guard read before and after its launch */
    size_t guard_cap;                 /* bytes of guard_seen */
    int cache_dir_state;              /* ctx->cache_dir: 0 not looked at yet, 1 used, -1 refused */
    /* the staging ring of host writes (nn__cl_write): a write of at most NN__CL_STAGE_MAX
       bytes is copied into the next free slot and enqueued without blocking, so the host
       runs ahead of the device (nn_graph_step returns before the step is done). Slots
       [0, staged) may still be in flight; a blocking read or clFinish frees them all, and
       a write that finds every slot taken waits (clFinish) first. NN_CL_STAGING=0: every
       write blocks. */
    unsigned char *stage[8];
    size_t stage_cap[8];
    int staged, staging;
    int profile;   /* NN_CL_PROFILE: the queue records each launch's start and end (nn__cl_prof_read),
                      and a graph's release logs its kernels' device times (nn__cl_prof_report) */
    int exact_div; /* the device divides and takes square roots correctly rounded when asked
                      (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT): programs are built with
                      -cl-fp32-correctly-rounded-divide-sqrt, so a / b and sqrt give the CPU
                      backend's bits (NVIDIA's default division is 2.5 ulp) */
} nn__cl;

#define NN__CL_STAGES 8
#define NN__CL_STAGE_MAX ((size_t)1 << 20)

/* NN_CL_GUARDS=1 (a debugging aid; the test binary sets it): every buffer gets this many
   bytes after its end (a whole padded group of 64 floats) that no kernel may write; a run
   fills them before each launch, reads them before and after it, and fails naming the
   kernel whose launch changed one (a work-item without its bound check, say). */
#define NN__CL_GUARD 256

#define NN__CL(ctx) ((nn__cl *)(ctx)->bk)

/* The name of an OpenCL error code (OpenCL 1.2's, and cl_khr_icd's -1001). */
static const char *nn__cl_errstr(cl_int e) {
    static const char *const low[] = { /* 0 .. -19 */
        "CL_SUCCESS", "CL_DEVICE_NOT_FOUND", "CL_DEVICE_NOT_AVAILABLE", "CL_COMPILER_NOT_AVAILABLE",
        "CL_MEM_OBJECT_ALLOCATION_FAILURE", "CL_OUT_OF_RESOURCES", "CL_OUT_OF_HOST_MEMORY",
        "CL_PROFILING_INFO_NOT_AVAILABLE", "CL_MEM_COPY_OVERLAP", "CL_IMAGE_FORMAT_MISMATCH",
        "CL_IMAGE_FORMAT_NOT_SUPPORTED", "CL_BUILD_PROGRAM_FAILURE", "CL_MAP_FAILURE",
        "CL_MISALIGNED_SUB_BUFFER_OFFSET", "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
        "CL_COMPILE_PROGRAM_FAILURE", "CL_LINKER_NOT_AVAILABLE", "CL_LINK_PROGRAM_FAILURE", "CL_DEVICE_PARTITION_FAILED",
        "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"};
    static const char *const invalid[] = { /* -30 .. -68 */
        "CL_INVALID_VALUE", "CL_INVALID_DEVICE_TYPE", "CL_INVALID_PLATFORM", "CL_INVALID_DEVICE",
        "CL_INVALID_CONTEXT", "CL_INVALID_QUEUE_PROPERTIES", "CL_INVALID_COMMAND_QUEUE", "CL_INVALID_HOST_PTR",
        "CL_INVALID_MEM_OBJECT", "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR", "CL_INVALID_IMAGE_SIZE", "CL_INVALID_SAMPLER",
        "CL_INVALID_BINARY", "CL_INVALID_BUILD_OPTIONS", "CL_INVALID_PROGRAM", "CL_INVALID_PROGRAM_EXECUTABLE",
        "CL_INVALID_KERNEL_NAME", "CL_INVALID_KERNEL_DEFINITION", "CL_INVALID_KERNEL", "CL_INVALID_ARG_INDEX",
        "CL_INVALID_ARG_VALUE", "CL_INVALID_ARG_SIZE", "CL_INVALID_KERNEL_ARGS", "CL_INVALID_WORK_DIMENSION",
        "CL_INVALID_WORK_GROUP_SIZE", "CL_INVALID_WORK_ITEM_SIZE", "CL_INVALID_GLOBAL_OFFSET",
        "CL_INVALID_EVENT_WAIT_LIST", "CL_INVALID_EVENT", "CL_INVALID_OPERATION", "CL_INVALID_GL_OBJECT",
        "CL_INVALID_BUFFER_SIZE", "CL_INVALID_MIP_LEVEL", "CL_INVALID_GLOBAL_WORK_SIZE", "CL_INVALID_PROPERTY",
        "CL_INVALID_IMAGE_DESCRIPTOR", "CL_INVALID_COMPILER_OPTIONS", "CL_INVALID_LINKER_OPTIONS",
        "CL_INVALID_DEVICE_PARTITION_COUNT"};
    if (e <= 0 && e > -(cl_int)(sizeof low / sizeof low[0])) return low[-e];
    if (e <= -30 && e > -30 - (cl_int)(sizeof invalid / sizeof invalid[0])) return invalid[-30 - e];
    if (e == -1001) return "CL_PLATFORM_NOT_FOUND_KHR";
    return "an unknown OpenCL error";
}

/* Every OpenCL device of every platform, in the order NN_DEVICE=<index> counts them. A
   failed clGetPlatformIDs, or clGetDeviceIDs of a platform, is described in why (the
   first such failure; empty when there was none): "no platform" (CL_PLATFORM_NOT_FOUND_KHR)
   and "no device" (CL_DEVICE_NOT_FOUND) are answers, not failures. */
static int nn__cl_enumerate(cl_platform_id *plat_out, cl_device_id *dev_out, int max, char *why, size_t why_n) {
    cl_platform_id plats[16];
    cl_uint np = 0, p;
    cl_int err;
    int n = 0;
    why[0] = 0;
    err = clGetPlatformIDs(16, plats, &np);
    if (err != CL_SUCCESS) {
        if (err != CL_PLATFORM_NOT_FOUND_KHR)
            snprintf(why, why_n, "clGetPlatformIDs failed: %s (%d)", nn__cl_errstr(err), (int)err);
        return 0;
    }
    if (np > 16) np = 16;
    for (p = 0; p < np; p++) {
        cl_device_id devs[NN__CL_MAX_DEVICES];
        cl_uint nd = 0, d;
        err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, NN__CL_MAX_DEVICES, devs, &nd);
        if (err != CL_SUCCESS) {
            if (err != CL_DEVICE_NOT_FOUND && !why[0]) {
                char pname[128];
                if (clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL) != CL_SUCCESS)
                    pname[0] = 0;
                pname[sizeof pname - 1] = 0;
                snprintf(why, why_n, "clGetDeviceIDs failed on OpenCL platform %u%s%s%s: %s (%d)", (unsigned)p,
                         pname[0] ? " (" : "", pname, pname[0] ? ")" : "", nn__cl_errstr(err), (int)err);
            }
            continue;
        }
        if (nd > NN__CL_MAX_DEVICES) nd = NN__CL_MAX_DEVICES;
        for (d = 0; d < nd && n < max; d++) {
            plat_out[n] = plats[p];
            dev_out[n] = devs[d];
            n++;
        }
    }
    return n;
}

static cl_device_type nn__cl_type(cl_device_id d) {
    cl_device_type t = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    return t;
}

static void nn__cl_str(cl_device_id d, cl_device_info what, char *buf, size_t n) {
    buf[0] = 0;
    if (clGetDeviceInfo(d, what, n, buf, NULL) != CL_SUCCESS) buf[0] = 0;
    buf[n - 1] = 0;
}

/* What nn_list_devices and nn_context_device report of device index. */
static void nn__cl_info(cl_platform_id plat, cl_device_id dev, int index, nn_device_info *out) {
    cl_device_type t = nn__cl_type(dev);
    memset(out, 0, sizeof *out);
    out->backend = NN_BACKEND_OPENCL;
    out->index = index;
    out->is_gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
    out->is_cpu = (t & CL_DEVICE_TYPE_CPU) != 0;
    nn__cl_str(dev, CL_DEVICE_NAME, out->name, sizeof out->name);
    if (clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof out->platform, out->platform, NULL) != CL_SUCCESS) out->platform[0] = 0;
    out->platform[sizeof out->platform - 1] = 0;
}

static int nn__cl_list_devices(nn_device_info *out, int max) {
    cl_platform_id plats[NN__CL_MAX_DEVICES];
    cl_device_id devs[NN__CL_MAX_DEVICES];
    char why[300];
    int n, i;
    if (!nn__cl_load()) return 0;
    nn__cl_discovery_lock();
    n = nn__cl_enumerate(plats, devs, NN__CL_MAX_DEVICES, why, sizeof why);
    for (i = 0; i < n && out && i < max; i++) nn__cl_info(plats[i], devs[i], i, &out[i]);
    nn__cl_discovery_unlock();
    return n;
}

/* Picks a device for the request: "opencl" (first GPU, else first device), an index, or a
   name substring; NULL: the first GPU or -1. Returns the index or -1. */
static int nn__cl_pick(const char *req, cl_platform_id *plats, cl_device_id *devs, int n) {
    int i;
    (void)plats;
    if (!req || strcmp(req, "opencl") == 0 || strcmp(req, "gpu") == 0) {
        for (i = 0; i < n; i++) if (nn__cl_type(devs[i]) & CL_DEVICE_TYPE_GPU) return i;
        return (req && strcmp(req, "opencl") == 0 && n > 0) ? 0 : -1;
    }
    if (req[0] >= '0' && req[0] <= '9') {
        char *end;
        long k = strtol(req, &end, 10);
        return (*end == 0 && k >= 0 && k < n) ? (int)k : -1;
    }
    for (i = 0; i < n; i++) {
        char name[256];
        nn__cl_str(devs[i], CL_DEVICE_NAME, name, sizeof name);
        if (strstr(name, req)) return i;
    }
    return -1;
}

static void nn__cl_close(nn_context *ctx) {
    nn__cl *cl = NN__CL(ctx);
    int i;
    if (!cl) return;
    if (cl->staged && cl->queue) clFinish(cl->queue); /* the ring's last writes read its slots */
    for (i = 0; i < NN__CL_STAGES; i++) NN_FREE(cl->stage[i]);
    for (i = 0; i < 3 * 64; i++)
        if (cl->programs[i]) clReleaseProgram(cl->programs[i]);
    for (i = 0; i < cl->n_gen; i++) clReleaseProgram(cl->gen[i]);
    NN_FREE(cl->gen);
    NN_FREE(cl->gen_key);
    if (cl->queue) clReleaseCommandQueue(cl->queue);
    if (cl->context) clReleaseContext(cl->context);
    NN_FREE(cl->guard_seen);
    NN_FREE(cl);
    ctx->bk = NULL;
}

/* Opens device dev (number index in NN_DEVICE's count) of platform plat. */
static nn_result nn__cl_open_device(nn_context *ctx, cl_platform_id plat, cl_device_id dev, int index, int tuning) {
    nn__cl *cl = (nn__cl *)nn__calloc(1, sizeof *cl);
    nn__device *d = &ctx->dev;
    cl_int err;
    cl_uint align_bits = 0, units = 0;
    cl_ulong local_mem = 0;
    cl_context_properties props[3];
    cl_device_type t = 0;
    cl_int terr = clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof t, &t, NULL); /* decides the tuning: checked below */
    if (!cl) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "OpenCL: out of memory");
    ctx->bk = cl;
    props[0] = CL_CONTEXT_PLATFORM;
    props[1] = (cl_context_properties)plat;
    props[2] = 0;
    cl->platform = plat;
    cl->device = dev;
    memset(d, 0, sizeof *d);
    d->cpu_tuned = (t & CL_DEVICE_TYPE_CPU) != 0;
    nn__cl_info(plat, dev, index, &d->info);
    if (tuning == NN_TUNING_AUTO) { /* the device type decides unless $NN_CL_TUNING says */
        const char *env = getenv("NN_CL_TUNING");
        if (env && strcmp(env, "gpu") == 0) tuning = NN_TUNING_GPU;
        if (env && strcmp(env, "cpu") == 0) tuning = NN_TUNING_CPU;
    }
    if (tuning != NN_TUNING_AUTO) d->cpu_tuned = tuning == NN_TUNING_CPU;
    {
        const char *env = getenv("NN_CL_GUARDS");
        if (env && env[0] && strcmp(env, "0") != 0) d->guard = NN__CL_GUARD;
        env = getenv("NN_CL_STAGING");
        cl->staging = !(env && strcmp(env, "0") == 0);
        env = getenv("NN_CL_PROFILE");
        cl->profile = env && env[0] && strcmp(env, "0") != 0;
        env = getenv("NN_CL_ATTN"); /* the GPU attention kernels: flash or tiled */
        d->attn_flash = env && strcmp(env, "flash") == 0 ? 1 : env && strcmp(env, "tiled") == 0 ? 0 : NN__ATTN_FLASH_DEFAULT;
    }
    nn__cl_str(dev, CL_DEVICE_NAME, cl->name, sizeof cl->name);
    if (!cl->name[0]) snprintf(cl->name, sizeof cl->name, "OpenCL device %d (no name)", index);
    nn__cl_str(dev, CL_DEVICE_VENDOR, cl->vendor, sizeof cl->vendor);
    nn__cl_str(dev, CL_DRIVER_VERSION, cl->driver, sizeof cl->driver);
    nn__cl_str(dev, CL_DEVICE_VERSION, cl->version, sizeof cl->version);
    /* what device plans and allocations go by: a failed query is an error, not a zero (the
       device type too: it picks the CPU- or GPU-tuned kernels, whose sums differ) */
    if (terr != CL_SUCCESS)
        return nn__fail(ctx, NN_ERR_DEVICE, "clGetDeviceInfo(CL_DEVICE_TYPE) failed on %s: %s (%d)", cl->name,
                        nn__cl_errstr(terr), (int)terr);
#define NN__CL_INFO(what, var)                                                                              \
    if ((err = clGetDeviceInfo(dev, what, sizeof(var), &(var), NULL)) != CL_SUCCESS)                        \
    return nn__fail(ctx, NN_ERR_DEVICE, "clGetDeviceInfo(" #what ") failed on %s: %s (%d)", cl->name,        \
                    nn__cl_errstr(err), (int)err)
    NN__CL_INFO(CL_DEVICE_MAX_WORK_GROUP_SIZE, d->max_wg);
    NN__CL_INFO(CL_DEVICE_LOCAL_MEM_SIZE, local_mem);
    NN__CL_INFO(CL_DEVICE_MAX_COMPUTE_UNITS, units);
    NN__CL_INFO(CL_DEVICE_MAX_MEM_ALLOC_SIZE, cl->max_alloc);
    NN__CL_INFO(CL_DEVICE_MEM_BASE_ADDR_ALIGN, align_bits);
#undef NN__CL_INFO
    d->local_mem = local_mem;
    d->units = units;
    { /* a hint only (the CPU-tuned GEMM's vector width): a failed query leaves 0 */
        cl_uint w = 0;
        if (clGetDeviceInfo(dev, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof w, &w, NULL) == CL_SUCCESS) d->vec_float = w;
    }
    {
        cl_device_fp_config fp = 0;
        const char *env = getenv("NN_CL_EXACT_DIV"); /* 0: the driver's default division, to compare */
        cl->exact_div = clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS &&
                        (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) && !(env && strcmp(env, "0") == 0);
    }
    { /* NN_CL_MAX_ALLOC=bytes, a test hook: a smaller largest allocation than the device's */
        const char *env = getenv("NN_CL_MAX_ALLOC");
        unsigned long long v = env && env[0] ? strtoull(env, NULL, 10) : 0;
        if (v > 0 && v < cl->max_alloc) cl->max_alloc = v;
    }
    d->max_alloc = cl->max_alloc;
    d->align = align_bits / 8 > 256 ? align_bits / 8 : 256;
    if (d->max_wg == 0) d->max_wg = 1;
    nn__gemm_env_read(ctx, d);
    snprintf(ctx->backend_name, sizeof ctx->backend_name, "%s", cl->name);
    err = CL_SUCCESS;
    cl->context = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    if (!cl->context && (err == CL_OUT_OF_HOST_MEMORY || err == CL_OUT_OF_RESOURCES)) {
        /* drivers (PoCL) sometimes refuse a context while other threads create theirs: once more */
        nn__log(ctx, NN_LOG_WARN, "clCreateContext failed on %s: %s (%d); trying once more in 50 ms", cl->name,
                nn__cl_errstr(err), (int)err);
        nn__sleep_ms(50);
        err = CL_SUCCESS;
        cl->context = clCreateContext(props, 1, &dev, NULL, NULL, &err);
        if (!cl->context)
            return nn__fail(ctx, NN_ERR_DEVICE, "clCreateContext failed on %s twice: %s (%d)", cl->name,
                            nn__cl_errstr(err), (int)err);
    }
    if (!cl->context)
        return nn__fail(ctx, NN_ERR_DEVICE, "clCreateContext failed on %s: %s (%d)", cl->name, nn__cl_errstr(err),
                        (int)err);
    cl->queue = clCreateCommandQueue(cl->context, dev, cl->profile ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (!cl->queue)
        return nn__fail(ctx, NN_ERR_DEVICE, "clCreateCommandQueue failed on %s: %s (%d)", cl->name, nn__cl_errstr(err),
                        err);
    return NN_OK;
}

/* device: NULL (the first GPU, else the first device), "opencl", an index or a name
   substring. Not finding one is NN_ERR_UNAVAILABLE (the engine then tries the CPU backend
   when none was named, and fails with this reason when one was); a named one that is not
   found because the driver failed (clGetPlatformIDs, clGetDeviceIDs) is NN_ERR_DEVICE with
   the call and its error. */
/* "0: NAME (CPU), 1: NAME (GPU)": the devices found, as NN_DEVICE=<index> numbers them. */
static void nn__cl_device_list(cl_device_id *devs, int n, char *out, size_t size) {
    size_t used = 0;
    int i;
    out[0] = 0;
    for (i = 0; i < n && used < size; i++) {
        char name[128];
        cl_device_type t = nn__cl_type(devs[i]);
        nn__cl_str(devs[i], CL_DEVICE_NAME, name, sizeof name);
        used += (size_t)snprintf(out + used, size - used, "%s%d: %s (%s)", i ? ", " : "", i, name,
                                 (t & CL_DEVICE_TYPE_GPU) ? "GPU" : (t & CL_DEVICE_TYPE_CPU) ? "CPU" : "other");
    }
}

static nn_result nn__cl_open_locked(nn_context *ctx, const char *device, const nn_context_desc *desc) {
    cl_platform_id plats[NN__CL_MAX_DEVICES];
    cl_device_id devs[NN__CL_MAX_DEVICES];
    char why[300];
    int n, pick;
    nn_result r;
    char list[600];
    if (device && strcmp(device, "cpu") == 0) return NN_ERR_UNAVAILABLE;
    if (!nn__cl_load()) {
        if (!device) return nn__reason(ctx, NN_ERR_UNAVAILABLE, "%s: using the CPU backend", nn__cl_ld.why);
        return nn__reason(ctx, NN_ERR_UNAVAILABLE, "%s; it takes cpu here", nn__cl_ld.why);
    }
    n = nn__cl_enumerate(plats, devs, NN__CL_MAX_DEVICES, why, sizeof why);
    pick = nn__cl_pick(device, plats, devs, n);
    nn__cl_device_list(devs, n, list, sizeof list);
    if (pick < 0) { /* what the driver said, when it failed, else what was found and why none was taken */
        if (!device && why[0] && n == 0) return nn__reason(ctx, NN_ERR_UNAVAILABLE, "OpenCL: %s: using the CPU backend", why);
        if (!device && n == 0) return nn__reason(ctx, NN_ERR_UNAVAILABLE, "OpenCL: no device found: using the CPU backend");
        if (!device) /* found, and passed over: only a GPU is taken unasked */
            return nn__reason(ctx, NN_ERR_UNAVAILABLE, "OpenCL: %d device%s found (%s), no GPU among them: using the CPU backend "
                               "(NN_DEVICE=opencl or an index takes an OpenCL device anyway)", n, n == 1 ? "" : "s", list);
        if (why[0] && n == 0) return nn__fail(ctx, NN_ERR_DEVICE, "%s; it takes cpu here", why);
        if (why[0])
            return nn__fail(ctx, NN_ERR_DEVICE, "no such OpenCL device among the %d found (%s); %s; it takes cpu, opencl, "
                            "gpu, an index 0 to %d, or a substring of a name", n, list, why, n - 1);
        {
            char valid[96];
            if (n) snprintf(valid, sizeof valid, "cpu, opencl, gpu, an index 0 to %d, or a substring of a name", n - 1);
            else snprintf(valid, sizeof valid, "cpu");
            return nn__reason(ctx, NN_ERR_UNAVAILABLE, "%s among the %d OpenCL device%s found%s%s%s; it takes %s",
                            strcmp(device, "gpu") == 0 ? "no GPU" : "no such device", n, n == 1 ? "" : "s", n ? " (" : "",
                            n ? list : "", n ? ")" : "", valid);
        }
    }
    if (why[0]) nn__log(ctx, NN_LOG_WARN, "OpenCL: %s; using the %d device%s found", why, n, n == 1 ? "" : "s");
    r = nn__cl_open_device(ctx, plats[pick], devs[pick], pick, desc->backend.tuning);
    if (r != NN_OK) nn__cl_close(ctx);
    else if (nn__cl_ld.note[0]) nn__log(ctx, NN_LOG_INFO, "%s", nn__cl_ld.note);
    return r;
}

/* Finding and opening the device, one thread at a time (nn__cl_discovery). */
static nn_result nn__cl_open(nn_context *ctx, const char *device, const nn_context_desc *desc) {
    nn_result r;
    if (device && strcmp(device, "cpu") == 0) return NN_ERR_UNAVAILABLE;
    nn__cl_discovery_lock();
    r = nn__cl_open_locked(ctx, device, desc);
    nn__cl_discovery_unlock();
    return r;
}

/* ---- programs: source lines, the disk cache, building ---- */

static int nn__cl_source_index(const char *name) {
    int i;
    for (i = 0; i < NN__CL_NSOURCES; i++)
        if (strcmp(nn__cl_sources[i].name, name) == 0) return i;
    return -1;
}

/* Appends n bytes of s to the growing string *buf (length *len, capacity *cap). */
static int nn__cl_cat(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t c = (*len + n + 1) * 2;
        char *p = (char *)NN_REALLOC(*buf, c);
        if (!p) return 0;
        *buf = p;
        *cap = c;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
    return 1;
}

/* dir/file as one string that starts with #line 1 "kernels/file", its #include "x.h"
   lines replaced by dir/x.h between #line directives, as gen/amalg.c embeds them; NULL
   when a file cannot be read. */
static char *nn__cl_read_kernel(const char *dir, const char *file, int depth) {
    char path[1024], line[300];
    char *text = NULL, *out = NULL;
    size_t len = 0, cap = 0, at = 0, end;
    long size = -1;
    int lineno = 1, ok;
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (depth > 8 || !(f = fopen(path, "rb"))) return NULL;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size >= 0 && fseek(f, 0, SEEK_SET) == 0) text = (char *)NN_MALLOC((size_t)size + 1);
    ok = text && fread(text, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (ok) text[size] = 0;
    snprintf(line, sizeof line, "#line 1 \"kernels/%s\"\n", file);
    ok = ok && nn__cl_cat(&out, &len, &cap, line, strlen(line));
    while (ok && at < (size_t)size) {
        const char *l = text + at, *q;
        size_t k = 0;
        for (end = at; end < (size_t)size && text[end] != '\n'; end++) {}
        if (end < (size_t)size) end++;
        while (l + k < text + end && (l[k] == ' ' || l[k] == '\t')) k++;
        q = l[k] == '#' ? (const char *)memchr(l, '"', end - at) : NULL;
        if (q && strncmp(l + k + 1 + strspn(l + k + 1, " \t"), "include", 7) == 0) {
            const char *e = (const char *)memchr(q + 1, '"', (size_t)(text + end - q - 1));
            char inc[200], *sub;
            if (!e || (size_t)(e - q - 1) >= sizeof inc) break;
            memcpy(inc, q + 1, (size_t)(e - q - 1));
            inc[e - q - 1] = 0;
            sub = nn__cl_read_kernel(dir, inc, depth + 1);
            snprintf(line, sizeof line, "\n#line %d \"kernels/%s\"\n", lineno + 1, file);
            ok = sub && nn__cl_cat(&out, &len, &cap, sub, strlen(sub)) && nn__cl_cat(&out, &len, &cap, line, strlen(line));
            NN_FREE(sub);
        } else {
            ok = nn__cl_cat(&out, &len, &cap, l, end - at);
        }
        at = end;
        lineno++;
    }
    NN_FREE(text);
    if (!ok || at < (size_t)size) {
        NN_FREE(out);
        return NULL;
    }
    return out;
}

/* The source as an array of strings: embedded, or read from kernel_dir (one string). */
static const char **nn__cl_source_lines(nn_context *ctx, int idx, cl_uint *count, char **owned) {
    const char *const *lines = nn__cl_sources[idx].lines;
    const char **out;
    cl_uint n = 0;
    *owned = NULL;
    if (ctx->kernel_dir) {
        char file[128];
        char *text;
        snprintf(file, sizeof file, "%s.cl", nn__cl_sources[idx].name);
        text = nn__cl_read_kernel(ctx->kernel_dir, file, 0);
        if (text) {
            out = (const char **)NN_MALLOC(2 * sizeof(char *)); /* and room for a generated text */
            if (!out) {
                NN_FREE(text);
                return NULL;
            }
            out[0] = text;
            *owned = text;
            *count = 1;
            return out;
        }
        nn__log(ctx, NN_LOG_WARN, "cannot read %s/%s (or a file it includes); using the embedded source",
                ctx->kernel_dir, file);
    }
    while (lines[n]) n++;
    out = (const char **)NN_MALLOC((n + 1) * sizeof(char *)); /* room for a generated text after them */
    if (!out) return NULL;
    memcpy((void *)out, lines, n * sizeof(char *));
    *count = n;
    return out;
}

/* ---- the program cache: files in the format of opencl/cache.c, one per program ---- */

#define NN__CACHE_MAX_BYTES ((long)1 << 30) /* a larger file is no program binary of ours */

/* dir/NAME-KEY.bin; 0 when it does not fit in buf (then the program is not cached). */
static int nn__cache_path(nn_context *ctx, const char *name, uint64_t key, char *buf, size_t n) {
    int k = snprintf(buf, n, "%s/%s-%016llx.bin", ctx->cache_dir, name, (unsigned long long)key);
    if (k > 0 && (size_t)k < n) return 1;
    buf[0] = 0;
    return 0;
}

/* The cache file at path, read whole and checked (nn__cache_parse) against key: the bytes
   to free, with the program binary at *bin (*size bytes); NULL when there is no file, it
   cannot be read (a FIFO or a device in its place is refused, without waiting on it), or
   it is not valid (an info line says why: the program is then built from source and its
   store replaces the file). */
static unsigned char *nn__cache_read(nn_context *ctx, const char *path, uint64_t key, const unsigned char **bin,
                                     size_t *size) {
    unsigned char *data = NULL;
    size_t len = 0;
    char why[1400];
    int st, kind = 0;
    nn_result r;
    *bin = NULL;
    *size = 0;
    r = nn__read_regular(path, (size_t)NN__CACHE_MAX_BYTES, 1, &data, &len, why, sizeof why, &kind);
    if (kind == NN__READ_TOO_LARGE)
        nn__log(ctx, NN_LOG_INFO, "program cache: ignoring %s: more than a cached program may have; building from source",
                why);
    else if (r != NN_OK && kind != NN__READ_MISSING)
        nn__log(ctx, NN_LOG_DEBUG, "program cache: cannot read %s; building from source", why);
    if (r != NN_OK) return NULL;
    if ((st = nn__cache_parse(data, len, key, bin, size)) != NN__CACHE_OK) {
        nn__log(ctx, NN_LOG_INFO, "program cache: ignoring %s (%lu bytes): %s; building from source", path,
                (unsigned long)len, nn__cache_status_str(st));
        NN_FREE(data);
        return NULL;
    }
    return data;
}

/* Whether this context may use its cache directory: it is made (0700) when missing, and
   refused (an info line; then programs are built from source and not stored) when another
   user owns it or others may write to it: they could put native code in its files.
   Decided once per context. */
static int nn__cache_dir_usable(nn_context *ctx) {
    nn__cl *cl = NN__CL(ctx);
    char why[1200];
    if (cl->cache_dir_state == 0) {
        if (nn__mkdirs(ctx->cache_dir) != 0) {
            nn__log(ctx, NN_LOG_DEBUG, "program cache: cannot create %s: %s", ctx->cache_dir, strerror(errno));
            cl->cache_dir_state = -1;
        } else if (!nn__dir_private(ctx->cache_dir, why, sizeof why)) {
            nn__log(ctx, NN_LOG_INFO, "program cache: %s: another user could supply the programs, so it is not "
                    "used (programs built from source, not stored)", why);
            cl->cache_dir_state = -1;
        } else {
            cl->cache_dir_state = 1;
        }
    }
    return cl->cache_dir_state > 0;
}

/* The program in the cache file at path, built for the device; NULL when there is none
   or it is not valid, or the driver refuses it (then it is built from source). */
static cl_program nn__cache_load(nn_context *ctx, const char *path, uint64_t key, const char *options) {
    nn__cl *cl = NN__CL(ctx);
    const unsigned char *bin;
    size_t size;
    unsigned char *data = nn__cache_read(ctx, path, key, &bin, &size);
    cl_program prog;
    cl_int err = CL_SUCCESS, status = CL_SUCCESS;
    if (!data) return NULL;
    prog = clCreateProgramWithBinary(cl->context, 1, &cl->device, &size, &bin, &status, &err);
    if (prog && err == CL_SUCCESS && status == CL_SUCCESS)
        err = clBuildProgram(prog, 1, &cl->device, options, NULL, NULL);
    if (!prog || err != CL_SUCCESS || status != CL_SUCCESS) {
        nn__log(ctx, NN_LOG_INFO, "program cache: %s: the driver refuses the binary (%s (%d)); building from source",
                path, nn__cl_errstr(err != CL_SUCCESS ? err : status), (int)(err != CL_SUCCESS ? err : status));
        if (prog) clReleaseProgram(prog);
        prog = NULL;
    } else {
        nn__log(ctx, NN_LOG_DEBUG, "program cache: loaded %s", path);
    }
    NN_FREE(data);
    return prog;
}

/* Stores the program's binary in the cache file at path for key. Every failure is only a
   debug line: the cache is an optimisation. */
static void nn__cache_store(nn_context *ctx, const char *path, uint64_t key, cl_program prog) {
    size_t size = 0;
    unsigned char *file, *bin;
    cl_int err;
    if ((err = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL)) != CL_SUCCESS || size == 0) {
        nn__log(ctx, NN_LOG_DEBUG, "program cache: no binary to store in %s (%s (%d))", path, nn__cl_errstr(err),
                (int)err);
        return;
    }
    if (size > (size_t)NN__CACHE_MAX_BYTES - NN__CACHE_HEADER ||
        !(file = (unsigned char *)NN_MALLOC(NN__CACHE_HEADER + size))) {
        nn__log(ctx, NN_LOG_DEBUG, "program cache: no memory for the %lu-byte binary of %s", (unsigned long)size, path);
        return;
    }
    bin = file + NN__CACHE_HEADER;
    if ((err = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL)) != CL_SUCCESS) {
        nn__log(ctx, NN_LOG_DEBUG, "program cache: cannot get the binary for %s: %s (%d)", path, nn__cl_errstr(err),
                (int)err);
    } else {
        nn__wfile w; /* quiet (no context): a reader sees the old file or the new one whole */
        nn__cache_header(file, key, bin, size);
        if (nn__wfile_open(NULL, path, &w) != NN_OK || nn__wfile_write(NULL, &w, file, NN__CACHE_HEADER + size) != NN_OK) {
            nn__log(ctx, NN_LOG_DEBUG, "program cache: cannot store %s: %s", path, w.why);
            nn__wfile_abort(&w);
        } else if (nn__wfile_commit(NULL, path, &w) != NN_OK) {
            nn__log(ctx, NN_LOG_DEBUG, "program cache: cannot store %s: %s", path, w.why);
        } else {
            nn__log(ctx, NN_LOG_DEBUG, "program cache: stored %s", path);
        }
    }
    NN_FREE(file);
}

/* The file and line that physical line `want` (1-based) of the program's source (lines[0..
   count), as the driver sees it: the strings concatenated) stands for, by the source's
   `#line L "FILE"` directives; 0 when the source has no directive before it. */
static int nn__cl_source_place(const char **lines, cl_uint count, long want, char *file, size_t fsize, long *line) {
    long phys = 1, logical = 0;
    int have = 0, bol = 1;
    cl_uint i;
    for (i = 0; i < count; i++) {
        const char *p;
        for (p = lines[i]; *p; p++) {
            if (bol) {
                const char *q = p + strspn(p, " \t");
                if (phys == want) return have ? (*line = logical, 1) : 0;
                if (strncmp(q, "#line ", 6) == 0) {
                    char *e;
                    long l = strtol(q + 6, &e, 10);
                    const char *f = strchr(e, '"'), *g = f ? strchr(f + 1, '"') : NULL;
                    if (f && g && (size_t)(g - f - 1) < fsize && !memchr(f, '\n', (size_t)(g - f))) {
                        memcpy(file, f + 1, (size_t)(g - f - 1));
                        file[g - f - 1] = 0;
                        logical = l - 1; /* the next physical line is line l */
                        have = 1;
                    }
                }
                bol = 0;
            }
            if (*p == '\n') {
                phys++;
                logical++;
                bol = 1;
            }
        }
    }
    return 0;
}

/* The build log with each `<NAME>:LINE:` that counts lines of the concatenated source (NVIDIA's
   `<kernel>:4:12:`, which ignores #line) rewritten as the kernels/FILE.cl:LINE it stands for,
   into out (n bytes); logs that already name our files are copied as they are. */
static void nn__cl_map_log(const char **lines, cl_uint count, const char *log, char *out, size_t n) {
    size_t o = 0;
    const char *p = log;
    if (n == 0) return;
    while (*p && o + 1 < n) {
        if (*p == '<') {
            const char *gt = p + 1 + strspn(p + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_");
            if (gt > p + 1 && *gt == '>' && gt[1] == ':' && gt[2] >= '0' && gt[2] <= '9' && strncmp(p, "<built-in>", 10) != 0) {
                char file[200], *e;
                long l = strtol(gt + 2, &e, 10), mapped;
                if (nn__cl_source_place(lines, count, l, file, sizeof file, &mapped)) {
                    int k = snprintf(out + o, n - o, "%s:%ld", file, mapped);
                    if (k < 0 || (size_t)k >= n - o) break;
                    o += (size_t)k;
                    p = e;
                    continue;
                }
            }
        }
        out[o++] = *p++;
    }
    out[o] = 0;
}

/* The program of kernels/NAME.cl for this context's device and storage type `store`
   (kernels/storage.h: NN_BF16 and NN_F16 build it with -DNN_STORE_BF16 / -DNN_STORE_F16),
   built once; with `source` (generated kernels, src/ops/fuse.c) that text after the file's,
   a program of its own, built once per text (found by its cache key). */
static nn_result nn__cl_program(nn_context *ctx, const char *name, int store, const char *source, cl_program *out) {
    nn__cl *cl = NN__CL(ctx);
    int idx = nn__cl_source_index(name), var = store == NN_BF16 ? 1 : store == NN_F16 ? 2 : 0;
    char options[768], extra[512], path[1100] = "", cname[80];
    const char **lines;
    char *owned;
    cl_uint count, i;
    uint64_t key = NN__FNV_BASIS;
    cl_program prog;
    cl_int err;
    nn_result r = NN_OK;
    if (idx < 0 || idx >= 64) return nn__fail(ctx, NN_ERR_BUILD, "no kernel source kernels/%s.cl", name);
    idx += 64 * var;
    if (cl->programs[idx] && !source) {
        *out = cl->programs[idx];
        return NN_OK;
    }
    nn__program_options(name, &ctx->dev, extra, sizeof extra); /* the plans' tuning of this file, as -D options */
    snprintf(options, sizeof options, "-cl-std=CL1.2%s%s%s%s", cl->exact_div ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             extra[0] ? " " : "", extra, var == 1 ? " -DNN_STORE_BF16" : var == 2 ? " -DNN_STORE_F16" : "");
    snprintf(cname, sizeof cname, "%s%s%s", name, var == 1 ? "-bf16" : var == 2 ? "-f16" : "", source ? "-gen" : "");
    lines = nn__cl_source_lines(ctx, idx % 64, &count, &owned);
    if (!lines) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "out of memory reading kernels/%s.cl", name);
    if (source) lines[count++] = source; /* nn__cl_source_lines leaves room for one more */
    for (i = 0; i < count; i++) key = nn__fnv(key, lines[i], strlen(lines[i]));
    key = nn__fnv(key, options, strlen(options) + 1);
    key = nn__fnv(key, cl->name, strlen(cl->name) + 1);
    key = nn__fnv(key, cl->driver, strlen(cl->driver) + 1);
    key = nn__fnv(key, cl->version, strlen(cl->version) + 1);
    for (i = 0; source && i < (cl_uint)cl->n_gen; i++)
        if (cl->gen_key[i] == key) {
            NN_FREE((void *)lines);
            NN_FREE(owned);
            *out = cl->gen[i];
            return NN_OK;
        }
    if (source && cl->n_gen == cl->cap_gen) {
        int cap = cl->cap_gen ? cl->cap_gen * 2 : 16;
        cl_program *p = (cl_program *)NN_REALLOC(cl->gen, (size_t)cap * sizeof *p);
        uint64_t *q = p ? (uint64_t *)NN_REALLOC(cl->gen_key, (size_t)cap * sizeof *q) : NULL;
        if (p) cl->gen = p;
        if (q) cl->gen_key = q;
        if (!p || !q) {
            NN_FREE((void *)lines);
            NN_FREE(owned);
            return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "out of memory for a generated program");
        }
        cl->cap_gen = cap;
    }
    prog = NULL;
    if (ctx->cache_dir && nn__cache_dir_usable(ctx) && nn__cache_path(ctx, cname, key, path, sizeof path))
        prog = nn__cache_load(ctx, path, key, options);
    if (!prog) {
        prog = clCreateProgramWithSource(cl->context, count, lines, NULL, &err);
        if (!prog) {
            r = nn__fail(ctx, NN_ERR_BUILD, "kernels/%s.cl: clCreateProgramWithSource: %s (%d)", name, nn__cl_errstr(err), err);
        } else if ((err = clBuildProgram(prog, 1, &cl->device, options, NULL, NULL)) != CL_SUCCESS) {
            char log[3000], mapped[3200];
            size_t n = 0;
            log[0] = 0;
            clGetProgramBuildInfo(prog, cl->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &n);
            log[sizeof log - 1] = 0;
            nn__cl_map_log(lines, count, log, mapped, sizeof mapped);
            r = nn__fail(ctx, NN_ERR_BUILD, "kernels/%s.cl failed to build on %s (%s):\n%s", name, cl->name,
                         nn__cl_errstr(err), mapped);
            clReleaseProgram(prog);
            prog = NULL;
        } else if (path[0]) {
            nn__cache_store(ctx, path, key, prog);
        }
    }
    NN_FREE((void *)lines);
    NN_FREE(owned);
    if (r != NN_OK) return r;
    if (source) {
        cl->gen_key[cl->n_gen] = key;
        cl->gen[cl->n_gen++] = prog;
    } else {
        cl->programs[idx] = prog;
    }
    *out = prog;
    return NN_OK;
}

static nn_result nn__cl_kernel(nn_context *ctx, const char *file, int store, const char *source, const char *kname,
                               cl_kernel *out) {
    cl_program prog;
    cl_int err;
    nn_result r = nn__cl_program(ctx, file, store, source, &prog);
    if (r != NN_OK) return r;
    *out = clCreateKernel(prog, kname, &err);
    if (!*out) return nn__fail(ctx, NN_ERR_BUILD, "kernels/%s.cl: no kernel %s (%s)", file, kname, nn__cl_errstr(err));
    return NN_OK;
}

/* ---- buffers ---- */

static nn_result nn__cl_alloc(nn_context *ctx, nn__buf *b, size_t bytes, int zero, const char *what) {
    nn__cl *cl = NN__CL(ctx);
    cl_int err;
    cl_mem m;
    b->bytes = bytes;
    if (bytes > cl->max_alloc)
        return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: %llu bytes exceed the device's largest allocation (%llu) on %s",
                        what, (unsigned long long)bytes, (unsigned long long)cl->max_alloc, cl->name);
    m = clCreateBuffer(cl->context, CL_MEM_READ_WRITE, (bytes ? bytes : 4) + ctx->dev.guard, NULL, &err);
    if (!m)
        return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %llu bytes on %s: %s (%d)", what,
                        (unsigned long long)bytes, cl->name, nn__cl_errstr(err), err);
    b->handle = m;
    if (!zero) return NN_OK;
    {
        float v = 0.0f;
        err = clEnqueueFillBuffer(cl->queue, m, &v, sizeof v, 0, bytes ? bytes : 4, 0, NULL, NULL);
    }
    if (err != CL_SUCCESS) return nn__fail(ctx, NN_ERR_DEVICE, "clEnqueueFillBuffer: %s (%d)", nn__cl_errstr(err), err);
    return NN_OK;
}

/* A view is a sub-buffer: kernels take it as a buffer of its own (its guard included). */
static nn_result nn__cl_view(nn_context *ctx, const nn__buf *base, size_t offset, size_t bytes, nn__buf *out,
                             const char *what) {
    cl_buffer_region reg;
    cl_int err;
    memset(out, 0, sizeof *out);
    out->bytes = bytes;
    out->offset = offset;
    reg.origin = offset;
    reg.size = bytes + ctx->dev.guard; /* the planner left the guard free after every view */
    out->handle = clCreateSubBuffer((cl_mem)base->handle, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg, &err);
    if (!out->handle) return nn__fail(ctx, NN_ERR_DEVICE, "%s: clCreateSubBuffer: %s (%d)", what, nn__cl_errstr(err), err);
    return NN_OK;
}

static void nn__cl_release(nn_context *ctx, nn__buf *b) {
    (void)ctx;
    if (b->handle) clReleaseMemObject((cl_mem)b->handle);
    if (b->owned) NN_FREE(b->host);
}

/* A small write goes through the staging ring (nn__cl's stage: copied, enqueued without
   blocking); a large one, or one whose slot cannot grow, blocks. */
static nn_result nn__cl_write(nn_context *ctx, nn__buf *b, const void *src, size_t bytes) {
    nn__cl *cl = NN__CL(ctx);
    cl_int err;
    if (cl->staging && bytes <= NN__CL_STAGE_MAX) {
        int s;
        if (cl->staged == NN__CL_STAGES) { /* every slot may be in flight: wait for them */
            if ((err = clFinish(cl->queue)) != CL_SUCCESS)
                return nn__fail(ctx, NN_ERR_DEVICE, "clFinish (a full staging ring): %s (%d)", nn__cl_errstr(err), err);
            cl->staged = 0;
        }
        s = cl->staged;
        if (cl->stage_cap[s] < bytes) {
            size_t cap = bytes < 4096 ? 4096 : bytes;
            unsigned char *p = (unsigned char *)NN_REALLOC(cl->stage[s], cap);
            if (p) cl->stage[s] = p, cl->stage_cap[s] = cap;
        }
        if (cl->stage_cap[s] >= bytes) {
            memcpy(cl->stage[s], src, bytes);
            err = clEnqueueWriteBuffer(cl->queue, (cl_mem)b->handle, CL_FALSE, 0, bytes, cl->stage[s], 0, NULL, NULL);
            if (err != CL_SUCCESS) return nn__fail(ctx, NN_ERR_DEVICE, "clEnqueueWriteBuffer: %s (%d)", nn__cl_errstr(err), err);
            cl->staged++;
            return NN_OK;
        }
    }
    err = clEnqueueWriteBuffer(cl->queue, (cl_mem)b->handle, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
    if (err != CL_SUCCESS) return nn__fail(ctx, NN_ERR_DEVICE, "clEnqueueWriteBuffer: %s (%d)", nn__cl_errstr(err), err);
    return NN_OK;
}

/* A blocking read on the in-order queue: every command before it, staged writes included,
   is done after it. */
static nn_result nn__cl_read(nn_context *ctx, const nn__buf *b, void *dst, size_t bytes) {
    cl_int err = clEnqueueReadBuffer(NN__CL(ctx)->queue, (cl_mem)b->handle, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
    if (err != CL_SUCCESS) return nn__fail(ctx, NN_ERR_DEVICE, "clEnqueueReadBuffer: %s (%d)", nn__cl_errstr(err), err);
    NN__CL(ctx)->staged = 0;
    return NN_OK;
}

static nn_result nn__cl_fill(nn_context *ctx, nn__buf *b, float v, size_t bytes) {
    cl_int err = clEnqueueFillBuffer(NN__CL(ctx)->queue, (cl_mem)b->handle, &v, sizeof v, 0, bytes ? bytes : 4, 0, NULL,
                                     NULL);
    if (err != CL_SUCCESS) return nn__fail(ctx, NN_ERR_DEVICE, "clEnqueueFillBuffer: %s (%d)", nn__cl_errstr(err), err);
    return NN_OK;
}

/* ---- launches ---- */

static cl_int nn__cl_set_arg(cl_kernel k, cl_uint i, const nn__karg *a) {
    switch (a->kind) {
    case 'm': {
        cl_mem m = (cl_mem)a->v.buf.handle;
        return clSetKernelArg(k, i, sizeof m, &m);
    }
    case 'i': return clSetKernelArg(k, i, sizeof(cl_int), &a->v.i);
    case 'u': return clSetKernelArg(k, i, sizeof(cl_uint), &a->v.u);
    case 'f': return clSetKernelArg(k, i, sizeof(cl_float), &a->v.f);
    case 'L': return clSetKernelArg(k, i, a->v.local, NULL);
    case '8': return clSetKernelArg(k, i, sizeof(cl_int8), a->v.v8);
    default: return CL_INVALID_VALUE;
    }
}

/* The work-group size of a 1-D launch of n items whose plan left it to the backend (every
   such kernel checks its bound, so the global size is rounded up to whole groups). GPUs:
   64. CPU devices run a work-group per task and vectorise across its items: about 8 groups
   a compute unit, each a multiple of the preferred vector width, at most the largest group.
   (PoCL's own choice is the largest divisor of n up to 4096: one group, one thread, for
   the 585 rows of the CNN example's first im2col; 5 groups on 2 threads for 18,720.) */
static size_t nn__cl_wg_1d(const nn__device *dev, size_t n) {
    size_t v = dev->vec_float > 1 ? dev->vec_float : 1, groups = 8 * (size_t)(dev->units ? dev->units : 1), wg;
    if (!dev->cpu_tuned) return dev->max_wg < 64 ? dev->max_wg : 64;
    wg = (n + groups - 1) / groups;
    wg = (wg + v - 1) / v * v;
    if (wg > dev->max_wg) wg = dev->max_wg / v * v;
    return wg ? wg : 1;
}

/* The most products a launch of stages runs */
#ifndef NN__CL_STAGES_MAX
#define NN__CL_STAGES_MAX 8
#endif

/* Launches of stages, on a device tuned as a CPU with the packed GEMM (kernels/gemm.cl): each
   run of two or more consecutive launches of single float32 products (plain, with a bias's
   gradient, or with a chain's epilogue) becomes one launch of kernel gemm_stages, whose
   groups take the products' items in turn, a product's items after the ones before it are
   done. Why: PoCL runs each launch's groups on worker threads that sleep between launches,
   and a launch cost the MLP's step 6-15 us on the 2-core VM beyond its work; in one launch
   the threads go from product to product as the CPU backend's do. A run stays within the
   parts of the schedule a run may start or stop at (the forward, the backward, the update);
   its arguments (the launches', in order) within the device's parameter bytes. Not in a
   data-parallel build (src/dist/dist.c runs the backward in segments of its own), nor with
   NN_FUSE=0 or NN_CL_STAGES=0. Each product's items do what its own launch did: the same bits. */
static nn_result nn__cl_stages(nn_graph *g) {
    nn_context *ctx = g->ctx;
    nn__gemm_cfg c;
    const char *env = getenv("NN_CL_STAGES"), *fuse = getenv("NN_FUSE");
    int i, vx = nn__gemm_sig_index("vnx"), vy = nn__gemm_sig_index("vny"), seg[4];
    cl_ulong maxp = 1024;
    for (i = 0; i < g->n_launches; i++) g->launches[i].merged = 0;
#ifdef NN_MPI
    return NN_OK;
#endif
    if ((env && strcmp(env, "0") == 0) || (fuse && strcmp(fuse, "0") == 0) || !ctx->dev.cpu_tuned || vx < 0 || vy < 0)
        return NN_OK;
    nn__gemm_config_dev(&ctx->dev, &c);
    if (c.use_local != 2) return NN_OK;
    (void)clGetDeviceInfo(NN__CL(ctx)->device, CL_DEVICE_MAX_PARAMETER_SIZE, sizeof maxp, &maxp, NULL);
    seg[0] = g->sched_launch[g->n_sched_forward];
    seg[1] = g->sched_launch[g->n_sched_update];
    seg[2] = g->n_launches;
    for (i = 0; i < g->n_launches;) {
        int n = 0, s, items = 0;
        cl_ulong bytes = 0;
        for (s = 0; s < 3 && seg[s] <= i; s++)
            ;
        while (i + n < g->n_launches && i + n < (s < 3 ? seg[s] : g->n_launches) && n < NN__CL_STAGES_MAX) {
            const nn__launch *l = &g->launches[i + n];
            cl_ulong b = 0;
            int k;
            if (!nn__gemm_stage_kind(l)) break;
            for (k = 0; k < l->n_args; k++) b += l->args[k].kind == 'm' ? sizeof(cl_mem) : l->args[k].kind == '8' ? 32 : 4;
            if (bytes + b > maxp) break;
            bytes += b;
            items += l->args[vx].v.i * l->args[vy].v.i;
            n++;
        }
        if (n >= 2) {
            nn__launch *h = &g->launches[i];
            char *src = nn__gemm_stages_source(g, i, n);
            cl_kernel kern;
            nn_result r;
            int k, a = 0, j;
            if (!src) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
            r = nn__cl_kernel(ctx, "gemm", NN_F32, src, "gemm_stages", &kern);
            NN_FREE(src);
            if (r != NN_OK) return r;
            h->bk = kern;
            h->merged = n;
            h->dims = 1;
            h->gws[0] = (size_t)(items < c.groups ? items : c.groups);
            h->gws[1] = h->gws[2] = 1;
            h->lws[0] = h->lws[1] = h->lws[2] = 1;
            h->use_lws = 1;
            for (j = 0; j <= n; j++) {
                nn__launch *l = &g->launches[i + (j < n ? j : 0)];
                cl_int err = CL_SUCCESS;
                if (j && j < n) l->merged = -1;
                for (k = 0; j < n && k < l->n_args && err == CL_SUCCESS; k++, a++) err = nn__cl_set_arg(kern, (cl_uint)a, &l->args[k]);
                if (j == n) { /* the products [lo_, hi_) it runs: all of them */
                    cl_int lo = 0, hi = n;
                    err = clSetKernelArg(kern, (cl_uint)a, sizeof lo, &lo);
                    if (err == CL_SUCCESS) err = clSetKernelArg(kern, (cl_uint)a + 1, sizeof hi, &hi);
                }
                if (err != CL_SUCCESS)
                    return nn__fail(ctx, NN_ERR_DEVICE, "%s: kernels/gemm.cl gemm_stages: clSetKernelArg %d failed: %s (%d)",
                                    nn__op(g->nodes[l->node].op)->name, a, nn__cl_errstr(err), err);
            }
            h->n_stage_args = a;
            i += n;
        } else {
            i += n > 0 ? n : 1;
        }
    }
    return NN_OK;
}

/* Each recorded launch gets its kernel, its work-group shape where its plan left it to the
   backend, and all its arguments, once (those of launches of stages: nn__cl_stages). */
static nn_result nn__cl_prepare(nn_graph *g) {
    nn_context *ctx = g->ctx;
    int i, k;
    nn_result r0 = nn__cl_stages(g);
    if (r0 != NN_OK) return r0;
    for (i = 0; i < g->n_launches; i++) {
        nn__launch *l = &g->launches[i];
        cl_kernel kern;
        nn_result r;
        if (l->merged) continue;
        r = nn__cl_kernel(ctx, l->file, l->store, l->source, l->kernel, &kern);
        if (r != NN_OK) return r;
        l->bk = kern;
        if (!l->use_lws && l->dims == 1) { /* a driver's choice for a NULL local size can be a poor one */
            size_t wg = nn__cl_wg_1d(&ctx->dev, l->gws[0]);
            l->gws[0] = (l->gws[0] + wg - 1) / wg * wg;
            l->lws[0] = wg;
            l->use_lws = 1;
        }
        for (k = 0; k < l->n_args; k++) {
            cl_int err = nn__cl_set_arg(kern, (cl_uint)k, &l->args[k]);
            if (err != CL_SUCCESS)
                return nn__fail(ctx, NN_ERR_DEVICE, "%s: kernels/%s.cl %s: clSetKernelArg %d failed: %s (%d)",
                                nn__op(g->nodes[l->node].op)->name, l->file, l->kernel, k, nn__cl_errstr(err), err);
        }
    }
    {
        cl_int err = clFinish(NN__CL(ctx)->queue);
        if (err != CL_SUCCESS) return nn__fail(ctx, NN_ERR_DEVICE, "nn_graph_compile: clFinish: %s (%d)", nn__cl_errstr(err), err);
    }
    return NN_OK;
}

/* NN_CL_GUARDS: the buffer arguments of a launch, and where its guards are kept in
   cl->guard_seen (before the launch: m of them at *at; after: the next m). */
static int nn__cl_guard_bufs(const nn__launch *l) {
    int k, m = 0;
    for (k = 0; k < l->n_args; k++) m += l->args[k].kind == 'm' && l->args[k].v.buf.handle;
    return m;
}

/* Before launch l: each buffer argument's guard filled with a NaN naming the argument (op 0:
   a kernel that copies one argument's guard into another's changes it), then all of them
   read (op 1), as arguments that share a buffer leave them; after l, read again (op 2). A
   launch of stages runs product by product under guards, each between its own (nn__cl_run). */
static cl_int nn__cl_guard_enqueue(cl_command_queue q, const nn__launch *l, unsigned char *at, int op) {
    int k, j, m = nn__cl_guard_bufs(l), after = op == 2;
    cl_int err = CL_SUCCESS;
    for (k = 0, j = 0; k < l->n_args && err == CL_SUCCESS; k++) {
        cl_mem b = (cl_mem)l->args[k].v.buf.handle;
        size_t end = l->args[k].v.buf.bytes;
        if (l->args[k].kind != 'm' || !b) continue;
        if (op == 0) {
            uint32_t bits = 0x7FA5A500u | (uint32_t)k;
            float v;
            memcpy(&v, &bits, sizeof v);
            err = clEnqueueFillBuffer(q, b, &v, sizeof v, end, NN__CL_GUARD, 0, NULL, NULL);
        } else {
            err = clEnqueueReadBuffer(q, b, CL_FALSE, end, NN__CL_GUARD, at + (size_t)(after * m + j) * NN__CL_GUARD, 0,
                                      NULL, NULL);
        }
        j++;
    }
    return err;
}

/* After a guarded run of launches [from, n): the first launch that changed a guard, named. */
static nn_result nn__cl_guard_check(nn_graph *g, int from, int n) {
    const unsigned char *at = NN__CL(g->ctx)->guard_seen;
    int i, k;
    for (i = from; i < n; i++) {
        const nn__launch *l = &g->launches[i];
        int j = 0, m = nn__cl_guard_bufs(l);
        for (k = 0; k < l->n_args; k++) {
            const unsigned char *before = at + (size_t)j * NN__CL_GUARD, *after = at + (size_t)(m + j) * NN__CL_GUARD;
            int f = 0;
            if (l->args[k].kind != 'm' || !l->args[k].v.buf.handle) continue;
            j++;
            if (memcmp(before, after, NN__CL_GUARD) == 0) continue;
            while (memcmp(before + 4 * f, after + 4 * f, 4) == 0) f++;
            return nn__fail(g->ctx, NN_ERR_DEVICE,
                            "%s: kernels/%s.cl %s wrote past the end of its argument %d (%lu bytes): float %d after "
                            "the end changed, with %lu x %lu x %lu work-items in groups of %lu x %lu x %lu%s "
                            "(NN_CL_GUARDS); does each work-item check its bound?",
                            nn__op(g->nodes[l->node].op)->name, l->file, l->kernel, k,
                            (unsigned long)l->args[k].v.buf.bytes, f, (unsigned long)l->gws[0],
                            (unsigned long)(l->dims > 1 ? l->gws[1] : 1), (unsigned long)(l->dims > 2 ? l->gws[2] : 1),
                            (unsigned long)(l->use_lws ? l->lws[0] : 0),
                            (unsigned long)(l->use_lws && l->dims > 1 ? l->lws[1] : l->use_lws ? 1 : 0),
                            (unsigned long)(l->use_lws && l->dims > 2 ? l->lws[2] : l->use_lws ? 1 : 0),
                            l->use_lws ? "" : " (the driver's)");
        }
        at += (size_t)2 * m * NN__CL_GUARD;
    }
    return NN_OK;
}

/* ---- NN_CL_PROFILE: each launch's device time, from its event's start and end ---- */

/* the kernel a launch runs: its own, or a launch of stages' (nn__cl_stages) */
#define NN__CL_KNAME(l) ((l)->merged > 0 ? "gemm_stages" : (l)->kernel)

/* Reads and releases the events of the launches' last enqueues (a run's: consecutive
   launches), waiting for them: each launch's time from start to end, and the time from the
   end of the launch before it in that run to its start (the device idle between the two:
   the runtime's work between kernels). An event without the times (a driver that does not
   record them) is counted in *missing. */
static void nn__cl_prof_read(nn_graph *g, long *missing) {
    cl_ulong prev = 0;
    int i, have_prev = 0;
    for (i = 0; i < g->n_launches; i++) {
        nn__launch *l = &g->launches[i];
        cl_event ev = (cl_event)l->bev;
        cl_ulong s = 0, e = 0;
        if (l->merged < 0) continue; /* in the launch of stages before it */
        if (!ev) {
            have_prev = 0;
            continue;
        }
        l->bev = NULL;
        if (clWaitForEvents(1, &ev) == CL_SUCCESS &&
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL) == CL_SUCCESS && e >= s) {
            l->prof_ns += e - s;
            l->prof_n++;
            if (have_prev && s >= prev) l->prof_gap_ns += s - prev;
            prev = e;
            have_prev = 1;
        } else {
            (*missing)++;
            have_prev = 0;
        }
        clReleaseEvent(ev);
    }
}

/* The graph's profile, logged (NN_LOG_INFO) when it is released: its runs (those of its
   most-run launch), the device time of its kernels and the time between them a run, then one
   line a kernel (kernels/FILE.cl and name; the generated chains are fuse.cl's "fused"), its
   launches summed, largest first. */
static void nn__cl_prof_report(nn_graph *g, long missing) {
    nn_context *ctx = g->ctx;
    int *first = (int *)nn__calloc((size_t)g->n_launches + 1, sizeof(int)), nk = 0, i, j;
    uint64_t *ns = (uint64_t *)nn__calloc((size_t)g->n_launches + 1, sizeof(uint64_t)), run = 0, gap = 0;
    long *cnt = (long *)nn__calloc((size_t)g->n_launches + 1, sizeof(long)), runs = 0;
    if (!first || !ns || !cnt) {
        NN_FREE(first);
        NN_FREE(ns);
        NN_FREE(cnt);
        return;
    }
    for (i = 0; i < g->n_launches; i++) {
        const nn__launch *l = &g->launches[i];
        if (!l->prof_n) continue;
        run += l->prof_ns;
        gap += l->prof_gap_ns;
        if (l->prof_n > runs) runs = l->prof_n;
        for (j = 0; j < nk; j++) {
            const nn__launch *f = &g->launches[first[j]];
            if (strcmp(NN__CL_KNAME(f), NN__CL_KNAME(l)) == 0 && strcmp(f->file, l->file) == 0) break;
        }
        if (j == nk) first[nk++] = i;
        ns[j] += l->prof_ns;
        cnt[j] += l->prof_n;
    }
    if (runs > 0) {
        int nl = 0;
        for (i = 0; i < g->n_launches; i++) nl += g->launches[i].merged >= 0; /* a launch of stages counts once */
        nn__log(ctx, NN_LOG_INFO,
                "NN_CL_PROFILE: a graph of %d launches, %ld runs on %s: its kernels %.3f ms a run on the device, %.3f ms "
                "between them%s",
                nl, runs, NN__CL(ctx)->name, (double)run / runs * 1e-6, (double)gap / runs * 1e-6,
                missing ? " (some launches had no times: the driver did not record them)" : "");
        nn__log(ctx, NN_LOG_INFO, "NN_CL_PROFILE:   share  ms a run  launches a run  kernel");
        for (;;) { /* the largest left, then the next */
            int b = -1;
            for (j = 0; j < nk; j++)
                if (cnt[j] > 0 && (b < 0 || ns[j] > ns[b])) b = j;
            if (b < 0) break;
            nn__log(ctx, NN_LOG_INFO, "NN_CL_PROFILE: %6.1f%%  %8.3f  %14.1f  kernels/%s.cl %s", run ? 100.0 * (double)ns[b] / (double)run : 0.0,
                    (double)ns[b] / runs * 1e-6, (double)cnt[b] / runs, g->launches[first[b]].file, NN__CL_KNAME(&g->launches[first[b]]));
            cnt[b] = 0;
        }
    } else if (missing) {
        nn__log(ctx, NN_LOG_INFO, "NN_CL_PROFILE: no launch of a graph on %s had its times: the driver did not record them",
                NN__CL(ctx)->name);
    }
    NN_FREE(first);
    NN_FREE(ns);
    NN_FREE(cnt);
}

/* Enqueues the launches of the first n_sched schedule positions (from g->run_from: 0 but
   for a data-parallel update part; with NN_CL_GUARDS, each between its guards' fills and
   reads, and waits for them to check). With NN_CL_PROFILE, the last run's events are read first. */
static nn_result nn__cl_run(nn_graph *g, int n_sched) {
    nn__cl *cl = NN__CL(g->ctx);
    cl_command_queue q = cl->queue;
    int i, k, p, parts, n = g->sched_launch[n_sched], from = g->sched_launch[g->run_from], guard = g->ctx->dev.guard != 0;
    int launched = 0;
    unsigned char *at = NULL;
    nn_result r = NN_OK;
    if (cl->profile) nn__cl_prof_read(g, &g->prof_missing); /* the last run's, before its launches enqueue again */
    if (guard) {
        size_t need = 0;
        for (i = from; i < n; i++) need += (size_t)2 * nn__cl_guard_bufs(&g->launches[i]) * NN__CL_GUARD;
        if (need > cl->guard_cap) {
            unsigned char *p = (unsigned char *)NN_REALLOC(cl->guard_seen, need);
            if (!p) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "NN_CL_GUARDS: out of memory for %lu bytes", (unsigned long)need);
            cl->guard_seen = p;
            cl->guard_cap = need;
        }
        at = cl->guard_seen;
    }
    for (i = from; i < n && r == NN_OK; i++) {
        nn__launch *l = &g->launches[i];
        cl_int err = CL_SUCCESS;
        if (l->merged < 0) continue; /* run by the launch of stages before it */
        if (l->update) {
            l->update(g, l);
            for (k = 0; k < l->n_upd && err == CL_SUCCESS; k++)
                err = nn__cl_set_arg((cl_kernel)l->bk, (cl_uint)l->upd[k], &l->args[l->upd[k]]);
        }
        /* with guards, a launch of stages runs each of its products alone between that product's
           guards (a guard is free space only while its buffer lives: the products after it may
           use the bytes) */
        parts = guard && l->merged > 0 ? l->merged : 1;
        for (p = 0; p < parts && err == CL_SUCCESS; p++) {
            const nn__launch *gl = l + (parts > 1 ? p : 0);
            if (parts > 1) {
                cl_int lo = p, hi = p + 1;
                err = clSetKernelArg((cl_kernel)l->bk, (cl_uint)l->n_stage_args, sizeof lo, &lo);
                if (err == CL_SUCCESS) err = clSetKernelArg((cl_kernel)l->bk, (cl_uint)l->n_stage_args + 1, sizeof hi, &hi);
            }
            if (guard && err == CL_SUCCESS) err = nn__cl_guard_enqueue(q, gl, at, 0);
            if (guard && err == CL_SUCCESS) err = nn__cl_guard_enqueue(q, gl, at, 1);
            if (err == CL_SUCCESS) {
                cl_event ev = NULL;
                err = clEnqueueNDRangeKernel(q, (cl_kernel)l->bk, (cl_uint)l->dims, NULL, l->gws, l->use_lws ? l->lws : NULL,
                                             0, NULL, cl->profile && p == parts - 1 ? &ev : NULL);
                if (err == CL_SUCCESS && p == parts - 1) l->bev = ev;
            }
            if (guard && err == CL_SUCCESS) {
                err = nn__cl_guard_enqueue(q, gl, at, 2);
                at += (size_t)2 * nn__cl_guard_bufs(gl) * NN__CL_GUARD;
            }
            if (err == CL_SUCCESS) launched++;
        }
        if (err != CL_SUCCESS)
            r = nn__fail(g->ctx, NN_ERR_DEVICE, "%s: kernels/%s.cl %s: %s (%d)", nn__op(g->nodes[l->node].op)->name,
                         l->file, NN__CL_KNAME(l), nn__cl_errstr(err), err);
        else
            g->progress++;
    }
    if (guard) { /* the reads land in guard_seen: none may be pending when it is checked, grown or freed */
        cl_int err = clFinish(q);
        if (r == NN_OK && err != CL_SUCCESS) r = nn__fail(g->ctx, NN_ERR_DEVICE, "clFinish: %s (%d)", nn__cl_errstr(err), err);
        if (r == NN_OK) r = nn__cl_guard_check(g, from, n);
    }
    if (r == NN_OK) g->ctx->stats.kernel_launches += (uint64_t)launched;
    return r;
}

static nn_result nn__cl_finish(nn_context *ctx) {
    cl_int err = clFinish(NN__CL(ctx)->queue);
    if (err != CL_SUCCESS) return nn__fail(ctx, NN_ERR_DEVICE, "clFinish: %s (%d)", nn__cl_errstr(err), err);
    NN__CL(ctx)->staged = 0;
    return NN_OK;
}

static void nn__cl_release_graph(nn_graph *g) {
    int i;
    if (NN__CL(g->ctx)->profile) {
        nn__cl_prof_read(g, &g->prof_missing);
        nn__cl_prof_report(g, g->prof_missing);
    }
    for (i = 0; i < g->n_launches; i++)
        if (g->launches[i].bk) clReleaseKernel((cl_kernel)g->launches[i].bk);
}

static const nn__backend nn__opencl_backend = {
    "opencl", NN_BACKEND_OPENCL, 0, nn__cl_open, nn__cl_close, nn__cl_list_devices, nn__cl_alloc, nn__cl_view,
    nn__cl_release, nn__cl_write, nn__cl_read, nn__cl_fill, nn__cl_prepare, nn__cl_run, nn__cl_finish,
    nn__cl_release_graph};
#define NN__BACKEND_OPENCL &nn__opencl_backend,

/* The cl* names back to the program (opencl/cl_api.h): its own OpenCL calls below nn.h go to
   the library it links, not to nn.h's table. */
#undef clGetPlatformIDs
#undef clGetPlatformInfo
#undef clGetDeviceIDs
#undef clGetDeviceInfo
#undef clCreateContext
#undef clReleaseContext
#undef clCreateCommandQueue
#undef clReleaseCommandQueue
#undef clCreateBuffer
#undef clReleaseMemObject
#undef clCreateProgramWithSource
#undef clCreateProgramWithBinary
#undef clReleaseProgram
#undef clBuildProgram
#undef clGetProgramInfo
#undef clGetProgramBuildInfo
#undef clCreateKernel
#undef clReleaseKernel
#undef clSetKernelArg
#undef clWaitForEvents
#undef clReleaseEvent
#undef clGetEventProfilingInfo
#undef clFinish
#undef clEnqueueReadBuffer
#undef clEnqueueWriteBuffer
#undef clEnqueueNDRangeKernel
#undef clCreateSubBuffer
#undef clEnqueueFillBuffer
