/* bench/attention_bench.c - attention forward + backward at B = 4, H = 8, D = 64: the fused
   nn_attention against the composed nn_matmul(q, k^T) * scale (+ a [T, T] -inf mask when
   causal), nn_softmax, nn_matmul(p, v), on one backend.

     ./bench/attention_bench DEVICE T fused|composed causal|full
       one line: BENCH name=attention backend=B T=T impl=fused|composed mask=causal|full
                 ms_per_step=X arena_bytes=N cpu_ms_per_step=X
   DEVICE: cpu, or an OpenCL device index. A step is nn_graph_step of loss = sum(y * w), w
   fixed: the forward and dq, dk, dv (q, k, v inputs that require gradients; no optimizer).
   2 warm-up steps, then steps (each finished before the clock is read) until >= 1 s and >= 3
   steps; the median (cpu_ms_per_step: the process's CPU time, every thread, the median). arena_bytes: the graph's planned activation arena (every intermediate
   and gradient by liveness, the inputs' storage not counted), the working memory that grows
   with T; the fused CPU op adds a per-thread tile workspace of about 130 KiB, and in the
   forward K^T of a head per thread (T * 64 floats: 256 KiB at T = 1024).
   bench/attention.sh runs it over T = 256, 1024, 4096, interleaved over rounds. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define NN_IMPLEMENTATION
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BB = 4, HH = 8, DD = 64 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fill_random(float *p, size_t n, uint32_t seed) {
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

/* the process's CPU time (every thread), for figures on a loaded machine */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    nn_context_desc cdesc;
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor q, k, v, w, y, mask = NN_NONE;
    nn_device_info dev;
    nn_result r;
    double t[64], c[64], t0, c0, start;
    float *buf;
    int T, fused, causal, n = 0, i;
    size_t nq;
    char name[128];
    if (argc != 5) {
        fprintf(stderr, "usage: %s DEVICE T fused|composed causal|full\n", argv[0]);
        return 2;
    }
    T = atoi(argv[2]);
    fused = strcmp(argv[3], "fused") == 0;
    causal = strcmp(argv[4], "causal") == 0;
    memset(&cdesc, 0, sizeof cdesc);
    cdesc.device = argv[1];
    if (nn_context_create(&cdesc, &ctx) != NN_OK) {
        fprintf(stderr, "attention_bench: cannot open device %s\n", argv[1]);
        return 1;
    }
    nn_context_device(ctx, &dev);
    snprintf(name, sizeof name, "%s", dev.name);
    for (i = 0; name[i]; i++)
        if (name[i] == ' ' || name[i] == '=') name[i] = '_';
    nq = (size_t)BB * HH * T * DD;
    r = nn_graph_create(ctx, NULL, &g);
    if (r != NN_OK) goto fail;
    q = nn_input(g, "q", NN_F32, nn_shape4(BB, HH, T, DD));
    k = nn_input(g, "k", NN_F32, nn_shape4(BB, HH, T, DD));
    v = nn_input(g, "v", NN_F32, nn_shape4(BB, HH, T, DD));
    w = nn_input(g, "w", NN_F32, nn_shape4(BB, HH, T, DD));
    nn_graph_requires_grad(g, q);
    nn_graph_requires_grad(g, k);
    nn_graph_requires_grad(g, v);
    if (fused) {
        nn_attention_desc ad;
        memset(&ad, 0, sizeof ad);
        ad.causal = causal;
        y = nn_attention(g, q, k, v, &ad);
    } else {
        nn_tensor s = nn_mul_scalar(g, nn_matmul(g, q, k, 0, 1), 1.0f / sqrtf((float)DD));
        if (causal) {
            mask = nn_input(g, "mask", NN_F32, nn_shape2(T, T));
            s = nn_add(g, s, mask);
        }
        y = nn_matmul(g, nn_softmax(g, s, -1), v, 0, 0);
    }
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, y, w));
    r = nn_graph_compile(g, &cd);
    if (r != NN_OK) goto fail;
    buf = (float *)malloc(nq * sizeof(float) > (size_t)T * T * sizeof(float) ? nq * sizeof(float) : (size_t)T * T * sizeof(float));
    if (!buf) goto fail;
    fill_random(buf, nq, 1);
    nn_tensor_write(g, q, buf, nq * 4);
    fill_random(buf, nq, 2);
    nn_tensor_write(g, k, buf, nq * 4);
    fill_random(buf, nq, 3);
    nn_tensor_write(g, v, buf, nq * 4);
    fill_random(buf, nq, 4);
    nn_tensor_write(g, w, buf, nq * 4);
    if (mask.id > 0) {
        int a, b;
        for (a = 0; a < T; a++)
            for (b = 0; b < T; b++) buf[(size_t)a * T + b] = b > a ? -INFINITY : 0.0f;
        nn_tensor_write(g, mask, buf, (size_t)T * T * 4);
    }
    free(buf);
    for (i = 0; i < 2; i++)
        if ((r = nn_graph_step(g)) != NN_OK || (r = nn_graph_finish(g)) != NN_OK) goto fail;
    start = now();
    while (n < 64 && (n < 3 || now() - start < 1.0)) {
        t0 = now();
        c0 = cpu_now();
        if ((r = nn_graph_step(g)) != NN_OK || (r = nn_graph_finish(g)) != NN_OK) goto fail;
        c[n] = cpu_now() - c0;
        t[n++] = now() - t0;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_d);
    qsort(c, (size_t)n, sizeof c[0], cmp_d);
    printf("BENCH name=attention backend=%s T=%d impl=%s mask=%s ms_per_step=%.2f arena_bytes=%llu cpu_ms_per_step=%.2f\n", name, T,
           fused ? "fused" : "composed", causal ? "causal" : "full", t[n / 2] * 1e3, (unsigned long long)g->arena_bytes, c[n / 2] * 1e3);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return 0;
fail:
    fprintf(stderr, "attention_bench: %s T=%d %s: %s\n", name, T, argv[3], nn_context_last_error(ctx));
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return 1;
}
