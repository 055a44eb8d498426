/* The elementwise ops: builders (shape rules), autograd rules, CPU bodies and device plans. */
#include "../nn_internal.h"
#include "../nn_ops.h"
#include "../../kernels/activation.h"

static nn_tensor nn__binary(nn_graph *g, int op, const char *opname, nn_tensor a, nn_tensor b) {
    nn_tensor in[2];
    nn__node *na, *nb;
    int k, fits;
    in[0] = a;
    in[1] = b;
    if (!nn__check(g, opname, 2, in)) return nn__tensor(-1);
    if (!nn__expect_f32(g, opname, a, "a") || !nn__expect_f32(g, opname, b, "b")) return nn__tensor(-1);
    na = nn__n(g, a);
    nb = nn__n(g, b);
    fits = nb->shape.ndim <= na->shape.ndim || nb->numel == 1;
    for (k = 1; fits && k <= nb->shape.ndim && nb->numel != 1; k++)
        fits = nb->shape.dim[nb->shape.ndim - k] == na->shape.dim[na->shape.ndim - k];
    if (!fits) {
        char sa[128], sb[128];
        nn__shape_str(&na->shape, sa, sizeof sa);
        nn__shape_str(&nb->shape, sb, sizeof sb);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: shapes a %s and b %s do not fit (b must match a's trailing dims)",
                           opname, sa, sb);
    }
    return nn__op2(g, op, NN_F32, na->shape, a.id, b.id);
}

NN_API nn_tensor nn_add(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_ADD, "nn_add", a, b); }
NN_API nn_tensor nn_sub(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_SUB, "nn_sub", a, b); }
NN_API nn_tensor nn_mul(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_MUL, "nn_mul", a, b); }

NN_API nn_tensor nn_scale(nn_graph *g, nn_tensor a, float s) {
    nn_tensor t;
    if (!nn__check(g, "nn_scale", 1, &a) || !nn__expect_f32(g, "nn_scale", a, "x")) return nn__tensor(-1);
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
static nn_tensor nn__activation(nn_graph *g, const char *opname, int fn, int n_params, int ok, const char *requirement,
                                float p0, float p1, nn_tensor x) {
    nn_tensor t;
    if (!nn__check(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    if (!ok && n_params < 2)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: p0 = %g (the parameter after x) fails %s", opname, p0,
                           requirement);
    if (!ok)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: p0 = %g, p1 = %g (the parameters after x) fail %s", opname,
                           p0, p1, requirement);
    t = nn__op1(g, NN__OP_UNARY, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.ew.fn = fn;
        g->nodes[t.id].a.ew.param[0] = p0;
        g->nodes[t.id].a.ew.param[1] = p1;
    }
    return t;
}

/* The builders nn_relu, nn_elu, ...: one for each line of kernels/activation.h, with as
   many float parameters as its line says (their names and docs are in src/nn_api.h). */
#define NN__ACT_BUILDER0(E, name, valid)                                                                    \
    NN_API nn_tensor nn_##name(nn_graph *g, nn_tensor x) {                                                  \
        return nn__activation(g, "nn_" #name, NN__U_##E, 0, (valid), #valid, 0.0f, 0.0f, x);                \
    }
#define NN__ACT_BUILDER1(E, name, valid)                                                                    \
    NN_API nn_tensor nn_##name(nn_graph *g, nn_tensor x, float p0) {                                        \
        return nn__activation(g, "nn_" #name, NN__U_##E, 1, (valid), #valid, p0, 0.0f, x);                  \
    }
#define NN__ACT_BUILDER2(E, name, valid)                                                                    \
    NN_API nn_tensor nn_##name(nn_graph *g, nn_tensor x, float p0, float p1) {                              \
        return nn__activation(g, "nn_" #name, NN__U_##E, 2, (valid), #valid, p0, p1, x);                    \
    }
#define NN__X(E, name, params, valid, fwd, der) NN__ACT_BUILDER##params(E, name, valid)
NN__ACTIVATIONS(NN__X)
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

/* PyTorch's nn.PReLU(num_parameters): NAME.weight [num_parameters], all 0.25. */
NN_API nn_tensor nn_prelu_layer(nn_graph *g, nn_tensor x, int64_t num_parameters, const char *name) {
    char wn[256];
    nn_init init;
    if (!nn__check(g, "nn_prelu_layer", 1, &x)) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_prelu_layer: needs a name (at most 200 chars)");
    if (num_parameters < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_prelu_layer %s: num_parameters = %lld, not >= 1", name,
                           (long long)num_parameters);
    init.kind = NN_INIT_CONSTANT;
    init.a = 0.25f;
    init.b = 0.0f;
    snprintf(wn, sizeof wn, "%s.weight", name);
    return nn_prelu(g, x, nn_param(g, wn, nn_shape1(num_parameters), init));
}

NN_API nn_tensor nn_dropout(nn_graph *g, nn_tensor x, float p) {
    nn_tensor t;
    if (!nn__check(g, "nn_dropout", 1, &x) || !nn__expect_f32(g, "nn_dropout", x, "x")) return nn__tensor(-1);
    if (!(p >= 0.0f && p < 1.0f)) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_dropout: p = %g is outside [0, 1)", p);
    if (g->eval || p == 0.0f) return x;
    t = nn__op1(g, NN__OP_DROPOUT, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.ew.p = p;
        g->nodes[t.id].a.ew.key = t.id; /* the mask's key, shared with the backward op */
    }
    return t;
}


NN_API nn_tensor nn_accumulate(nn_graph *g, nn_tensor x) {
    nn_tensor t;
    if (!nn__check(g, "nn_accumulate", 1, &x) || !nn__expect_f32(g, "nn_accumulate", x, "x")) return nn__tensor(-1);
    t = nn__op1(g, NN__OP_ACCUMULATE, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) g->nodes[t.id].is_output = 1;
    return t;
}


/* ---- autograd rules ---- */

/* The gradient of a broadcast operand b from a gradient of a's shape. */
static nn_tensor nn__reduce_to(nn_graph *g, nn_tensor gy, int b) {
    if (g->nodes[gy.id].numel == g->nodes[b].numel) return gy;
    return nn__op1(g, NN__OP_SUM_LEAD, NN_F32, g->nodes[b].shape, gy.id);
}

static void nn__grad_add_sub(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (ga) nn__acc_grad(g, a, gy);
    if (gb) {
        t = nn__reduce_to(g, gy, b);
        if (n.op == NN__OP_SUB) {
            t = nn__scale_op(g, g->nodes[b].shape, t.id, -1.0f);
        }
        nn__acc_grad(g, b, t);
    }
    return;
}

static void nn__grad_mul(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (ga) nn__acc_grad(g, a, nn__op2(g, NN__OP_MUL, NN_F32, n.shape, gy.id, b));
    if (gb) nn__acc_grad(g, b, nn__reduce_to(g, nn__op2(g, NN__OP_MUL, NN_F32, n.shape, gy.id, a), b));
    return;
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

static void nn__grad_dropout(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    t = nn__op1(g, NN__OP_DROPOUT, NN_F32, n.shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
    return;
}

/* ---- CPU bodies ---- */

static nn_result nn__cpu_binary(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__binary_forward(n->op, y, NN__F(in[0]), NN__F(in[1]), N, g->nodes[in[1]].numel);
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
    nn__unary_forward(n->a.ew.fn, n->a.ew.param, y, NN__F(in[0]), N); return NN_OK;

}

static nn_result nn__cpu_unary_grad(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__unary_backward(n->a.ew.fn, n->a.ew.param, y, NN__F(in[0]), NN__F(in[1]), N); return NN_OK;

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

/* The device's partial sums, one per (n, c) (src/nn_cpu.c sums in the same order). */
static void nn__plan_prelu_dw(nn_graph *g, nn__node *n) {
    (void)g;
    n->scratch = (int64_t)n->a.ew.N * n->a.ew.C;
}

static nn_result nn__cpu_dropout(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__dropout_forward(y, NN__F(in[0]), N, n->a.ew.p, g->seed, n->a.ew.key, g->step); return NN_OK;

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
    NN__ACTIVATIONS(NN__X)
#undef NN__X
};

static void nn__update_dropout(nn_graph *g, nn__launch *l) {
    nn__arg_u(l, 0, (unsigned)g->step);
    nn__arg_u(l, 1, (unsigned)(g->step >> 32));
}

/* ---- device plans: launches of kernels/FAMILY.cl ---- */

static nn_result nn__dev_binary(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_add(g, id, "elementwise", n->op == NN__OP_ADD ? "add" : n->op == NN__OP_SUB ? "sub" : "mul", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmmii", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, y, N, (int)g->nodes[in[1]].numel);
    return r;
}

static nn_result nn__dev_scale(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_add(g, id, "elementwise", "scale", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmif", &g->nodes[in[0]].buf, y, N, (double)n->a.ew.s);
    return r;
}

static nn_result nn__dev_unary(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    char kname[64];
    snprintf(kname, sizeof kname, "%s_forward", nn__unary_names[n->a.ew.fn]);
    r = nn__launch_add(g, id, "elementwise", kname, (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmiff", &g->nodes[in[0]].buf, y, N, (double)n->a.ew.param[0], (double)n->a.ew.param[1]);
    return r;
}

static nn_result nn__dev_unary_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    char kname[64];
    snprintf(kname, sizeof kname, "%s_backward", nn__unary_names[n->a.ew.fn]);
    r = nn__launch_add(g, id, "elementwise", kname, (size_t)N, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmiff", &g->nodes[in[0]].buf, &g->nodes[in[1]].buf, y, N, (double)n->a.ew.param[0], (double)n->a.ew.param[1]);
    return r;
}

static nn_result nn__dev_prelu(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__buf *x = &g->nodes[n->in[0]].buf, *w = &g->nodes[n->in[1]].buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r;
    if (n->op == NN__OP_PRELU) {
        r = nn__launch_add(g, id, "elementwise", "prelu_forward", (size_t)N, &l);
        if (r == NN_OK) r = nn__args(l, "mmmiii", x, w, &n->buf, N, n->a.ew.C, n->a.ew.S);
        return r;
    }
    r = nn__launch_add(g, id, "elementwise", "prelu_backward_input", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmmmiii", x, w, &g->nodes[n->in[2]].buf, &n->buf, N, n->a.ew.C, n->a.ew.S);
    return r;
}

/* dw: the partial sums [N, C] into the scratch, then each channel's in n order */
static nn_result nn__dev_prelu_dw(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int C = n->a.ew.C, S = n->a.ew.S, N = n->a.ew.N;
    nn__launch *l = NULL;
    nn_result r;
    r = nn__launch_add(g, id, "elementwise", "prelu_backward_weight_part", (size_t)N * (size_t)C, &l);
    if (r == NN_OK)
        r = nn__args(l, "mmmiii", &g->nodes[n->in[0]].buf, &g->nodes[n->in[1]].buf, &n->scratch_buf, N, C, S);
    if (r == NN_OK) r = nn__launch_add(g, id, "elementwise", "prelu_backward_weight", (size_t)C, &l);
    if (r == NN_OK) r = nn__args(l, "mmii", &n->scratch_buf, &n->buf, N, C);
    return r;
}

static nn_result nn__dev_dropout(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_add(g, id, "random", "dropout", (size_t)N, &l);
    if (r != NN_OK) return r;
    l->update = nn__update_dropout;
    return nn__args(l, "mmifuuu@u@u", &g->nodes[in[0]].buf, y, N, (double)n->a.ew.p, (unsigned)g->seed,
                       (unsigned)(g->seed >> 32), (unsigned)n->a.ew.key, 0u, 0u);
}

static nn_result nn__dev_accumulate(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_add(g, id, "elementwise", "accumulate", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mmi", &g->nodes[in[0]].buf, y, N);
    return r;
}

static nn_result nn__dev_fill(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__buf *y = &n->buf;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    r = nn__launch_add(g, id, "elementwise", "fill", (size_t)N, &l);
    if (r == NN_OK) r = nn__args(l, "mif", y, N, (double)n->a.ew.s);
    return r;
}
