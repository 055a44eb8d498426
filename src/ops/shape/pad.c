/* The shape family's ops on the last two dims as planes, one block each: builder (shape
   rule), registry aliases, autograd rule, CPU body (its loop in src/cpu/shape.c) and
   kernel launch (kernels/shape.cl). pad2d and upsample2d; x [..., H, W] is P = numel /
   (H*W) planes. */
#include "../../base/internal.h"
#include "../../base/registry.h"

/* ==== pad2d: y [..., top + H + bottom, left + W + right] = x [..., H, W] padded with
   zeros or by reflection (torch.nn.functional.pad on the last two dims, "constant" 0 or
   "reflect"). PAD2D_GRAD: dx [..., H, W] sums dy over the outputs that read each pixel
   (at most three per dim under reflection); its input dy. ==== */

NN_API nn_tensor nn_pad2d(nn_graph *g, nn_tensor x, int left, int right, int top, int bottom, nn_pad_mode mode) {
    nn_shape s;
    nn_tensor t;
    int nd;
    if (!nn__check(g, "nn_pad2d", 1, &x) || !nn__expect_f32(g, "nn_pad2d", x, "x")) return nn__tensor(-1);
    if (mode != NN_PAD_ZEROS && mode != NN_PAD_REFLECT)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_pad2d: mode %d is not one of nn_pad_mode", (int)mode);
    s = nn__n(g, x)->shape;
    nd = s.ndim;
    if (nd < 2 || top < 0 || bottom < 0 || left < 0 || right < 0 ||
        (mode == NN_PAD_REFLECT && (top >= s.dim[nd - 2] || bottom >= s.dim[nd - 2] || left >= s.dim[nd - 1] ||
                                    right >= s.dim[nd - 1]))) {
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_pad2d: pads (left %d, right %d, top %d, bottom %d) do not fit x %s%s", left,
                           right, top, bottom, sx,
                           mode == NN_PAD_REFLECT ? " (reflection needs each pad below its dim)" : "");
    }
    s.dim[nd - 2] += (int64_t)top + bottom; /* in 64 bits: two int pads can overflow an int */
    s.dim[nd - 1] += (int64_t)left + right;
    t = nn__op1(g, NN__OP_PAD2D, NN_F32, s, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.shape.top = top;
        g->nodes[t.id].a.shape.left = left;
        g->nodes[t.id].a.shape.reflect = mode == NN_PAD_REFLECT;
    }
    return t;
}

#define nn__plan_pad2d nn__no_plan
#define nn__grad_pad2d_grad nn__grad_none
#define nn__plan_pad2d_grad nn__no_plan

static void nn__grad_pad2d(nn_graph *g, int id) { nn__grad_by_op(g, id, NN__OP_PAD2D_GRAD); }

/* x [..., H, W] padded to y [..., OH, OW]: P planes */
static nn_result nn__cpu_pad2d(nn_graph *g, nn__node *n) {
    const nn_shape *xs = &g->nodes[n->in[0]].shape, *ys = &n->shape;
    int nd = xs->ndim;
    int64_t H = xs->dim[nd - 2], W = xs->dim[nd - 1], P = nn__numel(xs) / (H * W);
    nn__pad2d_forward(n->buf.host, NN__F(n->in[0]), P, H, W, ys->dim[nd - 2], ys->dim[nd - 1], n->a.shape.top, n->a.shape.left,
                      n->a.shape.reflect);
    return NN_OK;
}

/* dx [..., H, W] (this node) from dy [..., OH, OW] (its input) */
static nn_result nn__cpu_pad2d_grad(nn_graph *g, nn__node *n) {
    const nn_shape *xs = &n->shape, *ys = &g->nodes[n->in[0]].shape;
    int nd = xs->ndim;
    int64_t H = xs->dim[nd - 2], W = xs->dim[nd - 1], P = nn__numel(xs) / (H * W);
    nn__pad2d_backward(n->buf.host, NN__F(n->in[0]), P, H, W, ys->dim[nd - 2], ys->dim[nd - 1], n->a.shape.top, n->a.shape.left,
                       n->a.shape.reflect);
    return NN_OK;
}

/* the kernels' geo = (H, W, OH, OW, top, left, reflect, 0) of x [..., H, W] padded to
   y [..., OH, OW] */
static void nn__pad2d_geo(const nn__node *n, const nn_shape *xs, const nn_shape *ys, int *geo) {
    int nd = xs->ndim;
    memset(geo, 0, 8 * sizeof *geo);
    geo[0] = (int)xs->dim[nd - 2];
    geo[1] = (int)xs->dim[nd - 1];
    geo[2] = (int)ys->dim[nd - 2];
    geo[3] = (int)ys->dim[nd - 1];
    geo[4] = n->a.shape.top;
    geo[5] = n->a.shape.left;
    geo[6] = n->a.shape.reflect;
}

static nn_result nn__launch_pad2d(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int geo[8];
    nn__pad2d_geo(n, &g->nodes[n->in[0]].shape, &n->shape, geo);
    NN__KSTART(pad2d_forward, "shape", "pad2d_forward", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.geo = geo;
    return nn__kargs_pad2d_forward(l, &k);
}

static nn_result nn__launch_pad2d_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int geo[8];
    nn__pad2d_geo(n, &n->shape, &g->nodes[n->in[0]].shape, geo);
    NN__KSTART(pad2d_backward, "shape", "pad2d_backward", n->numel);
    k.dy = &g->nodes[n->in[0]].buf;
    k.dx = &n->buf;
    k.n = (int)n->numel;
    k.geo = geo;
    return nn__kargs_pad2d_backward(l, &k);
}

/* ==== upsample2d: y [..., H*scale_h, W*scale_w] = x [..., H, W] by nearest or bilinear
   interpolation (torch.nn.functional.interpolate, align_corners = False).
   UPSAMPLE2D_GRAD: dx [..., H, W] sums dy's terms that read each pixel, in the forward's
   order; one CPU loop serves both (its grad flag), each has a kernel. ==== */

NN_API nn_tensor nn_upsample2d(nn_graph *g, nn_tensor x, int scale_h, int scale_w, nn_upsample_mode mode) {
    nn_shape s;
    nn_tensor t;
    int nd;
    if (!nn__check(g, "nn_upsample2d", 1, &x) || !nn__expect_f32(g, "nn_upsample2d", x, "x")) return nn__tensor(-1);
    if (mode != NN_UPSAMPLE_NEAREST && mode != NN_UPSAMPLE_BILINEAR)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_upsample2d: mode %d is not one of nn_upsample_mode", (int)mode);
    s = nn__n(g, x)->shape;
    nd = s.ndim;
    if (nd < 2) {
        char sx[128];
        nn__shape_str(&s, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_upsample2d: x %s needs >= 2 dims", sx);
    }
    if (scale_h < 1 || scale_w < 1 || scale_h > 64 || scale_w > 64)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_upsample2d: scales %d, %d are not in 1 to 64", scale_h, scale_w);
    s.dim[nd - 2] *= scale_h;
    s.dim[nd - 1] *= scale_w;
    t = nn__op1(g, NN__OP_UPSAMPLE2D, NN_F32, s, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.shape.scale_h = scale_h;
        g->nodes[t.id].a.shape.scale_w = scale_w;
        g->nodes[t.id].a.shape.bilinear = mode == NN_UPSAMPLE_BILINEAR;
    }
    return t;
}

#define nn__plan_upsample2d nn__no_plan
#define nn__cpu_upsample2d_grad nn__cpu_upsample2d
#define nn__grad_upsample2d_grad nn__grad_none
#define nn__plan_upsample2d_grad nn__no_plan

static void nn__grad_upsample2d(nn_graph *g, int id) { nn__grad_by_op(g, id, NN__OP_UPSAMPLE2D_GRAD); }

static nn_result nn__cpu_upsample2d(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    const nn_shape *xs = n->op == NN__OP_UPSAMPLE2D ? &g->nodes[in[0]].shape : &n->shape;
    int nd = xs->ndim;
    int64_t H = xs->dim[nd - 2], W = xs->dim[nd - 1];
    nn__upsample2d(y, NN__F(in[0]), nn__numel(xs) / (H * W), H, W, n->a.shape.scale_h, n->a.shape.scale_w, n->a.shape.bilinear,
                   n->op == NN__OP_UPSAMPLE2D_GRAD);
    return NN_OK;
}

/* the kernels' geo = (H, W, scale_h, scale_w, bilinear, 0, 0, 0) of x [..., H, W] */
static void nn__upsample2d_geo(const nn__node *n, const nn_shape *xs, int *geo) {
    int nd = xs->ndim;
    memset(geo, 0, 8 * sizeof *geo);
    geo[0] = (int)xs->dim[nd - 2];
    geo[1] = (int)xs->dim[nd - 1];
    geo[2] = n->a.shape.scale_h;
    geo[3] = n->a.shape.scale_w;
    geo[4] = n->a.shape.bilinear;
}

static nn_result nn__launch_upsample2d(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int geo[8];
    nn__upsample2d_geo(n, &g->nodes[n->in[0]].shape, geo);
    NN__KSTART(upsample2d_forward, "shape", "upsample2d_forward", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.geo = geo;
    return nn__kargs_upsample2d_forward(l, &k);
}

static nn_result nn__launch_upsample2d_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int geo[8];
    nn__upsample2d_geo(n, &n->shape, geo);
    NN__KSTART(upsample2d_backward, "shape", "upsample2d_backward", n->numel);
    k.dy = &g->nodes[n->in[0]].buf;
    k.dx = &n->buf;
    k.n = (int)n->numel;
    k.geo = geo;
    return nn__kargs_upsample2d_backward(l, &k);
}
