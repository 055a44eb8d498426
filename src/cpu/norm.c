/* Normalisation layers on the CPU backend: batch, layer, group and instance norm are one
   family. x is viewed as [A, C, S] (A leading elements, C channels, S trailing elements per
   channel) and its statistics are taken either per channel over A and S (batch norm) or per
   (a, group of C/G channels) over the group's channels and S (group norm; layer norm is
   [rows, features, 1] with one group, instance norm has G = C). The affine weight and bias
   are per channel. Every sum runs in one fixed order. kernels/norm.cl has the OpenCL twins.

   A norm node's attributes are an nn__norm_attr (src/ops/norm.h); nn__norm below is its
   geometry. Statistics tensors are [2, R]: the mean of each of the R groups, then their
   biased variance. */

typedef struct nn__norm {
    int64_t A, C, S, G;
    int per_channel;
    int rms; /* statistics: mean 0, the mean square for the variance */
} nn__norm;

static void nn__norm_geom(nn__norm *q, const nn__norm_attr *a) {
    q->A = a->A;
    q->C = a->C;
    q->S = a->S;
    q->G = a->groups;
    q->per_channel = a->per_channel;
    q->rms = a->rms;
}

/* R: the number of statistics groups; n: the elements in each */
static int64_t nn__norm_groups(const nn__norm *q) { return q->per_channel ? q->C : q->A * q->G; }
static int64_t nn__norm_count(const nn__norm *q) { return q->per_channel ? q->A * q->S : q->C / q->G * q->S; }

/* The elements of statistics group r: nb blocks, bs floats apart from off, each block nc
   whole channels (c0, c0+1, ...) of S contiguous floats. */
typedef struct nn__norm_span { int64_t off, nb, bs, c0, nc; } nn__norm_span;

static nn__norm_span nn__norm_span_of(const nn__norm *q, int64_t r) {
    nn__norm_span sp;
    if (q->per_channel) { /* channel r of each of the A leading elements */
        sp.off = r * q->S;
        sp.nb = q->A;
        sp.bs = q->C * q->S;
        sp.c0 = r;
        sp.nc = 1;
    } else { /* r = a * G + g: channels g*Cg .. g*Cg + Cg-1 of element a, contiguous */
        sp.nc = q->C / q->G;
        sp.off = r * sp.nc * q->S;
        sp.nb = 1;
        sp.bs = 0;
        sp.c0 = (r % q->G) * sp.nc;
    }
    return sp;
}

/* The statistics group of channel c of leading element a. */
static int64_t nn__norm_group_of(const nn__norm *q, int64_t a, int64_t c) {
    return q->per_channel ? c : a * q->G + c / (q->C / q->G);
}

/* The sum of p[0..n-1] (squares 0) or of (p[i] - sub)^2 (squares 1), in double, in four interleaved lanes
   (i mod 4) added at the end: a fixed order, without one long chain of dependent adds. */
static double nn__sum4(const float *p, int64_t n, int squares, double sub) {
    double l0 = 0.0, l1 = 0.0, l2 = 0.0, l3 = 0.0;
    int64_t i = 0;
    if (!squares) {
        for (; i + 4 <= n; i += 4) {
            l0 += p[i];
            l1 += p[i + 1];
            l2 += p[i + 2];
            l3 += p[i + 3];
        }
        for (; i < n; i++) l0 += p[i];
    } else {
        for (; i + 4 <= n; i += 4) {
            double d0 = p[i] - sub, d1 = p[i + 1] - sub, d2 = p[i + 2] - sub, d3 = p[i + 3] - sub;
            l0 += d0 * d0;
            l1 += d1 * d1;
            l2 += d2 * d2;
            l3 += d3 * d3;
        }
        for (; i < n; i++) l0 += (p[i] - sub) * (p[i] - sub);
    }
    return (l0 + l1) + (l2 + l3);
}

/* The sums over i < n of d = dy[i] * ga and of d * xhat, xhat = (x[i] - mean) * rs, in
   double, four interleaved lanes each (as nn__sum4), added to *s1 and *s2. */
static void nn__dsum4(const float *dy, const float *x, float mean, float rs, float ga, int64_t n, double *s1, double *s2) {
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, b0 = 0.0, b1 = 0.0, b2 = 0.0, b3 = 0.0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        double d0 = (double)dy[i] * ga, d1 = (double)dy[i + 1] * ga, d2 = (double)dy[i + 2] * ga, d3 = (double)dy[i + 3] * ga;
        a0 += d0;
        a1 += d1;
        a2 += d2;
        a3 += d3;
        b0 += d0 * ((double)x[i] - mean) * rs;
        b1 += d1 * ((double)x[i + 1] - mean) * rs;
        b2 += d2 * ((double)x[i + 2] - mean) * rs;
        b3 += d3 * ((double)x[i + 3] - mean) * rs;
    }
    for (; i < n; i++) {
        double d = (double)dy[i] * ga;
        a0 += d;
        b0 += d * ((double)x[i] - mean) * rs;
    }
    *s1 += (a0 + a1) + (a2 + a3);
    *s2 += (b0 + b1) + (b2 + b3);
}

/* Layer norm's view (S 1, one group per leading element, not per channel): each group a
   row of C contiguous floats. The loops below take it row by row, with the index arithmetic
   and the row's rstd hoisted; a row's sums (mean, variance, the two of dx) run in four
   interleaved double lanes, as nn__sum4 and nn__dsum4 do over a channel's S (not one chain:
   a third of the time of a tiny GPT's layer norms; the last bits of layer norm changed). */
static int nn__norm_rows(const nn__norm *q) { return q->S == 1 && q->G == 1 && !q->per_channel; }

/* ---- layer norm's rows in AVX2 vectors (C a multiple of 8, AVX2 or AVX-512 CPUs): the
   row loops below, each element's and each lane's operations in the same order (a row's four
   double lanes are one __m256d, added up as (l0 + l1) + (l2 + l3)), so the same bits; the
   plain loops were the tiny GPT's third largest non-GEMM cost (about 10 ms a step on one
   core). nn__norm_vec = 0 keeps the plain loops (the test hook t_norm_vec: tests/test_norm.c
   compares both bit for bit, layer norm at C = 136; at C = 8, 128, 200 with and without
   the affine and rms, a harness outside tests/ did). ---- */
static int nn__norm_vec = 1;
static int nn__norm_rows_vec(const nn__norm *q) { return nn__norm_vec && nn__norm_rows(q) && q->C % 8 == 0 && nn__vm_isa() >= 1; }
static float nn__norm_rstd(const float *stats, int64_t R, int64_t r, float eps);
/* the sums nn__bn_sums_avx2 (below) takes */
#define NN__BN_SUM 0 /* s1 += x */
#define NN__BN_SQ 1  /* s1 += (x - sub)^2, in double */
#define NN__BN_D 2   /* d = dy * ga: s1 += d, s2 += d * (x - mean) * rs, in double (nn__dsum4) */
#define NN__BN_W 3   /* s1 += dy * ((x - mean) * rs), the product in float (the weight's gradient) */
static int nn__bn_vec(void) { return nn__norm_vec && nn__vm_isa() >= 1; }
#if defined(NN__VM_X86)
#define NN__LN_TGT __attribute__((target("avx2")))
NN__LN_TGT static inline double nn__ln_hsum(__m256d v) {
    double l[4];
    _mm256_storeu_pd(l, v);
    return (l[0] + l[1]) + (l[2] + l[3]);
}
NN__LN_TGT static inline __m256d nn__ln_pd(const float *p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }

/* nn__norm_stats_range's rows r0..r1-1, two at a time (their chains of adds overlap) */
NN__LN_TGT static void nn__ln_stats_avx2(const nn__norm *q, float *stats, const float *x, int64_t r0, int64_t r1) {
    int64_t R = nn__norm_groups(q), C = q->C, r, i, k, nr;
    for (r = r0; r < r1; r += nr) {
        const float *p[2];
        __m256d acc[2], m[2];
        double mean[2];
        nr = r + 1 < r1 ? 2 : 1;
        for (k = 0; k < 2; k++) p[k] = x + (r + (k < nr ? k : 0)) * C, acc[k] = _mm256_setzero_pd(), mean[k] = 0.0;
        if (!q->rms) {
            for (i = 0; i < C; i += 4)
                for (k = 0; k < 2; k++) acc[k] = _mm256_add_pd(acc[k], nn__ln_pd(p[k] + i));
            for (k = 0; k < 2; k++) mean[k] = nn__ln_hsum(acc[k]) / (double)C;
        }
        for (k = 0; k < 2; k++) m[k] = _mm256_set1_pd(mean[k]), acc[k] = _mm256_setzero_pd();
        for (i = 0; i < C; i += 4)
            for (k = 0; k < 2; k++) {
                __m256d d = _mm256_sub_pd(nn__ln_pd(p[k] + i), m[k]);
                acc[k] = _mm256_add_pd(acc[k], _mm256_mul_pd(d, d));
            }
        for (k = 0; k < nr; k++) {
            stats[r + k] = (float)mean[k];
            stats[R + r + k] = (float)(nn__ln_hsum(acc[k]) / (double)C);
        }
    }
}

/* nn__norm_forward_range's elements ac0..ac1-1 */
NN__LN_TGT static void nn__ln_forward_avx2(const nn__norm *q, float *y, const float *x, const float *stats, const float *gamma,
                                          const float *beta, float eps, int64_t ac0, int64_t ac1) {
    int64_t R = nn__norm_groups(q), C = q->C, ac;
    for (ac = ac0; ac < ac1;) {
        int64_t a = ac / C, c = ac % C, end = (a + 1) * C < ac1 ? (a + 1) * C : ac1;
        float mean = stats[a], rs = nn__norm_rstd(stats, R, a, eps);
        __m256 vm = _mm256_set1_ps(mean), vr = _mm256_set1_ps(rs), one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
        for (; ac + 8 <= end; ac += 8, c += 8) {
            __m256 scale = _mm256_mul_ps(vr, gamma ? _mm256_loadu_ps(gamma + c) : one), shift = beta ? _mm256_loadu_ps(beta + c) : zero;
            _mm256_storeu_ps(y + ac, _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + ac), vm), scale), shift));
        }
        for (; ac < end; ac++, c++) {
            float scale = rs * (gamma ? gamma[c] : 1.0f), shift = beta ? beta[c] : 0.0f;
            y[ac] = (x[ac] - mean) * scale + shift;
        }
    }
}

/* nn__norm_backward_data_range's rows r0..r1-1 */
NN__LN_TGT static void nn__ln_dx_avx2(const nn__norm *q, float *dx, const float *x, const float *stats, const float *dy,
                                     const float *gamma, int const_stats, float eps, int64_t r0, int64_t r1) {
    int64_t R = nn__norm_groups(q), C = q->C, r, ci;
    __m256 one = _mm256_set1_ps(1.0f);
    for (r = r0; r < r1; r++) {
        const float *xr = x + r * C, *dr = dy + r * C;
        float *dxr = dx + r * C, mean = stats[r], rs = nn__norm_rstd(stats, R, r, eps);
        double s1 = 0.0, s2 = 0.0;
        __m256 vm = _mm256_set1_ps(mean), vr = _mm256_set1_ps(rs), m1, m2;
        if (!const_stats) {
            __m256d a = _mm256_setzero_pd(), b = _mm256_setzero_pd(), md = _mm256_set1_pd((double)mean), rd = _mm256_set1_pd((double)rs);
            for (ci = 0; ci < C; ci += 4) {
                __m256d d = nn__ln_pd(dr + ci);
                if (gamma) d = _mm256_mul_pd(d, nn__ln_pd(gamma + ci));
                a = _mm256_add_pd(a, d);
                b = _mm256_add_pd(b, _mm256_mul_pd(_mm256_mul_pd(d, _mm256_sub_pd(nn__ln_pd(xr + ci), md)), rd));
            }
            s1 = nn__ln_hsum(a);
            s2 = nn__ln_hsum(b);
        }
        m1 = _mm256_set1_ps((float)(s1 / (double)C));
        m2 = _mm256_set1_ps((float)(s2 / (double)C));
        for (ci = 0; ci < C; ci += 8) {
            __m256 d = _mm256_mul_ps(_mm256_loadu_ps(dr + ci), gamma ? _mm256_loadu_ps(gamma + ci) : one);
            __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + ci), vm), vr);
            _mm256_storeu_ps(dxr + ci, _mm256_mul_ps(vr, _mm256_sub_ps(_mm256_sub_ps(d, m1), _mm256_mul_ps(xh, m2))));
        }
    }
}

/* nn__ln_affine_avx2's and _avx512's chunk of rows from a0 (64, or what is left): its row
   count, and each row's mean and rstd into mean and rs (none without x: the bias's gradient) */
static inline int64_t nn__ln_affine_rows(const nn__norm *q, const float *x, const float *stats, float eps, int64_t a0,
                                  float *mean, float *rs) {
    int64_t R = nn__norm_groups(q), na = q->A - a0 < 64 ? q->A - a0 : 64, a;
    for (a = 0; a < na && x; a++) mean[a] = stats[a0 + a], rs[a] = nn__norm_rstd(stats, R, a0 + a, eps);
    return na;
}

/* Their channels c0..ce-1's double sums (accs from channel c0) rounded into out */
NN__LN_TGT static inline void nn__ln_affine_out(float *out, const double *accs, int64_t c0, int64_t ce) {
    int64_t cb;
    for (cb = c0; cb < ce; cb += 4) _mm_storeu_ps(out + cb, _mm256_cvtpd_ps(_mm256_loadu_pd(accs + (cb - c0))));
}

/* nn__norm_backward_affine_range's channels c0..c1-1 (up to 1,024; the channels past the
   last whole block of 32 are left to the plain loop, whose start it returns): chunks of 64
   rows, each row's mean and rstd computed once per chunk (not once per channel block), then
   each block of 32 channels over the chunk's rows in order in 8 double accumulators */
NN__LN_TGT static int64_t nn__ln_affine_avx2(const nn__norm *q, float *out, const float *x, const float *stats, const float *dy,
                                            float eps, int64_t c0, int64_t c1) {
    int64_t C = q->C, a, a0, na, cb, ce = c0 + (c1 - c0) / 32 * 32;
    double accs[1024];
    float mean[64], rs[64];
    int k;
    if (c1 - c0 > 1024) return c0;
    for (cb = c0; cb < ce; cb++) accs[cb - c0] = 0.0;
    for (a0 = 0; a0 < q->A; a0 += na) {
        na = nn__ln_affine_rows(q, x, stats, eps, a0, mean, rs);
        for (cb = c0; cb < ce; cb += 32) {
            __m256d acc[8];
            for (k = 0; k < 8; k++) acc[k] = _mm256_loadu_pd(accs + (cb - c0) + 4 * k);
            for (a = 0; a < na; a++) {
                const float *dd = dy + (a0 + a) * C + cb;
                if (x) {
                    const float *xx = x + (a0 + a) * C + cb;
                    __m256 vm = _mm256_set1_ps(mean[a]), vr = _mm256_set1_ps(rs[a]);
                    for (k = 0; k < 4; k++) {
                        __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xx + 8 * k), vm), vr);
                        acc[2 * k] = _mm256_add_pd(acc[2 * k], _mm256_mul_pd(nn__ln_pd(dd + 8 * k), _mm256_cvtps_pd(_mm256_castps256_ps128(xh))));
                        acc[2 * k + 1] = _mm256_add_pd(acc[2 * k + 1], _mm256_mul_pd(nn__ln_pd(dd + 8 * k + 4), _mm256_cvtps_pd(_mm256_extractf128_ps(xh, 1))));
                    }
                } else
                    for (k = 0; k < 8; k++) acc[k] = _mm256_add_pd(acc[k], nn__ln_pd(dd + 4 * k));
            }
            for (k = 0; k < 8; k++) _mm256_storeu_pd(accs + (cb - c0) + 4 * k, acc[k]);
        }
    }
    nn__ln_affine_out(out, accs, c0, ce);
    return ce;
}

/* nn__ln_affine_avx2 with AVX-512's eight doubles a vector: a block of 32 channels in 4
   accumulators, not 8, channel c in the same lane of its own accumulator and the rows in
   the same order, so the same bits with half the double instructions (the weight's
   gradient was the largest of the tiny GPT's layer-norm loops). The widening is the zero-masked
   form with every lane set (the same values): g++ warns on _mm512_cvtps_pd's undefined
   pass-through as maybe-uninitialized. */
__attribute__((target("avx512f"))) static int64_t nn__ln_affine_avx512(const nn__norm *q, float *out, const float *x, const float *stats,
                                                                       const float *dy, float eps, int64_t c0, int64_t c1) {
    int64_t C = q->C, a, a0, na, cb, ce = c0 + (c1 - c0) / 32 * 32;
    double accs[1024];
    float mean[64], rs[64];
    int k;
    if (c1 - c0 > 1024) return c0;
    for (cb = c0; cb < ce; cb++) accs[cb - c0] = 0.0;
    for (a0 = 0; a0 < q->A; a0 += na) {
        na = nn__ln_affine_rows(q, x, stats, eps, a0, mean, rs);
        for (cb = c0; cb < ce; cb += 32) {
            __m512d acc[4];
            for (k = 0; k < 4; k++) acc[k] = _mm512_loadu_pd(accs + (cb - c0) + 8 * k);
            for (a = 0; a < na; a++) {
                const float *dd = dy + (a0 + a) * C + cb;
                if (x) {
                    const float *xx = x + (a0 + a) * C + cb;
                    __m256 vm = _mm256_set1_ps(mean[a]), vr = _mm256_set1_ps(rs[a]);
                    for (k = 0; k < 4; k++) {
                        __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xx + 8 * k), vm), vr);
                        acc[k] = _mm512_add_pd(acc[k], _mm512_mul_pd(_mm512_maskz_cvtps_pd((__mmask8)0xFF, _mm256_loadu_ps(dd + 8 * k)), _mm512_maskz_cvtps_pd((__mmask8)0xFF, xh)));
                    }
                } else
                    for (k = 0; k < 4; k++) acc[k] = _mm512_add_pd(acc[k], _mm512_maskz_cvtps_pd((__mmask8)0xFF, _mm256_loadu_ps(dd + 8 * k)));
            }
            for (k = 0; k < 4; k++) _mm512_storeu_pd(accs + (cb - c0) + 8 * k, acc[k]);
        }
    }
    nn__ln_affine_out(out, accs, c0, ce);
    return ce;
}

/* ---- batch norm's sums in AVX2: the sums of a channel over the batch (one image's S
   contiguous floats at a time, stride floats apart) that nn__sum4, nn__dsum4 and the weight
   gradient's loop take one image at a time, four double lanes each, a chain of dependent
   adds per lane: here four images side by side, each image's four lanes one __m256d, its
   tail into lane 0 after them, (l0 + l1) + (l2 + l3), then added to the channel's total in
   image order. The same operations per element and lane, so the same bits; four chains in
   flight instead of one (the CNN step's batch norms were a fifth of its time on one core). */
#define NN__BN_STEP4(F) F(0) F(1) F(2) F(3)
NN__LN_TGT static void nn__bn_sums_avx2(int kind, const float *x, const float *dy, int64_t stride, int64_t nimg, int64_t S,
                                        double sub, float mean, float rs, float ga, double *s1, double *s2) {
    const __m256d vsub = _mm256_set1_pd(sub), vga = _mm256_set1_pd((double)ga), vmean = _mm256_set1_pd((double)mean),
                  vrs = _mm256_set1_pd((double)rs);
    const __m128 fmean = _mm_set1_ps(mean), frs = _mm_set1_ps(rs);
    int64_t b, i, k, nk, S4 = S / 4 * 4;
    for (b = 0; b < nimg; b += nk) {
        const float *xp[4], *dp[4];
        double l[4][4], m[4][4];
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0, c0 = a0, c1 = a0, c2 = a0, c3 = a0;
        nk = nimg - b < 4 ? nimg - b : 4;
        for (k = 0; k < 4; k++) { /* images past the end repeat the first: computed, not used */
            int64_t o = (b + (k < nk ? k : 0)) * stride;
            xp[k] = x ? x + o : NULL;
            dp[k] = dy ? dy + o : NULL;
        }
        switch (kind) {
        case NN__BN_SUM:
#define NN__BN_F(k) a##k = _mm256_add_pd(a##k, nn__ln_pd(xp[k] + i));
            for (i = 0; i < S4; i += 4) { NN__BN_STEP4(NN__BN_F) }
#undef NN__BN_F
            break;
        case NN__BN_SQ:
#define NN__BN_F(k)                                                  \
    {                                                                \
        __m256d d = _mm256_sub_pd(nn__ln_pd(xp[k] + i), vsub);      \
        a##k = _mm256_add_pd(a##k, _mm256_mul_pd(d, d));            \
    }
            for (i = 0; i < S4; i += 4) { NN__BN_STEP4(NN__BN_F) }
#undef NN__BN_F
            break;
        case NN__BN_D:
#define NN__BN_F(k)                                                                                                     \
    {                                                                                                                   \
        __m256d d = _mm256_mul_pd(nn__ln_pd(dp[k] + i), vga);                                                          \
        a##k = _mm256_add_pd(a##k, d);                                                                                  \
        c##k = _mm256_add_pd(c##k, _mm256_mul_pd(_mm256_mul_pd(d, _mm256_sub_pd(nn__ln_pd(xp[k] + i), vmean)), vrs)); \
    }
            for (i = 0; i < S4; i += 4) { NN__BN_STEP4(NN__BN_F) }
#undef NN__BN_F
            break;
        default:
#define NN__BN_F(k)                                                                                         \
    {                                                                                                       \
        __m128 t = _mm_mul_ps(_mm_sub_ps(_mm_loadu_ps(xp[k] + i), fmean), frs);                           \
        a##k = _mm256_add_pd(a##k, _mm256_mul_pd(nn__ln_pd(dp[k] + i), _mm256_cvtps_pd(t)));             \
    }
            for (i = 0; i < S4; i += 4) { NN__BN_STEP4(NN__BN_F) }
#undef NN__BN_F
            break;
        }
        _mm256_storeu_pd(l[0], a0), _mm256_storeu_pd(l[1], a1), _mm256_storeu_pd(l[2], a2), _mm256_storeu_pd(l[3], a3);
        _mm256_storeu_pd(m[0], c0), _mm256_storeu_pd(m[1], c1), _mm256_storeu_pd(m[2], c2), _mm256_storeu_pd(m[3], c3);
        for (k = 0; k < nk; k++) {
            for (i = S4; i < S; i++) { /* the tail in lane 0, as the plain loops */
                if (kind == NN__BN_SUM) l[k][0] += xp[k][i];
                else if (kind == NN__BN_SQ) l[k][0] += (xp[k][i] - sub) * (xp[k][i] - sub);
                else if (kind == NN__BN_D) {
                    double d = (double)dp[k][i] * ga;
                    l[k][0] += d;
                    m[k][0] += d * ((double)xp[k][i] - mean) * rs;
                } else
                    l[k][0] += (double)dp[k][i] * ((xp[k][i] - mean) * rs);
            }
            *s1 += (l[k][0] + l[k][1]) + (l[k][2] + l[k][3]);
            if (kind == NN__BN_D) *s2 += (m[k][0] + m[k][1]) + (m[k][2] + m[k][3]);
        }
    }
}
#undef NN__BN_STEP4

/* ---- the norms' elementwise passes over a run of n floats: y = (x - mean) * scale + shift
   (the forward) and dx = rs * ((dy * ga - m1) - ((x - mean) * rs) * m2) (dx with the sums
   m1, m2). Each element's operations in the plain loops' order, one rounding each (no
   contraction: src/base/fp_begin.h), so the same bits; the plain loops ran one float at a
   time (about a tenth of the CNN step on one core). AVX-512 masks its tail, AVX2 leaves
   it to the plain expression. ---- */
__attribute__((target("avx512f"))) static void nn__norm_fwd_row_avx512(float *y, const float *x, int64_t n, float mean,
                                                                       float scale, float shift) {
    const __m512 vm = _mm512_set1_ps(mean), vs = _mm512_set1_ps(scale), vb = _mm512_set1_ps(shift);
    int64_t i;
    for (i = 0; i < n; i += 16) {
        __mmask16 k = nn__vmask_avx512(n - i);
        __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        _mm512_mask_storeu_ps(y + i, k, _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(v, vm), vs), vb));
    }
}
__attribute__((target("avx512f"))) static void nn__norm_dx_row_avx512(float *dx, const float *x, const float *dy, int64_t n,
                                                                      float ga, float mean, float rs, float m1, float m2) {
    const __m512 vg = _mm512_set1_ps(ga), vm = _mm512_set1_ps(mean), vr = _mm512_set1_ps(rs), v1 = _mm512_set1_ps(m1),
                 v2 = _mm512_set1_ps(m2);
    int64_t i;
    for (i = 0; i < n; i += 16) {
        __mmask16 k = nn__vmask_avx512(n - i);
        __m512 d = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dy + i), vg);
        __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm), vr);
        _mm512_mask_storeu_ps(dx + i, k, _mm512_mul_ps(vr, _mm512_sub_ps(_mm512_sub_ps(d, v1), _mm512_mul_ps(xh, v2))));
    }
}
NN__LN_TGT static void nn__norm_fwd_row_avx2(float *y, const float *x, int64_t n, float mean, float scale, float shift) {
    const __m256 vm = _mm256_set1_ps(mean), vs = _mm256_set1_ps(scale), vb = _mm256_set1_ps(shift);
    int64_t i;
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vs), vb));
    for (; i < n; i++) y[i] = (x[i] - mean) * scale + shift;
}
NN__LN_TGT static void nn__norm_dx_row_avx2(float *dx, const float *x, const float *dy, int64_t n, float ga, float mean,
                                            float rs, float m1, float m2) {
    const __m256 vg = _mm256_set1_ps(ga), vm = _mm256_set1_ps(mean), vr = _mm256_set1_ps(rs), v1 = _mm256_set1_ps(m1),
                 v2 = _mm256_set1_ps(m2);
    int64_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 d = _mm256_mul_ps(_mm256_loadu_ps(dy + i), vg), xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vr);
        _mm256_storeu_ps(dx + i, _mm256_mul_ps(vr, _mm256_sub_ps(_mm256_sub_ps(d, v1), _mm256_mul_ps(xh, v2))));
    }
    for (; i < n; i++) {
        float d = dy[i] * ga, xh = (x[i] - mean) * rs;
        dx[i] = rs * (d - m1 - xh * m2);
    }
}
/* 1 when the run went to a vector loop (nn__bn_vec()), else 0: the caller runs the plain one */
static int nn__norm_fwd_row_vec(float *y, const float *x, int64_t n, float mean, float scale, float shift) {
    if (!nn__bn_vec()) return 0;
    if (nn__vm_isa() == 2) nn__norm_fwd_row_avx512(y, x, n, mean, scale, shift);
    else nn__norm_fwd_row_avx2(y, x, n, mean, scale, shift);
    return 1;
}
static int nn__norm_dx_row_vec(float *dx, const float *x, const float *dy, int64_t n, float ga, float mean, float rs, float m1,
                               float m2) {
    if (!nn__bn_vec()) return 0;
    if (nn__vm_isa() == 2) nn__norm_dx_row_avx512(dx, x, dy, n, ga, mean, rs, m1, m2);
    else nn__norm_dx_row_avx2(dx, x, dy, n, ga, mean, rs, m1, m2);
    return 1;
}
#else
static int nn__norm_fwd_row_vec(float *y, const float *x, int64_t n, float mean, float scale, float shift) {
    (void)y, (void)x, (void)n, (void)mean, (void)scale, (void)shift;
    return 0;
}
static int nn__norm_dx_row_vec(float *dx, const float *x, const float *dy, int64_t n, float ga, float mean, float rs, float m1,
                               float m2) {
    (void)dx, (void)x, (void)dy, (void)n, (void)ga, (void)mean, (void)rs, (void)m1, (void)m2;
    return 0;
}
static void nn__bn_sums_avx2(int kind, const float *x, const float *dy, int64_t stride, int64_t nimg, int64_t S, double sub,
                             float mean, float rs, float ga, double *s1, double *s2) {
    (void)kind, (void)x, (void)dy, (void)stride, (void)nimg, (void)S, (void)sub, (void)mean, (void)rs, (void)ga, (void)s1, (void)s2;
}
static void nn__ln_stats_avx2(const nn__norm *q, float *stats, const float *x, int64_t r0, int64_t r1) { (void)q, (void)stats, (void)x, (void)r0, (void)r1; }
static void nn__ln_forward_avx2(const nn__norm *q, float *y, const float *x, const float *stats, const float *gamma,
                                const float *beta, float eps, int64_t ac0, int64_t ac1) {
    (void)q, (void)y, (void)x, (void)stats, (void)gamma, (void)beta, (void)eps, (void)ac0, (void)ac1;
}
static void nn__ln_dx_avx2(const nn__norm *q, float *dx, const float *x, const float *stats, const float *dy,
                           const float *gamma, int const_stats, float eps, int64_t r0, int64_t r1) {
    (void)q, (void)dx, (void)x, (void)stats, (void)dy, (void)gamma, (void)const_stats, (void)eps, (void)r0, (void)r1;
}
static int64_t nn__ln_affine_avx2(const nn__norm *q, float *out, const float *x, const float *stats, const float *dy, float eps,
                                  int64_t c0, int64_t c1) {
    (void)q, (void)out, (void)x, (void)stats, (void)dy, (void)eps, (void)c1;
    return c0;
}
static int64_t nn__ln_affine_avx512(const nn__norm *q, float *out, const float *x, const float *stats, const float *dy, float eps,
                                    int64_t c0, int64_t c1) {
    (void)q, (void)out, (void)x, (void)stats, (void)dy, (void)eps, (void)c1;
    return c0;
}
#endif

/* stats [2, R] = the mean and biased variance of groups r0..r1-1 of x (two passes, in double) */
static void nn__norm_stats_range(const nn__norm *q, float *stats, const float *x, int64_t r0, int64_t r1) {
    int64_t R = nn__norm_groups(q), n = nn__norm_count(q), r, b, ci;
    if (nn__norm_rows_vec(q)) {
        nn__ln_stats_avx2(q, stats, x, r0, r1);
        return;
    }
    if (nn__norm_rows(q)) {
        for (r = r0; r < r1; r++) {
            const float *p = x + r * q->C;
            double mean = q->rms ? 0.0 : nn__sum4(p, q->C, 0, 0.0) / (double)n, var = nn__sum4(p, q->C, 1, mean);
            stats[r] = (float)mean;
            stats[R + r] = (float)(var / (double)n);
        }
        return;
    }
    for (r = r0; r < r1; r++) {
        nn__norm_span sp = nn__norm_span_of(q, r);
        double sum = 0.0, mean, var = 0.0;
        if (sp.nc == 1 && nn__bn_vec()) { /* a channel over the batch (batch norm), or one image's (instance norm) */
            if (!q->rms) nn__bn_sums_avx2(NN__BN_SUM, x + sp.off, NULL, sp.bs, sp.nb, q->S, 0.0, 0.0f, 0.0f, 0.0f, &sum, NULL);
            mean = sum / (double)n;
            nn__bn_sums_avx2(NN__BN_SQ, x + sp.off, NULL, sp.bs, sp.nb, q->S, mean, 0.0f, 0.0f, 0.0f, &var, NULL);
            stats[r] = (float)mean;
            stats[R + r] = (float)(var / (double)n);
            continue;
        }
        for (b = 0; b < sp.nb && !q->rms; b++)
            for (ci = 0; ci < sp.nc; ci++) {
                const float *p = x + sp.off + b * sp.bs + ci * q->S;
                sum += nn__sum4(p, q->S, 0, 0.0);
            }
        mean = sum / (double)n;
        for (b = 0; b < sp.nb; b++)
            for (ci = 0; ci < sp.nc; ci++) {
                const float *p = x + sp.off + b * sp.bs + ci * q->S;
                var += nn__sum4(p, q->S, 1, mean);
            }
        stats[r] = (float)mean;
        stats[R + r] = (float)(var / (double)n);
    }
}

static float nn__norm_rstd(const float *stats, int64_t R, int64_t r, float eps) {
    return (float)(1.0 / sqrt((double)stats[R + r] + (double)eps));
}

/* y = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c] for the rows ac0..ac1-1 of
   [A*C, S]; gamma, beta may be NULL */
static void nn__norm_forward_range(const nn__norm *q, float *y, const float *x, const float *stats, const float *gamma,
                                   const float *beta, float eps, int64_t ac0, int64_t ac1) {
    int64_t R = nn__norm_groups(q), ac, s;
    if (nn__norm_rows_vec(q)) {
        nn__ln_forward_avx2(q, y, x, stats, gamma, beta, eps, ac0, ac1);
        return;
    }
    if (nn__norm_rows(q)) {
        for (ac = ac0; ac < ac1;) {
            int64_t a = ac / q->C, c = ac % q->C, end = (a + 1) * q->C < ac1 ? (a + 1) * q->C : ac1;
            float mean = stats[a], rs = nn__norm_rstd(stats, R, a, eps);
            for (; ac < end; ac++, c++) {
                float scale = rs * (gamma ? gamma[c] : 1.0f), shift = beta ? beta[c] : 0.0f;
                y[ac] = (x[ac] - mean) * scale + shift;
            }
        }
        return;
    }
    for (ac = ac0; ac < ac1; ac++) {
        int64_t a = ac / q->C, c = ac % q->C, r = nn__norm_group_of(q, a, c), o = ac * q->S;
        float mean = stats[r], scale = nn__norm_rstd(stats, R, r, eps) * (gamma ? gamma[c] : 1.0f);
        float shift = beta ? beta[c] : 0.0f;
        if (nn__norm_fwd_row_vec(y + o, x + o, q->S, mean, scale, shift)) continue;
        for (s = 0; s < q->S; s++) y[o + s] = (x[o + s] - mean) * scale + shift;
    }
}

/* dx of the normalisation. With statistics of x itself, per group (n elements, d = dy*gamma,
   xhat the normalised x): dx = rstd * (d - mean(d) - xhat * mean(d * xhat)). With constant
   statistics (eval batch norm) the mean and variance do not depend on x: dx = rstd * d. */
static void nn__norm_backward_data_range(const nn__norm *q, float *dx, const float *x, const float *stats, const float *dy,
                                         const float *gamma, int const_stats, float eps, int64_t r0, int64_t r1) {
    int64_t R = nn__norm_groups(q), n = nn__norm_count(q), r, b, ci, s;
    if (nn__norm_rows_vec(q)) {
        nn__ln_dx_avx2(q, dx, x, stats, dy, gamma, const_stats, eps, r0, r1);
        return;
    }
    if (nn__norm_rows(q)) {
        for (r = r0; r < r1; r++) {
            const float *xr = x + r * q->C, *dr = dy + r * q->C;
            float *dxr = dx + r * q->C, mean = stats[r], rs = nn__norm_rstd(stats, R, r, eps), m1, m2;
            double s1 = 0.0, s2 = 0.0;
            if (!const_stats) { /* four interleaved lanes, the tail in lane 0, as nn__dsum4 */
                double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, b0 = 0.0, b1 = 0.0, b2 = 0.0, b3 = 0.0;
                for (ci = 0; ci + 4 <= q->C; ci += 4) {
                    double d0 = (double)dr[ci] * (gamma ? gamma[ci] : 1.0f), d1 = (double)dr[ci + 1] * (gamma ? gamma[ci + 1] : 1.0f);
                    double d2 = (double)dr[ci + 2] * (gamma ? gamma[ci + 2] : 1.0f), d3 = (double)dr[ci + 3] * (gamma ? gamma[ci + 3] : 1.0f);
                    a0 += d0;
                    a1 += d1;
                    a2 += d2;
                    a3 += d3;
                    b0 += d0 * ((double)xr[ci] - mean) * rs;
                    b1 += d1 * ((double)xr[ci + 1] - mean) * rs;
                    b2 += d2 * ((double)xr[ci + 2] - mean) * rs;
                    b3 += d3 * ((double)xr[ci + 3] - mean) * rs;
                }
                for (; ci < q->C; ci++) {
                    double d = (double)dr[ci] * (gamma ? gamma[ci] : 1.0f);
                    a0 += d;
                    b0 += d * ((double)xr[ci] - mean) * rs;
                }
                s1 = (a0 + a1) + (a2 + a3);
                s2 = (b0 + b1) + (b2 + b3);
            }
            m1 = (float)(s1 / (double)n);
            m2 = (float)(s2 / (double)n);
            for (ci = 0; ci < q->C; ci++) {
                float d = dr[ci] * (gamma ? gamma[ci] : 1.0f), xh = (xr[ci] - mean) * rs;
                dxr[ci] = rs * (d - m1 - xh * m2);
            }
        }
        return;
    }
    for (r = r0; r < r1; r++) {
        nn__norm_span sp = nn__norm_span_of(q, r);
        float mean = stats[r], rs = nn__norm_rstd(stats, R, r, eps);
        double s1 = 0.0, s2 = 0.0;
        float m1, m2;
        if (sp.nc == 1 && nn__bn_vec()) {
            if (!const_stats)
                nn__bn_sums_avx2(NN__BN_D, x + sp.off, dy + sp.off, sp.bs, sp.nb, q->S, 0.0, mean, rs, gamma ? gamma[sp.c0] : 1.0f,
                                 &s1, &s2);
        } else
            for (b = 0; b < sp.nb && !const_stats; b++)
                for (ci = 0; ci < sp.nc; ci++) {
                    int64_t o = sp.off + b * sp.bs + ci * q->S;
                    nn__dsum4(dy + o, x + o, mean, rs, gamma ? gamma[sp.c0 + ci] : 1.0f, q->S, &s1, &s2);
                }
        m1 = (float)(s1 / (double)n);
        m2 = (float)(s2 / (double)n);
        for (b = 0; b < sp.nb; b++)
            for (ci = 0; ci < sp.nc; ci++) {
                int64_t o = sp.off + b * sp.bs + ci * q->S;
                float ga = gamma ? gamma[sp.c0 + ci] : 1.0f;
                if (nn__norm_dx_row_vec(dx + o, x + o, dy + o, q->S, ga, mean, rs, m1, m2)) continue;
                for (s = 0; s < q->S; s++) {
                    float d = dy[o + s] * ga, xh = (x[o + s] - mean) * rs;
                    dx[o + s] = rs * (d - m1 - xh * m2);
                }
            }
    }
}

/* out [C] = sum over A and S of dy * xhat (the weight's gradient), or of dy when x is NULL
   (the bias's gradient), for channels c0..c1-1 */
static void nn__norm_backward_affine_range(const nn__norm *q, float *out, const float *x, const float *stats,
                                           const float *dy, float eps, int64_t c0, int64_t c1) {
    int64_t R = nn__norm_groups(q), a, c, s;
    if (nn__norm_rows_vec(q))
        c0 = nn__vm_isa() == 2 ? nn__ln_affine_avx512(q, out, x, stats, dy, eps, c0, c1) : nn__ln_affine_avx2(q, out, x, stats, dy, eps, c0, c1);
    if (nn__norm_rows(q)) { /* blocks of 64 channels, the rows in order: each channel's sum as below */
        int64_t cb, ce;
        for (cb = c0; cb < c1; cb = ce) {
            double acc[64];
            ce = cb + 64 < c1 ? cb + 64 : c1;
            for (c = cb; c < ce; c++) acc[c - cb] = 0.0;
            for (a = 0; a < q->A; a++) {
                const float *xx = x ? x + a * q->C : NULL, *dd = dy + a * q->C;
                if (x) {
                    float mean = stats[a], rs = nn__norm_rstd(stats, R, a, eps);
                    for (c = cb; c < ce; c++) acc[c - cb] += (double)dd[c] * ((xx[c] - mean) * rs);
                } else
                    for (c = cb; c < ce; c++) acc[c - cb] += dd[c];
            }
            for (c = cb; c < ce; c++) out[c] = (float)acc[c - cb];
        }
        return;
    }
    for (c = c0; c < c1; c++) {
        double acc = 0.0;
        if (q->per_channel && nn__bn_vec()) { /* batch norm: channel c's statistics for every image */
            if (x)
                nn__bn_sums_avx2(NN__BN_W, x + c * q->S, dy + c * q->S, q->C * q->S, q->A, q->S, 0.0, stats[c],
                                 nn__norm_rstd(stats, R, c, eps), 0.0f, &acc, NULL);
            else
                nn__bn_sums_avx2(NN__BN_SUM, dy + c * q->S, NULL, q->C * q->S, q->A, q->S, 0.0, 0.0f, 0.0f, 0.0f, &acc, NULL);
            out[c] = (float)acc;
            continue;
        }
        for (a = 0; a < q->A; a++) {
            int64_t r = nn__norm_group_of(q, a, c), o = (a * q->C + c) * q->S;
            float mean = x ? stats[r] : 0.0f, rs = x ? nn__norm_rstd(stats, R, r, eps) : 1.0f;
            if (x) {
                double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
                const float *xx = x + o, *dd = dy + o;
                for (s = 0; s + 4 <= q->S; s += 4) { /* four lanes, as nn__sum4 */
                    a0 += (double)dd[s] * ((xx[s] - mean) * rs);
                    a1 += (double)dd[s + 1] * ((xx[s + 1] - mean) * rs);
                    a2 += (double)dd[s + 2] * ((xx[s + 2] - mean) * rs);
                    a3 += (double)dd[s + 3] * ((xx[s + 3] - mean) * rs);
                }
                for (; s < q->S; s++) a0 += (double)dd[s] * ((xx[s] - mean) * rs);
                acc += (a0 + a1) + (a2 + a3);
            } else
                acc += nn__sum4(dy + o, q->S, 0, 0.0);
        }
        out[c] = (float)acc;
    }
}

/* RMS norm of rows r0..r1-1 of x [A, C] (PyTorch's F.rms_norm): y = x * rstd * w[c], rstd =
   1 / sqrt(mean(x^2) + eps), the mean in double (nn__sum4's order); w may be NULL. */
static float nn__rms_rstd(const float *x, int64_t C, float eps) {
    return (float)(1.0 / sqrt(nn__sum4(x, C, 1, 0.0) / (double)C + (double)eps));
}

static void nn__rms_norm_forward_range(const nn__norm *q, float *y, const float *x, const float *w, float eps, int64_t r0,
                                       int64_t r1) {
    int64_t r, c, C = q->C;
    for (r = r0; r < r1; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C, rs = nn__rms_rstd(xr, C, eps);
        if (w)
            for (c = 0; c < C; c++) yr[c] = xr[c] * rs * w[c];
        else
            for (c = 0; c < C; c++) yr[c] = xr[c] * rs;
    }
}

/* dx of RMS norm, per row (d = dy * w, xhat = x * rstd): dx = rstd * (d - xhat * mean(d * xhat)) */
static void nn__rms_norm_backward_range(const nn__norm *q, float *dx, const float *x, const float *dy, const float *w,
                                        float eps, int64_t r0, int64_t r1) {
    int64_t r, c, C = q->C;
    for (r = r0; r < r1; r++) {
        const float *xr = x + r * C, *dr = dy + r * C;
        float *out = dx + r * C, rs = nn__rms_rstd(xr, C, eps), m2;
        double s1 = 0.0, s2 = 0.0;
        if (w) {
            double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
            for (c = 0; c + 4 <= C; c += 4) { /* four lanes, as nn__sum4 */
                a0 += (double)(dr[c] * w[c]) * xr[c];
                a1 += (double)(dr[c + 1] * w[c + 1]) * xr[c + 1];
                a2 += (double)(dr[c + 2] * w[c + 2]) * xr[c + 2];
                a3 += (double)(dr[c + 3] * w[c + 3]) * xr[c + 3];
            }
            for (; c < C; c++) a0 += (double)(dr[c] * w[c]) * xr[c];
            s2 = (a0 + a1) + (a2 + a3);
        } else
            nn__dsum4(dr, xr, 0.0f, 1.0f, 1.0f, C, &s1, &s2);
        m2 = (float)(s2 * rs / (double)C);
        for (c = 0; c < C; c++) {
            float d = w ? dr[c] * w[c] : dr[c];
            out[c] = rs * (d - xr[c] * rs * m2);
        }
    }
}

/* ---- the ops over the threads: each task owns a contiguous range of groups (stats, dx),
   rows (forward) or channels (affine gradients) and sums them in the order above, so the
   results do not depend on the thread count ---- */

enum { NN__NORM_STATS, NN__NORM_FWD, NN__NORM_DX, NN__NORM_AFFINE, NN__NORM_RMS_FWD, NN__NORM_RMS_DX };
typedef struct nn__norm_job {
    const nn__norm *q;
    int kind, const_stats;
    float *out;
    const float *x, *stats, *dy, *gamma, *beta;
    float eps;
    int64_t n;     /* the range's length */
} nn__norm_job;

static void nn__norm_task(void *arg, int t, int n_tasks) {
    const nn__norm_job *j = (const nn__norm_job *)arg;
    int64_t per = (j->n + n_tasks - 1) / n_tasks, i0 = per * t, i1 = i0 + per < j->n ? i0 + per : j->n;
    if (i0 >= i1) return;
    switch (j->kind) {
    case NN__NORM_STATS: nn__norm_stats_range(j->q, j->out, j->x, i0, i1); break;
    case NN__NORM_FWD: nn__norm_forward_range(j->q, j->out, j->x, j->stats, j->gamma, j->beta, j->eps, i0, i1); break;
    case NN__NORM_DX:
        nn__norm_backward_data_range(j->q, j->out, j->x, j->stats, j->dy, j->gamma, j->const_stats, j->eps, i0, i1);
        break;
    case NN__NORM_RMS_FWD: nn__rms_norm_forward_range(j->q, j->out, j->x, j->gamma, j->eps, i0, i1); break;
    case NN__NORM_RMS_DX: nn__rms_norm_backward_range(j->q, j->out, j->x, j->dy, j->gamma, j->eps, i0, i1); break;
    default: nn__norm_backward_affine_range(j->q, j->out, j->x, j->stats, j->dy, j->eps, i0, i1); break;
    }
}

static void nn__norm_run(nn__threadpool *pool, nn__norm_job *j) {
    int64_t work = j->q->A * j->q->C * j->q->S, tasks = work >= NN__PAR_MIN ? nn__threadpool_size(pool) : 1;
    nn__threadpool_run(pool, nn__norm_task, j, (int)(tasks < j->n ? tasks : j->n));
}

static nn__norm_job nn__norm_job_of(const nn__norm *q, int kind, float *out, const float *x, const float *stats, float eps) {
    nn__norm_job j;
    memset(&j, 0, sizeof j);
    j.q = q;
    j.kind = kind;
    j.out = out;
    j.x = x;
    j.stats = stats;
    j.eps = eps;
    return j;
}

static void nn__norm_stats(nn__threadpool *pool, const nn__norm *q, float *stats, const float *x) {
    nn__norm_job j = nn__norm_job_of(q, NN__NORM_STATS, stats, x, NULL, 0.0f);
    j.n = nn__norm_groups(q);
    nn__norm_run(pool, &j);
}

static void nn__norm_forward(nn__threadpool *pool, const nn__norm *q, float *y, const float *x, const float *stats,
                             const float *gamma, const float *beta, float eps) {
    nn__norm_job j = nn__norm_job_of(q, NN__NORM_FWD, y, x, stats, eps);
    j.gamma = gamma;
    j.beta = beta;
    j.n = q->A * q->C;
    nn__norm_run(pool, &j);
}

static void nn__norm_backward_data(nn__threadpool *pool, const nn__norm *q, float *dx, const float *x, const float *stats,
                                   const float *dy, const float *gamma, int const_stats, float eps) {
    nn__norm_job j = nn__norm_job_of(q, NN__NORM_DX, dx, x, stats, eps);
    j.dy = dy;
    j.gamma = gamma;
    j.const_stats = const_stats;
    j.n = nn__norm_groups(q);
    nn__norm_run(pool, &j);
}

static void nn__norm_backward_affine(nn__threadpool *pool, const nn__norm *q, float *out, const float *x, const float *stats,
                                     const float *dy, float eps) {
    nn__norm_job j = nn__norm_job_of(q, NN__NORM_AFFINE, out, x, stats, eps);
    j.dy = dy;
    j.n = q->C;
    nn__norm_run(pool, &j);
}

/* RMS norm over x [A, C] (rows A), forward (dy NULL) or dx */
static void nn__rms_norm(nn__threadpool *pool, const nn__norm *q, float *out, const float *x, const float *dy, const float *w,
                         float eps) {
    nn__norm_job j = nn__norm_job_of(q, dy ? NN__NORM_RMS_DX : NN__NORM_RMS_FWD, out, x, NULL, eps);
    j.dy = dy;
    j.gamma = w;
    j.n = q->A;
    nn__norm_run(pool, &j);
}

/* PyTorch's running statistics: running = (1 - m) * running + m * batch, the variance
   unbiased (times n / (n - 1), n values per channel). stats [2, C] from nn__norm_stats. */
static void nn__batch_norm_running(float *rmean, float *rvar, const float *stats, int64_t C, int64_t n, float m) {
    int64_t c;
    float unbias = (float)((double)n / (double)(n - 1));
    for (c = 0; c < C; c++) {
        rmean[c] = (1.0f - m) * rmean[c] + m * stats[c];
        rvar[c] = (1.0f - m) * rvar[c] + m * stats[C + c] * unbias;
    }
}
