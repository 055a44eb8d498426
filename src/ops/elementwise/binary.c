/* The elementwise family's binary ops: y = f(a, b) with a and b broadcast to y's shape
   (broadcast.c), f one of kernels/activation.h's NN__BINARY_FNS. ADD, SUB and MUL are ops
   of their own (the engine and other families build them: gradient sums, weights); div,
   minimum, maximum and pow are op BINARY, the comparisons and logical ops op COMPARE (no
   gradient), each with the function in the node's a.ew.bfn. */
#include "../../base/internal.h"
#include "../../base/registry.h"
#include "../../../kernels/kargs.h"
#include "../../../kernels/elementwise_args.h"
#include "../../../kernels/activation.h"

/* ==== shared by every binary op: the builder, the CPU body and the launch, which differ
   only by the function (the ops' registry aliases name them) ==== */

/* A binary node (op ADD, SUB, MUL, BINARY or COMPARE with function fn) of a and b
   broadcast. */
static nn_tensor nn__binary_fn(nn_graph *g, int op, int fn, const char *opname, nn_tensor a, nn_tensor b) {
    static const char *const names[2] = {"a", "b"};
    nn_tensor in[2], t;
    nn_shape out;
    in[0] = a;
    in[1] = b;
    nn_dtype dt = NN_F32;
    if (!nn__check0(g, opname, 2, in)) return nn__tensor(-1);
    if (op != NN__OP_COMPARE && (nn__dtype_half(nn__n(g, a)->dtype) || nn__dtype_half(nn__n(g, b)->dtype)) &&
        nn__n(g, a)->dtype != NN_I32 && nn__n(g, b)->dtype != NN_I32) {
        /* 16-bit storage: PyTorch's type promotion. One 16-bit dtype: the op runs there
           (float32 arithmetic, rounded once); bfloat16 with float32 or float16: float32,
           the 16-bit operands converted first */
        if (nn__n(g, a)->dtype == nn__n(g, b)->dtype) dt = nn__n(g, a)->dtype;
        else {
            if (nn__dtype_half(nn__n(g, a)->dtype)) a = nn_to_dtype(g, a, NN_F32);
            if (nn__dtype_half(nn__n(g, b)->dtype)) b = nn_to_dtype(g, b, NN_F32);
            if (a.id < 0 || b.id < 0) return nn__tensor(-1);
        }
    }
    if (dt == NN_F32 && (!nn__expect_f32(g, opname, a, "a") || !nn__expect_f32(g, opname, b, "b"))) return nn__tensor(-1);
    if (!nn__broadcast_shape(g, opname, 2, in, names, &out)) return nn__tensor(-1);
    t = nn__op2(g, op, dt, out, a.id, b.id);
    if (t.id >= 0) g->nodes[t.id].a.ew.bfn = fn;
    return t;
}

static nn_tensor nn__binary(nn_graph *g, int op, const char *opname, nn_tensor a, nn_tensor b) {
    return nn__binary_fn(g, op, op == NN__OP_ADD ? NN__B_ADD : op == NN__OP_SUB ? NN__B_SUB : NN__B_MUL, opname, a, b);
}

/* The function of a binary node: ADD, SUB and MUL by their op, the others by a.ew.bfn. */
static int nn__binary_node_fn(const nn__node *n) {
    if (n->op == NN__OP_ADD) return NN__B_ADD;
    if (n->op == NN__OP_SUB) return NN__B_SUB;
    return n->op == NN__OP_MUL ? NN__B_MUL : n->a.ew.bfn;
}

/* 16-bit storage (NN_BF16, NN_F16): a, b (and dy) and the output share one dtype (the
   builders see to it). The CPU bodies run src/cpu/elementwise.c's nn__binary16_run; the
   kernels read and write through kernels/storage.h in the program built for the dtype
   (l->store). */

static nn_result nn__cpu_binary(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__bcast_node(g, n, 2, &bc);
    if (nn__dtype_half(n->dtype)) {
        nn__binary16_run(g->ctx->threads, nn__binary_node_fn(n), 0, 0, n->dtype, n->buf.host, g->nodes[n->in[0]].buf.host,
                         g->nodes[n->in[1]].buf.host, NULL, &bc);
        return NN_OK;
    }
    nn__binary_forward(g->ctx->threads, nn__binary_node_fn(n), n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]), &bc);
    return NN_OK;
}

/* kernels/elementwise.cl's per-function kernels for same-shape operands, by NN__B_* */
static const char *const nn__same_fwd[] = {
#define NN__X(E, NAME, FWD, DA, DB) "binary_same_" #NAME,
    NN__BINARY_FNS(NN__X)
#undef NN__X
};

/* Same shapes: the function's own kernel; one flat dim otherwise (a one-element operand):
   binary_flat; a row broadcast ([rows, C] with [C], either way): binary_row; anything else
   binary_bcast. */
/* The fields every binary kernel takes: operands a and b, output y, N elements */
#define NN__BINARY_KFIELDS(k) \
    do {                      \
        (k).a = a;            \
        (k).b = b;            \
        (k).y = &n->buf;      \
        (k).n = N;            \
    } while (0)

static nn_result nn__launch_binary(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__buf *a = &g->nodes[n->in[0]].buf, *b = &g->nodes[n->in[1]].buf;
    int fn = nn__binary_node_fn(n);
    int N = (int)n->numel, dims[8], st[3][8];
    nn__bcast bc;
    nn__bcast_node(g, n, 2, &bc);
    nn__bcast_ints(&bc, dims, st);
    if (bc.nd == 1 && st[0][0] == 1 && st[1][0] == 1) {
        NN__KSTART(binary_same, "elementwise", nn__same_fwd[fn], N);
        l->store = n->dtype;
        NN__BINARY_KFIELDS(k);
        return nn__kargs_binary_same(l, &k);
    }
    if (bc.nd == 2 && st[0][1] == 1 && st[1][1] == 1 &&
        ((st[0][0] == dims[1] && st[1][0] == 0) || (st[0][0] == 0 && st[1][0] == dims[1]))) {
        NN__KSTART(binary_row, "elementwise", "binary_row", N);
        l->store = n->dtype;
        NN__BINARY_KFIELDS(k);
        k.fn = fn;
        k.C = dims[1];
        k.arow = st[0][0] == 0;
        return nn__kargs_binary_row(l, &k);
    }
    if (bc.nd == 1) {
        NN__KSTART(binary_flat, "elementwise", "binary_flat", N);
        l->store = n->dtype;
        NN__BINARY_KFIELDS(k);
        k.fn = fn;
        k.sa = st[0][0];
        k.sb = st[1][0];
        return nn__kargs_binary_flat(l, &k);
    } else {
        NN__KSTART(binary_bcast, "elementwise", "binary_bcast", N);
        l->store = n->dtype;
        NN__BINARY_KFIELDS(k);
        k.fn = fn;
        k.nd = bc.nd;
        k.dims = dims;
        k.sa = st[0];
        k.sb = st[1];
        return nn__kargs_binary_bcast(l, &k);
    }
}

/* ==== add: y = a + b (torch.add); its gradient sums gy to each operand's shape (SUM_TO),
   sub's too with b's negated ==== */

NN_API nn_tensor nn_add(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_ADD, "nn_add", a, b); }

#define nn__cpu_add nn__cpu_binary
#define nn__launch_add nn__launch_binary
#define nn__grad_add nn__grad_add_sub
#define nn__plan_add nn__no_plan

/* Operand x's gradient from t at the output's shape: t summed to x's shape (nn__sum_to_op:
   nothing when the shapes are the same), times s when s is not 1. A 16-bit t is summed by
   SUM_TO as it is (16 bits read, float32 sums) or widened to float32 for the scale alone
   (SCALE runs in float32); the float32 result goes to x's float32 source where x is a
   policy's 16-bit copy (nn__f32_source: a bias), else back to x's dtype (nn__acc_grad). */
static nn_tensor nn__binary_grad_to(nn_graph *g, nn_tensor t, int x, float s) {
    nn_dtype dt;
    if (t.id < 0) return t;
    dt = g->nodes[t.id].dtype;
    if (!nn__dtype_half(dt)) {
        t = nn__sum_to_op(g, t.id, g->nodes[x].shape);
        return s != 1.0f && t.id >= 0 ? nn__scale_op(g, g->nodes[x].shape, t.id, s) : t;
    }
    if (s == 1.0f && nn__shape_eq(&g->nodes[t.id].shape, &g->nodes[x].shape)) return t;
    if (!nn__shape_eq(&g->nodes[t.id].shape, &g->nodes[x].shape)) t = nn__sum_to_op(g, t.id, g->nodes[x].shape);
    else t = nn__op1(g, NN__OP_CAST, NN_F32, g->nodes[t.id].shape, t.id);
    if (s != 1.0f && t.id >= 0) t = nn__scale_op(g, g->nodes[x].shape, t.id, s);
    return t;
}

/* x's gradient t (nn__binary_grad_to): a float32 one to x's float32 source when there is
   one, else to x (converted to x's dtype there) */
static void nn__binary_acc(nn_graph *g, int x, nn_tensor t) {
    int src = nn__f32_source(g, x);
    nn__acc_grad(g, src >= 0 && t.id >= 0 && g->nodes[t.id].dtype == NN_F32 ? src : x, t);
}

/* Gradients of broadcast operands: the gradient at the output's shape, summed to the
   operand's. */
static void nn__grad_add_sub(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (ga) nn__binary_acc(g, a, nn__binary_grad_to(g, gy, a, 1.0f));
    if (gb) nn__binary_acc(g, b, nn__binary_grad_to(g, gy, b, n.op == NN__OP_SUB ? -1.0f : 1.0f));
}

/* ==== sub: y = a - b (torch.sub) ==== */

NN_API nn_tensor nn_sub(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_SUB, "nn_sub", a, b); }

#define nn__cpu_sub nn__cpu_binary
#define nn__launch_sub nn__launch_binary
#define nn__grad_sub nn__grad_add_sub
#define nn__plan_sub nn__no_plan

/* ==== mul: y = a * b (torch.mul); da = sum_to(gy * b), db = sum_to(gy * a) ==== */

NN_API nn_tensor nn_mul(nn_graph *g, nn_tensor a, nn_tensor b) { return nn__binary(g, NN__OP_MUL, "nn_mul", a, b); }

#define nn__cpu_mul nn__cpu_binary
#define nn__launch_mul nn__launch_binary
#define nn__plan_mul nn__no_plan

static void nn__grad_mul(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (ga) {
        t = nn__op2(g, NN__OP_MUL, n.dtype, n.shape, gy.id, b);
        nn__acc_grad(g, a, nn__binary_grad_to(g, t, a, 1.0f));
    }
    if (gb) {
        t = nn__op2(g, NN__OP_MUL, n.dtype, n.shape, gy.id, a);
        nn__acc_grad(g, b, nn__binary_grad_to(g, t, b, 1.0f));
    }
}

/* ==== binary: y = f(a, b) for div, minimum, maximum, pow (torch.div, torch.minimum, ...);
   BINARY_GRAD (a, b, gy) is gy * df/da or df/db (a.ew.wrt) at y's shape, then summed to
   the operand's ==== */

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
#define nn__plan_binary nn__no_plan
#define nn__grad_binary_grad nn__grad_none
#define nn__plan_binary_grad nn__no_plan

static void nn__grad_binary(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    int k;
    for (k = 0; k < 2; k++) {
        int x = k ? b : a;
        nn_tensor t;
        if (!(k ? gb : ga)) continue;
        t = nn__op3(g, NN__OP_BINARY_GRAD, n.dtype, n.shape, a, b, gy.id);
        if (t.id < 0) return;
        g->nodes[t.id].a = n.a;
        g->nodes[t.id].a.ew.wrt = k;
        nn__acc_grad(g, x, nn__binary_grad_to(g, t, x, 1.0f));
    }
}

/* (a, b, gy) */
static nn_result nn__cpu_binary_grad(nn_graph *g, nn__node *n) {
    nn__bcast bc;
    nn__bcast_node(g, n, 2, &bc);
    if (nn__dtype_half(n->dtype)) {
        nn__binary16_run(g->ctx->threads, n->a.ew.bfn, 1, n->a.ew.wrt, n->dtype, n->buf.host, g->nodes[n->in[0]].buf.host,
                         g->nodes[n->in[1]].buf.host, g->nodes[n->in[2]].buf.host, &bc);
        return NN_OK;
    }
    nn__binary_backward(g->ctx->threads, n->a.ew.bfn, n->a.ew.wrt, n->buf.host, NN__F(n->in[0]), NN__F(n->in[1]),
                        NN__F(n->in[2]), &bc);
    return NN_OK;
}

/* kernels/elementwise.cl's per-function gradient kernels for same-shape operands */
static const char *const nn__same_grad[] = {
#define NN__X(E, NAME, FWD, DA, DB) "binary_same_grad_" #NAME,
    NN__BINARY_FNS(NN__X)
#undef NN__X
};

/* The fields every binary gradient kernel takes: operands a and b, dy, dx, N elements, wrt */
#define NN__BINARY_GRAD_KFIELDS(k)             \
    do {                                       \
        (k).a = &g->nodes[n->in[0]].buf;       \
        (k).b = &g->nodes[n->in[1]].buf;       \
        (k).dy = &g->nodes[n->in[2]].buf;      \
        (k).dx = &n->buf;                      \
        (k).n = N;                             \
        (k).wrt = n->a.ew.wrt;                 \
    } while (0)

static nn_result nn__launch_binary_grad(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    int N = (int)n->numel, dims[8], st[3][8];
    nn__bcast bc;
    nn__bcast_node(g, n, 2, &bc);
    nn__bcast_ints(&bc, dims, st);
    if (bc.nd == 1 && st[0][0] == 1 && st[1][0] == 1) { /* same shapes: the function's own kernel */
        NN__KSTART(binary_same_grad, "elementwise", nn__same_grad[n->a.ew.bfn], N);
        l->store = n->dtype;
        NN__BINARY_GRAD_KFIELDS(k);
        return nn__kargs_binary_same_grad(l, &k);
    } else {
        NN__KSTART(binary_grad, "elementwise", "binary_grad", N);
        l->store = n->dtype;
        NN__BINARY_GRAD_KFIELDS(k);
        k.fn = n->a.ew.bfn;
        k.nd = bc.nd;
        k.dims = dims;
        k.sa = st[0];
        k.sb = st[1];
        return nn__kargs_binary_grad(l, &k);
    }
}

/* ==== compare: y = f(a, b) as a float 0/1 mask for eq, ne, lt, le, gt, ge, logical_and,
   logical_or (torch.eq, ...; nonzero is true); no gradient ==== */

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

#define nn__cpu_compare nn__cpu_binary
#define nn__launch_compare nn__launch_binary
#define nn__grad_compare nn__grad_none
#define nn__plan_compare nn__no_plan
