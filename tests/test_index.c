/* Shape and indexing ops through the op checker (tests/op_check.c): squeeze/unsqueeze,
   flip, repeat, strided slices, stack, a concat of many inputs, tril/triu, index_select,
   gather, scatter_add and one_hot (repeated indices included), and the constants arange
   and eye. The references are double-precision loops over coordinates written here. Then
   what the planner promises: a reshape is a view (no arena bytes, no launches; its source
   lives as long as the view), a concat of k inputs is one node, constants are made once
   at compile time; scatters' gradients are the same bits run to run; bad dims, shapes and
   index values fail naming the op and the shapes. */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* coordinates of linear index i in shape s, and back (with another shape's strides) */
static void coords(const nn_shape *s, long i, long *c) {
    int d;
    for (d = s->ndim - 1; d >= 0; d--) {
        c[d] = i % (long)s->dim[d];
        i /= (long)s->dim[d];
    }
}
static long lin(const nn_shape *s, const long *c) {
    long off = 0;
    int d;
    for (d = 0; d < s->ndim; d++) off = off * (long)s->dim[d] + c[d];
    return off;
}

/* ---- views: squeeze / unsqueeze (ip[0] dim, ip[1] 1: squeeze), and reshape chains ---- */
static nn_tensor b_squeeze(nn_graph *g, const nn_tensor *in, const spec *s) {
    return s->ip[1] ? nn_squeeze(g, in[0], s->ip[0]) : nn_unsqueeze(g, in[0], s->ip[0]);
}
static void r_copy(const spec *s, double *const *in, double *out) { memcpy(out, in[0], (size_t)numel(s->out) * sizeof(double)); }

/* a view whose source would be overwritten if it did not live as long as the view:
   out = reshape(flip(x)) + flip(flip(flip(x))) = 2 flip(x), flip along dim 0 */
static nn_tensor b_view_life(nn_graph *g, const nn_tensor *in, const spec *s) {
    int d0 = 0;
    nn_tensor a = nn_flip(g, in[0], &d0, 1);
    nn_tensor v = nn_reshape(g, nn_unsqueeze(g, a, 0), s->out);
    nn_tensor t = nn_flip(g, nn_flip(g, nn_flip(g, in[0], &d0, 1), &d0, 1), &d0, 1);
    return nn_add(g, v, t);
}
static void r_view_life(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, c[NN_MAX_DIMS];
    for (i = 0; i < n; i++) {
        coords(&s->out, i, c);
        c[0] = (long)s->out.dim[0] - 1 - c[0];
        out[i] = 2 * in[0][lin(&s->out, c)];
    }
}

/* ---- flip: ip[0] = n_dims, ip[1..] the dims ---- */
static nn_tensor b_flip(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_flip(g, in[0], s->ip + 1, s->ip[0]); }
static void r_flip(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, c[NN_MAX_DIMS];
    int k, nd = s->out.ndim;
    for (i = 0; i < n; i++) {
        coords(&s->out, i, c);
        for (k = 0; k < s->ip[0]; k++) {
            int d = s->ip[1 + k] < 0 ? s->ip[1 + k] + nd : s->ip[1 + k];
            c[d] = (long)s->out.dim[d] - 1 - c[d];
        }
        out[i] = in[0][lin(&s->out, c)];
    }
}

/* ---- repeat: ip[6] = n, ip[0..n) the repeats ---- */
static nn_tensor b_repeat(nn_graph *g, const nn_tensor *in, const spec *s) {
    int64_t r[NN_MAX_DIMS];
    int d;
    for (d = 0; d < s->ip[6]; d++) r[d] = s->ip[d];
    return nn_repeat(g, in[0], r, s->ip[6]);
}
static void r_repeat(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, c[NN_MAX_DIMS], xc[NN_MAX_DIMS];
    int d, pad = s->out.ndim - s->shape[0].ndim;
    for (i = 0; i < n; i++) {
        coords(&s->out, i, c);
        for (d = 0; d < s->shape[0].ndim; d++) xc[d] = c[d + pad] % (long)s->shape[0].dim[d];
        out[i] = in[0][lin(&s->shape[0], xc)];
    }
}

/* ---- strided slice: ip[0] axis, ip[1] start, ip[2] step; len = out's ---- */
static nn_tensor b_slice_step(nn_graph *g, const nn_tensor *in, const spec *s) {
    int ax = s->ip[0] < 0 ? s->ip[0] + s->out.ndim : s->ip[0];
    return nn_slice_step(g, in[0], s->ip[0], s->ip[1], s->out.dim[ax], s->ip[2]);
}
static void r_slice_step(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, c[NN_MAX_DIMS];
    int ax = s->ip[0] < 0 ? s->ip[0] + s->out.ndim : s->ip[0];
    for (i = 0; i < n; i++) {
        coords(&s->out, i, c);
        c[ax] = s->ip[1] + c[ax] * s->ip[2];
        out[i] = in[0][lin(&s->shape[0], c)];
    }
}

/* ---- stack of all inputs along ip[0] ---- */
static nn_tensor b_stack(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_stack(g, in, s->n_in, s->ip[0]); }
static void r_stack(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, c[NN_MAX_DIMS], xc[NN_MAX_DIMS];
    int dim = s->ip[0] < 0 ? s->ip[0] + s->out.ndim : s->ip[0], d;
    for (i = 0; i < n; i++) {
        coords(&s->out, i, c);
        for (d = 0; d < s->out.ndim - 1; d++) xc[d] = c[d < dim ? d : d + 1];
        out[i] = in[c[dim]][lin(&s->shape[0], xc)];
    }
}

/* ---- concat of ip[1] inputs, input j being in[j % n_in], along ip[0] ---- */
static nn_tensor b_concat_many(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor xs[64];
    int k;
    for (k = 0; k < s->ip[1]; k++) xs[k] = in[k % s->n_in];
    return nn_concat(g, xs, s->ip[1], s->ip[0]);
}
static void r_concat_many(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, c[NN_MAX_DIMS];
    int ax = s->ip[0] < 0 ? s->ip[0] + s->out.ndim : s->ip[0], k;
    for (i = 0; i < n; i++) {
        coords(&s->out, i, c);
        for (k = 0;; k++) { /* the input this index falls in */
            long len = (long)s->shape[k % s->n_in].dim[ax];
            if (c[ax] < len) break;
            c[ax] -= len;
        }
        out[i] = in[k % s->n_in][lin(&s->shape[k % s->n_in], c)];
    }
}

/* ---- tril / triu: ip[0] diagonal, ip[1] upper ---- */
static nn_tensor b_tril(nn_graph *g, const nn_tensor *in, const spec *s) {
    return s->ip[1] ? nn_triu(g, in[0], s->ip[0]) : nn_tril(g, in[0], s->ip[0]);
}
static void r_tril(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, c[NN_MAX_DIMS];
    int nd = s->out.ndim;
    for (i = 0; i < n; i++) {
        long diff;
        coords(&s->out, i, c);
        diff = c[nd - 1] - c[nd - 2];
        out[i] = (s->ip[1] ? diff >= s->ip[0] : diff <= s->ip[0]) ? in[0][i] : 0.0;
    }
}

/* ---- index_select (x, index) along ip[0]; fill: index[1] = index[0] (a repeat) ---- */
static nn_tensor b_index_select(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_index_select(g, in[0], s->ip[0], in[1]); }
static void r_index_select(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, c[NN_MAX_DIMS];
    int dim = s->ip[0] < 0 ? s->ip[0] + s->out.ndim : s->ip[0];
    for (i = 0; i < n; i++) {
        coords(&s->out, i, c);
        c[dim] = (long)in[1][c[dim]];
        out[i] = in[0][lin(&s->shape[0], c)];
    }
}
static void fill_repeat(const spec *s, double *const *in) {
    if (numel(s->shape[1]) > 1) in[1][1] = in[1][0];
}

/* ---- gather (x, index) and scatter_add (x, index, src) along ip[0] ---- */
static nn_tensor b_gather(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_gather(g, in[0], s->ip[0], in[1]); }
static void r_gather(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, c[NN_MAX_DIMS];
    int dim = s->ip[0] < 0 ? s->ip[0] + s->out.ndim : s->ip[0];
    for (i = 0; i < n; i++) {
        coords(&s->out, i, c);
        c[dim] = (long)in[1][i];
        out[i] = in[0][lin(&s->shape[0], c)];
    }
}
static nn_tensor b_scatter_add(nn_graph *g, const nn_tensor *in, const spec *s) {
    return nn_scatter_add(g, in[0], s->ip[0], in[1], in[2]);
}
static void r_scatter_add(const spec *s, double *const *in, double *out) {
    long n = numel(s->shape[1]), i, c[NN_MAX_DIMS], src;
    int dim = s->ip[0] < 0 ? s->ip[0] + s->out.ndim : s->ip[0];
    memcpy(out, in[0], (size_t)numel(s->out) * sizeof(double));
    for (i = 0; i < n; i++) {
        coords(&s->shape[1], i, c);
        src = lin(&s->shape[2], c);
        c[dim] = (long)in[1][i];
        out[lin(&s->out, c)] += in[2][src];
    }
}

/* ---- one_hot(labels, ip[0]) * x: x carries a gradient through it ---- */
static nn_tensor b_one_hot(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_mul(g, nn_one_hot(g, in[0], s->ip[0]), in[1]); }
static void r_one_hot(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, C = s->ip[0];
    for (i = 0; i < n; i++) out[i] = ((long)in[0][i / C] == i % C) ? in[1][i] : 0.0;
}

/* ---- constants: arange(fp[0], fp[1], fp[2]) * x, eye(ip[0], ip[1]) * x ---- */
static nn_tensor b_arange(nn_graph *g, const nn_tensor *in, const spec *s) {
    return nn_mul(g, nn_arange(g, s->fp[0], s->fp[1], s->fp[2]), in[0]);
}
static void r_arange(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i;
    for (i = 0; i < n; i++) out[i] = (double)(float)((double)s->fp[0] + (double)i * s->fp[2]) * in[0][i];
}
static nn_tensor b_eye(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_mul(g, nn_eye(g, s->ip[0], s->ip[1]), in[0]); }
static void r_eye(const spec *s, double *const *in, double *out) {
    long n = numel(s->out), i, m = (long)s->out.dim[1];
    for (i = 0; i < n; i++) out[i] = i / m == i % m ? in[0][i] : 0.0;
}

static void set_ip(spec *s, int n, const int *v) { memcpy(s->ip, v, (size_t)n * sizeof(int)); }

static void suite_index_ops(const t_env *e) {
    static const struct { nn_shape in; int dim, squeeze; nn_shape out; } sq[] = {
        {{1, {7, 0, 0, 0, 0, 0}}, 0, 0, {2, {1, 7, 0, 0, 0, 0}}},
        {{2, {3, 7, 0, 0, 0, 0}}, -1, 0, {3, {3, 7, 1, 0, 0, 0}}},
        {{4, {3, 1, 7, 2, 0, 0}}, 2, 0, {5, {3, 1, 1, 7, 2, 0}}},
        {{3, {3, 1, 7, 0, 0, 0}}, 1, 1, {2, {3, 7, 0, 0, 0, 0}}},
        {{5, {1, 3, 2, 5, 1, 0}}, -1, 1, {4, {1, 3, 2, 5, 0, 0}}},
        {{5, {1, 3, 2, 5, 1, 0}}, 0, 1, {4, {3, 2, 5, 1, 0, 0}}},
        {{2, {3, 7, 0, 0, 0, 0}}, 1, 1, {2, {3, 7, 0, 0, 0, 0}}}, /* not 1: unchanged */
    };
    static const struct { nn_shape x; int nd, dims[4]; } fl[] = {
        {{1, {127, 0, 0, 0, 0, 0}}, 1, {0}},
        {{2, {3, 33, 0, 0, 0, 0}}, 1, {-1}},
        {{3, {3, 7, 5, 0, 0, 0}}, 1, {1}},
        {{4, {2, 3, 1, 7, 0, 0}}, 3, {0, -1, 2}},
        {{5, {2, 3, 2, 5, 3, 0}}, 2, {-2, 1}},
    };
    static const struct { nn_shape x; int n, r[6]; } rp[] = {
        {{1, {7, 0, 0, 0, 0, 0}}, 1, {3}},
        {{1, {3, 0, 0, 0, 0, 0}}, 3, {2, 1, 3}},
        {{2, {3, 1, 0, 0, 0, 0}}, 2, {1, 33}},
        {{3, {2, 3, 1, 0, 0, 0}}, 5, {2, 1, 1, 3, 2}},
    };
    static const struct { nn_shape x; int axis, start, step; nn_shape out; } ss[] = {
        {{1, {33, 0, 0, 0, 0, 0}}, 0, 1, 4, {1, {8, 0, 0, 0, 0, 0}}},
        {{2, {3, 127, 0, 0, 0, 0}}, -1, 2, 5, {2, {3, 25, 0, 0, 0, 0}}},
        {{3, {7, 3, 2, 0, 0, 0}}, 0, 0, 3, {3, {3, 3, 2, 0, 0, 0}}},
        {{5, {2, 3, 7, 2, 3, 0}}, 2, 1, 2, {5, {2, 3, 3, 2, 3, 0}}},
        {{2, {5, 3, 0, 0, 0, 0}}, 0, 4, 7, {2, {1, 3, 0, 0, 0, 0}}},
    };
    spec s;
    int k, d;
    char name[160];
    for (k = 0; k < (int)(sizeof sq / sizeof sq[0]); k++) {
        snprintf(name, sizeof name, "%s rank %d dim %d", sq[k].squeeze ? "squeeze" : "unsqueeze", sq[k].in.ndim, sq[k].dim);
        s = mk(name, b_squeeze, r_copy, sq[k].out);
        s.ip[0] = sq[k].dim;
        s.ip[1] = sq[k].squeeze;
        in_f(&s, sq[k].in);
        check_case(e, &s);
    }
    s = mk("view: the source of a reshape lives as long as the view [7, 3]", b_view_life, r_view_life, nn_shape2(7, 3));
    in_f(&s, nn_shape2(7, 3));
    check_case(e, &s);
    for (k = 0; k < (int)(sizeof fl / sizeof fl[0]); k++) {
        snprintf(name, sizeof name, "flip rank %d, %d dims (first %d)", fl[k].x.ndim, fl[k].nd, fl[k].dims[0]);
        s = mk(name, b_flip, r_flip, fl[k].x);
        s.ip[0] = fl[k].nd;
        for (d = 0; d < fl[k].nd; d++) s.ip[1 + d] = fl[k].dims[d];
        in_f(&s, fl[k].x);
        check_case(e, &s);
    }
    for (k = 0; k < (int)(sizeof rp / sizeof rp[0]); k++) {
        nn_shape out;
        int pad = rp[k].n - rp[k].x.ndim;
        out.ndim = rp[k].n;
        memset(out.dim, 0, sizeof out.dim);
        for (d = 0; d < rp[k].n; d++) out.dim[d] = (d < pad ? 1 : rp[k].x.dim[d - pad]) * rp[k].r[d];
        snprintf(name, sizeof name, "repeat rank %d to %d dims", rp[k].x.ndim, rp[k].n);
        s = mk(name, b_repeat, r_repeat, out);
        set_ip(&s, rp[k].n, rp[k].r);
        s.ip[6] = rp[k].n;
        in_f(&s, rp[k].x);
        check_case(e, &s);
    }
    for (k = 0; k < (int)(sizeof ss / sizeof ss[0]); k++) {
        snprintf(name, sizeof name, "slice_step rank %d axis %d start %d step %d", ss[k].x.ndim, ss[k].axis, ss[k].start, ss[k].step);
        s = mk(name, b_slice_step, r_slice_step, ss[k].out);
        s.ip[0] = ss[k].axis;
        s.ip[1] = ss[k].start;
        s.ip[2] = ss[k].step;
        in_f(&s, ss[k].x);
        check_case(e, &s);
    }
    s = mk("stack 3 x [3, 7] dim 0", b_stack, r_stack, nn_shape3(3, 3, 7));
    for (k = 0; k < 3; k++) in_f(&s, nn_shape2(3, 7));
    check_case(e, &s);
    s = mk("stack 2 x [33] dim -1", b_stack, r_stack, nn_shape2(33, 2));
    s.ip[0] = -1;
    for (k = 0; k < 2; k++) in_f(&s, nn_shape1(33));
    check_case(e, &s);
    s = mk("stack 4 x [2, 1, 3, 5] dim 2 (rank 5)", b_stack, r_stack, nn_shape5(2, 1, 4, 3, 5));
    s.ip[0] = 2;
    for (k = 0; k < 4; k++) in_f(&s, nn_shape4(2, 1, 3, 5));
    check_case(e, &s);
    s = mk("concat of 9 ([3,2,5] [3,1,5] [3,4,5] thrice) axis 1", b_concat_many, r_concat_many, nn_shape3(3, 21, 5));
    s.ip[0] = 1;
    s.ip[1] = 9;
    in_f(&s, nn_shape3(3, 2, 5));
    in_f(&s, nn_shape3(3, 1, 5));
    in_f(&s, nn_shape3(3, 4, 5));
    check_case(e, &s);
    s = mk("concat of 37 ([1,3] [2,3]) axis 0 (groups of 16)", b_concat_many, r_concat_many, nn_shape2(55, 3));
    s.ip[1] = 37;
    in_f(&s, nn_shape2(1, 3));
    in_f(&s, nn_shape2(2, 3));
    check_case(e, &s);
    s = mk("concat of 4 rank 1 [1] [3] [7] [33] axis -1", b_concat_many, r_concat_many, nn_shape1(44));
    s.ip[0] = -1;
    s.ip[1] = 4;
    in_f(&s, nn_shape1(1));
    in_f(&s, nn_shape1(3));
    in_f(&s, nn_shape1(7));
    in_f(&s, nn_shape1(33));
    check_case(e, &s);
    {
        static const struct { nn_shape x; int diag, upper; } tr[] = {
            {{2, {7, 7, 0, 0, 0, 0}}, 0, 0}, {{3, {3, 5, 7, 0, 0, 0}}, -1, 0}, {{4, {2, 1, 3, 33, 0, 0}}, 2, 1},
            {{2, {7, 3, 0, 0, 0, 0}}, 0, 1}, {{2, {1, 1, 0, 0, 0, 0}}, -1, 1},
        };
        for (k = 0; k < (int)(sizeof tr / sizeof tr[0]); k++) {
            snprintf(name, sizeof name, "%s rank %d diagonal %d", tr[k].upper ? "triu" : "tril", tr[k].x.ndim, tr[k].diag);
            s = mk(name, b_tril, r_tril, tr[k].x);
            s.ip[0] = tr[k].diag;
            s.ip[1] = tr[k].upper;
            in_f(&s, tr[k].x);
            check_case(e, &s);
        }
    }
    {
        static const struct { nn_shape x; int dim, K; } is[] = {
            {{1, {7, 0, 0, 0, 0, 0}}, 0, 33}, {{2, {33, 3, 0, 0, 0, 0}}, 0, 7}, {{3, {3, 7, 5, 0, 0, 0}}, 1, 3},
            {{2, {3, 127, 0, 0, 0, 0}}, -1, 1}, {{5, {2, 3, 1, 7, 2, 0}}, -2, 9},
        };
        for (k = 0; k < (int)(sizeof is / sizeof is[0]); k++) {
            nn_shape out = is[k].x;
            int dim = is[k].dim < 0 ? is[k].dim + out.ndim : is[k].dim;
            out.dim[dim] = is[k].K;
            snprintf(name, sizeof name, "index_select rank %d dim %d, %d indices (repeated)", is[k].x.ndim, is[k].dim, is[k].K);
            s = mk(name, b_index_select, r_index_select, out);
            s.ip[0] = is[k].dim;
            s.fill = fill_repeat;
            in_f(&s, is[k].x);
            in_i(&s, nn_shape1(is[k].K), 0, (int)is[k].x.dim[dim]);
            check_case(e, &s);
        }
    }
    {
        static const struct { nn_shape x, idx; int dim; } ga[] = {
            {{1, {7, 0, 0, 0, 0, 0}}, {1, {33, 0, 0, 0, 0, 0}}, 0},
            {{2, {3, 7, 0, 0, 0, 0}}, {2, {3, 5, 0, 0, 0, 0}}, 1},
            {{2, {3, 7, 0, 0, 0, 0}}, {2, {9, 7, 0, 0, 0, 0}}, 0},
            {{3, {3, 7, 5, 0, 0, 0}}, {3, {2, 11, 4, 0, 0, 0}}, -2},
            {{5, {2, 3, 2, 5, 3, 0}}, {5, {2, 1, 2, 3, 7, 0}}, -1},
        };
        for (k = 0; k < (int)(sizeof ga / sizeof ga[0]); k++) {
            int dim = ga[k].dim < 0 ? ga[k].dim + ga[k].x.ndim : ga[k].dim;
            nn_shape src = ga[k].idx;
            snprintf(name, sizeof name, "gather rank %d dim %d", ga[k].x.ndim, ga[k].dim);
            s = mk(name, b_gather, r_gather, ga[k].idx);
            s.ip[0] = ga[k].dim;
            in_f(&s, ga[k].x);
            in_i(&s, ga[k].idx, 0, (int)ga[k].x.dim[dim]);
            check_case(e, &s);
            snprintf(name, sizeof name, "scatter_add rank %d dim %d", ga[k].x.ndim, ga[k].dim);
            s = mk(name, b_scatter_add, r_scatter_add, ga[k].x);
            s.ip[0] = ga[k].dim;
            in_f(&s, ga[k].x);
            in_i(&s, ga[k].idx, 0, (int)ga[k].x.dim[dim]);
            if (k == 1 || k == 3) src.dim[src.ndim - 1] += 2; /* src larger than the index: the rest unused */
            in_f(&s, src);
            check_case(e, &s);
        }
    }
    s = mk("one_hot [33] 7 classes", b_one_hot, r_one_hot, nn_shape2(33, 7));
    s.ip[0] = 7;
    in_i(&s, nn_shape1(33), 0, 7);
    in_f(&s, nn_shape2(33, 7));
    check_case(e, &s);
    s = mk("one_hot [2, 3, 1] 1 class", b_one_hot, r_one_hot, nn_shape4(2, 3, 1, 1));
    s.ip[0] = 1;
    in_i(&s, nn_shape3(2, 3, 1), 0, 1);
    in_f(&s, nn_shape4(2, 3, 1, 1));
    check_case(e, &s);
    s = mk("arange(-1.5, 2.3, 0.3) * x", b_arange, r_arange, nn_shape1(13));
    s.fp[0] = -1.5f;
    s.fp[1] = 2.3f;
    s.fp[2] = 0.3f;
    in_f(&s, nn_shape1(13));
    check_case(e, &s);
    s = mk("arange(5, -2, -1) * x", b_arange, r_arange, nn_shape1(7));
    s.fp[0] = 5;
    s.fp[1] = -2;
    s.fp[2] = -1;
    in_f(&s, nn_shape1(7));
    check_case(e, &s);
    s = mk("eye(3, 7) * x", b_eye, r_eye, nn_shape2(3, 7));
    s.ip[0] = 3;
    s.ip[1] = 7;
    in_f(&s, nn_shape2(3, 7));
    check_case(e, &s);
    s = mk("eye(7) * x", b_eye, r_eye, nn_shape2(7, 7));
    s.ip[0] = 7;
    in_f(&s, nn_shape2(7, 7));
    check_case(e, &s);
}

/* ---- what the planner promises ---- */

typedef struct arena_log { long long bytes; } arena_log;
static void arena_capture(void *user, nn_log_level level, const char *msg) {
    const char *p = strstr(msg, "arena ");
    (void)level;
    if (strncmp(msg, "compiled:", 9) == 0 && p) ((arena_log *)user)->bytes = atoll(p + 6);
}

/* x [64, 64] -> flip -> (reshapes, or not) -> flip -> out: the arena bytes and the launches
   of a step are the same with the reshapes as without them. */
static int view_graph(nn_context *ctx, int reshapes, arena_log *log, uint64_t *launches, float *out_first) {
    nn_graph *g = NULL;
    nn_tensor x, a, y;
    int d0 = 0, ok;
    float *v = (float *)calloc(64 * 64, sizeof(float)), *r = (float *)calloc(64 * 64, sizeof(float));
    long i;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(64, 64));
    a = nn_flip(g, x, &d0, 1);
    if (reshapes) a = nn_reshape(g, nn_squeeze(g, nn_unsqueeze(g, nn_reshape(g, a, nn_shape3(16, 4, 64)), 1), 1), nn_shape2(64, 64));
    y = nn_flip(g, a, &d0, 1);
    nn_graph_output(g, y);
    log->bytes = -1;
    ok = T_OK(nn_graph_compile(g, NULL), ctx);
    for (i = 0; i < 64 * 64; i++) v[i] = (float)i;
    if (ok) ok = T_OK(nn_tensor_write(g, x, v, 64 * 64 * 4), ctx);
    nn_context_reset_stats(ctx);
    if (ok) ok = T_OK(nn_graph_forward(g), ctx);
    *launches = t_stats(ctx).kernel_launches;
    if (ok) ok = T_OK(nn_tensor_read(g, y, r, 64 * 64 * 4), ctx);
    if (ok) ok = T_CHECK(memcmp(r, v, 64 * 64 * 4) == 0, "flip twice is not x (reshapes %d)", reshapes);
    *out_first = r[0];
    nn_graph_destroy(g);
    free(v);
    free(r);
    return ok;
}

static void suite_index_plan(const t_env *e) {
    nn_context_desc cd;
    nn_context *ctx = NULL;
    arena_log with, without;
    uint64_t l_with = 0, l_without = 0;
    float f;
    if (t_begin(e, "reshape/squeeze/unsqueeze are views: no arena bytes, no launches")) {
        t_context_desc(e, &cd);
        cd.log = arena_capture;
        cd.log_level = NN_LOG_DEBUG;
        cd.log_user = &with;
        if (T_OK(nn_context_create(&cd, &ctx), NULL)) {
            if (view_graph(ctx, 1, &with, &l_with, &f)) {
                nn_context_destroy(ctx);
                ctx = NULL;
                cd.log_user = &without;
                if (T_OK(nn_context_create(&cd, &ctx), NULL) && view_graph(ctx, 0, &without, &l_without, &f)) {
                    T_CHECK(with.bytes >= 0 && with.bytes == without.bytes, "arena %lld bytes with reshapes, %lld without",
                            with.bytes, without.bytes);
                    if (e->opencl) /* the CPU backend counts op runs, views included */
                        T_CHECK(l_with == l_without, "%llu launches with reshapes, %llu without", (unsigned long long)l_with,
                                (unsigned long long)l_without);
                }
            }
            nn_context_destroy(ctx);
        }
        t_end();
    }
    if (t_begin(e, "reshape of a parameter: the step's value, not the update's")) {
        nn_graph *g = NULL;
        nn_tensor p, y, loss;
        nn_compile_desc c;
        nn_init init;
        float v[6], after[6];
        int i;
        memset(&init, 0, sizeof init);
        init.kind = NN_INIT_CONSTANT;
        init.a = 1.5f;
        if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
            p = nn_param(g, "p", nn_shape2(2, 3), init);
            y = nn_reshape(g, p, nn_shape2(3, 2));
            nn_graph_output(g, y);
            loss = nn_sum(g, nn_mul(g, y, y));
            memset(&c, 0, sizeof c);
            c.loss = loss;
            c.optimizer.kind = NN_OPT_SGD;
            c.optimizer.lr = 0.1f;
            if (T_OK(nn_graph_compile(g, &c), e->ctx) && T_OK(nn_graph_step(g), e->ctx) && T_OK(nn_tensor_read(g, y, v, sizeof v), e->ctx) &&
                T_OK(nn_tensor_read(g, p, after, sizeof after), e->ctx))
                for (i = 0; i < 6; i++) {
                    T_CHECK(v[i] == 1.5f, "y[%d] = %g, not the step's 1.5", i, v[i]);
                    T_CHECK(fabsf(after[i] - (1.5f - 0.1f * 3.0f)) < 1e-6f, "p[%d] = %g after the update", i, after[i]);
                }
            nn_graph_destroy(g);
        }
        t_end();
    }
    if (t_begin(e, "concat of k inputs is one node; constants are made at compile time")) {
        nn_graph *g = NULL;
        int op, concat = -1, constant = -1;
        uint64_t c0 = 0, k0 = 0;
        for (op = 0; op < nn_op_count(); op++) {
            if (strcmp(nn_op_name(op), "concat") == 0) concat = op;
            if (strcmp(nn_op_name(op), "constant") == 0) constant = op;
        }
        T_CHECK(concat >= 0 && constant >= 0, "no concat or constant op in the registry");
        if (concat >= 0 && constant >= 0 && T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
            nn_tensor xs[16], y, ar, ey;
            float v[16 * 3], r[16 * 3], a[5], ee[6];
            int k;
            for (k = 0; k < 16; k++) {
                char nm[16];
                snprintf(nm, sizeof nm, "x%d", k);
                xs[k] = nn_input(g, nm, NN_F32, nn_shape2(1, 3));
            }
            y = nn_concat(g, xs, 16, 0);
            ar = nn_arange(g, 0, 5, 1);
            ey = nn_eye(g, 2, 3);
            nn_graph_output(g, y);
            nn_graph_output(g, ar);
            nn_graph_output(g, ey);
            c0 = t_op_compiled(e->ctx, concat);
            k0 = t_op_compiled(e->ctx, constant);
            if (T_OK(nn_graph_compile(g, NULL), e->ctx)) {
                T_CHECK(t_op_compiled(e->ctx, concat) - c0 == 1, "concat of 16 compiled into %llu nodes",
                        (unsigned long long)(t_op_compiled(e->ctx, concat) - c0));
                T_CHECK(t_op_compiled(e->ctx, constant) - k0 == 2, "%llu constants compiled",
                        (unsigned long long)(t_op_compiled(e->ctx, constant) - k0));
                /* before any run: the constants are there already */
                if (T_OK(nn_tensor_read(g, ar, a, sizeof a), e->ctx))
                    for (k = 0; k < 5; k++) T_CHECK(a[k] == (float)k, "arange[%d] = %g before any run", k, a[k]);
                if (T_OK(nn_tensor_read(g, ey, ee, sizeof ee), e->ctx))
                    for (k = 0; k < 6; k++) T_CHECK(ee[k] == (k == 0 || k == 4 ? 1.0f : 0.0f), "eye[%d] = %g", k, ee[k]);
                for (k = 0; k < 16 * 3; k++) v[k] = (float)k;
                for (k = 0; k < 16; k++) T_OK(nn_tensor_write(g, xs[k], v + 3 * k, 12), e->ctx);
                nn_context_reset_stats(e->ctx);
                if (T_OK(nn_graph_forward(g), e->ctx) && T_OK(nn_tensor_read(g, y, r, sizeof r), e->ctx)) {
                    T_CHECK(memcmp(r, v, sizeof r) == 0, "concat of 16 rows is not the rows");
                    if (e->opencl) /* one launch per input, none for the constants */
                        T_CHECK(t_stats(e->ctx).kernel_launches == 16, "%llu launches for a concat of 16",
                                (unsigned long long)t_stats(e->ctx).kernel_launches);
                }
            }
            nn_graph_destroy(g);
        }
        t_end();
    }
}

/* Gradients through repeated indices: two steps give the same bits. */
static void suite_index_determinism(const t_env *e) {
    nn_graph *g = NULL;
    nn_tensor x, idx, src, i1, y, loss;
    nn_compile_desc c;
    float xv[33 * 7], sv[127 * 7], gx[2][33 * 7], gs[2][127 * 7];
    int32_t iv[127 * 7], i1v[127];
    int k, run;
    if (!t_begin(e, "scatter_add, gather, index_select: repeated indices, the same bits run to run")) return;
    t_seed(99);
    for (k = 0; k < 33 * 7; k++) xv[k] = (float)t_uniform(-1, 1);
    for (k = 0; k < 127 * 7; k++) {
        sv[k] = (float)t_uniform(-1, 1) * 1000.0f; /* large and mixed: the sum order shows */
        iv[k] = t_randint(3) ? t_randint(4) : t_randint(33);
    }
    for (k = 0; k < 127; k++) i1v[k] = t_randint(5);
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        x = nn_input(g, "x", NN_F32, nn_shape2(33, 7));
        idx = nn_input(g, "idx", NN_I32, nn_shape2(127, 7));
        src = nn_input(g, "src", NN_F32, nn_shape2(127, 7));
        i1 = nn_input(g, "i1", NN_I32, nn_shape1(127));
        nn_graph_requires_grad(g, x);
        nn_graph_requires_grad(g, src);
        y = nn_scatter_add(g, nn_index_select(g, x, 0, i1), 0, idx, nn_gather(g, nn_scatter_add(g, x, 0, idx, src), 0, idx));
        loss = nn_sum(g, nn_mul(g, y, y));
        memset(&c, 0, sizeof c);
        c.loss = loss;
        if (T_OK(nn_graph_compile(g, &c), e->ctx) && T_OK(nn_tensor_write(g, x, xv, sizeof xv), e->ctx) &&
            T_OK(nn_tensor_write(g, idx, iv, sizeof iv), e->ctx) && T_OK(nn_tensor_write(g, src, sv, sizeof sv), e->ctx) &&
            T_OK(nn_tensor_write(g, i1, i1v, sizeof i1v), e->ctx)) {
            for (run = 0; run < 2; run++)
                if (!T_OK(nn_graph_step(g), e->ctx) || !T_OK(nn_tensor_read(g, nn_graph_grad(g, x), gx[run], sizeof gx[run]), e->ctx) ||
                    !T_OK(nn_tensor_read(g, nn_graph_grad(g, src), gs[run], sizeof gs[run]), e->ctx))
                    break;
            if (run == 2) {
                T_CHECK(memcmp(gx[0], gx[1], sizeof gx[0]) == 0, "d/dx differs between two runs");
                T_CHECK(memcmp(gs[0], gs[1], sizeof gs[0]) == 0, "d/dsrc differs between two runs");
            }
        }
        nn_graph_destroy(g);
    }
    t_end();
}

/* Bad dims, shapes and index values fail naming the op and the shapes. */
static void suite_index_errors(const t_env *e) {
    static const struct { int what; nn_result code; const char *needle; } cases[] = {
        {0, NN_ERR_SHAPE, "nn_squeeze: dim out of range for x [3, 7]"},
        {1, NN_ERR_SHAPE, "nn_unsqueeze: dim 3 out of range [-3, 2] for x [3, 7]"},
        {2, NN_ERR_INVALID_ARGUMENT, "nn_flip: dim -2 appears twice for x [3, 7]"},
        {3, NN_ERR_INVALID_ARGUMENT, "nn_repeat: 1 repeats for x [3, 7]"},
        {4, NN_ERR_SHAPE, "nn_slice_step: start 1, length 4, step 2 is outside dim 1 of x [3, 7]"},
        {5, NN_ERR_SHAPE, "nn_stack: tensor 0 [3, 7] and tensor 1 [3, 1]"},
        {6, NN_ERR_SHAPE, "nn_index_select: index [2, 2] must have one dim (x [3, 7], dim 0)"},
        {7, NN_ERR_SHAPE, "nn_gather: index [4, 7] does not fit x [3, 7] along dim 1"},
        {8, NN_ERR_SHAPE, "nn_scatter_add: index [3, 7] does not fit x [3, 7] and src [3, 1] along dim 0"},
        {9, NN_ERR_SHAPE, "nn_gather: dim 2 out of range [-2, 1] for x [3, 7]"},
        {10, NN_ERR_SHAPE, "nn_gather: index [3, 7] must be int32, not float32 (x [3, 7])"},
        {11, NN_ERR_SHAPE, "nn_one_hot: labels [3, 7] float32 with 4 classes"},
        {12, NN_ERR_INVALID_ARGUMENT, "nn_arange: start 0, end 1, step -1 give"},
        {13, NN_ERR_SHAPE, "nn_concat: tensor 0 [3, 7] float32 and tensor 1 [3, 1] float32 differ outside dim 0"},
        {14, NN_ERR_SHAPE, "nn_tril: x [7] needs at least 2 dims"},
        {15, NN_ERR_SHAPE, "nn_eye: n 0, m 3"},
    };
    size_t k;
    if (t_begin(e, "index and shape ops: bad dims and shapes name the op and shapes")) {
        for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            nn_graph *g = NULL;
            nn_tensor x, w, l = {0}, two[2];
            int dd[2] = {0, -2};
            int64_t reps[1] = {2};
            if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) break;
            x = nn_input(g, "x", NN_F32, nn_shape2(3, 7));
            w = nn_input(g, "w", NN_F32, nn_shape2(3, 1));
            two[0] = x;
            two[1] = w;
            switch (cases[k].what) {
            case 0: l = nn_squeeze(g, x, 2); break;
            case 1: l = nn_unsqueeze(g, x, 3); break;
            case 2: l = nn_flip(g, x, dd, 2); break;
            case 3: l = nn_repeat(g, x, reps, 1); break;
            case 4: l = nn_slice_step(g, x, 1, 1, 4, 2); break;
            case 5: l = nn_stack(g, two, 2, 0); break;
            case 6: l = nn_index_select(g, x, 0, nn_input(g, "i", NN_I32, nn_shape2(2, 2))); break;
            case 7: l = nn_gather(g, x, 1, nn_input(g, "i", NN_I32, nn_shape2(4, 7))); break;
            case 8: l = nn_scatter_add(g, x, 0, nn_input(g, "i", NN_I32, nn_shape2(3, 7)), w); break;
            case 9: l = nn_gather(g, x, 2, nn_input(g, "i", NN_I32, nn_shape2(3, 7))); break;
            case 10: l = nn_gather(g, x, 1, nn_input(g, "i", NN_F32, nn_shape2(3, 7))); break;
            case 11: l = nn_one_hot(g, x, 4); break;
            case 12: l = nn_arange(g, 0, 1, -1); break;
            case 13: l = nn_concat(g, two, 2, 0); break;
            case 14: l = nn_tril(g, nn_input(g, "v", NN_F32, nn_shape1(7)), 0); break;
            default: l = nn_eye(g, 0, 3); break;
            }
            T_CHECK(l.id < 0 && nn_graph_status(g) == cases[k].code, "case %d: status %d", (int)k, (int)nn_graph_status(g));
            T_CHECK(strstr(nn_context_last_error(e->ctx), cases[k].needle) != NULL, "case %d: message \"%s\"", (int)k, nn_context_last_error(e->ctx));
            nn_graph_destroy(g);
        }
        t_end();
    }
    if (t_begin(e, "index values out of range are counted and reported, naming the op")) {
        static const char *const needles[4] = {"nn_index_select: index values outside", "nn_gather: index values outside",
                                               "nn_scatter_add: index values outside", "nn_one_hot: labels outside"};
        int which;
        for (which = 0; which < 4; which++) {
            nn_graph *g = NULL;
            nn_tensor x, i1, i2, y;
            float xv[21], out[21 * 5];
            int32_t iv1[3] = {0, 3, 2}, iv2[21];
            int k;
            nn_result r;
            if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) break;
            x = nn_input(g, "x", NN_F32, nn_shape2(3, 7));
            i1 = nn_input(g, "i1", NN_I32, nn_shape1(3));
            i2 = nn_input(g, "i2", NN_I32, nn_shape2(3, 7));
            y = which == 0 ? nn_index_select(g, x, 0, i1)
                : which == 1 ? nn_gather(g, x, 1, i2)
                : which == 2 ? nn_scatter_add(g, x, 1, i2, x)
                             : nn_one_hot(g, i2, 5);
            nn_graph_output(g, y);
            for (k = 0; k < 21; k++) {
                xv[k] = (float)k;
                iv2[k] = k == 4 || k == 9 ? (k == 4 ? -1 : 7) : k % 5;
            }
            if (T_OK(nn_graph_compile(g, NULL), e->ctx) && (which == 3 || T_OK(nn_tensor_write(g, x, xv, sizeof xv), e->ctx)) &&
                (which != 0 || T_OK(nn_tensor_write(g, i1, iv1, sizeof iv1), e->ctx)) &&
                (which == 0 || T_OK(nn_tensor_write(g, i2, iv2, sizeof iv2), e->ctx)) && T_OK(nn_graph_forward(g), e->ctx)) {
                r = nn_tensor_read(g, y, out, (size_t)t_numel(g, y) * 4);
                T_CHECK(r == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(e->ctx), needles[which]) &&
                            strstr(nn_context_last_error(e->ctx), which == 0 ? "1 of them" : "2 of them"),
                        "op %d: %d, \"%s\"", which, (int)r, nn_context_last_error(e->ctx));
                T_OK(nn_tensor_read(g, y, out, (size_t)t_numel(g, y) * 4), e->ctx); /* reported once */
            }
            nn_graph_destroy(g);
        }
        t_end();
    }
}

/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- gather ---- */

B(ga_float_idx, nn_gather_rows(g, F(g, S2(5, 3)), F(g, S1(2))))
B(ga_idx_rank, nn_gather_rows(g, F(g, S2(5, 3)), I(g, S2(2, 2))))
B(ga_none, nn_gather_rows(g, NN_NONE, I(g, S1(2))))

static const bad_row index_bad[] = {
    {"gather", "gather_rows float idx", ga_float_idx, R_SHAPE, "nn_gather_rows|[2] float32", 0},
    {"gather", "gather_rows idx [2, 2]", ga_idx_rank, R_SHAPE, "nn_gather_rows|[2, 2]", 0},
    {"gather", "gather_rows data NN_NONE", ga_none, R_INV, "nn_gather_rows|NN_NONE", 0},
};

/* ---- gather_rows through the op checker ---- */

static nn_tensor b_gather_rows(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_gather_rows(g, in[0], in[1]); }
static void r_gather_rows(const spec *s, double *const *in, double *out) {
    long N = s->shape[0].dim[0], D = numel(s->shape[0]) / N, B = s->shape[1].dim[0], b, j;
    for (b = 0; b < B; b++) {
        long r = (long)in[1][b];
        for (j = 0; j < D; j++) out[b * D + j] = (r >= 0 && r < N) ? in[0][r * D + j] : 0.0;
    }
}

static void gather_rows_cases(const t_env *e) {
    spec s = mk("gather_rows [33, 7] by [129]", b_gather_rows, r_gather_rows, nn_shape2(129, 7));
    in_f(&s, nn_shape2(33, 7));
    in_i(&s, nn_shape1(129), -2, 35); /* some out of range: zero rows */
    check_case(e, &s);
    /* 66 KB gathered: the CPU backend splits the rows between its threads (nn__gather_rows_pool) */
    s = mk("gather_rows [300, 131] by [127] (rows split between threads)", b_gather_rows, r_gather_rows, nn_shape2(127, 131));
    s.dirs = 1; /* directional derivatives: one dense random direction per input */
    in_f(&s, nn_shape2(300, 131));
    in_i(&s, nn_shape1(127), -3, 303);
    check_case(e, &s);
    s = mk("gather_rows [3, 2, 5] by [1]", b_gather_rows, r_gather_rows, nn_shape3(1, 2, 5));
    in_f(&s, nn_shape3(3, 2, 5));
    in_i(&s, nn_shape1(1), 0, 3);
    check_case(e, &s);
}

void suite_index(const t_env *e) {
    T_RUN(e, suite_index_ops, suite_index_plan, suite_index_determinism, suite_index_errors);
    t_bad_rows(e, index_bad, (int)(sizeof index_bad / sizeof index_bad[0]));
    gather_rows_cases(e);
}
