/* dist_bench.c - time per training step of examples/fashion_mnist_cnn.c's network (batch 64
   per rank, Adam, random images) data-parallel over MPI, against the same graph on this
   rank alone (data_parallel = NN_ZERO), interleaved in rounds so that both see the same
   load. Build and run (make dist-bench does both):
       mpicc -O2 -I. -DNN_MPI bench/dist_bench.c -o bench/dist_bench -lm -lpthread
       NN_THREADS=1 mpirun -np 2 ./bench/dist_bench [ROUNDS] [STEPS]
   Prints, per rank count, the median over rounds of the ms per step of each mode, and
   their ratio (local / data-parallel: the scaling efficiency at this per-rank batch); with
   -np 1 the data-parallel graph is the local one (one rank is never data-parallel). With 2
   ranks or more it also measures the link between ranks 0 and 1 (ping-pong: latency of 8
   bytes, bandwidth of 16 MB) and prints the scaling model's predictions (MODEL lines).
   DIST_MODEL=gpt: examples/tiny_gpt.c's model and step instead (vocabulary 96, context 64,
   4 layers, width 128, 4 heads, batch 16 windows per rank, AdamW lr 3e-4; random tokens
   written per step in place of the example's gather from the text); DIST_ZERO=1: the
   data-parallel graph with zero_stage 1. */
#define NN_IMPLEMENTATION
#define NN_MPI
#include "nn.h"
#include "models.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64

static int gpt_; /* DIST_MODEL=gpt */
#define GB 16
#define GT 64

static nn_graph *build(nn_context *ctx, int dp, nn_tensor *x, nn_tensor *y) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor h;
    if (nn_graph_create(ctx, NULL, &g) != NN_OK) return NULL;
    memset(&cd, 0, sizeof cd);
    cd.zero_stage = dp && getenv("DIST_ZERO") && atoi(getenv("DIST_ZERO")) == 1;
    if (gpt_) { /* examples/tiny_gpt.c's model */
        nn_gpt_config gc;
        memset(&gc, 0, sizeof gc);
        gc.vocab_size = 96;
        gc.block_size = GT;
        gc.n_layer = 4;
        gc.n_head = 4;
        gc.n_embd = 128;
        *x = nn_input(g, "x", NN_I32, nn_shape2(GB, GT));
        *y = nn_input(g, "y", NN_I32, nn_shape1(GB * GT));
        cd.loss = nn_softmax_cross_entropy(g, nn_gpt(g, *x, &gc), *y);
        cd.optimizer.kind = NN_OPT_ADAMW;
        cd.optimizer.lr = 3e-4f;
        cd.data_parallel = dp ? 0 : NN_ZERO;
        if (nn_graph_compile(g, &cd) != NN_OK) {
            nn_graph_destroy(g);
            return NULL;
        }
        return g;
    }
    *x = nn_input(g, "x", NN_F32, nn_shape4(BATCH, 1, 28, 28));
    *y = nn_input(g, "y", NN_I32, nn_shape1(BATCH));
    h = cnn_block(g, *x, 32, "conv1", "bn1");
    h = cnn_block(g, h, 64, "conv2", "bn2");
    h = nn_relu(g, nn_linear_layer(g, nn_flatten(g, h), 128, NULL, "fc1"));
    h = nn_dropout(g, h, 0.25f);
    h = nn_linear_layer(g, h, 10, NULL, "fc2");
    cd.loss = nn_softmax_cross_entropy(g, h, *y);
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.data_parallel = dp ? 0 : NN_ZERO;
    if (nn_graph_compile(g, &cd) != NN_OK) {
        nn_graph_destroy(g);
        return NULL;
    }
    return g;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ms per step over steps steps (after the ranks meet) */
static double run(nn_graph *g, nn_tensor x, nn_tensor y, int steps, float *xs, int32_t *ys) {
    double t0;
    int s;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (s = 0; s < steps; s++)
        if ((gpt_ ? nn_tensor_write(g, x, ys, GB * GT * 4) != NN_OK || nn_tensor_write(g, y, ys + GB, GB * GT * 4) != NN_OK
                  : nn_tensor_write(g, x, xs, (size_t)BATCH * 784 * 4) != NN_OK || nn_tensor_write(g, y, ys, BATCH * 4) != NN_OK) ||
            nn_graph_step(g) != NN_OK) {
            fprintf(stderr, "dist_bench: step failed\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    nn_graph_finish(g);
    return (MPI_Wtime() - t0) * 1e3 / steps;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 5, steps = argc > 2 ? atoi(argv[2]) : 20, rank = 0, size = 1, i, k;
    nn_context *ctx;
    nn_graph *gd, *gl;
    nn_tensor xd, yd, xl, yl;
    float *xs = (float *)malloc((size_t)BATCH * 784 * sizeof(float));
    int32_t ys[GB * GT + GB]; /* the CNN's labels; the GPT's tokens (x the first B x T, y from B on) */
    double *td = (double *)malloc(sizeof(double) * (size_t)(rounds > 0 ? rounds : 1)), *tl = (double *)malloc(sizeof(double) * (size_t)(rounds > 0 ? rounds : 1));
    int provided = 0;
    double comm = 0.0, wait = 0.0, P = 0.0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    nn_dist_init(NULL);
    nn_dist_rank(&rank);
    nn_dist_size(&size);
    if (nn_context_create(NULL, &ctx) != NN_OK || !xs || !td || !tl || rounds < 1 || steps < 1) return 1;
    for (i = 0; i < BATCH * 784; i++) xs[i] = (float)((i * 7919 + rank * 31) % 255) / 255.0f;
    gpt_ = getenv("DIST_MODEL") && strcmp(getenv("DIST_MODEL"), "gpt") == 0;
    for (i = 0; i < GB * GT + GB; i++) ys[i] = gpt_ ? (i * 7 + rank * 13) % 96 : (i * 3 + rank) % 10;
    gd = build(ctx, 1, &xd, &yd);
    gl = build(ctx, 0, &xl, &yl);
    if (!gd || !gl) {
        fprintf(stderr, "dist_bench: %s\n", nn_context_last_error(ctx));
        return 1;
    }
    run(gd, xd, yd, 2, xs, ys); /* warm-up */
    run(gl, xl, yl, 2, xs, ys);
    for (k = 0; k < rounds; k++) { /* interleaved: the same load on both */
        if (k % 2 == 0) {
            td[k] = run(gd, xd, yd, steps, xs, ys);
            tl[k] = run(gl, xl, yl, steps, xs, ys);
        } else {
            tl[k] = run(gl, xl, yl, steps, xs, ys);
            td[k] = run(gd, xd, yd, steps, xs, ys);
        }
    }
    qsort(td, (size_t)rounds, sizeof *td, cmp);
    qsort(tl, (size_t)rounds, sizeof *tl, cmp);
    {
        nn_dist_stats st;
        nn_graph_dist_stats(gd, &st);
        comm = st.comm_seconds;
        wait = st.wait_seconds;
        P = (double)st.gradient_bytes / 4.0; /* the gradients' floats (the CNN: 421,834) */
    }
    if (size >= 2 && rank < 2) { /* the scaling model's inputs: ping-pong between ranks 0 and 1 */
        static float buf[4 << 20]; /* 16 MB */
        int reps[2] = {1000, 10}, bytes[2] = {8, (int)sizeof buf}, j, q;
        double lat = 0.0, bw = 0.0;
        for (q = 0; q < 2; q++) {
            double t0;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (j = 0; j < reps[q]; j++) {
                if (rank == 0) {
                    MPI_Send(buf, bytes[q], MPI_BYTE, 1, 9, MPI_COMM_WORLD);
                    MPI_Recv(buf, bytes[q], MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, bytes[q], MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, bytes[q], MPI_BYTE, 0, 9, MPI_COMM_WORLD);
                }
            }
            if (q == 0) lat = (MPI_Wtime() - t0) / (2.0 * reps[q]);
            else bw = (double)bytes[q] / ((MPI_Wtime() - t0) / (2.0 * reps[q]) - lat);
        }
        if (rank == 0) {
            /* The model: each rank sends N-1 slices of P/N floats twice (reduce-scatter,
               all-gather) through one link: T(N) = 2 (N-1) (alpha + 4 P / (N beta)); the
               step is the compute time plus the part of T not hidden (the share measured
               here). Compute: this run's local step. */
            double tc = tl[rounds / 2] * 1e-3, hid = comm > 0.0 ? 1.0 - wait / comm : 0.0;
            static const double gbps[2] = {25.0, 100.0};
            static const int ranks[2] = {8, 64};
            int a, c;
            printf("LINK loopback latency_us=%.2f bandwidth_GBps=%.2f\n", lat * 1e6, bw * 1e-9);
            for (a = 0; a < 2; a++)
                for (c = 0; c < 2; c++) {
                    double n = ranks[c], t = 2.0 * (n - 1.0) * (5e-6 + 4.0 * P / (n * gbps[a] * 1e9 / 8.0));
                    printf("MODEL %s params=%.0f ranks=%d link=%.0fGb/s alpha=5us comm_ms=%.2f compute_ms=%.1f "
                           "efficiency_no_overlap=%.3f efficiency_overlap=%.3f\n",
                           gpt_ ? "gpt" : "cnn", P, ranks[c], gbps[a], t * 1e3, tc * 1e3, tc / (tc + t),
                           tc / (tc + (1.0 - hid) * t));
                }
        }
    }
    if (rank == 0)
        printf("DIST model=%s zero=%d ranks=%d batch_per_rank=%d rounds=%d steps=%d local_ms_per_step=%.2f dp_ms_per_step=%.2f "
               "efficiency=%.3f reduce_ms_per_step=%.2f waited_ms_per_step=%.2f hidden=%.2f\n",
               gpt_ ? "gpt" : "cnn", getenv("DIST_ZERO") ? atoi(getenv("DIST_ZERO")) : 0, size, gpt_ ? GB : BATCH, rounds, steps, tl[rounds / 2], td[rounds / 2], tl[rounds / 2] / td[rounds / 2],
               comm * 1e3 / (rounds * steps + 2), wait * 1e3 / (rounds * steps + 2), comm > 0.0 ? 1.0 - wait / comm : 0.0);
    nn_graph_destroy(gd);
    nn_graph_destroy(gl);
    nn_context_destroy(ctx);
    free(xs);
    free(td);
    free(tl);
    MPI_Finalize();
    return 0;
}
