/* The CPU backend's shared machinery: the one CPUID probe, the vector exp (AVX-512 / AVX2+FMA
   chosen at run time) that the exp-based loops of every family use, and the parallel-for
   over the pool's threads. Each family's loops are in src/cpu/FAMILY.c, beside
   src/ops/FAMILY.c and kernels/FAMILY.cl; GEMM is src/cpu/gemm.c. */


/* ---- vectorised exp: the CPU backend's exp, expm1 and the activations and rows built on
   them, AVX-512 or AVX2+FMA chosen at run time (libm's expf elsewhere) ----
   exp(x) = 2^n * e^r, n = rint(x / ln 2), r = x - n ln 2 in two steps (Cody and Waite: n *
   0.693359375 is exact, so r is exact but for n * 2.1e-4's rounding), e^r by Cephes's
   degree-7 polynomial on |r| <= ln 2 / 2, and the scaling by 2^n rounded once, into the
   denormals too (AVX-512's scalef; with AVX2, two exact halves of n, the second product
   rounding). x is first clamped to [-104, 89] (beyond, e^x is 0 or inf in float) by selects
   that keep NaN, which then runs through the arithmetic. The error is about 1 ulp over the
   float range away from the denormals (relative 8.4e-8 at most over every 7th float, 1.2e-7
   for expm1; tests/test_numerics.c sweeps them against double exp and expm1). AVX2 and
   AVX-512 give the same bits. Every element of a loop goes through the same vector code, the last partial
   vector by masked loads and stores, so an element's bits do not depend on where a
   thread's chunk starts. */
/* What the rows below do to each element (a, b, c the inputs, s0, s1 scalars), and the
   sum of the results they return:
     EXP_SHIFT   y = exp(a - s0)                (softmax's exponentials; y may be NULL)
     SUB_EXP     y = a - exp(b) * s0            (log_softmax's gradient)
     SIGMOID_SUB y = c * (sigmoid(a) - b)       (BCE with logits' gradient)
     BCE         y = (1 - b) a + (a < 0 ? -a : 0) + log1p(exp(-|a|))   (BCE with logits, b the target)
     BCE_LOSS    y = (1 - b) a + (1 + (s0 - 1) b) (log1p(exp(-|a|)) + fmaxf(-a, 0)), s0 the
                 pos_weight (the elementwise loss's formula, src/cpu/loss.c)
     BCE_LOSS_DX y = c ((1 - b) - (1 + (s0 - 1) b) / (1 + exp(a)))  (its gradient)
     MSE         y = (a - b) (a - b)             (the elementwise MSE loss, src/cpu/loss.c)
     MSE_DX      y = c (2 (a - b))               (its gradient) */
enum { NN__VE_EXP_SHIFT, NN__VE_SUB_EXP, NN__VE_SIGMOID_SUB, NN__VE_BCE, NN__VE_BCE_LOSS, NN__VE_BCE_LOSS_DX, NN__VE_MSE,
       NN__VE_MSE_DX };

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define NN__VM_X86 1

/* 2: AVX-512F, 1: AVX2 and FMA, 0: neither. The one CPUID probe of the CPU loops
   (elementwise, vector exp, reductions, Adam, depthwise conv, and the GEMM's microkernel
   in src/cpu/gemm.c): a cached answer, the same for every context; drivers ask
   before they start threads. */
static int nn__vm_isa(void) {
    static int isa = -1;
    if (isa < 0)
        isa = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
    return isa;
}

__attribute__((target("avx512f"))) static inline __mmask16 nn__vmask_avx512(int64_t k) {
    return (__mmask16)(k >= 16 ? 0xFFFFu : (1u << k) - 1u);
}
/* p * 2^n, n integral, rounded once */
__attribute__((target("avx512f"))) static inline __m512 nn__vscale_avx512(__m512 p, __m512 n) {
    return _mm512_maskz_scalef_ps(0xFFFF, p, n); /* maskz: g++ warns on the undefined pass-through */
}
__attribute__((target("avx2,fma"))) static inline __m256i nn__vmask_avx2(int64_t k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(k >= 8 ? 8 : k)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
/* p * 2^n1 * 2^n2 with n1 = n >> 1: both factors normal for n in [-150, 128], the first
   product exact, the second rounding once; a NaN p stays NaN */
__attribute__((target("avx2,fma"))) static inline __m256 nn__vscale_avx2(__m256 p, __m256 n) {
    __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1), b = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, b), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, b), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* The template: one set of functions per instruction set, from the primitives NN__V (the
   vector type), NN__VW (its lanes), NN__SET1, NN__LOAD/NN__STORE (whole vectors),
   NN__LOADN/NN__STOREN (the first k lanes), NN__FMA, NN__ROUND (to nearest), NN__SCALE,
   NN__SEL(a, b, P, x, y) (x where a P b, else y), NN__MAX and NN__MIN (b where either is
   NaN), NN__ABS, NN__LANEF (0, 1, ...) and NN__HSUM (lanes 0.. in order). */
#define NN__VM_DEFINE(S, TGT)                                                                                    \
    TGT static inline NN__V nn__vexp_core_##S(NN__V x, NN__V *n, NN__V *em1) {                                 \
        NN__V r, q;                                                                                              \
        x = NN__MAX(NN__SET1(-104.0f), x); /* x < -104 ? -104 : x, NaN kept: one instruction, not two */     \
        x = NN__MIN(NN__SET1(89.0f), x);                                                                         \
        *n = NN__ROUND(x * NN__SET1(1.44269504088896341f));                                                      \
        r = NN__FMA(*n, NN__SET1(-0.693359375f), x);                                                             \
        r = NN__FMA(*n, NN__SET1(2.12194440e-4f), r);                                                            \
        q = NN__FMA(NN__SET1(1.9875691500e-4f), r, NN__SET1(1.3981999507e-3f));                                  \
        q = NN__FMA(q, r, NN__SET1(8.3334519073e-3f));                                                           \
        q = NN__FMA(q, r, NN__SET1(4.1665795894e-2f));                                                           \
        q = NN__FMA(q, r, NN__SET1(1.6666665459e-1f));                                                           \
        q = NN__FMA(q, r, NN__SET1(5.0000001201e-1f));                                                           \
        *em1 = NN__FMA(q, r * r, r); /* e^r - 1 */                                                               \
        return x;                                                                                                \
    }                                                                                                            \
    TGT static inline NN__V nn__vexp_##S(NN__V x) {                                                              \
        NN__V n, em1;                                                                                            \
        (void)nn__vexp_core_##S(x, &n, &em1);                                                                    \
        return NN__SCALE(em1 + NN__SET1(1.0f), n);                                                               \
    }                                                                                                            \
    /* exp(x) - 1 = 2^n (e^r - 1) + (2^n - 1), one rounding, where 2^n - 1 is exact (|n| <= 24; \
       e^r - 1 itself at n = 0, keeping x's sign of zero); exp(x) - 1 beyond */                                  \
    TGT static inline NN__V nn__vexpm1_##S(NN__V x) {                                                            \
        NN__V n, em1, xc = nn__vexp_core_##S(x, &n, &em1), one = NN__SET1(1.0f), s = NN__SCALE(one, n);         \
        NN__V big = NN__SCALE(em1 + one, n) - one, r = NN__FMA(s, em1, s - one);                                 \
        r = NN__SEL(n, NN__SET1(25.0f), _CMP_LT_OQ, r, big);                                                     \
        r = NN__SEL(n, NN__SET1(-25.0f), _CMP_GT_OQ, r, big);                                                    \
        return NN__SEL(xc, NN__SET1(0.0f), _CMP_EQ_OQ, xc, r);                                                   \
    }                                                                                                            \
    TGT static inline NN__V nn__vsigmoid_##S(NN__V v) {                                                          \
        NN__V one = NN__SET1(1.0f);                                                                              \
        return one / (one + nn__vexp_##S(-v));                                                                   \
    }                                                                                                            \
    /* log1p(u) for u in [0, 1] (the exp(-|z|) of softplus and BCE): log(w), w = 1 + u       \
       rounded, by Cephes's logf (w, or w / 2 above sqrt 2, as 1 + f), plus the rounding's     \
       part (u - (w - 1)) / w; NaN stays NaN */                                                                  \
    TGT static inline NN__V nn__vlog1p01_##S(NN__V u) {                                                          \
        NN__V one = NN__SET1(1.0f), w = one + u, e, f, z, y;                                                    \
        e = NN__SEL(w, NN__SET1(1.41421356f), _CMP_GT_OQ, one, NN__SET1(0.0f));                                  \
        f = NN__SEL(w, NN__SET1(1.41421356f), _CMP_GT_OQ, w * NN__SET1(0.5f), w) - one;                          \
        z = f * f;                                                                                               \
        y = NN__FMA(NN__SET1(7.0376836292e-2f), f, NN__SET1(-1.1514610310e-1f));                                 \
        y = NN__FMA(y, f, NN__SET1(1.1676998740e-1f));                                                           \
        y = NN__FMA(y, f, NN__SET1(-1.2420140846e-1f));                                                          \
        y = NN__FMA(y, f, NN__SET1(1.4249322787e-1f));                                                           \
        y = NN__FMA(y, f, NN__SET1(-1.6668057665e-1f));                                                          \
        y = NN__FMA(y, f, NN__SET1(2.0000714765e-1f));                                                           \
        y = NN__FMA(y, f, NN__SET1(-2.4999993993e-1f));                                                          \
        y = NN__FMA(y, f, NN__SET1(3.3333331174e-1f));                                                           \
        y = NN__FMA(e, NN__SET1(-2.12194440e-4f), y * f * z);                                                    \
        y = f + NN__FMA(z, NN__SET1(-0.5f), y);                                                                  \
        return NN__FMA(e, NN__SET1(0.693359375f), y) + (u - (w - one)) / w;                                      \
    }                                                                                                            \
    /* log(1 + exp(-|z|)), the tail of softplus and BCE with logits */                                           \
    TGT static inline NN__V nn__vlog1pexp_##S(NN__V z) {                                                         \
        return nn__vlog1p01_##S(nn__vexp_##S(-NN__ABS(z)));                                                      \
    }                                                                                                            \
    /* erf(x), at most 1 ulp from double erf (tests/test_numerics.c): |x| <= 0.927734375:     \
       x + x P(x^2); beyond: 1 - exp(Q(|x|)) with the sign of x, Q(t) ~ log erfc(t) (N.        \
       Juffa's minimax coefficients); NaN takes the first branch and stays NaN */                 \
    TGT static inline NN__V nn__verf_##S(NN__V a) {                                                              \
        NN__V t = NN__ABS(a), s = a * a, p, q, u;                                                                \
        p = NN__FMA(NN__SET1(-5.96761703e-4f), s, NN__SET1(4.99119423e-3f));                                     \
        p = NN__FMA(p, s, NN__SET1(-2.67681349e-2f));                                                            \
        p = NN__FMA(p, s, NN__SET1(1.12819925e-1f));                                                             \
        p = NN__FMA(p, s, NN__SET1(-3.76125336e-1f));                                                            \
        p = NN__FMA(p, s, NN__SET1(1.28379166e-1f));                                                             \
        p = NN__FMA(p, a, a);                                                                                    \
        if (!NN__ANYGT(t, NN__SET1(0.927734375f))) return p; /* every lane the first branch: the same bits */ \
        q = NN__FMA(NN__SET1(-1.72853470e-5f), t, NN__SET1(3.83197126e-4f));                                     \
        u = NN__FMA(NN__SET1(-3.88396438e-3f), t, NN__SET1(2.42546219e-2f));                                     \
        q = NN__FMA(q, s, u);                                                                                    \
        q = NN__FMA(q, t, NN__SET1(-1.06777877e-1f));                                                            \
        q = NN__FMA(q, t, NN__SET1(-6.34846687e-1f));                                                            \
        q = NN__FMA(q, t, NN__SET1(-1.28717512e-1f));                                                            \
        q = NN__FMA(q, t, -t);                                                                                   \
        q = NN__SET1(1.0f) - nn__vexp_##S(q);                                                                    \
        q = NN__SEL(a, NN__SET1(0.0f), _CMP_LT_OQ, -q, q);                                                       \
        return NN__SEL(t, NN__SET1(0.927734375f), _CMP_GT_OQ, q, p);                                             \
    }                                                                                                            \
    /* the exact GELU and dy times its derivative, as kernels/activation.h writes them */                         \
    TGT static inline NN__V nn__vgelu_##S(NN__V v) {                                                             \
        return NN__SET1(0.5f) * v * (NN__SET1(1.0f) + nn__verf_##S(v * NN__SET1(0.70710678118654752f)));         \
    }                                                                                                            \
    TGT static inline NN__V nn__vgelu_dx_##S(NN__V v, NN__V d) {                                                 \
        return d * (NN__SET1(0.5f) * (NN__SET1(1.0f) + nn__verf_##S(v * NN__SET1(0.70710678118654752f))) +       \
                    v * NN__SET1(0.39894228040143268f) * nn__vexp_##S(NN__SET1(-0.5f) * v * v));                 \
    }                                                                                                            \
    /* GELU's whole vectors, two a step: the loop below, one vector a step inside a switch,  \
       ran a vector's long chain of dependent operations at a time (a fifth of the tiny GPT's \
       elementwise time); two independent chains in a loop of their own overlap. The same    \
       operations per element, so the same bits. Returns the elements done. */              \
    TGT static int64_t nn__vgelu2_##S(float *y, const float *x, const float *dy, int64_t n) {                    \
        int64_t i;                                                                                               \
        for (i = 0; i + 2 * NN__VW <= n; i += 2 * NN__VW) {                                                      \
            NN__V a = NN__LOAD(x + i), b = NN__LOAD(x + i + NN__VW);                                             \
            if (dy) {                                                                                            \
                a = nn__vgelu_dx_##S(a, NN__LOAD(dy + i));                                                       \
                b = nn__vgelu_dx_##S(b, NN__LOAD(dy + i + NN__VW));                                              \
            } else {                                                                                             \
                a = nn__vgelu_##S(a);                                                                            \
                b = nn__vgelu_##S(b);                                                                            \
            }                                                                                                    \
            NN__STORE(y + i, a);                                                                                 \
            NN__STORE(y + i + NN__VW, b);                                                                        \
        }                                                                                                        \
        return i;                                                                                                \
    }                                                                                                            \
    /* y = f(x) (dy NULL) or dy * f'(x) for the activations and math whose formulas in        \
       kernels/activation.h are built on exp (the same operations, vector for scalar); 0 for \
       the others */                                                                                             \
    TGT static int nn__vunary_##S(int fn, float p0, float p1, float *y, const float *x, const float *dy, int64_t n) { \
        NN__V one = NN__SET1(1.0f), zero = NN__SET1(0.0f), vp0 = NN__SET1(p0), vp1 = NN__SET1(p1), v, d, r, s;   \
        NN__V sc = NN__SET1(1.05070098735548049342f), sa = NN__SET1(1.75809934084737685994f);                   \
        int64_t i = 0, k;                                                                                        \
        if (fn == NN__U_GELU) i = nn__vgelu2_##S(y, x, dy, n);                                                   \
        for (; i < n; i += NN__VW) {                                                                             \
            k = n - i;                                                                                           \
            v = k >= NN__VW ? NN__LOAD(x + i) : NN__LOADN(x + i, k);                                             \
            if (!dy) {                                                                                           \
                switch (fn) {                                                                                    \
                case NN__U_SIGMOID: r = nn__vsigmoid_##S(v); break;                                              \
                case NN__U_SILU: r = v / (one + nn__vexp_##S(-v)); break;                                        \
                case NN__U_ELU: r = NN__SEL(v, zero, _CMP_GT_OQ, v, vp0 * nn__vexpm1_##S(v)); break;             \
                case NN__U_SELU: r = NN__SEL(v, zero, _CMP_GT_OQ, sc * v, sa * nn__vexpm1_##S(v)); break;        \
                case NN__U_CELU: r = NN__SEL(v, zero, _CMP_GT_OQ, v, vp0 * nn__vexpm1_##S(v / vp0)); break;      \
                case NN__U_EXP: r = nn__vexp_##S(v); break;                                                      \
                case NN__U_EXPM1: r = nn__vexpm1_##S(v); break;                                                  \
                case NN__U_SOFTPLUS:                                                                             \
                    s = v * vp0;                                                                                 \
                    r = NN__SEL(s, vp1, _CMP_GT_OQ, v, (NN__SEL(s, zero, _CMP_GT_OQ, s, zero) + nn__vlog1pexp_##S(s)) / vp0); \
                    break;                                                                                       \
                case NN__U_LOG_SIGMOID: r = NN__SEL(v, zero, _CMP_LT_OQ, v, zero) - nn__vlog1pexp_##S(v); break;  \
                case NN__U_GELU: r = nn__vgelu_##S(v); break;                                                    \
                case NN__U_ERF: r = nn__verf_##S(v); break;                                                      \
                default: return 0;                                                                               \
                }                                                                                                \
            } else {                                                                                             \
                d = k >= NN__VW ? NN__LOAD(dy + i) : NN__LOADN(dy + i, k);                                       \
                switch (fn) {                                                                                    \
                case NN__U_SIGMOID: s = nn__vsigmoid_##S(v); r = d * (s * (one - s)); break;                     \
                case NN__U_SILU: s = nn__vsigmoid_##S(v); r = d * (s * (one + v * (one - s))); break;            \
                case NN__U_ELU: r = d * NN__SEL(v, zero, _CMP_GT_OQ, one, vp0 * nn__vexp_##S(v)); break;         \
                case NN__U_SELU: r = d * NN__SEL(v, zero, _CMP_GT_OQ, sc, sa * nn__vexp_##S(v)); break;          \
                case NN__U_CELU: r = d * NN__SEL(v, zero, _CMP_GT_OQ, one, nn__vexp_##S(v / vp0)); break;        \
                case NN__U_SOFTPLUS:                                                                             \
                    r = d * NN__SEL(v * vp0, vp1, _CMP_GT_OQ, one, nn__vsigmoid_##S(v * vp0));                   \
                    break;                                                                                       \
                case NN__U_LOG_SIGMOID: r = d * nn__vsigmoid_##S(-v); break;                                     \
                case NN__U_EXP: case NN__U_EXPM1: r = d * nn__vexp_##S(v); break;                                \
                case NN__U_GELU: r = nn__vgelu_dx_##S(v, d); break;                                              \
                case NN__U_ERF: r = d * (NN__SET1(1.12837916709551257f) * nn__vexp_##S(-v * v)); break;          \
                default: return 0;                                                                               \
                }                                                                                                \
            }                                                                                                    \
            if (k >= NN__VW) NN__STORE(y + i, r);                                                                \
            else NN__STOREN(y + i, r, k);                                                                        \
        }                                                                                                        \
        return 1;                                                                                                \
    }                                                                                                            \
    /* op one of NN__VE_*: y [n] from a, b, c and s0; returns the sum of y (lanes in a fixed  \
       order, the same for a row whichever thread does it) */                                                    \
    TGT static float nn__vexp_map_##S(int op, float *y, const float *a, const float *b, const float *c, float s0, int64_t n) { \
        NN__V acc = NN__SET1(0.0f), vs0 = NN__SET1(s0), one = NN__SET1(1.0f), va, r;                             \
        int64_t i, k;                                                                                            \
        for (i = 0; i < n; i += NN__VW) {                                                                        \
            k = n - i;                                                                                           \
            va = k >= NN__VW ? NN__LOAD(a + i) : NN__LOADN(a + i, k);                                            \
            if (op == NN__VE_EXP_SHIFT) r = nn__vexp_##S(va - vs0);                                              \
            else {                                                                                               \
                NN__V vb = k >= NN__VW ? NN__LOAD(b + i) : NN__LOADN(b + i, k), zero = NN__SET1(0.0f), vc = zero; \
                if (op == NN__VE_SIGMOID_SUB || op == NN__VE_BCE_LOSS_DX || op == NN__VE_MSE_DX)                 \
                    vc = k >= NN__VW ? NN__LOAD(c + i) : NN__LOADN(c + i, k);                                    \
                switch (op) {                                                                                    \
                case NN__VE_SUB_EXP: r = va - nn__vexp_##S(vb) * vs0; break;                                     \
                case NN__VE_SIGMOID_SUB: r = vc * (one / (one + nn__vexp_##S(-va)) - vb); break;                 \
                case NN__VE_BCE:                                                                                 \
                    r = (one - vb) * va + NN__SEL(va, zero, _CMP_LT_OQ, -va, zero) + nn__vlog1pexp_##S(va);      \
                    break;                                                                                       \
                case NN__VE_BCE_LOSS:                                                                            \
                    r = (one - vb) * va +                                                                        \
                        (one + (vs0 - one) * vb) * (nn__vlog1pexp_##S(va) + NN__SEL(-va, zero, _CMP_GT_OQ, -va, zero)); \
                    break;                                                                                       \
                case NN__VE_BCE_LOSS_DX:                                                                         \
                    r = vc * ((one - vb) - (one + (vs0 - one) * vb) / (one + nn__vexp_##S(va)));                 \
                    break;                                                                                       \
                case NN__VE_MSE: r = (va - vb) * (va - vb); break;                                               \
                default: r = vc * (NN__SET1(2.0f) * (va - vb)); break;                                           \
                }                                                                                                \
            }                                                                                                    \
            if (k < NN__VW) r = NN__SEL(NN__SET1((float)k), NN__LANEF, _CMP_GT_OQ, r, NN__SET1(0.0f));          \
            acc = acc + r;                                                                                       \
            if (!y) continue;                                                                                    \
            if (k >= NN__VW) NN__STORE(y + i, r);                                                                \
            else NN__STOREN(y + i, r, k);                                                                        \
        }                                                                                                        \
        return NN__HSUM(acc);                                                                                    \
    }

#define NN__V __m512
#define NN__VW 16
#define NN__SET1 _mm512_set1_ps
#define NN__LOAD _mm512_loadu_ps
#define NN__STORE _mm512_storeu_ps
#define NN__LOADN(p, k) _mm512_maskz_loadu_ps(nn__vmask_avx512(k), p)
#define NN__STOREN(p, v, k) _mm512_mask_storeu_ps(p, nn__vmask_avx512(k), v)
#define NN__FMA _mm512_fmadd_ps
#define NN__ROUND(v) _mm512_maskz_roundscale_ps(0xFFFF, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define NN__SCALE nn__vscale_avx512
#define NN__SEL(a, b, P, x, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, P), y, x)
#define NN__ANYGT(a, b) (_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ) != 0)
#define NN__MAX(a, b) _mm512_maskz_max_ps(0xFFFF, a, b) /* (a > b ? a : b): b where either is NaN, as MIN; maskz: g++ warns on the plain form's undefined pass-through */
#define NN__MIN(a, b) _mm512_maskz_min_ps(0xFFFF, a, b)
#define NN__LANEF _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#define NN__ABS(v) _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF)))
#define NN__HSUM nn__vhsum_avx512
__attribute__((target("avx512f"))) static inline float nn__vhsum_avx512(__m512 v) {
    float l[16], s = 0.0f;
    int i;
    _mm512_storeu_ps(l, v);
    for (i = 0; i < 16; i++) s += l[i];
    return s;
}
NN__VM_DEFINE(avx512, __attribute__((target("avx512f"))))
#undef NN__V
#undef NN__VW
#undef NN__SET1
#undef NN__LOAD
#undef NN__STORE
#undef NN__LOADN
#undef NN__STOREN
#undef NN__FMA
#undef NN__ROUND
#undef NN__SCALE
#undef NN__SEL
#undef NN__ANYGT
#undef NN__MAX
#undef NN__MIN
#undef NN__LANEF
#undef NN__ABS
#undef NN__HSUM

#define NN__V __m256
#define NN__VW 8
#define NN__SET1 _mm256_set1_ps
#define NN__LOAD _mm256_loadu_ps
#define NN__STORE _mm256_storeu_ps
#define NN__LOADN(p, k) _mm256_maskload_ps(p, nn__vmask_avx2(k))
#define NN__STOREN(p, v, k) _mm256_maskstore_ps(p, nn__vmask_avx2(k), v)
#define NN__FMA _mm256_fmadd_ps
#define NN__ROUND(v) _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define NN__SCALE nn__vscale_avx2
#define NN__SEL(a, b, P, x, y) _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, P))
#define NN__ANYGT(a, b) (_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ)) != 0)
#define NN__MAX _mm256_max_ps
#define NN__MIN _mm256_min_ps
#define NN__LANEF _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7)
#define NN__ABS(v) _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)))
#define NN__HSUM nn__vhsum_avx2
__attribute__((target("avx2,fma"))) static inline float nn__vhsum_avx2(__m256 v) {
    float l[8], s = 0.0f;
    int i;
    _mm256_storeu_ps(l, v);
    for (i = 0; i < 8; i++) s += l[i];
    return s;
}
NN__VM_DEFINE(avx2, __attribute__((target("avx2,fma"))))
#undef NN__V
#undef NN__VW
#undef NN__SET1
#undef NN__LOAD
#undef NN__STORE
#undef NN__LOADN
#undef NN__STOREN
#undef NN__FMA
#undef NN__ROUND
#undef NN__SCALE
#undef NN__SEL
#undef NN__ANYGT
#undef NN__MAX
#undef NN__MIN
#undef NN__LANEF
#undef NN__ABS
#undef NN__HSUM
#undef NN__VM_DEFINE
#endif /* NN__VM_X86 */
#if !defined(NN__VM_X86)
/* No x86 vectors (another architecture, or a compiler without GNU C): the scalar loops. */
static inline int nn__vm_isa(void) { return 0; }
#endif

/* The rows' scalar twins (libm's expf): the CPU backend without AVX2 and FMA. */
static float nn__vexp_map_scalar(int op, float *y, const float *a, const float *b, const float *c, float s0, int64_t n) {
    float acc = 0.0f, r;
    int64_t i;
    for (i = 0; i < n; i++) {
        if (op == NN__VE_EXP_SHIFT) r = expf(a[i] - s0);
        else if (op == NN__VE_SUB_EXP) r = a[i] - expf(b[i]) * s0;
        else if (op == NN__VE_SIGMOID_SUB) r = c[i] * (1.0f / (1.0f + expf(-a[i])) - b[i]);
        else if (op == NN__VE_BCE) r = (1.0f - b[i]) * a[i] + (a[i] < 0.0f ? -a[i] : 0.0f) + log1pf(expf(-fabsf(a[i])));
        else if (op == NN__VE_BCE_LOSS)
            r = (1.0f - b[i]) * a[i] + (1.0f + (s0 - 1.0f) * b[i]) * (log1pf(expf(-fabsf(a[i]))) + fmaxf(-a[i], 0.0f));
        else if (op == NN__VE_BCE_LOSS_DX) r = c[i] * ((1.0f - b[i]) - (1.0f + (s0 - 1.0f) * b[i]) / (1.0f + expf(a[i])));
        else if (op == NN__VE_MSE) r = (a[i] - b[i]) * (a[i] - b[i]);
        else r = c[i] * (2.0f * (a[i] - b[i]));
        acc += r;
        if (y) y[i] = r;
    }
    return acc;
}

static float nn__vexp_map(int op, float *y, const float *a, const float *b, const float *c, float s0, int64_t n) {
#if defined(NN__VM_X86)
    if (nn__vm_isa() == 2) return nn__vexp_map_avx512(op, y, a, b, c, s0, n);
    if (nn__vm_isa() == 1) return nn__vexp_map_avx2(op, y, a, b, c, s0, n);
#endif
    return nn__vexp_map_scalar(op, y, a, b, c, s0, n);
}

/* exp(v) for one element, the same bits as the vector lanes give it */
static NN__MAYBE_UNUSED float nn__vexp1(float v) {
    float y;
    (void)nn__vexp_map(NN__VE_EXP_SHIFT, &y, &v, NULL, NULL, 0.0f, 1);
    return y;
}

/* fn(arg, i0, i1) over [0, n) in contiguous ranges, one per thread of the pool when the
   work (elements touched, about) is at least NN__ROWS_PAR_MIN, else one call. Each index
   is done by exactly one call, and fn must compute it the same whichever range it is in
   (rows, elements: the bits do not depend on the thread count). */
#define NN__ROWS_PAR_MIN 32768
typedef void (*nn__range_fn)(void *arg, int64_t i0, int64_t i1);
typedef struct nn__par_job {
    nn__range_fn fn;
    void *arg;
    int64_t n, per;
} nn__par_job;

static void nn__par_task(void *arg, int t, int n_tasks) {
    const nn__par_job *j = (const nn__par_job *)arg;
    int64_t i0 = j->per * t, i1 = i0 + j->per < j->n ? i0 + j->per : j->n;
    (void)n_tasks;
    if (i0 < i1) j->fn(j->arg, i0, i1);
}

static void nn__par_for(nn__threadpool *pool, int64_t n, int64_t work, nn__range_fn fn, void *arg) {
    nn__par_job j;
    int tasks = work >= NN__ROWS_PAR_MIN ? nn__threadpool_size(pool) : 1;
#if defined(NN__VM_X86)
    (void)nn__vm_isa();
#endif
    if (tasks <= 1 || n <= 1) {
        if (n > 0) fn(arg, 0, n);
        return;
    }
    j.fn = fn;
    j.arg = arg;
    j.n = n;
    j.per = (n + tasks - 1) / tasks;
    nn__threadpool_run(pool, nn__par_task, &j, (int)((n + j.per - 1) / j.per));
}

/* Element counts below which splitting a loop over threads costs more than it saves. */
#define NN__PAR_MIN 32768
