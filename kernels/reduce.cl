/* Reductions to a scalar: one work-group, a strided pass then a tree, so the order of the
   additions is fixed and the result is the same run to run. The work-group size (a power
   of two) is the size of `tmp`. */

inline float nn_tree(__local float *tmp, float s) {
    int l = get_local_id(0);
    tmp[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = get_local_size(0) / 2; o > 0; o >>= 1) {
        if (l < o) tmp[l] += tmp[l + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return tmp[0];
}

/* y[0] = scale * sum(x) */
__kernel void sum_all(__global const float *x, __global float *y, const int n, const float scale,
                      __local float *tmp) {
    float s = 0.0f;
    for (int i = get_local_id(0); i < n; i += get_local_size(0)) s += x[i];
    s = nn_tree(tmp, s);
    if (get_local_id(0) == 0) y[0] = s * scale;
}

/* y[0] = (has_prev ? prev[0] : 0) + sum(g^2): a chain over all gradients for clipping */
__kernel void grad_sumsq(__global const float *g, __global const float *prev, __global float *y, const int n,
                         const int has_prev, __local float *tmp) {
    float s = 0.0f;
    for (int i = get_local_id(0); i < n; i += get_local_size(0)) s += g[i] * g[i];
    s = nn_tree(tmp, s);
    if (get_local_id(0) == 0) y[0] = (has_prev ? prev[0] : 0.0f) + s;
}

/* PyTorch's clip_grad_norm_: coefficient min(1, max_norm / (norm + 1e-6)) */
__kernel void clip_scale(__global const float *sumsq, __global float *y, const float max_norm) {
    /* not fmin: a NaN norm must give NaN (torch's clamp keeps it), not 1 */
    float c = max_norm / (sqrt(sumsq[0]) + 1e-6f);
    if (get_global_id(0) == 0) y[0] = c > 1.0f ? 1.0f : c;
}
