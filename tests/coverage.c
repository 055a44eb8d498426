/* The library's implementation for the test binary (NN_IMPLEMENTATION is defined here and
   nowhere else in tests/), and what the coverage check needs from inside it: the function
   tables of the op kinds that carry a function, read from the library's own lists, and the
   record of which (op kind, function) pairs the op checker compared against a reference on
   the backend under test.

   The tables walked:
   - unary: kernels/activation.h's NN__ACTIVATIONS and NN__MATH (op "activation") and
     NN__NOGRAD (op "unary_nograd"), by the X-lists themselves;
   - binary: NN__BINARY_FNS; add, sub and mul are ops of their own ("add", "sub", "mul"),
     a function whose two derivative columns are both the literal 0.0f is a comparison
     (op "compare"), the others op "binary";
   - losses: kernels/loss.h's NN__LOSS_EW_KINDS (op "loss") and NN__LOSS_ROW_KINDS (op
     "row_loss");
   - optimizers: kernels/optim.h's NN__OPTIMIZERS but "none" (ops "sgd", "adam",
     "optimizer": the kind picks the op).
   A pair is recorded by t_cover_graph, which the op checker calls on the graph whose
   output and gradients (or, for an optimizer, updated parameters) it has just compared. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* as tests/nn_test.c */
#endif
#define NN_IMPLEMENTATION
#include "test.h"
#include <stdio.h>
#include <string.h>

enum { FAM_UNARY, FAM_BINARY, FAM_LOSS, FAM_ROWLOSS, FAM_OPTIM, FAM_COUNT };

static const char *const unary_names[] = {
#define X(E, name, params, valid, fwd, der) #name,
    NN__UNARY_ALL(X)
#undef X
};
static const char *const binary_names[] = {
#define X(E, name, fwd, da, db) #name,
    NN__BINARY_FNS(X)
#undef X
};
/* 1 for a binary function whose derivatives are both the literal 0.0f (no gradient) */
static const char *const binary_der[][2] = {
#define X(E, name, fwd, da, db) {#da, #db},
    NN__BINARY_FNS(X)
#undef X
};
static const int unary_nograd[NN__U_COUNT] = {
#define X(E, name, params, valid, fwd, der) [NN__U_##E] = 1,
    NN__NOGRAD(X)
#undef X
};
static const char *const loss_names[] = {
#define X(E, name, of_d) #name,
    NN__LOSS_EW_KINDS(X)
#undef X
};
static const char *const rowloss_names[] = {
#define X(E, name) #name,
    NN__LOSS_ROW_KINDS(X)
#undef X
};
static const char *const optim_names[] = {
#define X(E, name) name,
    NN__OPTIMIZERS(X)
#undef X
};

#define MAX_FN 64
static int covered[FAM_COUNT][MAX_FN]; /* compared on the backend under test: count of graphs */

static int fam_size(int fam) {
    switch (fam) {
    case FAM_UNARY: return NN__U_COUNT;
    case FAM_BINARY: return NN__B_COUNT;
    case FAM_LOSS: return NN__L_COUNT;
    case FAM_ROWLOSS: return NN__R_COUNT;
    default: return NN__OPT_COUNT;
    }
}

static const char *fn_name(int fam, int fn) {
    switch (fam) {
    case FAM_UNARY: return unary_names[fn];
    case FAM_BINARY: return binary_names[fn];
    case FAM_LOSS: return loss_names[fn];
    case FAM_ROWLOSS: return rowloss_names[fn];
    default: return optim_names[fn];
    }
}

/* the op kind the library builds for the function (the first of the pair) */
static const char *kind_name(int fam, int fn) {
    switch (fam) {
    case FAM_UNARY: return nn_op_name(unary_nograd[fn] ? NN__OP_UNARY_NOGRAD : NN__OP_UNARY);
    case FAM_BINARY:
        if (fn == NN__B_ADD) return nn_op_name(NN__OP_ADD);
        if (fn == NN__B_SUB) return nn_op_name(NN__OP_SUB);
        if (fn == NN__B_MUL) return nn_op_name(NN__OP_MUL);
        return nn_op_name(strcmp(binary_der[fn][0], "0.0f") == 0 && strcmp(binary_der[fn][1], "0.0f") == 0 ? NN__OP_COMPARE
                                                                                                            : NN__OP_BINARY);
    case FAM_LOSS: return nn_op_name(NN__OP_LOSS_EW);
    case FAM_ROWLOSS: return nn_op_name(NN__OP_LOSS_ROWS);
    default: return fn == NN_OPT_SGD ? "sgd|optimizer" : fn == NN_OPT_ADAM || fn == NN_OPT_ADAMW ? "adam|optimizer" : nn_op_name(NN__OP_OPT_STEP);
    }
}

/* the first function of a family (NN_OPT_NONE, 0, is no optimizer) */
static int fam_first(int fam) { return fam == FAM_OPTIM ? NN_OPT_SGD : 0; }

static void mark(int fam, int fn) {
    if (fn >= 0 && fn < fam_size(fam) && fn < MAX_FN) covered[fam][fn]++;
}

void t_cover_graph(const nn_graph *g, int from, int to) {
    int i;
    if (!g) return;
    if (to >= g->n_nodes) to = g->n_nodes - 1;
    for (i = from < 0 ? 0 : from; i <= to; i++) {
        const nn__node *n = &g->nodes[i];
        switch (n->op) {
        case NN__OP_UNARY:
        case NN__OP_UNARY_NOGRAD: mark(FAM_UNARY, n->a.ew.fn); break;
        case NN__OP_ADD: mark(FAM_BINARY, NN__B_ADD); break;
        case NN__OP_SUB: mark(FAM_BINARY, NN__B_SUB); break;
        case NN__OP_MUL: mark(FAM_BINARY, NN__B_MUL); break;
        case NN__OP_BINARY:
        case NN__OP_COMPARE: mark(FAM_BINARY, n->a.ew.bfn); break;
        case NN__OP_LOSS_EW: mark(FAM_LOSS, n->a.loss.kind); break;
        case NN__OP_LOSS_ROWS: mark(FAM_ROWLOSS, n->a.loss.kind); break;
        default: break;
        }
    }
    /* the optimizer's update ops are added by nn_graph_compile, after every other node */
    for (i = 0; i < g->n_nodes; i++) {
        const nn__node *n = &g->nodes[i];
        if (n->op == NN__OP_OPT_SGD || n->op == NN__OP_OPT_ADAM || n->op == NN__OP_OPT_STEP) {
            mark(FAM_OPTIM, n->a.optim.kind);
            break;
        }
    }
}

int t_cover_count(int *total) {
    int fam, fn, n = 0, all = 0;
    for (fam = 0; fam < FAM_COUNT; fam++)
        for (fn = fam_first(fam); fn < fam_size(fam); fn++) {
            all++;
            n += covered[fam][fn] > 0;
        }
    if (total) *total = all;
    return n;
}

int t_cover_pair(int i, const char **kind, const char **fn, int *count) {
    int fam;
    for (fam = 0; fam < FAM_COUNT; fam++) {
        int n = fam_size(fam) - fam_first(fam), f = fam_first(fam) + i;
        if (i < n) {
            *kind = kind_name(fam, f);
            *fn = fn_name(fam, f) ? fn_name(fam, f) : "(unnamed in tests/coverage.c)";
            *count = covered[fam][f];
            return 1;
        }
        i -= n;
    }
    return 0;
}

void t_cover_reset(void) { memset(covered, 0, sizeof covered); }

/* ---- the survey (NN_TEST_SURVEY, tests/oclgrind.sh): what a compiled graph would run ---- */

/* the function of node n, or NULL when its op kind carries none */
static const char *node_fn(const nn__node *n) {
    switch (n->op) {
    case NN__OP_UNARY:
    case NN__OP_UNARY_GRAD:
    case NN__OP_UNARY_NOGRAD: return n->a.ew.fn >= 0 && n->a.ew.fn < NN__U_COUNT ? unary_names[n->a.ew.fn] : "?";
    case NN__OP_BINARY:
    case NN__OP_BINARY_GRAD:
    case NN__OP_COMPARE: return n->a.ew.bfn >= 0 && n->a.ew.bfn < NN__B_COUNT ? binary_names[n->a.ew.bfn] : "?";
    case NN__OP_LOSS_EW:
    case NN__OP_LOSS_EW_GRAD: return n->a.loss.kind >= 0 && n->a.loss.kind < NN__L_COUNT ? loss_names[n->a.loss.kind] : "?";
    case NN__OP_LOSS_ROWS:
    case NN__OP_LOSS_ROWS_GRAD: return n->a.loss.kind >= 0 && n->a.loss.kind < NN__R_COUNT ? rowloss_names[n->a.loss.kind] : "?";
    case NN__OP_OPT_SGD:
    case NN__OP_OPT_ADAM:
    case NN__OP_OPT_STEP: return n->a.optim.kind > 0 && n->a.optim.kind < NN__OPT_COUNT ? optim_names[n->a.optim.kind] : "?";
    default: return NULL;
    }
}

/* the op kind's name, with "#ENUM" after a name that an earlier op kind also has ("expand") */
static void op_label(int op, char *buf, size_t n) {
    int o;
    const char *name = nn_op_name(op);
    for (o = 0; o < op; o++)
        if (nn_op_name(o) && name && strcmp(nn_op_name(o), name) == 0) {
            snprintf(buf, n, "%s#%d", name, op);
            return;
        }
    snprintf(buf, n, "%s", name ? name : "?");
}

void t_survey_write(FILE *f, const char *backend, const char *label, const nn_graph *g) {
    double cost = 0;
    int i;
    if (!f || !g) return;
    for (i = 0; i < g->n_launches; i++) { /* work-items, and a launch's own overhead as 256 more */
        const nn__launch *l = &g->launches[i];
        double items = 1;
        int d;
        for (d = 0; d < l->dims && d < 3; d++) items *= (double)l->gws[d];
        cost += items + 256;
    }
    fprintf(f, "%s\t%s\t%.0f\t", backend, label, cost);
    for (i = 0; i < g->n_nodes; i++) { /* every node but the leaves: (op kind, function or -) */
        const nn__node *n = &g->nodes[i];
        const char *fn;
        char op[64];
        if (n->op == NN__OP_INPUT || n->op == NN__OP_PARAM) continue;
        fn = node_fn(n);
        op_label(n->op, op, sizeof op);
        fprintf(f, " p:%s/%s", op, fn ? fn : "-");
    }
    for (i = 0; i < g->n_launches; i++) /* every kernel launched: k:FILE/KERNEL */
        fprintf(f, " k:%s/%s", g->launches[i].file, g->launches[i].kernel);
    fprintf(f, "\n");
    fflush(f);
}

/* tests/test_errors.c's check of the build log's line mapping (src/opencl/backend.c); 0
   where the library has no OpenCL backend */
int t_cl_map_log(const char **lines, unsigned count, const char *log, char *out, size_t n) {
#if defined(NN_NO_OPENCL)
    (void)lines, (void)count, (void)log, (void)out, (void)n;
    return 0;
#else
    nn__cl_map_log(lines, (cl_uint)count, log, out, n);
    return 1;
#endif
}

/* tests/test_fuse.c's look at what fusion formed (src/ops/fuse.c): the chains of compiled g,
   and into *gemm those of them whose first member is added in a GEMM's epilogue (the CPU
   backend's bias add); 0 and 0 where fusion formed none (NN_FUSE=0). */
int t_fused_chains(const nn_graph *g, int *gemm) {
    int i, n = g->fusion ? g->fusion->n : 0;
    *gemm = 0;
    for (i = 0; i < n; i++) *gemm += g->fusion->c[i].gemm != 0;
    return n;
}

/* Whether compiled g launches the device kernel named (tests/test_attention.c: the flash
   kernels taken); 0 on the CPU backend */
int t_graph_launches(const nn_graph *g, const char *kernel) {
    int i;
    for (i = 0; i < g->n_launches; i++)
        if (!strcmp(g->launches[i].kernel, kernel)) return 1;
    return 0;
}

/* The launches of compiled g that run the device kernel named; 0 on the CPU backend */
int t_graph_launch_count(const nn_graph *g, const char *kernel) {
    int i, n = 0;
    for (i = 0; i < g->n_launches; i++) n += !strcmp(g->launches[i].kernel, kernel);
    return n;
}

/* tests/test_ln16.c's 16-bit group norm (src/ops/norm.c nn__norm_force_half_groups) */
void t_norm_half_groups(int on) { nn__norm_force_half_groups(on); }

/* tests/test_conv_algo.c's forcing of the Winograd transforms' instruction set (src/cpu/conv_wino.c) */
int t_wino_force(const char *name) { return nn__wino_force(name); }

/* tests/test_conv_algo.c's forcing of the float32 GEMM's kernel (src/cpu/gemm.c) */
const char *t_sgemm_force(const char *name) { return nn__sgemm_force_kernel(name); }
/* the NC (columns of C per B block) of the GEMM kernel in use */
int t_sgemm_nc(void) { return nn__gemm_pick_arch()->nc; }

/* tests/test_matmul.c's GEMM with one of its paths switched on or off (src/cpu/gemm.c), on a
   pool of the given threads, alpha 0.75, beta 0: pb 0, op(A) packed once for each task's NC
   blocks where it plans so (nn__gemm_pre_plan) or per NC block; pb 1, op(B) packed by the first
   A panel's tiles (nn__gemm_ukr_avx512_pb) or in a pass of its own. Returns 1 when the path is
   on and the product takes it, 0 when not, -1 on failure */
static int t_sgemm_switch(int pb, int threads, int on, int ta, int tb, int M, int N, int K, const float *A,
                          const float *B, float *C) {
    nn__threadpool *pool = nn__threadpool_create(threads);
    int *flag = pb ? &nn__gemm_pb_ok : &nn__gemm_pre_ok;
    nn__gemm_job J;
    int n_tasks, planned;
    if (!pool) return -1;
    *flag = on;
    nn__gemm_prepare(&J, nn__threadpool_size(pool), ta, tb, M, N, K, 0.75f, A, ta ? M : K, B, tb ? K : N, 0.0f, C, N,
                     &n_tasks);
    planned = pb ? J.pb : nn__gemm_pre_plan(&J) > 0;
    nn__sgemm(pool, ta, tb, M, N, K, 0.75f, A, ta ? M : K, B, tb ? K : N, 0.0f, C, N);
    *flag = 1;
    nn__threadpool_destroy(pool);
    return planned;
}
int t_sgemm_pre(int threads, int pre, int ta, int tb, int M, int N, int K, const float *A, const float *B, float *C) {
    return t_sgemm_switch(0, threads, pre, ta, tb, M, N, K, A, B, C);
}
int t_sgemm_pb(int threads, int pb, int ta, int tb, int M, int N, int K, const float *A, const float *B, float *C) {
    return t_sgemm_switch(1, threads, pb, ta, tb, M, N, K, A, B, C);
}

/* tests/test_gemm16.c's path forcing */
const char *t_gemm16_force(int fmt, const char *name) { return nn__gemm16_force(fmt, name); }

/* tests/test_attention.c's switch of the CPU attention's causal skipping inside a tile
   (src/cpu/attention.c): 0 computes whole tiles, as the GEMM path does */
void t_attn_causal_skip(int on) { nn__attn_causal_skip = on; }
/* tests/test_attention.c's choice of the CPU attention backward's passes (src/cpu/attention.c):
   1 as the threads fit, 0 always two passes, 2 always one */
void t_attn_one_pass(int mode) { nn__attn_one_pass = mode; }
/* tests/test_attention.c's switch of the attention's views at compile (src/ops/attention.c,
   nn__attn_views): 0 the slices' copies and the gradient's CONCAT; and what a compiled
   graph holds: *views the operands read in place, the number of in-place gradients */
void t_attn_views(int on) { nn__attn_views_on = on; }
int t_attn_views_count(const nn_graph *g, int *views) {
    int i, k, gv = 0;
    *views = 0;
    for (i = 0; i < g->n_nodes; i++) {
        const nn__node *n = &g->nodes[i];
        if (!n->live || (n->op != NN__OP_ATTENTION && n->op != NN__OP_ATTENTION_DQ && n->op != NN__OP_ATTENTION_DKV &&
                         n->op != NN__OP_ATTENTION_DMASK))
            continue;
        for (k = 0; k < 3; k++) *views += n->a.attn.vrs[k] != 0;
        gv += n->a.attn.gview;
    }
    return gv;
}
/* tests/test_norm.c's switch of the CPU norms' vector loops (src/cpu/norm.c): 0 the plain loops */
void t_norm_vec(int on) { nn__norm_vec = on; }
