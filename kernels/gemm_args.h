/* kernels/gemm.cl's kernel signatures (kernels/kargs.h says how to read them): C [M, N] =
   alpha op(A) op(B) + beta C, leading dimensions lda, ldb, ldc; A and B of the program's
   storage type (the launch's store: float32, or 16-bit for a 16-bit matmul), C float32. */
#ifndef NN__GEMM_ARGS_H
#define NN__GEMM_ARGS_H

/* gemm_nn_single, gemm_nt_single, gemm_tn_single, gemm_tt_single (GEMM_KERNEL) */
#define NN__KARGS_gemm(F, P)                                                                       \
    F(int, M) P(int, N) P(int, K) P(sin, A) P(int, lda) P(sin, B) P(int, ldb) P(out, C) P(int, ldc) \
    P(float, alpha) P(float, beta)
NN__KSIG(gemm)
/* gemm_nn_batched ... gemm_tt_batched (GEMM_BATCHED_KERNEL): product z of the grid's
   dimension 2 at offA + (z / inner) * sa0 + (z % inner) * sa1 floats into A (B, C alike) */
#define NN__KARGS_gemm_batched(F, P)                                                               \
    F(int, M) P(int, N) P(int, K) P(sin, A) P(int, lda) P(sin, B) P(int, ldb) P(out, C) P(int, ldc) \
    P(float, alpha) P(float, beta) P(int, inner) P(int, offA) P(int, sa0) P(int, sa1) P(int, offB) \
    P(int, sb0) P(int, sb1) P(int, offC) P(int, sc0) P(int, sc1)
NN__KSIG(gemm_batched)

#endif
