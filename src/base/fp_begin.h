/* Floating-point contraction off for all of nn.h's implementation, whatever the program's
   flags, so every build computes the same bits: a*b + c is a rounded product and a rounded
   sum, never an FMA the compiler chose (gcc fuses across statements by default in its GNU
   modes and with -ffp-contract=fast; clang fuses within an expression by default, and
   wherever FMA is available: -march=native, or the target("avx2,fma") vector functions).
   A fused multiply-add the code wants is written out: fmaf() or an fmadd intrinsic.
   src/base/fp_end.h restores the program's own setting after the implementation.
   gcc: the optimize pragma gives every function defined below -ffp-contract=off (gcc has
   no STDC FP_CONTRACT). clang: the standard pragma, saved and restored by float_control.
   Not covered: -ffast-math (reassociation), and clang's -ffp-contract=fast, which by
   clang's documentation fuses "disregarding pragmas". tools/init_hash.c and
   `make check-determinism` hold builds to one result. */
#if defined(__clang__)
#pragma float_control(push)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
