#include "kargs.h"
#include "storage.h"
#include "conv_args.h"

/* Convolutions, direct formulation: one work-item per output element of each pass, so
   every sum runs in a fixed order without atomics. The three direct kernels read and write
   through kernels/storage.h: built with -DNN_STORE_BF16 / -DNN_STORE_F16 they are the
   16-bit convolutions (float32 sums, one rounding per output); built with neither they are
   the float32 kernels, the same accesses as before. Layout NCHW, weights [K, C/G, KH, KW].
   The geometry arrives as an int8: (sh, sw, ph, pw, dh, dw, G, unused). */

/* y [N, K, OH, OW] = sum over the group's input channels and the window, + bias. A tap on
   the zero padding adds 0 * w, as the GEMM path (and PyTorch) does: a NaN or inf weight
   makes every output of its channel NaN, at the border too; for finite weights it adds
   nothing. */
__kernel void conv2d_forward(NN__KPARAMS(conv2d_forward)) {
    int i = get_global_id(0);
    if (i >= N * K * OH * OW) return;
    int ow = i % OW, oh = (i / OW) % OH, k = (i / (OW * OH)) % K, n = i / (OW * OH * K);
    int G = geo.s6, Cg = C / G, Kg = K / G, g = k / Kg;
    float acc = has_bias ? NN__SLOAD(b, k) : 0.0f;
    for (int ci = 0; ci < Cg; ci++) {
        size_t xc = ((size_t)n * C + g * Cg + ci) * H * W, wc = ((size_t)k * Cg + ci) * KH * KW;
        for (int kh = 0; kh < KH; kh++) {
            int ih = oh * geo.s0 - geo.s2 + kh * geo.s4, row = ih >= 0 && ih < H;
            for (int kw = 0; kw < KW; kw++) {
                int iw = ow * geo.s1 - geo.s3 + kw * geo.s5;
                float xv = 0.0f;
                if (row && iw >= 0 && iw < W) xv = NN__SLOAD(x, xc + ih * W + iw);
                acc += xv * NN__SLOAD(w, wc + kh * KW + kw);
            }
        }
    }
    NN__SSTORE(y, i, acc);
}

/* dx [N, C, H, W]: each input pixel sums dy * w over the outputs whose window covers it */
__kernel void conv2d_backward_data(NN__KPARAMS(conv2d_backward_data)) {
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
                acc += NN__SLOAD(dy, (((size_t)n * K + k) * OH + oh) * OW + ow) *
                       NN__SLOAD(w, (((size_t)k * Cg + ci) * KH + kh) * KW + kw);
            }
        }
    }
    NN__SSTORE(dx, i, acc);
}

/* dw [K, C/G, KH, KW]: each weight sums dy * x over the batch and the output positions,
   one image at a time into its own partial sum, then the images' partial sums: a single
   accumulator over N*OH*OW products loses the small terms to its rounding (the error of a
   50176-term sum was ~1e-4 relative, against ~3e-6 this way). x is 0 on the padding, and
   dy * 0 is taken there too: a NaN or inf dy is NaN, as on the GEMM path. */
__kernel void conv2d_backward_weight(NN__KPARAMS(conv2d_backward_weight)) {
    int G = geo.s6, Cg = C / G, Kg = K / G;
    int i = get_global_id(0);
    if (i >= K * Cg * KH * KW) return;
    int kw = i % KW, kh = (i / KW) % KH, ci = (i / (KW * KH)) % Cg, k = i / (KW * KH * Cg);
    int g = k / Kg;
    float acc = 0.0f;
    for (int n = 0; n < N; n++) {
        size_t xc = ((size_t)n * C + g * Cg + ci) * H * W, dyk = ((size_t)n * K + k) * OH * OW;
        float part = 0.0f;
        for (int oh = 0; oh < OH; oh++) {
            int ih = oh * geo.s0 - geo.s2 + kh * geo.s4, row = ih >= 0 && ih < H;
            for (int ow = 0; ow < OW; ow++) {
                int iw = ow * geo.s1 - geo.s3 + kw * geo.s5;
                float xv = 0.0f;
                if (row && iw >= 0 && iw < W) xv = NN__SLOAD(x, xc + ih * W + iw);
                part += NN__SLOAD(dy, dyk + oh * OW + ow) * xv;
            }
        }
        acc += part;
    }
    NN__SSTORE(dw, i, acc);
}

/* y [C] = sum over N and S of x [N, C, S], a partial sum per n as above */
__kernel void channel_sum(NN__KPARAMS(channel_sum)) {
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

/* channel_sum on CPU devices (src/ops/conv/bias.c): item c adds each image's plane in 16
   lanes (vload16, a fixed tree, then the S mod 16 tail in order), the planes in n order as
   above; PoCL ran channel_sum's one chain of scalar adds an item (3.5% of the CNN step) */
__kernel void bias_sum_planes(NN__KPARAMS(channel_sum)) {
    int c = get_global_id(0);
    if (c >= C) return;
    float acc = 0.0f;
    for (int n = 0; n < N; n++) {
        __global const float *p = x + ((size_t)n * C + c) * S;
        float16 v = (float16)(0.0f);
        int s = 0;
        for (; s + 16 <= S; s += 16) v += vload16(0, p + s);
        float8 h = v.lo + v.hi;
        float4 q = h.lo + h.hi;
        float2 t = q.lo + q.hi;
        float part = t.x + t.y;
        for (; s < S; s++) part += p[s];
        acc += part;
    }
    y[c] = acc;
}

/* ---- the GEMM path (nn__conv2d_dev_plan in src/ops/conv/conv2d.c says when it is used) ----
   Column matrices are [C*KH*KW, ld]: row (c*KH + kh)*KW + kw, so the rows of group g are
   one contiguous block; column p = (n*OH + oh)*OW + ow runs over the whole batch, and
   columns P..ld-1 are zeros (padding for the K slices of the weight gradient). Operands
   live at float offsets `off` inside the node's scratch buffer. */

/* col = im2col(x) */
__kernel void conv2d_im2col_elems(NN__KPARAMS(conv2d_im2col)) {
    int i = get_global_id(0);
    if (i >= C * KH * KW * ld) return;
    int p = i % ld, row = i / ld;
    int kw = row % KW, kh = (row / KW) % KH, c = row / (KW * KH);
    float v = 0.0f;
    if (p < N * OH * OW) {
        int ow = p % OW, oh = (p / OW) % OH, n = p / (OW * OH);
        int ih = oh * geo.s0 - geo.s2 + kh * geo.s4, iw = ow * geo.s1 - geo.s3 + kw * geo.s5;
        if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = x[(((size_t)n * C + c) * H + ih) * W + iw];
    }
    col[off + (size_t)i] = v;
}

/* dx = col2im(dcol): each input pixel sums the column entries that read it, in (kh, kw)
   order (no atomics, the same order every run) */
__kernel void conv2d_col2im_elems(NN__KPARAMS(conv2d_col2im)) {
    int i = get_global_id(0);
    if (i >= N * C * H * W) return;
    int iw = i % W, ih = (i / W) % H, c = (i / (W * H)) % C, n = i / (W * H * C);
    float acc = 0.0f;
    for (int kh = 0; kh < KH; kh++) {
        int th = ih + geo.s2 - kh * geo.s4;
        if (th < 0 || th % geo.s0) continue;
        int oh = th / geo.s0;
        if (oh >= OH) continue;
        for (int kw = 0; kw < KW; kw++) {
            int tw = iw + geo.s3 - kw * geo.s5;
            if (tw < 0 || tw % geo.s1) continue;
            int ow = tw / geo.s1;
            if (ow >= OW) continue;
            acc += dcol[off + (size_t)((c * KH + kh) * KW + kw) * ld + ((size_t)n * OH + oh) * OW + ow];
        }
    }
    dx[i] = acc;
}

/* y [N, K, S] = out [K, ld] (columns n*S + s) + bias */
__kernel void conv2d_unpack_elems(NN__KPARAMS(conv2d_unpack)) {
    int i = get_global_id(0);
    if (i >= N * K * S) return;
    int s = i % S, k = (i / S) % K, n = i / (S * K);
    y[i] = out[off + (size_t)k * ld + (size_t)n * S + s] + (has_bias ? b[k] : 0.0f);
}

/* dyg [K, ld] (columns n*S + s, zeros past N*S) = dy [N, K, S] */
__kernel void conv2d_pack_elems(NN__KPARAMS(conv2d_pack)) {
    int i = get_global_id(0);
    if (i >= K * ld) return;
    int p = i % ld, k = i / ld;
    dyg[off + (size_t)i] = p < N * S ? dy[((size_t)(p / S) * K + k) * S + p % S] : 0.0f;
}

/* CPU devices (PoCL and the like) run the variants below: one work-item per row of
   contiguous floats, so the index arithmetic (divisions by runtime sizes) is paid once per
   row instead of once per float, and the inner loops are plain copies. */

/* the ow in [lo, hi) for which iw = ow*sw + off lies in [0, W) */
inline int2 ow_span(const int off, const int sw, const int W, const int OW) {
    int lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
    int hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / sw + 1;
    hi = min(hi, OW);
    return (int2)(min(lo, hi), hi);
}

/* conv2d_im2col_elems by rows: item (row, n) fills column row `row`'s OH*OW columns of
   image n, output row by output row, in work-groups of one item (src/ops/conv/conv2d.c);
   items past rows*N zero one row's padding */
__kernel void conv2d_im2col_rows(NN__KPARAMS(conv2d_im2col)) {
    int i = get_global_id(0), rows = C * KH * KW, P = N * OH * OW;
    if (i >= rows * N + rows) return;
    if (i >= rows * N) {
        __global float *r = col + off + (size_t)(i - rows * N) * ld;
        for (int p = P; p < ld; p++) r[p] = 0.0f;
        return;
    }
    /* each quotient once an item: on PoCL the divisions and a scalar copy were most of this
       kernel's time, and then the cost of an item (one output row of 14 floats in the CNN
       example's second convolution) */
    int row = i / N, n = i - row * N, rk = row / KW;
    int kw = row - rk * KW, c = rk / KH, kh = rk - c * KH;
    int o = kw * geo.s5 - geo.s3, sw = geo.s1;
    int2 s = ow_span(o, sw, W, OW);
    __global float *r = col + off + (size_t)row * ld + (size_t)n * OH * OW;
    __global const float *xc = x + ((size_t)n * C + c) * H * W;
    for (int oh = 0; oh < OH; oh++, r += OW) {
        int ih = oh * geo.s0 - geo.s2 + kh * geo.s4;
        if (ih < 0 || ih >= H) {
            for (int ow = 0; ow < OW; ow++) r[ow] = 0.0f;
            continue;
        }
        __global const float *xr = xc + (size_t)ih * W;
        for (int ow = 0; ow < s.x; ow++) r[ow] = 0.0f;
        if (sw == 1) {
            int ow = s.x;
            for (; ow + 4 <= s.y; ow += 4) vstore4(vload4(0, xr + ow + o), 0, r + ow); /* unaligned: vload4 at any float */
            for (; ow < s.y; ow++) r[ow] = xr[ow + o];
        } else
            for (int ow = s.x; ow < s.y; ow++) r[ow] = xr[ow * sw + o];
        for (int ow = s.y; ow < OW; ow++) r[ow] = 0.0f;
    }
}

/* conv2d_col2im_elems by planes: item (n, c) owns its input plane and adds the column rows into
   it in (kh, kw, oh, ow) order */
__kernel void conv2d_col2im_planes(NN__KPARAMS(conv2d_col2im)) {
    int i = get_global_id(0);
    if (i >= N * C) return;
    int c = i % C, n = i / C, sw = geo.s1;
    __global float *xp = dx + (size_t)i * H * W;
    int j = 0;
    for (; j + 4 <= H * W; j += 4) vstore4((float4)(0.0f), 0, xp + j);
    for (; j < H * W; j++) xp[j] = 0.0f;
    for (int kh = 0; kh < KH; kh++)
        for (int kw = 0; kw < KW; kw++) {
            int o = kw * geo.s5 - geo.s3;
            int2 s = ow_span(o, sw, W, OW);
            __global const float *rr = dcol + off + (size_t)((c * KH + kh) * KW + kw) * ld + (size_t)n * OH * OW;
            for (int oh = 0; oh < OH; oh++) {
                int ih = oh * geo.s0 - geo.s2 + kh * geo.s4;
                if (ih < 0 || ih >= H) continue;
                __global float *xr = xp + (size_t)ih * W;
                __global const float *r = rr + (size_t)oh * OW;
                int ow = s.x;
                if (sw == 1) /* each element still one add here, in the same order: the same bits */
                    for (; ow + 4 <= s.y; ow += 4) vstore4(vload4(0, xr + ow + o) + vload4(0, r + ow), 0, xr + ow + o);
                for (; ow < s.y; ow++) xr[ow * sw + o] += r[ow];
            }
        }
}

/* conv2d_unpack_elems by rows: item (n, k) */
__kernel void conv2d_unpack_rows(NN__KPARAMS(conv2d_unpack)) {
    int i = get_global_id(0);
    if (i >= N * K) return;
    int k = i % K, n = i / K;
    float bias = has_bias ? b[k] : 0.0f;
    __global const float *o = out + off + (size_t)k * ld + (size_t)n * S;
    __global float *yy = y + (size_t)i * S;
    for (int s = 0; s < S; s++) yy[s] = o[s] + bias;
}

/* conv2d_pack_elems by rows: item (k, n); item (k, N) zeroes row k's padding */
__kernel void conv2d_pack_rows(NN__KPARAMS(conv2d_pack)) {
    int i = get_global_id(0);
    if (i >= K * (N + 1)) return;
    int n = i % (N + 1), k = i / (N + 1);
    __global float *d = dyg + off + (size_t)k * ld;
    if (n == N) {
        for (int p = N * S; p < ld; p++) d[p] = 0.0f;
        return;
    }
    __global const float *src = dy + ((size_t)n * K + k) * S;
    d += (size_t)n * S;
    for (int s = 0; s < S; s++) d[s] = src[s];
}

/* ---- the implicit GEMM (CPU devices; NN__CONV_IMPLICIT in src/ops/conv/conv2d.c) ----
   A stride-1 convolution y [N, M, OH, OW] = a [M, R] col(x) (+ b), R = C*KH*KW, with no
   column matrix: item (n, band of `rows` output rows) copies the input rows its band reads,
   zero-padded, into local memory, planes [C, Hb, Wp] with Wp = OW + dw*(KW-1) and Hb = rows +
   dh*(KH-1). Output position (oh, ow) of the band is then column u = oh*Wp + ow of a
   virtual [R, rows*Wp] matrix whose row r = (c, kh, kw) starts at c*Hb*Wp + kh*dh*Wp + kw*dw
   of the planes: every row of col(x) a contiguous run of local memory, read in float16s with
   no packing; the columns ow >= OW are computed and dropped (Wp/OW more work: 16/14 for a
   3x3 'same' convolution at 14 wide). Rows of a in IC_MR x 32 micro-tiles (6 x 32 on
   AVX-512: 12 zmm accumulators, as kernels/gemm.cl's packed path); each element sums its R
   products in k order, then adds the bias. No im2col, unpack or col2im pass, and nothing of R x N*OH*OW
   floats to memory and back. */
#ifdef IC_L /* floats of an item's planes, and the most rows of col(x): build options on CPU devices
               (nn__ic_config, src/opencl/gemm_plan.c; the host checks a shape fits) */
#ifndef IC_MR /* rows of a micro-tile (the build options say, by the vector width) */
#define IC_MR 6
#endif

/* the runs of output columns (ow < OW) among the band's columns u0 .. u0+v-1: run q takes
   lanes sl[q] .. sl[q]+sn[q]-1 to yo[q] of y's band; the count */
inline int ic_runs(const int u0, const int v, const int Wp, const int OW, int *sl, int *sn, int *yo) {
    int oh = u0 / Wp, ow = u0 - oh * Wp, j = 0, q = 0;
    while (j < v) {
        const int run = min(Wp - ow, v - j);
        if (ow < OW) {
            sl[q] = j;
            sn[q] = min(run, OW - ow);
            yo[q] = oh * OW + ow;
            q++;
        }
        j += run;
        ow = 0;
        oh++;
    }
    return q;
}

/* the runs of one row's 32 lanes into its plane of y, plus the bias */
inline void ic_store(__global float *yp, const float16 lo, const float16 hi, const int nq, const int *sl, const int *sn,
                     const int *yo, const float bias) {
    float t[32];
    vstore16(lo + bias, 0, t);
    vstore16(hi + bias, 0, t + 16);
    for (int q = 0; q < nq; q++) {
        const float *src = t + sl[q];
        __global float *dst = yp + yo[q];
        int j = 0;
        for (; j + 8 <= sn[q]; j += 8) vstore8(vload8(0, src + j), 0, dst + j);
        for (; j + 4 <= sn[q]; j += 4) vstore4(vload4(0, src + j), 0, dst + j);
        for (; j < sn[q]; j++) dst[j] = src[j];
    }
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void conv2d_implicit(NN__KPARAMS(conv2d_implicit)) {
    __local float L[IC_L];
    __local int ro[IC_R];
    const int bands = (OH + rows - 1) / rows, i = get_global_id(0), n = i / bands;
    if (n >= N) return;
    const int oh0 = (i - n * bands) * rows, nr = min(rows, OH - oh0), dh = geo.s4, dw = geo.s5;
    const int Wp = OW + dw * (KW - 1), Hb = nr + dh * (KH - 1), R = C * KH * KW, U = nr * Wp;
    const int lo = clamp(geo.s3, 0, Wp), hi = clamp(W + geo.s3, lo, Wp); /* columns of x in a padded row */
    __global const float *xn = x + (size_t)n * C * H * W;
    /* the planes: row rr of plane c is x's row oh0 - ph + rr, columns -pw .. Wp-pw-1 */
    for (int c = 0; c < C; c++)
        for (int rr = 0; rr < Hb; rr++) {
            __local float *d = L + (c * Hb + rr) * Wp;
            const int ih = oh0 - geo.s2 + rr;
            int u = 0;
            if (ih >= 0 && ih < H) {
                __global const float *xs = xn + ((size_t)c * H + ih) * W - geo.s3; /* xs[u]: column u of the padded row */
                for (; u < lo; u++) d[u] = 0.0f;
                for (; u + 8 <= hi; u += 8) vstore8(vload8(0, xs + u), 0, d + u);
                for (; u < hi; u++) d[u] = xs[u];
            }
            for (; u < Wp; u++) d[u] = 0.0f;
        }
    for (int u = C * Hb * Wp; u < C * Hb * Wp + dw * (KW - 1) + 32; u++) L[u] = 0.0f; /* what the last chunk reads past */
    for (int r = 0, c = 0, kh = 0, kw = 0; r < R; r++) {
        ro[r] = (c * Hb + kh * dh) * Wp + kw * dw;
        if (++kw == KW) {
            kw = 0;
            if (++kh == KH) kh = 0, c++;
        }
    }
    for (int m0 = 0; m0 < M; m0 += IC_MR) {
        __global const float *ar[IC_MR];
#pragma unroll
        for (int r = 0; r < IC_MR; r++) ar[r] = a + (size_t)min(m0 + r, M - 1) * R;
        for (int j0 = 0; j0 < U; j0 += 32) {
            float16 acc[IC_MR][2];
#pragma unroll
            for (int r = 0; r < IC_MR; r++) acc[r][0] = acc[r][1] = (float16)(0.0f);
            for (int k = 0; k < R; k++) {
                __local const float *bp = L + ro[k] + j0;
                const float16 b0 = vload16(0, bp), b1 = vload16(0, bp + 16);
#pragma unroll
                for (int r = 0; r < IC_MR; r++) {
                    const float16 av = (float16)(ar[r][k]);
                    acc[r][0] += av * b0; /* contracted to FMA where the target has it */
                    acc[r][1] += av * b1;
                }
            }
            int sl[33], sn[33], yo[33];
            const int nq = ic_runs(j0, min(32, U - j0), Wp, OW, sl, sn, yo);
#pragma unroll
            for (int r = 0; r < IC_MR; r++)
                if (m0 + r < M)
                    ic_store(y + (((size_t)n * M + m0 + r) * OH + oh0) * OW, acc[r][0], acc[r][1], nq, sl, sn, yo,
                             has_bias ? b[m0 + r] : 0.0f);
        }
    }
    if (exact) /* rows of a flagged by conv2d_flip_w: again, each element from the taps inside x only */
        for (int m = 0; m < M; m++)
            if (a[(size_t)M * R + m] != 0.0f)
                for (int oh = oh0; oh < oh0 + nr; oh++)
                    for (int ow = 0; ow < OW; ow++) {
                        float acc = 0.0f;
                        for (int r = 0; r < R; r++) {
                            const int ci = r / (KH * KW), kh = r / KW - ci * KH, kw = r - r / KW * KW;
                            const int ih = oh - geo.s2 + kh * dh, iw = ow - geo.s3 + kw * dw;
                            if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                                acc += a[(size_t)m * R + r] * xn[((size_t)ci * H + ih) * W + iw];
                        }
                        y[(((size_t)n * M + m) * OH + oh) * OW + ow] = acc + (has_bias ? b[m] : 0.0f);
                    }
}

/* The weight gradient the same way: dw [K, R] = sum over images of dy_n [K, OH*OW] col_n^T.
   Item i takes images i*per .. (i+1)*per-1, whole: per image, the input planes as above (L,
   rows = OH) and after them dy zero-padded to the same virtual columns (D [K, U16]: Wp columns an
   output row, zeros at ow >= OW and up to U16, a multiple of 16); then every dw element is a
   dot product of a row of D with a run of L, in float16s (lane l: u = l mod 16), ID_R x ID_C
   (4 x 6 on AVX-512) elements at a time as kernels/gemm.cl's gemm_nt_dot, its 16 lanes
   added in a fixed tree.
   The first image stores the item's partial sums part [i, K, R], later ones add to them;
   sum_leading adds the items' partials in order. A junk column (ow >= OW) multiplies D's zero
   by an element of L that may be a real x value: with a NaN or an infinity in an image's
   planes that would be NaN where PyTorch adds nothing, so such an image adds its terms one
   at a time instead, from the taps inside x only (as conv2d_backward_weight). */
#ifndef ID_R /* rows of dy and of col(x) a tile */
#define ID_R 4
#endif
#ifndef ID_C
#define ID_C 6
#endif

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void conv2d_dw_implicit(NN__KPARAMS(conv2d_dw_implicit)) {
    __local float L[IC_L]; /* the planes, then D */
    __local int ro[IC_R];
    const int i = get_global_id(0), n0 = i * per, dh = geo.s4, dw = geo.s5;
    if (n0 >= N) return;
    const int Wp = OW + dw * (KW - 1), R = C * KH * KW, U = OH * Wp, U16 = (U + 15) / 16 * 16;
    const int Hp = OH + dh * (KH - 1), lo = clamp(geo.s3, 0, Wp), hi = clamp(W + geo.s3, lo, Wp);
    __local float *D = L + C * Hp * Wp + dw * (KW - 1) + 16;
    __global float *pi = part + (size_t)i * K * R;
    for (int r = 0, c = 0, kh = 0, kw = 0; r < R; r++) {
        ro[r] = (c * Hp + kh * dh) * Wp + kw * dw;
        if (++kw == KW) {
            kw = 0;
            if (++kh == KH) kh = 0, c++;
        }
    }
    for (int u = C * Hp * Wp; u < C * Hp * Wp + dw * (KW - 1) + 16; u++) L[u] = 0.0f; /* read past by the last lanes */
    for (int n = n0; n < min(n0 + per, N); n++) {
        __global const float *xn = x + (size_t)n * C * H * W;
        int bad = 0;
        for (int c = 0; c < C; c++)
            for (int rr = 0; rr < Hp; rr++) {
                __local float *d = L + (c * Hp + rr) * Wp;
                const int ih = rr - geo.s2;
                int u = 0;
                if (ih >= 0 && ih < H) {
                    __global const float *xs = xn + ((size_t)c * H + ih) * W - geo.s3;
                    for (; u < lo; u++) d[u] = 0.0f;
                    for (; u + 8 <= hi; u += 8) {
                        const float8 v = vload8(0, xs + u);
                        bad |= any(!isfinite(v));
                        vstore8(v, 0, d + u);
                    }
                    for (; u < hi; u++) bad |= !isfinite(d[u] = xs[u]);
                }
                for (; u < Wp; u++) d[u] = 0.0f;
            }
        for (int k = 0; k < K; k++) {
            __global const float *dk = dy + ((size_t)n * K + k) * OH * OW;
            __local float *e = D + k * U16;
            for (int oh = 0; oh < OH; oh++) {
                int u = 0;
                for (; u + 8 <= OW; u += 8) vstore8(vload8(0, dk + oh * OW + u), 0, e + oh * Wp + u);
                for (; u < OW; u++) e[oh * Wp + u] = dk[oh * OW + u];
                for (; u < Wp; u++) e[oh * Wp + u] = 0.0f;
            }
            for (int u = U; u < U16; u++) e[u] = 0.0f;
        }
        for (int k0 = 0; k0 < K && !bad; k0 += ID_R) {
            __local const float *dr[ID_R];
#pragma unroll
            for (int a = 0; a < ID_R; a++) dr[a] = D + min(k0 + a, K - 1) * U16;
            for (int r0 = 0; r0 < R; r0 += ID_C) {
                __local const float *lr[ID_C];
                float16 acc[ID_R][ID_C];
#pragma unroll
                for (int c = 0; c < ID_C; c++) lr[c] = L + ro[min(r0 + c, R - 1)];
#pragma unroll
                for (int a = 0; a < ID_R; a++)
#pragma unroll
                    for (int c = 0; c < ID_C; c++) acc[a][c] = (float16)(0.0f);
                for (int u = 0; u < U16; u += 16) {
                    float16 lv[ID_C];
#pragma unroll
                    for (int c = 0; c < ID_C; c++) lv[c] = vload16(0, lr[c] + u);
#pragma unroll
                    for (int a = 0; a < ID_R; a++) {
                        const float16 dv = vload16(0, dr[a] + u);
#pragma unroll
                        for (int c = 0; c < ID_C; c++) acc[a][c] += dv * lv[c]; /* contracted to FMA where the target has it */
                    }
                }
#pragma unroll
                for (int a = 0; a < ID_R; a++)
#pragma unroll
                    for (int c = 0; c < ID_C; c++)
                        if (k0 + a < K && r0 + c < R) {
                            const float16 v = acc[a][c];
                            const float8 h = v.lo + v.hi;
                            const float4 q = h.lo + h.hi;
                            const float2 t = q.lo + q.hi;
                            __global float *o = pi + (size_t)(k0 + a) * R + r0 + c;
                            *o = n == n0 ? t.x + t.y : *o + (t.x + t.y);
                        }
            }
        }
        if (bad) /* the image's terms, each from the taps inside x only */
            for (int k = 0; k < K; k++)
                for (int r = 0; r < R; r++) {
                    const int c = r / (KH * KW), kh = r / KW - c * KH, kw = r - r / KW * KW;
                    float acc = 0.0f;
                    for (int oh = 0; oh < OH; oh++)
                        for (int ow = 0; ow < OW; ow++) {
                            const int ih = oh - geo.s2 + kh * dh, iw = ow - geo.s3 + kw * dw;
                            const float xv = ih >= 0 && ih < H && iw >= 0 && iw < W ? xn[((size_t)c * H + ih) * W + iw] : 0.0f;
                            acc += dy[(((size_t)n * K + k) * OH + oh) * OW + ow] * xv;
                        }
                    __global float *o = pi + (size_t)k * R + r;
                    *o = n == n0 ? acc : *o + acc;
                }
    }
}
#endif /* IC_L */

/* wf [C, K*KH*KW] = w [K, C, KH, KW] with (kh, kw) -> (KH-1-kh, KW-1-kw): the input gradient
   of a stride-1 convolution is the forward convolution of dy with these weights, padding
   dilation*(KH-1) - pad. Item c writes row c, and after the C rows its flag wf[C*K*KH*KW + c]:
   1 where the row holds a NaN or an infinity. The dense product multiplies such a weight by
   the zeros of dy's padding (NaN), where PyTorch's col2im adds no product with the padding at
   all, so conv2d_implicit (exact = 1) computes those rows again from the taps inside dy. */
__kernel void conv2d_flip_w(NN__KPARAMS(conv2d_flip_w)) {
    int c = get_global_id(0);
    if (c >= C) return;
    int R = K * KH * KW, bad = 0;
    __global float *o = wf + (size_t)c * R;
    for (int k = 0; k < K; k++)
        for (int kh = 0; kh < KH; kh++)
            for (int kw = 0; kw < KW; kw++) {
                float v = w[(((size_t)k * C + c) * KH + KH - 1 - kh) * KW + KW - 1 - kw];
                bad |= !isfinite(v);
                o[(k * KH + kh) * KW + kw] = v;
            }
    wf[(size_t)C * R + c] = bad ? 1.0f : 0.0f;
}
