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
static void nn__conv2d_geom(nn__conv2d *c, const nn_shape *x, const nn_shape *w, const int *attr) {
    c->N = (int)x->dim[0];
    c->C = (int)x->dim[1];
    c->H = (int)x->dim[2];
    c->W = (int)x->dim[3];
    c->K = (int)w->dim[0];
    c->KH = (int)w->dim[2];
    c->KW = (int)w->dim[3];
    c->sh = attr[0];
    c->sw = attr[1];
    c->ph = attr[2];
    c->pw = attr[3];
    c->dh = attr[4];
    c->dw = attr[5];
    c->G = attr[6];
    c->OH = (c->H + 2 * c->ph - c->dh * (c->KH - 1) - 1) / c->sh + 1;
    c->OW = (c->W + 2 * c->pw - c->dw * (c->KW - 1) - 1) / c->sw + 1;
}

/* Floats of scratch a conv node needs: one group's column matrix and one group's output
   (or output gradient) in [Kg, N*OH*OW] order. */
static int64_t nn__conv2d_scratch(const nn__conv2d *c) {
    int64_t P = (int64_t)c->N * c->OH * c->OW, Kg = (int64_t)(c->C / c->G) * c->KH * c->KW;
    return Kg * P + (int64_t)(c->K / c->G) * P;
}

/* col [Cg*KH*KW, N*OH*OW] of group g; zeros where the window is over the padding */
static void nn__im2col(const nn__conv2d *c, const float *x, int g, float *col) {
    int Cg = c->C / c->G, ci, kh, kw, n, oh, ow;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    for (ci = 0; ci < Cg; ci++)
        for (kh = 0; kh < c->KH; kh++)
            for (kw = 0; kw < c->KW; kw++) {
                float *row = col + ((int64_t)(ci * c->KH + kh) * c->KW + kw) * P;
                for (n = 0; n < c->N; n++) {
                    const float *xc = x + ((int64_t)n * c->C + g * Cg + ci) * c->H * c->W;
                    for (oh = 0; oh < c->OH; oh++) {
                        int ih = oh * c->sh - c->ph + kh * c->dh;
                        float *r = row + ((int64_t)n * c->OH + oh) * c->OW;
                        if (ih < 0 || ih >= c->H) {
                            memset(r, 0, (size_t)c->OW * sizeof(float));
                            continue;
                        }
                        for (ow = 0; ow < c->OW; ow++) {
                            int iw = ow * c->sw - c->pw + kw * c->dw;
                            r[ow] = (iw >= 0 && iw < c->W) ? xc[ih * c->W + iw] : 0.0f;
                        }
                    }
                }
            }
}

/* dx += the columns scattered back to their pixels (the transpose of im2col) */
static void nn__col2im_add(const nn__conv2d *c, const float *col, int g, float *dx) {
    int Cg = c->C / c->G, ci, kh, kw, n, oh, ow;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    for (ci = 0; ci < Cg; ci++)
        for (kh = 0; kh < c->KH; kh++)
            for (kw = 0; kw < c->KW; kw++) {
                const float *row = col + ((int64_t)(ci * c->KH + kh) * c->KW + kw) * P;
                for (n = 0; n < c->N; n++) {
                    float *xc = dx + ((int64_t)n * c->C + g * Cg + ci) * c->H * c->W;
                    for (oh = 0; oh < c->OH; oh++) {
                        int ih = oh * c->sh - c->ph + kh * c->dh;
                        const float *r = row + ((int64_t)n * c->OH + oh) * c->OW;
                        if (ih < 0 || ih >= c->H) continue;
                        for (ow = 0; ow < c->OW; ow++) {
                            int iw = ow * c->sw - c->pw + kw * c->dw;
                            if (iw >= 0 && iw < c->W) xc[ih * c->W + iw] += r[ow];
                        }
                    }
                }
            }
}

/* y [N, K, OH, OW] = conv(x, w) + b; b may be NULL */
static void nn__conv2d_forward(nn__pool *pool, const nn__conv2d *c, float *y, const float *x, const float *w,
                               const float *b, float *scratch) {
    int Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KH * c->KW, g, k, n;
    int64_t OHW = (int64_t)c->OH * c->OW, P = c->N * OHW;
    float *col = scratch, *out = scratch + (int64_t)KK * P;
    for (g = 0; g < c->G; g++) {
        nn__im2col(c, x, g, col);
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
static void nn__conv2d_backward_data(nn__pool *pool, const nn__conv2d *c, float *dx, const float *w, const float *dy,
                                     float *scratch) {
    int Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KH * c->KW, g;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    float *dcol = scratch, *dyg = scratch + (int64_t)KK * P;
    memset(dx, 0, (size_t)c->N * c->C * c->H * c->W * sizeof(float));
    for (g = 0; g < c->G; g++) {
        nn__conv2d_gather_dy(c, dy, g, dyg);
        /* dcol [KK, P] = w_g^T [KK, Kg] * dy_g [Kg, P] */
        nn__sgemm(pool, 1, 0, KK, (int)P, Kg, 1.0f, w + (int64_t)g * Kg * KK, KK, dyg, (int)P, 0.0f, dcol, (int)P);
        nn__col2im_add(c, dcol, g, dx);
    }
}

/* dw [K, C/G, KH, KW] = conv2d's gradient with respect to its weight */
static void nn__conv2d_backward_weight(nn__pool *pool, const nn__conv2d *c, float *dw, const float *x, const float *dy,
                                       float *scratch) {
    int Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KH * c->KW, g;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    float *col = scratch, *dyg = scratch + (int64_t)KK * P;
    for (g = 0; g < c->G; g++) {
        nn__im2col(c, x, g, col);
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
