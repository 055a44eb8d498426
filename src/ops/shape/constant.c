/* The shape family's constants: arange and eye, one op (CONST) with a kind. Its block:
   builder, registry aliases, CPU body; no gradient and no kernel (below). */
#include "../../base/internal.h"
#include "../../base/registry.h"

/* ==== const: y float32 = arange [ceil((end - start) / step)] (element i start + i * step,
   torch.arange) or eye [n, m] (torch.eye), computed once at compile time by its CPU body on
   every backend (NN__OPF_CONST) and written to the device ==== */

enum { NN__CONST_ARANGE = 0, NN__CONST_EYE = 1 };

NN_API nn_tensor nn_arange(nn_graph *g, double start, double end, double step) {
    double len;
    nn_tensor t;
    if (!nn__check(g, "nn_arange", 0, NULL)) return nn__tensor(-1);
    len = step != 0.0 ? ceil((end - start) / step) : 0.0;
    if (!(step != 0.0) || !(len >= 1.0) || len > (double)NN__MAX_NUMEL) /* NaN fails too */
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                           "nn_arange: start %g, end %g, step %g give %g elements (needs 1 to %lld: step nonzero, its sign end - start's)",
                           start, end, step, len == len ? len : 0.0, (long long)NN__MAX_NUMEL);
    t = nn__tensor(nn__new_node(g, NN__OP_CONST, NN_F32, nn_shape1((int64_t)len), NULL, 0));
    if (t.id >= 0) {
        g->nodes[t.id].a.shape.kind = NN__CONST_ARANGE;
        g->nodes[t.id].a.shape.c_start = start;
        g->nodes[t.id].a.shape.c_step = step;
    }
    return t;
}

NN_API nn_tensor nn_eye(nn_graph *g, int64_t n, int64_t m) {
    nn_tensor t;
    if (!nn__check(g, "nn_eye", 0, NULL)) return nn__tensor(-1);
    if (m == 0) m = n;
    if (n < 1 || m < 1) return nn__op_fail(g, NN_ERR_SHAPE, "nn_eye: n %lld, m %lld (each at least 1)", (long long)n, (long long)m);
    t = nn__tensor(nn__new_node(g, NN__OP_CONST, NN_F32, nn_shape2(n, m), NULL, 0));
    if (t.id >= 0) g->nodes[t.id].a.shape.kind = NN__CONST_EYE;
    return t;
}

#define nn__grad_const nn__grad_none
#define nn__plan_const nn__no_plan

/* Runs once, at compile time (NN__OPF_CONST), on every backend. */
static nn_result nn__cpu_const(nn_graph *g, nn__node *n) {
    float *y = n->buf.host;
    int64_t i;
    (void)g;
    if (n->a.shape.kind == NN__CONST_ARANGE) {
        for (i = 0; i < n->numel; i++) y[i] = (float)(n->a.shape.c_start + (double)i * n->a.shape.c_step);
    } else {
        int64_t m = n->shape.dim[1];
        memset(y, 0, (size_t)n->numel * sizeof(float));
        for (i = 0; i < n->shape.dim[0] && i < m; i++) y[i * m + i] = 1.0f;
    }
    return NN_OK;
}

static nn_result nn__launch_const(nn_graph *g, int id) { /* never scheduled: computed at compile time */
    return nn__fail(g->ctx, NN_ERR_STATE, "%s: a constant has no kernels", nn__op_names[g->nodes[id].op]);
}
