/* tools/init_hash: prints hashes that `make check-determinism` compares between builds made
   with different compilers and flags (gcc and clang, -O0 to -O3, with and without
   -march=native and -ffp-contract=fast): the same seed and data must give the same bits
   everywhere, so that a checkpoint written by one build resumes bit for bit in another.
     init      the initial values of every init kind and of the layers that create parameters
     mlp_adam  the MLP's weights and losses over 10 Adam steps
     mlp_adamw the same with AdamW, gradient clipping by norm and by value
     cnn_adam  the CNN's (conv, depthwise conv, batch norm, pools, dropout) over 10 Adam steps
   on the CPU backend with 2 threads, on synthetic data made of exact integer ratios. A last
   word "fused" says the CPU backend logged that this build fuses multiply-adds against
   nn.h's pragmas (clang's -ffp-contract=fast, -ffast-math): its hashes then differ. */
#define NN_IMPLEMENTATION
#include "nn.h"
#include <stdio.h>
#include <string.h>

static unsigned long long hash_floats(unsigned long long h, const float *x, long n) {
    const unsigned char *b = (const unsigned char *)x;
    long i;
    for (i = 0; i < n * 4; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static float buf[1 << 16];

static long numel(nn_graph *g, nn_tensor t) {
    int64_t m = 0;
    return nn_tensor_numel(g, t, &m) == NN_OK ? (long)m : -1;
}
static int fused; /* the CPU backend said this build fuses multiply-adds */

static void on_log(void *user, nn_log_level level, const char *message) {
    (void)user;
    if (strstr(message, "multiply-adds fused")) fused = 1;
    else if (level <= NN_LOG_WARN) fprintf(stderr, "%s\n", message);
}

static nn_context *open_cpu(void) {
    nn_context_desc cd;
    nn_context *ctx = NULL;
    memset(&cd, 0, sizeof cd);
    cd.device = "cpu";
    cd.threads = 2;
    cd.log = on_log;
    cd.log_level = NN_LOG_INFO;
    return nn_context_create(&cd, &ctx) == NN_OK ? ctx : NULL;
}

/* Hashes the named parameters; 0 (and a message) when one cannot be read. */
static unsigned long long hash_params(nn_graph *g, unsigned long long h, const char *const *names) {
    for (; *names; names++) {
        nn_tensor p = nn_graph_find(g, *names);
        long m = numel(g, p);
        if (m <= 0 || m > (long)(sizeof buf / sizeof buf[0]) || nn_tensor_read(g, p, buf, (size_t)m * 4) != NN_OK) {
            printf("cannot read %s\n", *names);
            return 0;
        }
        h = hash_floats(h, buf, m);
    }
    return h;
}

static unsigned long long init_hash(void) {
    nn_context *ctx = open_cpu();
    nn_graph *g = NULL;
    nn_compile_desc c;
    unsigned long long h = 1469598103934665603ULL;
    static const char *const names[] = {"conv.weight", "conv.bias", "fc.weight", "fc.bias", NULL};
    nn_tensor t[16], x;
    int n = 0, k;
    if (!ctx || nn_graph_create(ctx, NULL, &g) != NN_OK) return 0;
    for (k = NN_INIT_ZEROS; k <= NN_INIT_XAVIER_NORMAL; k++) {
        nn_init init;
        char name[32];
        memset(&init, 0, sizeof init);
        init.kind = (nn_init_kind)k;
        init.a = k == NN_INIT_UNIFORM ? -0.3f : 0.7f;
        init.b = k == NN_INIT_UNIFORM ? 0.9f : 1.3f;
        snprintf(name, sizeof name, "p%d", k);
        t[n++] = nn_param(g, name, nn_shape2(31, 33), init);
    }
    x = nn_input(g, "x", NN_F32, nn_shape4(2, 3, 8, 8));
    nn_graph_output(g, nn_conv2d_layer(g, x, 5, 3, 3, NULL, "conv"));
    nn_graph_output(g, nn_linear_layer(g, nn_flatten(g, x), 7, NULL, "fc"));
    memset(&c, 0, sizeof c);
    if (nn_graph_compile(g, &c) != NN_OK) {
        printf("init: compile failed: %s\n", nn_context_last_error(ctx));
        h = 0;
    }
    for (k = 0; h && k < n; k++) {
        nn_tensor_read(g, t[k], buf, 31 * 33 * 4);
        h = hash_floats(h, buf, 31 * 33);
    }
    if (h) h = hash_params(g, h, names);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return h;
}

/* Deterministic data: multiples of 1/64 in [-2, 2) and labels in [0, classes), from an
   integer LCG, so every build feeds the same bits. */
static void fill_data(float *x, long n, int *y, long rows, int classes, unsigned s) {
    long i;
    for (i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int)(s >> 24) - 128) / 64.0f;
    }
    for (i = 0; i < rows; i++) {
        s = s * 1664525u + 1013904223u;
        y[i] = (int)((s >> 16) % (unsigned)classes);
    }
}

/* 10 steps of the graph whose inputs are x and y and whose loss is loss: the losses and
   then the parameters in names go into the hash. */
static unsigned long long train_hash(nn_context *ctx, nn_graph *g, nn_tensor x, nn_tensor y, nn_tensor loss, const nn_optimizer *opt,
                                     const char *const *names, const char *what) {
    static float xs[8192];
    static int ys[256];
    unsigned long long h = 1469598103934665603ULL;
    long nx = numel(g, x), ny = numel(g, y);
    nn_compile_desc c;
    int step;
    memset(&c, 0, sizeof c);
    c.loss = loss;
    c.optimizer = *opt;
    if (nx <= 0 || nx > 8192 || ny <= 0 || ny > 256 || nn_graph_compile(g, &c) != NN_OK) {
        printf("%s: compile failed: %s\n", what, nn_context_last_error(ctx));
        return 0;
    }
    for (step = 0; step < 10; step++) {
        float l;
        fill_data(xs, nx, ys, ny, 5, 17u + (unsigned)step);
        if (nn_tensor_write(g, x, xs, (size_t)nx * 4) != NN_OK || nn_tensor_write(g, y, ys, (size_t)ny * 4) != NN_OK ||
            nn_graph_step(g) != NN_OK || nn_tensor_read(g, loss, &l, sizeof l) != NN_OK) {
            printf("%s: step %d failed: %s\n", what, step, nn_context_last_error(ctx));
            return 0;
        }
        h = hash_floats(h, &l, 1);
    }
    return hash_params(g, h, names);
}

/* 37 -> 45 -> 29 -> 5: odd sizes, so vector loops and their scalar tails both run. */
static unsigned long long mlp_hash(int adamw) {
    static const char *const names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias", NULL};
    nn_context *ctx = open_cpu();
    nn_graph *g = NULL;
    nn_optimizer o;
    nn_tensor x, y, h;
    unsigned long long r;
    if (!ctx || nn_graph_create(ctx, NULL, &g) != NN_OK) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(24, 37));
    y = nn_input(g, "y", NN_I32, nn_shape1(24));
    h = nn_gelu(g, nn_linear_layer(g, x, 45, NULL, "fc1"));
    h = nn_tanh(g, nn_linear_layer(g, h, 29, NULL, "fc2"));
    memset(&o, 0, sizeof o);
    o.kind = adamw ? NN_OPT_ADAMW : NN_OPT_ADAM;
    o.lr = 1e-2f;
    if (adamw) {
        o.clip_norm = 0.5f;
        o.clip_value = 0.02f;
    }
    r = train_hash(ctx, g, x, y, nn_softmax_cross_entropy(g, nn_linear_layer(g, h, 5, NULL, "fc3"), y), &o, names,
                   adamw ? "mlp_adamw" : "mlp_adam");
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return r;
}

/* [6, 3, 11, 11] -> conv 3x3 (8) -> batch norm -> relu -> max pool 2 -> depthwise 3x3 ->
   conv 3x3 (13) -> relu -> avg pool 2 -> dense 17 -> dropout -> dense 5. */
static unsigned long long cnn_hash(void) {
    static const char *const names[] = {"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "dw.weight", "dw.bias",
                                        "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                        NULL};
    nn_context *ctx = open_cpu();
    nn_graph *g = NULL;
    nn_optimizer o;
    nn_conv2d_desc cd, dd;
    nn_pool2d_desc pd;
    nn_tensor x, y, h;
    unsigned long long r;
    if (!ctx || nn_graph_create(ctx, NULL, &g) != NN_OK) return 0;
    memset(&cd, 0, sizeof cd);
    memset(&pd, 0, sizeof pd);
    cd.pad_h = cd.pad_w = 1;
    dd = cd;
    dd.groups = 8;
    pd.kernel_h = pd.kernel_w = 2;
    x = nn_input(g, "x", NN_F32, nn_shape4(6, 3, 11, 11));
    y = nn_input(g, "y", NN_I32, nn_shape1(6));
    h = nn_conv2d_layer(g, x, 8, 3, 3, &cd, "conv1");
    h = nn_max_pool2d(g, nn_relu(g, nn_batch_norm2d_layer(g, h, NULL, "bn1")), &pd);
    h = nn_conv2d_layer(g, h, 8, 3, 3, &dd, "dw");
    h = nn_relu(g, nn_conv2d_layer(g, h, 13, 3, 3, &cd, "conv2"));
    h = nn_flatten(g, nn_avg_pool2d(g, h, &pd));
    h = nn_dropout(g, nn_relu(g, nn_linear_layer(g, h, 17, NULL, "fc1")), 0.25f);
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_ADAM;
    o.lr = 1e-2f;
    r = train_hash(ctx, g, x, y, nn_softmax_cross_entropy(g, nn_linear_layer(g, h, 5, NULL, "fc2"), y), &o, names, "cnn_adam");
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return r;
}

int main(void) {
    unsigned long long h[4];
    int k;
    h[0] = init_hash();
    h[1] = mlp_hash(0);
    h[2] = mlp_hash(1);
    h[3] = cnn_hash();
    printf("init=%016llx mlp_adam=%016llx mlp_adamw=%016llx cnn_adam=%016llx%s\n", h[0], h[1], h[2], h[3],
           fused ? " fused" : "");
    for (k = 0; k < 4; k++)
        if (!h[k]) return 1;
    return 0;
}
