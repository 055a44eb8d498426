/* What the kernels that src/ops/fuse.c generates for chains of elementwise nodes stand on:
   the formulas of kernels/activation.h (the generated text follows this file's, one kernel
   "fused" per program, a statement per node of the chain, with the same expressions as
   kernels/elementwise.cl's kernels: the same bits). */
#include "activation.h"

/* i % m for i in [0, n), m >= 1, as the chains' bias operands read on devices tuned as CPUs
   (src/ops/fuse.c writes it there; GPUs keep i % m): an integer division an element does
   not vectorise (x86 has no vector one: PoCL ran it scalar), a float reciprocal does. For
   n <= 2^22 the float estimate of i / m is within 1/2 of it (three roundings of 2^-24 each),
   so its truncation is the quotient or one off, which the two corrections fix: the same
   remainder. */
inline int nn_fuse_mod(int i, int m, int n) {
    if (n > (1 << 22)) return i % m;
    int t = i - (int)((float)i * (1.0f / (float)m)) * m;
    t += t < 0 ? m : 0;
    return t >= m ? t - m : t;
}
