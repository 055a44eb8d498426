/* The recurrent family: PyTorch's nn.RNN, nn.LSTM, nn.GRU and their cells (nn_rnn, nn_lstm,
   nn_gru, nn_rnn_cell, nn_lstm_cell, nn_gru_cell) and nn_last_valid. A layer is, per layer
   and direction, one GEMM of the input projection for all steps (nn_matmul, + bias_ih) and
   one sequence node (REC_SEQ) that loops over time inside itself: per step the state's
   GEMM and one fused gate kernel (kernels/recurrent.cl; on the CPU backend the loops of
   src/cpu/recurrent.c), saving gates and states in a workspace node (REC_WS). Its gradient
   is one node (REC_SEQ_GRAD): per step one gate-backward kernel and the GEMM of the state's
   gradient, then the recurrent weights' gradients as one GEMM over all steps. HACKING.md
   ("Recurrent layers") says why the loop is one node and not unrolled. */
#include "../base/internal.h"
#include "../base/registry.h"

/* ==== the workspace and the packed buffers of a sequence node ==== */

/* The workspace of a sequence node (floats), in processing order s (t = s, or T-1-s
   reversed): gates [T, B, G*H] (activated), the states Hs [T+1, B, Hr] (Hs[0] the initial
   one; frozen rows carried), Cs [T+1, B, H] (LSTM), U [T, B, H] (LSTM with a projection:
   o*tanh(c)), HN [T, B, H] (GRU: W_hn h + b_hn). Returns the total. */
static int64_t nn__rec_ws_layout(const nn__rec_attr *a, int64_t off[5]) {
    int64_t TB = (int64_t)a->T * a->B, o = 0;
    off[0] = o, o += TB * a->G * a->H;
    off[1] = o, o += (TB + a->B) * a->Hr;
    off[2] = o, o += a->kind == NN__REC_LSTM ? (TB + a->B) * a->H : 0;
    off[3] = o, o += a->i_whr >= 0 ? TB * a->H : 0;
    off[4] = o, o += a->kind == NN__REC_GRU ? TB * a->H : 0;
    return o;
}

/* A sequence node's output: Y [T, B, Hr] in time order, h_n [B, Hr], c_n [B, H] (LSTM). */
static int64_t nn__rec_out_size(const nn__rec_attr *a) {
    return ((int64_t)a->T * a->B + a->B) * a->Hr + (a->kind == NN__REC_LSTM ? (int64_t)a->B * a->H : 0);
}

/* Its gradient node's output: d(xp) [T, B, G*H], dh0 [B, Hr], dc0 [B, H] (LSTM),
   dW_hh [G*H, Hr], db_hh [G*H], dW_hr [Hr, H] (projection). Returns the total. */
static int64_t nn__rec_grad_layout(const nn__rec_attr *a, int64_t off[6]) {
    int64_t GH = (int64_t)a->G * a->H, o = 0;
    off[0] = o, o += (int64_t)a->T * a->B * GH;
    off[1] = o, o += (int64_t)a->B * a->Hr;
    off[2] = o, o += a->kind == NN__REC_LSTM ? (int64_t)a->B * a->H : 0;
    off[3] = o, o += GH * a->Hr;
    off[4] = o, o += GH;
    off[5] = o, o += a->i_whr >= 0 ? (int64_t)a->Hr * a->H : 0;
    return o;
}

/* A checked node's lengths outside [1, T] (PyTorch raises on them; here a frozen row's
   states stay its initial ones and nn_last_valid clamps): counted into its counter. */
static void nn__rec_len_count(nn_graph *g, const nn__node *n, const int32_t *lens, int B, int T) {
    int32_t *c;
    uint32_t bad = 0;
    int b;
    if (!n->check) return;
    for (b = 0; b < B; b++) bad += lens[b] < 1 || lens[b] > T;
    c = (int32_t *)g->checks.host + n->check_slot;
    *c = (int32_t)((uint32_t)*c + bad);
}
static nn_result nn__rec_len_launch(nn_graph *g, int id, const nn__buf *lens, int B, int T) {
    nn__launch *l = NULL;
    nn__k_rec_len_check k;
    nn_result r;
    if (!g->nodes[id].check) return NN_OK;
    r = nn__launch_kernel(g, id, "recurrent", "rec_len_check", (size_t)B, &l);
    if (r != NN_OK) return r;
    memset(&k, 0, sizeof k);
    k.lens = lens;
    k.n = B;
    k.T = T;
    k.bad = &g->checks;
    k.slot = g->nodes[id].check_slot;
    return nn__kargs_rec_len_check(l, &k);
}

/* ==== REC_WS: a sequence node's workspace [n], written by the sequence node that takes it
   and read by its gradient node (its order in the schedule: ids). No computation ==== */

static nn_result nn__cpu_rec_ws(nn_graph *g, nn__node *n) {
    (void)g, (void)n;
    return NN_OK;
}
static nn_result nn__launch_rec_ws(nn_graph *g, int id) {
    (void)g, (void)id;
    return NN_OK;
}
#define nn__grad_rec_ws nn__grad_none
#define nn__plan_rec_ws nn__no_plan

/* ==== REC_SEQ: one layer-direction over time: xp [T*B, G*H] (x W_ih^T + b_ih), W_hh
   [G*H, Hr], the workspace, then the optional b_hh [G*H], h0 [B, Hr], c0 [B, H], lengths
   int32 [B], W_hr [Hr, H] -> [Y | h_n | c_n] (nn__rec_out_size). No PyTorch op alone: the
   loop of nn.LSTM's (nn.RNN's, nn.GRU's) forward for one layer and direction ==== */

/* The sequence node and its workspace; Y, h_n and c_n (each NULL: not made) are slices of it. */
static void nn__rec_seq(nn_graph *g, const nn__rec_attr *at, nn_tensor xp, nn_tensor whh, nn_tensor bhh, nn_tensor h0,
                        nn_tensor c0, nn_tensor lens, nn_tensor whr, const char *check, nn_tensor *y, nn_tensor *hn,
                        nn_tensor *cn) {
    int in[8], n_in = 3, ws, id;
    int64_t off[5], TBH = (int64_t)at->T * at->B * at->Hr;
    nn__rec_attr a = *at;
    nn_tensor out;
    a.i_bias = a.i_h0 = a.i_c0 = a.i_len = a.i_whr = -1;
    if (whr.id > 0) a.i_whr = 0; /* the layout reads only whether it is there */
    ws = nn__new_node(g, NN__OP_REC_WS, NN_F32, nn_shape1(nn__rec_ws_layout(&a, off)), NULL, 0);
    if (ws < 0) {
        *y = nn__tensor(-1);
        return;
    }
    in[0] = xp.id, in[1] = whh.id, in[2] = ws;
    if (bhh.id > 0) a.i_bias = n_in, in[n_in++] = bhh.id;
    if (h0.id > 0) a.i_h0 = n_in, in[n_in++] = h0.id;
    if (c0.id > 0) a.i_c0 = n_in, in[n_in++] = c0.id;
    if (lens.id > 0) a.i_len = n_in, in[n_in++] = lens.id;
    if (whr.id > 0) a.i_whr = n_in, in[n_in++] = whr.id;
    id = nn__new_node(g, NN__OP_REC_SEQ, NN_F32, nn_shape1(nn__rec_out_size(&a)), in, n_in);
    if (id < 0) {
        *y = nn__tensor(-1);
        return;
    }
    g->nodes[id].a.rec = a;
    if (lens.id > 0) g->nodes[id].check = check;
    out = nn__tensor(id);
    *y = nn_reshape(g, nn_slice(g, out, 0, 0, TBH), nn_shape3(a.T, a.B, a.Hr));
    if (hn) *hn = nn_reshape(g, nn_slice(g, out, 0, TBH, (int64_t)a.B * a.Hr), nn_shape3(1, a.B, a.Hr));
    if (cn && a.kind == NN__REC_LSTM)
        *cn = nn_reshape(g, nn_slice(g, out, 0, TBH + (int64_t)a.B * a.Hr, (int64_t)a.B * a.H), nn_shape3(1, a.B, a.H));
}

/* d(xp), d(W_hh), d(b_hh), d(h0), d(c0), d(W_hr): slices of one REC_SEQ_GRAD node. */
static void nn__grad_rec_seq(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__rec_attr at = n.a.rec;
    int64_t off[6], total;
    int in[5], n_in = 3, k, any = 0;
    nn_tensor pk;
    for (k = 0; k < n.n_in; k++) any |= k != 2 && g->nodes[n.in[k]].needs_grad;
    if (!any) return;
    in[0] = gy.id, in[1] = n.in[1], in[2] = n.in[2];
    if (at.i_len >= 0) in[n_in] = n.in[at.i_len], at.i_len = n_in++;
    if (at.i_whr >= 0) in[n_in] = n.in[at.i_whr], at.i_whr = n_in++;
    total = nn__rec_grad_layout(&at, off);
    pk = nn__tensor(nn__new_node(g, NN__OP_REC_SEQ_GRAD, NN_F32, nn_shape1(total), in, n_in));
    if (pk.id < 0) return;
    g->nodes[pk.id].a.rec = at;
    /* the shape copied first: nn_slice may move the node array, and the order in which a
       call's arguments are evaluated is unspecified */
#define NN__REC_ACC(i, o, len)                                                                            \
    if ((i) >= 0 && g->nodes[n.in[i]].needs_grad) {                                                      \
        nn_shape sh_ = g->nodes[n.in[i]].shape;                                                          \
        nn__acc_grad(g, n.in[i], nn_reshape(g, nn_slice(g, pk, 0, (o), (len)), sh_));                    \
    }
    NN__REC_ACC(0, off[0], off[1] - off[0]);
    NN__REC_ACC(1, off[3], off[4] - off[3]);
    NN__REC_ACC(n.a.rec.i_bias, off[4], off[5] - off[4]);
    NN__REC_ACC(n.a.rec.i_h0, off[1], off[2] - off[1]);
    NN__REC_ACC(n.a.rec.i_c0, off[2], off[3] - off[2]);
    NN__REC_ACC(n.a.rec.i_whr, off[5], total - off[5]);
#undef NN__REC_ACC
}

/* the state product of one step [B, G*H]; on the CPU backend then the time loop's memory
   (nn__cpu_rec_mem: W_hh packed, the tasks' GEMM packing), so a run allocates nothing */
static void nn__plan_rec_seq(nn_graph *g, nn__node *n) {
    n->scratch = (int64_t)n->a.rec.B * n->a.rec.G * n->a.rec.H;
    if (g->ctx->backend->host_memory) n->scratch += nn__cpu_rec_mem(g->ctx->threads, &n->a.rec, 0, NULL);
}

#define NN__REC_OPT(n, i) ((i) >= 0 ? g->nodes[(n)->in[i]].buf.host : NULL)

static nn_result nn__cpu_rec_seq(nn_graph *g, nn__node *n) {
    const nn__rec_attr *a = &n->a.rec;
    int T = a->T, B = a->B, H = a->H, Hr = a->Hr;
    int64_t off[5];
    const float *xp = NN__F(n->in[0]), *whh = NN__F(n->in[1]);
    const float *bias = NN__REC_OPT(n, a->i_bias), *h0 = NN__REC_OPT(n, a->i_h0), *c0 = NN__REC_OPT(n, a->i_c0);
    const float *whr = NN__REC_OPT(n, a->i_whr);
    const int32_t *lens = a->i_len >= 0 ? NN__I(n->in[a->i_len]) : NULL;
    float *ws = NN__F(n->in[2]), *y = n->buf.host, *hp = n->scratch_buf.host;
    size_t BHr = (size_t)B * Hr, BH = (size_t)B * H;
    nn__rec_job J;
    nn__rec_ws_layout(a, off);
    if (lens) nn__rec_len_count(g, n, lens, B, T);
    if (h0) memcpy(ws + off[1], h0, BHr * 4);
    else memset(ws + off[1], 0, BHr * 4);
    if (a->kind == NN__REC_LSTM) {
        if (c0) memcpy(ws + off[2], c0, BH * 4);
        else memset(ws + off[2], 0, BH * 4);
    }
    memset(&J, 0, sizeof J);
    J.a = a, J.xp = xp, J.whh = whh, J.bias = bias, J.whr = whr, J.lens = lens, J.ws = ws, J.y = y, J.hp = hp;
    memcpy(J.off, off, sizeof off);
    nn__cpu_rec_run(g->ctx->threads, &J, nn__cpu_rec_seq_task, 0, hp + (size_t)B * a->G * H);
    memcpy(y + (size_t)T * BHr, ws + off[1] + (size_t)T * BHr, BHr * 4);
    if (a->kind == NN__REC_LSTM) memcpy(y + (size_t)(T + 1) * BHr, ws + off[2] + (size_t)T * BH, BH * 4);
    return NN_OK;
}

static nn_result nn__launch_rec_copy(nn_graph *g, int id, const nn__buf *src, int osrc, const nn__buf *dst, int odst, int64_t count) {
    nn__launch *l = NULL;
    nn__k_rec_copy k;
    nn_result r = nn__launch_kernel(g, id, "recurrent", "rec_copy", (size_t)count, &l);
    if (r != NN_OK) return r;
    memset(&k, 0, sizeof k);
    k.src = src ? src : &g->one;
    k.dst = dst;
    k.has_src = src != NULL;
    k.osrc = osrc;
    k.odst = odst;
    k.n = (int)count;
    return nn__kargs_rec_copy(l, &k);
}

/* one product on kernels/gemm.cl: C [M, N] (ldc, at oc) = op(A) op(B) + beta C */
static nn_result nn__rec_gemm(nn_graph *g, int id, int ta, int tb, int M, int N, int K, const nn__buf *A, int lda, int oa,
                              const nn__buf *B, int ldb, int ob, const nn__buf *C, int ldc, int oc, float beta) {
    int pa[4], pb[4], pc[4];
    pa[0] = lda, pa[1] = oa, pa[2] = pa[3] = 0;
    pb[0] = ldb, pb[1] = ob, pb[2] = pb[3] = 0;
    pc[0] = ldc, pc[1] = oc, pc[2] = pc[3] = 0;
    return nn__launch_gemm_beta(g, id, ta, tb, M, N, K, A, pa, B, pb, C, pc, 1, 1, beta);
}

#define NN__REC_BUF(n, i) ((i) >= 0 ? &g->nodes[(n)->in[i]].buf : NULL)

static nn_result nn__launch_rec_seq(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__rec_attr *a = &n->a.rec;
    int T = a->T, B = a->B, H = a->H, Hr = a->Hr, GH = a->G * a->H, s;
    int64_t off[5];
    const nn__buf *ws = &g->nodes[n->in[2]].buf, *whh = &g->nodes[n->in[1]].buf, *y = &n->buf;
    const nn__buf *lens = NN__REC_BUF(n, a->i_len), *whr = NN__REC_BUF(n, a->i_whr), *bias = NN__REC_BUF(n, a->i_bias);
    int BHr = B * Hr, BH = B * H;
    nn_result r;
    nn__rec_ws_layout(a, off);
    r = lens ? nn__rec_len_launch(g, id, lens, B, T) : NN_OK;
    if (r == NN_OK) r = nn__launch_rec_copy(g, id, NN__REC_BUF(n, a->i_h0), 0, ws, (int)off[1], BHr);
    if (r == NN_OK && a->kind == NN__REC_LSTM) r = nn__launch_rec_copy(g, id, NN__REC_BUF(n, a->i_c0), 0, ws, (int)off[2], BH);
    for (s = 0; s < T && r == NN_OK; s++) {
        int t = a->reverse ? T - 1 - s : s, oh = (int)off[1] + s * BHr;
        nn__launch *l = NULL;
        nn__k_rec_gates_fwd k;
        r = nn__rec_gemm(g, id, 0, 1, B, GH, Hr, ws, Hr, oh, whh, Hr, 0, &n->scratch_buf, GH, 0, 0.0f);
        if (r == NN_OK) r = nn__launch_kernel(g, id, "recurrent", "rec_gates_fwd", (size_t)BH, &l);
        if (r != NN_OK) break;
        memset(&k, 0, sizeof k);
        k.xp = &g->nodes[n->in[0]].buf;
        k.hp = &n->scratch_buf;
        k.bias = bias ? bias : &g->one;
        k.lens = lens ? lens : &g->one;
        k.ws = ws;
        k.y = y;
        k.kind = a->kind;
        k.B = B;
        k.H = H;
        k.Hr = Hr;
        k.t = t;
        k.has_bias = bias != NULL;
        k.has_len = lens != NULL;
        k.proj = whr != NULL;
        k.oxp = t * B * GH;
        k.og = (int)off[0] + s * B * GH;
        k.oh = oh;
        k.oc = (int)off[2] + s * BH;
        k.ou = (int)off[3] + s * BH;
        k.ohn = (int)off[4] + s * BH;
        k.oy = t * BHr;
        r = nn__kargs_rec_gates_fwd(l, &k);
        if (r == NN_OK && whr) {
            nn__k_rec_proj_fix f;
            r = nn__rec_gemm(g, id, 0, 1, B, Hr, H, ws, H, (int)off[3] + s * BH, whr, H, 0, ws, Hr, oh + BHr, 0.0f);
            if (r == NN_OK) r = nn__launch_kernel(g, id, "recurrent", "rec_proj_fix", (size_t)BHr, &l);
            if (r != NN_OK) break;
            memset(&f, 0, sizeof f);
            f.ws = ws;
            f.y = y;
            f.lens = lens ? lens : &g->one;
            f.has_len = lens != NULL;
            f.B = B;
            f.Hr = Hr;
            f.t = t;
            f.oh = oh;
            f.oy = t * BHr;
            r = nn__kargs_rec_proj_fix(l, &f);
        }
    }
    if (r == NN_OK) r = nn__launch_rec_copy(g, id, ws, (int)off[1] + T * BHr, y, T * BHr, BHr);
    if (r == NN_OK && a->kind == NN__REC_LSTM) r = nn__launch_rec_copy(g, id, ws, (int)off[2] + T * BH, y, (T + 1) * BHr, BH);
    return r;
}

/* ==== REC_SEQ_GRAD: gy [Y | h_n | c_n], W_hh, the workspace, then the optional lengths
   and W_hr -> [d(xp) | dh0 | dc0 | dW_hh | db_hh | dW_hr] (nn__rec_grad_layout) ==== */

#define nn__grad_rec_seq_grad nn__grad_none

/* d(hp) of every step [T, B, G*H] (processing order), and with a projection the state
   gradients [T, B, Hr] and one step's gradient of o*tanh(c) [B, H]; on the CPU backend
   then the time loop's memory (nn__cpu_rec_mem) */
static int64_t nn__rec_grad_scratch(const nn__rec_attr *a) {
    int64_t TB = (int64_t)a->T * a->B;
    return TB * a->G * a->H + (a->i_whr >= 0 ? TB * a->Hr + (int64_t)a->B * a->H : 0);
}
static void nn__plan_rec_seq_grad(nn_graph *g, nn__node *n) {
    n->scratch = nn__rec_grad_scratch(&n->a.rec);
    if (g->ctx->backend->host_memory) n->scratch += nn__cpu_rec_mem(g->ctx->threads, &n->a.rec, 1, NULL);
}

static nn_result nn__cpu_rec_seq_grad(nn_graph *g, nn__node *n) {
    const nn__rec_attr *a = &n->a.rec;
    int T = a->T, B = a->B, H = a->H, Hr = a->Hr, GH = a->G * a->H;
    int64_t off[5], po[6];
    const float *gy = NN__F(n->in[0]), *whh = NN__F(n->in[1]);
    float *ws = NN__F(n->in[2]);
    const float *whr = NN__REC_OPT(n, a->i_whr);
    const int32_t *lens = a->i_len >= 0 ? NN__I(n->in[a->i_len]) : NULL;
    float *pk = n->buf.host, *dhp = n->scratch_buf.host;
    float *dht = dhp + (size_t)T * B * GH, *du = dht + (size_t)T * B * Hr;
    size_t BHr = (size_t)B * Hr, BH = (size_t)B * H;
    nn__threadpool *pool = g->ctx->threads;
    float *dh, *dc;
    nn__rec_job J;
    nn__rec_ws_layout(a, off);
    nn__rec_grad_layout(a, po);
    dh = pk + po[1];
    dc = pk + po[2];
    memcpy(dh, gy + (size_t)T * BHr, BHr * 4);
    if (a->kind == NN__REC_LSTM) memcpy(dc, gy + (size_t)(T + 1) * BHr, BH * 4);
    memset(&J, 0, sizeof J);
    J.a = a, J.xp = gy, J.whh = whh, J.whr = whr, J.lens = lens, J.ws = ws, J.y = pk, J.hp = dhp, J.dht = dht;
    J.du = du;
    memcpy(J.off, off, sizeof off);
    memcpy(J.po, po, sizeof po);
    nn__cpu_rec_run(pool, &J, nn__cpu_rec_grad_task, 1, dhp + nn__rec_grad_scratch(a));
    nn__sgemm(pool, 1, 0, GH, Hr, T * B, 1.0f, dhp, GH, ws + off[1], Hr, 0.0f, pk + po[3], Hr);
    nn__cpu_rec_colsum(dhp, pk + po[4], T * B, GH);
    if (whr) nn__sgemm(pool, 1, 0, Hr, H, T * B, 1.0f, dht, Hr, ws + off[3], H, 0.0f, pk + po[5], H);
    return NN_OK;
}

static nn_result nn__launch_rec_seq_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__rec_attr *a = &n->a.rec;
    int T = a->T, B = a->B, H = a->H, Hr = a->Hr, GH = a->G * a->H, s;
    int64_t off[5], po[6];
    const nn__buf *gy = &g->nodes[n->in[0]].buf, *whh = &g->nodes[n->in[1]].buf, *ws = &g->nodes[n->in[2]].buf;
    const nn__buf *lens = NN__REC_BUF(n, a->i_len), *whr = NN__REC_BUF(n, a->i_whr), *pk = &n->buf, *sc = &n->scratch_buf;
    int BHr = B * Hr, BH = B * H, odht = T * B * GH, odu = odht + T * BHr;
    nn__launch *l = NULL;
    nn_result r;
    nn__rec_ws_layout(a, off);
    nn__rec_grad_layout(a, po);
    r = nn__launch_rec_copy(g, id, gy, T * BHr, pk, (int)po[1], BHr);
    if (r == NN_OK && a->kind == NN__REC_LSTM) r = nn__launch_rec_copy(g, id, gy, (T + 1) * BHr, pk, (int)po[2], BH);
    for (s = T - 1; s >= 0 && r == NN_OK; s--) {
        int t = a->reverse ? T - 1 - s : s;
        nn__k_rec_gates_bwd k;
        if (whr) {
            nn__k_rec_proj_bwd p;
            r = nn__launch_kernel(g, id, "recurrent", "rec_proj_bwd", (size_t)BHr, &l);
            if (r != NN_OK) break;
            memset(&p, 0, sizeof p);
            p.gy = gy;
            p.pk = pk;
            p.sc = sc;
            p.lens = lens ? lens : &g->one;
            p.has_len = lens != NULL;
            p.B = B;
            p.Hr = Hr;
            p.t = t;
            p.ogy = t * BHr;
            p.odh = (int)po[1];
            p.odht = odht + s * BHr;
            r = nn__kargs_rec_proj_bwd(l, &p);
            if (r == NN_OK) r = nn__rec_gemm(g, id, 0, 0, B, H, Hr, sc, Hr, odht + s * BHr, whr, H, 0, sc, H, odu, 0.0f);
        }
        if (r == NN_OK) r = nn__launch_kernel(g, id, "recurrent", "rec_gates_bwd", (size_t)BH, &l);
        if (r != NN_OK) break;
        memset(&k, 0, sizeof k);
        k.ws = ws;
        k.gy = gy;
        k.sc = sc;
        k.pk = pk;
        k.lens = lens ? lens : &g->one;
        k.kind = a->kind;
        k.B = B;
        k.H = H;
        k.Hr = Hr;
        k.t = t;
        k.has_len = lens != NULL;
        k.proj = whr != NULL;
        k.og = (int)off[0] + s * B * GH;
        k.oh = (int)off[1] + s * BHr;
        k.oc = (int)off[2] + s * BH;
        k.ohn = (int)off[4] + s * BH;
        k.ogy = t * BHr;
        k.odu = odu;
        k.odhp = s * B * GH;
        k.odh = (int)po[1];
        k.odc = (int)po[2];
        k.odxp = (int)po[0] + t * B * GH;
        r = nn__kargs_rec_gates_bwd(l, &k);
        if (r == NN_OK) r = nn__rec_gemm(g, id, 0, 0, B, Hr, GH, sc, GH, s * B * GH, whh, Hr, 0, pk, Hr, (int)po[1], 1.0f);
    }
    if (r == NN_OK) r = nn__rec_gemm(g, id, 1, 0, GH, Hr, T * B, sc, GH, 0, ws, Hr, (int)off[1], pk, Hr, (int)po[3], 0.0f);
    if (r == NN_OK) {
        nn__k_rec_colsum c;
        r = nn__launch_kernel(g, id, "recurrent", "rec_colsum", (size_t)GH, &l);
        if (r != NN_OK) return r;
        memset(&c, 0, sizeof c);
        c.x = sc;
        c.y = pk;
        c.rows = T * B;
        c.cols = GH;
        c.ox = 0;
        c.oy = (int)po[4];
        r = nn__kargs_rec_colsum(l, &c);
    }
    if (r == NN_OK && whr) r = nn__rec_gemm(g, id, 1, 0, Hr, H, T * B, sc, Hr, odht, ws, H, (int)off[3], pk, H, (int)po[5], 0.0f);
    return r;
}

/* ==== REC_STATE: a stateful layer's carried states [L*D, B, X] (NAME.h_state,
   NAME.c_state): no inputs, kept across runs on the device (its own storage, zeros at
   compile), written by the user (nn_tensor_fill, nn_tensor_write, nn_rnn_reset_state) and
   by REC_STATE_SET; no gradient flows into it, which is truncated BPTT's cut. No PyTorch
   op: the tensors a PyTorch loop carries as h = h.detach() between chunks ==== */

#define nn__grad_rec_state nn__grad_none
#define nn__plan_rec_state nn__no_plan
static nn_result nn__cpu_rec_state(nn_graph *g, nn__node *n) {
    (void)g, (void)n;
    return NN_OK;
}
static nn_result nn__launch_rec_state(nn_graph *g, int id) {
    (void)g, (void)id;
    return NN_OK;
}

/* ==== REC_STATE_SET: state (input 0, a REC_STATE, written in place) = the run's final
   states (input 1, of its shape); a root with no output, after every reader of the state
   (node order: the layer's sequence nodes copied it into their workspaces first) ==== */

#define nn__grad_rec_state_set nn__grad_none
#define nn__plan_rec_state_set nn__no_plan
static nn_result nn__cpu_rec_state_set(nn_graph *g, nn__node *n) {
    memcpy(NN__F(n->in[0]), NN__F(n->in[1]), (size_t)g->nodes[n->in[0]].numel * 4);
    return NN_OK;
}
static nn_result nn__launch_rec_state_set(nn_graph *g, int id) {
    const nn__node *n = &g->nodes[id];
    return nn__launch_rec_copy(g, id, &g->nodes[n->in[1]].buf, 0, &g->nodes[n->in[0]].buf, 0, g->nodes[n->in[0]].numel);
}

/* The state tensor NAME.what of shape s (refused when the graph has one of that name). */
static nn_tensor nn__rec_state_tensor(nn_graph *g, const char *op, const char *name, const char *what, nn_shape s) {
    char nm[320];
    int id;
    snprintf(nm, sizeof nm, "%s.%s", name, what);
    if (nn_graph_find(g, nm).id > 0)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: stateful: the graph has a tensor %s already (one stateful layer per name)",
                           op, name, nm);
    id = nn__new_node(g, NN__OP_REC_STATE, NN_F32, s, NULL, 0);
    if (id < 0) return nn__tensor(-1);
    g->nodes[id].is_output = 1; /* its own storage, kept across runs */
    g->nodes[id].name = nn__strdup(nm);
    if (!g->nodes[id].name) return nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    return nn__tensor(id);
}

/* The root that writes src into the state st. */
static void nn__rec_state_set(nn_graph *g, nn_tensor st, nn_tensor src) {
    nn_shape none;
    int in[2], u;
    if (g->status != NN_OK) return;
    memset(&none, 0, sizeof none);
    in[0] = st.id, in[1] = src.id;
    u = nn__new_node(g, NN__OP_REC_STATE_SET, NN_F32, none, in, 2);
    if (u < 0) return;
    g->nodes[u].numel = 0;
    g->nodes[u].is_output = 1;
}

NN_API nn_result nn_rnn_reset_state(nn_graph *g, const char *name) {
    static const char *const what[2] = {"h_state", "c_state"};
    char nm[320];
    int k, found = 0;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (!name) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_rnn_reset_state: name is NULL");
    for (k = 0; k < 2; k++) {
        nn_tensor t;
        nn_result r;
        snprintf(nm, sizeof nm, "%s.%s", name, what[k]);
        t = nn_graph_find(g, nm);
        if (t.id <= 0 || g->nodes[t.id].op != NN__OP_REC_STATE) continue;
        r = nn_tensor_fill(g, t, 0.0f);
        if (r != NN_OK) return r;
        found++;
    }
    if (!found)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_rnn_reset_state: the graph has no stateful layer named \"%.200s\"", name);
    return NN_OK;
}

/* ==== the layers: nn_rnn, nn_lstm, nn_gru (PyTorch's nn.RNN, nn.LSTM, nn.GRU) ==== */

static int nn__rec_gates(int kind) { return kind == NN__REC_LSTM ? 4 : kind == NN__REC_GRU ? 3 : 1; }

/* A parameter NAME.stem{suffix} of shape s, U(+-1/sqrt(H)) as PyTorch's RNN modules. */
static nn_tensor nn__rec_param(nn_graph *g, const char *name, const char *stem, const char *suffix, nn_shape s, int64_t H) {
    char pn[320];
    nn_init init;
    init.kind = NN_INIT_UNIFORM;
    init.a = (float)(-1.0 / sqrt((double)H));
    init.b = -init.a;
    snprintf(pn, sizeof pn, "%s.%s%s", name, stem, suffix);
    return nn_param(g, pn, s, init);
}

/* A [L*D, B, X] state's row k as [B, X] (NN_NONE stays NN_NONE). */
static nn_tensor nn__rec_state_row(nn_graph *g, nn_tensor s, int k) {
    nn_shape sh;
    if (s.id == 0) return s;
    sh = nn_shape2(nn__n(g, s)->shape.dim[1], nn__n(g, s)->shape.dim[2]); /* before nn_slice moves the nodes */
    return nn_reshape(g, nn_slice(g, s, 0, k, 1), sh);
}

/* An optional state's shape [rows, B, X], or a refusal naming the op and the shapes. */
static int nn__rec_state_ok(nn_graph *g, const char *op, const char *what, nn_tensor s, int64_t rows, int64_t B, int64_t X) {
    nn__node *n;
    int o = nn__optional(g, op, s);
    if (o <= 0) return o == 0;
    if (!nn__expect_f32(g, op, s, what)) return 0;
    n = nn__n(g, s);
    if (n->shape.ndim != 3 || n->shape.dim[0] != rows || n->shape.dim[1] != B || n->shape.dim[2] != X) {
        char sh[128];
        nn__shape_str(&n->shape, sh, sizeof sh);
        nn__op_fail(g, NN_ERR_SHAPE, "%s: %s %s must be [%lld, %lld, %lld]", op, what, sh, (long long)rows, (long long)B,
                    (long long)X);
        return 0;
    }
    return 1;
}

/* Optional lengths: int32 [B]. */
static int nn__rec_lengths_ok(nn_graph *g, const char *op, nn_tensor lens, int64_t B) {
    nn__node *n;
    int o = nn__optional(g, op, lens);
    if (o <= 0) return o == 0;
    n = nn__n(g, lens);
    if (n->dtype != NN_I32 || n->shape.ndim != 1 || n->shape.dim[0] != B) {
        char sh[128];
        nn__shape_str(&n->shape, sh, sizeof sh);
        nn__op_fail(g, NN_ERR_SHAPE, "%s: lengths %s %s must be int32 [%lld]", op, nn__dtype_name(n->dtype), sh, (long long)B);
        return 0;
    }
    return 1;
}

static nn_tensor nn__rec_layers(nn_graph *g, const char *op, int kind, nn_tensor x, int64_t hidden, const nn_rnn_desc *desc,
                                const char *name) {
    nn_rnn_desc d;
    nn_tensor inp, out = nn__tensor(-1), hn[2 * 64], cn[2 * 64], hs = NN_NONE, cs = NN_NONE, hcat = NN_NONE, ccat = NN_NONE;
    int64_t T, B, H = hidden, Hr, I;
    int L, D, G = nn__rec_gates(kind), k, dir, perm[3] = {1, 0, 2}, first = g ? g->n_nodes : 0;
    float p;
    nn__rec_attr a;
    const char *lcheck = kind == NN__REC_LSTM ? "nn_lstm: lengths outside [1, T]" : kind == NN__REC_GRU ? "nn_gru: lengths outside [1, T]"
                                                                                                      : "nn_rnn: lengths outside [1, T]";
    if (desc) d = *desc;
    else memset(&d, 0, sizeof d);
    if (!nn__check(g, op, 1, &x) || !nn__expect_f32(g, op, x, "x")) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a name (at most 200 chars)", op);
    if (nn__n(g, x)->shape.ndim != 3) {
        char s[128];
        nn__shape_str(&nn__n(g, x)->shape, s, sizeof s);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s %s: x %s must be 3-D [T, B, input_size] ([B, T, input_size] with batch_first)", op,
                           name, s);
    }
    L = nn__defi(d.num_layers, 1);
    D = d.bidirectional ? 2 : 1;
    p = d.dropout == (float)NN_ZERO ? 0.0f : d.dropout;
    if (hidden < 1 || hidden > (1 << 24))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: hidden_size %lld is not in [1, 2^24]", op, name, (long long)hidden);
    if (L < 1 || L > 32) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: num_layers %d is not in [1, 32]", op, name, L);
    if (!(p >= 0.0f && p < 1.0f)) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: dropout %g is not in [0, 1)", op, name, p);
    if (d.proj_size != 0 && d.proj_size != NN_ZERO && (kind != NN__REC_LSTM || d.proj_size < 0 || d.proj_size >= hidden))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: proj_size %lld must be 0%s (hidden_size %lld)", op, name,
                           (long long)d.proj_size, kind == NN__REC_LSTM ? " or in [1, hidden_size)" : " (LSTM only)", (long long)hidden);
    if (d.nonlinearity != NN_RNN_TANH && (kind == NN__REC_LSTM || kind == NN__REC_GRU || d.nonlinearity != NN_RNN_RELU))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: nonlinearity %d is not %s", op, name, (int)d.nonlinearity,
                           kind <= NN__REC_RNN_RELU ? "NN_RNN_TANH or NN_RNN_RELU" : "NN_RNN_TANH (nn_rnn only)");
    if (kind == NN__REC_RNN_TANH && d.nonlinearity == NN_RNN_RELU) kind = NN__REC_RNN_RELU;
    Hr = d.proj_size > 0 ? d.proj_size : H;
    if (d.c0.id != 0 && kind != NN__REC_LSTM) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: c0 is nn_lstm's only", op, name);
    if (d.c_n && kind != NN__REC_LSTM) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: c_n is nn_lstm's only", op, name);
    if (d.stateful && (d.h0.id != 0 || d.c0.id != 0))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: stateful keeps its own initial states; h0 and c0 must be NN_NONE", op,
                           name);
    inp = d.batch_first ? nn_permute(g, x, perm, 3) : x;
    if (inp.id < 0) return inp;
    T = nn__n(g, inp)->shape.dim[0];
    B = nn__n(g, inp)->shape.dim[1];
    I = nn__n(g, inp)->shape.dim[2];
    if (!nn__rec_state_ok(g, op, "h0", d.h0, (int64_t)L * D, B, Hr) || !nn__rec_state_ok(g, op, "c0", d.c0, (int64_t)L * D, B, H) ||
        !nn__rec_lengths_ok(g, op, d.lengths, B))
        return nn__tensor(-1);
    if (d.stateful) {
        hs = nn__rec_state_tensor(g, op, name, "h_state", nn_shape3((int64_t)L * D, B, Hr));
        if (hs.id > 0 && kind == NN__REC_LSTM) cs = nn__rec_state_tensor(g, op, name, "c_state", nn_shape3((int64_t)L * D, B, H));
        if (g->status != NN_OK) return nn__tensor(-1);
        d.h0 = hs, d.c0 = cs;
    }
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.T = (int)T, a.B = (int)B, a.H = (int)H, a.Hr = (int)Hr, a.G = G;
    for (k = 0; k < L && g->status == NN_OK; k++) {
        nn_tensor ys[2], x2 = nn_reshape(g, inp, nn_shape2(T * B, k == 0 ? I : D * Hr));
        for (dir = 0; dir < D; dir++) {
            char stem[64];
            const char *sfx = dir ? "_reverse" : "";
            nn_tensor wih, whh, bih = NN_NONE, bhh = NN_NONE, whr = NN_NONE, xp;
            snprintf(stem, sizeof stem, "weight_ih_l%d", k);
            wih = nn__rec_param(g, name, stem, sfx, nn_shape2(G * H, k == 0 ? I : D * Hr), H);
            snprintf(stem, sizeof stem, "weight_hh_l%d", k);
            whh = nn__rec_param(g, name, stem, sfx, nn_shape2(G * H, Hr), H);
            if (!d.no_bias) {
                snprintf(stem, sizeof stem, "bias_ih_l%d", k);
                bih = nn__rec_param(g, name, stem, sfx, nn_shape1(G * H), H);
                snprintf(stem, sizeof stem, "bias_hh_l%d", k);
                bhh = nn__rec_param(g, name, stem, sfx, nn_shape1(G * H), H);
            }
            if (Hr != H) {
                snprintf(stem, sizeof stem, "weight_hr_l%d", k);
                whr = nn__rec_param(g, name, stem, sfx, nn_shape2(Hr, H), H);
            }
            xp = nn_matmul(g, x2, wih, 0, 1);
            if (bih.id != 0) xp = nn_add(g, xp, bih);
            if (g->status != NN_OK) return nn__tensor(-1);
            a.reverse = dir;
            nn__rec_seq(g, &a, xp, whh, bhh, nn__rec_state_row(g, d.h0, k * D + dir), nn__rec_state_row(g, d.c0, k * D + dir),
                        d.lengths, whr, k + dir == 0 ? lcheck : NULL, &ys[dir], &hn[k * D + dir], &cn[k * D + dir]);
        }
        out = D == 2 ? nn_concat(g, ys, 2, 2) : ys[0];
        if (k < L - 1 && p > 0.0f) out = nn_dropout(g, out, p);
        inp = out;
    }
    if (g->status != NN_OK) return nn__tensor(-1);
    if (d.h_n || d.stateful) hcat = L * D == 1 ? hn[0] : nn_concat(g, hn, L * D, 0);
    if (d.c_n || (d.stateful && kind == NN__REC_LSTM)) ccat = L * D == 1 ? cn[0] : nn_concat(g, cn, L * D, 0);
    if (d.h_n) *d.h_n = hcat;
    if (d.c_n) *d.c_n = ccat;
    if (d.stateful) { /* after the run's forward part the final states become the next run's initial ones */
        nn__rec_state_set(g, hs, hcat);
        if (kind == NN__REC_LSTM) nn__rec_state_set(g, cs, ccat);
        if (g->status != NN_OK) return nn__tensor(-1);
    }
    out = d.batch_first ? nn_permute(g, out, perm, 3) : out;
    {
        char qn[1300], pf[32], pj[64];
        nn_tensor ins[1];
        ins[0] = x;
        pj[0] = 0;
        if (kind == NN__REC_LSTM) snprintf(pj, sizeof pj, ", \"proj_size\": %lld", (long long)(Hr != H ? Hr : 0));
        if (kind <= NN__REC_RNN_RELU) snprintf(pj, sizeof pj, ", \"nonlinearity\": \"%s\"", kind == NN__REC_RNN_RELU ? "relu" : "tanh");
        nn__note_layer(g, out, first, ins, 1,
                       desc && (desc->h0.id || desc->c0.id || desc->lengths.id || desc->stateful)
                           ? "a recurrent layer given initial states, lengths or stateful" : NULL,
                       "{\"type\": \"%s\", \"name\": %s, \"input_size\": %lld, \"hidden_size\": %lld, \"num_layers\": %d, \"bias\": %s, "
                       "\"batch_first\": %s, \"dropout\": %s, \"bidirectional\": %s%s}",
                       kind == NN__REC_LSTM ? "lstm" : kind == NN__REC_GRU ? "gru" : "rnn", nn__note_str(name, qn, sizeof qn), (long long)I,
                       (long long)H, L, d.no_bias ? "false" : "true", d.batch_first ? "true" : "false", nn__note_f(p, pf, sizeof pf),
                       D == 2 ? "true" : "false", pj);
    }
    return out;
}

NN_API nn_tensor nn_rnn(nn_graph *g, nn_tensor x, int64_t hidden_size, const nn_rnn_desc *desc, const char *name) {
    return nn__rec_layers(g, "nn_rnn", NN__REC_RNN_TANH, x, hidden_size, desc, name);
}
NN_API nn_tensor nn_lstm(nn_graph *g, nn_tensor x, int64_t hidden_size, const nn_rnn_desc *desc, const char *name) {
    return nn__rec_layers(g, "nn_lstm", NN__REC_LSTM, x, hidden_size, desc, name);
}
NN_API nn_tensor nn_gru(nn_graph *g, nn_tensor x, int64_t hidden_size, const nn_rnn_desc *desc, const char *name) {
    return nn__rec_layers(g, "nn_gru", NN__REC_GRU, x, hidden_size, desc, name);
}

/* ==== the cells: nn_rnn_cell, nn_lstm_cell, nn_gru_cell (nn.RNNCell, nn.LSTMCell,
   nn.GRUCell): a sequence node of one step ==== */

/* A cell's optional state: float32 [B, H]. */
static int nn__rec_cell_state_ok(nn_graph *g, const char *op, const char *name, const char *what, nn_tensor s, int64_t B,
                                 int64_t H) {
    nn__node *n;
    int o = nn__optional(g, op, s);
    if (o <= 0) return o == 0;
    if (!nn__expect_f32(g, op, s, what)) return 0;
    n = nn__n(g, s);
    if (n->shape.ndim != 2 || n->shape.dim[0] != B || n->shape.dim[1] != H) {
        char sh[128];
        nn__shape_str(&n->shape, sh, sizeof sh);
        nn__op_fail(g, NN_ERR_SHAPE, "%s %s: %s %s must be [%lld, %lld]", op, name, what, sh, (long long)B, (long long)H);
        return 0;
    }
    return 1;
}

static nn_tensor nn__rec_cell(nn_graph *g, const char *op, int kind, nn_tensor x, nn_tensor h, nn_tensor c, int64_t hidden,
                              const nn_rnn_cell_desc *desc, const char *name, nn_tensor *c_out) {
    nn_rnn_cell_desc d;
    nn_tensor wih, whh, bih = NN_NONE, bhh = NN_NONE, xp, y, cn;
    int64_t B, I, H = hidden;
    int G;
    nn__rec_attr a;
    if (desc) d = *desc;
    else memset(&d, 0, sizeof d);
    if (!nn__check(g, op, 1, &x) || !nn__expect_f32(g, op, x, "x")) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a name (at most 200 chars)", op);
    if (nn__n(g, x)->shape.ndim != 2) {
        char s[128];
        nn__shape_str(&nn__n(g, x)->shape, s, sizeof s);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s %s: x %s must be 2-D [B, input_size]", op, name, s);
    }
    if (hidden < 1 || hidden > (1 << 24))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: hidden_size %lld is not in [1, 2^24]", op, name, (long long)hidden);
    if (d.nonlinearity != NN_RNN_TANH && (kind != NN__REC_RNN_TANH || d.nonlinearity != NN_RNN_RELU))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: nonlinearity %d is not %s", op, name, (int)d.nonlinearity,
                           kind == NN__REC_RNN_TANH ? "NN_RNN_TANH or NN_RNN_RELU" : "NN_RNN_TANH (nn_rnn_cell only)");
    if (kind == NN__REC_RNN_TANH && d.nonlinearity == NN_RNN_RELU) kind = NN__REC_RNN_RELU;
    B = nn__n(g, x)->shape.dim[0];
    I = nn__n(g, x)->shape.dim[1];
    if (!nn__rec_cell_state_ok(g, op, name, "h", h, B, H) || !nn__rec_cell_state_ok(g, op, name, "c", c, B, H))
        return nn__tensor(-1);
    G = nn__rec_gates(kind);
    wih = nn__rec_param(g, name, "weight_ih", "", nn_shape2(G * H, I), H);
    whh = nn__rec_param(g, name, "weight_hh", "", nn_shape2(G * H, H), H);
    if (!d.no_bias) {
        bih = nn__rec_param(g, name, "bias_ih", "", nn_shape1(G * H), H);
        bhh = nn__rec_param(g, name, "bias_hh", "", nn_shape1(G * H), H);
    }
    xp = nn_matmul(g, x, wih, 0, 1);
    if (bih.id != 0) xp = nn_add(g, xp, bih);
    if (g->status != NN_OK) return nn__tensor(-1);
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.T = 1, a.B = (int)B, a.H = a.Hr = (int)H, a.G = G;
    nn__rec_seq(g, &a, xp, whh, bhh, h, c, NN_NONE, NN_NONE, NULL, &y, NULL,
                c_out ? &cn : NULL);
    if (c_out) *c_out = g->status == NN_OK ? nn_reshape(g, cn, nn_shape2(B, H)) : nn__tensor(-1);
    return g->status == NN_OK ? nn_reshape(g, y, nn_shape2(B, H)) : nn__tensor(-1);
}

NN_API nn_tensor nn_rnn_cell(nn_graph *g, nn_tensor x, nn_tensor h, int64_t hidden_size, const nn_rnn_cell_desc *desc,
                             const char *name) {
    return nn__rec_cell(g, "nn_rnn_cell", NN__REC_RNN_TANH, x, h, NN_NONE, hidden_size, desc, name, NULL);
}
NN_API nn_tensor nn_lstm_cell(nn_graph *g, nn_tensor x, nn_tensor h, nn_tensor c, int64_t hidden_size,
                              const nn_rnn_cell_desc *desc, const char *name, nn_tensor *c_out) {
    return nn__rec_cell(g, "nn_lstm_cell", NN__REC_LSTM, x, h, c, hidden_size, desc, name, c_out);
}
NN_API nn_tensor nn_gru_cell(nn_graph *g, nn_tensor x, nn_tensor h, int64_t hidden_size, const nn_rnn_cell_desc *desc,
                             const char *name) {
    return nn__rec_cell(g, "nn_gru_cell", NN__REC_GRU, x, h, NN_NONE, hidden_size, desc, name, NULL);
}

/* ==== LAST_VALID: y [T, B, F] ([B, T, F]), lengths int32 [B] -> [B, F] at each row's
   lengths - 1 (clamped to [0, T - 1]); PyTorch: y[lengths - 1, arange(B)]. LAST_VALID_GRAD:
   dy [B, F] -> dx of y's shape ==== */

NN_API nn_tensor nn_last_valid(nn_graph *g, nn_tensor y, nn_tensor lengths, int batch_first) {
    nn_tensor ts[2], t;
    nn__node *n;
    int64_t T, B;
    ts[0] = y, ts[1] = lengths;
    if (!nn__check(g, "nn_last_valid", 2, ts) || !nn__expect_f32(g, "nn_last_valid", y, "y")) return nn__tensor(-1);
    n = nn__n(g, y);
    if (n->shape.ndim != 3) {
        char s[128];
        nn__shape_str(&n->shape, s, sizeof s);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_last_valid: y %s must be 3-D [T, B, F] ([B, T, F] with batch_first)", s);
    }
    T = n->shape.dim[batch_first ? 1 : 0];
    B = n->shape.dim[batch_first ? 0 : 1];
    if (!nn__rec_lengths_ok(g, "nn_last_valid", lengths, B)) return nn__tensor(-1);
    t = nn__op2(g, NN__OP_LAST_VALID, NN_F32, nn_shape2(B, n->shape.dim[2]), y.id, lengths.id);
    if (t.id >= 0) {
        nn__rec_attr *a = &g->nodes[t.id].a.rec;
        memset(a, 0, sizeof *a);
        a->T = (int)T, a->B = (int)B, a->F = (int)g->nodes[y.id].shape.dim[2], a->batch_first = batch_first != 0;
        g->nodes[t.id].check = "nn_last_valid: lengths outside [1, T]";
    }
    return t;
}

static void nn__grad_last_valid(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (!ga) return;
    t = nn__op2(g, NN__OP_LAST_VALID_GRAD, NN_F32, g->nodes[a].shape, gy.id, b);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
}
#define nn__grad_last_valid_grad nn__grad_none
#define nn__plan_last_valid nn__no_plan
#define nn__plan_last_valid_grad nn__no_plan

static nn_result nn__cpu_last_valid(nn_graph *g, nn__node *n) {
    const nn__rec_attr *a = &n->a.rec;
    nn__rec_len_count(g, n, NN__I(n->in[1]), a->B, a->T);
    nn__cpu_last_valid_fwd(NN__F(n->in[0]), NN__I(n->in[1]), n->buf.host, a->T, a->B, a->F, a->batch_first);
    return NN_OK;
}
static nn_result nn__cpu_last_valid_grad(nn_graph *g, nn__node *n) {
    const nn__rec_attr *a = &n->a.rec;
    nn__cpu_last_valid_bwd(NN__F(n->in[0]), NN__I(n->in[1]), n->buf.host, a->T, a->B, a->F, a->batch_first);
    return NN_OK;
}

static nn_result nn__launch_last_valid_any(nn_graph *g, int id, int bwd) {
    nn__node *n = &g->nodes[id];
    const nn__rec_attr *a = &n->a.rec;
    nn__launch *l = NULL;
    nn_result r = bwd ? NN_OK : nn__rec_len_launch(g, id, &g->nodes[n->in[1]].buf, a->B, a->T);
    if (r == NN_OK) r = nn__launch_kernel(g, id, "recurrent", bwd ? "last_valid_bwd" : "last_valid_fwd", (size_t)n->numel, &l);
    if (r != NN_OK) return r;
    if (bwd) {
        nn__k_last_valid_bwd k;
        memset(&k, 0, sizeof k);
        k.dy = &g->nodes[n->in[0]].buf;
        k.lens = &g->nodes[n->in[1]].buf;
        k.dx = &n->buf;
        k.T = a->T, k.B = a->B, k.nf = a->F, k.bf = a->batch_first;
        return nn__kargs_last_valid_bwd(l, &k);
    } else {
        nn__k_last_valid_fwd k;
        memset(&k, 0, sizeof k);
        k.x = &g->nodes[n->in[0]].buf;
        k.lens = &g->nodes[n->in[1]].buf;
        k.y = &n->buf;
        k.T = a->T, k.B = a->B, k.nf = a->F, k.bf = a->batch_first;
        return nn__kargs_last_valid_fwd(l, &k);
    }
}
static nn_result nn__launch_last_valid(nn_graph *g, int id) { return nn__launch_last_valid_any(g, id, 0); }
static nn_result nn__launch_last_valid_grad(nn_graph *g, int id) { return nn__launch_last_valid_any(g, id, 1); }

/* ==== REC_REVERSE: x [T, B, F...] ([B, T, F...] with batch_first), the optional int32
   lengths [B] -> x with each sequence's first lengths[b] steps in reverse order (the rest
   as they are): the reversal of a packed sequence (PyTorch's reverse direction starts at
   each sequence's own last element). A permutation that is its own inverse, so its
   gradient is the same op on gy. Built by nn_bidirectional ==== */

static nn_tensor nn__rec_reverse(nn_graph *g, nn_tensor x, nn_tensor lens, int batch_first) {
    const nn__node *xn = &g->nodes[x.id];
    int d;
    nn_tensor t;
    nn__rec_attr *a;
    t = lens.id > 0 ? nn__op2(g, NN__OP_REC_REVERSE, NN_F32, xn->shape, x.id, lens.id) : nn__op1(g, NN__OP_REC_REVERSE, NN_F32, xn->shape, x.id);
    if (t.id < 0) return t;
    xn = &g->nodes[x.id];
    a = &g->nodes[t.id].a.rec;
    memset(a, 0, sizeof *a);
    a->T = (int)xn->shape.dim[batch_first ? 1 : 0];
    a->B = (int)xn->shape.dim[batch_first ? 0 : 1];
    a->F = 1;
    for (d = 2; d < xn->shape.ndim; d++) a->F *= (int)xn->shape.dim[d];
    a->batch_first = batch_first != 0;
    a->i_len = lens.id > 0 ? 1 : -1;
    return t;
}

static void nn__grad_rec_reverse(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (!ga) return;
    t = nn__rec_reverse(g, gy, n.a.rec.i_len >= 0 ? nn__tensor(b) : NN_NONE, n.a.rec.batch_first);
    nn__acc_grad(g, a, t);
}
#define nn__plan_rec_reverse nn__no_plan

static nn_result nn__cpu_rec_reverse(nn_graph *g, nn__node *n) {
    const nn__rec_attr *a = &n->a.rec;
    nn__cpu_rec_reverse_loop(NN__F(n->in[0]), a->i_len >= 0 ? NN__I(n->in[1]) : NULL, n->buf.host, a->T, a->B, a->F, a->batch_first);
    return NN_OK;
}

static nn_result nn__launch_rec_reverse(nn_graph *g, int id) {
    const nn__node *n = &g->nodes[id];
    const nn__rec_attr *a = &n->a.rec;
    nn__launch *l = NULL;
    nn__k_rec_reverse k;
    nn_result r = nn__launch_kernel(g, id, "recurrent", "rec_reverse", (size_t)n->numel, &l);
    if (r != NN_OK) return r;
    memset(&k, 0, sizeof k);
    k.x = &g->nodes[n->in[0]].buf;
    k.lens = a->i_len >= 0 ? &g->nodes[n->in[1]].buf : &g->one;
    k.y = &n->buf;
    k.T = a->T, k.B = a->B, k.nf = a->F, k.bf = a->batch_first, k.has_len = a->i_len >= 0;
    return nn__kargs_rec_reverse(l, &k);
}

/* ==== nn_bidirectional: fn's layer forward in time and over the reversed sequences,
   concatenated along dim 2 ==== */

NN_API nn_tensor nn_bidirectional(nn_graph *g, nn_tensor x, nn_tensor lengths, int batch_first, nn_rnn_direction_fn fn, void *user,
                                  const char *name) {
    char rname[256];
    nn_tensor ys[2], xr;
    nn__node *n;
    int64_t T, B;
    if (!nn__check(g, "nn_bidirectional", 1, &x) || !nn__expect_f32(g, "nn_bidirectional", x, "x")) return nn__tensor(-1);
    if (!fn) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_bidirectional: fn is NULL");
    if (!name || !name[0] || strlen(name) > 200)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_bidirectional: needs a name (at most 200 chars)");
    n = nn__n(g, x);
    if (n->shape.ndim < 3) {
        char s[128];
        nn__shape_str(&n->shape, s, sizeof s);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_bidirectional %s: x %s must be [T, B, features...] ([B, T, features...] with batch_first)",
                           name, s);
    }
    T = n->shape.dim[batch_first ? 1 : 0];
    B = n->shape.dim[batch_first ? 0 : 1];
    if (T > INT32_MAX || B > INT32_MAX || n->numel / (T * B) > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_bidirectional %s: x is too large", name);
    if (!nn__rec_lengths_ok(g, "nn_bidirectional", lengths, B)) return nn__tensor(-1);
    ys[0] = fn(g, x, lengths, name, user);
    if (g->status != NN_OK || ys[0].id < 0) return nn__tensor(-1);
    snprintf(rname, sizeof rname, "%s_reverse", name);
    xr = nn__rec_reverse(g, x, lengths, batch_first);
    if (xr.id < 0) return xr;
    ys[1] = fn(g, xr, lengths, rname, user);
    if (g->status != NN_OK || ys[1].id < 0) return nn__tensor(-1);
    n = nn__n(g, ys[1]);
    if (n->shape.ndim < 3 || n->shape.dim[batch_first ? 1 : 0] != T || n->shape.dim[batch_first ? 0 : 1] != B) {
        char s[128];
        nn__shape_str(&n->shape, s, sizeof s);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_bidirectional %s: fn gave %s; it must keep x's time and batch dims (%lld, %lld)", name,
                           s, (long long)T, (long long)B);
    }
    ys[1] = nn__rec_reverse(g, ys[1], lengths, batch_first);
    return nn_concat(g, ys, 2, 2);
}
