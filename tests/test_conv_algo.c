/* The CPU backend's convolution algorithms (src/cpu/conv.c): the implicit GEMM (the default
   for convolutions that are not depthwise) against the im2col path it replaced
   (NN_CONV_ALGO=im2col), to the bit, forward, dx, dw and db, at shapes that reach every
   branch of the implicit path: several K blocks of the weights (C*KH*KW > 256) and of dy (K
   > 256), dx in chunks of output rows, chunks and K blocks of dw across images, stride,
   dilation, padding, groups, 1, 3, 7 and 33 channels; on 1, 2 and 3 threads. The op
   checker's conv2d cases (tests/test_conv.c) hold the default algorithm to a double
   reference and finite differences; conv_algo_im2col_cases runs them with the im2col path
   forced, so both algorithms meet the reference. */
#define _POSIX_C_SOURCE 200809L /* setenv, as tests/nn_test.c */
#include "test.h"
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
            unsetenv("NN_CONV_ALGO");
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
                        j = conv_algo_diff(ref[k], got[k], n[k]);
                        T_CHECK(j < 0, "x[%d,%d,%d,%d] w[%d,%d,%d,%d] on %d threads: %s[%ld] %.9g, im2col %.9g", c[0], c[1],
                                c[2], c[3], c[4], c[1] / c[13], c[5], c[6], threads[ti], what[k], j, j < 0 ? 0.0 : got[k][j],
                                j < 0 ? 0.0 : ref[k][j]);
                    }
                nn_context_destroy(ctx);
            }
        }
        for (k = 0; k < 4; k++) {
            free(ref[k]);
            free(got[k]);
        }
    }
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

void suite_conv_algo(const t_env *e) { T_RUN(e, conv_algo_bitwise, conv_algo_im2col_cases); }
