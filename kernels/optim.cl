/* Optimizer updates, one fused kernel per rule, PyTorch's semantics. `clip` points at the
   global-norm clipping coefficient (1.0 when clipping is off), computed on the device;
   `cv` clamps each clipped gradient element (FLT_MAX when off). A negative coefficient
   (skip_gate: a gradient holds NaN or Inf under skip_nonfinite) skips the update: the
   parameter and its state are left as they are. */
#include "kargs.h"
#include "storage.h"
#include "optim_args.h"
#include "optim.h"

/* clamp() of OpenCL C may turn NaN into a bound; PyTorch's updates keep NaN (and so make
   the parameter NaN), and so does this. */
inline float clamp_nan(float x, float lo, float hi) { return x > hi ? hi : x < lo ? lo : x; }

/* SGD with momentum, dampening, Nesterov and L2 weight decay (torch.optim.SGD) */
__kernel void sgd(NN__KPARAMS(sgd)) {
    int i = get_global_id(0);
    if (i >= n || clip[0] < 0.0f) return;
    float g = clamp_nan(grad[i] * clip[0], -cv, cv) + wd * p[i];
    if (momentum != 0.0f) {
        float b = first_step ? g : momentum * buf[i] + (1.0f - dampening) * g;
        buf[i] = b;
        g = nesterov ? g + momentum * b : b;
    }
    p[i] -= lr * g;
}

/* Adam (L2 decay into the gradient) or AdamW (decoupled: p *= 1 - lr*wd); bc1 and bc2 are
   1 - beta^t from the host */
/* one element of adam (and of opt_adam_vec's tail), c the clipping coefficient */
inline void adam_one(int i, __global float *p, __global const float *grad, __global float *m, __global float *v, float c,
                     float lr, float b1, float b2, float eps, float wd, int decoupled, float bc1, float bc2, float cv) {
    float g = clamp_nan(grad[i] * c, -cv, cv), w = p[i];
    if (decoupled) w *= 1.0f - lr * wd;
    else g += wd * w;
    float mi = b1 * m[i] + (1.0f - b1) * g;
    float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    p[i] = w - (lr / bc1) * mi / (sqrt(vi) * rsqrt(bc2) + eps);
}

__kernel void adam(NN__KPARAMS(adam)) {
    int i = get_global_id(0);
    if (i >= n || clip[0] < 0.0f) return;
    adam_one(i, p, grad, m, v, clip[0], lr, b1, b2, eps, wd, decoupled, bc1, bc2, cv);
}

/* adam on devices tuned as CPUs: 16 elements an item in float16s, the clip factor read once
   an item (the form above read it an element: PoCL made it a gather in every iteration and
   masked the rest), the last item's tail one at a time; each element's arithmetic as above.
   The float16s are read and written through float16 pointers, which needs p + i (and the
   others) 64-byte aligned: i is a multiple of 16, and every buffer and sub-buffer starts
   CL_DEVICE_MEM_BASE_ADDR_ALIGN aligned, at least the size of a long16 (128 bytes; an int16,
   64, in the embedded profile). PoCL 3.1 split each vstore16 into three stores (16, 16 and 32
   bytes): 3% of the MLP benchmark's step (an alignment test beside them kept that cost). */
inline void adam_vec16(int i, __global float *p, __global const float *grad, __global float *m, __global float *v,
                       int n, float c, float lr, float b1, float b2, float eps, float wd, int decoupled, float bc1,
                       float bc2, float cv) {
    if (i + 16 <= n) {
        __global float16 *p16 = (__global float16 *)(p + i), *m16 = (__global float16 *)(m + i);
        __global float16 *v16 = (__global float16 *)(v + i);
        float16 g = *(__global const float16 *)(grad + i) * c, w = *p16;
        g = select(g, (float16)(-cv), g < -cv);
        g = select(g, (float16)(cv), g > cv);
        if (decoupled) w *= 1.0f - lr * wd;
        else g += wd * w;
        float16 mi = b1 * *m16 + (1.0f - b1) * g;
        float16 vi = b2 * *v16 + (1.0f - b2) * g * g;
        *m16 = mi;
        *v16 = vi;
        *p16 = w - (lr / bc1) * mi / (sqrt(vi) * rsqrt(bc2) + eps);
        return;
    }
    for (; i < n; i++) adam_one(i, p, grad, m, v, c, lr, b1, b2, eps, wd, decoupled, bc1, bc2, cv);
}

__kernel void opt_adam_vec(NN__KPARAMS(adam)) {
    int i = get_global_id(0) * 16;
    if (i >= n || clip[0] < 0.0f) return;
    adam_vec16(i, p, grad, m, v, n, clip[0], lr, b1, b2, eps, wd, decoupled, bc1, bc2, cv);
}

/* adam6 on devices tuned as CPUs: parameter j's items follow those of 0..j-1, ceil(n.sj / 16)
   of them, each 16 elements as opt_adam_vec with the rate lr * lrm.sj and the decay wd.sj
   (the host's rate is the same float product, so each element's arithmetic is adam's) */
#define ADAM6_ONE(J)                                                                                                \
    if (it < n16 + (n.s##J + 15) / 16) {                                                                            \
        adam_vec16((it - n16) * 16, p##J, g##J, m##J, v##J, n.s##J, clip[0], lr * as_float(lrm.s##J), b1, b2, eps, \
                   as_float(wd.s##J), decoupled, bc1, bc2, cv);                                                     \
        return;                                                                                                     \
    }                                                                                                               \
    n16 += (n.s##J + 15) / 16;                                                                                      \
    if (count == J + 1) return;
__kernel void opt_adam_multi(NN__KPARAMS(adam6)) {
    int it = get_global_id(0), n16 = 0;
    if (clip[0] < 0.0f) return;
    ADAM6_ONE(0)
    ADAM6_ONE(1)
    ADAM6_ONE(2)
    ADAM6_ONE(3)
    ADAM6_ONE(4)
    ADAM6_ONE(5)
}
#undef ADAM6_ONE

/* adam over two parameters in one launch: work-items [0, n) update the first (p, lr, wd),
   [n, n + n1) the second (p1, lr1, wd1), each element as adam above: one launch
   instead of two for the update ops that the schedule runs back to back */
__kernel void adam2(NN__KPARAMS(adam2)) {
    int i = get_global_id(0);
    if (i >= n + n1 || clip[0] < 0.0f) return;
    if (i < n) adam_one(i, p, grad, m, v, clip[0], lr, b1, b2, eps, wd, decoupled, bc1, bc2, cv);
    else adam_one(i - n, p1, grad1, m1, v1, clip[0], lr1, b1, b2, eps, wd1, decoupled, bc1, bc2, cv);
}

/* The rest of the family: one kernel, the rule chosen by `kind` (nn_optimizer_kind, the
   same on every work-item; its NN_OPT_* names from kernels/optim.h). Each rule is the twin
   of nn__opt_rule in src/cpu/optim.c, which documents h (compile-time hyperparameters) and
   c (this update's constants). State s0..s2 is the parameter's aux buffers; unused ones are
   a dummy never written. */
__kernel void opt_step(NN__KPARAMS(opt_step)) {
    int i = get_global_id(0);
    if (i >= n || clip[0] < 0.0f) return;
    float g = clamp_nan(grad[i] * clip[0], -cv, cv), w = p[i];
    switch (kind) {
    case NN_OPT_ADAM: case NN_OPT_ADAMW: { /* AMSGrad */
        if (h3 != 0.0f) w *= 1.0f - lr * wd;
        else g += wd * w;
        float m = h0 * s0[i] + (1.0f - h0) * g, v = h1 * s1[i] + (1.0f - h1) * g * g;
        float vmax = fmax(s2[i], v);
        s0[i] = m;
        s1[i] = v;
        s2[i] = vmax;
        p[i] = w - lr * c0 * m / (sqrt(vmax) * c1 + eps);
        break;
    }
    case NN_OPT_ADAMAX: {
        g += wd * w;
        float m = h0 * s0[i] + (1.0f - h0) * g, u = fmax(h1 * s1[i], fabs(g) + eps);
        s0[i] = m;
        s1[i] = u;
        p[i] = w - lr * c0 * m / u;
        break;
    }
    case NN_OPT_NADAM: {
        if (h3 != 0.0f) w *= 1.0f - lr * wd;
        else g += wd * w;
        float m = h0 * s0[i] + (1.0f - h0) * g, v = h1 * s1[i] + (1.0f - h1) * g * g;
        s0[i] = m;
        s1[i] = v;
        p[i] = w - lr * (c1 * g + c2 * m) / (sqrt(v * c0) + eps);
        break;
    }
    case NN_OPT_RADAM: {
        if (h3 != 0.0f) w *= 1.0f - lr * wd;
        else g += wd * w;
        float m = h0 * s0[i] + (1.0f - h0) * g, v = h1 * s1[i] + (1.0f - h1) * g * g;
        s0[i] = m;
        s1[i] = v;
        p[i] = c2 != 0.0f ? w - lr * c0 * m * c1 / (sqrt(v) + eps) : w - lr * c0 * m;
        break;
    }
    case NN_OPT_RMSPROP: {
        g += wd * w;
        float sq = h0 * s0[i] + (1.0f - h0) * g * g, avg;
        s0[i] = sq;
        if (h4 != 0.0f) {
            float ga = h0 * s1[i] + (1.0f - h0) * g;
            s1[i] = ga;
            avg = sqrt(sq - ga * ga) + eps;
        } else {
            avg = sqrt(sq) + eps;
        }
        if (h3 > 0.0f) {
            float b = h3 * s2[i] + g / avg;
            s2[i] = b;
            p[i] = w - lr * b;
        } else {
            p[i] = w - lr * g / avg;
        }
        break;
    }
    case NN_OPT_ADAGRAD: {
        g += wd * w;
        float s = (c3 != 0.0f ? h4 : s0[i]) + g * g;
        s0[i] = s;
        p[i] = w - lr * c0 * g / (sqrt(s) + eps);
        break;
    }
    case NN_OPT_ADADELTA: {
        g += wd * w;
        float sq = h0 * s0[i] + (1.0f - h0) * g * g;
        float d = sqrt(s1[i] + eps) / sqrt(sq + eps) * g;
        s0[i] = sq;
        s1[i] = h0 * s1[i] + (1.0f - h0) * d * d;
        p[i] = w - lr * d;
        break;
    }
    case NN_OPT_LION: {
        float u = h0 * s0[i] + (1.0f - h0) * g;
        w *= 1.0f - lr * wd;
        p[i] = w - lr * (float)((u > 0.0f) - (u < 0.0f));
        s0[i] = h1 * s0[i] + (1.0f - h1) * g;
        break;
    }
    case NN_OPT_LAMB: { /* first pass: the update u into s2 (the node's scratch) */
        float m = h0 * s0[i] + (1.0f - h0) * g, v = h1 * s1[i] + (1.0f - h1) * g * g;
        s0[i] = m;
        s1[i] = v;
        s2[i] = m * c0 / (sqrt(v) * c1 + eps) + wd * w;
        break;
    }
    case NN_OPT_LARS: { /* norms: sums of squares of w and g from opt_norms */
        float wn = sqrt(norms[0]), gn = sqrt(norms[1]);
        float trust = wn > 0.0f && gn > 0.0f ? h4 * wn / (gn + wd * wn + eps) : 1.0f;
        g = (g + wd * w) * trust;
        if (h0 != 0.0f) {
            float b = c3 != 0.0f ? g : h0 * s0[i] + (1.0f - h1) * g;
            s0[i] = b;
            g = h3 != 0.0f ? g + h0 * b : b;
        }
        p[i] = w - lr * g;
        break;
    }
    case NN_OPT_FTRL: {
        float n0 = c3 != 0.0f ? h4 : s0[i], n1 = n0 + g * g;
        float p1 = pow(n1, -h3), p0 = pow(n0, -h3);
        float z = s1[i] + g - (p1 - p0) / lr * w;
        float beta = eps; /* h2 is FTRL's beta */
        float q = (p1 + beta) / lr + 2.0f * h1;
        s1[i] = z;
        s0[i] = n1;
        p[i] = fabs(z) > h0 ? ((z > 0.0f ? h0 : -h0) - z) / q : 0.0f;
        break;
    }
    default: break;
    }
}

/* out[off] = sum(p^2), out[off + 1] = sum(clamp(x * clip, +-cv)^2): one work-group of a
   power-of-two size (tmp holds two floats per item), a strided pass then a tree, so the
   order is fixed. LARS: x = the gradient; LAMB: x = its update u. */
__kernel void opt_norms(NN__KPARAMS(opt_norms)) {
    int l = get_local_id(0), wg = get_local_size(0);
    float a = 0.0f, b = 0.0f, c = clip[0];
    for (int i = l; i < n; i += wg) {
        float v = clamp_nan(x[i] * c, -cv, cv);
        a += p[i] * p[i];
        b += v * v;
    }
    tmp[2 * l] = a;
    tmp[2 * l + 1] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = wg / 2; o > 0; o >>= 1) {
        if (l < o) {
            tmp[2 * l] += tmp[2 * (l + o)];
            tmp[2 * l + 1] += tmp[2 * (l + o) + 1];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) {
        out[off] = tmp[0];
        out[off + 1] = tmp[1];
    }
}

/* LAMB's second pass: p -= lr * trust * u, trust = |w| / |u| (1 when either is 0); u and
   its norms (at u[n], u[n + 1]) are the scratch the first pass and opt_norms wrote. */
__kernel void lamb_apply(NN__KPARAMS(lamb_apply)) {
    int i = get_global_id(0);
    if (i >= n || clip[0] < 0.0f) return;
    float wn = sqrt(u[n]), un = sqrt(u[n + 1]);
    p[i] -= lr * (wn > 0.0f && un > 0.0f ? wn / un : 1.0f) * u[i];
}

/* skip_nonfinite: out[0] = (has_prev ? prev[0] : 0) + the number of NaN and Inf in x[n].
   One work-group; the count is an int tree, exact. */
__kernel void nonfinite_count(NN__KPARAMS(nonfinite_count)) {
    int l = get_local_id(0), wg = get_local_size(0), c = 0;
    for (int i = l; i < n; i += wg) c += isfinite(x[i]) ? 0 : 1;
    tmp[l] = c;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = wg / 2; o > 0; o >>= 1) {
        if (l < o) tmp[l] += tmp[l + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[0] = (has_prev ? prev[0] : 0.0f) + (float)tmp[0];
}

/* y[0] = -1 when cnt[0] > 0 (the updates skip), else the clipping coefficient clip[0];
   y[1] counts the skipped updates (the node's buffer persists across steps). */
__kernel void skip_gate(NN__KPARAMS(skip_gate)) {
    if (get_global_id(0) != 0) return;
    int skip = cnt[0] != 0.0f;
    y[0] = skip ? -1.0f : clip[0];
    y[1] += skip ? 1.0f : 0.0f;
}

/* Loss scaling (src/ops/optim.c's LOSS_SCALE, which gives y's layout): y[0] the updates'
   coefficient (-1: skip), y[1] skipped updates, y[2] the next scale, y[3] good updates in a
   row, y[4] 1 once y[2] is set (before: init). One work-item. */
__kernel void loss_scale(NN__KPARAMS(loss_scale)) {
    if (get_global_id(0) != 0) return;
    float s = y[4] != 0.0f ? y[2] : init, inv = 1.0f / s;
    float ss = has_sumsq ? sumsq[0] : 0.0f;
    if (cnt[0] != 0.0f || !isfinite(ss)) {
        y[0] = -1.0f;
        y[1] += 1.0f;
        y[2] = s * backoff;
        y[3] = 0.0f;
    } else {
        float c = inv, t = y[3] + 1.0f;
        if (has_sumsq) {
            float cl = max_norm / (sqrt(ss) * inv + 1e-6f);
            c = (cl > 1.0f ? 1.0f : cl) * inv;
        }
        y[0] = c;
        y[2] = t >= interval && isfinite(s * growth) ? s * growth : s;
        y[3] = t >= interval ? 0.0f : t;
    }
    y[4] = 1.0f;
}

/* the loss's gradient seeded with the scale: y[n] = st[4] != 0 ? st[2] : init */
__kernel void loss_seed(NN__KPARAMS(loss_seed)) {
    int i = get_global_id(0);
    if (i >= n) return;
    y[i] = st[4] != 0.0f ? st[2] : init;
}

/* Gradient accumulation: acc = (reset ? 0 : acc) + g * inv_k, the running mean of a cycle. */
__kernel void grad_acc(NN__KPARAMS(grad_acc)) {
    int i = get_global_id(0);
    if (i >= n) return;
    acc[i] = (reset ? 0.0f : acc[i]) + g[i] * inv_k;
}

/* 16-bit parameters (nn_graph_desc.param_dtype; the program built for their storage type):
   the rule runs on a float32 copy w in the update's scratch, widened before and rounded back
   after (nn_optimizer.stochastic_rounding: stochastically, kernels/storage.h). A skipped
   update leaves w as widened, which rounds back to the same bits either way. */
__kernel void param_widen(NN__KPARAMS(param_widen)) {
    int i = get_global_id(0);
    if (i >= n) return;
    w[i] = NN__SLOAD(p, i);
}

__kernel void param_round(NN__KPARAMS(param_round)) {
    int i = get_global_id(0);
    if (i >= n) return;
#if defined(NN_STORE_BF16)
    if (sr) {
        p[i] = nn__f32_to_bf16_sr(w[i], nn__sr_bits((uint)i, key));
        return;
    }
#endif
    NN__SSTORE(p, i, w[i]);
}
