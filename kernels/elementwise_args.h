/* kernels/elementwise.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__ELEMENTWISE_ARGS_H
#define NN__ELEMENTWISE_ARGS_H

#endif
