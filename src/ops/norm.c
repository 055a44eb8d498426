/* The norm family: batch, layer, group and instance norm as two ops, the statistics
   (norm_stats) and the normalisation (norm, with its gradients), and batch norm's running
   statistics. x is viewed as [A, C, S] (nn__norm_attr in src/ops/norm.h); the loops are
   in src/cpu/norm.c, the kernels in kernels/norm.cl. */
#include "../base/internal.h"
#include "../base/registry.h"

/* ==== helpers shared by the family's builders and launches ==== */

/* at zeroed, then x [A, C, spatial...]'s A, C and S (the product of the spatial dims) */
static void nn__norm_layout(nn__norm_attr *at, const nn__node *nx) {
    int k;
    memset(at, 0, sizeof *at);
    at->A = (int)nx->shape.dim[0];
    at->C = (int)nx->shape.dim[1];
    at->S = 1;
    for (k = 2; k < nx->shape.ndim; k++) at->S *= (int)nx->shape.dim[k];
}

/* x of a norm op: float32 (or 16-bit where half, or under a precision policy), at least
   min_ndim dims, indexable by int in the kernels. */
static int nn__norm_check_x(nn_graph *g, const char *fn, nn_tensor x, int min_ndim, const char *layout, char *sx, size_t n,
                            int half) {
    nn__node *nx;
    if (!nn__check(g, fn, 1, &x)) return 0;
    if (!(half && nn__dtype_half(nn__n(g, x)->dtype)) && !nn__expect_f32(g, fn, x, "x")) return 0;
    nx = nn__n(g, x);
    nn__shape_str(&nx->shape, sx, n);
    if (nx->shape.ndim < min_ndim) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s must be %s", fn, sx, layout);
        return 0;
    }
    if (nx->numel > INT32_MAX) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s has more than 2^31 elements", fn, sx);
        return 0;
    }
    return 1;
}

/* An optional tensor of a norm op (gamma, beta, a running statistic): NN_NONE or float32
   (or, under a precision policy, 16-bit) of shape want. */
static int nn__norm_check_vec(nn_graph *g, const char *fn, nn_tensor t, const char *what, const nn_shape *want, const char *sx) {
    nn__node *nt;
    char st[128], sw[128];
    if (t.id == 0) return 1;
    if (!nn__check(g, fn, 1, &t)) return 0;
    nt = nn__n(g, t);
    /* under a precision policy a 16-bit one (a bf16 parameter) is converted by nn__new_node */
    if ((nt->dtype == NN_F32 || (nn__dtype_half(nt->dtype) && nn__policy_dtype(g) != NN_F32)) && nn__shape_eq(&nt->shape, want))
        return 1;
    nn__shape_str(&nt->shape, st, sizeof st);
    nn__shape_str(want, sw, sizeof sw);
    nn__op_fail(g, NN_ERR_SHAPE, "%s: %s %s %s does not fit x %s: it must be %s float32", fn, what, st,
                nn__dtype_name(nt->dtype), sx, sw);
    return 0;
}

/* Sets a norm node's attributes (nn__norm_attr). */
static nn_tensor nn__norm_attrs(nn_graph *g, nn_tensor t, const nn__norm_attr *at) {
    if (t.id < 0) return t;
    g->nodes[t.id].a.norm = *at;
    return t;
}

/* On devices tuned as CPUs, channels of at least this many floats run kernels/norm.cl's
   norm_runs_* kernels (one work-item per group, channel or row, in float16s) */
#define NN__NORM_RUN_MIN 16
static int nn__norm_runs(const nn_graph *g, const nn__norm_attr *a) {
    return g->ctx->dev.cpu_tuned && a->S >= NN__NORM_RUN_MIN;
}

/* A launch of one work-group per statistics group (per_group: norm_stats, norm_grad_input)
   or per channel (the affine gradients), no larger than the power of two that covers the
   elements it reduces; *wg is its size, the floats of the kernel's tmp. runs (or NULL):
   the kernel's norm_runs_* form, in groups of one item where nn__norm_runs says. */
static nn_result nn__launch_norm_groups(nn_graph *g, int id, const char *kernel, const char *runs, int per_group,
                                       nn__launch **l, size_t *wg) {
    nn__norm q;
    size_t groups, count;
    *wg = nn__reduce_wg(g);
    nn__norm_geom(&q, &g->nodes[id].a.norm);
    groups = (size_t)(per_group ? nn__norm_groups(&q) : q.C);
    count = (size_t)(per_group ? nn__norm_count(&q) : q.A * q.S);
    while (*wg > 1 && *wg / 2 >= count) *wg /= 2;
    if (runs && nn__norm_runs(g, &g->nodes[id].a.norm)) {
        *wg = 1; /* one item a group, with no tree */
        kernel = runs;
    }
    return nn__launch_groups(g, id, "norm", kernel, groups, *wg, l);
}

/* The fields every norm kernel takes, from the node's attributes a */
#define NN__NORM_KFIELDS(k, a)     \
    do {                           \
        (k).A = (a)->A;            \
        (k).C = (a)->C;            \
        (k).S = (a)->S;            \
        (k).G = (a)->groups;       \
        (k).pc = (a)->per_channel; \
    } while (0)

/* A launch function's opening for a kernel SIG over work-groups (nn__launch_norm_groups's
   runs and per_group): n, a (its attributes), wg, and NN__KWITH's l, r and k, with the
   common fields and the work-group's scratch tmp set */
#define NN__NORM_KLAUNCH(sig, runs, per_group)                                           \
    nn__node *n = &g->nodes[id];                                                         \
    const nn__norm_attr *a = &n->a.norm;                                                 \
    size_t wg;                                                                           \
    NN__KWITH(sig, nn__launch_norm_groups(g, id, #sig, runs, per_group, &l, &wg));       \
    NN__NORM_KFIELDS(k, a);                                                              \
    k.tmp = wg * 4

/* ---- 16-bit storage (NN__OPF_HALF: x of NN_BF16 or NN_F16): the storage type of a norm
   node is its first input's (x; dy for NORM_DBETA), and its x-shaped output (NORM_FORWARD's
   y, NORM_DX's dx) takes it; the statistics, gamma, beta and the affine gradients stay
   float32. OpenCL: kernels/norm.cl built for it (l->store), float32 sums. CPU: x and dy
   widened (exactly) into the node's scratch, src/cpu/norm.c's float32 loops run there, an
   x-shaped output into the scratch after them, rounded once into the node: each value is
   the float32 norm's on the widened inputs, rounded. ---- */

static nn_dtype nn__norm_store(const nn_graph *g, const nn__node *n) { return g->nodes[n->in[0]].dtype; }

/* a region of n floats, from a multiple of 16 (64 bytes) */
static int64_t nn__norm16_r(int64_t n) { return (n + 15) / 16 * 16; }

/* the CPU scratch of a 16-bit norm node: one region of x's numel per widened input (x;
   dy too for NORM_DX and NORM_DGAMMA) and per x-shaped output (NORM_FORWARD, NORM_DX) */
static void nn__plan_norm16(nn_graph *g, nn__node *n) {
    int64_t r = nn__norm16_r(g->nodes[n->in[0]].numel);
    int regions = n->op == NN__OP_NORM_FORWARD || n->op == NN__OP_NORM_DGAMMA ? 2 : n->op == NN__OP_NORM_DX ? 3 : 1;
    n->scratch = g->ctx->backend->host_memory && nn__dtype_half(nn__norm_store(g, n)) ? regions * r : 0;
}

/* input k of a 16-bit node widened into scratch region reg; a float32 node's input as is */
static const float *nn__norm16_in(nn_graph *g, nn__node *n, int k, int reg) {
    const nn__node *x = &g->nodes[n->in[k]];
    float *w;
    if (!nn__dtype_half(x->dtype)) return (const float *)x->buf.host;
    w = (float *)n->scratch_buf.host + reg * nn__norm16_r(g->nodes[n->in[0]].numel);
    nn__cast(g->ctx->threads, x->buf.host, x->dtype, w, NN_F32, x->numel);
    return w;
}

/* the float32 output of node n: the node's buffer, or for a 16-bit one scratch region reg */
static float *nn__norm16_out(nn__node *n, int reg) {
    if (!nn__dtype_half(n->dtype)) return (float *)n->buf.host;
    return (float *)n->scratch_buf.host + reg * nn__norm16_r(n->numel);
}

/* a 16-bit node's float32 output (at f) rounded once into its storage */
static void nn__norm16_finish(nn_graph *g, nn__node *n, const float *f) {
    if (nn__dtype_half(n->dtype)) nn__cast(g->ctx->threads, f, NN_F32, n->buf.host, n->dtype, n->numel);
}

/* ==== norm_stats: stats [2, R] of x [A, C, S], the means then the biased variances: R =
   A*G groups of C/G channels each (group, layer and instance norm), or the C channels over
   A and S (batch norm) ==== */

/* stats [2, R] of x: R groups (channels for batch norm) */
static int nn__norm_stats_node(nn_graph *g, nn_tensor x, const nn__norm_attr *at) {
    int64_t R = at->per_channel ? at->C : (int64_t)at->A * at->groups;
    return nn__norm_attrs(g, nn__op1(g, NN__OP_NORM_STATS, NN_F32, nn_shape2(2, R), x.id), at).id;
}

#define nn__grad_norm_stats nn__grad_none
#define nn__plan_norm_stats nn__plan_norm16

static nn_result nn__cpu_norm_stats(nn_graph *g, nn__node *n) {
    nn__norm q;
    nn__norm_geom(&q, &n->a.norm);
    nn__norm_stats(g->ctx->threads, &q, n->buf.host, nn__norm16_in(g, n, 0, 0));
    return NN_OK;
}

static nn_result nn__launch_norm_stats(nn_graph *g, int id) {
    NN__NORM_KLAUNCH(norm_stats, "norm_runs_stats", 1);
    k.x = &g->nodes[n->in[0]].buf;
    k.stats = &n->buf;
    k.rms = a->rms;
    l->store = nn__norm_store(g, n); /* the program for x's storage type */
    return nn__kargs_norm_stats(l, &k);
}

/* ==== norm: y [A, C, S] = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c], inputs x,
   stats [2, R] (norm_stats of x, or batch norm's running statistics: const_stats),
   [gamma], [beta]. Its gradients stand here: NORM_DX, dx from (x, stats, dy, [gamma]),
   through the statistics unless const_stats; NORM_DGAMMA [C] = sum of dy * xhat from
   (x, stats, dy); NORM_DBETA [C] = sum of dy ==== */

/* y = normalise(x) by stats [2, R] (computed from x unless const_stats) * gamma + beta. */
static nn_tensor nn__norm_apply(nn_graph *g, nn_tensor x, int stats, nn_tensor gamma, nn_tensor beta, nn__norm_attr *at,
                                int const_stats) {
    int in[4], n_in = 0;
    if (stats < 0) return nn__tensor(-1);
    if (gamma.id > 0) gamma = nn__policy_f32_input(g, gamma); /* the affine parameters are read as float32 */
    if (beta.id > 0) beta = nn__policy_f32_input(g, beta);
    if (gamma.id < 0 || beta.id < 0) return nn__tensor(-1);
    in[n_in++] = x.id;
    in[n_in++] = stats;
    if (gamma.id > 0) in[n_in++] = gamma.id;
    if (beta.id > 0) in[n_in++] = beta.id;
    at->has_gamma = gamma.id > 0;
    at->has_beta = beta.id > 0;
    at->const_stats = const_stats;
    /* y in x's storage type */
    return nn__norm_attrs(g, nn__tensor(nn__new_node(g, NN__OP_NORM_FORWARD, nn__n(g, x)->dtype, nn__n(g, x)->shape, in, n_in)),
                          at);
}

#define nn__plan_norm_forward nn__plan_norm16
#define nn__grad_norm_dx nn__grad_none
#define nn__plan_norm_dx nn__plan_norm16
#define nn__grad_norm_dgamma nn__grad_none
#define nn__plan_norm_dgamma nn__plan_norm16
#define nn__grad_norm_dbeta nn__grad_none
#define nn__plan_norm_dbeta nn__plan_norm16

static void nn__grad_norm_forward(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    /* inputs x, stats, [gamma], [beta]; the stats path is in NORM_DX */
    int k = 2, gi = n.a.norm.has_gamma ? n.in[k++] : -1, bi = n.a.norm.has_beta ? n.in[k++] : -1, din[4];
    nn_dtype dt = g->nodes[a].dtype; /* x's storage: dy read in it, dx written in it */
    if (g->nodes[gy.id].dtype != dt && (gy = nn_to_dtype(g, gy, dt)).id < 0) return;
    din[0] = a;
    din[1] = b;
    din[2] = gy.id;
    din[3] = gi;
    if (ga) nn__acc_grad(g, a, nn__norm_attrs(g, nn__tensor(nn__new_node(g, NN__OP_NORM_DX, dt, g->nodes[a].shape, din,
                                                                             gi >= 0 ? 4 : 3)), &n.a.norm));
    if (gi >= 0 && g->nodes[gi].needs_grad)
        nn__acc_grad(g, gi, nn__norm_attrs(g, nn__op3(g, NN__OP_NORM_DGAMMA, NN_F32, g->nodes[gi].shape, a, b, gy.id), &n.a.norm));
    if (bi >= 0 && g->nodes[bi].needs_grad)
        nn__acc_grad(g, bi, nn__norm_attrs(g, nn__op1(g, NN__OP_NORM_DBETA, NN_F32, g->nodes[bi].shape, gy.id), &n.a.norm));
    return;
}

/* x, stats, [gamma], [beta] */
static nn_result nn__cpu_norm_forward(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    nn__norm q;
    float *y = nn__norm16_out(n, 1);
    nn__norm_geom(&q, &n->a.norm);
    nn__norm_forward(g->ctx->threads, &q, y, nn__norm16_in(g, n, 0, 0), NN__F(in[1]), n->a.norm.has_gamma ? NN__F(in[2]) : NULL,
                     n->a.norm.has_beta ? NN__F(in[2 + n->a.norm.has_gamma]) : NULL, n->a.norm.eps);
    nn__norm16_finish(g, n, y);
    return NN_OK;
}

/* x, stats, dy, [gamma] */
static nn_result nn__cpu_norm_dx(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    nn__norm q;
    float *dx = nn__norm16_out(n, 2);
    nn__norm_geom(&q, &n->a.norm);
    nn__norm_backward_data(g->ctx->threads, &q, dx, nn__norm16_in(g, n, 0, 0), NN__F(in[1]), nn__norm16_in(g, n, 2, 1),
                           n->a.norm.has_gamma ? NN__F(in[3]) : NULL, n->a.norm.const_stats, n->a.norm.eps);
    nn__norm16_finish(g, n, dx);
    return NN_OK;
}

/* x, stats, dy */
static nn_result nn__cpu_norm_dgamma(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    nn__norm q;
    nn__norm_geom(&q, &n->a.norm);
    nn__norm_backward_affine(g->ctx->threads, &q, n->buf.host, nn__norm16_in(g, n, 0, 0), NN__F(in[1]),
                             nn__norm16_in(g, n, 2, 1), n->a.norm.eps);
    return NN_OK;
}

/* dy */
static nn_result nn__cpu_norm_dbeta(nn_graph *g, nn__node *n) {
    nn__norm q;
    nn__norm_geom(&q, &n->a.norm);
    nn__norm_backward_affine(g->ctx->threads, &q, n->buf.host, NULL, NULL, nn__norm16_in(g, n, 0, 0), n->a.norm.eps);
    return NN_OK;
}

/* one work-item per element; &g->one stands in for an absent gamma or beta */
static nn_result nn__launch_norm_forward(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__norm_attr *a = &n->a.norm;
    int runs = nn__norm_runs(g, a);
    NN__KSTART(norm_forward, "norm", runs ? "norm_runs_forward" : "norm_forward",
               runs ? (int64_t)a->A * a->C : n->numel);
    k.x = &g->nodes[in[0]].buf;
    k.stats = &g->nodes[in[1]].buf;
    k.gamma = a->has_gamma ? &g->nodes[in[2]].buf : &g->one;
    k.beta = a->has_beta ? &g->nodes[in[2 + a->has_gamma]].buf : &g->one;
    k.y = &n->buf;
    NN__NORM_KFIELDS(k, a);
    k.has_gamma = a->has_gamma;
    k.has_beta = a->has_beta;
    k.eps = a->eps;
    l->store = nn__norm_store(g, n);
    return nn__kargs_norm_forward(l, &k);
}

/* one work-group per statistics group */
static nn_result nn__launch_norm_dx(nn_graph *g, int id) {
    NN__NORM_KLAUNCH(norm_backward_data, "norm_runs_dx", 1);
    const int *in = n->in;
    k.x = &g->nodes[in[0]].buf;
    k.stats = &g->nodes[in[1]].buf;
    k.dy = &g->nodes[in[2]].buf;
    k.gamma = a->has_gamma ? &g->nodes[in[3]].buf : &g->one;
    k.dx = &n->buf;
    k.has_gamma = a->has_gamma;
    k.const_stats = a->const_stats;
    k.eps = a->eps;
    l->store = nn__norm_store(g, n);
    return nn__kargs_norm_backward_data(l, &k);
}

/* One work-group per channel: norm_backward_affine over x, stats and dy (with_xhat) or dy
   alone (x and stats are then g->one, unread). */
static nn_result nn__launch_norm_affine(nn_graph *g, int id, const nn__buf *x, const nn__buf *stats, const nn__buf *dy,
                                        int with_xhat) {
    NN__NORM_KLAUNCH(norm_backward_affine, "norm_runs_affine", 0);
    k.x = x;
    k.stats = stats;
    k.dy = dy;
    k.out = &n->buf;
    k.with_xhat = with_xhat;
    k.eps = a->eps;
    l->store = nn__norm_store(g, n); /* x's, or dy's for NORM_DBETA: the same */
    return nn__kargs_norm_backward_affine(l, &k);
}

static nn_result nn__launch_norm_dgamma(nn_graph *g, int id) {
    const int *in = g->nodes[id].in;
    return nn__launch_norm_affine(g, id, &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, &g->nodes[in[2]].buf, 1);
}

static nn_result nn__launch_norm_dbeta(nn_graph *g, int id) {
    return nn__launch_norm_affine(g, id, &g->one, &g->one, &g->nodes[g->nodes[id].in[0]].buf, 0);
}

/* ==== batch_norm_running_update: running mean and var [C] (inputs 0 and 1, updated in
   place) += momentum * (stats [2, C] - running), the variance unbiased by n/(n-1); a root
   with no output, built by nn_batch_norm in training mode ==== */

#define nn__grad_bn_running nn__grad_none
#define nn__plan_bn_running nn__no_plan

static nn_result nn__cpu_bn_running(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    /* running mean, running var (updated in place), stats */
    nn__batch_norm_running(NN__F(in[0]), NN__F(in[1]), NN__F(in[2]), n->a.norm.C, (int64_t)n->a.norm.A * n->a.norm.S, n->a.norm.momentum);
    return NN_OK;
}

static nn_result nn__launch_bn_running(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    int64_t cnt = (int64_t)n->a.norm.A * n->a.norm.S;
    NN__KSTART(batch_norm_running, "norm", "batch_norm_running", n->a.norm.C);
    k.rmean = &g->nodes[in[0]].buf;
    k.rvar = &g->nodes[in[1]].buf;
    k.stats = &g->nodes[in[2]].buf;
    k.C = n->a.norm.C;
    k.m = n->a.norm.momentum;
    k.unbias = (float)((double)cnt / (double)(cnt - 1));
    return nn__kargs_batch_norm_running(l, &k);
}

/* ==== batch_norm_running_stats: stats [2, C] = (running mean, running var), the
   statistics of eval-mode batch norm (built by nn_batch_norm) ==== */

#define nn__grad_bn_pack nn__grad_none
#define nn__plan_bn_pack nn__no_plan

static nn_result nn__cpu_bn_pack(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    memcpy(y, NN__F(in[0]), (size_t)n->a.norm.C * 4);
    memcpy(y + n->a.norm.C, NN__F(in[1]), (size_t)n->a.norm.C * 4);
    return NN_OK;
}

static nn_result nn__launch_bn_pack(nn_graph *g, int id) {
    NN__KLAUNCH(batch_norm_pack, "norm", "batch_norm_pack", n->a.norm.C);
    k.rmean = &g->nodes[n->in[0]].buf;
    k.rvar = &g->nodes[n->in[1]].buf;
    k.stats = &n->buf;
    k.C = n->a.norm.C;
    return nn__kargs_batch_norm_pack(l, &k);
}

/* ==== rms_norm: y [A, C] = x * rstd * w[c], rstd = 1 / sqrt(mean over the row of x^2 +
   eps), inputs x, [w]; one pass per row (PyTorch's F.rms_norm over x viewed as [rows,
   features]). Its gradients: RMS_NORM_DX, dx from (x, dy, [w]), rstd recomputed in the same
   pass per row; the weight's, sum over rows of dy * x * rstd, is NORM_DGAMMA over the
   statistics NORM_STATS gives with rms set (means 0, mean squares) ==== */

#define nn__plan_rms_norm nn__no_plan
#define nn__grad_rms_norm_dx nn__grad_none
#define nn__plan_rms_norm_dx nn__no_plan

static void nn__grad_rms_norm(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int wi = n.a.norm.has_gamma ? b : -1, din[3];
    (void)gb;
    din[0] = a;
    din[1] = gy.id;
    din[2] = wi;
    if (ga) nn__acc_grad(g, a, nn__norm_attrs(g, nn__tensor(nn__new_node(g, NN__OP_RMS_NORM_DX, NN_F32, g->nodes[a].shape, din,
                                                                             wi >= 0 ? 3 : 2)), &n.a.norm));
    if (wi >= 0 && g->nodes[wi].needs_grad) {
        nn__norm_attr at = n.a.norm;
        int stats;
        at.rms = 1;
        stats = nn__norm_stats_node(g, nn__tensor(a), &at);
        if (stats < 0) return;
        nn__acc_grad(g, wi, nn__norm_attrs(g, nn__op3(g, NN__OP_NORM_DGAMMA, NN_F32, g->nodes[wi].shape, a, stats, gy.id), &at));
    }
}

static nn_result nn__cpu_rms_norm(nn_graph *g, nn__node *n) {
    nn__norm q;
    nn__norm_geom(&q, &n->a.norm);
    nn__rms_norm(g->ctx->threads, &q, n->buf.host, NN__F(n->in[0]), NULL, n->a.norm.has_gamma ? NN__F(n->in[1]) : NULL,
                 n->a.norm.eps);
    return NN_OK;
}

/* x, dy, [w] */
static nn_result nn__cpu_rms_norm_dx(nn_graph *g, nn__node *n) {
    nn__norm q;
    nn__norm_geom(&q, &n->a.norm);
    nn__rms_norm(g->ctx->threads, &q, n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]),
                 n->a.norm.has_gamma ? NN__F(n->in[2]) : NULL, n->a.norm.eps);
    return NN_OK;
}

/* one work-group per row; &g->one stands in for an absent w */
static nn_result nn__launch_rms_norm(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__norm_attr *a = &n->a.norm;
    size_t wg;
    NN__KWITH(rms_norm_forward, nn__launch_norm_groups(g, id, "rms_norm_forward", NULL, 1, &l, &wg));
    k.x = &g->nodes[n->in[0]].buf;
    k.w = a->has_gamma ? &g->nodes[n->in[1]].buf : &g->one;
    k.y = &n->buf;
    k.A = a->A;
    k.C = a->C;
    k.has_w = a->has_gamma;
    k.eps = a->eps;
    k.tmp = wg * 4;
    return nn__kargs_rms_norm_forward(l, &k);
}

static nn_result nn__launch_rms_norm_dx(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__norm_attr *a = &n->a.norm;
    size_t wg;
    NN__KWITH(rms_norm_backward_data, nn__launch_norm_groups(g, id, "rms_norm_backward_data", NULL, 1, &l, &wg));
    k.x = &g->nodes[n->in[0]].buf;
    k.dy = &g->nodes[n->in[1]].buf;
    k.w = a->has_gamma ? &g->nodes[n->in[2]].buf : &g->one;
    k.dx = &n->buf;
    k.A = a->A;
    k.C = a->C;
    k.has_w = a->has_gamma;
    k.eps = a->eps;
    k.tmp = wg * 4;
    return nn__kargs_rms_norm_backward_data(l, &k);
}

/* ==== the public norms, made of the ops above: group, instance and layer norm are
   norm_stats + norm; batch norm adds the running statistics' update in training mode, or
   normalises by them (batch_norm_running_stats) in eval mode ==== */

/* A test hook (tests/test_ln16.c, t_norm_half_groups): group and instance norm take a 16-bit x
   as they are, as layer norm does, so that the 16-bit norms' paths of several groups and long
   channels (kernels/norm.cl's norm_runs_* with G > 1 on CPU devices, the CPU bodies' widening
   with G > 1) run in a test; the API converts such an x to float32 (these norms run in float32) */
static int nn__norm_half_groups;
static NN__MAYBE_UNUSED void nn__norm_force_half_groups(int on) { nn__norm_half_groups = on; }

/* Group norm, and instance norm (instance: groups = C, x with spatial dims); x [N, C, ...] */
static nn_tensor nn__group_norm(nn_graph *g, const char *fn, nn_tensor x, nn_tensor gamma, nn_tensor beta, int groups,
                                float eps, int instance) {
    char sx[128];
    nn__node *nx;
    nn_shape c;
    nn__norm_attr at;
    if (!nn__norm_check_x(g, fn, x, instance ? 3 : 2, instance ? "[N, C, spatial...]" : "[N, C, ...]", sx, sizeof sx,
                          nn__norm_half_groups))
        return nn__tensor(-1);
    if (!nn__norm_half_groups && (x = nn__policy_f32_input(g, x)).id < 0) return nn__tensor(-1); /* these norms run in float32 */
    nx = nn__n(g, x);
    if (instance) groups = (int)nx->shape.dim[1];
    if (instance && nx->numel / (nx->shape.dim[0] * nx->shape.dim[1]) < 2) /* PyTorch refuses too */
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s has 1 spatial value per channel; instance statistics need more", fn, sx);
    if (groups < 1 || nx->shape.dim[1] % groups)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: groups = %d must be >= 1 and divide the %lld channels of x %s", fn, groups,
                           (long long)nx->shape.dim[1], sx);
    eps = nn__deff(eps, 1e-5f);
    if (!(eps >= 0.0f)) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: eps %g is not >= 0", fn, eps);
    c = nn_shape1(nx->shape.dim[1]);
    if (!nn__norm_check_vec(g, fn, gamma, "gamma", &c, sx) || !nn__norm_check_vec(g, fn, beta, "beta", &c, sx))
        return nn__tensor(-1);
    nn__norm_layout(&at, nx);
    at.groups = groups;
    at.eps = eps;
    return nn__norm_apply(g, x, nn__norm_stats_node(g, x, &at), gamma, beta, &at, 0);
}

NN_API nn_tensor nn_group_norm(nn_graph *g, nn_tensor x, int groups, nn_tensor gamma, nn_tensor beta, const nn_norm_desc *desc) {
    return nn__group_norm(g, "nn_group_norm", x, gamma, beta, groups, desc ? desc->eps : 0.0f, 0);
}

NN_API nn_tensor nn_instance_norm(nn_graph *g, nn_tensor x, nn_tensor gamma, nn_tensor beta, const nn_norm_desc *desc) {
    return nn__group_norm(g, "nn_instance_norm", x, gamma, beta, 0, desc ? desc->eps : 0.0f, 1);
}

/* Layer norm is group norm of x viewed as [rows, features, 1] with one group. */
NN_API nn_tensor nn_layer_norm(nn_graph *g, nn_tensor x, int n_norm_dims, nn_tensor gamma, nn_tensor beta, const nn_norm_desc *desc) {
    float eps = desc ? desc->eps : 0.0f;
    char sx[128];
    nn__node *nx;
    nn_shape tail;
    nn__norm_attr at;
    int k;
    if (!nn__norm_check_x(g, "nn_layer_norm", x, 1, "at least 1-D", sx, sizeof sx, 1)) return nn__tensor(-1);
    /* the storage rule: under a precision policy x in the policy's type (a float32 x converted,
       as the matmul after the norm wants it anyway), else x's own type (PyTorch's layer_norm on
       a bf16 tensor); y and dx in it, the statistics, sums and affine parameters float32 */
    if (nn__policy_dtype(g) != NN_F32 && nn__n(g, x)->dtype != nn__policy_dtype(g) &&
        (x = nn_to_dtype(g, x, nn__policy_dtype(g))).id < 0)
        return nn__tensor(-1);
    nx = nn__n(g, x);
    if (n_norm_dims < 1 || n_norm_dims > nx->shape.ndim)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_layer_norm: n_norm_dims %d is not in 1..%d for x %s", n_norm_dims,
                           nx->shape.ndim, sx);
    eps = nn__deff(eps, 1e-5f);
    if (!(eps >= 0.0f)) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_layer_norm: eps %g is not >= 0", eps);
    memset(&tail, 0, sizeof tail);
    tail.ndim = n_norm_dims;
    for (k = 0; k < n_norm_dims; k++) tail.dim[k] = nx->shape.dim[nx->shape.ndim - n_norm_dims + k];
    if (!nn__norm_check_vec(g, "nn_layer_norm", gamma, "gamma", &tail, sx) ||
        !nn__norm_check_vec(g, "nn_layer_norm", beta, "beta", &tail, sx))
        return nn__tensor(-1);
    memset(&at, 0, sizeof at);
    at.C = (int)nn__numel(&tail);
    at.A = (int)(nx->numel / at.C);
    at.S = at.groups = 1;
    at.eps = eps;
    return nn__norm_apply(g, x, nn__norm_stats_node(g, x, &at), gamma, beta, &at, 0);
}

/* RMS norm over the trailing n_norm_dims dims of x: one RMS_NORM node on x as [rows,
   features]. eps: 0 is PyTorch's None, torch.finfo(float32).eps = 2^-23. */
NN_API nn_tensor nn_rms_norm(nn_graph *g, nn_tensor x, int n_norm_dims, nn_tensor weight, const nn_norm_desc *desc) {
    float eps = desc ? desc->eps : 0.0f;
    char sx[128];
    nn__node *nx;
    nn_shape tail;
    nn__norm_attr at;
    int k, in[2];
    if (!nn__norm_check_x(g, "nn_rms_norm", x, 1, "at least 1-D", sx, sizeof sx, 0)) return nn__tensor(-1);
    nx = nn__n(g, x);
    if (n_norm_dims < 1 || n_norm_dims > nx->shape.ndim)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_rms_norm: n_norm_dims %d is not in 1..%d for x %s", n_norm_dims,
                           nx->shape.ndim, sx);
    eps = nn__deff(eps, 1.1920928955078125e-07f);
    if (!(eps >= 0.0f)) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_rms_norm: eps %g is not >= 0", eps);
    memset(&tail, 0, sizeof tail);
    tail.ndim = n_norm_dims;
    for (k = 0; k < n_norm_dims; k++) tail.dim[k] = nx->shape.dim[nx->shape.ndim - n_norm_dims + k];
    if (!nn__norm_check_vec(g, "nn_rms_norm", weight, "weight", &tail, sx)) return nn__tensor(-1);
    memset(&at, 0, sizeof at);
    at.C = (int)nn__numel(&tail);
    at.A = at.C ? (int)(nx->numel / at.C) : 0;
    at.S = at.groups = 1;
    at.eps = eps;
    at.has_gamma = weight.id > 0;
    in[0] = x.id;
    in[1] = weight.id;
    return nn__norm_attrs(g, nn__tensor(nn__new_node(g, NN__OP_RMS_NORM, NN_F32, nx->shape, in, weight.id > 0 ? 2 : 1)), &at);
}

NN_API nn_tensor nn_batch_norm(nn_graph *g, nn_tensor x, nn_tensor gamma, nn_tensor beta, const nn_norm_desc *desc) {
    nn_norm_desc d;
    char sx[128];
    nn__node *nx;
    nn_shape c;
    nn__norm_attr at;
    int stats, in[3], running;
    if (!nn__norm_check_x(g, "nn_batch_norm", x, 2, "[N, C, ...]", sx, sizeof sx, 0)) return nn__tensor(-1);
    if ((x = nn__policy_f32_input(g, x)).id < 0) return nn__tensor(-1); /* batch norm runs in float32 */
    nx = nn__n(g, x);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    d.momentum = nn__deff(d.momentum, 0.1f);
    d.eps = nn__deff(d.eps, 1e-5f);
    if (!(d.momentum >= 0.0f && d.momentum <= 1.0f) || !(d.eps >= 0.0f))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_batch_norm: momentum %g is not in [0, 1] or eps %g is not >= 0",
                           d.momentum, d.eps);
    c = nn_shape1(nx->shape.dim[1]);
    if (!nn__norm_check_vec(g, "nn_batch_norm", gamma, "gamma", &c, sx) ||
        !nn__norm_check_vec(g, "nn_batch_norm", beta, "beta", &c, sx))
        return nn__tensor(-1);
    running = d.running_mean.id != 0 || d.running_var.id != 0;
    if (running) {
        if (d.running_mean.id == 0 || d.running_var.id == 0)
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_batch_norm: running_mean and running_var go together (one is NN_NONE)");
        if (!nn__norm_check_vec(g, "nn_batch_norm", d.running_mean, "running_mean", &c, sx) ||
            !nn__norm_check_vec(g, "nn_batch_norm", d.running_var, "running_var", &c, sx))
            return nn__tensor(-1);
    }
    nn__norm_layout(&at, nx);
    at.groups = at.per_channel = 1;
    at.eps = d.eps;
    at.momentum = d.momentum;
    in[0] = d.running_mean.id;
    in[1] = d.running_var.id;
    if (g->eval && running) { /* normalise with the running statistics */
        stats = nn__norm_attrs(g, nn__tensor(nn__new_node(g, NN__OP_BN_PACK, NN_F32, nn_shape2(2, at.C), in, 2)), &at).id;
        if (g->eval_ids && stats >= 0 && nn__eval_identity(g, x).id < 0) return nn__tensor(-1); /* BN_RUNNING's id, unused */
        return nn__norm_apply(g, x, stats, gamma, beta, &at, 1);
    }
    if ((int64_t)at.A * at.S < 2) /* PyTorch refuses too: the variance of one value */
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_batch_norm: x %s has 1 value per channel; batch statistics need more", sx);
    stats = nn__norm_stats_node(g, x, &at);
    if (stats >= 0 && !g->eval && running) { /* a root that updates the buffers in place */
        nn_shape none;
        int u;
        memset(&none, 0, sizeof none);
        in[2] = stats;
        u = nn__norm_attrs(g, nn__tensor(nn__new_node(g, NN__OP_BN_RUNNING, NN_F32, none, in, 3)), &at).id;
        if (u < 0) return nn__tensor(-1);
        g->nodes[u].numel = 0;
        g->nodes[u].is_output = 1;
    }
    return nn__norm_apply(g, x, stats, gamma, beta, &at, 0);
}

/* PyTorch's BatchNorm module: NAME.weight, NAME.bias and the running-statistics buffers. */
static nn_tensor nn__batch_norm_layer(nn_graph *g, nn_tensor x, const nn_norm_desc *desc, const char *name, const char *fn,
                                      int lo, int hi, const char *layout) {
    char nm[4][256], sx[128];
    static const char *const suffix[4] = {"weight", "bias", "running_mean", "running_var"};
    nn_norm_desc d;
    nn_tensor t[4];
    nn_init init;
    nn_shape c;
    int k;
    if (!nn__norm_check_x(g, fn, x, lo, layout, sx, sizeof sx, 0)) return nn__tensor(-1);
    if (nn__n(g, x)->shape.ndim > hi) return nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s must be %s", fn, sx, layout);
    if (!name || !name[0] || strlen(name) > 200) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a name (at most 200 chars)", fn);
    if (desc && (desc->running_mean.id != 0 || desc->running_var.id != 0))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: the layer makes NAME.running_mean and NAME.running_var; desc gives others", fn);
    c = nn_shape1(nn__n(g, x)->shape.dim[1]);
    for (k = 0; k < 4; k++) {
        init.kind = (k == 0 || k == 3) ? NN_INIT_CONSTANT : NN_INIT_ZEROS;
        init.a = 1.0f;
        init.b = 0.0f;
        snprintf(nm[k], sizeof nm[k], "%s.%s", name, suffix[k]);
        t[k] = k < 2 ? nn_param(g, nm[k], c, init) : nn_buffer(g, nm[k], c, init);
        if (t[k].id < 0) return nn__tensor(-1);
    }
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    d.running_mean = t[2];
    d.running_var = t[3];
    return nn_batch_norm(g, x, t[0], t[1], &d);
}

NN_API nn_tensor nn_batch_norm2d_layer(nn_graph *g, nn_tensor x, const nn_norm_desc *desc, const char *name) {
    return nn__batch_norm_layer(g, x, desc, name, "nn_batch_norm2d_layer", 4, 4, "[N, C, H, W]");
}

NN_API nn_tensor nn_batch_norm1d_layer(nn_graph *g, nn_tensor x, const nn_norm_desc *desc, const char *name) {
    return nn__batch_norm_layer(g, x, desc, name, "nn_batch_norm1d_layer", 2, 3, "[N, C] or [N, C, L]");
}

/* PyTorch's LayerNorm and RMSNorm modules over the trailing n_norm_dims dims of x:
   NAME.weight (ones) and, for LayerNorm unless desc->no_bias, NAME.bias (zeros), of those
   dims' shape. */
static nn_tensor nn__norm_layer(nn_graph *g, nn_tensor x, int n_norm_dims, const nn_norm_desc *desc, const char *name,
                                const char *fn, int rms) {
    char nm[256], sx[128];
    nn_tensor w, b = NN_NONE;
    nn_init init;
    nn_shape tail;
    nn__node *nx;
    int k;
    if (!nn__norm_check_x(g, fn, x, 1, "at least 1-D", sx, sizeof sx, 1)) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a name (at most 200 chars)", fn);
    nx = nn__n(g, x);
    if (n_norm_dims < 1 || n_norm_dims > nx->shape.ndim)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: n_norm_dims %d is not in 1..%d for x %s", fn, n_norm_dims, nx->shape.ndim, sx);
    if (desc && (desc->running_mean.id != 0 || desc->running_var.id != 0))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: has no running statistics; desc gives some", fn);
    memset(&tail, 0, sizeof tail);
    tail.ndim = n_norm_dims;
    for (k = 0; k < n_norm_dims; k++) tail.dim[k] = nx->shape.dim[nx->shape.ndim - n_norm_dims + k];
    memset(&init, 0, sizeof init);
    init.kind = NN_INIT_CONSTANT;
    init.a = 1.0f;
    snprintf(nm, sizeof nm, "%s.weight", name);
    w = nn_param(g, nm, tail, init);
    if (w.id < 0) return w;
    if (rms) return nn_rms_norm(g, x, n_norm_dims, w, desc);
    if (!(desc && desc->no_bias)) {
        init.kind = NN_INIT_ZEROS;
        init.a = 0.0f;
        snprintf(nm, sizeof nm, "%s.bias", name);
        b = nn_param(g, nm, tail, init);
        if (b.id < 0) return b;
    }
    return nn_layer_norm(g, x, n_norm_dims, w, b, desc);
}

NN_API nn_tensor nn_layer_norm_layer(nn_graph *g, nn_tensor x, int n_norm_dims, const nn_norm_desc *desc, const char *name) {
    return nn__norm_layer(g, x, n_norm_dims, desc, name, "nn_layer_norm_layer", 0);
}

NN_API nn_tensor nn_rms_norm_layer(nn_graph *g, nn_tensor x, int n_norm_dims, const nn_norm_desc *desc, const char *name) {
    return nn__norm_layer(g, x, n_norm_dims, desc, name, "nn_rms_norm_layer", 1);
}
