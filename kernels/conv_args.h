/* kernels/conv.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__CONV_ARGS_H
#define NN__CONV_ARGS_H

#endif
