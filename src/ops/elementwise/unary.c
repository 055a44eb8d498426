/* The elementwise family's ops of one tensor: scale, the unary functions of
   kernels/activation.h (activations and math, one op UNARY with the function as an
   attribute, UNARY_NOGRAD for the ones no gradient flows through), PReLU, and the engine's
   fill and accumulate. Shapes: y has x's shape throughout. */
#include "../../base/internal.h"
#include "../../base/registry.h"
#include "../../../kernels/kargs.h"
#include "../../../kernels/elementwise_args.h"
#include "../../../kernels/activation.h"

/* ==== scale: y = s * x (other families' gradients build it through nn__scale_op: -x and
   such) ==== */

NN_API nn_tensor nn_mul_scalar(nn_graph *g, nn_tensor a, float s) {
    nn_tensor t;
    if (!nn__check0(g, "nn_mul_scalar", 1, &a) || !nn__expect_f32(g, "nn_mul_scalar", a, "x")) return nn__tensor(-1);
    t = nn__op1(g, NN__OP_SCALE, NN_F32, nn__n(g, a)->shape, a.id);
    if (t.id >= 0) g->nodes[t.id].a.ew.s = s;
    return t;
}

/* s * node x, of shape sh */
static nn_tensor nn__scale_op(nn_graph *g, nn_shape sh, int x, float s) {
    nn_tensor t = nn__op1(g, NN__OP_SCALE, NN_F32, sh, x);
    if (t.id >= 0) g->nodes[t.id].a.ew.s = s;
    return t;
}

#define nn__plan_scale nn__no_plan

static void nn__grad_scale(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__scale_op(g, n.shape, gy.id, n.a.ew.s));
}

static nn_result nn__cpu_scale(nn_graph *g, nn__node *n) {
    nn__scale_forward(n->buf.host, NN__F(n->in[0]), n->a.ew.s, n->numel);
    return NN_OK;
}

static nn_result nn__launch_scale(nn_graph *g, int id) {
    NN__KLAUNCH(scale, "elementwise", "scale", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.s = n->a.ew.s;
    return nn__kargs_scale(l, &k);
}

/* ==== unary: y = f(x; p0, p1) for f a line of kernels/activation.h (nn_relu, nn_exp,
   nn_clamp, ...; the node's a.ew.fn and a.ew.param); UNARY_GRAD (x, gy) is
   dx = gy * f'(x); UNARY_NOGRAD (detach, logical_not) is UNARY through which no gradient
   flows. Kernels NAME_forward / NAME_backward, one pair per function ==== */

/* A UNARY node of the activation fn with its n_params parameters; ok: they meet its
   requirement (the text of the condition, for the message). */
static nn_tensor nn__activation(nn_graph *g, int op, const char *opname, int fn, int n_params, int ok,
                                const char *requirement, float p0, float p1, nn_tensor x) {
    nn_tensor t;
    if (!nn__check0(g, opname, 1, &x)) return nn__tensor(-1);
    if (!nn__dtype_half(nn__n(g, x)->dtype) && !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    if (!ok && n_params < 2)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: p0 = %g (the parameter after x) fails %s", opname, p0,
                           requirement);
    if (!ok)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: p0 = %g, p1 = %g (the parameters after x) fail %s", opname,
                           p0, p1, requirement);
    t = nn__op1(g, op, nn__n(g, x)->dtype, nn__n(g, x)->shape, x.id); /* 16-bit x: y of its dtype (NN__OPF_HALF) */
    if (t.id >= 0) {
        g->nodes[t.id].a.ew.fn = fn;
        g->nodes[t.id].a.ew.param[0] = p0;
        g->nodes[t.id].a.ew.param[1] = p1;
    }
    return t;
}

/* The builders nn_relu, nn_elu, nn_exp, nn_clamp, ...: one for each line of
   kernels/activation.h, with as many float parameters as its line says (their names and
   docs are in src/api/api.h); NN__NOGRAD's lines build the op through which no gradient
   flows. */
#define NN__ACT_BUILDER0(OP, E, name, valid)                                                                \
    NN_API nn_tensor nn_##name(nn_graph *g, nn_tensor x) {                                                  \
        return nn__activation(g, OP, "nn_" #name, NN__U_##E, 0, (valid), #valid, 0.0f, 0.0f, x);            \
    }
#define NN__ACT_BUILDER1(OP, E, name, valid)                                                                \
    NN_API nn_tensor nn_##name(nn_graph *g, nn_tensor x, float p0) {                                        \
        return nn__activation(g, OP, "nn_" #name, NN__U_##E, 1, (valid), #valid, p0, 0.0f, x);              \
    }
#define NN__ACT_BUILDER2(OP, E, name, valid)                                                                \
    NN_API nn_tensor nn_##name(nn_graph *g, nn_tensor x, float p0, float p1) {                              \
        return nn__activation(g, OP, "nn_" #name, NN__U_##E, 2, (valid), #valid, p0, p1, x);                \
    }
#define NN__X(E, name, params, valid, fwd, der) NN__ACT_BUILDER##params(NN__OP_UNARY, E, name, valid)
NN__ACTIVATIONS(NN__X)
NN__MATH(NN__X)
#undef NN__X
#define NN__X(E, name, params, valid, fwd, der) NN__ACT_BUILDER##params(NN__OP_UNARY_NOGRAD, E, name, valid)
NN__NOGRAD(NN__X)
#undef NN__X

#define nn__plan_unary nn__no_plan
#define nn__cpu_unary_nograd nn__cpu_unary
#define nn__launch_unary_nograd nn__launch_unary
#define nn__grad_unary_nograd nn__grad_none
#define nn__plan_unary_nograd nn__no_plan
#define nn__grad_unary_grad nn__grad_none
#define nn__plan_unary_grad nn__no_plan

static void nn__grad_unary(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    t = nn__op2(g, NN__OP_UNARY_GRAD, n.dtype, n.shape, a, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
}

static nn_result nn__cpu_unary(nn_graph *g, nn__node *n) {
    if (nn__dtype_half(n->dtype))
        nn__unary_run_half(g->ctx->threads, n->a.ew.fn, n->a.ew.param, n->dtype, n->buf.host, NN__F(n->in[0]), NULL,
                           n->numel);
    else nn__unary_run(g->ctx->threads, n->a.ew.fn, n->a.ew.param, n->buf.host, NN__F(n->in[0]), NULL, n->numel);
    return NN_OK;
}

/* (x, gy) */
static nn_result nn__cpu_unary_grad(nn_graph *g, nn__node *n) {
    if (nn__dtype_half(n->dtype))
        nn__unary_run_half(g->ctx->threads, n->a.ew.fn, n->a.ew.param, n->dtype, n->buf.host, NN__F(n->in[0]),
                           NN__F(n->in[1]), n->numel);
    else nn__unary_run(g->ctx->threads, n->a.ew.fn, n->a.ew.param, n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]),
                       n->numel);
    return NN_OK;
}

/* the kernels <name>_forward / <name>_backward of each function, by NN__U_* */
static const char *const nn__unary_names[NN__U_COUNT] = {
#define NN__X(E, name, params, valid, fwd, der) #name,
    NN__UNARY_ALL(NN__X)
#undef NN__X
};

static nn_result nn__launch_unary(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    char kname[64];
    snprintf(kname, sizeof kname, "%s_forward", nn__unary_names[n->a.ew.fn]);
    NN__KSTART(unary_forward, "elementwise", kname, n->numel);
    l->store = n->dtype; /* x and y in 16-bit storage: the program built for it */
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.p0 = n->a.ew.param[0];
    k.p1 = n->a.ew.param[1];
    return nn__kargs_unary_forward(l, &k);
}

static nn_result nn__launch_unary_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    char kname[64];
    snprintf(kname, sizeof kname, "%s_backward", nn__unary_names[n->a.ew.fn]);
    NN__KSTART(unary_backward, "elementwise", kname, n->numel);
    l->store = n->dtype;
    k.x = &g->nodes[n->in[0]].buf;
    k.dy = &g->nodes[n->in[1]].buf;
    k.dx = &n->buf;
    k.n = (int)n->numel;
    k.p0 = n->a.ew.param[0];
    k.p1 = n->a.ew.param[1];
    return nn__kargs_unary_backward(l, &k);
}

/* ==== prelu: y [N, C, S] = max(0, x) + w[c] * min(0, x), w [C] over the channels (dim 1) or [1]
   (torch.nn.functional.prelu); PRELU_DX (x, w, gy) is dx [x's shape], PRELU_DW (x, gy)
   is dw [C] ==== */

/* PReLU: x [N, C, ...] with weight [C] (channels: dim 1) or [1] (one shared slope). The
   node's attributes C (the weight's size), S (elements per channel and sample), N. */
NN_API nn_tensor nn_prelu(nn_graph *g, nn_tensor x, nn_tensor weight) {
    nn_tensor in[2], t;
    nn__node *nx, *nw;
    int64_t C, N;
    in[0] = x;
    in[1] = weight;
    if (!nn__check(g, "nn_prelu", 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_prelu", x, "x") || !nn__expect_f32(g, "nn_prelu", weight, "weight")) return nn__tensor(-1);
    nx = nn__n(g, x);
    nw = nn__n(g, weight);
    C = nx->shape.ndim >= 2 ? nx->shape.dim[1] : 1;
    if (nw->shape.ndim != 1 || (nw->numel != 1 && nw->numel != C)) {
        char sx[128], sw[128];
        nn__shape_str(&nx->shape, sx, sizeof sx);
        nn__shape_str(&nw->shape, sw, sizeof sw);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_prelu: weight %s must be [1] or [%lld], the channels (dim 1) of x %s", sw,
                           (long long)C, sx);
    }
    N = nx->shape.ndim >= 2 ? nx->shape.dim[0] : 1;
    t = nn__op2(g, NN__OP_PRELU, NN_F32, nx->shape, x.id, weight.id);
    if (t.id >= 0) {
        nn__node *n = &g->nodes[t.id];
        n->a.ew.C = (int)nw->numel;
        n->a.ew.S = (int)(n->numel / (N * nw->numel));
        n->a.ew.N = (int)N;
    }
    return t;
}

/* PyTorch's nn.PReLU(num_parameters, init): NAME.weight [num_parameters], all init (0.25). */
NN_API nn_tensor nn_prelu_layer(nn_graph *g, nn_tensor x, int64_t num_parameters, const nn_prelu_desc *desc, const char *name) {
    char wn[256];
    nn_init init;
    if (!nn__check(g, "nn_prelu_layer", 1, &x)) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_prelu_layer: needs a name (at most 200 chars)");
    if (num_parameters < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_prelu_layer %s: num_parameters = %lld, not >= 1", name,
                           (long long)num_parameters);
    init.kind = NN_INIT_CONSTANT;
    init.a = nn__deff(desc ? desc->init : 0.0f, 0.25f);
    init.b = 0.0f;
    snprintf(wn, sizeof wn, "%s.weight", name);
    return nn_prelu(g, x, nn_param(g, wn, nn_shape1(num_parameters), init));
}

#define nn__plan_prelu nn__no_plan
#define nn__grad_prelu_dx nn__grad_none
#define nn__plan_prelu_dx nn__no_plan
#define nn__grad_prelu_dw nn__grad_none

/* inputs (x, w): dx = PRELU_DX(x, w, gy) [x's shape], dw = PRELU_DW(x, gy) [w's shape] */
static void nn__grad_prelu(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (ga) {
        t = nn__op3(g, NN__OP_PRELU_DX, NN_F32, n.shape, a, b, gy.id);
        if (t.id >= 0) g->nodes[t.id].a = n.a;
        nn__acc_grad(g, a, t);
    }
    if (gb) {
        t = nn__op2(g, NN__OP_PRELU_DW, NN_F32, g->nodes[b].shape, a, gy.id);
        if (t.id >= 0) g->nodes[t.id].a = n.a;
        nn__acc_grad(g, b, t);
    }
}

/* The device's partial sums, one per (n, c) (src/cpu/elementwise.c's
   nn__prelu_backward_weight sums in the same order). */
static void nn__plan_prelu_dw(nn_graph *g, nn__node *n) {
    (void)g;
    n->scratch = (int64_t)n->a.ew.N * n->a.ew.C;
}

static nn_result nn__cpu_prelu(nn_graph *g, nn__node *n) {
    nn__prelu_forward(n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]), n->a.ew.N, n->a.ew.C, n->a.ew.S);
    return NN_OK;
}

/* (x, w, gy) */
static nn_result nn__cpu_prelu_dx(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    nn__prelu_backward_input(n->buf.host, NN__F(in[0]), NN__F(in[1]), NN__F(in[2]), n->a.ew.N, n->a.ew.C, n->a.ew.S);
    return NN_OK;
}

/* (x, gy) */
static nn_result nn__cpu_prelu_dw(nn_graph *g, nn__node *n) {
    nn__prelu_backward_weight(n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]), n->a.ew.N, n->a.ew.C, n->a.ew.S);
    return NN_OK;
}

static nn_result nn__launch_prelu(nn_graph *g, int id) {
    NN__KLAUNCH(prelu_forward, "elementwise", "prelu_forward", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.w = &g->nodes[n->in[1]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.C = n->a.ew.C;
    k.S = n->a.ew.S;
    return nn__kargs_prelu_forward(l, &k);
}

static nn_result nn__launch_prelu_dx(nn_graph *g, int id) {
    NN__KLAUNCH(prelu_backward_input, "elementwise", "prelu_backward_input", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.w = &g->nodes[n->in[1]].buf;
    k.dy = &g->nodes[n->in[2]].buf;
    k.dx = &n->buf;
    k.n = (int)n->numel;
    k.C = n->a.ew.C;
    k.S = n->a.ew.S;
    return nn__kargs_prelu_backward_input(l, &k);
}

/* dw: the partial sums [N, C] into the scratch, then each channel's in n order */
static nn_result nn__launch_prelu_dw(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__launch *l = NULL;
    nn__k_prelu_backward_weight_part kp;
    nn__k_prelu_backward_weight kw;
    nn_result r;
    r = nn__launch_kernel(g, id, "elementwise", "prelu_backward_weight_part", (size_t)n->a.ew.N * (size_t)n->a.ew.C,
                          &l);
    if (r != NN_OK) return r;
    memset(&kp, 0, sizeof kp);
    kp.x = &g->nodes[n->in[0]].buf;
    kp.dy = &g->nodes[n->in[1]].buf;
    kp.part = &n->scratch_buf;
    kp.N = n->a.ew.N;
    kp.C = n->a.ew.C;
    kp.S = n->a.ew.S;
    r = nn__kargs_prelu_backward_weight_part(l, &kp);
    if (r == NN_OK) r = nn__launch_kernel(g, id, "elementwise", "prelu_backward_weight_sum", (size_t)n->a.ew.C, &l);
    if (r != NN_OK) return r;
    memset(&kw, 0, sizeof kw);
    kw.part = &n->scratch_buf;
    kw.dw = &n->buf;
    kw.N = n->a.ew.N;
    kw.C = n->a.ew.C;
    return nn__kargs_prelu_backward_weight(l, &kw);
}

/* ==== fill: y = s, no inputs; the engine's seed of the loss's gradient (ones) ==== */

#define nn__grad_fill nn__grad_none
#define nn__plan_fill nn__no_plan

/* A 16-bit FILL is the zeros of a gradient built in pieces (slices' gradients merged into
   one concat, src/ops/shape/index.c): 0 only, written as float32 zeros over the buffer's
   whole 4-byte words (zero is all-zero bits in every storage type). Any other value is
   refused at run time with a message (no builder makes one). */
static nn_result nn__fill16_refuse(nn_graph *g, const nn__node *n) {
    return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT,
                    "fill: a %s fill of %g: 16-bit fills write zeros only (the gradient of merged slices); "
                    "fill a float32 tensor and convert it with nn_to_dtype", nn__dtype_name(n->dtype), (double)n->a.ew.s);
}

static nn_result nn__cpu_fill(nn_graph *g, nn__node *n) {
    float *y = n->buf.host;
    int64_t i;
    if (nn__dtype_half(n->dtype)) {
        if (n->a.ew.s != 0.0f) return nn__fill16_refuse(g, n);
        memset(n->buf.host, 0, nn__dtype_bytes(n->dtype, n->numel));
        return NN_OK;
    }
    for (i = 0; i < n->numel; i++) y[i] = n->a.ew.s;
    return NN_OK;
}

static nn_result nn__launch_fill(nn_graph *g, int id) {
    int64_t words = nn__dtype_half(g->nodes[id].dtype) ? (int64_t)(nn__dtype_bytes(g->nodes[id].dtype, g->nodes[id].numel) / 4) : g->nodes[id].numel;
    if (nn__dtype_half(g->nodes[id].dtype) && g->nodes[id].a.ew.s != 0.0f) return nn__fill16_refuse(g, &g->nodes[id]);
    NN__KLAUNCH(fill, "elementwise", "fill", words);
    k.y = &n->buf;
    k.n = (int)words;
    k.v = n->a.ew.s;
    return nn__kargs_fill(l, &k);
}

/* ==== accumulate: y += x at every run, y [x's shape] kept across runs: a running sum on
   the device, read as an output and reset with nn_tensor_fill ==== */

NN_API nn_tensor nn_accumulate(nn_graph *g, nn_tensor x) {
    nn_tensor t;
    if (!nn__check0(g, "nn_accumulate", 1, &x) || !nn__expect_f32(g, "nn_accumulate", x, "x")) return nn__tensor(-1);
    t = nn__op1(g, NN__OP_ACCUMULATE, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) g->nodes[t.id].is_output = 1;
    return t;
}


#define nn__grad_accumulate nn__grad_none
#define nn__plan_accumulate nn__no_plan

static nn_result nn__cpu_accumulate(nn_graph *g, nn__node *n) {
    float *y = n->buf.host;
    const float *x = NN__F(n->in[0]);
    int64_t i;
    for (i = 0; i < n->numel; i++) y[i] += x[i];
    return NN_OK;
}

static nn_result nn__launch_accumulate(nn_graph *g, int id) {
    NN__KLAUNCH(accumulate, "elementwise", "accumulate", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.acc = &n->buf;
    k.n = (int)n->numel;
    return nn__kargs_accumulate(l, &k);
}
