/* libFuzzer target for model files (src/files/json.c, src/files/model.c): `make fuzz`
   (clang, -DNN_FUZZ). Each input goes through
   1. nn__json_parse alone, with a parse's invariants checked (no more values than bytes,
      every link inside the array, each container's count its children's);
   2. as a model's JSON (nn_model_desc.json) loaded against a small valid model file: the
      schema's checks, the builders and the weights' matching, as a training graph or,
      when the first byte is odd, an inference graph that compiles;
   3. as a whole model file (nn__model_load_mem): the safetensors parser, the metadata's
      "nn.model" string, then 2.'s path with the file's own JSON.
   JSON whose integers exceed 4096, or whose sequence layers' sizes multiply past 2^20
   (widths counted squared: a GPT of 1024 layers of 1024 is a legal 50 GB allocation), is
   parsed but not built (such a model is a legal gigabyte allocation, not a bug). Seeds:
   one per layer family, each with the seed file's fc1 (in 4, out 3) so that its weights
   load, and a model of two inputs and two outputs saved as a whole file. NN_FUZZ_WRITE_SEEDS=DIR ./tests/fuzz_model writes
   the seed corpus. Without -DNN_FUZZ this file is empty. */
#if defined(NN_FUZZ)
#define NN_IMPLEMENTATION
#include "../nn.h"
#include "fuzz.h"
#include <stdio.h>
#include <unistd.h>

static unsigned char *fz_file; /* a valid model file: the MLP of fz_mlp_json, saved */
static size_t fz_len;
static unsigned char *fz_graph_file; /* fz_graph_json's model (two inputs, two outputs), saved */
static size_t fz_graph_len;

static const char fz_mlp_json[] =
    "{\"format\": \"nn.model\", \"version\": 1,\n"
    " \"inputs\": [{\"name\": \"x\", \"shape\": [4], \"dtype\": \"float32\"}],\n"
    " \"layers\": [{\"type\": \"linear\", \"name\": \"fc1\", \"in\": 4, \"out\": 3},\n"
    "  {\"type\": \"leaky_relu\", \"negative_slope\": 0.1}, {\"type\": \"dropout\", \"p\": 0.5},\n"
    "  {\"type\": \"linear\", \"name\": \"fc2\", \"out\": 2, \"bias\": false}, {\"type\": \"log_softmax\"}]}\n";
static const char fz_cnn_json[] =
    "{\"inputs\": [{\"shape\": [1, 6, 6]}], \"layers\": [\n"
    "  {\"type\": \"conv2d\", \"name\": \"c\", \"out\": 2, \"kernel\": [3, 2], \"padding\": 1},\n"
    "  {\"type\": \"batch_norm2d\", \"name\": \"bn\"}, {\"type\": \"max_pool2d\", \"kernel\": 2, \"ceil_mode\": true},\n"
    "  {\"type\": \"avg_pool2d\", \"kernel\": 2, \"stride\": 1}, {\"type\": \"reshape\", \"shape\": [2, -1]},\n"
    "  {\"type\": \"layer_norm\", \"name\": \"ln\", \"normalized_shape\": 6}, {\"type\": \"flatten\"},\n"
    "  {\"type\": \"softplus\", \"beta\": 2}, {\"type\": \"softmax\", \"dim\": 1}]}\n";
static const char fz_emb_json[] =
    "{\"inputs\": [{\"name\": \"tok\", \"shape\": [3], \"dtype\": \"int32\"}], \"layers\": [\n"
    "  {\"type\": \"embedding\", \"name\": \"e\", \"num_embeddings\": 7, \"embedding_dim\": 2, \"padding_idx\": -1},\n"
    "  {\"type\": \"reshape\", \"shape\": [2, 3]}, {\"type\": \"conv1d\", \"name\": \"c1\", \"in\": 2, \"out\": 1, \"kernel\": 2},\n"
    "  {\"type\": \"hardtanh\", \"min_val\": -0.5, \"max_val\": 0.5}]}\n";

/* The sequence tier: a GPT; embedding, positions, a GPT block, RMS norm, attention, the
   recurrent layers, a linear layer on [B, T, C], a reshape of the batch */
static const char fz_gpt_json[] =
    "{\"inputs\": [{\"name\": \"idx\", \"shape\": [6], \"dtype\": \"int32\"}], \"layers\": [\n"
    "  {\"type\": \"gpt\", \"vocab_size\": 4, \"block_size\": 8, \"n_layer\": 2, \"n_head\": 2, \"n_embd\": 8, \"dropout\": 0.1},\n"
    "  {\"type\": \"linear\", \"name\": \"fc1\", \"in\": 4, \"out\": 3}]}\n";
static const char fz_seq_json[] =
    "{\"inputs\": [{\"name\": \"tok\", \"shape\": [5], \"dtype\": \"int32\"}], \"layers\": [\n"
    "  {\"type\": \"embedding\", \"name\": \"wte\", \"num_embeddings\": 7, \"embedding_dim\": 8},\n"
    "  {\"type\": \"position_embedding\", \"name\": \"wpe\", \"num_positions\": 8, \"embedding_dim\": 8},\n"
    "  {\"type\": \"gpt_block\", \"name\": \"h.0\", \"n_embd\": 8, \"n_head\": 2, \"block_size\": 8},\n"
    "  {\"type\": \"rms_norm\", \"name\": \"rms\", \"normalized_shape\": [8], \"eps\": null},\n"
    "  {\"type\": \"multihead_attention\", \"name\": \"attn\", \"embed_dim\": 8, \"num_heads\": 2, \"batch_first\": true, \"is_causal\": true},\n"
    "  {\"type\": \"lstm\", \"name\": \"lstm\", \"input_size\": 8, \"hidden_size\": 6, \"batch_first\": true, \"bidirectional\": true, \"proj_size\": 3},\n"
    "  {\"type\": \"gru\", \"name\": \"gru\", \"hidden_size\": 5, \"num_layers\": 2, \"batch_first\": true, \"dropout\": 0.2},\n"
    "  {\"type\": \"rnn\", \"name\": \"rnn\", \"hidden_size\": 4, \"nonlinearity\": \"relu\", \"batch_first\": true, \"bias\": false},\n"
    "  {\"type\": \"linear\", \"name\": \"fc1\", \"in\": 4, \"out\": 3},\n"
    "  {\"type\": \"reshape\", \"shape\": [-1, 3], \"include_batch\": true}]}\n";
/* A graph: two inputs, the transformer layers and stacks, merges, two outputs */
static const char fz_graph_json[] =
    "{\"inputs\": [{\"name\": \"src\", \"shape\": [3, 4]}, {\"name\": \"tgt\", \"shape\": [2, 4]}], \"layers\": [\n"
    "  {\"type\": \"transformer_encoder\", \"name\": \"enc\", \"d_model\": 4, \"batch_first\": true, \"nhead\": 2, \"num_layers\": 1, \"dim_feedforward\": 8},\n"
    "  {\"type\": \"transformer_encoder_layer\", \"name\": \"enc2\", \"d_model\": 4, \"batch_first\": true, \"nhead\": 1, \"dim_feedforward\": 6,"
    " \"activation\": \"gelu\", \"norm_first\": true, \"is_causal\": true},\n"
    "  {\"type\": \"transformer_decoder_layer\", \"name\": \"dec\", \"inputs\": [\"tgt\", \"enc2\"], \"d_model\": 4, \"batch_first\": true, \"nhead\": 2,"
    " \"dim_feedforward\": 8, \"dropout\": 0, \"tgt_is_causal\": true},\n"
    "  {\"type\": \"transformer_decoder\", \"name\": \"dec2\", \"inputs\": [\"dec\", \"enc\"], \"d_model\": 4, \"batch_first\": true, \"nhead\": 2,"
    " \"num_layers\": 1, \"dim_feedforward\": 8, \"layer_norm_eps\": 0.001},\n"
    "  {\"type\": \"add\", \"name\": \"res\", \"inputs\": [\"dec\", \"dec2\"]},\n"
    "  {\"type\": \"mul\", \"inputs\": [\"res\", \"tgt\"]}, {\"type\": \"sub\", \"inputs\": [\"layers.5\", \"dec\"]},\n"
    "  {\"type\": \"concat\", \"name\": \"cat\", \"inputs\": [\"src\", \"enc\", \"enc2\"], \"dim\": 0},\n"
    "  {\"type\": \"linear\", \"name\": \"fc1\", \"inputs\": [\"layers.6\"], \"in\": 4, \"out\": 3}],\n"
    " \"outputs\": [\"fc1\", \"cat\"]}\n";

/* Vision: a ViT patch embedding on images, a ConvLSTM2D on clips, two outputs */
static const char fz_vision_json[] =
    "{\"inputs\": [{\"name\": \"img\", \"shape\": [3, 8, 8]}, {\"name\": \"clip\", \"shape\": [2, 1, 4, 4]}], \"layers\": [\n"
    "  {\"type\": \"patch_embedding\", \"name\": \"pe\", \"inputs\": [\"img\"], \"in_chans\": 3, \"patch_size\": 4, \"embed_dim\": 6,"
    " \"class_token\": true, \"pos_embed\": true, \"prefix\": \"vit\"},\n"
    "  {\"type\": \"conv_lstm2d\", \"name\": \"cl\", \"inputs\": [\"clip\"], \"in_channels\": 1, \"hidden_channels\": 2, \"kernel_size\": 3,"
    " \"bias\": false}],\n"
    " \"outputs\": [\"pe\", \"cl\"]}\n";

/* 1 when every number of j is at most 4096 in magnitude and the sequence layers' sizes
   multiply to at most 2^20, widths squared (a small model) */
static int fz_small(const nn__json *j) {
    static const char *const sq[] = {"hidden_size", "n_embd", "d_model", "embed_dim", "dim_feedforward", "embedding_dim", "kdim", "vdim",
                                     "num_positions", "vocab_size", "num_embeddings", "hidden_channels", NULL};
    static const char *const lin[] = {"n_layer", "num_layers", "block_size", "n_head", "nhead", "num_heads", "proj_size", NULL};
    double cost = 1;
    int i, c, k;
    for (i = 0; i < j->n; i++)
        if (j->v[i].type == NN__J_NUM && !(j->v[i].num >= -4096.0 && j->v[i].num <= 4096.0)) return 0;
    for (i = 0; i < j->n; i++)
        if (j->v[i].type == NN__J_OBJ)
            for (c = j->v[i].first; c >= 0; c = j->v[c].next) {
                double v = j->v[c].type == NN__J_NUM && j->v[c].num > 1 ? j->v[c].num : 1;
                for (k = 0; sq[k]; k++)
                    if (strcmp(nn__json_key(j, c), sq[k]) == 0) cost *= v * v;
                for (k = 0; lin[k]; k++)
                    if (strcmp(nn__json_key(j, c), lin[k]) == 0) cost *= v;
            }
    return cost <= 1048576.0;
}

static void fz_parse_checks(const uint8_t *data, size_t size, nn__json *j, nn_result r, const char *err) {
    int i;
    if (r != NN_OK) {
        fz_check((r == NN_ERR_INVALID_ARGUMENT || r == NN_ERR_OUT_OF_MEMORY) && err[0] != 0 && j->v == NULL && j->n == 0);
        return;
    }
    fz_check(j->n >= 1 && (size_t)j->n <= size);
    for (i = 0; i < j->n; i++) {
        const nn__jv *v = &j->v[i];
        int c, count = 0;
        fz_check(v->type >= NN__J_NULL && v->type <= NN__J_OBJ);
        fz_check(v->next == -1 || (v->next > i && v->next < j->n));
        if (v->type == NN__J_STR) fz_check(v->str + v->len < j->pn + 1 && strlen(j->pool + v->str) == v->len);
        for (c = v->first; c >= 0; c = j->v[c].next) {
            fz_check(c > i && c < j->n);
            if (v->type == NN__J_OBJ) fz_check(j->v[c].key < j->pn);
            count++;
        }
        fz_check(count == v->n && (v->type == NN__J_ARR || v->type == NN__J_OBJ || v->n == 0));
    }
    (void)data;
}

/* text (NUL-terminated) as the model of the seed file: a graph or an error, nothing else */
static void fz_load(const char *text, const unsigned char *file, size_t len, int train) {
    nn_model_desc md;
    nn_graph *g = (nn_graph *)&md;
    nn_tensor x = NN_NONE, y = NN_NONE;
    nn_result r;
    memset(&md, 0, sizeof md);
    md.json = text;
    md.train = train;
    md.batch = 2;
    md.fresh_mismatched = 1;
    md.input = &x;
    md.output = &y;
    r = nn__model_load_mem(fz_ctx, "fuzz-input", file, len, &md, &g);
    if (r == NN_OK) {
        fz_check(g != NULL && x.id > 0 && y.id > 0);
        if (!train) fz_check(nn_graph_forward(g) == NN_OK);
        nn_graph_destroy(g);
    } else
        fz_check(g == NULL && nn_context_last_error(fz_ctx)[0] != 0);
}

static int fz_write_seeds(const char *dir) {
    return fz_write(dir, "mlp.json", fz_mlp_json, sizeof fz_mlp_json - 1) && fz_write(dir, "cnn.json", fz_cnn_json, sizeof fz_cnn_json - 1) &&
           fz_write(dir, "emb.json", fz_emb_json, sizeof fz_emb_json - 1) && fz_write(dir, "mlp.safetensors", fz_file, fz_len) &&
           fz_write(dir, "gpt.json", fz_gpt_json, sizeof fz_gpt_json - 1) && fz_write(dir, "seq.json", fz_seq_json, sizeof fz_seq_json - 1) &&
           fz_write(dir, "graph.json", fz_graph_json, sizeof fz_graph_json - 1) &&
           fz_write(dir, "vision.json", fz_vision_json, sizeof fz_vision_json - 1) &&
           fz_write(dir, "graph.safetensors", fz_graph_file, fz_graph_len);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    nn_graph *g = NULL;
    nn_tensor x, y;
    char path[] = "/tmp/nn-fuzz-model-XXXXXX";
    int fd;
    (void)argc;
    (void)argv;
    if (!fz_context() || nn_graph_create(fz_ctx, NULL, &g) != NN_OK) return 1;
    x = nn_input(g, "x", NN_F32, nn_shape2(2, 4));
    y = nn_model_build(g, x, fz_mlp_json);
    fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    if (y.id <= 0 || nn_model_save(g, x, y, path) != NN_OK || nn__read_file(fz_ctx, path, &fz_file, &fz_len) != NN_OK) return 1;
    nn_graph_destroy(g);
    { /* the graph model, saved whole (its JSON as nn_model_json describes the built graph) */
        nn_tensor xs[2], ys[2];
        int n = 0;
        g = NULL;
        if (nn_graph_create(fz_ctx, NULL, &g) != NN_OK) return 1;
        xs[0] = nn_input(g, "src", NN_F32, nn_shape3(2, 3, 4));
        xs[1] = nn_input(g, "tgt", NN_F32, nn_shape3(2, 2, 4));
        if (nn_model_build_io(g, xs, 2, fz_graph_json, ys, 2, &n) != NN_OK || n != 2 || nn_graph_output(g, ys[0]) != NN_OK ||
            nn_graph_output(g, ys[1]) != NN_OK || nn_model_save(g, NN_NONE, NN_NONE, path) != NN_OK ||
            nn__read_file(fz_ctx, path, &fz_graph_file, &fz_graph_len) != NN_OK)
            return 1;
        nn_graph_destroy(g);
    }
    remove(path);
    fz_seeds("model", fz_write_seeds);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nn__json j;
    nn__st_file f;
    char err[256], *text, *meta = NULL;
    int train = size > 0 && !(data[0] & 1);
    nn_result r = nn__json_parse((const char *)data, size, NN__JSON_MAX_BYTES, &j, err, sizeof err);
    fz_parse_checks(data, size, &j, r, err);
    if (r == NN_OK && fz_small(&j) && memchr(data, 0, size) == NULL && (text = (char *)malloc(size + 1)) != NULL) {
        memcpy(text, data, size);
        text[size] = 0;
        fz_load(text, fz_file, fz_len, train);
        free(text);
    }
    nn__json_free(&j);
    /* the input as a whole file: its own "nn.model", when small */
    if (nn__st_parse(data, size, &f, err, sizeof err) != NN_OK) return 0;
    if (nn__model_meta(data, &f, &meta, err, sizeof err) == NN_OK) {
        if (nn__json_parse(meta, strlen(meta), NN__JSON_MAX_BYTES, &j, err, sizeof err) == NN_OK) {
            if (fz_small(&j)) {
                nn_graph *g = NULL;
                nn_model_desc md;
                memset(&md, 0, sizeof md);
                md.train = train;
                r = nn__model_load_mem(fz_ctx, "fuzz-input", data, size, &md, &g);
                fz_check((r == NN_OK) == (g != NULL));
                nn_graph_destroy(g);
            }
            nn__json_free(&j);
        }
        NN_FREE(meta);
    }
    nn__st_free(&f);
    return 0;
}
#else
typedef int nn_fuzz_model_needs_NN_FUZZ; /* ISO C wants a declaration in every file */
#endif
