/* Threads (README, "Threads"): separate contexts run in parallel; one context is one
   thread's at a time, and nn.h holds it to that:
   - a call that touches the context's backend, parameters or counters while another
     thread's call runs on it returns NN_ERR_STATE, changes nothing, and nn_context_last_error on
     the refused thread says so (the running call's message is not touched);
   - nn_graph_create, nn_graph_destroy, nn_param and the counters cannot report a refusal:
     they wait for the running call to return, so two threads may create and destroy
     graphs on one context at once;
   - device discovery is serialised, so contexts may be created on several threads at once
     (PoCL's first discovery is not thread-safe: a child process, so that the discovery
     under test is the process's first).
   `make test-tsan` runs these cases under ThreadSanitizer. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#  include <pthread.h>
#  include <spawn.h>
#  include <sys/wait.h>
#  include <time.h>
#  include <unistd.h>
#  define T_THREADS 1
extern char **environ;
#else
#  define T_THREADS 0
#endif

#if T_THREADS

/* ---- shared helpers ---- */

/* A log that several threads may write: the count of warnings and errors, and the text. */
typedef struct t_tlog {
    pthread_mutex_t mu;
    int warnings;
    char text[4096];
    void (*hook)(void *arg, const char *message); /* called outside the mutex, any level */
    void *hook_arg;
} t_tlog;

static void t_tlog_fn(void *user, nn_log_level level, const char *message) {
    t_tlog *l = (t_tlog *)user;
    if (level <= NN_LOG_WARN) {
        size_t used;
        pthread_mutex_lock(&l->mu);
        l->warnings++;
        used = strlen(l->text);
        snprintf(l->text + used, sizeof l->text - used, "%s\n", message);
        pthread_mutex_unlock(&l->mu);
    }
    if (l->hook) l->hook(l->hook_arg, message);
}

/* A context on e's backend whose log goes to l (level: the most detailed logged). */
static nn_result t_ctx(const t_env *e, t_tlog *l, nn_log_level level, nn_context **ctx) {
    nn_context_desc d;
    t_context_desc(e, &d);
    d.log = t_tlog_fn;
    d.log_user = l;
    d.log_level = level;
    return nn_context_create(&d, ctx);
}

static void sleep_ms(int ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* x [3, 5] -> dense 7 -> relu -> dense 2 = y, loss mean(y * y), SGD; share: another
   graph's parameters. Compiled, its input written; NULL on failure. */
static const float t_xs[15] = {-1.5f, -0.5f, 0.5f, 1.5f, -1.5f, -0.5f, 0.5f, 1.5f, -1.5f, -0.5f, 0.5f, 1.5f, -1.5f, -0.5f, 0.5f};

static nn_graph *t_net(nn_context *ctx, nn_graph *share, int compile, nn_tensor *y_out) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y;
    memset(&gd, 0, sizeof gd);
    gd.share_params = share;
    gd.seed = 7;
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return NULL;
    x = nn_input(g, "x", NN_F32, nn_shape2(3, 5));
    y = nn_linear_layer(g, nn_relu(g, nn_linear_layer(g, x, 7, NULL, "fc1")), 2, NULL, "fc2");
    nn_graph_output(g, y);
    if (y_out) *y_out = y;
    if (!compile) return g;
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mean(g, nn_mul(g, y, y));
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.1f;
    if (nn_graph_compile(g, &cd) != NN_OK || nn_tensor_write(g, x, t_xs, sizeof t_xs) != NN_OK) {
        nn_graph_destroy(g);
        return NULL;
    }
    return g;
}

/* fc1's weight [7, 5] of g into w. */
static nn_result t_weights(nn_graph *g, float w[35]) { return nn_tensor_read(g, nn_graph_find(g, "fc1.weight"), w, 35 * sizeof(float)); }

/* fc1's weight after `steps` steps of t_net on a context of its own (the reference). */
static int t_reference(const t_env *e, int steps, float w[35]) {
    t_tlog l;
    nn_context *ctx = NULL;
    nn_graph *g;
    int i, ok = 0;
    memset(&l, 0, sizeof l);
    pthread_mutex_init(&l.mu, NULL);
    if (t_ctx(e, &l, NN_LOG_WARN, &ctx) == NN_OK && (g = t_net(ctx, NULL, 1, NULL)) != NULL) {
        for (i = 0; i < steps && nn_graph_step(g) == NN_OK; i++) {}
        ok = i == steps && t_weights(g, w) == NN_OK;
        nn_graph_destroy(g);
    }
    nn_context_destroy(ctx);
    pthread_mutex_destroy(&l.mu);
    return ok;
}

/* A refusal: NN_ERR_STATE, and the refused thread's message names the call and the reason. */
static int t_refused(nn_context *ctx, nn_result r, const char *fn, const char *why, char *fail, size_t n) {
    const char *m = nn_context_last_error(ctx);
    if (r == NN_ERR_STATE && strstr(m, fn) && strstr(m, why)) return 1;
    if (!fail[0]) snprintf(fail, n, "%s gave %d (%s), not NN_ERR_STATE naming itself and \"%s\"", fn, (int)r, m, why);
    return 0;
}

/* ---- 1. graphs created and destroyed on one context from two threads ---- */

#define T_CD_ITERS 4000 /* per thread: about 0.2 s on the CPU backend (10x that under TSan) */
#define T_CD_LIVE 8      /* graphs each thread keeps alive at a time */

typedef struct t_cd_job {
    nn_context *ctx;
    nn_graph *base; /* a third of the graphs share its parameters */
    nn_graph *live[T_CD_LIVE]; /* left alive at the end */
    int k, made, bad;
    char fail[300];
} t_cd_job;

static void *t_cd_run(void *arg) {
    t_cd_job *j = (t_cd_job *)arg;
    int i;
    for (i = 0; i < T_CD_ITERS; i++) {
        nn_graph **slot = &j->live[(i * 5 + j->k) % T_CD_LIVE];
        nn_graph_desc gd;
        nn_result r;
        nn_graph_destroy(*slot);
        *slot = NULL;
        memset(&gd, 0, sizeof gd);
        gd.share_params = i % 3 == 1 ? j->base : NULL;
        r = nn_graph_create(j->ctx, &gd, slot);
        if (r != NN_OK) {
            if (!j->bad++) snprintf(j->fail, sizeof j->fail, "nn_graph_create gave %d: %.200s", (int)r, nn_context_last_error(j->ctx));
            continue;
        }
        j->made++;
        if (i % 3) { /* a parameter: new, or the base's */
            nn_tensor y = nn_linear_layer(*slot, nn_input(*slot, "x", NN_F32, nn_shape2(2, 5)), 7, NULL, "fc1");
            if (y.id <= 0 && !j->bad++)
                snprintf(j->fail, sizeof j->fail, "nn_linear_layer gave id %d: %.200s", y.id, nn_context_last_error(j->ctx));
        }
    }
    return NULL;
}

static void test_create_destroy(const t_env *e) {
    t_tlog l;
    nn_context *ctx = NULL;
    nn_graph *base = NULL;
    t_cd_job jobs[2];
    pthread_t th[2];
    int started[2], i, k;
    char want[100];
    if (!t_begin(e, "threads: two threads create and destroy graphs on one context")) return;
    memset(&l, 0, sizeof l);
    memset(jobs, 0, sizeof jobs);
    pthread_mutex_init(&l.mu, NULL);
    if (!T_CHECK(t_ctx(e, &l, NN_LOG_WARN, &ctx) == NN_OK, "no context on %s", e->backend)) goto done;
    base = t_net(ctx, NULL, 0, NULL);
    if (!T_CHECK(base != NULL, "cannot build the base graph: %s", nn_context_last_error(ctx))) goto done;
    for (i = 0; i < 2; i++) {
        jobs[i].ctx = ctx;
        jobs[i].base = base;
        jobs[i].k = i;
        started[i] = pthread_create(&th[i], NULL, t_cd_run, &jobs[i]) == 0;
        T_CHECK(started[i], "pthread_create failed");
    }
    for (i = 0; i < 2; i++)
        if (started[i]) pthread_join(th[i], NULL);
    for (i = 0; i < 2; i++)
        T_CHECK(jobs[i].bad == 0 && jobs[i].made == T_CD_ITERS, "thread %d: %d of %d graphs made, %d failures; first: %s", i,
                jobs[i].made, T_CD_ITERS, jobs[i].bad, jobs[i].fail);
    /* The context's list holds exactly the graphs alive: its destruction counts them. */
    nn_context_destroy(ctx);
    ctx = NULL;
    snprintf(want, sizeof want, "nn_context_destroy: %d graph(s) still use this context", 1 + 2 * T_CD_LIVE);
    T_CHECK(l.warnings == 1 && strstr(l.text, want), "want one warning \"%s\"; got:\n%s", want, l.text);
    for (i = 0; i < 2; i++)
        for (k = 0; k < T_CD_LIVE; k++) {
            T_CHECK(nn_graph_compile(jobs[i].live[k], NULL) == NN_ERR_STATE, "a graph compiled after its context went");
            nn_graph_destroy(jobs[i].live[k]);
        }
done:
    nn_graph_destroy(base);
    nn_context_destroy(ctx);
    pthread_mutex_destroy(&l.mu);
    t_end();
}

/* ---- 2. refusals, made certain: calls from the log callback of a running compile ---- */

typedef struct t_ref {
    const t_env *e;
    nn_context *ctx;
    nn_graph *g1, *g3;   /* g1 compiled and stepped once; g3 built, not compiled */
    nn_tensor y1;
    char path[64];
    int fired;           /* the hook ran (once) */
    int cb_returned;     /* the callback returned (set under mu) */
    pthread_mutex_t mu;
    pthread_t waiter;
    int waiter_started;
    int waited;          /* the waiter's nn_graph_create returned after the callback did */
    nn_result waiter_r;
    char fail[600];      /* the first failure, from any thread */
} t_ref;

/* Another thread's calls while the compile runs: each refused, naming itself. */
static void *t_ref_other(void *arg) {
    t_ref *t = (t_ref *)arg;
    const char *w = "in use by another thread";
    char *f = t->fail;
    size_t n = sizeof t->fail;
    float buf[15];
    int64_t skipped;
    nn_graph *g3 = t->g3;
    t_refused(t->ctx, nn_graph_step(t->g1), "nn_graph_step", w, f, n);
    t_refused(t->ctx, nn_graph_forward(t->g1), "nn_graph_forward", w, f, n);
    t_refused(t->ctx, nn_graph_finish(t->g1), "nn_graph_finish", w, f, n);
    t_refused(t->ctx, nn_tensor_read(t->g1, t->y1, buf, 6 * sizeof(float)), "nn_tensor_read", w, f, n);
    t_refused(t->ctx, nn_tensor_write(t->g1, nn_graph_find(t->g1, "x"), t_xs, sizeof t_xs), "nn_tensor_write", w, f, n);
    t_refused(t->ctx, nn_tensor_fill(t->g1, nn_graph_find(t->g1, "fc1.weight"), 0.0f), "nn_tensor_fill", w, f, n);
    t_refused(t->ctx, nn_graph_save_state(t->g1, t->path), "nn_graph_save_state", w, f, n);
    t_refused(t->ctx, nn_graph_load_state(t->g1, t->path), "nn_graph_load_state", w, f, n);
    t_refused(t->ctx, nn_graph_save_safetensors(t->g1, t->path), "nn_graph_save_safetensors", w, f, n);
    t_refused(t->ctx, nn_graph_save_safetensors_dtype(t->g1, t->path, NN_BF16), "nn_graph_save_safetensors_dtype", w, f, n);
    t_refused(t->ctx, nn_graph_load_safetensors(t->g1, t->path, 0), "nn_graph_load_safetensors", w, f, n);
    t_refused(t->ctx, nn_model_save(t->g1, nn_graph_find(t->g1, "x"), t->y1, t->path), "nn_model_save", w, f, n);
    t_refused(t->ctx, nn_graph_skipped_steps(t->g1, &skipped), "nn_graph_skipped_steps", w, f, n);
    t_refused(t->ctx, nn_graph_loss_scale(t->g1, NULL, &skipped), "nn_graph_loss_scale", w, f, n);
    /* any batch size, train/eval mode (src/engine/model.c) */
    t_refused(t->ctx, nn_graph_set_batch(t->g1, 2), "nn_graph_set_batch", w, f, n);
    t_refused(t->ctx, nn_graph_train(t->g1, 0), "nn_graph_train", w, f, n);
    t_refused(t->ctx, nn_graph_compile(g3, NULL), "nn_graph_compile", w, f, n);
    { /* the 16-bit GEMM uses the context's pool */
        static const uint16_t one = 0x3F80;
        float c = 0.0f;
        t_refused(t->ctx, nn_cpu_gemm_bf16(t->ctx, 0, 0, 1, 1, 1, 1.0f, &one, 1, &one, 1, 0.0f, &c, 1), "nn_cpu_gemm_bf16", w, f, n);
        t_refused(t->ctx, nn_cpu_gemm_f16(t->ctx, 0, 0, 1, 1, 1, 1.0f, &one, 1, &one, 1, 0.0f, &c, 1), "nn_cpu_gemm_f16", w, f, n);
    }
    return NULL;
}

/* A call that cannot be refused waits: it returns only after the compile (here: its
   callback) has. */
static void *t_ref_waiter(void *arg) {
    t_ref *t = (t_ref *)arg;
    nn_graph *g = NULL;
    t->waiter_r = nn_graph_create(t->ctx, NULL, &g);
    pthread_mutex_lock(&t->mu);
    t->waited = t->cb_returned;
    pthread_mutex_unlock(&t->mu);
    nn_graph_destroy(g);
    return NULL;
}

static void t_ref_hook(void *arg, const char *message) {
    t_ref *t = (t_ref *)arg;
    pthread_t other;
    if (t->fired || strncmp(message, "compiled:", 9) != 0) return;
    t->fired = 1;
    if (pthread_create(&other, NULL, t_ref_other, t) == 0) pthread_join(other, NULL);
    else snprintf(t->fail, sizeof t->fail, "pthread_create failed");
    /* the same thread, from inside the compile: refused too, for that reason */
    if (!t->fail[0] && nn_graph_forward(t->g1) != NN_ERR_STATE)
        snprintf(t->fail, sizeof t->fail, "a forward pass ran from inside a compile's log callback");
    else if (!t->fail[0] && !strstr(nn_context_last_error(t->ctx), "from inside another call"))
        snprintf(t->fail, sizeof t->fail, "nested call's message: %s", nn_context_last_error(t->ctx));
    t->waiter_started = pthread_create(&t->waiter, NULL, t_ref_waiter, t) == 0;
    sleep_ms(50); /* time for the waiter to reach nn_graph_create */
    pthread_mutex_lock(&t->mu);
    t->cb_returned = 1;
    pthread_mutex_unlock(&t->mu);
}

static void test_refusals(const t_env *e) {
    t_tlog l;
    t_ref t;
    nn_graph *g2 = NULL;
    float before[35], after[35];
    if (!t_begin(e, "threads: calls while another thread's call runs: refused, nothing changed")) return;
    memset(&l, 0, sizeof l);
    memset(&t, 0, sizeof t);
    pthread_mutex_init(&l.mu, NULL);
    pthread_mutex_init(&t.mu, NULL);
    t.e = e;
    snprintf(t.path, sizeof t.path, "/tmp/nn-test-threads-%ld.st", (long)getpid());
    if (!T_CHECK(t_ctx(e, &l, NN_LOG_DEBUG, &t.ctx) == NN_OK, "no context on %s", e->backend)) goto done;
    t.g1 = t_net(t.ctx, NULL, 1, &t.y1);
    t.g3 = t_net(t.ctx, NULL, 0, NULL);
    g2 = t_net(t.ctx, t.g1, 0, NULL);
    if (!T_CHECK(t.g1 && g2 && t.g3, "cannot build the graphs: %s", nn_context_last_error(t.ctx))) goto done;
    if (!T_OK(nn_graph_step(t.g1), t.ctx) || !T_OK(nn_graph_save_state(t.g1, t.path), t.ctx) ||
        !T_OK(t_weights(t.g1, before), t.ctx))
        goto done;
    l.hook = t_ref_hook;
    l.hook_arg = &t;
    T_OK(nn_graph_compile(g2, NULL), t.ctx); /* the hook runs in its last log line */
    l.hook = NULL;
    if (t.waiter_started) pthread_join(t.waiter, NULL);
    T_CHECK(t.fired, "the compile logged no \"compiled:\" line");
    T_CHECK(!t.fail[0], "%s", t.fail);
    T_CHECK(t.waiter_started && t.waiter_r == NN_OK && t.waited,
            "nn_graph_create on another thread returned %d %s the running compile", (int)t.waiter_r,
            t.waited ? "after" : "before");
    T_CHECK(!strstr(nn_context_last_error(t.ctx), "another thread"), "the other thread's refusal reached this thread: %s",
            nn_context_last_error(t.ctx));
    if (T_OK(t_weights(t.g1, after), t.ctx))
        T_CHECK(memcmp(before, after, sizeof before) == 0, "a refused call changed the parameters");
    T_OK(nn_graph_step(t.g1), t.ctx); /* the context is free again */
done:
    nn_graph_destroy(g2);
    nn_graph_destroy(t.g3);
    nn_graph_destroy(t.g1);
    nn_context_destroy(t.ctx);
    remove(t.path);
    pthread_mutex_destroy(&t.mu);
    pthread_mutex_destroy(&l.mu);
    t_end();
}

/* ---- 3. training on one context while another thread uses it ---- */

#define T_TRAIN_STEPS 100

typedef struct t_busy {
    nn_context *ctx;
    nn_graph *g1;
    int done;            /* the trainer finished (under mu) */
    pthread_mutex_t mu;
    int forwards, refusals, graphs, bad;
    char fail[400];
} t_busy;

/* An evaluation graph sharing the trainer's parameters, new graphs, and the counters,
   until the trainer is done. */
static void *t_busy_other(void *arg) {
    t_busy *b = (t_busy *)arg;
    nn_graph *eval = NULL;
    nn_graph_desc gd;
    nn_tensor x, y;
    int done = 0;
    memset(&gd, 0, sizeof gd);
    gd.share_params = b->g1;
    gd.eval = 1;
    if (nn_graph_create(b->ctx, &gd, &eval) != NN_OK) {
        b->bad++;
        return NULL;
    }
    x = nn_input(eval, "x", NN_F32, nn_shape2(3, 5));
    y = nn_linear_layer(eval, nn_relu(eval, nn_linear_layer(eval, x, 7, NULL, "fc1")), 2, NULL, "fc2");
    nn_graph_output(eval, y);
    while (nn_graph_compile(eval, NULL) == NN_ERR_STATE) b->refusals++;
    if (nn_graph_status(eval) != NN_OK) {
        snprintf(b->fail, sizeof b->fail, "compile: %s", nn_context_last_error(b->ctx));
        b->bad++;
    }
    while (!done && !b->bad) {
        nn_graph *g = NULL;
        nn_result r = nn_tensor_write(eval, x, t_xs, sizeof t_xs);
        const char *fn = "nn_tensor_write";
        if (r == NN_OK) {
            r = nn_graph_forward(eval);
            fn = "nn_graph_forward";
        }
        if (r == NN_OK) b->forwards++;
        else if (t_refused(b->ctx, r, fn, "in use by another thread", b->fail, sizeof b->fail)) b->refusals++;
        else b->bad++;
        if (nn_graph_create(b->ctx, NULL, &g) == NN_OK) {
            b->graphs++;
            nn_graph_destroy(g);
        }
        {
            nn_stats st;
            if (nn_context_stats(b->ctx, &st) != NN_OK) b->bad++; /* waits, never refused */
        }
        pthread_mutex_lock(&b->mu);
        done = b->done;
        pthread_mutex_unlock(&b->mu);
    }
    nn_graph_destroy(eval);
    return NULL;
}

static void test_busy_training(const t_env *e) {
    t_tlog l;
    t_busy b;
    pthread_t th;
    int started = 0, steps = 0, refused = 0;
    float want[35], got[35];
    if (!t_begin(e, "threads: training while another thread evaluates, makes graphs, reads counters")) return;
    memset(&l, 0, sizeof l);
    memset(&b, 0, sizeof b);
    pthread_mutex_init(&l.mu, NULL);
    pthread_mutex_init(&b.mu, NULL);
    if (!T_CHECK(t_reference(e, T_TRAIN_STEPS, want), "the single-threaded reference failed")) goto done;
    if (!T_CHECK(t_ctx(e, &l, NN_LOG_WARN, &b.ctx) == NN_OK, "no context on %s", e->backend)) goto done;
    b.g1 = t_net(b.ctx, NULL, 1, NULL);
    if (!T_CHECK(b.g1 != NULL, "cannot build the graph: %s", nn_context_last_error(b.ctx))) goto done;
    started = pthread_create(&th, NULL, t_busy_other, &b) == 0;
    T_CHECK(started, "pthread_create failed");
    while (steps < T_TRAIN_STEPS) { /* a refused step changes nothing: run it again */
        nn_result r = nn_graph_step(b.g1);
        if (r == NN_OK) steps++;
        else if (r == NN_ERR_STATE && strstr(nn_context_last_error(b.ctx), "in use by another thread")) refused++;
        else {
            T_CHECK(0, "step %d: %d %s", steps, (int)r, nn_context_last_error(b.ctx));
            break;
        }
    }
    pthread_mutex_lock(&b.mu);
    b.done = 1;
    pthread_mutex_unlock(&b.mu);
    if (started) pthread_join(th, NULL);
    T_CHECK(b.bad == 0, "the other thread: %d failures; %s", b.bad, b.fail);
    while (nn_graph_finish(b.g1) == NN_ERR_STATE) {}
    if (steps == T_TRAIN_STEPS && T_OK(t_weights(b.g1, got), b.ctx))
        T_CHECK(memcmp(want, got, sizeof want) == 0, "%d steps with refusals between them (%d refused here, %d there) differ "
                "from %d steps alone", steps, refused, b.refusals, steps);
done:
    nn_graph_destroy(b.g1);
    nn_context_destroy(b.ctx);
    pthread_mutex_destroy(&b.mu);
    pthread_mutex_destroy(&l.mu);
    t_end();
}

/* ---- 4. contexts of their own, on four threads at once ---- */

#define T_CTX_THREADS 4
#define T_CTX_STEPS 20

typedef struct t_own {
    const t_env *e;
    const float *want;
    int ok;
    char fail[300];
} t_own;

static void *t_own_run(void *arg) {
    t_own *o = (t_own *)arg;
    t_tlog l;
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    float w[35];
    int i;
    memset(&l, 0, sizeof l);
    pthread_mutex_init(&l.mu, NULL);
    if (t_ctx(o->e, &l, NN_LOG_WARN, &ctx) != NN_OK) snprintf(o->fail, sizeof o->fail, "nn_context_create failed: %.250s", l.text);
    else if (!(g = t_net(ctx, NULL, 1, NULL))) snprintf(o->fail, sizeof o->fail, "cannot build: %s", nn_context_last_error(ctx));
    else {
        for (i = 0; i < T_CTX_STEPS && nn_graph_step(g) == NN_OK; i++) {}
        if (i < T_CTX_STEPS || t_weights(g, w) != NN_OK) snprintf(o->fail, sizeof o->fail, "step %d: %s", i, nn_context_last_error(ctx));
        else if (memcmp(w, o->want, sizeof w) != 0) snprintf(o->fail, sizeof o->fail, "the weights differ from one context's alone");
        else o->ok = 1;
    }
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    pthread_mutex_destroy(&l.mu);
    return NULL;
}

static void test_own_contexts(const t_env *e) {
    t_own own[T_CTX_THREADS];
    pthread_t th[T_CTX_THREADS];
    int started[T_CTX_THREADS], i;
    float want[35];
    if (!t_begin(e, "threads: four threads, a context each, train at once")) return;
    memset(own, 0, sizeof own);
    if (T_CHECK(t_reference(e, T_CTX_STEPS, want), "the single-threaded reference failed")) {
        for (i = 0; i < T_CTX_THREADS; i++) {
            own[i].e = e;
            own[i].want = want;
            started[i] = pthread_create(&th[i], NULL, t_own_run, &own[i]) == 0;
            T_CHECK(started[i], "pthread_create failed");
        }
        for (i = 0; i < T_CTX_THREADS; i++)
            if (started[i]) pthread_join(th[i], NULL);
        for (i = 0; i < T_CTX_THREADS; i++) T_CHECK(own[i].ok, "thread %d: %s", i, own[i].fail);
    }
    t_end();
}

/* ---- 5. OpenCL discovery on four threads at once, the process's first ---- */

#define T_DISCOVERY_RUNS 3

typedef struct t_disc {
    const char *device;
    int tuning;
    int ok;
    nn_result rc; /* nn_context_create's */
    char fail[300];
} t_disc;

static void *t_disc_run(void *arg) {
    t_disc *d = (t_disc *)arg;
    static const float x[4] = {-1.0f, 0.5f, -0.25f, 2.0f};
    float y[4] = {9, 9, 9, 9};
    nn_context_desc cd;
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_tensor in, out;
    memset(&cd, 0, sizeof cd);
    cd.device = d->device;
    cd.backend.tuning = (nn_tuning)d->tuning;
    cd.log_level = NN_LOG_ERROR;
    if ((d->rc = nn_context_create(&cd, &ctx)) != NN_OK) {
        snprintf(d->fail, sizeof d->fail, "nn_context_create(\"%s\") failed (its reason is logged above)", d->device);
        return NULL;
    }
    if (nn_graph_create(ctx, NULL, &g) == NN_OK) {
        in = nn_input(g, "x", NN_F32, nn_shape1(4));
        out = nn_relu(g, in);
        nn_graph_output(g, out);
        if (nn_graph_compile(g, NULL) == NN_OK && nn_tensor_write(g, in, x, sizeof x) == NN_OK &&
            nn_graph_forward(g) == NN_OK && nn_tensor_read(g, out, y, sizeof y) == NN_OK)
            d->ok = y[0] == 0.0f && y[1] == 0.5f && y[2] == 0.0f && y[3] == 2.0f;
        if (!d->ok) snprintf(d->fail, sizeof d->fail, "relu: %s (%g %g %g %g)", nn_context_last_error(ctx), y[0], y[1], y[2], y[3]);
    }
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return NULL;
}

/* The child (NN_TEST_THREADS_CHILD=discovery, NN_TEST_THREADS_DEVICE, _TUNING): four
   threads create a context on the device at once, each runs relu; 0 when all did. */
int t_threads_child(const char *which) {
    t_disc d[T_CTX_THREADS];
    pthread_t th[T_CTX_THREADS];
    int started[T_CTX_THREADS], i, bad = 0;
    const char *dev = getenv("NN_TEST_THREADS_DEVICE"), *tun = getenv("NN_TEST_THREADS_TUNING");
    if (strcmp(which, "discovery") != 0 || !dev) {
        printf("  child: no case %s\n", which);
        return 1;
    }
    memset(d, 0, sizeof d);
    for (i = 0; i < T_CTX_THREADS; i++) {
        d[i].device = dev;
        d[i].tuning = tun ? atoi(tun) : 0;
        started[i] = pthread_create(&th[i], NULL, t_disc_run, &d[i]) == 0;
    }
    for (i = 0; i < T_CTX_THREADS; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        if (!started[i] || !d[i].ok) {
            printf("  child thread %d: %s\n", i, started[i] ? d[i].fail : "pthread_create failed");
            bad++;
        }
    }
    if (bad == T_CTX_THREADS) { /* none opened: does the device exist for this process at all? */
        nn_context_desc cd;
        nn_context *ctx = NULL;
        nn_result r;
        for (i = 0; i < T_CTX_THREADS && d[i].rc == NN_ERR_UNAVAILABLE; i++) {}
        memset(&cd, 0, sizeof cd);
        cd.device = dev;
        cd.backend.tuning = (nn_tuning)d[0].tuning;
        cd.log_level = NN_LOG_ERROR;
        if (i == T_CTX_THREADS && (r = nn_context_create(&cd, &ctx)) == NN_ERR_UNAVAILABLE) {
            printf("  child: device %s is not found by one thread alone either\n", dev);
            fflush(stdout);
            return 3;
        }
        nn_context_destroy(ctx);
    }
    fflush(stdout);
    return bad ? 1 : 0;
}

static int t_spawn_child(const t_env *e) {
    char dev[200], tun[64], *argv[2], **envp;
    const char *kv[3];
    size_t n = 0, i, k;
    pid_t pid;
    int status = -1;
    snprintf(dev, sizeof dev, "NN_TEST_THREADS_DEVICE=%s", e->device);
    snprintf(tun, sizeof tun, "NN_TEST_THREADS_TUNING=%d", e->tuning);
    kv[0] = "NN_TEST_THREADS_CHILD=discovery";
    kv[1] = dev;
    kv[2] = tun;
    while (environ[n]) n++;
    envp = (char **)malloc((n + 4) * sizeof *envp);
    if (!envp) return -1;
    for (i = 0, n = 0; environ[i]; i++) {
        for (k = 0; k < 3; k++)
            if (strncmp(environ[i], kv[k], (size_t)(strchr(kv[k], '=') - kv[k]) + 1) == 0) break;
        if (k == 3) envp[n++] = environ[i];
    }
    for (k = 0; k < 3; k++) envp[n++] = (char *)kv[k];
    envp[n] = NULL;
    argv[0] = (char *)t_argv0;
    argv[1] = NULL;
    fflush(stdout);
    if (posix_spawnp(&pid, t_argv0, NULL, NULL, argv, envp) == 0 && waitpid(pid, &status, 0) == pid)
        status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    else
        status = -1;
    free(envp);
    return status;
}

static void test_discovery(const t_env *e) {
    int run, st;
    if (!t_begin(e, "threads: four threads create OpenCL contexts at once, first in the process")) return;
    if (!e->opencl) t_skip("OpenCL discovery: on the OpenCL passes");
    else if (e->tuning == NN_TUNING_GPU) t_skip("discovery does not depend on tuning: on the device's own pass");
    else if (!t_argv0) t_skip("the test binary's path is unknown");
    else
        for (run = 0; run < T_DISCOVERY_RUNS; run++) {
            st = t_spawn_child(e);
            if (st == 3) { /* the child's own discovery, on one thread, does not find the device */
                t_skip("a process this one starts does not find the device (a driver that hides a GPU from the "
                       "children of a process that uses it: NVIDIA 580 in a lent VM, README \"On a machine with a GPU\")");
                break;
            }
            if (!T_CHECK(st == 0, "child process %d of %d: status %d", run + 1, T_DISCOVERY_RUNS, st)) break;
        }
    t_end();
}
#endif

#if !T_THREADS
int t_threads_child(const char *which) {
    (void)which;
    return 1;
}
#endif

void suite_threads(const t_env *e) {
#if T_THREADS
    T_RUN(e, test_create_destroy, test_refusals, test_busy_training, test_own_contexts, test_discovery);
#else
    if (t_begin(e, "threads")) t_skip("POSIX threads only");
    t_end();
#endif
}
