/* The reduce family (the files of src/ops/reduce/; attributes nn__reduce_attr in
   src/ops/reduce.h), one block per op: builder, registry aliases, autograd rule, CPU body
   (the loops in src/cpu/reduce.c) and kernel launch (kernels/reduce.cl). This file: the
   reductions of a whole tensor or of rows to one value (sum and mean, the row-wise argmax,
   accuracy, the optimizer's gradient norm and clipping coefficient); dims.c: reductions
   along dims and the running sum. */
#include "../../base/internal.h"
#include "../../base/registry.h"

/* ==== sum of all elements: x [any] -> SUM_ALL [1], scale * sum(x) (nn_sum: 1, nn_mean:
   1/numel; the losses' reductions call nn__sum_all_op); its gradient is EXPAND_SCALAR,
   y [x's shape] = scale * gy[0], whose gradient is SUM_ALL again ==== */

/* scale * the sum of node x's elements, [1] (other families: losses' reductions). */
static nn_tensor nn__sum_all_op(nn_graph *g, int x, float scale) {
    nn_tensor t = nn__op1(g, NN__OP_SUM_ALL, NN_F32, nn_shape1(1), x);
    if (t.id >= 0) g->nodes[t.id].a.reduce.scale = scale;
    return t;
}

static nn_tensor nn__sum_all(nn_graph *g, const char *opname, nn_tensor x, int mean) {
    if (!nn__check0(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    return nn__sum_all_op(g, x.id, mean ? (float)(1.0 / (double)g->nodes[x.id].numel) : 1.0f);
}
NN_API nn_tensor nn_sum(nn_graph *g, nn_tensor x) { return nn__sum_all(g, "nn_sum", x, 0); }
NN_API nn_tensor nn_mean(nn_graph *g, nn_tensor x) { return nn__sum_all(g, "nn_mean", x, 1); }

/* A sum of n elements to one value on a GPU device: over P work-groups of nn__reduce_wg's
   size in two passes (kernels/reduce.cl's sum_parts, sum_finish), P = min(1024, ceil(n /
   2048)) groups of ceil(n / P) contiguous elements each: the partition from n alone, so
   the bits change with n and the work-group size only. Returns P, and the chunk in *chunk;
   0 (one work-group, sum_all or grad_sumsq) for n <= 2048, host-memory backends and CPU
   devices (whose one-group kernels are kept). */
#define NN__SUM_CHUNK 2048
#define NN__SUM_MAX_PARTS 1024
static int nn__sum_plan(const nn_graph *g, int64_t n, int64_t *chunk) {
    int64_t parts;
    if (g->ctx->backend->host_memory || g->ctx->dev.cpu_tuned || n <= NN__SUM_CHUNK) return 0;
    parts = (n + NN__SUM_CHUNK - 1) / NN__SUM_CHUNK;
    if (parts > NN__SUM_MAX_PARTS) parts = NN__SUM_MAX_PARTS;
    if (chunk) *chunk = (n + parts - 1) / parts;
    return (int)parts;
}

/* The plans of SUM_ALL and GRAD_SUMSQ: the parts' floats as scratch when two passes */
static void nn__plan_sum_parts(nn_graph *g, nn__node *n) {
    n->scratch = nn__sum_plan(g, g->nodes[n->in[0]].numel, NULL);
}
#define nn__plan_sum_all nn__plan_sum_parts
#define nn__plan_expand_scalar nn__no_plan

/* Node id's output [1] = ((prev ? prev[0] : 0) + the sum of x's n terms (term 0: x, 1:
   x^2)) * scale in nn__sum_plan's two passes, its parts in the node's scratch. Other
   families may call it for a scalar reduction of their own (its plan sets n->scratch to
   nn__sum_plan's count). */
static nn_result nn__launch_sum_two_pass(nn_graph *g, int id, const nn__buf *x, int64_t n, int term, const nn__buf *prev,
                                         float scale) {
    nn__node *nd = &g->nodes[id];
    int64_t chunk = 0;
    int parts = nn__sum_plan(g, n, &chunk);
    size_t wg = nn__reduce_wg(g);
    if (parts < 1 || nd->scratch < parts)
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: no scratch for a sum in %d parts", nn__op(nd->op)->name, parts);
    {
        NN__KWITH(sum_parts, nn__launch_groups(g, id, "reduce", "sum_parts", (size_t)parts, wg, &l));
        k.x = x;
        k.part = &nd->scratch_buf;
        k.n = (int)n;
        k.chunk = (int)chunk;
        k.term = term;
        k.tmp = wg * 4;
        r = nn__kargs_sum_parts(l, &k);
        if (r != NN_OK) return r;
    }
    {
        NN__KWITH(sum_finish, nn__launch_groups(g, id, "reduce", "sum_finish", 1, wg, &l));
        k.part = &nd->scratch_buf;
        k.prev = prev ? prev : &g->one;
        k.y = &nd->buf;
        k.parts = parts;
        k.has_prev = prev != NULL;
        k.scale = scale;
        k.tmp = wg * 4;
        return nn__kargs_sum_finish(l, &k);
    }
}

static void nn__grad_sum_all(nn_graph *g, int id) { nn__grad_by_op(g, id, NN__OP_EXPAND_SCALAR); }

static void nn__grad_expand_scalar(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    t = nn__sum_all_op(g, gy.id, n.a.reduce.scale);
    nn__acc_grad(g, a, t);
    return;
}

static nn_result nn__cpu_sum_all(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__reduce_attr ra; /* scale * sum(x): one row [1, numel, 1] of the sum over an axis, its
                           blocks' double sums (on the pool's threads) added in block order */
    memset(&ra, 0, sizeof ra);
    ra.O = ra.I = 1;
    ra.R = (int)g->nodes[in[0]].numel;
    ra.scale = n->a.reduce.scale;
    nn__reduce_forward(g->ctx->threads, NN__OP_RED_SUM, &ra, y, NN__F(in[0]));
    return NN_OK;
}

static nn_result nn__cpu_expand_scalar(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    nn__expand_scalar_forward(g->ctx->threads, y, NN__F(in[0]), N, n->a.reduce.scale);
    return NN_OK;
}

/* the most logits whose tail a device tuned as a CPU runs in one work-group */
#ifndef NN__XENT_TAIL_ONE
#define NN__XENT_TAIL_ONE 65536
#endif
/* softmax cross-entropy's mean n (of rows p) with the accuracy's mean and the logits'
   gradient its launch makes too (src/ops/fuse.c's nn__fuse_xent_tail: a.reduce.tail_correct,
   tail_grad) */
static nn_result nn__launch_xent_tail(nn_graph *g, int id, const nn__node *p, const nn__buf *acc, size_t wg) {
    const nn__node *x = &g->nodes[p->in[0]], *n = &g->nodes[id];
    const nn__node *c = n->a.reduce.tail_correct > 0 ? &g->nodes[n->a.reduce.tail_correct] : NULL;
    const nn__node *d = n->a.reduce.tail_grad > 0 ? &g->nodes[n->a.reduce.tail_grad] : NULL;
    int B = (int)x->shape.dim[0];
    /* devices tuned as CPUs: one group where the logits are few (kernels/reduce.cl says why) */
    int one = g->ctx->dev.cpu_tuned && x->numel <= NN__XENT_TAIL_ONE;
    size_t groups = one ? 1 : 1 + (c != NULL) + (d ? ((size_t)B + wg - 1) / wg : 0);
    NN__KWITH(xent_tail, nn__launch_groups(g, id, "reduce", "xent_tail", groups, wg, &l));
    k.x = &x->buf;
    nn__rows_operand(g, p->in[1], &k.label, &k.lidx, &k.ln);
    k.y = &n->buf;
    k.acc = acc ? acc : &n->buf;
    k.has_acc = acc != NULL;
    k.scale = n->a.reduce.scale;
    k.bad = &g->checks;
    k.slot = p->check_slot;
    k.has_correct = c != NULL;
    k.y2 = c ? &c->buf : &n->buf;
    k.acc2 = c && c->a.reduce.acc > 0 ? &g->nodes[c->a.reduce.acc].buf : k.y2;
    k.has_acc2 = c && c->a.reduce.acc > 0;
    k.scale2 = c ? c->a.reduce.scale : 1.0f;
    k.dloss = &g->one;
    k.dx = d ? &d->buf : &n->buf;
    k.dscale = d ? g->nodes[d->in[2]].a.reduce.scale : 1.0f; /* the folded expand's factor */
    k.has_grad = d != NULL;
    k.B = B;
    k.C = (int)x->shape.dim[1];
    k.tmp = wg * 4;
    return nn__kargs_xent_tail(l, &k);
}

/* The one-group sum with the rows' op it sums folded in (src/ops/fuse.c's nn__fuse_tails:
   the op, softmax cross-entropy's rows or accuracy's, is not launched), and its value's
   accumulate (a.reduce.acc) */
static nn_result nn__launch_sum_rows(nn_graph *g, int id, const nn__node *p, const nn__buf *acc) {
    const nn__node *x = &g->nodes[p->in[0]], *n = &g->nodes[id];
    int xent = p->op == NN__OP_XENT_ROWS;
    size_t wg = nn__reduce_wg(g);
    if (xent && (n->a.reduce.tail_correct > 0 || n->a.reduce.tail_grad > 0)) return nn__launch_xent_tail(g, id, p, acc, wg);
    NN__KWITH(rows_sum, nn__launch_groups(g, id, "reduce", xent ? "xent_sum" : "correct_sum", 1, wg, &l));
    k.x = &x->buf;
    nn__rows_operand(g, p->in[1], &k.label, &k.lidx, &k.ln);
    k.y = &n->buf;
    k.acc = acc ? acc : &n->buf;
    k.B = (int)x->shape.dim[0];
    k.C = (int)x->shape.dim[1];
    k.has_acc = acc != NULL;
    k.scale = n->a.reduce.scale;
    k.bad = &g->checks; /* counted by xent_sum only */
    k.slot = xent ? p->check_slot : 0;
    k.tmp = wg * 4;
    return nn__kargs_rows_sum(l, &k);
}

static nn_result nn__launch_sum_all(nn_graph *g, int id) {
    const nn__node *p = &g->nodes[g->nodes[id].in[0]];
    const nn__buf *acc = g->nodes[id].a.reduce.acc > 0 ? &g->nodes[g->nodes[id].a.reduce.acc].buf : NULL;
    if (g->nodes[id].scratch > 0)
        return nn__launch_sum_two_pass(g, id, &p->buf, p->numel, 0, NULL, g->nodes[id].a.reduce.scale);
    if (p->fused < 0 && (p->op == NN__OP_XENT_ROWS || p->op == NN__OP_CORRECT_ROWS)) return nn__launch_sum_rows(g, id, p, acc);
    {
        NN__KGROUP(sum_all, "reduce");
        k.x = &p->buf;
        k.y = &n->buf;
        k.acc = acc ? acc : &n->buf;
        k.n = (int)p->numel;
        k.has_acc = acc != NULL;
        k.scale = n->a.reduce.scale;
        k.tmp = wg * 4;
        return nn__kargs_sum_all(l, &k);
    }
}

static nn_result nn__launch_expand_scalar(nn_graph *g, int id) {
    NN__KLAUNCH(expand_scalar, "reduce", "expand_scalar", n->numel);
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.s = n->a.reduce.scale;
    return nn__kargs_expand_scalar(l, &k);
}

/* ==== argmax of rows: x [B, C] float32 -> ARGMAX [B] int32, the first index of each row's
   largest value (nn_argmax_rows; nn_argmax_dim is the general form) ==== */

NN_API nn_tensor nn_argmax_rows(nn_graph *g, nn_tensor x) {
    nn__node *n = NULL;
    if (!nn__check(g, "nn_argmax_rows", 1, &x) || !nn__expect_f32(g, "nn_argmax_rows", x, "x")) return nn__tensor(-1);
    n = nn__n(g, x);
    if (n->shape.ndim != 2) {
        char sx[128];
        nn__shape_str(&n->shape, sx, sizeof sx);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_argmax_rows: x %s must be 2-D [B, C]", sx);
    }
    return nn__op1(g, NN__OP_ARGMAX, NN_I32, nn_shape1(n->shape.dim[0]), x.id);
}

#define nn__grad_argmax nn__grad_none
#define nn__plan_argmax nn__no_plan

static nn_result nn__cpu_argmax(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__node *x = &g->nodes[in[0]];
    nn__argmax_forward((int32_t *)y, x->buf.host, x->shape.dim[0], x->shape.dim[1]);
    return NN_OK;
}

static nn_result nn__launch_argmax(nn_graph *g, int id) {
    NN__KROWS(argmax_rows, "reduce");
    k.y = &n->buf;
    return nn__kargs_argmax_rows(l, &k);
}

/* ==== accuracy: logits [B, C] float32, labels [B] int32 -> CORRECT_ROWS [B], 1 where the
   row's argmax is its label, then the mean [1] (nn_accuracy) ==== */

NN_API nn_tensor nn_accuracy(nn_graph *g, nn_tensor logits, nn_tensor labels) {
    if (!nn__check_logits_labels(g, "nn_accuracy", logits, labels)) return nn__tensor(-1);
    return nn_mean(g, nn__op2(g, NN__OP_CORRECT_ROWS, NN_F32, nn_shape1(nn__n(g, logits)->shape.dim[0]), logits.id, labels.id));
}

#define nn__grad_correct_rows nn__grad_none
#define nn__plan_correct_rows nn__no_plan

static nn_result nn__cpu_correct_rows(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    nn__node *x = &g->nodes[in[0]];
    nn__correct_forward(y, x->buf.host, NN__I(in[1]), x->shape.dim[0], x->shape.dim[1]);
    return NN_OK;
}

static nn_result nn__launch_correct_rows(nn_graph *g, int id) {
    NN__KROWS(correct_rows, "reduce");
    k.label = &g->nodes[n->in[1]].buf;
    k.y = &n->buf;
    return nn__kargs_correct_rows(l, &k);
}

/* ==== gradient norm: GRAD_SUMSQ, a gradient [any] (and the previous parameters' sum [1])
   -> [1], the running sum of squares over every gradient: the optimizer's global norm for
   clipping (src/ops/optim.c's nn__add_optimizer chains one per parameter) ==== */

#define nn__grad_grad_sumsq nn__grad_none
#define nn__plan_grad_sumsq nn__plan_sum_parts

static nn_result nn__cpu_grad_sumsq(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    const float *x = NN__F(in[0]);
    int64_t i, m = g->nodes[in[0]].numel;
    double s = n->n_in > 1 ? NN__F(in[1])[0] : 0.0;
    for (i = 0; i < m; i++) s += (double)x[i] * x[i];
    y[0] = (float)s;
    return NN_OK;
}

static nn_result nn__launch_grad_sumsq(nn_graph *g, int id) {
    const nn__node *nd = &g->nodes[id];
    if (nd->scratch > 0)
        return nn__launch_sum_two_pass(g, id, &g->nodes[nd->in[0]].buf, g->nodes[nd->in[0]].numel, 1,
                                       nd->n_in > 1 ? &g->nodes[nd->in[1]].buf : NULL, 1.0f);
    NN__KGROUP(grad_sumsq, "reduce");
    k.g = &g->nodes[n->in[0]].buf;
    k.prev = n->n_in > 1 ? &g->nodes[n->in[1]].buf : &g->one;
    k.y = &n->buf;
    k.n = (int)g->nodes[n->in[0]].numel;
    k.has_prev = n->n_in > 1;
    k.tmp = wg * 4;
    return nn__kargs_grad_sumsq(l, &k);
}

/* ==== clipping coefficient: CLIP_SCALE, the sum of squares [1] -> [1],
   min(1, max_norm / (sqrt(sumsq) + 1e-6)), what the updates scale each gradient by ==== */

/* min(1, max_norm / (sqrt(node sumsq) + 1e-6)), [1]: the optimizer's gradient clipping. */
static nn_tensor nn__clip_scale_op(nn_graph *g, int sumsq, float max_norm) {
    nn_tensor t = nn__op1(g, NN__OP_CLIP_SCALE, NN_F32, nn_shape1(1), sumsq);
    if (t.id >= 0) g->nodes[t.id].a.reduce.max_norm = max_norm;
    return t;
}

#define nn__grad_clip_scale nn__grad_none
#define nn__plan_clip_scale nn__no_plan

static nn_result nn__cpu_clip_scale(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    float c = n->a.reduce.max_norm / (sqrtf(NN__F(in[0])[0]) + 1e-6f);
    y[0] = c > 1.0f ? 1.0f : c; /* a NaN norm gives NaN, as torch.clamp */
    return NN_OK;
}

static nn_result nn__launch_clip_scale(nn_graph *g, int id) {
    NN__KLAUNCH(clip_scale, "reduce", "clip_scale", 1);
    k.sumsq = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.max_norm = n->a.reduce.max_norm;
    return nn__kargs_clip_scale(l, &k);
}
