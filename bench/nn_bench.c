/* nn_bench.c - nn.h's figures, one machine-readable line each (bench/run.sh runs it).

   Build: cc -O2 -I. bench/nn_bench.c -o bench/nn_bench -lm -lpthread
   Usage: nn_bench devices        one line per backend: "SELECTOR NAME" (cpu, then OpenCL
                                  devices by index); NAME has spaces replaced by _
          nn_bench sgemm SEL      BENCH name=sgemm backend=NAME n=N gflops=X, N = 256..2048:
                                  C = A*B (square, float32) as an nn_matmul graph run with
                                  nn_graph_forward, several reps after a warm-up
          nn_bench mlp SEL        BENCH name=mlp_train backend=NAME batch=128 samples_per_sec=X
                                  cpu_ms_per_step=X (the process's CPU time, all threads)
                                  host_ms_per_step=X (time inside nn_graph_step: the whole
                                  step on cpu, the enqueues on a device) launches_per_step=X
                                  (kernel launches, or the CPU backend's op dispatches), then
                                  the same line with fuse=0 after batch= (NN_FUSE=0):
                                  the 784-256-128-10 ReLU MLP, Adam, batch 128, images and
                                  labels gathered on the device from 60000 random resident
                                  examples, steady state; a step writes only the 128 indices
          nn_bench conv SEL       BENCH name=conv2d backend=NAME shape=NxCxHxWkK pass=fwd|bwd
                                  gflops=X ms=X: a 3x3 pad-1 conv (no bias) as an nn_conv2d
                                  graph, for the CNN example's two convs at batch 64 and a
                                  ResNet-style 64->64 at 56x56, batch 8. fwd: nn_graph_forward;
                                  bwd: a step (forward, dw, and dx when C > 1) minus fwd, with
                                  the flops of dw and dx (2*N*K*OH*OW*C*9 each).
                                  NN_BENCH_CONV=NxCxHxWkK: that shape only;
                                  NN_BENCH_CONV_DX=0: no dx (bwd is dw alone)
          nn_bench cnn SEL        BENCH name=cnn_train backend=NAME batch=64 samples_per_sec=X
                                  cpu_ms_per_step=X host_ms_per_step=X launches_per_step=X,
                                  and again with fuse=0 (as mlp):
                                  examples/fashion_mnist_cnn.c's network and step (Adam,
                                  batch 64, gathered from 60000 resident random images); on
                                  cpu also BENCH name=cnn_train_bf16 ...: the same under
                                  nn_graph_desc.precision = NN_PRECISION_BF16
          nn_bench start SEL      "NAME MS": milliseconds to create a context and compile the
                                  MLP training graph in this process (run.sh runs it with an
                                  empty and then a filled NN_CACHE_DIR)
          nn_bench mem SEL        memory-bound ops in GB/s beside the machine's copy bandwidth:
                                  BENCH name=mem backend=host op=copy gbps=X: memcpy of 256 MiB
                                  (bytes read + written per second, the better of 1 and 2
                                  threads; the cpu selector only);
                                  BENCH name=mem backend=NAME op=mul_add gbps=X: y = a*b + c
                                  over 16M floats as nn_mul then nn_add, counting the bytes
                                  the two ops move (a, b read, a*b written, then read with c,
                                  y written: 6 x 64 MiB); BENCH name=mem backend=NAME
                                  op=sum_last gbps=X: nn_sum_dim over the last axis of
                                  [4096, 4096] (64 MiB read). nn_graph_forward, the median of
                                  7 timed runs after 2 warm-ups (copy: the median of 7)
          nn_bench layers SEL     BENCH name=layer backend=NAME layer=L ms_per_step=X: a
                                  training step (nn_graph_step: forward, backward, Adam lr
                                  1e-3) of each composed layer (src/layers/layers.c) at a
                                  moderate size, the loss the mean of its output (the loss
                                  itself for the losses): se_block x [32, 64, 16, 16]
                                  reduction 16; glu x [256, 1024] dim -1; swiglu_ffn x
                                  [16, 64, 256] hidden 683; highway x [256, 512]; rmse_loss
                                  pred, target [256, 512]; info_nce_loss z1, z2 [256, 128]
                                  temperature 0.1; rbf x [256, 32], 128 centers; moe x
                                  [256, 256], 8 experts, top 2, hidden 512, + 0.01 * its
                                  load-balancing loss. Inputs need no gradient, except for
                                  the layers without parameters (glu, rmse_loss's pred,
                                  info_nce_loss's z1 and z2: no optimizer, the step is
                                  forward and backward). 3 warm-up steps, then steps (each
                                  finished before the clock is read) until >= 0.5 s and
                                  >= 5 steps; bench/layers_torch.py is PyTorch's side
          nn_bench product SEL M N K TA TB
                                  BENCH name=product backend=NAME m= n= k= ta= tb= us=X
                                  gflops=X: one product C [M, N] = op(A) op(B) (TA, TB: 1
                                  transposed) as an nn_matmul graph, the best of 9 blocks of
                                  50 nn_graph_forward runs (POCL_MAX_PTHREAD_COUNT=1 or
                                  NN_THREADS=1: one core's)
          nn_bench gemm16 cpu     the CPU GEMM on 16-bit operands beside the fp32 one,
                                  C[M,N] = A[M,K] B[K,N], A and B random in [-1, 1), on the
                                  context's threads: dtype=f32 (nn__sgemm, what nn_matmul runs),
                                  bf16 (nn_cpu_gemm_bf16, the path chosen: vdpbf16ps on AVX-512
                                  BF16), bf16w (bf16 widened to fp32 for the fp32 kernels, the path
                                  of CPUs without AVX-512 BF16), f16 (nn_cpu_gemm_f16); shapes
                                  1024x1024x1024 and the training shapes B x 784 x 256 and
                                  B x 1024 x 1024, B = 16, 64, 256. ROUNDS (env, default 5)
                                  rounds, the variants' order rotated per round, each variant
                                  timed >= 0.25 s a round; prints per shape and variant
                                  BENCH name=gemm16 backend=cpu shape=MxKxN dtype=D gflops=MEDIAN
                                  gflops_min=X gflops_max=X rounds=R, and BENCH name=ratio
                                  what=gemm16_MxKxN_D_vs_f32 value=X (medians' ratio); with
                                  ROUNDS=1 (bench/run.sh's rounds, GEMM16_ROTATE=R rotating
                                  the order) the gflops= lines alone
   */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define NN_IMPLEMENTATION
#include "nn.h"
#include "models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>

#define BATCH 128
#define TRAIN_N 60000
#define IMG 784

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The backend's name with spaces replaced, for key=value lines. */
static void bench_name(const char *name, char *out, size_t n) {
    size_t i;
    snprintf(out, n, "%s", name);
    for (i = 0; out[i]; i++)
        if (out[i] == ' ' || out[i] == '\t' || out[i] == '=') out[i] = '_';
}

/* Uniform in [-1, 1) from a 32-bit LCG: deterministic, fast enough for 47M values. */
static void fill_random(float *p, size_t n, uint32_t seed) {
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

static nn_context *open_ctx(const char *sel, char *name, size_t n) {
    nn_context_desc cd;
    nn_context *ctx = NULL;
    nn_result r;
    memset(&cd, 0, sizeof cd);
    cd.device = sel;
    r = nn_context_create(&cd, &ctx);
    if (r != NN_OK) {
        fprintf(stderr, "nn_bench: cannot open device %s: %s\n", sel, nn_result_string(r));
        return NULL;
    }
    {
        nn_device_info dev;
        nn_context_device(ctx, &dev);
        bench_name(dev.name, name, n);
    }
    return ctx;
}

/* NN_FUSE=0 for the compiles between fuse_off(0) and fuse_restore (a run without elementwise
   fusion, src/ops/fuse.c, beside the default); fuse_off(1) leaves the environment alone. */
static char *fuse_saved;
static int fuse_was_set;
static void fuse_off(int fuse) {
    const char *e = getenv("NN_FUSE");
    fuse_was_set = !fuse;
    if (fuse) return;
    fuse_saved = e ? strdup(e) : NULL;
    setenv("NN_FUSE", "0", 1);
}
static void fuse_restore(void) {
    if (!fuse_was_set) return;
    if (fuse_saved) setenv("NN_FUSE", fuse_saved, 1);
    else unsetenv("NN_FUSE");
    free(fuse_saved);
    fuse_saved = NULL;
    fuse_was_set = 0;
}

/* A timed step's host side: nn_graph_step's own time (the whole step on the CPU backend; the
   enqueues on a device) and the context's launch counter (kernel launches on a device, op
   dispatches on the CPU backend) over the timed steps. */
typedef struct step_host {
    double host;
    uint64_t launches0;
} step_host;
static nn_result timed_step(nn_graph *g, step_host *h, int timed) {
    double t = now();
    nn_result r = nn_graph_step(g);
    if (timed) h->host += now() - t;
    return r;
}
static void step_host_start(nn_context *ctx, step_host *h) {
    nn_stats st;
    nn_context_stats(ctx, &st);
    h->host = 0.0;
    h->launches0 = st.kernel_launches;
}
/* " host_ms_per_step=X launches_per_step=X" of `steps` timed steps into buf */
static const char *step_host_text(nn_context *ctx, const step_host *h, int steps, char *buf, size_t n) {
    nn_stats st;
    nn_context_stats(ctx, &st);
    snprintf(buf, n, " host_ms_per_step=%.3f launches_per_step=%.1f", h->host * 1e3 / steps,
             (double)(st.kernel_launches - h->launches0) / steps);
    return buf;
}

static int fail(nn_context *ctx, const char *what, nn_result r) {
    fprintf(stderr, "nn_bench: %s: %s: %s\n", what, nn_result_string(r), nn_context_last_error(ctx));
    return 1;
}

/* ---- sgemm ----------------------------------------------------------------------------- */

static int bench_sgemm(const char *sel) {
    static const int sizes[] = {256, 512, 1024, 2048};
    char name[256];
    nn_context *ctx = open_ctx(sel, name, sizeof name);
    size_t s;
    int status = 0;
    if (!ctx) return 1;
    for (s = 0; s < sizeof sizes / sizeof sizes[0] && status == 0; s++) {
        int64_t n = sizes[s];
        nn_graph *g = NULL;
        nn_compile_desc cd;
        nn_tensor a, b, c;
        float *host = (float *)malloc((size_t)(n * n) * sizeof(float));
        nn_result r;
        int reps = 0, i;
        double t0, dt = 0.0;

        memset(&cd, 0, sizeof cd);
        if (!host) {
            fprintf(stderr, "nn_bench: out of memory\n");
            status = 1;
            break;
        }
        r = nn_graph_create(ctx, NULL, &g);
        if (r == NN_OK) {
            a = nn_input(g, "a", NN_F32, nn_shape2(n, n));
            b = nn_input(g, "b", NN_F32, nn_shape2(n, n));
            c = nn_matmul(g, a, b, 0, 0);
            nn_graph_output(g, c);
            r = nn_graph_compile(g, &cd);
        }
        if (r == NN_OK) {
            fill_random(host, (size_t)(n * n), 1u);
            r = nn_tensor_write(g, a, host, (size_t)(n * n) * sizeof(float));
        }
        if (r == NN_OK) {
            fill_random(host, (size_t)(n * n), 2u);
            r = nn_tensor_write(g, b, host, (size_t)(n * n) * sizeof(float));
        }
        /* Warm-up, then batches of reps until 0.5 s have passed (at least 3 reps). */
        for (i = 0; i < 2 && r == NN_OK; i++) r = nn_graph_forward(g);
        if (r == NN_OK) r = nn_graph_finish(g);
        t0 = now();
        while (r == NN_OK && (reps < 3 || dt < 0.5) && reps < 200) {
            r = nn_graph_forward(g);
            reps++;
            if (r == NN_OK && (reps < 3 || reps % 2 == 0)) {
                r = nn_graph_finish(g);
                dt = now() - t0;
            }
        }
        if (r == NN_OK) r = nn_graph_finish(g);
        dt = now() - t0;
        if (r != NN_OK) status = fail(ctx, "sgemm", r);
        else printf("BENCH name=sgemm backend=%s n=%d gflops=%.2f\n", name, (int)n, 2.0 * n * n * n * reps / dt / 1e9);
        fflush(stdout);
        nn_graph_destroy(g);
        free(host);
    }
    nn_context_destroy(ctx);
    return status;
}

/* ---- gemm16: the GEMM on bf16 / fp16 operands beside the fp32 one ------------------------- */

static int gemm16_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* one variant of one shape: GFLOP/s over >= 0.25 s and >= 3 products, after one warm-up */
static double gemm16_time(nn_context *ctx, int v, int m, int k, int n, const float *a, const float *b,
                          const uint16_t *a16[2], const uint16_t *b16[2], float *c) {
    nn__threadpool *pool = ctx->threads;
    int reps;
    double t0 = 0.0, dt = 0.0;
    if (v == 2) nn__gemm16_force(0, "avx512f");
    for (reps = -1; reps < 3 || dt < 0.25; reps++) {
        if (reps == 0) t0 = now();
        switch (v) {
        case 0: nn__sgemm(pool, 0, 0, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n); break;
        case 1:
        case 2: nn_cpu_gemm_bf16(ctx, 0, 0, m, n, k, 1.0f, a16[0], k, b16[0], n, 0.0f, c, n); break;
        default: nn_cpu_gemm_f16(ctx, 0, 0, m, n, k, 1.0f, a16[1], k, b16[1], n, 0.0f, c, n); break;
        }
        if (reps >= 0) dt = now() - t0;
    }
    if (v == 2) nn__gemm16_force(0, NULL);
    return 2.0 * m * n * (double)k * reps / dt / 1e9;
}

static int bench_gemm16(const char *sel) {
    static const int shapes[][3] = {{1024, 1024, 1024}, {16, 784, 256}, {64, 784, 256}, {256, 784, 256},
                                    {16, 1024, 1024},   {64, 1024, 1024}, {256, 1024, 1024}};
    static const char *const names[] = {"f32", "bf16", "bf16w", "f16"};
    enum { NS = sizeof shapes / sizeof shapes[0], NV = 4, MAXR = 32 };
    char name[256];
    const char *re = getenv("ROUNDS"), *ro = getenv("GEMM16_ROTATE");
    int rot = ro ? atoi(ro) & 0xFFFF : 0;
    int rounds = re && atoi(re) > 0 ? atoi(re) : 5, s, v, r, status = 0;
    static double g[NS][NV][MAXR];
    nn_context *ctx;
    if (strcmp(sel, "cpu") != 0) {
        fprintf(stderr, "nn_bench gemm16: the CPU only (got %s)\n", sel);
        return 2;
    }
    if (rounds > MAXR) rounds = MAXR;
    ctx = open_ctx(sel, name, sizeof name);
    if (!ctx) return 1;
    printf("# gemm16: bf16 path %s, f16 path %s, %d threads\n", nn__gemm16_force(0, NULL), nn__gemm16_force(1, NULL),
           nn__threadpool_size(ctx->threads));
    for (r = 0; r < rounds && status == 0; r++)
        for (s = 0; s < NS && status == 0; s++) {
            int m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
            float *a = (float *)malloc(sizeof(float) * (size_t)m * k), *b = (float *)malloc(sizeof(float) * (size_t)k * n);
            float *c = (float *)malloc(sizeof(float) * (size_t)m * n);
            uint16_t *a16[2], *b16[2];
            const uint16_t *ca[2], *cb[2];
            int i;
            for (i = 0; i < 2; i++) {
                a16[i] = (uint16_t *)malloc(2 * (size_t)m * k);
                b16[i] = (uint16_t *)malloc(2 * (size_t)k * n);
            }
            if (!a || !b || !c || !a16[0] || !a16[1] || !b16[0] || !b16[1]) {
                fprintf(stderr, "nn_bench: out of memory\n");
                status = 1;
            } else {
                fill_random(a, (size_t)m * k, 1u);
                fill_random(b, (size_t)k * n, 2u);
                nn_f32_to_bf16(a, a16[0], (int64_t)m * k);
                nn_f32_to_bf16(b, b16[0], (int64_t)k * n);
                nn_f32_to_f16(a, a16[1], (int64_t)m * k);
                nn_f32_to_f16(b, b16[1], (int64_t)k * n);
                for (i = 0; i < 2; i++) {
                    ca[i] = a16[i];
                    cb[i] = b16[i];
                }
                for (i = 0; i < NV; i++) { /* the order rotated per round */
                    v = (i + r + rot) % NV;
                    g[s][v][r] = gemm16_time(ctx, v, m, k, n, a, b, ca, cb, c);
                }
            }
            free(a);
            free(b);
            free(c);
            for (i = 0; i < 2; i++) {
                free(a16[i]);
                free(b16[i]);
            }
        }
    for (s = 0; s < NS && status == 0; s++) {
        double med[NV];
        for (v = 0; v < NV; v++) {
            double x[MAXR];
            memcpy(x, g[s][v], sizeof(double) * (size_t)rounds);
            qsort(x, (size_t)rounds, sizeof x[0], gemm16_cmp);
            med[v] = rounds % 2 ? x[rounds / 2] : 0.5 * (x[rounds / 2 - 1] + x[rounds / 2]);
            if (rounds == 1) /* bench/run.sh's rounds: report.awk takes the medians */
                printf("BENCH name=gemm16 backend=%s shape=%dx%dx%d dtype=%s gflops=%.2f\n", name, shapes[s][0],
                       shapes[s][1], shapes[s][2], names[v], med[v]);
            else
                printf("BENCH name=gemm16 backend=%s shape=%dx%dx%d dtype=%s gflops=%.2f gflops_min=%.2f "
                       "gflops_max=%.2f rounds=%d\n",
                       name, shapes[s][0], shapes[s][1], shapes[s][2], names[v], med[v], x[0], x[rounds - 1], rounds);
        }
        for (v = 1; v < NV && rounds > 1; v++)
            printf("BENCH name=ratio what=gemm16_%dx%dx%d_%s_vs_f32 value=%.3f\n", shapes[s][0], shapes[s][1],
                   shapes[s][2], names[v], med[v] / med[0]);
    }
    nn_context_destroy(ctx);
    return status;
}

/* ---- the MLP training step ----------------------------------------------------------------- */

typedef struct mlp {
    nn_graph *g;
    nn_tensor x_all, y_all, idx;
} mlp;

/* The training graph of examples/fashion_mnist_mlp.c, compiled: the images [60000, 784]
   float32 and the labels [60000] int32 stay on the device, and the batch's rows of both are
   gathered with the same idx. (The example's learning-rate schedule is left out: setting
   the rate is a kernel argument and costs a step nothing.) */
static nn_result mlp_build(nn_context *ctx, mlp *m) {
    nn_compile_desc cd;
    nn_tensor yb;
    nn_result r;
    memset(&cd, 0, sizeof cd);
    r = nn_graph_create(ctx, NULL, &m->g);
    if (r != NN_OK) return r;
    m->x_all = nn_input(m->g, "x_all", NN_F32, nn_shape2(TRAIN_N, IMG));
    m->y_all = nn_input(m->g, "y_all", NN_I32, nn_shape1(TRAIN_N));
    m->idx = nn_input(m->g, "idx", NN_I32, nn_shape1(BATCH));
    yb = nn_gather_rows(m->g, m->y_all, m->idx);
    cd.loss = bench_mlp_loss(m->g, nn_gather_rows(m->g, m->x_all, m->idx), yb);
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-3f;
    r = nn_graph_compile(m->g, &cd);
    if (r == NN_OK) r = nn_graph_finish(m->g);
    return r;
}

/* fuse 1: as compiled by default; 0: with NN_FUSE=0 (the line says fuse=0) */
static int bench_mlp_run(const char *sel, int fuse) {
    char name[256], hs[96];
    step_host sh = {0.0, 0};
    nn_context *ctx = open_ctx(sel, name, sizeof name);
    mlp m;
    float *x = NULL;
    int32_t *y = NULL, idx[BATCH];
    uint32_t seed = 7;
    nn_result r;
    int steps = 0, warm = 20, i, status = 0;
    double t0 = 0.0, dt = 0.0;
    clock_t c0 = 0;

    if (!ctx) return 1;
    memset(&m, 0, sizeof m);
    x = (float *)malloc((size_t)TRAIN_N * IMG * sizeof(float));
    y = (int32_t *)malloc((size_t)TRAIN_N * sizeof(int32_t));
    if (!x || !y) {
        fprintf(stderr, "nn_bench: out of memory\n");
        status = 1;
        goto done;
    }
    fill_random(x, (size_t)TRAIN_N * IMG, 3u);
    for (i = 0; i < TRAIN_N; i++) y[i] = (int32_t)((uint32_t)i * 2654435761u % 10u);
    fuse_off(fuse);
    r = mlp_build(ctx, &m);
    fuse_restore();
    if (r == NN_OK) r = nn_tensor_write(m.g, m.x_all, x, (size_t)TRAIN_N * IMG * sizeof(float));
    if (r == NN_OK) r = nn_tensor_write(m.g, m.y_all, y, (size_t)TRAIN_N * sizeof(int32_t));
    /* 20 warm-up steps, then steps until 2 s have passed (at least 50). */
    while (r == NN_OK && (steps < 50 || dt < 2.0) && steps < 100000) {
        for (i = 0; i < BATCH; i++) {
            seed = seed * 1664525u + 1013904223u;
            idx[i] = (int32_t)((seed >> 8) % TRAIN_N);
        }
        /* The step's only transfer: 128 indices (512 bytes). */
        r = nn_tensor_write(m.g, m.idx, idx, sizeof idx);
        if (r == NN_OK) r = timed_step(m.g, &sh, warm == 0);
        if (r != NN_OK) break;
        if (warm > 0) {
            if (--warm == 0) {
                r = nn_graph_finish(m.g);
                step_host_start(ctx, &sh);
                t0 = now();
                c0 = clock();
            }
            continue;
        }
        steps++;
        if (steps % 10 == 0) dt = now() - t0;
    }
    if (r == NN_OK) r = nn_graph_finish(m.g);
    dt = now() - t0;
    c0 = clock() - c0;
    if (r != NN_OK) status = fail(ctx, "mlp", r);
    else printf("BENCH name=mlp_train backend=%s batch=%d%s samples_per_sec=%.0f cpu_ms_per_step=%.3f%s\n", name, BATCH,
                fuse ? "" : " fuse=0", steps * (double)BATCH / dt, (double)c0 / CLOCKS_PER_SEC * 1e3 / steps,
                step_host_text(ctx, &sh, steps, hs, sizeof hs));
done:
    nn_graph_destroy(m.g);
    nn_context_destroy(ctx);
    free(x);
    free(y);
    return status;
}

/* fused (the default), then with NN_FUSE=0 */
static int bench_mlp(const char *sel) {
    int status = bench_mlp_run(sel, 1);
    return status ? status : bench_mlp_run(sel, 0);
}

/* ---- conv2d --------------------------------------------------------------------------------- */

/* Runs fn (forward or step) after 2 warm-ups until >= 0.4 s (>= 3 reps); ms per run. */
static nn_result time_runs(nn_graph *g, nn_result (*fn)(nn_graph *), double *ms) {
    nn_result r = NN_OK;
    int reps = 0, i;
    double t0, dt = 0.0;
    for (i = 0; i < 2 && r == NN_OK; i++) r = fn(g);
    if (r == NN_OK) r = nn_graph_finish(g);
    t0 = now();
    while (r == NN_OK && (reps < 3 || dt < 0.4) && reps < 1000) {
        r = fn(g);
        reps++;
        if (r == NN_OK) r = nn_graph_finish(g);
        dt = now() - t0;
    }
    *ms = dt * 1e3 / (reps > 0 ? reps : 1);
    return r;
}

static int bench_conv(const char *sel) {
    /* N, C, H, W, K: 3x3 kernels, padding 1 */
    static const int shapes[][5] = {{64, 1, 28, 28, 32}, {64, 32, 14, 14, 64}, {8, 64, 56, 56, 64}};
    char name[256];
    nn_context *ctx = open_ctx(sel, name, sizeof name);
    size_t s;
    int status = 0;
    if (!ctx) return 1;
    const char *only = getenv("NN_BENCH_CONV"), *dxe = getenv("NN_BENCH_CONV_DX");
    int want_dx = !(dxe && strcmp(dxe, "0") == 0);
    for (s = 0; s < sizeof shapes / sizeof shapes[0] && status == 0; s++) {
        const int *sh = shapes[s];
        int64_t nx = (int64_t)sh[0] * sh[1] * sh[2] * sh[3];
        double flops = 2.0 * sh[0] * sh[4] * sh[2] * sh[3] * sh[1] * 9.0, fwd_ms = 0.0, step_ms = 0.0, ms2 = 0.0, bwd_ms;
        nn_graph *g = NULL;
        nn_compile_desc cd;
        nn_conv2d_desc dd;
        nn_init init;
        nn_tensor x, w, y, none;
        float *host = (float *)malloc((size_t)nx * sizeof(float));
        nn_result r;
        char shape[64];

        memset(&cd, 0, sizeof cd);
        memset(&dd, 0, sizeof dd);
        memset(&init, 0, sizeof init);
        none = NN_NONE;
        dd.pad_h = dd.pad_w = 1;
        init.kind = NN_INIT_KAIMING_UNIFORM;
        if (!host) {
            fprintf(stderr, "nn_bench: out of memory\n");
            status = 1;
            break;
        }
        snprintf(shape, sizeof shape, "%dx%dx%dx%dk%d", sh[0], sh[1], sh[2], sh[3], sh[4]);
        if (only && *only && strcmp(only, shape) != 0) {
            free(host);
            continue;
        }
        r = nn_graph_create(ctx, NULL, &g);
        if (r == NN_OK) {
            x = nn_input(g, "x", NN_F32, nn_shape4(sh[0], sh[1], sh[2], sh[3]));
            if (sh[1] > 1 && want_dx) nn_graph_requires_grad(g, x); /* the first layer needs no dx */
            w = nn_param(g, "w", nn_shape4(sh[4], sh[1], 3, 3), init);
            y = nn_conv2d(g, x, w, none, &dd);
            cd.loss = nn_sum(g, y);
            cd.optimizer.kind = NN_OPT_NONE;
            r = nn_graph_compile(g, &cd);
        }
        if (r == NN_OK) {
            fill_random(host, (size_t)nx, 5u);
            r = nn_tensor_write(g, x, host, (size_t)nx * sizeof(float));
        }
        if (r == NN_OK) r = time_runs(g, nn_graph_forward, &fwd_ms);
        if (r == NN_OK) r = time_runs(g, nn_graph_step, &step_ms);
        if (r == NN_OK) r = time_runs(g, nn_graph_forward, &ms2); /* again: the lower of the two */
        if (r == NN_OK && ms2 < fwd_ms) fwd_ms = ms2;
        /* the step's backward: dw, and dx when C > 1 (the step less its forward, the loss's
           sum included in both) */
        bwd_ms = step_ms - fwd_ms;
        /* fwd: the convolution alone, as PyTorch's figure (bench/cnn_torch.py times F.conv2d
           alone): a forward-only graph whose output is y, not the training graph's forward,
           which also sums y for its loss (a pass over y: a third of the first layer's time) */
        nn_graph_destroy(g);
        g = NULL;
        if (r == NN_OK) r = nn_graph_create(ctx, NULL, &g);
        if (r == NN_OK) {
            nn_compile_desc fd;
            memset(&fd, 0, sizeof fd);
            x = nn_input(g, "x", NN_F32, nn_shape4(sh[0], sh[1], sh[2], sh[3]));
            w = nn_param(g, "w", nn_shape4(sh[4], sh[1], 3, 3), init);
            y = nn_conv2d(g, x, w, none, &dd);
            r = nn_graph_output(g, y);
            if (r == NN_OK) r = nn_graph_compile(g, &fd);
        }
        if (r == NN_OK) r = nn_tensor_write(g, x, host, (size_t)nx * sizeof(float));
        if (r == NN_OK) r = time_runs(g, nn_graph_forward, &fwd_ms);
        if (r == NN_OK) r = time_runs(g, nn_graph_forward, &ms2);
        if (r == NN_OK && ms2 < fwd_ms) fwd_ms = ms2;
        if (r != NN_OK) status = fail(ctx, "conv", r);
        else {
            if (bwd_ms < 0.01 * step_ms) bwd_ms = 0.01 * step_ms; /* noise on a loaded machine */
            printf("BENCH name=conv2d backend=%s shape=%s pass=fwd gflops=%.2f ms=%.3f\n", name, shape,
                   flops / fwd_ms / 1e6, fwd_ms);
            printf("BENCH name=conv2d backend=%s shape=%s pass=bwd gflops=%.2f ms=%.3f\n", name, shape,
                   flops * (sh[1] > 1 && want_dx ? 2.0 : 1.0) / bwd_ms / 1e6, bwd_ms);
        }
        fflush(stdout);
        nn_graph_destroy(g);
        free(host);
    }
    nn_context_destroy(ctx);
    return status;
}

/* ---- the CNN training step ----------------------------------------------------------------- */

#define CNN_BATCH 64

/* prec: the graph's precision policy (nn_graph_desc.precision); tag: "" for float32, else
   the name's suffix (cnn_train_bf16) */
static int bench_cnn_run(const char *sel, nn_precision prec, const char *tag, int fuse) {
    char name[256], hs[96];
    step_host sh = {0.0, 0};
    nn_graph_desc gd;
    nn_context *ctx = open_ctx(sel, name, sizeof name);
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x_all, y_all, idx, yb;
    float *x = NULL;
    int32_t *y = NULL, ib[CNN_BATCH];
    uint32_t seed = 7;
    nn_result r;
    int steps = 0, warm = 5, i, status = 0;
    double t0 = 0.0, dt = 0.0;
    clock_t c0 = 0;

    if (!ctx) return 1;
    memset(&cd, 0, sizeof cd);
    x = (float *)malloc((size_t)TRAIN_N * IMG * sizeof(float));
    y = (int32_t *)malloc((size_t)TRAIN_N * sizeof(int32_t));
    if (!x || !y) {
        fprintf(stderr, "nn_bench: out of memory\n");
        status = 1;
        goto done;
    }
    fill_random(x, (size_t)TRAIN_N * IMG, 3u);
    for (i = 0; i < TRAIN_N; i++) y[i] = (int32_t)((uint32_t)i * 2654435761u % 10u);
    memset(&gd, 0, sizeof gd);
    gd.precision = prec;
    r = nn_graph_create(ctx, &gd, &g);
    if (r == NN_OK) {
        x_all = nn_input(g, "x_all", NN_F32, nn_shape4(TRAIN_N, 1, 28, 28));
        y_all = nn_input(g, "y_all", NN_I32, nn_shape1(TRAIN_N));
        idx = nn_input(g, "idx", NN_I32, nn_shape1(CNN_BATCH));
        yb = nn_gather_rows(g, y_all, idx);
        cd.loss = bench_cnn_loss(g, nn_gather_rows(g, x_all, idx), yb);
        cd.optimizer.kind = NN_OPT_ADAM;
        cd.optimizer.lr = 1e-3f;
        fuse_off(fuse);
        r = nn_graph_compile(g, &cd);
        fuse_restore();
    }
    if (r == NN_OK) r = nn_tensor_write(g, x_all, x, (size_t)TRAIN_N * IMG * sizeof(float));
    if (r == NN_OK) r = nn_tensor_write(g, y_all, y, (size_t)TRAIN_N * sizeof(int32_t));
    if (r == NN_OK) r = nn_graph_finish(g);
    /* 5 warm-up steps, then steps until 2 s have passed (at least 20). */
    while (r == NN_OK && (steps < 20 || dt < 2.0) && steps < 100000) {
        for (i = 0; i < CNN_BATCH; i++) {
            seed = seed * 1664525u + 1013904223u;
            ib[i] = (int32_t)((seed >> 8) % TRAIN_N);
        }
        r = nn_tensor_write(g, idx, ib, sizeof ib);
        if (r == NN_OK) r = timed_step(g, &sh, warm == 0);
        if (r != NN_OK) break;
        if (warm > 0) {
            if (--warm == 0) {
                r = nn_graph_finish(g);
                step_host_start(ctx, &sh);
                t0 = now();
                c0 = clock();
            }
            continue;
        }
        steps++;
        if (steps % 5 == 0) {
            r = nn_graph_finish(g);
            dt = now() - t0;
        }
    }
    if (r == NN_OK) r = nn_graph_finish(g);
    dt = now() - t0;
    c0 = clock() - c0;
    if (r != NN_OK) status = fail(ctx, "cnn", r);
    else printf("BENCH name=cnn_train%s backend=%s batch=%d%s samples_per_sec=%.0f cpu_ms_per_step=%.3f%s\n", tag, name,
                CNN_BATCH, fuse ? "" : " fuse=0", steps * (double)CNN_BATCH / dt, (double)c0 / CLOCKS_PER_SEC * 1e3 / steps,
                step_host_text(ctx, &sh, steps, hs, sizeof hs));
done:
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    free(x);
    free(y);
    return status;
}

/* float32 fused (the default) and with NN_FUSE=0, and on the CPU backend the bf16 policy
   beside it (issue 20's CNN line) */
static int bench_cnn(const char *sel) {
    int status = bench_cnn_run(sel, NN_PRECISION_FP32, "", 1);
    if (status == 0) status = bench_cnn_run(sel, NN_PRECISION_FP32, "", 0);
    if (status == 0 && strcmp(sel, "cpu") == 0) status = bench_cnn_run(sel, NN_PRECISION_BF16, "_bf16", 1);
    return status;
}

/* ---- start-up time ------------------------------------------------------------------------ */

static int bench_start(const char *sel) {
    char name[256];
    double t0 = now(), ms;
    nn_context *ctx = open_ctx(sel, name, sizeof name);
    mlp m;
    nn_result r;
    if (!ctx) return 1;
    memset(&m, 0, sizeof m);
    r = mlp_build(ctx, &m);
    ms = (now() - t0) * 1e3;
    if (r != NN_OK) {
        fail(ctx, "start", r);
        nn_graph_destroy(m.g);
        nn_context_destroy(ctx);
        return 1;
    }
    printf("%s %.1f\n", name, ms);
    nn_graph_destroy(m.g);
    nn_context_destroy(ctx);
    return 0;
}

/* ---- memory-bound ops ------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MEM_REPS 7

/* The median seconds of MEM_REPS runs of fn on g, after 2 warm-ups. */
static nn_result median_run(nn_graph *g, nn_result (*fn)(nn_graph *), double *sec) {
    double t[MEM_REPS], t0;
    nn_result r = NN_OK;
    int i;
    for (i = 0; i < 2 && r == NN_OK; i++) r = fn(g);
    if (r == NN_OK) r = nn_graph_finish(g);
    for (i = 0; i < MEM_REPS && r == NN_OK; i++) {
        t0 = now();
        r = fn(g);
        if (r == NN_OK) r = nn_graph_finish(g);
        t[i] = now() - t0;
    }
    qsort(t, MEM_REPS, sizeof t[0], cmp_double);
    *sec = t[MEM_REPS / 2];
    return r;
}

/* memcpy of 256 MiB (pages touched first) split among `threads` threads: bytes read +
   written per second, median of 7; the copy line reports the better of 1 and 2 threads (one
   core rarely saturates the memory system, and nn.h's loops use both) */
typedef struct copy_part {
    char *dst;
    const char *src;
    size_t n;
} copy_part;

static void *copy_run(void *p) {
    copy_part *c = (copy_part *)p;
    memcpy(c->dst, c->src, c->n);
    return NULL;
}

static double copy_gbps_threads(char *a, char *b, size_t n, int threads) {
    double t[MEM_REPS], t0;
    int i, k;
    for (i = 0; i < MEM_REPS; i++) {
        pthread_t th[2];
        copy_part part[2];
        int started[2] = {0, 0};
        t0 = now();
        for (k = 0; k < threads; k++) {
            size_t lo = n / (size_t)threads * (size_t)k, hi = k + 1 == threads ? n : n / (size_t)threads * (size_t)(k + 1);
            part[k].dst = (i % 2 ? a : b) + lo;
            part[k].src = (i % 2 ? b : a) + lo;
            part[k].n = hi - lo;
            if (k > 0) started[k] = pthread_create(&th[k], NULL, copy_run, &part[k]) == 0;
        }
        copy_run(&part[0]);
        for (k = 1; k < threads; k++) {
            if (started[k]) pthread_join(th[k], NULL);
            else copy_run(&part[k]);
        }
        t[i] = now() - t0;
    }
    qsort(t, MEM_REPS, sizeof t[0], cmp_double);
    return 2.0 * (double)n / t[MEM_REPS / 2] / 1e9;
}

static double copy_gbps(void) {
    size_t n = (size_t)256 << 20;
    char *a = (char *)malloc(n), *b = (char *)malloc(n);
    double g1, g2;
    if (!a || !b) {
        free(a);
        free(b);
        return 0.0;
    }
    memset(a, 1, n);
    memset(b, 2, n);
    g1 = copy_gbps_threads(a, b, n, 1);
    g2 = copy_gbps_threads(a, b, n, 2);
    free(a);
    free(b);
    return g1 > g2 ? g1 : g2;
}

static int bench_mem(const char *sel) {
    const int64_t n = (int64_t)16 << 20, side = 4096;
    char name[256];
    nn_context *ctx;
    nn_graph *g = NULL;
    nn_tensor a, b, c, y, x, s;
    nn_compile_desc cd;
    nn_result r;
    float *host;
    double sec = 0.0;
    int last = -1, k, status = 0;
    if (strcmp(sel, "cpu") == 0) {
        printf("BENCH name=mem backend=host op=copy gbps=%.2f\n", copy_gbps());
        fflush(stdout);
    }
    ctx = open_ctx(sel, name, sizeof name);
    if (!ctx) return 1;
    host = (float *)malloc((size_t)n * sizeof(float));
    memset(&cd, 0, sizeof cd);
    r = host ? nn_graph_create(ctx, NULL, &g) : NN_ERR_OUT_OF_MEMORY;
    if (r == NN_OK) {
        a = nn_input(g, "a", NN_F32, nn_shape1(n));
        b = nn_input(g, "b", NN_F32, nn_shape1(n));
        c = nn_input(g, "c", NN_F32, nn_shape1(n));
        y = nn_add(g, nn_mul(g, a, b), c);
        nn_graph_output(g, y);
        r = nn_graph_compile(g, &cd);
    }
    for (k = 0; k < 3 && r == NN_OK; k++) {
        fill_random(host, (size_t)n, 11u + (uint32_t)k);
        r = nn_tensor_write(g, k == 0 ? a : k == 1 ? b : c, host, (size_t)n * sizeof(float));
    }
    if (r == NN_OK) r = median_run(g, nn_graph_forward, &sec);
    if (r != NN_OK) status = fail(ctx, "mem mul_add", r);
    else printf("BENCH name=mem backend=%s op=mul_add gbps=%.2f\n", name, 6.0 * (double)n * 4.0 / sec / 1e9);
    fflush(stdout);
    nn_graph_destroy(g);
    g = NULL;
    r = host && status == 0 ? nn_graph_create(ctx, NULL, &g) : NN_ERR_OUT_OF_MEMORY;
    if (r == NN_OK) {
        x = nn_input(g, "x", NN_F32, nn_shape2(side, side));
        s = nn_sum_dim(g, x, &last, 1, 0);
        nn_graph_output(g, s);
        r = nn_graph_compile(g, &cd);
    }
    if (r == NN_OK) r = nn_tensor_write(g, x, host, (size_t)(side * side) * sizeof(float));
    if (r == NN_OK) r = median_run(g, nn_graph_forward, &sec);
    if (status == 0 && r != NN_OK) status = fail(ctx, "mem sum_last", r);
    else if (status == 0) printf("BENCH name=mem backend=%s op=sum_last gbps=%.2f\n", name, (double)(side * side) * 4.0 / sec / 1e9);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    free(host);
    return status;
}

/* ---- composed layers ---------------------------------------------------------------------- */

static const char *const layer_names[] = {"se_block", "glu",  "swiglu_ffn", "highway",
                                          "rmse_loss", "info_nce_loss", "rbf", "moe"};
#define LAYER_COUNT ((int)(sizeof layer_names / sizeof layer_names[0]))

/* Layer k's loss; its inputs in in[0..*nin), *params 0 for a layer without parameters
   (then the inputs that PyTorch's side differentiates require gradients). */
static nn_tensor layer_loss(nn_graph *g, int k, nn_tensor *in, int *nin, int *params) {
    nn_tensor y, aux;
    *nin = 1;
    *params = 1;
    switch (k) {
    case 0:
        in[0] = nn_input(g, "x", NN_F32, nn_shape4(32, 64, 16, 16));
        return nn_mean(g, nn_se_layer(g, in[0], 16, "se"));
    case 1:
        *params = 0;
        in[0] = nn_input(g, "x", NN_F32, nn_shape2(256, 1024));
        nn_graph_requires_grad(g, in[0]);
        return nn_mean(g, nn_glu(g, in[0], -1));
    case 2:
        in[0] = nn_input(g, "x", NN_F32, nn_shape3(16, 64, 256));
        return nn_mean(g, nn_swiglu_layer(g, in[0], 683, "ffn"));
    case 3:
        in[0] = nn_input(g, "x", NN_F32, nn_shape2(256, 512));
        return nn_mean(g, nn_highway_layer(g, in[0], "hw"));
    case 4:
        *params = 0;
        *nin = 2;
        in[0] = nn_input(g, "pred", NN_F32, nn_shape2(256, 512));
        in[1] = nn_input(g, "target", NN_F32, nn_shape2(256, 512));
        nn_graph_requires_grad(g, in[0]);
        return nn_rmse_loss(g, in[0], in[1], NULL);
    case 5:
        *params = 0;
        *nin = 2;
        in[0] = nn_input(g, "z1", NN_F32, nn_shape2(256, 128));
        in[1] = nn_input(g, "z2", NN_F32, nn_shape2(256, 128));
        nn_graph_requires_grad(g, in[0]);
        nn_graph_requires_grad(g, in[1]);
        return nn_info_nce_loss(g, in[0], in[1], 0.1f, NULL);
    case 6:
        in[0] = nn_input(g, "x", NN_F32, nn_shape2(256, 32));
        return nn_mean(g, nn_rbf_layer(g, in[0], 128, "rbf"));
    default:
        in[0] = nn_input(g, "x", NN_F32, nn_shape2(256, 256));
        y = nn_mean(g, nn_moe_layer(g, in[0], 8, 2, 512, &(nn_moe_desc){&aux, 0}, "moe"));
        return nn_add(g, y, nn_mul_scalar(g, aux, 0.01f));
    }
}

static int bench_layers(const char *sel) {
    char name[256];
    nn_context *ctx = open_ctx(sel, name, sizeof name);
    int k, status = 0;
    if (!ctx) return 1;
    for (k = 0; k < LAYER_COUNT && status == 0; k++) {
        nn_graph *g = NULL;
        nn_compile_desc cd;
        nn_tensor in[2];
        float *host = NULL;
        nn_result r;
        int nin = 0, params = 0, steps = 0, i;
        double t0, dt = 0.0;

        memset(&cd, 0, sizeof cd);
        r = nn_graph_create(ctx, NULL, &g);
        if (r == NN_OK) {
            cd.loss = layer_loss(g, k, in, &nin, &params);
            cd.optimizer.kind = params ? NN_OPT_ADAM : NN_OPT_NONE;
            cd.optimizer.lr = 1e-3f;
            r = nn_graph_compile(g, &cd);
        }
        for (i = 0; i < nin && r == NN_OK; i++) {
            int64_t numel = 0;
            size_t n;
            nn_tensor_numel(g, in[i], &numel);
            n = (size_t)numel;
            float *p = (float *)realloc(host, n * sizeof(float));
            if (!p) {
                r = NN_ERR_OUT_OF_MEMORY;
                break;
            }
            host = p;
            fill_random(host, n, 21u + (uint32_t)i);
            r = nn_tensor_write(g, in[i], host, n * sizeof(float));
        }
        for (i = 0; i < 3 && r == NN_OK; i++) r = nn_graph_step(g);
        if (r == NN_OK) r = nn_graph_finish(g);
        t0 = now();
        while (r == NN_OK && (steps < 5 || dt < 0.5) && steps < 100000) {
            r = nn_graph_step(g);
            if (r == NN_OK) r = nn_graph_finish(g);
            steps++;
            dt = now() - t0;
        }
        if (r != NN_OK) status = fail(ctx, layer_names[k], r);
        else printf("BENCH name=layer backend=%s layer=%s ms_per_step=%.3f\n", name, layer_names[k], dt * 1e3 / steps);
        fflush(stdout);
        nn_graph_destroy(g);
        free(host);
    }
    nn_context_destroy(ctx);
    return status;
}

static int list_devices(void) {
    nn_device_info info[16];
    char name[256];
    int n = 0, i;
    nn_list_devices(info, 16, &n);
    printf("cpu cpu\n");
    for (i = 0; i < n && i < 16; i++) {
        bench_name(info[i].name, name, sizeof name);
        printf("%d %s\n", info[i].index, name);
    }
    return 0;
}

/* ---- one product ------------------------------------------------------------------------ */

/* C [M, N] = op(A) op(B) as an nn_matmul graph (A stored [K, M] where ta, B [N, K] where tb),
   operands in [-0.5, 0.5): the best of 9 blocks of 50 nn_graph_forward runs, each block
   finished before the clock is read (one product's own speed, as a step's products run) */
static int bench_product(const char *sel, int M, int N, int K, int ta, int tb) {
    char name[256];
    nn_context *ctx;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor a, b, c;
    size_t na = (size_t)M * (size_t)K, nb = (size_t)N * (size_t)K, i;
    float *host;
    double best = 1e30;
    int blk, rep, status = 0;
    nn_result r;
    if (M < 1 || N < 1 || K < 1) {
        fprintf(stderr, "nn_bench product: M, N and K must be positive\n");
        return 2;
    }
    host = (float *)malloc((na > nb ? na : nb) * sizeof(float));
    if (!host) {
        fprintf(stderr, "nn_bench: out of memory\n");
        return 1;
    }
    for (i = 0; i < (na > nb ? na : nb); i++) host[i] = (float)(i * 2654435761u % 1000u) / 1000.0f - 0.5f;
    ctx = open_ctx(sel, name, sizeof name);
    if (!ctx) {
        free(host);
        return 1;
    }
    memset(&cd, 0, sizeof cd);
    r = nn_graph_create(ctx, NULL, &g);
    if (r == NN_OK) {
        a = nn_input(g, "a", NN_F32, ta ? nn_shape2(K, M) : nn_shape2(M, K));
        b = nn_input(g, "b", NN_F32, tb ? nn_shape2(N, K) : nn_shape2(K, N));
        c = nn_matmul(g, a, b, ta, tb);
        nn_graph_output(g, c);
        r = nn_graph_compile(g, &cd);
    }
    if (r == NN_OK) r = nn_tensor_write(g, a, host, na * sizeof(float));
    if (r == NN_OK) r = nn_tensor_write(g, b, host, nb * sizeof(float));
    for (blk = 0; blk < 9 && r == NN_OK; blk++) {
        double t0, dt;
        r = nn_graph_finish(g);
        t0 = now();
        for (rep = 0; rep < 50 && r == NN_OK; rep++) r = nn_graph_forward(g);
        if (r == NN_OK) r = nn_graph_finish(g);
        dt = (now() - t0) / 50;
        if (dt < best) best = dt;
    }
    if (r != NN_OK) status = fail(ctx, "product", r);
    else
        printf("BENCH name=product backend=%s m=%d n=%d k=%d ta=%d tb=%d us=%.1f gflops=%.1f\n", name, M, N, K, ta, tb,
               best * 1e6, 2.0 * M * N * K / best / 1e9);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    free(host);
    return status;
}

int main(int argc, char **argv) {
    const char *cmd = argc > 1 ? argv[1] : "";
    if (strcmp(cmd, "devices") == 0) return list_devices();
    if (argc == 3 && strcmp(cmd, "sgemm") == 0) return bench_sgemm(argv[2]);
    if (argc == 3 && strcmp(cmd, "mlp") == 0) return bench_mlp(argv[2]);
    if (argc == 3 && strcmp(cmd, "gemm16") == 0) return bench_gemm16(argv[2]);
    if (argc == 3 && strcmp(cmd, "conv") == 0) return bench_conv(argv[2]);
    if (argc == 3 && strcmp(cmd, "cnn") == 0) return bench_cnn(argv[2]);
    if (argc == 3 && strcmp(cmd, "start") == 0) return bench_start(argv[2]);
    if (argc == 3 && strcmp(cmd, "mem") == 0) return bench_mem(argv[2]);
    if (argc == 3 && strcmp(cmd, "layers") == 0) return bench_layers(argv[2]);
    if (argc == 8 && strcmp(cmd, "product") == 0)
        return bench_product(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]) != 0, atoi(argv[7]) != 0);
    fprintf(stderr, "usage: %s devices | sgemm DEVICE | mlp DEVICE | conv DEVICE | cnn DEVICE | start DEVICE | mem DEVICE"
                    " | layers DEVICE | gemm16 cpu | product DEVICE M N K TA TB\n"
                    "  DEVICE: cpu, or an OpenCL device index as `devices` lists them\n", argv[0]);
    return 2;
}
