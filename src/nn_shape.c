/* Shape and structure ops on the CPU backend: permute, concat/slice along an axis, 2-D
   padding and upsampling. A tensor seen along `axis` is [outer, len, inner]. Each has a
   twin in kernels/shape.cl. */

/* Out-of-place transpose: y[j0..jk] = x[j_perm...]: `dims` are y's dims, `xstride[d]` the
   stride in x of y's dim d. */
static void nn__permute_forward(float *y, const float *x, int ndim, const int64_t *dims, const int64_t *xstride) {
    int64_t idx[NN_MAX_DIMS] = {0}, n = 1, i, off = 0;
    int d;
    for (d = 0; d < ndim; d++) n *= dims[d];
    for (i = 0; i < n; i++) {
        y[i] = x[off];
        for (d = ndim - 1; d >= 0; d--) { /* odometer over y's index, tracking x's offset */
            off += xstride[d];
            if (++idx[d] < dims[d]) break;
            off -= xstride[d] * dims[d];
            idx[d] = 0;
        }
    }
}

/* y [outer, la + lb, inner] = a [outer, la, inner] then b [outer, lb, inner] */
static void nn__concat_forward(float *y, const float *a, const float *b, int64_t outer, int64_t la, int64_t lb, int64_t inner) {
    int64_t o;
    for (o = 0; o < outer; o++) {
        memcpy(y + o * (la + lb) * inner, a + o * la * inner, (size_t)(la * inner) * sizeof(float));
        memcpy(y + (o * (la + lb) + la) * inner, b + o * lb * inner, (size_t)(lb * inner) * sizeof(float));
    }
}

/* y [outer, len, inner] = x [outer, L, inner] at [start, start + len) of the axis; the
   gradient (grad != 0) writes dy back into a zeroed x-shaped y instead. */
static void nn__slice(float *y, const float *x, int64_t outer, int64_t L, int64_t inner, int64_t start, int64_t len, int grad) {
    int64_t o;
    if (grad) memset(y, 0, (size_t)(outer * L * inner) * sizeof(float));
    for (o = 0; o < outer; o++) {
        if (grad) memcpy(y + (o * L + start) * inner, x + o * len * inner, (size_t)(len * inner) * sizeof(float));
        else memcpy(y + o * len * inner, x + (o * L + start) * inner, (size_t)(len * inner) * sizeof(float));
    }
}

/* The source row of output row o for padding `before` over n rows: -1 in zero padding. */
static int64_t nn__pad_src(int64_t o, int64_t before, int64_t n, int reflect) {
    int64_t i = o - before;
    if (i >= 0 && i < n) return i;
    if (!reflect) return -1;
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
    return i;
}

/* y [P, OH, OW] = x [P, H, W] padded by (top, left) with zeros or reflection */
static void nn__pad2d_forward(float *y, const float *x, int64_t P, int64_t H, int64_t W, int64_t OH, int64_t OW, int top,
                              int left, int reflect) {
    int64_t p, oh, ow;
    for (p = 0; p < P; p++)
        for (oh = 0; oh < OH; oh++) {
            int64_t ih = nn__pad_src(oh, top, H, reflect);
            for (ow = 0; ow < OW; ow++) {
                int64_t iw = nn__pad_src(ow, left, W, reflect);
                y[(p * OH + oh) * OW + ow] = (ih < 0 || iw < 0) ? 0.0f : x[(p * H + ih) * W + iw];
            }
        }
}

/* dx [P, H, W] = the sum of dy over the output positions that read each input pixel */
static void nn__pad2d_backward(float *dx, const float *dy, int64_t P, int64_t H, int64_t W, int64_t OH, int64_t OW, int top,
                               int left, int reflect) {
    int64_t p, oh, ow;
    memset(dx, 0, (size_t)(P * H * W) * sizeof(float));
    for (p = 0; p < P; p++)
        for (oh = 0; oh < OH; oh++) {
            int64_t ih = nn__pad_src(oh, top, H, reflect);
            if (ih < 0) continue;
            for (ow = 0; ow < OW; ow++) {
                int64_t iw = nn__pad_src(ow, left, W, reflect);
                if (iw >= 0) dx[(p * H + ih) * W + iw] += dy[(p * OH + oh) * OW + ow];
            }
        }
}

/* Bilinear source coordinate of output o at scale s (align_corners = False, PyTorch):
   src = (o + 0.5) / s - 0.5, clamped at 0; i0 = floor(src), i1 = min(i0 + 1, n - 1). */
static void nn__bilinear_src(int64_t o, int s, int64_t n, int64_t *i0, int64_t *i1, float *frac) {
    float src = ((float)o + 0.5f) / (float)s - 0.5f;
    if (src < 0.0f) src = 0.0f;
    *i0 = (int64_t)src;
    if (*i0 > n - 1) *i0 = n - 1;
    *i1 = *i0 + 1 < n ? *i0 + 1 : n - 1;
    *frac = src - (float)*i0;
}

/* y [P, H*sh, W*sw] from x [P, H, W]: nearest (bilinear == 0) or bilinear. grad != 0
   computes dx from dy instead (each output's weights scattered back, in output order). */
static void nn__upsample2d(float *out, const float *in, int64_t P, int64_t H, int64_t W, int sh, int sw, int bilinear, int grad) {
    int64_t OH = H * sh, OW = W * sw, p, oh, ow;
    if (grad) memset(out, 0, (size_t)(P * H * W) * sizeof(float));
    for (p = 0; p < P; p++)
        for (oh = 0; oh < OH; oh++) {
            int64_t h0 = oh / sh, h1 = h0, w0, w1;
            float fh = 0.0f, fw;
            if (bilinear) nn__bilinear_src(oh, sh, H, &h0, &h1, &fh);
            for (ow = 0; ow < OW; ow++) {
                const int64_t o = (p * OH + oh) * OW + ow;
                const float *xi = grad ? NULL : in + p * H * W;
                float *dxi = grad ? out + p * H * W : NULL;
                w0 = w1 = ow / sw;
                fw = 0.0f;
                if (bilinear) nn__bilinear_src(ow, sw, W, &w0, &w1, &fw);
                if (!bilinear) { /* a copy: no inf * 0 from the weights that are 0 */
                    if (!grad) out[o] = xi[h0 * W + w0];
                    else dxi[h0 * W + w0] += in[o];
                } else if (!grad) {
                    out[o] = (1 - fh) * ((1 - fw) * xi[h0 * W + w0] + fw * xi[h0 * W + w1]) +
                             fh * ((1 - fw) * xi[h1 * W + w0] + fw * xi[h1 * W + w1]);
                } else {
                    float g = in[o];
                    dxi[h0 * W + w0] += (1 - fh) * (1 - fw) * g;
                    dxi[h0 * W + w1] += (1 - fh) * fw * g;
                    dxi[h1 * W + w0] += fh * (1 - fw) * g;
                    dxi[h1 * W + w1] += fh * fw * g;
                }
            }
        }
}
