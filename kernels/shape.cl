/* Shape and structure ops: permute and flip, concat and strided slices along an axis,
   repeat, tril/triu, 2-D padding and upsampling. Twins of src/cpu/shape.c; one work-item
   per output element, and every backward pass is a gather (each input element sums what
   reads it), so no atomics. */
#include "kargs.h"
#include "shape_args.h"

/* y = x permuted: `dims` are y's dims (unused ones 1), `xs` x's stride for each y dim */
__kernel void permute(NN__KPARAMS(permute)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int r = i, off = 0;
    int d5 = r % dims.s5; r /= dims.s5; off += d5 * xs.s5;
    int d4 = r % dims.s4; r /= dims.s4; off += d4 * xs.s4;
    int d3 = r % dims.s3; r /= dims.s3; off += d3 * xs.s3;
    int d2 = r % dims.s2; r /= dims.s2; off += d2 * xs.s2;
    int d1 = r % dims.s1; r /= dims.s1; off += d1 * xs.s1;
    off += r * xs.s0;
    y[i] = x[off];
}

/* one input of a concat: x [outer, lx, inner] into y [outer, L, inner] at [off, off + lx)
   of the axis; one launch per input, so each is written once */
__kernel void concat_part(NN__KPARAMS(concat_part)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int in = i % inner, j = (i / inner) % lx, o = i / (inner * lx);
    y[((size_t)o * L + off + j) * inner + in] = x[i];
}

/* forward: y [outer, len, inner] = x [outer, L, inner] at start + j * step, j < len;
   backward (grad): y [outer, L, inner] = dy placed there, zeros elsewhere */
__kernel void slice(NN__KPARAMS(slice)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int in = i % inner;
    if (!grad) {
        int j = (i / inner) % len, o = i / (inner * len);
        y[i] = x[((size_t)o * L + start + j * step) * inner + in];
    } else {
        int j = (i / inner) % L, o = i / (inner * L), d = j - start;
        y[i] = (d >= 0 && d % step == 0 && d / step < len) ? x[((size_t)o * len + d / step) * inner + in] : 0u;
    }
}

/* The 16-bit twins of permute, concat_part and slice (bf16, fp16 storage: 16-bit words
   moved as they are) */
__kernel void half_permute(NN__KPARAMS(half_permute)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int r = i, off = 0;
    int d5 = r % dims.s5; r /= dims.s5; off += d5 * xs.s5;
    int d4 = r % dims.s4; r /= dims.s4; off += d4 * xs.s4;
    int d3 = r % dims.s3; r /= dims.s3; off += d3 * xs.s3;
    int d2 = r % dims.s2; r /= dims.s2; off += d2 * xs.s2;
    int d1 = r % dims.s1; r /= dims.s1; off += d1 * xs.s1;
    off += r * xs.s0;
    y[i] = x[off];
}

__kernel void half_concat(NN__KPARAMS(half_concat)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int in = i % inner, j = (i / inner) % lx, o = i / (inner * lx);
    y[((size_t)o * L + off + j) * inner + in] = x[i];
}

__kernel void half_slice(NN__KPARAMS(half_slice)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int in = i % inner;
    if (!grad) {
        int j = (i / inner) % len, o = i / (inner * len);
        y[i] = x[((size_t)o * L + start + j * step) * inner + in];
    } else {
        int j = (i / inner) % L, o = i / (inner * L), d = j - start;
        y[i] = (d >= 0 && d % step == 0 && d / step < len) ? x[((size_t)o * len + d / step) * inner + in] : (ushort)0;
    }
}

/* y = x read with signed strides from a base offset (flip): `dims` are y's dims (unused
   ones 1), `xs` x's stride for each y dim */
__kernel void strided(NN__KPARAMS(strided)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int r = i, off = base;
    int d5 = r % dims.s5; r /= dims.s5; off += d5 * xs.s5;
    int d4 = r % dims.s4; r /= dims.s4; off += d4 * xs.s4;
    int d3 = r % dims.s3; r /= dims.s3; off += d3 * xs.s3;
    int d2 = r % dims.s2; r /= dims.s2; off += d2 * xs.s2;
    int d1 = r % dims.s1; r /= dims.s1; off += d1 * xs.s1;
    off += r * xs.s0;
    y[i] = x[off];
}

/* torch.Tensor.repeat: y [ydims] tiles x [xdims] (6 dims each, leading ones) */
__kernel void repeat_forward(NN__KPARAMS(repeat_forward)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int yd[8], xd[8];
    vstore8(ydims, 0, yd);
    vstore8(xdims, 0, xd);
    int r = i, off = 0, st = 1;
    for (int d = 5; d >= 0; d--) {
        off += (r % yd[d]) % xd[d] * st;
        r /= yd[d];
        st *= xd[d];
    }
    y[i] = x[off];
}

/* dx [xdims] = the sum of dy [xdims * reps] over the tiles, in order of y (the CPU's) */
__kernel void repeat_backward(NN__KPARAMS(repeat_backward)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int xd[8], rp[8], c[8];
    vstore8(xdims, 0, xd);
    vstore8(reps, 0, rp);
    int r = i, R = 1;
    for (int d = 5; d >= 0; d--) {
        c[d] = r % xd[d];
        r /= xd[d];
        R *= rp[d];
    }
    float s = 0.0f;
    for (int t = 0; t < R; t++) { /* t: the tile, most significant dim first */
        int q = t, off = 0, st = 1;
        for (int d = 5; d >= 0; d--) {
            off += ((q % rp[d]) * xd[d] + c[d]) * st;
            q /= rp[d];
            st *= xd[d] * rp[d];
        }
        s += dy[off];
    }
    dx[i] = s;
}

/* torch.tril (upper 0: keeps j - i <= diagonal) / torch.triu (j - i >= diagonal) of each
   [R, C] matrix; the rest zero */
__kernel void tril(NN__KPARAMS(tril)) {
    int k = get_global_id(0);
    if (k >= n) return;
    int j = k % C, i = (k / C) % R;
    int keep = upper ? j - i >= diagonal : j - i <= diagonal;
    y[k] = keep ? x[k] : 0.0f;
}

/* source row of padded row o: -1 in zero padding. The reflection of i is -i before the
   start, 2 (n - 1) - i past the end, then folded once more; written so that no branch
   negates i alone (clang makes `if (i < 0) i = -i;` the abs intrinsic, which Oclgrind
   21.10 cannot run). */
inline int nn_pad_src(int o, int before, int n, int reflect) {
    int i = o - before, m;
    if (i >= 0 && i < n) return i;
    if (!reflect) return -1;
    m = i < 0 ? -i : 2 * (n - 1) - i;
    return m < n ? m : 2 * (n - 1) - m;
}

/* y [P, OH, OW] = x [P, H, W] padded; geo = (H, W, OH, OW, top, left, reflect, -) */
__kernel void pad2d_forward(NN__KPARAMS(pad2d_forward)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int ow = i % geo.s3, oh = (i / geo.s3) % geo.s2, p = i / (geo.s3 * geo.s2);
    int ih = nn_pad_src(oh, geo.s4, geo.s0, geo.s6), iw = nn_pad_src(ow, geo.s5, geo.s1, geo.s6);
    y[i] = (ih < 0 || iw < 0) ? 0.0f : x[((size_t)p * geo.s0 + ih) * geo.s1 + iw];
}

/* dx [P, H, W]: each input pixel sums the outputs that read it (at most 3 rows x 3 cols
   under reflection: itself, its mirror before, its mirror after) */
__kernel void pad2d_backward(NN__KPARAMS(pad2d_backward)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int H = geo.s0, W = geo.s1, OH = geo.s2, OW = geo.s3;
    int iw = i % W, ih = (i / W) % H, p = i / (W * H);
    int rows[3], cols[3], nr = 0, nc = 0;
    /* candidate output positions: direct, and the two reflections */
    int cand_h[3] = {ih + geo.s4, geo.s4 - ih, geo.s4 + 2 * (H - 1) - ih};
    int cand_w[3] = {iw + geo.s5, geo.s5 - iw, geo.s5 + 2 * (W - 1) - iw};
    for (int k = 0; k < 3; k++) {
        int o = cand_h[k];
        if (o < 0 || o >= OH || nn_pad_src(o, geo.s4, H, geo.s6) != ih) continue;
        int dup = 0;
        for (int q = 0; q < nr; q++) dup |= rows[q] == o;
        if (!dup) rows[nr++] = o;
    }
    for (int k = 0; k < 3; k++) {
        int o = cand_w[k];
        if (o < 0 || o >= OW || nn_pad_src(o, geo.s5, W, geo.s6) != iw) continue;
        int dup = 0;
        for (int q = 0; q < nc; q++) dup |= cols[q] == o;
        if (!dup) cols[nc++] = o;
    }
    float s = 0.0f;
    for (int a = 0; a < nr; a++)
        for (int b = 0; b < nc; b++) s += dy[((size_t)p * OH + rows[a]) * OW + cols[b]];
    dx[i] = s;
}

/* bilinear source of output o at scale s (align_corners = False), as in cpu/shape.c */
inline void nn_bilinear_src(int o, int s, int n, int *i0, int *i1, float *frac) {
    float src = fmax(((float)o + 0.5f) / (float)s - 0.5f, 0.0f);
    *i0 = min((int)src, n - 1);
    *i1 = min(*i0 + 1, n - 1);
    *frac = src - (float)*i0;
}

/* y [P, H*sh, W*sw]; geo = (H, W, sh, sw, bilinear, -, -, -) */
__kernel void upsample2d_forward(NN__KPARAMS(upsample2d_forward)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int H = geo.s0, W = geo.s1, OH = H * geo.s2, OW = W * geo.s3;
    int ow = i % OW, oh = (i / OW) % OH, p = i / (OW * OH);
    __global const float *xp = x + (size_t)p * H * W;
    int h0 = oh / geo.s2, h1 = h0, w0 = ow / geo.s3, w1 = w0;
    float fh = 0.0f, fw = 0.0f;
    if (!geo.s4) { /* nearest: a copy, no inf * 0 */
        y[i] = xp[h0 * W + w0];
        return;
    }
    nn_bilinear_src(oh, geo.s2, H, &h0, &h1, &fh);
    nn_bilinear_src(ow, geo.s3, W, &w0, &w1, &fw);
    y[i] = (1 - fh) * ((1 - fw) * xp[h0 * W + w0] + fw * xp[h0 * W + w1]) +
           fh * ((1 - fw) * xp[h1 * W + w0] + fw * xp[h1 * W + w1]);
}

/* dx [P, H, W]: each input pixel sums dy over the outputs within two input cells of it.
   Bilinear: each output's four terms (h0, w0), (h0, w1), (h1, w0), (h1, w1) that land on
   the pixel, one by one in that order, as cpu/shape.c scatters them and PyTorch does: a
   term of weight 0 still carries a NaN or inf dy (0 * inf). */
__kernel void upsample2d_backward(NN__KPARAMS(upsample2d_backward)) {
    int i = get_global_id(0);
    if (i >= n) return;
    int H = geo.s0, W = geo.s1, sh = geo.s2, sw = geo.s3, OH = H * sh, OW = W * sw;
    int iw = i % W, ih = (i / W) % H, p = i / (W * H);
    int oh0 = max((ih - 1) * sh, 0), oh1 = min((ih + 2) * sh, OH);
    int ow0 = max((iw - 1) * sw, 0), ow1 = min((iw + 2) * sw, OW);
    __global const float *dp = dy + (size_t)p * OH * OW;
    float s = 0.0f;
    if (!geo.s4) { /* nearest: the block of outputs that copy this pixel */
        for (int oh = ih * sh; oh < (ih + 1) * sh; oh++)
            for (int ow = iw * sw; ow < (iw + 1) * sw; ow++) s += dp[oh * OW + ow];
        dx[i] = s;
        return;
    }
    for (int oh = oh0; oh < oh1; oh++) {
        int h0, h1;
        float fh;
        nn_bilinear_src(oh, sh, H, &h0, &h1, &fh);
        if (h0 != ih && h1 != ih) continue;
        for (int ow = ow0; ow < ow1; ow++) {
            int w0, w1;
            float fw, g;
            nn_bilinear_src(ow, sw, W, &w0, &w1, &fw);
            if (w0 != iw && w1 != iw) continue;
            g = dp[oh * OW + ow];
            if (h0 == ih && w0 == iw) s += (1 - fh) * (1 - fw) * g;
            if (h0 == ih && w1 == iw) s += (1 - fh) * fw * g;
            if (h1 == ih && w0 == iw) s += fh * (1 - fw) * g;
            if (h1 == ih && w1 == iw) s += fh * fw * g;
        }
    }
    dx[i] = s;
}
