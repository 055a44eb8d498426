/* bench/rows_bench.c: the reductions and row ops that issue 19's GPU-shaped kernels touch,
   ms per training step on one device: a sum of 4,194,304 floats (forward), log-softmax of
   [256, 1000] (forward and backward, loss sum(y * c)), the fused softmax cross-entropy of
   [256, 1000] and cross_entropy_loss with label smoothing (forward and backward), and SGD
   with clip_norm over a [1024, 1024] parameter. One line a figure:
       RUN name=NAME tuning=cpu|gpu ms=X   (the median of 7 timings of 10 steps each)
   Build: cc -O2 -I. bench/rows_bench.c -o bench/rows_bench -lm -lpthread
   Run:   NN_DEVICE=opencl ./bench/rows_bench [cpu|gpu]  (the device's tuning; default cpu).
   Compare two builds of nn.h by building this file against each (-I) and alternating runs. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define NN_IMPLEMENTATION
#include "nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* which: 0 sum, 1 log_softmax, 2 softmax_cross_entropy, 3 cross_entropy_loss, 4 clip_norm */
static int run(nn_context *ctx, int which, double *ms) {
    nn_graph *g = NULL;
    nn_tensor x, lab, c, p;
    nn_compile_desc cd;
    nn_loss_desc ld;
    nn_init init;
    double t[7];
    int i, k, B = 256, C = 1000, rc = 1;
    float *buf = (float *)malloc((size_t)4194304 * 4);
    int32_t labels[256];
    for (i = 0; i < 4194304; i++) buf[i] = (float)(((unsigned)i * 7919u) % 1000u) / 500.0f - 1.0f;
    for (i = 0; i < B; i++) labels[i] = (i * 37) % C;
    memset(&cd, 0, sizeof cd);
    memset(&ld, 0, sizeof ld);
    memset(&init, 0, sizeof init);
    if (nn_graph_create(ctx, NULL, &g) != NN_OK) goto done;
    if (which == 0) {
        x = nn_input(g, "x", NN_F32, nn_shape1(4194304));
        nn_graph_output(g, nn_sum(g, x));
    } else if (which == 4) {
        init.kind = NN_INIT_CONSTANT;
        init.a = 1;
        p = nn_param(g, "p", nn_shape2(1024, 1024), init);
        x = nn_input(g, "x", NN_F32, nn_shape2(1024, 1024));
        cd.loss = nn_sum(g, nn_mul(g, p, x));
        cd.optimizer.kind = NN_OPT_SGD;
        cd.optimizer.lr = 1e-6f;
        cd.optimizer.clip_norm = 1.0f;
    } else {
        x = nn_input(g, "x", NN_F32, nn_shape2(B, C));
        nn_graph_requires_grad(g, x);
        if (which == 1) {
            c = nn_input(g, "c", NN_F32, nn_shape2(B, C));
            cd.loss = nn_sum(g, nn_mul(g, nn_log_softmax(g, x, -1), c));
        } else {
            lab = nn_input(g, "labels", NN_I32, nn_shape1(B));
            ld.label_smoothing = 0.1f;
            cd.loss = which == 2 ? nn_softmax_cross_entropy(g, x, lab) : nn_cross_entropy_loss(g, x, lab, &ld);
        }
    }
    if (nn_graph_compile(g, which == 0 ? NULL : &cd) != NN_OK) goto done;
    if (which == 0 || which == 4) {
        if (nn_tensor_write(g, x, buf, (size_t)(which == 0 ? 4194304 : 1048576) * 4) != NN_OK) goto done;
    } else {
        if (nn_tensor_write(g, x, buf, (size_t)B * C * 4) != NN_OK) goto done;
        if (which == 1 && nn_tensor_write(g, c, buf + 1, (size_t)B * C * 4) != NN_OK) goto done;
        if (which >= 2 && nn_tensor_write(g, lab, labels, sizeof labels) != NN_OK) goto done;
    }
    for (k = -1; k < 7; k++) { /* k = -1: warm-up */
        double t0 = now_ms();
        for (i = 0; i < 10; i++)
            if ((which == 0 ? nn_graph_forward(g) : nn_graph_step(g)) != NN_OK) goto done;
        if (nn_graph_finish(g) != NN_OK) goto done;
        if (k >= 0) t[k] = (now_ms() - t0) / 10;
    }
    qsort(t, 7, sizeof t[0], cmp_d);
    *ms = t[3];
    rc = 0;
done:
    if (rc) fprintf(stderr, "rows_bench: %s\n", nn_context_last_error(ctx));
    nn_graph_destroy(g);
    free(buf);
    return rc;
}

int main(int argc, char **argv) {
    static const char *const names[] = {"sum_4M", "log_softmax_256x1000", "softmax_cross_entropy_256x1000",
                                        "cross_entropy_loss_256x1000", "clip_norm_1M"};
    nn_context_desc d;
    nn_context *ctx = NULL;
    int which, gpu = argc > 1 && strcmp(argv[1], "gpu") == 0;
    memset(&d, 0, sizeof d);
    d.backend.tuning = gpu ? NN_TUNING_GPU : NN_TUNING_CPU;
    d.log_level = NN_LOG_WARN;
    if (nn_context_create(&d, &ctx) != NN_OK) {
        fprintf(stderr, "rows_bench: no context\n");
        return 1;
    }
    for (which = 0; which < 5; which++) {
        double ms;
        if (run(ctx, which, &ms) != 0) return 1;
        printf("RUN name=%s tuning=%s ms=%.3f\n", names[which], gpu ? "gpu" : "cpu", ms);
        fflush(stdout);
    }
    nn_context_destroy(ctx);
    return 0;
}
