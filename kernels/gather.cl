/* Gathers: rows of a dataset that lives on the device, index_select, gather and one_hot
   (their gradients and scatter_add: kernels/segment.cl). Twins of the loops in src/cpu/gather.c. */
#include "kargs.h"
#include "gather_args.h"

/* y [B, D] = data[idx[b]] of data [N, D]; an index out of range gives zeros. The rows are
   copied as bits, so float32 and int32 data share the kernel. */
__kernel void gather_rows_forward(NN__KPARAMS(gather_rows)) {
    int i = get_global_id(0);
    if (i >= B * D) return;
    int b = i / D, j = i - b * D, r = idx[b];
    y[i] = (r >= 0 && r < N) ? data[(size_t)r * D + j] : 0u;
}

/* The same on devices tuned as CPUs: one work-item per row, copied in uint16s (the form
   above divided an index for every element and copied one at a time). */
__kernel void gather_rows_by_row(NN__KPARAMS(gather_rows)) {
    int b = get_global_id(0);
    if (b >= B) return;
    int r = idx[b], j = 0;
    __global uint *o = y + (size_t)b * D;
    if (r < 0 || r >= N) {
        for (; j < D; j++) o[j] = 0u;
        return;
    }
    __global const uint *p = data + (size_t)r * D;
    for (; j + 16 <= D; j += 16) vstore16(vload16(0, p + j), 0, o + j);
    for (; j < D; j++) o[j] = p[j];
}

/* A checked op's index values outside [0, L), counted into bad[slot] (PyTorch raises on
   them; the op itself reads none of them). */
__kernel void index_check(NN__KPARAMS(index_check)) {
    int i = get_global_id(0);
    if (i >= n) return;
    if (idx[i] < 0 || idx[i] >= L) atomic_inc(bad + slot);
}

/* torch.index_select: y [outer, K, inner] = x [outer, L, inner] at idx[k]; out of range:
   zeros. Bits, so either dtype. */
__kernel void index_select_forward(NN__KPARAMS(index_select)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int in = i % inner, k = (i / inner) % K, o = i / (inner * K), j = idx[k];
    y[i] = (j >= 0 && j < L) ? x[((size_t)o * L + j) * inner + in] : 0u;
}

/* row-major coordinates of i in dims (six used) */
inline void nn_coords(int i, const int *dims, int *c) {
    for (int d = 5; d >= 0; d--) {
        c[d] = i % dims[d];
        i /= dims[d];
    }
}

/* torch.gather along dim: y [ydims] at c inside the index's dims = x at c with c[dim] =
   idx[c]; elsewhere, and for an index out of range, zero */
__kernel void gather_dim(NN__KPARAMS(gather)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int yd[8], id[8], xd[8], c[8];
    vstore8(ydims, 0, yd);
    vstore8(idims, 0, id);
    vstore8(xdims, 0, xd);
    nn_coords(i, yd, c);
    int inside = 1, io = 0, xo = 0, ist = 1, xst = 1, xdst = 1;
    for (int d = 5; d >= 0; d--) {
        inside &= c[d] < id[d];
        io += c[d] * ist;
        if (d != dim) xo += c[d] * xst;
        else xdst = xst;
        ist *= id[d];
        xst *= xd[d];
    }
    int j = inside ? idx[io] : -1;
    y[i] = (j >= 0 && j < xd[dim]) ? x[xo + j * xdst] : 0.0f;
}

/* one_hot as float32: y [R, C] = 1 where c == labels[r] (a label out of range: a zero row) */
__kernel void one_hot(NN__KPARAMS(one_hot)) {
    int i = get_global_id(0);
    if (i >= n) return;
    y[i] = labels[i / C] == i % C ? 1.0f : 0.0f;
}
