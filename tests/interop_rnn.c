/* The nn.h half of tests/interop_rnn.py (`make interop`): examples/char_lstm.c's model
   (embedding 96 x 32, nn_lstm 128 batch_first, linear head to 96; PyTorch's names
   embedding.weight, lstm.weight_ih_l0 ..., head.weight, head.bias).

     interop_rnn char IN.safetensors BATCHES STEPS LOSSES OUT.safetensors
         loads the weights, trains STEPS Adam steps (lr 1e-3) on the batches of 32 windows of
         64 in BATCHES (raw little-endian int32: STEPS*32*64 inputs, then STEPS*32*64
         targets), writes the loss of each step (float32, before its update) to LOSSES and
         the final weights to OUT */
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

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "char") == 0) return char_lstm(argc, argv);
    fprintf(stderr, "usage: interop_rnn char IN BATCHES STEPS LOSSES OUT\n");
    return 2;
}
