/* kernels/attention.cl's kernel signatures (kernels/kargs.h says how to read them).
   dims: B, H, Hkv, Tq, Tk, D, layout (0 [B, H, T, D], 1 [B, T, H, D]), causal;
   mk: the mask's strides over b, h, i, j, its mode (0 none, 1 float added, 2 int32: nonzero
   attends), the key padding mask's mode (0 none, 1 float, 2 int32: nonzero ignores), the
   sliding window (0 none), 0; vdim: v's head dim Dv (the output's, dout's; q and k have D);
   vw: the row strides and offsets of q, k and v (layout 1: a view's rows, src/ops/attention.c
   nn__attn_views; else heads x head dim and 0), 1 when dq, dk and dv go to those places in one
   gradient (ATTENTION_DKV's gview), 0.
   mask and kpm are read only when their mode is not 0. q, k, v, o, dout and the outputs are
   of the program's storage type (sin/sout: 16-bit attention; the log-sum-exp after the
   output stays float32 words, and attn_dmask's out is the float32 mask's gradient). */
#ifndef NN__ATTENTION_ARGS_H
#define NN__ATTENTION_ARGS_H

/* out: [output in q's layout, log-sum-exp [B, H, Tq]] */
#define NN__KARGS_attn_fwd(F, P)                                                                   \
    F(sin, q) P(sin, k) P(sin, v) P(in, mask) P(in, kpm) P(sout, out) P(int8, dims) P(int8, mk)     \
    P(float, scale) P(float, p) P(uint, seed_lo) P(uint, seed_hi) P(uint, key) P(ustep, step_lo)    \
    P(ustep, step_hi) P(int, vdim) P(int8, vw)
NN__KSIG(attn_fwd)
/* o: the forward's out; dout: its gradient (the output part); delta [B, H, Tq];
   out: dq (attn_dq) or [dk, dv] (attn_dkv) */
#define NN__KARGS_attn_bwd(F, P)                                                                   \
    F(sin, q) P(sin, k) P(sin, v) P(in, mask) P(in, kpm) P(sin, o) P(sin, dout) P(in, delta) P(sout, out) \
    P(int8, dims) P(int8, mk) P(float, scale) P(float, p) P(uint, seed_lo) P(uint, seed_hi)          \
    P(uint, key) P(ustep, step_lo) P(ustep, step_hi) P(int, vdim) P(int8, vw)
NN__KSIG(attn_bwd)
/* delta [B, H, Tq] = rowsum(dout * o) */
#define NN__KARGS_attn_delta(F, P) F(sin, o) P(sin, dout) P(out, delta) P(int8, dims) P(int, vdim)
NN__KSIG(attn_delta)

#endif
