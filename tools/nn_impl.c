/* The implementation of nn.h in a file of its own: the Makefile compiles it once
   (build/nn_impl.o) and links the examples and tests against it, each compiled with
   -DNN_IMPLEMENTATION_DONE so that their own #define NN_IMPLEMENTATION includes only the
   declarations (README.md, "Two files"). */
#define NN_IMPLEMENTATION
#include "nn.h"
