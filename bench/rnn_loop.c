/* bench/rnn_loop.c - the time loop's representation, measured (HACKING.md, "Recurrent
   layers"): one LSTM layer trained with SGD as nn.h runs it (nn_lstm: the input projection
   as one GEMM, one sequence node per layer-direction that loops over T inside itself), and
   the same network unrolled into graph nodes at build time (nn_lstm_cell once per step,
   its parameters shared by name: per step a GEMM of the input, the sequence node of one
   step, its slices). Same math, same parameters' shapes.

       make bench/rnn_loop && ./bench/rnn_loop [T B I H steps]     (NN_DEVICE picks the backend)

   Prints one line per variant: RNN_LOOP variant=seq|unrolled device=D ms_per_step=X
   tokens_per_sec=X launches_per_step=X nodes=N compile_ms=X */
#define NN_IMPLEMENTATION
#include "nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int run(nn_context *ctx, int unrolled, int T, int B, int I, int H, int steps) {
    nn_graph *g = NULL;
    nn_tensor x, y, loss;
    nn_compile_desc cd;
    nn_stats s0, s1;
    nn_device_info dev;
    float *xs = (float *)malloc(sizeof(float) * (size_t)T * B * I);
    double t0, t1, tc;
    int i;
    for (i = 0; i < T * B * I; i++) xs[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    if (nn_graph_create(ctx, NULL, &g) != NN_OK) return 1;
    x = nn_input(g, "x", NN_F32, nn_shape3(T, B, I));
    if (!unrolled) {
        y = nn_lstm(g, x, H, NULL, "lstm");
    } else {
        nn_tensor h = NN_NONE, c = NN_NONE, *hs = (nn_tensor *)malloc(sizeof(nn_tensor) * (size_t)T);
        for (i = 0; i < T; i++) {
            nn_tensor xt = nn_reshape(g, nn_slice(g, x, 0, i, 1), nn_shape2(B, I)), cn;
            h = nn_lstm_cell(g, xt, h, c, H, NULL, "lstm", &cn);
            c = cn;
            hs[i] = nn_reshape(g, h, nn_shape3(1, B, H));
        }
        y = nn_concat(g, hs, T, 0);
        free(hs);
    }
    loss = nn_mean(g, nn_mul(g, y, y));
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.01f;
    tc = now_ms();
    if (nn_graph_compile(g, &cd) != NN_OK) {
        fprintf(stderr, "rnn_loop: %s\n", nn_context_last_error(ctx));
        return 1;
    }
    tc = now_ms() - tc;
    nn_tensor_write(g, x, xs, sizeof(float) * (size_t)T * B * I);
    for (i = 0; i < 3; i++) nn_graph_step(g); /* warm-up */
    nn_graph_finish(g);
    nn_context_stats(ctx, &s0);
    t0 = now_ms();
    for (i = 0; i < steps; i++) nn_graph_step(g);
    nn_graph_finish(g);
    t1 = now_ms();
    nn_context_stats(ctx, &s1);
    nn_context_device(ctx, &dev);
    printf("RNN_LOOP variant=%s device=\"%s\" T=%d B=%d I=%d H=%d ms_per_step=%.3f tokens_per_sec=%.0f launches_per_step=%.1f h2d_bytes_per_step=%.0f d2h_bytes_per_step=%.0f compile_ms=%.0f\n",
           unrolled ? "unrolled" : "seq", dev.name, T, B, I, H, (t1 - t0) / steps, (double)T * B * steps / ((t1 - t0) / 1e3),
           (double)(s1.kernel_launches - s0.kernel_launches) / steps,
           (double)(s1.h2d_bytes - s0.h2d_bytes) / steps, (double)(s1.d2h_bytes - s0.d2h_bytes) / steps, tc);
    nn_graph_destroy(g);
    free(xs);
    return 0;
}

int main(int argc, char **argv) {
    int T = argc > 1 ? atoi(argv[1]) : 64, B = argc > 2 ? atoi(argv[2]) : 32, I = argc > 3 ? atoi(argv[3]) : 32;
    int H = argc > 4 ? atoi(argv[4]) : 128, steps = argc > 5 ? atoi(argv[5]) : 20, r, rc = 0;
    nn_context *ctx = NULL;
    if (nn_context_create(NULL, &ctx) != NN_OK) return 1;
    for (r = 0; r < 2; r++) { /* interleaved rounds */
        rc |= run(ctx, 0, T, B, I, H, steps);
        rc |= run(ctx, 1, T, B, I, H, steps);
    }
    nn_context_destroy(ctx);
    return rc;
}
