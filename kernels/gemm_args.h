/* kernels/gemm.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__GEMM_ARGS_H
#define NN__GEMM_ARGS_H

#endif
