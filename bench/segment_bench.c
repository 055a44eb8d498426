/* segment_bench.c - the segment family's figures (issue 17), one line each:
     the embedding's backward: weight [20000, 128], 2048 indices (nn_gather_rows, and
       nn_embedding_lookup where the build has it), a training step's forward and backward;
     nn_scatter_add: 2000 nodes, 20000 edges, 128 features (x [2000, 128], index and src
       [20000, 128], dim 0), a step's forward and backward (d/dsrc: a gather).
   ./bench/segment_bench DEVICE [STEPS]   DEVICE: cpu, opencl, ... (nn_context_desc.device)
   `make bench-segment` runs it on cpu and opencl. Built against another nn.h with
   -DSEG_BASELINE (no nn_embedding_lookup) it times that library's code the same way:
     cc -O2 -std=c99 -I/path/to/old -DSEG_BASELINE -o /tmp/seg_old bench/segment_bench.c -lm -lpthread -ldl
   Each figure: one untimed step, then the median of STEPS (default 5) timed steps, each
   ended by nn_graph_finish. */
#define _POSIX_C_SOURCE 200809L
#define NN_IMPLEMENTATION
#include "nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* which: 0 gather_rows, 1 embedding_lookup, 2 scatter_add */
static int figure(nn_context *ctx, int which, int steps, double *ms) {
    enum { N = 20000, D = 128, B = 2048, V = 2000, E = 20000 };
    nn_graph *g = NULL;
    nn_tensor w, idx, y, src, loss;
    nn_compile_desc c;
    double t[64];
    int k, ok = 1;
    size_t big = which == 2 ? (size_t)E * D : (size_t)N * D;
    float *fv = (float *)malloc(big * sizeof(float));
    int32_t *iv = (int32_t *)malloc(big * sizeof(int32_t));
    if (!fv || !iv || nn_graph_create(ctx, NULL, &g) != NN_OK) return 0;
    srand(17);
    for (k = 0; k < (int)big; k++) fv[k] = (float)rand() / RAND_MAX - 0.5f;
    if (which < 2) {
        w = nn_input(g, "w", NN_F32, nn_shape2(N, D));
        idx = nn_input(g, "idx", NN_I32, nn_shape1(B));
        nn_graph_requires_grad(g, w);
#ifndef SEG_BASELINE
        y = which == 1 ? nn_embedding_lookup(g, w, idx, NULL) : nn_gather_rows(g, w, idx);
#else
        y = nn_gather_rows(g, w, idx);
#endif
        for (k = 0; k < B; k++) iv[k] = rand() % N;
        src = w;
    } else {
        w = nn_input(g, "x", NN_F32, nn_shape2(V, D));
        idx = nn_input(g, "idx", NN_I32, nn_shape2(E, D));
        src = nn_input(g, "src", NN_F32, nn_shape2(E, D));
        nn_graph_requires_grad(g, src);
        y = nn_scatter_add(g, w, 0, idx, src);
        for (k = 0; k < E; k++) { /* edge k's target, the same for its 128 features */
            int v = rand() % V, j;
            for (j = 0; j < D; j++) iv[(size_t)k * D + j] = v;
        }
    }
    loss = nn_sum(g, nn_mul(g, y, y));
    memset(&c, 0, sizeof c);
    c.loss = loss;
    ok = nn_graph_compile(g, &c) == NN_OK && nn_tensor_write(g, idx, iv, (which == 2 ? (size_t)E * D : B) * 4) == NN_OK &&
         nn_tensor_write(g, src, fv, (which == 2 ? (size_t)E * D : (size_t)N * D) * 4) == NN_OK &&
         (which < 2 || nn_tensor_write(g, w, fv, (size_t)V * D * 4) == NN_OK);
    for (k = 0; ok && k <= steps; k++) {
        double t0 = now();
        ok = nn_graph_step(g) == NN_OK && nn_graph_finish(g) == NN_OK;
        if (k > 0) t[k - 1] = (now() - t0) * 1e3;
    }
    if (!ok) fprintf(stderr, "segment_bench: %s\n", nn_context_last_error(ctx));
    qsort(t, (size_t)steps, sizeof t[0], cmp_d);
    *ms = t[steps / 2];
    nn_graph_destroy(g);
    free(fv);
    free(iv);
    return ok;
}

int main(int argc, char **argv) {
    static const char *const names[3] = {"gather_rows_backward_20000x128_2048", "embedding_backward_20000x128_2048",
                                         "scatter_add_2000n_20000e_128f"};
    nn_context_desc d;
    nn_context *ctx = NULL;
    nn_device_info info;
    int steps = argc > 2 ? atoi(argv[2]) : 5, which;
    memset(&d, 0, sizeof d);
    d.device = argc > 1 ? argv[1] : "cpu";
    d.log_level = NN_LOG_WARN;
    if (steps < 1 || steps > 64) steps = 5;
    if (nn_context_create(&d, &ctx) != NN_OK) {
        fprintf(stderr, "segment_bench: no context on %s: %s\n", d.device, nn_context_last_error(ctx));
        return 1;
    }
    nn_context_device(ctx, &info);
    for (which = 0; which < 3; which++) {
        double ms = 0;
#ifdef SEG_BASELINE
        if (which == 1) continue;
#endif
        if (figure(ctx, which, steps, &ms))
            printf("segment figure=%s device=%s steps=%d ms_per_step=%.2f\n", names[which], d.device, steps, ms);
        fflush(stdout);
    }
    nn_context_destroy(ctx);
    return 0;
}
