/* Convolutions on the CPU backend: im2col + the blocked GEMM, one group at a time. The
   column matrix of a group is [Cg*KH*KW, N*OH*OW], so each layer is one large GEMM per
   group rather than one small GEMM per image. kernels/conv.cl has the OpenCL twins. */

typedef struct nn__conv2d {
    int N, C, H, W;      /* input [N, C, H, W] */
    int K, KH, KW;       /* weight [K, C/G, KH, KW] */
    int OH, OW;          /* output [N, K, OH, OW] */
    int sh, sw, ph, pw, dh, dw, G;
} nn__conv2d;

/* Geometry from a node whose inputs are x and w (or whose output is dx / dw). */
static void nn__conv2d_geom(nn__conv2d *c, const nn_shape *x, const nn_shape *w, const nn__conv_attr *a) {
    c->N = (int)x->dim[0];
    c->C = (int)x->dim[1];
    c->H = (int)x->dim[2];
    c->W = (int)x->dim[3];
    c->K = (int)w->dim[0];
    c->KH = (int)w->dim[2];
    c->KW = (int)w->dim[3];
    c->sh = a->stride[0];
    c->sw = a->stride[1];
    c->ph = a->pad[0];
    c->pw = a->pad[1];
    c->dh = a->dilation[0];
    c->dw = a->dilation[1];
    c->G = a->groups;
    c->OH = (c->H + 2 * c->ph - c->dh * (c->KH - 1) - 1) / c->sh + 1;
    c->OW = (c->W + 2 * c->pw - c->dw * (c->KW - 1) - 1) / c->sw + 1;
}

/* How a convolution node runs; chosen per shape when the graph is compiled. */
enum { NN__CONV_GEMM = 0, NN__CONV_DIRECT = 1 };

/* Floats of scratch a conv node needs: one group's column matrix and one group's output
   (or output gradient) in [Kg, N*OH*OW] order. */
static int64_t nn__conv2d_scratch(const nn__conv2d *c) {
    int64_t P = (int64_t)c->N * c->OH * c->OW, Kg = (int64_t)(c->C / c->G) * c->KH * c->KW;
    return Kg * P + (int64_t)(c->K / c->G) * P;
}

/* The outputs ow in [*lo, *hi) whose input column iw = ow*sw - pw + kw*dw lies in [0, W). */
static void nn__conv_ow_span(const nn__conv2d *c, int kw, int *lo, int *hi) {
    int off = kw * c->dw - c->pw, a = 0, b = c->OW;
    while (a < b && a * c->sw + off < 0) a++;
    while (b > a && (b - 1) * c->sw + off >= c->W) b--;
    *lo = a;
    *hi = b;
}

/* Rows ci0..ci1-1 (input channels of group g) of im2col: col [Cg*KH*KW, N*OH*OW]; zeros
   where the window is over the padding */
static void nn__im2col_range(const nn__conv2d *c, const float *x, int g, float *col, int ci0, int ci1) {
    int Cg = c->C / c->G, ci, kh, kw, n, oh, ow;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    for (ci = ci0; ci < ci1; ci++)
        for (kh = 0; kh < c->KH; kh++)
            for (kw = 0; kw < c->KW; kw++) {
                float *row = col + ((int64_t)(ci * c->KH + kh) * c->KW + kw) * P;
                int lo, hi, off = kw * c->dw - c->pw;
                nn__conv_ow_span(c, kw, &lo, &hi);
                for (n = 0; n < c->N; n++) {
                    const float *xc = x + ((int64_t)n * c->C + g * Cg + ci) * c->H * c->W;
                    for (oh = 0; oh < c->OH; oh++) {
                        int ih = oh * c->sh - c->ph + kh * c->dh;
                        float *r = row + ((int64_t)n * c->OH + oh) * c->OW;
                        const float *xr;
                        if (ih < 0 || ih >= c->H) {
                            memset(r, 0, (size_t)c->OW * sizeof(float));
                            continue;
                        }
                        xr = xc + (int64_t)ih * c->W;
                        for (ow = 0; ow < lo; ow++) r[ow] = 0.0f;
                        if (c->sw == 1) {
                            if (hi > lo) memcpy(r + lo, xr + lo + off, (size_t)(hi - lo) * sizeof(float));
                        } else
                            for (ow = lo; ow < hi; ow++) r[ow] = xr[ow * c->sw + off];
                        for (ow = hi; ow < c->OW; ow++) r[ow] = 0.0f;
                    }
                }
            }
}

/* Channels ci0..ci1-1 of group g: dx += the columns scattered back to their pixels (the
   transpose of im2col). A channel's pixels get their terms in one fixed order whatever
   the split. */
static void nn__col2im_add_range(const nn__conv2d *c, const float *col, int g, float *dx, int ci0, int ci1) {
    int Cg = c->C / c->G, ci, kh, kw, n, oh, ow;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    for (ci = ci0; ci < ci1; ci++)
        for (kh = 0; kh < c->KH; kh++)
            for (kw = 0; kw < c->KW; kw++) {
                const float *row = col + ((int64_t)(ci * c->KH + kh) * c->KW + kw) * P;
                int lo, hi, off = kw * c->dw - c->pw;
                nn__conv_ow_span(c, kw, &lo, &hi);
                for (n = 0; n < c->N; n++) {
                    float *xc = dx + ((int64_t)n * c->C + g * Cg + ci) * c->H * c->W;
                    for (oh = 0; oh < c->OH; oh++) {
                        int ih = oh * c->sh - c->ph + kh * c->dh;
                        const float *r = row + ((int64_t)n * c->OH + oh) * c->OW;
                        float *xr;
                        if (ih < 0 || ih >= c->H) continue;
                        xr = xc + (int64_t)ih * c->W;
                        for (ow = lo; ow < hi; ow++) xr[ow * c->sw + off] += r[ow];
                    }
                }
            }
}

/* im2col / col2im over the threads, each task a contiguous range of input channels */
typedef struct nn__col_job {
    const nn__conv2d *c;
    const float *src;
    float *dst;
    int g, to_col;
} nn__col_job;

static void nn__col_task(void *arg, int t, int n_tasks) {
    const nn__col_job *j = (const nn__col_job *)arg;
    int Cg = j->c->C / j->c->G, per = (Cg + n_tasks - 1) / n_tasks, c0 = per * t, c1 = c0 + per < Cg ? c0 + per : Cg;
    if (c0 >= c1) return;
    if (j->to_col) nn__im2col_range(j->c, j->src, j->g, j->dst, c0, c1);
    else nn__col2im_add_range(j->c, j->src, j->g, j->dst, c0, c1);
}

static void nn__col_run(nn__threadpool *pool, const nn__conv2d *c, const float *src, int g, float *dst, int to_col) {
    nn__col_job j;
    int Cg = c->C / c->G, tasks;
    int64_t work = (int64_t)Cg * c->KH * c->KW * c->N * c->OH * c->OW;
    j.c = c;
    j.src = src;
    j.dst = dst;
    j.g = g;
    j.to_col = to_col;
    tasks = work >= NN__PAR_MIN ? nn__threadpool_size(pool) : 1;
    nn__threadpool_run(pool, nn__col_task, &j, tasks < Cg ? tasks : Cg);
}

/* y [N, K, OH, OW] = conv(x, w) + b; b may be NULL */
static void nn__conv2d_forward(nn__threadpool *pool, const nn__conv2d *c, float *y, const float *x, const float *w,
                               const float *b, float *scratch) {
    int Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KH * c->KW, g, k, n;
    int64_t OHW = (int64_t)c->OH * c->OW, P = c->N * OHW;
    float *col = scratch, *out = scratch + (int64_t)KK * P;
    for (g = 0; g < c->G; g++) {
        nn__col_run(pool, c, x, g, col, 1);
        /* out [Kg, P] = w_g [Kg, KK] * col [KK, P] */
        nn__sgemm(pool, 0, 0, Kg, (int)P, KK, 1.0f, w + (int64_t)g * Kg * KK, KK, col, (int)P, 0.0f, out, (int)P);
        for (k = 0; k < Kg; k++) {
            float bias = b ? b[g * Kg + k] : 0.0f;
            for (n = 0; n < c->N; n++) {
                float *yy = y + ((int64_t)n * c->K + g * Kg + k) * OHW;
                const float *oo = out + (int64_t)k * P + n * OHW;
                int64_t i;
                for (i = 0; i < OHW; i++) yy[i] = oo[i] + bias;
            }
        }
    }
}

/* dy [N, K, OH, OW] of group g gathered to [Kg, N*OH*OW] */
static void nn__conv2d_gather_dy(const nn__conv2d *c, const float *dy, int g, float *out) {
    int Kg = c->K / c->G, k, n;
    int64_t OHW = (int64_t)c->OH * c->OW, P = c->N * OHW;
    for (k = 0; k < Kg; k++)
        for (n = 0; n < c->N; n++)
            memcpy(out + (int64_t)k * P + n * OHW, dy + ((int64_t)n * c->K + g * Kg + k) * OHW, (size_t)OHW * sizeof(float));
}

/* dx [N, C, H, W] = conv2d's gradient with respect to its input */
static void nn__conv2d_backward_data(nn__threadpool *pool, const nn__conv2d *c, float *dx, const float *w, const float *dy,
                                     float *scratch) {
    int Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KH * c->KW, g;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    float *dcol = scratch, *dyg = scratch + (int64_t)KK * P;
    memset(dx, 0, (size_t)c->N * c->C * c->H * c->W * sizeof(float));
    for (g = 0; g < c->G; g++) {
        nn__conv2d_gather_dy(c, dy, g, dyg);
        /* dcol [KK, P] = w_g^T [KK, Kg] * dy_g [Kg, P] */
        nn__sgemm(pool, 1, 0, KK, (int)P, Kg, 1.0f, w + (int64_t)g * Kg * KK, KK, dyg, (int)P, 0.0f, dcol, (int)P);
        nn__col_run(pool, c, dcol, g, dx, 0);
    }
}

/* dw [K, C/G, KH, KW] = conv2d's gradient with respect to its weight */
static void nn__conv2d_backward_weight(nn__threadpool *pool, const nn__conv2d *c, float *dw, const float *x, const float *dy,
                                       float *scratch) {
    int Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KH * c->KW, g;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    float *col = scratch, *dyg = scratch + (int64_t)KK * P;
    for (g = 0; g < c->G; g++) {
        nn__col_run(pool, c, x, g, col, 1);
        nn__conv2d_gather_dy(c, dy, g, dyg);
        /* dw_g [Kg, KK] = dy_g [Kg, P] * col^T [P, KK] */
        nn__sgemm(pool, 0, 1, Kg, KK, (int)P, 1.0f, dyg, (int)P, col, (int)P, 0.0f, dw + (int64_t)g * Kg * KK, KK);
    }
}

/* y [C] = sum over N and the spatial dims of x [N, C, S]: the gradient of a channel bias */
static void nn__channel_sum(float *y, const float *x, int64_t N, int64_t C, int64_t S) {
    int64_t n, ch, i;
    for (ch = 0; ch < C; ch++) {
        double s = 0.0;
        for (n = 0; n < N; n++) {
            const float *p = x + (n * C + ch) * S;
            for (i = 0; i < S; i++) s += p[i];
        }
        y[ch] = (float)s;
    }
}
