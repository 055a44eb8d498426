/* ---------------------------------------------------------------------------
 * cpu/gemm.c -- single-precision GEMM for the CPU backend.
 *
 *   C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C      (row-major)
 *
 * GotoBLAS/BLIS structure.  For a block of C owned by one thread:
 *
 *   for jc (NC columns of C)            B block  [KC x NC] packed -> L3
 *     for pc (KC of the K dimension)
 *       pack op(B)[pc:pc+kc, jc:jc+nc] into NR-wide column panels
 *       for ic (MC rows of C)           A block  [MC x KC] packed -> L2
 *         pack op(A)[ic:ic+mc, pc:pc+kc] into MR-tall row panels
 *         for jr (NR), ir (MR)          B panel  [KC x NR] stays in L1
 *           microkernel: C[MR x NR] (+)= Apanel[MR x kc] * Bpanel[kc x NR]
 *
 * (AVX-512, arch->a_l1: ir outer, jr inner, so the 12 KB A panel stays in L1 and
 * the 32 KB B panels stream from the L2-sized B block, NC 512: a B panel as big
 * as L1 did not stay there; 1-thread SGEMM 1024 +10-15% on the Xeon. The tile
 * order changes no element's arithmetic.)
 *
 * Packing absorbs the transposes (the microkernel only ever sees one layout)
 * and zero-pads the edges, so kernels only handle full MR x NR tiles; partial
 * tiles go through a small stack buffer.  One exception: with AVX-512, full
 * 12-row panels of an A [M,K] whose rows do not crowd L1's sets (nn__gemm_direct_lda_ok) are
 * read in place (nn__gemm_ukr_avx512_s, the same FMAs, so the same bits), not packed:
 * the GPT's activations, whose packing cost 7% of a tiny GPT step.  And with AVX-512, op(B) =
 * B [K,N] is packed by the block's first A panel as it multiplies (nn__gemm_ukr_avx512_pb: its
 * B rows loaded from B, stored into the panel, the same FMAs): no pass of its own over B, which
 * cost 3-6% of SGEMM 1024 (2-core Zen 5, in-process A/B: 1024^3 1.01-1.025x, the MLP's
 * 128x256x784 1.03-1.04x, 256 to 2048 within noise).  When C is narrow (N < NR, e.g. the
 * 10 logits of a classifier) we compute C^T = op(B)^T op(A)^T instead, which
 * puts the small dimension on the MR side and wastes far less of each tile.
 *
 * Threads: C is cut into a tm x tn grid of blocks (multiples of MR / NR),
 * one task per block, each running the loop nest above on its own packing
 * buffers.  This duplicates a little packing (each thread packs the A rows
 * and B columns it needs) but needs exactly one pool dispatch per call and no
 * barriers, which is what matters for the small matrices of MLP training.
 * Products of >= NN_GEMM_PRE_MIN_MACS on the pool whose tasks split M only
 * pack op(A) once where a task has several NC blocks (each would pack its
 * rows again): each block (K block x MC rows) by the task's first NC block
 * that needs it; a copy, so the same bits. Blocks that several tasks need are
 * packed by each: packed once, shared, the tasks (which reach a block
 * together) waited for the one packing it, and reading another core's panels
 * cost more than packing them (nn__gemm_pre_plan).
 *
 * Microkernels, chosen once at run time (nn__vm_isa, src/cpu/simd.c):
 *   AVX-512F  12 x 32  (24 zmm accumulators)
 *   AVX2+FMA   6 x 16  (12 ymm accumulators)
 *   NEON       8 x 8   (aarch64 only, 16 q-register accumulators)
 *   generic    4 x 8   (plain C, any compiler)
 * The x86 kernels (and the AVX2 packing routines, which transpose in 8x8
 * register blocks) are compiled with __attribute__((target)) so a plain
 * "cc -O2" build still gets them; MSVC and others get the generic kernel.
 * The AVX-512 and NEON kernels could not be run on the development machine
 * (Zen3): AVX-512 was verified with an emulated-intrinsics build of the same
 * code, NEON only compiled for aarch64.
 *
 * Memory: packing buffers for all tasks (64-byte aligned, at most ~4.3 MB
 * per thread) come from the pool's workspace, which grows and is kept, so
 * steady-state calls allocate nothing; without a pool, one NN_MALLOC per
 * call. If that fails, the same loop nest runs one MR x NR tile at a time
 * in the small workspace the CPU backend reserves in its pool at context
 * creation (nn__sgemm_small_bytes): the same bits, only slower. Without
 * that, a slow unpacked loop (other rounding).
 * ------------------------------------------------------------------------- */

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define NN__GEMM_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define NN__GEMM_X86 0
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#define NN__GEMM_NEON 1
#include <arm_neon.h>
#else
#define NN__GEMM_NEON 0
#endif

#define NN__GEMM_MAX_MR 12
#define NN__GEMM_MAX_NR 32
#define NN__GEMM_ALIGN 64
#define NN__GEMM_MAX_KC 512 /* the largest kc of the kernels below */

/* Full-tile microkernel: c[0:MR, 0:NR] (row stride ldc) =
   alpha * sum_k a[k*MR + i] * b[k*NR + j]  +  beta * c   (beta == 0: c is
   not read).  a and b are packed panels, b is 64-byte aligned. */
typedef void (*nn__gemm_ukr)(int kc, const float *a, const float *b, float *c, int ldc,
                             float alpha, float beta);

/* Packing routines (see nn__gemm_pack_a / nn__gemm_pack_b below). */
typedef void (*nn__gemm_pack_fn)(int trans, const float *X, int ldx, int r0, int nr_, int c0, int nc_,
                                 int w, float *dst);

/* The same with op(A)[i, k] read in place at a[i * rs + k * cs] (full MR-row panels only) */
typedef void (*nn__gemm_ukr_s)(int kc, const float *a, size_t rs, size_t cs, const float *b, float *c, int ldc,
                               float alpha, float beta);

/* The full-tile kernel with op(B) = B [K,N] read from bs (rows ldb apart) and packed into the
   panel b on the way (the same FMAs as ukr); op(A)[i, k] at a[i * rs + k * cs], as ukr_s reads it */
typedef void (*nn__gemm_ukr_pb)(int kc, const float *a, size_t rs, size_t cs, const float *bs, int ldb, float *b,
                                float *c, int ldc, float alpha, float beta);

typedef struct {
    nn__gemm_ukr ukr;
    nn__gemm_pack_fn pack_a, pack_b;
    int mr, nr; /* register tile */
    int mc, kc, nc; /* cache blocks: mc % mr == 0, nc % nr == 0 */
    const char *name;
    nn__gemm_ukr_s ukr_s; /* or NULL: A is always packed */
    int a_l1; /* tile order in nn__gemm_block: 1, A panels outer (an A panel stays in L1,
                 the NC block's B panels stream from L2); 0, B panels outer (a B panel
                 stays in L1, the MC block's A panels stream from L2) */
    nn__gemm_ukr_pb ukr_pb; /* or NULL: op(B) is packed in a pass of its own */
} nn__gemm_arch;

/* ---- generic kernel (4 x 8) ------------------------------------------- */

static void nn__gemm_ukr_generic(int kc, const float *a, const float *b, float *c, int ldc,
                                 float alpha, float beta) {
    float acc[4][8];
    int i, j, k;
    for (i = 0; i < 4; i++)
        for (j = 0; j < 8; j++) acc[i][j] = 0.0f;
    for (k = 0; k < kc; k++) {
        for (i = 0; i < 4; i++) {
            float av = a[i];
            for (j = 0; j < 8; j++) acc[i][j] += av * b[j];
        }
        a += 4;
        b += 8;
    }
    for (i = 0; i < 4; i++) {
        float *cr = c + (size_t)i * ldc;
        if (beta == 0.0f)
            for (j = 0; j < 8; j++) cr[j] = alpha * acc[i][j];
        else
            for (j = 0; j < 8; j++) cr[j] = alpha * acc[i][j] + beta * cr[j];
    }
}

/* ---- AVX2 + FMA kernel (6 x 16) ---------------------------------------- */
#if NN__GEMM_X86

/* Per k: 2 aligned loads of B (16 floats), 6 broadcasts of A, 12 FMAs into
   12 ymm accumulators -- 15 of the 16 ymm registers. */
__attribute__((target("avx2,fma"))) static void
nn__gemm_ukr_avx2(int kc, const float *a, const float *b, float *c, int ldc, float alpha,
                  float beta) {
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
    __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
    __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
    __m256 b0, b1, av, va, vb;
    int k;
    /* Warm the C tile while we compute (each row is 64 bytes). */
    for (k = 0; k < 6; k++) {
        _mm_prefetch((const char *)(c + (size_t)k * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + (size_t)k * ldc + 15), _MM_HINT_T0);
    }
#define NN__AVX2_STEP(A, B)                                                  \
    b0 = _mm256_load_ps(B);                                                  \
    b1 = _mm256_load_ps((B) + 8);                                            \
    av = _mm256_broadcast_ss((A) + 0);                                       \
    c00 = _mm256_fmadd_ps(av, b0, c00);                                      \
    c01 = _mm256_fmadd_ps(av, b1, c01);                                      \
    av = _mm256_broadcast_ss((A) + 1);                                       \
    c10 = _mm256_fmadd_ps(av, b0, c10);                                      \
    c11 = _mm256_fmadd_ps(av, b1, c11);                                      \
    av = _mm256_broadcast_ss((A) + 2);                                       \
    c20 = _mm256_fmadd_ps(av, b0, c20);                                      \
    c21 = _mm256_fmadd_ps(av, b1, c21);                                      \
    av = _mm256_broadcast_ss((A) + 3);                                       \
    c30 = _mm256_fmadd_ps(av, b0, c30);                                      \
    c31 = _mm256_fmadd_ps(av, b1, c31);                                      \
    av = _mm256_broadcast_ss((A) + 4);                                       \
    c40 = _mm256_fmadd_ps(av, b0, c40);                                      \
    c41 = _mm256_fmadd_ps(av, b1, c41);                                      \
    av = _mm256_broadcast_ss((A) + 5);                                       \
    c50 = _mm256_fmadd_ps(av, b0, c50);                                      \
    c51 = _mm256_fmadd_ps(av, b1, c51);
    for (k = 0; k + 4 <= kc; k += 4) {
        NN__AVX2_STEP(a, b)
        NN__AVX2_STEP(a + 6, b + 16)
        NN__AVX2_STEP(a + 12, b + 32)
        NN__AVX2_STEP(a + 18, b + 48)
        a += 24;
        b += 64;
    }
    for (; k < kc; k++) {
        NN__AVX2_STEP(a, b)
        a += 6;
        b += 16;
    }
#undef NN__AVX2_STEP
    va = _mm256_set1_ps(alpha);
#define NN__AVX2_STORE(R, X0, X1)                                                        \
    {                                                                                    \
        float *cr = c + (size_t)(R) * ldc;                                               \
        if (beta == 0.0f) {                                                              \
            _mm256_storeu_ps(cr, _mm256_mul_ps(va, X0));                                 \
            _mm256_storeu_ps(cr + 8, _mm256_mul_ps(va, X1));                             \
        } else {                                                                         \
            _mm256_storeu_ps(cr, _mm256_fmadd_ps(va, X0, _mm256_mul_ps(vb, _mm256_loadu_ps(cr))));          \
            _mm256_storeu_ps(cr + 8, _mm256_fmadd_ps(va, X1, _mm256_mul_ps(vb, _mm256_loadu_ps(cr + 8)))); \
        }                                                                                \
    }
    vb = _mm256_set1_ps(beta);
    NN__AVX2_STORE(0, c00, c01)
    NN__AVX2_STORE(1, c10, c11)
    NN__AVX2_STORE(2, c20, c21)
    NN__AVX2_STORE(3, c30, c31)
    NN__AVX2_STORE(4, c40, c41)
    NN__AVX2_STORE(5, c50, c51)
#undef NN__AVX2_STORE
}

/* ---- AVX-512F kernel (12 x 32) ----------------------------------------- */

/* Per k: 2 aligned loads of B (32 floats), 12 broadcasts of A, 24 FMAs into
   24 zmm accumulators (27 of 32 registers live).  Written out by hand:
   compilers do not keep an accumulator array in registers at -O2.  A is read
   as a[i * rs + k * cs]: a packed panel (rs 1, cs 12), or op(A)'s own rows
   (nn__gemm_ukr_avx512_s: rs lda, cs 1 for A [M,K]; rs 1, cs lda for A stored
   [K,M]), the same FMAs in the same order either way, so the same bits. */
#define NN__AVX512_UKR_BODY(AROW, ASTEP, BLOAD)                                                      \
    __m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps();                                     \
    __m512 c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps();                                     \
    __m512 c20 = _mm512_setzero_ps(), c21 = _mm512_setzero_ps();                                     \
    __m512 c30 = _mm512_setzero_ps(), c31 = _mm512_setzero_ps();                                     \
    __m512 c40 = _mm512_setzero_ps(), c41 = _mm512_setzero_ps();                                     \
    __m512 c50 = _mm512_setzero_ps(), c51 = _mm512_setzero_ps();                                     \
    __m512 c60 = _mm512_setzero_ps(), c61 = _mm512_setzero_ps();                                     \
    __m512 c70 = _mm512_setzero_ps(), c71 = _mm512_setzero_ps();                                     \
    __m512 c80 = _mm512_setzero_ps(), c81 = _mm512_setzero_ps();                                     \
    __m512 c90 = _mm512_setzero_ps(), c91 = _mm512_setzero_ps();                                     \
    __m512 cA0 = _mm512_setzero_ps(), cA1 = _mm512_setzero_ps();                                     \
    __m512 cB0 = _mm512_setzero_ps(), cB1 = _mm512_setzero_ps();                                     \
    __m512 b0, b1, av, va, vb;                                                                       \
    int k;                                                                                           \
    for (k = 0; k < 12; k++) {                                                                       \
        _mm_prefetch((const char *)(c + (size_t)k * ldc), _MM_HINT_T0);                              \
        _mm_prefetch((const char *)(c + (size_t)k * ldc + 31), _MM_HINT_T0);                         \
    }                                                                                                \
    for (k = 0; k < kc; k++) {                                                                       \
        BLOAD                                                                                        \
        NN__AVX512_ROW(AROW(0), c00, c01)                                                            \
        NN__AVX512_ROW(AROW(1), c10, c11)                                                            \
        NN__AVX512_ROW(AROW(2), c20, c21)                                                            \
        NN__AVX512_ROW(AROW(3), c30, c31)                                                            \
        NN__AVX512_ROW(AROW(4), c40, c41)                                                            \
        NN__AVX512_ROW(AROW(5), c50, c51)                                                            \
        NN__AVX512_ROW(AROW(6), c60, c61)                                                            \
        NN__AVX512_ROW(AROW(7), c70, c71)                                                            \
        NN__AVX512_ROW(AROW(8), c80, c81)                                                            \
        NN__AVX512_ROW(AROW(9), c90, c91)                                                            \
        NN__AVX512_ROW(AROW(10), cA0, cA1)                                                           \
        NN__AVX512_ROW(AROW(11), cB0, cB1)                                                           \
        a += (ASTEP);                                                                                \
        b += 32;                                                                                     \
    }                                                                                                \
    va = _mm512_set1_ps(alpha);                                                                      \
    vb = _mm512_set1_ps(beta);                                                                       \
    NN__AVX512_STORE(0, c00, c01)                                                                    \
    NN__AVX512_STORE(1, c10, c11)                                                                    \
    NN__AVX512_STORE(2, c20, c21)                                                                    \
    NN__AVX512_STORE(3, c30, c31)                                                                    \
    NN__AVX512_STORE(4, c40, c41)                                                                    \
    NN__AVX512_STORE(5, c50, c51)                                                                    \
    NN__AVX512_STORE(6, c60, c61)                                                                    \
    NN__AVX512_STORE(7, c70, c71)                                                                    \
    NN__AVX512_STORE(8, c80, c81)                                                                    \
    NN__AVX512_STORE(9, c90, c91)                                                                    \
    NN__AVX512_STORE(10, cA0, cA1)                                                                   \
    NN__AVX512_STORE(11, cB0, cB1)

#define NN__AVX512_ROW(AI, X0, X1)              \
    av = _mm512_set1_ps(AI);                    \
    X0 = _mm512_fmadd_ps(av, b0, X0);           \
    X1 = _mm512_fmadd_ps(av, b1, X1);
#define NN__AVX512_STORE(R, X0, X1)                                                                  \
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
/* B's k step from the packed panel, which streams from L2 (a_l1): fetched 8 k steps ahead */
#define NN__AVX512_BPK                                       \
    b0 = _mm512_load_ps(b);                                  \
    b1 = _mm512_load_ps(b + 16);                             \
    _mm_prefetch((const char *)(b + 256), _MM_HINT_T0);      \
    _mm_prefetch((const char *)(b + 256 + 16), _MM_HINT_T0);
/* B's k step from B [K,N] itself (rows ldb apart), stored into the packed panel at b as it goes
   (nn__gemm_ukr_avx512_pb); the row 8 k steps ahead fetched, its 128 bytes on up to 3 lines */
#define NN__AVX512_BSRC                                                    \
    b0 = _mm512_loadu_ps(bs);                                              \
    b1 = _mm512_loadu_ps(bs + 16);                                         \
    _mm512_store_ps((float *)b, b0);                                       \
    _mm512_store_ps((float *)b + 16, b1);                                  \
    _mm_prefetch((const char *)(bs + 8 * (size_t)ldb), _MM_HINT_T0);      \
    _mm_prefetch((const char *)(bs + 8 * (size_t)ldb + 16), _MM_HINT_T0); \
    _mm_prefetch((const char *)(bs + 8 * (size_t)ldb + 31), _MM_HINT_T0); \
    bs += ldb;
#define NN__AVX512_APK(I) a[I]
#define NN__AVX512_ARS(I) a[(size_t)(I) * rs]
__attribute__((target("avx512f"))) static void
nn__gemm_ukr_avx512(int kc, const float *a, const float *b, float *c, int ldc, float alpha,
                    float beta) {
    NN__AVX512_UKR_BODY(NN__AVX512_APK, 12, NN__AVX512_BPK)
}
/* The same tile with op(B) = B [K,N] read from B (bs, rows ldb apart) and packed into the
   64-byte aligned panel b as the k steps go: the first A panel of a block packs its B panels
   while it multiplies, where a separate pass over B (nn__gemm_pack_b_avx2) cost 3-6% of
   SGEMM 1024. The same FMAs in the same order, so the same bits. */
__attribute__((target("avx512f"))) static void
nn__gemm_ukr_avx512_pb(int kc, const float *a, size_t rs, size_t cs, const float *bs, int ldb, float *b, float *c,
                       int ldc, float alpha, float beta) {
    if (rs == 1) { /* a packed A panel (cs 12) */
        NN__AVX512_UKR_BODY(NN__AVX512_APK, cs, NN__AVX512_BSRC)
    } else { /* A [M,K]'s rows read in place */
        NN__AVX512_UKR_BODY(NN__AVX512_ARS, 1, NN__AVX512_BSRC)
    }
}
/* A read in place: rows rs apart, k steps cs apart (the caller makes sure all 12 rows
   exist) */
__attribute__((target("avx512f"))) static void
nn__gemm_ukr_avx512_s(int kc, const float *a, size_t rs, size_t cs, const float *b, float *c, int ldc,
                      float alpha, float beta) {
    if (rs == 1) {
        NN__AVX512_UKR_BODY(NN__AVX512_APK, cs, NN__AVX512_BPK)
    } else {
        NN__AVX512_UKR_BODY(NN__AVX512_ARS, 1, NN__AVX512_BPK)
    }
}
/* 8 x 32 from 8-row packed panels (a += 8 per k): per element the 12-row kernel's FMAs and
   store, so the same bits; for products whose M is a multiple of 8 but not of 12 (Winograd's
   32 or 64 channels: 12 rows pad them to 36 or 72) */
__attribute__((target("avx512f"))) static void
nn__gemm_ukr_avx512_8(int kc, const float *a, const float *b, float *c, int ldc, float alpha, float beta) {
    __m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps();
    __m512 c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps();
    __m512 c20 = _mm512_setzero_ps(), c21 = _mm512_setzero_ps();
    __m512 c30 = _mm512_setzero_ps(), c31 = _mm512_setzero_ps();
    __m512 c40 = _mm512_setzero_ps(), c41 = _mm512_setzero_ps();
    __m512 c50 = _mm512_setzero_ps(), c51 = _mm512_setzero_ps();
    __m512 c60 = _mm512_setzero_ps(), c61 = _mm512_setzero_ps();
    __m512 c70 = _mm512_setzero_ps(), c71 = _mm512_setzero_ps();
    __m512 b0, b1, av, va, vb;
    int k;
    for (k = 0; k < 8; k++) {
        _mm_prefetch((const char *)(c + (size_t)k * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + (size_t)k * ldc + 31), _MM_HINT_T0);
    }
    for (k = 0; k < kc; k++) {
        b0 = _mm512_load_ps(b);
        b1 = _mm512_load_ps(b + 16);
        _mm_prefetch((const char *)(b + 256), _MM_HINT_T0);
        _mm_prefetch((const char *)(b + 256 + 16), _MM_HINT_T0);
        NN__AVX512_ROW(a[0], c00, c01)
        NN__AVX512_ROW(a[1], c10, c11)
        NN__AVX512_ROW(a[2], c20, c21)
        NN__AVX512_ROW(a[3], c30, c31)
        NN__AVX512_ROW(a[4], c40, c41)
        NN__AVX512_ROW(a[5], c50, c51)
        NN__AVX512_ROW(a[6], c60, c61)
        NN__AVX512_ROW(a[7], c70, c71)
        a += 8;
        b += 32;
    }
    va = _mm512_set1_ps(alpha);
    vb = _mm512_set1_ps(beta);
    NN__AVX512_STORE(0, c00, c01)
    NN__AVX512_STORE(1, c10, c11)
    NN__AVX512_STORE(2, c20, c21)
    NN__AVX512_STORE(3, c30, c31)
    NN__AVX512_STORE(4, c40, c41)
    NN__AVX512_STORE(5, c50, c51)
    NN__AVX512_STORE(6, c60, c61)
    NN__AVX512_STORE(7, c70, c71)
}
#undef NN__AVX512_ROW
#undef NN__AVX512_STORE
#undef NN__AVX512_APK
#undef NN__AVX512_ARS
#undef NN__AVX512_BPK
#undef NN__AVX512_BSRC
#undef NN__AVX512_UKR_BODY
#endif /* NN__GEMM_X86 */

/* ---- NEON kernel (8 x 8, aarch64) -------------------------------------- */
#if NN__GEMM_NEON
static void nn__gemm_ukr_neon(int kc, const float *a, const float *b, float *c, int ldc,
                              float alpha, float beta) {
    float32x4_t acc[8][2];
    int i, k;
    for (i = 0; i < 8; i++) {
        acc[i][0] = vdupq_n_f32(0.0f);
        acc[i][1] = vdupq_n_f32(0.0f);
    }
    for (k = 0; k < kc; k++) {
        float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4);
        acc[0][0] = vfmaq_laneq_f32(acc[0][0], b0, a0, 0);
        acc[0][1] = vfmaq_laneq_f32(acc[0][1], b1, a0, 0);
        acc[1][0] = vfmaq_laneq_f32(acc[1][0], b0, a0, 1);
        acc[1][1] = vfmaq_laneq_f32(acc[1][1], b1, a0, 1);
        acc[2][0] = vfmaq_laneq_f32(acc[2][0], b0, a0, 2);
        acc[2][1] = vfmaq_laneq_f32(acc[2][1], b1, a0, 2);
        acc[3][0] = vfmaq_laneq_f32(acc[3][0], b0, a0, 3);
        acc[3][1] = vfmaq_laneq_f32(acc[3][1], b1, a0, 3);
        acc[4][0] = vfmaq_laneq_f32(acc[4][0], b0, a1, 0);
        acc[4][1] = vfmaq_laneq_f32(acc[4][1], b1, a1, 0);
        acc[5][0] = vfmaq_laneq_f32(acc[5][0], b0, a1, 1);
        acc[5][1] = vfmaq_laneq_f32(acc[5][1], b1, a1, 1);
        acc[6][0] = vfmaq_laneq_f32(acc[6][0], b0, a1, 2);
        acc[6][1] = vfmaq_laneq_f32(acc[6][1], b1, a1, 2);
        acc[7][0] = vfmaq_laneq_f32(acc[7][0], b0, a1, 3);
        acc[7][1] = vfmaq_laneq_f32(acc[7][1], b1, a1, 3);
        a += 8;
        b += 8;
    }
    for (i = 0; i < 8; i++) {
        float *cr = c + (size_t)i * ldc;
        float32x4_t r0 = vmulq_n_f32(acc[i][0], alpha), r1 = vmulq_n_f32(acc[i][1], alpha);
        if (beta != 0.0f) {
            r0 = vfmaq_n_f32(r0, vld1q_f32(cr), beta);
            r1 = vfmaq_n_f32(r1, vld1q_f32(cr + 4), beta);
        }
        vst1q_f32(cr, r0);
        vst1q_f32(cr + 4, r1);
    }
}
#endif /* NN__GEMM_NEON */

/* ---- packing ----------------------------------------------------------- */

/* Pack op(A)[i0:i0+mc, p0:p0+kc] into ceil(mc/mr) panels of [kc][mr]
   (panel-major, then k, then row); rows past mc are zero. */
static void nn__gemm_pack_a(int transA, const float *A, int lda, int i0, int mc, int p0, int kc,
                            int mr, float *dst) {
    int ir, r, k;
    for (ir = 0; ir < mc; ir += mr) {
        int m = mc - ir < mr ? mc - ir : mr;
        if (!transA) {
            /* A is [M,K]: gather one element from each of m rows per k. */
            const float *rows[NN__GEMM_MAX_MR] = {0}; /* all set below; the init quiets -O3 -Wmaybe-uninitialized */
            for (r = 0; r < m; r++) rows[r] = A + (size_t)(i0 + ir + r) * lda + p0;
            if (m == mr) {
                for (k = 0; k < kc; k++)
                    for (r = 0; r < mr; r++) dst[(size_t)k * mr + r] = rows[r][k];
            } else {
                for (k = 0; k < kc; k++) {
                    for (r = 0; r < m; r++) dst[(size_t)k * mr + r] = rows[r][k];
                    for (; r < mr; r++) dst[(size_t)k * mr + r] = 0.0f;
                }
            }
        } else {
            /* A is [K,M]: the m values for one k are contiguous. */
            const float *src = A + (size_t)p0 * lda + i0 + ir;
            for (k = 0; k < kc; k++) {
                const float *s = src + (size_t)k * lda;
                float *d = dst + (size_t)k * mr;
                for (r = 0; r < m; r++) d[r] = s[r];
                for (; r < mr; r++) d[r] = 0.0f;
            }
        }
        dst += (size_t)mr * kc;
    }
}

/* Pack op(B)[p0:p0+kc, j0:j0+nc] into ceil(nc/nr) panels of [kc][nr];
   columns past nc are zero. */
static void nn__gemm_pack_b(int transB, const float *B, int ldb, int p0, int kc, int j0, int nc,
                            int nr, float *dst) {
    int jr, c, k;
    for (jr = 0; jr < nc; jr += nr) {
        int n = nc - jr < nr ? nc - jr : nr;
        if (!transB) {
            /* B is [K,N]: the n values for one k are contiguous. */
            const float *src = B + (size_t)p0 * ldb + j0 + jr;
            for (k = 0; k < kc; k++) {
                const float *s = src + (size_t)k * ldb;
                float *d = dst + (size_t)k * nr;
                if (n == nr)
                    memcpy(d, s, sizeof(float) * (size_t)nr);
                else {
                    for (c = 0; c < n; c++) d[c] = s[c];
                    for (; c < nr; c++) d[c] = 0.0f;
                }
            }
        } else {
            /* B is [N,K]: walk each of the n rows contiguously, scatter with
               stride nr (a transpose). */
            for (c = 0; c < n; c++) {
                const float *s = B + (size_t)(j0 + jr + c) * ldb + p0;
                for (k = 0; k < kc; k++) dst[(size_t)k * nr + c] = s[k];
            }
            for (; c < nr; c++)
                for (k = 0; k < kc; k++) dst[(size_t)k * nr + c] = 0.0f;
        }
        dst += (size_t)nr * kc;
    }
}

#if NN__GEMM_X86
/* AVX2 packing for the 6 x 16 kernel.  The two layouts that need a
   transpose -- op(A) from A [M,K] and op(B) from B [N,K] -- are done in 8x8
   register blocks (8 k values of 8 rows at a time); edges and the k tail
   use the generic code.  Plain copies use 8-wide moves instead of memcpy
   (a libc call per 64 bytes costs more than the copy). */

#define NN__TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7)                              \
    {                                                                               \
        __m256 t0_ = _mm256_unpacklo_ps(r0, r1), t1_ = _mm256_unpackhi_ps(r0, r1); \
        __m256 t2_ = _mm256_unpacklo_ps(r2, r3), t3_ = _mm256_unpackhi_ps(r2, r3); \
        __m256 t4_ = _mm256_unpacklo_ps(r4, r5), t5_ = _mm256_unpackhi_ps(r4, r5); \
        __m256 t6_ = _mm256_unpacklo_ps(r6, r7), t7_ = _mm256_unpackhi_ps(r6, r7); \
        __m256 s0_ = _mm256_shuffle_ps(t0_, t2_, 0x44), s1_ = _mm256_shuffle_ps(t0_, t2_, 0xEE); \
        __m256 s2_ = _mm256_shuffle_ps(t1_, t3_, 0x44), s3_ = _mm256_shuffle_ps(t1_, t3_, 0xEE); \
        __m256 s4_ = _mm256_shuffle_ps(t4_, t6_, 0x44), s5_ = _mm256_shuffle_ps(t4_, t6_, 0xEE); \
        __m256 s6_ = _mm256_shuffle_ps(t5_, t7_, 0x44), s7_ = _mm256_shuffle_ps(t5_, t7_, 0xEE); \
        r0 = _mm256_permute2f128_ps(s0_, s4_, 0x20);                                \
        r1 = _mm256_permute2f128_ps(s1_, s5_, 0x20);                                \
        r2 = _mm256_permute2f128_ps(s2_, s6_, 0x20);                                \
        r3 = _mm256_permute2f128_ps(s3_, s7_, 0x20);                                \
        r4 = _mm256_permute2f128_ps(s0_, s4_, 0x31);                                \
        r5 = _mm256_permute2f128_ps(s1_, s5_, 0x31);                                \
        r6 = _mm256_permute2f128_ps(s2_, s6_, 0x31);                                \
        r7 = _mm256_permute2f128_ps(s3_, s7_, 0x31);                                \
    }

/* Store the first 6 lanes of v (an A panel row is 6 floats, 24 bytes). */
#define NN__STORE6(d, v)                                                            \
    {                                                                               \
        _mm_storeu_ps((d), _mm256_castps256_ps128(v));                              \
        _mm_storel_pi((__m64 *)(void *)((d) + 4), _mm256_extractf128_ps((v), 1));   \
    }

/* a row of zeros for the rows past a matrix's end in a packed panel */
static const float nn__gemm_zeros[NN__GEMM_MAX_KC] = {0.0f};

__attribute__((target("avx2,fma"))) static void
nn__gemm_pack_a_avx2(int transA, const float *A, int lda, int i0, int mc, int p0, int kc, int mr,
                     float *dst) {
    int ir, k;
    if (transA && (mr == 12 || mr == 6)) {
        /* A [K,M]: a panel's mr values for one k are contiguous: 8 + 4 (or 4 + 2) moves */
        for (ir = 0; ir + mr <= mc; ir += mr) {
            const float *src = A + (size_t)p0 * lda + i0 + ir;
            float *d = dst;
            if (mr == 12)
                for (k = 0; k < kc; k++, d += 12) {
                    const float *q = src + (size_t)k * lda;
                    _mm256_storeu_ps(d, _mm256_loadu_ps(q));
                    _mm_storeu_ps(d + 8, _mm_loadu_ps(q + 8));
                }
            else
                for (k = 0; k < kc; k++, d += 6) {
                    const float *q = src + (size_t)k * lda;
                    _mm_storeu_ps(d, _mm_loadu_ps(q));
                    d[4] = q[4];
                    d[5] = q[5];
                }
            dst += (size_t)mr * kc;
        }
        if (ir < mc) nn__gemm_pack_a(transA, A, lda, i0 + ir, mc - ir, p0, kc, mr, dst);
        return;
    }
    if (!transA && mr == 12 && kc <= NN__GEMM_MAX_KC) {
        /* the AVX-512 kernel's panels (12 rows): rows 0..7 in an 8 x 8 transpose per 8 k,
           rows 8..11 in a 4 x 8 one (two 8 x 4 halves: k 0..3 low, 4..7 high); a last panel
           of fewer rows reads zeros for the rest (a scalar loop here cost 1.6% of the MLP's
           step on the CPU backend: its 128 rows end in a panel of 8) */
        for (ir = 0; ir < mc; ir += 12) {
            const float *rp[12];
            float *d = dst;
            int r;
            for (r = 0; r < 12; r++) rp[r] = ir + r < mc ? A + (size_t)(i0 + ir + r) * lda + p0 : nn__gemm_zeros;
            for (k = 0; k + 8 <= kc; k += 8) {
                __m256 x0 = _mm256_loadu_ps(rp[0] + k), x1 = _mm256_loadu_ps(rp[1] + k);
                __m256 x2 = _mm256_loadu_ps(rp[2] + k), x3 = _mm256_loadu_ps(rp[3] + k);
                __m256 x4 = _mm256_loadu_ps(rp[4] + k), x5 = _mm256_loadu_ps(rp[5] + k);
                __m256 x6 = _mm256_loadu_ps(rp[6] + k), x7 = _mm256_loadu_ps(rp[7] + k);
                __m256 y0 = _mm256_loadu_ps(rp[8] + k), y1 = _mm256_loadu_ps(rp[9] + k);
                __m256 y2 = _mm256_loadu_ps(rp[10] + k), y3 = _mm256_loadu_ps(rp[11] + k);
                __m256 t0 = _mm256_unpacklo_ps(y0, y1), t1 = _mm256_unpackhi_ps(y0, y1);
                __m256 t2 = _mm256_unpacklo_ps(y2, y3), t3 = _mm256_unpackhi_ps(y2, y3);
                __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
                __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
                NN__TRANSPOSE8(x0, x1, x2, x3, x4, x5, x6, x7)
                _mm256_storeu_ps(d, x0);
                _mm_storeu_ps(d + 8, _mm256_castps256_ps128(s0));
                _mm256_storeu_ps(d + 12, x1);
                _mm_storeu_ps(d + 20, _mm256_castps256_ps128(s1));
                _mm256_storeu_ps(d + 24, x2);
                _mm_storeu_ps(d + 32, _mm256_castps256_ps128(s2));
                _mm256_storeu_ps(d + 36, x3);
                _mm_storeu_ps(d + 44, _mm256_castps256_ps128(s3));
                _mm256_storeu_ps(d + 48, x4);
                _mm_storeu_ps(d + 56, _mm256_extractf128_ps(s0, 1));
                _mm256_storeu_ps(d + 60, x5);
                _mm_storeu_ps(d + 68, _mm256_extractf128_ps(s1, 1));
                _mm256_storeu_ps(d + 72, x6);
                _mm_storeu_ps(d + 80, _mm256_extractf128_ps(s2, 1));
                _mm256_storeu_ps(d + 84, x7);
                _mm_storeu_ps(d + 92, _mm256_extractf128_ps(s3, 1));
                d += 96;
            }
            for (; k < kc; k++) {
                for (r = 0; r < 12; r++) d[r] = rp[r][k];
                d += 12;
            }
            dst += (size_t)12 * kc;
        }
        return;
    }
    if (transA || mr != 6) {
        nn__gemm_pack_a(transA, A, lda, i0, mc, p0, kc, mr, dst);
        return;
    }
    for (ir = 0; ir + 6 <= mc; ir += 6) {
        /* A [M,K]: rows i0+ir .. +5, columns p0 .. p0+kc. */
        const float *a0 = A + (size_t)(i0 + ir) * lda + p0;
        const float *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda, *a4 = a3 + lda, *a5 = a4 + lda;
        float *d = dst;
        for (k = 0; k + 8 <= kc; k += 8) {
            __m256 x0 = _mm256_loadu_ps(a0 + k), x1 = _mm256_loadu_ps(a1 + k);
            __m256 x2 = _mm256_loadu_ps(a2 + k), x3 = _mm256_loadu_ps(a3 + k);
            __m256 x4 = _mm256_loadu_ps(a4 + k), x5 = _mm256_loadu_ps(a5 + k);
            __m256 x6 = _mm256_setzero_ps(), x7 = _mm256_setzero_ps();
            NN__TRANSPOSE8(x0, x1, x2, x3, x4, x5, x6, x7)
            NN__STORE6(d, x0)
            NN__STORE6(d + 6, x1)
            NN__STORE6(d + 12, x2)
            NN__STORE6(d + 18, x3)
            NN__STORE6(d + 24, x4)
            NN__STORE6(d + 30, x5)
            NN__STORE6(d + 36, x6)
            NN__STORE6(d + 42, x7)
            d += 48;
        }
        for (; k < kc; k++) {
            d[0] = a0[k];
            d[1] = a1[k];
            d[2] = a2[k];
            d[3] = a3[k];
            d[4] = a4[k];
            d[5] = a5[k];
            d += 6;
        }
        dst += (size_t)6 * kc;
    }
    if (ir < mc) nn__gemm_pack_a(transA, A, lda, i0 + ir, mc - ir, p0, kc, mr, dst);
}

/* op(B) in panels of nr = 16 (the AVX2 kernel) or 32 (the AVX-512 kernel's, packed here
   too: a memcpy call per 128-byte row and a scalar transpose cost 6% of a GPT step) */
__attribute__((target("avx2,fma"))) static void
nn__gemm_pack_b_avx2(int transB, const float *B, int ldb, int p0, int kc, int j0, int nc, int nr,
                     float *dst) {
    int jr, k, h;
    if (nr != 16 && nr != 32) {
        nn__gemm_pack_b(transB, B, ldb, p0, kc, j0, nc, nr, dst);
        return;
    }
    for (jr = 0; jr + nr <= nc; jr += nr) {
        float *d = dst;
        if (!transB) {
            /* B [K,N]: each k row of the panel is nr contiguous floats. */
            const float *s = B + (size_t)p0 * ldb + j0 + jr;
            for (k = 0; k < kc; k++) {
                for (h = 0; h < nr; h += 8) _mm256_store_ps(d + h, _mm256_loadu_ps(s + h));
                s += ldb;
                d += nr;
            }
        } else {
            /* B [N,K]: nr rows (= panel columns) read 8 k at a time and
               transposed in nr / 8 blocks of 8x8. */
            const float *s = B + (size_t)(j0 + jr) * ldb + p0;
            const size_t l = (size_t)ldb;
            const size_t w = (size_t)nr;
            for (k = 0; k + 8 <= kc; k += 8) {
                for (h = 0; h < nr; h += 8) {
                    const float *q = s + (size_t)h * l + k;
                    __m256 x0 = _mm256_loadu_ps(q), x1 = _mm256_loadu_ps(q + l);
                    __m256 x2 = _mm256_loadu_ps(q + 2 * l), x3 = _mm256_loadu_ps(q + 3 * l);
                    __m256 x4 = _mm256_loadu_ps(q + 4 * l), x5 = _mm256_loadu_ps(q + 5 * l);
                    __m256 x6 = _mm256_loadu_ps(q + 6 * l), x7 = _mm256_loadu_ps(q + 7 * l);
                    NN__TRANSPOSE8(x0, x1, x2, x3, x4, x5, x6, x7)
                    _mm256_store_ps(d + h, x0);
                    _mm256_store_ps(d + h + w, x1);
                    _mm256_store_ps(d + h + 2 * w, x2);
                    _mm256_store_ps(d + h + 3 * w, x3);
                    _mm256_store_ps(d + h + 4 * w, x4);
                    _mm256_store_ps(d + h + 5 * w, x5);
                    _mm256_store_ps(d + h + 6 * w, x6);
                    _mm256_store_ps(d + h + 7 * w, x7);
                }
                d += 8 * w;
            }
            for (; k < kc; k++) {
                int c;
                for (c = 0; c < nr; c++) d[c] = s[(size_t)c * l + k];
                d += nr;
            }
        }
        dst += (size_t)nr * kc;
    }
    if (jr < nc) nn__gemm_pack_b(transB, B, ldb, p0, kc, j0 + jr, nc - jr, nr, dst);
}
#undef NN__TRANSPOSE8
#undef NN__STORE6
#endif /* NN__GEMM_X86 */

/* ---- kernel selection -------------------------------------------------- */

/* Which kernel to use; NULL = not chosen yet.  Tests may force one with
   nn__sgemm_force_kernel().  Concurrent first calls race benignly (all pick
   the same kernel); the accesses are atomic where the compiler allows so
   that this is not a data race in the C11 sense (TSan-clean). */
static const nn__gemm_arch *nn__gemm_arch_cur = NULL;
#if defined(__GNUC__)
#define NN__GEMM_ARCH_GET() __atomic_load_n(&nn__gemm_arch_cur, __ATOMIC_ACQUIRE)
#define NN__GEMM_ARCH_SET(x) __atomic_store_n(&nn__gemm_arch_cur, (x), __ATOMIC_RELEASE)
#else
#define NN__GEMM_ARCH_GET() nn__gemm_arch_cur
#define NN__GEMM_ARCH_SET(x) (nn__gemm_arch_cur = (x))
#endif

static const nn__gemm_arch nn__gemm_arch_generic = {nn__gemm_ukr_generic, nn__gemm_pack_a, nn__gemm_pack_b, 4, 8, 128, 256, 2048, "generic", NULL, 0, NULL};
#if NN__GEMM_X86
/* Zen3/Skylake-ish blocking: B panel kc*nr*4 = 16 KB in L1, A block mc*kc*4
   = 144 KB in L2, B block kc*nc*4 <= 4 MB in L3 (BLIS haswell/zen values).
   AVX-512: A panel 12 KB in L1 (a_l1), B block kc*nc*4 = 512 KB in L2. */
static const nn__gemm_arch nn__gemm_arch_avx2 = {nn__gemm_ukr_avx2, nn__gemm_pack_a_avx2, nn__gemm_pack_b_avx2, 6, 16, 144, 256, 4080, "avx2", NULL, 0, NULL};
static const nn__gemm_arch nn__gemm_arch_avx512 = {nn__gemm_ukr_avx512, nn__gemm_pack_a_avx2, nn__gemm_pack_b_avx2, 12, 32, 192, 256, 512, "avx512f", nn__gemm_ukr_avx512_s, 1, nn__gemm_ukr_avx512_pb};
/* The same kernel where L1 holds 48 KiB or more (Zen 5): K blocks of up to 512, an A panel
   of 24 KB, half of them, so C takes half the read-modify-write passes. Measured on a 2-core
   Zen 5 VM (in-process, alternating, medians of 30): SGEMM 1024 +6% and 512 +11% while the
   VM's caches were contended (the state in which 256 fell to 73% of the FMA peak), -1% to
   +3% when they were not; the MLP and the benchmark convolutions unchanged. On 32 KiB L1s
   (Zen 4, Intel) such a panel would leave the B panels too little: 256 there. */
static const nn__gemm_arch nn__gemm_arch_avx512_l1 = {nn__gemm_ukr_avx512, nn__gemm_pack_a_avx2, nn__gemm_pack_b_avx2, 12, 32, 192, 512, 512, "avx512f", nn__gemm_ukr_avx512_s, 1, nn__gemm_ukr_avx512_pb};

/* The L1 data cache's bytes from CPUID's cache descriptors (leaf 4, Intel; 0x8000001D, AMD),
   0 where neither says */
static int nn__gemm_l1d_bytes(void) {
    unsigned leaves[2], a, b, c, d, l, i;
    leaves[0] = 4;
    leaves[1] = 0x8000001Du;
    for (l = 0; l < 2; l++) {
        if ((unsigned)__get_cpuid_max(leaves[l] & 0x80000000u, NULL) < leaves[l]) continue; /* int in clang's cpuid.h */
        for (i = 0; i < 8; i++) {
            if (!__get_cpuid_count(leaves[l], i, &a, &b, &c, &d) || (a & 0x1f) == 0) break;
            if ((a & 0x1f) == 1 && ((a >> 5) & 7) == 1) /* a data cache, level 1 */
                return (int)((((b >> 22) & 0x3ff) + 1) * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) * (c + 1));
        }
    }
    return 0;
}
#endif
#if NN__GEMM_NEON
static const nn__gemm_arch nn__gemm_arch_neon = {nn__gemm_ukr_neon, nn__gemm_pack_a, nn__gemm_pack_b, 8, 8, 128, 256, 4096, "neon", NULL, 0, NULL};
#endif

static const nn__gemm_arch *nn__gemm_pick_arch(void) {
    const nn__gemm_arch *arch = NN__GEMM_ARCH_GET();
    if (arch) return arch;
    arch = &nn__gemm_arch_generic;
#if NN__GEMM_X86
    if (nn__vm_isa() == 2) /* the one CPUID probe of the ISA, src/cpu/simd.c */
        arch = nn__gemm_l1d_bytes() >= 48 * 1024 ? &nn__gemm_arch_avx512_l1 : &nn__gemm_arch_avx512;
    else if (nn__vm_isa() == 1)
        arch = &nn__gemm_arch_avx2;
#endif
#if NN__GEMM_NEON
    arch = &nn__gemm_arch_neon;
#endif
    NN__GEMM_ARCH_SET(arch);
    return arch;
}

/* Test hook: name in {"generic","avx2","avx512f","neon"} or NULL for the
   automatic choice.  Returns the name of the kernel now in use (a kernel the
   CPU or build does not support is refused and the current one kept). */
static NN__MAYBE_UNUSED const char *nn__sgemm_force_kernel(const char *name) {
    if (!name) {
        NN__GEMM_ARCH_SET((const nn__gemm_arch *)NULL);
        return nn__gemm_pick_arch()->name;
    }
    if (!strcmp(name, "generic")) NN__GEMM_ARCH_SET(&nn__gemm_arch_generic);
#if NN__GEMM_X86
    if (!strcmp(name, "avx2") && nn__vm_isa() >= 1) NN__GEMM_ARCH_SET(&nn__gemm_arch_avx2);
    if (!strcmp(name, "avx512f") && nn__vm_isa() == 2)
        NN__GEMM_ARCH_SET(nn__gemm_l1d_bytes() >= 48 * 1024 ? &nn__gemm_arch_avx512_l1 : &nn__gemm_arch_avx512);
#endif
#if NN__GEMM_NEON
    if (!strcmp(name, "neon")) NN__GEMM_ARCH_SET(&nn__gemm_arch_neon);
#endif
    return nn__gemm_pick_arch()->name;
}

/* ---- one thread's block of C ------------------------------------------ */

typedef struct {
    const nn__gemm_arch *arch;
    int transA, transB, M, N, K;
    float alpha, beta;
    const float *A, *B;
    float *C;
    int lda, ldb, ldc;
    int kc;              /* K block actually used (<= arch->kc) */
    int mblk, nblk;      /* rows / cols of C per task (multiples of mr / nr) */
    int tn;              /* tasks along N; task t -> (t / tn, t % tn) */
    int ct;              /* computing C^T: element (i,j) lives at C[j*ldc+i] */
    float *buf;          /* n_tasks slices of buf_floats each */
    size_t buf_floats;
    size_t a_floats;     /* A part of each slice (then B) */
    const float *bpk;    /* or NULL: op(B) packed whole before the product (nn__gemm_pb_pack) */
    int npad;            /* its N rounded up to nr */
    const float *apk;    /* or NULL: op(A) packed whole in pre, per K block all M
                            rows in MR-tall panels (panel of row i at apk + pc * mpad + i * kc) */
    int mpad;            /* its M rounded up to mr */
    float *pre;          /* the memory of apk (mpad * K floats), or NULL */
    int *aflag;          /* or NULL: apk's blocks packed before the tasks; else per K block and
                            MR-row panel, the state of the block starting there
                            packed by the task's first NC block that needs it */
    int direct;          /* full MR-row panels of op(A) read in place (arch->ukr_s), not packed */
    int pb;              /* op(B) = B [K,N] packed by the first A panel's tiles (arch->ukr_pb) */
    const struct nn__gemm_epi *epi; /* or NULL: applied to C's blocks after their last K block */
} nn__gemm_job;

/* An epilogue (nn__sgemm_epi): fn(e, C + i0 * ldc + j0, ldc, i0, m, j0, n) on each block of
   finished rows [i0, i0 + m) x columns [j0, j0 + n) of C, once, while it is in cache (a
   linear layer's bias add, src/ops/matmul.c nn__matmul_bias_ok) */
typedef struct nn__gemm_epi {
    void (*fn)(const struct nn__gemm_epi *e, float *c, size_t ldc, int i0, int m, int j0, int n);
    const float *bias;
} nn__gemm_epi;

/* The valid m x n part of a tile t (row stride nr) into C: alpha t, plus beta C unless
   beta is 0 (the edge tiles of nn__gemm_block and src/cpu/gemm16.c) */
static void nn__gemm_store_tile(float *cp, size_t ldc, const float *t, int nr, int m, int n, float alpha, float beta) {
    int i, j;
    for (i = 0; i < m; i++) {
        float *cr = cp + (size_t)i * ldc;
        const float *tr = t + (size_t)i * nr;
        if (beta == 0.0f)
            for (j = 0; j < n; j++) cr[j] = alpha * tr[j];
        else
            for (j = 0; j < n; j++) cr[j] = alpha * tr[j] + beta * cr[j];
    }
}

static int nn__gemm_direct_ok = 1;
static int nn__gemm_pb_ok = 1; /* 0: op(B) always packed in a pass of its own (tests) */
/* Whether a panel's 12 rows of A, lda floats apart, read in place keep to L1's sets: at most 6
   of their lines in one set of 64 (64-byte lines, 4 KB a way, as in Zen's and Intel's 32 and
   48 KB L1s). Rows 4 KB apart or a multiple of it (lda 1,024 or GPT-2 small's 3,072) put all
   12 in one set and ran 10-25% slower than packed; 512 puts 6 in each of 2, 784 one in each */
static int nn__gemm_direct_lda_ok(int lda) {
    int cnt[64], i, most = 0;
    size_t last = (size_t)-1;
    memset(cnt, 0, sizeof cnt);
    for (i = 0; i < 12; i++) {
        size_t line = (size_t)i * (size_t)lda * sizeof(float) / 64;
        if (line == last) continue; /* rows on one line: one line in the set */
        last = line;
        if (++cnt[line % 64] > most) most = cnt[line % 64];
    }
    return most <= 6;
}
/* That rule where L1 holds 48 KB or more (12 ways: measured there); rows up to 2 KB apart
   elsewhere (an 8-way 32 KB L1 would hold 6 of a panel's lines in a set beside B's) */
static int nn__gemm_direct_lda(const nn__gemm_arch *arch, int lda) {
#if NN__GEMM_X86
    if (arch == &nn__gemm_arch_avx512_l1) return nn__gemm_direct_lda_ok(lda);
#endif
    (void)arch;
    return lda <= 512;
}
static void nn__gemm_block(const nn__gemm_job *J, int m0, int m1, int n0, int n1, float *abuf,
                           float *bbuf) {
    const nn__gemm_arch *arch = J->arch;
    const int mr = arch->mr, nr = arch->nr, K = J->K;
    int jc, pc, ic, to, ti, i, j;
    float tmp[NN__GEMM_MAX_MR * NN__GEMM_MAX_NR];
    /* Balanced MC blocks, so that e.g. 150 rows become 78+72, not 144+6. */
    int nmb = (m1 - m0 + arch->mc - 1) / arch->mc;
    int mc_blk = ((m1 - m0 + nmb - 1) / nmb + mr - 1) / mr * mr;

    for (jc = n0; jc < n1; jc += arch->nc) {
        int nc = n1 - jc < arch->nc ? n1 - jc : arch->nc;
        for (pc = 0; pc < K; pc += J->kc) {
            int kc = K - pc < J->kc ? K - pc : J->kc;
            /* Later K blocks accumulate onto the first one's result. */
            float beta = pc == 0 ? J->beta : 1.0f;
            const float *bblk = J->bpk ? J->bpk + (size_t)pc * J->npad + (size_t)jc * kc : bbuf;
            /* op(B) = B [K,N] packed by the first A panel's tiles as they multiply (arch->ukr_pb,
               that panel packed or read in place), its full B panels; the rest (a last partial
               panel) in a pass of its own */
            const int pb_n = J->pb && !J->bpk && m1 - m0 >= mr ? nc / nr * nr : 0;
            if (!J->bpk && pb_n < nc) arch->pack_b(J->transB, J->B, J->ldb, pc, kc, jc + pb_n, nc - pb_n, nr, bbuf + (size_t)pb_n * kc);
            for (ic = m0; ic < m1; ic += mc_blk) {
                int mc = m1 - ic < mc_blk ? m1 - ic : mc_blk;
                /* direct: only a last partial panel is packed (at abuf) */
                int mfull = J->direct ? mc / mr * mr : 0;
                /* the tiles in arch->a_l1's order: A panels outer (each stays in L1 across
                   the NC block's B panels) or B panels outer */
                const int ntm = (mc + mr - 1) / mr, ntn = (nc + nr - 1) / nr;
                const float *ablk = abuf;
                float *adst = mfull < mc ? abuf : NULL;
                /* op(A) packed once: the block's flag is set once the task's first NC block
                   has packed it (each block is one task's: nn__gemm_pre_plan) */
                int *af = J->aflag ? J->aflag + (size_t)(pc / J->kc) * (size_t)(J->mpad / mr) + ic / mr : NULL;
                if (J->apk) {
                    ablk = J->apk + (size_t)pc * J->mpad + (size_t)ic * kc;
                    adst = af && !*af ? J->pre + (ablk - J->pre) : NULL;
                }
                if (adst) arch->pack_a(J->transA, J->A, J->lda, ic + mfull, mc - mfull, pc, kc, mr, adst);
                if (adst && af) *af = 1;
                for (to = 0; to < (arch->a_l1 ? ntm : ntn); to++) {
                    for (ti = 0; ti < (arch->a_l1 ? ntn : ntm); ti++) {
                        const int ir = (arch->a_l1 ? to : ti) * mr, jr = (arch->a_l1 ? ti : to) * nr;
                        int m = mc - ir < mr ? mc - ir : mr;
                        int n = nc - jr < nr ? nc - jr : nr;
                        const float *bp = bblk + (size_t)jr * kc;
                        const float *ap = ablk + (ir < mfull ? 0 : (size_t)(ir - mfull) * kc);
                        float *cp = J->C + (J->ct ? 0 : (size_t)(ic + ir) * J->ldc + jc + jr);
                        if (ir < mfull) {
                            /* op(A)[ic+ir.., pc..] in place: A [M,K] by rows, A [K,M] by k */
                            const float *as = J->transA ? J->A + (size_t)pc * J->lda + ic + ir
                                                        : J->A + (size_t)(ic + ir) * J->lda + pc;
                            size_t rs = J->transA ? 1 : (size_t)J->lda, cs = J->transA ? (size_t)J->lda : 1;
                            if (n == nr && jr < pb_n && ic == m0 && ir == 0)
                                arch->ukr_pb(kc, as, rs, cs, J->B + (size_t)pc * J->ldb + jc + jr, J->ldb,
                                             bbuf + (size_t)jr * kc, cp, J->ldc, J->alpha, beta);
                            else if (n == nr)
                                arch->ukr_s(kc, as, rs, cs, bp, cp, J->ldc, J->alpha, beta);
                            else {
                                arch->ukr_s(kc, as, rs, cs, bp, tmp, nr, 1.0f, 0.0f);
                                nn__gemm_store_tile(cp, J->ldc, tmp, nr, m, n, J->alpha, beta);
                            }
                        } else if (m == mr && n == nr && !J->ct) {
                            if (jr < pb_n && ic == m0 && ir == 0)
                                arch->ukr_pb(kc, ap, 1, (size_t)mr, J->B + (size_t)pc * J->ldb + jc + jr, J->ldb,
                                             bbuf + (size_t)jr * kc, cp, J->ldc, J->alpha, beta);
                            else
                                arch->ukr(kc, ap, bp, cp, J->ldc, J->alpha, beta);
                        } else {
                            /* Edge tile (or transposed C): full tile into
                               tmp, then copy the valid part. */
                            arch->ukr(kc, ap, bp, tmp, nr, 1.0f, 0.0f);
                            if (!J->ct) {
                                nn__gemm_store_tile(cp, J->ldc, tmp, nr, m, n, J->alpha, beta);
                            } else {
                                /* tmp holds C^T[ic+ir.., jc+jr..]: column j of
                                   tmp is a contiguous piece of row jc+jr+j of C. */
                                for (j = 0; j < n; j++) {
                                    float *cr = J->C + (size_t)(jc + jr + j) * J->ldc + ic + ir;
                                    if (beta == 0.0f)
                                        for (i = 0; i < m; i++) cr[i] = J->alpha * tmp[(size_t)i * nr + j];
                                    else
                                        for (i = 0; i < m; i++)
                                            cr[i] = J->alpha * tmp[(size_t)i * nr + j] + beta * cr[i];
                                }
                            }
                        }
                    }
                }
                if (J->epi && pc + kc >= K) /* the block's rows done: C [ic, ic + mc) x [jc, jc + nc) */
                    J->epi->fn(J->epi, J->C + (size_t)ic * J->ldc + jc, (size_t)J->ldc, ic, mc, jc, nc);
            }
        }
    }
}

static void nn__gemm_task(void *arg, int t, int n_tasks) {
    const nn__gemm_job *J = (const nn__gemm_job *)arg;
    int m0 = (t / J->tn) * J->mblk, n0 = (t % J->tn) * J->nblk;
    int m1 = m0 + J->mblk < J->M ? m0 + J->mblk : J->M;
    int n1 = n0 + J->nblk < J->N ? n0 + J->nblk : J->N;
    float *abuf = J->buf + (size_t)t * J->buf_floats;
    (void)n_tasks;
    if (m0 >= m1 || n0 >= n1) return;
    nn__gemm_block(J, m0, m1, n0, n1, abuf, abuf + J->a_floats);
}

/* ---- fallbacks --------------------------------------------------------- */

/* C = beta * C (K == 0 or alpha == 0); beta == 0 writes exact zeros. */
static void nn__gemm_scale_c(int M, int N, float beta, float *C, int ldc) {
    int i, j;
    for (i = 0; i < M; i++) {
        float *cr = C + (size_t)i * ldc;
        if (beta == 0.0f)
            for (j = 0; j < N; j++) cr[j] = 0.0f;
        else if (beta != 1.0f)
            for (j = 0; j < N; j++) cr[j] *= beta;
    }
}

/* Unpacked path used only when the packing buffers cannot be allocated:
   slow but needs no memory.  Row i of C accumulates alpha*op(A)[i,k] times
   row k of op(B) (contiguous when B is not transposed). */
static void nn__gemm_nopack(int transA, int transB, int M, int N, int K, float alpha,
                            const float *A, int lda, const float *B, int ldb, float beta, float *C,
                            int ldc) {
    int i, j, k;
    nn__gemm_scale_c(M, N, beta, C, ldc);
    for (i = 0; i < M; i++) {
        float *cr = C + (size_t)i * ldc;
        for (k = 0; k < K; k++) {
            float aik = alpha * (transA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]);
            if (!transB) {
                const float *br = B + (size_t)k * ldb;
                for (j = 0; j < N; j++) cr[j] += aik * br[j];
            } else {
                for (j = 0; j < N; j++) cr[j] += aik * B[(size_t)j * ldb + k];
            }
        }
    }
}

/* Bytes of the workspace that nn__gemm_small needs with any kernel: one A panel
   [MR x KC] and one B panel [KC x NR], 64-byte aligned. */
static NN__MAYBE_UNUSED size_t nn__sgemm_small_bytes(void) {
    return sizeof(float) * (((size_t)NN__GEMM_MAX_MR * NN__GEMM_MAX_KC + 15) / 16 * 16 +
                            ((size_t)NN__GEMM_MAX_NR * NN__GEMM_MAX_KC + 15) / 16 * 16) +
           NN__GEMM_ALIGN;
}

/* The job J on one thread, one MR x NR tile at a time (MC = MR, NC = NR), in
   the pool's small workspace (no allocation once the CPU backend has reserved
   it): for when the packing buffers of the blocked path cannot be allocated.
   Every element of C gets the blocked path's arithmetic -- the same K blocks
   in the same order, the same microkernel, and edge tiles (at the ends of M
   and N only, with any blocking whose blocks are multiples of MR and NR)
   through the same copy -- so the result is the same to the bit. 0 when
   there is no such workspace either. */
static int nn__gemm_small(const nn__gemm_job *J, nn__threadpool *pool) {
    nn__gemm_arch small = *J->arch;
    nn__gemm_job S = *J;
    void *raw;
    if (J->kc > NN__GEMM_MAX_KC || J->arch->mr > NN__GEMM_MAX_MR || J->arch->nr > NN__GEMM_MAX_NR) return 0;
    raw = nn__threadpool_workspace(pool, nn__sgemm_small_bytes());
    if (!raw) return 0;
    small.mc = small.mr;
    small.nc = small.nr;
    S.arch = &small;
    S.mblk = (J->M + small.mr - 1) / small.mr * small.mr;
    S.nblk = (J->N + small.nr - 1) / small.nr * small.nr;
    S.tn = 1;
    S.a_floats = ((size_t)small.mr * (size_t)J->kc + 15) / 16 * 16;
    S.buf_floats = S.a_floats + ((size_t)small.nr * (size_t)J->kc + 15) / 16 * 16;
    S.buf = (float *)(void *)((unsigned char *)raw +
                              ((NN__GEMM_ALIGN - ((uintptr_t)raw & (NN__GEMM_ALIGN - 1))) & (NN__GEMM_ALIGN - 1)));
    nn__gemm_task(&S, 0, 1);
    return 1;
}

/* ---- entry point ------------------------------------------------------- */

/* Below this many multiply-adds a pool dispatch costs more than it saves.
   (A variable so tests can force the threaded path on tiny shapes.) */
#ifndef NN_GEMM_MT_MIN_MACS
#define NN_GEMM_MT_MIN_MACS (256 * 1024)
#endif
static double nn__gemm_mt_min_macs = (double)NN_GEMM_MT_MIN_MACS;

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major.
   transA: A is stored [K,M] (lda >= M) instead of [M,K] (lda >= K); likewise
   transB: B stored [N,K] (ldb >= K) instead of [K,N] (ldb >= N).
   beta == 0 ignores C's old contents (NaN-safe).  K == 0 or alpha == 0 gives
   C = beta * C.  pool may be NULL (single-threaded). */
/* A caller's packing memory for single-threaded calls (nn__sgemm_ws): grown as needed,
   freed by the caller with NN_FREE(ws.p). */
typedef struct nn__gemm_ws {
    void *p;
    size_t bytes;
} nn__gemm_ws;

static void *nn__gemm_ws_get(nn__gemm_ws *ws, size_t bytes) {
    if (bytes > ws->bytes) {
        void *w = NN_MALLOC(bytes);
        if (!w) return NULL;
        NN_FREE(ws->p);
        ws->p = w;
        ws->bytes = bytes;
    }
    return ws->p;
}

static void nn__sgemm_run(nn__threadpool *pool, nn__gemm_ws *ws, int transA, int transB, int M, int N, int K,
                          float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                          int ldc);

static NN__MAYBE_UNUSED void nn__sgemm(nn__threadpool *pool, int transA, int transB, int M, int N, int K,
                                       float alpha, const float *A, int lda, const float *B,
                                       int ldb, float beta, float *C, int ldc) {
    nn__sgemm_run(pool, NULL, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* The same on the calling thread alone, packing in ws (so that many small products, as a
   batch threaded over its matrices, allocate once per thread, not once per product). */
static NN__MAYBE_UNUSED void nn__sgemm_ws(nn__gemm_ws *ws, int transA, int transB, int M, int N, int K, float alpha,
                                          const float *A, int lda, const float *B, int ldb, float beta, float *C,
                                          int ldc) {
    nn__sgemm_run(NULL, ws, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* Fills J for C[M,N] = alpha op(A) op(B) + beta C on up to n_thr threads (M, N, K > 0,
   alpha != 0): the arch, the C^T choice, the K block, the thread grid. Returns the bytes
   of packing memory its tasks need (J.buf_floats each, 64-byte aligned) and the task
   count in *n_tasks. nn__sgemm_run and nn__sgemm_mem_bytes share it, so a caller that
   sizes memory at plan time gets the bytes the product takes. */
static size_t nn__gemm_prepare(nn__gemm_job *Jp, int n_thr, int transA, int transB, int M, int N, int K, float alpha,
                               const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc,
                               int *n_tasks_out) {
    const nn__gemm_arch *arch;
    nn__gemm_job J;
    int mr, nr, mtiles, ntiles, tm, tn, best_tm, best_tn, nkb, n_tasks;
    double best_cost;
    size_t mc_alloc, nc_alloc;

    arch = nn__gemm_pick_arch();
    mr = arch->mr;
    nr = arch->nr;

    memset(&J, 0, sizeof(J));
    J.arch = arch;
    J.M = M;
    J.N = N;
    J.K = K;
    J.alpha = alpha;
    J.beta = beta;
    J.C = C;
    J.ldc = ldc;
    J.transA = transA;
    J.transB = transB;
    J.A = A;
    J.B = B;
    J.lda = lda;
    J.ldb = ldb;
    /* Narrow C (e.g. N = 10 logits with nr = 16) wastes most of every
       register tile; computing C^T = op(B)^T op(A)^T instead puts the small
       dimension on the mr side.  Swap when that fills the tiles better. */
    {
        double eff = (double)M / ((M + mr - 1) / mr * mr) * N / ((N + nr - 1) / nr * nr);
        double eff_t = (double)N / ((N + mr - 1) / mr * mr) * M / ((M + nr - 1) / nr * nr);
        if (eff_t > eff * 1.15) {
            J.ct = 1;
            J.M = N;
            J.N = M;
            J.transA = !transB;
            J.transB = !transA;
            J.A = B;
            J.B = A;
            J.lda = ldb;
            J.ldb = lda;
        }
    }
    M = J.M;
    N = J.N;
    /* op(A) from A [M,K] read in place: its 12 rows stream beside the B panel, where
       packing them took 7% of a tiny GPT step. (A stored [K,M] packs: read in place, its
       k steps a row of A apart, it ran 10-25% slower than packed; so did rows whose lines
       share L1's sets, nn__gemm_direct_lda. Rows up to 2 KB apart only, before: lda 784
       to 3,000 in place on a 2-core Zen 5, in-process A/B, 128x256x784 NT 1.05x and NN
       1.07x, 128x256x1536 and x3000 NT 1.06x and 1.08x, 1024x1024x1000 1.03x.) */
    J.direct = arch->ukr_s != NULL && !J.ct && !J.transA && nn__gemm_direct_lda(arch, J.lda) && nn__gemm_direct_ok;
    /* B [K,N] packed while the first A panel multiplies: full tiles (not C^T, whose edges go
       through tmp); a_l1, so that panel's tiles come first */
    J.pb = arch->ukr_pb != NULL && arch->a_l1 && !J.ct && !J.transB && nn__gemm_pb_ok;
    /* Balanced K blocks (784 -> 4 x 196, not 3 x 256 + 16), rounded to 8. */
    nkb = (K + arch->kc - 1) / arch->kc;
    J.kc = ((K + nkb - 1) / nkb + 7) / 8 * 8;
    if (J.kc > K) J.kc = K;

    /* Thread grid: pick tm x tn <= threads minimising the per-thread cost
       = compute on its (tile-rounded) block + weighted packing of its A rows
       (repacked per NC block) and B columns.  Small problems stay serial. */
    mtiles = (M + mr - 1) / mr;
    ntiles = (N + nr - 1) / nr;
    if ((double)M * N * K < nn__gemm_mt_min_macs) n_thr = 1;
    best_tm = 1;
    best_tn = 1;
    best_cost = -1.0;
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
    tm = best_tm;
    tn = best_tn;
    J.mblk = (mtiles + tm - 1) / tm * mr;
    J.nblk = (ntiles + tn - 1) / tn * nr;
    J.tn = tn;
    n_tasks = tm * tn;

    /* Per-task buffers: A block [mc x kc] and B block [kc x nc], sized to
       what the task can actually use; each slice 64-byte aligned. */
    mc_alloc = (size_t)(J.mblk < arch->mc ? J.mblk : arch->mc);
    nc_alloc = (size_t)(J.nblk < arch->nc ? J.nblk : arch->nc);
    J.a_floats = (mc_alloc * (size_t)J.kc + 15) / 16 * 16;
    J.buf_floats = J.a_floats + (nc_alloc * (size_t)J.kc + 15) / 16 * 16;
    *Jp = J;
    *n_tasks_out = n_tasks;
    return sizeof(float) * J.buf_floats * (size_t)n_tasks + NN__GEMM_ALIGN;
}

/* raw rounded up to the alignment by pointer arithmetic (no int->pointer cast) */
static float *nn__gemm_align(void *raw) {
    return (float *)(void *)((unsigned char *)raw +
                             ((NN__GEMM_ALIGN - ((uintptr_t)raw & (NN__GEMM_ALIGN - 1))) & (NN__GEMM_ALIGN - 1)));
}

static void nn__sgemm_run_epi(nn__threadpool *pool, nn__gemm_ws *ws, int transA, int transB, int M, int N, int K,
                              float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                              int ldc, const nn__gemm_epi *epi);
static void nn__sgemm_run(nn__threadpool *pool, nn__gemm_ws *ws, int transA, int transB, int M, int N, int K,
                          float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                          int ldc) {
    nn__sgemm_run_epi(pool, ws, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

/* nn__sgemm with epilogue epi (NULL: none) applied to every element of C once, after its
   product: in nn__gemm_block's blocks of rows as they finish, or over the whole C at the end
   where that does not run (C^T, the fallbacks). */
static NN__MAYBE_UNUSED void nn__sgemm_epi(nn__threadpool *pool, int transA, int transB, int M, int N, int K,
                                           float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                                           float *C, int ldc, const nn__gemm_epi *epi) {
    nn__sgemm_run_epi(pool, NULL, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, epi);
}

/* op(A) packed once (nn__gemm_pre_plan) on the pool's products of at least this many
   multiply-adds (smaller products against packing per NC block not measured) and at most
   NN__GEMM_PRE_MAX bytes of packed operand; nn__gemm_pre_ok = 0 (tests) packs per NC block
   always. */
#ifndef NN_GEMM_PRE_MIN_MACS
#define NN_GEMM_PRE_MIN_MACS (4 * 1024 * 1024)
#endif
#define NN__GEMM_PRE_MAX ((size_t)64 << 20)
static int nn__gemm_pre_ok = 1;

/* the flags of op(A) packed once: per K block, one per MR-row panel of apk */
static size_t nn__gemm_n_flags(const nn__gemm_job *J) {
    size_t nkb = (size_t)((J->K + J->kc - 1) / J->kc);
    return nkb * (J->apk ? (size_t)(J->mpad / J->arch->mr) : 0);
}

/* op(A) to pack once (sets J->apk to a non-NULL marker, J->mpad) where a task has several NC
   blocks, each of which would pack its rows again (not read in place), and the tasks split M
   only, so that no two tasks share a panel. Blocks that several tasks need are packed by each:
   the tasks reach them together, so one packing while the others waited saved no time, and
   reading another core's panels cost more. On a 2-core Zen 5, 5 interleaved rounds, GFLOP/s
   shared -> per task: 128x256x784 208 -> 275, 784x256x128 355 -> 423, 256x768x768 309 -> 345,
   1024^3 331 -> 343 in a slow state of the machine; 0-4% lower, within its noise, in a fast
   one (BENCHMARKS.md, "SGEMM: operands shared between cores"). Returns the floats of the
   packed operand and its flags (0: none). */
static size_t nn__gemm_pre_plan(nn__gemm_job *J) {
    const nn__gemm_arch *arch = J->arch;
    size_t fa = 0;
    if (!nn__gemm_pre_ok || (double)J->M * J->N * J->K < (double)NN_GEMM_PRE_MIN_MACS) return 0;
    J->mpad = (J->M + arch->mr - 1) / arch->mr * arch->mr;
    if (!J->direct && J->tn == 1 && (J->nblk + arch->nc - 1) / arch->nc > 1) fa = (size_t)J->mpad * (size_t)J->K;
    if (!fa || sizeof(float) * fa > NN__GEMM_PRE_MAX) return 0;
    J->apk = J->C; /* a marker until the memory is known */
    /* then the blocks' flags, as many floats as hold them */
    return (fa + 15) / 16 * 16 + (nn__gemm_n_flags(J) * sizeof(int) + 63) / 64 * 16;
}

static void nn__sgemm_run_epi(nn__threadpool *pool, nn__gemm_ws *ws, int transA, int transB, int M, int N, int K,
                              float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                              int ldc, const nn__gemm_epi *epi) {
    nn__gemm_job J;
    int n_tasks, i;
    void *raw;
    size_t ws_bytes, pre_floats = 0;
    int owned;

    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.0f) {
        nn__gemm_scale_c(M, N, beta, C, ldc);
        if (epi) epi->fn(epi, C, (size_t)ldc, 0, M, 0, N);
        return;
    }
    ws_bytes = nn__gemm_prepare(&J, nn__threadpool_size(pool), transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C,
                                ldc, &n_tasks);
    /* the pool's workspace when there is one: a training step then allocates nothing */
    if (pool && !ws) pre_floats = nn__gemm_pre_plan(&J);
    raw = ws ? nn__gemm_ws_get(ws, ws_bytes) : nn__threadpool_workspace(pool, ws_bytes + sizeof(float) * pre_floats);
    if (!raw && pre_floats) { /* without the operands packed once */
        pre_floats = 0;
        J.apk = NULL;
        raw = nn__threadpool_workspace(pool, ws_bytes);
    }
    owned = raw == NULL && !ws;
    if (owned) raw = NN_MALLOC(ws_bytes);
    J.epi = J.ct ? NULL : epi;
    if (!raw) {
        if (!nn__gemm_small(&J, pool)) {
            nn__gemm_nopack(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            J.epi = NULL;
        }
        if (epi && !J.epi) epi->fn(epi, C, (size_t)ldc, 0, M, 0, N);
        return;
    }
    J.buf = nn__gemm_align(raw);
    if (pre_floats) {
        /* the packed operand, then its flags: all 0 (nothing packed yet) */
        size_t fa = (size_t)J.mpad * (size_t)J.K;
        int *flags = (int *)(void *)(J.buf + (fa + 15) / 16 * 16);
        memset(flags, 0, nn__gemm_n_flags(&J) * sizeof(int));
        J.pre = J.buf;
        J.buf += pre_floats;
        J.apk = J.pre;
        J.aflag = flags;
    }

    if (n_tasks > 1)
        nn__threadpool_run(pool, nn__gemm_task, &J, n_tasks);
    else
        for (i = 0; i < n_tasks; i++) nn__gemm_task(&J, i, n_tasks);
    if (owned) NN_FREE(raw);
    if (epi && !J.epi) epi->fn(epi, C, (size_t)ldc, 0, M, 0, N);
}

/* The bytes nn__sgemm_mem needs for this product (0 when it packs nothing). */
static NN__MAYBE_UNUSED size_t nn__sgemm_mem_bytes(int transA, int transB, int M, int N, int K) {
    nn__gemm_job J;
    int n_tasks;
    if (M <= 0 || N <= 0 || K <= 0) return 0;
    return nn__gemm_prepare(&J, 1, transA, transB, M, N, K, 1.0f, NULL, 1, NULL, 1, 0.0f, NULL, 1, &n_tasks);
}

/* nn__sgemm_ws on the caller's memory (mem, bytes from nn__sgemm_mem_bytes or more): no
   allocation, the same bits. 0 when bytes is short (nothing done). */
static NN__MAYBE_UNUSED int nn__sgemm_mem(void *mem, size_t bytes, int transA, int transB, int M, int N, int K,
                                          float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                                          float *C, int ldc) {
    nn__gemm_job J;
    int n_tasks;
    if (M <= 0 || N <= 0) return 1;
    if (K <= 0 || alpha == 0.0f) {
        nn__gemm_scale_c(M, N, beta, C, ldc);
        return 1;
    }
    if (nn__gemm_prepare(&J, 1, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, &n_tasks) > bytes ||
        !mem)
        return 0;
    J.buf = nn__gemm_align(mem);
    nn__gemm_task(&J, 0, 1);
    return 1;
}

/* ---- a B operand packed once for many products ------------------------ */

/* op(B) [K, N] packed whole, for many products with it on one thread (nn__sgemm_pb): per
   K block (the kc nn__sgemm_run picks for this K), all N columns in NR-wide panels, as
   nn__gemm_block packs them block by block. A recurrent layer's W_hh, used by every time
   step. The memory is the caller's (nn__gemm_pb_bytes), sized when a graph is planned. */
typedef struct {
    const nn__gemm_arch *arch;
    int K, N, kc, npad;
    float *p; /* 64-byte aligned, in the caller's memory */
} nn__gemm_pb;

/* pb's geometry for op(B) [K, N] (no memory); returns the bytes nn__gemm_pb_pack needs */
static size_t nn__gemm_pb_geom(nn__gemm_pb *pb, int K, int N) {
    const nn__gemm_arch *arch = nn__gemm_pick_arch();
    int nkb = K > 0 ? (K + arch->kc - 1) / arch->kc : 1;
    pb->arch = arch;
    pb->K = K;
    pb->N = N;
    pb->kc = K > 0 ? ((K + nkb - 1) / nkb + 7) / 8 * 8 : 0;
    if (pb->kc > K) pb->kc = K;
    pb->npad = (N + arch->nr - 1) / arch->nr * arch->nr;
    pb->p = NULL;
    return K > 0 && N > 0 ? sizeof(float) * (size_t)K * (size_t)pb->npad + NN__GEMM_ALIGN : 0;
}
static NN__MAYBE_UNUSED size_t nn__gemm_pb_bytes(int K, int N) {
    nn__gemm_pb pb;
    return nn__gemm_pb_geom(&pb, K, N);
}

/* Packs op(B) into mem (nn__gemm_pb_bytes(K, N) bytes) */
static NN__MAYBE_UNUSED void nn__gemm_pb_pack(nn__gemm_pb *pb, int transB, int K, int N, const float *B, int ldb,
                                              void *mem) {
    int pc;
    if (nn__gemm_pb_geom(pb, K, N) == 0 || !mem) return;
    pb->p = nn__gemm_align(mem);
    for (pc = 0; pc < K; pc += pb->kc) {
        int kc = K - pc < pb->kc ? K - pc : pb->kc;
        pb->arch->pack_b(transB, B, ldb, pc, kc, 0, N, pb->arch->nr, pb->p + (size_t)pc * pb->npad);
    }
}

/* The job of a product of M rows with pb; returns the bytes of A's packing memory */
static size_t nn__gemm_pb_job(nn__gemm_job *J, const nn__gemm_pb *pb, int transA, int M, float alpha, const float *A,
                              int lda, float beta, float *C, int ldc) {
    const nn__gemm_arch *arch = pb->arch;
    size_t mc_alloc;
    memset(J, 0, sizeof *J);
    J->arch = arch;
    J->transA = transA;
    J->M = M;
    J->N = pb->N;
    J->K = pb->K;
    J->alpha = alpha;
    J->beta = beta;
    J->A = A;
    J->lda = lda;
    J->C = C;
    J->ldc = ldc;
    J->kc = pb->kc;
    J->mblk = (M + arch->mr - 1) / arch->mr * arch->mr;
    J->nblk = pb->npad;
    J->tn = 1;
    J->bpk = pb->p;
    J->npad = pb->npad;
    mc_alloc = (size_t)(J->mblk < arch->mc ? J->mblk : arch->mc);
    J->a_floats = (mc_alloc * (size_t)J->kc + 15) / 16 * 16;
    J->buf_floats = J->a_floats;
    return sizeof(float) * J->buf_floats + NN__GEMM_ALIGN;
}

/* The bytes nn__sgemm_pb needs for M rows against op(B) [K, N] */
static NN__MAYBE_UNUSED size_t nn__sgemm_pb_bytes(int K, int N, int M) {
    nn__gemm_pb pb;
    nn__gemm_job J;
    if (M <= 0 || nn__gemm_pb_geom(&pb, K, N) == 0) return 0;
    return nn__gemm_pb_job(&J, &pb, 0, M, 1.0f, NULL, 1, 0.0f, NULL, 1);
}

/* C[M, N] = alpha op(A) op(B) + beta C on the calling thread, op(B) from pb (K, N its
   own), packing A in mem (bytes from nn__sgemm_pb_bytes): the same bits as nn__sgemm with
   that op(B). 0 when bytes is short (nothing done). */
static NN__MAYBE_UNUSED int nn__sgemm_pb(void *mem, size_t bytes, const nn__gemm_pb *pb, int transA, int M, float alpha,
                                         const float *A, int lda, float beta, float *C, int ldc) {
    nn__gemm_job J;
    if (M <= 0) return 1;
    if (nn__gemm_pb_job(&J, pb, transA, M, alpha, A, lda, beta, C, ldc) > bytes || !mem || !pb->p) return 0;
    J.buf = nn__gemm_align(mem);
    nn__gemm_task(&J, 0, 1);
    return 1;
}
