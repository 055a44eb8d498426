/* bench/ab_step_tu.c - one build of nn.h for bench/ab_step.c: compiled twice, with
   -DAB_HEADER='"path/to/nn.h"' -DAB_PREFIX=a_ (then b_), each copy static (NN_STATIC) behind
   three functions named by the prefix, so two builds of the library run in one process. */
#define NN_STATIC
#define NN_IMPLEMENTATION
#include AB_HEADER
#include "models.h"
#include <stdlib.h>
#include <string.h>

#define AB_CAT_(a, b) a##b
#define AB_CAT(a, b) AB_CAT_(a, b)
#define AB_TRAIN_N 60000

static nn_context *ab_ctx;
static nn_graph *ab_g;
static nn_tensor ab_idx;

int AB_CAT(AB_PREFIX, build)(const char *device, int cnn, int batch, const float *x, const int *y);
void AB_CAT(AB_PREFIX, step)(const int *idx, int batch);
void AB_CAT(AB_PREFIX, finish)(void);

/* bench/nn_bench.c's MLP (cnn 0) or CNN (1) training graph on `device` (NN_DEVICE's syntax),
   its data x [60000, 784] and labels y resident; 0 when built */
int AB_CAT(AB_PREFIX, build)(const char *device, int cnn, int batch, const float *x, const int *y) {
    nn_compile_desc cd;
    nn_tensor x_all, y_all, yb, h;
    memset(&cd, 0, sizeof cd);
    setenv("NN_DEVICE", device, 1);
    if (nn_context_create(NULL, &ab_ctx) != NN_OK || nn_graph_create(ab_ctx, NULL, &ab_g) != NN_OK) return 1;
    x_all = nn_input(ab_g, "x_all", NN_F32, cnn ? nn_shape4(AB_TRAIN_N, 1, 28, 28) : nn_shape2(AB_TRAIN_N, 784));
    y_all = nn_input(ab_g, "y_all", NN_I32, nn_shape1(AB_TRAIN_N));
    ab_idx = nn_input(ab_g, "idx", NN_I32, nn_shape1(batch));
    yb = nn_gather_rows(ab_g, y_all, ab_idx);
    h = nn_gather_rows(ab_g, x_all, ab_idx);
    cd.loss = cnn ? bench_cnn_loss(ab_g, h, yb) : bench_mlp_loss(ab_g, h, yb);
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-3f;
    if (nn_graph_compile(ab_g, &cd) != NN_OK) return 1;
    if (nn_tensor_write(ab_g, x_all, x, (size_t)AB_TRAIN_N * 784 * sizeof(float)) != NN_OK) return 1;
    return nn_tensor_write(ab_g, y_all, y, (size_t)AB_TRAIN_N * sizeof(int)) != NN_OK;
}

/* one training step on the batch's rows idx (enqueued; finish waits) */
void AB_CAT(AB_PREFIX, step)(const int *idx, int batch) {
    nn_tensor_write(ab_g, ab_idx, idx, (size_t)batch * sizeof(int));
    nn_graph_step(ab_g);
}

void AB_CAT(AB_PREFIX, finish)(void) { nn_graph_finish(ab_g); }
