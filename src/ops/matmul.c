/* The matmul family: torch.matmul's batched products as one op (nn_matmul, and nn_einsum's
   and nn_linear_layer's products), on the CPU backend's blocked GEMM (src/cpu/gemm.c) or on
   kernels/gemm.cl with the launch geometry of src/opencl/gemm_plan.c. */
#include "../base/internal.h"
#include "../base/registry.h"

/* ==== GEMM launches (kernels/gemm.cl), shared by matmul and conv2d's GEMM path
   (src/ops/conv/conv2d.c) ==== */

/* A launch of kernels/gemm.cl with the geometry of a plan (opencl/gemm_plan.c) */
static nn_result nn__launch_gemm_plan(nn_graph *g, int id, const nn__gemm_plan *plan, nn__launch **l) {
    nn_result r = nn__launch_kernel(g, id, "gemm", plan->kernel, 1, l);
    if (r != NN_OK) return r;
    (*l)->dims = plan->dims;
    memcpy((*l)->gws, plan->gws, sizeof (*l)->gws);
    memcpy((*l)->lws, plan->lws, sizeof (*l)->lws);
    (*l)->use_lws = plan->lws[0] != 0;
    return NN_OK;
}

/* One launch of a batched GEMM (kernels/gemm.cl): outer*inner products of op(A) [M, K] *
   op(B) [K, Nc]; a, b and c are {ld, offset, outer stride, inner stride} in elements. A and
   B are of storage type `store` (kernels/storage.h: NN_F32, or 16-bit read as float32), C
   float32. */
static nn_result nn__launch_gemm_store(nn_graph *g, int id, nn_dtype store, int ta, int tb, int M, int Nc, int K,
                                       const nn__buf *A, const int *a, const nn__buf *B, const int *b, const nn__buf *C,
                                       const int *c, int outer, int inner, float beta) {
    nn_context *ctx = g->ctx;
    nn__gemm_plan plan;
    nn__launch *l = NULL;
    nn__k_gemm_batched k;
    nn_result r;
    nn__gemm_plan_batched(&ctx->dev, ta, tb, M, Nc, K, outer * inner, &plan);
    r = nn__launch_gemm_plan(g, id, &plan, &l);
    if (r != NN_OK) return r;
    l->store = store;
    memset(&k, 0, sizeof k);
    k.M = M;
    k.N = Nc;
    k.K = K;
    k.A = A;
    k.lda = a[0];
    k.B = B;
    k.ldb = b[0];
    k.C = C;
    k.ldc = c[0];
    k.alpha = 1.0f;
    k.beta = beta;
    k.inner = inner;
    k.offA = a[1];
    k.sa0 = a[2];
    k.sa1 = a[3];
    k.offB = b[1];
    k.sb0 = b[2];
    k.sb1 = b[3];
    k.offC = c[1];
    k.sc0 = c[2];
    k.sc1 = c[3];
    k.claim = &g->claim;
    k.vnx = plan.vnx;
    k.vny = plan.vny;
    k.vnz = plan.vnz;
    return nn__kargs_gemm_batched(l, &k);
}

/* The same on float32 operands. */
static nn_result nn__launch_gemm_beta(nn_graph *g, int id, int ta, int tb, int M, int Nc, int K, const nn__buf *A,
                                      const int *a, const nn__buf *B, const int *b, const nn__buf *C, const int *c,
                                      int outer, int inner, float beta) {
    return nn__launch_gemm_store(g, id, NN_F32, ta, tb, M, Nc, K, A, a, B, b, C, c, outer, inner, beta);
}

/* The same with beta 0 (C = op(A) op(B)). */
static nn_result nn__launch_gemm(nn_graph *g, int id, int ta, int tb, int M, int Nc, int K, const nn__buf *A, const int *a,
                                 const nn__buf *B, const int *b, const nn__buf *C, const int *c, int outer, int inner) {
    return nn__launch_gemm_beta(g, id, ta, tb, M, Nc, K, A, a, B, b, C, c, outer, inner, 0.0f);
}

/* ==== launches of stages: consecutive products as one launch (src/opencl/backend.c's
   nn__cl_stages, on devices tuned as CPUs; kernels/gemm.cl says how they run) ==== */

/* kernels/gemm_args.h's gemm parameters as text, "kind name,kind name,..." */
#define NN__KTXT_F(kind, name) #kind " " #name
#define NN__KTXT_P(kind, name) "," #kind " " #name
static const char nn__gemm_sig_text[] = NN__KARGS_gemm(NN__KTXT_F, NN__KTXT_P);
#undef NN__KTXT_F
#undef NN__KTXT_P

/* Launch l as a product of a launch of stages: 1-4 gemm_nn/nt/tn/tt_single, 5 gemm_tn_bsum, 6
   a chain's gemm_epi, 0 none (another kernel, or 16-bit operands) */
static NN__MAYBE_UNUSED int nn__gemm_stage_kind(const nn__launch *l) {
    static const char *const names[6] = {"gemm_nn_single", "gemm_nt_single", "gemm_tn_single", "gemm_tt_single",
                                         "gemm_tn_bsum", "gemm_epi"};
    int k;
    if (strcmp(l->file, "gemm") != 0 || l->store != NN_F32 || l->update) return 0;
    for (k = 0; k < 6; k++)
        if (strcmp(l->kernel, names[k]) == 0) return k + 1;
    return 0;
}

/* Parameter *i of a signature's text (nn__gemm_sig_text's form): its kind (kind, kl bytes) and
   name (name, nl bytes); 0 past the last */
static int nn__sig_param(const char *sig, int i, const char **kind, int *kl, const char **name, int *nl) {
    const char *p = sig, *e, *sp;
    for (; i > 0 && p; i--) p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
    if (!p || !*p) return 0;
    e = strchr(p, ',');
    sp = strchr(p, ' ');
    *kind = p;
    *kl = (int)(sp - p);
    *name = sp + 1;
    *nl = (int)((e ? e : p + strlen(p)) - sp - 1);
    return 1;
}

/* The index of gemm's parameter `name` (kernels/gemm_args.h), -1 where it has none */
static NN__MAYBE_UNUSED int nn__gemm_sig_index(const char *name) {
    const char *kind, *nm;
    int i, kl, nl;
    for (i = 0; nn__sig_param(nn__gemm_sig_text, i, &kind, &kl, &nm, &nl); i++)
        if ((size_t)nl == strlen(name) && strncmp(nm, name, (size_t)nl) == 0) return i;
    return -1;
}

/* gemm's parameters with names ending in _k: declarations (decl 1) or names, each after ", " */
static void nn__gemm_stage_params(nn__jtext *t, int k, int decl) {
    const char *kind, *nm;
    int i, kl, nl;
    for (i = 0; nn__sig_param(nn__gemm_sig_text, i, &kind, &kl, &nm, &nl); i++) {
        if (decl) nn__jt_printf(t, ", NN__KCL_%.*s %.*s_%d", kl, kind, nl, nm, k);
        else nn__jt_printf(t, ", %.*s_%d", nl, nm, k);
    }
}

/* kernels/gemm.cl's source for launches [first, first + n) of g run as one launch of stages:
   the chains' item functions, then the kernel gemm_stages (its parameters the launches'
   arguments, in order, then lo_ and hi_: it runs the products [lo_, hi_), all of them but
   where each runs alone between its guards, NN_CL_GUARDS); NULL where out of memory */
static NN__MAYBE_UNUSED char *nn__gemm_stages_source(const nn_graph *g, int first, int n) {
    nn__jtext t = {NULL, 0, 0, 0}, decl = {NULL, 0, 0, 0};
    int k;
    nn__jt_puts(&t, "\n#line 1 \"a launch of stages (src/ops/matmul.c, nn__gemm_stages_source)\"\n");
    for (k = 0; k < n; k++) {
        const nn__launch *l = &g->launches[first + k];
        int kind = nn__gemm_stage_kind(l);
        char sfx[16];
        snprintf(sfx, sizeof sfx, "_%d", k);
        nn__gemm_stage_params(&decl, k, 1);
        if (kind == 5) nn__jt_printf(&decl, ", __global float *db_%d", k);
        if (kind == 6) {
            char *src = nn__fuse()->stage_text(g, l->node, sfx, 0), *par = nn__fuse()->stage_text(g, l->node, sfx, 1);
            if (src && par) {
                nn__jt_puts(&t, src);
                nn__jt_puts(&decl, par);
            } else {
                t.oom = 1;
            }
            NN_FREE(src);
            NN_FREE(par);
        }
    }
    nn__jt_puts(&t, "__kernel GEMM_ATTR void gemm_stages(");
    nn__jt_puts(&t, !decl.oom && decl.s ? decl.s + 2 : "");
    nn__jt_printf(&t, ", const int lo_, const int hi_)\n{\n    GEMM_LOCALS\n    int e_[%d];\n", n);
    t.oom = t.oom || decl.oom;
    NN_FREE(decl.s);
    nn__jt_puts(&t, "    e_[0] = vnx_0 * vny_0;\n");
    for (k = 1; k < n; k++) nn__jt_printf(&t, "    e_[%d] = e_[%d] + vnx_%d * vny_%d;\n", k, k - 1, k, k);
    nn__jt_puts(&t, "    const int b_ = lo_ > 0 ? e_[lo_ - 1] : 0, end_ = e_[hi_ - 1];\n"
                    "    for (;;) {\n        const int v_ = b_ + atomic_inc(claim_0);\n        if (v_ >= end_) break;\n");
    for (k = 0; k < n; k++) {
        const nn__launch *l = &g->launches[first + k];
        int kind = nn__gemm_stage_kind(l);
        nn__jtext args = {NULL, 0, 0, 0};
        nn__gemm_stage_params(&args, k, 0);
        if (kind == 5) nn__jt_printf(&args, ", db_%d", k);
        if (kind == 6) {
            char sfx[16], *a;
            snprintf(sfx, sizeof sfx, "_%d", k);
            a = nn__fuse()->stage_text(g, l->node, sfx, 2);
            if (a) nn__jt_puts(&args, a);
            else args.oom = 1;
            NN_FREE(a);
        }
        nn__jt_printf(&t, "        %sif (v_ < e_[%d]) {\n", k ? "else " : "", k);
        if (k) nn__jt_printf(&t, "            gemm_stage_wait(claim_0, e_[%d] - b_);\n", k - 1);
        if (kind == 6) nn__jt_printf(&t, "            gemm_epi_item_%d(", k);
        else nn__jt_printf(&t, "            %s_item(", l->kernel);
        nn__jt_puts(&t, !args.oom && args.s ? args.s + 2 : "");
        nn__jt_puts(&t, ", Bp, v_");
        if (k) nn__jt_printf(&t, " - e_[%d]", k - 1);
        nn__jt_puts(&t, ");\n        }\n");
        t.oom = t.oom || args.oom;
        NN_FREE(args.s);
    }
    nn__jt_puts(&t, "        gemm_stage_done(claim_0);\n    }\n    gemm_stages_end(claim_0);\n}\n");
    if (t.oom) {
        NN_FREE(t.s);
        return NULL;
    }
    return t.s;
}

/* ==== matmul: C [..., M, N] = op(A) [..., M, K] op(B) [..., K, N], torch.matmul: a 1-D
   operand is a row or a column, batch dims broadcast, and a gradient sums over the dims
   its operand was broadcast along. nn_einsum's one-matmul specs and nn_linear_layer build it ==== */

/* How a matmul node sees each of its tensors (nn__matmul_attr.vec): a stack of matrices,
   or of row or column vectors (torch.matmul's 1-D operands, and the outputs and gradients
   that lose the 1 it prepends or appends). */
enum { NN__MM_MATRIX = 0, NN__MM_ROW = 1, NN__MM_COL = 2 };

/* A tensor as a batch of rows x cols matrices, stored contiguously (ld = cols). */
typedef struct nn__mview {
    int nb;                    /* batch dims */
    int64_t bd[NN_MAX_DIMS];   /* their extents */
    int64_t rows, cols;
} nn__mview;

static void nn__mm_view(const nn_shape *s, int vec, nn__mview *v) {
    int i, nd = s->ndim;
    v->nb = vec == NN__MM_MATRIX ? nd - 2 : nd - 1;
    if (v->nb < 0) v->nb = 0;
    for (i = 0; i < v->nb; i++) v->bd[i] = s->dim[i];
    v->rows = vec == NN__MM_ROW ? 1 : s->dim[vec == NN__MM_MATRIX ? nd - 2 : nd - 1];
    v->cols = vec == NN__MM_COL ? 1 : s->dim[nd - 1];
}

/* The products of a matmul node: for every index of the batch dims (outermost first,
   lexicographic), C[c] (+)= op(A)[a] op(B)[b] with element offsets sum(index * stride).
   A C stride of 0 sums over that dim (a gradient reduced to a broadcast operand): a C
   matrix takes its first product with beta 0 and adds the later ones in that order, the
   same on every backend. Dims of extent 1 are dropped and neighbours that step alike in
   all three merged; a batch that steps only A and C by whole matrices is folded into M,
   and a summed one that steps A^T and B by whole matrices into K (x [B, T, C] @ w [C, D]
   and its weight gradient are then one GEMM). */
typedef struct nn__mm_geom {
    int ta, tb, M, N, K, lda, ldb, ldc;
    int nd;
    int ext[NN_MAX_DIMS], sa[NN_MAX_DIMS], sb[NN_MAX_DIMS], sc[NN_MAX_DIMS];
} nn__mm_geom;

/* 0, or 1 when the inner dims differ, 2 when the batch dims do not broadcast. */
static int nn__mm_geom_make(const nn__mview *va, const nn__mview *vb, const nn__mview *vc, int ta, int tb,
                            nn__mm_geom *G) {
    int64_t M = ta ? va->cols : va->rows, Ka = ta ? va->rows : va->cols;
    int64_t Kb = tb ? vb->cols : vb->rows, N = tb ? vb->rows : vb->cols;
    int64_t acc_a = va->rows * va->cols, acc_b = vb->rows * vb->cols, acc_c = vc->rows * vc->cols;
    int nd = va->nb > vb->nb ? va->nb : vb->nb, i, j;
    int ext[NN_MAX_DIMS], sa[NN_MAX_DIMS], sb[NN_MAX_DIMS], sc[NN_MAX_DIMS];
    if (Ka != Kb) return 1;
    if (vc->nb > nd) nd = vc->nb;
    for (i = nd - 1; i >= 0; i--) { /* right-aligned, innermost first */
        int64_t ea = i - (nd - va->nb) >= 0 ? va->bd[i - (nd - va->nb)] : 1;
        int64_t eb = i - (nd - vb->nb) >= 0 ? vb->bd[i - (nd - vb->nb)] : 1;
        int64_t ec = i - (nd - vc->nb) >= 0 ? vc->bd[i - (nd - vc->nb)] : 1;
        int64_t e = ea > eb ? ea : eb;
        if ((ea != 1 && ea != e) || (eb != 1 && eb != e) || (ec != 1 && ec != e)) return 2;
        ext[i] = (int)e;
        sa[i] = ea == 1 ? 0 : (int)acc_a;
        sb[i] = eb == 1 ? 0 : (int)acc_b;
        sc[i] = ec == 1 ? 0 : (int)acc_c;
        acc_a *= ea;
        acc_b *= eb;
        acc_c *= ec;
    }
    G->ta = ta;
    G->tb = tb;
    G->M = (int)M;
    G->N = (int)N;
    G->K = (int)Ka;
    G->lda = (int)va->cols;
    G->ldb = (int)vb->cols;
    G->ldc = (int)vc->cols;
    G->nd = 0;
    for (i = 0; i < nd; i++) { /* drop extents of 1, merge neighbours that step alike */
        if (ext[i] == 1) continue;
        j = G->nd - 1;
        if (j >= 0 && G->sa[j] == sa[i] * ext[i] && G->sb[j] == sb[i] * ext[i] && G->sc[j] == sc[i] * ext[i]) {
            G->ext[j] *= ext[i];
            G->sa[j] = sa[i];
            G->sb[j] = sb[i];
            G->sc[j] = sc[i];
            continue;
        }
        G->ext[G->nd] = ext[i];
        G->sa[G->nd] = sa[i];
        G->sb[G->nd] = sb[i];
        G->sc[G->nd] = sc[i];
        G->nd++;
    }
    while (G->nd > 0) {
        j = G->nd - 1;
        if (!ta && G->sb[j] == 0 && G->sa[j] == G->M * G->K && G->sc[j] == G->M * G->N && G->lda == G->K &&
            G->ldc == G->N)
            G->M *= G->ext[j]; /* rows of A and C follow on: one taller product */
        else if (ta && !tb && G->sc[j] == 0 && G->sa[j] == G->K * G->M && G->sb[j] == G->K * G->N &&
                 G->lda == G->M && G->ldb == G->N)
            G->K *= G->ext[j]; /* a sum over stacked rows of A and B: one deeper product */
        else
            break;
        G->nd--;
    }
    return 0;
}

static void nn__mm_geom_node(const nn_graph *g, const nn__node *n, nn__mm_geom *G) {
    nn__mview va, vb, vc;
    nn__mm_view(&g->nodes[n->in[0]].shape, n->a.matmul.vec[0], &va);
    nn__mm_view(&g->nodes[n->in[1]].shape, n->a.matmul.vec[1], &vb);
    nn__mm_view(&n->shape, n->a.matmul.vec[2], &vc);
    nn__mm_geom_make(&va, &vb, &vc, n->a.matmul.trans_a, n->a.matmul.trans_b, G);
}

/* A matmul node of out = op(a) op(b) seen through the views given, summed over the batch
   dims that out's view has as 1 or lacks (the builder and the autograd rule check shapes). */
/* A matmul node of C's dtype `dt`: the operands' (checked), or NN_F32 from 16-bit operands
   (a gradient of a policy's 16-bit copy of a float32 tensor: its float32 sums kept as they
   are, not rounded to 16 bits and widened again) */
static nn_tensor nn__matmul_op_dt(nn_graph *g, nn_dtype dt, int a, int b, int ta, int tb, int va, int vb, nn_shape out,
                                  int vc) {
    nn_tensor t = nn__op2(g, NN__OP_MATMUL, dt, out, a, b);
    if (t.id >= 0) {
        nn__matmul_attr *m = &g->nodes[t.id].a.matmul;
        m->trans_a = ta != 0;
        m->trans_b = tb != 0;
        m->vec[0] = va;
        m->vec[1] = vb;
        m->vec[2] = vc;
    }
    return t;
}

static nn_tensor nn__matmul_op(nn_graph *g, int a, int b, int ta, int tb, int va, int vb, nn_shape out, int vc) {
    return nn__matmul_op_dt(g, g->nodes[a].dtype, a, b, ta, tb, va, vb, out, vc);
}

static nn_tensor nn__matmul_build(nn_graph *g, nn_tensor a, nn_tensor b, int trans_a, int trans_b) {
    nn__node *na, *nb;
    nn__mview va, vb, vc;
    nn__mm_geom G;
    nn_shape out;
    int va_kind, vb_kind, vc_kind, i, nd, r;
    int64_t M, Ka, Kb, N;
    char sa[128], sb[128];
    na = nn__n(g, a);
    nb = nn__n(g, b);
    nn__shape_str(&na->shape, sa, sizeof sa);
    nn__shape_str(&nb->shape, sb, sizeof sb);
    if ((na->dtype != NN_F32 && !nn__dtype_half(na->dtype)) || (nb->dtype != NN_F32 && !nn__dtype_half(nb->dtype)))
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: a %s (%s) and b %s (%s): takes float32, bfloat16 or float16 operands",
                           sa, nn__dtype_name(na->dtype), sb, nn__dtype_name(nb->dtype));
    if (na->dtype != nb->dtype) /* PyTorch: "expected m1 and m2 to have the same dtype" */
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: a %s is %s and b %s is %s: the operands must have one dtype "
                           "(convert one with nn_to_dtype)", sa, nn__dtype_name(na->dtype), sb, nn__dtype_name(nb->dtype));
    /* torch.matmul: a 1-D a is a row [1, K] whose 1 the result drops, a 1-D b a column [K, 1];
       a vector has nothing to transpose, so its flag is ignored */
    va_kind = na->shape.ndim == 1 ? NN__MM_ROW : NN__MM_MATRIX;
    vb_kind = nb->shape.ndim == 1 ? NN__MM_COL : NN__MM_MATRIX;
    if (va_kind != NN__MM_MATRIX) trans_a = 0;
    if (vb_kind != NN__MM_MATRIX) trans_b = 0;
    nn__mm_view(&na->shape, va_kind, &va);
    nn__mm_view(&nb->shape, vb_kind, &vb);
    M = trans_a ? va.cols : va.rows;
    Ka = trans_a ? va.rows : va.cols;
    Kb = trans_b ? vb.cols : vb.rows;
    N = trans_b ? vb.rows : vb.cols;
    if (Ka != Kb)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: inner dims differ: a %s%s and b %s%s (%lld vs %lld)", sa,
                           trans_a ? " (transposed)" : "", sb, trans_b ? " (transposed)" : "", (long long)Ka,
                           (long long)Kb);
    if (M > INT32_MAX || N > INT32_MAX || Ka > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: a %s and b %s: dims beyond 2^31 are not supported", sa, sb);
    /* the batch dims broadcast (right-aligned, as elementwise ops do) */
    nd = va.nb > vb.nb ? va.nb : vb.nb;
    memset(&out, 0, sizeof out);
    for (i = 0; i < nd; i++) {
        int64_t ea = i - (nd - va.nb) >= 0 ? va.bd[i - (nd - va.nb)] : 1;
        int64_t eb = i - (nd - vb.nb) >= 0 ? vb.bd[i - (nd - vb.nb)] : 1;
        if (ea != eb && ea != 1 && eb != 1)
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: the batch dims of a %s and b %s do not broadcast (%lld vs %lld)",
                               sa, sb, (long long)ea, (long long)eb);
        out.dim[out.ndim++] = ea > eb ? ea : eb;
    }
    if (va_kind == NN__MM_MATRIX) out.dim[out.ndim++] = M;
    if (vb_kind == NN__MM_MATRIX) out.dim[out.ndim++] = N;
    if (out.ndim == 0) out.dim[out.ndim++] = 1; /* a dot product: [1] (nn_sum's scalar) */
    vc_kind = va_kind == NN__MM_ROW ? NN__MM_ROW : vb_kind == NN__MM_COL ? NN__MM_COL : NN__MM_MATRIX;
    nn__mm_view(&out, vc_kind, &vc);
    r = nn__mm_geom_make(&va, &vb, &vc, trans_a, trans_b, &G);
    if (r != 0) /* checked above; kept in step with the geometry the bodies use */
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: a %s and b %s do not multiply", sa, sb);
    return nn__matmul_op(g, a.id, b.id, trans_a, trans_b, va_kind, vb_kind, out, vc_kind);
}

NN_API nn_tensor nn_matmul(nn_graph *g, nn_tensor a, nn_tensor b, int trans_a, int trans_b) {
    nn_tensor in[2];
    nn_dtype dt;
    in[0] = a;
    in[1] = b;
    if (!nn__check(g, "nn_matmul", 2, in)) return nn__tensor(-1);
    dt = nn__policy_dtype(g);
    if (dt == NN_F32) return nn__matmul_build(g, a, b, trans_a, trans_b);
    /* the precision policy (nn_graph_desc.precision), torch.autocast's for matmul: float32
       operands converted (parameters stay float32: master weights), the product made and
       kept in 16 bits for the ops after it (nn__new_node converts it for float32 ops) */
    if (nn__n(g, a)->dtype == NN_F32) a = nn_to_dtype(g, a, dt);
    if (nn__n(g, b)->dtype == NN_F32) b = nn_to_dtype(g, b, dt);
    if (a.id < 0 || b.id < 0) return nn__tensor(-1);
    return nn__matmul_build(g, a, b, trans_a, trans_b);
}


/* nn_einsum: the two-operand specs that are one matmul. Labels are letters; the output's
   labels are the batch labels (leading in a, b and the output, in the same order), then at
   most one label of a alone (M) and one of b alone (N), in either order; a and b share at
   most one label besides (K, summed), in any place after the batch labels. */
NN_API nn_tensor nn_einsum(nn_graph *g, const char *spec, nn_tensor a, nn_tensor b) {
    nn_tensor in[2];
    const nn_shape *sh[2];
    char lab[3][NN_MAX_DIMS + 1], sa[128], sb[128];
    int n[3] = {0, 0, 0}, op = 0, explicit_out = 0, i, j, nbatch, ta = 0, tb = 0, swap = 0;
    int m_lab = 0, n_lab = 0, k_lab = 0;
    int64_t size[128];
    const char *p;
    in[0] = a;
    in[1] = b;
    if (!nn__check(g, "nn_einsum", 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_einsum", a, "a") || !nn__expect_f32(g, "nn_einsum", b, "b")) return nn__tensor(-1);
    if (!spec) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum: the spec is NULL");
    sh[0] = &nn__n(g, a)->shape;
    sh[1] = &nn__n(g, b)->shape;
    nn__shape_str(sh[0], sa, sizeof sa);
    nn__shape_str(sh[1], sb, sizeof sb);
    for (p = spec; *p; p++) { /* "ab,bc->ac" (spaces ignored) */
        if (*p == ' ') continue;
        if (*p == ',' && op == 0) op = 1;
        else if (*p == '-' && p[1] == '>' && op == 1 && !explicit_out) op = 2, explicit_out = 1, p++;
        else if (((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) && n[op] < NN_MAX_DIMS) {
            for (j = 0; j < n[op]; j++)
                if (lab[op][j] == *p)
                    return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum \"%s\": label %c repeats in one term (diagonals are not supported)", spec, *p);
            lab[op][n[op]++] = *p;
        } else
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum \"%s\": expected \"a,b->out\" of letters (at most %d each), not '%c'",
                               spec, NN_MAX_DIMS, *p);
    }
    if (op < 1) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum \"%s\": takes two operands (\"a,b->out\")", spec);
    for (i = 0; i < 2; i++)
        if (n[i] != sh[i]->ndim)
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_einsum \"%s\": %s has %d labels for a %d-D %s %s", spec, i ? "b" : "a", n[i],
                               sh[i]->ndim, i ? "b" : "a", i ? sb : sa);
    for (i = 0; i < 128; i++) size[i] = 0;
    for (i = 0; i < 2; i++)
        for (j = 0; j < n[i]; j++) {
            int c = (unsigned char)lab[i][j];
            if (size[c] && size[c] != sh[i]->dim[j])
                return nn__op_fail(g, NN_ERR_SHAPE, "nn_einsum \"%s\": label %c is %lld in one place and %lld in another (a %s, b %s)",
                                   spec, c, (long long)size[c], (long long)sh[i]->dim[j], sa, sb);
            size[c] = sh[i]->dim[j];
        }
    if (!explicit_out) /* implicit output: the labels seen once, in alphabetical order */
        for (i = 'A'; i <= 'z'; i++) {
            int seen = (int)(memchr(lab[0], i, (size_t)n[0]) != NULL) + (int)(memchr(lab[1], i, (size_t)n[1]) != NULL);
            if (seen == 1 && n[2] < NN_MAX_DIMS) lab[2][n[2]++] = (char)i;
        }
    for (j = 0; j < n[2]; j++) {
        int c = (unsigned char)lab[2][j], in_a = memchr(lab[0], c, (size_t)n[0]) != NULL, in_b = memchr(lab[1], c, (size_t)n[1]) != NULL, k;
        for (k = 0; k < j; k++)
            if (lab[2][k] == c) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum \"%s\": label %c repeats in the output", spec, c);
        if (!in_a && !in_b) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum \"%s\": output label %c is in neither operand", spec, c);
    }
    /* the batch labels: the output's leading labels found in both operands, leading there too */
    for (nbatch = 0; nbatch < n[2] && memchr(lab[0], lab[2][nbatch], (size_t)n[0]) && memchr(lab[1], lab[2][nbatch], (size_t)n[1]); nbatch++)
        if (nbatch >= n[0] || nbatch >= n[1] || lab[0][nbatch] != lab[2][nbatch] || lab[1][nbatch] != lab[2][nbatch])
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                               "nn_einsum \"%s\": the labels shared by a, b and the output must lead all three, in the same order (not supported otherwise)", spec);
    for (i = 0; i < 2; i++)
        for (j = nbatch; j < n[i]; j++) {
            int c = (unsigned char)lab[i][j], in_o = memchr(lab[2], c, (size_t)n[2]) != NULL;
            int in_other = memchr(lab[1 - i], c, (size_t)n[1 - i]) != NULL;
            if (in_o && in_other)
                return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum \"%s\": batch label %c must lead a, b and the output (not supported otherwise)", spec, c);
            if (!in_o && !in_other)
                return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum \"%s\": label %c of %s alone is summed (not supported: nn_sum it first)", spec, c, i ? "b" : "a");
            if (in_other) { /* K */
                if (k_lab && k_lab != c)
                    return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum \"%s\": sums over more than one label (not supported)", spec);
                k_lab = c;
                if (i == 0) ta = j == nbatch && n[0] == nbatch + 2;
                else tb = j == n[1] - 1 && n[1] == nbatch + 2;
            } else if (i == 0) {
                if (m_lab) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum \"%s\": a keeps more than one label (not supported)", spec);
                m_lab = c;
            } else {
                if (n_lab) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_einsum \"%s\": b keeps more than one label (not supported)", spec);
                n_lab = c;
            }
        }
    if (!k_lab || (nbatch > 0 && (!m_lab || !n_lab)) || (nbatch == 0 && !m_lab && n[0] != 1) || (nbatch == 0 && !n_lab && n[1] != 1))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                           "nn_einsum \"%s\" (a %s, b %s): not a single matmul (outer products, and batched vector products, are not supported)",
                           spec, sa, sb);
    if (m_lab && n_lab) swap = lab[2][nbatch] == n_lab; /* out [.., N, M] = (b^T a^T) */
    if (swap) return nn_matmul(g, b, a, !tb, !ta);
    return nn_matmul(g, a, b, ta, tb);
}


NN_API nn_tensor nn_linear_layer(nn_graph *g, nn_tensor x, int64_t out_features, const nn_linear_desc *desc, const char *name) {
    char wn[256], bn[256];
    nn_tensor w, b, y;
    nn_init init;
    int64_t in_features;
    if (!nn__check(g, "nn_linear_layer", 1, &x) || !nn__expect_f32(g, "nn_linear_layer", x, "x")) return nn__tensor(-1);
    if (nn__n(g, x)->shape.ndim != 2) {
        char s[128];
        nn__shape_str(&nn__n(g, x)->shape, s, sizeof s);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_linear_layer %s: x %s must be 2-D [B, in]", name ? name : "", s);
    }
    if (!name || !name[0] || strlen(name) > 200) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_linear_layer: needs a name (at most 200 chars)");
    if (out_features < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_linear_layer %s: out_features %lld is not >= 1", name, (long long)out_features);
    in_features = nn__n(g, x)->shape.dim[1];
    /* nn.Linear: kaiming_uniform(a=sqrt(5)) for the weight is U(+-1/sqrt(in)), the bias too */
    init.kind = NN_INIT_UNIFORM;
    init.a = (float)(-1.0 / sqrt((double)in_features));
    init.b = -init.a;
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    w = nn_param(g, wn, nn_shape2(out_features, in_features), init);
    y = nn_matmul(g, x, w, 0, 1);
    if (desc && desc->no_bias) return y;
    b = nn_param(g, bn, nn_shape1(out_features), init);
    /* F.linear under autocast: the bias converted too, the output in the policy's type */
    if (y.id >= 0 && nn__dtype_half(nn__n(g, y)->dtype) && nn__policy_dtype(g) == nn__n(g, y)->dtype)
        b = nn_to_dtype(g, b, nn__n(g, y)->dtype);
    return nn_add(g, y, b);
}

/* The gradients of C = op(A) op(B) through the same views, each reduced to its operand's
   batch dims where they were broadcast (nn__matmul_op sums over them). */
/* The gradient of an operand that is a policy's 16-bit copy of a float32 tensor
   (nn__f32_source) is a float32 matmul straight into that tensor: the same float32 sums, and
   no 16-bit tensor of the weight's size. Else the operand's, of its dtype. */
static int nn__mm_grad_target(const nn_graph *g, int x, nn_dtype *dt) {
    int src = nn__f32_source(g, x);
    *dt = src >= 0 ? NN_F32 : g->nodes[x].dtype;
    return src >= 0 ? src : x;
}

static void nn__grad_matmul(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    nn_dtype dt;
    int ta = n.a.matmul.trans_a, tb = n.a.matmul.trans_b, to;
    int vA = n.a.matmul.vec[0], vB = n.a.matmul.vec[1], vY = n.a.matmul.vec[2];
    if (ga) {
        nn_shape sh = g->nodes[a].shape;
        to = nn__mm_grad_target(g, a, &dt);
        if (!ta) t = nn__matmul_op_dt(g, dt, gy.id, b, 0, !tb, vY, vB, sh, vA);  /* dA = dC op(B)^T */
        else t = nn__matmul_op_dt(g, dt, b, gy.id, tb, 1, vB, vY, sh, vA);       /* dA = op(B) dC^T */
        nn__acc_grad(g, to, t);
    }
    if (gb) {
        nn_shape sh = g->nodes[b].shape;
        to = nn__mm_grad_target(g, b, &dt);
        if (!tb) t = nn__matmul_op_dt(g, dt, a, gy.id, !ta, 0, vA, vY, sh, vB);  /* dB = op(A)^T dC */
        else t = nn__matmul_op_dt(g, dt, gy.id, a, 1, ta, vY, vA, sh, vB);       /* dB = dC^T op(A) */
        nn__acc_grad(g, to, t);
    }
}

/* The products of G over batch dims [0, nd) of it, split into the dims that step C (kept)
   and those that sum into it (summed); offsets of the kept index `c` and the summed index
   `r` (each lexicographic over its dims, outermost first). */
typedef struct nn__mm_split {
    int n_keep, n_sum;
    int keep[NN_MAX_DIMS], sum[NN_MAX_DIMS];
    int64_t n_c, n_r;             /* C matrices; products summed into each */
} nn__mm_split;

static void nn__mm_split_make(const nn__mm_geom *G, nn__mm_split *S) {
    int i;
    S->n_keep = S->n_sum = 0;
    S->n_c = S->n_r = 1;
    for (i = 0; i < G->nd; i++) {
        if (G->sc[i] != 0) S->keep[S->n_keep++] = i, S->n_c *= G->ext[i];
        else S->sum[S->n_sum++] = i, S->n_r *= G->ext[i];
    }
}

/* Devices sum a gradient over more broadcast products than this by launches that add onto
   C in turn; beyond it, every product goes to scratch in one batched launch and a fixed-order
   sum (elementwise.cl's sum_leading) makes C. */
#define NN__MM_SUM_LAUNCHES 4
enum { NN__MM_ALGO_ACCUMULATE = 0, NN__MM_ALGO_SCRATCH = 1 };


static void nn__plan_matmul(nn_graph *g, nn__node *n) {
    nn__mm_geom G;
    nn__mm_split S;
    int64_t floats;
    n->algo = NN__MM_ALGO_ACCUMULATE;
    n->scratch = 0;
    if (nn__dtype_half(n->dtype)) { /* 16-bit C: its products summed in float32 scratch, rounded once */
        n->scratch = n->numel;
        return;
    }
    if (nn__dtype_half(g->nodes[n->in[0]].dtype)) return; /* 16-bit operands, float32 C: summed in C */
    if (g->ctx->backend->host_memory) return; /* the CPU body adds in place */
    nn__mm_geom_node(g, n, &G);
    nn__mm_split_make(&G, &S);
    if (S.n_r <= NN__MM_SUM_LAUNCHES) return;
    floats = S.n_c * S.n_r * G.M * G.N;
    if (floats >= (int64_t)1 << 31 || (uint64_t)floats * 4 > (uint64_t)g->ctx->dev.max_alloc / 2) return;
    n->algo = NN__MM_ALGO_SCRATCH;
    n->scratch = floats;
}

/* Offsets of index x over the dims listed (innermost last) into A, B and C. */
static void nn__mm_offsets(const nn__mm_geom *G, const int *dims, int n_dims, int64_t x, int64_t *oa, int64_t *ob,
                           int64_t *oc) {
    int k;
    for (k = n_dims - 1; k >= 0; k--) {
        int d = dims[k];
        int64_t e = x % G->ext[d];
        x /= G->ext[d];
        *oa += e * G->sa[d];
        *ob += e * G->sb[d];
        *oc += e * G->sc[d];
    }
}

typedef struct nn__mm_cpu_job {
    const nn__mm_geom *G;
    const nn__mm_split *S;
    const void *A, *B;    /* float32, or 16-bit of dtype */
    nn_dtype dtype;
    float *C;
    nn__threadpool *pool; /* for each product's GEMM (NULL when the batches are threaded) */
    int64_t per_task;     /* C matrices per task */
} nn__mm_cpu_job;

/* C matrices [t * per_task, ...) of the job: each takes its products in the summed dims'
   order, the first with beta 0. */
static void nn__mm_cpu_task(void *arg, int t, int n_tasks) {
    const nn__mm_cpu_job *J = (const nn__mm_cpu_job *)arg;
    const nn__mm_geom *G = J->G;
    const nn__mm_split *S = J->S;
    int64_t c0 = (int64_t)t * J->per_task, c1 = c0 + J->per_task, c, r;
    nn__gemm_ws ws;
    (void)n_tasks;
    ws.p = NULL;
    ws.bytes = 0;
    if (c1 > S->n_c) c1 = S->n_c;
    for (c = c0; c < c1; c++) {
        int64_t ka = 0, kb = 0, kc = 0;
        nn__mm_offsets(G, S->keep, S->n_keep, c, &ka, &kb, &kc);
        for (r = 0; r < S->n_r; r++) {
            int64_t oa = ka, ob = kb, oc = kc;
            nn__mm_offsets(G, S->sum, S->n_sum, r, &oa, &ob, &oc);
            if (nn__dtype_half(J->dtype) && J->pool)
                (J->dtype == NN_BF16 ? nn__cpu_gemm_bf16 : nn__cpu_gemm_f16)(
                    J->pool, G->ta, G->tb, G->M, G->N, G->K, 1.0f, (const uint16_t *)J->A + oa, G->lda,
                    (const uint16_t *)J->B + ob, G->ldb, r == 0 ? 0.0f : 1.0f, J->C + oc, G->ldc);
            else if (nn__dtype_half(J->dtype)) /* this thread, its workspace kept across the task's products */
                nn__cpu_gemm16_ws(J->dtype == NN_BF16 ? NN__G16_BF16 : NN__G16_F16, &ws, G->ta, G->tb, G->M, G->N, G->K,
                                  1.0f, (const uint16_t *)J->A + oa, G->lda, (const uint16_t *)J->B + ob, G->ldb,
                                  r == 0 ? 0.0f : 1.0f, J->C + oc, G->ldc);
            else if (J->pool)
                nn__sgemm(J->pool, G->ta, G->tb, G->M, G->N, G->K, 1.0f, (const float *)J->A + oa, G->lda,
                          (const float *)J->B + ob, G->ldb, r == 0 ? 0.0f : 1.0f, J->C + oc, G->ldc);
            else
                nn__sgemm_ws(&ws, G->ta, G->tb, G->M, G->N, G->K, 1.0f, (const float *)J->A + oa, G->lda,
                             (const float *)J->B + ob, G->ldb, r == 0 ? 0.0f : 1.0f, J->C + oc, G->ldc);
        }
    }
    NN_FREE(ws.p);
}

/* 16-bit operands (n->dtype NN_BF16 or NN_F16) go to nn__cpu_gemm_bf16 / _f16 with C in
   the float32 scratch, rounded into the output once all its products are summed. */
static nn_result nn__cpu_matmul(nn_graph *g, nn__node *n) {
    const void *A = g->nodes[n->in[0]].buf.host, *B = g->nodes[n->in[1]].buf.host;
    nn_dtype in_dt = g->nodes[n->in[0]].dtype; /* the operands' storage: n->dtype, or 16 bits with C float32 */
    int half = nn__dtype_half(n->dtype);
    float *C = half ? n->scratch_buf.host : n->buf.host;
    nn__threadpool *pool = g->ctx->threads;
    nn__mm_geom G;
    nn__mm_split S;
    nn__mm_cpu_job J;
    int n_thr = nn__threadpool_size(pool);
    nn__mm_geom_node(g, n, &G);
    J.G = &G;
    J.S = &S;
    J.A = A;
    J.B = B;
    J.dtype = in_dt;
    J.C = C;
    nn__mm_split_make(&G, &S);
    if (G.nd == 0) { /* one product (every 2-D matmul) */
        J.pool = pool;
        J.per_task = 1;
        nn__mm_cpu_task(&J, 0, 1);
        if (half) nn__cast(pool, C, NN_F32, n->buf.host, n->dtype, n->numel);
        return NN_OK;
    }
    /* threads over the C matrices when there are enough to go round (each matrix's sum stays
       on one thread, in order), or when one product is too small to thread on its own; else
       each product is threaded inside the GEMM */
    if (n_thr > 1 && S.n_c > 1 && (double)G.M * G.N * G.K * (double)S.n_c * (double)S.n_r >= nn__gemm_mt_min_macs &&
        (S.n_c >= 2 * n_thr || (double)G.M * G.N * G.K < nn__gemm_mt_min_macs)) {
        int64_t tasks = S.n_c < (int64_t)n_thr * 4 ? S.n_c : (int64_t)n_thr * 4;
        J.pool = NULL;
        J.per_task = (S.n_c + tasks - 1) / tasks;
        nn__threadpool_run(pool, nn__mm_cpu_task, &J, (int)((S.n_c + J.per_task - 1) / J.per_task));
    } else {
        J.pool = pool;
        J.per_task = S.n_c;
        nn__mm_cpu_task(&J, 0, 1);
    }
    if (half) nn__cast(pool, C, NN_F32, n->buf.host, n->dtype, n->numel);
    return NN_OK;
}

/* Matmul n, one float32 product (nn__matmul_bias_ok), into out with bias [N] added to each
   row in the GEMM's epilogue: a linear layer's bias add run with its product
   (src/ops/fuse.c), the add's bits. */
static int nn__matmul_bias_ok(const nn_graph *g, const nn__node *n) {
    nn__mm_geom G;
    if (n->op != NN__OP_MATMUL || n->dtype != NN_F32 || g->nodes[n->in[0]].dtype != NN_F32 ||
        g->nodes[n->in[1]].dtype != NN_F32 || n->check)
        return 0;
    nn__mm_geom_node(g, n, &G);
    return G.nd == 0 && (int64_t)G.M * G.N == n->numel && G.ldc == G.N;
}
/* the epilogue: bias[j0..j0+n) added to each of the m rows (the add's row loop) */
static void nn__matmul_bias_epi(const nn__gemm_epi *e, float *c, size_t ldc, int i0, int m, int j0, int n) {
    int i;
    (void)i0;
    for (i = 0; i < m; i++) nn__binary_row(NN__B_ADD, c + (size_t)i * ldc, c + (size_t)i * ldc, 1, e->bias + j0, 1, n);
}
static void nn__cpu_matmul_bias(nn_graph *g, const nn__node *n, float *out, const float *bias) {
    nn__mm_geom G;
    nn__gemm_epi e;
    nn__mm_geom_node(g, n, &G);
    e.fn = nn__matmul_bias_epi;
    e.bias = bias;
    nn__sgemm_epi(g->ctx->threads, G.ta, G.tb, G.M, G.N, G.K, 1.0f, g->nodes[n->in[0]].buf.host, G.lda,
                  g->nodes[n->in[1]].buf.host, G.ldb, 0.0f, out, G.ldc, &e);
}

/* A 16-bit matmul's float32 scratch rounded into its output (cast.cl's cast_store). */
static nn_result nn__launch_matmul_round(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    NN__KSTART(cast_store, "cast", "cast_store", n->numel);
    l->store = n->dtype;
    k.x = &n->scratch_buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    return nn__kargs_cast_store(l, &k);
}

/* Operand x of a kernel on a device: a gather of rows that src/ops/fuse.c folded into its
   readers (nn__fuse_gather, a product's operand; nn__fuse_gather_labels, softmax cross-entropy's
   labels: fused -1) is read in place, the gathered data's buffer with its index and rows
   (kernels/gemm_args.h's ra, rna; loss.h's nn_label_at); any other, its own buffer and no index
   (the index argument set to that buffer, which the kernel does not read). */
static void nn__rows_operand(const nn_graph *g, int x, const nn__buf **buf, const nn__buf **idx, int *rows) {
    const nn__node *n = &g->nodes[x];
    if (n->op == NN__OP_GATHER_ROWS && n->fused == -1) {
        *buf = &g->nodes[n->in[0]].buf;
        *idx = &g->nodes[n->in[1]].buf;
        *rows = (int)g->nodes[n->in[0]].shape.dim[0];
        return;
    }
    *buf = &n->buf;
    *idx = &n->buf;
    *rows = 0;
}

/* The launch of matmul n's single product (a 2-D matmul: nn__mm_geom's nd 0) into C, recorded
   for node id: the plain kernel of its transposes, or `kernel` of kernels/gemm.cl (NULL: the
   plain one; src/ops/fuse.c's gemm_epi, which takes the same arguments first) with the same
   geometry; *out the launch, its arguments the product's. */
static nn_result nn__launch_matmul_one(nn_graph *g, int id, const nn__node *n, const char *kernel, const nn__buf *C,
                                       nn__launch **out) {
    nn__mm_geom G;
    nn__gemm_plan plan;
    nn__k_gemm k;
    nn_result r;
    nn__mm_geom_node(g, n, &G);
    nn__gemm_plan_make(&g->ctx->dev, G.ta, G.tb, G.M, G.N, G.K, &plan);
    if (kernel) plan.kernel = kernel;
    r = nn__launch_gemm_plan(g, id, &plan, out);
    if (r != NN_OK) return r;
    (*out)->store = g->nodes[n->in[0]].dtype; /* the operands' storage: n->dtype, or 16 bits with C float32 */
    memset(&k, 0, sizeof k);
    k.M = G.M;
    k.N = G.N;
    k.K = G.K;
    nn__rows_operand(g, n->in[0], &k.A, &k.ra, &k.rna);
    k.lda = G.lda;
    nn__rows_operand(g, n->in[1], &k.B, &k.rb, &k.rnb);
    k.ldb = G.ldb;
    k.C = C;
    k.ldc = G.ldc;
    k.alpha = 1.0f;
    k.beta = 0.0f;
    k.claim = &g->claim;
    k.vnx = plan.vnx;
    k.vny = plan.vny;
    return nn__kargs_gemm(*out, &k);
}

/* One launch of the plain kernels for a single product; else batched launches of the two
   largest dims that may run at once (those stepping C, or any of them into scratch) for
   every index of the other dims, in order: C takes its first product with beta 0 and adds
   the later ones of the summed dims (beta 1); into scratch, every product has its own
   matrix (summed dims outermost) and sum_leading adds them up in order. */
/* 16-bit operands: the kernels built for their storage type (A and B read through
   kernels/storage.h) write C in the float32 scratch (beta 1 adding the later products), and
   cast.cl's cast_store rounds it into the output. */
static nn_result nn__launch_matmul(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn_dtype in_dt = g->nodes[n->in[0]].dtype; /* the operands' storage: n->dtype, or 16 bits with C float32 */
    int half = nn__dtype_half(n->dtype);
    const nn__buf *A = &g->nodes[n->in[0]].buf, *B = &g->nodes[n->in[1]].buf, *C = half ? &n->scratch_buf : &n->buf;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    nn__mm_geom G;
    nn__mm_split S;
    int to_scratch = !half && n->algo == NN__MM_ALGO_SCRATCH && n->scratch > 0;
    int in_dims[2], n_in = 0, host[NN_MAX_DIMS], n_host = 0, i, k, outer = 1, inner = 1;
    int sc[NN_MAX_DIMS];
    int64_t n_launch = 1, x, step_keep, step_sum;
    nn__mm_geom_node(g, n, &G);
    if (G.nd == 0 && n->a.matmul.bsum > 0 && !half) { /* with the bias's gradient: gemm_tn_bsum */
        r = nn__launch_matmul_one(g, id, n, "gemm_tn_bsum", C, &l);
        return r == NN_OK ? nn__karg_buf(l, "db", &g->nodes[n->a.matmul.bsum].buf) : r;
    }
    if (G.nd == 0) {
        r = nn__launch_matmul_one(g, id, n, NULL, C, &l);
        return r == NN_OK && half ? nn__launch_matmul_round(g, id) : r;
    }
    nn__mm_split_make(&G, &S);
    /* C's strides: its own, or the scratch's [summed..., kept..., M, N] */
    step_keep = (int64_t)G.M * G.N;
    step_sum = step_keep * S.n_c;
    for (i = G.nd - 1; i >= 0; i--) {
        if (!to_scratch) sc[i] = G.sc[i];
        else if (G.sc[i] != 0) sc[i] = (int)step_keep, step_keep *= G.ext[i];
        else sc[i] = (int)step_sum, step_sum *= G.ext[i];
    }
    for (k = 0; k < 2; k++) { /* the two largest dims that may run at once, inner the later */
        int best = -1;
        for (i = 0; i < G.nd; i++)
            if (sc[i] != 0 && !(n_in > 0 && in_dims[0] == i) && (best < 0 || G.ext[i] > G.ext[best])) best = i;
        if (best >= 0) in_dims[n_in++] = best;
    }
    if (n_in == 2 && in_dims[0] < in_dims[1]) {
        int t = in_dims[0];
        in_dims[0] = in_dims[1];
        in_dims[1] = t;
    }
    for (i = 0; i < G.nd; i++)
        if (!((n_in > 0 && in_dims[0] == i) || (n_in > 1 && in_dims[1] == i))) host[n_host++] = i, n_launch *= G.ext[i];
    if (n_in > 0) inner = G.ext[in_dims[0]];
    if (n_in > 1) outer = G.ext[in_dims[1]];
    for (x = 0; x < n_launch && r == NN_OK; x++) {
        int64_t oa = 0, ob = 0, oc = 0, rest = x;
        int pa[4], pb[4], pc[4], first = 1;
        for (k = n_host - 1; k >= 0; k--) {
            int d = host[k];
            int64_t e = rest % G.ext[d];
            rest /= G.ext[d];
            oa += e * G.sa[d];
            ob += e * G.sb[d];
            oc += e * sc[d];
            if (G.sc[d] == 0 && e != 0) first = 0;
        }
        pa[0] = G.lda, pa[1] = (int)oa, pa[2] = n_in > 1 ? G.sa[in_dims[1]] : 0, pa[3] = n_in > 0 ? G.sa[in_dims[0]] : 0;
        pb[0] = G.ldb, pb[1] = (int)ob, pb[2] = n_in > 1 ? G.sb[in_dims[1]] : 0, pb[3] = n_in > 0 ? G.sb[in_dims[0]] : 0;
        pc[0] = G.ldc, pc[1] = (int)oc, pc[2] = n_in > 1 ? sc[in_dims[1]] : 0, pc[3] = n_in > 0 ? sc[in_dims[0]] : 0;
        r = nn__launch_gemm_store(g, id, in_dt, G.ta, G.tb, G.M, G.N, G.K, A, pa, B, pb,
                                  to_scratch ? &n->scratch_buf : C, pc, outer, inner, first || to_scratch ? 0.0f : 1.0f);
    }
    if (r == NN_OK && to_scratch) {
        int nb = (int)(S.n_c * G.M * G.N);
        nn__k_sum_leading k;
        r = nn__launch_kernel(g, id, "elementwise", "sum_leading", (size_t)nb, &l);
        if (r != NN_OK) return r;
        memset(&k, 0, sizeof k);
        k.x = &n->scratch_buf;
        k.y = C;
        k.n = (int)(S.n_r * nb);
        k.nb = nb;
        k.off = 0;
        r = nn__kargs_sum_leading(l, &k);
    }
    if (r == NN_OK && half) r = nn__launch_matmul_round(g, id);
    return r;
}
