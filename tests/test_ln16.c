/* Layer norm on 16-bit storage (issue 20): nn_layer_norm of a bf16 or f16 x writes y of
   that dtype and its gradient dx of that dtype; the statistics, every sum, gamma, beta and
   their gradients are float32 (src/ops/norm.c's CPU bodies widen around src/cpu/norm.c's
   float32 loops; kernels/norm.cl built with NN_STORE_BF16 / _F16). Under a precision policy
   a float32 x is converted to the policy's type first, so the norm's output is 16-bit.

   The reference is the float32 layer norm, on the same backend, of x rounded to the type,
   with an upstream gradient that the type holds exactly. Then the 16-bit norm runs the same
   loops and kernels in the same order on the same float32 values, so y and dx are the
   float32 ones rounded, and dgamma, dbeta the float32 ones, bit for bit. */
#include "test.h"
#include <math.h>
#include <string.h>

typedef struct ln16_case {
    int rows, C, beta; /* x [rows, C], normalised over C; beta 0: no bias */
} ln16_case;

/* y, dx, dgamma, dbeta (float32 reads) of the layer norm of x in storage d; loss sum(y * wl) */
static int ln16_run(nn_context *ctx, nn_dtype d, const ln16_case *c, const float *xv, const float *gv, const float *bv,
                    const float *wl, float *y, float *dx, float *dg, float *db) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, ga, be = NN_NONE, l, yt;
    long n = (long)c->rows * c->C;
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(c->rows, c->C));
    ga = nn_input(g, "gamma", NN_F32, nn_shape1(c->C));
    nn_graph_requires_grad(g, x);
    nn_graph_requires_grad(g, ga);
    if (c->beta) {
        be = nn_input(g, "beta", NN_F32, nn_shape1(c->C));
        nn_graph_requires_grad(g, be);
    }
    if (d == NN_F32)
        yt = nn_layer_norm(g, x, 1, ga, be, NULL);
    else
        yt = nn_to_dtype(g, nn_layer_norm(g, nn_to_dtype(g, x, d), 1, ga, be, NULL), NN_F32);
    if (!T_CHECK(yt.id >= 0, "%s layer norm: %s", d == NN_F32 ? "f32" : t_name16(d), nn_context_last_error(ctx))) goto done;
    l = nn_input(g, "wl", NN_F32, nn_shape2(c->rows, c->C));
    nn_graph_output(g, yt);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, yt, l));
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, xv, n * sizeof(float)), ctx) || !T_OK(nn_tensor_write(g, ga, gv, c->C * sizeof(float)), ctx) ||
        (c->beta && !T_OK(nn_tensor_write(g, be, bv, c->C * sizeof(float)), ctx)) ||
        !T_OK(nn_tensor_write(g, l, wl, n * sizeof(float)), ctx) || !T_OK(nn_graph_step(g), ctx))
        goto done;
    ok = T_OK(nn_tensor_read(g, yt, y, n * sizeof(float)), ctx) && T_OK(nn_tensor_read(g, nn_graph_grad(g, x), dx, n * sizeof(float)), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_grad(g, ga), dg, c->C * sizeof(float)), ctx) &&
         (!c->beta || T_OK(nn_tensor_read(g, nn_graph_grad(g, be), db, c->C * sizeof(float)), ctx));
done:
    nn_graph_destroy(g);
    return ok;
}

/* got[i] must be want[i], rounded to d unless d is NN_F32, bit for bit */
static int ln16_same(const char *name, const char *what, nn_dtype d, const float *got, const float *want, long n) {
    long i;
    for (i = 0; i < n; i++) {
        float r = d == NN_F32 ? want[i] : (float)t_rnd16(d, want[i]);
        if (memcmp(&got[i], &r, sizeof r) != 0)
            return T_CHECK(0, "%s %s[%ld] = %.9g, the float32 norm's%s %.9g (float32 %.9g)", name, what, i, (double)got[i],
                           d == NN_F32 ? "" : " rounded", (double)r, (double)want[i]);
    }
    return 1;
}

static void ln16_vs_f32(const t_env *e) {
    static const ln16_case cs[] = {{1, 1, 1}, {15, 40, 1}, {7, 33, 0}, {4, 260, 1}}; /* a row of 1; odd C; C over a work-group */
    static float buf[12 * 4 * 260];
    int t, k;
    if (!t_begin(e, "ln16: layer_norm on bf16/f16: y and dx are float32's rounded, dgamma dbeta float32's, bit for bit")) return;
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        for (k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
            const ln16_case *c = &cs[k];
            long n = (long)c->rows * c->C, i;
            float *xv = buf, *wl = xv + n, *gv = wl + n, *bv = gv + c->C, *y32 = bv + c->C, *dx32 = y32 + n, *dg32 = dx32 + n,
                  *db32 = dg32 + c->C, *y = db32 + c->C, *dx = y + n, *dg = dx + n, *db = dg + c->C;
            char name[64];
            for (i = 0; i < n; i++) { /* values the type holds: the reference sees the 16-bit inputs */
                xv[i] = (float)t_rnd16(d, 3.0 * sin(0.37 * (double)i + k) + 0.5 * (double)(i % 5));
                wl[i] = (float)t_rnd16(d, cos(0.91 * (double)i + t));
            }
            for (i = 0; i < c->C; i++) {
                gv[i] = (float)(1.0 + 0.25 * sin(1.3 * (double)i));
                bv[i] = (float)(0.1 * cos(0.7 * (double)i));
                db[i] = db32[i] = 0.0f;
            }
            snprintf(name, sizeof name, "%s [%d, %d]%s", t_name16(d), c->rows, c->C, c->beta ? "" : " no bias");
            if (!ln16_run(e->ctx, NN_F32, c, xv, gv, bv, wl, y32, dx32, dg32, db32) || !ln16_run(e->ctx, d, c, xv, gv, bv, wl, y, dx, dg, db))
                goto done;
            if (!ln16_same(name, "y", d, y, y32, n) || !ln16_same(name, "dx", d, dx, dx32, n) ||
                !ln16_same(name, "dgamma", NN_F32, dg, dg32, c->C) || !ln16_same(name, "dbeta", NN_F32, db, db32, c->C))
                goto done;
        }
    }
done:
    t_end();
}

/* ---- group norm on 16-bit storage with several groups and long channels (a test hook,
   t_norm_half_groups: the API runs group norm in float32): kernels/norm.cl's norm_runs_*
   (CPU devices, S >= 16: whole float16s and a tail) and the strided kernels (gpu-tuning)
   built for 16-bit storage, the CPU bodies' widening. y and dx the float32 group norm's
   rounded, dgamma and dbeta its bits; y, dgamma, dbeta also against doubles. ---- */
typedef struct gn16_case {
    int N, C, S, G;
} gn16_case;

static int gn16_run(nn_context *ctx, nn_dtype d, const gn16_case *c, const float *xv, const float *gv, const float *bv,
                    const float *wl, float *y, float *dx, float *dg, float *db) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, ga, be, l, yt;
    long n = (long)c->N * c->C * c->S;
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape3(c->N, c->C, c->S));
    ga = nn_input(g, "gamma", NN_F32, nn_shape1(c->C));
    be = nn_input(g, "beta", NN_F32, nn_shape1(c->C));
    nn_graph_requires_grad(g, x);
    nn_graph_requires_grad(g, ga);
    nn_graph_requires_grad(g, be);
    if (d == NN_F32)
        yt = nn_group_norm(g, x, c->G, ga, be, NULL);
    else {
        t_norm_half_groups(1);
        yt = nn_group_norm(g, nn_to_dtype(g, x, d), c->G, ga, be, NULL);
        t_norm_half_groups(0);
        if (yt.id >= 0 && !T_CHECK(t_shape(g, yt).ndim == 3, "no shape")) goto done;
        if (yt.id >= 0) {
            nn_dtype got = NN_F32;
            nn_tensor_dtype(g, yt, &got);
            if (!T_CHECK(got == d, "the 16-bit group norm's y is not %s", t_name16(d))) goto done;
        }
        yt = nn_to_dtype(g, yt, NN_F32);
    }
    if (!T_CHECK(yt.id >= 0, "%s group norm: %s", d == NN_F32 ? "f32" : t_name16(d), nn_context_last_error(ctx))) goto done;
    l = nn_input(g, "wl", NN_F32, nn_shape3(c->N, c->C, c->S));
    nn_graph_output(g, yt);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, yt, l));
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, xv, n * sizeof(float)), ctx) || !T_OK(nn_tensor_write(g, ga, gv, c->C * sizeof(float)), ctx) ||
        !T_OK(nn_tensor_write(g, be, bv, c->C * sizeof(float)), ctx) || !T_OK(nn_tensor_write(g, l, wl, n * sizeof(float)), ctx) ||
        !T_OK(nn_graph_step(g), ctx))
        goto done;
    ok = T_OK(nn_tensor_read(g, yt, y, n * sizeof(float)), ctx) && T_OK(nn_tensor_read(g, nn_graph_grad(g, x), dx, n * sizeof(float)), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_grad(g, ga), dg, c->C * sizeof(float)), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_grad(g, be), db, c->C * sizeof(float)), ctx);
done:
    t_norm_half_groups(0);
    nn_graph_destroy(g);
    return ok;
}

/* y, dgamma, dbeta of the group norm in double (eps 1e-5, biased variance) */
static void gn16_ref(const gn16_case *c, const float *xv, const float *gv, const float *bv, const float *wl, double *y, double *dg,
                     double *db) {
    int a, r, ch, s, Cg = c->C / c->G;
    for (ch = 0; ch < c->C; ch++) dg[ch] = db[ch] = 0;
    for (a = 0; a < c->N; a++)
        for (r = 0; r < c->G; r++) {
            double m = 0, v = 0, rs;
            long base = ((long)a * c->C + (long)r * Cg) * c->S, n = (long)Cg * c->S, i;
            for (i = 0; i < n; i++) m += xv[base + i];
            m /= (double)n;
            for (i = 0; i < n; i++) v += (xv[base + i] - m) * (xv[base + i] - m);
            rs = 1.0 / sqrt(v / (double)n + 1e-5);
            for (ch = r * Cg; ch < (r + 1) * Cg; ch++)
                for (s = 0; s < c->S; s++) {
                    long at = ((long)a * c->C + ch) * c->S + s;
                    double xh = (xv[at] - m) * rs;
                    y[at] = xh * gv[ch] + bv[ch];
                    dg[ch] += wl[at] * xh;
                    db[ch] += wl[at];
                }
        }
}

static void gn16_vs_f32(const t_env *e) {
    /* S 37: two whole float16s and a tail of 5; 17: one and 1; 3 groups of 2 channels, 4 of 2, 5 of 1 */
    static const gn16_case cs[] = {{2, 6, 37, 3}, {3, 8, 17, 4}, {1, 5, 33, 5}};
    enum { MAXN = 3 * 8 * 37 };
    static float buf[8 * MAXN + 8 * 8];
    static double yr[MAXN], dgr[8], dbr[8], got[MAXN];
    int t, k;
    long i;
    if (!t_begin(e, "ln16: group_norm on bf16/f16 (a hook), several groups, channels of 16 and more: float32's bits, and doubles"))
        return;
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        for (k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
            const gn16_case *c = &cs[k];
            long n = (long)c->N * c->C * c->S;
            float *xv = buf, *wl = xv + n, *gv = wl + n, *bv = gv + c->C, *y32 = bv + c->C, *dx32 = y32 + n, *dg32 = dx32 + n,
                  *db32 = dg32 + c->C, *y = db32 + c->C, *dx = y + n, *dg = dx + n, *db = dg + c->C;
            double gotg[8], gotb[8], tol = d == NN_BF16 ? 1.6e-2 : 2e-3;
            char name[64];
            for (i = 0; i < n; i++) {
                xv[i] = (float)t_rnd16(d, 2.0 * sin(0.29 * (double)i + k) + 0.3 * (double)(i % 7));
                wl[i] = (float)t_rnd16(d, cos(0.83 * (double)i + t));
            }
            for (i = 0; i < c->C; i++) {
                gv[i] = (float)(1.0 + 0.25 * sin(1.7 * (double)i));
                bv[i] = (float)(0.1 * cos(0.5 * (double)i));
            }
            snprintf(name, sizeof name, "%s [%d, %d, %d] G=%d", t_name16(d), c->N, c->C, c->S, c->G);
            if (!gn16_run(e->ctx, NN_F32, c, xv, gv, bv, wl, y32, dx32, dg32, db32) || !gn16_run(e->ctx, d, c, xv, gv, bv, wl, y, dx, dg, db))
                goto done;
            if (!ln16_same(name, "y", d, y, y32, n) || !ln16_same(name, "dx", d, dx, dx32, n) ||
                !ln16_same(name, "dgamma", NN_F32, dg, dg32, c->C) || !ln16_same(name, "dbeta", NN_F32, db, db32, c->C))
                goto done;
            gn16_ref(c, xv, gv, bv, wl, yr, dgr, dbr);
            for (i = 0; i < n; i++) got[i] = y[i];
            for (i = 0; i < c->C; i++) gotg[i] = dg[i], gotb[i] = db[i];
            T_CHECK(t_relerr(got, yr, n) < tol, "%s y: relative error %g against doubles", name, t_relerr(got, yr, n));
            T_CHECK(t_relerr(gotg, dgr, c->C) < 1e-4, "%s dgamma: relative error %g", name, t_relerr(gotg, dgr, c->C));
            T_CHECK(t_relerr(gotb, dbr, c->C) < 1e-4, "%s dbeta: relative error %g", name, t_relerr(gotb, dbr, c->C));
        }
    }
done:
    t_end();
}

void suite_ln16(const t_env *e) {
    ln16_vs_f32(e);
    gn16_vs_f32(e);
}
