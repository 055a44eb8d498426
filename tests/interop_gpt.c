/* The nn.h half of tests/interop_gpt.py (`make interop`): the tiny GPT of
   examples/tiny_gpt.c (nanoGPT's model: vocabulary 96, context 64, 4 layers, width 128, 4
   heads) with nanoGPT's parameter names.

     interop_gpt init OUT.safetensors
         initialises the model (seed 1) and saves its weights
     interop_gpt train IN.safetensors BATCHES STEPS LOSSES OUT.safetensors LOGITS
         loads the weights, writes the logits of the first batch (float32 [B*T, 96]) to
         LOGITS, trains STEPS AdamW steps (lr 3e-4, PyTorch's defaults) on the batches in
         BATCHES (raw little-endian int32: STEPS*B*T inputs, then STEPS*B*T targets), writes
         each step's loss (before its update) to LOSSES and the final weights to OUT
     interop_gpt eval IN.safetensors BATCHES STEPS
         loads weights (e.g. PyTorch's) and prints the loss of the first batch */
#define NN_IMPLEMENTATION
#include "../nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B 4
#define T 64
#define V 96

static int fail(nn_context *ctx, const char *what) {
    fprintf(stderr, "interop_gpt: %s: %s\n", what, ctx ? nn_context_last_error(ctx) : "");
    return 1;
}

typedef struct gpt {
    nn_graph *g;
    nn_tensor x, y, logits, loss;
} gpt;

static nn_result build(nn_context *ctx, gpt *m, int train) {
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_gpt_config cfg;
    nn_result r;
    memset(&gd, 0, sizeof gd);
    gd.seed = 1;
    r = nn_graph_create(ctx, &gd, &m->g);
    if (r != NN_OK) return r;
    memset(&cfg, 0, sizeof cfg);
    cfg.vocab_size = V;
    cfg.block_size = T;
    cfg.n_layer = 4;
    cfg.n_head = 4;
    cfg.n_embd = 128;
    m->x = nn_input(m->g, "x", NN_I32, nn_shape2(B, T));
    m->y = nn_input(m->g, "y", NN_I32, nn_shape1(B * T));
    m->logits = nn_gpt(m->g, m->x, &cfg);
    m->loss = nn_softmax_cross_entropy(m->g, m->logits, m->y);
    nn_graph_output(m->g, m->loss);
    nn_graph_output(m->g, m->logits);
    memset(&cd, 0, sizeof cd);
    cd.loss = m->loss;
    cd.optimizer.kind = train ? NN_OPT_ADAMW : NN_OPT_NONE;
    cd.optimizer.lr = 3e-4f;
    return nn_graph_compile(m->g, &cd);
}

static int read_batches(const char *path, int steps, int32_t **x, int32_t **y) {
    FILE *f = fopen(path, "rb");
    size_t n = (size_t)steps * B * T;
    int ok;
    *x = (int32_t *)malloc(n * 4);
    *y = (int32_t *)malloc(n * 4);
    ok = f && *x && *y && fread(*x, 4, n, f) == n && fread(*y, 4, n, f) == n;
    if (f) fclose(f);
    if (!ok) fprintf(stderr, "interop_gpt: %s: cannot read %d batches\n", path, steps);
    return ok;
}

static int write_file(const char *path, const void *p, size_t bytes) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(p, 1, bytes, f) == bytes;
    if (f && fclose(f) != 0) ok = 0;
    return ok;
}

int main(int argc, char **argv) {
    nn_context *ctx = NULL;
    nn_context_desc cdesc;
    gpt m;
    int32_t *x = NULL, *y = NULL;
    float *losses = NULL, *logits = NULL;
    int rc = 1, i, steps;
    const size_t bt = (size_t)B * T;
    memset(&cdesc, 0, sizeof cdesc);
    cdesc.log_level = NN_LOG_WARN;
    memset(&m, 0, sizeof m);
    if (argc < 3) {
        fprintf(stderr, "usage: interop_gpt init OUT | train IN BATCHES STEPS LOSSES OUT LOGITS | eval IN BATCHES STEPS\n");
        return 2;
    }
    if (nn_context_create(&cdesc, &ctx) != NN_OK) return fail(NULL, "nn_context_create");
    {
        nn_device_info dev;
        nn_context_device(ctx, &dev);
        fprintf(stderr, "interop_gpt: backend %s\n", dev.name);
    }
    if (strcmp(argv[1], "init") == 0) {
        if (build(ctx, &m, 0) != NN_OK) rc = fail(ctx, "build");
        else if (nn_graph_save_safetensors(m.g, argv[2]) != NN_OK) rc = fail(ctx, "save");
        else rc = 0;
    } else if (strcmp(argv[1], "train") == 0 && argc == 8) {
        steps = atoi(argv[4]);
        if (steps < 1 || !read_batches(argv[3], steps, &x, &y)) goto done;
        losses = (float *)malloc((size_t)steps * 4);
        logits = (float *)malloc(bt * V * 4);
        if (!losses || !logits || build(ctx, &m, 1) != NN_OK || nn_graph_load_safetensors(m.g, argv[2], 0) != NN_OK) {
            rc = fail(ctx, "build/load");
            goto done;
        }
        for (i = 0; i < steps; i++) {
            if (nn_tensor_write(m.g, m.x, x + (size_t)i * bt, bt * 4) != NN_OK ||
                nn_tensor_write(m.g, m.y, y + (size_t)i * bt, bt * 4) != NN_OK) {
                rc = fail(ctx, "write");
                goto done;
            }
            if (i == 0 && (nn_graph_forward(m.g) != NN_OK || nn_tensor_read(m.g, m.logits, logits, bt * V * 4) != NN_OK ||
                           !write_file(argv[7], logits, bt * V * 4))) {
                rc = fail(ctx, "logits");
                goto done;
            }
            if (nn_graph_step(m.g) != NN_OK || nn_tensor_read(m.g, m.loss, &losses[i], 4) != NN_OK) {
                rc = fail(ctx, "step");
                goto done;
            }
        }
        if (nn_graph_save_safetensors(m.g, argv[6]) != NN_OK) {
            rc = fail(ctx, "save");
            goto done;
        }
        rc = !write_file(argv[5], losses, (size_t)steps * 4);
    } else if (strcmp(argv[1], "eval") == 0 && argc == 5) {
        float loss;
        steps = atoi(argv[4]);
        if (steps < 1 || !read_batches(argv[3], steps, &x, &y)) goto done;
        if (build(ctx, &m, 0) != NN_OK || nn_graph_load_safetensors(m.g, argv[2], 1) != NN_OK ||
            nn_tensor_write(m.g, m.x, x, bt * 4) != NN_OK || nn_tensor_write(m.g, m.y, y, bt * 4) != NN_OK ||
            nn_graph_forward(m.g) != NN_OK || nn_tensor_read(m.g, m.loss, &loss, 4) != NN_OK) {
            rc = fail(ctx, "eval");
            goto done;
        }
        printf("%.9g\n", loss);
        rc = 0;
    } else fprintf(stderr, "interop_gpt: bad arguments\n");
done:
    free(x);
    free(y);
    free(losses);
    free(logits);
    nn_graph_destroy(m.g);
    nn_context_destroy(ctx);
    return rc;
}
