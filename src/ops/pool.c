/* The pool ops, one block each: builder (shape rule), registry aliases, autograd rule, CPU
   body (its loop in src/cpu/pool.c) and kernel launch (kernels/pool.cl). Max and average
   pooling over the planes of x [N, C, H, W] (1-D pooling: x [N, C, L] as H = 1), with
   PyTorch's window rules; attributes in nn__pool_attr (src/ops/pool.h). */
#include "../base/internal.h"
#include "../base/registry.h"

/* ==== shared: the output size, the checks and the node of every pooling builder, and a
   node's geometry for its loops and kernels ==== */

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

/* x as a pooling input: float32, bfloat16 or float16 [N, C, H, W] (dims 2) or [N, C, L]
   (dims 1); NULL on error. A 16-bit x gives y of its dtype (NN__OPF_HALF). */
static nn__node *nn__pool_input(nn_graph *g, const char *opname, nn_tensor x, int dims) {
    char sx[128];
    if (!nn__check(g, opname, 1, &x)) return NULL;
    if (!nn__dtype_half(nn__n(g, x)->dtype) && !nn__expect_f32(g, opname, x, "x")) return NULL;
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

/* A pooling node with attributes at (nn__pool_attr: average pooling has dilation 1). 1-D
   pooling is 2-D pooling with H = 1 on the [N, C, L] tensor itself: kh = sh = 1, ph = 0. */
static nn_tensor nn__pooling_node(nn_graph *g, const char *opname, int op, nn_tensor x, int dims, const nn__pool_attr *at, int ceil_mode) {
    char sx[128], k[32], s[32], p[32], d[32];
    nn__node *nx = nn__pool_input(g, opname, x, dims);
    int is_max = op == NN__OP_MAXPOOL2D, dh = at->dilation[0], dw = at->dilation[1];
    int64_t H, W, OH, OW;
    nn_shape out;
    nn_tensor t;
    if (!nx) return nn__tensor(-1);
    nn__shape_str(&nx->shape, sx, sizeof sx);
    nn__pool_pair(k, sizeof k, dims, at->kernel[0], at->kernel[1]);
    nn__pool_pair(s, sizeof s, dims, at->stride[0], at->stride[1]);
    nn__pool_pair(p, sizeof p, dims, at->pad[0], at->pad[1]);
    nn__pool_pair(d, sizeof d, dims, dh, dw);
    if (at->kernel[0] < 1 || at->kernel[1] < 1 || at->stride[0] < 1 || at->stride[1] < 1 || at->pad[0] < 0 || at->pad[1] < 0 || dh < 1 || dw < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: kernel %s, stride %s%s%s must be >= 1 and padding %s >= 0",
                           opname, k, s, is_max ? " and dilation " : "", is_max ? d : "", p);
    if (at->pad[0] > at->kernel[0] / 2 || at->pad[1] > at->kernel[1] / 2)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: padding %s is more than half the kernel %s (x %s)", opname,
                           p, k, sx);
    H = dims == 2 ? nx->shape.dim[2] : 1;
    W = nx->shape.dim[dims + 1];
    if (H + 2 * (int64_t)at->pad[0] > INT32_MAX || W + 2 * (int64_t)at->pad[1] > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: x %s with padding %s is beyond 32-bit indices", opname, sx, p);
    OH = nn__pool_out(H, at->kernel[0], at->stride[0], at->pad[0], dh, ceil_mode);
    OW = nn__pool_out(W, at->kernel[1], at->stride[1], at->pad[1], dw, ceil_mode);
    if (OH < 1 || OW < 1)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: the window (kernel %s%s%s) is larger than the padded input x %s (padding %s)",
                           opname, k, is_max ? ", dilation " : "", is_max ? d : "", sx, p);
    out = nx->shape;
    if (dims == 2) out.dim[2] = OH;
    out.dim[dims + 1] = OW;
    if (nn__numel(&out) > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: the output of x %s has more than 2^31 elements", opname, sx);
    t = nn__op1(g, op, nx->dtype, out, x.id);
    if (t.id >= 0) g->nodes[t.id].a.pool = *at;
    return t;
}

static nn_tensor nn__pooling2d(nn_graph *g, const char *opname, int op, nn_tensor x, const nn_pool2d_desc *d) {
    nn__pool_attr at;
    if (!nn__check(g, opname, 1, &x)) return nn__tensor(-1);
    if (!d) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a desc with the kernel size", opname);
    memset(&at, 0, sizeof at);
    at.kernel[0] = d->kernel_h;
    at.kernel[1] = d->kernel_w;
    at.stride[0] = nn__defi(d->stride_h, d->kernel_h);
    at.stride[1] = nn__defi(d->stride_w, d->kernel_w);
    at.pad[0] = nn__defi(d->pad_h, 0);
    at.pad[1] = nn__defi(d->pad_w, 0);
    at.dilation[0] = nn__defi(d->dilation_h, 1);
    at.dilation[1] = nn__defi(d->dilation_w, 1);
    if (op != NN__OP_MAXPOOL2D) {
        if (at.dilation[0] != 1 || at.dilation[1] != 1)
            return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: dilation %dx%d: average pooling has no dilation", opname,
                               at.dilation[0], at.dilation[1]);
        at.exclude_pad = d->exclude_pad != 0;
    }
    return nn__pooling_node(g, opname, op, x, 2, &at, d->ceil_mode != 0);
}

static nn_tensor nn__pooling1d(nn_graph *g, const char *opname, int op, nn_tensor x, const nn_pool1d_desc *d) {
    nn__pool_attr at;
    if (!nn__check(g, opname, 1, &x)) return nn__tensor(-1);
    if (!d) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a desc with the kernel size", opname);
    if (op != NN__OP_MAXPOOL2D && nn__defi(d->dilation, 1) != 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: dilation %d: average pooling has no dilation", opname,
                           nn__defi(d->dilation, 1));
    memset(&at, 0, sizeof at);
    at.kernel[0] = at.stride[0] = at.dilation[0] = 1;
    at.kernel[1] = d->kernel;
    at.stride[1] = nn__defi(d->stride, d->kernel);
    at.pad[1] = nn__defi(d->pad, 0);
    at.dilation[1] = op == NN__OP_MAXPOOL2D ? nn__defi(d->dilation, 1) : 1;
    at.exclude_pad = op != NN__OP_MAXPOOL2D && d->exclude_pad != 0;
    return nn__pooling_node(g, opname, op, x, 1, &at, d->ceil_mode != 0);
}

/* One window over the whole plane. */
static nn_tensor nn__global_pool(nn_graph *g, const char *opname, int op, nn_tensor x) {
    nn__node *nx = nn__pool_input(g, opname, x, 2);
    nn__pool_attr at;
    if (!nx) return nn__tensor(-1);
    memset(&at, 0, sizeof at);
    at.kernel[0] = at.stride[0] = (int)nx->shape.dim[2];
    at.kernel[1] = at.stride[1] = (int)nx->shape.dim[3];
    at.dilation[0] = at.dilation[1] = 1;
    return nn__pooling_node(g, opname, op, x, 2, &at, 0);
}

/* A pooling node's geometry: x is the input of the forward ops and the output of the
   gradient ops, whose last input is dy. */
static void nn__pooling_of(const nn_graph *g, const nn__node *n, nn__pooling *p) {
    int is_max = n->op != NN__OP_AVGPOOL2D && n->op != NN__OP_AVGPOOL2D_GRAD;
    if (n->op == NN__OP_MAXPOOL2D_GRAD || n->op == NN__OP_AVGPOOL2D_GRAD)
        nn__pooling_geom(p, is_max, &n->shape, &g->nodes[n->in[n->n_in - 1]].shape, &n->a.pool);
    else
        nn__pooling_geom(p, is_max, &g->nodes[n->in[0]].shape, &n->shape, &n->a.pool);
}

/* The storage type of a pooling node's float data (x, y, dy, dx): its own dtype, x's for
   MAXPOOL2D_ARGMAX (whose idx is int32). */
static nn_dtype nn__pool_dtype(const nn_graph *g, const nn__node *n) {
    return n->op == NN__OP_MAXPOOL2D_ARGMAX ? g->nodes[n->in[0]].dtype : n->dtype;
}

/* A 16-bit pooling node on the CPU backend: the float copies of its float input (x, or dy
   for the gradients) and of its output, numel(in) + numel(out) floats of scratch (no float
   output for MAXPOOL2D_ARGMAX). The float32 loops run between them; the output is rounded
   once into storage, so each value is the float32 op's on the widened input, rounded. */
static void nn__plan_pool16(nn_graph *g, nn__node *n) {
    const nn__node *in = &g->nodes[n->in[n->n_in - 1]];
    n->scratch = 0;
    if (!g->ctx->backend->host_memory || !nn__dtype_half(nn__pool_dtype(g, n))) return;
    n->scratch = in->numel + (n->op == NN__OP_MAXPOOL2D_ARGMAX ? 0 : n->numel);
}

/* The CPU body's float views: *fin (the input last in n->in: x, or dy) and *fout (the
   output, NULL for int32 idx); 16-bit storage widened into the scratch first. finish: the
   float output rounded into storage (nothing for float32, whose views are the data). */
static void nn__pool16_views(nn_graph *g, nn__node *n, const float **fin, float **fout) {
    nn__node *in = &g->nodes[n->in[n->n_in - 1]];
    if (!nn__dtype_half(nn__pool_dtype(g, n))) {
        *fin = (const float *)in->buf.host;
        *fout = (float *)n->buf.host;
        return;
    }
    nn__cast(g->ctx->threads, in->buf.host, in->dtype, n->scratch_buf.host, NN_F32, in->numel);
    *fin = (const float *)n->scratch_buf.host;
    *fout = n->op == NN__OP_MAXPOOL2D_ARGMAX ? NULL : (float *)n->scratch_buf.host + in->numel;
}
static void nn__pool16_finish(nn_graph *g, nn__node *n, const float *fout) {
    if (nn__dtype_half(n->dtype)) nn__cast(g->ctx->threads, fout, NN_F32, n->buf.host, n->dtype, n->numel);
}

/* geo, the kernels' int8 = (kh, kw, sh, sw, ph, pw, dh, dw) */
static void nn__pool_geo(const nn__pooling *p, int *geo) {
    geo[0] = p->kh;
    geo[1] = p->kw;
    geo[2] = p->sh;
    geo[3] = p->sw;
    geo[4] = p->ph;
    geo[5] = p->pw;
    geo[6] = p->dh;
    geo[7] = p->dw;
}

/* A pool launch's common part: the node's pooling p and geometry geo (eight ints), and the
   launch of kernel, one work-item per element of the node; on a device tuned as a CPU,
   cpu_kernel (when not NULL) with one work-item per plane. */
static nn_result nn__pool_launch(nn_graph *g, int id, const char *kernel, const char *cpu_kernel,
                                 nn__pooling *p, int *geo, nn__launch **l) {
    nn__node *n = &g->nodes[id];
    int cpu = cpu_kernel && g->ctx->dev.cpu_tuned;
    nn_result r;
    nn__pooling_of(g, n, p);
    nn__pool_geo(p, geo);
    r = nn__launch_kernel(g, id, "pool", cpu ? cpu_kernel : kernel,
                          cpu ? (size_t)p->NC : (size_t)n->numel, l);
    if (r == NN_OK) (*l)->store = nn__pool_dtype(g, n); /* 16-bit: the program built with NN_STORE_BF16 / _F16 */
    return r;
}

/* The fields every pool kernel takes, from p and geo (k: any pool kernel's nn__k_ struct) */
#define NN__POOL_KFIELDS(k, p, geo) \
    do {                            \
        (k).NC = (p).NC;            \
        (k).H = (p).H;              \
        (k).W = (p).W;              \
        (k).OH = (p).OH;            \
        (k).OW = (p).OW;            \
        (k).geo = (geo);            \
    } while (0)

/* A pool launch function's opening: n, p, geo and NN__KWITH's l, k (its pool fields set)
   and r, for kernel (of signature sig; its CPU variant cpu_kernel, as
   nn__pool_launch's) */
#define NN__POOL_KLAUNCH(sig, kernel, cpu_kernel)                                    \
    nn__node *n = &g->nodes[id];                                                     \
    nn__pooling p;                                                                   \
    int geo[8];                                                                      \
    NN__KWITH(sig, nn__pool_launch(g, id, kernel, cpu_kernel, &p, geo, &l));          \
    NN__POOL_KFIELDS(k, p, geo)

/* ==== max_pool2d: y [N, C, OH, OW] = the maximum of each window (kernel, stride, padding,
   dilation, ceil mode: torch.nn.functional.max_pool2d, max_pool1d, and the global form).
   Its gradient recomputes the windows' argmax (MAXPOOL2D_ARGMAX, idx [N, C, OH, OW] int32,
   so inference keeps no indices) and sends dy there (MAXPOOL2D_GRAD: dx [N, C, H, W], in
   output order). On devices tuned as CPUs the kernels run by planes. ==== */

NN_API nn_tensor nn_max_pool2d(nn_graph *g, nn_tensor x, const nn_pool2d_desc *desc) {
    return nn__pooling2d(g, "nn_max_pool2d", NN__OP_MAXPOOL2D, x, desc);
}
NN_API nn_tensor nn_max_pool1d(nn_graph *g, nn_tensor x, const nn_pool1d_desc *desc) {
    return nn__pooling1d(g, "nn_max_pool1d", NN__OP_MAXPOOL2D, x, desc);
}
NN_API nn_tensor nn_global_max_pool2d(nn_graph *g, nn_tensor x) { return nn__global_pool(g, "nn_global_max_pool2d", NN__OP_MAXPOOL2D, x); }

#define nn__plan_maxpool2d nn__plan_pool16
#define nn__grad_maxpool2d_argmax nn__grad_none
#define nn__plan_maxpool2d_argmax nn__plan_pool16
#define nn__grad_maxpool2d_grad nn__grad_none
#define nn__plan_maxpool2d_grad nn__plan_pool16

/* dy for a pooling gradient of x: gy in x's dtype (a 16-bit x's gradient is 16-bit, as
   conv2d's: nn__grad_conv) */
static int nn__pool_gy(nn_graph *g, int x, nn_tensor gy) {
    if (gy.id < 0 || g->nodes[gy.id].dtype == g->nodes[x].dtype) return gy.id;
    return nn__op1(g, NN__OP_CAST, g->nodes[x].dtype, g->nodes[gy.id].shape, gy.id).id;
}

static void nn__grad_maxpool2d(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    /* dx gathers dy through the windows' argmax, which the backward pass recomputes so
       inference graphs keep no indices */
    int dy = nn__pool_gy(g, a, gy);
    if (dy < 0) return;
    t = nn__op1(g, NN__OP_MAXPOOL2D_ARGMAX, NN_I32, n.shape, a);
    if (t.id < 0) return;
    g->nodes[t.id].a = n.a;
    t = nn__op2(g, NN__OP_MAXPOOL2D_GRAD, g->nodes[a].dtype, g->nodes[a].shape, t.id, dy);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
    return;
}

/* The CPU bodies: the float32 loops of src/cpu/pool.c on the float views of
   nn__pool16_views (16-bit storage widened, the output rounded after). */
static nn_result nn__cpu_maxpool2d(nn_graph *g, nn__node *n) {
    nn__pooling p;
    const float *x;
    float *y;
    nn__pooling_of(g, n, &p);
    nn__pool16_views(g, n, &x, &y);
    nn__max_pool2d_forward(g->ctx->threads, &p, y, x);
    nn__pool16_finish(g, n, y);
    return NN_OK;
}

static nn_result nn__cpu_maxpool2d_argmax(nn_graph *g, nn__node *n) {
    nn__pooling p;
    const float *x;
    float *unused;
    nn__pooling_of(g, n, &p);
    nn__pool16_views(g, n, &x, &unused);
    nn__max_pool2d_argmax(g->ctx->threads, &p, (int32_t *)n->buf.host, x);
    return NN_OK;
}

/* inputs: idx, dy */
static nn_result nn__cpu_maxpool2d_grad(nn_graph *g, nn__node *n) {
    nn__pooling p;
    const float *dy;
    float *dx;
    nn__pooling_of(g, n, &p);
    nn__pool16_views(g, n, &dy, &dx);
    nn__max_pool2d_backward(g->ctx->threads, &p, dx, NN__I(n->in[0]), dy);
    nn__pool16_finish(g, n, dx);
    return NN_OK;
}

/* One work-item per output element, or per plane on a device tuned as a CPU (per output row
   before: 14 or 7 outputs an item in the CNN, whose index division and checks cost
   about a tenth of the kernels' time on PoCL). */
static nn_result nn__launch_maxpool2d(nn_graph *g, int id) {
    NN__POOL_KLAUNCH(max_pool2d_forward, "max_pool2d_forward_elems", "max_pool2d_forward_planes");
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    return nn__kargs_max_pool2d_forward(l, &k);
}

static nn_result nn__launch_maxpool2d_argmax(nn_graph *g, int id) {
    NN__POOL_KLAUNCH(max_pool2d_argmax, "max_pool2d_argmax_elems", "max_pool2d_argmax_planes");
    k.x = &g->nodes[n->in[0]].buf;
    k.idx = &n->buf;
    return nn__kargs_max_pool2d_argmax(l, &k);
}

/* One work-item per input element, or per plane on a device tuned as a CPU (float32: the
   plane-wise kernel adds into dx in memory, which 16-bit storage would round at each add). */
static nn_result nn__launch_maxpool2d_grad(nn_graph *g, int id) {
    NN__POOL_KLAUNCH(max_pool2d_backward, "max_pool2d_backward_elems",
                     nn__dtype_half(g->nodes[id].dtype) ? NULL : "max_pool2d_backward_planes");
    k.idx = &g->nodes[n->in[0]].buf;
    k.dy = &g->nodes[n->in[1]].buf;
    k.dx = &n->buf;
    return nn__kargs_max_pool2d_backward(l, &k);
}

/* ==== avg_pool2d: y [N, C, OH, OW] = the mean of each window (count_include_pad unless
   exclude_pad; torch.nn.functional.avg_pool2d, avg_pool1d, the global form, and
   adaptive_avg_pool2d's bins). AVGPOOL2D_GRAD: dx [N, C, H, W] = dy / divisor summed over
   the windows that hold each element, in output order. ==== */

NN_API nn_tensor nn_avg_pool2d(nn_graph *g, nn_tensor x, const nn_pool2d_desc *desc) {
    return nn__pooling2d(g, "nn_avg_pool2d", NN__OP_AVGPOOL2D, x, desc);
}
NN_API nn_tensor nn_avg_pool1d(nn_graph *g, nn_tensor x, const nn_pool1d_desc *desc) {
    return nn__pooling1d(g, "nn_avg_pool1d", NN__OP_AVGPOOL2D, x, desc);
}
NN_API nn_tensor nn_global_avg_pool2d(nn_graph *g, nn_tensor x) { return nn__global_pool(g, "nn_global_avg_pool2d", NN__OP_AVGPOOL2D, x); }

NN_API nn_tensor nn_adaptive_avg_pool2d(nn_graph *g, nn_tensor x, int64_t oh, int64_t ow) {
    nn__node *nx = nn__pool_input(g, "nn_adaptive_avg_pool2d", x, 2);
    nn__pool_attr at;
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
    memset(&at, 0, sizeof at); /* adaptive: the bins replace kernel and stride */
    at.kernel[0] = at.kernel[1] = at.stride[0] = at.stride[1] = at.dilation[0] = at.dilation[1] = 1;
    at.adaptive = 1;
    t = nn__op1(g, NN__OP_AVGPOOL2D, nx->dtype, out, x.id);
    if (t.id >= 0) g->nodes[t.id].a.pool = at;
    return t;
}

#define nn__plan_avgpool2d nn__plan_pool16
#define nn__grad_avgpool2d_grad nn__grad_none
#define nn__plan_avgpool2d_grad nn__plan_pool16

/* dx of x's dtype from dy (in that dtype) */
static void nn__grad_avgpool2d(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    int dy = nn__pool_gy(g, a, gy);
    if (dy < 0) return;
    t = nn__op1(g, NN__OP_AVGPOOL2D_GRAD, g->nodes[a].dtype, g->nodes[a].shape, dy);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
}

static nn_result nn__cpu_avgpool2d(nn_graph *g, nn__node *n) {
    nn__pooling p;
    const float *x;
    float *y;
    nn__pooling_of(g, n, &p);
    nn__pool16_views(g, n, &x, &y);
    nn__avg_pool2d_forward(g->ctx->threads, &p, y, x);
    nn__pool16_finish(g, n, y);
    return NN_OK;
}

static nn_result nn__cpu_avgpool2d_grad(nn_graph *g, nn__node *n) {
    nn__pooling p;
    const float *dy;
    float *dx;
    nn__pooling_of(g, n, &p);
    nn__pool16_views(g, n, &dy, &dx);
    nn__avg_pool2d_backward(g->ctx->threads, &p, dx, dy);
    nn__pool16_finish(g, n, dx);
    return NN_OK;
}

static nn_result nn__launch_avgpool2d(nn_graph *g, int id) {
    NN__POOL_KLAUNCH(avg_pool2d_forward, "avg_pool2d_forward", NULL);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.exclude_pad = p.exclude_pad;
    k.adaptive = p.adaptive;
    return nn__kargs_avg_pool2d_forward(l, &k);
}

static nn_result nn__launch_avgpool2d_grad(nn_graph *g, int id) {
    NN__POOL_KLAUNCH(avg_pool2d_backward, "avg_pool2d_backward", NULL);
    k.dy = &g->nodes[n->in[0]].buf;
    k.dx = &n->buf;
    k.exclude_pad = p.exclude_pad;
    k.adaptive = p.adaptive;
    return nn__kargs_avg_pool2d_backward(l, &k);
}
