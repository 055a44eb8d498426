/* Transformer layers composed of the public builders: nanoGPT's GPT (blocks, the model,
   and one-token decoding against a key/value cache kept on the device). Parameter names
   and layouts are nanoGPT's (Linear weights [out, in]), so state dicts load both ways.
   The embedding (nn_embedding_lookup) and the attention (nn_attention, fused: causal, the
   masks and dropout in its desc) are each one small function here (nn__tf_embedding,
   nn__tf_attention). */
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
    if (bias) { /* F.linear under autocast, as nn_linear_layer: the bias converted, the sum in the policy's type */
        nn_tensor b = nn_param(g, bn, nn_shape1(out), bi);
        if (y.id >= 0 && nn__dtype_half(nn__n(g, y)->dtype) && nn__policy_dtype(g) == nn__n(g, y)->dtype)
            b = nn_to_dtype(g, b, nn__n(g, y)->dtype);
        y = nn_add(g, y, b);
    }
    return y;
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

/* The token embedding: rows of weight [V, C] at idx (int32, any shape) -> [numel(idx), C]
   (nn_embedding_lookup: its backward is the segment sum, linear in the index count; the
   weight may also be the tied output head, whose gradient adds). */
static nn_tensor nn__tf_embedding(nn_graph *g, nn_tensor weight, nn_tensor idx) {
    int64_t n = nn__n(g, idx)->numel;
    return nn_embedding_lookup(g, weight, nn__n(g, idx)->shape.ndim == 1 ? idx : nn_reshape(g, idx, nn_shape1(n)), NULL);
}

/* Scaled dot-product attention, fused (nn_attention: no [Tq, Tk] matrix stored). q, k, v
   in layout (NN_ATTN_BHTD [B, H, T, D] or NN_ATTN_BTHD [B, T, H, D]); causal: keys after
   each query hidden (top-left aligned); mask: float32 added to the scores (-inf hides),
   broadcast to [B, H, Tq, Tk] (its gradient flows), or NN_NONE; kpm: [B, Tk] (float32 or
   int32), nonzero keys hidden, or NN_NONE. */
static nn_tensor nn__tf_attention(nn_graph *g, nn_tensor q, nn_tensor k, nn_tensor v, int layout, int causal, nn_tensor mask,
                                  nn_tensor kpm, float dropout, int mask_hides) {
    nn_attention_desc ad;
    memset(&ad, 0, sizeof ad);
    ad.layout = layout;
    ad.causal = causal;
    ad.mask = mask;
    ad.key_padding_mask = kpm;
    ad.dropout = dropout;
    return nn__attention(g, q, k, v, &ad, mask_hides);
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

/* One block on x [B, T, C], causal. q, k and v are column blocks of c_attn's rows viewed as
   [B, T, H, D] (NN_ATTN_BTHD), and the attention's [B, T, H, D] output is c_proj's rows. */
static nn_tensor nn__gpt_block(nn_graph *g, nn_tensor x, const nn_gpt_config *c, const char *name, nn_tensor *kv) {
    char nb[256];
    const nn_shape *s = &nn__n(g, x)->shape;
    int64_t b = s->dim[0], t = s->dim[1], e = c->n_embd, h = c->n_head, d = e / h;
    float pstd = (float)(0.02 / sqrt(2.0 * c->n_layer));
    int first = g->n_nodes;
    nn_tensor r = nn_reshape(g, x, nn_shape2(b * t, e)), a, qkv, q, k, v, y;
    snprintf(nb, sizeof nb, "%s.ln_1", name);
    a = nn__tf_layer_norm(g, r, !c->no_bias, nb);
    snprintf(nb, sizeof nb, "%s.attn.c_attn", name);
    qkv = nn__tf_linear(g, a, 3 * e, 0.02f, !c->no_bias, nb); /* [B*T, 3C]: q | k | v, each [H, D] */
    q = nn_reshape(g, nn_slice(g, qkv, 1, 0, e), nn_shape4(b, t, h, d));
    k = nn_reshape(g, nn_slice(g, qkv, 1, e, e), nn_shape4(b, t, h, d));
    v = nn_reshape(g, nn_slice(g, qkv, 1, 2 * e, e), nn_shape4(b, t, h, d));
    if (kv) kv[0] = k, kv[1] = v;
    y = nn__tf_attention(g, q, k, v, NN_ATTN_BTHD, 1, NN_NONE, NN_NONE, c->dropout, 0);
    y = nn_reshape(g, y, nn_shape2(b * t, e));
    snprintf(nb, sizeof nb, "%s.attn.c_proj", name);
    y = nn__tf_linear(g, y, e, pstd, !c->no_bias, nb);
    if (c->dropout > 0) y = nn_dropout(g, y, c->dropout);
    r = nn_add(g, r, y);
    snprintf(nb, sizeof nb, "%s.ln_2", name);
    r = nn_add(g, r, nn__gpt_mlp(g, nn__tf_layer_norm(g, r, !c->no_bias, nb), c, name));
    r = nn_reshape(g, r, nn_shape3(b, t, e));
    if (!kv) {
        char qn[1300], pf[32];
        nn__note_layer(g, r, first, &x, 1, NULL, "{\"type\": \"gpt_block\", \"name\": %s, \"n_embd\": %lld, \"n_head\": %d, "
                       "\"block_size\": %lld, \"n_layer\": %d, \"dropout\": %s, \"bias\": %s}", nn__note_str(name, qn, sizeof qn),
                       (long long)e, c->n_head, (long long)c->block_size, c->n_layer, nn__note_f(c->dropout, pf, sizeof pf),
                       c->no_bias ? "false" : "true");
    }
    return r;
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
    return nn__gpt_block(g, x, cfg, name, NULL);
}

/* Token and position embeddings, the blocks, ln_f and the head tied to wte: [B*T, V].
   caches (nn_gpt_prefill): NULL, or receives each layer's key and value as
   [B, H, block_size, D], the T positions' rows then zeros, made outputs of g. */
static nn_tensor nn__gpt(nn_graph *g, nn_tensor idx, const nn_gpt_config *cfg, nn_tensor *caches, const char *fn) {
    char nb[320], pre[200];
    const nn_shape *s;
    nn_tensor wte, x;
    nn_init wi;
    int64_t b, t, e;
    int i, first = g ? g->n_nodes : 0;
    if (!nn__check(g, fn, 1, &idx) || !nn__tf_cfg(g, fn, cfg)) return nn__tensor(-1);
    s = &nn__n(g, idx)->shape;
    if (nn__n(g, idx)->dtype != NN_I32 || s->ndim != 2 || s->dim[1] > cfg->block_size) {
        char sb[128];
        nn__shape_str(s, sb, sizeof sb);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s: idx %s %s must be int32 [B, T] with T <= block_size %lld", fn, sb,
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
    for (i = 0; i < cfg->n_layer; i++) {
        nn_tensor kv[2];
        snprintf(nb, sizeof nb, "%s.h.%d", pre, i);
        x = nn__gpt_block(g, x, cfg, nb, caches ? kv : NULL);
        if (caches) { /* [B, T, H, D] -> [B, H, T, D], zeros after T to [B, H, block_size, D] */
            static const int perm[4] = {0, 2, 1, 3};
            int j;
            for (j = 0; j < 2; j++) {
                nn_tensor c = nn_permute(g, kv[j], perm, 4);
                if (t < cfg->block_size) c = nn_pad2d(g, c, 0, 0, 0, (int)(cfg->block_size - t), NN_PAD_ZEROS);
                nn_graph_output(g, c);
                caches[2 * i + j] = c;
            }
        }
    }
    snprintf(nb, sizeof nb, "%s.ln_f", pre);
    x = nn__tf_layer_norm(g, nn_reshape(g, x, nn_shape2(b * t, e)), !cfg->no_bias, nb);
    x = nn_matmul(g, x, wte, 0, 1); /* lm_head: wte's weight (tied) */
    if (!caches) {
        char qn[1300], pf[32];
        snprintf(qn, sizeof qn, ", \"name\": ");
        if (cfg->name && cfg->name[0]) nn__note_str(cfg->name, qn + strlen(qn), sizeof qn - strlen(qn));
        else qn[0] = 0;
        nn__note_layer(g, x, first, &idx, 1, NULL, "{\"type\": \"gpt\"%s, \"vocab_size\": %lld, \"block_size\": %lld, \"n_layer\": %d, "
                       "\"n_head\": %d, \"n_embd\": %lld, \"dropout\": %s, \"bias\": %s}", qn, (long long)cfg->vocab_size,
                       (long long)cfg->block_size, cfg->n_layer, cfg->n_head, (long long)e, nn__note_f(cfg->dropout, pf, sizeof pf),
                       cfg->no_bias ? "false" : "true");
    }
    return x;
}

NN_API nn_tensor nn_gpt(nn_graph *g, nn_tensor idx, const nn_gpt_config *cfg) { return nn__gpt(g, idx, cfg, NULL, "nn_gpt"); }

/* nn_gpt's graph whose blocks also hand out their keys and values in the cache's layout. */
NN_API nn_tensor nn_gpt_prefill(nn_graph *g, nn_tensor idx, const nn_gpt_config *cfg, nn_tensor *caches) {
    if (g && !caches) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_gpt_prefill: needs caches (2 * n_layer tensors)");
    return nn__gpt(g, idx, cfg, caches, "nn_gpt_prefill");
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
    /* the cache slot of pos ([Tmax] one-hot) and the keys after it, hidden by an additive
       mask: -inf after pos, 0 up to it (a float mask, since pos is a tensor, not causal) */
    onehot = nn_one_hot(g, pos, tmax);
    slot = nn_reshape(g, onehot, nn_shape4(1, 1, tmax, 1));
    mask = nn_sub(g, nn_cumsum(g, onehot, 1), onehot);
    mask = nn_reshape(g, nn_masked_fill(g, mask, mask, -INFINITY), nn_shape4(1, 1, 1, tmax));
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
        y = nn_reshape(g, nn__tf_attention(g, q, kc, vc, NN_ATTN_BHTD, 0, mask, NN_NONE, 0, 0), nn_shape2(b, e));
        snprintf(nb, sizeof nb, "%s.attn.c_proj", nl);
        x = nn_add(g, x, nn__tf_linear(g, y, e, pstd, !cfg->no_bias, nb));
        snprintf(nb, sizeof nb, "%s.ln_2", nl);
        x = nn_add(g, x, nn__gpt_mlp(g, nn__tf_layer_norm(g, x, !cfg->no_bias, nb), cfg, nl));
    }
    snprintf(nb, sizeof nb, "%s.ln_f", pre);
    x = nn__tf_layer_norm(g, x, !cfg->no_bias, nb);
    return nn_matmul(g, x, wte, 0, 1);
}

/* ---- nn.MultiheadAttention, nn.TransformerEncoderLayer / DecoderLayer and their stacks ---- */

/* x [B, T, E] (batch_first) or [T, B, E] -> [B, T, E] */
static nn_tensor nn__tf_bfirst(nn_graph *g, nn_tensor x, int batch_first) {
    int p[3] = {1, 0, 2};
    return batch_first ? x : nn_permute(g, x, p, 3);
}

/* nn.MultiheadAttention's kdim and vdim (0: embed_dim) */
static int64_t nn__tf_kdim(const nn_mha_desc *d, int64_t e) { return d && d->kdim > 0 ? d->kdim : e; }
static int64_t nn__tf_vdim(const nn_mha_desc *d, int64_t e) { return d && d->vdim > 0 ? d->vdim : e; }

static int nn__tf_mha_checks(nn_graph *g, const char *op, const char *name, nn_tensor q, nn_tensor k, nn_tensor v, int64_t e, int h,
                             const nn_mha_desc *d) {
    int64_t kd = nn__tf_kdim(d, e), vd = nn__tf_vdim(d, e);
    nn_tensor in[3];
    const nn_shape *sq, *sk, *sv;
    in[0] = q;
    in[1] = k;
    in[2] = v;
    if (!nn__check(g, op, 3, in) || !nn__expect_f32(g, op, q, "query") || !nn__expect_f32(g, op, k, "key") ||
        !nn__expect_f32(g, op, v, "value"))
        return 0;
    if (!name || !name[0] || strlen(name) > 200) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a name (at most 200 chars)", op);
        return 0;
    }
    sq = &nn__n(g, q)->shape;
    sk = &nn__n(g, k)->shape;
    sv = &nn__n(g, v)->shape;
    if (h < 1 || e < 1 || e % h) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: embed_dim %lld is not divisible by num_heads %d", op, name, (long long)e, h);
        return 0;
    }
    if (d && (d->kdim < 0 || d->vdim < 0)) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: kdim %lld or vdim %lld is negative", op, name, (long long)d->kdim,
                    (long long)d->vdim);
        return 0;
    }
    if (sq->ndim != 3 || sk->ndim != 3 || sv->ndim != 3 || sk->dim[0] != sv->dim[0] || sk->dim[1] != sv->dim[1] || sq->dim[2] != e ||
        sk->dim[2] != kd || sv->dim[2] != vd) {
        char a[128], b[128], c[128];
        nn__shape_str(sq, a, sizeof a);
        nn__shape_str(sk, b, sizeof b);
        nn__shape_str(sv, c, sizeof c);
        nn__op_fail(g, NN_ERR_SHAPE,
                    "%s %s: query %s, key %s, value %s must be 3-D with embed_dim %lld, kdim %lld and vdim %lld last, key and value "
                    "alike in the others",
                    op, name, a, b, c, (long long)e, (long long)kd, (long long)vd);
        return 0;
    }
    return 1;
}

/* The attention of nn.MultiheadAttention on batch-first q [B, T, E], k, v [B, S, E]. */
static nn_tensor nn__tf_mha(nn_graph *g, nn_tensor q, nn_tensor k, nn_tensor v, int64_t e, int h, const nn_mha_desc *desc,
                            float dropout, const char *name) {
    char wn[300], bn[300], on[240];
    int64_t b = nn__n(g, q)->shape.dim[0], t = nn__n(g, q)->shape.dim[1], s = nn__n(g, k)->shape.dim[1], d = e / h;
    int64_t kd = nn__tf_kdim(desc, e), vd = nn__tf_vdim(desc, e);
    int bias = !(desc && desc->no_bias);
    nn_init xu, zero;
    nn_tensor w = NN_NONE, wb = NN_NONE, qr, kr, vr, y;
    memset(&xu, 0, sizeof xu);
    memset(&zero, 0, sizeof zero);
    xu.kind = NN_INIT_XAVIER_UNIFORM;
    snprintf(wn, sizeof wn, "%s.in_proj_weight", name);
    snprintf(bn, sizeof bn, "%s.in_proj_bias", name);
    snprintf(on, sizeof on, "%s.out_proj", name);
    if (kd == e && vd == e) w = nn_param(g, wn, nn_shape2(3 * e, e), xu);
    if (bias) wb = nn_param(g, bn, nn_shape1(3 * e), zero);
    qr = nn_reshape(g, q, nn_shape2(b * t, e));
    if (kd != e || vd != e) { /* PyTorch's separate projections (_qkv_same_embed_dim False) */
        char pn[300];
        nn_tensor kin = nn_reshape(g, k, nn_shape2(b * s, kd)), vin = nn_reshape(g, v, nn_shape2(b * s, vd));
        snprintf(pn, sizeof pn, "%s.q_proj_weight", name);
        qr = nn_matmul(g, qr, nn_param(g, pn, nn_shape2(e, e), xu), 0, 1);
        snprintf(pn, sizeof pn, "%s.k_proj_weight", name);
        kr = nn_matmul(g, kin, nn_param(g, pn, nn_shape2(e, kd), xu), 0, 1);
        snprintf(pn, sizeof pn, "%s.v_proj_weight", name);
        vr = nn_matmul(g, vin, nn_param(g, pn, nn_shape2(e, vd), xu), 0, 1);
        if (bias) {
            qr = nn_add(g, qr, nn_slice(g, wb, 0, 0, e));
            kr = nn_add(g, kr, nn_slice(g, wb, 0, e, e));
            vr = nn_add(g, vr, nn_slice(g, wb, 0, 2 * e, e));
        }
    } else if (q.id == k.id && k.id == v.id) { /* self-attention: one product */
        nn_tensor p = nn_matmul(g, qr, w, 0, 1);
        if (bias) p = nn_add(g, p, wb);
        kr = nn_slice(g, p, 1, e, e);
        vr = nn_slice(g, p, 1, 2 * e, e);
        qr = nn_slice(g, p, 1, 0, e);
    } else {
        nn_tensor kin = nn_reshape(g, k, nn_shape2(b * s, e)), vin = nn_reshape(g, v, nn_shape2(b * s, e));
        qr = nn_matmul(g, qr, nn_slice(g, w, 0, 0, e), 0, 1);
        kr = nn_matmul(g, kin, nn_slice(g, w, 0, e, e), 0, 1);
        vr = nn_matmul(g, vin, nn_slice(g, w, 0, 2 * e, e), 0, 1);
        if (bias) {
            qr = nn_add(g, qr, nn_slice(g, wb, 0, 0, e));
            kr = nn_add(g, kr, nn_slice(g, wb, 0, e, e));
            vr = nn_add(g, vr, nn_slice(g, wb, 0, 2 * e, e));
        }
    }
    /* nn_attention on the projections' rows viewed as [B, T, H, D]: is_causal its causal
       flag (top-left aligned, as PyTorch's); the float attn_mask ([T, S], or [B*H, T, S]
       viewed as [B, H, T, S]) its additive mask, which gets its gradient there; a float
       key_padding_mask is added too ([B, 1, 1, S], PyTorch's attn_mask + key_padding_mask:
       one [B, H or 1, T, S] sum only when both are given), an int32 one hides its nonzero
       keys (nn_attention's key_padding_mask); an int32 attn_mask (PyTorch's bool) hides
       its nonzero entries (nn__attention's mask_hides). */
    {
        nn_tensor am = NN_NONE, kpm = desc ? desc->key_padding_mask : NN_NONE;
        if (desc && desc->attn_mask.id)
            am = nn__n(g, desc->attn_mask)->shape.ndim == 3 ? nn_reshape(g, desc->attn_mask, nn_shape4(b, h, t, s)) : desc->attn_mask;
        if (kpm.id && nn__n(g, kpm)->dtype == NN_F32) {
            nn_tensor ka = nn_reshape(g, kpm, nn_shape4(b, 1, 1, s));
            am = am.id ? nn_add(g, am, ka) : ka;
            kpm = NN_NONE;
        }
        y = nn__tf_attention(g, nn_reshape(g, qr, nn_shape4(b, t, h, d)), nn_reshape(g, kr, nn_shape4(b, s, h, d)),
                             nn_reshape(g, vr, nn_shape4(b, s, h, d)), NN_ATTN_BTHD, desc && desc->is_causal, am, kpm, dropout, 1);
        y = nn_reshape(g, y, nn_shape2(b * t, e));
    }
    {
        nn_init li;
        memset(&li, 0, sizeof li);
        li.kind = NN_INIT_UNIFORM; /* nn.Linear's weight init; the bias zeros (MultiheadAttention's) */
        li.a = (float)(-1.0 / sqrt((double)e));
        li.b = -li.a;
        snprintf(wn, sizeof wn, "%s.weight", on);
        snprintf(bn, sizeof bn, "%s.bias", on);
        y = nn_matmul(g, y, nn_param(g, wn, nn_shape2(e, e), li), 0, 1);
        if (bias) y = nn_add(g, y, nn_param(g, bn, nn_shape1(e), zero));
    }
    return nn_reshape(g, y, nn_shape3(b, t, e));
}

static int nn__tf_masks(nn_graph *g, const char *op, const char *name, int64_t b, int64_t t, int64_t s, int h, const nn_mha_desc *d) {
    char m[128];
    if (!d) return 1;
    if (d->key_padding_mask.id) {
        const nn_shape *k;
        if (!nn__check(g, op, 1, &d->key_padding_mask)) return 0;
        k = &nn__n(g, d->key_padding_mask)->shape;
        if (k->ndim != 2 || k->dim[0] != b || k->dim[1] != s ||
            (nn__n(g, d->key_padding_mask)->dtype != NN_F32 && nn__n(g, d->key_padding_mask)->dtype != NN_I32)) {
            nn__shape_str(k, m, sizeof m);
            nn__op_fail(g, NN_ERR_SHAPE, "%s %s: key_padding_mask %s must be float32 or int32 [B %lld, S %lld]", op, name, m, (long long)b,
                        (long long)s);
            return 0;
        }
    }
    if (d->attn_mask.id) {
        const nn_shape *a;
        if (!nn__check(g, op, 1, &d->attn_mask)) return 0;
        a = &nn__n(g, d->attn_mask)->shape;
        if ((nn__n(g, d->attn_mask)->dtype != NN_F32 && nn__n(g, d->attn_mask)->dtype != NN_I32) ||
            !((a->ndim == 2 && a->dim[0] == t && a->dim[1] == s) ||
              (a->ndim == 3 && a->dim[0] == b * h && a->dim[1] == t && a->dim[2] == s))) {
            nn__shape_str(a, m, sizeof m);
            nn__op_fail(g, NN_ERR_SHAPE, "%s %s: attn_mask %s must be float32 or int32 [T %lld, S %lld] or [B*num_heads %lld, T, S]",
                        op, name, m, (long long)t, (long long)s, (long long)(b * h));
            return 0;
        }
        if (nn__n(g, d->attn_mask)->dtype == NN_I32 && d->key_padding_mask.id && nn__n(g, d->key_padding_mask)->dtype == NN_F32) {
            nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                        "%s %s: an int32 (bool) attn_mask with a float32 key_padding_mask: give both as int32 (nonzero hides) or "
                        "both as float32 (added)",
                        op, name);
            return 0;
        }
    }
    return 1;
}

NN_API nn_tensor nn_multihead_attention(nn_graph *g, nn_tensor query, nn_tensor key, nn_tensor value, int64_t embed_dim, int num_heads,
                                        const nn_mha_desc *desc, const char *name) {
    const char *op = "nn_multihead_attention";
    int bf = desc && desc->batch_first;
    float dropout = desc ? desc->dropout : 0;
    int first = g ? g->n_nodes : 0;
    nn_tensor q, k, v, y;
    if (!nn__tf_mha_checks(g, op, name, query, key, value, embed_dim, num_heads, desc)) return nn__tensor(-1);
    if (!(dropout >= 0 && dropout < 1)) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: dropout %g is not in [0, 1)", op, name, (double)dropout);
    {
        const nn_shape *sq = &nn__n(g, query)->shape, *sk = &nn__n(g, key)->shape;
        int64_t b = sq->dim[bf ? 0 : 1], t = sq->dim[bf ? 1 : 0], s = sk->dim[bf ? 1 : 0];
        if (sk->dim[bf ? 0 : 1] != b) {
            char a[128], c[128];
            nn__shape_str(sq, a, sizeof a);
            nn__shape_str(sk, c, sizeof c);
            return nn__op_fail(g, NN_ERR_SHAPE, "%s %s: query %s and key %s differ in the batch", op, name, a, c);
        }
        if (!nn__tf_masks(g, op, name, b, t, s, num_heads, desc)) return nn__tensor(-1);
    }
    q = nn__tf_bfirst(g, query, bf);
    k = key.id == query.id ? q : nn__tf_bfirst(g, key, bf);
    v = value.id == key.id ? k : nn__tf_bfirst(g, value, bf);
    y = nn__tf_mha(g, q, k, v, embed_dim, num_heads, desc, dropout, name);
    y = nn__tf_bfirst(g, y, bf);
    { /* one input when query, key and value are one tensor; else the three */
        nn_tensor ins[3];
        char qn[1300], pf[32];
        int self = key.id == query.id && value.id == query.id;
        ins[0] = query, ins[1] = key, ins[2] = value;
        nn__note_layer(g, y, first, ins, self ? 1 : 3,
                       desc && (desc->key_padding_mask.id || desc->attn_mask.id) ? "a multihead attention given mask tensors" : NULL,
                       "{\"type\": \"multihead_attention\", \"name\": %s, \"embed_dim\": %lld, \"num_heads\": %d, \"dropout\": %s, "
                       "\"bias\": %s, \"batch_first\": %s, \"is_causal\": %s, \"kdim\": %lld, \"vdim\": %lld}", nn__note_str(name, qn, sizeof qn),
                       (long long)embed_dim, num_heads, nn__note_f(dropout, pf, sizeof pf), desc && desc->no_bias ? "false" : "true",
                       bf ? "true" : "false", desc && desc->is_causal ? "true" : "false", (long long)nn__tf_kdim(desc, embed_dim),
                       (long long)nn__tf_vdim(desc, embed_dim));
    }
    return y;
}

/* Options read with PyTorch's defaults: dim_feedforward 2048, dropout 0.1, eps 1e-5. */
static int64_t nn__tf_dff(const nn_transformer_desc *d) { return d && d->dim_feedforward > 0 ? d->dim_feedforward : 2048; }
static float nn__tf_drop(const nn_transformer_desc *d) { return d ? nn__deff(d->dropout, 0.1f) : 0.1f; }
static float nn__tf_eps(const nn_transformer_desc *d) { return d ? nn__deff(d->layer_norm_eps, 1e-5f) : 1e-5f; }

static int nn__tf_desc(nn_graph *g, const char *op, const char *name, const nn_transformer_desc *d) {
    float p = nn__tf_drop(d);
    if (!(p >= 0 && p < 1) || (d && (d->activation < 0 || d->activation > 1 || d->dim_feedforward < 0)) || !(nn__tf_eps(d) >= 0)) {
        nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: dropout %g (needs [0, 1)), activation %d (0 relu, 1 gelu), dim_feedforward %lld",
                    op, name ? name : "", (double)p, d ? d->activation : 0, d ? (long long)d->dim_feedforward : 0LL);
        return 0;
    }
    return 1;
}

static nn_tensor nn__tf_norm(nn_graph *g, nn_tensor x, float eps, const char *name) {
    char wn[256], bn[256];
    nn_init one, zero;
    nn_norm_desc nd;
    int64_t c = nn__n(g, x)->shape.dim[nn__n(g, x)->shape.ndim - 1];
    memset(&one, 0, sizeof one);
    memset(&zero, 0, sizeof zero);
    memset(&nd, 0, sizeof nd);
    one.kind = NN_INIT_CONSTANT;
    one.a = 1.0f;
    nd.eps = eps == 0 ? NN_ZERO : eps;
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    return nn_layer_norm(g, x, 1, nn_param(g, wn, nn_shape1(c), one), nn_param(g, bn, nn_shape1(c), zero), &nd);
}

static nn_tensor nn__tf_drop_if(nn_graph *g, nn_tensor x, float p) { return p > 0 ? nn_dropout(g, x, p) : x; }

/* linear2(dropout(activation(linear1(x)))) on batch-first x [B, T, E] */
static nn_tensor nn__tf_ff(nn_graph *g, nn_tensor x, const nn_transformer_desc *d, const char *name) {
    char n1[256], n2[256];
    nn_shape s = nn__n(g, x)->shape; /* a copy: new nodes may move the node array */
    int64_t rows = s.dim[0] * s.dim[1], e = s.dim[2];
    nn_tensor h;
    snprintf(n1, sizeof n1, "%s.linear1", name);
    snprintf(n2, sizeof n2, "%s.linear2", name);
    h = nn_linear_layer(g, nn_reshape(g, x, nn_shape2(rows, e)), nn__tf_dff(d), NULL, n1);
    h = d && d->activation == 1 ? nn_gelu(g, h) : nn_relu(g, h);
    h = nn_linear_layer(g, nn__tf_drop_if(g, h, nn__tf_drop(d)), e, NULL, n2);
    return nn_reshape(g, h, s);
}

/* One attention sub-block's options from the layer's: dropout, batch-first (already), masks. */
static nn_mha_desc nn__tf_sub(nn_tensor attn_mask, nn_tensor kpm, int causal) {
    nn_mha_desc m;
    memset(&m, 0, sizeof m);
    m.batch_first = 1;
    m.attn_mask = attn_mask;
    m.key_padding_mask = kpm;
    m.is_causal = causal;
    return m;
}

static nn_tensor nn__tf_encoder_layer(nn_graph *g, nn_tensor x, int64_t e, int h, const nn_transformer_desc *d, const char *name) {
    char na[256], n1[256], n2[256];
    float p = nn__tf_drop(d), eps = nn__tf_eps(d);
    nn_mha_desc m = nn__tf_sub(d ? d->src_mask : NN_NONE, d ? d->src_key_padding_mask : NN_NONE, d ? d->is_causal : 0);
    nn_tensor a;
    snprintf(na, sizeof na, "%s.self_attn", name);
    snprintf(n1, sizeof n1, "%s.norm1", name);
    snprintf(n2, sizeof n2, "%s.norm2", name);
    if (d && d->norm_first) {
        a = nn__tf_norm(g, x, eps, n1);
        x = nn_add(g, x, nn__tf_drop_if(g, nn__tf_mha(g, a, a, a, e, h, &m, p, na), p));
        x = nn_add(g, x, nn__tf_drop_if(g, nn__tf_ff(g, nn__tf_norm(g, x, eps, n2), d, name), p));
    } else {
        x = nn__tf_norm(g, nn_add(g, x, nn__tf_drop_if(g, nn__tf_mha(g, x, x, x, e, h, &m, p, na), p)), eps, n1);
        x = nn__tf_norm(g, nn_add(g, x, nn__tf_drop_if(g, nn__tf_ff(g, x, d, name), p)), eps, n2);
    }
    return x;
}

static nn_tensor nn__tf_decoder_layer(nn_graph *g, nn_tensor x, nn_tensor mem, int64_t e, int h, const nn_transformer_desc *d,
                                      const char *name) {
    char na[256], nc[256], n1[256], n2[256], n3[256];
    float p = nn__tf_drop(d), eps = nn__tf_eps(d);
    nn_mha_desc ms = nn__tf_sub(d ? d->tgt_mask : NN_NONE, d ? d->tgt_key_padding_mask : NN_NONE, d ? d->tgt_is_causal : 0);
    nn_mha_desc mc = nn__tf_sub(d ? d->memory_mask : NN_NONE, d ? d->memory_key_padding_mask : NN_NONE, 0);
    nn_tensor a;
    snprintf(na, sizeof na, "%s.self_attn", name);
    snprintf(nc, sizeof nc, "%s.multihead_attn", name);
    snprintf(n1, sizeof n1, "%s.norm1", name);
    snprintf(n2, sizeof n2, "%s.norm2", name);
    snprintf(n3, sizeof n3, "%s.norm3", name);
    if (d && d->norm_first) {
        a = nn__tf_norm(g, x, eps, n1);
        x = nn_add(g, x, nn__tf_drop_if(g, nn__tf_mha(g, a, a, a, e, h, &ms, p, na), p));
        x = nn_add(g, x, nn__tf_drop_if(g, nn__tf_mha(g, nn__tf_norm(g, x, eps, n2), mem, mem, e, h, &mc, p, nc), p));
        x = nn_add(g, x, nn__tf_drop_if(g, nn__tf_ff(g, nn__tf_norm(g, x, eps, n3), d, name), p));
    } else {
        x = nn__tf_norm(g, nn_add(g, x, nn__tf_drop_if(g, nn__tf_mha(g, x, x, x, e, h, &ms, p, na), p)), eps, n1);
        x = nn__tf_norm(g, nn_add(g, x, nn__tf_drop_if(g, nn__tf_mha(g, x, mem, mem, e, h, &mc, p, nc), p)), eps, n2);
        x = nn__tf_norm(g, nn_add(g, x, nn__tf_drop_if(g, nn__tf_ff(g, x, d, name), p)), eps, n3);
    }
    return x;
}

/* Shared checks of the four layer builders; *b, *t of x (any layout) out. */
static int nn__tf_layer_checks(nn_graph *g, const char *op, const char *name, nn_tensor x, nn_tensor mem, int64_t e, int h,
                               const nn_transformer_desc *d) {
    int bf = d && d->batch_first;
    const nn_shape *s;
    int64_t b, t, sm;
    if (!nn__tf_mha_checks(g, op, name, x, mem.id ? mem : x, mem.id ? mem : x, e, h, NULL) || !nn__tf_desc(g, op, name, d)) return 0;
    s = &nn__n(g, x)->shape;
    b = s->dim[bf ? 0 : 1];
    t = s->dim[bf ? 1 : 0];
    sm = t;
    if (mem.id) {
        const nn_shape *m = &nn__n(g, mem)->shape;
        sm = m->dim[bf ? 1 : 0];
        if (m->dim[bf ? 0 : 1] != b) {
            char a[128], c[128];
            nn__shape_str(s, a, sizeof a);
            nn__shape_str(m, c, sizeof c);
            nn__op_fail(g, NN_ERR_SHAPE, "%s %s: tgt %s and memory %s differ in the batch", op, name, a, c);
            return 0;
        }
        {
            nn_mha_desc ms = nn__tf_sub(d ? d->tgt_mask : NN_NONE, d ? d->tgt_key_padding_mask : NN_NONE, 0);
            nn_mha_desc mc = nn__tf_sub(d ? d->memory_mask : NN_NONE, d ? d->memory_key_padding_mask : NN_NONE, 0);
            return nn__tf_masks(g, op, name, b, t, t, h, &ms) && nn__tf_masks(g, op, name, b, t, sm, h, &mc);
        }
    } else {
        nn_mha_desc ms = nn__tf_sub(d ? d->src_mask : NN_NONE, d ? d->src_key_padding_mask : NN_NONE, 0);
        return nn__tf_masks(g, op, name, b, t, t, h, &ms);
    }
}

/* Notes a transformer layer or stack (num_layers 0: a layer) made from first to y. */
static nn_tensor nn__tf_note(nn_graph *g, nn_tensor y, int first, nn_tensor x, nn_tensor mem, int64_t e, int h,
                             const nn_transformer_desc *d, const char *name, int num_layers) {
    char qn[1300], pf[32], pe[32], nl[32];
    const char *why = NULL;
    nn_tensor ins[2];
    ins[0] = x, ins[1] = mem;
    if (d && (d->src_mask.id || d->src_key_padding_mask.id || d->tgt_mask.id || d->tgt_key_padding_mask.id || d->memory_mask.id ||
              d->memory_key_padding_mask.id))
        why = "a transformer layer given mask tensors";
    nl[0] = 0;
    if (num_layers) snprintf(nl, sizeof nl, ", \"num_layers\": %d", num_layers);
    nn__note_layer(g, y, first, ins, mem.id ? 2 : 1, why,
                   "{\"type\": \"transformer_%s%s\", \"name\": %s%s, \"d_model\": %lld, \"nhead\": %d, \"dim_feedforward\": %lld, "
                   "\"dropout\": %s, \"activation\": \"%s\", \"layer_norm_eps\": %s, \"batch_first\": %s, \"norm_first\": %s, "
                   "\"%s\": %s}", mem.id ? "decoder" : "encoder", num_layers ? "" : "_layer", nn__note_str(name, qn, sizeof qn), nl,
                   (long long)e, h, (long long)nn__tf_dff(d), nn__note_f(nn__tf_drop(d), pf, sizeof pf),
                   d && d->activation == 1 ? "gelu" : "relu", nn__note_f(nn__tf_eps(d), pe, sizeof pe),
                   d && d->batch_first ? "true" : "false", d && d->norm_first ? "true" : "false", mem.id ? "tgt_is_causal" : "is_causal",
                   (mem.id ? d && d->tgt_is_causal : d && d->is_causal) ? "true" : "false");
    return y;
}

NN_API nn_tensor nn_transformer_encoder_layer(nn_graph *g, nn_tensor src, int64_t d_model, int nhead, const nn_transformer_desc *desc,
                                              const char *name) {
    int bf = desc && desc->batch_first;
    int first = g ? g->n_nodes : 0;
    if (!nn__tf_layer_checks(g, "nn_transformer_encoder_layer", name, src, NN_NONE, d_model, nhead, desc)) return nn__tensor(-1);
    return nn__tf_note(g, nn__tf_bfirst(g, nn__tf_encoder_layer(g, nn__tf_bfirst(g, src, bf), d_model, nhead, desc, name), bf), first, src,
                       NN_NONE, d_model, nhead, desc, name, 0);
}

NN_API nn_tensor nn_transformer_decoder_layer(nn_graph *g, nn_tensor tgt, nn_tensor memory, int64_t d_model, int nhead,
                                              const nn_transformer_desc *desc, const char *name) {
    int bf = desc && desc->batch_first, first = g ? g->n_nodes : 0;
    if (!nn__check(g, "nn_transformer_decoder_layer", 1, &memory) ||
        !nn__tf_layer_checks(g, "nn_transformer_decoder_layer", name, tgt, memory, d_model, nhead, desc))
        return nn__tensor(-1);
    return nn__tf_note(g, nn__tf_bfirst(g, nn__tf_decoder_layer(g, nn__tf_bfirst(g, tgt, bf), nn__tf_bfirst(g, memory, bf), d_model, nhead,
                                                               desc, name), bf),
                       first, tgt, memory, d_model, nhead, desc, name, 0);
}

NN_API nn_tensor nn_transformer_encoder(nn_graph *g, nn_tensor src, int num_layers, int64_t d_model, int nhead,
                                        const nn_transformer_desc *desc, const char *name) {
    char nl[256];
    int bf = desc && desc->batch_first, i, first = g ? g->n_nodes : 0;
    nn_tensor x;
    if (!nn__tf_layer_checks(g, "nn_transformer_encoder", name, src, NN_NONE, d_model, nhead, desc)) return nn__tensor(-1);
    if (num_layers < 1) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_transformer_encoder %s: num_layers %d is not >= 1", name, num_layers);
    x = nn__tf_bfirst(g, src, bf);
    for (i = 0; i < num_layers; i++) {
        snprintf(nl, sizeof nl, "%s.layers.%d", name, i);
        x = nn__tf_encoder_layer(g, x, d_model, nhead, desc, nl);
    }
    return nn__tf_note(g, nn__tf_bfirst(g, x, bf), first, src, NN_NONE, d_model, nhead, desc, name, num_layers);
}

NN_API nn_tensor nn_transformer_decoder(nn_graph *g, nn_tensor tgt, nn_tensor memory, int num_layers, int64_t d_model, int nhead,
                                        const nn_transformer_desc *desc, const char *name) {
    char nl[256];
    int bf = desc && desc->batch_first, i, first = g ? g->n_nodes : 0;
    nn_tensor x, m;
    if (!nn__check(g, "nn_transformer_decoder", 1, &memory) ||
        !nn__tf_layer_checks(g, "nn_transformer_decoder", name, tgt, memory, d_model, nhead, desc))
        return nn__tensor(-1);
    if (num_layers < 1) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_transformer_decoder %s: num_layers %d is not >= 1", name, num_layers);
    x = nn__tf_bfirst(g, tgt, bf);
    m = nn__tf_bfirst(g, memory, bf);
    for (i = 0; i < num_layers; i++) {
        snprintf(nl, sizeof nl, "%s.layers.%d", name, i);
        x = nn__tf_decoder_layer(g, x, m, d_model, nhead, desc, nl);
    }
    return nn__tf_note(g, nn__tf_bfirst(g, x, bf), first, tgt, memory, d_model, nhead, desc, name, num_layers);
}

/* ---- ViT's patch embedding: timm's PatchEmbed (a convolution of kernel = stride = the
   patch, flattened to [B, N, E]) and VisionTransformer's cls_token and pos_embed ---- */

NN_API nn_tensor nn_patch_embedding(nn_graph *g, nn_tensor x, int patch_size, int64_t embed_dim,
                                    const nn_patch_embedding_desc *desc, const char *name) {
    const char *op = "nn_patch_embedding", *pre = desc && desc->prefix ? desc->prefix : "";
    char pn[300];
    nn_conv2d_desc cd;
    nn_shape sx;
    int64_t b, n, t;
    int perm[3] = {0, 2, 1}, first = g ? g->n_nodes : 0;
    nn_tensor y;
    if (!nn__check(g, op, 1, &x) || !nn__expect_f32(g, op, x, "x")) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200 || strlen(pre) > 200)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a name (at most 200 chars, the prefix too)", op);
    sx = nn__n(g, x)->shape;
    if (patch_size < 1 || embed_dim < 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: patch_size %d and embed_dim %lld must be >= 1", op, name, patch_size,
                           (long long)embed_dim);
    if (sx.ndim != 4 || sx.dim[2] % patch_size || sx.dim[3] % patch_size) {
        char s[128];
        nn__shape_str(&sx, s, sizeof s);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s %s: x %s must be [B, C, H, W] with H and W multiples of patch_size %d", op, name, s,
                           patch_size);
    }
    b = sx.dim[0];
    n = sx.dim[2] / patch_size * (sx.dim[3] / patch_size);
    t = n + (desc && desc->class_token ? 1 : 0);
    memset(&cd, 0, sizeof cd);
    cd.stride_h = cd.stride_w = patch_size;
    snprintf(pn, sizeof pn, "%s.proj", name);
    y = nn_conv2d_layer(g, x, embed_dim, patch_size, patch_size, &cd, pn); /* [B, E, H/P, W/P] */
    y = nn_permute(g, nn_reshape(g, y, nn_shape3(b, embed_dim, n)), perm, 3);   /* [B, N, E] */
    if (desc && desc->class_token) {
        nn_init ci;
        nn_tensor xs[2];
        memset(&ci, 0, sizeof ci);
        ci.kind = NN_INIT_NORMAL; /* timm: nn.init.normal_(cls_token, std=1e-6) */
        ci.b = 1e-6f;
        snprintf(pn, sizeof pn, "%s%scls_token", pre, pre[0] ? "." : "");
        xs[0] = nn_expand(g, nn_param(g, pn, nn_shape3(1, 1, embed_dim), ci), nn_shape3(b, 1, embed_dim));
        xs[1] = y;
        y = nn_concat(g, xs, 2, 1);
    }
    if (desc && desc->pos_embed) {
        nn_init pi;
        memset(&pi, 0, sizeof pi);
        pi.kind = NN_INIT_NORMAL; /* timm: trunc_normal_(std=0.02), here untruncated */
        pi.b = 0.02f;
        snprintf(pn, sizeof pn, "%s%spos_embed", pre, pre[0] ? "." : "");
        y = nn_add(g, y, nn_param(g, pn, nn_shape3(1, t, embed_dim), pi));
    }
    {
        char qn[1300], qp[1300], pf[1320];
        pf[0] = 0;
        if (pre[0]) snprintf(pf, sizeof pf, ", \"prefix\": %s", nn__note_str(pre, qp, sizeof qp));
        nn__note_layer(g, y, first, &x, 1, NULL, "{\"type\": \"patch_embedding\", \"name\": %s, \"in_chans\": %lld, \"patch_size\": %d, "
                       "\"embed_dim\": %lld, \"class_token\": %s, \"pos_embed\": %s%s}", nn__note_str(name, qn, sizeof qn),
                       (long long)sx.dim[1], patch_size, (long long)embed_dim, desc && desc->class_token ? "true" : "false",
                       desc && desc->pos_embed ? "true" : "false", pf);
    }
    return y;
}
