/* Shape and structure ops on the CPU backend: permute (and flip: signed strides), concat
   and strided slices along an axis, repeat, tril/triu, 2-D padding and upsampling (the
   bodies in src/ops/shape/). A tensor seen along `axis` is [outer, len, inner]. Each has a
   twin in kernels/shape.cl. */

/* Out-of-place transpose: y[j0..jk] = x[j_perm...]: `dims` are y's dims, `xstride[d]` the
   stride in x of y's dim d. Elements of es bytes (4: float32, int32; 2: 16-bit storage),
   moved as they are. */
#define NN__PERMUTE_LOOP(T)                                                                    \
    do {                                                                                       \
        T *y_ = (T *)y;                                                                        \
        const T *x_ = (const T *)x;                                                            \
        for (i = 0; i < n; i++) {                                                              \
            y_[i] = x_[off];                                                                   \
            for (d = ndim - 1; d >= 0; d--) { /* odometer over y's index, tracking x's offset */ \
                off += xstride[d];                                                             \
                if (++idx[d] < dims[d]) break;                                                 \
                off -= xstride[d] * dims[d];                                                   \
                idx[d] = 0;                                                                    \
            }                                                                                  \
        }                                                                                      \
    } while (0)
static void nn__permute_forward(void *y, const void *x, int es, int ndim, const int64_t *dims, const int64_t *xstride) {
    int64_t idx[NN_MAX_DIMS] = {0}, n = 1, i, off = 0;
    int d;
    for (d = 0; d < ndim; d++) n *= dims[d];
    if (es == 2) NN__PERMUTE_LOOP(uint16_t);
    else NN__PERMUTE_LOOP(uint32_t);
}
#undef NN__PERMUTE_LOOP

/* A slice's or a concat part's copy along an axis, [outer, len, inner] against [outer, L,
   inner], elements of es bytes (zero is all-zero bits in every storage type), over ranges
   of outer rows on the pool's threads (each element a copy, the same whichever thread
   does it). */
typedef struct nn__slice_job {
    char *y;
    const char *x;
    size_t es;
    int64_t L, inner, start, len, step;
    int grad; /* 1: x into y's runs (a slice's gradient, zeros elsewhere); 2: a concat part */
} nn__slice_job;

static void nn__slice_rows(void *arg, int64_t o0, int64_t o1) {
    const nn__slice_job *J = (const nn__slice_job *)arg;
    char *y = J->y;
    const char *x = J->x;
    size_t e = J->es;
    int64_t o, j, L = J->L, inner = J->inner, start = J->start, len = J->len, step = J->step;
    size_t row = (size_t)inner * e;
    for (o = o0; o < o1; o++) {
        if (J->grad == 2) { /* x [outer, len, inner] into y at [start, start + len) */
            memcpy(y + (size_t)((o * L + start) * inner) * e, x + (size_t)(o * len * inner) * e, (size_t)len * row);
            continue;
        }
        if (J->grad && step == 1) { /* zeros around each copied run only: each element written once */
            char *yo = y + (size_t)(o * L * inner) * e;
            memset(yo, 0, (size_t)start * row);
            memcpy(yo + (size_t)(start * inner) * e, x + (size_t)(o * len * inner) * e, (size_t)len * row);
            memset(yo + (size_t)((start + len) * inner) * e, 0, (size_t)(L - start - len) * row);
            continue;
        }
        if (J->grad) memset(y + (size_t)(o * L * inner) * e, 0, (size_t)L * row);
        if (step == 1) {
            memcpy(y + (size_t)(o * len * inner) * e, x + (size_t)((o * L + start) * inner) * e, (size_t)len * row);
            continue;
        }
        for (j = 0; j < len; j++) {
            if (J->grad) memcpy(y + (size_t)((o * L + start + j * step) * inner) * e, x + (size_t)((o * len + j) * inner) * e, row);
            else memcpy(y + (size_t)((o * len + j) * inner) * e, x + (size_t)((o * L + start + j * step) * inner) * e, row);
        }
    }
}

static void nn__slice_run(nn__threadpool *pool, void *y, const void *x, int es, int64_t outer, int64_t L, int64_t inner,
                          int64_t start, int64_t len, int64_t step, int grad) {
    nn__slice_job J;
    J.y = (char *)y, J.x = (const char *)x, J.es = (size_t)es;
    J.L = L, J.inner = inner, J.start = start, J.len = len, J.step = step, J.grad = grad;
    nn__par_for(pool, outer, outer * (grad == 1 ? L : len) * inner, nn__slice_rows, &J);
}

/* One part of a concat: x [outer, lx, inner] into y [outer, L, inner] at [off, off + lx)
   of the axis (each input of a concat written once, by its own call); elements of es
   bytes. */
static void nn__concat_part(nn__threadpool *pool, void *y, const void *x, int es, int64_t outer, int64_t lx, int64_t L,
                            int64_t off, int64_t inner) {
    nn__slice_run(pool, y, x, es, outer, L, inner, off, lx, 1, 2);
}

/* y [outer, len, inner] = x [outer, L, inner] at start, start + step, ... (len indices) of
   the axis; the gradient (grad != 0) writes dy back into a zeroed x-shaped y instead.
   Elements of es bytes. */
static void nn__slice(nn__threadpool *pool, void *y, const void *x, int es, int64_t outer, int64_t L, int64_t inner,
                      int64_t start, int64_t len, int64_t step, int grad) {
    nn__slice_run(pool, y, x, es, outer, L, inner, start, len, step, grad != 0);
}

/* torch.Tensor.repeat over nd dims: y [ydims] tiles x [xdims] (ydims[d] = xdims[d] *
   repeats); grad != 0: dx [xdims] sums dy [ydims] over the tiles, in order of y. */
static void nn__repeat(float *out, const float *in, int nd, const int64_t *ydims, const int64_t *xdims, int grad) {
    int64_t idx[NN_MAX_DIMS] = {0}, xst[NN_MAX_DIMS], n = 1, i, off = 0;
    int d;
    for (d = nd - 1; d >= 0; d--) {
        xst[d] = d == nd - 1 ? 1 : xst[d + 1] * xdims[d + 1];
        n *= ydims[d];
    }
    if (grad) memset(out, 0, (size_t)(xst[0] * xdims[0]) * sizeof(float));
    for (i = 0; i < n; i++) { /* off: x's offset of y's element i */
        if (grad) out[off] += in[i];
        else out[i] = in[off];
        for (d = nd - 1; d >= 0; d--) {
            idx[d]++;
            off += xst[d];
            if (idx[d] % xdims[d] == 0) off -= xst[d] * xdims[d];
            if (idx[d] < ydims[d]) break;
            idx[d] = 0;
        }
    }
}

/* torch.tril (upper == 0: keeps j - i <= diagonal) or torch.triu (keeps j - i >= diagonal)
   of each [R, C] matrix of x [B, R, C]; the rest is zero. */
static void nn__tril(float *y, const float *x, int64_t B, int64_t R, int64_t C, int diagonal, int upper) {
    int64_t b, i, j;
    for (b = 0; b < B; b++)
        for (i = 0; i < R; i++)
            for (j = 0; j < C; j++) {
                int64_t k = (b * R + i) * C + j;
                int keep = upper ? j - i >= diagonal : j - i <= diagonal;
                y[k] = keep ? x[k] : 0.0f;
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
