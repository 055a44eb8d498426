/* ---------------------------------------------------------------------------
 * base/threads.c -- tiny persistent fork/join thread pool.
 *
 * One job at a time: nn__threadpool_run() publishes (fn, arg, n_tasks) and a new
 * 64-bit "ticket" word = generation << 32 | next task index.  The caller and
 * the workers claim task indices with a compare-and-swap on the ticket, so a
 * claim only succeeds for the current job; a worker that wakes up late (or
 * was descheduled) simply finds the job exhausted or superseded.  The caller
 * therefore waits only for tasks that were actually claimed to finish --
 * never for idle workers to show up -- which keeps the pool fast on an
 * oversubscribed machine: if the other threads are busy, the caller just runs
 * every task itself.
 *
 * Latency: workers spin (with a CPU pause) for ~0.2 ms after each job before
 * blocking on a condition variable, so back-to-back calls (thousands of small
 * GEMMs per second) are dispatched in about a microsecond while an idle pool
 * sleeps and costs nothing.  The sleep/wake handshakes are the classic Dekker
 * pattern on seq_cst atomics ("I am going to sleep" vs "there is news"), with
 * the final check made under the mutex so no wake-up is ever lost.
 *
 * Threads are used only with pthreads and gcc/clang __atomic builtins; on
 * _WIN32, with NN_NO_THREADS, or with other compilers everything runs on the
 * calling thread (nn__threadpool_size() == 1).
 *
 * Not supported: two different threads calling nn__threadpool_run() on the same
 * pool at the same time, or fn calling nn__threadpool_run() on the same pool -- both
 * are detected (busy flag) and the later call then runs inline on its thread.
 * ------------------------------------------------------------------------- */

#if !defined(_WIN32) && !defined(NN_NO_THREADS) && defined(__GNUC__)
#define NN__POOL_THREADED 1
#include <pthread.h>
#include <unistd.h>
#else
#define NN__POOL_THREADED 0
#endif

#define NN__POOL_MAX_THREADS 64

typedef void (*nn__task_fn)(void *arg, int task, int n_tasks);
typedef struct nn__threadpool nn__threadpool;

struct nn__threadpool {
    int n; /* workers including the caller */
    void *ws;       /* scratch kept between calls (GEMM packing), so steps allocate nothing */
    size_t ws_size;
#if NN__POOL_THREADED
    int n_spawned; /* background threads actually running (n - 1) */
    int sync_ok;   /* mutex + condvars initialised */
    pthread_t th[NN__POOL_MAX_THREADS];
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* workers wait here for a new generation */
    pthread_cond_t cv_done; /* caller waits here for its tasks to finish */

    /* Job descriptor.  Written by the caller before the ticket of a new
       generation is published; read by workers after they saw that ticket.
       Accessed atomically (relaxed) because a late worker may read it while
       the caller already writes the next job -- such a worker's claim then
       fails, so the mixed values are never used. */
    nn__task_fn fn;
    void *arg;
    int base;  /* task index of this chunk's first task */
    int total; /* n_tasks as passed to nn__threadpool_run */

    /* All fields below are only touched through __atomic builtins. */
    uint64_t ticket;  /* gen << 32 | chunk size << 16 | next index (below) */
    int done;         /* tasks of the current chunk that have finished */
    int stop;         /* set (with a generation bump) by nn__threadpool_destroy */
    int busy;         /* 1 while a job is in flight (nesting guard) */
    int n_sleep;      /* workers blocked (or about to block) on cv_work */
    int caller_sleep; /* caller blocked (or about to block) on cv_done */
#endif
};

#if NN__POOL_THREADED

/* Ticket layout.  The chunk size lives in the ticket itself so that "is
   there a task left?" is decided from one consistent word; jobs with more
   than 65535 tasks are run as several chunks.  A 32-bit generation cannot
   wrap while a worker is stalled between reading a ticket and its CAS. */
#define NN__TK_GEN(t) ((uint32_t)((t) >> 32))
#define NN__TK_N(t) ((int)(((t) >> 16) & 0xFFFFu))
#define NN__TK_NEXT(t) ((int)((t)&0xFFFFu))
#define NN__TK_MAX_CHUNK 0xFFFF

/* Spin iterations before sleeping.  One pause is ~5-70 ns depending on the
   CPU (26 ns on Zen3), so this is roughly 0.05-0.5 ms: long enough to cover
   the gaps between the GEMM calls of a training step, short enough that an
   idle pool stops burning CPU almost at once. */
#ifndef NN_POOL_SPIN
#define NN_POOL_SPIN 8000
#endif

static void nn__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Claim and run tasks of generation gen until it is exhausted or superseded
   (caller and workers alike).  The descriptor is read before the first claim
   and is only trusted because the claim (CAS on the ticket) succeeds: the
   caller rewrites it only after every task of gen was claimed and finished. */
static void nn__threadpool_work(nn__threadpool *p, uint32_t gen) {
    nn__task_fn fn = __atomic_load_n(&p->fn, __ATOMIC_RELAXED);
    void *arg = __atomic_load_n(&p->arg, __ATOMIC_RELAXED);
    int base = __atomic_load_n(&p->base, __ATOMIC_RELAXED);
    int total = __atomic_load_n(&p->total, __ATOMIC_RELAXED);
    uint64_t t = __atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE);
    while (NN__TK_GEN(t) == gen && NN__TK_NEXT(t) < NN__TK_N(t)) {
        /* On failure t is refreshed and the loop condition re-checked. */
        if (__atomic_compare_exchange_n(&p->ticket, &t, t + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
            int n = NN__TK_N(t);
            fn(arg, base + NN__TK_NEXT(t), total);
            /* The task that completes the chunk wakes a sleeping caller. */
            if (__atomic_add_fetch(&p->done, 1, __ATOMIC_SEQ_CST) == n &&
                __atomic_load_n(&p->caller_sleep, __ATOMIC_SEQ_CST)) {
                pthread_mutex_lock(&p->mu);
                pthread_cond_signal(&p->cv_done);
                pthread_mutex_unlock(&p->mu);
            }
            t = __atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE);
        }
    }
}

static void *nn__threadpool_worker(void *vp) {
    nn__threadpool *p = (nn__threadpool *)vp;
    uint32_t seen = 0; /* generation this worker last looked at */
    for (;;) {
        uint32_t g;
        int spin = 0;
        /* Fast path: the next job usually arrives while we still spin. */
        while ((g = NN__TK_GEN(__atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE))) == seen &&
               spin < NN_POOL_SPIN) {
            nn__cpu_relax();
            spin++;
        }
        if (g == seen) {
            /* Slow path: announce that we sleep, then re-check under the
               mutex; nn__threadpool_run() publishes before it reads n_sleep. */
            pthread_mutex_lock(&p->mu);
            __atomic_add_fetch(&p->n_sleep, 1, __ATOMIC_SEQ_CST);
            while ((g = NN__TK_GEN(__atomic_load_n(&p->ticket, __ATOMIC_SEQ_CST))) == seen)
                pthread_cond_wait(&p->cv_work, &p->mu);
            __atomic_sub_fetch(&p->n_sleep, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&p->mu);
        }
        seen = g; /* may have skipped generations: fine, they are done */
        if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) break;
        nn__threadpool_work(p, g);
    }
    return NULL;
}

/* Number of threads to use when the caller does not say. */
static int nn__threadpool_default_threads(void) {
    const char *env = getenv("NN_THREADS");
    long n = 0;
    if (env && *env) n = strtol(env, NULL, 10);
#ifdef _SC_NPROCESSORS_ONLN
    if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    if (n <= 0) n = 1;
    if (n > NN__POOL_MAX_THREADS) n = NN__POOL_MAX_THREADS;
    return (int)n;
}

/* Publish a new generation carrying n tasks (n == 0 for shutdown) and wake
   sleeping workers.  Returns the new generation. */
static uint32_t nn__threadpool_publish(nn__threadpool *p, int n) {
    uint64_t t = __atomic_load_n(&p->ticket, __ATOMIC_RELAXED);
    uint32_t gen = NN__TK_GEN(t) + 1u;
    /* seq_cst store: releases the descriptor and orders the n_sleep load. */
    __atomic_store_n(&p->ticket, ((uint64_t)gen << 32) | ((uint64_t)n << 16), __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->n_sleep, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv_work);
        pthread_mutex_unlock(&p->mu);
    }
    return gen;
}

#endif /* NN__POOL_THREADED */

/* n_threads <= 0: NN_THREADS from the environment if set, else the number of
   online CPUs.  Capped at 64.  Returns NULL only if the struct allocation
   fails (a NULL pool is valid everywhere and means "run inline"). */
static NN__MAYBE_UNUSED nn__threadpool *nn__threadpool_create(int n_threads) {
    nn__threadpool *p = (nn__threadpool *)NN_MALLOC(sizeof(nn__threadpool));
    if (!p) return NULL;
    memset(p, 0, sizeof(*p));
    p->n = 1;
#if NN__POOL_THREADED
    if (n_threads <= 0) n_threads = nn__threadpool_default_threads();
    if (n_threads > NN__POOL_MAX_THREADS) n_threads = NN__POOL_MAX_THREADS;
    if (n_threads <= 1) return p;
    if (pthread_mutex_init(&p->mu, NULL) != 0) return p;
    if (pthread_cond_init(&p->cv_work, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        return p;
    }
    if (pthread_cond_init(&p->cv_done, NULL) != 0) {
        pthread_cond_destroy(&p->cv_work);
        pthread_mutex_destroy(&p->mu);
        return p;
    }
    p->sync_ok = 1;
    {
        int i;
        for (i = 0; i < n_threads - 1; i++) {
            if (pthread_create(&p->th[i], NULL, nn__threadpool_worker, p) != 0) break;
            p->n_spawned++;
        }
    }
    /* If thread creation failed part-way we work with fewer threads. */
    p->n = p->n_spawned + 1;
#else
    (void)n_threads;
#endif
    return p;
}

static NN__MAYBE_UNUSED void nn__threadpool_destroy(nn__threadpool *p) {
    if (!p) return;
#if NN__POOL_THREADED
    if (p->n_spawned > 0) {
        int i;
        __atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
        nn__threadpool_publish(p, 0);
        for (i = 0; i < p->n_spawned; i++) pthread_join(p->th[i], NULL);
    }
    if (p->sync_ok) {
        pthread_cond_destroy(&p->cv_done);
        pthread_cond_destroy(&p->cv_work);
        pthread_mutex_destroy(&p->mu);
    }
#endif
    NN_FREE(p->ws);
    NN_FREE(p);
}

/* At least `bytes` of scratch owned by the pool, kept for later calls; NULL when p is NULL
   or the allocation fails (callers then use their own memory). One caller at a time. */
static NN__MAYBE_UNUSED void *nn__threadpool_workspace(nn__threadpool *p, size_t bytes) {
    if (!p) return NULL;
    if (bytes > p->ws_size) {
        void *w = NN_MALLOC(bytes);
        if (!w) return NULL;
        NN_FREE(p->ws);
        p->ws = w;
        p->ws_size = bytes;
    }
    return p->ws;
}

static NN__MAYBE_UNUSED int nn__threadpool_size(const nn__threadpool *p) { return p ? p->n : 1; }

/* The next item of a job's shared counter (*next, then one more): tasks of one
   nn__threadpool_run that take their items this way, rather than a fixed range each,
   finish within an item of each other whatever the threads' speed. */
static NN__MAYBE_UNUSED int64_t nn__take_next(int64_t *next) {
#if NN__POOL_THREADED
    return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
#else
    return (*next)++;
#endif
}

/* Runs fn(arg, i, n_tasks) for every i in [0, n_tasks) and returns when all
   calls have finished.  The caller executes tasks too; tasks are handed out
   dynamically in increasing index order, so a task may be run by any thread
   and a thread may run several. */
static NN__MAYBE_UNUSED void nn__threadpool_run(nn__threadpool *p, nn__task_fn fn, void *arg, int n_tasks) {
    int i;
    if (n_tasks <= 0) return;
#if NN__POOL_THREADED
    if (p && p->n > 1 && n_tasks > 1 && !__atomic_exchange_n(&p->busy, 1, __ATOMIC_ACQUIRE)) {
        int base;
        for (base = 0; base < n_tasks; base += NN__TK_MAX_CHUNK) {
            int n = n_tasks - base < NN__TK_MAX_CHUNK ? n_tasks - base : NN__TK_MAX_CHUNK;
            int spin = 0;
            uint32_t gen;
            __atomic_store_n(&p->fn, fn, __ATOMIC_RELAXED);
            __atomic_store_n(&p->arg, arg, __ATOMIC_RELAXED);
            __atomic_store_n(&p->base, base, __ATOMIC_RELAXED);
            __atomic_store_n(&p->total, n_tasks, __ATOMIC_RELAXED);
            __atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
            gen = nn__threadpool_publish(p, n);
            nn__threadpool_work(p, gen);
            /* Every task is claimed now; wait for the ones other threads
               are still running (spin first, then sleep). */
            while (__atomic_load_n(&p->done, __ATOMIC_ACQUIRE) != n && spin < NN_POOL_SPIN) {
                nn__cpu_relax();
                spin++;
            }
            if (__atomic_load_n(&p->done, __ATOMIC_ACQUIRE) != n) {
                pthread_mutex_lock(&p->mu);
                __atomic_store_n(&p->caller_sleep, 1, __ATOMIC_SEQ_CST);
                while (__atomic_load_n(&p->done, __ATOMIC_SEQ_CST) != n)
                    pthread_cond_wait(&p->cv_done, &p->mu);
                __atomic_store_n(&p->caller_sleep, 0, __ATOMIC_SEQ_CST);
                pthread_mutex_unlock(&p->mu);
            }
        }
        __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
        return;
    }
#else
    (void)p;
#endif
    for (i = 0; i < n_tasks; i++) fn(arg, i, n_tasks);
}

/* ---------------------------------------------------------------------------
 * Locks, with pthreads (every POSIX system, NN_NO_THREADS too) or Win32's slim locks.
 *
 * nn__mutex: a plain mutex, for process-wide state that needs no allocation
 * (NN__MUTEX_INIT): OpenCL device discovery.
 *
 * nn__lock: who runs a call on a context. One thread holds it for a whole
 * call; nn__lock_try refuses a second thread at once (the API's NN_ERR_STATE),
 * nn__lock_wait makes it wait for the call to return (calls that cannot report
 * a refusal). Either tells the holder's own thread apart, so a log callback
 * that calls back into its context is refused or goes on, never deadlocks.
 * ------------------------------------------------------------------------- */
#if defined(_WIN32)
#  include <windows.h>
struct nn__mutex { SRWLOCK l; };
#  define NN__MUTEX_INIT {SRWLOCK_INIT}
static NN__MAYBE_UNUSED void nn__mutex_lock(struct nn__mutex *m) { AcquireSRWLockExclusive(&m->l); }
static NN__MAYBE_UNUSED void nn__mutex_unlock(struct nn__mutex *m) { ReleaseSRWLockExclusive(&m->l); }
struct nn__lock {
    SRWLOCK mu;
    CONDITION_VARIABLE idle;
    int busy;
    DWORD owner;
};
static NN__MAYBE_UNUSED int nn__lock_init(struct nn__lock *l) {
    InitializeSRWLock(&l->mu);
    InitializeConditionVariable(&l->idle);
    l->busy = 0;
    return 1;
}
static NN__MAYBE_UNUSED void nn__lock_fini(struct nn__lock *l) { (void)l; }
#  define NN__LOCK_ACQUIRE(l) AcquireSRWLockExclusive(&(l)->mu)
#  define NN__LOCK_RELEASE(l) ReleaseSRWLockExclusive(&(l)->mu)
#  define NN__LOCK_SLEEP(l) SleepConditionVariableSRW(&(l)->idle, &(l)->mu, INFINITE, 0)
#  define NN__LOCK_WAKE(l) WakeAllConditionVariable(&(l)->idle)
#  define NN__LOCK_ME(l) ((l)->owner = GetCurrentThreadId())
#  define NN__LOCK_IS_ME(l) ((l)->owner == GetCurrentThreadId())
#else
#  include <pthread.h>
struct nn__mutex { pthread_mutex_t m; };
#  define NN__MUTEX_INIT {PTHREAD_MUTEX_INITIALIZER}
static NN__MAYBE_UNUSED void nn__mutex_lock(struct nn__mutex *m) { pthread_mutex_lock(&m->m); }
static NN__MAYBE_UNUSED void nn__mutex_unlock(struct nn__mutex *m) { pthread_mutex_unlock(&m->m); }
struct nn__lock {
    pthread_mutex_t mu;
    pthread_cond_t idle;
    int busy;
    pthread_t owner;
};
static NN__MAYBE_UNUSED int nn__lock_init(struct nn__lock *l) {
    l->busy = 0;
    if (pthread_mutex_init(&l->mu, NULL) != 0) return 0;
    if (pthread_cond_init(&l->idle, NULL) != 0) {
        pthread_mutex_destroy(&l->mu);
        return 0;
    }
    return 1;
}
static NN__MAYBE_UNUSED void nn__lock_fini(struct nn__lock *l) {
    pthread_cond_destroy(&l->idle);
    pthread_mutex_destroy(&l->mu);
}
#  define NN__LOCK_ACQUIRE(l) pthread_mutex_lock(&(l)->mu)
#  define NN__LOCK_RELEASE(l) pthread_mutex_unlock(&(l)->mu)
#  define NN__LOCK_SLEEP(l) pthread_cond_wait(&(l)->idle, &(l)->mu)
#  define NN__LOCK_WAKE(l) pthread_cond_broadcast(&(l)->idle)
#  define NN__LOCK_ME(l) ((l)->owner = pthread_self())
#  define NN__LOCK_IS_ME(l) pthread_equal((l)->owner, pthread_self())
#endif

/* 1: taken; 0: another thread holds it; -1: this thread holds it (a call from inside a
   call). */
static NN__MAYBE_UNUSED int nn__lock_try(struct nn__lock *l) {
    int r;
    NN__LOCK_ACQUIRE(l);
    if (!l->busy) {
        l->busy = 1;
        NN__LOCK_ME(l);
        r = 1;
    } else {
        r = NN__LOCK_IS_ME(l) ? -1 : 0;
    }
    NN__LOCK_RELEASE(l);
    return r;
}

/* 1: taken, once another thread's call returned; 0: this thread holds it already (not
   taken again: the caller must not release it). */
static NN__MAYBE_UNUSED int nn__lock_wait(struct nn__lock *l) {
    NN__LOCK_ACQUIRE(l);
    if (l->busy && NN__LOCK_IS_ME(l)) {
        NN__LOCK_RELEASE(l);
        return 0;
    }
    while (l->busy) NN__LOCK_SLEEP(l);
    l->busy = 1;
    NN__LOCK_ME(l);
    NN__LOCK_RELEASE(l);
    return 1;
}

static NN__MAYBE_UNUSED void nn__lock_release(struct nn__lock *l) {
    NN__LOCK_ACQUIRE(l);
    l->busy = 0;
    NN__LOCK_WAKE(l);
    NN__LOCK_RELEASE(l);
}
