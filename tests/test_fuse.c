/* Elementwise fusion (src/ops/fuse.c): the same training run compiled with fusion (the
   default) and with NN_FUSE=0 must give the same bits (losses, parameters, gradients) on the
   backend under test, with fewer kernel launches per step, chains formed (none with
   NN_FUSE=0: tests/coverage.c t_fused_chains); a chain's forward is also held to
   a double-precision reference written here. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* setenv */
#endif
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 3

/* What a run gave: the losses of each step, every parameter after them (and the chain
   case's output and gradients), the launches of one step. */
typedef struct run_out {
    float loss[STEPS];
    float *vals;
    long n_vals;
    uint64_t launches;
    int chains, gemm; /* what fusion formed (t_fused_chains) */
    int tails;        /* the folds' kernels launched (xent_tail, gemm_tn_bsum) */
    int tail_parts;   /* the kernels xent_tail stands for launched (xent_sum, correct_sum, xent_backward) */
    int gathers;      /* gathers of rows launched (a device folds those products alone read) */
    nn_result r;
} run_out;

nn_result t_compile_unfused(nn_graph *g, const nn_compile_desc *desc) {
    const char *old = getenv("NN_FUSE");
    char *saved = old ? strdup(old) : NULL;
    nn_result r;
    setenv("NN_FUSE", "0", 1);
    r = nn_graph_compile(g, desc);
    if (saved) setenv("NN_FUSE", saved, 1);
    else unsetenv("NN_FUSE");
    free(saved);
    return r;
}

typedef nn_tensor (*model_fn)(nn_graph *g, nn_tensor *extra);

/* MLP: x [16, 20] -> 32 -> relu -> 24 -> relu -> 10 logits; softmax cross-entropy, and the
   loss and the accuracy accumulated (extra[0], extra[1]: the scalar tails a device folds). */
static nn_tensor mlp_layers(nn_graph *g, nn_tensor x, nn_tensor y, nn_tensor *extra) {
    nn_tensor h, logits, loss;
    h = nn_relu(g, nn_linear_layer(g, x, 32, NULL, "fc1"));
    h = nn_relu(g, nn_linear_layer(g, h, 24, NULL, "fc2"));
    logits = nn_linear_layer(g, h, 10, NULL, "fc3");
    loss = nn_softmax_cross_entropy(g, logits, y);
    extra[0] = nn_accumulate(g, loss);
    extra[1] = nn_accumulate(g, nn_accuracy(g, logits, y));
    return loss;
}
static nn_tensor mlp_model(nn_graph *g, nn_tensor *extra) {
    nn_tensor x = nn_input(g, "x", NN_F32, nn_shape2(16, 20)), y = nn_input(g, "y", NN_I32, nn_shape1(16));
    return mlp_layers(g, x, y, extra);
}

/* nanoGPT's model, tiny: vocabulary 16, context 8, 2 layers of 2 heads, width 16, no dropout
   (as examples/tiny_gpt.c). */
static nn_tensor gpt_model(nn_graph *g, nn_tensor *extra) {
    nn_gpt_config cfg;
    nn_tensor x = nn_input(g, "x", NN_I32, nn_shape2(2, 8)), y = nn_input(g, "y", NN_I32, nn_shape1(16));
    memset(&cfg, 0, sizeof cfg);
    cfg.vocab_size = 16;
    cfg.block_size = 8;
    cfg.n_layer = 2;
    cfg.n_head = 2;
    cfg.n_embd = 16;
    (void)extra;
    return nn_softmax_cross_entropy(g, nn_gpt(g, x, &cfg), y);
}

/* A chain of every form fusion takes, x [6, 7] and w [7, 5] inputs, b [5] and r [6, 5]:
   h = x w + b (a row operand), a = gelu(h), z = tanh(a + r) * s (s [1]: a scalar operand),
   q = z * z (a node read twice), out = 0.5 q - 3 z (a scale, and a node read after the one
   after it); h is kept (nn_graph_output: written by its chain). Loss: sum(out). */
static nn_tensor chain_model(nn_graph *g, nn_tensor *extra) {
    nn_init init;
    nn_tensor x = nn_input(g, "x", NN_F32, nn_shape2(6, 7)), r = nn_input(g, "r", NN_F32, nn_shape2(6, 5));
    nn_tensor s = nn_input(g, "s", NN_F32, nn_shape1(1)), w, b, h, z, q, out;
    init.kind = NN_INIT_UNIFORM;
    init.a = -0.5f;
    init.b = 0.5f;
    w = nn_param(g, "w", nn_shape2(7, 5), init);
    b = nn_param(g, "b", nn_shape1(5), init);
    h = nn_add(g, nn_matmul(g, x, w, 0, 0), b);
    z = nn_mul(g, nn_tanh(g, nn_add(g, nn_gelu(g, h), r)), s);
    q = nn_mul(g, z, z);
    out = nn_sub(g, nn_mul_scalar(g, q, 0.5f), nn_mul_scalar(g, z, 3.0f));
    nn_graph_output(g, h);
    nn_graph_output(g, out);
    extra[0] = h;
    extra[1] = out;
    nn_graph_requires_grad(g, x);
    nn_graph_requires_grad(g, r);
    extra[2] = x;
    extra[3] = r;
    return nn_sum(g, out);
}

/* A linear layer's product over three K blocks (K 520): its bias add runs in the CPU GEMM's
   epilogue after the last block, then GELU; parameters only. Loss: sum(gelu(x w + b)). */
static nn_tensor wide_model(nn_graph *g, nn_tensor *extra) {
    nn_init init;
    nn_tensor x, w, b;
    init.kind = NN_INIT_UNIFORM;
    init.a = -0.1f;
    init.b = 0.1f;
    x = nn_param(g, "xp", nn_shape2(24, 520), init);
    w = nn_param(g, "w", nn_shape2(520, 40), init);
    b = nn_param(g, "b", nn_shape1(40), init);
    (void)extra;
    return nn_sum(g, nn_gelu(g, nn_add(g, nn_matmul(g, x, w, 0, 0), b)));
}

/* The MLP's batch gathered from resident data: nn_gather_rows of x [40, 20] and of the labels
   y [40] by idx [16], two indices out of range (rows of zeros, label 0). On a device the
   loss's kernels read the labels by index (xent_sum, correct_sum, xent_backward) and, tuned as
   a CPU, the products x's rows in place (fc1's NT product as op(A), its weight's gradient
   x^T dy as op(B)): neither gather launched. */
static nn_tensor gather_model(nn_graph *g, nn_tensor *extra) {
    nn_tensor x = nn_input(g, "x", NN_F32, nn_shape2(40, 20)), y = nn_input(g, "y", NN_I32, nn_shape1(40));
    nn_tensor idx = nn_input(g, "idx", NN_I32, nn_shape1(16)), yb = nn_gather_rows(g, y, idx);
    return mlp_layers(g, nn_gather_rows(g, x, idx), yb, extra);
}

/* Deterministic contents for every input of g (labels in [0, 10) or the vocabulary). */
static nn_result write_inputs(nn_graph *g, int which) {
    static const char *const names[] = {"x", "y", "r", "s"};
    static const int32_t idx[16] = {3, 39, 0, 17, -1, 5, 40, 22, 9, 9, 31, 2, 14, 27, 8, 36};
    float f[1024];
    int32_t lab[64];
    nn_tensor ti = nn_graph_find(g, "idx");
    nn_result r = NN_OK;
    int k, i;
    t_seed(7);
    for (i = 0; i < 1024; i++) f[i] = (float)t_uniform(-1.5, 1.5);
    for (i = 0; i < 64; i++) lab[i] = which == 1 ? t_randint(16) : t_randint(10);
    if (ti.id > 0) r = nn_tensor_write(g, ti, idx, sizeof idx);
    for (k = 0; k < 4 && r == NN_OK; k++) {
        nn_tensor t = nn_graph_find(g, names[k]);
        int64_t n = t_numel(g, t);
        if (t.id <= 0) continue;
        if ((which == 1 && k == 0) || k == 1) r = nn_tensor_write(g, t, lab, (size_t)n * 4);
        else r = nn_tensor_write(g, t, f, (size_t)n * 4);
    }
    return r;
}

/* Builds model `which` (0 MLP, 1 GPT, 2 the chain, 3 the wide product, 4 the gathered MLP) on e's backend, compiled with fusion on or
   off (NN_FUSE), and runs STEPS steps of Adam. */
static void run_model(const t_env *e, int which, int fuse, run_out *o) {
    static const model_fn models[] = {mlp_model, gpt_model, chain_model, wide_model, gather_model};
    const char *old = getenv("NN_FUSE");
    char *saved = old ? strdup(old) : NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_graph *g = NULL;
    nn_tensor extra[4], loss;
    nn_stats s0, s1;
    int i, np = 0;
    long at = 0;
    memset(o, 0, sizeof *o);
    memset(&gd, 0, sizeof gd);
    gd.seed = 5;
    o->r = nn_graph_create(e->ctx, &gd, &g);
    if (o->r != NN_OK) return;
    loss = models[which](g, extra);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 0.01f;
    cd.keep_grads = which == 2;
    if (fuse) unsetenv("NN_FUSE");
    else setenv("NN_FUSE", "0", 1);
    o->r = nn_graph_compile(g, &cd);
    if (saved) setenv("NN_FUSE", saved, 1);
    else unsetenv("NN_FUSE");
    free(saved);
    if (o->r == NN_OK) o->chains = t_fused_chains(g, &o->gemm);
    if (o->r == NN_OK)
        o->tails = t_graph_launches(g, "xent_tail") + t_graph_launches(g, "gemm_tn_bsum");
    if (o->r == NN_OK)
        o->tail_parts = t_graph_launches(g, "xent_sum") + t_graph_launches(g, "correct_sum") + t_graph_launches(g, "xent_backward");
    if (o->r == NN_OK) o->gathers = t_graph_launch_count(g, "gather_rows_by_row") + t_graph_launch_count(g, "gather_rows_forward");
    if (o->r == NN_OK) o->r = write_inputs(g, which);
    for (i = 0; i < STEPS && o->r == NN_OK; i++) {
        nn_context_stats(e->ctx, &s0);
        o->r = nn_graph_step(g);
        nn_context_stats(e->ctx, &s1);
        o->launches = s1.kernel_launches - s0.kernel_launches;
        if (o->r == NN_OK) o->r = nn_tensor_read(g, loss, &o->loss[i], 4);
    }
    if (o->r == NN_OK) o->r = nn_graph_param_count(g, &np);
    o->vals = (float *)calloc(1 << 16, sizeof(float));
    for (i = 0; i < np && o->r == NN_OK && o->vals; i++) {
        nn_param_info p;
        int64_t n;
        o->r = nn_graph_param_at(g, i, &p);
        n = t_numel(g, p.tensor);
        if (o->r == NN_OK && at + n <= (1 << 16)) o->r = nn_tensor_read(g, p.tensor, o->vals + at, (size_t)n * 4);
        at += n;
    }
    if (which == 2) /* the kept h and out, the gradients of x and r and of the parameters w, b */
        for (i = 0; i < 6 && o->r == NN_OK; i++) {
            nn_tensor t = i < 2 ? extra[i] : i < 4 ? nn_graph_grad(g, extra[i]) : nn_graph_grad(g, nn_graph_find(g, i == 4 ? "w" : "b"));
            int64_t n = t_numel(g, t);
            o->r = nn_tensor_read(g, t, o->vals + at, (size_t)n * 4);
            at += n;
        }
    if (which == 0 || which == 4) /* the accumulated loss and accuracy */
        for (i = 0; i < 2 && o->r == NN_OK; i++) o->r = nn_tensor_read(g, extra[i], o->vals + at++, 4);
    o->n_vals = at;
    if (!o->vals) o->r = NN_ERR_OUT_OF_MEMORY;
    nn_graph_destroy(g);
}

/* Launches of stages (src/opencl/backend.c, nn__cl_stages: on a device tuned as a CPU, a run
   of consecutive products as one launch, each product's items waiting for those of the
   products before it): training runs with them and without (NN_CL_STAGES=0), both fused, give
   the same bits, and the MLP's step fewer launches. On a context without guards: with
   NN_CL_GUARDS (the test binary's default) each product of such a launch runs alone between
   its guards, so the waits between products run only here. */
static void check_stages(const t_env *e) {
    static const int models[] = {0, 1, 3, 4};
    static const char *const names[] = {"MLP", "tiny GPT", "wide product", "gathered MLP"};
    nn_context_desc d;
    t_env u = *e;
    const char *old = getenv("NN_CL_GUARDS");
    char *saved = old ? strdup(old) : NULL;
    nn_result r;
    size_t m;
    if (!t_begin(e, "fuse: launches of stages (no guards): the same bits as a launch a product, fewer launches")) return;
    if (!e->opencl || t_gpu_tuned(e)) {
        free(saved);
        t_skip("launches of stages are for OpenCL devices tuned as CPUs");
        t_end();
        return;
    }
    t_context_desc(e, &d);
    setenv("NN_CL_GUARDS", "0", 1);
    r = nn_context_create(&d, &u.ctx);
    if (saved) setenv("NN_CL_GUARDS", saved, 1);
    else unsetenv("NN_CL_GUARDS");
    free(saved);
    if (!T_CHECK(r == NN_OK, "a context without guards: %s", nn_result_string(r))) {
        t_end();
        return;
    }
    for (m = 0; m < sizeof models / sizeof models[0]; m++) {
        run_out a, b;
        long i;
        setenv("NN_CL_STAGES", "0", 1);
        run_model(&u, models[m], 1, &a);
        unsetenv("NN_CL_STAGES");
        run_model(&u, models[m], 1, &b);
        if (T_CHECK(a.r == NN_OK && b.r == NN_OK, "%s: runs failed: %s", names[m], nn_context_last_error(u.ctx)) &&
            T_CHECK(a.n_vals == b.n_vals && a.n_vals > 0, "%s: %ld and %ld values", names[m], a.n_vals, b.n_vals) &&
            T_CHECK(memcmp(a.loss, b.loss, sizeof a.loss) == 0, "%s: losses differ: %.9g %.9g %.9g apart, %.9g %.9g %.9g in stages",
                    names[m], a.loss[0], a.loss[1], a.loss[2], b.loss[0], b.loss[1], b.loss[2])) {
            for (i = 0; i < a.n_vals && memcmp(&a.vals[i], &b.vals[i], 4) == 0; i++) {}
            T_CHECK(i == a.n_vals, "%s: value %ld of %ld differs: %.9g apart, %.9g in stages", names[m], i, a.n_vals, a.vals[i],
                    b.vals[i]);
            if (models[m] == 0)
                T_CHECK(b.launches < a.launches, "MLP: %llu launches a step in stages, %llu apart", (unsigned long long)b.launches,
                        (unsigned long long)a.launches);
            printf("    %s: %llu launches a step in stages, %llu apart\n", names[m], (unsigned long long)b.launches,
                   (unsigned long long)a.launches);
        }
        free(a.vals);
        free(b.vals);
    }
    nn_context_destroy(u.ctx);
    t_end();
}

/* Fused and unfused: the same bits, and fewer launches with fusion. */
static void check_same(const t_env *e, const char *name, int which) {
    run_out a, b;
    if (!t_begin(e, name)) return;
    run_model(e, which, 0, &a);
    run_model(e, which, 1, &b);
    if (T_CHECK(a.r == NN_OK && b.r == NN_OK, "runs failed: %s", nn_context_last_error(e->ctx)) &&
        T_CHECK(a.n_vals == b.n_vals && a.n_vals > 0, "%ld and %ld values", a.n_vals, b.n_vals) &&
        T_CHECK(memcmp(a.loss, b.loss, sizeof a.loss) == 0, "losses differ: %.9g %.9g %.9g unfused, %.9g %.9g %.9g fused",
                a.loss[0], a.loss[1], a.loss[2], b.loss[0], b.loss[1], b.loss[2]) &&
        T_CHECK(a.loss[STEPS - 1] == a.loss[STEPS - 1], "the loss is NaN")) {
        long i;
        for (i = 0; i < a.n_vals && memcmp(&a.vals[i], &b.vals[i], 4) == 0; i++) {}
        T_CHECK(i == a.n_vals, "value %ld of %ld differs: %.9g unfused, %.9g fused", i, a.n_vals, a.vals[i], b.vals[i]);
        T_CHECK(b.launches < a.launches, "%llu launches a step fused, %llu unfused", (unsigned long long)b.launches,
                (unsigned long long)a.launches);
        T_CHECK(a.chains == 0 && a.gemm == 0, "NN_FUSE=0 formed %d chains (%d in a GEMM's epilogue)", a.chains, a.gemm);
        T_CHECK(b.chains > 0, "fusion formed no chain");
        /* the wide product's bias add in the GEMM's epilogue (on a device, kernels/gemm.cl's
           gemm_epi with the chain) */
        if (which == 3) T_CHECK(b.gemm > 0, "no chain in the GEMM's epilogue (%d chains)", b.chains);
        /* the MLP's three bias adds; on a device also the two relu gradients of the backward's
           products dy W (the product form) */
        if (which == 0) T_CHECK(b.gemm == (e->opencl ? 5 : 3), "%d chains in a GEMM's epilogue", b.gemm);
        /* on a device, the loss's and the accuracy's rows in their means' kernels, the biases'
           gradients in their weights' products */
        if (which == 0) T_CHECK(a.tails == 0 && b.tails == (e->opencl ? 2 : 0), "%d fold kernels unfused, %d fused", a.tails, b.tails);
        /* on a device, the loss's mean, the accuracy's and the logits' gradient in one launch (xent_tail) */
        if (which == 0 || which == 4)
            T_CHECK(b.tail_parts == 0 && (which == 4 || a.tail_parts == (e->opencl ? 1 : 0)),
                    "xent_sum, correct_sum, xent_backward: %d launched unfused, %d fused", a.tail_parts, b.tail_parts);
        /* on a device, the loss's kernels read the labels by index; tuned as a CPU, the products
           read x's rows in place too: no gather launched */
        if (which == 4)
            T_CHECK(a.gathers == (e->opencl ? 2 : 0) && b.gathers == (e->opencl && t_gpu_tuned(e) ? 1 : 0),
                    "%d gathers launched unfused, %d fused", a.gathers, b.gathers);
        printf("    %s on %s: %llu kernel launches a step unfused, %llu fused (%d chains, %d in a GEMM's epilogue)\n",
               name, e->backend, (unsigned long long)a.launches, (unsigned long long)b.launches, b.chains, b.gemm);
    }
    free(a.vals);
    free(b.vals);
    t_end();
}

static double gelu_d(double v) { return 0.5 * v * (1.0 + erf(v / sqrt(2.0))); }

/* The chain's forward (h and out, before the first update) against doubles. */
static void check_chain_values(const t_env *e) {
    nn_graph *g = NULL;
    nn_tensor extra[4];
    float x[42], w[35], bb[5], r[30], s, h[30], out[30];
    double wh[30], wo[30], got_h[30], got_o[30];
    int i, j, k;
    if (!t_begin(e, "fuse: a chain's values against doubles")) return;
    if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        t_end();
        return;
    }
    (void)chain_model(g, extra);
    if (T_OK(nn_graph_compile(g, NULL), e->ctx) &&
        T_CHECK((getenv("NN_FUSE") && !strcmp(getenv("NN_FUSE"), "0")) || t_fused_chains(g, &k) > 0, "no chain formed") &&
        T_OK(write_inputs(g, 2), e->ctx) && T_OK(nn_graph_forward(g), e->ctx) &&
        T_OK(nn_tensor_read(g, extra[0], h, sizeof h), e->ctx) && T_OK(nn_tensor_read(g, extra[1], out, sizeof out), e->ctx) &&
        T_OK(nn_tensor_read(g, nn_graph_find(g, "x"), x, sizeof x), e->ctx) &&
        T_OK(nn_tensor_read(g, nn_graph_find(g, "r"), r, sizeof r), e->ctx) &&
        T_OK(nn_tensor_read(g, nn_graph_find(g, "s"), &s, 4), e->ctx) &&
        T_OK(nn_tensor_read(g, nn_graph_find(g, "w"), w, sizeof w), e->ctx) &&
        T_OK(nn_tensor_read(g, nn_graph_find(g, "b"), bb, sizeof bb), e->ctx)) {
        for (i = 0; i < 6; i++)
            for (j = 0; j < 5; j++) {
                double acc = bb[j], z;
                for (k = 0; k < 7; k++) acc += (double)x[i * 7 + k] * w[k * 5 + j];
                wh[i * 5 + j] = acc;
                z = tanh(gelu_d(acc) + r[i * 5 + j]) * s;
                wo[i * 5 + j] = 0.5 * z * z - 3.0 * z;
            }
        for (i = 0; i < 30; i++) got_h[i] = h[i], got_o[i] = out[i];
        T_CHECK(t_relerr(got_h, wh, 30) < 1e-5, "h: relative error %g", t_relerr(got_h, wh, 30));
        T_CHECK(t_relerr(got_o, wo, 30) < 1e-5, "out: relative error %g", t_relerr(got_o, wo, 30));
    }
    nn_graph_destroy(g);
    t_end();
}

/* Labels outside [0, C) in a training step whose loss, accuracy and logits' gradient run as
   the loss's tail (on a device one launch, xent_tail; tuned as a CPU one work-group, here
   two turns of its rows): counted and reported at the next read, their rows' gradient zero
   (a step with good labels first, so a gradient row left unwritten would move them), the
   others' (softmax - onehot) / B against doubles, and fused and unfused the same bits. */
static void check_tail_bad_labels(const t_env *e) {
    enum { B = 300, C = 5 };
    static float z0[B * C], z1[2][B * C], zs[2][B * C];
    int32_t y[B], y1[B];
    int b, c, fuse, ok = 1;
    if (!t_begin(e, "fuse: labels outside [0, C) in the loss's tail: counted, their gradient zero, fused and unfused bits"))
        return;
    t_seed(17);
    for (b = 0; b < B * C; b++) z0[b] = (float)t_uniform(-2, 2);
    for (b = 0; b < B; b++) y[b] = b % 97 == 5 ? C + b % 3 : b % 89 == 7 ? -1 - b % 2 : t_randint(C);
    for (b = 0; b < B; b++) y1[b] = t_randint(C);
    for (fuse = 0; fuse < 2 && ok; fuse++) {
        const char *old = getenv("NN_FUSE");
        char *saved = old ? strdup(old) : NULL;
        nn_graph *g = NULL;
        nn_compile_desc cd;
        nn_init init;
        nn_tensor z, yt, loss;
        float v;
        memset(&init, 0, sizeof init);
        init.kind = NN_INIT_ZEROS;
        memset(&cd, 0, sizeof cd);
        ok = T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx);
        if (ok) {
            z = nn_param(g, "z", nn_shape2(B, C), init);
            yt = nn_input(g, "y", NN_I32, nn_shape1(B));
            loss = nn_softmax_cross_entropy(g, z, yt);
            nn_accumulate(g, loss);
            nn_accumulate(g, nn_accuracy(g, z, yt));
            cd.loss = loss;
            cd.optimizer.kind = NN_OPT_SGD;
            cd.optimizer.lr = 1.0f;
            if (fuse) unsetenv("NN_FUSE");
            else setenv("NN_FUSE", "0", 1);
            ok = T_OK(nn_graph_compile(g, &cd), e->ctx);
            if (saved) setenv("NN_FUSE", saved, 1);
            else unsetenv("NN_FUSE");
        }
        free(saved);
        if (ok && fuse && e->opencl) ok = T_CHECK(t_graph_launches(g, "xent_tail") == 1, "no xent_tail");
        ok = ok && T_OK(nn_tensor_write(g, z, z0, sizeof z0), e->ctx) && T_OK(nn_tensor_write(g, yt, y1, sizeof y1), e->ctx) &&
             T_OK(nn_graph_step(g), e->ctx) && T_OK(nn_tensor_read(g, z, z1[fuse], sizeof z1[fuse]), e->ctx) &&
             T_OK(nn_tensor_write(g, yt, y, sizeof y), e->ctx) && T_OK(nn_graph_step(g), e->ctx);
        ok = ok && T_CHECK(nn_tensor_read(g, loss, &v, 4) == NN_ERR_INVALID_ARGUMENT &&
                               strstr(nn_context_last_error(e->ctx), "nn_softmax_cross_entropy") &&
                               strstr(nn_context_last_error(e->ctx), "labels outside [0, C)"),
                           "a read after bad labels: \"%s\"", nn_context_last_error(e->ctx));
        ok = ok && T_OK(nn_tensor_read(g, z, zs[fuse], sizeof zs[fuse]), e->ctx);
        nn_graph_destroy(g);
    }
    if (ok) {
        double worst = 0;
        for (b = 0; b < B; b++) {
            const float *r = z1[1] + b * C;
            double m = r[0], s = 0;
            for (c = 1; c < C; c++) m = fmax(m, r[c]);
            for (c = 0; c < C; c++) s += exp(r[c] - m);
            for (c = 0; c < C; c++) {
                double gr = y[b] >= 0 && y[b] < C ? (exp(r[c] - m) / s - (c == y[b])) / B : 0.0, want = r[c] - gr;
                double err = fabs(zs[1][b * C + c] - want) / (1e-3 + fabs(gr));
                if (y[b] < 0 || y[b] >= C) err = zs[1][b * C + c] == r[c] ? 0 : 1;
                if (err > worst) worst = err;
            }
        }
        T_CHECK(worst < 1e-4, "the step's rows against doubles: error %g (a bad label's row must not move)", worst);
        T_CHECK(memcmp(z1[0], z1[1], sizeof z1[0]) == 0 && memcmp(zs[0], zs[1], sizeof zs[0]) == 0,
                "fused and unfused steps differ");
    }
    t_end();
}

void suite_fuse(const t_env *e) {
    check_tail_bad_labels(e);
    check_chain_values(e);
    check_same(e, "fuse: a chain of every form, fused and unfused bits", 2);
    check_same(e, "fuse: MLP training, fused and unfused bits, launches a step", 0);
    check_same(e, "fuse: tiny GPT training, fused and unfused bits, launches a step", 1);
    check_same(e, "fuse: a bias add in the GEMM's epilogue over three K blocks, fused and unfused bits", 3);
    check_same(e, "fuse: MLP training on gathered rows (two out of range), fused and unfused bits", 4);
    check_stages(e);
}
