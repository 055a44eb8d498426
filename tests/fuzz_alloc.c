/* Allocation failures over a whole training life cycle: `make fuzz-alloc` (and `make fuzz`).
   NN_MALLOC / NN_REALLOC / NN_FREE are a counting allocator here. One run of the scenario,
   on the CPU backend (built with NN_NO_OPENCL; a pool of two threads), in stages:
     context   nn_context_create
     mlp       a graph; nn_input, nn_linear_layer x3 (256 -> 64 -> 12 -> 3), relu, dropout, tanh,
               nn_graph_output, cross-entropy; a parameter group; compiled with Adam and
               clip_norm; inputs written, three steps (new data before the third), the loss
               read after each, a forward run, the logits and a weight read. The first
               step's GEMMs outgrow the workspace the context reserves: an allocation there
     eval      a graph sharing the MLP's parameters (eval mode), compiled without a loss,
               written, run forward, its logits read
     save      nn_graph_save_safetensors and nn_graph_save_state of the trained MLP (the safetensors
               file through a symbolic link, which the save resolves)
     load      the MLP built and compiled again, nn_graph_load_safetensors and nn_graph_load_state of
               files written before the runs, then a step and its loss
     cnn       a graph; conv2d, batch norm, relu, max pool, conv2d, relu, max pool, flatten,
               dense, cross-entropy; SGD with Nesterov momentum, weight decay and
               clip_value; written, three steps with the loss read, the logits and a running
               mean read
     dataset   nn_array_load_csv and nn_array_load_idx, a graph fed by nn_dataset_create over them
               (dense, relu, dense, softmax cross-entropy, SGD), three batches and steps
               (across an epoch: a reshuffle), nn_graph_save_state with the dataset's position
     destroy   every graph, the arrays, the context destroyed while the dataset's graph still
               lives, then that graph
   The clean run counts its allocations (T; per stage in the summary line). Then, for every N
   in 1..T, the Nth allocation fails alone ("once"), and every allocation from the Nth on
   fails ("from N on"): 2T + 1 runs, every N in both modes. Every API call of a run must
   return NN_OK with the clean run's results, bit for bit (tensor ids, losses, tensors read,
   file bytes, arrays, a graph's whole state compared through a saved state), or
   NN_ERR_OUT_OF_MEMORY with a message that says so (for nn_context_create, the message its
   log callback got), and only when an allocation failed in that call (or, for
   nn_graph_compile, while the graph was built). After an error the rest of that stage is
   skipped, as a program would, but later stages run (in "once" mode they must give the
   clean run's results) and the run ends destroying everything. A failed save leaves the old
   file and no temporary; a failed load leaves the graph unchanged; a failed load of a CSV or
   IDX file leaves the array empty. Each run must free every block it allocated (the live
   count, and LSan at exit) and close every file it opened, within 60 s (a hang fails the
   run). A save must flush its file to disk (fsync is counted), and one whose fsync fails
   must leave the old file. Before the sweep, the GEMM's fallback for packing buffers that
   cannot be allocated is checked against the blocked path, bit for bit, over shapes, both
   transposes, beta 0 and 1, and every kernel the CPU runs.
   Output: a line of counts (runs that reported an error, runs whose failure was absorbed
   with the clean results, the GEMM cases), then FUZZ target=alloc execs=<runs>
   crashes=<runs that broke a rule> allocations=<T> (then the allocations per stage).
   About 20-40 s on two cores, mostly the saves' fsyncs. Build: ASan, LSan and UBSan.
   Environment: NN_FUZZ_ALLOC_WHERE=N prints the stack of the clean run's Nth allocation;
   NN_FUZZ_ALLOC_REPORT=n prints the broken rules of n runs (40); NN_FUZZ_ALLOC_ABSORBED=1
   lists the runs that absorbed their failure; NN_FUZZ_ALLOC_STRIDE=k sweeps "from N on" for
   every k-th N only (a quicker look; CI sweeps every N).
   Without -DNN_FUZZ_ALLOC this file is empty, so the test binary ignores it. */
#if defined(NN_FUZZ_ALLOC)
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

static int fa_armed;            /* count (and maybe fail) allocations now */
static long fa_count;           /* allocations seen while armed, this run */
static long fa_fail_at;         /* 0: none fail; else the first one that does */
static int fa_persistent;       /* fail every allocation from fa_fail_at on (else only it) */
static long fa_failed;          /* failures injected this run */
static long fa_live;            /* blocks allocated and not freed, all the time */
static long fa_fsyncs;          /* NN__FSYNC calls */
static int fa_fsync_fail;       /* the next NN__FSYNC fails with EIO */

static long fa_where;            /* NN_FUZZ_ALLOC_WHERE=N: print the stack of the clean run's Nth allocation */
void __sanitizer_print_stack_trace(void);

static int fa_fail_now(void) {
    if (!fa_armed) return 0;
    fa_count++;
    if (fa_where && !fa_fail_at && fa_count == fa_where) {
        fprintf(stderr, "allocation %ld of the clean run:\n", fa_where);
        __sanitizer_print_stack_trace();
    }
    if (fa_fail_at && (fa_count == fa_fail_at || (fa_persistent && fa_count > fa_fail_at))) {
        fa_failed++;
        return 1;
    }
    return 0;
}

static void *fa_malloc(size_t n) {
    void *p;
    if (fa_fail_now()) return NULL;
    p = malloc(n ? n : 1);
    if (p) fa_live++;
    return p;
}

static void *fa_realloc(void *p, size_t n) {
    void *q;
    if (fa_fail_now()) return NULL;
    q = realloc(p, n ? n : 1);
    if (q && !p) fa_live++;
    return q;
}

static void fa_free(void *p) {
    if (!p) return;
    fa_live--;
    free(p);
}

static int fa_fsync(int fd) {
    fa_fsyncs++;
    if (fa_fsync_fail) {
        fa_fsync_fail = 0;
        errno = EIO;
        return -1;
    }
    return fsync(fd);
}

#define NN_MALLOC(sz) fa_malloc(sz)
#define NN_REALLOC(p, sz) fa_realloc(p, sz)
#define NN_FREE(p) fa_free(p)
#define NN__FSYNC(fd) fa_fsync(fd)
#define NN_IMPLEMENTATION
#include "../nn.h"

/* ---- the run's bookkeeping ---- */

enum { FA_SETUP, FA_CLEAN, FA_FAULT };
static int fa_phase;

#define FA_STAGES 8
static const char *const fa_stage_names[FA_STAGES] = {"context", "mlp", "eval", "save", "load", "cnn", "dataset", "destroy"};
static long fa_stage_allocs[FA_STAGES];
static int fa_stage;
static long fa_stage_count0;

#define FA_SLOTS 64 /* calls per stage */
typedef struct fa_blob {
    unsigned char *b;
    size_t n;
} fa_blob;
typedef struct fa_obs {
    int seen;
    fa_blob out;
} fa_obs;
static fa_obs fa_clean_obs[FA_STAGES][FA_SLOTS]; /* what each call of the clean run gave */
static int fa_slot;

static char fa_dir[64], fa_out_st[128], fa_ref_st[128], fa_out_state[128], fa_ref_state[128], fa_out_state4[128],
    fa_csv[128], fa_idx[128], fa_snap[128];
static long fa_runs, fa_bad;
static long fa_errors[2], fa_absorbed[2]; /* runs (once, from N on) with an error reported; with none */
static int fa_run_errors;                 /* calls of this run that returned an error */
static long fa_report_limit = 40; /* runs whose broken rules are printed (NN_FUZZ_ALLOC_REPORT=n) */
static int fa_run_ok;
static int fa_fd0;                  /* the lowest free descriptor before the runs */
static nn_context *fa_ctx;          /* the run's context: where errors are read */
static char fa_logmsg[1024];        /* the last error the run's context logged */
static nn_context *fa_setup_ctx;    /* the context that writes the reference files */

static void fa_hang(int sig) {
    static const char msg[] = "FUZZ target=alloc: a run did not finish in 60 s (a hang)\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
    _exit(1);
}

static void fa_log(void *user, nn_log_level level, const char *msg) {
    (void)user;
    if (level == NN_LOG_ERROR) snprintf(fa_logmsg, sizeof fa_logmsg, "%s", msg);
}

static void fa_begin(int stage) {
    if (fa_phase == FA_CLEAN) {
        if (fa_stage >= 0) fa_stage_allocs[fa_stage] += fa_count - fa_stage_count0;
        fa_stage_count0 = fa_count;
    }
    fa_stage = stage;
    fa_slot = 0;
}

static void fa_report(const char *call, const char *what, nn_result r) {
    if (fa_phase == FA_FAULT && fa_bad >= fa_report_limit) return;
    fprintf(stderr, "  alloc %s N=%ld %s/%s: %s -> %s (%s)\n", fa_phase == FA_CLEAN ? "clean" : fa_persistent ? "from" : "only",
            fa_fail_at, fa_stage >= 0 ? fa_stage_names[fa_stage] : "-", call, what, nn_result_string(r),
            fa_ctx ? nn_context_last_error(fa_ctx) : fa_logmsg);
}

static void fa_broke(const char *call, const char *what, nn_result r) {
    fa_report(call, what, r);
    fa_run_ok = 0;
    if (fa_phase != FA_FAULT) {
        fprintf(stderr, "FUZZ target=alloc: the %s failed\n", fa_phase == FA_CLEAN ? "clean run" : "setup");
        exit(1);
    }
}

static int fa_same(const fa_blob *a, const fa_blob *b) { return a->n == b->n && (a->n == 0 || memcmp(a->b, b->b, a->n) == 0); }

/* One API call's outcome: r and what it produced (out, n: compared with the clean run's when
   r is NN_OK); failed0: the injected failures counted before the call (or before the build,
   for a compile). Returns 1 when r is NN_OK. */
static int fa_check(const char *call, nn_result r, const void *out, size_t n, long failed0) {
    fa_obs *o = &fa_clean_obs[fa_stage][fa_slot < FA_SLOTS ? fa_slot : FA_SLOTS - 1];
    fa_slot++;
    if (fa_slot > FA_SLOTS) {
        fprintf(stderr, "FUZZ target=alloc: more than %d calls in stage %s\n", FA_SLOTS, fa_stage_names[fa_stage]);
        exit(1);
    }
    if (fa_phase == FA_SETUP) {
        if (r != NN_OK) fa_broke(call, "failed", r);
        return r == NN_OK;
    }
    if (fa_phase == FA_CLEAN) {
        if (r != NN_OK) fa_broke(call, "failed", r);
        o->seen = 1;
        o->out.n = n;
        o->out.b = n ? (unsigned char *)malloc(n) : NULL;
        if (n) memcpy(o->out.b, out, n);
        return 1;
    }
    if (r == NN_OK) {
        fa_blob got;
        got.b = (unsigned char *)out;
        got.n = n;
        if (!o->seen) fa_broke(call, "ran where the clean run did not", r);
        else if (!fa_same(&got, &o->out)) fa_broke(call, "succeeded with other results than the clean run", r);
        return 1;
    } else {
        const char *msg = fa_ctx ? nn_context_last_error(fa_ctx) : fa_logmsg;
        if (r != NN_ERR_OUT_OF_MEMORY || (!strstr(msg, "memory") && !strstr(msg, "allocate")))
            fa_broke(call, "failed, but not as out of memory", r);
        else if (fa_failed == failed0)
            fa_broke(call, "failed with no allocation failing in it", r);
        fa_run_errors++;
        return 0;
    }
}

/* A builder's tensor: its id as the clean run's while the graph has built without an error;
   a failed tensor only with the graph's status out of memory. */
typedef struct fa_graph {
    nn_graph *g;
    long failed0;  /* failures injected before the build */
    int diverged;  /* a builder failed: later ids need not match */
} fa_graph;

static nn_tensor fa_t(fa_graph *G, const char *call, nn_tensor t) {
    int32_t id = t.id;
    if (G->diverged) {
        fa_slot++; /* the slot the clean run gave this call */
    } else if (t.id < 0) {
        nn_result st = nn_graph_status(G->g);
        fa_check(call, st == NN_OK ? NN_ERR_STATE : st, NULL, 0, G->failed0);
        G->diverged = 1;
    } else {
        fa_check(call, NN_OK, &id, sizeof id, G->failed0);
    }
    return t;
}

/* A file's bytes (libc malloc, not counted); NULL when it cannot be read. */
static unsigned char *fa_slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b = NULL;
    long len;
    *n = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (b = (unsigned char *)malloc((size_t)len + 1)) != NULL) {
        if (fread(b, 1, (size_t)len, f) == (size_t)len) *n = (size_t)len;
        else {
            free(b);
            b = NULL;
        }
    }
    fclose(f);
    return b;
}

/* The whole state of g as bytes (saved unarmed): what a comparison of graphs looks at. */
static fa_blob fa_snapshot(nn_graph *g) {
    fa_blob s = {NULL, 0};
    int armed = fa_armed;
    fa_armed = 0;
    if (nn_graph_save_state(g, fa_snap) == NN_OK) s.b = fa_slurp(fa_snap, &s.n);
    fa_armed = armed;
    return s;
}

static fa_blob fa_file(const char *path) {
    fa_blob s;
    s.b = fa_slurp(path, &s.n);
    return s;
}

/* Entries of the directory whose name has ".tmp." in it: left by a failed save. */
static int fa_temps(void) {
    DIR *d = opendir(fa_dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* ---- the data, written through the API ---- */

#define FA_B 4
#define FA_IN 256 /* the MLP's input width: its first GEMMs need more than the reserved workspace */
static float fa_mlp_x[2][FA_B * FA_IN], fa_cnn_x[2][FA_B * 64];
static int32_t fa_mlp_y[2][FA_B], fa_cnn_y[2][FA_B];

static void fa_make_data(void) {
    uint32_t s = 12345u;
    int k, i;
    for (k = 0; k < 2; k++) {
        for (i = 0; i < FA_B * FA_IN; i++) fa_mlp_x[k][i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
        for (i = 0; i < FA_B * 64; i++) fa_cnn_x[k][i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
        for (i = 0; i < FA_B; i++) {
            fa_mlp_y[k][i] = (int32_t)((s = s * 1664525u + 1013904223u) >> 16) % 3;
            fa_cnn_y[k][i] = (int32_t)((s = s * 1664525u + 1013904223u) >> 16) % 5;
        }
    }
}

/* A *_create call: on failure, *out must be NULL (api/api.h). */
static int fa_created(const char *call, nn_result r, const void *obj, long f0) {
    int ok = fa_check(call, r, NULL, 0, f0);
    if (!ok && obj) fa_broke(call, "failed and gave an object", r);
    return ok;
}
#define fa_create(name, expr, obj) (f0 = fa_failed, fa_created(name, (expr), (const void *)(obj), f0))

#define FA_CALL(name, expr, out, n) (f0 = fa_failed, fa_check(name, (expr), out, n, f0))

/* Writes x and y, takes a step and reads the loss. 1 when all of it went well. */
static int fa_train_step(nn_graph *g, nn_tensor x, const void *xd, size_t xn, nn_tensor y, const void *yd, size_t yn,
                         nn_tensor loss) {
    float l = 0;
    long f0;
    if (xd && !FA_CALL("nn_tensor_write x", nn_tensor_write(g, x, xd, xn), NULL, 0)) return 0;
    if (yd && !FA_CALL("nn_tensor_write y", nn_tensor_write(g, y, yd, yn), NULL, 0)) return 0;
    if (!FA_CALL("nn_graph_step", nn_graph_step(g), NULL, 0)) return 0;
    if (!FA_CALL("nn_tensor_read loss", nn_tensor_read(g, loss, &l, sizeof l), &l, sizeof l)) return 0;
    return 1;
}

/* The MLP of the mlp, eval and load stages: x [4, 256] -> fc1 64 -> relu -> dropout -> fc2
   12 -> tanh -> fc3 3, cross-entropy against y (train); compiled with Adam, clip_norm and a
   parameter group (fc3 at half the rate). */
typedef struct fa_mlp {
    fa_graph G;
    nn_tensor x, y, logits, loss;
} fa_mlp;

static int fa_mlp_build(nn_context *ctx, fa_mlp *m, nn_graph *share, int train) {
    nn_graph_desc gd;
    nn_compile_desc cd;
    fa_graph *G = &m->G;
    nn_tensor h;
    long f0;
    memset(&gd, 0, sizeof gd);
    gd.seed = 7;
    gd.share_params = share;
    gd.eval = !train;
    G->failed0 = fa_failed;
    G->diverged = 0;
    if (!fa_create("nn_graph_create", nn_graph_create(ctx, &gd, &G->g), G->g)) return 0;
    m->x = fa_t(G, "nn_input x", nn_input(G->g, "x", NN_F32, nn_shape2(FA_B, FA_IN)));
    h = fa_t(G, "nn_linear_layer fc1", nn_linear_layer(G->g, m->x, 64, NULL, "fc1"));
    h = fa_t(G, "nn_relu", nn_relu(G->g, h));
    h = fa_t(G, "nn_dropout", nn_dropout(G->g, h, 0.25f));
    h = fa_t(G, "nn_linear_layer fc2", nn_linear_layer(G->g, h, 12, NULL, "fc2"));
    h = fa_t(G, "nn_tanh", nn_tanh(G->g, h));
    m->logits = fa_t(G, "nn_linear_layer fc3", nn_linear_layer(G->g, h, 3, NULL, "fc3"));
    nn_graph_output(G->g, m->logits);
    memset(&cd, 0, sizeof cd);
    if (train) {
        m->y = fa_t(G, "nn_input y", nn_input(G->g, "y", NN_I32, nn_shape1(FA_B)));
        m->loss = fa_t(G, "nn_cross_entropy_loss", nn_cross_entropy_loss(G->g, m->logits, m->y, NULL));
        cd.loss = m->loss;
        cd.optimizer.kind = NN_OPT_ADAM;
        cd.optimizer.lr = 0.01f;
        cd.optimizer.clip_norm = 0.5f;
        if (!FA_CALL("nn_graph_param_group", nn_graph_param_group(G->g, "fc3.", 0.5f, 1.0f), NULL, 0)) return 0;
    }
    return fa_check("nn_graph_compile", nn_graph_compile(G->g, &cd), NULL, 0, G->failed0);
}

/* The CNN: x [4, 1, 8, 8] -> conv1 4 3x3 pad 1 -> bn1 -> relu -> max pool 2 -> conv2 8 3x3
   pad 1 -> relu -> max pool 2 -> flatten [4, 32] -> fc 5, cross-entropy; SGD. */
typedef struct fa_cnn {
    fa_graph G;
    nn_tensor x, y, logits, loss;
} fa_cnn;

static int fa_cnn_build(nn_context *ctx, fa_cnn *m) {
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_conv2d_desc conv;
    nn_pool2d_desc pool;
    fa_graph *G = &m->G;
    nn_tensor h;
    long f0;
    memset(&gd, 0, sizeof gd);
    gd.seed = 11;
    memset(&conv, 0, sizeof conv);
    conv.pad_h = conv.pad_w = 1;
    memset(&pool, 0, sizeof pool);
    pool.kernel_h = pool.kernel_w = 2;
    G->failed0 = fa_failed;
    G->diverged = 0;
    if (!fa_create("nn_graph_create", nn_graph_create(ctx, &gd, &G->g), G->g)) return 0;
    m->x = fa_t(G, "nn_input x", nn_input(G->g, "x", NN_F32, nn_shape4(FA_B, 1, 8, 8)));
    m->y = fa_t(G, "nn_input y", nn_input(G->g, "y", NN_I32, nn_shape1(FA_B)));
    h = fa_t(G, "nn_conv2d_layer conv1", nn_conv2d_layer(G->g, m->x, 4, 3, 3, &conv, "conv1"));
    h = fa_t(G, "nn_batch_norm2d_layer bn1", nn_batch_norm2d_layer(G->g, h, NULL, "bn1"));
    h = fa_t(G, "nn_relu", nn_relu(G->g, h));
    h = fa_t(G, "nn_max_pool2d", nn_max_pool2d(G->g, h, &pool));
    h = fa_t(G, "nn_conv2d_layer conv2", nn_conv2d_layer(G->g, h, 8, 3, 3, &conv, "conv2"));
    h = fa_t(G, "nn_relu", nn_relu(G->g, h));
    h = fa_t(G, "nn_max_pool2d", nn_max_pool2d(G->g, h, &pool));
    h = fa_t(G, "nn_flatten", nn_flatten(G->g, h));
    m->logits = fa_t(G, "nn_linear_layer fc", nn_linear_layer(G->g, h, 5, NULL, "fc"));
    nn_graph_output(G->g, m->logits);
    m->loss = fa_t(G, "nn_cross_entropy_loss", nn_cross_entropy_loss(G->g, m->logits, m->y, NULL));
    memset(&cd, 0, sizeof cd);
    cd.loss = m->loss;
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.05f;
    cd.optimizer.momentum = 0.9f;
    cd.optimizer.nesterov = 1;
    cd.optimizer.weight_decay = 1e-4f;
    cd.optimizer.clip_value = 0.5f;
    return fa_check("nn_graph_compile", nn_graph_compile(G->g, &cd), NULL, 0, G->failed0);
}

/* ---- the stages ---- */

typedef struct fa_world {
    fa_mlp mlp, eval, load;
    fa_cnn cnn;
    fa_graph ds;
    nn_array csv, idx;
    int mlp_trained;
} fa_world;

static void fa_stage_mlp(nn_context *ctx, fa_world *w) {
    fa_mlp *m = &w->mlp;
    float logits[FA_B * 3], wt[12 * 64];
    nn_graph *g;
    long f0;
    fa_begin(1);
    if (!fa_mlp_build(ctx, m, NULL, 1)) return;
    g = m->G.g;
    if (!fa_train_step(g, m->x, fa_mlp_x[0], sizeof fa_mlp_x[0], m->y, fa_mlp_y[0], sizeof fa_mlp_y[0], m->loss) ||
        !fa_train_step(g, m->x, NULL, 0, m->y, NULL, 0, m->loss) ||
        !fa_train_step(g, m->x, fa_mlp_x[1], sizeof fa_mlp_x[1], m->y, fa_mlp_y[1], sizeof fa_mlp_y[1], m->loss))
        return;
    if (!FA_CALL("nn_graph_forward", nn_graph_forward(g), NULL, 0)) return;
    if (!FA_CALL("nn_tensor_read logits", nn_tensor_read(g, m->logits, logits, sizeof logits), logits, sizeof logits)) return;
    if (!FA_CALL("nn_tensor_read fc2.weight", nn_tensor_read(g, nn_graph_find(g, "fc2.weight"), wt, sizeof wt), wt, sizeof wt)) return;
    w->mlp_trained = 1;
}

static void fa_stage_eval(nn_context *ctx, fa_world *w) {
    float logits[FA_B * 3];
    long f0;
    fa_begin(2);
    if (!w->mlp_trained || !fa_mlp_build(ctx, &w->eval, w->mlp.G.g, 0)) return;
    if (!FA_CALL("nn_tensor_write x", nn_tensor_write(w->eval.G.g, w->eval.x, fa_mlp_x[0], sizeof fa_mlp_x[0]), NULL, 0)) return;
    if (!FA_CALL("nn_graph_forward", nn_graph_forward(w->eval.G.g), NULL, 0)) return;
    FA_CALL("nn_tensor_read logits", nn_tensor_read(w->eval.G.g, w->eval.logits, logits, sizeof logits), logits, sizeof logits);
}

/* A save: the clean run's file bytes, or the old file and an error; no temporary left. */
static void fa_save(const char *call, nn_graph *g, const char *path, int state) {
    fa_blob before = fa_file(path), after;
    long f0 = fa_failed, fsync0 = fa_fsyncs;
    nn_result r = state ? nn_graph_save_state(g, path) : nn_graph_save_safetensors(g, path);
    after = fa_file(path);
    if (fa_check(call, r, after.b, after.n, f0)) {
        if (fa_phase == FA_CLEAN && fa_fsyncs - fsync0 < 1) fa_broke(call, "did not fsync its file", r);
    } else if (!fa_same(&before, &after)) {
        fa_broke(call, "failed and changed the file", r);
    }
    if (fa_temps() != 0) fa_broke(call, "left a temporary file", r);
    free(before.b);
    free(after.b);
}

static void fa_stage_save(fa_world *w) {
    fa_begin(3);
    if (!w->mlp_trained) return;
    fa_save("nn_graph_save_safetensors", w->mlp.G.g, fa_out_st, 0);
    fa_save("nn_graph_save_state", w->mlp.G.g, fa_out_state, 1);
}

/* A load into g: the clean run's state after it, or the state before and an error. */
static int fa_load(const char *call, nn_graph *g, const char *path, int state) {
    fa_blob before = fa_snapshot(g), after;
    long f0 = fa_failed;
    nn_result r = state ? nn_graph_load_state(g, path) : nn_graph_load_safetensors(g, path, 0);
    int ok;
    after = fa_snapshot(g);
    ok = fa_check(call, r, after.b, after.n, f0);
    if (!ok && !fa_same(&before, &after)) fa_broke(call, "failed and changed the graph", r);
    free(before.b);
    free(after.b);
    return ok;
}

static void fa_stage_load(nn_context *ctx, fa_world *w) {
    fa_mlp *m = &w->load;
    fa_begin(4);
    if (!fa_mlp_build(ctx, m, NULL, 1)) return;
    if (!fa_load("nn_graph_load_safetensors", m->G.g, fa_ref_st, 0)) return;
    if (!fa_load("nn_graph_load_state", m->G.g, fa_ref_state, 1)) return;
    fa_train_step(m->G.g, m->x, fa_mlp_x[1], sizeof fa_mlp_x[1], m->y, fa_mlp_y[1], sizeof fa_mlp_y[1], m->loss);
}

static void fa_stage_cnn(nn_context *ctx, fa_world *w) {
    fa_cnn *m = &w->cnn;
    float logits[FA_B * 5], mean[4];
    nn_graph *g;
    long f0;
    fa_begin(5);
    if (!fa_cnn_build(ctx, m)) return;
    g = m->G.g;
    if (!fa_train_step(g, m->x, fa_cnn_x[0], sizeof fa_cnn_x[0], m->y, fa_cnn_y[0], sizeof fa_cnn_y[0], m->loss) ||
        !fa_train_step(g, m->x, NULL, 0, m->y, NULL, 0, m->loss) ||
        !fa_train_step(g, m->x, fa_cnn_x[1], sizeof fa_cnn_x[1], m->y, fa_cnn_y[1], sizeof fa_cnn_y[1], m->loss))
        return;
    if (!FA_CALL("nn_tensor_read logits", nn_tensor_read(g, m->logits, logits, sizeof logits), logits, sizeof logits)) return;
    FA_CALL("nn_tensor_read bn1.running_mean", nn_tensor_read(g, nn_graph_find(g, "bn1.running_mean"), mean, sizeof mean), mean,
            sizeof mean);
}

/* An array loaded (its shape and data: what a comparison looks at), or an empty one. */
static int fa_array(const char *call, nn_result r, const nn_array *a, long f0) {
    unsigned char *b = NULL;
    size_t n = 0, numel = 1;
    int k, ok;
    if (r == NN_OK && a->data) {
        for (k = 0; k < a->shape.ndim; k++) numel *= (size_t)a->shape.dim[k];
        n = sizeof a->shape + 4 * numel;
        b = (unsigned char *)malloc(n);
        memcpy(b, &a->shape, sizeof a->shape);
        memcpy(b + sizeof a->shape, a->data, 4 * numel);
    }
    ok = fa_check(call, r, b, n, f0);
    if (!ok && a->data) fa_broke(call, "failed and filled the array", r);
    free(b);
    return ok;
}

static void fa_stage_dataset(nn_context *ctx, fa_world *w) {
    fa_graph *G = &w->ds;
    nn_csv_desc cdesc;
    nn_dataset_desc dd;
    nn_compile_desc cd;
    nn_dataset *ds = NULL;
    nn_tensor h, loss;
    long f0;
    int k;
    fa_begin(6);
    memset(&cdesc, 0, sizeof cdesc);
    cdesc.header = 1;
    f0 = fa_failed;
    if (!fa_array("nn_array_load_csv", nn_array_load_csv(ctx, fa_csv, &cdesc, &w->csv), &w->csv, f0)) return;
    f0 = fa_failed;
    if (!fa_array("nn_array_load_idx", nn_array_load_idx(ctx, fa_idx, NN_I32, &w->idx), &w->idx, f0)) return;
    G->failed0 = fa_failed;
    G->diverged = 0;
    if (!fa_create("nn_graph_create", nn_graph_create(ctx, NULL, &G->g), G->g)) return;
    memset(&dd, 0, sizeof dd);
    dd.name = "train";
    dd.x = &w->csv;
    dd.y = &w->idx;
    dd.batch = 4;
    dd.shuffle = 1;
    if (!fa_create("nn_dataset_create", nn_dataset_create(G->g, &dd, &ds), ds)) return;
    h = fa_t(G, "nn_linear_layer d1", nn_linear_layer(G->g, nn_dataset_x(ds), 4, NULL, "d1"));
    h = fa_t(G, "nn_relu", nn_relu(G->g, h));
    h = fa_t(G, "nn_linear_layer d2", nn_linear_layer(G->g, h, 2, NULL, "d2"));
    loss = fa_t(G, "nn_softmax_cross_entropy", nn_softmax_cross_entropy(G->g, h, nn_dataset_y(ds)));
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.1f;
    if (!fa_check("nn_graph_compile", nn_graph_compile(G->g, &cd), NULL, 0, G->failed0)) return;
    for (k = 0; k < 3; k++) {
        float l = 0;
        if (!FA_CALL("nn_dataset_next_batch", nn_dataset_next_batch(ds), NULL, 0)) return;
        if (!FA_CALL("nn_graph_step", nn_graph_step(G->g), NULL, 0)) return;
        if (!FA_CALL("nn_tensor_read loss", nn_tensor_read(G->g, loss, &l, sizeof l), &l, sizeof l)) return;
    }
    fa_save("nn_graph_save_state", G->g, fa_out_state4, 1);
}

/* One run of the scenario: fail_at 0 is the clean run, which fills fa_clean_obs. */
static void fa_run(long fail_at, int persistent) {
    static const nn_context_desc zero_desc;
    nn_context_desc d = zero_desc;
    fa_world w;
    nn_context *ctx = NULL;
    long live0 = fa_live, f0;
    int probe;
    memset(&w, 0, sizeof w);
    fa_phase = fail_at ? FA_FAULT : FA_CLEAN;
    fa_run_ok = 1;
    fa_run_errors = 0;
    fa_count = 0;
    fa_failed = 0;
    fa_fail_at = fail_at;
    fa_persistent = persistent;
    fa_stage = -1;
    fa_stage_count0 = 0;
    fa_ctx = NULL;
    fa_logmsg[0] = 0;
    alarm(60);
    d.device = "cpu";
    d.threads = 2; /* a pool with a thread: its start and join on every path */
    d.log = fa_log;
    d.log_level = NN_LOG_ERROR;
    fa_armed = 1;
    fa_begin(0);
    if (FA_CALL("nn_context_create", nn_context_create(&d, &ctx), NULL, 0)) {
        fa_ctx = ctx;
        fa_stage_mlp(ctx, &w);
        fa_stage_eval(ctx, &w);
        fa_stage_save(&w);
        fa_stage_load(ctx, &w);
        fa_stage_cnn(ctx, &w);
        fa_stage_dataset(ctx, &w);
    } else if (ctx) {
        fa_broke("nn_context_create", "failed and gave a context", NN_ERR_OUT_OF_MEMORY);
    }
    fa_begin(7);
    nn_graph_destroy(w.eval.G.g);
    nn_graph_destroy(w.mlp.G.g);
    nn_graph_destroy(w.load.G.g);
    nn_graph_destroy(w.cnn.G.g);
    nn_array_free(&w.csv);
    nn_array_free(&w.idx);
    nn_context_destroy(ctx); /* the dataset's graph outlives its context */
    nn_graph_destroy(w.ds.g);
    fa_begin(-1);
    fa_armed = 0;
    fa_ctx = NULL;
    alarm(0);
    if (fa_live != live0) {
        fa_broke("run", "leaked blocks", NN_OK);
        if (fa_bad < fa_report_limit) fprintf(stderr, "    %ld blocks not freed\n", fa_live - live0);
    }
    {
        struct stat st;
        if (lstat(fa_out_st, &st) != 0 || !S_ISLNK(st.st_mode)) fa_broke("run", "replaced the symbolic link it saved through", NN_OK);
    }
    probe = open("/dev/null", O_RDONLY);
    if (probe >= 0) close(probe);
    if (probe != fa_fd0) fa_broke("run", "left a file open", NN_OK);
    (void)f0;
    fa_runs++;
    if (!fa_run_ok) fa_bad++;
    if (fail_at && fa_run_errors) fa_errors[persistent]++;
    else if (fail_at) {
        fa_absorbed[persistent]++;
        if (getenv("NN_FUZZ_ALLOC_ABSORBED")) fprintf(stderr, "absorbed: %s N=%ld\n", persistent ? "from" : "once", fail_at);
    }
}

/* The GEMM when its packing buffers cannot be allocated (every allocation failing, the
   pool holding only the small workspace the CPU backend reserves) gives the bits of the
   blocked path, on one thread and on four: shapes with edge tiles, several K blocks, the
   C^T mode (narrow C), both transposes, beta 0 and 1, each kernel this CPU runs; and op(A)
   read in place (A [M,K]'s full panels, nn__gemm_ukr_avx512_s) the bits of it packed, op(B)
   packed by the first A panel's tiles (nn__gemm_ukr_avx512_pb) those of a packing pass. Returns
   the cases that differ; *cases counts them all. */
static long fa_gemm_check(long *cases) {
    static const char *const kernels[] = {"generic", "avx2", "avx512f", "neon"};
    static const int shapes[][3] = {{1, 1, 1},    {4, 16, 8},   {13, 37, 300}, {150, 10, 784}, {7, 200, 513},
                                    {33, 5, 64},  {64, 64, 257}, {300, 17, 3}, {5, 300, 40},  {97, 131, 129}, {100, 96, 600}};
    nn__threadpool *one = nn__threadpool_create(1), *four = nn__threadpool_create(4), *small = nn__threadpool_create(1);
    double mt_min = nn__gemm_mt_min_macs;
    long bad = 0;
    size_t k, sh;
    *cases = 0;
    if (!one || !four || !small || !nn__threadpool_workspace(small, nn__sgemm_small_bytes())) {
        fprintf(stderr, "FUZZ target=alloc: cannot make the GEMM check's pools\n");
        exit(1);
    }
    nn__gemm_mt_min_macs = 0; /* the threaded path on every shape */
    for (k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        if (strcmp(nn__sgemm_force_kernel(kernels[k]), kernels[k]) != 0) continue; /* not on this CPU */
        for (sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
            int M = shapes[sh][0], N = shapes[sh][1], K = shapes[sh][2], v;
            size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N, i;
            float *a = (float *)malloc(na * 4), *b = (float *)malloc(nb * 4), *c0 = (float *)malloc(nc * 4);
            float *c[5];
            uint32_t r = 777u + (uint32_t)sh;
            for (i = 0; i < na; i++) a[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
            for (i = 0; i < nb; i++) b[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
            for (i = 0; i < nc; i++) c0[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
            for (i = 0; i < 5; i++) c[i] = (float *)malloc(nc * 4);
            for (v = 0; v < 8; v++) { /* transA, transB, beta */
                int ta = v & 1, tb = (v >> 1) & 1, j;
                float beta = (v >> 2) ? 1.0f : 0.0f;
                for (j = 0; j < 5; j++) memcpy(c[j], c0, nc * 4);
                nn__sgemm(one, ta, tb, M, N, K, 0.75f, a, ta ? M : K, b, tb ? K : N, beta, c[0], N);
                nn__sgemm(four, ta, tb, M, N, K, 0.75f, a, ta ? M : K, b, tb ? K : N, beta, c[1], N);
                fa_armed = 1;
                fa_count = fa_failed = 0;
                fa_fail_at = 1;
                fa_persistent = 1;
                nn__sgemm(small, ta, tb, M, N, K, 0.75f, a, ta ? M : K, b, tb ? K : N, beta, c[2], N);
                fa_armed = 0;
                fa_fail_at = 0;
                nn__gemm_direct_ok = 0; /* op(A) always packed, not read in place */
                nn__sgemm(one, ta, tb, M, N, K, 0.75f, a, ta ? M : K, b, tb ? K : N, beta, c[3], N);
                nn__gemm_pb_ok = 0; /* and op(B) in a packing pass of its own */
                nn__sgemm(one, ta, tb, M, N, K, 0.75f, a, ta ? M : K, b, tb ? K : N, beta, c[4], N);
                nn__gemm_pb_ok = 1;
                nn__gemm_direct_ok = 1;
                (*cases)++;
                if (memcmp(c[0], c[1], nc * 4) != 0 || memcmp(c[0], c[2], nc * 4) != 0 || memcmp(c[0], c[3], nc * 4) != 0 ||
                    memcmp(c[0], c[4], nc * 4) != 0) {
                    if (bad++ < 10)
                        fprintf(stderr, "  gemm %s M=%d N=%d K=%d transA=%d transB=%d beta=%g: %s\n", kernels[k], M, N, K, ta,
                                tb, beta,
                                memcmp(c[0], c[1], nc * 4)   ? "4 threads differ from 1"
                                : memcmp(c[0], c[2], nc * 4) ? "the fallback differs"
                                : memcmp(c[0], c[3], nc * 4) ? "A packed differs from A in place"
                                                             : "B packed in a pass differs from B packed on the way");
                }
            }
            for (i = 0; i < 5; i++) free(c[i]);
            free(a);
            free(b);
            free(c0);
        }
    }
    nn__sgemm_force_kernel(NULL);
    nn__gemm_mt_min_macs = mt_min;
    nn__threadpool_destroy(one);
    nn__threadpool_destroy(four);
    nn__threadpool_destroy(small);
    return bad;
}

/* A save whose fsync fails: NN_ERR_IO naming the failure, the old file kept, no temporary. */
static void fa_fsync_failure(nn_graph *g) {
    fa_blob before = fa_file(fa_out_st), after;
    nn_result r;
    fa_fsync_fail = 1;
    r = nn_graph_save_safetensors(g, fa_out_st);
    fa_fsync_fail = 0;
    after = fa_file(fa_out_st);
    fa_runs++;
    if (r != NN_ERR_IO || !strstr(nn_context_last_error(fa_setup_ctx), "disk") || !fa_same(&before, &after) || fa_temps() != 0) {
        fprintf(stderr, "  a failed fsync: not NN_ERR_IO, or the old file changed, or a temporary file left: %s (%s)\n",
                nn_result_string(r), nn_context_last_error(fa_setup_ctx));
        fa_bad++;
    }
    free(before.b);
    free(after.b);
}

int main(void) {
    static const char csv_text[] = "\xEF\xBB\xBF"
                                   "a,b,c\r\n1.5,-2,3e-3\r\n4,5.25,-1\r\n\r\n0.5,0.25,2\r\n-1,1,0\r\n"
                                   "2,-0.5,1.5\r\n3,0,-2\r\n-0.75,1.25,0.5\r\n1,1,1\r\n";
    static const unsigned char idx_bytes[] = {0, 0, 0x08, 1, 0, 0, 0, 8, 0, 1, 1, 0, 1, 0, 0, 1};
    nn_context_desc d;
    fa_mlp ref;
    long total, n, stride = 1, gemm_cases, gemm_bad;
    const char *env = getenv("NN_FUZZ_ALLOC_STRIDE");
    FILE *f;
    int k, s;
    if (env && atol(env) > 1) stride = atol(env);
    env = getenv("NN_FUZZ_ALLOC_WHERE");
    if (env) fa_where = atol(env);
    env = getenv("NN_FUZZ_ALLOC_REPORT");
    if (env && atol(env) > 0) fa_report_limit = atol(env);
    signal(SIGALRM, fa_hang);
    fa_make_data();
    memset(&d, 0, sizeof d);
    d.device = "cpu";
    d.threads = 1;
    d.log_level = NN_LOG_ERROR;
    snprintf(fa_dir, sizeof fa_dir, "/tmp/nn-fuzz-alloc-XXXXXX");
    if (!mkdtemp(fa_dir) || nn_context_create(&d, &fa_setup_ctx) != NN_OK) {
        fprintf(stderr, "FUZZ target=alloc: setup failed\n");
        return 1;
    }
    snprintf(fa_out_st, sizeof fa_out_st, "%s/out.safetensors", fa_dir); /* a link: the save resolves it */
    snprintf(fa_ref_st, sizeof fa_ref_st, "%s/ref.safetensors", fa_dir);
    snprintf(fa_out_state, sizeof fa_out_state, "%s/out.state", fa_dir);
    snprintf(fa_out_state4, sizeof fa_out_state4, "%s/out4.state", fa_dir);
    snprintf(fa_ref_state, sizeof fa_ref_state, "%s/ref.state", fa_dir);
    snprintf(fa_csv, sizeof fa_csv, "%s/data.csv", fa_dir);
    snprintf(fa_idx, sizeof fa_idx, "%s/data.idx", fa_dir);
    snprintf(fa_snap, sizeof fa_snap, "%s/snapshot.state", fa_dir);
    /* what the loads read: the MLP after five steps (other data than the runs') */
    fa_phase = FA_SETUP;
    fa_stage = 4;
    fa_slot = 0;
    memset(&ref, 0, sizeof ref);
    if (!fa_mlp_build(fa_setup_ctx, &ref, NULL, 1)) return 1;
    for (k = 0; k < 5; k++)
        if (!fa_train_step(ref.G.g, ref.x, fa_mlp_x[1 - (k & 1)], sizeof fa_mlp_x[0], ref.y, fa_mlp_y[k & 1],
                           sizeof fa_mlp_y[0], ref.loss))
            return 1;
    if (nn_graph_save_safetensors(ref.G.g, fa_ref_st) != NN_OK || nn_graph_save_state(ref.G.g, fa_ref_state) != NN_OK) {
        fprintf(stderr, "FUZZ target=alloc: cannot write the reference files: %s\n", nn_context_last_error(fa_setup_ctx));
        return 1;
    }
    {
        char real[160];
        snprintf(real, sizeof real, "%s/real.safetensors", fa_dir);
        if (symlink("real.safetensors", fa_out_st) != 0 || !(f = fopen(real, "wb")) || fclose(f) != 0) {
            fprintf(stderr, "FUZZ target=alloc: cannot make the link %s\n", fa_out_st);
            return 1;
        }
    }
    f = fopen(fa_csv, "wb");
    if (!f || fwrite(csv_text, 1, sizeof csv_text - 1, f) != sizeof csv_text - 1 || fclose(f) != 0) return 1;
    f = fopen(fa_idx, "wb");
    if (!f || fwrite(idx_bytes, 1, sizeof idx_bytes, f) != sizeof idx_bytes || fclose(f) != 0) return 1;
    fa_fd0 = open("/dev/null", O_RDONLY);
    if (fa_fd0 >= 0) close(fa_fd0);
    gemm_bad = fa_gemm_check(&gemm_cases);
    fa_bad += gemm_bad;
    fa_run(0, 0);
    for (total = 0, s = 0; s < FA_STAGES; s++) total += fa_stage_allocs[s];
    if (total != fa_count) {
        fprintf(stderr, "FUZZ target=alloc: %ld allocations counted by stage, %ld in all\n", total, fa_count);
        return 1;
    }
    for (n = 1; n <= total; n++) fa_run(n, 0);
    for (n = 1; n <= total; n += stride) fa_run(n, 1);
    fa_fsync_failure(ref.G.g);
    nn_graph_destroy(ref.G.g);
    for (s = 0; s < FA_STAGES; s++)
        for (k = 0; k < FA_SLOTS; k++) free(fa_clean_obs[s][k].out.b);
    nn_context_destroy(fa_setup_ctx);
    {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", fa_dir);
        if (system(cmd) != 0) fprintf(stderr, "(could not remove %s)\n", fa_dir);
    }
    printf("alloc sweep: once: %ld runs reported an error, %ld absorbed the failure; from N on: %ld reported, %ld absorbed; "
           "GEMM fallback: %ld cases, %ld differ\n",
           fa_errors[0], fa_absorbed[0], fa_errors[1], fa_absorbed[1], gemm_cases, gemm_bad);
    printf("FUZZ target=alloc execs=%ld crashes=%ld allocations=%ld (per stage:", fa_runs, fa_bad, total);
    for (s = 0; s < FA_STAGES; s++) printf(" %s %ld", fa_stage_names[s], fa_stage_allocs[s]);
    printf("%s)\n", stride > 1 ? "; \"from N on\" every k-th N" : "");
    return fa_bad ? 1 : 0;
}
#else
typedef int nn_fuzz_alloc_needs_NN_FUZZ_ALLOC; /* ISO C wants a declaration in every file */
#endif
