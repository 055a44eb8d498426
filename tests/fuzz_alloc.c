/* Allocation failures over the file loaders and savers: `make fuzz-alloc` (and `make fuzz`).
   NN_MALLOC / NN_REALLOC / NN_FREE are a counting allocator here. A scenario saves
   safetensors, loads safetensors, saves a training state, loads one, loads a CSV and an IDX
   file; the clean run counts its allocations (T), then every N in 1..T is run twice: the
   Nth allocation fails alone, and every allocation from the Nth on fails. Each call must
   return NN_OK with the clean run's results (the same file bytes; the same graph state,
   compared through a saved state; the same arrays), or NN_ERR_OUT_OF_MEMORY with a message
   that says so, leaving what it loads into unchanged and no temporary file behind. Each
   run must free every block it allocated and close every file it opened, within a time
   limit (a hang fails the run). A save must flush its file to disk (fsync is counted), and
   one whose fsync fails must leave the old file. One line: FUZZ target=alloc execs=<runs>
   crashes=<runs that broke a rule> allocations=<T>. Build: ASan, LSan and UBSan.
   The safetensors file is saved through a symbolic link.
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

static int fa_fail_now(void) {
    if (!fa_armed) return 0;
    fa_count++;
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

#define FA_STEPS 6
static const char *const fa_step_names[FA_STEPS] = {"nn_save_safetensors", "nn_load_safetensors", "nn_save_state",
                                                    "nn_load_state",       "nn_load_csv",         "nn_load_idx"};

static nn_context *fa_ctx;
static char fa_dir[64], fa_out_st[128], fa_ref_st[128], fa_out_state[128], fa_ref_state[128], fa_csv[128], fa_idx[128],
    fa_snap[128];
static long fa_runs, fa_bad;
static int fa_fd0; /* the lowest free descriptor before the runs */

static void fa_hang(int sig) {
    static const char msg[] = "FUZZ target=alloc: a run did not finish in 120 s (a hang)\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
    _exit(1);
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

typedef struct fa_blob {
    unsigned char *b;
    size_t n;
} fa_blob;

static int fa_same(const fa_blob *a, const fa_blob *b) { return a->n == b->n && (a->n == 0 || memcmp(a->b, b->b, a->n) == 0); }

/* The whole state of g as bytes (saved unarmed): what a comparison of graphs looks at. */
static fa_blob fa_snapshot(nn_graph *g) {
    fa_blob s = {NULL, 0};
    if (nn_save_state(g, fa_snap) == NN_OK) s.b = fa_slurp(fa_snap, &s.n);
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

/* The graph of tests/fuzz_state.c: a shuffling dataset, fc1 (4) -> relu -> fc2 (2), Adam. */
static nn_graph *fa_build(int train) {
    static const float x[24] = {0.5f, -1, 2, 0.25f, 1.5f, -0.75f, 1, 0, -2, 0.125f, 3, -1.25f,
                                -0.5f, 1, -2, 0.75f, -1.5f, 0.25f, 2, 1, 0, -0.125f, -3, 1.25f};
    static const int32_t y[8] = {0, 1, 1, 0, 1, 0, 0, 1};
    nn_graph *g = NULL;
    nn_dataset *ds = NULL;
    nn_dataset_desc dd;
    nn_compile_desc cd;
    nn_array ax, ay;
    nn_tensor h;
    int i;
    if (nn_graph_create(fa_ctx, NULL, &g) != NN_OK) return NULL;
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
    dd.shuffle = 1;
    memset(&cd, 0, sizeof cd);
    if (nn_dataset_create(g, &dd, &ds) == NN_OK) {
        h = nn_relu(g, nn_dense(g, nn_dataset_x(ds), 4, NULL, "fc1"));
        cd.loss = nn_softmax_cross_entropy(g, nn_dense(g, h, 2, NULL, "fc2"), nn_dataset_y(ds));
        cd.optimizer.kind = NN_OPT_ADAM;
        cd.optimizer.lr = 0.01f;
    }
    if (!ds || nn_graph_compile(g, &cd) != NN_OK) {
        nn_graph_destroy(g);
        return NULL;
    }
    for (i = 0; i < train; i++)
        if (nn_dataset_next_batch(ds) != NN_OK || nn_graph_step(g) != NN_OK) {
            nn_graph_destroy(g);
            return NULL;
        }
    return g;
}

/* What the clean run gave: per step, the result compared against later runs. */
typedef struct fa_outcome {
    fa_blob out[FA_STEPS];          /* saves: the file; loads into g2: its state after; csv, idx: the array */
    long allocs[FA_STEPS];
} fa_outcome;

static fa_outcome fa_clean;

static fa_blob fa_array_blob(const nn_array *a) {
    fa_blob s = {NULL, 0};
    size_t n = 1;
    int k;
    if (!a->data) return s;
    for (k = 0; k < a->shape.ndim; k++) n *= (size_t)a->shape.dim[k];
    s.n = sizeof a->shape + 4 * n;
    s.b = (unsigned char *)malloc(s.n);
    if (!s.b) return s;
    memcpy(s.b, &a->shape, sizeof a->shape);
    memcpy(s.b + sizeof a->shape, a->data, 4 * n);
    return s;
}

static void fa_report(const char *what, int step, nn_result r) {
    if (fa_bad < 40)
        fprintf(stderr, "  alloc %s N=%ld %s: %s -> %s (%s)\n", fa_persistent ? "from" : "only", fa_fail_at,
                step >= 0 ? fa_step_names[step] : "run", what, nn_result_string(r), nn_last_error(fa_ctx));
}

/* One run of the scenario: fail_at 0 is the clean run, which fills fa_clean. 0 if a rule broke. */
static int fa_run(long fail_at, int persistent) {
    nn_graph *g1 = NULL, *g2 = NULL;
    nn_array csv, idx;
    nn_csv_desc cd;
    long live0 = fa_live;
    int step, ok = 1, probe;
    memset(&csv, 0, sizeof csv);
    memset(&idx, 0, sizeof idx);
    memset(&cd, 0, sizeof cd);
    cd.header = 1;
    fa_count = 0;
    fa_failed = 0;
    fa_fail_at = fail_at;
    fa_persistent = persistent;
    alarm(120);
    g1 = fa_build(2);
    g2 = fa_build(0);
    if (!g1 || !g2) {
        fprintf(stderr, "FUZZ target=alloc: cannot build the graphs: %s\n", nn_last_error(fa_ctx));
        exit(1);
    }
    for (step = 0; step < FA_STEPS; step++) {
        fa_blob before = {NULL, 0}, after = {NULL, 0};
        const char *target = step == 0 ? fa_out_st : step == 2 ? fa_out_state : NULL;
        long count0 = fa_count, fsync0 = fa_fsyncs;
        nn_result r;
        if (target) before = fa_file(target);
        else if (step == 1 || step == 3) before = fa_snapshot(g2);
        fa_armed = 1;
        switch (step) {
        case 0: r = nn_save_safetensors(g1, fa_out_st); break;
        case 1: r = nn_load_safetensors(g2, fa_ref_st, 0); break;
        case 2: r = nn_save_state(g1, fa_out_state); break;
        case 3: r = nn_load_state(g2, fa_ref_state); break;
        case 4: r = nn_load_csv(fa_ctx, fa_csv, &cd, &csv); break;
        default: r = nn_load_idx(fa_ctx, fa_idx, NN_F32, &idx); break;
        }
        fa_armed = 0;
        if (target) after = fa_file(target);
        else if (step == 1 || step == 3) after = fa_snapshot(g2);
        else after = fa_array_blob(step == 4 ? &csv : &idx);
        if (fail_at == 0) { /* the clean run */
            fa_clean.out[step] = after;
            fa_clean.allocs[step] = fa_count - count0;
            after.b = NULL;
            if (r != NN_OK) {
                fa_report("the clean run failed", step, r);
                exit(1);
            }
            if (target && fa_fsyncs - fsync0 < 1) {
                fa_report("a save did not fsync its file", step, r);
                ok = 0;
            }
        } else if (r == NN_OK) {
            if (!fa_same(&after, &fa_clean.out[step])) {
                fa_report("succeeded with other results than the clean run", step, r);
                ok = 0;
            }
        } else {
            const char *msg = nn_last_error(fa_ctx);
            if (r != NN_ERR_OUT_OF_MEMORY || (!strstr(msg, "memory") && !strstr(msg, "allocate"))) {
                fa_report("failed, but not as out of memory", step, r);
                ok = 0;
            }
            if ((target || step == 1 || step == 3) && !fa_same(&before, &after)) {
                fa_report(target ? "failed and changed the file" : "failed and changed the graph", step, r);
                ok = 0;
            }
            if ((step == 4 && csv.data) || (step == 5 && idx.data)) {
                fa_report("failed and filled the array", step, r);
                ok = 0;
            }
        }
        if (fa_temps() != 0) {
            fa_report("left a temporary file", step, r);
            ok = 0;
        }
        free(before.b);
        free(after.b);
    }
    nn_array_free(&csv);
    nn_array_free(&idx);
    nn_graph_destroy(g1);
    nn_graph_destroy(g2);
    alarm(0);
    if (fa_live != live0) {
        fa_report("leaked blocks", -1, NN_OK);
        if (fa_bad < 40) fprintf(stderr, "    %ld blocks not freed\n", fa_live - live0);
        ok = 0;
    }
    {
        struct stat st;
        if (lstat(fa_out_st, &st) != 0 || !S_ISLNK(st.st_mode)) {
            fa_report("replaced the symbolic link it saved through", -1, NN_OK);
            ok = 0;
        }
    }
    probe = open("/dev/null", O_RDONLY);
    if (probe >= 0) close(probe);
    if (probe != fa_fd0) {
        fa_report("left a file open", -1, NN_OK);
        ok = 0;
    }
    fa_runs++;
    if (!ok) fa_bad++;
    return ok;
}

/* A save whose fsync fails: NN_ERR_IO naming the failure, the old file kept, no temporary. */
static void fa_fsync_failure(void) {
    nn_graph *g = fa_build(3);
    fa_blob before = fa_file(fa_out_st), after;
    nn_result r;
    fa_fail_at = 0;
    fa_fsync_fail = 1;
    r = nn_save_safetensors(g, fa_out_st);
    fa_fsync_fail = 0;
    after = fa_file(fa_out_st);
    fa_runs++;
    if (r != NN_ERR_IO || !strstr(nn_last_error(fa_ctx), "disk") || !fa_same(&before, &after) || fa_temps() != 0) {
        fa_report("a failed fsync: not NN_ERR_IO, or the old file changed, or a temporary file left", 0, r);
        fa_bad++;
    }
    free(before.b);
    free(after.b);
    nn_graph_destroy(g);
}

int main(void) {
    static const char csv_text[] = "\xEF\xBB\xBFx,y,z\r\n1.5,-2,3e-3\r\n\r\n4,5.25,inf\r\n";
    static const unsigned char idx_bytes[] = {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 255};
    nn_context_desc d;
    nn_graph *ref;
    long total, n;
    FILE *f;
    int mode;
    signal(SIGALRM, fa_hang);
    memset(&d, 0, sizeof d);
    d.device = "cpu";
    d.threads = 1;
    d.log_level = NN_LOG_ERROR;
    snprintf(fa_dir, sizeof fa_dir, "/tmp/nn-fuzz-alloc-XXXXXX");
    if (!mkdtemp(fa_dir) || nn_context_create(&d, &fa_ctx) != NN_OK) {
        fprintf(stderr, "FUZZ target=alloc: setup failed\n");
        return 1;
    }
    snprintf(fa_out_st, sizeof fa_out_st, "%s/out.safetensors", fa_dir); /* a link: the save resolves it */
    snprintf(fa_ref_st, sizeof fa_ref_st, "%s/ref.safetensors", fa_dir);
    snprintf(fa_out_state, sizeof fa_out_state, "%s/out.state", fa_dir);
    snprintf(fa_ref_state, sizeof fa_ref_state, "%s/ref.state", fa_dir);
    snprintf(fa_csv, sizeof fa_csv, "%s/data.csv", fa_dir);
    snprintf(fa_idx, sizeof fa_idx, "%s/data.idx", fa_dir);
    snprintf(fa_snap, sizeof fa_snap, "%s/snapshot.state", fa_dir);
    ref = fa_build(5); /* what the loads read: another point of the same training */
    if (!ref || nn_save_safetensors(ref, fa_ref_st) != NN_OK || nn_save_state(ref, fa_ref_state) != NN_OK) {
        fprintf(stderr, "FUZZ target=alloc: cannot write the reference files: %s\n", nn_last_error(fa_ctx));
        return 1;
    }
    nn_graph_destroy(ref);
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
    fa_run(0, 0);
    for (total = 0, n = 0; n < FA_STEPS; n++) total += fa_clean.allocs[n];
    for (mode = 0; mode < 2; mode++)
        for (n = 1; n <= total; n++) fa_run(n, mode);
    fa_fsync_failure();
    for (n = 0; n < FA_STEPS; n++) free(fa_clean.out[n].b);
    nn_context_destroy(fa_ctx);
    {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", fa_dir);
        if (system(cmd) != 0) fprintf(stderr, "(could not remove %s)\n", fa_dir);
    }
    printf("FUZZ target=alloc execs=%ld crashes=%ld allocations=%ld (per call:", fa_runs, fa_bad, total);
    for (n = 0; n < FA_STEPS; n++) printf(" %s %ld", fa_step_names[n], fa_clean.allocs[n]);
    printf(")\n");
    return fa_bad ? 1 : 0;
}
#else
typedef int nn_fuzz_alloc_needs_NN_FUZZ_ALLOC; /* ISO C wants a declaration in every file */
#endif
