/* Development harness for src/base/threads.c + src/cpu/gemm.c (not part of
 * the library).
 *
 *   # correctness only (also under sanitizers):
 *   cc -std=c99 -O1 -g -fsanitize=address,undefined bench/sgemm_cpu_dev.c -lpthread -lm -o /tmp/t && /tmp/t test
 *   # benchmark against OpenBLAS:
 *   cc -std=c99 -O2 -DNN_BENCH_OPENBLAS -I/usr/include/x86_64-linux-gnu/openblas-pthread \
 *      bench/sgemm_cpu_dev.c -lopenblas -lpthread -lm -o /tmp/b
 *   OPENBLAS_CORETYPE=SkylakeX OPENBLAS_NUM_THREADS=2 /tmp/b bench
 *
 * Modes: test | bench | pool | all (default: all).
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

/* test_fail_alloc makes the library's allocations fail (fallback paths) */
static int test_fail_alloc = 0;
#define NN_MALLOC(sz) (test_fail_alloc ? NULL : malloc(sz))
#define NN_FREE(p) free(p)

#include "../src/base/threads.c"
#include "../src/cpu/gemm.c"

#ifdef NN_BENCH_OPENBLAS
#include <cblas.h>
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint32_t rng_state = 12345u;
static float frand(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((rng_state >> 8) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

/* ------------------------------------------------------------------------ */
/* correctness                                                              */

static int n_checks = 0, n_fail = 0;

/* One sgemm call checked against a double-precision reference; C has
   padding columns (ldc > N) and a guard row that must stay untouched. */
static void check_one(nn__pool *pool, int tA, int tB, int M, int N, int K, int pad, float alpha,
                      float beta, int nan_c) {
    int lda = (tA ? M : K) + pad, ldb = (tB ? K : N) + pad, ldc = N + pad;
    int arows = tA ? K : M, brows = tB ? N : K;
    size_t asz = (size_t)arows * lda + 1, bsz = (size_t)brows * ldb + 1, csz = (size_t)(M + 1) * ldc + 1;
    float *A = (float *)malloc(sizeof(float) * asz);
    float *B = (float *)malloc(sizeof(float) * bsz);
    float *C = (float *)malloc(sizeof(float) * csz);
    float *C0 = (float *)malloc(sizeof(float) * csz);
    size_t t;
    int i, j, k, bad = 0;
    for (t = 0; t < asz; t++) A[t] = frand();
    for (t = 0; t < bsz; t++) B[t] = frand();
    for (t = 0; t < csz; t++) C0[t] = nan_c ? NAN : frand();
    /* padding/guard sentinel */
    for (i = 0; i <= M; i++)
        for (j = 0; j < ldc; j++)
            if (i == M || j >= N) C0[(size_t)i * ldc + j] = 777.0f;
    memcpy(C, C0, sizeof(float) * csz);

    nn__sgemm(pool, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);

    for (i = 0; i <= M && !bad; i++) {
        for (j = 0; j < ldc; j++) {
            float got = C[(size_t)i * ldc + j];
            if (i == M || j >= N) {
                if (got != 777.0f) {
                    printf("FAIL guard clobbered tA=%d tB=%d M=%d N=%d K=%d pad=%d at (%d,%d)\n", tA, tB, M, N, K, pad, i, j);
                    bad = 1;
                    break;
                }
                continue;
            }
            {
                double s = 0.0, mag = 0.0, ref, c0 = C0[(size_t)i * ldc + j];
                for (k = 0; k < K; k++) {
                    double a = tA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                    double b = tB ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                    s += a * b;
                    mag += fabs(a * b);
                }
                ref = (double)alpha * s;
                mag = fabs((double)alpha) * mag;
                if (beta != 0.0f) {
                    ref += (double)beta * c0;
                    mag += fabs((double)beta * c0);
                }
                if (!(fabs((double)got - ref) <= 1e-4 * mag + 1e-6)) {
                    printf("FAIL tA=%d tB=%d M=%d N=%d K=%d pad=%d a=%g b=%g nan=%d at (%d,%d): got %.7g ref %.7g\n",
                           tA, tB, M, N, K, pad, alpha, beta, nan_c, i, j, got, ref);
                    bad = 1;
                    break;
                }
            }
        }
    }
    n_checks++;
    n_fail += bad;
    free(A);
    free(B);
    free(C);
    free(C0);
}

static void run_tests(void) {
    static const int dims[] = {1, 3, 7, 33, 129};
    static const struct { int M, N, K; } extra[] = {
        {1, 257, 3}, {257, 1, 3}, {3, 1, 257}, {0, 5, 5}, {5, 0, 5}, {5, 5, 0}, {17, 19, 0},
        {300, 40, 600}, {150, 70, 784}, {40, 4100, 5}, {13, 4200, 20}, {128, 10, 128},
        {128, 256, 784}, {256, 784, 128}, {200, 300, 513}, {97, 95, 93}, {6, 16, 16}, {12, 32, 8}};
    static const float ab[][2] = {{1.0f, 0.0f}, {0.5f, -1.5f}, {2.0f, 1.0f}, {-1.0f, 0.0f}};
    const char *kernels[] = {"generic", "avx2", "avx512f", "neon"};
    nn__pool *pools[3];
    int kk, pi, tA, tB;
    pools[0] = NULL;
    pools[1] = nn__pool_create(2);
    pools[2] = nn__pool_create(3);
    for (kk = 0; kk < 4; kk++) {
        const char *got = nn__sgemm_force_kernel(kernels[kk]);
        int before = n_fail;
        if (strcmp(got, kernels[kk]) != 0) {
            printf("kernel %-8s: not supported here, skipped\n", kernels[kk]);
            continue;
        }
        for (pi = 0; pi < 3; pi++) {
            /* pool 0 serial; pools 1,2 force threading even on tiny shapes */
            nn__gemm_mt_min_macs = pi == 0 ? 1e30 : 0.0;
            for (tA = 0; tA < 2; tA++)
                for (tB = 0; tB < 2; tB++) {
                    int a, b, c;
                    size_t e;
                    for (a = 0; a < 5; a++)
                        for (b = 0; b < 5; b++)
                            for (c = 0; c < 5; c++) {
                                int v = (a + b + c) % 4;
                                check_one(pools[pi], tA, tB, dims[a], dims[b], dims[c], (a * 7 + c) % 3 == 0 ? 0 : 5,
                                          ab[v][0], ab[v][1], v == 0 || v == 3);
                            }
                    for (e = 0; e < sizeof(extra) / sizeof(extra[0]); e++) {
                        check_one(pools[pi], tA, tB, extra[e].M, extra[e].N, extra[e].K, 3, 1.0f, 0.0f, 1);
                        check_one(pools[pi], tA, tB, extra[e].M, extra[e].N, extra[e].K, 0, 0.75f, 0.25f, 0);
                    }
                    /* alpha == 0 -> C = beta*C */
                    check_one(pools[pi], tA, tB, 9, 11, 13, 1, 0.0f, 0.5f, 0);
                    check_one(pools[pi], tA, tB, 9, 11, 13, 1, 0.0f, 0.0f, 1);
                }
        }
        printf("kernel %-8s: %s\n", kernels[kk], n_fail == before ? "ok" : "FAILED");
    }
    nn__gemm_mt_min_macs = (double)NN_GEMM_MT_MIN_MACS;
    nn__sgemm_force_kernel(NULL);
    {   /* packing buffers unavailable -> unpacked fallback path */
        int before = n_fail;
        test_fail_alloc = 1;
        for (tA = 0; tA < 2; tA++)
            for (tB = 0; tB < 2; tB++) {
                check_one(pools[1], tA, tB, 33, 7, 129, 2, 0.5f, -1.5f, 0);
                check_one(pools[1], tA, tB, 129, 3, 33, 0, 1.0f, 0.0f, 1);
                check_one(NULL, tA, tB, 1, 257, 3, 1, 1.0f, 0.0f, 1);
            }
        test_fail_alloc = 0;
        printf("alloc-failure fallback: %s\n", n_fail == before ? "ok" : "FAILED");
    }
    nn__pool_destroy(pools[1]);
    nn__pool_destroy(pools[2]);
    printf("sgemm tests: %d checks, %d failures (auto kernel: %s)\n", n_checks, n_fail, nn__sgemm_force_kernel(NULL));
}

/* ------------------------------------------------------------------------ */
/* pool tests + dispatch latency                                            */

typedef struct {
    int *hits;
    nn__pool *pool;
} pool_arg;

static void task_mark(void *arg, int task, int n_tasks) {
    pool_arg *pa = (pool_arg *)arg;
    (void)n_tasks;
    __atomic_add_fetch(&pa->hits[task], 1, __ATOMIC_RELAXED);
}

static void task_nested(void *arg, int task, int n_tasks) {
    pool_arg *pa = (pool_arg *)arg;
    (void)task;
    (void)n_tasks;
    /* nested use of the same pool must run inline, not deadlock */
    nn__pool_run(pa->pool, task_mark, arg, 4);
}

static void task_empty(void *arg, int task, int n_tasks) {
    (void)arg;
    (void)task;
    (void)n_tasks;
}

static int run_pool_tests(int quick) {
    int fails = 0, sz, it, i;
    for (sz = 0; sz <= 5; sz++) {
        nn__pool *p = nn__pool_create(sz);
        int hits[64];
        pool_arg pa;
        pa.hits = hits;
        pa.pool = p;
        for (it = 0; it < (quick ? 200 : 2000); it++) {
            int n = it % 17;
            memset(hits, 0, sizeof(hits));
            nn__pool_run(p, task_mark, &pa, n);
            for (i = 0; i < 17; i++)
                if (hits[i] != (i < n ? 1 : 0)) fails++;
            if (it % 50 == 0) { /* let workers fall asleep sometimes */
                struct timespec ts;
                ts.tv_sec = 0;
                ts.tv_nsec = it % 100 == 0 ? 2000000 : 10000;
                nanosleep(&ts, NULL);
            }
        }
        memset(hits, 0, sizeof(hits));
        nn__pool_run(p, task_nested, &pa, 3);
        for (i = 0; i < 4; i++)
            if (hits[i] != 3) fails++;
        nn__pool_destroy(p);
    }
    nn__pool_destroy(NULL);
    if (nn__pool_size(NULL) != 1) fails++;
    printf("pool tests: %s\n", fails ? "FAILED" : "ok");
    if (!quick) {
        nn__pool *p = nn__pool_create(2);
        double t0;
        int n = 200000;
        nn__pool_run(p, task_empty, NULL, 2);
        t0 = now_s();
        for (it = 0; it < n; it++) nn__pool_run(p, task_empty, NULL, 2);
        printf("pool(size %d) dispatch latency: %.2f us per nn__pool_run (hot)\n", nn__pool_size(p), (now_s() - t0) / n * 1e6);
        nn__pool_destroy(p);
    }
    return fails;
}

/* ------------------------------------------------------------------------ */
/* benchmark                                                                */

typedef struct {
    const char *name;
    int tA, tB, M, N, K;
} shape;

/* Median-free "best of" timing: repeat until >= min_s, report the best
   per-call time of 5 such rounds (the machine is noisy). */
static double time_gemm(int which, nn__pool *pool, const shape *s, const float *A, const float *B, float *C) {
    int lda = s->tA ? s->M : s->K, ldb = s->tB ? s->K : s->N, ldc = s->N;
    double best = 1e30, flops = 2.0 * s->M * s->N * s->K;
    int round, reps = 1, r;
    /* calibrate */
    for (;;) {
        double t0 = now_s(), dt;
        for (r = 0; r < reps; r++) {
            if (which == 0)
                nn__sgemm(pool, s->tA, s->tB, s->M, s->N, s->K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
#ifdef NN_BENCH_OPENBLAS
            else
                cblas_sgemm(CblasRowMajor, s->tA ? CblasTrans : CblasNoTrans, s->tB ? CblasTrans : CblasNoTrans, s->M, s->N,
                            s->K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
#endif
        }
        dt = now_s() - t0;
        if (dt > 0.05) break;
        reps *= 2;
    }
    for (round = 0; round < 5; round++) {
        double t0 = now_s(), dt;
        for (r = 0; r < reps; r++) {
            if (which == 0)
                nn__sgemm(pool, s->tA, s->tB, s->M, s->N, s->K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
#ifdef NN_BENCH_OPENBLAS
            else
                cblas_sgemm(CblasRowMajor, s->tA ? CblasTrans : CblasNoTrans, s->tB ? CblasTrans : CblasNoTrans, s->M, s->N,
                            s->K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
#endif
        }
        dt = (now_s() - t0) / reps;
        if (dt < best) best = dt;
    }
    return flops / best * 1e-9;
}

static void run_bench(void) {
    static const shape shapes[] = {
        {"sq 256", 0, 0, 256, 256, 256},        {"sq 512", 0, 0, 512, 512, 512},
        {"sq 1024", 0, 0, 1024, 1024, 1024},    {"sq 2048", 0, 0, 2048, 2048, 2048},
        {"sq 1024 TN", 1, 0, 1024, 1024, 1024}, {"sq 1024 NT", 0, 1, 1024, 1024, 1024},
        {"fwd1 NN", 0, 0, 128, 256, 784},       {"fwd1 NT", 0, 1, 128, 256, 784},
        {"fwd2 NN", 0, 0, 128, 128, 256},       {"fwd3 NN", 0, 0, 128, 10, 128},
        {"dW1 TN", 1, 0, 256, 784, 128},        {"dW2 TN", 1, 0, 128, 256, 128},
        {"dW3 TN", 1, 0, 10, 128, 128},         {"dX1 NN", 0, 0, 128, 784, 256},
        {"dX2 NN", 0, 0, 128, 256, 128},        {"dX3 NN", 0, 0, 128, 128, 10},
        {"dX1 NT", 0, 1, 128, 784, 256},
    };
    nn__pool *p1 = nn__pool_create(1), *p2 = nn__pool_create(2);
    size_t e;
    printf("\nkernel: %s; GFLOP/s, best of 5 rounds\n", nn__sgemm_force_kernel(NULL));
    printf("%-12s %5s %5s %5s | %8s %8s", "shape", "M", "N", "K", "nn 1T", "nn 2T");
#ifdef NN_BENCH_OPENBLAS
    printf(" | %8s %8s | %6s", "oblas 1T", "oblas 2T", "2T rat");
#endif
    printf("\n");
    for (e = 0; e < sizeof(shapes) / sizeof(shapes[0]); e++) {
        const shape *s = &shapes[e];
        size_t asz = (size_t)s->M * s->K, bsz = (size_t)s->K * s->N, csz = (size_t)s->M * s->N, t;
        float *A = (float *)malloc(asz * sizeof(float)), *B = (float *)malloc(bsz * sizeof(float));
        float *C = (float *)malloc(csz * sizeof(float));
        double g1, g2;
        for (t = 0; t < asz; t++) A[t] = frand();
        for (t = 0; t < bsz; t++) B[t] = frand();
        g1 = time_gemm(0, p1, s, A, B, C);
        g2 = time_gemm(0, p2, s, A, B, C);
        printf("%-12s %5d %5d %5d | %8.1f %8.1f", s->name, s->M, s->N, s->K, g1, g2);
#ifdef NN_BENCH_OPENBLAS
        {
            double o1, o2;
            openblas_set_num_threads(1);
            o1 = time_gemm(1, NULL, s, A, B, C);
            openblas_set_num_threads(2);
            o2 = time_gemm(1, NULL, s, A, B, C);
            printf(" | %8.1f %8.1f | %6.2f", o1, o2, g2 / o2);
        }
#endif
        printf("\n");
        fflush(stdout);
        free(A);
        free(B);
        free(C);
    }
    nn__pool_destroy(p1);
    nn__pool_destroy(p2);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "all";
    int fails = 0;
    if (!strcmp(mode, "test") || !strcmp(mode, "all")) {
        fails += run_pool_tests(1);
        run_tests();
        fails += n_fail;
    }
    if (!strcmp(mode, "pool")) fails += run_pool_tests(0);
    if (!strcmp(mode, "bench") || !strcmp(mode, "all")) {
        run_pool_tests(0);
        run_bench();
    }
    return fails ? 1 : 0;
}
