/* The CPU backend's op bodies (GEMM is in nn_cpu_gemm.c). Plain loops over flat arrays,
   llm.c style: one _forward / _backward pair per op, shapes in the comments. Each has a
   twin kernel in kernels/ that must compute the same thing. */

#include "../kernels/activation.h"

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
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define NN__VM_X86 1

/* 2: AVX-512F, 1: AVX2 and FMA, 0: neither. The one CPUID probe of the CPU loops
   (elementwise, vector exp, reductions, Adam, depthwise conv; the GEMM picks its
   microkernel in nn_cpu_gemm.c): a cached answer, the same for every context; drivers ask
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

/* What the rows below do to each element (a, b, c the inputs, s0, s1 scalars), and the
   sum of the results they return:
     EXP_SHIFT   y = exp(a - s0)                (softmax's exponentials; y may be NULL)
     SUB_EXP     y = a - exp(b) * s0            (log_softmax's gradient)
     SIGMOID_SUB y = c * (sigmoid(a) - b)       (BCE with logits' gradient)
     BCE         y = (1 - b) a + (a < 0 ? -a : 0) + log1p(exp(-|a|))   (BCE with logits, b the target)
     BCE_LOSS    y = (1 - b) a + (1 + (s0 - 1) b) (log1p(exp(-|a|)) + fmaxf(-a, 0)), s0 the
                 pos_weight (the elementwise loss's formula, src/nn_loss.c)
     BCE_LOSS_DX y = c ((1 - b) - (1 + (s0 - 1) b) / (1 + exp(a)))  (its gradient)
     MSE         y = (a - b) (a - b)             (the elementwise MSE loss, src/nn_loss.c)
     MSE_DX      y = c (2 (a - b))               (its gradient) */
enum { NN__VE_EXP_SHIFT, NN__VE_SUB_EXP, NN__VE_SIGMOID_SUB, NN__VE_BCE, NN__VE_BCE_LOSS, NN__VE_BCE_LOSS_DX, NN__VE_MSE,
       NN__VE_MSE_DX };

/* The template: one set of functions per instruction set, from the primitives NN__V (the
   vector type), NN__VW (its lanes), NN__SET1, NN__LOAD/NN__STORE (whole vectors),
   NN__LOADN/NN__STOREN (the first k lanes), NN__FMA, NN__ROUND (to nearest), NN__SCALE,
   NN__SEL(a, b, P, x, y) (x where a P b, else y), NN__ABS, NN__LANEF (0, 1, ...) and
   NN__HSUM (lanes 0.. in order). */
#define NN__VM_DEFINE(S, TGT)                                                                                    \
    TGT static inline NN__V nn__vexp_core_##S(NN__V x, NN__V *n, NN__V *em1) {                                 \
        NN__V r, q;                                                                                              \
        x = NN__SEL(x, NN__SET1(-104.0f), _CMP_LT_OQ, NN__SET1(-104.0f), x);                                     \
        x = NN__SEL(x, NN__SET1(89.0f), _CMP_GT_OQ, NN__SET1(89.0f), x);                                         \
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
    /* y = f(x) (dy NULL) or dy * f'(x) for the activations and math whose formulas in        \
       kernels/activation.h are built on exp (the same operations, vector for scalar); 0 for \
       the others */                                                                                             \
    TGT static int nn__vunary_##S(int fn, float p0, float p1, float *y, const float *x, const float *dy, int64_t n) { \
        NN__V one = NN__SET1(1.0f), zero = NN__SET1(0.0f), vp0 = NN__SET1(p0), vp1 = NN__SET1(p1), v, d, r, s;   \
        NN__V sc = NN__SET1(1.05070098735548049342f), sa = NN__SET1(1.75809934084737685994f);                   \
        int64_t i, k;                                                                                            \
        for (i = 0; i < n; i += NN__VW) {                                                                        \
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
#undef NN__LANEF
#undef NN__ABS
#undef NN__HSUM
#undef NN__VM_DEFINE
#endif /* NN__VM_X86 */

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

/* ---- activations: the formulas of kernels/activation.h, one loop each ---- */

/* c ? a : 0.0f without a branch: ReLU's sign test is a coin flip on real activations, and
   a mispredicted branch per element made ReLU cost more than the convolution beside it.
   ReLU's c is !(x <= 0), one compare like x > 0, but true for NaN: relu(NaN) is NaN and
   its gradient passes, as PyTorch's. */
static float nn__relu_sel(int c, float a) {
    uint32_t b;
    memcpy(&b, &a, 4);
    b &= (uint32_t) - (int32_t)c;
    memcpy(&a, &b, 4);
    return a;
}

/* y = f(x) for the activation fn with parameters p[0], p[1]. The switch sits outside the
   loops so each loop is one function the compiler can vectorise; ReLU keeps its
   branchless select (the same values as its table formula). */
static void nn__unary_forward(int fn, const float *p, float *y, const float *x, int64_t n) {
    int64_t i;
    float p0 = p[0], p1 = p[1];
    if (fn == NN__U_RELU) {
        for (i = 0; i < n; i++) y[i] = nn__relu_sel(!(x[i] <= 0.0f), x[i]);
        return;
    }
#if defined(NN__VM_X86)
    if (nn__vm_isa() == 2 && nn__vunary_avx512(fn, p0, p1, y, x, NULL, n)) return;
    if (nn__vm_isa() == 1 && nn__vunary_avx2(fn, p0, p1, y, x, NULL, n)) return;
#endif
    switch (fn) {
#define NN__X(E, name, params, valid, fwd, der) \
    case NN__U_##E: for (i = 0; i < n; i++) { float v = x[i]; y[i] = (fwd); } break;
    NN__UNARY_ALL(NN__X)
#undef NN__X
    default: break;
    }
    (void)p0, (void)p1;
}

/* dx = dy * f'(x) */
static void nn__unary_backward(int fn, const float *p, float *dx, const float *x, const float *dy, int64_t n) {
    int64_t i;
    float p0 = p[0], p1 = p[1];
    if (fn == NN__U_RELU) {
        for (i = 0; i < n; i++) dx[i] = nn__relu_sel(!(x[i] <= 0.0f), dy[i]);
        return;
    }
#if defined(NN__VM_X86)
    if (nn__vm_isa() == 2 && nn__vunary_avx512(fn, p0, p1, dx, x, dy, n)) return;
    if (nn__vm_isa() == 1 && nn__vunary_avx2(fn, p0, p1, dx, x, dy, n)) return;
#endif
    switch (fn) {
#define NN__X(E, name, params, valid, fwd, der) \
    case NN__U_##E: for (i = 0; i < n; i++) { float v = x[i]; (void)v; dx[i] = dy[i] * (der); } break;
    NN__UNARY_ALL(NN__X)
#undef NN__X
    default: break;
    }
    (void)p0, (void)p1;
}

/* ---- PReLU: x [N, C, S] with the slope w[c] of its channel (C = 1: one shared slope); the
   formulas are leaky ReLU's, from kernels/activation.h ---- */

static void nn__prelu_forward(float *y, const float *x, const float *w, int64_t N, int64_t C, int64_t S) {
    int64_t k, j;
    for (k = 0; k < N * C; k++) {
        float wk = w[k % C];
        for (j = 0; j < S; j++) y[k * S + j] = nn__act_leaky(x[k * S + j], wk);
    }
}

static void nn__prelu_backward_input(float *dx, const float *x, const float *w, const float *dy, int64_t N, int64_t C,
                                     int64_t S) {
    int64_t k, j;
    for (k = 0; k < N * C; k++) {
        float wk = w[k % C];
        for (j = 0; j < S; j++) dx[k * S + j] = dy[k * S + j] * nn__act_leaky_der(x[k * S + j], wk);
    }
}

/* dw [C] = sum over n and s of dy * dy/dw: a partial sum over s for each (n, c), then the
   partials in n order, as kernels/elementwise.cl sums them. */
static void nn__prelu_backward_weight(float *dw, const float *x, const float *dy, int64_t N, int64_t C, int64_t S) {
    int64_t c, n, s;
    for (c = 0; c < C; c++) {
        float acc = 0.0f;
        for (n = 0; n < N; n++) {
            const float *xr = x + (n * C + c) * S, *dr = dy + (n * C + c) * S;
            float part = 0.0f;
            for (s = 0; s < S; s++) part += dr[s] * nn__act_leaky_dslope(xr[s]);
            acc += part;
        }
        dw[c] = acc;
    }
}

static void nn__scale_forward(float *y, const float *x, float s, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++) y[i] = x[i] * s;
}

/* ---- elementwise ops with broadcasting (NumPy's rules) ----
   An output shape and operands whose dims are 1 or the output's, missing leading dims
   counting as 1. nn__bcast_init drops the output's size-1 dims and merges neighbouring
   dims wherever every operand is contiguous (or broadcast) across them, so a same-shape op
   is one flat dim, a bias [N] over [M, N] two, and [3, 1, 7] with [1, 33, 1] three. The
   innermost dim then has stride 0 or 1 in each operand. Device plans pass the same
   geometry to kernels/elementwise.cl. */

typedef struct nn__bcast {
    int nd;                       /* dims after merging, 1 to NN_MAX_DIMS */
    int n_op;                     /* operands, at most 3 */
    int64_t n;                    /* output elements */
    int64_t dim[NN_MAX_DIMS];     /* outermost first */
    int64_t st[3][NN_MAX_DIMS];   /* each operand's element stride per dim, 0 where broadcast */
} nn__bcast;

static void nn__bcast_init(nn__bcast *bc, const nn_shape *out, const nn_shape *const *ops, int n_op) {
    int64_t dim[NN_MAX_DIMS], st[3][NN_MAX_DIMS], run[3] = {1, 1, 1};
    int d, k, nd = 0;
    memset(bc, 0, sizeof *bc);
    bc->n_op = n_op;
    bc->n = nn__numel(out);
    for (d = out->ndim - 1; d >= 0; d--) { /* innermost first */
        int64_t D = out->dim[d];
        if (D == 1) continue;
        for (k = 0; k < n_op; k++) {
            int od = d - (out->ndim - ops[k]->ndim);
            int64_t s = od >= 0 ? ops[k]->dim[od] : 1;
            st[k][nd] = s == 1 ? 0 : run[k];
            run[k] *= s;
        }
        dim[nd++] = D;
    }
    if (nd == 0) { /* one element */
        bc->nd = 1;
        bc->dim[0] = 1;
        return;
    }
    { /* merge dim j into the group below it when every operand continues across */
        int c = 0, j;
        for (j = 1; j < nd; j++) {
            int ok = 1;
            for (k = 0; k < n_op; k++) ok &= st[k][j] == st[k][c] * dim[c];
            if (ok) {
                dim[c] *= dim[j];
            } else {
                c++;
                dim[c] = dim[j];
                for (k = 0; k < n_op; k++) st[k][c] = st[k][j];
            }
        }
        nd = c + 1;
    }
    bc->nd = nd;
    for (d = 0; d < nd; d++) { /* outermost first */
        bc->dim[d] = dim[nd - 1 - d];
        for (k = 0; k < n_op; k++) bc->st[k][d] = st[k][nd - 1 - d];
    }
}

/* Each operand's offset at output element e (at the start of its row when e is). */
static void nn__bcast_offsets(const nn__bcast *bc, int64_t e, int64_t *off) {
    int d, k;
    for (k = 0; k < bc->n_op; k++) off[k] = 0;
    for (d = bc->nd - 1; d >= 0; d--) {
        int64_t c = e % bc->dim[d];
        e /= bc->dim[d];
        for (k = 0; k < bc->n_op; k++) off[k] += c * bc->st[k][d];
    }
}

/* Below this many elements an elementwise loop runs on the calling thread alone. */
#define NN__EW_PAR_MIN 65536

/* y [n] = f(a, b) along a row: a and b advance by sa and sb (0 or 1). */
static void nn__binary_row_scalar(int fn, float *y, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n) {
    int64_t i;
    switch (fn) {
#define NN__X(E, name, fwd, da, db)                                                              \
    case NN__B_##E:                                                                              \
        for (i = 0; i < n; i++) { float u = a[i * sa], w = b[i * sb]; y[i] = (fwd); }            \
        break;
        NN__BINARY_FNS(NN__X)
#undef NN__X
    default: break;
    }
}

#if defined(NN__VM_X86)
/* The SIMD rows: the same IEEE operations as the scalar formulas, so the same bits (min and
   max take u where u < w (u > w), else w, and NaN from u + w, as the formulas). They return
   how many elements they did; the scalar row does the rest. */
#define NN__EW_ROW(ISA, TARGET, V, W, LOAD, SET1, STORE, BODY)                                    \
    __attribute__((target(TARGET))) static int64_t nn__binary_row_##ISA(int fn, float *y, const float *a, \
                                                                          int64_t sa, const float *b,  \
                                                                          int64_t sb, int64_t n) {      \
        int64_t i = 0;                                                                           \
        V one = SET1(1.0f), zero = SET1(0.0f);                                                   \
        (void)one, (void)zero;                                                                   \
        switch (fn) { BODY default: break; }                                                     \
        return i;                                                                                \
    }
#define NN__EW_CASE(E, EXPR, V, W, LOAD, SET1, STORE)                                             \
    case NN__B_##E:                                                                              \
        for (; i + W <= n; i += W) {                                                             \
            V u = sa ? LOAD(a + i) : SET1(a[0]), w = sb ? LOAD(b + i) : SET1(b[0]);              \
            STORE(y + i, EXPR);                                                                  \
        }                                                                                        \
        break;
#define NN__A2(E, EXPR) NN__EW_CASE(E, EXPR, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_storeu_ps)
#define NN__A2_MASK(P) _mm256_and_ps(_mm256_cmp_ps(u, w, P), one)
#define NN__A2_NZ(x) _mm256_cmp_ps(x, zero, _CMP_NEQ_UQ)
#define NN__A2_NANSEL(m) _mm256_blendv_ps(m, _mm256_add_ps(u, w), _mm256_cmp_ps(u, w, _CMP_UNORD_Q))
NN__EW_ROW(avx2, "avx2", __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_storeu_ps,
           NN__A2(ADD, _mm256_add_ps(u, w)) NN__A2(SUB, _mm256_sub_ps(u, w)) NN__A2(MUL, _mm256_mul_ps(u, w))
           NN__A2(DIV, _mm256_div_ps(u, w)) NN__A2(MINIMUM, NN__A2_NANSEL(_mm256_min_ps(u, w)))
           NN__A2(MAXIMUM, NN__A2_NANSEL(_mm256_max_ps(u, w))) NN__A2(EQ, NN__A2_MASK(_CMP_EQ_OQ))
           NN__A2(NE, NN__A2_MASK(_CMP_NEQ_UQ)) NN__A2(LT, NN__A2_MASK(_CMP_LT_OQ))
           NN__A2(LE, NN__A2_MASK(_CMP_LE_OQ)) NN__A2(GT, NN__A2_MASK(_CMP_GT_OQ)) NN__A2(GE, NN__A2_MASK(_CMP_GE_OQ))
           NN__A2(LOGICAL_AND, _mm256_and_ps(_mm256_and_ps(NN__A2_NZ(u), NN__A2_NZ(w)), one))
           NN__A2(LOGICAL_OR, _mm256_and_ps(_mm256_or_ps(NN__A2_NZ(u), NN__A2_NZ(w)), one)))
#define NN__A5(E, EXPR) NN__EW_CASE(E, EXPR, __m512, 16, _mm512_loadu_ps, _mm512_set1_ps, _mm512_storeu_ps)
#define NN__A5_MASK(P) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(u, w, P), one)
#define NN__A5_NZ(x) _mm512_cmp_ps_mask(x, zero, _CMP_NEQ_UQ)
/* u where u < w (u > w), else w: _mm512_min_ps's result, without the intrinsic (g++ 12
   warns on its undefined pass-through operand) */
#define NN__A5_SEL(P) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, w, P), w, u)
#define NN__A5_NANSEL(m) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, w, _CMP_UNORD_Q), m, _mm512_add_ps(u, w))
NN__EW_ROW(avx512, "avx512f", __m512, 16, _mm512_loadu_ps, _mm512_set1_ps, _mm512_storeu_ps,
           NN__A5(ADD, _mm512_add_ps(u, w)) NN__A5(SUB, _mm512_sub_ps(u, w)) NN__A5(MUL, _mm512_mul_ps(u, w))
           NN__A5(DIV, _mm512_div_ps(u, w)) NN__A5(MINIMUM, NN__A5_NANSEL(NN__A5_SEL(_CMP_LT_OQ)))
           NN__A5(MAXIMUM, NN__A5_NANSEL(NN__A5_SEL(_CMP_GT_OQ))) NN__A5(EQ, NN__A5_MASK(_CMP_EQ_OQ))
           NN__A5(NE, NN__A5_MASK(_CMP_NEQ_UQ)) NN__A5(LT, NN__A5_MASK(_CMP_LT_OQ))
           NN__A5(LE, NN__A5_MASK(_CMP_LE_OQ)) NN__A5(GT, NN__A5_MASK(_CMP_GT_OQ)) NN__A5(GE, NN__A5_MASK(_CMP_GE_OQ))
           NN__A5(LOGICAL_AND, _mm512_maskz_mov_ps(NN__A5_NZ(u) & NN__A5_NZ(w), one))
           NN__A5(LOGICAL_OR, _mm512_maskz_mov_ps(NN__A5_NZ(u) | NN__A5_NZ(w), one)))
#undef NN__A2
#undef NN__A5

#endif

static void nn__binary_row(int fn, float *y, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n) {
    int64_t i = 0;
#if defined(NN__VM_X86)
    if (nn__vm_isa() == 2) i = nn__binary_row_avx512(fn, y, a, sa, b, sb, n);
    else if (nn__vm_isa() == 1) i = nn__binary_row_avx2(fn, y, a, sa, b, sb, n);
#endif
    if (i < n) nn__binary_row_scalar(fn, y + i, a + i * sa, sa, b + i * sb, sb, n - i);
}

/* The elementwise kinds the drivers below run. */
enum { NN__EWK_BINARY, NN__EWK_BINARY_GRAD, NN__EWK_WHERE, NN__EWK_MASKED_FILL, NN__EWK_EXPAND };

typedef struct nn__ew_job {
    int kind, fn, wrt, invert;
    float value;
    float *y;
    const float *in[3];           /* the operands, in the order of bc's */
    const float *dy;              /* BINARY_GRAD: the output's gradient, contiguous */
    const nn__bcast *bc;
    int64_t chunk;                /* elements per task, a multiple of 64 */
} nn__ew_job;

/* Output elements [e0, e1) of a job, row piece by row piece. */
static void nn__ew_range(const nn__ew_job *j, int64_t e0, int64_t e1) {
    const nn__bcast *bc = j->bc;
    int last = bc->nd - 1, k;
    int64_t inner = bc->dim[last], s[3], off[3], e = e0, i;
    for (k = 0; k < 3; k++) s[k] = k < bc->n_op ? bc->st[k][last] : 0;
    while (e < e1) {
        int64_t c = e % inner, len = inner - c < e1 - e ? inner - c : e1 - e;
        const float *p[3];
        float *y = j->y + e;
        nn__bcast_offsets(bc, e - c, off);
        for (k = 0; k < bc->n_op; k++) p[k] = j->in[k] + off[k] + c * s[k];
        switch (j->kind) {
        case NN__EWK_BINARY: nn__binary_row(j->fn, y, p[0], s[0], p[1], s[1], len); break;
        case NN__EWK_BINARY_GRAD: {
            const float *dy = j->dy + e;
            switch (j->fn) {
#define NN__X(E, name, fwd, da, db)                                                               \
    case NN__B_##E:                                                                               \
        if (j->wrt == 0)                                                                          \
            for (i = 0; i < len; i++) { float u = p[0][i * s[0]], w = p[1][i * s[1]]; y[i] = dy[i] * (da); (void)u, (void)w; } \
        else                                                                                      \
            for (i = 0; i < len; i++) { float u = p[0][i * s[0]], w = p[1][i * s[1]]; y[i] = dy[i] * (db); (void)u, (void)w; } \
        break;
                NN__BINARY_FNS(NN__X)
#undef NN__X
            default: break;
            }
            break;
        }
        case NN__EWK_WHERE:
            for (i = 0; i < len; i++) y[i] = p[0][i * s[0]] != 0.0f ? p[1][i * s[1]] : p[2][i * s[2]];
            break;
        case NN__EWK_MASKED_FILL:
            for (i = 0; i < len; i++) y[i] = (p[0][i * s[0]] != 0.0f) != j->invert ? j->value : p[1][i * s[1]];
            break;
        default: /* EXPAND */
            if (s[0]) memcpy(y, p[0], (size_t)len * sizeof(float));
            else for (i = 0; i < len; i++) y[i] = p[0][0];
            break;
        }
        e += len;
    }
}

static void nn__ew_task(void *arg, int t, int n_tasks) {
    const nn__ew_job *j = (const nn__ew_job *)arg;
    int64_t e0 = j->chunk * t, e1 = e0 + j->chunk < j->bc->n ? e0 + j->chunk : j->bc->n;
    (void)n_tasks;
    if (e0 < e1) nn__ew_range(j, e0, e1);
}

/* Runs a job over the whole output, split over the pool's threads above NN__EW_PAR_MIN
   elements (each element is computed the same way whichever thread does it). */
static void nn__ew_run(nn__threadpool *pool, nn__ew_job *j) {
    int64_t n = j->bc->n;
#if defined(NN__VM_X86)
    (void)nn__vm_isa();
#endif
    int tasks = n >= NN__EW_PAR_MIN ? nn__threadpool_size(pool) : 1;
    if (tasks <= 1) {
        nn__ew_range(j, 0, n);
        return;
    }
    j->chunk = ((n + tasks - 1) / tasks + 63) / 64 * 64;
    nn__threadpool_run(pool, nn__ew_task, j, (int)((n + j->chunk - 1) / j->chunk));
}

/* y = f(a, b), fn one of NN__BINARY_FNS; bc over (a, b). */
static void nn__binary_forward(nn__threadpool *pool, int fn, float *y, const float *a, const float *b, const nn__bcast *bc) {
    nn__ew_job j;
    memset(&j, 0, sizeof j);
    j.kind = NN__EWK_BINARY;
    j.fn = fn;
    j.y = y;
    j.in[0] = a;
    j.in[1] = b;
    j.bc = bc;
    nn__ew_run(pool, &j);
}

/* dx [out] = dy * df/du (wrt 0) or df/dw (wrt 1), before the sum to the operand's shape */
static void nn__binary_backward(nn__threadpool *pool, int fn, int wrt, float *dx, const float *a, const float *b,
                                const float *dy, const nn__bcast *bc) {
    nn__ew_job j;
    memset(&j, 0, sizeof j);
    j.kind = NN__EWK_BINARY_GRAD;
    j.fn = fn;
    j.wrt = wrt;
    j.y = dx;
    j.in[0] = a;
    j.in[1] = b;
    j.dy = dy;
    j.bc = bc;
    nn__ew_run(pool, &j);
}

/* y = cond != 0 ? a : b; bc over (cond, a, b) */
static void nn__where_forward(nn__threadpool *pool, float *y, const float *c, const float *a, const float *b, const nn__bcast *bc) {
    nn__ew_job j;
    memset(&j, 0, sizeof j);
    j.kind = NN__EWK_WHERE;
    j.y = y;
    j.in[0] = c;
    j.in[1] = a;
    j.in[2] = b;
    j.bc = bc;
    nn__ew_run(pool, &j);
}

/* y = (mask != 0) != invert ? value : x; bc over (mask, x) */
static void nn__masked_fill_forward(nn__threadpool *pool, float *y, const float *mask, const float *x, float value,
                                    int invert, const nn__bcast *bc) {
    nn__ew_job j;
    memset(&j, 0, sizeof j);
    j.kind = NN__EWK_MASKED_FILL;
    j.y = y;
    j.in[0] = mask;
    j.in[1] = x;
    j.value = value;
    j.invert = invert;
    j.bc = bc;
    nn__ew_run(pool, &j);
}

/* y = x broadcast to y's shape; bc over (x) */
static void nn__expand_forward(nn__threadpool *pool, float *y, const float *x, const nn__bcast *bc) {
    nn__ew_job j;
    memset(&j, 0, sizeof j);
    j.kind = NN__EWK_EXPAND;
    j.y = y;
    j.in[0] = x;
    j.bc = bc;
    nn__ew_run(pool, &j);
}

/* ---- the sum of x [X] to a shape T that broadcasts to X (the gradient of a broadcast) ----
   bc is over X with T as its one operand: T's stride is 0 on the dims summed away. Each
   element of y is 0 plus its elements of x in increasing index order, in one float: the
   order kernels/elementwise.cl's sum_to adds in, and the same for any thread count. A task
   owns whole elements of y: rows of y's innermost dim (cut into column ranges when y has
   few rows) when that dim is kept, single elements when it is summed. */
typedef struct nn__sum_to_job {
    float *y;
    const float *x;
    const nn__bcast *bc;
    int64_t xs[NN_MAX_DIMS];      /* x's contiguous strides */
    int64_t m;                    /* y's elements */
    int64_t reduced;              /* x elements per y element */
    int64_t units, cols;          /* tasks' units: (y row, column range) or y elements */
} nn__sum_to_job;

/* x's offset of y element (or y row when skip_inner) k: its kept dims' index. */
static int64_t nn__sum_to_base(const nn__sum_to_job *j, int64_t k, int skip_inner) {
    const nn__bcast *bc = j->bc;
    int64_t off = 0;
    int d;
    for (d = bc->nd - 1 - skip_inner; d >= 0; d--) {
        if (bc->st[0][d] == 0) continue;
        off += (k % bc->dim[d]) * j->xs[d];
        k /= bc->dim[d];
    }
    return off;
}

/* The next summed index after idx (an odometer over the summed dims, innermost first,
   skipping dim `skip`); returns the change of x's offset. */
static int64_t nn__sum_to_next(const nn__sum_to_job *j, int64_t *idx, int skip) {
    const nn__bcast *bc = j->bc;
    int64_t delta = 0;
    int d;
    for (d = bc->nd - 1; d >= 0; d--) {
        if (bc->st[0][d] != 0 || d == skip) continue;
        idx[d]++;
        delta += j->xs[d];
        if (idx[d] < bc->dim[d]) break;
        delta -= j->xs[d] * bc->dim[d];
        idx[d] = 0;
    }
    return delta;
}

static void nn__sum_to_unit(const nn__sum_to_job *j, int64_t u) {
    const nn__bcast *bc = j->bc;
    int last = bc->nd - 1;
    int64_t idx[NN_MAX_DIMS], r;
    memset(idx, 0, sizeof idx);
    if (bc->st[0][last] != 0) { /* kept innermost: add x's rows into y's row */
        int64_t inner = bc->dim[last], per = (inner + j->cols - 1) / j->cols, row = u / j->cols;
        int64_t c0 = (u % j->cols) * per, c1 = c0 + per < inner ? c0 + per : inner, off;
        float *y = j->y + row * inner + c0;
        if (c0 >= c1) return;
        off = nn__sum_to_base(j, row, 1) + c0;
        memset(y, 0, (size_t)(c1 - c0) * sizeof(float));
        for (r = 0; r < j->reduced; r++) {
            nn__binary_row(NN__B_ADD, y, y, 1, j->x + off, 1, c1 - c0);
            off += nn__sum_to_next(j, idx, -1);
        }
    } else { /* summed innermost: runs of `inner` consecutive elements */
        int64_t inner = bc->dim[last], off = nn__sum_to_base(j, u, 0), t;
        float acc = 0.0f;
        for (r = 0; r < j->reduced; r += inner) {
            const float *x = j->x + off;
            for (t = 0; t < inner; t++) acc += x[t];
            off += nn__sum_to_next(j, idx, last);
        }
        j->y[u] = acc;
    }
}

static void nn__sum_to_task(void *arg, int t, int n_tasks) {
    const nn__sum_to_job *j = (const nn__sum_to_job *)arg;
    int64_t per = (j->units + n_tasks - 1) / n_tasks, u0 = per * t, u1 = u0 + per < j->units ? u0 + per : j->units;
    for (; u0 < u1; u0++) nn__sum_to_unit(j, u0);
}

static void nn__sum_to_forward(nn__threadpool *pool, float *y, const float *x, const nn__bcast *bc) {
    nn__sum_to_job j;
    int last = bc->nd - 1, d, tasks = bc->n >= NN__EW_PAR_MIN ? nn__threadpool_size(pool) : 1;
    memset(&j, 0, sizeof j);
    j.y = y;
    j.x = x;
    j.bc = bc;
    j.m = 1;
    for (d = last; d >= 0; d--) {
        j.xs[d] = d == last ? 1 : j.xs[d + 1] * bc->dim[d + 1];
        if (bc->st[0][d]) j.m *= bc->dim[d];
    }
    j.reduced = bc->n / j.m;
    if (bc->st[0][last] != 0) {
        int64_t rows = j.m / bc->dim[last];
        j.cols = rows >= tasks ? 1 : (tasks + rows - 1) / rows;
        if (j.cols > bc->dim[last] / 64) j.cols = bc->dim[last] / 64 > 1 ? bc->dim[last] / 64 : 1;
        j.units = rows * j.cols;
    } else {
        j.cols = 1;
        j.units = j.m;
    }
    if (tasks > j.units) tasks = (int)j.units;
#if defined(NN__VM_X86)
    (void)nn__vm_isa();
#endif
    nn__threadpool_run(pool, nn__sum_to_task, &j, tasks);
}

/* The unary loops over the pool's threads above NN__EW_PAR_MIN elements, in chunks of
   whole multiples of 64 (each element computed the same whichever thread does it). */
typedef struct nn__unary_job {
    int fn, backward;
    const float *p;
    float *y;
    const float *x, *dy;
    int64_t n, chunk;
} nn__unary_job;

static void nn__unary_task(void *arg, int t, int n_tasks) {
    const nn__unary_job *j = (const nn__unary_job *)arg;
    int64_t e0 = j->chunk * t, e1 = e0 + j->chunk < j->n ? e0 + j->chunk : j->n;
    (void)n_tasks;
    if (e0 >= e1) return;
    if (j->backward) nn__unary_backward(j->fn, j->p, j->y + e0, j->x + e0, j->dy + e0, e1 - e0);
    else nn__unary_forward(j->fn, j->p, j->y + e0, j->x + e0, e1 - e0);
}

/* y = f(x) (dy NULL), or y = dy * f'(x) */
static void nn__unary_run(nn__threadpool *pool, int fn, const float *p, float *y, const float *x, const float *dy, int64_t n) {
    nn__unary_job j;
    int tasks = n >= NN__EW_PAR_MIN ? nn__threadpool_size(pool) : 1;
#if defined(NN__VM_X86)
    (void)nn__vm_isa();
#endif
    j.fn = fn;
    j.backward = dy != NULL;
    j.p = p;
    j.y = y;
    j.x = x;
    j.dy = dy;
    j.n = n;
    j.chunk = ((n + tasks - 1) / tasks + 63) / 64 * 64;
    if (j.chunk < 1) j.chunk = 1;
    nn__threadpool_run(pool, nn__unary_task, &j, (int)((n + j.chunk - 1) / j.chunk));
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

typedef struct nn__fill_job {
    float *y;
    float v;
} nn__fill_job;

static void nn__fill_range(void *arg, int64_t i0, int64_t i1) {
    const nn__fill_job *j = (const nn__fill_job *)arg;
    float *y = j->y, v = j->v;
    int64_t i;
    for (i = i0; i < i1; i++) y[i] = v;
}

/* y [n] = x[0] * scale (a mean's gradient): over the pool's threads when large */
static void nn__expand_scalar_forward(nn__threadpool *pool, float *y, const float *x, int64_t n, float scale) {
    nn__fill_job j;
    j.y = y;
    j.v = x[0] * scale;
    nn__par_for(pool, n, n / 2, nn__fill_range, &j);
}

/* ---- softmax family, rows of length C ---- */

static void nn__softmax_forward(float *y, const float *x, int64_t rows, int64_t C, int log_space) {
    int64_t r, c;
    for (r = 0; r < rows; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C;
        float m = xr[0], s = 0.0f;
        for (c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        s = nn__vexp_map(NN__VE_EXP_SHIFT, log_space ? NULL : yr, xr, NULL, NULL, m, C); /* yr = exp(x - m) */
        if (log_space) {
            float ls = logf(s) + m;
            for (c = 0; c < C; c++) yr[c] = xr[c] - ls;
        } else {
            float inv = 1.0f / s;
            for (c = 0; c < C; c++) yr[c] *= inv;
        }
    }
}

/* softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy). */
static void nn__softmax_backward(float *dx, const float *y, const float *dy, int64_t rows, int64_t C, int log_space) {
    int64_t r, c;
    for (r = 0; r < rows; r++) {
        const float *yr = y + r * C, *dyr = dy + r * C;
        float *dxr = dx + r * C;
        float s = 0.0f;
        if (log_space) {
            for (c = 0; c < C; c++) s += dyr[c];
            (void)nn__vexp_map(NN__VE_SUB_EXP, dxr, dyr, yr, NULL, s, C);
        } else {
            for (c = 0; c < C; c++) s += dyr[c] * yr[c];
            for (c = 0; c < C; c++) dxr[c] = yr[c] * (dyr[c] - s);
        }
    }
}

/* loss [B] = logsumexp(x[b]) - x[b, label[b]]; a label outside [0, C) gives 0 and is
   counted: returns how many (the caller reports them). */
static int64_t nn__xent_forward(float *loss, const float *x, const int32_t *label, int64_t B, int64_t C) {
    int64_t b, c, bad = 0;
    for (b = 0; b < B; b++) {
        const float *xr = x + b * C;
        float m = xr[0], s = 0.0f;
        int32_t t = label[b];
        if (t < 0 || t >= C) { loss[b] = 0.0f; bad++; continue; }
        for (c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        s = nn__vexp_map(NN__VE_EXP_SHIFT, NULL, xr, NULL, NULL, m, C);
        loss[b] = logf(s) + m - xr[t];
    }
    return bad;
}

/* dx [B, C] = dloss[b] * (softmax(x[b]) - onehot(label[b])) */
static void nn__xent_backward(float *dx, const float *x, const int32_t *label, const float *dloss, int64_t B, int64_t C) {
    int64_t b, c;
    for (b = 0; b < B; b++) {
        const float *xr = x + b * C;
        float *dxr = dx + b * C;
        float m = xr[0], s = 0.0f, g = dloss[b];
        int32_t t = label[b];
        if (t < 0 || t >= C) { for (c = 0; c < C; c++) dxr[c] = 0.0f; continue; }
        for (c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        s = nn__vexp_map(NN__VE_EXP_SHIFT, dxr, xr, NULL, NULL, m, C); /* dxr = exp(x - m) */
        for (c = 0; c < C; c++) dxr[c] = g * (dxr[c] / s - (c == t ? 1.0f : 0.0f));
    }
}

/* elementwise BCE with logits in PyTorch's form, (1 - t) x + max(-x, 0) + log(1 + exp(-|x|)),
   which is NaN where PyTorch's is (-inf logits: -inf + inf) */
static void nn__bce_forward(float *y, const float *x, const float *t, int64_t n) {
    (void)nn__vexp_map(NN__VE_BCE, y, x, t, NULL, 0.0f, n); /* the formula above, vector or scalar */
}

static void nn__bce_backward(float *dx, const float *x, const float *t, const float *dy, int64_t n) {
    (void)nn__vexp_map(NN__VE_SIGMOID_SUB, dx, x, t, dy, 0.0f, n);
}

/* The row and element loops above over the pool's threads: rows [r0, r1) (elements for
   BCE) each, by the loops above at an offset. */
enum { NN__RJ_SOFTMAX, NN__RJ_SOFTMAX_GRAD, NN__RJ_XENT, NN__RJ_XENT_GRAD, NN__RJ_BCE, NN__RJ_BCE_GRAD };
typedef struct nn__rows_job {
    int kind, flag;
    float *y;
    const float *x, *b, *c;
    const int32_t *label;
    int64_t C;
} nn__rows_job;

static void nn__rows_range(void *arg, int64_t r0, int64_t r1) {
    const nn__rows_job *j = (const nn__rows_job *)arg;
    int64_t o = r0 * j->C, n = r1 - r0;
    switch (j->kind) {
    case NN__RJ_SOFTMAX: nn__softmax_forward(j->y + o, j->x + o, n, j->C, j->flag); break;
    case NN__RJ_SOFTMAX_GRAD: nn__softmax_backward(j->y + o, j->x + o, j->b + o, n, j->C, j->flag); break;
    case NN__RJ_XENT: (void)nn__xent_forward(j->y + r0, j->x + o, j->label + r0, n, j->C); break;
    case NN__RJ_XENT_GRAD: nn__xent_backward(j->y + o, j->x + o, j->label + r0, j->b + r0, n, j->C); break;
    case NN__RJ_BCE: nn__bce_forward(j->y + o, j->x + o, j->b + o, n); break;
    default: nn__bce_backward(j->y + o, j->x + o, j->b + o, j->c + o, n); break;
    }
}

/* kind's loop over rows [rows, C] (BCE: C = 1, rows the elements); returns the count of
   labels outside [0, C) for XENT */
static int64_t nn__rows_run(nn__threadpool *pool, int kind, int flag, float *y, const float *x, const float *b,
                            const float *c, const int32_t *label, int64_t rows, int64_t C) {
    nn__rows_job j;
    int64_t bad = 0, r;
    j.kind = kind;
    j.flag = flag;
    j.y = y;
    j.x = x;
    j.b = b;
    j.c = c;
    j.label = label;
    j.C = C;
    nn__par_for(pool, rows, rows * C * (kind == NN__RJ_BCE || kind == NN__RJ_BCE_GRAD ? 1 : 4), nn__rows_range, &j);
    if (kind == NN__RJ_XENT)
        for (r = 0; r < rows; r++) bad += label[r] < 0 || label[r] >= C;
    return bad;
}

/* y = x * mask / (1 - p), mask from Philox (see nn__dropout_uniform): a product, so a
   dropped NaN or inf is NaN, as PyTorch's. Backward is the same op applied to dy with the
   same (seed, node, step). */
static void nn__dropout_forward(float *y, const float *x, int64_t n, float p, uint64_t seed, int node, uint64_t step) {
    float scale = 1.0f / (1.0f - p);
    int64_t i;
    for (i = 0; i < n; i++) y[i] = x[i] * (nn__dropout_uniform(seed, node, step, (uint32_t)i) >= p ? scale : 0.0f);
}

/* y [B, D] = data[idx[b]] of data [N, D] */
static void nn__gather_rows_forward(float *y, const float *data, const int32_t *idx, int64_t B, int64_t N, int64_t D) {
    int64_t b;
    for (b = 0; b < B; b++) {
        int32_t r = idx[b];
        if (r >= 0 && r < N) memcpy(y + b * D, data + (int64_t)r * D, (size_t)D * sizeof(float));
        else memset(y + b * D, 0, (size_t)D * sizeof(float));
    }
}

/* ddata [N, D] = sum over b with idx[b] == r of dy[b]: a fixed order, no atomics. */
static void nn__gather_rows_backward(float *ddata, const int32_t *idx, const float *dy, int64_t B, int64_t N, int64_t D) {
    int64_t b, j;
    memset(ddata, 0, (size_t)(N * D) * sizeof(float));
    for (b = 0; b < B; b++) {
        int32_t r = idx[b];
        if (r < 0 || r >= N) continue;
        for (j = 0; j < D; j++) ddata[(int64_t)r * D + j] += dy[b * D + j];
    }
}

/* first index of the row maximum, a NaN counting as the maximum (torch.argmax) */
static int64_t nn__argmax_row(const float *xr, int64_t C) {
    int64_t c, best = 0;
    for (c = 1; c < C; c++)
        if (xr[c] > xr[best] || (xr[c] != xr[c] && xr[best] == xr[best])) best = c;
    return best;
}

static void nn__argmax_forward(int32_t *y, const float *x, int64_t B, int64_t C) {
    int64_t b;
    for (b = 0; b < B; b++) y[b] = (int32_t)nn__argmax_row(x + b * C, C);
}

static void nn__correct_forward(float *y, const float *x, const int32_t *label, int64_t B, int64_t C) {
    int64_t b;
    for (b = 0; b < B; b++) y[b] = nn__argmax_row(x + b * C, C) == label[b] ? 1.0f : 0.0f;
}

/* ---- optimizers (PyTorch's update rules); g is scaled by clip first ---- */

static void nn__sgd_update(float *p, const float *grad, float *buf, int64_t n, float lr, float momentum,
                           float dampening, float wd, int nesterov, int first_step, float clip, float cv) {
    int64_t i;
    for (i = 0; i < n; i++) {
        float g = grad[i] * clip;
        g = (g > cv ? cv : g < -cv ? -cv : g) + wd * p[i];
        if (momentum != 0.0f) {
            float b = first_step ? g : momentum * buf[i] + (1.0f - dampening) * g;
            buf[i] = b;
            g = nesterov ? g + momentum * b : b;
        }
        p[i] -= lr * g;
    }
}

/* Adam and AdamW, one parameter tensor. keep = 1 - lr*wd for AdamW (decoupled decay) and
   l2 = wd for Adam; step = lr / (1 - beta1^t); inv_sbc2 = 1 / sqrt(1 - beta2^t):
   p = p*keep - step * m / (sqrt(v) * inv_sbc2 + eps), with g = clamp(grad*clip, +-cv) + l2*p. */
typedef struct nn__adam_args {
    float *p, *m, *v;
    const float *g;
    int64_t n;
    float clip, b1, b2, step, inv_sbc2, eps, keep, l2, cv;
} nn__adam_args;

static void nn__adam_range(const nn__adam_args *a, int64_t i0, int64_t i1) {
    int64_t i;
    for (i = i0; i < i1; i++) {
        float w = a->p[i], g = a->g[i] * a->clip;
        g = (g > a->cv ? a->cv : g < -a->cv ? -a->cv : g) + a->l2 * w;
        float m = a->b1 * a->m[i] + (1.0f - a->b1) * g;
        float v = a->b2 * a->v[i] + (1.0f - a->b2) * g * g;
        a->m[i] = m;
        a->v[i] = v;
        a->p[i] = w * a->keep - a->step * m / (sqrtf(v) * a->inv_sbc2 + a->eps);
    }
}

#if defined(NN__VM_X86)
/* The same update eight lanes at a time: sqrtf's errno semantics keep compilers from
   vectorising the scalar loop at -O2. */
__attribute__((target("avx2,fma"))) static void nn__adam_range_avx2(const nn__adam_args *a, int64_t i0, int64_t i1) {
    __m256 clip = _mm256_set1_ps(a->clip), l2 = _mm256_set1_ps(a->l2), b1 = _mm256_set1_ps(a->b1);
    __m256 c1 = _mm256_set1_ps(1.0f - a->b1), b2 = _mm256_set1_ps(a->b2), c2 = _mm256_set1_ps(1.0f - a->b2);
    __m256 keep = _mm256_set1_ps(a->keep), step = _mm256_set1_ps(a->step), isb = _mm256_set1_ps(a->inv_sbc2);
    __m256 eps = _mm256_set1_ps(a->eps), cv = _mm256_set1_ps(a->cv), ncv = _mm256_set1_ps(-a->cv);
    int64_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        __m256 w = _mm256_loadu_ps(a->p + i);
        /* min/max return their second operand when one is NaN: x second, so NaN stays */
        __m256 gc = _mm256_max_ps(ncv, _mm256_min_ps(cv, _mm256_mul_ps(_mm256_loadu_ps(a->g + i), clip)));
        __m256 g = _mm256_add_ps(gc, _mm256_mul_ps(l2, w));
        __m256 m = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(a->m + i)), _mm256_mul_ps(c1, g));
        __m256 v = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(a->v + i)), _mm256_mul_ps(c2, _mm256_mul_ps(g, g)));
        __m256 den = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(v), isb), eps);
        _mm256_storeu_ps(a->m + i, m);
        _mm256_storeu_ps(a->v + i, v);
        _mm256_storeu_ps(a->p + i, _mm256_sub_ps(_mm256_mul_ps(w, keep), _mm256_div_ps(_mm256_mul_ps(step, m), den)));
    }
    nn__adam_range(a, i, i1);
}
#endif

/* Chunks are whole multiples of 8 elements, so the vector and scalar code see the same
   elements for any thread count (the scalar tail is always the tensor's last n % 8) and
   the result has the same bits with 1 thread or 8. */
static void nn__adam_task(void *arg, int t, int n_tasks) {
    const nn__adam_args *a = (const nn__adam_args *)arg;
    int64_t chunk = ((a->n + n_tasks - 1) / n_tasks + 7) / 8 * 8, i0 = chunk * t;
    int64_t i1 = i0 + chunk < a->n ? i0 + chunk : a->n;
    if (i0 >= i1) return;
#if defined(NN__VM_X86)
    if (nn__vm_isa() >= 1) {
        nn__adam_range_avx2(a, i0, i1);
        return;
    }
#endif
    nn__adam_range(a, i0, i1);
}

/* Element counts below which splitting a loop over threads costs more than it saves. */
#define NN__PAR_MIN 32768

static void nn__adam_update(nn__threadpool *pool, float *p, const float *grad, float *m, float *v, int64_t n, float lr,
                            float b1, float b2, float eps, float wd, int decoupled, float bc1, float bc2, float clip,
                            float cv) {
    nn__adam_args a;
    a.p = p;
    a.g = grad;
    a.m = m;
    a.v = v;
    a.n = n;
    a.clip = clip;
    a.b1 = b1;
    a.b2 = b2;
    a.step = lr / bc1;
    a.inv_sbc2 = 1.0f / sqrtf(bc2);
    a.eps = eps;
    a.keep = decoupled ? 1.0f - lr * wd : 1.0f;
    a.l2 = decoupled ? 0.0f : wd;
    a.cv = cv;
    nn__threadpool_run(pool, nn__adam_task, &a, n >= NN__PAR_MIN ? nn__threadpool_size(pool) : 1);
}
