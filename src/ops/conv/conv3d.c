/* The 3-D convolutions: conv3d, its input gradient and its weight gradient. The CPU loops
   are in src/cpu/conv3d.c (im2col + GEMM), the kernels in kernels/conv3d.cl (direct). */
#include "../../base/internal.h"
#include "../../base/registry.h"

/* ==== conv3d: y [N, K, OD, OH, OW] = x [N, C, D, H, W] conv w [K, C/G, KD, KH, KW]
   (+ bias [K]), torch.nn.functional.conv3d. Its gradients stand here: CONV3D_DX, dx from
   (w, dy), and CONV3D_DW, dw from (x, dy); the three share the forward's geometry
   (nn__conv3d in src/cpu/conv3d.c) and one plan ==== */

NN_API nn_tensor nn_conv3d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv3d_desc *desc) {
    nn_tensor in[3], t;
    nn__node *nx, *nw;
    nn_conv3d_desc d;
    int64_t O[3];
    nn__conv_attr at;
    int k, has_bias = nn__optional(g, "nn_conv3d", bias);
    char sx[128], sw[128];
    in[0] = x;
    in[1] = w;
    if (has_bias < 0 || !nn__check(g, "nn_conv3d", 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_conv3d", x, "x") || !nn__expect_f32(g, "nn_conv3d", w, "w")) return nn__tensor(-1);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (nn__no_bias_conflict(g, "nn_conv3d", d.no_bias, bias)) return nn__tensor(-1);
    memset(&at, 0, sizeof at); /* (d, h, w) */
    at.stride[0] = nn__defi(d.stride_d, 1);
    at.stride[1] = nn__defi(d.stride_h, 1);
    at.stride[2] = nn__defi(d.stride_w, 1);
    at.pad[0] = nn__defi(d.pad_d, 0);
    at.pad[1] = nn__defi(d.pad_h, 0);
    at.pad[2] = nn__defi(d.pad_w, 0);
    at.dilation[0] = nn__defi(d.dilation_d, 1);
    at.dilation[1] = nn__defi(d.dilation_h, 1);
    at.dilation[2] = nn__defi(d.dilation_w, 1);
    at.groups = nn__defi(d.groups, 1);
    nx = nn__n(g, x);
    nw = nn__n(g, w);
    nn__shape_str(&nx->shape, sx, sizeof sx);
    nn__shape_str(&nw->shape, sw, sizeof sw);
    if (!nn__conv_attr_ok(&at, 3))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                           "nn_conv3d: stride (%d, %d, %d), dilation (%d, %d, %d) and groups %d must be >= 1 and padding (%d, %d, %d) >= 0",
                           at.stride[0], at.stride[1], at.stride[2], at.dilation[0], at.dilation[1], at.dilation[2], at.groups,
                           at.pad[0], at.pad[1], at.pad[2]);
    if (nx->shape.ndim != 5 || nw->shape.ndim != 5)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d: x %s must be [N, C, D, H, W] and w %s [K, C/groups, KD, KH, KW]", sx, sw);
    if (nx->shape.dim[1] % at.groups || nw->shape.dim[0] % at.groups || nw->shape.dim[1] * at.groups != nx->shape.dim[1])
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d: x %s and w %s do not fit groups = %d", sx, sw, at.groups);
    for (k = 0; k < 3; k++) {
        int64_t span = (int64_t)at.dilation[k] * (nw->shape.dim[2 + k] - 1) + 1;
        if (nx->shape.dim[2 + k] + 2 * (int64_t)at.pad[k] > INT32_MAX)
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d: x %s padded by %d is beyond 32-bit indices", sx, at.pad[k]);
        if (nx->shape.dim[2 + k] + 2 * (int64_t)at.pad[k] < span)
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d: the kernel w %s is larger than the padded input x %s", sw, sx);
        O[k] = (nx->shape.dim[2 + k] + 2 * (int64_t)at.pad[k] - span) / at.stride[k] + 1;
    }
    if (has_bias) {
        nn__node *nb = nn__n(g, bias);
        if (nb->dtype != NN_F32 || nb->shape.ndim != 1 || nb->shape.dim[0] != nw->shape.dim[0]) {
            char sb[128];
            nn__shape_str(&nb->shape, sb, sizeof sb);
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d: bias %s must be [%lld] float32", sb, (long long)nw->shape.dim[0]);
        }
    }
    {
        nn_shape ys = nn_shape5(nx->shape.dim[0], nw->shape.dim[0], O[0], O[1], O[2]);
        t = has_bias ? nn__op3(g, NN__OP_CONV3D, NN_F32, ys, x.id, w.id, bias.id) : nn__op2(g, NN__OP_CONV3D, NN_F32, ys, x.id, w.id);
    }
    if (t.id >= 0) g->nodes[t.id].a.conv = at;
    return t;
}

NN_API nn_tensor nn_conv3d_layer(nn_graph *g, nn_tensor x, int64_t out_channels, int kd, int kh, int kw,
                                 const nn_conv3d_desc *desc, const char *name) {
    char wn[256], bn[256];
    nn_init init;
    int64_t cin, groups = desc ? nn__defi(desc->groups, 1) : 1;
    if (!nn__check(g, "nn_conv3d_layer", 1, &x)) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv3d_layer: needs a name (at most 200 chars)");
    if (nn__n(g, x)->shape.ndim != 5 || kd < 1 || kh < 1 || kw < 1 || out_channels < 1 || groups < 1 ||
        nn__n(g, x)->shape.dim[1] % groups) {
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv3d_layer %s: x %s must be [N, C, D, H, W] with C divisible by groups, "
                           "kernel %dx%dx%d", name, sx, kd, kh, kw);
    }
    cin = nn__n(g, x)->shape.dim[1] / groups;
    init.kind = NN_INIT_UNIFORM; /* kaiming_uniform(a=sqrt(5)) is U(+-1/sqrt(fan_in)); so is the bias */
    init.a = (float)(-1.0 / sqrt((double)(cin * kd * kh * kw)));
    init.b = -init.a;
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    { /* weight, then bias (see nn_conv2d_layer) */
        nn_tensor w = nn_param(g, wn, nn_shape5(out_channels, cin, kd, kh, kw), init);
        nn_tensor b = desc && desc->no_bias ? nn__tensor(0) : nn_param(g, bn, nn_shape1(out_channels), init);
        return nn_conv3d(g, x, w, b, desc);
    }
}

#define nn__grad_conv3d_dx nn__grad_none
#define nn__grad_conv3d_dw nn__grad_none
#define nn__plan_conv3d_dx nn__plan_conv3d
#define nn__plan_conv3d_dw nn__plan_conv3d

static void nn__grad_conv3d(nn_graph *g, int id) { nn__grad_conv(g, id, NN__OP_CONV3D_DX, NN__OP_CONV3D_DW); }

/* A conv3d node's geometry: x and w are the forward's inputs, CONV3D_DX's output and first
   input (w, dy), CONV3D_DW's first input and output (x, dy). */
static void nn__conv3d_of(const nn_graph *g, const nn__node *n, nn__conv3d *c) {
    if (n->op == NN__OP_CONV3D) nn__conv3d_geom(c, &g->nodes[n->in[0]].shape, &g->nodes[n->in[1]].shape, &n->a.conv);
    else if (n->op == NN__OP_CONV3D_DX) nn__conv3d_geom(c, &n->shape, &g->nodes[n->in[0]].shape, &n->a.conv);
    else nn__conv3d_geom(c, &g->nodes[n->in[0]].shape, &n->shape, &n->a.conv);
}

/* im2col + GEMM where the CPU bodies run (host memory), with its scratch; direct kernels,
   no scratch, on devices. */
static void nn__plan_conv3d(nn_graph *g, nn__node *n) {
    nn__conv3d c3;
    if (!g->ctx->backend->host_memory) return;
    nn__conv3d_of(g, n, &c3);
    n->scratch = nn__conv3d_scratch(&c3);
}

static nn_result nn__cpu_conv3d(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    nn__conv3d c;
    nn__node *x = &g->nodes[in[0]], *w = &g->nodes[in[1]];
    nn__conv3d_geom(&c, &x->shape, &w->shape, &n->a.conv);
    nn__conv3d_forward(g->ctx->threads, &c, n->buf.host, x->buf.host, w->buf.host, n->n_in > 2 ? NN__F(in[2]) : NULL,
                       n->scratch_buf.host);
    return NN_OK;
}

/* inputs (w, dy), output dx */
static nn_result nn__cpu_conv3d_dx(nn_graph *g, nn__node *n) {
    nn__conv3d c;
    nn__node *w = &g->nodes[n->in[0]], *dy = &g->nodes[n->in[1]];
    nn__conv3d_geom(&c, &n->shape, &w->shape, &n->a.conv);
    nn__conv3d_backward_data(g->ctx->threads, &c, n->buf.host, w->buf.host, dy->buf.host, n->scratch_buf.host);
    return NN_OK;
}

/* inputs (x, dy), output dw */
static nn_result nn__cpu_conv3d_dw(nn_graph *g, nn__node *n) {
    nn__conv3d c;
    nn__node *x = &g->nodes[n->in[0]], *dy = &g->nodes[n->in[1]];
    nn__conv3d_geom(&c, &x->shape, &n->shape, &n->a.conv);
    nn__conv3d_backward_weight(g->ctx->threads, &c, n->buf.host, x->buf.host, dy->buf.host, n->scratch_buf.host);
    return NN_OK;
}

/* The kernels' geometry, two int8s: ga = stride d/h/w, pad d/h/w, dilation d/h; gb =
   dilation w, groups. */
static void nn__conv3d_geo(const nn__conv_attr *at, int geo[16]) {
    memset(geo, 0, 16 * sizeof(int));
    memcpy(geo, at->stride, 3 * sizeof(int));
    memcpy(geo + 3, at->pad, 3 * sizeof(int));
    memcpy(geo + 6, at->dilation, 3 * sizeof(int));
    geo[9] = at->groups;
}

/* The geometry fields every conv3d kernel takes, from the node's c and geo (k: any of their
   nn__k_ structs) */
#define NN__CONV3D_KFIELDS(k, c, geo) \
    do {                              \
        (k).N = (c).N;                \
        (k).C = (c).C;                \
        (k).D = (c).D;                \
        (k).H = (c).H;                \
        (k).W = (c).W;                \
        (k).K = (c).K;                \
        (k).KD = (c).KD;              \
        (k).KH = (c).KH;              \
        (k).KW = (c).KW;              \
        (k).OD = (c).OD;              \
        (k).OH = (c).OH;              \
        (k).OW = (c).OW;              \
        (k).ga = (geo);               \
        (k).gb = (geo) + 8;           \
    } while (0)

/* conv3d.cl's kernels, one work-item per element of the output */
static nn_result nn__launch_conv3d(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__node *x = &g->nodes[n->in[0]], *w = &g->nodes[n->in[1]];
    nn__conv3d c;
    int geo[16];
    NN__KSTART(conv3d_forward, "conv3d", "conv3d_forward", n->numel);
    nn__conv3d_geom(&c, &x->shape, &w->shape, &n->a.conv);
    nn__conv3d_geo(&n->a.conv, geo);
    k.x = &x->buf;
    k.w = &w->buf;
    k.b = n->n_in > 2 ? &g->nodes[n->in[2]].buf : &g->one;
    k.y = &n->buf;
    NN__CONV3D_KFIELDS(k, c, geo);
    k.has_bias = n->n_in > 2;
    return nn__kargs_conv3d_forward(l, &k);
}

static nn_result nn__launch_conv3d_dx(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__node *w = &g->nodes[n->in[0]], *dy = &g->nodes[n->in[1]];
    nn__conv3d c;
    int geo[16];
    NN__KSTART(conv3d_backward_data, "conv3d", "conv3d_backward_data", n->numel);
    nn__conv3d_geom(&c, &n->shape, &w->shape, &n->a.conv);
    nn__conv3d_geo(&n->a.conv, geo);
    k.w = &w->buf;
    k.dy = &dy->buf;
    k.dx = &n->buf;
    NN__CONV3D_KFIELDS(k, c, geo);
    return nn__kargs_conv3d_backward_data(l, &k);
}

static nn_result nn__launch_conv3d_dw(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__node *x = &g->nodes[n->in[0]], *dy = &g->nodes[n->in[1]];
    nn__conv3d c;
    int geo[16];
    NN__KSTART(conv3d_backward_weight, "conv3d", "conv3d_backward_weight", n->numel);
    nn__conv3d_geom(&c, &x->shape, &n->shape, &n->a.conv);
    nn__conv3d_geo(&n->a.conv, geo);
    k.x = &x->buf;
    k.dy = &dy->buf;
    k.dw = &n->buf;
    NN__CONV3D_KFIELDS(k, c, geo);
    return nn__kargs_conv3d_backward_weight(l, &k);
}
