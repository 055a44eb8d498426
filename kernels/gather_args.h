/* kernels/gather.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__GATHER_ARGS_H
#define NN__GATHER_ARGS_H

#endif
