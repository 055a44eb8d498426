/* tools/cl_facts: clinfo's facts of every OpenCL device, as nn.h finds and sees them
   (tools/gpu_report.sh runs it; `make gpu-report-build` builds it). Like any nn.h program it
   needs no OpenCL header or library: the library is the one nn.h's loader finds
   (src/opencl/loader.c), and the calls go through nn.h's table of it, so what it prints is
   what nn.h gets.

   Prints, as "key: value" lines under a heading per platform and device:
     - the library: which file nn.h loaded and why that one (the ICD loader, a vendor driver
       named by an .icd file, NVIDIA's driver found without either, NN_OPENCL_LIBRARY);
     - per platform: name, vendor, version, profile, extensions;
     - per device: name, vendor, type, OpenCL and OpenCL C versions, driver, compute units,
       clock, global, constant and local memory, largest allocation, work-group and
       work-item limits, alignment, fp16/fp64, extensions, and NVIDIA's and AMD's own
       facts (compute capability, warp or wavefront, PCI bus) where the driver has them;
     - what nn.h makes of each device: its tuning (CPU or GPU kernels), the GEMM's build
       options, the time to open a context and build the programs of a small graph with no
       program cache, and a check: a [33 x 65] x [65 x 17] matmul and a relu of 1,000
       values (a 1-D launch that is not a multiple of any work-group) against the CPU
       backend.
   then one line per device for scripts:
     FACTS device=N name=... type=GPU|CPU|... platform=... version=... opencl_c=...
           driver=... units=N clock_mhz=N global_mib=N max_alloc_mib=N local_kib=N
           max_wg=N max_items=AxBxC fp64=yes|no fp16=yes|no extensions=N tuning=gpu|cpu
           open_ms=X build_ms=X check=ok|FAILED|error
   and FACTS library=PATH how=... devices=N; then a line per device for people,
     SUMMARY device N: NAME (TYPE; PLATFORM): VERSION, OPENCL C, driver ...

   Exit status: 0 when the library loads and every device opens and passes the check (no
   device at all is 0 too: the lines say so); 1 otherwise. Linux and the BSDs (dladdr). */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* dladdr: the file a function of the library lies in */
#endif
#define NN_IMPLEMENTATION
#include "nn.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the OpenCL constants nn.h does not declare (CL/cl.h, cl_ext.h) */
#define F_PLATFORM_PROFILE 0x0900
#define F_PLATFORM_VERSION 0x0901
#define F_PLATFORM_NAME 0x0902
#define F_PLATFORM_VENDOR 0x0903
#define F_PLATFORM_EXTENSIONS 0x0904
#define F_DEVICE_TYPE 0x1000
#define F_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define F_DEVICE_MAX_WORK_ITEM_DIMENSIONS 0x1003
#define F_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define F_DEVICE_MAX_WORK_ITEM_SIZES 0x1005
#define F_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT 0x100A
#define F_DEVICE_MAX_CLOCK_FREQUENCY 0x100C
#define F_DEVICE_ADDRESS_BITS 0x100D
#define F_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010
#define F_DEVICE_MAX_PARAMETER_SIZE 0x1017
#define F_DEVICE_MEM_BASE_ADDR_ALIGN 0x1019
#define F_DEVICE_GLOBAL_MEM_CACHE_SIZE 0x101E
#define F_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define F_DEVICE_MAX_CONSTANT_BUFFER_SIZE 0x1020
#define F_DEVICE_LOCAL_MEM_TYPE 0x1022
#define F_DEVICE_LOCAL_MEM_SIZE 0x1023
#define F_DEVICE_ERROR_CORRECTION_SUPPORT 0x1024
#define F_DEVICE_PROFILING_TIMER_RESOLUTION 0x1025
#define F_DEVICE_NAME 0x102B
#define F_DEVICE_VENDOR 0x102C
#define F_DRIVER_VERSION 0x102D
#define F_DEVICE_PROFILE 0x102E
#define F_DEVICE_VERSION 0x102F
#define F_DEVICE_EXTENSIONS 0x1030
#define F_DEVICE_DOUBLE_FP_CONFIG 0x1032
#define F_DEVICE_HALF_FP_CONFIG 0x1033
#define F_DEVICE_HOST_UNIFIED_MEMORY 0x1035
#define F_DEVICE_OPENCL_C_VERSION 0x103D
#define F_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define F_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#define F_DEVICE_REGISTERS_PER_BLOCK_NV 0x4002
#define F_DEVICE_WARP_SIZE_NV 0x4003
#define F_DEVICE_KERNEL_EXEC_TIMEOUT_NV 0x4005
#define F_DEVICE_PCI_BUS_ID_NV 0x4008
#define F_DEVICE_PCI_SLOT_ID_NV 0x4009
#define F_DEVICE_BOARD_NAME_AMD 0x4038
#define F_DEVICE_WAVEFRONT_WIDTH_AMD 0x4043

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* A string fact ("" when the driver has none); spaces and tabs in out_word become _. */
static void pstr(cl_platform_id p, cl_uint what, char *out, size_t n) {
    out[0] = 0;
    if (nn__clfn.GetPlatformInfo(p, what, n, out, NULL) != CL_SUCCESS) out[0] = 0;
    out[n - 1] = 0;
}
static void dstr(cl_device_id d, cl_uint what, char *out, size_t n) {
    out[0] = 0;
    if (nn__clfn.GetDeviceInfo(d, what, n, out, NULL) != CL_SUCCESS) out[0] = 0;
    out[n - 1] = 0;
}
/* A number fact of the driver's size (cl_uint, size_t or cl_ulong); 0 and *ok = 0 when none. */
static uint64_t dnum(cl_device_id d, cl_uint what, size_t size, int *ok) {
    unsigned char b[8];
    size_t got = 0;
    memset(b, 0, sizeof b);
    *ok = size <= sizeof b && nn__clfn.GetDeviceInfo(d, what, size, b, &got) == CL_SUCCESS && got == size;
    if (!*ok) return 0;
    if (size == 4) {
        cl_uint v;
        memcpy(&v, b, 4);
        return v;
    } else {
        uint64_t v = 0;
        if (size == sizeof(size_t)) {
            size_t s;
            memcpy(&s, b, sizeof s);
            v = s;
        } else {
            memcpy(&v, b, 8);
        }
        return v;
    }
}
static uint64_t du32(cl_device_id d, cl_uint what, int *ok) { return dnum(d, what, 4, ok); }
static uint64_t du64(cl_device_id d, cl_uint what, int *ok) { return dnum(d, what, 8, ok); }
static uint64_t dsize(cl_device_id d, cl_uint what, int *ok) { return dnum(d, what, sizeof(size_t), ok); }

/* s with every space, tab and = made _, for key=value lines. */
static const char *word(const char *s, char *buf, size_t n) {
    size_t i;
    if (snprintf(buf, n, "%s", s[0] ? s : "-") < 0) buf[0] = 0; /* cut to n - 1 bytes: enough for a key=value line */
    for (i = 0; buf[i]; i++)
        if (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '=' || buf[i] == '\n') buf[i] = '_';
    return buf;
}

static int count_words(const char *s) {
    int n = 0, in = 0;
    for (; *s; s++) {
        if (*s == ' ') in = 0;
        else if (!in) in = 1, n++;
    }
    return n;
}

/* Prints the extension list, several to a line. */
static void print_extensions(const char *indent, const char *ext) {
    const char *p = ext;
    int col = 0;
    printf("%sextensions (%d):", indent, count_words(ext));
    while (*p) {
        size_t len;
        while (*p == ' ') p++;
        len = strcspn(p, " ");
        if (!len) break;
        if (col + (int)len > 90) {
            printf("\n%s   ", indent);
            col = 0;
        }
        printf(" %.*s", (int)len, p);
        col += (int)len + 1;
        p += len;
    }
    printf("\n");
}

/* ---- what nn.h makes of a device ---- */

typedef struct facts_nn {
    int opened, tuning_gpu, check_ok;
    double open_ms, build_ms;
    char options[512], why[4400];
} facts_nn;

static void quiet_log(void *user, nn_log_level level, const char *message) {
    (void)user;
    (void)level;
    (void)message;
}

/* out = relu(a x b) of the matmul and of x on ctx: a [33 x 65], b [65 x 17], x [1000]. */
static nn_result small_graph(nn_context *ctx, const float *a, const float *b, const float *x, float *mm, float *rl,
                             double *build_ms) {
    nn_graph *g = NULL;
    nn_tensor ta, tb, tx, tm, tr;
    nn_result r = nn_graph_create(ctx, NULL, &g);
    double t0;
    if (r != NN_OK) return r;
    ta = nn_input(g, "a", NN_F32, nn_shape2(33, 65));
    tb = nn_input(g, "b", NN_F32, nn_shape2(65, 17));
    tx = nn_input(g, "x", NN_F32, nn_shape1(1000));
    tm = nn_matmul(g, ta, tb, 0, 0);
    tr = nn_relu(g, tx);
    nn_graph_output(g, tm);
    nn_graph_output(g, tr);
    t0 = now_ms();
    r = nn_graph_compile(g, NULL);
    if (build_ms) *build_ms = now_ms() - t0;
    if (r == NN_OK) r = nn_tensor_write(g, ta, a, 33 * 65 * sizeof(float));
    if (r == NN_OK) r = nn_tensor_write(g, tb, b, 65 * 17 * sizeof(float));
    if (r == NN_OK) r = nn_tensor_write(g, tx, x, 1000 * sizeof(float));
    if (r == NN_OK) r = nn_graph_forward(g);
    if (r == NN_OK) r = nn_tensor_read(g, tm, mm, 33 * 17 * sizeof(float));
    if (r == NN_OK) r = nn_tensor_read(g, tr, rl, 1000 * sizeof(float));
    nn_graph_destroy(g);
    return r;
}

static void nn_view(int index, facts_nn *f) {
    static float a[33 * 65], b[65 * 17], x[1000], mm[2][33 * 17], rl[2][1000];
    nn_context_desc cd;
    nn_context *ctx = NULL, *cpu = NULL;
    char dev[16];
    nn_result r;
    double t0, worst = 0;
    uint32_t s = 12345u;
    int i;
    memset(f, 0, sizeof *f);
    for (i = 0; i < 33 * 65; i++) a[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
    for (i = 0; i < 65 * 17; i++) b[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
    for (i = 0; i < 1000; i++) x[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
    snprintf(dev, sizeof dev, "%d", index);
    memset(&cd, 0, sizeof cd);
    cd.device = dev;
    cd.backend.cache_dir = "off"; /* the build time with no cache */
    cd.log = quiet_log;
    t0 = now_ms();
    r = nn_context_create(&cd, &ctx);
    f->open_ms = now_ms() - t0;
    if (r != NN_OK) {
        snprintf(f->why, sizeof f->why, "nn_context_create: %s", nn_result_string(r));
        return;
    }
    f->opened = 1;
    f->tuning_gpu = !ctx->dev.cpu_tuned;
    nn__program_options("gemm", &ctx->dev, f->options, sizeof f->options);
    r = small_graph(ctx, a, b, x, mm[0], rl[0], &f->build_ms);
    if (r != NN_OK)
        snprintf(f->why, sizeof f->why, "on the device: %s: %s", nn_result_string(r), nn_context_last_error(ctx));
    nn_context_destroy(ctx);
    if (r != NN_OK) return;
    cd.device = "cpu";
    if (nn_context_create(&cd, &cpu) != NN_OK) {
        snprintf(f->why, sizeof f->why, "cannot open the CPU backend");
        return;
    }
    r = small_graph(cpu, a, b, x, mm[1], rl[1], NULL);
    if (r != NN_OK)
        snprintf(f->why, sizeof f->why, "on the CPU: %s: %s", nn_result_string(r), nn_context_last_error(cpu));
    nn_context_destroy(cpu);
    if (r != NN_OK) return;
    for (i = 0; i < 33 * 17; i++) {
        double e = fabs((double)mm[0][i] - mm[1][i]) / (fabs((double)mm[1][i]) + 1.0);
        if (!(e <= worst)) worst = e;
    }
    for (i = 0; i < 1000; i++)
        if (memcmp(&rl[0][i], &rl[1][i], sizeof(float)) != 0) break;
    f->check_ok = worst <= 1e-5 && i == 1000;
    if (!f->check_ok)
        snprintf(f->why, sizeof f->why, "matmul differs from the CPU backend's by %.3g (relative)%s", worst,
                 i < 1000 ? "; relu differs in bits" : "");
    else
        snprintf(f->why, sizeof f->why, "matmul within %.2g of the CPU backend's, relu the same bits", worst);
}

/* ---- the library ---- */

static const char *library_file(char *buf, size_t n) {
#if defined(__linux__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__)
    Dl_info info;
    void *p;
    memcpy(&p, &nn__clfn.GetPlatformIDs, sizeof p);
    if (dladdr(p, &info) && info.dli_fname) { /* the ICD loader's, or the driver's own */
        snprintf(buf, n, "%s", info.dli_fname);
        return buf;
    }
#endif
    snprintf(buf, n, "(unknown)");
    return buf;
}

int main(void) {
    cl_platform_id plats[16];
    cl_uint np = 0, p;
    char lib[1024], how[64], w1[256], w2[256], w3[256], w4[256], w5[256], w6[256];
    const char *env = getenv("NN_OPENCL_LIBRARY");
    int devices = 0, status = 0, pass;
    static char facts_lines[64][1536], summary_lines[64][1536];
    cl_int err;

    if (!nn__cl_load()) {
        printf("library: none: %s\n", nn__cl_ld.why);
        printf("FACTS library=none how=none devices=0\n");
        return 1;
    }
    library_file(lib, sizeof lib);
    if (env && env[0]) snprintf(how, sizeof how, "NN_OPENCL_LIBRARY");
    else if (strstr(nn__cl_ld.note, "NVIDIA's driver")) snprintf(how, sizeof how, "nvidia-driver-without-loader");
    else if (strstr(nn__cl_ld.note, "named by")) snprintf(how, sizeof how, "icd-file-without-loader");
    else snprintf(how, sizeof how, "icd-loader");
    printf("library: %s (%s)\n", lib, how);
    if (nn__cl_ld.note[0]) printf("  nn.h: %s\n", nn__cl_ld.note);
    err = nn__clfn.GetPlatformIDs(16, plats, &np);
    if (err != CL_SUCCESS) {
        printf("clGetPlatformIDs: %s (%d)\n", nn__cl_errstr(err), (int)err);
        np = 0;
        if (err != CL_PLATFORM_NOT_FOUND_KHR) status = 1;
    }
    if (np > 16) np = 16;
    /* device numbers are nn.h's (NN_DEVICE=<index>): platforms in order, their devices in order */
    for (pass = 0, p = 0; p < np; p++) {
        char pname[256], pvendor[256], pver[256], pprof[64], *pext;
        cl_device_id devs[32];
        cl_uint nd = 0, d;
        pext = (char *)malloc(65536);
        if (!pext) return 1;
        pstr(plats[p], F_PLATFORM_NAME, pname, sizeof pname);
        pstr(plats[p], F_PLATFORM_VENDOR, pvendor, sizeof pvendor);
        pstr(plats[p], F_PLATFORM_VERSION, pver, sizeof pver);
        pstr(plats[p], F_PLATFORM_PROFILE, pprof, sizeof pprof);
        pstr(plats[p], F_PLATFORM_EXTENSIONS, pext, 65536);
        printf("\nplatform %u: %s\n  vendor: %s\n  version: %s\n  profile: %s\n", (unsigned)p, pname, pvendor, pver,
               pprof);
        print_extensions("  ", pext);
        err = nn__clfn.GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 32, devs, &nd);
        if (err != CL_SUCCESS) {
            printf("  clGetDeviceIDs: %s (%d)\n", nn__cl_errstr(err), (int)err);
            nd = 0;
        }
        if (nd > 32) nd = 32;
        for (d = 0; d < nd; d++, devices++) {
            char name[256], vendor[256], ver[256], cver[256], drv[256], prof[64], type[64], *ext;
            size_t items[3] = {0, 0, 0};
            uint64_t t, dims, v;
            int ok, ok2, has_nv, has_amd, fp64, fp16;
            unsigned long long units, clock, global_mib, alloc_mib, local_kib, max_wg;
            facts_nn f;
            ext = (char *)malloc(65536);
            if (!ext) return 1;
            dstr(devs[d], F_DEVICE_NAME, name, sizeof name);
            dstr(devs[d], F_DEVICE_VENDOR, vendor, sizeof vendor);
            dstr(devs[d], F_DEVICE_VERSION, ver, sizeof ver);
            dstr(devs[d], F_DEVICE_OPENCL_C_VERSION, cver, sizeof cver);
            dstr(devs[d], F_DRIVER_VERSION, drv, sizeof drv);
            dstr(devs[d], F_DEVICE_PROFILE, prof, sizeof prof);
            dstr(devs[d], F_DEVICE_EXTENSIONS, ext, 65536);
            t = du64(devs[d], F_DEVICE_TYPE, &ok);
            snprintf(type, sizeof type, "%s%s%s%s", t & CL_DEVICE_TYPE_GPU ? "GPU " : "",
                     t & CL_DEVICE_TYPE_CPU ? "CPU " : "", t & 8 ? "accelerator " : "", t & 1 ? "default " : "");
            if (type[0]) type[strlen(type) - 1] = 0;
            else snprintf(type, sizeof type, "other (%llu)", (unsigned long long)t);
            has_nv = strstr(ext, "cl_nv_device_attribute_query") != NULL;
            has_amd = strstr(ext, "cl_amd_device_attribute_query") != NULL;
            fp64 = strstr(ext, "cl_khr_fp64") != NULL;
            fp16 = strstr(ext, "cl_khr_fp16") != NULL;
            printf("\ndevice %d (NN_DEVICE=%d): %s\n", devices, devices, name);
            printf("  platform: %u (%s)\n  vendor: %s\n  type: %s\n", (unsigned)p, pname, vendor, type);
            printf("  version: %s\n  OpenCL C: %s\n  driver: %s\n  profile: %s\n", ver, cver, drv, prof);
            printf("  compute units: %llu\n", (unsigned long long)du32(devs[d], F_DEVICE_MAX_COMPUTE_UNITS, &ok));
            printf("  clock: %llu MHz\n", (unsigned long long)du32(devs[d], F_DEVICE_MAX_CLOCK_FREQUENCY, &ok));
            printf("  global memory: %llu MiB (cache %llu KiB)\n",
                   (unsigned long long)(du64(devs[d], F_DEVICE_GLOBAL_MEM_SIZE, &ok) >> 20),
                   (unsigned long long)(du64(devs[d], F_DEVICE_GLOBAL_MEM_CACHE_SIZE, &ok2) >> 10));
            printf("  largest allocation: %llu MiB\n",
                   (unsigned long long)(du64(devs[d], F_DEVICE_MAX_MEM_ALLOC_SIZE, &ok) >> 20));
            v = du32(devs[d], F_DEVICE_LOCAL_MEM_TYPE, &ok);
            printf("  local memory: %llu bytes (%s)\n", (unsigned long long)du64(devs[d], F_DEVICE_LOCAL_MEM_SIZE, &ok2),
                   !ok ? "type unknown" : v == 1 ? "dedicated" : v == 2 ? "global" : "none");
            printf("  constant buffer: %llu KiB\n",
                   (unsigned long long)(du64(devs[d], F_DEVICE_MAX_CONSTANT_BUFFER_SIZE, &ok) >> 10));
            dims = du32(devs[d], F_DEVICE_MAX_WORK_ITEM_DIMENSIONS, &ok);
            if (ok && dims >= 1 && dims <= 3)
                ok = nn__clfn.GetDeviceInfo(devs[d], F_DEVICE_MAX_WORK_ITEM_SIZES, (size_t)dims * sizeof(size_t), items,
                                            NULL) == CL_SUCCESS;
            printf("  work-group: at most %llu items; items per dimension %llu x %llu x %llu\n",
                   (unsigned long long)dsize(devs[d], F_DEVICE_MAX_WORK_GROUP_SIZE, &ok2), (unsigned long long)items[0],
                   (unsigned long long)items[1], (unsigned long long)items[2]);
            printf("  preferred float vector width: %llu\n",
                   (unsigned long long)du32(devs[d], F_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, &ok));
            printf("  address bits: %llu; base address alignment: %llu bits; largest kernel argument list: %llu bytes\n",
                   (unsigned long long)du32(devs[d], F_DEVICE_ADDRESS_BITS, &ok),
                   (unsigned long long)du32(devs[d], F_DEVICE_MEM_BASE_ADDR_ALIGN, &ok),
                   (unsigned long long)dsize(devs[d], F_DEVICE_MAX_PARAMETER_SIZE, &ok2));
            printf("  ECC: %s; host unified memory: %s; timer resolution: %llu ns\n",
                   du32(devs[d], F_DEVICE_ERROR_CORRECTION_SUPPORT, &ok) ? "yes" : "no",
                   du32(devs[d], F_DEVICE_HOST_UNIFIED_MEMORY, &ok2) ? "yes" : "no",
                   (unsigned long long)dsize(devs[d], F_DEVICE_PROFILING_TIMER_RESOLUTION, &ok));
            printf("  fp64: %s (config 0x%llx); fp16: %s\n", fp64 ? "yes" : "no",
                   (unsigned long long)du64(devs[d], F_DEVICE_DOUBLE_FP_CONFIG, &ok), fp16 ? "yes" : "no");
            if (has_nv) {
                uint64_t bus = du32(devs[d], F_DEVICE_PCI_BUS_ID_NV, &ok),
                         slot = du32(devs[d], F_DEVICE_PCI_SLOT_ID_NV, &ok2);
                printf("  NVIDIA: compute capability %llu.%llu; warp %llu; registers per block %llu; kernel time limit %s;"
                       " PCI bus %llu slot %llu\n",
                       (unsigned long long)du32(devs[d], F_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, &ok),
                       (unsigned long long)du32(devs[d], F_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, &ok),
                       (unsigned long long)du32(devs[d], F_DEVICE_WARP_SIZE_NV, &ok),
                       (unsigned long long)du32(devs[d], F_DEVICE_REGISTERS_PER_BLOCK_NV, &ok),
                       du32(devs[d], F_DEVICE_KERNEL_EXEC_TIMEOUT_NV, &ok) ? "yes" : "no", (unsigned long long)bus,
                       (unsigned long long)slot);
            }
            if (has_amd) {
                char board[256];
                dstr(devs[d], F_DEVICE_BOARD_NAME_AMD, board, sizeof board);
                printf("  AMD: board %s; wavefront %llu\n", board,
                       (unsigned long long)du32(devs[d], F_DEVICE_WAVEFRONT_WIDTH_AMD, &ok));
            }
            print_extensions("  ", ext);
            nn_view(devices, &f);
            if (!f.opened) {
                printf("  nn.h: cannot open it: %s\n", f.why);
            } else {
                printf("  nn.h: %s kernels and launch geometry; context %.0f ms; a matmul and a relu built in %.0f ms"
                       " (nn.h's program cache off)\n",
                       f.tuning_gpu ? "GPU" : "CPU", f.open_ms, f.build_ms);
                printf("  nn.h: GEMM build options: %s\n", f.options[0] ? f.options : "(none)");
                printf("  nn.h: check %s: %s\n", f.check_ok ? "ok" : "FAILED", f.why);
            }
            if (!f.opened || !f.check_ok) status = 1;
            units = (unsigned long long)du32(devs[d], F_DEVICE_MAX_COMPUTE_UNITS, &ok);
            clock = (unsigned long long)du32(devs[d], F_DEVICE_MAX_CLOCK_FREQUENCY, &ok);
            global_mib = (unsigned long long)(du64(devs[d], F_DEVICE_GLOBAL_MEM_SIZE, &ok) >> 20);
            alloc_mib = (unsigned long long)(du64(devs[d], F_DEVICE_MAX_MEM_ALLOC_SIZE, &ok) >> 20);
            local_kib = (unsigned long long)(du64(devs[d], F_DEVICE_LOCAL_MEM_SIZE, &ok) >> 10);
            max_wg = (unsigned long long)dsize(devs[d], F_DEVICE_MAX_WORK_GROUP_SIZE, &ok);
            if (pass < 64)
                if (snprintf(summary_lines[pass], sizeof summary_lines[0],
                         "SUMMARY device %d: %s (%s; %s): %s, %s, driver %s; %llu units at %llu MHz, %llu MiB (largest"
                         " buffer %llu MiB), local memory %llu KiB, work-group %llu (items %llux%llux%llu), fp64 %s, fp16"
                         " %s, %d extensions; nn.h: %s, check %s",
                         devices, name, type, pname, ver, cver, drv,
                         units, clock, global_mib, alloc_mib, local_kib, max_wg,
                         (unsigned long long)items[0], (unsigned long long)items[1], (unsigned long long)items[2],
                         fp64 ? "yes" : "no", fp16 ? "yes" : "no", count_words(ext),
                         !f.opened ? "cannot open it" : f.tuning_gpu ? "GPU tuning" : "CPU tuning",
                         !f.opened ? "not run" : f.check_ok ? "ok" : "FAILED") < 0) summary_lines[pass][0] = 0;
            if (pass < 64)
                if (snprintf(facts_lines[pass], sizeof facts_lines[0],
                         "FACTS device=%d name=%s type=%s platform=%s version=%s opencl_c=%s driver=%s units=%llu"
                         " clock_mhz=%llu global_mib=%llu max_alloc_mib=%llu local_kib=%llu max_wg=%llu"
                         " max_items=%llux%llux%llu fp64=%s fp16=%s extensions=%d tuning=%s open_ms=%.0f build_ms=%.0f"
                         " check=%s",
                         devices, word(name, w1, sizeof w1), word(type, w2, sizeof w2), word(pname, w3, sizeof w3),
                         word(ver, w4, sizeof w4), word(cver, w5, sizeof w5), word(drv, w6, sizeof w6),
                         units, clock, global_mib, alloc_mib, local_kib, max_wg,
                         (unsigned long long)items[0], (unsigned long long)items[1], (unsigned long long)items[2],
                         fp64 ? "yes" : "no", fp16 ? "yes" : "no", count_words(ext),
                         !f.opened ? "-" : f.tuning_gpu ? "gpu" : "cpu", f.open_ms, f.build_ms,
                         !f.opened ? "error" : f.check_ok ? "ok" : "FAILED") < 0) facts_lines[pass][0] = 0;
            if (pass < 64) pass++;
            free(ext);
        }
        free(pext);
    }
    printf("\n");
    for (p = 0; (int)p < pass; p++) printf("%s\n", facts_lines[p]);
    for (p = 0; (int)p < pass; p++) printf("%s\n", summary_lines[p]);
    printf("FACTS library=%s how=%s devices=%d\n", word(lib, w1, sizeof w1), how, devices);
    return status;
}
