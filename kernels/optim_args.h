/* kernels/optim.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__OPTIM_ARGS_H
#define NN__OPTIM_ARGS_H

#endif
