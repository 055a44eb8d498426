/* The GEMM on bf16 / fp16 operands with fp32 accumulation (nn_cpu_gemm_bf16,
   nn_cpu_gemm_f16; src/cpu/gemm16.c) and the 16-bit conversions, against references
   written here: 16-bit values decoded with ldexp from their fields, roundings found by
   comparing the neighbours in double, products summed in double.

   Each path is forced in turn (t_gemm16_force, tests/coverage.c): bf16 avx512bf16,
   avx512f, avx2, generic; fp16 avx512f, avx2 (F16C), generic. A path this CPU lacks is
   named in the case's line and not run. The GEMM runs on the CPU whatever the backend, so
   the cases run on the CPU backend's pass only, but for one small product with the
   backend's context (an OpenCL context's call runs on the calling thread). */
#include "test.h"
#include "bad_rows.h"
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { F_BF16, F_F16 };

/* ---- references --------------------------------------------------------------------- */

static double ref_bf16(uint16_t h) { /* sign, 8-bit exponent, 7-bit fraction */
    int s = h >> 15, e = (h >> 7) & 0xFF, m = h & 0x7F;
    double v;
    if (e == 0xFF) return m ? NAN : (s ? -INFINITY : INFINITY);
    v = e ? ldexp(128 + m, e - 127 - 7) : ldexp(m, -126 - 7);
    return s ? -v : v;
}
static double ref_f16(uint16_t h) { /* sign, 5-bit exponent, 10-bit fraction */
    int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v;
    if (e == 0x1F) return m ? NAN : (s ? -INFINITY : INFINITY);
    v = e ? ldexp(1024 + m, e - 15 - 10) : ldexp(m, -14 - 10);
    return s ? -v : v;
}
static double ref_dec(int fmt, uint16_t h) { return fmt == F_BF16 ? ref_bf16(h) : ref_f16(h); }

/* The 16-bit value nearest x (ties: the even code), by search over the finite positive
   codes in order (each format's codes are increasing with the value): overflow past the
   largest finite value's half-ulp gives inf, as IEEE rounding does. */
static uint16_t ref_round(int fmt, float xf) {
    double x = xf, ax = fabs(x), top, ulp_top;
    uint16_t sign = (uint16_t)(signbit(x) ? 0x8000u : 0u), lo = 0, hi, inf = fmt == F_BF16 ? 0x7F80 : 0x7C00;
    if (isnan(x)) return 0xFFFF; /* any NaN: the caller checks NaN-ness */
    hi = (uint16_t)(inf - 1);
    top = ref_dec(fmt, hi);
    ulp_top = top - ref_dec(fmt, (uint16_t)(hi - 1));
    if (ax >= top + ulp_top / 2) {
        if (ax == top + ulp_top / 2 && (hi & 1) == 0) return (uint16_t)(sign | hi);
        return (uint16_t)(sign | inf);
    }
    while (hi - lo > 1) { /* ref(lo) <= ax < ref(hi) */
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (ref_dec(fmt, mid) <= ax) lo = mid;
        else hi = mid;
    }
    if (ref_dec(fmt, lo) == ax) return (uint16_t)(sign | lo);
    {
        double dl = ax - ref_dec(fmt, lo), dh = ref_dec(fmt, hi) - ax;
        uint16_t r = dl < dh ? lo : dh < dl ? hi : (lo & 1) ? hi : lo;
        return (uint16_t)(sign | r);
    }
}

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- the conversions ----------------------------------------------------------------- */

static int check_round_one(int fmt, float x, uint16_t got) {
    uint16_t want = ref_round(fmt, x);
    const char *name = fmt == F_BF16 ? "bf16" : "f16";
    if (isnan(x)) { /* quiet, sign and top payload bits kept: bf16 (u >> 16) | 0x40, f16 sign | 0x7e00 | top 10 */
        uint32_t u, nan;
        memcpy(&u, &x, 4);
        nan = fmt == F_BF16 ? (u >> 16) | 0x40u : ((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu);
        return T_CHECK(got == nan, "%s(NaN %08x) = %04x, want %04x", name, (unsigned)u, got, (unsigned)nan);
    }
    return T_CHECK(got == want, "%s(%.9g) = %04x (%.9g), want %04x (%.9g)", name, x, got, ref_dec(fmt, got), want,
                   ref_dec(fmt, want));
}

static void check_conversions(const t_env *e) {
    /* bf16: ties to even at 1 + 2^-8 (to 1) and 1 + 3 2^-8 (up), just past a tie, FLT_MAX
       (up to inf), the largest bf16, denormal ties, NaNs whose payload sits only in the
       low 16 bits (truncation would make them inf), infinities, signed zeros */
    static const uint32_t bf_cases[] = {0x3F808000u, 0x3F818000u, 0x3F808001u, 0x3F807FFFu, 0x7F7FFFFFu, 0x7F7F0000u,
                                        0x7F7F7FFFu, 0x7F7F8000u, 0x00008000u, 0x00018000u, 0x00017FFFu, 0x80008000u,
                                        0x807FFFFFu, 0x7F800001u, 0xFF800001u, 0x7FC00000u, 0x7F800000u, 0xFF800000u,
                                        0x00000000u, 0x80000000u, 0x00800000u, 0x3F800000u};
    /* f16: 65504 (largest), 65519 (down), 65520 (tie: up to inf), 2^-24 (smallest
       denormal), 2^-25 (tie: to 0), 3 2^-26 (up), 2^-14 (smallest normal) and just
       below, normal ties 1 + 2^-11 (to 1) and 1 + 3 2^-11 (up), NaN with a low payload */
    static const float f16_cases[] = {65504.0f, 65519.0f, 65520.0f, 65536.0f, 5.9604645e-8f, 2.9802322e-8f,
                                      4.4703484e-8f, 6.1035156e-5f, 6.1035152e-5f, 1.00048828125f, 1.00146484375f,
                                      -1.00048828125f, 1e-10f, -1e-10f, 0.0f, -0.0f, 3.0e-6f, 1000.5f};
    uint16_t *h = NULL;
    float *f = NULL, *g = NULL;
    int i, p, ran = 0, fails = 0;
    if (!t_begin_cpu(e, "gemm16: bf16 and f16 rounding (ties, NaN, inf, denormals) and decoding", "CPU code")) return;
    h = (uint16_t *)malloc(65536 * sizeof *h);
    f = (float *)malloc(65536 * sizeof *f);
    g = (float *)malloc(65536 * sizeof *g);
    if (!T_CHECK(h && f && g, "out of memory")) goto done;
    /* the rounding on each path this CPU has (nn_f32_to_bf16 / _f16 and the 16-bit bodies
       round through the chosen path's vector loop), against the double reference */
    for (p = 0; p < 3; p++) {
        static const char *const rpaths[] = {"avx512f", "avx2", "generic"};
        if (strcmp(t_gemm16_force(0, rpaths[p]), rpaths[p]) != 0 || strcmp(t_gemm16_force(1, rpaths[p]), rpaths[p]) != 0) {
            printf("  (rounding path %s: this CPU lacks it, not run)\n", rpaths[p]);
            continue;
        }
        ran++;
        for (i = 0; i < (int)(sizeof bf_cases / sizeof bf_cases[0]); i++) f[i] = bits_f(bf_cases[i]);
        T_CHECK(nn_f32_to_bf16(f, h, (int64_t)(sizeof bf_cases / sizeof bf_cases[0])) == NN_OK, "nn_f32_to_bf16 failed");
        for (i = 0; i < (int)(sizeof bf_cases / sizeof bf_cases[0]); i++) check_round_one(F_BF16, f[i], h[i]);
        T_CHECK(h[0] == 0x3F80 && h[1] == 0x3F82 && h[4] == 0x7F80 && h[13] == 0x7FC0 && h[14] == 0xFFC0,
                "the named bf16 cases: %04x %04x %04x %04x %04x", h[0], h[1], h[4], h[13], h[14]);
        for (i = 0; i < (int)(sizeof f16_cases / sizeof f16_cases[0]); i++) f[i] = f16_cases[i];
        f[i++] = bits_f(0x7F800001u);
        f[i++] = bits_f(0xFF812345u); /* a signalling NaN with payload in its top bits */
        T_CHECK(nn_f32_to_f16(f, h, i) == NN_OK, "nn_f32_to_f16 failed");
        for (i = 0; i < (int)(sizeof f16_cases / sizeof f16_cases[0]) + 2; i++) check_round_one(F_F16, f[i], h[i]);
        T_CHECK(h[0] == 0x7BFF && h[1] == 0x7BFF && h[2] == 0x7C00 && h[4] == 0x0001 && h[5] == 0x0000 && h[6] == 0x0001,
                "the named f16 cases: %04x %04x %04x %04x %04x %04x", h[0], h[1], h[2], h[4], h[5], h[6]);
        /* 65536 floats spread over both formats' ranges (random bits; then scaled into f16's) */
        t_seed(2024);
        for (i = 0; i < 65536; i++) {
            uint32_t u = (uint32_t)t_randint(1 << 16) << 16 | (uint32_t)t_randint(1 << 16);
            f[i] = bits_f(u);
            g[i] = (float)ldexp((double)(t_randint(1 << 24) - (1 << 23)), t_randint(50) - 50);
        }
        nn_f32_to_bf16(f, h, 65536);
        for (i = 0; i < 65536 && fails < 5; i++) fails += !check_round_one(F_BF16, f[i], h[i]);
        nn_f32_to_f16(g, h, 65536);
        for (i = 0; i < 65536 && fails < 5; i++) fails += !check_round_one(F_F16, g[i], h[i]);
    }
    t_gemm16_force(0, NULL);
    t_gemm16_force(1, NULL);
    T_CHECK(ran > 0 || fails, "no rounding path ran");
    /* every 16-bit code decoded, both formats */
    for (i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    nn_bf16_to_f32(h, f, 65536);
    nn_f16_to_f32(h, g, 65536);
    for (i = 0; i < 65536 && fails < 5; i++) {
        double b = ref_bf16((uint16_t)i), hf = ref_f16((uint16_t)i);
        fails += !T_CHECK(isnan(b) ? isnan(f[i]) : (double)f[i] == b && !signbit(f[i]) == !signbit(b),
                          "bf16 %04x decoded %.9g, want %.9g", i, f[i], b);
        fails += !T_CHECK(isnan(hf) ? isnan(g[i]) : (double)g[i] == hf && !signbit(g[i]) == !signbit(hf),
                          "f16 %04x decoded %.9g, want %.9g", i, g[i], hf);
    }
    T_CHECK(nn_f32_to_bf16(NULL, h, 1) == NN_ERR_INVALID_ARGUMENT && nn_f16_to_f32(h, NULL, 1) == NN_ERR_INVALID_ARGUMENT &&
                nn_bf16_to_f32(h, f, -1) == NN_ERR_INVALID_ARGUMENT && nn_f32_to_f16(NULL, NULL, 0) == NN_OK,
            "NULL or negative counts not refused");
done:
    free(h);
    free(f);
    free(g);
    t_end();
}

/* ---- the GEMM ------------------------------------------------------------------------ */

static const char *const bf16_paths[] = {"avx512bf16", "avx512f", "avx2", "generic"};
static const char *const f16_paths[] = {"avx512f", "avx2", "generic"};

typedef struct {
    int m, n, k;
} gshape;

/* odd sizes, K past one K block (513: two blocks of 264 and 249, both odd in pairs), N
   narrow enough for the C^T choice (1, 3), M past an MC block (257), threaded products */
static const gshape shapes[] = {{1, 1, 1},    {3, 7, 5},     {7, 3, 33},   {33, 127, 7},  {127, 33, 257},
                                {257, 1, 127}, {1, 257, 33}, {65, 70, 513}, {40, 200, 96}, {200, 40, 64}};

typedef struct {
    int fmt, ta, tb, m, n, k, lda, ldb, ldc;
    float alpha, beta;
    uint16_t *a, *b;
    float *c0;     /* C before */
    double *want, *tol;
} gcase;

static uint16_t enc(int fmt, float x) {
    uint16_t h;
    if (fmt == F_BF16) nn_f32_to_bf16(&x, &h, 1);
    else nn_f32_to_f16(&x, &h, 1);
    return h;
}

static float frand(void) { return (float)(t_randint(2000001) - 1000000) / 1000000.0f; }

/* the operands in [-1, 1] (16-bit), C0, and the double reference with its tolerance:
   1e-5 of (|alpha| sum_k |a b| + |beta c0|), the fp32 accumulation's rounding over at
   most 513 products with room (sqrt(K) 2^-24 is typical, K 2^-24 the worst case) */
static int gcase_make(gcase *G, int fmt, int ta, int tb, const gshape *s, float alpha, float beta, int nan_c) {
    int i, j, k;
    size_t na, nb;
    memset(G, 0, sizeof *G);
    G->fmt = fmt;
    G->ta = ta;
    G->tb = tb;
    G->m = s->m;
    G->n = s->n;
    G->k = s->k;
    G->lda = (ta ? s->m : s->k) + 3;
    G->ldb = (tb ? s->k : s->n) + 1;
    G->ldc = s->n + 2;
    G->alpha = alpha;
    G->beta = beta;
    na = (size_t)(ta ? s->k : s->m) * (size_t)G->lda;
    nb = (size_t)(tb ? s->n : s->k) * (size_t)G->ldb;
    G->a = (uint16_t *)malloc(na * sizeof *G->a);
    G->b = (uint16_t *)malloc(nb * sizeof *G->b);
    G->c0 = (float *)malloc((size_t)s->m * (size_t)G->ldc * sizeof *G->c0);
    G->want = (double *)malloc((size_t)s->m * (size_t)s->n * sizeof *G->want);
    G->tol = (double *)malloc((size_t)s->m * (size_t)s->n * sizeof *G->tol);
    if (!G->a || !G->b || !G->c0 || !G->want || !G->tol) return 0;
    for (i = 0; i < (int)na; i++) G->a[i] = enc(fmt, frand());
    for (i = 0; i < (int)nb; i++) G->b[i] = enc(fmt, frand());
    for (i = 0; i < s->m * G->ldc; i++) G->c0[i] = nan_c ? (float)NAN : frand();
    for (i = 0; i < s->m; i++)
        for (j = 0; j < s->n; j++) {
            double sum = 0.0, abs_sum = 0.0, c = G->c0[(size_t)i * G->ldc + j];
            for (k = 0; k < s->k; k++) {
                double x = ref_dec(fmt, ta ? G->a[(size_t)k * G->lda + i] : G->a[(size_t)i * G->lda + k]);
                double y = ref_dec(fmt, tb ? G->b[(size_t)j * G->ldb + k] : G->b[(size_t)k * G->ldb + j]);
                sum += x * y;
                abs_sum += fabs(x * y);
            }
            G->want[(size_t)i * s->n + j] = (double)alpha * sum + (beta == 0.0f ? 0.0 : (double)beta * c);
            G->tol[(size_t)i * s->n + j] =
                1e-5 * (fabs((double)alpha) * abs_sum + (beta == 0.0f ? 0.0 : fabs((double)beta * c))) + 1e-30;
        }
    return 1;
}

static void gcase_free(gcase *G) {
    free(G->a);
    free(G->b);
    free(G->c0);
    free(G->want);
    free(G->tol);
}

/* Runs G on ctx; compares with the reference (C's padding columns untouched); the largest
   error over tolerance goes to *worst. 0 on a failure. */
static int gcase_run(const gcase *G, nn_context *ctx, const char *label, double *worst, float *out) {
    size_t nc = (size_t)G->m * (size_t)G->ldc;
    float *c = out ? out : (float *)malloc(nc * sizeof *c);
    int i, j, ok = 1;
    nn_result r;
    if (!T_CHECK(c != NULL, "out of memory")) return 0;
    memcpy(c, G->c0, nc * sizeof *c);
    r = (G->fmt == F_BF16 ? nn_cpu_gemm_bf16 : nn_cpu_gemm_f16)(ctx, G->ta, G->tb, G->m, G->n, G->k, G->alpha, G->a,
                                                                G->lda, G->b, G->ldb, G->beta, c, G->ldc);
    ok = T_CHECK(r == NN_OK, "%s: %s", label, nn_result_string(r));
    for (i = 0; ok && i < G->m; i++) {
        for (j = 0; ok && j < G->n; j++) {
            double want = G->want[(size_t)i * G->n + j], tol = G->tol[(size_t)i * G->n + j];
            double got = c[(size_t)i * G->ldc + j], err = fabs(got - want);
            if (err / tol > *worst) *worst = err / tol;
            ok = T_CHECK(err <= tol, "%s: C[%d][%d] = %.9g, want %.9g (tolerance %.3g)", label, i, j, got, want, tol);
        }
        for (j = G->n; ok && j < G->ldc; j++) {
            float c0 = G->c0[(size_t)i * G->ldc + j], cg = c[(size_t)i * G->ldc + j];
            ok = T_CHECK(memcmp(&c0, &cg, sizeof c0) == 0, "%s: C[%d][%d] past n was written", label, i, j);
        }
    }
    if (!out) free(c);
    return ok;
}

/* Every path of fmt, every transposition form, every shape, three (alpha, beta): (1, 0)
   on a C of NaNs (beta 0 must not read it), (0.5, -1.25), (-2, 1). */
static void check_gemm(const t_env *e, int fmt) {
    const char *const *paths = fmt == F_BF16 ? bf16_paths : f16_paths;
    int n_paths = fmt == F_BF16 ? 4 : 3, p, form, s, ab, ran = 0;
    static const float alphas[] = {1.0f, 0.5f, -2.0f}, betas[] = {0.0f, -1.25f, 1.0f};
    char label[200], skipped[120] = "";
    double worst = 0.0;
    int ok = 1;
    snprintf(label, sizeof label, "gemm16: %s against double, paths %s, NN NT TN TT, odd shapes, alpha/beta",
             fmt == F_BF16 ? "bf16" : "f16", fmt == F_BF16 ? "avx512bf16 avx512f avx2 generic" : "avx512f avx2 generic");
    if (!t_begin_cpu(e, label, "CPU code")) return;
    t_seed(fmt == F_BF16 ? 16 : 17);
    for (form = 0; form < 4 && ok; form++)
        for (s = 0; s < (int)(sizeof shapes / sizeof shapes[0]) && ok; s++)
            for (ab = 0; ab < 3 && ok; ab++) {
                gcase G;
                if (gcase_make(&G, fmt, form & 1, form >> 1, &shapes[s], alphas[ab], betas[ab], ab == 0)) {
                    for (p = 0; p < n_paths && ok; p++) {
                        char what[160];
                        if (strcmp(t_gemm16_force(fmt == F_BF16 ? 0 : 1, paths[p]), paths[p]) != 0) {
                            if (!strstr(skipped, paths[p]) && strlen(skipped) + strlen(paths[p]) + 2 < sizeof skipped) {
                                strcat(skipped, " ");
                                strcat(skipped, paths[p]);
                            }
                            continue;
                        }
                        snprintf(what, sizeof what, "%s path %s, trans %d %d, m %d n %d k %d, alpha %g beta %g",
                                 fmt == F_BF16 ? "bf16" : "f16", paths[p], G.ta, G.tb, G.m, G.n, G.k, G.alpha, G.beta);
                        ok = gcase_run(&G, e->ctx, what, &worst, NULL);
                        ran++;
                    }
                } else ok = T_CHECK(0, "out of memory");
                gcase_free(&G);
            }
    t_gemm16_force(fmt == F_BF16 ? 0 : 1, NULL);
    if (skipped[0]) printf("  (paths this CPU lacks, not run:%s)\n", skipped);
    printf("  (%d products; largest error %.3f of the tolerance)\n", ran, worst);
    t_end();
}

/* Every finite 16-bit value through each path's widening (or pairing): A [2048, 32] holds
   the codes, B is the identity, so C must be A decoded exactly. vdpbf16ps takes bf16
   denormals as zero: on that path the denormal codes must give 0. Inf and NaN codes are
   replaced by 0 (0 * inf in the other columns would make NaN). */
static void check_widening(const t_env *e) {
    int fmt, p, i, ok = 1;
    uint16_t *a = (uint16_t *)malloc(65536 * sizeof *a), b[32 * 32];
    float *c = (float *)malloc(65536 * sizeof *c);
    if (!t_begin_cpu(e, "gemm16: every finite bf16 and f16 value through each path's widening, exactly", "CPU code")) {
        free(a);
        free(c);
        return;
    }
    if (!T_CHECK(a && c, "out of memory")) goto done;
    for (fmt = 0; fmt < 2 && ok; fmt++) {
        const char *const *paths = fmt == F_BF16 ? bf16_paths : f16_paths;
        int n_paths = fmt == F_BF16 ? 4 : 3;
        for (i = 0; i < 65536; i++) a[i] = isfinite(ref_dec(fmt, (uint16_t)i)) ? (uint16_t)i : 0;
        for (i = 0; i < 32 * 32; i++) b[i] = i / 32 == i % 32 ? enc(fmt, 1.0f) : 0;
        for (p = 0; p < n_paths && ok; p++) {
            int flush = fmt == F_BF16 && strcmp(paths[p], "avx512bf16") == 0;
            if (strcmp(t_gemm16_force(fmt, paths[p]), paths[p]) != 0) continue;
            ok = T_CHECK((fmt == F_BF16 ? nn_cpu_gemm_bf16 : nn_cpu_gemm_f16)(e->ctx, 0, 0, 2048, 32, 32, 1.0f, a, 32, b,
                                                                              32, 0.0f, c, 32) == NN_OK,
                         "gemm failed");
            for (i = 0; i < 65536 && ok; i++) {
                double want = ref_dec(fmt, a[i]);
                if (flush && (a[i] & 0x7F80) == 0) want = 0.0;
                ok = T_CHECK((double)c[i] == want, "%s path %s: code %04x gave %.9g, want %.9g",
                             fmt == F_BF16 ? "bf16" : "f16", paths[p], a[i], c[i], want);
            }
        }
        t_gemm16_force(fmt, NULL);
    }
done:
    free(a);
    free(c);
    t_end();
}

/* The pool's threads give the bits of the calling thread alone (each element's K blocks
   in the same order, whatever task computes it); and the call with this backend's
   context (on OpenCL: the calling thread). */
static void check_threads(const t_env *e) {
    static const gshape big = {150, 180, 300};
    int fmt;
    if (!t_begin(e, "gemm16: bf16 and f16 with the context's threads, the same bits as with none")) return;
    for (fmt = 0; fmt < 2; fmt++) {
        gcase G;
        double worst = 0.0;
        float *c1 = (float *)malloc((size_t)big.m * (size_t)(big.n + 2) * sizeof *c1);
        float *c2 = (float *)malloc((size_t)big.m * (size_t)(big.n + 2) * sizeof *c2);
        memset(&G, 0, sizeof G);
        t_seed(99);
        if (T_CHECK(c1 && c2 && gcase_make(&G, fmt, 0, 1, &big, 1.0f, 0.5f, 0), "out of memory") &&
            gcase_run(&G, e->ctx, "with the context", &worst, c1) && gcase_run(&G, NULL, "ctx NULL", &worst, c2))
            T_CHECK(memcmp(c1, c2, (size_t)big.m * (size_t)G.ldc * sizeof *c1) == 0,
                    "%s: the context's threads changed the bits", fmt == F_BF16 ? "bf16" : "f16");
        gcase_free(&G);
        free(c1);
        free(c2);
    }
    t_end();
}

/* The refusals, bad_rows of the calls (R_CALL): each NN_ERR_INVALID_ARGUMENT, the message
   naming the function and the values */
static uint16_t g16_a[64], g16_b[64];
static float g16_c[64];
#define G16_ROW(NAME, FN, TA, M, N, K, LDA, LDB, LDC, A, C)                                                    \
    static nn_tensor NAME(nn_graph *g, nn_compile_desc *cd) {                                                    \
        (void)g;                                                                                                 \
        (void)cd;                                                                                                \
        return CALL(FN(t_row_ctx, TA, 0, M, N, K, 1.0f, A, LDA, g16_b, LDB, 0.0f, C, LDC));                     \
    }
#define G16_ROWS(P, FN)                                                                                          \
    G16_ROW(P##_neg, FN, 0, -1, 2, 2, 2, 2, 2, g16_a, g16_c)                                                     \
    G16_ROW(P##_big, FN, 0, 2, 2, (int64_t)INT_MAX + 1, 2, 2, 2, g16_a, g16_c)                                   \
    G16_ROW(P##_lda, FN, 0, 2, 3, 4, 3, 3, 3, g16_a, g16_c)                                                      \
    G16_ROW(P##_ldat, FN, 1, 2, 3, 4, 1, 3, 3, g16_a, g16_c)                                                     \
    G16_ROW(P##_ldc, FN, 0, 2, 3, 4, 4, 3, 2, g16_a, g16_c)                                                      \
    G16_ROW(P##_nulla, FN, 0, 2, 3, 4, 4, 3, 3, NULL, g16_c)                                                     \
    G16_ROW(P##_nullc, FN, 0, 2, 3, 4, 4, 3, 3, g16_a, NULL)
G16_ROWS(g16bf, nn_cpu_gemm_bf16)
G16_ROWS(g16hf, nn_cpu_gemm_f16)
#define G16_BAD(P, FN)                                                                                                   \
    {"gemm16", FN " m = -1", P##_neg, R_INV, FN "|sizes m -1, n 2, k 2|[0, 2^31 - 1]", R_CALL},                           \
    {"gemm16", FN " k = 2^31", P##_big, R_INV, FN "|k 2147483648", R_CALL},                                              \
    {"gemm16", FN " lda < k", P##_lda, R_INV, FN "|lda 3, ldb 3, ldc 3 too small|lda >= 4", R_CALL},                     \
    {"gemm16", FN " trans_a, lda < m", P##_ldat, R_INV, FN "|trans_a 1|lda >= 2", R_CALL},                               \
    {"gemm16", FN " ldc < n", P##_ldc, R_INV, FN "|ldc >= 3", R_CALL},                                                   \
    {"gemm16", FN " a NULL", P##_nulla, R_INV, FN "|a NULL matrix (a NULL, b set, c set)", R_CALL},                      \
    {"gemm16", FN " c NULL", P##_nullc, R_INV, FN "|c NULL", R_CALL}
static const bad_row gemm16_bad[] = {G16_BAD(g16bf, "nn_cpu_gemm_bf16"), G16_BAD(g16hf, "nn_cpu_gemm_f16")};

/* Nothing to multiply: m = 0 with NULL matrices is fine; k = 0 scales C by beta. */
static void check_empty(const t_env *e) {
    float c = 2.0f;
    if (!t_begin(e, "gemm16: m = 0 with NULL matrices does nothing, k = 0 gives beta * C")) return;
    T_CHECK(nn_cpu_gemm_bf16(e->ctx, 0, 0, 0, 3, 4, 1.0f, NULL, 4, NULL, 3, 0.0f, NULL, 3) == NN_OK, "m = 0 refused");
    T_CHECK(nn_cpu_gemm_f16(e->ctx, 0, 0, 1, 1, 0, 1.0f, NULL, 1, NULL, 1, 0.5f, &c, 1) == NN_OK && c == 1.0f,
            "k = 0: C = %g, want beta * C = 1", c);
    t_end();
}

void suite_gemm16(const t_env *e) {
    check_conversions(e);
    check_gemm(e, F_BF16);
    check_gemm(e, F_F16);
    check_widening(e);
    check_threads(e);
    check_empty(e);
    t_bad_rows(e, gemm16_bad, (int)(sizeof gemm16_bad / sizeof gemm16_bad[0]));
}
