/* The op checker every op test uses (see test.h): forward against a double-precision
   reference, gradients against finite differences of that reference, and, on OpenCL
   devices, the same graph on the CPU backend for parity. One graph builder and runner
   (run_case) serves three kinds of row, each written in its family's tests/test_FAMILY.c:
   - check_case: random inputs (and named parameters: a layer's weights, found by name)
     against the double reference and its finite differences, labelled "op NAME" or
     "layer NAME";
   - check_case with expect set (the expected-value mode): given inputs holding NaN and
     infinities against PyTorch's outputs and gradients, labelled "nanprop: NAME";
   - t_bad_rows: a refused graph's code and message, labelled "badinput: FAMILY".
   A graph whose results were compared records its (op kind, function) pairs for
   suite_registry's coverage (tests/coverage.c).

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
   A case with dirs > 0 (matmul, einsum: a reference evaluation costs M N K) is checked
   along that many directions, each dense over the whole input (every element a random
   sign times [0.5, 1.5)): the directional derivative <g, v> against the central difference
   along v, 2 dirs evaluations per input. A wrong gradient in a fixed subset of elements
   (a row, a column, a batch, a transposed layout) moves <g, v> by the sum of its errors
   along v and fails from about 1e-4 of the gradient's scale over that subset; the OpenCL
   parity check still compares every element with the CPU backend's.
   What blocks give up: an error in a single element is diluted by its block of b (about
   sqrt(b) times larger to fail; b = 17 for 129x33, where a 1e-3 error in one element can
   pass that failed element by element from 3e-4). What they gain: an error along a row or
   a column fails from 1e-4 (element by element, 1e-4 passed), and an error on every
   element at the same 2e-4 as before. On OpenCL devices the parity check below still
   compares every element of the gradients with the CPU backend's.

   Tolerances (float32 against double): forward and gradient projections 1e-4 relative
   (t_relerr over the elements, or over the probes); CPU vs OpenCL 1e-4 relative on
   outputs and gradients, element by element. A case's tol replaces all three (16-bit
   storage, tests/test_mixed.c). */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FWD_TOL 1e-4
#define GRAD_TOL 1e-4
#define PARITY_TOL 1e-4
#define EXPECT_REL 1e-4 /* expected-value mode: finite values within 1e-4 relative */
#define EXPECT_ABS 1e-5 /*   + 1e-5 absolute */
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
    long n_out;
    int ok;
} result;

static void result_free(result *r) {
    int i;
    free(r->out);
    for (i = 0; i < MAXIN; i++) free(r->grad[i]);
    memset(r, 0, sizeof *r);
}

static int same_shape(nn_shape a, nn_shape b) {
    int i;
    if (a.ndim != b.ndim) return 0;
    for (i = 0; i < a.ndim; i++)
        if (a.dim[i] != b.dim[i]) return 0;
    return 1;
}

/* Builds the case's graph on ctx, runs one step, returns the op's output and gradients. */
static result run_case(nn_context *ctx, const spec *s, double *const *in, const double *w, int cover) {
    result res;
    nn_graph *g = NULL;
    nn_tensor t[MAXIN], out, wt, loss;
    nn_compile_desc cd;
    nn_graph_desc gd;
    long no = numel(s->out), i;
    int k, first, keep = 0;
    nn_shape oshape = s->out;
    memset(&res, 0, sizeof res);
    memset(&gd, 0, sizeof gd);
    gd.seed = 1234;
    gd.eval = s->eval;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return res;
    first = 0;
    for (k = 0; k < s->n_in; k++) {
        char name[16];
        if (s->param[k][0]) continue; /* made by build */
        snprintf(name, sizeof name, "in%d", k);
        t[k] = nn_input(g, name, s->int_range[k] ? NN_I32 : NN_F32, s->shape[k]);
        if (s->grad[k]) nn_graph_requires_grad(g, t[k]);
        first = t[k].id + 1; /* the op's nodes: first..out */
    }
    out = s->build(g, t, s);
    if (!T_OK(nn_graph_status(g), ctx)) goto done;
    if (s->expect) { /* the graph's shape */
        oshape = t_shape(g, out);
        no = numel(oshape);
    } else if (!T_CHECK(same_shape(t_shape(g, out), s->out), "%s: the output's shape is not the case's", s->name))
        goto done;
    res.n_out = no;
    for (k = 0; k < s->n_in; k++) {
        if (!s->param[k][0]) continue;
        t[k] = nn_graph_find(g, s->param[k]);
        if (!T_CHECK(t[k].id > 0, "%s: no parameter %s", s->name, s->param[k])) goto done;
        if (!T_CHECK(same_shape(t_shape(g, t[k]), s->shape[k]), "%s: parameter %s has another shape", s->name,
                     s->param[k]))
            goto done;
        keep = 1;
    }
    wt = nn_input(g, "w", NN_F32, oshape);
    nn_graph_output(g, out);
    loss = nn_sum(g, nn_mul(g, out, wt));
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.keep_grads = keep; /* parameters' gradients readable */
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (cover && t_survey_graph(g)) goto done; /* NN_TEST_SURVEY: compiled, not run */
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
        for (i = 0; i < no; i++) v[i] = w ? (float)w[i] : 1.0f;
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
        if (T_CHECK(nn_graph_grad(g, t[k]).id > 0, "%s: no gradient for %s %d", s->name, s->param[k][0] ? s->param[k] : "input", k) &&
            T_OK(nn_tensor_read(g, nn_graph_grad(g, t[k]), v, (size_t)n * 4), ctx))
            for (i = 0; i < n; i++) res.grad[k][i] = v[i];
        free(v);
    }
    res.ok = 1;
    if (cover) t_cover_graph(g, first, out.id); /* the op's own nodes, compared by the caller */
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
    int dense = s->dirs > 0;
    if (dense) { /* dirs directions, each over every element */
        b = n;
        nd = s->dirs;
    }
    gv = (double *)malloc((size_t)nd * sizeof(double));
    fd = (double *)malloc((size_t)nd * sizeof(double));
    v = (double *)malloc((size_t)b * sizeof(double));
    x0 = (double *)malloc((size_t)b * sizeof(double));
    for (d = 0; d < nd; d++) {
        long lo = dense ? 0 : d * b, hi = lo + b < n ? lo + b : n;
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

const char *t_expect_desc(double w, char *buf, size_t n) {
    if (isnan(w)) return "NaN";
    if (w == T_FINITE) return "finite";
    if (isinf(w)) return w > 0 ? "+inf" : "-inf";
    snprintf(buf, n, "%.7g", w);
    return buf;
}

int t_expect_compare(const char *name, const char *what, const double *got, const double *want, long n) {
    long i, bad = 0;
    for (i = 0; i < n; i++) {
        double w = want[i], v = got[i];
        int ok;
        char b[40];
        if (isnan(w)) ok = isnan(v);
        else if (isinf(w)) ok = v == w;
        else if (w == T_FINITE) ok = isfinite(v);
        else ok = isfinite(v) && fabs(v - w) <= EXPECT_REL * fabs(w) + EXPECT_ABS;
        if (!ok && bad++ < 4) T_CHECK(0, "%s: %s[%ld] = %g, PyTorch gives %s", name, what, i, v, t_expect_desc(w, b, sizeof b));
    }
    if (bad > 4) T_CHECK(0, "%s: %s: %ld elements differ in all", name, what, bad);
    return bad == 0;
}

int check_values(const t_env *e, const spec *s, double **got_y, double **got_dx0) {
    double *in[MAXIN];
    int k;
    long i;
    result r;
    for (k = 0; k < s->n_in; k++) {
        long n = numel(s->shape[k]);
        in[k] = (double *)malloc((size_t)n * sizeof(double));
        for (i = 0; i < n; i++) in[k][i] = s->x[k][i];
    }
    r = run_case(e->ctx, s, in, s->w, 1);
    if (r.ok) {
        if (s->y_expect) t_expect_compare(s->name, "y", r.out, s->y_expect, r.n_out);
        for (k = 0; k < s->n_in; k++) {
            char what[32];
            if (!s->dx_expect[k] || !r.grad[k]) continue;
            snprintf(what, sizeof what, "d/dx%d", k);
            t_expect_compare(s->name, what, r.grad[k], s->dx_expect[k], numel(s->shape[k]));
        }
        if (got_y) {
            *got_y = r.out;
            r.out = NULL;
        }
        if (got_dx0) {
            *got_dx0 = r.grad[0];
            r.grad[0] = NULL;
        }
    }
    k = r.ok;
    result_free(&r);
    for (i = 0; i < s->n_in; i++) free(in[i]);
    return k;
}

void check_case(const t_env *e, const spec *s) {
    double *in[MAXIN], *w, *ref_out, *tmp;
    long no = numel(s->out), i;
    int k;
    result r, rc;
    char label[160];
    snprintf(label, sizeof label, "%s %s", s->kind ? s->kind : "op", s->name);
    if (!t_begin_op(e, label)) return;
    if (s->expect) {
        check_values(e, s, NULL, NULL);
        t_end();
        return;
    }
    t_seed(0x5eed + (unsigned long long)strlen(s->name) * 977 + (unsigned long long)no);
    for (k = 0; k < s->n_in; k++) {
        long n = numel(s->shape[k]);
        in[k] = (double *)malloc((size_t)n * sizeof(double));
        for (i = 0; i < n; i++)
            in[k][i] = s->int_range[k]            ? (double)(s->lo_int + t_randint(s->int_range[k] - s->lo_int))
                       : s->in_lo[k] < s->in_hi[k] ? (double)(float)t_uniform(s->in_lo[k], s->in_hi[k])
                                                   : (double)(float)t_uniform(s->lo, s->hi);
    }
    if (s->fill) s->fill(s, in);
    w = (double *)malloc((size_t)no * sizeof(double));
    for (i = 0; i < no; i++) w[i] = s->w16 ? (double)(t_randint(256) - 128) / 128.0 : (double)(float)t_uniform(-1, 1);
    ref_out = (double *)malloc((size_t)no * sizeof(double));
    tmp = (double *)malloc((size_t)no * sizeof(double));
    r = run_case(e->ctx, s, in, w, 1);
    s->ref(s, in, ref_out); /* after the build: dropout's reference needs the op's id */
    if (r.ok) {
        double err = t_relerr(r.out, ref_out, no);
        double fwd_tol = s->tol > 0 ? s->tol : FWD_TOL, grad_tol = s->tol > 0 ? s->tol : GRAD_TOL;
        double parity_tol = s->tol > 0 ? s->tol : PARITY_TOL;
        T_CHECK(err <= fwd_tol, "%s forward: relative error %.3g > %.1g", s->name, err, fwd_tol);
        for (k = 0; k < s->n_in; k++) {
            long nd, b;
            if (!s->grad[k] || !r.grad[k]) continue;
            err = grad_error(s, in, k, r.grad[k], w, tmp, &nd, &b);
            if (s->dirs > 0)
                T_CHECK(err <= grad_tol, "%s d/d(%s %d): relative error %.3g > %.1g against finite differences along %ld dense random directions",
                        s->name, s->param[k][0] ? s->param[k] : "input", k, err, grad_tol, nd);
            else if (b == 1)
                T_CHECK(err <= grad_tol, "%s d/d(%s %d): relative error %.3g > %.1g against finite differences, element by element",
                        s->name, s->param[k][0] ? s->param[k] : "input", k, err, grad_tol);
            else
                T_CHECK(err <= grad_tol, "%s d/d(%s %d): relative error %.3g > %.1g against finite differences along %ld block directions of %ld elements",
                        s->name, s->param[k][0] ? s->param[k] : "input", k, err, grad_tol, nd, b);
        }
        if (e->cpu) { /* the same graph on the CPU backend */
            rc = run_case(e->cpu, s, in, w, 0);
            if (rc.ok) {
                err = t_relerr(r.out, rc.out, no);
                T_CHECK(err <= parity_tol, "%s: OpenCL vs CPU forward differ by %.3g", s->name, err);
                for (k = 0; k < s->n_in; k++) {
                    if (!s->grad[k] || !r.grad[k] || !rc.grad[k]) continue;
                    err = t_relerr(r.grad[k], rc.grad[k], numel(s->shape[k]));
                    T_CHECK(err <= parity_tol, "%s: OpenCL vs CPU gradient %d differ by %.3g", s->name, k, err);
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
static const int t_odd2[T_N_ODD][2] = {{7, 33}, {1, 129}, {129, 3}};
spec mk_odd(char *name, size_t cap, const char *label, int j, build_fn b, ref_fn r, int scalar) {
    nn_shape sh = nn_shape2(t_odd2[j][0], t_odd2[j][1]);
    spec s;
    snprintf(name, cap, "%s [%d, %d]", label, t_odd2[j][0], t_odd2[j][1]);
    s = mk(name, b, r, scalar ? nn_shape1(1) : sh);
    in_f(&s, sh);
    return s;
}
void t_odd_cases(const t_env *e, const t_odd *rows, int n) {
    char name[96];
    int i, j;
    for (j = 0; j < T_N_ODD; j++)
        for (i = 0; i < n; i++) {
            spec s = mk_odd(name, sizeof name, rows[i].label, j, rows[i].build, rows[i].ref, rows[i].scalar);
            s.p = rows[i].p;
            check_case(e, &s);
        }
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
void in_fr(spec *s, nn_shape sh, double lo, double hi) {
    s->in_lo[s->n_in] = lo;
    s->in_hi[s->n_in] = hi;
    in_f(s, sh);
}
void in_param(spec *s, const char *name, nn_shape sh, double lo, double hi) {
    snprintf(s->param[s->n_in], sizeof s->param[s->n_in], "%s", name);
    in_fr(s, sh, lo, hi);
}

/* The expected-value mode: NaN and infinity propagation, op family by op family (the
   "nanprop:" rows of each tests/test_FAMILY.c), against what PyTorch gives: inputs
   hold NaN, +inf and -inf at chosen positions, and every forward output and gradient
   element must be NaN where PyTorch's is NaN, the same infinity where PyTorch's is
   infinite, and finite (within 1e-4 relative, 1e-5 absolute, where a value is given)
   where PyTorch's is finite. The loss of every case is sum(op(...) * w) with w = 1 or
   another finite w, or with a w that holds NaN or inf itself where the case says so (the
   backward passes must carry a non-finite incoming gradient to where PyTorch's do, and
   nowhere else).

   The expectations are written in the rows, from PyTorch's definitions (ATen's kernels and
   autograd formulas, PyTorch 1.13): double-precision references that follow those rules
   element by element (activations, binary ops, matmul, convolutions, pooling, resampling),
   or the values PyTorch returns, written out (losses). The rules that decide most cases:
   - comparisons are written so that NaN falls into the propagating branch: relu(NaN),
     hardtanh(NaN), clamp_min(NaN, 0) (the hinge, cosine-embedding and triplet losses) and
     BCE's max(log p, -100) are NaN; max pooling takes a NaN as the window's maximum;
   - products are products: inf * 0 is NaN wherever PyTorch multiplies (dropout's dropped
     elements are x * 0, matmul and convolution sums, the zero padding of a convolution
     times a NaN weight), and nowhere it copies (nearest upsampling, padding, gathers);
   - a statistic over a group holding NaN or inf (softmax and log-softmax rows, norms' means
     and variances, a sum) is NaN, or +-inf for a sum of one-signed infinities;
   - gradients follow PyTorch's backward formulas: relu's threshold_backward passes the
     gradient at NaN (the test of NaN <= 0 is false), leaky ReLU and PReLU send slope * dy,
     hardsigmoid 0; l1's sign(NaN) is 0 (torch.sign); Huber and smooth L1 give NaN.
   Where PyTorch 1.13's vectorised and scalar kernels disagree at NaN (the gradients of
   ELU/SELU/CELU: NaN vs dy; hardswish: NaN vs dy; hardtanh, ReLU6: 0 vs dy), either is
   PyTorch's: the expectation is the one written in the reference, and it is noted there.
   Where only finiteness is the point (a norm's other groups) the value is left to the
   family's own suite.
   The losses PyTorch lacks (log-cosh, quantile, hinge, squared hinge, dice) are held to the
   IEEE arithmetic of their formulas (src/api/api.h) in the forward, and to NaN in, NaN out
   in the gradient (the derivative's own value at +-inf: log-cosh's tanh is +-1 there). */
void np_init(np_case *c, const char *name, build_fn build, const void *arg) {
    memset(c, 0, sizeof *c);
    c->name = name;
    c->kind = "nanprop:";
    c->build = build;
    c->arg = arg;
    c->expect = 1;
}
void np_in(np_case *c, nn_shape s, const double *x, const double *dx) {
    c->shape[c->n_in] = s;
    c->x[c->n_in] = x;
    c->dx_expect[c->n_in] = dx;
    c->grad[c->n_in] = dx != NULL;
    c->n_in++;
}
void np_param(np_case *c, const char *name, nn_shape s, const double *x, const double *dx) {
    snprintf(c->param[c->n_in], sizeof c->param[c->n_in], "%s", name);
    np_in(c, s, x, dx);
}
void np_in_i(np_case *c, nn_shape s, const double *x) {
    c->int_range[c->n_in] = 1; /* int32; its values are x */
    np_in(c, s, x, NULL);
}
void np_fill(double *v, long n, double lo, double hi, unsigned long long seed) {
    long i;
    t_seed(seed);
    for (i = 0; i < n; i++) v[i] = (double)(float)t_uniform(lo, hi);
}


/* ---- bad-input rows (tests/bad_rows.h) ---- */

char t_call_msg[512];
nn_context *t_row_ctx;

/* 1 when every '|'-separated part of needle is in msg */
static int has_all(const char *msg, const char *needle) {
    char part[160];
    while (*needle) {
        size_t n = strcspn(needle, "|");
        if (n >= sizeof part) n = sizeof part - 1;
        memcpy(part, needle, n);
        part[n] = 0;
        if (!strstr(msg, part)) return 0;
        needle += n;
        if (*needle == '|') needle++;
    }
    return 1;
}

static void run_row(const t_env *e, const bad_row *r) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor t;
    nn_result st, rc;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return;
    memset(&cd, 0, sizeof cd);
    t_call_msg[0] = 0;
    t_row_ctx = ctx;
    t = r->build(g, &cd);
    st = nn_graph_status(g);
    if (r->at_compile == 2) { /* R_CALL: the refused call was the builder's own; the graph stays as it was */
        const char *msg = t_call_msg[0] ? t_call_msg : nn_context_last_error(ctx);
        T_CHECK(t.id == (int)r->code, "%s: the call returned %d (%s), not %d (%s)", r->label, t.id,
                nn_result_string((nn_result)t.id), (int)r->code, nn_result_string(r->code));
        T_CHECK(st == NN_OK, "%s: the graph's status is %d after a refused call, not NN_OK", r->label, (int)st);
        T_CHECK(has_all(msg, r->needle), "%s: the message \"%s\" lacks \"%s\"", r->label, msg, r->needle);
        goto done;
    }
    if (r->at_compile) {
        T_CHECK(st == NN_OK && t.id > 0, "%s: the build failed (%d: %s), the compile should refuse", r->label, (int)st,
                nn_context_last_error(ctx));
    } else {
        T_CHECK(st == r->code, "%s: status %d (%s) after the build, not %d", r->label, (int)st, nn_result_string(st), (int)r->code);
        T_CHECK(t.id <= 0, "%s: the op returned tensor %d", r->label, t.id);
        if (st == NN_OK) goto done; /* accepted: reported above */
        T_CHECK(has_all(nn_context_last_error(ctx), r->needle), "%s: the message \"%s\" lacks \"%s\"", r->label, nn_context_last_error(ctx),
                r->needle);
    }
    rc = nn_graph_compile(g, &cd);
    T_CHECK(rc == r->code, "%s: nn_graph_compile returned %d (%s), not %d (%s)", r->label, (int)rc, nn_result_string(rc),
            (int)r->code, nn_result_string(r->code));
    if (r->at_compile)
        T_CHECK(has_all(nn_context_last_error(ctx), r->needle), "%s: the message \"%s\" lacks \"%s\"", r->label, nn_context_last_error(ctx),
                r->needle);
    rc = nn_graph_step(g);
    T_CHECK(rc == NN_ERR_STATE, "%s: nn_graph_step on the refused graph returned %d", r->label, (int)rc);
done:
    nn_graph_destroy(g);
}

void t_run_parts(const t_env *e, const t_part *parts, int n) {
    int i;
    for (i = 0; i < n; i++) parts[i](e);
}

void t_bad_rows(const t_env *e, const bad_row *rows, int n) {
    int i, j;
    for (i = 0; i < n; i = j) {
        char name[120];
        int m = 0;
        for (j = i; j < n && strcmp(rows[j].family, rows[i].family) == 0; j++) m++;
        snprintf(name, sizeof name, "badinput: %s (%d rows)", rows[i].family, m);
        if (!t_begin(e, name)) continue;
        for (j = i; j < n && strcmp(rows[j].family, rows[i].family) == 0; j++) run_row(e, &rows[j]);
        t_end();
    }
}
