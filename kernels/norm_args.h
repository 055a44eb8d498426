/* kernels/norm.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__NORM_ARGS_H
#define NN__NORM_ARGS_H

#endif
