/* The cast family: storage types (kernels/storage.h). Loops in src/cpu/cast.c, kernels in
   kernels/cast.cl, cases in tests/test_dtype.c. */
#include "../base/internal.h"
#include "../base/registry.h"

/* ==== to_dtype: y = x converted to y's dtype, any shape; PyTorch x.to(dtype) ==== */

static nn_tensor nn__cast_node(nn_graph *g, int x, nn_dtype to) {
    return nn__op1(g, NN__OP_CAST, to, g->nodes[x].shape, x);
}

NN_API nn_tensor nn_to_dtype(nn_graph *g, nn_tensor x, nn_dtype dtype) {
    if (!nn__check0(g, "nn_to_dtype", 1, &x)) return nn__tensor(-1);
    if (nn__n(g, x)->dtype == NN_I32 || (dtype != NN_F32 && !nn__dtype_half(dtype)))
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_to_dtype: converts between float32, bfloat16 and float16, not %s to %s",
                           nn__dtype_name(nn__n(g, x)->dtype),
                           dtype == NN_I32 || dtype == NN_F32 || nn__dtype_half(dtype) ? nn__dtype_name(dtype) : "an unknown dtype");
    return nn__cast_node(g, x.id, dtype);
}

#define nn__plan_cast nn__no_plan

/* the gradient is gy converted back to x's dtype */
static void nn__grad_cast(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (ga) nn__acc_grad(g, a, nn__cast_node(g, gy.id, g->nodes[a].dtype));
}

static nn_result nn__cpu_cast(nn_graph *g, nn__node *n) {
    const nn__node *x = &g->nodes[n->in[0]];
    nn__cast(g->ctx->threads, x->buf.host, x->dtype, n->buf.host, n->dtype, n->numel);
    return NN_OK;
}

/* one work-item per element: float32 to 16 bits in the program of y's storage type, 16 bits
   to float32 in x's, 16 to 16 bits through float32, float32 to float32 a copy */
static nn_result nn__launch_cast(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const nn__node *x = &g->nodes[n->in[0]];
    if (nn__dtype_half(x->dtype) && nn__dtype_half(n->dtype)) {
        NN__KSTART(cast_half, "cast", "cast_half", n->numel);
        k.x = &x->buf;
        k.y = &n->buf;
        k.n = (int)n->numel;
        k.from = x->dtype == NN_BF16 ? 1 : 2;
        k.to = n->dtype == NN_BF16 ? 1 : 2;
        return nn__kargs_cast_half(l, &k);
    }
    if (nn__dtype_half(n->dtype)) {
        NN__KSTART(cast_store, "cast", "cast_store", n->numel);
        l->store = n->dtype;
        k.x = &x->buf;
        k.y = &n->buf;
        k.n = (int)n->numel;
        return nn__kargs_cast_store(l, &k);
    }
    {
        NN__KSTART(cast_load, "cast", "cast_load", n->numel);
        l->store = x->dtype; /* NN_F32: a copy */
        k.x = &x->buf;
        k.y = &n->buf;
        k.n = (int)n->numel;
        return nn__kargs_cast_load(l, &k);
    }
}
