/* Shape and structure ops through the op checker: permute/transpose, concat, slice and
   split, 2-D padding (zeros, reflection), upsampling (nearest, bilinear), pixel shuffle. */
#include "test.h"
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

void suite_shape(const t_env *e) {
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
}
