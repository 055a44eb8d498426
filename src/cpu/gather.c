/* The gather family's CPU loops (src/ops/gather.c's bodies; kernels/gather.cl has the
   OpenCL twins). */

/* y [B, D] = data[idx[b]] of data [N, D] */
static void nn__gather_rows_forward(float *y, const float *data, const int32_t *idx, int64_t B, int64_t N, int64_t D) {
    int64_t b;
    for (b = 0; b < B; b++) {
        int32_t r = idx[b];
        if (r >= 0 && r < N) memcpy(y + b * D, data + (int64_t)r * D, (size_t)D * sizeof(float));
        else memset(y + b * D, 0, (size_t)D * sizeof(float));
    }
}

/* ddata [N, D] = sum over b with idx[b] == r of dy[b]: a fixed order, no atomics. */
static void nn__gather_rows_backward(float *ddata, const int32_t *idx, const float *dy, int64_t B, int64_t N, int64_t D) {
    int64_t b, j;
    memset(ddata, 0, (size_t)(N * D) * sizeof(float));
    for (b = 0; b < B; b++) {
        int32_t r = idx[b];
        if (r < 0 || r >= N) continue;
        for (j = 0; j < D; j++) ddata[(int64_t)r * D + j] += dy[b * D + j];
    }
}
