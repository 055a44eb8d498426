/* The segment family (src/ops/segment.c): nn_segment_sum/mean/max, nn_index_add and the
   embedding (nn_embedding, nn_embedding_lookup, padding_idx, a weight tied to an output
   head) through the op checker at odd shapes (E = 1, 7, 33, 129; 1, 3, 65 segments) with
   repeated and empty segments; values out of range reported with nothing of theirs written;
   the same bits run to run, on 1, 2 and 3 CPU threads and on both backends; bad input. */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- references in double: src [E, R] by index [E] into [S, R] ---- */

static void r_segment(const spec *s, double *const *in, double *out, int reduce) {
    long E = s->shape[0].dim[0], R = numel(s->shape[0]) / E, S = s->out.dim[0], k, j, g;
    for (g = 0; g < S; g++)
        for (j = 0; j < R; j++) {
            double acc = 0;
            long cnt = 0;
            for (k = 0; k < E; k++) {
                double v = in[0][k * R + j];
                if ((long)in[1][k] != g) continue;
                if (reduce == 2) acc = cnt == 0 || v > acc ? v : acc;
                else acc += v;
                cnt++;
            }
            out[g * R + j] = reduce == 1 && cnt ? acc / (double)cnt : acc;
        }
}
static void r_seg_sum(const spec *s, double *const *in, double *out) { r_segment(s, in, out, 0); }
static void r_seg_mean(const spec *s, double *const *in, double *out) { r_segment(s, in, out, 1); }
static void r_seg_max(const spec *s, double *const *in, double *out) { r_segment(s, in, out, 2); }
static nn_tensor b_seg_sum(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_segment_sum(g, in[0], in[1], s->out.dim[0]); }
static nn_tensor b_seg_mean(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_segment_mean(g, in[0], in[1], s->out.dim[0]); }
static nn_tensor b_seg_max(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_segment_max(g, in[0], in[1], s->out.dim[0]); }

/* repeats: index[k] = index[0] for every third k */
static void fill_dups(const spec *s, double *const *in) {
    long E = s->shape[1].dim[0], k;
    for (k = 3; k < E; k += 3) in[1][k] = in[1][0];
}

/* index[1] = index[0] (input 1), token 1 = token 0 (input 0) */
static void fill_repeat_k(const spec *s, double *const *in) {
    if (numel(s->shape[1]) > 1) in[1][1] = in[1][0];
}
static void fill_tok_dups(const spec *s, double *const *in) {
    if (numel(s->shape[0]) > 1) in[0][1] = in[0][0];
}

/* ---- index_add (x [3, L, 5], dim 1, index [K], source [3, K, 5]) ---- */
static nn_tensor b_index_add(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_index_add(g, in[0], s->ip[0], in[1], in[2]); }
static void r_index_add(const spec *s, double *const *in, double *out) {
    long O = s->out.dim[0], L = s->out.dim[1], I = s->out.dim[2], K = s->shape[1].dim[0], o, k, i;
    memcpy(out, in[0], (size_t)numel(s->out) * sizeof(double));
    for (o = 0; o < O; o++)
        for (k = 0; k < K; k++)
            for (i = 0; i < I; i++) out[(o * L + (long)in[1][k]) * I + i] += in[2][(o * K + k) * I + i];
}

/* ---- embedding: weight [N, D] (input 0 or the parameter emb.weight), indices [2, B/2] or [B]
   with padding_idx ip[0] (0: none), so the padding row's gradient is 0 ---- */
static nn_tensor b_emb_lookup(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_embedding_desc d;
    d.padding_idx = s->ip[0];
    return nn_embedding_lookup(g, in[0], in[1], &d);
}
static void r_emb(const spec *s, double *const *w, const double *idx, double *out) {
    long N = s->ip[1], D = s->out.dim[s->out.ndim - 1], B = numel(s->out) / D, b, j;
    (void)N;
    for (b = 0; b < B; b++)
        for (j = 0; j < D; j++) out[b * D + j] = w[0][(long)idx[b] * D + j];
}
static void r_emb_lookup(const spec *s, double *const *in, double *out) { r_emb(s, in, in[1], out); }
/* the padding row's values do not reach the loss through its gradient: the op checker's
   finite differences would see them, so the reference makes the row a constant of zero */
static nn_tensor b_emb_layer(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_embedding_desc d;
    d.padding_idx = s->ip[0];
    return nn_embedding(g, in[0], s->ip[1], s->out.dim[s->out.ndim - 1], &d, "emb");
}
static void r_emb_layer(const spec *s, double *const *in, double *out) {
    double *w[1];
    w[0] = in[1];
    r_emb(s, w, in[0], out);
}

/* ---- weight tying: h = embedding(idx) [B, D]; logits = h @ W^T [B, N]; W shared ---- */
static nn_tensor b_tied(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor h = nn_embedding(g, in[0], s->ip[1], s->ip[2], NULL, "tok");
    return nn_matmul(g, h, nn_graph_find(g, "tok.weight"), 0, 1);
}
static void r_tied(const spec *s, double *const *in, double *out) {
    long N = s->ip[1], D = s->ip[2], B = s->shape[0].dim[0], b, c, j;
    for (b = 0; b < B; b++)
        for (c = 0; c < N; c++) {
            double acc = 0;
            for (j = 0; j < D; j++) acc += in[1][(long)in[0][b] * D + j] * in[1][c * D + j];
            out[b * N + c] = acc;
        }
}

static void suite_segment_ops(const t_env *e) {
    static const int Es[4] = {1, 7, 33, 129}, Ss[3] = {1, 3, 65};
    static const build_fn bs[3] = {b_seg_sum, b_seg_mean, b_seg_max};
    static const ref_fn rs[3] = {r_seg_sum, r_seg_mean, r_seg_max};
    static const char *const names[3] = {"sum", "mean", "max"};
    char name[128];
    spec s;
    int ie, is, r;
    for (r = 0; r < 3; r++)
        for (ie = 0; ie < 4; ie++)
            for (is = 0; is < 3; is++) {
                int E = Es[ie], S = Ss[is], cols = (ie + is) % 3 == 0 ? 1 : (ie + is) % 3 == 1 ? 3 : 5;
                nn_shape src = cols == 1 ? nn_shape1(E) : cols == 3 ? nn_shape2(E, 3) : nn_shape3(E, 1, 5);
                nn_shape out = src;
                out.dim[0] = S;
                snprintf(name, sizeof name, "segment_%s src [%d, %d] into %d segments (repeats, empties)", names[r], E, cols, S);
                s = mk(name, bs[r], rs[r], out);
                s.fill = fill_dups;
                in_f(&s, src);
                in_i(&s, nn_shape1(E), 0, S);
                check_case(e, &s);
            }
    {
        static const int Ks[3] = {1, 7, 33};
        int k;
        for (k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "index_add x [3, 7, 5] dim %d, %d indices (repeats)", k == 1 ? -2 : 1, Ks[k]);
            s = mk(name, b_index_add, r_index_add, nn_shape3(3, 7, 5));
            s.ip[0] = k == 1 ? -2 : 1;
            s.fill = fill_repeat_k;
            in_f(&s, nn_shape3(3, 7, 5));
            in_i(&s, nn_shape1(Ks[k]), 0, 7);
            in_f(&s, nn_shape3(3, Ks[k], 5));
            check_case(e, &s);
        }
    }
    {
        static const struct { int N, D, B, pad; } em[] = {{1, 3, 7, 0}, {7, 5, 33, 0}, {65, 16, 129, 3}, {33, 1, 7, -1}};
        int k;
        for (k = 0; k < 4; k++) {
            nn_shape ix = em[k].B == 33 ? nn_shape2(3, 11) : nn_shape1(em[k].B), out = ix;
            out.dim[out.ndim++] = em[k].D;
            snprintf(name, sizeof name, "embedding_lookup [%d, %d] by %d indices, padding_idx %d", em[k].N, em[k].D, em[k].B, em[k].pad);
            s = mk(name, b_emb_lookup, r_emb_lookup, out);
            s.ip[0] = em[k].pad;
            s.ip[1] = em[k].N;
            in_f(&s, nn_shape2(em[k].N, em[k].D));
            in_i(&s, ix, 0, em[k].N);
            s.grad[0] = em[k].pad == 0; /* a padding row gets no gradient: checked below */
            check_case(e, &s);
        }
    }
    s = mk("embedding layer emb [65, 8] by [3, 11] indices", b_emb_layer, r_emb_layer, nn_shape3(3, 11, 8));
    s.ip[1] = 65;
    in_i(&s, nn_shape2(3, 11), 0, 65);
    in_param(&s, "emb.weight", nn_shape2(65, 8), -1, 1);
    check_case(e, &s);
    s = mk("embedding tied to an output head: tok.weight [33, 7], 9 tokens", b_tied, r_tied, nn_shape2(9, 33));
    s.ip[1] = 33;
    s.ip[2] = 7;
    s.fill = fill_tok_dups;
    in_i(&s, nn_shape1(9), 0, 33);
    in_param(&s, "tok.weight", nn_shape2(33, 7), -1, 1);
    check_case(e, &s);
}

/* The padding row: initialised to zeros by nn_embedding, its gradient exactly 0, the other
   rows' the sums of dy's rows (d(sum(y * y) / 2)/dw = sum of y's rows by index), and the
   other rows drawn N(0, 1). */
static void suite_segment_padding(const t_env *e) {
    enum { N = 200, D = 16, B = 33 };
    nn_graph *g = NULL;
    nn_tensor idx, y, loss, w;
    nn_compile_desc c;
    nn_embedding_desc d;
    static float wv[N * D], gw[N * D];
    int32_t iv[B];
    double want, m = 0, v = 0;
    int k, j, bad = 0;
    if (!t_begin(e, "embedding padding_idx -3: its row zero at init and no gradient; N(0, 1) init")) return;
    for (k = 0; k < B; k++) iv[k] = k % 4 == 0 ? N - 3 : (k * 37) % N;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        idx = nn_input(g, "idx", NN_I32, nn_shape1(B));
        d.padding_idx = -3;
        y = nn_embedding(g, idx, N, D, &d, "pe");
        loss = nn_mul_scalar(g, nn_sum(g, nn_mul(g, y, y)), 0.5f);
        w = nn_graph_find(g, "pe.weight");
        memset(&c, 0, sizeof c);
        c.loss = loss;
        if (T_OK(nn_graph_compile(g, &c), e->ctx) && T_OK(nn_tensor_write(g, idx, iv, sizeof iv), e->ctx) &&
            T_OK(nn_tensor_read(g, w, wv, sizeof wv), e->ctx) && T_OK(nn_graph_step(g), e->ctx) &&
            T_OK(nn_tensor_read(g, nn_graph_grad(g, w), gw, sizeof gw), e->ctx)) {
            for (j = 0; j < D; j++) bad += wv[(N - 3) * D + j] != 0.0f || gw[(N - 3) * D + j] != 0.0f;
            T_CHECK(bad == 0, "the padding row: %d nonzero values or gradients", bad);
            for (k = 0; k < N; k++)
                for (j = 0; j < D; j++) {
                    int b;
                    if (k == N - 3) continue;
                    m += wv[k * D + j];
                    v += (double)wv[k * D + j] * wv[k * D + j];
                    want = 0;
                    for (b = 0; b < B; b++)
                        if (iv[b] == k) want += wv[k * D + j];
                    if (fabs(gw[k * D + j] - want) > 1e-5 * (1 + fabs(want)) && bad++ < 3)
                        T_CHECK(0, "dw[%d, %d] = %g, want %g", k, j, gw[k * D + j], want);
                }
            m /= (N - 1) * D;
            v = v / ((N - 1) * D) - m * m;
            T_CHECK(fabs(m) < 0.1 && fabs(sqrt(v) - 1) < 0.1, "init mean %g std %g, want N(0, 1)", m, sqrt(v));
        }
        nn_graph_destroy(g);
    }
    t_end();
}

/* Values out of range: reported on the read (the op, the count), and nothing of theirs
   written: the other segments hold the reference, which leaves them out. */
static void suite_segment_range(const t_env *e) {
    static const char *const needles[4] = {"nn_segment_sum: index values outside", "nn_segment_max: index values outside",
                                           "nn_index_add: index values outside", "nn_embedding_lookup: indices outside"};
    int which;
    if (!t_begin(e, "segment ops, index_add, embedding: indices out of range reported, nothing of theirs written")) return;
    for (which = 0; which < 4; which++) {
        nn_graph *g = NULL;
        nn_tensor x, src, i1, y;
        float xv[5 * 3], sv[7 * 3], out[7 * 3], want[7 * 3];
        int32_t iv[7] = {0, 4, -1, 2, 5, 0, 4};
        int k, j, n;
        nn_result r;
        if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) break;
        x = nn_input(g, "x", NN_F32, nn_shape2(5, 3));
        src = nn_input(g, "src", NN_F32, nn_shape2(7, 3));
        i1 = nn_input(g, "i1", NN_I32, nn_shape1(7));
        y = which == 0 ? nn_segment_sum(g, src, i1, 5)
            : which == 1 ? nn_segment_max(g, src, i1, 5)
            : which == 2 ? nn_index_add(g, x, 0, i1, src)
                         : nn_embedding_lookup(g, x, i1, NULL);
        nn_graph_output(g, y);
        for (k = 0; k < 15; k++) xv[k] = (float)k;
        for (k = 0; k < 21; k++) sv[k] = (float)(k % 7) - 2.5f;
        n = which == 3 ? 21 : 15;
        for (k = 0; k < n; k++) want[k] = which == 2 ? xv[k] : which == 1 ? -1e30f : 0.0f;
        for (k = 0; k < 7; k++)
            for (j = 0; j < 3; j++) {
                int v = iv[k];
                if (which == 3) want[k * 3 + j] = v >= 0 && v < 5 ? xv[v * 3 + j] : 0.0f;
                else if (v >= 0 && v < 5) {
                    if (which == 1) want[v * 3 + j] = sv[k * 3 + j] > want[v * 3 + j] ? sv[k * 3 + j] : want[v * 3 + j];
                    else want[v * 3 + j] += sv[k * 3 + j];
                }
            }
        if (which == 1)
            for (k = 0; k < 15; k++) want[k] = want[k] == -1e30f ? 0.0f : want[k]; /* segments 1, 3: empty, 0 */
        if (T_OK(nn_graph_compile(g, NULL), e->ctx) && (which < 2 || T_OK(nn_tensor_write(g, x, xv, sizeof xv), e->ctx)) &&
            (which == 3 || T_OK(nn_tensor_write(g, src, sv, sizeof sv), e->ctx)) && T_OK(nn_tensor_write(g, i1, iv, sizeof iv), e->ctx) &&
            T_OK(nn_graph_forward(g), e->ctx)) {
            r = nn_tensor_read(g, y, out, (size_t)n * 4);
            T_CHECK(r == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(e->ctx), needles[which]) &&
                        strstr(nn_context_last_error(e->ctx), "2 of them"),
                    "op %d: %d, \"%s\"", which, (int)r, nn_context_last_error(e->ctx));
            if (T_OK(nn_tensor_read(g, y, out, (size_t)n * 4), e->ctx)) /* reported once */
                for (k = 0; k < n; k++)
                    if (fabsf(out[k] - want[k]) > 1e-5f) {
                        T_CHECK(0, "op %d: y[%d] = %g, want %g", which, k, out[k], want[k]);
                        break;
                    }
        }
        nn_graph_destroy(g);
    }
    t_end();
}

/* One graph of every op of the family on big mixed values (the sum order shows in the bits),
   and a sum into TB_BIG segments (a radix sort of three passes): its outputs and gradients,
   written to out. */
enum { TB_E = 3000, TB_S = 257, TB_R = 12, TB_N = 400, TB_B = 2048, TB_D = 8, TB_BIG = 70000 };
static int t_bits_run(const t_env *e, nn_context *ctx, float *out, size_t *n_out) {
    nn_graph *g = NULL;
    nn_tensor src, idx, tok, w, y[5], loss, gs, gw, idx2;
    nn_compile_desc c;
    static float sv[TB_E * TB_R], wv[TB_N * TB_D];
    static int32_t iv[TB_E], tv[TB_B], iv2[TB_E];
    size_t at = 0;
    int k, ok = 0;
    (void)e;
    t_seed(1717);
    for (k = 0; k < TB_E * TB_R; k++) sv[k] = (float)t_uniform(-1, 1) * (k % 5 == 0 ? 1000.0f : 1.0f);
    for (k = 0; k < TB_E; k++) {
        iv[k] = t_randint(4) ? t_randint(9) : t_randint(TB_S);
        iv2[k] = t_randint(2) ? t_randint(TB_BIG) : TB_BIG - 1 - t_randint(3);
    }
    for (k = 0; k < TB_N * TB_D; k++) wv[k] = (float)t_uniform(-1, 1) * (k % 3 == 0 ? 1000.0f : 1.0f);
    for (k = 0; k < TB_B; k++) tv[k] = t_randint(2) ? t_randint(5) : t_randint(TB_N);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    src = nn_input(g, "src", NN_F32, nn_shape2(TB_E, TB_R));
    idx = nn_input(g, "idx", NN_I32, nn_shape1(TB_E));
    tok = nn_input(g, "tok", NN_I32, nn_shape1(TB_B));
    w = nn_input(g, "w", NN_F32, nn_shape2(TB_N, TB_D));
    idx2 = nn_input(g, "idx2", NN_I32, nn_shape1(TB_E));
    nn_graph_requires_grad(g, src);
    nn_graph_requires_grad(g, w);
    y[4] = nn_segment_sum(g, src, idx2, TB_BIG);
    y[0] = nn_segment_sum(g, src, idx, TB_S);
    y[1] = nn_segment_mean(g, src, idx, TB_S);
    y[2] = nn_segment_max(g, src, idx, TB_S);
    y[3] = nn_embedding_lookup(g, w, tok, NULL);
    loss = nn_add(g, nn_add(g, nn_sum(g, nn_mul(g, y[0], y[1])), nn_sum(g, nn_mul(g, y[2], y[2]))), nn_sum(g, nn_mul(g, y[3], y[3])));
    loss = nn_add(g, loss, nn_sum(g, nn_mul(g, y[4], y[4])));
    for (k = 0; k < 5; k++) nn_graph_output(g, y[k]);
    memset(&c, 0, sizeof c);
    c.loss = loss;
    if (T_OK(nn_graph_compile(g, &c), ctx) && T_OK(nn_tensor_write(g, src, sv, sizeof sv), ctx) &&
        T_OK(nn_tensor_write(g, idx, iv, sizeof iv), ctx) && T_OK(nn_tensor_write(g, idx2, iv2, sizeof iv2), ctx) && T_OK(nn_tensor_write(g, tok, tv, sizeof tv), ctx) &&
        T_OK(nn_tensor_write(g, w, wv, sizeof wv), ctx) && T_OK(nn_graph_step(g), ctx)) {
        gs = nn_graph_grad(g, src);
        gw = nn_graph_grad(g, w);
        ok = 1;
        for (k = 0; k < 3 && ok; k++, at += TB_S * TB_R) ok = T_OK(nn_tensor_read(g, y[k], out + at, TB_S * TB_R * 4), ctx);
        ok = ok && T_OK(nn_tensor_read(g, gs, out + at, sizeof sv), ctx);
        at += TB_E * TB_R;
        ok = ok && T_OK(nn_tensor_read(g, gw, out + at, sizeof wv), ctx);
        at += TB_N * TB_D;
        ok = ok && T_OK(nn_tensor_read(g, y[4], out + at, (size_t)TB_BIG * TB_R * 4), ctx);
        at += (size_t)TB_BIG * TB_R;
    }
    nn_graph_destroy(g);
    *n_out = at;
    return ok;
}

/* ---- nn_embedding_lookup of a bf16 / f16 table: rows of its type, copied (the float32
   gather of the rounded table, bit for bit); dweight summed in float32 from the 16-bit dy
   and rounded once: the float32 sum's rounding, bit for bit (dy holds 16-bit values) ---- */

/* y and dw (float32 reads) of the lookup of w [N, D] in storage d at idx [B, T]; loss
   sum(y * wl) */
static int emb16_run(nn_context *ctx, nn_dtype d, int N, int D, const int *iv, int B, int T, int pad, const float *wv,
                     const float *wl, float *y, float *dw) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_embedding_desc ed;
    nn_tensor w, ix, yt, l;
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    w = nn_input(g, "w", NN_F32, nn_shape2(N, D));
    ix = nn_input(g, "idx", NN_I32, nn_shape2(B, T));
    nn_graph_requires_grad(g, w);
    memset(&ed, 0, sizeof ed);
    ed.padding_idx = pad;
    yt = nn_embedding_lookup(g, d == NN_F32 ? w : nn_to_dtype(g, w, d), ix, &ed);
    if (!T_CHECK(yt.id >= 0, "%s embedding: %s", d == NN_F32 ? "f32" : t_name16(d), nn_context_last_error(ctx)))
        goto done;
    if (d != NN_F32) yt = nn_to_dtype(g, yt, NN_F32);
    l = nn_input(g, "wl", NN_F32, nn_shape3(B, T, D));
    nn_graph_output(g, yt);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, yt, l));
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, w, wv, (size_t)N * D * sizeof(float)), ctx) || !T_OK(nn_tensor_write(g, ix, iv, (size_t)B * T * sizeof(int)), ctx) ||
        !T_OK(nn_tensor_write(g, l, wl, (size_t)B * T * D * sizeof(float)), ctx) || !T_OK(nn_graph_step(g), ctx))
        goto done;
    ok = T_OK(nn_tensor_read(g, yt, y, (size_t)B * T * D * sizeof(float)), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_grad(g, w), dw, (size_t)N * D * sizeof(float)), ctx);
done:
    nn_graph_destroy(g);
    return ok;
}

static void suite_segment_emb16(const t_env *e) {
    enum { N = 37, D = 19, B = 3, T = 11 }; /* odd sizes; 33 indices over 37 rows: repeats and unused rows */
    static float wv[N * D], wl[B * T * D], y32[B * T * D], y[B * T * D], dw32[N * D], dw[N * D];
    int iv[B * T], t, p, i;
    if (!t_begin(e, "embedding of a bf16/f16 table: y the float32 gather of the rounded table, dw float32's sum rounded, bit for bit")) return;
    for (i = 0; i < B * T; i++) iv[i] = (i * 7 + i / 5) % 13 + (i % 3 == 0 ? 20 : 0); /* repeats; row 3 (padding) among them */
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        for (i = 0; i < N * D; i++) wv[i] = (float)t_rnd16(d, 2.0 * sin(0.37 * (double)i + t) + 0.25 * (double)(i % 7));
        for (i = 0; i < B * T * D; i++) wl[i] = (float)t_rnd16(d, cos(0.91 * (double)i + t));
        for (p = 0; p < 2; p++) { /* padding_idx: none, row 3 */
            int pad = p ? 3 : 0;
            if (!emb16_run(e->ctx, NN_F32, N, D, iv, B, T, pad, wv, wl, y32, dw32) || !emb16_run(e->ctx, d, N, D, iv, B, T, pad, wv, wl, y, dw))
                goto done;
            for (i = 0; i < B * T * D; i++)
                if (!T_CHECK(memcmp(&y[i], &y32[i], sizeof y[i]) == 0, "%s y[%d] = %.9g, float32's %.9g", t_name16(d), i, (double)y[i], (double)y32[i]))
                    goto done;
            for (i = 0; i < N * D; i++) {
                float r = (float)t_rnd16(d, dw32[i]);
                if (!T_CHECK(memcmp(&dw[i], &r, sizeof r) == 0, "%s padding %d dw[%d] = %.9g, float32's rounded %.9g (%.9g)", t_name16(d), pad, i,
                             (double)dw[i], (double)r, (double)dw32[i]))
                    goto done;
            }
        }
    }
done:
    t_end();
}


/* The same bits: two runs; on the CPU backend 1, 2 and 3 threads; an OpenCL device against
   the CPU backend (all but the mean, whose division OpenCL may round otherwise) */
static void suite_segment_bits(const t_env *e) {
    static float a[TB_S * TB_R * 3 + TB_E * TB_R + TB_N * TB_D + TB_BIG * TB_R], b[sizeof a / sizeof a[0]];
    size_t na = 0, nb = 0, k;
    int th;
    if (!t_begin(e, "segment sum/mean/max, embedding: the same bits every run, thread count and backend")) return;
    if (t_bits_run(e, e->ctx, a, &na) && t_bits_run(e, e->ctx, b, &nb))
        T_CHECK(na == nb && memcmp(a, b, na * 4) == 0, "two runs differ");
    for (th = 1; th <= 3; th++) {
        nn_context_desc d;
        nn_context *ctx = NULL;
        memset(&d, 0, sizeof d);
        d.device = "cpu";
        d.threads = th;
        d.log_level = NN_LOG_WARN;
        if (!T_OK(nn_context_create(&d, &ctx), ctx)) break;
        if (t_bits_run(e, ctx, b, &nb)) {
            int same = na == nb;
            for (k = 0; same && k < na; k++)
                if (!(k >= TB_S * TB_R && k < 2 * TB_S * TB_R) || !e->opencl) same = memcmp(&a[k], &b[k], 4) == 0;
            T_CHECK(same, "the CPU backend on %d threads differs from %s at %d", th, e->backend, (int)k - 1);
        }
        nn_context_destroy(ctx);
    }
    t_end();
}

/* ==== bad input ==== */

B(sg_float_idx, nn_segment_sum(g, F(g, S2(5, 3)), F(g, S1(5)), 4))
B(sg_idx_rank, nn_segment_mean(g, F(g, S2(5, 3)), I(g, S2(5, 1)), 4))
B(sg_len, nn_segment_max(g, F(g, S2(5, 3)), I(g, S1(4)), 4))
B(sg_zero_segments, nn_segment_sum(g, F(g, S2(5, 3)), I(g, S1(5)), 0))
B(sg_too_many, nn_segment_sum(g, F(g, S2(5, 3)), I(g, S1(5)), INT32_MAX))
B(sg_int_src, nn_segment_sum(g, I(g, S2(5, 3)), I(g, S1(5)), 4))
B(ia_dim, nn_index_add(g, F(g, S2(5, 3)), 2, I(g, S1(3)), F(g, S2(5, 3))))
B(ia_source, nn_index_add(g, F(g, S2(5, 3)), 1, I(g, S1(2)), F(g, S2(5, 3))))
B(ia_source_other, nn_index_add(g, F(g, S2(5, 3)), 0, I(g, S1(2)), F(g, S2(2, 4))))
B(em_weight_rank, nn_embedding_lookup(g, F(g, S3(5, 3, 1)), I(g, S1(2)), NULL))
B(em_float_idx, nn_embedding_lookup(g, F(g, S2(5, 3)), F(g, S1(2)), NULL))
static nn_tensor em_pad(nn_graph *g, nn_compile_desc *cd) {
    nn_embedding_desc d;
    (void)cd;
    d.padding_idx = 5;
    return nn_embedding_lookup(g, F(g, S2(5, 3)), I(g, S1(2)), &d);
}
B(em_layer_size, nn_embedding(g, I(g, S1(2)), 0, 3, NULL, "e"))
B(em_layer_name, nn_embedding(g, I(g, S1(2)), 5, 3, NULL, NULL))

static const bad_row segment_bad[] = {
    {"segment", "segment_sum float index", sg_float_idx, R_SHAPE, "nn_segment_sum|src [5, 3], index [5] float32", 0},
    {"segment", "segment_mean index [5, 1]", sg_idx_rank, R_SHAPE, "nn_segment_mean|index [5, 1] int32", 0},
    {"segment", "segment_max index [4] for src [5, 3]", sg_len, R_SHAPE, "nn_segment_max|src [5, 3], index [4] int32", 0},
    {"segment", "segment_sum 0 segments", sg_zero_segments, R_SHAPE, "nn_segment_sum|num_segments 0", 0},
    {"segment", "segment_sum 2^31 - 1 segments", sg_too_many, R_SHAPE, "nn_segment_sum|index [5] into 2147483647 segments|2^31 - 1", 0},
    {"segment", "segment_sum int32 src", sg_int_src, R_SHAPE, "nn_segment_sum|src", 0},
    {"segment", "index_add dim 2 of [5, 3]", ia_dim, R_SHAPE, "nn_index_add|x [5, 3], dim 2", 0},
    {"segment", "index_add source [5, 3] for index [2] at dim 1", ia_source, R_SHAPE, "nn_index_add|index [2] int32, source [5, 3]", 0},
    {"segment", "index_add source [2, 4] for x [5, 3]", ia_source_other, R_SHAPE, "nn_index_add|x [5, 3]|source [2, 4]", 0},
    {"segment", "embedding_lookup weight [5, 3, 1]", em_weight_rank, R_SHAPE, "nn_embedding_lookup|weight [5, 3, 1]", 0},
    {"segment", "embedding_lookup float indices", em_float_idx, R_SHAPE, "nn_embedding_lookup|indices [2] float32", 0},
    {"segment", "embedding_lookup padding_idx 5 of 5", em_pad, R_SHAPE, "nn_embedding_lookup|padding_idx 5", 0},
    {"segment", "embedding 0 rows", em_layer_size, R_INV, "nn_embedding|num_embeddings 0", 0},
    {"segment", "embedding without a name", em_layer_name, R_INV, "nn_embedding|needs a name", 0},
};

void suite_segment(const t_env *e) {
    T_RUN(e, suite_segment_ops, suite_segment_padding, suite_segment_range, suite_segment_bits, suite_segment_emb16);
    t_bad_rows(e, segment_bad, (int)(sizeof segment_bad / sizeof segment_bad[0]));
}
