/* Reductions along dims through the op checker (a double-precision reference written
   here, finite-difference gradients, CPU vs OpenCL parity): sum, mean, prod, amax, amin,
   max/min along a dim, var, std, logsumexp, p-norms and cumsum, at odd shapes, ranks 1 to
   5, first, last, middle, several and all dims, keepdim on and off, negative dims. Then
   what finite differences cannot judge: ties and NaN (max, amax, argmax), the int32
   indices, sums of 4096 against double, determinism (two runs, 1 or 2 CPU threads), and
   bad dims. */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { T_SUM, T_MEAN, T_PROD, T_AMAX, T_AMIN, T_MAX, T_MIN, T_VAR, T_STD, T_LSE, T_NORM, T_CUMSUM };
static const char *const t_names[] = {"sum_dim", "mean_dim", "prod_dim", "amax", "amin", "max_dim",
                                      "min_dim", "var_dim", "std_dim", "logsumexp", "norm_dim", "cumsum"};

/* spec.ip: [0] the op, [1] keepdim, [2] n_dims, [3..7] dims; fp[0] p, fp[1] correction */

static void mask_of(const nn_shape *xs, int n_dims, const int *dims, int *mask) {
    int d;
    for (d = 0; d < xs->ndim; d++) mask[d] = n_dims == 0;
    if (xs->ndim == 0) return; /* a scalar: dims {0} or {-1} name no dim to reduce */
    for (d = 0; d < n_dims; d++) mask[dims[d] < 0 ? dims[d] + xs->ndim : dims[d]] = 1;
}

static nn_shape out_shape(const nn_shape *xs, int n_dims, const int *dims, int keepdim) {
    nn_shape o;
    int mask[NN_MAX_DIMS], d;
    mask_of(xs, n_dims, dims, mask);
    memset(&o, 0, sizeof o);
    for (d = 0; d < xs->ndim; d++) {
        if (keepdim) o.dim[o.ndim++] = mask[d] ? 1 : xs->dim[d];
        else if (!mask[d]) o.dim[o.ndim++] = xs->dim[d];
    }
    if (o.ndim == 0 && xs->ndim > 0) { /* every dim reduced: [1]; a rank-0 x stays rank 0 */
        o.ndim = 1;
        o.dim[0] = 1;
    }
    return o;
}

/* For each element of x (row-major), the output element it reduces into; returns R. */
static long out_index(const nn_shape *xs, const int *mask, long *oi) {
    long n = numel(*xs), i, R = 1;
    int d;
    for (d = 0; d < xs->ndim; d++) if (mask[d]) R *= (long)xs->dim[d];
    for (i = 0; i < n; i++) {
        long r = i, o = 0, mul = 1;
        for (d = xs->ndim - 1; d >= 0; d--) {
            long c = r % (long)xs->dim[d];
            r /= (long)xs->dim[d];
            if (!mask[d]) {
                o += c * mul;
                mul *= (long)xs->dim[d];
            }
        }
        oi[i] = o;
    }
    return R;
}

/* the reduction of v[0 .. R-1] (x's order) in double */
static double ref_row(int op, const double *v, long R, double p, double corr, long *arg) {
    double s = 0, m, c;
    long r, best = 0;
    switch (op) {
    case T_SUM: case T_MEAN:
        for (r = 0; r < R; r++) s += v[r];
        return op == T_MEAN ? s / (double)R : s;
    case T_PROD:
        s = 1;
        for (r = 0; r < R; r++) s *= v[r];
        return s;
    case T_AMAX: case T_MAX: case T_AMIN: case T_MIN:
        for (r = 1; r < R; r++) {
            if (isnan(v[best])) break;
            if (isnan(v[r]) || ((op == T_AMAX || op == T_MAX) ? v[r] > v[best] : v[r] < v[best])) best = r;
        }
        if (arg) *arg = best;
        return v[best];
    case T_VAR: case T_STD:
        for (r = 0; r < R; r++) s += v[r];
        m = s / (double)R;
        s = 0;
        for (r = 0; r < R; r++) s += (v[r] - m) * (v[r] - m);
        c = (double)R - corr;
        s /= c > 0 ? c : 0;
        return op == T_STD ? sqrt(s) : s;
    case T_LSE:
        m = v[0];
        for (r = 1; r < R; r++) m = v[r] > m ? v[r] : m;
        for (r = 0; r < R; r++) s += exp(v[r] - m);
        return m + log(s);
    default: /* T_NORM */
        if (isinf(p)) {
            for (r = 0; r < R; r++) s = fabs(v[r]) > s ? fabs(v[r]) : s;
            return s;
        }
        for (r = 0; r < R; r++) s += p == 0 ? (v[r] != 0) : pow(fabs(v[r]), p);
        return p == 0 ? s : pow(s, 1 / p);
    }
}

static void r_reduce(const spec *s, double *const *in, double *out) {
    int mask[NN_MAX_DIMS];
    long n = numel(s->shape[0]), no, R, i, k, *oi = (long *)malloc((size_t)n * sizeof(long)), *fill;
    double *vals = (double *)malloc((size_t)n * sizeof(double));
    mask_of(&s->shape[0], s->ip[2], s->ip + 3, mask);
    R = out_index(&s->shape[0], mask, oi);
    no = n / R;
    fill = (long *)calloc((size_t)no, sizeof(long));
    for (i = 0; i < n; i++) vals[oi[i] * R + fill[oi[i]]++] = in[0][i];
    for (k = 0; k < no; k++) out[k] = ref_row(s->ip[0], vals + k * R, R, s->fp[0], s->fp[1], NULL);
    free(oi);
    free(vals);
    free(fill);
}

static void r_cumsum(const spec *s, double *const *in, double *out) {
    const nn_shape *xs = &s->shape[0];
    int d = s->ip[3] < 0 ? s->ip[3] + xs->ndim : s->ip[3], k;
    long O = 1, R = (long)xs->dim[d], I = 1, o, r, i;
    for (k = 0; k < d; k++) O *= (long)xs->dim[k];
    for (k = d + 1; k < xs->ndim; k++) I *= (long)xs->dim[k];
    for (o = 0; o < O; o++)
        for (i = 0; i < I; i++) {
            double acc = 0;
            for (r = 0; r < R; r++) {
                acc += in[0][(o * R + r) * I + i];
                out[(o * R + r) * I + i] = acc;
            }
        }
}

static nn_tensor b_reduce(nn_graph *g, const nn_tensor *in, const spec *s) {
    const int *dims = s->ip + 3;
    int nd = s->ip[2], k = s->ip[1];
    switch (s->ip[0]) {
    case T_SUM: return nn_sum_dim(g, in[0], dims, nd, k);
    case T_MEAN: return nn_mean_dim(g, in[0], dims, nd, k);
    case T_PROD: return nn_prod_dim(g, in[0], dims[0], k);
    case T_AMAX: return nn_amax_dim(g, in[0], dims, nd, k);
    case T_AMIN: return nn_amin_dim(g, in[0], dims, nd, k);
    case T_MAX: return nn_max_dim(g, in[0], dims[0], k, NULL);
    case T_MIN: return nn_min_dim(g, in[0], dims[0], k, NULL);
    case T_VAR: return nn_var_dim(g, in[0], dims, nd, (int)s->fp[1], k);
    case T_STD: return nn_std_dim(g, in[0], dims, nd, (int)s->fp[1], k);
    case T_LSE: return nn_logsumexp_dim(g, in[0], dims, nd, k);
    case T_NORM: return nn_norm_dim(g, in[0], s->fp[0], dims, nd, k);
    default: return nn_cumsum(g, in[0], dims[0]);
    }
}

/* prod: some rows get one zero, some two (the gradient's three cases) */
static void fill_zeros(const spec *s, double *const *in) {
    long n = numel(s->shape[0]), i;
    for (i = 0; i < n; i += 5) in[0][i] = 0.0;
}

typedef struct rcase {
    int op, ndim;
    long dim[5];
    int n_dims, dims[5], keepdim;
    float p;  /* norm's p; var and std's correction */
    int zeros; /* prod: zeros in x */
} rcase;

#define INF_P 1e30f /* in the table: p = INFINITY */

static const rcase cases[] = {
    {T_SUM, 1, {127}, 0, {0}, 0, 0, 0},
    {T_SUM, 1, {127}, 1, {0}, 1, 0, 0},
    {T_SUM, 1, {1}, 1, {-1}, 0, 0, 0},
    {T_SUM, 2, {7, 33}, 1, {1}, 0, 0, 0},
    {T_SUM, 2, {7, 33}, 1, {0}, 0, 0, 0},
    {T_SUM, 2, {7, 33}, 1, {-1}, 1, 0, 0},
    {T_SUM, 2, {33, 127}, 1, {1}, 0, 0, 0},
    {T_SUM, 2, {127, 33}, 1, {-2}, 1, 0, 0},
    {T_SUM, 3, {3, 7, 33}, 1, {1}, 0, 0, 0},
    {T_SUM, 3, {3, 7, 33}, 2, {0, 2}, 1, 0, 0},
    {T_SUM, 3, {3, 7, 33}, 2, {-1, -3}, 0, 0, 0},
    {T_SUM, 3, {3, 7, 33}, 2, {2, 1}, 0, 0, 0},
    {T_SUM, 4, {3, 1, 7, 33}, 2, {0, 2}, 0, 0, 0},
    {T_SUM, 5, {3, 7, 1, 3, 5}, 3, {1, 3, 4}, 1, 0, 0},
    {T_SUM, 5, {3, 7, 1, 3, 5}, 0, {0}, 1, 0, 0},
    {T_SUM, 5, {3, 1, 7, 3, 5}, 5, {0, 1, 2, 3, 4}, 0, 0, 0},
    {T_MEAN, 2, {7, 33}, 1, {1}, 0, 0, 0},
    {T_MEAN, 3, {3, 7, 33}, 2, {0, 2}, 1, 0, 0},
    {T_MEAN, 1, {127}, 0, {0}, 0, 0, 0},
    {T_MEAN, 5, {3, 7, 3, 1, 5}, 2, {-1, -2}, 0, 0, 0},
    {T_PROD, 2, {7, 33}, 1, {1}, 0, 0, 0},
    {T_PROD, 3, {3, 7, 5}, 1, {0}, 1, 0, 0},
    {T_PROD, 2, {33, 7}, 1, {-2}, 0, 0, 0},
    {T_PROD, 2, {7, 33}, 1, {1}, 0, 0, 1},
    {T_PROD, 3, {7, 3, 5}, 1, {1}, 1, 0, 1},
    {T_AMAX, 2, {7, 33}, 1, {1}, 0, 0, 0},
    {T_AMAX, 3, {3, 7, 33}, 2, {0, 2}, 1, 0, 0},
    {T_AMAX, 1, {127}, 0, {0}, 0, 0, 0},
    {T_AMAX, 2, {33, 127}, 1, {1}, 0, 0, 0},
    {T_AMIN, 2, {7, 33}, 1, {0}, 0, 0, 0},
    {T_AMIN, 5, {3, 7, 1, 3, 5}, 2, {1, 3}, 1, 0, 0},
    {T_AMIN, 2, {33, 127}, 1, {-1}, 1, 0, 0},
    {T_MAX, 2, {7, 33}, 1, {1}, 0, 0, 0},
    {T_MAX, 2, {33, 7}, 1, {0}, 1, 0, 0},
    {T_MAX, 3, {3, 7, 33}, 1, {-2}, 0, 0, 0},
    {T_MAX, 2, {7, 127}, 1, {1}, 0, 0, 0},
    {T_MIN, 5, {3, 1, 7, 3, 5}, 1, {4}, 0, 0, 0},
    {T_MIN, 2, {7, 127}, 1, {-1}, 1, 0, 0},
    {T_VAR, 2, {7, 33}, 1, {1}, 0, 1, 0},
    {T_VAR, 3, {3, 7, 33}, 2, {0, 2}, 1, 0, 0},
    {T_VAR, 1, {127}, 0, {0}, 0, 1, 0},
    {T_VAR, 2, {7, 127}, 1, {1}, 0, 1, 0},
    {T_STD, 3, {3, 5, 7}, 1, {-1}, 0, 2, 0},
    {T_STD, 2, {33, 7}, 1, {0}, 1, 1, 0},
    {T_STD, 2, {7, 127}, 1, {1}, 0, 0, 0},
    {T_LSE, 2, {7, 33}, 1, {1}, 0, 0, 0},
    {T_LSE, 2, {33, 127}, 1, {1}, 1, 0, 0},
    {T_LSE, 3, {3, 7, 33}, 2, {0, 2}, 0, 0, 0},
    {T_LSE, 1, {127}, 0, {0}, 0, 0, 0},
    {T_NORM, 2, {7, 33}, 1, {1}, 0, 2, 0},
    {T_NORM, 2, {7, 127}, 1, {1}, 1, 2, 0},
    {T_NORM, 3, {3, 7, 33}, 2, {0, 2}, 0, 1, 0},
    {T_NORM, 2, {33, 7}, 1, {0}, 0, INF_P, 0},
    {T_NORM, 2, {7, 127}, 1, {-1}, 0, INF_P, 0},
    {T_NORM, 2, {7, 33}, 1, {-1}, 1, 3, 0},
    {T_NORM, 1, {127}, 0, {0}, 0, 0.5f, 0},
    {T_NORM, 2, {7, 33}, 1, {1}, 0, 0, 0},
    {T_SUM, 0, {0}, 0, {0}, 0, 0, 0}, /* rank 0: dims {}, {0} or {-1}, the value itself */
    {T_SUM, 0, {0}, 1, {-1}, 1, 0, 0},
    {T_MEAN, 0, {0}, 1, {0}, 0, 0, 0},
    {T_PROD, 0, {0}, 0, {0}, 0, 0, 0},
    {T_AMAX, 0, {0}, 1, {0}, 0, 0, 0},
    {T_MIN, 0, {0}, 1, {0}, 1, 0, 0},
    {T_LSE, 0, {0}, 1, {-1}, 0, 0, 0},
    {T_NORM, 0, {0}, 0, {0}, 0, 2, 0},
    {T_CUMSUM, 1, {127}, 1, {0}, 0, 0, 0},
    {T_CUMSUM, 2, {7, 33}, 1, {1}, 0, 0, 0},
    {T_CUMSUM, 2, {7, 33}, 1, {0}, 0, 0, 0},
    {T_CUMSUM, 3, {3, 7, 5}, 1, {-2}, 0, 0, 0},
    {T_CUMSUM, 5, {3, 1, 7, 3, 5}, 1, {2}, 0, 0, 0},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static nn_shape shape_of(int ndim, const long *dim) {
    nn_shape s;
    int d;
    memset(&s, 0, sizeof s);
    s.ndim = ndim;
    for (d = 0; d < ndim; d++) s.dim[d] = dim[d];
    return s;
}

static void check_ops(const t_env *e) {
    static char names[N_CASES][160];
    int c, d;
    for (c = 0; c < N_CASES; c++) {
        const rcase *rc = &cases[c];
        nn_shape xs = shape_of(rc->ndim, rc->dim);
        spec s;
        int len;
        len = snprintf(names[c], sizeof names[c], "%s [", t_names[rc->op]);
        for (d = 0; d < rc->ndim; d++) len += snprintf(names[c] + len, sizeof names[c] - (size_t)len, d ? ", %ld" : "%ld", rc->dim[d]);
        len += snprintf(names[c] + len, sizeof names[c] - (size_t)len, "] dims {");
        for (d = 0; d < rc->n_dims; d++) len += snprintf(names[c] + len, sizeof names[c] - (size_t)len, d ? ", %d" : "%d", rc->dims[d]);
        len += snprintf(names[c] + len, sizeof names[c] - (size_t)len, "}%s", rc->keepdim ? " keepdim" : "");
        if (rc->op == T_NORM) snprintf(names[c] + len, sizeof names[c] - (size_t)len, " p=%g", rc->p == INF_P ? INFINITY : rc->p);
        if (rc->op == T_VAR || rc->op == T_STD) snprintf(names[c] + len, sizeof names[c] - (size_t)len, " correction=%g", rc->p);
        if (rc->zeros) snprintf(names[c] + len, sizeof names[c] - (size_t)len, " with zeros");
        s = mk(names[c], b_reduce, rc->op == T_CUMSUM ? r_cumsum : r_reduce,
               rc->op == T_CUMSUM ? xs : out_shape(&xs, rc->n_dims, rc->dims, rc->keepdim));
        in_f(&s, xs);
        s.ip[0] = rc->op;
        s.ip[1] = rc->keepdim;
        s.ip[2] = rc->n_dims;
        for (d = 0; d < rc->n_dims; d++) s.ip[3 + d] = rc->dims[d];
        s.fp[0] = rc->op == T_NORM ? (rc->p == INF_P ? INFINITY : rc->p) : 0.0f;
        s.fp[1] = rc->op == T_VAR || rc->op == T_STD ? rc->p : 0.0f;
        if (rc->op == T_PROD) { /* |x| near 1: products of 33 stay in range */
            s.lo = 0.6;
            s.hi = 1.5;
        }
        if (rc->zeros) s.fill = fill_zeros;
        check_case(e, &s);
    }
}

/* ---- what finite differences cannot judge ---- */

/* Builds y = f(x) with x [rows, cols] written from xv, loss sum(y * 1) (when y is float),
   runs a step; reads y (float or int32 into yv) and dx (when dxv). 0 on failure. */
typedef nn_tensor (*one_fn)(nn_graph *g, nn_tensor x, void *arg);
static int run_one(const t_env *e, nn_context *ctx, nn_shape xs, const float *xv, one_fn f, void *arg, void *yv,
                   size_t ybytes, float *dxv) {
    nn_graph *g = NULL;
    nn_tensor x, y, loss = {0};
    nn_compile_desc cd;
    int ok = 0;
    (void)e;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, xs);
    if (dxv) nn_graph_requires_grad(g, x);
    y = f(g, x, arg);
    nn_graph_output(g, y);
    if (dxv) loss = nn_sum(g, y);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (t_survey_graph(g)) goto done; /* NN_TEST_SURVEY: compiled, not run */
    if (!T_OK(nn_tensor_write(g, x, xv, (size_t)numel(xs) * 4), ctx)) goto done;
    if (!T_OK(dxv ? nn_graph_step(g) : nn_graph_forward(g), ctx)) goto done;
    if (!T_OK(nn_tensor_read(g, y, yv, ybytes), ctx)) goto done;
    if (dxv && !T_OK(nn_tensor_read(g, nn_graph_grad(g, x), dxv, (size_t)numel(xs) * 4), ctx)) goto done;
    ok = 1;
done:
    nn_graph_destroy(g);
    return ok;
}

static nn_tensor f_amax1(nn_graph *g, nn_tensor x, void *arg) { int d = 1; (void)arg; return nn_amax_dim(g, x, &d, 1, 0); }
static nn_tensor f_amin1(nn_graph *g, nn_tensor x, void *arg) { int d = -1; (void)arg; return nn_amin_dim(g, x, &d, 1, 0); }
static nn_tensor f_max1(nn_graph *g, nn_tensor x, void *arg) { (void)arg; return nn_max_dim(g, x, 1, 0, NULL); }
static nn_tensor f_min1(nn_graph *g, nn_tensor x, void *arg) { (void)arg; return nn_min_dim(g, x, 1, 0, NULL); }
static nn_tensor f_norminf1(nn_graph *g, nn_tensor x, void *arg) { int d = 1; (void)arg; return nn_norm_dim(g, x, INFINITY, &d, 1, 0); }
static nn_tensor f_max_idx(nn_graph *g, nn_tensor x, void *arg) {
    nn_tensor idx;
    nn_max_dim(g, x, *(int *)arg, 0, &idx);
    return idx;
}
static nn_tensor f_min_idx(nn_graph *g, nn_tensor x, void *arg) {
    nn_tensor idx;
    nn_min_dim(g, x, *(int *)arg, 0, &idx);
    return idx;
}
static nn_tensor f_argmax(nn_graph *g, nn_tensor x, void *arg) { return nn_argmax_dim(g, x, *(int *)arg, 0); }
static nn_tensor f_argmin(nn_graph *g, nn_tensor x, void *arg) { return nn_argmin_dim(g, x, *(int *)arg, 1); }

/* Rows of 7 with ties (and one with a NaN): amax/amin split the gradient evenly among the
   ties, max/min give it to the first, the max norm splits it with x's sign; NaN rows give
   NaN. Rows longer than 32 too (GPU tuning: a work-group per row). */
static void test_ties(const t_env *e) {
    int cols[2] = {7, 100}, ci;
    if (!t_begin(e, "reduce: ties and NaN in amax, amin, max, min, max norm (values and gradients)")) return;
    for (ci = 0; ci < 2; ci++) {
        int C = cols[ci], R = 4, r, c, k;
        float x[4 * 100], y[4], dx[4 * 100];
        for (k = 0; k < R * C; k++) x[k] = (float)((k * 37) % 5) - 2.0f; /* values -2..2, many ties */
        x[3 * C + 1] = NAN;
        for (k = 0; k < 5; k++) {
            one_fn f = k == 0 ? f_amax1 : k == 1 ? f_amin1 : k == 2 ? f_max1 : k == 3 ? f_min1 : f_norminf1;
            const char *nm = k == 0 ? "amax" : k == 1 ? "amin" : k == 2 ? "max_dim" : k == 3 ? "min_dim" : "norm inf";
            if (!run_one(e, e->ctx, nn_shape2(R, C), x, f, NULL, y, sizeof y, dx)) continue;
            for (r = 0; r < R; r++) {
                const float *xr = x + r * C;
                int want_max = k == 0 || k == 2 || k == 4, cnt = 0, first = -1;
                float best = k == 4 ? 0.0f : xr[0];
                if (r == 3 && k != 4) {
                    T_CHECK(isnan(y[r]), "%s C=%d row with a NaN gave %g", nm, C, y[r]);
                    continue;
                }
                if (r == 3) continue; /* the max norm of a NaN row: NaN too, not checked */
                for (c = 0; c < C; c++) {
                    float v = k == 4 ? fabsf(xr[c]) : xr[c];
                    if (want_max ? v > best : v < best) best = v;
                }
                for (c = 0; c < C; c++)
                    if ((k == 4 ? fabsf(xr[c]) : xr[c]) == best) {
                        cnt++;
                        if (first < 0) first = c;
                    }
                T_CHECK(y[r] == best, "%s C=%d row %d: %g, expected %g", nm, C, r, y[r], best);
                for (c = 0; c < C; c++) {
                    float v = k == 4 ? fabsf(xr[c]) : xr[c], want;
                    if (k == 2 || k == 3) want = c == first ? 1.0f : 0.0f;
                    else want = v == best ? (k == 4 ? (xr[c] > 0 ? 1.0f : -1.0f) : 1.0f) / (float)cnt : 0.0f;
                    if (!T_CHECK(fabsf(dx[r * C + c] - want) <= 1e-6f, "%s C=%d row %d col %d: gradient %g, expected %g (%d ties)",
                                 nm, C, r, c, dx[r * C + c], want, cnt))
                        break;
                }
            }
        }
    }
    t_end();
}

/* argmax/argmin (and max/min's indices) at odd shapes along each dim, with ties and a NaN,
   against the reference exactly. */
static void test_indices(const t_env *e) {
    static const long shapes[][5] = {{127, 0, 0, 0, 0}, {7, 33, 0, 0, 0}, {33, 127, 0, 0, 0}, {3, 7, 1, 5, 0}, {3, 1, 7, 3, 5}};
    static const int ranks[] = {1, 2, 2, 4, 5};
    int si, k;
    /* a reference check of the op kinds the op checker cannot check (no gradient) */
    if (!t_begin_op(e, "reduce: argmax, argmin and max/min indices (first of ties, NaN as the max) at odd shapes")) return;
    t_seed(77);
    for (si = 0; si < 5; si++) {
        nn_shape xs = shape_of(ranks[si], shapes[si]);
        long n = numel(xs), i;
        float *x = (float *)malloc((size_t)n * 4);
        int32_t *got = (int32_t *)malloc((size_t)n * 4);
        double *xd = (double *)malloc((size_t)n * 8);
        int dim;
        for (i = 0; i < n; i++) x[i] = (float)t_randint(4); /* small ints: ties everywhere */
        if (n > 10) x[n / 3] = NAN;
        for (i = 0; i < n; i++) xd[i] = x[i];
        for (dim = -1; dim < xs.ndim; dim++) {
            int d = dim < 0 ? xs.ndim - 1 : dim, mask[NN_MAX_DIMS], md = d;
            long *oi = (long *)malloc((size_t)n * sizeof(long)), *fill, R, no, o;
            double *vals = (double *)malloc((size_t)n * 8);
            mask_of(&xs, 1, &md, mask);
            R = out_index(&xs, mask, oi);
            no = n / R;
            fill = (long *)calloc((size_t)no, sizeof(long));
            for (i = 0; i < n; i++) vals[oi[i] * R + fill[oi[i]]++] = xd[i];
            for (k = 0; k < 4; k++) {
                one_fn f = k == 0 ? f_argmax : k == 1 ? f_argmin : k == 2 ? f_max_idx : f_min_idx;
                int dd = dim;
                if (!run_one(e, e->ctx, xs, x, f, &dd, got, (size_t)no * 4, NULL)) continue;
                for (o = 0; o < no; o++) {
                    long want;
                    ref_row(k == 0 || k == 2 ? T_MAX : T_MIN, vals + o * R, R, 0, 0, &want);
                    if (!T_CHECK(got[o] == want, "%s shape %ld.. rank %d dim %d: output %ld is %d, expected %ld",
                                 k == 0 ? "argmax_dim" : k == 1 ? "argmin_dim" : k == 2 ? "max_dim indices" : "min_dim indices",
                                 (long)xs.dim[0], xs.ndim, dim, o, got[o], want))
                        break;
                }
            }
            free(oi);
            free(vals);
            free(fill);
        }
        free(x);
        free(got);
        free(xd);
    }
    t_end();
}

static nn_tensor f_sum_last(nn_graph *g, nn_tensor x, void *arg) { int d = -1; (void)arg; return nn_sum_dim(g, x, &d, 1, 0); }
static nn_tensor f_sum_first(nn_graph *g, nn_tensor x, void *arg) { int d = 0; (void)arg; return nn_sum_dim(g, x, &d, 1, 0); }
static nn_tensor f_sum_all(nn_graph *g, nn_tensor x, void *arg) { (void)arg; return nn_sum_dim(g, x, NULL, 0, 0); }
static nn_tensor f_var_last(nn_graph *g, nn_tensor x, void *arg) { int d = -1; (void)arg; return nn_var_dim(g, x, &d, 1, 1, 0); }

/* Sums of 4096 (x in (0, 1)) along the last and the first axis against double: 1e-5
   relative on every backend. */
static void test_sum_accuracy(const t_env *e) {
    long rows = 64, cols = 4096, n = rows * cols, i, j;
    float *x, y[4096];
    double ref[4096], got[4096], err;
    if (!t_begin(e, "reduce: sums of 4096 along the last and first axis within 1e-5 of double")) return;
    x = (float *)malloc((size_t)n * 4);
    t_seed(4096);
    for (i = 0; i < n; i++) x[i] = (float)t_uniform(0, 1);
    if (run_one(e, e->ctx, nn_shape2(cols, rows), x, f_sum_first, NULL, y, (size_t)rows * 4, NULL)) {
        for (j = 0; j < rows; j++) {
            ref[j] = 0;
            for (i = 0; i < cols; i++) ref[j] += x[i * rows + j];
            got[j] = y[j];
        }
        err = t_relerr(got, ref, rows);
        T_CHECK(err <= 1e-5, "sum over the first axis of [4096, 64]: relative error %.3g > 1e-5", err);
    }
    if (run_one(e, e->ctx, nn_shape2(rows, cols), x, f_sum_last, NULL, y, (size_t)rows * 4, NULL)) {
        for (j = 0; j < rows; j++) {
            ref[j] = 0;
            for (i = 0; i < cols; i++) ref[j] += x[j * cols + i];
            got[j] = y[j];
        }
        err = t_relerr(got, ref, rows);
        T_CHECK(err <= 1e-5, "sum over the last axis of [64, 4096]: relative error %.3g > 1e-5", err);
    }
    free(x);
    t_end();
}

/* Large reductions (the CPU's threaded and vectorised paths: few long rows, many rows, an
   outer axis; the device's work-group trees) twice: the same bits; on the CPU with 1 and
   2 threads too. */
static void test_determinism(const t_env *e) {
    static const long shapes[][2] = {{3, 300001}, {1000, 1000}, {4097, 129}, {1, 1 << 20}};
    int si, k;
    nn_context *one = NULL;
    if (!t_begin(e, "reduce: the same bits run to run (and for 1 or 2 CPU threads)")) return;
    if (!e->opencl) {
        nn_context_desc d;
        t_context_desc(e, &d);
        d.threads = 1;
        T_OK(nn_context_create(&d, &one), one);
    }
    t_seed(99);
    for (si = 0; si < 4; si++) {
        long n = shapes[si][0] * shapes[si][1], i, no = shapes[si][0] > shapes[si][1] ? shapes[si][0] : shapes[si][1];
        float *x = (float *)malloc((size_t)n * 4), *a = (float *)malloc((size_t)no * 4), *b = (float *)malloc((size_t)no * 4);
        float *c = (float *)malloc((size_t)no * 4);
        for (i = 0; i < n; i++) x[i] = (float)t_uniform(-1, 1);
        for (k = 0; k < 4; k++) {
            one_fn f = k == 0 ? f_sum_last : k == 1 ? f_sum_first : k == 2 ? f_sum_all : f_var_last;
            long m = k == 0 || k == 3 ? shapes[si][0] : k == 1 ? shapes[si][1] : 1;
            nn_shape xs = nn_shape2(shapes[si][0], shapes[si][1]);
            if (!run_one(e, e->ctx, xs, x, f, NULL, a, (size_t)m * 4, NULL) ||
                !run_one(e, e->ctx, xs, x, f, NULL, b, (size_t)m * 4, NULL))
                continue;
            T_CHECK(memcmp(a, b, (size_t)m * 4) == 0, "[%ld, %ld] reduction %d: two runs differ", shapes[si][0],
                    shapes[si][1], k);
            if (one && run_one(e, one, xs, x, f, NULL, c, (size_t)m * 4, NULL))
                T_CHECK(memcmp(a, c, (size_t)m * 4) == 0, "[%ld, %ld] reduction %d: 1 thread and the default differ",
                        shapes[si][0], shapes[si][1], k);
        }
        free(x);
        free(a);
        free(b);
        free(c);
    }
    nn_context_destroy(one);
    t_end();
}

/* dims out of range or repeated, a bad correction or p: errors naming the op and x's shape */
static void test_bad_dims(const t_env *e) {
    nn_context *ctx = e->ctx;
    int k;
    if (!t_begin(e, "reduce: dims out of range or repeated are errors naming the op and shape")) return;
    for (k = 0; k < 7; k++) {
        nn_graph *g = NULL;
        nn_tensor x, y;
        int bad_range[2] = {0, 3}, rep[2] = {1, -2};
        const char *want = "";
        if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) break;
        x = nn_input(g, "x", NN_F32, nn_shape3(2, 7, 33));
        switch (k) {
        case 0: y = nn_sum_dim(g, x, bad_range, 2, 0); want = "nn_sum_dim"; break;
        case 1: y = nn_amax_dim(g, x, rep, 2, 1); want = "nn_amax_dim"; break;
        case 2: y = nn_argmax_dim(g, x, -4, 0); want = "nn_argmax_dim"; break;
        case 3: y = nn_cumsum(g, x, 3); want = "nn_cumsum"; break;
        case 4: y = nn_var_dim(g, x, rep, 1, -1, 0); want = "nn_var_dim"; break;
        case 5: y = nn_norm_dim(g, x, -1.0f, rep, 1, 0); want = "nn_norm_dim"; break;
        default: y = nn_mean_dim(g, x, NULL, 2, 0); want = "nn_mean_dim"; break;
        }
        T_CHECK(y.id < 0, "case %d gave a tensor", k);
        T_CHECK(nn_graph_status(g) == NN_ERR_INVALID_ARGUMENT, "case %d: status %d", k, nn_graph_status(g));
        T_CHECK(strstr(nn_context_last_error(ctx), want) != NULL && (k == 4 || k == 5 || strstr(nn_context_last_error(ctx), "[2, 7, 33]")),
                "case %d: message \"%s\" does not name %s and [2, 7, 33]", k, nn_context_last_error(ctx), want);
        nn_graph_destroy(g);
    }
    t_end();
}

/* ==== NaN and infinity propagation (the op checker's expected-value mode: PyTorch's
   NaN, +-inf and values; the rules in tests/op_check.c) ==== */

/* ---- sum and mean ---- */

static nn_tensor b_sum(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
    return nn_sum(g, in[0]);
}
static nn_tensor b_mean(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
    return nn_mean(g, in[0]);
}

static void nanprop_reduce(const t_env *e) {
    enum { N = 1000 };
    static double x[N], dsum[N], dmean[N];
    static const struct {
        const char *name;
        int at[2];
        double v[2];
        double want;
    } cases[] = {
        {"NaN", {777, -1}, {NAN, 0}, NAN},
        {"+inf", {5, -1}, {INFINITY, 0}, INFINITY},
        {"-inf", {999, -1}, {-INFINITY, 0}, -INFINITY},
        {"+inf and -inf", {3, 640}, {INFINITY, -INFINITY}, NAN},
        {"NaN and +inf", {0, 512}, {NAN, INFINITY}, NAN},
    };
    int k, i, m;
    for (i = 0; i < N; i++) {
        dsum[i] = 1;
        dmean[i] = 1.0 / N;
    }
    for (k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++)
        for (m = 0; m < 2; m++) {
            char name[80];
            double want = cases[k].want;
            np_case c;
            np_fill(x, N, -1, 1, 61);
            for (i = 0; i < 2; i++)
                if (cases[k].at[i] >= 0) x[cases[k].at[i]] = cases[k].v[i];
            snprintf(name, sizeof name, "%s of [1000] with %s", m ? "mean" : "sum", cases[k].name);
            np_init(&c, name, m ? b_mean : b_sum, NULL);
            np_in(&c, nn_shape1(N), x, m ? dmean : dsum);
            c.y_expect = &want;
            np_run(e, &c);
        }
}

/* argmax and accuracy: a NaN is the maximum, the first one (torch.argmax) */
static void nanprop_argmax(const t_env *e) {
    static const float x[16] = {1, NAN, 3, NAN, NAN, 1, 2, 3, 1, 2, INFINITY, -1, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    static const int32_t labels[4] = {1, 3, 2, 0}, want[4] = {1, 0, 2, 0};
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor xt, lt, am, acc;
    int32_t got[4];
    float a;
    int i;
    if (!t_begin(e, "nanprop: argmax and accuracy rows with NaN, +-inf")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    xt = nn_input(g, "x", NN_F32, nn_shape2(4, 4));
    lt = nn_input(g, "labels", NN_I32, nn_shape1(4));
    am = nn_argmax_rows(g, xt);
    acc = nn_accuracy(g, xt, lt);
    nn_graph_output(g, am);
    nn_graph_output(g, acc);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    T_OK(nn_tensor_write(g, xt, x, sizeof x), ctx);
    T_OK(nn_tensor_write(g, lt, labels, sizeof labels), ctx);
    if (!T_OK(nn_graph_forward(g), ctx)) goto done;
    if (T_OK(nn_tensor_read(g, am, got, sizeof got), ctx))
        for (i = 0; i < 4; i++) T_CHECK(got[i] == want[i], "argmax of row %d = %d, PyTorch gives %d", i, got[i], want[i]);
    if (T_OK(nn_tensor_read(g, acc, &a, sizeof a), ctx)) T_CHECK(a == 0.75f, "accuracy %g, PyTorch's argmax gives 0.75", a);
done:
    nn_graph_destroy(g);
    t_end();
}

/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- reductions, argmax ---- */

B(r_sum_int, nn_sum(g, I(g, S1(3))))
B(r_mean_none, nn_mean(g, NN_NONE))
B(r_argmax_rank, nn_argmax_rows(g, F(g, S3(2, 3, 4))))
B(r_acc_float, nn_accuracy(g, F(g, S2(5, 3)), F(g, S1(5))))
B(r_acc_len, nn_accuracy(g, F(g, S2(4, 3)), I(g, S1(5))))

static const bad_row reduce_bad[] = {
    {"reduce", "sum of int32", r_sum_int, R_SHAPE, "nn_sum|int32", 0},
    {"reduce", "mean of NN_NONE", r_mean_none, R_INV, "nn_mean|NN_NONE", 0},
    {"reduce", "argmax of [2, 3, 4]", r_argmax_rank, R_SHAPE, "nn_argmax_rows|[2, 3, 4]", 0},
    {"reduce", "accuracy with float labels", r_acc_float, R_SHAPE, "nn_accuracy|[5] float32", 0},
    {"reduce", "accuracy labels [5] for 4 rows", r_acc_len, R_SHAPE, "nn_accuracy|[4, 3]|[5]", 0},
};

/* ---- sum and mean of everything through the op checker ---- */

static void r_sum(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    out[0] = 0;
    for (i = 0; i < n; i++) out[0] += in[0][i];
}
static void r_mean(const spec *s, double *const *in, double *out) {
    r_sum(s, in, out);
    out[0] /= (double)numel(s->shape[0]);
}

static void sum_mean_cases(const t_env *e) {
    static const t_odd rows[] = {{"sum", b_sum, r_sum, 1, 0}, {"mean", b_mean, r_mean, 1, 0}};
    t_odd_cases(e, rows, 2);
}

void suite_reduce(const t_env *e) {
    T_RUN(e, check_ops, test_ties, test_indices, test_sum_accuracy, test_determinism, test_bad_dims, nanprop_reduce,
          nanprop_argmax);
    t_bad_rows(e, reduce_bad, (int)(sizeof reduce_bad / sizeof reduce_bad[0]));
    sum_mean_cases(e);
}
