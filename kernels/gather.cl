/* Row gathers: batches from a dataset that lives on the device. */

/* y [B, D] = data[idx[b]] of data [N, D]; an index out of range gives zeros. The rows are
   copied as bits, so float32 and int32 data share the kernel. */
__kernel void gather_rows(__global const uint *data, __global const int *idx, __global uint *y,
                          const int B, const int N, const int D) {
    int i = get_global_id(0);
    if (i >= B * D) return;
    int b = i / D, j = i - b * D, r = idx[b];
    y[i] = (r >= 0 && r < N) ? data[(size_t)r * D + j] : 0u;
}

/* ddata [N, D]: element (r, j) sums dy[b, j] over every b with idx[b] == r, in order of b
   (no atomics, so the result is deterministic). */
__kernel void gather_rows_backward(__global const int *idx, __global const float *dy, __global float *ddata,
                                   const int B, const int N, const int D) {
    int i = get_global_id(0);
    if (i >= N * D) return;
    int r = i / D, j = i - r * D;
    float s = 0.0f;
    for (int b = 0; b < B; b++) if (idx[b] == r) s += dy[(size_t)b * D + j];
    ddata[i] = s;
}
