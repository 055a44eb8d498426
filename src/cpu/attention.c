/* The attention family's CPU loops (src/ops/attention.c's bodies; kernels/attention.cl has
   the OpenCL twins): flash attention, blocked over tiles of NN__ATTN_BR queries x
   NN__ATTN_BC keys and threaded over (batch, head, query block) for the forward and dQ, over
   (batch, key/value head, key block) for dK/dV, over (batch, key/value head) for the
   one-pass backward (dQ, dK and dV together). Each work unit is computed by one task in a
   fixed order whatever the thread count, so the bits do not depend on it; no [Tq, Tk]
   matrix: a task's working memory is a few tiles (nn__attn_ws_floats), and in the forward
   K^T of one head (Tk x D). A masked score is
   -inf in the tiles and its weight exactly 0. The tile products run on the GEMM's
   microkernels (nn__sgemm_ws) or AVX-512 ones of their own, the exponentials on
   nn__vexp_map. */

#define NN__ATTN_BR 64 /* query rows of a tile */
#define NN__ATTN_BC 64 /* keys of a tile */
#define NN__ATTN_ALL (1 << 28) /* a bound of nn__attn_krange / diag that bounds nothing */
#ifndef NN__ATTN_KHEAD
#define NN__ATTN_KHEAD (1 << 22) /* the most floats of a head's K^T the forward packs whole (16 MiB a task) */
#endif

/* the backward's passes where dq, dk and dv are all wanted: 1 one pass when it fills the
   threads (nn__attn_one_pass_fits), 0 always the dK/dV pass then the dQ pass, 2 always one
   pass (the same bits either way; tests compare them) */
static int nn__attn_one_pass = 1;

/* 1: a causal mask's zero weights inside a tile are not computed (the AVX-512 path); 0:
   the whole tile, as the GEMM path (tests compare the two) */
static int nn__attn_causal_skip = 1;

typedef struct nn__attn_job {
    nn__attn_attr a;
    int64_t qs[3], ks[3]; /* strides of q (and dq) and of k (and dk) over batch, head, row */
    int64_t vs[3], os[3]; /* of v (and dv) and of o (and dout, the output): v's head dim Dv */
    int64_t dqs[3], dks[3], dvs[3]; /* of dq, dk and dv where they differ from q's, k's, v's (views, nn__attn_views) */
    const float *q, *k, *v, *mask, *kpm, *o, *lse, *dout, *delta;
    float *out, *out_lse, *dq, *dk, *dv, *dmask;
    uint64_t seed, step;
    int64_t units, per; /* work units, and per task */
    float *ws;          /* per task: ws_floats */
    int64_t ws_floats;  /* nn__attn_ws_floats(max(D, Dv)), and the forward's K^T of a head (khead) */
    int khead;          /* the forward packs K^T of a head once (AVX-512, up to NN__ATTN_KHEAD floats) */
    int kind;           /* 0 forward, 1 dq, 2 dkv, 3 d(mask), 4 dq, dk and dv in one pass */
    int avx512;         /* the AVX-512 microkernels (else the GEMM) */
} nn__attn_job;

/* floats of one task's working memory, W = max(D, Dv): two [BR, BC] tiles (S then P, dP
   then dS), an [BR, W] accumulator and two row stats, [BC, W] dK and dV accumulators, two
   transposed [W, BC] tiles (K and V); the mask's gradient uses three tiles and the
   transposed ones */
static int64_t nn__attn_ws_floats(int W) {
    return 3 * NN__ATTN_BR * NN__ATTN_BC + (int64_t)NN__ATTN_BR * W + 2 * NN__ATTN_BR + 4 * (int64_t)NN__ATTN_BC * W + 16;
}
static int nn__attn_w(const nn__attn_attr *a) { return a->D > a->Dv ? a->D : a->Dv; }

/* ---- the tile products: AVX-512 microkernels (4 rows x 64 columns in 16 registers, no
   packing but K's or V's tile transposed once) where the CPU has AVX-512F, else the CPU
   backend's GEMM (src/cpu/gemm.c, on the calling thread, packing in the task's gw). Either
   way one K block, so each element's sum has a fixed order. ---- */

#if defined(NN__VM_X86)
#define NN__ATTN_TGT __attribute__((target("avx512f")))
/* the register tiles' loops unrolled whole, so their arrays live in registers */
#define NN__ATTN_UNROLL _Pragma("GCC unroll 16")
NN__ATTN_TGT static inline __mmask16 nn__attn_m16(int k) { return (__mmask16)(k >= 16 ? 0xFFFFu : (1u << k) - 1u); }

/* S [nr, BC] = alpha X Yt, Yt [D, BC] (the columns past nc 0); rows 4 at a time in 16
   named registers, then one at a time. Under a causal mask row r needs only the columns
   c < r + diag (nn__attn_diag): a row group computes the 16-wide column vectors up to its
   last row's bound and stores zeros past them, each computed column's sum the same chain
   of FMAs as without the bound. */
#define NN__ATTN_ABT512(R, W)                                                                        \
    do {                                                                                             \
        __m512 acc[R][W], y[W], v;                                                                   \
        int i_, w_;                                                                                  \
        NN__ATTN_UNROLL                                                                              \
        for (i_ = 0; i_ < R; i_++)                                                                   \
            NN__ATTN_UNROLL                                                                          \
            for (w_ = 0; w_ < W; w_++) acc[i_][w_] = _mm512_setzero_ps();                            \
        for (d = 0; d < D; d++) {                                                                    \
            const float *yt = Yt + (int64_t)d * NN__ATTN_BC;                                         \
            NN__ATTN_UNROLL                                                                          \
            for (w_ = 0; w_ < W; w_++) y[w_] = _mm512_loadu_ps(yt + 16 * w_);                        \
            NN__ATTN_UNROLL                                                                          \
            for (i_ = 0; i_ < R; i_++) {                                                             \
                v = _mm512_set1_ps(x[(r0 + i_) * xs + d]);                                           \
                NN__ATTN_UNROLL                                                                      \
                for (w_ = 0; w_ < W; w_++) acc[i_][w_] = _mm512_fmadd_ps(v, y[w_], acc[i_][w_]);     \
            }                                                                                        \
        }                                                                                            \
        NN__ATTN_UNROLL                                                                              \
        for (i_ = 0; i_ < R; i_++)                                                                   \
            NN__ATTN_UNROLL                                                                                                     \
            for (w_ = 0; w_ < W; w_++) _mm512_storeu_ps(S + (r0 + i_) * NN__ATTN_BC + 16 * w_, _mm512_mul_ps(acc[i_][w_], va)); \
    } while (0)

/* zeros in columns [16 W, BC) of rows r0..r0+R-1 of S */
#define NN__ATTN_ZERO_PAST(R, W)                                                                     \
    do {                                                                                             \
        int i_, w_;                                                                                  \
        for (i_ = 0; i_ < R; i_++)                                                                   \
            for (w_ = W; w_ < 4; w_++) _mm512_storeu_ps(S + (r0 + i_) * NN__ATTN_BC + 16 * w_, _mm512_setzero_ps()); \
    } while (0)

/* the 16-wide column vectors that rows up to r_last need, 0 to 4 */
static int nn__attn_vecs(int r_last, int diag) {
    int n = r_last + diag;
    return n <= 0 ? 0 : n >= NN__ATTN_BC ? 4 : (n + 15) / 16;
}

NN__ATTN_TGT static void nn__attn_abt512(float *S, const float *x, int64_t xs, int nr, const float *Yt, int D, float alpha, int diag) {
    __m512 va = _mm512_set1_ps(alpha);
    int r0 = 0, d;
    for (; r0 + 4 <= nr; r0 += 4) {
        const float *x0 = x + r0 * xs, *x1 = x0 + xs, *x2 = x1 + xs, *x3 = x2 + xs;
        float *s0 = S + r0 * NN__ATTN_BC, *s1 = s0 + NN__ATTN_BC, *s2 = s1 + NN__ATTN_BC, *s3 = s2 + NN__ATTN_BC;
        __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00;
        __m512 a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;
        int W = nn__attn_vecs(r0 + 3, diag);
        if (W < 4) {
            switch (W) {
            case 3: NN__ATTN_ABT512(4, 3); break;
            case 2: NN__ATTN_ABT512(4, 2); break;
            case 1: NN__ATTN_ABT512(4, 1); break;
            default: break;
            }
            NN__ATTN_ZERO_PAST(4, W);
            continue;
        }
        for (d = 0; d < D; d++) {
            const float *yt = Yt + (int64_t)d * NN__ATTN_BC;
            __m512 y0 = _mm512_loadu_ps(yt), y1 = _mm512_loadu_ps(yt + 16), y2 = _mm512_loadu_ps(yt + 32), y3 = _mm512_loadu_ps(yt + 48), v;
#define NN__ATTN_R(XP, X0, X1, X2, X3)      \
    v = _mm512_set1_ps(XP[d]);              \
    X0 = _mm512_fmadd_ps(v, y0, X0);        \
    X1 = _mm512_fmadd_ps(v, y1, X1);        \
    X2 = _mm512_fmadd_ps(v, y2, X2);        \
    X3 = _mm512_fmadd_ps(v, y3, X3)
            NN__ATTN_R(x0, a00, a01, a02, a03);
            NN__ATTN_R(x1, a10, a11, a12, a13);
            NN__ATTN_R(x2, a20, a21, a22, a23);
            NN__ATTN_R(x3, a30, a31, a32, a33);
        }
#define NN__ATTN_ST(SP, X0, X1, X2, X3)                                                                           \
    _mm512_storeu_ps(SP, _mm512_mul_ps(X0, va)), _mm512_storeu_ps(SP + 16, _mm512_mul_ps(X1, va)),                \
        _mm512_storeu_ps(SP + 32, _mm512_mul_ps(X2, va)), _mm512_storeu_ps(SP + 48, _mm512_mul_ps(X3, va))
        NN__ATTN_ST(s0, a00, a01, a02, a03);
        NN__ATTN_ST(s1, a10, a11, a12, a13);
        NN__ATTN_ST(s2, a20, a21, a22, a23);
        NN__ATTN_ST(s3, a30, a31, a32, a33);
    }
    for (; r0 < nr; r0++) {
        const float *x0 = x + r0 * xs;
        float *s0 = S + r0 * NN__ATTN_BC;
        __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
        int W = nn__attn_vecs(r0, diag);
        if (W < 4) {
            switch (W) {
            case 3: NN__ATTN_ABT512(1, 3); break;
            case 2: NN__ATTN_ABT512(1, 2); break;
            case 1: NN__ATTN_ABT512(1, 1); break;
            default: break;
            }
            NN__ATTN_ZERO_PAST(1, W);
            continue;
        }
        for (d = 0; d < D; d++) {
            const float *yt = Yt + (int64_t)d * NN__ATTN_BC;
            __m512 y0 = _mm512_loadu_ps(yt), y1 = _mm512_loadu_ps(yt + 16), y2 = _mm512_loadu_ps(yt + 32), y3 = _mm512_loadu_ps(yt + 48), v;
            NN__ATTN_R(x0, a00, a01, a02, a03);
        }
        NN__ATTN_ST(s0, a00, a01, a02, a03);
    }
#undef NN__ATTN_R
#undef NN__ATTN_ST
}
#undef NN__ATTN_ZERO_PAST
#undef NN__ATTN_ABT512

/* the terms [klo, khi) of a sum over K that rows r0..r0+R-1 of a product need: from
   r0 + klo_off, to the last row + khi_off (NN__ATTN_ALL: no bound) */
static void nn__attn_krange(int r0, int R, int K, int klo_off, int khi_off, int *klo, int *khi) {
    *klo = r0 + klo_off > 0 ? r0 + klo_off : 0;
    *khi = r0 + R - 1 + khi_off < K ? r0 + R - 1 + khi_off : K;
}

/* C [M, N] += A B, A(r, c) = A[r ars + c acs], over columns [n0, n0 + 16 W) (the last
   vector masked by km), rows r0..r0+R-1, c in order over [klo, khi) (nn__attn_krange: the
   terms of a causal mask's zero weights left out) */
#define NN__ATTN_AB512(R, W)                                                                    \
    do {                                                                                        \
        __m512 acc[R][W], bv[W], av;                                                            \
        int i_, w_, c_, klo_, khi_;                                                             \
        NN__ATTN_UNROLL                                                                         \
        for (i_ = 0; i_ < R; i_++)                                                              \
            NN__ATTN_UNROLL                                                                     \
            for (w_ = 0; w_ < W; w_++)                                                          \
                acc[i_][w_] = _mm512_maskz_loadu_ps(w_ == W - 1 ? km : 0xFFFF, C + (r0 + i_) * ldc + n0 + 16 * w_); \
        nn__attn_krange(r0, R, K, klo_off, khi_off, &klo_, &khi_);                              \
        for (c_ = klo_; c_ < khi_; c_++) {                                                      \
            const float *br = B + c_ * ldb + n0, *ar = A + r0 * ars + c_ * acs;                 \
            NN__ATTN_UNROLL                                                                                     \
            for (w_ = 0; w_ < W; w_++) bv[w_] = _mm512_maskz_loadu_ps(w_ == W - 1 ? km : 0xFFFF, br + 16 * w_); \
            NN__ATTN_UNROLL                                                                     \
            for (i_ = 0; i_ < R; i_++) {                                                        \
                av = _mm512_set1_ps(ar[i_ * ars]);                                              \
                NN__ATTN_UNROLL                                                                    \
                for (w_ = 0; w_ < W; w_++) acc[i_][w_] = _mm512_fmadd_ps(av, bv[w_], acc[i_][w_]); \
            }                                                                                   \
        }                                                                                       \
        NN__ATTN_UNROLL                                                                         \
        for (i_ = 0; i_ < R; i_++)                                                              \
            NN__ATTN_UNROLL                                                                     \
            for (w_ = 0; w_ < W; w_++)                                                          \
                _mm512_mask_storeu_ps(C + (r0 + i_) * ldc + n0 + 16 * w_, w_ == W - 1 ? km : 0xFFFF, acc[i_][w_]); \
    } while (0)

#define NN__ATTN_AB512_W(W)                                                   \
    do {                                                                      \
        for (r0 = 0; r0 + 4 <= M; r0 += 4) NN__ATTN_AB512(4, W);              \
        for (; r0 < M; r0++) NN__ATTN_AB512(1, W);                            \
    } while (0)

/* the main block: 4 rows x 64 columns in 16 named registers */
NN__ATTN_TGT static void nn__attn_ab512_4x64(float *C, int64_t ldc, const float *A, int64_t ars, int64_t acs, int klo, int khi,
                                             const float *B, int64_t ldb) {
    float *c0 = C, *c1 = C + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;
    __m512 a00 = _mm512_loadu_ps(c0), a01 = _mm512_loadu_ps(c0 + 16), a02 = _mm512_loadu_ps(c0 + 32), a03 = _mm512_loadu_ps(c0 + 48);
    __m512 a10 = _mm512_loadu_ps(c1), a11 = _mm512_loadu_ps(c1 + 16), a12 = _mm512_loadu_ps(c1 + 32), a13 = _mm512_loadu_ps(c1 + 48);
    __m512 a20 = _mm512_loadu_ps(c2), a21 = _mm512_loadu_ps(c2 + 16), a22 = _mm512_loadu_ps(c2 + 32), a23 = _mm512_loadu_ps(c2 + 48);
    __m512 a30 = _mm512_loadu_ps(c3), a31 = _mm512_loadu_ps(c3 + 16), a32 = _mm512_loadu_ps(c3 + 32), a33 = _mm512_loadu_ps(c3 + 48);
    int c;
    for (c = klo; c < khi; c++) {
        const float *br = B + c * ldb, *ar = A + c * acs;
        __m512 b0 = _mm512_loadu_ps(br), b1 = _mm512_loadu_ps(br + 16), b2 = _mm512_loadu_ps(br + 32), b3 = _mm512_loadu_ps(br + 48), v;
#define NN__ATTN_R(I, X0, X1, X2, X3)       \
    v = _mm512_set1_ps(ar[I * ars]);        \
    X0 = _mm512_fmadd_ps(v, b0, X0);        \
    X1 = _mm512_fmadd_ps(v, b1, X1);        \
    X2 = _mm512_fmadd_ps(v, b2, X2);        \
    X3 = _mm512_fmadd_ps(v, b3, X3)
        NN__ATTN_R(0, a00, a01, a02, a03);
        NN__ATTN_R(1, a10, a11, a12, a13);
        NN__ATTN_R(2, a20, a21, a22, a23);
        NN__ATTN_R(3, a30, a31, a32, a33);
#undef NN__ATTN_R
    }
    _mm512_storeu_ps(c0, a00), _mm512_storeu_ps(c0 + 16, a01), _mm512_storeu_ps(c0 + 32, a02), _mm512_storeu_ps(c0 + 48, a03);
    _mm512_storeu_ps(c1, a10), _mm512_storeu_ps(c1 + 16, a11), _mm512_storeu_ps(c1 + 32, a12), _mm512_storeu_ps(c1 + 48, a13);
    _mm512_storeu_ps(c2, a20), _mm512_storeu_ps(c2 + 16, a21), _mm512_storeu_ps(c2 + 32, a22), _mm512_storeu_ps(c2 + 48, a23);
    _mm512_storeu_ps(c3, a30), _mm512_storeu_ps(c3 + 16, a31), _mm512_storeu_ps(c3 + 32, a32), _mm512_storeu_ps(c3 + 48, a33);
}

NN__ATTN_TGT static void nn__attn_ab512(float *C, int64_t ldc, const float *A, int64_t ars, int64_t acs, int M, int K, const float *B,
                                        int64_t ldb, int N, int klo_off, int khi_off) {
    int n0, r0, klo, khi;
    for (n0 = 0; n0 < N;) {
        int left = N - n0, W = left >= 64 ? 4 : (left + 15) / 16;
        __mmask16 km = nn__attn_m16(left - 16 * (W - 1));
        switch (W) {
        case 4:
            for (r0 = 0; r0 + 4 <= M; r0 += 4) {
                nn__attn_krange(r0, 4, K, klo_off, khi_off, &klo, &khi);
                nn__attn_ab512_4x64(C + r0 * ldc + n0, ldc, A + r0 * ars, ars, acs, klo, khi, B + n0, ldb);
            }
            for (; r0 < M; r0++) NN__ATTN_AB512(1, 4);
            break;
        case 3: NN__ATTN_AB512_W(3); break;
        case 2: NN__ATTN_AB512_W(2); break;
        default: NN__ATTN_AB512_W(1); break;
        }
        n0 += 16 * W;
    }
}
#undef NN__ATTN_AB512_W
#undef NN__ATTN_AB512

/* ---- a row's loops of the softmax and of dS, 16 lanes at a time, each element's value
   as the scalar loops give it ---- */

/* the largest of mx and s[0..n) (a lane-wise max: the value the scalar loop's `if (s > mx)
   mx = s` finds, whatever the order), with each -inf of s made -2e38 (the vector exp
   clamps -inf) */
NN__ATTN_TGT static float nn__attn_max_clamp512(float *s, int n, float mx) {
    __m512 vm = _mm512_set1_ps(mx), ninf = _mm512_set1_ps(-INFINITY), big = _mm512_set1_ps(-2e38f);
    int c;
    for (c = 0; c < n; c += 16) {
        __mmask16 k = nn__attn_m16(n - c);
        __m512 v = _mm512_maskz_loadu_ps(k, s + c);
        vm = _mm512_mask_max_ps(vm, k, v, vm);
        _mm512_mask_storeu_ps(s + c, _mm512_mask_cmp_ps_mask(k, v, ninf, _CMP_EQ_OQ), big);
    }
    { /* the lanes' max (gcc 12's shuffles and _mm512_reduce_max_ps warn as C++) */
        float l[16];
        _mm512_storeu_ps(l, vm);
        for (c = 1; c < 16; c++)
            if (l[c] > l[0]) l[0] = l[c];
        return l[0];
    }
}

/* each -inf of s[0..n) made -2e38 */
NN__ATTN_TGT static void nn__attn_clamp512(float *s, int n) {
    __m512 ninf = _mm512_set1_ps(-INFINITY), big = _mm512_set1_ps(-2e38f);
    int c;
    for (c = 0; c < n; c += 16) {
        __mmask16 k = nn__attn_m16(n - c);
        _mm512_mask_storeu_ps(s + c, _mm512_mask_cmp_ps_mask(k, _mm512_maskz_loadu_ps(k, s + c), ninf, _CMP_EQ_OQ), big);
    }
}

/* dp[c] = s[c] (dp[c] - dl), c < n */
NN__ATTN_TGT static void nn__attn_ds512(float *dp, const float *s, float dl, int n) {
    __m512 vd = _mm512_set1_ps(dl);
    int c;
    for (c = 0; c < n; c += 16) {
        __mmask16 k = nn__attn_m16(n - c);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, s + c), _mm512_sub_ps(_mm512_maskz_loadu_ps(k, dp + c), vd));
        _mm512_mask_storeu_ps(dp + c, k, v);
    }
}

/* y[r ys + d] = x[r xs + d] s, r < n, d < D (y may be x) */
NN__ATTN_TGT static void nn__attn_scale_rows512(float *y, int64_t ys, const float *x, int64_t xs, int n, int D, float s) {
    __m512 vs = _mm512_set1_ps(s);
    int r, d;
    for (r = 0; r < n; r++)
        for (d = 0; d < D; d += 16) {
            __mmask16 k = nn__attn_m16(D - d);
            _mm512_mask_storeu_ps(y + r * ys + d, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + r * xs + d), vs));
        }
}
#undef NN__ATTN_TGT
#undef NN__ATTN_UNROLL
#endif

/* y[r ys + d] = x[r xs + d] s for n rows of D (y may be x: in place), the rows' ends
   between y's rows left alone; each element one product, the same on every path. The
   rows are short (a head's D): the compiler leaves the scalar loop scalar, as y may
   alias x. */
static void nn__attn_scale_rows(const nn__attn_job *J, float *y, int64_t ys, const float *x, int64_t xs, int n, int D, float s) {
    int r, d;
#if defined(NN__VM_X86)
    if (J->avx512) {
        nn__attn_scale_rows512(y, ys, x, xs, n, D, s);
        return;
    }
#endif
    (void)J;
    for (r = 0; r < n; r++)
        for (d = 0; d < D; d++) y[r * ys + d] = x[r * xs + d] * s;
}

/* Yt [D, BC] = Y^T for nc rows of Y at stride ys, the columns past nc zero */
static void nn__attn_pack_t(float *Yt, const float *y, int64_t ys, int nc, int D) {
    int c, d;
    for (d = 0; d < D; d++) {
        float *o = Yt + (int64_t)d * NN__ATTN_BC;
        for (c = 0; c < nc; c++) o[c] = y[c * ys + d];
        for (; c < NN__ATTN_BC; c++) o[c] = 0.0f;
    }
}

/* S [nr, nc] (row stride BC) = alpha X Y^T: X rows at stride xs, Y rows at stride ys, K
   long; Yt: Y^T packed already (the AVX-512 path; NULL: pack it into yt_buf) */
static void nn__attn_abt(const nn__attn_job *J, nn__gemm_ws *gw, float *S, const float *x, int64_t xs, int nr, const float *y,
                         int64_t ys, int nc, int K, float alpha, const float *Yt, float *yt_buf, int diag) {
#if defined(NN__VM_X86)
    if (J->avx512) {
        if (!Yt) { /* the keys no row sees under a causal mask packed as zeros */
            int np = diag == NN__ATTN_ALL || nr - 1 + diag >= nc ? nc : nr - 1 + diag > 0 ? nr - 1 + diag : 0;
            nn__attn_pack_t(yt_buf, y, ys, np, K);
            Yt = yt_buf;
        }
        nn__attn_abt512(S, x, xs, nr, Yt, K, alpha, diag);
        return;
    }
#endif
    (void)J, (void)Yt, (void)yt_buf, (void)diag;
    nn__sgemm_ws(gw, 0, 1, nr, nc, K, alpha, x, (int)xs, y, (int)ys, 0.0f, S, NN__ATTN_BC);
}

/* C [M, N] (row stride ldc) += op(A) B: op(A) [M, K] (transA: A stored [K, M]), lda; B rows
   at stride ldb */
static void nn__attn_ab(const nn__attn_job *J, nn__gemm_ws *gw, float *C, int64_t ldc, int transA, const float *A, int lda, int M,
                        int K, const float *B, int64_t ldb, int N, int diag) {
#if defined(NN__VM_X86)
    if (J->avx512) {
        /* op(A) a tile of weights: rows queries (transA 0: row r needs the keys c < r + diag)
           or keys (transA 1: key row c needs the queries r >= c + 1 - diag) */
        nn__attn_ab512(C, ldc, A, transA ? 1 : lda, transA ? lda : 1, M, K, B, ldb, N, transA && diag != NN__ATTN_ALL ? 1 - diag : -NN__ATTN_ALL,
                       transA ? NN__ATTN_ALL : diag);
        return;
    }
#endif
    (void)J, (void)diag;
    nn__sgemm_ws(gw, transA, 0, M, N, K, 1.0f, A, lda, B, (int)ldb, 1.0f, C, (int)ldc);
}

/* ---- masks and dropout ---- */

/* dropout's factor for weight (b, h, i, j): 1 / (1 - p) kept, 0 dropped */
static float nn__attn_keep(const nn__attn_job *J, int b, int h, int i, int j) {
    const nn__attn_attr *a = &J->a;
    uint32_t idx = (uint32_t)((((int64_t)b * a->H + h) * a->Tq + i) * a->Tk + j);
    return nn__dropout_uniform(J->seed, a->key, J->step, idx) >= a->p ? 1.0f / (1.0f - a->p) : 0.0f;
}

/* Masks the scores of tile (rows i0.., keys j0..) of head (b, h): -inf where causality,
   the window or the key padding mask hide a key, or a boolean mask is 0; the additive mask
   added. Returns 1 when any element is alive. Under a causal bound (diag, nn__attn_diag)
   the columns past it are left as they are: the callers make them 0 and read none. */
static int nn__attn_mask_tile(const nn__attn_job *J, int b, int h, int i0, int nr, int j0, int nc, float *S, int diag) {
    const nn__attn_attr *a = &J->a;
    int r, c, any = 0;
    for (r = 0; r < nr; r++) {
        float *s = S + r * NN__ATTN_BC;
        int i = i0 + r, lo = 0, hi = nc, end; /* alive columns [lo, hi) by causality and the window */
        if (a->causal && i - j0 + 1 < hi) hi = i - j0 + 1;
        if (a->window > 0) {
            if (i - a->window + 1 - j0 > lo) lo = i - a->window + 1 - j0;
            if (!a->causal && i + a->window - j0 < hi) hi = i + a->window - j0;
        }
        if (hi < 0) hi = 0;
        if (lo > hi) lo = hi;
        end = diag == NN__ATTN_ALL ? nc : r + diag >= nc ? nc : r + diag > 0 ? r + diag : 0; /* hi <= end */
        for (c = 0; c < lo; c++) s[c] = -INFINITY;
        for (c = hi; c < end; c++) s[c] = -INFINITY;
        if (a->kpm_mode) {
            const float *kp = J->kpm + (int64_t)b * a->Tk + j0;
            for (c = lo; c < hi; c++)
                if (a->kpm_mode == 1 ? kp[c] != 0.0f : ((const int32_t *)(const void *)kp)[c] != 0) s[c] = -INFINITY;
        }
        if (a->mask_mode) {
            const float *m = J->mask + (int64_t)b * a->ms[0] + (int64_t)h * a->ms[1] + (int64_t)i * a->ms[2] + (int64_t)j0 * a->ms[3];
            for (c = lo; c < hi; c++) {
                const float *mc = m + (int64_t)c * a->ms[3];
                if (a->mask_mode >= 2) { /* int32: 2 nonzero attends, 3 nonzero hides */
                    if ((*(const int32_t *)(const void *)mc == 0) == (a->mask_mode == 2)) s[c] = -INFINITY;
                } else s[c] += *mc;
            }
        }
        for (c = lo; c < hi && !any; c++) any = s[c] != -INFINITY;
    }
    return any;
}

/* Whether the key block [j0, j1) is wholly masked for rows [i0, i1) by causality or the
   window (skipped without computing its scores). */
static int nn__attn_block_dead(const nn__attn_attr *a, int i0, int i1, int j0, int j1) {
    if (a->causal && j0 > i1 - 1) return 1;
    if (a->window > 0) {
        if (i0 - (j1 - 1) >= a->window) return 1;
        if (!a->causal && j0 - (i1 - 1) >= a->window) return 1;
    }
    return 0;
}

/* a causal tile's bound for nn__attn_abt, nn__attn_ab and the rows' loops: row r of the
   tile at (i0, j0) sees the keys c < r + diag (NN__ATTN_ALL: not causal, the GEMM path, or
   the skipping off) */
static int nn__attn_diag(const nn__attn_job *J, int i0, int j0) {
    return J->a.causal && J->avx512 && nn__attn_causal_skip ? i0 - j0 + 1 : NN__ATTN_ALL;
}
/* the columns [0, hi) of row r that a causal bound leaves alive */
static int nn__attn_row_hi(int r, int diag, int nc) { return r + diag >= nc ? nc : r + diag > 0 ? r + diag : 0; }

/* the unit's (b, h) and first row of a forward or dq unit u */
static void nn__attn_unit_q(const nn__attn_job *J, int64_t u, int *b, int *h, int *i0, int *nr) {
    const nn__attn_attr *a = &J->a;
    int nqb = (a->Tq + NN__ATTN_BR - 1) / NN__ATTN_BR;
    *b = (int)(u / ((int64_t)a->H * nqb));
    *h = (int)(u / nqb % a->H);
    *i0 = (int)(u % nqb) * NN__ATTN_BR;
    *nr = a->Tq - *i0 < NN__ATTN_BR ? a->Tq - *i0 : NN__ATTN_BR;
}

#define NN__ATTN_ROW(base, st, b, h, t) ((base) + (b) * (st)[0] + (h) * (st)[1] + (int64_t)(t) * (st)[2])

/* ---- forward: one (b, h, query block); on the AVX-512 path the task packs K^T of the
   whole head once, past its tiles' workspace, for the units of that (b, key/value head)
   that follow (*packed: which it holds, -1 none) ---- */
static void nn__attn_fwd_unit(const nn__attn_job *J, int64_t u, float *ws, nn__gemm_ws *gw, int64_t *packed) {
    const nn__attn_attr *a = &J->a;
    int D = a->D, Dv = a->Dv, W = nn__attn_w(a), b, h, i0, nr, j0, r, c, hk, diag;
    float *S = ws, *acc = S + 2 * NN__ATTN_BR * NN__ATTN_BC;
    float *m = acc + (int64_t)NN__ATTN_BR * W, *l = m + NN__ATTN_BR, *Kt = l + NN__ATTN_BR + 2 * (int64_t)NN__ATTN_BC * W;
    float *Kh = ws + nn__attn_ws_floats(W); /* K^T of the head: a [D, BC] block per key block */
    const float *qb;
    nn__attn_unit_q(J, u, &b, &h, &i0, &nr);
    hk = h / (a->H / a->Hkv);
    qb = NN__ATTN_ROW(J->q, J->qs, b, h, i0);
    if (J->khead && *packed != (int64_t)b * a->Hkv + hk) {
        for (j0 = 0; j0 < a->Tk; j0 += NN__ATTN_BC)
            nn__attn_pack_t(Kh + (int64_t)(j0 / NN__ATTN_BC) * D * NN__ATTN_BC, NN__ATTN_ROW(J->k, J->ks, b, hk, j0), J->ks[2],
                            a->Tk - j0 < NN__ATTN_BC ? a->Tk - j0 : NN__ATTN_BC, D);
        *packed = (int64_t)b * a->Hkv + hk;
    }
    for (r = 0; r < nr; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    for (r = 0; r < nr * Dv; r++) acc[r] = 0.0f;
    for (j0 = 0; j0 < a->Tk; j0 += NN__ATTN_BC) {
        int nc = a->Tk - j0 < NN__ATTN_BC ? a->Tk - j0 : NN__ATTN_BC;
        if (nn__attn_block_dead(a, i0, i0 + nr, j0, j0 + nc)) continue;
        diag = nn__attn_diag(J, i0, j0);
        nn__attn_abt(J, gw, S, qb, J->qs[2], nr, NN__ATTN_ROW(J->k, J->ks, b, hk, j0), J->ks[2], nc, D, a->scale,
                     J->khead ? Kh + (int64_t)(j0 / NN__ATTN_BC) * D * NN__ATTN_BC : NULL, Kt, diag);
        if (!nn__attn_mask_tile(J, b, h, i0, nr, j0, nc, S, diag)) continue;
        for (r = 0; r < nr; r++) {
            float *s = S + r * NN__ATTN_BC, *ar = acc + (int64_t)r * Dv, mx = m[r], alpha, sum;
            int hr = nn__attn_row_hi(r, diag, nc); /* past it -inf: weights 0, no exponentials */
            for (c = hr; c < nc; c++) s[c] = 0.0f;
#if defined(NN__VM_X86)
            if (J->avx512) /* the max, and -inf made -2e38 (below) in the same pass */
                mx = nn__attn_max_clamp512(s, hr, mx);
            else
#endif
                for (c = 0; c < hr; c++)
                    if (s[c] > mx) mx = s[c];
            if (mx == -INFINITY) { /* nothing alive in the row yet: weights 0 */
                for (c = 0; c < hr; c++) s[c] = 0.0f;
                continue;
            }
            alpha = m[r] == -INFINITY ? 0.0f : nn__vexp1(m[r] - mx);
            if (!J->avx512)
                for (c = 0; c < hr; c++)
                    if (s[c] == -INFINITY) s[c] = -2e38f; /* exp gives 0 (the vector exp clamps -inf) */
            sum = nn__vexp_map(NN__VE_EXP_SHIFT, s, s, NULL, NULL, mx, hr);
            l[r] = l[r] * alpha + sum;
            m[r] = mx;
            if (alpha != 1.0f) nn__attn_scale_rows(J, ar, 0, ar, 0, 1, Dv, alpha);
            if (a->p > 0.0f)
                for (c = 0; c < hr; c++) s[c] *= nn__attn_keep(J, b, h, i0 + r, j0 + c);
        }
        nn__attn_ab(J, gw, acc, Dv, 0, S, NN__ATTN_BC, nr, nc, NN__ATTN_ROW(J->v, J->vs, b, hk, j0), J->vs[2], Dv, diag);
    }
    for (r = 0; r < nr; r++) {
        float *o = NN__ATTN_ROW(J->out, J->os, b, h, i0 + r), inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
        nn__attn_scale_rows(J, o, 0, acc + (int64_t)r * Dv, 0, 1, Dv, inv);
        J->out_lse[((int64_t)b * a->H + h) * a->Tq + i0 + r] = l[r] > 0.0f ? m[r] + logf(l[r]) : -INFINITY;
    }
}

/* P and dS of a tile (rows i0.., keys j0..) from the masked scores in S: P = exp(S - lse)
   (0 where masked), then Pd = P z (the dropped weights) into S, and dS = P (dP z - delta)
   into dP, where dP = dO v^T was computed into dP. Under a causal bound (diag) the
   columns past a row's diagonal are 0 in both without their exponentials. */
static void nn__attn_ds(const nn__attn_job *J, int b, int h, int i0, int nr, int j0, int nc0, float *S, float *dP, int diag) {
    const nn__attn_attr *a = &J->a;
    int r, c;
    for (r = 0; r < nr; r++) {
        int64_t row = ((int64_t)b * a->H + h) * a->Tq + i0 + r;
        float lse = J->lse[row], dl = J->delta[row], *s = S + r * NN__ATTN_BC, *dp = dP + r * NN__ATTN_BC;
        int nc = nn__attn_row_hi(r, diag, nc0);
        memset(s + nc, 0, (size_t)(nc0 - nc) * sizeof(float));
        memset(dp + nc, 0, (size_t)(nc0 - nc) * sizeof(float));
        if (lse == -INFINITY) { /* a wholly masked row */
            for (c = 0; c < nc; c++) s[c] = dp[c] = 0.0f;
            continue;
        }
#if defined(NN__VM_X86)
        if (J->avx512) nn__attn_clamp512(s, nc);
        else
#endif
            for (c = 0; c < nc; c++)
                if (s[c] == -INFINITY) s[c] = -2e38f;
        (void)nn__vexp_map(NN__VE_EXP_SHIFT, s, s, NULL, NULL, lse, nc);
        if (a->p > 0.0f) {
            for (c = 0; c < nc; c++) {
                float z = s[c] != 0.0f ? nn__attn_keep(J, b, h, i0 + r, j0 + c) : 0.0f;
                dp[c] = s[c] * (dp[c] * z - dl);
                s[c] *= z;
            }
        } else {
#if defined(NN__VM_X86)
            if (J->avx512) nn__attn_ds512(dp, s, dl, nc);
            else
#endif
                for (c = 0; c < nc; c++) dp[c] = s[c] * (dp[c] - dl);
        }
    }
}

/* ---- dQ: one (b, h, query block): dq = scale sum_j dS_ij k_j ---- */
static void nn__attn_dq_unit(const nn__attn_job *J, int64_t u, float *ws, nn__gemm_ws *gw) {
    const nn__attn_attr *a = &J->a;
    const float sc = a->scale; /* a local: the loops' stores could alias a->scale, reloaded each element */
    int D = a->D, Dv = a->Dv, W = nn__attn_w(a), b, h, i0, nr, j0, r, hk, diag;
    float *S = ws, *dP = S + NN__ATTN_BR * NN__ATTN_BC, *acc = S + 2 * NN__ATTN_BR * NN__ATTN_BC;
    float *Kt = acc + (int64_t)NN__ATTN_BR * W + 2 * NN__ATTN_BR + 2 * (int64_t)NN__ATTN_BC * W, *Vt = Kt + (int64_t)NN__ATTN_BC * W;
    const float *qb, *gb;
    nn__attn_unit_q(J, u, &b, &h, &i0, &nr);
    hk = h / (a->H / a->Hkv);
    qb = NN__ATTN_ROW(J->q, J->qs, b, h, i0);
    gb = NN__ATTN_ROW(J->dout, J->os, b, h, i0);
    for (r = 0; r < nr * D; r++) acc[r] = 0.0f;
    for (j0 = 0; j0 < a->Tk; j0 += NN__ATTN_BC) {
        int nc = a->Tk - j0 < NN__ATTN_BC ? a->Tk - j0 : NN__ATTN_BC;
        if (nn__attn_block_dead(a, i0, i0 + nr, j0, j0 + nc)) continue;
        diag = nn__attn_diag(J, i0, j0);
        nn__attn_abt(J, gw, S, qb, J->qs[2], nr, NN__ATTN_ROW(J->k, J->ks, b, hk, j0), J->ks[2], nc, D, a->scale, NULL, Kt, diag);
        if (!nn__attn_mask_tile(J, b, h, i0, nr, j0, nc, S, diag)) continue;
        nn__attn_abt(J, gw, dP, gb, J->os[2], nr, NN__ATTN_ROW(J->v, J->vs, b, hk, j0), J->vs[2], nc, Dv, 1.0f, NULL, Vt, diag);
        nn__attn_ds(J, b, h, i0, nr, j0, nc, S, dP, diag);
        nn__attn_ab(J, gw, acc, D, 0, dP, NN__ATTN_BC, nr, nc, NN__ATTN_ROW(J->k, J->ks, b, hk, j0), J->ks[2], D, diag);
    }
    nn__attn_scale_rows(J, NN__ATTN_ROW(J->dq, J->dqs, b, h, i0), J->dqs[2], acc, D, nr, D, sc);
}

/* ---- dK, dV: one (b, key/value head, key block), over the group's query heads and every
   query block in order: dv_j = sum_i P_ij z_ij dO_i, dk_j = scale sum_i dS_ij q_i ---- */
static void nn__attn_dkv_unit(const nn__attn_job *J, int64_t u, float *ws, nn__gemm_ws *gw) {
    const nn__attn_attr *a = &J->a;
    const float sc = a->scale; /* a local: the loops' stores could alias a->scale, reloaded each element */
    int D = a->D, Dv = a->Dv, W = nn__attn_w(a), nkb = (a->Tk + NN__ATTN_BC - 1) / NN__ATTN_BC, grp = a->H / a->Hkv;
    int b = (int)(u / ((int64_t)a->Hkv * nkb)), hk = (int)(u / nkb % a->Hkv), j0 = (int)(u % nkb) * NN__ATTN_BC;
    int nc = a->Tk - j0 < NN__ATTN_BC ? a->Tk - j0 : NN__ATTN_BC, h, i0, c;
    float *S = ws, *dP = S + NN__ATTN_BR * NN__ATTN_BC;
    float *dk = S + 2 * NN__ATTN_BR * NN__ATTN_BC + (int64_t)NN__ATTN_BR * W + 2 * NN__ATTN_BR, *dv = dk + (int64_t)NN__ATTN_BC * W;
    for (c = 0; c < nc * D; c++) dk[c] = 0.0f;
    for (c = 0; c < nc * Dv; c++) dv[c] = 0.0f;
    const float *kb = NN__ATTN_ROW(J->k, J->ks, b, hk, j0), *vb = NN__ATTN_ROW(J->v, J->vs, b, hk, j0);
    float *Kt = dv + (int64_t)NN__ATTN_BC * W, *Vt = Kt + (int64_t)NN__ATTN_BC * W;
    const float *kt = NULL, *vt = NULL; /* K^T and V^T packed once for every query block */
    if (J->avx512) {
        nn__attn_pack_t(Kt, kb, J->ks[2], nc, D);
        nn__attn_pack_t(Vt, vb, J->vs[2], nc, Dv);
        kt = Kt, vt = Vt;
    }
    for (h = hk * grp; h < (hk + 1) * grp; h++)
        for (i0 = 0; i0 < a->Tq; i0 += NN__ATTN_BR) {
            int nr = a->Tq - i0 < NN__ATTN_BR ? a->Tq - i0 : NN__ATTN_BR;
            const float *qb = NN__ATTN_ROW(J->q, J->qs, b, h, i0), *gb = NN__ATTN_ROW(J->dout, J->os, b, h, i0);
            int diag = nn__attn_diag(J, i0, j0);
            if (nn__attn_block_dead(a, i0, i0 + nr, j0, j0 + nc)) continue;
            nn__attn_abt(J, gw, S, qb, J->qs[2], nr, kb, J->ks[2], nc, D, a->scale, kt, Kt, diag);
            if (!nn__attn_mask_tile(J, b, h, i0, nr, j0, nc, S, diag)) continue;
            nn__attn_abt(J, gw, dP, gb, J->os[2], nr, vb, J->vs[2], nc, Dv, 1.0f, vt, Vt, diag);
            nn__attn_ds(J, b, h, i0, nr, j0, nc, S, dP, diag);
            /* dv [nc, Dv] += Pd^T dO, dk [nc, D] += dS^T q */
            nn__attn_ab(J, gw, dv, Dv, 1, S, NN__ATTN_BC, nc, nr, gb, J->os[2], Dv, diag);
            nn__attn_ab(J, gw, dk, D, 1, dP, NN__ATTN_BC, nc, nr, qb, J->qs[2], D, diag);
        }
    nn__attn_scale_rows(J, NN__ATTN_ROW(J->dk, J->dks, b, hk, j0), J->dks[2], dk, D, nc, D, sc);
    nn__attn_scale_rows(J, NN__ATTN_ROW(J->dv, J->dvs, b, hk, j0), J->dvs[2], dv, Dv, nc, Dv, 1.0f);
}

/* ---- dQ, dK, dV in one pass (FlashAttention-2's order): one (b, key/value head) per
   unit, its key blocks in order, each over the group's query heads and every query block
   in order: the scores, P and dS of a tile once, then dv_j += (P z)^T dO, dk_j += dS^T q
   and dq_i += dS k_j, the last straight into dq's rows (the unit owns its heads' rows, so
   no accumulator of its own and no atomics). Each dq element sums the key blocks in order
   as the dQ pass does, each dk, dv element the query heads and blocks in order as the
   dK/dV pass does, with the same tile products: the bits of the two passes. ---- */
static void nn__attn_bwd_unit(const nn__attn_job *J, int64_t u, float *ws, nn__gemm_ws *gw) {
    const nn__attn_attr *a = &J->a;
    const float sc = a->scale; /* a local: the loops' stores could alias a->scale, reloaded each element */
    int D = a->D, Dv = a->Dv, W = nn__attn_w(a), grp = a->H / a->Hkv;
    int b = (int)(u / a->Hkv), hk = (int)(u % a->Hkv), h, i0, j0, r, c;
    float *S = ws, *dP = S + NN__ATTN_BR * NN__ATTN_BC;
    float *dk = S + 2 * NN__ATTN_BR * NN__ATTN_BC + (int64_t)NN__ATTN_BR * W + 2 * NN__ATTN_BR, *dv = dk + (int64_t)NN__ATTN_BC * W;
    float *Kt = dv + (int64_t)NN__ATTN_BC * W, *Vt = Kt + (int64_t)NN__ATTN_BC * W;
    for (h = hk * grp; h < (hk + 1) * grp; h++)
        for (r = 0; r < a->Tq; r++) memset(NN__ATTN_ROW(J->dq, J->dqs, b, h, r), 0, (size_t)D * sizeof(float));
    for (j0 = 0; j0 < a->Tk; j0 += NN__ATTN_BC) {
        int nc = a->Tk - j0 < NN__ATTN_BC ? a->Tk - j0 : NN__ATTN_BC;
        const float *kb = NN__ATTN_ROW(J->k, J->ks, b, hk, j0), *vb = NN__ATTN_ROW(J->v, J->vs, b, hk, j0);
        const float *kt = NULL, *vt = NULL; /* K^T and V^T packed once for every query block */
        for (c = 0; c < nc * D; c++) dk[c] = 0.0f;
        for (c = 0; c < nc * Dv; c++) dv[c] = 0.0f;
        if (J->avx512) {
            nn__attn_pack_t(Kt, kb, J->ks[2], nc, D);
            nn__attn_pack_t(Vt, vb, J->vs[2], nc, Dv);
            kt = Kt, vt = Vt;
        }
        for (h = hk * grp; h < (hk + 1) * grp; h++)
            for (i0 = 0; i0 < a->Tq; i0 += NN__ATTN_BR) {
                int nr = a->Tq - i0 < NN__ATTN_BR ? a->Tq - i0 : NN__ATTN_BR;
                const float *qb = NN__ATTN_ROW(J->q, J->qs, b, h, i0), *gb = NN__ATTN_ROW(J->dout, J->os, b, h, i0);
                int diag = nn__attn_diag(J, i0, j0);
                if (nn__attn_block_dead(a, i0, i0 + nr, j0, j0 + nc)) continue;
                nn__attn_abt(J, gw, S, qb, J->qs[2], nr, kb, J->ks[2], nc, D, a->scale, kt, Kt, diag);
                if (!nn__attn_mask_tile(J, b, h, i0, nr, j0, nc, S, diag)) continue;
                nn__attn_abt(J, gw, dP, gb, J->os[2], nr, vb, J->vs[2], nc, Dv, 1.0f, vt, Vt, diag);
                nn__attn_ds(J, b, h, i0, nr, j0, nc, S, dP, diag);
                nn__attn_ab(J, gw, dv, Dv, 1, S, NN__ATTN_BC, nc, nr, gb, J->os[2], Dv, diag);
                nn__attn_ab(J, gw, dk, D, 1, dP, NN__ATTN_BC, nc, nr, qb, J->qs[2], D, diag);
                nn__attn_ab(J, gw, NN__ATTN_ROW(J->dq, J->dqs, b, h, i0), J->dqs[2], 0, dP, NN__ATTN_BC, nr, nc, kb, J->ks[2], D, diag);
            }
        nn__attn_scale_rows(J, NN__ATTN_ROW(J->dk, J->dks, b, hk, j0), J->dks[2], dk, D, nc, D, sc);
        nn__attn_scale_rows(J, NN__ATTN_ROW(J->dv, J->dvs, b, hk, j0), J->dvs[2], dv, Dv, nc, Dv, 1.0f);
    }
    for (h = hk * grp; h < (hk + 1) * grp; h++)
        nn__attn_scale_rows(J, NN__ATTN_ROW(J->dq, J->dqs, b, h, 0), J->dqs[2], NN__ATTN_ROW(J->dq, J->dqs, b, h, 0), J->dqs[2], a->Tq, D, sc);
}

/* ---- d(mask): one unit per (b, h, query block, key block) of the dims the mask does not
   broadcast; a broadcast dim's whole range is summed inside the unit, in order (b, h,
   query blocks, key blocks, then a tile's rows and columns), so no two units write one
   element and no [Tq, Tk] tile per head is kept: the gradient is dS summed, unscaled ---- */
static void nn__attn_dmask_counts(const nn__attn_attr *a, int64_t n[4]) {
    n[0] = a->ms[0] ? a->B : 1;
    n[1] = a->ms[1] ? a->H : 1;
    n[2] = a->ms[2] ? (a->Tq + NN__ATTN_BR - 1) / NN__ATTN_BR : 1;
    n[3] = a->ms[3] ? (a->Tk + NN__ATTN_BC - 1) / NN__ATTN_BC : 1;
}

static void nn__attn_dmask_unit(const nn__attn_job *J, int64_t u, float *ws, nn__gemm_ws *gw) {
    const nn__attn_attr *a = &J->a;
    int D = a->D, Dv = a->Dv, W = nn__attn_w(a), nqb = (a->Tq + NN__ATTN_BR - 1) / NN__ATTN_BR;
    int nkb = (a->Tk + NN__ATTN_BC - 1) / NN__ATTN_BC;
    int ub, uh, uq, uk, b, h, qb, kb, r, c, nru, ncu;
    int64_t cnt[4];
    float *S = ws, *dP = S + NN__ATTN_BR * NN__ATTN_BC, *G = dP + NN__ATTN_BR * NN__ATTN_BC;
    float *Kt = G + NN__ATTN_BR * NN__ATTN_BC, *Vt = Kt + (int64_t)NN__ATTN_BC * W;
    nn__attn_dmask_counts(a, cnt);
    uk = (int)(u % cnt[3]);
    uq = (int)(u / cnt[3] % cnt[2]);
    uh = (int)(u / (cnt[3] * cnt[2]) % cnt[1]);
    ub = (int)(u / (cnt[3] * cnt[2] * cnt[1]));
    for (r = 0; r < NN__ATTN_BR * NN__ATTN_BC; r++) G[r] = 0.0f;
    for (b = a->ms[0] ? ub : 0; b < (a->ms[0] ? ub + 1 : a->B); b++)
        for (h = a->ms[1] ? uh : 0; h < (a->ms[1] ? uh + 1 : a->H); h++)
            for (qb = a->ms[2] ? uq : 0; qb < (a->ms[2] ? uq + 1 : nqb); qb++)
                for (kb = a->ms[3] ? uk : 0; kb < (a->ms[3] ? uk + 1 : nkb); kb++) {
                    int i0 = qb * NN__ATTN_BR, j0 = kb * NN__ATTN_BC, hk = h / (a->H / a->Hkv);
                    int nr = a->Tq - i0 < NN__ATTN_BR ? a->Tq - i0 : NN__ATTN_BR, nc = a->Tk - j0 < NN__ATTN_BC ? a->Tk - j0 : NN__ATTN_BC;
                    if (nn__attn_block_dead(a, i0, i0 + nr, j0, j0 + nc)) continue;
                    nn__attn_abt(J, gw, S, NN__ATTN_ROW(J->q, J->qs, b, h, i0), J->qs[2], nr, NN__ATTN_ROW(J->k, J->ks, b, hk, j0),
                                 J->ks[2], nc, D, a->scale, NULL, Kt, NN__ATTN_ALL);
                    if (!nn__attn_mask_tile(J, b, h, i0, nr, j0, nc, S, NN__ATTN_ALL)) continue;
                    nn__attn_abt(J, gw, dP, NN__ATTN_ROW(J->dout, J->os, b, h, i0), J->os[2], nr,
                                 NN__ATTN_ROW(J->v, J->vs, b, hk, j0), J->vs[2], nc, Dv, 1.0f, NULL, Vt, NN__ATTN_ALL);
                    nn__attn_ds(J, b, h, i0, nr, j0, nc, S, dP, NN__ATTN_ALL);
                    for (r = 0; r < nr; r++) {
                        float *gr = G + (a->ms[2] ? r : 0) * NN__ATTN_BC;
                        const float *dr = dP + r * NN__ATTN_BC;
                        if (a->ms[3])
                            for (c = 0; c < nc; c++) gr[c] += dr[c];
                        else
                            for (c = 0; c < nc; c++) gr[0] += dr[c];
                    }
                }
    nru = a->ms[2] ? (a->Tq - uq * NN__ATTN_BR < NN__ATTN_BR ? a->Tq - uq * NN__ATTN_BR : NN__ATTN_BR) : 1;
    ncu = a->ms[3] ? (a->Tk - uk * NN__ATTN_BC < NN__ATTN_BC ? a->Tk - uk * NN__ATTN_BC : NN__ATTN_BC) : 1;
    for (r = 0; r < nru; r++)
        for (c = 0; c < ncu; c++)
            J->dmask[(int64_t)ub * a->ms[0] + (int64_t)uh * a->ms[1] + ((int64_t)uq * NN__ATTN_BR + r) * a->ms[2] +
                     ((int64_t)uk * NN__ATTN_BC + c) * a->ms[3]] = G[r * NN__ATTN_BC + c];
}

static void nn__attn_task(void *arg, int t, int n_tasks) {
    const nn__attn_job *J = (const nn__attn_job *)arg;
    int64_t u, u0 = J->per * t, u1 = u0 + J->per < J->units ? u0 + J->per : J->units;
    float *ws = J->ws + (int64_t)t * J->ws_floats;
    nn__gemm_ws gw;
    int64_t packed = -1; /* the forward: the (b, key/value head) whose K^T the task holds */
    (void)n_tasks;
    gw.p = NULL;
    gw.bytes = 0;
    for (u = u0; u < u1; u++) {
        if (J->kind == 0) nn__attn_fwd_unit(J, u, ws, &gw, &packed);
        else if (J->kind == 1) nn__attn_dq_unit(J, u, ws, &gw);
        else if (J->kind == 2) nn__attn_dkv_unit(J, u, ws, &gw);
        else if (J->kind == 3) nn__attn_dmask_unit(J, u, ws, &gw);
        else nn__attn_bwd_unit(J, u, ws, &gw);
    }
    NN_FREE(gw.p);
}

/* Runs job J (its kind, pointers and attributes set) over the pool: J->units work units
   in contiguous runs, one per task, each task its own working memory. */
static nn_result nn__attn_run(nn__threadpool *pool, nn__attn_job *J) {
    const nn__attn_attr *a = &J->a;
    int tasks = nn__threadpool_size(pool), nqb = (a->Tq + NN__ATTN_BR - 1) / NN__ATTN_BR;
    int nkb = (a->Tk + NN__ATTN_BC - 1) / NN__ATTN_BC;
    size_t bytes;
    void *own = NULL;
#if defined(NN__VM_X86)
    J->avx512 = nn__vm_isa() == 2 && strcmp(nn__gemm_pick_arch()->name, "avx512f") == 0; /* as the GEMM (its forced kernel too) */
#endif
    J->units = J->kind == 4 ? (int64_t)a->B * a->Hkv : J->kind == 2 ? (int64_t)a->B * a->Hkv * nkb : (int64_t)a->B * a->H * nqb;
    if (J->kind == 3) {
        int64_t cnt[4];
        nn__attn_dmask_counts(a, cnt);
        J->units = cnt[0] * cnt[1] * cnt[2] * cnt[3];
    }
    if (J->units < tasks) tasks = (int)J->units;
    if (tasks < 1) tasks = 1;
    J->per = (J->units + tasks - 1) / tasks;
    tasks = (int)((J->units + J->per - 1) / J->per);
    J->khead = J->kind == 0 && J->avx512 && (int64_t)nkb * NN__ATTN_BC * a->D <= NN__ATTN_KHEAD;
    J->ws_floats = nn__attn_ws_floats(nn__attn_w(a)) + (J->khead ? (int64_t)nkb * NN__ATTN_BC * a->D : 0);
    bytes = (size_t)tasks * (size_t)J->ws_floats * sizeof(float);
    J->ws = (float *)nn__threadpool_workspace(pool, bytes);
    if (!J->ws) {
        own = NN_MALLOC(bytes);
        if (!own) return NN_ERR_OUT_OF_MEMORY;
        J->ws = (float *)own;
    }
    if (tasks <= 1) nn__attn_task(J, 0, 1);
    else nn__threadpool_run(pool, nn__attn_task, J, tasks);
    NN_FREE(own);
    return NN_OK;
}

/* Whether the one-pass backward (one unit per batch and key/value head) keeps `tasks`
   threads busy: as many units as threads, in equal shares or at least four a thread. */
static int nn__attn_one_pass_fits(const nn__attn_attr *a, int tasks) {
    int64_t u = (int64_t)a->B * a->Hkv;
    if (nn__attn_one_pass != 1) return nn__attn_one_pass == 2;
    return u >= tasks && (u % tasks == 0 || u >= 4 * (int64_t)tasks);
}
