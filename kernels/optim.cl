/* Optimizer updates, one fused kernel per rule, PyTorch's semantics. `clip` points at the
   global-norm clipping coefficient (1.0 when clipping is off), computed on the device. */

/* SGD with momentum, dampening, Nesterov and L2 weight decay (torch.optim.SGD) */
__kernel void sgd(__global float *p, __global const float *grad, __global float *buf, __global const float *clip,
                  const int n, const float lr, const float momentum, const float dampening, const float wd,
                  const int nesterov, const int first_step) {
    int i = get_global_id(0);
    if (i >= n) return;
    float g = grad[i] * clip[0] + wd * p[i];
    if (momentum != 0.0f) {
        float b = first_step ? g : momentum * buf[i] + (1.0f - dampening) * g;
        buf[i] = b;
        g = nesterov ? g + momentum * b : b;
    }
    p[i] -= lr * g;
}

/* Adam (L2 decay into the gradient) or AdamW (decoupled: p *= 1 - lr*wd); bc1 and bc2 are
   1 - beta^t from the host */
__kernel void adam(__global float *p, __global const float *grad, __global float *m, __global float *v,
                   __global const float *clip, const int n, const float lr, const float b1, const float b2,
                   const float eps, const float wd, const int decoupled, const float bc1, const float bc2) {
    int i = get_global_id(0);
    if (i >= n) return;
    float g = grad[i] * clip[0], w = p[i];
    if (decoupled) w *= 1.0f - lr * wd;
    else g += wd * w;
    float mi = b1 * m[i] + (1.0f - b1) * g;
    float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    p[i] = w - (lr / bc1) * mi / (sqrt(vi) * rsqrt(bc2) + eps);
}
