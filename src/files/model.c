/* Model files: a network's architecture as a small JSON text (the schema: nn_model_build in
   src/api/api.h), built with the public builders (nn_model_build), described from a built
   graph (nn_model_json: the layers between an input and an output, recognised from their
   nodes), stored with the weights as the string "nn.model" in safetensors' __metadata__
   (nn_model_save), and read back with no builder code (nn_model_load). The text comes from
   untrusted files: src/files/json.c reads it within bounds, and every field is checked
   here, each error naming its JSON path (layers[3].out). */
#include "../base/internal.h"
#include <float.h>

#define NN__MODEL_KEY "nn.model"
#define NN__MODEL_MAX_HEADER ((size_t)4 << 20) /* a safetensors header read for its metadata */
#define NN__MODEL_REQUIRED INT64_MIN

/* ==== building from the JSON ==== */

typedef struct nn__mb {
    nn_graph *g;
    const nn__json *j;
    const char *fn;      /* the public function, for messages */
    int layer;           /* the index in "layers" (-1: the top level) */
    const char *type;
    const nn_tensor *xs; /* the layer's inputs ("inputs", or the layer before), nx of them */
    int nx;
} nn__mb;

#define NN__MODEL_MAX_IO 16 /* a model's inputs and outputs, a layer's inputs */

/* Fails the graph naming the JSON path of field (NULL: the layer itself). */
static int nn__mb_fail(nn__mb *m, const char *field, const char *fmt, ...) {
    char msg[512], path[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (m->layer >= 0) snprintf(path, sizeof path, "layers[%d]%s%.100s", m->layer, field ? "." : "", field ? field : "");
    else snprintf(path, sizeof path, "%.100s", field ? field : "(top level)");
    nn__op_fail(m->g, NN_ERR_INVALID_ARGUMENT, "%s: %s: %s", m->fn, path, msg);
    return 0;
}

/* Every member of object o is "type" or one of allowed (space-separated). */
static int nn__mb_fields(nn__mb *m, int o, const char *allowed, const char *what) {
    int k;
    for (k = m->j->v[o].first; k >= 0; k = m->j->v[k].next) {
        const char *key = nn__json_key(m->j, k), *p = allowed;
        size_t n = strlen(key);
        int found = m->layer >= 0 && (strcmp(key, "type") == 0 || strcmp(key, "name") == 0 || strcmp(key, "inputs") == 0);
        while (!found && *p) {
            const char *e = strchr(p, ' ');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            found = len == n && memcmp(p, key, n) == 0;
            p += len + (e ? 1 : 0);
        }
        if (!found) {
            char shown[80];
            size_t i = 0, k0;
            if (m->layer < 0 && strncmp(what, "inputs[", 7) == 0) i = (size_t)snprintf(shown, sizeof shown, "%.20s.", what);
            for (k0 = 0; key[k0] && i + 1 < sizeof shown; k0++) shown[i++] = (key[k0] >= 0x20 && key[k0] < 0x7F) ? key[k0] : '?';
            shown[i] = 0;
            return nn__mb_fail(m, shown, "unknown field (%s takes: %s%s)", what, m->layer >= 0 ? "type " : "", allowed);
        }
    }
    return 1;
}

/* An integer field in [lo, hi]; absent: dflt, or an error when dflt is NN__MODEL_REQUIRED. */
static int nn__mb_int(nn__mb *m, int o, const char *key, int64_t dflt, int64_t lo, int64_t hi, int64_t *out) {
    int k = nn__json_get(m->j, o, key);
    const nn__jv *v;
    if (k < 0) {
        if (dflt == NN__MODEL_REQUIRED) return nn__mb_fail(m, key, "missing (a required field)");
        *out = dflt;
        return 1;
    }
    v = &m->j->v[k];
    if (v->type != NN__J_NUM || !v->is_int || !(v->num >= (double)lo && v->num <= (double)hi)) {
        if (lo == 1 && hi >= INT32_MAX) return nn__mb_fail(m, key, "expected a positive integer");
        if (lo == 0 && hi >= INT32_MAX) return nn__mb_fail(m, key, "expected an integer >= 0");
        return nn__mb_fail(m, key, "expected an integer in [%lld, %lld]", (long long)lo, (long long)hi);
    }
    *out = (int64_t)v->num;
    return 1;
}

/* A size field: an integer or [h, w] (n = 2), each in [lo, INT32_MAX]. */
static int nn__mb_pair(nn__mb *m, int o, const char *key, int dflt, int lo, int out[2]) {
    int k = nn__json_get(m->j, o, key), i, c;
    const nn__jv *v;
    if (k < 0) {
        if (dflt < lo) return nn__mb_fail(m, key, "missing (a required field)");
        out[0] = out[1] = dflt;
        return 1;
    }
    v = &m->j->v[k];
    if (v->type == NN__J_NUM && v->is_int && v->num >= lo && v->num <= INT32_MAX) {
        out[0] = out[1] = (int)v->num;
        return 1;
    }
    if (v->type == NN__J_ARR && v->n == 2) {
        for (i = 0, c = v->first; c >= 0; c = m->j->v[c].next, i++) {
            const nn__jv *e = &m->j->v[c];
            if (e->type != NN__J_NUM || !e->is_int || !(e->num >= lo && e->num <= INT32_MAX)) break;
            out[i] = (int)e->num;
        }
        if (c < 0) return 1;
    }
    return nn__mb_fail(m, key, "expected an integer >= %d or a list of two", lo);
}

static int nn__mb_bool(nn__mb *m, int o, const char *key, int dflt, int *out) {
    int k = nn__json_get(m->j, o, key);
    if (k < 0) {
        *out = dflt;
        return 1;
    }
    if (m->j->v[k].type != NN__J_TRUE && m->j->v[k].type != NN__J_FALSE) return nn__mb_fail(m, key, "expected true or false");
    *out = m->j->v[k].type == NN__J_TRUE;
    return 1;
}

/* A float field in [lo, hi] (open at hi when hi_open). */
static int nn__mb_float(nn__mb *m, int o, const char *key, double dflt, double lo, double hi, int hi_open, float *out) {
    int k = nn__json_get(m->j, o, key);
    double v;
    if (k < 0) {
        *out = (float)dflt;
        return 1;
    }
    v = m->j->v[k].num;
    if (m->j->v[k].type != NN__J_NUM || !(v >= lo && (hi_open ? v < hi : v <= hi)) || !((float)v >= -FLT_MAX && (float)v <= FLT_MAX))
        return nn__mb_fail(m, key, "expected a number in [%g, %g%c", lo, hi, hi_open ? ')' : ']');
    *out = (float)v;
    return 1;
}

/* A list of up to max_n integers, each >= 1 or (at most one) -1 when allow_neg. */
static int nn__mb_dims(nn__mb *m, int o, const char *key, int min_n, int max_n, int allow_neg, int64_t *dims, int *n) {
    int k = nn__json_get(m->j, o, key), c, neg = 0;
    const nn__jv *v;
    if (k < 0) return nn__mb_fail(m, key, "missing (a required field)");
    v = &m->j->v[k];
    if (v->type != NN__J_ARR || v->n < min_n || v->n > max_n)
        return nn__mb_fail(m, key, "expected a list of %d to %d sizes", min_n, max_n);
    *n = 0;
    for (c = v->first; c >= 0; c = m->j->v[c].next) {
        const nn__jv *e = &m->j->v[c];
        if (e->type != NN__J_NUM || !e->is_int || !((e->num >= 1 && e->num <= INT32_MAX) || (allow_neg && e->num == -1 && !neg++)))
            return nn__mb_fail(m, key, allow_neg ? "expected sizes >= 1 (and at most one -1)" : "expected sizes >= 1");
        dims[(*n)++] = (int64_t)e->num;
    }
    return 1;
}

/* The layer's name: "name", or layers.K; *name holds it. */
static int nn__mb_name(nn__mb *m, int o, char *name, size_t cap) {
    int k = nn__json_get(m->j, o, "name");
    if (k < 0) {
        snprintf(name, cap, "layers.%d", m->layer);
        return 1;
    }
    if (m->j->v[k].type != NN__J_STR || m->j->v[k].len == 0 || m->j->v[k].len > 200)
        return nn__mb_fail(m, "name", "expected a string of 1 to 200 bytes");
    snprintf(name, cap, "%s", nn__json_str(m->j, k));
    return 1;
}

/* x's shape as text, for messages */
static const char *nn__mb_xs(nn__mb *m, nn_tensor x, char *b, size_t n) {
    nn__shape_str(&nn__n(m->g, x)->shape, b, n);
    return b;
}

/* x has ndim dims in [lo, hi] and dtype f32 (int32 for embeddings) */
static int nn__mb_x(nn__mb *m, nn_tensor x, int lo, int hi, const char *what) {
    char b[128];
    const nn__node *n = nn__n(m->g, x);
    if (n->shape.ndim < lo || n->shape.ndim > hi)
        return nn__mb_fail(m, NULL, "%s takes %s; its input is %s", m->type, what, nn__mb_xs(m, x, b, sizeof b));
    return 1;
}

/* The declared input size (field key, absent: not checked) against x's dim 1. */
static int nn__mb_in(nn__mb *m, int o, const char *key, nn_tensor x) {
    int64_t in;
    char b[128];
    if (!nn__mb_int(m, o, key, 0, 1, INT32_MAX, &in)) return 0;
    if (in && in != nn__n(m->g, x)->shape.dim[1])
        return nn__mb_fail(m, key, "%lld, but the layer's input is %s", (long long)in, nn__mb_xs(m, x, b, sizeof b));
    return 1;
}

/* The activations' parameters by PyTorch's names, with PyTorch's defaults. */
typedef struct nn__mb_act_params {
    const char *type, *p[2];
    double dflt[2];
} nn__mb_act_params;
static const nn__mb_act_params nn__mb_acts[] = {
    {"leaky_relu", {"negative_slope", NULL}, {0.01, 0}},
    {"elu", {"alpha", NULL}, {1.0, 0}},
    {"celu", {"alpha", NULL}, {1.0, 0}},
    {"softplus", {"beta", "threshold"}, {1.0, 20.0}},
    {"hardtanh", {"min_val", "max_val"}, {-1.0, 1.0}},
};

typedef struct nn__mb_act {
    int fn;
    const char *name;
    int params;
} nn__mb_act;
#define NN__X(E, name, params, valid, fwd, der) {NN__U_##E, #name, params},
static const nn__mb_act nn__mb_act_list[] = {NN__ACTIVATIONS(NN__X)};
#undef NN__X

static const nn__mb_act_params *nn__mb_act_names(const char *type) {
    size_t i;
    for (i = 0; i < sizeof nn__mb_acts / sizeof nn__mb_acts[0]; i++)
        if (strcmp(nn__mb_acts[i].type, type) == 0) return &nn__mb_acts[i];
    return NULL;
}

static nn_tensor nn__mb_activation(nn__mb *m, int o, const nn__mb_act *a, nn_tensor x) {
    nn_graph *g = m->g;
    const nn__mb_act_params *pn = nn__mb_act_names(a->name);
    static const char *const generic[2] = {"p0", "p1"};
    const char *names[2];
    char allowed[64];
    float p0 = 0.0f, p1 = 0.0f, *pv[2];
    int i;
    pv[0] = &p0;
    pv[1] = &p1;
    allowed[0] = 0;
    for (i = 0; i < a->params; i++) {
        names[i] = pn ? pn->p[i] : generic[i];
        snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i ? " " : "", names[i]);
    }
    if (!nn__mb_fields(m, o, allowed, a->name)) return nn__tensor(-1);
    for (i = 0; i < a->params; i++)
        if (!nn__mb_float(m, o, names[i], pn ? pn->dflt[i] : 0.0, -FLT_MAX, FLT_MAX, 0, pv[i])) return nn__tensor(-1);
    if (nn__n(m->g, x)->dtype != NN_F32) return nn__mb_fail(m, NULL, "%s takes float32", a->name), nn__tensor(-1);
    switch (a->fn) {
#define NN__X(E, name, params, valid, fwd, der) \
    case NN__U_##E: return nn__activation(g, NN__OP_UNARY, "nn_" #name, NN__U_##E, params, (valid), #valid, p0, p1, x);
        NN__ACTIVATIONS(NN__X)
#undef NN__X
    default: break;
    }
    return nn__tensor(-1);
}

static nn_tensor nn__mb_layer(nn__mb *m, int o, nn_tensor x) {
    nn_graph *g = m->g;
    const char *type = m->type;
    char name[256], b[128];
    int64_t v, w;
    size_t i;
    if (strcmp(type, "linear") == 0) {
        nn_linear_desc d;
        int bias;
        nn_shape sx = nn__n(g, x)->shape; /* a copy: new nodes may move the nodes */
        int64_t rows = 1;
        int first = g->n_nodes, k;
        nn_tensor y;
        memset(&d, 0, sizeof d);
        if (!nn__mb_fields(m, o, "name in out bias", type) || !nn__mb_x(m, x, 2, NN_MAX_DIMS, "[B, in] or [B, ..., in]") ||
            !nn__mb_int(m, o, "in", 0, 0, INT32_MAX, &w) || !nn__mb_int(m, o, "out", NN__MODEL_REQUIRED, 1, INT32_MAX, &v) ||
            !nn__mb_bool(m, o, "bias", 1, &bias) || !nn__mb_name(m, o, name, sizeof name))
            return nn__tensor(-1);
        if (w && w != sx.dim[sx.ndim - 1])
            return nn__mb_fail(m, "in", "%lld, but the layer's input is %s", (long long)w, nn__mb_xs(m, x, b, sizeof b)), nn__tensor(-1);
        d.no_bias = !bias;
        if (sx.ndim == 2) return nn_linear_layer(g, x, v, &d, name);
        /* PyTorch's nn.Linear on [B, ..., in]: on the rows, then back to [B, ..., out] */
        for (k = 0; k < sx.ndim - 1; k++) rows *= sx.dim[k];
        y = nn_linear_layer(g, nn_reshape(g, x, nn_shape2(rows, sx.dim[sx.ndim - 1])), v, &d, name);
        sx.dim[sx.ndim - 1] = v;
        y = nn_reshape(g, y, sx);
        {
            char qn[1300];
            nn__note_layer(g, y, first, &x, 1, NULL, "{\"type\": \"linear\", \"name\": %s, \"in\": %lld, \"out\": %lld, \"bias\": %s}",
                           nn__note_str(name, qn, sizeof qn), (long long)nn__n(g, x)->shape.dim[sx.ndim - 1], (long long)v,
                           bias ? "true" : "false");
        }
        return y;
    }
    if (strcmp(type, "conv1d") == 0 || strcmp(type, "conv2d") == 0) {
        int two = type[4] == '2', k[2], s[2], p[2], dl[2], bias;
        if (!nn__mb_fields(m, o, "name in out kernel stride padding dilation groups bias", type) ||
            !nn__mb_x(m, x, two ? 4 : 3, two ? 4 : 3, two ? "[N, C, H, W]" : "[N, C, L]") || !nn__mb_in(m, o, "in", x) ||
            !nn__mb_int(m, o, "out", NN__MODEL_REQUIRED, 1, INT32_MAX, &v) || !nn__mb_pair(m, o, "kernel", 0, 1, k) ||
            !nn__mb_pair(m, o, "stride", 1, 1, s) || !nn__mb_pair(m, o, "padding", 0, 0, p) ||
            !nn__mb_pair(m, o, "dilation", 1, 1, dl) || !nn__mb_int(m, o, "groups", 1, 1, INT32_MAX, &w) ||
            !nn__mb_bool(m, o, "bias", 1, &bias) || !nn__mb_name(m, o, name, sizeof name))
            return nn__tensor(-1);
        if (two) {
            nn_conv2d_desc d;
            memset(&d, 0, sizeof d);
            d.stride_h = s[0], d.stride_w = s[1], d.pad_h = p[0] ? p[0] : NN_ZERO, d.pad_w = p[1] ? p[1] : NN_ZERO;
            d.dilation_h = dl[0], d.dilation_w = dl[1], d.groups = (int)w, d.no_bias = !bias;
            return nn_conv2d_layer(g, x, v, k[0], k[1], &d, name);
        } else {
            nn_conv1d_desc d;
            if (k[0] != k[1] || s[0] != s[1] || p[0] != p[1] || dl[0] != dl[1])
                return nn__mb_fail(m, NULL, "conv1d takes one size per field, not pairs"), nn__tensor(-1);
            memset(&d, 0, sizeof d);
            d.stride = s[0], d.pad = p[0] ? p[0] : NN_ZERO, d.dilation = dl[0], d.groups = (int)w, d.no_bias = !bias;
            return nn_conv1d_layer(g, x, v, k[0], &d, name);
        }
    }
    if (strcmp(type, "max_pool2d") == 0 || strcmp(type, "avg_pool2d") == 0) {
        int mx = type[0] == 'm', k[2], s[2], p[2], dl[2] = {1, 1}, ceil_mode, incl = 1;
        nn_pool2d_desc d;
        if (!nn__mb_fields(m, o, mx ? "kernel stride padding dilation ceil_mode" : "kernel stride padding ceil_mode count_include_pad", type) ||
            !nn__mb_x(m, x, 4, 4, "[N, C, H, W]") || !nn__mb_pair(m, o, "kernel", 0, 1, k) ||
            !nn__mb_pair(m, o, "stride", 0, 0, s) || !nn__mb_pair(m, o, "padding", 0, 0, p) ||
            (mx && !nn__mb_pair(m, o, "dilation", 1, 1, dl)) || !nn__mb_bool(m, o, "ceil_mode", 0, &ceil_mode) ||
            (!mx && !nn__mb_bool(m, o, "count_include_pad", 1, &incl)))
            return nn__tensor(-1);
        if (s[0] < 1 || s[1] < 1) { /* 0 or absent: the kernel (PyTorch's stride=None) */
            if (nn__json_get(m->j, o, "stride") >= 0) return nn__mb_fail(m, "stride", "expected a positive integer"), nn__tensor(-1);
            s[0] = k[0], s[1] = k[1];
        }
        memset(&d, 0, sizeof d);
        d.kernel_h = k[0], d.kernel_w = k[1], d.stride_h = s[0], d.stride_w = s[1];
        d.pad_h = p[0] ? p[0] : NN_ZERO, d.pad_w = p[1] ? p[1] : NN_ZERO, d.ceil_mode = ceil_mode;
        if (mx) {
            d.dilation_h = dl[0], d.dilation_w = dl[1];
            return nn_max_pool2d(g, x, &d);
        }
        d.exclude_pad = !incl;
        return nn_avg_pool2d(g, x, &d);
    }
    if (strcmp(type, "batch_norm1d") == 0 || strcmp(type, "batch_norm2d") == 0) {
        int two = type[10] == '2';
        nn_norm_desc d;
        memset(&d, 0, sizeof d);
        if (!nn__mb_fields(m, o, "name num_features eps momentum", type) ||
            !nn__mb_x(m, x, two ? 4 : 2, two ? 4 : 3, two ? "[N, C, H, W]" : "[N, C] or [N, C, L]") ||
            !nn__mb_in(m, o, "num_features", x) || !nn__mb_float(m, o, "eps", 1e-5, 0.0, FLT_MAX, 0, &d.eps) ||
            !nn__mb_float(m, o, "momentum", 0.1, 0.0, 1.0, 0, &d.momentum) || !nn__mb_name(m, o, name, sizeof name))
            return nn__tensor(-1);
        if (d.eps == 0.0f) d.eps = (float)NN_ZERO;
        if (d.momentum == 0.0f) d.momentum = (float)NN_ZERO;
        return two ? nn_batch_norm2d_layer(g, x, &d, name) : nn_batch_norm1d_layer(g, x, &d, name);
    }
    if (strcmp(type, "layer_norm") == 0 || strcmp(type, "rms_norm") == 0) {
        nn_norm_desc d;
        int64_t dims[NN_MAX_DIMS];
        int n = 0, bias = 1, rms = type[0] == 'r', k = nn__json_get(m->j, o, "normalized_shape"), ke = nn__json_get(m->j, o, "eps");
        const nn__node *nx = nn__n(g, x);
        memset(&d, 0, sizeof d);
        if (!nn__mb_fields(m, o, rms ? "normalized_shape eps" : "normalized_shape eps bias", type)) return nn__tensor(-1);
        if (k >= 0 && m->j->v[k].type == NN__J_NUM) {
            if (!nn__mb_int(m, o, "normalized_shape", 0, 1, INT32_MAX, &dims[0])) return nn__tensor(-1);
            n = 1;
        } else if (!nn__mb_dims(m, o, "normalized_shape", 1, NN_MAX_DIMS - 1, 0, dims, &n))
            return nn__tensor(-1);
        if (rms && ke >= 0 && m->j->v[ke].type == NN__J_NULL) d.eps = 0.0f; /* PyTorch's None: float32's epsilon */
        else if (!nn__mb_float(m, o, "eps", rms ? 0.0 : 1e-5, 0.0, FLT_MAX, 0, &d.eps)) return nn__tensor(-1);
        else if (d.eps == 0.0f && (!rms || ke >= 0)) d.eps = (float)NN_ZERO;
        if ((!rms && !nn__mb_bool(m, o, "bias", 1, &bias)) || !nn__mb_name(m, o, name, sizeof name)) return nn__tensor(-1);
        if (n >= nx->shape.ndim) return nn__mb_fail(m, "normalized_shape", "%d dims, but the layer's input is %s", n, nn__mb_xs(m, x, b, sizeof b)), nn__tensor(-1);
        for (i = 0; i < (size_t)n; i++)
            if (dims[i] != nx->shape.dim[nx->shape.ndim - n + (int)i])
                return nn__mb_fail(m, "normalized_shape", "is not the trailing dims of the layer's input %s", nn__mb_xs(m, x, b, sizeof b)), nn__tensor(-1);
        if (nx->dtype != NN_F32) return nn__mb_fail(m, NULL, "%s takes float32", type), nn__tensor(-1);
        d.no_bias = !bias;
        return rms ? nn_rms_norm_layer(g, x, n, &d, name) : nn_layer_norm_layer(g, x, n, &d, name);
    }
    if (strcmp(type, "embedding") == 0) {
        nn_embedding_desc d;
        int64_t pad;
        memset(&d, 0, sizeof d);
        if (!nn__mb_fields(m, o, "name num_embeddings embedding_dim padding_idx", type) ||
            !nn__mb_int(m, o, "num_embeddings", NN__MODEL_REQUIRED, 1, INT32_MAX, &v) ||
            !nn__mb_int(m, o, "embedding_dim", NN__MODEL_REQUIRED, 1, INT32_MAX, &w) ||
            !nn__mb_int(m, o, "padding_idx", INT32_MIN, -v, v - 1, &pad) || !nn__mb_name(m, o, name, sizeof name))
            return nn__tensor(-1);
        if (nn__n(g, x)->dtype != NN_I32) return nn__mb_fail(m, NULL, "embedding takes int32 indices; its input is float32"), nn__tensor(-1);
        d.padding_idx = pad == INT32_MIN ? 0 : pad == 0 ? NN_ZERO : (int)pad;
        return nn_embedding(g, x, v, w, &d, name);
    }
    if (strcmp(type, "dropout") == 0) {
        float p;
        if (!nn__mb_fields(m, o, "p", type) || !nn__mb_float(m, o, "p", 0.5, 0.0, 1.0, 1, &p)) return nn__tensor(-1);
        return nn_dropout(g, x, p);
    }
    if (strcmp(type, "flatten") == 0) {
        const nn__node *nx = nn__n(g, x);
        int64_t rest = 1;
        int d;
        if (!nn__mb_fields(m, o, "start_dim end_dim", type) || !nn__mb_int(m, o, "start_dim", 1, 1, 1, &v) ||
            !nn__mb_int(m, o, "end_dim", -1, -1, -1, &w) || !nn__mb_x(m, x, 1, NN_MAX_DIMS, "[N, ...]"))
            return nn__tensor(-1);
        for (d = 1; d < nx->shape.ndim; d++) rest *= nx->shape.dim[d];
        return nn_reshape(g, x, nn_shape2(nx->shape.dim[0], rest));
    }
    if (strcmp(type, "reshape") == 0) {
        const nn__node *nx = nn__n(g, x);
        int64_t dims[NN_MAX_DIMS], prod = 1, rest = 1;
        int n = 0, d, neg = -1, whole;
        nn_shape s;
        if (!nn__mb_fields(m, o, "shape include_batch", type) || !nn__mb_bool(m, o, "include_batch", 0, &whole) ||
            !nn__mb_dims(m, o, "shape", whole, NN_MAX_DIMS - 1 + whole, 1, dims, &n) || !nn__mb_x(m, x, 1, NN_MAX_DIMS, "[N, ...]"))
            return nn__tensor(-1);
        for (d = 1 - whole; d < nx->shape.ndim; d++) rest *= nx->shape.dim[d];
        for (d = 0; d < n; d++) {
            if (dims[d] < 0) neg = d;
            else prod *= dims[d];
            if (prod > rest) break;
        }
        if (neg >= 0 && prod > 0 && rest % prod == 0) dims[neg] = rest / prod, prod = rest;
        if (prod != rest) return nn__mb_fail(m, "shape", "does not hold the %lld elements of a sample of %s", (long long)rest, nn__mb_xs(m, x, b, sizeof b)), nn__tensor(-1);
        memset(&s, 0, sizeof s);
        s.ndim = n + 1 - whole;
        s.dim[0] = nx->shape.dim[0]; /* include_batch: the whole shape (its -1 takes the batch's share) */
        for (d = 0; d < n; d++) s.dim[d + 1 - whole] = dims[d];
        return nn_reshape(g, x, s);
    }
    if (strcmp(type, "softmax") == 0 || strcmp(type, "log_softmax") == 0) {
        int nd = nn__n(g, x)->shape.ndim;
        if (!nn__mb_fields(m, o, "dim", type) || !nn__mb_int(m, o, "dim", -1, -nd, nd - 1, &v)) return nn__tensor(-1);
        return type[0] == 's' ? nn_softmax(g, x, (int)v) : nn_log_softmax(g, x, (int)v);
    }
    if (strcmp(type, "position_embedding") == 0) { /* nanoGPT's wpe: x [B, T, D] + NAME.weight[:T] */
        const nn__node *nx = nn__n(g, x);
        nn_init init;
        int first = g->n_nodes;
        nn_tensor y, ins[1];
        char pn[300], qn[1300];
        if (!nn__mb_fields(m, o, "num_positions embedding_dim", type) ||
            !nn__mb_int(m, o, "num_positions", NN__MODEL_REQUIRED, 1, INT32_MAX, &v) ||
            !nn__mb_int(m, o, "embedding_dim", NN__MODEL_REQUIRED, 1, INT32_MAX, &w) || !nn__mb_name(m, o, name, sizeof name) ||
            !nn__mb_x(m, x, 3, 3, "[B, T, embedding_dim]"))
            return nn__tensor(-1);
        if (nx->dtype != NN_F32 || nx->shape.dim[2] != w || nx->shape.dim[1] > v)
            return nn__mb_fail(m, NULL, "takes float32 [B, T <= num_positions %lld, embedding_dim %lld]; its input is %s", (long long)v,
                               (long long)w, nn__mb_xs(m, x, b, sizeof b)), nn__tensor(-1);
        memset(&init, 0, sizeof init);
        init.kind = NN_INIT_NORMAL; /* nn.Embedding's N(0, 1) */
        init.b = 1.0f;
        snprintf(pn, sizeof pn, "%s.weight", name);
        ins[0] = x;
        y = nn_add(g, x, nn_slice(g, nn_param(g, pn, nn_shape2(v, w), init), 0, 0, nx->shape.dim[1]));
        nn__note_layer(g, y, first, ins, 1, NULL, "{\"type\": \"position_embedding\", \"name\": %s, \"num_positions\": %lld, "
                       "\"embedding_dim\": %lld}", nn__note_str(name, qn, sizeof qn), (long long)v, (long long)w);
        return y;
    }
    if (strcmp(type, "multihead_attention") == 0) {
        nn_mha_desc d;
        int bias, bf, causal;
        memset(&d, 0, sizeof d);
        if (!nn__mb_fields(m, o, "embed_dim num_heads dropout bias batch_first is_causal kdim vdim", type) ||
            !nn__mb_int(m, o, "embed_dim", NN__MODEL_REQUIRED, 1, INT32_MAX, &v) ||
            !nn__mb_int(m, o, "num_heads", NN__MODEL_REQUIRED, 1, INT32_MAX, &w) ||
            !nn__mb_float(m, o, "dropout", 0.0, 0.0, 1.0, 1, &d.dropout) || !nn__mb_bool(m, o, "bias", 1, &bias) ||
            !nn__mb_bool(m, o, "batch_first", 0, &bf) || !nn__mb_bool(m, o, "is_causal", 0, &causal) ||
            !nn__mb_int(m, o, "kdim", 0, 0, INT32_MAX, &d.kdim) || !nn__mb_int(m, o, "vdim", 0, 0, INT32_MAX, &d.vdim) ||
            !nn__mb_name(m, o, name, sizeof name))
            return nn__tensor(-1);
        d.no_bias = !bias, d.batch_first = bf, d.is_causal = causal;
        return nn_multihead_attention(g, x, m->nx == 3 ? m->xs[1] : x, m->nx == 3 ? m->xs[2] : x, v, (int)w, &d, name);
    }
    if (strncmp(type, "transformer_", 12) == 0 &&
        (strcmp(type + 12, "encoder_layer") == 0 || strcmp(type + 12, "decoder_layer") == 0 || strcmp(type + 12, "encoder") == 0 ||
         strcmp(type + 12, "decoder") == 0)) {
        nn_transformer_desc d;
        int dec = type[12] == 'd', stack = strchr(type + 12, '_') == NULL, bf, nf, causal, ka;
        int64_t layers = 0, dff;
        float p, eps;
        memset(&d, 0, sizeof d);
        if (!nn__mb_fields(m, o, dec ? (stack ? "d_model nhead num_layers dim_feedforward dropout activation layer_norm_eps batch_first norm_first tgt_is_causal"
                                              : "d_model nhead dim_feedforward dropout activation layer_norm_eps batch_first norm_first tgt_is_causal")
                                     : (stack ? "d_model nhead num_layers dim_feedforward dropout activation layer_norm_eps batch_first norm_first is_causal"
                                              : "d_model nhead dim_feedforward dropout activation layer_norm_eps batch_first norm_first is_causal"),
                           type) ||
            !nn__mb_int(m, o, "d_model", NN__MODEL_REQUIRED, 1, INT32_MAX, &v) || !nn__mb_int(m, o, "nhead", NN__MODEL_REQUIRED, 1, INT32_MAX, &w) ||
            (stack && !nn__mb_int(m, o, "num_layers", NN__MODEL_REQUIRED, 1, 1024, &layers)) ||
            !nn__mb_int(m, o, "dim_feedforward", 2048, 1, INT32_MAX, &dff) || !nn__mb_float(m, o, "dropout", 0.1, 0.0, 1.0, 1, &p) ||
            !nn__mb_float(m, o, "layer_norm_eps", 1e-5, 0.0, FLT_MAX, 0, &eps) || !nn__mb_bool(m, o, "batch_first", 0, &bf) ||
            !nn__mb_bool(m, o, "norm_first", 0, &nf) || !nn__mb_bool(m, o, dec ? "tgt_is_causal" : "is_causal", 0, &causal) ||
            !nn__mb_name(m, o, name, sizeof name))
            return nn__tensor(-1);
        ka = nn__json_get(m->j, o, "activation");
        if (ka >= 0 && !(m->j->v[ka].type == NN__J_STR && (strcmp(nn__json_str(m->j, ka), "relu") == 0 || strcmp(nn__json_str(m->j, ka), "gelu") == 0)))
            return nn__mb_fail(m, "activation", "expected \"relu\" or \"gelu\""), nn__tensor(-1);
        d.activation = ka >= 0 && nn__json_str(m->j, ka)[0] == 'g';
        d.dim_feedforward = dff;
        d.dropout = p == 0.0f ? (float)NN_ZERO : p;
        d.layer_norm_eps = eps == 0.0f ? (float)NN_ZERO : eps;
        d.batch_first = bf, d.norm_first = nf;
        if (dec) d.tgt_is_causal = causal;
        else d.is_causal = causal;
        if (dec)
            return stack ? nn_transformer_decoder(g, x, m->xs[1], (int)layers, v, (int)w, &d, name)
                         : nn_transformer_decoder_layer(g, x, m->xs[1], v, (int)w, &d, name);
        return stack ? nn_transformer_encoder(g, x, (int)layers, v, (int)w, &d, name) : nn_transformer_encoder_layer(g, x, v, (int)w, &d, name);
    }
    if (strcmp(type, "patch_embedding") == 0) { /* timm's PatchEmbed (+ cls_token, pos_embed) on [B, C, H, W] */
        nn_patch_embedding_desc d;
        char prefix[208];
        int ct, pe, kp;
        int64_t cin;
        memset(&d, 0, sizeof d);
        if (!nn__mb_fields(m, o, "in_chans patch_size embed_dim class_token pos_embed prefix", type) ||
            !nn__mb_int(m, o, "in_chans", 0, 0, INT32_MAX, &cin) || !nn__mb_int(m, o, "patch_size", NN__MODEL_REQUIRED, 1, INT32_MAX, &v) ||
            !nn__mb_int(m, o, "embed_dim", NN__MODEL_REQUIRED, 1, INT32_MAX, &w) || !nn__mb_bool(m, o, "class_token", 0, &ct) ||
            !nn__mb_bool(m, o, "pos_embed", 0, &pe) || !nn__mb_name(m, o, name, sizeof name))
            return nn__tensor(-1);
        if (cin && (nn__n(g, x)->shape.ndim != 4 || nn__n(g, x)->shape.dim[1] != cin)) {
            char b[128];
            return nn__mb_fail(m, "in_chans", "%lld, but the layer's input is %s", (long long)cin, nn__mb_xs(m, x, b, sizeof b)), nn__tensor(-1);
        }
        kp = nn__json_get(m->j, o, "prefix");
        if (kp >= 0) {
            if (m->j->v[kp].type != NN__J_STR || strlen(nn__json_str(m->j, kp)) > 200)
                return nn__mb_fail(m, "prefix", "expected a string of at most 200 characters"), nn__tensor(-1);
            snprintf(prefix, sizeof prefix, "%s", nn__json_str(m->j, kp));
            d.prefix = prefix;
        }
        d.class_token = ct, d.pos_embed = pe;
        return nn_patch_embedding(g, x, (int)v, w, &d, name);
    }
    if (strcmp(type, "conv_lstm2d") == 0) { /* nn_conv_lstm2d on [B, T, C, H, W] */
        nn_conv_lstm_desc d;
        int bias;
        int64_t cin, ks;
        memset(&d, 0, sizeof d);
        if (!nn__mb_fields(m, o, "in_channels hidden_channels kernel_size bias", type) ||
            !nn__mb_int(m, o, "in_channels", 0, 0, INT32_MAX, &cin) ||
            !nn__mb_int(m, o, "hidden_channels", NN__MODEL_REQUIRED, 1, 1 << 20, &v) ||
            !nn__mb_int(m, o, "kernel_size", 3, 1, 31, &ks) || !nn__mb_bool(m, o, "bias", 1, &bias) ||
            !nn__mb_name(m, o, name, sizeof name))
            return nn__tensor(-1);
        if (ks % 2 == 0) return nn__mb_fail(m, "kernel_size", "%lld is even (odd: 'same' padding)", (long long)ks), nn__tensor(-1);
        if (cin && (nn__n(g, x)->shape.ndim != 5 || nn__n(g, x)->shape.dim[2] != cin)) {
            char b[128];
            return nn__mb_fail(m, "in_channels", "%lld, but the layer's input is %s", (long long)cin, nn__mb_xs(m, x, b, sizeof b)), nn__tensor(-1);
        }
        d.kernel_size = (int)ks, d.no_bias = !bias;
        return nn_conv_lstm2d(g, x, v, &d, name);
    }
    if (strcmp(type, "gpt") == 0 || strcmp(type, "gpt_block") == 0) {
        nn_gpt_config c;
        int64_t vocab = 1, block, layers, heads, embd;
        int bias, blk = type[3] == '_', kn = nn__json_get(m->j, o, "name");
        memset(&c, 0, sizeof c);
        if (!nn__mb_fields(m, o, blk ? "n_embd n_head block_size n_layer dropout bias" : "vocab_size block_size n_layer n_head n_embd dropout bias", type) ||
            (!blk && !nn__mb_int(m, o, "vocab_size", NN__MODEL_REQUIRED, 1, INT32_MAX, &vocab)) ||
            !nn__mb_int(m, o, "block_size", NN__MODEL_REQUIRED, 1, INT32_MAX, &block) ||
            !nn__mb_int(m, o, "n_layer", blk ? 1 : NN__MODEL_REQUIRED, 1, 1024, &layers) ||
            !nn__mb_int(m, o, "n_head", NN__MODEL_REQUIRED, 1, INT32_MAX, &heads) ||
            !nn__mb_int(m, o, "n_embd", NN__MODEL_REQUIRED, 1, INT32_MAX, &embd) ||
            !nn__mb_float(m, o, "dropout", 0.0, 0.0, 1.0, 1, &c.dropout) || !nn__mb_bool(m, o, "bias", 1, &bias) ||
            !nn__mb_name(m, o, name, sizeof name))
            return nn__tensor(-1);
        if (embd % heads) return nn__mb_fail(m, "n_head", "%lld does not divide n_embd %lld", (long long)heads, (long long)embd), nn__tensor(-1);
        c.vocab_size = vocab, c.block_size = block, c.n_layer = (int)layers, c.n_head = (int)heads, c.n_embd = embd, c.no_bias = !bias;
        if (blk) return nn_gpt_block(g, x, &c, name);
        c.name = kn >= 0 ? name : NULL; /* no name: nanoGPT's names from the root */
        return nn_gpt(g, x, &c);
    }
    if (strcmp(type, "lstm") == 0 || strcmp(type, "gru") == 0 || strcmp(type, "rnn") == 0) {
        nn_rnn_desc d;
        int64_t layers, proj = 0;
        int bias, bf, bidi, kind = type[0], kn = nn__json_get(m->j, o, "nonlinearity");
        memset(&d, 0, sizeof d);
        if (!nn__mb_fields(m, o, kind == 'l' ? "input_size hidden_size num_layers bias batch_first dropout bidirectional proj_size"
                                 : kind == 'g' ? "input_size hidden_size num_layers bias batch_first dropout bidirectional"
                                               : "input_size hidden_size num_layers nonlinearity bias batch_first dropout bidirectional",
                           type) ||
            !nn__mb_x(m, x, 3, 3, "[T, B, input_size] ([B, T, input_size] with batch_first)") ||
            !nn__mb_int(m, o, "input_size", 0, 0, INT32_MAX, &w) || !nn__mb_int(m, o, "hidden_size", NN__MODEL_REQUIRED, 1, 1 << 24, &v) ||
            !nn__mb_int(m, o, "num_layers", 1, 1, 32, &layers) || !nn__mb_bool(m, o, "bias", 1, &bias) ||
            !nn__mb_bool(m, o, "batch_first", 0, &bf) || !nn__mb_float(m, o, "dropout", 0.0, 0.0, 1.0, 1, &d.dropout) ||
            !nn__mb_bool(m, o, "bidirectional", 0, &bidi) || (kind == 'l' && !nn__mb_int(m, o, "proj_size", 0, 0, v - 1, &proj)) ||
            !nn__mb_name(m, o, name, sizeof name))
            return nn__tensor(-1);
        if (w && w != nn__n(g, x)->shape.dim[2])
            return nn__mb_fail(m, "input_size", "%lld, but the layer's input is %s", (long long)w, nn__mb_xs(m, x, b, sizeof b)), nn__tensor(-1);
        if (kn >= 0) {
            const char *nl = m->j->v[kn].type == NN__J_STR ? nn__json_str(m->j, kn) : "";
            if (strcmp(nl, "tanh") != 0 && strcmp(nl, "relu") != 0) return nn__mb_fail(m, "nonlinearity", "expected \"tanh\" or \"relu\""), nn__tensor(-1);
            d.nonlinearity = nl[0] == 'r' ? NN_RNN_RELU : NN_RNN_TANH;
        }
        d.num_layers = (int)layers, d.no_bias = !bias, d.batch_first = bf, d.bidirectional = bidi, d.proj_size = proj;
        return kind == 'l' ? nn_lstm(g, x, v, &d, name) : kind == 'g' ? nn_gru(g, x, v, &d, name) : nn_rnn(g, x, v, &d, name);
    }
    if (strcmp(type, "add") == 0 || strcmp(type, "sub") == 0 || strcmp(type, "mul") == 0) {
        if (!nn__mb_fields(m, o, "", type)) return nn__tensor(-1);
        return type[0] == 'a' ? nn_add(g, x, m->xs[1]) : type[0] == 's' ? nn_sub(g, x, m->xs[1]) : nn_mul(g, x, m->xs[1]);
    }
    if (strcmp(type, "concat") == 0) {
        int nd = nn__n(g, x)->shape.ndim;
        if (!nn__mb_fields(m, o, "dim", type) || !nn__mb_int(m, o, "dim", NN__MODEL_REQUIRED, -nd, nd - 1, &v)) return nn__tensor(-1);
        return nn_concat(g, m->xs, m->nx, (int)v);
    }
    for (i = 0; i < sizeof nn__mb_act_list / sizeof nn__mb_act_list[0]; i++)
        if (strcmp(type, nn__mb_act_list[i].name) == 0) return nn__mb_activation(m, o, &nn__mb_act_list[i], x);
    nn__mb_fail(m, "type", "unknown layer type \"%.60s\" (linear, conv1d, conv2d, max_pool2d, avg_pool2d, batch_norm1d, "
                "batch_norm2d, layer_norm, rms_norm, embedding, position_embedding, multihead_attention, transformer_encoder_layer, "
                "transformer_decoder_layer, transformer_encoder, transformer_decoder, gpt, gpt_block, patch_embedding, conv_lstm2d, lstm, gru, rnn, add, sub, mul, "
                "concat, dropout, flatten, reshape, softmax, log_softmax, or an activation: relu, gelu, tanh, sigmoid, ...)", type);
    return nn__tensor(-1);
}

/* A model input's name, shape (a sample's) and dtype. */
typedef struct nn__mb_input {
    const char *name;
    nn_shape shape;
    nn_dtype dtype;
} nn__mb_input;

/* The top level's inputs (1 to NN__MODEL_MAX_IO objects: name, shape, dtype) into in[], *n. */
static int nn__mb_inputs(nn__mb *m, nn__mb_input *in, int *n) {
    const nn__json *j = m->j;
    int k = nn__json_get(j, 0, "inputs"), d, t, nm, o, K;
    static const char *const dflt[NN__MODEL_MAX_IO] = {"x", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11",
                                                       "x12", "x13", "x14", "x15"};
    if (k < 0) return nn__mb_fail(m, "inputs", "missing (a required field)");
    if (j->v[k].type != NN__J_ARR || j->v[k].n < 1 || j->v[k].n > NN__MODEL_MAX_IO)
        return nn__mb_fail(m, "inputs", "expected a list of 1 to %d input objects", NN__MODEL_MAX_IO);
    for (K = 0, o = j->v[k].first; o >= 0; o = j->v[o].next, K++) {
        char what[24], path[48];
        nn__mb_input *p = &in[K];
        int dims = 0;
        snprintf(what, sizeof what, "inputs[%d]", K);
        if (j->v[o].type != NN__J_OBJ) return nn__mb_fail(m, what, "expected an object (name, shape, dtype)");
        if (!nn__mb_fields(m, o, "name shape dtype", what)) return 0;
        nm = nn__json_get(j, o, "name");
        p->name = dflt[K];
        if (nm >= 0) {
            snprintf(path, sizeof path, "%s.name", what);
            if (j->v[nm].type != NN__J_STR || j->v[nm].len == 0 || j->v[nm].len > 200)
                return nn__mb_fail(m, path, "expected a string of 1 to 200 bytes");
            p->name = nn__json_str(j, nm);
        }
        for (d = 0; d < K; d++)
            if (strcmp(in[d].name, p->name) == 0) {
                snprintf(path, sizeof path, "%s.name", what);
                return nn__mb_fail(m, path, "\"%.60s\" is inputs[%d]'s name too (names are unique)", p->name, d);
            }
        t = nn__json_get(j, o, "dtype");
        p->dtype = NN_F32;
        snprintf(path, sizeof path, "%s.dtype", what);
        if (t >= 0) {
            if (j->v[t].type == NN__J_STR && strcmp(nn__json_str(j, t), "int32") == 0) p->dtype = NN_I32;
            else if (!(j->v[t].type == NN__J_STR && strcmp(nn__json_str(j, t), "float32") == 0))
                return nn__mb_fail(m, path, "expected \"float32\" or \"int32\"");
        }
        t = nn__json_get(j, o, "shape");
        snprintf(path, sizeof path, "%s.shape", what);
        if (t < 0) return nn__mb_fail(m, path, "missing (a required field)");
        if (j->v[t].type != NN__J_ARR || j->v[t].n > NN_MAX_DIMS - 1)
            return nn__mb_fail(m, path, "expected a list of up to %d sizes (a sample's, without the batch)", NN_MAX_DIMS - 1);
        memset(&p->shape, 0, sizeof p->shape);
        for (d = j->v[t].first; d >= 0; d = j->v[d].next) {
            if (j->v[d].type != NN__J_NUM || !j->v[d].is_int || !(j->v[d].num >= 1 && j->v[d].num <= INT32_MAX))
                return nn__mb_fail(m, path, "expected sizes >= 1");
            p->shape.dim[dims++] = (int64_t)j->v[d].num;
        }
        p->shape.ndim = dims;
    }
    *n = K;
    return 1;
}

/* The top level: its fields, format and version. */
static int nn__mb_top(nn__mb *m) {
    const nn__json *j = m->j;
    int k;
    if (j->v[0].type != NN__J_OBJ) return nn__mb_fail(m, NULL, "expected an object");
    if (!nn__mb_fields(m, 0, "format version inputs layers outputs", "a model")) return 0;
    k = nn__json_get(j, 0, "format");
    if (k >= 0 && !(j->v[k].type == NN__J_STR && strcmp(nn__json_str(j, k), "nn.model") == 0))
        return nn__mb_fail(m, "format", "expected \"nn.model\"");
    k = nn__json_get(j, 0, "version");
    if (k >= 0 && !(j->v[k].type == NN__J_NUM && j->v[k].num == 1.0))
        return nn__mb_fail(m, "version", "expected 1 (this nn.h reads version 1)");
    k = nn__json_get(j, 0, "layers");
    if (k < 0) return nn__mb_fail(m, "layers", "missing (a required field)");
    if (j->v[k].type != NN__J_ARR) return nn__mb_fail(m, "layers", "expected a list of layer objects");
    return 1;
}

/* How many inputs a layer type takes: [*lo, *hi]. */
static void nn__mb_arity(const char *type, int *lo, int *hi) {
    *lo = *hi = 1;
    if (strcmp(type, "add") == 0 || strcmp(type, "sub") == 0 || strcmp(type, "mul") == 0 || strcmp(type, "transformer_decoder_layer") == 0 ||
        strcmp(type, "transformer_decoder") == 0)
        *lo = *hi = 2;
    else if (strcmp(type, "concat") == 0) *lo = 2, *hi = NN__MODEL_MAX_IO;
    else if (strcmp(type, "multihead_attention") == 0) *hi = 3;
}

/* The value named s among names[0..n) (-1: none). */
static int nn__mb_lookup(char *const *names, int n, const char *s) {
    int i;
    for (i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

/* A string naming a value: an input or an earlier layer; its index in names or -1 (failed). */
static int nn__mb_ref(nn__mb *m, int ks, int layers_k, char *const *names, int n, const char *field) {
    const nn__json *j = m->j;
    const char *s;
    int o, i, K;
    if (j->v[ks].type != NN__J_STR) return nn__mb_fail(m, field, "expected the name of a model input or of an earlier layer"), -1;
    s = nn__json_str(j, ks);
    if ((i = nn__mb_lookup(names, n, s)) >= 0) return i;
    for (K = 0, o = j->v[layers_k].first; o >= 0; o = j->v[o].next, K++) {
        int kn = j->v[o].type == NN__J_OBJ ? nn__json_get(j, o, "name") : -1;
        char dn[32];
        snprintf(dn, sizeof dn, "layers.%d", K);
        if ((kn >= 0 && j->v[kn].type == NN__J_STR && strcmp(nn__json_str(j, kn), s) == 0) || (kn < 0 && strcmp(dn, s) == 0))
            return nn__mb_fail(m, field, "\"%.60s\" is layers[%d], not an earlier layer (a layer takes inputs and earlier layers' "
                               "outputs: a model has no loops)", s, K), -1;
    }
    return nn__mb_fail(m, field, "\"%.60s\" names no model input and no layer", s), -1;
}

/* Builds the parsed model m->j on xs (one per input, checked against them): the outputs
   (the top level's "outputs", or the last layer's) into outs (cap), *n_out. 0: failed. */
static int nn__mb_graph(nn__mb *m, const nn_tensor *xs, int nx, nn_tensor *outs, int cap, int *n_out) {
    nn_graph *g = m->g;
    const nn__json *j = m->j;
    int k = nn__json_get(j, 0, "layers"), ko = nn__json_get(j, 0, "outputs"), o, n = 0, total = nx + j->v[k].n, i, ok = 0;
    char **names = (char **)nn__calloc((size_t)total, sizeof *names);
    nn_tensor *vals = (nn_tensor *)nn__calloc((size_t)total, sizeof *vals);
    *n_out = 0;
    if (!names || !vals) {
        nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", m->fn);
        goto done;
    }
    for (i = 0; i < nx; i++) { /* the inputs' names (unique: nn__mb_inputs) */
        int ki = j->v[nn__json_get(j, 0, "inputs")].first, K;
        char dn[16];
        for (K = 0; K < i; K++) ki = j->v[ki].next;
        K = nn__json_get(j, ki, "name");
        if (i == 0) snprintf(dn, sizeof dn, "x");
        else snprintf(dn, sizeof dn, "x%d", i);
        if (!(names[n] = nn__strdup(K >= 0 ? nn__json_str(j, K) : dn))) goto oom;
        vals[n++] = xs[i];
    }
    m->layer = 0;
    for (o = j->v[k].first; o >= 0; o = j->v[o].next, m->layer++) {
        int t, kn, ki, lo, hi, c, cnt = 0;
        nn_tensor ins[NN__MODEL_MAX_IO], y;
        nn_result before = g->status;
        char dn[32];
        if (j->v[o].type != NN__J_OBJ) {
            nn__mb_fail(m, NULL, "expected a layer object");
            goto done;
        }
        t = nn__json_get(j, o, "type");
        if (t < 0 || j->v[t].type != NN__J_STR) {
            nn__mb_fail(m, "type", t < 0 ? "missing (a required field)" : "expected a string");
            goto done;
        }
        m->type = nn__json_str(j, t);
        kn = nn__json_get(j, o, "name");
        snprintf(dn, sizeof dn, "layers.%d", m->layer);
        if (kn >= 0 && (j->v[kn].type != NN__J_STR || j->v[kn].len == 0 || j->v[kn].len > 200)) {
            nn__mb_fail(m, "name", "expected a string of 1 to 200 bytes");
            goto done;
        }
        if ((i = nn__mb_lookup(names, n, kn >= 0 ? nn__json_str(j, kn) : dn)) >= 0) {
            nn__mb_fail(m, "name", "\"%.60s\" names %s[%d] too (names are unique)", kn >= 0 ? nn__json_str(j, kn) : dn,
                        i < nx ? "inputs" : "layers", i < nx ? i : i - nx);
            goto done;
        }
        ki = nn__json_get(j, o, "inputs");
        if (ki < 0) ins[cnt++] = vals[m->layer ? n - 1 : 0]; /* the layer before (the first layer: the first input) */
        else if (j->v[ki].type != NN__J_ARR || j->v[ki].n < 1 || j->v[ki].n > NN__MODEL_MAX_IO) {
            nn__mb_fail(m, "inputs", "expected a list of 1 to %d names (of model inputs or earlier layers)", NN__MODEL_MAX_IO);
            goto done;
        } else
            for (c = j->v[ki].first; c >= 0; c = j->v[c].next) {
                char field[32];
                int r;
                snprintf(field, sizeof field, "inputs[%d]", cnt);
                if ((r = nn__mb_ref(m, c, k, names, n, field)) < 0) goto done;
                ins[cnt++] = vals[r];
            }
        nn__mb_arity(m->type, &lo, &hi);
        if (cnt < lo || cnt > hi) {
            if (lo == hi) nn__mb_fail(m, "inputs", "%d given; %s takes %d", cnt, m->type, lo);
            else nn__mb_fail(m, "inputs", "%d given; %s takes %d to %d", cnt, m->type, lo, hi);
            goto done;
        }
        if (lo == 1 && hi == 3 && cnt == 2) {
            nn__mb_fail(m, "inputs", "2 given; %s takes 1 (self-attention) or 3 (query, key, value)", m->type);
            goto done;
        }
        m->xs = ins;
        m->nx = cnt;
        y = nn__mb_layer(m, o, ins[0]);
        if (y.id <= 0) {
            if (before == NN_OK && g->status != NN_OK && strncmp(g->ctx->err, m->fn, strlen(m->fn)) != 0) {
                /* a builder's own refusal: put the layer's path in front of its message */
                char msg[NN__ERRLEN];
                snprintf(msg, sizeof msg, "%s", g->ctx->err);
                snprintf(g->ctx->err, sizeof g->ctx->err, "%s: layers[%d] (%.60s): %.3000s", m->fn, m->layer, m->type, msg);
            }
            goto done;
        }
        if (!(names[n] = nn__strdup(kn >= 0 ? nn__json_str(j, kn) : dn))) goto oom;
        vals[n++] = y;
    }
    m->layer = -1;
    if (ko < 0) outs[(*n_out)++] = vals[n - 1];
    else if (j->v[ko].type != NN__J_ARR || j->v[ko].n < 1 || j->v[ko].n > cap) {
        nn__mb_fail(m, "outputs", "expected a list of 1 to %d names (of layers)", cap);
        goto done;
    } else
        for (o = j->v[ko].first; o >= 0; o = j->v[o].next) {
            char field[32];
            int r;
            snprintf(field, sizeof field, "outputs[%d]", *n_out);
            if (j->v[o].type != NN__J_STR || (r = nn__mb_lookup(names, n, nn__json_str(j, o))) < 0) {
                if (j->v[o].type != NN__J_STR) nn__mb_fail(m, field, "expected a layer's name");
                else nn__mb_fail(m, field, "\"%.60s\" names no layer", nn__json_str(j, o));
                goto done;
            }
            outs[(*n_out)++] = vals[r];
        }
    ok = 1;
    goto done;
oom:
    nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", m->fn);
done:
    for (i = 0; names && i < total; i++) NN_FREE(names[i]);
    NN_FREE(names);
    NN_FREE(vals);
    if (!ok) *n_out = 0;
    return ok;
}

/* The graph's failure for a JSON text that does not parse: the parser's words. */
static nn_tensor nn__mb_parse(nn_graph *g, const char *fn, const char *json, size_t len, nn__json *j) {
    char err[300];
    nn_result r = nn__json_parse(json, len, NN__JSON_MAX_BYTES, j, err, sizeof err);
    if (r != NN_OK) return nn__op_fail(g, r, "%s: %s", fn, err);
    return nn__tensor(0);
}

/* nn_model_build and nn_model_build_io: the model json on xs (n_x of them, one per input,
   each [batch, shape...] of its dtype); outputs into ys (cap), *n_y. 0: failed (g's error). */
static int nn__model_build(nn_graph *g, const char *fn, const nn_tensor *xs, int n_x, const char *json, nn_tensor *ys, int cap, int *n_y) {
    nn__json j;
    nn__mb m;
    nn__mb_input in[NN__MODEL_MAX_IO];
    int n_in = 0, d, k, ok;
    *n_y = 0;
    if (!json) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: json is NULL", fn), 0;
    if (nn__mb_parse(g, fn, json, strlen(json), &j).id < 0) return 0;
    memset(&m, 0, sizeof m);
    m.g = g;
    m.j = &j;
    m.fn = fn;
    m.layer = -1;
    ok = nn__mb_top(&m) && nn__mb_inputs(&m, in, &n_in);
    if (ok && n_in != n_x)
        ok = nn__mb_fail(&m, "inputs", "%d in the model; %s was given %d tensor%s%s", n_in, fn, n_x, n_x == 1 ? "" : "s",
                         n_x == 1 ? " (nn_model_build_io takes several)" : "");
    for (k = 0; ok && k < n_in; k++) { /* xs[k] is [batch, inputs[k].shape...] of its dtype */
        const nn__node *nx = nn__n(g, xs[k]);
        char a[128], b[128], what[24];
        int same = nx->shape.ndim == in[k].shape.ndim + 1 && nx->dtype == in[k].dtype;
        for (d = 0; same && d < in[k].shape.ndim; d++) same = nx->shape.dim[d + 1] == in[k].shape.dim[d];
        if (!same) {
            nn__shape_str(&in[k].shape, a, sizeof a);
            nn__shape_str(&nx->shape, b, sizeof b);
            snprintf(what, sizeof what, "inputs[%d]", k);
            ok = nn__mb_fail(&m, what, "shape %s (%s) per sample, but %s is %s %s", a, in[k].dtype == NN_I32 ? "int32" : "float32",
                             n_x == 1 ? "x" : what, b, nx->dtype == NN_I32 ? "int32" : nx->dtype == NN_F32 ? "float32" : "of another dtype");
        }
    }
    if (ok) ok = nn__mb_graph(&m, xs, n_x, ys, cap, n_y);
    nn__json_free(&j);
    return ok;
}

NN_API nn_tensor nn_model_build(nn_graph *g, nn_tensor x, const char *json) {
    nn_tensor y[NN__MODEL_MAX_IO];
    int n;
    if (!nn__check0(g, "nn_model_build", 1, &x)) return nn__tensor(-1);
    if (!nn__model_build(g, "nn_model_build", &x, 1, json, y, NN__MODEL_MAX_IO, &n)) return nn__tensor(-1);
    if (n != 1) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_model_build: outputs: %d; nn_model_build returns one (nn_model_build_io "
                                   "returns several)", n);
    return y[0];
}

NN_API nn_result nn_model_build_io(nn_graph *g, const nn_tensor *xs, int n_x, const char *json, nn_tensor *ys, int cap, int *n_y) {
    int n;
    if (n_y) *n_y = 0;
    if (!g || !n_y) return NN_ERR_INVALID_ARGUMENT;
    if (!xs || n_x < 1 || n_x > NN__MODEL_MAX_IO || !ys || cap < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_model_build_io: needs 1 to %d inputs xs and room for an output in ys (cap %d)",
                           NN__MODEL_MAX_IO, cap), nn__check_result(g);
    if (!nn__check0(g, "nn_model_build_io", n_x, xs)) return nn__check_result(g);
    if (!nn__model_build(g, "nn_model_build_io", xs, n_x, json, ys, cap, &n)) return nn__check_result(g);
    *n_y = n;
    return NN_OK;
}

/* ==== describing a built graph ==== */

/* The name of a layer whose parameter node id is NAME.suffix: NAME into name; 0 if not. */
static int nn__md_param(const nn_graph *g, int id, const char *suffix, char *name, size_t cap) {
    const nn__node *n;
    size_t len, sl = strlen(suffix);
    if (id <= 0 || id >= g->n_nodes) return 0;
    n = &g->nodes[id];
    if (n->op != NN__OP_PARAM || !n->name) return 0;
    len = strlen(n->name);
    if (len <= sl || len - sl >= cap || strcmp(n->name + len - sl, suffix) != 0) return 0;
    memcpy(name, n->name, len - sl);
    name[len - sl] = 0;
    return 1;
}

/* A bias node id named NAME.bias for the layer NAME */
static int nn__md_bias(const nn_graph *g, int id, const char *name) {
    char b[256];
    return nn__md_param(g, id, ".bias", b, sizeof b) && strcmp(b, name) == 0;
}

static void nn__md_dims(nn__jtext *t, const nn_shape *s, int from) {
    int d;
    nn__jt_puts(t, "[");
    for (d = from; d < s->ndim; d++) nn__jt_printf(t, "%s%lld", d > from ? ", " : "", (long long)s->dim[d]);
    nn__jt_puts(t, "]");
}

static void nn__md_pair(nn__jtext *t, const char *key, int a, int b) {
    if (a == b) nn__jt_printf(t, ", \"%s\": %d", key, a);
    else nn__jt_printf(t, ", \"%s\": [%d, %d]", key, a, b);
}

static int64_t nn__md_pool_out(int64_t in, int k, int s, int p, int d, int ceil_mode) {
    int64_t span = in + 2 * (int64_t)p - (int64_t)d * (k - 1) - 1, o = (ceil_mode ? span + s - 1 : span) / s + 1;
    if (ceil_mode && (o - 1) * s >= in + p) o--;
    return o;
}

/* One layer ending at node id, written into t (one object); *from: the node its input
   comes from. 0 with the reason in why when the node is no layer's. */
static int nn__md_layer(const nn_graph *g, int id, nn__jtext *t, int *from, char *why, size_t wn) {
    const nn__node *n = &g->nodes[id], *src;
    char name[256];
    size_t i;
    switch (n->op) {
    case NN__OP_UNARY:
        for (i = 0; i < sizeof nn__mb_act_list / sizeof nn__mb_act_list[0]; i++)
            if (nn__mb_act_list[i].fn == n->a.ew.fn) {
                const nn__mb_act *a = &nn__mb_act_list[i];
                const nn__mb_act_params *pn = nn__mb_act_names(a->name);
                int k;
                nn__jt_printf(t, "{\"type\": \"%s\"", a->name);
                for (k = 0; k < a->params; k++) {
                    nn__jt_printf(t, ", \"%s\": ", pn ? pn->p[k] : k ? "p1" : "p0");
                    nn__jt_float(t, n->a.ew.param[k]);
                }
                nn__jt_puts(t, "}");
                *from = n->in[0];
                return 1;
            }
        snprintf(why, wn, "an elementwise function that is not an activation layer");
        return 0;
    case NN__OP_SOFTMAX:
    case NN__OP_LOG_SOFTMAX:
        nn__jt_printf(t, "{\"type\": \"%s\", \"dim\": -1}", n->op == NN__OP_SOFTMAX ? "softmax" : "log_softmax");
        *from = n->in[0];
        return 1;
    case NN__OP_DROPOUT:
        nn__jt_puts(t, "{\"type\": \"dropout\", \"p\": ");
        nn__jt_float(t, n->a.random.p);
        nn__jt_puts(t, "}");
        *from = n->in[0];
        return 1;
    case NN__OP_ADD:
    case NN__OP_MATMUL: {
        const nn__node *mm = n->op == NN__OP_ADD ? &g->nodes[n->in[0]] : n;
        int has_bias = n->op == NN__OP_ADD;
        if (mm->op != NN__OP_MATMUL || mm->a.matmul.trans_a || !mm->a.matmul.trans_b || mm->shape.ndim != 2 ||
            !nn__md_param(g, mm->in[1], ".weight", name, sizeof name) || (has_bias && !nn__md_bias(g, n->in[1], name))) {
            snprintf(why, wn, "not a linear layer's (x @ NAME.weight^T [+ NAME.bias])");
            return 0;
        }
        src = &g->nodes[mm->in[0]];
        nn__jt_puts(t, "{\"type\": \"linear\", \"name\": ");
        nn__jt_string(t, name);
        nn__jt_printf(t, ", \"in\": %lld, \"out\": %lld, \"bias\": %s}", (long long)src->shape.dim[1],
                      (long long)mm->shape.dim[1], has_bias ? "true" : "false");
        *from = mm->in[0];
        return 1;
    }
    case NN__OP_CONV2D: {
        const nn__node *w = &g->nodes[n->in[1]];
        const nn__conv_attr *c = &n->a.conv;
        if (!nn__md_param(g, n->in[1], ".weight", name, sizeof name) || (n->n_in == 3 && !nn__md_bias(g, n->in[2], name))) {
            snprintf(why, wn, "not a conv2d layer's (NAME.weight, NAME.bias)");
            return 0;
        }
        src = &g->nodes[n->in[0]];
        nn__jt_puts(t, "{\"type\": \"conv2d\", \"name\": ");
        nn__jt_string(t, name);
        nn__jt_printf(t, ", \"in\": %lld, \"out\": %lld", (long long)src->shape.dim[1], (long long)w->shape.dim[0]);
        nn__md_pair(t, "kernel", (int)w->shape.dim[2], (int)w->shape.dim[3]);
        nn__md_pair(t, "stride", c->stride[0], c->stride[1]);
        nn__md_pair(t, "padding", c->pad[0], c->pad[1]);
        nn__md_pair(t, "dilation", c->dilation[0], c->dilation[1]);
        nn__jt_printf(t, ", \"groups\": %d, \"bias\": %s}", c->groups, n->n_in == 3 ? "true" : "false");
        *from = n->in[0];
        return 1;
    }
    case NN__OP_RESHAPE: {
        const nn__node *c = &g->nodes[n->in[0]];
        src = c;
        if (c->op == NN__OP_CONV2D && n->shape.ndim == 3 && g->nodes[c->in[0]].op == NN__OP_RESHAPE &&
            g->nodes[c->in[1]].op == NN__OP_RESHAPE && nn__md_param(g, g->nodes[c->in[1]].in[0], ".weight", name, sizeof name) &&
            (c->n_in == 2 || nn__md_bias(g, c->in[2], name))) { /* nn_conv1d_layer: conv2d on [N, C, 1, L] */
            const nn__node *w = &g->nodes[g->nodes[c->in[1]].in[0]];
            src = &g->nodes[g->nodes[c->in[0]].in[0]];
            nn__jt_puts(t, "{\"type\": \"conv1d\", \"name\": ");
            nn__jt_string(t, name);
            nn__jt_printf(t, ", \"in\": %lld, \"out\": %lld, \"kernel\": %lld, \"stride\": %d, \"padding\": %d, \"dilation\": %d, "
                          "\"groups\": %d, \"bias\": %s}", (long long)src->shape.dim[1], (long long)w->shape.dim[0],
                          (long long)w->shape.dim[2], c->a.conv.stride[1], c->a.conv.pad[1], c->a.conv.dilation[1],
                          c->a.conv.groups, c->n_in == 3 ? "true" : "false");
            *from = g->nodes[c->in[0]].in[0];
            return 1;
        }
        if (src->shape.ndim < 1 || n->shape.ndim < 1) {
            snprintf(why, wn, "a reshape to or from a scalar");
            return 0;
        }
        if (src->shape.dim[0] != n->shape.dim[0]) { /* the whole shape, its first dim the batch's share (-1) */
            nn_shape w = n->shape;
            int d;
            nn__jt_puts(t, "{\"type\": \"reshape\", \"shape\": [-1");
            for (d = 1; d < w.ndim; d++) nn__jt_printf(t, ", %lld", (long long)w.dim[d]);
            nn__jt_puts(t, "], \"include_batch\": true}");
        } else if (n->shape.ndim == 2 && src->shape.ndim > 2) nn__jt_puts(t, "{\"type\": \"flatten\"}");
        else {
            nn__jt_puts(t, "{\"type\": \"reshape\", \"shape\": ");
            nn__md_dims(t, &n->shape, 1);
            nn__jt_puts(t, "}");
        }
        *from = n->in[0];
        return 1;
    }
    case NN__OP_MAXPOOL2D:
    case NN__OP_AVGPOOL2D: {
        const nn__pool_attr *p = &n->a.pool;
        int mx = n->op == NN__OP_MAXPOOL2D, ceil_mode;
        src = &g->nodes[n->in[0]];
        if (p->adaptive || src->shape.ndim != 4) {
            snprintf(why, wn, "adaptive or 1-D pooling");
            return 0;
        }
        ceil_mode = nn__md_pool_out(src->shape.dim[2], p->kernel[0], p->stride[0], p->pad[0], p->dilation[0], 0) != n->shape.dim[2] ||
                    nn__md_pool_out(src->shape.dim[3], p->kernel[1], p->stride[1], p->pad[1], p->dilation[1], 0) != n->shape.dim[3];
        nn__jt_printf(t, "{\"type\": \"%s\"", mx ? "max_pool2d" : "avg_pool2d");
        nn__md_pair(t, "kernel", p->kernel[0], p->kernel[1]);
        nn__md_pair(t, "stride", p->stride[0], p->stride[1]);
        nn__md_pair(t, "padding", p->pad[0], p->pad[1]);
        if (mx) nn__md_pair(t, "dilation", p->dilation[0] ? p->dilation[0] : 1, p->dilation[1] ? p->dilation[1] : 1);
        else nn__jt_printf(t, ", \"count_include_pad\": %s", p->exclude_pad ? "false" : "true");
        nn__jt_printf(t, ", \"ceil_mode\": %s}", ceil_mode ? "true" : "false");
        *from = n->in[0];
        return 1;
    }
    case NN__OP_NORM_FORWARD: {
        const nn__norm_attr *a = &n->a.norm;
        const nn__node *gm;
        src = &g->nodes[n->in[0]];
        if (!a->has_gamma || !nn__md_param(g, n->in[2], ".weight", name, sizeof name) ||
            (a->has_beta && !nn__md_bias(g, n->in[3], name))) {
            snprintf(why, wn, "a normalisation without a layer's NAME.weight");
            return 0;
        }
        gm = &g->nodes[n->in[2]];
        if (a->per_channel) {
            nn__jt_printf(t, "{\"type\": \"batch_norm%dd\", \"name\": ", src->shape.ndim == 4 ? 2 : 1);
            nn__jt_string(t, name);
            nn__jt_printf(t, ", \"num_features\": %lld, \"eps\": ", (long long)src->shape.dim[1]);
            nn__jt_float(t, a->eps);
            nn__jt_puts(t, ", \"momentum\": ");
            nn__jt_float(t, a->momentum);
            nn__jt_puts(t, "}");
        } else {
            int d, same = a->groups == 1 && gm->shape.ndim < src->shape.ndim && a->has_beta == a->has_gamma;
            for (d = 0; same && d < gm->shape.ndim; d++) same = gm->shape.dim[d] == src->shape.dim[src->shape.ndim - gm->shape.ndim + d];
            if (!same && !(a->groups == 1 && !a->has_beta)) {
                snprintf(why, wn, "a group or instance normalisation (no model layer type yet)");
                return 0;
            }
            nn__jt_puts(t, "{\"type\": \"layer_norm\", \"name\": ");
            nn__jt_string(t, name);
            nn__jt_puts(t, ", \"normalized_shape\": ");
            nn__md_dims(t, &gm->shape, 0);
            nn__jt_puts(t, ", \"eps\": ");
            nn__jt_float(t, a->eps);
            nn__jt_printf(t, ", \"bias\": %s}", a->has_beta ? "true" : "false");
        }
        *from = n->in[0];
        return 1;
    }
    case NN__OP_RMS_NORM: {
        const nn__node *w = n->a.norm.has_gamma ? &g->nodes[n->in[1]] : NULL;
        if (!w || !nn__md_param(g, n->in[1], ".weight", name, sizeof name)) {
            snprintf(why, wn, "an RMS normalisation without a layer's NAME.weight");
            return 0;
        }
        nn__jt_puts(t, "{\"type\": \"rms_norm\", \"name\": ");
        nn__jt_string(t, name);
        nn__jt_puts(t, ", \"normalized_shape\": ");
        nn__md_dims(t, &w->shape, 0);
        nn__jt_puts(t, ", \"eps\": ");
        nn__jt_float(t, n->a.norm.eps);
        nn__jt_puts(t, "}");
        *from = n->in[0];
        return 1;
    }
    case NN__OP_INDEX_SELECT: { /* rows of a table parameter (examples/char_lstm.c's embedding): an embedding */
        const nn__node *w = &g->nodes[n->in[0]];
        if (n->a.gather.dim != 0 || w->shape.ndim != 2 || g->nodes[n->in[1]].shape.ndim != 1 ||
            !nn__md_param(g, n->in[0], ".weight", name, sizeof name)) {
            snprintf(why, wn, "an index_select that is not of a table's rows (NAME.weight [N, D], dim 0)");
            return 0;
        }
        nn__jt_puts(t, "{\"type\": \"embedding\", \"name\": ");
        nn__jt_string(t, name);
        nn__jt_printf(t, ", \"num_embeddings\": %lld, \"embedding_dim\": %lld}", (long long)w->shape.dim[0], (long long)w->shape.dim[1]);
        *from = n->in[1];
        return 1;
    }
    case NN__OP_EMBEDDING: {
        const nn__node *w = &g->nodes[n->in[0]];
        if (!nn__md_param(g, n->in[0], ".weight", name, sizeof name)) {
            snprintf(why, wn, "an embedding lookup of a weight that is no layer's NAME.weight");
            return 0;
        }
        nn__jt_puts(t, "{\"type\": \"embedding\", \"name\": ");
        nn__jt_string(t, name);
        nn__jt_printf(t, ", \"num_embeddings\": %lld, \"embedding_dim\": %lld", (long long)w->shape.dim[0], (long long)w->shape.dim[1]);
        if (n->a.seg.skip >= 0) nn__jt_printf(t, ", \"padding_idx\": %d", n->a.seg.skip);
        nn__jt_puts(t, "}");
        *from = n->in[1];
        return 1;
    }
    default:
        snprintf(why, wn, "no model layer type");
        return 0;
    }
}

/* One layer of a described graph: its last node, its inputs' nodes, its object. */
typedef struct nn__md_item {
    int end, n_in, in[NN__MODEL_MAX_IO];
    char *json;
    char name[256]; /* its reference: "name", or layers.K */
} nn__md_item;

static int nn__md_cmp(const void *a, const void *b) {
    int x = ((const nn__md_item *)a)->end, y = ((const nn__md_item *)b)->end;
    return x < y ? -1 : x > y;
}

/* The layer ending at node cur into it (its JSON and inputs); 0 with the reason in why. */
static int nn__md_item_of(const nn_graph *g, int cur, nn__md_item *it, char *why, size_t wn) {
    const nn__note *note = nn__note_find(g, cur);
    const nn__node *n = &g->nodes[cur];
    nn__jtext t;
    int from = -1, k;
    memset(&t, 0, sizeof t);
    it->end = cur;
    if (note) {
        if (!note->json) {
            snprintf(why, wn, "%s (a model file has no field for them)", note->why);
            return 0;
        }
        nn__jt_puts(&t, note->json);
        it->n_in = note->n_in;
        for (k = 0; k < note->n_in; k++) it->in[k] = note->in[k];
    } else if (nn__md_layer(g, cur, &t, &from, why, wn)) {
        it->n_in = 1;
        it->in[0] = from;
    } else if ((n->op == NN__OP_ADD || n->op == NN__OP_SUB || n->op == NN__OP_MUL) && n->n_in == 2) {
        NN_FREE(t.s);
        memset(&t, 0, sizeof t);
        nn__jt_printf(&t, "{\"type\": \"%s\"}", n->op == NN__OP_ADD ? "add" : n->op == NN__OP_SUB ? "sub" : "mul");
        it->n_in = 2;
        it->in[0] = n->in[0], it->in[1] = n->in[1];
    } else if (n->op == NN__OP_CONCAT && n->n_in >= 2 && n->n_in <= NN__MODEL_MAX_IO) {
        NN_FREE(t.s);
        memset(&t, 0, sizeof t);
        nn__jt_printf(&t, "{\"type\": \"concat\", \"dim\": %d}", n->a.shape.axis);
        it->n_in = n->n_in;
        for (k = 0; k < n->n_in; k++) it->in[k] = n->in[k];
    } else {
        NN_FREE(t.s);
        return 0;
    }
    if (t.oom) {
        NN_FREE(t.s);
        snprintf(why, wn, "out of memory");
        return 0;
    }
    it->json = t.s;
    return 1;
}

/* The JSON of the model from x to y into *out (NN_MALLOC'ed, NUL-terminated): the layers
   y comes from, back to x (x NN_NONE: to every input they come from); y NN_NONE: every
   output (nn_graph_output) is the model's. A failure is the context's error. */
static nn_result nn__model_describe(nn_graph *g, nn_tensor x, nn_tensor y, const char *fn, char **out) {
    nn_context *ctx = g->ctx;
    nn__jtext t;
    nn__md_item *items = NULL;
    int *seen = NULL, *stack = NULL, *ins = NULL, *outs = NULL, n_items = 0, n_ins = 0, n_outs = 0, sp = 0, k, i, c;
    nn_result r = NN_OK;
    memset(&t, 0, sizeof t);
    *out = NULL;
    if (g->status != NN_OK) {
        char why[NN__ERRLEN];
        snprintf(why, sizeof why, "%s", ctx->err);
        return nn__fail(ctx, NN_ERR_STATE, "%s: the graph failed to build: %.3000s", fn, why);
    }
    if ((x.id != 0 && !nn__is_tensor(g, x)) || (y.id != 0 && !nn__is_tensor(g, y)))
        return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: %s is not a tensor of this graph", fn, x.id == 0 || nn__is_tensor(g, x) ? "y" : "x");
    seen = (int *)nn__calloc((size_t)g->n_nodes, sizeof *seen); /* 0 unseen, 1 an input, 2 + K layer K */
    stack = (int *)nn__calloc(((size_t)g->n_nodes + 1) * (NN__MODEL_MAX_IO + 1), sizeof *stack); /* each layer pushes its inputs once */
    items = (nn__md_item *)nn__calloc((size_t)g->n_nodes, sizeof *items);
    ins = (int *)nn__calloc((size_t)g->n_nodes, sizeof *ins);
    outs = (int *)nn__calloc((size_t)g->n_nodes, sizeof *outs);
    if (!seen || !stack || !items || !ins || !outs) {
        r = nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto done;
    }
    if (y.id != 0) outs[n_outs++] = y.id;
    else
        for (k = 1; k < (g->n_forward > 0 ? g->n_forward : g->n_nodes) && k < g->n_nodes; k++)
            if (g->nodes[k].is_output) outs[n_outs++] = k;
    if (n_outs == 0 || n_outs > NN__MODEL_MAX_IO) {
        r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: y is NN_NONE and the graph has %d outputs (nn_graph_output); a model has 1 to %d",
                     fn, n_outs, NN__MODEL_MAX_IO);
        goto done;
    }
    for (k = 0; k < n_outs; k++) stack[sp++] = outs[k];
    while (sp > 0) { /* every node the outputs come from, back to the inputs: a layer's or an input */
        int cur = stack[--sp];
        char why[300];
        if (seen[cur]) continue;
        if (cur == x.id || (x.id == 0 && g->nodes[cur].op == NN__OP_INPUT)) {
            seen[cur] = 1;
            ins[n_ins++] = cur;
            continue;
        }
        why[0] = 0;
        if (g->nodes[cur].op == NN__OP_INPUT || !nn__md_item_of(g, cur, &items[n_items], why, sizeof why)) {
            char sh[128];
            nn__shape_str(&g->nodes[cur].shape, sh, sizeof sh);
            if (g->nodes[cur].op == NN__OP_INPUT)
                r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: the model depends on the input %s besides x (x NN_NONE: a model of every "
                             "input its outputs come from)", fn, g->nodes[cur].name ? g->nodes[cur].name : "(unnamed)");
            else
                r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: node %d (%s, output %s) on the way from the inputs to the outputs: %s; a model "
                             "file holds a graph of layers (nn_model_build's types) and not any op: not a chain of layers", fn, cur,
                             nn__op(g->nodes[cur].op)->name, sh, why[0] ? why : "no model layer type");
            goto done;
        }
        seen[cur] = 2 + n_items;
        for (c = items[n_items].n_in - 1; c >= 0; c--) {
            int in = items[n_items].in[c];
            if (in <= 0 || in >= cur) {
                r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: node %d's input %d is no earlier node", fn, cur, in);
                n_items++;
                goto done;
            }
            if (!seen[in]) stack[sp++] = in;
        }
        n_items++;
    }
    if (n_ins == 0) {
        r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: the outputs come from no input%s", fn, x.id ? " (nor from x)" : "");
        goto done;
    }
    if (n_ins > NN__MODEL_MAX_IO) {
        r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: the model has %d inputs; at most %d", fn, n_ins, NN__MODEL_MAX_IO);
        goto done;
    }
    if (x.id != 0 && !seen[x.id]) {
        r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: y does not come from x", fn);
        goto done;
    }
    qsort(items, (size_t)n_items, sizeof *items, nn__md_cmp);
    for (k = 0; k < n_items; k++) seen[items[k].end] = 2 + k;
    for (k = 1; k < n_ins; k++) /* the inputs in node order */
        for (i = k; i > 0 && ins[i - 1] > ins[i]; i--) c = ins[i], ins[i] = ins[i - 1], ins[i - 1] = c;
    for (k = 0; k < n_items; k++) { /* each layer's reference: its "name", or layers.K; unique */
        nn__json lj;
        char err[64];
        int kn;
        snprintf(items[k].name, sizeof items[k].name, "layers.%d", k);
        if (nn__json_parse(items[k].json, strlen(items[k].json), NN__JSON_MAX_BYTES, &lj, err, sizeof err) == NN_OK) {
            kn = nn__json_get(&lj, 0, "name");
            if (kn >= 0 && lj.v[kn].type == NN__J_STR) snprintf(items[k].name, sizeof items[k].name, "%s", nn__json_str(&lj, kn));
            nn__json_free(&lj);
        }
        for (i = 0; i < k; i++)
            if (strcmp(items[i].name, items[k].name) == 0) {
                r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: two layers are named %s (nodes %d and %d); a model's names are unique", fn,
                             items[k].name, items[i].end, items[k].end);
                goto done;
            }
    }
    nn__jt_puts(&t, "{\"format\": \"nn.model\", \"version\": 1,\n \"inputs\": [");
    for (k = 0; k < n_ins; k++) {
        const nn__node *nx = &g->nodes[ins[k]];
        char dn[16];
        if (k == 0) snprintf(dn, sizeof dn, "x");
        else snprintf(dn, sizeof dn, "x%d", k);
        nn__jt_puts(&t, k ? ", {\"name\": " : "{\"name\": ");
        nn__jt_string(&t, nx->op == NN__OP_INPUT && nx->name ? nx->name : dn);
        nn__jt_puts(&t, ", \"shape\": ");
        nn__md_dims(&t, &nx->shape, 1);
        nn__jt_printf(&t, ", \"dtype\": \"%s\"}", nx->dtype == NN_I32 ? "int32" : "float32");
    }
    nn__jt_puts(&t, "],\n \"layers\": [");
    for (k = 0; k < n_items; k++) {
        const nn__md_item *it = &items[k];
        int prev = k ? items[k - 1].end : ins[0];
        nn__jt_puts(&t, k ? ",\n  " : "\n  ");
        if (it->n_in == 1 && it->in[0] == prev) nn__jt_puts(&t, it->json);
        else {
            nn__jt_put(&t, it->json, strlen(it->json) - 1); /* without its '}' */
            nn__jt_puts(&t, ", \"inputs\": [");
            for (c = 0; c < it->n_in; c++) {
                int s = seen[it->in[c]], kin;
                if (c) nn__jt_puts(&t, ", ");
                if (s >= 2) nn__jt_string(&t, items[s - 2].name);
                else {
                    for (kin = 0; kin < n_ins && ins[kin] != it->in[c]; kin++) {}
                    if (g->nodes[it->in[c]].op == NN__OP_INPUT && g->nodes[it->in[c]].name) nn__jt_string(&t, g->nodes[it->in[c]].name);
                    else if (kin == 0) nn__jt_string(&t, "x");
                    else nn__jt_printf(&t, "\"x%d\"", kin);
                }
            }
            nn__jt_puts(&t, "]}");
        }
    }
    nn__jt_puts(&t, "\n ]");
    if (n_items > 0 && !(n_outs == 1 && outs[0] == items[n_items - 1].end)) {
        nn__jt_puts(&t, ",\n \"outputs\": [");
        for (k = 0; k < n_outs; k++) {
            int s = seen[outs[k]];
            if (s < 2) {
                r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: output %d is an input; a model's outputs are layers'", fn, k);
                goto done;
            }
            if (k) nn__jt_puts(&t, ", ");
            nn__jt_string(&t, items[s - 2].name);
        }
        nn__jt_puts(&t, "]");
    }
    nn__jt_puts(&t, "}\n");
    if (t.oom) {
        r = nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto done;
    }
    *out = t.s;
    t.s = NULL;
done:
    for (k = 0; items && k < n_items; k++) NN_FREE(items[k].json);
    NN_FREE(items);
    NN_FREE(seen);
    NN_FREE(stack);
    NN_FREE(ins);
    NN_FREE(outs);
    NN_FREE(t.s);
    return r;
}

NN_API nn_result nn_model_json(nn_graph *g, nn_tensor x, nn_tensor y, char *buf, size_t cap, size_t *len) {
    char *s = NULL;
    size_t n;
    nn_result r;
    if (len) *len = 0;
    if (!g || !len) return NN_ERR_INVALID_ARGUMENT;
    if (buf && cap) buf[0] = 0;
    if ((r = nn__model_describe(g, x, y, "nn_model_json", &s)) != NN_OK) return r;
    n = strlen(s);
    *len = n;
    if (buf && cap > n) memcpy(buf, s, n + 1);
    else if (buf) r = nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_model_json: the text is %lu bytes; buf holds %lu (it needs one more, for the NUL)",
                               (unsigned long)n, (unsigned long)cap);
    NN_FREE(s);
    return r;
}

/* ==== saving and loading ==== */

static nn_result nn__model_save(nn_graph *g, nn_tensor x, nn_tensor y, const char *path) {
    nn_context *ctx = g->ctx;
    nn__params *ps = g->params;
    nn__st_item *items = NULL;
    nn__jtext meta;
    char *json = NULL;
    int i;
    nn_result r;
    memset(&meta, 0, sizeof meta);
    if ((r = nn__graph_orphaned(g, "nn_model_save")) != NN_OK) return r;
    if (!path || !path[0]) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_model_save: no path given");
    if ((r = nn__model_describe(g, x, y, "nn_model_save", &json)) != NN_OK) return r;
    nn__jt_puts(&meta, "{\"format\":\"pt\",\"" NN__MODEL_KEY "\":");
    nn__st_put_string(&meta, json); /* valid UTF-8: names the builders took, and ASCII */
    nn__jt_puts(&meta, "}");
    items = (nn__st_item *)nn__calloc((size_t)(ps->n > 0 ? ps->n : 1), sizeof *items);
    if (!items || meta.oom) {
        r = nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    for (i = 0; i < ps->n; i++) {
        nn__param *p = &ps->p[i];
        if (!p->allocated && !p->init) {
            r = nn__fail(ctx, NN_ERR_STATE, "%s: parameter %s has no storage", path, p->name);
            goto done;
        }
        items[i].name = p->name;
        items[i].shape = p->shape;
        items[i].numel = p->numel;
        items[i].buf = p->allocated ? &p->buf : NULL;
        items[i].stored = p->dtype;
        items[i].host = p->allocated ? NULL : p->init;
    }
    if (ps->n > 1) qsort(items, (size_t)ps->n, sizeof *items, nn__st_cmp_item);
    r = nn__st_save(ctx, path, meta.s, items, ps->n, NN_F32);
done:
    NN_FREE(items);
    NN_FREE(meta.s);
    NN_FREE(json);
    return r;
}

NN_API nn_result nn_model_save(nn_graph *g, nn_tensor x, nn_tensor y, const char *path) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_model_save", nn__model_save(g, x, y, path));
}

/* The "nn.model" string of a parsed safetensors file's __metadata__ into *json (NN_MALLOC'ed);
   0 and err when there is none or the header does not read. */
static nn_result nn__model_meta(const unsigned char *buf, const nn__st_file *f, char **json, char *err, size_t errlen) {
    nn__json h;
    int meta, k;
    nn_result r;
    *json = NULL;
    r = nn__json_parse((const char *)buf + 8, f->data_off - 8, NN__MODEL_MAX_HEADER, &h, err, errlen);
    if (r != NN_OK) return r == NN_ERR_OUT_OF_MEMORY ? r : NN_ERR_IO;
    meta = nn__json_get(&h, 0, "__metadata__");
    k = nn__json_get(&h, meta, NN__MODEL_KEY);
    if (k < 0 || h.v[k].type != NN__J_STR) {
        snprintf(err, errlen, "no model description (__metadata__ has no string \"" NN__MODEL_KEY "\": nn_model_save writes "
                 "one; nn_graph_save_safetensors does not)");
        nn__json_free(&h);
        return NN_ERR_IO;
    }
    *json = (char *)NN_MALLOC(h.v[k].len + 1);
    if (!*json) {
        snprintf(err, errlen, "out of memory");
        nn__json_free(&h);
        return NN_ERR_OUT_OF_MEMORY;
    }
    memcpy(*json, nn__json_str(&h, k), h.v[k].len + 1);
    nn__json_free(&h);
    return NN_OK;
}

/* The file's tensors into g's parameters (host copies, before compile): each must be there
   with the parameter's shape, unless fresh (then a missing or reshaped one keeps its
   initial values, logged). Nothing is written unless every check passes. */
static nn_result nn__model_weights(nn_graph *g, const char *path, const unsigned char *buf, const nn__st_file *f, int fresh) {
    nn_context *ctx = g->ctx;
    nn__params *ps = g->params;
    const nn__st_tensor **match;
    int i, k, kept = 0;
    nn_result r = NN_OK;
    match = (const nn__st_tensor **)nn__calloc((size_t)(ps->n > 0 ? ps->n : 1), sizeof *match);
    if (!match) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    for (i = 0; i < ps->n && r == NN_OK; i++) {
        nn__param *p = &ps->p[i];
        const nn__st_tensor *t = nn__st_find(f, p->name);
        int same = t && t->ndim == p->shape.ndim;
        for (k = 0; same && k < t->ndim; k++) same = t->shape[k] == p->shape.dim[k];
        if (t && t->dtype >= NN__ST_N_FLOAT)
            r = nn__fail(ctx, NN_ERR_SHAPE, "%s: tensor %s is %s; F32, F16, BF16 or F64 can be loaded", path, p->name, nn__st_dtype_names[t->dtype]);
        else if (!p->init)
            r = nn__fail(ctx, NN_ERR_STATE, "%s: parameter %s has no host copy", path, p->name);
        else if (same)
            match[i] = t;
        else if (fresh) {
            nn__log(ctx, NN_LOG_INFO, "%s: %s %s: it keeps its fresh initialisation (fresh_mismatched)", path, p->name,
                    t ? "has another shape in the file" : "is not in the file");
            kept++;
        } else if (!t)
            r = nn__fail(ctx, NN_ERR_IO, "%s: no tensor for parameter %s of the model", path, p->name);
        else {
            char a[160], b[160];
            nn_shape s;
            memset(&s, 0, sizeof s);
            s.ndim = t->ndim < NN_MAX_DIMS ? t->ndim : NN_MAX_DIMS;
            for (k = 0; k < s.ndim; k++) s.dim[k] = t->shape[k];
            nn__shape_str(&s, a, sizeof a);
            nn__shape_str(&p->shape, b, sizeof b);
            r = nn__fail(ctx, NN_ERR_SHAPE, "%s: tensor %s is %s in the file, %s in the model (a layer changed in the JSON? "
                         "nn_model_desc.fresh_mismatched keeps such a layer's fresh initialisation)", path, p->name, a, b);
        }
    }
    if (r == NN_OK && ps->n && kept == ps->n)
        r = nn__fail(ctx, NN_ERR_IO, "%s: none of the model's %d parameters is in the file with its shape", path, ps->n);
    for (i = 0; i < ps->n && r == NN_OK; i++)
        if (match[i]) nn__st_convert(ps->p[i].init, buf + f->data_off + (size_t)match[i]->begin, (size_t)ps->p[i].numel, match[i]->dtype);
    NN_FREE((void *)match);
    return r;
}

/* nn_model_load on a file in memory (the fuzzer's entry too): *out the graph, or NULL. */
static nn_result nn__model_load_mem(nn_context *ctx, const char *path, const unsigned char *buf, size_t len,
                                    const nn_model_desc *desc, nn_graph **out) {
    nn__st_file f;
    nn__json j;
    nn__mb m;
    char err[512], *json = NULL;
    const char *text;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn__mb_input in[NN__MODEL_MAX_IO];
    nn_tensor xs[NN__MODEL_MAX_IO], ys[NN__MODEL_MAX_IO];
    int n_in = 0, n_out = 0, d, k, train = desc && desc->train;
    int64_t batch = desc && desc->batch > 0 ? desc->batch : 1;
    nn_result r;
    *out = NULL;
    memset(&j, 0, sizeof j);
    if (desc && desc->batch < 0) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_model_load: batch %lld is negative", (long long)desc->batch);
    if (desc && desc->graph && desc->graph->share_params)
        return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_model_load: desc->graph->share_params: a loaded model has parameters "
                        "of its own (the file's)");
    if ((r = nn__st_parse(buf, len, &f, err, sizeof err)) != NN_OK) return nn__fail(ctx, r, "%s: %s", path, err);
    if (desc && desc->json) text = desc->json;
    else if ((r = nn__model_meta(buf, &f, &json, err, sizeof err)) != NN_OK) {
        r = nn__fail(ctx, r, "%s: %s", path, err);
        goto done;
    } else text = json;
    memset(&gd, 0, sizeof gd);
    if (desc && desc->graph) gd = *desc->graph;
    gd.eval = !train;
    if ((r = nn_graph_create(ctx, &gd, &g)) != NN_OK) goto done;
    if (nn__mb_parse(g, "nn_model_load", text, strlen(text), &j).id < 0) goto built;
    memset(&m, 0, sizeof m);
    m.g = g;
    m.j = &j;
    m.fn = "nn_model_load";
    m.layer = -1;
    if (!nn__mb_top(&m) || !nn__mb_inputs(&m, in, &n_in)) goto built;
    for (k = 0; k < n_in; k++) { /* [batch, shape...] */
        nn_shape xsh;
        memset(&xsh, 0, sizeof xsh);
        xsh.ndim = in[k].shape.ndim + 1;
        xsh.dim[0] = batch;
        for (d = 0; d < in[k].shape.ndim; d++) xsh.dim[d + 1] = in[k].shape.dim[d];
        xs[k] = nn_input(g, in[k].name, in[k].dtype, xsh);
    }
    if (g->status == NN_OK) nn__mb_graph(&m, xs, n_in, ys, NN__MODEL_MAX_IO, &n_out);
built:
    if ((r = g->status) != NN_OK) goto done;
    if ((r = nn__model_weights(g, path, buf, &f, desc && desc->json && desc->fresh_mismatched)) != NN_OK) goto done;
    for (k = 0; k < n_out; k++)
        if ((r = nn_graph_output(g, ys[k])) != NN_OK) goto done;
    if (desc && desc->input) *desc->input = xs[0];
    if (desc && desc->output) *desc->output = ys[0];
    for (k = 0; desc && k < desc->max_io; k++) {
        if (desc->inputs) desc->inputs[k] = k < n_in ? xs[k] : NN_NONE;
        if (desc->outputs) desc->outputs[k] = k < n_out ? ys[k] : NN_NONE;
    }
    if (!train) {
        nn_compile_desc cd;
        memset(&cd, 0, sizeof cd);
        if ((r = nn_graph_compile(g, &cd)) != NN_OK) goto done;
    }
    *out = g;
    g = NULL;
done:
    nn__json_free(&j);
    nn_graph_destroy(g);
    NN_FREE(json);
    nn__st_free(&f);
    return r;
}

NN_API nn_result nn_model_load(nn_context *ctx, const char *path, const nn_model_desc *desc, nn_graph **out) {
    unsigned char *buf = NULL;
    size_t len = 0;
    nn_result r;
    if (!out) return NN_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!ctx) return NN_ERR_INVALID_ARGUMENT;
    if (!path || !path[0]) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_model_load: no path given");
    if ((r = nn__read_file(ctx, path, &buf, &len)) != NN_OK) return r;
    r = nn__model_load_mem(ctx, path, buf, len, desc, out);
    NN_FREE(buf);
    return r;
}
