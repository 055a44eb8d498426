/* The op checker every op test uses (see test.h): forward against a double-precision
   reference, gradients against finite differences of that reference, and, on OpenCL
   devices, the same graph on the CPU backend for parity.

   The loss of every case is L = sum(op(inputs) * w) with a random w, so dL/d(out) = w is
   dense and every output element's gradient path is exercised.

   Gradients are checked along directions v: the op's gradient g projected, <g, v>, against
   the central difference (L(x + h v) - L(x - h v)) / 2h of the double reference, with
   h = 1e-6 max(1, |x| on v's support). An input of up to FD_FULL elements is checked
   element by element (v runs over the unit vectors). A larger one is cut into FD_DIRS
   blocks of consecutive elements with one direction each, random signs and magnitudes in
   [0.5, 1.5): every element is in a probe with a weight of at least 0.5 and signs cannot
   cancel exactly. A probe costs two reference evaluations, so a big input of a costly op
   (matmul 129x33, conv, pooling) costs 2 FD_DIRS evaluations instead of 2 n (matmul's
   finite differences were most of the suite's time).
   What blocks give up: an error in a single element is diluted by its block of b (about
   sqrt(b) times larger to fail; b = 17 for 129x33, where a 1e-3 error in one element can
   pass that failed element by element from 3e-4). What they gain: an error along a row or
   a column fails from 1e-4 (element by element, 1e-4 passed), and an error on every
   element at the same 2e-4 as before. On OpenCL devices the parity check below still
   compares every element of the gradients with the CPU backend's.

   Tolerances (float32 against double): forward and gradient projections 1e-4 relative
   (t_relerr over the elements, or over the probes); CPU vs OpenCL 1e-4 relative on
   outputs and gradients, element by element. */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FWD_TOL 1e-4
#define GRAD_TOL 1e-4
#define PARITY_TOL 1e-4
#define FD_FULL 1024 /* inputs up to this many elements: every element alone */
#define FD_DIRS 256  /* larger inputs: this many block directions */



long numel(nn_shape s) {
    long n = 1;
    int i;
    for (i = 0; i < s.ndim; i++) n *= (long)s.dim[i];
    return n;
}

typedef struct result {
    double *out;
    double *grad[MAXIN];
    int ok;
} result;

static void result_free(result *r) {
    int i;
    free(r->out);
    for (i = 0; i < MAXIN; i++) free(r->grad[i]);
    memset(r, 0, sizeof *r);
}

/* Builds the case's graph on ctx, runs one step, returns the op's output and gradients. */
static result run_case(nn_context *ctx, const spec *s, double *const *in, const double *w) {
    result res;
    nn_graph *g = NULL;
    nn_tensor t[MAXIN], out, wt, loss;
    nn_compile_desc cd;
    nn_graph_desc gd;
    long no = numel(s->out), i;
    int k;
    memset(&res, 0, sizeof res);
    memset(&gd, 0, sizeof gd);
    gd.seed = 1234;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return res;
    for (k = 0; k < s->n_in; k++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", k);
        t[k] = nn_input(g, name, s->int_range[k] ? NN_I32 : NN_F32, s->shape[k]);
        if (s->grad[k]) nn_graph_requires_grad(g, t[k]);
    }
    out = s->build(g, t, s);
    wt = nn_input(g, "w", NN_F32, s->out);
    nn_graph_output(g, out);
    loss = nn_sum(g, nn_mul(g, out, wt));
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    for (k = 0; k < s->n_in; k++) {
        long n = numel(s->shape[k]);
        if (s->int_range[k]) {
            int32_t *v = (int32_t *)malloc((size_t)n * 4);
            for (i = 0; i < n; i++) v[i] = (int32_t)in[k][i];
            T_OK(nn_tensor_write(g, t[k], v, (size_t)n * 4), ctx);
            free(v);
        } else {
            float *v = (float *)malloc((size_t)n * 4);
            for (i = 0; i < n; i++) v[i] = (float)in[k][i];
            T_OK(nn_tensor_write(g, t[k], v, (size_t)n * 4), ctx);
            free(v);
        }
    }
    {
        float *v = (float *)malloc((size_t)no * 4);
        for (i = 0; i < no; i++) v[i] = (float)w[i];
        T_OK(nn_tensor_write(g, wt, v, (size_t)no * 4), ctx);
        free(v);
    }
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    res.out = (double *)calloc((size_t)no, sizeof(double));
    {
        float *v = (float *)malloc((size_t)no * 4);
        if (T_OK(nn_tensor_read(g, out, v, (size_t)no * 4), ctx))
            for (i = 0; i < no; i++) res.out[i] = v[i];
        free(v);
    }
    for (k = 0; k < s->n_in; k++) {
        long n = numel(s->shape[k]);
        float *v;
        if (!s->grad[k]) continue;
        v = (float *)malloc((size_t)n * 4);
        res.grad[k] = (double *)calloc((size_t)n, sizeof(double));
        if (T_CHECK(nn_graph_grad(g, t[k]).id > 0, "%s: no gradient for input %d", s->name, k) &&
            T_OK(nn_tensor_read(g, nn_graph_grad(g, t[k]), v, (size_t)n * 4), ctx))
            for (i = 0; i < n; i++) res.grad[k][i] = v[i];
        free(v);
    }
    res.ok = 1;
done:
    nn_graph_destroy(g);
    return res;
}

static double loss_ref(const spec *s, double *const *in, const double *w, double *tmp) {
    long i, n = numel(s->out);
    double L = 0;
    s->ref(s, in, tmp);
    for (i = 0; i < n; i++) L += tmp[i] * w[i];
    return L;
}

/* t_relerr of <g, v> against the central differences along the directions described
   above, for input k (in[k] is perturbed and restored); *n_dirs, *block: how many
   directions, of how many elements each. */
static double grad_error(const spec *s, double *const *in, int k, const double *g, const double *w, double *tmp,
                         long *n_dirs, long *block) {
    double *x = in[k], *gv, *fd, *v, *x0, err;
    long n = numel(s->shape[k]), b = n <= FD_FULL ? 1 : (n + FD_DIRS - 1) / FD_DIRS, nd = (n + b - 1) / b, d, i;
    gv = (double *)malloc((size_t)nd * sizeof(double));
    fd = (double *)malloc((size_t)nd * sizeof(double));
    v = (double *)malloc((size_t)b * sizeof(double));
    x0 = (double *)malloc((size_t)b * sizeof(double));
    for (d = 0; d < nd; d++) {
        long lo = d * b, hi = lo + b < n ? lo + b : n;
        double scale = 1, h, acc = 0, lp, lm;
        for (i = lo; i < hi; i++) {
            v[i - lo] = b == 1 ? 1.0 : (t_randint(2) ? 1.0 : -1.0) * t_uniform(0.5, 1.5);
            x0[i - lo] = x[i];
            if (fabs(x[i]) > scale) scale = fabs(x[i]);
            acc += g[i] * v[i - lo];
        }
        h = 1e-6 * scale;
        for (i = lo; i < hi; i++) x[i] = x0[i - lo] + h * v[i - lo];
        lp = loss_ref(s, in, w, tmp);
        for (i = lo; i < hi; i++) x[i] = x0[i - lo] - h * v[i - lo];
        lm = loss_ref(s, in, w, tmp);
        for (i = lo; i < hi; i++) x[i] = x0[i - lo];
        gv[d] = acc;
        fd[d] = (lp - lm) / (2 * h);
    }
    err = t_relerr(gv, fd, nd);
    *n_dirs = nd;
    *block = b;
    free(gv);
    free(fd);
    free(v);
    free(x0);
    return err;
}

void check_case(const t_env *e, const spec *s) {
    double *in[MAXIN], *w, *ref_out, *tmp;
    long no = numel(s->out), i;
    int k;
    result r, rc;
    char label[160];
    snprintf(label, sizeof label, "op %s", s->name);
    if (!t_begin(e, label)) return;
    t_seed(0x5eed + (unsigned long long)strlen(s->name) * 977 + (unsigned long long)no);
    for (k = 0; k < s->n_in; k++) {
        long n = numel(s->shape[k]);
        in[k] = (double *)malloc((size_t)n * sizeof(double));
        for (i = 0; i < n; i++)
            in[k][i] = s->int_range[k] ? (double)(s->lo_int + t_randint(s->int_range[k] - s->lo_int))
                                       : (double)(float)t_uniform(s->lo, s->hi);
    }
    if (s->fill) s->fill(s, in);
    w = (double *)malloc((size_t)no * sizeof(double));
    for (i = 0; i < no; i++) w[i] = (double)(float)t_uniform(-1, 1);
    ref_out = (double *)malloc((size_t)no * sizeof(double));
    tmp = (double *)malloc((size_t)no * sizeof(double));
    r = run_case(e->ctx, s, in, w);
    s->ref(s, in, ref_out); /* after the build: dropout's reference needs the op's id */
    if (r.ok) {
        double err = t_relerr(r.out, ref_out, no);
        T_CHECK(err <= FWD_TOL, "%s forward: relative error %.3g > %.1g", s->name, err, FWD_TOL);
        for (k = 0; k < s->n_in; k++) {
            long nd, b;
            if (!s->grad[k] || !r.grad[k]) continue;
            err = grad_error(s, in, k, r.grad[k], w, tmp, &nd, &b);
            if (b == 1)
                T_CHECK(err <= GRAD_TOL, "%s d/d(input %d): relative error %.3g > %.1g against finite differences, element by element",
                        s->name, k, err, GRAD_TOL);
            else
                T_CHECK(err <= GRAD_TOL, "%s d/d(input %d): relative error %.3g > %.1g against finite differences along %ld block directions of %ld elements",
                        s->name, k, err, GRAD_TOL, nd, b);
        }
        if (e->cpu) { /* the same graph on the CPU backend */
            rc = run_case(e->cpu, s, in, w);
            if (rc.ok) {
                err = t_relerr(r.out, rc.out, no);
                T_CHECK(err <= PARITY_TOL, "%s: OpenCL vs CPU forward differ by %.3g", s->name, err);
                for (k = 0; k < s->n_in; k++) {
                    if (!s->grad[k] || !r.grad[k] || !rc.grad[k]) continue;
                    err = t_relerr(r.grad[k], rc.grad[k], numel(s->shape[k]));
                    T_CHECK(err <= PARITY_TOL, "%s: OpenCL vs CPU gradient %d differ by %.3g", s->name, k, err);
                }
            }
            result_free(&rc);
        }
    }
    result_free(&r);
    for (k = 0; k < s->n_in; k++) free(in[k]);
    free(w);
    free(ref_out);
    free(tmp);
    t_end();
}


spec mk(const char *name, build_fn b, ref_fn r, nn_shape out) {
    spec s;
    memset(&s, 0, sizeof s);
    s.name = name;
    s.build = b;
    s.ref = r;
    s.out = out;
    s.lo = -2;
    s.hi = 2;
    return s;
}
void in_f(spec *s, nn_shape sh) {
    s->shape[s->n_in] = sh;
    s->grad[s->n_in] = 1;
    s->n_in++;
}
void in_i(spec *s, nn_shape sh, int lo, int hi) {
    s->shape[s->n_in] = sh;
    s->int_range[s->n_in] = hi;
    s->lo_int = lo;
    s->n_in++;
}
