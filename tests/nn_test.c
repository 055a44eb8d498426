/* tests/nn_test: every test on every backend found. NN_TEST_BACKENDS=cpu limits the run to
   the CPU backend (make test-asan). */
#define NN_IMPLEMENTATION
#include "test.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static int n_passed, n_failed, n_skipped;
static int case_failures, case_skipped;
static char case_name[200];
static const t_env *case_env;

void t_begin(const t_env *e, const char *name) {
    case_env = e;
    snprintf(case_name, sizeof case_name, "%s", name);
    case_failures = 0;
    case_skipped = 0;
}

void t_skip(const char *why) {
    case_skipped = 1;
    printf("skipped %-44s [%s]: %s\n", case_name, case_env->backend, why);
}

void t_end(void) {
    if (case_skipped && !case_failures) {
        n_skipped++;
        return;
    }
    if (case_failures) n_failed++;
    else n_passed++;
    printf("%s %-44s [%s]\n", case_failures ? "FAIL   " : "ok     ", case_name, case_env->backend);
    fflush(stdout);
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

static void run_suites(const t_env *e) {
    suite_ops(e);
    suite_conv3d(e);
    suite_loss(e);
    suite_shape(e);
    suite_norm(e);
    suite_pool(e);
    suite_optim(e);
    suite_graph(e);
    suite_errors(e);
    suite_io(e);
    suite_safetensors(e);
    suite_ckpt(e);
    suite_files(e);
    suite_registry(e);
}

int main(void) {
    const char *only = getenv("NN_TEST_BACKENDS");
    nn_context_desc d;
    nn_context *cpu = NULL;
    t_env e;
    int n_dev, i;
    memset(&d, 0, sizeof d);
    d.device = "cpu";
    d.log_level = NN_LOG_WARN + 1; /* no backend lines between the results */
    if (nn_context_create(&cpu, &d) != NN_OK) {
        printf("cannot create the CPU backend\n0 passed, 1 failed\n");
        return 1;
    }
    memset(&e, 0, sizeof e);
    e.ctx = cpu;
    e.backend = "cpu";
    printf("== backend cpu\n");
    run_suites(&e);
    n_dev = (only && strcmp(only, "cpu") == 0) ? 0 : nn_list_devices(NULL, 0);
    for (i = 0; i < n_dev; i++) {
        nn_device_info info[32];
        char idx[16], label[200];
        nn_context *ctx = NULL;
        nn_list_devices(info, 32);
        snprintf(idx, sizeof idx, "%d", i);
        snprintf(label, sizeof label, "opencl:%s", info[i].name);
        printf("== backend %s (%s)\n", label, info[i].platform);
        d.device = idx;
        if (nn_context_create(&ctx, &d) != NN_OK) {
            printf("FAIL    cannot open OpenCL device %d\n", i);
            n_failed++;
            continue;
        }
        e.ctx = ctx;
        e.cpu = cpu;
        e.opencl = 1;
        e.backend = label;
        run_suites(&e);
        nn_context_destroy(ctx);
        if (info[i].is_cpu) { /* the GPU kernels (tiled GEMM, per-element conv and pool kernels) here too */
            nn_context *gctx = NULL;
            d.tuning = NN_TUNING_GPU;
            snprintf(label, sizeof label, "opencl:%s, gpu tuning", info[i].name);
            printf("== backend %s\n", label);
            if (nn_context_create(&gctx, &d) != NN_OK) {
                printf("FAIL    cannot open OpenCL device %d with GPU tuning\n", i);
                n_failed++;
            } else {
                e.ctx = gctx;
                suite_ops(&e);
                suite_pool(&e);
                nn_context_destroy(gctx);
            }
            d.tuning = NN_TUNING_AUTO;
        }
    }
    if (n_dev == 0) printf("(no OpenCL device found%s)\n", only ? ": NN_TEST_BACKENDS=cpu" : "");
    nn_context_destroy(cpu);
    printf("%d passed, %d failed, %d skipped\n", n_passed, n_failed, n_skipped);
    return n_failed ? 1 : 0;
}
