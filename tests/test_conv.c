/* The convolutions (src/ops/conv.c): conv1d, conv2d, conv_transpose2d, conv3d and
   nn_conv3d_layer through the op checker (tests/op_check.c): forward against a double
   reference, the input, weight and bias gradients against finite differences. Shapes are
   small and odd: the check costs inputs * reference. Their NaN and infinity propagation
   and their refusals below. */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* conv[0..2] stride d/h/w, conv[3..5] padding d/h/w, conv[6] groups, ip[0..2] dilation d/h/w */
static nn_tensor b_conv3d(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_conv3d_desc d;
    nn_tensor none = NN_NONE;
    memset(&d, 0, sizeof d);
    d.stride_d = s->conv[0];
    d.stride_h = s->conv[1];
    d.stride_w = s->conv[2];
    d.pad_d = s->conv[3];
    d.pad_h = s->conv[4];
    d.pad_w = s->conv[5];
    d.groups = s->conv[6];
    d.dilation_d = s->ip[0];
    d.dilation_h = s->ip[1];
    d.dilation_w = s->ip[2];
    return nn_conv3d(g, in[0], in[1], s->n_in > 2 ? in[2] : none, &d);
}

static void r_conv3d(const spec *s, double *const *in, double *out) {
    long N = s->shape[0].dim[0], C = s->shape[0].dim[1], D = s->shape[0].dim[2], H = s->shape[0].dim[3];
    long W = s->shape[0].dim[4], K = s->shape[1].dim[0], KD = s->shape[1].dim[2], KH = s->shape[1].dim[3];
    long KW = s->shape[1].dim[4], OD = s->out.dim[2], OH = s->out.dim[3], OW = s->out.dim[4];
    long G = s->conv[6], Cg = C / G, Kg = K / G, n, k, od, oh, ow, ci, kd, kh, kw;
    for (n = 0; n < N; n++)
        for (k = 0; k < K; k++)
            for (od = 0; od < OD; od++)
                for (oh = 0; oh < OH; oh++)
                    for (ow = 0; ow < OW; ow++) {
                        double acc = s->n_in > 2 ? in[2][k] : 0.0;
                        for (ci = 0; ci < Cg; ci++)
                            for (kd = 0; kd < KD; kd++)
                                for (kh = 0; kh < KH; kh++)
                                    for (kw = 0; kw < KW; kw++) {
                                        long id = od * s->conv[0] - s->conv[3] + kd * s->ip[0];
                                        long ih = oh * s->conv[1] - s->conv[4] + kh * s->ip[1];
                                        long iw = ow * s->conv[2] - s->conv[5] + kw * s->ip[2];
                                        if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                        acc += in[0][(((n * C + (k / Kg) * Cg + ci) * D + id) * H + ih) * W + iw] *
                                               in[1][(((k * Cg + ci) * KD + kd) * KH + kh) * KW + kw];
                                    }
                        out[(((n * K + k) * OD + od) * OH + oh) * OW + ow] = acc;
                    }
}

static void conv3d_cases(const t_env *e) {
    /* N, C, D, H, W, K, KD, KH, KW, stride d/h/w, pad d/h/w, dilation d/h/w, groups, bias */
    static const int cs[][20] = {
        {1, 1, 3, 4, 5, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, /* batch 1, 'same' padding */
        {2, 2, 5, 4, 3, 3, 2, 3, 1, 2, 1, 2, 0, 1, 0, 1, 1, 1, 1, 1}, /* stride 2, uneven padding */
        {1, 4, 4, 5, 3, 2, 2, 2, 2, 1, 2, 1, 1, 0, 1, 2, 1, 2, 2, 0}, /* dilation, groups 2, no bias */
        {2, 2, 1, 3, 2, 4, 1, 2, 2, 1, 2, 1, 0, 1, 1, 1, 1, 1, 2, 1}, /* D = 1, groups 2 */
        {1, 3, 2, 1, 4, 2, 3, 1, 3, 1, 1, 2, 1, 0, 1, 1, 1, 1, 1, 0}, /* kernel deeper than D, padded */
    };
    int k;
    for (k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
        const int *c = cs[k];
        char name[200];
        int j, O[3];
        spec s;
        for (j = 0; j < 3; j++) O[j] = (c[2 + j] + 2 * c[12 + j] - c[15 + j] * (c[6 + j] - 1) - 1) / c[9 + j] + 1;
        snprintf(name, sizeof name, "conv3d x[%d,%d,%d,%d,%d] w[%d,%d,%d,%d,%d] s%d,%d,%d p%d,%d,%d d%d,%d,%d g%d%s", c[0],
                 c[1], c[2], c[3], c[4], c[5], c[1] / c[18], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14],
                 c[15], c[16], c[17], c[18], c[19] ? " bias" : "");
        s = mk(name, b_conv3d, r_conv3d, nn_shape5(c[0], c[5], O[0], O[1], O[2]));
        memcpy(s.conv, c + 9, 6 * sizeof(int));
        s.conv[6] = c[18];
        memcpy(s.ip, c + 15, 3 * sizeof(int));
        in_f(&s, nn_shape5(c[0], c[1], c[2], c[3], c[4]));
        in_f(&s, nn_shape5(c[5], c[1] / c[18], c[6], c[7], c[8]));
        if (c[19]) in_f(&s, nn_shape1(c[5]));
        check_case(e, &s);
    }
}

/* The layer helper: its parameters' names and shapes, the output shape, a bad input */
static void conv3d_layer_case(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph_desc gd;
    nn_graph *g = NULL;
    nn_conv3d_desc d;
    nn_tensor x, y, bad;
    nn_shape ys;
    if (!t_begin(e, "conv3d_layer x[2,4,3,5,6] k2x3x3 s1,2,2 p0,1,1 g2")) return;
    memset(&gd, 0, sizeof gd);
    gd.seed = 3;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    memset(&d, 0, sizeof d);
    d.stride_h = d.stride_w = 2;
    d.pad_h = d.pad_w = 1;
    d.groups = 2;
    x = nn_input(g, "x", NN_F32, nn_shape5(2, 4, 3, 5, 6));
    y = nn_conv3d_layer(g, x, 6, 2, 3, 3, &d, "c3");
    if (!T_CHECK(y.id >= 0, "nn_conv3d_layer failed: %s", nn_context_last_error(ctx))) goto done;
    ys = t_shape(g, y);
    T_CHECK(ys.ndim == 5 && ys.dim[0] == 2 && ys.dim[1] == 6 && ys.dim[2] == 2 && ys.dim[3] == 3 && ys.dim[4] == 3,
            "output shape [%lld, %lld, %lld, %lld, %lld]", (long long)ys.dim[0], (long long)ys.dim[1],
            (long long)ys.dim[2], (long long)ys.dim[3], (long long)ys.dim[4]);
    bad = nn_conv3d_layer(g, nn_input(g, "x4", NN_F32, nn_shape4(2, 4, 5, 6)), 6, 1, 1, 1, NULL, "bad");
    T_CHECK(bad.id < 0 && nn_graph_status(g) == NN_ERR_SHAPE, "a 4-D input must fail with NN_ERR_SHAPE");
done:
    nn_graph_destroy(g);
    t_end();
}

/* ---- conv1d, conv2d, conv_transpose2d ---- */

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
    d.stride_h = s->conv[0];
    d.stride_w = s->conv[1];
    d.pad_h = s->conv[2];
    d.pad_w = s->conv[3];
    d.dilation_h = s->conv[4];
    d.dilation_w = s->conv[5];
    d.groups = s->conv[6];
    d.output_pad_h = s->ip[0];
    d.output_pad_w = s->ip[1];
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

/* conv2d's cases of the op checker, each name followed by suffix (tests/test_conv_algo.c runs
   them again with the CPU backend's im2col path forced) */
void t_conv2d_checks(const t_env *e, const char *suffix);
void t_conv2d_checks(const t_env *e, const char *suffix) {
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
        /* 33 channels: C*KH*KW = 297, two K blocks of the CPU GEMM */
        {1, 33, 5, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 33, 4, 7, 3, 3, 3, 2, 1, 1, 0, 1, 2, 1, 0},
        /* CPU devices' implicit GEMM (conv2d_implicit): the input gradient at stride 1 as the
           forward convolution of dy, here padded by dilation*(KH-1) - pad = 2 and 1; padding
           beyond the kernel (-1 there: a crop); 29 rows of weights (6-row micro-tiles), 81
           positions (two 64-wide tiles), forward rows 261 and 13*9 of the gradient's */
        {2, 3, 9, 10, 8, 3, 3, 1, 1, 2, 1, 2, 1, 1, 1},
        {1, 2, 6, 5, 3, 3, 2, 1, 1, 3, 2, 1, 1, 1, 0},
        {2, 29, 9, 9, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    };
    int k;
    for (k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
        const int *c = cs[k];
        char name[160];
        int OH = (c[2] + 2 * c[9] - c[11] * (c[5] - 1) - 1) / c[7] + 1;
        int OW = (c[3] + 2 * c[10] - c[12] * (c[6] - 1) - 1) / c[8] + 1;
        spec s;
        snprintf(name, sizeof name, "conv2d x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%d,%d p%d,%d d%d,%d g%d%s%s", c[0], c[1], c[2],
                 c[3], c[4], c[1] / c[13], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14] ? " bias" : "",
                 suffix);
        s = mk(name, b_conv2d, r_conv2d, nn_shape4(c[0], c[4], OH, OW));
        memcpy(s.conv, c + 7, 7 * sizeof(int));
        in_f(&s, nn_shape4(c[0], c[1], c[2], c[3]));
        in_f(&s, nn_shape4(c[4], c[1] / c[13], c[5], c[6]));
        if (c[14]) in_f(&s, nn_shape1(c[4]));
        check_case(e, &s);
    }
}

static void conv_cases(const t_env *e) {
    int k;
    t_conv2d_checks(e, "");
    {
        /* conv1d: N, C, L, K, KL, stride, pad, dilation, groups */
        static const int c1[][9] = {{1, 3, 7, 5, 3, 1, 1, 1, 1}, {3, 4, 33, 6, 5, 2, 2, 2, 2}};
        /* conv_transpose2d: N, Cin, H, W, Cout/G, KH, KW, stride h/w, pad h/w, dilation h/w, G, output pad h/w */
        static const int ct[][15] = {{1, 2, 3, 4, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
                                     {2, 4, 5, 3, 1, 2, 3, 3, 1, 0, 1, 1, 2, 2, 2},
                                     {1, 3, 4, 4, 2, 4, 4, 2, 2, 1, 1, 1, 1, 1, 0},
                                     {2, 3, 5, 6, 2, 3, 3, 1, 1, 1, 0, 1, 1, 1, 0}}; /* stride 1: conv2d_implicit */
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
        for (k = 0; k < 4; k++) {
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
            if (k != 1) in_f(&s, nn_shape1(c[4] * G)); /* a bias on all but one */
            check_case(e, &s);
        }
    }
}

/* ==== NaN and infinity propagation (the op checker's expected-value mode: PyTorch's
   NaN, +-inf and values; the rules in tests/op_check.c) ==== */

/* ---- convolutions: a double reference in which the zero padding takes part in the
   products (PyTorch's im2col and oneDNN kernels: a NaN weight makes every output of its
   channel NaN, those at the border too) ---- */

typedef struct np_conv {
    int N, C, D, H, W, K, KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw, G;
    int dims; /* 2 or 3 */
} np_conv;

static int np_conv_out(int n, int k, int s, int p, int d) { return (n + 2 * p - d * (k - 1) - 1) / s + 1; }

/* y = conv(x, w) + b (b may be NULL) and the gradients of sum(y * dy); the padding's
   products with the weight and with dy are taken (0 * NaN is NaN) */
static void conv_ref(const np_conv *q, const double *x, const double *w, const double *b, const double *dy, double *y,
                     double *dx, double *dw, double *db) {
    int OD = np_conv_out(q->D, q->KD, q->sd, q->pd, q->dd), OH = np_conv_out(q->H, q->KH, q->sh, q->ph, q->dh);
    int OW = np_conv_out(q->W, q->KW, q->sw, q->pw, q->dw), Cg = q->C / q->G, Kg = q->K / q->G;
    long nx = (long)q->N * q->C * q->D * q->H * q->W, nw = (long)q->K * Cg * q->KD * q->KH * q->KW, i;
    int n, k, od, oh, ow, ci, a, bb, cc;
    for (i = 0; i < nx; i++) dx[i] = 0;
    for (i = 0; i < nw; i++) dw[i] = 0;
    for (k = 0; k < q->K; k++) db[k] = 0;
    for (n = 0; n < q->N; n++)
        for (k = 0; k < q->K; k++)
            for (od = 0; od < OD; od++)
                for (oh = 0; oh < OH; oh++)
                    for (ow = 0; ow < OW; ow++) {
                        long o = (((long)n * q->K + k) * OD + od) * OH * OW + oh * OW + ow;
                        double s = b ? b[k] : 0, g = dy[o];
                        int grp = k / Kg;
                        db[k] += g;
                        for (ci = 0; ci < Cg; ci++)
                            for (a = 0; a < q->KD; a++)
                                for (bb = 0; bb < q->KH; bb++)
                                    for (cc = 0; cc < q->KW; cc++) {
                                        int id = od * q->sd - q->pd + a * q->dd, ih = oh * q->sh - q->ph + bb * q->dh;
                                        int iw = ow * q->sw - q->pw + cc * q->dw, c = grp * Cg + ci;
                                        long wi = (((long)k * Cg + ci) * q->KD + a) * q->KH * q->KW + bb * q->KW + cc;
                                        int inside = id >= 0 && id < q->D && ih >= 0 && ih < q->H && iw >= 0 && iw < q->W;
                                        long xi = inside ? ((((long)n * q->C + c) * q->D + id) * q->H + ih) * q->W + iw : -1;
                                        double xv = inside ? x[xi] : 0.0;
                                        s += w[wi] * xv;
                                        dw[wi] += xv * g;
                                        if (inside) dx[xi] += w[wi] * g;
                                    }
                        y[o] = s;
                    }
}

static nn_tensor b_conv(nn_graph *g, const nn_tensor *in, const spec *s_) {
    const np_conv *q = (const np_conv *)s_->arg;
    nn_tensor bias = in[2];
    if (q->dims == 2) {
        nn_conv2d_desc d;
        memset(&d, 0, sizeof d);
        d.stride_h = q->sh;
        d.stride_w = q->sw;
        d.pad_h = q->ph ? q->ph : NN_ZERO;
        d.pad_w = q->pw ? q->pw : NN_ZERO;
        d.dilation_h = q->dh;
        d.dilation_w = q->dw;
        d.groups = q->G;
        return nn_conv2d(g, in[0], in[1], bias, &d);
    } else {
        nn_conv3d_desc d;
        memset(&d, 0, sizeof d);
        d.stride_d = q->sd;
        d.stride_h = q->sh;
        d.stride_w = q->sw;
        d.pad_d = q->pd ? q->pd : NN_ZERO;
        d.pad_h = q->ph ? q->ph : NN_ZERO;
        d.pad_w = q->pw ? q->pw : NN_ZERO;
        d.dilation_d = q->dd;
        d.dilation_h = q->dh;
        d.dilation_w = q->dw;
        d.groups = q->G;
        return nn_conv3d(g, in[0], in[1], bias, &d);
    }
}

/* x_bad: (flat index, value) pairs written into x; w_bad likewise into the weight; dy_bad
   (optional, nyb pairs) into dy, the incoming gradient */
static void nanprop_conv_one(const t_env *e, const char *name, const np_conv *q, const long *xi, const double *xv, int nxb,
                             const long *wi, const double *wv, int nwb, const long *yi, const double *yv, int nyb) {
    int OD = np_conv_out(q->D, q->KD, q->sd, q->pd, q->dd), OH = np_conv_out(q->H, q->KH, q->sh, q->ph, q->dh);
    int OW = np_conv_out(q->W, q->KW, q->sw, q->pw, q->dw);
    long nx = (long)q->N * q->C * q->D * q->H * q->W, nw = (long)q->K * (q->C / q->G) * q->KD * q->KH * q->KW;
    long ny = (long)q->N * q->K * OD * OH * OW;
    double *x = (double *)malloc(sizeof(double) * nx), *w = (double *)malloc(sizeof(double) * nw), b[16];
    double *y = (double *)malloc(sizeof(double) * ny), *dx = (double *)malloc(sizeof(double) * nx);
    double *dw = (double *)malloc(sizeof(double) * nw), db[16], *g = (double *)malloc(sizeof(double) * ny);
    np_case c;
    long i;
    np_fill(x, nx, -1, 1, 81);
    np_fill(w, nw, -1, 1, 82);
    np_fill(b, q->K, -1, 1, 83);
    for (i = 0; i < nxb; i++) x[xi[i]] = xv[i];
    for (i = 0; i < nwb; i++) w[wi[i]] = wv[i];
    for (i = 0; i < ny; i++) g[i] = 1;
    for (i = 0; i < nyb; i++) g[yi[i]] = yv[i];
    conv_ref(q, x, w, b, g, y, dx, dw, db);
    np_init(&c, name, b_conv, q);
    if (q->dims == 2) {
        np_in(&c, nn_shape4(q->N, q->C, q->H, q->W), x, dx);
        np_in(&c, nn_shape4(q->K, q->C / q->G, q->KH, q->KW), w, dw);
    } else {
        np_in(&c, nn_shape5(q->N, q->C, q->D, q->H, q->W), x, dx);
        np_in(&c, nn_shape5(q->K, q->C / q->G, q->KD, q->KH, q->KW), w, dw);
    }
    np_in(&c, nn_shape1(q->K), b, db);
    c.y_expect = y;
    c.w = g;
    np_run(e, &c);
    free(x);
    free(w);
    free(y);
    free(dx);
    free(dw);
    free(g);
}

static np_conv np_conv2(int N, int C, int H, int W, int K, int KH, int KW, int s, int p, int G) {
    np_conv q;
    memset(&q, 0, sizeof q);
    q.dims = 2;
    q.N = N;
    q.C = C;
    q.D = 1;
    q.H = H;
    q.W = W;
    q.K = K;
    q.KD = 1;
    q.KH = KH;
    q.KW = KW;
    q.sd = q.dd = 1;
    q.sh = q.sw = s;
    q.ph = q.pw = p;
    q.dh = q.dw = 1;
    q.G = G;
    return q;
}

static void nanprop_conv(const t_env *e) {
    static np_conv q1, q2, q3, q4, q5;
    /* x [2, 3, 6, 7], w [4, 3, 3, 3], pad 1: NaN inside, inf in a corner, -inf meeting a
       zero weight; a NaN weight without padding */
    long xi1[3] = {1 * 42 + 2 * 7 + 3, 3 * 42 + 0, 4 * 42 + 3 * 7 + 3};
    double xv1[3] = {NAN, INFINITY, -INFINITY};
    long wi1[1] = {2 * 27 + 13}; /* the centre tap of output channel 2, input channel 1 */
    double wv1[1] = {0};
    long wi2[1] = {1 * 27 + 5};
    double wv2[1] = {NAN};
    q1 = np_conv2(2, 3, 6, 7, 4, 3, 3, 1, 1, 1);
    /* dy: NaN at a corner output of channel 1 (its window reaches the padding: every tap's
       weight gradient of channel 1 is NaN), inf inside channel 3 */
    long yi1[2] = {1 * 42 + 0, 42 * 4 + 3 * 42 + 2 * 7 + 3};
    double yv1[2] = {NAN, INFINITY};
    nanprop_conv_one(e, "conv2d x[2, 3, 6, 7] w[4, 3, 3, 3] pad 1", &q1, xi1, xv1, 3, wi1, wv1, 1, NULL, NULL, 0);
    nanprop_conv_one(e, "conv2d pad 1, NaN and inf in dy", &q1, xi1, xv1, 0, wi1, wv1, 0, yi1, yv1, 2);
    q2 = np_conv2(2, 3, 6, 7, 4, 3, 3, 1, 0, 1);
    nanprop_conv_one(e, "conv2d NaN weight, no padding", &q2, xi1, xv1, 0, wi2, wv2, 1, NULL, NULL, 0);
    /* the NaN weight with padding: its products with the padding are NaN too */
    nanprop_conv_one(e, "conv2d NaN weight, pad 1", &q1, xi1, xv1, 0, wi2, wv2, 1, NULL, NULL, 0);
    /* strided, and depthwise (its own CPU kernels) */
    q3 = np_conv2(2, 3, 6, 7, 6, 3, 3, 2, 1, 1);
    nanprop_conv_one(e, "conv2d stride 2", &q3, xi1, xv1, 3, wi1, wv1, 0, NULL, NULL, 0);
    q4 = np_conv2(1, 4, 9, 40, 4, 3, 3, 1, 1, 4);
    {
        long xi4[3] = {0 * 360 + 4 * 40 + 17, 2 * 360 + 8 * 40 + 39, 3 * 360 + 0};
        long wi4[1] = {2 * 9 + 0};
        double wv4[1] = {NAN};
        long yi4[3] = {1 * 360 + 8 * 40 + 39, 2 * 360 + 4 * 40 + 20, 3 * 360 + 5};
        double yv4[3] = {INFINITY, NAN, NAN};
        nanprop_conv_one(e, "conv2d depthwise x[1, 4, 9, 40]", &q4, xi4, xv1, 3, wi1, wv1, 0, NULL, NULL, 0);
        nanprop_conv_one(e, "conv2d depthwise NaN weight, pad 1", &q4, xi4, xv1, 0, wi4, wv4, 1, NULL, NULL, 0);
        nanprop_conv_one(e, "conv2d depthwise, NaN and inf in dy", &q4, xi4, xv1, 0, wi4, wv4, 0, yi4, yv4, 3);
    }
    /* conv3d x [1, 2, 4, 5, 5], w [3, 2, 2, 3, 3], pad 1 */
    memset(&q5, 0, sizeof q5);
    q5.dims = 3;
    q5.N = 1;
    q5.C = 2;
    q5.D = 4;
    q5.H = q5.W = 5;
    q5.K = 3;
    q5.KD = 2;
    q5.KH = q5.KW = 3;
    q5.sd = q5.sh = q5.sw = 1;
    q5.pd = q5.ph = q5.pw = 1;
    q5.dd = q5.dh = q5.dw = 1;
    q5.G = 1;
    {
        long xi5[3] = {0 * 100 + 1 * 25 + 2 * 5 + 2, 1 * 100 + 3 * 25 + 4 * 5 + 4, 1 * 100 + 0};
        long wi5[1] = {1 * 36 + 18 + 4};
        double wv5[1] = {0};
        long wi6[1] = {2 * 36 + 7};
        double wv6[1] = {NAN};
        long yi5[2] = {0 * 125 + 0, 2 * 125 + 2 * 25 + 2 * 5 + 2};
        double yv5[2] = {NAN, -INFINITY};
        nanprop_conv_one(e, "conv3d x[1, 2, 4, 5, 5] w[3, 2, 2, 3, 3] pad 1", &q5, xi5, xv1, 3, wi5, wv5, 1, NULL, NULL, 0);
        nanprop_conv_one(e, "conv3d NaN weight, pad 1", &q5, xi5, xv1, 0, wi6, wv6, 1, NULL, NULL, 0);
        nanprop_conv_one(e, "conv3d pad 1, NaN and inf in dy", &q5, xi5, xv1, 0, wi6, wv6, 0, yi5, yv5, 2);
    }
}

/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- convolutions ---- */

static nn_tensor cv2(nn_graph *g, nn_shape xs, nn_shape ws, nn_tensor bias, int s, int p, int d, int groups, int no_bias) {
    nn_conv2d_desc c;
    memset(&c, 0, sizeof c);
    c.stride_h = c.stride_w = s;
    c.pad_h = c.pad_w = p;
    c.dilation_h = c.dilation_w = d;
    c.groups = groups;
    c.no_bias = no_bias;
    return nn_conv2d(g, F(g, xs), F(g, ws), bias, &c);
}
B(c2_rank, cv2(g, S3(1, 3, 8), S4(4, 3, 3, 3), NN_NONE, 0, 0, 0, 0, 0))
B(c2_stride0, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), NN_NONE, NN_ZERO, 0, 0, 0, 0))
B(c2_stride_neg, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), NN_NONE, -2, 0, 0, 0, 0))
B(c2_pad_neg, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), NN_NONE, 0, -1, 0, 0, 0))
B(c2_dil0, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), NN_NONE, 0, 0, NN_ZERO, 0, 0))
B(c2_groups_c, cv2(g, S4(1, 3, 8, 8), S4(4, 1, 3, 3), NN_NONE, 0, 0, 0, 2, 0))
B(c2_groups_k, cv2(g, S4(1, 4, 8, 8), S4(3, 2, 3, 3), NN_NONE, 0, 0, 0, 2, 0))
B(c2_groups_neg, cv2(g, S4(1, 4, 8, 8), S4(4, 4, 3, 3), NN_NONE, 0, 0, 0, -1, 0))
B(c2_kernel, cv2(g, S4(1, 3, 4, 4), S4(4, 3, 7, 3), NN_NONE, 0, 1, 0, 0, 0))
B(c2_dil_kernel, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), NN_NONE, 0, 0, 4, 0, 0))
B(c2_bias, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), F(g, S1(5)), 0, 0, 0, 0, 0))
B(c2_bias_int, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), I(g, S1(4)), 0, 0, 0, 0, 0))
B(c2_no_bias, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), F(g, S1(4)), 0, 0, 0, 0, 1))
B(c2_w_int, nn_conv2d(g, F(g, S4(1, 3, 8, 8)), I(g, S4(4, 3, 3, 3)), NN_NONE, NULL))
B(c2_bias_failed, nn_conv2d(g, F(g, S4(1, 3, 8, 8)), F(g, S4(4, 3, 3, 3)), T(-2), NULL))
/* a row pad of 2^30 with stride 2: the output (2^30 + 1 rows of 1) is small enough to
   build, but row 2^31 of the padded input is past 32-bit index arithmetic */
static nn_tensor c2_pad_overflow(nn_graph *g, nn_compile_desc *cd) {
    nn_conv2d_desc c;
    (void)cd;
    memset(&c, 0, sizeof c);
    c.stride_h = 2;
    c.pad_h = 1 << 30;
    return nn_conv2d(g, F(g, S4(1, 1, 3, 3)), F(g, S4(1, 1, 3, 3)), NN_NONE, &c);
}
static nn_tensor cv1(nn_graph *g, nn_shape xs, nn_shape ws, int s, int p, int d, int groups) {
    nn_conv1d_desc c;
    memset(&c, 0, sizeof c);
    c.stride = s;
    c.pad = p;
    c.dilation = d;
    c.groups = groups;
    return nn_conv1d(g, F(g, xs), F(g, ws), NN_NONE, &c);
}
B(c1_stride0, cv1(g, S3(1, 2, 9), S3(4, 2, 3), NN_ZERO, 0, 0, 0))
B(c1_rank, cv1(g, S4(1, 2, 3, 4), S3(4, 2, 3), 0, 0, 0, 0))
B(c1_groups, cv1(g, S3(1, 4, 9), S3(4, 4, 3), 0, 0, 0, 2))
B(c1_kernel, cv1(g, S3(1, 2, 4), S3(4, 2, 7), 0, 0, 0, 0))
B(c1_pad_neg, cv1(g, S3(1, 2, 9), S3(4, 2, 3), 0, -2, 0, 0))
static nn_tensor c2_layer(nn_graph *g, int which) {
    nn_tensor x = F(g, S4(1, 3, 8, 8));
    switch (which) {
    case 0: return nn_conv2d_layer(g, x, 4, 0, 3, NULL, "conv");
    case 1: return nn_conv2d_layer(g, x, 0, 3, 3, NULL, "conv");
    case 2: return nn_conv2d_layer(g, x, 4, 3, 3, NULL, NULL);
    case 3: return nn_conv1d_layer(g, x, 4, 3, NULL, "conv");
    case 4: return nn_conv3d_layer(g, x, 4, 1, 3, 3, NULL, "conv");
    default: return T(-1);
    }
}
static nn_tensor c2_layer0(nn_graph *g, nn_compile_desc *cd) { (void)cd; return c2_layer(g, 0); }
static nn_tensor c2_layer1(nn_graph *g, nn_compile_desc *cd) { (void)cd; return c2_layer(g, 1); }
static nn_tensor c2_layer2(nn_graph *g, nn_compile_desc *cd) { (void)cd; return c2_layer(g, 2); }
static nn_tensor c1_layer3(nn_graph *g, nn_compile_desc *cd) { (void)cd; return c2_layer(g, 3); }
static nn_tensor c3_layer4(nn_graph *g, nn_compile_desc *cd) { (void)cd; return c2_layer(g, 4); }
static nn_tensor ct(nn_graph *g, nn_shape xs, nn_shape ws, int s, int p, int oph, int opw) {
    nn_conv_transpose2d_desc c;
    memset(&c, 0, sizeof c);
    c.stride_h = c.stride_w = s;
    c.pad_h = c.pad_w = p;
    c.output_pad_h = oph;
    c.output_pad_w = opw;
    return nn_conv_transpose2d(g, F(g, xs), F(g, ws), NN_NONE, &c);
}
B(ct_outpad, ct(g, S4(1, 3, 4, 4), S4(3, 2, 3, 3), 2, 0, 2, 0))
B(ct_outpad_neg, ct(g, S4(1, 3, 4, 4), S4(3, 2, 3, 3), 2, 0, 0, -1))
B(ct_channels, ct(g, S4(1, 3, 4, 4), S4(4, 2, 3, 3), 1, 0, 0, 0))
B(ct_empty, ct(g, S4(1, 3, 2, 2), S4(3, 2, 3, 3), 1, 3, 0, 0))
B(ct_stride0, ct(g, S4(1, 3, 4, 4), S4(3, 2, 3, 3), NN_ZERO, 0, 0, 0))
/* pads and strides of INT_MAX that cancel in the output size: the gradient arithmetic
   would still run past 32 bits */
B(ct_pad_overflow, ct(g, S4(1, 1, 3, 3), S4(1, 1, 3, 3), INT32_MAX, INT32_MAX, 0, 0))
static nn_tensor cv3(nn_graph *g, nn_shape xs, nn_shape ws, nn_tensor bias, int s, int p, int groups) {
    nn_conv3d_desc c;
    memset(&c, 0, sizeof c);
    c.stride_d = c.stride_h = c.stride_w = s;
    c.pad_d = c.pad_h = c.pad_w = p;
    c.groups = groups;
    return nn_conv3d(g, F(g, xs), F(g, ws), bias, &c);
}
B(c3_rank, cv3(g, S4(1, 2, 4, 4), S5(3, 2, 2, 2, 2), NN_NONE, 0, 0, 0))
B(c3_pad_neg, cv3(g, S5(1, 2, 4, 4, 4), S5(3, 2, 2, 2, 2), NN_NONE, 0, -1, 0))
B(c3_stride0, cv3(g, S5(1, 2, 4, 4, 4), S5(3, 2, 2, 2, 2), NN_NONE, NN_ZERO, 0, 0))
B(c3_groups, cv3(g, S5(1, 4, 4, 4, 4), S5(3, 1, 2, 2, 2), NN_NONE, 0, 0, 3))
B(c3_kernel, cv3(g, S5(1, 2, 4, 4, 4), S5(3, 2, 5, 2, 2), NN_NONE, 0, 0, 0))
B(c3_bias, cv3(g, S5(1, 2, 4, 4, 4), S5(3, 2, 2, 2, 2), F(g, S2(1, 3)), 0, 0, 0))
static nn_tensor c3_pad_overflow(nn_graph *g, nn_compile_desc *cd) {
    nn_conv3d_desc c;
    (void)cd;
    memset(&c, 0, sizeof c);
    c.stride_w = 2;
    c.pad_w = 1 << 30;
    return nn_conv3d(g, F(g, S5(1, 1, 1, 1, 3)), F(g, S5(1, 1, 1, 1, 3)), NN_NONE, &c);
}

static const bad_row conv_bad[] = {
    {"conv", "conv2d x [1, 3, 8]", c2_rank, R_SHAPE, "nn_conv2d|[1, 3, 8]", 0},
    {"conv", "conv2d stride 0", c2_stride0, R_INV, "nn_conv2d|stride", 0},
    {"conv", "conv2d stride -2", c2_stride_neg, R_INV, "nn_conv2d|stride|-2", 0},
    {"conv", "conv2d padding -1", c2_pad_neg, R_INV, "nn_conv2d|padding|-1", 0},
    {"conv", "conv2d dilation 0", c2_dil0, R_INV, "nn_conv2d|dilation", 0},
    {"conv", "conv2d groups 2 of 3 channels", c2_groups_c, R_SHAPE, "nn_conv2d|groups = 2|[1, 3, 8, 8]", 0},
    {"conv", "conv2d groups 2 of 3 filters", c2_groups_k, R_SHAPE, "nn_conv2d|groups = 2|[3, 2, 3, 3]", 0},
    {"conv", "conv2d groups -1", c2_groups_neg, R_INV, "nn_conv2d|groups|-1", 0},
    {"conv", "conv2d kernel 7 over 4 + 2 padding", c2_kernel, R_SHAPE, "nn_conv2d|larger|[4, 3, 7, 3]|[1, 3, 4, 4]", 0},
    {"conv", "conv2d dilation 4 over 8", c2_dil_kernel, R_SHAPE, "nn_conv2d|larger|[1, 3, 8, 8]", 0},
    {"conv", "conv2d bias [5] for 4 filters", c2_bias, R_SHAPE, "nn_conv2d|bias [5]|[4]", 0},
    {"conv", "conv2d bias int32", c2_bias_int, R_SHAPE, "nn_conv2d|bias|float32", 0},
    {"conv", "conv2d bias with no_bias", c2_no_bias, R_INV, "nn_conv2d|no_bias", 0},
    {"conv", "conv2d w int32", c2_w_int, R_SHAPE, "nn_conv2d|w|int32", 0},
    {"conv", "conv2d bias a failed id", c2_bias_failed, R_INV, "nn_conv2d|not a tensor", 0},
    {"conv", "conv2d pad 2^30, stride 2", c2_pad_overflow, R_SHAPE, "nn_conv2d|1073741824|[1, 1, 3, 3]", 0},
    {"conv", "conv1d stride 0", c1_stride0, R_INV, "nn_conv1d|stride", 0},
    {"conv", "conv1d x [1, 2, 3, 4]", c1_rank, R_SHAPE, "nn_conv1d|[1, 2, 3, 4]", 0},
    {"conv", "conv1d groups 2 with w [4, 4, 3]", c1_groups, R_SHAPE, "nn_conv1d|groups = 2|[1, 4, 9]", 0},
    {"conv", "conv1d kernel 7 over 4", c1_kernel, R_SHAPE, "nn_conv1d|larger|[4, 2, 7]|[1, 2, 4]", 0},
    {"conv", "conv1d padding -2", c1_pad_neg, R_INV, "nn_conv1d|padding|-2", 0},
    {"conv", "conv2d_layer kernel 0x3", c2_layer0, R_SHAPE, "nn_conv2d_layer|conv|0x3", 0},
    {"conv", "conv2d_layer 0 filters", c2_layer1, R_SHAPE, "nn_conv2d_layer|conv|[1, 3, 8, 8]", 0},
    {"conv", "conv2d_layer without a name", c2_layer2, R_INV, "nn_conv2d_layer|name", 0},
    {"conv", "conv1d_layer of [1, 3, 8, 8]", c1_layer3, R_SHAPE, "nn_conv1d_layer|conv|[1, 3, 8, 8]", 0},
    {"conv", "conv3d_layer of [1, 3, 8, 8]", c3_layer4, R_SHAPE, "nn_conv3d_layer|conv|[1, 3, 8, 8]", 0},
    {"conv", "conv_transpose2d output padding 2, stride 2", ct_outpad, R_INV, "nn_conv_transpose2d|output padding (2, 0)", 0},
    {"conv", "conv_transpose2d output padding -1", ct_outpad_neg, R_INV, "nn_conv_transpose2d|output padding (0, -1)", 0},
    {"conv", "conv_transpose2d w [4, ...] for 3 channels", ct_channels, R_SHAPE, "nn_conv_transpose2d|[1, 3, 4, 4]|[4, 2, 3, 3]", 0},
    {"conv", "conv_transpose2d empty output", ct_empty, R_SHAPE, "nn_conv_transpose2d|empty|[1, 3, 2, 2]", 0},
    {"conv", "conv_transpose2d stride 0", ct_stride0, R_INV, "nn_conv_transpose2d|stride", 0},
    {"conv", "conv_transpose2d pad and stride INT_MAX", ct_pad_overflow, R_SHAPE, "nn_conv_transpose2d|2147483647", 0},
    {"conv", "conv3d x [1, 2, 4, 4]", c3_rank, R_SHAPE, "nn_conv3d|[1, 2, 4, 4]", 0},
    {"conv", "conv3d padding -1", c3_pad_neg, R_INV, "nn_conv3d|padding|-1", 0},
    {"conv", "conv3d stride 0", c3_stride0, R_INV, "nn_conv3d|stride", 0},
    {"conv", "conv3d groups 3 of 4 channels", c3_groups, R_SHAPE, "nn_conv3d|groups = 3|[1, 4, 4, 4, 4]", 0},
    {"conv", "conv3d kernel depth 5 over 4", c3_kernel, R_SHAPE, "nn_conv3d|larger|[3, 2, 5, 2, 2]", 0},
    {"conv", "conv3d bias [1, 3]", c3_bias, R_SHAPE, "nn_conv3d|bias [1, 3]", 0},
    {"conv", "conv3d pad 2^30, stride 2", c3_pad_overflow, R_SHAPE, "nn_conv3d|1073741824|[1, 1, 1, 1, 3]", 0},
};

void suite_conv(const t_env *e) {
    T_RUN(e, conv_cases, conv_grad_sum_case, conv3d_cases, conv3d_layer_case, nanprop_conv);
    t_bad_rows(e, conv_bad, (int)(sizeof conv_bad / sizeof conv_bad[0]));
}
