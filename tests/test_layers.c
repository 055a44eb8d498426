/* The composed layers (src/layers/layers.c) against double-precision references written here,
   through the op checker (tests/op_check.c): forward values, and the gradients of
   L = sum(out * w) (w random) with respect to every input and every parameter against
   central differences of the reference; on OpenCL devices the same graph on the CPU backend
   too. Parameters are the layer's own, named parameters of the case (found by their
   PyTorch names with nn_graph_find, their shapes checked) with values written by the test. Shapes
   are small and odd. Tolerances are op_check.c's (1e-4 relative). */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a case of the op checker labelled "layer NAME" */
static spec l_mk(const char *name, build_fn b, ref_fn r, nn_shape out) {
    spec c = mk(name, b, r, out);
    c.kind = "layer";
    return c;
}

static double sigm(double x) { return 1 / (1 + exp(-x)); }
static double relu(double x) { return x > 0 ? x : 0; }

/* y[r, o] = b[o] + sum_i W[o, i] x[r, i] (b may be NULL) */
static void dense_ref(const double *x, const double *W, const double *b, long rows, long in, long out, double *y) {
    long r, o, i;
    for (r = 0; r < rows; r++)
        for (o = 0; o < out; o++) {
            double s = b ? b[o] : 0;
            for (i = 0; i < in; i++) s += W[o * in + i] * x[r * in + i];
            y[r * out + o] = s;
        }
}

/* ---- squeeze-and-excitation ---- */
static nn_tensor b_se(nn_graph *g, const nn_tensor *in, const spec *c) { return nn_se_layer(g, in[0], c->ip[0], "se"); }
static void r_se(const spec *c, double *const *t, double *out) {
    long N = c->shape[0].dim[0], C = c->shape[0].dim[1], HW = c->shape[0].dim[2] * c->shape[0].dim[3];
    long Hd = c->shape[1].dim[0], n, ch, j, p;
    double m[64], h[64], s[64];
    for (n = 0; n < N; n++) {
        for (ch = 0; ch < C; ch++) {
            double a = 0;
            for (p = 0; p < HW; p++) a += t[0][(n * C + ch) * HW + p];
            m[ch] = a / (double)HW;
        }
        dense_ref(m, t[1], t[2], 1, C, Hd, h);
        for (j = 0; j < Hd; j++) h[j] = relu(h[j]);
        dense_ref(h, t[3], t[4], 1, Hd, C, s);
        for (ch = 0; ch < C; ch++)
            for (p = 0; p < HW; p++) out[(n * C + ch) * HW + p] = t[0][(n * C + ch) * HW + p] * sigm(s[ch]);
    }
}

/* ---- GLU ---- */
static nn_tensor b_glu(nn_graph *g, const nn_tensor *in, const spec *c) { return nn_glu(g, in[0], c->ip[0]); }
static void r_glu(const spec *c, double *const *t, double *out) {
    nn_shape s = c->shape[0];
    int d = c->ip[0] < 0 ? c->ip[0] + s.ndim : c->ip[0], i;
    long outer = 1, inner = 1, h = s.dim[d] / 2, o, j, q;
    for (i = 0; i < d; i++) outer *= s.dim[i];
    for (i = d + 1; i < s.ndim; i++) inner *= s.dim[i];
    for (o = 0; o < outer; o++)
        for (j = 0; j < h; j++)
            for (q = 0; q < inner; q++) {
                double a = t[0][(o * 2 * h + j) * inner + q], b = t[0][(o * 2 * h + j + h) * inner + q];
                out[(o * h + j) * inner + q] = a * sigm(b);
            }
}

/* ---- SwiGLU feed-forward ---- */
static nn_tensor b_swiglu(nn_graph *g, const nn_tensor *in, const spec *c) { return nn_swiglu_layer(g, in[0], c->ip[0], "ffn"); }
static void r_swiglu(const spec *c, double *const *t, double *out) {
    long D = c->shape[0].dim[c->shape[0].ndim - 1], rows = numel(c->shape[0]) / D, Hd = c->ip[0], i;
    double *a = (double *)malloc((size_t)(rows * Hd) * sizeof(double)), *b = (double *)malloc((size_t)(rows * Hd) * sizeof(double));
    dense_ref(t[0], t[1], NULL, rows, D, Hd, a); /* w1 */
    dense_ref(t[0], t[3], NULL, rows, D, Hd, b); /* w3 */
    for (i = 0; i < rows * Hd; i++) a[i] = a[i] * sigm(a[i]) * b[i];
    dense_ref(a, t[2], NULL, rows, Hd, D, out); /* w2 */
    free(a);
    free(b);
}

/* ---- highway ---- */
static nn_tensor b_highway(nn_graph *g, const nn_tensor *in, const spec *c) {
    (void)c;
    return nn_highway_layer(g, in[0], "hw");
}
static void r_highway(const spec *c, double *const *t, double *out) {
    long D = c->shape[0].dim[c->shape[0].ndim - 1], rows = numel(c->shape[0]) / D, i;
    double *h = (double *)malloc((size_t)(rows * D) * sizeof(double)), *tt = (double *)malloc((size_t)(rows * D) * sizeof(double));
    dense_ref(t[0], t[1], t[2], rows, D, D, h);
    dense_ref(t[0], t[3], t[4], rows, D, D, tt);
    for (i = 0; i < rows * D; i++) {
        double g = sigm(tt[i]);
        out[i] = g * relu(h[i]) + (1 - g) * t[0][i];
    }
    free(h);
    free(tt);
}

/* ---- RMSE ---- */
static nn_tensor b_rmse(nn_graph *g, const nn_tensor *in, const spec *c) {
    (void)c;
    return nn_rmse_loss(g, in[0], in[1], NULL);
}
static void r_rmse(const spec *c, double *const *t, double *out) {
    long n = numel(c->shape[0]), i;
    double s = 0;
    for (i = 0; i < n; i++) s += (t[0][i] - t[1][i]) * (t[0][i] - t[1][i]);
    out[0] = sqrt(s / (double)n);
}

/* ---- InfoNCE ---- */
static nn_tensor b_nce(nn_graph *g, const nn_tensor *in, const spec *c) {
    return nn_info_nce_loss(g, in[0], in[1], c->fp[0], NULL);
}
static void r_nce(const spec *c, double *const *t, double *out) {
    long B = c->shape[0].dim[0], D = c->shape[0].dim[1], i, j, d;
    double a[64 * 8], b[64 * 8], L = 0;
    for (i = 0; i < B; i++) {
        double na = 0, nb = 0;
        for (d = 0; d < D; d++) {
            na += t[0][i * D + d] * t[0][i * D + d];
            nb += t[1][i * D + d] * t[1][i * D + d];
        }
        na = sqrt(na);
        nb = sqrt(nb);
        for (d = 0; d < D; d++) {
            a[i * D + d] = t[0][i * D + d] / na;
            b[i * D + d] = t[1][i * D + d] / nb;
        }
    }
    for (i = 0; i < B; i++) {
        double lg[64], mx = -1e300, s = 0;
        for (j = 0; j < B; j++) {
            double dot = 0;
            for (d = 0; d < D; d++) dot += a[i * D + d] * b[j * D + d];
            lg[j] = dot / c->fp[0];
            if (lg[j] > mx) mx = lg[j];
        }
        for (j = 0; j < B; j++) s += exp(lg[j] - mx);
        L += -(lg[i] - mx - log(s)); /* cross-entropy with label i */
    }
    out[0] = L / (double)B;
}

/* ---- RBF ---- */
static nn_tensor b_rbf(nn_graph *g, const nn_tensor *in, const spec *c) { return nn_rbf_layer(g, in[0], c->ip[0], "rbf"); }
static void r_rbf(const spec *c, double *const *t, double *out) {
    long B = c->shape[0].dim[0], D = c->shape[0].dim[1], K = c->ip[0], b, k, d;
    for (b = 0; b < B; b++)
        for (k = 0; k < K; k++) {
            double s = 0;
            for (d = 0; d < D; d++) s += (t[0][b * D + d] - t[1][k * D + d]) * (t[0][b * D + d] - t[1][k * D + d]);
            out[b * K + k] = exp(-exp(t[2][k]) * s);
        }
}

/* ---- mixture of experts: out = [y flattened, aux_loss]; ip[3]: capacity_factor in
   hundredths (0: dense) ---- */
static nn_tensor b_moe(nn_graph *g, const nn_tensor *in, const spec *c) {
    nn_tensor aux, y, parts[2];
    nn_moe_desc md;
    memset(&md, 0, sizeof md);
    md.aux_loss = &aux;
    md.capacity_factor = (float)c->ip[3] / 100.0f;
    y = nn_moe_layer(g, in[0], c->ip[0], c->ip[1], c->ip[2], &md, "moe");
    parts[0] = nn_reshape(g, y, nn_shape1(numel(c->shape[0])));
    parts[1] = aux;
    return nn_concat(g, parts, 2, 0);
}
static void r_moe(const spec *c, double *const *t, double *out) {
    long B = c->shape[0].dim[0], D = c->shape[0].dim[1], E = c->ip[0], K = c->ip[1], Hd = c->ip[2], b, e, d, j;
    long used[16] = {0}, C = B; /* rows each expert took so far; its capacity */
    double f[16] = {0}, P[16] = {0}, aux = 0;
    if (c->ip[3] > 0) { /* dispatch: the first C rows that keep an expert get it */
        double cf = c->ip[3] / 100.0 * (double)K * (double)B / (double)E;
        C = cf >= (double)B ? B : (long)ceil(cf);
    }
    for (b = 0; b < B; b++) {
        double lg[16], p[16], mx = -1e300, s = 0, h[64], y[64];
        const double *x = t[0] + b * D;
        dense_ref(x, t[1], NULL, 1, D, E, lg);
        for (e = 0; e < E; e++) mx = lg[e] > mx ? lg[e] : mx;
        for (e = 0; e < E; e++) s += (p[e] = exp(lg[e] - mx));
        for (e = 0; e < E; e++) p[e] /= s;
        for (d = 0; d < D; d++) out[b * D + d] = 0;
        for (e = 0; e < E; e++) {
            long rank = 0; /* how many probabilities of the row exceed p[e] */
            for (j = 0; j < E; j++) rank += p[j] > p[e];
            P[e] += p[e] / (double)B;
            if (rank >= K) continue;
            f[e] += 1.0 / (double)B;
            if (used[e]++ >= C) continue; /* past the expert's capacity: dropped */
            /* expert e: tensors 2 + 4e .. 5 + 4e are fc1.weight, fc1.bias, fc2.weight, fc2.bias */
            dense_ref(x, t[2 + 4 * e], t[3 + 4 * e], 1, D, Hd, h);
            for (j = 0; j < Hd; j++) h[j] = relu(h[j]);
            dense_ref(h, t[4 + 4 * e], t[5 + 4 * e], 1, Hd, D, y);
            for (d = 0; d < D; d++) out[b * D + d] += p[e] * y[d];
        }
    }
    for (e = 0; e < E; e++) aux += f[e] * P[e];
    out[B * D] = (double)E * aux;
}

static spec moe_case(const char *name, long B, long D, int E, int K, int Hd) {
    spec c = l_mk(name, b_moe, r_moe, nn_shape1(B * D + 1));
    int e;
    char nm[64];
    c.ip[0] = E;
    c.ip[1] = K;
    c.ip[2] = Hd;
    in_fr(&c, nn_shape2(B, D), -1, 1);
    in_param(&c, "moe.gate.weight", nn_shape2(E, D), -1.5, 1.5);
    for (e = 0; e < E; e++) {
        snprintf(nm, sizeof nm, "moe.experts.%d.fc1.weight", e);
        in_param(&c, nm, nn_shape2(Hd, D), -1, 1);
        snprintf(nm, sizeof nm, "moe.experts.%d.fc1.bias", e);
        in_param(&c, nm, nn_shape1(Hd), -0.5, 0.5);
        snprintf(nm, sizeof nm, "moe.experts.%d.fc2.weight", e);
        in_param(&c, nm, nn_shape2(D, Hd), -1, 1);
        snprintf(nm, sizeof nm, "moe.experts.%d.fc2.bias", e);
        in_param(&c, nm, nn_shape1(D), -0.5, 0.5);
    }
    return c;
}

/* Refusals: the code and the op's name in the message. */
static void l_bad(const t_env *e) {
    nn_graph *g = NULL;
    nn_tensor x2, x4, aux, t;
    const char *err;
    if (!t_begin(e, "layer refusals")) return;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        struct { int which; nn_result code; const char *word; } rows[] = {
            {0, NN_ERR_SHAPE, "nn_se_layer"},       {1, NN_ERR_SHAPE, "odd size"},
            {2, NN_ERR_INVALID_ARGUMENT, "top_k"},  {3, NN_ERR_SHAPE, "nn_info_nce_loss"},
            {4, NN_ERR_INVALID_ARGUMENT, "name"},   {5, NN_ERR_INVALID_ARGUMENT, "temperature"},
            {6, NN_ERR_INVALID_ARGUMENT, "capacity_factor -1"},
        };
        size_t i;
        for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            nn_graph_destroy(g);
            g = NULL;
            if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) break;
            x2 = nn_input(g, "x2", NN_F32, nn_shape2(3, 5));
            x4 = nn_input(g, "x4", NN_F32, nn_shape4(2, 3, 2, 2));
            switch (rows[i].which) {
            case 0: t = nn_se_layer(g, x2, 2, "se"); break;
            case 1: t = nn_glu(g, x2, 1); break;
            case 2: t = nn_moe_layer(g, x2, 2, 3, 4, &(nn_moe_desc){&aux, 0}, "moe"); break;
            case 3: t = nn_info_nce_loss(g, x2, nn_input(g, "y", NN_F32, nn_shape2(3, 4)), 0.1f, NULL); break;
            case 4: t = nn_swiglu_layer(g, x2, 4, NULL); break;
            case 6: t = nn_moe_layer(g, x2, 4, 2, 4, &(nn_moe_desc){&aux, -1.0f}, "moe"); break;
            default: t = nn_info_nce_loss(g, x2, x2, 0.0f, NULL); break;
            }
            (void)x4;
            err = nn_context_last_error(e->ctx);
            T_CHECK(t.id < 0 && nn_graph_status(g) == rows[i].code && strstr(err, rows[i].word),
                    "refusal %d: got id %d, status %d, message \"%s\"", rows[i].which, t.id, (int)nn_graph_status(g), err);
            if (rows[i].which == 2 || rows[i].which == 6) T_CHECK(aux.id < 0, "nn_moe_layer refused but aux_loss is a tensor");
        }
    }
    nn_graph_destroy(g);
    t_end();
}

void suite_layers(const t_env *e) {
    spec c;

    c = l_mk("se_block", b_se, r_se, nn_shape4(3, 5, 3, 2));
    c.ip[0] = 2; /* 5 channels -> 2 */
    in_fr(&c, nn_shape4(3, 5, 3, 2), -2, 2);
    in_param(&c, "se.fc1.weight", nn_shape2(2, 5), -1, 1);
    in_param(&c, "se.fc1.bias", nn_shape1(2), -0.5, 0.5);
    in_param(&c, "se.fc2.weight", nn_shape2(5, 2), -1, 1);
    in_param(&c, "se.fc2.bias", nn_shape1(5), -0.5, 0.5);
    check_case(e, &c);

    c = l_mk("glu dim 1", b_glu, r_glu, nn_shape3(3, 3, 5));
    c.ip[0] = 1;
    in_fr(&c, nn_shape3(3, 6, 5), -3, 3);
    check_case(e, &c);
    c = l_mk("glu dim -1", b_glu, r_glu, nn_shape2(7, 1));
    c.ip[0] = -1;
    in_fr(&c, nn_shape2(7, 2), -3, 3);
    check_case(e, &c);

    c = l_mk("swiglu_ffn", b_swiglu, r_swiglu, nn_shape3(2, 3, 5));
    c.ip[0] = 7;
    in_fr(&c, nn_shape3(2, 3, 5), -2, 2);
    in_param(&c, "ffn.w1.weight", nn_shape2(7, 5), -1, 1);
    in_param(&c, "ffn.w2.weight", nn_shape2(5, 7), -1, 1);
    in_param(&c, "ffn.w3.weight", nn_shape2(7, 5), -1, 1);
    check_case(e, &c);

    c = l_mk("highway", b_highway, r_highway, nn_shape2(7, 5));
    in_fr(&c, nn_shape2(7, 5), -2, 2);
    in_param(&c, "hw.H.weight", nn_shape2(5, 5), -1, 1);
    in_param(&c, "hw.H.bias", nn_shape1(5), -0.5, 0.5);
    in_param(&c, "hw.T.weight", nn_shape2(5, 5), -1, 1);
    in_param(&c, "hw.T.bias", nn_shape1(5), -1.5, 0.5);
    check_case(e, &c);

    c = l_mk("rmse_loss", b_rmse, r_rmse, nn_shape1(1));
    in_fr(&c, nn_shape2(3, 7), -2, 2);
    in_fr(&c, nn_shape2(3, 7), -2, 2);
    check_case(e, &c);

    c = l_mk("info_nce_loss", b_nce, r_nce, nn_shape1(1));
    c.fp[0] = 0.5;
    in_fr(&c, nn_shape2(5, 3), -2, 2);
    in_fr(&c, nn_shape2(5, 3), -2, 2);
    check_case(e, &c);

    c = l_mk("rbf_layer", b_rbf, r_rbf, nn_shape2(5, 7));
    c.ip[0] = 7;
    in_fr(&c, nn_shape2(5, 3), -1, 1);
    in_param(&c, "rbf.centers", nn_shape2(7, 3), -1, 1);
    in_param(&c, "rbf.log_gamma", nn_shape1(7), -1, 0.5);
    check_case(e, &c);

    c = moe_case("moe top-2 of 4", 7, 3, 4, 2, 5);
    check_case(e, &c);
    c = moe_case("moe top-1 of 3", 5, 3, 3, 1, 3);
    check_case(e, &c);
    c = moe_case("moe top-2 of 4, dispatch, capacity 2 (none dropped)", 7, 3, 4, 2, 5);
    c.ip[3] = 200;
    check_case(e, &c);
    c = moe_case("moe top-2 of 4 [33, 5], dispatch, capacity 0.75 (rows dropped)", 33, 5, 4, 2, 3);
    c.ip[3] = 75;
    check_case(e, &c);
    c = moe_case("moe top-1 of 3, dispatch, capacity 1.25", 7, 3, 3, 1, 3);
    c.ip[3] = 125;
    check_case(e, &c);

    l_bad(e);
}
