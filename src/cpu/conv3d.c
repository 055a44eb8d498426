/* 3-D convolutions on the CPU backend, built like the 2-D ones in cpu/conv.c: im2col +
   the blocked GEMM, one group at a time, the column matrix of a group being
   [Cg*KD*KH*KW, N*OD*OH*OW]. kernels/conv3d.cl has the OpenCL twins. */

typedef struct nn__conv3d {
    int N, C, D, H, W;   /* input [N, C, D, H, W] */
    int K, KD, KH, KW;   /* weight [K, C/G, KD, KH, KW] */
    int OD, OH, OW;      /* output [N, K, OD, OH, OW] */
    int s[3], p[3], d[3], G; /* stride, padding, dilation per dim (d, h, w); groups */
} nn__conv3d;

/* Geometry from x's and w's shapes and a node's attributes (stride d/h/w, pad d/h/w,
   dilation d/h/w, groups). */
static void nn__conv3d_geom(nn__conv3d *c, const nn_shape *x, const nn_shape *w, const nn__conv_attr *a) {
    int k;
    c->N = (int)x->dim[0];
    c->C = (int)x->dim[1];
    c->D = (int)x->dim[2];
    c->H = (int)x->dim[3];
    c->W = (int)x->dim[4];
    c->K = (int)w->dim[0];
    c->KD = (int)w->dim[2];
    c->KH = (int)w->dim[3];
    c->KW = (int)w->dim[4];
    for (k = 0; k < 3; k++) {
        c->s[k] = a->stride[k];
        c->p[k] = a->pad[k];
        c->d[k] = a->dilation[k];
    }
    c->G = a->groups;
    c->OD = (c->D + 2 * c->p[0] - c->d[0] * (c->KD - 1) - 1) / c->s[0] + 1;
    c->OH = (c->H + 2 * c->p[1] - c->d[1] * (c->KH - 1) - 1) / c->s[1] + 1;
    c->OW = (c->W + 2 * c->p[2] - c->d[2] * (c->KW - 1) - 1) / c->s[2] + 1;
}

/* Floats of scratch a conv3d node needs: one group's column matrix and one group's
   output (or output gradient) in [Kg, N*OD*OH*OW] order. */
static int64_t nn__conv3d_scratch(const nn__conv3d *c) {
    int64_t P = (int64_t)c->N * c->OD * c->OH * c->OW, Kg = (int64_t)(c->C / c->G) * c->KD * c->KH * c->KW;
    return Kg * P + (int64_t)(c->K / c->G) * P;
}

/* Rows ci0..ci1-1 (input channels of group g) of im2col (to_col) or its transpose, the
   columns added back to their voxels of dx (!to_col). A voxel gets its terms in one fixed
   order whatever the split. */
static void nn__vol2col_range(const nn__conv3d *c, const float *src, int g, float *dst, int ci0, int ci1, int to_col) {
    int Cg = c->C / c->G, ci, kd, kh, kw, n, od, oh, ow;
    int64_t P = (int64_t)c->N * c->OD * c->OH * c->OW, DHW = (int64_t)c->D * c->H * c->W;
    for (ci = ci0; ci < ci1; ci++)
        for (kd = 0; kd < c->KD; kd++)
            for (kh = 0; kh < c->KH; kh++)
                for (kw = 0; kw < c->KW; kw++) {
                    int64_t row = (((int64_t)ci * c->KD + kd) * c->KH + kh) * c->KW + kw;
                    float *col = to_col ? dst + row * P : NULL;
                    const float *dcol = to_col ? NULL : src + row * P;
                    int64_t j = 0;
                    for (n = 0; n < c->N; n++) {
                        int64_t base = ((int64_t)n * c->C + g * Cg + ci) * DHW;
                        for (od = 0; od < c->OD; od++) {
                            int id = od * c->s[0] - c->p[0] + kd * c->d[0];
                            for (oh = 0; oh < c->OH; oh++) {
                                int ih = oh * c->s[1] - c->p[1] + kh * c->d[1];
                                int inside = id >= 0 && id < c->D && ih >= 0 && ih < c->H;
                                int64_t rowx = base + ((int64_t)id * c->H + ih) * c->W;
                                for (ow = 0; ow < c->OW; ow++, j++) {
                                    int iw = ow * c->s[2] - c->p[2] + kw * c->d[2];
                                    int ok = inside && iw >= 0 && iw < c->W;
                                    if (to_col) col[j] = ok ? src[rowx + iw] : 0.0f;
                                    else if (ok) dst[rowx + iw] += dcol[j];
                                }
                            }
                        }
                    }
                }
}

/* vol2col / col2vol over the threads, each task a contiguous range of input channels */
typedef struct nn__vol_job {
    const nn__conv3d *c;
    const float *src;
    float *dst;
    int g, to_col;
} nn__vol_job;

static void nn__vol_task(void *arg, int t, int n_tasks) {
    const nn__vol_job *j = (const nn__vol_job *)arg;
    int Cg = j->c->C / j->c->G, per = (Cg + n_tasks - 1) / n_tasks, c0 = per * t, c1 = c0 + per < Cg ? c0 + per : Cg;
    if (c0 < c1) nn__vol2col_range(j->c, j->src, j->g, j->dst, c0, c1, j->to_col);
}

static void nn__vol_run(nn__threadpool *pool, const nn__conv3d *c, const float *src, int g, float *dst, int to_col) {
    nn__vol_job j;
    int Cg = c->C / c->G, tasks;
    int64_t work = (int64_t)Cg * c->KD * c->KH * c->KW * c->N * c->OD * c->OH * c->OW;
    j.c = c;
    j.src = src;
    j.dst = dst;
    j.g = g;
    j.to_col = to_col;
    tasks = work >= NN__PAR_MIN ? nn__threadpool_size(pool) : 1;
    nn__threadpool_run(pool, nn__vol_task, &j, tasks < Cg ? tasks : Cg);
}

/* y [N, K, OD, OH, OW] = conv3d(x, w) + b; b may be NULL */
static void nn__conv3d_forward(nn__threadpool *pool, const nn__conv3d *c, float *y, const float *x, const float *w,
                               const float *b, float *scratch) {
    int Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KD * c->KH * c->KW, g, k, n;
    int64_t S = (int64_t)c->OD * c->OH * c->OW, P = c->N * S;
    float *col = scratch, *out = scratch + (int64_t)KK * P;
    for (g = 0; g < c->G; g++) {
        nn__vol_run(pool, c, x, g, col, 1);
        /* out [Kg, P] = w_g [Kg, KK] * col [KK, P] */
        nn__sgemm(pool, 0, 0, Kg, (int)P, KK, 1.0f, w + (int64_t)g * Kg * KK, KK, col, (int)P, 0.0f, out, (int)P);
        for (k = 0; k < Kg; k++) {
            float bias = b ? b[g * Kg + k] : 0.0f;
            for (n = 0; n < c->N; n++) {
                float *yy = y + ((int64_t)n * c->K + g * Kg + k) * S;
                const float *oo = out + (int64_t)k * P + n * S;
                int64_t i;
                for (i = 0; i < S; i++) yy[i] = oo[i] + bias;
            }
        }
    }
}

/* dy [N, K, OD, OH, OW] of group g gathered to [Kg, N*OD*OH*OW] */
static void nn__conv3d_gather_dy(const nn__conv3d *c, const float *dy, int g, float *out) {
    int Kg = c->K / c->G, k, n;
    int64_t S = (int64_t)c->OD * c->OH * c->OW, P = c->N * S;
    for (k = 0; k < Kg; k++)
        for (n = 0; n < c->N; n++)
            memcpy(out + (int64_t)k * P + n * S, dy + ((int64_t)n * c->K + g * Kg + k) * S, (size_t)S * sizeof(float));
}

/* dx [N, C, D, H, W] = conv3d's gradient with respect to its input */
static void nn__conv3d_backward_data(nn__threadpool *pool, const nn__conv3d *c, float *dx, const float *w, const float *dy,
                                     float *scratch) {
    int Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KD * c->KH * c->KW, g;
    int64_t P = (int64_t)c->N * c->OD * c->OH * c->OW;
    float *dcol = scratch, *dyg = scratch + (int64_t)KK * P;
    memset(dx, 0, (size_t)c->N * c->C * c->D * c->H * c->W * sizeof(float));
    for (g = 0; g < c->G; g++) {
        nn__conv3d_gather_dy(c, dy, g, dyg);
        /* dcol [KK, P] = w_g^T [KK, Kg] * dy_g [Kg, P] */
        nn__sgemm(pool, 1, 0, KK, (int)P, Kg, 1.0f, w + (int64_t)g * Kg * KK, KK, dyg, (int)P, 0.0f, dcol, (int)P);
        nn__vol_run(pool, c, dcol, g, dx, 0);
    }
}

/* dw [K, C/G, KD, KH, KW] = conv3d's gradient with respect to its weight */
static void nn__conv3d_backward_weight(nn__threadpool *pool, const nn__conv3d *c, float *dw, const float *x, const float *dy,
                                       float *scratch) {
    int Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KD * c->KH * c->KW, g;
    int64_t P = (int64_t)c->N * c->OD * c->OH * c->OW;
    float *col = scratch, *dyg = scratch + (int64_t)KK * P;
    for (g = 0; g < c->G; g++) {
        nn__vol_run(pool, c, x, g, col, 1);
        nn__conv3d_gather_dy(c, dy, g, dyg);
        /* dw_g [Kg, KK] = dy_g [Kg, P] * col^T [P, KK] */
        nn__sgemm(pool, 0, 1, Kg, KK, (int)P, 1.0f, dyg, (int)P, col, (int)P, 0.0f, dw + (int64_t)g * Kg * KK, KK);
    }
}
