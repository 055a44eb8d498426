/* Convolutions, direct formulation: one work-item per output element of each pass, so
   every sum runs in a fixed order without atomics. Layout NCHW, weights [K, C/G, KH, KW].
   The geometry arrives as an int8: (sh, sw, ph, pw, dh, dw, G, unused). */

/* y [N, K, OH, OW] = sum over the group's input channels and the window, + bias */
__kernel void conv2d_forward(__global const float *x, __global const float *w, __global const float *b,
                             __global float *y, const int N, const int C, const int H, const int W,
                             const int K, const int KH, const int KW, const int OH, const int OW,
                             const int8 geo, const int has_bias) {
    int i = get_global_id(0);
    if (i >= N * K * OH * OW) return;
    int ow = i % OW, oh = (i / OW) % OH, k = (i / (OW * OH)) % K, n = i / (OW * OH * K);
    int G = geo.s6, Cg = C / G, Kg = K / G, g = k / Kg;
    float acc = has_bias ? b[k] : 0.0f;
    for (int ci = 0; ci < Cg; ci++) {
        __global const float *xc = x + ((size_t)n * C + g * Cg + ci) * H * W;
        __global const float *wc = w + ((size_t)k * Cg + ci) * KH * KW;
        for (int kh = 0; kh < KH; kh++) {
            int ih = oh * geo.s0 - geo.s2 + kh * geo.s4;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; kw++) {
                int iw = ow * geo.s1 - geo.s3 + kw * geo.s5;
                if (iw >= 0 && iw < W) acc += xc[ih * W + iw] * wc[kh * KW + kw];
            }
        }
    }
    y[i] = acc;
}

/* dx [N, C, H, W]: each input pixel sums dy * w over the outputs whose window covers it */
__kernel void conv2d_backward_data(__global const float *w, __global const float *dy, __global float *dx,
                                   const int N, const int C, const int H, const int W, const int K,
                                   const int KH, const int KW, const int OH, const int OW, const int8 geo) {
    int i = get_global_id(0);
    if (i >= N * C * H * W) return;
    int iw = i % W, ih = (i / W) % H, c = (i / (W * H)) % C, n = i / (W * H * C);
    int G = geo.s6, Cg = C / G, Kg = K / G, g = c / Cg, ci = c - g * Cg;
    float acc = 0.0f;
    for (int kh = 0; kh < KH; kh++) {
        int th = ih + geo.s2 - kh * geo.s4; /* = oh * sh */
        if (th < 0 || th % geo.s0) continue;
        int oh = th / geo.s0;
        if (oh >= OH) continue;
        for (int kw = 0; kw < KW; kw++) {
            int tw = iw + geo.s3 - kw * geo.s5;
            if (tw < 0 || tw % geo.s1) continue;
            int ow = tw / geo.s1;
            if (ow >= OW) continue;
            for (int kk = 0; kk < Kg; kk++) {
                int k = g * Kg + kk;
                acc += dy[(((size_t)n * K + k) * OH + oh) * OW + ow] * w[(((size_t)k * Cg + ci) * KH + kh) * KW + kw];
            }
        }
    }
    dx[i] = acc;
}

/* dw [K, C/G, KH, KW]: each weight sums dy * x over the batch and the output positions,
   one image at a time into its own partial sum, then the images' partial sums: a single
   accumulator over N*OH*OW products loses the small terms to its rounding (the error of a
   50176-term sum was ~1e-4 relative, against ~3e-6 this way) */
__kernel void conv2d_backward_weight(__global const float *x, __global const float *dy, __global float *dw,
                                     const int N, const int C, const int H, const int W, const int K,
                                     const int KH, const int KW, const int OH, const int OW, const int8 geo) {
    int G = geo.s6, Cg = C / G, Kg = K / G;
    int i = get_global_id(0);
    if (i >= K * Cg * KH * KW) return;
    int kw = i % KW, kh = (i / KW) % KH, ci = (i / (KW * KH)) % Cg, k = i / (KW * KH * Cg);
    int g = k / Kg;
    float acc = 0.0f;
    for (int n = 0; n < N; n++) {
        __global const float *xc = x + ((size_t)n * C + g * Cg + ci) * H * W;
        __global const float *dyk = dy + ((size_t)n * K + k) * OH * OW;
        float part = 0.0f;
        for (int oh = 0; oh < OH; oh++) {
            int ih = oh * geo.s0 - geo.s2 + kh * geo.s4;
            if (ih < 0 || ih >= H) continue;
            for (int ow = 0; ow < OW; ow++) {
                int iw = ow * geo.s1 - geo.s3 + kw * geo.s5;
                if (iw >= 0 && iw < W) part += dyk[oh * OW + ow] * xc[ih * W + iw];
            }
        }
        acc += part;
    }
    dw[i] = acc;
}

/* y [C] = sum over N and S of x [N, C, S], a partial sum per n as above */
__kernel void channel_sum(__global const float *x, __global float *y, const int N, const int C, const int S) {
    int c = get_global_id(0);
    if (c >= C) return;
    float acc = 0.0f;
    for (int n = 0; n < N; n++) {
        float part = 0.0f;
        for (int s = 0; s < S; s++) part += x[((size_t)n * C + c) * S + s];
        acc += part;
    }
    y[c] = acc;
}
