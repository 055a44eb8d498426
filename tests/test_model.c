/* Model files (src/files/model.c): a graph built with builder code saved with its JSON
   (nn_model_save) and rebuilt with none (nn_model_load) gives the same bits; a hand-written
   JSON builds and trains (nn_model_build); an edited JSON (a layer widened) is refused
   naming the tensor, or loads with that layer fresh; malformed JSON is refused naming its
   path (bad rows); bad files and graphs that are no chain of layers are errors. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "bad_rows.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int md_tmp(char *path) {
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

static void md_fill(float *v, size_t n, unsigned long long seed) {
    size_t i;
    t_seed(seed);
    for (i = 0; i < n; i++) v[i] = (float)t_uniform(-1.0, 1.0);
}

/* The three nets of the round trip: x -> y built with builder code, on g */
typedef nn_tensor (*md_net)(nn_graph *g, nn_tensor x);

/* conv2d, batch norm, relu, max pool, avg pool, flatten, linear, layer norm, gelu,
   dropout, linear, log_softmax on [B, 2, 9, 9] */
static nn_tensor md_cnn(nn_graph *g, nn_tensor x) {
    nn_conv2d_desc cd;
    nn_pool2d_desc mp, ap;
    memset(&cd, 0, sizeof cd);
    memset(&mp, 0, sizeof mp);
    memset(&ap, 0, sizeof ap);
    cd.pad_h = cd.pad_w = 1;
    mp.kernel_h = mp.kernel_w = 2;
    mp.ceil_mode = 1;
    ap.kernel_h = ap.kernel_w = 3;
    ap.stride_h = ap.stride_w = 1;
    ap.pad_h = ap.pad_w = 1;
    ap.exclude_pad = 1;
    x = nn_conv2d_layer(g, x, 4, 3, 3, &cd, "conv");
    x = nn_relu(g, nn_batch_norm2d_layer(g, x, NULL, "bn"));
    x = nn_avg_pool2d(g, nn_max_pool2d(g, x, &mp), &ap); /* [B, 4, 5, 5] */
    x = nn_flatten(g, x);
    x = nn_linear_layer(g, x, 16, NULL, "fc1");
    x = nn_dropout(g, nn_gelu(g, nn_layer_norm_layer(g, x, 1, NULL, "ln")), 0.25f);
    return nn_log_softmax(g, nn_linear_layer(g, x, 5, NULL, "fc2"), -1);
}

/* embedding (padding_idx 1), flatten, linear, softmax on int32 [B, 5] */
static nn_tensor md_emb(nn_graph *g, nn_tensor x) {
    nn_embedding_desc ed;
    memset(&ed, 0, sizeof ed);
    ed.padding_idx = 1;
    x = nn_flatten(g, nn_embedding(g, x, 11, 4, &ed, "emb"));
    return nn_softmax(g, nn_linear_layer(g, x, 3, NULL, "out"), 1);
}

/* The tiny GPT of examples/tiny_gpt.c (vocabulary 96, context 64, 4 layers, width 128, 4
   heads) with nanoGPT's dropout 0.1, on int32 [B, 8] -> logits [B * 8, 96] */
static nn_tensor md_gpt(nn_graph *g, nn_tensor x) {
    nn_gpt_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = 96;
    c.block_size = 64;
    c.n_layer = 4;
    c.n_head = 4;
    c.n_embd = 128;
    c.dropout = 0.1f;
    return nn_gpt(g, x, &c);
}

/* A char LSTM: embedding (13, 8), an LSTM of 12 (batch_first), a linear head to 13 on the
   rows: int32 [B, 7] -> [B * 7, 13] */
static nn_tensor md_lstm(nn_graph *g, nn_tensor x) {
    nn_rnn_desc rd;
    nn_shape s;
    nn_tensor_shape(g, x, &s);
    memset(&rd, 0, sizeof rd);
    rd.batch_first = 1;
    x = nn_lstm(g, nn_embedding(g, x, 13, 8, NULL, "embedding"), 12, &rd, "lstm");
    return nn_linear_layer(g, nn_reshape(g, x, nn_shape2(s.dim[0] * s.dim[1], 12)), 13, NULL, "head");
}

/* examples/char_lstm.c's model(): a table parameter gathered with nn_index_select (an
   embedding), nn_lstm (batch_first), a linear head on the rows: int32 [B, 7] -> [B * 7, 13] */
/* A ViT front: patch embedding (cls_token, pos_embed) -> flatten -> linear: [B, 3, 8, 8] -> [B, 4] */
static nn_tensor md_vit(nn_graph *g, nn_tensor x) {
    nn_patch_embedding_desc pd;
    memset(&pd, 0, sizeof pd);
    pd.class_token = pd.pos_embed = 1;
    pd.prefix = "vit";
    return nn_linear_layer(g, nn_flatten(g, nn_patch_embedding(g, x, 4, 6, &pd, "patch_embed")), 4, NULL, "head");
}

/* ConvLSTM2D (kernel 3, then 1 without bias) -> flatten -> linear: [B, 3, 2, 5, 5] -> [B, 3] */
static nn_tensor md_conv_lstm(nn_graph *g, nn_tensor x) {
    nn_conv_lstm_desc cd;
    memset(&cd, 0, sizeof cd);
    x = nn_conv_lstm2d(g, x, 3, &cd, "clstm1");
    cd.kernel_size = 1;
    cd.no_bias = 1;
    x = nn_conv_lstm2d(g, x, 2, &cd, "clstm2");
    return nn_linear_layer(g, nn_flatten(g, x), 3, NULL, "head");
}

static nn_tensor md_char_lstm(nn_graph *g, nn_tensor tokens) {
    nn_init emb_init = {NN_INIT_NORMAL, 0.0f, 1.0f};
    nn_rnn_desc rd;
    nn_shape s;
    nn_tensor table = nn_param(g, "embedding.weight", nn_shape2(13, 8), emb_init), x;
    nn_tensor_shape(g, tokens, &s);
    x = nn_reshape(g, nn_index_select(g, table, 0, nn_reshape(g, tokens, nn_shape1(s.dim[0] * s.dim[1]))), nn_shape3(s.dim[0], s.dim[1], 8));
    memset(&rd, 0, sizeof rd);
    rd.batch_first = 1;
    x = nn_lstm(g, x, 12, &rd, "lstm");
    return nn_linear_layer(g, nn_reshape(g, x, nn_shape2(s.dim[0] * s.dim[1], 12)), 13, NULL, "head");
}

/* Not a chain: self-attention with a residual add, an RMS norm, an encoder layer (norm
   first, GELU), a 2-layer bidirectional GRU, its output concatenated with its input, a
   linear head: [B, 5, 16] -> [B, 4] */
static nn_tensor md_tf(nn_graph *g, nn_tensor x) {
    nn_mha_desc m;
    nn_transformer_desc td;
    nn_rnn_desc rd;
    nn_tensor h, c[2];
    memset(&m, 0, sizeof m);
    memset(&td, 0, sizeof td);
    memset(&rd, 0, sizeof rd);
    m.batch_first = 1;
    td.dim_feedforward = 32;
    td.batch_first = td.norm_first = 1;
    td.activation = 1;
    rd.batch_first = rd.bidirectional = 1;
    rd.num_layers = 2;
    h = nn_rms_norm_layer(g, nn_add(g, x, nn_multihead_attention(g, x, x, x, 16, 4, &m, "attn")), 1, NULL, "rms");
    c[0] = nn_transformer_encoder_layer(g, h, 16, 4, &td, "enc");
    c[1] = nn_gru(g, c[0], 8, &rd, "gru");
    return nn_linear_layer(g, nn_flatten(g, nn_concat(g, c, 2, 2)), 4, NULL, "head");
}

typedef struct md_case {
    const char *label;
    md_net net;
    nn_dtype dtype;
    nn_shape sample; /* without the batch dim */
    const char *json_has; /* words the saved JSON holds */
} md_case;

static nn_shape md_batch(nn_shape s, int64_t b) {
    nn_shape r;
    int d;
    memset(&r, 0, sizeof r);
    r.ndim = s.ndim + 1;
    r.dim[0] = b;
    for (d = 0; d < s.ndim; d++) r.dim[d + 1] = s.dim[d];
    return r;
}

/* md_seq's reshape keeps the batch: rebuilt here with it */
static nn_tensor md_seq_b(nn_graph *g, nn_tensor x) {
    nn_conv1d_desc cd;
    nn_linear_desc ld;
    nn_shape s;
    nn_tensor_shape(g, x, &s);
    memset(&cd, 0, sizeof cd);
    memset(&ld, 0, sizeof ld);
    cd.stride = 2;
    cd.no_bias = 1;
    ld.no_bias = 1;
    x = nn_tanh(g, nn_conv1d_layer(g, x, 4, 3, &cd, "c1"));
    x = nn_leaky_relu(g, nn_reshape(g, x, nn_shape3(s.dim[0], 2, 10)), 0.2f);
    x = nn_reshape(g, x, nn_shape2(s.dim[0], 20));
    return nn_softplus(g, nn_linear_layer(g, x, 3, &ld, "head"), 2.0f, 10.0f);
}

/* One net: trained 3 steps (so the weights and batch norm's running statistics move),
   evaluated on a graph that shares them, saved, loaded with no builder code, evaluated
   again: the same bits. */
static void md_roundtrip_one(const t_env *e, const md_case *c) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *ev = NULL, *ld = NULL;
    nn_graph_desc gd, ed;
    nn_compile_desc cd;
    nn_model_desc md;
    nn_tensor x, y, t, ex, ey, lx = NN_NONE, ly = NN_NONE;
    nn_shape ys;
    char path[] = "/tmp/nn-test-model-XXXXXX", *json = NULL;
    const int64_t B = 6;
    int64_t nin = 0, nout = 0;
    size_t len = 0, i;
    float *xin = NULL, *tgt = NULL, *y1 = NULL, *y2 = NULL;
    int32_t *iin = NULL;
    int step, ok = 1;
    char name[160];
    snprintf(name, sizeof name, "model: save -> load round trip, the same bits (%s)", c->label);
    if (!t_begin(e, name)) return;
    if (!T_CHECK(md_tmp(path), "mkstemp")) goto done;
    memset(&gd, 0, sizeof gd);
    gd.seed = 7;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, c->dtype == NN_I32 ? "tokens" : "x", c->dtype, md_batch(c->sample, B));
    y = c->net(g, x);
    nn_tensor_shape(g, y, &ys);
    t = nn_input(g, "target", NN_F32, ys);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mse_loss(g, y, t, NULL);
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 0.01f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    nin = t_numel(g, x);
    nout = t_numel(g, y);
    xin = (float *)calloc((size_t)nin, sizeof *xin);
    iin = (int32_t *)calloc((size_t)nin, sizeof *iin);
    tgt = (float *)calloc((size_t)nout, sizeof *tgt);
    y1 = (float *)calloc((size_t)nout, sizeof *y1);
    y2 = (float *)calloc((size_t)nout, sizeof *y2);
    if (!T_CHECK(xin && iin && tgt && y1 && y2, "out of memory")) goto done;
    md_fill(xin, (size_t)nin, 11);
    md_fill(tgt, (size_t)nout, 12);
    for (i = 0; i < (size_t)nin; i++) iin[i] = (int32_t)((i * 7 + 3) % 11);
    if (!T_OK(nn_tensor_write(g, x, c->dtype == NN_I32 ? (const void *)iin : (const void *)xin, (size_t)nin * 4), ctx) ||
        !T_OK(nn_tensor_write(g, t, tgt, (size_t)nout * 4), ctx))
        goto done;
    for (step = 0; step < 3; step++)
        if (!T_OK(nn_graph_step(g), ctx)) goto done;
    /* the JSON, as nn_model_save stores it */
    if (!T_OK(nn_model_json(g, x, y, NULL, 0, &len), ctx) || !T_CHECK(len > 0, "empty JSON")) goto done;
    json = (char *)malloc(len + 1);
    if (!T_CHECK(json != NULL, "oom") || !T_OK(nn_model_json(g, x, y, json, len + 1, &len), ctx)) goto done;
    ok &= T_CHECK(strstr(json, c->json_has) != NULL, "the JSON lacks %s:\n%s", c->json_has, json);
    {
        char *shorter = (char *)malloc(len);
        size_t l2 = 0;
        ok &= T_CHECK(shorter && nn_model_json(g, x, y, shorter, len, &l2) == NN_ERR_INVALID_ARGUMENT && l2 == len,
                      "a buf one byte short is refused");
        free(shorter);
    }
    if (!T_OK(nn_model_save(g, x, y, path), ctx)) goto done;
    /* the reference: an eval graph on the trained parameters */
    memset(&ed, 0, sizeof ed);
    ed.share_params = g;
    ed.eval = 1;
    if (!T_OK(nn_graph_create(ctx, &ed, &ev), ctx)) goto done;
    ex = nn_input(ev, "x", c->dtype, md_batch(c->sample, B));
    ey = c->net(ev, ex);
    if (!T_OK(nn_graph_output(ev, ey), ctx) || !T_OK(nn_graph_compile(ev, NULL), ctx)) goto done;
    if (!T_OK(nn_tensor_write(ev, ex, c->dtype == NN_I32 ? (const void *)iin : (const void *)xin, (size_t)nin * 4), ctx) ||
        !T_OK(nn_graph_forward(ev), ctx) || !T_OK(nn_tensor_read(ev, ey, y1, (size_t)nout * 4), ctx))
        goto done;
    /* no model code: the file alone */
    memset(&md, 0, sizeof md);
    md.batch = B;
    md.input = &lx;
    md.output = &ly;
    if (!T_OK(nn_model_load(ctx, path, &md, &ld), ctx)) goto done;
    ok &= T_CHECK(nn_graph_find(ld, c->dtype == NN_I32 ? "tokens" : "x").id == lx.id, "the input keeps its name");
    if (!T_OK(nn_tensor_write(ld, lx, c->dtype == NN_I32 ? (const void *)iin : (const void *)xin, (size_t)nin * 4), ctx) ||
        !T_OK(nn_graph_forward(ld), ctx) || !T_OK(nn_tensor_read(ld, ly, y2, (size_t)nout * 4), ctx))
        goto done;
    for (i = 0; i < (size_t)nout && ok; i++)
        ok &= T_CHECK(memcmp(&y1[i], &y2[i], 4) == 0, "output %lu: %.9g from the graph, %.9g from the file", (unsigned long)i,
                      y1[i], y2[i]);
    /* the load's own JSON is the saved one */
    {
        size_t len2 = 0;
        char *j2 = (char *)malloc(len + 1);
        if (T_CHECK(j2 != NULL, "oom") && T_OK(nn_model_json(ld, lx, ly, j2, len + 1, &len2), ctx))
            ok &= T_CHECK(len2 <= len && (strstr(json, "dropout") || strcmp(j2, json) == 0), "the reloaded JSON differs:\n%s\n%s", j2, json);
        free(j2);
    }
done:
    nn_graph_destroy(ld);
    nn_graph_destroy(ev);
    nn_graph_destroy(g);
    remove(path);
    free(json);
    free(xin);
    free(iin);
    free(tgt);
    free(y1);
    free(y2);
    (void)ok;
    t_end();
}

static void test_roundtrip(const t_env *e) {
    static const md_case cases[9] = {
        {"conv2d, batch_norm2d, pools, layer_norm, dropout", md_cnn, NN_F32, {3, {2, 9, 9}}, "\"ceil_mode\": true"},
        {"conv1d, reshape, leaky_relu, softplus", md_seq_b, NN_F32, {2, {3, 11}}, "\"negative_slope\": 0.2"},
        {"embedding, softmax", md_emb, NN_I32, {1, {5}}, "\"padding_idx\": 1"},
        {"tiny_gpt.c's GPT", md_gpt, NN_I32, {1, {8}}, "{\"type\": \"gpt\", \"vocab_size\": 96, \"block_size\": 64, \"n_layer\": 4"},
        {"char LSTM: embedding, lstm, reshape of the batch, linear", md_lstm, NN_I32, {1, {7}},
         "\"type\": \"reshape\", \"shape\": [-1, 12], \"include_batch\": true"},
        {"a graph: multihead_attention, residual add, rms_norm, encoder layer, gru, concat", md_tf, NN_F32, {2, {5, 16}},
         "{\"type\": \"concat\", \"dim\": 2, \"inputs\": [\"enc\", \"gru\"]}"},
        {"char_lstm.c's model: index_select of a table, lstm, linear", md_char_lstm, NN_I32, {1, {7}},
         "{\"type\": \"reshape\", \"shape\": [-1], \"include_batch\": true},\n  {\"type\": \"embedding\", \"name\": \"embedding\""},
        {"ViT patch_embedding, flatten, linear", md_vit, NN_F32, {3, {3, 8, 8}},
         "{\"type\": \"patch_embedding\", \"name\": \"patch_embed\", \"in_chans\": 3, \"patch_size\": 4, \"embed_dim\": 6, "
         "\"class_token\": true, \"pos_embed\": true, \"prefix\": \"vit\"}"},
        {"conv_lstm2d twice, flatten, linear", md_conv_lstm, NN_F32, {4, {3, 2, 5, 5}},
         "{\"type\": \"conv_lstm2d\", \"name\": \"clstm2\", \"in_channels\": 3, \"hidden_channels\": 2, \"kernel_size\": 1, "
         "\"bias\": false}"},
    };
    int i;
    for (i = 0; i < 9; i++) md_roundtrip_one(e, &cases[i]);
}

/* A model written by hand: y = 2 x0 - x1 + 0.5 learned by a 2-8-1 MLP, 300 Adam steps. */
static const char md_hand[] =
    "{\"inputs\": [{\"name\": \"x\", \"shape\": [2]}],\n"
    " \"layers\": [{\"type\": \"linear\", \"name\": \"fc1\", \"in\": 2, \"out\": 8},\n"
    "            {\"type\": \"tanh\"},\n"
    "            {\"type\": \"linear\", \"name\": \"fc2\", \"out\": 1}]}";

static void test_hand_written(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, y, t, w;
    float xin[64 * 2], tgt[64], first = 0, last = 0;
    int i, step;
    if (!t_begin(e, "model: a hand-written JSON builds and trains")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(64, 2));
    t = nn_input(g, "t", NN_F32, nn_shape2(64, 1));
    y = nn_model_build(g, x, md_hand);
    if (!T_CHECK(y.id > 0, "nn_model_build: %s", nn_context_last_error(ctx))) goto done;
    w = nn_graph_find(g, "fc1.weight");
    T_CHECK(t_shape(g, w).ndim == 2 && t_shape(g, w).dim[0] == 8 && t_shape(g, w).dim[1] == 2, "fc1.weight is [8, 2]");
    T_CHECK(t_shape(g, y).ndim == 2 && t_shape(g, y).dim[1] == 1, "y is [64, 1]");
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mse_loss(g, y, t, NULL);
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 0.02f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    md_fill(xin, 128, 3);
    for (i = 0; i < 64; i++) tgt[i] = 2 * xin[2 * i] - xin[2 * i + 1] + 0.5f;
    if (!T_OK(nn_tensor_write(g, x, xin, sizeof xin), ctx) || !T_OK(nn_tensor_write(g, t, tgt, sizeof tgt), ctx)) goto done;
    for (step = 0; step < 300; step++) {
        if (!T_OK(nn_graph_step(g), ctx)) goto done;
        if (step == 0 && !T_OK(nn_tensor_read(g, cd.loss, &first, 4), ctx)) goto done;
    }
    if (!T_OK(nn_tensor_read(g, cd.loss, &last, 4), ctx)) goto done;
    T_CHECK(first > 0.5f && last < 0.01f * first, "loss %g after 300 steps, %g at the first", last, first);
done:
    nn_graph_destroy(g);
    t_end();
}

/* Two inputs, two outputs, every sequence type nn_model_build makes itself (learned
   positions, a linear layer on [B, T, C]) and the stacks: built from the JSON
   (nn_model_build_io), saved (every input and output: NN_NONE), loaded with no code; the
   same bits, and the loaded graph describes itself with the same text. */
static const char md_graph_json[] =
    "{\"inputs\": [{\"name\": \"tgt\", \"shape\": [4, 8]}, {\"name\": \"memory\", \"shape\": [6, 8]}],\n"
    " \"layers\": [{\"type\": \"position_embedding\", \"name\": \"pos\", \"num_positions\": 10, \"embedding_dim\": 8},\n"
    "  {\"type\": \"transformer_encoder\", \"name\": \"enc\", \"inputs\": [\"memory\"], \"d_model\": 8, \"nhead\": 2, \"num_layers\": 2,"
    " \"dim_feedforward\": 16, \"batch_first\": true},\n"
    "  {\"type\": \"transformer_decoder_layer\", \"name\": \"dec\", \"inputs\": [\"pos\", \"enc\"], \"d_model\": 8, \"nhead\": 2,"
    " \"dim_feedforward\": 16, \"dropout\": 0, \"batch_first\": true, \"tgt_is_causal\": true},\n"
    "  {\"type\": \"linear\", \"name\": \"head\", \"out\": 3},\n"
    "  {\"type\": \"multihead_attention\", \"name\": \"cross\", \"inputs\": [\"dec\", \"enc\", \"enc\"], \"embed_dim\": 8,"
    " \"num_heads\": 2, \"batch_first\": true},\n"
    "  {\"type\": \"layer_norm\", \"name\": \"ln\", \"normalized_shape\": 8},\n"
    "  {\"type\": \"sub\", \"inputs\": [\"ln\", \"dec\"]}],\n"
    " \"outputs\": [\"head\", \"layers.6\"]}";

static void test_graph(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *ld = NULL;
    nn_graph_desc gd;
    nn_model_desc md;
    nn_tensor xs[2], ys[4], lx[3], ly[3];
    char path[] = "/tmp/nn-test-model-XXXXXX", j1[8192], j2[8192];
    float tin[3 * 4 * 8], min[3 * 6 * 8], a1[3 * 4 * 3], b1[3 * 4 * 8], a2[3 * 4 * 3], b2[3 * 4 * 8];
    size_t len = 0, i;
    int n = 0, ok = 1;
    if (!t_begin(e, "model: a graph of two inputs and two outputs (decoder, stacks, positions), built, saved, loaded: the same bits")) return;
    memset(&gd, 0, sizeof gd);
    gd.eval = 1;
    gd.seed = 5;
    if (!T_CHECK(md_tmp(path), "mkstemp") || !T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    xs[0] = nn_input(g, "tgt", NN_F32, nn_shape3(3, 4, 8));
    xs[1] = nn_input(g, "memory", NN_F32, nn_shape3(3, 6, 8));
    if (!T_OK(nn_model_build_io(g, xs, 2, md_graph_json, ys, 4, &n), ctx) || !T_CHECK(n == 2, "%d outputs", n)) goto done;
    T_CHECK(t_shape(g, ys[0]).ndim == 3 && t_shape(g, ys[0]).dim[2] == 3, "head is [3, 4, 3]");
    T_CHECK(nn_graph_find(g, "enc.layers.1.self_attn.in_proj_weight").id > 0 && nn_graph_find(g, "pos.weight").id > 0 &&
                nn_graph_find(g, "dec.multihead_attn.in_proj_weight").id > 0,
            "PyTorch's parameter names");
    if (!T_OK(nn_graph_output(g, ys[0]), ctx) || !T_OK(nn_graph_output(g, ys[1]), ctx) || !T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    md_fill(tin, sizeof tin / 4, 21);
    md_fill(min, sizeof min / 4, 22);
    if (!T_OK(nn_tensor_write(g, xs[0], tin, sizeof tin), ctx) || !T_OK(nn_tensor_write(g, xs[1], min, sizeof min), ctx) ||
        !T_OK(nn_graph_forward(g), ctx) || !T_OK(nn_tensor_read(g, ys[0], a1, sizeof a1), ctx) ||
        !T_OK(nn_tensor_read(g, ys[1], b1, sizeof b1), ctx))
        goto done;
    if (!T_OK(nn_model_json(g, NN_NONE, NN_NONE, j1, sizeof j1, &len), ctx) || !T_OK(nn_model_save(g, NN_NONE, NN_NONE, path), ctx)) goto done;
    ok &= T_CHECK(strstr(j1, "\"inputs\": [\"pos\", \"enc\"]") && strstr(j1, "\"outputs\": [\"head\", \"layers.6\"]") &&
                      strstr(j1, "\"type\": \"transformer_encoder\", \"name\": \"enc\", \"num_layers\": 2"),
                  "the JSON:\n%s", j1);
    memset(&md, 0, sizeof md);
    md.batch = 3;
    md.inputs = lx;
    md.outputs = ly;
    md.max_io = 3;
    if (!T_OK(nn_model_load(ctx, path, &md, &ld), ctx)) goto done;
    ok &= T_CHECK(lx[2].id == 0 && ly[2].id == 0 && nn_graph_find(ld, "memory").id == lx[1].id, "inputs and outputs in the JSON's order");
    if (!T_OK(nn_tensor_write(ld, lx[0], tin, sizeof tin), ctx) || !T_OK(nn_tensor_write(ld, lx[1], min, sizeof min), ctx) ||
        !T_OK(nn_graph_forward(ld), ctx) || !T_OK(nn_tensor_read(ld, ly[0], a2, sizeof a2), ctx) ||
        !T_OK(nn_tensor_read(ld, ly[1], b2, sizeof b2), ctx))
        goto done;
    ok &= T_CHECK(memcmp(a1, a2, sizeof a1) == 0 && memcmp(b1, b2, sizeof b1) == 0, "the loaded model's outputs differ");
    for (i = 0; i < sizeof a1 / 4 && !ok; i++)
        if (a1[i] != a2[i]) T_CHECK(0, "head %lu: %.9g, %.9g", (unsigned long)i, a1[i], a2[i]);
    if (T_OK(nn_model_json(ld, NN_NONE, NN_NONE, j2, sizeof j2, &len), ctx)) T_CHECK(strcmp(j1, j2) == 0, "reloaded:\n%s\nsaved:\n%s", j2, j1);
    { /* the loaded model's summary: its layers' parameters and the compiled plan's bytes */
        char *sum = NULL;
        if (T_OK(nn_graph_summary_string(ld, NULL, 0, &len), ctx) && (sum = (char *)malloc(len + 1)) != NULL &&
            T_OK(nn_graph_summary_string(ld, sum, len + 1, &len), ctx))
            T_CHECK(strstr(sum, "dec.multihead_attn.in_proj_weight") && strstr(sum, "enc.layers.1.linear2.weight") && strstr(sum, "activations"),
                    "the summary:\n%s", sum);
        free(sum);
    }
done:
    nn_graph_destroy(ld);
    nn_graph_destroy(g);
    remove(path);
    t_end();
}

/* Replaces the first "from" in s (of capacity cap) by "to"; 1 when found. */
static int md_edit(char *s, size_t cap, const char *from, const char *to) {
    char *p = strstr(s, from);
    size_t fl = strlen(from), tl = strlen(to), rest;
    if (!p) return 0;
    rest = strlen(p + fl);
    if ((size_t)(p - s) + tl + rest + 1 > cap) return 0;
    memmove(p + tl, p + fl, rest + 1);
    memcpy(p, to, tl);
    return 1;
}

/* x [4, 3] -> fc1 (8) -> relu -> fc2 (8) -> relu -> fc3 (2), saved; its JSON edited so that
   fc2 is 12 wide (fc3's input with it) */
static void test_widened(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *a = NULL, *b = NULL;
    nn_model_desc md;
    nn_compile_desc cd;
    nn_tensor x, y, lx = NN_NONE, ly = NN_NONE;
    char path[] = "/tmp/nn-test-model-XXXXXX", json[4096];
    float w3[2 * 12], w2[12 * 8], f1[8 * 3], l1[8 * 3], xin[4 * 3], out[4 * 2];
    size_t len;
    const char *err;
    int i;
    if (!t_begin(e, "model: an edited JSON (a layer widened): refused, or fresh weights for the changed layers")) return;
    if (!T_CHECK(md_tmp(path), "mkstemp") || !T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(4, 3));
    y = nn_relu(g, nn_linear_layer(g, nn_relu(g, nn_linear_layer(g, x, 8, NULL, "fc1")), 8, NULL, "fc2"));
    y = nn_linear_layer(g, y, 2, NULL, "fc3");
    if (!T_OK(nn_graph_output(g, y), ctx) || !T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    if (!T_OK(nn_model_save(g, x, y, path), ctx) || !T_OK(nn_model_json(g, x, y, json, sizeof json, &len), ctx)) goto done;
    if (!T_CHECK(md_edit(json, sizeof json, "\"name\": \"fc2\", \"in\": 8, \"out\": 8", "\"name\": \"fc2\", \"in\": 8, \"out\": 12") &&
                     md_edit(json, sizeof json, "\"name\": \"fc3\", \"in\": 8", "\"name\": \"fc3\", \"in\": 12"),
                 "the JSON as saved:\n%s", json))
        goto done;
    memset(&md, 0, sizeof md);
    md.json = json;
    md.batch = 4;
    T_CHECK(nn_model_load(ctx, path, &md, &a) == NN_ERR_SHAPE && a == NULL, "the widened JSON loads without fresh_mismatched");
    err = nn_context_last_error(ctx);
    T_CHECK(strstr(err, "fc2.weight is [8, 8] in the file, [12, 8] in the model") && strstr(err, "fresh_mismatched"), "message: %s", err);
    md.fresh_mismatched = 1;
    md.train = 1;
    md.input = &lx;
    md.output = &ly;
    if (!T_OK(nn_model_load(ctx, path, &md, &a), ctx)) goto done;
    T_CHECK(t_shape(a, nn_graph_find(a, "fc2.weight")).dim[0] == 12 && t_shape(a, nn_graph_find(a, "fc3.weight")).dim[1] == 12,
            "fc2 is 12 wide, fc3 takes 12");
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mean(a, nn_square(a, ly));
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.1f;
    if (!T_OK(nn_graph_compile(a, &cd), ctx)) goto done;
    /* fc1 (unchanged) came from the file; fc2 kept its fresh values */
    if (!T_OK(nn_tensor_read(g, nn_graph_find(g, "fc1.weight"), f1, sizeof f1), ctx) ||
        !T_OK(nn_tensor_read(a, nn_graph_find(a, "fc1.weight"), l1, sizeof l1), ctx) ||
        !T_OK(nn_tensor_read(a, nn_graph_find(a, "fc2.weight"), w2, sizeof w2), ctx) ||
        !T_OK(nn_tensor_read(a, nn_graph_find(a, "fc3.weight"), w3, 2 * 12 * 4), ctx))
        goto done;
    T_CHECK(memcmp(f1, l1, sizeof f1) == 0, "fc1.weight loaded from the file");
    for (i = 0; i < 12 * 8; i++)
        if (!T_CHECK(w2[i] >= -0.3536f && w2[i] <= 0.3536f, "fc2.weight[%d] = %g is not nn.Linear's U(+-1/sqrt(8))", i, w2[i])) break;
    md_fill(xin, 12, 5);
    if (!T_OK(nn_tensor_write(a, lx, xin, sizeof xin), ctx)) goto done;
    for (i = 0; i < 5; i++)
        if (!T_OK(nn_graph_step(a), ctx)) goto done;
    T_OK(nn_tensor_read(a, ly, out, sizeof out), ctx);
    /* an inference load of the same edit */
    md.train = 0;
    if (T_OK(nn_model_load(ctx, path, &md, &b), ctx)) T_OK(nn_graph_forward(b), ctx);
done:
    nn_graph_destroy(b);
    nn_graph_destroy(a);
    nn_graph_destroy(g);
    remove(path);
    t_end();
}

/* Files and graphs nn_model_* refuse, each with its words; nothing is returned. */
static void test_errors(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *out = (nn_graph *)&out;
    nn_tensor x, y;
    char path[] = "/tmp/nn-test-model-XXXXXX", json[64];
    size_t len = 7;
    FILE *f;
    if (!t_begin(e, "model: bad files and graphs that are no chain of layers")) return;
    if (!T_CHECK(md_tmp(path), "mkstemp") || !T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    /* an op that is no layer's: x x^T */
    x = nn_input(g, "x", NN_F32, nn_shape2(2, 4));
    y = nn_matmul(g, x, nn_relu(g, nn_linear_layer(g, x, 4, NULL, "fc")), 0, 1);
    T_CHECK(nn_model_json(g, x, y, json, sizeof json, &len) == NN_ERR_INVALID_ARGUMENT && len == 0,
            "a graph with a custom op is refused");
    T_CHECK(strstr(nn_context_last_error(ctx), "nn_model_json: node") != NULL &&
                strstr(nn_context_last_error(ctx), "chain of layers") != NULL,
            "message: %s", nn_context_last_error(ctx));
    T_CHECK(nn_graph_status(g) == NN_OK, "a refused query leaves the graph as it was");
    T_CHECK(nn_model_save(g, x, y, path) == NN_ERR_INVALID_ARGUMENT, "nn_model_save refuses it too");
    { /* an input besides x; layers given tensors a model file has no field for (a mask, initial states) */
        nn_tensor x2 = nn_input(g, "x2", NN_F32, nn_shape2(2, 4)), q = nn_input(g, "q", NN_F32, nn_shape3(3, 2, 4));
        nn_mha_desc m;
        nn_rnn_desc rd;
        char big[4096];
        memset(&m, 0, sizeof m);
        memset(&rd, 0, sizeof rd);
        y = nn_add(g, nn_relu(g, x), x2);
        T_CHECK(nn_model_json(g, x, y, big, sizeof big, &len) == NN_ERR_INVALID_ARGUMENT &&
                    strstr(nn_context_last_error(ctx), "depends on the input x2 besides x") != NULL,
                "a second input: %s", nn_context_last_error(ctx));
        T_CHECK(nn_model_json(g, NN_NONE, y, big, sizeof big, &len) == NN_OK && strstr(big, "\"inputs\": [\"layers.0\", \"x2\"]") != NULL,
                "x NN_NONE takes both inputs: %s", big);
        m.key_padding_mask = nn_input(g, "kpm", NN_I32, nn_shape2(2, 3));
        y = nn_multihead_attention(g, q, q, q, 4, 2, &m, "mha");
        T_CHECK(nn_model_json(g, NN_NONE, y, big, sizeof big, &len) == NN_ERR_INVALID_ARGUMENT &&
                    strstr(nn_context_last_error(ctx), "a multihead attention given mask tensors") != NULL,
                "a mask tensor: %s", nn_context_last_error(ctx));
        rd.h0 = nn_input(g, "h0", NN_F32, nn_shape3(1, 2, 5));
        y = nn_lstm(g, q, 5, &rd, "lstm");
        T_CHECK(nn_model_json(g, NN_NONE, y, big, sizeof big, &len) == NN_ERR_INVALID_ARGUMENT &&
                    strstr(nn_context_last_error(ctx), "initial states") != NULL,
                "initial states: %s", nn_context_last_error(ctx));
        T_CHECK(nn_graph_status(g) == NN_OK, "the graph is as it was");
    }
    /* a safetensors file without a model */
    y = nn_relu(g, nn_linear_layer(g, x, 4, NULL, "fc2"));
    if (!T_OK(nn_graph_save_safetensors(g, path), ctx)) goto done;
    T_CHECK(nn_model_load(ctx, path, NULL, &out) == NN_ERR_IO && out == NULL, "a file with no nn.model");
    T_CHECK(strstr(nn_context_last_error(ctx), "no model description") != NULL, "message: %s", nn_context_last_error(ctx));
    /* a model whose JSON is bad inside a good file: the path in the message */
    if (T_OK(nn_model_save(g, x, y, path), ctx)) {
        nn_model_desc md;
        memset(&md, 0, sizeof md);
        md.json = "{\"inputs\": [{\"shape\": [4]}], \"layers\": [{\"type\": \"linear\", \"name\": \"fc2\", \"out\": 0}]}";
        out = (nn_graph *)&out;
        T_CHECK(nn_model_load(ctx, path, &md, &out) == NN_ERR_INVALID_ARGUMENT && out == NULL, "out 0 is refused");
        T_CHECK(strstr(nn_context_last_error(ctx), "nn_model_load: layers[0].out: expected a positive integer") != NULL,
                "message: %s", nn_context_last_error(ctx));
        md.json = "{\"inputs\": [{\"shape\": [4]}], \"layers\": [{\"type\": \"linear\", \"name\": \"other\", \"out\": 4}]}";
        T_CHECK(nn_model_load(ctx, path, &md, &out) == NN_ERR_IO && out == NULL, "a parameter the file lacks");
        T_CHECK(strstr(nn_context_last_error(ctx), "other.weight") != NULL, "message: %s", nn_context_last_error(ctx));
        md.fresh_mismatched = 1;
        T_CHECK(nn_model_load(ctx, path, &md, &out) == NN_ERR_IO && out == NULL, "fresh_mismatched with nothing matched");
        {
            nn_graph_desc gd;
            memset(&gd, 0, sizeof gd);
            gd.share_params = g;
            memset(&md, 0, sizeof md);
            md.graph = &gd;
            T_CHECK(nn_model_load(ctx, path, &md, &out) == NN_ERR_INVALID_ARGUMENT && out == NULL, "share_params is refused");
            T_CHECK(strstr(nn_context_last_error(ctx), "share_params") != NULL, "message: %s", nn_context_last_error(ctx));
            md.batch = -1;
            md.graph = NULL;
            T_CHECK(nn_model_load(ctx, path, &md, &out) == NN_ERR_INVALID_ARGUMENT && out == NULL, "batch -1 is refused");
        }
    }
    /* not a safetensors file */
    f = fopen(path, "wb");
    if (f) {
        fputs("{\"inputs\": []}", f);
        fclose(f);
    }
    T_CHECK(nn_model_load(ctx, path, NULL, &out) == NN_ERR_IO && out == NULL, "a JSON text is no model file");
    T_CHECK(nn_model_load(ctx, "/nonexistent/nn-model", NULL, &out) != NN_OK && out == NULL, "a missing file");
    T_CHECK(nn_model_load(ctx, NULL, NULL, &out) == NN_ERR_INVALID_ARGUMENT, "no path");
done:
    nn_graph_destroy(g);
    remove(path);
    t_end();
}

/* ---- bad rows: malformed and wrong JSON, each named by its path ---- */
#define MB(NAME, SHAPE, JSON) B(NAME, nn_model_build(g, F(g, SHAPE), JSON))
#define IN4 "{\"inputs\": [{\"shape\": [4]}], \"layers\": "
MB(mb_syntax, S2(2, 4), "{\"inputs\": [{\"shape\": [4]}], \"layers\": [}")
MB(mb_trailing, S2(2, 4), IN4 "[{\"type\": \"relu\"},]}")
MB(mb_after, S2(2, 4), IN4 "[]} x")
MB(mb_dup, S2(2, 4), IN4 "[], \"layers\": []}")
MB(mb_top_field, S2(2, 4), IN4 "[], \"extra\": 1}")
MB(mb_no_inputs, S2(2, 4), "{\"layers\": []}")
MB(mb_two_inputs, S2(2, 4), "{\"inputs\": [{\"shape\": [4]}, {\"shape\": [4]}], \"layers\": []}")
MB(mb_inputs_17, S2(2, 4), "{\"inputs\": [], \"layers\": []}")
MB(mb_input_dup, S2(2, 4), "{\"inputs\": [{\"name\": \"a\", \"shape\": [4]}, {\"name\": \"a\", \"shape\": [4]}], \"layers\": []}")
MB(mb_loop, S2(2, 4), IN4 "[{\"type\": \"relu\", \"name\": \"a\", \"inputs\": [\"b\"]}, {\"type\": \"relu\", \"name\": \"b\", \"inputs\": [\"a\"]}]}")
MB(mb_self, S2(2, 4), IN4 "[{\"type\": \"relu\"}, {\"type\": \"tanh\", \"inputs\": [\"layers.1\"]}]}")
MB(mb_ref_none, S2(2, 4), IN4 "[{\"type\": \"relu\", \"inputs\": [\"nowhere\"]}]}")
MB(mb_ref_num, S2(2, 4), IN4 "[{\"type\": \"relu\", \"inputs\": [3]}]}")
MB(mb_inputs_obj, S2(2, 4), IN4 "[{\"type\": \"relu\", \"inputs\": \"x\"}]}")
MB(mb_add_one, S2(2, 4), IN4 "[{\"type\": \"add\"}]}")
MB(mb_mha_two, S3(2, 3, 4), "{\"inputs\": [{\"shape\": [3, 4]}], \"layers\": [{\"type\": \"relu\"}, {\"type\": \"multihead_attention\", "
   "\"inputs\": [\"x\", \"layers.0\"], \"embed_dim\": 4, \"num_heads\": 2}]}")
MB(mb_dup_name, S2(2, 4), IN4 "[{\"type\": \"linear\", \"name\": \"fc\", \"out\": 4}, {\"type\": \"linear\", \"name\": \"fc\", \"out\": 4}]}")
MB(mb_name_input, S2(2, 4), IN4 "[{\"type\": \"relu\", \"name\": \"x\"}]}")
MB(mb_outputs_none, S2(2, 4), IN4 "[{\"type\": \"relu\"}], \"outputs\": [\"y\"]}")
MB(mb_outputs_obj, S2(2, 4), IN4 "[{\"type\": \"relu\"}], \"outputs\": \"layers.0\"}")
MB(mb_outputs_two, S2(2, 4), IN4 "[{\"type\": \"relu\"}, {\"type\": \"tanh\"}], \"outputs\": [\"layers.0\", \"layers.1\"]}")
#define SEQ3 "{\"inputs\": [{\"shape\": [5, 8]}], \"layers\": "
MB(mb_lstm_hidden, S3(2, 5, 8), SEQ3 "[{\"type\": \"lstm\", \"name\": \"l\"}]}")
MB(mb_lstm_in, S3(2, 5, 8), SEQ3 "[{\"type\": \"lstm\", \"input_size\": 7, \"hidden_size\": 4}]}")
MB(mb_lstm_proj, S3(2, 5, 8), SEQ3 "[{\"type\": \"lstm\", \"hidden_size\": 4, \"proj_size\": 4}]}")
MB(mb_rnn_nl, S3(2, 5, 8), SEQ3 "[{\"type\": \"rnn\", \"hidden_size\": 4, \"nonlinearity\": \"sigmoid\"}]}")
MB(mb_gru_field, S3(2, 5, 8), SEQ3 "[{\"type\": \"gru\", \"hidden_size\": 4, \"proj_size\": 2}]}")
MB(mb_gru_2d, S2(2, 4), IN4 "[{\"type\": \"gru\", \"hidden_size\": 4}]}")
MB(mb_tf_act, S3(2, 5, 8), SEQ3 "[{\"type\": \"transformer_encoder_layer\", \"d_model\": 8, \"nhead\": 2, \"activation\": \"tanh\"}]}")
MB(mb_tf_dmodel, S3(2, 5, 8), SEQ3 "[{\"type\": \"transformer_encoder_layer\", \"nhead\": 2}]}")
MB(mb_tf_heads, S3(2, 5, 8), SEQ3 "[{\"type\": \"transformer_encoder_layer\", \"d_model\": 8, \"nhead\": 3}]}")
MB(mb_tf_layers, S3(2, 5, 8), SEQ3 "[{\"type\": \"transformer_encoder\", \"d_model\": 8, \"nhead\": 2}]}")
MB(mb_dec_one, S3(2, 5, 8), SEQ3 "[{\"type\": \"transformer_decoder_layer\", \"d_model\": 8, \"nhead\": 2}]}")
MB(mb_mha_heads, S3(2, 5, 8), SEQ3 "[{\"type\": \"multihead_attention\", \"embed_dim\": 8}]}")
B(mb_gpt_heads, nn_model_build(g, I(g, S2(2, 4)), "{\"inputs\": [{\"shape\": [4], \"dtype\": \"int32\"}], \"layers\": [{\"type\": \"gpt\", \"vocab_size\": 10, "
   "\"block_size\": 8, \"n_layer\": 1, \"n_head\": 3, \"n_embd\": 8}]}"))
MB(mb_gpt_float, S2(2, 4), IN4 "[{\"type\": \"gpt\", \"vocab_size\": 10, \"block_size\": 8, \"n_layer\": 1, \"n_head\": 2, \"n_embd\": 8}]}")
MB(mb_block_size, S3(2, 5, 8), SEQ3 "[{\"type\": \"gpt_block\", \"n_embd\": 8, \"n_head\": 2}]}")
MB(mb_pos_long, S3(2, 5, 8), SEQ3 "[{\"type\": \"position_embedding\", \"num_positions\": 4, \"embedding_dim\": 8}]}")
MB(mb_rms_eps, S3(2, 5, 8), SEQ3 "[{\"type\": \"rms_norm\", \"normalized_shape\": 8, \"eps\": -1}]}")
MB(mb_rms_bias, S3(2, 5, 8), SEQ3 "[{\"type\": \"rms_norm\", \"normalized_shape\": 8, \"bias\": false}]}")
MB(mb_concat_dim, S2(2, 4), IN4 "[{\"type\": \"relu\"}, {\"type\": \"concat\", \"inputs\": [\"x\", \"layers.0\"], \"dim\": 2}]}")
MB(mb_reshape_whole, S3(2, 5, 8), SEQ3 "[{\"type\": \"reshape\", \"shape\": [-1, 3], \"include_batch\": true}]}")
MB(mb_input_field, S2(2, 4), "{\"inputs\": [{\"shape\": [4], \"size\": 4}], \"layers\": []}")
MB(mb_input_shape, S2(2, 4), "{\"inputs\": [{\"shape\": [5]}], \"layers\": []}")
MB(mb_input_dtype, S2(2, 4), "{\"inputs\": [{\"shape\": [4], \"dtype\": \"f64\"}], \"layers\": []}")
MB(mb_version, S2(2, 4), "{\"version\": 2, \"inputs\": [{\"shape\": [4]}], \"layers\": []}")
MB(mb_layers_obj, S2(2, 4), IN4 "{}}")
MB(mb_layer_num, S2(2, 4), IN4 "[{\"type\": \"relu\"}, 3]}")
MB(mb_no_type, S2(2, 4), IN4 "[{\"out\": 3}]}")
MB(mb_type, S2(2, 4), IN4 "[{\"type\": \"relu\"}, {\"type\": \"dense\"}]}")
MB(mb_field, S2(2, 4), IN4 "[{\"type\": \"linear\", \"out\": 3, \"size\": 3}]}")
MB(mb_out_neg, S2(2, 4), IN4 "[{\"type\": \"relu\"}, {\"type\": \"relu\"}, {\"type\": \"relu\"}, {\"type\": \"linear\", \"out\": -3}]}")
MB(mb_out_frac, S2(2, 4), IN4 "[{\"type\": \"linear\", \"out\": 2.5}]}")
MB(mb_out_str, S2(2, 4), IN4 "[{\"type\": \"linear\", \"out\": \"8\"}]}")
MB(mb_out_missing, S2(2, 4), IN4 "[{\"type\": \"linear\"}]}")
MB(mb_in, S2(2, 4), IN4 "[{\"type\": \"linear\", \"in\": 5, \"out\": 3}]}")
MB(mb_bias, S2(2, 4), IN4 "[{\"type\": \"linear\", \"out\": 3, \"bias\": \"yes\"}]}")
MB(mb_name, S2(2, 4), IN4 "[{\"type\": \"linear\", \"out\": 3, \"name\": \"\"}]}")
MB(mb_linear_4d, S1(2), "{\"inputs\": [{\"shape\": []}], \"layers\": [{\"type\": \"linear\", \"out\": 3}]}")
MB(mb_kernel, S4(2, 1, 4, 4), "{\"inputs\": [{\"shape\": [1, 4, 4]}], \"layers\": [{\"type\": \"conv2d\", \"out\": 2}]}")
MB(mb_kernel_pair, S4(2, 1, 4, 4), "{\"inputs\": [{\"shape\": [1, 4, 4]}], \"layers\": [{\"type\": \"conv2d\", \"out\": 2, \"kernel\": [3, 3, 3]}]}")
MB(mb_kernel_big, S4(2, 1, 4, 4), "{\"inputs\": [{\"shape\": [1, 4, 4]}], \"layers\": [{\"type\": \"conv2d\", \"out\": 2, \"kernel\": 9}]}")
MB(mb_pool_stride, S4(2, 1, 4, 4), "{\"inputs\": [{\"shape\": [1, 4, 4]}], \"layers\": [{\"type\": \"max_pool2d\", \"kernel\": 2, \"stride\": 0}]}")
MB(mb_dropout_p, S2(2, 4), IN4 "[{\"type\": \"dropout\", \"p\": 1.5}]}")
MB(mb_act_param, S2(2, 4), IN4 "[{\"type\": \"leaky_relu\", \"slope\": 0.1}]}")
MB(mb_act_invalid, S2(2, 4), IN4 "[{\"type\": \"celu\", \"alpha\": 0}]}")
MB(mb_softmax_dim, S2(2, 4), IN4 "[{\"type\": \"softmax\", \"dim\": 2}]}")
MB(mb_reshape, S2(2, 4), IN4 "[{\"type\": \"reshape\", \"shape\": [3, -1]}]}")
MB(mb_flatten, S2(2, 4), IN4 "[{\"type\": \"flatten\", \"start_dim\": 0}]}")
MB(mb_ln_shape, S3(2, 3, 4), "{\"inputs\": [{\"shape\": [3, 4]}], \"layers\": [{\"type\": \"layer_norm\", \"normalized_shape\": [3]}]}")
MB(mb_emb_float, S2(2, 4), IN4 "[{\"type\": \"embedding\", \"num_embeddings\": 5, \"embedding_dim\": 2}]}")
MB(mb_bn_eps, S2(2, 4), IN4 "[{\"type\": \"batch_norm1d\", \"eps\": -1}]}")
MB(mb_utf8, S2(2, 4), IN4 "[{\"type\": \"re\xff\"}]}")
MB(mb_escape, S2(2, 4), IN4 "[{\"type\": \"re\\u0000lu\"}]}")
MB(mb_number, S2(2, 4), IN4 "[{\"type\": \"linear\", \"out\": 01}]}")
MB(mb_huge, S2(2, 4), IN4 "[{\"type\": \"linear\", \"out\": 1e999}]}")
MB(mb_deep, S2(2, 4), IN4 "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}")
MB(mb_null, S2(2, 4), NULL)
MB(mb_empty, S2(2, 4), "")
/* the ViT patch embedding and ConvLSTM2D */
static nn_shape md_s5(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
    nn_shape s = nn_shape4(a, b, c, d);
    s.ndim = 5;
    s.dim[4] = e;
    return s;
}
#define IMG "{\"inputs\": [{\"shape\": [3, 8, 8]}], \"layers\": "
MB(mb_pe_embed, S4(2, 3, 8, 8), IMG "[{\"type\": \"patch_embedding\", \"patch_size\": 4}]}")
MB(mb_pe_chans, S4(2, 3, 8, 8), IMG "[{\"type\": \"patch_embedding\", \"patch_size\": 4, \"embed_dim\": 6, \"in_chans\": 1}]}")
MB(mb_pe_prefix, S4(2, 3, 8, 8), IMG "[{\"type\": \"patch_embedding\", \"patch_size\": 4, \"embed_dim\": 6, \"prefix\": 3}]}")
MB(mb_pe_patch, S4(2, 3, 8, 8), IMG "[{\"type\": \"patch_embedding\", \"patch_size\": 3, \"embed_dim\": 6}]}")
MB(mb_pe_token, S4(2, 3, 8, 8), IMG "[{\"type\": \"patch_embedding\", \"patch_size\": 4, \"embed_dim\": 6, \"class_token\": 1}]}")
#define VID "{\"inputs\": [{\"shape\": [3, 2, 5, 5]}], \"layers\": "
MB(mb_cl_hidden, md_s5(2, 3, 2, 5, 5), VID "[{\"type\": \"conv_lstm2d\", \"kernel_size\": 3}]}")
MB(mb_cl_even, md_s5(2, 3, 2, 5, 5), VID "[{\"type\": \"conv_lstm2d\", \"hidden_channels\": 4, \"kernel_size\": 4}]}")
MB(mb_cl_chans, md_s5(2, 3, 2, 5, 5), VID "[{\"type\": \"conv_lstm2d\", \"hidden_channels\": 4, \"in_channels\": 3}]}")
MB(mb_cl_field, md_s5(2, 3, 2, 5, 5), VID "[{\"type\": \"conv_lstm2d\", \"hidden_channels\": 4, \"padding\": 1}]}")
MB(mb_cl_rank, S4(2, 3, 8, 8), IMG "[{\"type\": \"conv_lstm2d\", \"hidden_channels\": 4}]}")

static const bad_row model_bad[] = {
    {"model", "JSON syntax", mb_syntax, R_INV, "nn_model_build|JSON byte 40 (line 1)|expected a value", 0},
    {"model", "a trailing comma", mb_trailing, R_INV, "nn_model_build|JSON byte|expected a value", 0},
    {"model", "text after the object", mb_after, R_INV, "nn_model_build|text after the value", 0},
    {"model", "a duplicate key", mb_dup, R_INV, "duplicate key \"layers\"", 0},
    {"model", "an unknown top-level field", mb_top_field, R_INV, "nn_model_build: extra: unknown field|format version inputs layers", 0},
    {"model", "no inputs", mb_no_inputs, R_INV, "nn_model_build: inputs: missing", 0},
    {"model", "two inputs, one tensor", mb_two_inputs, R_INV, "nn_model_build: inputs: 2 in the model; nn_model_build was given 1 tensor", 0},
    {"model", "no inputs", mb_inputs_17, R_INV, "inputs: expected a list of 1 to 16 input objects", 0},
    {"model", "two inputs of one name", mb_input_dup, R_INV, "inputs[1].name: \"a\" is inputs[0]'s name too", 0},
    {"model", "a loop: layers that take each other", mb_loop, R_INV, "layers[0].inputs[0]: \"b\" is layers[1], not an earlier layer|no loops", 0},
    {"model", "a layer that takes itself", mb_self, R_INV, "layers[1].inputs[0]: \"layers.1\" is layers[1], not an earlier layer", 0},
    {"model", "inputs naming nothing", mb_ref_none, R_INV, "layers[0].inputs[0]: \"nowhere\" names no model input and no layer", 0},
    {"model", "inputs of a number", mb_ref_num, R_INV, "layers[0].inputs[0]: expected the name of a model input or of an earlier layer", 0},
    {"model", "inputs not a list", mb_inputs_obj, R_INV, "layers[0].inputs: expected a list of 1 to 16 names", 0},
    {"model", "add of one input", mb_add_one, R_INV, "layers[0].inputs: 1 given; add takes 2", 0},
    {"model", "attention of two inputs", mb_mha_two, R_INV, "layers[1].inputs: 2 given; multihead_attention takes 1 (self-attention) or 3", 0},
    {"model", "two layers of one name", mb_dup_name, R_INV, "layers[1].name: \"fc\" names layers[0] too (names are unique)", 0},
    {"model", "a layer named as an input", mb_name_input, R_INV, "layers[0].name: \"x\" names inputs[0] too", 0},
    {"model", "outputs naming nothing", mb_outputs_none, R_INV, "outputs[0]: \"y\" names no layer", 0},
    {"model", "outputs not a list", mb_outputs_obj, R_INV, "nn_model_build: outputs: expected a list of 1 to 16 names", 0},
    {"model", "two outputs to nn_model_build", mb_outputs_two, R_INV, "nn_model_build: outputs: 2; nn_model_build returns one", 0},
    {"model", "lstm without hidden_size", mb_lstm_hidden, R_INV, "layers[0].hidden_size: missing (a required field)", 0},
    {"model", "lstm input_size not the input's", mb_lstm_in, R_INV, "layers[0].input_size: 7, but the layer's input is [2, 5, 8]", 0},
    {"model", "lstm proj_size not below hidden_size", mb_lstm_proj, R_INV, "layers[0].proj_size: expected an integer in [0, 3]", 0},
    {"model", "rnn nonlinearity sigmoid", mb_rnn_nl, R_INV, "layers[0].nonlinearity: expected \"tanh\" or \"relu\"", 0},
    {"model", "gru with proj_size", mb_gru_field, R_INV, "layers[0].proj_size: unknown field (gru takes:", 0},
    {"model", "gru on a 2-D input", mb_gru_2d, R_INV, "layers[0]: gru takes [T, B, input_size]|[2, 4]", 0},
    {"model", "encoder activation tanh", mb_tf_act, R_INV, "layers[0].activation: expected \"relu\" or \"gelu\"", 0},
    {"model", "encoder without d_model", mb_tf_dmodel, R_INV, "layers[0].d_model: missing (a required field)", 0},
    {"model", "encoder nhead 3 of d_model 8", mb_tf_heads, R_INV, "nn_model_build: layers[0] (transformer_encoder_layer): nn_transformer_encoder_layer", 0},
    {"model", "encoder stack without num_layers", mb_tf_layers, R_INV, "layers[0].num_layers: missing", 0},
    {"model", "decoder of one input", mb_dec_one, R_INV, "layers[0].inputs: 1 given; transformer_decoder_layer takes 2", 0},
    {"model", "attention without num_heads", mb_mha_heads, R_INV, "layers[0].num_heads: missing", 0},
    {"model", "gpt n_head 3 of n_embd 8", mb_gpt_heads, R_INV, "layers[0].n_head: 3 does not divide n_embd 8", 0},
    {"model", "gpt on float32", mb_gpt_float, R_SHAPE, "nn_model_build: layers[0] (gpt): nn_gpt: idx", 0},
    {"model", "gpt_block without block_size", mb_block_size, R_INV, "layers[0].block_size: missing", 0},
    {"model", "positions fewer than the input's", mb_pos_long, R_INV, "layers[0]: takes float32 [B, T <= num_positions 4, embedding_dim 8]; its input is [2, 5, 8]", 0},
    {"model", "rms_norm eps -1", mb_rms_eps, R_INV, "layers[0].eps: expected a number in [0,", 0},
    {"model", "rms_norm with bias", mb_rms_bias, R_INV, "layers[0].bias: unknown field (rms_norm takes: type normalized_shape eps)", 0},
    {"model", "concat dim 2 of 2-D inputs", mb_concat_dim, R_INV, "layers[1].dim: expected an integer in [-2, 1]", 0},
    {"model", "a whole-shape reshape that does not hold the input", mb_reshape_whole, R_INV, "layers[0].shape: does not hold the 80 elements", 0},
    {"model", "an unknown input field", mb_input_field, R_INV, "inputs[0].size: unknown field", 0},
    {"model", "an input shape x does not have", mb_input_shape, R_INV, "inputs[0]: shape [5] (float32) per sample, but x is [2, 4]", 0},
    {"model", "an input dtype", mb_input_dtype, R_INV, "inputs[0].dtype: expected \"float32\" or \"int32\"", 0},
    {"model", "version 2", mb_version, R_INV, "version: expected 1", 0},
    {"model", "layers not a list", mb_layers_obj, R_INV, "layers: expected a list of layer objects", 0},
    {"model", "a layer that is a number", mb_layer_num, R_INV, "layers[1]: expected a layer object", 0},
    {"model", "a layer without a type", mb_no_type, R_INV, "layers[0].type: missing", 0},
    {"model", "an unknown layer type", mb_type, R_INV, "layers[1].type: unknown layer type \"dense\"", 0},
    {"model", "an unknown layer field", mb_field, R_INV, "layers[0].size: unknown field (linear takes: type name in out bias)", 0},
    {"model", "out -3", mb_out_neg, R_INV, "layers[3].out: expected a positive integer", 0},
    {"model", "out 2.5", mb_out_frac, R_INV, "layers[0].out: expected a positive integer", 0},
    {"model", "out a string", mb_out_str, R_INV, "layers[0].out: expected a positive integer", 0},
    {"model", "out missing", mb_out_missing, R_INV, "layers[0].out: missing (a required field)", 0},
    {"model", "in that is not the input's", mb_in, R_INV, "layers[0].in: 5, but the layer's input is [2, 4]", 0},
    {"model", "bias a string", mb_bias, R_INV, "layers[0].bias: expected true or false", 0},
    {"model", "an empty name", mb_name, R_INV, "layers[0].name: expected a string of 1 to 200 bytes", 0},
    {"model", "linear on a 1-D input", mb_linear_4d, R_INV, "layers[0]: linear takes [B, in]|[2]", 0},
    {"model", "conv2d without a kernel", mb_kernel, R_INV, "layers[0].kernel: missing", 0},
    {"model", "a kernel of three sizes", mb_kernel_pair, R_INV, "layers[0].kernel: expected an integer >= 1 or a list of two", 0},
    {"model", "a kernel larger than the input", mb_kernel_big, R_SHAPE, "nn_model_build: layers[0] (conv2d): nn_conv2d", 0},
    {"model", "pool stride 0", mb_pool_stride, R_INV, "layers[0].stride: expected a positive integer", 0},
    {"model", "dropout p 1.5", mb_dropout_p, R_INV, "layers[0].p: expected a number in [0, 1)", 0},
    {"model", "an activation's unknown parameter", mb_act_param, R_INV, "layers[0].slope: unknown field (leaky_relu takes: type negative_slope)", 0},
    {"model", "celu alpha 0", mb_act_invalid, R_INV, "layers[0] (celu): nn_celu", 0},
    {"model", "softmax dim 2 of a 2-D input", mb_softmax_dim, R_INV, "layers[0].dim: expected an integer in [-2, 1]", 0},
    {"model", "a reshape that does not hold a sample", mb_reshape, R_INV, "layers[0].shape: does not hold the 4 elements", 0},
    {"model", "flatten start_dim 0", mb_flatten, R_INV, "layers[0].start_dim: expected an integer in [1, 1]", 0},
    {"model", "layer_norm over dims that are not the last", mb_ln_shape, R_INV, "layers[0].normalized_shape: is not the trailing dims", 0},
    {"model", "embedding of a float input", mb_emb_float, R_INV, "layers[0]: embedding takes int32 indices", 0},
    {"model", "batch norm eps -1", mb_bn_eps, R_INV, "layers[0].eps: expected a number in [0,", 0},
    {"model", "invalid UTF-8", mb_utf8, R_INV, "invalid UTF-8", 0},
    {"model", "\\u0000 in a string", mb_escape, R_INV, "\\u0000 in a string", 0},
    {"model", "a leading zero", mb_number, R_INV, "expected ',' or '}'", 0},
    {"model", "a number out of range", mb_huge, R_INV, "number out of range", 0},
    {"model", "nesting 40 deep", mb_deep, R_INV, "nested deeper than 32 levels", 0},
    {"model", "json NULL", mb_null, R_INV, "nn_model_build: json is NULL", 0},
    {"model", "an empty text", mb_empty, R_INV, "expected a value, found the end", 0},
    {"model", "patch_embedding without embed_dim", mb_pe_embed, R_INV, "layers[0].embed_dim: missing", 0},
    {"model", "patch_embedding in_chans 1 of 3", mb_pe_chans, R_INV, "layers[0].in_chans: 1, but the layer's input is [2, 3, 8, 8]", 0},
    {"model", "patch_embedding prefix 3", mb_pe_prefix, R_INV, "layers[0].prefix: expected a string", 0},
    {"model", "patch_embedding patch 3 of 8", mb_pe_patch, R_SHAPE, "layers[0] (patch_embedding): nn_patch_embedding|patch_size 3", 0},
    {"model", "patch_embedding class_token 1", mb_pe_token, R_INV, "layers[0].class_token: expected true or false", 0},
    {"model", "conv_lstm2d without hidden_channels", mb_cl_hidden, R_INV, "layers[0].hidden_channels: missing", 0},
    {"model", "conv_lstm2d kernel_size 4", mb_cl_even, R_INV, "layers[0].kernel_size: 4 is even", 0},
    {"model", "conv_lstm2d in_channels 3 of 2", mb_cl_chans, R_INV, "layers[0].in_channels: 3, but the layer's input is [2, 3, 2, 5, 5]", 0},
    {"model", "conv_lstm2d padding", mb_cl_field, R_INV, "layers[0].padding: unknown field (conv_lstm2d takes:", 0},
    {"model", "conv_lstm2d on a 4-D input", mb_cl_rank, R_SHAPE, "layers[0] (conv_lstm2d): nn_conv_lstm2d|5-D", 0},
};

void suite_model(const t_env *e) {
    T_RUN(e, test_roundtrip, test_hand_written, test_widened, test_errors, test_graph);
    t_bad_rows(e, model_bad, (int)(sizeof model_bad / sizeof model_bad[0]));
}
