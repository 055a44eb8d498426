/* The recurrent family (src/ops/recurrent.c): a sequence node's time loop enqueues, per
   step, a GEMM of kernels/gemm.cl for the state's product and one of the fused gate
   kernels here. Gates: LSTM i, f, g, o; GRU r, z, n (n's hidden part reset after the
   product); RNN tanh or relu. A row b is active at step t when t < lens[b] (no lengths:
   always): a frozen row keeps its states and outputs 0. Offsets are in floats. */
#include "kargs.h"
#include "recurrent_args.h"

#define NN__REC_SIG(v) (1.0f / (1.0f + exp(-(v))))

__kernel void rec_copy(NN__KPARAMS(rec_copy)) {
    int i = get_global_id(0);
    if (i >= n) return;
    dst[odst + i] = has_src ? src[osrc + i] : 0.0f;
}

/* kind 0 tanh, 1 relu, 2 LSTM, 3 GRU. ws: gates at og ([B, G*H] activated), the states h
   at oh (this step's input; the next at oh + B*Hr), c at oc (LSTM, likewise), U at ou (the
   LSTM's o*tanh(c) before its projection), the GRU's W_hn h + b_hn at ohn. */
__kernel void rec_gates_fwd(NN__KPARAMS(rec_gates_fwd)) {
    int idx = get_global_id(0);
    if (idx >= B * H) return;
    int b = idx / H, j = idx - b * H;
    int G = kind == 2 ? 4 : kind == 3 ? 3 : 1;
    int active = !has_len || t < lens[b];
    __global const float *x = xp + oxp + (size_t)b * G * H;
    __global const float *p = hp + (size_t)b * G * H;
    __global float *gt = ws + og + (size_t)b * G * H;
    size_t hi = (size_t)b * Hr + j, ci = (size_t)b * H + j;
    float hprev = ws[oh + hi];
    float hnew;
#define NN__REC_PRE(k) (x[(k) * H + j] + p[(k) * H + j] + (has_bias ? bias[(k) * H + j] : 0.0f))
    if (kind == 2) {
        float ig = NN__REC_SIG(NN__REC_PRE(0)), fg = NN__REC_SIG(NN__REC_PRE(1));
        float gg = tanh(NN__REC_PRE(2)), og_ = NN__REC_SIG(NN__REC_PRE(3));
        float cprev = ws[oc + ci];
        float c = active ? fg * cprev + ig * gg : cprev;
        gt[j] = ig;
        gt[H + j] = fg;
        gt[2 * H + j] = gg;
        gt[3 * H + j] = og_;
        ws[oc + (size_t)B * H + ci] = c;
        hnew = og_ * tanh(c);
        if (proj) {
            ws[ou + ci] = active ? hnew : 0.0f;
            return;
        }
    } else if (kind == 3) {
        float r = NN__REC_SIG(NN__REC_PRE(0)), z = NN__REC_SIG(NN__REC_PRE(1));
        float hn = p[2 * H + j] + (has_bias ? bias[2 * H + j] : 0.0f);
        float nn_ = tanh(x[2 * H + j] + r * hn);
        gt[j] = r;
        gt[H + j] = z;
        gt[2 * H + j] = nn_;
        ws[ohn + ci] = hn;
        hnew = (1.0f - z) * nn_ + z * hprev;
    } else {
        float v = NN__REC_PRE(0);
        hnew = kind == 0 ? tanh(v) : (v <= 0.0f ? 0.0f : v);
        gt[j] = hnew;
    }
#undef NN__REC_PRE
    ws[oh + (size_t)B * Hr + hi] = active ? hnew : hprev;
    y[oy + hi] = active ? hnew : 0.0f;
}

__kernel void rec_proj_fix(NN__KPARAMS(rec_proj_fix)) {
    int idx = get_global_id(0);
    if (idx >= B * Hr) return;
    int b = idx / Hr;
    int active = !has_len || t < lens[b];
    if (active) {
        y[oy + idx] = ws[oh + (size_t)B * Hr + idx];
    } else {
        ws[oh + (size_t)B * Hr + idx] = ws[oh + idx];
        y[oy + idx] = 0.0f;
    }
}

/* pk: the running dh at odh, dc at odc (LSTM), d(xp) of step t at odxp; sc: d(hp) of the
   step at odhp, and (proj) the gradient of o*tanh(c) at odu. gy: the output's gradient at ogy. */
__kernel void rec_gates_bwd(NN__KPARAMS(rec_gates_bwd)) {
    int idx = get_global_id(0);
    if (idx >= B * H) return;
    int b = idx / H, j = idx - b * H;
    int G = kind == 2 ? 4 : kind == 3 ? 3 : 1;
    int active = !has_len || t < lens[b];
    __global const float *gt = ws + og + (size_t)b * G * H;
    __global float *dx = pk + odxp + (size_t)b * G * H;
    __global float *dp = sc + odhp + (size_t)b * G * H;
    size_t hi = (size_t)b * Hr + j, ci = (size_t)b * H + j;
    float dh = proj ? sc[odu + ci] : pk[odh + hi] + (active ? gy[ogy + hi] : 0.0f);
    if (!active) {
        for (int k = 0; k < G; k++) dx[k * H + j] = dp[k * H + j] = 0.0f;
        if (!proj) pk[odh + hi] = dh;
        return;
    }
    if (kind == 2) {
        float ig = gt[j], fg = gt[H + j], gg = gt[2 * H + j], o = gt[3 * H + j];
        float c = ws[oc + (size_t)B * H + ci], cprev = ws[oc + ci];
        float tc = tanh(c);
        float dc = pk[odc + ci] + dh * o * (1.0f - tc * tc);
        float di = dc * gg * ig * (1.0f - ig), df = dc * cprev * fg * (1.0f - fg);
        float dg = dc * ig * (1.0f - gg * gg), d_o = dh * tc * o * (1.0f - o);
        dx[j] = dp[j] = di;
        dx[H + j] = dp[H + j] = df;
        dx[2 * H + j] = dp[2 * H + j] = dg;
        dx[3 * H + j] = dp[3 * H + j] = d_o;
        pk[odc + ci] = dc * fg;
        if (!proj) pk[odh + hi] = 0.0f;
    } else if (kind == 3) {
        float r = gt[j], z = gt[H + j], nn_ = gt[2 * H + j], hn = ws[ohn + ci], hprev = ws[oh + hi];
        float dn = dh * (1.0f - z) * (1.0f - nn_ * nn_);
        float dr = dn * hn * r * (1.0f - r), dz = dh * (hprev - nn_) * z * (1.0f - z);
        dx[j] = dp[j] = dr;
        dx[H + j] = dp[H + j] = dz;
        dx[2 * H + j] = dn;
        dp[2 * H + j] = dn * r;
        pk[odh + hi] = dh * z;
    } else {
        float h = gt[j];
        float d = kind == 0 ? dh * (1.0f - h * h) : (h > 0.0f ? dh : 0.0f);
        dx[j] = dp[j] = d;
        pk[odh + hi] = 0.0f;
    }
}

__kernel void rec_proj_bwd(NN__KPARAMS(rec_proj_bwd)) {
    int idx = get_global_id(0);
    if (idx >= B * Hr) return;
    int b = idx / Hr;
    int active = !has_len || t < lens[b];
    if (active) {
        sc[odht + idx] = pk[odh + idx] + gy[ogy + idx];
        pk[odh + idx] = 0.0f;
    } else {
        sc[odht + idx] = 0.0f;
    }
}

__kernel void rec_len_check(NN__KPARAMS(rec_len_check)) {
    int i = get_global_id(0);
    if (i >= n) return;
    if (lens[i] < 1 || lens[i] > T) atomic_inc(bad + slot);
}

__kernel void rec_colsum(NN__KPARAMS(rec_colsum)) {
    int j = get_global_id(0);
    if (j >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++) s += x[ox + (size_t)r * cols + j];
    y[oy + j] = s;
}

/* the row's last valid step, lengths clamped to [1, T] */
#define NN__LAST_T(b) (lens[b] < 1 ? 0 : lens[b] > T ? T - 1 : lens[b] - 1)
#define NN__LAST_AT(tt, b, f) (bf ? ((size_t)(b) * T + (tt)) * nf + (f) : ((size_t)(tt) * B + (b)) * nf + (f))

__kernel void last_valid_fwd(NN__KPARAMS(last_valid_fwd)) {
    int idx = get_global_id(0);
    if (idx >= B * nf) return;
    int b = idx / nf, f = idx - b * nf;
    y[idx] = x[NN__LAST_AT(NN__LAST_T(b), b, f)];
}

/* dx [T, B, F] (bf: [B, T, F]): dy at each row's last step, 0 elsewhere; a work-item per element */
__kernel void last_valid_bwd(NN__KPARAMS(last_valid_bwd)) {
    int idx = get_global_id(0);
    if (idx >= T * B * nf) return;
    int f = idx % nf, rest = idx / nf, b, tt;
    if (bf) b = rest / T, tt = rest - b * T;
    else tt = rest / B, b = rest - tt * B;
    dx[idx] = tt == NN__LAST_T(b) ? dy[(size_t)b * nf + f] : 0.0f;
}

/* each row's valid steps reversed (nn_bidirectional), a work-item per element; the
   permutation is its own inverse, so it is its own gradient */
__kernel void rec_reverse(NN__KPARAMS(rec_reverse)) {
    int idx = get_global_id(0);
    if (idx >= T * B * nf) return;
    int f = idx % nf, rest = idx / nf, b, tt;
    if (bf) b = rest / T, tt = rest - b * T;
    else tt = rest / B, b = rest - tt * B;
    int n = has_len ? NN__LAST_T(b) + 1 : T;
    int src = tt < n ? n - 1 - tt : tt;
    y[idx] = x[NN__LAST_AT(src, b, f)];
}
