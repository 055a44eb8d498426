/* Composed layers: each a short function of the public builders above (no op kind of its
   own, no kernel), with PyTorch's parameter names. Their gradients are the ops' own. */
#include "../base/internal.h"

/* 1 when x is a float32 tensor of g with ndim dims (ndim 0: any); else the layer fails
   naming itself, its name and x's shape. */
static int nn__layer_x(nn_graph *g, const char *op, const char *name, nn_tensor x, int ndim, const char *what) {
    const nn_shape *s;
    if (!nn__check(g, op, 1, &x) || !nn__expect_f32(g, op, x, "x")) return 0;
    s = &nn__n(g, x)->shape;
    if (ndim && s->ndim != ndim) {
        char b[128];
        nn__shape_str(s, b, sizeof b);
        nn__op_fail(g, NN_ERR_SHAPE, "%s%s%s: x %s must be %s", op, name ? " " : "", name ? name : "", b, what);
        return 0;
    }
    return 1;
}

/* A name for the layer's parameters: NAME.suffix (at most 200 chars of NAME). */
static int nn__layer_name(nn_graph *g, const char *op, const char *name) {
    if (!name || !name[0] || strlen(name) > 200) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a name (at most 200 chars)", op);
        return 0;
    }
    return 1;
}

NN_API nn_tensor nn_se_layer(nn_graph *g, nn_tensor x, int reduction, const char *name) {
    char n1[256], n2[256];
    nn_tensor s;
    int64_t c, n, hidden;
    if (!nn__layer_x(g, "nn_se_layer", name, x, 4, "4-D [N, C, H, W]") || !nn__layer_name(g, "nn_se_layer", name))
        return nn__tensor(-1);
    if (reduction < 1) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_se_layer %s: reduction %d is not >= 1", name, reduction);
    n = nn__n(g, x)->shape.dim[0];
    c = nn__n(g, x)->shape.dim[1];
    hidden = c / reduction > 0 ? c / reduction : 1;
    snprintf(n1, sizeof n1, "%s.fc1", name);
    snprintf(n2, sizeof n2, "%s.fc2", name);
    s = nn_reshape(g, nn_global_avg_pool2d(g, x), nn_shape2(n, c));
    s = nn_relu(g, nn_linear_layer(g, s, hidden, NULL, n1));
    s = nn_sigmoid(g, nn_linear_layer(g, s, c, NULL, n2));
    return nn_mul(g, x, nn_reshape(g, s, nn_shape4(n, c, 1, 1)));
}

NN_API nn_tensor nn_glu(nn_graph *g, nn_tensor x, int dim) {
    const nn_shape *s;
    int64_t h;
    if (!nn__layer_x(g, "nn_glu", NULL, x, 0, "")) return nn__tensor(-1);
    s = &nn__n(g, x)->shape;
    if (dim < -s->ndim || dim >= s->ndim) {
        char b[128];
        nn__shape_str(s, b, sizeof b);
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_glu: dim %d is out of range for x %s", dim, b);
    }
    if (dim < 0) dim += s->ndim;
    if (s->dim[dim] % 2) {
        char b[128];
        nn__shape_str(s, b, sizeof b);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_glu: x %s has an odd size along dim %d", b, dim);
    }
    h = s->dim[dim] / 2;
    return nn_mul(g, nn_slice(g, x, dim, 0, h), nn_sigmoid(g, nn_slice(g, x, dim, h, h)));
}

/* x [..., D] as [rows, D] for nn_linear_layer; *rows_shape keeps the leading dims. */
static nn_tensor nn__layer_rows(nn_graph *g, nn_tensor x, nn_shape *lead) {
    nn_shape s = nn__n(g, x)->shape;
    int64_t rows = 1;
    int i;
    for (i = 0; i + 1 < s.ndim; i++) rows *= s.dim[i];
    *lead = s;
    if (s.ndim == 2) return x;
    return nn_reshape(g, x, nn_shape2(rows, s.dim[s.ndim - 1]));
}

static nn_tensor nn__layer_unrows(nn_graph *g, nn_tensor y, nn_shape lead) {
    if (lead.ndim == 2) return y;
    return nn_reshape(g, y, lead);
}

NN_API nn_tensor nn_swiglu_layer(nn_graph *g, nn_tensor x, int64_t hidden, const char *name) {
    char n1[256], n2[256], n3[256];
    nn_linear_desc nb;
    nn_shape lead;
    nn_tensor r, a, b;
    if (!nn__layer_x(g, "nn_swiglu_layer", name, x, 0, "") || !nn__layer_name(g, "nn_swiglu_layer", name)) return nn__tensor(-1);
    if (hidden < 1) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_swiglu_layer %s: hidden %lld is not >= 1", name, (long long)hidden);
    memset(&nb, 0, sizeof nb);
    nb.no_bias = 1;
    snprintf(n1, sizeof n1, "%s.w1", name);
    snprintf(n2, sizeof n2, "%s.w2", name);
    snprintf(n3, sizeof n3, "%s.w3", name);
    r = nn__layer_rows(g, x, &lead);
    a = nn_silu(g, nn_linear_layer(g, r, hidden, &nb, n1));
    b = nn_linear_layer(g, r, hidden, &nb, n3);
    return nn__layer_unrows(g, nn_linear_layer(g, nn_mul(g, a, b), lead.dim[lead.ndim - 1], &nb, n2), lead);
}

NN_API nn_tensor nn_highway_layer(nn_graph *g, nn_tensor x, const char *name) {
    char nh[256], nt[256];
    nn_shape lead;
    nn_tensor r, h, t;
    int64_t d;
    if (!nn__layer_x(g, "nn_highway_layer", name, x, 0, "") || !nn__layer_name(g, "nn_highway_layer", name)) return nn__tensor(-1);
    snprintf(nh, sizeof nh, "%s.H", name);
    snprintf(nt, sizeof nt, "%s.T", name);
    r = nn__layer_rows(g, x, &lead);
    d = lead.dim[lead.ndim - 1];
    h = nn_relu(g, nn_linear_layer(g, r, d, NULL, nh));
    t = nn_sigmoid(g, nn_linear_layer(g, r, d, NULL, nt));
    /* t * h + (1 - t) * x = x + t * (h - x) */
    return nn__layer_unrows(g, nn_add(g, r, nn_mul(g, t, nn_sub(g, h, r))), lead);
}

NN_API nn_tensor nn_rmse_loss(nn_graph *g, nn_tensor pred, nn_tensor target, const nn_loss_desc *desc) {
    return nn_sqrt(g, nn_mse_loss(g, pred, target, desc));
}

/* Rows divided by their L2 norms clamped below at 1e-12 (F.normalize's eps). */
static nn_tensor nn__layer_normalize(nn_graph *g, nn_tensor z) {
    int d1 = 1;
    return nn_div(g, z, nn_clamp(g, nn_norm_dim(g, z, 2.0f, &d1, 1, 1), 1e-12f, NAN));
}

NN_API nn_tensor nn_info_nce_loss(nn_graph *g, nn_tensor z1, nn_tensor z2, float temperature, const nn_loss_desc *desc) {
    nn_tensor a, b, logits, diag, rows;
    nn_reduction r = desc ? desc->reduction : NN_REDUCTION_DEFAULT;
    int d1 = 1;
    if (!nn__layer_x(g, "nn_info_nce_loss", NULL, z1, 2, "2-D [B, D]") ||
        !nn__layer_x(g, "nn_info_nce_loss", NULL, z2, 2, "2-D [B, D]"))
        return nn__tensor(-1);
    if (!(temperature > 0) || !isfinite(temperature))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_info_nce_loss: temperature %g is not > 0 and finite", (double)temperature);
    if (r != NN_REDUCTION_DEFAULT && r != NN_REDUCTION_MEAN && r != NN_REDUCTION_SUM && r != NN_REDUCTION_NONE)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_info_nce_loss: reduction %d is not one this loss takes", (int)r);
    if (!nn__shape_eq(&nn__n(g, z1)->shape, &nn__n(g, z2)->shape)) {
        char s1[128], s2[128];
        nn__shape_str(&nn__n(g, z1)->shape, s1, sizeof s1);
        nn__shape_str(&nn__n(g, z2)->shape, s2, sizeof s2);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_info_nce_loss: z1 %s and z2 %s differ", s1, s2);
    }
    a = nn__layer_normalize(g, z1);
    b = nn__layer_normalize(g, z2);
    logits = nn_mul_scalar(g, nn_matmul(g, a, b, 0, 1), 1.0f / temperature);
    diag = nn_mul_scalar(g, nn_sum_dim(g, nn_mul(g, a, b), &d1, 1, 0), 1.0f / temperature);
    rows = nn_sub(g, nn_logsumexp_dim(g, logits, &d1, 1, 0), diag); /* [B] */
    return r == NN_REDUCTION_NONE ? rows : r == NN_REDUCTION_SUM ? nn_sum(g, rows) : nn_mean(g, rows);
}

NN_API nn_tensor nn_rbf_layer(nn_graph *g, nn_tensor x, int64_t n_centers, const char *name) {
    char nc[256], ng[256];
    nn_tensor c, lg, d2;
    nn_init ci, gi;
    int d2i = 2;
    if (!nn__layer_x(g, "nn_rbf_layer", name, x, 2, "2-D [B, D]") || !nn__layer_name(g, "nn_rbf_layer", name))
        return nn__tensor(-1);
    if (n_centers < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_rbf_layer %s: n_centers %lld is not >= 1", name, (long long)n_centers);
    snprintf(nc, sizeof nc, "%s.centers", name);
    snprintf(ng, sizeof ng, "%s.log_gamma", name);
    memset(&ci, 0, sizeof ci);
    ci.kind = NN_INIT_NORMAL;
    ci.b = 1.0f;
    memset(&gi, 0, sizeof gi); /* zeros: gamma 1 */
    c = nn_param(g, nc, nn_shape2(n_centers, nn__n(g, x)->shape.dim[1]), ci);
    lg = nn_param(g, ng, nn_shape1(n_centers), gi);
    /* [B, 1, D] - [K, D] -> [B, K, D], squared and summed over D */
    d2 = nn_sum_dim(g, nn_square(g, nn_sub(g, nn_unsqueeze(g, x, 1), c)), &d2i, 1, 0);
    return nn_exp(g, nn_neg(g, nn_mul(g, d2, nn_exp(g, lg))));
}

NN_API nn_tensor nn_moe_layer(nn_graph *g, nn_tensor x, int64_t n_experts, int64_t top_k, int64_t hidden, const nn_moe_desc *desc,
                              const char *name) {
    nn_tensor *aux_loss = desc ? desc->aux_loss : NULL;
    char nb[256];
    nn_tensor logits, probs, m, kth = NN_NONE, mask, wts, y = NN_NONE;
    int64_t d;
    int i, d1 = 1, d0 = 0;
    if (aux_loss) *aux_loss = nn__tensor(-1);
    if (!nn__layer_x(g, "nn_moe_layer", name, x, 2, "2-D [B, D]") || !nn__layer_name(g, "nn_moe_layer", name)) return nn__tensor(-1);
    if (n_experts < 1 || top_k < 1 || top_k > n_experts || hidden < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                           "nn_moe_layer %s: needs n_experts >= 1 (%lld), 1 <= top_k <= n_experts (%lld) and hidden >= 1 (%lld)",
                           name, (long long)n_experts, (long long)top_k, (long long)hidden);
    if (desc && !(desc->capacity_factor >= 0 && desc->capacity_factor < 1e30f))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_moe_layer %s: capacity_factor %g is not in [0, 1e30) (0: dense)", name,
                           (double)desc->capacity_factor);
    d = nn__n(g, x)->shape.dim[1];
    {
        nn_linear_desc nob;
        memset(&nob, 0, sizeof nob);
        nob.no_bias = 1;
        snprintf(nb, sizeof nb, "%s.gate", name);
        logits = nn_linear_layer(g, x, n_experts, &nob, nb);
    }
    probs = nn_softmax(g, logits, -1);
    /* the k-th largest probability of each row: the row max, k times, each time pushing the
       maxima found below every probability (probabilities lie in [0, 1]) */
    m = nn_detach(g, probs);
    for (i = 0; i < top_k; i++) {
        kth = nn_amax_dim(g, m, &d1, 1, 1);
        if (i + 1 < top_k) m = nn_sub(g, m, nn_mul_scalar(g, nn_ge(g, m, kth), 2.0f));
    }
    mask = nn_ge(g, nn_detach(g, probs), kth); /* [B, E]: 1 for the kept experts */
    wts = nn_mul(g, probs, mask);
    if (desc && desc->capacity_factor > 0) {
        /* dispatch: expert e's C slots hold the first C rows that kept it (gather index
           gi, 0 for an empty slot; combine segment si, B for an empty slot, left out) */
        int64_t B = nn__n(g, x)->shape.dim[0];
        double cf = (double)desc->capacity_factor * (double)top_k * (double)B / (double)n_experts;
        int64_t C = cf >= (double)B ? B : (int64_t)ceil(cf);
        nn_tensor gi, si, xg, wg, *ys;
        if (C < 1) C = 1;
        gi = nn__moe_slots_op(g, mask, C, 0);
        si = nn__moe_slots_op(g, mask, C, 1);
        xg = nn_index_select(g, x, 0, gi);   /* [E * C, D] */
        wg = nn_index_select(g, wts, 0, gi); /* [E * C, E] */
        ys = (nn_tensor *)nn__calloc((size_t)n_experts, sizeof *ys);
        if (!ys) return nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "nn_moe_layer %s: out of memory", name);
        for (i = 0; i < n_experts; i++) {
            nn_tensor h = nn_slice(g, xg, 0, i * C, C);
            snprintf(nb, sizeof nb, "%s.experts.%d.fc1", name, i);
            h = nn_relu(g, nn_linear_layer(g, h, hidden, NULL, nb));
            snprintf(nb, sizeof nb, "%s.experts.%d.fc2", name, i);
            ys[i] = nn_mul(g, nn_linear_layer(g, h, d, NULL, nb), nn_slice(g, nn_slice(g, wg, 0, i * C, C), 1, i, 1));
        }
        y = nn_slice(g, nn_segment_sum(g, nn_concat(g, ys, (int)n_experts, 0), si, B + 1), 0, 0, B);
        free(ys);
    } else {
        for (i = 0; i < n_experts; i++) {
            nn_tensor h;
            snprintf(nb, sizeof nb, "%s.experts.%d.fc1", name, i);
            h = nn_relu(g, nn_linear_layer(g, x, hidden, NULL, nb));
            snprintf(nb, sizeof nb, "%s.experts.%d.fc2", name, i);
            h = nn_mul(g, nn_linear_layer(g, h, d, NULL, nb), nn_slice(g, wts, 1, i, 1));
            y = i ? nn_add(g, y, h) : h;
        }
    }
    if (aux_loss) {
        /* Switch Transformer: E * sum_e f_e P_e, f_e the fraction of rows routed to e
           (counted over the k slots), P_e the mean gate probability */
        nn_tensor f = nn_mean_dim(g, mask, &d0, 1, 0), p = nn_mean_dim(g, probs, &d0, 1, 0);
        *aux_loss = nn_mul_scalar(g, nn_sum(g, nn_mul(g, f, p)), (float)n_experts);
    }
    return y;
}
