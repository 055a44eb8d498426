/* The softmax family's CPU loops (src/ops/softmax.c's bodies; kernels/softmax.cl has the
   OpenCL twins): rows of length C. */

static void nn__softmax_forward(float *y, const float *x, int64_t rows, int64_t C, int log_space) {
    int64_t r, c;
    for (r = 0; r < rows; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C;
        float m = xr[0], s = 0.0f;
        for (c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        s = nn__vexp_map(NN__VE_EXP_SHIFT, log_space ? NULL : yr, xr, NULL, NULL, m, C); /* yr = exp(x - m) */
        if (log_space) {
            float ls = logf(s) + m;
            for (c = 0; c < C; c++) yr[c] = xr[c] - ls;
        } else {
            float inv = 1.0f / s;
            for (c = 0; c < C; c++) yr[c] *= inv;
        }
    }
}

/* softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy). */
static void nn__softmax_backward(float *dx, const float *y, const float *dy, int64_t rows, int64_t C, int log_space) {
    int64_t r, c;
    for (r = 0; r < rows; r++) {
        const float *yr = y + r * C, *dyr = dy + r * C;
        float *dxr = dx + r * C;
        float s = 0.0f;
        if (log_space) {
            for (c = 0; c < C; c++) s += dyr[c];
            (void)nn__vexp_map(NN__VE_SUB_EXP, dxr, dyr, yr, NULL, s, C);
        } else {
            for (c = 0; c < C; c++) s += dyr[c] * yr[c];
            for (c = 0; c < C; c++) dxr[c] = yr[c] * (dyr[c] - s);
        }
    }
}

/* The rows over the pool's threads: rows [r0, r1) each, by the loops above at an offset. */
typedef struct nn__softmax_job {
    int log_space;
    float *y;
    const float *x, *dy;
    int64_t C;
} nn__softmax_job;

static void nn__softmax_range(void *arg, int64_t r0, int64_t r1) {
    const nn__softmax_job *j = (const nn__softmax_job *)arg;
    int64_t o = r0 * j->C;
    if (j->dy) nn__softmax_backward(j->y + o, j->x + o, j->dy + o, r1 - r0, j->C, j->log_space);
    else nn__softmax_forward(j->y + o, j->x + o, r1 - r0, j->C, j->log_space);
}

/* y [rows, C] = (log_)softmax(x) when dy is NULL; else y = dx of the rows given the forward
   output x and dy */
static void nn__softmax_rows(nn__threadpool *pool, int log_space, float *y, const float *x, const float *dy, int64_t rows,
                             int64_t C) {
    nn__softmax_job j;
    j.log_space = log_space;
    j.y = y;
    j.x = x;
    j.dy = dy;
    j.C = C;
    nn__par_for(pool, rows, rows * C * 4, nn__softmax_range, &j);
}
