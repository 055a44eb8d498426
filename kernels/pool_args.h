/* kernels/pool.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__POOL_ARGS_H
#define NN__POOL_ARGS_H

#endif
