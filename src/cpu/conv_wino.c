/* Winograd F(2x2, 3x3) convolutions on the CPU backend (NN__CONV_WINOGRAD): 3x3, stride 1,
   dilation 1, one group. Each 2x2 block of outputs (a tile) is Y = A^T [sum_c U_c . V_c] A
   with the filter's transform U = G g G^T and the input's V = B^T d B (d the tile's 4x4
   input window), so a layer is 16 GEMMs M_xi [Co, tiles] = U_xi [Co, Ci] V_xi [Ci, tiles],
   one per element xi of the 4x4 transform domain: 16 multiply-adds per channel pair and
   tile instead of 36 (2.25x fewer). The GEMMs run on src/cpu/gemm.c's microkernel; the
   transforms are adds and subtracts over rows of tiles (vectorised, AVX-512 / AVX2 picked
   at run time, the same bits on every instruction set: each element is the same sequence
   of float adds). dx is the same convolution of dy with the flipped filter (channels
   swapped, padding 2 - p); dw stays on the implicit GEMM.

   Work is cut into chunks of NN__WINO_TILES tiles in the order (image, tile row, tile
   column), across rows and images; a task transforms a chunk's input straight into the microkernel's column panels,
   runs the 16 products into its own M, and transforms M into the output, so what a chunk
   touches stays in the L2 cache. Each output element gets the same arithmetic whatever the
   chunk and thread count.

   Infinities and NaNs: the transforms mix a tile's inputs and a filter's weights, so an
   infinite input gives inf - inf = NaN where the direct sum gives +-inf, and a NaN weight
   reaches outputs the direct sum does not. A task notes any output that is not finite, and
   the caller then computes the node again on the implicit GEMM (PyTorch's values); a
   diverged step costs twice, a finite one a compare per output.

   Error: the transforms multiply by 0.5 (exact) and add; the input transform adds up to 4
   terms of x, the output transform up to 9 of M, so the rounding error grows by a small
   constant over the direct sum: tests/test_conv_algo.c holds it to 1e-5 of the sum of
   |x||w| terms against a double reference, and the op checker's 1e-4 holds. */

#define NN__WINO_TILES 96 /* tiles per chunk: a multiple of every nr */

/* Whether a convolution is one Winograd F(2x2, 3x3) runs: for dx, padding p becomes 2 - p */
static int nn__wino_fits(const nn__conv2d *c) {
    return c->KH == 3 && c->KW == 3 && c->sh == 1 && c->sw == 1 && c->dh == 1 && c->dw == 1 && c->G == 1 && c->ph <= 2 &&
           c->pw <= 2 && c->OH > 0 && c->OW > 0;
}

/* The layout of a Winograd convolution y [N, Co, OH, OW] = conv(x [N, Ci, H, W], 3x3, pad) */
typedef struct nn__wino {
    const nn__gemm_arch *arch;
    int N, Ci, Co, H, W, OH, OW, ph, pw;
    int TH, TW;        /* tiles of an image: ceil(OH / 2) x ceil(OW / 2) */
    int lc;            /* tiles per chunk */
    int ntp;           /* columns of a chunk's panels: lc rounded up */
    int S;             /* floats of one of a chunk's rows of transform values: lc rounded up */
    int kc;            /* the K block of the products (over Ci) */
    int mr;            /* the products' row tile: arch's, or 8 (ukr) where that pads Co less */
    nn__gemm_ukr ukr;  /* the products' microkernel */
    int Cop;           /* Co rounded up to mr */
    int T;             /* tasks */
    int64_t ntiles;    /* tiles in all: N * TH * TW */
    size_t usz, vsz, msz; /* floats of one packed U_xi, V_xi (panels), M_xi */
    size_t upk, per_task; /* floats: U packed and its unpacked copy; each task's own */
    size_t umat;          /* floats from one unpacked U_xi to the next: Co * Ci rounded up to 16, and
                             16 more, so that a filter's 16 values (one in each) do not all fall in
                             one L1 set (at 32 x 64 channels they were 8 KB apart) */
} nn__wino;

/* op 0: the forward of c; op 1: its dx (dy [N, K, OH, OW] in, dx [N, C, H, W] out) */
static void nn__wino_layout(const nn__conv2d *c, int op, int T, nn__wino *L) {
    const nn__gemm_arch *arch = nn__gemm_pick_arch();
    int al = arch->nr > 16 ? arch->nr : 16, nkb;
    memset(L, 0, sizeof *L);
    L->arch = arch;
    L->N = c->N;
    if (op == 0) {
        L->Ci = c->C;
        L->Co = c->K;
        L->H = c->H;
        L->W = c->W;
        L->OH = c->OH;
        L->OW = c->OW;
        L->ph = c->ph;
        L->pw = c->pw;
    } else {
        L->Ci = c->K;
        L->Co = c->C;
        L->H = c->OH;
        L->W = c->OW;
        L->OH = c->H;
        L->OW = c->W;
        L->ph = 2 - c->ph;
        L->pw = 2 - c->pw;
    }
    L->TH = (L->OH + 1) / 2;
    L->TW = (L->OW + 1) / 2;
    L->ntiles = (int64_t)L->N * L->TH * L->TW;
    L->lc = L->ntiles < NN__WINO_TILES ? (int)(L->ntiles > 0 ? L->ntiles : 1) : NN__WINO_TILES;
    L->ntp = (L->lc + al - 1) / al * al;
    L->S = (L->lc + 15) / 16 * 16;
    nkb = (L->Ci + arch->kc - 1) / arch->kc; /* K blocks of at most kc, even, multiples of 8 */
    L->kc = ((L->Ci + nkb - 1) / nkb + 7) / 8 * 8;
    if (L->kc > L->Ci) L->kc = L->Ci;
    L->mr = arch->mr;
    L->ukr = arch->ukr;
#if NN__GEMM_X86
    /* the AVX-512 kernel's 12 rows pad 32 or 64 channels to 36 or 72: 8 x 32 tiles instead
       (the same FMAs per element, so the same bits) */
    if (arch->ukr == nn__gemm_ukr_avx512 && (L->Co + 7) / 8 * 8 < (L->Co + 11) / 12 * 12) {
        L->mr = 8;
        L->ukr = nn__gemm_ukr_avx512_8;
    }
#endif
    L->Cop = (L->Co + L->mr - 1) / L->mr * L->mr;
    L->T = T > 0 ? T : 1;
    L->usz = ((size_t)L->Cop * L->Ci + 15) / 16 * 16;
    L->vsz = (size_t)L->Ci * L->ntp;
    L->msz = (size_t)L->Cop * L->ntp;
    /* an odd number of cache lines between the 16 V_xi (and M_xi): the input transform writes
       all 16 and the output transform reads all 16 at once, and a stride of a multiple of 4 KB
       (V of 32 or 64 channels: 12 or 24 KB) put the 16 streams in one L1 set */
    if (L->vsz / 16 % 2 == 0) L->vsz += 16;
    if (L->msz / 16 % 2 == 0) L->msz += 16;
    L->umat = ((size_t)L->Co * L->Ci + 15) / 16 * 16 + 16;
    L->upk = 16 * L->usz + 16 * L->umat + 16;
    L->per_task = 16 * (L->vsz + L->msz) + 32 * (size_t)L->S + 32;
}

/* Floats of scratch a Winograd conv node needs (op 0 forward, 1 dx) on T threads: its own,
   or the implicit GEMM's that a non-finite result falls back to (nn__wino_run) */
static int64_t nn__wino_scratch(const nn__conv2d *c, int op, int T) {
    nn__wino L;
    int64_t own, gemm = nn__iconv_scratch(c, op, T);
    nn__wino_layout(c, op, T, &L);
    own = (int64_t)(L.upk + (L.per_task + 1) * (size_t)L.T);
    return own > gemm ? own : gemm;
}

/* ---- the transforms' rows, one set per instruction set ----------------------------------
   vcol: e0 = d0 - d2, e1 = d1 + d2, e2 = d2 - d1, e3 = d1 - d3 (B^T down a column of 4 rows)
   hrow: B along a row for tiles j from its columns 2 tw .. 2 tw + 3 (E, O, E1, O1):
         o0 = E[j] - E1[j], o1 = O[j] + E1[j], o2 = E1[j] - O[j], o3 = O[j] - O1[j]
   orow: A^T m A of tiles j from the 16 rows m[4 i + j'] of M:
         s0 = m0 + m1 + m2, s1 = m1 - m2 - m3 down each column j', then the same along
         the rows: y00, y01 (from s0), y10, y11 (from s1) */
/* A run of a chunk's tiles along one tile row: image n, tile row th, tile columns tw0 ..
   tw0 + len - 1, the chunk's tiles off .. off + len - 1 */
typedef struct nn__wino_seg {
    int n, th, tw0, len, off;
} nn__wino_seg;

typedef struct nn__wino_fns {
    void (*vcol)(const float *d0, const float *d1, const float *d2, const float *d3, float *e0, float *e1, float *e2,
                 float *e3, int n);
    void (*hrow)(const float *E, const float *O, const float *E1, const float *O1, float *o0, float *o1, float *o2,
                 float *o3, int n);
    int (*orow)(const float *const *m, float *y00, float *y01, float *y10, float *y11, int n, const float *bias);
    /* E[j] = v(2 j), O[j] = v(2 j + 1) for j < n, v(k) = xr[k - pw] inside [0, W), else 0 */
    void (*deint)(const float *xr, int W, int pw, float *E, float *O, int n);
    /* y[2 j] = a[j], y[2 j + 1] = b[j] for the indices below ow */
    void (*inter)(const float *a, const float *b, float *y, int ow);
    /* vcol and deint of one run of len tiles at once (NULL: deint, then vcol over the chunk):
       rows r[0..3] (NULL: a row of zeros) of width W, the run's columns from c0 = 2 tw0 - pw;
       e[(4 q + k) S + j] = row q of B^T d at column c0 + 2 j + k (k = 0..3: E, O, E1, O1) */
    void (*vin)(const float *const *r, int W, int c0, int len, float *e, size_t S);
    /* orow and inter of one output channel at once (NULL: orow into a buffer, then inter per
       run): m as orow's, n tiles, the chunk's runs sg[0..ns), y the channel's plane of image 0
       (image k at y + k ys), OH x OW; whether every output is finite */
    int (*oscat)(const float *const *m, int n, const nn__wino_seg *sg, int ns, float *y, size_t ys, int OH, int OW,
                 const float *bias);
    /* vin and hrow of one run at once, straight into V's panels (NULL: vin or deint and vcol,
       then hrow): r, W, c0, len as vin's; the run's tile j is the chunk's column t0 + j, at
       p + (t / nr) P + t % nr of V_xi (p: the channel's row of V_0, V_xi at p + xi vsz) */
    void (*vinp)(const float *const *r, int W, int c0, int len, float *p, int t0, int nr, size_t P, size_t vsz);
} nn__wino_fns;

#define NN__WINO_LD(p) (__builtin_memcpy(&v_, (p), sizeof v_), v_)
#define NN__WINO_DEFINE(S, TGT, VT, VL)                                                                               \
    TGT static void nn__wino_vcol_##S(const float *d0, const float *d1, const float *d2, const float *d3, float *e0, \
                                      float *e1, float *e2, float *e3, int n) {                                       \
        int j = 0;                                                                                                    \
        for (; j + (VL) <= n; j += (VL)) {                                                                            \
            VT v_, a0 = NN__WINO_LD(d0 + j), a1 = NN__WINO_LD(d1 + j), a2 = NN__WINO_LD(d2 + j),                      \
                   a3 = NN__WINO_LD(d3 + j), r;                                                                       \
            r = a0 - a2;                                                                                              \
            __builtin_memcpy(e0 + j, &r, sizeof r);                                                                   \
            r = a1 + a2;                                                                                              \
            __builtin_memcpy(e1 + j, &r, sizeof r);                                                                   \
            r = a2 - a1;                                                                                              \
            __builtin_memcpy(e2 + j, &r, sizeof r);                                                                   \
            r = a1 - a3;                                                                                              \
            __builtin_memcpy(e3 + j, &r, sizeof r);                                                                   \
        }                                                                                                             \
        for (; j < n; j++) {                                                                                          \
            e0[j] = d0[j] - d2[j];                                                                                    \
            e1[j] = d1[j] + d2[j];                                                                                    \
            e2[j] = d2[j] - d1[j];                                                                                    \
            e3[j] = d1[j] - d3[j];                                                                                    \
        }                                                                                                             \
    }                                                                                                                 \
    TGT static void nn__wino_hrow_##S(const float *E, const float *O, const float *E1, const float *O1, float *o0,   \
                                      float *o1, float *o2, float *o3, int n) {                                       \
        int j = 0;                                                                                                    \
        for (; j + (VL) <= n; j += (VL)) {                                                                            \
            VT v_, ev = NN__WINO_LD(E + j), ev1 = NN__WINO_LD(E1 + j)    , od = NN__WINO_LD(O + j),                    \
                   od1 = NN__WINO_LD(O1 + j), r;                                                                        \
            r = ev - ev1;                                                                                               \
            __builtin_memcpy(o0 + j, &r, sizeof r);                                                                   \
            r = od + ev1;                                                                                               \
            __builtin_memcpy(o1 + j, &r, sizeof r);                                                                   \
            r = ev1 - od;                                                                                               \
            __builtin_memcpy(o2 + j, &r, sizeof r);                                                                   \
            r = od - od1;                                                                                               \
            __builtin_memcpy(o3 + j, &r, sizeof r);                                                                   \
        }                                                                                                             \
        for (; j < n; j++) {                                                                                          \
            o0[j] = E[j] - E1[j];                                                                                     \
            o1[j] = O[j] + E1[j];                                                                                     \
            o2[j] = E1[j] - O[j];                                                                                     \
            o3[j] = O[j] - O1[j];                                                                                     \
        }                                                                                                             \
    }                                                                                                                 \
    TGT static int nn__wino_orow_##S(const float *const *m, float *y00, float *y01, float *y10, float *y11, int n,   \
                                     const float *bias) {                                                             \
        int j = 0, q, ok = 1;                                                                                         \
        VT acc = {0}, bv = acc + (bias ? *bias : 0.0f);                                                               \
        float lanes[VL];                                                                                              \
        for (; j + (VL) <= n; j += (VL)) {                                                                            \
            VT v_, s0[4], s1[4], r[4];                                                                                \
            for (q = 0; q < 4; q++) {                                                                                 \
                VT a0 = NN__WINO_LD(m[q] + j), a1 = NN__WINO_LD(m[4 + q] + j), a2 = NN__WINO_LD(m[8 + q] + j),        \
                   a3 = NN__WINO_LD(m[12 + q] + j);                                                                   \
                s0[q] = a0 + a1 + a2;                                                                                 \
                s1[q] = a1 - a2 - a3;                                                                                 \
            }                                                                                                         \
            r[0] = s0[0] + s0[1] + s0[2];                                                                             \
            r[1] = s0[1] - s0[2] - s0[3];                                                                             \
            r[2] = s1[0] + s1[1] + s1[2];                                                                             \
            r[3] = s1[1] - s1[2] - s1[3];                                                                             \
            for (q = 0; q < 4; q++) {                                                                                 \
                if (bias) r[q] = r[q] + bv;                                                                           \
                acc = acc + (r[q] - r[q]); /* 0 while every value is finite */                                        \
            }                                                                                                         \
            __builtin_memcpy(y00 + j, &r[0], sizeof r[0]);                                                            \
            __builtin_memcpy(y01 + j, &r[1], sizeof r[1]);                                                            \
            __builtin_memcpy(y10 + j, &r[2], sizeof r[2]);                                                            \
            __builtin_memcpy(y11 + j, &r[3], sizeof r[3]);                                                            \
        }                                                                                                             \
        __builtin_memcpy(lanes, &acc, sizeof acc);                                                                    \
        for (q = 0; q < (VL); q++) ok &= lanes[q] == 0.0f;                                                            \
        for (; j < n; j++) {                                                                                          \
            float s0[4], s1[4], r[4];                                                                                 \
            for (q = 0; q < 4; q++) {                                                                                 \
                s0[q] = m[q][j] + m[4 + q][j] + m[8 + q][j];                                                          \
                s1[q] = m[4 + q][j] - m[8 + q][j] - m[12 + q][j];                                                     \
            }                                                                                                         \
            r[0] = s0[0] + s0[1] + s0[2];                                                                             \
            r[1] = s0[1] - s0[2] - s0[3];                                                                             \
            r[2] = s1[0] + s1[1] + s1[2];                                                                             \
            r[3] = s1[1] - s1[2] - s1[3];                                                                             \
            for (q = 0; q < 4; q++) {                                                                                 \
                if (bias) r[q] = r[q] + *bias;                                                                        \
                ok &= r[q] - r[q] == 0.0f;                                                                            \
            }                                                                                                         \
            y00[j] = r[0];                                                                                            \
            y01[j] = r[1];                                                                                            \
            y10[j] = r[2];                                                                                            \
            y11[j] = r[3];                                                                                            \
        }                                                                                                             \
        return ok;                                                                                                    \
    }

NN__WINO_DEFINE(generic, , float, 1)
#if NN__GEMM_X86
typedef float nn__wino_v16 __attribute__((vector_size(64)));
typedef float nn__wino_v8 __attribute__((vector_size(32)));
NN__WINO_DEFINE(avx512, __attribute__((target("avx512f"))), nn__wino_v16, 16)
NN__WINO_DEFINE(avx2, __attribute__((target("avx2,fma"))), nn__wino_v8, 8)
#endif
#undef NN__WINO_DEFINE
#undef NN__WINO_LD

static float nn__wino_xat(const float *xr, int W, int ix) { return ix >= 0 && ix < W ? xr[ix] : 0.0f; }

static void nn__wino_deint_generic(const float *xr, int W, int pw, float *E, float *O, int n) {
    int j;
    for (j = 0; j < n; j++) {
        E[j] = nn__wino_xat(xr, W, 2 * j - pw);
        O[j] = nn__wino_xat(xr, W, 2 * j + 1 - pw);
    }
}

static void nn__wino_inter_generic(const float *a, const float *b, float *y, int ow) {
    int j;
    for (j = 0; 2 * j + 1 < ow; j++) {
        y[2 * j] = a[j];
        y[2 * j + 1] = b[j];
    }
    if (2 * j < ow) y[2 * j] = a[j];
}

#if NN__GEMM_X86
static __mmask16 nn__wino_mask(int k) { return (__mmask16)(k >= 16 ? 0xFFFFu : k <= 0 ? 0u : (1u << k) - 1u); }

/* 16 j at a time by masked loads of the 32 columns 2 j - pw .. (zeros past the row's end) */
__attribute__((target("avx512f"))) static void nn__wino_deint_avx512(const float *xr, int W, int pw, float *E, float *O,
                                                                     int n) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    int j = 0;
    for (; j < n && 2 * j - pw < 0; j++) { /* the columns left of the row */
        E[j] = nn__wino_xat(xr, W, 2 * j - pw);
        O[j] = nn__wino_xat(xr, W, 2 * j + 1 - pw);
    }
    for (; j < n; j += 16) {
        int avail = W - (2 * j - pw);
        const float *p = xr + 2 * j - pw;
        __mmask16 st = nn__wino_mask(n - j);
        __m512 v0 = _mm512_maskz_loadu_ps(nn__wino_mask(avail), avail > 0 ? p : xr);
        __m512 v1 = _mm512_maskz_loadu_ps(nn__wino_mask(avail - 16), avail > 16 ? p + 16 : xr);
        _mm512_mask_storeu_ps(E + j, st, _mm512_permutex2var_ps(v0, ie, v1));
        _mm512_mask_storeu_ps(O + j, st, _mm512_permutex2var_ps(v0, io, v1));
    }
}

__attribute__((target("avx512f"))) static void nn__wino_inter_avx512(const float *a, const float *b, float *y, int ow) {
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    int j, na = (ow + 1) / 2;
    for (j = 0; j < na; j += 16) {
        __mmask16 lm = nn__wino_mask(na - j);
        __m512 va = _mm512_maskz_loadu_ps(lm, a + j), vb = _mm512_maskz_loadu_ps(lm, b + j);
        _mm512_mask_storeu_ps(y + 2 * j, nn__wino_mask(ow - 2 * j), _mm512_permutex2var_ps(va, lo, vb));
        if (ow - 2 * j > 16) _mm512_mask_storeu_ps(y + 2 * j + 16, nn__wino_mask(ow - 2 * j - 16), _mm512_permutex2var_ps(va, hi, vb));
    }
}

/* The lanes of the 16 columns p .. p + 15 inside [0, W) */
static __mmask16 nn__wino_cmask(int W, int p) {
    int lo = p < 0 ? -p : 0, hi = W - p < 16 ? W - p : 16;
    return hi <= lo ? (__mmask16)0 : (__mmask16)(nn__wino_mask(hi) & ~nn__wino_mask(lo));
}

/* cols p .. p + 15 of row xr under mask k (zeros elsewhere and for a NULL row); the masked-off
   lanes are not read, so the address is formed as an integer */
__attribute__((target("avx512f"), always_inline)) static inline __m512 nn__wino_ld16(const float *xr, int p, __mmask16 k) {
    if (!xr || !k) return _mm512_setzero_ps();
    return _mm512_maskz_loadu_ps(k, (const float *)((uintptr_t)xr + (uintptr_t)((intptr_t)p * (intptr_t)sizeof(float))));
}

/* B^T down the columns of 4 rows: vcol's adds in vcol's order */
#define NN__WINO_VCOL512(e, a)                                                                                         \
    do {                                                                                                              \
        (e)[0] = _mm512_sub_ps((a)[0], (a)[2]);                                                                       \
        (e)[1] = _mm512_add_ps((a)[1], (a)[2]);                                                                       \
        (e)[2] = _mm512_sub_ps((a)[2], (a)[1]);                                                                       \
        (e)[3] = _mm512_sub_ps((a)[1], (a)[3]);                                                                       \
    } while (0)

/* 16 tiles at a time: the 4 rows' columns p .. p + 47 (p = c0 + 2 j) in three vectors each,
   masked, loaded once (the third only when the run needs column p + 32, the second only past
   p + 15), B^T down the columns, then the even/odd permutes of deint: E, O from columns
   p + 2 j', p + 2 j' + 1 and E1, O1 from the same shifted by 2 */
__attribute__((target("avx512f"))) static void nn__wino_vin_avx512(const float *const *r, int W, int c0, int len,
                                                                   float *e, size_t S) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    int j, q;
    for (j = 0; j < len; j += 16) {
        int p = c0 + 2 * j, n = len - j < 16 ? len - j : 16, need = 2 * n + 2; /* columns p .. p + need - 1 */
        __mmask16 st = nn__wino_mask(n), ka = nn__wino_cmask(W, p);
        __mmask16 kb = need > 16 ? nn__wino_cmask(W, p + 16) : 0, kc = need > 32 ? nn__wino_cmask(W, p + 32) : 0;
        __m512 a[4], b[4], c[4], ea[4], eb[4], ec[4];
        if (need <= 16) { /* a short run (7 tiles at 14x14): one vector a row, one-source permutes */
            const __m512i ie1 = _mm512_add_epi32(ie, _mm512_set1_epi32(2)), io1 = _mm512_add_epi32(io, _mm512_set1_epi32(2));
            for (q = 0; q < 4; q++) a[q] = nn__wino_ld16(r[q], p, ka);
            NN__WINO_VCOL512(ea, a);
            for (q = 0; q < 4; q++) {
                float *o = e + (size_t)(4 * q) * S + j;
                _mm512_mask_storeu_ps(o, st, _mm512_maskz_permutexvar_ps((__mmask16)0xFFFF, ie, ea[q]));
                _mm512_mask_storeu_ps(o + S, st, _mm512_maskz_permutexvar_ps((__mmask16)0xFFFF, io, ea[q]));
                _mm512_mask_storeu_ps(o + 2 * S, st, _mm512_maskz_permutexvar_ps((__mmask16)0xFFFF, ie1, ea[q]));
                _mm512_mask_storeu_ps(o + 3 * S, st, _mm512_maskz_permutexvar_ps((__mmask16)0xFFFF, io1, ea[q]));
            }
            continue;
        }
        for (q = 0; q < 4; q++) {
            a[q] = nn__wino_ld16(r[q], p, ka);
            b[q] = nn__wino_ld16(r[q], p + 16, kb);
            c[q] = nn__wino_ld16(r[q], p + 32, kc);
        }
        NN__WINO_VCOL512(ea, a);
        NN__WINO_VCOL512(eb, b);
        NN__WINO_VCOL512(ec, c);
        for (q = 0; q < 4; q++) {
            float *o = e + (size_t)(4 * q) * S + j;
            /* the window shifted by 2 columns for E1, O1 (maskz: g++ warns on the undefined pass-through) */
            __m512 sa = _mm512_castsi512_ps(
                _mm512_maskz_alignr_epi32((__mmask16)0xFFFF, _mm512_castps_si512(eb[q]), _mm512_castps_si512(ea[q]), 2));
            __m512 sb = _mm512_castsi512_ps(
                _mm512_maskz_alignr_epi32((__mmask16)0xFFFF, _mm512_castps_si512(ec[q]), _mm512_castps_si512(eb[q]), 2));
            _mm512_mask_storeu_ps(o, st, _mm512_permutex2var_ps(ea[q], ie, eb[q]));
            _mm512_mask_storeu_ps(o + S, st, _mm512_permutex2var_ps(ea[q], io, eb[q]));
            _mm512_mask_storeu_ps(o + 2 * S, st, _mm512_permutex2var_ps(sa, ie, sb));
            _mm512_mask_storeu_ps(o + 3 * S, st, _mm512_permutex2var_ps(sa, io, sb));
        }
    }
}

/* 16 lanes (the first n) to a chunk's columns t0 .. t0 + n - 1 of a panelled row p (column t
   at p + (t / nr) P + t % nr): one masked store, two where the lanes cross a panel; the
   addresses are formed as integers (a masked-off lane is not written) */
__attribute__((target("avx512f"), always_inline)) static inline void nn__wino_pst(float *p, int t0, int n, int nr, size_t P,
                                                                                  __m512 v) {
    int c = t0 % nr, in = nr - c;
    uintptr_t a = (uintptr_t)(p + (size_t)(t0 / nr) * P + c);
    if (n <= in) {
        _mm512_mask_storeu_ps((float *)a, nn__wino_mask(n), v);
        return;
    }
    _mm512_mask_storeu_ps((float *)a, nn__wino_mask(in), v);
    a = (uintptr_t)(p + (size_t)(t0 / nr + 1) * P) - (uintptr_t)in * sizeof(float);
    _mm512_mask_storeu_ps((float *)a, (__mmask16)(nn__wino_mask(n) & ~nn__wino_mask(in)), v);
}

/* vin's loads, B^T and permutes, then hrow's adds (in hrow's order) in registers, stored to
   V's panels: no e buffer, no second pass */
__attribute__((target("avx512f"))) static void nn__wino_vinp_avx512(const float *const *r, int W, int c0, int len, float *p,
                                                                    int t0, int nr, size_t P, size_t vsz) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i ie1 = _mm512_add_epi32(ie, _mm512_set1_epi32(2)), io1 = _mm512_add_epi32(io, _mm512_set1_epi32(2));
    int j, q;
    for (j = 0; j < len; j += 16) {
        int pc = c0 + 2 * j, n = len - j < 16 ? len - j : 16, need = 2 * n + 2; /* columns pc .. pc + need - 1 */
        __mmask16 ka = nn__wino_cmask(W, pc);
        __m512 a[4], b[4], c[4], ea[4], eb[4], ec[4];
        for (q = 0; q < 4; q++) a[q] = nn__wino_ld16(r[q], pc, ka);
        NN__WINO_VCOL512(ea, a);
        if (need > 16) {
            __mmask16 kb = nn__wino_cmask(W, pc + 16), kc = need > 32 ? nn__wino_cmask(W, pc + 32) : 0;
            for (q = 0; q < 4; q++) {
                b[q] = nn__wino_ld16(r[q], pc + 16, kb);
                c[q] = nn__wino_ld16(r[q], pc + 32, kc);
            }
            NN__WINO_VCOL512(eb, b);
            NN__WINO_VCOL512(ec, c);
        }
        for (q = 0; q < 4; q++) {
            __m512 E, O, E1, O1;
            float *o = p + (size_t)(4 * q) * vsz;
            if (need <= 16) { /* a short run (7 tiles at 14x14): one vector a row, one-source permutes */
                E = _mm512_maskz_permutexvar_ps((__mmask16)0xFFFF, ie, ea[q]);
                O = _mm512_maskz_permutexvar_ps((__mmask16)0xFFFF, io, ea[q]);
                E1 = _mm512_maskz_permutexvar_ps((__mmask16)0xFFFF, ie1, ea[q]);
                O1 = _mm512_maskz_permutexvar_ps((__mmask16)0xFFFF, io1, ea[q]);
            } else {
                /* the window shifted by 2 columns for E1, O1 (maskz: g++ warns on the undefined pass-through) */
                __m512 sa = _mm512_castsi512_ps(
                    _mm512_maskz_alignr_epi32((__mmask16)0xFFFF, _mm512_castps_si512(eb[q]), _mm512_castps_si512(ea[q]), 2));
                __m512 sb = _mm512_castsi512_ps(
                    _mm512_maskz_alignr_epi32((__mmask16)0xFFFF, _mm512_castps_si512(ec[q]), _mm512_castps_si512(eb[q]), 2));
                E = _mm512_permutex2var_ps(ea[q], ie, eb[q]);
                O = _mm512_permutex2var_ps(ea[q], io, eb[q]);
                E1 = _mm512_permutex2var_ps(sa, ie, sb);
                O1 = _mm512_permutex2var_ps(sa, io, sb);
            }
            nn__wino_pst(o, t0 + j, n, nr, P, _mm512_sub_ps(E, E1));
            nn__wino_pst(o + vsz, t0 + j, n, nr, P, _mm512_add_ps(O, E1));
            nn__wino_pst(o + 2 * vsz, t0 + j, n, nr, P, _mm512_sub_ps(E1, O));
            nn__wino_pst(o + 3 * vsz, t0 + j, n, nr, P, _mm512_sub_ps(O, O1));
        }
    }
}

/* orow's arithmetic on 16 tiles at a time (the same adds in the same order), its four rows
   interleaved straight into y by run: a run's lanes a .. b - 1 of the vector are its tiles
   j + a - off .., output columns 2 (tw0 + that) on; no buffer, no second pass */
__attribute__((target("avx512f"))) static int nn__wino_oscat_avx512(const float *const *m, int n,
                                                                    const nn__wino_seg *sg, int ns, float *y,
                                                                    size_t ys, int OH, int OW, const float *bias) {
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    __m512 acc = _mm512_setzero_ps(), bv = _mm512_set1_ps(bias ? *bias : 0.0f);
    int j, q, s = 0, t;
    for (j = 0; j < n; j += 16) {
        __mmask16 k = nn__wino_mask(n - j);
        __m512 s0[4], s1[4], r[4];
        for (q = 0; q < 4; q++) {
            __m512 a0 = _mm512_maskz_loadu_ps(k, m[q] + j), a1 = _mm512_maskz_loadu_ps(k, m[4 + q] + j);
            __m512 a2 = _mm512_maskz_loadu_ps(k, m[8 + q] + j), a3 = _mm512_maskz_loadu_ps(k, m[12 + q] + j);
            s0[q] = _mm512_add_ps(_mm512_add_ps(a0, a1), a2);
            s1[q] = _mm512_sub_ps(_mm512_sub_ps(a1, a2), a3);
        }
        r[0] = _mm512_add_ps(_mm512_add_ps(s0[0], s0[1]), s0[2]);
        r[1] = _mm512_sub_ps(_mm512_sub_ps(s0[1], s0[2]), s0[3]);
        r[2] = _mm512_add_ps(_mm512_add_ps(s1[0], s1[1]), s1[2]);
        r[3] = _mm512_sub_ps(_mm512_sub_ps(s1[1], s1[2]), s1[3]);
        for (q = 0; q < 4; q++) {
            if (bias) r[q] = _mm512_add_ps(r[q], bv);
            acc = _mm512_add_ps(acc, _mm512_sub_ps(r[q], r[q])); /* 0 while every value is finite */
        }
        while (s < ns && sg[s].off + sg[s].len <= j) s++;
        for (t = s; t < ns && sg[t].off < j + 16; t++) {
            int a = sg[t].off > j ? sg[t].off - j : 0, b = sg[t].off + sg[t].len - j < 16 ? sg[t].off + sg[t].len - j : 16;
            int c = 2 * (sg[t].tw0 + j + a - sg[t].off), nout = 2 * (b - a) < OW - c ? 2 * (b - a) : OW - c;
            float *y0 = y + (size_t)sg[t].n * ys + (size_t)(2 * sg[t].th) * OW + c;
            __m512i ia = _mm512_set1_epi32(a), il = _mm512_add_epi32(lo, ia), ih = _mm512_add_epi32(hi, ia);
            _mm512_mask_storeu_ps(y0, nn__wino_mask(nout), _mm512_permutex2var_ps(r[0], il, r[1]));
            if (nout > 16) _mm512_mask_storeu_ps(y0 + 16, nn__wino_mask(nout - 16), _mm512_permutex2var_ps(r[0], ih, r[1]));
            if (2 * sg[t].th + 1 < OH) {
                _mm512_mask_storeu_ps(y0 + OW, nn__wino_mask(nout), _mm512_permutex2var_ps(r[2], il, r[3]));
                if (nout > 16)
                    _mm512_mask_storeu_ps(y0 + OW + 16, nn__wino_mask(nout - 16), _mm512_permutex2var_ps(r[2], ih, r[3]));
            }
        }
    }
    return _mm512_cmp_ps_mask(acc, _mm512_setzero_ps(), _CMP_EQ_OQ) == (__mmask16)0xFFFF;
}
#undef NN__WINO_VCOL512
#endif

static const nn__wino_fns *nn__wino_forced; /* nn__wino_force's transforms; NULL: the CPU's */

/* The transforms of name (generic, avx2, avx512) where this CPU runs them, else NULL; name
   NULL: the best this CPU runs */
static const nn__wino_fns *nn__wino_table(const char *name) {
    static const nn__wino_fns generic = {nn__wino_vcol_generic, nn__wino_hrow_generic, nn__wino_orow_generic,
                                         nn__wino_deint_generic, nn__wino_inter_generic, NULL, NULL, NULL};
#if NN__GEMM_X86
    static const nn__wino_fns avx512 = {nn__wino_vcol_avx512, nn__wino_hrow_avx512, nn__wino_orow_avx512,
                                        nn__wino_deint_avx512, nn__wino_inter_avx512, nn__wino_vin_avx512,
                                        nn__wino_oscat_avx512, nn__wino_vinp_avx512};
    static const nn__wino_fns avx2 = {nn__wino_vcol_avx2, nn__wino_hrow_avx2, nn__wino_orow_avx2, nn__wino_deint_generic,
                                      nn__wino_inter_generic, NULL, NULL, NULL};
    if (nn__vm_isa() == 2 && (!name || !strcmp(name, "avx512"))) return &avx512;
    if (nn__vm_isa() >= 1 && (!name || !strcmp(name, "avx2"))) return &avx2;
#endif
    return !name || !strcmp(name, "generic") ? &generic : NULL;
}

static const nn__wino_fns *nn__wino_pick(void) { return nn__wino_forced ? nn__wino_forced : nn__wino_table(NULL); }

/* A test hook (tests/test_conv_algo.c): the transforms of name for every Winograd run from
   now on, NULL: the CPU's own again; 0 where this CPU cannot run them (nothing changes).
   Every instruction set gives the same bits (above), which the test holds them to. */
static NN__MAYBE_UNUSED int nn__wino_force(const char *name) {
    const nn__wino_fns *f = name ? nn__wino_table(name) : NULL;
    if (name && !f) return 0;
    nn__wino_forced = f;
    return 1;
}

/* U_xi [Co, Ci] = (G g G^T)[xi] of every filter g: w [Co, Ci, 3, 3] (op 0) or, for dx, w
   [Ci, Co, 3, 3] flipped (g[a][b] = w[ci][co][2 - a][2 - b]); u holds 16 matrices of Co*Ci, L->umat apart */
static void nn__wino_filter(const nn__wino *L, int op, const float *w, float *u) {
    int co, ci, o, q, i, a;
    size_t mat = L->umat;
    /* w read in order: ci inner for the forward's [Co, Ci, 3, 3], co inner for dx's [Ci, Co] */
    for (o = 0; o < (op == 0 ? L->Co : L->Ci); o++)
        for (q = 0; q < (op == 0 ? L->Ci : L->Co); q++) {
            float g[3][3], t[4][3];
            const float *src;
            co = op == 0 ? o : q;
            ci = op == 0 ? q : o;
            src = op == 0 ? w + ((size_t)co * L->Ci + ci) * 9 : w + ((size_t)ci * L->Co + co) * 9;
            for (i = 0; i < 3; i++)
                for (a = 0; a < 3; a++) g[i][a] = op == 0 ? src[i * 3 + a] : src[(2 - i) * 3 + 2 - a];
            for (a = 0; a < 3; a++) { /* t = G g */
                t[0][a] = g[0][a];
                t[1][a] = 0.5f * (g[0][a] + g[1][a] + g[2][a]);
                t[2][a] = 0.5f * (g[0][a] - g[1][a] + g[2][a]);
                t[3][a] = g[2][a];
            }
            for (i = 0; i < 4; i++) { /* U = t G^T */
                float *d = u + (size_t)(4 * i) * mat + (size_t)co * L->Ci + ci;
                d[0] = t[i][0];
                d[mat] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
                d[2 * mat] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
                d[3 * mat] = t[i][2];
            }
        }
}

typedef struct nn__wino_job {
    const nn__wino *L;
    const nn__wino_fns *fn;
    const float *x, *b, *upk;
    float *y, *bufs, *bad; /* bad[t]: task t wrote an output that is not finite */
    int64_t nchunks;
    int64_t next; /* the next chunk to take (nn__take_next) */
} nn__wino_job;

/* The runs of tiles [t0, t1) (at most t1 - t0 of them); their count */
static int nn__wino_segs(const nn__wino *L, int64_t t0, int64_t t1, nn__wino_seg *sg) {
    int64_t q = t0;
    int ns = 0;
    while (q < t1) {
        int64_t r = q / L->TW;
        int tw0 = (int)(q % L->TW), len = (int)(t1 - q < L->TW - tw0 ? t1 - q : L->TW - tw0);
        sg[ns].n = (int)(r / L->TH);
        sg[ns].th = (int)(r % L->TH);
        sg[ns].tw0 = tw0;
        sg[ns].len = len;
        sg[ns].off = (int)(q - t0);
        ns++;
        q += len;
    }
    return ns;
}

/* Element (ci, t) of a chunk's V_xi in the microkernel's column panels: K blocks of kc rows,
   each a run of [kcb][nr] panels */
static float *nn__wino_vp(const nn__wino *L, float *v, int ci, int t) {
    int nr = L->arch->nr, pc = ci / L->kc * L->kc, kcb = L->Ci - pc < L->kc ? L->Ci - pc : L->kc;
    return v + (size_t)pc * L->ntp + (size_t)(t / nr) * kcb * nr + (size_t)(ci - pc) * nr + t % nr;
}

/* One chunk's input transform: tiles [t0, t1) of every input channel into V's panels. d: the
   4 input rows of each tile, their columns 2 tw, 2 tw + 1, 2 tw + 2, 2 tw + 3 as 4 rows of the
   chunk's tiles, [4][4][S]; e: B^T d, alike */
static void nn__wino_input(const nn__wino_job *J, const nn__wino_seg *sg, int ns, int lc, float *v, float *d) {
    const nn__wino *L = J->L;
    int nr = L->arch->nr, S = L->S, ci, i, xi, jr, t, s;
    float *e = d + 16 * (size_t)S;
    for (ci = 0; ci < L->Ci; ci++) {
#if NN__GEMM_X86
        if (ci + 1 < L->Ci) /* the next channel's rows for this chunk: its runs jump between planes */
            for (s = 0; s < ns; s++) {
                int r0 = 2 * sg[s].th - L->ph, r1 = r0 + 4;
                const char *p, *pe;
                if (r0 < 0) r0 = 0;
                if (r1 > L->H) r1 = L->H;
                if (s > 0 && sg[s - 1].n == sg[s].n && sg[s - 1].th + 1 == sg[s].th && r0 < r1 - 2) r0 = r1 - 2;
                p = (const char *)(J->x + (((size_t)sg[s].n * L->Ci + ci + 1) * L->H + (size_t)r0) * L->W);
                pe = (const char *)(J->x + (((size_t)sg[s].n * L->Ci + ci + 1) * L->H + (size_t)r1) * L->W);
                for (; p < pe; p += 64) __builtin_prefetch(p, 0, 3);
            }
#endif
        for (s = 0; s < ns; s++) { /* a run of tiles along one tile row */
            int th = sg[s].th, tw0 = sg[s].tw0, len = sg[s].len;
            size_t off = (size_t)sg[s].off;
            const float *xc = J->x + ((size_t)sg[s].n * L->Ci + ci) * L->H * (size_t)L->W;
            if (J->fn->vinp) { /* vcol, deint and hrow in one pass, into the panels */
                const float *rows[4];
                int pc = ci / L->kc * L->kc, kcb = L->Ci - pc < L->kc ? L->Ci - pc : L->kc;
                for (i = 0; i < 4; i++) {
                    int iy = 2 * th - L->ph + i;
                    rows[i] = iy < 0 || iy >= L->H ? NULL : xc + (size_t)iy * L->W;
                }
                J->fn->vinp(rows, L->W, 2 * tw0 - L->pw, len, nn__wino_vp(L, v, ci, 0), (int)off, nr, (size_t)kcb * nr, L->vsz);
                continue;
            }
            if (J->fn->vin) { /* vcol and deint in one pass */
                const float *rows[4];
                for (i = 0; i < 4; i++) {
                    int iy = 2 * th - L->ph + i;
                    rows[i] = iy < 0 || iy >= L->H ? NULL : xc + (size_t)iy * L->W;
                }
                J->fn->vin(rows, L->W, 2 * tw0 - L->pw, len, e + off, (size_t)S);
                continue;
            }
            for (i = 0; i < 4; i++) { /* input row 2 th - ph + i */
                int iy = 2 * th - L->ph + i, k;
                float *D = d + (size_t)(4 * i) * S + off;
                if (iy < 0 || iy >= L->H)
                    for (k = 0; k < 4; k++) memset(D + (size_t)k * S, 0, (size_t)len * sizeof(float));
                else {
                    const float *xr = xc + (size_t)iy * L->W;
                    J->fn->deint(xr, L->W, L->pw - 2 * tw0, D, D + S, len);
                    J->fn->deint(xr, L->W, L->pw - 2 * tw0 - 2, D + 2 * (size_t)S, D + 3 * (size_t)S, len);
                }
            }
        }
        if (J->fn->vinp) {
            if (lc % nr) /* the last panel's columns past the chunk: zeros, not stale scratch */
                for (xi = 0; xi < 16; xi++)
                    for (t = lc; t < (lc + nr - 1) / nr * nr; t++) *nn__wino_vp(L, v + (size_t)xi * L->vsz, ci, t) = 0.0f;
            continue;
        }
        if (!J->fn->vin)
            J->fn->vcol(d, d + 4 * (size_t)S, d + 8 * (size_t)S, d + 12 * (size_t)S, e, e + 4 * (size_t)S,
                        e + 8 * (size_t)S, e + 12 * (size_t)S, 4 * S);
        for (jr = 0; jr < lc; jr += nr) { /* one panel's run of columns at a time */
            int len = lc - jr < nr ? lc - jr : nr;
            float *p0 = nn__wino_vp(L, v, ci, jr); /* V_xi's element is p0 + xi vsz (its divisions once, not 16 times) */
            for (i = 0; i < 4; i++) {
                const float *E = e + (size_t)(4 * i) * S + jr;
                float *o[4];
                for (xi = 0; xi < 4; xi++) o[xi] = p0 + (size_t)(4 * i + xi) * L->vsz;
                J->fn->hrow(E, E + S, E + 2 * (size_t)S, E + 3 * (size_t)S, o[0], o[1], o[2], o[3], len);
            }
            if (len < nr) /* the last panel's columns past the chunk: zeros, not stale scratch */
                for (xi = 0; xi < 16; xi++)
                    for (t = jr + len; t < jr + nr; t++) *nn__wino_vp(L, v + (size_t)xi * L->vsz, ci, t) = 0.0f;
        }
    }
}

/* One chunk's output transform: M [16][Cop, ntp] to y (+ bias); whether every output is finite */
static int nn__wino_output(const nn__wino_job *J, const nn__wino_seg *sg, int ns, int lc, const float *m, float *ob,
                           int co0, int co1) {
    const nn__wino *L = J->L;
    int S = L->S, co, xi, ok = 1, s;
    for (co = co0; co < co1; co++) {
        const float *mp[16];
        for (xi = 0; xi < 16; xi++) mp[xi] = m + (size_t)xi * L->msz + (size_t)co * L->ntp;
        if (J->fn->oscat) {
            size_t plane = (size_t)L->OH * L->OW;
            ok &= J->fn->oscat(mp, lc, sg, ns, J->y + (size_t)co * plane, (size_t)L->Co * plane, L->OH, L->OW,
                               J->b ? J->b + co : NULL);
            continue;
        }
        ok &= J->fn->orow(mp, ob, ob + S, ob + 2 * (size_t)S, ob + 3 * (size_t)S, lc, J->b ? J->b + co : NULL);
        for (s = 0; s < ns; s++) {
            int th = sg[s].th, tw0 = sg[s].tw0, len = sg[s].len;
            int ow = L->OW - 2 * tw0 < 2 * len ? L->OW - 2 * tw0 : 2 * len;
            size_t off = (size_t)sg[s].off;
            float *y0 = J->y + (((size_t)sg[s].n * L->Co + co) * L->OH + 2 * th) * (size_t)L->OW + 2 * tw0;
            J->fn->inter(ob + off, ob + S + off, y0, ow);
            if (2 * th + 1 < L->OH) J->fn->inter(ob + 2 * (size_t)S + off, ob + 3 * (size_t)S + off, y0 + L->OW, ow);
        }
    }
    return ok;
}

static void nn__wino_task(void *arg, int t, int n_tasks) {
    nn__wino_job *J = (nn__wino_job *)arg;
    const nn__wino *L = J->L;
    const nn__gemm_arch *arch = L->arch;
    int mr = L->mr, nr = arch->nr, xi, pc, jr, ir;
    int64_t ch;
    float *v = nn__gemm_align(J->bufs + L->per_task * (size_t)t), *m = v + 16 * L->vsz, *d = m + 16 * L->msz;
    nn__wino_seg sg[NN__WINO_TILES];
    (void)n_tasks;
    J->bad[t] = 0.0f;
    /* chunks taken one at a time, not a range a task: a thread that starts late or runs
       slower takes fewer (each chunk's outputs are its own, so the same bits) */
    while ((ch = nn__take_next(&J->next)) < J->nchunks) {
        int64_t t0 = ch * L->lc, t1 = t0 + L->lc < L->ntiles ? t0 + L->lc : L->ntiles;
        int lc = (int)(t1 - t0), ns = nn__wino_segs(L, t0, t1, sg);
        nn__wino_input(J, sg, ns, lc, v, d);
        /* a row tile of M at a time, all 16 products, then its output transform: the
           tile's 16 x mr rows of M are still in L1 when it is read (M of all Co rows, 16
           Cop ntp floats, is 384 KB at 64 channels and 96 tiles, past L1 and half of L2) */
        for (ir = 0; ir < L->Cop; ir += mr) {
            for (xi = 0; xi < 16; xi++) {
                const float *u = J->upk + (size_t)xi * L->usz, *vx = v + (size_t)xi * L->vsz;
                float *mx = m + (size_t)xi * L->msz;
                for (pc = 0; pc < L->Ci; pc += L->kc) {
                    int kc = L->Ci - pc < L->kc ? L->Ci - pc : L->kc;
                    float beta = pc == 0 ? 0.0f : 1.0f;
                    for (jr = 0; jr < lc; jr += nr)
                        L->ukr(kc, u + (size_t)pc * L->Cop + (size_t)ir * kc, vx + (size_t)pc * L->ntp + (size_t)jr * kc,
                               mx + (size_t)ir * L->ntp + jr, L->ntp, 1.0f, beta);
                }
            }
            if (ir < L->Co && !nn__wino_output(J, sg, ns, lc, m, d, ir, ir + mr < L->Co ? ir + mr : L->Co)) J->bad[t] = 1.0f;
        }
    }
}

/* op 0: y [N, K, OH, OW] = conv(x, w) + b (b may be NULL); op 1: y = dx [N, C, H, W] from x =
   dy [N, K, OH, OW] (b NULL). scratch from nn__wino_scratch(c, op, T). Returns 0 when an
   output is not finite: the caller computes the node again by the implicit GEMM. */
static int nn__wino_run(nn__threadpool *pool, const nn__conv2d *c, int op, int T, float *y, const float *x,
                         const float *w, const float *b, float *scratch) {
    nn__wino L;
    nn__wino_job J;
    float *upk, *u;
    int xi, pc, tasks, t;
    nn__wino_layout(c, op, T, &L);
    upk = nn__gemm_align(scratch);
    u = upk + 16 * L.usz;
    nn__wino_filter(&L, op, w, u);
    for (xi = 0; xi < 16; xi++)
        for (pc = 0; pc < L.Ci; pc += L.kc) {
            int kc = L.Ci - pc < L.kc ? L.Ci - pc : L.kc;
            L.arch->pack_a(0, u + (size_t)xi * L.umat, L.Ci, 0, L.Co, pc, kc, L.mr,
                           upk + (size_t)xi * L.usz + (size_t)pc * L.Cop);
        }
    memset(&J, 0, sizeof J);
    J.L = &L;
    J.fn = nn__wino_pick();
    J.x = x;
    J.b = b;
    J.upk = upk;
    J.y = y;
    J.bufs = scratch + L.upk;
    J.nchunks = (L.ntiles + L.lc - 1) / L.lc;
    tasks = L.T < nn__threadpool_size(pool) ? L.T : nn__threadpool_size(pool);
    if ((double)L.ntiles * 16.0 * L.Ci * L.Co < (double)NN__PAR_MIN * 8) tasks = 1;
    if (tasks > J.nchunks) tasks = (int)J.nchunks;
    if (tasks < 1) tasks = 1;
    J.bad = scratch + L.upk + L.per_task * (size_t)L.T;
    nn__threadpool_run(pool, nn__wino_task, &J, tasks);
    for (t = 0; t < tasks; t++)
        if (J.bad[t] != 0.0f) return 0;
    return 1;
}

/* The CPU backend's algorithm for a convolution that is not depthwise, op 0 forward, 1 dx,
   2 dw. NN_CONV_ALGO (read when a graph is compiled): im2col forces the im2col path, gemm
   the implicit GEMM, winograd Winograd wherever it applies (forward and dx); by default
   Winograd where it applies and both channel counts are at least NN__WINO_MIN_CH (a first
   layer's 1 or 3 channels leave the products too thin), else the implicit GEMM. */
#define NN__WINO_MIN_CH 16
static int nn__conv_cpu_algo(const nn__conv2d *c, int op) {
    const char *e = getenv("NN_CONV_ALGO");
    if (e && !strcmp(e, "im2col")) return NN__CONV_GEMM;
    if ((e && !strcmp(e, "gemm")) || op == 2 || !nn__wino_fits(c)) return NN__CONV_IMPLICIT;
    if (e && !strcmp(e, "winograd")) return NN__CONV_WINOGRAD;
    return c->C >= NN__WINO_MIN_CH && c->K >= NN__WINO_MIN_CH ? NN__CONV_WINOGRAD : NN__CONV_IMPLICIT;
}
