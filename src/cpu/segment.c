/* The segment family's CPU loops (src/ops/segment.c's bodies; kernels/segment.cl has the
   OpenCL twins): a counting sort of an index's keys, stable, then reductions that walk each
   segment in index order, so the bits are the kernels' and do not depend on the threads. */

/* key of idx[i] (kernels/segment.cl's segment_keys): dim < 0, the value; else the
   position's coordinates in idims without dim, row-major, * L + value; outside [0, L): NK */
static int64_t nn__segment_key(const int32_t *idx, int64_t i, int nd, int dim, const int64_t *idims, int64_t L, int64_t NK) {
    int64_t v = idx[i], col = 0, c[NN_MAX_DIMS], r = i;
    int d;
    if (v < 0 || v >= L) return NK;
    if (dim < 0) return v;
    for (d = nd - 1; d >= 0; d--) {
        c[d] = r % idims[d];
        r /= idims[d];
    }
    for (d = 0; d < nd; d++)
        if (d != dim) col = col * idims[d] + c[d];
    return col * L + v;
}

/* out [E + NK + 1]: the positions of idx [E] sorted stably by key, then each key's first
   place (out[E + NK]: the count of valid ones; the invalid ones follow in order). cnt: NK + 2
   ints of scratch. */
static void nn__segment_sort(int32_t *out, int32_t *cnt, const int32_t *idx, int64_t E, int nd, int dim, const int64_t *idims,
                             int64_t L, int64_t NK) {
    int64_t i, k, run = 0;
    memset(cnt, 0, (size_t)(NK + 2) * sizeof *cnt);
    for (i = 0; i < E; i++) cnt[nn__segment_key(idx, i, nd, dim, idims, L, NK)]++;
    for (k = 0; k <= NK; k++) {
        int32_t v = cnt[k];
        cnt[k] = (int32_t)run;
        out[E + k] = (int32_t)run;
        run += v;
    }
    for (i = 0; i < E; i++) out[cnt[nn__segment_key(idx, i, nd, dim, idims, L, NK)]++] = (int32_t)i;
}

typedef struct nn__segment_job {
    float *y;
    const float *src, *base, *dy;
    const int32_t *sorted, *idx;
    int64_t E, S, inner, skip;
    int reduce, has_base;
} nn__segment_job;

/* y rows [r0, r1) of [outer * S, inner] (kernels/segment.cl's segment_reduce): each element
   takes its segment's rows in index order, a row at a time so the inner loops vectorize */
static void nn__segment_reduce_rows(void *arg, int64_t r0, int64_t r1) {
    const nn__segment_job *j = (const nn__segment_job *)arg;
    int64_t r, q, c, I = j->inner;
    for (r = r0; r < r1; r++) {
        int64_t o = r / j->S, sg = r % j->S, a = j->sorted[j->E + sg], e = j->sorted[j->E + sg + 1];
        const float *x = j->src + o * j->E * I;
        float *y = j->y + r * I;
        if (sg == j->skip) e = a;
        if (j->reduce == NN__SEG_MAX) {
            if (a == e) {
                memset(y, 0, (size_t)I * sizeof *y);
                continue;
            }
            memcpy(y, x + (int64_t)j->sorted[a] * I, (size_t)I * sizeof *y);
            for (q = a + 1; q < e; q++) {
                const float *xr = x + (int64_t)j->sorted[q] * I;
                for (c = 0; c < I; c++)
                    if (y[c] == y[c] && !(xr[c] <= y[c])) y[c] = xr[c];
            }
            continue;
        }
        if (j->has_base) memcpy(y, j->base + r * I, (size_t)I * sizeof *y);
        else memset(y, 0, (size_t)I * sizeof *y);
        for (q = a; q < e; q++) {
            const float *xr = x + (int64_t)j->sorted[q] * I;
            for (c = 0; c < I; c++) y[c] += xr[c];
        }
        if (j->reduce == NN__SEG_MEAN && e > a) {
            float cnt = (float)(e - a);
            for (c = 0; c < I; c++) y[c] = y[c] / cnt;
        }
    }
}

/* y [outer, S, inner] from src [outer, E, inner] by the sort's output */
static void nn__segment_reduce(nn__threadpool *pool, float *y, const float *src, const float *base, const int32_t *sorted,
                               int64_t outer, int64_t E, int64_t S, int64_t inner, int reduce, int64_t skip) {
    nn__segment_job j;
    memset(&j, 0, sizeof j);
    j.y = y;
    j.src = src;
    j.base = base;
    j.has_base = base != NULL;
    j.sorted = sorted;
    j.E = E;
    j.S = S;
    j.inner = inner;
    j.reduce = reduce;
    j.skip = skip;
    nn__par_for(pool, outer * S, outer * (E + S) * inner, nn__segment_reduce_rows, &j);
}

/* dsrc [outer, E, inner] = dy [outer, S, inner] at idx (over the segment's count: mean) */
static void nn__segment_gather(float *dsrc, const float *dy, const int32_t *idx, const int32_t *sorted, int64_t outer, int64_t E,
                               int64_t S, int64_t inner, int mean, int64_t skip) {
    int64_t o, k, c;
    for (o = 0; o < outer; o++)
        for (k = 0; k < E; k++) {
            int64_t v = idx[k];
            float *d = dsrc + (o * E + k) * inner;
            int ok = v >= 0 && v < S && v != skip;
            for (c = 0; c < inner; c++) {
                float t = 0.0f;
                if (ok) {
                    t = dy[(o * S + v) * inner + c];
                    if (mean) t = t / (float)(sorted[E + v + 1] - sorted[E + v]);
                }
                d[c] = t;
            }
        }
}

/* dsrc [outer, E, inner]: dy at each segment's first arg-max in index order, else 0 */
static void nn__segment_max_grad(float *dsrc, const float *src, const float *dy, const int32_t *sorted, int64_t outer, int64_t E,
                                 int64_t S, int64_t inner) {
    int64_t o, sg, c, q;
    memset(dsrc, 0, (size_t)(outer * E * inner) * sizeof *dsrc);
    for (o = 0; o < outer; o++)
        for (sg = 0; sg < S; sg++) {
            int64_t a = sorted[E + sg], e = sorted[E + sg + 1];
            const float *x = src + o * E * inner;
            if (a >= e) continue;
            for (c = 0; c < inner; c++) {
                int64_t arg = sorted[a];
                float acc = x[arg * inner + c];
                for (q = a + 1; q < e; q++) {
                    float v = x[(int64_t)sorted[q] * inner + c];
                    if (acc == acc && !(v <= acc)) {
                        acc = v;
                        arg = sorted[q];
                    }
                }
                dsrc[(o * E + arg) * inner + c] = dy[(o * S + sg) * inner + c];
            }
        }
}

/* torch.scatter_add over the sort of its index (keys: the index's columns, kernels/segment.cl's
   segment_scatter_add): y [ydims] = base (NULL: zeros) + src summed per key in index order */
static void nn__segment_scatter_add(float *y, const float *base, const float *src, const int32_t *sorted, int nd, int dim,
                                    const int64_t *ydims, const int64_t *idims, const int64_t *sdims, int64_t E) {
    int64_t n = 1, i, c[NN_MAX_DIMS];
    int d;
    for (d = 0; d < nd; d++) n *= ydims[d];
    for (i = 0; i < n; i++) {
        int64_t r = i, col = 0, q;
        int inside = 1;
        float acc = base ? base[i] : 0.0f;
        for (d = nd - 1; d >= 0; d--) {
            c[d] = r % ydims[d];
            r /= ydims[d];
        }
        for (d = 0; d < nd; d++)
            if (d != dim) {
                inside &= c[d] < idims[d];
                col = col * idims[d] + c[d];
            }
        if (inside) {
            int64_t key = col * ydims[dim] + c[dim];
            for (q = sorted[E + key]; q < sorted[E + key + 1]; q++) {
                int64_t p = sorted[q], so = 0, sst = 1;
                for (d = nd - 1; d >= 0; d--) {
                    so += (p % idims[d]) * sst;
                    p /= idims[d];
                    sst *= sdims[d];
                }
                acc += src[so];
            }
        }
        y[i] = acc;
    }
}

/* A mixture of experts' dispatch (kernels/segment.cl's moe_slots): idx [E * C], slot e * C +
   c the c-th row b (ascending) with kept [B, E] nonzero at (b, e); rows past C dropped; the
   slots left over hold fill. */
static void nn__moe_slots(int32_t *idx, const float *kept, int64_t B, int64_t E, int64_t C, int32_t fill) {
    int64_t e, b, c;
    for (e = 0; e < E; e++) {
        for (b = 0, c = 0; b < B && c < C; b++)
            if (kept[b * E + e] != 0.0f) idx[e * C + c++] = (int32_t)b;
        for (; c < C; c++) idx[e * C + c] = fill;
    }
}
