/* libFuzzer target for the training-state loader (nn_graph_load_state): `make fuzz` (clang,
   -DNN_FUZZ). Each input is loaded from memory into three compiled graphs whose states
   differ in kind (Adam with a shuffling dataset; SGD with momentum, gradient accumulation
   and a dataset; NAdam, whose state has a fractional number in its metadata). A load that
   succeeds must leave every dataset at a position its epoch has, and the graph must then
   take a step.
   NN_FUZZ_WRITE_SEEDS=DIR ./tests/fuzz_state writes the seed corpus (the library's own
   states of these graphs, and a few broken ones) into DIR and exits.
   Without -DNN_FUZZ this file is empty, so the test binary (which compiles every tests/ C file) ignores it. */
#if defined(NN_FUZZ)
#define NN_IMPLEMENTATION
#include "../nn.h"
#include "fuzz.h"

#define FZ_GRAPHS 3
static nn_graph *fz_g[FZ_GRAPHS];
static nn_dataset *fz_ds[FZ_GRAPHS];

/* 8 samples of 3 features, 2 classes -> fc1 (4) -> relu -> fc2 (2), batch 4. */
static nn_graph *fz_build(int kind, nn_dataset **ds) {
    static const float x[24] = {0.5f, -1, 2, 0.25f, 1.5f, -0.75f, 1, 0, -2, 0.125f, 3, -1.25f,
                                -0.5f, 1, -2, 0.75f, -1.5f, 0.25f, 2, 1, 0, -0.125f, -3, 1.25f};
    static const int32_t y[8] = {0, 1, 1, 0, 1, 0, 0, 1};
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_dataset_desc dd;
    nn_compile_desc cd;
    nn_array ax, ay;
    nn_tensor h;
    memset(&gd, 0, sizeof gd);
    gd.seed = 11 + (uint64_t)kind;
    if (nn_graph_create(fz_ctx, &gd, &g) != NN_OK) return NULL;
    memset(&ax, 0, sizeof ax);
    memset(&ay, 0, sizeof ay);
    ax.dtype = NN_F32;
    ax.shape = nn_shape2(8, 3);
    ax.data = (void *)x;
    ay.dtype = NN_I32;
    ay.shape = nn_shape1(8);
    ay.data = (void *)y;
    memset(&dd, 0, sizeof dd);
    dd.name = "train";
    dd.x = &ax;
    dd.y = &ay;
    dd.batch = 4;
    dd.shuffle = kind != 2;
    if (nn_dataset_create(g, &dd, ds) != NN_OK) return NULL;
    h = nn_relu(g, nn_linear_layer(g, nn_dataset_x(*ds), 4, NULL, "fc1"));
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_softmax_cross_entropy(g, nn_linear_layer(g, h, 2, NULL, "fc2"), nn_dataset_y(*ds));
    cd.optimizer.lr = 0.01f;
    cd.optimizer.kind = kind == 0 ? NN_OPT_ADAM : kind == 1 ? NN_OPT_SGD : NN_OPT_NADAM;
    if (kind == 1) {
        cd.optimizer.momentum = 0.9f;
        cd.optimizer.accumulate_steps = 2;
    }
    if (nn_graph_compile(g, &cd) != NN_OK) return NULL;
    return g;
}

/* Replaces the first occurrence of from by to (same length) in b[0..n). */
static void fz_patch(unsigned char *b, size_t n, const char *from, const char *to) {
    size_t k = strlen(from), i;
    for (i = 0; i + k <= n; i++)
        if (memcmp(b + i, from, k) == 0) {
            memcpy(b + i, to, k);
            return;
        }
}

/* The seed corpus: each graph's state after 3 steps, a parameter file that is not a state,
   and broken states (cut short, wrong version, a position past its epoch, a bad number). */
static int fz_write_seeds(const char *dir) {
    char path[1024];
    int k;
    for (k = 0; k < FZ_GRAPHS; k++) {
        unsigned char *b = NULL;
        size_t n = 0;
        char name[64];
        int i;
        for (i = 0; i < 3; i++)
            if (nn_dataset_next_batch(fz_ds[k]) != NN_OK || nn_graph_step(fz_g[k]) != NN_OK) return 0;
        snprintf(path, sizeof path, "%s/state_%d.safetensors", dir, k);
        if (nn_graph_save_state(fz_g[k], path) != NN_OK || nn__read_file(fz_ctx, path, &b, &n) != NN_OK) return 0;
        if (k == 0) {
            unsigned char *c = (unsigned char *)malloc(n);
            if (!c) return 0;
            memcpy(c, b, n);
            fz_write(dir, "bad_cut.safetensors", c, n / 2);
            fz_patch(c, n, "\"nn.state\":\"1\"", "\"nn.state\":\"2\"");
            fz_write(dir, "bad_version.safetensors", c, n);
            memcpy(c, b, n);
            fz_patch(c, n, "position\":\"1\"", "position\":\"9\"");
            fz_write(dir, "bad_position.safetensors", c, n);
            memcpy(c, b, n);
            fz_patch(c, n, "\"nn.step\":\"3\"", "\"nn.step\":\"x\"");
            fz_write(dir, "bad_step.safetensors", c, n);
            free(c);
        }
        if (k == 2) {
            fz_patch(b, n, "product\":\"0.", "product\":\"0,");
            fz_write(dir, "comma_mu.safetensors", b, n);
        }
        NN_FREE(b);
        snprintf(name, sizeof name, "params_%d.safetensors", k);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (nn_graph_save_safetensors(fz_g[k], path) != NN_OK) return 0;
    }
    return 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    int k;
    (void)argc;
    (void)argv;
    if (!fz_context()) return 1;
    for (k = 0; k < FZ_GRAPHS; k++) fz_g[k] = fz_build(k, &fz_ds[k]);
    for (k = 0; k < FZ_GRAPHS; k++)
        if (!fz_g[k]) {
            fprintf(stderr, "fuzz_state: cannot build graph %d: %s\n", k, nn_context_last_error(fz_ctx));
            exit(1);
        }
    fz_seeds("fuzz_state", fz_write_seeds);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int k;
    for (k = 0; k < FZ_GRAPHS; k++) {
        nn_graph *g = fz_g[k];
        nn_result r = nn__load_state_mem(g, "fuzz-input", data, size);
        if (r == NN_OK) {
            nn_dataset *d = fz_ds[k];
            fz_check(d->pos >= 0 && d->pos <= d->per_epoch && d->epoch >= 0 && g->clock.t <= g->step);
            fz_check(nn_dataset_next_batch(d) == NN_OK);
            nn_graph_step(g); /* any numbers the file held: no crash */
            nn_graph_finish(g);
        } else {
            fz_check(r == NN_ERR_IO || r == NN_ERR_STATE || r == NN_ERR_SHAPE || r == NN_ERR_OUT_OF_MEMORY);
            fz_check(nn_context_last_error(fz_ctx)[0] != 0);
        }
    }
    return 0;
}
#else
typedef int nn_fuzz_state_needs_NN_FUZZ; /* ISO C wants a declaration in every file */
#endif
