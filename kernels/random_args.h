/* kernels/random.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__RANDOM_ARGS_H
#define NN__RANDOM_ARGS_H

#endif
