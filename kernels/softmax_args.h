/* kernels/softmax.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__SOFTMAX_ARGS_H
#define NN__SOFTMAX_ARGS_H

#endif
