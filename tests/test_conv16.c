/* conv2d on 16-bit storage (issue 20): bf16/f16 x and w, the output and the gradients (dx,
   dw) of that type, every sum in float32 (src/cpu/conv16.c around the float32 CPU paths;
   kernels/conv.cl's direct kernels built with NN_STORE_BF16 / _F16), and the precision
   policy's conv2d (nn_graph_desc.precision: x and w converted, the conv in 16 bits, the
   bias added to the float32 result).

   The op checker's cases, as tests/test_mixed.c's: inputs drawn and rounded to the type
   here, so the conversions are exact and the double reference is the plain convolution;
   the loss's weights exact in 16 bits (spec.w16), so the output, dx and dw are each rounded
   once, at the conv's store (half a unit, 2^-9 relative in bf16, 2^-11 in fp16, against
   double). Tolerances: two units, 8e-3 (bf16) and 2e-3 (fp16), which leave room for the
   float32 sums of the CPU and OpenCL paths (different orders) to round to neighbouring
   16-bit values. Inputs of at most 1,024 elements, their gradients checked element by
   element (the block directions of larger ones sum elements rounded one by one, whose
   signed sum cancels far below the rounding); larger shapes in conv16_vs_f32. */
#include "test.h"
#include "bad_rows.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void fill_rnd16(const spec *s, double *const *in) {
    int k;
    long i;
    for (k = 0; k < s->n_in; k++)
        for (i = 0; i < numel(s->shape[k]); i++) in[k][i] = t_rnd16((nn_dtype)s->ip[0], in[k][i]);
}

/* float32 in, d's conv2d (s->ip[0]: d), float32 out */
static nn_tensor b_conv16(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_dtype d = (nn_dtype)s->ip[0];
    nn_conv2d_desc c;
    memset(&c, 0, sizeof c);
    c.stride_h = s->conv[0];
    c.stride_w = s->conv[1];
    c.pad_h = s->conv[2];
    c.pad_w = s->conv[3];
    c.dilation_h = s->conv[4];
    c.dilation_w = s->conv[5];
    c.groups = s->conv[6];
    return nn_to_dtype(g, nn_conv2d(g, nn_to_dtype(g, in[0], d), nn_to_dtype(g, in[1], d), NN_NONE, &c), NN_F32);
}

/* torch.nn.functional.conv2d in double, written out: y[n, k, oh, ow] = sum over the group's
   channels and the window inside the input of x * w */
static void r_conv16(const spec *s, double *const *in, double *out) {
    long N = s->shape[0].dim[0], C = s->shape[0].dim[1], H = s->shape[0].dim[2], W = s->shape[0].dim[3];
    long K = s->shape[1].dim[0], KH = s->shape[1].dim[2], KW = s->shape[1].dim[3];
    long OH = s->out.dim[2], OW = s->out.dim[3], G = s->conv[6], Cg = C / G, Kg = K / G;
    long n, k, oh, ow, ci, kh, kw;
    for (n = 0; n < N; n++)
        for (k = 0; k < K; k++)
            for (oh = 0; oh < OH; oh++)
                for (ow = 0; ow < OW; ow++) {
                    double acc = 0;
                    for (ci = 0; ci < Cg; ci++)
                        for (kh = 0; kh < KH; kh++)
                            for (kw = 0; kw < KW; kw++) {
                                long ih = oh * s->conv[0] - s->conv[2] + kh * s->conv[4];
                                long iw = ow * s->conv[1] - s->conv[3] + kw * s->conv[5];
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                acc += in[0][((n * C + (k / Kg) * Cg + ci) * H + ih) * W + iw] *
                                       in[1][((k * Cg + ci) * KH + kh) * KW + kw];
                            }
                    out[((n * K + k) * OH + oh) * OW + ow] = acc;
                }
}

static void conv16_cases(const t_env *e) {
    /* N, C, H, W, K, KH, KW, stride h/w, pad h/w, dilation h/w, groups */
    static const int cs[][14] = {
        {2, 1, 7, 9, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1},   /* 1 channel, 'same' */
        {3, 3, 9, 7, 5, 3, 2, 2, 1, 0, 1, 1, 1, 1},   /* 3 channels, stride 2,1, uneven pads */
        {1, 7, 11, 6, 7, 3, 3, 1, 2, 2, 1, 2, 1, 1},  /* 7 channels, dilation 2 */
        {1, 33, 5, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1},  /* 33 channels: two K blocks of the CPU GEMM */
        {2, 4, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2},   /* groups 2 */
        {1, 3, 8, 8, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3},   /* depthwise: direct loops on the CPU */
    };
    int t, k;
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        for (k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
            const int *c = cs[k];
            char name[160];
            int OH = (c[2] + 2 * c[9] - c[11] * (c[5] - 1) - 1) / c[7] + 1;
            int OW = (c[3] + 2 * c[10] - c[12] * (c[6] - 1) - 1) / c[8] + 1;
            spec s;
            snprintf(name, sizeof name, "conv2d %s x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%d,%d p%d,%d d%d,%d g%d", t_name16(d), c[0],
                     c[1], c[2], c[3], c[4], c[1] / c[13], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13]);
            s = mk(name, b_conv16, r_conv16, nn_shape4(c[0], c[4], OH, OW));
            memcpy(s.conv, c + 7, 7 * sizeof(int));
            in_f(&s, nn_shape4(c[0], c[1], c[2], c[3]));
            in_f(&s, nn_shape4(c[4], c[1] / c[13], c[5], c[6]));
            s.ip[0] = (int)d;
            s.fill = fill_rnd16;
            s.w16 = 1;
            s.tol = d == NN_BF16 ? 8e-3 : 2e-3;
            check_case(e, &s);
        }
    }
}

/* ---- against the float32 path: the 16-bit conv2d's y, dx and dw are the float32 conv2d's
   of the rounded inputs (and a loss weight exact in 16 bits), rounded once: on the CPU
   backend bit for bit (the same float32 path runs on the widened operands: implicit GEMM,
   direct depthwise loops, Winograd at 16 channels), on OpenCL (the direct kernels' sums,
   in another order than the float32 GEMM path's) within one unit of the type. Shapes
   beyond the op checker's element-by-element gradients (its 1,024 elements). ---- */

typedef struct c16_shape {
    int N, C, H, W, K, KH, KW, s, p, G;
} c16_shape;

/* y, dx, dw of conv2d at q in storage type d (NN_F32: float32 throughout) with loss
   sum(y * wl), read as float32; 1 when it ran */
static int c16_run(nn_context *ctx, nn_dtype d, const c16_shape *q, const float *xv, const float *wv, const float *wl, float *y,
                   float *dx, float *dw, int OH, int OW) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_conv2d_desc c;
    nn_tensor x, w, l, yt;
    long nx = (long)q->N * q->C * q->H * q->W, nw = (long)q->K * (q->C / q->G) * q->KH * q->KW, ny = (long)q->N * q->K * OH * OW;
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape4(q->N, q->C, q->H, q->W));
    w = nn_input(g, "w", NN_F32, nn_shape4(q->K, q->C / q->G, q->KH, q->KW));
    l = nn_input(g, "wl", NN_F32, nn_shape4(q->N, q->K, OH, OW));
    nn_graph_requires_grad(g, x);
    nn_graph_requires_grad(g, w);
    memset(&c, 0, sizeof c);
    c.stride_h = c.stride_w = q->s;
    c.pad_h = c.pad_w = q->p;
    c.groups = q->G;
    yt = d == NN_F32 ? nn_conv2d(g, x, w, NN_NONE, &c)
                     : nn_to_dtype(g, nn_conv2d(g, nn_to_dtype(g, x, d), nn_to_dtype(g, w, d), NN_NONE, &c), NN_F32);
    nn_graph_output(g, yt);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, yt, l));
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, xv, nx * sizeof(float)), ctx) || !T_OK(nn_tensor_write(g, w, wv, nw * sizeof(float)), ctx) ||
        !T_OK(nn_tensor_write(g, l, wl, ny * sizeof(float)), ctx) || !T_OK(nn_graph_step(g), ctx))
        goto done;
    if (!T_OK(nn_tensor_read(g, yt, y, ny * sizeof(float)), ctx) ||
        !T_OK(nn_tensor_read(g, nn_graph_grad(g, x), dx, nx * sizeof(float)), ctx) ||
        !T_OK(nn_tensor_read(g, nn_graph_grad(g, w), dw, nw * sizeof(float)), ctx))
        goto done;
    ok = 1;
done:
    nn_graph_destroy(g);
    return ok;
}

/* got (16-bit results, widened) against want (float32's) rounded to d: equal, or within
   units of d (relative to the element's value, plus a unit of the array's largest). A
   unit is one ulp of d at the element's binade or more (2^-7 relative in bf16, 2^-10 in
   f16; half that, from half an ulp to one across a binade, was less than a tie can move):
   on OpenCL the two paths sum in different orders (the 16-bit direct kernels against
   im2col and the GEMM's K blocks), so a sum whose exact value lies at or next to a tie
   between two 16-bit values rounds to either of them, a whole ulp apart (with PoCL's GEMM
   in K blocks of 128: the float32 path's f16 y = 0.075958252, exactly halfway, rounds to
   even, down, where the 16-bit path's own float32 sum rounded up). */
static int c16_compare(const char *what, nn_dtype d, const float *got, const float *want, long n, int units) {
    double big = 0, u = d == NN_BF16 ? 1.0 / 128 : 1.0 / 1024;
    long i;
    for (i = 0; i < n; i++) big = fabs(want[i]) > big ? fabs(want[i]) : big;
    for (i = 0; i < n; i++) {
        double r = t_rnd16(d, want[i]);
        if (units == 0 ? (double)got[i] != r : fabs(got[i] - r) > units * u * (fabs(r) + big * u))
            return T_CHECK(0, "%s %s[%ld] = %.9g, the float32 path's rounded %.9g (float32 %.9g)", t_name16(d), what, i,
                           (double)got[i], r, (double)want[i]);
    }
    return 1;
}

static void conv16_vs_f32(const t_env *e) {
    static const c16_shape qs[] = {
        {2, 33, 9, 7, 17, 3, 3, 1, 1, 1},  /* implicit GEMM, 33 channels */
        {3, 7, 13, 11, 5, 5, 3, 2, 2, 1},  /* 5x3, stride 2 */
        {2, 16, 10, 9, 24, 3, 3, 1, 1, 1}, /* Winograd on the CPU (16 channels and more, 3x3, stride 1) */
        {2, 12, 9, 9, 12, 3, 3, 1, 1, 12}, /* depthwise */
        {1, 1, 28, 28, 8, 5, 5, 1, 2, 1},  /* a first layer: 1 channel */
    };
    int t, k;
    if (!t_begin(e, "conv16: conv2d bf16/f16 (y, dx, dw) against the float32 path on the rounded inputs")) return;
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        for (k = 0; k < (int)(sizeof qs / sizeof qs[0]); k++) {
            const c16_shape *q = &qs[k];
            int OH = (q->H + 2 * q->p - q->KH) / q->s + 1, OW = (q->W + 2 * q->p - q->KW) / q->s + 1;
            long nx = (long)q->N * q->C * q->H * q->W, nw = (long)q->K * (q->C / q->G) * q->KH * q->KW;
            long ny = (long)q->N * q->K * OH * OW, i;
            float *buf = (float *)malloc(sizeof(float) * (size_t)(3 * nx + 3 * nw + 3 * ny));
            float *xv, *wv, *wl, *y32, *dx32, *dw32, *y16, *dx16, *dw16;
            int units = t_backend(e->ctx) == NN_BACKEND_CPU ? 0 : 1, ok;
            if (!T_CHECK(buf != NULL, "out of memory")) break;
            xv = buf, wv = xv + nx, wl = wv + nw, y32 = wl + ny, dx32 = y32 + ny, dw32 = dx32 + nx;
            y16 = dw32 + nw, dx16 = y16 + ny, dw16 = dx16 + nx;
            t_seed(1600 + 10 * (unsigned long long)k + (unsigned long long)t);
            for (i = 0; i < nx; i++) xv[i] = (float)t_rnd16(d, t_uniform(-2, 2));
            for (i = 0; i < nw; i++) wv[i] = (float)t_rnd16(d, t_uniform(-1, 1));
            for (i = 0; i < ny; i++) wl[i] = (float)((t_randint(256) - 128) / 128.0); /* exact in 16 bits */
            ok = c16_run(e->ctx, NN_F32, q, xv, wv, wl, y32, dx32, dw32, OH, OW) &&
                 c16_run(e->ctx, d, q, xv, wv, wl, y16, dx16, dw16, OH, OW) && c16_compare("y", d, y16, y32, ny, units) &&
                 c16_compare("dx", d, dx16, dx32, nx, units) && c16_compare("dw", d, dw16, dw32, nw, units);
            free(buf);
            if (!ok) goto done;
        }
    }
done:
    t_end();
}

/* ---- training: a small CNN (conv 3x3 -> relu -> conv 3x3 stride 2 -> relu -> linear),
   40 Adam steps in float32 and under each 16-bit policy from the same initial weights on
   the same batch; the 16-bit final loss within 10% of float32's (and under half of the
   first). Measured at 17:5x on the CPU backend: see the report. ---- */

#define CN 16
#define CH 8

static int train_cnn(nn_context *ctx, nn_precision prec, const float *xv, const int *yv, float *first, float *last) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_conv2d_desc c1, c2;
    nn_tensor x, y, h, loss;
    int ok = 0;
    memset(&gd, 0, sizeof gd);
    gd.precision = prec;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return 0;
    memset(&c1, 0, sizeof c1);
    c1.pad_h = c1.pad_w = 1;
    c2 = c1;
    c2.stride_h = c2.stride_w = 2;
    x = nn_input(g, "x", NN_F32, nn_shape4(CN, 1, CH, CH));
    y = nn_input(g, "y", NN_I32, nn_shape1(CN));
    h = nn_relu(g, nn_conv2d_layer(g, x, 4, 3, 3, &c1, "c1"));
    h = nn_relu(g, nn_conv2d_layer(g, h, 8, 3, 3, &c2, "c2"));
    h = nn_linear_layer(g, nn_reshape(g, h, nn_shape2(CN, 8 * (CH / 2) * (CH / 2))), 3, NULL, "fc");
    loss = nn_cross_entropy_loss(g, h, y, NULL);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-2f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_write(g, x, xv, CN * CH * CH * sizeof(float)), ctx);
    T_OK(nn_tensor_write(g, y, yv, CN * sizeof(int)), ctx);
    ok = t_train_losses(g, ctx, loss, 40, first, last);
done:
    nn_graph_destroy(g);
    return ok;
}

static void train_cnn_case(const t_env *e) {
    static float xv[CN * CH * CH];
    static int yv[CN];
    float f32_first = 0, f32_last = 0, first = 0, last = 0;
    int i, p;
    if (!t_begin(e, "conv16: a small CNN trained in bf16 and fp16 against float32 (40 Adam steps)")) return;
    t_seed(1620);
    for (i = 0; i < CN; i++) yv[i] = i % 3;
    for (i = 0; i < CN * CH * CH; i++) /* a class's own pattern (stripes of period 2, 3, 4) plus noise */
        xv[i] = (float)(((i % CH) % (2 + yv[i / (CH * CH)]) == 0 ? 1.0 : 0.0) + t_uniform(-0.3, 0.3));
    if (!train_cnn(e->ctx, NN_PRECISION_FP32, xv, yv, &f32_first, &f32_last)) goto done;
    T_CHECK(f32_last < 0.5f * f32_first, "float32 did not train: %g -> %g", (double)f32_first, (double)f32_last);
    for (p = 1; p <= 2; p++) {
        nn_precision prec = p == 1 ? NN_PRECISION_BF16 : NN_PRECISION_FP16;
        if (!train_cnn(e->ctx, prec, xv, yv, &first, &last)) break;
        T_CHECK(fabs((double)first - (double)f32_first) <= 0.02 * f32_first, "%s first loss %g, float32 %g",
                p == 1 ? "bf16" : "fp16", (double)first, (double)f32_first);
        T_CHECK(fabs((double)last - (double)f32_last) <= 0.1 * f32_last + 1e-3, "%s final loss %g, float32 %g",
                p == 1 ? "bf16" : "fp16", (double)last, (double)f32_last);
    }
done:
    t_end();
}

/* ---- refusals ---- */

static nn_tensor x16(nn_graph *g, nn_shape s, nn_dtype d) { return nn_to_dtype(g, F(g, s), d); }
B(c16_mixed, nn_conv2d(g, x16(g, S4(1, 3, 8, 8), NN_BF16), x16(g, S4(4, 3, 3, 3), NN_F16), NN_NONE, NULL))
B(c16_f32_w, nn_conv2d(g, x16(g, S4(1, 3, 8, 8), NN_BF16), F(g, S4(4, 3, 3, 3)), NN_NONE, NULL))
B(c16_bias, nn_conv2d(g, x16(g, S4(1, 3, 8, 8), NN_BF16), x16(g, S4(4, 3, 3, 3), NN_BF16), F(g, S1(4)), NULL))
B(c16_groups, nn_conv2d(g, x16(g, S4(1, 3, 8, 8), NN_F16), x16(g, S4(4, 2, 3, 3), NN_F16), NN_NONE, NULL))

static const bad_row conv16_bad[] = {
    {"conv16", "conv2d bf16 x, f16 w", c16_mixed, R_SHAPE, "nn_conv2d|bfloat16|float16|nn_to_dtype", 0},
    {"conv16", "conv2d bf16 x, f32 w", c16_f32_w, R_SHAPE, "nn_conv2d|bfloat16|float32", 0},
    {"conv16", "conv2d bf16 with a bias", c16_bias, R_INV, "nn_conv2d|bias|bfloat16|[1, 3, 8, 8]", 0},
    {"conv16", "conv2d f16 channels", c16_groups, R_SHAPE, "nn_conv2d|[1, 3, 8, 8]|[4, 2, 3, 3]|groups", 0},
};

void suite_conv16(const t_env *e) {
    conv16_cases(e);
    conv16_vs_f32(e);
    train_cnn_case(e);
    t_bad_rows(e, conv16_bad, (int)(sizeof conv16_bad / sizeof conv16_bad[0]));
}
