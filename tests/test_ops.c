/* Every op of the foundation, through the op checker (tests/op_check.c). Shapes are odd on
   purpose (1, 3, 7, 33, 129). */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- builders and double references ---- */

static nn_tensor b_matmul(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_matmul(g, in[0], in[1], s->ta, s->tb); }
static void r_matmul(const spec *s, double *const *in, double *out) {
    /* i-k-j order: independent accumulators (the gradient checks call this ~1000 times) */
    long M = s->out.dim[0], N = s->out.dim[1], K = s->ta ? s->shape[0].dim[0] : s->shape[0].dim[1], i, j, k;
    long lda = s->shape[0].dim[1], ldb = s->shape[1].dim[1];
    for (i = 0; i < M; i++) {
        double *o = out + i * N;
        for (j = 0; j < N; j++) o[j] = 0;
        for (k = 0; k < K; k++) {
            double a = s->ta ? in[0][k * lda + i] : in[0][i * lda + k];
            if (s->tb)
                for (j = 0; j < N; j++) o[j] += a * in[1][j * ldb + k];
            else
                for (j = 0; j < N; j++) o[j] += a * in[1][k * ldb + j];
        }
    }
}

static nn_tensor b_add(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_add(g, in[0], in[1]); }
static nn_tensor b_sub(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_sub(g, in[0], in[1]); }
static nn_tensor b_mul(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_mul(g, in[0], in[1]); }
static void r_binary(const spec *s, double *const *in, double *out, int op) {
    long n = numel(s->shape[0]), nb = numel(s->shape[1]), i;
    for (i = 0; i < n; i++) {
        double a = in[0][i], b = in[1][i % nb];
        out[i] = op == 0 ? a + b : op == 1 ? a - b : a * b;
    }
}
static void r_add(const spec *s, double *const *in, double *out) { r_binary(s, in, out, 0); }
static void r_sub(const spec *s, double *const *in, double *out) { r_binary(s, in, out, 1); }
static void r_mul(const spec *s, double *const *in, double *out) { r_binary(s, in, out, 2); }

static nn_tensor b_scale(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_mul_scalar(g, in[0], s->p); }
static void r_scale(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++) out[i] = in[0][i] * (double)s->p;
}

static nn_tensor b_relu(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_relu(g, in[0]); }
static nn_tensor b_leaky(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_leaky_relu(g, in[0], s->p); }
static nn_tensor b_sigmoid(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_sigmoid(g, in[0]); }
static nn_tensor b_tanh(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_tanh(g, in[0]); }
static nn_tensor b_gelu(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_gelu(g, in[0]); }
static nn_tensor b_silu(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_silu(g, in[0]); }
#define UNARY_REF(NAME, EXPR)                                                  \
    static void NAME(const spec *s, double *const *in, double *out) {          \
        long i, n = numel(s->out);                                             \
        double p = s->p;                                                       \
        (void)p;                                                               \
        for (i = 0; i < n; i++) { double v = in[0][i]; out[i] = (EXPR); }     \
    }
UNARY_REF(r_relu, v > 0 ? v : 0)
UNARY_REF(r_leaky, v > 0 ? v : p * v)
UNARY_REF(r_sigmoid, 1 / (1 + exp(-v)))
UNARY_REF(r_tanh, tanh(v))
UNARY_REF(r_gelu, 0.5 * v * (1 + erf(v / sqrt(2.0))))
UNARY_REF(r_silu, v / (1 + exp(-v)))

static nn_tensor b_softmax(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_softmax(g, in[0], -1); }
static nn_tensor b_log_softmax(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_log_softmax(g, in[0], -1); }
static void r_softmax_any(const spec *s, double *const *in, double *out, int log_space) {
    long C = s->out.dim[s->out.ndim - 1], rows = numel(s->out) / C, r, c;
    for (r = 0; r < rows; r++) {
        const double *x = in[0] + r * C;
        double m = x[0], sum = 0;
        for (c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
        for (c = 0; c < C; c++) sum += exp(x[c] - m);
        for (c = 0; c < C; c++) out[r * C + c] = log_space ? x[c] - m - log(sum) : exp(x[c] - m) / sum;
    }
}
static void r_softmax(const spec *s, double *const *in, double *out) { r_softmax_any(s, in, out, 0); }
static void r_log_softmax(const spec *s, double *const *in, double *out) { r_softmax_any(s, in, out, 1); }

static nn_tensor b_sum(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_sum(g, in[0]); }
static nn_tensor b_mean(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_mean(g, in[0]); }
static void r_sum(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) out[0] += in[0][i];
}
static void r_mean(const spec *s, double *const *in, double *out) {
    r_sum(s, in, out);
    out[0] /= (double)numel(s->shape[0]);
}

static nn_tensor b_xent(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_softmax_cross_entropy(g, in[0], in[1]); }
static void r_xent(const spec *s, double *const *in, double *out) {
    long B = s->shape[0].dim[0], C = s->shape[0].dim[1], b, c;
    double total = 0;
    for (b = 0; b < B; b++) {
        const double *x = in[0] + b * C;
        long t = (long)in[1][b];
        double m = x[0], sum = 0;
        if (t < 0 || t >= C) continue; /* never here: such labels are errors (tests/test_api.c) */
        for (c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
        for (c = 0; c < C; c++) sum += exp(x[c] - m);
        total += log(sum) + m - x[t];
    }
    out[0] = total / (double)B;
}

static nn_tensor b_mse(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_mse(g, in[0], in[1]); }
static void r_mse(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) out[0] += (in[0][i] - in[1][i]) * (in[0][i] - in[1][i]);
    out[0] /= (double)n;
}

static nn_tensor b_bce(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_bce_with_logits(g, in[0], in[1]); }
static void r_bce(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) { /* -[t log sigmoid(x) + (1-t) log(1 - sigmoid(x))] */
        double x = in[0][i], t = in[1][i], sg = 1 / (1 + exp(-x));
        out[0] += -(t * log(sg) + (1 - t) * log(1 - sg));
    }
    out[0] /= (double)n;
}

static nn_tensor b_gather(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_gather_rows(g, in[0], in[1]); }
static void r_gather(const spec *s, double *const *in, double *out) {
    long N = s->shape[0].dim[0], D = numel(s->shape[0]) / N, B = s->shape[1].dim[0], b, j;
    for (b = 0; b < B; b++) {
        long r = (long)in[1][b];
        for (j = 0; j < D; j++) out[b * D + j] = (r >= 0 && r < N) ? in[0][r * D + j] : 0.0;
    }
}

static nn_tensor b_dense(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return nn_add(g, nn_matmul(g, in[0], in[1], 0, 1), in[2]);
}
static void r_dense(const spec *s, double *const *in, double *out) {
    long B = s->shape[0].dim[0], I = s->shape[0].dim[1], O = s->shape[1].dim[0], b, o, i;
    for (b = 0; b < B; b++)
        for (o = 0; o < O; o++) {
            double acc = in[2][o];
            for (i = 0; i < I; i++) acc += in[0][b * I + i] * in[1][o * I + i];
            out[b * O + o] = acc;
        }
}

/* The dropout reference: the mask of element i is keyed by (graph seed, the dropout
   tensor's id, step) through the test's own Philox (t_philox). */
static int dropout_id;
static nn_tensor b_dropout(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor t = nn_dropout(g, in[0], s->p);
    dropout_id = t.id;
    return t;
}
static void r_dropout(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++) {
        unsigned c[4];
        double u;
        c[0] = (unsigned)i;
        c[1] = (unsigned)dropout_id;
        c[2] = 1; /* the first step */
        c[3] = 0;
        t_philox(c, 1234u, 0u);
        u = (double)(c[0] >> 8) / 16777216.0;
        out[i] = u >= s->p ? in[0][i] / (1.0 - (double)(float)s->p) : 0.0;
    }
}

static nn_tensor b_conv2d(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_conv2d_desc d;
    nn_tensor none = NN_NONE;
    memset(&d, 0, sizeof d);
    d.stride_h = s->conv[0];
    d.stride_w = s->conv[1];
    d.pad_h = s->conv[2];
    d.pad_w = s->conv[3];
    d.dilation_h = s->conv[4];
    d.dilation_w = s->conv[5];
    d.groups = s->conv[6];
    return nn_conv2d(g, in[0], in[1], s->n_in > 2 ? in[2] : none, &d);
}
static void r_conv2d(const spec *s, double *const *in, double *out) {
    /* one (n, k, ci, kh, kw) tap at a time over the output rows and their valid columns:
       the gradient checks call this ~1000 times */
    long N = s->shape[0].dim[0], C = s->shape[0].dim[1], H = s->shape[0].dim[2], W = s->shape[0].dim[3];
    long K = s->shape[1].dim[0], KH = s->shape[1].dim[2], KW = s->shape[1].dim[3];
    long OH = s->out.dim[2], OW = s->out.dim[3], G = s->conv[6], Cg = C / G, Kg = K / G;
    long sh = s->conv[0], sw = s->conv[1], ph = s->conv[2], pw = s->conv[3], dh = s->conv[4], dw = s->conv[5];
    long n, k, oh, ow, ci, kh, kw;
    for (n = 0; n < N; n++)
        for (k = 0; k < K; k++) {
            double *o = out + (n * K + k) * OH * OW;
            for (oh = 0; oh < OH * OW; oh++) o[oh] = s->n_in > 2 ? in[2][k] : 0.0;
            for (ci = 0; ci < Cg; ci++) {
                const double *x = in[0] + (n * C + (k / Kg) * Cg + ci) * H * W;
                for (kh = 0; kh < KH; kh++)
                    for (kw = 0; kw < KW; kw++) {
                        double wv = in[1][((k * Cg + ci) * KH + kh) * KW + kw];
                        long off = kw * dw - pw, lo = 0, hi = OW; /* columns with 0 <= ow * sw + off < W */
                        while (lo < OW && lo * sw + off < 0) lo++;
                        while (hi > lo && (hi - 1) * sw + off >= W) hi--;
                        for (oh = 0; oh < OH; oh++) {
                            long ih = oh * sh - ph + kh * dh;
                            if (ih < 0 || ih >= H) continue;
                            for (ow = lo; ow < hi; ow++) o[oh * OW + ow] += x[ih * W + ow * sw + off] * wv;
                        }
                    }
            }
        }
}

static nn_tensor b_conv1d(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_conv1d_desc d;
    nn_tensor none = NN_NONE;
    memset(&d, 0, sizeof d);
    d.stride = s->conv[1];
    d.pad = s->conv[3];
    d.dilation = s->conv[5];
    d.groups = s->conv[6];
    return nn_conv1d(g, in[0], in[1], s->n_in > 2 ? in[2] : none, &d);
}
static void r_conv1d(const spec *s, double *const *in, double *out) {
    spec t = *s; /* the 2-D reference on [N, C, 1, L] */
    t.shape[0] = nn_shape4(s->shape[0].dim[0], s->shape[0].dim[1], 1, s->shape[0].dim[2]);
    t.shape[1] = nn_shape4(s->shape[1].dim[0], s->shape[1].dim[1], 1, s->shape[1].dim[2]);
    t.out = nn_shape4(s->out.dim[0], s->out.dim[1], 1, s->out.dim[2]);
    t.conv[0] = t.conv[4] = 1;
    t.conv[2] = 0;
    r_conv2d(&t, in, out);
}

/* conv_transpose2d: x [N, Cin, H, W], w [Cin, Cout/G, KH, KW]; ip[0..1] output padding */
static nn_tensor b_convt(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_conv_transpose2d_desc d;
    nn_tensor none = NN_NONE;
    memset(&d, 0, sizeof d);
    d.output_pad_h = s->ip[0];
    d.output_pad_w = s->ip[1];
    d.stride_h = s->conv[0];
    d.stride_w = s->conv[1];
    d.pad_h = s->conv[2];
    d.pad_w = s->conv[3];
    d.dilation_h = s->conv[4];
    d.dilation_w = s->conv[5];
    d.groups = s->conv[6];
    return nn_conv_transpose2d(g, in[0], in[1], s->n_in > 2 ? in[2] : none, &d);
}
static void r_convt(const spec *s, double *const *in, double *out) {
    long N = s->shape[0].dim[0], Cin = s->shape[0].dim[1], H = s->shape[0].dim[2], W = s->shape[0].dim[3];
    long Cg = s->shape[1].dim[1], KH = s->shape[1].dim[2], KW = s->shape[1].dim[3], G = s->conv[6], Cing = Cin / G;
    long Cout = s->out.dim[1], OH = s->out.dim[2], OW = s->out.dim[3], n, ci, h, w, co, kh, kw;
    for (n = 0; n < N; n++) /* the bias, if any */
        for (co = 0; co < Cout; co++)
            for (h = 0; h < OH * OW; h++) out[(n * Cout + co) * OH * OW + h] = s->n_in > 2 ? in[2][co] : 0.0;
    for (n = 0; n < N; n++) /* scatter: input pixel (ci, h, w) adds x * w into the outputs it reaches */
        for (ci = 0; ci < Cin; ci++)
            for (h = 0; h < H; h++)
                for (w = 0; w < W; w++)
                    for (co = 0; co < Cg; co++)
                        for (kh = 0; kh < KH; kh++)
                            for (kw = 0; kw < KW; kw++) {
                                long oh = h * s->conv[0] - s->conv[2] + kh * s->conv[4];
                                long ow = w * s->conv[1] - s->conv[3] + kw * s->conv[5];
                                long oc = (ci / Cing) * Cg + co;
                                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                                out[((n * Cout + oc) * OH + oh) * OW + ow] +=
                                    in[0][((n * Cin + ci) * H + h) * W + w] * in[1][((ci * Cg + co) * KH + kh) * KW + kw];
                            }
}

static nn_tensor b_flatten(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_flatten(g, in[0]); }
static void r_copy(const spec *s, double *const *in, double *out) { memcpy(out, in[0], (size_t)numel(s->out) * sizeof(double)); }

/* ---- the cases ---- */


/* conv2d's weight and bias gradients summed over 64 x 28 x 28 output positions, the shape of
   the CNN example's first layer and what makes its sums hard: x is a constant background
   (-0.81, a normalised black pixel) around a 16 x 16 foreground, and dL/dy = t has a zero
   mean in each channel (as batch norm's backward gives) and is constant on the background.
   So dw = sum t * x cancels most of its terms, and db = sum t is near zero. A single float
   accumulator over the 50176 products (the OpenCL kernel before it summed each image
   apart) lost 1.8e-4 of dw's largest element; dw must come within 2e-5 of the double
   reference, db within 5e-6 of sum |t|. */
static void conv_grad_sum_case(const t_env *e) {
    enum { N = 64, K = 8, H = 28, W = 28, P = N * H * W };
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_conv2d_desc d;
    nn_tensor x, w, b, t;
    nn_init zero;
    float *xv = (float *)malloc(sizeof(float) * P), *tv = (float *)malloc(sizeof(float) * K * P), wv[K * 9], bv[K];
    float dw[K * 9], db[K];
    double rw[K * 9], rb[K], tabs[K], mean, mw = 0, ew = 0, eb = 0;
    long n, k, i, p, kh, kw;
    if (!t_begin(e, "conv2d dw, db over 64x28x28 positions (cancelling sums)")) goto done;
    if (!T_CHECK(xv && tv, "out of memory")) goto done;
    t_seed(0xc0a5);
    for (i = 0; i < P; i++) { /* a constant background around a 16 x 16 foreground */
        long r = i % (H * W) / W, c = i % W;
        xv[i] = r >= 6 && r < 22 && c >= 6 && c < 22 ? (float)t_uniform(-0.8, 2.0) : -0.81f;
    }
    for (k = 0; k < K; k++) { /* t[n, k, :, :], zero mean over n and the plane */
        mean = 0;
        for (n = 0; n < N; n++)
            for (p = 0; p < H * W; p++) {
                long r = p / W, c = p % W;
                int fg = r >= 6 && r < 22 && c >= 6 && c < 22;
                tv[(n * K + k) * H * W + p] = fg ? (float)t_uniform(-1e-3, 1e-3) : (float)(1e-4 * (k + 1));
                mean += tv[(n * K + k) * H * W + p];
            }
        mean /= P;
        for (n = 0; n < N; n++)
            for (p = 0; p < H * W; p++) tv[(n * K + k) * H * W + p] = (float)(tv[(n * K + k) * H * W + p] - mean);
    }
    for (i = 0; i < K * 9; i++) wv[i] = (float)t_uniform(-0.3, 0.3);
    for (k = 0; k < K; k++) bv[k] = 0.0f;
    for (k = 0; k < K; k++) { /* the references, in double from the float values */
        rb[k] = tabs[k] = 0;
        for (n = 0; n < N; n++)
            for (p = 0; p < H * W; p++) {
                rb[k] += tv[(n * K + k) * H * W + p];
                tabs[k] += fabs(tv[(n * K + k) * H * W + p]);
            }
        for (kh = 0; kh < 3; kh++)
            for (kw = 0; kw < 3; kw++) {
                double acc = 0;
                for (n = 0; n < N; n++)
                    for (p = 0; p < H * W; p++) {
                        long oh = p / W, ow = p % W, ih = oh + kh - 1, iw = ow + kw - 1;
                        if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                            acc += (double)tv[(n * K + k) * H * W + p] * xv[n * H * W + ih * W + iw];
                    }
                rw[k * 9 + kh * 3 + kw] = acc;
                if (fabs(acc) > mw) mw = fabs(acc);
            }
    }
    memset(&gd, 0, sizeof gd);
    memset(&zero, 0, sizeof zero);
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape4(N, 1, H, W));
    w = nn_param(g, "w", nn_shape4(K, 1, 3, 3), zero);
    b = nn_param(g, "b", nn_shape1(K), zero);
    t = nn_input(g, "t", NN_F32, nn_shape4(N, K, H, W));
    memset(&d, 0, sizeof d);
    d.pad_h = d.pad_w = 1;
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, nn_conv2d(g, x, w, b, &d), t)); /* no optimizer: the gradients are kept */
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_write(g, x, xv, sizeof(float) * P), ctx);
    T_OK(nn_tensor_write(g, t, tv, sizeof(float) * K * P), ctx);
    T_OK(nn_tensor_write(g, w, wv, sizeof wv), ctx);
    T_OK(nn_tensor_write(g, b, bv, sizeof bv), ctx);
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    if (!T_OK(nn_tensor_read(g, nn_graph_grad(g, w), dw, sizeof dw), ctx) || !T_OK(nn_tensor_read(g, nn_graph_grad(g, b), db, sizeof db), ctx))
        goto done;
    for (i = 0; i < K * 9; i++)
        if (fabs(dw[i] - rw[i]) / mw > ew) ew = fabs(dw[i] - rw[i]) / mw;
    for (k = 0; k < K; k++)
        if (fabs(db[k] - rb[k]) / tabs[k] > eb) eb = fabs(db[k] - rb[k]) / tabs[k];
    T_CHECK(ew <= 2e-5, "dw: error %.3g of its largest element", ew);
    T_CHECK(eb <= 5e-6, "db: error %.3g of sum |dL/dy|", eb);
done:
    nn_graph_destroy(g);
    free(xv);
    free(tv);
    t_end();
}

static void conv_cases(const t_env *e) {
    /* N, C, H, W, K, KH, KW, stride h/w, pad h/w, dilation h/w, groups, bias */
    static const int cs[][15] = {
        {1, 1, 7, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* batch 1, 'same' padding */
        {3, 2, 9, 7, 5, 3, 2, 2, 1, 1, 0, 1, 1, 1, 1},   /* stride 2, uneven padding */
        {2, 4, 8, 9, 6, 3, 3, 2, 3, 2, 1, 2, 1, 2, 0},   /* dilation, groups 2, no bias */
        {2, 3, 5, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3, 1},   /* depthwise */
        {1, 3, 11, 13, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1}, /* 1x1 */
        {2, 1, 4, 4, 2, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1},   /* kernel larger than the input, padded */
        /* enough columns (N*OH*OW >= 512) that OpenCL's weight gradient is cut into K slices */
        {2, 1, 17, 19, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {3, 2, 13, 21, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 4, 15, 18, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2, 0}, /* ... with groups */
        /* depthwise (C/G == 1): direct loops on the CPU (cpu/conv_dw.c), direct kernels on OpenCL */
        {1, 4, 7, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4, 1},     /* channel multiplier 2, batch 1, 'same' */
        {3, 3, 13, 13, 3, 3, 3, 2, 2, 1, 0, 1, 1, 3, 0},   /* stride 2, uneven padding, batch 3, no bias */
        {1, 5, 13, 11, 10, 3, 3, 1, 1, 2, 2, 2, 2, 5, 1},  /* dilation 2, multiplier 2 */
        {1, 2, 33, 33, 4, 3, 3, 2, 2, 1, 1, 1, 1, 2, 0},   /* 33x33, stride 2, multiplier 2, no bias */
        {3, 7, 7, 13, 7, 3, 5, 1, 2, 0, 2, 2, 1, 7, 1},    /* 7 channels, batch 3, 3x5, stride 1,2, dilation 2,1 */
        {2, 3, 6, 33, 6, 3, 1, 1, 1, 1, 0, 1, 1, 3, 1},    /* 3x1 over 33 columns: a whole 32-wide block */
        {3, 2, 7, 7, 6, 5, 5, 1, 1, 2, 2, 1, 1, 2, 0},     /* 5x5, multiplier 3, batch 3, no bias */
        {1, 3, 13, 41, 6, 3, 3, 2, 2, 2, 1, 2, 2, 3, 1},   /* stride 2 and dilation 2, uneven padding, 41 wide */
    };
    int k;
    for (k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
        const int *c = cs[k];
        char name[160];
        int OH = (c[2] + 2 * c[9] - c[11] * (c[5] - 1) - 1) / c[7] + 1;
        int OW = (c[3] + 2 * c[10] - c[12] * (c[6] - 1) - 1) / c[8] + 1;
        spec s;
        snprintf(name, sizeof name, "conv2d x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%d,%d p%d,%d d%d,%d g%d%s", c[0], c[1], c[2],
                 c[3], c[4], c[1] / c[13], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14] ? " bias" : "");
        s = mk(name, b_conv2d, r_conv2d, nn_shape4(c[0], c[4], OH, OW));
        memcpy(s.conv, c + 7, 7 * sizeof(int));
        in_f(&s, nn_shape4(c[0], c[1], c[2], c[3]));
        in_f(&s, nn_shape4(c[4], c[1] / c[13], c[5], c[6]));
        if (c[14]) in_f(&s, nn_shape1(c[4]));
        check_case(e, &s);
    }
    {
        /* conv1d: N, C, L, K, KL, stride, pad, dilation, groups */
        static const int c1[][9] = {{1, 3, 7, 5, 3, 1, 1, 1, 1}, {3, 4, 33, 6, 5, 2, 2, 2, 2}};
        /* conv_transpose2d: N, Cin, H, W, Cout/G, KH, KW, stride h/w, pad h/w, dilation h/w, G, output pad h/w */
        static const int ct[][15] = {{1, 2, 3, 4, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
                                     {2, 4, 5, 3, 1, 2, 3, 3, 1, 0, 1, 1, 2, 2, 2},
                                     {1, 3, 4, 4, 2, 4, 4, 2, 2, 1, 1, 1, 1, 1, 0}};
        for (k = 0; k < 2; k++) {
            const int *c = c1[k];
            char name[128];
            int OL = (c[2] + 2 * c[6] - c[7] * (c[4] - 1) - 1) / c[5] + 1;
            spec s;
            snprintf(name, sizeof name, "conv1d x[%d,%d,%d] w[%d,%d,%d] s%d p%d d%d g%d bias", c[0], c[1], c[2], c[3], c[1] / c[8],
                     c[4], c[5], c[6], c[7], c[8]);
            s = mk(name, b_conv1d, r_conv1d, nn_shape3(c[0], c[3], OL));
            s.conv[1] = c[5];
            s.conv[3] = c[6];
            s.conv[5] = c[7];
            s.conv[6] = c[8];
            in_f(&s, nn_shape3(c[0], c[1], c[2]));
            in_f(&s, nn_shape3(c[3], c[1] / c[8], c[4]));
            in_f(&s, nn_shape1(c[3]));
            check_case(e, &s);
        }
        for (k = 0; k < 3; k++) {
            const int *c = ct[k];
            char name[160];
            int G = c[13], OH = (c[2] - 1) * c[7] - 2 * c[9] + c[11] * (c[5] - 1) + c[14] + 1;
            int OW = (c[3] - 1) * c[8] - 2 * c[10] + c[12] * (c[6] - 1) + (k == 2 ? 1 : 0) + 1;
            spec s;
            snprintf(name, sizeof name, "conv_transpose2d x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%d,%d p%d,%d d%d,%d g%d op%d,%d", c[0], c[1],
                     c[2], c[3], c[1], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], G, c[14], k == 2);
            s = mk(name, b_convt, r_convt, nn_shape4(c[0], c[4] * G, OH, OW));
            memcpy(s.conv, c + 7, 6 * sizeof(int));
            s.conv[6] = G;
            s.ip[0] = c[14];
            s.ip[1] = k == 2;
            in_f(&s, nn_shape4(c[0], c[1], c[2], c[3]));
            in_f(&s, nn_shape4(c[1], c[4], c[5], c[6]));
            if (k != 1) in_f(&s, nn_shape1(c[4] * G)); /* a bias on two of the three */
            check_case(e, &s);
        }
    }
    {
        spec s = mk("flatten [3, 2, 5, 7] -> [3, 70]", b_flatten, r_copy, nn_shape2(3, 70));
        in_f(&s, nn_shape4(3, 2, 5, 7));
        check_case(e, &s);
    }
}

static void matmul_cases(const t_env *e) {
    static const int shapes[][3] = {{7, 33, 3}, {1, 129, 7}, {33, 1, 129}, {3, 7, 1}, {129, 33, 33}};
    char name[96];
    int k, ta, tb;
    for (k = 0; k < 5; k++)
        for (ta = 0; ta < 2; ta++)
            for (tb = 0; tb < 2; tb++) {
                int M = shapes[k][0], N = shapes[k][1], K = shapes[k][2];
                spec s;
                snprintf(name, sizeof name, "matmul%s%s M=%d N=%d K=%d", ta ? " A^T" : "", tb ? " B^T" : "", M, N, K);
                s = mk(name, b_matmul, r_matmul, nn_shape2(M, N));
                s.ta = ta;
                s.tb = tb;
                in_f(&s, ta ? nn_shape2(K, M) : nn_shape2(M, K));
                in_f(&s, tb ? nn_shape2(N, K) : nn_shape2(K, N));
                check_case(e, &s);
            }
}

void suite_ops(const t_env *e) {
    static const struct { const char *name; build_fn b; ref_fn r; float p; double lo, hi; } unary[] = {
        {"relu", b_relu, r_relu, 0, -2, 2},       {"leaky_relu", b_leaky, r_leaky, 0.1f, -2, 2},
        {"sigmoid", b_sigmoid, r_sigmoid, 0, -6, 6}, {"tanh", b_tanh, r_tanh, 0, -3, 3},
        {"gelu", b_gelu, r_gelu, 0, -4, 4},       {"silu", b_silu, r_silu, 0, -6, 6},
        {"scale", b_scale, r_scale, -0.37f, -2, 2},
    };
    static const int odd[][2] = {{7, 33}, {1, 129}, {129, 3}};
    char name[96];
    int k, j;
    spec s;
    matmul_cases(e);
    conv_cases(e);
    conv_grad_sum_case(e);
    for (k = 0; k < (int)(sizeof unary / sizeof unary[0]); k++)
        for (j = 0; j < 3; j++) {
            snprintf(name, sizeof name, "%s [%d, %d]", unary[k].name, odd[j][0], odd[j][1]);
            s = mk(name, unary[k].b, unary[k].r, nn_shape2(odd[j][0], odd[j][1]));
            s.p = unary[k].p;
            s.lo = unary[k].lo;
            s.hi = unary[k].hi;
            in_f(&s, s.out);
            check_case(e, &s);
        }
    for (j = 0; j < 3; j++) {
        static const char *nm[3] = {"add", "sub", "mul"};
        static const build_fn bb[3] = {b_add, b_sub, b_mul};
        static const ref_fn rr[3] = {r_add, r_sub, r_mul};
        int v;
        for (v = 0; v < 3; v++) { /* same shape, a bias [33], a scalar [1] */
            nn_shape bs = v == 0 ? nn_shape3(3, 7, 33) : v == 1 ? nn_shape1(33) : nn_shape1(1);
            snprintf(name, sizeof name, "%s [3, 7, 33] with %s", nm[j], v == 0 ? "[3, 7, 33]" : v == 1 ? "[33]" : "[1]");
            s = mk(name, bb[j], rr[j], nn_shape3(3, 7, 33));
            in_f(&s, nn_shape3(3, 7, 33));
            in_f(&s, bs);
            check_case(e, &s);
        }
    }
    for (j = 0; j < 3; j++) {
        nn_shape sh = nn_shape2(odd[j][0], odd[j][1]);
        snprintf(name, sizeof name, "softmax [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_softmax, r_softmax, sh);
        in_f(&s, sh);
        check_case(e, &s);
        snprintf(name, sizeof name, "log_softmax [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_log_softmax, r_log_softmax, sh);
        in_f(&s, sh);
        check_case(e, &s);
        snprintf(name, sizeof name, "sum [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_sum, r_sum, nn_shape1(1));
        in_f(&s, sh);
        check_case(e, &s);
        snprintf(name, sizeof name, "mean [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_mean, r_mean, nn_shape1(1));
        in_f(&s, sh);
        check_case(e, &s);
        snprintf(name, sizeof name, "softmax_cross_entropy [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_xent, r_xent, nn_shape1(1));
        s.lo = -4;
        s.hi = 4;
        in_f(&s, sh);
        in_i(&s, nn_shape1(odd[j][0]), 0, odd[j][1]);
        check_case(e, &s);
        snprintf(name, sizeof name, "mse [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_mse, r_mse, nn_shape1(1));
        in_f(&s, sh);
        in_f(&s, sh);
        check_case(e, &s);
        snprintf(name, sizeof name, "bce_with_logits [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_bce, r_bce, nn_shape1(1));
        s.lo = -5;
        s.hi = 5;
        in_f(&s, sh);
        in_f(&s, sh); /* targets in [0, 1) after the range below */
        s.lo = -3;
        s.hi = 3;
        check_case(e, &s);
        snprintf(name, sizeof name, "dropout p=0.3 [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_dropout, r_dropout, sh);
        s.p = 0.3f;
        in_f(&s, sh);
        check_case(e, &s);
    }
    s = mk("gather_rows [33, 7] by [129]", b_gather, r_gather, nn_shape2(129, 7));
    in_f(&s, nn_shape2(33, 7));
    in_i(&s, nn_shape1(129), -2, 35); /* some out of range: zero rows */
    check_case(e, &s);
    s = mk("gather_rows [3, 2, 5] by [1]", b_gather, r_gather, nn_shape3(1, 2, 5));
    in_f(&s, nn_shape3(3, 2, 5));
    in_i(&s, nn_shape1(1), 0, 3);
    check_case(e, &s);
    s = mk("dense [7, 33] -> 129", b_dense, r_dense, nn_shape2(7, 129));
    in_f(&s, nn_shape2(7, 33));
    in_f(&s, nn_shape2(129, 33));
    in_f(&s, nn_shape1(129));
    check_case(e, &s);
}
