/* kernels/loss.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__LOSS_ARGS_H
#define NN__LOSS_ARGS_H

#endif
