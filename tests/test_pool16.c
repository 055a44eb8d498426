/* Pooling on 16-bit storage (issue 20): max_pool2d (its argmax and gradient), avg_pool2d
   (and its gradient), and the 1-D, global and adaptive forms built on them, on bf16 and
   f16 tensors: the output and dx of the input's dtype, every comparison and sum in float32
   (src/ops/pool.c's CPU bodies widen around src/cpu/pool.c's float32 loops; kernels/pool.cl
   built with NN_STORE_BF16 / _F16).

   The reference is the float32 pool, on the same backend, of the inputs rounded to the type
   here (t_rnd16, from the formats' definitions), its y and dx rounded to the type here: the
   16-bit op must give those bits exactly (the same float32 loops and kernels visit windows
   and sum in the same order; one rounding at the store). The loss's weights are exact in
   16 bits, so dy is too. Then the precision policy: a conv -> relu -> maxpool -> conv chain
   under NN_PRECISION_BF16 compiles no more CASTs than the same chain without the pool (the
   pool takes and gives bf16), and trains. */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { P16_MAX2D, P16_AVG2D, P16_MAX1D, P16_AVG1D, P16_GMAX, P16_GAVG, P16_ADAPT };

typedef struct p16_case {
    int kind, N, C, H, W;         /* 1-D: x [N, C, W] (H unused) */
    int kh, kw, sh, sw, ph, pw, dil, ceil_mode, excl;
    int aoh, aow;                 /* adaptive: the output size */
    int grid;                     /* 1: x on a grid of 1/16 (ties in the windows) */
} p16_case;

static nn_tensor p16_pool(nn_graph *g, nn_tensor x, const p16_case *c) {
    nn_pool2d_desc d2;
    nn_pool1d_desc d1;
    memset(&d2, 0, sizeof d2);
    memset(&d1, 0, sizeof d1);
    d2.kernel_h = c->kh, d2.kernel_w = c->kw, d2.stride_h = c->sh, d2.stride_w = c->sw;
    d2.pad_h = c->ph, d2.pad_w = c->pw, d2.ceil_mode = c->ceil_mode, d2.exclude_pad = c->excl;
    d2.dilation_h = d2.dilation_w = c->dil;
    d1.kernel = c->kw, d1.stride = c->sw, d1.pad = c->pw, d1.dilation = c->dil, d1.ceil_mode = c->ceil_mode;
    d1.exclude_pad = c->excl;
    switch (c->kind) {
    case P16_MAX2D: return nn_max_pool2d(g, x, &d2);
    case P16_AVG2D: return nn_avg_pool2d(g, x, &d2);
    case P16_MAX1D: return nn_max_pool1d(g, x, &d1);
    case P16_AVG1D: return nn_avg_pool1d(g, x, &d1);
    case P16_GMAX: return nn_global_max_pool2d(g, x);
    case P16_GAVG: return nn_global_avg_pool2d(g, x);
    default: return nn_adaptive_avg_pool2d(g, x, c->aoh, c->aow);
    }
}

static long p16_numel(nn_shape s) {
    long n = 1;
    int i;
    for (i = 0; i < s.ndim; i++) n *= (long)s.dim[i];
    return n;
}

static nn_shape p16_xshape(const p16_case *c) {
    return c->kind == P16_MAX1D || c->kind == P16_AVG1D ? nn_shape3(c->N, c->C, c->W) : nn_shape4(c->N, c->C, c->H, c->W);
}

/* y and dx (read as float32) of the pool at c in storage d (NN_F32: float32 throughout),
   loss sum(y * wl); wl NULL: only y's size into *ny (no run). 1 when it ran. */
static int p16_run(nn_context *ctx, nn_dtype d, const p16_case *c, const float *xv, const float *wl, float *y, float *dx,
                   long *ny) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, l, yt;
    long nx = p16_numel(p16_xshape(c));
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, p16_xshape(c));
    nn_graph_requires_grad(g, x);
    yt = d == NN_F32 ? p16_pool(g, x, c) : nn_to_dtype(g, p16_pool(g, nn_to_dtype(g, x, d), c), NN_F32);
    if (!T_CHECK(yt.id >= 0, "%s pool: %s", d == NN_F32 ? "f32" : t_name16(d), nn_context_last_error(ctx))) goto done;
    *ny = (long)t_numel(g, yt);
    if (!wl) {
        ok = 1;
        goto done;
    }
    l = nn_input(g, "wl", NN_F32, t_shape(g, yt));
    nn_graph_output(g, yt);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, yt, l));
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, xv, nx * sizeof(float)), ctx) || !T_OK(nn_tensor_write(g, l, wl, *ny * sizeof(float)), ctx) ||
        !T_OK(nn_graph_step(g), ctx))
        goto done;
    if (!T_OK(nn_tensor_read(g, yt, y, *ny * sizeof(float)), ctx) ||
        !T_OK(nn_tensor_read(g, nn_graph_grad(g, x), dx, nx * sizeof(float)), ctx))
        goto done;
    ok = 1;
done:
    nn_graph_destroy(g);
    return ok;
}

/* got must be want rounded to d, bit for bit (as values: -0 and 0 apart too) */
static int p16_same(const char *name, const char *what, nn_dtype d, const float *got, const float *want, long n) {
    long i;
    for (i = 0; i < n; i++) {
        float r = (float)t_rnd16(d, want[i]);
        if (memcmp(&got[i], &r, sizeof r) != 0 && !(got[i] != got[i] && r != r))
            return T_CHECK(0, "%s %s %s[%ld] = %.9g, the float32 pool's rounded %.9g (float32 %.9g)", name, t_name16(d), what, i,
                           (double)got[i], (double)r, (double)want[i]);
    }
    return 1;
}

static void pool16_vs_f32(const t_env *e) {
    /* kind, N, C, H, W, kh, kw, sh, sw, ph, pw, dil, ceil, excl, aoh, aow, grid */
    static const p16_case cs[] = {
        {P16_MAX2D, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0},
        {P16_MAX2D, 3, 3, 7, 7, 3, 3, 2, 2, 1, 1, 1, 0, 0, 0, 0, 1}, /* padding, ties */
        {P16_MAX2D, 2, 33, 5, 9, 2, 2, 2, 2, 0, 0, 1, 0, 0, 0, 0, 1}, /* 2x2 stride 2 inside: the CPU's branch-free rows */
        {P16_MAX2D, 2, 33, 5, 9, 2, 2, 2, 2, 0, 0, 1, 1, 0, 0, 0, 0}, /* ceil mode: windows past the edge */
        {P16_MAX2D, 3, 3, 7, 7, 3, 3, 1, 2, 1, 1, 2, 0, 0, 0, 0, 1}, /* dilation 2, stride 1,2 */
        {P16_MAX2D, 2, 3, 7, 6, 3, 2, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0}, /* overlapping windows: dx sums */
        {P16_AVG2D, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0},
        {P16_AVG2D, 3, 3, 7, 7, 3, 3, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0}, /* count_include_pad */
        {P16_AVG2D, 3, 3, 7, 7, 3, 3, 2, 2, 1, 1, 1, 0, 1, 0, 0, 0}, /* exclude_pad */
        {P16_AVG2D, 2, 33, 5, 9, 3, 2, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0}, /* stride != kernel, ceil mode */
        {P16_AVG2D, 2, 33, 5, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0}, /* ceil mode, exclude_pad */
        {P16_MAX1D, 3, 3, 1, 7, 1, 3, 1, 2, 0, 1, 1, 0, 0, 0, 0, 1},
        {P16_AVG1D, 2, 33, 1, 9, 1, 3, 1, 2, 0, 1, 1, 1, 1, 0, 0, 0},
        {P16_GMAX, 2, 33, 5, 9, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1},
        {P16_GAVG, 3, 3, 7, 7, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0},
        {P16_ADAPT, 3, 3, 7, 7, 0, 0, 0, 0, 0, 0, 1, 0, 0, 3, 2, 0},
        {P16_ADAPT, 2, 33, 5, 9, 0, 0, 0, 0, 0, 0, 1, 0, 0, 4, 5, 0}, /* overlapping bins */
    };
    static const char *kinds[] = {"max_pool2d", "avg_pool2d", "max_pool1d", "avg_pool1d", "global_max", "global_avg", "adaptive_avg"};
    int t, k;
    if (!t_begin(e, "pool16: pools on bf16/f16 (y, dx) are the float32 pool's on the rounded inputs, rounded")) return;
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        for (k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
            const p16_case *c = &cs[k];
            long nx = p16_numel(p16_xshape(c)), ny = 0, i;
            float *buf;
            char name[96];
            int ok;
            snprintf(name, sizeof name, "%s x[%d,%d,%d,%d] k%dx%d s%dx%d p%dx%d d%d%s%s", kinds[c->kind], c->N, c->C, c->H, c->W,
                     c->kh, c->kw, c->sh, c->sw, c->ph, c->pw, c->dil, c->ceil_mode ? " ceil" : "", c->excl ? " excl" : "");
            if (!p16_run(e->ctx, NN_F32, c, NULL, NULL, NULL, NULL, &ny)) goto done;
            buf = (float *)malloc(sizeof(float) * (size_t)(3 * nx + 3 * ny));
            if (!T_CHECK(buf != NULL, "out of memory")) goto done;
            {
                float *xv = buf, *dx32 = xv + nx, *dx16 = dx32 + nx, *wl = dx16 + nx, *y32 = wl + ny, *y16 = y32 + ny;
                t_seed(2000 + 10 * (unsigned long long)k + (unsigned long long)t);
                for (i = 0; i < nx; i++)
                    xv[i] = c->grid ? (float)((t_randint(64) - 32) / 16.0) : (float)t_rnd16(d, t_uniform(-3, 3));
                for (i = 0; i < ny; i++) wl[i] = (float)((t_randint(256) - 128) / 128.0); /* exact in 16 bits */
                ok = p16_run(e->ctx, NN_F32, c, xv, wl, y32, dx32, &ny) && p16_run(e->ctx, d, c, xv, wl, y16, dx16, &ny) &&
                     p16_same(name, "y", d, y16, y32, ny) && p16_same(name, "dx", d, dx16, dx32, nx);
            }
            free(buf);
            if (!ok) goto done;
        }
    }
done:
    t_end();
}

/* ---- the policy: conv -> relu -> [maxpool] -> conv -> relu -> linear under a 16-bit
   precision (bias-free convs: the chain's CASTs are the convs' and the pool's alone); the
   pool adds no CAST (it takes and gives the policy's
   type, where a float32 pool took a CAST before it and the next conv one after it, and
   their gradients' likewise), and the chain trains (SGD, the loss goes down). ---- */

#define PN 8
#define PH 8

static int p16_cast_op(void) {
    int op;
    for (op = 0; op < nn_op_count(); op++)
        if (strcmp(nn_op_name(op), "to_dtype") == 0) return op;
    return -1;
}

/* the CASTs compiled for the chain (pool: with the max pool) into *casts, and its first and
   last loss over 8 SGD steps */
static int p16_chain(nn_context *ctx, nn_precision prec, int pool, const float *xv, const int *yv, uint64_t *casts, float *first,
                     float *last) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_conv2d_desc c1;
    nn_pool2d_desc pd;
    nn_tensor x, y, h, w1, w2, loss;
    nn_init ki;
    uint64_t c0;
    int ok = 0, side = pool ? PH / 2 : PH;
    memset(&gd, 0, sizeof gd);
    gd.precision = prec;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return 0;
    memset(&c1, 0, sizeof c1);
    c1.pad_h = c1.pad_w = 1;
    memset(&pd, 0, sizeof pd);
    pd.kernel_h = pd.kernel_w = 2;
    x = nn_input(g, "x", NN_F32, nn_shape4(PN, 1, PH, PH));
    y = nn_input(g, "y", NN_I32, nn_shape1(PN));
    memset(&ki, 0, sizeof ki);
    ki.kind = NN_INIT_KAIMING_UNIFORM;
    w1 = nn_param(g, "c1.weight", nn_shape4(4, 1, 3, 3), ki);
    w2 = nn_param(g, "c2.weight", nn_shape4(4, 4, 3, 3), ki);
    h = nn_relu(g, nn_conv2d(g, x, w1, NN_NONE, &c1));
    if (pool) h = nn_max_pool2d(g, h, &pd);
    h = nn_relu(g, nn_conv2d(g, h, w2, NN_NONE, &c1));
    h = nn_linear_layer(g, nn_reshape(g, h, nn_shape2(PN, 4 * side * side)), 3, NULL, "fc");
    loss = nn_cross_entropy_loss(g, h, y, NULL);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.01f;
    c0 = t_op_compiled(ctx, p16_cast_op());
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    *casts = t_op_compiled(ctx, p16_cast_op()) - c0;
    T_OK(nn_tensor_write(g, x, xv, PN * PH * PH * sizeof(float)), ctx);
    T_OK(nn_tensor_write(g, y, yv, PN * sizeof(int)), ctx);
    ok = t_train_losses(g, ctx, loss, 8, first, last);
done:
    nn_graph_destroy(g);
    return ok;
}

static void pool16_policy(const t_env *e) {
    static float xv[PN * PH * PH];
    static int yv[PN];
    int i, p;
    if (!t_begin(e, "pool16: conv -> relu -> maxpool -> conv under bf16/fp16 casts nothing around the pool; it trains")) return;
    if (!T_CHECK(p16_cast_op() >= 0, "no op named to_dtype")) goto done;
    t_seed(2100);
    for (i = 0; i < PN; i++) yv[i] = i % 3;
    for (i = 0; i < PN * PH * PH; i++) /* a class's own stripes plus noise */
        xv[i] = (float)(((i % PH) % (2 + yv[i / (PH * PH)]) == 0 ? 1.0 : 0.0) + t_uniform(-0.3, 0.3));
    for (p = 1; p <= 2; p++) {
        nn_precision prec = p == 1 ? NN_PRECISION_BF16 : NN_PRECISION_FP16;
        uint64_t with = 0, without = 0;
        float first = 0, last = 0, f2 = 0, l2 = 0;
        if (!p16_chain(e->ctx, prec, 1, xv, yv, &with, &first, &last) || !p16_chain(e->ctx, prec, 0, xv, yv, &without, &f2, &l2))
            break;
        T_CHECK(with == without, "%s: %llu CASTs with the max pool, %llu without", p == 1 ? "bf16" : "fp16",
                (unsigned long long)with, (unsigned long long)without);
        T_CHECK(first == first && first < 2.0f && last < first && l2 < f2, "%s: the loss went %g -> %g over 8 SGD steps "
                "(%g -> %g without the pool)", p == 1 ? "bf16" : "fp16", (double)first, (double)last, (double)f2, (double)l2);
    }
done:
    t_end();
}

void suite_pool16(const t_env *e) {
    pool16_vs_f32(e);
    pool16_policy(e);
}
