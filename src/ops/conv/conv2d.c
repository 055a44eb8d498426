/* The 2-D convolutions: conv2d (and conv1d, a conv2d of height 1), its input gradient
   (also nn_conv_transpose2d's forward) and its weight gradient. The CPU loops are in
   src/cpu/conv.c (im2col + GEMM) and src/cpu/conv_dw.c (direct, depthwise); the kernels in
   kernels/conv.cl (direct, and the im2col/pack passes around kernels/gemm.cl's GEMM). */
#include "../../base/internal.h"
#include "../../base/registry.h"

/* ==== helpers of the conv family's builders (conv3d.c uses them too) ==== */

/* Strides, dilations and groups >= 1 and pads >= 0, over dims spatial dims. */
static int nn__conv_attr_ok(const nn__conv_attr *at, int dims) {
    int k, ok = at->groups >= 1;
    for (k = 0; k < dims; k++) ok = ok && at->stride[k] >= 1 && at->dilation[k] >= 1 && at->pad[k] >= 0;
    return ok;
}

/* A bias operand given with no_bias set: the desc and the call disagree. */
static int nn__no_bias_conflict(nn_graph *g, const char *op, int no_bias, nn_tensor bias) {
    if (!no_bias || bias.id == 0) return 0;
    nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: a bias operand with no_bias set in the desc", op);
    return 1;
}

/* ==== conv2d: y [N, K, OH, OW] = x [N, C, H, W] conv w [K, C/G, KH, KW] (+ bias [K]),
   torch.nn.functional.conv2d; conv1d is conv2d on [N, C, 1, L]. Its gradients stand here:
   CONV2D_DX, dx [N, C, H, W] from (w, dy) (nn_conv_transpose2d builds it as a forward op),
   and CONV2D_DW, dw [K, C/G, KH, KW] from (x, dy). All three share one geometry (the
   forward's, nn__conv2d in src/cpu/conv.c) and one plan: direct loops or im2col + GEMM ==== */

/* A conv2d node's attributes (h, w), with the desc's defaults. */
static void nn__conv2d_attrs(const nn_conv2d_desc *d, nn__conv_attr *at) {
    memset(at, 0, sizeof *at);
    at->stride[0] = nn__defi(d->stride_h, 1);
    at->stride[1] = nn__defi(d->stride_w, 1);
    at->pad[0] = nn__defi(d->pad_h, 0);
    at->pad[1] = nn__defi(d->pad_w, 0);
    at->dilation[0] = nn__defi(d->dilation_h, 1);
    at->dilation[1] = nn__defi(d->dilation_w, 1);
    at->groups = nn__defi(d->groups, 1);
}

/* The 8 ints of a conv2d kernel's geometry: stride h/w, pad h/w, dilation h/w, groups. */
static void nn__conv2d_geo(const nn__conv_attr *at, int geo[8]) {
    geo[0] = at->stride[0];
    geo[1] = at->stride[1];
    geo[2] = at->pad[0];
    geo[3] = at->pad[1];
    geo[4] = at->dilation[0];
    geo[5] = at->dilation[1];
    geo[6] = at->groups;
    geo[7] = 0;
}

/* A conv2d on bf16/f16 storage (x and w of one 16-bit dtype, no bias): the output and the
   gradients in that dtype, every sum in float32 (src/cpu/conv16.c; kernels/conv.cl's
   direct kernels in a 16-bit build). Under the precision policy (nn_graph_desc.precision)
   a conv2d converts float32 x and w and runs in 16 bits, as torch.autocast runs conv2d in
   bf16; its output stays 16-bit, a bias converted and added in 16 bits as well. */
static nn_tensor nn__conv2d_build(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv2d_desc *desc);

NN_API nn_tensor nn_conv2d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv2d_desc *desc) {
    nn_tensor in[2], y;
    nn_dtype dt;
    in[0] = x;
    in[1] = w;
    if (!nn__check(g, "nn_conv2d", 2, in)) return nn__tensor(-1);
    dt = nn__policy_dtype(g);
    if (dt == NN_F32 || (nn__n(g, x)->dtype != NN_F32 && nn__n(g, x)->dtype != dt) ||
        (nn__n(g, w)->dtype != NN_F32 && nn__n(g, w)->dtype != dt) || nn__optional(g, "nn_conv2d", bias) < 0 ||
        (desc && nn__no_bias_conflict(g, "nn_conv2d", desc->no_bias, bias)))
        return nn__conv2d_build(g, x, w, bias, desc);
    /* the policy: float32 operands converted (parameters stay float32: master weights), the
       conv made and kept in 16 bits; a float32 [K] bias converted too and added there (F.conv2d
       under autocast: [K, 1, 1] broadcast over y, its float32 gradient summed from 16 bits,
       src/ops/elementwise/binary.c); another bias goes to nn__channel_bias for its error */
    if (nn__n(g, x)->dtype == NN_F32) x = nn_to_dtype(g, x, dt);
    if (nn__n(g, w)->dtype == NN_F32) w = nn_to_dtype(g, w, dt);
    if (x.id < 0 || w.id < 0) return nn__tensor(-1);
    y = nn__conv2d_build(g, x, w, nn__tensor(0), desc);
    if (bias.id == 0 || y.id < 0) return y;
    if (nn__n(g, bias)->dtype != NN_F32 || nn__n(g, bias)->shape.ndim != 1 ||
        nn__n(g, bias)->shape.dim[0] != nn__n(g, y)->shape.dim[1])
        return nn__channel_bias(g, "nn_conv2d", y, bias);
    return nn_add(g, y, nn_to_dtype(g, nn_reshape(g, bias, nn_shape3(nn__n(g, bias)->shape.dim[0], 1, 1)), dt));
}

static nn_tensor nn__conv2d_build(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv2d_desc *desc) {
    nn_tensor in[3], t;
    nn__node *nx, *nw;
    nn_conv2d_desc d;
    int64_t OH, OW;
    nn__conv_attr at;
    int has_bias = nn__optional(g, "nn_conv2d", bias);
    char sx[128], sw[128];
    in[0] = x;
    in[1] = w;
    if (has_bias < 0 || !nn__check(g, "nn_conv2d", 2, in)) return nn__tensor(-1);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (nn__no_bias_conflict(g, "nn_conv2d", d.no_bias, bias)) return nn__tensor(-1);
    nn__conv2d_attrs(&d, &at);
    nx = nn__n(g, x);
    nw = nn__n(g, w);
    nn__shape_str(&nx->shape, sx, sizeof sx);
    nn__shape_str(&nw->shape, sw, sizeof sw);
    if (nx->dtype != nw->dtype || (nx->dtype != NN_F32 && !nn__dtype_half(nx->dtype)))
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d: x %s is %s and w %s is %s: they must be float32, or both bfloat16 "
                           "or both float16 (convert one with nn_to_dtype)", sx, nn__dtype_name(nx->dtype), sw,
                           nn__dtype_name(nw->dtype));
    if (nx->dtype != NN_F32 && has_bias)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv2d: a bias with %s x %s: add it to the float32 result "
                           "(nn_to_dtype), or use nn_graph_desc.precision", nn__dtype_name(nx->dtype), sx);
    if (!nn__conv_attr_ok(&at, 2))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                           "nn_conv2d: stride (%d, %d), dilation (%d, %d) and groups %d must be >= 1 and padding (%d, %d) >= 0",
                           at.stride[0], at.stride[1], at.dilation[0], at.dilation[1], at.groups, at.pad[0], at.pad[1]);
    if (nx->shape.ndim != 4 || nw->shape.ndim != 4)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d: x %s must be [N, C, H, W] and w %s [K, C/groups, KH, KW]", sx, sw);
    if (nx->shape.dim[2] + 2 * (int64_t)at.pad[0] > INT32_MAX || nx->shape.dim[3] + 2 * (int64_t)at.pad[1] > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d: x %s padded by (%d, %d) is beyond 32-bit indices", sx, at.pad[0], at.pad[1]);
    if (nx->shape.dim[1] % at.groups || nw->shape.dim[0] % at.groups || nw->shape.dim[1] * at.groups != nx->shape.dim[1])
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d: x %s and w %s do not fit groups = %d", sx, sw, at.groups);
    OH = (nx->shape.dim[2] + 2 * (int64_t)at.pad[0] - at.dilation[0] * (nw->shape.dim[2] - 1) - 1) / at.stride[0] + 1;
    OW = (nx->shape.dim[3] + 2 * (int64_t)at.pad[1] - at.dilation[1] * (nw->shape.dim[3] - 1) - 1) / at.stride[1] + 1;
    if (nx->shape.dim[2] + 2 * (int64_t)at.pad[0] < at.dilation[0] * (nw->shape.dim[2] - 1) + 1 ||
        nx->shape.dim[3] + 2 * (int64_t)at.pad[1] < at.dilation[1] * (nw->shape.dim[3] - 1) + 1)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d: the kernel w %s is larger than the padded input x %s", sw, sx);
    if (has_bias) {
        nn__node *nb = nn__n(g, bias);
        if (nb->dtype != NN_F32 || nb->shape.ndim != 1 || nb->shape.dim[0] != nw->shape.dim[0]) {
            char sb[128];
            nn__shape_str(&nb->shape, sb, sizeof sb);
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d: bias %s must be [%lld] float32", sb, (long long)nw->shape.dim[0]);
        }
    }
    t = has_bias ? nn__op3(g, NN__OP_CONV2D, NN_F32, nn_shape4(nx->shape.dim[0], nw->shape.dim[0], OH, OW), x.id, w.id, bias.id)
                 : nn__op2(g, NN__OP_CONV2D, nx->dtype, nn_shape4(nx->shape.dim[0], nw->shape.dim[0], OH, OW), x.id, w.id);
    if (t.id >= 0) g->nodes[t.id].a.conv = at;
    return t;
}

NN_API nn_tensor nn_conv2d_layer(nn_graph *g, nn_tensor x, int64_t out_channels, int kh, int kw,
                                 const nn_conv2d_desc *desc, const char *name) {
    char wn[256], bn[256];
    nn_init init;
    int64_t cin, groups = desc ? nn__defi(desc->groups, 1) : 1;
    if (!nn__check(g, "nn_conv2d_layer", 1, &x)) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv2d_layer: needs a name (at most 200 chars)");
    if (nn__n(g, x)->shape.ndim != 4 || kh < 1 || kw < 1 || out_channels < 1 || groups < 1 ||
        nn__n(g, x)->shape.dim[1] % groups) {
        char sx[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv2d_layer %s: x %s must be [N, C, H, W] with C divisible by groups, "
                           "kernel %dx%d", name, sx, kh, kw);
    }
    cin = nn__n(g, x)->shape.dim[1] / groups;
    init.kind = NN_INIT_UNIFORM; /* kaiming_uniform(a=sqrt(5)) is U(+-1/sqrt(fan_in)); so is the bias */
    init.a = (float)(-1.0 / sqrt((double)(cin * kh * kw)));
    init.b = -init.a;
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    { /* weight, then bias, in two statements: the order of a call's arguments is unspecified,
         and it numbers the parameters, which seeds their initial values */
        nn_tensor w = nn_param(g, wn, nn_shape4(out_channels, cin, kh, kw), init);
        nn_tensor b = desc && desc->no_bias ? nn__tensor(0) : nn_param(g, bn, nn_shape1(out_channels), init);
        return nn_conv2d(g, x, w, b, desc);
    }
}

/* conv1d is conv2d on [N, C, 1, L] with the H fields at their identities. */
static nn_conv2d_desc nn__conv1d_as_2d(const nn_conv1d_desc *desc) {
    nn_conv2d_desc d;
    memset(&d, 0, sizeof d);
    if (!desc) return d;
    d.stride_w = desc->stride;
    d.pad_w = desc->pad;
    d.dilation_w = desc->dilation;
    d.groups = desc->groups;
    d.no_bias = desc->no_bias;
    return d;
}

NN_API nn_tensor nn_conv1d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv1d_desc *desc) {
    nn_conv2d_desc d = nn__conv1d_as_2d(desc);
    nn_shape xs, ws;
    nn_tensor in[2], y;
    char a[128], b[128];
    int st = nn__defi(d.stride_w, 1), pad = nn__defi(d.pad_w, 0), dil = nn__defi(d.dilation_w, 1), groups = nn__defi(d.groups, 1);
    in[0] = x;
    in[1] = w;
    if (!nn__check(g, "nn_conv1d", 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_conv1d", x, "x") || !nn__expect_f32(g, "nn_conv1d", w, "w")) return nn__tensor(-1);
    xs = nn__n(g, x)->shape;
    ws = nn__n(g, w)->shape;
    nn__shape_str(&xs, a, sizeof a);
    nn__shape_str(&ws, b, sizeof b);
    if (xs.ndim != 3 || ws.ndim != 3)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv1d: x %s must be [N, C, L] and w %s [K, C/groups, KL]", a, b);
    /* what nn_conv2d would refuse, in conv1d's terms */
    if (st < 1 || dil < 1 || groups < 1 || pad < 0)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv1d: stride %d, dilation %d and groups %d must be >= 1 and padding %d >= 0",
                           st, dil, groups, pad);
    if (xs.dim[1] % groups || ws.dim[0] % groups || ws.dim[1] * groups != xs.dim[1])
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv1d: x %s and w %s do not fit groups = %d", a, b, groups);
    if (xs.dim[2] + 2 * (int64_t)pad < (int64_t)dil * (ws.dim[2] - 1) + 1)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv1d: the kernel w %s is larger than the padded input x %s", b, a);
    y = nn_conv2d(g, nn_reshape(g, x, nn_shape4(xs.dim[0], xs.dim[1], 1, xs.dim[2])),
                  nn_reshape(g, w, nn_shape4(ws.dim[0], ws.dim[1], 1, ws.dim[2])), bias, &d);
    if (y.id < 0) return y;
    return nn_reshape(g, y, nn_shape3(nn__n(g, y)->shape.dim[0], nn__n(g, y)->shape.dim[1], nn__n(g, y)->shape.dim[3]));
}

/* nn.Conv1d: NAME.weight [out_channels, C/groups, kernel] and NAME.bias [out_channels]. */
NN_API nn_tensor nn_conv1d_layer(nn_graph *g, nn_tensor x, int64_t out_channels, int kernel, const nn_conv1d_desc *desc,
                                 const char *name) {
    char wn[256], bn[256], sx[128];
    nn_init init;
    int64_t cin, groups = desc ? nn__defi(desc->groups, 1) : 1;
    if (!nn__check(g, "nn_conv1d_layer", 1, &x)) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv1d_layer: needs a name (at most 200 chars)");
    nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
    if (nn__n(g, x)->shape.ndim != 3 || kernel < 1 || out_channels < 1 || groups < 1 || nn__n(g, x)->shape.dim[1] % groups)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv1d_layer %s: x %s must be [N, C, L] with C divisible by groups, kernel %d",
                           name, sx, kernel);
    cin = nn__n(g, x)->shape.dim[1] / groups;
    init.kind = NN_INIT_UNIFORM; /* as nn.Conv1d: U(+-1/sqrt(fan_in)), the bias too */
    init.a = (float)(-1.0 / sqrt((double)(cin * kernel)));
    init.b = -init.a;
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    { /* weight, then bias (see nn_conv2d_layer) */
        nn_tensor w = nn_param(g, wn, nn_shape3(out_channels, cin, kernel), init);
        nn_tensor b = desc && desc->no_bias ? nn__tensor(0) : nn_param(g, bn, nn_shape1(out_channels), init);
        return nn_conv1d(g, x, w, b, desc);
    }
}

NN_API nn_tensor nn_conv_transpose2d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv_transpose2d_desc *desc) {
    nn_tensor in[2], t;
    nn_conv2d_desc d;
    int output_pad_h = desc ? desc->output_pad_h : 0, output_pad_w = desc ? desc->output_pad_w : 0;
    nn_shape xs, ws;
    nn__conv_attr at;
    int64_t OH, OW;
    char a[128], b[128];
    in[0] = x;
    in[1] = w;
    if (!nn__check(g, "nn_conv_transpose2d", 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_conv_transpose2d", x, "x") || !nn__expect_f32(g, "nn_conv_transpose2d", w, "w"))
        return nn__tensor(-1);
    memset(&d, 0, sizeof d);
    if (desc) { /* the conv2d whose input gradient this is */
        d.stride_h = desc->stride_h;
        d.stride_w = desc->stride_w;
        d.pad_h = desc->pad_h;
        d.pad_w = desc->pad_w;
        d.dilation_h = desc->dilation_h;
        d.dilation_w = desc->dilation_w;
        d.groups = desc->groups;
        d.no_bias = desc->no_bias;
    }
    if (nn__no_bias_conflict(g, "nn_conv_transpose2d", d.no_bias, bias)) return nn__tensor(-1);
    nn__conv2d_attrs(&d, &at);
    xs = nn__n(g, x)->shape;
    ws = nn__n(g, w)->shape;
    nn__shape_str(&xs, a, sizeof a);
    nn__shape_str(&ws, b, sizeof b);
    if (!nn__conv_attr_ok(&at, 2))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                           "nn_conv_transpose2d: stride (%d, %d), dilation (%d, %d) and groups %d must be >= 1 and padding (%d, %d) >= 0",
                           at.stride[0], at.stride[1], at.dilation[0], at.dilation[1], at.groups, at.pad[0], at.pad[1]);
    if (xs.ndim != 4 || ws.ndim != 4 || xs.dim[1] != ws.dim[0] || ws.dim[0] % at.groups)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv_transpose2d: x %s must be [N, Cin, H, W] and w %s [Cin, Cout/groups, KH, KW] (groups %d)",
                           a, b, at.groups);
    if (output_pad_h < 0 || output_pad_w < 0 || (output_pad_h >= at.stride[0] && output_pad_h >= at.dilation[0]) ||
        (output_pad_w >= at.stride[1] && output_pad_w >= at.dilation[1]))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_conv_transpose2d: output padding (%d, %d) must be below the stride or the dilation",
                           output_pad_h, output_pad_w);
    OH = (xs.dim[2] - 1) * at.stride[0] - 2 * (int64_t)at.pad[0] + at.dilation[0] * (ws.dim[2] - 1) + output_pad_h + 1;
    OW = (xs.dim[3] - 1) * at.stride[1] - 2 * (int64_t)at.pad[1] + at.dilation[1] * (ws.dim[3] - 1) + output_pad_w + 1;
    if (OH < 1 || OW < 1) return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv_transpose2d: x %s with w %s gives an empty output", a, b);
    if (OH + 2 * (int64_t)at.pad[0] > INT32_MAX || OW + 2 * (int64_t)at.pad[1] > INT32_MAX) /* the padded output, as conv2d's input */
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_conv_transpose2d: x %s with padding (%d, %d) is beyond 32-bit indices", a, at.pad[0],
                           at.pad[1]);
    /* conv2d's input gradient with w [K = Cin, C/G = Cout/G, KH, KW] and dy = x */
    t = nn__op2(g, NN__OP_CONV2D_DX, NN_F32, nn_shape4(xs.dim[0], ws.dim[1] * at.groups, OH, OW), w.id, x.id);
    if (t.id >= 0) g->nodes[t.id].a.conv = at;
    return bias.id != 0 ? nn__channel_bias(g, "nn_conv_transpose2d", t, bias) : t;
}

#define nn__grad_conv2d_dw nn__grad_none
#define nn__plan_conv2d_dx nn__plan_conv2d
#define nn__plan_conv2d_dw nn__plan_conv2d

static void nn__grad_conv2d(nn_graph *g, int id) { nn__grad_conv(g, id, NN__OP_CONV2D_DX, NN__OP_CONV2D_DW); }

/* nn_conv_transpose2d's rule: CONV2D_DX as a forward op of (w, x) */
static void nn__grad_conv2d_dx(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    /* as a transposed convolution: inputs (w, x) */
    if (gb) { /* d/dx: the forward convolution of gy */
        t = nn__op2(g, NN__OP_CONV2D, NN_F32, g->nodes[b].shape, gy.id, a);
        if (t.id >= 0) g->nodes[t.id].a = n.a;
        nn__acc_grad(g, b, t);
    }
    if (ga) { /* d/dw: conv2d's weight gradient with gy as the input and x as dy */
        t = nn__op2(g, NN__OP_CONV2D_DW, NN_F32, g->nodes[a].shape, gy.id, b);
        if (t.id >= 0) g->nodes[t.id].a = n.a;
        nn__acc_grad(g, a, t);
    }
    return;
}

/* A device's algorithm for a convolution, chosen at compile time (nn__plan_conv2d). */
typedef struct nn__conv_plan {
    int algo;        /* NN__CONV_GEMM, NN__CONV_IMPLICIT or NN__CONV_DIRECT */
    int ld;          /* columns of the column matrices: P = N*OH*OW, padded for the K slices */
    int split;       /* K slices of the weight gradient's product (1: none) */
    int64_t scratch; /* floats */
} nn__conv_plan;

/* CPU devices run an ungrouped stride-1 convolution's forward and input gradient as an
   implicit GEMM (kernels/conv.cl's conv2d_implicit: no column matrix, no unpack or col2im
   pass). The input gradient is the forward convolution of dy with the weights flipped
   (conv2d_flip_w), padding dilation*(KH-1) - pad; t is the convolution that runs. The
   weight gradient (conv2d_dw_implicit) takes whole images an item, their planes and dy's. Its
   planes of one output row (C*(1 + dh*(KH-1))*(OW + dw*(KW-1)) floats, and what the last
   chunk reads past them) must fit the kernel's IC_L, its rows of col(x) IC_R (its build
   options: nn__ic_config, src/opencl/gemm_plan.c). */
static void nn__conv2d_implicit_geom(int op, const nn__conv2d *c, nn__conv2d *t) {
    *t = *c;
    if (op != NN__OP_CONV2D_DX) return;
    t->C = c->K, t->H = c->OH, t->W = c->OW, t->K = c->C, t->OH = c->H, t->OW = c->W;
    t->ph = c->dh * (c->KH - 1) - c->ph;
    t->pw = c->dw * (c->KW - 1) - c->pw;
}

/* the planes' floats for output rows of the band, with the tail the last chunk reads */
static int64_t nn__conv2d_implicit_floats(const nn__conv2d *t, int rows) {
    return (int64_t)t->C * (rows + t->dh * (t->KH - 1)) * (t->OW + t->dw * (t->KW - 1)) + t->dw * (t->KW - 1) + 32;
}

/* the weight gradient's local floats: whole images' planes, then dy padded alike [K, U16] */
static int64_t nn__conv2d_dw_implicit_floats(const nn__conv2d *c) {
    int64_t U = (int64_t)c->OH * (c->OW + c->dw * (c->KW - 1));
    return nn__conv2d_implicit_floats(c, c->OH) - 16 + (int64_t)c->K * ((U + 15) / 16 * 16);
}

/* the weight gradient's items (whole images each, their partial sums [K, R] in the scratch) */
static int nn__conv2d_dw_items(const nn_context *ctx, const nn__conv2d *c) {
    int most = 8 * (ctx->dev.units ? (int)ctx->dev.units : 1);
    return c->N < most ? c->N : most;
}

static int nn__conv2d_dev_implicit(const nn_context *ctx, int op, const nn__conv2d *c) {
    nn__conv2d t;
    int lf, rows;
    nn__ic_config(&ctx->dev, &lf, &rows);
    if (!lf || c->G != 1 || c->sh != 1 || c->sw != 1) return 0;
    nn__conv2d_implicit_geom(op, c, &t);
    if ((int64_t)t.C * t.KH * t.KW > rows) return 0;
    if (op == NN__OP_CONV2D_DW) return nn__conv2d_dw_implicit_floats(c) <= lf;
    return nn__conv2d_implicit_floats(&t, 1) <= lf;
}

/* Depthwise convolutions (one input channel per group) run the direct kernels: their
   products are too thin for a GEMM. Everything else is im2col + the tuned GEMM, one
   batched launch over the groups. The weight gradient reduces over all N*OH*OW columns
   into a small [K, C/G*KH*KW] result, so its product is cut into K slices (summed after,
   in a fixed order) until there are enough tiles to fill the device. Shapes whose
   working memory would not fit the device, or 32-bit indices, fall back to direct. */
static void nn__conv2d_dev_plan(const nn_context *ctx, int op, const nn__conv2d *c, nn__conv_plan *p) {
    int64_t P = (int64_t)c->N * c->OH * c->OW, Cg = c->C / c->G, Kg = c->K / c->G;
    int64_t KKg = Cg * c->KH * c->KW, rows = (int64_t)c->C * c->KH * c->KW, chunk, most;
    nn__gemm_cfg cfg;
    memset(p, 0, sizeof *p);
    p->algo = NN__CONV_DIRECT;
    p->ld = (int)P;
    p->split = 1;
    if (nn__conv2d_is_depthwise(c)) return;
    if (nn__conv2d_dev_implicit(ctx, op, c)) {
        p->algo = NN__CONV_IMPLICIT;
        p->scratch = op == NN__OP_CONV2D_DX ? ((int64_t)c->K * c->KH * c->KW + 1) * c->C : 0; /* flipped weights, flags */
        if (op == NN__OP_CONV2D_DW && nn__conv2d_dw_items(ctx, c) > 1) /* the items' partial sums */
            p->scratch = (int64_t)nn__conv2d_dw_items(ctx, c) * c->K * c->C * c->KH * c->KW;
        return;
    }
    if (op == NN__OP_CONV2D_DW) {
        int64_t tile_n, tile_m, tiles, target;
        nn__gemm_config(&ctx->dev, &cfg);
        tile_n = (int64_t)cfg.wpt_n * cfg.wg_n;
        tile_m = (int64_t)cfg.wpt_m * (cfg.use_local == 2 ? 4 : cfg.wg_m);
        tiles = (Kg + tile_m - 1) / tile_m * ((KKg + tile_n - 1) / tile_n) * c->G;
        target = ctx->dev.cpu_tuned ? NN__GEMM_CPU_ITEMS : 4 * (int64_t)(ctx->dev.units ? ctx->dev.units : 16);
        p->split = (int)((target + tiles - 1) / tiles);
        /* slices of at most 1024 columns too: one float accumulator over tens of thousands
           of products loses the small terms to rounding (the partial sums are exact enough) */
        if (p->split < (P + 1023) / 1024) p->split = (int)((P + 1023) / 1024);
        most = P / 256; /* slices of at least 256 columns */
        if (p->split > most) p->split = (int)(most > 1 ? most : 1);
        if (p->split > 256) p->split = 256;
        if (p->split > 1 && (int64_t)p->split * Kg > P) p->split = (int)(P / Kg > 1 ? P / Kg : 1); /* partials <= columns */
        chunk = (P + p->split - 1) / p->split;
        chunk = (chunk + 3) / 4 * 4;
        p->split = (int)((P + chunk - 1) / chunk);
        p->ld = (int)(chunk * p->split);
        p->scratch = (rows + c->K) * p->ld + (p->split > 1 ? (int64_t)p->split * c->K * KKg : 0);
    } else
        p->scratch = (rows + c->K) * P;
    if (p->scratch >= (int64_t)1 << 31 || (uint64_t)p->scratch * 4 > (uint64_t)ctx->dev.max_alloc / 2) {
        p->split = 1;
        p->ld = (int)P;
        p->scratch = 0;
        return;
    }
    p->algo = NN__CONV_GEMM;
}

/* The forward geometry of a conv2d node or of one of its gradients. */
static void nn__conv2d_node_geom(const nn_graph *g, const nn__node *n, nn__conv2d *c) {
    if (n->op == NN__OP_CONV2D) nn__conv2d_geom(c, &g->nodes[n->in[0]].shape, &g->nodes[n->in[1]].shape, &n->a.conv);
    else if (n->op == NN__OP_CONV2D_DX) nn__conv2d_geom(c, &n->shape, &g->nodes[n->in[0]].shape, &n->a.conv);
    else nn__conv2d_geom(c, &g->nodes[n->in[0]].shape, &n->shape, &n->a.conv);
}

/* conv2d and its gradients: where the CPU bodies run (host memory), direct loops for
   depthwise convolutions, else im2col + GEMM; devices choose by nn__conv2d_dev_plan. */
static void nn__plan_conv2d(nn_graph *g, nn__node *n) {
    nn__conv2d c;
    int which;
    nn__conv2d_node_geom(g, n, &c);
    if (!g->ctx->backend->host_memory) {
        nn__conv_plan p;
        nn__conv2d_dev_plan(g->ctx, n->op, &c, &p);
        if (nn__dtype_half(n->dtype)) p.algo = NN__CONV_DIRECT, p.scratch = 0; /* the 16-bit build of the direct kernels */
        n->algo = p.algo;
        n->scratch = p.scratch;
        return;
    }
    which = n->op == NN__OP_CONV2D ? 0 : n->op == NN__OP_CONV2D_DX ? 1 : 2;
    n->algo = nn__conv2d_is_depthwise(&c) ? NN__CONV_DIRECT : nn__conv_cpu_algo(&c, which); /* direct: no scratch */
    if (n->algo == NN__CONV_DIRECT) n->scratch = 0;
    else if (n->algo == NN__CONV_WINOGRAD) n->scratch = nn__wino_scratch(&c, which, nn__threadpool_size(g->ctx->threads));
    else if (n->algo == NN__CONV_GEMM) n->scratch = nn__conv2d_scratch(&c);
    else
        n->scratch = nn__iconv_scratch(&c, which, nn__threadpool_size(g->ctx->threads));
    if (nn__dtype_half(n->dtype)) /* the operands widened and the float32 output after it */
        n->scratch += nn__conv16_extra(g->nodes[n->in[0]].numel, g->nodes[n->in[1]].numel, n->numel);
}

/* The float32 bodies on the data of a node's operands: a and b are its inputs' data
   ((x, w) for CONV2D, (w, dy) for CONV2D_DX, (x, dy) for CONV2D_DW), y its output. Direct
   loops (src/cpu/conv_dw.c) when planned, no scratch; else Winograd, the implicit GEMM or
   im2col + GEMM. */
static void nn__conv2d_cpu_run(nn_graph *g, const nn__node *n, float *y, const float *a, const float *b, const float *bias,
                               float *scratch) {
    nn__threadpool *pool = g->ctx->threads;
    int nt = nn__threadpool_size(pool);
    nn__conv2d c;
    nn__conv2d_node_geom(g, n, &c);
    if (n->op == NN__OP_CONV2D) {
        if (n->algo == NN__CONV_DIRECT) nn__dwconv2d_forward(pool, &c, y, a, b, bias);
        else if (n->algo == NN__CONV_WINOGRAD && nn__wino_run(pool, &c, 0, nt, y, a, b, bias, scratch))
            ; /* else (an output not finite) the implicit GEMM below gives PyTorch's infinities and NaNs */
        else if (n->algo == NN__CONV_IMPLICIT || n->algo == NN__CONV_WINOGRAD) nn__iconv_forward(pool, &c, nt, y, a, b, bias, scratch);
        else nn__conv2d_forward(pool, &c, y, a, b, bias, scratch);
    } else if (n->op == NN__OP_CONV2D_DX) { /* a = w, b = dy */
        if (n->algo == NN__CONV_DIRECT) nn__dwconv2d_backward_data(pool, &c, y, a, b);
        else if (n->algo == NN__CONV_WINOGRAD && nn__wino_run(pool, &c, 1, nt, y, b, a, NULL, scratch))
            ; /* as the forward */
        else if (n->algo == NN__CONV_IMPLICIT || n->algo == NN__CONV_WINOGRAD) nn__iconv_backward_data(pool, &c, nt, y, a, b, scratch);
        else nn__conv2d_backward_data(pool, &c, y, a, b, scratch);
    } else { /* a = x, b = dy */
        if (n->algo == NN__CONV_DIRECT) nn__dwconv2d_backward_weight(pool, &c, y, a, b);
        else if (n->algo == NN__CONV_IMPLICIT) nn__iconv_backward_weight(pool, &c, nt, y, a, b, scratch);
        else nn__conv2d_backward_weight(pool, &c, y, a, b, scratch);
    }
}

/* A node's float32 body, or its 16-bit one (nn__conv16_cpu, src/cpu/conv16.c): the
   operands widened into the scratch after the float32 path's, that path run there, the
   output rounded once into storage. */
static nn_result nn__conv2d_cpu(nn_graph *g, nn__node *n) {
    const float *bias = n->op == NN__OP_CONV2D && n->n_in > 2 ? NN__F(n->in[2]) : NULL;
    nn__node *na = &g->nodes[n->in[0]], *nb = &g->nodes[n->in[1]];
    if (nn__dtype_half(n->dtype)) {
        float *s = n->scratch_buf.host, *fa, *fb, *fy;
        nn__conv16_cpu_layout(s, n->scratch - nn__conv16_extra(na->numel, nb->numel, n->numel), na->numel, nb->numel, &fa,
                              &fb, &fy);
        nn__cast(g->ctx->threads, na->buf.host, na->dtype, fa, NN_F32, na->numel);
        nn__cast(g->ctx->threads, nb->buf.host, nb->dtype, fb, NN_F32, nb->numel);
        nn__conv2d_cpu_run(g, n, fy, fa, fb, bias, s);
        nn__cast(g->ctx->threads, fy, NN_F32, n->buf.host, n->dtype, n->numel);
        return NN_OK;
    }
    nn__conv2d_cpu_run(g, n, n->buf.host, na->buf.host, nb->buf.host, bias, n->scratch_buf.host);
    return NN_OK;
}

static nn_result nn__cpu_conv2d(nn_graph *g, nn__node *n) { return nn__conv2d_cpu(g, n); }
static nn_result nn__cpu_conv2d_dx(nn_graph *g, nn__node *n) { return nn__conv2d_cpu(g, n); }
static nn_result nn__cpu_conv2d_dw(nn_graph *g, nn__node *n) { return nn__conv2d_cpu(g, n); }

/* The GEMM path (NN__CONV_GEMM): im2col / pack passes of kernels/conv.cl around one
   batched GEMM over the groups (nn__launch_gemm, src/ops/matmul.c), operands at float
   offsets of the node's scratch (layouts in kernels/conv.cl). The passes' shapes: by rows
   on CPU devices, by elements elsewhere. */
typedef struct nn__conv2d_gemm {
    nn__conv_plan p;
    int rowwise;
    int Kg, KKg, rows; /* K/G; the group's column rows C/G*KH*KW; all of them, C*KH*KW */
    int P, S;          /* columns N*OH*OW; OH*OW */
} nn__conv2d_gemm;

static void nn__conv2d_gemm_make(const nn_context *ctx, int op, const nn__conv2d *c, nn__conv2d_gemm *q) {
    q->rowwise = ctx->dev.cpu_tuned;
    q->Kg = c->K / c->G;
    q->KKg = c->C / c->G * c->KH * c->KW;
    q->rows = c->C * c->KH * c->KW;
    q->P = c->N * c->OH * c->OW;
    q->S = c->OH * c->OW;
    nn__conv2d_dev_plan(ctx, op, c, &q->p);
}

/* col [C*KH*KW, ld] at scratch offset off = im2col(x) */
static nn_result nn__launch_conv2d_im2col(nn_graph *g, int id, const nn__conv2d *c, const nn__conv2d_gemm *q,
                                          const nn__buf *x, int off) {
    nn__node *n = &g->nodes[id];
    nn__launch *l = NULL;
    nn__k_conv2d_im2col k;
    int geo[8];
    size_t items = q->rowwise ? (size_t)q->rows * (c->N + 1) : (size_t)q->rows * q->p.ld;
    nn_result r = nn__launch_kernel(g, id, "conv", q->rowwise ? "conv2d_im2col_rows" : "conv2d_im2col_elems", items, &l);
    if (r != NN_OK) return r;
    if (q->rowwise) { /* groups of one item: PoCL took the loops of a group of (row, n) items across its items */
        l->lws[0] = 1;
        l->use_lws = 1;
    }
    nn__conv2d_geo(&n->a.conv, geo);
    memset(&k, 0, sizeof k);
    k.x = x;
    k.col = &n->scratch_buf;
    k.off = off;
    k.N = c->N;
    k.C = c->C;
    k.H = c->H;
    k.W = c->W;
    k.KH = c->KH;
    k.KW = c->KW;
    k.OH = c->OH;
    k.OW = c->OW;
    k.geo = geo;
    k.ld = q->p.ld;
    return nn__kargs_conv2d_im2col(l, &k);
}

/* dyg [K, ld] at scratch offset off = dy [N, K, OH*OW] by rows, zero-padded */
static nn_result nn__launch_conv2d_pack(nn_graph *g, int id, const nn__conv2d *c, const nn__conv2d_gemm *q,
                                        const nn__buf *dy, int off) {
    nn__launch *l = NULL;
    nn__k_conv2d_pack k;
    size_t items = q->rowwise ? (size_t)c->K * (c->N + 1) : (size_t)c->K * q->p.ld;
    nn_result r = nn__launch_kernel(g, id, "conv", q->rowwise ? "conv2d_pack_rows" : "conv2d_pack_elems", items, &l);
    if (r != NN_OK) return r;
    memset(&k, 0, sizeof k);
    k.dy = dy;
    k.dyg = &g->nodes[id].scratch_buf;
    k.off = off;
    k.N = c->N;
    k.K = c->K;
    k.S = q->S;
    k.ld = q->p.ld;
    return nn__kargs_conv2d_pack(l, &k);
}

/* conv2d_implicit: y [N, M, OH, OW] = a [M, C*KH*KW] col(x) (+ bias [M]) for the stride-1
   geometry t (M = t->K). An item takes a band of output rows of one image, as many as fit
   its planes (the CNN example's convolutions: whole images), fewer where that leaves under
   4 items a compute unit; groups of one item (their own local memory). */
static nn_result nn__launch_conv2d_implicit(nn_graph *g, int id, const nn__conv2d *t, const nn__buf *x, const nn__buf *a,
                                            const nn__buf *bias, int has_bias, const nn__buf *y, int exact) {
    nn__launch *l = NULL;
    nn__k_conv2d_implicit k;
    int geo[8], rows = t->OH, units = g->ctx->dev.units ? (int)g->ctx->dev.units : 1, lf, most;
    nn_result r;
    nn__ic_config(&g->ctx->dev, &lf, &most);
    while (rows > 1 && nn__conv2d_implicit_floats(t, rows) > lf) rows--;
    while (rows > 1 && (int64_t)t->N * ((t->OH + rows - 1) / rows) < 4 * (int64_t)units) rows = (rows + 1) / 2;
    r = nn__launch_kernel(g, id, "conv", "conv2d_implicit", (size_t)t->N * (size_t)((t->OH + rows - 1) / rows), &l);
    if (r != NN_OK) return r;
    l->lws[0] = 1;
    l->use_lws = 1;
    geo[0] = t->sh, geo[1] = t->sw, geo[2] = t->ph, geo[3] = t->pw, geo[4] = t->dh, geo[5] = t->dw, geo[6] = 1, geo[7] = 0;
    memset(&k, 0, sizeof k);
    k.x = x;
    k.a = a;
    k.b = bias;
    k.y = y;
    k.N = t->N;
    k.C = t->C;
    k.H = t->H;
    k.W = t->W;
    k.M = t->K;
    k.KH = t->KH;
    k.KW = t->KW;
    k.OH = t->OH;
    k.OW = t->OW;
    k.geo = geo;
    k.has_bias = has_bias;
    k.rows = rows;
    k.exact = exact;
    return nn__kargs_conv2d_implicit(l, &k);
}

/* The input gradient at stride 1 as conv2d_implicit: wf = flip(w) and its rows' flags into
   the scratch (an item a row), then dx [N, C, H, W] = wf [C, K*KH*KW] col(dy), dy [N, K, OH,
   OW] padded dilation*(KH-1) - pad, rows of non-finite weights again without the padding. */
static nn_result nn__launch_conv2d_dx_implicit(nn_graph *g, int id, const nn__conv2d *c, const nn__buf *w, const nn__buf *dy) {
    nn__node *n = &g->nodes[id];
    nn__launch *l = NULL;
    nn__k_conv2d_flip_w k;
    nn__conv2d t;
    nn_result r = nn__launch_kernel(g, id, "conv", "conv2d_flip_w", (size_t)c->C, &l);
    if (r != NN_OK) return r;
    memset(&k, 0, sizeof k);
    k.w = w;
    k.wf = &n->scratch_buf;
    k.K = c->K;
    k.C = c->C;
    k.KH = c->KH;
    k.KW = c->KW;
    r = nn__kargs_conv2d_flip_w(l, &k);
    if (r != NN_OK) return r;
    nn__conv2d_implicit_geom(NN__OP_CONV2D_DX, c, &t);
    return nn__launch_conv2d_implicit(g, id, &t, dy, &n->scratch_buf, &g->one, 0, &n->buf, 1);
}

/* GEMM path: col = im2col(x); out_g = w_g col_g; y = out + bias. Direct: conv2d_forward,
   one work-item per output. */
static nn_result nn__launch_conv2d(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__node *x = &g->nodes[n->in[0]], *w = &g->nodes[n->in[1]];
    const nn__buf *bias = n->n_in > 2 ? &g->nodes[n->in[2]].buf : &g->one;
    nn__launch *l = NULL;
    nn__conv2d c;
    nn_result r;
    int geo[8];
    nn__conv2d_geom(&c, &x->shape, &w->shape, &n->a.conv);
    if (n->algo == NN__CONV_IMPLICIT)
        return nn__launch_conv2d_implicit(g, id, &c, &x->buf, &w->buf, bias, n->n_in > 2, &n->buf, 0);
    if (n->algo == NN__CONV_GEMM) {
        nn__conv2d_gemm q;
        nn__k_conv2d_unpack k;
        int wa[4], cb[4], oc[4], ld, out;
        nn__conv2d_gemm_make(g->ctx, n->op, &c, &q);
        ld = q.p.ld;
        out = q.rows * ld;
        wa[0] = q.KKg, wa[1] = 0, wa[2] = q.Kg * q.KKg, wa[3] = 0;
        cb[0] = ld, cb[1] = 0, cb[2] = q.KKg * ld, cb[3] = 0;
        oc[0] = ld, oc[1] = out, oc[2] = q.Kg * ld, oc[3] = 0;
        r = nn__launch_conv2d_im2col(g, id, &c, &q, &x->buf, 0);
        if (r == NN_OK)
            r = nn__launch_gemm(g, id, 0, 0, q.Kg, q.P, q.KKg, &w->buf, wa, &n->scratch_buf, cb, &n->scratch_buf, oc, c.G, 1);
        if (r == NN_OK)
            r = nn__launch_kernel(g, id, "conv", q.rowwise ? "conv2d_unpack_rows" : "conv2d_unpack_elems",
                                  q.rowwise ? (size_t)c.N * c.K : (size_t)n->numel, &l);
        if (r != NN_OK) return r;
        memset(&k, 0, sizeof k);
        k.out = &n->scratch_buf;
        k.b = bias;
        k.y = &n->buf;
        k.off = out;
        k.N = c.N;
        k.K = c.K;
        k.S = q.S;
        k.ld = ld;
        k.has_bias = n->n_in > 2;
        return nn__kargs_conv2d_unpack(l, &k);
    }
    r = nn__launch_kernel(g, id, "conv", "conv2d_forward", (size_t)n->numel, &l);
    if (r != NN_OK) return r;
    l->store = n->dtype; /* 16-bit: the program built with NN_STORE_BF16 / _F16 */
    {
        nn__k_conv2d_forward k;
        nn__conv2d_geo(&n->a.conv, geo);
        memset(&k, 0, sizeof k);
        k.x = &x->buf;
        k.w = &w->buf;
        k.b = bias;
        k.y = &n->buf;
        k.N = c.N;
        k.C = c.C;
        k.H = c.H;
        k.W = c.W;
        k.K = c.K;
        k.KH = c.KH;
        k.KW = c.KW;
        k.OH = c.OH;
        k.OW = c.OW;
        k.geo = geo;
        k.has_bias = n->n_in > 2;
        return nn__kargs_conv2d_forward(l, &k);
    }
}

/* GEMM path: dyg = pack(dy); dcol_g = w_g^T dyg_g; dx = col2im(dcol). Direct:
   conv2d_backward_data, one work-item per element of dx. */
static nn_result nn__launch_conv2d_dx(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__node *w = &g->nodes[n->in[0]], *dy = &g->nodes[n->in[1]];
    nn__launch *l = NULL;
    nn__conv2d c;
    nn_result r;
    int geo[8];
    nn__conv2d_geom(&c, &n->shape, &w->shape, &n->a.conv);
    nn__conv2d_geo(&n->a.conv, geo);
    if (n->algo == NN__CONV_IMPLICIT) return nn__launch_conv2d_dx_implicit(g, id, &c, &w->buf, &dy->buf);
    if (n->algo == NN__CONV_GEMM) {
        nn__conv2d_gemm q;
        nn__k_conv2d_col2im k;
        int wa[4], gb[4], dc[4], ld, dcol;
        nn__conv2d_gemm_make(g->ctx, n->op, &c, &q);
        ld = q.p.ld;
        dcol = c.K * ld;
        wa[0] = q.KKg, wa[1] = 0, wa[2] = q.Kg * q.KKg, wa[3] = 0;
        gb[0] = ld, gb[1] = 0, gb[2] = q.Kg * ld, gb[3] = 0;
        dc[0] = ld, dc[1] = dcol, dc[2] = q.KKg * ld, dc[3] = 0;
        r = nn__launch_conv2d_pack(g, id, &c, &q, &dy->buf, 0);
        if (r == NN_OK)
            r = nn__launch_gemm(g, id, 1, 0, q.KKg, q.P, q.Kg, &w->buf, wa, &n->scratch_buf, gb, &n->scratch_buf, dc, c.G, 1);
        if (r == NN_OK)
            r = nn__launch_kernel(g, id, "conv", q.rowwise ? "conv2d_col2im_planes" : "conv2d_col2im_elems",
                                  q.rowwise ? (size_t)c.N * c.C : (size_t)n->numel, &l);
        if (r != NN_OK) return r;
        memset(&k, 0, sizeof k);
        k.dcol = &n->scratch_buf;
        k.dx = &n->buf;
        k.off = dcol;
        k.N = c.N;
        k.C = c.C;
        k.H = c.H;
        k.W = c.W;
        k.KH = c.KH;
        k.KW = c.KW;
        k.OH = c.OH;
        k.OW = c.OW;
        k.geo = geo;
        k.ld = ld;
        return nn__kargs_conv2d_col2im(l, &k);
    }
    r = nn__launch_kernel(g, id, "conv", "conv2d_backward_data", (size_t)n->numel, &l);
    if (r != NN_OK) return r;
    l->store = n->dtype; /* 16-bit: the program built with NN_STORE_BF16 / _F16 */
    {
        nn__k_conv2d_backward_data k;
        memset(&k, 0, sizeof k);
        k.w = &w->buf;
        k.dy = &dy->buf;
        k.dx = &n->buf;
        k.N = c.N;
        k.C = c.C;
        k.H = c.H;
        k.W = c.W;
        k.K = c.K;
        k.KH = c.KH;
        k.KW = c.KW;
        k.OH = c.OH;
        k.OW = c.OW;
        k.geo = geo;
        return nn__kargs_conv2d_backward_data(l, &k);
    }
}

/* conv2d_dw_implicit: each item's partial dw over its images into the scratch, then
   sum_leading adds the items' partials in order (one item: straight into dw) */
static nn_result nn__launch_conv2d_dw_implicit(nn_graph *g, int id, const nn__conv2d *c, const nn__buf *x, const nn__buf *dy) {
    nn__node *n = &g->nodes[id];
    nn__launch *l = NULL;
    nn__k_conv2d_dw_implicit k;
    int geo[8], items = nn__conv2d_dw_items(g->ctx, c), per = (c->N + items - 1) / items, R = c->C * c->KH * c->KW;
    nn_result r;
    items = (c->N + per - 1) / per;
    r = nn__launch_kernel(g, id, "conv", "conv2d_dw_implicit", (size_t)items, &l);
    if (r != NN_OK) return r;
    l->lws[0] = 1;
    l->use_lws = 1;
    geo[0] = 1, geo[1] = 1, geo[2] = c->ph, geo[3] = c->pw, geo[4] = c->dh, geo[5] = c->dw, geo[6] = 1, geo[7] = 0;
    memset(&k, 0, sizeof k);
    k.x = x;
    k.dy = dy;
    k.part = items > 1 ? &n->scratch_buf : &n->buf;
    k.N = c->N;
    k.C = c->C;
    k.H = c->H;
    k.W = c->W;
    k.K = c->K;
    k.KH = c->KH;
    k.KW = c->KW;
    k.OH = c->OH;
    k.OW = c->OW;
    k.geo = geo;
    k.per = per;
    r = nn__kargs_conv2d_dw_implicit(l, &k);
    if (r == NN_OK && items > 1) {
        nn__k_sum_leading ks;
        r = nn__launch_kernel(g, id, "elementwise", "sum_leading", (size_t)c->K * R, &l);
        if (r != NN_OK) return r;
        memset(&ks, 0, sizeof ks);
        ks.x = &n->scratch_buf;
        ks.y = &n->buf;
        ks.n = items * c->K * R;
        ks.nb = c->K * R;
        ks.off = 0;
        r = nn__kargs_sum_leading(l, &ks);
    }
    return r;
}

/* GEMM path: col = im2col(x), dyg = pack(dy); dw_g = the sum over the plan's K slices of
   dyg_g col_g^T (elementwise.cl's sum_leading adds the slices in order). Direct:
   conv2d_backward_weight, one work-item per element of dw. */
static nn_result nn__launch_conv2d_dw(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__node *x = &g->nodes[n->in[0]], *dy = &g->nodes[n->in[1]];
    nn__launch *l = NULL;
    nn__conv2d c;
    nn_result r;
    int geo[8];
    nn__conv2d_geom(&c, &x->shape, &n->shape, &n->a.conv);
    if (n->algo == NN__CONV_IMPLICIT) return nn__launch_conv2d_dw_implicit(g, id, &c, &x->buf, &dy->buf);
    if (n->algo == NN__CONV_GEMM) {
        nn__conv2d_gemm q;
        const nn__buf *s = &n->scratch_buf;
        int ga[4], cb[4], wc[4], ld, chunk, col = 0, dyg, part;
        nn__conv2d_gemm_make(g->ctx, n->op, &c, &q);
        ld = q.p.ld;
        chunk = ld / q.p.split;
        dyg = q.rows * ld;
        part = dyg + c.K * ld;
        ga[0] = ld, ga[1] = dyg, ga[2] = q.Kg * ld, ga[3] = chunk;
        cb[0] = ld, cb[1] = col, cb[2] = q.KKg * ld, cb[3] = chunk;
        wc[0] = q.KKg, wc[1] = q.p.split > 1 ? part : 0, wc[2] = q.Kg * q.KKg, wc[3] = c.K * q.KKg;
        r = nn__launch_conv2d_im2col(g, id, &c, &q, &x->buf, col);
        if (r == NN_OK) r = nn__launch_conv2d_pack(g, id, &c, &q, &dy->buf, dyg);
        if (r == NN_OK)
            r = nn__launch_gemm(g, id, 0, 1, q.Kg, q.KKg, chunk, s, ga, s, cb, q.p.split > 1 ? s : &n->buf, wc, c.G,
                                q.p.split);
        if (r == NN_OK && q.p.split > 1) {
            nn__k_sum_leading k;
            r = nn__launch_kernel(g, id, "elementwise", "sum_leading", (size_t)c.K * q.KKg, &l);
            if (r != NN_OK) return r;
            memset(&k, 0, sizeof k);
            k.x = s;
            k.y = &n->buf;
            k.n = q.p.split * c.K * q.KKg;
            k.nb = c.K * q.KKg;
            k.off = part;
            r = nn__kargs_sum_leading(l, &k);
        }
        return r;
    }
    r = nn__launch_kernel(g, id, "conv", "conv2d_backward_weight", (size_t)n->numel, &l);
    if (r != NN_OK) return r;
    l->store = n->dtype; /* 16-bit: the program built with NN_STORE_BF16 / _F16 */
    {
        nn__k_conv2d_backward_weight k;
        nn__conv2d_geo(&n->a.conv, geo);
        memset(&k, 0, sizeof k);
        k.x = &x->buf;
        k.dy = &dy->buf;
        k.dw = &n->buf;
        k.N = c.N;
        k.C = c.C;
        k.H = c.H;
        k.W = c.W;
        k.K = c.K;
        k.KH = c.KH;
        k.KW = c.KW;
        k.OH = c.OH;
        k.OW = c.OW;
        k.geo = geo;
        return nn__kargs_conv2d_backward_weight(l, &k);
    }
}
