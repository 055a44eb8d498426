/* The conv family's shared gradient rule and its per-channel bias with its gradient, x
   [N, C, ...] with b [C]: used by the convolutions of src/ops/conv/conv2d.c and conv3d.c, so
   they come first. */
#include "../../base/internal.h"
#include "../../base/registry.h"

/* ==== shared by the convolutions: the rule of conv2d and conv3d, inputs (x, w[, b]): dx by
   dx_op (w, dy), dw by dw_op (x, dy), each with the forward's attributes, db = channel_sum(dy) ==== */

static void nn__grad_conv(nn_graph *g, int id, int dx_op, int dw_op) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (ga) {
        t = nn__op2(g, dx_op, g->nodes[a].dtype, g->nodes[a].shape, b, gy.id); /* a 16-bit conv's in 16 bits */
        if (t.id >= 0) g->nodes[t.id].a = n.a;
        nn__acc_grad(g, a, t);
    }
    if (gb) {
        t = nn__op2(g, dw_op, g->nodes[b].dtype, g->nodes[b].shape, a, gy.id);
        if (t.id >= 0) g->nodes[t.id].a = n.a;
        nn__acc_grad(g, b, t);
    }
    if (n.n_in > 2 && g->nodes[n.in[2]].needs_grad)
        nn__acc_grad(g, n.in[2], nn__op1(g, NN__OP_CHANNEL_SUM, NN_F32, g->nodes[n.in[2]].shape, gy.id));
}

/* ==== channel_bias: y [N, C, ...] = x + b[c] with b [C] (nn_conv_transpose2d's bias);
   its gradient is gy for x and channel_sum(gy) [C] for b ==== */

static nn_tensor nn__channel_bias(nn_graph *g, const char *op, nn_tensor x, nn_tensor b) {
    nn_tensor in[2];
    nn__node *nx, *nb;
    in[0] = x;
    in[1] = b;
    if (!nn__check(g, op, 2, in)) return nn__tensor(-1);
    nx = nn__n(g, x);
    nb = nn__n(g, b);
    if (nb->dtype != NN_F32 || nb->shape.ndim != 1 || nx->shape.ndim < 2 || nb->shape.dim[0] != nx->shape.dim[1]) {
        char sb[128], sx[128];
        nn__shape_str(&nb->shape, sb, sizeof sb);
        nn__shape_str(&nx->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: bias %s must be float32 [C] for an output %s", op, sb, sx);
    }
    return nn__op2(g, NN__OP_CHANNEL_BIAS, NN_F32, nx->shape, x.id, b.id);
}

#define nn__plan_channel_bias nn__no_plan

static void nn__grad_channel_bias(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (ga) nn__acc_grad(g, a, gy);
    if (gb) nn__acc_grad(g, b, nn__op1(g, NN__OP_CHANNEL_SUM, NN_F32, g->nodes[b].shape, gy.id));
    return;
}

static nn_result nn__cpu_channel_bias(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    int64_t C = n->shape.dim[1], S = N / (n->shape.dim[0] * C), k, j;
    const float *x = NN__F(in[0]), *b = NN__F(in[1]);
    for (k = 0; k < N / S; k++)
        for (j = 0; j < S; j++) y[k * S + j] = x[k * S + j] + b[k % C];
    return NN_OK;
}

/* elementwise.cl's channel_bias, one work-item per element */
static nn_result nn__launch_channel_bias(nn_graph *g, int id) {
    NN__KLAUNCH(channel_bias, "elementwise", "channel_bias", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.b = &g->nodes[n->in[1]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.C = (int)n->shape.dim[1];
    k.S = (int)(n->numel / (n->shape.dim[0] * n->shape.dim[1]));
    return nn__kargs_channel_bias(l, &k);
}

/* ==== channel_sum: y [C] = sum of x [N, C, ...] over N and the spatial dims, in a fixed
   order (the gradient of every conv bias; built by the gradient rules only) ==== */

#define nn__grad_channel_sum nn__grad_none
#define nn__plan_channel_sum nn__no_plan

static nn_result nn__cpu_channel_sum(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__node *x = &g->nodes[in[0]];
    nn__channel_sum(y, x->buf.host, x->shape.dim[0], x->shape.dim[1], x->numel / (x->shape.dim[0] * x->shape.dim[1]));
    return NN_OK;
}

/* conv.cl's channel_sum, one work-item per channel; on CPU devices bias_sum_planes, the
   same in 16 lanes an image */
static nn_result nn__launch_channel_sum(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    nn__node *x = &g->nodes[n->in[0]];
    int Nb = (int)x->shape.dim[0], C = (int)x->shape.dim[1];
    NN__KSTART(channel_sum, "conv", g->ctx->dev.cpu_tuned ? "bias_sum_planes" : "channel_sum", C);
    k.x = &x->buf;
    k.y = &n->buf;
    k.N = Nb;
    k.C = C;
    k.S = (int)(x->numel / ((int64_t)Nb * C));
    return nn__kargs_channel_sum(l, &k);
}
