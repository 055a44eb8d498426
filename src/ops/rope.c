/* Positions for transformers: rotary embeddings (rope) and the fixed sinusoidal encodings
   (sinusoidal_positions, a constant). The loop is in src/cpu/rope.c, the kernel in
   kernels/rope.cl. Learned positional embeddings need no op: an nn_param [T, D] added to
   the token embeddings [B, T, D] with broadcasting (src/api/api.h). */
#include "../base/internal.h"
#include "../base/registry.h"

/* ==== rope: y = x with the first rot dims of each token's head vector rotated in pairs by
   its position's angles; x [B, H, T, D] (or [B, T, H, D]), optional positions int32 [T] or
   [B, T] (input 1). Its gradient is the inverse rotation of dy (the same op, inverse set) ==== */

/* y = rope(x) with a (its inverse when inverse), positions pos (0: none) */
static nn_tensor nn__rope_node(nn_graph *g, int x, int pos, const nn__rope_attr *a) {
    int in[2], id;
    in[0] = x;
    in[1] = pos;
    id = nn__new_node(g, NN__OP_ROPE, NN_F32, g->nodes[x].shape, in, pos > 0 ? 2 : 1);
    if (id >= 0) g->nodes[id].a.rope = *a;
    return nn__tensor(id);
}

NN_API nn_tensor nn_rope(nn_graph *g, nn_tensor x, const nn_rope_desc *desc) {
    nn_rope_desc d;
    nn__rope_attr a;
    nn__node *nx;
    char sx[128], sp[128];
    double theta;
    if (!nn__check(g, "nn_rope", 1, &x) || !nn__expect_f32(g, "nn_rope", x, "x")) return nn__tensor(-1);
    nx = nn__n(g, x);
    nn__shape_str(&nx->shape, sx, sizeof sx);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (nx->shape.ndim != 4 || nx->numel > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_rope: x %s must be %s, under 2^31 elements", sx,
                           d.bthd ? "[B, T, H, D]" : "[B, H, T, D]");
    memset(&a, 0, sizeof a);
    a.B = (int)nx->shape.dim[0];
    a.H = (int)nx->shape.dim[d.bthd ? 2 : 1];
    a.T = (int)nx->shape.dim[d.bthd ? 1 : 2];
    a.D = (int)nx->shape.dim[3];
    a.bthd = d.bthd != 0;
    a.interleaved = d.interleaved != 0;
    a.rot = d.rot_dim == 0 ? a.D : d.rot_dim;
    a.offset = d.offset;
    theta = d.theta == 0.0f ? 10000.0 : (double)d.theta;
    if (a.rot < 2 || a.rot > a.D || a.rot % 2)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_rope: rot_dim %d must be even, in 2..D = %d, for x %s", a.rot, a.D, sx);
    if (!(theta > 1.0 && theta < 1e30) || d.offset < 0)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_rope: theta %g must be > 1 and finite, offset %d >= 0", theta, d.offset);
    {
        double r = pow(theta, -2.0 / (double)a.rot);
        a.r_hi = (float)r;
        a.r_lo = (float)(r - (double)a.r_hi);
    }
    if (d.positions.id != 0) {
        nn__node *np;
        if (!nn__check(g, "nn_rope", 1, &d.positions)) return nn__tensor(-1);
        np = nn__n(g, d.positions);
        nn__shape_str(&np->shape, sp, sizeof sp);
        if (np->dtype != NN_I32 || !((np->shape.ndim == 1 && np->shape.dim[0] == a.T) ||
                                     (np->shape.ndim == 2 && np->shape.dim[0] == a.B && np->shape.dim[1] == a.T)))
            return nn__op_fail(g, NN_ERR_SHAPE, "nn_rope: positions %s %s must be int32 [T] or [B, T] for x %s (T = %d)", sp,
                               nn__dtype_name(np->dtype), sx, a.T);
        a.pos = np->shape.ndim;
    }
    return nn__rope_node(g, x.id, d.positions.id, &a);
}

#define nn__plan_rope nn__no_plan

static void nn__grad_rope(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn__rope_attr at = n.a.rope;
    (void)gb;
    at.inverse = !at.inverse;
    if (ga) nn__acc_grad(g, a, nn__rope_node(g, gy.id, at.pos ? b : 0, &at));
}

static nn_result nn__cpu_rope(nn_graph *g, nn__node *n) {
    nn__rope(g->ctx->threads, &n->a.rope, n->buf.host, NN__F(n->in[0]), n->a.rope.pos ? NN__I(n->in[1]) : NULL);
    return NN_OK;
}

/* one work-item per element; &g->one stands in for absent positions */
static nn_result nn__launch_rope(nn_graph *g, int id) {
    NN__KLAUNCH(rope, "rope", "rope", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.pos = n->a.rope.pos ? &g->nodes[n->in[1]].buf : &g->one;
    k.y = &n->buf;
    k.B = n->a.rope.B;
    k.H = n->a.rope.H;
    k.T = n->a.rope.T;
    k.D = n->a.rope.D;
    k.bthd = n->a.rope.bthd;
    k.rot = n->a.rope.rot;
    k.interleaved = n->a.rope.interleaved;
    k.inverse = n->a.rope.inverse;
    k.pos_kind = n->a.rope.pos;
    k.offset = n->a.rope.offset;
    k.r_hi = n->a.rope.r_hi;
    k.r_lo = n->a.rope.r_lo;
    return nn__kargs_rope(l, &k);
}

/* ==== sinusoidal_positions: y [T, D] float32, "Attention is all you need"'s encodings,
   computed once at compile time in double and rounded (NN__OPF_CONST) ==== */

NN_API nn_tensor nn_sinusoidal_positions(nn_graph *g, int64_t T, int64_t D) {
    if (!nn__check(g, "nn_sinusoidal_positions", 0, NULL)) return nn__tensor(-1);
    if (T < 1 || D < 1 || T > NN__MAX_NUMEL / D)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_sinusoidal_positions: T %lld, D %lld (each at least 1)", (long long)T, (long long)D);
    return nn__tensor(nn__new_node(g, NN__OP_SINUSOIDAL, NN_F32, nn_shape2(T, D), NULL, 0));
}

#define nn__grad_sinusoidal nn__grad_none
#define nn__plan_sinusoidal nn__no_plan

/* pe[t, 2i] = sin(t / 10000^(2i/D)), pe[t, 2i + 1] = cos(the same) */
static nn_result nn__cpu_sinusoidal(nn_graph *g, nn__node *n) {
    int64_t T = n->shape.dim[0], D = n->shape.dim[1], t, c;
    float *y = n->buf.host;
    (void)g;
    for (t = 0; t < T; t++)
        for (c = 0; c < D; c++) {
            double ang = (double)t * exp(-(double)(c - c % 2) / (double)D * log(10000.0));
            y[t * D + c] = (float)(c % 2 ? cos(ang) : sin(ang));
        }
    return NN_OK;
}

static nn_result nn__launch_sinusoidal(nn_graph *g, int id) { /* never scheduled: computed at compile time */
    return nn__fail(g->ctx, NN_ERR_STATE, "%s: a constant has no kernels", nn__op_names[g->nodes[id].op]);
}
