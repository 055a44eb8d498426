/* The softmax family (src/ops/softmax.c): softmax and log-softmax over the last dim through
   the op checker (tests/op_check.c) at odd shapes against a double reference; their NaN and
   infinity propagation and their refusals below. Tolerances are op_check.c's. */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static nn_tensor b_softmax(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_softmax(g, in[0], -1); }
static nn_tensor b_log_softmax(nn_graph *g, const nn_tensor *in, const spec *s) { (void)s; return nn_log_softmax(g, in[0], -1); }
static void r_softmax_any(const spec *s, double *const *in, double *out, int log_space) {
    long C = s->out.dim[s->out.ndim - 1], rows = numel(s->out) / C, r, c;
    for (r = 0; r < rows; r++) {
        const double *x = in[0] + r * C;
        double m = x[0], sum = 0;
        for (c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
        for (c = 0; c < C; c++) sum += exp(x[c] - m);
        for (c = 0; c < C; c++) out[r * C + c] = log_space ? x[c] - m - log(sum) : exp(x[c] - m) / sum;
    }
}
static void r_softmax(const spec *s, double *const *in, double *out) { r_softmax_any(s, in, out, 0); }
static void r_log_softmax(const spec *s, double *const *in, double *out) { r_softmax_any(s, in, out, 1); }

static void softmax_cases(const t_env *e) {
    static const t_odd rows[] = {{"softmax", b_softmax, r_softmax, 0, 0}, {"log_softmax", b_log_softmax, r_log_softmax, 0, 0}};
    t_odd_cases(e, rows, 2);
}

/* ==== NaN and infinity propagation (the op checker's expected-value mode: PyTorch's
   NaN, +-inf and values; the rules in tests/op_check.c) ==== */

/* ---- softmax and log-softmax over rows of 5 ---- */


static void nanprop_softmax(const t_env *e) {
    enum { R = 7, C = 5 };
    /* a finite row; NaN in the middle; NaN first; +inf; -inf (a probability 0, finite
       elsewhere); all -inf (NaN: -inf - -inf); +inf and -inf */
    static const double x[R * C] = {
        0.5, -1, 2, 0.25, 1,       0.5, -1, NAN, 0.25, 1,       NAN, -1, 2, 0.25, 1,
        0.5, INFINITY, 2, 0.25, 1, 0.5, -1, -INFINITY, 0.25, 1, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
        INFINITY, -1, -INFINITY, 0.25, 1};
    double w[R * C], y[R * C], ly[R * C], dy[R * C], dly[R * C];
    int r, c, lg;
    np_fill(w, R * C, 0.5, 2, 71); /* dy, so that the gradients are not all 0 */
    for (r = 0; r < R; r++) {
        const double *xr = x + r * C;
        int poison = 0;
        double m = -INFINITY, s = 0, sw = 0, swy = 0;
        for (c = 0; c < C; c++) {
            poison |= isnan(xr[c]) || xr[c] == INFINITY; /* exp(inf - inf) */
            if (xr[c] > m) m = xr[c];
        }
        poison |= m == -INFINITY; /* a row of -inf: -inf - -inf */
        for (c = 0; c < C; c++) s += exp(xr[c] - m);
        for (c = 0; c < C; c++) {
            y[r * C + c] = poison ? NAN : exp(xr[c] - m) / s;
            ly[r * C + c] = poison ? NAN : xr[c] - m - log(s);
            sw += w[r * C + c];
            swy += w[r * C + c] * y[r * C + c];
        }
        for (c = 0; c < C; c++) { /* PyTorch's backward formulas */
            dy[r * C + c] = y[r * C + c] * (w[r * C + c] - swy);
            dly[r * C + c] = w[r * C + c] - exp(ly[r * C + c]) * sw;
        }
    }
    for (lg = 0; lg < 2; lg++) {
        np_case k;
        np_init(&k, lg ? "log_softmax rows with NaN, +-inf" : "softmax rows with NaN, +-inf", lg ? b_log_softmax : b_softmax, NULL);
        np_in(&k, nn_shape2(R, C), x, lg ? dly : dy);
        k.y_expect = lg ? ly : y;
        k.w = w;
        np_run(e, &k);
    }
}

/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- softmax ---- */

B(s_softmax_int, nn_softmax(g, I(g, S2(2, 3)), -1))
B(s_logsoftmax_id, nn_log_softmax(g, T(99), -1))

static const bad_row softmax_bad[] = {
    {"softmax", "softmax of int32", s_softmax_int, R_SHAPE, "nn_softmax|int32", 0},
    {"softmax", "log_softmax of id 99", s_logsoftmax_id, R_INV, "nn_log_softmax|not a tensor of this graph", 0},
};

void suite_softmax(const t_env *e) {
    T_RUN(e, softmax_cases, nanprop_softmax);
    t_bad_rows(e, softmax_bad, (int)(sizeof softmax_bad / sizeof softmax_bad[0]));
}
