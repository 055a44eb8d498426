/* kernels/conv3d.cl's kernel signatures (kernels/kargs.h says how to read them). */
#ifndef NN__CONV3D_ARGS_H
#define NN__CONV3D_ARGS_H

#endif
