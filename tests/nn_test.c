/* tests/nn_test: every test on every backend found: the CPU backend, each OpenCL device,
   and each CPU OpenCL device (PoCL) again with GPU tuning (NN_TUNING_GPU: the kernels and
   launch geometry used on GPUs). Each case prints one line; the last line is
   "N passed, N failed, N skipped".

   NN_TEST_FILTER=substring   only the cases whose name contains it, on every backend; the
                              others are not counted at all (matching none exits 1).
   NN_TEST_BACKENDS=list      a comma list of cpu, opencl (each OpenCL device as tuned by
                              default), gpu-tuning (the GPU-tuning pass); unset: all three.
   NN_TEST_TIME=1             each case's line ends with its wall and CPU time (all
                              threads of the process) in ms. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include "test.h" /* the library itself is compiled in tests/coverage.c */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

static int n_passed, n_failed, n_skipped;
static int case_failures, case_skipped, case_filtered;
static char case_name[200];
static const t_env *case_env;
static const char *filter;  /* NN_TEST_FILTER, NULL when unset or empty */
static int show_time;       /* NN_TEST_TIME */
static double case_start, case_start_cpu;

static double now_ms(void) {
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
#else
    return (double)clock() * 1e3 / CLOCKS_PER_SEC;
#endif
}

int t_begin(const t_env *e, const char *name) {
    case_env = e;
    snprintf(case_name, sizeof case_name, "%s", name);
    case_failures = 0;
    case_skipped = 0;
    case_filtered = filter && !strstr(name, filter);
    case_start = now_ms();
    case_start_cpu = (double)clock() * 1e3 / CLOCKS_PER_SEC;
    return !case_filtered;
}

void t_skip(const char *why) {
    if (case_filtered) return;
    case_skipped = 1;
    printf("skipped %-44s [%s]: %s\n", case_name, case_env->backend, why);
}

void t_end(void) {
    if (case_filtered) return;
    if (case_skipped && !case_failures) {
        n_skipped++;
        return;
    }
    if (case_failures) n_failed++;
    else n_passed++;
    printf("%s %-44s [%s]", case_failures ? "FAIL   " : "ok     ", case_name, case_env->backend);
    if (show_time)
        printf(" %.1f ms, cpu %.1f ms", now_ms() - case_start, (double)clock() * 1e3 / CLOCKS_PER_SEC - case_start_cpu);
    printf("\n");
    fflush(stdout);
}

void t_context_desc(const t_env *e, nn_context_desc *d) {
    memset(d, 0, sizeof *d);
    d->device = e->device;
    d->backend.tuning = e->tuning;
    d->log_level = NN_LOG_WARN;
}

int t_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    if (case_failures++ < 5) {
        printf("  %s:%d: ", file, line);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
    }
    return 0;
}

static unsigned long long rng_state = 88172645463325252ULL;
void t_seed(unsigned long long s) { rng_state = s ? s : 88172645463325252ULL; }
static unsigned long long t_next(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
double t_uniform(double lo, double hi) { return lo + (hi - lo) * ((double)(t_next() >> 11) / 9007199254740992.0); }
int t_randint(int n) { return (int)(t_next() % (unsigned long long)n); }

void t_philox(unsigned c[4], unsigned k0, unsigned k1) {
    int r;
    for (r = 0; r < 10; r++) {
        unsigned long long p0 = 0xD2511F53ULL * c[0], p1 = 0xCD9E8D57ULL * c[2];
        unsigned n0 = (unsigned)(p1 >> 32) ^ c[1] ^ k0, n2 = (unsigned)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (unsigned)p1;
        c[3] = (unsigned)p0;
        c[0] = n0;
        c[2] = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

double t_relerr(const double *a, const double *b, long n) {
    double scale = 0, worst = 0;
    long i;
    for (i = 0; i < n; i++) scale = fabs(b[i]) > scale ? fabs(b[i]) : scale;
    for (i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]) / (fabs(b[i]) + 0.01 * scale + 1e-30);
        if (!(e <= worst)) worst = e; /* NaN counts as worst */
    }
    return worst;
}

/* Every suite, in the order they run on each backend: T_SUITES in test.h. */
static void run_suites(const t_env *e) {
    t_cover_reset(); /* the coverage of this backend starts empty */
#define X(name) suite_##name(e);
    T_SUITES(X)
#undef X
}

/* NN_TEST_BACKENDS: 1 when `name` is in the comma list (or the list is unset or empty). */
static int backend_wanted(const char *list, const char *name) {
    size_t n = strlen(name);
    const char *p = list;
    if (!list || !list[0]) return 1;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p += len;
        if (*p == ',') p++;
    }
    return 0;
}

/* 1, after saying so, when an entry of the list is not one of the three names. */
static int backend_list_bad(const char *list) {
    const char *p = list;
    if (!list) return 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (!((len == 3 && strncmp(p, "cpu", 3) == 0) || (len == 6 && strncmp(p, "opencl", 6) == 0) ||
              (len == 10 && strncmp(p, "gpu-tuning", 10) == 0))) {
            printf("NN_TEST_BACKENDS: unknown entry '%.*s' (a comma list of cpu, opencl, gpu-tuning)\n", (int)len, p);
            return 1;
        }
        p += len;
        if (*p == ',') p++;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *only = getenv("NN_TEST_BACKENDS"), *child = getenv("NN_TEST_CL_LOAD");
    int want_cl, want_gpu_tuning;
    nn_context_desc d;
    nn_context *cpu = NULL;
    t_env e;
    int n_dev = 0, i;
    (void)argc;
    if (child) return t_cl_load_child(child);
    filter = getenv("NN_TEST_FILTER");
    if (filter && !filter[0]) filter = NULL;
    show_time = getenv("NN_TEST_TIME") && atoi(getenv("NN_TEST_TIME")) > 0;
    if (backend_list_bad(only)) {
        printf("0 passed, 1 failed, 0 skipped\n");
        return 1;
    }
    want_cl = backend_wanted(only, "opencl");
    want_gpu_tuning = backend_wanted(only, "gpu-tuning");
    if (filter) printf("NN_TEST_FILTER=%s: only the cases whose name contains it\n", filter);
    memset(&d, 0, sizeof d);
    d.device = "cpu";
    d.log_level = NN_LOG_WARN; /* no backend lines between the results */
    if (nn_context_create(&d, &cpu) != NN_OK) {
        printf("cannot create the CPU backend\n0 passed, 1 failed, 0 skipped\n");
        return 1;
    }
    memset(&e, 0, sizeof e);
    e.ctx = cpu;
    e.backend = "cpu";
    e.device = "cpu";
    if (backend_wanted(only, "cpu")) {
        printf("== backend cpu\n");
        run_suites(&e);
    }
    {
        t_env loader = e;
        loader.backend = "loader";
        printf("== the OpenCL library, in child processes\n");
        suite_cl_load(&loader, argv[0], want_cl);
    }
    if (want_cl || want_gpu_tuning) n_dev = t_devices(NULL, 0);
    for (i = 0; i < n_dev; i++) {
        nn_device_info info[32];
        char idx[16], label[200];
        nn_context *ctx = NULL;
        t_devices(info, 32);
        snprintf(idx, sizeof idx, "%d", i);
        d.device = idx;
        e.cpu = cpu;
        e.opencl = 1;
        e.device = idx;
        if (want_cl) {
            snprintf(label, sizeof label, "opencl:%s", info[i].name);
            printf("== backend %s (%s)\n", label, info[i].platform);
            if (nn_context_create(&d, &ctx) != NN_OK) {
                printf("FAIL    cannot open OpenCL device %d\n", i);
                n_failed++;
            } else {
                e.ctx = ctx;
                e.backend = label;
                run_suites(&e);
                nn_context_destroy(ctx);
            }
        }
        if (info[i].is_cpu && want_gpu_tuning) { /* the GPU kernels and launch geometry here too */
            nn_context *gctx = NULL;
            d.backend.tuning = NN_TUNING_GPU;
            snprintf(label, sizeof label, "opencl:%s, gpu tuning", info[i].name);
            printf("== backend %s\n", label);
            if (nn_context_create(&d, &gctx) != NN_OK) {
                printf("FAIL    cannot open OpenCL device %d with GPU tuning\n", i);
                n_failed++;
            } else {
                e.ctx = gctx;
                e.backend = label;
                e.tuning = NN_TUNING_GPU;
                run_suites(&e);
                nn_context_destroy(gctx);
            }
            d.backend.tuning = e.tuning = NN_TUNING_AUTO;
        }
    }
    if ((want_cl || want_gpu_tuning) && n_dev == 0) printf("(no OpenCL device found)\n");
    nn_context_destroy(cpu);
    if (filter && n_passed + n_failed + n_skipped == 0) printf("(NN_TEST_FILTER=%s matched no case)\n", filter);
    printf("%d passed, %d failed, %d skipped\n", n_passed, n_failed, n_skipped);
    return n_failed || (filter && n_passed + n_failed + n_skipped == 0) ? 1 : 0;
}
