/* The recurrent family (src/ops/recurrent.c): nn_rnn, nn_lstm, nn_gru (one and more
   layers, bidirectional, batch_first, initial states, lengths, proj_size), their cells and
   nn_last_valid, against a double-precision reference written here (PyTorch's equations,
   one sequence at a time), finite differences of it, and the CPU backend on OpenCL. */
#include "test.h"
#include "bad_rows.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { K_RNN = 0, K_LSTM = 1, K_GRU = 2 };
/* ip[5] flags */
enum { F_LEN = 1, F_H0 = 2, F_BF = 4, F_NOBIAS = 8, F_RELU = 16, F_C0 = 32, F_CELL = 64 };

static double r_sig(double v) { return 1.0 / (1.0 + exp(-v)); }
static int r_gates(int kind) { return kind == K_LSTM ? 4 : kind == K_GRU ? 3 : 1; }

/* One direction of one layer over x [T][B][I] (time-major): y [T][B][Hr], hn [B][Hr],
   cn [B][H]. Sequence b runs over t < len[b] (forward from 0, reverse from len[b] - 1);
   y is 0 past its length. */
static void r_dir(int kind, int relu, long T, long B, long I, long H, long Hr, const double *x, const long *len,
                  const double *h0, const double *c0, const double *wih, const double *whh, const double *bih,
                  const double *bhh, const double *whr, int reverse, double *y, double *hn, double *cn) {
    long G = r_gates(kind), b, t, s, j, k;
    double *h = (double *)calloc((size_t)Hr, sizeof(double)), *c = (double *)calloc((size_t)H, sizeof(double));
    double *gi = (double *)calloc((size_t)(G * H), sizeof(double)), *gh = (double *)calloc((size_t)(G * H), sizeof(double));
    double *u = (double *)calloc((size_t)H, sizeof(double));
    for (t = 0; t < T; t++)
        for (b = 0; b < B; b++)
            for (j = 0; j < Hr; j++) y[(t * B + b) * Hr + j] = 0;
    for (b = 0; b < B; b++) {
        long n = len ? len[b] : T;
        for (j = 0; j < Hr; j++) h[j] = h0 ? h0[b * Hr + j] : 0;
        for (j = 0; j < H; j++) c[j] = c0 ? c0[b * H + j] : 0;
        for (s = 0; s < n; s++) {
            t = reverse ? n - 1 - s : s;
            for (k = 0; k < G * H; k++) {
                double a = bih ? bih[k] : 0, d = bhh ? bhh[k] : 0;
                for (j = 0; j < I; j++) a += wih[k * I + j] * x[(t * B + b) * I + j];
                for (j = 0; j < Hr; j++) d += whh[k * Hr + j] * h[j];
                gi[k] = a;
                gh[k] = d;
            }
            if (kind == K_LSTM) {
                for (j = 0; j < H; j++) {
                    double ig = r_sig(gi[j] + gh[j]), fg = r_sig(gi[H + j] + gh[H + j]);
                    double gg = tanh(gi[2 * H + j] + gh[2 * H + j]), og = r_sig(gi[3 * H + j] + gh[3 * H + j]);
                    c[j] = fg * c[j] + ig * gg;
                    u[j] = og * tanh(c[j]);
                }
                for (j = 0; j < Hr; j++) {
                    if (whr) {
                        h[j] = 0;
                        for (k = 0; k < H; k++) h[j] += whr[j * H + k] * u[k];
                    } else {
                        h[j] = u[j];
                    }
                }
            } else if (kind == K_GRU) {
                for (j = 0; j < H; j++) {
                    double r = r_sig(gi[j] + gh[j]), z = r_sig(gi[H + j] + gh[H + j]);
                    double nn = tanh(gi[2 * H + j] + r * gh[2 * H + j]);
                    h[j] = (1 - z) * nn + z * h[j];
                }
            } else {
                for (j = 0; j < H; j++) {
                    double v = gi[j] + gh[j];
                    h[j] = relu ? (v > 0 ? v : 0) : tanh(v);
                }
            }
            for (j = 0; j < Hr; j++) y[(t * B + b) * Hr + j] = h[j];
        }
        for (j = 0; j < Hr; j++) hn[b * Hr + j] = h[j];
        if (cn)
            for (j = 0; j < H; j++) cn[b * H + j] = c[j];
    }
    free(h);
    free(c);
    free(gi);
    free(gh);
    free(u);
}

/* The case's geometry: x [T, B, I] ([B, T, I] with F_BF); ip: kind, H, L, D, proj, flags */
typedef struct r_geo {
    int kind, L, D, flags;
    long T, B, I, H, Hr;
} r_geo;
static r_geo geo(const spec *s) {
    r_geo q;
    q.kind = s->ip[0], q.H = s->ip[1], q.L = s->ip[2], q.D = s->ip[3], q.flags = s->ip[5];
    q.Hr = s->ip[4] ? s->ip[4] : q.H;
    if (q.flags & F_CELL) {
        q.T = 1, q.B = s->shape[0].dim[0], q.I = s->shape[0].dim[1];
    } else {
        q.T = s->shape[0].dim[q.flags & F_BF ? 1 : 0];
        q.B = s->shape[0].dim[q.flags & F_BF ? 0 : 1];
        q.I = s->shape[0].dim[2];
    }
    return q;
}
static long r_out_size(const r_geo *q) {
    return q->T * q->B * q->D * q->Hr + (long)q->L * q->D * q->B * q->Hr + (q->kind == K_LSTM ? (long)q->L * q->D * q->B * q->H : 0);
}

static void r_layers(const spec *s, double *const *in, double *out) {
    r_geo q = geo(s);
    long T = q.T, B = q.B, F = q.D * q.Hr, t, b, j, *len = NULL, LD = (long)q.L * q.D;
    int ii = 1, k, d;
    double *x, *h0 = NULL, *c0 = NULL, *y[2], *hn = out + T * B * F, *cn = hn + LD * B * q.Hr;
    x = (double *)malloc(sizeof(double) * (size_t)(T * B * (q.I > F ? q.I : F)));
    for (t = 0; t < T; t++) /* time-major */
        for (b = 0; b < B; b++)
            for (j = 0; j < q.I; j++) x[(t * B + b) * q.I + j] = in[0][(q.flags & F_BF ? b * T + t : t * B + b) * q.I + j];
    if (q.flags & F_LEN) {
        len = (long *)malloc(sizeof(long) * (size_t)B);
        for (b = 0; b < B; b++) len[b] = (long)in[ii][b];
        ii++;
    }
    if (q.flags & F_H0) h0 = in[ii++];
    if (q.flags & F_C0) c0 = in[ii++];
    y[0] = (double *)malloc(sizeof(double) * (size_t)(T * B * q.Hr));
    y[1] = (double *)malloc(sizeof(double) * (size_t)(T * B * q.Hr));
    for (k = 0; k < q.L; k++) {
        long I = k == 0 ? q.I : F;
        for (d = 0; d < q.D; d++) {
            const double *wih = in[ii++], *whh = in[ii++], *bih = NULL, *bhh = NULL, *whr = NULL;
            long r = (long)k * q.D + d;
            if (!(q.flags & F_NOBIAS)) bih = in[ii++], bhh = in[ii++];
            if (q.Hr != q.H) whr = in[ii++];
            r_dir(q.kind, q.flags & F_RELU, T, B, I, q.H, q.Hr, x, len, h0 ? h0 + r * B * q.Hr : NULL,
                  c0 ? c0 + r * B * q.H : NULL, wih, whh, bih, bhh, whr, d, y[d], hn + r * B * q.Hr,
                  q.kind == K_LSTM ? cn + r * B * q.H : NULL);
        }
        for (t = 0; t < T; t++) /* the next layer's input: both directions' features */
            for (b = 0; b < B; b++)
                for (d = 0; d < q.D; d++)
                    for (j = 0; j < q.Hr; j++) x[(t * B + b) * F + d * q.Hr + j] = y[d][(t * B + b) * q.Hr + j];
    }
    for (t = 0; t < T; t++)
        for (b = 0; b < B; b++)
            for (j = 0; j < F; j++) out[(q.flags & F_BF ? b * T + t : t * B + b) * F + j] = x[(t * B + b) * F + j];
    free(x);
    free(len);
    free(y[0]);
    free(y[1]);
}

static nn_tensor b_layers(nn_graph *g, const nn_tensor *in, const spec *s) {
    r_geo q = geo(s);
    nn_rnn_desc d;
    nn_tensor y, hn, cn, parts[3];
    int ii = 1;
    memset(&d, 0, sizeof d);
    d.num_layers = q.L;
    d.bidirectional = q.D == 2;
    d.batch_first = (q.flags & F_BF) != 0;
    d.dropout = s->fp[0];
    d.no_bias = (q.flags & F_NOBIAS) != 0;
    d.nonlinearity = q.flags & F_RELU ? NN_RNN_RELU : NN_RNN_TANH;
    d.proj_size = s->ip[4];
    if (q.flags & F_LEN) d.lengths = in[ii++];
    if (q.flags & F_H0) d.h0 = in[ii++];
    if (q.flags & F_C0) d.c0 = in[ii++];
    d.h_n = &hn;
    d.c_n = q.kind == K_LSTM ? &cn : NULL;
    y = q.kind == K_LSTM ? nn_lstm(g, in[0], q.H, &d, "rnn") : q.kind == K_GRU ? nn_gru(g, in[0], q.H, &d, "rnn")
                                                                                : nn_rnn(g, in[0], q.H, &d, "rnn");
    if (y.id < 0) return y;
    parts[0] = nn_reshape(g, y, nn_shape1(t_numel(g, y)));
    parts[1] = nn_reshape(g, hn, nn_shape1(t_numel(g, hn)));
    if (q.kind == K_LSTM) parts[2] = nn_reshape(g, cn, nn_shape1(t_numel(g, cn)));
    return nn_concat(g, parts, q.kind == K_LSTM ? 3 : 2, 0);
}

/* lengths all different where B allows: T, 1, then halves (F_LEN's fill) */
static void fill_lengths(const spec *s, double *const *in) {
    r_geo q = geo(s);
    long b;
    for (b = 0; b < q.B; b++) in[1][b] = b == 0 ? (double)q.T : b == 1 ? 1.0 : (double)((q.T + b) / 2 > 1 ? (q.T + b) / 2 : 1);
}

static const char *kind_name(int kind) { return kind == K_LSTM ? "lstm" : kind == K_GRU ? "gru" : "rnn"; }

/* A layer case: kind, sizes, layers, directions, projection, flags */
static spec layer_case(char *name, size_t cap, int kind, long T, long B, long I, long H, int L, int D, long P, int flags) {
    long Hr = P ? P : H, G = r_gates(kind), LD = (long)L * D, F = D * Hr, k, d;
    r_geo q;
    spec c;
    char nm[64];
    snprintf(name, cap, "%s T=%ld B=%ld I=%ld H=%ld L=%d%s%s%s%s%s%s%s", kind_name(kind), T, B, I, H, L, D == 2 ? " bidirectional" : "",
             P ? " proj" : "", flags & F_LEN ? " lengths" : "", flags & (F_H0 | F_C0) ? " initial states" : "",
             flags & F_BF ? " batch_first" : "", flags & F_NOBIAS ? " no bias" : "", flags & F_RELU ? " relu" : "");
    q.kind = kind, q.T = T, q.B = B, q.D = D, q.L = L, q.H = H, q.Hr = Hr;
    c = mk(name, b_layers, r_layers, nn_shape1(0));
    c.kind = "layer";
    c.ip[0] = kind, c.ip[1] = (int)H, c.ip[2] = L, c.ip[3] = D, c.ip[4] = (int)P, c.ip[5] = flags;
    c.out = nn_shape1(r_out_size(&q));
    in_fr(&c, flags & F_BF ? nn_shape3(B, T, I) : nn_shape3(T, B, I), -1, 1);
    if (flags & F_LEN) {
        in_i(&c, nn_shape1(B), 1, (int)T + 1);
        c.fill = fill_lengths;
    }
    if (flags & F_H0) in_fr(&c, nn_shape3(LD, B, Hr), -1, 1);
    if (flags & F_C0) in_fr(&c, nn_shape3(LD, B, H), -1, 1);
    for (k = 0; k < L; k++)
        for (d = 0; d < D; d++) {
            const char *sx = d ? "_reverse" : "";
            double w = 1.0 / sqrt((double)H) + 0.3;
            snprintf(nm, sizeof nm, "rnn.weight_ih_l%ld%s", k, sx);
            in_param(&c, nm, nn_shape2(G * H, k == 0 ? I : F), -w, w);
            snprintf(nm, sizeof nm, "rnn.weight_hh_l%ld%s", k, sx);
            in_param(&c, nm, nn_shape2(G * H, Hr), -w, w);
            if (!(flags & F_NOBIAS)) {
                snprintf(nm, sizeof nm, "rnn.bias_ih_l%ld%s", k, sx);
                in_param(&c, nm, nn_shape1(G * H), -0.5, 0.5);
                snprintf(nm, sizeof nm, "rnn.bias_hh_l%ld%s", k, sx);
                in_param(&c, nm, nn_shape1(G * H), -0.5, 0.5);
            }
            if (P) {
                snprintf(nm, sizeof nm, "rnn.weight_hr_l%ld%s", k, sx);
                in_param(&c, nm, nn_shape2(Hr, H), -w, w);
            }
        }
    if (T * B * H * (I + H) > 4000) c.dirs = 3; /* the reference's cost: dense directions */
    return c;
}

static void run_layer(const t_env *e, int kind, long T, long B, long I, long H, int L, int D, long P, int flags) {
    char name[160];
    spec c = layer_case(name, sizeof name, kind, T, B, I, H, L, D, P, flags);
    check_case(e, &c);
}

/* ---- cells: x [B, I], h [B, H] (and c) -> [h' | c'] ---- */
static nn_tensor b_cell(nn_graph *g, const nn_tensor *in, const spec *s) {
    r_geo q = geo(s);
    nn_rnn_cell_desc d;
    nn_tensor h, c = NN_NONE, parts[2];
    memset(&d, 0, sizeof d);
    d.no_bias = (q.flags & F_NOBIAS) != 0;
    d.nonlinearity = q.flags & F_RELU ? NN_RNN_RELU : NN_RNN_TANH;
    if (q.kind == K_LSTM) {
        h = nn_lstm_cell(g, in[0], q.flags & F_H0 ? in[1] : NN_NONE, q.flags & F_C0 ? in[2] : NN_NONE, q.H, &d, "rnn", &c);
        parts[0] = h, parts[1] = c;
        return nn_reshape(g, nn_concat(g, parts, 2, 1), nn_shape1(2 * q.B * q.H));
    }
    h = q.kind == K_GRU ? nn_gru_cell(g, in[0], q.flags & F_H0 ? in[1] : NN_NONE, q.H, &d, "rnn")
                        : nn_rnn_cell(g, in[0], q.flags & F_H0 ? in[1] : NN_NONE, q.H, &d, "rnn");
    return nn_reshape(g, h, nn_shape1(q.B * q.H));
}
static void r_cell(const spec *s, double *const *in, double *out) {
    r_geo q = geo(s);
    int ii = 1;
    const double *h0 = NULL, *c0 = NULL, *bih = NULL, *bhh = NULL, *wih, *whh;
    double *y = (double *)malloc(sizeof(double) * (size_t)(q.B * q.H)), *cn = (double *)malloc(sizeof(double) * (size_t)(q.B * q.H));
    long b, j;
    if (q.flags & F_H0) h0 = in[ii++];
    if (q.flags & F_C0) c0 = in[ii++];
    wih = in[ii++];
    whh = in[ii++];
    if (!(q.flags & F_NOBIAS)) bih = in[ii++], bhh = in[ii++];
    r_dir(q.kind, q.flags & F_RELU, 1, q.B, q.I, q.H, q.H, in[0], NULL, h0, c0, wih, whh, bih, bhh, NULL, 0, y, out, cn);
    if (q.kind == K_LSTM) /* [B, 2H]: h' then c' per row */
        for (b = q.B - 1; b >= 0; b--)
            for (j = q.H - 1; j >= 0; j--) {
                double hv = out[b * q.H + j];
                out[b * 2 * q.H + q.H + j] = cn[b * q.H + j];
                out[b * 2 * q.H + j] = hv;
            }
    free(y);
    free(cn);
}
static void run_cell(const t_env *e, int kind, long B, long I, long H, int flags) {
    char name[128];
    long G = r_gates(kind);
    spec c;
    snprintf(name, sizeof name, "%s_cell B=%ld I=%ld H=%ld%s%s%s", kind_name(kind), B, I, H, flags & F_H0 ? " h" : "",
             flags & F_NOBIAS ? " no bias" : "", flags & F_RELU ? " relu" : "");
    c = mk(name, b_cell, r_cell, nn_shape1((kind == K_LSTM ? 2 : 1) * B * H));
    c.kind = "layer";
    c.ip[0] = kind, c.ip[1] = (int)H, c.ip[2] = 1, c.ip[3] = 1, c.ip[5] = flags | F_CELL;
    in_fr(&c, nn_shape2(B, I), -1, 1);
    if (flags & F_H0) in_fr(&c, nn_shape2(B, H), -1, 1);
    if (flags & F_C0) in_fr(&c, nn_shape2(B, H), -1, 1);
    in_param(&c, "rnn.weight_ih", nn_shape2(G * H, I), -0.8, 0.8);
    in_param(&c, "rnn.weight_hh", nn_shape2(G * H, H), -0.8, 0.8);
    if (!(flags & F_NOBIAS)) {
        in_param(&c, "rnn.bias_ih", nn_shape1(G * H), -0.5, 0.5);
        in_param(&c, "rnn.bias_hh", nn_shape1(G * H), -0.5, 0.5);
    }
    check_case(e, &c);
}

/* ---- nn_last_valid ---- */
static nn_tensor b_last(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_last_valid(g, in[0], in[1], s->ip[0]); }
static void r_last(const spec *s, double *const *in, double *out) {
    int bf = s->ip[0];
    long T = s->shape[0].dim[bf ? 1 : 0], B = s->shape[0].dim[bf ? 0 : 1], F = s->shape[0].dim[2], b, f;
    for (b = 0; b < B; b++) {
        long t = (long)in[1][b] - 1;
        for (f = 0; f < F; f++) out[b * F + f] = in[0][(bf ? b * T + t : t * B + b) * F + f];
    }
}
static void run_last(const t_env *e, long T, long B, long F, int bf) {
    char name[96];
    spec c;
    snprintf(name, sizeof name, "last_valid T=%ld B=%ld F=%ld%s", T, B, F, bf ? " batch_first" : "");
    c = mk(name, b_last, r_last, nn_shape2(B, F));
    c.ip[0] = bf;
    in_f(&c, bf ? nn_shape3(B, T, F) : nn_shape3(T, B, F));
    in_i(&c, nn_shape1(B), 1, (int)T + 1);
    check_case(e, &c);
}

/* ---- nn_bidirectional: a one-direction layer of fn both ways; ip as a layer case's
   (L 1, D 1), parameters rnn.* then rnn_reverse.* ---- */
static nn_tensor bi_fn(nn_graph *g, nn_tensor x, nn_tensor lens, const char *name, void *user) {
    r_geo q = geo((const spec *)user);
    nn_rnn_desc d;
    memset(&d, 0, sizeof d);
    d.batch_first = (q.flags & F_BF) != 0;
    d.lengths = lens;
    return q.kind == K_LSTM ? nn_lstm(g, x, q.H, &d, name) : q.kind == K_GRU ? nn_gru(g, x, q.H, &d, name) : nn_rnn(g, x, q.H, &d, name);
}
static nn_tensor b_bi(nn_graph *g, const nn_tensor *in, const spec *s) {
    r_geo q = geo(s);
    return nn_bidirectional(g, in[0], q.flags & F_LEN ? in[1] : NN_NONE, (q.flags & F_BF) != 0, bi_fn, (void *)s, "rnn");
}
static void r_bi(const spec *s, double *const *in, double *out) {
    r_geo q = geo(s);
    long T = q.T, B = q.B, t, b, j, *len = NULL, G = r_gates(q.kind);
    int ii = 1, d;
    double *x = (double *)malloc(sizeof(double) * (size_t)(T * B * q.I)), *y = (double *)malloc(sizeof(double) * (size_t)(T * B * q.H));
    double *hn = (double *)malloc(sizeof(double) * (size_t)(B * q.H)), *cn = (double *)malloc(sizeof(double) * (size_t)(B * q.H));
    (void)G;
    for (t = 0; t < T; t++)
        for (b = 0; b < B; b++)
            for (j = 0; j < q.I; j++) x[(t * B + b) * q.I + j] = in[0][(q.flags & F_BF ? b * T + t : t * B + b) * q.I + j];
    if (q.flags & F_LEN) {
        len = (long *)malloc(sizeof(long) * (size_t)B);
        for (b = 0; b < B; b++) len[b] = (long)in[ii][b];
        ii++;
    }
    for (d = 0; d < 2; d++) {
        const double *wih = in[ii++], *whh = in[ii++], *bih = in[ii++], *bhh = in[ii++];
        r_dir(q.kind, 0, T, B, q.I, q.H, q.H, x, len, NULL, NULL, wih, whh, bih, bhh, NULL, d, y, hn, q.kind == K_LSTM ? cn : NULL);
        for (t = 0; t < T; t++)
            for (b = 0; b < B; b++)
                for (j = 0; j < q.H; j++) out[(q.flags & F_BF ? b * T + t : t * B + b) * 2 * q.H + d * q.H + j] = y[(t * B + b) * q.H + j];
    }
    free(x);
    free(y);
    free(hn);
    free(cn);
    free(len);
}
static void run_bi(const t_env *e, int kind, long T, long B, long I, long H, int flags) {
    char name[128], nm[64];
    long G = r_gates(kind);
    int d;
    spec c;
    snprintf(name, sizeof name, "bidirectional(%s) T=%ld B=%ld I=%ld H=%ld%s%s", kind_name(kind), T, B, I, H, flags & F_LEN ? " lengths" : "",
             flags & F_BF ? " batch_first" : "");
    c = mk(name, b_bi, r_bi, flags & F_BF ? nn_shape3(B, T, 2 * H) : nn_shape3(T, B, 2 * H));
    c.kind = "layer";
    c.ip[0] = kind, c.ip[1] = (int)H, c.ip[2] = 1, c.ip[3] = 1, c.ip[5] = flags;
    in_fr(&c, flags & F_BF ? nn_shape3(B, T, I) : nn_shape3(T, B, I), -1, 1);
    if (flags & F_LEN) {
        in_i(&c, nn_shape1(B), 1, (int)T + 1);
        c.fill = fill_lengths;
    }
    for (d = 0; d < 2; d++) {
        const char *p = d ? "rnn_reverse" : "rnn";
        double w = 1.0 / sqrt((double)H) + 0.3;
        snprintf(nm, sizeof nm, "%s.weight_ih_l0", p);
        in_param(&c, nm, nn_shape2(G * H, I), -w, w);
        snprintf(nm, sizeof nm, "%s.weight_hh_l0", p);
        in_param(&c, nm, nn_shape2(G * H, H), -w, w);
        snprintf(nm, sizeof nm, "%s.bias_ih_l0", p);
        in_param(&c, nm, nn_shape1(G * H), -0.5, 0.5);
        snprintf(nm, sizeof nm, "%s.bias_hh_l0", p);
        in_param(&c, nm, nn_shape1(G * H), -0.5, 0.5);
    }
    if (T * B * H * (I + H) > 4000) c.dirs = 3;
    check_case(e, &c);
}
static void rec_bidirectional(const t_env *e) {
    run_bi(e, K_LSTM, 5, 3, 3, 7, F_LEN);
    run_bi(e, K_GRU, 7, 3, 17, 1, F_LEN | F_BF);
    run_bi(e, K_RNN, 1, 1, 3, 7, 0);
    run_bi(e, K_LSTM, 33, 3, 3, 7, F_BF);
}

/* ---- nn_conv_lstm2d: x [B, T, C, H, W] -> [y | h_n | c_n] flattened; ip: hidden, kernel,
   flags (F_H0, F_C0, F_NOBIAS); parameters cl.conv.weight, cl.conv.bias ---- */
static nn_tensor b_cl(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_conv_lstm_desc d;
    nn_tensor y, hn, cn, parts[3];
    int ii = 1, flags = s->ip[2];
    memset(&d, 0, sizeof d);
    d.kernel_size = s->ip[1];
    d.no_bias = (flags & F_NOBIAS) != 0;
    if (flags & F_H0) d.h0 = in[ii++];
    if (flags & F_C0) d.c0 = in[ii++];
    d.h_n = &hn;
    d.c_n = &cn;
    y = nn_conv_lstm2d(g, in[0], s->ip[0], &d, "cl");
    if (y.id < 0) return y;
    parts[0] = nn_reshape(g, y, nn_shape1(t_numel(g, y)));
    parts[1] = nn_reshape(g, hn, nn_shape1(t_numel(g, hn)));
    parts[2] = nn_reshape(g, cn, nn_shape1(t_numel(g, cn)));
    return nn_concat(g, parts, 3, 0);
}
static void r_cl(const spec *s, double *const *in, double *out) {
    long B = s->shape[0].dim[0], T = s->shape[0].dim[1], C = s->shape[0].dim[2], Hh = s->shape[0].dim[3], W = s->shape[0].dim[4];
    long Ch = s->ip[0], K = s->ip[1], P = K / 2, CI = C + Ch, HW = Hh * W, b, t, o, ch, i, j, ki, kj, q;
    int ii = 1, flags = s->ip[2];
    const double *h0 = NULL, *c0 = NULL, *w, *bias = NULL;
    double *h = (double *)malloc(sizeof(double) * (size_t)(Ch * HW)), *c = (double *)malloc(sizeof(double) * (size_t)(Ch * HW));
    double *gt = (double *)malloc(sizeof(double) * (size_t)(4 * Ch * HW)), *yn = out + B * T * Ch * HW;
    if (flags & F_H0) h0 = in[ii++];
    if (flags & F_C0) c0 = in[ii++];
    w = in[ii++];
    if (!(flags & F_NOBIAS)) bias = in[ii++];
    for (b = 0; b < B; b++) {
        for (q = 0; q < Ch * HW; q++) h[q] = h0 ? h0[b * Ch * HW + q] : 0, c[q] = c0 ? c0[b * Ch * HW + q] : 0;
        for (t = 0; t < T; t++) {
            for (o = 0; o < 4 * Ch; o++)
                for (i = 0; i < Hh; i++)
                    for (j = 0; j < W; j++) {
                        double a = bias ? bias[o] : 0;
                        for (ch = 0; ch < CI; ch++)
                            for (ki = 0; ki < K; ki++)
                                for (kj = 0; kj < K; kj++) {
                                    long y = i + ki - P, x = j + kj - P;
                                    double v;
                                    if (y < 0 || y >= Hh || x < 0 || x >= W) continue;
                                    v = ch < C ? in[0][(((b * T + t) * C + ch) * Hh + y) * W + x] : h[(ch - C) * HW + y * W + x];
                                    a += w[((o * CI + ch) * K + ki) * K + kj] * v;
                                }
                        gt[o * HW + i * W + j] = a;
                    }
            for (q = 0; q < Ch * HW; q++) {
                double ig = r_sig(gt[q]), fg = r_sig(gt[Ch * HW + q]), gg = tanh(gt[2 * Ch * HW + q]), og = r_sig(gt[3 * Ch * HW + q]);
                c[q] = fg * c[q] + ig * gg;
                h[q] = og * tanh(c[q]);
                out[(b * T + t) * Ch * HW + q] = h[q];
            }
        }
        for (q = 0; q < Ch * HW; q++) yn[b * Ch * HW + q] = h[q], yn[B * Ch * HW + b * Ch * HW + q] = c[q];
    }
    free(h);
    free(c);
    free(gt);
}
static void run_cl(const t_env *e, long B, long T, long C, long Hh, long W, long Ch, int K, int flags) {
    char name[160];
    spec c;
    long CI = C + Ch;
    double wr = 1.0 / sqrt((double)(CI * K * K)) + 0.2;
    snprintf(name, sizeof name, "conv_lstm2d B=%ld T=%ld C=%ld H=%ld W=%ld hidden=%ld k=%d%s%s", B, T, C, Hh, W, Ch, K,
             flags & (F_H0 | F_C0) ? " initial states" : "", flags & F_NOBIAS ? " no bias" : "");
    c = mk(name, b_cl, r_cl, nn_shape1(B * T * Ch * Hh * W + 2 * B * Ch * Hh * W));
    c.kind = "layer";
    c.ip[0] = (int)Ch, c.ip[1] = K, c.ip[2] = flags;
    in_fr(&c, nn_shape5(B, T, C, Hh, W), -1, 1);
    if (flags & F_H0) in_fr(&c, nn_shape4(B, Ch, Hh, W), -1, 1);
    if (flags & F_C0) in_fr(&c, nn_shape4(B, Ch, Hh, W), -1, 1);
    in_param(&c, "cl.conv.weight", nn_shape4(4 * Ch, CI, K, K), -wr, wr);
    if (!(flags & F_NOBIAS)) in_param(&c, "cl.conv.bias", nn_shape1(4 * Ch), -0.5, 0.5);
    c.dirs = 3;
    check_case(e, &c);
}

/* ConvLSTM both ways through nn_bidirectional (x [B, T, C, H, W], batch_first) */
static nn_tensor cl_fn(nn_graph *g, nn_tensor x, nn_tensor lens, const char *name, void *user) {
    nn_conv_lstm_desc d;
    (void)lens, (void)user;
    memset(&d, 0, sizeof d);
    return nn_conv_lstm2d(g, x, 2, &d, name);
}
static nn_tensor b_clbi(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return nn_bidirectional(g, in[0], NN_NONE, 1, cl_fn, NULL, "cl");
}
static void r_clbi(const spec *s, double *const *in, double *out) {
    long B = s->shape[0].dim[0], T = s->shape[0].dim[1], C = s->shape[0].dim[2], HW = s->shape[0].dim[3] * s->shape[0].dim[4];
    long Ch = 2, b, t, q, n1 = B * T * C * HW, no = B * T * Ch * HW + 2 * B * Ch * HW;
    spec one = *s;
    double *xr = (double *)malloc(sizeof(double) * (size_t)n1), *o[2], *ins[3];
    int d;
    one.ip[0] = 2, one.ip[1] = 3, one.ip[2] = 0;
    for (b = 0; b < B; b++)
        for (t = 0; t < T; t++)
            for (q = 0; q < C * HW; q++) xr[((b * T + t) * C) * HW + q] = in[0][((b * T + T - 1 - t) * C) * HW + q];
    for (d = 0; d < 2; d++) {
        o[d] = (double *)malloc(sizeof(double) * (size_t)no);
        ins[0] = d ? xr : in[0], ins[1] = in[1 + 2 * d], ins[2] = in[2 + 2 * d];
        r_cl(&one, ins, o[d]);
    }
    for (b = 0; b < B; b++) /* [B, T, 2 * Ch, H, W]: forward, then reverse read back in time order */
        for (t = 0; t < T; t++)
            for (q = 0; q < Ch * HW; q++) {
                out[((b * T + t) * 2 * Ch) * HW + q] = o[0][((b * T + t) * Ch) * HW + q];
                out[((b * T + t) * 2 * Ch + Ch) * HW + q] = o[1][((b * T + T - 1 - t) * Ch) * HW + q];
            }
    free(xr);
    free(o[0]);
    free(o[1]);
}
static void rec_conv_lstm(const t_env *e) {
    spec c;
    run_cl(e, 2, 3, 2, 5, 4, 3, 3, 0);
    run_cl(e, 1, 1, 3, 3, 7, 1, 1, F_H0 | F_C0);
    run_cl(e, 1, 2, 1, 4, 3, 2, 5, F_H0 | F_NOBIAS);
    run_cl(e, 3, 2, 1, 1, 1, 1, 3, F_C0);
    c = mk("bidirectional(conv_lstm2d) B=2 T=3 C=2 H=3 W=4 hidden=2", b_clbi, r_clbi, nn_shape5(2, 3, 4, 3, 4));
    c.kind = "layer";
    in_fr(&c, nn_shape5(2, 3, 2, 3, 4), -1, 1);
    in_param(&c, "cl.conv.weight", nn_shape4(8, 4, 3, 3), -0.4, 0.4);
    in_param(&c, "cl.conv.bias", nn_shape1(8), -0.5, 0.5);
    in_param(&c, "cl_reverse.conv.weight", nn_shape4(8, 4, 3, 3), -0.4, 0.4);
    in_param(&c, "cl_reverse.conv.bias", nn_shape1(8), -0.5, 0.5);
    c.dirs = 3;
    check_case(e, &c);
}

/* ---- refusals ---- */
static nn_rnn_desc rd(void) {
    nn_rnn_desc d;
    memset(&d, 0, sizeof d);
    return d;
}
static nn_tensor r_bad_proj(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.proj_size = 4;
    return nn_gru(g, F(g, S3(5, 2, 3)), 4, &d, "gru");
}
static nn_tensor r_bad_proj2(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.proj_size = 7;
    return nn_lstm(g, F(g, S3(5, 2, 3)), 7, &d, "lstm");
}
static nn_tensor r_bad_h0(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.h0 = nn_input(g, "h0", NN_F32, S3(1, 3, 4));
    return nn_lstm(g, F(g, S3(5, 2, 3)), 4, &d, "lstm");
}
static nn_tensor r_bad_c0(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.num_layers = 2;
    d.c0 = nn_input(g, "c0", NN_F32, S3(1, 2, 4));
    return nn_lstm(g, F(g, S3(5, 2, 3)), 4, &d, "lstm");
}
static nn_tensor r_bad_c0gru(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.c0 = nn_input(g, "c0", NN_F32, S3(1, 2, 4));
    return nn_gru(g, F(g, S3(5, 2, 3)), 4, &d, "gru");
}
static nn_tensor r_bad_len(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.lengths = nn_input(g, "len", NN_F32, S1(2));
    return nn_rnn(g, F(g, S3(5, 2, 3)), 4, &d, "rnn");
}
static nn_tensor r_bad_len2(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.lengths = I(g, S1(3));
    return nn_rnn(g, F(g, S3(5, 2, 3)), 4, &d, "rnn");
}
static nn_tensor r_bad_relu(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.nonlinearity = NN_RNN_RELU;
    return nn_lstm(g, F(g, S3(5, 2, 3)), 4, &d, "lstm");
}
static nn_tensor r_bad_drop(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.dropout = 1.5f;
    return nn_gru(g, F(g, S3(5, 2, 3)), 4, &d, "gru");
}
static nn_tensor r_bad_layers(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.num_layers = -1;
    return nn_gru(g, F(g, S3(5, 2, 3)), 4, &d, "gru");
}
B(r_bad_x2, nn_lstm(g, F(g, S2(5, 3)), 4, NULL, "lstm"))
B(r_bad_hidden, nn_rnn(g, F(g, S3(5, 2, 3)), 0, NULL, "rnn"))
B(r_bad_name, nn_gru(g, F(g, S3(5, 2, 3)), 4, NULL, NULL))
B(r_bad_xint, nn_lstm(g, I(g, S3(5, 2, 3)), 4, NULL, "lstm"))
B(r_bad_cell_x, nn_lstm_cell(g, F(g, S3(5, 2, 3)), NN_NONE, NN_NONE, 4, NULL, "cell", NULL))
B(r_bad_cell_h, nn_gru_cell(g, F(g, S2(2, 3)), nn_input(g, "h", NN_F32, S2(2, 5)), 4, NULL, "cell"))
B(r_bad_cell_c, nn_lstm_cell(g, F(g, S2(2, 3)), NN_NONE, nn_input(g, "c", NN_F32, S2(3, 4)), 4, NULL, "cell", NULL))
B(r_bad_cell_relu, nn_gru_cell(g, F(g, S2(2, 3)), NN_NONE, 4, &(nn_rnn_cell_desc){0, NN_RNN_RELU}, "cell"))
B(r_bad_last_y, nn_last_valid(g, F(g, S2(5, 3)), I(g, S1(5)), 0))
B(r_bad_last_len, nn_last_valid(g, F(g, S3(5, 3, 2)), I(g, S1(5)), 0))

static nn_tensor r_bad_state_h0(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    (void)cd;
    d.stateful = 1;
    d.h0 = F(g, S3(1, 2, 4));
    return nn_lstm(g, F(g, S3(5, 2, 3)), 4, &d, "lstm");
}
static nn_tensor r_bad_state_twice(nn_graph *g, nn_compile_desc *cd) {
    nn_rnn_desc d = rd();
    nn_tensor x = F(g, S3(5, 2, 3));
    (void)cd;
    d.stateful = 1;
    (void)nn_gru(g, x, 4, &d, "gru");
    return nn_gru(g, x, 4, &d, "gru");
}

static nn_tensor r_bad_bi_fn(nn_graph *g, nn_tensor x, nn_tensor lens, const char *name, void *user) {
    (void)lens, (void)user;
    return nn_reshape(g, nn_gru(g, x, 4, NULL, name), nn_shape3(1, 10, 4)); /* [5, 2, 4] as [1, 10, 4] */
}
B(r_bad_bi_x, nn_bidirectional(g, F(g, S2(5, 3)), NN_NONE, 0, bi_fn, NULL, "bi"))
B(r_bad_bi_null, nn_bidirectional(g, F(g, S3(5, 2, 3)), NN_NONE, 0, NULL, NULL, "bi"))
B(r_bad_bi_len, nn_bidirectional(g, F(g, S3(5, 2, 3)), I(g, S1(5)), 0, bi_fn, NULL, "bi"))
B(r_bad_bi_out, nn_bidirectional(g, F(g, S3(5, 2, 3)), NN_NONE, 0, r_bad_bi_fn, NULL, "bi"))

B(r_bad_cl_x, nn_conv_lstm2d(g, F(g, S4(2, 3, 4, 5)), 3, NULL, "cl"))
B(r_bad_cl_hidden, nn_conv_lstm2d(g, F(g, nn_shape5(2, 3, 1, 4, 5)), 0, NULL, "cl"))
B(r_bad_cl_name, nn_conv_lstm2d(g, F(g, nn_shape5(2, 3, 1, 4, 5)), 3, NULL, ""))
static nn_tensor r_bad_cl_k(nn_graph *g, nn_compile_desc *cd) {
    nn_conv_lstm_desc d;
    (void)cd;
    memset(&d, 0, sizeof d);
    d.kernel_size = 4;
    return nn_conv_lstm2d(g, F(g, nn_shape5(2, 3, 1, 4, 5)), 3, &d, "cl");
}
static nn_tensor r_bad_cl_h0(nn_graph *g, nn_compile_desc *cd) {
    nn_conv_lstm_desc d;
    (void)cd;
    memset(&d, 0, sizeof d);
    d.h0 = F(g, S4(2, 3, 5, 4));
    return nn_conv_lstm2d(g, F(g, nn_shape5(2, 3, 1, 4, 5)), 3, &d, "cl");
}

static const bad_row rec_bad_rows[] = {
    {"recurrent", "conv_lstm2d of [2, 3, 4, 5]", r_bad_cl_x, R_SHAPE, "nn_conv_lstm2d cl|[2, 3, 4, 5]|5-D", 0},
    {"recurrent", "conv_lstm2d hidden 0", r_bad_cl_hidden, R_INV, "nn_conv_lstm2d cl|hidden_channels 0", 0},
    {"recurrent", "conv_lstm2d without a name", r_bad_cl_name, R_INV, "nn_conv_lstm2d|name", 0},
    {"recurrent", "conv_lstm2d kernel 4", r_bad_cl_k, R_INV, "nn_conv_lstm2d cl|kernel_size 4|odd", 0},
    {"recurrent", "conv_lstm2d h0 [2, 3, 5, 4]", r_bad_cl_h0, R_SHAPE, "nn_conv_lstm2d cl|h0 [2, 3, 5, 4]|[2, 3, 4, 5]", 0},
    {"recurrent", "bidirectional of [5, 3]", r_bad_bi_x, R_SHAPE, "nn_bidirectional|[5, 3]", 0},
    {"recurrent", "bidirectional without fn", r_bad_bi_null, R_INV, "nn_bidirectional|fn is NULL", 0},
    {"recurrent", "bidirectional lengths [5] for B 2", r_bad_bi_len, R_SHAPE, "nn_bidirectional|lengths int32 [5]|[2]", 0},
    {"recurrent", "bidirectional fn of another shape", r_bad_bi_out, R_SHAPE, "nn_bidirectional bi|fn gave [1, 10, 4]|(5, 2)", 0},
    {"recurrent", "stateful with h0", r_bad_state_h0, R_INV, "nn_lstm|stateful|h0 and c0 must be NN_NONE", 0},
    {"recurrent", "two stateful layers of one name", r_bad_state_twice, R_INV, "nn_gru gru|gru.h_state", 0},
    {"recurrent", "gru proj_size", r_bad_proj, R_INV, "nn_gru|proj_size 4|LSTM only", 0},
    {"recurrent", "lstm proj_size = hidden", r_bad_proj2, R_INV, "nn_lstm|proj_size 7", 0},
    {"recurrent", "lstm h0 [1, 3, 4] for B 2", r_bad_h0, R_SHAPE, "nn_lstm|h0 [1, 3, 4]|[1, 2, 4]", 0},
    {"recurrent", "lstm c0 [1, 2, 4] for 2 layers", r_bad_c0, R_SHAPE, "nn_lstm|c0 [1, 2, 4]|[2, 2, 4]", 0},
    {"recurrent", "gru c0", r_bad_c0gru, R_INV, "nn_gru|c0", 0},
    {"recurrent", "float lengths", r_bad_len, R_SHAPE, "nn_rnn|lengths float32 [2]|int32 [2]", 0},
    {"recurrent", "lengths [3] for B 2", r_bad_len2, R_SHAPE, "nn_rnn|lengths int32 [3]|int32 [2]", 0},
    {"recurrent", "lstm relu", r_bad_relu, R_INV, "nn_lstm|nonlinearity 1", 0},
    {"recurrent", "dropout 1.5", r_bad_drop, R_INV, "nn_gru|dropout 1.5", 0},
    {"recurrent", "num_layers -1", r_bad_layers, R_INV, "nn_gru|num_layers -1", 0},
    {"recurrent", "lstm of [5, 3]", r_bad_x2, R_SHAPE, "nn_lstm|[5, 3]|3-D", 0},
    {"recurrent", "rnn hidden 0", r_bad_hidden, R_INV, "nn_rnn|hidden_size 0", 0},
    {"recurrent", "gru without a name", r_bad_name, R_INV, "nn_gru|name", 0},
    {"recurrent", "lstm of int32", r_bad_xint, R_SHAPE, "nn_lstm|int32", 0},
    {"recurrent", "lstm_cell of [5, 2, 3]", r_bad_cell_x, R_SHAPE, "nn_lstm_cell|[5, 2, 3]|2-D", 0},
    {"recurrent", "gru_cell h [2, 5] for hidden 4", r_bad_cell_h, R_SHAPE, "nn_gru_cell|h [2, 5]|[2, 4]", 0},
    {"recurrent", "lstm_cell c [3, 4] for B 2", r_bad_cell_c, R_SHAPE, "nn_lstm_cell|c [3, 4]|[2, 4]", 0},
    {"recurrent", "gru_cell relu", r_bad_cell_relu, R_INV, "nn_gru_cell|nonlinearity 1", 0},
    {"recurrent", "last_valid of [5, 3]", r_bad_last_y, R_SHAPE, "nn_last_valid|[5, 3]|3-D", 0},
    {"recurrent", "last_valid lengths [5] for B 3", r_bad_last_len, R_SHAPE, "nn_last_valid|lengths int32 [5]|[3]", 0},
};

static void rec_cells(const t_env *e) {
    run_cell(e, K_LSTM, 3, 3, 7, F_H0 | F_C0);
    run_cell(e, K_LSTM, 1, 17, 1, 0);
    run_cell(e, K_GRU, 3, 3, 7, F_H0);
    run_cell(e, K_GRU, 1, 17, 33, F_NOBIAS);
    run_cell(e, K_RNN, 3, 3, 7, F_H0);
    run_cell(e, K_RNN, 3, 17, 7, F_H0 | F_RELU);
}

static void rec_single(const t_env *e) {
    run_layer(e, K_LSTM, 5, 3, 3, 7, 1, 1, 0, 0);
    run_layer(e, K_LSTM, 1, 1, 17, 1, 1, 1, 0, 0);
    run_layer(e, K_LSTM, 33, 3, 3, 7, 1, 1, 0, F_H0 | F_C0);
    run_layer(e, K_LSTM, 5, 3, 17, 33, 1, 1, 0, F_BF);
    run_layer(e, K_GRU, 5, 3, 3, 7, 1, 1, 0, F_H0);
    run_layer(e, K_GRU, 33, 1, 17, 1, 1, 1, 0, 0);
    run_layer(e, K_GRU, 5, 3, 3, 33, 1, 1, 0, F_NOBIAS);
    run_layer(e, K_RNN, 5, 3, 3, 7, 1, 1, 0, F_H0);
    run_layer(e, K_RNN, 33, 3, 17, 1, 1, 1, 0, 0);
    run_layer(e, K_RNN, 5, 3, 3, 7, 1, 1, 0, F_RELU | F_BF);
}

static void rec_stacked(const t_env *e) {
    run_layer(e, K_LSTM, 5, 3, 3, 7, 1, 2, 0, F_H0 | F_C0);
    run_layer(e, K_GRU, 5, 3, 17, 7, 2, 2, 0, F_BF);
    run_layer(e, K_RNN, 5, 1, 3, 7, 3, 1, 0, F_H0);
    run_layer(e, K_LSTM, 5, 3, 3, 7, 2, 1, 0, 0);
}

/* Dropout between layers: in an eval graph the identity (the reference without dropout);
   in a training graph layer 0's final state is untouched, the output and layer 1's final
   state change, and the CPU backend draws the same masks. */
static int drop_run(nn_context *ctx, int eval, float *y, float *hn) {
    enum { T = 5, B = 3, I = 4, H = 6 };
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_rnn_desc d;
    nn_tensor x, out, h;
    float xs[T * B * I];
    int i, ok;
    memset(&gd, 0, sizeof gd);
    gd.eval = eval;
    gd.seed = 7;
    memset(&d, 0, sizeof d);
    d.num_layers = 2;
    d.dropout = 0.5f;
    d.h_n = &h;
    for (i = 0; i < T * B * I; i++) xs[i] = (float)((i * 37) % 19) / 9.0f - 1.0f;
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape3(T, B, I));
    out = nn_gru(g, x, H, &d, "gru");
    nn_graph_output(g, out);
    nn_graph_output(g, h);
    ok = T_OK(nn_graph_compile(g, NULL), ctx) && T_OK(nn_tensor_write(g, x, xs, sizeof xs), ctx) &&
         T_OK(nn_graph_forward(g), ctx) && T_OK(nn_tensor_read(g, out, y, sizeof(float) * T * B * H), ctx) &&
         T_OK(nn_tensor_read(g, h, hn, sizeof(float) * 2 * B * H), ctx);
    nn_graph_destroy(g);
    return ok;
}

static void rec_dropout(const t_env *e) {
    enum { N = 5 * 3 * 6, S = 3 * 6 };
    char name[160];
    float y[N], hn[2 * S], ye[N], hne[2 * S], yc[N], hnc[2 * S];
    spec c = layer_case(name, sizeof name, K_GRU, 5, 3, 3, 7, 2, 1, 0, F_H0);
    int i, same_y = 1, same_h0 = 1, same_h1 = 1;
    double err = 0;
    strcat(name, " dropout 0.5 eval");
    c.fp[0] = 0.5f;
    c.eval = 1;
    check_case(e, &c);
    if (!t_begin(e, "recurrent: dropout between layers while training")) return;
    if (drop_run(e->ctx, 0, y, hn) && drop_run(e->ctx, 1, ye, hne)) {
        for (i = 0; i < N; i++) same_y &= y[i] == ye[i];
        for (i = 0; i < S; i++) same_h0 &= hn[i] == hne[i], same_h1 &= hn[S + i] == hne[S + i];
        T_CHECK(!same_y && !same_h1, "training with dropout 0.5 gives the eval graph's output");
        T_CHECK(same_h0, "layer 0's final state changed by the dropout after it");
        if (e->cpu && drop_run(e->cpu, 0, yc, hnc)) {
            for (i = 0; i < N; i++) err = fabs(y[i] - yc[i]) > err ? fabs(y[i] - yc[i]) : err;
            for (i = 0; i < 2 * S; i++) err = fabs(hn[i] - hnc[i]) > err ? fabs(hn[i] - hnc[i]) : err;
            T_CHECK(err < 1e-4, "the CPU backend's dropout run differs by %g", err);
        }
    }
    t_end();
}

/* Lengths outside [1, T], which PyTorch raises on: counted, reported at the next finish. */
static void rec_len_report(const t_env *e) {
    nn_graph *g = NULL;
    nn_rnn_desc d;
    nn_tensor x, lens, y, last;
    int32_t bad[3] = {0, 6, 3}, good[3] = {5, 1, 3};
    nn_result r;
    if (!t_begin(e, "recurrent: lengths outside [1, T] counted and reported at finish")) return;
    memset(&d, 0, sizeof d);
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        x = nn_input(g, "x", NN_F32, nn_shape3(5, 3, 2));
        lens = nn_input(g, "lengths", NN_I32, nn_shape1(3));
        d.lengths = lens;
        d.bidirectional = 1;
        y = nn_lstm(g, x, 4, &d, "lstm");
        last = nn_last_valid(g, y, lens, 0);
        nn_graph_output(g, last);
        if (T_OK(nn_graph_compile(g, NULL), e->ctx) && T_OK(nn_tensor_write(g, lens, good, sizeof good), e->ctx) &&
            T_OK(nn_graph_forward(g), e->ctx) && T_OK(nn_graph_finish(g), e->ctx) &&
            T_OK(nn_tensor_write(g, lens, bad, sizeof bad), e->ctx) && T_OK(nn_graph_forward(g), e->ctx)) {
            r = nn_graph_finish(g);
            T_CHECK(r == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(e->ctx), "nn_lstm: lengths outside [1, T]: 2 of them") &&
                        strstr(nn_context_last_error(e->ctx), "nn_last_valid: lengths outside [1, T]: 2 of them"),
                    "finish gave %d, \"%s\"", (int)r, nn_context_last_error(e->ctx));
        }
    }
    nn_graph_destroy(g);
    t_end();
}

/* A training step's launches (OpenCL: kernels; CPU: op runs) and transfers for an LSTM of
   T steps: the time loop adds 2 kernels a step forward and 2 backward, no node, and nothing
   crosses between host and device. */
static int launch_run(const t_env *e, int T, uint64_t *launches, uint64_t *bytes) {
    nn_graph *g = NULL;
    nn_tensor x, y;
    nn_compile_desc cd;
    nn_stats s0, s1;
    nn_rnn_desc d;
    int ok;
    memset(&d, 0, sizeof d);
    d.bidirectional = 1;
    if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape3(T, 2, 3));
    y = nn_lstm(g, x, 5, &d, "lstm");
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mean(g, nn_mul(g, y, y));
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.1f;
    ok = T_OK(nn_graph_compile(g, &cd), e->ctx) && T_OK(nn_graph_step(g), e->ctx) && T_OK(nn_graph_finish(g), e->ctx);
    nn_context_stats(e->ctx, &s0);
    ok = ok && T_OK(nn_graph_step(g), e->ctx) && T_OK(nn_graph_finish(g), e->ctx);
    nn_context_stats(e->ctx, &s1);
    *launches = s1.kernel_launches - s0.kernel_launches;
    *bytes = s1.h2d_bytes - s0.h2d_bytes + s1.d2h_bytes - s0.d2h_bytes;
    nn_graph_destroy(g);
    return ok;
}

static void rec_launches(const t_env *e) {
    uint64_t l5 = 0, l9 = 0, b5 = 1, b9 = 1;
    if (!t_begin(e, "recurrent: launches per time step, no transfers")) return;
    if (launch_run(e, 5, &l5, &b5) && launch_run(e, 9, &l9, &b9)) {
        /* 2 directions x 4 more steps x (2 forward + 2 backward) kernels; no node more */
        uint64_t want = e->opencl ? 2 * 4 * 4 : 0;
        T_CHECK(l9 - l5 == want, "T 9 - T 5: %llu more launches a step, not %llu", (unsigned long long)(l9 - l5),
                (unsigned long long)want);
        T_CHECK(b5 == 0 && b9 == 0, "a step moved %llu and %llu bytes", (unsigned long long)b5, (unsigned long long)b9);
    }
    t_end();
}

static void rec_lengths(const t_env *e) {
    run_layer(e, K_LSTM, 5, 3, 3, 7, 1, 1, 0, F_LEN);
    run_layer(e, K_LSTM, 5, 3, 3, 7, 1, 2, 0, F_LEN | F_H0 | F_C0 | F_BF);
    run_layer(e, K_GRU, 5, 3, 3, 7, 2, 2, 0, F_LEN | F_H0);
    run_layer(e, K_RNN, 33, 3, 3, 7, 1, 2, 0, F_LEN);
    run_layer(e, K_GRU, 1, 3, 3, 7, 1, 2, 0, F_LEN);
    run_last(e, 5, 3, 7, 0);
    run_last(e, 5, 3, 7, 1);
    run_last(e, 1, 1, 1, 0);
}

static void rec_proj(const t_env *e) {
    run_layer(e, K_LSTM, 5, 3, 3, 7, 1, 1, 3, F_H0 | F_C0);
    run_layer(e, K_LSTM, 5, 3, 17, 7, 2, 1, 1, F_LEN);
    run_layer(e, K_LSTM, 5, 3, 3, 7, 1, 2, 2, F_LEN | F_BF);
    run_layer(e, K_LSTM, 33, 1, 3, 33, 1, 1, 7, 0);
}

/* ---- stateful layers (truncated BPTT) ---- */
enum { ST_T = 4, ST_B = 3, ST_I = 3, ST_H = 5, ST_L = 2 };
#define ST_Y (ST_T * ST_B * ST_H)
#define ST_S (ST_L * ST_B * ST_H)
typedef struct st_out {
    float y1[ST_Y], y2[ST_Y], y3[ST_Y], yl[2 * ST_Y], yc[ST_Y]; /* run 1, 2, after reset; 2T; fresh with carried h0 */
    float h1[ST_S], c1[ST_S];     /* the states after run 1 */
    float g2[2][4 * ST_H * ST_H]; /* weight_hh_l0, weight_hh_l1 gradients of run 2 (stateful, fresh) */
    uint64_t bytes;               /* moved by run 2's step (x written before) */
} st_out;

static void st_x(float *x, int n, int k) {
    int i;
    for (i = 0; i < n; i++) x[i] = (float)(((i + 7 * k) * 37) % 23) / 11.0f - 1.0f;
}

/* kind K_LSTM or K_GRU, 2 layers; graph A stateful over T, B the same weights over 2T, C
   over T with h0 (c0) inputs */
static int st_run(nn_context *ctx, int kind, st_out *o) {
    nn_graph *ga = NULL, *gb = NULL, *gc = NULL;
    nn_graph_desc gd;
    nn_rnn_desc d;
    nn_compile_desc cd;
    nn_tensor xa, ya, xb, yb, xc, yc, h0, c0 = NN_NONE, hs, cs = NN_NONE;
    nn_stats s0, s1;
    float x1[ST_T * ST_B * ST_I], x2[ST_T * ST_B * ST_I], xx[2 * ST_T * ST_B * ST_I];
    const char *wn[2] = {"rnn.weight_hh_l0", "rnn.weight_hh_l1"};
    int ok = 1, k, i, G = kind == K_LSTM ? 4 : 3;
    size_t gsz = sizeof(float) * (size_t)(G * ST_H * ST_H);
    st_x(x1, ST_T * ST_B * ST_I, 1);
    st_x(x2, ST_T * ST_B * ST_I, 2);
    memcpy(xx, x1, sizeof x1);
    memcpy(xx + ST_T * ST_B * ST_I, x2, sizeof x2);
#define ST_LAYER(g, x, dp) (kind == K_LSTM ? nn_lstm(g, x, ST_H, dp, "rnn") : nn_gru(g, x, ST_H, dp, "rnn"))
    memset(&gd, 0, sizeof gd);
    gd.seed = 11;
    ok = T_OK(nn_graph_create(ctx, &gd, &ga), ctx);
    if (!ok) return 0;
    memset(&d, 0, sizeof d);
    d.num_layers = ST_L;
    d.stateful = 1;
    xa = nn_input(ga, "x", NN_F32, nn_shape3(ST_T, ST_B, ST_I));
    ya = ST_LAYER(ga, xa, &d);
    nn_graph_output(ga, ya);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(ga, nn_mul(ga, ya, ya));
    cd.optimizer.kind = NN_OPT_NONE;
    ok = T_OK(nn_graph_compile(ga, &cd), ctx);
    hs = nn_graph_find(ga, "rnn.h_state");
    if (kind == K_LSTM) cs = nn_graph_find(ga, "rnn.c_state");
    ok = ok && T_CHECK(hs.id > 0 && (kind != K_LSTM || cs.id > 0), "no rnn.h_state / rnn.c_state");
    /* run 1, run 2 (its transfers counted), reset, run 1 again */
    ok = ok && T_OK(nn_tensor_write(ga, xa, x1, sizeof x1), ctx) && T_OK(nn_graph_step(ga), ctx) &&
         T_OK(nn_tensor_read(ga, ya, o->y1, sizeof o->y1), ctx) && T_OK(nn_tensor_read(ga, hs, o->h1, sizeof o->h1), ctx) &&
         (kind != K_LSTM || T_OK(nn_tensor_read(ga, cs, o->c1, sizeof o->c1), ctx)) &&
         T_OK(nn_tensor_write(ga, xa, x2, sizeof x2), ctx);
    nn_context_stats(ctx, &s0);
    ok = ok && T_OK(nn_graph_step(ga), ctx) && T_OK(nn_graph_finish(ga), ctx);
    nn_context_stats(ctx, &s1);
    o->bytes = s1.h2d_bytes - s0.h2d_bytes + s1.d2h_bytes - s0.d2h_bytes;
    ok = ok && T_OK(nn_tensor_read(ga, ya, o->y2, sizeof o->y2), ctx);
    for (k = 0; k < 2 && ok; k++) ok = T_OK(nn_tensor_read(ga, nn_graph_grad(ga, nn_graph_find(ga, wn[k])), o->g2[k], gsz), ctx);
    ok = ok && T_OK(nn_rnn_reset_state(ga, "rnn"), ctx) && T_OK(nn_tensor_write(ga, xa, x1, sizeof x1), ctx) &&
         T_OK(nn_graph_forward(ga), ctx) && T_OK(nn_tensor_read(ga, ya, o->y3, sizeof o->y3), ctx);
    ok = ok && T_CHECK(nn_rnn_reset_state(ga, "nothing") == NN_ERR_INVALID_ARGUMENT, "reset of an unknown layer accepted");
    /* B: one forward over 2T, the same parameters */
    gd.share_params = ga;
    if (ok && T_OK(nn_graph_create(ctx, &gd, &gb), ctx)) {
        memset(&d, 0, sizeof d);
        d.num_layers = ST_L;
        xb = nn_input(gb, "x", NN_F32, nn_shape3(2 * ST_T, ST_B, ST_I));
        yb = ST_LAYER(gb, xb, &d);
        nn_graph_output(gb, yb);
        ok = T_OK(nn_graph_compile(gb, NULL), ctx) && T_OK(nn_tensor_write(gb, xb, xx, sizeof xx), ctx) &&
             T_OK(nn_graph_forward(gb), ctx) && T_OK(nn_tensor_read(gb, yb, o->yl, sizeof o->yl), ctx);
    } else {
        ok = 0;
    }
    /* C: run 2 again from run 1's states given as constant inputs; its gradients */
    if (ok && T_OK(nn_graph_create(ctx, &gd, &gc), ctx)) {
        float gw[4 * ST_H * ST_H];
        memset(&d, 0, sizeof d);
        d.num_layers = ST_L;
        xc = nn_input(gc, "x", NN_F32, nn_shape3(ST_T, ST_B, ST_I));
        d.h0 = h0 = nn_input(gc, "h0", NN_F32, nn_shape3(ST_L, ST_B, ST_H));
        if (kind == K_LSTM) d.c0 = c0 = nn_input(gc, "c0", NN_F32, nn_shape3(ST_L, ST_B, ST_H));
        yc = ST_LAYER(gc, xc, &d);
        nn_graph_output(gc, yc);
        memset(&cd, 0, sizeof cd);
        cd.loss = nn_sum(gc, nn_mul(gc, yc, yc));
        cd.optimizer.kind = NN_OPT_NONE;
        ok = T_OK(nn_graph_compile(gc, &cd), ctx) && T_OK(nn_tensor_write(gc, xc, x2, sizeof x2), ctx) &&
             T_OK(nn_tensor_write(gc, h0, o->h1, sizeof o->h1), ctx) &&
             (kind != K_LSTM || T_OK(nn_tensor_write(gc, c0, o->c1, sizeof o->c1), ctx)) && T_OK(nn_graph_step(gc), ctx) &&
             T_OK(nn_tensor_read(gc, yc, o->yc, sizeof o->yc), ctx);
        for (k = 0; k < 2 && ok; k++) {
            ok = T_OK(nn_tensor_read(gc, nn_graph_grad(gc, nn_graph_find(gc, wn[k])), gw, gsz), ctx);
            for (i = 0; ok && i < (int)(gsz / sizeof(float)); i++)
                ok = T_CHECK(gw[i] == o->g2[k][i], "%s gradient [%d]: stateful run 2 %g, a fresh run from its states %g", wn[k], i,
                             o->g2[k][i], gw[i]);
        }
    } else {
        ok = 0;
    }
#undef ST_LAYER
    nn_graph_destroy(gc);
    nn_graph_destroy(gb);
    nn_graph_destroy(ga);
    return ok;
}

static float st_maxdiff(const float *a, const float *b, int n) {
    float m = 0;
    int i;
    for (i = 0; i < n; i++) m = fabsf(a[i] - b[i]) > m ? fabsf(a[i] - b[i]) : m;
    return m;
}

static void rec_stateful_kind(const t_env *e, int kind) {
    static st_out o, oc;
    char name[96];
    snprintf(name, sizeof name, "recurrent: stateful %s (truncated BPTT): carried states, the cut, reset", kind_name(kind));
    if (!t_begin(e, name)) return;
    memset(&o, 0, sizeof o);
    if (st_run(e->ctx, kind, &o)) {
        T_CHECK(st_maxdiff(o.y1, o.yl, ST_Y) <= 1e-5f, "run 1 differs from the 2T forward's first half by %g",
                st_maxdiff(o.y1, o.yl, ST_Y));
        T_CHECK(st_maxdiff(o.y2, o.yl + ST_Y, ST_Y) <= 1e-5f, "run 2 differs from the 2T forward's second half by %g",
                st_maxdiff(o.y2, o.yl + ST_Y, ST_Y));
        T_CHECK(st_maxdiff(o.y2, o.yc, ST_Y) == 0.0f, "run 2 differs from a fresh run from its carried states by %g",
                st_maxdiff(o.y2, o.yc, ST_Y));
        T_CHECK(st_maxdiff(o.y3, o.y1, ST_Y) == 0.0f, "after nn_rnn_reset_state the run differs from the first by %g",
                st_maxdiff(o.y3, o.y1, ST_Y));
        T_CHECK(st_maxdiff(o.y1, o.y2, ST_Y) > 1e-3f, "runs 1 and 2 give the same output");
        T_CHECK(o.bytes == 0, "a stateful step moved %llu bytes", (unsigned long long)o.bytes);
        memset(&oc, 0, sizeof oc);
        if (e->cpu && e->opencl && st_run(e->cpu, kind, &oc))
            T_CHECK(st_maxdiff(o.y2, oc.y2, ST_Y) <= 1e-4f && st_maxdiff(o.g2[0], oc.g2[0], 4 * ST_H * ST_H) <= 1e-4f,
                    "the CPU backend's run 2 differs by %g (output), %g (gradient)", st_maxdiff(o.y2, oc.y2, ST_Y),
                    st_maxdiff(o.g2[0], oc.g2[0], 4 * ST_H * ST_H));
    }
    t_end();
}
static void rec_stateful(const t_env *e) {
    rec_stateful_kind(e, K_LSTM);
    rec_stateful_kind(e, K_GRU);
}

static void rec_bad(const t_env *e) { t_bad_rows(e, rec_bad_rows, (int)(sizeof rec_bad_rows / sizeof rec_bad_rows[0])); }

void suite_recurrent(const t_env *e) { T_RUN(e, rec_cells, rec_single, rec_stacked, rec_dropout, rec_launches, rec_lengths, rec_len_report, rec_proj, rec_bad, rec_stateful, rec_bidirectional, rec_conv_lstm); }
