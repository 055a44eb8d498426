/* nn_to_dtype on the CPU backend (src/ops/cast.c; kernels/cast.cl is the twin): n elements
   of x, of storage type `from`, into y of type `to`, through float32 (kernels/storage.h),
   the same bits as the kernels. */
#include "../../kernels/storage.h"

typedef struct nn__cast_job {
    const void *x;
    void *y;
    nn_dtype from, to;
} nn__cast_job;

static void nn__cast_range(void *arg, int64_t i0, int64_t i1) {
    const nn__cast_job *j = (const nn__cast_job *)arg;
    const float *xf = (const float *)j->x;
    const uint16_t *xh = (const uint16_t *)j->x;
    float *yf = (float *)j->y;
    uint16_t *yh = (uint16_t *)j->y;
    int64_t i;
    if (j->to == NN_F32 && (j->from == NN_BF16 || j->from == NN_F16)) { /* widening: the CPU's vector path */
        nn__g16_cvt_fn cvt = nn__g16_widen_fn(j->from == NN_BF16 ? NN__G16_BF16 : NN__G16_F16);
        for (i = i0; i < i1; i += 1 << 20) cvt(xh + i, yf + i, (int)(i1 - i < (1 << 20) ? i1 - i : 1 << 20));
        return;
    }
    if (j->from == NN_F32 && (j->to == NN_BF16 || j->to == NN_F16)) { /* rounding: the same */
        nn__g16_nar_fn nar = nn__g16_narrow_fn(j->to == NN_BF16 ? NN__G16_BF16 : NN__G16_F16);
        for (i = i0; i < i1; i += 1 << 20) nar(xf + i, yh + i, (int)(i1 - i < (1 << 20) ? i1 - i : 1 << 20));
        return;
    }
    for (i = i0; i < i1; i++) {
        float v = j->from == NN_BF16 ? NN__LD_BF16(xh, i) : j->from == NN_F16 ? NN__LD_F16(xh, i) : xf[i];
        if (j->to == NN_BF16) NN__ST_BF16(yh, i, v);
        else if (j->to == NN_F16) NN__ST_F16(yh, i, v);
        else yf[i] = v;
    }
}

static void nn__cast(nn__threadpool *pool, const void *x, nn_dtype from, void *y, nn_dtype to, int64_t n) {
    nn__cast_job j;
    j.x = x;
    j.y = y;
    j.from = from;
    j.to = to;
    nn__par_for(pool, n, n, nn__cast_range, &j);
}
