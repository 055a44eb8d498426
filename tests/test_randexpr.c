/* Random expression graphs: programs of ops drawn from a fixed seed, built with nn.h on
   each backend and evaluated by a double-precision interpreter written here. Forward
   values are compared with the interpreter, gradients with its central differences, and
   on OpenCL devices every output and gradient with the CPU backend's.

   A program has N_IN inputs of shapes [n, n], [n, 1] or [1, n] (n drawn per program) and up
   to MAX_OPS ops, each taking one or two earlier values: broadcasting binary ops,
   activations and elementwise math (kept off their poles: log(1 + x^2), a / (1 + b^2),
   exp(tanh x)), matmul with transposes, transpose, softmax and log_softmax over the last
   dim, reductions along a dim with keepdim (sum, mean, logsumexp), cumsum, flip. The
   output is the last value and the loss is sum(out * w) with a random w. Ops are smooth
   where the inputs fall (no kinks, no poles), so finite differences in double precision
   are exact to about 1e-9 and any disagreement is the library's.

   Tolerances (float32 against double): forward 1e-4 relative (t_relerr), gradients 1e-4
   relative against central differences, CPU vs OpenCL 1e-4 relative. The case's message
   states how many programs and ops ran and the worst errors seen. */
#include "test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RX_PROGRAMS 80
#define N_IN 3
#define MAX_OPS 10
#define MAX_VALS (N_IN + MAX_OPS)
#define RX_TOL 1e-4

enum {
    RX_ADD, RX_SUB, RX_MUL, RX_DIV1, RX_SCALE, RX_TANH, RX_SIGMOID, RX_SILU, RX_SOFTSIGN, RX_GELU, RX_EXPTANH, RX_LOG1SQ,
    RX_MATMUL, RX_TRANSPOSE, RX_SOFTMAX, RX_LOG_SOFTMAX, RX_SUM_DIM, RX_MEAN_DIM, RX_LSE_DIM, RX_CUMSUM, RX_FLIP, RX_KINDS
};
static const char *const rx_names[RX_KINDS] = {
    "add",  "sub",       "mul",     "div1",        "scale",   "tanh",     "sigmoid",   "silu",   "softsign", "gelu", "exptanh",
    "log1sq", "matmul", "transpose", "softmax", "log_softmax", "sum_dim", "mean_dim", "logsumexp", "cumsum", "flip"};

typedef struct rx_op {
    int kind, a, b; /* operands: value indices */
    int ta, tb;     /* matmul: transposes */
    int dim;        /* reductions, cumsum, flip: the dim (0 or 1) */
    double c;       /* scale: the factor */
} rx_op;

typedef struct rx_prog {
    int n, n_ops;
    int r[MAX_VALS], c[MAX_VALS]; /* each value's shape [r, c], each 1 or n */
    rx_op op[MAX_OPS];
} rx_prog;

static int rx_binary(int kind) { return kind <= RX_DIV1 || kind == RX_MATMUL; }

static void rx_draw(rx_prog *p) {
    static const int sizes[] = {1, 2, 3, 7, 12};
    int k;
    p->n = sizes[t_randint(5)];
    for (k = 0; k < N_IN; k++) { /* [n, n], [n, n], then [n, 1] or [1, n] */
        int shape = k < 2 ? 0 : 1 + t_randint(2);
        p->r[k] = shape == 2 ? 1 : p->n;
        p->c[k] = shape == 1 ? 1 : p->n;
    }
    p->n_ops = 3 + t_randint(MAX_OPS - 2);
    for (k = 0; k < p->n_ops; k++) {
        rx_op *o = &p->op[k];
        int nv = N_IN + k, y = nv, tries;
        for (tries = 0;; tries++) {
            o->kind = t_randint(RX_KINDS);
            /* lean on recent values so programs are deep, not wide */
            o->a = t_randint(3) ? nv - 1 - t_randint(nv < 3 ? nv : 3) : t_randint(nv);
            o->b = t_randint(nv);
            o->ta = t_randint(2);
            o->tb = t_randint(2);
            o->dim = t_randint(2);
            o->c = (t_randint(2) ? 1 : -1) * t_uniform(0.25, 1.5);
            p->r[y] = p->r[o->a];
            p->c[y] = p->c[o->a];
            if (rx_binary(o->kind) && o->kind != RX_MATMUL) { /* broadcast: each dim 1 or n */
                p->r[y] = p->r[o->a] > p->r[o->b] ? p->r[o->a] : p->r[o->b];
                p->c[y] = p->c[o->a] > p->c[o->b] ? p->c[o->a] : p->c[o->b];
                break;
            }
            if (o->kind == RX_MATMUL) { /* op(a) [r, k] @ op(b) [k, c] */
                int ar = o->ta ? p->c[o->a] : p->r[o->a], ak = o->ta ? p->r[o->a] : p->c[o->a];
                int bk = o->tb ? p->c[o->b] : p->r[o->b], bc = o->tb ? p->r[o->b] : p->c[o->b];
                if (ak != bk) {
                    if (tries < 20) continue;
                    o->kind = RX_TANH; /* no fitting pair: a unary op */
                    break;
                }
                p->r[y] = ar;
                p->c[y] = bc;
                break;
            }
            if (o->kind == RX_TRANSPOSE) {
                p->r[y] = p->c[o->a];
                p->c[y] = p->r[o->a];
            }
            if (o->kind == RX_SUM_DIM || o->kind == RX_MEAN_DIM || o->kind == RX_LSE_DIM) {
                if (o->dim == 0) p->r[y] = 1;
                else p->c[y] = 1;
            }
            break;
        }
    }
}

/* ---- the double-precision interpreter ---- */

static double rx_sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

/* Runs p on inputs in[N_IN]; vals[k] receives value k ([r, c] row-major). */
static void rx_eval(const rx_prog *p, double *const *in, double **vals) {
    long i, j, l;
    int k;
    for (k = 0; k < N_IN; k++) memcpy(vals[k], in[k], (size_t)p->r[k] * p->c[k] * sizeof(double));
    for (k = 0; k < p->n_ops; k++) {
        const rx_op *o = &p->op[k];
        const double *a = vals[o->a], *b = vals[o->b];
        long ar = p->r[o->a], ac = p->c[o->a], br = p->r[o->b], bc = p->c[o->b];
        long R = p->r[N_IN + k], C = p->c[N_IN + k];
        double *y = vals[N_IN + k];
        if (rx_binary(o->kind) && o->kind != RX_MATMUL) {
            for (i = 0; i < R; i++)
                for (j = 0; j < C; j++) {
                    double u = a[(ar == 1 ? 0 : i) * ac + (ac == 1 ? 0 : j)], v = b[(br == 1 ? 0 : i) * bc + (bc == 1 ? 0 : j)];
                    y[i * C + j] = o->kind == RX_ADD ? u + v : o->kind == RX_SUB ? u - v : o->kind == RX_MUL ? u * v
                                                                                                          : u / (1.0 + v * v);
                }
            continue;
        }
        switch (o->kind) {
        case RX_MATMUL: {
            long K = o->ta ? ar : ac;
            for (i = 0; i < R; i++)
                for (j = 0; j < C; j++) {
                    double s = 0;
                    for (l = 0; l < K; l++) s += (o->ta ? a[l * ac + i] : a[i * ac + l]) * (o->tb ? b[j * bc + l] : b[l * bc + j]);
                    y[i * C + j] = s;
                }
            break;
        }
        case RX_TRANSPOSE:
            for (i = 0; i < R; i++)
                for (j = 0; j < C; j++) y[i * C + j] = a[j * ac + i];
            break;
        case RX_SOFTMAX: case RX_LOG_SOFTMAX:
            for (i = 0; i < R; i++) {
                double m = a[i * C], s = 0;
                for (j = 1; j < C; j++) m = a[i * C + j] > m ? a[i * C + j] : m;
                for (j = 0; j < C; j++) s += exp(a[i * C + j] - m);
                for (j = 0; j < C; j++)
                    y[i * C + j] = o->kind == RX_SOFTMAX ? exp(a[i * C + j] - m) / s : a[i * C + j] - m - log(s);
            }
            break;
        case RX_SUM_DIM: case RX_MEAN_DIM: case RX_LSE_DIM: { /* along dim, keepdim */
            long outer = o->dim == 0 ? ac : ar, len = o->dim == 0 ? ar : ac;
            for (i = 0; i < outer; i++) {
                double s = 0, m = -HUGE_VAL;
                for (l = 0; l < len; l++) {
                    double v = o->dim == 0 ? a[l * ac + i] : a[i * ac + l];
                    m = v > m ? v : m;
                }
                for (l = 0; l < len; l++) {
                    double v = o->dim == 0 ? a[l * ac + i] : a[i * ac + l];
                    s += o->kind == RX_LSE_DIM ? exp(v - m) : v;
                }
                y[i] = o->kind == RX_SUM_DIM ? s : o->kind == RX_MEAN_DIM ? s / (double)len : m + log(s);
            }
            break;
        }
        case RX_CUMSUM: case RX_FLIP:
            for (i = 0; i < R; i++)
                for (j = 0; j < C; j++) {
                    if (o->kind == RX_FLIP) {
                        y[i * C + j] = o->dim == 0 ? a[(R - 1 - i) * C + j] : a[i * C + (C - 1 - j)];
                    } else {
                        double s = 0;
                        for (l = 0; l <= (o->dim == 0 ? i : j); l++) s += o->dim == 0 ? a[l * C + j] : a[i * C + l];
                        y[i * C + j] = s;
                    }
                }
            break;
        default:
            for (i = 0; i < R * C; i++) {
                double v = a[i];
                switch (o->kind) {
                case RX_SCALE: y[i] = v * (double)(float)o->c; break;
                case RX_TANH: y[i] = tanh(v); break;
                case RX_SIGMOID: y[i] = rx_sigmoid(v); break;
                case RX_SILU: y[i] = v * rx_sigmoid(v); break;
                case RX_SOFTSIGN: y[i] = v / (1.0 + fabs(v)); break;
                case RX_GELU: y[i] = 0.5 * v * (1.0 + erf(v / sqrt(2.0))); break;
                case RX_EXPTANH: y[i] = exp(tanh(v)); break;
                default: y[i] = log(1.0 + v * v); break; /* RX_LOG1SQ */
                }
            }
            break;
        }
    }
}

static long rx_numel(const rx_prog *p, int v) { return (long)p->r[v] * p->c[v]; }

static double rx_loss(const rx_prog *p, double *const *in, double **vals, const double *w) {
    long i, nn = rx_numel(p, N_IN + p->n_ops - 1);
    double L = 0;
    rx_eval(p, in, vals);
    for (i = 0; i < nn; i++) L += vals[N_IN + p->n_ops - 1][i] * w[i];
    return L;
}

/* ---- the same program in nn.h ---- */

static nn_tensor rx_build_op(nn_graph *g, const rx_op *o, const nn_tensor *v) {
    nn_tensor a = v[o->a], b = v[o->b];
    int d = o->dim;
    switch (o->kind) {
    case RX_ADD: return nn_add(g, a, b);
    case RX_SUB: return nn_sub(g, a, b);
    case RX_MUL: return nn_mul(g, a, b);
    case RX_DIV1: return nn_div(g, a, nn_add_scalar(g, nn_square(g, b), 1.0f));
    case RX_SCALE: return nn_mul_scalar(g, a, (float)o->c);
    case RX_TANH: return nn_tanh(g, a);
    case RX_SIGMOID: return nn_sigmoid(g, a);
    case RX_SILU: return nn_silu(g, a);
    case RX_SOFTSIGN: return nn_softsign(g, a);
    case RX_GELU: return nn_gelu(g, a);
    case RX_EXPTANH: return nn_exp(g, nn_tanh(g, a));
    case RX_LOG1SQ: return nn_log(g, nn_add_scalar(g, nn_square(g, a), 1.0f));
    case RX_MATMUL: return nn_matmul(g, a, b, o->ta, o->tb);
    case RX_TRANSPOSE: return nn_transpose(g, a, 0, 1);
    case RX_SOFTMAX: return nn_softmax(g, a, -1);
    case RX_LOG_SOFTMAX: return nn_log_softmax(g, a, -1);
    case RX_SUM_DIM: return nn_sum_dim(g, a, &d, 1, 1);
    case RX_MEAN_DIM: return nn_mean_dim(g, a, &d, 1, 1);
    case RX_LSE_DIM: return nn_logsumexp_dim(g, a, &d, 1, 1);
    case RX_CUMSUM: return nn_cumsum(g, a, d);
    default: return nn_flip(g, a, &d, 1);
    }
}

typedef struct rx_result {
    int ok;
    double *out, *grad[N_IN];
} rx_result;

static void rx_result_free(rx_result *r) {
    int k;
    free(r->out);
    for (k = 0; k < N_IN; k++) free(r->grad[k]);
    memset(r, 0, sizeof *r);
}

static int rx_write(nn_context *ctx, nn_graph *g, nn_tensor t, const double *x, long n) {
    float *v = (float *)malloc((size_t)n * 4);
    long i;
    int ok;
    for (i = 0; i < n; i++) v[i] = (float)x[i];
    ok = T_OK(nn_tensor_write(g, t, v, (size_t)n * 4), ctx);
    free(v);
    return ok;
}

static int rx_read(nn_context *ctx, nn_graph *g, nn_tensor t, double *x, long n) {
    float *v = (float *)malloc((size_t)n * 4);
    long i;
    int ok = T_OK(nn_tensor_read(g, t, v, (size_t)n * 4), ctx);
    for (i = 0; i < n && ok; i++) x[i] = v[i];
    free(v);
    return ok;
}

/* live[k]: value k reaches the output (the library refuses writes to inputs it does not use) */
static void rx_live(const rx_prog *p, int *live) {
    int k;
    memset(live, 0, MAX_VALS * sizeof(int));
    live[N_IN + p->n_ops - 1] = 1;
    for (k = p->n_ops - 1; k >= 0; k--) {
        const rx_op *o = &p->op[k];
        if (!live[N_IN + k]) continue;
        live[o->a] = 1;
        if (rx_binary(o->kind)) live[o->b] = 1;
    }
}

static rx_result rx_run(nn_context *ctx, const rx_prog *p, double *const *in, const double *w) {
    rx_result r;
    nn_graph *g = NULL;
    nn_tensor v[MAX_VALS], wt;
    nn_compile_desc cd;
    long nout = rx_numel(p, N_IN + p->n_ops - 1);
    int k, ok = 1, live[MAX_VALS], last = N_IN + p->n_ops - 1;
    memset(&r, 0, sizeof r);
    rx_live(p, live);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return r;
    for (k = 0; k < N_IN; k++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", k);
        v[k] = nn_input(g, name, NN_F32, nn_shape2(p->r[k], p->c[k]));
        nn_graph_requires_grad(g, v[k]);
    }
    for (k = 0; k < p->n_ops; k++) v[N_IN + k] = rx_build_op(g, &p->op[k], v);
    wt = nn_input(g, "w", NN_F32, nn_shape2(p->r[last], p->c[last]));
    nn_graph_output(g, v[N_IN + p->n_ops - 1]);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, v[N_IN + p->n_ops - 1], wt));
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    for (k = 0; k < N_IN; k++) ok = ok && (!live[k] || rx_write(ctx, g, v[k], in[k], rx_numel(p, k)));
    ok = ok && rx_write(ctx, g, wt, w, nout) && T_OK(nn_graph_step(g), ctx);
    if (!ok) goto done;
    r.out = (double *)calloc((size_t)nout, sizeof(double));
    ok = rx_read(ctx, g, v[last], r.out, nout);
    for (k = 0; k < N_IN && ok; k++) {
        nn_tensor gr = nn_graph_grad(g, v[k]);
        r.grad[k] = (double *)calloc((size_t)rx_numel(p, k), sizeof(double));
        if (gr.id > 0) ok = rx_read(ctx, g, gr, r.grad[k], rx_numel(p, k)); /* no path from x_k: a zero gradient */
    }
    r.ok = ok;
done:
    nn_graph_destroy(g);
    return r;
}

static void rx_describe(const rx_prog *p, char *buf, size_t len) {
    int k;
    size_t at = (size_t)snprintf(buf, len, "n=%d, x2 [%d, %d]:", p->n, p->r[2], p->c[2]);
    for (k = 0; k < p->n_ops && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, " v%d=%s(v%d,v%d)[%d,%d]", N_IN + k, rx_names[p->op[k].kind], p->op[k].a,
                               p->op[k].b, p->r[N_IN + k], p->c[N_IN + k]);
}

static void test_random_expressions(const t_env *e) {
    double *in[N_IN], *vals[MAX_VALS], *w, *fd, worst_fwd = 0, worst_grad = 0, worst_par = 0;
    long nmax = 12 * 12, i;
    int prog_i, k, ops = 0, programs = 0;
    if (!t_begin(e, "random expression graphs against a double-precision interpreter")) return;
    t_seed(0xe7e7);
    for (k = 0; k < N_IN; k++) in[k] = (double *)malloc((size_t)nmax * sizeof(double));
    for (k = 0; k < MAX_VALS; k++) vals[k] = (double *)malloc((size_t)nmax * sizeof(double));
    w = (double *)malloc((size_t)nmax * sizeof(double));
    fd = (double *)malloc((size_t)nmax * sizeof(double));
    for (prog_i = 0; prog_i < RX_PROGRAMS; prog_i++) {
        rx_prog p;
        rx_result r, rc;
        long nn;
        double err;
        char desc[1024];
        rx_draw(&p);
        nn = rx_numel(&p, N_IN + p.n_ops - 1);
        for (k = 0; k < N_IN; k++)
            for (i = 0; i < rx_numel(&p, k); i++) in[k][i] = (double)(float)t_uniform(-1.5, 1.5);
        for (i = 0; i < nn; i++) w[i] = (double)(float)t_uniform(-1, 1);
        rx_describe(&p, desc, sizeof desc);
        r = rx_run(e->ctx, &p, in, w);
        if (!r.ok) {
            T_CHECK(0, "program %d (%s) did not run", prog_i, desc);
            rx_result_free(&r);
            break;
        }
        programs++;
        ops += p.n_ops;
        rx_eval(&p, in, vals);
        err = t_relerr(r.out, vals[N_IN + p.n_ops - 1], nn);
        if (err > worst_fwd) worst_fwd = err;
        T_CHECK(err <= RX_TOL, "program %d (%s): forward relative error %.3g > %.1g", prog_i, desc, err, RX_TOL);
        for (k = 0; k < N_IN; k++) { /* central differences of the interpreter, element by element */
            for (i = 0; i < rx_numel(&p, k); i++) {
                double x0 = in[k][i], h = 1e-6 * (fabs(x0) > 1 ? fabs(x0) : 1), lp, lm;
                in[k][i] = x0 + h;
                lp = rx_loss(&p, in, vals, w);
                in[k][i] = x0 - h;
                lm = rx_loss(&p, in, vals, w);
                in[k][i] = x0;
                fd[i] = (lp - lm) / (2 * h);
            }
            err = t_relerr(r.grad[k], fd, rx_numel(&p, k));
            if (err > worst_grad) worst_grad = err;
            T_CHECK(err <= RX_TOL, "program %d (%s): d/d(x%d) relative error %.3g > %.1g", prog_i, desc, k, err, RX_TOL);
        }
        if (e->cpu) {
            rc = rx_run(e->cpu, &p, in, w);
            if (rc.ok) {
                err = t_relerr(r.out, rc.out, nn);
                for (k = 0; k < N_IN; k++) {
                    double eg = t_relerr(r.grad[k], rc.grad[k], rx_numel(&p, k));
                    if (eg > err) err = eg;
                }
                if (err > worst_par) worst_par = err;
                T_CHECK(err <= RX_TOL, "program %d (%s): OpenCL vs CPU differ by %.3g", prog_i, desc, err);
            }
            rx_result_free(&rc);
        }
        rx_result_free(&r);
    }
    if (e->cpu)
        printf("        %d programs, %d ops: worst relative error forward %.2g, gradient %.2g, OpenCL vs CPU %.2g\n",
               programs, ops, worst_fwd, worst_grad, worst_par);
    else
        printf("        %d programs, %d ops: worst relative error forward %.2g, gradient %.2g\n", programs, ops, worst_fwd,
               worst_grad);
    for (k = 0; k < N_IN; k++) free(in[k]);
    for (k = 0; k < MAX_VALS; k++) free(vals[k]);
    free(w);
    free(fd);
    t_end();
}

void suite_randexpr(const t_env *e) { test_random_expressions(e); }
