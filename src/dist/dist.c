/* Data-parallel training over MPI (compiled in with -DNN_MPI; api.h's "Data-parallel
   training"). A data-parallel graph's step (src/engine/compile.c's nn__graph_step) runs the
   forward and backward part of the schedule as micro-step rank + 1 of the ranks' N, then
   nn__dist_reduce averages the gradients across ranks, then the update part runs on every
   rank alike.

   The reduction, reproducible by construction: the gradients of the parameters (node order)
   are copied into one flat host buffer (host staging: a device backend's buffers are read
   and written back; Debian's Open MPI is not GPU-aware). Rank c owns the slice
   [P c / N, P (c + 1) / N) of the P floats; every rank sends each other rank its slice
   (MPI_Isend), the owner sums its slice in rank order, acc = 0 + g_0 * (1/N), then
   acc + g_r * (1/N) for r = 1 .. N-1: the expression of the GRAD_ACC op's CPU body (one
   process, accumulate_steps N, micro-step r's gradient g_r), with contraction off as in
   the whole implementation; then every rank sends its reduced slice to all (an
   all-gather). Where the sum of a float runs does not depend on which rank runs it, so the
   bits are those of the single process. Point-to-point only (no MPI_Allreduce, whose
   order Open MPI does not promise); every wait polls MPI_Testall against a deadline, so a
   rank that died or stopped answering is an error naming it, not a hang. Each graph works
   on its own duplicate of the communicator (messages of two graphs never meet). */
#include "../base/internal.h"

#ifdef NN_MPI
#include <mpi.h>
#include <pthread.h>
#include <sched.h>

static int nn__dist_have;           /* nn__dist_comm is set */
static MPI_Comm nn__dist_comm;      /* nn_dist_init's duplicate */
static double nn__dist_timeout_s;   /* 0: NN_DIST_TIMEOUT or 300 */

typedef struct nn__dist {
    MPI_Comm comm;
    int rank, size;
    int failed;                     /* a wait timed out: sends may still read flat, kept (leaked) */
    int64_t n;                      /* P: the floats of the gradients */
    float *flat;                    /* [P] this rank's gradients, then the mean */
    float *recv;                    /* [N][the largest slice] the others' parts of this rank's slice */
    MPI_Request *req;               /* [2 N] */
    int *peer;                      /* [2 N] each request's rank */
    char msg[200];                  /* a failed wait's words */
    /* the flat layout: parameters in the order the backward pass completes their gradients,
       cut into buckets; bucket b is flat[blo[b], blo[b + 1]), complete after schedule
       position bend[b] */
    int n_par, *par;                /* parameter node ids, in that order */
    int64_t *poff;                  /* [n_par] each one's offset in flat */
    int n_buckets, *bend, *bpar;    /* bpar[b]: its first parameter (index into par); [n_buckets + 1] */
    int64_t *blo;
    /* the communication thread (overlap): reduces bucket `done` while staged > done */
    int thread_on, quit, staged, done, err;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double comm_s, wait_s;          /* seconds reducing (the thread) and waiting for it (the step) */
    /* ZeRO stage 1 (g->zero): this rank's slice of bucket b is zst[k][zoff[b] ..] for the
       optimizer's k-th state tensor; zfull[k]: the whole state in flat order, only while a
       training state is saved or loaded */
    int zero, n_aux;
    int64_t *zoff, owned;           /* [n_buckets + 1]; the floats of the slices */
    float *zst[3], *zfull[3], *ptmp; /* ptmp: a parameter staged from a device */
    float *lrm, *wdm;               /* [n_par]: each parameter's multipliers */
} nn__dist;

static int64_t nn__dist_bucket_bytes = 0; /* 0: NN_DIST_BUCKET_MB or 25 MB */

NN_API nn_result nn_dist_set_bucket_bytes(int64_t bytes) {
    if (bytes < 0) return NN_ERR_INVALID_ARGUMENT;
    nn__dist_bucket_bytes = bytes;
    return NN_OK;
}

static void nn__dist_finalize_at_exit(void) {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
}

static nn_result nn__dist_setup(const MPI_Comm *comm) {
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) return NN_ERR_UNAVAILABLE;
        atexit(nn__dist_finalize_at_exit);
    }
    if (nn__dist_have) MPI_Comm_free(&nn__dist_comm);
    nn__dist_have = 0;
    if (MPI_Comm_dup(comm ? *comm : MPI_COMM_WORLD, &nn__dist_comm) != MPI_SUCCESS) return NN_ERR_UNAVAILABLE;
    nn__dist_have = 1;
    return NN_OK;
}

NN_API nn_result nn_dist_init(const MPI_Comm *comm) { return nn__dist_setup(comm); }

NN_API nn_result nn_dist_rank(int *rank) {
    nn_result r = nn__dist_have ? NN_OK : nn__dist_setup(NULL);
    if (!rank) return NN_ERR_INVALID_ARGUMENT;
    *rank = 0;
    return r == NN_OK ? (MPI_Comm_rank(nn__dist_comm, rank) == MPI_SUCCESS ? NN_OK : NN_ERR_UNAVAILABLE) : r;
}

NN_API nn_result nn_dist_size(int *size) {
    nn_result r = nn__dist_have ? NN_OK : nn__dist_setup(NULL);
    if (!size) return NN_ERR_INVALID_ARGUMENT;
    *size = 1;
    return r == NN_OK ? (MPI_Comm_size(nn__dist_comm, size) == MPI_SUCCESS ? NN_OK : NN_ERR_UNAVAILABLE) : r;
}

NN_API nn_result nn_dist_set_timeout(double seconds) {
    if (!(seconds > 0.0)) return NN_ERR_INVALID_ARGUMENT;
    nn__dist_timeout_s = seconds;
    return NN_OK;
}

static double nn__dist_timeout(void) {
    const char *e;
    double t;
    if (nn__dist_timeout_s > 0.0) return nn__dist_timeout_s;
    e = getenv("NN_DIST_TIMEOUT");
    t = e ? atof(e) : 0.0;
    return t > 0.0 ? t : 300.0;
}

/* Waits for n requests until the deadline: 0, or 1 with d->msg naming the first rank still
   pending (its requests freed; MPI may still use the buffers, so they are never freed).
   Any thread (no nn__fail here). */
static int nn__dist_wait_(nn__dist *d, int n, const char *what) {
    double deadline = MPI_Wtime() + nn__dist_timeout();
    long spins = 0;
    int done = 0, i;
    if (n == 0) return 0;
    for (;;) {
        if (MPI_Testall(n, d->req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) break;
        if (done) return 0;
        if (++spins > 64) sched_yield(); /* a waiting rank leaves its core to the computing ones */
        if ((spins & 63) == 0 && MPI_Wtime() > deadline) break; /* often: a yield may take a time slice */
    }
    d->failed = 1;
    snprintf(d->msg, sizeof d->msg, "%s: data-parallel: an MPI call failed on rank %d", what, d->rank);
    for (i = 0; i < n; i++) {
        int flag = 0;
        if (d->req[i] == MPI_REQUEST_NULL) continue;
        MPI_Test(&d->req[i], &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            int who = d->peer[i];
            for (; i < n; i++)
                if (d->req[i] != MPI_REQUEST_NULL) MPI_Request_free(&d->req[i]);
            snprintf(d->msg, sizeof d->msg,
                     "%s: data-parallel: rank %d did not answer rank %d within %.0f s (it died, stopped or runs another "
                     "graph)",
                     what, who, d->rank, nn__dist_timeout());
            break;
        }
    }
    return 1;
}

static nn_result nn__dist_wait(nn_graph *g, nn__dist *d, int n, const char *what) {
    return nn__dist_wait_(d, n, what) ? nn__fail(g->ctx, NN_ERR_STATE, "%s", d->msg) : NN_OK;
}

static int nn__dist_gather_bucket(nn__dist *d, int b);

/* Bucket b reduced in place in flat: its slices to their owners, each owner's slice summed
   in rank order, then every slice to every rank (ZeRO-1: each rank keeps its own slice
   only). 0, or 1 with d->msg. Any one thread. */
static int nn__dist_reduce_bucket(nn__dist *d, int b) {
    int64_t base = d->blo[b], len = d->blo[b + 1] - d->blo[b], lo, hi, m, j, slice = d->n / d->size + 1;
    float inv = 1.0f / (float)d->size;
    int c, nr = 0;
#define NN__SLO(c) (base + len * (int64_t)(c) / d->size)
    lo = NN__SLO(d->rank);
    hi = NN__SLO(d->rank + 1);
    m = hi - lo;
    for (c = 0; c < d->size; c++) { /* reduce-scatter: slice c to its owner */
        if (c == d->rank) continue;
        MPI_Irecv(d->recv + (size_t)c * (size_t)slice, (int)m, MPI_FLOAT, c, 2, d->comm, &d->req[nr]);
        d->peer[nr++] = c;
        MPI_Isend(d->flat + NN__SLO(c), (int)(NN__SLO(c + 1) - NN__SLO(c)), MPI_FLOAT, c, 2, d->comm, &d->req[nr]);
        d->peer[nr++] = c;
    }
    if (nn__dist_wait_(d, nr, "nn_graph_step")) return 1;
    memcpy(d->recv + (size_t)d->rank * (size_t)slice, d->flat + lo, (size_t)m * sizeof(float));
    for (j = 0; j < m; j++) { /* GRAD_ACC's sum, in rank order */
        float acc = 0.0f + d->recv[j] * inv;
        for (c = 1; c < d->size; c++) acc = acc + d->recv[(size_t)c * (size_t)slice + (size_t)j] * inv;
        d->flat[lo + j] = acc;
    }
#undef NN__SLO
    return d->zero ? 0 : nn__dist_gather_bucket(d, b); /* ZeRO-1: the parameters are gathered after the update */
}

/* Bucket b's slices of flat from their owners to every rank (the all-gather). 0, or 1 with
   d->msg. */
static int nn__dist_gather_bucket(nn__dist *d, int b) {
    int64_t base = d->blo[b], len = d->blo[b + 1] - d->blo[b], lo, m;
    int c, nr = 0;
#define NN__SLO(c) (base + len * (int64_t)(c) / d->size)
    lo = NN__SLO(d->rank);
    m = NN__SLO(d->rank + 1) - lo;
    for (c = 0; c < d->size; c++) { /* all-gather: every slice from its owner */
        if (c == d->rank) continue;
        MPI_Irecv(d->flat + NN__SLO(c), (int)(NN__SLO(c + 1) - NN__SLO(c)), MPI_FLOAT, c, 3, d->comm, &d->req[nr]);
        d->peer[nr++] = c;
        MPI_Isend(d->flat + lo, (int)m, MPI_FLOAT, c, 3, d->comm, &d->req[nr]);
        d->peer[nr++] = c;
    }
#undef NN__SLO
    return nn__dist_wait_(d, nr, "nn_graph_step");
}

/* The communication thread: reduces each bucket the step has staged, in order. */
static void *nn__dist_thread(void *arg) {
    nn__dist *d = (nn__dist *)arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        int b, e;
        double t0;
        while (!d->quit && d->done >= d->staged) pthread_cond_wait(&d->cv, &d->mu);
        if (d->quit) break;
        b = d->done;
        pthread_mutex_unlock(&d->mu);
        t0 = MPI_Wtime();
        e = d->err ? 1 : nn__dist_reduce_bucket(d, b); /* after a failure: nothing more on the wire */
        pthread_mutex_lock(&d->mu);
        d->comm_s += MPI_Wtime() - t0;
        if (e) d->err = 1;
        d->done++;
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static void nn__dist_free(nn_graph *g) {
    nn__dist *d = (nn__dist *)g->dist;
    if (!d) return;
    if (d->thread_on) {
        pthread_mutex_lock(&d->mu);
        d->quit = 1;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->th, NULL);
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
    }
    if (!d->failed) { /* after a timeout MPI may still read or write the buffers */
        int k;
        NN_FREE(d->flat);
        NN_FREE(d->recv);
        for (k = 0; k < 3; k++) {
            NN_FREE(d->zst[k]);
            NN_FREE(d->zfull[k]);
        }
        MPI_Comm_free(&d->comm);
    }
    NN_FREE(d->zoff);
    NN_FREE(d->ptmp);
    NN_FREE(d->lrm);
    NN_FREE(d->wdm);
    NN_FREE(d->req);
    NN_FREE(d->peer);
    NN_FREE(d->par);
    NN_FREE(d->poff);
    NN_FREE(d->bend);
    NN_FREE(d->bpar);
    NN_FREE(d->blo);
    NN_FREE(d);
    g->dist = NULL;
}

static uint64_t nn__dist_mix(uint64_t h, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= 1099511628211ull; /* FNV-1a */
    }
    return h;
}

/* What must agree across ranks: every node's op, dtype and shape, which are parameters,
   the optimizer's kind and ZeRO-1. */
static uint64_t nn__dist_hash(const nn_graph *g) {
    uint64_t h = 14695981039346656037ull;
    int i, k;
    h = nn__dist_mix(h, (uint64_t)g->n_nodes);
    h = nn__dist_mix(h, (uint64_t)g->opt.kind);
    h = nn__dist_mix(h, (uint64_t)g->zero);
    for (i = 0; i < g->n_nodes; i++) {
        const nn__node *n = &g->nodes[i];
        h = nn__dist_mix(h, ((uint64_t)n->op << 32) ^ ((uint64_t)n->dtype << 8) ^ (uint64_t)n->shape.ndim);
        for (k = 0; k < n->shape.ndim; k++) h = nn__dist_mix(h, (uint64_t)n->shape.dim[k]);
        h = nn__dist_mix(h, (uint64_t)(n->grad >= 0));
    }
    return h;
}

/* Before the optimizer's ops are added (compile.c): whether this graph shards its
   optimizer state (ZeRO stage 1: g->zero, no update ops), and what it refuses. */
static nn_result nn__dist_plan(nn_graph *g, const nn_compile_desc *desc) {
    const nn_optimizer *o = &g->opt;
    int size = 1;
    nn_result r;
    g->zero = 0;
    if (desc->zero_stage != 0 && desc->zero_stage != 1 && desc->zero_stage != NN_ZERO)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: zero_stage %d: only 0 (off) and 1 (the optimizer "
                        "state sharded across the ranks) exist", desc->zero_stage);
    if (desc->zero_stage != 1 || desc->data_parallel == NN_ZERO || desc->loss.id == 0 || o->kind == NN_OPT_NONE) return NN_OK;
    r = nn_dist_size(&size);
    if (r != NN_OK) return nn__fail(g->ctx, r, "nn_graph_compile: data-parallel: MPI did not initialise");
    if (size < 2) return NN_OK;
    if ((o->kind != NN_OPT_SGD && o->kind != NN_OPT_ADAM && o->kind != NN_OPT_ADAMW) || nn__opt_generic(o))
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: zero_stage 1: the optimizer state of this kind "
                        "is not sharded (SGD, Adam and AdamW without amsgrad are): zero_stage 0 holds all of it");
    if (o->skip_nonfinite)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: zero_stage 1 with skip_nonfinite: the count needs "
                        "every gradient, which no rank holds then (zero_stage 0 skips)");
    if (g->loss_scaling) /* the optimizer's configure hook ran before this (compile.c) */
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: zero_stage 1 with loss scaling: the sharded "
                        "update does not unscale (set loss_scale.enabled = NN_ZERO, or zero_stage 0)");
    g->zero = 1;
    return NN_OK;
}

/* At the end of a training graph's compile: whether it is data-parallel, the ranks'
   hashes compared, the buffers. */
/* The schedule position whose launches complete node id's value: its own, or for a node that
   another one runs (fused -1, src/ops/fuse.c: its chain's last node, or on a device the TN
   product that makes a bias's gradient later in the backward) that one's */
static int nn__dist_done_at(const nn_graph *g, int id) {
    return g->nodes[id].fused < 0 ? g->nodes[id].done_at : g->nodes[id].first;
}

static nn_result nn__dist_compile(nn_graph *g, const nn_compile_desc *desc) {
    nn__dist *d;
    MPI_Request rq;
    int size = 1, i, nr = 0;
    uint64_t mine, *all;
    nn_result r;
    if (desc->data_parallel == NN_ZERO || desc->loss.id == 0 || g->opt.kind == NN_OPT_NONE) return NN_OK;
    r = nn_dist_size(&size);
    if (r != NN_OK) return nn__fail(g->ctx, r, "nn_graph_compile: data-parallel: MPI did not initialise");
    if (size < 2) return NN_OK;
    if (g->accum_steps > 1)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT,
                        "nn_graph_compile: data-parallel over %d ranks: accumulate_steps %d is not supported with it "
                        "(data_parallel = NN_ZERO to train this rank alone)",
                        size, g->accum_steps);
    for (i = 0; i < g->n_nodes; i++) /* the ranks' sums read float32 parameters and gradients */
        if (g->nodes[i].op == NN__OP_PARAM && nn__dtype_half(g->nodes[i].dtype))
            return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_compile: data-parallel over %d ranks: parameter %s "
                            "is %s (nn_graph_desc.param_dtype); data-parallel training keeps float32 parameters",
                            size, g->nodes[i].name, nn__dtype_name(g->nodes[i].dtype));
    d = (nn__dist *)nn__calloc(1, sizeof *d);
    if (!d) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
    g->dist = d;
    g->dist_free = nn__dist_free;
    d->size = size;
    d->req = (MPI_Request *)nn__calloc((size_t)2 * size, sizeof *d->req);
    d->peer = (int *)nn__calloc((size_t)2 * size, sizeof *d->peer);
    all = (uint64_t *)nn__calloc((size_t)size, sizeof *all);
    if (!d->req || !d->peer || !all) {
        NN_FREE(all);
        d->failed = 1; /* no communicator yet */
        nn__dist_free(g);
        return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
    }
    MPI_Comm_rank(nn__dist_comm, &d->rank);
    /* the graph's own communicator: a collective, waited for with the deadline */
    d->req[0] = MPI_REQUEST_NULL;
    if (MPI_Comm_idup(nn__dist_comm, &d->comm, &rq) != MPI_SUCCESS) rq = MPI_REQUEST_NULL;
    d->req[0] = rq;
    d->peer[0] = d->rank == 0 ? 1 : 0;
    r = nn__dist_wait(g, d, 1, "nn_graph_compile");
    if (r != NN_OK) { /* d->failed: the communicator may never be made */
        NN_FREE(all);
        return r;
    }
    MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN); /* a peer's failure is this graph's error, not an abort */
    /* every rank's hash to every rank */
    mine = nn__dist_hash(g);
    all[d->rank] = mine;
    for (i = 0; i < size; i++) {
        if (i == d->rank) continue;
        MPI_Irecv(&all[i], 8, MPI_BYTE, i, 1, d->comm, &d->req[nr]);
        d->peer[nr++] = i;
        MPI_Isend(&mine, 8, MPI_BYTE, i, 1, d->comm, &d->req[nr]);
        d->peer[nr++] = i;
    }
    r = nn__dist_wait(g, d, nr, "nn_graph_compile");
    for (i = 0; i < size && r == NN_OK; i++)
        if (all[i] != all[0])
            r = nn__fail(g->ctx, NN_ERR_SHAPE,
                         "nn_graph_compile: data-parallel: rank %d's graph differs from rank 0's (ops, shapes, parameters "
                         "or optimizer; hashes %016llx and %016llx)",
                         i, (unsigned long long)all[i], (unsigned long long)all[0]);
    NN_FREE(all);
    if (r != NN_OK) return r;
    /* the flat layout: by the schedule position completing each gradient (insertion sort:
       ties keep node order), cut into buckets of about bucket_bytes */
    d->par = (int *)nn__calloc((size_t)g->n_nodes + 1, sizeof(int));
    d->poff = (int64_t *)nn__calloc((size_t)g->n_nodes + 1, sizeof(int64_t));
    d->bend = (int *)nn__calloc((size_t)g->n_nodes + 1, sizeof(int));
    d->bpar = (int *)nn__calloc((size_t)g->n_nodes + 2, sizeof(int));
    d->blo = (int64_t *)nn__calloc((size_t)g->n_nodes + 2, sizeof(int64_t));
    if (!d->par || !d->poff || !d->bend || !d->bpar || !d->blo)
        return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: data-parallel: out of memory");
    for (i = 0; i < g->n_nodes; i++) {
        int k, at;
        if (g->nodes[i].op != NN__OP_PARAM || g->nodes[i].grad < 0) continue;
        at = nn__dist_done_at(g, g->nodes[i].grad);
        for (k = d->n_par; k > 0 && nn__dist_done_at(g, g->nodes[d->par[k - 1]].grad) > at; k--)
            d->par[k] = d->par[k - 1];
        d->par[k] = i;
        d->n_par++;
    }
    {
        const char *e = getenv("NN_DIST_BUCKET_MB");
        int64_t cap = nn__dist_bucket_bytes > 0 ? nn__dist_bucket_bytes
                      : e && atof(e) > 0.0 ? (int64_t)(atof(e) * 1048576.0) : (int64_t)25 * 1048576, bytes = 0;
        for (i = 0; i < d->n_par; i++) {
            nn__node *p = &g->nodes[d->par[i]];
            if (bytes == 0) {
                d->bpar[d->n_buckets] = i;
                d->blo[d->n_buckets] = d->n;
            }
            d->poff[i] = d->n;
            d->n += p->numel;
            bytes += p->numel * 4;
            d->bend[d->n_buckets] = nn__dist_done_at(g, p->grad);
            if (bytes >= cap || i == d->n_par - 1) {
                d->n_buckets++;
                bytes = 0;
            }
        }
        d->bpar[d->n_buckets] = d->n_par;
        d->blo[d->n_buckets] = d->n;
    }
    d->flat = (float *)nn__calloc((size_t)(d->n > 0 ? d->n : 1), sizeof(float));
    d->recv = (float *)nn__calloc((size_t)size * (size_t)(d->n / size + 1), sizeof(float));
    if (!d->flat || !d->recv) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: data-parallel: out of memory");
    if (g->zero) { /* ZeRO-1: this rank's slice of every bucket, its state and multipliers */
        int b, k;
        int64_t most = 1;
        d->zero = 1;
        d->n_aux = nn__opt_n_aux(&g->opt);
        d->zoff = (int64_t *)nn__calloc((size_t)d->n_buckets + 1, sizeof(int64_t));
        d->lrm = (float *)nn__calloc((size_t)d->n_par + 1, sizeof(float));
        d->wdm = (float *)nn__calloc((size_t)d->n_par + 1, sizeof(float));
        if (!d->zoff || !d->lrm || !d->wdm) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: data-parallel: out of memory");
        for (b = 0; b < d->n_buckets; b++) {
            int64_t len = d->blo[b + 1] - d->blo[b];
            d->zoff[b + 1] = d->zoff[b] + len * (d->rank + 1) / size - len * d->rank / size;
        }
        d->owned = d->zoff[d->n_buckets];
        for (k = 0; k < d->n_aux; k++) {
            d->zst[k] = (float *)nn__calloc((size_t)(d->owned > 0 ? d->owned : 1), sizeof(float));
            if (!d->zst[k]) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: data-parallel: out of memory");
        }
        for (i = 0; i < d->n_par; i++) {
            nn__param_mults(g, &g->nodes[d->par[i]], &d->lrm[i], &d->wdm[i]);
            if (g->nodes[d->par[i]].numel > most) most = g->nodes[d->par[i]].numel;
        }
        if (!g->ctx->backend->host_memory) {
            d->ptmp = (float *)nn__calloc((size_t)most, sizeof(float));
            if (!d->ptmp) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: data-parallel: out of memory");
        }
    }
    { /* overlap: a communication thread when MPI allows one to call it (NN_DIST_OVERLAP=0: off) */
        const char *e = getenv("NN_DIST_OVERLAP");
        int level = MPI_THREAD_SINGLE;
        MPI_Query_thread(&level);
        if (level >= MPI_THREAD_SERIALIZED && d->n_buckets > 1 && !(e && strcmp(e, "0") == 0)) {
            pthread_mutex_init(&d->mu, NULL);
            pthread_cond_init(&d->cv, NULL);
            if (pthread_create(&d->th, NULL, nn__dist_thread, d) == 0) d->thread_on = 1;
            else {
                pthread_mutex_destroy(&d->mu);
                pthread_cond_destroy(&d->cv);
            }
        }
    }
    g->dist_rank = d->rank;
    g->dist_size = size;
    nn__log(g->ctx, NN_LOG_DEBUG, "data-parallel: rank %d of %d, %lld gradient floats in %d buckets, %s%s", d->rank, size,
            (long long)d->n, d->n_buckets, d->thread_on ? "reduced on a communication thread" : "reduced after the backward pass",
            d->zero ? ", optimizer state sharded (ZeRO-1)" : "");
    return NN_OK;
}

/* Rank 0's result, on every rank (the others' own is ignored): after rank 0 alone wrote a
   file, the others wait for it and learn whether it failed. */
static nn_result nn__dist_agree(nn_graph *g, nn_result mine, const char *what) {
    nn__dist *d = (nn__dist *)g->dist;
    int code = (int)mine, c, nr = 0;
    nn_result r;
    if (d->failed) return nn__fail(g->ctx, NN_ERR_STATE, "%s: data-parallel: an earlier step timed out on this graph", what);
    for (c = 1; c < d->size && d->rank == 0; c++) {
        MPI_Isend(&code, 1, MPI_INT, c, 4, d->comm, &d->req[nr]);
        d->peer[nr++] = c;
    }
    if (d->rank != 0) {
        MPI_Irecv(&code, 1, MPI_INT, 0, 4, d->comm, &d->req[nr]);
        d->peer[nr++] = 0;
    }
    r = nn__dist_wait(g, d, nr, what);
    if (r != NN_OK || d->rank == 0 || code == NN_OK) return r == NN_OK ? mine : r;
    return nn__fail(g->ctx, (nn_result)code, "%s: data-parallel: rank 0 failed (%s)", what, nn_result_string((nn_result)code));
}

/* A step's forward and backward part, with every parameter's gradient replaced by the mean
   over the ranks. The backward part runs in segments, each ending where a bucket's
   gradients are complete; the bucket is staged into flat (host) and handed to the
   communication thread, which reduces it while the next segment runs; the update waits
   for the last bucket only. Without the thread, the buckets are reduced after the
   backward part. run: compile.c's nn__run (from g->run_from). */
static nn_result nn__dist_backward(nn_graph *g, nn_result (*run)(nn_graph *g, int n_sched)) {
    nn__dist *d = (nn__dist *)g->dist;
    const nn__backend *be = g->ctx->backend;
    int progress = 0, from = 0, b, i, err = 0;
    nn_result r = NN_OK;
    double t0;
    if (d->failed)
        return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_step: data-parallel: an earlier step or compile timed out on "
                                              "this graph; the ranks are out of step");
    if (d->thread_on) {
        pthread_mutex_lock(&d->mu);
        d->staged = d->done = 0;
        pthread_mutex_unlock(&d->mu);
    }
    for (b = 0; b < d->n_buckets && r == NN_OK; b++) {
        if (d->thread_on && d->bend[b] + 1 > from) { /* the segment completing bucket b */
            g->run_from = from;
            r = run(g, d->bend[b] + 1);
            progress += g->progress;
            from = d->bend[b] + 1;
        }
        for (i = d->bpar[b]; i < d->bpar[b + 1] && r == NN_OK && d->thread_on; i++) { /* host staging */
            nn__node *p = &g->nodes[d->par[i]];
            r = be->read(g->ctx, &g->nodes[p->grad].buf, d->flat + d->poff[i], (size_t)p->numel * sizeof(float));
        }
        if (r == NN_OK && d->thread_on) {
            pthread_mutex_lock(&d->mu);
            d->staged = b + 1;
            pthread_cond_broadcast(&d->cv);
            pthread_mutex_unlock(&d->mu);
        }
    }
    if (r == NN_OK) { /* the rest of the backward part (all of it without the thread) */
        g->run_from = from;
        r = run(g, g->n_sched_update);
        progress += g->progress;
    }
    g->run_from = 0;
    t0 = MPI_Wtime();
    if (d->thread_on) { /* the last bucket */
        pthread_mutex_lock(&d->mu);
        while (d->done < d->staged) pthread_cond_wait(&d->cv, &d->mu);
        err = d->err;
        pthread_mutex_unlock(&d->mu);
    } else {
        for (i = 0; i < d->n_par && r == NN_OK; i++) {
            nn__node *p = &g->nodes[d->par[i]];
            r = be->read(g->ctx, &g->nodes[p->grad].buf, d->flat + d->poff[i], (size_t)p->numel * sizeof(float));
        }
        for (b = 0; b < d->n_buckets && r == NN_OK && !err; b++) err = nn__dist_reduce_bucket(d, b);
    }
    d->wait_s += MPI_Wtime() - t0;
    g->progress = progress;
    if (r != NN_OK) return r;
    if (err) return nn__fail(g->ctx, NN_ERR_STATE, "%s", d->msg);
    for (i = 0; i < d->n_par && r == NN_OK && !d->zero; i++) { /* ZeRO-1: the mean stays in this rank's slices of flat */
        nn__node *p = &g->nodes[d->par[i]];
        r = be->write(g->ctx, &g->nodes[p->grad].buf, d->flat + d->poff[i], (size_t)p->numel * sizeof(float));
    }
    return r;
}

/* ---- ZeRO stage 1: the update of this rank's slices, on the host ---- */

/* Adam over elements [s, e) of a parameter of n floats (p, gr, m, v point at element s),
   with the bits of nn__adam_update over the whole parameter: there an element below
   n - n % 8 takes the vector loop (where the CPU has one) and the rest the scalar loop, so
   whole aligned groups of 8 go to nn__adam_update as they are, a group the slice cuts
   through goes through a padded copy, and the last n % 8 elements alone. */
static void nn__dist_adam(nn__threadpool *pool, float *p, const float *gr, float *m, float *v, int64_t s, int64_t e, int64_t n,
                          float lr, const nn_optimizer *o, float wd, float bc1, float bc2, float clip, float cv) {
    int64_t nv = n - n % 8, j = s;
    int dec = o->kind == NN_OPT_ADAMW;
    while (j < e) {
        int64_t w0 = j - j % 8, hi, k;
        float tp[8], tg[8], tm[8], tv[8];
        if (j >= nv) { /* the scalar tail, as there */
            nn__adam_update(pool, p + (j - s), gr + (j - s), m + (j - s), v + (j - s), e - j, lr, o->beta1, o->beta2, o->eps, wd,
                            dec, bc1, bc2, clip, cv);
            break;
        }
        if (j == w0 && w0 + 8 <= e) { /* whole groups: as many as lie inside [j, min(e, nv)) */
            hi = (e < nv ? e : nv);
            hi -= (hi - w0) % 8;
            nn__adam_update(pool, p + (j - s), gr + (j - s), m + (j - s), v + (j - s), hi - j, lr, o->beta1, o->beta2, o->eps,
                            wd, dec, bc1, bc2, clip, cv);
            j = hi;
            continue;
        }
        hi = w0 + 8 < e ? w0 + 8 : e; /* a group the slice cuts: padded to 8 (w0 + 8 <= nv) */
        memset(tp, 0, sizeof tp);
        memset(tg, 0, sizeof tg);
        memset(tm, 0, sizeof tm);
        memset(tv, 0, sizeof tv);
        for (k = j; k < hi; k++) {
            tp[k - w0] = p[k - s];
            tg[k - w0] = gr[k - s];
            tm[k - w0] = m[k - s];
            tv[k - w0] = v[k - s];
        }
        nn__adam_update(pool, tp, tg, tm, tv, 8, lr, o->beta1, o->beta2, o->eps, wd, dec, bc1, bc2, clip, cv);
        for (k = j; k < hi; k++) {
            p[k - s] = tp[k - w0];
            m[k - s] = tm[k - w0];
            v[k - s] = tv[k - w0];
        }
        j = hi;
    }
}

/* clip_norm's coefficient from the ranks' slices of the mean gradient, with the bits of
   GRAD_SUMSQ's CPU chain (parameters in node order, each one's squares summed in order in
   double from the previous float sum, then rounded to float) and CLIP_SCALE's formula: a
   token (the running double) passes from the owner of one piece of a parameter to the
   owner of the next, in that order, and the last owner sends the sum to every rank. Into
   *clip; 0, or 1 with d->msg. */
static int nn__dist_zero_clip(nn_graph *g, nn__dist *d, float *clip) {
    double run = 0.0;
    float sum, c;
    int prev = -1, i, j, b, r;
    for (i = 0; i < g->n_nodes; i++) {
        const nn__node *p = &g->nodes[i];
        int64_t a0, a1, base, len;
        if (p->op != NN__OP_PARAM || p->grad < 0) continue;
        for (j = 0; j < d->n_par && d->par[j] != i; j++) {}
        if (j == d->n_par || p->numel == 0) continue;
        for (b = 0; d->bpar[b + 1] <= j; b++) {}
        a0 = d->poff[j];
        a1 = a0 + p->numel;
        base = d->blo[b];
        len = d->blo[b + 1] - base;
        for (r = 0; r < d->size; r++) { /* the pieces, in rank order (= element order) */
            int64_t lo = base + len * r / d->size, hi = base + len * (r + 1) / d->size, e;
            lo = lo > a0 ? lo : a0;
            hi = hi < a1 ? hi : a1;
            if (lo >= hi) continue;
            if (prev >= 0 && prev != r && (d->rank == prev || d->rank == r)) { /* the token to r */
                if (d->rank == prev) MPI_Isend(&run, 1, MPI_DOUBLE, r, 6, d->comm, &d->req[0]);
                else MPI_Irecv(&run, 1, MPI_DOUBLE, prev, 6, d->comm, &d->req[0]);
                d->peer[0] = d->rank == prev ? r : prev;
                if (nn__dist_wait_(d, 1, "nn_graph_step")) return 1;
            }
            prev = r;
            if (d->rank == r)
                for (e = lo; e < hi; e++) run += (double)d->flat[e] * d->flat[e];
        }
        if (d->rank == prev) run = (double)(float)run; /* the parameter's node stores a float */
    }
    sum = (float)run;
    if (prev >= 0) { /* the sum from its last holder to every rank */
        int nr = 0;
        for (r = 0; r < d->size; r++) {
            if (r == d->rank || (d->rank != prev && r != prev)) continue;
            if (d->rank == prev) MPI_Isend(&sum, 1, MPI_FLOAT, r, 7, d->comm, &d->req[nr]);
            else MPI_Irecv(&sum, 1, MPI_FLOAT, prev, 7, d->comm, &d->req[nr]);
            d->peer[nr++] = r;
        }
        if (nn__dist_wait_(d, nr, "nn_graph_step")) return 1;
    }
    c = g->opt.clip_norm / (sqrtf(sum) + 1e-6f); /* CLIP_SCALE */
    *clip = c > 1.0f ? 1.0f : c;
    return 0;
}

/* After nn__dist_backward left this rank's slices of the mean gradient in flat and
   nn__opt_begin advanced the clock: each slice's parameters updated with its state (the
   CPU loops of OPT_SGD and OPT_ADAM, with their per-parameter multipliers), written into
   flat, all-gathered, and every parameter written back. g->progress: 1 once anything
   changed. */
static nn_result nn__dist_zero_update(nn_graph *g) {
    nn__dist *d = (nn__dist *)g->dist;
    const nn__backend *be = g->ctx->backend;
    const nn_optimizer *o = &g->opt;
    float bc1 = (float)(1.0 - pow((double)o->beta1, (double)g->clock.t)); /* ops/optim.c's nn__adam_bc */
    float bc2 = (float)(1.0 - pow((double)o->beta2, (double)g->clock.t));
    float cv = nn__opt_cv(g), clip = 1.0f;
    nn_result r = NN_OK;
    int b, i, err = 0;
    double t0;
    g->progress = 0;
    if (d->failed)
        return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_step: data-parallel: an earlier step or compile timed out on "
                                              "this graph; the ranks are out of step");
    if (o->clip_norm > 0.0f && nn__dist_zero_clip(g, d, &clip)) return nn__fail(g->ctx, NN_ERR_STATE, "%s", d->msg);
    for (b = 0; b < d->n_buckets && r == NN_OK; b++) {
        int64_t base = d->blo[b], len = d->blo[b + 1] - base;
        int64_t lo = base + len * d->rank / d->size, hi = base + len * (d->rank + 1) / d->size;
        for (i = d->bpar[b]; i < d->bpar[b + 1] && r == NN_OK; i++) {
            nn__node *p = &g->nodes[d->par[i]];
            int64_t s = d->poff[i] > lo ? d->poff[i] : lo, e = d->poff[i] + p->numel < hi ? d->poff[i] + p->numel : hi, off;
            float *w, *st[3] = {NULL, NULL, NULL};
            int k;
            if (s >= e) continue;
            off = s - d->poff[i];
            if (be->host_memory) w = p->buf.host + off;
            else {
                r = be->read(g->ctx, &p->buf, d->ptmp, (size_t)p->numel * sizeof(float));
                w = d->ptmp + off;
            }
            if (r != NN_OK) break;
            for (k = 0; k < d->n_aux; k++) st[k] = d->zst[k] + d->zoff[b] + (s - lo);
            g->progress = 1;
            if (o->kind == NN_OPT_SGD)
                nn__sgd_update(w, d->flat + s, st[0], e - s, g->lr * d->lrm[i], o->momentum, o->dampening,
                               o->weight_decay * d->wdm[i], o->nesterov, g->clock.t == 1, clip, cv);
            else
                nn__dist_adam(g->ctx->threads, w, d->flat + s, st[0], st[1], off, off + (e - s), p->numel, g->lr * d->lrm[i], o,
                              o->weight_decay * d->wdm[i], bc1, bc2, clip, cv);
            memcpy(d->flat + s, w, (size_t)(e - s) * sizeof(float));
        }
    }
    if (r != NN_OK) return r;
    t0 = MPI_Wtime();
    for (b = 0; b < d->n_buckets && !err; b++) err = nn__dist_gather_bucket(d, b); /* the parameters' all-gather */
    d->wait_s += MPI_Wtime() - t0;
    d->comm_s += d->thread_on ? MPI_Wtime() - t0 : 0.0; /* (without the thread, wait_s is the reduction's time) */
    if (err) return nn__fail(g->ctx, NN_ERR_STATE, "%s", d->msg);
    for (i = 0; i < d->n_par && r == NN_OK; i++) {
        nn__node *p = &g->nodes[d->par[i]];
        r = be->write(g->ctx, &p->buf, d->flat + d->poff[i], (size_t)p->numel * sizeof(float));
    }
    return r;
}

/* ---- ZeRO stage 1: the whole state for training-state files (src/files/ckpt.c) ---- */

/* The floats rank c owns (its slices of every bucket). */
static int64_t nn__dist_owned(const nn__dist *d, int c) {
    int64_t n = 0;
    int b;
    for (b = 0; b < d->n_buckets; b++) {
        int64_t len = d->blo[b + 1] - d->blo[b];
        n += len * (c + 1) / d->size - len * c / d->size;
    }
    return n;
}

/* Copies between rank c's shard (its slices, in bucket order) and the whole state in flat
   order: to_full 1 places the shard, 0 takes it. */
static void nn__dist_shard_copy(const nn__dist *d, int c, float *shard, float *full, int to_full) {
    int64_t at = 0;
    int b;
    for (b = 0; b < d->n_buckets; b++) {
        int64_t base = d->blo[b], len = d->blo[b + 1] - base;
        int64_t lo = base + len * c / d->size, m = base + len * (c + 1) / d->size - lo;
        if (to_full) memcpy(full + lo, shard + at, (size_t)m * sizeof(float));
        else memcpy(shard + at, full + lo, (size_t)m * sizeof(float));
        at += m;
    }
}

/* The whole state's buffers, zfull[k] [P] (gather 0: left for a load to fill). With gather
   1, every rank sends its shard to rank 0, which places them: a collective of the ranks
   (rank 0's own shard copied). */
static nn_result nn__dist_zero_full(nn_graph *g, int gather, const char *what) {
    nn__dist *d = (nn__dist *)g->dist;
    int k, c;
    nn_result r = NN_OK;
    if (d->failed) return nn__fail(g->ctx, NN_ERR_STATE, "%s: data-parallel: an earlier step timed out on this graph", what);
    for (k = 0; k < d->n_aux; k++) {
        if (!gather || d->rank == 0) {
            d->zfull[k] = (float *)nn__calloc((size_t)(d->n > 0 ? d->n : 1), sizeof(float));
            if (!d->zfull[k]) r = nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
        }
    }
    if (!gather) return r;
    /* every rank learns whether rank 0 found the memory before any shard moves */
    r = nn__dist_agree(g, r, what);
    for (k = 0; k < d->n_aux && r == NN_OK; k++) {
        if (d->rank != 0) {
            MPI_Isend(d->zst[k], (int)d->owned, MPI_FLOAT, 0, 5, d->comm, &d->req[0]);
            d->peer[0] = 0;
            r = nn__dist_wait(g, d, 1, what);
            continue;
        }
        nn__dist_shard_copy(d, 0, d->zst[k], d->zfull[k], 1);
        for (c = 1; c < d->size && r == NN_OK; c++) { /* through recv, then into place */
            MPI_Irecv(d->recv, (int)nn__dist_owned(d, c), MPI_FLOAT, c, 5, d->comm, &d->req[0]);
            d->peer[0] = c;
            r = nn__dist_wait(g, d, 1, what);
            if (r == NN_OK) nn__dist_shard_copy(d, c, d->recv, d->zfull[k], 1);
        }
    }
    return r;
}

/* The k-th state tensor of parameter node id inside zfull[k] (NULL: none). */
static float *nn__dist_zero_tensor(nn_graph *g, int k, int id) {
    nn__dist *d = (nn__dist *)g->dist;
    int i;
    if (!d || !d->zero || k >= d->n_aux || !d->zfull[k]) return NULL;
    for (i = 0; i < d->n_par; i++)
        if (d->par[i] == id) return d->zfull[k] + d->poff[i];
    return NULL;
}

/* After a load filled zfull (keep 1): this rank's slices into its shard; then zfull freed. */
static void nn__dist_zero_release(nn_graph *g, int keep) {
    nn__dist *d = (nn__dist *)g->dist;
    int k;
    for (k = 0; k < d->n_aux; k++) {
        if (keep && d->zfull[k]) nn__dist_shard_copy(d, d->rank, d->zst[k], d->zfull[k], 0);
        if (!d->failed) {
            NN_FREE(d->zfull[k]);
            d->zfull[k] = NULL;
        }
    }
}

/* The optimizer state a ZeRO-1 graph keeps on this rank (its slices; no update ops hold
   any), for nn_graph_memory (src/engine/memory.c); -1 for any other graph. */
static int64_t nn__dist_state_bytes(const nn_graph *g) {
    const nn__dist *d = (const nn__dist *)g->dist;
    return d && d->zero ? (int64_t)d->n_aux * d->owned * 4 : -1;
}

NN_API nn_result nn_graph_dist_stats(nn_graph *g, nn_dist_stats *stats) {
    nn__dist *d;
    int i;
    if (!g || !stats) return NN_ERR_INVALID_ARGUMENT;
    memset(stats, 0, sizeof *stats);
    d = (nn__dist *)g->dist;
    stats->comm_seconds = d ? (d->thread_on ? d->comm_s : d->wait_s) : 0.0;
    stats->wait_seconds = d ? d->wait_s : 0.0;
    stats->gradient_bytes = d ? d->n * 4 : 0;
    if (d && d->zero) stats->optimizer_state_bytes = (int64_t)d->n_aux * d->owned * 4;
    else
        for (i = 0; i < g->n_nodes; i++) { /* the update ops' state tensors */
            const nn__node *n = &g->nodes[i];
            if ((n->op == NN__OP_OPT_SGD || n->op == NN__OP_OPT_ADAM || n->op == NN__OP_OPT_STEP) && n->live)
                stats->optimizer_state_bytes += (int64_t)n->n_aux * g->nodes[n->in[0]].numel * 4;
        }
    return NN_OK;
}
#endif
