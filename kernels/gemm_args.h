/* kernels/gemm.cl's kernel signatures (kernels/kargs.h says how to read them): C [M, N] =
   alpha op(A) op(B) + beta C, leading dimensions lda, ldb, ldc; A and B of the program's
   storage type (the launch's store: float32, or 16-bit for a 16-bit matmul), C float32. */
#ifndef NN__GEMM_ARGS_H
#define NN__GEMM_ARGS_H

/* gemm_nn_single, gemm_nt_single, gemm_tn_single, gemm_tt_single (GEMM_KERNEL). Rows by
   index (rna > 0): A's stored row i is A's row ra[i] of rna rows (an index outside [0, rna): a
   row of zeros), B's by rb and rnb alike: a gather of rows (nn_gather_rows) read in place by
   the CPU-tuned (packed) kernels, op(A) = A and op(B) = B only (src/ops/fuse.c,
   nn__fuse_gather); with rna and rnb 0, ra and rb are not read. */
#define NN__KARGS_gemm(F, P)                                                                       \
    F(int, M) P(int, N) P(int, K) P(sin, A) P(int, lda) P(sin, B) P(int, ldb) P(out, C) P(int, ldc) \
    P(float, alpha) P(float, beta) P(iin, ra) P(int, rna) P(iin, rb) P(int, rnb) P(iout, claim) P(int, vnx) P(int, vny)
NN__KSIG(gemm)
/* gemm_nn_batched ... gemm_tt_batched (GEMM_BATCHED_KERNEL): product z of the grid's
   dimension 2 at offA + (z / inner) * sa0 + (z % inner) * sa1 floats into A (B, C alike) */
#define NN__KARGS_gemm_batched(F, P)                                                               \
    F(int, M) P(int, N) P(int, K) P(sin, A) P(int, lda) P(sin, B) P(int, ldb) P(out, C) P(int, ldc) \
    P(float, alpha) P(float, beta) P(int, inner) P(int, offA) P(int, sa0) P(int, sa1) P(int, offB) \
    P(int, sb0) P(int, sb1) P(int, offC) P(int, sc0) P(int, sc1) P(iout, claim) P(int, vnx) P(int, vny) P(int, vnz)
NN__KSIG(gemm_batched)

#endif
