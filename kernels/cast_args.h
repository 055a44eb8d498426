/* kernels/cast.cl's kernel signatures (kernels/kargs.h says how to read them): n elements of
   x into y. cast_store and cast_load take the program's storage type (kernels/storage.h,
   the launch's store) on one side and float32 on the other; cast_half takes 16-bit words on
   both sides, each side bfloat16 (1) or float16 (2). */
#ifndef NN__CAST_ARGS_H
#define NN__CAST_ARGS_H

#define NN__KARGS_cast_store(F, P) F(in, x) P(sout, y) P(int, n)
NN__KSIG(cast_store)
#define NN__KARGS_cast_load(F, P) F(sin, x) P(out, y) P(int, n)
NN__KSIG(cast_load)
#define NN__KARGS_cast_half(F, P) F(hin, x) P(hout, y) P(int, n) P(int, from) P(int, to)
NN__KSIG(cast_half)

#endif
