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


/* ---- generation: nn_gpt_prefill (the prompt, and the kept window when the context is
   full, in one pass) with nn_gpt_decode gives the tokens of running the whole window for
   each token (greedy: drawn on the device, against the host's argmax of nn_gpt's
   logits), and the prefill's logits are nn_gpt's on the same idx, bitwise ---- */
#define TFG_V 11
#define TFG_TB 9   /* block_size */
#define TFG_KEEP 4 /* tokens kept when the context is full */
#define TFG_L 3    /* the prompt */
#define TFG_N 16   /* tokens generated: two refills */
typedef struct tfg_prefill {
    nn_graph *g;
    nn_tensor idx, next, logits, caches[4];
} tfg_prefill;

static int tfg_prefill_make(const t_env *e, nn_graph *train, const nn_gpt_config *cfg, int T, tfg_prefill *p) {
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_sample_desc sd;
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
    memset(&sd, 0, sizeof sd);
    gd.share_params = train;
    gd.eval = 1;
    if (!T_OK(nn_graph_create(e->ctx, &gd, &p->g), e->ctx)) return 0;
    p->idx = nn_input(p->g, "idx", NN_I32, nn_shape2(1, T));
    p->logits = nn_gpt_prefill(p->g, p->idx, cfg, p->caches);
    p->next = nn_sample_logits(p->g, nn_slice(p->g, p->logits, 0, T - 1, 1), &sd);
    nn_graph_output(p->g, p->logits);
    nn_graph_output(p->g, p->next);
    return T_OK(nn_graph_compile(p->g, &cd), e->ctx);
}

/* win [T] through p: the next token, and p's caches copied into the decoder's */
static int tfg_prefill_run(const t_env *e, tfg_prefill *p, const int32_t *win, int T, nn_graph *d, const nn_tensor *caches,
                           int32_t *next) {
    static float kv[TFG_TB * TF_C];
    int k;
    if (!T_OK(nn_tensor_write(p->g, p->idx, win, (size_t)T * 4), e->ctx) || !T_OK(nn_graph_forward(p->g), e->ctx) ||
        !T_OK(nn_tensor_read(p->g, p->next, next, 4), e->ctx))
        return 0;
    for (k = 0; k < 4; k++)
        if (!T_OK(nn_tensor_read(p->g, p->caches[k], kv, sizeof kv), e->ctx) || !T_OK(nn_tensor_write(d, caches[k], kv, sizeof kv), e->ctx))
            return 0;
    return 1;
}

/* nn_gpt on win [T] (the graph of that T): its logits [T, V] */
static int tfg_full(const t_env *e, nn_graph *train, const nn_gpt_config *cfg, const int32_t *win, int T, float *logits) {
    nn_graph *f = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor idx, y;
    int ok = 0;
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
    gd.share_params = train;
    gd.eval = 1;
    if (T_OK(nn_graph_create(e->ctx, &gd, &f), e->ctx)) {
        idx = nn_input(f, "idx", NN_I32, nn_shape2(1, T));
        y = nn_gpt(f, idx, cfg);
        nn_graph_output(f, y);
        ok = T_OK(nn_graph_compile(f, &cd), e->ctx) && T_OK(nn_tensor_write(f, idx, win, (size_t)T * 4), e->ctx) &&
             T_OK(nn_graph_forward(f), e->ctx) && T_OK(nn_tensor_read(f, y, logits, (size_t)T * TFG_V * 4), e->ctx);
    }
    nn_graph_destroy(f);
    return ok;
}

static void tf_prefill(const t_env *e) {
    nn_gpt_config cfg = tf_cfg(TFG_V, TFG_TB, 2);
    nn_graph *g = NULL, *d = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_sample_desc sd;
    nn_tensor tok, pos, next, dl, caches[4];
    tfg_prefill pp, pk;
    static float wantl[TFG_L + TFG_N][TFG_V];
    float gl[TFG_V];
    double worst = 0;
    static const int32_t prompt[TFG_L] = {3, 0, 10};
    int32_t want[TFG_L + TFG_N], got[TFG_L + TFG_N], drawn;
    float lg[TFG_TB * TFG_V], lp[TFG_TB * TFG_V];
    int nh, s, c, k, p, np = 0, ok = 1, same_bits = 1;
    if (!t_begin(e, "layer gpt prefill + decode = the whole window's greedy tokens")) return;
    memset(&pp, 0, sizeof pp);
    memset(&pk, 0, sizeof pk);
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
    memset(&sd, 0, sizeof sd);
    gd.seed = 11;
    if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) goto done;
    nn_graph_output(g, nn_gpt(g, nn_input(g, "idx", NN_I32, nn_shape2(1, TFG_TB)), &cfg)); /* the parameters */
    if (!T_OK(nn_graph_compile(g, &cd), e->ctx) || !T_OK(nn_graph_param_count(g, &np), e->ctx)) goto done;
    for (k = 0; k < np; k++) { /* weights of about 0.3, so that the attention decides tokens, not the residual alone */
        nn_param_info pi;
        static float w[4 * TF_C * TF_C];
        int64_t i;
        uint32_t st = 1234u + (uint32_t)k;
        if (!T_OK(nn_graph_param_at(g, k, &pi), e->ctx) || pi.numel > 4 * TF_C * TF_C) goto done;
        for (i = 0; i < pi.numel; i++) {
            st = st * 1664525u + 1013904223u;
            w[i] = (float)(st >> 8) / 16777216.0f - 0.5f;
            if (strstr(pi.name, "ln_") && strstr(pi.name, ".weight")) w[i] += 1.0f;
        }
        if (!T_OK(nn_tensor_write(g, pi.tensor, w, (size_t)pi.numel * 4), e->ctx)) goto done;
    }
    /* the reference: the window since the last refill run whole for every token */
    memcpy(want, prompt, sizeof prompt);
    for (nh = TFG_L, s = 0; nh < TFG_L + TFG_N && ok; nh++) {
        int best = 0;
        if (nh - s > TFG_TB) s = nh - TFG_KEEP;
        ok = tfg_full(e, g, &cfg, want + s, nh - s, lg);
        for (k = 1; k < TFG_V; k++)
            if (lg[(nh - s - 1) * TFG_V + k] > lg[(nh - s - 1) * TFG_V + best]) best = k;
        want[nh] = best;
        memcpy(wantl[nh], lg + (nh - s - 1) * TFG_V, sizeof wantl[nh]);
    }
    /* the cache: the prompt prefilled, one token a run, the last KEEP prefilled at a full context */
    gd.share_params = g;
    gd.eval = 1;
    if (!ok || !T_OK(nn_graph_create(e->ctx, &gd, &d), e->ctx)) goto done;
    tok = nn_input(d, "tok", NN_I32, nn_shape1(1));
    pos = nn_input(d, "pos", NN_I32, nn_shape1(1));
    dl = nn_gpt_decode(d, tok, pos, &cfg, caches);
    next = nn_sample_logits(d, dl, &sd);
    nn_graph_output(d, dl);
    nn_graph_output(d, next);
    if (!T_OK(nn_graph_compile(d, &cd), e->ctx) || !tfg_prefill_make(e, g, &cfg, TFG_L, &pp) ||
        !tfg_prefill_make(e, g, &cfg, TFG_KEEP, &pk))
        goto done;
    memcpy(got, prompt, sizeof prompt);
    if (!tfg_prefill_run(e, &pp, got, TFG_L, d, caches, &drawn)) goto done;
    /* the prefill's logits are nn_gpt's, bitwise */
    if (!T_OK(nn_tensor_read(pp.g, pp.logits, lp, TFG_L * TFG_V * 4), e->ctx) || !tfg_full(e, g, &cfg, prompt, TFG_L, lg)) goto done;
    same_bits = memcmp(lp, lg, TFG_L * TFG_V * 4) == 0;
    T_CHECK(same_bits, "nn_gpt_prefill's logits are not nn_gpt's bits");
    memcpy(gl, lp + (TFG_L - 1) * TFG_V, sizeof gl);
    for (nh = TFG_L, p = TFG_L, c = 0; c < TFG_N; c++) {
        for (k = 0; k < TFG_V; k++) {
            double err = fabs((double)gl[k] - wantl[nh][k]) / (fabs(wantl[nh][k]) + 1e-3);
            if (err > worst) worst = err;
        }
        got[nh++] = drawn;
        if (nh == TFG_L + TFG_N) break;
        if (p == TFG_TB) {
            if (!tfg_prefill_run(e, &pk, got + nh - TFG_KEEP, TFG_KEEP, d, caches, &drawn) ||
                !T_OK(nn_tensor_read(pk.g, pk.logits, lp, TFG_KEEP * TFG_V * 4), e->ctx))
                goto done;
            memcpy(gl, lp + (TFG_KEEP - 1) * TFG_V, sizeof gl);
            p = TFG_KEEP;
        } else {
            int32_t pv = p++;
            if (!T_OK(nn_tensor_write(d, tok, &got[nh - 1], 4), e->ctx) || !T_OK(nn_tensor_write(d, pos, &pv, 4), e->ctx) ||
                !T_OK(nn_graph_forward(d), e->ctx) || !T_OK(nn_tensor_read(d, next, &drawn, 4), e->ctx) ||
                !T_OK(nn_tensor_read(d, dl, gl, sizeof gl), e->ctx))
                goto done;
        }
    }
    T_CHECK(worst < 1e-4, "the cached logits differ from the whole window's by %.3g relative", worst);
    for (k = 0; k < TFG_L + TFG_N && got[k] == want[k]; k++) {}
    T_CHECK(k == TFG_L + TFG_N, "token %d: %d with the cache, %d running the whole window", k, (int)got[k], (int)want[k]);
done:
    nn_graph_destroy(pk.g);
    nn_graph_destroy(pp.g);
    nn_graph_destroy(d);
    nn_graph_destroy(g);
    t_end();
}

/* ---- nn.MultiheadAttention and the encoder / decoder layers ---- */

/* the float masks of tf_mha_ref: kadd [B, S] added (PyTorch's float key_padding_mask), add
   [T, S] or, with add_bh, [B*H, T, S] added (attn_mask) */
typedef struct tf_fmask {
    const double *kadd, *add;
    int add_bh;
} tf_fmask;

/* Batch-first attention: q [B, T, E], kv [B, S, E] (k = v = kv), in_proj W [3E, E], b [3E],
   out_proj Wo [E, E], bo [E]; kpm [B, S] (nonzero: hidden) or NULL, add [T, S] or NULL,
   causal; fm: more float masks or NULL. out [B, T, E]. */
/* separate projections (kdim, vdim): k [B, S, KD], v [B, S, VD], Wq [E, E], Wk [E, KD],
   Wv [E, VD]; NULL: the in_proj_weight's blocks */
typedef struct tf_sep {
    const double *k, *v, *Wq, *Wk, *Wv;
    long KD, VD;
} tf_sep;

static void tf_mha_ref3(const double *q, const double *kv, long B, long T, long S, long E, long H, const double *W, const double *b,
                        const double *Wo, const double *bo, const double *kpm, const double *add, int causal, const tf_fmask *fm,
                        const tf_sep *sep, double *out) {
    long D = E / H, bb, h, i, j, d;
    double *Q = (double *)malloc(sizeof(double) * (size_t)(B * T * E)), *K = (double *)malloc(sizeof(double) * (size_t)(B * S * E));
    double *Vv = (double *)malloc(sizeof(double) * (size_t)(B * S * E)), *Y = (double *)malloc(sizeof(double) * (size_t)(B * T * E));
    if (sep) {
        tf_dense(q, sep->Wq, b, B * T, E, E, Q);
        tf_dense(sep->k, sep->Wk, b + E, B * S, sep->KD, E, K);
        tf_dense(sep->v, sep->Wv, b + 2 * E, B * S, sep->VD, E, Vv);
    } else {
        tf_dense(q, W, b, B * T, E, E, Q);
        tf_dense(kv, W + E * E, b + E, B * S, E, E, K);
        tf_dense(kv, W + 2 * E * E, b + 2 * E, B * S, E, E, Vv);
    }
    for (bb = 0; bb < B; bb++)
        for (h = 0; h < H; h++)
            for (i = 0; i < T; i++) {
                double sc[64], mx = -1e300, z = 0;
                for (j = 0; j < S; j++) {
                    double a = 0;
                    for (d = 0; d < D; d++) a += Q[(bb * T + i) * E + h * D + d] * K[(bb * S + j) * E + h * D + d];
                    a /= sqrt((double)D);
                    if (add) a += add[i * S + j];
                    if (fm && fm->add) a += fm->add[fm->add_bh ? ((bb * H + h) * T + i) * S + j : i * S + j];
                    if (fm && fm->kadd) a += fm->kadd[bb * S + j];
                    if ((kpm && kpm[bb * S + j] != 0) || (causal && j > i)) a = -1e300;
                    sc[j] = a;
                    if (a > mx) mx = a;
                }
                for (j = 0; j < S; j++) z += (sc[j] = sc[j] <= -1e299 ? 0 : exp(sc[j] - mx));
                for (d = 0; d < D; d++) {
                    double a = 0;
                    for (j = 0; j < S; j++) a += sc[j] / z * Vv[(bb * S + j) * E + h * D + d];
                    Y[(bb * T + i) * E + h * D + d] = a;
                }
            }
    tf_dense(Y, Wo, bo, B * T, E, E, out);
    free(Q);
    free(K);
    free(Vv);
    free(Y);
}

static void tf_mha_ref2(const double *q, const double *kv, long B, long T, long S, long E, long H, const double *W, const double *b,
                        const double *Wo, const double *bo, const double *kpm, const double *add, int causal, const tf_fmask *fm,
                        double *out) {
    tf_mha_ref3(q, kv, B, T, S, E, H, W, b, Wo, bo, kpm, add, causal, fm, NULL, out);
}

static void tf_mha_ref(const double *q, const double *kv, long B, long T, long S, long E, long H, const double *W, const double *b,
                       const double *Wo, const double *bo, const double *kpm, const double *add, int causal, double *out) {
    tf_mha_ref2(q, kv, B, T, S, E, H, W, b, Wo, bo, kpm, add, causal, NULL, out);
}

/* [T, B, E] <-> [B, T, E] */
static void tf_swap01(const double *x, long A, long Bd, long E, double *y) {
    long a, b, e;
    for (a = 0; a < A; a++)
        for (b = 0; b < Bd; b++)
            for (e = 0; e < E; e++) y[(b * A + a) * E + e] = x[(a * Bd + b) * E + e];
}

static void tf_mha_params(spec *c, const char *pre, long E) {
    char nm[96];
    snprintf(nm, sizeof nm, "%s.in_proj_weight", pre);
    in_param(c, nm, nn_shape2(3 * E, E), -0.6, 0.6);
    snprintf(nm, sizeof nm, "%s.in_proj_bias", pre);
    in_param(c, nm, nn_shape1(3 * E), -0.3, 0.3);
    snprintf(nm, sizeof nm, "%s.out_proj.weight", pre);
    in_param(c, nm, nn_shape2(E, E), -0.6, 0.6);
    snprintf(nm, sizeof nm, "%s.out_proj.bias", pre);
    in_param(c, nm, nn_shape1(E), -0.3, 0.3);
}

/* self-attention, [T 5, B 2, E 8] (not batch-first), 2 heads, an int32 key padding mask
   hiding the last two keys of batch 1, an additive attn_mask [5, 5] (gradient checked too:
   the fused attention's mask gradient) */
static void f_kpm(const spec *c, double *const *t) {
    long j;
    (void)c;
    for (j = 0; j < 10; j++) t[1][j] = (j >= 8) ? 1 : 0;
}
static nn_tensor b_mha_self(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_mha_desc d;
    (void)c;
    memset(&d, 0, sizeof d);
    d.key_padding_mask = in[1];
    d.attn_mask = in[2];
    return nn_multihead_attention(g, in[0], in[0], in[0], 8, 2, &d, "mha");
}
static void r_mha_self(const spec *c, double *const *t, double *out) {
    double x[80], y[80];
    (void)c;
    tf_swap01(t[0], 5, 2, 8, x);
    tf_mha_ref(x, x, 2, 5, 5, 8, 2, t[3], t[4], t[5], t[6], t[1], t[2], 0, y);
    tf_swap01(y, 2, 5, 8, out);
}

/* cross-attention, batch-first q [2, 3, 8], key = value [2, 7, 8], a float key padding mask
   [2, 7] added (PyTorch's float key_padding_mask) and a float attn_mask [B*H 4, 3, 7], both
   with their gradients */
static nn_tensor b_mha_fmask(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_mha_desc d;
    (void)c;
    memset(&d, 0, sizeof d);
    d.batch_first = 1;
    d.key_padding_mask = in[2];
    d.attn_mask = in[3];
    return nn_multihead_attention(g, in[0], in[1], in[1], 8, 2, &d, "mha");
}
static void r_mha_fmask(const spec *c, double *const *t, double *out) {
    tf_fmask fm;
    (void)c;
    fm.kadd = t[2];
    fm.add = t[3];
    fm.add_bh = 1;
    tf_mha_ref2(t[0], t[1], 2, 3, 7, 8, 2, t[4], t[5], t[6], t[7], NULL, NULL, 0, &fm, out);
}
/* self-attention [B 2, T 6, E 8] batch-first, a float key padding mask only (the fused
   attention's mask [B, 1, 1, S], gradient checked) */
static nn_tensor b_mha_fkpm(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_mha_desc d;
    (void)c;
    memset(&d, 0, sizeof d);
    d.batch_first = 1;
    d.key_padding_mask = in[1];
    return nn_multihead_attention(g, in[0], in[0], in[0], 8, 2, &d, "mha");
}
static void r_mha_fkpm(const spec *c, double *const *t, double *out) {
    tf_fmask fm;
    (void)c;
    fm.kadd = t[1];
    fm.add = NULL;
    fm.add_bh = 0;
    tf_mha_ref2(t[0], t[0], 2, 6, 6, 8, 2, t[2], t[3], t[4], t[5], NULL, NULL, 0, &fm, out);
}

/* kdim 5, vdim 12: separate q/k/v projections (PyTorch's q_proj_weight, k_proj_weight,
   v_proj_weight, in_proj_bias), q [T 3, B 2, 8], key [7, 2, 5], value [7, 2, 12] sequence
   first, an int32 key padding mask */
static nn_tensor b_mha_kvdim(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_mha_desc d;
    (void)c;
    memset(&d, 0, sizeof d);
    d.kdim = 5;
    d.vdim = 12;
    d.key_padding_mask = in[3];
    return nn_multihead_attention(g, in[0], in[1], in[2], 8, 2, &d, "mha");
}
static void r_mha_kvdim(const spec *c, double *const *t, double *out) {
    double x[48], k[70], v[168], y[48];
    tf_sep sep;
    (void)c;
    tf_swap01(t[0], 3, 2, 8, x);
    tf_swap01(t[1], 7, 2, 5, k);
    tf_swap01(t[2], 7, 2, 12, v);
    sep.k = k, sep.v = v, sep.Wq = t[4], sep.Wk = t[5], sep.Wv = t[6], sep.KD = 5, sep.VD = 12;
    tf_mha_ref3(x, NULL, 2, 3, 7, 8, 2, NULL, t[7], t[8], t[9], t[3], NULL, 0, NULL, &sep, y);
    tf_swap01(y, 2, 3, 8, out);
}
static void f_kpm7(const spec *c, double *const *t) {
    long j;
    (void)c;
    for (j = 0; j < 14; j++) t[3][j] = (j == 5 || j == 12 || j == 13) ? 1 : 0;
}

/* cross-attention, batch-first q [2, 3, 8], key = value [2, 7, 8], PyTorch's bool masks
   as int32: key_padding_mask [2, 7] hiding keys 5 and 6 of batch 1, and attn_mask (nonzero:
   not attended) [3, 7] or, with bh, [B*H 4, 3, 7] hiding the entries where (bh + i + j) % 3
   == 0 (no row is wholly hidden) */
static void f_bool_masks(const spec *c, double *const *t) {
    long j, r, n = c->n_in > 3 && c->shape[3].ndim == 3 ? 4 : 1, bh, i;
    for (j = 0; j < 14; j++) t[2][j] = (j == 12 || j == 13) ? 1 : 0;
    for (bh = 0, r = 0; bh < n; bh++)
        for (i = 0; i < 3; i++)
            for (j = 0; j < 7; j++) t[3][r++] = (bh + i + j) % 3 == 0 ? 1 : 0;
}
static nn_tensor b_mha_bool(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_mha_desc d;
    (void)c;
    memset(&d, 0, sizeof d);
    d.batch_first = 1;
    d.key_padding_mask = in[2];
    d.attn_mask = in[3];
    return nn_multihead_attention(g, in[0], in[1], in[1], 8, 2, &d, "mha");
}
static void r_mha_bool(const spec *c, double *const *t, double *out) {
    int bh = c->shape[3].ndim == 3;
    double add[84];
    long r, n = bh ? 84 : 21;
    tf_fmask fm;
    for (r = 0; r < n; r++) add[r] = t[3][r] != 0 ? -1e300 : 0.0;
    fm.kadd = NULL;
    fm.add = add;
    fm.add_bh = bh;
    tf_mha_ref2(t[0], t[1], 2, 3, 7, 8, 2, t[4], t[5], t[6], t[7], t[2], NULL, 0, &fm, out);
}

/* cross-attention, batch-first q [2, 3, 8], key = value [2, 7, 8], causal (top-left) */
static nn_tensor b_mha_cross(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_mha_desc d;
    (void)c;
    memset(&d, 0, sizeof d);
    d.batch_first = 1;
    d.is_causal = 1;
    return nn_multihead_attention(g, in[0], in[1], in[1], 8, 2, &d, "mha");
}
static void r_mha_cross(const spec *c, double *const *t, double *out) {
    (void)c;
    tf_mha_ref(t[0], t[1], 2, 3, 7, 8, 2, t[2], t[3], t[4], t[5], NULL, NULL, 1, out);
}

/* params after the inputs: self_attn (4), linear1 w, b, linear2 w, b, norm1 w, b, norm2 w, b
   [, multihead_attn (4), norm3 w, b] */
static void tf_layer_params(spec *c, const char *pre, long E, long F, int decoder) {
    static const char *sfx[8] = {"linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                                 "norm1.weight",   "norm1.bias",   "norm2.weight",   "norm2.bias"};
    nn_shape sh[8];
    char nm[96];
    int i;
    sh[0] = nn_shape2(F, E);
    sh[1] = nn_shape1(F);
    sh[2] = nn_shape2(E, F);
    sh[3] = sh[4] = sh[5] = sh[6] = sh[7] = nn_shape1(E);
    snprintf(nm, sizeof nm, "%s.self_attn", pre);
    tf_mha_params(c, nm, E);
    for (i = 0; i < 8; i++) {
        snprintf(nm, sizeof nm, "%s.%s", pre, sfx[i]);
        in_param(c, nm, sh[i], (i == 4 || i == 6) ? 0.5 : -0.5, (i == 4 || i == 6) ? 1.5 : 0.5);
    }
    if (decoder) {
        snprintf(nm, sizeof nm, "%s.multihead_attn", pre);
        tf_mha_params(c, nm, E);
        snprintf(nm, sizeof nm, "%s.norm3.weight", pre);
        in_param(c, nm, nn_shape1(E), 0.5, 1.5);
        snprintf(nm, sizeof nm, "%s.norm3.bias", pre);
        in_param(c, nm, nn_shape1(E), -0.5, 0.5);
    }
}

/* feed-forward ref on rows: linear2(act(linear1(x))) */
static void tf_ff_ref(const double *x, long R, long E, long F, double *const *p, int gelu, double *out) {
    double *h = (double *)malloc(sizeof(double) * (size_t)(R * F));
    long i;
    tf_dense(x, p[0], p[1], R, E, F, h);
    for (i = 0; i < R * F; i++) h[i] = gelu ? 0.5 * h[i] * (1 + erf(h[i] / sqrt(2.0))) : (h[i] > 0 ? h[i] : 0);
    tf_dense(h, p[2], p[3], R, F, E, out);
    free(h);
}

/* the encoder layer ref on batch-first x [B, T, E]; p: the 12 params in tf_layer_params' order */
static void tf_enc_ref(const double *x, long B, long T, long E, long F, double *const *p, int norm_first, int gelu, int causal,
                       double *out) {
    long R = B * T, i;
    double a[128] = {0}, y[128]; /* zeroed: gcc -O1 cannot see that R * E > 0 fills it */
    memcpy(out, x, sizeof(double) * (size_t)(R * E));
    if (norm_first) {
        tf_ln(out, p[8], p[9], R, E, a);
        tf_mha_ref(a, a, B, T, T, E, TF_H, p[0], p[1], p[2], p[3], NULL, NULL, causal, y);
        for (i = 0; i < R * E; i++) out[i] += y[i];
        tf_ln(out, p[10], p[11], R, E, a);
        tf_ff_ref(a, R, E, F, p + 4, gelu, y);
        for (i = 0; i < R * E; i++) out[i] += y[i];
    } else {
        tf_mha_ref(out, out, B, T, T, E, TF_H, p[0], p[1], p[2], p[3], NULL, NULL, causal, y);
        for (i = 0; i < R * E; i++) a[i] = out[i] + y[i];
        tf_ln(a, p[8], p[9], R, E, out);
        tf_ff_ref(out, R, E, F, p + 4, gelu, y);
        for (i = 0; i < R * E; i++) a[i] = out[i] + y[i];
        tf_ln(a, p[10], p[11], R, E, out);
    }
}

/* encoder layer, post-norm ReLU, batch-first x [2, 5, 8], dim_feedforward 12 */
static nn_tensor b_enc_post(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_transformer_desc d;
    (void)c;
    memset(&d, 0, sizeof d);
    d.dim_feedforward = 12;
    d.dropout = NN_ZERO;
    d.batch_first = 1;
    return nn_transformer_encoder_layer(g, in[0], 8, TF_H, &d, "enc");
}
static void r_enc_post(const spec *c, double *const *t, double *out) {
    (void)c;
    tf_enc_ref(t[0], 2, 5, 8, 12, t + 1, 0, 0, 0, out);
}
/* encoder layer, norm_first GELU, causal, [T 3, B 2, E 8] (sequence-first) */
static nn_tensor b_enc_pre(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_transformer_desc d;
    (void)c;
    memset(&d, 0, sizeof d);
    d.dim_feedforward = 12;
    d.dropout = NN_ZERO;
    d.norm_first = 1;
    d.activation = 1;
    d.is_causal = 1;
    return nn_transformer_encoder_layer(g, in[0], 8, TF_H, &d, "enc");
}
static void r_enc_pre(const spec *c, double *const *t, double *out) {
    double x[48], y[48];
    (void)c;
    tf_swap01(t[0], 3, 2, 8, x);
    tf_enc_ref(x, 2, 3, 8, 12, t + 1, 1, 1, 1, y);
    tf_swap01(y, 2, 3, 8, out);
}

/* decoder layer, post-norm ReLU, batch-first tgt [2, 3, 8], memory [2, 7, 8], tgt causal */
static nn_tensor b_dec(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_transformer_desc d;
    (void)c;
    memset(&d, 0, sizeof d);
    d.dim_feedforward = 12;
    d.dropout = NN_ZERO;
    d.batch_first = 1;
    d.tgt_is_causal = 1;
    return nn_transformer_decoder_layer(g, in[0], in[1], 8, TF_H, &d, "dec");
}
static void r_dec(const spec *c, double *const *t, double *out) {
    double *const *p = t + 2;
    double a[48], y[48];
    long R = 6, i;
    (void)c;
    tf_mha_ref(t[0], t[0], 2, 3, 3, 8, TF_H, p[0], p[1], p[2], p[3], NULL, NULL, 1, y);
    for (i = 0; i < R * 8; i++) a[i] = t[0][i] + y[i];
    tf_ln(a, p[8], p[9], R, 8, out);
    tf_mha_ref(out, t[1], 2, 3, 7, 8, TF_H, p[12], p[13], p[14], p[15], NULL, NULL, 0, y);
    for (i = 0; i < R * 8; i++) a[i] = out[i] + y[i];
    tf_ln(a, p[10], p[11], R, 8, out);
    tf_ff_ref(out, R, 8, 12, p + 4, 0, y);
    for (i = 0; i < R * 8; i++) a[i] = out[i] + y[i];
    tf_ln(a, p[16], p[17], R, 8, out);
}

/* ---- ViT's patch embedding ---- */

/* x [B, C, Hh, Ww], patches P: out [B, (cls) + N, E] = conv(kernel = stride = P) rows of
   patches in row-major order, cls first, pos added; p: proj W [E, C, P, P], b [E], then
   cls [E] and pos [(cls) + N, E] when used */
typedef struct pe_cfg {
    int B, C, Hh, Ww, P, E, cls, pos;
} pe_cfg;
static nn_tensor b_patch(nn_graph *g, const nn_tensor *in, const spec *c) {
    const pe_cfg *pc = (const pe_cfg *)c->arg;
    nn_patch_embedding_desc d;
    memset(&d, 0, sizeof d);
    d.class_token = pc->cls;
    d.pos_embed = pc->pos;
    d.prefix = pc->cls ? "vit" : NULL;
    return nn_patch_embedding(g, in[0], pc->P, pc->E, &d, "patch_embed");
}
static void r_patch(const spec *c, double *const *t, double *out) {
    const pe_cfg *pc = (const pe_cfg *)c->arg;
    const double *x = t[0], *W = t[1], *bias = t[2], *cls = pc->cls ? t[3] : NULL, *pos = pc->pos ? t[3 + pc->cls] : NULL;
    int nw = pc->Ww / pc->P, n = pc->Hh / pc->P * nw, T = n + pc->cls, b, e, tk, ch, ki, kj;
    for (b = 0; b < pc->B; b++)
        for (tk = 0; tk < T; tk++)
            for (e = 0; e < pc->E; e++) {
                double v;
                if (pc->cls && tk == 0) v = cls[e];
                else {
                    int pi = tk - pc->cls, py = pi / nw, px = pi % nw;
                    v = bias[e];
                    for (ch = 0; ch < pc->C; ch++)
                        for (ki = 0; ki < pc->P; ki++)
                            for (kj = 0; kj < pc->P; kj++)
                                v += W[((e * pc->C + ch) * pc->P + ki) * pc->P + kj] *
                                     x[((b * pc->C + ch) * pc->Hh + py * pc->P + ki) * pc->Ww + px * pc->P + kj];
                }
                if (pos) v += pos[tk * pc->E + e];
                out[(b * T + tk) * pc->E + e] = v;
            }
}
static void tf_patch_case(const t_env *e, const char *label, const pe_cfg *pc) {
    int n = pc->Hh / pc->P * (pc->Ww / pc->P), T = n + pc->cls;
    spec c = l_mk_tf(label, b_patch, r_patch, nn_shape3(pc->B, T, pc->E));
    in_fr(&c, nn_shape4(pc->B, pc->C, pc->Hh, pc->Ww), -1, 1);
    in_param(&c, "patch_embed.proj.weight", nn_shape4(pc->E, pc->C, pc->P, pc->P), -0.5, 0.5);
    in_param(&c, "patch_embed.proj.bias", nn_shape1(pc->E), -0.5, 0.5);
    if (pc->cls) in_param(&c, "vit.cls_token", nn_shape3(1, 1, pc->E), -1, 1);
    if (pc->pos) in_param(&c, pc->cls ? "vit.pos_embed" : "pos_embed", nn_shape3(1, T, pc->E), -1, 1);
    c.arg = pc;
    check_case(e, &c);
}

/* the stacks' names: NAME.layers.{i}.* as PyTorch's */
static void tf_stack_names(const t_env *e) {
    nn_graph *g = NULL;
    nn_transformer_desc d;
    if (!t_begin(e, "layer transformer stacks' parameter names")) return;
    memset(&d, 0, sizeof d);
    d.dim_feedforward = 16;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        nn_tensor src = nn_input(g, "src", NN_F32, nn_shape3(4, 2, 8)), tgt = nn_input(g, "tgt", NN_F32, nn_shape3(3, 2, 8));
        nn_tensor m = nn_transformer_encoder(g, src, 2, 8, 2, &d, "encoder");
        nn_tensor y = nn_transformer_decoder(g, tgt, m, 2, 8, 2, &d, "decoder");
        nn_shape s;
        T_CHECK(y.id > 0 && T_OK(nn_tensor_shape(g, y, &s), e->ctx) && s.ndim == 3 && s.dim[0] == 3 && s.dim[1] == 2 && s.dim[2] == 8,
                "decoder stack output");
        T_CHECK(nn_graph_find(g, "encoder.layers.1.self_attn.in_proj_weight").id > 0 &&
                    nn_graph_find(g, "encoder.layers.0.linear1.weight").id > 0 &&
                    nn_graph_find(g, "decoder.layers.1.multihead_attn.out_proj.bias").id > 0 &&
                    nn_graph_find(g, "decoder.layers.0.norm3.weight").id > 0 && nn_graph_find(g, "encoder.layers.2.norm1.weight").id == 0,
                "stack parameter names");
    }
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
B(gpt_prefill_caches, nn_gpt_prefill(g, I(g, S2(2, 3)), &(nn_gpt_config){5, 4, 1, 2, 8, 0, 0, NULL}, NULL))
B(gpt_prefill_long, nn_gpt_prefill(g, I(g, S2(2, 5)), &(nn_gpt_config){5, 4, 1, 2, 8, 0, 0, NULL}, (nn_tensor[2]){{0, 0}, {0, 0}}))
B(gpt_decode_pos, nn_gpt_decode(g, I(g, S1(2)), nn_input(g, "p", NN_I32, S1(2)), &(nn_gpt_config){5, 4, 1, 2, 8, 0, 0, NULL}, NULL))

B(mha_heads, nn_multihead_attention(g, F(g, S3(5, 2, 8)), F(g, S3(5, 2, 8)), F(g, S3(5, 2, 8)), 8, 3, NULL, "m"))
B(mha_kv, nn_multihead_attention(g, F(g, S3(5, 2, 8)), F(g, S3(5, 2, 8)), F(g, S3(4, 2, 8)), 8, 2, NULL, "m"))
B(mha_kpm, nn_multihead_attention(g, F(g, S3(5, 2, 8)), F(g, S3(5, 2, 8)), F(g, S3(5, 2, 8)), 8, 2,
                                  &(nn_mha_desc){0, 0, 0, F(g, S2(5, 2)), {0, 0}, 0, 0, 0}, "m"))
B(mha_kdim, nn_multihead_attention(g, F(g, S3(5, 2, 8)), F(g, S3(4, 2, 6)), F(g, S3(4, 2, 8)), 8, 2,
                                   &(nn_mha_desc){0, 0, 0, {0, 0}, {0, 0}, 0, 5, 0}, "m"))
B(mha_boolf, nn_multihead_attention(g, F(g, S3(5, 2, 8)), F(g, S3(5, 2, 8)), F(g, S3(5, 2, 8)), 8, 2,
                                    &(nn_mha_desc){0, 0, 0, F(g, S2(2, 5)), I(g, S2(5, 5)), 0, 0, 0}, "m"))
B(pe_rank, nn_patch_embedding(g, F(g, S3(3, 8, 8)), 4, 6, NULL, "pe"))
B(pe_div, nn_patch_embedding(g, F(g, S4(1, 3, 8, 10)), 4, 6, NULL, "pe"))
B(pe_patch, nn_patch_embedding(g, F(g, S4(1, 3, 8, 8)), 0, 6, NULL, "pe"))
B(pe_name, nn_patch_embedding(g, F(g, S4(1, 3, 8, 8)), 4, 6, NULL, NULL))
B(enc_act, nn_transformer_encoder_layer(g, F(g, S3(5, 2, 8)), 8, 2,
                                        &(nn_transformer_desc){0, 0, 7, 0, 0, 0, {0, 0}, {0, 0}, 0, {0, 0}, {0, 0}, 0, {0, 0}, {0, 0}}, "e"))
B(dec_batch, nn_transformer_decoder_layer(g, F(g, S3(5, 2, 8)), F(g, S3(4, 3, 8)), 8, 2, NULL, "d"))

static const bad_row tf_bad[] = {
    {"transformer", "gpt idx float", gpt_idx_float, R_SHAPE, "nn_gpt|[2, 3] float32", 0},
    {"transformer", "gpt T > block_size", gpt_too_long, R_SHAPE, "nn_gpt|[2, 5]|block_size 4", 0},
    {"transformer", "gpt n_embd 9, 2 heads", gpt_heads, R_INV, "nn_gpt|n_embd 9", 0},
    {"transformer", "gpt no config", gpt_no_cfg, R_INV, "nn_gpt|config", 0},
    {"transformer", "gpt_block dropout 1", gpt_dropout, R_INV, "nn_gpt_block|dropout 1", 0},
    {"transformer", "gpt_block x [2, 3, 6]", gpt_block_width, R_SHAPE, "nn_gpt_block|[2, 3, 6]", 0},
    {"transformer", "gpt_block no name", gpt_block_name, R_INV, "nn_gpt_block|name", 0},
    {"transformer", "gpt_prefill no caches", gpt_prefill_caches, R_INV, "nn_gpt_prefill|caches", 0},
    {"transformer", "gpt_prefill T > block_size", gpt_prefill_long, R_SHAPE, "nn_gpt_prefill|[2, 5]|block_size 4", 0},
    {"transformer", "gpt_decode pos [2]", gpt_decode_pos, R_SHAPE, "nn_gpt_decode|[2]", 0},
    {"transformer", "mha 8 over 3 heads", mha_heads, R_INV, "nn_multihead_attention|embed_dim 8|num_heads 3", 0},
    {"transformer", "mha key and value differ", mha_kv, R_SHAPE, "nn_multihead_attention|[5, 2, 8]|[4, 2, 8]", 0},
    {"transformer", "mha key_padding_mask [5, 2]", mha_kpm, R_SHAPE, "nn_multihead_attention|key_padding_mask [5, 2]", 0},
    {"transformer", "mha int32 attn_mask with a float32 key_padding_mask", mha_boolf, R_INV,
     "nn_multihead_attention|int32 (bool) attn_mask|float32 key_padding_mask", 0},
    {"transformer", "mha key [4, 2, 6] for kdim 5", mha_kdim, R_SHAPE, "nn_multihead_attention|[4, 2, 6]|kdim 5", 0},
    {"transformer", "patch_embedding x [3, 8, 8]", pe_rank, R_SHAPE, "nn_patch_embedding|[3, 8, 8]|[B, C, H, W]", 0},
    {"transformer", "patch_embedding W 10 over patch 4", pe_div, R_SHAPE, "nn_patch_embedding|[1, 3, 8, 10]|patch_size 4", 0},
    {"transformer", "patch_embedding patch 0", pe_patch, R_INV, "nn_patch_embedding|patch_size 0", 0},
    {"transformer", "patch_embedding no name", pe_name, R_INV, "nn_patch_embedding|name", 0},
    {"transformer", "encoder layer activation 7", enc_act, R_INV, "nn_transformer_encoder_layer|activation 7", 0},
    {"transformer", "decoder layer batch 2 vs 3", dec_batch, R_SHAPE, "nn_transformer_decoder_layer|[5, 2, 8]|[4, 3, 8]", 0},
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
    tf_prefill(e);

    c = l_mk_tf("multihead_attention self [5, 2, 8], key_padding_mask, attn_mask", b_mha_self, r_mha_self, nn_shape3(5, 2, 8));
    in_fr(&c, nn_shape3(5, 2, 8), -1, 1);
    in_i(&c, nn_shape2(2, 5), 0, 2); /* 0/1 (f_kpm) */
    c.fill = f_kpm;
    in_fr(&c, nn_shape2(5, 5), -1, 1);
    tf_mha_params(&c, "mha", 8);
    check_case(e, &c);

    c = l_mk_tf("multihead_attention cross, float key_padding_mask and attn_mask [B*H, T, S]", b_mha_fmask, r_mha_fmask,
                nn_shape3(2, 3, 8));
    in_fr(&c, nn_shape3(2, 3, 8), -1, 1);
    in_fr(&c, nn_shape3(2, 7, 8), -1, 1);
    in_fr(&c, nn_shape2(2, 7), -2, 1);
    in_fr(&c, nn_shape3(4, 3, 7), -1, 1);
    tf_mha_params(&c, "mha", 8);
    check_case(e, &c);

    c = l_mk_tf("multihead_attention self, float key_padding_mask added", b_mha_fkpm, r_mha_fkpm, nn_shape3(2, 6, 8));
    in_fr(&c, nn_shape3(2, 6, 8), -1, 1);
    in_fr(&c, nn_shape2(2, 6), -2, 1);
    tf_mha_params(&c, "mha", 8);
    check_case(e, &c);

    {
        int bh;
        for (bh = 0; bh < 2; bh++) {
            c = l_mk_tf(bh ? "multihead_attention cross, int32 (bool) key_padding_mask and attn_mask [B*H, T, S]"
                           : "multihead_attention cross, int32 (bool) key_padding_mask and attn_mask [T, S]",
                        b_mha_bool, r_mha_bool, nn_shape3(2, 3, 8));
            in_fr(&c, nn_shape3(2, 3, 8), -1, 1);
            in_fr(&c, nn_shape3(2, 7, 8), -1, 1);
            in_i(&c, nn_shape2(2, 7), 0, 2);
            in_i(&c, bh ? nn_shape3(4, 3, 7) : nn_shape2(3, 7), 0, 2);
            c.fill = f_bool_masks;
            tf_mha_params(&c, "mha", 8);
            check_case(e, &c);
        }
    }

    c = l_mk_tf("multihead_attention kdim 5 vdim 12, separate projections", b_mha_kvdim, r_mha_kvdim, nn_shape3(3, 2, 8));
    in_fr(&c, nn_shape3(3, 2, 8), -1, 1);
    in_fr(&c, nn_shape3(7, 2, 5), -1, 1);
    in_fr(&c, nn_shape3(7, 2, 12), -1, 1);
    in_i(&c, nn_shape2(2, 7), 0, 2); /* f_kpm7 */
    c.fill = f_kpm7;
    in_param(&c, "mha.q_proj_weight", nn_shape2(8, 8), -0.6, 0.6);
    in_param(&c, "mha.k_proj_weight", nn_shape2(8, 5), -0.6, 0.6);
    in_param(&c, "mha.v_proj_weight", nn_shape2(8, 12), -0.6, 0.6);
    in_param(&c, "mha.in_proj_bias", nn_shape1(24), -0.3, 0.3);
    in_param(&c, "mha.out_proj.weight", nn_shape2(8, 8), -0.6, 0.6);
    in_param(&c, "mha.out_proj.bias", nn_shape1(8), -0.3, 0.3);
    check_case(e, &c);

    c = l_mk_tf("multihead_attention cross q [2, 3, 8] kv [2, 7, 8] causal", b_mha_cross, r_mha_cross, nn_shape3(2, 3, 8));
    in_fr(&c, nn_shape3(2, 3, 8), -1, 1);
    in_fr(&c, nn_shape3(2, 7, 8), -1, 1);
    tf_mha_params(&c, "mha", 8);
    check_case(e, &c);

    c = l_mk_tf("transformer_encoder_layer post-norm relu [2, 5, 8]", b_enc_post, r_enc_post, nn_shape3(2, 5, 8));
    in_fr(&c, nn_shape3(2, 5, 8), -1, 1);
    tf_layer_params(&c, "enc", 8, 12, 0);
    check_case(e, &c);

    c = l_mk_tf("transformer_encoder_layer norm_first gelu causal [3, 2, 8]", b_enc_pre, r_enc_pre, nn_shape3(3, 2, 8));
    in_fr(&c, nn_shape3(3, 2, 8), -1, 1);
    tf_layer_params(&c, "enc", 8, 12, 0);
    check_case(e, &c);

    c = l_mk_tf("transformer_decoder_layer tgt [2, 3, 8] memory [2, 7, 8]", b_dec, r_dec, nn_shape3(2, 3, 8));
    in_fr(&c, nn_shape3(2, 3, 8), -1, 1);
    in_fr(&c, nn_shape3(2, 7, 8), -1, 1);
    tf_layer_params(&c, "dec", 8, 12, 1);
    check_case(e, &c);

    {
        static const pe_cfg p1 = {2, 3, 8, 12, 4, 5, 1, 1}, p2 = {1, 2, 6, 3, 3, 7, 0, 1}, p3 = {3, 1, 4, 4, 2, 4, 0, 0};
        tf_patch_case(e, "patch_embedding [2, 3, 8, 12] patch 4, cls_token, pos_embed", &p1);
        tf_patch_case(e, "patch_embedding [1, 2, 6, 3] patch 3, pos_embed", &p2);
        tf_patch_case(e, "patch_embedding [3, 1, 4, 4] patch 2", &p3);
    }

    tf_stack_names(e);
    t_bad_rows(e, tf_bad, (int)(sizeof tf_bad / sizeof tf_bad[0]));
}
