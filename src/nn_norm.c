/* Normalisation layers on the CPU backend: batch, layer, group and instance norm are one
   family. x is viewed as [A, C, S] (A leading elements, C channels, S trailing elements per
   channel) and its statistics are taken either per channel over A and S (batch norm) or per
   (a, group of C/G channels) over the group's channels and S (group norm; layer norm is
   [rows, features, 1] with one group, instance norm has G = C). The affine weight and bias
   are per channel. Every sum runs in one fixed order. kernels/norm.cl has the OpenCL twins.

   Node attributes of every norm op: i[0..4] = A, C, S, G, per_channel; i[5] has gamma,
   i[6] has beta, i[7] the statistics are constants (eval batch norm); f[0] eps,
   f[1] momentum (the running-statistics update). Statistics tensors are [2, R]: the mean
   of each of the R groups, then their biased variance. */

typedef struct nn__norm {
    int64_t A, C, S, G;
    int per_channel;
} nn__norm;

static void nn__norm_geom(nn__norm *q, const int *attr) {
    q->A = attr[0];
    q->C = attr[1];
    q->S = attr[2];
    q->G = attr[3];
    q->per_channel = attr[4];
}

/* R: the number of statistics groups; n: the elements in each */
static int64_t nn__norm_groups(const nn__norm *q) { return q->per_channel ? q->C : q->A * q->G; }
static int64_t nn__norm_count(const nn__norm *q) { return q->per_channel ? q->A * q->S : q->C / q->G * q->S; }

/* The elements of statistics group r: nb blocks, bs floats apart from off, each block nc
   whole channels (c0, c0+1, ...) of S contiguous floats. */
typedef struct nn__norm_span { int64_t off, nb, bs, c0, nc; } nn__norm_span;

static nn__norm_span nn__norm_span_of(const nn__norm *q, int64_t r) {
    nn__norm_span sp;
    if (q->per_channel) { /* channel r of each of the A leading elements */
        sp.off = r * q->S;
        sp.nb = q->A;
        sp.bs = q->C * q->S;
        sp.c0 = r;
        sp.nc = 1;
    } else { /* r = a * G + g: channels g*Cg .. g*Cg + Cg-1 of element a, contiguous */
        sp.nc = q->C / q->G;
        sp.off = r * sp.nc * q->S;
        sp.nb = 1;
        sp.bs = 0;
        sp.c0 = (r % q->G) * sp.nc;
    }
    return sp;
}

/* The statistics group of channel c of leading element a. */
static int64_t nn__norm_group_of(const nn__norm *q, int64_t a, int64_t c) {
    return q->per_channel ? c : a * q->G + c / (q->C / q->G);
}

/* stats [2, R] = the mean and biased variance of each group of x (two passes, in double) */
static void nn__norm_stats(const nn__norm *q, float *stats, const float *x) {
    int64_t R = nn__norm_groups(q), n = nn__norm_count(q), r, b, ci, s;
    for (r = 0; r < R; r++) {
        nn__norm_span sp = nn__norm_span_of(q, r);
        double sum = 0.0, mean, var = 0.0;
        for (b = 0; b < sp.nb; b++)
            for (ci = 0; ci < sp.nc; ci++) {
                const float *p = x + sp.off + b * sp.bs + ci * q->S;
                for (s = 0; s < q->S; s++) sum += p[s];
            }
        mean = sum / (double)n;
        for (b = 0; b < sp.nb; b++)
            for (ci = 0; ci < sp.nc; ci++) {
                const float *p = x + sp.off + b * sp.bs + ci * q->S;
                for (s = 0; s < q->S; s++) var += ((double)p[s] - mean) * ((double)p[s] - mean);
            }
        stats[r] = (float)mean;
        stats[R + r] = (float)(var / (double)n);
    }
}

static float nn__norm_rstd(const float *stats, int64_t R, int64_t r, float eps) {
    return (float)(1.0 / sqrt((double)stats[R + r] + (double)eps));
}

/* y = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c]; gamma, beta may be NULL */
static void nn__norm_forward(const nn__norm *q, float *y, const float *x, const float *stats, const float *gamma,
                             const float *beta, float eps) {
    int64_t R = nn__norm_groups(q), a, c, s;
    for (a = 0; a < q->A; a++)
        for (c = 0; c < q->C; c++) {
            int64_t r = nn__norm_group_of(q, a, c), o = (a * q->C + c) * q->S;
            float mean = stats[r], scale = nn__norm_rstd(stats, R, r, eps) * (gamma ? gamma[c] : 1.0f);
            float shift = beta ? beta[c] : 0.0f;
            for (s = 0; s < q->S; s++) y[o + s] = (x[o + s] - mean) * scale + shift;
        }
}

/* dx of the normalisation. With statistics of x itself, per group (n elements, d = dy*gamma,
   xhat the normalised x): dx = rstd * (d - mean(d) - xhat * mean(d * xhat)). With constant
   statistics (eval batch norm) the mean and variance do not depend on x: dx = rstd * d. */
static void nn__norm_backward_data(const nn__norm *q, float *dx, const float *x, const float *stats, const float *dy,
                                   const float *gamma, int const_stats, float eps) {
    int64_t R = nn__norm_groups(q), n = nn__norm_count(q), r, b, ci, s;
    for (r = 0; r < R; r++) {
        nn__norm_span sp = nn__norm_span_of(q, r);
        float mean = stats[r], rs = nn__norm_rstd(stats, R, r, eps);
        double s1 = 0.0, s2 = 0.0;
        float m1, m2;
        for (b = 0; b < sp.nb && !const_stats; b++)
            for (ci = 0; ci < sp.nc; ci++) {
                int64_t o = sp.off + b * sp.bs + ci * q->S;
                float ga = gamma ? gamma[sp.c0 + ci] : 1.0f;
                for (s = 0; s < q->S; s++) {
                    double d = (double)dy[o + s] * ga;
                    s1 += d;
                    s2 += d * ((double)x[o + s] - mean) * rs;
                }
            }
        m1 = (float)(s1 / (double)n);
        m2 = (float)(s2 / (double)n);
        for (b = 0; b < sp.nb; b++)
            for (ci = 0; ci < sp.nc; ci++) {
                int64_t o = sp.off + b * sp.bs + ci * q->S;
                float ga = gamma ? gamma[sp.c0 + ci] : 1.0f;
                for (s = 0; s < q->S; s++) {
                    float d = dy[o + s] * ga, xh = (x[o + s] - mean) * rs;
                    dx[o + s] = rs * (d - m1 - xh * m2);
                }
            }
    }
}

/* out [C] = sum over A and S of dy * xhat (the weight's gradient), or of dy when x is NULL
   (the bias's gradient) */
static void nn__norm_backward_affine(const nn__norm *q, float *out, const float *x, const float *stats, const float *dy,
                                     float eps) {
    int64_t R = nn__norm_groups(q), a, c, s;
    for (c = 0; c < q->C; c++) {
        double acc = 0.0;
        for (a = 0; a < q->A; a++) {
            int64_t r = nn__norm_group_of(q, a, c), o = (a * q->C + c) * q->S;
            float mean = x ? stats[r] : 0.0f, rs = x ? nn__norm_rstd(stats, R, r, eps) : 1.0f;
            for (s = 0; s < q->S; s++) acc += x ? (double)dy[o + s] * ((x[o + s] - mean) * rs) : (double)dy[o + s];
        }
        out[c] = (float)acc;
    }
}

/* PyTorch's running statistics: running = (1 - m) * running + m * batch, the variance
   unbiased (times n / (n - 1), n values per channel). stats [2, C] from nn__norm_stats. */
static void nn__batch_norm_running(float *rmean, float *rvar, const float *stats, int64_t C, int64_t n, float m) {
    int64_t c;
    float unbias = (float)((double)n / (double)(n - 1));
    for (c = 0; c < C; c++) {
        rmean[c] = (1.0f - m) * rmean[c] + m * stats[c];
        rvar[c] = (1.0f - m) * rvar[c] + m * stats[C + c] * unbias;
    }
}
