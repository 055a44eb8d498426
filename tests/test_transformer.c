/* The transformer layers (src/layers/transformer.c): nanoGPT's block and model against a
   double-precision reference written here, through the op checker (forward values, the
   gradients of every parameter by central differences, CPU parity on OpenCL devices; the
   model's wte gets the sum of the embedding's and the tied head's gradients); decoding one
   token at a time against the key/value cache against the model's full forward; refusals. */
#include "test.h"
#include "bad_rows.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TF_C 8
#define TF_H 2

static nn_gpt_config tf_cfg(long vocab, long block, int layers) {
    nn_gpt_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = vocab;
    c.block_size = block;
    c.n_layer = layers;
    c.n_head = TF_H;
    c.n_embd = TF_C;
    return c;
}

/* y[r, o] = b[o] + sum_i W[o, i] x[r, i] */
static void tf_dense(const double *x, const double *W, const double *b, long rows, long in, long out, double *y) {
    long r, o, i;
    for (r = 0; r < rows; r++)
        for (o = 0; o < out; o++) {
            double s = b ? b[o] : 0;
            for (i = 0; i < in; i++) s += W[o * in + i] * x[r * in + i];
            y[r * out + o] = s;
        }
}

/* layer norm over rows of C, eps 1e-5, biased variance */
static void tf_ln(const double *x, const double *w, const double *b, long rows, long C, double *y) {
    long r, i;
    for (r = 0; r < rows; r++) {
        double m = 0, v = 0;
        for (i = 0; i < C; i++) m += x[r * C + i];
        m /= (double)C;
        for (i = 0; i < C; i++) v += (x[r * C + i] - m) * (x[r * C + i] - m);
        v /= (double)C;
        for (i = 0; i < C; i++) y[r * C + i] = (x[r * C + i] - m) / sqrt(v + 1e-5) * w[i] + b[i];
    }
}

/* one block on x [B, T, C] in place; p: ln_1 w, b, c_attn W, b, c_proj W, b, ln_2 w, b,
   c_fc W, b, mlp.c_proj W, b */
static void tf_block_ref(double *x, long B, long T, double *const *p) {
    const long C = TF_C, H = TF_H, D = TF_C / TF_H, R = B * T;
    double a[64 * TF_C], qkv[64 * 3 * TF_C], y[64 * TF_C], o[64 * TF_C], f[64 * 4 * TF_C];
    long b, h, i, j, d, r;
    tf_ln(x, p[0], p[1], R, C, a);
    tf_dense(a, p[2], p[3], R, C, 3 * C, qkv);
    for (b = 0; b < B; b++)
        for (h = 0; h < H; h++)
            for (i = 0; i < T; i++) {
                double s[64], mx = -1e300, z = 0;
                const double *q = qkv + (b * T + i) * 3 * C + h * D;
                for (j = 0; j <= i; j++) {
                    const double *k = qkv + (b * T + j) * 3 * C + C + h * D;
                    s[j] = 0;
                    for (d = 0; d < D; d++) s[j] += q[d] * k[d];
                    s[j] /= sqrt((double)D);
                    if (s[j] > mx) mx = s[j];
                }
                for (j = 0; j <= i; j++) z += (s[j] = exp(s[j] - mx));
                for (d = 0; d < D; d++) {
                    double acc = 0;
                    for (j = 0; j <= i; j++) acc += s[j] / z * qkv[(b * T + j) * 3 * C + 2 * C + h * D + d];
                    y[(b * T + i) * C + h * D + d] = acc;
                }
            }
    tf_dense(y, p[4], p[5], R, C, C, o);
    for (r = 0; r < R * C; r++) x[r] += o[r];
    tf_ln(x, p[6], p[7], R, C, a);
    tf_dense(a, p[8], p[9], R, C, 4 * C, f);
    for (r = 0; r < R * 4 * C; r++) f[r] = 0.5 * f[r] * (1 + erf(f[r] / sqrt(2.0)));
    tf_dense(f, p[10], p[11], R, 4 * C, C, o);
    for (r = 0; r < R * C; r++) x[r] += o[r];
}

static void tf_block_params(spec *c, const char *pre) {
    static const char *sfx[12] = {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                                  "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                                  "mlp.c_proj.weight", "mlp.c_proj.bias"};
    const long C = TF_C;
    nn_shape sh[12];
    char nm[64];
    int i;
    sh[0] = sh[1] = sh[5] = sh[6] = sh[7] = sh[11] = nn_shape1(C);
    sh[2] = nn_shape2(3 * C, C);
    sh[3] = nn_shape1(3 * C);
    sh[4] = nn_shape2(C, C);
    sh[8] = nn_shape2(4 * C, C);
    sh[9] = nn_shape1(4 * C);
    sh[10] = nn_shape2(C, 4 * C);
    for (i = 0; i < 12; i++) {
        snprintf(nm, sizeof nm, "%s.%s", pre, sfx[i]);
        if (i == 0 || i == 6) in_param(c, nm, sh[i], 0.5, 1.5); /* norm weights */
        else in_param(c, nm, sh[i], -0.5, 0.5);
    }
}

/* a case of the op checker labelled "layer NAME" */
static spec l_mk_tf(const char *name, build_fn b, ref_fn r, nn_shape out) {
    spec c = mk(name, b, r, out);
    c.kind = "layer";
    return c;
}

/* ---- the block ---- */
static nn_tensor b_block(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_gpt_config cfg = tf_cfg(5, 7, 1);
    (void)c;
    return nn_gpt_block(g, in[0], &cfg, "blk");
}
static void r_block(const spec *c, double *const *t, double *out) {
    long B = c->shape[0].dim[0], T = c->shape[0].dim[1];
    memcpy(out, t[0], (size_t)(B * T * TF_C) * sizeof(double));
    tf_block_ref(out, B, T, t + 1);
}

/* ---- the model: idx [B, T] -> logits [B*T, V], one layer, the head tied to wte ---- */
#define TF_V 7
#define TF_BLOCK 5
static nn_tensor b_gpt(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_gpt_config cfg = tf_cfg(TF_V, TF_BLOCK, 1);
    (void)c;
    return nn_gpt(g, in[0], &cfg);
}
static void r_gpt(const spec *c, double *const *t, double *out) {
    long B = c->shape[0].dim[0], T = c->shape[0].dim[1], R = B * T, r, i;
    double x[64 * TF_C], a[64 * TF_C];
    const double *wte = t[1], *wpe = t[2];
    for (r = 0; r < R; r++)
        for (i = 0; i < TF_C; i++) x[r * TF_C + i] = wte[(long)t[0][r] * TF_C + i] + wpe[(r % T) * TF_C + i];
    tf_block_ref(x, B, T, t + 3);
    tf_ln(x, t[15], t[16], R, TF_C, a);
    tf_dense(a, wte, NULL, R, TF_C, TF_V, out);
}

/* ---- decoding against the cache = the full forward ---- */
static void tf_decode(const t_env *e) {
    const long V = 11, TB = 7;
    nn_gpt_config cfg = tf_cfg(V, TB, 2);
    nn_graph *g = NULL, *d = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor idx, full, tok, pos, out, caches[4];
    int32_t toks[7] = {3, 0, 10, 5, 5, 1, 7};
    float want[7 * 11], got[11];
    int p, k, round;
    double worst = 0;
    if (!t_begin(e, "layer gpt decode with the kv cache = full forward")) return;
    memset(&gd, 0, sizeof gd);
    gd.seed = 7;
    memset(&cd, 0, sizeof cd);
    if (T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) {
        idx = nn_input(g, "idx", NN_I32, nn_shape2(1, TB));
        full = nn_gpt(g, idx, &cfg);
        nn_graph_output(g, full);
        if (T_OK(nn_graph_compile(g, &cd), e->ctx) && T_OK(nn_tensor_write(g, idx, toks, sizeof toks), e->ctx) &&
            T_OK(nn_graph_forward(g), e->ctx) && T_OK(nn_tensor_read(g, full, want, sizeof want), e->ctx)) {
            gd.share_params = g;
            gd.eval = 1;
            if (T_OK(nn_graph_create(e->ctx, &gd, &d), e->ctx)) {
                tok = nn_input(d, "tok", NN_I32, nn_shape1(1));
                pos = nn_input(d, "pos", NN_I32, nn_shape1(1));
                out = nn_gpt_decode(d, tok, pos, &cfg, caches);
                nn_graph_output(d, out);
                if (T_OK(nn_graph_compile(d, &cd), e->ctx))
                    for (round = 0; round < 2; round++) { /* the second after zeroing the caches */
                        for (k = 0; k < 4 && round; k++) T_OK(nn_tensor_fill(d, caches[k], 0.0f), e->ctx);
                        for (p = 0; p < TB; p++) {
                            int32_t pv = p;
                            if (!T_OK(nn_tensor_write(d, tok, &toks[p], 4), e->ctx) || !T_OK(nn_tensor_write(d, pos, &pv, 4), e->ctx) ||
                                !T_OK(nn_graph_forward(d), e->ctx) || !T_OK(nn_tensor_read(d, out, got, sizeof got), e->ctx))
                                break;
                            for (k = 0; k < V; k++) {
                                double err = fabs((double)got[k] - want[p * V + k]) / (fabs(want[p * V + k]) + 1e-3);
                                if (err > worst) worst = err;
                            }
                        }
                    }
                T_CHECK(worst < 1e-4, "decoded logits differ from the full forward's by %.3g relative", worst);
            }
        }
    }
    nn_graph_destroy(d);
    nn_graph_destroy(g);
    t_end();
}

/* ---- refusals ---- */
B(gpt_idx_float, nn_gpt(g, F(g, S2(2, 3)), &(nn_gpt_config){5, 4, 1, 2, 8, 0, 0, NULL}))
B(gpt_too_long, nn_gpt(g, I(g, S2(2, 5)), &(nn_gpt_config){5, 4, 1, 2, 8, 0, 0, NULL}))
B(gpt_heads, nn_gpt(g, I(g, S2(2, 3)), &(nn_gpt_config){5, 4, 1, 2, 9, 0, 0, NULL}))
B(gpt_no_cfg, nn_gpt(g, I(g, S2(2, 3)), NULL))
B(gpt_dropout, nn_gpt_block(g, F(g, S3(2, 3, 8)), &(nn_gpt_config){5, 4, 1, 2, 8, 1.0f, 0, NULL}, "b"))
B(gpt_block_width, nn_gpt_block(g, F(g, S3(2, 3, 6)), &(nn_gpt_config){5, 4, 1, 2, 8, 0, 0, NULL}, "b"))
B(gpt_block_name, nn_gpt_block(g, F(g, S3(2, 3, 8)), &(nn_gpt_config){5, 4, 1, 2, 8, 0, 0, NULL}, NULL))
B(gpt_decode_pos, nn_gpt_decode(g, I(g, S1(2)), nn_input(g, "p", NN_I32, S1(2)), &(nn_gpt_config){5, 4, 1, 2, 8, 0, 0, NULL}, NULL))

static const bad_row tf_bad[] = {
    {"transformer", "gpt idx float", gpt_idx_float, R_SHAPE, "nn_gpt|[2, 3] float32", 0},
    {"transformer", "gpt T > block_size", gpt_too_long, R_SHAPE, "nn_gpt|[2, 5]|block_size 4", 0},
    {"transformer", "gpt n_embd 9, 2 heads", gpt_heads, R_INV, "nn_gpt|n_embd 9", 0},
    {"transformer", "gpt no config", gpt_no_cfg, R_INV, "nn_gpt|config", 0},
    {"transformer", "gpt_block dropout 1", gpt_dropout, R_INV, "nn_gpt_block|dropout 1", 0},
    {"transformer", "gpt_block x [2, 3, 6]", gpt_block_width, R_SHAPE, "nn_gpt_block|[2, 3, 6]", 0},
    {"transformer", "gpt_block no name", gpt_block_name, R_INV, "nn_gpt_block|name", 0},
    {"transformer", "gpt_decode pos [2]", gpt_decode_pos, R_SHAPE, "nn_gpt_decode|[2]", 0},
};

void suite_transformer(const t_env *e) {
    spec c;

    c = l_mk_tf("gpt_block [2, 3, 8], 2 heads", b_block, r_block, nn_shape3(2, 3, TF_C));
    in_fr(&c, nn_shape3(2, 3, TF_C), -1, 1);
    tf_block_params(&c, "blk");
    check_case(e, &c);

    c = l_mk_tf("gpt [2, 3] tokens, 1 layer, head tied to wte", b_gpt, r_gpt, nn_shape2(2 * 3, TF_V));
    in_i(&c, nn_shape2(2, 3), 0, TF_V);
    in_param(&c, "transformer.wte.weight", nn_shape2(TF_V, TF_C), -1, 1);
    in_param(&c, "transformer.wpe.weight", nn_shape2(TF_BLOCK, TF_C), -1, 1);
    tf_block_params(&c, "transformer.h.0");
    in_param(&c, "transformer.ln_f.weight", nn_shape1(TF_C), 0.5, 1.5);
    in_param(&c, "transformer.ln_f.bias", nn_shape1(TF_C), -0.5, 0.5);
    check_case(e, &c);

    tf_decode(e);
    t_bad_rows(e, tf_bad, (int)(sizeof tf_bad / sizeof tf_bad[0]));
}
