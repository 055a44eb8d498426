/* The gather family's CPU loops (src/ops/gather.c's bodies; kernels/gather.cl has the
   OpenCL twins). Scatters are written as gathers or in a fixed order: no atomics, the
   same bits every run. */

/* y [B, row bytes] = data[idx[b]] of data [N, row bytes], rows of any storage type as bits
   (an index out of range: zeros). The rows two ahead are fetched while a row is copied (up to
   4 KB of each: past that the hardware's prefetcher has caught on): the rows of a dataset
   far bigger than the caches (the MLP's batch of 128 images, 3 KB rows of 188 MB) each began
   with a miss to memory; 40 -> 21 us a batch on a 2-core Zen 5. */
static void nn__gather_rows_bytes(void *y, const void *data, const int32_t *idx, int64_t B, int64_t N, size_t row) {
    int64_t b;
    for (b = 0; b < B; b++) {
        int32_t r = idx[b];
#if defined(__GNUC__)
        if (b + 2 < B && idx[b + 2] >= 0 && idx[b + 2] < N) {
            const char *p = (const char *)data + (size_t)idx[b + 2] * row;
            size_t o, n = row < 4096 ? row : 4096;
            for (o = 0; o < n; o += 64) __builtin_prefetch(p + o, 0, 3);
        }
#endif
        if (r >= 0 && r < N) memcpy((char *)y + (size_t)b * row, (const char *)data + (size_t)r * row, row);
        else memset((char *)y + (size_t)b * row, 0, row);
    }
}

/* y [B, D] = data[idx[b]] of data [N, D] */
static void nn__gather_rows_forward(float *y, const float *data, const int32_t *idx, int64_t B, int64_t N, int64_t D) {
    nn__gather_rows_bytes(y, data, idx, B, N, (size_t)D * sizeof(float));
}

/* The same on the pool's threads (nn__par_for: rows split evenly) where 64 KB or more are
   gathered: each core waits on its own misses to memory (the MLP's batch, 400 KB: 21 -> 14.5
   us on 2 cores) */
typedef struct {
    float *y;
    const float *data;
    const int32_t *idx;
    int64_t N, D;
} nn__gather_rows_arg;
static void nn__gather_rows_range(void *arg, int64_t b0, int64_t b1) {
    const nn__gather_rows_arg *a = (const nn__gather_rows_arg *)arg;
    nn__gather_rows_forward(a->y + b0 * a->D, a->data, a->idx + b0, b1 - b0, a->N, a->D);
}
static void nn__gather_rows_pool(nn__threadpool *pool, float *y, const float *data, const int32_t *idx, int64_t B,
                                 int64_t N, int64_t D) {
    nn__gather_rows_arg a;
    a.y = y;
    a.data = data;
    a.idx = idx;
    a.N = N;
    a.D = D;
    nn__par_for(pool, B, 2 * B * D, nn__gather_rows_range, &a); /* floats read and written: 64 KB at NN__ROWS_PAR_MIN */
}

/* Index values outside [0, L): what PyTorch raises on, counted for the op's check. */
static int64_t nn__count_outside(const int32_t *idx, int64_t n, int64_t L) {
    int64_t i, bad = 0;
    for (i = 0; i < n; i++) bad += idx[i] < 0 || idx[i] >= L;
    return bad;
}

/* torch.index_select: y [outer, K, inner] = x [outer, L, inner] at idx[k] (an index out of
   range gives zeros). Data moved as bits (either dtype). */
static void nn__index_select(float *out, const float *in, const int32_t *idx, int64_t outer, int64_t L, int64_t K,
                             int64_t inner) {
    int64_t o, k;
    for (o = 0; o < outer; o++)
        for (k = 0; k < K; k++) {
            int64_t j = idx[k];
            int ok = j >= 0 && j < L;
            if (ok) {
                memcpy(out + (o * K + k) * inner, in + (o * L + j) * inner, (size_t)inner * sizeof(float));
            } else {
                memset(out + (o * K + k) * inner, 0, (size_t)inner * sizeof(float));
            }
        }
}

/* Row-major strides of nd dims. */
static void nn__strides(const int64_t *dims, int nd, int64_t *st) {
    int d;
    st[nd - 1] = 1;
    for (d = nd - 2; d >= 0; d--) st[d] = st[d + 1] * dims[d + 1];
}

/* torch.gather along dim: y [ydims] (each dim >= the index's) at a position c inside the
   index's dims is x at c with c[dim] = idx[c]; elsewhere, and where the index is out of
   range, zero. */
static void nn__gather_fwd(float *y, const float *x, const int32_t *idx, int nd, int dim, const int64_t *ydims,
                           const int64_t *idims, const int64_t *xdims) {
    int64_t c[NN_MAX_DIMS] = {0}, yst[NN_MAX_DIMS], ist[NN_MAX_DIMS], xst[NN_MAX_DIMS], n = 1, i;
    int d;
    nn__strides(ydims, nd, yst);
    nn__strides(idims, nd, ist);
    nn__strides(xdims, nd, xst);
    for (d = 0; d < nd; d++) n *= ydims[d];
    for (i = 0; i < n; i++) {
        int64_t r = i, io = 0, xo = 0, j;
        int inside = 1;
        for (d = 0; d < nd; d++) {
            c[d] = r / yst[d];
            r -= c[d] * yst[d];
            inside &= c[d] < idims[d];
            io += c[d] * ist[d];
            if (d != dim) xo += c[d] * xst[d];
        }
        j = inside ? idx[io] : -1;
        y[i] = (inside && j >= 0 && j < xdims[dim]) ? x[xo + j * xst[dim]] : 0.0f;
    }
}

/* torch.nn.functional.one_hot as float32: y [R, C] from labels [R]; a label out of range
   gives a row of zeros. */
static void nn__one_hot(float *y, const int32_t *labels, int64_t R, int64_t C) {
    int64_t r;
    memset(y, 0, (size_t)(R * C) * sizeof(float));
    for (r = 0; r < R; r++)
        if (labels[r] >= 0 && labels[r] < C) y[r * C + labels[r]] = 1.0f;
}
