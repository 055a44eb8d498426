/* moe_bench.c - a mixture of experts' training step, dense against dispatched (issue 19):
   nn_moe_layer on x [256, 256], 8 experts of hidden 1024, top-2, an MSE loss and Adam, ms per
   step with capacity_factor 0 (dense: every expert on every row) and 1.25 and 4 (= E / k:
   none dropped), and the experts' multiply-adds per step of each (the gate's aside).
   ./bench/moe_bench DEVICE [ROUNDS]   DEVICE: cpu, opencl, ... (nn_context_desc.device)
   `make bench-moe` runs it on cpu and opencl. Each round times every configuration in turn
   (interleaved): one untimed step, then the median of 5 steps, each ended by
   nn_graph_finish; the figure is the median over the rounds. */
#define _POSIX_C_SOURCE 200809L
#define NN_IMPLEMENTATION
#include "nn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { B = 256, D = 256, HID = 1024, E = 8, K = 2, NCFG = 3, MAXR = 15 };
static const float cfs[NCFG] = {0.0f, 1.25f, 4.0f};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* one configuration's graph, compiled and fed */
static nn_graph *build(nn_context *ctx, float cf) {
    nn_graph *g = NULL;
    nn_tensor x, t, y;
    nn_moe_desc md;
    nn_compile_desc c;
    float *v = (float *)malloc(sizeof(float) * B * D);
    int i;
    if (!v || nn_graph_create(ctx, NULL, &g) != NN_OK) {
        free(v);
        return NULL;
    }
    x = nn_input(g, "x", NN_F32, nn_shape2(B, D));
    t = nn_input(g, "t", NN_F32, nn_shape2(B, D));
    memset(&md, 0, sizeof md);
    md.capacity_factor = cf;
    y = nn_moe_layer(g, x, E, K, HID, &md, "moe");
    memset(&c, 0, sizeof c);
    c.loss = nn_mse_loss(g, y, t, NULL);
    c.optimizer.kind = NN_OPT_ADAM;
    c.optimizer.lr = 1e-3f;
    srand(5);
    for (i = 0; i < B * D; i++) v[i] = (float)rand() / RAND_MAX - 0.5f;
    if (nn_graph_compile(g, &c) != NN_OK || nn_tensor_write(g, x, v, sizeof(float) * B * D) != NN_OK ||
        nn_tensor_write(g, t, v, sizeof(float) * B * D) != NN_OK) {
        fprintf(stderr, "moe_bench: %s\n", nn_context_last_error(ctx));
        nn_graph_destroy(g);
        g = NULL;
    }
    free(v);
    return g;
}

int main(int argc, char **argv) {
    nn_context_desc d;
    nn_context *ctx = NULL;
    nn_graph *g[NCFG];
    double med[NCFG][MAXR];
    int rounds = argc > 2 ? atoi(argv[2]) : 3, r, k, s;
    memset(&d, 0, sizeof d);
    d.device = argc > 1 ? argv[1] : "cpu";
    d.log_level = NN_LOG_WARN;
    if (rounds < 1 || rounds > MAXR) rounds = 3;
    if (nn_context_create(&d, &ctx) != NN_OK) {
        fprintf(stderr, "moe_bench: no context on %s: %s\n", d.device, nn_context_last_error(ctx));
        return 1;
    }
    for (k = 0; k < NCFG; k++)
        if (!(g[k] = build(ctx, cfs[k]))) return 1;
    for (r = 0; r < rounds; r++)
        for (k = 0; k < NCFG; k++) {
            double t[6];
            for (s = 0; s < 6; s++) {
                double t0 = now();
                if (nn_graph_step(g[k]) != NN_OK || nn_graph_finish(g[k]) != NN_OK) {
                    fprintf(stderr, "moe_bench: %s\n", nn_context_last_error(ctx));
                    return 1;
                }
                t[s] = (now() - t0) * 1e3;
            }
            qsort(t + 1, 5, sizeof t[0], cmp_d);
            med[k][r] = t[3];
        }
    for (k = 0; k < NCFG; k++) {
        double cap = cfs[k] * (double)K * B / E, rows = cfs[k] > 0 ? (cap >= B ? B : ceil(cap)) : B;
        qsort(med[k], (size_t)rounds, sizeof med[k][0], cmp_d);
        printf("moe device=%s B=%d D=%d hidden=%d experts=%d top_k=%d capacity_factor=%.2f rows_per_expert=%.0f "
               "expert_gmacs_per_step=%.3f ms_per_step=%.2f vs_dense=%.2fx\n",
               d.device, B, D, HID, E, K, (double)cfs[k], rows, 3.0 * E * rows * 2.0 * D * HID / 1e9, med[k][rounds / 2],
               med[0][rounds / 2] / med[k][rounds / 2]);
    }
    for (k = 0; k < NCFG; k++) nn_graph_destroy(g[k]);
    nn_context_destroy(ctx);
    return 0;
}
