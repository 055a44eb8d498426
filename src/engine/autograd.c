/* Reverse-mode autograd: which nodes need a gradient, and the rules of src/ops/ called
   from the loss backwards. Each rule adds the backward ops of one node. */
#include "../base/internal.h"
#include "../base/registry.h"

static void nn__acc_grad(nn_graph *g, int x, nn_tensor gx) {
    if (gx.id < 0) return;
    if (g->nodes[gx.id].dtype != g->nodes[x].dtype && g->nodes[x].dtype != NN_I32) /* a gradient has its tensor's dtype */
        gx = nn__op1(g, NN__OP_CAST, g->nodes[x].dtype, g->nodes[x].shape, gx.id);
    if (gx.id < 0) return;
    if (g->nodes[x].grad < 0) g->nodes[x].grad = gx.id;
    else g->nodes[x].grad = nn__op2(g, NN__OP_ADD, g->nodes[x].dtype, g->nodes[x].shape, g->nodes[x].grad, gx.id).id;
}

/* x's float32 source when x is a 16-bit copy (nn_to_dtype: a precision policy's copy of a
   master weight or bias) of a float32 tensor that needs a gradient, else -1. A rule whose
   gradient for x comes out of float32 sums (a matmul's, a broadcast sum's) gives it to the
   source as it is, not rounded to 16 bits and widened again by the copy's rule. */
static NN__MAYBE_UNUSED int nn__f32_source(const nn_graph *g, int x) {
    const nn__node *c = &g->nodes[x];
    if (c->op == NN__OP_CAST && nn__dtype_half(c->dtype) && g->nodes[c->in[0]].dtype == NN_F32 &&
        g->nodes[c->in[0]].needs_grad)
        return c->in[0];
    return -1;
}

/* The rule of an op whose input's gradient is one node of grad_op on dy alone, with the
   forward node's attributes and its input's shape (pad2d, upsample2d, avg_pool2d, ...). */
static void nn__grad_by_op(nn_graph *g, int id, int grad_op) {
    NN__GRAD_RULE(g, id);
    nn_tensor t = nn__op1(g, grad_op, NN_F32, g->nodes[a].shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
}

/* The rule of ops through which no gradient flows further (gradient ops, constants). */
static void nn__grad_none(nn_graph *g, int id) {
    (void)g;
    (void)id;
}

/* Adds the backward ops for d(loss)/d(every node the loss depends on through a
   differentiable path); the user's nodes are ids below n_user. */
static void nn__autograd(nn_graph *g, int loss, int n_user) {
    int i, k;
    for (i = 0; i < n_user; i++) { /* which nodes does the loss need gradients through? */
        nn__node *n = &g->nodes[i];
        unsigned flags = nn__op(n->op)->flags;
        if (n->op == NN__OP_PARAM) n->needs_grad = !g->params->p[n->param].buffer;
        else if (n->op == NN__OP_INPUT) n->needs_grad = n->requires_grad && n->dtype != NN_I32; /* float32 and 16-bit: a gradient of its dtype */
        else if (!(flags & NN__OPF_NO_GRAD))
            for (k = 0; k < n->n_in; k++) n->needs_grad |= g->nodes[n->in[k]].needs_grad;
    }
    if (!g->nodes[loss].needs_grad) return;
    {
        int seed = nn__new_node(g, NN__OP_FILL, NN_F32, g->nodes[loss].shape, NULL, 0);
        if (seed < 0) return;
        g->nodes[seed].a.ew.s = 1.0f;
        g->nodes[loss].grad = seed;
    }
    for (i = loss; i >= 0 && g->status == NN_OK; i--) {
        nn__node *n = &g->nodes[i];
        if (n->needs_grad && n->grad >= 0 && !(nn__op(n->op)->flags & NN__OPF_LEAF)) nn__op(n->op)->grad(g, i);
    }
}
