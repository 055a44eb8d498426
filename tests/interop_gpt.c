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
         loads weights (e.g. PyTorch's) and prints the loss of the first batch
     interop_gpt encoder VARIANT OUT0.safetensors X STEPS OUTPUTS LOSSES OUT.safetensors
         a TransformerEncoderLayer (d_model 32, 4 heads, dim_feedforward 64, dropout 0,
         batch_first; VARIANT 0: post-norm ReLU, 1: norm_first GELU) on x [3, 7, 32] (raw
         float32 in X, then the target of the same shape): saves its initial weights to OUT0,
         writes its output to OUTPUTS, then trains STEPS AdamW steps (lr 1e-3) on the MSE
         against the target and writes the losses and the final weights */
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

static int encoder(nn_context *ctx, int variant, char **a) {
    enum { EB = 3, ET = 7, EE = 32 };
    nn_graph *g = NULL;
    nn_transformer_desc td;
    nn_compile_desc cd;
    nn_tensor x, t, y, loss, amt = NN_NONE, kpt = NN_NONE;
    static float xs[2 * EB * ET * EE], out[EB * ET * EE], am[ET * ET], kp[EB * ET];
    float losses[64];
    int steps = atoi(a[1]), i, rc = 1;
    FILE *f = fopen(a[0], "rb");
    size_t n = 2 * EB * ET * EE;
    if (!f || fread(xs, 4, n, f) != n || steps < 1 || steps > 64) {
        if (f) fclose(f);
        return fail(ctx, "encoder input");
    }
    fclose(f);
    memset(&td, 0, sizeof td);
    td.dim_feedforward = 64;
    td.dropout = NN_ZERO;
    td.batch_first = 1;
    td.norm_first = variant;
    td.activation = variant;
    if (nn_graph_create(ctx, NULL, &g) != NN_OK) return fail(ctx, "graph");
    x = nn_input(g, "x", NN_F32, nn_shape3(EB, ET, EE));
    t = nn_input(g, "t", NN_F32, nn_shape3(EB, ET, EE));
    if (variant >= 2) { /* nn.MultiheadAttention(32, 4, kdim=24, vdim=16, batch_first=True) on
                           (x, x[..., :24], x[..., 8:24]), variant 2: a float attn_mask [7, 7]
                           0.1 (i - j); 3: a float key_padding_mask [3, 7] -0.3 j (b + 1) (one
                           at a time: Debian's PyTorch 1.13 refuses the two float masks together) */
        nn_mha_desc md;
        int j;
        for (i = 0; i < ET * ET; i++) am[i] = 0.1f * (float)(i / ET - i % ET);
        for (i = 0; i < EB; i++)
            for (j = 0; j < ET; j++) kp[i * ET + j] = -0.3f * (float)j * (float)(i + 1);
        memset(&md, 0, sizeof md);
        md.batch_first = 1;
        md.kdim = 24;
        md.vdim = 16;
        if (variant == 2) md.attn_mask = amt = nn_input(g, "attn_mask", NN_F32, nn_shape2(ET, ET));
        else md.key_padding_mask = kpt = nn_input(g, "key_padding_mask", NN_F32, nn_shape2(EB, ET));
        y = nn_multihead_attention(g, x, nn_slice(g, x, 2, 0, 24), nn_slice(g, x, 2, 8, 16), EE, 4, &md, "enc");
    } else
        y = nn_transformer_encoder_layer(g, x, EE, 4, &td, "enc");
    loss = nn_mse_loss(g, y, t, NULL);
    nn_graph_output(g, y);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAMW;
    cd.optimizer.lr = 1e-3f;
    if (nn_graph_compile(g, &cd) != NN_OK || nn_graph_save_safetensors(g, a[-1]) != NN_OK ||
        nn_tensor_write(g, x, xs, sizeof xs / 2) != NN_OK || nn_tensor_write(g, t, xs + n / 2, sizeof xs / 2) != NN_OK ||
        (amt.id && nn_tensor_write(g, amt, am, sizeof am) != NN_OK) || (kpt.id && nn_tensor_write(g, kpt, kp, sizeof kp) != NN_OK) ||
        nn_graph_forward(g) != NN_OK || nn_tensor_read(g, y, out, sizeof out) != NN_OK || !write_file(a[2], out, sizeof out)) {
        rc = fail(ctx, "encoder");
        goto done;
    }
    for (i = 0; i < steps; i++)
        if (nn_graph_step(g) != NN_OK || nn_tensor_read(g, loss, &losses[i], 4) != NN_OK) {
            rc = fail(ctx, "encoder step");
            goto done;
        }
    if (!write_file(a[3], losses, (size_t)steps * 4) || nn_graph_save_safetensors(g, a[4]) != NN_OK) {
        rc = fail(ctx, "encoder save");
        goto done;
    }
    rc = 0;
done:
    nn_graph_destroy(g);
    return rc;
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
    if (strcmp(argv[1], "encoder") == 0 && argc == 9) {
        rc = encoder(ctx, atoi(argv[2]), argv + 4);
    } else if (strcmp(argv[1], "init") == 0) {
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
