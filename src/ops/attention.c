/* The attention family: fused scaled dot-product attention (flash attention), forward and
   backward, one block: builder, gradient rule, CPU bodies (src/cpu/attention.c), kernel
   launches (kernels/attention.cl).

   ATTENTION (q, k, v[, mask][, key padding mask]) -> a flat [B*H*Tq*Dv + B*H*Tq]: the output
   in q's layout with v's head dim Dv (q and k have D), then the log-sum-exp of each score row [B, H, Tq] (-inf for a row with no
   key alive). nn_attention returns the output part (nn_slice + nn_reshape), so the
   gradient reaching ATTENTION is [dO, 0]. The backward:
     ATTENTION_DELTA (packed, dpacked) -> [B*H*Tq]: delta_i = sum_d dO_id O_id
     ATTENTION_DQ    (q, k, v, packed, dpacked, delta[, masks]) -> q's shape
     ATTENTION_DKV   (the same) -> a flat [dK (k's shape), dV (v's shape)], sliced; when q
                     needs a gradient too, [dK, dV, dQ] (with_dq; ATTENTION_DQ then only
                     where k and v need none): the CPU computes the three in one pass
     ATTENTION_DMASK (the same) -> the additive mask's shape: dS summed over the dims the
                     mask broadcasts (only when the mask needs a gradient)
   each recomputing the scores tile by tile: P = exp(S - lse), dS = P (dP z - delta) with
   dP = dO v^T and z dropout's factor, dq = scale dS k, dk = scale dS^T q, dv = (P z)^T dO.
   No [Tq, Tk] matrix is stored. ==== */
#include "../base/internal.h"
#include "../base/registry.h"
#include "../../kernels/kargs.h"
#include "../../kernels/attention_args.h"

/* ==== shared by the family ==== */

/* input index of the additive/boolean mask and of the key padding mask in a node whose
   fixed inputs number nfixed */
static void nn__attn_set_ins(nn__attn_attr *a, int nfixed) {
    a->mask_in = a->mask_mode ? nfixed : 0;
    a->kpm_in = a->kpm_mode ? nfixed + (a->mask_mode ? 1 : 0) : 0;
}

static int64_t nn__attn_nO(const nn__attn_attr *a) { return (int64_t)a->B * a->H * a->Tq * a->Dv; }
static int64_t nn__attn_nK(const nn__attn_attr *a) { return (int64_t)a->B * a->Hkv * a->Tk * a->D; }
static int64_t nn__attn_nV(const nn__attn_attr *a) { return (int64_t)a->B * a->Hkv * a->Tk * a->Dv; }
static int64_t nn__attn_nQ(const nn__attn_attr *a) { return (int64_t)a->B * a->H * a->Tq * a->D; }

/* Where the log-sum-exp starts in ATTENTION's flat output of dtype dt, in elements: after
   the output; in 16-bit storage from the next even element, each value a float32 in two
   elements' room (kernels/attention.cl's NN_ATTN_LSE_OFF). */
static int64_t nn__attn_lse_off(const nn__attn_attr *a, nn_dtype dt) {
    int64_t n = nn__attn_nO(a);
    return nn__dtype_half(dt) ? n + (n & 1) : n;
}

/* the element strides over (batch, head, row) of a [B, heads, T, D] or [B, T, heads, D] */
static void nn__attn_strides(int layout, int heads, int T, int D, int64_t s[3]) {
    if (layout == NN_ATTN_BTHD) {
        s[0] = (int64_t)T * heads * D;
        s[1] = D;
        s[2] = (int64_t)heads * D;
    } else {
        s[0] = (int64_t)heads * T * D;
        s[1] = (int64_t)T * D;
        s[2] = D;
    }
}

/* the strides of operand i (0 q, 1 k, 2 v) of node attributes a: its own, or its view's
   (a row of T vrs[i] elements a batch, vrs[i] a row) */
static void nn__attn_opd_strides(const nn__attn_attr *a, int i, int64_t s[3]) {
    int T = i ? a->Tk : a->Tq, heads = i ? a->Hkv : a->H, D = i == 2 ? a->Dv : a->D;
    nn__attn_strides(a->layout, heads, T, D, s);
    if (a->vrs[i]) s[0] = (int64_t)T * a->vrs[i], s[2] = a->vrs[i];
}

/* ==== attention: y = softmax(q k^T scale + mask) v (torch.nn.functional.
   scaled_dot_product_attention), fused ==== */

NN_API nn_tensor nn_attention(nn_graph *g, nn_tensor q, nn_tensor k, nn_tensor v, const nn_attention_desc *desc) {
    return nn__attention(g, q, k, v, desc, 0);
}

static nn_tensor nn__attention(nn_graph *g, nn_tensor q, nn_tensor k, nn_tensor v, const nn_attention_desc *desc, int mask_hides) {
    static const nn_attention_desc zero = {0, 0.0f, 0.0f, 0, {0, 0}, {0, 0}, 0};
    const char *op = "nn_attention";
    nn_tensor in[3], x[5], packed, mask, kpm;
    const nn__node *nq, *nk, *nv;
    nn_dtype dt;
    nn_shape qshape;
    nn__attn_attr a;
    char sq[128], sk[128], sv[128];
    int hm, hp, nx = 3, i, id;
    int64_t total;
    if (!desc) desc = &zero;
    mask = desc->mask, kpm = desc->key_padding_mask;
    in[0] = q, in[1] = k, in[2] = v;
    if (!nn__check(g, op, 3, in)) return nn__tensor(-1);
    for (i = 0; i < 3; i++)
        if (nn__n(g, in[i])->dtype == NN_I32)
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: %s must be float32, bfloat16 or float16, not int32", op, i == 0 ? "q" : i == 1 ? "k" : "v");
    /* 16-bit q, k, v of one dtype: a 16-bit attention (output and gradients of that dtype,
       sums in float32). Mixed: refused as torch's scaled_dot_product_attention does, but
       under a policy, which converts the float32 ones to its type (autocast's rule) */
    dt = nn__n(g, q)->dtype;
    if (nn__n(g, k)->dtype != dt || nn__n(g, v)->dtype != dt) {
        if (nn__policy_dtype(g) == NN_F32)
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: q (%s), k (%s) and v (%s) must have one dtype", op, nn__dtype_name(dt),
                               nn__dtype_name(nn__n(g, k)->dtype), nn__dtype_name(nn__n(g, v)->dtype));
        dt = nn__policy_dtype(g);
        for (i = 0; i < 3; i++)
            if (nn__n(g, in[i])->dtype != dt && (in[i] = nn_to_dtype(g, in[i], dt)).id < 0) return nn__tensor(-1);
        q = in[0], k = in[1], v = in[2];
    }
    hm = nn__optional(g, op, desc->mask);
    hp = nn__optional(g, op, desc->key_padding_mask);
    if (hm < 0 || hp < 0) return nn__tensor(-1);
    if (hm && nn__dtype_half(nn__n(g, desc->mask)->dtype)) { /* masks are float32 or int32 */
        mask = nn_to_dtype(g, desc->mask, NN_F32);
        if (mask.id < 0) return nn__tensor(-1);
    }
    if (hp && nn__dtype_half(nn__n(g, desc->key_padding_mask)->dtype)) {
        kpm = nn_to_dtype(g, desc->key_padding_mask, NN_F32);
        if (kpm.id < 0) return nn__tensor(-1);
    }
    nq = nn__n(g, q), nk = nn__n(g, k), nv = nn__n(g, v);
    nn__shape_str(&nq->shape, sq, sizeof sq);
    nn__shape_str(&nk->shape, sk, sizeof sk);
    nn__shape_str(&nv->shape, sv, sizeof sv);
    if (desc->layout != NN_ATTN_BHTD && desc->layout != NN_ATTN_BTHD)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: layout %d is neither NN_ATTN_BHTD nor NN_ATTN_BTHD", op, desc->layout);
    if (nq->shape.ndim != 4 || nk->shape.ndim != 4 || nv->shape.ndim != 4)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: q %s, k %s and v %s must be 4-D", op, sq, sk, sv);
    memset(&a, 0, sizeof a);
    {
        int t = desc->layout == NN_ATTN_BTHD ? 1 : 2, hd = 3 - t; /* the T dim and the heads dim */
        a.B = (int)nq->shape.dim[0];
        a.H = (int)nq->shape.dim[hd];
        a.Tq = (int)nq->shape.dim[t];
        a.D = (int)nq->shape.dim[3];
        a.Hkv = (int)nk->shape.dim[hd];
        a.Tk = (int)nk->shape.dim[t];
        a.Dv = (int)nv->shape.dim[3];
        if (nk->shape.dim[0] != a.B || nv->shape.dim[0] != a.B || nk->shape.dim[3] != a.D || nv->shape.dim[hd] != a.Hkv ||
            nv->shape.dim[t] != a.Tk)
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: q %s, k %s and v %s disagree (batch, heads, key length or head dim)", op,
                               sq, sk, sv);
        if (a.H % a.Hkv != 0)
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: q's %d heads are not a multiple of k's %d (q %s, k %s)", op, a.H, a.Hkv, sq, sk);
        if (a.D > 256) return nn__op_fail(g, NN_ERR_SHAPE, "%s: head dim %d of q %s is over 256", op, a.D, sq);
        if (a.Dv > 256) return nn__op_fail(g, NN_ERR_SHAPE, "%s: head dim %d of v %s is over 256", op, a.Dv, sv);
    }
    total = nn__attn_lse_off(&a, dt) + (nn__dtype_half(dt) ? 2 : 1) * (int64_t)a.B * a.H * a.Tq;
    if (total > INT32_MAX || nn__attn_nK(&a) + nn__attn_nV(&a) > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: q %s and k %s are too large (2^31 elements)", op, sq, sk);
    if (!(desc->dropout >= 0.0f && desc->dropout < 1.0f))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: dropout = %g is outside [0, 1)", op, desc->dropout);
    if (desc->window < 0) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: window = %d is negative", op, desc->window);
    a.layout = desc->layout;
    a.causal = desc->causal != 0;
    a.window = desc->window;
    a.scale = nn__deff(desc->scale, 1.0f / sqrtf((float)a.D));
    a.p = g->eval ? 0.0f : desc->dropout;
    x[0] = q, x[1] = k, x[2] = v;
    if (hm) {
        const nn__node *m = nn__n(g, mask);
        int nd = m->shape.ndim, full[4];
        char sm[128];
        nn__shape_str(&m->shape, sm, sizeof sm);
        full[0] = a.B, full[1] = a.H, full[2] = a.Tq, full[3] = a.Tk;
        if (nd < 2 || nd > 4)
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: mask %s must have 2 to 4 dims [.., Tq, Tk]", op, sm);
        {
            int64_t st = 1;
            for (i = 3; i >= 0; i--) {
                int di = i - (4 - nd);
                int64_t sz = di >= 0 ? m->shape.dim[di] : 1;
                if (sz != 1 && sz != full[i])
                    return nn__op_fail(g, NN_ERR_SHAPE, "%s: mask %s does not broadcast to [B, H, Tq, Tk] = [%d, %d, %d, %d]", op,
                                       sm, a.B, a.H, a.Tq, a.Tk);
                a.ms[i] = sz == 1 ? 0 : (int)st;
                st *= sz;
            }
        }
        a.mask_mode = m->dtype == NN_I32 ? (mask_hides ? 3 : 2) : 1;
        x[nx++] = mask;
    }
    if (hp) {
        const nn__node *m = nn__n(g, kpm);
        char sm[128];
        nn__shape_str(&m->shape, sm, sizeof sm);
        if (m->shape.ndim != 2 || m->shape.dim[0] != a.B || m->shape.dim[1] != a.Tk)
            return nn__op_fail(g, NN_ERR_SHAPE, "%s: key_padding_mask %s is not [B, Tk] = [%d, %d]", op, sm, a.B, a.Tk);
        a.kpm_mode = m->dtype == NN_I32 ? 2 : 1;
        x[nx++] = kpm;
    }
    nn__attn_set_ins(&a, 3);
    {
        int ins[5];
        for (i = 0; i < nx; i++) ins[i] = x[i].id;
        id = nn__new_node(g, NN__OP_ATTENTION, dt, nn_shape1(total), ins, nx);
    }
    if (id < 0) return nn__tensor(-1);
    a.key = id; /* dropout's key, shared with the backward ops */
    g->nodes[id].a.attn = a;
    packed = nn__tensor(id);
    qshape = nn__n(g, q)->shape; /* read again: new nodes may move the node array under nq */
    qshape.dim[3] = a.Dv;        /* the output: q's shape with v's head dim */
    packed = nn_slice(g, packed, 0, 0, nn__attn_nO(&a));
    return nn_reshape(g, packed, qshape);
}

#define nn__grad_attention_delta nn__grad_none
#define nn__grad_attention_dq nn__grad_none
#define nn__grad_attention_dkv nn__grad_none
#define nn__grad_attention_dmask nn__grad_none

/* ---- 16-bit attention (q, k, v of NN_BF16 or NN_F16): the storage type is the first
   input's (q; the packed output for ATTENTION_DELTA). OpenCL: kernels/attention.cl built
   for it (l->store), float32 sums. CPU: the operands widened (exactly) into the node's
   scratch, src/cpu/attention.c's float32 loops run there into a float32 output after
   them, rounded once into the node, so each value is the float32 attention's on the
   widened inputs, rounded; the log-sum-exp is read and written in place (float32 words in
   the packed output, nn__attn_lse_off). ---- */

static nn_dtype nn__attn_store(const nn_graph *g, const nn__node *n) { return g->nodes[n->in[0]].dtype; }

/* a region of n floats, from a multiple of 16 (64 bytes) */
static int64_t nn__attn16_r(int64_t n) { return (n + 15) / 16 * 16; }

/* floats of a 16-bit node's CPU scratch: q, k, v widened (o and dout too in the backward),
   then the float32 output (ATTENTION, dQ, [dK, dV(, dQ)]); DELTA: o and dout only */
static int64_t nn__attn16_scratch(const nn__node *n) {
    const nn__attn_attr *a = &n->a.attn;
    int64_t qkv = nn__attn16_r(nn__attn_nQ(a)) + nn__attn16_r(nn__attn_nK(a)) + nn__attn16_r(nn__attn_nV(a));
    int64_t od = 2 * nn__attn16_r(nn__attn_nO(a));
    switch (n->op) {
    case NN__OP_ATTENTION: return qkv + nn__attn16_r(nn__attn_nO(a));
    case NN__OP_ATTENTION_DELTA: return od;
    case NN__OP_ATTENTION_DQ: return qkv + od + nn__attn16_r(nn__attn_nQ(a));
    case NN__OP_ATTENTION_DKV: return qkv + od + nn__attn16_r(n->numel);
    default: return qkv + od; /* DMASK: its float32 output is the node */
    }
}

static void nn__plan_attention(nn_graph *g, nn__node *n) {
    n->scratch = g->ctx->backend->host_memory && nn__dtype_half(nn__attn_store(g, n)) ? nn__attn16_scratch(n) : 0;
}
#define nn__plan_attention_delta nn__plan_attention
#define nn__plan_attention_dq nn__plan_attention
#define nn__plan_attention_dmask nn__plan_attention

/* ATTENTION_DKV: the CPU's 16-bit scratch; a device's with dq: the dQ kernel's output in
   the node's scratch, then copied after dk and dv (the kernels write from their output's
   start) */
static void nn__plan_attention_dkv(nn_graph *g, nn__node *n) {
    if (g->ctx->backend->host_memory) nn__plan_attention(g, n);
    else n->scratch = n->a.attn.with_dq && !n->a.attn.gview ? nn__attn_nQ(&n->a.attn) : 0;
}

/* dq, and dk, dv sliced from one node (dq too when k or v needs a gradient) */
static void nn__grad_attention(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__attn_attr at = n.a.attn;
    int c = n.in[2], gc = g->nodes[c].needs_grad, ins[8], nin = 6, i;
    nn_tensor delta;
    nn_shape sk = g->nodes[b].shape, sv = g->nodes[c].shape;
    int din[2];
    nn_dtype dt = n.dtype; /* q's: the gradients' too */
    if (g->nodes[gy.id].dtype != dt && (gy = nn_to_dtype(g, gy, dt)).id < 0) return;
    din[0] = id, din[1] = gy.id;
    delta = nn__tensor(nn__new_node(g, NN__OP_ATTENTION_DELTA, NN_F32, nn_shape1((int64_t)at.B * at.H * at.Tq), din, 2));
    if (delta.id < 0) return;
    g->nodes[delta.id].a.attn = at;
    ins[0] = a, ins[1] = b, ins[2] = c, ins[3] = id, ins[4] = gy.id, ins[5] = delta.id;
    for (i = 3; i < n.n_in; i++) ins[nin++] = n.in[i];
    nn__attn_set_ins(&at, 6);
    if (ga && !gb && !gc) {
        int t = nn__new_node(g, NN__OP_ATTENTION_DQ, dt, g->nodes[a].shape, ins, nin);
        if (t < 0) return;
        g->nodes[t].a.attn = at;
        nn__acc_grad(g, a, nn__tensor(t));
    }
    if (gb || gc) {
        int64_t nk = nn__attn_nK(&at), nv = nn__attn_nV(&at), nq = ga ? g->nodes[a].numel : 0;
        nn_shape sq = g->nodes[a].shape;
        int t = nn__new_node(g, NN__OP_ATTENTION_DKV, dt, nn_shape1(nk + nv + nq), ins, nin);
        if (t < 0) return;
        at.with_dq = ga;
        g->nodes[t].a.attn = at;
        if (gb) nn__acc_grad(g, b, nn_reshape(g, nn_slice(g, nn__tensor(t), 0, 0, nk), sk));
        if (gc) nn__acc_grad(g, c, nn_reshape(g, nn_slice(g, nn__tensor(t), 0, nk, nv), sv));
        if (ga) nn__acc_grad(g, a, nn_reshape(g, nn_slice(g, nn__tensor(t), 0, nk + nv, nq), sq));
    }
    if (at.mask_mode == 1 && g->nodes[n.in[n.a.attn.mask_in]].needs_grad) { /* an additive mask: the sum of dS */
        int m = n.in[n.a.attn.mask_in], t = nn__new_node(g, NN__OP_ATTENTION_DMASK, NN_F32, g->nodes[m].shape, ins, nin);
        if (t < 0) return;
        g->nodes[t].a.attn = at;
        nn__acc_grad(g, m, nn__tensor(t));
    }
}

/* the CPU job of node n (pointers from its inputs by the family's order) */
static void nn__attn_job_init(nn_graph *g, const nn__node *n, nn__attn_job *J, int kind) {
    const nn__attn_attr *a = &n->a.attn;
    memset(J, 0, sizeof *J);
    J->a = *a;
    J->kind = kind;
    nn__attn_opd_strides(a, 0, J->qs);
    nn__attn_opd_strides(a, 1, J->ks);
    nn__attn_opd_strides(a, 2, J->vs);
    nn__attn_strides(a->layout, a->H, a->Tq, a->Dv, J->os);
    if (a->gview) { /* dq, dk, dv at their views' places */
        memcpy(J->dqs, J->qs, sizeof J->qs), memcpy(J->dks, J->ks, sizeof J->ks), memcpy(J->dvs, J->vs, sizeof J->vs);
    } else {
        nn__attn_strides(a->layout, a->H, a->Tq, a->D, J->dqs);
        nn__attn_strides(a->layout, a->Hkv, a->Tk, a->D, J->dks);
        nn__attn_strides(a->layout, a->Hkv, a->Tk, a->Dv, J->dvs);
    }
    J->q = NN__F(n->in[0]) + a->voff[0];
    J->k = NN__F(n->in[1]) + a->voff[1];
    J->v = NN__F(n->in[2]) + a->voff[2];
    if (a->mask_in) J->mask = NN__F(n->in[a->mask_in]);
    if (a->kpm_in) J->kpm = NN__F(n->in[a->kpm_in]);
    J->seed = g->seed;
    J->step = g->step;
    if (kind > 0) {
        J->o = NN__F(n->in[3]);
        J->lse = J->o + nn__attn_nO(a);
        J->dout = NN__F(n->in[4]);
        J->delta = NN__F(n->in[5]);
    }
}

/* A 16-bit node's job: q, k, v (and o, dout) widened into the scratch, the job's pointers
   set to them, the log-sum-exp read in place from the packed output; returns the scratch's
   float32 output region. */
static float *nn__attn16_widen(nn_graph *g, nn__node *n, nn__attn_job *J) {
    const nn__attn_attr *a = &n->a.attn;
    nn_dtype dt = nn__attn_store(g, n);
    float *w = (float *)n->scratch_buf.host;
    int64_t cnt[3];
    int i;
    cnt[0] = nn__attn_nQ(a), cnt[1] = nn__attn_nK(a), cnt[2] = nn__attn_nV(a);
    for (i = 0; i < 3; i++) {
        const uint16_t *src = (const uint16_t *)g->nodes[n->in[i]].buf.host + a->voff[i];
        if (a->vrs[i]) { /* a view: its rows widened one by one, contiguous */
            int64_t rows = (int64_t)a->B * (i ? a->Tk : a->Tq), len = cnt[i] / rows, r;
            for (r = 0; r < rows; r++) nn__cast(g->ctx->threads, src + r * a->vrs[i], dt, w + r * len, NN_F32, len);
        } else {
            nn__cast(g->ctx->threads, src, dt, w, NN_F32, cnt[i]);
        }
        if (i == 0) J->q = w;
        else if (i == 1) J->k = w;
        else J->v = w;
        w += nn__attn16_r(cnt[i]);
    }
    nn__attn_strides(a->layout, a->H, a->Tq, a->D, J->qs); /* the widened copies' strides, the outputs' too */
    nn__attn_strides(a->layout, a->Hkv, a->Tk, a->D, J->ks);
    nn__attn_strides(a->layout, a->Hkv, a->Tk, a->Dv, J->vs);
    memcpy(J->dqs, J->qs, sizeof J->qs), memcpy(J->dks, J->ks, sizeof J->ks), memcpy(J->dvs, J->vs, sizeof J->vs);
    if (n->op != NN__OP_ATTENTION) {
        const uint16_t *packed = (const uint16_t *)g->nodes[n->in[3]].buf.host;
        nn__cast(g->ctx->threads, packed, dt, w, NN_F32, nn__attn_nO(a));
        J->o = w;
        J->lse = (const float *)(const void *)(packed + nn__attn_lse_off(a, dt));
        w += nn__attn16_r(nn__attn_nO(a));
        nn__cast(g->ctx->threads, g->nodes[n->in[4]].buf.host, dt, w, NN_F32, nn__attn_nO(a));
        J->dout = w;
        w += nn__attn16_r(nn__attn_nO(a));
    }
    return w;
}

/* the float32 output of a 16-bit node (nf floats at f) rounded into its storage */
static void nn__attn16_finish(nn_graph *g, nn__node *n, const float *f, int64_t nf) {
    nn__cast(g->ctx->threads, f, NN_F32, n->buf.host, n->dtype, nf);
}

static nn_result nn__cpu_attention(nn_graph *g, nn__node *n) {
    nn__attn_job J;
    nn_result r;
    nn__attn_job_init(g, n, &J, 0);
    if (!nn__dtype_half(n->dtype)) {
        J.out = n->buf.host;
        J.out_lse = J.out + nn__attn_nO(&n->a.attn);
        return nn__attn_run(g->ctx->threads, &J);
    }
    J.out = nn__attn16_widen(g, n, &J);
    J.out_lse = (float *)(void *)((uint16_t *)n->buf.host + nn__attn_lse_off(&n->a.attn, n->dtype));
    r = nn__attn_run(g->ctx->threads, &J);
    if (r == NN_OK) nn__attn16_finish(g, n, J.out, nn__attn_nO(&n->a.attn));
    return r;
}

/* delta_i = sum_d dO_id O_id, d in order; the rows split into one contiguous run per
   thread */
typedef struct nn__attn_delta_job {
    const nn__attn_attr *a;
    const float *o, *dout;
    float *delta;
    int64_t s[3], rows, per;
} nn__attn_delta_job;

static void nn__attn_delta_task(void *arg, int t, int n_tasks) {
    const nn__attn_delta_job *J = (const nn__attn_delta_job *)arg;
    const nn__attn_attr *a = J->a;
    int64_t r = t * J->per, r1 = (t + 1) * J->per < J->rows ? (t + 1) * J->per : J->rows, off[8];
    int64_t b = r / ((int64_t)a->H * a->Tq), h = r / a->Tq % a->H, i = r % a->Tq; /* row r's, then stepped: no division a row */
    int d, k, nr;
    (void)n_tasks;
    for (; r < r1; r += nr) { /* 8 rows at a time: 8 chains of adds side by side, each in d order */
        float acc[8];
        nr = r1 - r < 8 ? (int)(r1 - r) : 8;
        for (k = 0; k < 8; k++) {
            off[k] = k < nr ? b * J->s[0] + h * J->s[1] + i * J->s[2] : off[0];
            if (k < nr && ++i == a->Tq && (i = 0, ++h == a->H)) h = 0, b++;
        }
        { /* named accumulators and pointers, so they live in registers */
            const float *y0 = J->o + off[0], *y1 = J->o + off[1], *y2 = J->o + off[2], *y3 = J->o + off[3];
            const float *y4 = J->o + off[4], *y5 = J->o + off[5], *y6 = J->o + off[6], *y7 = J->o + off[7];
            const float *g0 = J->dout + off[0], *g1 = J->dout + off[1], *g2 = J->dout + off[2], *g3 = J->dout + off[3];
            const float *g4 = J->dout + off[4], *g5 = J->dout + off[5], *g6 = J->dout + off[6], *g7 = J->dout + off[7];
            float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f, a5 = 0.0f, a6 = 0.0f, a7 = 0.0f;
            for (d = 0; d < a->Dv; d++) {
                a0 += g0[d] * y0[d];
                a1 += g1[d] * y1[d];
                a2 += g2[d] * y2[d];
                a3 += g3[d] * y3[d];
                a4 += g4[d] * y4[d];
                a5 += g5[d] * y5[d];
                a6 += g6[d] * y6[d];
                a7 += g7[d] * y7[d];
            }
            acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3, acc[4] = a4, acc[5] = a5, acc[6] = a6, acc[7] = a7;
        }
        for (k = 0; k < nr; k++) J->delta[r + k] = acc[k];
    }
}

static nn_result nn__cpu_attention_delta(nn_graph *g, nn__node *n) {
    nn__attn_delta_job J;
    int tasks = nn__threadpool_size(g->ctx->threads);
    J.a = &n->a.attn;
    J.o = NN__F(n->in[0]);
    J.dout = NN__F(n->in[1]);
    if (nn__dtype_half(nn__attn_store(g, n))) { /* o and dout widened into the scratch */
        float *w = (float *)n->scratch_buf.host;
        int64_t no = nn__attn_nO(J.a);
        nn__cast(g->ctx->threads, g->nodes[n->in[0]].buf.host, nn__attn_store(g, n), w, NN_F32, no);
        nn__cast(g->ctx->threads, g->nodes[n->in[1]].buf.host, nn__attn_store(g, n), w + nn__attn16_r(no), NN_F32, no);
        J.o = w;
        J.dout = w + nn__attn16_r(no);
    }
    J.delta = n->buf.host;
    J.rows = (int64_t)J.a->B * J.a->H * J.a->Tq;
    nn__attn_strides(J.a->layout, J.a->H, J.a->Tq, J.a->Dv, J.s);
    if ((int64_t)tasks * 1024 > J.rows) tasks = (int)(J.rows / 1024 > 0 ? J.rows / 1024 : 1); /* 1,024 rows a task at least */
    J.per = (J.rows + tasks - 1) / tasks;
    if (tasks <= 1) nn__attn_delta_task(&J, 0, 1);
    else nn__threadpool_run(g->ctx->threads, nn__attn_delta_task, &J, tasks);
    return NN_OK;
}

static nn_result nn__cpu_attention_dq(nn_graph *g, nn__node *n) {
    nn__attn_job J;
    nn_result r;
    nn__attn_job_init(g, n, &J, 1);
    if (!nn__dtype_half(n->dtype)) {
        J.dq = n->buf.host;
        return nn__attn_run(g->ctx->threads, &J);
    }
    J.dq = nn__attn16_widen(g, n, &J);
    r = nn__attn_run(g->ctx->threads, &J);
    if (r == NN_OK) nn__attn16_finish(g, n, J.dq, n->numel);
    return r;
}

/* dk and dv, and dq after them when with_dq: in one pass where it keeps the threads busy,
   else the dK/dV pass then the dQ pass (the same bits) */
static nn_result nn__cpu_attention_dkv(nn_graph *g, nn__node *n) {
    nn__attn_job J;
    nn_result r;
    const nn__attn_attr *a = &n->a.attn;
    nn__attn_job_init(g, n, &J, 2);
    if (a->gview && !nn__dtype_half(n->dtype)) { /* at their views' places in the [rows, vrs] gradient */
        J.dk = (float *)n->buf.host + a->voff[1];
        J.dv = (float *)n->buf.host + a->voff[2];
        J.dq = (float *)n->buf.host + a->voff[0];
    } else {
        J.dk = nn__dtype_half(n->dtype) ? nn__attn16_widen(g, n, &J) : n->buf.host; /* 16-bit: the float32 [dK, dV, dQ] */
        J.dv = J.dk + nn__attn_nK(a);
        if (a->with_dq) J.dq = J.dv + nn__attn_nV(a);
    }
    if (!n->a.attn.with_dq) {
        r = nn__attn_run(g->ctx->threads, &J);
    } else if (nn__attn_one_pass_fits(&n->a.attn, nn__threadpool_size(g->ctx->threads))) {
        J.kind = 4;
        r = nn__attn_run(g->ctx->threads, &J);
    } else {
        r = nn__attn_run(g->ctx->threads, &J);
        J.kind = 1;
        if (r == NN_OK) r = nn__attn_run(g->ctx->threads, &J);
    }
    if (r == NN_OK && nn__dtype_half(n->dtype) && a->gview) { /* [dK, dV, dQ] rounded into their views' rows */
        int i;
        const float *f = J.dk;
        for (i = 1; i <= 3; i++) {
            int o = i % 3, heads = o ? a->Hkv : a->H;
            int64_t rows = (int64_t)a->B * (o ? a->Tk : a->Tq), len = (int64_t)heads * (o == 2 ? a->Dv : a->D), r2;
            uint16_t *dst = (uint16_t *)n->buf.host + a->voff[o];
            for (r2 = 0; r2 < rows; r2++) nn__cast(g->ctx->threads, f + r2 * len, NN_F32, dst + r2 * a->vrs[o], n->dtype, len);
            f += rows * len;
        }
    } else if (r == NN_OK && nn__dtype_half(n->dtype)) {
        nn__attn16_finish(g, n, J.dk, n->numel);
    }
    return r;
}

static nn_result nn__cpu_attention_dmask(nn_graph *g, nn__node *n) {
    nn__attn_job J;
    nn__attn_job_init(g, n, &J, 3);
    if (nn__dtype_half(nn__attn_store(g, n))) nn__attn16_widen(g, n, &J);
    J.dmask = n->buf.host;
    return nn__attn_run(g->ctx->threads, &J);
}

/* ---- launches: the kernels' shared arguments ---- */

/* Before each run: the step's counter words (dropout's mask changes every step). */
static void nn__attn_update_fwd(nn_graph *g, nn__launch *l) {
    nn__k_attn_fwd k;
    memset(&k, 0, sizeof k);
    k.step_lo = (unsigned)g->step;
    k.step_hi = (unsigned)(g->step >> 32);
    nn__kstep_attn_fwd(l, &k);
}
static void nn__attn_update_bwd(nn_graph *g, nn__launch *l) {
    nn__k_attn_bwd k;
    memset(&k, 0, sizeof k);
    k.step_lo = (unsigned)g->step;
    k.step_hi = (unsigned)(g->step >> 32);
    nn__kstep_attn_bwd(l, &k);
}

/* the fields every attention kernel takes, from node n: dims, masks' modes and strides,
   scale, dropout */
#define NN__ATTN_KCOMMON(k, n, dims, mk, vw)                                                       \
    do {                                                                                           \
        const nn__attn_attr *a_ = &(n)->a.attn;                                                     \
        vw[0] = a_->vrs[0] ? a_->vrs[0] : a_->H * a_->D, vw[1] = a_->voff[0];                          \
        vw[2] = a_->vrs[1] ? a_->vrs[1] : a_->Hkv * a_->D, vw[3] = a_->voff[1];                        \
        vw[4] = a_->vrs[2] ? a_->vrs[2] : a_->Hkv * a_->Dv, vw[5] = a_->voff[2];                       \
        vw[6] = a_->gview, vw[7] = 0;                                                              \
        (k).vw = vw;                                                                               \
        dims[0] = a_->B, dims[1] = a_->H, dims[2] = a_->Hkv, dims[3] = a_->Tq;                      \
        dims[4] = a_->Tk, dims[5] = a_->D, dims[6] = a_->layout, dims[7] = a_->causal;              \
        mk[0] = a_->ms[0], mk[1] = a_->ms[1], mk[2] = a_->ms[2], mk[3] = a_->ms[3];                 \
        mk[4] = a_->mask_mode, mk[5] = a_->kpm_mode, mk[6] = a_->window, mk[7] = 0;                 \
        (k).dims = dims;                                                                           \
        (k).mk = mk;                                                                               \
        (k).scale = a_->scale;                                                                     \
        (k).p = a_->p;                                                                             \
        (k).seed_lo = (unsigned)g->seed;                                                           \
        (k).seed_hi = (unsigned)(g->seed >> 32);                                                   \
        (k).key = (unsigned)a_->key;                                                               \
        (k).vdim = a_->Dv;                                                                         \
        (k).q = &g->nodes[(n)->in[0]].buf;                                                         \
        (k).k = &g->nodes[(n)->in[1]].buf;                                                         \
        (k).v = &g->nodes[(n)->in[2]].buf;                                                         \
        (k).mask = &g->nodes[(n)->in[a_->mask_in ? a_->mask_in : 0]].buf;                          \
        (k).kpm = &g->nodes[(n)->in[a_->kpm_in ? a_->kpm_in : 0]].buf;                             \
    } while (0)

/* The row kernels (GPUs whose local memory holds no tile): groups of 64 work-items (or the
   device's most); each item holds one or two [D] accumulators in private memory, so a CPU
   driver's own choice (PoCL: thousands of items a group) could overflow its threads'
   stacks. */
static void nn__attn_lws(nn_graph *g, nn__launch *l) {
    size_t wg = g->ctx->dev.max_wg < 64 ? g->ctx->dev.max_wg : 64;
    if (wg < 1) wg = 1;
    l->gws[0] = (l->gws[0] + wg - 1) / wg * wg;
    l->lws[0] = wg;
    l->use_lws = 1;
}

/* The tiled kernels' geometry: a group of cfg.wg items per tile of `tile` rows of each of
   `heads` heads of `rows` rows (kernels/attention_tile.h) */
static void nn__attn_tiled_geom(nn_graph *g, nn__launch *l, int heads, int rows, int tile) {
    nn__attn_cl_cfg c;
    const nn__attn_attr *a = &g->nodes[l->node].a.attn;
    nn__attn_cl_config(&g->ctx->dev, &c);
    l->gws[0] = (size_t)a->B * heads * ((rows + tile - 1) / tile) * c.wg;
    l->lws[0] = c.wg;
    l->use_lws = 1;
}

/* CPU drivers: the block kernels, one work-item a group per NN__ATTN_RB rows of each head
   (on PoCL 4x the row kernels: HACKING.md, "Attention kernels"). The block and tiled
   kernels take Dv = D only; the row kernels the rest. */
static int nn__attn_block(nn_graph *g, const nn__attn_attr *a) { return g->ctx->dev.cpu_tuned && a->Dv == a->D; }
static int nn__attn_tile(nn_graph *g, const nn__attn_attr *a, int bwd) {
    return a->Dv == a->D ? nn__attn_cl_tile(&g->ctx->dev, bwd, a->D) : 0;
}
/* GPUs with NN_CL_ATTN flash (nn__device attn_flash): the flash kernels where they take the
   head dim (Dv = D <= the build's NN_ATTN_FD), a group of NN__ATTN_FBR items per that many
   rows of each head; else the tiled ones */
static int nn__attn_flash(nn_graph *g, const nn__attn_attr *a) {
    nn__attn_cl_cfg c;
    if (g->ctx->dev.cpu_tuned || a->Dv != a->D) return 0;
    nn__attn_cl_config(&g->ctx->dev, &c);
    return c.fd > 0 && a->D <= c.fd;
}
static void nn__attn_flash_geom(nn_graph *g, nn__launch *l, int heads, int rows) {
    const nn__attn_attr *a = &g->nodes[l->node].a.attn;
    l->gws[0] = (size_t)a->B * heads * ((rows + NN__ATTN_FBR - 1) / NN__ATTN_FBR) * NN__ATTN_FBR;
    l->lws[0] = NN__ATTN_FBR;
    l->use_lws = 1;
}
static void nn__attn_block_geom(nn_graph *g, nn__launch *l, int heads, int rows) {
    const nn__attn_attr *a = &g->nodes[l->node].a.attn;
    l->gws[0] = (size_t)a->B * heads * ((rows + NN__ATTN_RB - 1) / NN__ATTN_RB);
    l->lws[0] = 1;
    l->use_lws = 1;
}

/* the tiled forward where its tile fits the device (a work-group per tile of query rows),
   else one work-item per query row */
static nn_result nn__launch_attention(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int dims[8], mk[8], vw[8], tile = nn__attn_tile(g, &n->a.attn, 0), blk = nn__attn_block(g, &n->a.attn);
    int fl = nn__attn_flash(g, &n->a.attn);
    NN__KSTART(attn_fwd, "attention", blk ? "attn_block_fwd" : fl ? "attn_flash_fwd" : tile ? "attn_tiled_fwd" : "attn_fwd",
               (int64_t)n->a.attn.B * n->a.attn.H * n->a.attn.Tq);
    l->update = nn__attn_update_fwd;
    if (blk)
        nn__attn_block_geom(g, l, n->a.attn.H, n->a.attn.Tq);
    else if (fl)
        nn__attn_flash_geom(g, l, n->a.attn.H, n->a.attn.Tq);
    else if (tile)
        nn__attn_tiled_geom(g, l, n->a.attn.H, n->a.attn.Tq, tile);
    else
        nn__attn_lws(g, l);
    NN__ATTN_KCOMMON(k, n, dims, mk, vw);
    k.out = &n->buf;
    l->store = nn__attn_store(g, n); /* the program for q's storage type */
    return nn__kargs_attn_fwd(l, &k);
}

static nn_result nn__launch_attention_delta(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int dims[8], mk[8];
    NN__KSTART(attn_delta, "attention", "attn_delta", n->numel);
    memset(mk, 0, sizeof mk);
    dims[0] = n->a.attn.B, dims[1] = n->a.attn.H, dims[2] = n->a.attn.Hkv, dims[3] = n->a.attn.Tq;
    dims[4] = n->a.attn.Tk, dims[5] = n->a.attn.D, dims[6] = n->a.attn.layout, dims[7] = n->a.attn.causal;
    k.dims = dims;
    k.vdim = n->a.attn.Dv;
    k.o = &g->nodes[n->in[0]].buf;
    k.dout = &g->nodes[n->in[1]].buf;
    k.delta = &n->buf;
    l->store = nn__attn_store(g, n);
    return nn__kargs_attn_delta(l, &k);
}

/* dQ (tiles of query rows, or one work-item per row) and dK/dV (tiles of key rows of each
   key/value head, or one work-item per row), and the mask's gradient (heads 0: one
   work-item per element): the same arguments, another kernel */
static nn_result nn__launch_attention_bwd(nn_graph *g, int id, const char *kernel, int64_t items, int heads, int rows,
                                          const nn__buf *out) {
    nn__node *n = &g->nodes[id];
    int dims[8], mk[8], vw[8], tile = heads ? nn__attn_tile(g, &n->a.attn, 1) : 0, blk = heads && nn__attn_block(g, &n->a.attn);
    int fl = heads && nn__attn_flash(g, &n->a.attn);
    char name[32];
    sprintf(name, "attn_%s%s", blk ? "block_" : fl ? "flash_" : tile ? "tiled_" : "", kernel);
    NN__KSTART(attn_bwd, "attention", name, items);
    l->update = nn__attn_update_bwd;
    if (blk)
        nn__attn_block_geom(g, l, heads, rows);
    else if (fl)
        nn__attn_flash_geom(g, l, heads, rows);
    else if (tile)
        nn__attn_tiled_geom(g, l, heads, rows, tile);
    else
        nn__attn_lws(g, l);
    NN__ATTN_KCOMMON(k, n, dims, mk, vw);
    k.o = &g->nodes[n->in[3]].buf;
    k.dout = &g->nodes[n->in[4]].buf;
    k.delta = &g->nodes[n->in[5]].buf;
    k.out = out;
    l->store = nn__attn_store(g, n);
    return nn__kargs_attn_bwd(l, &k);
}

static nn_result nn__launch_attention_dq(nn_graph *g, int id) {
    const nn__attn_attr *a = &g->nodes[id].a.attn;
    return nn__launch_attention_bwd(g, id, "dq", (int64_t)a->B * a->H * a->Tq, a->H, a->Tq, &g->nodes[id].buf);
}

/* dk, dv; with dq: the dQ kernel into the scratch, then a copy after dk and dv */
static nn_result nn__launch_attention_dkv(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__attn_attr *a = &n->a.attn;
    int64_t nq = (int64_t)a->B * a->H * a->Tq * a->D, off = nn__attn_nK(a) + nn__attn_nV(a);
    nn__launch *l = NULL;
    nn__k_concat_part k;
    nn__k_half_concat kh;
    int half = nn__dtype_half(n->dtype);
    nn_result r = nn__launch_attention_bwd(g, id, "dkv", (int64_t)a->B * a->Hkv * a->Tk, a->Hkv, a->Tk, &n->buf);
    if (r != NN_OK || !a->with_dq) return r;
    if (a->gview) /* dq at its place in the node */
        return nn__launch_attention_bwd(g, id, "dq", (int64_t)a->B * a->H * a->Tq, a->H, a->Tq, &g->nodes[id].buf);
    r = nn__launch_attention_bwd(g, id, "dq", (int64_t)a->B * a->H * a->Tq, a->H, a->Tq, &g->nodes[id].scratch_buf);
    if (r == NN_OK) r = nn__launch_kernel(g, id, "shape", half ? "half_concat" : "concat_part", (size_t)nq, &l);
    if (r != NN_OK) return r;
    n = &g->nodes[id];
    if (half) { /* the dQ kernel wrote 16-bit words */
        memset(&kh, 0, sizeof kh);
        kh.x = &n->scratch_buf;
        kh.y = &n->buf;
        kh.n = (int)nq;
        kh.lx = (int)nq;
        kh.L = (int)(off + nq);
        kh.off = (int)off;
        kh.inner = 1;
        return nn__kargs_half_concat(l, &kh);
    }
    memset(&k, 0, sizeof k);
    k.x = &n->scratch_buf;
    k.y = &n->buf;
    k.n = (int)nq;
    k.lx = (int)nq;
    k.L = (int)(off + nq);
    k.off = (int)off;
    k.inner = 1;
    return nn__kargs_concat_part(l, &k);
}

/* one work-item per element of the mask */
static nn_result nn__launch_attention_dmask(nn_graph *g, int id) {
    return nn__launch_attention_bwd(g, id, "dmask", g->nodes[id].numel, 0, 0, &g->nodes[id].buf);
}

/* ==== views (issue 17): q, k, v read where a projection wrote them, their gradients
   written where the projection's gradient wants them ==== */

/* The tensor X whose rows operand x of an NN_ATTN_BTHD attention reads, when x is
   reshape(slice(X, last dim, off, width)) of `rows` rows of X (B T): X's id, its row
   stride and the offset; else -1. */
static int nn__attn_view_src(const nn_graph *g, int x, int64_t rows, int64_t width, int *rs, int *off) {
    const nn__node *r = &g->nodes[x], *s, *X;
    int ax;
    if (r->op != NN__OP_RESHAPE) return -1;
    s = &g->nodes[r->in[0]];
    if (s->op != NN__OP_SLICE || s->a.shape.step != 1) return -1;
    X = &g->nodes[s->in[0]];
    ax = X->shape.ndim - 1;
    if (ax < 0 || s->a.shape.axis != ax || X->dtype != s->dtype || X->dtype != r->dtype) return -1;
    if (s->shape.dim[ax] != width || X->shape.dim[ax] * rows != X->numel || X->numel > INT32_MAX) return -1;
    *rs = (int)X->shape.dim[ax];
    *off = s->a.shape.start;
    return s->in[0];
}

/* node j's readers among the live nodes (up to 2 counted) */
static int nn__attn_readers(const nn_graph *g, int j) {
    int i, k, c = 0;
    for (i = j + 1; i < g->n_nodes && c < 2; i++)
        if (g->nodes[i].live)
            for (k = 0; k < g->nodes[i].n_in; k++) c += g->nodes[i].in[k] == j;
    return c;
}

/* The gradient CONCAT c along X's last dim of three runs, each reshapes of one slice of a
   with-dq ATTENTION_DKV t whose views read X at those runs: t writes [rows, W] in place
   (gview) and c becomes a reshape of t (a view). Only where nothing else reads the pieces. */
static int nn__attn_gview(nn_graph *g, int c) {
    nn__node *n = &g->nodes[c], *t;
    int64_t col = 0, start[3];
    int j, tid = -1, seen = 0, ax = n->shape.ndim - 1;
    if (n->op != NN__OP_CONCAT || n->n_in != 3 || ax < 0 || n->a.shape.axis != ax) return 0;
    for (j = 0; j < 3; j++) {
        int p = n->in[j], s, o;
        const nn__node *P;
        const nn__attn_attr *a;
        while (g->nodes[p].op == NN__OP_RESHAPE && !g->nodes[p].is_output && nn__attn_readers(g, p) == 1) p = g->nodes[p].in[0];
        P = &g->nodes[p];
        if (P->op != NN__OP_SLICE || P->is_output || P->a.shape.step != 1 || P->shape.ndim != 1 || nn__attn_readers(g, p) != 1) return 0;
        s = P->in[0];
        if (g->nodes[s].op != NN__OP_ATTENTION_DKV || (tid >= 0 && s != tid)) return 0;
        tid = s;
        a = &g->nodes[s].a.attn;
        if (!a->with_dq || a->gview) return 0;
        start[0] = nn__attn_nK(a) + nn__attn_nV(a), start[1] = 0, start[2] = nn__attn_nK(a);
        for (o = 0; o < 3 && start[o] != P->a.shape.start; o++) continue;
        if (o == 3 || (seen & (1 << o)) || a->vrs[o] != n->shape.dim[ax] || a->voff[o] != col) return 0;
        seen |= 1 << o;
        col += g->nodes[n->in[j]].shape.dim[ax];
    }
    t = &g->nodes[tid];
    if (seen != 7 || t->is_output || t->dtype != n->dtype || t->numel != n->numel) return 0;
    { /* the three slices are t's only readers */
        int i, k, cnt = 0;
        for (i = tid + 1; i < g->n_nodes; i++)
            if (g->nodes[i].live)
                for (k = 0; k < g->nodes[i].n_in; k++) cnt += g->nodes[i].in[k] == tid;
        if (cnt != 3) return 0;
    }
    t->a.attn.gview = 1;
    t->shape = n->shape;
    n->op = NN__OP_RESHAPE;
    n->in[0] = tid;
    n->n_in = 1;
    return 1;
}

static int nn__attn_views(nn_graph *g) {
    int i, k, changed = 0;
    if (!nn__attn_views_on || g->n_ckpt) return 0;
    for (i = 0; i < g->n_nodes; i++) {
        nn__node *n = &g->nodes[i];
        nn__attn_attr *a = &n->a.attn;
        if (!n->live || a->layout != NN_ATTN_BTHD ||
            (n->op != NN__OP_ATTENTION && n->op != NN__OP_ATTENTION_DQ && n->op != NN__OP_ATTENTION_DKV && n->op != NN__OP_ATTENTION_DMASK))
            continue;
        for (k = 0; k < 3; k++) {
            int rs, off, x;
            if (a->vrs[k]) continue;
            x = nn__attn_view_src(g, n->in[k], (int64_t)a->B * (k ? a->Tk : a->Tq),
                                  (int64_t)(k ? a->Hkv : a->H) * (k == 2 ? a->Dv : a->D), &rs, &off);
            if (x < 0) continue;
            n->in[k] = x, a->vrs[k] = rs, a->voff[k] = off;
            changed = 1;
        }
    }
    for (i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].live && nn__attn_gview(g, i)) changed = 1;
    return changed;
}
