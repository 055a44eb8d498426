/* What a graph holds and its memory plan needs (src/engine/memory.c): nn_graph_memory's
   bytes by kind against sizes computed by hand, nn_compile_desc.memory_limit, the
   parameters in insertion order and nn_graph_summary. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* setenv, as tests/nn_test.c */
#endif
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* x [4, 3] -> fc1 (5) -> relu -> fc2 (2), mse against y [4, 2]: parameters 5*3 + 5 + 2*5 +
   2 = 32 floats, 128 bytes; inputs 12 + 8 floats, 80 bytes. */
static nn_tensor mlp(nn_graph *g, nn_compile_desc *cd, int width) {
    nn_tensor x = nn_input(g, "x", NN_F32, nn_shape2(4, 3)), y = nn_input(g, "y", NN_F32, nn_shape2(4, 2));
    nn_tensor out = nn_linear_layer(g, nn_relu(g, nn_linear_layer(g, x, width, NULL, "fc1")), 2, NULL, "fc2");
    memset(cd, 0, sizeof *cd);
    cd->loss = nn_mse_loss(g, out, y, NULL);
    return out;
}

static int report_sums(const nn_memory_report *m) {
    int64_t s = m->parameters + m->gradients + m->optimizer_state + m->activations + m->workspace + m->buffers + m->inputs +
                m->other;
    return T_CHECK(s == m->peak, "the kinds sum to %lld, peak is %lld", (long long)s, (long long)m->peak) &&
           T_CHECK(m->allocated == m->persistent + m->arena, "allocated %lld != persistent %lld + arena %lld",
                   (long long)m->allocated, (long long)m->persistent, (long long)m->arena) &&
           T_CHECK(m->allocated >= m->peak, "allocated %lld < peak %lld", (long long)m->allocated, (long long)m->peak);
}

/* A forward chain x -> relu -> *2 -> exp (kept) of N floats, compiled op by op (NN_FUSE=0: fused, the
   three nodes are one pass and every output is live from its start): at the peak (the multiply)
   relu's and the product's outputs are live in the arena, exp's output has its own
   buffer: activations 3 N floats, inputs N, other 4 bytes (the constant 1.0). */
static void test_chain(const t_env *e) {
    enum { N = 1000 };
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_memory_report m;
    nn_tensor x, c;
    if (!t_begin(e, "memory: a forward chain by hand")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape1(N));
    c = nn_exp(g, nn_mul_scalar(g, nn_relu(g, x), 2.0f));
    nn_graph_output(g, c);
    T_CHECK(nn_graph_memory(g, &m) == NN_ERR_STATE, "nn_graph_memory before compile is not NN_ERR_STATE");
    T_CHECK(strstr(nn_context_last_error(ctx), "nn_graph_compile") != NULL, "message: %s", nn_context_last_error(ctx));
    if (!T_OK(t_compile_unfused(g, NULL), ctx)) goto done;
    if (!T_OK(nn_graph_memory(g, &m), ctx)) goto done;
    T_CHECK(m.inputs == 4 * N, "inputs %lld, not %d", (long long)m.inputs, 4 * N);
    T_CHECK(m.activations == 3 * 4 * N, "activations %lld, not %d", (long long)m.activations, 3 * 4 * N);
    T_CHECK(m.parameters == 0 && m.gradients == 0 && m.optimizer_state == 0 && m.workspace == 0 && m.buffers == 0,
            "a forward chain reports parameters %lld, gradients %lld, optimizer %lld, workspace %lld, buffers %lld",
            (long long)m.parameters, (long long)m.gradients, (long long)m.optimizer_state, (long long)m.workspace,
            (long long)m.buffers);
    T_CHECK(m.other == 4, "other %lld, not 4", (long long)m.other);
    T_CHECK(m.peak == 4 * 4 * N + 4, "peak %lld, not %d", (long long)m.peak, 4 * 4 * N + 4);
    T_CHECK(m.persistent == 2 * 4 * N + 4, "persistent %lld, not %d", (long long)m.persistent, 2 * 4 * N + 4);
    T_CHECK(m.arena >= 2 * 4 * N && m.arena < 2 * 4 * N + 2 * 4096, "arena %lld for two tensors of %d bytes",
            (long long)m.arena, 4 * N);
    T_CHECK(m.arena_buffers == 1, "arena in %d buffers", m.arena_buffers);
    T_CHECK(m.peak_op != NULL && m.peak_position == 1, "the peak is at %d (%s), not at the multiply (1)", m.peak_position,
            m.peak_op ? m.peak_op : "NULL");
    report_sums(&m);
done:
    nn_graph_destroy(g);
    t_end();
}

/* The MLP with each optimizer: parameters 128 bytes, inputs 80, and optimizer state
   0 (SGD), 128 (SGD with momentum), 256 (Adam: m and v), 384 (Adam with amsgrad); kept
   gradients hold at least the parameters' 128 bytes. */
static void test_mlp(const t_env *e) {
    static const struct { nn_optimizer_kind kind; float momentum; int amsgrad; int64_t state; const char *what; } rows[] = {
        {NN_OPT_SGD, 0, 0, 0, "sgd"},
        {NN_OPT_SGD, 0.9f, 0, 128, "sgd momentum 0.9"},
        {NN_OPT_ADAM, 0, 0, 256, "adam"},
        {NN_OPT_ADAM, 0, 1, 384, "adam amsgrad"},
        {NN_OPT_NONE, 0, 0, 0, "no optimizer"},
    };
    nn_context *ctx = e->ctx;
    int i;
    if (!t_begin(e, "memory: MLP parameters, gradients, optimizer state by hand")) return;
    for (i = 0; i < (int)(sizeof rows / sizeof rows[0]); i++) {
        nn_graph *g = NULL;
        nn_compile_desc cd;
        nn_memory_report m;
        if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) break;
        mlp(g, &cd, 5);
        cd.optimizer.kind = rows[i].kind;
        cd.optimizer.lr = 0.1f;
        cd.optimizer.momentum = rows[i].momentum;
        cd.optimizer.amsgrad = rows[i].amsgrad;
        cd.keep_grads = 1;
        if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_graph_memory(g, &m), ctx)) {
            T_CHECK(m.parameters == 128, "%s: parameters %lld, not 128", rows[i].what, (long long)m.parameters);
            T_CHECK(m.inputs == 80, "%s: inputs %lld, not 80", rows[i].what, (long long)m.inputs);
            T_CHECK(m.optimizer_state == rows[i].state, "%s: optimizer state %lld, not %lld", rows[i].what,
                    (long long)m.optimizer_state, (long long)rows[i].state);
            T_CHECK(m.gradients >= 128, "%s: gradients %lld, under the kept 128", rows[i].what, (long long)m.gradients);
            T_CHECK(m.activations >= 4 * 2 * 4, "%s: activations %lld", rows[i].what, (long long)m.activations);
            report_sums(&m);
            if (i == 2) { /* a step runs on that plan */
                static const float X[12] = {1, 2, 3, -1, 0, 1, 2, 2, -2, 0.5f, 1, 0}, Y[8] = {1, 0, 0, 1, 1, 1, 0, 0};
                T_OK(nn_tensor_write(g, nn_graph_find(g, "x"), X, sizeof X), ctx);
                T_OK(nn_tensor_write(g, nn_graph_find(g, "y"), Y, sizeof Y), ctx);
                T_OK(nn_graph_step(g), ctx);
                T_OK(nn_graph_finish(g), ctx);
            }
        }
        nn_graph_destroy(g);
    }
    t_end();
}

/* Accumulating gradients over 2 steps keeps them (128 bytes) for the cycle, with the
   backward's own in the arena too; without keep_grads the gradients live in the arena
   only. */
static void test_accumulate(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_memory_report m;
    if (!t_begin(e, "memory: gradient accumulators")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    mlp(g, &cd, 5);
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.1f;
    cd.optimizer.accumulate_steps = 2;
    if (!T_OK(nn_graph_compile(g, &cd), ctx) || !T_OK(nn_graph_memory(g, &m), ctx)) goto done;
    T_CHECK(m.persistent >= 128 + 128 + 80, "persistent %lld: parameters, accumulators, inputs", (long long)m.persistent);
    T_CHECK(m.gradients >= 128, "gradients %lld, under the accumulators' 128", (long long)m.gradients);
    report_sums(&m);
done:
    nn_graph_destroy(g);
    t_end();
}

/* memory_limit: the plan's allocation passes at the limit, is refused one byte under it
   (before anything is allocated) naming the total, the limit and the largest tensor (the
   Adam state of fc1.weight [300, 3]: 2 * 3600 bytes), and the refused plan is readable. */
static void test_limit(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *h = NULL;
    nn_compile_desc cd;
    nn_memory_report m, mh;
    char want[64];
    const char *msg;
    if (!t_begin(e, "memory: memory_limit")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx) || !T_OK(nn_graph_create(ctx, NULL, &h), ctx)) goto done;
    mlp(g, &cd, 300);
    cd.optimizer.kind = NN_OPT_ADAM;
    if (!T_OK(nn_graph_compile(g, &cd), ctx) || !T_OK(nn_graph_memory(g, &m), ctx)) goto done;
    mlp(h, &cd, 300);
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.memory_limit = m.allocated - 1;
    T_CHECK(nn_graph_compile(h, &cd) == NN_ERR_OUT_OF_MEMORY, "compile one byte over memory_limit is not NN_ERR_OUT_OF_MEMORY");
    msg = nn_context_last_error(ctx);
    snprintf(want, sizeof want, "needs %lld bytes", (long long)m.allocated);
    T_CHECK(strstr(msg, want) != NULL, "message lacks '%s': %s", want, msg);
    snprintf(want, sizeof want, "memory_limit %lld", (long long)m.allocated - 1);
    T_CHECK(strstr(msg, want) != NULL, "message lacks '%s': %s", want, msg);
    T_CHECK(strstr(msg, "the largest tensors: param fc1.weight [300, 3] 7200 bytes (optimizer state)") != NULL,
            "message does not name fc1.weight's Adam state first: %s", msg);
    T_CHECK(nn_graph_step(h) == NN_ERR_STATE, "a step of the refused graph is not NN_ERR_STATE");
    if (T_OK(nn_graph_memory(h, &mh), ctx))
        T_CHECK(mh.allocated == m.allocated && mh.peak == m.peak, "the refused plan reads %lld/%lld, the same plan %lld/%lld",
                (long long)mh.allocated, (long long)mh.peak, (long long)m.allocated, (long long)m.peak);
    nn_graph_destroy(h);
    h = NULL;
    if (!T_OK(nn_graph_create(ctx, NULL, &h), ctx)) goto done;
    mlp(h, &cd, 300);
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.memory_limit = m.allocated;
    T_OK(nn_graph_compile(h, &cd), ctx);
done:
    nn_graph_destroy(g);
    nn_graph_destroy(h);
    t_end();
}

/* Parameters and buffers in insertion order, with the layers' names, shapes and counts;
   a graph sharing them lists those it uses in its own order. */
static void test_params(const t_env *e) {
    static const struct { const char *name; int ndim; int64_t d0, d1; int buffer; } want[] = {
        {"fc1.weight", 2, 5, 3, 0}, {"fc1.bias", 1, 5, 0, 0}, {"ema", 1, 5, 0, 1},
        {"fc2.weight", 2, 2, 5, 0}, {"fc2.bias", 1, 2, 0, 0},
    };
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *h = NULL;
    nn_graph_desc gd;
    nn_param_info info;
    nn_init zeros;
    int count = -1, i;
    if (!t_begin(e, "memory: parameters in insertion order")) return;
    memset(&zeros, 0, sizeof zeros);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    {
        nn_tensor x = nn_input(g, "x", NN_F32, nn_shape2(4, 3)), h1;
        h1 = nn_linear_layer(g, x, 5, NULL, "fc1");
        h1 = nn_add(g, h1, nn_buffer(g, "ema", nn_shape1(5), zeros));
        nn_graph_output(g, nn_linear_layer(g, h1, 2, NULL, "fc2"));
    }
    if (!T_OK(nn_graph_param_count(g, &count), ctx)) goto done;
    T_CHECK(count == 5, "%d parameters and buffers, not 5", count);
    for (i = 0; i < 5 && i < count; i++) {
        if (!T_OK(nn_graph_param_at(g, i, &info), ctx)) break;
        T_CHECK(info.name && strcmp(info.name, want[i].name) == 0, "entry %d is %s, not %s", i, info.name ? info.name : "NULL",
                want[i].name);
        T_CHECK(info.shape.ndim == want[i].ndim && info.shape.dim[0] == want[i].d0 &&
                    (want[i].ndim == 1 || info.shape.dim[1] == want[i].d1),
                "%s: shape of %d dims [%lld...]", want[i].name, info.shape.ndim, (long long)info.shape.dim[0]);
        T_CHECK(info.numel == want[i].d0 * (want[i].ndim == 1 ? 1 : want[i].d1), "%s: numel %lld", want[i].name,
                (long long)info.numel);
        T_CHECK(info.buffer == want[i].buffer, "%s: buffer %d", want[i].name, info.buffer);
        T_CHECK(info.tensor.id == nn_graph_find(g, want[i].name).id, "%s: its tensor is not nn_graph_find's", want[i].name);
    }
    T_CHECK(nn_graph_param_at(g, 5, &info) == NN_ERR_INVALID_ARGUMENT, "index 5 of 5 is not refused");
    T_CHECK(strstr(nn_context_last_error(ctx), "nn_graph_param_at: index 5") != NULL,
            "message: %s", nn_context_last_error(ctx));
    T_CHECK(nn_graph_param_at(g, -1, &info) == NN_ERR_INVALID_ARGUMENT, "index -1 is not refused");
    T_CHECK(nn_graph_param_count(g, NULL) == NN_ERR_INVALID_ARGUMENT, "a NULL count is not refused");
    memset(&gd, 0, sizeof gd);
    gd.share_params = g;
    if (!T_OK(nn_graph_create(ctx, &gd, &h), ctx)) goto done;
    { /* uses fc2 first, then fc1 */
        nn_tensor z = nn_input(h, "z", NN_F32, nn_shape2(1, 5));
        nn_graph_output(h, nn_linear_layer(h, nn_linear_layer(h, z, 2, NULL, "fc2"), 5, NULL, "fc3"));
    }
    if (T_OK(nn_graph_param_count(h, &count), ctx) && T_CHECK(count == 4, "the sharing graph has %d, not 4", count) &&
        T_OK(nn_graph_param_at(h, 0, &info), ctx))
        T_CHECK(strcmp(info.name, "fc2.weight") == 0, "the sharing graph's first is %s", info.name);
done:
    nn_graph_destroy(h);
    nn_graph_destroy(g);
    t_end();
}

/* The summary names the ops, the parameters with shapes and counts, the total, and after
   compile the bytes by kind; the string form sizes and truncates as snprintf. */
static void test_summary(const t_env *e) {
    static const char *const words[] = {"matmul", "activation", "fc1.weight", "[5, 3]", "fc2.bias", "[4, 2]",
                                        "total: 32 parameters in 4 tensors (128 bytes)", "optimizer state", "256",
                                        "allocated"};
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    char *buf = NULL, small[16];
    size_t len = 0, len2 = 0;
    int i;
    if (!t_begin(e, "memory: nn_graph_summary")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    mlp(g, &cd, 5);
    if (!T_OK(nn_graph_summary_string(g, NULL, 0, &len), ctx)) goto done;
    buf = (char *)malloc(len + 1);
    if (!T_CHECK(buf != NULL, "malloc")) goto done;
    T_OK(nn_graph_summary_string(g, buf, len + 1, &len2), ctx);
    T_CHECK(len2 == len && strlen(buf) == len, "lengths %zu, %zu, %zu", len, len2, strlen(buf));
    T_CHECK(strstr(buf, "total: 32 parameters in 4 tensors (128 bytes)") != NULL, "before compile:\n%s", buf);
    T_CHECK(strstr(buf, "memory plan") == NULL, "a memory plan before compile:\n%s", buf);
    free(buf);
    buf = NULL;
    cd.optimizer.kind = NN_OPT_ADAM;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_graph_summary_string(g, NULL, 0, &len), ctx);
    buf = (char *)malloc(len + 1);
    if (!T_CHECK(buf != NULL, "malloc")) goto done;
    T_OK(nn_graph_summary_string(g, buf, len + 1, NULL), ctx);
    for (i = 0; i < (int)(sizeof words / sizeof words[0]); i++) T_CHECK(strstr(buf, words[i]) != NULL, "no '%s' in:\n%s", words[i], buf);
    T_OK(nn_graph_summary_string(g, small, sizeof small, &len2), ctx);
    T_CHECK(len2 == len && strlen(small) == sizeof small - 1 && memcmp(small, buf, sizeof small - 1) == 0,
            "truncated to 16 bytes: '%s' (%zu)", small, len2);
    T_CHECK(nn_graph_summary(g, NULL) == NN_ERR_INVALID_ARGUMENT, "a NULL FILE is not refused");
    if (getenv("NN_TEST_SHOW_SUMMARY")) nn_graph_summary(g, stdout);
done:
    free(buf);
    nn_graph_destroy(g);
    t_end();
}

/* An OpenCL context whose largest allocation is max_alloc bytes (NN_CL_MAX_ALLOC, the
   backend's test hook, set while it opens). */
static nn_result small_alloc_context(const t_env *e, const char *max_alloc, nn_context **out) {
    nn_context_desc d;
    nn_result r;
    t_context_desc(e, &d);
#ifdef _WIN32
    _putenv_s("NN_CL_MAX_ALLOC", max_alloc);
#else
    setenv("NN_CL_MAX_ALLOC", max_alloc, 1);
#endif
    r = nn_context_create(&d, out);
#ifdef _WIN32
    _putenv_s("NN_CL_MAX_ALLOC", "");
#else
    unsetenv("NN_CL_MAX_ALLOC");
#endif
    return r;
}

/* x [512, 32] -> 3 x (linear 32, tanh) -> linear 10, cross-entropy, SGD with momentum: each
   activation and gradient is 64 KiB, the parameters 4 KiB. Trained 3 steps; the logits
   and fc1.weight after them into y, w. */
static int train_wide(nn_context *ctx, float *y, float *w, nn_memory_report *m) {
    enum { B = 512, D = 32 };
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_graph_desc gd;
    nn_tensor x, lab, h, logits;
    float *X = (float *)malloc(B * D * 4);
    int32_t L[B];
    int i, ok = 0;
    if (!X) return 0;
    for (i = 0; i < B * D; i++) X[i] = (float)((i * 37 % 101) - 50) / 25.0f;
    for (i = 0; i < B; i++) L[i] = i * 7 % 10;
    memset(&gd, 0, sizeof gd);
    gd.seed = 5;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(B, D));
    lab = nn_input(g, "labels", NN_I32, nn_shape1(B));
    h = nn_tanh(g, nn_linear_layer(g, x, D, NULL, "fc1"));
    h = nn_tanh(g, nn_linear_layer(g, h, D, NULL, "fc2"));
    h = nn_tanh(g, nn_linear_layer(g, h, D, NULL, "fc3"));
    logits = nn_linear_layer(g, h, 10, NULL, "out");
    nn_graph_output(g, logits);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_softmax_cross_entropy(g, logits, lab);
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.1f;
    cd.optimizer.momentum = 0.9f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx) || !T_OK(nn_graph_memory(g, m), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, X, (size_t)B * D * 4), ctx) || !T_OK(nn_tensor_write(g, lab, L, sizeof L), ctx)) goto done;
    for (i = 0; i < 3; i++)
        if (!T_OK(nn_graph_step(g), ctx)) goto done;
    ok = T_OK(nn_tensor_read(g, logits, y, (size_t)B * 10 * 4), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_find(g, "fc1.weight"), w, (size_t)D * D * 4), ctx);
done:
    free(X);
    nn_graph_destroy(g);
    return ok;
}

/* A device whose largest allocation (faked: 100,000 bytes) is under the arena's size: the
   arena is split in buffers of that size, no tensor crossing one's end, and training gives
   the bits of the one-buffer plan; a tensor larger than one allocation is refused by name. */
static void test_split_arena(const t_env *e) {
    nn_context *small = NULL, *tiny = NULL;
    nn_memory_report m1, m2;
    float *y1 = (float *)malloc(512 * 10 * 4), *y2 = (float *)malloc(512 * 10 * 4), w1[32 * 32], w2[32 * 32];
    if (!t_begin(e, "memory: arena split by the largest allocation")) goto out;
    if (!e->opencl) {
        t_skip("the CPU backend has no largest allocation");
        goto done;
    }
    if (!T_CHECK(y1 && y2, "malloc")) goto done;
    if (!T_OK(small_alloc_context(e, "100000", &small), small)) goto done;
    if (!train_wide(e->ctx, y1, w1, &m1) || !train_wide(small, y2, w2, &m2)) goto done;
    T_CHECK(m1.arena_buffers == 1 && m1.arena > 100000, "the device's own plan: arena %lld in %d buffers", (long long)m1.arena,
            m1.arena_buffers);
    T_CHECK(m2.arena_buffers == (int)((m2.arena + 99839) / 99840) && m2.arena_buffers > 1,
            "the split plan: arena %lld in %d buffers of 99840", (long long)m2.arena, m2.arena_buffers);
    T_CHECK(m2.peak == m1.peak, "the peak moved: %lld, %lld", (long long)m2.peak, (long long)m1.peak);
    T_CHECK(memcmp(y1, y2, 512 * 10 * 4) == 0, "the logits differ between the one-buffer and the split arena");
    T_CHECK(memcmp(w1, w2, sizeof w1) == 0, "fc1.weight differs between the one-buffer and the split arena");
    if (T_OK(small_alloc_context(e, "40000", &tiny), tiny)) {
        nn_graph *g = NULL;
        if (T_OK(nn_graph_create(tiny, NULL, &g), tiny)) {
            nn_tensor x = nn_input(g, "x", NN_F32, nn_shape1(100)), big = nn_relu(g, nn_expand(g, nn_reshape(g, x, nn_shape2(1, 100)), nn_shape2(200, 100)));
            nn_graph_output(g, nn_sum(g, big));
            T_CHECK(nn_graph_compile(g, NULL) == NN_ERR_OUT_OF_MEMORY, "a tensor of 80,000 bytes on a device of 40,000 compiled");
            T_CHECK(strstr(nn_context_last_error(tiny), "[200, 100]") && strstr(nn_context_last_error(tiny), "largest allocation"),
                    "message: %s", nn_context_last_error(tiny));
        }
        nn_graph_destroy(g);
    }
done:
    nn_context_destroy(small);
    nn_context_destroy(tiny);
    t_end();
out:
    free(y1);
    free(y2);
}

/* x [64, 48] -> 4 blocks of (linear 48, tanh, dropout 0.1 in the second) -> linear 5,
   cross-entropy, Adam; with ckpt each block is a recompute segment. 4 steps; the loss of
   each and every parameter after them into out (its floats: 4 + 4 * (48*48 + 48) + 5*48 + 5). */
enum { RC_B = 64, RC_D = 48, RC_OUT = 4 + 4 * (RC_D * RC_D + RC_D) + 5 * RC_D + 5 };
/* gpt 2: 2 residual blocks of fused attention (nn_attention) instead; gpt 1: 2 GPT blocks, their parameters 2 * 12 * 48 * 48 + 2 * 13 * 48 floats (more
   than RC_OUT: the first RC_OUT - 4 parameter floats are compared) */
static int train_blocks(nn_context *ctx, int gpt, int ckpt, float *out, nn_memory_report *m) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_graph_desc gd;
    nn_tensor x, lab, h, loss;
    float X[RC_B * RC_D];
    int32_t L[RC_B];
    int i, ok = 0, at = 0, count = 0;
    for (i = 0; i < RC_B * RC_D; i++) X[i] = (float)((i * 29 % 97) - 48) / 24.0f;
    for (i = 0; i < RC_B; i++) L[i] = i * 3 % 5;
    memset(&gd, 0, sizeof gd);
    gd.seed = 11;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(RC_B, RC_D));
    lab = nn_input(g, "labels", NN_I32, nn_shape1(RC_B));
    h = x;
    if (gpt == 2) { /* 2 blocks of fused attention (causal, dropout 0.1 on the weights), BTHD, 4 heads */
        nn_attention_desc ad;
        memset(&ad, 0, sizeof ad);
        ad.causal = 1;
        ad.dropout = 0.1f;
        ad.layout = NN_ATTN_BTHD;
        for (i = 0; i < 2; i++) {
            char name[3][32];
            nn_tensor q, k, v;
            int j;
            for (j = 0; j < 3; j++) snprintf(name[j], sizeof name[j], "a%d.%c", i, "qkv"[j]);
            if (ckpt) nn_checkpoint_begin(g);
            q = nn_reshape(g, nn_linear_layer(g, h, RC_D, NULL, name[0]), nn_shape4(4, 16, 4, RC_D / 4));
            k = nn_reshape(g, nn_linear_layer(g, h, RC_D, NULL, name[1]), nn_shape4(4, 16, 4, RC_D / 4));
            v = nn_reshape(g, nn_linear_layer(g, h, RC_D, NULL, name[2]), nn_shape4(4, 16, 4, RC_D / 4));
            h = nn_add(g, h, nn_reshape(g, nn_attention(g, q, k, v, &ad), nn_shape2(RC_B, RC_D)));
            if (ckpt) nn_checkpoint_end(g);
        }
    } else if (gpt) { /* 2 GPT blocks (layer norms, attention, GELU, views) on [4, 16, 48], 4 heads, dropout 0.1 */
        nn_gpt_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.vocab_size = 5;
        cfg.block_size = 16;
        cfg.n_layer = 2;
        cfg.n_head = 4;
        cfg.n_embd = RC_D;
        cfg.dropout = 0.1f;
        h = nn_reshape(g, x, nn_shape3(4, 16, RC_D));
        for (i = 0; i < 2; i++) {
            char name[32];
            snprintf(name, sizeof name, "h.%d", i);
            if (ckpt) nn_checkpoint_begin(g);
            h = nn_gpt_block(g, h, &cfg, name);
            if (ckpt) nn_checkpoint_end(g);
        }
        h = nn_reshape(g, h, nn_shape2(RC_B, RC_D));
    } else
        for (i = 0; i < 4; i++) {
            char name[32];
            snprintf(name, sizeof name, "block%d", i);
            if (ckpt) nn_checkpoint_begin(g);
            h = nn_tanh(g, nn_linear_layer(g, h, RC_D, NULL, name));
            if (i == 1) h = nn_dropout(g, h, 0.1f);
            if (ckpt) nn_checkpoint_end(g);
        }
    loss = nn_softmax_cross_entropy(g, nn_linear_layer(g, h, 5, NULL, "head"), lab);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 0.01f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx) || !T_OK(nn_graph_memory(g, m), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, X, sizeof X), ctx) || !T_OK(nn_tensor_write(g, lab, L, sizeof L), ctx)) goto done;
    for (i = 0; i < 4; i++)
        if (!T_OK(nn_graph_step(g), ctx) || !T_OK(nn_tensor_read(g, loss, &out[at++], 4), ctx)) goto done;
    if (!T_OK(nn_graph_param_count(g, &count), ctx)) goto done;
    for (i = 0; i < count; i++) {
        nn_param_info p;
        if (!T_OK(nn_graph_param_at(g, i, &p), ctx)) goto done;
        if (at + p.numel > RC_OUT) {
            if (!gpt) goto done;
            break;
        }
        if (!T_OK(nn_tensor_read(g, p.tensor, &out[at], (size_t)p.numel * 4), ctx)) goto done;
        at += (int)p.numel;
    }
    for (; at < RC_OUT; at++) out[at] = 0; /* gpt: what the parameters that fit left */
    ok = 1;
done:
    nn_graph_destroy(g);
    return ok;
}

/* Recompute of every block, of an MLP and of a GPT: the same bits as without (losses and
   parameters after 4 Adam steps, dropout included), fewer activation bytes at the peak;
   segment misuse refused. */
static void test_recompute(const t_env *e) {
    nn_context *ctx = e->ctx;
    float *a = (float *)malloc(RC_OUT * 4), *b = (float *)malloc(RC_OUT * 4);
    nn_memory_report m0, m1;
    nn_graph *g = NULL;
    int i, gpt;
    if (!t_begin(e, "memory: activation recompute (nn_checkpoint_begin/end)")) goto out;
    if (!T_CHECK(a && b, "malloc")) goto done;
    for (gpt = 0; gpt < 3; gpt++) {
        const char *model = gpt == 2 ? "2 fused attention blocks" : gpt ? "2 GPT blocks" : "4 tanh blocks";
        if (!train_blocks(ctx, gpt, 0, a, &m0) || !train_blocks(ctx, gpt, 1, b, &m1)) goto done;
        for (i = 0; i < RC_OUT; i++)
            if (memcmp(&a[i], &b[i], 4) != 0) {
                T_CHECK(0, "%s: float %d (of %d: 4 losses, then the parameters) is %.9g with recompute, %.9g without", model,
                        i, (int)RC_OUT, b[i], a[i]);
                break;
            }
        T_CHECK(m1.activations < m0.activations, "%s: activations at the peak: %lld with recompute, %lld without", model,
                (long long)m1.activations, (long long)m0.activations);
        T_CHECK(m1.parameters == m0.parameters && m1.optimizer_state == m0.optimizer_state, "%s: parameters or optimizer state moved", model);
        if (getenv("NN_TEST_SHOW_SUMMARY"))
            printf("  %s: activations %lld -> %lld, gradients %lld -> %lld, peak %lld -> %lld, arena %lld -> %lld\n", model,
                   (long long)m0.activations, (long long)m1.activations, (long long)m0.gradients, (long long)m1.gradients,
                   (long long)m0.peak, (long long)m1.peak, (long long)m0.arena, (long long)m1.arena);
    }
    if (T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
        T_OK(nn_checkpoint_begin(g), ctx);
        T_CHECK(nn_checkpoint_begin(g) == NN_ERR_STATE, "a nested nn_checkpoint_begin is not refused");
        T_CHECK(strstr(nn_context_last_error(ctx), "do not nest") != NULL, "message: %s", nn_context_last_error(ctx));
    }
done:
    nn_graph_destroy(g);
    t_end();
out:
    free(a);
    free(b);
}

static nn_tensor c_ckpt_open(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l;
    nn_checkpoint_begin(g);
    l = nn_sum(g, nn_tanh(g, F(g, S1(3))));
    cd->loss = l;
    return l;
}
/* the call's result as a builder's: failed (-1) when refused */
static nn_tensor c_ckpt_end(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    return T(nn_checkpoint_end(g) == NN_OK ? 1 : -1);
}

static nn_tensor c_limit_one(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l = nn_sum(g, nn_relu(g, F(g, S2(30, 40))));
    cd->loss = l;
    cd->optimizer.kind = NN_OPT_ADAM;
    cd->memory_limit = 1;
    return l;
}
static nn_tensor c_limit_negative(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l = nn_sum(g, F(g, S1(3)));
    cd->loss = l;
    cd->memory_limit = -5;
    return l;
}

static const bad_row memory_bad[] = {
    {"memory", "memory_limit 1 byte", c_limit_one, NN_ERR_OUT_OF_MEMORY,
     "nn_graph_compile|over memory_limit 1 |largest tensors|input x [30, 40] 4800 bytes (inputs)", 1},
    {"memory", "memory_limit -5", c_limit_negative, R_INV, "nn_graph_compile|memory_limit -5", 1},
    {"memory", "a recompute segment not ended", c_ckpt_open, R_STATE, "nn_graph_compile|segment 1|nn_checkpoint_end", 1},
    {"memory", "nn_checkpoint_end with no segment", c_ckpt_end, R_STATE, "nn_checkpoint_end|no segment", 0},
};

void suite_memory(const t_env *e) {
    T_RUN(e, test_chain, test_mlp, test_accumulate, test_limit, test_params, test_summary, test_split_arena, test_recompute);
    t_bad_rows(e, memory_bad, (int)(sizeof memory_bad / sizeof memory_bad[0]));
}
