/* rnn_bench.c - training tokens/s of recurrent language models (bench/run.sh FIGURES=rnn,
   make bench-rnn), beside bench/char_lstm_torch.py's PyTorch runs of the same models.

   Usage: bench/rnn_bench train DEVICE MODEL     (DEVICE as NN_DEVICE names one, NAME its
                                                 name as `nn_bench devices` prints it; MODEL:
                                                 char, lstm512 or gru512)
   Prints: BENCH name=rnn_train backend=NAME model=M batch=B seq=S tokens_per_sec=X
           launches_per_timestep=X
   Models (vocabulary 96 embedding -> recurrent layers -> linear head to 96, cross entropy,
   Adam lr 1e-3):
     char     embedding 32, nn_lstm hidden 128, batch 32, sequence 64 (examples/char_lstm.c)
     lstm512  embedding 512, nn_lstm 2 layers of 512, batch 64, sequence 128
     gru512   the same with nn_gru
   Each step writes that step's random tokens and targets (B * S int32 each; the example
   keeps its text on the device and writes 384 bytes a step instead) and runs nn_graph_step;
   the loss is read once at the end. 3 warm-up steps, then >= 5 steps and >= 2 s.
   launches_per_timestep: nn_context_stats' kernel_launches per step / S (on the CPU backend
   the counter counts op runs). */
#define _POSIX_C_SOURCE 200809L
#define NN_IMPLEMENTATION
#include "nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define V 96

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int die(nn_context *ctx, const char *what) {
    fprintf(stderr, "rnn_bench: %s: %s\n", what, ctx ? nn_context_last_error(ctx) : "");
    return 1;
}

int main(int argc, char **argv) {
    nn_context_desc cdesc;
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_rnn_desc rd;
    nn_init emb_init = {NN_INIT_NORMAL, 0.0f, 1.0f};
    nn_tensor x, y, emb, h, logits, loss;
    nn_stats s0, s1;
    int64_t E, Hd, L, B, S, i, steps = 0;
    int gru;
    int32_t *xs, *ys;
    uint32_t rng = 12345;
    double t0 = 0, dt;
    float lv;
    char devname[128];
    long fixed = getenv("BENCH_STEPS") ? atol(getenv("BENCH_STEPS")) : 0; /* bench/cycles.sh */

    if (argc != 4 || strcmp(argv[1], "train") != 0) {
        fprintf(stderr, "usage: rnn_bench train DEVICE char|lstm512|gru512\n");
        return 2;
    }
    if (strcmp(argv[3], "char") == 0) {
        E = 32, Hd = 128, L = 1, B = 32, S = 64, gru = 0;
    } else if (strcmp(argv[3], "lstm512") == 0 || strcmp(argv[3], "gru512") == 0) {
        E = 512, Hd = 512, L = 2, B = 64, S = 128, gru = argv[3][0] == 'g';
    } else {
        fprintf(stderr, "rnn_bench: unknown model '%s'\n", argv[3]);
        return 2;
    }
    memset(&cdesc, 0, sizeof cdesc);
    cdesc.device = argv[2];
    if (nn_context_create(&cdesc, &ctx) != NN_OK) return die(NULL, "nn_context_create");
    {
        nn_device_info dev;
        nn_context_device(ctx, &dev);
        snprintf(devname, sizeof devname, "%s", dev.name);
        for (i = 0; devname[i]; i++)
            if (devname[i] == ' ' || devname[i] == '\t' || devname[i] == '=') devname[i] = '_';
    }
    if (nn_graph_create(ctx, NULL, &g) != NN_OK) return die(ctx, "nn_graph_create");
    x = nn_input(g, "x", NN_I32, nn_shape1(B * S));
    y = nn_input(g, "y", NN_I32, nn_shape1(B * S));
    emb = nn_param(g, "embedding.weight", nn_shape2(V, E), emb_init);
    memset(&rd, 0, sizeof rd);
    rd.batch_first = 1;
    rd.num_layers = (int)L;
    h = nn_reshape(g, nn_index_select(g, emb, 0, x), nn_shape3(B, S, E));
    h = gru ? nn_gru(g, h, Hd, &rd, "rnn") : nn_lstm(g, h, Hd, &rd, "rnn");
    logits = nn_linear_layer(g, nn_reshape(g, h, nn_shape2(B * S, Hd)), V, NULL, "head");
    loss = nn_cross_entropy_loss(g, logits, y, NULL);
    nn_graph_output(g, loss);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-3f;
    if (nn_graph_compile(g, &cd) != NN_OK) return die(ctx, "compile");
    xs = (int32_t *)malloc((size_t)(B * S) * 4);
    ys = (int32_t *)malloc((size_t)(B * S) * 4);
    if (!xs || !ys) return die(ctx, "out of memory");
    for (;;) {
        for (i = 0; i < B * S; i++) {
            rng = rng * 1664525u + 1013904223u;
            xs[i] = (int32_t)((rng >> 8) % V);
            rng = rng * 1664525u + 1013904223u;
            ys[i] = (int32_t)((rng >> 8) % V);
        }
        if (nn_tensor_write(g, x, xs, (size_t)(B * S) * 4) != NN_OK || nn_tensor_write(g, y, ys, (size_t)(B * S) * 4) != NN_OK ||
            nn_graph_step(g) != NN_OK)
            return die(ctx, "step");
        steps++;
        if (steps == 3) {
            if (nn_graph_finish(g) != NN_OK) return die(ctx, "finish");
            nn_context_stats(ctx, &s0);
            t0 = now();
        }
        if (fixed > 0 ? steps >= 3 + fixed : steps >= 8 && now() - t0 >= 2.0) break;
    }
    if (nn_tensor_read(g, loss, &lv, 4) != NN_OK) return die(ctx, "read");
    dt = now() - t0;
    nn_context_stats(ctx, &s1);
    printf("BENCH name=rnn_train backend=%s model=%s batch=%lld seq=%lld tokens_per_sec=%.1f launches_per_timestep=%.2f\n",
           devname, argv[3], (long long)B, (long long)S, (double)(steps - 3) * B * S / dt,
           (double)(s1.kernel_launches - s0.kernel_launches) / (double)(steps - 3) / (double)S);
    free(xs);
    free(ys);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return 0;
}
