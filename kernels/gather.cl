/* Gathers: rows of a dataset that lives on the device, index_select, gather, scatter_add
   (as gathers: no atomics on floats) and one_hot. Twins of the loops in src/cpu/gather.c. */
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

/* ddata [N, D]: element (r, j) sums dy[b, j] over every b with idx[b] == r, in order of b
   (no atomics, so the result is deterministic). */
__kernel void gather_rows_backward(NN__KPARAMS(gather_rows_backward)) {
    int i = get_global_id(0);
    if (i >= N * D) return;
    int r = i / D, j = i - r * D;
    float s = 0.0f;
    for (int b = 0; b < B; b++) if (idx[b] == r) s += dy[(size_t)b * D + j];
    ddata[i] = s;
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

/* dx [outer, L, inner]: element j sums dy [outer, K, inner] over the k with idx[k] == j, in
   order of k (as the CPU loop) */
__kernel void index_select_backward(NN__KPARAMS(index_select_backward)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int in = i % inner, j = (i / inner) % L, o = i / (inner * L);
    float s = 0.0f;
    for (int k = 0; k < K; k++)
        if (idx[k] == j) s += dy[((size_t)o * K + k) * inner + in];
    dx[i] = s;
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

/* torch.scatter_add along dim, as a gather: y [ydims] = base (has_base) plus src at every
   position c of the index's dims with c[dim] = idx[c] matching, summed in order of the
   index's dim (the CPU loop's order: no atomics, the same bits each run) */
__kernel void scatter_add(NN__KPARAMS(scatter_add)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int yd[8], id[8], sd[8], c[8];
    vstore8(ydims, 0, yd);
    vstore8(idims, 0, id);
    vstore8(sdims, 0, sd);
    nn_coords(i, yd, c);
    int inside = 1, io = 0, so = 0, ist = 1, sst = 1, idst = 1, sdst = 1;
    for (int d = 5; d >= 0; d--) {
        if (d != dim) {
            inside &= c[d] < id[d];
            io += c[d] * ist;
            so += c[d] * sst;
        } else {
            idst = ist;
            sdst = sst;
        }
        ist *= id[d];
        sst *= sd[d];
    }
    float s = has_base ? base[i] : 0.0f;
    if (inside)
        for (int k = 0; k < id[dim]; k++)
            if (idx[io + k * idst] == c[dim]) s += src[so + k * sdst];
    y[i] = s;
}

/* one_hot as float32: y [R, C] = 1 where c == labels[r] (a label out of range: a zero row) */
__kernel void one_hot(NN__KPARAMS(one_hot)) {
    int i = get_global_id(0);
    if (i >= n) return;
    y[i] = labels[i / C] == i % C ? 1.0f : 0.0f;
}
