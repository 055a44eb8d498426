/* bench/compile_scale: builds an MLP of L dense+ReLU layers (width 8, batch 4, Adam) and
   times graph building, nn_graph_compile and the first step. `make compile-scale` runs
   2,000 and 20,000 layers; compile time must grow about linearly with L.
   usage: compile_scale [layers] [device] */
#define NN_IMPLEMENTATION
#include "nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    nn_result r;
    double t0, t1, t2, t3;
    nn_tensor x, y, loss;
    int L = argc > 1 ? atoi(argv[1]) : 2000, i;
    nn_context *ctx; nn_graph *g; nn_context_desc d; nn_compile_desc cd;
    memset(&d, 0, sizeof d);
    d.device = argc > 2 ? argv[2] : "cpu";
    d.log_level = NN_LOG_WARN;
    if (nn_context_create(&d, &ctx) != NN_OK) return 1;
    nn_graph_create(ctx, NULL, &g);
    t0 = now();
    x = nn_input(g, "x", NN_F32, nn_shape2(4, 8));
    y = x;
    for (i = 0; i < L; i++) { char name[32]; snprintf(name, sizeof name, "l%d", i); y = nn_relu(g, nn_linear_layer(g, y, 8, NULL, name)); }
    loss = nn_mean(g, y);
    t1 = now();
    memset(&cd, 0, sizeof cd); cd.loss = loss; cd.optimizer.kind = NN_OPT_ADAM;
    r = nn_graph_compile(g, &cd);
    t2 = now();
    r = r == NN_OK ? nn_graph_step(g) : r;
    if (r == NN_OK) r = nn_graph_finish(g);
    t3 = now();
    printf("layers=%d build=%.3fs compile=%.3fs first_step=%.3fs r=%d %s\n", L, t1 - t0, t2 - t1, t3 - t2, r, r ? nn_context_last_error(ctx) : "");
    nn_graph_destroy(g); nn_context_destroy(ctx);
    return 0;
}
