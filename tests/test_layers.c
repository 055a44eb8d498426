/* The composed layers (src/layers/layers.c) against double-precision references written here:
   forward values, and the gradients of L = sum(out * w) (w random) with respect to every
   input and every parameter against central differences of the reference, element by
   element (h = 1e-6 max(1, |x|)); on OpenCL devices the same graph on the CPU backend too.
   Parameters are the layer's own (found by their PyTorch names with nn_graph_find, their shapes
   checked) with values written by the test. Shapes are small and odd.
   Tolerances (float32 against double): forward and gradients 1e-4 relative (t_relerr);
   OpenCL vs CPU 1e-4 relative, element by element. */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define L_TOL 1e-4
#define LMAX 20

typedef struct lcase lcase;
typedef nn_tensor (*lbuild)(nn_graph *g, const nn_tensor *in, const lcase *c);
typedef void (*lref)(const lcase *c, double *const *t, double *out);
struct lcase {
    const char *name;
    int n, n_in;                /* tensors 0..n_in-1 are inputs, n_in..n-1 the layer's parameters */
    char pbuf[LMAX][64];        /* a parameter's name */
    nn_shape shape[LMAX];
    int nograd[LMAX];
    double lo[LMAX], hi[LMAX];  /* values uniform in [lo, hi) */
    nn_shape out;
    lbuild build;
    lref ref;
    int ip[4];
    double fp[2];
};

static void l_in(lcase *c, nn_shape s, double lo, double hi) {
    c->shape[c->n] = s;
    c->lo[c->n] = lo;
    c->hi[c->n] = hi;
    c->n++;
    c->n_in = c->n;
}
static void l_par(lcase *c, const char *name, nn_shape s, double lo, double hi) {
    snprintf(c->pbuf[c->n], sizeof c->pbuf[c->n], "%s", name);
    c->shape[c->n] = s;
    c->lo[c->n] = lo;
    c->hi[c->n] = hi;
    c->n++;
}

typedef struct lres {
    double *out, *grad[LMAX];
    int ok;
} lres;

static void lres_free(lres *r) {
    int i;
    free(r->out);
    for (i = 0; i < LMAX; i++) free(r->grad[i]);
    memset(r, 0, sizeof *r);
}

static int same_shape(nn_shape a, nn_shape b) {
    int i;
    if (a.ndim != b.ndim) return 0;
    for (i = 0; i < a.ndim; i++)
        if (a.dim[i] != b.dim[i]) return 0;
    return 1;
}

static lres l_run(nn_context *ctx, const lcase *c, double *const *v, const double *w) {
    lres r;
    nn_graph *g = NULL;
    nn_tensor t[LMAX], out, wt;
    nn_compile_desc cd;
    nn_graph_desc gd;
    long no = numel(c->out), i;
    int k;
    float *buf;
    memset(&r, 0, sizeof r);
    memset(&gd, 0, sizeof gd);
    gd.seed = 7;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return r;
    for (k = 0; k < c->n_in; k++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", k);
        t[k] = nn_input(g, name, NN_F32, c->shape[k]);
        if (!c->nograd[k]) nn_graph_requires_grad(g, t[k]);
    }
    out = c->build(g, t, c);
    if (!T_OK(nn_graph_status(g), ctx)) goto done;
    if (!T_CHECK(same_shape(t_shape(g, out), c->out), "%s: output shape differs", c->name)) goto done;
    for (k = c->n_in; k < c->n; k++) {
        t[k] = nn_graph_find(g, c->pbuf[k]);
        if (!T_CHECK(t[k].id > 0, "%s: no parameter %s", c->name, c->pbuf[k])) goto done;
        if (!T_CHECK(same_shape(t_shape(g, t[k]), c->shape[k]), "%s: parameter %s has another shape", c->name,
                     c->pbuf[k]))
            goto done;
    }
    wt = nn_input(g, "w", NN_F32, c->out);
    nn_graph_output(g, out);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, out, wt));
    cd.keep_grads = 1;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    for (k = 0; k < c->n; k++) {
        long n = numel(c->shape[k]);
        buf = (float *)malloc((size_t)n * 4);
        for (i = 0; i < n; i++) buf[i] = (float)v[k][i];
        T_OK(nn_tensor_write(g, t[k], buf, (size_t)n * 4), ctx);
        free(buf);
    }
    buf = (float *)malloc((size_t)no * 4);
    for (i = 0; i < no; i++) buf[i] = (float)w[i];
    T_OK(nn_tensor_write(g, wt, buf, (size_t)no * 4), ctx);
    free(buf);
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    r.out = (double *)calloc((size_t)no, sizeof(double));
    buf = (float *)malloc((size_t)no * 4);
    if (T_OK(nn_tensor_read(g, out, buf, (size_t)no * 4), ctx))
        for (i = 0; i < no; i++) r.out[i] = buf[i];
    free(buf);
    for (k = 0; k < c->n; k++) {
        long n = numel(c->shape[k]);
        nn_tensor gr;
        if (c->nograd[k]) continue;
        gr = nn_graph_grad(g, t[k]);
        r.grad[k] = (double *)calloc((size_t)n, sizeof(double));
        buf = (float *)malloc((size_t)n * 4);
        if (T_CHECK(gr.id > 0, "%s: no gradient for tensor %d", c->name, k) &&
            T_OK(nn_tensor_read(g, gr, buf, (size_t)n * 4), ctx))
            for (i = 0; i < n; i++) r.grad[k][i] = buf[i];
        free(buf);
    }
    r.ok = 1;
done:
    nn_graph_destroy(g);
    return r;
}

static double l_loss(const lcase *c, double *const *v, const double *w, double *tmp) {
    long i, n = numel(c->out);
    double L = 0;
    c->ref(c, v, tmp);
    for (i = 0; i < n; i++) L += tmp[i] * w[i];
    return L;
}

static void l_check(const t_env *e, const lcase *c) {
    double *v[LMAX], *w, *ref, *tmp;
    long no = numel(c->out), i;
    int k;
    lres r, rc;
    char label[160];
    snprintf(label, sizeof label, "layer %s", c->name);
    if (!t_begin(e, label)) return;
    t_seed(0x1a7e5 + (unsigned long long)strlen(c->name) * 131 + (unsigned long long)no);
    for (k = 0; k < c->n; k++) {
        long n = numel(c->shape[k]);
        v[k] = (double *)malloc((size_t)n * sizeof(double));
        for (i = 0; i < n; i++) v[k][i] = (double)(float)t_uniform(c->lo[k], c->hi[k]);
    }
    w = (double *)malloc((size_t)no * sizeof(double));
    for (i = 0; i < no; i++) w[i] = (double)(float)t_uniform(-1, 1);
    ref = (double *)malloc((size_t)no * sizeof(double));
    tmp = (double *)malloc((size_t)no * sizeof(double));
    c->ref(c, v, ref);
    r = l_run(e->ctx, c, v, w);
    if (r.ok) {
        double err = t_relerr(r.out, ref, no);
        T_CHECK(err <= L_TOL, "%s forward: relative error %.3g > %.1g", c->name, err, L_TOL);
        for (k = 0; k < c->n; k++) {
            long n = numel(c->shape[k]);
            double *fd;
            if (c->nograd[k] || !r.grad[k]) continue;
            fd = (double *)malloc((size_t)n * sizeof(double));
            for (i = 0; i < n; i++) {
                double x0 = v[k][i], h = 1e-6 * (fabs(x0) > 1 ? fabs(x0) : 1), lp, lm;
                v[k][i] = x0 + h;
                lp = l_loss(c, v, w, tmp);
                v[k][i] = x0 - h;
                lm = l_loss(c, v, w, tmp);
                v[k][i] = x0;
                fd[i] = (lp - lm) / (2 * h);
            }
            err = t_relerr(r.grad[k], fd, n);
            T_CHECK(err <= L_TOL, "%s d/d(%s): relative error %.3g > %.1g against finite differences", c->name,
                    k < c->n_in ? "input" : c->pbuf[k], err, L_TOL);
            free(fd);
        }
        if (e->cpu) {
            rc = l_run(e->cpu, c, v, w);
            if (rc.ok) {
                err = t_relerr(r.out, rc.out, no);
                T_CHECK(err <= L_TOL, "%s: OpenCL vs CPU forward differ by %.3g", c->name, err);
                for (k = 0; k < c->n; k++) {
                    if (!r.grad[k] || !rc.grad[k]) continue;
                    err = t_relerr(r.grad[k], rc.grad[k], numel(c->shape[k]));
                    T_CHECK(err <= L_TOL, "%s: OpenCL vs CPU gradient of tensor %d differ by %.3g", c->name, k, err);
                }
            }
            lres_free(&rc);
        }
    }
    lres_free(&r);
    for (k = 0; k < c->n; k++) free(v[k]);
    free(w);
    free(ref);
    free(tmp);
    t_end();
}

static lcase l_mk(const char *name, lbuild b, lref r, nn_shape out) {
    lcase c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.build = b;
    c.ref = r;
    c.out = out;
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
static nn_tensor b_se(nn_graph *g, const nn_tensor *in, const lcase *c) { return nn_se_layer(g, in[0], c->ip[0], "se"); }
static void r_se(const lcase *c, double *const *t, double *out) {
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
static nn_tensor b_glu(nn_graph *g, const nn_tensor *in, const lcase *c) { return nn_glu(g, in[0], c->ip[0]); }
static void r_glu(const lcase *c, double *const *t, double *out) {
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
static nn_tensor b_swiglu(nn_graph *g, const nn_tensor *in, const lcase *c) { return nn_swiglu_layer(g, in[0], c->ip[0], "ffn"); }
static void r_swiglu(const lcase *c, double *const *t, double *out) {
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
static nn_tensor b_highway(nn_graph *g, const nn_tensor *in, const lcase *c) {
    (void)c;
    return nn_highway_layer(g, in[0], "hw");
}
static void r_highway(const lcase *c, double *const *t, double *out) {
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
static nn_tensor b_rmse(nn_graph *g, const nn_tensor *in, const lcase *c) {
    (void)c;
    return nn_rmse_loss(g, in[0], in[1], NULL);
}
static void r_rmse(const lcase *c, double *const *t, double *out) {
    long n = numel(c->shape[0]), i;
    double s = 0;
    for (i = 0; i < n; i++) s += (t[0][i] - t[1][i]) * (t[0][i] - t[1][i]);
    out[0] = sqrt(s / (double)n);
}

/* ---- InfoNCE ---- */
static nn_tensor b_nce(nn_graph *g, const nn_tensor *in, const lcase *c) {
    return nn_info_nce_loss(g, in[0], in[1], (float)c->fp[0], NULL);
}
static void r_nce(const lcase *c, double *const *t, double *out) {
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
static nn_tensor b_rbf(nn_graph *g, const nn_tensor *in, const lcase *c) { return nn_rbf_layer(g, in[0], c->ip[0], "rbf"); }
static void r_rbf(const lcase *c, double *const *t, double *out) {
    long B = c->shape[0].dim[0], D = c->shape[0].dim[1], K = c->ip[0], b, k, d;
    for (b = 0; b < B; b++)
        for (k = 0; k < K; k++) {
            double s = 0;
            for (d = 0; d < D; d++) s += (t[0][b * D + d] - t[1][k * D + d]) * (t[0][b * D + d] - t[1][k * D + d]);
            out[b * K + k] = exp(-exp(t[2][k]) * s);
        }
}

/* ---- mixture of experts: out = [y flattened, aux_loss] ---- */
static nn_tensor b_moe(nn_graph *g, const nn_tensor *in, const lcase *c) {
    nn_tensor aux, y, parts[2];
    nn_moe_desc md;
    md.aux_loss = &aux;
    y = nn_moe_layer(g, in[0], c->ip[0], c->ip[1], c->ip[2], &md, "moe");
    parts[0] = nn_reshape(g, y, nn_shape1(numel(c->shape[0])));
    parts[1] = aux;
    return nn_concat(g, parts, 2, 0);
}
static void r_moe(const lcase *c, double *const *t, double *out) {
    long B = c->shape[0].dim[0], D = c->shape[0].dim[1], E = c->ip[0], K = c->ip[1], Hd = c->ip[2], b, e, d, j;
    double f[16] = {0}, P[16] = {0}, aux = 0;
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

static lcase moe_case(const char *name, long B, long D, int E, int K, int Hd) {
    lcase c = l_mk(name, b_moe, r_moe, nn_shape1(B * D + 1));
    int e;
    char nm[64];
    c.ip[0] = E;
    c.ip[1] = K;
    c.ip[2] = Hd;
    l_in(&c, nn_shape2(B, D), -1, 1);
    l_par(&c, "moe.gate.weight", nn_shape2(E, D), -1.5, 1.5);
    for (e = 0; e < E; e++) {
        snprintf(nm, sizeof nm, "moe.experts.%d.fc1.weight", e);
        l_par(&c, nm, nn_shape2(Hd, D), -1, 1);
        snprintf(nm, sizeof nm, "moe.experts.%d.fc1.bias", e);
        l_par(&c, nm, nn_shape1(Hd), -0.5, 0.5);
        snprintf(nm, sizeof nm, "moe.experts.%d.fc2.weight", e);
        l_par(&c, nm, nn_shape2(D, Hd), -1, 1);
        snprintf(nm, sizeof nm, "moe.experts.%d.fc2.bias", e);
        l_par(&c, nm, nn_shape1(D), -0.5, 0.5);
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
            case 2: t = nn_moe_layer(g, x2, 2, 3, 4, &(nn_moe_desc){&aux}, "moe"); break;
            case 3: t = nn_info_nce_loss(g, x2, nn_input(g, "y", NN_F32, nn_shape2(3, 4)), 0.1f, NULL); break;
            case 4: t = nn_swiglu_layer(g, x2, 4, NULL); break;
            default: t = nn_info_nce_loss(g, x2, x2, 0.0f, NULL); break;
            }
            (void)x4;
            err = nn_context_last_error(e->ctx);
            T_CHECK(t.id < 0 && nn_graph_status(g) == rows[i].code && strstr(err, rows[i].word),
                    "refusal %d: got id %d, status %d, message \"%s\"", rows[i].which, t.id, (int)nn_graph_status(g), err);
            if (rows[i].which == 2) T_CHECK(aux.id < 0, "nn_moe_layer refused but aux_loss is a tensor");
        }
    }
    nn_graph_destroy(g);
    t_end();
}

void suite_layers(const t_env *e) {
    lcase c;

    c = l_mk("se_block", b_se, r_se, nn_shape4(3, 5, 3, 2));
    c.ip[0] = 2; /* 5 channels -> 2 */
    l_in(&c, nn_shape4(3, 5, 3, 2), -2, 2);
    l_par(&c, "se.fc1.weight", nn_shape2(2, 5), -1, 1);
    l_par(&c, "se.fc1.bias", nn_shape1(2), -0.5, 0.5);
    l_par(&c, "se.fc2.weight", nn_shape2(5, 2), -1, 1);
    l_par(&c, "se.fc2.bias", nn_shape1(5), -0.5, 0.5);
    l_check(e, &c);

    c = l_mk("glu dim 1", b_glu, r_glu, nn_shape3(3, 3, 5));
    c.ip[0] = 1;
    l_in(&c, nn_shape3(3, 6, 5), -3, 3);
    l_check(e, &c);
    c = l_mk("glu dim -1", b_glu, r_glu, nn_shape2(7, 1));
    c.ip[0] = -1;
    l_in(&c, nn_shape2(7, 2), -3, 3);
    l_check(e, &c);

    c = l_mk("swiglu_ffn", b_swiglu, r_swiglu, nn_shape3(2, 3, 5));
    c.ip[0] = 7;
    l_in(&c, nn_shape3(2, 3, 5), -2, 2);
    l_par(&c, "ffn.w1.weight", nn_shape2(7, 5), -1, 1);
    l_par(&c, "ffn.w2.weight", nn_shape2(5, 7), -1, 1);
    l_par(&c, "ffn.w3.weight", nn_shape2(7, 5), -1, 1);
    l_check(e, &c);

    c = l_mk("highway", b_highway, r_highway, nn_shape2(7, 5));
    l_in(&c, nn_shape2(7, 5), -2, 2);
    l_par(&c, "hw.H.weight", nn_shape2(5, 5), -1, 1);
    l_par(&c, "hw.H.bias", nn_shape1(5), -0.5, 0.5);
    l_par(&c, "hw.T.weight", nn_shape2(5, 5), -1, 1);
    l_par(&c, "hw.T.bias", nn_shape1(5), -1.5, 0.5);
    l_check(e, &c);

    c = l_mk("rmse_loss", b_rmse, r_rmse, nn_shape1(1));
    l_in(&c, nn_shape2(3, 7), -2, 2);
    l_in(&c, nn_shape2(3, 7), -2, 2);
    l_check(e, &c);

    c = l_mk("info_nce_loss", b_nce, r_nce, nn_shape1(1));
    c.fp[0] = 0.5;
    l_in(&c, nn_shape2(5, 3), -2, 2);
    l_in(&c, nn_shape2(5, 3), -2, 2);
    l_check(e, &c);

    c = l_mk("rbf_layer", b_rbf, r_rbf, nn_shape2(5, 7));
    c.ip[0] = 7;
    l_in(&c, nn_shape2(5, 3), -1, 1);
    l_par(&c, "rbf.centers", nn_shape2(7, 3), -1, 1);
    l_par(&c, "rbf.log_gamma", nn_shape1(7), -1, 0.5);
    l_check(e, &c);

    c = moe_case("moe top-2 of 4", 7, 3, 4, 2, 5);
    l_check(e, &c);
    c = moe_case("moe top-1 of 3", 5, 3, 3, 1, 3);
    l_check(e, &c);

    l_bad(e);
}
