/* Files, hardened: what a path names before it is read or replaced (FIFOs, directories,
   devices, symbolic links), saves that leave no partial file, numbers that read the same in
   every locale, CSV overflow and byte order marks, and datasets that check their arrays
   before reading them. Each case names the defect it guards against. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <dirent.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* A blocking open (the FIFO defect) would stop the binary for good: fail it instead. */
static void tf_hang(int sig) {
    static const char msg[] = "FAIL    files: a call blocked for 20 s (a FIFO opened for reading?)\n";
    (void)sig;
    if (write(1, msg, sizeof msg - 1) < 0) _exit(2);
    _exit(1);
}

static int tf_text(const char *path, const char *s, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = fwrite(s, 1, n, f) == n;
    return (fclose(f) == 0) && ok;
}

static int tf_str(const char *path, const char *s) { return tf_text(path, s, strlen(s)); }

/* Entries of dir other than . and .., and whether one has ".tmp." in its name. */
static int tf_entries(const char *dir, int *temps) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    *temps = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        n++;
        if (strstr(e->d_name, ".tmp.")) (*temps)++;
    }
    closedir(d);
    return n;
}

static void tf_rmdir(const char *dir) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
}

/* x [4, 3] -> dense "fc" (2), compiled when asked. */
static nn_graph *tf_net(nn_context *ctx, uint64_t seed, int64_t out, int compile) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.seed = seed;
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return NULL;
    nn_graph_output(g, nn_linear_layer(g, nn_input(g, "x", NN_F32, nn_shape2(4, 3)), out, NULL, "fc"));
    if (compile && nn_graph_compile(g, NULL) != NN_OK) {
        nn_graph_destroy(g);
        return NULL;
    }
    return g;
}

/* Defects: a FIFO blocked the reader in fopen forever; a directory gave "cannot allocate
   9223372036854775807 bytes"; a device was read as a file. */
static void tf_read_special(const t_env *e) {
    char dir[] = "/tmp/nn-test-files-XXXXXX", fifo[300];
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_array a;
    nn_result r;
    void (*old)(int);
    if (!t_begin(e, "files: FIFO, directory, device refused on read")) return;
    memset(&a, 0, sizeof a);
    if (!T_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed")) goto done;
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    if (!T_CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno))) goto done;
    old = signal(SIGALRM, tf_hang);
    alarm(20);
    r = nn_array_load_csv(ctx, fifo, NULL, &a);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), fifo) && strstr(nn_context_last_error(ctx), "FIFO"), "csv from a FIFO: %d %s",
            (int)r, nn_context_last_error(ctx));
    r = nn_array_load_idx(ctx, fifo, NN_F32, &a);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), "FIFO"), "idx from a FIFO: %d %s", (int)r, nn_context_last_error(ctx));
    alarm(0);
    signal(SIGALRM, old);
    r = nn_array_load_idx(ctx, dir, NN_F32, &a);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), "directory") && !strstr(nn_context_last_error(ctx), "allocate"),
            "idx from a directory: %d %s", (int)r, nn_context_last_error(ctx));
    r = nn_array_load_csv(ctx, dir, NULL, &a);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), "directory"), "csv from a directory: %d %s", (int)r, nn_context_last_error(ctx));
    r = nn_array_load_csv(ctx, "/dev/null", NULL, &a);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), "device"), "csv from /dev/null: %d %s", (int)r, nn_context_last_error(ctx));
    g = tf_net(ctx, 1, 2, 1);
    if (T_CHECK(g != NULL, "build: %s", nn_context_last_error(ctx))) {
        r = nn_graph_load_safetensors(g, dir, 0);
        T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), "directory"), "safetensors from a directory: %d %s", (int)r,
                nn_context_last_error(ctx));
        r = nn_graph_load_state(g, dir);
        T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), "directory"), "state from a directory: %d %s", (int)r,
                nn_context_last_error(ctx));
    }
    T_CHECK(a.data == NULL, "an array was filled by a failed load");
done:
    nn_graph_destroy(g);
    tf_rmdir(dir);
    t_end();
}

/* Defects: a save renamed its file over whatever the path named (a FIFO, a device node:
   /dev/full as root became a regular file; a symbolic link became a file and its target
   kept the old data) and did not keep the replaced file's permissions. Now: regular files
   only, written through symbolic links, permissions kept, no temporary file left. */
static void tf_save_targets(const t_env *e) {
    char dir[] = "/tmp/nn-test-files-XXXXXX", real[300], link1[300], link2[300], fifo[300], sub[300], dangling[300],
         made[300];
    nn_context *ctx = e->ctx;
    nn_graph *g1 = NULL, *g2 = NULL;
    struct stat st;
    float w1[6], w2[6];
    int temps, n;
    nn_result r;
    if (!t_begin(e, "files: saves replace regular files only")) return;
    if (!T_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed")) goto done;
    g1 = tf_net(ctx, 1, 2, 1);
    g2 = tf_net(ctx, 2, 2, 1);
    if (!T_CHECK(g1 && g2, "build: %s", nn_context_last_error(ctx))) goto done;
    snprintf(real, sizeof real, "%s/real.safetensors", dir);
    snprintf(link1, sizeof link1, "%s/link1", dir);
    snprintf(link2, sizeof link2, "%s/link2", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(dangling, sizeof dangling, "%s/dangling", dir);
    snprintf(made, sizeof made, "%s/made.safetensors", dir);
    if (!T_CHECK(tf_str(real, "old") && chmod(real, 0640) == 0 && symlink("real.safetensors", link1) == 0 &&
                     symlink(link1, link2) == 0 && mkfifo(fifo, 0600) == 0 && mkdir(sub, 0700) == 0 &&
                     symlink("made.safetensors", dangling) == 0,
                 "setup: %s", strerror(errno)))
        goto done;
    /* through two links (one relative, one absolute): the file at the end is replaced */
    T_OK(nn_graph_save_safetensors(g1, link2), ctx);
    T_CHECK(lstat(link1, &st) == 0 && S_ISLNK(st.st_mode) && lstat(link2, &st) == 0 && S_ISLNK(st.st_mode),
            "a symbolic link was replaced by the save");
    T_CHECK(stat(real, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0640, "the file's mode is %o, was 640",
            (unsigned)(st.st_mode & 0777));
    if (T_OK(nn_graph_load_safetensors(g2, real, 0), ctx) &&
        T_OK(nn_tensor_read(g1, nn_graph_find(g1, "fc.weight"), w1, sizeof w1), ctx) &&
        T_OK(nn_tensor_read(g2, nn_graph_find(g2, "fc.weight"), w2, sizeof w2), ctx))
        T_CHECK(memcmp(w1, w2, sizeof w1) == 0, "the file behind the links does not hold the saved weights");
    /* a link to nothing yet: the file it names is made */
    T_OK(nn_graph_save_safetensors(g1, dangling), ctx);
    T_CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode) && stat(made, &st) == 0 && S_ISREG(st.st_mode),
            "a save through a dangling link did not make the file it names");
    /* not regular: refused, and left as it was */
    r = nn_graph_save_safetensors(g1, fifo);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), "FIFO") && strstr(nn_context_last_error(ctx), fifo), "save to a FIFO: %d %s",
            (int)r, nn_context_last_error(ctx));
    T_CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
    r = nn_graph_save_state(g1, sub);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), "directory"), "save to a directory: %d %s", (int)r, nn_context_last_error(ctx));
    T_CHECK(lstat(sub, &st) == 0 && S_ISDIR(st.st_mode), "the directory was replaced");
    if (symlink("fifo", link1) != 0 && (remove(link1) != 0 || symlink("fifo", link1) != 0)) T_CHECK(0, "relink failed");
    r = nn_graph_save_safetensors(g1, link1);
    T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), "FIFO"), "save through a link to a FIFO: %d %s", (int)r,
            nn_context_last_error(ctx));
    n = tf_entries(dir, &temps);
    T_CHECK(n == 7 && temps == 0, "%d entries, %d temporary files left in %s", n, temps, dir);
done:
    nn_graph_destroy(g1);
    nn_graph_destroy(g2);
    tf_rmdir(dir);
    t_end();
}

/* A save that fails while writing (here: past RLIMIT_FSIZE) leaves the old file whole and
   no temporary file. */
static void tf_save_fails(const t_env *e) {
    char dir[] = "/tmp/nn-test-files-XXXXXX", path[300];
    nn_context *ctx = e->ctx;
    nn_graph *small = NULL, *big = NULL, *check = NULL;
    struct rlimit old, lim;
    void (*old_sig)(int);
    float w1[6], w2[6];
    int temps, n;
    nn_result r;
    if (!t_begin(e, "files: a failed save leaves the old file")) return;
    if (!T_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed")) goto done;
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    small = tf_net(ctx, 1, 2, 1);
    big = tf_net(ctx, 2, 4000, 0); /* 48 KB of weights */
    check = tf_net(ctx, 3, 2, 1);
    if (!T_CHECK(small && big && check, "build: %s", nn_context_last_error(ctx)) || !T_OK(nn_graph_save_safetensors(small, path), ctx) ||
        !T_CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0, "getrlimit"))
        goto done;
    lim = old;
    lim.rlim_cur = 16384;
    old_sig = signal(SIGXFSZ, SIG_IGN);
    if (T_CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit: %s", strerror(errno))) {
        r = nn_graph_save_safetensors(big, path);
        setrlimit(RLIMIT_FSIZE, &old);
        T_CHECK(r == NN_ERR_IO && strstr(nn_context_last_error(ctx), "write error"), "save past the size limit: %d %s", (int)r,
                nn_context_last_error(ctx));
    }
    signal(SIGXFSZ, old_sig);
    if (T_OK(nn_graph_load_safetensors(check, path, 0), ctx) &&
        T_OK(nn_tensor_read(small, nn_graph_find(small, "fc.weight"), w1, sizeof w1), ctx) &&
        T_OK(nn_tensor_read(check, nn_graph_find(check, "fc.weight"), w2, sizeof w2), ctx))
        T_CHECK(memcmp(w1, w2, sizeof w1) == 0, "the old file changed");
    n = tf_entries(dir, &temps);
    T_CHECK(n == 1 && temps == 0, "%d entries, %d temporary files left", n, temps);
done:
    nn_graph_destroy(small);
    nn_graph_destroy(big);
    nn_graph_destroy(check);
    tf_rmdir(dir);
    t_end();
}

/* NAdam on x [4, 3] -> dense (2) -> MSE: its state has a fractional metadata number (the
   momentum product). */
static nn_graph *tf_nadam(nn_context *ctx) {
    static const float x[12] = {0.5f, -1, 2, 0.25f, 1.5f, -0.75f, 1, 0, -2, 0.125f, 3, -1.25f}, y[8] = {1, 0, -1, 2, 0.5f, 1, -2, 0};
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor xt, yt, p;
    if (nn_graph_create(ctx, NULL, &g) != NN_OK) return NULL;
    xt = nn_input(g, "x", NN_F32, nn_shape2(4, 3));
    yt = nn_input(g, "y", NN_F32, nn_shape2(4, 2));
    p = nn_linear_layer(g, xt, 2, NULL, "fc");
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mse(g, p, yt);
    cd.optimizer.kind = NN_OPT_NADAM;
    cd.optimizer.lr = 0.01f;
    if (nn_graph_compile(g, &cd) != NN_OK || nn_tensor_write(g, xt, x, sizeof x) != NN_OK ||
        nn_tensor_write(g, yt, y, sizeof y) != NN_OK) {
        nn_graph_destroy(g);
        return NULL;
    }
    return g;
}

static int tf_steps(nn_graph *g, int n) {
    int i;
    for (i = 0; i < n; i++)
        if (nn_graph_step(g) != NN_OK) return 0;
    return nn_graph_finish(g) == NN_OK;
}

/* Defect: strtod and printf follow LC_NUMERIC, so under de_DE a CSV "1.5" was rejected and
   a training state saved in one locale did not load in the other. */
static void tf_locale(const t_env *e) {
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "de_DE"};
    char dir[] = "/tmp/nn-test-files-XXXXXX", csv[300], state[300];
    nn_context *ctx = e->ctx;
    nn_graph *a = NULL, *b = NULL;
    nn_array arr;
    const char *loc = NULL;
    int round, k;
    if (!t_begin(e, "files: numbers read the same under de_DE")) return;
    memset(&arr, 0, sizeof arr);
    for (k = 0; k < 3 && !loc; k++) loc = setlocale(LC_NUMERIC, names[k]);
    setlocale(LC_NUMERIC, "C");
    if (!loc) {
        t_skip("no de_DE locale here (localedef -i de_DE -f UTF-8 de_DE.UTF-8 makes one)");
        t_end();
        return;
    }
    if (!T_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed")) goto done;
    snprintf(csv, sizeof csv, "%s/n.csv", dir);
    snprintf(state, sizeof state, "%s/s.safetensors", dir);
    setlocale(LC_NUMERIC, names[k - 1]);
    {
        char b1[32];
        snprintf(b1, sizeof b1, "%.1f", 1.5);
        T_CHECK(strcmp(b1, "1,5") == 0, "the locale prints 1.5 as %s", b1);
    }
    if (T_CHECK(tf_str(csv, "1.5;-2.25e1\n0.1;3\n"), "write") &&
        T_OK(nn_array_load_csv(ctx, csv, &(nn_csv_desc){';', 0}, &arr), ctx)) {
        const float *v = (const float *)arr.data;
        T_CHECK(v[0] == 1.5f && v[1] == -22.5f && v[2] == 0.1f && v[3] == 3.0f, "values %g %g %g %g", v[0], v[1], v[2], v[3]);
    }
    nn_array_free(&arr);
    /* round 0: saved under de_DE, loaded under C; round 1: the other way */
    for (round = 0; round < 2; round++) {
        float wa[8], wb[8];
        setlocale(LC_NUMERIC, round == 0 ? names[k - 1] : "C");
        a = tf_nadam(ctx);
        b = tf_nadam(ctx);
        if (!T_CHECK(a && b, "build: %s", nn_context_last_error(ctx)) || !T_CHECK(tf_steps(a, 3), "train: %s", nn_context_last_error(ctx)) ||
            !T_OK(nn_graph_save_state(a, state), ctx))
            break;
        setlocale(LC_NUMERIC, round == 0 ? "C" : names[k - 1]);
        if (!T_OK(nn_graph_load_state(b, state), ctx) || !T_CHECK(tf_steps(a, 2) && tf_steps(b, 2), "train: %s", nn_context_last_error(ctx)))
            break;
        if (T_OK(nn_tensor_read(a, nn_graph_find(a, "fc.weight"), wa, 24), ctx) &&
            T_OK(nn_tensor_read(a, nn_graph_find(a, "fc.bias"), wa + 6, 8), ctx) &&
            T_OK(nn_tensor_read(b, nn_graph_find(b, "fc.weight"), wb, 24), ctx) && T_OK(nn_tensor_read(b, nn_graph_find(b, "fc.bias"), wb + 6, 8), ctx)) {
            int i, diff = 0;
            for (i = 0; i < 8; i++) diff += e->opencl ? fabsf(wa[i] - wb[i]) > 1e-6f * (fabsf(wa[i]) + 1e-3f) : memcmp(&wa[i], &wb[i], 4) != 0;
            T_CHECK(diff == 0, "round %d: %d of 8 parameters differ after resuming", round, diff);
        }
        nn_graph_destroy(a);
        nn_graph_destroy(b);
        a = b = NULL;
    }
done:
    setlocale(LC_NUMERIC, "C");
    nn_graph_destroy(a);
    nn_graph_destroy(b);
    tf_rmdir(dir);
    t_end();
}

/* Defects: a CSV number beyond float32 became inf without a word; a UTF-8 byte order mark
   (Excel's "CSV UTF-8") made the first field "not a number". */
static void tf_csv(const t_env *e) {
    static const struct {
        const char *text, *want;
    } over[] = {
        {"1,2\n3,1e39\n", ":2: field 2 \"1e39\" is out of the float32 range"},
        {"1,2\n\n-4e38,0\n", ":3: field 1 \"-4e38\" is out of the float32 range"},
        {"1e400\n", ":1: field 1 \"1e400\" is out of the float32 range"},
        {"3.4028236e38\n", ":1: field 1 \"3.4028236e38\" is out"},
    };
    char path[] = "/tmp/nn_csv_XXXXXX";
    nn_context *ctx = e->ctx;
    nn_array a;
    nn_csv_desc d;
    size_t i;
    int fd;
    if (!t_begin(e, "csv: overflow is an error, a byte order mark is skipped")) return;
    memset(&a, 0, sizeof a);
    fd = mkstemp(path);
    if (!T_CHECK(fd >= 0, "mkstemp failed")) goto done;
    close(fd);
    for (i = 0; i < sizeof over / sizeof over[0]; i++) {
        char want[200];
        nn_result r;
        tf_text(path, over[i].text, strlen(over[i].text));
        r = nn_array_load_csv(ctx, path, NULL, &a);
        snprintf(want, sizeof want, "%s%s", path, over[i].want);
        T_CHECK(r == NN_ERR_IO && a.data == NULL && strstr(nn_context_last_error(ctx), want), "case %d: %d \"%s\", want \"%s\"", (int)i,
                (int)r, nn_context_last_error(ctx), want);
    }
    /* the largest float, a subnormal, zero by underflow, and infinities written as such */
    if (tf_str(path, "3.4028234e38,1e-40,1e-60,-inf,NaN\n") && T_OK(nn_array_load_csv(ctx, path, NULL, &a), ctx)) {
        const float *v = (const float *)a.data;
        T_CHECK(v[0] == 3.4028234e38f && v[1] == 1e-40f && v[2] == 0 && isinf(v[3]) && v[3] < 0 && isnan(v[4]),
                "values %g %g %g %g %g", v[0], v[1], v[2], v[3], v[4]);
    }
    nn_array_free(&a);
    memset(&d, 0, sizeof d);
    d.header = 1;
    if (tf_str(path, "\xEF\xBB\xBFx,y\r\n1,2\r\n") && T_OK(nn_array_load_csv(ctx, path, &d, &a), ctx))
        T_CHECK(a.shape.dim[0] == 1 && a.shape.dim[1] == 2 && ((float *)a.data)[1] == 2.0f, "BOM and header: %lld x %lld",
                (long long)a.shape.dim[0], (long long)a.shape.dim[1]);
    nn_array_free(&a);
    if (tf_str(path, "\xEF\xBB\xBF" "1.5,2\n3,4\n") && T_OK(nn_array_load_csv(ctx, path, NULL, &a), ctx))
        T_CHECK(a.shape.dim[0] == 2 && ((float *)a.data)[0] == 1.5f, "BOM, no header: %lld rows, first %g", (long long)a.shape.dim[0],
                ((float *)a.data)[0]);
    nn_array_free(&a);
    tf_str(path, "1,\xEF\xBB\xBF" "2\n"); /* only at the start of the file */
    T_CHECK(nn_array_load_csv(ctx, path, NULL, &a) == NN_ERR_IO, "a byte order mark inside a row was accepted");
done:
    remove(path);
    t_end();
}

/* Defect: nn_dataset_create read shape.dim[] (and sized the copy from them) before it had
   checked ndim, so ndim > NN_MAX_DIMS read past the array. */
static void tf_dataset_args(const t_env *e) {
    static float xv[8];
    static int32_t yv[4];
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_dataset *ds = NULL;
    nn_dataset_desc dd;
    nn_array x, y;
    nn_result r;
    if (!t_begin(e, "dataset: arrays checked before their dims are read")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    x.dtype = NN_F32;
    x.shape = nn_shape2(4, 2);
    x.data = xv;
    y.dtype = NN_I32;
    y.shape = nn_shape1(4);
    y.data = yv;
    memset(&dd, 0, sizeof dd);
    dd.x = &x;
    dd.y = &y;
    dd.batch = 2;
    x.shape.ndim = 1000;
    r = nn_dataset_create(g, &dd, &ds);
    T_CHECK(r == NN_ERR_SHAPE && ds == NULL && strstr(nn_context_last_error(ctx), "1000 dims"), "ndim 1000: %d %s", (int)r,
            nn_context_last_error(ctx));
    x.shape.ndim = -3;
    r = nn_dataset_create(g, &dd, &ds);
    T_CHECK(r == NN_ERR_SHAPE && strstr(nn_context_last_error(ctx), "-3 dims"), "ndim -3: %d %s", (int)r, nn_context_last_error(ctx));
    x.shape = nn_shape2(4, -2);
    r = nn_dataset_create(g, &dd, &ds);
    T_CHECK(r == NN_ERR_SHAPE && strstr(nn_context_last_error(ctx), "dim 1 is -2"), "dim -2: %d %s", (int)r, nn_context_last_error(ctx));
    x.shape = nn_shape4(1 << 20, 1 << 20, 1 << 20, 1 << 20);
    r = nn_dataset_create(g, &dd, &ds);
    T_CHECK(r == NN_ERR_SHAPE, "2^80 elements: %d %s", (int)r, nn_context_last_error(ctx));
    x.shape = nn_shape2(4, 2);
    y.shape.ndim = 0;
    r = nn_dataset_create(g, &dd, &ds);
    T_CHECK(r == NN_ERR_SHAPE && strstr(nn_context_last_error(ctx), "y has 0 dims"), "y ndim 0: %d %s", (int)r, nn_context_last_error(ctx));
    y.shape = nn_shape1(4);
    y.dtype = (nn_dtype)7;
    r = nn_dataset_create(g, &dd, &ds);
    T_CHECK(r == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(ctx), "dtype"), "dtype 7: %d %s", (int)r, nn_context_last_error(ctx));
    y.dtype = NN_I32;
    T_OK(nn_dataset_create(g, &dd, &ds), ctx); /* the graph is still usable */
done:
    nn_graph_destroy(g);
    t_end();
}

void suite_files(const t_env *e) {
    T_RUN(e, tf_read_special, tf_save_targets, tf_save_fails, tf_locale, tf_csv, tf_dataset_args);
}
