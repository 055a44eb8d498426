/* The recurrent family's CPU loops (src/ops/recurrent.c calls them per time step, between
   its GEMMs): the same gate math, offsets and frozen rows as kernels/recurrent.cl. Rows of
   the batch are independent over the whole sequence, so nn__cpu_rec_seq_run and
   nn__cpu_rec_grad_run give each thread a slice of batch rows [b0, b1) for all T steps:
   one pool dispatch per sequence, not one per tiny per-step GEMM, and no barrier. Each
   element of each product gets the same arithmetic as one GEMM over all rows (the same K
   blocks in order, the same microkernel), so the results are the same to the bit. */
#include "../base/internal.h"
#include "../ops/recurrent.h"

static float nn__rec_sig(float v) { return 1.0f / (1.0f + expf(-v)); }

/* tanh on expf (libm's tanhf, through expm1f, was a third of a training step's time):
   1 - 2 / (e^2|x| + 1) with x's sign, and below |x| = 1/8, where that cancels, its Taylor
   series to x^9 (the next term is under 1e-11 relative there). Within 3e-7 relative of
   tanh; NaN stays NaN, +-inf gives +-1. */
static float nn__rec_tanh(float x) {
    float ax = fabsf(x), r;
    if (ax < 0.125f) {
        float x2 = x * x;
        return x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f + x2 * (62.0f / 2835.0f)))));
    }
    r = 1.0f - 2.0f / (expf(2.0f * ax) + 1.0f);
    return x < 0.0f ? -r : r;
}

/* The LSTM's gate math over one batch row, vectorised (AVX-512 or AVX2+FMA, chosen at run
   time; the last partial vector by masked loads and stores): the scalar loops' operations,
   vector for scalar, on the vector exp (src/cpu/simd.c), so the forward gives the bits the
   scalar path on nn__vexp_map gives. nn__rec_vtanh_S is nn__rec_tanh with the vector exp.
   Forward: gt [4H] = i, f, g, o from x + p (+ bias); c = f cprev + i g (cprev where the row
   is frozen: active 0); h [H] = o tanh(c). Backward (an active row): d = du, or dh + gy (dh
   then 0), and the gate gradients into dx and dp [4H], dc = dct f. */
#if defined(NN__VM_X86)
#define NN__REC_VDEFINE(S, TGT)                                                                                  \
    TGT static inline NN__RV nn__rec_vtanh_##S(NN__RV v) {                                                      \
        NN__RV one = NN__RV1(1.0f), ax = NN__RVABS(v), x2 = v * v, e = nn__vexp_##S(NN__RV1(2.0f) * ax), big, sm; \
        big = NN__RVSEL(v, NN__RV1(0.0f), _CMP_LT_OQ, NN__RV1(-1.0f), one) * (one - NN__RV1(2.0f) / (e + one));  \
        sm = v * (one + x2 * (NN__RV1(-1.0f / 3.0f) +                                                           \
                              x2 * (NN__RV1(2.0f / 15.0f) + x2 * (NN__RV1(-17.0f / 315.0f) + x2 * NN__RV1(62.0f / 2835.0f))))); \
        return NN__RVSEL(ax, NN__RV1(0.125f), _CMP_LT_OQ, sm, big);                                              \
    }                                                                                                            \
    TGT static void nn__rec_lstm_fwd_##S(int H, const float *x, const float *p, const float *bias, float *gt,     \
                                         const float *cprev, float *cout, float *h, int active) {               \
        NN__RV one = NN__RV1(1.0f), v, c;                                                                       \
        int j, k, q;                                                                                             \
        for (q = 0; q < 4; q++)                                                                                  \
            for (j = 0; j < H; j += NN__RVW) {                                                                   \
                int o = q * H + j;                                                                               \
                k = H - j;                                                                                       \
                v = NN__RVLD(x + o, k) + NN__RVLD(p + o, k);                                                     \
                v = v + (bias ? NN__RVLD(bias + o, k) : NN__RV1(0.0f));                                          \
                if (q == 2) v = nn__rec_vtanh_##S(v); else v = one / (one + nn__vexp_##S(-v));                          \
                NN__RVST(gt + o, v, k);                                                                          \
            }                                                                                                    \
        for (j = 0; j < H; j += NN__RVW) {                                                                       \
            k = H - j;                                                                                           \
            c = NN__RVLD(cprev + j, k);                                                                          \
            if (active) c = NN__RVLD(gt + H + j, k) * c + NN__RVLD(gt + j, k) * NN__RVLD(gt + 2 * H + j, k);     \
            NN__RVST(cout + j, c, k);                                                                            \
            NN__RVST(h + j, NN__RVLD(gt + 3 * H + j, k) * nn__rec_vtanh_##S(c), k);                             \
        }                                                                                                        \
    }                                                                                                            \
    TGT static void nn__rec_lstm_bwd_##S(int H, const float *gt, const float *cc, const float *cp, const float *du, \
                                         float *dh, const float *gy, float *dc, float *dx, float *dp) {         \
        NN__RV one = NN__RV1(1.0f), d, ig, fg, gg, o, tc, dct, r;                                               \
        int j, k;                                                                                                \
        for (j = 0; j < H; j += NN__RVW) {                                                                       \
            k = H - j;                                                                                           \
            if (du) d = NN__RVLD(du + j, k); else d = NN__RVLD(dh + j, k) + NN__RVLD(gy + j, k);                        \
            ig = NN__RVLD(gt + j, k), fg = NN__RVLD(gt + H + j, k);                                              \
            gg = NN__RVLD(gt + 2 * H + j, k), o = NN__RVLD(gt + 3 * H + j, k);                                   \
            tc = nn__rec_vtanh_##S(NN__RVLD(cc + j, k));                                                         \
            dct = NN__RVLD(dc + j, k) + d * o * (one - tc * tc);                                                 \
            r = dct * gg * ig * (one - ig);                                                                      \
            NN__RVST(dx + j, r, k); NN__RVST(dp + j, r, k);                                                      \
            r = dct * NN__RVLD(cp + j, k) * fg * (one - fg);                                                     \
            NN__RVST(dx + H + j, r, k); NN__RVST(dp + H + j, r, k);                                              \
            r = dct * ig * (one - gg * gg);                                                                      \
            NN__RVST(dx + 2 * H + j, r, k); NN__RVST(dp + 2 * H + j, r, k);                                      \
            r = d * tc * o * (one - o);                                                                          \
            NN__RVST(dx + 3 * H + j, r, k); NN__RVST(dp + 3 * H + j, r, k);                                      \
            NN__RVST(dc + j, dct * fg, k);                                                                       \
            if (!du) NN__RVST(dh + j, NN__RV1(0.0f), k);                                                         \
        }                                                                                                        \
    }

#define NN__RV __m512
#define NN__RVW 16
#define NN__RV1 _mm512_set1_ps
#define NN__RVLD(ptr, k) ((k) >= 16 ? _mm512_loadu_ps(ptr) : _mm512_maskz_loadu_ps(nn__vmask_avx512(k), ptr))
#define NN__RVST(ptr, v, k)                                                          \
    do {                                                                             \
        if ((k) >= 16) _mm512_storeu_ps(ptr, v);                                     \
        else _mm512_mask_storeu_ps(ptr, nn__vmask_avx512(k), v);                     \
    } while (0)
#define NN__RVSEL(a, b, P, x, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, P), y, x)
#define NN__RVABS(v) _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF)))
NN__REC_VDEFINE(avx512, __attribute__((target("avx512f"))))
#undef NN__RV
#undef NN__RVW
#undef NN__RV1
#undef NN__RVLD
#undef NN__RVST
#undef NN__RVSEL
#undef NN__RVABS
#define NN__RV __m256
#define NN__RVW 8
#define NN__RV1 _mm256_set1_ps
#define NN__RVLD(ptr, k) ((k) >= 8 ? _mm256_loadu_ps(ptr) : _mm256_maskload_ps(ptr, nn__vmask_avx2(k)))
#define NN__RVST(ptr, v, k)                                                          \
    do {                                                                             \
        if ((k) >= 8) _mm256_storeu_ps(ptr, v);                                      \
        else _mm256_maskstore_ps(ptr, nn__vmask_avx2(k), v);                         \
    } while (0)
#define NN__RVSEL(a, b, P, x, y) _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, P))
#define NN__RVABS(v) _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)))
NN__REC_VDEFINE(avx2, __attribute__((target("avx2,fma"))))
#undef NN__RV
#undef NN__RVW
#undef NN__RV1
#undef NN__RVLD
#undef NN__RVST
#undef NN__RVSEL
#undef NN__RVABS
#undef NN__REC_VDEFINE
#endif

/* One step forward over rows b < B (kernels/recurrent.cl rec_gates_fwd). xp, hp: this
   step's input and state products [B, G*H]; bias [G*H] or NULL; lens NULL or [B]; ws the
   node's workspace; y the output row block of step t [B, Hr]. */
static void nn__cpu_rec_gates_fwd(int kind, int B, int b0, int b1, int H, int Hr, int t, const float *xp, const float *hp,
                                  const float *bias, const int32_t *lens, float *ws, float *y, int proj, size_t og,
                                  size_t oh, size_t oc, size_t ou, size_t ohn, float *e) {
    int G = kind == NN__REC_LSTM ? 4 : kind == NN__REC_GRU ? 3 : 1, b, j;
    for (b = b0; b < b1; b++) {
        int active = !lens || t < lens[b];
        const float *x = xp + (size_t)b * G * H, *p = hp + (size_t)b * G * H;
        float *gt = ws + og + (size_t)b * G * H;
#if defined(NN__VM_X86)
        if (e && kind == NN__REC_LSTM && nn__vm_isa() >= 1) {
            if (nn__vm_isa() == 2)
                nn__rec_lstm_fwd_avx512(H, x, p, bias, gt, ws + oc + (size_t)b * H, ws + oc + (size_t)B * H + (size_t)b * H, e, active);
            else
                nn__rec_lstm_fwd_avx2(H, x, p, bias, gt, ws + oc + (size_t)b * H, ws + oc + (size_t)B * H + (size_t)b * H, e, active);
            for (j = 0; j < H; j++) {
                size_t hi = (size_t)b * Hr + j, ci = (size_t)b * H + j;
                if (proj) ws[ou + ci] = active ? e[j] : 0.0f;
                else {
                    ws[oh + (size_t)B * Hr + hi] = active ? e[j] : ws[oh + hi];
                    y[hi] = active ? e[j] : 0.0f;
                }
            }
            continue;
        }
#endif
        if (e && kind == NN__REC_LSTM) {
            /* the row's four gates through the vector exp: sigmoid(v) = 1 / (1 + e^-v), tanh
               as nn__rec_tanh with e^2|v| */
            for (j = 0; j < 4 * H; j++) {
                float v = x[j] + p[j] + (bias ? bias[j] : 0.0f);
                e[4 * H + j] = v;
                e[j] = j >= 2 * H && j < 3 * H ? 2.0f * fabsf(v) : -v;
            }
            (void)nn__vexp_map(NN__VE_EXP_SHIFT, e, e, NULL, NULL, 0.0f, 4 * H);
            for (j = 0; j < 4 * H; j++) {
                float v = e[4 * H + j];
                if (j < 2 * H || j >= 3 * H) gt[j] = 1.0f / (1.0f + e[j]);
                else gt[j] = fabsf(v) < 0.125f ? nn__rec_tanh(v) : (v < 0.0f ? -1.0f : 1.0f) * (1.0f - 2.0f / (e[j] + 1.0f));
            }
            for (j = 0; j < H; j++) {
                size_t ci = (size_t)b * H + j;
                float cprev = ws[oc + ci];
                float c = active ? gt[H + j] * cprev + gt[j] * gt[2 * H + j] : cprev;
                ws[oc + (size_t)B * H + ci] = c;
                e[j] = 2.0f * fabsf(c);
            }
            (void)nn__vexp_map(NN__VE_EXP_SHIFT, e, e, NULL, NULL, 0.0f, H);
            for (j = 0; j < H; j++) {
                size_t hi = (size_t)b * Hr + j, ci = (size_t)b * H + j;
                float c = ws[oc + (size_t)B * H + ci], hprev = ws[oh + hi];
                float tc = fabsf(c) < 0.125f ? nn__rec_tanh(c) : (c < 0.0f ? -1.0f : 1.0f) * (1.0f - 2.0f / (e[j] + 1.0f));
                float hnew = gt[3 * H + j] * tc;
                if (proj) {
                    ws[ou + ci] = active ? hnew : 0.0f;
                    continue;
                }
                ws[oh + (size_t)B * Hr + hi] = active ? hnew : hprev;
                y[hi] = active ? hnew : 0.0f;
            }
            continue;
        }
        for (j = 0; j < H; j++) {
            size_t hi = (size_t)b * Hr + j, ci = (size_t)b * H + j;
            float hprev = ws[oh + hi], hnew;
#define NN__REC_PRE(k) (x[(k) * H + j] + p[(k) * H + j] + (bias ? bias[(k) * H + j] : 0.0f))
            if (kind == NN__REC_LSTM) {
                float ig = nn__rec_sig(NN__REC_PRE(0)), fg = nn__rec_sig(NN__REC_PRE(1));
                float gg = nn__rec_tanh(NN__REC_PRE(2)), o = nn__rec_sig(NN__REC_PRE(3));
                float cprev = ws[oc + ci];
                float c = active ? fg * cprev + ig * gg : cprev;
                gt[j] = ig;
                gt[H + j] = fg;
                gt[2 * H + j] = gg;
                gt[3 * H + j] = o;
                ws[oc + (size_t)B * H + ci] = c;
                hnew = o * nn__rec_tanh(c);
                if (proj) {
                    ws[ou + ci] = active ? hnew : 0.0f;
                    continue;
                }
            } else if (kind == NN__REC_GRU) {
                float r = nn__rec_sig(NN__REC_PRE(0)), z = nn__rec_sig(NN__REC_PRE(1));
                float hn = p[2 * H + j] + (bias ? bias[2 * H + j] : 0.0f);
                float n = nn__rec_tanh(x[2 * H + j] + r * hn);
                gt[j] = r;
                gt[H + j] = z;
                gt[2 * H + j] = n;
                ws[ohn + ci] = hn;
                hnew = (1.0f - z) * n + z * hprev;
            } else {
                float v = NN__REC_PRE(0);
                hnew = kind == NN__REC_RNN_TANH ? nn__rec_tanh(v) : (v <= 0.0f ? 0.0f : v);
                gt[j] = hnew;
            }
#undef NN__REC_PRE
            ws[oh + (size_t)B * Hr + hi] = active ? hnew : hprev;
            y[hi] = active ? hnew : 0.0f;
        }
    }
}

/* With a projection, after the step's projection GEMM (rec_proj_fix). */
static void nn__cpu_rec_proj_fix(int B, int b0, int b1, int Hr, int t, const int32_t *lens, float *ws, float *y, size_t oh) {
    int i;
    for (i = b0 * Hr; i < b1 * Hr; i++) {
        int active = !lens || t < lens[i / Hr];
        if (active) {
            y[i] = ws[oh + (size_t)B * Hr + i];
        } else {
            ws[oh + (size_t)B * Hr + i] = ws[oh + i];
            y[i] = 0.0f;
        }
    }
}

/* One step backward (rec_gates_bwd): gy the output's gradient at step t [B, Hr]; dh [B, Hr]
   and dc [B, H] the running state gradients; dxp the step's input-product gradient
   [B, G*H], dhp its state-product gradient; du (proj) the gradient of o*tanh(c) [B, H]. */
static void nn__cpu_rec_gates_bwd(int kind, int B, int b0, int b1, int H, int Hr, int t, const float *ws, const float *gy,
                                  const int32_t *lens, const float *du, float *dh, float *dc, float *dxp,
                                  float *dhp, size_t og, size_t oh, size_t oc, size_t ohn) {
    int G = kind == NN__REC_LSTM ? 4 : kind == NN__REC_GRU ? 3 : 1, b, j, k;
    for (b = b0; b < b1; b++) {
        int active = !lens || t < lens[b];
        const float *gt = ws + og + (size_t)b * G * H;
        float *dx = dxp + (size_t)b * G * H, *dp = dhp + (size_t)b * G * H;
#if defined(NN__VM_X86)
        if (kind == NN__REC_LSTM && active && nn__vm_isa() >= 1) {
            const float *cc = ws + oc + (size_t)B * H + (size_t)b * H, *cp = ws + oc + (size_t)b * H;
            const float *dub = du ? du + (size_t)b * H : NULL;
            if (nn__vm_isa() == 2)
                nn__rec_lstm_bwd_avx512(H, gt, cc, cp, dub, dh + (size_t)b * Hr, gy + (size_t)b * Hr, dc + (size_t)b * H, dx, dp);
            else
                nn__rec_lstm_bwd_avx2(H, gt, cc, cp, dub, dh + (size_t)b * Hr, gy + (size_t)b * Hr, dc + (size_t)b * H, dx, dp);
            continue;
        }
#endif
        for (j = 0; j < H; j++) {
            size_t hi = (size_t)b * Hr + j, ci = (size_t)b * H + j;
            float d = du ? du[ci] : dh[hi] + (active ? gy[hi] : 0.0f);
            if (!active) {
                for (k = 0; k < G; k++) dx[k * H + j] = dp[k * H + j] = 0.0f;
                if (!du) dh[hi] = d;
                continue;
            }
            if (kind == NN__REC_LSTM) {
                float ig = gt[j], fg = gt[H + j], gg = gt[2 * H + j], o = gt[3 * H + j];
                float c = ws[oc + (size_t)B * H + ci], cprev = ws[oc + ci];
                float tc = nn__rec_tanh(c);
                float dct = dc[ci] + d * o * (1.0f - tc * tc);
                float di = dct * gg * ig * (1.0f - ig), df = dct * cprev * fg * (1.0f - fg);
                float dg = dct * ig * (1.0f - gg * gg), d_o = d * tc * o * (1.0f - o);
                dx[j] = dp[j] = di;
                dx[H + j] = dp[H + j] = df;
                dx[2 * H + j] = dp[2 * H + j] = dg;
                dx[3 * H + j] = dp[3 * H + j] = d_o;
                dc[ci] = dct * fg;
                if (!du) dh[hi] = 0.0f;
            } else if (kind == NN__REC_GRU) {
                float r = gt[j], z = gt[H + j], n = gt[2 * H + j], hn = ws[ohn + ci], hprev = ws[oh + hi];
                float dn = d * (1.0f - z) * (1.0f - n * n);
                float dr = dn * hn * r * (1.0f - r), dz = d * (hprev - n) * z * (1.0f - z);
                dx[j] = dp[j] = dr;
                dx[H + j] = dp[H + j] = dz;
                dx[2 * H + j] = dn;
                dp[2 * H + j] = dn * r;
                dh[hi] = d * z;
            } else {
                float h = gt[j];
                float v = kind == NN__REC_RNN_TANH ? d * (1.0f - h * h) : (h > 0.0f ? d : 0.0f);
                dx[j] = dp[j] = v;
                dh[hi] = 0.0f;
            }
        }
    }
}

/* With a projection, before a step backward (rec_proj_bwd): dht = the state's gradient of
   the active rows (0 for frozen ones), whose dh then restarts at 0. */
static void nn__cpu_rec_proj_bwd(int b0, int b1, int Hr, int t, const int32_t *lens, const float *gy, float *dh, float *dht) {
    int i;
    for (i = b0 * Hr; i < b1 * Hr; i++) {
        int active = !lens || t < lens[i / Hr];
        if (active) {
            dht[i] = dh[i] + gy[i];
            dh[i] = 0.0f;
        } else {
            dht[i] = 0.0f;
        }
    }
}

/* A sequence node's (or its gradient's) time loop, each task a slice of batch rows. off:
   the workspace's offsets (nn__rec_ws_layout); grad: xp is gy, hp dhp [T*B, G*H], y the
   packed gradients (po: nn__rec_grad_layout), dht and du the projection's scratch. */
typedef struct {
    const nn__rec_attr *a;
    const float *xp, *whh, *bias, *whr;
    const int32_t *lens;
    float *ws, *y, *hp, *dht, *du;
    int64_t off[5], po[6];
    int per;               /* rows per task */
    nn__gemm_pb pb;        /* W_hh packed once per run, in the node's scratch */
    unsigned char *mem;    /* the tasks' memory, task_bytes each: */
    size_t task_bytes, e_bytes, gw_bytes; /* the LSTM's vector-exp row, then GEMM packing */
} nn__rec_job;

/* The time loop's tasks: the pool's threads, at most one per batch row, *per rows each. */
static int nn__cpu_rec_tasks(const nn__threadpool *pool, int B, int *per) {
    int tasks = nn__threadpool_size(pool);
    if (tasks > B) tasks = B;
    if (tasks < 1) tasks = 1;
    *per = (B + tasks - 1) / tasks;
    return (B + *per - 1) / *per;
}

static size_t nn__rec_round64(size_t n) { return (n + 63) / 64 * 64; }

/* The CPU memory of a time loop (grad: its gradient's), planned with the node (after its
   own scratch): W_hh packed, then per task the LSTM forward's vector-exp row (8H floats)
   and the packing memory of its GEMMs (the state's product against the packed W_hh, the
   projection's product: one at a time, so they share it). Fills J's sizes when J is not
   NULL; returns the floats. A run then allocates nothing. */
static int64_t nn__cpu_rec_mem(const nn__threadpool *pool, const nn__rec_attr *a, int grad, nn__rec_job *J) {
    int per, tasks = nn__cpu_rec_tasks(pool, a->B, &per), GH = a->G * a->H, k;
    int nbs[2];
    size_t pb, e = 0, gw = 0;
    nbs[0] = per, nbs[1] = a->B - (tasks - 1) * per;
    pb = nn__rec_round64(grad ? nn__gemm_pb_bytes(GH, a->Hr) : nn__gemm_pb_bytes(a->Hr, GH));
    if (!grad && a->kind == NN__REC_LSTM) e = nn__rec_round64(sizeof(float) * 8 * (size_t)a->H);
    for (k = 0; k < 2; k++) {
        size_t s = grad ? nn__sgemm_pb_bytes(GH, a->Hr, nbs[k]) : nn__sgemm_pb_bytes(a->Hr, GH, nbs[k]);
        if (s > gw) gw = s;
        if (a->i_whr >= 0) {
            s = grad ? nn__sgemm_mem_bytes(0, 0, nbs[k], a->H, a->Hr) : nn__sgemm_mem_bytes(0, 1, nbs[k], a->Hr, a->H);
            if (s > gw) gw = s;
        }
    }
    gw = nn__rec_round64(gw);
    if (J) {
        J->per = per;
        J->e_bytes = e;
        J->gw_bytes = gw;
        J->task_bytes = e + gw;
    }
    return (int64_t)((pb + (size_t)tasks * (e + gw)) / sizeof(float));
}

static void nn__cpu_rec_seq_task(void *arg, int task, int n_tasks) {
    const nn__rec_job *J = (const nn__rec_job *)arg;
    const nn__rec_attr *a = J->a;
    int T = a->T, B = a->B, H = a->H, Hr = a->Hr, GH = a->G * a->H, s;
    int b0 = task * J->per, b1 = b0 + J->per < B ? b0 + J->per : B, nb = b1 - b0;
    size_t BHr = (size_t)B * Hr, BH = (size_t)B * H;
    float *ws = J->ws, *hp = J->hp + (size_t)b0 * GH;
    unsigned char *mem = J->mem + (size_t)task * J->task_bytes;
    float *e = J->e_bytes ? (float *)(void *)mem : NULL; /* LSTM: the vector gate math */
    void *gw = mem + J->e_bytes;
    (void)n_tasks;
    if (nb <= 0) return;
    for (s = 0; s < T; s++) {
        int t = a->reverse ? T - 1 - s : s;
        size_t oh = (size_t)J->off[1] + s * BHr;
        (void)nn__sgemm_pb(gw, J->gw_bytes, &J->pb, 0, nb, 1.0f, ws + oh + (size_t)b0 * Hr, Hr, 0.0f, hp, GH);
        nn__cpu_rec_gates_fwd(a->kind, B, b0, b1, H, Hr, t, J->xp + (size_t)t * B * GH, J->hp, J->bias, J->lens, ws,
                              J->y + (size_t)t * BHr, J->whr != NULL, (size_t)J->off[0] + s * (size_t)B * GH, oh,
                              (size_t)J->off[2] + s * BH, (size_t)J->off[3] + s * BH, (size_t)J->off[4] + s * BH, e);
        if (J->whr) {
            (void)nn__sgemm_mem(gw, J->gw_bytes, 0, 1, nb, Hr, H, 1.0f, ws + J->off[3] + s * BH + (size_t)b0 * H, H, J->whr,
                                H, 0.0f, ws + oh + BHr + (size_t)b0 * Hr, Hr);
            nn__cpu_rec_proj_fix(B, b0, b1, Hr, t, J->lens, ws, J->y + (size_t)t * BHr, oh);
        }
    }
}

static void nn__cpu_rec_grad_task(void *arg, int task, int n_tasks) {
    const nn__rec_job *J = (const nn__rec_job *)arg;
    const nn__rec_attr *a = J->a;
    int T = a->T, B = a->B, H = a->H, Hr = a->Hr, GH = a->G * a->H, s;
    int b0 = task * J->per, b1 = b0 + J->per < B ? b0 + J->per : B, nb = b1 - b0;
    size_t BHr = (size_t)B * Hr, BH = (size_t)B * H;
    const float *gy = J->xp, *ws = J->ws;
    float *pk = J->y, *dh = J->y + J->po[1], *dc = J->y + J->po[2];
    void *gw = J->mem + (size_t)task * J->task_bytes + J->e_bytes;
    (void)n_tasks;
    if (nb <= 0) return;
    for (s = T - 1; s >= 0; s--) {
        int t = a->reverse ? T - 1 - s : s;
        float *dhp_s = J->hp + (size_t)s * B * GH;
        if (J->whr) {
            nn__cpu_rec_proj_bwd(b0, b1, Hr, t, J->lens, gy + (size_t)t * BHr, dh, J->dht + s * BHr);
            (void)nn__sgemm_mem(gw, J->gw_bytes, 0, 0, nb, H, Hr, 1.0f, J->dht + s * BHr + (size_t)b0 * Hr, Hr, J->whr, H,
                                0.0f, J->du + (size_t)b0 * H, H);
        }
        nn__cpu_rec_gates_bwd(a->kind, B, b0, b1, H, Hr, t, ws, gy + (size_t)t * BHr, J->lens, J->whr ? J->du : NULL,
                              dh, dc, pk + J->po[0] + (size_t)t * B * GH, dhp_s, (size_t)J->off[0] + s * (size_t)B * GH,
                              (size_t)J->off[1] + s * BHr, (size_t)J->off[2] + s * BH, (size_t)J->off[4] + s * BH);
        (void)nn__sgemm_pb(gw, J->gw_bytes, &J->pb, 0, nb, 1.0f, dhp_s + (size_t)b0 * GH, GH, 1.0f, dh + (size_t)b0 * Hr,
                           Hr);
    }
}

/* Runs the time loop of job J (its pointers and offsets set) over the pool's threads, with
   W_hh packed once for all steps and threads (op(W_hh) [K, N] = W_hh^T forward, W_hh
   backward), in mem: nn__cpu_rec_mem's floats, planned with the node. */
static void nn__cpu_rec_run(nn__threadpool *pool, nn__rec_job *J, nn__task_fn fn, int grad, float *mem) {
    int GH = J->a->G * J->a->H, Hr = J->a->Hr, tasks;
    (void)nn__cpu_rec_mem(pool, J->a, grad, J);
    if (grad) nn__gemm_pb_pack(&J->pb, 0, GH, Hr, J->whh, Hr, mem);
    else nn__gemm_pb_pack(&J->pb, 1, Hr, GH, J->whh, Hr, mem);
    J->mem = (unsigned char *)mem + nn__rec_round64(grad ? nn__gemm_pb_bytes(GH, Hr) : nn__gemm_pb_bytes(Hr, GH));
    tasks = (J->a->B + J->per - 1) / J->per;
    if (tasks <= 1) fn(J, 0, 1);
    else nn__threadpool_run(pool, fn, J, tasks);
}

/* y[j] = sum over r of x[r * cols + j], in order of r (rec_colsum) */
static void nn__cpu_rec_colsum(const float *x, float *y, int rows, int cols) {
    int r, j;
    for (j = 0; j < cols; j++) y[j] = 0.0f;
    for (r = 0; r < rows; r++)
        for (j = 0; j < cols; j++) y[j] += x[(size_t)r * cols + j];
}

/* nn_last_valid (kernels/recurrent.cl last_valid_fwd/bwd): the row's last valid step,
   lengths clamped to [1, T]; x [T, B, F] or (bf) [B, T, F]. */
static int nn__last_t(const int32_t *lens, int b, int T) { return lens[b] < 1 ? 0 : lens[b] > T ? T - 1 : lens[b] - 1; }
static size_t nn__last_at(int bf, int T, int B, int F, int t, int b) {
    return bf ? ((size_t)b * T + t) * F : ((size_t)t * B + b) * F;
}
static void nn__cpu_last_valid_fwd(const float *x, const int32_t *lens, float *y, int T, int B, int F, int bf) {
    int b;
    for (b = 0; b < B; b++) memcpy(y + (size_t)b * F, x + nn__last_at(bf, T, B, F, nn__last_t(lens, b, T), b), (size_t)F * 4);
}
static void nn__cpu_last_valid_bwd(const float *dy, const int32_t *lens, float *dx, int T, int B, int F, int bf) {
    int b;
    memset(dx, 0, (size_t)T * B * F * 4);
    for (b = 0; b < B; b++) memcpy(dx + nn__last_at(bf, T, B, F, nn__last_t(lens, b, T), b), dy + (size_t)b * F, (size_t)F * 4);
}

/* nn_bidirectional's reversal (rec_reverse): each row's first lens[b] steps (clamped to
   [1, T]; lens NULL: all T) reversed, the rest copied */
static void nn__cpu_rec_reverse_loop(const float *x, const int32_t *lens, float *y, int T, int B, int F, int bf) {
    int b, t;
    for (b = 0; b < B; b++) {
        int n = lens ? nn__last_t(lens, b, T) + 1 : T;
        for (t = 0; t < T; t++)
            memcpy(y + nn__last_at(bf, T, B, F, t, b), x + nn__last_at(bf, T, B, F, t < n ? n - 1 - t : t, b), (size_t)F * 4);
    }
}
