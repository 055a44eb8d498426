/* The random ops (nn_rand, nn_randn, nn_randint, nn_bernoulli, nn_gaussian_noise,
   nn_alpha_dropout) against a reference written here: an independent Philox4x32-10 and
   the sampling formulas in double precision (Box-Muller with libm's log, sqrt and cos).

   - reference: every element of steps 1 and 2 at 1, 3, 7, 33, 127, 100003 elements: bit
     for bit for rand, randint and bernoulli; randn within 4e-6 absolute (|z| <= 5.8, float
     against double: 9e-7 seen), gaussian noise within 4e-6 of |x| + std, alpha dropout
     within 1e-6 of a |x| + b (its drop value relative), its gradient (read at step 2) 1e-6
     relative, gaussian noise's bit for bit (dy);
   - parity: on an OpenCL device the same graphs on the CPU backend give the same bits
     (memcmp) for every output and gradient of those runs;
   - statistics on 2^20 samples, bounds a correct generator exceeds with probability about
     1e-6: means and variances within 5 standard errors, chi-square over 100 bins (rand,
     df 99: < 180.8) and over 17 values (randint, df 16: < 58.3), Kolmogorov-Smirnov for
     randn (sqrt(n) D < 2.7), bernoulli's frequencies per p within 5 standard errors, alpha
     dropout's output mean 0 and variance 1 for N(0, 1) input (its purpose), on the CPU
     backend only: they test the Philox stream and the sampling formulas, which every
     backend shares, and an OpenCL device's draws are held to the same reference (bit for
     bit, or within the tolerances above, at up to 100003 elements) by the cases above;
   - steps and seeds: each step draws anew, two graphs with the same seed draw the same
     sequence, another seed another one, nn_graph_forward repeats the last step's draw;
   - eval graphs: gaussian noise and alpha dropout are the identity;
   - gradients through the op checker (tests/op_check.c): finite differences of the
     reference with the mask and noise fixed by (seed, key, step);
   - threads: the CPU backend gives the same bits with 1, 3 and 8 threads;
   - errors: bad arguments name the op; p outside [0, 1] in nn_bernoulli is reported. */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEED 1234u
#define ALPHA 1.7580993408473766
#define RI_LOW (-1000)
#define RI_HIGH 2000000011LL
#define NOISE_STD 0.75f
#define ALPHA_P 0.3f

enum { K_RAND, K_RANDN, K_RANDINT, K_BERN, K_NOISE, K_ALPHA, K_COUNT };
static const char *const kind_name[K_COUNT] = {"rand", "randn", "randint", "bernoulli", "gaussian_noise", "alpha_dropout"};

/* ---- the reference (Philox: t_philox, tests/nn_test.c) ---- */

/* the words of element i of node key at a step under a seed */
static void words(unsigned w[4], unsigned long long seed, int key, unsigned long long step, long i) {
    w[0] = (unsigned)i;
    w[1] = (unsigned)key;
    w[2] = (unsigned)step;
    w[3] = (unsigned)(step >> 32);
    t_philox(w, (unsigned)seed, (unsigned)(seed >> 32));
}

static double ref_uniform(unsigned r) { return (double)(r >> 8) / 16777216.0; }
static double ref_normal(unsigned r0, unsigned r1) {
    double u1 = (double)((r0 >> 8) + 1) / 16777216.0, u2 = (double)(r1 >> 8) / 16777216.0;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}
static double alpha_a(double p) { return 1.0 / sqrt((ALPHA * ALPHA * p + 1.0) * (1.0 - p)); }

/* ---- running a case ---- */

typedef struct rrun {
    float *y[2];  /* the output after steps 1 and 2 (int32 bits for randint) */
    float *dx;    /* d(sum(y * w))/dx after step 2 (gaussian noise, alpha dropout) */
    int key;      /* the op's node id */
    int ok;
} rrun;

static void rrun_free(rrun *r) {
    free(r->y[0]);
    free(r->y[1]);
    free(r->dx);
    memset(r, 0, sizeof *r);
}

/* The op of kind on n elements; x: its input (p for bernoulli), w: the loss weights. */
static nn_tensor build_kind(nn_graph *g, int kind, long n, nn_tensor *x) {
    *x = NN_NONE;
    switch (kind) {
    case K_RAND: return nn_rand(g, nn_shape1(n));
    case K_RANDN: return nn_randn(g, nn_shape1(n));
    case K_RANDINT: return nn_randint(g, RI_LOW, RI_HIGH, nn_shape1(n));
    case K_BERN: *x = nn_input(g, "p", NN_F32, nn_shape1(n)); return nn_bernoulli(g, *x);
    case K_NOISE: *x = nn_input(g, "x", NN_F32, nn_shape1(n)); return nn_gaussian_noise(g, *x, NOISE_STD);
    default: *x = nn_input(g, "x", NN_F32, nn_shape1(n)); return nn_alpha_dropout(g, *x, ALPHA_P);
    }
}

static rrun run_kind(nn_context *ctx, int kind, long n, const float *xin, const float *win) {
    rrun res;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y, w = NN_NONE;
    int s, diff = kind == K_NOISE || kind == K_ALPHA;
    memset(&res, 0, sizeof res);
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
    gd.seed = SEED;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return res;
    y = build_kind(g, kind, n, &x);
    res.key = y.id;
    nn_graph_output(g, y);
    if (diff) {
        nn_graph_requires_grad(g, x);
        w = nn_input(g, "w", NN_F32, nn_shape1(n));
        cd.loss = nn_sum(g, nn_mul(g, y, w));
    }
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (t_survey_graph(g)) goto done; /* NN_TEST_SURVEY: compiled, not run */
    if (x.id > 0 && !T_OK(nn_tensor_write(g, x, xin, (size_t)n * 4), ctx)) goto done;
    if (diff && !T_OK(nn_tensor_write(g, w, win, (size_t)n * 4), ctx)) goto done;
    for (s = 0; s < 2; s++) {
        res.y[s] = (float *)malloc((size_t)n * 4);
        if (!T_OK(nn_graph_step(g), ctx) || !T_OK(nn_tensor_read(g, y, res.y[s], (size_t)n * 4), ctx)) goto done;
    }
    if (diff) {
        res.dx = (float *)malloc((size_t)n * 4);
        if (!T_OK(nn_tensor_read(g, nn_graph_grad(g, x), res.dx, (size_t)n * 4), ctx)) goto done;
    }
    res.ok = 1;
done:
    nn_graph_destroy(g);
    return res;
}

/* Step `step`'s output (and gradient, when dx) against the reference; one failure per kind
   of mismatch, naming the first element. */
static void check_ref(int kind, long n, int key, unsigned long long step, const float *xin, const float *win,
                      const float *y, const float *dx, const char *what) {
    long i;
    double worst = 0, gworst = 0;
    long bad = -1, at = 0, gat = 0;
    double a = alpha_a(ALPHA_P);
    for (i = 0; i < n; i++) {
        unsigned r[4];
        double ref, got = y[i], e;
        words(r, SEED, key, step, i);
        switch (kind) {
        case K_RAND:
            if ((double)y[i] != ref_uniform(r[0]) && bad < 0) bad = i;
            break;
        case K_RANDINT: {
            int32_t v;
            unsigned long long range = (unsigned long long)(RI_HIGH - RI_LOW), u = ((unsigned long long)r[1] << 32) | r[0];
            memcpy(&v, &y[i], 4);
            if ((long long)v != RI_LOW + (long long)(u % range) && bad < 0) bad = i;
            break;
        }
        case K_BERN:
            if ((double)y[i] != (ref_uniform(r[0]) < (double)xin[i] ? 1.0 : 0.0) && bad < 0) bad = i;
            break;
        case K_RANDN:
            e = fabs(got - ref_normal(r[0], r[1]));
            if (e > worst) worst = e, at = i;
            break;
        case K_NOISE:
            ref = (double)xin[i] + (double)NOISE_STD * ref_normal(r[0], r[1]);
            e = fabs(got - ref) / (fabs((double)xin[i]) + (double)NOISE_STD); /* the terms' scale */
            if (e > worst) worst = e, at = i;
            if (dx && (double)dx[i] != (double)win[i] && bad < 0) bad = i; /* the gradient is 1: dx = w */
            break;
        default: {
            int keep = ref_uniform(r[0]) >= (double)ALPHA_P;
            ref = keep ? a * xin[i] + ALPHA * a * ALPHA_P : ALPHA * a * ALPHA_P - ALPHA * a;
            e = fabs(got - ref) / (keep ? a * fabs((double)xin[i]) + ALPHA * a * ALPHA_P : fabs(ref)); /* the terms' scale */
            if (e > worst) worst = e, at = i;
            if (dx) {
                ref = keep ? a * win[i] : 0.0;
                e = fabs(dx[i] - ref) / (fabs(ref) + 1e-3);
                if (e > gworst) gworst = e, gat = i;
            }
        }
        }
    }
    T_CHECK(bad < 0, "%s %s: element %ld differs from the reference", kind_name[kind], what, bad);
    if (kind == K_RANDN) T_CHECK(worst <= 4e-6, "%s %s: |z - reference| = %.3g at %ld > 4e-6", kind_name[kind], what, worst, at);
    if (kind == K_NOISE)
        T_CHECK(worst <= 4e-6, "%s %s: error %.3g at %ld > 4e-6 (|x| + std)", kind_name[kind], what, worst, at);
    if (kind == K_ALPHA)
        T_CHECK(worst <= 1e-6, "%s %s: error %.3g at %ld > 1e-6 (a |x| + b)", kind_name[kind], what, worst, at);
    if (getenv("NN_TEST_RANDOM_ERR")) printf("  %s %s: worst %.3g\n", kind_name[kind], what, worst);
    if (kind == K_ALPHA && dx)
        T_CHECK(gworst <= 1e-6, "%s %s gradient: relative error %.3g at %ld > 1e-6", kind_name[kind], what, gworst, gat);
}

/* Every kind at odd sizes: the reference at steps 1 and 2, a new draw at step 2, and on an
   OpenCL device the CPU backend's bits. */
static void suite_reference(const t_env *e) {
    static const long sizes[] = {1, 3, 7, 33, 127, 100003};
    int kind, j;
    for (kind = 0; kind < K_COUNT; kind++)
        for (j = 0; j < (int)(sizeof sizes / sizeof sizes[0]); j++) {
            long n = sizes[j], i, same = 0;
            char name[128];
            float *x, *w;
            rrun r, rc;
            snprintf(name, sizeof name, "random: %s [%ld] reference%s", kind_name[kind], n, e->cpu ? ", CPU bits" : "");
            if (!t_begin_op(e, name)) continue; /* a reference check, as the op checker's */
            t_seed(77 + (unsigned long long)n * 13 + (unsigned long long)kind);
            x = (float *)malloc((size_t)n * 4);
            w = (float *)malloc((size_t)n * 4);
            for (i = 0; i < n; i++) {
                x[i] = kind == K_BERN ? (float)(i % 5 == 0 ? (i % 10 == 0 ? 0.0 : 1.0) : t_uniform(0, 1))
                                      : (float)t_uniform(-2, 2);
                w[i] = (float)t_uniform(-1, 1);
            }
            r = run_kind(e->ctx, kind, n, x, w);
            if (r.ok) {
                check_ref(kind, n, r.key, 1, x, w, r.y[0], NULL, "step 1");
                check_ref(kind, n, r.key, 2, x, w, r.y[1], r.dx, "step 2");
                for (i = 0; i < n; i++) same += memcmp(&r.y[0][i], &r.y[1][i], 4) == 0;
                /* a new draw: values repeat by chance only (alpha dropout: where the mask
                   repeats, p^2 + (1 - p)^2 = 0.58 of them; bernoulli: 0.73 with these p) */
                if (n >= (kind == K_BERN ? 127 : 33))
                    T_CHECK(same <= (kind == K_BERN ? n * 9 / 10 : kind == K_ALPHA ? n * 3 / 4 : n / 8),
                            "%s: step 2 repeats %ld of step 1's %ld values", kind_name[kind], same, n);
                if (e->cpu) {
                    rc = run_kind(e->cpu, kind, n, x, w);
                    if (rc.ok) {
                        T_CHECK(rc.key == r.key, "the CPU graph's key differs");
                        T_CHECK(memcmp(r.y[0], rc.y[0], (size_t)n * 4) == 0, "%s step 1: OpenCL and CPU bits differ",
                                kind_name[kind]);
                        T_CHECK(memcmp(r.y[1], rc.y[1], (size_t)n * 4) == 0, "%s step 2: OpenCL and CPU bits differ",
                                kind_name[kind]);
                        if (r.dx)
                            T_CHECK(memcmp(r.dx, rc.dx, (size_t)n * 4) == 0, "%s gradient: OpenCL and CPU bits differ",
                                    kind_name[kind]);
                    }
                    rrun_free(&rc);
                }
            }
            rrun_free(&r);
            free(x);
            free(w);
            t_end();
        }
}

/* ---- statistics ---- */

#define NSTAT (1L << 20)

/* One forward-only graph: out = the op on NSTAT elements (x given for bernoulli, noise,
   alpha dropout), one step; the output as floats (randint's converted). */
static int sample(const t_env *e, int kind, const float *xin, float *out, unsigned long long seed) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y;
    int ok = 0;
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
    gd.seed = seed;
    if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) return 0;
    y = build_kind(g, kind, NSTAT, &x);
    nn_graph_output(g, y);
    if (T_OK(nn_graph_compile(g, &cd), e->ctx) && (x.id == 0 || T_OK(nn_tensor_write(g, x, xin, NSTAT * 4), e->ctx)) &&
        T_OK(nn_graph_step(g), e->ctx) && T_OK(nn_tensor_read(g, y, out, NSTAT * 4), e->ctx))
        ok = 1;
    nn_graph_destroy(g);
    return ok;
}

static void moments(const float *v, long n, double *mean, double *var) {
    double s = 0, s2 = 0;
    long i;
    for (i = 0; i < n; i++) s += v[i];
    *mean = s / n;
    for (i = 0; i < n; i++) s2 += (v[i] - *mean) * (v[i] - *mean);
    *var = s2 / (n - 1);
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static void suite_stats(const t_env *e) {
    float *v = (float *)malloc(NSTAT * 4), *x = (float *)malloc(NSTAT * 4);
    double mean, var, n = (double)NSTAT, chi;
    long i, k;
    if (t_begin(e, "random: rand statistics (2^20 samples)")) {
        long bins[100];
        memset(bins, 0, sizeof bins);
        if (sample(e, K_RAND, NULL, v, 5)) {
            for (i = 0; i < NSTAT; i++) {
                T_CHECK(v[i] >= 0.0f && v[i] < 1.0f, "rand: %g outside [0, 1)", v[i]);
                bins[(int)(v[i] * 100)]++;
                if (!(v[i] >= 0.0f && v[i] < 1.0f)) break;
            }
            moments(v, NSTAT, &mean, &var);
            T_CHECK(fabs(mean - 0.5) < 5 * sqrt(1.0 / 12 / n), "rand: mean %.6f", mean);
            T_CHECK(fabs(var - 1.0 / 12) < 5 * sqrt(1.0 / 180 / n), "rand: variance %.6f (1/12 = 0.083333)", var); /* Var(s^2) = 1/(180 n) */
            for (chi = 0, k = 0; k < 100; k++) chi += (bins[k] - n / 100) * (bins[k] - n / 100) / (n / 100);
            T_CHECK(chi < 180.8, "rand: chi-square %.1f over 100 bins >= 180.8 (df 99, tail 1e-6)", chi);
        }
        t_end();
    }
    if (t_begin(e, "random: randn statistics (2^20 samples)")) {
        if (sample(e, K_RANDN, NULL, v, 6)) {
            double d = 0, m4 = 0;
            long tail3 = 0;
            moments(v, NSTAT, &mean, &var);
            for (i = 0; i < NSTAT; i++) {
                m4 += (double)v[i] * v[i] * v[i] * v[i];
                tail3 += fabs(v[i]) > 3.0f;
            }
            m4 /= n;
            T_CHECK(fabs(mean) < 5 / sqrt(n), "randn: mean %.6f", mean);
            T_CHECK(fabs(var - 1) < 5 * sqrt(2 / n), "randn: variance %.6f", var);
            T_CHECK(fabs(m4 - 3) < 5 * sqrt(96 / n), "randn: fourth moment %.4f (3)", m4); /* Var(z^4) = 105 - 9 */
            T_CHECK(fabs(tail3 - n * 0.0026997961) < 5 * sqrt(n * 0.0027), "randn: %ld beyond 3 sigma, expected %.0f", tail3,
                    n * 0.0026997961);
            qsort(v, NSTAT, 4, cmp_float);
            for (i = 0; i < NSTAT; i++) {
                double cdf = 0.5 * erfc(-(double)v[i] / sqrt(2.0)), lo = cdf - (double)i / n, hi = (double)(i + 1) / n - cdf;
                if (lo > d) d = lo;
                if (hi > d) d = hi;
            }
            T_CHECK(sqrt(n) * d < 2.7, "randn: Kolmogorov-Smirnov sqrt(n) D = %.3f >= 2.7 (tail 1e-6)", sqrt(n) * d);
            T_CHECK(v[0] >= -5.78f && v[NSTAT - 1] <= 5.78f, "randn: extremes %g, %g beyond the 5.77 of 24-bit Box-Muller",
                    v[0], v[NSTAT - 1]);
        }
        t_end();
    }
    if (t_begin(e, "random: randint statistics (2^20 samples)")) {
        nn_graph *g = NULL;
        nn_graph_desc gd;
        nn_compile_desc cd;
        nn_tensor small, one, wide;
        int32_t *iv = (int32_t *)malloc(NSTAT * 4);
        long cnt[17];
        memset(&gd, 0, sizeof gd);
        memset(&cd, 0, sizeof cd);
        memset(cnt, 0, sizeof cnt);
        gd.seed = 7;
        if (T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) {
            small = nn_randint(g, -3, 14, nn_shape1(NSTAT));
            one = nn_randint(g, 5, 6, nn_shape2(3, 5));
            wide = nn_randint(g, -2147483647LL - 1, 2147483648LL, nn_shape1(NSTAT));
            nn_graph_output(g, small);
            nn_graph_output(g, one);
            nn_graph_output(g, wide);
            if (T_OK(nn_graph_compile(g, &cd), e->ctx) && T_OK(nn_graph_step(g), e->ctx) &&
                T_OK(nn_tensor_read(g, small, iv, NSTAT * 4), e->ctx)) {
                long out = 0;
                for (i = 0; i < NSTAT; i++) {
                    if (iv[i] < -3 || iv[i] >= 14) out++;
                    else cnt[iv[i] + 3]++;
                }
                T_CHECK(out == 0, "randint [-3, 14): %ld values outside", out);
                for (chi = 0, k = 0; k < 17; k++) chi += (cnt[k] - n / 17) * (cnt[k] - n / 17) / (n / 17);
                T_CHECK(chi < 58.3, "randint [-3, 14): chi-square %.1f over 17 values >= 58.3 (df 16, tail 1e-6)", chi);
                if (T_OK(nn_tensor_read(g, one, iv, 15 * 4), e->ctx))
                    for (i = 0; i < 15; i++) T_CHECK(iv[i] == 5, "randint [5, 6): %d", iv[i]);
                if (T_OK(nn_tensor_read(g, wide, iv, NSTAT * 4), e->ctx)) {
                    double s = 0, sd = 4294967296.0 / sqrt(12.0);
                    long neg = 0;
                    for (i = 0; i < NSTAT; i++) {
                        s += iv[i];
                        neg += iv[i] < 0;
                    }
                    T_CHECK(fabs(s / n + 0.5) < 5 * sd / sqrt(n), "randint over all int32: mean %.1f", s / n);
                    T_CHECK(fabs(neg - n / 2) < 5 * sqrt(n / 4), "randint over all int32: %ld negative of %.0f", neg, n);
                }
            }
        }
        nn_graph_destroy(g);
        free(iv);
        t_end();
    }
    if (t_begin(e, "random: bernoulli frequencies (2^20 samples)")) {
        static const float ps[4] = {0.0f, 1.0f, 0.3f, 0.77f};
        long ones[4] = {0, 0, 0, 0}, tot[4] = {0, 0, 0, 0}, odd = 0;
        for (i = 0; i < NSTAT; i++) x[i] = ps[i % 4];
        if (sample(e, K_BERN, x, v, 8)) {
            for (i = 0; i < NSTAT; i++) {
                ones[i % 4] += v[i] == 1.0f;
                tot[i % 4]++;
                odd += v[i] != 0.0f && v[i] != 1.0f;
            }
            T_CHECK(odd == 0, "bernoulli: %ld values other than 0 and 1", odd);
            T_CHECK(ones[0] == 0 && ones[1] == tot[1], "bernoulli: p = 0 gave %ld ones, p = 1 %ld of %ld", ones[0], ones[1],
                    tot[1]);
            for (k = 2; k < 4; k++) {
                double m = tot[k] * (double)ps[k], sd = sqrt(m * (1 - ps[k]));
                T_CHECK(fabs(ones[k] - m) < 5 * sd, "bernoulli p = %g: %ld ones of %ld", ps[k], ones[k], tot[k]);
            }
        }
        t_end();
    }
    if (t_begin(e, "random: gaussian_noise and alpha_dropout statistics")) {
        /* x ~ N(0, 1) from the reference: the noise adds variance std^2; alpha dropout keeps
           mean 0 and variance 1 and drops a fraction p */
        for (i = 0; i < NSTAT; i++) {
            unsigned r[4];
            words(r, 99, 1, 0, i);
            x[i] = (float)ref_normal(r[0], r[1]);
        }
        if (sample(e, K_NOISE, x, v, 9)) {
            for (i = 0; i < NSTAT; i++) v[i] -= x[i];
            moments(v, NSTAT, &mean, &var);
            T_CHECK(fabs(mean) < 5 * NOISE_STD / sqrt(n), "gaussian_noise: noise mean %.6f", mean);
            T_CHECK(fabs(var / (NOISE_STD * NOISE_STD) - 1) < 5 * sqrt(2 / n), "gaussian_noise: noise variance %.6f (%.4f)",
                    var, NOISE_STD * NOISE_STD);
        }
        if (sample(e, K_ALPHA, x, v, 10)) {
            double dv = ALPHA * alpha_a(ALPHA_P) * ALPHA_P - ALPHA * alpha_a(ALPHA_P);
            long drops = 0;
            moments(v, NSTAT, &mean, &var);
            for (i = 0; i < NSTAT; i++) drops += fabs(v[i] - dv) < 1e-6;
            T_CHECK(fabs(mean) < 6 / sqrt(n), "alpha_dropout: mean %.6f (0)", mean);
            T_CHECK(fabs(var - 1) < 6 * sqrt(3 / n), "alpha_dropout: variance %.6f (1)", var);
            T_CHECK(fabs(drops - n * ALPHA_P) < 5 * sqrt(n * ALPHA_P * (1 - ALPHA_P)), "alpha_dropout: %ld dropped of %.0f",
                    drops, n);
        }
        t_end();
    }
    free(v);
    free(x);
}

/* ---- steps, seeds, eval ---- */

/* rand [n] read after each of `steps` steps (and, with fwd, after a forward following the
   last step) from a graph built with one throwaway op first when `shift`. */
static int draw_steps(const t_env *e, unsigned long long seed, int steps, int shift, long n, float *out, int fwd) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor y;
    int s, ok = 1;
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
    gd.seed = seed;
    if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) return 0;
    if (shift) nn_randn(g, nn_shape1(3));
    y = nn_rand(g, nn_shape1(n));
    nn_graph_output(g, y);
    ok = T_OK(nn_graph_compile(g, &cd), e->ctx);
    for (s = 0; ok && s < steps; s++)
        ok = T_OK(nn_graph_step(g), e->ctx) && T_OK(nn_tensor_read(g, y, out + s * n, (size_t)n * 4), e->ctx);
    if (ok && fwd) ok = T_OK(nn_graph_forward(g), e->ctx) && T_OK(nn_tensor_read(g, y, out + steps * n, (size_t)n * 4), e->ctx);
    nn_graph_destroy(g);
    return ok;
}

static void suite_steps(const t_env *e) {
    enum { N = 257, S = 3 };
    float *a = (float *)malloc((S + 1) * N * 4), *b = (float *)malloc((S + 1) * N * 4), *c = (float *)malloc(S * N * 4);
    if (t_begin(e, "random: steps draw anew, seeds repeat across graphs")) {
        if (draw_steps(e, 42, S, 0, N, a, 1) && draw_steps(e, 42, S, 0, N, b, 0) && draw_steps(e, 43, S, 0, N, c, 0)) {
            int s, t;
            T_CHECK(memcmp(a, b, S * N * 4) == 0, "two graphs with seed 42 drew different sequences");
            T_CHECK(memcmp(a, c, N * 4) != 0, "seeds 42 and 43 drew the same values");
            for (s = 0; s < S; s++)
                for (t = s + 1; t < S; t++) T_CHECK(memcmp(a + s * N, a + t * N, N * 4) != 0, "steps %d and %d drew the same", s + 1, t + 1);
            T_CHECK(memcmp(a + S * N, a + (S - 1) * N, N * 4) == 0, "nn_graph_forward after step %d drew anew", S);
        }
        if (draw_steps(e, 42, 1, 1, N, b, 0)) /* another op first: another key */
            T_CHECK(memcmp(a, b, N * 4) != 0, "a rand op with another key drew the same values");
        t_end();
    }
    free(a);
    free(b);
    free(c);
}

static void suite_eval(const t_env *e) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, n1, a1, z;
    float xv[7] = {-2.0f, -0.5f, 0.0f, 0.25f, 1.0f, 3.0f, -1e-3f}, y[7], r[7];
    int i;
    if (!t_begin(e, "random: eval graphs: noise and alpha dropout are the identity")) return;
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
    gd.eval = 1;
    gd.seed = 3;
    if (T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) {
        x = nn_input(g, "x", NN_F32, nn_shape1(7));
        n1 = nn_gaussian_noise(g, x, 0.5f);
        a1 = nn_alpha_dropout(g, x, 0.5f);
        z = nn_rand_like(g, x); /* rand draws in eval graphs too */
        T_CHECK(n1.id == x.id && a1.id == x.id, "eval: gaussian_noise or alpha_dropout is not x itself");
        nn_graph_output(g, n1);
        nn_graph_output(g, z);
        if (T_OK(nn_graph_compile(g, &cd), e->ctx) && T_OK(nn_tensor_write(g, x, xv, sizeof xv), e->ctx) &&
            T_OK(nn_graph_forward(g), e->ctx) && T_OK(nn_tensor_read(g, n1, y, sizeof y), e->ctx) &&
            T_OK(nn_tensor_read(g, z, r, sizeof r), e->ctx)) {
            for (i = 0; i < 7; i++) {
                unsigned w[4];
                T_CHECK(y[i] == xv[i], "eval: element %d changed", i);
                words(w, 3, z.id, 0, i); /* no step yet: step 0 */
                T_CHECK((double)r[i] == ref_uniform(w[0]), "eval: rand_like element %d differs from the reference", i);
            }
        }
    }
    nn_graph_destroy(g);
    /* training graphs: std 0 and p 0 are x itself, alpha dropout p = 1 is x * 0 */
    gd.eval = 0;
    g = NULL;
    if (T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) {
        x = nn_input(g, "x", NN_F32, nn_shape1(7));
        T_CHECK(nn_gaussian_noise(g, x, 0.0f).id == x.id, "gaussian_noise std 0 is not x");
        T_CHECK(nn_alpha_dropout(g, x, 0.0f).id == x.id, "alpha_dropout p 0 is not x");
        a1 = nn_alpha_dropout(g, x, 1.0f);
        nn_graph_output(g, a1);
        if (T_OK(nn_graph_compile(g, &cd), e->ctx) && T_OK(nn_tensor_write(g, x, xv, sizeof xv), e->ctx) &&
            T_OK(nn_graph_step(g), e->ctx) && T_OK(nn_tensor_read(g, a1, y, sizeof y), e->ctx))
            for (i = 0; i < 7; i++) T_CHECK(y[i] == 0.0f, "alpha_dropout p = 1: element %d is %g", i, y[i]);
    }
    nn_graph_destroy(g);
    t_end();
}

/* ---- gradients through the op checker ---- */

static int op_key;
static nn_tensor b_noise(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor t = nn_gaussian_noise(g, in[0], s->p);
    op_key = t.id;
    return t;
}
static void r_noise(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++) {
        unsigned r[4];
        words(r, 1234, op_key, 1, i); /* op_check: seed 1234, one step */
        out[i] = in[0][i] + (double)s->p * ref_normal(r[0], r[1]);
    }
}
static nn_tensor b_alpha(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor t = nn_alpha_dropout(g, in[0], s->p);
    op_key = t.id;
    return t;
}
static void r_alpha(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    double p = (double)s->p, a = alpha_a(p);
    for (i = 0; i < n; i++) {
        unsigned r[4];
        words(r, 1234, op_key, 1, i);
        out[i] = ref_uniform(r[0]) >= p ? a * in[0][i] + ALPHA * a * p : ALPHA * a * p - ALPHA * a;
    }
}

static void suite_grads(const t_env *e) {
    static const int odd[][2] = {{1, 1}, {3, 7}, {7, 33}, {33, 127}, {127, 3}};
    int j;
    for (j = 0; j < 5; j++) {
        nn_shape sh = nn_shape2(odd[j][0], odd[j][1]);
        char name[96];
        spec s;
        snprintf(name, sizeof name, "gaussian_noise std=0.5 [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_noise, r_noise, sh);
        s.p = 0.5f;
        in_f(&s, sh);
        check_case(e, &s);
        snprintf(name, sizeof name, "alpha_dropout p=0.2 [%d, %d]", odd[j][0], odd[j][1]);
        s = mk(name, b_alpha, r_alpha, sh);
        s.p = 0.2f;
        in_f(&s, sh);
        check_case(e, &s);
    }
}

/* ---- errors ---- */

static void suite_random_errors(const t_env *e) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    const char *msg;
    if (!t_begin(e, "random: errors name the op")) return;
    memset(&gd, 0, sizeof gd);
    memset(&cd, 0, sizeof cd);
#define EXPECT_FAIL(expr, needle)                                                                             \
    do {                                                                                                      \
        nn_graph *h = NULL;                                                                                   \
        if (T_OK(nn_graph_create(e->ctx, &gd, &h), e->ctx)) {                                                 \
            nn_tensor xf = nn_input(h, "xf", NN_F32, nn_shape1(4)), xi = nn_input(h, "xi", NN_I32, nn_shape1(4)); \
            (void)xf;                                                                                         \
            (void)xi;                                                                                         \
            T_CHECK((expr).id < 0 && nn_graph_status(h) != NN_OK, "%s accepted", #expr);                      \
            msg = nn_context_last_error(e->ctx);                                                                      \
            T_CHECK(msg && strstr(msg, needle), "%s: message '%s' lacks '%s'", #expr, msg ? msg : "", needle); \
        }                                                                                                     \
        nn_graph_destroy(h);                                                                                  \
    } while (0)
    EXPECT_FAIL(nn_randint(h, 5, 5, nn_shape1(3)), "nn_randint: low = 5 is not less than high = 5");
    EXPECT_FAIL(nn_randint(h, -3000000000LL, 0, nn_shape1(3)), "nn_randint: [low, high)");
    EXPECT_FAIL(nn_randint(h, 0, 2147483649LL, nn_shape1(3)), "int32's range");
    EXPECT_FAIL(nn_rand(h, nn_shape1(0)), "nn_rand: shape [0]");
    EXPECT_FAIL(nn_randn(h, nn_shape2(3, -1)), "nn_randn: shape [3, -1]");
    EXPECT_FAIL(nn_randn_like(h, xi), "nn_randn_like: x must be float32");
    EXPECT_FAIL(nn_rand_like(h, NN_NONE), "nn_rand_like: input 0 is NN_NONE");
    EXPECT_FAIL(nn_bernoulli(h, xi), "nn_bernoulli: p must be float32");
    EXPECT_FAIL(nn_gaussian_noise(h, xf, -0.1f), "nn_gaussian_noise: std = -0.1");
    EXPECT_FAIL(nn_gaussian_noise(h, xf, (float)NAN), "nn_gaussian_noise: std = nan");
    EXPECT_FAIL(nn_alpha_dropout(h, xf, 1.5f), "nn_alpha_dropout: p = 1.5 is outside [0, 1]");
    EXPECT_FAIL(nn_alpha_dropout(h, xf, -0.25f), "nn_alpha_dropout: p = -0.25");
#undef EXPECT_FAIL
    /* p outside [0, 1] at run time: counted and reported by the read, as PyTorch raises */
    if (T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) {
        float p[5] = {0.5f, 1.5f, -0.25f, 1.0f, 0.0f}, y[5];
        nn_tensor pt = nn_input(g, "p", NN_F32, nn_shape1(5)), b = nn_bernoulli(g, pt);
        nn_graph_output(g, b);
        if (T_OK(nn_graph_compile(g, &cd), e->ctx) && T_OK(nn_tensor_write(g, pt, p, sizeof p), e->ctx) &&
            T_OK(nn_graph_step(g), e->ctx)) {
            T_CHECK(nn_tensor_read(g, b, y, sizeof y) == NN_ERR_INVALID_ARGUMENT, "bernoulli p = 1.5, -0.25 not reported");
            msg = nn_context_last_error(e->ctx);
            T_CHECK(msg && strstr(msg, "nn_bernoulli: probabilities outside [0, 1]: 2 of them"), "message '%s'", msg ? msg : "");
            T_CHECK(nn_tensor_read(g, b, y, sizeof y) == NN_OK, "the report repeats: %s", nn_context_last_error(e->ctx));
            T_CHECK(y[3] == 1.0f && y[4] == 0.0f, "bernoulli p = 1 or 0: %g, %g", y[3], y[4]);
        }
    }
    nn_graph_destroy(g);
    t_end();
}

/* The CPU backend splits the draws between threads: the same bits with 1, 3 and 8. */
static void random_thread_counts(const t_env *e) {
    enum { N = 100003 };
    static const int counts[3] = {1, 3, 8};
    float *x = (float *)malloc(N * 4), *w = (float *)malloc(N * 4);
    rrun ref[2];
    int c, k, kinds[2] = {K_RANDN, K_ALPHA};
    long i;
    memset(ref, 0, sizeof ref);
    if (!t_begin_cpu(e, "random: the same bits for 1, 3, 8 CPU threads", "thread counts are a CPU-backend setting")) goto out;
    for (i = 0; i < N; i++) x[i] = w[i] = (float)(i % 101) * 0.03f - 1.5f;
    for (c = 0; c < 3; c++) {
        nn_context_desc cdsc;
        nn_context *ctx = NULL;
        memset(&cdsc, 0, sizeof cdsc);
        cdsc.device = "cpu";
        cdsc.threads = counts[c];
        cdsc.log_level = NN_LOG_WARN;
        if (!T_CHECK(nn_context_create(&cdsc, &ctx) == NN_OK, "cannot create a CPU context with %d threads", counts[c])) break;
        for (k = 0; k < 2; k++) {
            rrun r = run_kind(ctx, kinds[k], N, x, w);
            if (c == 0) ref[k] = r;
            else {
                if (r.ok && ref[k].ok)
                    T_CHECK(memcmp(r.y[0], ref[k].y[0], N * 4) == 0 && memcmp(r.y[1], ref[k].y[1], N * 4) == 0 &&
                                (!r.dx || memcmp(r.dx, ref[k].dx, N * 4) == 0),
                            "%s: %d threads and 1 thread differ", kind_name[kinds[k]], counts[c]);
                rrun_free(&r);
            }
        }
        nn_context_destroy(ctx);
    }
    t_end();
out:
    rrun_free(&ref[0]);
    rrun_free(&ref[1]);
    free(x);
    free(w);
}

/* ---- dropout through the op checker: the reference draws the same mask ---- */

/* The dropout reference: the mask of element i is keyed by (graph seed, the dropout
   tensor's id, step) through the test's own Philox (t_philox). */
static int dropout_id;
static nn_tensor b_dropout(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_tensor t = nn_dropout(g, in[0], s->p);
    dropout_id = t.id;
    return t;
}
static void r_dropout(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->out);
    for (i = 0; i < n; i++) {
        unsigned c[4];
        double u;
        c[0] = (unsigned)i;
        c[1] = (unsigned)dropout_id;
        c[2] = 1; /* the first step */
        c[3] = 0;
        t_philox(c, 1234u, 0u);
        u = (double)(c[0] >> 8) / 16777216.0;
        out[i] = u >= s->p ? in[0][i] / (1.0 - (double)(float)s->p) : 0.0;
    }
}


static void dropout_cases(const t_env *e) {
    static const t_odd rows[] = {{"dropout p=0.3", b_dropout, r_dropout, 0, 0.3f}};
    t_odd_cases(e, rows, 1);
}

/* ---- dropout: the kept elements are x / (1 - p), the dropped ones x * 0 (NaN for NaN
   and inf, as PyTorch's x * mask / (1 - p)). The mask is read from the gradient
   (dy * mask / (1 - p), dy = 1), which must itself be finite. ---- */


static void nanprop_dropout(const t_env *e) {
    enum { N = 64 };
    double x[N], dx[N];
    double *y = NULL, *d = NULL;
    np_case c;
    int i, kept = 0, dropped = 0, nonfinite_dropped = 0;
    if (!t_begin_op(e, "nanprop: dropout p = 0.5")) return;
    np_fill(x, N, -2, 2, 41);
    for (i = 0; i < N; i += 3) x[i] = i % 2 ? INFINITY : NAN;
    for (i = 0; i < N; i++) dx[i] = FIN;
    np_init(&c, "dropout p = 0.5", b_dropout, NULL);
    c.p = 0.5f;
    np_in(&c, nn_shape1(N), x, dx);
    check_values(e, &c, &y, &d);
    if (y && d) {
        for (i = 0; i < N; i++) {
            double m = d[i], want;
            char b[40];
            if (!T_CHECK(m == 0 || m == 2, "dropout: gradient[%d] = %g, not 0 or 1 / (1 - p)", i, m)) break;
            kept += m == 2;
            dropped += m == 0;
            nonfinite_dropped += m == 0 && !isfinite(x[i]);
            want = x[i] * m;
            if (!(isnan(want) ? isnan(y[i]) : y[i] == (float)want))
                T_CHECK(0, "dropout: y[%d] = %g for x = %g, mask %g: PyTorch gives %s", i, y[i], x[i], m / 2,
                        np_desc(want, b, sizeof b));
        }
        T_CHECK(kept > 0 && nonfinite_dropped > 0, "dropout: %d kept, %d dropped (%d of them NaN or inf): the case tests nothing",
                kept, dropped, nonfinite_dropped);
    }
    free(y);
    free(d);
    t_end();
}

/* ---- dropout of a bf16 / f16 x: y of its type, each element the float32 dropout's of the
   rounded x, rounded once; dx the same of dy (the same mask), bit for bit. Both graphs put
   the dropout at the same node (a CAST before it in each), so they draw the same mask. ---- */

static int drop16_run(nn_context *ctx, nn_dtype d, const float *xv, const float *wl, int n, float *y, float *dx) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, yt, l;
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(n / 8, 8));
    nn_graph_requires_grad(g, x);
    yt = nn_to_dtype(g, nn_dropout(g, nn_to_dtype(g, x, d), 0.3f), NN_F32);
    l = nn_input(g, "wl", NN_F32, nn_shape2(n / 8, 8));
    nn_graph_output(g, yt);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, yt, l));
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, xv, (size_t)n * sizeof(float)), ctx) || !T_OK(nn_tensor_write(g, l, wl, (size_t)n * sizeof(float)), ctx) ||
        !T_OK(nn_graph_step(g), ctx))
        goto done;
    ok = T_OK(nn_tensor_read(g, yt, y, (size_t)n * sizeof(float)), ctx) && T_OK(nn_tensor_read(g, nn_graph_grad(g, x), dx, (size_t)n * sizeof(float)), ctx);
done:
    nn_graph_destroy(g);
    return ok;
}

static void dropout16(const t_env *e) {
    enum { N = 8 * 125 };
    static float xv[N], wl[N], y32[N], dx32[N], y[N], dx[N];
    int t, i, dropped = 0;
    if (!t_begin(e, "dropout of bf16/f16 x: y and dx of its type, the float32 dropout's rounded, bit for bit")) return;
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        for (i = 0; i < N; i++) {
            xv[i] = (float)t_rnd16(d, 3.0 * sin(0.37 * (double)i) + 0.1);
            wl[i] = (float)t_rnd16(d, cos(0.91 * (double)i));
        }
        if (!drop16_run(e->ctx, NN_F32, xv, wl, N, y32, dx32) || !drop16_run(e->ctx, d, xv, wl, N, y, dx)) goto done;
        for (i = 0; i < N; i++) {
            float ry = (float)t_rnd16(d, y32[i]), rd = (float)t_rnd16(d, dx32[i]);
            dropped += y32[i] == 0.0f;
            if (!T_CHECK(memcmp(&y[i], &ry, sizeof ry) == 0 && memcmp(&dx[i], &rd, sizeof rd) == 0,
                         "%s [%d]: y %.9g dx %.9g, float32's rounded %.9g %.9g", t_name16(d), i, (double)y[i], (double)dx[i], (double)ry, (double)rd))
                goto done;
        }
    }
    T_CHECK(dropped > N / 5 && dropped < 2 * N * 2 / 5, "%d of %d dropped over the two types at p = 0.3", dropped, 2 * N);
done:
    t_end();
}

void suite_random(const t_env *e) {
    T_RUN(e, suite_reference, random_thread_counts);
    if (!e->opencl) suite_stats(e); /* the shared stream's statistics: once, on the CPU */
    T_RUN(e, suite_steps, suite_eval, suite_grads, suite_random_errors, dropout_cases, nanprop_dropout, dropout16);
}
