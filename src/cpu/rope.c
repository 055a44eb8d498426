/* Rotary position embeddings on the CPU backend (src/ops/rope.c; kernels/rope.cl is the
   twin, element for element the same formula). Pair i of the rotated dims of the token at
   position p turns by angle p * theta^(-2i/rot): GPT-NeoX / LLaMA pair dims i and i + rot/2,
   GPT-J (interleaved) dims 2i and 2i + 1. */

#include "../../kernels/rope_angle.h"

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
