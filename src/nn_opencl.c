/* The OpenCL backend: device discovery, program building with an on-disk cache, buffers,
   kernel arguments. Ops use it through nn__cl_kernel(), nn__cl_args() and nn__cl_add(). */
#include <sys/stat.h>

#if defined(_WIN32)
#  include <direct.h>
#  include <process.h>
#  define nn__mkdir(p) _mkdir(p)
#  define nn__getpid() _getpid()
#else
#  include <unistd.h>
#  define nn__mkdir(p) mkdir(p, 0755)
#  define nn__getpid() getpid()
#endif

#define NN__CL_MAX_DEVICES 32

static const char *nn__cl_errstr(cl_int e) {
    switch (e) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_MISALIGNED_SUB_BUFFER_OFFSET: return "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "OpenCL error";
    }
}

/* Every OpenCL device of every platform, in the order NN_DEVICE=<index> counts them. */
static int nn__cl_enumerate(cl_platform_id *plat_out, cl_device_id *dev_out, int max) {
    cl_platform_id plats[16];
    cl_uint np = 0, p;
    int n = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return 0; /* includes -1001: none */
    if (np > 16) np = 16;
    for (p = 0; p < np; p++) {
        cl_device_id devs[NN__CL_MAX_DEVICES];
        cl_uint nd = 0, d;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, NN__CL_MAX_DEVICES, devs, &nd) != CL_SUCCESS) continue;
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

NN_API int nn_list_devices(nn_device_info *out, int max) {
    cl_platform_id plats[NN__CL_MAX_DEVICES];
    cl_device_id devs[NN__CL_MAX_DEVICES];
    int n = nn__cl_enumerate(plats, devs, NN__CL_MAX_DEVICES), i;
    for (i = 0; i < n && out && i < max; i++) {
        cl_device_type t = nn__cl_type(devs[i]);
        memset(&out[i], 0, sizeof out[i]);
        out[i].index = i;
        out[i].is_gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
        out[i].is_cpu = (t & CL_DEVICE_TYPE_CPU) != 0;
        nn__cl_str(devs[i], CL_DEVICE_NAME, out[i].name, sizeof out[i].name);
        if (clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof out[i].platform, out[i].platform, NULL) != CL_SUCCESS)
            out[i].platform[0] = 0;
        out[i].platform[sizeof out[i].platform - 1] = 0;
    }
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
    int i;
    for (i = 0; i < 64; i++)
        if (ctx->cl.programs[i]) clReleaseProgram(ctx->cl.programs[i]);
    if (ctx->cl.queue) clReleaseCommandQueue(ctx->cl.queue);
    if (ctx->cl.context) clReleaseContext(ctx->cl.context);
    memset(&ctx->cl, 0, sizeof ctx->cl);
}

static nn_result nn__cl_open(nn_context *ctx, cl_platform_id plat, cl_device_id dev, int tuning) {
    nn__cl *cl = &ctx->cl;
    cl_int err;
    cl_uint align_bits = 0;
    cl_context_properties props[3];
    cl_device_type t = nn__cl_type(dev);
    props[0] = CL_CONTEXT_PLATFORM;
    props[1] = (cl_context_properties)plat;
    props[2] = 0;
    cl->platform = plat;
    cl->device = dev;
    cl->is_cpu = (t & CL_DEVICE_TYPE_CPU) != 0;
    cl->is_gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
    if (tuning == NN_TUNING_AUTO) { /* the device type decides unless $NN_CL_TUNING says */
        const char *env = getenv("NN_CL_TUNING");
        if (env && strcmp(env, "gpu") == 0) tuning = NN_TUNING_GPU;
        if (env && strcmp(env, "cpu") == 0) tuning = NN_TUNING_CPU;
    }
    if (tuning != NN_TUNING_AUTO) cl->is_cpu = tuning == NN_TUNING_CPU; /* is_cpu: "tuned as for a CPU" */
    nn__cl_str(dev, CL_DEVICE_NAME, cl->name, sizeof cl->name);
    nn__cl_str(dev, CL_DEVICE_VENDOR, cl->vendor, sizeof cl->vendor);
    nn__cl_str(dev, CL_DRIVER_VERSION, cl->driver, sizeof cl->driver);
    nn__cl_str(dev, CL_DEVICE_VERSION, cl->version, sizeof cl->version);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof cl->max_wg, &cl->max_wg, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof cl->local_mem, &cl->local_mem, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cl->units, &cl->units, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof cl->max_alloc, &cl->max_alloc, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    cl->align = align_bits / 8 > 256 ? align_bits / 8 : 256;
    if (cl->max_wg == 0) cl->max_wg = 1;
    cl->context = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    if (!cl->context) {
        nn__cl_close(ctx);
        return nn__fail(ctx, NN_ERR_DEVICE, "clCreateContext failed on %s: %s (%d)", cl->name, nn__cl_errstr(err), err);
    }
    cl->queue = clCreateCommandQueue(cl->context, dev, 0, &err);
    if (!cl->queue) {
        nn_result r = nn__fail(ctx, NN_ERR_DEVICE, "clCreateCommandQueue failed on %s: %s (%d)", cl->name,
                               nn__cl_errstr(err), err);
        nn__cl_close(ctx);
        return r;
    }
    nn__cl_gemm_options(cl->is_cpu, cl->max_wg, cl->local_mem, cl->gemm_options, sizeof cl->gemm_options);
    return NN_OK;
}

/* ---- programs: source lines, the disk cache, building ---- */

static int nn__cl_source_index(const char *name) {
    int i;
    for (i = 0; i < NN__CL_NSOURCES; i++)
        if (strcmp(nn__cl_sources[i].name, name) == 0) return i;
    return -1;
}

/* The source as an array of strings: embedded, or read from kernel_dir (one string). */
static const char **nn__cl_source_lines(nn_context *ctx, int idx, cl_uint *count, char **owned) {
    const char *const *lines = nn__cl_sources[idx].lines;
    const char **out;
    cl_uint n = 0;
    *owned = NULL;
    if (ctx->kernel_dir) {
        char path[1024];
        FILE *f;
        snprintf(path, sizeof path, "%s/%s.cl", ctx->kernel_dir, nn__cl_sources[idx].name);
        f = fopen(path, "rb");
        if (f) {
            long len = -1;
            char *text = NULL;
            size_t head;
            char header[256];
            snprintf(header, sizeof header, "#line 1 \"kernels/%s.cl\"\n", nn__cl_sources[idx].name);
            head = strlen(header);
            if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
            if (len >= 0 && fseek(f, 0, SEEK_SET) == 0) text = (char *)NN_MALLOC(head + (size_t)len + 1);
            if (text && fread(text + head, 1, (size_t)len, f) == (size_t)len) {
                memcpy(text, header, head);
                text[head + (size_t)len] = 0;
                fclose(f);
                out = (const char **)NN_MALLOC(sizeof(char *));
                if (!out) { NN_FREE(text); return NULL; }
                out[0] = text;
                *owned = text;
                *count = 1;
                return out;
            }
            NN_FREE(text);
            fclose(f);
            nn__log(ctx, NN_LOG_WARN, "cannot read %s; using the embedded source", path);
        }
    }
    while (lines[n]) n++;
    out = (const char **)NN_MALLOC(n * sizeof(char *) + 1);
    if (!out) return NULL;
    memcpy((void *)out, lines, n * sizeof(char *));
    *count = n;
    return out;
}

static void nn__cache_path(nn_context *ctx, const char *name, uint64_t key, char *buf, size_t n) {
    snprintf(buf, n, "%s/%s-%016llx.bin", ctx->cache_dir, name, (unsigned long long)key);
}

/* mkdir -p */
static int nn__mkdirs(const char *path) {
    char tmp[1024];
    size_t i, n = strlen(path);
    if (n >= sizeof tmp) return -1;
    memcpy(tmp, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == 0) {
            char c = tmp[i];
            tmp[i] = 0;
            if (nn__mkdir(tmp) != 0 && errno != EEXIST) return -1;
            tmp[i] = c;
        }
    }
    return 0;
}

static cl_program nn__cache_load(nn_context *ctx, const char *path, const char *options) {
    nn__cl *cl = &ctx->cl;
    FILE *f = fopen(path, "rb");
    unsigned char *bin = NULL;
    long len = -1;
    cl_program prog = NULL;
    cl_int err, status;
    size_t size;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len > 0 && fseek(f, 0, SEEK_SET) == 0) bin = (unsigned char *)NN_MALLOC((size_t)len);
    if (bin && fread(bin, 1, (size_t)len, f) == (size_t)len) {
        const unsigned char *b = bin;
        size = (size_t)len;
        prog = clCreateProgramWithBinary(cl->context, 1, &cl->device, &size, &b, &status, &err);
        if (prog && (err != CL_SUCCESS || status != CL_SUCCESS ||
                     clBuildProgram(prog, 1, &cl->device, options, NULL, NULL) != CL_SUCCESS)) {
            clReleaseProgram(prog);
            prog = NULL;
        }
    }
    NN_FREE(bin);
    fclose(f);
    return prog;
}

/* Writes the binary beside its final name and renames it there, so a reader never sees a
   half-written file. Every failure is silent: the cache is an optimisation. */
static void nn__cache_store(nn_context *ctx, const char *path, cl_program prog) {
    size_t size = 0;
    unsigned char *bin;
    char tmp[1200];
    FILE *f;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS || size == 0) return;
    bin = (unsigned char *)NN_MALLOC(size);
    if (!bin) return;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS &&
        nn__mkdirs(ctx->cache_dir) == 0) {
        snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)nn__getpid());
        f = fopen(tmp, "wb");
        if (f) {
            int ok = fwrite(bin, 1, size, f) == size;
            ok = (fclose(f) == 0) && ok;
            if (!ok || rename(tmp, path) != 0) remove(tmp);
        }
    }
    NN_FREE(bin);
}

/* The program of kernels/NAME.cl for this context's device, built once. */
static nn_result nn__cl_program(nn_context *ctx, const char *name, cl_program *out) {
    nn__cl *cl = &ctx->cl;
    int idx = nn__cl_source_index(name);
    char options[768], path[1100] = "";
    const char **lines;
    char *owned;
    cl_uint count, i;
    uint64_t key = 1469598103934665603ULL;
    cl_program prog;
    cl_int err;
    nn_result r = NN_OK;
    if (idx < 0) return nn__fail(ctx, NN_ERR_BUILD, "no kernel source kernels/%s.cl", name);
    if (cl->programs[idx]) {
        *out = cl->programs[idx];
        return NN_OK;
    }
    snprintf(options, sizeof options, "-cl-std=CL1.2%s%s", strcmp(name, "gemm") == 0 ? " " : "",
             strcmp(name, "gemm") == 0 ? cl->gemm_options : "");
    lines = nn__cl_source_lines(ctx, idx, &count, &owned);
    if (!lines) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "out of memory reading kernels/%s.cl", name);
    for (i = 0; i < count; i++) key = nn__fnv(key, lines[i], strlen(lines[i]));
    key = nn__fnv(key, options, strlen(options) + 1);
    key = nn__fnv(key, cl->name, strlen(cl->name) + 1);
    key = nn__fnv(key, cl->driver, strlen(cl->driver) + 1);
    key = nn__fnv(key, cl->version, strlen(cl->version) + 1);
    prog = NULL;
    if (ctx->cache_dir) {
        nn__cache_path(ctx, name, key, path, sizeof path);
        prog = nn__cache_load(ctx, path, options);
    }
    if (!prog) {
        prog = clCreateProgramWithSource(cl->context, count, lines, NULL, &err);
        if (!prog) {
            r = nn__fail(ctx, NN_ERR_BUILD, "kernels/%s.cl: clCreateProgramWithSource: %s (%d)", name, nn__cl_errstr(err), err);
        } else if ((err = clBuildProgram(prog, 1, &cl->device, options, NULL, NULL)) != CL_SUCCESS) {
            char log[3000];
            size_t n = 0;
            log[0] = 0;
            clGetProgramBuildInfo(prog, cl->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &n);
            log[sizeof log - 1] = 0;
            r = nn__fail(ctx, NN_ERR_BUILD, "kernels/%s.cl failed to build on %s (%s):\n%s", name, cl->name,
                         nn__cl_errstr(err), log);
            clReleaseProgram(prog);
            prog = NULL;
        } else if (ctx->cache_dir) {
            nn__cache_store(ctx, path, prog);
        }
    }
    NN_FREE((void *)lines);
    NN_FREE(owned);
    if (r != NN_OK) return r;
    cl->programs[idx] = prog;
    *out = prog;
    return NN_OK;
}

static nn_result nn__cl_kernel(nn_context *ctx, const char *file, const char *kname, cl_kernel *out) {
    cl_program prog;
    cl_int err;
    nn_result r = nn__cl_program(ctx, file, &prog);
    if (r != NN_OK) return r;
    *out = clCreateKernel(prog, kname, &err);
    if (!*out) return nn__fail(ctx, NN_ERR_BUILD, "kernels/%s.cl: no kernel %s (%s)", file, kname, nn__cl_errstr(err));
    return NN_OK;
}

/* Sets kernel arguments from a format: m cl_mem, i int, u unsigned, f float (as double in
   the varargs), L local bytes (size_t), 8 an int8 vector (const int * to 8 ints). */
static nn_result nn__cl_args(nn_context *ctx, cl_kernel k, const char *fmt, ...) {
    va_list ap;
    cl_uint a;
    cl_int err = CL_SUCCESS;
    va_start(ap, fmt);
    for (a = 0; fmt[a] && err == CL_SUCCESS; a++) {
        switch (fmt[a]) {
        case 'm': { cl_mem m = va_arg(ap, cl_mem); err = clSetKernelArg(k, a, sizeof m, &m); break; }
        case 'i': { cl_int v = va_arg(ap, int); err = clSetKernelArg(k, a, sizeof v, &v); break; }
        case 'u': { cl_uint v = va_arg(ap, unsigned); err = clSetKernelArg(k, a, sizeof v, &v); break; }
        case 'f': { cl_float v = (cl_float)va_arg(ap, double); err = clSetKernelArg(k, a, sizeof v, &v); break; }
        case 'L': { size_t v = va_arg(ap, size_t); err = clSetKernelArg(k, a, v, NULL); break; }
        case '8': {
            cl_int8 v;
            memcpy(&v, va_arg(ap, const int *), sizeof v);
            err = clSetKernelArg(k, a, sizeof v, &v);
            break;
        }
        default: err = CL_INVALID_VALUE; break;
        }
    }
    va_end(ap);
    if (err != CL_SUCCESS)
        return nn__fail(ctx, NN_ERR_DEVICE, "clSetKernelArg %u failed: %s (%d)", a - 1, nn__cl_errstr(err), err);
    return NN_OK;
}

static nn_result nn__cl_alloc(nn_context *ctx, nn__buf *b, size_t bytes, const char *what) {
    cl_int err;
    b->bytes = bytes;
    if (bytes > ctx->cl.max_alloc)
        return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: %llu bytes exceed the device's largest allocation (%llu) on %s",
                        what, (unsigned long long)bytes, (unsigned long long)ctx->cl.max_alloc, ctx->cl.name);
    b->mem = clCreateBuffer(ctx->cl.context, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &err);
    if (!b->mem)
        return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %llu bytes on %s: %s (%d)", what,
                        (unsigned long long)bytes, ctx->cl.name, nn__cl_errstr(err), err);
    return NN_OK;
}

static nn_result nn__cl_fill(nn_context *ctx, cl_mem m, float v, size_t bytes) {
    cl_int err = clEnqueueFillBuffer(ctx->cl.queue, m, &v, sizeof v, 0, bytes, 0, NULL, NULL);
    if (err != CL_SUCCESS) return nn__fail(ctx, NN_ERR_DEVICE, "clEnqueueFillBuffer: %s (%d)", nn__cl_errstr(err), err);
    return NN_OK;
}

/* ---- convolution planning (the launches are in nn_ops.c, the kernels in conv.cl) ---- */

typedef struct nn__cl_conv_plan {
    int algo;        /* NN__CONV_GEMM or NN__CONV_DIRECT */
    int ld;          /* columns of the column matrices: P = N*OH*OW, padded for the K slices */
    int split;       /* K slices of the weight gradient's product (1: none) */
    int64_t scratch; /* floats */
} nn__cl_conv_plan;

/* Depthwise convolutions (one input channel per group) run the direct kernels: their
   products are too thin for a GEMM. Everything else is im2col + the tuned GEMM, one
   batched launch over the groups. The weight gradient reduces over all N*OH*OW columns
   into a small [K, C/G*KH*KW] result, so its product is cut into K slices (summed after,
   in a fixed order) until there are enough tiles to fill the device. Shapes whose
   working memory would not fit the device, or 32-bit indices, fall back to direct. */
static void nn__cl_conv2d_plan(const nn_context *ctx, int op, const nn__conv2d *c, nn__cl_conv_plan *p) {
    int64_t P = (int64_t)c->N * c->OH * c->OW, Cg = c->C / c->G, Kg = c->K / c->G;
    int64_t KKg = Cg * c->KH * c->KW, rows = (int64_t)c->C * c->KH * c->KW, chunk, most;
    nn__cl_gemm_cfg cfg;
    memset(p, 0, sizeof *p);
    p->algo = NN__CONV_DIRECT;
    p->ld = (int)P;
    p->split = 1;
    if (nn__conv2d_is_depthwise(c)) return;
    if (op == NN__OP_CONV2D_DW) {
        int64_t tile_n, tile_m, tiles, target;
        nn__cl_gemm_config(ctx->cl.is_cpu, ctx->cl.max_wg, ctx->cl.local_mem, &cfg);
        tile_n = (int64_t)cfg.wpt_n * cfg.wg_n;
        tile_m = (int64_t)cfg.wpt_m * (cfg.use_local == 2 ? 4 : cfg.wg_m);
        tiles = (Kg + tile_m - 1) / tile_m * ((KKg + tile_n - 1) / tile_n) * c->G;
        target = ctx->cl.is_cpu ? NN__CL_GEMM_CPU_ITEMS : 4 * (int64_t)(ctx->cl.units ? ctx->cl.units : 16);
        p->split = (int)((target + tiles - 1) / tiles);
        /* slices of at most 1024 columns too: one float accumulator over tens of thousands
           of products loses the small terms to rounding (the partial sums are exact enough) */
        if (p->split < (P + 1023) / 1024) p->split = (int)((P + 1023) / 1024);
        most = P / 256; /* slices of at least 256 columns */
        if (p->split > most) p->split = (int)(most > 1 ? most : 1);
        if (p->split > 256) p->split = 256;
        if (p->split > 1 && (int64_t)p->split * Kg > P) p->split = (int)(P / Kg > 1 ? P / Kg : 1); /* partials <= columns */
        chunk = (P + p->split - 1) / p->split;
        chunk = (chunk + 3) / 4 * 4;
        p->split = (int)((P + chunk - 1) / chunk);
        p->ld = (int)(chunk * p->split);
        p->scratch = (rows + c->K) * p->ld + (p->split > 1 ? (int64_t)p->split * c->K * KKg : 0);
    } else
        p->scratch = (rows + c->K) * P;
    if (p->scratch >= (int64_t)1 << 31 || (uint64_t)p->scratch * 4 > (uint64_t)ctx->cl.max_alloc / 2) {
        p->split = 1;
        p->ld = (int)P;
        p->scratch = 0;
        return;
    }
    p->algo = NN__CONV_GEMM;
}
