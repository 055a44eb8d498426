/* What the kernels that src/ops/fuse.c generates for chains of elementwise nodes stand on:
   the formulas of kernels/activation.h (the generated text follows this file's, one kernel
   "fused" per program, a statement per node of the chain, with the same expressions as
   kernels/elementwise.cl's kernels: the same bits), and nn_fuse_mod, the remainder the bias
   operands read by on devices tuned as CPUs. */
#include "activation.h"
