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
enum { NN__CONV_GEMM = 0, NN__CONV_DIRECT = 1, NN__CONV_IMPLICIT = 2, NN__CONV_WINOGRAD = 3 };

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

#if defined(NN__VM_X86)
/* nn__channel_sum's channels ch..ch+7 (AVX2 and AVX-512 CPUs): 4 floats of each of the 8
   channels, two 4x4 transposes, and each element added in its channel's order (n, then i)
   into the channel's double lane of one of two __m256d: each channel still one chain of
   adds in the plain loop's order, so the same bits, with 8 chains in flight and a vector add
   per 4 channels instead of 4 chains and a scalar add each. */
__attribute__((target("avx2"))) static void nn__channel_sum8_avx2(float *y, const float *x, int64_t N, int64_t C, int64_t S,
                                                                  int64_t ch) {
    __m256d a = _mm256_setzero_pd(), b = a;
    int64_t n, i, k, S4 = S / 4 * 4;
    double la[4], lb[4];
    for (n = 0; n < N; n++) {
        const float *p = x + (n * C + ch) * S;
        for (i = 0; i < S4; i += 4) {
            __m128 r0 = _mm_loadu_ps(p + i), r1 = _mm_loadu_ps(p + S + i), r2 = _mm_loadu_ps(p + 2 * S + i),
                   r3 = _mm_loadu_ps(p + 3 * S + i);
            __m128 q0 = _mm_loadu_ps(p + 4 * S + i), q1 = _mm_loadu_ps(p + 5 * S + i), q2 = _mm_loadu_ps(p + 6 * S + i),
                   q3 = _mm_loadu_ps(p + 7 * S + i);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _MM_TRANSPOSE4_PS(q0, q1, q2, q3);
            a = _mm256_add_pd(a, _mm256_cvtps_pd(r0));
            b = _mm256_add_pd(b, _mm256_cvtps_pd(q0));
            a = _mm256_add_pd(a, _mm256_cvtps_pd(r1));
            b = _mm256_add_pd(b, _mm256_cvtps_pd(q1));
            a = _mm256_add_pd(a, _mm256_cvtps_pd(r2));
            b = _mm256_add_pd(b, _mm256_cvtps_pd(q2));
            a = _mm256_add_pd(a, _mm256_cvtps_pd(r3));
            b = _mm256_add_pd(b, _mm256_cvtps_pd(q3));
        }
        if (S4 < S) {
            _mm256_storeu_pd(la, a), _mm256_storeu_pd(lb, b);
            for (i = S4; i < S; i++)
                for (k = 0; k < 4; k++) la[k] += p[k * S + i], lb[k] += p[(k + 4) * S + i];
            a = _mm256_loadu_pd(la), b = _mm256_loadu_pd(lb);
        }
    }
    _mm256_storeu_pd(la, a), _mm256_storeu_pd(lb, b);
    for (k = 0; k < 4; k++) y[ch + k] = (float)la[k], y[ch + 4 + k] = (float)lb[k];
}
#endif

/* y [C] = sum over N and the spatial dims of x [N, C, S]: the gradient of a channel bias */
static void nn__channel_sum(float *y, const float *x, int64_t N, int64_t C, int64_t S) {
    int64_t n, ch = 0, i;
#if defined(NN__VM_X86)
    if (nn__vm_isa() >= 1)
        for (; ch + 8 <= C; ch += 8) nn__channel_sum8_avx2(y, x, N, C, S, ch);
#endif
    for (; ch + 4 <= C; ch += 4) { /* 4 channels' sums side by side: each its own order */
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (n = 0; n < N; n++) {
            const float *p = x + (n * C + ch) * S;
            for (i = 0; i < S; i++) {
                s0 += p[i];
                s1 += p[S + i];
                s2 += p[2 * S + i];
                s3 += p[3 * S + i];
            }
        }
        y[ch] = (float)s0;
        y[ch + 1] = (float)s1;
        y[ch + 2] = (float)s2;
        y[ch + 3] = (float)s3;
    }
    for (; ch < C; ch++) {
        double s = 0.0;
        for (n = 0; n < N; n++) {
            const float *p = x + (n * C + ch) * S;
            for (i = 0; i < S; i++) s += p[i];
        }
        y[ch] = (float)s;
    }
}

/* ---- implicit GEMM (NN__CONV_IMPLICIT) ----------------------------------------------------
   The same products as above on the GEMM's own microkernel (src/cpu/gemm.c), with no column
   matrix: the weights are packed once per call into the microkernel's row panels, and the
   image (or dy) is packed straight into its column panels, a chunk of columns at a time, so
   what a chunk touches stays in the L2 cache; the forward writes y in place (no gather of
   the output, bias added per chunk), dx takes one chunk's columns at a time back to its
   pixels. Each output element gets the blocked GEMM's arithmetic: the same K blocks
   (nn__gemm_prepare's rule, a function of K alone) in the same order, the same microkernel,
   so the results are the im2col path's to the bit (dx: chunks run from an image's last
   output rows up, so each pixel still gets its (kh, kw) terms in order). */

#define NN__ICONV_COLS 256      /* forward: columns per chunk (a multiple of every nr) */
#define NN__ICONV_DCOL 65536    /* dx: floats of one chunk's columns (L2) */
#define NN__ICONV_TR_MAX (1 << 26) /* dw: the most floats of channels-last copies (256 MiB) */

/* The K block of the CPU GEMM for a reduction of length K (nn__gemm_prepare's rule) */
static int nn__iconv_kc(const nn__gemm_arch *arch, int K) {
    int nkb = (K + arch->kc - 1) / arch->kc, kc = ((K + nkb - 1) / nkb + 7) / 8 * 8;
    return kc > K ? K : kc;
}

static int nn__iconv_round(int v, int to) { return (v + to - 1) / to * to; }

/* dw: whether to compute dw^T [KK, Kg] = col [KK, P] dy^T [P, Kg] instead (the same sums: the
   blocked GEMM's C^T choice, nn__gemm_prepare's rule), when that fills the register tile
   better (a first layer: KK = 9 against 32 filters) */
static int nn__iconv_dw_ct(const nn__gemm_arch *arch, int Kg, int KK) {
    double eff = (double)Kg / nn__iconv_round(Kg, arch->mr) * KK / nn__iconv_round(KK, arch->nr);
    double eff_t = (double)KK / nn__iconv_round(KK, arch->mr) * Kg / nn__iconv_round(Kg, arch->nr);
    return eff_t > eff * 1.15;
}

/* The implicit path's layout of a node's scratch for one of the three products */
typedef struct nn__iconv {
    const nn__gemm_arch *arch;
    int T;                   /* tasks: the pool's threads */
    int kc;                  /* K block of the product */
    int rows;                /* dx: output rows per chunk */
    int ld;                  /* dx: columns of a chunk's dcol, rounded up to nr */
    size_t apk, per_task;    /* floats: the packed weights; each task's own */
    int tr;                  /* dw: the channels-last path (nn__iconv_dwt_task); 2: the blocked one (nn__iconv_dwb_task) */
    int Hp, Wp;              /* dw, tr: x's padded height and width */
    size_t xt, dyt, dwp;     /* dw, tr: floats of x and dy channels-last, of the permuted dw */
} nn__iconv;

static void nn__iconv_layout(const nn__conv2d *c, int op, int T, nn__iconv *L) {
    const nn__gemm_arch *arch = nn__gemm_pick_arch();
    int mr = arch->mr, nr = arch->nr, Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KH * c->KW;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    memset(L, 0, sizeof *L);
    L->arch = arch;
    L->T = T > 0 ? T : 1;
    if (op == 0) { /* y [Kg, P] = w [Kg, KK] col [KK, P] */
        L->kc = nn__iconv_kc(arch, KK);
        L->apk = (size_t)nn__iconv_round(Kg, mr) * KK + 16;
        L->per_task = (size_t)L->kc * NN__ICONV_COLS + (size_t)mr * nr + 32;
    } else if (op == 1) { /* dcol [KK, cols] = w^T [KK, Kg] dy [Kg, cols], a chunk of rows of one image */
        int rows = NN__ICONV_DCOL / (nn__iconv_round(KK, mr) * (c->OW > 0 ? c->OW : 1));
        L->rows = rows < 1 ? 1 : rows > c->OH ? c->OH : rows;
        L->kc = nn__iconv_kc(arch, Kg);
        L->ld = nn__iconv_round(L->rows * c->OW, nr);
        L->apk = (size_t)nn__iconv_round(KK, mr) * Kg + 16;
        L->per_task = (size_t)L->kc * L->ld + (size_t)nn__iconv_round(KK, mr) * L->ld + 32;
    } else { /* dw [Kg, KK] = dy [Kg, P] col^T [P, KK], P in K blocks, in order */
        int ct = nn__iconv_dw_ct(arch, Kg, KK), M = ct ? KK : Kg, Nn = ct ? Kg : KK;
        L->kc = nn__iconv_kc(arch, P > 0x7fffffff ? 0x7fffffff : (int)P);
        L->per_task = (size_t)nn__iconv_round(M, mr) * L->kc + (size_t)nn__iconv_round(Nn, nr) * L->kc +
                      (size_t)mr * nr + 48;
        if (c->G == 1 && c->sh == 1 && c->sw == 1 && c->dh == 1 && c->dw == 1 && c->C % nr == 0) {
            /* the blocked path: x as [N][C/nr][Hp][Wp][nr], dy as [N][K/mr][OH][Wp][mr] (zeros past OW) */
            int Hp = c->H + 2 * c->ph, Wp = c->W + 2 * c->pw, MB = (Kg + mr - 1) / mr;
            double xt = (double)c->N * Hp * Wp * c->C + (double)c->KW * nr, dyt = (double)c->N * MB * c->OH * Wp * mr;
            double dwp = (double)MB * mr * KK;
            if (xt + dyt + dwp < (double)NN__ICONV_TR_MAX) {
                L->tr = 2;
                if (L->per_task < (size_t)c->OH * c->OW * c->K + 16) L->per_task = (size_t)c->OH * c->OW * c->K + 16;
                L->Hp = Hp;
                L->Wp = Wp;
                L->xt = ((size_t)xt + 15) / 16 * 16;
                L->dyt = ((size_t)dyt + 15) / 16 * 16;
                L->dwp = ((size_t)dwp + 15) / 16 * 16;
            }
        }
        if (!L->tr && !ct && Cg >= 8) { /* the channels-last path: runs of >= 8 channels, copies of moderate size */
            int Hp = c->H + 2 * c->ph, Wp = c->W + 2 * c->pw;
            double xt = (double)c->N * Hp * Wp * c->C, dyt = (double)P * c->K, dwp = (double)nn__iconv_round(Kg, mr) * nn__iconv_round(KK, nr);
            if (xt + dyt + dwp < (double)NN__ICONV_TR_MAX) {
                L->tr = 1;
                L->Hp = Hp;
                L->Wp = Wp;
                L->xt = ((size_t)xt + 15) / 16 * 16;
                L->dyt = ((size_t)dyt + 15) / 16 * 16;
                L->dwp = ((size_t)dwp + 15) / 16 * 16;
            }
        }
    }
}

/* Floats of scratch the implicit path needs for op (0 forward, 1 dx, 2 dw) on T threads */
static int64_t nn__iconv_scratch(const nn__conv2d *c, int op, int T) {
    nn__iconv L;
    nn__iconv_layout(c, op, T, &L);
    return (int64_t)(L.apk + L.per_task * (size_t)L.T + L.xt + L.dyt + L.dwp) + (L.tr == 2 ? 16 : 0);
}

/* 64-byte aligned pointer at or after p (the microkernel loads its panels aligned) */
static float *nn__iconv_align(float *p) { return nn__gemm_align(p); }

/* The columns [lo, hi) of a row of outputs whose input column ow*sw + off lies in [0, W) */
static void nn__iconv_span(const nn__conv2d *c, int off, int *lo, int *hi) {
    int a = off >= 0 ? 0 : (-off + c->sw - 1) / c->sw, b = c->W - off <= 0 ? 0 : (c->W - off + c->sw - 1) / c->sw;
    if (b > c->OW) b = c->OW;
    if (a > b) a = b;
    *lo = a;
    *hi = b;
}

/* One tile's result t [m x n] (row stride nr) into C as the blocked GEMM's edge path does
   (alpha 1): columns q0.. of an output whose column q is image q / OHW, pixel q % OHW,
   row i at c0 + image * istride + i * OHW + pixel */
static void nn__iconv_store(const float *t, int nr, int m, int n, float beta, float *c0, int64_t istride, int64_t OHW,
                            int64_t q0) {
    int i, j;
    for (j = 0; j < n; j++) {
        int64_t q = q0 + j, img = q / OHW, pix = q % OHW;
        float *cp = c0 + img * istride + pix;
        for (i = 0; i < m; i++) {
            float *cr = cp + (int64_t)i * OHW;
            if (beta == 0.0f) *cr = 1.0f * t[(size_t)i * nr + j];
            else *cr = 1.0f * t[(size_t)i * nr + j] + beta * *cr;
        }
    }
}

/* Columns [q0, q0 + n) of the [*, P] output cut at the ends of its output rows: segment i is
   image img, output row oh, columns ow .. ow + len - 1, at offset j of the range */
typedef struct nn__iconv_seg {
    int64_t img;
    int oh, ow, len, j;
} nn__iconv_seg;

static int nn__iconv_segs(const nn__conv2d *c, int64_t q0, int n, nn__iconv_seg *s) {
    int64_t OHW = (int64_t)c->OH * c->OW, img = q0 / OHW, pix = q0 % OHW;
    int oh = (int)(pix / c->OW), ow = (int)(pix % c->OW), j = 0, k = 0;
    while (j < n) {
        int len = c->OW - ow < n - j ? c->OW - ow : n - j;
        s[k].img = img;
        s[k].oh = oh;
        s[k].ow = ow;
        s[k].len = len;
        s[k].j = j;
        k++;
        j += len;
        ow = 0;
        if (++oh == c->OH) {
            oh = 0;
            img++;
        }
    }
    return k;
}

/* Column panels [kc][nr] of col [k0:k0+kc, q0:q0+ncols] (im2col of group g) straight from x */
/* d[0:n] = s[0:n] (s NULL: zeros); a pixel row's piece is a few to a few dozen floats */
#if NN__GEMM_X86
__attribute__((target("avx512f"))) static void nn__iconv_copy_avx512(float *d, const float *s, int n) {
    for (; n >= 16; n -= 16, d += 16) {
        _mm512_storeu_ps(d, s ? _mm512_loadu_ps(s) : _mm512_setzero_ps());
        if (s) s += 16;
    }
    if (n > 0) {
        __mmask16 m = (__mmask16)((1u << n) - 1u);
        _mm512_mask_storeu_ps(d, m, s ? _mm512_maskz_loadu_ps(m, s) : _mm512_setzero_ps());
    }
}
#endif

/* d[0:n] += s[0:n] */
#if NN__GEMM_X86
__attribute__((target("avx512f"))) static void nn__iconv_add_avx512(float *d, const float *s, int n) {
    for (; n >= 16; n -= 16, d += 16, s += 16) _mm512_storeu_ps(d, _mm512_add_ps(_mm512_loadu_ps(d), _mm512_loadu_ps(s)));
    if (n > 0) {
        __mmask16 m = (__mmask16)((1u << n) - 1u);
        _mm512_mask_storeu_ps(d, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d), _mm512_maskz_loadu_ps(m, s)));
    }
}
#endif

static void nn__iconv_add(int avx512, float *d, const float *s, int n) {
    int i;
#if NN__GEMM_X86
    if (avx512) {
        nn__iconv_add_avx512(d, s, n);
        return;
    }
#endif
    (void)avx512;
    for (i = 0; i < n; i++) d[i] += s[i];
}

/* rows rows of n floats: d[r * dstep + i] = s[r * sstep + i] (s NULL: zeros), one call per run
   of pixels rather than per pixel */
#if NN__GEMM_X86
__attribute__((target("avx512f"))) static void nn__iconv_copy_rows_avx512(float *d, size_t dstep, const float *s,
                                                                          size_t sstep, int rows, int n) {
    int r, i, n16 = n / 16 * 16;
    __mmask16 m = (__mmask16)((1u << (n - n16)) - 1u);
    for (r = 0; r < rows; r++, d += dstep) {
        for (i = 0; i < n16; i += 16) _mm512_storeu_ps(d + i, s ? _mm512_loadu_ps(s + i) : _mm512_setzero_ps());
        if (m) _mm512_mask_storeu_ps(d + i, m, s ? _mm512_maskz_loadu_ps(m, s + i) : _mm512_setzero_ps());
        if (s) s += sstep;
    }
}
#endif

static void nn__iconv_copy_rows(int avx512, float *d, size_t dstep, const float *s, size_t sstep, int rows, int n) {
    int r, i;
#if NN__GEMM_X86
    if (avx512) {
        nn__iconv_copy_rows_avx512(d, dstep, s, sstep, rows, n);
        return;
    }
#endif
    (void)avx512;
    for (r = 0; r < rows; r++, d += dstep) {
        if (s) {
            for (i = 0; i < n; i++) d[i] = s[i];
            s += sstep;
        } else
            for (i = 0; i < n; i++) d[i] = 0.0f;
    }
}

static void nn__iconv_copy(int avx512, float *d, const float *s, int n) {
    int i;
#if NN__GEMM_X86
    if (avx512) {
        nn__iconv_copy_avx512(d, s, n);
        return;
    }
#endif
    (void)avx512;
    if (s)
        for (i = 0; i < n; i++) d[i] = s[i];
    else
        for (i = 0; i < n; i++) d[i] = 0.0f;
}

static void nn__iconv_pack_x(const nn__conv2d *c, const float *x, int g, int k0, int kc, int64_t q0, int ncols, int nr,
                             float *dst) {
    int Cg = c->C / c->G, KHW = c->KH * c->KW, jr, k, si, avx512 = nn__vm_isa() == 2;
    nn__iconv_seg seg[NN__GEMM_MAX_NR];
    for (jr = 0; jr < ncols; jr += nr) {
        int n = ncols - jr < nr ? ncols - jr : nr, ns = nn__iconv_segs(c, q0 + jr, n, seg);
        int ci = k0 / KHW, kh = k0 % KHW / c->KW, kw = k0 % c->KW;
        float *d = dst + (size_t)jr * kc;
        for (k = 0; k < kc; k++) {
            int off = kw * c->dw - c->pw, lo, hi;
            float *dr = d + (size_t)k * nr;
            const float *xc = x + ((int64_t)g * Cg + ci) * c->H * (int64_t)c->W;
            nn__iconv_span(c, off, &lo, &hi);
            for (si = 0; si < ns; si++) {
                const nn__iconv_seg *sg = &seg[si];
                int ow = sg->ow, e = ow + sg->len, ih = sg->oh * c->sh - c->ph + kh * c->dh, a, b;
                float *o = dr + sg->j - ow;
                if (ih < 0 || ih >= c->H) {
                    nn__iconv_copy(avx512, o + ow, NULL, sg->len);
                    continue;
                }
                {
                    const float *xr = xc + (sg->img * c->C * c->H + ih) * (int64_t)c->W;
                    a = lo > ow ? lo : ow;
                    b = hi < e ? hi : e;
                    if (b < a) b = a;
                    for (; ow < a; ow++) o[ow] = 0.0f;
                    if (c->sw == 1) {
                        nn__iconv_copy(avx512, o + ow, xr + ow + off, b - ow);
                        ow = b;
                    } else
                        for (; ow < b; ow++) o[ow] = xr[ow * c->sw + off];
                    for (; ow < e; ow++) o[ow] = 0.0f;
                }
            }
            if (n < nr) nn__iconv_copy(avx512, dr + n, NULL, nr - n);
            if (++kw == c->KW) { /* the next (ci, kh, kw) */
                kw = 0;
                if (++kh == c->KH) {
                    kh = 0;
                    ci++;
                }
            }
        }
    }
}

typedef struct nn__iconv_job {
    const nn__conv2d *c;
    const nn__iconv *L;
    const float *x, *w, *b, *dy;
    float *y, *apk, *bufs;
    float *xt, *dyt, *dwp; /* dw, the channels-last path */
    int g, tasks;
} nn__iconv_job;

/* Forward: task t's share of the chunks of NN__ICONV_COLS columns */
static void nn__iconv_fwd_task(void *arg, int t, int n_tasks) {
    const nn__iconv_job *J = (const nn__iconv_job *)arg;
    const nn__conv2d *c = J->c;
    const nn__gemm_arch *arch = J->L->arch;
    int mr = arch->mr, nr = arch->nr, Kg = c->K / c->G, KK = c->C / c->G * c->KH * c->KW, Kgp = nn__iconv_round(Kg, mr);
    int64_t OHW = (int64_t)c->OH * c->OW, P = c->N * OHW, nch = (P + NN__ICONV_COLS - 1) / NN__ICONV_COLS;
    int64_t per = (nch + n_tasks - 1) / n_tasks, ch, ch1 = per * (t + 1) < nch ? per * (t + 1) : nch;
    float *bb = nn__iconv_align(J->bufs + J->L->per_task * (size_t)t), *tmp = bb + (size_t)J->L->kc * NN__ICONV_COLS;
    float *yg = J->y + (int64_t)J->g * Kg * OHW;
    int avx512 = nn__vm_isa() == 2;
    for (ch = per * t; ch < ch1; ch++) {
        int64_t q0 = ch * NN__ICONV_COLS;
        int ncols = (int)(P - q0 < NN__ICONV_COLS ? P - q0 : NN__ICONV_COLS), pc, jr, ir, i, j;
        for (pc = 0; pc < KK; pc += J->L->kc) {
            int kc = KK - pc < J->L->kc ? KK - pc : J->L->kc;
            float beta = pc == 0 ? 0.0f : 1.0f;
            nn__iconv_pack_x(c, J->x, J->g, pc, kc, q0, ncols, nr, bb);
            for (jr = 0; jr < ncols; jr += nr) {
                int n = ncols - jr < nr ? ncols - jr : nr;
                int64_t q = q0 + jr, img = q / OHW, pix = q % OHW;
                const float *bp = bb + (size_t)jr * kc;
                for (ir = 0; ir < Kg; ir += mr) {
                    int m = Kg - ir < mr ? Kg - ir : mr;
                    const float *ap = J->apk + (size_t)pc * Kgp + (size_t)ir * kc;
                    if (m == mr && n == nr && pix + nr <= OHW)
                        arch->ukr(kc, ap, bp, yg + (img * c->K + ir) * OHW + pix, (int)OHW, 1.0f, beta);
                    else if (n == nr && pix + nr <= OHW) { /* the last rows of filters: whole rows of the tile */
                        float *yr = yg + (img * c->K + ir) * OHW + pix;
                        arch->ukr(kc, ap, bp, tmp, nr, 1.0f, 0.0f);
                        for (i = 0; i < m; i++) { /* t + beta y as the edge store: y = t, or y + t */
                            if (beta == 0.0f) nn__iconv_copy(avx512, yr + (int64_t)i * OHW, tmp + (size_t)i * nr, nr);
                            else nn__iconv_add(avx512, yr + (int64_t)i * OHW, tmp + (size_t)i * nr, nr);
                        }
                    } else {
                        arch->ukr(kc, ap, bp, tmp, nr, 1.0f, 0.0f);
                        nn__iconv_store(tmp, nr, m, n, beta, yg + (int64_t)ir * OHW, (int64_t)c->K * OHW, OHW, q);
                    }
                }
            }
        }
        if (J->b) /* the bias after the whole sum, as the im2col path adds it */
            for (j = 0; j < ncols;) {
                int64_t q = q0 + j, img = q / OHW, pix = q % OHW;
                int len = (int)(OHW - pix < ncols - j ? OHW - pix : ncols - j);
                for (i = 0; i < Kg; i++) {
                    float *yr = yg + (img * c->K + i) * OHW + pix, bias = J->b[J->g * Kg + i];
                    int e;
                    for (e = 0; e < len; e++) yr[e] = yr[e] + bias;
                }
                j += len;
            }
    }
}

/* ---- forward, direct (AVX-512): a first layer ----
   A stride-1, undilated, ungrouped convolution with few taps (C*KH*KW <= 32: 1 or 3 input
   channels) leaves the GEMM a reduction too short for its tile (9 multiply-adds per load and
   store of the accumulators). Here 8 filters by 32 output pixels of a row stay in registers
   and each tap's 32 inputs are loaded once for the 8: the same fused multiply-adds as the
   microkernel in the same order (from zero, (ci, kh, kw) in order, zeros for the padding; the
   reduction is one K block of the GEMM's when C*KH*KW <= 32), the bias added after, so y is
   the implicit GEMM's to the bit. */
static int nn__iconv_direct_fits(const nn__conv2d *c) {
    return nn__vm_isa() == 2 && c->G == 1 && c->sh == 1 && c->sw == 1 && c->dh == 1 && c->dw == 1 &&
           c->C * c->KH * c->KW <= 32 && c->KW <= 32 && c->K % 8 == 0 && c->K > 0;
}

#if NN__GEMM_X86
/* y row oh of image n, filters [k0, k0 + 8), pixels [ow0, ow0 + 32) */
__attribute__((target("avx512f"))) static void nn__iconv_direct_avx512(const nn__conv2d *c, float *y, const float *x,
                                                                       const float *w, const float *b, int64_t n, int oh,
                                                                       int k0, int ow0) {
    __m512 a00 = _mm512_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
    __m512 a40 = a00, a41 = a00, a50 = a00, a51 = a00, a60 = a00, a61 = a00, a70 = a00, a71 = a00, xv0, xv1, wv;
    int KHW = c->KH * c->KW, KK = c->C * KHW, ci, kh, kw, ow1 = ow0 + 16;
    int64_t OHW = (int64_t)c->OH * c->OW;
    const float *wk = w + (int64_t)k0 * KK;
    __mmask16 s0 = (__mmask16)(c->OW - ow0 >= 16 ? 0xFFFFu : (1u << (c->OW - ow0)) - 1u);
    __mmask16 s1 = (__mmask16)(c->OW - ow1 >= 16 ? 0xFFFFu : c->OW - ow1 <= 0 ? 0u : (1u << (c->OW - ow1)) - 1u);
    float *yr = y + (n * c->K + k0) * OHW + (int64_t)oh * c->OW + ow0;
    __m512 one = _mm512_set1_ps(1.0f);
    __mmask16 mk0[32], mk1[32]; /* per kw: the lanes whose input column col + lane lies in [0, W) */
    for (kw = 0; kw < c->KW; kw++) {
        int col = ow0 - c->pw + kw;
        int lo0 = col < 0 ? -col : 0, hi0 = c->W - col, lo1 = col + 16 < 0 ? -(col + 16) : 0, hi1 = c->W - col - 16;
        if (lo0 > 16) lo0 = 16;
        if (lo1 > 16) lo1 = 16;
        hi0 = hi0 < 0 ? 0 : hi0 > 16 ? 16 : hi0;
        hi1 = hi1 < 0 ? 0 : hi1 > 16 ? 16 : hi1;
        mk0[kw] = (__mmask16)(hi0 > lo0 ? ((1u << hi0) - 1u) & ~((1u << lo0) - 1u) : 0u);
        mk1[kw] = (__mmask16)(hi1 > lo1 ? ((1u << hi1) - 1u) & ~((1u << lo1) - 1u) : 0u);
    }
    for (ci = 0; ci < c->C; ci++)
        for (kh = 0; kh < c->KH; kh++) {
            int ih = oh - c->ph + kh;
            const float *xr = x + ((n * c->C + ci) * c->H + ih) * (int64_t)c->W;
            for (kw = 0; kw < c->KW; kw++) {
                int col = ow0 - c->pw + kw, t = (ci * c->KH + kh) * c->KW + kw;
                __mmask16 m0 = mk0[kw], m1 = mk1[kw];
                if (ih < 0 || ih >= c->H) m0 = m1 = 0;
                xv0 = _mm512_maskz_loadu_ps(m0, xr + col);
                xv1 = _mm512_maskz_loadu_ps(m1, xr + col + 16);
#define NN__DIRECT_ROW(R, A0, A1)                   \
    wv = _mm512_set1_ps(wk[(int64_t)(R) * KK + t]); \
    A0 = _mm512_fmadd_ps(wv, xv0, A0);              \
    A1 = _mm512_fmadd_ps(wv, xv1, A1);
                NN__DIRECT_ROW(0, a00, a01)
                NN__DIRECT_ROW(1, a10, a11)
                NN__DIRECT_ROW(2, a20, a21)
                NN__DIRECT_ROW(3, a30, a31)
                NN__DIRECT_ROW(4, a40, a41)
                NN__DIRECT_ROW(5, a50, a51)
                NN__DIRECT_ROW(6, a60, a61)
                NN__DIRECT_ROW(7, a70, a71)
#undef NN__DIRECT_ROW
            }
        }
#define NN__DIRECT_STORE(R, A0, A1)                                                     \
    {                                                                                   \
        __m512 v0 = _mm512_mul_ps(one, A0), v1 = _mm512_mul_ps(one, A1);                \
        if (b) {                                                                        \
            __m512 bv = _mm512_set1_ps(b[k0 + (R)]);                                    \
            v0 = _mm512_add_ps(v0, bv);                                                 \
            v1 = _mm512_add_ps(v1, bv);                                                 \
        }                                                                               \
        _mm512_mask_storeu_ps(yr + (R) * OHW, s0, v0);                                  \
        if (s1) _mm512_mask_storeu_ps(yr + (R) * OHW + 16, s1, v1);                     \
    }
    NN__DIRECT_STORE(0, a00, a01)
    NN__DIRECT_STORE(1, a10, a11)
    NN__DIRECT_STORE(2, a20, a21)
    NN__DIRECT_STORE(3, a30, a31)
    NN__DIRECT_STORE(4, a40, a41)
    NN__DIRECT_STORE(5, a50, a51)
    NN__DIRECT_STORE(6, a60, a61)
    NN__DIRECT_STORE(7, a70, a71)
#undef NN__DIRECT_STORE
}
#endif

static void nn__iconv_direct_task(void *arg, int t, int n_tasks) {
    const nn__iconv_job *J = (const nn__iconv_job *)arg;
    const nn__conv2d *c = J->c;
    int64_t rows = (int64_t)c->N * c->OH, per = (rows + n_tasks - 1) / n_tasks, q, q1 = per * (t + 1) < rows ? per * (t + 1) : rows;
    int k0, ow0;
    for (q = per * t; q < q1; q++)
        for (k0 = 0; k0 < c->K; k0 += 8)
            for (ow0 = 0; ow0 < c->OW; ow0 += 32) {
#if NN__GEMM_X86
                nn__iconv_direct_avx512(c, J->y, J->x, J->w, J->b, q / c->OH, (int)(q % c->OH), k0, ow0);
#endif
            }
}

/* The number of tasks worth starting for work multiply-adds */
static int nn__iconv_tasks(nn__threadpool *pool, const nn__iconv *L, double work, int64_t units) {
    int T = L->T < nn__threadpool_size(pool) ? L->T : nn__threadpool_size(pool);
    if (work < (double)NN__PAR_MIN * 8) T = 1;
    if (T > units) T = (int)units;
    return T < 1 ? 1 : T;
}

/* y [N, K, OH, OW] = conv(x, w) + b (b may be NULL), scratch from nn__iconv_scratch(c, 0, T) */
static void nn__iconv_forward(nn__threadpool *pool, const nn__conv2d *c, int T, float *y, const float *x,
                              const float *w, const float *b, float *scratch) {
    nn__iconv L;
    nn__iconv_job J;
    int Kg = c->K / c->G, KK = c->C / c->G * c->KH * c->KW, pc;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    nn__iconv_layout(c, 0, T, &L);
    memset(&J, 0, sizeof J);
    J.c = c;
    J.L = &L;
    J.x = x;
    J.b = b;
    J.y = y;
    if (nn__iconv_direct_fits(c)) {
        J.w = w;
        nn__threadpool_run(pool, nn__iconv_direct_task, &J,
                           nn__iconv_tasks(pool, &L, (double)P * Kg * KK, (int64_t)c->N * c->OH));
        return;
    }
    J.apk = nn__iconv_align(scratch);
    J.bufs = scratch + L.apk;
    J.tasks = nn__iconv_tasks(pool, &L, (double)P * Kg * KK, (P + NN__ICONV_COLS - 1) / NN__ICONV_COLS);
    for (J.g = 0; J.g < c->G; J.g++) {
        const float *wg = w + (int64_t)J.g * Kg * KK;
        for (pc = 0; pc < KK; pc += L.kc) {
            int kc = KK - pc < L.kc ? KK - pc : L.kc;
            L.arch->pack_a(0, wg, KK, 0, Kg, pc, kc, L.arch->mr, J.apk + (size_t)pc * nn__iconv_round(Kg, L.arch->mr));
        }
        nn__threadpool_run(pool, nn__iconv_fwd_task, &J, J.tasks);
    }
}

/* dx: task t's images, each a chunk of L->rows output rows at a time from the last rows up */
static void nn__iconv_dx_task(void *arg, int t, int n_tasks) {
    const nn__iconv_job *J = (const nn__iconv_job *)arg;
    const nn__conv2d *c = J->c;
    const nn__iconv *L = J->L;
    const nn__gemm_arch *arch = L->arch;
    int mr = arch->mr, nr = arch->nr, Cg = c->C / c->G, Kg = c->K / c->G, KK = Cg * c->KH * c->KW;
    int KKp = nn__iconv_round(KK, mr), per = (c->N + n_tasks - 1) / n_tasks, n, n1 = per * (t + 1) < c->N ? per * (t + 1) : c->N;
    int64_t OHW = (int64_t)c->OH * c->OW;
    float *bb = nn__iconv_align(J->bufs + L->per_task * (size_t)t), *dcol = bb + (size_t)L->kc * L->ld;
    int avx512 = nn__vm_isa() == 2;
    for (n = per * t; n < n1; n++) {
        int oh0;
        for (oh0 = (c->OH - 1) / L->rows * L->rows; oh0 >= 0; oh0 -= L->rows) {
            int oh1 = oh0 + L->rows < c->OH ? oh0 + L->rows : c->OH, cols = (oh1 - oh0) * c->OW, pc, jr, ir, kk;
            const float *dyc = J->dy + ((int64_t)n * c->K + (int64_t)J->g * Kg) * OHW + (int64_t)oh0 * c->OW;
            for (pc = 0; pc < Kg; pc += L->kc) {
                int kc = Kg - pc < L->kc ? Kg - pc : L->kc;
                float beta = pc == 0 ? 0.0f : 1.0f;
                arch->pack_b(0, dyc, (int)OHW, pc, kc, 0, cols, nr, bb);
                for (jr = 0; jr < cols; jr += nr)
                    for (ir = 0; ir < KKp; ir += mr)
                        arch->ukr(kc, J->apk + (size_t)pc * KKp + (size_t)ir * kc, bb + (size_t)jr * kc,
                                  dcol + (size_t)ir * L->ld + jr, L->ld, 1.0f, beta);
            }
            for (kk = 0; kk < KK; kk++) { /* col2im of the chunk, (ci, kh, kw) in order */
                int ci = kk / (c->KH * c->KW), kh = kk / c->KW % c->KH, kw = kk % c->KW, off = kw * c->dw - c->pw, lo, hi, oh, ow;
                float *xc = J->y + ((int64_t)n * c->C + (int64_t)J->g * Cg + ci) * c->H * c->W;
                nn__iconv_span(c, off, &lo, &hi);
                for (oh = oh0; oh < oh1; oh++) {
                    int ih = oh * c->sh - c->ph + kh * c->dh;
                    const float *r = dcol + (size_t)kk * L->ld + (size_t)(oh - oh0) * c->OW;
                    float *xr;
                    if (ih < 0 || ih >= c->H) continue;
                    xr = xc + (int64_t)ih * c->W;
                    if (c->sw == 1) {
                        if (hi > lo) nn__iconv_add(avx512, xr + lo + off, r + lo, hi - lo);
                    } else
                        for (ow = lo; ow < hi; ow++) xr[ow * c->sw + off] += r[ow];
                }
            }
        }
    }
}

/* dx [N, C, H, W] = conv2d's gradient with respect to its input, scratch from nn__iconv_scratch(c, 1, T) */
static void nn__iconv_backward_data(nn__threadpool *pool, const nn__conv2d *c, int T, float *dx, const float *w,
                                    const float *dy, float *scratch) {
    nn__iconv L;
    nn__iconv_job J;
    int Kg = c->K / c->G, KK = c->C / c->G * c->KH * c->KW, pc;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    nn__iconv_layout(c, 1, T, &L);
    memset(&J, 0, sizeof J);
    memset(dx, 0, (size_t)c->N * c->C * c->H * c->W * sizeof(float));
    J.c = c;
    J.L = &L;
    J.dy = dy;
    J.y = dx;
    J.apk = nn__iconv_align(scratch);
    J.bufs = scratch + L.apk;
    J.tasks = nn__iconv_tasks(pool, &L, (double)P * Kg * KK, c->N);
    for (J.g = 0; J.g < c->G; J.g++) {
        const float *wg = w + (int64_t)J.g * Kg * KK;
        for (pc = 0; pc < Kg; pc += L.kc) {
            int kc = Kg - pc < L.kc ? Kg - pc : L.kc;
            L.arch->pack_a(1, wg, KK, 0, KK, pc, kc, L.arch->mr, J.apk + (size_t)pc * nn__iconv_round(KK, L.arch->mr));
        }
        nn__threadpool_run(pool, nn__iconv_dx_task, &J, J.tasks);
    }
}

/* dw: A panels [kc][mr] of dy_g rows [i0, i1) over the columns [q0, q0 + kc) */
static void nn__iconv_pack_dy(const nn__conv2d *c, const float *dy, int g, int i0, int i1, const nn__iconv_seg *seg,
                              int ns, int kc, int mr, float *dst) {
    int64_t OHW = (int64_t)c->OH * c->OW;
    int Kg = c->K / c->G, ir, r, si, e;
    for (ir = i0; ir < i1; ir += mr, dst += (size_t)mr * kc) {
        int m = i1 - ir < mr ? i1 - ir : mr;
        for (si = 0; si < ns; si++) {
            const nn__iconv_seg *sg = &seg[si];
            float *d = dst + (size_t)sg->j * mr;
            for (r = 0; r < m; r++) {
                const float *s = dy + (sg->img * c->K + (int64_t)g * Kg + ir + r) * OHW + (int64_t)sg->oh * c->OW + sg->ow;
                for (e = 0; e < sg->len; e++) d[(size_t)e * mr + r] = s[e];
            }
            for (; r < mr; r++)
                for (e = 0; e < sg->len; e++) d[(size_t)e * mr + r] = 0.0f;
        }
    }
}

/* dw: B panels [kc][nr] of col^T (rows: the columns [q0, q0 + kc); columns: kk in [j0, j1)) */
static void nn__iconv_pack_colt(const nn__conv2d *c, const float *x, int g, int j0, int j1, const nn__iconv_seg *seg,
                                int ns, int kc, int nr, float *dst) {
    int Cg = c->C / c->G, KHW = c->KH * c->KW, jr, cc, k, si;
    for (jr = j0; jr < j1; jr += nr, dst += (size_t)nr * kc) {
        int n = j1 - jr < nr ? j1 - jr : nr;
        for (cc = 0; cc < nr; cc++) {
            float *d = dst + cc;
            int kk = jr + cc, ci, kh, kw, off, lo, hi;
            if (cc >= n) {
                for (k = 0; k < kc; k++) d[(size_t)k * nr] = 0.0f;
                continue;
            }
            ci = kk / KHW;
            kh = kk % KHW / c->KW;
            kw = kk % c->KW;
            off = kw * c->dw - c->pw;
            nn__iconv_span(c, off, &lo, &hi);
            for (si = 0; si < ns; si++) {
                const nn__iconv_seg *sg = &seg[si];
                int ow = sg->ow, e = ow + sg->len, a, b, ih = sg->oh * c->sh - c->ph + kh * c->dh;
                float *o = d + ((size_t)sg->j - (size_t)ow) * nr;
                if (ih < 0 || ih >= c->H) {
                    for (; ow < e; ow++) o[(size_t)ow * nr] = 0.0f;
                } else {
                    const float *xr = x + ((sg->img * c->C + (int64_t)g * Cg + ci) * c->H + ih) * (int64_t)c->W;
                    a = lo > ow ? lo : ow;
                    b = hi < e ? hi : e;
                    if (b < a) b = a;
                    for (; ow < a; ow++) o[(size_t)ow * nr] = 0.0f;
                    for (; ow < b; ow++) o[(size_t)ow * nr] = xr[ow * c->sw + off];
                    for (; ow < e; ow++) o[(size_t)ow * nr] = 0.0f;
                }
            }
        }
    }
}

/* ---- dw, channels last (L->tr) ----
   The same products as nn__iconv_dw_task, each dw element the same multiply-adds in the same
   K blocks of P in the same order on the same microkernel (so the same bits), with the
   operands first copied channels last: x to xt [N, H + 2ph, W + 2pw, C] (padding zeros) and dy
   to dyt [N, OH, OW, K], once per call. The columns of dw_g are taken in the order kk' =
   (kh*KW + kw)*Cg + ci, so a panel row of col^T is a run of channels of one pixel of xt and a
   panel row of dy a run of channels of dyt: contiguous copies instead of a float at a time.
   The tiles accumulate in dwp [Kg rounded to mr, KK' rounded to nr] (zero-padded panels, no
   edge tiles), which each task then writes back to dw's (ci, kh, kw) order. */

#if NN__GEMM_X86
/* d[j][i] = s[i * ls + j], i, j < 8: an 8x8 block transposed */
__attribute__((target("avx2"))) static void nn__iconv_t8_avx2(float *const *d, const float *s, size_t ls) {
    __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ls), r2 = _mm256_loadu_ps(s + 2 * ls);
    __m256 r3 = _mm256_loadu_ps(s + 3 * ls), r4 = _mm256_loadu_ps(s + 4 * ls), r5 = _mm256_loadu_ps(s + 5 * ls);
    __m256 r6 = _mm256_loadu_ps(s + 6 * ls), r7 = _mm256_loadu_ps(s + 7 * ls);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3);
    __m256 t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    r0 = _mm256_shuffle_ps(t0, t2, 0x44);
    r1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    r2 = _mm256_shuffle_ps(t1, t3, 0x44);
    r3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    r4 = _mm256_shuffle_ps(t4, t6, 0x44);
    r5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    r6 = _mm256_shuffle_ps(t5, t7, 0x44);
    r7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(d[0], _mm256_permute2f128_ps(r0, r4, 0x20));
    _mm256_storeu_ps(d[1], _mm256_permute2f128_ps(r1, r5, 0x20));
    _mm256_storeu_ps(d[2], _mm256_permute2f128_ps(r2, r6, 0x20));
    _mm256_storeu_ps(d[3], _mm256_permute2f128_ps(r3, r7, 0x20));
    _mm256_storeu_ps(d[4], _mm256_permute2f128_ps(r0, r4, 0x31));
    _mm256_storeu_ps(d[5], _mm256_permute2f128_ps(r1, r5, 0x31));
    _mm256_storeu_ps(d[6], _mm256_permute2f128_ps(r2, r6, 0x31));
    _mm256_storeu_ps(d[7], _mm256_permute2f128_ps(r3, r7, 0x31));
}
#endif

/* dst [H + 2ph, W + 2pw, C] (channels last, zero border) = src [C, H, W], one image: blocks of
   8 channels by 8 pixels (of the flattened H*W) transposed, the rest a float at a time */
static void nn__iconv_nhwc(float *dst, const float *src, int C, int H, int W, int ph, int pw) {
    int Wp = W + 2 * pw, h, c0, i, avx2 = nn__vm_isa() >= 1, HW = H * W, q, q0;
    memset(dst, 0, (size_t)ph * Wp * C * sizeof(float));
    memset(dst + (size_t)(H + ph) * Wp * C, 0, (size_t)ph * Wp * C * sizeof(float));
    for (h = 0; h < H; h++) {
        float *row = dst + (size_t)(h + ph) * Wp * C;
        memset(row, 0, (size_t)pw * C * sizeof(float));
        memset(row + (size_t)(W + pw) * C, 0, (size_t)pw * C * sizeof(float));
    }
    for (c0 = 0; c0 < C; c0 += 8) {
        int cn = C - c0 < 8 ? C - c0 : 8;
        const float *s = src + (int64_t)c0 * HW;
        q0 = 0;
#if NN__GEMM_X86
        if (avx2 && cn == 8) {
            int ph_ = 0, pw_ = 0; /* q0's pixel, kept without divisions */
            for (; q0 + 8 <= HW; q0 += 8) {
                float *d[8];
                int hh = ph_, ww = pw_;
                for (q = 0; q < 8; q++) {
                    d[q] = dst + ((size_t)(hh + ph) * Wp + (size_t)(ww + pw)) * C + c0;
                    if (++ww == W) ww = 0, hh++;
                }
                ph_ = hh;
                pw_ = ww;
                nn__iconv_t8_avx2(d, s + q0, (size_t)HW);
            }
        }
#endif
        (void)avx2;
        for (q = q0; q < HW; q++) {
            float *d = dst + ((size_t)(q / W + ph) * Wp + (size_t)(q % W + pw)) * C + c0;
            for (i = 0; i < cn; i++) d[i] = s[(int64_t)i * HW + q];
        }
    }
}

static void nn__iconv_tr_task(void *arg, int t, int n_tasks) {
    const nn__iconv_job *J = (const nn__iconv_job *)arg;
    const nn__conv2d *c = J->c;
    const nn__iconv *L = J->L;
    int per = (c->N + n_tasks - 1) / n_tasks, n, n1 = per * (t + 1) < c->N ? per * (t + 1) : c->N;
    for (n = per * t; n < n1; n++) {
        nn__iconv_nhwc(J->xt + (size_t)n * L->Hp * L->Wp * c->C, J->x + (int64_t)n * c->C * c->H * c->W, c->C, c->H,
                       c->W, c->ph, c->pw);
        nn__iconv_nhwc(J->dyt + (size_t)n * c->OH * c->OW * c->K, J->dy + (int64_t)n * c->K * c->OH * c->OW, c->K,
                       c->OH, c->OW, 0, 0);
    }
}

static void nn__iconv_dwt_task(void *arg, int t, int n_tasks) {
    const nn__iconv_job *J = (const nn__iconv_job *)arg;
    const nn__conv2d *c = J->c;
    const nn__iconv *L = J->L;
    const nn__gemm_arch *arch = L->arch;
    int mr = arch->mr, nr = arch->nr, Cg = c->C / c->G, Kg = c->K / c->G, KHW = c->KH * c->KW, KK = Cg * KHW;
    int KKp = nn__iconv_round(KK, nr), mt = (Kg + mr - 1) / mr, nt = (KK + nr - 1) / nr;
    int i0 = 0, i1 = nn__iconv_round(Kg, mr), j0 = 0, j1 = KKp, ir, jr, i, j, si;
    int avx512 = nn__vm_isa() == 2;
    int64_t P = (int64_t)c->N * c->OH * c->OW, pc;
    float *ab = nn__iconv_align(J->bufs + L->per_task * (size_t)t), *bb;
    float *dw = J->y + (int64_t)J->g * Kg * KK;
    nn__iconv_seg seg[NN__GEMM_MAX_KC];
    if (nt >= n_tasks || nt >= mt) {
        int per = (nt + n_tasks - 1) / n_tasks;
        j0 = per * t * nr;
        j1 = per * (t + 1) * nr < KKp ? per * (t + 1) * nr : KKp;
    } else {
        int per = (mt + n_tasks - 1) / n_tasks;
        i0 = per * t * mr;
        i1 = per * (t + 1) * mr < i1 ? per * (t + 1) * mr : i1;
    }
    if (i0 >= i1 || j0 >= j1) return;
    bb = nn__iconv_align(ab + (size_t)nn__iconv_round(Kg, mr) * L->kc);
    for (pc = 0; pc < P; pc += L->kc) {
        int kc = (int)(P - pc < L->kc ? P - pc : L->kc), ns = nn__iconv_segs(c, pc, kc, seg);
        float beta = pc == 0 ? 0.0f : 1.0f, *d;
        /* A panels [kc][mr] of dy_g rows [i0, i1): row k of a panel, mr channels of a pixel */
        for (ir = i0, d = ab; ir < i1; ir += mr, d += (size_t)mr * kc) {
            int m = Kg - ir < mr ? (Kg - ir > 0 ? Kg - ir : 0) : mr;
            for (si = 0; si < ns; si++) {
                const nn__iconv_seg *sg = &seg[si];
                const float *s = J->dyt + ((size_t)(sg->img * c->OH + sg->oh) * c->OW + sg->ow) * c->K + (size_t)J->g * Kg + ir;
                float *o = d + (size_t)sg->j * mr;
                nn__iconv_copy_rows(avx512, o, (size_t)mr, m > 0 ? s : NULL, (size_t)c->K, sg->len, m > 0 ? m : mr);
                if (m > 0 && m < mr) nn__iconv_copy_rows(avx512, o + m, (size_t)mr, NULL, 0, sg->len, mr - m);
            }
        }
        /* B panels [kc][nr] of col^T, columns kk' in [j0, j1): runs of channels of one tap */
        for (jr = j0, d = bb; jr < j1; jr += nr, d += (size_t)nr * kc) {
            int cc = 0;
            while (cc < nr) {
                int kk = jr + cc, run, s, ci, kh, kw;
                if (kk >= KK) {
                    nn__iconv_copy_rows(avx512, d + cc, (size_t)nr, NULL, 0, kc, nr - cc);
                    break;
                }
                s = kk / Cg;
                ci = kk % Cg;
                run = Cg - ci;
                if (run > nr - cc) run = nr - cc;
                if (run > KK - kk) run = KK - kk;
                kh = s / c->KW;
                kw = s % c->KW;
                for (si = 0; si < ns; si++) {
                    const nn__iconv_seg *sg = &seg[si];
                    const float *x = J->xt + ((size_t)(sg->img * L->Hp + sg->oh * c->sh + kh * c->dh) * L->Wp +
                                              (size_t)sg->ow * c->sw + (size_t)kw * c->dw) * c->C + (size_t)J->g * Cg + ci;
                    float *o = d + (size_t)sg->j * nr + cc;
                    nn__iconv_copy_rows(avx512, o, (size_t)nr, x, (size_t)c->sw * c->C, sg->len, run);
                }
                cc += run;
            }
        }
        for (jr = j0; jr < j1; jr += nr)
            for (ir = i0; ir < i1; ir += mr)
                arch->ukr(kc, ab + (size_t)(ir - i0) * kc, bb + (size_t)(jr - j0) * kc, J->dwp + (size_t)ir * KKp + jr, KKp,
                          1.0f, beta);
    }
    if (i1 > Kg) i1 = Kg;
    if (j1 > KK) j1 = KK;
    for (i = i0; i < i1; i++)
        for (j = j0; j < j1; j++) dw[(int64_t)i * KK + j % Cg * KHW + j / Cg] = J->dwp[(size_t)i * KKp + j];
}

/* ---- dw, blocked (L->tr == 2) ----
   A stride-1, undilated, ungrouped convolution whose channels are a multiple of nr: x copied
   to xb [N][C/nr][Hp][Wp][nr] (padding zeros) and dy to dyb [N][K/mr][OH][Wp][mr] (zeros for
   the columns ow >= OW and the channels past K), once per call. With the reduction taken over
   the positions (oh, ow) of an image's OH x Wp grid (the columns past OW add dy = 0 times
   some x), the microkernel's B panel for tap (kh, kw) and channel block cb over rows
   [r0, r1) of an image is xb itself from position (r0 + kh) * Wp + kw (nr floats a position,
   contiguous), and its A panel for channel block mb is dyb from r0 * Wp: no packing. Each
   task owns its tiles of dwp [K rounded to mr, KH*KW*C] (columns tap-major, as the
   channels-last path) and sums them over the images and their chunks of rows in order,
   whatever the thread count; the grid's extra columns cost Wp/OW more multiply-adds (1.14x
   at 14x14, 1.04x at 56x56). The sums run in another order than the other paths (the error
   is a float32 sum's: tests/test_conv_algo.c holds it to the double reference), and a
   non-finite x times those zeros would give NaN where the sum has none, so a dw that is not
   finite is computed again on nn__iconv_dw_task. */

/* xb and dyb of images [n0, n1); tmp: an image of dy channels last [OH*OW][K] */
static void nn__iconv_blk_tr(const nn__iconv_job *J, int n0, int n1, float *tmp) {
    const nn__conv2d *c = J->c;
    const nn__iconv *L = J->L;
    int mr = L->arch->mr, nr = L->arch->nr, MB = (c->K + mr - 1) / mr, Wp = L->Wp, n, cb, mb, oh;
    int avx512 = nn__vm_isa() == 2;
    size_t HWp = (size_t)L->Hp * Wp, OHWp = (size_t)c->OH * Wp;
    int64_t OHW = (int64_t)c->OH * c->OW;
    for (n = n0; n < n1; n++) {
        for (cb = 0; cb < c->C / nr; cb++)
            nn__iconv_nhwc(J->xt + ((size_t)n * (c->C / nr) + cb) * HWp * nr,
                           J->x + ((int64_t)n * c->C + (int64_t)cb * nr) * c->H * c->W, nr, c->H, c->W, c->ph, c->pw);
        if (!J->dyt) continue; /* the register tiles read dy in place */
        nn__iconv_nhwc(tmp, J->dy + (int64_t)n * c->K * OHW, c->K, c->OH, c->OW, 0, 0);
        for (mb = 0; mb < MB; mb++) {
            float *d = J->dyt + ((size_t)n * MB + mb) * OHWp * mr;
            int m = c->K - mb * mr < mr ? c->K - mb * mr : mr;
            for (oh = 0; oh < c->OH; oh++, d += (size_t)Wp * mr) {
                nn__iconv_copy_rows(avx512, d, (size_t)mr, tmp + (size_t)oh * c->OW * c->K + (size_t)mb * mr, (size_t)c->K,
                                    c->OW, m);
                if (m < mr) nn__iconv_copy_rows(avx512, d + m, (size_t)mr, NULL, 0, c->OW, mr - m);
                nn__iconv_copy_rows(avx512, d + (size_t)c->OW * mr, (size_t)mr, NULL, 0, Wp - c->OW, mr);
            }
        }
    }
}

static void nn__iconv_blk_tr_task(void *arg, int t, int n_tasks) {
    const nn__iconv_job *J = (const nn__iconv_job *)arg;
    int N = J->c->N, per = (N + n_tasks - 1) / n_tasks, n1 = per * (t + 1) < N ? per * (t + 1) : N;
    if (per * t < n1) nn__iconv_blk_tr(J, per * t, n1, nn__iconv_align(J->bufs + J->L->per_task * (size_t)t));
}

static void nn__iconv_dwb_task(void *arg, int t, int n_tasks) {
    const nn__iconv_job *J = (const nn__iconv_job *)arg;
    const nn__conv2d *c = J->c;
    const nn__iconv *L = J->L;
    const nn__gemm_arch *arch = L->arch;
    int mr = arch->mr, nr = arch->nr, KHW = c->KH * c->KW, KK = c->C * KHW, CB = c->C / nr, Wp = L->Wp;
    int MB = (c->K + mr - 1) / mr, nt = KHW * CB, ntl = nt * MB, per = (ntl + n_tasks - 1) / n_tasks;
    int u0 = per * t, u1 = per * (t + 1) < ntl ? per * (t + 1) : ntl, rows, r0, n, u, i, j, first = 1;
    size_t HWp = (size_t)L->Hp * Wp, OHWp = (size_t)c->OH * Wp;
    if (u0 >= u1) return; /* tiles u = j * MB + i in [u0, u1): no packing, so any split of them */
    rows = 512 / Wp;      /* a chunk: whole rows, about 512 positions */
    if (rows < 1) rows = 1;
    for (n = 0; n < c->N; n++)
        for (r0 = 0; r0 < c->OH; r0 += rows, first = 0) {
            int kc = (r0 + rows < c->OH ? rows : c->OH - r0) * Wp;
            float beta = first ? 0.0f : 1.0f;
            for (u = u0; u < u1; u++) {
                int tap, cb, kh, kw;
                j = u / MB;
                i = u % MB;
                tap = j / CB;
                cb = j % CB;
                kh = tap / c->KW;
                kw = tap % c->KW;
                arch->ukr(kc, J->dyt + (((size_t)n * MB + i) * OHWp + (size_t)r0 * Wp) * mr,
                          J->xt + (((size_t)n * CB + cb) * HWp + (size_t)(r0 + kh) * Wp + kw) * nr,
                          J->dwp + (size_t)i * mr * KK + (size_t)j * nr, KK, 1.0f, beta);
            }
        }
    /* back to dw's (ci, kh, kw) order */
    for (u = u0; u < u1; u++) {
        int r, q;
        j = u / MB;
        i = u % MB;
        for (r = i * mr; r < i * mr + mr && r < c->K; r++)
            for (q = j * nr; q < j * nr + nr; q++) J->y[(int64_t)r * KK + q % c->C * KHW + q / c->C] = J->dwp[(size_t)r * KK + q];
    }
}

/* ---- dw, register tiles (AVX-512: L->tr == 2 with nr == 32, K a multiple of 8) ----
   The blocked path's xb, but dy read in place: a tile is 8 filters x 32 channels of one tap (kh,
   kw) in 16 accumulators; each position (oh, ow) of a chunk broadcasts the 8 filters' dy [n, k,
   oh, ow] and loads the 32 channels of xb at (oh + kh, ow + kw). No copy of dy, no positions past
   OW (the blocked path's grid: Wp/OW more multiply-adds) and no rows past K (mr = 12 pads 64
   filters to 72). Each chunk (the blocked path's: whole rows, about 512 positions of its grid)
   sums from zero and is added to the tile's total in dwp (the blocked path's layout), the
   chunks in order (images, then rows): the blocked path's sums without its terms dy = 0 times
   x past OW, which add exact zeros, so its bits (a sum that is -0 there can come out +0), the
   same on any thread count. */
static int nn__iconv_dwk_fits(const nn__conv2d *c, const nn__iconv *L) {
    return nn__vm_isa() == 2 && L->tr == 2 && L->arch->nr == 32 && c->K % 8 == 0 && c->OW > 0;
}

#if NN__GEMM_X86
/* tot [8 rows ldt apart][32] (+)= the sums over rows of dy (8 filters OHW apart, rows OW apart)
   times xb (rows xstep apart, 32 floats a position) */
__attribute__((target("avx512f"))) static void nn__iconv_dwk_avx512(const float *dy, size_t OHW, int OW, const float *xr,
                                                                    size_t xstep, int rows, float *tot, size_t ldt,
                                                                    int first) {
    __m512 a00 = _mm512_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
    __m512 a40 = a00, a41 = a00, a50 = a00, a51 = a00, a60 = a00, a61 = a00, a70 = a00, a71 = a00, b0, b1, av;
    int r, ow;
    for (r = 0; r < rows; r++, dy += OW, xr += xstep) {
        const float *d0 = dy, *d1 = dy + OHW, *d2 = d1 + OHW, *d3 = d2 + OHW, *d4 = d3 + OHW, *d5 = d4 + OHW,
                    *d6 = d5 + OHW, *d7 = d6 + OHW;
        for (ow = 0; ow < OW; ow++) {
            b0 = _mm512_loadu_ps(xr + (size_t)ow * 32);
            b1 = _mm512_loadu_ps(xr + (size_t)ow * 32 + 16);
#define NN__DWK_ROW(D, X0, X1)          \
    av = _mm512_set1_ps(D[ow]);          \
    X0 = _mm512_fmadd_ps(av, b0, X0);    \
    X1 = _mm512_fmadd_ps(av, b1, X1);
            NN__DWK_ROW(d0, a00, a01)
            NN__DWK_ROW(d1, a10, a11)
            NN__DWK_ROW(d2, a20, a21)
            NN__DWK_ROW(d3, a30, a31)
            NN__DWK_ROW(d4, a40, a41)
            NN__DWK_ROW(d5, a50, a51)
            NN__DWK_ROW(d6, a60, a61)
            NN__DWK_ROW(d7, a70, a71)
#undef NN__DWK_ROW
        }
    }
#define NN__DWK_STORE(R, X0, X1)                                                                    \
    {                                                                                               \
        float *t = tot + (size_t)(R) * ldt;                                                         \
        _mm512_storeu_ps(t, first ? X0 : _mm512_add_ps(_mm512_loadu_ps(t), X0));                     \
        _mm512_storeu_ps(t + 16, first ? X1 : _mm512_add_ps(_mm512_loadu_ps(t + 16), X1));          \
    }
    NN__DWK_STORE(0, a00, a01)
    NN__DWK_STORE(1, a10, a11)
    NN__DWK_STORE(2, a20, a21)
    NN__DWK_STORE(3, a30, a31)
    NN__DWK_STORE(4, a40, a41)
    NN__DWK_STORE(5, a50, a51)
    NN__DWK_STORE(6, a60, a61)
    NN__DWK_STORE(7, a70, a71)
#undef NN__DWK_STORE
}
#endif

/* dw register tiles: task t's tiles u = (tap * CB + cb) * KB + kb in [u0, u1) */
static void nn__iconv_dwk_task(void *arg, int t, int n_tasks) {
    const nn__iconv_job *J = (const nn__iconv_job *)arg;
    const nn__conv2d *c = J->c;
    const nn__iconv *L = J->L;
    int KHW = c->KH * c->KW, KK = c->C * KHW, CB = c->C / 32, KB = c->K / 8, Wp = L->Wp;
    int ntl = KHW * CB * KB, per = (ntl + n_tasks - 1) / n_tasks;
    int u0 = per * t, u1 = per * (t + 1) < ntl ? per * (t + 1) : ntl, rows, r0, n, u, first = 1;
    size_t HWp = (size_t)L->Hp * Wp, OHW = (size_t)c->OH * c->OW;
    if (u0 >= u1) return;
    rows = 512 / Wp; /* a chunk: the blocked path's (whole rows, about 512 positions of its grid) */
    if (rows < 1) rows = 1;
    for (n = 0; n < c->N; n++)
        for (r0 = 0; r0 < c->OH; r0 += rows, first = 0) {
            int nr0 = r0 + rows < c->OH ? rows : c->OH - r0;
            for (u = u0; u < u1; u++) {
                int j = u / KB, kb = u % KB, tap = j / CB, cb = j % CB, kh = tap / c->KW, kw = tap % c->KW;
#if NN__GEMM_X86
                nn__iconv_dwk_avx512(J->dy + ((size_t)n * c->K + (size_t)kb * 8) * OHW + (size_t)r0 * c->OW, OHW, c->OW,
                                     J->xt + (((size_t)n * CB + cb) * HWp + (size_t)(r0 + kh) * Wp + kw) * 32, (size_t)Wp * 32,
                                     nr0, J->dwp + (size_t)kb * 8 * KK + (size_t)j * 32, (size_t)KK, first);
#else
                (void)kh;
                (void)kw;
                (void)nr0;
                (void)first;
#endif
            }
        }
    /* back to dw's (ci, kh, kw) order */
    for (u = u0; u < u1; u++) {
        int j = u / KB, kb = u % KB, r, q;
        for (r = kb * 8; r < kb * 8 + 8; r++)
            for (q = j * 32; q < j * 32 + 32; q++) J->y[(int64_t)r * KK + q % c->C * KHW + q / c->C] = J->dwp[(size_t)r * KK + q];
    }
}

/* dw: task t's tiles of dw_g [Kg, KK] (or of dw_g^T, nn__iconv_dw_ct), a range of column
   panels (or of row panels when there are fewer column panels than tasks), summed over every
   K block of P in order */
static void nn__iconv_dw_task(void *arg, int t, int n_tasks) {
    const nn__iconv_job *J = (const nn__iconv_job *)arg;
    const nn__conv2d *c = J->c;
    const nn__iconv *L = J->L;
    const nn__gemm_arch *arch = L->arch;
    int mr = arch->mr, nr = arch->nr, Kg = c->K / c->G, KK = c->C / c->G * c->KH * c->KW, ct = nn__iconv_dw_ct(arch, Kg, KK);
    int M = ct ? KK : Kg, Nn = ct ? Kg : KK, mt = (M + mr - 1) / mr, nt = (Nn + nr - 1) / nr;
    int i0 = 0, i1 = M, j0 = 0, j1 = Nn, ir, jr, i, j;
    int64_t P = (int64_t)c->N * c->OH * c->OW, pc;
    float *ab = nn__iconv_align(J->bufs + L->per_task * (size_t)t), *bb, *tmp;
    float *dw = J->y + (int64_t)J->g * Kg * KK;
    nn__iconv_seg seg[NN__GEMM_MAX_KC];
    if (nt >= n_tasks || nt >= mt) {
        int per = (nt + n_tasks - 1) / n_tasks;
        j0 = per * t * nr;
        j1 = per * (t + 1) * nr < Nn ? per * (t + 1) * nr : Nn;
    } else {
        int per = (mt + n_tasks - 1) / n_tasks;
        i0 = per * t * mr;
        i1 = per * (t + 1) * mr < M ? per * (t + 1) * mr : M;
    }
    if (i0 >= i1 || j0 >= j1) return;
    bb = nn__iconv_align(ab + (size_t)nn__iconv_round(M, mr) * L->kc);
    tmp = bb + (size_t)nn__iconv_round(Nn, nr) * L->kc;
    for (pc = 0; pc < P; pc += L->kc) {
        int kc = (int)(P - pc < L->kc ? P - pc : L->kc);
        float beta = pc == 0 ? 0.0f : 1.0f;
        int ns = nn__iconv_segs(c, pc, kc, seg);
        if (ct) {
            nn__iconv_pack_colt(c, J->x, J->g, i0, i1, seg, ns, kc, mr, ab);
            nn__iconv_pack_dy(c, J->dy, J->g, j0, j1, seg, ns, kc, nr, bb);
        } else {
            nn__iconv_pack_dy(c, J->dy, J->g, i0, i1, seg, ns, kc, mr, ab);
            nn__iconv_pack_colt(c, J->x, J->g, j0, j1, seg, ns, kc, nr, bb);
        }
        for (jr = j0; jr < j1; jr += nr) {
            int n = j1 - jr < nr ? j1 - jr : nr;
            for (ir = i0; ir < i1; ir += mr) {
                int m = i1 - ir < mr ? i1 - ir : mr;
                const float *ap = ab + (size_t)(ir - i0) * kc, *bp = bb + (size_t)(jr - j0) * kc;
                if (!ct && m == mr && n == nr) arch->ukr(kc, ap, bp, dw + (int64_t)ir * KK + jr, KK, 1.0f, beta);
                else {
                    arch->ukr(kc, ap, bp, tmp, nr, 1.0f, 0.0f);
                    for (i = 0; i < m; i++)
                        for (j = 0; j < n; j++) {
                            float *cr = ct ? dw + (int64_t)(jr + j) * KK + ir + i : dw + (int64_t)(ir + i) * KK + jr + j;
                            if (beta == 0.0f) *cr = 1.0f * tmp[(size_t)i * nr + j];
                            else *cr = 1.0f * tmp[(size_t)i * nr + j] + beta * *cr;
                        }
                }
            }
        }
    }
}

/* ---- dw, direct (AVX-512): a first layer ----
   A 3x3 stride-1, undilated, ungrouped convolution over at most 3 input channels has dw
   [K, C*9]: a reduction of N*OH*OW products for only 9 taps a filter, which the packed path
   spends packing dy (a copy of all of it) for a tile it barely fills. Here a unit is two
   filters and one input channel: its 18 sums stay in registers as 16-lane vectors while 16
   output pixels of a row at a time are read in place, dy once for the 9 taps and each tap's
   16 inputs (masked loads) once for the 2 filters. Each lane takes its pixels in order
   (images, rows, 16-pixel chunks, every row of the padding too) into sums that start from
   zero per image and are added to the unit's totals image by image; then a lane tree (lane
   i + 8, + 4, + 2, + 1). The padding's inputs are zeros times dy, as im2col's (a NaN or
   infinite dy gives NaN there, as PyTorch); the lanes past OW are masked out of the fused
   multiply-add itself (an infinite x there meets no dy). The result depends on the unit
   alone, so on no thread count; it is not the packed path's order (its error is a float
   sum's: tests/test_conv_algo.c, conv_algo_reference). */
#define NN__DWD_MAXCH 64 /* OW <= 16 * 64 */
static int nn__iconv_dwd_fits(const nn__conv2d *c) {
    return nn__vm_isa() == 2 && c->G == 1 && c->sh == 1 && c->sw == 1 && c->dh == 1 && c->dw == 1 && c->KH == 3 &&
           c->KW == 3 && c->C <= 3 && c->K > 0 && c->OW > 0 && c->OW <= 16 * NN__DWD_MAXCH && c->OH > 0;
}

#if NN__GEMM_X86
/* dw of filters k0 and k1 (k1 == k0 for one filter) over input channel ci */
__attribute__((target("avx512f"))) static void nn__iconv_dwd_avx512(const nn__conv2d *c, float *dw, const float *x,
                                                                    const float *dy, int k0, int k1, int ci) {
    __m512 a00, a01, a02, a03, a04, a05, a06, a07, a08, a10, a11, a12, a13, a14, a15, a16, a17, a18;
    __m512 tot[18], d0, d1, xv;
    __mmask16 mk[NN__DWD_MAXCH * 4]; /* per 16-pixel chunk: its pixels, and per kw the lanes whose input lies in [0, W) */
    float lane[16];
    int nch = (c->OW + 15) / 16, q, kw, i, w, oh;
    int64_t n, OHW = (int64_t)c->OH * c->OW;
    for (q = 0; q < nch; q++) {
        int left = c->OW - q * 16;
        mk[q * 4 + 3] = (__mmask16)(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
        for (kw = 0; kw < 3; kw++) {
            int col = q * 16 - c->pw + kw, lo = col < 0 ? -col : 0, hi = c->W - col;
            if (lo > 16) lo = 16;
            hi = hi < 0 ? 0 : hi > 16 ? 16 : hi;
            mk[q * 4 + kw] = (__mmask16)((hi > lo ? ((1u << hi) - 1u) & ~((1u << lo) - 1u) : 0u) & mk[q * 4 + 3]);
        }
    }
    for (i = 0; i < 18; i++) tot[i] = _mm512_setzero_ps();
    for (n = 0; n < c->N; n++) {
        const float *xc = x + (n * c->C + ci) * (int64_t)c->H * c->W;
        const float *dy0 = dy + (n * c->K + k0) * OHW, *dy1 = dy + (n * c->K + k1) * OHW;
        a00 = a01 = a02 = a03 = a04 = a05 = a06 = a07 = a08 = _mm512_setzero_ps();
        a10 = a11 = a12 = a13 = a14 = a15 = a16 = a17 = a18 = a00;
        for (oh = 0; oh < c->OH; oh++) {
            int ih0 = oh - c->ph;
            const float *xr0 = xc + (int64_t)ih0 * c->W, *xr1 = xr0 + c->W, *xr2 = xr1 + c->W;
            __mmask16 r0 = (__mmask16)(ih0 >= 0 && ih0 < c->H ? 0xFFFFu : 0u);
            __mmask16 r1 = (__mmask16)(ih0 + 1 >= 0 && ih0 + 1 < c->H ? 0xFFFFu : 0u);
            __mmask16 r2 = (__mmask16)(ih0 + 2 >= 0 && ih0 + 2 < c->H ? 0xFFFFu : 0u);
            for (q = 0; q < nch; q++) {
                int col = q * 16 - c->pw;
                __mmask16 m0 = mk[q * 4], m1 = mk[q * 4 + 1], m2 = mk[q * 4 + 2], mo = mk[q * 4 + 3];
                d0 = _mm512_maskz_loadu_ps(mo, dy0 + (int64_t)oh * c->OW + q * 16);
                d1 = _mm512_maskz_loadu_ps(mo, dy1 + (int64_t)oh * c->OW + q * 16);
#define NN__DWD_TAP(XR, M, KW, A0, A1)                  \
    xv = _mm512_maskz_loadu_ps(M, XR + col + (KW));     \
    A0 = _mm512_mask3_fmadd_ps(xv, d0, A0, mo);         \
    A1 = _mm512_mask3_fmadd_ps(xv, d1, A1, mo);
                NN__DWD_TAP(xr0, m0 & r0, 0, a00, a10)
                NN__DWD_TAP(xr0, m1 & r0, 1, a01, a11)
                NN__DWD_TAP(xr0, m2 & r0, 2, a02, a12)
                NN__DWD_TAP(xr1, m0 & r1, 0, a03, a13)
                NN__DWD_TAP(xr1, m1 & r1, 1, a04, a14)
                NN__DWD_TAP(xr1, m2 & r1, 2, a05, a15)
                NN__DWD_TAP(xr2, m0 & r2, 0, a06, a16)
                NN__DWD_TAP(xr2, m1 & r2, 1, a07, a17)
                NN__DWD_TAP(xr2, m2 & r2, 2, a08, a18)
#undef NN__DWD_TAP
            }
        }
        tot[0] = _mm512_add_ps(tot[0], a00);
        tot[1] = _mm512_add_ps(tot[1], a01);
        tot[2] = _mm512_add_ps(tot[2], a02);
        tot[3] = _mm512_add_ps(tot[3], a03);
        tot[4] = _mm512_add_ps(tot[4], a04);
        tot[5] = _mm512_add_ps(tot[5], a05);
        tot[6] = _mm512_add_ps(tot[6], a06);
        tot[7] = _mm512_add_ps(tot[7], a07);
        tot[8] = _mm512_add_ps(tot[8], a08);
        tot[9] = _mm512_add_ps(tot[9], a10);
        tot[10] = _mm512_add_ps(tot[10], a11);
        tot[11] = _mm512_add_ps(tot[11], a12);
        tot[12] = _mm512_add_ps(tot[12], a13);
        tot[13] = _mm512_add_ps(tot[13], a14);
        tot[14] = _mm512_add_ps(tot[14], a15);
        tot[15] = _mm512_add_ps(tot[15], a16);
        tot[16] = _mm512_add_ps(tot[16], a17);
        tot[17] = _mm512_add_ps(tot[17], a18);
    }
    for (i = 0; i < 18; i++) {
        if (i >= 9 && k1 == k0) break;
        _mm512_storeu_ps(lane, tot[i]);
        for (w = 8; w >= 1; w /= 2)
            for (q = 0; q < w; q++) lane[q] = lane[q] + lane[q + w];
        dw[((int64_t)(i < 9 ? k0 : k1) * c->C + ci) * 9 + i % 9] = lane[0];
    }
}
#endif

/* dw direct: task t's units (filter pair, input channel), pair-major */
static void nn__iconv_dwd_task(void *arg, int t, int n_tasks) {
    const nn__iconv_job *J = (const nn__iconv_job *)arg;
    const nn__conv2d *c = J->c;
    int units = (c->K + 1) / 2 * c->C, per = (units + n_tasks - 1) / n_tasks, u, u1 = per * (t + 1) < units ? per * (t + 1) : units;
    for (u = per * t; u < u1; u++) {
        int k0 = u / c->C * 2, k1 = k0 + 1 < c->K ? k0 + 1 : k0;
#if NN__GEMM_X86
        nn__iconv_dwd_avx512(c, J->y, J->x, J->dy, k0, k1, u % c->C);
#else
        (void)k1;
#endif
    }
}

/* dw [K, C/G, KH, KW] = conv2d's gradient with respect to its weight, scratch from nn__iconv_scratch(c, 2, T) */
static void nn__iconv_backward_weight(nn__threadpool *pool, const nn__conv2d *c, int T, float *dw, const float *x,
                                      const float *dy, float *scratch) {
    nn__iconv L;
    nn__iconv_job J;
    int Kg = c->K / c->G, KK = c->C / c->G * c->KH * c->KW;
    int64_t P = (int64_t)c->N * c->OH * c->OW;
    nn__iconv_layout(c, 2, T, &L);
    memset(&J, 0, sizeof J);
    J.c = c;
    J.L = &L;
    J.x = x;
    J.dy = dy;
    J.y = dw;
    J.bufs = scratch;
    J.tasks = nn__iconv_tasks(pool, &L, (double)P * Kg * KK,
                              (int64_t)((Kg + L.arch->mr - 1) / L.arch->mr) * ((KK + L.arch->nr - 1) / L.arch->nr));
    if (P == 0) {
        memset(dw, 0, (size_t)c->K * KK * sizeof(float));
        return;
    }
    if (nn__iconv_dwd_fits(c)) {
        nn__threadpool_run(pool, nn__iconv_dwd_task, &J,
                           nn__iconv_tasks(pool, &L, (double)P * Kg * KK, (int64_t)(c->K + 1) / 2 * c->C));
        return;
    }
    if (L.tr == 2) {
        int64_t i, nw = (int64_t)c->K * KK;
        int bad = 0;
        J.xt = nn__iconv_align(scratch + L.per_task * (size_t)L.T);
        J.dyt = J.xt + L.xt;
        J.dwp = J.dyt + L.dyt;
        /* the last image's last panels read up to KW - 1 positions past xb (times dy = 0) */
        memset(J.xt + (size_t)c->N * L.Hp * L.Wp * c->C, 0, (size_t)c->KW * L.arch->nr * sizeof(float));
        if (nn__iconv_dwk_fits(c, &L)) {
            J.dyt = NULL; /* xb only: dy read in place */
            nn__threadpool_run(pool, nn__iconv_blk_tr_task, &J, nn__iconv_tasks(pool, &L, (double)P * Kg * KK, c->N));
            nn__threadpool_run(pool, nn__iconv_dwk_task, &J,
                               nn__iconv_tasks(pool, &L, (double)P * Kg * KK, (int64_t)c->K / 8 * (c->C / 32) * c->KH * c->KW));
            J.dyt = J.xt + L.xt;
        } else {
            nn__threadpool_run(pool, nn__iconv_blk_tr_task, &J, nn__iconv_tasks(pool, &L, (double)P * Kg * KK, c->N));
            nn__threadpool_run(pool, nn__iconv_dwb_task, &J, J.tasks);
        }
        for (i = 0; i < nw; i++) bad |= !(dw[i] - dw[i] == 0.0f); /* NaN or infinite */
        if (!bad) return;
    }
    if (L.tr == 1) {
        J.xt = scratch + L.per_task * (size_t)L.T;
        J.dyt = J.xt + L.xt;
        J.dwp = J.dyt + L.dyt;
        nn__threadpool_run(pool, nn__iconv_tr_task, &J, nn__iconv_tasks(pool, &L, (double)P * Kg * KK, c->N));
    }
    for (J.g = 0; J.g < c->G; J.g++) nn__threadpool_run(pool, L.tr == 1 ? nn__iconv_dwt_task : nn__iconv_dw_task, &J, J.tasks);
}
