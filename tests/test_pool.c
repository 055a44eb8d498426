/* Pooling: max, average (count_include_pad either way), 1-D, global and adaptive, through
   the op checker (forward against a double reference written from PyTorch's CPU loops,
   gradients against finite differences, CPU-vs-OpenCL parity), plus the tie rule and the
   error messages. Shapes are odd on purpose: batch 1, H or W 1, 3, 7, 33, strides > 1,
   padding that does not divide evenly, ceil mode with and without a dropped last window. */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { P_MAX, P_AVG, P_GMAX, P_GAVG, P_ADAPT };

/* One case. Zero stride means the default (the kernel); for 1-D cases H = 1 and only the
   w fields count. Adaptive cases use oh, ow. */
typedef struct pcase {
    int kind, dims;
    int N, C, H, W;
    int kh, kw, sh, sw, ph, pw, dh, dw, ceil_mode, exclude_pad;
    int oh, ow;
} pcase;

/* The geometry a case resolves to. */
typedef struct pgeo {
    int kh, kw, sh, sw, ph, pw, dh, dw, OH, OW, max, adaptive, exclude_pad;
} pgeo;

/* PyTorch's pooling_output_shape, written independently of the library's. */
static int out_size(int n, int k, int s, int p, int d, int ceil_mode) {
    int o = (int)floor((double)(n + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0)) / s) + 1;
    if (ceil_mode && (o - 1) * s >= n + p) o--;
    return o;
}

static pgeo resolve(const pcase *c) {
    pgeo g;
    memset(&g, 0, sizeof g);
    g.max = c->kind == P_MAX || c->kind == P_GMAX;
    g.exclude_pad = c->exclude_pad;
    g.dh = c->dh ? c->dh : 1;
    g.dw = c->dw ? c->dw : 1;
    if (c->kind == P_GMAX || c->kind == P_GAVG) {
        g.kh = g.sh = c->H;
        g.kw = g.sw = c->W;
        g.OH = g.OW = 1;
        return g;
    }
    if (c->kind == P_ADAPT) {
        g.adaptive = 1;
        g.OH = c->oh;
        g.OW = c->ow;
        return g;
    }
    g.kh = c->dims == 1 ? 1 : c->kh;
    g.kw = c->kw;
    g.sh = c->dims == 1 ? 1 : c->sh ? c->sh : c->kh;
    g.sw = c->sw ? c->sw : c->kw;
    g.ph = c->dims == 1 ? 0 : c->ph;
    g.pw = c->pw;
    if (c->dims == 1) g.dh = 1;
    g.OH = out_size(c->H, g.kh, g.sh, g.ph, g.dh, c->ceil_mode);
    g.OW = out_size(c->W, g.kw, g.sw, g.pw, g.dw, c->ceil_mode);
    return g;
}

static nn_shape out_shape(const pcase *c) {
    pgeo g = resolve(c);
    return c->dims == 1 ? nn_shape3(c->N, c->C, g.OW) : nn_shape4(c->N, c->C, g.OH, g.OW);
}
static nn_shape in_shape(const pcase *c) {
    return c->dims == 1 ? nn_shape3(c->N, c->C, c->W) : nn_shape4(c->N, c->C, c->H, c->W);
}

static nn_tensor build_pool(nn_graph *g, nn_tensor x, const pcase *c) {
    switch (c->kind) {
    case P_GMAX: return nn_global_max_pool2d(g, x);
    case P_GAVG: return nn_global_avg_pool2d(g, x);
    case P_ADAPT: return nn_adaptive_avg_pool2d(g, x, c->oh, c->ow);
    default: break;
    }
    if (c->dims == 1) {
        nn_pool1d_desc d;
        memset(&d, 0, sizeof d);
        d.kernel = c->kw;
        d.stride = c->sw;
        d.pad = c->pw;
        d.dilation = c->dw;
        d.ceil_mode = c->ceil_mode;
        d.exclude_pad = c->exclude_pad;
        return c->kind == P_MAX ? nn_max_pool1d(g, x, &d) : nn_avg_pool1d(g, x, &d);
    } else {
        nn_pool2d_desc d;
        memset(&d, 0, sizeof d);
        d.kernel_h = c->kh;
        d.kernel_w = c->kw;
        d.stride_h = c->sh;
        d.stride_w = c->sw;
        d.pad_h = c->ph;
        d.pad_w = c->pw;
        d.dilation_h = c->dh;
        d.dilation_w = c->dw;
        d.ceil_mode = c->ceil_mode;
        d.exclude_pad = c->exclude_pad;
        return c->kind == P_MAX ? nn_max_pool2d(g, x, &d) : nn_avg_pool2d(g, x, &d);
    }
}

/* ---- the double reference, from PyTorch's CPU loops ---- */

static double min_gap;  /* smallest distance between a window's two largest inputs */
static int check_gaps;  /* the reference asserts min_gap (cases whose gradient is checked) */
#define GAP_MIN 1e-5    /* well above the finite-difference step (at most 2e-6 here) */

/* Max pooling of one plane; arg[o] gets the first maximum's index in window order (a NaN
   wins), -1 for a window of padding alone. */
static void ref_max_plane(const pgeo *g, int H, int W, const double *x, double *y, long *arg) {
    int oh, ow, i, j;
    for (oh = 0; oh < g->OH; oh++)
        for (ow = 0; ow < g->OW; ow++) {
            double best = -INFINITY, second = -INFINITY;
            long at = -1;
            int n = 0;
            for (i = 0; i < g->kh; i++)
                for (j = 0; j < g->kw; j++) {
                    int ih = oh * g->sh - g->ph + i * g->dh, iw = ow * g->sw - g->pw + j * g->dw;
                    double v;
                    if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                    v = x[ih * W + iw];
                    if (n++ == 0 || v > best || isnan(v)) {
                        second = best;
                        best = v;
                        at = (long)ih * W + iw;
                    } else if (v > second) {
                        second = v;
                    }
                }
            if (n >= 2 && best - second < min_gap) min_gap = best - second;
            y[oh * g->OW + ow] = best;
            if (arg) arg[oh * g->OW + ow] = at;
        }
}

static void ref_avg_plane(const pgeo *g, int H, int W, const double *x, double *y) {
    int oh, ow, ih, iw;
    for (oh = 0; oh < g->OH; oh++)
        for (ow = 0; ow < g->OW; ow++) {
            int h0, h1, w0, w1;
            double sum = 0, pool;
            if (g->adaptive) { /* floor(o*H/OH) to ceil((o+1)*H/OH) */
                h0 = (int)floor((double)oh * H / g->OH);
                h1 = (int)ceil((double)(oh + 1) * H / g->OH);
                w0 = (int)floor((double)ow * W / g->OW);
                w1 = (int)ceil((double)(ow + 1) * W / g->OW);
            } else {
                h0 = oh * g->sh - g->ph;
                w0 = ow * g->sw - g->pw;
                h1 = h0 + g->kh < H + g->ph ? h0 + g->kh : H + g->ph;
                w1 = w0 + g->kw < W + g->pw ? w0 + g->kw : W + g->pw;
            }
            pool = (double)(h1 - h0) * (w1 - w0);
            h0 = h0 < 0 ? 0 : h0;
            w0 = w0 < 0 ? 0 : w0;
            h1 = h1 > H ? H : h1;
            w1 = w1 > W ? W : w1;
            if (h0 >= h1 || w0 >= w1) {
                y[oh * g->OW + ow] = 0;
                continue;
            }
            for (ih = h0; ih < h1; ih++)
                for (iw = w0; iw < w1; iw++) sum += x[ih * W + iw];
            y[oh * g->OW + ow] = sum / (g->exclude_pad || g->adaptive ? (double)(h1 - h0) * (w1 - w0) : pool);
        }
}

static const pcase *cur_case;

static void r_pool(const spec *s, double *const *in, double *out) {
    const pcase *c = cur_case;
    pgeo g = resolve(c);
    int H = c->dims == 1 ? 1 : c->H, p;
    (void)s;
    for (p = 0; p < c->N * c->C; p++) {
        const double *x = in[0] + (long)p * H * c->W;
        double *y = out + (long)p * g.OH * g.OW;
        if (g.max) ref_max_plane(&g, H, c->W, x, y, NULL);
        else ref_avg_plane(&g, H, c->W, x, y);
    }
    if (g.max && check_gaps)
        T_CHECK(min_gap > GAP_MIN, "a window's two largest inputs are %.3g apart: finite differences would cross the argmax",
                min_gap);
}

static nn_tensor b_pool(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return build_pool(g, in[0], cur_case);
}

static void case_name(const pcase *c, char *buf, size_t n) {
    static const char *const kinds[] = {"max_pool", "avg_pool", "global_max_pool2d", "global_avg_pool2d", "adaptive_avg_pool2d"};
    char in[64];
    pgeo g = resolve(c); /* the stride that a zero field defaults to */
    if (c->dims == 1) snprintf(in, sizeof in, "[%d, %d, %d]", c->N, c->C, c->W);
    else snprintf(in, sizeof in, "[%d, %d, %d, %d]", c->N, c->C, c->H, c->W);
    if (c->kind == P_GMAX || c->kind == P_GAVG) snprintf(buf, n, "%s %s", kinds[c->kind], in);
    else if (c->kind == P_ADAPT) snprintf(buf, n, "%s %s -> %dx%d", kinds[c->kind], in, c->oh, c->ow);
    else if (c->dims == 1)
        snprintf(buf, n, "%s1d %s k%d s%d p%d d%d%s%s", kinds[c->kind], in, c->kw, g.sw, c->pw, c->dw ? c->dw : 1,
                 c->ceil_mode ? " ceil" : "", c->exclude_pad ? " exclude_pad" : "");
    else
        snprintf(buf, n, "%s2d %s k%dx%d s%dx%d p%dx%d d%dx%d%s%s", kinds[c->kind], in, c->kh, c->kw, g.sh, g.sw, c->ph,
                 c->pw, c->dh ? c->dh : 1, c->dw ? c->dw : 1, c->ceil_mode ? " ceil" : "", c->exclude_pad ? " exclude_pad" : "");
}

/* kind, dims, N, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, ceil, exclude_pad, oh, ow */
static const pcase cases[] = {
    {P_MAX, 2, 1, 1, 7, 7, 3, 3, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0},     /* batch 1, default stride */
    {P_MAX, 2, 2, 3, 8, 8, 3, 3, 2, 2, 0, 0, 0, 0, 1, 0, 0, 0},     /* ceil mode adds a window */
    {P_MAX, 2, 1, 2, 7, 33, 2, 3, 2, 3, 1, 1, 0, 0, 1, 0, 0, 0},    /* ceil mode drops the last */
    {P_MAX, 2, 2, 2, 9, 7, 3, 2, 1, 2, 1, 1, 2, 3, 0, 0, 0, 0},     /* dilation */
    {P_MAX, 2, 3, 2, 1, 7, 1, 3, 1, 2, 0, 1, 0, 0, 0, 0, 0, 0},     /* H = 1 */
    {P_MAX, 2, 2, 3, 33, 33, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0},   /* overlapping, 33 */
    {P_MAX, 2, 1, 1, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0},     /* padding > the input's share */
    {P_MAX, 2, 2, 3, 8, 6, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},     /* 2x2 stride 2 inside (the CNN's) */
    {P_MAX, 2, 1, 2, 7, 9, 2, 2, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0},     /* 2x2 inside, overlapping rows */
    {P_MAX, 2, 1, 2, 7, 8, 3, 3, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0},     /* 3x3 inside */
    {P_MAX, 2, 1, 2, 9, 31, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0},    /* 2x2 stride 2, rows of 15: CPU devices' 8, 8 from 7 */
    {P_MAX, 2, 2, 3, 6, 14, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0},    /* rows of 7: 4, 4 from 3 */
    {P_MAX, 2, 1, 1, 7, 27, 2, 2, 2, 2, 0, 0, 0, 0, 1, 0, 0, 0},    /* the same in ceil mode: windows cut by the edge */
    {P_AVG, 2, 1, 1, 7, 7, 3, 3, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0},
    {P_AVG, 2, 1, 1, 7, 7, 3, 3, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0},
    {P_AVG, 2, 2, 3, 8, 7, 3, 2, 2, 1, 1, 1, 0, 0, 1, 0, 0, 0},     /* a ceil window past the padding */
    {P_AVG, 2, 2, 3, 8, 7, 3, 2, 2, 1, 1, 1, 0, 0, 1, 1, 0, 0},
    {P_AVG, 2, 2, 2, 33, 33, 5, 5, 3, 3, 2, 2, 0, 0, 0, 1, 0, 0},
    {P_AVG, 2, 1, 2, 3, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0},
    {P_AVG, 2, 3, 1, 1, 33, 1, 4, 1, 3, 0, 2, 0, 0, 1, 0, 0, 0},    /* H = 1 */
    {P_MAX, 1, 3, 2, 1, 33, 0, 5, 0, 2, 0, 2, 0, 2, 0, 0, 0, 0},
    {P_MAX, 1, 1, 1, 1, 7, 0, 2, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0},
    {P_AVG, 1, 2, 3, 1, 33, 0, 4, 0, 3, 0, 2, 0, 0, 1, 1, 0, 0},
    {P_AVG, 1, 1, 2, 1, 7, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0},
    {P_GMAX, 2, 2, 3, 7, 33, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {P_GMAX, 2, 1, 2, 1, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {P_GAVG, 2, 2, 3, 7, 33, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {P_GAVG, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {P_ADAPT, 2, 2, 3, 7, 33, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 5},  /* bins overlap */
    {P_ADAPT, 2, 1, 2, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 7},   /* identity */
    {P_ADAPT, 2, 1, 1, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 4},   /* more bins than inputs */
    {P_ADAPT, 2, 2, 2, 33, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1},
};

static void op_cases(const t_env *e) {
    int k;
    for (k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        char name[160];
        spec s;
        cur_case = &cases[k];
        case_name(&cases[k], name, sizeof name);
        s = mk(name, b_pool, r_pool, out_shape(&cases[k]));
        in_f(&s, in_shape(&cases[k]));
        min_gap = INFINITY;
        check_gaps = 1;
        check_case(e, &s);
        check_gaps = 0;
    }
}

/* ---- ties: the first maximum in window order takes the gradient, on every backend ---- */

typedef struct run_out { float *y, *dx; int ok; } run_out;

/* y = pool(x) and dx of sum(y * w), one step on ctx */
static run_out run_pool(nn_context *ctx, const pcase *c, const float *x, const float *w) {
    run_out r;
    nn_graph *g = NULL;
    nn_tensor tx, tw, y;
    nn_compile_desc cd;
    long nx = numel(in_shape(c)), ny = numel(out_shape(c));
    memset(&r, 0, sizeof r);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return r;
    tx = nn_input(g, "x", NN_F32, in_shape(c));
    nn_graph_requires_grad(g, tx);
    y = build_pool(g, tx, c);
    tw = nn_input(g, "w", NN_F32, out_shape(c));
    nn_graph_output(g, y);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, y, tw));
    r.y = (float *)calloc((size_t)ny, sizeof(float));
    r.dx = (float *)calloc((size_t)nx, sizeof(float));
    if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_tensor_write(g, tx, x, (size_t)nx * 4), ctx) &&
        T_OK(nn_tensor_write(g, tw, w, (size_t)ny * 4), ctx) && T_OK(nn_graph_step(g), ctx) &&
        T_OK(nn_tensor_read(g, y, r.y, (size_t)ny * 4), ctx) && T_OK(nn_tensor_read(g, nn_graph_grad(g, tx), r.dx, (size_t)nx * 4), ctx))
        r.ok = 1;
    nn_graph_destroy(g);
    return r;
}

static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || a == b; }

/* Forward and gradient against the rule (no finite differences: ties have no derivative)
   and, on an OpenCL device, bit for bit against the CPU backend. values: 0 random ties in
   {0, 1, 2}; 1 the same with one plane constant and one NaN. */
static void tie_case(const t_env *e, const char *what, const pcase *c, int values) {
    pgeo g = resolve(c);
    long nx = numel(in_shape(c)), ny = numel(out_shape(c)), i;
    int H = c->dims == 1 ? 1 : c->H, p;
    float *x, *w;
    double *xd, *yd, *dxd;
    long *arg;
    run_out r, rc;
    char label[200], name[160];
    case_name(c, name, sizeof name);
    snprintf(label, sizeof label, "ties: %s, %s", what, name);
    if (!t_begin(e, label)) return;
    x = (float *)malloc((size_t)nx * 4);
    w = (float *)malloc((size_t)ny * 4);
    xd = (double *)malloc((size_t)nx * sizeof(double));
    yd = (double *)malloc((size_t)ny * sizeof(double));
    dxd = (double *)calloc((size_t)nx, sizeof(double));
    arg = (long *)malloc((size_t)ny * sizeof(long));
    t_seed(0x71e5 + (unsigned long long)nx);
    for (i = 0; i < nx; i++) x[i] = (float)t_randint(3);
    if (values == 1) {
        for (i = 0; i < (long)H * c->W; i++) x[i] = 1.0f; /* plane 0 constant */
        x[nx - 2] = NAN;
    }
    for (i = 0; i < ny; i++) w[i] = (float)t_uniform(-1, 1);
    for (i = 0; i < nx; i++) xd[i] = x[i];
    min_gap = INFINITY;
    for (p = 0; p < c->N * c->C; p++) {
        long o;
        ref_max_plane(&g, H, c->W, xd + (long)p * H * c->W, yd + (long)p * g.OH * g.OW, arg + (long)p * g.OH * g.OW);
        for (o = 0; o < (long)g.OH * g.OW; o++) {
            long a = arg[(long)p * g.OH * g.OW + o];
            if (a >= 0) dxd[(long)p * H * c->W + a] += w[(long)p * g.OH * g.OW + o];
        }
    }
    T_CHECK(min_gap == 0 || g.OH * g.OW * c->N * c->C == 0, "the input has no ties");
    r = run_pool(e->ctx, c, x, w);
    if (r.ok) {
        for (i = 0; i < ny; i++)
            if (!same_float(r.y[i], (float)yd[i])) {
                T_CHECK(0, "y[%ld] = %g, expected %g", i, r.y[i], yd[i]);
                break;
            }
        for (i = 0; i < nx; i++) {
            if (fabs(r.dx[i] - dxd[i]) > 1e-5) {
                T_CHECK(0, "dx[%ld] = %g, expected %g (the first maximum takes the gradient)", i, r.dx[i], dxd[i]);
                break;
            }
        }
        if (e->cpu) {
            rc = run_pool(e->cpu, c, x, w);
            if (rc.ok) {
                for (i = 0; i < ny; i++)
                    if (!same_float(r.y[i], rc.y[i])) {
                        T_CHECK(0, "y[%ld]: OpenCL %g, CPU %g", i, r.y[i], rc.y[i]);
                        break;
                    }
                T_CHECK(memcmp(r.dx, rc.dx, (size_t)nx * 4) == 0, "dx: OpenCL and CPU differ");
            }
            free(rc.y);
            free(rc.dx);
        }
    }
    free(r.y);
    free(r.dx);
    free(x);
    free(w);
    free(xd);
    free(yd);
    free(dxd);
    free(arg);
    t_end();
}

static void tie_cases(const t_env *e) {
    /* kind, dims, N, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, ceil, exclude_pad, oh, ow */
    static const pcase overlap = {P_MAX, 2, 2, 3, 7, 9, 3, 3, 2, 2, 1, 1, 0, 0, 1, 0, 0, 0};
    static const pcase dilated = {P_MAX, 2, 1, 2, 7, 33, 3, 2, 1, 3, 1, 1, 2, 2, 0, 0, 0, 0};
    static const pcase oned = {P_MAX, 1, 2, 2, 1, 33, 0, 4, 0, 1, 0, 2, 0, 0, 1, 0, 0, 0};
    static const pcase global = {P_GMAX, 2, 2, 2, 3, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    /* 2x2 stride 2 inside, 35 windows a row: the CPU's AVX-512 path, 16 windows and a tail */
    static const pcase wide = {P_MAX, 2, 2, 2, 6, 71, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0};
    tie_case(e, "overlapping windows", &overlap, 0);
    tie_case(e, "a constant plane and a NaN", &overlap, 1);
    tie_case(e, "dilated windows", &dilated, 0);
    tie_case(e, "1-D", &oned, 0);
    tie_case(e, "global", &global, 1);
    tie_case(e, "2x2 stride 2, wide rows", &wide, 0);
    tie_case(e, "2x2 stride 2, wide rows, a constant plane and a NaN", &wide, 1);
}

/* A window over padding alone (dilation skips the input): -inf, as PyTorch, and no gradient. */
static void padding_only_case(const t_env *e) {
    /* H = 1, kh 2, ph 1, dh 2: rows -1 and 1 */
    static const pcase c = {P_MAX, 2, 1, 2, 1, 5, 2, 1, 1, 1, 1, 0, 2, 1, 0, 0, 0, 0};
    float x[10], w[10];
    run_out r;
    int i;
    if (!t_begin(e, "max_pool2d: a window of padding alone gives -inf, no gradient")) return;
    for (i = 0; i < 10; i++) {
        x[i] = (float)i - 4.5f;
        w[i] = 1.0f;
    }
    T_CHECK(numel(out_shape(&c)) == 10, "output %ld elements", numel(out_shape(&c)));
    r = run_pool(e->ctx, &c, x, w);
    if (r.ok)
        for (i = 0; i < 10; i++) {
            T_CHECK(isinf(r.y[i]) && r.y[i] < 0, "y[%d] = %g, expected -inf", i, r.y[i]);
            T_CHECK(r.dx[i] == 0.0f, "dx[%d] = %g, expected 0", i, r.dx[i]);
        }
    free(r.y);
    free(r.dx);
    t_end();
}

/* ---- errors name the op and the shapes ---- */

static void expect_error(nn_context *ctx, nn_graph *g, nn_tensor t, nn_result code, const char *a, const char *b,
                         const char *c) {
    const char *m = nn_context_last_error(ctx);
    T_CHECK(t.id < 0, "an op that should fail gave a tensor");
    T_CHECK(nn_graph_status(g) == code, "status %d, expected %d (%s)", nn_graph_status(g), code, m);
    T_CHECK(strstr(m, a) && strstr(m, b) && (!c || strstr(m, c)), "message: %s", m);
}

static void error_cases(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_pool2d_desc d;
    nn_pool1d_desc d1;
    nn_tensor x;
    int k;
    if (!t_begin(e, "pool errors name the op and the shapes")) return;
    for (k = 0; k < 9; k++) {
        if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) break;
        memset(&d, 0, sizeof d);
        memset(&d1, 0, sizeof d1);
        x = nn_input(g, "x", NN_F32, k == 4 || k == 5 ? nn_shape3(2, 3, 5) : nn_shape4(1, 2, 2, 3));
        switch (k) {
        case 0: /* a window larger than the padded input */
            d.kernel_h = d.kernel_w = 3;
            expect_error(ctx, g, nn_max_pool2d(g, x, &d), NN_ERR_SHAPE, "nn_max_pool2d", "[1, 2, 2, 3]", "larger than the padded input");
            break;
        case 1: /* dilation makes it so */
            d.kernel_h = d.kernel_w = 2;
            d.dilation_h = 3;
            expect_error(ctx, g, nn_max_pool2d(g, x, &d), NN_ERR_SHAPE, "nn_max_pool2d", "[1, 2, 2, 3]", "dilation 3x1");
            break;
        case 2: /* padding more than half the kernel */
            d.kernel_h = d.kernel_w = 2;
            d.pad_w = 2;
            expect_error(ctx, g, nn_avg_pool2d(g, x, &d), NN_ERR_INVALID_ARGUMENT, "nn_avg_pool2d", "padding 0x2", "kernel 2x2");
            break;
        case 3: /* average pooling has no dilation */
            d.kernel_h = d.kernel_w = 1;
            d.dilation_w = 2;
            expect_error(ctx, g, nn_avg_pool2d(g, x, &d), NN_ERR_INVALID_ARGUMENT, "nn_avg_pool2d", "dilation", NULL);
            break;
        case 4: /* a 3-D tensor to the 2-D op */
            d.kernel_h = d.kernel_w = 1;
            expect_error(ctx, g, nn_max_pool2d(g, x, &d), NN_ERR_SHAPE, "nn_max_pool2d", "[2, 3, 5]", "[N, C, H, W]");
            break;
        case 5: /* 1-D: the window */
            d1.kernel = 4;
            d1.dilation = 3;
            d1.pad = 1;
            expect_error(ctx, g, nn_max_pool1d(g, x, &d1), NN_ERR_SHAPE, "nn_max_pool1d", "[2, 3, 5]", "kernel 4, dilation 3");
            break;
        case 6: /* a 4-D tensor to the 1-D op */
            d1.kernel = 2;
            expect_error(ctx, g, nn_avg_pool1d(g, x, &d1), NN_ERR_SHAPE, "nn_avg_pool1d", "[1, 2, 2, 3]", "[N, C, L]");
            break;
        case 7: /* no desc; a zero kernel */
            expect_error(ctx, g, nn_max_pool2d(g, x, NULL), NN_ERR_INVALID_ARGUMENT, "nn_max_pool2d", "kernel", NULL);
            nn_graph_destroy(g);
            g = NULL;
            if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) break;
            x = nn_input(g, "x", NN_F32, nn_shape4(1, 2, 2, 3));
            d.kernel_w = 2;
            expect_error(ctx, g, nn_max_pool2d(g, x, &d), NN_ERR_INVALID_ARGUMENT, "nn_max_pool2d", "kernel 0x2", NULL);
            break;
        default: /* adaptive to nothing */
            expect_error(ctx, g, nn_adaptive_avg_pool2d(g, x, 0, 3), NN_ERR_SHAPE, "nn_adaptive_avg_pool2d", "[1, 2, 2, 3]", "0x3");
            break;
        }
        nn_graph_destroy(g);
        g = NULL;
    }
    nn_graph_destroy(g);
    t_end();
}

/* ==== NaN and infinity propagation (the op checker's expected-value mode: PyTorch's
   NaN, +-inf and values; the rules in tests/op_check.c) ==== */

/* ---- pooling: references with PyTorch's rules (max: a NaN wins, val > max || isnan(val),
   the gradient to the first maximum; a window of -inf gives -inf; average: the sum over
   the window, inf - inf is NaN) ---- */

typedef struct np_pool {
    int max, kh, kw, sh, sw, ph, pw, dh, dw, ceil, exclude, global, adaptive, oh, ow, one_d;
} np_pool;

static nn_tensor np_b_pool(nn_graph *g, const nn_tensor *in, const spec *s_) {
    const np_pool *p = (const np_pool *)s_->arg;
    if (p->global) return p->max ? nn_global_max_pool2d(g, in[0]) : nn_global_avg_pool2d(g, in[0]);
    if (p->adaptive) return nn_adaptive_avg_pool2d(g, in[0], p->oh, p->ow);
    if (p->one_d) {
        nn_pool1d_desc d;
        memset(&d, 0, sizeof d);
        d.kernel = p->kw;
        d.stride = p->sw;
        d.pad = p->pw ? p->pw : NN_ZERO;
        d.dilation = p->dw;
        d.ceil_mode = p->ceil;
        d.exclude_pad = p->exclude;
        return p->max ? nn_max_pool1d(g, in[0], &d) : nn_avg_pool1d(g, in[0], &d);
    } else {
        nn_pool2d_desc d;
        memset(&d, 0, sizeof d);
        d.kernel_h = p->kh;
        d.kernel_w = p->kw;
        d.stride_h = p->sh;
        d.stride_w = p->sw;
        d.pad_h = p->ph ? p->ph : NN_ZERO;
        d.pad_w = p->pw ? p->pw : NN_ZERO;
        d.dilation_h = p->dh;
        d.dilation_w = p->dw;
        d.ceil_mode = p->ceil;
        d.exclude_pad = p->exclude;
        return p->max ? nn_max_pool2d(g, in[0], &d) : nn_avg_pool2d(g, in[0], &d);
    }
}

/* one plane [H, W] -> [OH, OW] (floor mode, no ceil windows) and dx of sum(y * w) */
static void pool_ref(const np_pool *p, const double *x, int H, int W, int OH, int OW, const double *w, double *y, double *dx) {
    int oh, ow, i, j;
    for (i = 0; i < H * W; i++) dx[i] = 0;
    for (oh = 0; oh < OH; oh++)
        for (ow = 0; ow < OW; ow++) {
            int h0, h1, w0, w1, cnt;
            if (p->adaptive) {
                h0 = oh * H / OH;
                h1 = ((oh + 1) * H + OH - 1) / OH;
                w0 = ow * W / OW;
                w1 = ((ow + 1) * W + OW - 1) / OW;
            } else {
                h0 = oh * p->sh - p->ph;
                h1 = h0 + (p->kh - 1) * p->dh + 1;
                w0 = ow * p->sw - p->pw;
                w1 = w0 + (p->kw - 1) * p->dw + 1;
            }
            if (p->max) {
                double m = -INFINITY;
                int arg = -1;
                for (i = h0; i < h1; i += p->dh)
                    for (j = w0; j < w1; j += p->dw) {
                        double v;
                        if (i < 0 || i >= H || j < 0 || j >= W) continue;
                        v = x[i * W + j];
                        if (arg < 0 || v > m || isnan(v)) {
                            m = v;
                            arg = i * W + j;
                        }
                    }
                y[oh * OW + ow] = m;
                if (arg >= 0) dx[arg] += w[oh * OW + ow];
            } else {
                double s = 0;
                int n = 0;
                cnt = (h1 < H + p->ph ? h1 : H + p->ph) - h0;
                cnt *= (w1 < W + p->pw ? w1 : W + p->pw) - w0;
                for (i = h0; i < h1; i++)
                    for (j = w0; j < w1; j++)
                        if (i >= 0 && i < H && j >= 0 && j < W) {
                            s += x[i * W + j];
                            n++;
                        }
                if (p->adaptive || p->exclude) cnt = n;
                y[oh * OW + ow] = s / cnt;
                for (i = h0; i < h1; i++)
                    for (j = w0; j < w1; j++)
                        if (i >= 0 && i < H && j >= 0 && j < W) dx[i * W + j] += w[oh * OW + ow] / cnt;
            }
        }
}

static void nanprop_pool_one(const t_env *e, const char *name, const np_pool *p, int NC, int H, int W, int OH, int OW,
                             const long *at, const double *v, int nbad, const long *wat, const double *wv, int nwb) {
    double x[512], y[512], dx[512], w[512];
    long i;
    int c;
    np_case cs;
    np_fill(x, (long)NC * H * W, -2, 2, 101);
    for (i = 0; i < NC * OH * OW; i++) w[i] = 1;
    for (i = 0; i < nbad; i++) x[at[i]] = v[i];
    for (i = 0; i < nwb; i++) w[wat[i]] = wv[i];
    for (c = 0; c < NC; c++) pool_ref(p, x + c * H * W, H, W, OH, OW, w + c * OH * OW, y + c * OH * OW, dx + c * H * W);
    np_init(&cs, name, np_b_pool, p);
    np_in(&cs, p->one_d ? nn_shape3(1, NC, W) : nn_shape4(1, NC, H, W), x, dx);
    cs.y_expect = y;
    cs.w = w;
    np_run(e, &cs);
}

static void nanprop_pool(const t_env *e) {
    static np_pool mp, mp2, mp1, gmp, ap, ap2, gap, aap;
    /* x [1, 2, 7, 7], kernel 3, stride 2, pad 1: NaN in overlapping windows, +inf, -inf
       beside finite values */
    long at[8] = {1 * 7 + 1, 2 * 7 + 2, 3 * 7 + 6, 0 * 7 + 3, 0 * 7 + 4, 49 + 5 * 7 + 5, 49 + 6 * 7 + 0, 49 + 2 * 7 + 4};
    double v[8] = {NAN, INFINITY, INFINITY, -INFINITY, -INFINITY, NAN, -INFINITY, NAN};
    /* an incoming gradient with NaN and inf: it reaches the argmax alone */
    long wat[2] = {1, 16 + 5};
    double wv[2] = {NAN, INFINITY};
    memset(&mp, 0, sizeof mp);
    mp.max = 1;
    mp.kh = mp.kw = 3;
    mp.sh = mp.sw = 2;
    mp.ph = mp.pw = 1;
    mp.dh = mp.dw = 1;
    nanprop_pool_one(e, "max_pool2d 3x3 stride 2 pad 1", &mp, 2, 7, 7, 4, 4, at, v, 8, NULL, NULL, 0);
    nanprop_pool_one(e, "max_pool2d, NaN and inf in dy", &mp, 2, 7, 7, 4, 4, at, v, 5, wat, wv, 2);
    /* the CPU's branch-free 2x2 path: windows inside the plane */
    mp2 = mp;
    mp2.kh = mp2.kw = 2;
    mp2.ph = mp2.pw = 0;
    {
        /* NaN and inf in one window; a window of -inf alone (-inf, the gradient to its first) */
        long at2[7] = {0, 9, 2 * 8 + 5, 4 * 8 + 4, 4 * 8 + 5, 5 * 8 + 4, 5 * 8 + 5};
        double v2[7] = {NAN, INFINITY, NAN, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        nanprop_pool_one(e, "max_pool2d 2x2 stride 2", &mp2, 2, 6, 8, 3, 4, at2, v2, 7, NULL, NULL, 0);
        {
            /* rows of 8 outputs (CPU devices' float8 step): inf then a later NaN in a window,
               a window of -inf alone */
            long at3[6] = {10, 16 + 11, 2 * 16 + 4, 2 * 16 + 5, 3 * 16 + 4, 3 * 16 + 5};
            double v3[6] = {INFINITY, NAN, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
            nanprop_pool_one(e, "max_pool2d 2x2 stride 2, rows of 8", &mp2, 1, 4, 16, 2, 8, at3, v3, 6, NULL, NULL, 0);
        }
        mp2.dh = mp2.dw = 2;
        mp2.kh = mp2.kw = 3;
        mp2.sh = mp2.sw = 1;
        nanprop_pool_one(e, "max_pool2d 3x3 dilation 2", &mp2, 2, 6, 8, 2, 4, at2, v2, 7, NULL, NULL, 0);
    }
    memset(&mp1, 0, sizeof mp1);
    mp1.max = 1;
    mp1.one_d = 1;
    mp1.kh = mp1.sh = mp1.dh = 1;
    mp1.kw = 3;
    mp1.sw = 2;
    mp1.dw = 1;
    {
        long at1[4] = {2, 5, 9 + 0, 9 + 8};
        double v1[4] = {NAN, INFINITY, -INFINITY, NAN};
        nanprop_pool_one(e, "max_pool1d 3 stride 2", &mp1, 2, 1, 9, 1, 4, at1, v1, 4, NULL, NULL, 0);
    }
    memset(&gmp, 0, sizeof gmp);
    gmp.max = gmp.global = 1;
    gmp.kh = 5;
    gmp.kw = 6;
    gmp.sh = gmp.sw = gmp.dh = gmp.dw = 1;
    {
        long atg[4] = {7, 30 + 4, 30 + 29, 60 + 11};
        double vg[4] = {NAN, INFINITY, NAN, -INFINITY};
        nanprop_pool_one(e, "global_max_pool2d", &gmp, 3, 5, 6, 1, 1, atg, vg, 4, NULL, NULL, 0);
    }
    memset(&ap, 0, sizeof ap);
    ap.kh = ap.kw = 3;
    ap.sh = ap.sw = 2;
    ap.ph = ap.pw = 1;
    ap.dh = ap.dw = 1;
    nanprop_pool_one(e, "avg_pool2d 3x3 stride 2 pad 1", &ap, 2, 7, 7, 4, 4, at, v, 8, NULL, NULL, 0);
    ap2 = ap;
    ap2.exclude = 1;
    nanprop_pool_one(e, "avg_pool2d, NaN and inf in dy", &ap2, 2, 7, 7, 4, 4, at, v, 5, wat, wv, 2);
    memset(&gap, 0, sizeof gap);
    gap.global = 1;
    gap.kh = 5;
    gap.kw = 6;
    gap.sh = gap.sw = gap.dh = gap.dw = 1;
    {
        long atg[3] = {7, 30 + 4, 30 + 29};
        double vg[3] = {NAN, INFINITY, -INFINITY};
        nanprop_pool_one(e, "global_avg_pool2d", &gap, 3, 5, 6, 1, 1, atg, vg, 3, NULL, NULL, 0);
    }
    memset(&aap, 0, sizeof aap);
    aap.adaptive = 1;
    aap.oh = 2;
    aap.ow = 3;
    aap.dh = aap.dw = 1;
    {
        long ata[3] = {2 * 7 + 2, 25 + 0, 25 + 4 * 5 + 4};
        double va[3] = {NAN, INFINITY, -INFINITY};
        nanprop_pool_one(e, "adaptive_avg_pool2d 5x5 -> 2x3", &aap, 2, 5, 5, 2, 3, ata, va, 3, NULL, NULL, 0);
    }
}

/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- pooling ---- */

static nn_tensor pl(nn_graph *g, int which) {
    nn_pool2d_desc d;
    nn_pool1d_desc e;
    nn_tensor x = F(g, S4(1, 2, 6, 6));
    memset(&d, 0, sizeof d);
    memset(&e, 0, sizeof e);
    d.kernel_h = d.kernel_w = 2;
    e.kernel = 3;
    switch (which) {
    case 0: return nn_max_pool2d(g, x, NULL);
    case 1: d.kernel_h = 0; return nn_max_pool2d(g, x, &d);
    case 2: d.stride_w = NN_ZERO; return nn_max_pool2d(g, x, &d);
    case 3: d.kernel_h = d.kernel_w = 3; d.pad_h = 2; return nn_max_pool2d(g, x, &d);
    case 4: d.dilation_h = NN_ZERO; return nn_max_pool2d(g, x, &d);
    case 5: d.kernel_h = 7; return nn_max_pool2d(g, x, &d);
    case 6: return nn_max_pool2d(g, F(g, S3(1, 6, 6)), &d);
    case 7: d.dilation_w = 2; return nn_avg_pool2d(g, x, &d);
    case 8: return nn_avg_pool2d(g, I(g, S4(1, 2, 6, 6)), &d);
    case 9: d.pad_w = -1; return nn_avg_pool2d(g, x, &d);
    case 10: return nn_max_pool1d(g, x, &e);
    case 11: e.dilation = 2; return nn_avg_pool1d(g, F(g, S3(1, 2, 9)), &e);
    case 12: e.kernel = 10; return nn_max_pool1d(g, F(g, S3(1, 2, 9)), &e);
    case 13: return nn_max_pool1d(g, F(g, S3(1, 2, 9)), NULL);
    case 14: d.kernel_h = 3; d.dilation_h = 4; return nn_max_pool2d(g, x, &d);
    case 15: return nn_global_max_pool2d(g, F(g, S3(1, 6, 6)));
    case 16: return nn_global_avg_pool2d(g, I(g, S4(1, 2, 6, 6)));
    case 17: return nn_adaptive_avg_pool2d(g, x, 0, 3);
    case 18: return nn_adaptive_avg_pool2d(g, x, (int64_t)1 << 32, (int64_t)1 << 32);
    case 19: e.kernel = -3; return nn_avg_pool1d(g, F(g, S3(1, 2, 9)), &e);
    case 20: /* a kernel and padding (at most half of it) of 2^30: past 32-bit indices */
        d.kernel_h = 1;
        d.kernel_w = 1 << 30;
        d.pad_w = 1 << 29;
        return nn_max_pool2d(g, F(g, S4(1, 1, 1, (1 << 30) + 1)), &d);
    default: return T(-1);
    }
}
#define PL(N) \
    static nn_tensor p_##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return pl(g, N); }
PL(0) PL(1) PL(2) PL(3) PL(4) PL(5) PL(6) PL(7) PL(8) PL(9) PL(10) PL(11) PL(12) PL(13) PL(14) PL(15) PL(16) PL(17)
PL(18) PL(19) PL(20)

static const bad_row pool_bad[] = {
    {"pool", "max_pool2d without a desc", p_0, R_INV, "nn_max_pool2d|desc", 0},
    {"pool", "max_pool2d kernel 0x2", p_1, R_INV, "nn_max_pool2d|kernel 0x2", 0},
    {"pool", "max_pool2d stride_w 0", p_2, R_INV, "nn_max_pool2d|stride 2x0", 0},
    {"pool", "max_pool2d pad 2 of kernel 3", p_3, R_INV, "nn_max_pool2d|padding 2x0|kernel 3x3", 0},
    {"pool", "max_pool2d dilation 0", p_4, R_INV, "nn_max_pool2d|dilation 0x1", 0},
    {"pool", "max_pool2d kernel 7 over 6", p_5, R_SHAPE, "nn_max_pool2d|larger|[1, 2, 6, 6]", 0},
    {"pool", "max_pool2d of [1, 6, 6]", p_6, R_SHAPE, "nn_max_pool2d|[1, 6, 6]", 0},
    {"pool", "avg_pool2d dilation 2", p_7, R_INV, "nn_avg_pool2d|dilation 1x2", 0},
    {"pool", "avg_pool2d of int32", p_8, R_SHAPE, "nn_avg_pool2d|int32", 0},
    {"pool", "avg_pool2d padding -1", p_9, R_INV, "nn_avg_pool2d|padding 0x-1", 0},
    {"pool", "max_pool1d of [1, 2, 6, 6]", p_10, R_SHAPE, "nn_max_pool1d|[1, 2, 6, 6]", 0},
    {"pool", "avg_pool1d dilation 2", p_11, R_INV, "nn_avg_pool1d|dilation 2", 0},
    {"pool", "max_pool1d kernel 10 over 9", p_12, R_SHAPE, "nn_max_pool1d|larger|[1, 2, 9]", 0},
    {"pool", "max_pool1d without a desc", p_13, R_INV, "nn_max_pool1d|desc", 0},
    {"pool", "max_pool2d kernel 3, dilation 4 over 6", p_14, R_SHAPE, "nn_max_pool2d|dilation 4x1|[1, 2, 6, 6]", 0},
    {"pool", "global_max_pool2d of [1, 6, 6]", p_15, R_SHAPE, "nn_global_max_pool2d|[1, 6, 6]", 0},
    {"pool", "global_avg_pool2d of int32", p_16, R_SHAPE, "nn_global_avg_pool2d|int32", 0},
    {"pool", "adaptive_avg_pool2d 0x3", p_17, R_SHAPE, "nn_adaptive_avg_pool2d|0x3", 0},
    {"pool", "adaptive_avg_pool2d 2^32 x 2^32", p_18, R_SHAPE, "nn_adaptive_avg_pool2d|4294967296x4294967296", 0},
    {"pool", "avg_pool1d kernel -3", p_19, R_INV, "nn_avg_pool1d|kernel -3", 0},
    {"pool", "max_pool2d kernel and padding past 2^30", p_20, R_SHAPE, "nn_max_pool2d|536870912|[1, 1, 1, 1073741825]", 0},
};

void suite_pool(const t_env *e) {
    t_bad_rows(e, pool_bad, (int)(sizeof pool_bad / sizeof pool_bad[0]));
    T_RUN(e, op_cases, tie_cases, padding_only_case, error_cases, nanprop_pool);
}
