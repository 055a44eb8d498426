/* The nn.h half of tests/interop_torch.py (`make interop`): the Fashion-MNIST MLP
   784-256-128-10 with ReLU, PyTorch's names (fc1, fc2, fc3) and initialisation.

     interop_mlp init OUT.safetensors
         initialises the MLP (seed 1) and saves its weights
     interop_mlp train IN.safetensors BATCHES STEPS LOSSES OUT.safetensors
         loads the weights, trains STEPS Adam steps (lr 1e-3) on the batches of 128 in
         BATCHES (raw little-endian: STEPS*128*784 float32 images, then STEPS*128 int32
         labels), writes the loss of each step (float32, before its update) to LOSSES and
         the final weights to OUT
     interop_mlp eval IN.safetensors BATCHES STEPS
         loads weights (e.g. PyTorch's) and prints the loss of the first batch

   Dependency-free: the Python side reads the gzipped IDX files and writes BATCHES. */
#define NN_IMPLEMENTATION
#include "../nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B 128

static int fail(nn_context *ctx, const char *what) {
    fprintf(stderr, "interop_mlp: %s: %s\n", what, ctx ? nn_context_last_error(ctx) : "");
    return 1;
}

typedef struct mlp {
    nn_graph *g;
    nn_tensor x, y, loss;
} mlp;

static nn_result build(nn_context *ctx, mlp *m, int train) {
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor h;
    nn_result r;
    memset(&gd, 0, sizeof gd);
    gd.seed = 1;
    r = nn_graph_create(ctx, &gd, &m->g);
    if (r != NN_OK) return r;
    m->x = nn_input(m->g, "x", NN_F32, nn_shape2(B, 784));
    m->y = nn_input(m->g, "y", NN_I32, nn_shape1(B));
    h = nn_relu(m->g, nn_linear_layer(m->g, m->x, 256, NULL, "fc1"));
    h = nn_relu(m->g, nn_linear_layer(m->g, h, 128, NULL, "fc2"));
    m->loss = nn_softmax_cross_entropy(m->g, nn_linear_layer(m->g, h, 10, NULL, "fc3"), m->y);
    memset(&cd, 0, sizeof cd);
    cd.loss = m->loss;
    cd.optimizer.kind = train ? NN_OPT_ADAM : NN_OPT_NONE;
    cd.optimizer.lr = 1e-3f;
    nn_graph_output(m->g, m->loss);
    return nn_graph_compile(m->g, &cd);
}

static int read_batches(const char *path, int steps, float **x, int32_t **y) {
    FILE *f = fopen(path, "rb");
    size_t nx = (size_t)steps * B * 784, ny = (size_t)steps * B;
    int ok;
    *x = (float *)malloc(nx * 4);
    *y = (int32_t *)malloc(ny * 4);
    ok = f && *x && *y && fread(*x, 4, nx, f) == nx && fread(*y, 4, ny, f) == ny;
    if (f) fclose(f);
    if (!ok) fprintf(stderr, "interop_mlp: %s: cannot read %d batches\n", path, steps);
    return ok;
}

int main(int argc, char **argv) {
    nn_context *ctx = NULL;
    nn_context_desc cdesc;
    mlp m;
    float *x = NULL, *losses = NULL;
    int32_t *y = NULL;
    int rc = 1, i, steps;
    memset(&cdesc, 0, sizeof cdesc);
    cdesc.log_level = NN_LOG_WARN;
    memset(&m, 0, sizeof m);
    if (argc < 3) {
        fprintf(stderr, "usage: interop_mlp init OUT | train IN BATCHES STEPS LOSSES OUT | eval IN BATCHES STEPS\n");
        return 2;
    }
    if (nn_context_create(&cdesc, &ctx) != NN_OK) return fail(NULL, "nn_context_create");
    {
        nn_device_info dev;
        nn_context_device(ctx, &dev);
        fprintf(stderr, "interop_mlp: backend %s\n", dev.name);
    }
    if (strcmp(argv[1], "init") == 0) {
        if (build(ctx, &m, 0) != NN_OK) rc = fail(ctx, "build");
        else if (nn_graph_save_safetensors(m.g, argv[2]) != NN_OK) rc = fail(ctx, "save");
        else rc = 0;
    } else if (strcmp(argv[1], "train") == 0 && argc == 7) {
        steps = atoi(argv[4]);
        if (steps < 1 || !read_batches(argv[3], steps, &x, &y)) goto done;
        losses = (float *)malloc((size_t)steps * 4);
        if (!losses || build(ctx, &m, 1) != NN_OK || nn_graph_load_safetensors(m.g, argv[2], 0) != NN_OK) {
            rc = fail(ctx, "build/load");
            goto done;
        }
        for (i = 0; i < steps; i++)
            if (nn_tensor_write(m.g, m.x, x + (size_t)i * B * 784, (size_t)B * 784 * 4) != NN_OK ||
                nn_tensor_write(m.g, m.y, y + (size_t)i * B, B * 4) != NN_OK || nn_graph_step(m.g) != NN_OK ||
                nn_tensor_read(m.g, m.loss, &losses[i], 4) != NN_OK) {
                rc = fail(ctx, "step");
                goto done;
            }
        if (nn_graph_save_safetensors(m.g, argv[6]) != NN_OK) {
            rc = fail(ctx, "save");
            goto done;
        }
        {
            FILE *f = fopen(argv[5], "wb");
            rc = !(f && fwrite(losses, 4, (size_t)steps, f) == (size_t)steps);
            if (f && fclose(f) != 0) rc = 1;
        }
    } else if (strcmp(argv[1], "eval") == 0 && argc == 5) {
        float loss;
        steps = atoi(argv[4]);
        if (steps < 1 || !read_batches(argv[3], steps, &x, &y)) goto done;
        if (build(ctx, &m, 0) != NN_OK || nn_graph_load_safetensors(m.g, argv[2], 0) != NN_OK ||
            nn_tensor_write(m.g, m.x, x, (size_t)B * 784 * 4) != NN_OK || nn_tensor_write(m.g, m.y, y, B * 4) != NN_OK ||
            nn_graph_forward(m.g) != NN_OK || nn_tensor_read(m.g, m.loss, &loss, 4) != NN_OK) {
            rc = fail(ctx, "eval");
            goto done;
        }
        printf("%.9g\n", loss);
        rc = 0;
    } else fprintf(stderr, "interop_mlp: bad arguments\n");
done:
    free(x);
    free(y);
    free(losses);
    nn_graph_destroy(m.g);
    nn_context_destroy(ctx);
    return rc;
}
