/* Rotary position embeddings on the CPU backend (src/ops/rope.c; kernels/rope.cl is the
   twin, element for element the same formula). Pair i of the rotated dims of the token at
   position p turns by angle p * theta^(-2i/rot): GPT-NeoX / LLaMA pair dims i and i + rot/2,
   GPT-J (interleaved) dims 2i and 2i + 1. */

/* (ah, al) *= (bh, bl) in float-float: the product's rounding error kept by fmaf */
#define NN__FF_MUL(ah, al, bh, bl)                                                                 \
    do {                                                                                         \
        float h_ = (ah) * (bh);                                                                  \
        float l_ = fmaf((ah), (bh), -h_) + ((ah) * (bl) + (al) * (bh));                           \
        float s_ = h_ + l_;                                                                      \
        (al) = l_ - (s_ - h_);                                                                   \
        (ah) = s_;                                                                               \
    } while (0)

/* p * r^i (r = theta^(-2/rot) = r_hi + r_lo) reduced to about [-pi, pi]: float-float powers
   and product, then the multiple of 2 pi (two floats) taken off with fmaf. Good to about
   1e-7 at any position (exp2f and one float product lost up to 1e-5 at position 129, as
   much as the OpenCL devices' exp2 differed); kernels/rope.cl's nn_rope_angle is the twin,
   operation for operation, so the angles agree across backends but for contraction of
   the small cross terms. */
static float nn__rope_angle(float r_hi, float r_lo, int i, int p) {
    float fh = 1.0f, fl = 0.0f, bh = r_hi, bl = r_lo, P = (float)p, ah, al, n, r;
    while (i) {
        if (i & 1) NN__FF_MUL(fh, fl, bh, bl);
        i >>= 1;
        if (i) NN__FF_MUL(bh, bl, bh, bl);
    }
    ah = P * fh;
    al = fmaf(P, fh, -ah) + P * fl;
    n = rintf(ah * 0.159154936671257019f);
    r = fmaf(-n, 6.28318548202514648f, ah);
    r = fmaf(-n, -1.74845553146951720e-7f, r);
    return r + al;
}

/* y[e] for element e of x: its dim d, position p, and the element of the pair's other half */
static float nn__rope_elem(const nn__rope_attr *a, const float *x, int64_t e, int d, int p) {
    int half = a->rot / 2, i, lower;
    int64_t other;
    float ang, c, s;
    if (d >= a->rot) return x[e];
    if (a->interleaved) {
        i = d / 2;
        lower = (d & 1) == 0;
        other = lower ? e + 1 : e - 1;
    } else {
        i = d < half ? d : d - half;
        lower = d < half;
        other = lower ? e + half : e - half;
    }
    ang = nn__rope_angle(a->r_hi, a->r_lo, i, p);
    c = cosf(ang);
    s = a->inverse ? -sinf(ang) : sinf(ang);
    return lower ? x[e] * c - x[other] * s : x[e] * c + x[other] * s;
}

typedef struct nn__rope_job {
    const nn__rope_attr *a;
    float *y;
    const float *x;
    const int32_t *pos;
    int64_t n;
} nn__rope_job;

static void nn__rope_task(void *arg, int t, int n_tasks) {
    const nn__rope_job *j = (const nn__rope_job *)arg;
    const nn__rope_attr *a = j->a;
    int64_t per = (j->n + n_tasks - 1) / n_tasks, e = per * t, e1 = e + per < j->n ? e + per : j->n;
    for (; e < e1; e++) {
        int64_t r = e / a->D;
        int d = (int)(e % a->D), tt, b, p;
        if (a->bthd) {
            tt = (int)((r / a->H) % a->T);
            b = (int)(r / ((int64_t)a->H * a->T));
        } else {
            tt = (int)(r % a->T);
            b = (int)(r / ((int64_t)a->H * a->T));
        }
        p = a->pos == 0 ? tt : a->pos == 1 ? j->pos[tt] : j->pos[(int64_t)b * a->T + tt];
        j->y[e] = nn__rope_elem(a, j->x, e, d, p + a->offset);
    }
}

static void nn__rope(nn__threadpool *pool, const nn__rope_attr *a, float *y, const float *x, const int32_t *pos) {
    nn__rope_job j;
    int64_t tasks;
    j.a = a;
    j.y = y;
    j.x = x;
    j.pos = pos;
    j.n = (int64_t)a->B * a->H * a->T * a->D;
    tasks = j.n >= NN__PAR_MIN ? nn__threadpool_size(pool) : 1;
    nn__threadpool_run(pool, nn__rope_task, &j, (int)tasks);
}
