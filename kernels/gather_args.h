/* kernels/gather.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__GATHER_ARGS_H
#define NN__GATHER_ARGS_H

/* data [N, D] rows by idx [B], as 32-bit words (float32 or int32 data) */
#define NN__KARGS_gather_rows(F, P) F(uin, data) P(iin, idx) P(uout, y) P(int, B) P(int, N) P(int, D)
NN__KSIG(gather_rows)

/* idx [n] values outside [0, L), counted into bad[slot] (the graph's check counters) */
#define NN__KARGS_index_check(F, P) F(iin, idx) P(int, n) P(int, L) P(iout, bad) P(int, slot)
NN__KSIG(index_check)

/* x [outer, L, inner] at idx [K] (as 32-bit words) */
#define NN__KARGS_index_select(F, P) \
    F(uin, x) P(iin, idx) P(uout, y) P(int, n) P(int, L) P(int, K) P(int, inner)
NN__KSIG(index_select)

/* the dims of y, of the index and of x as int8, ones after the tensor's */
#define NN__KARGS_gather(F, P) \
    F(in, x) P(iin, idx) P(out, y) P(int, n) P(int8, ydims) P(int8, idims) P(int8, xdims) P(int, dim)
NN__KSIG(gather)

/* labels [R] into y [R, C] */
#define NN__KARGS_one_hot(F, P) F(iin, labels) P(out, y) P(int, n) P(int, C)
NN__KSIG(one_hot)

#endif
