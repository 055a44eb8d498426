#include "kargs.h"
#include "conv3d_args.h"

/* 3-D convolutions, direct formulation as in conv.cl: one work-item per output element of
   each pass, every sum in a fixed order, no atomics. Layout NCDHW, weights
   [K, C/G, KD, KH, KW]. The geometry arrives as two int8s: ga = (sd, sh, sw, pd, ph, pw,
   dd, dh) and gb = (dw, G, unused...). */

/* y [N, K, OD, OH, OW] = sum over the group's input channels and the window, + bias; a
   tap on the zero padding adds 0 * w, as conv2d_forward */
__kernel void conv3d_forward(NN__KPARAMS(conv3d_forward)) {
    int i = get_global_id(0);
    if (i >= N * K * OD * OH * OW) return;
    int ow = i % OW, oh = (i / OW) % OH, od = (i / (OW * OH)) % OD, k = (i / (OW * OH * OD)) % K;
    int n = i / (OW * OH * OD * K);
    int G = gb.s1, Cg = C / G, Kg = K / G, g = k / Kg;
    float acc = has_bias ? b[k] : 0.0f;
    for (int ci = 0; ci < Cg; ci++) {
        __global const float *xc = x + ((size_t)n * C + g * Cg + ci) * D * H * W;
        __global const float *wc = w + ((size_t)k * Cg + ci) * KD * KH * KW;
        for (int kd = 0; kd < KD; kd++) {
            int id = od * ga.s0 - ga.s3 + kd * ga.s6, in_d = id >= 0 && id < D;
            for (int kh = 0; kh < KH; kh++) {
                int ih = oh * ga.s1 - ga.s4 + kh * ga.s7, in_dh = in_d && ih >= 0 && ih < H;
                for (int kw = 0; kw < KW; kw++) {
                    int iw = ow * ga.s2 - ga.s5 + kw * gb.s0;
                    float xv = 0.0f;
                    if (in_dh && iw >= 0 && iw < W) xv = xc[(id * H + ih) * W + iw];
                    acc += xv * wc[(kd * KH + kh) * KW + kw];
                }
            }
        }
    }
    y[i] = acc;
}

/* dx [N, C, D, H, W]: each input voxel sums dy * w over the outputs whose window covers it */
__kernel void conv3d_backward_data(NN__KPARAMS(conv3d_backward_data)) {
    int i = get_global_id(0);
    if (i >= N * C * D * H * W) return;
    int iw = i % W, ih = (i / W) % H, id = (i / (W * H)) % D, c = (i / (W * H * D)) % C, n = i / (W * H * D * C);
    int G = gb.s1, Cg = C / G, Kg = K / G, g = c / Cg, ci = c - g * Cg;
    float acc = 0.0f;
    for (int kd = 0; kd < KD; kd++) {
        int td = id + ga.s3 - kd * ga.s6; /* = od * sd */
        if (td < 0 || td % ga.s0) continue;
        int od = td / ga.s0;
        if (od >= OD) continue;
        for (int kh = 0; kh < KH; kh++) {
            int th = ih + ga.s4 - kh * ga.s7;
            if (th < 0 || th % ga.s1) continue;
            int oh = th / ga.s1;
            if (oh >= OH) continue;
            for (int kw = 0; kw < KW; kw++) {
                int tw = iw + ga.s5 - kw * gb.s0;
                if (tw < 0 || tw % ga.s2) continue;
                int ow = tw / ga.s2;
                if (ow >= OW) continue;
                for (int kk = 0; kk < Kg; kk++) {
                    int k = g * Kg + kk;
                    acc += dy[((((size_t)n * K + k) * OD + od) * OH + oh) * OW + ow] *
                           w[((((size_t)k * Cg + ci) * KD + kd) * KH + kh) * KW + kw];
                }
            }
        }
    }
    dx[i] = acc;
}

/* dw [K, C/G, KD, KH, KW]: each weight sums dy * x over the batch and the output positions,
   x = 0 on the padding (dy * 0: a NaN or inf dy there is NaN, as on the GEMM path) */
__kernel void conv3d_backward_weight(NN__KPARAMS(conv3d_backward_weight)) {
    int G = gb.s1, Cg = C / G, Kg = K / G;
    int i = get_global_id(0);
    if (i >= K * Cg * KD * KH * KW) return;
    int kw = i % KW, kh = (i / KW) % KH, kd = (i / (KW * KH)) % KD, ci = (i / (KW * KH * KD)) % Cg;
    int k = i / (KW * KH * KD * Cg), g = k / Kg;
    float acc = 0.0f;
    for (int n = 0; n < N; n++) {
        __global const float *xc = x + ((size_t)n * C + g * Cg + ci) * D * H * W;
        __global const float *dyk = dy + ((size_t)n * K + k) * OD * OH * OW;
        float part = 0.0f; /* per image, as conv.cl's conv2d_backward_weight */
        for (int od = 0; od < OD; od++) {
            int id = od * ga.s0 - ga.s3 + kd * ga.s6, in_d = id >= 0 && id < D;
            for (int oh = 0; oh < OH; oh++) {
                int ih = oh * ga.s1 - ga.s4 + kh * ga.s7, in_dh = in_d && ih >= 0 && ih < H;
                for (int ow = 0; ow < OW; ow++) {
                    int iw = ow * ga.s2 - ga.s5 + kw * gb.s0;
                    float xv = 0.0f;
                    if (in_dh && iw >= 0 && iw < W) xv = xc[(id * H + ih) * W + iw];
                    part += dyk[(od * OH + oh) * OW + ow] * xv;
                }
            }
        }
        acc += part;
    }
    dw[i] = acc;
}
