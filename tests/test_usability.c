/* Misuse that used to pass silently (issue 22): each is an error with a message that says
   what to do, or a documented behaviour. Bad-input rows (family "usability"): an optimizer
   without a loss; two layers of one name; a dataset step without nn_dataset_next_batch
   (never, and not since the last step); safetensors allow_missing that matched nothing; a
   gradient read without keep_grads; NN_DEVICE naming no device. Cases: weight tying with
   nn_graph_share_names; the load's count of matched tensors; nn_lr_schedule_at with lr 0;
   the backend line at NN_LOG=debug. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "bad_rows.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- rows ---- */

static nn_tensor u_opt_no_loss(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor y = nn_linear_layer(g, F(g, S2(2, 3)), 4, NULL, "fc");
    nn_graph_output(g, y);
    cd->optimizer.kind = NN_OPT_ADAM;
    return y;
}

static nn_tensor u_same_name(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor x = F(g, S2(2, 3));
    (void)cd;
    return nn_linear_layer(g, nn_linear_layer(g, x, 3, NULL, "fc"), 3, NULL, "fc");
}

/* A dataset of 8 rows [8, 3] -> 2 classes at batch 4, a linear layer and cross-entropy,
   compiled; *ds the dataset. NULL when something failed. */
static nn_graph *u_data_graph(nn_graph *g, nn_dataset **ds) {
    float xs[24];
    int32_t ys[8];
    nn_array x, y;
    nn_dataset_desc dd;
    nn_compile_desc cd;
    int i;
    for (i = 0; i < 24; i++) xs[i] = (float)(i % 5) - 2.0f;
    for (i = 0; i < 8; i++) ys[i] = i % 2;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    x.dtype = NN_F32;
    x.shape = S2(8, 3);
    x.data = xs;
    y.dtype = NN_I32;
    y.shape = S1(8);
    y.data = ys;
    memset(&dd, 0, sizeof dd);
    dd.x = &x;
    dd.y = &y;
    dd.batch = 4;
    if (nn_dataset_create(g, &dd, ds) != NN_OK) return NULL;
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_cross_entropy_loss(g, nn_linear_layer(g, nn_dataset_x(*ds), 2, NULL, "fc"), nn_dataset_y(*ds), NULL);
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.1f;
    return nn_graph_compile(g, &cd) == NN_OK ? g : NULL;
}

static nn_tensor u_step_no_batch(nn_graph *g, nn_compile_desc *cd) {
    nn_dataset *ds = NULL;
    (void)cd;
    if (!u_data_graph(g, &ds)) return CALL(NN_OK);
    return CALL(nn_graph_step(g));
}

static nn_tensor u_step_same_batch(nn_graph *g, nn_compile_desc *cd) {
    nn_dataset *ds = NULL;
    (void)cd;
    if (!u_data_graph(g, &ds) || nn_dataset_next_batch(ds) != NN_OK || nn_graph_step(g) != NN_OK) return CALL(NN_OK);
    return CALL(nn_graph_step(g));
}

/* Parameters a.weight [2, 2] saved; the graph's own b.weight [2, 2] loaded with allow_missing. */
static nn_tensor u_load_none(nn_graph *g, nn_compile_desc *cd) {
    char path[] = "/tmp/nn-test-usab-XXXXXX";
    nn_graph *other = NULL;
    nn_init z;
    nn_result r = NN_OK;
    int fd = mkstemp(path);
    (void)cd;
    if (fd < 0) return CALL(NN_OK);
    close(fd);
    memset(&z, 0, sizeof z);
    nn_param(g, "b.weight", S2(2, 2), z);
    if (nn_graph_create(t_row_ctx, NULL, &other) == NN_OK) {
        nn_param(other, "a.weight", S2(2, 2), z);
        r = nn_graph_save_safetensors(other, path);
        nn_graph_destroy(other);
    }
    r = r == NN_OK ? nn_graph_load_safetensors(g, path, 1) : NN_OK;
    remove(path);
    return CALL(r);
}

static nn_tensor u_grad_unkept(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor x = F(g, S2(2, 3)), w, gw;
    float buf[12];
    nn_compile_desc d;
    (void)cd;
    memset(&d, 0, sizeof d);
    d.loss = nn_mean(g, nn_linear_layer(g, x, 4, NULL, "fc"));
    d.optimizer.kind = NN_OPT_SGD;
    w = nn_graph_find(g, "fc.weight");
    if (nn_graph_compile(g, &d) != NN_OK || nn_tensor_fill(g, x, 1.0f) != NN_OK || nn_graph_step(g) != NN_OK) return CALL(NN_OK);
    gw = nn_graph_grad(g, w);
    if (gw.id <= 0) return CALL(NN_OK);
    return CALL(nn_tensor_read(g, gw, buf, sizeof buf));
}

static void u_log_keep(void *user, nn_log_level level, const char *msg) {
    if (level == NN_LOG_ERROR) snprintf((char *)user, sizeof t_call_msg, "%s", msg);
}

/* The message of a context that failed to open goes to its log: t_call_msg keeps it. */
static nn_tensor u_bad_device(nn_graph *g, nn_compile_desc *cd) {
    nn_context_desc d;
    nn_context *c = NULL;
    nn_result r;
    (void)g;
    (void)cd;
    memset(&d, 0, sizeof d);
    d.device = "no-such-device-xyz";
    d.log = u_log_keep;
    d.log_user = t_call_msg;
    r = nn_context_create(&d, &c);
    nn_context_destroy(c);
    return CALL(r);
}

static const bad_row usability_bad[] = {
    {"usability", "an optimizer without a loss", u_opt_no_loss, R_INV, "nn_graph_compile|optimizer is set but no loss|nn_compile_desc.loss", 1},
    {"usability", "two layers named fc", u_same_name, R_INV, "nn_param|already has a parameter named fc.weight|nn_graph_share_names", 0},
    {"usability", "a dataset step with no batch taken", u_step_no_batch, R_STATE, "nn_graph_step|data.idx|nn_dataset_next_batch", R_CALL},
    {"usability", "a dataset step on the last step's batch", u_step_same_batch, R_STATE,
     "nn_graph_step|data.idx|not written since the last step|nn_dataset_next_batch", R_CALL},
    {"usability", "allow_missing that matched nothing", u_load_none, NN_ERR_IO, "none of the graph's 1 parameters|b.weight|a.weight|allow_missing", R_CALL},
    {"usability", "a parameter's gradient without keep_grads", u_grad_unkept, R_STATE, "nn_tensor_read|gradient of parameter fc.weight|keep_grads", R_CALL},
    {"usability", "NN_DEVICE naming no device", u_bad_device, NN_ERR_UNAVAILABLE, "NN_DEVICE=no-such-device-xyz|cpu", R_CALL},
};

/* ---- cases ---- */

/* nn_graph_share_names: a layer applied twice is one set of weights (3 parameters' worth of
   a [3, 3] layer, not two), and switching it off refuses the name again. */
static void test_share_names(const t_env *e) {
    nn_graph *g = NULL;
    nn_tensor x, a, b, w1, w2;
    nn_init z;
    if (!t_begin(e, "usability: nn_graph_share_names ties a layer applied twice")) return;
    memset(&z, 0, sizeof z);
    if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) goto done;
    x = nn_input(g, "x", NN_F32, S2(2, 3));
    w1 = nn_param(g, "w", S2(3, 3), z);
    T_CHECK(nn_graph_share_names(g, 1) == NN_OK, "nn_graph_share_names(1) failed");
    w2 = nn_param(g, "w", S2(3, 3), z);
    T_CHECK(w1.id > 0 && w1.id == w2.id, "the shared name gave tensor %d, then %d", w1.id, w2.id);
    a = nn_linear_layer(g, x, 3, NULL, "enc");
    b = nn_linear_layer(g, a, 3, NULL, "enc"); /* the same weights again */
    T_CHECK(a.id > 0 && b.id > 0 && nn_graph_status(g) == NN_OK, "a layer applied twice was refused: %s",
            nn_context_last_error(e->ctx));
    T_CHECK(nn_graph_share_names(g, 0) == NN_OK && nn_param(g, "w", S2(3, 3), z).id < 0, "with sharing off the name was taken again");
    T_CHECK(nn_graph_share_names(g, 2) == NN_ERR_INVALID_ARGUMENT, "nn_graph_share_names(2) was accepted");
done:
    nn_graph_destroy(g);
    t_end();
}

/* The dataset helper still trains: a batch taken before each step, over two epochs. */
static void test_dataset_steps(const t_env *e) {
    nn_graph *g = NULL;
    nn_dataset *ds = NULL;
    int64_t epoch = -1;
    int i;
    if (!t_begin(e, "usability: steps with a batch taken before each")) return;
    if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) goto done;
    if (!T_CHECK(u_data_graph(g, &ds) != NULL, "the dataset graph failed: %s", nn_context_last_error(e->ctx))) goto done;
    for (i = 0; i < 4; i++)
        if (!T_OK(nn_dataset_next_batch(ds), e->ctx) || !T_OK(nn_graph_step(g), e->ctx)) goto done;
    T_CHECK(nn_dataset_epoch(ds, &epoch) == NN_OK && epoch == 1, "epoch %lld after 4 batches of 4 of 8 rows", (long long)epoch);
    T_CHECK(nn_graph_forward(g) == NN_OK, "a forward pass on the last batch was refused: %s", nn_context_last_error(e->ctx));
done:
    nn_graph_destroy(g);
    t_end();
}

typedef struct u_lines {
    int n, errors;
    char text[8][512];
} u_lines;
static void u_collect(void *user, nn_log_level level, const char *msg) {
    u_lines *l = (u_lines *)user;
    if (level == NN_LOG_ERROR) l->errors++;
    if (l->n < 8) snprintf(l->text[l->n], sizeof l->text[0], "%s", msg);
    l->n++;
}

/* allow_missing with a part of the parameters in the file: loaded, and the count logged. */
static void test_load_count(const t_env *e) {
    char path[] = "/tmp/nn-test-usab-XXXXXX";
    nn_context_desc d;
    nn_context *c = NULL;
    nn_graph *a = NULL, *b = NULL;
    nn_init one;
    u_lines lines;
    float v[4] = {0, 0, 0, 0};
    int fd, i, seen = 0;
    if (!t_begin(e, "usability: allow_missing logs how many parameters it loaded")) return;
    memset(&lines, 0, sizeof lines);
    t_context_desc(e, &d);
    d.log = u_collect;
    d.log_user = &lines;
    d.log_level = NN_LOG_INFO;
    fd = mkstemp(path);
    if (!T_CHECK(fd >= 0, "mkstemp failed")) goto done;
    close(fd);
    if (!T_OK(nn_context_create(&d, &c), NULL)) goto done;
    memset(&one, 0, sizeof one);
    one.kind = NN_INIT_CONSTANT;
    one.a = 3.0f;
    if (!T_OK(nn_graph_create(c, NULL, &a), c) || !T_OK(nn_graph_create(c, NULL, &b), c)) goto done;
    nn_param(a, "p.weight", S2(2, 2), one);
    nn_param(b, "p.weight", S2(2, 2), one);
    nn_param(b, "q.weight", S2(2, 2), one);
    if (!T_OK(nn_graph_save_safetensors(a, path), c)) goto done;
    lines.n = 0;
    if (!T_OK(nn_graph_load_safetensors(b, path, 1), c)) goto done;
    for (i = 0; i < lines.n && i < 8; i++) seen |= strstr(lines.text[i], "loaded 1 of 2 parameters") && strstr(lines.text[i], "q.weight");
    T_CHECK(seen, "no info line \"loaded 1 of 2 parameters ... q.weight\" (%d lines; first: %s)", lines.n, lines.n ? lines.text[0] : "");
    (void)v;
done:
    remove(path);
    nn_graph_destroy(a);
    nn_graph_destroy(b);
    nn_context_destroy(c);
    t_end();
}

/* nn_lr_schedule_at: lr 0 means "the optimizer's" only in a compile desc: refused here. */
static void test_lr_zero(const t_env *e) {
    nn_lr_schedule s;
    float lr = 1.0f;
    if (!t_begin(e, "usability: nn_lr_schedule_at refuses lr 0, takes NN_ZERO")) return;
    memset(&s, 0, sizeof s);
    s.kind = NN_LR_STEP;
    T_CHECK(nn_lr_schedule_at(&s, 3, &lr) == NN_ERR_INVALID_ARGUMENT && lr == 0.0f, "lr 0 gave %g", lr);
    s.lr = (float)NN_ZERO;
    T_CHECK(nn_lr_schedule_at(&s, 3, &lr) == NN_OK && lr == 0.0f, "lr NN_ZERO gave %g", lr);
    s.lr = 0.5f;
    T_CHECK(nn_lr_schedule_at(&s, 1, &lr) == NN_OK && lr == 0.05f, "step lr 0.5 at 1 gave %g", lr);
    t_end();
}

/* The default device at NN_LOG_DEBUG: no error-level line when a context opens, no line
   twice, and no "no OpenCL device found" when nn_list_devices lists some. */
static void test_device_log(const t_env *e) {
    nn_context_desc d;
    nn_context *c = NULL;
    u_lines lines;
    int i, j, count = 0;
    if (!t_begin(e, "usability: the backend line at NN_LOG=debug says what was found, once")) return;
    if (e->opencl) { /* the default device is the environment's; once is enough */
        t_end();
        return;
    }
    memset(&d, 0, sizeof d);
    memset(&lines, 0, sizeof lines);
    d.log = u_collect;
    d.log_user = &lines;
    d.log_level = NN_LOG_DEBUG;
    nn_list_devices(NULL, 0, &count);
    if (!getenv("NN_DEVICE") && T_OK(nn_context_create(&d, &c), NULL)) { /* the default device: $NN_DEVICE unset */
        T_CHECK(lines.errors == 0, "%d error lines opening the default device (first: %s)", lines.errors, lines.text[0]);
        for (i = 0; i < lines.n && i < 8; i++) {
            for (j = 0; j < i; j++) T_CHECK(strcmp(lines.text[i], lines.text[j]) != 0, "line twice: %s", lines.text[i]);
            T_CHECK(!(count > 0 && strstr(lines.text[i], "no device found")), "\"%s\" with %d devices listed", lines.text[i], count);
        }
    }
    nn_context_destroy(c);
    t_end();
}

void suite_usability(const t_env *e) {
    T_RUN(e, test_share_names, test_dataset_steps, test_load_count, test_lr_zero, test_device_log);
    t_bad_rows(e, usability_bad, (int)(sizeof usability_bad / sizeof usability_bad[0]));
}
