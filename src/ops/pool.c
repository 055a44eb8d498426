/* The pool ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../nn_internal.h"
#include "../nn_ops.h"

/* ---- pooling ---- */

/* PyTorch's pooling_output_shape: floor (or ceil) division, and in ceil mode a last window
   that would start in the right padding is dropped. Below 1: the window does not fit. */
static int64_t nn__pool_out(int64_t n, int k, int s, int p, int d, int ceil_mode) {
    int64_t span = n + 2 * (int64_t)p - (int64_t)d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t o = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= n + p) o--;
    return o;
}

/* "3x2" (h x w) for 2-D pooling, "2" for 1-D, in messages */
static const char *nn__pool_pair(char *buf, size_t n, int dims, int h, int w) {
    if (dims == 1) snprintf(buf, n, "%d", w);
    else snprintf(buf, n, "%dx%d", h, w);
    return buf;
}

/* x as a pooling input: float32 [N, C, H, W] (dims 2) or [N, C, L] (dims 1); NULL on error. */
static nn__node *nn__pool_input(nn_graph *g, const char *opname, nn_tensor x, int dims) {
    char sx[128];
    if (!nn__check(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return NULL;
    nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
    if (nn__n(g, x)->shape.ndim != dims + 2) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s must be %s", opname, sx, dims == 2 ? "[N, C, H, W]" : "[N, C, L]");
        return NULL;
    }
    if (nn__n(g, x)->numel > INT32_MAX) {
        nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s has more than 2^31 elements", opname, sx);
        return NULL;
    }
    return nn__n(g, x);
}

/* A pooling node. attr (node->i): kh, kw, sh, sw, ph, pw, then dh, dw for max pooling or
   exclude_pad, adaptive for average pooling (which has no dilation). 1-D pooling is 2-D
   pooling with H = 1 on the [N, C, L] tensor itself: kh = sh = 1, ph = 0. */
static nn_tensor nn__pooling_node(nn_graph *g, const char *opname, int op, nn_tensor x, int dims, const int *attr, int ceil_mode) {
    char sx[128], k[32], s[32], p[32], d[32];
    nn__node *nx = nn__pool_input(g, opname, x, dims);
    int is_max = op == NN__OP_MAXPOOL2D, dh = is_max ? attr[6] : 1, dw = is_max ? attr[7] : 1;
    int64_t H, W, OH, OW;
    nn_shape out;
    nn_tensor t;
    if (!nx) return nn__tensor(-1);
    nn__shape_str(&nx->shape, sx, sizeof sx);
    nn__pool_pair(k, sizeof k, dims, attr[0], attr[1]);
    nn__pool_pair(s, sizeof s, dims, attr[2], attr[3]);
    nn__pool_pair(p, sizeof p, dims, attr[4], attr[5]);
    nn__pool_pair(d, sizeof d, dims, dh, dw);
    if (attr[0] < 1 || attr[1] < 1 || attr[2] < 1 || attr[3] < 1 || attr[4] < 0 || attr[5] < 0 || dh < 1 || dw < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: kernel %s, stride %s%s%s must be >= 1 and padding %s >= 0",
                           opname, k, s, is_max ? " and dilation " : "", is_max ? d : "", p);
    if (attr[4] > attr[0] / 2 || attr[5] > attr[1] / 2)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: padding %s is more than half the kernel %s (x %s)", opname,
                           p, k, sx);
    H = dims == 2 ? nx->shape.dim[2] : 1;
    W = nx->shape.dim[dims + 1];
    if (H + 2 * (int64_t)attr[4] > INT32_MAX || W + 2 * (int64_t)attr[5] > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s with padding %s is beyond 32-bit indices", opname, sx, p);
    OH = nn__pool_out(H, attr[0], attr[2], attr[4], dh, ceil_mode);
    OW = nn__pool_out(W, attr[1], attr[3], attr[5], dw, ceil_mode);
    if (OH < 1 || OW < 1)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: the window (kernel %s%s%s) is larger than the padded input x %s (padding %s)",
                           opname, k, is_max ? ", dilation " : "", is_max ? d : "", sx, p);
    out = nx->shape;
    if (dims == 2) out.dim[2] = OH;
    out.dim[dims + 1] = OW;
    if (nn__numel(&out) > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: the output of x %s has more than 2^31 elements", opname, sx);
    t = nn__op1(g, op, NN_F32, out, x.id);
    if (t.id >= 0) memcpy(g->nodes[t.id].i, attr, 8 * sizeof(int));
    return t;
}

static nn_tensor nn__pooling2d(nn_graph *g, const char *opname, int op, nn_tensor x, const nn_pool2d_desc *d) {
    int attr[8];
    if (!nn__check(g, opname, 1, &x)) return nn__tensor(-1);
    if (!d) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a desc with the kernel size", opname);
    attr[0] = d->kernel_h;
    attr[1] = d->kernel_w;
    attr[2] = nn__defi(d->stride_h, d->kernel_h);
    attr[3] = nn__defi(d->stride_w, d->kernel_w);
    attr[4] = nn__defi(d->pad_h, 0);
    attr[5] = nn__defi(d->pad_w, 0);
    if (op == NN__OP_MAXPOOL2D) {
        attr[6] = nn__defi(d->dilation_h, 1);
        attr[7] = nn__defi(d->dilation_w, 1);
    } else {
        if (nn__defi(d->dilation_h, 1) != 1 || nn__defi(d->dilation_w, 1) != 1)
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: dilation %dx%d: average pooling has no dilation", opname,
                               nn__defi(d->dilation_h, 1), nn__defi(d->dilation_w, 1));
        attr[6] = d->exclude_pad != 0;
        attr[7] = 0;
    }
    return nn__pooling_node(g, opname, op, x, 2, attr, d->ceil_mode != 0);
}

static nn_tensor nn__pooling1d(nn_graph *g, const char *opname, int op, nn_tensor x, const nn_pool1d_desc *d) {
    int attr[8];
    if (!nn__check(g, opname, 1, &x)) return nn__tensor(-1);
    if (!d) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a desc with the kernel size", opname);
    if (op != NN__OP_MAXPOOL2D && nn__defi(d->dilation, 1) != 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: dilation %d: average pooling has no dilation", opname,
                           nn__defi(d->dilation, 1));
    attr[0] = 1;
    attr[1] = d->kernel;
    attr[2] = 1;
    attr[3] = nn__defi(d->stride, d->kernel);
    attr[4] = 0;
    attr[5] = nn__defi(d->pad, 0);
    attr[6] = op == NN__OP_MAXPOOL2D ? 1 : d->exclude_pad != 0;
    attr[7] = op == NN__OP_MAXPOOL2D ? nn__defi(d->dilation, 1) : 0;
    return nn__pooling_node(g, opname, op, x, 1, attr, d->ceil_mode != 0);
}

NN_API nn_tensor nn_max_pool2d(nn_graph *g, nn_tensor x, const nn_pool2d_desc *desc) {
    return nn__pooling2d(g, "nn_max_pool2d", NN__OP_MAXPOOL2D, x, desc);
}
NN_API nn_tensor nn_avg_pool2d(nn_graph *g, nn_tensor x, const nn_pool2d_desc *desc) {
    return nn__pooling2d(g, "nn_avg_pool2d", NN__OP_AVGPOOL2D, x, desc);
}
NN_API nn_tensor nn_max_pool1d(nn_graph *g, nn_tensor x, const nn_pool1d_desc *desc) {
    return nn__pooling1d(g, "nn_max_pool1d", NN__OP_MAXPOOL2D, x, desc);
}
NN_API nn_tensor nn_avg_pool1d(nn_graph *g, nn_tensor x, const nn_pool1d_desc *desc) {
    return nn__pooling1d(g, "nn_avg_pool1d", NN__OP_AVGPOOL2D, x, desc);
}

/* One window over the whole plane. */
static nn_tensor nn__global_pool(nn_graph *g, const char *opname, int op, nn_tensor x) {
    nn__node *nx = nn__pool_input(g, opname, x, 2);
    int attr[8];
    if (!nx) return nn__tensor(-1);
    attr[0] = attr[2] = (int)nx->shape.dim[2];
    attr[1] = attr[3] = (int)nx->shape.dim[3];
    attr[4] = attr[5] = 0;
    attr[6] = op == NN__OP_MAXPOOL2D; /* dilation 1, or exclude_pad 0 */
    attr[7] = op == NN__OP_MAXPOOL2D;
    return nn__pooling_node(g, opname, op, x, 2, attr, 0);
}
NN_API nn_tensor nn_global_avg_pool2d(nn_graph *g, nn_tensor x) { return nn__global_pool(g, "nn_global_avg_pool2d", NN__OP_AVGPOOL2D, x); }
NN_API nn_tensor nn_global_max_pool2d(nn_graph *g, nn_tensor x) { return nn__global_pool(g, "nn_global_max_pool2d", NN__OP_MAXPOOL2D, x); }

NN_API nn_tensor nn_adaptive_avg_pool2d(nn_graph *g, nn_tensor x, int64_t oh, int64_t ow) {
    nn__node *nx = nn__pool_input(g, "nn_adaptive_avg_pool2d", x, 2);
    static const int attr[8] = {1, 1, 1, 1, 0, 0, 0, 1}; /* adaptive: the bins replace kernel and stride */
    nn_shape out;
    nn_tensor t;
    if (!nx) return nn__tensor(-1);
    out = nn_shape4(nx->shape.dim[0], nx->shape.dim[1], oh, ow);
    if (oh < 1 || ow < 1 || oh > INT32_MAX || ow > INT32_MAX / oh || nn__numel(&out) > INT32_MAX) { /* no overflow in numel */
        char sx[128];
        nn__shape_str(&nx->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_adaptive_avg_pool2d: output %lldx%lld for x %s must be >= 1x1 and below 2^31 elements",
                           (long long)oh, (long long)ow, sx);
    }
    t = nn__op1(g, NN__OP_AVGPOOL2D, NN_F32, out, x.id);
    if (t.id >= 0) memcpy(g->nodes[t.id].i, attr, sizeof attr);
    return t;
}


static const char *nn__pool_kernel(int op) {
    switch (op) {
    case NN__OP_MAXPOOL2D: return "max_pool2d_forward";
    case NN__OP_MAXPOOL2D_ARGMAX: return "max_pool2d_argmax";
    case NN__OP_MAXPOOL2D_GRAD: return "max_pool2d_backward";
    case NN__OP_AVGPOOL2D: return "avg_pool2d_forward";
    default: return "avg_pool2d_backward";
    }
}

/* A pooling node's geometry: x is the input of the forward ops and the output of the
   gradient ops, whose last input is dy. */
static void nn__pooling_of(const nn_graph *g, const nn__node *n, nn__pooling *p) {
    int is_max = n->op != NN__OP_AVGPOOL2D && n->op != NN__OP_AVGPOOL2D_GRAD;
    if (n->op == NN__OP_MAXPOOL2D_GRAD || n->op == NN__OP_AVGPOOL2D_GRAD)
        nn__pooling_geom(p, is_max, &n->shape, &g->nodes[n->in[n->n_in - 1]].shape, n->i);
    else
        nn__pooling_geom(p, is_max, &g->nodes[n->in[0]].shape, &n->shape, n->i);
}

/* ---- autograd rules ---- */

static void nn__grad_maxpool2d(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    /* dx gathers dy through the windows' argmax, which the backward
                          pass recomputes so inference graphs keep no indices */
    t = nn__op1(g, NN__OP_MAXPOOL2D_ARGMAX, NN_I32, n.shape, a);
    if (t.id < 0) return;
    memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
    t = nn__op2(g, NN__OP_MAXPOOL2D_GRAD, NN_F32, g->nodes[a].shape, t.id, gy.id);
    if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
    nn__acc_grad(g, a, t);
    return;
}

static void nn__grad_avgpool2d(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    t = nn__op1(g, NN__OP_AVGPOOL2D_GRAD, NN_F32, g->nodes[a].shape, gy.id);
    if (t.id >= 0) memcpy(g->nodes[t.id].i, n.i, sizeof n.i);
    nn__acc_grad(g, a, t);
    return;
}

/* ---- CPU bodies ---- */

static nn_result nn__cpu_pool2d(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    {
    nn__pooling p;
    nn__pooling_of(g, n, &p);
    if (n->op == NN__OP_MAXPOOL2D) nn__max_pool2d_forward(g->ctx->threads, &p, y, NN__F(in[0]));
    else if (n->op == NN__OP_MAXPOOL2D_ARGMAX) nn__max_pool2d_argmax(g->ctx->threads, &p, (int32_t *)y, NN__F(in[0]));
    else if (n->op == NN__OP_MAXPOOL2D_GRAD) nn__max_pool2d_backward(g->ctx->threads, &p, y, NN__I(in[0]), NN__F(in[1]));
    else if (n->op == NN__OP_AVGPOOL2D) nn__avg_pool2d_forward(g->ctx->threads, &p, y, NN__F(in[0]));
    else nn__avg_pool2d_backward(g->ctx->threads, &p, y, NN__F(in[0]));
    return NN_OK;
}
}

/* ---- device plans: launches of kernels/FAMILY.cl ---- */

static nn_result nn__dev_pool2d(nn_graph *g, int id) {
    nn_context *ctx = g->ctx;
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    char kname[64];
    { /* one work-item per element of y */
    nn__pooling p;
    int geo[8];
    nn__pooling_of(g, n, &p);
    memcpy(geo, n->i, 6 * sizeof(int));
    geo[6] = p.dh;
    geo[7] = p.dw;
    if (ctx->dev.cpu_tuned && (n->op == NN__OP_MAXPOOL2D || n->op == NN__OP_MAXPOOL2D_ARGMAX ||
                           n->op == NN__OP_MAXPOOL2D_GRAD)) { /* by rows / planes (see pool.cl) */
        snprintf(kname, sizeof kname, "%s%s", nn__pool_kernel(n->op),
                 n->op == NN__OP_MAXPOOL2D_GRAD ? "_planes" : "_rows");
        r = nn__launch_add(g, id, "pool", kname, n->op == NN__OP_MAXPOOL2D_GRAD ? (size_t)p.NC : (size_t)p.NC * p.OH, &l);
    } else
        r = nn__launch_add(g, id, "pool", nn__pool_kernel(n->op), (size_t)N, &l);
    if (r != NN_OK) return r;
    if (n->op == NN__OP_MAXPOOL2D_GRAD)
        return nn__args(l, "mmmiiiii8", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, y, p.NC, p.H, p.W, p.OH, p.OW, geo);
    if (n->op != NN__OP_AVGPOOL2D && n->op != NN__OP_AVGPOOL2D_GRAD)
        return nn__args(l, "mmiiiii8", &g->nodes[in[0]].buf, y, p.NC, p.H, p.W, p.OH, p.OW, geo);
    return nn__args(l, "mmiiiii8ii", &g->nodes[in[0]].buf, y, p.NC, p.H, p.W, p.OH, p.OW, geo, p.exclude_pad,
                       p.adaptive);
}
}
