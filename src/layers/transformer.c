/* Transformer layers composed of the public builders: nanoGPT's GPT (blocks, the model,
   and one-token decoding against a key/value cache kept on the device). Parameter names
   and layouts are nanoGPT's (Linear weights [out, in]), so state dicts load both ways.
   The embedding and the attention are each one small function here (nn__tf_embedding,
   nn__tf_attention): switching them to the fused ops is a one-line change. */
#include "../base/internal.h"

/* PyTorch-style name NAME.suffix, or suffix alone when NAME is empty. */
static void nn__tf_name(char *out, size_t cap, const char *name, const char *suffix) {
    size_t n = name ? strlen(name) : 0;
    if (n + strlen(suffix) + 2 > cap) n = 0; /* refused by nn__tf_cfg before any use */
    if (n) {
        memcpy(out, name, n);
        out[n++] = '.';
    }
    memcpy(out + n, suffix, strlen(suffix) + 1);
}

static int nn__tf_cfg(nn_graph *g, const char *op, const nn_gpt_config *c) {
    if (!c) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a config", op);
        return 0;
    }
    if (c->vocab_size < 1 || c->block_size < 1 || c->n_layer < 1 || c->n_head < 1 || c->n_embd < 1 || c->n_embd % c->n_head ||
        !(c->dropout >= 0 && c->dropout < 1)) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                    "%s: config vocab_size %lld, block_size %lld, n_layer %d, n_head %d, n_embd %lld, dropout %g (needs all >= 1, "
                    "n_embd divisible by n_head, 0 <= dropout < 1)",
                    op, (long long)c->vocab_size, (long long)c->block_size, c->n_layer, c->n_head, (long long)c->n_embd,
                    (double)c->dropout);
        return 0;
    }
    if (c->name && strlen(c->name) > 180) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: name prefix longer than 180 chars", op);
        return 0;
    }
    return 1;
}

/* nanoGPT's init: Linear weights N(0, std), biases zeros. y = x W^T + b on rows x [R, in]. */
static nn_tensor nn__tf_linear(nn_graph *g, nn_tensor x, int64_t out, float std, int bias, const char *name) {
    char wn[256], bn[256];
    nn_init wi, bi;
    nn_tensor y;
    memset(&wi, 0, sizeof wi);
    memset(&bi, 0, sizeof bi);
    wi.kind = NN_INIT_NORMAL;
    wi.b = std;
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    y = nn_matmul(g, x, nn_param(g, wn, nn_shape2(out, nn__n(g, x)->shape.dim[1]), wi), 0, 1);
    return bias ? nn_add(g, y, nn_param(g, bn, nn_shape1(out), bi)) : y;
}

/* nn.LayerNorm(C) (nanoGPT's LayerNorm(ndim, bias)): weight ones, bias zeros. */
static nn_tensor nn__tf_layer_norm(nn_graph *g, nn_tensor x, int bias, const char *name) {
    char wn[256], bn[256];
    nn_init one, zero;
    int64_t c = nn__n(g, x)->shape.dim[nn__n(g, x)->shape.ndim - 1];
    memset(&one, 0, sizeof one);
    memset(&zero, 0, sizeof zero);
    one.kind = NN_INIT_CONSTANT;
    one.a = 1.0f;
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    return nn_layer_norm(g, x, 1, nn_param(g, wn, nn_shape1(c), one), bias ? nn_param(g, bn, nn_shape1(c), zero) : NN_NONE, NULL);
}

/* The token embedding: rows of weight [V, C] at idx (int32, any shape) -> [numel(idx), C]. */
static nn_tensor nn__tf_embedding(nn_graph *g, nn_tensor weight, nn_tensor idx) {
    int64_t n = nn__n(g, idx)->numel;
    return nn_gather_rows(g, weight, nn__n(g, idx)->shape.ndim == 1 ? idx : nn_reshape(g, idx, nn_shape1(n)));
}

/* Scaled dot-product attention on q [B, H, Tq, D], k, v [B, H, Tk, D]; mask (float, nonzero
   where a key is hidden, broadcast to [B, H, Tq, Tk]) or NN_NONE. Composed: the [Tq, Tk]
   scores are stored. */
static nn_tensor nn__tf_attention(nn_graph *g, nn_tensor q, nn_tensor k, nn_tensor v, nn_tensor mask, float dropout) {
    const nn_shape *s = &nn__n(g, q)->shape;
    nn_tensor att = nn_mul_scalar(g, nn_matmul(g, q, k, 0, 1), (float)(1.0 / sqrt((double)s->dim[s->ndim - 1])));
    if (mask.id) att = nn_masked_fill(g, att, mask, -INFINITY);
    att = nn_softmax(g, att, -1);
    if (dropout > 0) att = nn_dropout(g, att, dropout);
    return nn_matmul(g, att, v, 0, 0);
}

/* [T, T], 1 above the diagonal (the keys after each query). */
static nn_tensor nn__tf_causal_mask(nn_graph *g, int64_t t) {
    nn_tensor r = nn_arange(g, 0, (double)t, 1);
    return nn_gt(g, nn_reshape(g, r, nn_shape2(1, t)), nn_reshape(g, r, nn_shape2(t, 1)));
}

/* nanoGPT's MLP: c_fc (C -> 4C), GELU (exact), c_proj (4C -> C), dropout; on rows [R, C]. */
static nn_tensor nn__gpt_mlp(nn_graph *g, nn_tensor x, const nn_gpt_config *c, const char *name) {
    char n1[256], n2[256];
    float pstd = (float)(0.02 / sqrt(2.0 * c->n_layer));
    nn_tensor h;
    snprintf(n1, sizeof n1, "%s.mlp.c_fc", name);
    snprintf(n2, sizeof n2, "%s.mlp.c_proj", name);
    h = nn_gelu(g, nn__tf_linear(g, x, 4 * c->n_embd, 0.02f, !c->no_bias, n1));
    h = nn__tf_linear(g, h, c->n_embd, pstd, !c->no_bias, n2);
    return c->dropout > 0 ? nn_dropout(g, h, c->dropout) : h;
}

/* One block on x [B, T, C]; mask: the causal mask [T, T]. */
static nn_tensor nn__gpt_block(nn_graph *g, nn_tensor x, nn_tensor mask, const nn_gpt_config *c, const char *name) {
    char nb[256];
    const nn_shape *s = &nn__n(g, x)->shape;
    int64_t b = s->dim[0], t = s->dim[1], e = c->n_embd, h = c->n_head, d = e / h;
    int perm[5] = {2, 0, 3, 1, 4}, back[4] = {0, 2, 1, 3};
    float pstd = (float)(0.02 / sqrt(2.0 * c->n_layer));
    nn_tensor r = nn_reshape(g, x, nn_shape2(b * t, e)), a, qkv, q, k, v, y;
    snprintf(nb, sizeof nb, "%s.ln_1", name);
    a = nn__tf_layer_norm(g, r, !c->no_bias, nb);
    snprintf(nb, sizeof nb, "%s.attn.c_attn", name);
    qkv = nn_permute(g, nn_reshape(g, nn__tf_linear(g, a, 3 * e, 0.02f, !c->no_bias, nb), nn_shape5(b, t, 3, h, d)), perm, 5);
    q = nn_reshape(g, nn_slice(g, qkv, 0, 0, 1), nn_shape4(b, h, t, d));
    k = nn_reshape(g, nn_slice(g, qkv, 0, 1, 1), nn_shape4(b, h, t, d));
    v = nn_reshape(g, nn_slice(g, qkv, 0, 2, 1), nn_shape4(b, h, t, d));
    y = nn__tf_attention(g, q, k, v, mask, c->dropout);
    y = nn_reshape(g, nn_permute(g, y, back, 4), nn_shape2(b * t, e));
    snprintf(nb, sizeof nb, "%s.attn.c_proj", name);
    y = nn__tf_linear(g, y, e, pstd, !c->no_bias, nb);
    if (c->dropout > 0) y = nn_dropout(g, y, c->dropout);
    r = nn_add(g, r, y);
    snprintf(nb, sizeof nb, "%s.ln_2", name);
    r = nn_add(g, r, nn__gpt_mlp(g, nn__tf_layer_norm(g, r, !c->no_bias, nb), c, name));
    return nn_reshape(g, r, nn_shape3(b, t, e));
}

NN_API nn_tensor nn_gpt_block(nn_graph *g, nn_tensor x, const nn_gpt_config *cfg, const char *name) {
    const nn_shape *s;
    char b[128];
    if (!nn__check(g, "nn_gpt_block", 1, &x) || !nn__expect_f32(g, "nn_gpt_block", x, "x") || !nn__tf_cfg(g, "nn_gpt_block", cfg))
        return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_gpt_block: needs a name (at most 200 chars)");
    s = &nn__n(g, x)->shape;
    nn__shape_str(s, b, sizeof b);
    if (s->ndim != 3 || s->dim[2] != cfg->n_embd || s->dim[1] > cfg->block_size)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_gpt_block %s: x %s must be [B, T, n_embd %lld] with T <= block_size %lld", name, b,
                           (long long)cfg->n_embd, (long long)cfg->block_size);
    return nn__gpt_block(g, x, nn__tf_causal_mask(g, s->dim[1]), cfg, name);
}

/* Token and position embeddings, the blocks, ln_f and the head tied to wte: [B*T, V]. */
NN_API nn_tensor nn_gpt(nn_graph *g, nn_tensor idx, const nn_gpt_config *cfg) {
    char nb[320], pre[200];
    const nn_shape *s;
    nn_tensor wte, x, mask;
    nn_init wi;
    int64_t b, t, e;
    int i;
    if (!nn__check(g, "nn_gpt", 1, &idx) || !nn__tf_cfg(g, "nn_gpt", cfg)) return nn__tensor(-1);
    s = &nn__n(g, idx)->shape;
    if (nn__n(g, idx)->dtype != NN_I32 || s->ndim != 2 || s->dim[1] > cfg->block_size) {
        char sb[128];
        nn__shape_str(s, sb, sizeof sb);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_gpt: idx %s %s must be int32 [B, T] with T <= block_size %lld", sb,
                           nn__dtype_name(nn__n(g, idx)->dtype), (long long)cfg->block_size);
    }
    b = s->dim[0];
    t = s->dim[1];
    e = cfg->n_embd;
    memset(&wi, 0, sizeof wi);
    wi.kind = NN_INIT_NORMAL;
    wi.b = 0.02f;
    nn__tf_name(pre, sizeof pre, cfg->name, "transformer");
    snprintf(nb, sizeof nb, "%s.wte.weight", pre);
    wte = nn_param(g, nb, nn_shape2(cfg->vocab_size, e), wi);
    snprintf(nb, sizeof nb, "%s.wpe.weight", pre);
    /* positions 0..T-1: the first T rows of wpe */
    x = nn_add(g, nn_reshape(g, nn__tf_embedding(g, wte, idx), nn_shape3(b, t, e)),
               nn_slice(g, nn_param(g, nb, nn_shape2(cfg->block_size, e), wi), 0, 0, t));
    if (cfg->dropout > 0) x = nn_dropout(g, x, cfg->dropout);
    mask = nn__tf_causal_mask(g, t);
    for (i = 0; i < cfg->n_layer; i++) {
        snprintf(nb, sizeof nb, "%s.h.%d", pre, i);
        x = nn__gpt_block(g, x, mask, cfg, nb);
    }
    snprintf(nb, sizeof nb, "%s.ln_f", pre);
    x = nn__tf_layer_norm(g, nn_reshape(g, x, nn_shape2(b * t, e)), !cfg->no_bias, nb);
    return nn_matmul(g, x, wte, 0, 1); /* lm_head: wte's weight (tied) */
}

/* One token per sequence at position pos against the caches: x [B, C] -> logits [B, V]. */
NN_API nn_tensor nn_gpt_decode(nn_graph *g, nn_tensor idx, nn_tensor pos, const nn_gpt_config *cfg, nn_tensor *caches) {
    char nb[320], pre[200];
    nn_tensor wte, x, onehot, slot, mask;
    nn_init wi;
    int64_t b, e, h, d, tmax;
    int i;
    nn_tensor in[2];
    in[0] = idx;
    in[1] = pos;
    if (!nn__check(g, "nn_gpt_decode", 2, in) || !nn__tf_cfg(g, "nn_gpt_decode", cfg)) return nn__tensor(-1);
    if (nn__n(g, idx)->dtype != NN_I32 || nn__n(g, idx)->shape.ndim != 1 || nn__n(g, pos)->dtype != NN_I32 ||
        nn__n(g, pos)->numel != 1 || nn__n(g, pos)->shape.ndim != 1) {
        char s1[128], s2[128];
        nn__shape_str(&nn__n(g, idx)->shape, s1, sizeof s1);
        nn__shape_str(&nn__n(g, pos)->shape, s2, sizeof s2);
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_gpt_decode: idx %s %s and pos %s %s must be int32 [B] and int32 [1]", s1,
                           nn__dtype_name(nn__n(g, idx)->dtype), s2, nn__dtype_name(nn__n(g, pos)->dtype));
    }
    b = nn__n(g, idx)->shape.dim[0];
    e = cfg->n_embd;
    h = cfg->n_head;
    d = e / h;
    tmax = cfg->block_size;
    memset(&wi, 0, sizeof wi);
    wi.kind = NN_INIT_NORMAL;
    wi.b = 0.02f;
    nn__tf_name(pre, sizeof pre, cfg->name, "transformer");
    snprintf(nb, sizeof nb, "%s.wte.weight", pre);
    wte = nn_param(g, nb, nn_shape2(cfg->vocab_size, e), wi);
    snprintf(nb, sizeof nb, "%s.wpe.weight", pre);
    x = nn_add(g, nn__tf_embedding(g, wte, idx), nn__tf_embedding(g, nn_param(g, nb, nn_shape2(tmax, e), wi), pos));
    /* the cache slot of pos ([Tmax] one-hot) and the keys after it (hidden) */
    onehot = nn_one_hot(g, pos, tmax);
    slot = nn_reshape(g, onehot, nn_shape4(1, 1, tmax, 1));
    mask = nn_reshape(g, nn_sub(g, nn_cumsum(g, onehot, 1), onehot), nn_shape4(1, 1, 1, tmax));
    for (i = 0; i < cfg->n_layer; i++) {
        char nl[240];
        float pstd = (float)(0.02 / sqrt(2.0 * cfg->n_layer));
        nn_tensor a, qkv, q, kc, vc, y;
        snprintf(nl, sizeof nl, "%s.h.%d", pre, i);
        snprintf(nb, sizeof nb, "%s.ln_1", nl);
        a = nn__tf_layer_norm(g, x, !cfg->no_bias, nb);
        snprintf(nb, sizeof nb, "%s.attn.c_attn", nl);
        qkv = nn__tf_linear(g, a, 3 * e, 0.02f, !cfg->no_bias, nb); /* [B, 3C]: q | k | v, each [H, D] */
        q = nn_reshape(g, nn_slice(g, qkv, 1, 0, e), nn_shape4(b, h, 1, d));
        /* the cache: a running sum on the device, zero but at the positions written; the new
           key and value land at pos (its slot is zero until then) */
        kc = nn_accumulate(g, nn_mul(g, nn_reshape(g, nn_slice(g, qkv, 1, e, e), nn_shape4(b, h, 1, d)), slot));
        vc = nn_accumulate(g, nn_mul(g, nn_reshape(g, nn_slice(g, qkv, 1, 2 * e, e), nn_shape4(b, h, 1, d)), slot));
        if (caches) {
            caches[2 * i] = kc;
            caches[2 * i + 1] = vc;
        }
        y = nn_reshape(g, nn__tf_attention(g, q, kc, vc, mask, 0), nn_shape2(b, e));
        snprintf(nb, sizeof nb, "%s.attn.c_proj", nl);
        x = nn_add(g, x, nn__tf_linear(g, y, e, pstd, !cfg->no_bias, nb));
        snprintf(nb, sizeof nb, "%s.ln_2", nl);
        x = nn_add(g, x, nn__gpt_mlp(g, nn__tf_layer_norm(g, x, !cfg->no_bias, nb), cfg, nl));
    }
    snprintf(nb, sizeof nb, "%s.ln_f", pre);
    x = nn__tf_layer_norm(g, x, !cfg->no_bias, nb);
    return nn_matmul(g, x, wte, 0, 1);
}
