/* Shape and structure ops through the op checker: permute/transpose, concat, slice and
   split, 2-D padding (zeros, reflection), upsampling (nearest, bilinear), pixel shuffle. */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void strides(const nn_shape *s, long *st) {
    int d;
    st[s->ndim - 1] = 1;
    for (d = s->ndim - 2; d >= 0; d--) st[d] = st[d + 1] * (long)s->dim[d + 1];
}

/* ip[0..5]: the permutation */
static nn_tensor b_permute(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_permute(g, in[0], s->ip, s->shape[0].ndim); }
static void r_permute(const spec *s, double *const *in, double *out) {
    long xs[NN_MAX_DIMS], n = numel(s->out), i;
    int nd = s->out.ndim, d;
    strides(&s->shape[0], xs);
    for (i = 0; i < n; i++) {
        long r = i, off = 0;
        for (d = nd - 1; d >= 0; d--) {
            off += (r % (long)s->out.dim[d]) * xs[s->ip[d]];
            r /= (long)s->out.dim[d];
        }
        out[i] = in[0][off];
    }
}

static nn_tensor b_transpose(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_transpose(g, in[0], s->ip[6], s->ip[7]); }

/* concat of all inputs along ip[0] */
static nn_tensor b_concat(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_concat(g, in, s->n_in, s->ip[0]); }
static void r_concat(const spec *s, double *const *in, double *out) {
    int ax = s->ip[0], d, k;
    long outer = 1, inner = 1, o, pos = 0;
    for (d = 0; d < ax; d++) outer *= (long)s->out.dim[d];
    for (d = ax + 1; d < s->out.ndim; d++) inner *= (long)s->out.dim[d];
    for (o = 0; o < outer; o++)
        for (k = 0; k < s->n_in; k++) {
            long len = (long)s->shape[k].dim[ax] * inner;
            memcpy(out + pos, in[k] + o * len, (size_t)len * sizeof(double));
            pos += len;
        }
}

/* slice ip[0] axis from ip[1], length = out's */
static nn_tensor b_slice(nn_graph *g, const nn_tensor *in, const spec *s) {
    return nn_slice(g, in[0], s->ip[0], s->ip[1], s->out.dim[s->ip[0]]);
}
static void r_slice(const spec *s, double *const *in, double *out) {
    int ax = s->ip[0], d;
    long outer = 1, inner = 1, L = (long)s->shape[0].dim[ax], len = (long)s->out.dim[ax], o;
    for (d = 0; d < ax; d++) outer *= (long)s->out.dim[d];
    for (d = ax + 1; d < s->out.ndim; d++) inner *= (long)s->out.dim[d];
    for (o = 0; o < outer; o++) memcpy(out + o * len * inner, in[0] + (o * L + s->ip[1]) * inner, (size_t)(len * inner) * sizeof(double));
}

/* split along the last axis into (1, rest-1), then concat in reverse order */
static nn_tensor b_split_swap(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor parts[2], sw[2];
    int64_t sizes[2];
    int nd = s->shape[0].ndim;
    sizes[0] = 1;
    sizes[1] = s->shape[0].dim[nd - 1] - 1;
    if (nn_split(g, in[0], sizes, 2, -1, parts).id < 0) return parts[0];
    sw[0] = parts[1];
    sw[1] = parts[0];
    return nn_concat(g, sw, 2, -1);
}
static void r_split_swap(const spec *s, double *const *in, double *out) {
    int nd = s->shape[0].ndim;
    long L = (long)s->shape[0].dim[nd - 1], rows = numel(s->shape[0]) / L, r, j;
    for (r = 0; r < rows; r++)
        for (j = 0; j < L; j++) out[r * L + j] = in[0][r * L + (j + 1) % L];
}

/* Slices of x [.., 10, ..] along axis 1 joined: [1, 3) [6, 9) [4, 5) [2, 4). Their
   gradients meet in x's: the last three disjoint with runs no slice covers (one CONCAT,
   zeros between), [1, 3) overlapping [2, 4) (summed). */
static const int64_t slices_at[4][2] = {{1, 2}, {6, 3}, {4, 1}, {2, 2}};
static nn_tensor b_slices(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor p[4];
    int k;
    (void)s;
    for (k = 0; k < 4; k++) p[k] = nn_slice(g, in[0], 1, slices_at[k][0], slices_at[k][1]);
    return nn_concat(g, p, 4, 1);
}
static void r_slices(const spec *s, double *const *in, double *out) {
    long L = (long)s->shape[0].dim[1], inner = numel(s->shape[0]) / ((long)s->shape[0].dim[0] * L), o, pos = 0;
    int k;
    for (o = 0; o < (long)s->shape[0].dim[0]; o++)
        for (k = 0; k < 4; k++) {
            long len = (long)slices_at[k][1] * inner;
            memcpy(out + pos, in[0] + (o * L + (long)slices_at[k][0]) * inner, (size_t)len * sizeof(double));
            pos += len;
        }
}

/* ip: left, right, top, bottom (F.pad's order), reflect */
static nn_tensor b_pad(nn_graph *g, const nn_tensor *in, const spec *s) {
    return nn_pad2d(g, in[0], s->ip[0], s->ip[1], s->ip[2], s->ip[3], s->ip[4] ? NN_PAD_REFLECT : NN_PAD_ZEROS);
}
static long pad_src(long o, long before, long n, int reflect) {
    long i = o - before;
    if (i >= 0 && i < n) return i;
    if (!reflect) return -1;
    return i < 0 ? -i : 2 * (n - 1) - i;
}
static void r_pad(const spec *s, double *const *in, double *out) {
    int nd = s->out.ndim;
    long H = (long)s->shape[0].dim[nd - 2], W = (long)s->shape[0].dim[nd - 1];
    long OH = (long)s->out.dim[nd - 2], OW = (long)s->out.dim[nd - 1], P = numel(s->out) / (OH * OW), p, oh, ow;
    for (p = 0; p < P; p++)
        for (oh = 0; oh < OH; oh++)
            for (ow = 0; ow < OW; ow++) {
                long ih = pad_src(oh, s->ip[2], H, s->ip[4]), iw = pad_src(ow, s->ip[0], W, s->ip[4]);
                out[(p * OH + oh) * OW + ow] = (ih < 0 || iw < 0) ? 0.0 : in[0][(p * H + ih) * W + iw];
            }
}

/* ip: scale h, scale w, bilinear */
static nn_tensor b_up(nn_graph *g, const nn_tensor *in, const spec *s) {
    return nn_upsample2d(g, in[0], s->ip[0], s->ip[1], s->ip[2] ? NN_UPSAMPLE_BILINEAR : NN_UPSAMPLE_NEAREST);
}
static void bil(long o, int sc, long n, long *i0, long *i1, double *f) {
    double src = (o + 0.5) / sc - 0.5;
    if (src < 0) src = 0;
    *i0 = (long)src;
    if (*i0 > n - 1) *i0 = n - 1;
    *i1 = *i0 + 1 < n ? *i0 + 1 : n - 1;
    *f = src - (double)*i0;
}
static void r_up(const spec *s, double *const *in, double *out) {
    int nd = s->out.ndim;
    long H = (long)s->shape[0].dim[nd - 2], W = (long)s->shape[0].dim[nd - 1], OH = H * s->ip[0], OW = W * s->ip[1];
    long P = numel(s->shape[0]) / (H * W), p, oh, ow;
    for (p = 0; p < P; p++)
        for (oh = 0; oh < OH; oh++)
            for (ow = 0; ow < OW; ow++) {
                const double *x = in[0] + p * H * W;
                long h0 = oh / s->ip[0], h1 = h0, w0 = ow / s->ip[1], w1 = w0;
                double fh = 0, fw = 0;
                if (s->ip[2]) {
                    bil(oh, s->ip[0], H, &h0, &h1, &fh);
                    bil(ow, s->ip[1], W, &w0, &w1, &fw);
                }
                out[(p * OH + oh) * OW + ow] =
                    (1 - fh) * ((1 - fw) * x[h0 * W + w0] + fw * x[h0 * W + w1]) + fh * ((1 - fw) * x[h1 * W + w0] + fw * x[h1 * W + w1]);
            }
}

/* ip[0] = r */
static nn_tensor b_shuffle(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_pixel_shuffle(g, in[0], s->ip[0]); }
static void r_shuffle(const spec *s, double *const *in, double *out) {
    long N = (long)s->out.dim[0], C = (long)s->out.dim[1], OH = (long)s->out.dim[2], OW = (long)s->out.dim[3], r = s->ip[0];
    long H = OH / r, W = OW / r, n, c, oh, ow;
    for (n = 0; n < N; n++)
        for (c = 0; c < C; c++)
            for (oh = 0; oh < OH; oh++)
                for (ow = 0; ow < OW; ow++) { /* torch: out[n, c, h*r+i, w*r+j] = in[n, c*r*r + i*r + j, h, w] */
                    long ic = c * r * r + (oh % r) * r + ow % r;
                    out[((n * C + c) * OH + oh) * OW + ow] = in[0][((n * C * r * r + ic) * H + oh / r) * W + ow / r];
                }
}

static nn_tensor b_flatten(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_flatten(g, in[0]); }
static void r_copy(const spec *s, double *const *in, double *out) { memcpy(out, in[0], (size_t)numel(s->out) * sizeof(double)); }

/* ==== NaN and infinity propagation (the op checker's expected-value mode: PyTorch's
   NaN, +-inf and values; the rules in tests/op_check.c) ==== */

/* ---- copying ops: pad, upsample, concat, slice, permute, gather. The forward copies
   NaN and inf to where they go (nearest upsampling is a copy: no inf * 0), bilinear
   upsampling multiplies (PyTorch's formula, whose zero weights at the edges still meet
   their element); the backward carries an incoming NaN or inf back to its source ---- */

typedef struct np_shape { int kind, a, b, c, d, mode; } np_shape;
static nn_tensor b_shape(nn_graph *g, const nn_tensor *in, const spec *s_) {
    const np_shape *q = (const np_shape *)s_->arg;
    switch (q->kind) {
    case 0: return nn_pad2d(g, in[0], q->a, q->b, q->c, q->d, (nn_pad_mode)q->mode);
    case 1: return nn_upsample2d(g, in[0], q->a, q->b, (nn_upsample_mode)q->mode);
    case 2: return nn_concat(g, in, 2, q->a);
    case 3: return nn_slice(g, in[0], q->a, q->b, q->c);
    case 4: {
        int perm[3];
        perm[0] = q->a;
        perm[1] = q->b;
        perm[2] = q->c;
        return nn_permute(g, in[0], perm, 3);
    }
    default: return nn_gather_rows(g, in[0], in[1]);
    }
}

/* a copy y[o] = x[src[o]] (src -1: zero) and its gradient dx[i] = sum of w[o] over src[o] == i */
static void copy_ref(const long *src, long ny, const double *x, long nx, const double *w, double *y, double *dx) {
    long o;
    for (o = 0; o < nx; o++) dx[o] = 0;
    for (o = 0; o < ny; o++) {
        y[o] = src[o] < 0 ? 0 : x[src[o]];
        if (src[o] >= 0) dx[src[o]] += w[o];
    }
}

static void np_copy_case(const t_env *e, const char *name, const np_shape *q, nn_shape sx, const double *x, long nx,
                         const long *src, long ny, const double *w) {
    double y[512], dx[512];
    np_case c;
    copy_ref(src, ny, x, nx, w, y, dx);
    np_init(&c, name, b_shape, q);
    np_in(&c, sx, x, dx);
    c.y_expect = y;
    c.w = w;
    np_run(e, &c);
}

static long reflect(long i, long n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
    return i;
}

static void nanprop_shape(const t_env *e) {
    static np_shape pz, pr, un, ub, cc, sl, pm, ga;
    double x[64], x2[64], w[512];
    long src[512], o;
    int P = 2, H = 3, W = 4, OH, OW, p, i, j;
    np_fill(x, 64, -2, 2, 111);
    x[1 * 4 + 2] = NAN;
    x[2 * 4 + 0] = INFINITY;
    x[12 + 0] = -INFINITY;
    x[12 + 2 * 4 + 3] = NAN;
    /* pad (left 1, right 2, top 2, bottom 0), zeros and reflect; dy holds NaN on the
       padding (dropped) and inf on a copied element (passed) */
    for (p = 0; p < 2; p++) {
        np_shape *q = p ? &pr : &pz;
        char name[80];
        q->kind = 0;
        q->a = 1;
        q->b = 2;
        q->c = 2;
        q->d = 0;
        q->mode = p ? NN_PAD_REFLECT : NN_PAD_ZEROS;
        OH = H + 2;
        OW = W + 3;
        for (o = 0; o < P * OH * OW; o++) {
            long pl = o / (OH * OW), oh = o / OW % OH, ow = o % OW, ih = oh - 2, iw = ow - 1;
            if (p) {
                ih = reflect(ih, H);
                iw = reflect(iw, W);
            }
            src[o] = ih < 0 || ih >= H || iw < 0 || iw >= W ? -1 : (pl * H + ih) * W + iw;
            w[o] = 1;
        }
        w[0] = NAN;                      /* a padding element of plane 0 */
        w[OH * OW + 3 * OW + 2] = INFINITY; /* a copied element of plane 1 */
        snprintf(name, sizeof name, "pad2d %s, NaN and inf in dy", p ? "reflect" : "zeros");
        np_copy_case(e, name, q, nn_shape4(1, P, H, W), x, P * H * W, src, P * OH * OW, w);
    }
    /* nearest upsampling x2, x3: a copy */
    un.kind = 1;
    un.a = 2;
    un.b = 3;
    un.mode = NN_UPSAMPLE_NEAREST;
    OH = H * 2;
    OW = W * 3;
    for (o = 0; o < P * OH * OW; o++) {
        long pl = o / (OH * OW), oh = o / OW % OH, ow = o % OW;
        src[o] = (pl * H + oh / 2) * W + ow / 3;
        w[o] = 1;
    }
    w[5] = INFINITY;
    w[OH * OW + 7] = NAN;
    np_copy_case(e, "upsample2d nearest, NaN and inf in dy", &un, nn_shape4(1, P, H, W), x, P * H * W, src, P * OH * OW, w);
    /* bilinear x2: PyTorch's h0l * (w0l * x00 + w1l * x01) + h1l * (w0l * x10 + w1l * x11),
       and its backward, which adds the four terms one by one: a term of weight 0 still
       carries a NaN or inf dy to its pixel (0 * inf) */
    ub = un;
    ub.b = 2;
    ub.mode = NN_UPSAMPLE_BILINEAR;
    for (p = 0; p < 2; p++) {
        double y[512], dx[64];
        np_case c;
        OH = H * 2;
        OW = W * 2;
        for (o = 0; o < P * OH * OW; o++) w[o] = 1;
        if (p) {
            w[0] = INFINITY;               /* output (0, 0): weight 0 on its neighbours */
            w[OH * OW + 3 * OW + 5] = NAN; /* plane 1 */
        }
        for (i = 0; i < P * H * W; i++) dx[i] = 0;
        for (o = 0; o < P * OH * OW; o++) {
            long pl = o / (OH * OW), oh = o / OW % OH, ow = o % OW, h0, h1, w0, w1;
            double sh = (oh + 0.5) / 2 - 0.5, sw = (ow + 0.5) / 2 - 0.5, lh, lw;
            const double *xp = x + pl * H * W;
            double *dp = dx + pl * H * W;
            if (sh < 0) sh = 0;
            if (sw < 0) sw = 0;
            h0 = (long)sh;
            w0 = (long)sw;
            h1 = h0 + (h0 < H - 1);
            w1 = w0 + (w0 < W - 1);
            lh = sh - h0;
            lw = sw - w0;
            y[o] = (1 - lh) * ((1 - lw) * xp[h0 * W + w0] + lw * xp[h0 * W + w1]) + lh * ((1 - lw) * xp[h1 * W + w0] + lw * xp[h1 * W + w1]);
            dp[h0 * W + w0] += (1 - lh) * (1 - lw) * w[o];
            dp[h0 * W + w1] += (1 - lh) * lw * w[o];
            dp[h1 * W + w0] += lh * (1 - lw) * w[o];
            dp[h1 * W + w1] += lh * lw * w[o];
        }
        np_init(&c, p ? "upsample2d bilinear, NaN and inf in dy" : "upsample2d bilinear", b_shape, &ub);
        np_in(&c, nn_shape4(1, P, H, W), x, dx);
        c.y_expect = y;
        c.w = w;
        np_run(e, &c);
    }
    /* concat along dim 1 of [2, 3, 4] and [2, 2, 4] */
    np_fill(x2, 16, -2, 2, 112);
    x2[5] = NAN;
    x2[9] = -INFINITY;
    {
        double y[80], dx[24], dx2[16];
        np_case c;
        cc.kind = 2;
        cc.a = 1;
        for (o = 0; o < 40; o++) {
            long n = o / 20, r = o / 4 % 5, k = o % 4;
            y[o] = r < 3 ? x[(n * 3 + r) * 4 + k] : x2[(n * 2 + r - 3) * 4 + k];
            w[o] = 1;
        }
        w[7] = NAN;
        w[20 + 3 * 4 + 1] = INFINITY;
        for (o = 0; o < 24; o++) dx[o] = 1;
        for (o = 0; o < 16; o++) dx2[o] = 1;
        dx[7] = NAN;               /* x[0, 1, 3] */
        dx2[2 * 4 + 1] = INFINITY; /* x2[1, 0, 1] */
        np_init(&c, "concat [2, 3, 4] [2, 2, 4] dim 1, NaN and inf in dy", b_shape, &cc);
        np_in(&c, nn_shape3(2, 3, 4), x, dx);
        np_in(&c, nn_shape3(2, 2, 4), x2, dx2);
        c.y_expect = y;
        c.w = w;
        np_run(e, &c);
    }
    /* slice [2, 3, 4] dim 2, start 1, length 2 */
    sl.kind = 3;
    sl.a = 2;
    sl.b = 1;
    sl.c = 2;
    for (o = 0; o < 12; o++) {
        src[o] = o / 2 * 4 + 1 + o % 2;
        w[o] = 1;
    }
    w[3] = NAN;
    w[10] = -INFINITY;
    np_copy_case(e, "slice dim 2 [1, 3), NaN and inf in dy", &sl, nn_shape3(2, 3, 4), x, 24, src, 12, w);
    /* permute [2, 3, 4] -> [4, 2, 3] */
    pm.kind = 4;
    pm.a = 2;
    pm.b = 0;
    pm.c = 1;
    for (i = 0; i < 4; i++)
        for (j = 0; j < 6; j++) {
            src[i * 6 + j] = j * 4 + i; /* y[k, n, r] = x[n, r, k] */
            w[i * 6 + j] = 1;
        }
    w[4] = INFINITY;
    w[13] = NAN;
    np_copy_case(e, "permute (2, 0, 1), NaN and inf in dy", &pm, nn_shape3(2, 3, 4), x, 24, src, 24, w);
    /* gather rows of data [6, 4] by idx [5] (a row twice) */
    {
        static const double idx[5] = {1, 0, 5, 1, 3};
        double y[20], dx[24];
        np_case c;
        ga.kind = 5;
        for (o = 0; o < 20; o++) {
            src[o] = (long)idx[o / 4] * 4 + o % 4;
            w[o] = 1;
        }
        w[13] = NAN;     /* row 3 of y = data row 1 */
        w[9] = INFINITY; /* row 2 = data row 5 */
        copy_ref(src, 20, x, 24, w, y, dx);
        np_init(&c, "gather_rows, NaN and inf in dy", b_shape, &ga);
        np_in(&c, nn_shape2(6, 4), x, dx);
        np_in_i(&c, nn_shape1(5), idx);
        c.y_expect = y;
        c.w = w;
        np_run(e, &c);
    }
}

/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- structure ---- */

B(sh_reshape_count, nn_reshape(g, F(g, S2(2, 3)), S2(4, 2)))
B(sh_reshape_neg, nn_reshape(g, F(g, S2(2, 3)), S2(-1, 6)))
B(sh_reshape_zero, nn_reshape(g, F(g, S2(2, 3)), S2(0, 6)))
B(sh_reshape_wrap, nn_reshape(g, F(g, S2(2, 3)), S2((int64_t)1 << 32, (int64_t)1 << 32)))
static nn_tensor sh_permute(nn_graph *g, int which) {
    static const int rep[3] = {0, 1, 1}, out[3] = {0, 3, 1};
    nn_tensor x = F(g, S3(2, 3, 4));
    return nn_permute(g, x, which == 0 ? rep : which == 1 ? out : NULL, 3);
}
static nn_tensor sh_permute0(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_permute(g, 0); }
static nn_tensor sh_permute1(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_permute(g, 1); }
static nn_tensor sh_permute2(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_permute(g, 2); }
B(sh_transpose_axis, nn_transpose(g, F(g, S2(2, 3)), 0, 3))
static nn_tensor sh_concat(nn_graph *g, int which) {
    nn_tensor xs[65];
    int k;
    for (k = 0; k < 65; k++) xs[k] = F(g, S2(2, 3));
    switch (which) {
    case 0: return nn_concat(g, xs, 0, 0);
    case 1: return nn_concat(g, xs, 65, 0);
    case 2: xs[1] = F(g, S2(3, 4)); return nn_concat(g, xs, 2, 0);
    case 3: xs[1] = I(g, S2(2, 3)); return nn_concat(g, xs, 2, 0);
    case 4: return nn_concat(g, xs, 2, 2);
    case 5: return nn_concat(g, NULL, 2, 0);
    case 6: xs[1] = F(g, S3(2, 3, 1)); return nn_concat(g, xs, 2, 1);
    case 7: /* two of 2^30: the joined tensor would hold 2^31 elements */
        xs[0] = F(g, S1((int64_t)1 << 30));
        xs[1] = F(g, S1((int64_t)1 << 30));
        return nn_concat(g, xs, 2, 0);
    default: return T(-1);
    }
}
#define SHC(N) \
    static nn_tensor sh_concat##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_concat(g, N); }
SHC(0) SHC(1) SHC(2) SHC(3) SHC(4) SHC(5) SHC(6) SHC(7)
B(sh_slice_start, nn_slice(g, F(g, S2(4, 5)), 1, -1, 2))
B(sh_slice_len0, nn_slice(g, F(g, S2(4, 5)), 1, 0, 0))
B(sh_slice_past, nn_slice(g, F(g, S2(4, 5)), 0, 4, 1))
B(sh_slice_axis, nn_slice(g, F(g, S2(4, 5)), -3, 0, 1))
B(sh_slice_startmax, nn_slice(g, F(g, S2(4, 5)), 1, INT64_MAX, 1))
static nn_tensor sh_split(nn_graph *g, int which) {
    static const int64_t sum[2] = {2, 2}, neg[2] = {5, -1}, big[2] = {INT64_MAX, INT64_MAX};
    nn_tensor out[2];
    nn_split(g, F(g, S2(4, 5)), which == 0 ? sum : which == 1 ? neg : big, 2, 1, out);
    return NN_NONE;
}
static nn_tensor sh_split0(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_split(g, 0); }
static nn_tensor sh_split1(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_split(g, 1); }
static nn_tensor sh_split2(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_split(g, 2); }
static nn_tensor sh_split_null(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor out[2];
    (void)cd;
    nn_split(g, F(g, S2(4, 5)), NULL, 2, 1, out);
    return NN_NONE;
}
B(sh_pad_neg, nn_pad2d(g, F(g, S4(1, 1, 3, 3)), -1, 0, 0, 0, NN_PAD_ZEROS))
B(sh_pad_reflect, nn_pad2d(g, F(g, S4(1, 1, 3, 3)), 0, 0, 3, 0, NN_PAD_REFLECT))
B(sh_pad_rank, nn_pad2d(g, F(g, S1(5)), 1, 1, 0, 0, NN_PAD_ZEROS))
B(sh_pad_int, nn_pad2d(g, I(g, S4(1, 1, 3, 3)), 1, 1, 1, 1, NN_PAD_ZEROS))
B(sh_up_zero, nn_upsample2d(g, F(g, S4(1, 1, 3, 3)), 0, 2, NN_UPSAMPLE_NEAREST))
B(sh_up_big, nn_upsample2d(g, F(g, S4(1, 1, 3, 3)), 2, 65, NN_UPSAMPLE_BILINEAR))
B(sh_up_int, nn_upsample2d(g, I(g, S4(1, 1, 3, 3)), 2, 2, NN_UPSAMPLE_NEAREST))
B(sh_up_rank, nn_upsample2d(g, F(g, S1(5)), 2, 2, NN_UPSAMPLE_NEAREST))
B(sh_up_numel, nn_upsample2d(g, F(g, S4(1, 4, 8192, 8192)), 64, 64, NN_UPSAMPLE_NEAREST))
B(sh_shuffle_r0, nn_pixel_shuffle(g, F(g, S4(1, 4, 2, 2)), 0))
B(sh_shuffle_c, nn_pixel_shuffle(g, F(g, S4(1, 5, 2, 2)), 2))
B(sh_flatten_none, nn_flatten(g, NN_NONE))

/* ---- overflow ---- */

B(o_input_2p31, F(g, S1((int64_t)1 << 31)))
B(o_input_prod, F(g, S3(1 << 16, 1 << 16, 1)))
B(o_param_2p31, nn_prelu_layer(g, F(g, S2(2, 2)), (int64_t)1 << 31, NULL, "p"))

static const bad_row shape_bad[] = {
    {"shape", "reshape [2, 3] to [4, 2]", sh_reshape_count, R_SHAPE, "nn_reshape|[2, 3]|[4, 2]", 0},
    {"shape", "reshape to [-1, 6]", sh_reshape_neg, R_SHAPE, "nn_reshape|[-1, 6]", 0},
    {"shape", "reshape to [0, 6]", sh_reshape_zero, R_SHAPE, "nn_reshape|[0, 6]", 0},
    {"shape", "reshape to [2^32, 2^32]", sh_reshape_wrap, R_SHAPE, "nn_reshape|[4294967296, 4294967296]", 0},
    {"shape", "permute (0, 1, 1)", sh_permute0, R_INV, "nn_permute|[2, 3, 4]", 0},
    {"shape", "permute (0, 3, 1)", sh_permute1, R_INV, "nn_permute|[2, 3, 4]", 0},
    {"shape", "permute NULL", sh_permute2, R_INV, "nn_permute|NULL", 0},
    {"shape", "transpose axis 3 of [2, 3]", sh_transpose_axis, R_SHAPE, "nn_transpose|dim|[2, 3]", 0},
    {"shape", "concat of 0 tensors", sh_concat0, R_INV, "nn_concat|1 to 64", 0},
    {"shape", "concat of 65 tensors", sh_concat1, R_INV, "nn_concat|1 to 64", 0},
    {"shape", "concat [2, 3] and [3, 4] on axis 0", sh_concat2, R_SHAPE, "nn_concat|[2, 3]|[3, 4]", 0},
    {"shape", "concat float32 and int32", sh_concat3, R_SHAPE, "nn_concat|float32|int32", 0},
    {"shape", "concat on axis 2 of [2, 3]", sh_concat4, R_SHAPE, "nn_concat|dim|[2, 3]", 0},
    {"shape", "concat of NULL", sh_concat5, R_INV, "nn_concat", 0},
    {"shape", "concat [2, 3] and [2, 3, 1]", sh_concat6, R_SHAPE, "nn_concat|[2, 3]|[2, 3, 1]", 0},
    {"shape", "slice start -1", sh_slice_start, R_SHAPE, "nn_slice|start -1|[4, 5]", 0},
    {"shape", "slice length 0", sh_slice_len0, R_SHAPE, "nn_slice|length 0", 0},
    {"shape", "slice from the end", sh_slice_past, R_SHAPE, "nn_slice|start 4", 0},
    {"shape", "slice axis -3 of [4, 5]", sh_slice_axis, R_SHAPE, "nn_slice|dim|[4, 5]", 0},
    {"shape", "slice start INT64_MAX", sh_slice_startmax, R_SHAPE, "nn_slice|start 9223372036854775807", 0},
    {"shape", "split sizes 2 + 2 of 5", sh_split0, R_SHAPE, "nn_split|4|5", 0},
    {"shape", "split sizes 5 + -1", sh_split1, R_SHAPE, "nn_split|-1", 0},
    {"shape", "split sizes INT64_MAX + INT64_MAX", sh_split2, R_SHAPE, "nn_split|9223372036854775807", 0},
    {"shape", "split sizes NULL", sh_split_null, R_INV, "nn_split|sizes", 0},
    {"shape", "pad2d left -1", sh_pad_neg, R_SHAPE, "nn_pad2d|left -1", 0},
    {"shape", "pad2d reflect of 3 rows by 3", sh_pad_reflect, R_SHAPE, "nn_pad2d|top 3|reflection", 0},
    {"shape", "pad2d of [5]", sh_pad_rank, R_SHAPE, "nn_pad2d|[5]", 0},
    {"shape", "pad2d of int32", sh_pad_int, R_SHAPE, "nn_pad2d|int32", 0},
    {"shape", "upsample2d scale 0", sh_up_zero, R_INV, "nn_upsample2d|0, 2", 0},
    {"shape", "upsample2d scale 65", sh_up_big, R_INV, "nn_upsample2d|2, 65", 0},
    {"shape", "upsample2d of int32", sh_up_int, R_SHAPE, "nn_upsample2d|int32", 0},
    {"shape", "upsample2d of [5]", sh_up_rank, R_SHAPE, "nn_upsample2d|[5]", 0},
    {"shape", "pixel_shuffle r 0", sh_shuffle_r0, R_SHAPE, "nn_pixel_shuffle|r = 0", 0},
    {"shape", "pixel_shuffle of 5 channels by 2", sh_shuffle_c, R_SHAPE, "nn_pixel_shuffle|[1, 5, 2, 2]", 0},
    {"shape", "flatten NN_NONE", sh_flatten_none, R_INV, "nn_flatten|NN_NONE", 0},
    {"overflow", "nn_input [2^31]", o_input_2p31, R_SHAPE, "nn_input|[2147483648]", 0},
    {"overflow", "nn_input [2^16, 2^16, 1]", o_input_prod, R_SHAPE, "nn_input|[65536, 65536, 1]", 0},
    {"overflow", "concat of two [2^30]", sh_concat7, R_SHAPE, "concat|[2147483648]", 0},
    {"overflow", "upsample2d x64 of [1, 4, 8192, 8192]", sh_up_numel, R_SHAPE, "upsample2d|[1, 4, 524288, 524288]", 0},
    {"overflow", "prelu_layer of 2^31 slopes", o_param_2p31, R_SHAPE, "p.weight|[2147483648]", 0},
};

/* Slices and a concat above the CPU's threads threshold (nn__par_for): y = concat of
   x[:, 0:3], x[:, 5:7] (their gradient one CONCAT with zeros for [3, 5)), x2[:, 0::3] and
   x2[:, 2:5] (strided and overlapping: summed), [300, 11, 40]; y and the gradients of
   sum(y * w) are exact copies and sums of two, the same bits for 1..3 threads. */
static void slice_threads(const t_env *e) {
    enum { O = 300, L = 7, I = 40, NX = O * L * I, NY = O * 11 * I };
    static const int src[11][2] = {{0, 0}, {0, 1}, {0, 2}, {0, 5}, {0, 6}, {1, 0}, {1, 3}, {1, 6}, {1, 2}, {1, 3}, {1, 4}};
    static float xv[2][NX], wv[NY], yref[NY], dref[2][NX], got[NY];
    int threads, i, k, o, c;
    if (!t_begin_cpu(e, "shape: slices and concat over threads, exact copies for 1..3 threads", "thread counts are a CPU-backend setting"))
        return;
    for (i = 0; i < NX; i++) xv[0][i] = (float)(i % 977) * 0.25f - 100.0f, xv[1][i] = (float)(i % 613) * 0.5f + 1.0f;
    for (i = 0; i < NY; i++) wv[i] = (float)((i * 7) % 1009) * 0.125f + 0.5f;
    memset(dref, 0, sizeof dref);
    for (o = 0; o < O; o++)
        for (c = 0; c < 11; c++)
            for (i = 0; i < I; i++) {
                int xi = (o * L + src[c][1]) * I + i, yi = (o * 11 + c) * I + i;
                yref[yi] = xv[src[c][0]][xi];
                dref[src[c][0]][xi] += wv[yi];
            }
    for (threads = 1; threads <= 3; threads++) {
        nn_context_desc cdsc;
        nn_context *ctx = NULL;
        nn_graph *g = NULL;
        nn_compile_desc cd;
        nn_tensor x[2], w, y, p[4];
        memset(&cdsc, 0, sizeof cdsc);
        cdsc.device = "cpu";
        cdsc.threads = threads;
        cdsc.log_level = NN_LOG_WARN;
        if (!T_CHECK(nn_context_create(&cdsc, &ctx) == NN_OK, "cannot create a CPU context with %d threads", threads)) break;
        if (T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
            x[0] = nn_input(g, "x", NN_F32, nn_shape3(O, L, I));
            x[1] = nn_input(g, "x2", NN_F32, nn_shape3(O, L, I));
            w = nn_input(g, "w", NN_F32, nn_shape3(O, 11, I));
            nn_graph_requires_grad(g, x[0]);
            nn_graph_requires_grad(g, x[1]);
            p[0] = nn_slice(g, x[0], 1, 0, 3);
            p[1] = nn_slice(g, x[0], 1, 5, 2);
            p[2] = nn_slice_step(g, x[1], 1, 0, 3, 3);
            p[3] = nn_slice(g, x[1], 1, 2, 3);
            y = nn_concat(g, p, 4, 1);
            nn_graph_output(g, y);
            memset(&cd, 0, sizeof cd);
            cd.loss = nn_sum(g, nn_mul(g, y, w));
            if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_tensor_write(g, x[0], xv[0], sizeof xv[0]), ctx) &&
                T_OK(nn_tensor_write(g, x[1], xv[1], sizeof xv[1]), ctx) && T_OK(nn_tensor_write(g, w, wv, sizeof wv), ctx) &&
                T_OK(nn_graph_step(g), ctx) && T_OK(nn_tensor_read(g, y, got, sizeof got), ctx)) {
                for (i = 0; i < NY; i++)
                    if (!T_CHECK(memcmp(&got[i], &yref[i], 4) == 0, "%d threads: y[%d] = %.9g, not %.9g", threads, i, got[i], yref[i])) break;
                for (k = 0; k < 2; k++) {
                    if (!T_OK(nn_tensor_read(g, nn_graph_grad(g, x[k]), got, sizeof xv[0]), ctx)) break;
                    for (i = 0; i < NX; i++)
                        if (!T_CHECK(memcmp(&got[i], &dref[k][i], 4) == 0, "%d threads: d x%d [%d] = %.9g, not %.9g", threads, k, i,
                                     got[i], dref[k][i]))
                            break;
                }
            }
        }
        nn_graph_destroy(g);
        nn_context_destroy(ctx);
    }
    t_end();
}

void suite_shape(const t_env *e) {
    {
        spec s = mk("flatten [3, 2, 5, 7] -> [3, 70]", b_flatten, r_copy, nn_shape2(3, 70));
        in_f(&s, nn_shape4(3, 2, 5, 7));
        check_case(e, &s);
    }
    spec s;
    static const int p3[3] = {2, 0, 1}, p4[4] = {0, 2, 3, 1}, p5[5] = {4, 1, 3, 0, 2};
    static const struct { const int *perm; nn_shape shape; const char *name; } perms[] = {
        {p3, {3, {3, 7, 1, 0, 0, 0}}, "permute [3, 7, 1] (2, 0, 1)"},
        {p4, {4, {2, 3, 5, 7, 0, 0}}, "permute [2, 3, 5, 7] (0, 2, 3, 1)"},
        {p5, {5, {2, 1, 3, 4, 5, 0}}, "permute [2, 1, 3, 4, 5] (4, 1, 3, 0, 2)"},
    };
    static const int pads[][5] = {{0, 3, 1, 2, 0}, {2, 1, 2, 1, 1}, {3, 3, 0, 0, 1}, {1, 1, 1, 1, 0}, {2, 0, 0, 1, 0}};
    static const int ups[][3] = {{2, 2, 0}, {3, 1, 0}, {2, 2, 1}, {3, 2, 1}, {1, 4, 1}};
    int k, d;
    char name[128];
    for (k = 0; k < 3; k++) {
        nn_shape out = perms[k].shape;
        for (d = 0; d < out.ndim; d++) out.dim[d] = perms[k].shape.dim[perms[k].perm[d]];
        s = mk(perms[k].name, b_permute, r_permute, out);
        memcpy(s.ip, perms[k].perm, (size_t)out.ndim * sizeof(int));
        in_f(&s, perms[k].shape);
        check_case(e, &s);
    }
    s = mk("transpose [33, 7] (0, 1)", b_transpose, r_permute, nn_shape2(7, 33));
    s.ip[0] = 1;
    s.ip[1] = 0;
    s.ip[6] = 0;
    s.ip[7] = -1;
    in_f(&s, nn_shape2(33, 7));
    check_case(e, &s);
    s = mk("concat [2,3,5] [2,1,5] [2,4,5] axis 1", b_concat, r_concat, nn_shape3(2, 8, 5));
    s.ip[0] = 1;
    in_f(&s, nn_shape3(2, 3, 5));
    in_f(&s, nn_shape3(2, 1, 5));
    in_f(&s, nn_shape3(2, 4, 5));
    check_case(e, &s);
    s = mk("concat [1,3] [7,3] axis 0", b_concat, r_concat, nn_shape2(8, 3));
    in_f(&s, nn_shape2(1, 3));
    in_f(&s, nn_shape2(7, 3));
    check_case(e, &s);
    s = mk("slice [3, 33, 2] axis 1 [5, 12)", b_slice, r_slice, nn_shape3(3, 7, 2));
    s.ip[0] = 1;
    s.ip[1] = 5;
    in_f(&s, nn_shape3(3, 33, 2));
    check_case(e, &s);
    s = mk("slices [3, 10, 2] axis 1: disjoint, gaps, overlapping", b_slices, r_slices, nn_shape3(3, 8, 2));
    in_f(&s, nn_shape3(3, 10, 2));
    check_case(e, &s);
    s = mk("split [7, 3] last axis (1, 2), swapped", b_split_swap, r_split_swap, nn_shape2(7, 3));
    in_f(&s, nn_shape2(7, 3));
    check_case(e, &s);
    for (k = 0; k < 5; k++) {
        const int *p = pads[k];
        snprintf(name, sizeof name, "pad2d [2, 3, 5, 4] (%d, %d, %d, %d) %s", p[0], p[1], p[2], p[3], p[4] ? "reflect" : "zeros");
        s = mk(name, b_pad, r_pad, nn_shape4(2, 3, 5 + p[2] + p[3], 4 + p[0] + p[1]));
        memcpy(s.ip, p, 5 * sizeof(int));
        in_f(&s, nn_shape4(2, 3, 5, 4));
        check_case(e, &s);
    }
    for (k = 0; k < 5; k++) {
        const int *u = ups[k];
        snprintf(name, sizeof name, "upsample2d [1, 3, 5, 3] x(%d, %d) %s", u[0], u[1], u[2] ? "bilinear" : "nearest");
        s = mk(name, b_up, r_up, nn_shape4(1, 3, 5 * u[0], 3 * u[1]));
        memcpy(s.ip, u, 3 * sizeof(int));
        in_f(&s, nn_shape4(1, 3, 5, 3));
        check_case(e, &s);
    }
    s = mk("pixel_shuffle [2, 8, 3, 5] r=2", b_shuffle, r_shuffle, nn_shape4(2, 2, 6, 10));
    s.ip[0] = 2;
    in_f(&s, nn_shape4(2, 8, 3, 5));
    check_case(e, &s);
    nanprop_shape(e);
    slice_threads(e);
    t_bad_rows(e, shape_bad, (int)(sizeof shape_bad / sizeof shape_bad[0]));
}
