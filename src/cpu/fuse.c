/* The CPU backend's loop of a fused chain of elementwise nodes (src/ops/fuse.c finds the
   chains, records a device's kernels and says why the bits stay the same), and the chains'
   types: blocks of NN__FUSE_BLOCK elements over the pool's threads, each node's own row loop
   of src/cpu/elementwise.c called in turn on the block, its output written to its buffer or,
   when nothing outside the chain reads it, to a block on the stack. */
#include "../base/internal.h"

#define NN__FUSE_MAX 6     /* nodes per chain */
#define NN__FUSE_BLOCK 512 /* CPU: elements of a block, a multiple of 64 */

/* what a node of a chain computes */
enum { NN__FK_BINARY, NN__FK_UNARY, NN__FK_UNARY_GRAD, NN__FK_SCALE };
/* how it reads an operand at output element i: x[i], x[0], x[i % m], or an earlier node's value */
enum { NN__FA_FULL, NN__FA_SCALAR, NN__FA_ROW, NN__FA_MEMBER };

typedef struct nn__fuse_opd {
    int kind, node; /* node: the operand's node; NN__FA_MEMBER: its index in the chain */
    int64_t m;      /* NN__FA_ROW: the operand's element count (it is the output's trailing dims) */
} nn__fuse_opd;

typedef struct nn__fuse_member {
    int node, kind, fn, n_opd, written;
    nn__fuse_opd opd[2];
} nn__fuse_member;

typedef struct nn__fuse_chain {
    int n;
    int gemm;   /* node id + 1 of the matmul whose product member 0 reads as its operand gemm_k (0:
                   none): the bias form (gemm_k 0, member 0 adds a row vector to the product: a linear
                   layer's bias add), on every backend; the product form (any operand, the matmul
                   earlier in the schedule: a layer's activation gradient), on devices only */
    int gemm_k;
    nn__fuse_member m[NN__FUSE_MAX];
    char *source; /* a device backend's kernel "fused" (NULL on the CPU backend) */
} nn__fuse_chain;

struct nn__fusion {
    nn__fuse_chain *c;
    int n, cap;
};

/* ---- the CPU backend: blocks of the chain's elements over the pool's threads ---- */

typedef struct nn__fuse_job {
    nn_graph *g;
    const nn__fuse_chain *c;
    int64_t n, chunk;
} nn__fuse_job;

/* Operand o of a node at element e of a block starting at e0 (out: the chain's block
   pointers), and its stride. */
static const float *nn__fuse_at(const nn_graph *g, const nn__fuse_opd *o, float *const *out, int64_t e, int64_t e0,
                                int64_t *stride) {
    const float *x = o->kind == NN__FA_MEMBER ? NULL : g->nodes[o->node].buf.host;
    *stride = o->kind != NN__FA_SCALAR;
    if (o->kind == NN__FA_MEMBER) return out[o->node] + (e - e0);
    if (o->kind == NN__FA_FULL) return x + e;
    if (o->kind == NN__FA_SCALAR) return x;
    return x + e % o->m;
}

static void nn__fuse_block(const nn__fuse_job *jb, int64_t e0, int64_t e1, float (*tmp)[NN__FUSE_BLOCK]) {
    const nn__fuse_chain *c = jb->c;
    nn_graph *g = jb->g;
    float *out[NN__FUSE_MAX];
    int j, k;
    for (j = 0; j < c->n; j++) {
        const nn__fuse_member *mb = &c->m[j];
        nn__node *n = &g->nodes[mb->node];
        out[j] = mb->written ? n->buf.host + e0 : tmp[j];
        if (j == 0 && c->gemm) continue; /* written by the GEMM */
        if (mb->kind == NN__FK_BINARY) { /* in row pieces: a row operand restarts at each multiple of its m */
            int64_t e = e0;
            while (e < e1) {
                int64_t len = e1 - e, sa, sb;
                const float *a, *b;
                for (k = 0; k < 2; k++)
                    if (mb->opd[k].kind == NN__FA_ROW && mb->opd[k].m - e % mb->opd[k].m < len) len = mb->opd[k].m - e % mb->opd[k].m;
                a = nn__fuse_at(g, &mb->opd[0], out, e, e0, &sa);
                b = nn__fuse_at(g, &mb->opd[1], out, e, e0, &sb);
                nn__binary_row(mb->fn, out[j] + (e - e0), a, sa, b, sb, len);
                e += len;
            }
        } else {
            int64_t s;
            const float *x = nn__fuse_at(g, &mb->opd[0], out, e0, e0, &s);
            if (mb->kind == NN__FK_UNARY) {
                nn__unary_forward(mb->fn, n->a.ew.param, out[j], x, e1 - e0);
            } else if (mb->kind == NN__FK_UNARY_GRAD) {
                nn__unary_backward(mb->fn, n->a.ew.param, out[j], x, nn__fuse_at(g, &mb->opd[1], out, e0, e0, &s), e1 - e0);
            } else {
                nn__scale_forward(out[j], x, n->a.ew.s, e1 - e0);
            }
        }
    }
}

static void nn__fuse_task(void *arg, int t, int n_tasks) {
    const nn__fuse_job *jb = (const nn__fuse_job *)arg;
    float tmp[NN__FUSE_MAX][NN__FUSE_BLOCK];
    int64_t e0 = jb->chunk * t, end = e0 + jb->chunk < jb->n ? e0 + jb->chunk : jb->n, e;
    (void)n_tasks;
    for (e = e0; e < end; e += NN__FUSE_BLOCK) nn__fuse_block(jb, e, end - e < NN__FUSE_BLOCK ? end : e + NN__FUSE_BLOCK, tmp);
}

static nn_result nn__fuse_cpu(nn_graph *g, nn__node *last) {
    nn__fuse_job jb;
    int tasks;
    jb.g = g;
    jb.c = &g->fusion->c[last->fused - 1];
    jb.n = last->numel;
    tasks = jb.n >= NN__EW_PAR_MIN ? nn__threadpool_size(g->ctx->threads) : 1;
    jb.chunk = ((jb.n + tasks - 1) / tasks + NN__FUSE_BLOCK - 1) / NN__FUSE_BLOCK * NN__FUSE_BLOCK;
#if defined(NN__VM_X86)
    (void)nn__vm_isa();
#endif
    nn__threadpool_run(g->ctx->threads, nn__fuse_task, &jb, (int)((jb.n + jb.chunk - 1) / jb.chunk));
    return NN_OK;
}

