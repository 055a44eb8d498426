/* Any batch size and train/eval mode on one graph (issue 22; src/engine/model.c): a graph
   built by a model function (nn_graph_build) run at other batch sizes and in eval mode
   against graphs built at those sizes and in that mode with the same function and seed
   (bitwise: the same kernels see the same inputs), training at a partial batch, the
   optimizer state carried across sizes (against a state file moved between graphs), the
   dataset helper's last partial batch (60,000 rows at batch 128), and the refusals. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "bad_rows.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The model: x [batch, 5] -> fc1 (8) -> [batch norm] -> relu -> [dropout 0.5] -> fc2 (3),
   cross-entropy against y [batch]; or, with a dataset, its rows. */
typedef struct bm {
    int bn, dropout;
    nn_dataset_desc dd;   /* dd.x set: the inputs are a dataset's */
    nn_dataset *ds;
    int odd;              /* builds another op at batch != 32 (a refused model) */
    int want_dx;          /* nn_graph_requires_grad(x), asked after the build (outside the function) */
    nn_tensor x, y, logits, loss;
} bm;

static nn_result bm_build(nn_graph *g, int64_t batch, void *user) {
    bm *m = (bm *)user;
    nn_tensor h;
    if (m->dd.x) {
        nn_dataset_desc dd = m->dd;
        nn_result r;
        dd.batch = batch;
        if ((r = nn_dataset_create(g, &dd, &m->ds)) != NN_OK) return r;
        m->x = nn_dataset_x(m->ds);
        m->y = nn_dataset_y(m->ds);
        nn_graph_output(g, m->x); /* the batch's rows, read back */
    } else {
        m->x = nn_input(g, "x", NN_F32, nn_shape2(batch, 5));
        m->y = nn_input(g, "y", NN_I32, nn_shape1(batch));
    }
    h = nn_linear_layer(g, m->x, 8, NULL, "fc1");
    if (m->bn) h = nn_batch_norm1d_layer(g, h, NULL, "bn");
    h = nn_relu(g, h);
    if (m->odd && batch != 32) h = nn_tanh(g, h);
    if (m->dropout) h = nn_dropout(g, h, 0.5f);
    m->logits = nn_linear_layer(g, h, 3, NULL, "fc2");
    nn_graph_output(g, m->logits);
    m->loss = nn_cross_entropy_loss(g, m->logits, m->y, NULL);
    nn_graph_output(g, m->loss);
    return nn_graph_status(g);
}

/* Compiles g with Adam (lr 0.01, every gradient kept), or forward only. */
static nn_result bm_compile(nn_graph *g, const bm *m, int train) {
    nn_compile_desc cd;
    memset(&cd, 0, sizeof cd);
    if (train) {
        cd.loss = m->loss;
        cd.optimizer.kind = NN_OPT_ADAM;
        cd.optimizer.lr = 0.01f;
        cd.keep_grads = 1;
    }
    return nn_graph_compile(g, &cd);
}

/* A graph from bm_build at batch, seed 7 (eval: nn_graph_desc.eval, sharing share's parameters). */
static nn_graph *bm_graph(const t_env *e, bm *m, int64_t batch, int train, int eval, nn_graph *share, int model) {
    nn_graph_desc gd;
    nn_graph *g = NULL;
    nn_result r;
    memset(&gd, 0, sizeof gd);
    gd.seed = 7;
    gd.eval = eval;
    gd.share_params = share;
    if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) return NULL;
    r = model ? nn_graph_build(g, bm_build, batch, m) : bm_build(g, batch, m);
    if (r == NN_OK && m->want_dx) r = nn_graph_requires_grad(g, m->x);
    if (!T_OK(r, e->ctx) || !T_OK(bm_compile(g, m, train), e->ctx)) {
        nn_graph_destroy(g);
        return NULL;
    }
    return g;
}

static void bm_data(float *x, int32_t *y, int64_t n, int64_t from) {
    int64_t i;
    for (i = 0; i < n * 5; i++) x[i] = (float)(((from * 5 + i) * 37) % 23) / 11.0f - 1.0f;
    for (i = 0; i < n; i++) y[i] = (int32_t)((from + i) % 3);
}

/* Writes n rows (from row `from` of the sequence) to x and y of g. */
static int bm_write(const t_env *e, nn_graph *g, const bm *m, int64_t n, int64_t from) {
    float *x = (float *)malloc((size_t)n * 5 * 4);
    int32_t *y = (int32_t *)malloc((size_t)n * 4);
    int ok = T_CHECK(x && y, "out of memory");
    if (ok) bm_data(x, y, n, from);
    ok = ok && T_OK(nn_tensor_write(g, m->x, x, (size_t)n * 5 * 4), e->ctx) && T_OK(nn_tensor_write(g, m->y, y, (size_t)n * 4), e->ctx);
    free(x);
    free(y);
    return ok;
}

/* n floats of t in a and b equal bit for bit */
static int bm_same(const t_env *e, nn_graph *a, nn_tensor ta, nn_graph *b, nn_tensor tb, int64_t n, const char *what) {
    float *x = (float *)calloc((size_t)n, 4), *y = (float *)calloc((size_t)n, 4);
    int ok = x && y && T_OK(nn_tensor_read(a, ta, x, (size_t)n * 4), e->ctx) && T_OK(nn_tensor_read(b, tb, y, (size_t)n * 4), e->ctx);
    int64_t i;
    for (i = 0; ok && i < n; i++)
        if (memcmp(&x[i], &y[i], 4) != 0) ok = T_CHECK(0, "%s: element %lld is %.9g, the reference %.9g", what, (long long)i, x[i], y[i]);
    free(x);
    free(y);
    return ok;
}

/* A graph built at 32 run at 1, 7, 33 and 1,000 rows (dropout on: training mode) gives the
   rows, the loss and its shape of graphs built at those sizes, bitwise; and 32 again is
   itself. */
static void test_sizes(const t_env *e) {
    static const int64_t sizes[5] = {1, 7, 33, 1000, 32};
    bm m, r;
    nn_graph *g = NULL, *ref = NULL;
    int k;
    if (!t_begin(e, "batch: a graph built at 32 runs at 1, 7, 33, 1000 as graphs built there")) return;
    memset(&m, 0, sizeof m);
    m.dropout = 1;
    if (!(g = bm_graph(e, &m, 32, 1, 0, NULL, 1))) goto done;
    for (k = 0; k < 5; k++) {
        int64_t n = sizes[k], b = 0;
        nn_shape s;
        r = m;
        if (!T_OK(nn_graph_set_batch(g, n), e->ctx) || !(ref = bm_graph(e, &r, n, 1, 0, NULL, 0))) goto done;
        T_CHECK(nn_graph_batch(g, &b, NULL) == NN_OK && b == n, "nn_graph_batch gave %lld at %lld", (long long)b, (long long)n);
        T_CHECK(nn_tensor_shape(g, m.logits, &s) == NN_OK && s.dim[0] == n, "logits have %lld rows at batch %lld", (long long)s.dim[0],
                (long long)n);
        if (!bm_write(e, g, &m, n, 3) || !bm_write(e, ref, &r, n, 3)) goto done;
        if (!T_OK(nn_graph_forward(g), e->ctx) || !T_OK(nn_graph_forward(ref), e->ctx)) goto done;
        if (!bm_same(e, g, m.logits, ref, r.logits, n * 3, "logits") || !bm_same(e, g, m.loss, ref, r.loss, 1, "loss")) goto done;
        nn_graph_destroy(ref);
        ref = NULL;
    }
done:
    nn_graph_destroy(ref);
    nn_graph_destroy(g);
    t_end();
}

/* Training: a step at a partial batch (7 of 32) is a graph built at 7's step (loss, every
   gradient, the input's gradient asked for after the build, the updated parameters); and steps at 32, then 7, then 32 again carry Adam's
   moments and clock across the sizes, as a state file moved from a graph built at 32 to
   one built at 7 and back does. */
static void test_train(const t_env *e) {
    static const char *const names[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
    static const int64_t sizes[3] = {32, 7, 32};
    char path[] = "/tmp/nn-test-batch-XXXXXX";
    bm m, r[2];
    nn_graph *g = NULL, *ref[2] = {NULL, NULL};
    int k, fd;
    if (!t_begin(e, "batch: training at 7 rows on a graph built at 32")) return;
    fd = mkstemp(path);
    if (!T_CHECK(fd >= 0, "mkstemp failed")) goto done;
    close(fd);
    memset(&m, 0, sizeof m);
    m.bn = m.dropout = m.want_dx = 1;
    r[0] = r[1] = m;
    if (!(g = bm_graph(e, &m, 32, 1, 0, NULL, 1)) || !(ref[0] = bm_graph(e, &r[0], 32, 1, 0, NULL, 0)) ||
        !(ref[1] = bm_graph(e, &r[1], 7, 1, 0, NULL, 0)))
        goto done;
    for (k = 0; k < 3; k++) {
        int64_t n = sizes[k];
        int w = n == 7;
        nn_graph *h = ref[w];
        int i;
        if (k > 0 && (!T_OK(nn_graph_save_state(ref[!w], path), e->ctx) || !T_OK(nn_graph_load_state(h, path), e->ctx))) goto done;
        if (!T_OK(nn_graph_set_batch(g, n), e->ctx) || !bm_write(e, g, &m, n, 5 * k) || !bm_write(e, h, &r[w], n, 5 * k)) goto done;
        if (!T_OK(nn_graph_step(g), e->ctx) || !T_OK(nn_graph_step(h), e->ctx)) goto done;
        if (!bm_same(e, g, m.loss, h, r[w].loss, 1, "loss") ||
            !bm_same(e, g, nn_graph_grad(g, m.x), h, nn_graph_grad(h, r[w].x), n * 5, "d loss / d x"))
            goto done;
        for (i = 0; i < 4; i++) {
            nn_tensor p = nn_graph_find(g, names[i]), q = nn_graph_find(h, names[i]);
            int64_t c = t_numel(g, p);
            char what[96];
            snprintf(what, sizeof what, "step %d (batch %lld): %s", k + 1, (long long)n, names[i]);
            if (!T_CHECK(c > 0 && c == t_numel(h, q), "%s: %lld and %lld elements", what, (long long)c, (long long)t_numel(h, q)) ||
                !bm_same(e, g, p, h, q, c, what) || !bm_same(e, g, nn_graph_grad(g, p), h, nn_graph_grad(h, q), c, what))
                goto done;
        }
        if (!bm_same(e, g, nn_graph_find(g, "bn.running_var"), h, nn_graph_find(h, "bn.running_var"), 8, "bn.running_var")) goto done;
    }
done:
    unlink(path);
    nn_graph_destroy(ref[0]);
    nn_graph_destroy(ref[1]);
    nn_graph_destroy(g);
    t_end();
}

/* Eval mode on the training graph (batch norm and dropout): after two steps, its logits and
   loss at 16 and at 5 rows are an eval graph's (nn_graph_desc.eval, the same parameters);
   the running statistics do not move in eval mode; training goes on after it. */
static void test_eval(const t_env *e) {
    bm m, r;
    nn_graph *g = NULL, *ev = NULL;
    float before[8], after[8];
    int k, training = -1;
    if (!t_begin(e, "batch: eval mode on a training graph is an eval graph (batch norm, dropout)")) return;
    memset(&m, 0, sizeof m);
    m.bn = m.dropout = 1;
    if (!(g = bm_graph(e, &m, 16, 1, 0, NULL, 1))) goto done;
    for (k = 0; k < 2; k++)
        if (!bm_write(e, g, &m, 16, 16 * k) || !T_OK(nn_graph_step(g), e->ctx)) goto done;
    if (!T_OK(nn_graph_train(g, 0), e->ctx)) goto done;
    T_CHECK(nn_graph_batch(g, NULL, &training) == NN_OK && training == 0, "nn_graph_batch says training %d in eval mode", training);
    if (!T_OK(nn_tensor_read(g, nn_graph_find(g, "bn.running_mean"), before, sizeof before), e->ctx)) goto done;
    for (k = 0; k < 2; k++) {
        int64_t n = k ? 5 : 16;
        r = m;
        if (!T_OK(nn_graph_set_batch(g, n), e->ctx) || !(ev = bm_graph(e, &r, n, 0, 1, g, 0))) goto done;
        if (!bm_write(e, g, &m, n, 40) || !bm_write(e, ev, &r, n, 40)) goto done;
        if (!T_OK(nn_graph_forward(g), e->ctx) || !T_OK(nn_graph_forward(ev), e->ctx)) goto done;
        if (!bm_same(e, g, m.logits, ev, r.logits, n * 3, "eval logits") || !bm_same(e, g, m.loss, ev, r.loss, 1, "eval loss")) goto done;
        T_CHECK(nn_graph_step(g) == NN_ERR_STATE, "a step in eval mode was not refused");
        nn_graph_destroy(ev);
        ev = NULL;
    }
    if (!T_OK(nn_tensor_read(g, nn_graph_find(g, "bn.running_mean"), after, sizeof after), e->ctx)) goto done;
    T_CHECK(memcmp(before, after, sizeof before) == 0, "eval mode moved the running mean");
    if (!T_OK(nn_graph_train(g, 1), e->ctx) || !bm_write(e, g, &m, 5, 0) || !T_OK(nn_graph_step(g), e->ctx)) goto done;
    if (!T_OK(nn_tensor_read(g, nn_graph_find(g, "bn.running_mean"), after, sizeof after), e->ctx)) goto done;
    T_CHECK(memcmp(before, after, sizeof before) != 0, "a training step at 5 rows left the running mean");
done:
    nn_graph_destroy(ev);
    nn_graph_destroy(g);
    t_end();
}

/* The dataset helper: 60,000 rows at batch 128 are 469 batches an epoch, the last of 96,
   and an epoch trains on every row once (read back from the batch's samples); the next
   epoch starts with a full batch. drop_last: 468 batches, no partial one. */
static void test_epoch(const t_env *e) {
    const int64_t N = 60000;
    float *xs = (float *)malloc((size_t)N * 5 * 4), rows[128 * 5];
    int32_t *ys = (int32_t *)malloc((size_t)N * 4);
    unsigned char *seen = (unsigned char *)calloc((size_t)N, 1);
    nn_array x, y;
    bm m;
    nn_graph *g = NULL;
    int64_t i, seen_rows = 0, batches = 0, epoch = -1;
    int drop;
    if (!t_begin(e, "batch: an epoch of 60,000 rows at batch 128 trains on 60,000 (469 batches, the last of 96)")) goto out;
    if (!T_CHECK(xs && ys && seen, "out of memory")) goto out;
    for (i = 0; i < N; i++) {
        int j;
        for (j = 0; j < 5; j++) xs[i * 5 + j] = (float)i + (float)j / 8.0f; /* row i's first value is i */
        ys[i] = (int32_t)(i % 3);
    }
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    x.dtype = NN_F32;
    x.shape = nn_shape2(N, 5);
    x.data = xs;
    y.dtype = NN_I32;
    y.shape = nn_shape1(N);
    y.data = ys;
    for (drop = 0; drop < 2; drop++) {
        memset(&m, 0, sizeof m);
        m.dd.x = &x;
        m.dd.y = &y;
        m.dd.shuffle = 1;
        m.dd.drop_last = drop;
        if (!(g = bm_graph(e, &m, 128, 1, 0, NULL, 1))) goto out;
        memset(seen, 0, (size_t)N);
        seen_rows = batches = 0;
        for (;;) {
            int64_t n = 0;
            if (!T_OK(nn_dataset_next_batch(m.ds), e->ctx) || !T_OK(nn_graph_step(g), e->ctx)) goto out;
            if (nn_dataset_epoch(m.ds, &epoch) != NN_OK || epoch > 0) break;
            n = t_numel(g, m.x) / 5;
            if (!T_CHECK(n >= 1 && n <= 128, "a batch of %lld rows", (long long)n) ||
                !T_OK(nn_tensor_read(g, m.x, rows, (size_t)n * 5 * 4), e->ctx))
                goto out;
            for (i = 0; i < n; i++) {
                int64_t at = (int64_t)rows[i * 5];
                if (!T_CHECK(at >= 0 && at < N && !seen[at], "row %lld twice in epoch 0", (long long)at)) goto out;
                seen[at] = 1;
            }
            seen_rows += n;
            batches++;
            if (!T_CHECK(n == 128 || batches == (drop ? 468 : 469), "batch %lld has %lld rows", (long long)batches, (long long)n)) goto out;
        }
        T_CHECK(batches == (drop ? 468 : 469) && seen_rows == (drop ? 59904 : N), "drop_last %d: epoch 0 was %lld batches, %lld rows",
                drop, (long long)batches, (long long)seen_rows);
        T_CHECK(t_numel(g, m.x) == 128 * 5, "epoch 1 began with %lld rows", (long long)(t_numel(g, m.x) / 5));
        /* evaluation on the same dataset and graph: eval mode, the next batch, a forward pass */
        if (!T_OK(nn_graph_train(g, 0), e->ctx) || !T_OK(nn_dataset_next_batch(m.ds), e->ctx) || !T_OK(nn_graph_forward(g), e->ctx) ||
            !T_OK(nn_tensor_read(g, m.x, rows, 128 * 5 * 4), e->ctx))
            goto out;
        T_CHECK(nn_graph_step(g) == NN_ERR_STATE, "a step in eval mode on a dataset was not refused");
        nn_graph_destroy(g);
        g = NULL;
    }
out:
    nn_graph_destroy(g);
    free(xs);
    free(ys);
    free(seen);
    t_end();
}

/* A context destroyed before its model graph, which holds two variants: every call on the
   graph is then NN_ERR_STATE, and destroying it frees all (make test-asan). */
static void test_lifetime(const t_env *e) {
    nn_context_desc d;
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    bm m;
    if (!t_begin(e, "batch: a context destroyed before a model graph with variants")) return;
    t_context_desc(e, &d);
    if (!T_OK(nn_context_create(&d, &ctx), ctx)) goto done;
    memset(&m, 0, sizeof m);
    m.bn = 1;
    memset(&gd, 0, sizeof gd);
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx) || !T_OK(nn_graph_build(g, bm_build, 8, &m), ctx) ||
        !T_OK(bm_compile(g, &m, 1), ctx) || !T_OK(nn_graph_set_batch(g, 3), ctx) || !T_OK(nn_graph_train(g, 0), ctx))
        goto done;
    nn_context_destroy(ctx);
    ctx = NULL;
    T_CHECK(nn_graph_forward(g) == NN_ERR_STATE, "a forward pass ran on an orphaned model graph");
    T_CHECK(nn_graph_set_batch(g, 5) == NN_ERR_STATE, "nn_graph_set_batch built a variant on an orphaned graph");
done:
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    t_end();
}

/* ---- refusals ---- */

static bm bad_m;
static nn_tensor bad_model(nn_graph *g, int bn, int odd, int accum) {
    nn_compile_desc cd;
    memset(&bad_m, 0, sizeof bad_m);
    bad_m.bn = bn;
    bad_m.odd = odd;
    if (nn_graph_build(g, bm_build, 32, &bad_m) != NN_OK) return T(-1);
    memset(&cd, 0, sizeof cd);
    cd.loss = bad_m.loss;
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.1f;
    cd.optimizer.accumulate_steps = accum;
    return nn_graph_compile(g, &cd) == NN_OK ? bad_m.loss : T(-1);
}

static nn_tensor b_plain_batch(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    nn_graph_output(g, nn_relu(g, F(g, S2(4, 3))));
    if (nn_graph_compile(g, NULL) != NN_OK) return CALL(NN_OK);
    return CALL(nn_graph_set_batch(g, 2));
}
static nn_tensor b_plain_eval(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    nn_graph_output(g, nn_relu(g, F(g, S2(4, 3))));
    if (nn_graph_compile(g, NULL) != NN_OK) return CALL(NN_OK);
    return CALL(nn_graph_train(g, 0));
}
static nn_tensor b_batch0(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    if (bad_model(g, 0, 0, 0).id < 0) return CALL(NN_OK);
    return CALL(nn_graph_set_batch(g, 0));
}
static nn_tensor b_step_eval(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    if (bad_model(g, 0, 0, 0).id < 0 || nn_graph_train(g, 0) != NN_OK) return CALL(NN_OK);
    return CALL(nn_graph_step(g));
}
static nn_tensor b_bn_one(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    if (bad_model(g, 1, 0, 0).id < 0) return CALL(NN_OK);
    return CALL(nn_graph_set_batch(g, 1));
}
static nn_tensor b_odd(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    if (bad_model(g, 0, 1, 0).id < 0) return CALL(NN_OK);
    return CALL(nn_graph_set_batch(g, 8));
}
static nn_tensor b_accum(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    if (bad_model(g, 0, 0, 2).id < 0) return CALL(NN_OK);
    return CALL(nn_graph_set_batch(g, 8));
}
static nn_tensor b_not_empty(nn_graph *g, nn_compile_desc *cd) {
    bm m;
    (void)cd;
    memset(&m, 0, sizeof m);
    F(g, S2(2, 2));
    return CALL(nn_graph_build(g, bm_build, 4, &m));
}
static nn_tensor b_train_bad(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    if (bad_model(g, 0, 0, 0).id < 0) return CALL(NN_OK);
    return CALL(nn_graph_train(g, 2));
}

static float bd_x[10 * 5];
static int32_t bd_y[10];
static nn_result bd_dataset(nn_graph *g, int64_t batch) {
    nn_array x, y;
    nn_dataset_desc dd;
    nn_dataset *ds = NULL;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    x.dtype = NN_F32;
    x.shape = S2(10, 5);
    x.data = bd_x;
    y.dtype = NN_I32;
    y.shape = S1(10);
    y.data = bd_y;
    memset(&dd, 0, sizeof dd);
    dd.x = &x;
    dd.y = &y;
    dd.batch = batch;
    return nn_dataset_create(g, &dd, &ds);
}
static nn_tensor b_partial_plain(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    return CALL(bd_dataset(g, 4));
}
static nn_result bd_model(nn_graph *g, int64_t batch, void *user) {
    (void)batch;
    (void)user;
    return bd_dataset(g, 4);
}
static nn_tensor b_dataset_batch(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    nn_graph_build(g, bd_model, 5, NULL);
    return T(-1);
}

static const bad_row batch_bad[] = {
    {"batch", "nn_graph_set_batch on a graph not built by nn_graph_build", b_plain_batch, R_STATE, "nn_graph_set_batch|nn_graph_build", R_CALL},
    {"batch", "eval mode on a graph not built by nn_graph_build", b_plain_eval, R_STATE, "nn_graph_train|nn_graph_build", R_CALL},
    {"batch", "batch 0", b_batch0, R_INV, "nn_graph_set_batch|batch 0", R_CALL},
    {"batch", "a step in eval mode", b_step_eval, R_STATE, "nn_graph_step|eval mode|nn_graph_train(g, 1)", R_CALL},
    {"batch", "batch norm at 1 row in training mode", b_bn_one, NN_ERR_SHAPE, "nn_graph_set_batch|batch 1|nn_batch_norm|1 value per channel", R_CALL},
    {"batch", "a model that builds other ops at another batch", b_odd, R_STATE, "nn_graph_set_batch|batch 8|same ops", R_CALL},
    {"batch", "another batch with accumulate_steps 2", b_accum, R_STATE, "nn_graph_set_batch|accumulate_steps|32", R_CALL},
    {"batch", "nn_graph_build on a graph with ops", b_not_empty, R_STATE, "nn_graph_build|has ops already", R_CALL},
    {"batch", "nn_graph_train(g, 2)", b_train_bad, R_INV, "nn_graph_train|training is 2", R_CALL},
    {"batch", "a partial last batch on a graph of one batch size", b_partial_plain, R_INV,
     "nn_dataset_create|10 samples at batch 4|last batch of 2|nn_graph_build|drop_last", R_CALL},
    {"batch", "a dataset batch other than the model's", b_dataset_batch, R_INV, "nn_dataset_create|batch 4 in a model built at batch 5", 0},
};

void suite_batch(const t_env *e) {
    test_sizes(e);
    test_train(e);
    test_eval(e);
    test_epoch(e);
    test_lifetime(e);
    t_bad_rows(e, batch_bad, (int)(sizeof batch_bad / sizeof batch_bad[0]));
}
