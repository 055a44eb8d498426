/* The cost of running a graph at a batch size it was not built at (nn_graph_build,
   nn_graph_set_batch: src/engine/model.c), on an MLP 784-256-10 (relu, dropout 0.2,
   cross-entropy, Adam) built at 128, on the context's backend (NN_DEVICE):

     first     nn_graph_set_batch to a size never run before, then one forward pass: the
               model function builds the network again and it is compiled (memory plan,
               kernels), a new size each round (100 + round)
     cached    nn_graph_set_batch to a size run before, then one forward pass
     select    nn_graph_set_batch alone, to a size run before (and back): microseconds
     eval      nn_graph_train(g, 0) the first time, then one forward pass (eval mode at 128)
     forward   one forward pass at the built size (what every figure above includes once)
     rebuild   what a program did before: a new graph built and compiled at a new size
               (300 + round, sharing the parameters), then one forward pass

   ./bench/batch_bench [ROUNDS]   interleaved rounds, medians, one "RESULT name ms" line each */
#define NN_IMPLEMENTATION
#include "nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct mlp { nn_tensor x, y, loss; } mlp;

static nn_result build(nn_graph *g, int64_t batch, void *user) {
    mlp *m = (mlp *)user;
    nn_tensor h;
    m->x = nn_input(g, "x", NN_F32, nn_shape2(batch, 784));
    m->y = nn_input(g, "y", NN_I32, nn_shape1(batch));
    h = nn_relu(g, nn_linear_layer(g, m->x, 256, NULL, "fc1"));
    h = nn_dropout(g, h, 0.2f);
    m->loss = nn_cross_entropy_loss(g, nn_linear_layer(g, h, 10, NULL, "fc2"), m->y, NULL);
    nn_graph_output(g, m->loss);
    return nn_graph_status(g);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float xs[512 * 784];
static int32_t ys[512];


/* writes n rows and runs a forward pass; the loss read back (the run finished) */
static int fwd(nn_graph *g, const mlp *m, int64_t n) {
    float loss;
    return nn_tensor_write(g, m->x, xs, (size_t)n * 784 * 4) == NN_OK && nn_tensor_write(g, m->y, ys, (size_t)n * 4) == NN_OK &&
           nn_graph_forward(g) == NN_OK && nn_tensor_read(g, m->loss, &loss, 4) == NN_OK;
}

static nn_graph *model(nn_context *ctx, mlp *m, nn_graph *share, int64_t batch) {
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_graph *g = NULL;
    memset(&gd, 0, sizeof gd);
    gd.share_params = share;
    memset(&cd, 0, sizeof cd);
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return NULL;
    if ((share ? build(g, batch, m) : nn_graph_build(g, build, batch, m)) != NN_OK) goto fail;
    cd.loss = m->loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-3f;
    if (nn_graph_compile(g, &cd) != NN_OK) goto fail;
    return g;
fail:
    fprintf(stderr, "batch_bench: %s\n", nn_context_last_error(ctx));
    nn_graph_destroy(g);
    return NULL;
}

int main(int argc, char **argv) {
    enum { FIRST, CACHED, SELECT, EVAL, FORWARD, REBUILD, N_FIG };
    static const char *const names[N_FIG] = {"first", "cached", "select", "eval", "forward", "rebuild"};
    int rounds = argc > 1 ? atoi(argv[1]) : 5, r, k, i;
    double *t[N_FIG];
    nn_context *ctx = NULL;
    nn_device_info dev;
    mlp m, m2;
    if (rounds < 1) rounds = 1;
    for (i = 0; i < 512 * 784; i++) xs[i] = (float)(i % 255) / 255.0f;
    for (i = 0; i < 512; i++) ys[i] = i % 10;
    for (k = 0; k < N_FIG; k++) t[k] = (double *)calloc((size_t)rounds, sizeof(double));
    if (nn_context_create(NULL, &ctx) != NN_OK) return 1;
    nn_context_device(ctx, &dev);
    printf("device %s, %d rounds\n", dev.name, rounds);
    for (r = 0; r < rounds; r++) {
        nn_graph *g = model(ctx, &m, NULL, 128), *h;
        double t0;
        int64_t n = 100 + r;
        if (!g || !fwd(g, &m, 128)) goto fail; /* the built size warm */
        t0 = now_ms();
        if (!fwd(g, &m, 128)) goto fail;
        t[FORWARD][r] = now_ms() - t0;
        t0 = now_ms();
        if (nn_graph_set_batch(g, n) != NN_OK || !fwd(g, &m, n)) goto fail;
        t[FIRST][r] = now_ms() - t0;
        if (nn_graph_set_batch(g, 128) != NN_OK) goto fail;
        t0 = now_ms();
        if (nn_graph_set_batch(g, n) != NN_OK || !fwd(g, &m, n)) goto fail;
        t[CACHED][r] = now_ms() - t0;
        t0 = now_ms();
        for (i = 0; i < 100; i++)
            if (nn_graph_set_batch(g, i % 2 ? 128 : n) != NN_OK) goto fail;
        t[SELECT][r] = (now_ms() - t0) * 10.0; /* microseconds per call */
        t0 = now_ms();
        if (nn_graph_train(g, 0) != NN_OK || !fwd(g, &m, 128)) goto fail;
        t[EVAL][r] = now_ms() - t0;
        t0 = now_ms();
        h = model(ctx, &m2, g, n + 200); /* a size new to this process too */
        if (!h || !fwd(h, &m2, n + 200)) goto fail;
        t[REBUILD][r] = now_ms() - t0;
        nn_graph_destroy(h);
        nn_graph_destroy(g);
    }
    for (k = 0; k < N_FIG; k++) {
        qsort(t[k], (size_t)rounds, sizeof(double), cmp);
        printf("RESULT batch_%s %.3f %s (min %.3f, max %.3f)\n", names[k], t[k][rounds / 2], k == SELECT ? "us" : "ms", t[k][0],
               t[k][rounds - 1]);
        free(t[k]);
    }
    nn_context_destroy(ctx);
    return 0;
fail:
    fprintf(stderr, "batch_bench: %s\n", nn_context_last_error(ctx));
    return 1;
}
