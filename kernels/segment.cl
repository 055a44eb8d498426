/* The segment family: a stable LSD radix sort of an index's keys (8 bits a pass: per block
   counts, one prefix sum, a stable scatter per block; integers only, so every order gives the
   same bits), then reductions that walk each segment in index order. No atomics on floats:
   the same bits every run, and the CPU loops' (src/cpu/segment.c) order. */
#include "kargs.h"
#include "storage.h"
#include "segment_args.h"

/* key of idx[i]: dim < 0, its value; else (i's coordinates in idims without dim, row-major)
   * L + value; a value outside [0, L): NK */
__kernel void segment_keys(NN__KPARAMS(segment_keys)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int v = idx[i], col = 0;
    if (dim >= 0) {
        int id[8], r = i, c[8];
        vstore8(idims, 0, id);
        for (int d = 5; d >= 0; d--) {
            c[d] = r % id[d];
            r /= id[d];
        }
        for (int d = 0; d < 6; d++)
            if (d != dim) col = col * id[d] + c[d];
    }
    int ok = v >= 0 && v < L;
    if (!ok && check) atomic_inc(bad + slot);
    s[i] = ok ? col * L + v : NK;
}

/* work-item b counts the digits of its block, keys [b * blk, (b + 1) * blk) */
__kernel void segment_hist(NN__KPARAMS(segment_hist)) {
    int b = get_global_id(0);
    if (b >= nb) return;
    for (int d = 0; d < 256; d++) s[hist + d * nb + b] = 0;
    int e = min(n, (b + 1) * blk);
    for (int i = b * blk; i < e; i++) s[hist + ((s[kin + i] >> shift) & 255) * nb + b]++;
}

/* one work-group: each work-item sums a run, then work-item 0 scans the runs' sums */
__kernel void segment_scan(NN__KPARAMS(segment_scan)) {
    int t = get_local_id(0), W = get_local_size(0);
    int per = (m + W - 1) / W, a = min(m, t * per), e = min(m, a + per), sum = 0;
    for (int i = a; i < e; i++) sum += s[hist + i];
    part[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) {
        int run = 0;
        for (int k = 0; k < W; k++) {
            int v = part[k];
            part[k] = run;
            run += v;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    sum = part[t];
    for (int i = a; i < e; i++) {
        int v = s[hist + i];
        s[hist + i] = sum;
        sum += v;
    }
}

/* work-item b places its block's keys and positions in order: stable */
__kernel void segment_place(NN__KPARAMS(segment_place)) {
    int b = get_global_id(0);
    if (b >= nb) return;
    int e = min(n, (b + 1) * blk);
    for (int i = b * blk; i < e; i++) {
        int k = s[kin + i], at = hist + ((k >> shift) & 255) * nb + b, p = s[at];
        s[at] = p + 1;
        s[kout + p] = k;
        s[pout + p] = pin < 0 ? i : s[pin + i];
    }
}

/* out[i] = perm[i]; out[n + k] = the first place of a key >= k (a binary search) */
__kernel void segment_finish(NN__KPARAMS(segment_finish)) {
    int i = get_global_id(0);
    if (i < n) out[i] = s[perm + i];
    if (i > NK) return;
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (s[keys + mid] < i) lo = mid + 1;
        else hi = mid;
    }
    out[n + i] = lo;
}

/* y [outer, S, inner] at (o, g, j): src's rows of segment g in index order, summed (from
   base when has_base), averaged (empty: 0) or their maximum (empty: 0; NaN stays) */
__kernel void segment_reduce(NN__KPARAMS(segment_reduce)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int j = i % inner, sg = (i / inner) % S, o = i / (inner * S);
    int a = sorted[E + sg], e = sorted[E + sg + 1];
    __global const float *x = src + (size_t)o * E * inner + j;
    float acc = has_base ? base[i] : 0.0f;
    if (sg == skip) e = a;
    if (reduce == 2) {
        acc = a < e ? x[(size_t)sorted[a] * inner] : 0.0f;
        for (int q = a + 1; q < e; q++) {
            float v = x[(size_t)sorted[q] * inner];
            if (acc == acc && !(v <= acc)) acc = v;
        }
    } else {
        for (int q = a; q < e; q++) acc += x[(size_t)sorted[q] * inner];
        if (reduce == 1 && e > a) acc = acc / (float)(e - a);
    }
    y[i] = acc;
}

/* dsrc [outer, E, inner] at (o, k, j) = dy at (o, idx[k], j), over the count when mean; 0
   for an index outside [0, S) or the skipped segment */
__kernel void segment_gather(NN__KPARAMS(segment_gather)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int j = i % inner, k = (i / inner) % E, o = i / (inner * E), v = idx[k];
    float d = 0.0f;
    if (v >= 0 && v < S && v != skip) {
        d = dy[((size_t)o * S + v) * inner + j];
        if (mean) d = d / (float)(sorted[E + v + 1] - sorted[E + v]);
    }
    dsrc[i] = d;
}

__kernel void segment_zero(NN__KPARAMS(segment_zero)) {
    int i = get_global_id(0);
    if (i < n) y[i] = 0.0f;
}

/* dy at (o, g, j) to the first of segment g's rows (index order) that holds the maximum */
__kernel void segment_max_grad(NN__KPARAMS(segment_max_grad)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int j = i % inner, sg = (i / inner) % S, o = i / (inner * S);
    int a = sorted[E + sg], e = sorted[E + sg + 1];
    if (a >= e) return;
    __global const float *x = src + (size_t)o * E * inner + j;
    int arg = sorted[a];
    float acc = x[(size_t)arg * inner];
    for (int q = a + 1; q < e; q++) {
        float v = x[(size_t)sorted[q] * inner];
        if (acc == acc && !(v <= acc)) {
            acc = v;
            arg = sorted[q];
        }
    }
    dsrc[((size_t)o * E + arg) * inner + j] = dy[i];
}

/* torch.scatter_add: y at c = base (has_base) + src at the index's positions p with key
   (c without dim) * y.size(dim) + c[dim], in index order; zeros plus base outside the
   index's dims */
__kernel void segment_scatter_add(NN__KPARAMS(segment_scatter_add)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int yd[8], id[8], sd[8], c[8], r = i, col = 0, inside = 1;
    vstore8(ydims, 0, yd);
    vstore8(idims, 0, id);
    vstore8(sdims, 0, sd);
    for (int d = 5; d >= 0; d--) {
        c[d] = r % yd[d];
        r /= yd[d];
    }
    for (int d = 0; d < 6; d++)
        if (d != dim) {
            inside &= c[d] < id[d];
            col = col * id[d] + c[d];
        }
    float acc = has_base ? base[i] : 0.0f;
    if (inside) {
        int key = col * yd[dim] + c[dim], a = sorted[E + key], e = sorted[E + key + 1];
        for (int q = a; q < e; q++) {
            int p = sorted[q], so = 0, sst = 1;
            for (int d = 5; d >= 0; d--) {
                so += (p % id[d]) * sst;
                p /= id[d];
                sst *= sd[d];
            }
            acc += src[so];
        }
    }
    y[i] = acc;
}

/* y [B, D] = w [N, D] at idx [B]; an index outside [0, N): zeros, counted into bad[slot] */
__kernel void embedding(NN__KPARAMS(embedding)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int b = i / D, j = i - b * D, r = idx[b];
    int ok = r >= 0 && r < N;
    if (!ok && j == 0) atomic_inc(bad + slot);
    NN__SSTORE(y, i, ok ? NN__SLOAD(w, (size_t)r * D + j) : 0.0f); /* 16 bits: widened and rounded back, exact */
}

/* expert e's slots (a work-item each, rows in order): idx [E * C] from kept [B, E] */
__kernel void moe_slots(NN__KPARAMS(moe_slots)) {
    int e = get_global_id(0);
    if (e >= E) return;
    int c = 0;
    for (int b = 0; b < B && c < C; b++)
        if (kept[(long)b * E + e] != 0.0f) idx[(long)e * C + c++] = b;
    for (; c < C; c++) idx[(long)e * C + c] = fill;
}
