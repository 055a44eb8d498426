/* The compiled-program cache (src/opencl/cache.c, src/opencl/backend.c) on an OpenCL device: a
   compile writes one valid file per program; a later context loads them; a file cut short,
   with a byte changed, made for another key, replaced by garbage or emptied is ignored
   (an info line), the program is built from source, gives the same results, and the file
   is written valid again; no temporary file is ever left, even when the rename fails (a
   directory in the file's place); a cache directory that cannot be made costs nothing but
   the cache; contexts on several threads fill one directory at once; a FIFO in a file's
   place is refused without waiting on it; a cache directory that another user owns, or
   that group or others may write, is not used (an info line), and a new one is made 0700. The files are checked against the format as written down here, independently of
   the parser in nn.h:
       "nnh-prog", u32 version 1, u32 header size 40, u64 key (the file name's hex),
       u64 payload bytes, u64 checksum (t_checksum); all little-endian. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#if !defined(_WIN32)
#  include <dirent.h>
#  include <errno.h>
#  include <fcntl.h>
#  include <pthread.h>
#  include <sys/stat.h>
#  include <time.h>
#  include <unistd.h>
#  define T_CACHE 1
#else
#  define T_CACHE 0
#endif

#if T_CACHE
#define T_MAXFILES 32

typedef struct t_log {
    char text[16384];
    int ignored, loaded, stored, unstored; /* lines "program cache: ignoring / loaded / stored / cannot store" */
    int fifo_refused;            /* lines "program cache: cannot read ...: a FIFO, not a regular file" */
    int dir_refused;             /* info lines "program cache: ...: another user could supply the programs" */
    char fail[600];              /* t_run: what went wrong */
} t_log;

static void t_logger(void *user, nn_log_level level, const char *message) {
    t_log *l = (t_log *)user;
    size_t used = strlen(l->text);
    if (strncmp(message, "program cache: ignoring ", 24) == 0) l->ignored++;
    if (strncmp(message, "program cache: loaded ", 22) == 0) l->loaded++;
    if (strncmp(message, "program cache: stored ", 22) == 0) l->stored++;
    if (strncmp(message, "program cache: cannot store ", 28) == 0) l->unstored++;
    if (strncmp(message, "program cache: cannot read ", 27) == 0 && strstr(message, ": a FIFO, not a regular file"))
        l->fifo_refused++;
    if (strncmp(message, "program cache: ", 15) == 0 && strstr(message, "another user could supply the programs") &&
        level == NN_LOG_INFO)
        l->dir_refused++;
    snprintf(l->text + used, sizeof l->text - used, "%s\n", message);
}

/* The checksum of a whole file of n bytes: 8 FNV-1a-64 lanes (lane j from the offset basis
   + j) taking the bytes of 0..31 and 40..n-1 in turn, folded c = (c ^ lane) * prime. */
static unsigned long long t_checksum(const unsigned char *file, size_t n) {
    const unsigned long long basis = 14695981039346656037ULL, prime = 1099511628211ULL;
    unsigned long long lane[8], c = basis;
    size_t i, k = 0;
    int j;
    for (j = 0; j < 8; j++) lane[j] = basis + (unsigned long long)j;
    for (i = 0; i < n; i++) {
        if (i >= 32 && i < 40) continue; /* the checksum itself */
        lane[k % 8] = (lane[k % 8] ^ file[i]) * prime;
        k++;
    }
    for (j = 0; j < 8; j++) c = (c ^ lane[j]) * prime;
    return c;
}

static unsigned long long t_le(const unsigned char *p, int n) {
    unsigned long long v = 0;
    while (n--) v = (v << 8) | p[n];
    return v;
}

static void t_put_le(unsigned char *p, unsigned long long v, int n) {
    int i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The whole file (malloc'ed, *n bytes), or NULL. */
static unsigned char *t_read(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b = NULL;
    long len;
    *n = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (b = (unsigned char *)malloc((size_t)len + 1)) != NULL && fread(b, 1, (size_t)len, f) == (size_t)len)
        *n = (size_t)len;
    else {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

static void t_rm_dir(const char *dir) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
}

static int t_write(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = fwrite(b, 1, n, f) == n;
    return (fclose(f) == 0) && ok;
}

/* NULL when the file at dir/name is a valid cache file for the key its name carries, else
   what is wrong with it. */
static const char *t_invalid(const char *dir, const char *name) {
    char path[1024];
    const char *dash = strrchr(name, '-'), *why = NULL;
    unsigned long long key;
    unsigned char *b;
    size_t n;
    if (!dash || strlen(dash) != 1 + 16 + 4 || strcmp(dash + 17, ".bin") != 0) return "not NAME-<16 hex>.bin";
    key = strtoull(dash + 1, NULL, 16);
    snprintf(path, sizeof path, "%s/%.255s", dir, name);
    if (!(b = t_read(path, &n))) return "unreadable";
    if (n <= 40) why = "no payload";
    else if (memcmp(b, "nnh-prog", 8) != 0) why = "magic";
    else if (t_le(b + 8, 4) != 1 || t_le(b + 12, 4) != 40) why = "version or header size";
    else if (t_le(b + 16, 8) != key) why = "key differs from the name's";
    else if (t_le(b + 24, 8) != n - 40) why = "payload length";
    else if (t_le(b + 32, 8) != t_checksum(b, n)) why = "checksum";
    free(b);
    return why;
}

/* The names in dir (sorted, at most T_MAXFILES), and how many. */
static int t_list(const char *dir, char names[T_MAXFILES][256]) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0, i, j;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        if (n < T_MAXFILES) snprintf(names[n], 256, "%s", e->d_name);
        n++;
    }
    closedir(d);
    if (n > T_MAXFILES) n = T_MAXFILES;
    for (i = 1; i < n; i++) /* insertion sort: few names */
        for (j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[256];
            memcpy(t, names[j], 256);
            memcpy(names[j], names[j - 1], 256);
            memcpy(names[j - 1], t, 256);
        }
    return n;
}

/* Every file in dir a valid cache file (no temporary ones), at least one; their names. */
static int t_dir_valid(const char *dir, char names[T_MAXFILES][256], const char *when) {
    int n = t_list(dir, names), i, ok = 1;
    if (!T_CHECK(n >= 1, "%s: no cache file in %s", when, dir)) return -1;
    for (i = 0; i < n; i++) {
        const char *why = t_invalid(dir, names[i]);
        ok &= T_CHECK(why == NULL, "%s: %s/%s: %s", when, dir, names[i], why ? why : "");
    }
    return ok ? n : -1;
}

/* The threads' case: every thread builds its graph (the builds fill the directory at once),
   waits until all have, then runs and releases its context in turn. PoCL 3.1 aborts now and
   then when one context's kernel finishes while another's programs are built or released
   (pocl_release_dlhandle_cache: "found->ref_count > 0" failed, in 3 of 5 full runs with cold
   kernel caches, once with the runs alone taking turns): its race, not the cache's. */
typedef struct t_turns {
    pthread_mutex_t m;
    pthread_cond_t c;
    int arrived, expected;
} t_turns;
static t_turns *t_run_turns = NULL;

/* arrives, waits for the others, returns holding the turn (t->m) */
static void t_turn_take(t_turns *t) {
    pthread_mutex_lock(&t->m);
    t->arrived++;
    pthread_cond_broadcast(&t->c);
    while (t->arrived < t->expected) pthread_cond_wait(&t->c, &t->m);
}

/* A context caching in dir: a matmul and relu, forward, checked against a double
   reference; 1 when it all worked, else 0 and log->fail says why (no T_CHECK: threads call
   it). Its log (debug level) goes to *log. */
static int t_run(const t_env *e, const char *dir, t_log *log, const char *when) {
    static const float x[2 * 3] = {-1.0f, 2.0f, 0.5f, 3.0f, -0.25f, 1.5f};
    nn_context_desc d;
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_tensor xt, wt, yt;
    float w[4 * 3], y[2 * 4];
    int i, j, k, built = 0, ran = 0;
    t_turns *turns = t_run_turns;
    memset(&xt, 0, sizeof xt);
    memset(&wt, 0, sizeof wt);
    memset(&yt, 0, sizeof yt);
    for (i = 0; i < 12; i++) w[i] = (float)((i * 7) % 5) * 0.25f - 0.5f;
    t_context_desc(e, &d);
    d.backend.cache_dir = dir;
    d.log = t_logger;
    d.log_user = log;
    d.log_level = NN_LOG_DEBUG;
    memset(log, 0, sizeof *log);
    if (nn_context_create(&d, &ctx) != NN_OK) {
        snprintf(log->fail, sizeof log->fail, "%.100s: nn_context_create failed; log:\n%.400s", when, log->text);
        if (turns) {
            t_turn_take(turns);
            pthread_mutex_unlock(&turns->m);
        }
        return 0;
    }
    if (nn_graph_create(ctx, NULL, &g) == NN_OK) {
        xt = nn_input(g, "x", NN_F32, nn_shape2(2, 3));
        wt = nn_input(g, "w", NN_F32, nn_shape2(4, 3));
        yt = nn_relu(g, nn_matmul(g, xt, wt, 0, 1));
        nn_graph_output(g, yt);
        built = nn_graph_compile(g, NULL) == NN_OK;
    }
    if (turns) t_turn_take(turns);
    ran = built && nn_tensor_write(g, xt, x, sizeof x) == NN_OK && nn_tensor_write(g, wt, w, sizeof w) == NN_OK &&
          nn_graph_forward(g) == NN_OK && nn_tensor_read(g, yt, y, sizeof y) == NN_OK;
    if (ran) {
        for (i = 0; i < 2; i++)
            for (j = 0; j < 4; j++) {
                double r = 0;
                for (k = 0; k < 3; k++) r += (double)x[i * 3 + k] * (double)w[j * 3 + k];
                r = r > 0 ? r : 0;
                if (!(fabs(y[i * 4 + j] - r) <= 1e-5 * (1 + fabs(r))) && !log->fail[0])
                    snprintf(log->fail, sizeof log->fail, "%s: y[%d][%d] = %g, expected %g", when, i, j, y[i * 4 + j], r);
            }
    } else {
        snprintf(log->fail, sizeof log->fail, "%s: %s", when, nn_context_last_error(ctx));
    }
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    if (turns) pthread_mutex_unlock(&turns->m);
    return !log->fail[0];
}

/* The ways a file is damaged; each keeps the file's name. */
enum { D_HALF, D_HEADER_CUT, D_PAYLOAD_BYTE, D_LENGTH_BYTE, D_CHECKSUM_BYTE, D_OTHER_KEY, D_LONGER, D_GARBAGE, D_EMPTY,
       D_COUNT };
static const char *const t_damage_name[D_COUNT] = {
    "cut to half", "cut inside the header", "a payload byte flipped", "a length byte flipped",
    "a checksum byte flipped", "made for another key (valid checksum)", "a byte appended", "garbage", "empty"};

static int t_damage(const char *path, int how) {
    unsigned char *b;
    size_t n;
    int ok;
    if (how == D_GARBAGE) return t_write(path, (const unsigned char *)"garbage\n", 8);
    if (how == D_EMPTY) return t_write(path, (const unsigned char *)"", 0);
    if (!(b = t_read(path, &n)) || n <= 40) {
        free(b);
        return 0;
    }
    switch (how) {
    case D_HALF: n /= 2; break;
    case D_HEADER_CUT: n = 39; break;
    case D_PAYLOAD_BYTE: b[40 + (n - 40) / 2] ^= 0x10; break;
    case D_LENGTH_BYTE: b[24] ^= 0x01; break;
    case D_CHECKSUM_BYTE: b[39] ^= 0x80; break;
    case D_OTHER_KEY:
        t_put_le(b + 16, t_le(b + 16, 8) ^ 0x5a5a, 8);
        t_put_le(b + 32, t_checksum(b, n), 8);
        break;
    case D_LONGER: {
        unsigned char *c = (unsigned char *)realloc(b, n + 1);
        if (!c) {
            free(b);
            return 0;
        }
        b = c;
        b[n++] = 0;
        break;
    }
    default: break;
    }
    ok = t_write(path, b, n);
    free(b);
    return ok;
}

static void test_cache_damage(const t_env *e) {
    char dir[] = "/tmp/nn-test-cache-XXXXXX", cmd[300], names[T_MAXFILES][256], again[T_MAXFILES][256];
    char path[1024], when[200];
    t_log *log = (t_log *)malloc(sizeof *log);
    int n, m, how, i;
    if (!t_begin(e, "opencl: program cache: damaged files are rebuilt")) {
        free(log);
        return;
    }
    if (!e->opencl) {
        t_skip("no programs on the CPU backend");
        goto done;
    }
    if (!T_CHECK(log != NULL && mkdtemp(dir) != NULL, "mkdtemp failed")) goto done;
    if (!T_CHECK(t_run(e, dir, log, "first run"), "%s", log->fail)) goto cleanup;
    if ((n = t_dir_valid(dir, names, "after the first run")) < 1) goto cleanup;
    T_CHECK(log->stored == n && log->ignored == 0, "first run: %d stored, %d ignored for %d files; log:\n%s",
            log->stored, log->ignored, n, log->text);
    if (!T_CHECK(t_run(e, dir, log, "second run"), "%s", log->fail)) goto cleanup;
    T_CHECK(log->loaded == n && log->stored == 0 && log->ignored == 0,
            "second run: %d of %d files loaded, %d stored, %d ignored; log:\n%s", log->loaded, n, log->stored,
            log->ignored, log->text);
    for (how = 0; how < D_COUNT; how++) {
        snprintf(when, sizeof when, "files %s", t_damage_name[how]);
        for (i = 0; i < n; i++) {
            snprintf(path, sizeof path, "%s/%.255s", dir, names[i]);
            if (!T_CHECK(t_damage(path, how), "%s: cannot damage %s", when, path)) goto cleanup;
            T_CHECK(t_invalid(dir, names[i]) != NULL, "%s: the damaged %s still passes the format check", when, path);
        }
        if (!T_CHECK(t_run(e, dir, log, when), "%s", log->fail)) break;
        T_CHECK(log->ignored == n && log->stored == n && log->loaded == 0,
                "%s: %d ignored, %d stored, %d loaded for %d files; log:\n%s", when, log->ignored, log->stored,
                log->loaded, n, log->text);
        m = t_dir_valid(dir, again, when);
        for (i = 0; m == n && i < n; i++)
            if (strcmp(names[i], again[i]) != 0) m = -1;
        T_CHECK(m == n, "%s: other files afterwards than before (a temporary file left?)", when);
    }
    if (!T_CHECK(t_run(e, dir, log, "rewritten"), "%s", log->fail)) goto cleanup; /* the rewritten files load */
    T_CHECK(log->loaded == n && log->ignored == 0 && log->stored == 0,
            "rewritten: %d of %d loaded, %d ignored, %d stored; log:\n%s", log->loaded, n, log->ignored, log->stored,
            log->text);
    /* a directory in each file's place: the rename fails and takes its temporary file away */
    for (i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%.255s", dir, names[i]);
        remove(path);
        if (!T_CHECK(mkdir(path, 0755) == 0, "cannot make the directory %s", path)) goto cleanup;
        snprintf(path, sizeof path, "%s/%.255s/x", dir, names[i]);
        if (!T_CHECK(t_write(path, (const unsigned char *)"x", 1), "cannot write %s", path)) goto cleanup;
    }
    if (T_CHECK(t_run(e, dir, log, "directories in the files' places"), "%s", log->fail)) {
        T_CHECK(log->unstored == n && log->stored == 0 && log->loaded == 0,
                "directories in the files' places: %d not stored, %d stored, %d loaded of %d; log:\n%s", log->unstored,
                log->stored, log->loaded, n, log->text);
        m = t_list(dir, again);
        for (i = 0; m == n && i < n; i++)
            if (strcmp(names[i], again[i]) != 0) m = -1;
        T_CHECK(m == n, "directories in the files' places: other files afterwards (a temporary file left?)");
    }
cleanup:
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
done:
    free(log);
    t_end();
}

/* A cache directory under a regular file cannot be made: the compile works and says
   nothing above debug level. */
static void test_cache_unwritable(const t_env *e) {
    char dir[] = "/tmp/nn-test-cache-XXXXXX", cmd[300], sub[200];
    t_log *log = (t_log *)malloc(sizeof *log);
    if (!t_begin(e, "opencl: program cache: an unusable directory costs only the cache")) {
        free(log);
        return;
    }
    if (!e->opencl) {
        t_skip("no programs on the CPU backend");
        goto done;
    }
    if (!T_CHECK(log != NULL && mkdtemp(dir) != NULL, "mkdtemp failed")) goto done;
    snprintf(sub, sizeof sub, "%s/file", dir);
    if (T_CHECK(t_write(sub, (const unsigned char *)"x", 1), "cannot write %s", sub)) {
        snprintf(sub, sizeof sub, "%s/file/cache", dir);
        if (T_CHECK(t_run(e, sub, log, "unwritable"), "%s", log->fail))
            T_CHECK(log->stored == 0 && log->loaded == 0 && strstr(log->text, "cannot create") != NULL,
                    "unwritable: %d stored, %d loaded; log:\n%s", log->stored, log->loaded, log->text);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
done:
    free(log);
    t_end();
}

/* Releases a reader blocked opening one of the FIFOs (the defect: the cache's fopen waited
   forever for a writer): after a grace period, opens each for writing without blocking,
   which succeeds only while a reader has it open, and closes it again (the reader then
   reads nothing). The case fails on the log, not on this: a reader that opens with
   O_NONBLOCK, sees a FIFO and closes may be met in that moment too. */
typedef struct t_fifo_watch {
    char (*paths)[1024];
    int n;
    volatile int stop;
    int released;
} t_fifo_watch;

static void *t_fifo_watch_run(void *arg) {
    t_fifo_watch *w = (t_fifo_watch *)arg;
    struct timespec tick;
    int ms, i;
    tick.tv_sec = 0;
    tick.tv_nsec = 20 * 1000 * 1000;
    for (ms = 0; !w->stop; ms += 20) {
        nanosleep(&tick, NULL);
        if (ms < 3000) continue; /* the grace period */
        for (i = 0; i < w->n; i++) {
            int fd = open(w->paths[i], O_WRONLY | O_NONBLOCK);
            if (fd >= 0) {
                w->released++;
                close(fd);
            }
        }
    }
    return NULL;
}

/* A FIFO in each cache file's place: the compile neither waits on it (the defect: forever)
   nor replaces it; the programs are built from source, give the same results, and a debug
   line names each FIFO. */
static void test_cache_fifo(const t_env *e) {
    char dir[] = "/tmp/nn-test-cache-XXXXXX", names[T_MAXFILES][256], (*paths)[1024] = NULL;
    t_log *log = (t_log *)malloc(sizeof *log);
    t_fifo_watch w;
    pthread_t th;
    struct stat st;
    int n, i, started = 0;
    if (!t_begin(e, "opencl: program cache: a FIFO in a file's place is refused, not waited on")) {
        free(log);
        return;
    }
    if (!e->opencl) {
        t_skip("no programs on the CPU backend");
        goto done;
    }
    if (!T_CHECK(log != NULL && mkdtemp(dir) != NULL, "mkdtemp failed")) goto done;
    if (!T_CHECK(t_run(e, dir, log, "first run"), "%s", log->fail)) goto cleanup;
    if ((n = t_dir_valid(dir, names, "after the first run")) < 1) goto cleanup;
    paths = (char (*)[1024])calloc((size_t)n, sizeof *paths);
    if (!T_CHECK(paths != NULL, "out of memory")) goto cleanup;
    for (i = 0; i < n; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%.255s", dir, names[i]);
        remove(paths[i]);
        if (!T_CHECK(mkfifo(paths[i], 0600) == 0, "mkfifo %s: %s", paths[i], strerror(errno))) goto cleanup;
    }
    memset(&w, 0, sizeof w);
    w.paths = paths;
    w.n = n;
    started = pthread_create(&th, NULL, t_fifo_watch_run, &w) == 0;
    T_CHECK(started, "pthread_create failed");
    T_CHECK(t_run(e, dir, log, "FIFOs in the files' places"), "%s", log->fail);
    w.stop = 1;
    if (started) pthread_join(th, NULL);
    T_CHECK(log->fifo_refused == n && log->loaded == 0 && log->stored == 0 && log->unstored == n,
            "FIFOs: %d refused as FIFOs, %d loaded, %d stored, %d not stored of %d%s; log:\n%s", log->fifo_refused,
            log->loaded, log->stored, log->unstored, n,
            w.released ? " (a reader was blocked opening a FIFO: the test released it)" : "", log->text);
    for (i = 0; i < n; i++)
        T_CHECK(stat(paths[i], &st) == 0 && S_ISFIFO(st.st_mode), "%s is no longer the FIFO", paths[i]);
cleanup:
    free(paths);
    t_rm_dir(dir);
done:
    free(log);
    t_end();
}

/* The cache directory, as ssh treats its files: one that group or others may write, or
   that another user owns, could hold native code of theirs; it is not used (an info line
   naming it and why: programs built from source, not stored); a missing one is made 0700,
   with its missing parents. Every step checks the same results (t_run). */
static void test_cache_dir_private(const t_env *e) {
    char base[] = "/tmp/nn-test-cache-XXXXXX", dir[300], parent[300], names[T_MAXFILES][256];
    t_log *log = (t_log *)malloc(sizeof *log);
    struct stat st;
    static const unsigned modes[3] = {0770, 0702, 0777};
    int n, i;
    if (!t_begin(e, "opencl: program cache: a directory others may write or own is not used; made 0700")) {
        free(log);
        return;
    }
    if (!e->opencl) {
        t_skip("no programs on the CPU backend");
        goto done;
    }
    if (!T_CHECK(log != NULL && mkdtemp(base) != NULL, "mkdtemp failed")) goto done;
    snprintf(parent, sizeof parent, "%s/made", base);
    snprintf(dir, sizeof dir, "%s/made/nn", base);
    if (!T_CHECK(t_run(e, dir, log, "a new directory"), "%s", log->fail)) goto cleanup;
    T_CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "%s made with mode %04o, not 0700", dir,
            (unsigned)(st.st_mode & 0777));
    T_CHECK(stat(parent, &st) == 0 && (st.st_mode & 0777) == 0700, "%s made with mode %04o, not 0700", parent,
            (unsigned)(st.st_mode & 0777));
    if ((n = t_dir_valid(dir, names, "after the first run")) < 1) goto cleanup;
    T_CHECK(log->stored == n && log->dir_refused == 0, "a new directory: %d stored of %d, %d refusals; log:\n%s",
            log->stored, n, log->dir_refused, log->text);
    for (i = 0; i < 3; i++) {
        char when[100], want[400];
        snprintf(when, sizeof when, "mode %04o", modes[i]);
        if (!T_CHECK(chmod(dir, modes[i]) == 0, "chmod %s: %s", dir, strerror(errno))) goto cleanup;
        if (!T_CHECK(t_run(e, dir, log, when), "%s", log->fail)) continue;
        snprintf(want, sizeof want, "program cache: %s is writable by %s (mode %04o; chmod go-w it): ", dir,
                 i == 0 ? "its group" : i == 1 ? "others" : "group and others", modes[i]);
        T_CHECK(log->dir_refused == 1 && log->loaded == 0 && log->stored == 0 && strstr(log->text, want) != NULL,
                "%s: %d refusals (\"%s\"), %d loaded, %d stored; log:\n%s", when, log->dir_refused, want, log->loaded,
                log->stored, log->text);
    }
    if (!T_CHECK(chmod(dir, 0700) == 0, "chmod %s: %s", dir, strerror(errno))) goto cleanup;
    if (T_CHECK(t_run(e, dir, log, "mode 0700 again"), "%s", log->fail))
        T_CHECK(log->loaded == n && log->dir_refused == 0, "mode 0700 again: %d of %d loaded, %d refusals; log:\n%s",
                log->loaded, n, log->dir_refused, log->text);
    if (geteuid() == 0) { /* root can give it to another user */
        if (T_CHECK(chown(dir, 65534, 65534) == 0, "chown %s: %s", dir, strerror(errno)) &&
            T_CHECK(t_run(e, dir, log, "owned by user 65534"), "%s", log->fail))
            T_CHECK(log->dir_refused == 1 && log->loaded == 0 && log->stored == 0 &&
                        strstr(log->text, "is owned by user 65534, not by this process's user 0") != NULL,
                    "owned by user 65534: %d refusals, %d loaded, %d stored; log:\n%s", log->dir_refused, log->loaded,
                    log->stored, log->text);
    } else {
        printf("  (not root: a directory of another user is not tried)\n");
    }
    /* a FIFO where the directory should be: not a directory, not waited on */
    snprintf(dir, sizeof dir, "%s/fifo", base);
    if (T_CHECK(mkfifo(dir, 0600) == 0, "mkfifo %s: %s", dir, strerror(errno)) &&
        T_CHECK(t_run(e, dir, log, "a FIFO for the directory"), "%s", log->fail))
        T_CHECK(log->loaded == 0 && log->stored == 0 && strstr(log->text, "a FIFO, not a directory") != NULL,
                "a FIFO for the directory: %d loaded, %d stored; log:\n%s", log->loaded, log->stored, log->text);
cleanup:
    t_rm_dir(base);
done:
    free(log);
    t_end();
}

/* Contexts on several threads compile into one empty directory at once. */
#define T_THREADS 4
typedef struct t_job {
    const t_env *e;
    const char *dir;
    int ok;
    t_log log;
} t_job;

static void *t_job_run(void *arg) {
    t_job *j = (t_job *)arg;
    j->ok = t_run(j->e, j->dir, &j->log, "a thread");
    return NULL;
}

static void test_cache_threads(const t_env *e) {
    char dir[] = "/tmp/nn-test-cache-XXXXXX", cmd[300], names[T_MAXFILES][256];
    t_job *jobs = (t_job *)calloc(T_THREADS, sizeof *jobs);
    pthread_t th[T_THREADS];
    t_turns turns = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    int started[T_THREADS], i;
    if (!t_begin(e, "opencl: program cache: threads fill one directory")) {
        free(jobs);
        return;
    }
    if (!e->opencl) {
        t_skip("no programs on the CPU backend");
        goto done;
    }
    if (!T_CHECK(jobs != NULL && mkdtemp(dir) != NULL, "mkdtemp failed")) goto done;
    turns.expected = T_THREADS;
    t_run_turns = &turns;
    for (i = 0; i < T_THREADS; i++) {
        jobs[i].e = e;
        jobs[i].dir = dir;
        started[i] = pthread_create(&th[i], NULL, t_job_run, &jobs[i]) == 0;
        T_CHECK(started[i], "pthread_create failed");
        if (!started[i]) { /* one fewer to wait for */
            pthread_mutex_lock(&turns.m);
            turns.expected--;
            pthread_cond_broadcast(&turns.c);
            pthread_mutex_unlock(&turns.m);
        }
    }
    for (i = 0; i < T_THREADS; i++)
        if (started[i]) pthread_join(th[i], NULL);
    t_run_turns = NULL;
    for (i = 0; i < T_THREADS; i++) T_CHECK(jobs[i].ok, "thread %d: %s", i, jobs[i].log.fail);
    t_dir_valid(dir, names, "after the threads");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
done:
    free(jobs);
    t_end();
}
#endif

void suite_cache(const t_env *e) {
#if T_CACHE
    test_cache_damage(e);
    test_cache_unwritable(e);
    test_cache_threads(e);
    test_cache_fifo(e);
    test_cache_dir_private(e);
#else
    if (t_begin(e, "opencl: program cache")) {
        t_skip("the cache tests use POSIX directories and threads");
        t_end();
    }
#endif
}
