/* kernels/segment.cl's kernel signatures (kernels/kargs.h says how to read them). The sort's
   arrays live in its scratch s, at the int offsets given. */
#ifndef NN__SEGMENT_ARGS_H
#define NN__SEGMENT_ARGS_H

/* the keys of idx [n] into s[0..n) (kernels/segment.cl says which), counting values outside
   [0, L) into bad[slot] when check is set */
#define NN__KARGS_segment_keys(F, P) \
    F(iin, idx) P(iout, s) P(int, n) P(int, L) P(int, NK) P(int, dim) P(int8, idims) P(int, check) P(iout, bad) P(int, slot)
NN__KSIG(segment_keys)
/* one radix pass over keys s[kin..kin+n): per block of blk keys the counts of each digit
   (the 8 bits at shift) into s[hist + digit * nb + block] */
#define NN__KARGS_segment_hist(F, P) F(iout, s) P(int, kin) P(int, hist) P(int, n) P(int, nb) P(int, blk) P(int, shift)
NN__KSIG(segment_hist)
/* the exclusive prefix sum of s[hist..hist+m), in place, by one work-group (part: an int a
   work-item) */
#define NN__KARGS_segment_scan(F, P) F(iout, s) P(int, hist) P(int, m) P(lint, part)
NN__KSIG(segment_scan)
/* the pass's stable scatter of keys and positions (pin < 0: the identity) */
#define NN__KARGS_segment_place(F, P) \
    F(iout, s) P(int, kin) P(int, kout) P(int, pin) P(int, pout) P(int, hist) P(int, n) P(int, nb) P(int, blk) P(int, shift)
NN__KSIG(segment_place)
/* the sort's output: out [n + NK + 1] = the positions sorted, then each key's first place */
#define NN__KARGS_segment_finish(F, P) F(iin, s) P(iout, out) P(int, keys) P(int, perm) P(int, n) P(int, NK)
NN__KSIG(segment_finish)

/* y [outer, S, inner] reduced from src [outer, E, inner] by the sorted index */
#define NN__KARGS_segment_reduce(F, P)                                                                      \
    F(in, src) P(in, base) P(iin, sorted) P(out, y) P(int, n) P(int, E) P(int, S) P(int, inner) P(int, reduce) \
    P(int, has_base) P(int, skip)
NN__KSIG(segment_reduce)
/* dsrc [outer, E, inner] = dy [outer, S, inner] at idx (divided by the count: mean) */
#define NN__KARGS_segment_gather(F, P)                                                                    \
    F(in, dy) P(iin, idx) P(iin, sorted) P(out, dsrc) P(int, n) P(int, E) P(int, S) P(int, inner) P(int, mean) \
    P(int, skip)
NN__KSIG(segment_gather)
#define NN__KARGS_segment_zero(F, P) F(out, y) P(int, n)
NN__KSIG(segment_zero)
/* dsrc at each segment's arg-max = dy (dsrc zeroed before) */
#define NN__KARGS_segment_max_grad(F, P) \
    F(in, src) P(in, dy) P(iin, sorted) P(out, dsrc) P(int, n) P(int, E) P(int, S) P(int, inner)
NN__KSIG(segment_max_grad)
/* torch.scatter_add over the sorted index: y [ydims] = base + src summed per key */
#define NN__KARGS_segment_scatter_add(F, P)                                                       \
    F(in, base) P(in, src) P(iin, sorted) P(out, y) P(int, n) P(int, E) P(int8, ydims) P(int8, idims) \
    P(int8, sdims) P(int, dim) P(int, has_base)
NN__KSIG(segment_scatter_add)

/* y [B, D] = w [N, D] at idx [B], zeros for an index outside [0, N) (counted); w and y of
   the table's storage type */
#define NN__KARGS_embedding(F, P) \
    F(sin, w) P(iin, idx) P(sout, y) P(int, n) P(int, N) P(int, D) P(iout, bad) P(int, slot)
NN__KSIG(embedding)

/* a mixture of experts' dispatch: idx [E * C], slot e * C + c the c-th row b (ascending) with
   kept [B, E] nonzero at (b, e); slots past the rows: fill */
#define NN__KARGS_moe_slots(F, P) F(in, kept) P(iout, idx) P(int, B) P(int, E) P(int, C) P(int, fill)
NN__KSIG(moe_slots)

#endif
