#include "kargs.h"
#include "storage.h"
#include "cast_args.h"

/* nn_to_dtype's kernels, the twins of src/cpu/cast.c: one work-item per element. Built per
   storage type (-DNN_STORE_BF16 / -DNN_STORE_F16, kernels/storage.h): cast_store rounds
   float32 x into storage y, cast_load widens storage x into float32 y (built with neither,
   both are copies). */
__kernel void cast_store(NN__KPARAMS(cast_store)) {
    int i = get_global_id(0);
    if (i >= n) return;
    NN__SSTORE(y, i, x[i]);
}

__kernel void cast_load(NN__KPARAMS(cast_load)) {
    int i = get_global_id(0);
    if (i >= n) return;
    y[i] = NN__SLOAD(x, i);
}

/* 16 bits to 16 bits (from, to: 1 bfloat16, 2 float16), through float32 */
__kernel void cast_half(NN__KPARAMS(cast_half)) {
    int i = get_global_id(0);
    if (i >= n) return;
    float v = from == 1 ? NN__LD_BF16(x, i) : NN__LD_F16(x, i);
    if (to == 1) NN__ST_BF16(y, i, v);
    else NN__ST_F16(y, i, v);
}
