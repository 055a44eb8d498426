/* tests/nn_test: every test on every backend found: the CPU backend, each OpenCL device,
   and each CPU OpenCL device (PoCL) again with GPU tuning (NN_TUNING_GPU: the kernels and
   launch geometry used on GPUs). Each case prints one line; the last line is
   "N passed, N failed, N skipped".

   NN_TEST_FILTER=substring   only the cases whose name contains it, on every backend; the
                              others are not counted at all (matching none exits 1).
   NN_TEST_BACKENDS=list      a comma list of cpu, opencl (each OpenCL device as tuned by
                              default), gpu-tuning (the GPU-tuning pass); unset: all three.
   NN_TEST_DEVICES=list       a comma list of OpenCL device indices, run in that order
                              (tools/gpu_report.sh puts the GPUs first); unset: every
                              device in index order. An index that is not a device fails.
   NN_TEST_TIME=1             each case's line ends with its wall and CPU time (all
                              threads of the process) in ms.
   NN_CL_GUARDS               set to 1 unless set: every OpenCL buffer has guard bytes after
                              its end, and a launch that writes them fails its run, naming
                              the kernel (tests/test_launch.c).
   NN_TEST_SURVEY=file        only the op checker's cases (t_begin_op), and those only
                              compiled, not run: each graph's op kinds, functions,
                              kernels and cost go to the file, a line each
                              (t_survey_write); tests/oclgrind.sh picks cases from it.
   NN_TEST_CASES=file         only the op checker's cases listed in the file, a line
                              each: "BACKEND<TAB>LABEL" (BACKEND as in the case's line,
                              without brackets); each backend's run ends with its
                              coverage line.
   In both modes each backend and case is also announced on stderr ("nn_test: backend B",
   "nn_test: case LABEL [B]", then its failures "nn_test: fail FILE:LINE: ..." and
   "nn_test: end ok|FAIL|skipped"), so that what a tool writes there (Oclgrind) can be
   told to its case. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include "test.h" /* the library itself is compiled in tests/coverage.c */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

const char *t_argv0;
static int n_passed, n_failed, n_skipped;
static int case_failures, case_skipped, case_filtered;
static char case_name[200];
static const t_env *case_env;
static const char *filter;  /* NN_TEST_FILTER, NULL when unset or empty */
static int show_time;       /* NN_TEST_TIME */
static double case_start, case_start_cpu;
static FILE *survey_file;   /* NN_TEST_SURVEY */
static char *case_list;     /* NN_TEST_CASES: the file's text, "BACKEND\tLABEL" lines */
static int n_surveyed;

static double now_ms(void) {
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
#else
    return (double)clock() * 1e3 / CLOCKS_PER_SEC;
#endif
}

/* 1 when NN_TEST_CASES lists the case `name` on `backend` */
static int case_listed(const char *backend, const char *name) {
    const char *p = case_list;
    size_t nb = strlen(backend), nn = strlen(name);
    while (p && *p) {
        size_t len = strcspn(p, "\n");
        if (len == nb + 1 + nn && strncmp(p, backend, nb) == 0 && p[nb] == '\t' && strncmp(p + nb + 1, name, nn) == 0)
            return 1;
        p += len;
        if (*p == '\n') p++;
    }
    return 0;
}

static int begin_case(const t_env *e, const char *name, int op_checker) {
    case_env = e;
    snprintf(case_name, sizeof case_name, "%s", name);
    case_failures = 0;
    case_skipped = 0;
    case_filtered = (filter && !strstr(name, filter)) || ((survey_file || case_list) && !op_checker) ||
                    (case_list && !case_listed(e->backend, name));
    if (!case_filtered && (survey_file || case_list)) {
        fprintf(stderr, "nn_test: case %s [%s]\n", name, e->backend);
        fflush(stderr);
    }
    case_start = now_ms();
    case_start_cpu = (double)clock() * 1e3 / CLOCKS_PER_SEC;
    return !case_filtered;
}

int t_begin(const t_env *e, const char *name) { return begin_case(e, name, 0); }
int t_begin_op(const t_env *e, const char *name) { return begin_case(e, name, 1); }

int t_survey_graph(const nn_graph *g) {
    if (!survey_file || case_filtered) return 0;
    t_survey_write(survey_file, case_env->backend, case_name, g);
    return 1;
}

int t_begin_cpu(const t_env *e, const char *name, const char *why) {
    if (!t_begin(e, name)) return 0;
    if (!e->opencl) return 1;
    t_skip(why);
    t_end();
    return 0;
}

void t_skip(const char *why) {
    if (case_filtered) return;
    case_skipped = 1;
    printf("skipped %-44s [%s]: %s\n", case_name, case_env->backend, why);
}

void t_end(void) {
    if (case_filtered) return;
    if (survey_file || case_list) { /* the verdict on stderr too, after what a tool wrote there */
        fprintf(stderr, "nn_test: end %s\n", case_failures ? "FAIL" : case_skipped ? "skipped" : "ok");
        fflush(stderr);
    }
    if (case_skipped && !case_failures) {
        n_skipped++;
        return;
    }
    if (survey_file && !case_failures) { /* compiled and written, nothing run: no line */
        n_surveyed++;
        n_passed++;
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

/* steps nn_graph_step calls on compiled g: the loss of the first step's forward into
   *first, then the loss of a forward after the last step into *last; 0 on a failure (reported) */
int t_train_losses(nn_graph *g, nn_context *ctx, nn_tensor loss, int steps, float *first, float *last) {
    int s;
    for (s = 0; s < steps; s++) {
        if (!T_OK(nn_graph_step(g), ctx)) return 0;
        if (s == 0 && !T_OK(nn_tensor_read(g, loss, first, sizeof *first), ctx)) return 0;
    }
    return T_OK(nn_graph_forward(g), ctx) && T_OK(nn_tensor_read(g, loss, last, sizeof *last), ctx);
}

/* Whether e's OpenCL context is tuned for a GPU, as nn_backend_options.tuning says:
   explicitly, or by $NN_CL_TUNING, or by the device's type (not a CPU). */
int t_gpu_tuned(const t_env *e) {
    const char *env = getenv("NN_CL_TUNING");
    nn_device_info info;
    if (e->tuning != NN_TUNING_AUTO) return e->tuning == NN_TUNING_GPU;
    if (env && strcmp(env, "gpu") == 0) return 1;
    if (env && strcmp(env, "cpu") == 0) return 0;
    return nn_context_device(e->ctx, &info) == NN_OK && !info.is_cpu;
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
        if (survey_file || case_list) { /* and on stderr, beside what a tool wrote there */
            fprintf(stderr, "nn_test: fail %s:%d: ", file, line);
            va_start(ap, fmt);
            vfprintf(stderr, fmt, ap);
            va_end(ap);
            fprintf(stderr, "\n");
        }
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

double t_rnd16(nn_dtype d, double v) {
    int p = d == NN_BF16 ? 8 : 11, emin = d == NN_BF16 ? -126 : -14, e;
    double a = fabs(v), ulp, q;
    if (a == 0.0 || v != v) return v;
    frexp(a, &e);
    if (e - 1 < emin) e = emin + 1;
    ulp = ldexp(1.0, e - p);
    q = rint(a / ulp) * ulp;
    return v < 0 ? -q : q;
}
const char *t_name16(nn_dtype d) { return d == NN_BF16 ? "bf16" : "f16"; }

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
    if (survey_file || case_list) {
        fprintf(stderr, "nn_test: backend %s\n", e->backend);
        fflush(stderr);
    }
#define X(name) suite_##name(e);
    T_SUITES(X)
#undef X
    if (case_list) { /* what the listed cases covered here (suite_registry's measures) */
        int total = 0, covered = t_cover_count(&total), op, ran = 0, ops = 0;
        for (op = 0; op < nn_op_count(); op++) {
            const char *name = nn_op_name(op);
            if (!name || strcmp(name, "input") == 0 || strcmp(name, "param") == 0) continue;
            ops++;
            ran += t_op_compiled(e->ctx, op) > 0;
        }
        printf("coverage [%s]: %d of %d (op kind, function) pairs of the function tables compared, %d of %d op kinds ran\n",
               e->backend, covered, total, ran, ops);
    }
}

/* NN_TEST_CASES: the file's text, or NULL after saying why */
static char *read_case_list(const char *path) {
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long n;
    if (!f) {
        printf("NN_TEST_CASES: cannot open %s\n", path);
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = (char *)malloc((size_t)n + 1)) != NULL) {
        if (fread(text, 1, (size_t)n, f) != (size_t)n) {
            free(text);
            text = NULL;
        } else {
            text[n] = 0;
        }
    }
    fclose(f);
    if (!text) printf("NN_TEST_CASES: cannot read %s\n", path);
    return text;
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
    int n_dev = 0, i, k, order[32], n_order = 0;
    (void)argc;
    t_argv0 = argv[0];
    if (child) return t_cl_load_child(child);
    if (getenv("NN_TEST_THREADS_CHILD")) return t_threads_child(getenv("NN_TEST_THREADS_CHILD"));
#ifdef _WIN32
    if (!getenv("NN_CL_GUARDS")) _putenv("NN_CL_GUARDS=1");
#else
    setenv("NN_CL_GUARDS", "1", 0);
#endif
    filter = getenv("NN_TEST_FILTER");
    if (filter && !filter[0]) filter = NULL;
    show_time = getenv("NN_TEST_TIME") && atoi(getenv("NN_TEST_TIME")) > 0;
    if (getenv("NN_TEST_SURVEY") && getenv("NN_TEST_SURVEY")[0] && !(survey_file = fopen(getenv("NN_TEST_SURVEY"), "w"))) {
        printf("NN_TEST_SURVEY: cannot write %s\n0 passed, 1 failed, 0 skipped\n", getenv("NN_TEST_SURVEY"));
        return 1;
    }
    if (getenv("NN_TEST_CASES") && getenv("NN_TEST_CASES")[0] && !(case_list = read_case_list(getenv("NN_TEST_CASES")))) {
        printf("0 passed, 1 failed, 0 skipped\n");
        return 1;
    }
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
    {
        const char *p = getenv("NN_TEST_DEVICES");
        n_order = 0;
        if (p && p[0] && (want_cl || want_gpu_tuning)) {
            while (*p && n_order < 32) {
                char *end;
                long v = strtol(p, &end, 10);
                if (end == p || (*end && *end != ',') || v < 0 || v >= n_dev) {
                    printf("FAIL    NN_TEST_DEVICES=%s: '%.*s' is not an OpenCL device index here (0..%d)\n",
                           getenv("NN_TEST_DEVICES"), (int)strcspn(p, ","), p, n_dev - 1);
                    n_failed++;
                    n_order = 0;
                    n_dev = -1;
                    break;
                }
                order[n_order++] = (int)v;
                p = *end == ',' ? end + 1 : end;
            }
            if (n_dev > 0) n_dev = n_order;
        } else {
            for (i = 0; i < n_dev && i < 32; i++) order[n_order++] = i;
            n_dev = n_order;
        }
    }
    for (k = 0; k < n_dev; k++) {
        nn_device_info info[32];
        char idx[16], label[200];
        nn_context *ctx = NULL;
        i = order[k];
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
    if (survey_file) {
        printf("NN_TEST_SURVEY: %d cases compiled, not run, written to %s\n", n_surveyed, getenv("NN_TEST_SURVEY"));
        fclose(survey_file);
    }
    free(case_list);
    printf("%d passed, %d failed, %d skipped\n", n_passed, n_failed, n_skipped);
    return n_failed || (filter && n_passed + n_failed + n_skipped == 0) ? 1 : 0;
}
