/* The matmul ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../nn_internal.h"
#include "../nn_ops.h"

NN_API nn_tensor nn_matmul(nn_graph *g, nn_tensor a, nn_tensor b, int trans_a, int trans_b) {
    nn_tensor in[2], t;
    nn__node *na, *nb;
    int64_t M, Ka, Kb, N;
    in[0] = a;
    in[1] = b;
    if (!nn__check(g, "nn_matmul", 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_matmul", a, "a") || !nn__expect_f32(g, "nn_matmul", b, "b")) return nn__tensor(-1);
    na = nn__n(g, a);
    nb = nn__n(g, b);
    if (na->shape.ndim != 2 || nb->shape.ndim != 2) {
        char sa[128], sb[128];
        nn__shape_str(&na->shape, sa, sizeof sa);
        nn__shape_str(&nb->shape, sb, sizeof sb);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: a %s and b %s must both be 2-D", sa, sb);
    }
    M = trans_a ? na->shape.dim[1] : na->shape.dim[0];
    Ka = trans_a ? na->shape.dim[0] : na->shape.dim[1];
    Kb = trans_b ? nb->shape.dim[1] : nb->shape.dim[0];
    N = trans_b ? nb->shape.dim[0] : nb->shape.dim[1];
    if (Ka != Kb) {
        char sa[128], sb[128];
        nn__shape_str(&na->shape, sa, sizeof sa);
        nn__shape_str(&nb->shape, sb, sizeof sb);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: inner dims differ: a %s%s and b %s%s", sa,
                           trans_a ? " (transposed)" : "", sb, trans_b ? " (transposed)" : "");
    }
    if (M > INT32_MAX || N > INT32_MAX || Ka > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_matmul: dims beyond 2^31 are not supported");
    t = nn__op2(g, NN__OP_MATMUL, NN_F32, nn_shape2(M, N), a.id, b.id);
    if (t.id >= 0) {
        g->nodes[t.id].i[0] = trans_a != 0;
        g->nodes[t.id].i[1] = trans_b != 0;
    }
    return t;
}


NN_API nn_tensor nn_dense(nn_graph *g, nn_tensor x, int64_t out_features, const nn_dense_desc *desc, const char *name) {
    char wn[256], bn[256];
    nn_tensor w, b, y;
    nn_init init;
    int64_t in_features;
    if (!nn__check(g, "nn_dense", 1, &x) || !nn__expect_f32(g, "nn_dense", x, "x")) return nn__tensor(-1);
    if (nn__n(g, x)->shape.ndim != 2) {
        char s[128];
        nn__shape_str(&nn__n(g, x)->shape, s, sizeof s);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_dense %s: x %s must be 2-D [B, in]", name ? name : "", s);
    }
    if (!name || !name[0] || strlen(name) > 200) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_dense: needs a name (at most 200 chars)");
    if (out_features < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_dense %s: out_features %lld is not >= 1", name, (long long)out_features);
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
    return nn_add(g, y, b);
}


/* ---- autograd rules ---- */

static void nn__grad_matmul(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    {
    int ta = n.i[0], tb = n.i[1];
    nn_tensor A = nn__tensor(a), B = nn__tensor(b);
    if (ga) {
        if (!ta) t = nn_matmul(g, gy, B, 0, !tb);
        else t = tb ? nn_matmul(g, B, gy, 1, 1) : nn_matmul(g, B, gy, 0, 1);
        nn__acc_grad(g, a, t);
    }
    if (gb) {
        if (!tb) t = ta ? nn_matmul(g, A, gy, 0, 0) : nn_matmul(g, A, gy, 1, 0);
        else t = ta ? nn_matmul(g, gy, A, 1, 1) : nn_matmul(g, gy, A, 1, 0);
        nn__acc_grad(g, b, t);
    }
    return;
}
}

/* ---- CPU bodies ---- */

static nn_result nn__cpu_matmul(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    {
    nn__node *a = &g->nodes[in[0]], *b = &g->nodes[in[1]];
    int M = (int)n->shape.dim[0], Nn = (int)n->shape.dim[1];
    int K = (int)(n->i[0] ? a->shape.dim[0] : a->shape.dim[1]);
    nn__sgemm(g->ctx->threads, n->i[0], n->i[1], M, Nn, K, 1.0f, a->buf.host, (int)a->shape.dim[1], b->buf.host,
              (int)b->shape.dim[1], 0.0f, y, Nn);
    return NN_OK;
}
}

/* A launch of kernels/gemm.cl with the geometry of a plan (nn_gemm_plan.c) */
static nn_result nn__launch_gemm_plan(nn_graph *g, int id, const nn__gemm_plan *plan, nn__launch **l) {
    nn_result r = nn__launch_add(g, id, "gemm", plan->kernel, 1, l);
    if (r != NN_OK) return r;
    (*l)->dims = plan->dims;
    memcpy((*l)->gws, plan->gws, sizeof (*l)->gws);
    memcpy((*l)->lws, plan->lws, sizeof (*l)->lws);
    (*l)->use_lws = plan->lws[0] != 0;
    return NN_OK;
}

/* One launch of a batched GEMM (kernels/gemm.cl): outer*inner products of op(A) [M, K] *
   op(B) [K, Nc]; a, b and c are {ld, offset, outer stride, inner stride} in floats. */
static nn_result nn__launch_gemm(nn_graph *g, int id, int ta, int tb, int M, int Nc, int K, const nn__buf *A, const int *a,
                                 const nn__buf *B, const int *b, const nn__buf *C, const int *c, int outer, int inner) {
    nn_context *ctx = g->ctx;
    nn__gemm_plan plan;
    nn__launch *l = NULL;
    nn_result r;
    nn__gemm_plan_batched(ctx->dev.cpu_tuned, ctx->dev.max_wg, ctx->dev.local_mem, ta, tb, M, Nc, outer * inner, &plan);
    r = nn__launch_gemm_plan(g, id, &plan, &l);
    if (r != NN_OK) return r;
    return nn__args(l, "iiimimimiffiiiiiiiiii", M, Nc, K, A, a[0], B, b[0], C, c[0], 1.0, 0.0, inner,
                       a[1], a[2], a[3], b[1], b[2], b[3], c[1], c[2], c[3]);
}

/* ---- device plans: launches of kernels/FAMILY.cl ---- */

static nn_result nn__dev_matmul(nn_graph *g, int id) {
    nn_context *ctx = g->ctx;
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    {
    nn__node *a = &g->nodes[in[0]], *b = &g->nodes[in[1]];
    int M = (int)n->shape.dim[0], Nn = (int)n->shape.dim[1];
    int K = (int)(n->i[0] ? a->shape.dim[0] : a->shape.dim[1]);
    nn__gemm_plan plan;
    nn__gemm_plan_make(ctx->dev.cpu_tuned, ctx->dev.max_wg, ctx->dev.local_mem, n->i[0], n->i[1], M, Nn, K, &plan);
    r = nn__launch_gemm_plan(g, id, &plan, &l);
    if (r != NN_OK) return r;
    return nn__args(l, "iiimimimiff", M, Nn, K, &a->buf, (int)a->shape.dim[1], &b->buf,
                       (int)b->shape.dim[1], y, Nn, 1.0, 0.0);
}
}
