#include "kargs.h"
#include "storage.h"
#include "gemm_args.h"

/* SGEMM: row-major C[M,N] = alpha * op(A) * op(B) + beta * C.
 *
 *   op(A) = A   stored [M,K] (lda >= K)   or  A^T, A stored [K,M] (lda >= M)
 *   op(B) = B   stored [K,N] (ldb >= N)   or  B^T, B stored [N,K] (ldb >= K)
 *
 * Kernels gemm_nn_single ... gemm_tt_single are stamped out from one body
 * (GEMM_KERNEL, parameters `gemm` of kernels/gemm_args.h), and their batched
 * twins from another (GEMM_BATCHED_KERNEL, `gemm_batched`); the transpose
 * flags are compile-time constants after inlining, so each variant gets its
 * own specialised loads at no runtime cost.
 *
 * Each work-item owns WPT_M x WPT_N micro-tiles of C held in registers as
 * WPT_N/VW float<VW> vectors per row (rows are broadcast scalars of op(A)).
 * Work-group dim 0 runs along N, dim 1 along M.
 *
 * Three strategies, chosen by USE_LOCAL (the host plan must match: one
 * nn__gemm_config in src/opencl/gemm_plan.c makes both the build options and
 * the launch geometry):
 *   0  direct:  WG_N x WG_M items, one micro-tile each, streamed straight
 *               from global memory.  Fallback for devices without usable
 *               local memory.  Slow for large power-of-two ldb on CPUs (the
 *               B column walk hits one cache set).
 *   1  tiled:   WG_N x WG_M items stage TS_M x TS_K and TS_K x TS_N panels
 *               in local memory (transposes are absorbed by the staging
 *               loads, coalesced along whichever dimension is contiguous).
 *               For GPUs.
 *   2  packed:  one item per group packs a TS_K x TS_N panel of op(B) into
 *               local memory and sweeps a runtime-sized band of rows with a
 *               6x16-style micro-kernel, BLIS-style.  For CPU runtimes
 *               (PoCL): no barriers, no per-item context to spill.  NT
 *               products there are dot products along k (gemm_nt_dot).
 *
 * STRIDED (tiled only) spreads an item's rows/columns across the group tile
 * (row = ly + r*WG_M) instead of keeping them adjacent; on GPUs that makes
 * neighbouring items touch neighbouring local/global words (no bank
 * conflicts, coalesced stores).
 *
 * Edges: any M, N, K >= 1 and any lda/ldb/ldc is handled.  Out-of-range rows
 * or columns are either clamped to the last valid one (loads stay in bounds,
 * inner loops stay branch-free; results discarded) or zero-filled in local
 * memory; stores are masked.  With beta == 0 C is never read before it is
 * written, so it may hold NaN/garbage.  Products are written as acc += a*b,
 * which OpenCL compilers contract to FMA where the hardware has it (PoCL
 * does not for mad(), hence not mad()).
 *
 * A and B are of the program's storage type (kernels/storage.h: float, or
 * bfloat16 / float16 built with -DNN_STORE_BF16 / -DNN_STORE_F16), read through
 * GLD / GVLOAD and widened to float in registers; C and the accumulation are
 * float.  Built with neither, GLD and GVLOAD are the plain float accesses.
 *
 * All tunables are -D build options; the defaults below are the CPU (PoCL)
 * configuration.
 */

#ifndef WPT_M          /* rows of C per work-item */
#define WPT_M 6
#endif
#ifndef WPT_N          /* columns of C per work-item, multiple of VW */
#define WPT_N 16
#endif
#ifndef VW             /* vector width along N: 1, 2, 4, 8 or 16 */
#define VW 8
#endif
#ifndef WG_M           /* work-group size along M (dim 1); packed: max micro-tiles down */
#define WG_M 16
#endif
#ifndef WG_N           /* work-group size along N (dim 0); packed: micro-tiles across */
#define WG_N 4
#endif
#ifndef USE_LOCAL      /* 0 direct, 1 tiled (GPU), 2 packed (CPU) */
#define USE_LOCAL 2
#endif
#ifndef TS_K           /* K depth of the local panels (tiled, packed) */
#define TS_K 256
#endif
#ifndef STRIDED
#define STRIDED 0
#endif
#ifndef PAD_A          /* extra words per local row of the A panel, against bank conflicts */
#define PAD_A 0
#endif
#ifndef PAD_B
#define PAD_B 0
#endif

#define NCH  (WPT_N / VW)          /* vectors per row of the register tile */
#define TS_M (WG_M * WPT_M)
#define TS_N (WG_N * WPT_N)

#if (WPT_N % VW) != 0
#error "WPT_N must be a multiple of VW"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VW == 1
typedef float floatv;
#define VLOAD(p)      (*(p))
#define VSTORE(v, p)  (*(p) = (v))
#else
typedef CAT(float, VW) floatv;
#define VLOAD(p)      CAT(vload, VW)(0, p)
#define VSTORE(v, p)  CAT(vstore, VW)(v, 0, p)
#endif

/* element i of A or B, and VW consecutive elements of one, as float */
#define GLD(p, i) NN__SLOAD(p, i)
#if !defined(NN_STORE_BF16) && !defined(NN_STORE_F16)
#define GVLOAD(p)     VLOAD(p)
#elif VW == 1
#define GVLOAD(p)     NN__SLOAD(p, 0)
#elif defined(NN_STORE_BF16)
#define GVLOAD(p)     CAT(as_float, VW)(CAT(convert_uint, VW)(CAT(vload, VW)(0, p)) << 16)
#else
#define GVLOAD(p)     CAT(vload_half, VW)(0, (__global const half *)(p))
#endif

/* 16 consecutive elements of A or B as float16 (unaligned) */
#if !defined(NN_STORE_BF16) && !defined(NN_STORE_F16)
#define GV16(p)     vload16(0, p)
#elif defined(NN_STORE_BF16)
#define GV16(p)     as_float16(convert_uint16(vload16(0, p)) << 16)
#else
#define GV16(p)     vload_half16(0, (__global const half *)(p))
#endif

/* alpha*acc (+ beta*C) for one row chunk of VW columns starting at (i, j). */
inline void store_chunk(__global float *C, const int ldc, const int i, const int j,
                        const int N, const floatv acc, const float alpha, const float beta)
{
    __global float *c = C + (size_t)i * ldc + j;
    if (j + VW <= N) {
        floatv v = alpha * acc;
        if (beta != 0.0f)
            v += beta * VLOAD(c);
        VSTORE(v, c);
    } else {
        float t[VW];
        int v;
        VSTORE(acc, t);
        for (v = 0; v < VW && j + v < N; v++)
            c[v] = beta != 0.0f ? alpha * t[v] + beta * c[v] : alpha * t[v];
    }
}

/* Row i of a matrix whose rows come by index (kernels/gemm_args.h): with rn > 0 row ri[i]
   of rn, -1 for an index outside [0, rn) (a row of zeros); else i itself. */
inline int gemm_srow(__global const int *ri, const int rn, const int i)
{
    int j;
    if (rn <= 0)
        return i;
    j = ri[i];
    return j >= 0 && j < rn ? j : -1;
}

#if !USE_LOCAL

/* Direct path: rows i0..i0+WPT_M-1, columns j0..j0+WPT_N-1 (contiguous). */
inline void gemm_direct(const int M, const int N, const int K,
                        __global const NN__STORE_T *A, const int lda,
                        __global const NN__STORE_T *B, const int ldb,
                        __global float *C, const int ldc,
                        const float alpha, const float beta,
                        const int ta, const int tb)
{
    const int i0 = (int)get_global_id(1) * WPT_M;
    const int j0 = (int)get_global_id(0) * WPT_N;
    floatv acc[WPT_M][NCH];
    int r, c, k;

    if (i0 >= M || j0 >= N)
        return;

#pragma unroll
    for (r = 0; r < WPT_M; r++)
#pragma unroll
        for (c = 0; c < NCH; c++)
            acc[r][c] = (floatv)(0.0f);

    if (i0 + WPT_M <= M && j0 + WPT_N <= N) {
        /* Interior tile: fixed strides, no clamping. */
        __global const NN__STORE_T *a = ta ? A + i0 : A + (size_t)i0 * lda;
        __global const NN__STORE_T *b = tb ? B + (size_t)j0 * ldb : B + j0;
        const int a_k = ta ? lda : 1;      /* step along k */
        const int a_r = ta ? 1 : lda;      /* step along rows */
        const int b_k = tb ? 1 : ldb;
        for (k = 0; k < K; k++) {
            floatv bv[NCH];
            if (!tb) {
#pragma unroll
                for (c = 0; c < NCH; c++)
                    bv[c] = GVLOAD(b + c * VW);
            } else {
                float t[WPT_N];
#pragma unroll
                for (c = 0; c < WPT_N; c++)
                    t[c] = GLD(b, (size_t)c * ldb);
#pragma unroll
                for (c = 0; c < NCH; c++)
                    bv[c] = VLOAD(t + c * VW);
            }
#pragma unroll
            for (r = 0; r < WPT_M; r++) {
                const floatv av = (floatv)(GLD(a, (size_t)r * a_r));
#pragma unroll
                for (c = 0; c < NCH; c++)
                    acc[r][c] += av * bv[c];   /* contracted to FMA where the target has it */
            }
            a += a_k;
            b += b_k;
        }
    } else {
        /* Edge tile: clamp indices so every load is in bounds. */
        int ii[WPT_M], jj[WPT_N];
#pragma unroll
        for (r = 0; r < WPT_M; r++)
            ii[r] = min(i0 + r, M - 1);
#pragma unroll
        for (c = 0; c < WPT_N; c++)
            jj[c] = min(j0 + c, N - 1);
        for (k = 0; k < K; k++) {
            float t[WPT_N];
            floatv bv[NCH];
#pragma unroll
            for (c = 0; c < WPT_N; c++)
                t[c] = GLD(B, tb ? (size_t)jj[c] * ldb + k : (size_t)k * ldb + jj[c]);
#pragma unroll
            for (c = 0; c < NCH; c++)
                bv[c] = VLOAD(t + c * VW);
#pragma unroll
            for (r = 0; r < WPT_M; r++) {
                const floatv av = (floatv)(GLD(A, ta ? (size_t)k * lda + ii[r]
                                                     : (size_t)ii[r] * lda + k));
#pragma unroll
                for (c = 0; c < NCH; c++)
                    acc[r][c] += av * bv[c];   /* contracted to FMA where the target has it */
            }
        }
    }

#pragma unroll
    for (r = 0; r < WPT_M; r++) {
        if (i0 + r < M) {
#pragma unroll
            for (c = 0; c < NCH; c++)
                if (j0 + c * VW < N)
                    store_chunk(C, ldc, i0 + r, j0 + c * VW, N, acc[r][c], alpha, beta);
        }
    }
}

#define GEMM_ATTR __attribute__((reqd_work_group_size(WG_N, WG_M, 1)))
#define GEMM_LOCALS
/* rows by index are the packed path's alone (the host folds no gather for the others) */
#define GEMM_CALL(a, b, c, ta, tb) gemm_direct(M, N, K, a, lda, b, ldb, c, ldc, alpha, beta, ta, tb); \
    (void)ra; (void)rna; (void)rb; (void)rnb
/* the elements of C an item stored: GEMM_OWN_ROWS(r, c0, c1) runs the statement after it for
   each row r < M and its columns [c0, c1), c1 <= N, of them */
#define GEMM_OWN_SETUP const int own_i0 = (int)get_global_id(1) * WPT_M, own_j0 = (int)get_global_id(0) * WPT_N;
#define GEMM_OWN_ROWS(r, c0, c1) \
    for (int r = own_i0, c0 = own_j0, c1 = min(own_j0 + WPT_N, N); r < min(own_i0 + WPT_M, M) && c0 < c1; r++)
#define GEMM_ITEMS_BEGIN(nz) { const int gv_z = (int)get_global_id(2); (void)claim; (void)vnx; (void)vny;
#define GEMM_ITEMS_END }
#define GEMM_ITEMS (int)(get_global_size(0) * get_global_size(1))
#define GEMM_ITEM (int)(get_global_id(1) * get_global_size(0) + get_global_id(0))

#elif USE_LOCAL == 2

/* Packed path (CPUs): one work-item per group owns a (rows x TS_N) tile,
 * walked as micro-tiles of WPT_M x WPT_N (WG_N of them across; WG_M only
 * guides the host's choice of rows).  For each K block of TS_K it
 * copies its TS_K x TS_N slice of op(B) into local memory, micro-panel by
 * micro-panel (BLIS-style packing), so the inner loop reads B contiguously;
 * op(A) is read straight from global memory.  Why: streaming B from a
 * row-major matrix walks one cache line per k at a stride of ldb floats,
 * which for power-of-two ldb lands every line in the same cache set and
 * thrashes L1/L2.  The rows of A are few, sequential streams and cache fine.
 * A group of one item needs no barriers, which CPU runtimes handle poorly,
 * and the B panel (16 KiB per micro-panel at TS_K=256) stays in L1 while
 * the item sweeps down the rows of A.
 * Edges: partial K blocks are just shorter, B columns past N are zero-filled,
 * A rows past M are clamped to row M-1 (in bounds, results discarded). */
/* NT on CPUs (op(A) = A, op(B) = B^T: both operands run along k in memory): dot products
 * in float16s along k, no packing.  An item takes the rows and columns the packed path
 * would (the host plan is the same), in tiles of DOT_R rows x DOT_C columns: DOT_R*DOT_C
 * float16 accumulators, each k step of 16 loads DOT_R + DOT_C vectors for DOT_R*DOT_C
 * FMAs.  The packed path transposed op(B) into local memory element by element (a scalar
 * store a float: 30% of a 128 x 256 x 784 NT product's time on PoCL).  K runs in blocks of
 * DOT_KB; in each, every element's sum is 16 lanes (lane l: k = l mod 16, in k order) added
 * in a fixed tree, then the block's tail (its length mod 16) in order, and the blocks'
 * sums are added to C in k order; the tile shape, picked by the vector width (6 x 4 is 24 zmm
 * accumulators, 3 x 2 fits AVX2's 16 ymm), changes no bit. */
#if VW >= 16
#define DOT_R 6
#define DOT_C 4
#else
#define DOT_R 3
#define DOT_C 2
#endif
/* a row of a tile's DOT_C sums as one vector */
#if DOT_C == 4
#define DOT_VEC         float4
#define DOT_ROW(a)      hsum16x4((a)[0], (a)[1], (a)[2], (a)[3])
#define DOT_LOAD(p)     vload4(0, p)
#define DOT_STORE(v, p) vstore4(v, 0, p)
#else
#define DOT_VEC         float2
#define DOT_ROW(a)      (float2)(hsum16((a)[0]), hsum16((a)[1]))
#define DOT_LOAD(p)     vload2(0, p)
#define DOT_STORE(v, p) vstore2(v, 0, p)
#endif
#define DOT_KB 1024   /* k a block: an inner tile's rows of A (24 KiB at 6 rows) stay in L1 */

inline float hsum16(const float16 v)
{
    const float8 h = v.lo + v.hi;
    const float4 q = h.lo + h.hi;
    const float2 d = q.lo + q.hi;
    return d.x + d.y;
}

/* hsum16 of four vectors at once: the same additions in the same tree (each level adds the
   lane pairs hsum16's level adds), so the same sums, in a third of the instructions */
inline float4 hsum16x4(const float16 a, const float16 b, const float16 c, const float16 d)
{
    const float16 ab = (float16)(a.lo, b.lo) + (float16)(a.hi, b.hi);
    const float16 cd = (float16)(c.lo, d.lo) + (float16)(c.hi, d.hi);
    const float16 q = (float16)(ab.s0123, ab.s89ab, cd.s0123, cd.s89ab) +
                      (float16)(ab.s4567, ab.scdef, cd.s4567, cd.scdef);
    const float8 e = (float8)(q.s01, q.s45, q.s89, q.scd) + (float8)(q.s23, q.s67, q.sab, q.sef);
    return (float4)(e.s0, e.s2, e.s4, e.s6) + (float4)(e.s1, e.s3, e.s5, e.s7);
}

inline void gemm_nt_dot(const int M, const int N, const int K,
                        __global const NN__STORE_T *A, const int lda,
                        __global const NN__STORE_T *B, const int ldb,
                        __global float *C, const int ldc,
                        const float alpha, const float beta,
                        __global const int *ra, const int rna, __global const int *rb, const int rnb,
                        const int n0, const int vy, const int vny)
{
    const int rows = ((M + vny - 1) / vny + WPT_M - 1) / WPT_M * WPT_M;
    const int m0 = vy * rows;
    const int m1 = min(m0 + rows, M), n1 = min(n0 + TS_N, N);
    int k0, i0, j0, r, c, k;

    for (k0 = 0; k0 < K; k0 += DOT_KB) {
        const int kv = min(DOT_KB, K - k0), k16 = kv / 16 * 16;
        for (i0 = m0; i0 < m1; i0 += DOT_R) {
            __global const NN__STORE_T *a[DOT_R];
            int aok[DOT_R];
#pragma unroll
            for (r = 0; r < DOT_R; r++) {
                const int sr = gemm_srow(ra, rna, min(i0 + r, m1 - 1));
                aok[r] = sr >= 0;
                a[r] = A + (size_t)max(sr, 0) * lda + k0;
            }
            for (j0 = n0; j0 < n1; j0 += DOT_C) {
                __global const NN__STORE_T *b[DOT_C];
                int bok[DOT_C];
                float16 acc[DOT_R][DOT_C];
                float s[DOT_R][DOT_C];
#pragma unroll
                for (c = 0; c < DOT_C; c++) {
                    const int sr = gemm_srow(rb, rnb, min(j0 + c, n1 - 1));
                    bok[c] = sr >= 0;
                    b[c] = B + (size_t)max(sr, 0) * ldb + k0;
                }
#pragma unroll
                for (r = 0; r < DOT_R; r++)
#pragma unroll
                    for (c = 0; c < DOT_C; c++)
                        acc[r][c] = (float16)(0.0f);
                for (k = 0; k < k16; k += 16) {
                    float16 bv[DOT_C];
#pragma unroll
                    for (c = 0; c < DOT_C; c++)
                        bv[c] = GV16(b[c] + k);
#pragma unroll
                    for (r = 0; r < DOT_R; r++) {
                        const float16 av = GV16(a[r] + k);
#pragma unroll
                        for (c = 0; c < DOT_C; c++)
                            acc[r][c] += av * bv[c];   /* contracted to FMA where the target has it */
                    }
                }
                /* a whole tile, every row of it there and k a multiple of 16: each row's sums
                   as one vector (DOT_ROW), stored as one (the same sums and the same
                   alpha * s + bt * c as the element by element path below) */
                int all_ok = i0 + DOT_R <= m1 && j0 + DOT_C <= n1 && k16 == kv;
#pragma unroll
                for (r = 0; r < DOT_R; r++)
                    all_ok = all_ok && aok[r];
#pragma unroll
                for (c = 0; c < DOT_C; c++)
                    all_ok = all_ok && bok[c];
                if (all_ok) {
                    const float bt = k0 == 0 ? beta : 1.0f;
                    __global float *o = C + (size_t)i0 * ldc + j0;
                    if (bt != 0.0f) {
#pragma unroll
                        for (r = 0; r < DOT_R; r++, o += ldc)
                            DOT_STORE(alpha * DOT_ROW(acc[r]) + bt * DOT_LOAD(o), o);
                    } else {
#pragma unroll
                        for (r = 0; r < DOT_R; r++, o += ldc)
                            DOT_STORE(alpha * DOT_ROW(acc[r]), o);
                    }
                    continue;
                }
#pragma unroll
                for (r = 0; r < DOT_R; r++)
#pragma unroll
                    for (c = 0; c < DOT_C; c++)
                        s[r][c] = hsum16(acc[r][c]);
                for (k = k16; k < kv; k++)
#pragma unroll
                    for (r = 0; r < DOT_R; r++)
#pragma unroll
                        for (c = 0; c < DOT_C; c++)
                            s[r][c] += GLD(a[r], k) * GLD(b[c], k);
                /* a row by an index out of range: a row of zeros, whose products sum to +0 (the
                   gather's row, where the other operand is finite) */
#pragma unroll
                for (r = 0; r < DOT_R; r++)
#pragma unroll
                    for (c = 0; c < DOT_C; c++)
                        s[r][c] = aok[r] && bok[c] ? s[r][c] : 0.0f;
                /* Later K blocks add onto what the first one stored. */
#pragma unroll
                for (r = 0; r < DOT_R; r++) {
                    if (i0 + r < m1) {
                        __global float *o = C + (size_t)(i0 + r) * ldc;
                        const float bt = k0 == 0 ? beta : 1.0f;
#pragma unroll
                        for (c = 0; c < DOT_C; c++)
                            if (j0 + c < n1)
                                o[j0 + c] = bt != 0.0f ? alpha * s[r][c] + bt * o[j0 + c] : alpha * s[r][c];
                    }
                }
            }
        }
    }
}

/* The columns of C an item owns: a split of N over the grid's width in whole panels of TS_N
   (one panel an item as the host plans products, all N in one item for the tiny ones) */
inline int gemm_own_cols(const int N, const int vnx)
{
    return ((N + vnx - 1) / vnx + TS_N - 1) / TS_N * TS_N;
}

/* One panel of the item's columns, [n0, n0 + TS_N) */
inline void gemm_packed_panel(const int M, const int N, const int K,
                              __global const NN__STORE_T *A, const int lda,
                              __global const NN__STORE_T *B, const int ldb,
                              __global float *C, const int ldc,
                              const float alpha, const float beta,
                              __local float *Bp, const int ta, const int tb,
                              __global const int *ra, const int rna, __global const int *rb, const int rnb,
                              const int n0, const int vy, const int vny)
{
    /* Rows per item are a runtime split of M over the grid height (whole
     * micro-tiles), so the host can trade tile height for parallelism on
     * small problems; columns are the item's panels of TS_N (the local panel)
     * one after another (gemm_packed). */
    const int rows = ((M + vny - 1) / vny + WPT_M - 1) / WPT_M * WPT_M;
    const int m0 = vy * rows;
    const int mv = min(rows, M - m0), nv = min(TS_N, N - n0);
    const int mt = (mv + WPT_M - 1) / WPT_M, nt = (nv + WPT_N - 1) / WPT_N;
    const size_t a_k = ta ? (size_t)lda : 1;   /* step of op(A) along k */
    int k0, mi, ni, r, c, kk;

    if (mv <= 0 || nv <= 0)
        return;
    if (!ta && tb) {
        gemm_nt_dot(M, N, K, A, lda, B, ldb, C, ldc, alpha, beta, ra, rna, rb, rnb, n0, vy, vny);
        return;
    }

    for (k0 = 0; k0 < K; k0 += TS_K) {
        const int kv = min(TS_K, K - k0);

        /* Bp[(ni*kv + kk)*WPT_N + c] = op(B)[k0 + kk][n0 + ni*WPT_N + c] */
        for (ni = 0; ni < nt; ni++) {
            __local float *dst = Bp + ni * kv * WPT_N;
            const int j0 = n0 + ni * WPT_N;
            const int w = min(WPT_N, N - j0);        /* valid columns */
            if (!tb && rnb > 0) {
                /* B's rows by index: each k's row found, a row of zeros for one out of range */
                for (kk = 0; kk < kv; kk++, dst += WPT_N) {
                    const int sr = gemm_srow(rb, rnb, k0 + kk);
                    __global const NN__STORE_T *src = B + (size_t)max(sr, 0) * ldb + j0;
                    if (sr >= 0 && w == WPT_N) {
#pragma unroll
                        for (c = 0; c < NCH; c++)
                            VSTORE(GVLOAD(src + c * VW), dst + c * VW);
                    } else {
                        for (c = 0; c < WPT_N; c++)
                            dst[c] = sr >= 0 && c < w ? GLD(src, c) : 0.0f;
                    }
                }
            } else if (!tb) {
                __global const NN__STORE_T *src = B + (size_t)k0 * ldb + j0;
                if (w == WPT_N) {
                    for (kk = 0; kk < kv; kk++, src += ldb, dst += WPT_N)
#pragma unroll
                        for (c = 0; c < NCH; c++)
                            VSTORE(GVLOAD(src + c * VW), dst + c * VW);
                } else {
                    for (kk = 0; kk < kv; kk++, src += ldb, dst += WPT_N)
                        for (c = 0; c < WPT_N; c++)
                            dst[c] = c < w ? GLD(src, c) : 0.0f;
                }
            } else if (w == WPT_N) {
                /* Transposing copy: each column of the panel is a row of B.  Blocks of
                 * 4 k x WPT_N columns: 4 adjacent loads per row of B and WPT_N adjacent
                 * stores per row of the panel, which the compiler turns into vector
                 * loads, shuffles and vector stores (column by column, the copy ran
                 * one strided scalar store per element: half of an NT product's time). */
                __global const NN__STORE_T *src = B + (size_t)j0 * ldb + k0;
                for (kk = 0; kk + 4 <= kv; kk += 4, dst += 4 * WPT_N) {
                    float4 t[WPT_N];
#pragma unroll
                    for (c = 0; c < WPT_N; c++) {
                        __global const NN__STORE_T *s = src + (size_t)c * ldb + kk;
                        t[c] = (float4)(GLD(s, 0), GLD(s, 1), GLD(s, 2), GLD(s, 3));
                    }
#pragma unroll
                    for (c = 0; c < WPT_N; c++) {
                        dst[c] = t[c].s0;
                        dst[WPT_N + c] = t[c].s1;
                        dst[2 * WPT_N + c] = t[c].s2;
                        dst[3 * WPT_N + c] = t[c].s3;
                    }
                }
                for (; kk < kv; kk++, dst += WPT_N)
#pragma unroll
                    for (c = 0; c < WPT_N; c++)
                        dst[c] = GLD(src, (size_t)c * ldb + kk);
            } else {
                for (c = 0; c < WPT_N; c++) {
                    __global const NN__STORE_T *src = B + (size_t)(j0 + c) * ldb + k0;
                    if (c < w)
                        for (kk = 0; kk < kv; kk++)
                            dst[kk * WPT_N + c] = GLD(src, kk);
                    else
                        for (kk = 0; kk < kv; kk++)
                            dst[kk * WPT_N + c] = 0.0f;
                }
            }
        }

        for (ni = 0; ni < nt; ni++) {
            const int j0 = n0 + ni * WPT_N;
            for (mi = 0; mi < mt; mi++) {
                const int i0 = m0 + mi * WPT_M;
                __local const float *b = Bp + ni * kv * WPT_N;
                __global const NN__STORE_T *a = A + (size_t)k0 * a_k;
                size_t aoff[WPT_M];
                int aok[WPT_M];
                floatv acc[WPT_M][NCH];
#pragma unroll
                for (r = 0; r < WPT_M; r++) {
                    const int i = min(i0 + r, M - 1), sr = ta ? i : gemm_srow(ra, rna, i);
                    aok[r] = sr >= 0;
                    aoff[r] = ta ? (size_t)i : (size_t)max(sr, 0) * (size_t)lda;
#pragma unroll
                    for (c = 0; c < NCH; c++)
                        acc[r][c] = (floatv)(0.0f);
                }
                for (kk = 0; kk < kv; kk++) {
                    floatv bv[NCH];
#pragma unroll
                    for (c = 0; c < NCH; c++)
                        bv[c] = VLOAD(b + c * VW);
#pragma unroll
                    for (r = 0; r < WPT_M; r++) {
                        const floatv av = (floatv)(GLD(a, aoff[r]));
#pragma unroll
                        for (c = 0; c < NCH; c++)
                            acc[r][c] += av * bv[c];   /* contracted to FMA where the target has it */
                    }
                    a += a_k;
                    b += WPT_N;
                }
                /* Later K blocks accumulate onto what the first one stored. */
#pragma unroll
                for (r = 0; r < WPT_M; r++) {
                    if (i0 + r < M) {
#pragma unroll
                        for (c = 0; c < NCH; c++)
                            if (j0 + c * VW < N)
                                store_chunk(C, ldc, i0 + r, j0 + c * VW, N, aok[r] ? acc[r][c] : (floatv)(0.0f),
                                            alpha, k0 == 0 ? beta : 1.0f);
                    }
                }
            }
        }
    }
}

/* The item's panels in turn: each element of C has the same terms in the same order however
   the columns are split, so the bits do not depend on the grid */
inline void gemm_packed(const int M, const int N, const int K,
                        __global const NN__STORE_T *A, const int lda,
                        __global const NN__STORE_T *B, const int ldb,
                        __global float *C, const int ldc,
                        const float alpha, const float beta,
                        __local float *Bp, const int ta, const int tb,
                        __global const int *ra, const int rna, __global const int *rb, const int rnb,
                        const int vx, const int vy, const int vnx, const int vny)
{
    const int cols = gemm_own_cols(N, vnx), c0 = vx * cols, c1 = min(c0 + cols, N);
    int n0;
    for (n0 = c0; n0 < c1; n0 += TS_N)
        gemm_packed_panel(M, N, K, A, lda, B, ldb, C, ldc, alpha, beta, Bp, ta, tb, ra, rna, rb, rnb, n0, vy, vny);
}

#define GEMM_ATTR __attribute__((reqd_work_group_size(1, 1, 1)))
#define GEMM_LOCALS __local float Bp[TS_K * TS_N];
#define GEMM_CALL(a, b, c, ta, tb) gemm_packed(M, N, K, a, lda, b, ldb, c, ldc, alpha, beta, Bp, ta, tb, ra, rna, rb, rnb, \
                                               gv_x, gv_y, gv_nx, gv_ny)
/* an item's rows (gemm_packed's and gemm_nt_dot's split) and columns (gemm_own_cols) */
#define GEMM_OWN_SETUP                                                                                      \
    const int own_rows = ((M + gv_ny - 1) / gv_ny + WPT_M - 1) / WPT_M * WPT_M, \
              own_i0 = gv_y * own_rows, own_cols = gemm_own_cols(N, gv_nx), \
              own_j0 = gv_x * own_cols;
/* The items of the plan's grid (vnx x vny, x vnz products), taken in turn by the launch's few
   groups from the counter claim[0] (the host's grid is about a group a core): a CPU runtime
   such as PoCL gives the first of its threads half of a launch's groups at once, so a
   second thread that wakes late (microseconds, on a VM) left the launch to the first for
   the rest; taken one at a time, the items go to whichever thread is free. Each item does
   what it did as a group of its own, so the bits do not change. The last group to finish
   sets the counters back to 0 for the next launch (claim[1] counts the groups done). */
#define GEMM_ITEM_VARS(v)                                                                         \
    const int gv_nx = vnx, gv_ny = vny, gv_x = (v) % vnx, gv_y = (v) / vnx % vny, gv_z = (v) / (vnx * vny);
#define GEMM_ITEMS_BEGIN(nz)                                                                      \
    for (;;) {                                                                                    \
        const int gv_ = atomic_inc(claim);                                                        \
        if (gv_ >= vnx * vny * (nz)) break;                                                       \
        GEMM_ITEM_VARS(gv_)
#define GEMM_ITEMS_END                                                                            \
    }                                                                                             \
    if (atomic_inc(claim + 1) == (int)(get_num_groups(0) * get_num_groups(1) * get_num_groups(2)) - 1) { \
        claim[0] = 0;                                                                             \
        claim[1] = 0;                                                                             \
    }
#define GEMM_ITEMS (gv_nx * gv_ny)
#define GEMM_ITEM (gv_y * gv_nx + gv_x)
#define GEMM_OWN_ROWS(r, c0, c1) \
    for (int r = own_i0, c0 = own_j0, c1 = min(own_j0 + own_cols, N); r < min(own_i0 + own_rows, M) && c0 < c1; r++)

#else /* USE_LOCAL == 1 */

#define NTHR (WG_M * WG_N)
#define LDA_S (TS_M + PAD_A)       /* local A panel: [TS_K][LDA_S], k-major */
#define LDB_S (TS_N + PAD_B)       /* local B panel: [TS_K][LDB_S] */

#if STRIDED
#define ROW(ly, r)  ((ly) + (r) * WG_M)
#define COL(lx, c)  (((lx) + (c) * WG_N) * VW)
#else
#define ROW(ly, r)  ((ly) * WPT_M + (r))
#define COL(lx, c)  (((lx) * NCH + (c)) * VW)
#endif

inline void gemm_tiled(const int M, const int N, const int K,
                       __global const NN__STORE_T *A, const int lda,
                       __global const NN__STORE_T *B, const int ldb,
                       __global float *C, const int ldc,
                       const float alpha, const float beta,
                       __local float *As, __local float *Bs,
                       const int ta, const int tb)
{
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    const int tid = ly * WG_N + lx;
    const int m0 = (int)get_group_id(1) * TS_M;
    const int n0 = (int)get_group_id(0) * TS_N;
    floatv acc[WPT_M][NCH];
    int r, c, t, k0, kk;

#pragma unroll
    for (r = 0; r < WPT_M; r++)
#pragma unroll
        for (c = 0; c < NCH; c++)
            acc[r][c] = (floatv)(0.0f);

    for (k0 = 0; k0 < K; k0 += TS_K) {
        /* Stage the panels; consecutive items read consecutive global words. */
        for (t = 0; t < (TS_M * TS_K + NTHR - 1) / NTHR; t++) {
            const int e = tid + t * NTHR;
            if (e < TS_M * TS_K) {
                const int mm = ta ? e % TS_M : e / TS_K;
                const int kq = ta ? e / TS_M : e % TS_K;
                const int gi = m0 + mm, gk = k0 + kq;
                As[kq * LDA_S + mm] = (gi < M && gk < K)
                    ? GLD(A, ta ? (size_t)gk * lda + gi : (size_t)gi * lda + gk) : 0.0f;
            }
        }
        for (t = 0; t < (TS_N * TS_K + NTHR - 1) / NTHR; t++) {
            const int e = tid + t * NTHR;
            if (e < TS_N * TS_K) {
                const int nn = tb ? e / TS_K : e % TS_N;
                const int kq = tb ? e % TS_K : e / TS_N;
                const int gj = n0 + nn, gk = k0 + kq;
                Bs[kq * LDB_S + nn] = (gj < N && gk < K)
                    ? GLD(B, tb ? (size_t)gj * ldb + gk : (size_t)gk * ldb + gj) : 0.0f;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);

#pragma unroll
        for (kk = 0; kk < TS_K; kk++) {
            floatv bv[NCH];
#pragma unroll
            for (c = 0; c < NCH; c++)
                bv[c] = VLOAD(Bs + kk * LDB_S + COL(lx, c));
#pragma unroll
            for (r = 0; r < WPT_M; r++) {
                const floatv av = (floatv)(As[kk * LDA_S + ROW(ly, r)]);
#pragma unroll
                for (c = 0; c < NCH; c++)
                    acc[r][c] += av * bv[c];   /* contracted to FMA where the target has it */
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

#pragma unroll
    for (r = 0; r < WPT_M; r++) {
        const int i = m0 + ROW(ly, r);
        if (i < M) {
#pragma unroll
            for (c = 0; c < NCH; c++) {
                const int j = n0 + COL(lx, c);
                if (j < N)
                    store_chunk(C, ldc, i, j, N, acc[r][c], alpha, beta);
            }
        }
    }
}

#define GEMM_ATTR __attribute__((reqd_work_group_size(WG_N, WG_M, 1)))
#define GEMM_LOCALS __local float As[TS_K * LDA_S]; __local float Bs[TS_K * LDB_S];
#define GEMM_CALL(a, b, c, ta, tb) gemm_tiled(M, N, K, a, lda, b, ldb, c, ldc, alpha, beta, As, Bs, ta, tb); \
    (void)ra; (void)rna; (void)rb; (void)rnb
/* an item's WPT_M rows ROW(ly, r) and chunks COL(lx, c) of VW columns in its group's tile */
#define GEMM_OWN_SETUP                                                                               \
    const int own_m0 = (int)get_group_id(1) * TS_M, own_n0 = (int)get_group_id(0) * TS_N,           \
              own_lx = (int)get_local_id(0), own_ly = (int)get_local_id(1);
#define GEMM_OWN_ROWS(r, c0, c1)                                                                     \
    for (int own_r = 0; own_r < WPT_M; own_r++)                                                      \
        for (int own_c = 0; own_c < NCH; own_c++)                                                    \
            for (int r = own_m0 + ROW(own_ly, own_r), c0 = own_n0 + COL(own_lx, own_c), c1 = min(c0 + VW, N), \
                     own_once = r < M && c0 < N; own_once; own_once = 0)
#define GEMM_ITEMS_BEGIN(nz) { const int gv_z = (int)get_global_id(2); (void)claim; (void)vnx; (void)vny;
#define GEMM_ITEMS_END }
#define GEMM_ITEMS (int)(get_global_size(0) * get_global_size(1))
#define GEMM_ITEM (int)(get_global_id(1) * get_global_size(0) + get_global_id(0))

#endif /* USE_LOCAL */

#define GEMM_KERNEL(name, ta, tb)                                                    \
    __kernel GEMM_ATTR void name(NN__KPARAMS(gemm))                                 \
    {                                                                                \
        GEMM_LOCALS                                                                  \
        GEMM_ITEMS_BEGIN(1)                                                          \
        (void)gv_z;                                                                  \
        GEMM_CALL(A, B, C, ta, tb);                                                  \
        GEMM_ITEMS_END                                                               \
    }

/* Batched: grid dimension 2 numbers the products.  Product z uses the matrices at
 * A + offA + (z / inner) * sa0 + (z % inner) * sa1 (B and C likewise), in floats, so one
 * launch covers the groups of a grouped convolution (outer) and the K slices of a
 * split-K product (inner).  The offsets let operands live inside one scratch buffer. */
#define GEMM_BATCHED_KERNEL(name, ta, tb)                                            \
    __kernel GEMM_ATTR void name(NN__KPARAMS(gemm_batched))                         \
    {                                                                                \
        GEMM_LOCALS                                                                  \
        __global const int *ra = 0, *rb = 0;                                         \
        const int rna = 0, rnb = 0;                                                  \
        GEMM_ITEMS_BEGIN(vnz)                                                        \
        const int zo = gv_z / inner, zi = gv_z - zo * inner;                         \
        GEMM_CALL(A + offA + (size_t)zo * sa0 + (size_t)zi * sa1,                    \
                  B + offB + (size_t)zo * sb0 + (size_t)zi * sb1,                    \
                  C + offC + (size_t)zo * sc0 + (size_t)zi * sc1, ta, tb);           \
        GEMM_ITEMS_END                                                               \
    }

GEMM_KERNEL(gemm_nn_single, 0, 0)
GEMM_KERNEL(gemm_nt_single, 0, 1)
GEMM_KERNEL(gemm_tn_single, 1, 0)
GEMM_KERNEL(gemm_tt_single, 1, 1)
/* A TN product dy^T x [M, N] and the sums of op(A)'s rows, db[i] = the sum over k of A[k][i]
   (A = dy stored [K, M], lda M: a bias's gradient beside its weight's; src/ops/fuse.c's
   nn__fuse_tails). After the product, the grid's items share the M sums in contiguous
   chunks of a multiple of 16 (items past M / 16 have none), each sum from 0 adding its terms
   in k order: elementwise.cl's sum_leading's additions, so the same bits, and no barrier (C
   is not read). 16 sums at once in a float16 a k, stored once (added into db in memory a
   term at a time, 3% of PoCL's MLP step went here). */
inline void gemm_bsum_part(const int M, const int K, __global const NN__STORE_T *A, const int lda, __global float *db,
                           const int items, const int item)
{
    const int chunk = ((M + items - 1) / items + 15) / 16 * 16, i0 = min(M, item * chunk), i1 = min(M, i0 + chunk);
    int i, k;
    for (i = i0; i + 16 <= i1; i += 16) {
        __global const NN__STORE_T *a = A + i;
        float16 s = (float16)(0.0f);
        for (k = 0; k < K; k++, a += lda)
            s += GV16(a);
        vstore16(s, 0, db + i);
    }
    for (; i < i1; i++) {
        float s = 0.0f;
        for (k = 0; k < K; k++)
            s += GLD(A, (size_t)k * lda + i);
        db[i] = s;
    }
}
__kernel GEMM_ATTR void gemm_tn_bsum(NN__KPARAMS(gemm), __global float *db)
{
    GEMM_LOCALS
    GEMM_ITEMS_BEGIN(1)
    (void)gv_z;
    GEMM_CALL(A, B, C, 1, 0);
    gemm_bsum_part(M, K, A, lda, db, GEMM_ITEMS, GEMM_ITEM);
    GEMM_ITEMS_END
}

GEMM_BATCHED_KERNEL(gemm_nn_batched, 0, 0)
GEMM_BATCHED_KERNEL(gemm_nt_batched, 0, 1)
GEMM_BATCHED_KERNEL(gemm_tn_batched, 1, 0)
GEMM_BATCHED_KERNEL(gemm_tt_batched, 1, 1)

#if USE_LOCAL == 2
/* Launches of stages (src/opencl/backend.c, nn__cl_stages): a run of consecutive products on
   a device tuned as a CPU as one launch, whose groups take the items of all of them in turn
   from claim[0] (the first product's items, then the second's, ...). An item of a later
   product waits until every item before its product's first is done (claim[2] counts the
   items done), so each product reads what the ones before it wrote; a group waits only for
   items that running groups took, so a runtime that runs the groups one after another
   finishes too. The last group to finish sets the counters back to 0 (claim[1] counts the
   groups done). Each item does what it did in its product's own launch: the same bits. The
   generated kernel gemm_stages calls the items' functions below (the fused chains' own
   gemm_epi_item_K, src/ops/fuse.c). */
inline void gemm_stage_wait(__global int *claim, const int before)
{
    while (atomic_add(claim + 2, 0) < before)
        ;
    mem_fence(CLK_GLOBAL_MEM_FENCE);
}
inline void gemm_stage_done(__global int *claim)
{
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    atomic_inc(claim + 2);
}
inline void gemm_stages_end(__global int *claim)
{
    if (atomic_inc(claim + 1) == (int)(get_num_groups(0) * get_num_groups(1) * get_num_groups(2)) - 1) {
        claim[0] = 0;
        claim[1] = 0;
        claim[2] = 0;
    }
}
#define GEMM_SINGLE_ITEM(name, ta, tb)                                                            \
    inline void name##_item(NN__KPARAMS(gemm), __local float *Bp, const int gv_)                 \
    {                                                                                             \
        GEMM_ITEM_VARS(gv_)                                                                       \
        (void)gv_z;                                                                               \
        (void)claim;                                                                              \
        GEMM_CALL(A, B, C, ta, tb);                                                               \
    }
GEMM_SINGLE_ITEM(gemm_nn_single, 0, 0)
GEMM_SINGLE_ITEM(gemm_nt_single, 0, 1)
GEMM_SINGLE_ITEM(gemm_tn_single, 1, 0)
GEMM_SINGLE_ITEM(gemm_tt_single, 1, 1)
inline void gemm_tn_bsum_item(NN__KPARAMS(gemm), __global float *db, __local float *Bp, const int gv_)
{
    GEMM_ITEM_VARS(gv_)
    (void)gv_z;
    (void)claim;
    GEMM_CALL(A, B, C, 1, 0);
    gemm_bsum_part(M, K, A, lda, db, GEMM_ITEMS, GEMM_ITEM);
}
#endif

/* A fused chain's GEMM epilogue (src/ops/fuse.c, nn__fuse_source) follows this text: a
   kernel gemm_epi that runs one product (GEMM_CALL) and then, over the elements of C its item
   stored (GEMM_OWN_SETUP, GEMM_OWN_ROWS: the same item wrote them, so no barrier), the
   chain's statements, the bias add first (a function over a row's columns, its pointers
   restrict). The formulas come last: activation.h turns
   contraction off for what follows it, not for the products above. */
#include "activation.h"
