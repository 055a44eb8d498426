/* Training state and exact resume: train N steps, save the state, load it into a graph built
   the same way in a NEW context, train M more, and compare with N+M steps straight through
   (bitwise on the CPU backend, 1e-6 relative on OpenCL), with dropout and a shuffling
   dataset in the network, for Adam, SGD with momentum and gradient accumulation. The two
   halves share nothing in memory: the data are regenerated from a seed and every object is
   made anew. Also: load errors, the CSV loader and the dataset's order. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CK_N 40
#define CK_IN 6
#define CK_CLASSES 3
#define CK_BATCH 8 /* 5 batches an epoch */

static int ck_tmp(char *path) {
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

/* A context on e's backend that shares nothing with e->ctx. */
static nn_context *ck_context(const t_env *e) {
    nn_context_desc d;
    nn_context *ctx = NULL;
    t_context_desc(e, &d);
    if (nn_context_create(&d, &ctx) != NN_OK) return NULL;
    return ctx;
}

typedef struct ck_run {
    nn_graph *g;
    nn_dataset *ds;
} ck_run;

/* The same network every time: dense-relu-dropout-dense on a shuffled dataset. */
static int ck_build(nn_context *ctx, const nn_optimizer *opt, ck_run *run) {
    float x[CK_N * CK_IN];
    int32_t y[CK_N];
    nn_array ax, ay;
    nn_dataset_desc dd;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor h, logits, loss;
    int i;
    t_seed(4242);
    for (i = 0; i < CK_N * CK_IN; i++) x[i] = (float)t_uniform(-1, 1);
    for (i = 0; i < CK_N; i++) y[i] = t_randint(CK_CLASSES);
    memset(&ax, 0, sizeof ax);
    memset(&ay, 0, sizeof ay);
    ax.dtype = NN_F32;
    ax.shape = nn_shape2(CK_N, CK_IN);
    ax.data = x;
    ay.dtype = NN_I32;
    ay.shape = nn_shape1(CK_N);
    ay.data = y;
    memset(&gd, 0, sizeof gd);
    gd.seed = 77;
    memset(run, 0, sizeof *run);
    if (nn_graph_create(ctx, &gd, &run->g) != NN_OK) return 0;
    memset(&dd, 0, sizeof dd);
    dd.name = "train";
    dd.x = &ax;
    dd.y = &ay;
    dd.batch = CK_BATCH;
    dd.shuffle = 1;
    if (nn_dataset_create(run->g, &dd, &run->ds) != NN_OK) return 0;
    h = nn_relu(run->g, nn_linear_layer(run->g, nn_dataset_x(run->ds), 16, NULL, "fc1"));
    h = nn_dropout(run->g, h, 0.3f);
    logits = nn_linear_layer(run->g, h, CK_CLASSES, NULL, "fc2");
    loss = nn_softmax_cross_entropy(run->g, logits, nn_dataset_y(run->ds));
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer = *opt;
    return nn_graph_compile(run->g, &cd) == NN_OK;
}

static int ck_train(ck_run *run, int steps) {
    int i;
    for (i = 0; i < steps; i++)
        if (nn_dataset_next_batch(run->ds) != NN_OK || nn_graph_step(run->g) != NN_OK) return 0;
    return nn_graph_finish(run->g) == NN_OK;
}

static const char *const ck_params[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
static const long ck_sizes[4] = {16 * CK_IN, 16, CK_CLASSES * 16, CK_CLASSES};

static int ck_read(ck_run *run, float *out) {
    int k;
    long off = 0;
    for (k = 0; k < 4; k++) {
        if (nn_tensor_read(run->g, nn_graph_find(run->g, ck_params[k]), out + off, (size_t)ck_sizes[k] * 4) != NN_OK) return 0;
        off += ck_sizes[k];
    }
    return 1;
}

#define CK_TOTAL (16 * CK_IN + 16 + CK_CLASSES * 16 + CK_CLASSES)

static void ck_resume_case(const t_env *e, const char *name, const nn_optimizer *opt, int n, int m) {
    char path[] = "/tmp/nn_ckpt_XXXXXX";
    float straight[CK_TOTAL], resumed[CK_TOTAL];
    nn_context *c1 = NULL;
    ck_run a, b;
    int ok = 1;
    if (!t_begin(e, name)) return;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (!T_CHECK(ck_tmp(path), "mkstemp failed")) goto done;
    /* straight through on e->ctx */
    ok = T_CHECK(ck_build(e->ctx, opt, &a), "build: %s", nn_context_last_error(e->ctx)) &&
         T_CHECK(ck_train(&a, n + m), "train: %s", nn_context_last_error(e->ctx)) && T_CHECK(ck_read(&a, straight), "read");
    nn_graph_destroy(a.g);
    a.g = NULL;
    if (!ok) goto done;
    /* the first half on e->ctx, saved */
    ok = T_CHECK(ck_build(e->ctx, opt, &a), "build: %s", nn_context_last_error(e->ctx)) &&
         T_CHECK(ck_train(&a, n), "train: %s", nn_context_last_error(e->ctx)) && T_OK(nn_graph_save_state(a.g, path), e->ctx);
    nn_graph_destroy(a.g);
    a.g = NULL;
    if (!ok) goto done;
    /* the second half in a new context */
    c1 = ck_context(e);
    if (!T_CHECK(c1 != NULL, "cannot open a second context on %s", e->backend)) goto done;
    if (!T_CHECK(ck_build(c1, opt, &b), "build: %s", nn_context_last_error(c1)) || !T_OK(nn_graph_load_state(b.g, path), c1) ||
        !T_CHECK(ck_train(&b, m), "train: %s", nn_context_last_error(c1)) || !T_CHECK(ck_read(&b, resumed), "read"))
        goto done;
    if (!e->opencl) {
        long i, diff = 0;
        for (i = 0; i < CK_TOTAL; i++) diff += memcmp(&straight[i], &resumed[i], 4) != 0;
        T_CHECK(diff == 0, "%ld of %d parameters differ from the run straight through", diff, CK_TOTAL);
    } else {
        double sa[CK_TOTAL], sb[CK_TOTAL], err;
        long i;
        for (i = 0; i < CK_TOTAL; i++) {
            sa[i] = resumed[i];
            sb[i] = straight[i];
        }
        err = t_relerr(sa, sb, CK_TOTAL);
        T_CHECK(err <= 1e-6, "relative error %g against the run straight through", err);
    }
    T_CHECK(t_epoch(b.ds) == (n + m - 1) / 5, "epoch %lld after %d batches", (long long)t_epoch(b.ds), n + m);
done:
    if (b.g) nn_graph_destroy(b.g);
    if (c1) nn_context_destroy(c1);
    remove(path);
    t_end();
}

static int ck_text(const char *path, const char *s) {
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = fwrite(s, 1, strlen(s), f) == strlen(s);
    return (fclose(f) == 0) && ok;
}

static void ck_errors(const t_env *e) {
    char path[] = "/tmp/nn_ckpt_XXXXXX";
    nn_optimizer adam, sgd;
    ck_run a, b;
    float before[CK_TOTAL], after[CK_TOTAL];
    nn_result r;
    if (!t_begin(e, "ckpt: load errors name the problem")) return;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&adam, 0, sizeof adam);
    adam.kind = NN_OPT_ADAM;
    memset(&sgd, 0, sizeof sgd);
    sgd.kind = NN_OPT_SGD;
    sgd.momentum = 0.9f;
    if (!T_CHECK(ck_tmp(path), "mkstemp failed")) goto done;
    if (!T_CHECK(ck_build(e->ctx, &adam, &a), "build: %s", nn_context_last_error(e->ctx)) || !T_CHECK(ck_train(&a, 3), "train") ||
        !T_OK(nn_graph_save_state(a.g, path), e->ctx) || !T_CHECK(ck_build(e->ctx, &sgd, &b), "build") ||
        !T_CHECK(ck_read(&b, before), "read"))
        goto done;
    r = nn_graph_load_state(b.g, path);
    T_CHECK(r == NN_ERR_STATE && strstr(nn_context_last_error(e->ctx), "optimizer adam"), "kind mismatch: %d %s", (int)r,
            nn_context_last_error(e->ctx));
    T_CHECK(ck_read(&b, after) && memcmp(before, after, sizeof before) == 0, "a failed load changed the parameters");
    /* a plain parameter file is not a training state */
    if (!T_OK(nn_graph_save_safetensors(a.g, path), e->ctx)) goto done;
    r = nn_graph_load_state(a.g, path);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(e->ctx), "nn.state"), "plain file: %d %s", (int)r, nn_context_last_error(e->ctx));
    /* a state with a tensor missing: rewrite the header's name of one optimizer tensor */
    if (!T_OK(nn_graph_save_state(a.g, path), e->ctx)) goto done;
    {
        FILE *f = fopen(path, "r+b");
        char hdr[4096];
        size_t n = f ? fread(hdr, 1, sizeof hdr - 1, f) : 0;
        char *p;
        hdr[n] = 0;
        for (p = hdr + 8; p + 16 < hdr + n; p++)
            if (memcmp(p, "fc2.bias.__opt.1", 16) == 0) break;
        if (T_CHECK(f && p + 16 < hdr + n, "no fc2.bias.__opt.1 in the header")) {
            p[15] = '7';
            fseek(f, (long)(p - hdr), SEEK_SET);
            fwrite(p, 1, 16, f);
        }
        if (f) fclose(f);
    }
    r = nn_graph_load_state(a.g, path);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(e->ctx), "fc2.bias.__opt.1"), "missing tensor: %d %s", (int)r,
            nn_context_last_error(e->ctx));
    /* garbage */
    ck_text(path, "not a safetensors file");
    r = nn_graph_load_state(a.g, path);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(e->ctx), path), "garbage: %d %s", (int)r, nn_context_last_error(e->ctx));
done:
    if (a.g) nn_graph_destroy(a.g);
    if (b.g) nn_graph_destroy(b.g);
    remove(path);
    t_end();
}

static void ck_csv(const t_env *e) {
    static const struct {
        const char *text, *want;
        int header;
        char delim;
    } bad[] = {
        {"", ":1: no data rows", 0, 0},
        {"a,b\n", ":1: no data rows", 1, 0},
        {"1,2\n3\n", ":2: 1 fields, the first row has 2", 0, 0},
        {"1,2\n3,x\n", ":2: field 2 \"x\" is not a number", 0, 0},
        {"1,2\n3,,4\n", ":2: field 2 \"\" is not a number", 0, 0},
        {"1;2\n3;4e\n", ":2: field 2 \"4e\"", 0, ';'},
    };
    char path[] = "/tmp/nn_csv_XXXXXX";
    nn_csv_desc d;
    nn_array a;
    size_t i;
    if (!t_begin(e, "csv: numbers, header, delimiter, errors with path:line")) return;
    memset(&a, 0, sizeof a);
    if (!T_CHECK(ck_tmp(path), "mkstemp failed")) goto done;
    memset(&d, 0, sizeof d);
    d.header = 1;
    if (ck_text(path, "x, y ,label\r\n1.5, -2,0\r\n\r\n 3e2,4,1\r\n") && T_OK(nn_array_load_csv(e->ctx, path, &d, &a), e->ctx)) {
        static const float want[6] = {1.5f, -2, 0, 300, 4, 1};
        T_CHECK(a.dtype == NN_F32 && a.shape.ndim == 2 && a.shape.dim[0] == 2 && a.shape.dim[1] == 3, "shape");
        T_CHECK(a.data && memcmp(a.data, want, sizeof want) == 0, "values");
    }
    nn_array_free(&a);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[200];
        nn_result r;
        memset(&d, 0, sizeof d);
        d.header = bad[i].header;
        d.delimiter = bad[i].delim;
        ck_text(path, bad[i].text);
        r = nn_array_load_csv(e->ctx, path, &d, &a);
        snprintf(want, sizeof want, "%s%s", path, bad[i].want);
        T_CHECK(r == NN_ERR_IO && a.data == NULL && strstr(nn_context_last_error(e->ctx), want), "case %d: %d \"%s\", want \"%s\"",
                (int)i, (int)r, nn_context_last_error(e->ctx), want);
    }
    T_CHECK(nn_array_load_csv(e->ctx, "/nonexistent/x.csv", NULL, &a) == NN_ERR_IO, "a missing file");
done:
    remove(path);
    t_end();
}

/* Each epoch visits every sample once; the order depends on the epoch and the seed only. */
static void ck_dataset_order(const t_env *e) {
    float x[CK_N];
    int32_t y[CK_N];
    nn_array ax, ay;
    nn_dataset_desc dd;
    nn_compile_desc cd;
    nn_graph *g[2] = {NULL, NULL};
    nn_dataset *ds[2];
    int seen[2][CK_N], epoch, i, k, differs = 0;
    float order[2][3][CK_N];
    if (!t_begin(e, "dataset: shuffled epochs, reproducible")) return;
    for (i = 0; i < CK_N; i++) {
        x[i] = (float)i;
        y[i] = i;
    }
    memset(&ax, 0, sizeof ax);
    memset(&ay, 0, sizeof ay);
    ax.dtype = NN_F32;
    ax.shape = nn_shape2(CK_N, 1);
    ax.data = x;
    ay.dtype = NN_I32;
    ay.shape = nn_shape1(CK_N);
    ay.data = y;
    for (k = 0; k < 2; k++) {
        memset(&dd, 0, sizeof dd);
        dd.x = &ax;
        dd.y = &ay;
        dd.batch = CK_N / 4;
        dd.shuffle = 1;
        dd.seed = 9;
        if (!T_OK(nn_graph_create(e->ctx, NULL, &g[k]), e->ctx) || !T_OK(nn_dataset_create(g[k], &dd, &ds[k]), e->ctx)) goto done;
        nn_graph_output(g[k], nn_dataset_x(ds[k]));
        memset(&cd, 0, sizeof cd);
        if (!T_OK(nn_graph_compile(g[k], &cd), e->ctx)) goto done;
        for (epoch = 0; epoch < 3; epoch++) {
            memset(seen[k], 0, sizeof seen[k]);
            for (i = 0; i < 4; i++) {
                int j;
                if (!T_OK(nn_dataset_next_batch(ds[k]), e->ctx) || !T_OK(nn_graph_forward(g[k]), e->ctx) ||
                    !T_OK(nn_tensor_read(g[k], nn_dataset_x(ds[k]), order[k][epoch] + i * (CK_N / 4), (CK_N / 4) * sizeof(float)), e->ctx))
                    goto done;
                for (j = 0; j < CK_N / 4; j++) seen[k][(int)order[k][epoch][i * (CK_N / 4) + j]]++;
            }
            for (i = 0; i < CK_N; i++) T_CHECK(seen[k][i] == 1, "epoch %d: sample %d seen %d times", epoch, i, seen[k][i]);
            T_CHECK(t_epoch(ds[k]) == epoch, "epoch %lld, want %d", (long long)t_epoch(ds[k]), epoch);
        }
    }
    T_CHECK(memcmp(order[0], order[1], sizeof order[0]) == 0, "two datasets of one seed disagree");
    for (i = 0; i < CK_N; i++) differs += order[0][0][i] != order[0][1][i];
    T_CHECK(differs > 0, "epochs 0 and 1 have the same order");
done:
    for (k = 0; k < 2; k++)
        if (g[k]) nn_graph_destroy(g[k]);
    t_end();
}

void suite_ckpt(const t_env *e) {
    nn_optimizer o;
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_ADAM;
    o.lr = 1e-2f;
    ck_resume_case(e, "ckpt: exact resume, Adam, dropout, dataset", &o, 7, 6);
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_SGD;
    o.lr = 5e-2f;
    o.momentum = 0.9f;
    o.nesterov = 1;
    ck_resume_case(e, "ckpt: exact resume, SGD momentum", &o, 5, 7);
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_NADAM;
    o.accumulate_steps = 3;
    ck_resume_case(e, "ckpt: exact resume, NAdam, accumulation mid-cycle", &o, 7, 8);
    T_RUN(e, ck_errors, ck_csv, ck_dataset_order);
}
