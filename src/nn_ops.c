/* Binds each op to its two bodies: nn__cpu_run() calls the CPU function of nn_cpu.c, and
   nn__cl_prepare() creates the op's kernels from kernels/ and binds their arguments once,
   at compile time, so a step only enqueues. Keep the two switches in the same order. */

static const char *const nn__unary_names[NN__U_COUNT] = {"relu", "leaky_relu", "sigmoid", "tanh", "gelu", "silu"};

#define NN__F(id) (g->nodes[(id)].buf.host)
#define NN__I(id) ((int32_t *)g->nodes[(id)].buf.host)

static int64_t nn__last_dim(const nn__node *n) { return n->shape.dim[n->shape.ndim - 1]; }

/* Adam's bias corrections for the update about to run, in double as PyTorch computes them. */
static void nn__adam_bc(const nn_graph *g, float *bc1, float *bc2) {
    *bc1 = (float)(1.0 - pow((double)g->opt.beta1, (double)g->clock.t));
    *bc2 = (float)(1.0 - pow((double)g->opt.beta2, (double)g->clock.t));
}

/* A shape seen along axis: [outer, len, inner]. */
static void nn__axis_split(const nn_shape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner) {
    int d;
    *outer = *inner = 1;
    for (d = 0; d < axis; d++) *outer *= s->dim[d];
    for (d = axis + 1; d < s->ndim; d++) *inner *= s->dim[d];
    *len = s->dim[axis];
}

/* permute geometry: y's dims and, for each, x's stride (padded to 6 dims in front) */
static void nn__permute_geom(const nn__node *n, const nn_shape *xs, int64_t *dims, int64_t *xstride) {
    int64_t st[NN_MAX_DIMS];
    int d, nd = n->shape.ndim, pad = NN_MAX_DIMS - nd;
    st[nd - 1] = 1;
    for (d = nd - 2; d >= 0; d--) st[d] = st[d + 1] * xs->dim[d + 1];
    for (d = 0; d < NN_MAX_DIMS; d++) {
        dims[d] = d < pad ? 1 : n->shape.dim[d - pad];
        xstride[d] = d < pad ? 0 : st[n->i[d - pad]];
    }
}

/* A pooling node's geometry: x is the input of the forward ops and the output of the
   gradient ops, whose last input is dy. */
static void nn__pooling_of(const nn_graph *g, const nn__node *n, nn__pooling *p) {
    int is_max = n->op != NN__OP_AVGPOOL2D && n->op != NN__OP_AVGPOOL2D_GRAD;
    if (n->op == NN__OP_MAXPOOL2D_GRAD || n->op == NN__OP_AVGPOOL2D_GRAD)
        nn__pooling_geom(p, is_max, &n->shape, &g->nodes[n->in[n->n_in - 1]].shape, n->i);
    else
        nn__pooling_geom(p, is_max, &g->nodes[n->in[0]].shape, &n->shape, n->i);
}

static nn_result nn__cpu_run(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    switch (n->op) {
    case NN__OP_MATMUL: {
        nn__node *a = &g->nodes[in[0]], *b = &g->nodes[in[1]];
        int M = (int)n->shape.dim[0], Nn = (int)n->shape.dim[1];
        int K = (int)(n->i[0] ? a->shape.dim[0] : a->shape.dim[1]);
        nn__sgemm(g->ctx->pool, n->i[0], n->i[1], M, Nn, K, 1.0f, a->buf.host, (int)a->shape.dim[1], b->buf.host,
                  (int)b->shape.dim[1], 0.0f, y, Nn);
        break;
    }
    case NN__OP_ADD: case NN__OP_SUB: case NN__OP_MUL:
        nn__binary_forward(n->op, y, NN__F(in[0]), NN__F(in[1]), N, g->nodes[in[1]].numel);
        break;
    case NN__OP_SCALE: nn__scale_forward(y, NN__F(in[0]), n->f[0], N); break;
    case NN__OP_UNARY: nn__unary_forward(n->i[0], n->f[0], y, NN__F(in[0]), N); break;
    case NN__OP_UNARY_GRAD: nn__unary_backward(n->i[0], n->f[0], y, NN__F(in[0]), NN__F(in[1]), N); break;
    case NN__OP_SOFTMAX: case NN__OP_LOG_SOFTMAX:
        nn__softmax_forward(y, NN__F(in[0]), N / nn__last_dim(n), nn__last_dim(n), n->op == NN__OP_LOG_SOFTMAX);
        break;
    case NN__OP_SOFTMAX_GRAD: case NN__OP_LOG_SOFTMAX_GRAD:
        nn__softmax_backward(y, NN__F(in[0]), NN__F(in[1]), N / nn__last_dim(n), nn__last_dim(n),
                             n->op == NN__OP_LOG_SOFTMAX_GRAD);
        break;
    case NN__OP_SUM_ALL: nn__sum_all_forward(y, NN__F(in[0]), g->nodes[in[0]].numel, n->f[0]); break;
    case NN__OP_EXPAND_SCALAR: nn__expand_scalar_forward(y, NN__F(in[0]), N, n->f[0]); break;
    case NN__OP_SUM_LEAD: nn__sum_lead_forward(y, NN__F(in[0]), g->nodes[in[0]].numel, N); break;
    case NN__OP_XENT_ROWS: {
        nn__node *x = &g->nodes[in[0]];
        nn__xent_forward(y, x->buf.host, NN__I(in[1]), x->shape.dim[0], x->shape.dim[1]);
        break;
    }
    case NN__OP_XENT_GRAD:
        nn__xent_backward(y, NN__F(in[0]), NN__I(in[1]), NN__F(in[2]), n->shape.dim[0], n->shape.dim[1]);
        break;
    case NN__OP_BCE_LOGITS: nn__bce_forward(y, NN__F(in[0]), NN__F(in[1]), N); break;
    case NN__OP_BCE_LOGITS_GRAD: nn__bce_backward(y, NN__F(in[0]), NN__F(in[1]), NN__F(in[2]), N); break;
    case NN__OP_DROPOUT: nn__dropout_forward(y, NN__F(in[0]), N, n->f[0], g->seed, n->i[0], g->step); break;
    case NN__OP_GATHER_ROWS: {
        nn__node *d = &g->nodes[in[0]];
        int64_t D = d->numel / d->shape.dim[0];
        nn__gather_rows_forward(y, d->buf.host, NN__I(in[1]), n->shape.dim[0], d->shape.dim[0], D);
        break;
    }
    case NN__OP_GATHER_ROWS_GRAD: {
        nn__node *gy = &g->nodes[in[1]];
        nn__gather_rows_backward(y, NN__I(in[0]), gy->buf.host, gy->shape.dim[0], n->shape.dim[0], N / n->shape.dim[0]);
        break;
    }
    case NN__OP_ARGMAX: {
        nn__node *x = &g->nodes[in[0]];
        nn__argmax_forward((int32_t *)y, x->buf.host, x->shape.dim[0], x->shape.dim[1]);
        break;
    }
    case NN__OP_CORRECT_ROWS: {
        nn__node *x = &g->nodes[in[0]];
        nn__correct_forward(y, x->buf.host, NN__I(in[1]), x->shape.dim[0], x->shape.dim[1]);
        break;
    }
    case NN__OP_ACCUMULATE: {
        const float *x = NN__F(in[0]);
        int64_t i;
        for (i = 0; i < N; i++) y[i] += x[i];
        break;
    }
    case NN__OP_FILL: {
        int64_t i;
        for (i = 0; i < N; i++) y[i] = n->f[0];
        break;
    }
    case NN__OP_GRAD_SUMSQ: {
        const float *x = NN__F(in[0]);
        int64_t i, m = g->nodes[in[0]].numel;
        double s = n->n_in > 1 ? NN__F(in[1])[0] : 0.0;
        for (i = 0; i < m; i++) s += (double)x[i] * x[i];
        y[0] = (float)s;
        break;
    }
    case NN__OP_CLIP_SCALE: {
        float c = n->f[0] / (sqrtf(NN__F(in[0])[0]) + 1e-6f);
        y[0] = c < 1.0f ? c : 1.0f;
        break;
    }
    case NN__OP_OPT_SGD: {
        nn__node *p = &g->nodes[in[0]];
        float clip = n->n_in > 2 ? NN__F(in[2])[0] : 1.0f;
        nn__sgd_update(p->buf.host, NN__F(in[1]), n->n_aux ? n->aux[0].host : NULL, p->numel, g->lr * n->f[0],
                       g->opt.momentum, g->opt.dampening, g->opt.weight_decay * n->f[1], g->opt.nesterov, g->clock.t == 1,
                       clip, nn__opt_cv(g));
        break;
    }
    case NN__OP_OPT_ADAM: {
        nn__node *p = &g->nodes[in[0]];
        float clip = n->n_in > 2 ? NN__F(in[2])[0] : 1.0f, bc1, bc2;
        nn__adam_bc(g, &bc1, &bc2);
        nn__adam_update(g->ctx->pool, p->buf.host, NN__F(in[1]), n->aux[0].host, n->aux[1].host, p->numel,
                        g->lr * n->f[0], g->opt.beta1, g->opt.beta2, g->opt.eps, g->opt.weight_decay * n->f[1],
                        g->opt.kind == NN_OPT_ADAMW, bc1, bc2, clip, nn__opt_cv(g));
        break;
    }
    case NN__OP_CONV2D: case NN__OP_CONV2D_DX: case NN__OP_CONV2D_DW: {
        nn__conv2d c;
        nn__node *x = &g->nodes[in[0]], *w = &g->nodes[in[1]];
        if (n->op == NN__OP_CONV2D) {
            nn__conv2d_geom(&c, &x->shape, &w->shape, n->i);
            if (n->algo == NN__CONV_DIRECT) /* direct loops, no scratch (nn_conv_dw.c) */
                nn__dwconv2d_forward(g->ctx->pool, &c, y, x->buf.host, w->buf.host, n->n_in > 2 ? NN__F(in[2]) : NULL);
            else
                nn__conv2d_forward(g->ctx->pool, &c, y, x->buf.host, w->buf.host, n->n_in > 2 ? NN__F(in[2]) : NULL,
                                   n->scratch_buf.host);
        } else if (n->op == NN__OP_CONV2D_DX) { /* inputs (w, dy), output dx */
            nn__conv2d_geom(&c, &n->shape, &x->shape, n->i);
            if (n->algo == NN__CONV_DIRECT) nn__dwconv2d_backward_data(g->ctx->pool, &c, y, x->buf.host, w->buf.host);
            else nn__conv2d_backward_data(g->ctx->pool, &c, y, x->buf.host, w->buf.host, n->scratch_buf.host);
        } else { /* inputs (x, dy), output dw */
            nn__conv2d_geom(&c, &x->shape, &n->shape, n->i);
            if (n->algo == NN__CONV_DIRECT) nn__dwconv2d_backward_weight(g->ctx->pool, &c, y, x->buf.host, w->buf.host);
            else nn__conv2d_backward_weight(g->ctx->pool, &c, y, x->buf.host, w->buf.host, n->scratch_buf.host);
        }
        break;
    }
    case NN__OP_CHANNEL_BIAS: {
        int64_t C = n->shape.dim[1], S = N / (n->shape.dim[0] * C), k, j;
        const float *x = NN__F(in[0]), *b = NN__F(in[1]);
        for (k = 0; k < N / S; k++)
            for (j = 0; j < S; j++) y[k * S + j] = x[k * S + j] + b[k % C];
        break;
    }
    case NN__OP_CHANNEL_SUM: {
        nn__node *x = &g->nodes[in[0]];
        nn__channel_sum(y, x->buf.host, x->shape.dim[0], x->shape.dim[1], x->numel / (x->shape.dim[0] * x->shape.dim[1]));
        break;
    }
    case NN__OP_RESHAPE: memcpy(y, NN__F(in[0]), (size_t)N * 4); break;
    case NN__OP_PERMUTE: {
        int64_t dims[NN_MAX_DIMS], xs[NN_MAX_DIMS];
        nn__permute_geom(n, &g->nodes[in[0]].shape, dims, xs);
        nn__permute_forward(y, NN__F(in[0]), NN_MAX_DIMS, dims, xs);
        break;
    }
    case NN__OP_CONCAT2: {
        int64_t o, la, lb, inner;
        nn__axis_split(&g->nodes[in[0]].shape, n->i[0], &o, &la, &inner);
        lb = g->nodes[in[1]].shape.dim[n->i[0]];
        nn__concat_forward(y, NN__F(in[0]), NN__F(in[1]), o, la, lb, inner);
        break;
    }
    case NN__OP_SLICE: case NN__OP_SLICE_GRAD: {
        int grad = n->op == NN__OP_SLICE_GRAD;
        int64_t o, L, inner, len;
        nn__axis_split(grad ? &n->shape : &g->nodes[in[0]].shape, n->i[0], &o, &L, &inner);
        len = (grad ? g->nodes[in[0]].shape : n->shape).dim[n->i[0]];
        nn__slice(y, NN__F(in[0]), o, L, inner, n->i[1], len, grad);
        break;
    }
    case NN__OP_PAD2D: case NN__OP_PAD2D_GRAD: {
        const nn_shape *xs = n->op == NN__OP_PAD2D ? &g->nodes[in[0]].shape : &n->shape;
        const nn_shape *ys = n->op == NN__OP_PAD2D ? &n->shape : &g->nodes[in[0]].shape;
        int nd = xs->ndim;
        int64_t H = xs->dim[nd - 2], W = xs->dim[nd - 1], P = nn__numel(xs) / (H * W);
        if (n->op == NN__OP_PAD2D)
            nn__pad2d_forward(y, NN__F(in[0]), P, H, W, ys->dim[nd - 2], ys->dim[nd - 1], n->i[0], n->i[1], n->i[2]);
        else
            nn__pad2d_backward(y, NN__F(in[0]), P, H, W, ys->dim[nd - 2], ys->dim[nd - 1], n->i[0], n->i[1], n->i[2]);
        break;
    }
    case NN__OP_UPSAMPLE2D: case NN__OP_UPSAMPLE2D_GRAD: {
        const nn_shape *xs = n->op == NN__OP_UPSAMPLE2D ? &g->nodes[in[0]].shape : &n->shape;
        int nd = xs->ndim;
        int64_t H = xs->dim[nd - 2], W = xs->dim[nd - 1];
        nn__upsample2d(y, NN__F(in[0]), nn__numel(xs) / (H * W), H, W, n->i[0], n->i[1], n->i[2],
                       n->op == NN__OP_UPSAMPLE2D_GRAD);
        break;
    }
    case NN__OP_NORM_STATS: case NN__OP_NORM_FORWARD: case NN__OP_NORM_DX: case NN__OP_NORM_DGAMMA:
    case NN__OP_NORM_DBETA: { /* attributes: see src/nn_norm.c */
        nn__norm q;
        nn__norm_geom(&q, n->i);
        if (n->op == NN__OP_NORM_STATS) nn__norm_stats(g->ctx->pool, &q, y, NN__F(in[0]));
        else if (n->op == NN__OP_NORM_FORWARD) /* x, stats, [gamma], [beta] */
            nn__norm_forward(g->ctx->pool, &q, y, NN__F(in[0]), NN__F(in[1]), n->i[5] ? NN__F(in[2]) : NULL,
                             n->i[6] ? NN__F(in[2 + n->i[5]]) : NULL, n->f[0]);
        else if (n->op == NN__OP_NORM_DX) /* x, stats, dy, [gamma] */
            nn__norm_backward_data(g->ctx->pool, &q, y, NN__F(in[0]), NN__F(in[1]), NN__F(in[2]), n->i[5] ? NN__F(in[3]) : NULL, n->i[7],
                                   n->f[0]);
        else if (n->op == NN__OP_NORM_DGAMMA) nn__norm_backward_affine(g->ctx->pool, &q, y, NN__F(in[0]), NN__F(in[1]), NN__F(in[2]), n->f[0]);
        else nn__norm_backward_affine(g->ctx->pool, &q, y, NULL, NULL, NN__F(in[0]), n->f[0]);
        break;
    }
    case NN__OP_BN_RUNNING: /* running mean, running var (updated in place), stats */
        nn__batch_norm_running(NN__F(in[0]), NN__F(in[1]), NN__F(in[2]), n->i[1], (int64_t)n->i[0] * n->i[2], n->f[1]);
        break;
    case NN__OP_BN_PACK:
        memcpy(y, NN__F(in[0]), (size_t)n->i[1] * 4);
        memcpy(y + n->i[1], NN__F(in[1]), (size_t)n->i[1] * 4);
        break;
    case NN__OP_OPT_STEP: nn__opt_step_cpu(g, n); break;
    case NN__OP_GRAD_ACC: nn__grad_acc_cpu(y, NN__F(in[0]), N, n->f[0], (g->step - 1) % (uint64_t)g->accum_steps == 0); break;
    case NN__OP_MAXPOOL2D: case NN__OP_MAXPOOL2D_ARGMAX: case NN__OP_MAXPOOL2D_GRAD:
    case NN__OP_AVGPOOL2D: case NN__OP_AVGPOOL2D_GRAD: {
        nn__pooling p;
        nn__pooling_of(g, n, &p);
        if (n->op == NN__OP_MAXPOOL2D) nn__max_pool2d_forward(g->ctx->pool, &p, y, NN__F(in[0]));
        else if (n->op == NN__OP_MAXPOOL2D_ARGMAX) nn__max_pool2d_argmax(g->ctx->pool, &p, (int32_t *)y, NN__F(in[0]));
        else if (n->op == NN__OP_MAXPOOL2D_GRAD) nn__max_pool2d_backward(g->ctx->pool, &p, y, NN__I(in[0]), NN__F(in[1]));
        else if (n->op == NN__OP_AVGPOOL2D) nn__avg_pool2d_forward(g->ctx->pool, &p, y, NN__F(in[0]));
        else nn__avg_pool2d_backward(g->ctx->pool, &p, y, NN__F(in[0]));
        break;
    }
    case NN__OP_LOSS_EW:
        nn__loss_ew_forward(y, NN__F(in[0]), NN__F(in[1]), n->i[1] ? NN__F(in[2]) : NULL, n->i[1] ? g->nodes[in[2]].numel : 1,
                            N, n->i[0], n->f[0], n->f[1], n->i[2]);
        break;
    case NN__OP_LOSS_EW_GRAD:
        nn__loss_ew_backward(y, NN__F(in[0]), NN__F(in[1]), n->i[1] ? NN__F(in[3]) : NULL, n->i[1] ? g->nodes[in[3]].numel : 1,
                             NN__F(in[2]), N, n->i[0], n->f[0], n->f[1], n->i[2]);
        break;
    case NN__OP_CE_ROWS: {
        nn__node *x = &g->nodes[in[0]];
        nn__ce_rows_forward(y, x->buf.host, NN__I(in[1]), n->n_in > 2 ? NN__F(in[2]) : NULL, x->shape.dim[0], x->shape.dim[1],
                            n->i[0], n->i[1], n->f[0]);
        break;
    }
    case NN__OP_CE_ROWS_GRAD:
        nn__ce_rows_backward(y, NN__F(in[0]), NN__I(in[1]), n->n_in > 3 ? NN__F(in[3]) : NULL, NN__F(in[2]), n->shape.dim[0],
                             n->shape.dim[1], n->i[0], n->i[1], n->f[0]);
        break;
    case NN__OP_CE_WEIGHTS:
        nn__ce_weights_forward(y, NN__I(in[0]), n->n_in > 1 ? NN__F(in[1]) : NULL, N, n->i[1], n->i[0]);
        break;
    case NN__OP_DIV_SCALAR: {
        const float *x = NN__F(in[0]);
        float d = NN__F(in[1])[0];
        int64_t i;
        for (i = 0; i < N; i++) y[i] = x[i] / d;
        break;
    }
    case NN__OP_LOSS_ROWS: {
        nn__node *x = &g->nodes[in[0]];
        nn__row_loss_forward(y, n->i[0], x->buf.host, NN__F(in[1]), n->n_in > 2 ? NN__F(in[2]) : NULL, N, x->numel / N, n->f[0]);
        break;
    }
    case NN__OP_LOSS_ROWS_GRAD: {
        int64_t B = g->nodes[in[0]].shape.dim[0];
        nn__row_loss_backward(y, n->i[0], n->i[1], NN__F(in[0]), NN__F(in[1]), n->n_in > 3 ? NN__F(in[2]) : NULL,
                              NN__F(in[n->n_in - 1]), B, g->nodes[in[0]].numel / B, n->f[0]);
        break;
    }
    case NN__OP_CONV3D: case NN__OP_CONV3D_DX: case NN__OP_CONV3D_DW: {
        nn__conv3d c;
        nn__node *x = &g->nodes[in[0]], *w = &g->nodes[in[1]];
        if (n->op == NN__OP_CONV3D) {
            nn__conv3d_geom(&c, &x->shape, &w->shape, n->i);
            nn__conv3d_forward(g->ctx->pool, &c, y, x->buf.host, w->buf.host, n->n_in > 2 ? NN__F(in[2]) : NULL,
                               n->scratch_buf.host);
        } else if (n->op == NN__OP_CONV3D_DX) { /* inputs (w, dy), output dx */
            nn__conv3d_geom(&c, &n->shape, &x->shape, n->i);
            nn__conv3d_backward_data(g->ctx->pool, &c, y, x->buf.host, w->buf.host, n->scratch_buf.host);
        } else { /* inputs (x, dy), output dw */
            nn__conv3d_geom(&c, &x->shape, &n->shape, n->i);
            nn__conv3d_backward_weight(g->ctx->pool, &c, y, x->buf.host, w->buf.host, n->scratch_buf.host);
        }
        break;
    }
    default:
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: no CPU path", nn__op_names[n->op]);
    }
    return NN_OK;
}

#undef NN__F
#undef NN__I

#if !defined(NN_NO_OPENCL)

/* Appends a launch of kernel `kname` from kernels/FILE.cl for node id; returns it via *out
   with its kernel created and global size set for n work-items (rounded up to a multiple
   of 64 on GPUs, where a NULL local size can be a poor choice). */
static nn_result nn__cl_add(nn_graph *g, int id, const char *file, const char *kname, size_t n, nn__launch **out) {
    nn__launch *l;
    nn_result r;
    if (g->n_launches == g->cap_launches) {
        int cap = g->cap_launches ? g->cap_launches * 2 : 64;
        nn__launch *p = (nn__launch *)NN_REALLOC(g->launches, (size_t)cap * sizeof *p);
        if (!p) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
        g->launches = p;
        g->cap_launches = cap;
    }
    l = &g->launches[g->n_launches];
    memset(l, 0, sizeof *l);
    r = nn__cl_kernel(g->ctx, file, kname, &l->kernel);
    if (r != NN_OK) return r;
    g->n_launches++;
    l->node = id;
    l->dims = 1;
    if (n == 0) n = 1;
    if (g->ctx->cl.is_gpu) {
        size_t wg = g->ctx->cl.max_wg < 64 ? g->ctx->cl.max_wg : 64;
        l->gws[0] = (n + wg - 1) / wg * wg;
        l->lws[0] = wg;
        l->use_lws = 1;
    } else {
        l->gws[0] = n;
    }
    *out = l;
    return NN_OK;
}

/* A single work-group of a power-of-two size, for the tree reductions of reduce.cl. */
static size_t nn__cl_reduce_wg(nn_graph *g) {
    size_t wg = 1;
    while (wg * 2 <= g->ctx->cl.max_wg && wg * 2 <= 256) wg *= 2;
    return wg;
}

static void nn__cl_update_dropout(nn_graph *g, nn__launch *l) {
    cl_uint lo = (cl_uint)g->step, hi = (cl_uint)(g->step >> 32);
    clSetKernelArg(l->kernel, 7, sizeof lo, &lo);
    clSetKernelArg(l->kernel, 8, sizeof hi, &hi);
}

static void nn__cl_update_sgd(nn_graph *g, nn__launch *l) {
    cl_float lr = g->lr * g->nodes[l->node].f[0];
    cl_int first = g->clock.t == 1;
    clSetKernelArg(l->kernel, 5, sizeof lr, &lr);
    clSetKernelArg(l->kernel, 10, sizeof first, &first);
}

static void nn__cl_update_adam(nn_graph *g, nn__launch *l) {
    cl_float lr = g->lr * g->nodes[l->node].f[0], bc1, bc2;
    nn__adam_bc(g, &bc1, &bc2);
    clSetKernelArg(l->kernel, 6, sizeof lr, &lr);
    clSetKernelArg(l->kernel, 12, sizeof bc1, &bc1);
    clSetKernelArg(l->kernel, 13, sizeof bc2, &bc2);
}

/* opt_step: the rate (with the parameter's multiplier) and this update's constants c0..c3 */
static void nn__cl_update_opt(nn_graph *g, nn__launch *l) {
    cl_float lr = g->lr * g->nodes[l->node].f[0];
    cl_uint k;
    clSetKernelArg(l->kernel, 9, sizeof lr, &lr);
    for (k = 0; k < 4; k++) clSetKernelArg(l->kernel, 17 + k, sizeof(cl_float), &g->clock.c[k]);
}

static void nn__cl_update_lamb_apply(nn_graph *g, nn__launch *l) {
    cl_float lr = g->lr * g->nodes[l->node].f[0];
    clSetKernelArg(l->kernel, 3, sizeof lr, &lr);
}

static void nn__cl_update_grad_acc(nn_graph *g, nn__launch *l) {
    cl_int reset = (g->step - 1) % (uint64_t)g->accum_steps == 0;
    clSetKernelArg(l->kernel, 4, sizeof reset, &reset);
}

/* OPT_STEP's launches: LARS reduces |w| and |g| first; LAMB computes u, reduces |w| and
   |u|, then applies (see nn_optim.c). */
static nn_result nn__cl_prepare_opt(nn_graph *g, int id) {
    nn_context *ctx = g->ctx;
    nn__node *n = &g->nodes[id], *p = &g->nodes[n->in[0]];
    cl_mem grad = g->nodes[n->in[1]].buf.mem, clip = n->n_in > 2 ? g->nodes[n->in[2]].buf.mem : g->one;
    cl_mem s[3], norms = n->scratch > 0 ? n->scratch_buf.mem : g->one;
    int np = (int)p->numel, k, lamb = n->i[0] == NN_OPT_LAMB;
    size_t wg = nn__cl_reduce_wg(g);
    float h[5], cv = nn__opt_cv(g);
    nn__launch *l = NULL;
    nn_result r;
    for (k = 0; k < 3; k++) s[k] = k < n->n_aux ? n->aux[k].mem : g->one; /* g->one: never written */
    if (lamb) s[2] = n->scratch_buf.mem;
    nn__opt_hparams(&g->opt, h);
    if (n->i[0] == NN_OPT_LARS) {
        r = nn__cl_add(g, id, "optim", "opt_norms", wg, &l);
        if (r != NN_OK) return r;
        l->gws[0] = l->lws[0] = wg;
        l->use_lws = 1;
        r = nn__cl_args(ctx, l->kernel, "mmmfimiL", p->buf.mem, grad, clip, (double)cv, np, norms, 0, wg * 8);
        if (r != NN_OK) return r;
    }
    r = nn__cl_add(g, id, "optim", "opt_step", (size_t)np, &l);
    if (r != NN_OK) return r;
    l->update = nn__cl_update_opt;
    r = nn__cl_args(ctx, l->kernel, "mmmmmmmiiffffffffffff", p->buf.mem, grad, clip, s[0], s[1], s[2], norms, np, n->i[0],
                    (double)g->lr, (double)(g->opt.weight_decay * n->f[1]), (double)cv, (double)h[0], (double)h[1],
                    (double)h[2], (double)h[3], (double)h[4], 0.0, 0.0, 0.0, 0.0);
    if (r != NN_OK || !lamb) return r;
    r = nn__cl_add(g, id, "optim", "opt_norms", wg, &l);
    if (r != NN_OK) return r;
    l->gws[0] = l->lws[0] = wg;
    l->use_lws = 1;
    r = nn__cl_args(ctx, l->kernel, "mmmfimiL", p->buf.mem, norms, g->one, (double)3.40282347e38f, np, norms, np, wg * 8);
    if (r != NN_OK) return r;
    r = nn__cl_add(g, id, "optim", "lamb_apply", (size_t)np, &l);
    if (r != NN_OK) return r;
    l->update = nn__cl_update_lamb_apply;
    return nn__cl_args(ctx, l->kernel, "mmif", p->buf.mem, norms, np, (double)g->lr);
}

/* A launch of kernels/gemm.cl with the geometry of a plan (nn_cl_gemm.c) */
static nn_result nn__cl_add_gemm_plan(nn_graph *g, int id, const nn__cl_gemm_plan *plan, nn__launch **l) {
    nn_result r = nn__cl_add(g, id, "gemm", plan->kernel, 1, l);
    if (r != NN_OK) return r;
    (*l)->dims = plan->dims;
    memcpy((*l)->gws, plan->gws, sizeof (*l)->gws);
    memcpy((*l)->lws, plan->lws, sizeof (*l)->lws);
    (*l)->use_lws = plan->lws[0] != 0;
    return NN_OK;
}

/* One launch of a batched GEMM (kernels/gemm.cl): outer*inner products of op(A) [M, K] *
   op(B) [K, Nc]; a, b and c are {ld, offset, outer stride, inner stride} in floats. */
static nn_result nn__cl_add_gemm(nn_graph *g, int id, int ta, int tb, int M, int Nc, int K, cl_mem A, const int *a,
                                 cl_mem B, const int *b, cl_mem C, const int *c, int outer, int inner) {
    nn_context *ctx = g->ctx;
    nn__cl_gemm_plan plan;
    nn__launch *l = NULL;
    nn_result r;
    nn__cl_gemm_plan_batched(ctx->cl.is_cpu, ctx->cl.max_wg, ctx->cl.local_mem, ta, tb, M, Nc, outer * inner, &plan);
    r = nn__cl_add_gemm_plan(g, id, &plan, &l);
    if (r != NN_OK) return r;
    return nn__cl_args(ctx, l->kernel, "iiimimimiffiiiiiiiiii", M, Nc, K, A, a[0], B, b[0], C, c[0], 1.0, 0.0, inner,
                       a[1], a[2], a[3], b[1], b[2], b[3], c[1], c[2], c[3]);
}

/* conv2d, its input gradient and its weight gradient as im2col + batched GEMM (the
   layouts are described in kernels/conv.cl); c is the forward geometry. */
static nn_result nn__cl_prepare_conv_gemm(nn_graph *g, int id, const nn__conv2d *c) {
    nn_context *ctx = g->ctx;
    nn__node *n = &g->nodes[id];
    cl_mem s = n->scratch_buf.mem, y = n->buf.mem, in0 = g->nodes[n->in[0]].buf.mem, in1 = g->nodes[n->in[1]].buf.mem;
    nn__cl_conv_plan p;
    int Cg = c->C / c->G, Kg = c->K / c->G, KKg = Cg * c->KH * c->KW, rows = c->C * c->KH * c->KW;
    int P = c->N * c->OH * c->OW, S = c->OH * c->OW, geo[8], ld, col, dyg;
    nn__launch *l = NULL;
    nn_result r;
    /* the kernels' shapes: by rows on CPU devices, by elements elsewhere (see conv.cl) */
    int rowwise = ctx->cl.is_cpu;
    const char *k_im2col = rowwise ? "conv2d_im2col_rows" : "conv2d_im2col";
    const char *k_pack = rowwise ? "conv2d_pack_rows" : "conv2d_pack";
    size_t n_im2col = rowwise ? (size_t)rows * (c->N * c->OH + 1) : 0, n_pack = rowwise ? (size_t)c->K * (c->N + 1) : 0;
    memcpy(geo, n->i, 7 * sizeof(int));
    geo[7] = 0;
    nn__cl_conv2d_plan(ctx, n->op, c, &p);
    if (!rowwise) n_im2col = (size_t)rows * p.ld, n_pack = (size_t)c->K * p.ld;
    ld = p.ld;
    if (n->op == NN__OP_CONV2D) { /* col = im2col(x); out_g = w_g col_g; y = out + bias */
        int wa[4], cb[4], oc[4], out = rows * ld;
        wa[0] = KKg, wa[1] = 0, wa[2] = Kg * KKg, wa[3] = 0;
        cb[0] = ld, cb[1] = 0, cb[2] = KKg * ld, cb[3] = 0;
        oc[0] = ld, oc[1] = out, oc[2] = Kg * ld, oc[3] = 0;
        r = nn__cl_add(g, id, "conv", k_im2col, n_im2col, &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmiiiiiiiii8i", in0, s, 0, c->N, c->C, c->H, c->W, c->KH, c->KW, c->OH, c->OW,
                            geo, ld);
        if (r == NN_OK) r = nn__cl_add_gemm(g, id, 0, 0, Kg, P, KKg, in1, wa, s, cb, s, oc, c->G, 1);
        if (r == NN_OK) r = nn__cl_add(g, id, "conv", rowwise ? "conv2d_unpack_rows" : "conv2d_unpack",
                                          rowwise ? (size_t)c->N * c->K : (size_t)n->numel, &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmmiiiiii", s, n->n_in > 2 ? g->nodes[n->in[2]].buf.mem : g->one, y, out, c->N, c->K, S,
                            ld, n->n_in > 2);
        return r;
    }
    if (n->op == NN__OP_CONV2D_DX) { /* dyg = pack(dy); dcol_g = w_g^T dyg_g; dx = col2im(dcol) */
        int wa[4], gb[4], dc[4], dcol = c->K * ld;
        wa[0] = KKg, wa[1] = 0, wa[2] = Kg * KKg, wa[3] = 0;
        gb[0] = ld, gb[1] = 0, gb[2] = Kg * ld, gb[3] = 0;
        dc[0] = ld, dc[1] = dcol, dc[2] = KKg * ld, dc[3] = 0;
        r = nn__cl_add(g, id, "conv", k_pack, n_pack, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmiiiii", in1, s, 0, c->N, c->K, S, ld);
        if (r == NN_OK) r = nn__cl_add_gemm(g, id, 1, 0, KKg, P, Kg, in0, wa, s, gb, s, dc, c->G, 1);
        if (r == NN_OK) r = nn__cl_add(g, id, "conv", rowwise ? "conv2d_col2im_planes" : "conv2d_col2im",
                                          rowwise ? (size_t)c->N * c->C : (size_t)n->numel, &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmiiiiiiiii8i", s, y, dcol, c->N, c->C, c->H, c->W, c->KH, c->KW, c->OH, c->OW,
                            geo, ld);
        return r;
    }
    { /* dw: col = im2col(x), dyg = pack(dy); dw_g = sum over K slices of dyg_g col_g^T */
        int ga[4], cb[4], wc[4], chunk = ld / p.split, part;
        col = 0;
        dyg = rows * ld;
        part = dyg + c->K * ld;
        ga[0] = ld, ga[1] = dyg, ga[2] = Kg * ld, ga[3] = chunk;
        cb[0] = ld, cb[1] = col, cb[2] = KKg * ld, cb[3] = chunk;
        wc[0] = KKg, wc[1] = p.split > 1 ? part : 0, wc[2] = Kg * KKg, wc[3] = c->K * KKg;
        r = nn__cl_add(g, id, "conv", k_im2col, n_im2col, &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmiiiiiiiii8i", in0, s, col, c->N, c->C, c->H, c->W, c->KH, c->KW, c->OH,
                            c->OW, geo, ld);
        if (r == NN_OK) r = nn__cl_add(g, id, "conv", k_pack, n_pack, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmiiiii", in1, s, dyg, c->N, c->K, S, ld);
        if (r == NN_OK) r = nn__cl_add_gemm(g, id, 0, 1, Kg, KKg, chunk, s, ga, s, cb, p.split > 1 ? s : y, wc, c->G, p.split);
        if (r == NN_OK && p.split > 1) {
            r = nn__cl_add(g, id, "elementwise", "sum_leading", (size_t)c->K * KKg, &l);
            if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmiii", s, y, p.split * c->K * KKg, c->K * KKg, part);
        }
        return r;
    }
}

static const char *nn__cl_pool_kernel(int op) {
    switch (op) {
    case NN__OP_MAXPOOL2D: return "max_pool2d_forward";
    case NN__OP_MAXPOOL2D_ARGMAX: return "max_pool2d_argmax";
    case NN__OP_MAXPOOL2D_GRAD: return "max_pool2d_backward";
    case NN__OP_AVGPOOL2D: return "avg_pool2d_forward";
    default: return "avg_pool2d_backward";
    }
}

#define NN__M(id) (g->nodes[(id)].buf.mem)

static nn_result nn__cl_prepare(nn_graph *g, int id) {
    nn_context *ctx = g->ctx;
    nn__node *n = &g->nodes[id];
    const int *in = n->in;
    cl_mem y = n->buf.mem;
    int N = (int)n->numel;
    nn__launch *l = NULL;
    nn_result r = NN_OK;
    char kname[64];
    switch (n->op) {
    case NN__OP_MATMUL: {
        nn__node *a = &g->nodes[in[0]], *b = &g->nodes[in[1]];
        int M = (int)n->shape.dim[0], Nn = (int)n->shape.dim[1];
        int K = (int)(n->i[0] ? a->shape.dim[0] : a->shape.dim[1]);
        nn__cl_gemm_plan plan;
        nn__cl_gemm_plan_make(ctx->cl.is_cpu, ctx->cl.max_wg, ctx->cl.local_mem, n->i[0], n->i[1], M, Nn, K, &plan);
        r = nn__cl_add_gemm_plan(g, id, &plan, &l);
        if (r != NN_OK) return r;
        return nn__cl_args(ctx, l->kernel, "iiimimimiff", M, Nn, K, a->buf.mem, (int)a->shape.dim[1], b->buf.mem,
                           (int)b->shape.dim[1], y, Nn, 1.0, 0.0);
    }
    case NN__OP_ADD: case NN__OP_SUB: case NN__OP_MUL:
        r = nn__cl_add(g, id, "elementwise", n->op == NN__OP_ADD ? "add" : n->op == NN__OP_SUB ? "sub" : "mul", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmii", NN__M(in[0]), NN__M(in[1]), y, N, (int)g->nodes[in[1]].numel);
        return r;
    case NN__OP_SCALE:
        r = nn__cl_add(g, id, "elementwise", "scale", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmif", NN__M(in[0]), y, N, (double)n->f[0]);
        return r;
    case NN__OP_UNARY:
        snprintf(kname, sizeof kname, "%s_forward", nn__unary_names[n->i[0]]);
        r = nn__cl_add(g, id, "elementwise", kname, (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmif", NN__M(in[0]), y, N, (double)n->f[0]);
        return r;
    case NN__OP_UNARY_GRAD:
        snprintf(kname, sizeof kname, "%s_backward", nn__unary_names[n->i[0]]);
        r = nn__cl_add(g, id, "elementwise", kname, (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmif", NN__M(in[0]), NN__M(in[1]), y, N, (double)n->f[0]);
        return r;
    case NN__OP_SOFTMAX: case NN__OP_LOG_SOFTMAX: {
        int C = (int)nn__last_dim(n);
        r = nn__cl_add(g, id, "softmax", "softmax_forward", (size_t)(N / C), &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmiii", NN__M(in[0]), y, N / C, C, n->op == NN__OP_LOG_SOFTMAX);
        return r;
    }
    case NN__OP_SOFTMAX_GRAD: case NN__OP_LOG_SOFTMAX_GRAD: {
        int C = (int)nn__last_dim(n);
        r = nn__cl_add(g, id, "softmax", "softmax_backward", (size_t)(N / C), &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmmiii", NN__M(in[0]), NN__M(in[1]), y, N / C, C, n->op == NN__OP_LOG_SOFTMAX_GRAD);
        return r;
    }
    case NN__OP_SUM_ALL: case NN__OP_GRAD_SUMSQ: {
        size_t wg = nn__cl_reduce_wg(g);
        int m = (int)g->nodes[in[0]].numel;
        r = nn__cl_add(g, id, "reduce", n->op == NN__OP_SUM_ALL ? "sum_all" : "grad_sumsq", wg, &l);
        if (r != NN_OK) return r;
        l->gws[0] = l->lws[0] = wg;
        l->use_lws = 1;
        if (n->op == NN__OP_SUM_ALL) return nn__cl_args(ctx, l->kernel, "mmifL", NN__M(in[0]), y, m, (double)n->f[0], wg * 4);
        return nn__cl_args(ctx, l->kernel, "mmmiiL", NN__M(in[0]), n->n_in > 1 ? NN__M(in[1]) : g->one, y, m, n->n_in > 1, wg * 4);
    }
    case NN__OP_CLIP_SCALE:
        r = nn__cl_add(g, id, "reduce", "clip_scale", 1, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmf", NN__M(in[0]), y, (double)n->f[0]);
        return r;
    case NN__OP_EXPAND_SCALAR:
        r = nn__cl_add(g, id, "elementwise", "expand_scalar", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmif", NN__M(in[0]), y, N, (double)n->f[0]);
        return r;
    case NN__OP_SUM_LEAD:
        r = nn__cl_add(g, id, "elementwise", "sum_leading", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmiii", NN__M(in[0]), y, (int)g->nodes[in[0]].numel, N, 0);
        return r;
    case NN__OP_XENT_ROWS: {
        nn__node *x = &g->nodes[in[0]];
        r = nn__cl_add(g, id, "softmax", "xent_forward", (size_t)x->shape.dim[0], &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmmii", x->buf.mem, NN__M(in[1]), y, (int)x->shape.dim[0], (int)x->shape.dim[1]);
        return r;
    }
    case NN__OP_XENT_GRAD:
        r = nn__cl_add(g, id, "softmax", "xent_backward", (size_t)n->shape.dim[0], &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmmmii", NN__M(in[0]), NN__M(in[1]), NN__M(in[2]), y, (int)n->shape.dim[0],
                            (int)n->shape.dim[1]);
        return r;
    case NN__OP_BCE_LOGITS:
        r = nn__cl_add(g, id, "elementwise", "bce_logits_forward", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmi", NN__M(in[0]), NN__M(in[1]), y, N);
        return r;
    case NN__OP_BCE_LOGITS_GRAD:
        r = nn__cl_add(g, id, "elementwise", "bce_logits_backward", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmmi", NN__M(in[0]), NN__M(in[1]), NN__M(in[2]), y, N);
        return r;
    case NN__OP_DROPOUT:
        r = nn__cl_add(g, id, "random", "dropout", (size_t)N, &l);
        if (r != NN_OK) return r;
        l->update = nn__cl_update_dropout;
        return nn__cl_args(ctx, l->kernel, "mmifuuuuu", NN__M(in[0]), y, N, (double)n->f[0], (unsigned)g->seed,
                           (unsigned)(g->seed >> 32), (unsigned)n->i[0], 0u, 0u);
    case NN__OP_GATHER_ROWS: {
        nn__node *d = &g->nodes[in[0]];
        int B = (int)n->shape.dim[0], D = (int)(d->numel / d->shape.dim[0]);
        r = nn__cl_add(g, id, "gather", "gather_rows", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmiii", d->buf.mem, NN__M(in[1]), y, B, (int)d->shape.dim[0], D);
        return r;
    }
    case NN__OP_GATHER_ROWS_GRAD: {
        int B = (int)g->nodes[in[1]].shape.dim[0], R = (int)n->shape.dim[0];
        r = nn__cl_add(g, id, "gather", "gather_rows_backward", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmiii", NN__M(in[0]), NN__M(in[1]), y, B, R, N / R);
        return r;
    }
    case NN__OP_ARGMAX: case NN__OP_CORRECT_ROWS: {
        nn__node *x = &g->nodes[in[0]];
        int B = (int)x->shape.dim[0], C = (int)x->shape.dim[1];
        if (n->op == NN__OP_ARGMAX) {
            r = nn__cl_add(g, id, "softmax", "argmax_rows", (size_t)B, &l);
            if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmii", x->buf.mem, y, B, C);
        } else {
            r = nn__cl_add(g, id, "softmax", "correct_rows", (size_t)B, &l);
            if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmii", x->buf.mem, NN__M(in[1]), y, B, C);
        }
        return r;
    }
    case NN__OP_ACCUMULATE:
        r = nn__cl_add(g, id, "elementwise", "accumulate", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmi", NN__M(in[0]), y, N);
        return r;
    case NN__OP_FILL:
        r = nn__cl_add(g, id, "elementwise", "fill", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mif", y, N, (double)n->f[0]);
        return r;
    case NN__OP_OPT_SGD: {
        nn__node *p = &g->nodes[in[0]];
        int np = (int)p->numel;
        r = nn__cl_add(g, id, "optim", "sgd", (size_t)np, &l);
        if (r != NN_OK) return r;
        l->update = nn__cl_update_sgd;
        return nn__cl_args(ctx, l->kernel, "mmmmiffffiif", p->buf.mem, NN__M(in[1]), n->n_aux ? n->aux[0].mem : g->one,
                           n->n_in > 2 ? NN__M(in[2]) : g->one, np, (double)g->lr, (double)g->opt.momentum,
                           (double)g->opt.dampening, (double)(g->opt.weight_decay * n->f[1]), g->opt.nesterov, 1,
                           (double)nn__opt_cv(g));
    }
    case NN__OP_OPT_ADAM: {
        nn__node *p = &g->nodes[in[0]];
        int np = (int)p->numel;
        r = nn__cl_add(g, id, "optim", "adam", (size_t)np, &l);
        if (r != NN_OK) return r;
        l->update = nn__cl_update_adam;
        return nn__cl_args(ctx, l->kernel, "mmmmmifffffifff", p->buf.mem, NN__M(in[1]), n->aux[0].mem, n->aux[1].mem,
                           n->n_in > 2 ? NN__M(in[2]) : g->one, np, (double)g->lr, (double)g->opt.beta1,
                           (double)g->opt.beta2, (double)g->opt.eps, (double)(g->opt.weight_decay * n->f[1]),
                           g->opt.kind == NN_OPT_ADAMW, 1.0, 1.0, (double)nn__opt_cv(g));
    }
    case NN__OP_CONV2D: case NN__OP_CONV2D_DX: case NN__OP_CONV2D_DW: {
        nn__conv2d c;
        nn__node *x = &g->nodes[in[0]], *w = &g->nodes[in[1]];
        int geo[8];
        memcpy(geo, n->i, 7 * sizeof(int));
        geo[7] = 0;
        if (n->algo == NN__CONV_GEMM) {
            if (n->op == NN__OP_CONV2D) nn__conv2d_geom(&c, &x->shape, &w->shape, n->i);
            else if (n->op == NN__OP_CONV2D_DX) nn__conv2d_geom(&c, &n->shape, &x->shape, n->i);
            else nn__conv2d_geom(&c, &x->shape, &n->shape, n->i);
            return nn__cl_prepare_conv_gemm(g, id, &c);
        }
        if (n->op == NN__OP_CONV2D) {
            nn__conv2d_geom(&c, &x->shape, &w->shape, n->i);
            r = nn__cl_add(g, id, "conv", "conv2d_forward", (size_t)N, &l);
            if (r == NN_OK)
                r = nn__cl_args(ctx, l->kernel, "mmmmiiiiiiiii8i", x->buf.mem, w->buf.mem, n->n_in > 2 ? NN__M(in[2]) : g->one,
                                y, c.N, c.C, c.H, c.W, c.K, c.KH, c.KW, c.OH, c.OW, geo, n->n_in > 2);
            return r;
        }
        if (n->op == NN__OP_CONV2D_DX) nn__conv2d_geom(&c, &n->shape, &x->shape, n->i);
        else nn__conv2d_geom(&c, &x->shape, &n->shape, n->i);
        r = nn__cl_add(g, id, "conv", n->op == NN__OP_CONV2D_DX ? "conv2d_backward_data" : "conv2d_backward_weight", (size_t)N, &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmmiiiiiiiii8", x->buf.mem, w->buf.mem, y, c.N, c.C, c.H, c.W, c.K, c.KH, c.KW,
                            c.OH, c.OW, geo);
        return r;
    }
    case NN__OP_CHANNEL_BIAS: {
        int C = (int)n->shape.dim[1], S = (int)(n->numel / (n->shape.dim[0] * n->shape.dim[1]));
        r = nn__cl_add(g, id, "elementwise", "channel_bias", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmiii", NN__M(in[0]), NN__M(in[1]), y, N, C, S);
        return r;
    }
    case NN__OP_CHANNEL_SUM: {
        nn__node *x = &g->nodes[in[0]];
        int Nb = (int)x->shape.dim[0], C = (int)x->shape.dim[1];
        r = nn__cl_add(g, id, "conv", "channel_sum", (size_t)C, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmiii", x->buf.mem, y, Nb, C, (int)(x->numel / ((int64_t)Nb * C)));
        return r;
    }
    case NN__OP_RESHAPE:
        r = nn__cl_add(g, id, "elementwise", "copy", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmi", NN__M(in[0]), y, N);
        return r;
    case NN__OP_PERMUTE: {
        int64_t dims[NN_MAX_DIMS], xs[NN_MAX_DIMS];
        int vd[8], vs[8], d;
        nn__permute_geom(n, &g->nodes[in[0]].shape, dims, xs);
        for (d = 0; d < 8; d++) {
            vd[d] = d < NN_MAX_DIMS ? (int)dims[d] : 1;
            vs[d] = d < NN_MAX_DIMS ? (int)xs[d] : 0;
        }
        r = nn__cl_add(g, id, "shape", "permute", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmi88", NN__M(in[0]), y, N, vd, vs);
        return r;
    }
    case NN__OP_CONCAT2: {
        int64_t o, la, lb, inner;
        nn__axis_split(&g->nodes[in[0]].shape, n->i[0], &o, &la, &inner);
        lb = g->nodes[in[1]].shape.dim[n->i[0]];
        r = nn__cl_add(g, id, "shape", "concat", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmiiii", NN__M(in[0]), NN__M(in[1]), y, N, (int)la, (int)lb, (int)inner);
        return r;
    }
    case NN__OP_SLICE: case NN__OP_SLICE_GRAD: {
        int grad = n->op == NN__OP_SLICE_GRAD;
        int64_t o, L, inner, len;
        nn__axis_split(grad ? &n->shape : &g->nodes[in[0]].shape, n->i[0], &o, &L, &inner);
        len = (grad ? g->nodes[in[0]].shape : n->shape).dim[n->i[0]];
        r = nn__cl_add(g, id, "shape", "slice", (size_t)N, &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmiiiiii", NN__M(in[0]), y, N, (int)L, (int)len, (int)inner, n->i[1], grad);
        return r;
    }
    case NN__OP_PAD2D: case NN__OP_PAD2D_GRAD: case NN__OP_UPSAMPLE2D: case NN__OP_UPSAMPLE2D_GRAD: {
        int fwd = n->op == NN__OP_PAD2D || n->op == NN__OP_UPSAMPLE2D, pad = n->op == NN__OP_PAD2D || n->op == NN__OP_PAD2D_GRAD;
        const nn_shape *xs = fwd ? &g->nodes[in[0]].shape : &n->shape;
        const nn_shape *ys = fwd ? &n->shape : &g->nodes[in[0]].shape;
        int nd = xs->ndim, geo[8];
        memset(geo, 0, sizeof geo);
        geo[0] = (int)xs->dim[nd - 2];
        geo[1] = (int)xs->dim[nd - 1];
        if (pad) {
            geo[2] = (int)ys->dim[nd - 2];
            geo[3] = (int)ys->dim[nd - 1];
            geo[4] = n->i[0];
            geo[5] = n->i[1];
            geo[6] = n->i[2];
        } else {
            geo[2] = n->i[0];
            geo[3] = n->i[1];
            geo[4] = n->i[2];
        }
        r = nn__cl_add(g, id, "shape",
                       pad ? (fwd ? "pad2d_forward" : "pad2d_backward") : (fwd ? "upsample2d_forward" : "upsample2d_backward"),
                       (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmi8", NN__M(in[0]), y, N, geo);
        return r;
    }
    case NN__OP_NORM_FORWARD: { /* x, stats, [gamma], [beta]; g->one stands in for an absent one */
        const int *a = n->i;
        r = nn__cl_add(g, id, "norm", "norm_forward", (size_t)N, &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmmmmiiiiiiif", NN__M(in[0]), NN__M(in[1]), a[5] ? NN__M(in[2]) : g->one,
                            a[6] ? NN__M(in[2 + a[5]]) : g->one, y, a[0], a[1], a[2], a[3], a[4], a[5], a[6], (double)n->f[0]);
        return r;
    }
    case NN__OP_NORM_STATS: case NN__OP_NORM_DX: case NN__OP_NORM_DGAMMA: case NN__OP_NORM_DBETA: {
        /* one work-group per statistics group (stats, dx) or per channel (dgamma, dbeta), no
           larger than the power of two that covers the elements it reduces */
        const int *a = n->i;
        nn__norm q;
        int per_group = n->op == NN__OP_NORM_STATS || n->op == NN__OP_NORM_DX;
        size_t wg = nn__cl_reduce_wg(g), groups, count;
        nn__norm_geom(&q, a);
        groups = (size_t)(per_group ? nn__norm_groups(&q) : q.C);
        count = (size_t)(per_group ? nn__norm_count(&q) : q.A * q.S);
        while (wg > 1 && wg / 2 >= count) wg /= 2;
        r = nn__cl_add(g, id, "norm",
                       n->op == NN__OP_NORM_STATS ? "norm_stats" : n->op == NN__OP_NORM_DX ? "norm_backward_data" : "norm_backward_affine",
                       groups * wg, &l);
        if (r != NN_OK) return r;
        l->gws[0] = groups * wg;
        l->lws[0] = wg;
        l->use_lws = 1;
        if (n->op == NN__OP_NORM_STATS)
            return nn__cl_args(ctx, l->kernel, "mmiiiiiL", NN__M(in[0]), y, a[0], a[1], a[2], a[3], a[4], wg * 4);
        if (n->op == NN__OP_NORM_DX) /* x, stats, dy, [gamma] */
            return nn__cl_args(ctx, l->kernel, "mmmmmiiiiiiifL", NN__M(in[0]), NN__M(in[1]), NN__M(in[2]),
                               a[5] ? NN__M(in[3]) : g->one, y, a[0], a[1], a[2], a[3], a[4], a[5], a[7], (double)n->f[0], wg * 4);
        if (n->op == NN__OP_NORM_DGAMMA) /* x, stats, dy */
            return nn__cl_args(ctx, l->kernel, "mmmmiiiiiifL", NN__M(in[0]), NN__M(in[1]), NN__M(in[2]), y, a[0], a[1], a[2],
                               a[3], a[4], 1, (double)n->f[0], wg * 4);
        return nn__cl_args(ctx, l->kernel, "mmmmiiiiiifL", g->one, g->one, NN__M(in[0]), y, a[0], a[1], a[2], a[3], a[4], 0,
                           (double)n->f[0], wg * 4);
    }
    case NN__OP_BN_RUNNING: { /* running mean, running var (updated in place), stats */
        int64_t cnt = (int64_t)n->i[0] * n->i[2];
        r = nn__cl_add(g, id, "norm", "batch_norm_running", (size_t)n->i[1], &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmmiff", NN__M(in[0]), NN__M(in[1]), NN__M(in[2]), n->i[1], (double)n->f[1],
                            (double)cnt / (double)(cnt - 1));
        return r;
    }
    case NN__OP_BN_PACK:
        r = nn__cl_add(g, id, "norm", "batch_norm_pack", (size_t)n->i[1], &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmi", NN__M(in[0]), NN__M(in[1]), y, n->i[1]);
        return r;
    case NN__OP_OPT_STEP: return nn__cl_prepare_opt(g, id);
    case NN__OP_GRAD_ACC:
        r = nn__cl_add(g, id, "optim", "grad_acc", (size_t)N, &l);
        if (r != NN_OK) return r;
        l->update = nn__cl_update_grad_acc;
        return nn__cl_args(ctx, l->kernel, "mmifi", y, NN__M(in[0]), N, (double)n->f[0], 1);
    case NN__OP_MAXPOOL2D: case NN__OP_MAXPOOL2D_ARGMAX: case NN__OP_MAXPOOL2D_GRAD:
    case NN__OP_AVGPOOL2D: case NN__OP_AVGPOOL2D_GRAD: { /* one work-item per element of y */
        nn__pooling p;
        int geo[8];
        nn__pooling_of(g, n, &p);
        memcpy(geo, n->i, 6 * sizeof(int));
        geo[6] = p.dh;
        geo[7] = p.dw;
        if (ctx->cl.is_cpu && (n->op == NN__OP_MAXPOOL2D || n->op == NN__OP_MAXPOOL2D_ARGMAX ||
                               n->op == NN__OP_MAXPOOL2D_GRAD)) { /* by rows / planes (see pool.cl) */
            snprintf(kname, sizeof kname, "%s%s", nn__cl_pool_kernel(n->op),
                     n->op == NN__OP_MAXPOOL2D_GRAD ? "_planes" : "_rows");
            r = nn__cl_add(g, id, "pool", kname, n->op == NN__OP_MAXPOOL2D_GRAD ? (size_t)p.NC : (size_t)p.NC * p.OH, &l);
        } else
            r = nn__cl_add(g, id, "pool", nn__cl_pool_kernel(n->op), (size_t)N, &l);
        if (r != NN_OK) return r;
        if (n->op == NN__OP_MAXPOOL2D_GRAD)
            return nn__cl_args(ctx, l->kernel, "mmmiiiii8", NN__M(in[0]), NN__M(in[1]), y, p.NC, p.H, p.W, p.OH, p.OW, geo);
        if (n->op != NN__OP_AVGPOOL2D && n->op != NN__OP_AVGPOOL2D_GRAD)
            return nn__cl_args(ctx, l->kernel, "mmiiiii8", NN__M(in[0]), y, p.NC, p.H, p.W, p.OH, p.OW, geo);
        return nn__cl_args(ctx, l->kernel, "mmiiiii8ii", NN__M(in[0]), y, p.NC, p.H, p.W, p.OH, p.OW, geo, p.exclude_pad,
                           p.adaptive);
    }
    case NN__OP_LOSS_EW: case NN__OP_LOSS_EW_GRAD: {
        int grad = n->op == NN__OP_LOSS_EW_GRAD, pwi = grad ? 3 : 2;
        cl_mem pw = n->i[1] ? NN__M(in[pwi]) : g->one;
        int npw = n->i[1] ? (int)g->nodes[in[pwi]].numel : 1;
        r = nn__cl_add(g, id, "loss", grad ? "loss_ew_backward" : "loss_ew_forward", (size_t)N, &l);
        if (r != NN_OK) return r;
        return nn__cl_args(ctx, l->kernel, "mmmmmiiiiff", NN__M(in[0]), NN__M(in[1]), pw, grad ? NN__M(in[2]) : g->one, y, N,
                           npw, n->i[0], n->i[2], (double)n->f[0], (double)n->f[1]);
    }
    case NN__OP_CE_ROWS: case NN__OP_CE_ROWS_GRAD: {
        int grad = n->op == NN__OP_CE_ROWS_GRAD, wi = grad ? 3 : 2, B = (int)g->nodes[in[0]].shape.dim[0];
        r = nn__cl_add(g, id, "loss", grad ? "ce_rows_backward" : "ce_rows_forward", (size_t)B, &l);
        if (r != NN_OK) return r;
        return nn__cl_args(ctx, l->kernel, "mmmmmiiiiif", NN__M(in[0]), NN__M(in[1]), n->n_in > wi ? NN__M(in[wi]) : g->one,
                           grad ? NN__M(in[2]) : g->one, y, B, (int)g->nodes[in[0]].shape.dim[1], n->i[0], n->i[1],
                           n->n_in > wi, (double)n->f[0]);
    }
    case NN__OP_CE_WEIGHTS:
        r = nn__cl_add(g, id, "loss", "ce_weights", (size_t)N, &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmmiiii", NN__M(in[0]), n->n_in > 1 ? NN__M(in[1]) : g->one, y, N, n->i[1], n->i[0],
                            n->n_in > 1);
        return r;
    case NN__OP_DIV_SCALAR:
        r = nn__cl_add(g, id, "loss", "div_scalar", (size_t)N, &l);
        if (r == NN_OK) r = nn__cl_args(ctx, l->kernel, "mmmi", NN__M(in[0]), NN__M(in[1]), y, N);
        return r;
    case NN__OP_LOSS_ROWS: case NN__OP_LOSS_ROWS_GRAD: {
        int grad = n->op == NN__OP_LOSS_ROWS_GRAD, nx = n->n_in - grad, B = (int)g->nodes[in[0]].shape.dim[0];
        r = nn__cl_add(g, id, "loss", grad ? "rows_backward" : "rows_forward", (size_t)B, &l);
        if (r != NN_OK) return r;
        return nn__cl_args(ctx, l->kernel, "mmmmmiiiif", NN__M(in[0]), NN__M(in[1]), nx > 2 ? NN__M(in[2]) : g->one,
                           grad ? NN__M(in[n->n_in - 1]) : g->one, y, B, (int)(g->nodes[in[0]].numel / B), n->i[0],
                           grad ? n->i[1] : 0, (double)n->f[0]);
    }
    case NN__OP_CONV3D: case NN__OP_CONV3D_DX: case NN__OP_CONV3D_DW: {
        nn__conv3d c;
        nn__node *x = &g->nodes[in[0]], *w = &g->nodes[in[1]];
        int geo[16]; /* ga = stride d/h/w, pad d/h/w, dilation d/h; gb = dilation w, groups */
        memset(geo, 0, sizeof geo);
        memcpy(geo, n->i, 10 * sizeof(int));
        if (n->op == NN__OP_CONV3D) {
            nn__conv3d_geom(&c, &x->shape, &w->shape, n->i);
            r = nn__cl_add(g, id, "conv3d", "conv3d_forward", (size_t)N, &l);
            if (r == NN_OK)
                r = nn__cl_args(ctx, l->kernel, "mmmmiiiiiiiiiiii88i", x->buf.mem, w->buf.mem,
                                n->n_in > 2 ? NN__M(in[2]) : g->one, y, c.N, c.C, c.D, c.H, c.W, c.K, c.KD, c.KH, c.KW,
                                c.OD, c.OH, c.OW, geo, geo + 8, n->n_in > 2);
            return r;
        }
        if (n->op == NN__OP_CONV3D_DX) nn__conv3d_geom(&c, &n->shape, &x->shape, n->i);
        else nn__conv3d_geom(&c, &x->shape, &n->shape, n->i);
        r = nn__cl_add(g, id, "conv3d", n->op == NN__OP_CONV3D_DX ? "conv3d_backward_data" : "conv3d_backward_weight",
                       (size_t)N, &l);
        if (r == NN_OK)
            r = nn__cl_args(ctx, l->kernel, "mmmiiiiiiiiiiii88", x->buf.mem, w->buf.mem, y, c.N, c.C, c.D, c.H, c.W, c.K,
                            c.KD, c.KH, c.KW, c.OD, c.OH, c.OW, geo, geo + 8);
        return r;
    }
    default:
        return nn__fail(ctx, NN_ERR_STATE, "%s: no OpenCL kernel", nn__op_names[n->op]);
    }
}
#undef NN__M

#endif /* NN_NO_OPENCL */
