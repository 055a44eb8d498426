/* Pooling over the planes of NCHW tensors (1-D pooling: H = 1), twins of src/cpu/pool.c with
   the same window rules (PyTorch's) and the same order of every sum. Forward: one
   work-item per output element. Backward: one work-item per input element, gathering over
   the windows that cover it (no atomics, a fixed order). NC = N*C planes;
   geo = (kh, kw, sh, sw, ph, pw, dh, dw), dh = dw = 1 for average pooling. Float data (x, y,
   dy, dx) is NN__STORE_T storage (kernels/storage.h: float32, or bf16 / f16 in the program
   built with NN_STORE_BF16 / NN_STORE_F16), widened on load, every comparison and sum in
   float, rounded once on store; idx is int32 in every build. */
#include "kargs.h"
#include "storage.h"
#include "pool_args.h"

/* The first maximum of output (oh, ow)'s window in window order (a NaN wins, as in
   PyTorch), as an index ih*W + iw into the plane x, or -1 when the window holds padding
   alone (its value is then -inf, the padding's). */
inline int max_window(__global const NN__STORE_T *x, const int H, const int W, const int oh, const int ow,
                      const int8 geo, float *val) {
    int h0 = oh * geo.s2 - geo.s4, w0 = ow * geo.s3 - geo.s5, arg = -1;
    float m = -INFINITY;
    for (int i = 0; i < geo.s0; i++) {
        int ih = h0 + i * geo.s6;
        if (ih < 0 || ih >= H) continue;
        for (int j = 0; j < geo.s1; j++) {
            int iw = w0 + j * geo.s7;
            if (iw < 0 || iw >= W) continue;
            float v = NN__SLOAD(x, ih * W + iw);
            if (arg < 0 || v > m || isnan(v)) {
                m = v;
                arg = ih * W + iw;
            }
        }
    }
    *val = m;
    return arg;
}

/* y [NC, OH, OW] = the maximum of each window */
__kernel void max_pool2d_forward_elems(NN__KPARAMS(max_pool2d_forward)) {
    int i = get_global_id(0);
    if (i >= NC * OH * OW) return;
    int ow = i % OW, oh = (i / OW) % OH, c = i / (OW * OH);
    float v;
    max_window(x + (size_t)c * H * W, H, W, oh, ow, geo, &v);
    NN__SSTORE(y, i, v);
}

/* idx [NC, OH, OW] = each window's argmax, for the backward pass */
__kernel void max_pool2d_argmax_elems(NN__KPARAMS(max_pool2d_argmax)) {
    int i = get_global_id(0);
    if (i >= NC * OH * OW) return;
    int ow = i % OW, oh = (i / OW) % OH, c = i / (OW * OH);
    float v;
    idx[i] = max_window(x + (size_t)c * H * W, H, W, oh, ow, geo, &v);
}

/* Outputs [*lo, *hi) along an axis of m outputs whose window (stride s, padding p,
   extent `span`) covers input i: o*s - p <= i < o*s - p + span. */
inline void cover(const int i, const int m, const int span, const int s, const int p, int *lo, int *hi) {
    int a = i + p - span + 1;
    *lo = a > 0 ? (a + s - 1) / s : 0;
    *hi = min((i + p) / s + 1, m);
}

/* dx [NC, H, W]: each input element sums dy over the windows whose argmax it is, in
   output order */
__kernel void max_pool2d_backward_elems(NN__KPARAMS(max_pool2d_backward)) {
    int i = get_global_id(0);
    if (i >= NC * H * W) return;
    int c = i / (H * W), p = i - c * (H * W), ih = p / W, iw = p - ih * W;
    int oh0, oh1, ow0, ow1;
    cover(ih, OH, (geo.s0 - 1) * geo.s6 + 1, geo.s2, geo.s4, &oh0, &oh1);
    cover(iw, OW, (geo.s1 - 1) * geo.s7 + 1, geo.s3, geo.s5, &ow0, &ow1);
    __global const int *ic = idx + (size_t)c * OH * OW;
    __global const NN__STORE_T *dc = dy + (size_t)c * OH * OW;
    float acc = 0.0f;
    for (int oh = oh0; oh < oh1; oh++)
        for (int ow = ow0; ow < ow1; ow++)
            if (ic[oh * OW + ow] == p) acc += NN__SLOAD(dc, oh * OW + ow);
    NN__SSTORE(dx, i, acc);
}

/* Devices tuned as CPUs (dev.cpu_tuned) run these variants of the three above, with their
   signatures (src/ops/pool.c's max pooling launches pick them): one work-item per plane,
   so the index arithmetic is paid per plane. The
   plane-wise backward adds each output's gradient at its argmax in output order, the same
   order as the gather above. It adds in dx's memory, so the launch runs it on float32 alone
   (16-bit storage would round each add): a 16-bit gradient takes the gather. */
#if !defined(NN_STORE_BF16) && !defined(NN_STORE_F16)
/* One step of max_window's rule on vectors or scalars: candidate v (its offset in the
   plane o) replaces the maximum m (at a) when greater or NaN */
#define NN__MAX_TAKE(m, a, v, o, T)      \
    do {                                  \
        T t_ = (v > m) | isnan(v);        \
        m = select(m, v, t_);             \
        a = select(a, o, t_);             \
    } while (0)

/* The common window, 2x2 at stride 2 without padding or dilation, on float32: output row oh
   of plane xc 8, then 4 outputs at a time (their 4 candidates each as a float8 or float4,
   taken in window order as max_window takes them), the maxima to y and/or the argmaxes to
   idx (either may be NULL). A row's last outputs short of a whole vector are the last 8 (or
   4) again, overlapping what is done: the same values stored twice, where one output at a
   time took most of the kernels' time at the CNN example's rows of 14 and 7. Returns the
   outputs done; the rest (rows under 4, windows cut by the plane's edge) go through
   max_window. */
inline void max_2x2_8(__global const float *r0, __global const float *r1, const int at, const int W, const int ow,
                      __global float *y, __global int *idx) {
    float16 u = vload16(0, r0 + 2 * ow), w = vload16(0, r1 + 2 * ow);
    int8 a = at + 2 * (ow + (int8)(0, 1, 2, 3, 4, 5, 6, 7));
    float8 m = u.even;
    NN__MAX_TAKE(m, a, u.odd, a + 1, int8);
    NN__MAX_TAKE(m, a, w.even, (at + W) + 2 * (ow + (int8)(0, 1, 2, 3, 4, 5, 6, 7)), int8);
    NN__MAX_TAKE(m, a, w.odd, (at + W + 1) + 2 * (ow + (int8)(0, 1, 2, 3, 4, 5, 6, 7)), int8);
    if (y) vstore8(m, 0, y + ow);
    if (idx) vstore8(a, 0, idx + ow);
}

inline void max_2x2_4(__global const float *r0, __global const float *r1, const int at, const int W, const int ow,
                      __global float *y, __global int *idx) {
    float8 u = vload8(0, r0 + 2 * ow), w = vload8(0, r1 + 2 * ow);
    int4 a = at + 2 * (ow + (int4)(0, 1, 2, 3));
    float4 m = u.even;
    NN__MAX_TAKE(m, a, u.odd, a + 1, int4);
    NN__MAX_TAKE(m, a, w.even, (at + W) + 2 * (ow + (int4)(0, 1, 2, 3)), int4);
    NN__MAX_TAKE(m, a, w.odd, (at + W + 1) + 2 * (ow + (int4)(0, 1, 2, 3)), int4);
    if (y) vstore4(m, 0, y + ow);
    if (idx) vstore4(a, 0, idx + ow);
}

inline int max_row_2x2(__global const float *xc, const int H, const int W, const int OW, const int oh,
                       const int8 geo, __global float *y, __global int *idx) {
    int ow = 0, full = min(OW, W / 2), at = 2 * oh * W;
    if (any(geo != (int8)(2, 2, 2, 2, 0, 0, 1, 1)) || 2 * oh + 1 >= H || full < 4) return 0;
    __global const float *r0 = xc + at, *r1 = r0 + W;
    for (; ow + 8 <= full; ow += 8) max_2x2_8(r0, r1, at, W, ow, y, idx);
    if (ow < full && full >= 8) {
        max_2x2_8(r0, r1, at, W, full - 8, y, idx);
        return full;
    }
    if (ow + 4 <= full) {
        max_2x2_4(r0, r1, at, W, ow, y, idx);
        ow += 4;
    }
    if (ow < full) max_2x2_4(r0, r1, at, W, full - 4, y, idx);
    return full;
}
#define NN__MAX_ROW_2X2(xc, oh, y, idx) max_row_2x2(xc, H, W, OW, oh, geo, y, idx)
#else
#define NN__MAX_ROW_2X2(xc, oh, y, idx) 0
#endif

__kernel void max_pool2d_forward_planes(NN__KPARAMS(max_pool2d_forward)) {
    int c = get_global_id(0);
    if (c >= NC) return;
    __global const NN__STORE_T *xc = x + (size_t)c * H * W;
    __global NN__STORE_T *yc = y + (size_t)c * OH * OW;
    float v;
    for (int oh = 0; oh < OH; oh++)
        for (int ow = NN__MAX_ROW_2X2(xc, oh, yc + oh * OW, (__global int *)0); ow < OW; ow++) {
            max_window(xc, H, W, oh, ow, geo, &v);
            NN__SSTORE(yc, oh * OW + ow, v);
        }
}

__kernel void max_pool2d_argmax_planes(NN__KPARAMS(max_pool2d_argmax)) {
    int c = get_global_id(0);
    if (c >= NC) return;
    __global const NN__STORE_T *xc = x + (size_t)c * H * W;
    __global int *ic = idx + (size_t)c * OH * OW;
    float v;
    for (int oh = 0; oh < OH; oh++)
        for (int ow = NN__MAX_ROW_2X2(xc, oh, (__global float *)0, ic + oh * OW); ow < OW; ow++)
            ic[oh * OW + ow] = max_window(xc, H, W, oh, ow, geo, &v);
}

__kernel void max_pool2d_backward_planes(NN__KPARAMS(max_pool2d_backward)) {
    int c = get_global_id(0);
    if (c >= NC) return;
    __global NN__STORE_T *xc = dx + (size_t)c * H * W;
    __global const int *ic = idx + (size_t)c * OH * OW;
    __global const NN__STORE_T *dc = dy + (size_t)c * OH * OW;
    (void)geo;
    for (int j = 0; j < H * W; j++) NN__SSTORE(xc, j, 0.0f);
    for (int o = 0; o < OH * OW; o++)
        if (ic[o] >= 0) NN__SSTORE(xc, ic[o], NN__SLOAD(xc, ic[o]) + NN__SLOAD(dc, o));
}

/* Output o's average window along an axis of n inputs and m outputs: the inputs
   [*lo, *hi) and *cnt, the count that count_include_pad divides by (the window clipped to
   the padded input). Adaptive bins: floor(o*n/m) to ceil((o+1)*n/m). */
inline void avg_span(const int o, const int n, const int m, const int k, const int s, const int p,
                     const int adaptive, int *lo, int *hi, int *cnt) {
    int a, b;
    if (adaptive) {
        a = (int)((long)o * n / m);
        b = (int)(((long)(o + 1) * n + m - 1) / m);
    } else {
        a = o * s - p;
        b = min(a + k, n + p);
    }
    *cnt = b - a;
    *lo = max(a, 0);
    *hi = min(b, n);
}

/* The divisor of output (oh, ow) and its window [h0, h1) x [w0, w1); 0 if it is empty. */
inline int avg_window(const int H, const int W, const int OH, const int OW, const int8 geo,
                      const int exclude_pad, const int adaptive, const int oh, const int ow,
                      int *h0, int *h1, int *w0, int *w1) {
    int ch, cw;
    avg_span(oh, H, OH, geo.s0, geo.s2, geo.s4, adaptive, h0, h1, &ch);
    avg_span(ow, W, OW, geo.s1, geo.s3, geo.s5, adaptive, w0, w1, &cw);
    if (*h1 <= *h0 || *w1 <= *w0) return 0;
    return exclude_pad ? (*h1 - *h0) * (*w1 - *w0) : ch * cw;
}

/* y [NC, OH, OW] = the mean of each window */
__kernel void avg_pool2d_forward(NN__KPARAMS(avg_pool2d_forward)) {
    int i = get_global_id(0);
    if (i >= NC * OH * OW) return;
    int ow = i % OW, oh = (i / OW) % OH, c = i / (OW * OH);
    int h0, h1, w0, w1;
    int div = avg_window(H, W, OH, OW, geo, exclude_pad, adaptive, oh, ow, &h0, &h1, &w0, &w1);
    __global const NN__STORE_T *xc = x + (size_t)c * H * W;
    float acc = 0.0f;
    for (int ih = h0; ih < h1; ih++)
        for (int iw = w0; iw < w1; iw++) acc += NN__SLOAD(xc, ih * W + iw);
    NN__SSTORE(y, i, div ? acc / (float)div : 0.0f);
}

/* Outputs [*lo, *hi) whose average window may cover input i along an axis (for adaptive
   bins, o from floor(i*m/n) to ceil((i+1)*m/n)); the caller checks each window. */
inline void avg_cover(const int i, const int n, const int m, const int k, const int s, const int p,
                      const int adaptive, int *lo, int *hi) {
    if (!adaptive) {
        cover(i, m, k, s, p, lo, hi);
        return;
    }
    *lo = (int)((long)i * m / n);
    *hi = min((int)(((long)(i + 1) * m + n - 1) / n), m);
}

/* dx [NC, H, W]: each input element sums dy / divisor over the windows that hold it, in
   output order */
__kernel void avg_pool2d_backward(NN__KPARAMS(avg_pool2d_backward)) {
    int i = get_global_id(0);
    if (i >= NC * H * W) return;
    int c = i / (H * W), p = i - c * (H * W), ih = p / W, iw = p - ih * W;
    int oh0, oh1, ow0, ow1, h0, h1, w0, w1;
    avg_cover(ih, H, OH, geo.s0, geo.s2, geo.s4, adaptive, &oh0, &oh1);
    avg_cover(iw, W, OW, geo.s1, geo.s3, geo.s5, adaptive, &ow0, &ow1);
    __global const NN__STORE_T *dc = dy + (size_t)c * OH * OW;
    float acc = 0.0f;
    for (int oh = oh0; oh < oh1; oh++)
        for (int ow = ow0; ow < ow1; ow++) {
            int div = avg_window(H, W, OH, OW, geo, exclude_pad, adaptive, oh, ow, &h0, &h1, &w0, &w1);
            if (div && ih >= h0 && ih < h1 && iw >= w0 && iw < w1) acc += NN__SLOAD(dc, oh * OW + ow) / (float)div;
        }
    NN__SSTORE(dx, i, acc);
}
