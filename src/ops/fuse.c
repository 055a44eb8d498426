/* Elementwise fusion (issue 19): chains of elementwise nodes that stand next to each other in
   the schedule, each after the first reading the node before it at its own shape (a bias add
   and its activation, a residual add after a bias add, an activation's gradient and the
   gradient sum after it), run as one pass over memory: on the CPU backend one loop over
   blocks of NN__FUSE_BLOCK elements calling each node's own row loop in turn
   (src/cpu/elementwise.c), on a device one kernel generated from the chain (the formulas'
   text from kernels/activation.h, after kernels/fuse.cl, built once per text and cached as
   the other programs). A node's output is written when anything outside its chain reads it
   (the backward, an output, a view), else it stays in a block (CPU) or a register (device).

   The same float operations in the same order as the unfused nodes, so the same bits: each
   element's value goes through the same formula (the same loops on the CPU; on a device the
   same expression, one statement per node, so a compiler contracts nothing across nodes).
   Found at compile, after the ops' plans and before the memory plan, which then keeps every
   input of a chain live to its last node and each node's output from its first. NN_FUSE=0
   in the environment turns it off. */
#include "../base/internal.h"
#include "../base/registry.h"
#include "../../kernels/kargs.h"
#include "../../kernels/activation.h"

/* The chains' types and the CPU backend's loop: src/cpu/fuse.c. */


/* the formulas' text, for the generated kernels (the same tokens kernels/elementwise.cl's
   kernels are stamped from) */
static const char *const nn__fuse_ufwd[] = {
#define NN__X(E, name, params, valid, fwd, der) #fwd,
    NN__UNARY_ALL(NN__X)
#undef NN__X
};
static const char *const nn__fuse_uder[] = {
#define NN__X(E, name, params, valid, fwd, der) #der,
    NN__UNARY_ALL(NN__X)
#undef NN__X
};
static const char *const nn__fuse_bfwd[] = {
#define NN__X(E, name, fwd, da, db) #fwd,
    NN__BINARY_FNS(NN__X)
#undef NN__X
};

static void nn__fusion_free(nn_graph *g) {
    int i;
    if (!g->fusion) return;
    for (i = 0; i < g->fusion->n; i++) NN_FREE(g->fusion->c[i].source);
    NN_FREE(g->fusion->c);
    NN_FREE(g->fusion);
    g->fusion = NULL;
}

/* The kind of node n in a chain, or -1: not fusable (float32 in and out, a flat index that
   fits an int, no input check). */
static int nn__fuse_kind(const nn_graph *g, const nn__node *n) {
    int k, kind;
    switch (n->op) {
    case NN__OP_ADD: case NN__OP_SUB: case NN__OP_MUL: case NN__OP_BINARY: case NN__OP_COMPARE: kind = NN__FK_BINARY; break;
    case NN__OP_UNARY: case NN__OP_UNARY_NOGRAD: kind = NN__FK_UNARY; break;
    case NN__OP_UNARY_GRAD: kind = NN__FK_UNARY_GRAD; break;
    case NN__OP_SCALE: kind = NN__FK_SCALE; break;
    default: return -1;
    }
    if (n->dtype != NN_F32 || n->numel < 1 || n->numel > 0x7fffffff || n->check || n->storage == NN__ST_VIEW) return -1;
    for (k = 0; k < n->n_in; k++)
        if (g->nodes[n->in[k]].dtype != NN_F32) return -1;
    return kind;
}

/* How node n reads node x at its output's index: -1 when not one of the forms. */
static int nn__fuse_form(const nn_graph *g, const nn__node *n, int x, int64_t *m) {
    const nn_shape *s = &g->nodes[x].shape, *o = &n->shape;
    int d, lead = 0;
    if (nn__shape_eq(s, o)) return NN__FA_FULL;
    if (g->nodes[x].numel == 1) return NN__FA_SCALAR;
    while (lead < s->ndim && s->dim[lead] == 1) lead++;
    if (s->ndim - lead > o->ndim) return -1;
    for (d = lead; d < s->ndim; d++)
        if (s->dim[d] != o->dim[o->ndim - s->ndim + d]) return -1;
    *m = g->nodes[x].numel;
    return NN__FA_ROW;
}

/* The kernel argument of operand k of node j of chain c, an outside node: its index among
   the chain's distinct outside operands in order of first reading (so the generated text
   depends on the chain's form, not on node ids, and programs are shared); *first: j, k is
   that first reading. */
static int nn__fuse_ext(const nn__fuse_chain *c, int j, int k, int *first) {
    int i, q, n = 0;
    for (i = 0; i <= j; i++)
        for (q = 0; q < (i < j ? c->m[i].n_opd : k + 1); q++) {
            const nn__fuse_opd *o = &c->m[i].opd[q];
            int p, r, dup = 0;
            if (o->kind == NN__FA_MEMBER) continue;
            for (p = 0; p <= i && !dup; p++) /* read before (i, q)? */
                for (r = 0; r < (p < i ? c->m[p].n_opd : q); r++)
                    if (c->m[p].opd[r].kind != NN__FA_MEMBER && c->m[p].opd[r].node == o->node) {
                        dup = 1;
                        break;
                    }
            if (i == j && q == k) {
                *first = !dup;
                if (!dup) return n;
                for (p = 0, n = 0; p <= i; p++) /* the index of its first reading */
                    for (r = 0; r < (p < i ? c->m[p].n_opd : q); r++) {
                        const nn__fuse_opd *e = &c->m[p].opd[r];
                        int e_first = 0, idx;
                        if (e->kind == NN__FA_MEMBER || e->node != o->node) continue;
                        idx = nn__fuse_ext(c, p, r, &e_first);
                        if (e_first) return idx;
                    }
                return 0;
            }
            n += !dup;
        }
    *first = 0;
    return 0;
}

/* Kernel arguments the chain c takes (every node's output counted, as if written). */
static int nn__fuse_nargs(const nn__fuse_chain *c) {
    int j, k, args = 1; /* n */
    for (j = 0; j < c->n; j++) {
        const nn__fuse_member *mb = &c->m[j];
        args += 1 + (mb->kind == NN__FK_UNARY || mb->kind == NN__FK_UNARY_GRAD ? 2 : mb->kind == NN__FK_SCALE);
        for (k = 0; k < mb->n_opd; k++) {
            int first = 0;
            if (mb->opd[k].kind == NN__FA_MEMBER) continue;
            args += mb->opd[k].kind == NN__FA_ROW;
            (void)nn__fuse_ext(c, j, k, &first);
            args += first;
        }
    }
    return args;
}

/* Node id as the next node of chain c (c->n == 0: its first): 0 when it cannot join it. */
static int nn__fuse_join(nn_graph *g, nn__fuse_chain *c, int id) {
    const nn__node *n = &g->nodes[id];
    nn__fuse_member *mb = &c->m[c->n];
    int kind = nn__fuse_kind(g, n), k, i, reads_prev = c->n == 0;
    if (kind < 0 || c->n == NN__FUSE_MAX) return 0;
    memset(mb, 0, sizeof *mb);
    mb->node = id;
    mb->kind = kind;
    mb->n_opd = kind == NN__FK_BINARY || kind == NN__FK_UNARY_GRAD ? 2 : 1;
    if (n->n_in != mb->n_opd) return 0;
    mb->fn = kind == NN__FK_BINARY ? nn__binary_node_fn(n) : n->a.ew.fn;
    for (k = 0; k < mb->n_opd; k++) {
        int x = n->in[k];
        nn__fuse_opd *o = &mb->opd[k];
        o->node = x;
        for (i = 0; i < c->n && c->m[i].node != x; i++) {}
        if (i < c->n) { /* an earlier node of the chain: read at the same shape only */
            if (!nn__shape_eq(&g->nodes[x].shape, &n->shape)) return 0;
            o->kind = NN__FA_MEMBER;
            o->node = i;
            reads_prev |= i == c->n - 1;
            continue;
        }
        o->kind = nn__fuse_form(g, n, x, &o->m);
        if (o->kind < 0 || ((kind == NN__FK_UNARY || kind == NN__FK_UNARY_GRAD || kind == NN__FK_SCALE) && o->kind != NN__FA_FULL))
            return 0;
    }
    if (!reads_prev) return 0;
    c->n++;
    /* a device's GEMM epilogue takes the product's 11 arguments, less n, the product's x and y0 */
    if (nn__fuse_nargs(c) + (c->gemm && !g->ctx->backend->host_memory ? 8 : 0) > NN__MAX_KARGS) {
        c->n--;
        return 0;
    }
    return 1;
}

/* Whether operand k of member j is the product of chain c's GEMM (c->gemm: member 0's operand
   c->gemm_k, which its epilogue reads from C, no argument) */
static int nn__fuse_is_product(const nn__fuse_chain *c, int j, int k) { return c->gemm && j == 0 && k == c->gemm_k; }

/* Chain c's parameters after the first ones (n, or the product's), in nn__fuse_launch's order:
   the buffers it reads (x<index>) and writes (y<j>), each row operand's m, each node's
   parameters; `names` their names alone (a call's arguments), `restr` the pointers restrict.
   Appended to s (cap bytes, len used); returns the new length. */
static size_t nn__fuse_params(const nn__fuse_chain *c, int names, int restr, const char *sfx, char *s, size_t cap,
                              size_t len) {
    const char *ro = names ? "" : restr ? "__global const float *restrict " : "__global const float *",
               *rw = names ? "" : restr ? "__global float *restrict " : "__global float *",
               *in = names ? "" : "const int ", *fl = names ? "" : "const float ";
    int j, k;
    for (j = 0; j < c->n; j++) {
        const nn__fuse_member *mb = &c->m[j];
        for (k = 0; k < mb->n_opd; k++) {
            int first = 0, x;
            if (mb->opd[k].kind == NN__FA_MEMBER || nn__fuse_is_product(c, j, k)) continue;
            x = nn__fuse_ext(c, j, k, &first);
            if (first) len += (size_t)snprintf(s + len, len < cap ? cap - len : 0, ", %sx%d%s", ro, x, sfx);
            if (mb->opd[k].kind == NN__FA_ROW)
                len += (size_t)snprintf(s + len, len < cap ? cap - len : 0, ", %sm%d_%d%s", in, j, k, sfx);
        }
        if (mb->written && !(c->gemm && j == 0)) len += (size_t)snprintf(s + len, len < cap ? cap - len : 0, ", %sy%d%s", rw, j, sfx);
        if (mb->kind == NN__FK_UNARY || mb->kind == NN__FK_UNARY_GRAD)
            len += (size_t)snprintf(s + len, len < cap ? cap - len : 0, ", %sa%d%s, %sb%d%s", fl, j, sfx, fl, j, sfx);
        if (mb->kind == NN__FK_SCALE) len += (size_t)snprintf(s + len, len < cap ? cap - len : 0, ", %ss%d%s", fl, j, sfx);
    }
    return len;
}

/* kernels/fuse.cl's kernel "fused" for chain c: its parameters n and nn__fuse_params'; one
   statement per node. A chain with a GEMM (c->gemm, on a device) is instead kernels/gemm.cl's
   gemm_epi: the product's parameters (NN__KPARAMS(gemm)) then the chain's (member 0's output
   is C, its product operand C's element), one product (GEMM_CALL, op(A) and op(B) transposed
   as ta, tb say), then for each row of C the item stored and its columns (GEMM_OWN_ROWS)
   gemm_epi_cols, the statements in a loop over the columns (its pointers restrict, for a
   compiler that would vectorise the loop; PoCL 3.1 left it scalar, so on devices tuned as
   CPUs a chain of IEEE-exact members runs 16 columns at a time first, nn__fuse_epi_vec: the
   MLP's bias and ReLU epilogues 2.7% -> 1.6% of PoCL's samples, the step 1.010). With item set
   (a launch of stages, kernels/gemm.cl's gemm_stages), no kernel but a function of one item
   of the plan's grid, gemm_epi_item (the chain's parameters, then the B panel and the item's
   number), each name ending in sfx. */
/* Whether chain c's GEMM epilogue may run its columns 16 at a time in float16s (devices tuned
   as CPUs: PoCL left the column loop scalar): every member a function whose float16 form
   gives each element the bits of the float one (IEEE additions, subtractions, products and
   comparisons: add, sub, mul, relu and its gradient, a scale), every operand the product, a
   member, a same-shape tensor, a scalar or a row of C's width */
static int nn__fuse_epi_vec(const nn_graph *g, const nn__fuse_chain *c) {
    int j, k;
    if (!c->gemm || !g->ctx->dev.cpu_tuned) return 0;
    for (j = 0; j < c->n; j++) {
        const nn__fuse_member *mb = &c->m[j];
        if (mb->kind == NN__FK_BINARY && mb->fn != NN__B_ADD && mb->fn != NN__B_SUB && mb->fn != NN__B_MUL) return 0;
        if ((mb->kind == NN__FK_UNARY || mb->kind == NN__FK_UNARY_GRAD) && mb->fn != NN__U_RELU) return 0;
        for (k = 0; k < mb->n_opd; k++) {
            const nn__fuse_opd *o = &mb->opd[k];
            if (o->kind == NN__FA_ROW && !nn__fuse_is_product(c, j, k) && o->m != g->nodes[c->m[0].node].shape.dim[1])
                return 0;
        }
    }
    return 1;
}

/* The chain's statements, one a member, for the element at i (column col_ of C's row in an
   epilogue): on floats, or (vec) on the float16 of the 16 elements from i */
static size_t nn__fuse_stmts(const nn_graph *g, const nn__fuse_chain *c, int vec, char *s, size_t cap, size_t len) {
    const char *ft = vec ? "float16" : "float";
    int j, k;
#define NN__PUT(...) (len += (size_t)snprintf(s + len, len < cap ? cap - len : 0, __VA_ARGS__))
    for (j = 0; j < c->n; j++) {
        const nn__fuse_member *mb = &c->m[j];
        char opd[2][64];
        for (k = 0; k < mb->n_opd; k++) {
            const nn__fuse_opd *o = &mb->opd[k];
            int first = 0, x = o->kind == NN__FA_MEMBER || nn__fuse_is_product(c, j, k) ? 0 : nn__fuse_ext(c, j, k, &first);
            if (nn__fuse_is_product(c, j, k)) snprintf(opd[k], sizeof opd[k], vec ? "vload16(0, C + i)" : "C[i]");
            else if (o->kind == NN__FA_MEMBER) snprintf(opd[k], sizeof opd[k], "v%d", o->node);
            else if (o->kind == NN__FA_FULL) snprintf(opd[k], sizeof opd[k], vec ? "vload16(0, x%d + i)" : "x%d[i]", x);
            else if (o->kind == NN__FA_SCALAR) snprintf(opd[k], sizeof opd[k], vec ? "(float16)(x%d[0])" : "x%d[0]", x);
            else if (c->gemm && o->m == g->nodes[c->m[0].node].shape.dim[1]) /* a row of C: i % m is its column */
                snprintf(opd[k], sizeof opd[k], vec ? "vload16(0, x%d + col_)" : "x%d[col_]", x);
            else if (g->ctx->dev.cpu_tuned) snprintf(opd[k], sizeof opd[k], "x%d[nn_fuse_mod(i, m%d_%d, n)]", x, j, k);
            else snprintf(opd[k], sizeof opd[k], "x%d[i %% m%d_%d]", x, j, k);
        }
        if (mb->kind == NN__FK_BINARY)
            NN__PUT("    %s v%d;\n    { %s u = %s, w = %s; v%d = (%s); }\n", ft, j, ft, opd[0], opd[1], j, nn__fuse_bfwd[mb->fn]);
        else if (mb->kind == NN__FK_UNARY)
            NN__PUT("    %s v%d;\n    { %s v = %s; float p0 = a%d, p1 = b%d; (void)p0; (void)p1; v%d = (%s); }\n", ft, j, ft,
                    opd[0], j, j, j, nn__fuse_ufwd[mb->fn]);
        else if (mb->kind == NN__FK_UNARY_GRAD)
            NN__PUT("    %s v%d;\n    { %s v = %s; float p0 = a%d, p1 = b%d; (void)p0; (void)p1; v%d = %s * (%s); }\n", ft, j,
                    ft, opd[0], j, j, j, opd[1], nn__fuse_uder[mb->fn]);
        else
            NN__PUT("    %s v%d = %s * s%d;\n", ft, j, opd[0], j);
        if (mb->written && c->gemm && j == 0) NN__PUT(vec ? "    vstore16(v0, 0, C + i);\n" : "    C[i] = v0;\n");
        else if (mb->written) NN__PUT(vec ? "    vstore16(v%d, 0, y%d + i);\n" : "    y%d[i] = v%d;\n", j, j);
    }
#undef NN__PUT
    return len;
}

static char *nn__fuse_source(const nn_graph *g, const nn__fuse_chain *c, int ta, int tb, int item, const char *sfx) {
    char *s = NULL, *p;
    size_t cap = 4096, len = 0;
    int j, vec = nn__fuse_epi_vec(g, c);
    for (j = 0; j < c->n; j++)
        cap += 2 * (strlen(c->m[j].kind == NN__FK_BINARY ? nn__fuse_bfwd[c->m[j].fn] : nn__fuse_ufwd[c->m[j].fn]) +
                    strlen(c->m[j].kind == NN__FK_UNARY_GRAD ? nn__fuse_uder[c->m[j].fn] : "") + 512);
    cap += 4 * strlen(sfx);
    s = (char *)NN_MALLOC(cap);
    if (!s) return NULL;
#define NN__PUT(...) (len += (size_t)snprintf(s + len, len < cap ? cap - len : 0, __VA_ARGS__))
    if (c->gemm) {
        NN__PUT("\n#line 1 \"the GEMM epilogue of a chain (src/ops/fuse.c)\"\n"
                "inline void gemm_epi_cols%s(const int n, const int ldc, const int row_, const int c0_, const int c1_, "
                "__global float *restrict C", sfx);
        len = nn__fuse_params(c, 0, 1, "", s, cap, len);
        NN__PUT(") {\n    (void)n;\n    int col_ = c0_;\n");
        if (vec) {
            NN__PUT("    for (; col_ + 16 <= c1_; col_ += 16) {\n    int i = row_ * ldc + col_;\n");
            len = nn__fuse_stmts(g, c, 1, s, cap, len);
            NN__PUT("    }\n");
        }
        NN__PUT("    for (; col_ < c1_; col_++) {\n    int i = row_ * ldc + col_;\n");
    } else {
        NN__PUT("\n#line 1 \"the fused kernel of a chain (src/ops/fuse.c)\"\n__kernel void fused(const int n");
        len = nn__fuse_params(c, 0, 0, "", s, cap, len);
        NN__PUT(") {\n    int i = get_global_id(0);\n    if (i >= n) return;\n");
    }
    len = nn__fuse_stmts(g, c, 0, s, cap, len);
    if (c->gemm && item) {
        NN__PUT("    }\n}\ninline void gemm_epi_item%s(NN__KPARAMS(gemm)", sfx);
        len = nn__fuse_params(c, 0, 0, "", s, cap, len);
        NN__PUT(", __local float *Bp, const int gv_) {\n    GEMM_ITEM_VARS(gv_)\n    (void)gv_z;\n    (void)claim;\n"
                "    GEMM_CALL(A, B, C, %d, %d);\n    {\n    const int n = M * N;\n    GEMM_OWN_SETUP\n"
                "    GEMM_OWN_ROWS(row_, c0_, c1_) gemm_epi_cols%s(n, ldc, row_, c0_, c1_, C", ta != 0, tb != 0, sfx);
        len = nn__fuse_params(c, 1, 0, "", s, cap, len);
        NN__PUT(");\n    }\n}\n");
    } else if (c->gemm) {
        NN__PUT("    }\n}\n__kernel GEMM_ATTR void gemm_epi(NN__KPARAMS(gemm)");
        len = nn__fuse_params(c, 0, 0, "", s, cap, len);
        NN__PUT(") {\n    GEMM_LOCALS\n    GEMM_ITEMS_BEGIN(1)\n    (void)gv_z;\n    GEMM_CALL(A, B, C, %d, %d);\n    {\n"
                "    const int n = M * N;\n    GEMM_OWN_SETUP\n"
                "    GEMM_OWN_ROWS(row_, c0_, c1_) gemm_epi_cols(n, ldc, row_, c0_, c1_, C", ta != 0, tb != 0);
        len = nn__fuse_params(c, 1, 0, "", s, cap, len);
        NN__PUT(");\n    }\n    GEMM_ITEMS_END\n}\n");
    } else {
        NN__PUT("}\n");
    }
#undef NN__PUT
    if (len >= cap) { /* cannot happen: cap counts every piece */
        NN_FREE(s);
        return NULL;
    }
    p = s;
    return p;
}

/* Node x (its storage's node for a view) is read at schedule position pos: live to there */
static void nn__fuse_live_to(nn_graph *g, int x, int pos) {
    nn__node *n = &g->nodes[x];
    if (n->storage == NN__ST_VIEW) n = &g->nodes[n->view_of];
    if (n->last < pos) n->last = pos;
}

/* Node id runs at schedule position pos, launched by the node there (fused -1, done_at pos):
   its inputs live to there */
static void nn__fuse_fold(nn_graph *g, int id, int pos) {
    nn__node *n = &g->nodes[id];
    int k;
    for (k = 0; k < n->n_in; k++) nn__fuse_live_to(g, n->in[k], pos);
    n->fused = -1;
    n->done_at = pos;
}

/* Closes chain c (of schedule positions [head, tail]): kept when it has two nodes or more. */
static nn_result nn__fuse_keep(nn_graph *g, nn__fuse_chain *c, const int *readers, int head) {
    struct nn__fusion *f = g->fusion;
    int j, k, tail = head + c->n - 1;
    if (c->n < 2 && !c->gemm) return NN_OK;
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 16;
        nn__fuse_chain *p = (nn__fuse_chain *)NN_REALLOC(f->c, (size_t)cap * sizeof *p);
        if (!p) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
        f->c = p;
        f->cap = cap;
    }
    for (j = 0; j < c->n; j++) { /* written: read outside the chain, kept, or the last */
        nn__fuse_member *mb = &c->m[j];
        const nn__node *n = &g->nodes[mb->node];
        int inside = 0, i;
        for (i = j + 1; i < c->n; i++)
            for (k = 0; k < c->m[i].n_opd; k++) inside += c->m[i].opd[k].kind == NN__FA_MEMBER && c->m[i].opd[k].node == j;
        mb->written = j == c->n - 1 || n->is_output || n->storage != NN__ST_ARENA || readers[mb->node] > inside;
    }
    if (c->gemm) { /* the product runs at the chain, into member 0's output: its operands live to the tail */
        c->m[0].written = 1;
        nn__fuse_fold(g, c->gemm - 1, tail);
    }
    for (j = 0; j < c->n; j++) { /* liveness: inputs to the last node, outputs from the first */
        nn__node *n = &g->nodes[c->m[j].node];
        for (k = 0; k < c->m[j].n_opd; k++)
            if (c->m[j].opd[k].kind != NN__FA_MEMBER) nn__fuse_live_to(g, c->m[j].opd[k].node, tail);
        n->first = head;
        n->fused = j == c->n - 1 ? f->n + 1 : -1;
        n->done_at = tail;
    }
    c->source = NULL;
    if (!g->ctx->backend->host_memory) {
        nn__mm_geom G;
        if (c->gemm) nn__mm_geom_node(g, &g->nodes[c->gemm - 1], &G);
        if (!(c->source = nn__fuse_source(g, c, c->gemm ? G.ta : 0, c->gemm ? G.tb : 0, 0, "")))
            return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
    }
    f->c[f->n++] = *c;
    return NN_OK;
}

/* The GEMM epilogue: node id + 1 of the matmul whose product member 0 of chain c (at schedule
   position pos, in the schedule part that starts at part0) reads, to run with it, and 0
   otherwise. The product must be one float32 product [M, N] (nn__matmul_bias_ok) that nothing
   else reads; the chain then runs with the product, into member 0's output.
   - The bias form, on every backend: member 0 adds a row vector [N] to the product made just
     before it (a linear layer's bias add). The CPU backend adds the bias to each tile after
     its last K block (nn__sgemm_bias, the same float additions) and runs the rest of the
     chain as without.
   - The product form, on a device: member 0 reads the product, made anywhere earlier in
     the same part, as any operand at its own shape (an activation's gradient of the product
     dy W, in the backward). The product then runs at the chain, its operands kept live to
     it (nn__fuse_keep).
   A device runs the product and the whole chain as one kernel (gemm_epi: nn__fuse_source,
   nn__fuse_launch), each element the product's float, then the chain's statements: the
   unfused kernels' bits, one launch and one pass over memory less. */
static int nn__fuse_gemm_ok(const nn_graph *g, int mm, const int *readers) {
    const nn__node *m = &g->nodes[mm];
    return m->op == NN__OP_MATMUL && m->shape.ndim == 2 && readers[mm] == 1 && !m->is_output &&
           m->storage == NN__ST_ARENA && m->fused == 0 && nn__matmul_bias_ok(g, m);
}
static int nn__fuse_gemm(const nn_graph *g, nn__fuse_chain *c, int pos, int part0, const int *readers) {
    const nn__node *a = &g->nodes[c->m[0].node];
    const nn__fuse_opd *o = c->m[0].opd;
    int k, mm = pos > part0 ? g->sched[pos - 1] : -1;
    c->gemm_k = 0;
    if (mm >= 0 && a->op == NN__OP_ADD && c->m[0].kind == NN__FK_BINARY && o[0].kind == NN__FA_FULL && o[0].node == mm &&
        o[1].kind == NN__FA_ROW && nn__fuse_gemm_ok(g, mm, readers) && o[1].m == g->nodes[mm].shape.dim[1])
        return mm + 1;
    if (g->ctx->backend->host_memory) return 0;
    for (k = 0; k < c->m[0].n_opd; k++) {
        mm = o[k].node;
        if (o[k].kind == NN__FA_FULL && g->nodes[mm].first >= part0 && g->nodes[mm].first < pos &&
            nn__fuse_gemm_ok(g, mm, readers)) {
            c->gemm_k = k;
            return mm + 1;
        }
    }
    return 0;
}

/* ---- the CPU backend: a chain with a GEMM epilogue runs the product first ---- */

static nn_result nn__fuse_cpu_gemm(nn_graph *g, nn__node *last) {
    const nn__fuse_chain *c = &g->fusion->c[last->fused - 1];
    if (c->gemm)
        nn__cpu_matmul_bias(g, &g->nodes[c->gemm - 1], g->nodes[c->m[0].node].buf.host,
                            g->nodes[c->m[0].opd[1].node].buf.host);
    return c->n > 1 ? nn__fuse_cpu(g, last) : NN_OK;
}

/* ---- a device backend: the scalar tails of a loss and its metrics ----
   On a device, three folds, each a launch less and the unfolded kernels' bits (kernels/
   reduce.cl and loss.cl say how):
   - a one-group SUM_ALL (a mean) of the rows of softmax cross-entropy or of accuracy, when
     nothing else reads them: the sum's kernel makes the rows' values (xent_sum, correct_sum);
   - the ACCUMULATE of a one-group SUM_ALL (nn_accumulate of a loss or a metric): the sum's
     kernel adds its value (a.reduce.acc);
   - a bias's gradient (SUM_TO of dy [K, M] over its rows) in the kernel of its weight's, the TN
     product dy^T x later in the backward (gemm_tn_bsum, nn__fuse_bsum);
   - the EXPAND_SCALAR of a mean's gradient that softmax cross-entropy's gradient alone reads:
     that kernel reads the scalar and the factor (xent_backward's dstride 0); and when that
     scalar is a FILL of 1 the expand alone reads (the loss's seed), the graph's constant 1.
   A folded node keeps its place in the schedule and is not launched (fused -1); the inputs it
   reads live to the node that runs it. At most 2048 rows, so one work-group of a GPU is not
   handed a batch of any size. */
static int nn__fuse_part0(const nn_graph *g, int pos) {
    return pos >= g->n_sched_update ? g->n_sched_update : pos >= g->n_sched_forward ? g->n_sched_forward : 0;
}

/* Whether node id, read by the node at schedule position pos alone, can run there instead */
static int nn__fuse_foldable(const nn_graph *g, int id, int pos, const int *readers) {
    const nn__node *n = &g->nodes[id];
    return readers[id] == 1 && !n->is_output && n->storage == NN__ST_ARENA && n->fused == 0 && n->first >= nn__fuse_part0(g, pos) &&
           n->first < pos && n->numel <= 2048;
}


/* The SUM_TO at schedule position pos, a float32 dy [K, M] summed over its rows (a bias's
   gradient), into the kernel of a later TN product dy^T x in the part (before `end`) that
   reads dy as A [K, M] (lda M), when nothing in between reads the sums (gemm_tn_bsum) */
static void nn__fuse_bsum(nn_graph *g, int pos, int end) {
    nn__node *s = &g->nodes[g->sched[pos]];
    const nn__node *x = &g->nodes[s->in[0]];
    int p, k;
    if (s->dtype != NN_F32 || x->dtype != NN_F32 || x->shape.ndim != 2 || s->numel != x->shape.dim[1] ||
        x->numel >= (int64_t)1 << 31 || s->storage == NN__ST_VIEW || s->fused != 0)
        return;
    for (p = pos + 1; p < end; p++) {
        nn__node *m = &g->nodes[g->sched[p]];
        nn__mm_geom G;
        for (k = 0; k < m->n_in; k++)
            if (m->in[k] == g->sched[pos]) return; /* read before a product takes it */
        if (m->op != NN__OP_MATMUL || m->in[0] != s->in[0] || m->fused != 0 || m->a.matmul.bsum != 0 || !nn__matmul_bias_ok(g, m))
            continue;
        nn__mm_geom_node(g, m, &G);
        if (G.ta && !G.tb && G.M == s->numel && G.K == x->shape.dim[0] && G.lda == G.M) {
            m->a.matmul.bsum = g->sched[pos];
            s->fused = -1;
            s->done_at = p;
            if (s->last < p) s->last = p; /* written there: live to it whatever reads it */
            return;
        }
    }
}

/* The gather of rows at schedule position pos (nn_gather_rows: float32 data [N, D] by idx
   [B]), when single products alone read it, each as op(A) = A or op(B) = B (its stored rows,
   D apart), on a device whose products read rows by index (kernels/gemm.cl's packed path,
   nn__gemm_rows_by_index): each product reads the data's rows in place (src/ops/matmul.c,
   nn__rows_operand) and the gather is not launched, its copy of the batch's rows (the MLP's
   images, 400 KB a step) neither written nor read back. An index out of range reads a row of
   zeros as the gather's would (with the other operand finite, the same +0 sums). */
static void nn__fuse_gather(nn_graph *g, int pos, const int *readers) {
    int id = g->sched[pos], p, k, n_read = 0, last = pos;
    nn__node *x = &g->nodes[id];
    const nn__node *d = &g->nodes[x->in[0]];
    if (x->dtype != NN_F32 || x->is_output || x->fused != 0 || d->shape.ndim != 2 || d->numel >= (int64_t)1 << 31 ||
        readers[id] == 0)
        return;
    for (p = pos + 1; p < g->n_sched; p++) {
        const nn__node *m = &g->nodes[g->sched[p]];
        nn__mm_geom G;
        int uses = 0;
        for (k = 0; k < m->n_in; k++) uses += m->in[k] == id;
        if (uses == 0) continue;
        if (uses != 1 || !nn__matmul_bias_ok(g, m)) return;
        nn__mm_geom_node(g, m, &G);
        if (m->in[0] == id ? G.ta || G.lda != d->shape.dim[1] : G.tb || G.ldb != d->shape.dim[1]) return;
        n_read++;
        last = p;
    }
    if (n_read != readers[id]) return; /* read by the engine too */
    nn__fuse_fold(g, id, pos);
    nn__fuse_live_to(g, x->in[0], last);
    nn__fuse_live_to(g, x->in[1], last);
}

/* The gather at schedule position pos of int32 labels [N] by idx [B], when only softmax
   cross-entropy's kernels that take labels by index read it: a folded XENT_ROWS's or
   CORRECT_ROWS's (xent_sum, correct_sum, at their sum's position) and XENT_GRAD's one item a
   row (xent_backward): each reads label[idx[b]] (kernels/loss.h's nn_label_at; an index out of
   range, label 0 as the gather's) and the gather is not launched. After nn__fuse_tails's folds. */
static void nn__fuse_gather_labels(nn_graph *g, int pos, const int *readers) {
    int id = g->sched[pos], p, k, n_read = 0, last = pos;
    nn__node *x = &g->nodes[id];
    if (x->dtype != NN_I32 || x->is_output || x->fused != 0 || g->nodes[x->in[0]].shape.ndim != 1 || readers[id] == 0)
        return;
    for (p = pos + 1; p < g->n_sched; p++) {
        const nn__node *m = &g->nodes[g->sched[p]];
        int uses = 0;
        for (k = 0; k < m->n_in; k++) uses += m->in[k] == id;
        if (uses == 0) continue;
        if (uses != 1 || m->in[1] != id) return;
        if ((m->op == NN__OP_XENT_ROWS || m->op == NN__OP_CORRECT_ROWS) && m->fused == -1) {
            if (last < m->done_at) last = m->done_at;
        } else if (m->op == NN__OP_XENT_GRAD && m->fused == 0 && nn__row_group_wg(g, m->shape.dim[1]) == 0) {
            if (last < p) last = p;
        } else {
            return;
        }
        n_read++;
    }
    if (n_read != readers[id]) return; /* read by the engine too */
    nn__fuse_fold(g, id, pos);
    nn__fuse_live_to(g, x->in[0], last);
    nn__fuse_live_to(g, x->in[1], last);
}

/* Softmax cross-entropy's tail in one launch (kernels/reduce.cl's xent_tail), after the folds
   above: the mean of its rows folded into a SUM_ALL at schedule position pos (xent_sum) makes
   too, where they read the same logits and labels,
   - the accuracy's mean (a SUM_ALL of folded CORRECT_ROWS, in the same part, which only its
     folded accumulate reads): a.reduce.tail_correct;
   - the logits' gradient (XENT_GRAD of one item a row, later in the schedule, whose factor is
     the folded expand of the loss's seed 1: g->one, dstride 0): a.reduce.tail_grad.
   Each becomes fused -1, written at pos: the memory plan holds its storage from there
   (nn__live_from) to its last use. Two launches fewer for the MLP's loss and accuracy. */
static void nn__fuse_xent_tail(nn_graph *g, int pos, const int *readers) {
    nn__node *s = &g->nodes[g->sched[pos]];
    const nn__node *p = &g->nodes[s->in[0]];
    int q, end = pos < g->n_sched_forward ? g->n_sched_forward : pos < g->n_sched_update ? g->n_sched_update : g->n_sched;
    if (s->op != NN__OP_SUM_ALL || s->fused != 0 || s->scratch != 0 || p->op != NN__OP_XENT_ROWS || p->fused != -1)
        return;
    for (q = nn__fuse_part0(g, pos); q < end; q++) {
        nn__node *c = &g->nodes[g->sched[q]];
        const nn__node *cp = &g->nodes[c->in[0]];
        if (q == pos || c->op != NN__OP_SUM_ALL || c->fused != 0 || c->scratch != 0 || cp->op != NN__OP_CORRECT_ROWS ||
            cp->fused != -1 || cp->in[0] != p->in[0] || cp->in[1] != p->in[1] || c->is_output ||
            readers[g->sched[q]] != (c->a.reduce.acc > 0) || c->storage != NN__ST_ARENA)
            continue;
        s->a.reduce.tail_correct = g->sched[q];
        c->fused = -1;
        c->done_at = pos; /* before its position: live from there (nn__live_from); after: to there */
        nn__fuse_live_to(g, g->sched[q], pos);
        nn__fuse_live_to(g, cp->in[0], pos);
        nn__fuse_live_to(g, cp->in[1], pos);
        break;
    }
    for (q = pos + 1; q < g->n_sched; q++) {
        nn__node *d = &g->nodes[g->sched[q]];
        const nn__node *e;
        if (d->op != NN__OP_XENT_GRAD || d->fused != 0 || d->in[0] != p->in[0] || d->in[1] != p->in[1] ||
            d->storage != NN__ST_ARENA || nn__row_group_wg(g, d->shape.dim[1]) != 0)
            continue;
        e = &g->nodes[d->in[2]];
        if (e->op == NN__OP_EXPAND_SCALAR && e->fused < 0 && g->nodes[e->in[0]].fused < 0 && g->nodes[e->in[0]].op == NN__OP_FILL) {
            s->a.reduce.tail_grad = g->sched[q];
            d->fused = -1;
            d->done_at = pos; /* its storage live from there (nn__live_from) */
        }
        break;
    }
}

static void nn__fuse_tails(nn_graph *g, const int *readers) {
    int i, k;
    if (g->ctx->backend->host_memory) return;
    for (i = 0; i < g->n_sched; i++) {
        int id = g->sched[i], end = i < g->n_sched_forward ? g->n_sched_forward : i < g->n_sched_update ? g->n_sched_update : g->n_sched;
        nn__node *n = &g->nodes[id];
        if (n->fused != 0) continue;
        if (n->op == NN__OP_SUM_ALL && n->scratch == 0) {
            const nn__node *p = &g->nodes[n->in[0]];
            if (((p->op == NN__OP_XENT_ROWS && nn__row_group_wg(g, g->nodes[p->in[0]].shape.dim[1]) == 0) ||
                 p->op == NN__OP_CORRECT_ROWS) &&
                nn__fuse_foldable(g, n->in[0], i, readers))
                nn__fuse_fold(g, n->in[0], i);
            for (k = i + 1; k < end; k++) {
                nn__node *a = &g->nodes[g->sched[k]];
                if (a->op == NN__OP_ACCUMULATE && a->in[0] == id && a->fused == 0 && readers[g->sched[k]] == 0 &&
                    a->storage == NN__ST_OWN) {
                    n->a.reduce.acc = g->sched[k];
                    a->fused = -1;
                    a->done_at = i;
                    break;
                }
            }
        }
        if (n->op == NN__OP_SUM_TO) nn__fuse_bsum(g, i, end);
        if (n->op == NN__OP_GATHER_ROWS && nn__gemm_rows_by_index(&g->ctx->dev)) nn__fuse_gather(g, i, readers);
        if (n->op == NN__OP_XENT_GRAD && g->nodes[n->in[2]].op == NN__OP_EXPAND_SCALAR && nn__fuse_foldable(g, n->in[2], i, readers)) {
            const nn__node *s = &g->nodes[g->nodes[n->in[2]].in[0]];
            nn__fuse_fold(g, n->in[2], i);
            /* the gradient's seed, a fill of 1 (the loss's): g->one */
            if (s->op == NN__OP_FILL && s->dtype == NN_F32 && s->numel == 1 && s->a.ew.s == 1.0f &&
                nn__fuse_foldable(g, g->nodes[n->in[2]].in[0], i, readers))
                nn__fuse_fold(g, g->nodes[n->in[2]].in[0], i);
        }
    }
    for (i = 0; i < g->n_sched; i++)
        if (g->nodes[g->sched[i]].op == NN__OP_GATHER_ROWS) nn__fuse_gather_labels(g, i, readers);
    for (i = 0; i < g->n_sched; i++) nn__fuse_xent_tail(g, i, readers);
}

/* Finds the chains: runs of schedule positions within one part of the schedule (forward,
   backward, update: a run may stop at a part's end), each node after the first reading the
   one before it. */
static nn_result nn__fuse_plan(nn_graph *g) {
    const char *env = getenv("NN_FUSE");
    nn__fuse_chain c;
    int *readers, i, k, head = 0;
    nn_result r = NN_OK;
    if ((env && strcmp(env, "0") == 0) || g->n_sched < 2) return NN_OK;
    readers = (int *)nn__calloc((size_t)g->n_nodes + 1, sizeof(int));
    g->fusion = (struct nn__fusion *)nn__calloc(1, sizeof *g->fusion);
    if (!readers || !g->fusion) {
        NN_FREE(readers);
        NN_FREE(g->fusion);
        g->fusion = NULL;
        return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
    }
    g->fusion_free = nn__fusion_free;
    for (i = 0; i < g->n_sched; i++) {
        const nn__node *n = &g->nodes[g->sched[i]];
        for (k = 0; k < n->n_in; k++) readers[n->in[k]]++;
    }
    for (i = 0; i < g->n_nodes; i++) /* parameters' and inputs' gradients and the loss: read by the engine, kept
                                           (another node's gradient is read by the backward alone) */
        if ((g->nodes[i].op == NN__OP_PARAM || g->nodes[i].op == NN__OP_INPUT) && g->nodes[i].grad >= 0 &&
            g->nodes[i].grad < g->n_nodes)
            readers[g->nodes[i].grad]++;
    if (g->loss > 0) readers[g->loss]++;
    c.n = 0;
    c.gemm = c.gemm_k = 0;
    for (i = 0; i < g->n_sched && r == NN_OK; i++) {
        int boundary = i == g->n_sched_forward || i == g->n_sched_update;
        int part0 = nn__fuse_part0(g, i);
        if (c.n > 0 && !boundary && nn__fuse_join(g, &c, g->sched[i])) continue;
        r = nn__fuse_keep(g, &c, readers, head);
        c.n = 0;
        head = i;
        c.gemm = c.gemm_k = 0;
        if (nn__fuse_join(g, &c, g->sched[i])) c.gemm = nn__fuse_gemm(g, &c, i, part0, readers);
    }
    if (r == NN_OK) r = nn__fuse_keep(g, &c, readers, head);
    if (r == NN_OK) nn__fuse_tails(g, readers);
    NN_FREE(readers);
    if (r == NN_OK && g->fusion->n)
        nn__log(g->ctx, NN_LOG_DEBUG, "fusion: %d chains of elementwise nodes run as one pass each", g->fusion->n);
    return r;
}

/* ---- a device backend: the chain's one launch of its generated kernel ---- */

static nn_result nn__fuse_launch(nn_graph *g, int id) {
    const nn__fuse_chain *c = &g->fusion->c[g->nodes[id].fused - 1];
    nn__launch *l = NULL;
    /* with a GEMM: gemm_epi, the matmul's launch (its geometry and arguments) into member 0's output */
    nn_result r = c->gemm ? nn__launch_matmul_one(g, id, &g->nodes[c->gemm - 1], "gemm_epi", &g->nodes[c->m[0].node].buf, &l)
                          : nn__launch_kernel(g, id, "fuse", "fused", (size_t)g->nodes[id].numel, &l);
    int j, k;
    if (r != NN_OK) return r;
    l->source = c->source;
    if (!c->gemm) r = nn__karg_int(l, "n", (int)g->nodes[id].numel);
    for (j = 0; j < c->n && r == NN_OK; j++) { /* nn__fuse_source's order */
        const nn__fuse_member *mb = &c->m[j];
        const nn__node *n = &g->nodes[mb->node];
        for (k = 0; k < mb->n_opd && r == NN_OK; k++) {
            int first = 0;
            if (mb->opd[k].kind == NN__FA_MEMBER || nn__fuse_is_product(c, j, k)) continue;
            (void)nn__fuse_ext(c, j, k, &first);
            if (first) r = nn__karg_buf(l, "x", &g->nodes[mb->opd[k].node].buf);
            if (r == NN_OK && mb->opd[k].kind == NN__FA_ROW) r = nn__karg_int(l, "m", (int)mb->opd[k].m);
        }
        if (r == NN_OK && mb->written && !(c->gemm && j == 0)) r = nn__karg_buf(l, "y", &n->buf);
        if (r == NN_OK && (mb->kind == NN__FK_UNARY || mb->kind == NN__FK_UNARY_GRAD)) {
            r = nn__karg_float(l, "p0", n->a.ew.param[0]);
            if (r == NN_OK) r = nn__karg_float(l, "p1", n->a.ew.param[1]);
        }
        if (r == NN_OK && mb->kind == NN__FK_SCALE) r = nn__karg_float(l, "s", n->a.ew.s);
    }
    return r;
}

/* A launch of stages (src/opencl/backend.c, nn__cl_stages) runs node id's chain with a product
   (its gemm_epi launch) as one of its products: part 0, the chain's item function
   (gemm_epi_item, nn__fuse_source); 1, its parameters after the product's, each as ", type
   name"; 2, the same names as arguments: every name ending in sfx. NULL: out of memory, or
   no such chain. */
static char *nn__fuse_stage_text(const nn_graph *g, int id, const char *sfx, int part) {
    const nn__fuse_chain *c;
    char *s;
    size_t len;
    if (g->nodes[id].fused < 1 || !g->fusion) return NULL;
    c = &g->fusion->c[g->nodes[id].fused - 1];
    if (!c->gemm) return NULL;
    if (part == 0) {
        nn__mm_geom G;
        nn__mm_geom_node(g, &g->nodes[c->gemm - 1], &G);
        return nn__fuse_source(g, c, G.ta, G.tb, 1, sfx);
    }
    {
        size_t cap = 256 + (size_t)c->n * 8 * (64 + strlen(sfx)); /* > any text: a member has 6 parameters at most */
        s = (char *)NN_MALLOC(cap);
        if (!s) return NULL;
        s[0] = 0;
        len = nn__fuse_params(c, part == 2, 0, sfx, s, cap, 0);
        if (len >= cap) { /* cannot happen: cap counts every piece */
            NN_FREE(s);
            return NULL;
        }
    }
    return s;
}

static const nn__fuse_hooks *nn__fuse(void) {
    static const nn__fuse_hooks hooks = {nn__fuse_plan, nn__fuse_cpu_gemm, nn__fuse_launch, nn__fuse_stage_text};
    return &hooks;
}
