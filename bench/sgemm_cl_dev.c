/* sgemm_cl_dev.c - development harness for kernels/gemm.cl + src/nn_cl_gemm.c
 * (not part of the library).
 *
 * Build (from the repository root):
 *   gcc -O2 -std=c99 -Wall -Wextra -o sgemm_cl_dev bench/sgemm_cl_dev.c -lOpenCL -lclblast -lm
 *   (add -DNO_CLBLAST and drop -lclblast to build without CLBlast)
 * Run:
 *   ./sgemm_cl_dev [-k kernels/gemm.cl] [-c WPT_M,WPT_N,VW,WG_M,WG_N,USE_LOCAL,TS_K,STRIDED,PAD_A,PAD_B]
 *                  [-gpu] [-nocheck] [-nobench] [-reps R] [-cputime]
 *   -c overrides the per-device configuration (for tuning), -gpu plans as if
 *   the device were a GPU (exercises the local-memory path on a CPU).
 *   -cputime times with process CPU time instead of wall time: with
 *   POCL_MAX_PTHREAD_COUNT=1 that gives per-core GFLOP/s that are stable
 *   even when other processes compete for the cores.
 */
#define _POSIX_C_SOURCE 199309L
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef NO_CLBLAST
#include <clblast_c.h>
#endif

#include "../src/nn_cl_gemm.c"

#define CHECK(x) do { cl_int e_ = (x); if (e_ != CL_SUCCESS) { \
    fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #x, (int)e_); exit(1); } } while (0)

static cl_context ctx;
static cl_command_queue q;
static cl_program prog;
static nn__cl_gemm_cfg cfg;
static cl_kernel kern[4];

static int use_cpu_time;   /* -cputime: process CPU time (robust on a loaded machine) */

static double now(void)
{
    struct timespec ts;
    clock_gettime(use_cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *s;
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END); n = ftell(f); fseek(f, 0, SEEK_SET);
    s = (char *)malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(1); }
    s[n] = 0;
    fclose(f);
    return s;
}

static cl_mem buf_new(size_t nfloats, const float *init)
{
    cl_int err;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0),
                              nfloats * sizeof(float), (void *)init, &err);
    CHECK(err);
    return m;
}

static void launch(int ta, int tb, int M, int N, int K, cl_mem A, int lda, cl_mem B, int ldb,
                   cl_mem C, int ldc, float alpha, float beta)
{
    nn__cl_gemm_plan p;
    cl_kernel k;
    nn__cl_gemm_cfg_plan(&cfg, ta, tb, M, N, &p);
    k = kern[(ta ? 2 : 0) + (tb ? 1 : 0)];
    CHECK(clSetKernelArg(k, 0, sizeof(int), &M));
    CHECK(clSetKernelArg(k, 1, sizeof(int), &N));
    CHECK(clSetKernelArg(k, 2, sizeof(int), &K));
    CHECK(clSetKernelArg(k, 3, sizeof(cl_mem), &A));
    CHECK(clSetKernelArg(k, 4, sizeof(int), &lda));
    CHECK(clSetKernelArg(k, 5, sizeof(cl_mem), &B));
    CHECK(clSetKernelArg(k, 6, sizeof(int), &ldb));
    CHECK(clSetKernelArg(k, 7, sizeof(cl_mem), &C));
    CHECK(clSetKernelArg(k, 8, sizeof(int), &ldc));
    CHECK(clSetKernelArg(k, 9, sizeof(float), &alpha));
    CHECK(clSetKernelArg(k, 10, sizeof(float), &beta));
    CHECK(clEnqueueNDRangeKernel(q, k, p.dims, NULL, p.gws, p.lws[0] ? p.lws : NULL, 0, NULL, NULL));
}

static float frand(void) { return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; }

/* One correctness case; returns 1 on pass. */
static int check_case(int ta, int tb, int M, int N, int K, int pa, int pb, int pc,
                      float alpha, float beta)
{
    int lda = (ta ? M : K) + pa, ldb = (tb ? K : N) + pb, ldc = N + pc;
    int arows = ta ? K : M, brows = tb ? N : K;
    size_t na = (size_t)arows * lda, nb = (size_t)brows * ldb, nc = (size_t)M * ldc;
    float *a = (float *)malloc(na * 4), *b = (float *)malloc(nb * 4);
    float *c = (float *)malloc(nc * 4), *out = (float *)malloc(nc * 4);
    cl_mem A, B, C;
    size_t i;
    int r, col, kk, ok = 1;
    double maxerr = 0;
    for (i = 0; i < na; i++) a[i] = frand();
    for (i = 0; i < nb; i++) b[i] = frand();
    for (i = 0; i < nc; i++) c[i] = beta == 0.0f ? NAN : frand();
    A = buf_new(na, a); B = buf_new(nb, b); C = buf_new(nc, c);
    launch(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, alpha, beta);
    CHECK(clEnqueueReadBuffer(q, C, CL_TRUE, 0, nc * 4, out, 0, NULL, NULL));
    for (r = 0; r < M && ok; r++) {
        for (col = 0; col < ldc; col++) {
            double ref, mag = 0, err;
            if (col >= N) {   /* padding columns must be untouched */
                if (!(out[(size_t)r * ldc + col] == c[(size_t)r * ldc + col] ||
                      (isnan(out[(size_t)r * ldc + col]) && isnan(c[(size_t)r * ldc + col])))) {
                    printf("  pad clobbered at (%d,%d)\n", r, col); ok = 0; break;
                }
                continue;
            }
            ref = 0;
            for (kk = 0; kk < K; kk++) {
                double av = ta ? a[(size_t)kk * lda + r] : a[(size_t)r * lda + kk];
                double bv = tb ? b[(size_t)col * ldb + kk] : b[(size_t)kk * ldb + col];
                ref += av * bv; mag += fabs(av * bv);
            }
            ref = alpha * ref;
            mag = fabs(alpha) * mag;
            if (beta != 0.0f) { ref += beta * (double)c[(size_t)r * ldc + col]; mag += fabs(beta * c[(size_t)r * ldc + col]); }
            err = fabs(out[(size_t)r * ldc + col] - ref) / (mag > 1e-30 ? mag : 1.0);
            if (!(err <= 1e-4)) {
                printf("  mismatch at (%d,%d): got %g want %g\n", r, col, out[(size_t)r * ldc + col], ref);
                ok = 0; break;
            }
            if (err > maxerr) maxerr = err;
        }
    }
    if (!ok)
        printf("FAIL ta=%d tb=%d M=%d N=%d K=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g\n",
               ta, tb, M, N, K, lda, ldb, ldc, alpha, beta);
    clReleaseMemObject(A); clReleaseMemObject(B); clReleaseMemObject(C);
    free(a); free(b); free(c); free(out);
    return ok;
}

static int run_checks(void)
{
    static const int sizes[] = { 1, 3, 7, 16, 33, 129 };
    static const int mixed[][3] = { {1, 257, 3}, {257, 1, 3}, {3, 1, 257}, {13, 17, 19},
                                    {31, 37, 41}, {128, 10, 128}, {65, 97, 1}, {200, 48, 64} };
    int ta, tb, i, j, l, fails = 0, total = 0, ns = (int)(sizeof sizes / sizeof *sizes);
    for (ta = 0; ta < 2; ta++)
        for (tb = 0; tb < 2; tb++) {
            for (i = 0; i < ns; i++)
                for (j = 0; j < ns; j++)
                    for (l = 0; l < ns; l += 2) {
                        int v = i + j + l;
                        float alpha = (v % 3 == 0) ? 1.0f : -0.75f;
                        float beta = (v % 4 == 0) ? 0.0f : (v % 4 == 1 ? 1.0f : 0.5f);
                        total++;
                        fails += !check_case(ta, tb, sizes[i], sizes[j], sizes[l],
                                             v % 2 ? 3 : 0, v % 3 ? 5 : 0, v % 5 ? 2 : 0, alpha, beta);
                    }
            for (i = 0; i < (int)(sizeof mixed / sizeof *mixed); i++) {
                total += 3;
                fails += !check_case(ta, tb, mixed[i][0], mixed[i][1], mixed[i][2], 0, 0, 0, 1.0f, 0.0f);
                fails += !check_case(ta, tb, mixed[i][0], mixed[i][1], mixed[i][2], 7, 1, 3, 0.5f, -1.0f);
                fails += !check_case(ta, tb, mixed[i][0], mixed[i][1], mixed[i][2], 1, 9, 0, 2.0f, 0.0f);
            }
        }
    printf("correctness: %d/%d cases passed\n", total - fails, total);
    return fails == 0;
}

/* GFLOP/s of our kernel (which = 0) or CLBlast (which = 1). */
static double bench(int which, int ta, int tb, int M, int N, int K, int reps)
{
    int lda = ta ? M : K, ldb = tb ? K : N, ldc = N, r;
    size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc, i;
    float *h = (float *)malloc((na > nb ? (na > nc ? na : nc) : (nb > nc ? nb : nc)) * 4);
    cl_mem A, B, C;
    double t0, t, best = 1e30;
    for (i = 0; i < na || i < nb || i < nc; i++) h[i] = frand();
    A = buf_new(na, h); B = buf_new(nb, h); C = buf_new(nc, h);
    /* Size the batch so one timing sample is ~0.1 s. */
    for (r = 0; r < 3; r++) {
        int inner, it;
        if (r == 0) inner = 1; else inner = (int)(0.1 / (best > 0 ? best : 1e-3)) + 1;
        t0 = now();
        for (it = 0; it < inner; it++) {
            if (which == 0) {
                launch(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, 1.0f, 0.0f);
            } else {
#ifndef NO_CLBLAST
                CLBlastStatusCode s = CLBlastSgemm(CLBlastLayoutRowMajor,
                    ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                    tb ? CLBlastTransposeYes : CLBlastTransposeNo,
                    (size_t)M, (size_t)N, (size_t)K, 1.0f, A, 0, (size_t)lda, B, 0, (size_t)ldb,
                    0.0f, C, 0, (size_t)ldc, &q, NULL);
                if (s != CLBlastSuccess) { fprintf(stderr, "CLBlast error %d\n", (int)s); exit(1); }
#endif
            }
        }
        CHECK(clFinish(q));
        t = (now() - t0) / inner;
        if (r == 0) best = t; /* warm-up (includes PoCL's per-local-size compile) */
        else if (r == 1 || t < best) best = t;
    }
    for (r = 0; r < reps; r++) {
        int inner = (int)(0.02 / best) + 1, it;
        t0 = now();
        for (it = 0; it < inner; it++) {
            if (which == 0) launch(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, 1.0f, 0.0f);
#ifndef NO_CLBLAST
            else CLBlastSgemm(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                              tb ? CLBlastTransposeYes : CLBlastTransposeNo,
                              (size_t)M, (size_t)N, (size_t)K, 1.0f, A, 0, (size_t)lda, B, 0, (size_t)ldb,
                              0.0f, C, 0, (size_t)ldc, &q, NULL);
#endif
        }
        CHECK(clFinish(q));
        t = (now() - t0) / inner;
        if (t < best) best = t;
    }
    clReleaseMemObject(A); clReleaseMemObject(B); clReleaseMemObject(C);
    free(h);
    return 2.0 * M * N * K / best * 1e-9;
}

int main(int argc, char **argv)
{
    const char *kpath = "kernels/gemm.cl";
    int force_gpu = 0, do_check = 1, do_bench = 1, reps = 20, have_cfg = 0, i, is_cpu, ok = 1;
    cl_platform_id plat;
    cl_device_id dev;
    cl_device_type type;
    size_t max_wg;
    cl_ulong lmem;
    char name[256], opts[512], full[600];
    const char *src;
    cl_int err;
    static const char *const knames[4] = { "gemm_nn_single", "gemm_nt_single", "gemm_tn_single", "gemm_tt_single" };

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-k") && i + 1 < argc) kpath = argv[++i];
        else if (!strcmp(argv[i], "-gpu")) force_gpu = 1;
        else if (!strcmp(argv[i], "-nocheck")) do_check = 0;
        else if (!strcmp(argv[i], "-cputime")) use_cpu_time = 1;
        else if (!strcmp(argv[i], "-nobench")) do_bench = 0;
        else if (!strcmp(argv[i], "-reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            int v[10];
            if (sscanf(argv[++i], "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", &v[0], &v[1], &v[2], &v[3], &v[4],
                       &v[5], &v[6], &v[7], &v[8], &v[9]) != 10) { fprintf(stderr, "bad -c\n"); return 2; }
            nn__cl_gemm_cfg_set(&cfg, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
            have_cfg = 1;
        } else { fprintf(stderr, "unknown arg %s\n", argv[i]); return 2; }
    }

    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL));
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL));
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL));
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL));
    is_cpu = (type & CL_DEVICE_TYPE_CPU) && !force_gpu;
    if (!have_cfg) nn__cl_gemm_config(is_cpu, max_wg, lmem, &cfg);
    nn__cl_gemm_cfg_options(&cfg, opts, sizeof opts);
    if (!have_cfg) {   /* the public entry point must produce the same string */
        char o2[512];
        nn__cl_gemm_options(is_cpu, max_wg, lmem, o2, sizeof o2);
        nn__cl_gemm_plan p1, p2;
        if (strcmp(o2, opts)) { fprintf(stderr, "options mismatch\n"); return 1; }
        nn__cl_gemm_plan_make(is_cpu, max_wg, lmem, 1, 0, 129, 257, 33, &p1);
        nn__cl_gemm_cfg_plan(&cfg, 1, 0, 129, 257, &p2);
        if (strcmp(p1.kernel, p2.kernel) || p1.dims != p2.dims || p1.gws[0] != p2.gws[0] ||
            p1.gws[1] != p2.gws[1] || p1.lws[0] != p2.lws[0] || p1.lws[1] != p2.lws[1]) { fprintf(stderr, "plan mismatch\n"); return 1; }
    }
    sprintf(full, "-cl-std=CL1.2 %s", opts);
    printf("device: %s (%s), max_wg=%zu local=%lu\noptions: %s\n", name, is_cpu ? "cpu" : "gpu",
           max_wg, (unsigned long)lmem, full);

    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err); CHECK(err);
    q = clCreateCommandQueue(ctx, dev, 0, &err); CHECK(err);
    src = read_file(kpath);
    prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err); CHECK(err);
    err = clBuildProgram(prog, 1, &dev, full, NULL, NULL);
    {
        char log[16384];
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        if (err != CL_SUCCESS || strlen(log) > 1) printf("build log:\n%s\n", log);
        CHECK(err);
    }
    for (i = 0; i < 4; i++) { kern[i] = clCreateKernel(prog, knames[i], &err); CHECK(err); }

    if (do_check) ok = run_checks();

    if (do_bench) {
        static const int sq[] = { 256, 512, 1024, 2048 };
        static const int mlp[][5] = { {0, 0, 128, 256, 784}, {0, 0, 128, 128, 256}, {0, 0, 128, 10, 128},
                                      {1, 0, 256, 784, 128}, {0, 1, 128, 784, 256} };
        printf("%-28s %10s %10s %7s\n", "shape (ta,tb,M,N,K)", "ours", "CLBlast", "ratio");
        for (i = 0; i < 4; i++) {
            double g = bench(0, 0, 0, sq[i], sq[i], sq[i], reps), b = 0;
#ifndef NO_CLBLAST
            b = bench(1, 0, 0, sq[i], sq[i], sq[i], reps);
#endif
            printf("nn %4d^3                     %10.1f %10.1f %7.2f\n", sq[i], g, b, b > 0 ? g / b : 0);
            fflush(stdout);
        }
        for (i = 0; i < 5; i++) {
            const int *s = mlp[i];
            double g = bench(0, s[0], s[1], s[2], s[3], s[4], reps), b = 0;
#ifndef NO_CLBLAST
            b = bench(1, s[0], s[1], s[2], s[3], s[4], reps);
#endif
            printf("%s M=%-4d N=%-4d K=%-4d        %10.1f %10.1f %7.2f\n", s[0] ? "tn" : (s[1] ? "nt" : "nn"),
                   s[2], s[3], s[4], g, b, b > 0 ? g / b : 0);
            fflush(stdout);
        }
    }
    return ok ? 0 : 1;
}
