/* kernels/shape.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__SHAPE_ARGS_H
#define NN__SHAPE_ARGS_H

#endif
