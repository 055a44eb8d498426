/* The nn.h half of tests/interop_rnn.py (`make interop`): examples/char_lstm.c's model
   (embedding 96 x 32, nn_lstm 128 batch_first, linear head to 96; PyTorch's names
   embedding.weight, lstm.weight_ih_l0 ..., head.weight, head.bias).

     interop_rnn char IN.safetensors BATCHES STEPS LOSSES OUT.safetensors
         loads the weights, trains STEPS Adam steps (lr 1e-3) on the batches of 32 windows of
         64 in BATCHES (raw little-endian int32: STEPS*32*64 inputs, then STEPS*32*64
         targets), writes the loss of each step (float32, before its update) to LOSSES and
         the final weights to OUT
     interop_rnn layer lstm|gru|rnn L BIDIR I H T B IN.safetensors INPUTS OUTPUTS
         nn_lstm / nn_gru / nn_rnn (L layers, bidirectional if BIDIR, x [T, B, I], hidden H,
         parameters rnn.weight_ih_l0 ... from IN), loss = sum(y * Ry) + sum(h_n * Rh)
         (+ sum(c_n * Rc)); INPUTS holds x, Ry, Rh (, Rc) as raw float32; OUTPUTS receives y,
         h_n (, c_n), d loss / d x, then each parameter's gradient in PyTorch's order
         (weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}, then _reverse) */
#define NN_IMPLEMENTATION
#include "../nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V 96
#define E 32
#define H 128
#define B 32
#define T 64

static int fail(nn_context *ctx, const char *what) {
    fprintf(stderr, "interop_rnn: %s: %s\n", what, ctx ? nn_context_last_error(ctx) : "");
    return 1;
}

static int char_lstm(int argc, char **argv) {
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_rnn_desc rd;
    nn_init emb_init = {NN_INIT_NORMAL, 0.0f, 1.0f};
    nn_tensor x, y, h, loss;
    int steps, s;
    size_t per = (size_t)B * T;
    int32_t *data;
    float *losses;
    FILE *f;
    if (argc != 7) return fail(NULL, "usage: interop_rnn char IN BATCHES STEPS LOSSES OUT");
    steps = atoi(argv[4]);
    data = (int32_t *)malloc(2 * per * (size_t)steps * 4);
    losses = (float *)malloc((size_t)steps * 4);
    if (!data || !losses) return fail(NULL, "out of memory");
    f = fopen(argv[3], "rb");
    if (!f || fread(data, 4, 2 * per * (size_t)steps, f) != 2 * per * (size_t)steps) return fail(NULL, "cannot read the batches");
    fclose(f);
    if (nn_context_create(NULL, &ctx) != NN_OK || nn_graph_create(ctx, NULL, &g) != NN_OK) return fail(ctx, "create");
    x = nn_input(g, "x", NN_I32, nn_shape1(B * T));
    y = nn_input(g, "y", NN_I32, nn_shape1(B * T));
    h = nn_reshape(g, nn_index_select(g, nn_param(g, "embedding.weight", nn_shape2(V, E), emb_init), 0, x), nn_shape3(B, T, E));
    memset(&rd, 0, sizeof rd);
    rd.batch_first = 1;
    h = nn_lstm(g, h, H, &rd, "lstm");
    loss = nn_cross_entropy_loss(g, nn_linear_layer(g, nn_reshape(g, h, nn_shape2(B * T, H)), V, NULL, "head"), y, NULL);
    nn_graph_output(g, loss);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-3f;
    if (nn_graph_compile(g, &cd) != NN_OK) return fail(ctx, "compile");
    if (nn_graph_load_safetensors(g, argv[2], 0) != NN_OK) return fail(ctx, "load");
    for (s = 0; s < steps; s++) {
        if (nn_tensor_write(g, x, data + (size_t)s * per, per * 4) != NN_OK ||
            nn_tensor_write(g, y, data + (size_t)(steps + s) * per, per * 4) != NN_OK || nn_graph_step(g) != NN_OK ||
            nn_tensor_read(g, loss, &losses[s], 4) != NN_OK)
            return fail(ctx, "step");
    }
    f = fopen(argv[5], "wb");
    if (!f || fwrite(losses, 4, (size_t)steps, f) != (size_t)steps) return fail(NULL, "cannot write the losses");
    fclose(f);
    if (nn_graph_save_safetensors(g, argv[6]) != NN_OK) return fail(ctx, "save");
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    free(data);
    free(losses);
    return 0;
}

static int put(nn_graph *g, nn_tensor t, FILE *f) {
    int64_t n = 0;
    float *buf;
    int ok;
    if (nn_tensor_numel(g, t, &n) != NN_OK) return 0;
    buf = (float *)malloc((size_t)n * 4);
    ok = buf && nn_tensor_read(g, t, buf, (size_t)n * 4) == NN_OK && fwrite(buf, 4, (size_t)n, f) == (size_t)n;
    free(buf);
    return ok;
}

static int get(nn_graph *g, nn_tensor t, FILE *f) {
    int64_t n = 0;
    float *buf;
    int ok;
    if (nn_tensor_numel(g, t, &n) != NN_OK) return 0;
    buf = (float *)malloc((size_t)n * 4);
    ok = buf && fread(buf, 4, (size_t)n, f) == (size_t)n && nn_tensor_write(g, t, buf, (size_t)n * 4) == NN_OK;
    free(buf);
    return ok;
}

static int layer(int argc, char **argv) {
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_rnn_desc rd;
    nn_tensor x, y, hn = NN_NONE, cn = NN_NONE, ry, rh, rc = NN_NONE, loss;
    const char *kind;
    int L, D, k, d, w, lstm;
    int64_t I, Hn, Tn, Bn;
    FILE *f;
    static const char *wn[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    if (argc != 12) return fail(NULL, "usage: interop_rnn layer KIND L BIDIR I H T B IN INPUTS OUTPUTS");
    kind = argv[2];
    L = atoi(argv[3]);
    D = atoi(argv[4]) ? 2 : 1;
    I = atoll(argv[5]);
    Hn = atoll(argv[6]);
    Tn = atoll(argv[7]);
    Bn = atoll(argv[8]);
    lstm = strcmp(kind, "lstm") == 0;
    if (nn_context_create(NULL, &ctx) != NN_OK || nn_graph_create(ctx, NULL, &g) != NN_OK) return fail(ctx, "create");
    x = nn_input(g, "x", NN_F32, nn_shape3(Tn, Bn, I));
    ry = nn_input(g, "ry", NN_F32, nn_shape3(Tn, Bn, D * Hn));
    rh = nn_input(g, "rh", NN_F32, nn_shape3(L * D, Bn, Hn));
    if (lstm) rc = nn_input(g, "rc", NN_F32, nn_shape3(L * D, Bn, Hn));
    nn_graph_requires_grad(g, x);
    memset(&rd, 0, sizeof rd);
    rd.num_layers = L;
    rd.bidirectional = D == 2;
    rd.h_n = &hn;
    if (lstm) rd.c_n = &cn;
    y = lstm ? nn_lstm(g, x, Hn, &rd, "rnn") : strcmp(kind, "gru") == 0 ? nn_gru(g, x, Hn, &rd, "rnn") : nn_rnn(g, x, Hn, &rd, "rnn");
    loss = nn_add(g, nn_sum(g, nn_mul(g, y, ry)), nn_sum(g, nn_mul(g, hn, rh)));
    if (lstm) loss = nn_add(g, loss, nn_sum(g, nn_mul(g, cn, rc)));
    nn_graph_output(g, y);
    nn_graph_output(g, hn);
    if (lstm) nn_graph_output(g, cn);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.keep_grads = 1;
    cd.optimizer.kind = NN_OPT_NONE; /* gradients only */
    if (nn_graph_compile(g, &cd) != NN_OK) return fail(ctx, "compile");
    if (nn_graph_load_safetensors(g, argv[9], 0) != NN_OK) return fail(ctx, "load");
    f = fopen(argv[10], "rb");
    if (!f || !get(g, x, f) || !get(g, ry, f) || !get(g, rh, f) || (lstm && !get(g, rc, f))) return fail(ctx, "inputs");
    fclose(f);
    if (nn_graph_step(g) != NN_OK) return fail(ctx, "step");
    f = fopen(argv[11], "wb");
    if (!f || !put(g, y, f) || !put(g, hn, f) || (lstm && !put(g, cn, f)) || !put(g, nn_graph_grad(g, x), f))
        return fail(ctx, "outputs");
    for (k = 0; k < L; k++)
        for (d = 0; d < D; d++)
            for (w = 0; w < 4; w++) {
                char name[64];
                snprintf(name, sizeof name, "rnn.%s_l%d%s", wn[w], k, d ? "_reverse" : "");
                if (!put(g, nn_graph_grad(g, nn_graph_find(g, name)), f)) return fail(ctx, name);
            }
    fclose(f);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "char") == 0) return char_lstm(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "layer") == 0) return layer(argc, argv);
    fprintf(stderr, "usage: interop_rnn char IN BATCHES STEPS LOSSES OUT | layer KIND L BIDIR I H T B IN INPUTS OUTPUTS\n");
    return 2;
}
