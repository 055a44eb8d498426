/* Depthwise convolutions on the CPU backend: direct loops, no im2col, no scratch.

   A convolution is depthwise when every group has one input channel (C/G == 1, G > 1):
   output channel k then reads input channel k / M alone, M = K/G being the channel
   multiplier. The im2col + GEMM path of cpu/conv.c would copy the input KH*KW times and
   then run G GEMMs of M rows by KH*KW, far too small to pay for their packing. (C == 1,
   G == 1 stays there: one GEMM with all K output channels as its rows is no such waste.)

   Work split: forward and the input gradient take one (image, channel) plane per task
   item; the weight gradient takes one output channel per item and sums over the batch
   inside it. Every output element is computed by one item in one fixed order, so the
   results do not depend on the number of threads.

   Forward and the input gradient (as a gather when sw == 1) compute an output row at a
   time from the input rows its taps reach (nn__dw_rows): in the interior, where every
   tap is inside the input row, with no bounds checks, eight outputs per AVX2 register
   holding all their taps, stored once; at the edges over each output's valid taps only.
   The weight gradient is one dot product per tap over the batch, over the rows and
   columns where that tap is inside the image (nn__dw_span). The AVX2 code is compiled
   with __attribute__((target)), as in cpu/simd.c, so a plain -O2 build has it; other CPUs
   and strides > 1 take the plain C loops. */

static int nn__conv2d_is_depthwise(const nn__conv2d *c) { return c->G > 1 && c->C == c->G; }

/* The outputs o in [*lo, *hi) whose input index o*s + off lies in [0, n_in): the closed
   form of nn__conv_ow_span, for rows as well as columns. */
static void nn__dw_span(int n_out, int n_in, int s, int off, int *lo, int *hi) {
    int a = off >= 0 ? 0 : (-off + s - 1) / s, b = n_in - 1 - off < 0 ? 0 : (n_in - 1 - off) / s + 1;
    if (a > n_out) a = n_out;
    if (b > n_out) b = n_out;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

/* Input rows (with their KW weights) gathered for one output row; more than this many
   (KH, or M*KH for the input gradient) are taken in several passes that accumulate. */
#define NN__DW_ROWS 32
/* Edge outputs (some taps on the padding) whose tap ranges are kept; beyond, checks */
#define NN__DW_EDGES 32

/* The rows of one output row: out[i] = init + sum over rows r and taps kw of
   wr[r][kw] * in[r][i*s + base + kw*d], terms outside [0, in_len) left out. The column
   split is the same for every row of a plane, so it is worked out once (nn__dw_cols):
   the interior [L, R), where every tap is inside the input row, and for each edge output
   its range of valid taps [k0, k1) (contiguous: the input index is monotone in kw). */
typedef struct nn__dw_rows {
    const float *in[NN__DW_ROWS], *wr[NN__DW_ROWS];
    int nr, KW, s, d, base, in_len, n_out;
    int L, R, ne; /* ne < 0: too many edge outputs, checked one tap at a time */
    int ei[NN__DW_EDGES], ek0[NN__DW_EDGES], ek1[NN__DW_EDGES];
} nn__dw_rows;

static void nn__dw_cols(nn__dw_rows *rw) {
    int s = rw->s, d = rw->d, KW = rw->KW, e = d < 0 ? -d : d, span = (KW - 1) * e, lo = d < 0 ? (KW - 1) * d : 0, i;
    nn__dw_span(rw->n_out, rw->in_len - span, s, rw->base + lo, &rw->L, &rw->R);
    rw->ne = rw->n_out - (rw->R - rw->L) <= NN__DW_EDGES ? 0 : -1;
    for (i = 0; i < rw->n_out && rw->ne >= 0; i++) {
        int a, b, off = i * s + rw->base + lo; /* the input index of the leftmost tap */
        if (i >= rw->L && i < rw->R) continue;
        nn__dw_span(KW, rw->in_len, e, off, &a, &b);
        rw->ei[rw->ne] = i;
        rw->ek0[rw->ne] = d > 0 ? a : KW - b; /* d < 0: tap kw is at off + (KW-1-kw)*e */
        rw->ek1[rw->ne++] = d > 0 ? b : KW - a;
    }
}

#if defined(NN__VM_X86)
/* lanes 8 - r .. 15 loaded as a mask: the first r lanes set */
static const int32_t nn__dw_tail_mask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

/* The interior [L, R) of an output row with s == 1: every output vector takes all its
   taps in a register and is stored once. (One pass per tap over a row in memory would
   store at a different offset for each kw, which defeats store-to-load forwarding.) The
   tail is computed under a mask and copied out lane by lane: masked stores are slow on
   some CPUs. */
__attribute__((target("avx2,fma"))) static void nn__dw_row_avx2(float *out, int L, int R, const nn__dw_rows *rw,
                                                                 float init, int acc) {
    int i = L, r, k, KW = rw->KW, d = rw->d, base = rw->base;
    for (; i + 32 <= R; i += 32) {
        __m256 a0, a1, a2, a3;
        if (acc) {
            a0 = _mm256_loadu_ps(out + i);
            a1 = _mm256_loadu_ps(out + i + 8);
            a2 = _mm256_loadu_ps(out + i + 16);
            a3 = _mm256_loadu_ps(out + i + 24);
        } else
            a0 = a1 = a2 = a3 = _mm256_set1_ps(init);
        for (r = 0; r < rw->nr; r++) {
            const float *p = rw->in[r] + i + base, *w = rw->wr[r];
            for (k = 0; k < KW; k++) {
                __m256 vw = _mm256_broadcast_ss(w + k);
                const float *q = p + k * d;
                a0 = _mm256_fmadd_ps(vw, _mm256_loadu_ps(q), a0);
                a1 = _mm256_fmadd_ps(vw, _mm256_loadu_ps(q + 8), a1);
                a2 = _mm256_fmadd_ps(vw, _mm256_loadu_ps(q + 16), a2);
                a3 = _mm256_fmadd_ps(vw, _mm256_loadu_ps(q + 24), a3);
            }
        }
        _mm256_storeu_ps(out + i, a0);
        _mm256_storeu_ps(out + i + 8, a1);
        _mm256_storeu_ps(out + i + 16, a2);
        _mm256_storeu_ps(out + i + 24, a3);
    }
    for (; i < R; i += 8) {
        int n = R - i < 8 ? R - i : 8;
        __m256i m = _mm256_loadu_si256((const __m256i *)(const void *)(nn__dw_tail_mask + 8 - n));
        __m256 a0 = acc ? _mm256_maskload_ps(out + i, m) : _mm256_set1_ps(init);
        float lanes[8];
        for (r = 0; r < rw->nr; r++) {
            const float *p = rw->in[r] + i + base, *w = rw->wr[r];
            for (k = 0; k < KW; k++) a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + k), _mm256_maskload_ps(p + k * d, m), a0);
        }
        if (n == 8) _mm256_storeu_ps(out + i, a0);
        else {
            _mm256_storeu_ps(lanes, a0);
            for (k = 0; k < n; k++) out[i + k] = lanes[k];
        }
    }
}

/* q[0], q[2], .., q[14] from lo = q[0:8] and hi = q[8:16] */
__attribute__((target("avx2,fma"))) static inline __m256 nn__dw_even(__m256 lo, __m256 hi) {
    __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)); /* lo0 lo2 hi0 hi2 lo4 lo6 hi4 hi6 */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* The interior of an output row with s == 2 (strided downsampling layers): two loads and
   a deinterleave per eight outputs. A block reads one float past its last tap, which is
   inside the row while another output follows it in the interior; the last block reads
   under masks instead. */
__attribute__((target("avx2,fma"))) static void nn__dw_row_avx2_s2(float *out, int L, int R, const nn__dw_rows *rw,
                                                                    float init, int acc) {
    int i = L, r, k, KW = rw->KW, d = rw->d, base = rw->base;
    for (; i + 16 < R; i += 16) {
        __m256 a0 = acc ? _mm256_loadu_ps(out + i) : _mm256_set1_ps(init);
        __m256 a1 = acc ? _mm256_loadu_ps(out + i + 8) : _mm256_set1_ps(init);
        for (r = 0; r < rw->nr; r++) {
            const float *p = rw->in[r] + 2 * i + base, *w = rw->wr[r];
            for (k = 0; k < KW; k++) {
                __m256 vw = _mm256_broadcast_ss(w + k);
                const float *q = p + k * d;
                a0 = _mm256_fmadd_ps(vw, nn__dw_even(_mm256_loadu_ps(q), _mm256_loadu_ps(q + 8)), a0);
                a1 = _mm256_fmadd_ps(vw, nn__dw_even(_mm256_loadu_ps(q + 16), _mm256_loadu_ps(q + 24)), a1);
            }
        }
        _mm256_storeu_ps(out + i, a0);
        _mm256_storeu_ps(out + i + 8, a1);
    }
    for (; i < R; i += 8) {
        int n = R - i < 8 ? R - i : 8, last = i + 8 >= R, c = 2 * n - 1; /* floats the taps span */
        __m256i mlo = _mm256_loadu_si256((const __m256i *)(const void *)(nn__dw_tail_mask + 8 - (c < 8 ? c : 8)));
        __m256i mhi = _mm256_loadu_si256((const __m256i *)(const void *)(nn__dw_tail_mask + 8 - (c > 8 ? c - 8 : 0)));
        __m256 a0 = acc ? _mm256_maskload_ps(out + i, _mm256_loadu_si256((const __m256i *)(const void *)(nn__dw_tail_mask + 8 - n)))
                        : _mm256_set1_ps(init);
        float lanes[8];
        for (r = 0; r < rw->nr; r++) {
            const float *p = rw->in[r] + 2 * i + base, *w = rw->wr[r];
            for (k = 0; k < KW; k++) {
                const float *q = p + k * d;
                __m256 v = last ? nn__dw_even(_mm256_maskload_ps(q, mlo), _mm256_maskload_ps(q + 8, mhi))
                                : nn__dw_even(_mm256_loadu_ps(q), _mm256_loadu_ps(q + 8));
                a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + k), v, a0);
            }
        }
        if (n == 8) _mm256_storeu_ps(out + i, a0);
        else {
            _mm256_storeu_ps(lanes, a0);
            for (k = 0; k < n; k++) out[i + k] = lanes[k];
        }
    }
}
#endif

/* out[0:n_out] of one output row from rw (acc: add to out instead of starting at init) */
static void nn__dw_row(float *out, const nn__dw_rows *rw, float init, int acc, int avx2) {
    int s = rw->s, d = rw->d, KW = rw->KW, i, r, k, e;
    if (rw->R > rw->L) {
#if defined(NN__VM_X86)
        if (avx2 && s == 1) nn__dw_row_avx2(out, rw->L, rw->R, rw, init, acc);
        else if (avx2 && s == 2) nn__dw_row_avx2_s2(out, rw->L, rw->R, rw, init, acc);
        else
#endif
        {
            /* eight outputs at a time: eight independent sums rather than one long chain */
            for (i = rw->L; i + 8 <= rw->R; i += 8) {
                float a[8];
                int j;
                for (j = 0; j < 8; j++) a[j] = acc ? out[i + j] : init;
                for (r = 0; r < rw->nr; r++) {
                    const float *p = rw->in[r] + (int64_t)i * s + rw->base, *w = rw->wr[r];
                    for (k = 0; k < KW; k++) {
                        const float *q = p + (int64_t)k * d;
                        float wk = w[k];
                        for (j = 0; j < 8; j++) a[j] += wk * q[(int64_t)j * s];
                    }
                }
                for (j = 0; j < 8; j++) out[i + j] = a[j];
            }
            for (; i < rw->R; i++) {
                float a = acc ? out[i] : init;
                for (r = 0; r < rw->nr; r++) {
                    const float *p = rw->in[r] + (int64_t)i * s + rw->base, *w = rw->wr[r];
                    for (k = 0; k < KW; k++) a += w[k] * p[(int64_t)k * d];
                }
                out[i] = a;
            }
        }
    }
#if !defined(NN__VM_X86)
    (void)avx2;
#endif
    for (e = 0; e < rw->ne; e++) { /* the edges: only their valid taps */
        float a;
        i = rw->ei[e];
        a = acc ? out[i] : init;
        for (r = 0; r < rw->nr; r++) {
            const float *w = rw->wr[r], *p = rw->in[r];
            int64_t j0 = (int64_t)i * s + rw->base;
            for (k = rw->ek0[e]; k < rw->ek1[e]; k++) a += w[k] * p[j0 + (int64_t)k * d];
        }
        out[i] = a;
    }
    if (rw->ne < 0) /* a kernel about as wide as the image: every tap checked */
        for (i = 0; i < rw->n_out; i++) {
            float a;
            if (i >= rw->L && i < rw->R) continue;
            a = acc ? out[i] : init;
            for (r = 0; r < rw->nr; r++)
                for (k = 0; k < KW; k++) {
                    int64_t j = (int64_t)i * s + rw->base + (int64_t)k * d;
                    if (j >= 0 && j < rw->in_len) a += rw->wr[r][k] * rw->in[r][j];
                }
            out[i] = a;
        }
}

/* Adds an input row to rw; when rw is full, runs the rows gathered so far into out. */
static void nn__dw_push(nn__dw_rows *rw, const float *in, const float *w, float *out, float init, int *passes, int avx2) {
    if (rw->nr == NN__DW_ROWS) {
        nn__dw_row(out, rw, init, *passes > 0, avx2);
        ++*passes;
        rw->nr = 0;
    }
    rw->in[rw->nr] = in;
    rw->wr[rw->nr++] = w;
}

/* The taps on the zero padding, which the loops above leave out, as the products 0 * w
   that the GEMM path (and PyTorch) computes: nothing for finite weights, NaN for a NaN or
   inf one, at every output whose window reaches the padding with it. Finite weights (the
   sum of w * 0 is 0) cost one pass over the KH*KW weights. */
static void nn__dw_padding_taps(const nn__conv2d *c, float *yp, const float *wk) {
    float z = 0.0f;
    int oh, ow, kh, kw, k;
    for (k = 0; k < c->KH * c->KW; k++) z += wk[k] * 0.0f;
    if (z == 0.0f) return;
    for (oh = 0; oh < c->OH; oh++)
        for (ow = 0; ow < c->OW; ow++)
            for (kh = 0; kh < c->KH; kh++)
                for (kw = 0; kw < c->KW; kw++) {
                    int ih = oh * c->sh - c->ph + kh * c->dh, iw = ow * c->sw - c->pw + kw * c->dw;
                    if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) yp[(int64_t)oh * c->OW + ow] += wk[kh * c->KW + kw] * 0.0f;
                }
}

/* yp [OH, OW] = bias + the taps of wk [KH, KW] over the input plane xp [H, W] */
static void nn__dw_forward_plane(const nn__conv2d *c, float *yp, const float *xp, const float *wk, float bias, int avx2) {
    nn__dw_rows rw;
    int oh, kh;
    rw.KW = c->KW;
    rw.s = c->sw;
    rw.d = c->dw;
    rw.base = -c->pw;
    rw.in_len = c->W;
    rw.n_out = c->OW;
    nn__dw_cols(&rw);
    for (oh = 0; oh < c->OH; oh++) {
        float *yr = yp + (int64_t)oh * c->OW;
        int passes = 0;
        rw.nr = 0;
        for (kh = 0; kh < c->KH; kh++) {
            int ih = oh * c->sh - c->ph + kh * c->dh;
            if (ih >= 0 && ih < c->H) nn__dw_push(&rw, xp + (int64_t)ih * c->W, wk + kh * c->KW, yr, bias, &passes, avx2);
        }
        if (rw.nr > 0 || passes == 0) nn__dw_row(yr, &rw, bias, passes > 0, avx2);
    }
    nn__dw_padding_taps(c, yp, wk);
}

/* dxp [H, W] = the taps of the M output channels of this input channel taken back to
   the input: wk [M, KH, KW] and dyp [M, OH, OW] (dy_stride floats apart). With sw == 1
   as a gather (the rows and weights of a convolution of dy, kw running backwards), so
   every output vector is stored once; with sw > 1 the columns an input pixel reaches are
   not affine in iw, so the taps are scattered instead. */
static void nn__dw_backward_data_plane(const nn__conv2d *c, float *dxp, const float *wk, const float *dyp,
                                       int64_t dy_stride, int M, int avx2) {
    int64_t KK = (int64_t)c->KH * c->KW;
    int ih, oh, kh, kw, m, ow;
    if (c->sw == 1) {
        nn__dw_rows rw;
        rw.KW = c->KW;
        rw.s = 1;
        rw.d = -c->dw;
        rw.base = c->pw; /* ow = iw + pw - kw*dw */
        rw.in_len = c->OW;
        rw.n_out = c->W;
        nn__dw_cols(&rw);
        for (ih = 0; ih < c->H; ih++) {
            float *xr = dxp + (int64_t)ih * c->W;
            int passes = 0;
            rw.nr = 0;
            for (m = 0; m < M; m++)
                for (kh = 0; kh < c->KH; kh++) {
                    int t = ih + c->ph - kh * c->dh; /* = oh * sh */
                    if (t < 0 || t % c->sh || t / c->sh >= c->OH) continue;
                    nn__dw_push(&rw, dyp + m * dy_stride + (int64_t)(t / c->sh) * c->OW, wk + m * KK + kh * c->KW, xr, 0.0f,
                                &passes, avx2);
                }
            if (rw.nr > 0 || passes == 0) nn__dw_row(xr, &rw, 0.0f, passes > 0, avx2);
        }
        return;
    }
    memset(dxp, 0, (size_t)c->H * c->W * sizeof(float));
    for (m = 0; m < M; m++) /* tap by tap, so each tap's row and column ranges are worked out once */
        for (kh = 0; kh < c->KH; kh++) {
            int offh = kh * c->dh - c->ph, h0, h1;
            nn__dw_span(c->OH, c->H, c->sh, offh, &h0, &h1);
            for (kw = 0; kw < c->KW; kw++) {
                int lo, hi, off = kw * c->dw - c->pw;
                float wv = wk[m * KK + kh * c->KW + kw];
                nn__dw_span(c->OW, c->W, c->sw, off, &lo, &hi);
                for (oh = h0; oh < h1; oh++) {
                    const float *dr = dyp + m * dy_stride + (int64_t)oh * c->OW;
                    float *xr = dxp + (int64_t)(oh * c->sh + offh) * c->W;
                    for (ow = lo; ow < hi; ow++) xr[(int64_t)ow * c->sw + off] += wv * dr[ow];
                }
            }
        }
}

/* One tap's weight gradient: the sum over the batch and the rows oh in [h0, h1) of
   dy[n, oh, w0:w0+len] . x[n, oh*sh + offh, (w0:w0+len)*sw + offw]. xc and dc are the
   channel's planes of image 0, xs and ds the strides between images. */
typedef struct nn__dw_tap {
    const float *xc, *dc;
    int64_t xs, ds;
    int h0, h1, offh, w0, len, offw;
} nn__dw_tap;

#if defined(NN__VM_X86)
/* stride 1: four accumulators (FMA latency) that persist over all the rows, summed once */
__attribute__((target("avx2,fma"))) static float nn__dw_tap_sum_avx2(const nn__conv2d *c, const nn__dw_tap *t) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    __m256i tail = _mm256_loadu_si256((const __m256i *)(const void *)(nn__dw_tail_mask + 8 - (t->len & 7)));
    float lanes[8], s;
    int n, oh, i, k;
    for (n = 0; n < c->N; n++)
        for (oh = t->h0; oh < t->h1; oh++) {
            const float *d = t->dc + n * t->ds + (int64_t)oh * c->OW + t->w0;
            const float *x = t->xc + n * t->xs + (int64_t)(oh * c->sh + t->offh) * c->W + t->w0 + t->offw;
            for (i = 0; i + 32 <= t->len; i += 32) {
                a0 = _mm256_fmadd_ps(_mm256_loadu_ps(d + i), _mm256_loadu_ps(x + i), a0);
                a1 = _mm256_fmadd_ps(_mm256_loadu_ps(d + i + 8), _mm256_loadu_ps(x + i + 8), a1);
                a2 = _mm256_fmadd_ps(_mm256_loadu_ps(d + i + 16), _mm256_loadu_ps(x + i + 16), a2);
                a3 = _mm256_fmadd_ps(_mm256_loadu_ps(d + i + 24), _mm256_loadu_ps(x + i + 24), a3);
            }
            /* at most three whole vectors and a partial one are left: one accumulator each */
            if (i + 8 <= t->len) {
                a0 = _mm256_fmadd_ps(_mm256_loadu_ps(d + i), _mm256_loadu_ps(x + i), a0);
                i += 8;
            }
            if (i + 8 <= t->len) {
                a1 = _mm256_fmadd_ps(_mm256_loadu_ps(d + i), _mm256_loadu_ps(x + i), a1);
                i += 8;
            }
            if (i + 8 <= t->len) {
                a2 = _mm256_fmadd_ps(_mm256_loadu_ps(d + i), _mm256_loadu_ps(x + i), a2);
                i += 8;
            }
            if (i < t->len)
                a3 = _mm256_fmadd_ps(_mm256_maskload_ps(d + i, tail), _mm256_maskload_ps(x + i, tail), a3);
        }
    _mm256_storeu_ps(lanes, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (s = 0.0f, k = 0; k < 8; k++) s += lanes[k];
    return s;
}
#endif

static float nn__dw_tap_sum(const nn__conv2d *c, const nn__dw_tap *t, int avx2) {
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    int64_t sw = c->sw;
    int n, oh, i;
#if defined(NN__VM_X86)
    if (avx2 && c->sw == 1) return nn__dw_tap_sum_avx2(c, t);
#else
    (void)avx2;
#endif
    for (n = 0; n < c->N; n++)
        for (oh = t->h0; oh < t->h1; oh++) {
            const float *d = t->dc + n * t->ds + (int64_t)oh * c->OW + t->w0;
            const float *x = t->xc + n * t->xs + (int64_t)(oh * c->sh + t->offh) * c->W + t->w0 * sw + t->offw;
            for (i = 0; i + 4 <= t->len; i += 4) { /* four chains: latency, not one long add chain */
                s0 += d[i] * x[i * sw];
                s1 += d[i + 1] * x[(i + 1) * sw];
                s2 += d[i + 2] * x[(i + 2) * sw];
                s3 += d[i + 3] * x[(i + 3) * sw];
            }
            for (; i < t->len; i++) s0 += d[i] * x[i * sw];
        }
    return (s0 + s1) + (s2 + s3);
}

/* The weight gradient's terms on the zero padding, which the tap sums leave out, as the
   products dy * 0 that the GEMM path (and PyTorch) takes: nothing for a finite dy, NaN
   for a NaN or inf dy at an output whose window reaches the padding. Only outputs outside
   the interior (where every tap is inside) have such terms, so a finite dy costs one pass
   over that border. dyk: channel k of image 0, ds floats between images. */
static void nn__dw_padding_grad(const nn__conv2d *c, float *dwk, const float *dyk, int64_t ds) {
    int hl = 0, hr = c->OH, wl = 0, wr = c->OW, kh, kw, n, oh, ow, a, b;
    float z = 0.0f;
    for (kh = 0; kh < c->KH; kh++) {
        nn__dw_span(c->OH, c->H, c->sh, kh * c->dh - c->ph, &a, &b);
        hl = a > hl ? a : hl;
        hr = b < hr ? b : hr;
    }
    for (kw = 0; kw < c->KW; kw++) {
        nn__dw_span(c->OW, c->W, c->sw, kw * c->dw - c->pw, &a, &b);
        wl = a > wl ? a : wl;
        wr = b < wr ? b : wr;
    }
    if (wr < wl) wr = wl;
    for (n = 0; n < c->N; n++)
        for (oh = 0; oh < c->OH; oh++) {
            const float *d = dyk + n * ds + (int64_t)oh * c->OW;
            int inner = oh >= hl && oh < hr;
            for (ow = 0; ow < c->OW; ow++) {
                if (inner && ow == wl) ow = wr; /* the interior of the row */
                if (ow < c->OW) z += d[ow] * 0.0f;
            }
        }
    if (z == 0.0f) return;
    for (kh = 0; kh < c->KH; kh++)
        for (kw = 0; kw < c->KW; kw++) {
            int h0, h1, w0, w1;
            nn__dw_span(c->OH, c->H, c->sh, kh * c->dh - c->ph, &h0, &h1);
            nn__dw_span(c->OW, c->W, c->sw, kw * c->dw - c->pw, &w0, &w1);
            for (n = 0; n < c->N; n++)
                for (oh = 0; oh < c->OH; oh++)
                    for (ow = 0; ow < c->OW; ow++)
                        if (oh < h0 || oh >= h1 || ow < w0 || ow >= w1)
                            dwk[kh * c->KW + kw] += dyk[n * ds + (int64_t)oh * c->OW + ow] * 0.0f;
        }
}

/* dwk [KH, KW] of output channel k: one sum per tap over the whole batch */
static void nn__dw_backward_weight_channel(const nn__conv2d *c, float *dwk, const float *x, const float *dy, int k,
                                           int avx2) {
    int M = c->K / c->G, kh, kw;
    nn__dw_tap t;
    t.xc = x + (int64_t)(k / M) * c->H * c->W;
    t.dc = dy + (int64_t)k * c->OH * c->OW;
    t.xs = (int64_t)c->C * c->H * c->W;
    t.ds = (int64_t)c->K * c->OH * c->OW;
    for (kh = 0; kh < c->KH; kh++) {
        t.offh = kh * c->dh - c->ph;
        nn__dw_span(c->OH, c->H, c->sh, t.offh, &t.h0, &t.h1);
        for (kw = 0; kw < c->KW; kw++) {
            int w1;
            t.offw = kw * c->dw - c->pw;
            nn__dw_span(c->OW, c->W, c->sw, t.offw, &t.w0, &w1);
            t.len = w1 - t.w0;
            dwk[kh * c->KW + kw] = t.h1 > t.h0 && t.len > 0 ? nn__dw_tap_sum(c, &t, avx2) : 0.0f;
        }
    }
    nn__dw_padding_grad(c, dwk, t.dc, t.ds);
}

typedef struct nn__dw_job {
    const nn__conv2d *c;
    float *out;
    const float *a, *b, *bias; /* forward (x, w, bias), input gradient (w, dy), weight gradient (x, dy) */
    int op, items, avx2;       /* op: 0 forward, 1 input gradient, 2 weight gradient */
} nn__dw_job;

static void nn__dw_task(void *arg, int t, int n_tasks) {
    const nn__dw_job *j = (const nn__dw_job *)arg;
    const nn__conv2d *c = j->c;
    int per = (j->items + n_tasks - 1) / n_tasks, i0 = per * t, i1 = i0 + per < j->items ? i0 + per : j->items, i;
    int M = c->K / c->G, KK = c->KH * c->KW;
    int64_t HW = (int64_t)c->H * c->W, OHW = (int64_t)c->OH * c->OW;
    for (i = i0; i < i1; i++) {
        if (j->op == 0) { /* item: (n, k) of y */
            int k = i % c->K;
            nn__dw_forward_plane(c, j->out + i * OHW, j->a + ((int64_t)(i / c->K) * c->C + k / M) * HW,
                                 j->b + (int64_t)k * KK, j->bias ? j->bias[k] : 0.0f, j->avx2);
        } else if (j->op == 1) { /* item: (n, ci) of dx; its output channels ci*M .. ci*M + M-1 */
            int n = i / c->C, ci = i % c->C;
            nn__dw_backward_data_plane(c, j->out + i * HW, j->a + (int64_t)ci * M * KK,
                                       j->b + ((int64_t)n * c->K + (int64_t)ci * M) * OHW, OHW, M, j->avx2);
        } else /* item: output channel k of dw */
            nn__dw_backward_weight_channel(c, j->out + (int64_t)i * KK, j->a, j->b, i, j->avx2);
    }
}

/* Items (planes or channels) split into contiguous runs, a few per thread so the pool's
   dynamic hand-out evens out uneven runs; one task when the layer is too small to split. */
static void nn__dw_run(nn__threadpool *pool, nn__dw_job *j, int64_t work) {
    int tasks = work >= NN__PAR_MIN ? 4 * nn__threadpool_size(pool) : 1;
#if defined(NN__VM_X86)
    j->avx2 = (nn__vm_isa() >= 1);
#else
    j->avx2 = 0;
#endif
    nn__threadpool_run(pool, nn__dw_task, j, tasks < j->items ? tasks : j->items);
}

/* y [N, K, OH, OW] = conv(x, w) + b for a depthwise c; b may be NULL */
static void nn__dwconv2d_forward(nn__threadpool *pool, const nn__conv2d *c, float *y, const float *x, const float *w,
                                 const float *b) {
    nn__dw_job j;
    j.c = c;
    j.out = y;
    j.a = x;
    j.b = w;
    j.bias = b;
    j.op = 0;
    j.items = c->N * c->K;
    nn__dw_run(pool, &j, (int64_t)c->N * c->K * c->OH * c->OW * c->KH * c->KW);
}

/* dx [N, C, H, W] = the gradient with respect to the input of a depthwise c */
static void nn__dwconv2d_backward_data(nn__threadpool *pool, const nn__conv2d *c, float *dx, const float *w, const float *dy) {
    nn__dw_job j;
    j.c = c;
    j.out = dx;
    j.a = w;
    j.b = dy;
    j.bias = NULL;
    j.op = 1;
    j.items = c->N * c->C;
    nn__dw_run(pool, &j, (int64_t)c->N * c->K * c->OH * c->OW * c->KH * c->KW);
}

/* dw [K, 1, KH, KW] = the gradient with respect to the weight of a depthwise c */
static void nn__dwconv2d_backward_weight(nn__threadpool *pool, const nn__conv2d *c, float *dw, const float *x,
                                         const float *dy) {
    nn__dw_job j;
    j.c = c;
    j.out = dw;
    j.a = x;
    j.b = dy;
    j.bias = NULL;
    j.op = 2;
    j.items = c->K;
    nn__dw_run(pool, &j, (int64_t)c->N * c->K * c->OH * c->OW * c->KH * c->KW);
}
