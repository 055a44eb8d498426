/* The elementwise ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../base/internal.h"
#include "../base/registry.h"
#include "../../kernels/activation.h"

/* Registry names (src/base/registry.h: nn__cpu_STEM, nn__launch_STEM, nn__grad_STEM,
   nn__plan_STEM): the functions an op shares with another, and the ones it has none of. */
#define nn__cpu_add nn__cpu_binary
#define nn__launch_add nn__launch_binary
#define nn__grad_add nn__grad_add_sub
#define nn__plan_add nn__no_plan
#define nn__cpu_sub nn__cpu_binary
#define nn__launch_sub nn__launch_binary
#define nn__grad_sub nn__grad_add_sub
#define nn__plan_sub nn__no_plan
#define nn__cpu_mul nn__cpu_binary
#define nn__launch_mul nn__launch_binary
#define nn__plan_mul nn__no_plan
#define nn__plan_scale nn__no_plan
#define nn__plan_unary nn__no_plan
#define nn__grad_unary_grad nn__grad_none
#define nn__plan_unary_grad nn__no_plan
#define nn__plan_prelu nn__no_plan
#define nn__cpu_prelu_dx nn__cpu_prelu
#define nn__launch_prelu_dx nn__launch_prelu
#define nn__grad_prelu_dx nn__grad_none
#define nn__plan_prelu_dx nn__no_plan
#define nn__grad_prelu_dw nn__grad_none
#define nn__grad_accumulate nn__grad_none
#define nn__plan_accumulate nn__no_plan
#define nn__grad_fill nn__grad_none
#define nn__plan_fill nn__no_plan
#define nn__plan_binary nn__no_plan
#define nn__grad_binary_grad nn__grad_none
#define nn__plan_binary_grad nn__no_plan
#define nn__cpu_compare nn__cpu_binary
#define nn__launch_compare nn__launch_binary
#define nn__grad_compare nn__grad_none
#define nn__plan_compare nn__no_plan
#define nn__plan_where nn__no_plan
#define nn__plan_masked_fill nn__no_plan
#define nn__plan_expand nn__no_plan
#define nn__plan_sum_to nn__no_plan
#define nn__cpu_unary_nograd nn__cpu_unary
#define nn__launch_unary_nograd nn__launch_unary
#define nn__grad_unary_nograd nn__grad_none
#define nn__plan_unary_nograd nn__no_plan

/* ---- broadcasting (NumPy's and PyTorch's rules) ---- */

/* The shape the n shapes broadcast to: aligned at their last dims, each dim 1 or the
   largest, missing leading dims 1. 0 (and the op fails, naming the operands and shapes)
   when they do not broadcast. */
static int nn__broadcast_shape(nn_graph *g, const char *opname, int n, const nn_tensor *t, const char *const *names,
                               nn_shape *out) {
    int k, d;
    memset(out, 0, sizeof *out);
    for (k = 0; k < n; k++)
        if (nn__n(g, t[k])->shape.ndim > out->ndim) out->ndim = nn__n(g, t[k])->shape.ndim;
    for (d = 0; d < out->ndim; d++) out->dim[d] = 1;
    for (k = 0; k < n; k++) {
        const nn_shape *s = &nn__n(g, t[k])->shape;
        for (d = 0; d < s->ndim; d++) {
            int od = out->ndim - s->ndim + d;
            if (s->dim[d] == out->dim[od] || s->dim[d] == 1) continue;
            if (out->dim[od] == 1) {
                out->dim[od] = s->dim[d];
                continue;
            }
            {
                char msg[512], sh[128];
                size_t used = 0;
                int j;
                for (j = 0; j < n && used < sizeof msg; j++) {
                    nn__shape_str(&nn__n(g, t[j])->shape, sh, sizeof sh);
                    used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s %s", j ? (j == n - 1 ? " and " : ", ") : "",
                                             names[j], sh);
                }
                nn__op_fail(g, NN_ERR_SHAPE, "%s: shapes %s do not broadcast (dim %d from the end: %lld against %lld)",
                            opname, msg, out->ndim - od, (long long)s->dim[d], (long long)out->dim[od]);
                return 0;
            }
        }
    }
    return nn__shape_fits(g, opname, out);
}

/* The broadcast geometry of node n over its first n_op inputs (the output's shape). */
static void nn__bcast_node(nn_graph *g, const nn__node *n, int n_op, nn__bcast *bc) {
    const nn_shape *s[3];
    int k;
    for (k = 0; k < n_op; k++) s[k] = &g->nodes[n->in[k]].shape;
    nn__bcast_init(bc, &n->shape, s, n_op);
}

/* Node x summed to shape sh, which broadcasts to x's (the gradient of a broadcast): x
   itself when the shapes are the same. Other families' gradients use it too. */
static nn_tensor nn__sum_to_op(nn_graph *g, int x, nn_shape sh) {
    if (nn__shape_eq(&g->nodes[x].shape, &sh)) return nn__tensor(x);
    return nn__op1(g, NN__OP_SUM_TO, NN_F32, sh, x);
}

/* A binary node (op ADD, SUB, MUL, BINARY or COMPARE with function fn) of a and b
   broadcast. */
static nn_tensor nn__binary_fn(nn_graph *g, int op, int fn, const char *opname, nn_tensor a, nn_tensor b) {
    static const char *const names[2] = {"a", "b"};
    nn_tensor in[2], t;
    nn_shape out;
    in[0] = a;
    in[1] = b;
    if (!nn__check0(g, opname, 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, opname, a, "a") || !nn__expect_f32(g, opname, b, "b")) return nn__tensor(-1);
    if (!nn__broadcast_shape(g, opname, 2, in, names, &out)) return nn__tensor(-1);
    t = nn__op2(g, op, NN_F32, out, a.id, b.id);
    if (t.id >= 0) g->nodes[t.id].a.ew.bfn = fn;
    return t;
}

static nn_tensor nn__binary(nn_graph *g, int op, const char *opname, nn_tensor a, nn_tensor b) {
    return nn__binary_fn(g, op, op == NN__OP_ADD ? NN__B_ADD : op == NN__OP_SUB ? NN__B_SUB : NN__B_MUL, opname, a, b);
}

NN_API nn_tensor nn_add(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_ADD, "nn_add", a, b); }
NN_API nn_tensor nn_sub(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_SUB, "nn_sub", a, b); }
NN_API nn_tensor nn_mul(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_MUL, "nn_mul", a, b); }
NN_API nn_tensor nn_div(nn_graph *g, nn_tensor a, nn_tensor b) {
    return nn__binary_fn(g, NN__OP_BINARY, NN__B_DIV, "nn_div", a, b);
}
NN_API nn_tensor nn_minimum(nn_graph *g, nn_tensor a, nn_tensor b) {
    return nn__binary_fn(g, NN__OP_BINARY, NN__B_MINIMUM, "nn_minimum", a, b);
}
NN_API nn_tensor nn_maximum(nn_graph *g, nn_tensor a, nn_tensor b) {
    return nn__binary_fn(g, NN__OP_BINARY, NN__B_MAXIMUM, "nn_maximum", a, b);
}
NN_API nn_tensor nn_pow(nn_graph *g, nn_tensor a, nn_tensor b) {
    return nn__binary_fn(g, NN__OP_BINARY, NN__B_POW, "nn_pow", a, b);
}
NN_API nn_tensor nn_eq(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary_fn(g, NN__OP_COMPARE, NN__B_EQ, "nn_eq", a, b); }
NN_API nn_tensor nn_ne(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary_fn(g, NN__OP_COMPARE, NN__B_NE, "nn_ne", a, b); }
NN_API nn_tensor nn_lt(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary_fn(g, NN__OP_COMPARE, NN__B_LT, "nn_lt", a, b); }
NN_API nn_tensor nn_le(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary_fn(g, NN__OP_COMPARE, NN__B_LE, "nn_le", a, b); }
NN_API nn_tensor nn_gt(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary_fn(g, NN__OP_COMPARE, NN__B_GT, "nn_gt", a, b); }
NN_API nn_tensor nn_ge(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary_fn(g, NN__OP_COMPARE, NN__B_GE, "nn_ge", a, b); }
NN_API nn_tensor nn_logical_and(nn_graph *g, nn_tensor a, nn_tensor b) {
    return nn__binary_fn(g, NN__OP_COMPARE, NN__B_LOGICAL_AND, "nn_logical_and", a, b);
}
NN_API nn_tensor nn_logical_or(nn_graph *g, nn_tensor a, nn_tensor b) {
    return nn__binary_fn(g, NN__OP_COMPARE, NN__B_LOGICAL_OR, "nn_logical_or", a, b);
}

NN_API nn_tensor nn_where(nn_graph *g, nn_tensor cond, nn_tensor a, nn_tensor b) {
    static const char *const names[3] = {"cond", "a", "b"};
    nn_tensor in[3];
    nn_shape out;
    in[0] = cond;
    in[1] = a;
    in[2] = b;
    if (!nn__check0(g, "nn_where", 3, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_where", cond, "cond") || !nn__expect_f32(g, "nn_where", a, "a") ||
        !nn__expect_f32(g, "nn_where", b, "b"))
        return nn__tensor(-1);
    if (!nn__broadcast_shape(g, "nn_where", 3, in, names, &out)) return nn__tensor(-1);
    return nn__op3(g, NN__OP_WHERE, NN_F32, out, cond.id, a.id, b.id);
}

/* y = (mask != 0) != invert ? value : x, of x's shape (mask broadcast to it) */
static nn_tensor nn__masked_fill_op(nn_graph *g, nn_shape sh, int mask, int x, float value, int invert) {
    nn_tensor t = nn__op2(g, NN__OP_MASKED_FILL, NN_F32, sh, mask, x);
    if (t.id >= 0) {
        g->nodes[t.id].a.ew.s = value;
        g->nodes[t.id].a.ew.invert = invert;
    }
    return t;
}

NN_API nn_tensor nn_masked_fill(nn_graph *g, nn_tensor x, nn_tensor mask, float value) {
    static const char *const names[2] = {"x", "mask"};
    nn_tensor in[2];
    nn_shape out;
    in[0] = x;
    in[1] = mask;
    if (!nn__check0(g, "nn_masked_fill", 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, "nn_masked_fill", x, "x") || !nn__expect_f32(g, "nn_masked_fill", mask, "mask"))
        return nn__tensor(-1);
    if (!nn__broadcast_shape(g, "nn_masked_fill", 2, in, names, &out)) return nn__tensor(-1);
    if (!nn__shape_eq(&out, &nn__n(g, x)->shape)) {
        char sx[128], sm[128];
        nn__shape_str(&nn__n(g, x)->shape, sx, sizeof sx);
        nn__shape_str(&nn__n(g, mask)->shape, sm, sizeof sm);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_masked_fill: mask %s must broadcast to x's shape %s", sm, sx);
    }
    return nn__masked_fill_op(g, out, mask.id, x.id, value, 0);
}

NN_API nn_tensor nn_expand(nn_graph *g, nn_tensor x, nn_shape shape) {
    nn__node *nx;
    nn_shape out;
    int d;
    if (!nn__check0(g, "nn_expand", 1, &x) || !nn__expect_f32(g, "nn_expand", x, "x")) return nn__tensor(-1);
    nx = nn__n(g, x);
    out = shape;
    if (shape.ndim >= nx->shape.ndim && shape.ndim <= NN_MAX_DIMS)
        for (d = 0; d < shape.ndim; d++) {
            int xd = d - (shape.ndim - nx->shape.ndim);
            if (xd >= 0 && shape.dim[d] == -1) out.dim[d] = nx->shape.dim[xd];
        }
    for (d = 0; shape.ndim >= nx->shape.ndim && shape.ndim <= NN_MAX_DIMS && d < shape.ndim; d++) {
        int xd = d - (shape.ndim - nx->shape.ndim);
        if (out.dim[d] < 1 || (xd >= 0 && nx->shape.dim[xd] != 1 && nx->shape.dim[xd] != out.dim[d])) break;
    }
    if (shape.ndim < nx->shape.ndim || shape.ndim > NN_MAX_DIMS || d < shape.ndim) {
        char sx[128], ss[128];
        nn__shape_str(&nx->shape, sx, sizeof sx);
        if (shape.ndim >= 0 && shape.ndim <= NN_MAX_DIMS) nn__shape_str(&shape, ss, sizeof ss);
        else snprintf(ss, sizeof ss, "of %d dims", shape.ndim);
        return nn__op_fail(g, NN_ERR_SHAPE,
                           "nn_expand: x %s cannot expand to %s (each dim of x must be 1 or the new size, -1 keeps it; "
                           "new leading dims >= 1)", sx, ss);
    }
    if (!nn__check_shape(g, "nn_expand", out)) return nn__tensor(-1);
    if (nn__shape_eq(&out, &nx->shape)) return x;
    return nn__op1(g, NN__OP_EXPAND, NN_F32, out, x.id);
}

NN_API nn_tensor nn_mul_scalar(nn_graph *g, nn_tensor a, float s) {
    nn_tensor t;
    if (!nn__check0(g, "nn_mul_scalar", 1, &a) || !nn__expect_f32(g, "nn_mul_scalar", a, "x")) return nn__tensor(-1);
    t = nn__op1(g, NN__OP_SCALE, NN_F32, nn__n(g, a)->shape, a.id);
    if (t.id >= 0) g->nodes[t.id].a.ew.s = s;
    return t;
}

/* s * node x, of shape sh (other families' gradients: -x and such). */
static nn_tensor nn__scale_op(nn_graph *g, nn_shape sh, int x, float s) {
    nn_tensor t = nn__op1(g, NN__OP_SCALE, NN_F32, sh, x);
    if (t.id >= 0) g->nodes[t.id].a.ew.s = s;
    return t;
}

/* A UNARY node of the activation fn with its n_params parameters; ok: they meet its
   requirement (the text of the condition, for the message). */
static nn_tensor nn__activation(nn_graph *g, int op, const char *opname, int fn, int n_params, int ok,
                                const char *requirement, float p0, float p1, nn_tensor x) {
    nn_tensor t;
    if (!nn__check0(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    if (!ok && n_params < 2)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: p0 = %g (the parameter after x) fails %s", opname, p0,
                           requirement);
    if (!ok)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: p0 = %g, p1 = %g (the parameters after x) fail %s", opname,
                           p0, p1, requirement);
    t = nn__op1(g, op, NN_F32, nn__n(g, x)->shape, x.id);
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



NN_API nn_tensor nn_accumulate(nn_graph *g, nn_tensor x) {
    nn_tensor t;
    if (!nn__check0(g, "nn_accumulate", 1, &x) || !nn__expect_f32(g, "nn_accumulate", x, "x")) return nn__tensor(-1);
    t = nn__op1(g, NN__OP_ACCUMULATE, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) g->nodes[t.id].is_output = 1;
    return t;
}


/* ---- autograd rules ---- */

/* Gradients of broadcast operands: the gradient at the output's shape, summed to the
   operand's (nn__sum_to_op: nothing when the shapes are the same). */
static void nn__grad_add_sub(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (ga) nn__acc_grad(g, a, nn__sum_to_op(g, gy.id, g->nodes[a].shape));
    if (gb) {
        t = nn__sum_to_op(g, gy.id, g->nodes[b].shape);
        if (n.op == NN__OP_SUB && t.id >= 0) t = nn__scale_op(g, g->nodes[b].shape, t.id, -1.0f);
        nn__acc_grad(g, b, t);
    }
}

static void nn__grad_mul(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (ga) {
        t = nn__op2(g, NN__OP_MUL, NN_F32, n.shape, gy.id, b);
        if (t.id >= 0) t = nn__sum_to_op(g, t.id, g->nodes[a].shape);
        nn__acc_grad(g, a, t);
    }
    if (gb) {
        t = nn__op2(g, NN__OP_MUL, NN_F32, n.shape, gy.id, a);
        if (t.id >= 0) t = nn__sum_to_op(g, t.id, g->nodes[b].shape);
        nn__acc_grad(g, b, t);
    }
}

/* BINARY (div, minimum, maximum, pow): BINARY_GRAD (a, b, gy) gives gy * df/da or df/db at
   the output's shape. */
static void nn__grad_binary(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int k;
    for (k = 0; k < 2; k++) {
        int x = k ? b : a;
        nn_tensor t;
        if (!(k ? gb : ga)) continue;
        t = nn__op3(g, NN__OP_BINARY_GRAD, NN_F32, n.shape, a, b, gy.id);
        if (t.id < 0) return;
        g->nodes[t.id].a = n.a;
        g->nodes[t.id].a.ew.wrt = k;
        nn__acc_grad(g, x, nn__sum_to_op(g, t.id, g->nodes[x].shape));
    }
}

/* inputs (cond, a, b): gy where cond reaches a, gy elsewhere reaches b; cond gets none */
static void nn__grad_where(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int k;
    for (k = 1; k <= 2; k++) {
        int x = n.in[k];
        nn_tensor t;
        if (!g->nodes[x].needs_grad) continue;
        t = nn__masked_fill_op(g, n.shape, n.in[0], gy.id, 0.0f, k == 1);
        if (t.id < 0) return;
        nn__acc_grad(g, x, nn__sum_to_op(g, t.id, g->nodes[x].shape));
    }
}

/* inputs (mask, x): gy where x was kept */
static void nn__grad_masked_fill(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (gb) nn__acc_grad(g, b, nn__masked_fill_op(g, n.shape, a, gy.id, 0.0f, n.a.ew.invert));
}

static void nn__grad_expand(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__sum_to_op(g, gy.id, g->nodes[a].shape));
}

static void nn__grad_sum_to(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__acc_grad(g, a, nn__op1(g, NN__OP_EXPAND, NN_F32, g->nodes[a].shape, gy.id));
}

static void nn__grad_scale(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    t = nn__scale_op(g, n.shape, gy.id, n.a.ew.s);
    nn__acc_grad(g, a, t);
    return;
}

static void nn__grad_unary(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    t = nn__op2(g, NN__OP_UNARY_GRAD, NN_F32, n.shape, a, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
    return;
}

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
    return;
}


/* ---- CPU bodies ---- */

static nn_result nn__cpu_binary(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    int fn = n->op == NN__OP_ADD ? NN__B_ADD : n->op == NN__OP_SUB ? NN__B_SUB : n->op == NN__OP_MUL ? NN__B_MUL : n->a.ew.bfn;
    nn__bcast_node(g, n, 2, &bc);
    nn__binary_forward(g->ctx->threads, fn, n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]), &bc);
    return NN_OK;
}

/* (a, b, gy) */
static nn_result nn__cpu_binary_grad(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__bcast_node(g, n, 2, &bc);
    nn__binary_backward(g->ctx->threads, n->a.ew.bfn, n->a.ew.wrt, n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]),
                        NN__F(n->in[2]), &bc);
    return NN_OK;
}

static nn_result nn__cpu_where(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__bcast_node(g, n, 3, &bc);
    nn__where_forward(g->ctx->threads, n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]), NN__F(n->in[2]), &bc);
    return NN_OK;
}

static nn_result nn__cpu_masked_fill(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__bcast_node(g, n, 2, &bc);
    nn__masked_fill_forward(g->ctx->threads, n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]), n->a.ew.s, n->a.ew.invert, &bc);
    return NN_OK;
}

static nn_result nn__cpu_expand(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__bcast_node(g, n, 1, &bc);
    nn__expand_forward(g->ctx->threads, n->buf.host, NN__F(n->in[0]), &bc);
    return NN_OK;
}

/* The geometry of a sum to n's shape: over the input's shape, with n's as its operand. */
static void nn__sum_to_geometry(nn_graph *g, const nn__node *n, nn__bcast *bc) {
    const nn_shape *s = &n->shape;
    nn__bcast_init(bc, &g->nodes[n->in[0]].shape, &s, 1);
}

static nn_result nn__cpu_sum_to(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__sum_to_geometry(g, n, &bc);
    nn__sum_to_forward(g->ctx->threads, n->buf.host, NN__F(n->in[0]), &bc);
    return NN_OK;
}

static nn_result nn__cpu_scale(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__scale_forward(y, NN__F(in[0]), n->a.ew.s, N); return NN_OK;

}

static nn_result nn__cpu_unary(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__unary_run(g->ctx->threads, n->a.ew.fn, n->a.ew.param, y, NN__F(in[0]), NULL, N);
    return NN_OK;

}

static nn_result nn__cpu_unary_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__unary_run(g->ctx->threads, n->a.ew.fn, n->a.ew.param, y, NN__F(in[0]), NN__F(in[1]), N);
    return NN_OK;

}

/* PRELU (x, w) and PRELU_DX (x, w, dy) */
static nn_result nn__cpu_prelu(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    if (n->op == NN__OP_PRELU) nn__prelu_forward(n->buf.host, NN__F(in[0]), NN__F(in[1]), n->a.ew.N, n->a.ew.C, n->a.ew.S);
    else nn__prelu_backward_input(n->buf.host, NN__F(in[0]), NN__F(in[1]), NN__F(in[2]), n->a.ew.N, n->a.ew.C, n->a.ew.S);
    return NN_OK;
}

/* PRELU_DW (x, dy) */
static nn_result nn__cpu_prelu_dw(nn_graph *g, nn__node *n) {
    nn__prelu_backward_weight(n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]), n->a.ew.N, n->a.ew.C, n->a.ew.S);
    return NN_OK;
}

/* The device's partial sums, one per (n, c) (src/cpu/simd.c sums in the same order). */
static void nn__plan_prelu_dw(nn_graph *g, nn__node *n) {
    (void)g;
    n->scratch = (int64_t)n->a.ew.N * n->a.ew.C;
}


static nn_result nn__cpu_accumulate(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    const float *x = NN__F(in[0]);
    int64_t i;
    for (i = 0; i < N; i++) y[i] += x[i];
    return NN_OK;
}

static nn_result nn__cpu_fill(nn_graph *g, nn__node *n) {
    (void)g;
    float *y = n->buf.host;
    int64_t N = n->numel;
    int64_t i;
    for (i = 0; i < N; i++) y[i] = n->a.ew.s;
    return NN_OK;
}

/* the kernels <name>_forward / <name>_backward of each activation */
static const char *const nn__unary_names[NN__U_COUNT] = {
#define NN__X(E, name, params, valid, fwd, der) #name,
    NN__UNARY_ALL(NN__X)
#undef NN__X
};


/* ---- device plans: launches of kernels/FAMILY.cl ---- */

/* The geometry of kernels/elementwise.cl's broadcast kernels: dims and each operand's
   strides as int8s (dims beyond nd unused). */
static void nn__bcast_ints(const nn__bcast *bc, int dims[8], int st[3][8]) {
    int d, k;
    memset(st, 0, 3 * 8 * sizeof(int));
    for (d = 0; d < 8; d++) dims[d] = d < bc->nd ? (int)bc->dim[d] : 1;
    for (k = 0; k < bc->n_op; k++)
        for (d = 0; d < bc->nd; d++) st[k][d] = (int)bc->st[k][d];
}

/* ADD, SUB, MUL, BINARY, COMPARE: one flat dim (same shapes, or a scalar operand) goes to
   binary_flat, anything else to binary_bcast. */
/* kernels/elementwise.cl's per-function kernels for same-shape operands, by NN__B_* */
static const char *const nn__same_fwd[] = {
#define NN__X(E, NAME, FWD, DA, DB) "binary_same_" #NAME,
    NN__BINARY_FNS(NN__X)
#undef NN__X
};
static const char *const nn__same_grad[] = {
#define NN__X(E, NAME, FWD, DA, DB) "binary_same_grad_" #NAME,
    NN__BINARY_FNS(NN__X)
#undef NN__X
};

static nn_result nn__launch_binary(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__buf *a = &g->nodes[n->in[0]].buf, *b = &g->nodes[n->in[1]].buf;
    int fn = n->op == NN__OP_ADD ? NN__B_ADD : n->op == NN__OP_SUB ? NN__B_SUB : n->op == NN__OP_MUL ? NN__B_MUL : n->a.ew.bfn;
    int N = (int)n->numel, dims[8], st[3][8];
    nn__bcast bc;
    nn__launch *l = NULL;
    nn_result r;
    nn__bcast_node(g, n, 2, &bc);
    nn__bcast_ints(&bc, dims, st);
    if (bc.nd == 1 && st[0][0] == 1 && st[1][0] == 1) {
        r = nn__launch_kernel(g, id, "elementwise", nn__same_fwd[fn], (size_t)N, &l);
        if (r == NN_OK) r = nn__args(l, "mmmi", a, b, &n->buf, N);
        return r;
    }
    if (bc.nd == 1) {
        r = nn__launch_kernel(g, id, "elementwise", "binary_flat", (size_t)N, &l);
        if (r == NN_OK) r = nn__args(l, "mmmiiii", a, b, &n->buf, N, fn, st[0][0], st[1][0]);
        return r;
    }
    r = nn__launch_kernel(g, id, "elementwise", "binary_bcast", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmmiii888", a, b, &n->buf, N, fn, bc.nd, dims, st[0], st[1]);
    return r;
}

static nn_result nn__launch_binary_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int N = (int)n->numel, dims[8], st[3][8];
    nn__bcast bc;
    nn__launch *l = NULL;
    nn_result r;
    nn__bcast_node(g, n, 2, &bc);
    nn__bcast_ints(&bc, dims, st);
    if (bc.nd == 1 && st[0][0] == 1 && st[1][0] == 1) { /* same shapes: the function's own kernel */
        r = nn__launch_kernel(g, id, "elementwise", nn__same_grad[n->a.ew.bfn], (size_t)N, &l);
        if (r == NN_OK)
            r = nn__args(l, "mmmmii", &g->nodes[n->in[0]].buf, &g->nodes[n->in[1]].buf, &g->nodes[n->in[2]].buf, &n->buf, N,
                         n->a.ew.wrt);
        return r;
    }
    r = nn__launch_kernel(g, id, "elementwise", "binary_grad", (size_t)N, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmmiiii888", &g->nodes[n->in[0]].buf, &g->nodes[n->in[1]].buf, &g->nodes[n->in[2]].buf, &n->buf,
                     N, n->a.ew.bfn, n->a.ew.wrt, bc.nd, dims, st[0], st[1]);
    return r;
}

static nn_result nn__launch_where(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int N = (int)n->numel, dims[8], st[3][8];
    nn__bcast bc;
    nn__launch *l = NULL;
    nn_result r;
    nn__bcast_node(g, n, 3, &bc);
    nn__bcast_ints(&bc, dims, st);
    r = nn__launch_kernel(g, id, "elementwise", "where_bcast", (size_t)N, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmmii8888", &g->nodes[n->in[0]].buf, &g->nodes[n->in[1]].buf, &g->nodes[n->in[2]].buf, &n->buf,
                     N, bc.nd, dims, st[0], st[1], st[2]);
    return r;
}

static nn_result nn__launch_masked_fill(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int N = (int)n->numel, dims[8], st[3][8];
    nn__bcast bc;
    nn__launch *l = NULL;
    nn_result r;
    nn__bcast_node(g, n, 2, &bc);
    nn__bcast_ints(&bc, dims, st);
    r = nn__launch_kernel(g, id, "elementwise", "masked_fill_bcast", (size_t)N, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmifii888", &g->nodes[n->in[0]].buf, &g->nodes[n->in[1]].buf, &n->buf, N, (double)n->a.ew.s,
                     n->a.ew.invert, bc.nd, dims, st[0], st[1]);
    return r;
}

static nn_result nn__launch_expand(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int N = (int)n->numel, dims[8], st[3][8];
    nn__bcast bc;
    nn__launch *l = NULL;
    nn_result r;
    nn__bcast_node(g, n, 1, &bc);
    nn__bcast_ints(&bc, dims, st);
    r = nn__launch_kernel(g, id, "elementwise", "expand_bcast", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmii88", &g->nodes[n->in[0]].buf, &n->buf, N, bc.nd, dims, st[0]);
    return r;
}

/* One work item per element of the result, adding its elements of x in index order (the
   CPU backend's order: the same bits). */
static nn_result nn__launch_sum_to(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int M = (int)n->numel, dims[8], st[3][8], xs[8], d;
    nn__bcast bc;
    nn__launch *l = NULL;
    nn_result r;
    nn__sum_to_geometry(g, n, &bc);
    nn__bcast_ints(&bc, dims, st);
    memset(xs, 0, sizeof xs);
    for (d = bc.nd - 1; d >= 0; d--) xs[d] = d == bc.nd - 1 ? 1 : xs[d + 1] * dims[d + 1];
    r = nn__launch_kernel(g, id, "elementwise", "sum_to", (size_t)M, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmiii888", &g->nodes[n->in[0]].buf, &n->buf, M, (int)(bc.n / M), bc.nd, dims, st[0], xs);
    return r;
}

static nn_result nn__launch_scale(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_kernel(g, id, "elementwise", "scale", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmif", &g->nodes[in[0]].buf, y, N, (double)n->a.ew.s);
    return r;
}

static nn_result nn__launch_unary(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    char kname[64];
    snprintf(kname, sizeof kname, "%s_forward", nn__unary_names[n->a.ew.fn]);
    r = nn__launch_kernel(g, id, "elementwise", kname, (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmiff", &g->nodes[in[0]].buf, y, N, (double)n->a.ew.param[0], (double)n->a.ew.param[1]);
    return r;
}

static nn_result nn__launch_unary_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    char kname[64];
    snprintf(kname, sizeof kname, "%s_backward", nn__unary_names[n->a.ew.fn]);
    r = nn__launch_kernel(g, id, "elementwise", kname, (size_t)N, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmiff", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, y, N, (double)n->a.ew.param[0], (double)n->a.ew.param[1]);
    return r;
}

static nn_result nn__launch_prelu(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__buf *x = &g->nodes[n->in[0]].buf, *w = &g->nodes[n->in[1]].buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r;
    if (n->op == NN__OP_PRELU) {
        r = nn__launch_kernel(g, id, "elementwise", "prelu_forward", (size_t)N, &l);
        if (r == NN_OK) r = nn__args(l, "mmmiii", x, w, &n->buf, N, n->a.ew.C, n->a.ew.S);
        return r;
    }
    r = nn__launch_kernel(g, id, "elementwise", "prelu_backward_input", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmmmiii", x, w, &g->nodes[n->in[2]].buf, &n->buf, N, n->a.ew.C, n->a.ew.S);
    return r;
}

/* dw: the partial sums [N, C] into the scratch, then each channel's in n order */
static nn_result nn__launch_prelu_dw(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int C = n->a.ew.C, S = n->a.ew.S, N = n->a.ew.N;
    nn__launch *l = NULL;
    nn_result r;
    r = nn__launch_kernel(g, id, "elementwise", "prelu_backward_weight_part", (size_t)N * (size_t)C, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmiii", &g->nodes[n->in[0]].buf, &g->nodes[n->in[1]].buf, &n->scratch_buf, N, C, S);
    if (r == NN_OK) r = nn__launch_kernel(g, id, "elementwise", "prelu_backward_weight", (size_t)C, &l);
    if (r == NN_OK) r = nn__args(l, "mmii", &n->scratch_buf, &n->buf, N, C);
    return r;
}


static nn_result nn__launch_accumulate(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_kernel(g, id, "elementwise", "accumulate", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmi", &g->nodes[in[0]].buf, y, N);
    return r;
}

static nn_result nn__launch_fill(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_kernel(g, id, "elementwise", "fill", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mif", y, N, (double)n->a.ew.s);
    return r;
}
