/* The recurrent family's CPU loops (src/ops/recurrent.c calls them per time step, between
   its GEMMs): the same gate math, offsets and frozen rows as kernels/recurrent.cl, on the
   calling thread (a step's gate math is too small to wake the pool for). */
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

/* One step forward over rows b < B (kernels/recurrent.cl rec_gates_fwd). xp, hp: this
   step's input and state products [B, G*H]; bias [G*H] or NULL; lens NULL or [B]; ws the
   node's workspace; y the output row block of step t [B, Hr]. */
static void nn__cpu_rec_gates_fwd(int kind, int B, int H, int Hr, int t, const float *xp, const float *hp,
                                  const float *bias, const int32_t *lens, float *ws, float *y, int proj, size_t og,
                                  size_t oh, size_t oc, size_t ou, size_t ohn) {
    int G = kind == NN__REC_LSTM ? 4 : kind == NN__REC_GRU ? 3 : 1, b, j;
    for (b = 0; b < B; b++) {
        int active = !lens || t < lens[b];
        const float *x = xp + (size_t)b * G * H, *p = hp + (size_t)b * G * H;
        float *gt = ws + og + (size_t)b * G * H;
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
static void nn__cpu_rec_proj_fix(int B, int Hr, int t, const int32_t *lens, float *ws, float *y, size_t oh) {
    int i;
    for (i = 0; i < B * Hr; i++) {
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
static void nn__cpu_rec_gates_bwd(int kind, int B, int H, int Hr, int t, const float *ws, const float *gy,
                                  const int32_t *lens, const float *du, float *dh, float *dc, float *dxp,
                                  float *dhp, size_t og, size_t oh, size_t oc, size_t ohn) {
    int G = kind == NN__REC_LSTM ? 4 : kind == NN__REC_GRU ? 3 : 1, b, j, k;
    for (b = 0; b < B; b++) {
        int active = !lens || t < lens[b];
        const float *gt = ws + og + (size_t)b * G * H;
        float *dx = dxp + (size_t)b * G * H, *dp = dhp + (size_t)b * G * H;
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
static void nn__cpu_rec_proj_bwd(int B, int Hr, int t, const int32_t *lens, const float *gy, float *dh, float *dht) {
    int i;
    for (i = 0; i < B * Hr; i++) {
        int active = !lens || t < lens[i / Hr];
        if (active) {
            dht[i] = dh[i] + gy[i];
            dh[i] = 0.0f;
        } else {
            dht[i] = 0.0f;
        }
    }
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
