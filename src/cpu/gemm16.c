/* ---------------------------------------------------------------------------
 * cpu/gemm16.c -- GEMM on bf16 or fp16 operands with fp32 accumulation, and the
 * 16-bit conversions.
 *
 *   C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C    (row-major; A, B 16-bit, C float)
 *
 * The loop nest, the thread grid, the C^T choice for narrow C and the K blocks are
 * src/cpu/gemm.c's (one task per block of C, one pool dispatch, no barrier); only the
 * packing and, for bf16 on AVX-512 BF16, the microkernel differ. Paths, chosen once at
 * run time (nn__gemm16_pick) and forced by tests with nn__gemm16_force:
 *
 *   bf16  avx512bf16  A and B packed as bf16 pairs (k, k+1) in 32-bit words (K blocks
 *                     padded to even with zeros); 12 x 32 tile of vdpbf16ps, which adds
 *                     the two exact products of a pair to the fp32 accumulator, the odd
 *                     one first, each add rounded to nearest even. vdpbf16ps flushes
 *                     bf16 denormal inputs and fp32 denormal results to zero (DAZ, FTZ:
 *                     not MXCSR's, its own); the other paths keep denormals.
 *         avx512f, avx2, generic: each block of op(A) and op(B) widened to fp32 (bf16
 *                     is the top half of a float: a shift) into a scratch block, then
 *                     packed and multiplied by gemm.c's fp32 packing and microkernels
 *   fp16  avx512f     widened by vcvtph2ps (zmm), gemm.c's AVX-512 microkernel
 *         avx2        widened by vcvtph2ps (F16C, ymm), gemm.c's AVX2 microkernel (needs
 *                     AVX2, FMA and F16C)
 *         generic     widened in plain C (nn__f16_to_f32), gemm.c's generic microkernel
 *
 * Memory: the packing (and widening) blocks of all tasks come from the pool's
 * workspace (without a pool: one NN_MALLOC per call); when that fails, an unpacked
 * loop that needs none (same sums, other rounding order).
 * ------------------------------------------------------------------------- */

/* ---- conversions: nn__bf16_to_f32, nn__f32_to_bf16, nn__f16_to_f32, nn__f32_to_f16 of
   kernels/storage.h (round to nearest even, NaN kept NaN, denormals kept), shared with the
   16-bit storage types ---- */
#include "../../kernels/storage.h"

/* ---- the paths --------------------------------------------------------------------- */

enum { NN__G16_BF16 = 0, NN__G16_F16 = 1 };

/* n 16-bit values of one format to floats */
typedef void (*nn__g16_cvt_fn)(const uint16_t *src, float *dst, int n);

/* n floats to 16-bit values of one format, rounded to nearest even (kernels/storage.h's
   nn__f32_to_bf16 / nn__f32_to_f16, the same bits) */
typedef void (*nn__g16_nar_fn)(const float *src, uint16_t *dst, int n);

/* Packs op(X)'s block, rows r0.. (mc of them) and K p0.. (kc), into mr-row panels of
   bf16 pairs (the A side; the B side: columns, nr) */
typedef void (*nn__g16_pack_fn)(int trans, const uint16_t *X, int ldx, int r0, int mc, int p0, int kc, int mr,
                                uint32_t *dst);

/* Full-tile microkernel on bf16 pair panels (kp pairs): as nn__gemm_ukr */
typedef void (*nn__g16_ukr)(int kp, const uint32_t *a, const uint32_t *b, float *c, int ldc, float alpha, float beta);

typedef struct {
    const nn__gemm_arch *f32; /* widening paths: gemm.c's fp32 packing and microkernel */
    nn__g16_cvt_fn cvt;       /* ... and the widening of a row */
    nn__g16_ukr ukr;          /* pair paths: the microkernel and packing (f32 NULL) */
    nn__g16_pack_fn pack_a, pack_b;
    int mr, nr, mc, kc, nc;
    const char *name;
    nn__g16_nar_fn nar; /* the rounding back to 16 bits on this path's CPU (src/cpu/cast.c) */
} nn__g16_arch;

static void nn__g16_cvt_bf16_c(const uint16_t *src, float *dst, int n) {
    int i;
    for (i = 0; i < n; i++) dst[i] = nn__bf16_to_f32(src[i]);
}
static void nn__g16_cvt_f16_c(const uint16_t *src, float *dst, int n) {
    int i;
    for (i = 0; i < n; i++) dst[i] = nn__f16_to_f32(src[i]);
}
static void nn__g16_nar_bf16_c(const float *src, uint16_t *dst, int n) {
    int i;
    for (i = 0; i < n; i++) dst[i] = nn__f32_to_bf16(src[i]);
}
static void nn__g16_nar_f16_c(const float *src, uint16_t *dst, int n) {
    int i;
    for (i = 0; i < n; i++) dst[i] = nn__f32_to_f16(src[i]);
}

/* Plain-C pair packing: word (k/2, r) holds rows r's values at k (low half) and k + 1
   (high half), zero past kc and past mc. trans: X stored [K, rows] (ldx >= rows), else
   [rows, K]. */
static uint32_t nn__g16_at(int trans, const uint16_t *X, int ldx, int r, int k) {
    return trans ? X[(size_t)k * ldx + r] : X[(size_t)r * ldx + k];
}
static void nn__g16_pack_pairs(int trans, const uint16_t *X, int ldx, int r0, int mc, int p0, int kc, int mr,
                               uint32_t *dst) {
    int ir, r, k, kp = (kc + 1) / 2;
    for (ir = 0; ir < mc; ir += mr) {
        int m = mc - ir < mr ? mc - ir : mr;
        for (k = 0; k < kp; k++) {
            uint32_t *d = dst + (size_t)k * mr;
            int k0 = p0 + 2 * k;
            for (r = 0; r < m; r++) {
                uint32_t lo = nn__g16_at(trans, X, ldx, r0 + ir + r, k0);
                uint32_t hi = 2 * k + 1 < kc ? nn__g16_at(trans, X, ldx, r0 + ir + r, k0 + 1) : 0u;
                d[r] = lo | hi << 16;
            }
            for (; r < mr; r++) d[r] = 0u;
        }
        dst += (size_t)mr * kp;
    }
}

#if NN__GEMM_X86
#include <cpuid.h>

/* F16C (CPUID 1 ECX bit 29) with AVX2 and FMA; AVX-512 BF16 (CPUID 7.1 EAX bit 5) with
   AVX-512F. The OS's support of the registers is what nn__vm_isa checked. */
static int nn__g16_has_f16c(void) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return nn__vm_isa() >= 1 && __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1u);
}
static int nn__g16_has_bf16(void) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return nn__vm_isa() == 2 && __get_cpuid_max(0, NULL) >= 7 && __get_cpuid_count(7, 1, &a, &b, &c, &d) &&
           (a >> 5 & 1u) && __builtin_cpu_supports("avx512bw");
}

__attribute__((target("avx2"))) static void nn__g16_cvt_bf16_avx2(const uint16_t *src, float *dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    for (; i < n; i++) dst[i] = nn__bf16_to_f32(src[i]);
}
__attribute__((target("avx512f"))) static void nn__g16_cvt_bf16_avx512(const uint16_t *src, float *dst, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        _mm512_storeu_si512((void *)(dst + i), _mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, h), 16));
    }
    for (; i < n; i++) dst[i] = nn__bf16_to_f32(src[i]);
}
__attribute__((target("avx2,f16c"))) static void nn__g16_cvt_f16_avx2(const uint16_t *src, float *dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
    for (; i < n; i++) dst[i] = nn__f16_to_f32(src[i]);
}
__attribute__((target("avx512f"))) static void nn__g16_cvt_f16_avx512(const uint16_t *src, float *dst, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256((const __m256i *)(const void *)(src + i))));
    for (; i < n; i++) dst[i] = nn__f16_to_f32(src[i]);
}

/* The rounding back, nn__f32_to_bf16 on 8 or 16 lanes: u + 0x7fff + (bit 16 of u), the high
   half; a NaN (|u| > 0x7f800000) keeps its high half with the quiet bit (0x40) set. f16:
   vcvtps2ph rounding to nearest even (imm 0), which gives nn__f32_to_f16's bits on every
   input: denormal results, 65520 and up to infinity, a NaN's top 10 payload bits with the
   quiet bit (the gemm16 cases check each path). */
__attribute__((target("avx2"))) static void nn__g16_nar_bf16_avx2(const float *src, uint16_t *dst, int n) {
    const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), abs = _mm256_set1_epi32(0x7fffffff),
                  inf = _mm256_set1_epi32(0x7f800000), quiet = _mm256_set1_epi32(0x40);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(src + i)), hi = _mm256_srli_epi32(u, 16);
        __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, bias), _mm256_and_si256(hi, one)), 16);
        __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
        r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), nan);
        r = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08); /* lanes 0-3 and 4-7 side by side */
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm256_castsi256_si128(r));
    }
    for (; i < n; i++) dst[i] = nn__f32_to_bf16(src[i]);
}
__attribute__((target("avx512f"))) static void nn__g16_nar_bf16_avx512(const float *src, uint16_t *dst, int n) {
    const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), abs = _mm512_set1_epi32(0x7fffffff),
                  inf = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(0x40);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i u = _mm512_loadu_si512((const void *)(src + i)), hi = _mm512_maskz_srli_epi32(0xFFFF, u, 16);
        __m512i r = _mm512_maskz_srli_epi32(0xFFFF, _mm512_add_epi32(_mm512_add_epi32(u, bias), _mm512_and_si512(hi, one)), 16);
        __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs), inf);
        r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(hi, quiet));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm512_maskz_cvtepi32_epi16(0xFFFF, r));
    }
    for (; i < n; i++) dst[i] = nn__f32_to_bf16(src[i]);
}
__attribute__((target("avx2,f16c"))) static void nn__g16_nar_f16_avx2(const float *src, uint16_t *dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), 0));
    for (; i < n; i++) dst[i] = nn__f32_to_f16(src[i]);
}
__attribute__((target("avx512f"))) static void nn__g16_nar_f16_avx512(const float *src, uint16_t *dst, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm512_maskz_cvtps_ph(0xFFFF, _mm512_loadu_ps(src + i), 0));
    for (; i < n; i++) dst[i] = nn__f32_to_f16(src[i]);
}

/* (the maskz forms above: g++ warns on the plain ones' undefined pass-through) */
#define NN__G16_TGT __attribute__((target("avx512f,avx512bw,avx512bf16")))

/* The B side of the pair packing, B stored [K, N]: rows k and k + 1 interleaved 32
   columns at a time (two vpermt2w), the rest by the plain-C packing. */
NN__G16_TGT static void nn__g16_pack_b_bf16(int trans, const uint16_t *X, int ldx, int c0, int nc, int p0, int kc,
                                            int nr, uint32_t *dst) {
    int jr, k, kp = (kc + 1) / 2;
    /* vpermt2w indices: 0..31 row k, 32..63 row k + 1; lo interleaves columns 0..15, hi 16..31 */
    static const uint16_t ilo[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                     8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    static const uint16_t ihi[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                     24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
    const __m512i lo = _mm512_loadu_si512((const void *)ilo), hi = _mm512_loadu_si512((const void *)ihi);
    if (trans || nr != 32) {
        nn__g16_pack_pairs(!trans, X, ldx, c0, nc, p0, kc, nr, dst);
        return;
    }
    for (jr = 0; jr + 32 <= nc; jr += 32) {
        const uint16_t *src = X + (size_t)p0 * ldx + c0 + jr;
        uint32_t *d = dst;
        for (k = 0; k + 2 <= kc; k += 2, d += 32) {
            __m512i r0 = _mm512_loadu_si512((const void *)(src + (size_t)k * ldx));
            __m512i r1 = _mm512_loadu_si512((const void *)(src + (size_t)(k + 1) * ldx));
            _mm512_store_si512((void *)d, _mm512_permutex2var_epi16(r0, lo, r1));
            _mm512_store_si512((void *)(d + 16), _mm512_permutex2var_epi16(r0, hi, r1));
        }
        if (k < kc) { /* odd kc: the last row with zeros */
            __m512i r0 = _mm512_loadu_si512((const void *)(src + (size_t)k * ldx)), z = _mm512_setzero_si512();
            _mm512_store_si512((void *)d, _mm512_permutex2var_epi16(r0, lo, z));
            _mm512_store_si512((void *)(d + 16), _mm512_permutex2var_epi16(r0, hi, z));
        }
        dst += (size_t)32 * kp;
    }
    if (jr < nc) nn__g16_pack_pairs(!trans, X, ldx, c0 + jr, nc - jr, p0, kc, nr, dst);
}

static void nn__g16_pack_a_bf16(int trans, const uint16_t *X, int ldx, int r0, int mc, int p0, int kc, int mr,
                                uint32_t *dst) {
    nn__g16_pack_pairs(trans, X, ldx, r0, mc, p0, kc, mr, dst);
}

/* 12 x 32: per pair of k, 2 aligned loads of B (32 columns of pairs), 12 broadcasts of
   A's pairs, 24 vdpbf16ps into 24 zmm accumulators; the store is nn__gemm_ukr_avx512's. */
NN__G16_TGT static void nn__g16_ukr_bf16(int kp, const uint32_t *a, const uint32_t *b, float *c, int ldc,
                                         float alpha, float beta) {
    __m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps();
    __m512 c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps();
    __m512 c20 = _mm512_setzero_ps(), c21 = _mm512_setzero_ps();
    __m512 c30 = _mm512_setzero_ps(), c31 = _mm512_setzero_ps();
    __m512 c40 = _mm512_setzero_ps(), c41 = _mm512_setzero_ps();
    __m512 c50 = _mm512_setzero_ps(), c51 = _mm512_setzero_ps();
    __m512 c60 = _mm512_setzero_ps(), c61 = _mm512_setzero_ps();
    __m512 c70 = _mm512_setzero_ps(), c71 = _mm512_setzero_ps();
    __m512 c80 = _mm512_setzero_ps(), c81 = _mm512_setzero_ps();
    __m512 c90 = _mm512_setzero_ps(), c91 = _mm512_setzero_ps();
    __m512 cA0 = _mm512_setzero_ps(), cA1 = _mm512_setzero_ps();
    __m512 cB0 = _mm512_setzero_ps(), cB1 = _mm512_setzero_ps();
    __m512bh b0, b1, av;
    __m512 va, vb;
    int k;
    for (k = 0; k < 12; k++) {
        _mm_prefetch((const char *)(c + (size_t)k * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + (size_t)k * ldc + 31), _MM_HINT_T0);
    }
#define NN__G16_ROW(I, X0, X1)                        \
    av = (__m512bh)_mm512_set1_epi32((int)a[I]);      \
    X0 = _mm512_dpbf16_ps(X0, av, b0);                \
    X1 = _mm512_dpbf16_ps(X1, av, b1);
    for (k = 0; k < kp; k++) {
        b0 = (__m512bh)_mm512_load_si512((const void *)b);
        b1 = (__m512bh)_mm512_load_si512((const void *)(b + 16));
        NN__G16_ROW(0, c00, c01)
        NN__G16_ROW(1, c10, c11)
        NN__G16_ROW(2, c20, c21)
        NN__G16_ROW(3, c30, c31)
        NN__G16_ROW(4, c40, c41)
        NN__G16_ROW(5, c50, c51)
        NN__G16_ROW(6, c60, c61)
        NN__G16_ROW(7, c70, c71)
        NN__G16_ROW(8, c80, c81)
        NN__G16_ROW(9, c90, c91)
        NN__G16_ROW(10, cA0, cA1)
        NN__G16_ROW(11, cB0, cB1)
        a += 12;
        b += 32;
    }
#undef NN__G16_ROW
    va = _mm512_set1_ps(alpha);
    vb = _mm512_set1_ps(beta);
#define NN__G16_STORE(R, X0, X1)                                                                     \
    {                                                                                                \
        float *cr = c + (size_t)(R) * ldc;                                                           \
        if (beta == 0.0f) {                                                                          \
            _mm512_storeu_ps(cr, _mm512_mul_ps(va, X0));                                             \
            _mm512_storeu_ps(cr + 16, _mm512_mul_ps(va, X1));                                        \
        } else {                                                                                     \
            _mm512_storeu_ps(cr, _mm512_fmadd_ps(va, X0, _mm512_mul_ps(vb, _mm512_loadu_ps(cr))));   \
            _mm512_storeu_ps(cr + 16,                                                                \
                             _mm512_fmadd_ps(va, X1, _mm512_mul_ps(vb, _mm512_loadu_ps(cr + 16)))); \
        }                                                                                            \
    }
    NN__G16_STORE(0, c00, c01)
    NN__G16_STORE(1, c10, c11)
    NN__G16_STORE(2, c20, c21)
    NN__G16_STORE(3, c30, c31)
    NN__G16_STORE(4, c40, c41)
    NN__G16_STORE(5, c50, c51)
    NN__G16_STORE(6, c60, c61)
    NN__G16_STORE(7, c70, c71)
    NN__G16_STORE(8, c80, c81)
    NN__G16_STORE(9, c90, c91)
    NN__G16_STORE(10, cA0, cA1)
    NN__G16_STORE(11, cB0, cB1)
#undef NN__G16_STORE
}
#undef NN__G16_TGT

static const nn__g16_arch nn__g16_bf16_dp = {NULL, NULL, nn__g16_ukr_bf16, nn__g16_pack_a_bf16, nn__g16_pack_b_bf16,
                                             12, 32, 192, 512, 4096, "avx512bf16", nn__g16_nar_bf16_avx512};
static const nn__g16_arch nn__g16_bf16_avx512 = {&nn__gemm_arch_avx512, nn__g16_cvt_bf16_avx512, NULL, NULL, NULL,
                                                 12, 32, 192, 256, 4096, "avx512f", nn__g16_nar_bf16_avx512};
static const nn__g16_arch nn__g16_bf16_avx2 = {&nn__gemm_arch_avx2, nn__g16_cvt_bf16_avx2, NULL, NULL, NULL,
                                               6, 16, 144, 256, 4080, "avx2", nn__g16_nar_bf16_avx2};
static const nn__g16_arch nn__g16_f16_avx512 = {&nn__gemm_arch_avx512, nn__g16_cvt_f16_avx512, NULL, NULL, NULL,
                                                12, 32, 192, 256, 4096, "avx512f", nn__g16_nar_f16_avx512};
static const nn__g16_arch nn__g16_f16_avx2 = {&nn__gemm_arch_avx2, nn__g16_cvt_f16_avx2, NULL, NULL, NULL,
                                              6, 16, 144, 256, 4080, "avx2", nn__g16_nar_f16_avx2};
#endif /* NN__GEMM_X86 */

static const nn__g16_arch nn__g16_bf16_generic = {&nn__gemm_arch_generic, nn__g16_cvt_bf16_c, NULL, NULL, NULL,
                                                  4, 8, 128, 256, 2048, "generic", nn__g16_nar_bf16_c};
static const nn__g16_arch nn__g16_f16_generic = {&nn__gemm_arch_generic, nn__g16_cvt_f16_c, NULL, NULL, NULL,
                                                 4, 8, 128, 256, 2048, "generic", nn__g16_nar_f16_c};

/* The path of each format; NULL: not chosen yet (atomic as gemm.c's choice). */
static const nn__g16_arch *nn__g16_cur[2] = {NULL, NULL};
#if defined(__GNUC__)
#define NN__G16_GET(f) __atomic_load_n(&nn__g16_cur[f], __ATOMIC_ACQUIRE)
#define NN__G16_SET(f, x) __atomic_store_n(&nn__g16_cur[f], (x), __ATOMIC_RELEASE)
#else
#define NN__G16_GET(f) nn__g16_cur[f]
#define NN__G16_SET(f, x) (nn__g16_cur[f] = (x))
#endif

/* The widening of n 16-bit values of format fmt into float32 on this CPU (AVX-512F, AVX2
   with F16C for f16, else C): exact, the same values as nn__bf16_to_f32 / nn__f16_to_f32
   (the gemm16 cases check each path on every finite value). src/cpu/cast.c widens with it. */
static NN__MAYBE_UNUSED nn__g16_cvt_fn nn__g16_widen_fn(int fmt) {
#if NN__GEMM_X86
    if (nn__vm_isa() == 2) return fmt == NN__G16_BF16 ? nn__g16_cvt_bf16_avx512 : nn__g16_cvt_f16_avx512;
    if (nn__vm_isa() >= 1 && (fmt == NN__G16_BF16 || nn__g16_has_f16c()))
        return fmt == NN__G16_BF16 ? nn__g16_cvt_bf16_avx2 : nn__g16_cvt_f16_avx2;
#endif
    return fmt == NN__G16_BF16 ? nn__g16_cvt_bf16_c : nn__g16_cvt_f16_c;
}

/* The path named name for format fmt if this CPU and build have it, else NULL */
static const nn__g16_arch *nn__g16_named(int fmt, const char *name) {
    if (!strcmp(name, "generic")) return fmt == NN__G16_BF16 ? &nn__g16_bf16_generic : &nn__g16_f16_generic;
#if NN__GEMM_X86
    if (!strcmp(name, "avx512bf16") && fmt == NN__G16_BF16 && nn__g16_has_bf16()) return &nn__g16_bf16_dp;
    if (!strcmp(name, "avx512f") && nn__vm_isa() == 2) return fmt == NN__G16_BF16 ? &nn__g16_bf16_avx512 : &nn__g16_f16_avx512;
    if (!strcmp(name, "avx2") && nn__vm_isa() >= 1 && (fmt == NN__G16_BF16 || nn__g16_has_f16c()))
        return fmt == NN__G16_BF16 ? &nn__g16_bf16_avx2 : &nn__g16_f16_avx2;
#endif
    return NULL;
}

static const nn__g16_arch *nn__gemm16_pick(int fmt) {
    static const char *const order[] = {"avx512bf16", "avx512f", "avx2", "generic"};
    const nn__g16_arch *arch = NN__G16_GET(fmt);
    size_t i;
    for (i = 0; !arch && i < sizeof order / sizeof order[0]; i++) arch = nn__g16_named(fmt, order[i]);
    NN__G16_SET(fmt, arch);
    return arch;
}

/* Test hook: fmt's path by name ("avx512bf16" (bf16 only), "avx512f", "avx2", "generic"),
   or NULL for the automatic choice. Returns the name of the path now in use (one this CPU
   or build lacks is refused and the current one kept). */
static NN__MAYBE_UNUSED const char *nn__gemm16_force(int fmt, const char *name) {
    const nn__g16_arch *arch = name ? nn__g16_named(fmt, name) : NULL;
    if (!name || arch) NN__G16_SET(fmt, arch);
    return nn__gemm16_pick(fmt)->name;
}

/* The rounding of n floats into 16-bit values of format fmt on this CPU: the chosen (or
   forced) path's, the same bits on every path as nn__f32_to_bf16 / nn__f32_to_f16.
   src/cpu/cast.c and the 16-bit elementwise bodies round with it. */
static NN__MAYBE_UNUSED nn__g16_nar_fn nn__g16_narrow_fn(int fmt) { return nn__gemm16_pick(fmt)->nar; }

/* ---- one task's block of C -------------------------------------------------------- */

typedef struct {
    const nn__g16_arch *arch;
    int transA, transB, M, N, K;
    float alpha, beta;
    const uint16_t *A, *B;
    float *C;
    int lda, ldb, ldc;
    int kc, mblk, nblk, tn, ct; /* as nn__gemm_job's */
    unsigned char *buf;         /* n_tasks slices of slice bytes each, 64-byte aligned */
    size_t slice, a_bytes, b_bytes, ta_bytes; /* a slice: packed A, packed B, then the widening blocks of A and B */
} nn__g16_job;

/* op(X)'s block, rows r0.. (n of them) and K p0.. (kc), widened into dst in its stored
   layout: [n][kc] (ld kc), or [kc][n] (ld n) when trans */
static void nn__g16_widen(const nn__g16_arch *arch, int trans, const uint16_t *X, int ldx, int r0, int n, int p0,
                          int kc, float *dst) {
    int i;
    if (!trans)
        for (i = 0; i < n; i++) arch->cvt(X + (size_t)(r0 + i) * ldx + p0, dst + (size_t)i * kc, kc);
    else
        for (i = 0; i < kc; i++) arch->cvt(X + (size_t)(p0 + i) * ldx + r0, dst + (size_t)i * n, n);
}

static void nn__g16_block(const nn__g16_job *J, int m0, int m1, int n0, int n1, unsigned char *ws) {
    const nn__g16_arch *arch = J->arch;
    const int mr = arch->mr, nr = arch->nr, K = J->K, pairs = arch->f32 == NULL;
    unsigned char *abuf = ws, *bbuf = ws + J->a_bytes;
    float *ta = (float *)(void *)(bbuf + J->b_bytes), *tb = (float *)(void *)(bbuf + J->b_bytes + J->ta_bytes);
    int jc, pc, ic, jr, ir, i, j;
    float tmp[NN__GEMM_MAX_MR * NN__GEMM_MAX_NR];
    int nmb = (m1 - m0 + arch->mc - 1) / arch->mc;
    int mc_blk = ((m1 - m0 + nmb - 1) / nmb + mr - 1) / mr * mr;

    for (jc = n0; jc < n1; jc += arch->nc) {
        int nc = n1 - jc < arch->nc ? n1 - jc : arch->nc;
        for (pc = 0; pc < K; pc += J->kc) {
            int kc = K - pc < J->kc ? K - pc : J->kc;
            int kp = pairs ? (kc + 1) / 2 : kc; /* packed steps: pairs, or k */
            size_t step = pairs ? sizeof(uint32_t) : sizeof(float);
            float beta = pc == 0 ? J->beta : 1.0f;
            if (pairs) arch->pack_b(J->transB, J->B, J->ldb, jc, nc, pc, kc, nr, (uint32_t *)(void *)bbuf);
            else if (!J->transB) { /* B [K, N]: each panel row widened in place, as pack_b copies it */
                float *d = (float *)(void *)bbuf;
                for (jr = 0; jr < nc; jr += nr, d += (size_t)nr * kc) {
                    int n = nc - jr < nr ? nc - jr : nr, k;
                    for (k = 0; k < kc; k++) {
                        arch->cvt(J->B + (size_t)(pc + k) * J->ldb + jc + jr, d + (size_t)k * nr, n);
                        for (j = n; j < nr; j++) d[(size_t)k * nr + j] = 0.0f;
                    }
                }
            } else { /* B [N, K]: widened, then transposed by gemm.c's packing */
                nn__g16_widen(arch, 0, J->B, J->ldb, jc, nc, pc, kc, tb);
                arch->f32->pack_b(1, tb, kc, 0, kc, 0, nc, nr, (float *)(void *)bbuf);
            }
            for (ic = m0; ic < m1; ic += mc_blk) {
                int mc = m1 - ic < mc_blk ? m1 - ic : mc_blk;
                if (pairs) arch->pack_a(J->transA, J->A, J->lda, ic, mc, pc, kc, mr, (uint32_t *)(void *)abuf);
                else {
                    nn__g16_widen(arch, J->transA, J->A, J->lda, ic, mc, pc, kc, ta);
                    if (J->transA) arch->f32->pack_a(1, ta, mc, 0, mc, 0, kc, mr, (float *)(void *)abuf);
                    else arch->f32->pack_a(0, ta, kc, 0, mc, 0, kc, mr, (float *)(void *)abuf);
                }
                for (jr = 0; jr < nc; jr += nr) {
                    int n = nc - jr < nr ? nc - jr : nr;
                    const void *bp = bbuf + (size_t)jr * kp * step;
                    for (ir = 0; ir < mc; ir += mr) {
                        int m = mc - ir < mr ? mc - ir : mr;
                        const void *ap = abuf + (size_t)ir * kp * step;
                        float *cp = J->C + (J->ct ? 0 : (size_t)(ic + ir) * J->ldc + jc + jr);
                        int full = m == mr && n == nr && !J->ct;
                        float *out = full ? cp : tmp;
                        int ldo = full ? J->ldc : nr;
                        float al = full ? J->alpha : 1.0f, be = full ? beta : 0.0f;
                        if (pairs) arch->ukr(kp, (const uint32_t *)ap, (const uint32_t *)bp, out, ldo, al, be);
                        else arch->f32->ukr(kc, (const float *)ap, (const float *)bp, out, ldo, al, be);
                        if (full) continue;
                        /* edge tile or C^T: the valid part of tmp, as nn__gemm_block */
                        if (!J->ct) {
                            nn__gemm_store_tile(cp, J->ldc, tmp, nr, m, n, J->alpha, beta);
                        } else {
                            for (j = 0; j < n; j++) {
                                float *cr = J->C + (size_t)(jc + jr + j) * J->ldc + ic + ir;
                                if (beta == 0.0f)
                                    for (i = 0; i < m; i++) cr[i] = J->alpha * tmp[(size_t)i * nr + j];
                                else
                                    for (i = 0; i < m; i++) cr[i] = J->alpha * tmp[(size_t)i * nr + j] + beta * cr[i];
                            }
                        }
                    }
                }
            }
        }
    }
}

static void nn__g16_task(void *arg, int t, int n_tasks) {
    const nn__g16_job *J = (const nn__g16_job *)arg;
    int m0 = (t / J->tn) * J->mblk, n0 = (t % J->tn) * J->nblk;
    int m1 = m0 + J->mblk < J->M ? m0 + J->mblk : J->M;
    int n1 = n0 + J->nblk < J->N ? n0 + J->nblk : J->N;
    (void)n_tasks;
    if (m0 >= m1 || n0 >= n1) return;
    nn__g16_block(J, m0, m1, n0, n1, J->buf + (size_t)t * J->slice);
}

/* No packing memory: C = alpha op(A) op(B) + beta C element by element, the products
   summed in K order in float. */
static void nn__g16_nopack(int fmt, const nn__g16_job *J) {
    int i, j, k;
    for (i = 0; i < J->M; i++)
        for (j = 0; j < J->N; j++) {
            float s = 0.0f, *c = J->ct ? &J->C[(size_t)j * J->ldc + i] : &J->C[(size_t)i * J->ldc + j];
            for (k = 0; k < J->K; k++) {
                uint16_t a = J->transA ? J->A[(size_t)k * J->lda + i] : J->A[(size_t)i * J->lda + k];
                uint16_t b = J->transB ? J->B[(size_t)j * J->ldb + k] : J->B[(size_t)k * J->ldb + j];
                s += fmt == NN__G16_BF16 ? nn__bf16_to_f32(a) * nn__bf16_to_f32(b) : nn__f16_to_f32(a) * nn__f16_to_f32(b);
            }
            *c = J->beta == 0.0f ? J->alpha * s : J->alpha * s + J->beta * *c;
        }
}

/* ---- entry points ------------------------------------------------------------------ */

/* Fills J as nn__gemm_prepare does (the same C^T choice, K blocks and thread grid for the
   path's tile); returns the bytes of packing memory and the task count in *n_tasks. */
static size_t nn__g16_prepare(nn__g16_job *J, int fmt, int n_thr, int transA, int transB, int M, int N, int K,
                              float alpha, const uint16_t *A, int lda, const uint16_t *B, int ldb, float beta, float *C,
                              int ldc, int *n_tasks) {
    const nn__g16_arch *arch = nn__gemm16_pick(fmt);
    int mr = arch->mr, nr = arch->nr, mtiles, ntiles, tm, tn, best_tm = 1, best_tn = 1, nkb, kp;
    double best_cost = -1.0;
    size_t mc_alloc, nc_alloc, step = arch->f32 ? sizeof(float) : sizeof(uint32_t);
    memset(J, 0, sizeof *J);
    J->arch = arch;
    J->M = M;
    J->N = N;
    J->K = K;
    J->alpha = alpha;
    J->beta = beta;
    J->C = C;
    J->ldc = ldc;
    J->transA = transA;
    J->transB = transB;
    J->A = A;
    J->B = B;
    J->lda = lda;
    J->ldb = ldb;
    {
        double eff = (double)M / ((M + mr - 1) / mr * mr) * N / ((N + nr - 1) / nr * nr);
        double eff_t = (double)N / ((N + mr - 1) / mr * mr) * M / ((M + nr - 1) / nr * nr);
        if (eff_t > eff * 1.15) {
            J->ct = 1;
            J->M = N;
            J->N = M;
            J->transA = !transB;
            J->transB = !transA;
            J->A = B;
            J->B = A;
            J->lda = ldb;
            J->ldb = lda;
        }
    }
    M = J->M;
    N = J->N;
    nkb = (K + arch->kc - 1) / arch->kc;
    J->kc = ((K + nkb - 1) / nkb + 7) / 8 * 8;
    if (J->kc > K) J->kc = K;
    kp = arch->f32 ? J->kc : (J->kc + 1) / 2;
    mtiles = (M + mr - 1) / mr;
    ntiles = (N + nr - 1) / nr;
    if ((double)M * N * K < nn__gemm_mt_min_macs) n_thr = 1;
    for (tm = 1; tm <= n_thr && tm <= mtiles; tm++) {
        double ms, ns, cost;
        tn = n_thr / tm < ntiles ? n_thr / tm : ntiles;
        ms = (double)((mtiles + tm - 1) / tm) * mr;
        ns = (double)((ntiles + tn - 1) / tn) * nr;
        cost = ms * ns * K + 8.0 * (ms * K * (double)(((int)ns + arch->nc - 1) / arch->nc) + ns * K);
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best_tm = tm;
            best_tn = tn;
        }
    }
    J->mblk = (mtiles + best_tm - 1) / best_tm * mr;
    J->nblk = (ntiles + best_tn - 1) / best_tn * nr;
    J->tn = best_tn;
    *n_tasks = best_tm * best_tn;
    mc_alloc = (size_t)(J->mblk < arch->mc ? J->mblk : arch->mc);
    nc_alloc = (size_t)(J->nblk < arch->nc ? J->nblk : arch->nc);
    J->a_bytes = (mc_alloc * (size_t)kp * step + 63) / 64 * 64;
    J->b_bytes = (nc_alloc * (size_t)kp * step + 63) / 64 * 64;
    J->ta_bytes = arch->f32 ? (mc_alloc * (size_t)J->kc * sizeof(float) + 63) / 64 * 64 : 0;
    J->slice = J->a_bytes + J->b_bytes + J->ta_bytes + (arch->f32 ? (nc_alloc * (size_t)J->kc * sizeof(float) + 63) / 64 * 64 : 0);
    return J->slice * (size_t)*n_tasks + NN__GEMM_ALIGN;
}

/* ws: the caller's workspace, grown and kept (a batched matmul's task runs many products;
   nn__sgemm_ws's convention), else the pool's, else one NN_MALLOC for this call */
static void nn__gemm16_run(int fmt, nn__threadpool *pool, nn__gemm_ws *ws, int transA, int transB, int M, int N, int K,
                           float alpha, const uint16_t *A, int lda, const uint16_t *B, int ldb, float beta, float *C,
                           int ldc) {
    nn__g16_job J;
    int n_tasks, t, owned;
    size_t bytes;
    void *raw;
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.0f) {
        nn__gemm_scale_c(M, N, beta, C, ldc);
        return;
    }
    bytes = nn__g16_prepare(&J, fmt, nn__threadpool_size(pool), transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C,
                            ldc, &n_tasks);
    raw = ws ? nn__gemm_ws_get(ws, bytes) : nn__threadpool_workspace(pool, bytes);
    owned = raw == NULL && !ws;
    if (owned) raw = NN_MALLOC(bytes);
    if (!raw) {
        nn__g16_nopack(fmt, &J);
        return;
    }
    J.buf = (unsigned char *)nn__gemm_align(raw);
    if (n_tasks > 1) nn__threadpool_run(pool, nn__g16_task, &J, n_tasks);
    else
        for (t = 0; t < n_tasks; t++) nn__g16_task(&J, t, n_tasks);
    if (owned) NN_FREE(raw);
}

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C with A and B bf16 (the top halves of
   floats), C float, accumulated in float: nn__sgemm's arguments and conventions (transA:
   A stored [K,M], lda >= M, else [M,K], lda >= K; likewise B; beta == 0 ignores C's old
   contents; pool NULL: the calling thread), on the path nn__gemm16_pick chose. */
static NN__MAYBE_UNUSED void nn__cpu_gemm_bf16(nn__threadpool *pool, int transA, int transB, int M, int N, int K,
                                               float alpha, const uint16_t *A, int lda, const uint16_t *B, int ldb,
                                               float beta, float *C, int ldc) {
    nn__gemm16_run(NN__G16_BF16, pool, NULL, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* The same with A and B fp16 (IEEE binary16). */
static NN__MAYBE_UNUSED void nn__cpu_gemm_f16(nn__threadpool *pool, int transA, int transB, int M, int N, int K,
                                              float alpha, const uint16_t *A, int lda, const uint16_t *B, int ldb,
                                              float beta, float *C, int ldc) {
    nn__gemm16_run(NN__G16_F16, pool, NULL, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* The same on the calling thread with the caller's workspace (fmt NN__G16_BF16 or _F16),
   kept across calls as nn__sgemm_ws does: no allocation per product once it has grown. */
static NN__MAYBE_UNUSED void nn__cpu_gemm16_ws(int fmt, nn__gemm_ws *ws, int transA, int transB, int M, int N, int K,
                                               float alpha, const uint16_t *A, int lda, const uint16_t *B, int ldb,
                                               float beta, float *C, int ldc) {
    nn__gemm16_run(fmt, NULL, ws, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* n values converted (what: 0 f32 -> bf16, 1 bf16 -> f32, 2 f32 -> f16, 3 f16 -> f32), the
   loops of the public nn_f32_to_bf16 ... */
static NN__MAYBE_UNUSED void nn__cvt16_n(int what, const void *src, void *dst, int64_t n) {
    int64_t i;
    const float *fs = (const float *)src;
    const uint16_t *hs = (const uint16_t *)src;
    float *fd = (float *)dst;
    uint16_t *hd = (uint16_t *)dst;
    switch (what) {
    case 0:
    case 2:
        for (i = 0; i < n; i += 1 << 20) nn__g16_narrow_fn(what == 0 ? NN__G16_BF16 : NN__G16_F16)(fs + i, hd + i, (int)(n - i < (1 << 20) ? n - i : 1 << 20));
        break;
    case 1: for (i = 0; i < n; i++) fd[i] = nn__bf16_to_f32(hs[i]); break;
    default: for (i = 0; i < n; i++) fd[i] = nn__f16_to_f32(hs[i]); break;
    }
}
