/* Activation recompute (nn_checkpoint_begin/end, one segment per transformer block) against
   keeping every activation, on a GPT built of nn_gpt_block (the embeddings' sum is the
   input x [B, T, C], then the blocks, ln_f and the lm head, cross-entropy, AdamW):

     ./bench/recompute_bench plan   the memory plan of GPT-2 small (12 layers, 12 heads,
                                    768 wide, vocab 50257, B 8, T 1024) from nn_graph_memory,
                                    read from a compile refused by memory_limit (nothing is
                                    allocated beyond the parameters' host copies)
     ./bench/recompute_bench time [ROUNDS]   ms per training step of a small GPT (4 layers,
                                    4 heads, 256 wide, vocab 512, B 8, T 128) with and
                                    without recompute, interleaved rounds, medians, on the
                                    context's backend (NN_DEVICE) */
#define NN_IMPLEMENTATION
#include "nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape { int64_t vocab, C, T, B; int L, H; } shape;

static nn_graph *build(nn_context *ctx, const shape *s, int recompute, int64_t limit, nn_result *rc) {
    nn_graph *g = NULL;
    nn_gpt_config cfg;
    nn_compile_desc cd;
    nn_linear_desc ld;
    nn_tensor x, y, h;
    int i;
    if (nn_graph_create(ctx, NULL, &g) != NN_OK) return NULL;
    memset(&cfg, 0, sizeof cfg);
    cfg.vocab_size = s->vocab;
    cfg.block_size = s->T;
    cfg.n_layer = s->L;
    cfg.n_head = s->H;
    cfg.n_embd = s->C;
    x = nn_input(g, "x", NN_F32, nn_shape3(s->B, s->T, s->C));
    y = nn_input(g, "targets", NN_I32, nn_shape1(s->B * s->T));
    h = x;
    for (i = 0; i < s->L; i++) {
        char name[32];
        snprintf(name, sizeof name, "h.%d", i);
        if (recompute) nn_checkpoint_begin(g);
        h = nn_gpt_block(g, h, &cfg, name);
        if (recompute) nn_checkpoint_end(g);
    }
    h = nn_reshape(g, nn_layer_norm_layer(g, h, 1, NULL, "ln_f"), nn_shape2(s->B * s->T, s->C));
    memset(&ld, 0, sizeof ld);
    ld.no_bias = 1;
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_softmax_cross_entropy(g, nn_linear_layer(g, h, s->vocab, &ld, "lm_head"), y);
    cd.optimizer.kind = NN_OPT_ADAMW;
    cd.optimizer.lr = 1e-4f;
    cd.memory_limit = limit;
    *rc = nn_graph_compile(g, &cd);
    return g;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void print_mem(const char *what, const nn_memory_report *m) {
    printf("%-18s activations %7.1f MiB  gradients %7.1f MiB  parameters %6.1f MiB  optimizer %6.1f MiB  "
           "peak %7.1f MiB  arena %7.1f MiB  allocated %7.1f MiB\n",
           what, m->activations / 1048576.0, m->gradients / 1048576.0, m->parameters / 1048576.0,
           m->optimizer_state / 1048576.0, m->peak / 1048576.0, m->arena / 1048576.0, m->allocated / 1048576.0);
}

int main(int argc, char **argv) {
    nn_context *ctx = NULL;
    nn_memory_report m[2];
    int k;
    if (argc < 2 || (strcmp(argv[1], "plan") != 0 && strcmp(argv[1], "time") != 0)) {
        fprintf(stderr, "usage: %s plan | time [ROUNDS]\n", argv[0]);
        return 2;
    }
    if (nn_context_create(NULL, &ctx) != NN_OK) {
        fprintf(stderr, "no context: %s\n", nn_context_last_error(NULL));
        return 1;
    }
    {
        nn_device_info d;
        nn_context_device(ctx, &d);
        printf("device: %s\n", d.name);
    }
    if (strcmp(argv[1], "plan") == 0) {
        shape s = {50257, 768, 1024, 8, 12, 12};
        printf("GPT-2 small: %d layers, %d heads, %lld wide, vocab %lld, B %lld, T %lld; the plan only\n", s.L, s.H,
               (long long)s.C, (long long)s.vocab, (long long)s.B, (long long)s.T);
        for (k = 0; k < 2; k++) {
            nn_result rc = NN_OK;
            nn_graph *g = build(ctx, &s, k, 1, &rc);
            if (!g || rc != NN_ERR_OUT_OF_MEMORY || nn_graph_memory(g, &m[k]) != NN_OK) {
                fprintf(stderr, "plan failed: %s\n", nn_context_last_error(ctx));
                return 1;
            }
            print_mem(k ? "recompute blocks" : "keep everything", &m[k]);
            nn_graph_destroy(g);
        }
        printf("with recompute: activations %.1f%%, peak %.1f%%, allocated %.1f%% of keeping everything\n",
               100.0 * m[1].activations / m[0].activations, 100.0 * m[1].peak / m[0].peak, 100.0 * m[1].allocated / m[0].allocated);
    } else {
        shape s = {512, 256, 128, 8, 4, 4};
        int rounds = argc > 2 ? atoi(argv[2]) : 5, r, i, steps = 5;
        double t[2][64];
        nn_graph *g[2];
        float *X = (float *)malloc((size_t)(s.B * s.T * s.C) * 4);
        int32_t *Y = (int32_t *)malloc((size_t)(s.B * s.T) * 4);
        if (rounds < 1 || rounds > 64) rounds = 5;
        for (i = 0; i < s.B * s.T * s.C; i++) X[i] = (float)((i * 31 % 199) - 99) / 99.0f;
        for (i = 0; i < s.B * s.T; i++) Y[i] = i * 7 % (int)s.vocab;
        for (k = 0; k < 2; k++) {
            nn_result rc = NN_OK;
            g[k] = build(ctx, &s, k, 0, &rc);
            if (!g[k] || rc != NN_OK || nn_graph_memory(g[k], &m[k]) != NN_OK) {
                fprintf(stderr, "compile failed: %s\n", nn_context_last_error(ctx));
                return 1;
            }
            nn_tensor_write(g[k], nn_graph_find(g[k], "x"), X, (size_t)(s.B * s.T * s.C) * 4);
            nn_tensor_write(g[k], nn_graph_find(g[k], "targets"), Y, (size_t)(s.B * s.T) * 4);
            nn_graph_step(g[k]); /* warm-up */
            nn_graph_finish(g[k]);
        }
        for (r = 0; r < rounds; r++)
            for (k = 0; k < 2; k++) {
                double t0 = now_ms();
                for (i = 0; i < steps; i++) nn_graph_step(g[k]);
                nn_graph_finish(g[k]);
                t[k][r] = (now_ms() - t0) / steps;
            }
        printf("small GPT: %d layers, %d heads, %lld wide, vocab %lld, B %lld, T %lld; %d rounds of %d steps, medians\n", s.L,
               s.H, (long long)s.C, (long long)s.vocab, (long long)s.B, (long long)s.T, rounds, steps);
        for (k = 0; k < 2; k++) {
            qsort(t[k], (size_t)rounds, sizeof t[k][0], cmp);
            print_mem(k ? "recompute blocks" : "keep everything", &m[k]);
            printf("%-18s %.1f ms/step\n", "", t[k][rounds / 2]);
        }
        printf("recompute: %.2fx the step time, activations %.1f%%, peak %.1f%%\n", t[1][rounds / 2] / t[0][rounds / 2],
               100.0 * m[1].activations / m[0].activations, 100.0 * m[1].peak / m[0].peak);
        for (k = 0; k < 2; k++) nn_graph_destroy(g[k]);
        free(X);
        free(Y);
    }
    nn_context_destroy(ctx);
    return 0;
}
