/* Pooling on the CPU backend: max and average pooling over the planes of NCHW tensors
   (1-D pooling is H = 1), with PyTorch's window rules. kernels/pool.cl has the OpenCL
   twins, which visit windows and sum in the same order. Planes are independent, so each
   op splits its planes over the threads; every plane is written by one task alone. */

typedef struct nn__pooling {
    int NC, H, W, OH, OW; /* x [N*C planes, H, W] -> y [N*C, OH, OW]; 1-D pooling: H = OH = 1 */
    int kh, kw, sh, sw, ph, pw;
    int dh, dw;           /* max pooling's dilation; 1 for average pooling */
    int exclude_pad;      /* average: divide by the input elements in the window alone */
    int adaptive;         /* average: PyTorch's adaptive bins instead of kernel and stride */
} nn__pooling;

/* Geometry from x and y (4-D, or 3-D [N, C, L] for 1-D pooling) and a pooling node's
   attributes. */
static void nn__pooling_geom(nn__pooling *p, int is_max, const nn_shape *x, const nn_shape *y, const nn__pool_attr *a) {
    int d = x->ndim;
    p->NC = (int)(x->dim[0] * x->dim[1]);
    p->H = d == 4 ? (int)x->dim[2] : 1;
    p->W = (int)x->dim[d - 1];
    p->OH = d == 4 ? (int)y->dim[2] : 1;
    p->OW = (int)y->dim[d - 1];
    p->kh = a->kernel[0];
    p->kw = a->kernel[1];
    p->sh = a->stride[0];
    p->sw = a->stride[1];
    p->ph = a->pad[0];
    p->pw = a->pad[1];
    p->dh = is_max ? a->dilation[0] : 1;
    p->dw = is_max ? a->dilation[1] : 1;
    p->exclude_pad = is_max ? 0 : a->exclude_pad;
    p->adaptive = is_max ? 0 : a->adaptive;
}

/* The first maximum of output (oh, ow)'s window in window order (a NaN wins, as in
   PyTorch), as an index ih*W + iw into the plane x, or -1 when the window holds padding
   alone (its value is then -inf, the padding's). */
static int nn__max_window(const nn__pooling *p, const float *x, int oh, int ow, float *val) {
    int h0 = oh * p->sh - p->ph, w0 = ow * p->sw - p->pw, i, j, arg = -1;
    float m = -INFINITY;
    for (i = 0; i < p->kh; i++) {
        int ih = h0 + i * p->dh;
        if (ih < 0 || ih >= p->H) continue;
        for (j = 0; j < p->kw; j++) {
            int iw = w0 + j * p->dw;
            float v;
            if (iw < 0 || iw >= p->W) continue;
            v = x[ih * p->W + iw];
            if (arg < 0 || v > m || isnan(v)) {
                m = v;
                arg = ih * p->W + iw;
            }
        }
    }
    *val = m;
    return arg;
}

/* Output o's average window along an axis of n inputs and m outputs: the inputs [*lo, *hi)
   and *cnt, the count that count_include_pad divides by (the window clipped to the padded
   input: PyTorch's pool_size). Adaptive bins: floor(o*n/m) to ceil((o+1)*n/m). */
static void nn__avg_span(int o, int n, int m, int k, int s, int p, int adaptive, int *lo, int *hi, int *cnt) {
    int a, b;
    if (adaptive) {
        a = (int)((int64_t)o * n / m);
        b = (int)(((int64_t)(o + 1) * n + m - 1) / m);
    } else {
        a = o * s - p;
        b = a + k < n + p ? a + k : n + p;
    }
    *cnt = b - a;
    *lo = a > 0 ? a : 0;
    *hi = b < n ? b : n;
}

/* The divisor of output (oh, ow) and its window [h0, h1) x [w0, w1); 0 if it is empty. */
static int nn__avg_window(const nn__pooling *p, int oh, int ow, int *h0, int *h1, int *w0, int *w1) {
    int ch, cw;
    nn__avg_span(oh, p->H, p->OH, p->kh, p->sh, p->ph, p->adaptive, h0, h1, &ch);
    nn__avg_span(ow, p->W, p->OW, p->kw, p->sw, p->pw, p->adaptive, w0, w1, &cw);
    if (*h1 <= *h0 || *w1 <= *w0) return 0;
    return p->exclude_pad ? (*h1 - *h0) * (*w1 - *w0) : ch * cw;
}

/* ---- one plane c of each op ---- */

/* 1 when every window lies inside the plane (no padding, dilation 1, no ceil-mode window
   past the edge): the planes below then skip the bounds checks. */
static int nn__max_inside(const nn__pooling *p) {
    return p->ph == 0 && p->pw == 0 && p->dh == 1 && p->dw == 1 && (p->OH - 1) * p->sh + p->kh <= p->H &&
           (p->OW - 1) * p->sw + p->kw <= p->W;
}

/* The first maximum of a window that lies inside the plane, as nn__max_window picks it,
   without branches (the comparisons are data-dependent coin flips a branch mispredicts):
   take = v > m or v is NaN; m and arg follow take through masks. */
static float nn__fsel(uint32_t mask, float a, float b) { /* mask ? a : b, mask 0 or ~0 */
    uint32_t ua, ub;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    ua = (ua & mask) | (ub & ~mask);
    memcpy(&a, &ua, 4);
    return a;
}
#define NN__MAX_STEP(v, at)                                                                                              \
    do {                                                                                                                 \
        float v_ = (v);                                                                                                  \
        uint32_t take_ = (uint32_t) - (int32_t)((v_ > m) | (v_ != v_));                                                  \
        m = nn__fsel(take_, v_, m);                                                                                      \
        arg = (int)(((uint32_t)(at) & take_) | ((uint32_t)arg & ~take_));                                                \
    } while (0)

#if NN__GEMM_X86
/* Output row oh of a 2x2 stride-2 pooling whose windows lie inside the plane: NN__MAX_STEP's
   comparisons and selections on 16 windows at a time (take = v > m or v is NaN, in the same
   window order: the same maximum and argmax); masked loads and stores past the row's end */
__attribute__((target("avx512f"))) static void nn__max_row_2x2s2_avx512(const nn__pooling *p, float *y, int32_t *out_idx,
                                                                      const float *x, int oh) {
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i two = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    int ow, W = p->W;
    const float *r0 = x + (int64_t)oh * 2 * W, *r1 = r0 + W;
    for (ow = 0; ow < p->OW; ow += 16) {
        int cnt = p->OW - ow < 16 ? p->OW - ow : 16;
        __mmask16 out = (__mmask16)(cnt == 16 ? 0xFFFFu : (1u << cnt) - 1u);
        __mmask16 lo = (__mmask16)(2 * cnt >= 16 ? 0xFFFFu : (1u << 2 * cnt) - 1u);
        __mmask16 hi = (__mmask16)(2 * cnt >= 32 ? 0xFFFFu : 2 * cnt <= 16 ? 0u : (1u << (2 * cnt - 16)) - 1u);
        __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ow), a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ow + 16);
        __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ow), b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ow + 16), m, v;
        __m512i base = _mm512_add_epi32(_mm512_set1_epi32(oh * 2 * W + 2 * ow), two), arg = base;
        __mmask16 take;
        m = _mm512_permutex2var_ps(a0, ev, a1);
        v = _mm512_permutex2var_ps(a0, od, a1);
        take = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m = _mm512_mask_mov_ps(m, take, v);
        arg = _mm512_mask_mov_epi32(arg, take, _mm512_add_epi32(base, _mm512_set1_epi32(1)));
        v = _mm512_permutex2var_ps(b0, ev, b1);
        take = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m = _mm512_mask_mov_ps(m, take, v);
        arg = _mm512_mask_mov_epi32(arg, take, _mm512_add_epi32(base, _mm512_set1_epi32(W)));
        v = _mm512_permutex2var_ps(b0, od, b1);
        take = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m = _mm512_mask_mov_ps(m, take, v);
        arg = _mm512_mask_mov_epi32(arg, take, _mm512_add_epi32(base, _mm512_set1_epi32(W + 1)));
        if (y) _mm512_mask_storeu_ps(y + (int64_t)oh * p->OW + ow, out, m);
        else _mm512_mask_storeu_epi32(out_idx + (int64_t)oh * p->OW + ow, out, arg);
    }
}
#endif

/* y (out_idx NULL) or idx (y NULL) of a plane whose windows all lie inside it */
static void nn__max_plane_inside(const nn__pooling *p, float *y, int32_t *out_idx, const float *x) {
    int oh, ow, i, j, vec = 0;
#if NN__GEMM_X86
    if (p->kh == 2 && p->kw == 2 && p->sh == 2 && p->sw == 2 && nn__vm_isa() == 2) vec = p->OW;
#endif
    for (oh = 0; oh < p->OH; oh++) {
        int h0 = oh * p->sh;
#if NN__GEMM_X86
        if (vec) nn__max_row_2x2s2_avx512(p, y, out_idx, x, oh);
#endif
        for (ow = vec; ow < p->OW; ow++) {
            int w0 = ow * p->sw, base = h0 * p->W + w0, arg = base; /* positions from base: arg moves */
            float m = x[base];
            if (p->kh == 2 && p->kw == 2) {
                const float *r0 = x + base, *r1 = r0 + p->W;
                NN__MAX_STEP(r0[1], base + 1);
                NN__MAX_STEP(r1[0], base + p->W);
                NN__MAX_STEP(r1[1], base + p->W + 1);
            } else {
                for (i = 0; i < p->kh; i++)
                    for (j = i == 0 ? 1 : 0; j < p->kw; j++) NN__MAX_STEP(x[(h0 + i) * p->W + w0 + j], (h0 + i) * p->W + w0 + j);
            }
            if (y) y[oh * p->OW + ow] = m;
            else out_idx[oh * p->OW + ow] = arg;
        }
    }
}
#undef NN__MAX_STEP

static void nn__max_pool_plane(const nn__pooling *p, void *out, const void *in, const void *in2, int c) {
    float *y = (float *)out + (int64_t)c * p->OH * p->OW;
    const float *x = (const float *)in + (int64_t)c * p->H * p->W;
    int oh, ow;
    (void)in2;
    if (nn__max_inside(p)) {
        nn__max_plane_inside(p, y, NULL, x);
        return;
    }
    for (oh = 0; oh < p->OH; oh++)
        for (ow = 0; ow < p->OW; ow++) nn__max_window(p, x, oh, ow, &y[oh * p->OW + ow]);
}

static void nn__max_argmax_plane(const nn__pooling *p, void *out, const void *in, const void *in2, int c) {
    int32_t *idx = (int32_t *)out + (int64_t)c * p->OH * p->OW;
    const float *x = (const float *)in + (int64_t)c * p->H * p->W;
    int oh, ow;
    float v;
    (void)in2;
    if (nn__max_inside(p)) {
        nn__max_plane_inside(p, NULL, idx, x);
        return;
    }
    for (oh = 0; oh < p->OH; oh++)
        for (ow = 0; ow < p->OW; ow++) idx[oh * p->OW + ow] = nn__max_window(p, x, oh, ow, &v);
}

/* dx = dy sent to each window's argmax, scattered in output order: each input element
   receives its terms in the order kernels/pool.cl's gather sums them. */
static void nn__max_backward_plane(const nn__pooling *p, void *out, const void *in, const void *in2, int c) {
    float *dx = (float *)out + (int64_t)c * p->H * p->W;
    const int32_t *idx = (const int32_t *)in + (int64_t)c * p->OH * p->OW;
    const float *dy = (const float *)in2 + (int64_t)c * p->OH * p->OW;
    int o;
    memset(dx, 0, (size_t)p->H * p->W * sizeof(float));
    for (o = 0; o < p->OH * p->OW; o++)
        if (idx[o] >= 0) dx[idx[o]] += dy[o];
}

static void nn__avg_pool_plane(const nn__pooling *p, void *out, const void *in, const void *in2, int c) {
    float *y = (float *)out + (int64_t)c * p->OH * p->OW;
    const float *x = (const float *)in + (int64_t)c * p->H * p->W;
    int oh, ow, ih, iw, h0, h1, w0, w1, divisor;
    (void)in2;
    for (oh = 0; oh < p->OH; oh++)
        for (ow = 0; ow < p->OW; ow++) {
            float acc = 0.0f;
            divisor = nn__avg_window(p, oh, ow, &h0, &h1, &w0, &w1);
            for (ih = h0; ih < h1; ih++)
                for (iw = w0; iw < w1; iw++) acc += x[ih * p->W + iw];
            y[oh * p->OW + ow] = divisor ? acc / (float)divisor : 0.0f;
        }
}

/* dx = dy / divisor spread over each window, in output order (the gather's order). */
static void nn__avg_backward_plane(const nn__pooling *p, void *out, const void *in, const void *in2, int c) {
    float *dx = (float *)out + (int64_t)c * p->H * p->W;
    const float *dy = (const float *)in + (int64_t)c * p->OH * p->OW;
    int oh, ow, ih, iw, h0, h1, w0, w1, divisor;
    (void)in2;
    memset(dx, 0, (size_t)p->H * p->W * sizeof(float));
    for (oh = 0; oh < p->OH; oh++)
        for (ow = 0; ow < p->OW; ow++) {
            float gv;
            divisor = nn__avg_window(p, oh, ow, &h0, &h1, &w0, &w1);
            if (!divisor) continue;
            gv = dy[oh * p->OW + ow] / (float)divisor;
            for (ih = h0; ih < h1; ih++)
                for (iw = w0; iw < w1; iw++) dx[ih * p->W + iw] += gv;
        }
}

/* ---- the planes over the threads ---- */

typedef void (*nn__plane_fn)(const nn__pooling *p, void *out, const void *in, const void *in2, int c);
typedef struct nn__plane_job {
    const nn__pooling *p;
    nn__plane_fn fn;
    void *out;
    const void *in, *in2;
} nn__plane_job;

static void nn__plane_task(void *arg, int t, int n_tasks) {
    const nn__plane_job *j = (const nn__plane_job *)arg;
    int per = (j->p->NC + n_tasks - 1) / n_tasks, c0 = per * t, c1 = c0 + per < j->p->NC ? c0 + per : j->p->NC, c;
    for (c = c0; c < c1; c++) j->fn(j->p, j->out, j->in, j->in2, c);
}

/* The op on every plane; threads only when there is enough work to pay for them. */
static void nn__pool_planes(nn__threadpool *pool, const nn__pooling *p, nn__plane_fn fn, void *out, const void *in, const void *in2) {
    nn__plane_job j;
    int64_t work = (int64_t)p->NC * ((int64_t)p->H * p->W + (int64_t)p->OH * p->OW * p->kh * p->kw);
    int tasks = work >= NN__PAR_MIN ? nn__threadpool_size(pool) : 1;
    j.p = p;
    j.fn = fn;
    j.out = out;
    j.in = in;
    j.in2 = in2;
    nn__threadpool_run(pool, nn__plane_task, &j, tasks < p->NC ? tasks : p->NC);
}

/* y [N, C, OH, OW] = the maximum of each window */
static void nn__max_pool2d_forward(nn__threadpool *pool, const nn__pooling *p, float *y, const float *x) {
    nn__pool_planes(pool, p, nn__max_pool_plane, y, x, NULL);
}
/* idx [N, C, OH, OW] = each window's argmax (ih*W + iw in its plane, -1: padding alone) */
static void nn__max_pool2d_argmax(nn__threadpool *pool, const nn__pooling *p, int32_t *idx, const float *x) {
    nn__pool_planes(pool, p, nn__max_argmax_plane, idx, x, NULL);
}
/* dx [N, C, H, W] from idx and dy [N, C, OH, OW] */
static void nn__max_pool2d_backward(nn__threadpool *pool, const nn__pooling *p, float *dx, const int32_t *idx, const float *dy) {
    nn__pool_planes(pool, p, nn__max_backward_plane, dx, idx, dy);
}
/* y [N, C, OH, OW] = the mean of each window */
static void nn__avg_pool2d_forward(nn__threadpool *pool, const nn__pooling *p, float *y, const float *x) {
    nn__pool_planes(pool, p, nn__avg_pool_plane, y, x, NULL);
}
/* dx [N, C, H, W] from dy [N, C, OH, OW] */
static void nn__avg_pool2d_backward(nn__threadpool *pool, const nn__pooling *p, float *dx, const float *dy) {
    nn__pool_planes(pool, p, nn__avg_backward_plane, dx, dy, NULL);
}
