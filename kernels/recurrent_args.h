/* kernels/recurrent.cl's kernel signatures (kernels/kargs.h says how to read them). Offsets
   are in floats into the buffer named beside them; `ws` is a sequence node's workspace
   (src/ops/recurrent.c: the gates, the states, ...), `pk` a gradient node's packed output,
   `sc` its scratch. t is the time step, lens the optional int32 [B] lengths. */
#ifndef NN__RECURRENT_ARGS_H
#define NN__RECURRENT_ARGS_H

/* dst[odst + i] = has_src ? src[osrc + i] : 0, i < n */
#define NN__KARGS_rec_copy(F, P) F(in, src) P(out, dst) P(int, has_src) P(int, osrc) P(int, odst) P(int, n)
NN__KSIG(rec_copy)
/* one step's gate math forward, a work-item per (b, j < H) */
#define NN__KARGS_rec_gates_fwd(F, P)                                                              \
    F(in, xp) P(in, hp) P(in, bias) P(iin, lens) P(out, ws) P(out, y) P(int, kind) P(int, B)      \
    P(int, H) P(int, Hr) P(int, t) P(int, has_bias) P(int, has_len) P(int, proj) P(int, oxp)       \
    P(int, og) P(int, oh) P(int, oc) P(int, ou) P(int, ohn) P(int, oy)
NN__KSIG(rec_gates_fwd)
/* with a projection: the frozen rows' states kept and the output written, (b, k < Hr) */
#define NN__KARGS_rec_proj_fix(F, P)                                                               \
    F(out, ws) P(out, y) P(iin, lens) P(int, has_len) P(int, B) P(int, Hr) P(int, t) P(int, oh)  \
    P(int, oy)
NN__KSIG(rec_proj_fix)
/* one step's gate math backward, a work-item per (b, j < H) */
#define NN__KARGS_rec_gates_bwd(F, P)                                                              \
    F(in, ws) P(in, gy) P(out, sc) P(out, pk) P(iin, lens) P(int, kind) P(int, B) P(int, H)       \
    P(int, Hr) P(int, t) P(int, has_len) P(int, proj) P(int, og) P(int, oh) P(int, oc) P(int, ohn) \
    P(int, ogy) P(int, odu) P(int, odhp) P(int, odh) P(int, odc) P(int, odxp)
NN__KSIG(rec_gates_bwd)
/* with a projection, before a step backward: dHt = the state's gradient of active rows, (b, k < Hr) */
#define NN__KARGS_rec_proj_bwd(F, P)                                                               \
    F(in, gy) P(out, pk) P(out, sc) P(iin, lens) P(int, has_len) P(int, B) P(int, Hr) P(int, t)  \
    P(int, ogy) P(int, odh) P(int, odht)
NN__KSIG(rec_proj_bwd)
/* y[oy + j] = sum over r < rows of x[ox + r * cols + j], in order of r */
#define NN__KARGS_rec_colsum(F, P) F(in, x) P(out, y) P(int, rows) P(int, cols) P(int, ox) P(int, oy)
NN__KSIG(rec_colsum)
/* lengths outside [1, T] counted into bad[slot] (the graph's check counters) */
#define NN__KARGS_rec_len_check(F, P) F(iin, lens) P(int, n) P(int, T) P(iout, bad) P(int, slot)
NN__KSIG(rec_len_check)
/* nn_last_valid: y [B, F] from x [T, B, F] (bf: [B, T, F]) at each row's lengths - 1 */
#define NN__KARGS_last_valid_fwd(F, P) F(in, x) P(iin, lens) P(out, y) P(int, T) P(int, B) P(int, nf) P(int, bf)
NN__KSIG(last_valid_fwd)
#define NN__KARGS_last_valid_bwd(F, P) F(in, dy) P(iin, lens) P(out, dx) P(int, T) P(int, B) P(int, nf) P(int, bf)
NN__KSIG(last_valid_bwd)
/* nn_bidirectional: y = x [T, B, F] (bf: [B, T, F]) with each row's first lens[b] steps
   (has_len 0: all T; clamped to [1, T]) in reverse order, the rest as they are */
#define NN__KARGS_rec_reverse(F, P) F(in, x) P(iin, lens) P(out, y) P(int, T) P(int, B) P(int, nf) P(int, bf) P(int, has_len)
NN__KSIG(rec_reverse)

#endif
