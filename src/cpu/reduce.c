/* The reduce family's CPU loops (src/ops/reduce.c's bodies; kernels/reduce.cl has the
   OpenCL twins). x is viewed as [O, R, I] and reduced over R: output element (o, i) walks
   x[o, r, i] for r = 0 .. R-1 at stride I. Sums accumulate in double, in a fixed order:
   each output element is computed by one task, so the bits are the same for any thread
   count. A long row (I = 1) is summed as blocks of NN__RED_BLOCK elements, each block's
   double sum added in block order, whether the blocks run on one thread or several.
   The sums are vectorised (AVX-512 or AVX2, chosen at run time, scalar otherwise). */

typedef struct nn__fill_job {
    float *y;
    float v;
} nn__fill_job;

static void nn__fill_range(void *arg, int64_t i0, int64_t i1) {
    const nn__fill_job *j = (const nn__fill_job *)arg;
    float *y = j->y, v = j->v;
    int64_t i;
    for (i = i0; i < i1; i++) y[i] = v;
}

/* y [n] = x[0] * scale (a mean's gradient): over the pool's threads when large */
static void nn__expand_scalar_forward(nn__threadpool *pool, float *y, const float *x, int64_t n, float scale) {
    nn__fill_job j;
    j.y = y;
    j.v = x[0] * scale;
    nn__par_for(pool, n, n / 2, nn__fill_range, &j);
}

/* first index of the row maximum, a NaN counting as the maximum (torch.argmax) */
static int64_t nn__argmax_row(const float *xr, int64_t C) {
    int64_t c, best = 0;
    for (c = 1; c < C; c++)
        if (xr[c] > xr[best] || (xr[c] != xr[c] && xr[best] == xr[best])) best = c;
    return best;
}

static void nn__argmax_forward(int32_t *y, const float *x, int64_t B, int64_t C) {
    int64_t b;
    for (b = 0; b < B; b++) y[b] = (int32_t)nn__argmax_row(x + b * C, C);
}

static void nn__correct_forward(float *y, const float *x, const int32_t *label, int64_t B, int64_t C) {
    int64_t b;
    for (b = 0; b < B; b++) y[b] = nn__argmax_row(x + b * C, C) == label[b] ? 1.0f : 0.0f;
}


#define NN__RED_BLOCK 16384 /* elements of a row per block of its sum */
#define NN__RED_CW 512      /* columns (i) per task when reducing an outer axis */

#if defined(NN__VM_X86)

/* 8 floats to doubles; the zero-masked form, since g++ warns about the plain one's
   deliberately undefined source register (-Wmaybe-uninitialized) */
#define nn__cvt512(v) _mm512_maskz_cvtps_pd((__mmask8)0xFF, (v))

/* the double sum of x[0 .. n-1]: four accumulators of 8 lanes, then a fixed tree */
__attribute__((target("avx512f"))) static double nn__sum_run_avx512(const float *x, int64_t n) {
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd(), a2 = _mm512_setzero_pd(), a3 = _mm512_setzero_pd();
    double t[8], s = 0.0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_add_pd(a0, nn__cvt512(_mm256_loadu_ps(x + i)));
        a1 = _mm512_add_pd(a1, nn__cvt512(_mm256_loadu_ps(x + i + 8)));
        a2 = _mm512_add_pd(a2, nn__cvt512(_mm256_loadu_ps(x + i + 16)));
        a3 = _mm512_add_pd(a3, nn__cvt512(_mm256_loadu_ps(x + i + 24)));
    }
    for (; i < n; i++) s += x[i];
    _mm512_storeu_pd(t, _mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
    return (((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]))) + s;
}

/* acc[j] += x[j] for j < w */
__attribute__((target("avx512f"))) static void nn__acc_run_avx512(double *acc, const float *x, int64_t w) {
    int64_t j = 0;
    for (; j + 8 <= w; j += 8)
        _mm512_storeu_pd(acc + j, _mm512_add_pd(_mm512_loadu_pd(acc + j), nn__cvt512(_mm256_loadu_ps(x + j))));
    for (; j < w; j++) acc[j] += x[j];
}

__attribute__((target("avx2"))) static double nn__sum_run_avx2(const float *x, int64_t n) {
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd(), a2 = _mm256_setzero_pd(), a3 = _mm256_setzero_pd();
    double t[4], s = 0.0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
        a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)));
        a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)));
    }
    for (; i < n; i++) s += x[i];
    _mm256_storeu_pd(t, _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    return ((t[0] + t[1]) + (t[2] + t[3])) + s;
}

__attribute__((target("avx2"))) static void nn__acc_run_avx2(double *acc, const float *x, int64_t w) {
    int64_t j = 0;
    for (; j + 4 <= w; j += 4)
        _mm256_storeu_pd(acc + j, _mm256_add_pd(_mm256_loadu_pd(acc + j), _mm256_cvtps_pd(_mm_loadu_ps(x + j))));
    for (; j < w; j++) acc[j] += x[j];
}
#endif

/* four interleaved lanes in double (src/cpu/norm.c's nn__sum4) */
static double nn__sum_run_scalar(const float *x, int64_t n) { return nn__sum4(x, n, 0, 0.0); }

static double nn__sum_run(const float *x, int64_t n) {
#if defined(NN__VM_X86)
    if (nn__vm_isa() == 2) return nn__sum_run_avx512(x, n);
    if (nn__vm_isa() >= 1) return nn__sum_run_avx2(x, n);
#endif
    return nn__sum_run_scalar(x, n);
}

static void nn__acc_run(double *acc, const float *x, int64_t w) {
    int64_t j;
#if defined(NN__VM_X86)
    if (nn__vm_isa() == 2) {
        nn__acc_run_avx512(acc, x, w);
        return;
    }
    if (nn__vm_isa() >= 1) {
        nn__acc_run_avx2(acc, x, w);
        return;
    }
#endif
    for (j = 0; j < w; j++) acc[j] += x[j];
}

/* a contiguous row's sum: its blocks' sums in block order */
static double nn__sum_row(const float *x, int64_t n) {
    double s = 0.0;
    int64_t b;
    for (b = 0; b < n; b += NN__RED_BLOCK) s += nn__sum_run(x + b, n - b < NN__RED_BLOCK ? n - b : NN__RED_BLOCK);
    return s;
}

/* The comparisons of max and min: a NaN wins (and stays), ties keep the first. */
static int nn__red_better(int want_max, float b, float a) {
    if (isnan(a)) return 0;
    if (isnan(b)) return 1;
    return want_max ? b > a : b < a;
}

typedef struct nn__red_job {
    int op;
    const nn__reduce_attr *ra;
    float *y;           /* forward: the output (int32 for ARG*); backward: dx */
    const float *x, *fy, *gy;
    double *part;       /* per-block partial sums of long rows (NULL: none) */
    int64_t units, nb;  /* units of work; blocks per row (part) */
} nn__red_job;

/* Output element k = (o, i) of a forward reduction, in double where it adds. */
static void nn__red_elem(const nn__red_job *j, int64_t k) {
    const nn__reduce_attr *ra = j->ra;
    int64_t I = ra->I, R = ra->R, o = k / I, i = k % I, r;
    const float *x = j->x + o * R * I + i;
    int op = j->op;
    float p = ra->p;
    switch (op) {
    case NN__OP_RED_SUM: {
        double s = 0.0;
        for (r = 0; r < R; r++) s += x[r * I];
        j->y[k] = (float)(s * ra->scale);
        break;
    }
    case NN__OP_RED_PROD: {
        double s = 1.0;
        for (r = 0; r < R; r++) s *= x[r * I];
        j->y[k] = (float)s;
        break;
    }
    case NN__OP_RED_AMAX: case NN__OP_RED_AMIN: {
        float m = op == NN__OP_RED_AMAX ? -INFINITY : INFINITY;
        for (r = 0; r < R; r++) if (nn__red_better(op == NN__OP_RED_AMAX, x[r * I], m)) m = x[r * I];
        j->y[k] = m;
        break;
    }
    case NN__OP_RED_MAX: case NN__OP_RED_MIN: case NN__OP_ARGMAX_DIM: case NN__OP_ARGMIN_DIM: {
        int want_max = op == NN__OP_RED_MAX || op == NN__OP_ARGMAX_DIM;
        int64_t best = 0;
        for (r = 1; r < R; r++) if (nn__red_better(want_max, x[r * I], x[best * I])) best = r;
        if (op == NN__OP_RED_MAX || op == NN__OP_RED_MIN) j->y[k] = x[best * I];
        else ((int32_t *)j->y)[k] = (int32_t)best;
        break;
    }
    case NN__OP_RED_VAR: case NN__OP_RED_STD: {
        double s = 0.0, m2 = 0.0, mean, d = (double)R - ra->correction, v;
        for (r = 0; r < R; r++) s += x[r * I];
        mean = s / (double)R;
        for (r = 0; r < R; r++) m2 += (x[r * I] - mean) * (x[r * I] - mean);
        v = m2 / (d > 0.0 ? d : 0.0);
        j->y[k] = (float)(op == NN__OP_RED_STD ? sqrt(v) : v);
        break;
    }
    case NN__OP_RED_LSE: {
        float m = -INFINITY;
        double s = 0.0;
        for (r = 0; r < R; r++) if (nn__red_better(1, x[r * I], m)) m = x[r * I];
        if (isinf(m)) m = 0.0f; /* PyTorch's: an infinite max is not subtracted */
        if (I == 1) { /* a contiguous row: float exp(x - m) by the vector exp, summed in double */
            float e[256];
            for (r = 0; r < R; r += 256) {
                int64_t len = R - r < 256 ? R - r : 256;
                (void)nn__vexp_map(NN__VE_EXP_SHIFT, e, x + r, NULL, NULL, m, len);
                s += nn__sum_run(e, len);
            }
        } else {
            for (r = 0; r < R; r++) s += exp((double)x[r * I] - m);
        }
        j->y[k] = (float)(log(s) + m);
        break;
    }
    case NN__OP_RED_NORM: {
        double s = 0.0;
        if (isinf(p)) {
            float m = 0.0f;
            for (r = 0; r < R; r++) if (nn__red_better(1, fabsf(x[r * I]), m)) m = fabsf(x[r * I]);
            j->y[k] = m;
            break;
        }
        for (r = 0; r < R; r++) {
            double v = fabs((double)x[r * I]);
            s += p == 1.0f ? v : p == 2.0f ? v * v : p == 0.0f ? (v != 0.0 ? 1.0 : 0.0) : pow(v, (double)p);
        }
        j->y[k] = (float)(p == 1.0f || p == 0.0f ? s : p == 2.0f ? sqrt(s) : pow(s, 1.0 / p));
        break;
    }
    default: break;
    }
}

/* Forward tasks: units are output rows (I = 1), column chunks of an output row (SUM with
   I > 1), row blocks (SUM of few long rows: partials into part) or output elements. */
static void nn__red_task(void *arg, int t, int n_tasks) {
    const nn__red_job *j = (const nn__red_job *)arg;
    const nn__reduce_attr *ra = j->ra;
    int64_t u0 = j->units * t / n_tasks, u1 = j->units * (t + 1) / n_tasks, u;
    int64_t R = ra->R, I = ra->I;
    if (j->op == NN__OP_RED_SUM && I == 1 && j->part) {
        for (u = u0; u < u1; u++) {
            int64_t o = u / j->nb, b = (u % j->nb) * NN__RED_BLOCK;
            j->part[u] = nn__sum_run(j->x + o * R + b, R - b < NN__RED_BLOCK ? R - b : NN__RED_BLOCK);
        }
    } else if (j->op == NN__OP_RED_SUM && I == 1) {
        for (u = u0; u < u1; u++) j->y[u] = (float)(nn__sum_row(j->x + u * R, R) * ra->scale);
    } else if (j->op == NN__OP_RED_SUM) {
        int64_t nc = (I + NN__RED_CW - 1) / NN__RED_CW;
        double acc[NN__RED_CW];
        for (u = u0; u < u1; u++) {
            int64_t o = u / nc, c0 = (u % nc) * NN__RED_CW, w = I - c0 < NN__RED_CW ? I - c0 : NN__RED_CW, r, c;
            const float *x = j->x + o * R * I + c0;
            for (c = 0; c < w; c++) acc[c] = 0.0;
            for (r = 0; r < R; r++) nn__acc_run(acc, x + r * I, w);
            for (c = 0; c < w; c++) j->y[o * I + c0 + c] = (float)(acc[c] * ra->scale);
        }
    } else {
        for (u = u0; u < u1; u++) nn__red_elem(j, u);
    }
}

/* Tasks for units of work: several per thread, so a thread the OS holds back leaves its
   share to the others (which task computes an output does not change its bits). */
static int nn__red_tasks(nn__threadpool *pool, int64_t work, int64_t units) {
    int64_t t = work >= NN__PAR_MIN && nn__threadpool_size(pool) > 1 ? 8 * (int64_t)nn__threadpool_size(pool) : 1;
    return (int)(t < units ? t : units);
}

/* y [O, I] (int32 for ARGMAX_DIM / ARGMIN_DIM) = the reduction op of x [O, R, I] over R. */
static void nn__reduce_forward(nn__threadpool *pool, int op, const nn__reduce_attr *ra, float *y, const float *x) {
    nn__red_job j;
    int64_t O = ra->O, R = ra->R, I = ra->I, work = O * R * I;
    int n_tasks;
#if defined(NN__VM_X86)
    (void)nn__vm_isa(); /* logsumexp's vector exp: the CPUID answer cached before threads start */
#endif
    memset(&j, 0, sizeof j);
    j.op = op;
    j.ra = ra;
    j.y = y;
    j.x = x;
    if (op == NN__OP_RED_SUM && I == 1) {
        j.nb = (R + NN__RED_BLOCK - 1) / NN__RED_BLOCK;
        n_tasks = nn__red_tasks(pool, work, O);
        if (j.nb > 1 && O < 2 * (int64_t)nn__threadpool_size(pool) && work >= NN__PAR_MIN &&
            nn__threadpool_size(pool) > 1)
            j.part = (double *)nn__threadpool_workspace(pool, (size_t)(O * j.nb) * sizeof(double));
        if (j.part) { /* few long rows: their blocks in parallel, then each row's in order */
            int64_t o, b;
            j.units = O * j.nb;
            nn__threadpool_run(pool, nn__red_task, &j, nn__red_tasks(pool, work, j.units));
            for (o = 0; o < O; o++) {
                double s = 0.0;
                for (b = 0; b < j.nb; b++) s += j.part[o * j.nb + b];
                y[o] = (float)(s * ra->scale);
            }
            return;
        }
        j.units = O;
    } else if (op == NN__OP_RED_SUM) {
        j.units = O * ((I + NN__RED_CW - 1) / NN__RED_CW);
        n_tasks = nn__red_tasks(pool, work, j.units);
    } else {
        j.units = O * I;
        n_tasks = nn__red_tasks(pool, work, j.units);
    }
    nn__threadpool_run(pool, nn__red_task, &j, n_tasks);
}

/* ---- gradients: dx [O, R, I] from gy [O, I], x and the forward's output fy ---- */

static float nn__sign(float v) { return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : 0.0f; }

/* The order-p norm's derivative d|x|_p/dx at one element, times g; 0 where the norm or
   (for p < 1) the element is 0, as PyTorch's. */
static float nn__norm_grad(float g, float v, float y, float p) {
    if (y == 0.0f || p == 0.0f) return 0.0f;
    if (p == 1.0f) return g * nn__sign(v);
    if (p == 2.0f) return g * v / y;
    if (v == 0.0f) return 0.0f;
    return (float)((double)g * nn__sign(v) * pow(fabs((double)v), (double)p - 1.0) / pow((double)y, (double)p - 1.0));
}

static void nn__red_grad_elem(const nn__red_job *j, int64_t k) {
    const nn__reduce_attr *ra = j->ra;
    int64_t I = ra->I, R = ra->R, o = k / I, i = k % I, r;
    const float *x = j->x + o * R * I + i;
    float *dx = j->y + o * R * I + i;
    float g = j->gy[k], yv = j->fy ? j->fy[k] : 0.0f, p = ra->p;
    switch (ra->fwd) {
    case NN__OP_RED_SUM: {
        float v = g * ra->scale;
        for (r = 0; r < R; r++) dx[r * I] = v;
        break;
    }
    case NN__OP_RED_LSE:
        if (I == 1) { /* a contiguous row: the vector exp, then the product */
            (void)nn__vexp_map(NN__VE_EXP_SHIFT, dx, x, NULL, NULL, yv, R);
            for (r = 0; r < R; r++) dx[r] = g * dx[r];
        } else {
            for (r = 0; r < R; r++) dx[r * I] = g * expf(x[r * I] - yv);
        }
        break;
    case NN__OP_RED_NORM:
        if (isinf(p)) { /* as amax of |x|: split among the ties, with x's sign */
            int64_t cnt = 0;
            for (r = 0; r < R; r++) cnt += fabsf(x[r * I]) == yv;
            for (r = 0; r < R; r++)
                dx[r * I] = fabsf(x[r * I]) == yv ? g * nn__sign(x[r * I]) / (float)cnt : 0.0f;
        } else {
            for (r = 0; r < R; r++) dx[r * I] = nn__norm_grad(g, x[r * I], yv, p);
        }
        break;
    case NN__OP_RED_AMAX: case NN__OP_RED_AMIN: {
        int64_t cnt = 0;
        for (r = 0; r < R; r++) cnt += x[r * I] == yv;
        for (r = 0; r < R; r++) dx[r * I] = x[r * I] == yv ? g / (float)cnt : 0.0f;
        break;
    }
    case NN__OP_RED_MAX: case NN__OP_RED_MIN: {
        int64_t best = 0;
        for (r = 1; r < R; r++) if (nn__red_better(ra->fwd == NN__OP_RED_MAX, x[r * I], x[best * I])) best = r;
        for (r = 0; r < R; r++) dx[r * I] = r == best ? g : 0.0f;
        break;
    }
    case NN__OP_RED_VAR: case NN__OP_RED_STD: {
        double s = 0.0, mean, d = (double)R - ra->correction, c;
        for (r = 0; r < R; r++) s += x[r * I];
        mean = s / (double)R;
        d = d > 0.0 ? d : 0.0;
        if (ra->fwd == NN__OP_RED_VAR) c = 2.0 * g / d;
        else c = yv == 0.0f ? 0.0 : g / (d * yv); /* PyTorch's: no gradient where std is 0 */
        for (r = 0; r < R; r++) dx[r * I] = (float)(c * (x[r * I] - mean));
        break;
    }
    case NN__OP_RED_PROD: {
        int64_t zeros = 0, zr = 0;
        double others = 1.0;
        for (r = 0; r < R; r++) {
            if (x[r * I] == 0.0f) {
                zeros++;
                zr = r;
            } else {
                others *= x[r * I];
            }
        }
        for (r = 0; r < R; r++)
            dx[r * I] = zeros == 0 ? (float)(g * (others / x[r * I])) : zeros == 1 && r == zr ? (float)(g * others) : 0.0f;
        break;
    }
    default: break;
    }
}

static void nn__red_grad_task(void *arg, int t, int n_tasks) {
    const nn__red_job *j = (const nn__red_job *)arg;
    int64_t u0 = j->units * t / n_tasks, u1 = j->units * (t + 1) / n_tasks, u, i;
    if (j->ra->fwd == NN__OP_RED_SUM) { /* a broadcast: unit u is row (o, r) of dx */
        int64_t I = j->ra->I, R = j->ra->R;
        for (u = u0; u < u1; u++) {
            const float *g = j->gy + (u / R) * I;
            float *dx = j->y + u * I, s = j->ra->scale;
            for (i = 0; i < I; i++) dx[i] = g[i] * s;
        }
        return;
    }
    for (u = u0; u < u1; u++) nn__red_grad_elem(j, u);
}

static void nn__reduce_backward(nn__threadpool *pool, const nn__reduce_attr *ra, float *dx, const float *gy,
                                const float *x, const float *fy) {
    nn__red_job j;
    int64_t work = (int64_t)ra->O * ra->R * ra->I;
#if defined(NN__VM_X86)
    (void)nn__vm_isa();
#endif
    memset(&j, 0, sizeof j);
    j.op = NN__OP_REDUCE_GRAD;
    j.ra = ra;
    j.y = dx;
    j.x = x;
    j.fy = fy;
    j.gy = gy;
    j.units = ra->fwd == NN__OP_RED_SUM ? (int64_t)ra->O * ra->R : (int64_t)ra->O * ra->I;
    nn__threadpool_run(pool, nn__red_grad_task, &j, nn__red_tasks(pool, work, j.units));
}

/* y [O, R, I] = the running sum of x over R (from the end when reverse), in double. */
static void nn__cumsum_forward(float *y, const float *x, const nn__reduce_attr *ra, int reverse) {
    int64_t O = ra->O, R = ra->R, I = ra->I, o, i, r;
    for (o = 0; o < O; o++)
        for (i = 0; i < I; i++) {
            const float *xr = x + o * R * I + i;
            float *yr = y + o * R * I + i;
            double s = 0.0;
            for (r = 0; r < R; r++) {
                int64_t k = (reverse ? R - 1 - r : r) * I;
                s += xr[k];
                yr[k] = (float)s;
            }
        }
}
