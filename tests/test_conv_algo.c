/* The CPU backend's convolution algorithms (src/cpu/conv.c, src/cpu/conv_wino.c): the
   implicit GEMM (NN_CONV_ALGO=gemm; the default for convolutions that are not depthwise
   where Winograd does not run) against the im2col path it replaced (NN_CONV_ALGO=im2col),
   to the bit, forward, dx, dw and db, at shapes that reach every branch of the implicit
   path: several K blocks of the weights (C*KH*KW > 256) and of dy (K > 256), dx in chunks
   of output rows, chunks and K blocks of dw across images, stride, dilation, padding,
   groups, 1, 3, 7, 32 and 33 channels (dw's channels-last path from 8 channels a group); on
   1, 2 and 3 threads. The op
   checker's conv2d cases (tests/test_conv.c) hold the default algorithm to a double
   reference and finite differences; conv_algo_im2col_cases runs them with the im2col path
   forced, so both algorithms meet the reference.

   conv_algo_reference holds every algorithm (NN_CONV_ALGO=im2col, gemm, winograd) to a
   double reference written here, at 3x3 stride-1 shapes (Winograd F(2x2, 3x3) applies to
   them: src/cpu/conv_wino.c) with 1, 3, 7 and 33 channels and sizes, padding 0, 1, 2, batch 1
   and 3: y, dx and dw within the bounds below, the same bits on 1 and 3 threads, and
   infinities and NaNs where the direct sum puts them (an infinite input and a NaN weight:
   Winograd's result has NaNs there, so it falls back to the implicit GEMM); with 16 and 17
   channels the default algorithm gives Winograd's bits (it is chosen by shape). */
#define _POSIX_C_SOURCE 200809L /* setenv, as tests/nn_test.c */
#include "test.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* N, C, H, W, K, KH, KW, stride h/w, pad h/w, dilation h/w, groups, bias */
static const int conv_algo_shapes[][15] = {
    {3, 33, 9, 70, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* 2 K blocks of w, dx in 3-row chunks */
    {2, 7, 13, 11, 300, 3, 3, 2, 1, 2, 0, 1, 2, 1, 0}, /* K = 300: 2 K blocks of dy; stride, dilation */
    {5, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* a first layer: 1 channel */
    {2, 6, 10, 33, 9, 5, 3, 1, 2, 2, 1, 2, 1, 3, 1},   /* groups 3, 5x3, uneven padding */
    {1, 3, 33, 33, 7, 7, 7, 2, 2, 3, 3, 1, 1, 1, 1},   /* 7x7 stride 2 over 3 channels */
    {4, 33, 5, 3, 33, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0},   /* 1x1 */
    {4, 32, 21, 13, 20, 3, 3, 2, 1, 1, 2, 2, 1, 2, 1}, /* dw channels last: groups 2 of 16, stride, dilation, padding */
};

/* y, dx, dw, db of one shape on ctx (the algorithm from $NN_CONV_ALGO at compile) */
static int conv_algo_run(nn_context *ctx, const int *c, float *y, float *dx, float *dw, float *db) {
    int OH = (c[2] + 2 * c[9] - c[11] * (c[5] - 1) - 1) / c[7] + 1, OW = (c[3] + 2 * c[10] - c[12] * (c[6] - 1) - 1) / c[8] + 1;
    long nx = (long)c[0] * c[1] * c[2] * c[3], nw = (long)c[4] * (c[1] / c[13]) * c[5] * c[6], ny = (long)c[0] * c[4] * OH * OW, i;
    float *xv = (float *)malloc(sizeof(float) * nx), *wv = (float *)malloc(sizeof(float) * nw), *tv = (float *)malloc(sizeof(float) * ny);
    float *bv = (float *)malloc(sizeof(float) * c[4]);
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_conv2d_desc d;
    nn_init zero;
    nn_tensor x, w, b = NN_NONE, t, yt;
    int ok = 0;
    if (!T_CHECK(xv && wv && tv && bv, "out of memory")) goto done;
    t_seed(0xa190 + (unsigned long long)c[1]);
    for (i = 0; i < nx; i++) xv[i] = (float)t_uniform(-1.0, 1.0);
    for (i = 0; i < nw; i++) wv[i] = (float)t_uniform(-0.5, 0.5);
    for (i = 0; i < ny; i++) tv[i] = (float)t_uniform(-1.0, 1.0);
    for (i = 0; i < c[4]; i++) bv[i] = (float)t_uniform(-1.0, 1.0);
    memset(&zero, 0, sizeof zero);
    memset(&d, 0, sizeof d);
    memset(&cd, 0, sizeof cd);
    d.stride_h = c[7];
    d.stride_w = c[8];
    d.pad_h = c[9];
    d.pad_w = c[10];
    d.dilation_h = c[11];
    d.dilation_w = c[12];
    d.groups = c[13];
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape4(c[0], c[1], c[2], c[3]));
    nn_graph_requires_grad(g, x);
    w = nn_param(g, "w", nn_shape4(c[4], c[1] / c[13], c[5], c[6]), zero);
    if (c[14]) b = nn_param(g, "b", nn_shape1(c[4]), zero);
    t = nn_input(g, "t", NN_F32, nn_shape4(c[0], c[4], OH, OW));
    yt = nn_conv2d(g, x, w, b, &d);
    nn_graph_output(g, yt);
    cd.loss = nn_sum(g, nn_mul(g, yt, t)); /* dy = t; no optimizer: the gradients are kept */
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_write(g, x, xv, sizeof(float) * nx), ctx);
    T_OK(nn_tensor_write(g, w, wv, sizeof(float) * nw), ctx);
    T_OK(nn_tensor_write(g, t, tv, sizeof(float) * ny), ctx);
    if (c[14]) T_OK(nn_tensor_write(g, b, bv, sizeof(float) * c[4]), ctx);
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    ok = T_OK(nn_tensor_read(g, yt, y, sizeof(float) * ny), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_grad(g, x), dx, sizeof(float) * nx), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_grad(g, w), dw, sizeof(float) * nw), ctx) &&
         (!c[14] || T_OK(nn_tensor_read(g, nn_graph_grad(g, b), db, sizeof(float) * c[4]), ctx));
done:
    nn_graph_destroy(g);
    free(xv);
    free(wv);
    free(tv);
    free(bv);
    return ok;
}

/* the first element where a and b differ in their bits, or -1 */
static long conv_algo_diff(const float *a, const float *b, long n) {
    long i;
    for (i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof(float))) return i;
    return -1;
}

/* whether the implicit path's dw runs the direct AVX-512 first-layer kernel on an AVX-512
   CPU (src/cpu/conv.c, nn__iconv_dwd_fits: 3x3, stride 1, no dilation, one group, at most 3
   channels), which sums in its own order: conv_algo_reference holds it to the double
   reference, not to im2col's bits */
static int conv_algo_dw_direct(const int *c) {
    return c[1] <= 3 && c[5] == 3 && c[6] == 3 && c[7] == 1 && c[8] == 1 && c[11] == 1 && c[12] == 1 && c[13] == 1;
}

static void conv_algo_bitwise(const t_env *e) {
    static const int threads[] = {1, 2, 3};
    size_t s;
    if (!t_begin_cpu(e, "conv2d implicit GEMM = im2col to the bit (y, dx, dw, db; 1-3 threads)",
                     "the algorithms are the CPU backend's"))
        return;
    for (s = 0; s < sizeof conv_algo_shapes / sizeof conv_algo_shapes[0]; s++) {
        const int *c = conv_algo_shapes[s];
        int OH = (c[2] + 2 * c[9] - c[11] * (c[5] - 1) - 1) / c[7] + 1, OW = (c[3] + 2 * c[10] - c[12] * (c[6] - 1) - 1) / c[8] + 1;
        long n[4], k, j;
        float *ref[4], *got[4];
        size_t ti;
        n[0] = (long)c[0] * c[4] * OH * OW;
        n[1] = (long)c[0] * c[1] * c[2] * c[3];
        n[2] = (long)c[4] * (c[1] / c[13]) * c[5] * c[6];
        n[3] = c[4];
        for (k = 0; k < 4; k++) {
            ref[k] = (float *)calloc((size_t)n[k], sizeof(float));
            got[k] = (float *)calloc((size_t)n[k], sizeof(float));
        }
        if (T_CHECK(ref[0] && ref[1] && ref[2] && ref[3] && got[0] && got[1] && got[2] && got[3], "out of memory")) {
            int ok;
            setenv("NN_CONV_ALGO", "im2col", 1);
            ok = conv_algo_run(e->ctx, c, ref[0], ref[1], ref[2], ref[3]);
            setenv("NN_CONV_ALGO", "gemm", 1); /* the implicit GEMM, not Winograd where it would apply */
            for (ti = 0; ok && ti < sizeof threads / sizeof threads[0]; ti++) {
                static const char *what[4] = {"y", "dx", "dw", "db"};
                nn_context_desc cdesc;
                nn_context *ctx = NULL;
                t_context_desc(e, &cdesc);
                cdesc.device = "cpu";
                cdesc.threads = threads[ti];
                if (!T_OK(nn_context_create(&cdesc, &ctx), e->ctx)) break;
                if (conv_algo_run(ctx, c, got[0], got[1], got[2], got[3]))
                    for (k = 0; k < (c[14] ? 4 : 3); k++) {
                        if (k == 2 && conv_algo_dw_direct(c)) continue; /* its own order */
                        j = conv_algo_diff(ref[k], got[k], n[k]);
                        T_CHECK(j < 0, "x[%d,%d,%d,%d] w[%d,%d,%d,%d] on %d threads: %s[%ld] %.9g, im2col %.9g", c[0], c[1],
                                c[2], c[3], c[4], c[1] / c[13], c[5], c[6], threads[ti], what[k], j, j < 0 ? 0.0 : got[k][j],
                                j < 0 ? 0.0 : ref[k][j]);
                    }
                nn_context_destroy(ctx);
            }
            unsetenv("NN_CONV_ALGO");
        }
        for (k = 0; k < 4; k++) {
            free(ref[k]);
            free(got[k]);
        }
    }
    t_end();
}

/* The error bounds of conv_algo_reference. The im2col and implicit GEMM paths: relative to
   the sum of the absolute values of an element's terms (|b| + sum |x w| for y, sum |dy w|
   for dx, sum |dy x| for dw); a float sum of n terms is within about n 2^-24 of it in the
   worst case, sqrt(n) 2^-24 in practice (n <= 297 here for y and dx): measured 2.0e-7 (y),
   1.1e-7 (dx), 1.7e-7 (dw, up to 3267 terms; every algorithm computes dw so, on AVX-512 by
   the direct first-layer kernel at 1 and 3 channels). Winograd
   F(2x2, 3x3) mixes a tile's 4x4 inputs and a filter's 9 weights before the sum over
   channels, so its error follows their magnitudes, not the element's own terms (a border
   element of dx with one small term measured 1.7e-5 of it): relative to the sum over
   channels of (the sum of |x| over the 5x5 window that holds every tile window of the
   element) times (the sum of the filter's |w|), measured 2.8e-8 (y) and 5.2e-8 (dx). Both
   bounds are about 5-10x the measured worst (NN_TEST_VERBOSE=1 prints it). */
#define CONV_REF_TOL 1e-6
#define CONV_WINO_TOL 5e-7

/* N, C, H, W, K, pad (3x3, stride 1, bias) */
static const int conv_ref_shapes[][6] = {
    {1, 1, 7, 33, 3, 1}, {3, 3, 33, 7, 7, 0}, {1, 7, 1, 33, 33, 1}, {3, 33, 7, 3, 7, 1},
    {1, 33, 33, 33, 33, 0}, {3, 7, 3, 3, 1, 0}, {3, 1, 1, 1, 1, 1}, {1, 3, 7, 7, 7, 2}, {2, 16, 9, 7, 17, 1},
    {2, 32, 9, 7, 13, 1}, {1, 64, 6, 5, 24, 2}, /* dw's blocked path (channels a multiple of nr) */
    {2, 32, 14, 14, 64, 1}, {1, 32, 3, 300, 8, 1}, {2, 64, 5, 4, 16, 0}, /* and its register tiles (filters a multiple of 8; one row a chunk at OW 300) */
};

/* x, w, b, t (dy) given; y, dx, dw out */
static int conv_ref_run(nn_context *ctx, const int *c, const float *xv, const float *wv, const float *bv, const float *tv,
                        float *y, float *dx, float *dw) {
    int OH = c[2] + 2 * c[5] - 2, OW = c[3] + 2 * c[5] - 2, ok = 0;
    long nx = (long)c[0] * c[1] * c[2] * c[3], nw = (long)c[4] * c[1] * 9, ny = (long)c[0] * c[4] * OH * OW;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_conv2d_desc d;
    nn_init zero;
    nn_tensor x, w, b, t, yt;
    memset(&zero, 0, sizeof zero);
    memset(&d, 0, sizeof d);
    memset(&cd, 0, sizeof cd);
    d.pad_h = d.pad_w = c[5];
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape4(c[0], c[1], c[2], c[3]));
    nn_graph_requires_grad(g, x);
    w = nn_param(g, "w", nn_shape4(c[4], c[1], 3, 3), zero);
    b = nn_param(g, "b", nn_shape1(c[4]), zero);
    t = nn_input(g, "t", NN_F32, nn_shape4(c[0], c[4], OH, OW));
    yt = nn_conv2d(g, x, w, b, &d);
    nn_graph_output(g, yt);
    cd.loss = nn_sum(g, nn_mul(g, yt, t));
    if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_tensor_write(g, x, xv, sizeof(float) * nx), ctx) &&
        T_OK(nn_tensor_write(g, w, wv, sizeof(float) * nw), ctx) && T_OK(nn_tensor_write(g, b, bv, sizeof(float) * c[4]), ctx) &&
        T_OK(nn_tensor_write(g, t, tv, sizeof(float) * ny), ctx) && T_OK(nn_graph_step(g), ctx))
        ok = T_OK(nn_tensor_read(g, yt, y, sizeof(float) * ny), ctx) &&
             T_OK(nn_tensor_read(g, nn_graph_grad(g, x), dx, sizeof(float) * nx), ctx) &&
             T_OK(nn_tensor_read(g, nn_graph_grad(g, w), dw, sizeof(float) * nw), ctx);
    nn_graph_destroy(g);
    return ok;
}

/* sum over the channels j of a of (sum of |a[n, j]| over the 5x5 window whose top left corner
   is (r0, c0), inside [0, R) x [0, Q)) * (sum of |w| of the filter between j and ch), finite
   values only; wt:
   whether a's channels are w's first dimension (dx) */
static double conv_ref_window(const float *a, int n, int J, int R, int Q, int r0, int c0, const float *w, int ch, int C,
                              int wt) {
    double sum = 0;
    int j, r, q, k;
    for (j = 0; j < J; j++) {
        double sa = 0, sw = 0;
        for (r = r0; r < r0 + 5; r++)
            for (q = c0; q < c0 + 5; q++)
                if (r >= 0 && r < R && q >= 0 && q < Q && isfinite(a[(((long)n * J + j) * R + r) * Q + q]))
                    sa += fabs(a[(((long)n * J + j) * R + r) * Q + q]);
        for (k = 0; k < 9; k++)
            if (isfinite(w[(wt ? (long)j * C + ch : (long)ch * J + j) * 9 + k]))
                sw += fabs(w[(wt ? (long)j * C + ch : (long)ch * J + j) * 9 + k]);
        sum += sa * sw;
    }
    return sum;
}

/* The double references and each element's sum of absolute terms: ref[0..2] y, dx, dw;
   win[0..1]: Winograd's scale for y and dx (conv_algo_reference) */
static void conv_ref_compute(const int *c, const float *x, const float *w, const float *b, const float *t, double **ref,
                             double **mag, double **win) {
    int N = c[0], C = c[1], H = c[2], W = c[3], K = c[4], p = c[5], OH = H + 2 * p - 2, OW = W + 2 * p - 2;
    int n, k, ci, oh, ow, kh, kw;
    memset(ref[1], 0, sizeof(double) * N * C * H * W);
    memset(mag[1], 0, sizeof(double) * N * C * H * W);
    memset(ref[2], 0, sizeof(double) * K * C * 9);
    memset(mag[2], 0, sizeof(double) * K * C * 9);
    for (n = 0; n < N; n++)
        for (k = 0; k < K; k++)
            for (oh = 0; oh < OH; oh++)
                for (ow = 0; ow < OW; ow++) {
                    long yi = (((long)n * K + k) * OH + oh) * OW + ow;
                    double acc = b[k], m = fabs(b[k]), dy = t[yi];
                    for (ci = 0; ci < C; ci++)
                        for (kh = 0; kh < 3; kh++)
                            for (kw = 0; kw < 3; kw++) {
                                int ih = oh + kh - p, iw = ow + kw - p;
                                long xi = (((long)n * C + ci) * H + ih) * W + iw, wi = ((long)k * C + ci) * 9 + kh * 3 + kw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                                    acc += 0.0 * w[wi]; /* im2col's zeros: a NaN or infinite weight gives NaN */
                                    continue;
                                }
                                acc += (double)x[xi] * w[wi];
                                m += fabs((double)x[xi] * w[wi]);
                                ref[1][xi] += dy * w[wi];
                                mag[1][xi] += fabs(dy * w[wi]);
                                ref[2][wi] += dy * x[xi];
                                mag[2][wi] += fabs(dy * x[xi]);
                            }
                    ref[0][yi] = acc;
                    mag[0][yi] = m;
                    win[0][yi] = fabs(b[k]) + conv_ref_window(x, n, C, H, W, oh - p - 1, ow - p - 1, w, k, C, 0);
                }
    for (n = 0; n < N; n++)
        for (ci = 0; ci < C; ci++)
            for (oh = 0; oh < H; oh++)
                for (ow = 0; ow < W; ow++)
                    win[1][(((long)n * C + ci) * H + oh) * W + ow] =
                        conv_ref_window(t, n, K, OH, OW, oh + p - 3, ow + p - 3, w, ci, C, 1);
}

/* 1 when got[i] is where ref[i] is: within CONV_REF_TOL of mag[i] when finite, else the same
   infinity or NaN; the largest relative error into *err */
static int conv_ref_compare(const char *what, const char *algo, const int *c, const float *got, const double *ref,
                            const double *mag, long n, double tol, double *err) {
    long i;
    for (i = 0; i < n; i++) {
        double e;
        if (!isfinite(ref[i]) || !isfinite(got[i])) {
            if (!T_CHECK(isnan(ref[i]) ? isnan(got[i]) : (double)got[i] == ref[i],
                         "%s x[%d,%d,%d,%d] w[%d,%d,3,3] pad %d: %s[%ld] %g, the direct sum %g", algo, c[0], c[1], c[2],
                         c[3], c[4], c[1], c[5], what, i, got[i], ref[i]))
                return 0;
            continue;
        }
        e = fabs(got[i] - ref[i]) / (mag[i] > 1e-30 ? mag[i] : 1e-30);
        if (e > *err) *err = e;
        if (!T_CHECK(e <= tol, "%s x[%d,%d,%d,%d] w[%d,%d,3,3] pad %d: %s[%ld] %.9g, reference %.9g (%.3g of its terms)",
                     algo, c[0], c[1], c[2], c[3], c[4], c[1], c[5], what, i, got[i], ref[i], e))
            return 0;
    }
    return 1;
}

/* One shape's buffers for the reference tests: inputs x, w, b, dy (t), the results on 1
   and 3 threads, the double references, magnitudes and Winograd's scales; n[k]: the
   element counts of y, dx (x), dw (w) */
typedef struct conv_ref_bufs {
    long n[3], nt;
    float *xv, *wv, *bv, *tv, *got[3], *got3[3];
    double *ref[3], *mag[3], *win[2];
} conv_ref_bufs;

static void conv_ref_free(conv_ref_bufs *B) {
    int k;
    free(B->xv);
    free(B->wv);
    free(B->bv);
    free(B->tv);
    for (k = 0; k < 3; k++) {
        free(B->got[k]);
        free(B->got3[k]);
        free(B->ref[k]);
        free(B->mag[k]);
        if (k < 2) free(B->win[k]);
    }
}

/* B's buffers for shape c, x, w, b, dy uniform from seed (0 and a message when out of
   memory) */
static int conv_ref_alloc(conv_ref_bufs *B, const int *c, unsigned long long seed) {
    int OH = c[2] + 2 * c[5] - 2, OW = c[3] + 2 * c[5] - 2, k;
    long i;
    memset(B, 0, sizeof *B);
    B->nt = B->n[0] = (long)c[0] * c[4] * OH * OW;
    B->n[1] = (long)c[0] * c[1] * c[2] * c[3];
    B->n[2] = (long)c[4] * c[1] * 9;
    B->xv = (float *)malloc(sizeof(float) * B->n[1]);
    B->wv = (float *)malloc(sizeof(float) * B->n[2]);
    B->bv = (float *)malloc(sizeof(float) * c[4]);
    B->tv = (float *)malloc(sizeof(float) * B->nt);
    for (k = 0; k < 3; k++) {
        B->got[k] = (float *)malloc(sizeof(float) * B->n[k]);
        B->got3[k] = (float *)malloc(sizeof(float) * B->n[k]);
        B->ref[k] = (double *)malloc(sizeof(double) * B->n[k]);
        B->mag[k] = (double *)malloc(sizeof(double) * B->n[k]);
        if (k < 2) B->win[k] = (double *)malloc(sizeof(double) * B->n[k]);
    }
    if (!T_CHECK(B->xv && B->wv && B->bv && B->tv && B->got[0] && B->got[1] && B->got[2] && B->got3[0] && B->got3[1] &&
                     B->got3[2] && B->ref[0] && B->ref[1] && B->ref[2] && B->mag[0] && B->mag[1] && B->mag[2] && B->win[0] &&
                     B->win[1],
                 "out of memory"))
        return 0;
    t_seed(seed);
    for (i = 0; i < B->n[1]; i++) B->xv[i] = (float)t_uniform(-1.0, 1.0);
    for (i = 0; i < B->n[2]; i++) B->wv[i] = (float)t_uniform(-0.5, 0.5);
    for (i = 0; i < c[4]; i++) B->bv[i] = (float)t_uniform(-1.0, 1.0);
    for (i = 0; i < B->nt; i++) B->tv[i] = (float)t_uniform(-1.0, 1.0);
    return 1;
}

static void conv_algo_reference(const t_env *e) {
    static const char *algos[] = {"im2col", "gemm", "winograd"};
    static const char *what[3] = {"y", "dx", "dw"};
    double worst[3][3];
    size_t s, a;
    int k, pass;
    if (!t_begin_cpu(e, "conv2d 3x3 im2col, implicit GEMM, Winograd against a double reference (y, dx, dw)",
                     "the algorithms are the CPU backend's"))
        return;
    memset(worst, 0, sizeof worst);
    for (pass = 0; pass < 2; pass++) /* 1: an infinity in x and a NaN in w */
        for (s = 0; s < sizeof conv_ref_shapes / sizeof conv_ref_shapes[0]; s++) {
            const int *c = conv_ref_shapes[s];
            conv_ref_bufs B;
            if (conv_ref_alloc(&B, c, 0x3a70 + (unsigned long long)s)) {
                float *xv = B.xv, *wv = B.wv, *bv = B.bv, *tv = B.tv, **got = B.got, **got3 = B.got3;
                const long *n = B.n;
                if (pass == 1) {
                    xv[n[1] / 2] = INFINITY;
                    wv[n[2] - 1] = NAN;
                }
                conv_ref_compute(c, xv, wv, bv, tv, B.ref, B.mag, B.win);
                for (a = 0; a < sizeof algos / sizeof algos[0]; a++) {
                    nn_context_desc cdesc;
                    nn_context *c1 = NULL, *c3 = NULL;
                    int ok;
                    t_context_desc(e, &cdesc);
                    cdesc.device = "cpu";
                    cdesc.threads = 1;
                    if (!T_OK(nn_context_create(&cdesc, &c1), e->ctx)) break;
                    cdesc.threads = 3;
                    if (!T_OK(nn_context_create(&cdesc, &c3), e->ctx)) {
                        nn_context_destroy(c1);
                        break;
                    }
                    setenv("NN_CONV_ALGO", algos[a], 1);
                    ok = conv_ref_run(c1, c, xv, wv, bv, tv, got[0], got[1], got[2]) &&
                         conv_ref_run(c3, c, xv, wv, bv, tv, got3[0], got3[1], got3[2]);
                    unsetenv("NN_CONV_ALGO");
                    for (k = 0; ok && k < 3; k++) {
                        long j = conv_algo_diff(got[k], got3[k], n[k]);
                        T_CHECK(j < 0, "%s x[%d,%d,%d,%d] w[%d,%d,3,3]: %s[%ld] %.9g on 1 thread, %.9g on 3", algos[a], c[0],
                                c[1], c[2], c[3], c[4], c[1], what[k], j, j < 0 ? 0.0 : got[k][j], j < 0 ? 0.0 : got3[k][j]);
                        if (a == 2 && k < 2) /* Winograd: its window's scale */
                            conv_ref_compare(what[k], algos[a], c, got[k], B.ref[k], B.win[k], n[k], CONV_WINO_TOL, &worst[a][k]);
                        else conv_ref_compare(what[k], algos[a], c, got[k], B.ref[k], B.mag[k], n[k], CONV_REF_TOL, &worst[a][k]);
                    }
                    nn_context_destroy(c1);
                    nn_context_destroy(c3);
                }
                if (pass == 0 && c[1] >= 16 && c[4] >= 16) { /* the default picks Winograd (got: its results) */
                    nn_context *cd = NULL;
                    nn_context_desc cdesc;
                    t_context_desc(e, &cdesc);
                    cdesc.device = "cpu";
                    cdesc.threads = 1;
                    if (T_OK(nn_context_create(&cdesc, &cd), e->ctx) && conv_ref_run(cd, c, xv, wv, bv, tv, got3[0], got3[1], got3[2]))
                        for (k = 0; k < 2; k++)
                            T_CHECK(conv_algo_diff(got[k], got3[k], n[k]) < 0, "x[%d,%d,%d,%d] w[%d,%d,3,3]: the default's %s is not Winograd's",
                                    c[0], c[1], c[2], c[3], c[4], c[1], what[k]);
                    nn_context_destroy(cd);
                }
            }
            conv_ref_free(&B);
        }
    if (getenv("NN_TEST_VERBOSE"))
        for (a = 0; a < 3; a++)
            printf("  %s: largest error y %.3g, dx %.3g, dw %.3g of the terms\n", algos[a], worst[a][0], worst[a][1], worst[a][2]);
    t_end();
}

/* The implicit GEMM's weight gradient on its blocked path (channels a multiple of the GEMM
   kernel's nr: 8 generic, 16 AVX2, 32 AVX-512) with each GEMM kernel this CPU has forced,
   so the plain-C and AVX2 forms run on an AVX-512 machine too: y, dx, dw within
   CONV_REF_TOL of the double reference, the same bits on 1 and 3 threads. */
static void conv_algo_kernels(const t_env *e) {
    static const char *kernels[] = {"generic", "avx2", "avx512f"};
    static const int shapes[][6] = {{2, 16, 9, 7, 17, 1}, {2, 32, 9, 7, 13, 1}, {1, 64, 6, 5, 24, 2}, {1, 8, 5, 6, 9, 1}, {2, 32, 14, 14, 64, 1}, {1, 32, 3, 300, 8, 1}};
    static const char *what[3] = {"y", "dx", "dw"};
    size_t s, kn;
    int k, ran = 0;
    if (!t_begin_cpu(e, "conv2d implicit GEMM (dw's blocked path) with each float32 GEMM kernel forced, against a double reference",
                     "the algorithms are the CPU backend's"))
        return;
    for (kn = 0; kn < sizeof kernels / sizeof kernels[0]; kn++) {
        if (strcmp(t_sgemm_force(kernels[kn]), kernels[kn]) != 0) continue; /* not on this CPU */
        ran++;
        for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const int *c = shapes[s];
            conv_ref_bufs B;
            double worst = 0;
            if (conv_ref_alloc(&B, c, 0x5b10 + (unsigned long long)s)) {
                nn_context_desc cdesc;
                nn_context *c1 = NULL, *c3 = NULL;
                conv_ref_compute(c, B.xv, B.wv, B.bv, B.tv, B.ref, B.mag, B.win);
                t_context_desc(e, &cdesc);
                cdesc.device = "cpu";
                cdesc.threads = 1;
                if (T_OK(nn_context_create(&cdesc, &c1), e->ctx)) {
                    cdesc.threads = 3;
                    if (T_OK(nn_context_create(&cdesc, &c3), e->ctx)) {
                        int ok;
                        setenv("NN_CONV_ALGO", "gemm", 1);
                        ok = conv_ref_run(c1, c, B.xv, B.wv, B.bv, B.tv, B.got[0], B.got[1], B.got[2]) &&
                             conv_ref_run(c3, c, B.xv, B.wv, B.bv, B.tv, B.got3[0], B.got3[1], B.got3[2]);
                        unsetenv("NN_CONV_ALGO");
                        for (k = 0; ok && k < 3; k++) {
                            long j = conv_algo_diff(B.got[k], B.got3[k], B.n[k]);
                            T_CHECK(j < 0, "%s x[%d,%d,%d,%d] w[%d,%d,3,3]: %s[%ld] %.9g on 1 thread, %.9g on 3", kernels[kn], c[0],
                                    c[1], c[2], c[3], c[4], c[1], what[k], j, j < 0 ? 0.0 : B.got[k][j], j < 0 ? 0.0 : B.got3[k][j]);
                            conv_ref_compare(what[k], kernels[kn], c, B.got[k], B.ref[k], B.mag[k], B.n[k], CONV_REF_TOL, &worst);
                        }
                    }
                }
                nn_context_destroy(c1);
                nn_context_destroy(c3);
            }
            conv_ref_free(&B);
        }
    }
    t_sgemm_force(NULL);
    T_CHECK(ran >= 1, "no float32 GEMM kernel could be forced");
    t_end();
}

/* The Winograd transforms (src/cpu/conv_wino.c) under each instruction set this CPU has
   (plain C, AVX2, AVX-512: t_wino_force), the GEMM between them left as it is: y and dx the
   same bits under each (the file promises them: each element is the same sequence of float
   adds); widths that leave vector tails (OW 5, 37, 70), channel counts not a multiple of 16. */
static void conv_algo_wino_isa(const t_env *e) {
    static const char *const isas[] = {"generic", "avx2", "avx512"};
    static const int shapes[][6] = {{2, 16, 9, 37, 17, 1}, {1, 8, 6, 5, 9, 0}, {1, 24, 12, 70, 16, 1}};
    static const char *what[2] = {"y", "dx"};
    size_t s, i;
    int k, ran = 0;
    if (!t_begin_cpu(e, "conv2d Winograd transforms under each instruction set: the same bits", "the CPU backend's transforms"))
        return;
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int *c = shapes[s];
        conv_ref_bufs B;
        nn_context_desc cdesc;
        nn_context *c1 = NULL;
        int first = 1;
        if (!conv_ref_alloc(&B, c, 0x71a0 + (unsigned long long)s)) continue;
        t_context_desc(e, &cdesc);
        cdesc.device = "cpu";
        cdesc.threads = 1;
        if (T_OK(nn_context_create(&cdesc, &c1), e->ctx))
            for (i = 0; i < sizeof isas / sizeof isas[0]; i++) {
                float **out = first ? B.got : B.got3;
                int ok;
                if (!t_wino_force(isas[i])) continue; /* not on this CPU */
                ran += s == 0;
                setenv("NN_CONV_ALGO", "winograd", 1);
                ok = conv_ref_run(c1, c, B.xv, B.wv, B.bv, B.tv, out[0], out[1], out[2]);
                unsetenv("NN_CONV_ALGO");
                for (k = 0; ok && !first && k < 2; k++) {
                    long j = conv_algo_diff(B.got[k], B.got3[k], B.n[k]);
                    T_CHECK(j < 0, "x[%d,%d,%d,%d] w[%d,%d,3,3]: %s[%ld] %.9g with the generic transforms, %.9g with %s", c[0],
                            c[1], c[2], c[3], c[4], c[1], what[k], j, j < 0 ? 0.0 : B.got[k][j], j < 0 ? 0.0 : B.got3[k][j],
                            isas[i]);
                }
                first = 0;
            }
        t_wino_force(NULL);
        nn_context_destroy(c1);
        conv_ref_free(&B);
    }
#if defined(__x86_64__) || defined(__i386__)
    T_CHECK(ran >= 2, "%d instruction sets ran on an x86 CPU", ran);
#else
    T_CHECK(ran >= 1, "the generic transforms did not run");
#endif
    t_end();
}

/* tests/test_conv.c's conv2d cases of the op checker with the im2col path forced */
void t_conv2d_checks(const t_env *e, const char *suffix);
static void conv_algo_im2col_cases(const t_env *e) {
    if (e->opencl) return; /* the CPU backend's choice: OpenCL runs its own */
    setenv("NN_CONV_ALGO", "im2col", 1);
    t_conv2d_checks(e, " (NN_CONV_ALGO=im2col)");
    unsetenv("NN_CONV_ALGO");
}

/* ... and with Winograd forced wherever it applies (3x3, stride 1, one group) */
static void conv_algo_winograd_cases(const t_env *e) {
    if (e->opencl) return;
    setenv("NN_CONV_ALGO", "winograd", 1);
    t_conv2d_checks(e, " (NN_CONV_ALGO=winograd)");
    unsetenv("NN_CONV_ALGO");
}

void suite_conv_algo(const t_env *e) {
    T_RUN(e, conv_algo_bitwise, conv_algo_im2col_cases, conv_algo_reference, conv_algo_kernels, conv_algo_wino_isa,
          conv_algo_winograd_cases);
}
