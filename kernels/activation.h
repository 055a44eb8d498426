/* The elementwise functions, each formula written once for both backends. This file is a
   part of nn.h (C99 and C++: the CPU backend's loops in src/cpu/elementwise.c and the
   vector ones in src/cpu/simd.c, the builders in src/ops/elementwise/unary.c and
   binary.c) and is included by kernels/elementwise.cl and kernels/loss.cl (OpenCL C 1.2:
   their kernels), so it uses only what the two languages share; the math functions go by
   NN__EXP and friends, expf in C and exp in OpenCL C.

   NN__ACTIVATIONS(X), NN__MATH(X) and NN__NOGRAD(X) list the functions of the unary ops
   (UNARY; UNARY_NOGRAD for NN__NOGRAD's), one X(ENUM, name, params, valid, forward,
   derivative) each:
     ENUM        NN__U_ENUM, the op's function (the node's a.ew.fn)
     name        the builder nn_<name> (declared in src/api/api.h) and the kernels
                 <name>_forward / <name>_backward of kernels/elementwise.cl
     params      how many float parameters follow x in the builder (0, 1 or 2): p0 and p1
                 in the formulas, the node's a.ew.param[0] and a.ew.param[1]
     valid       what the builder requires of p0 and p1 (1: anything)
     forward     y as an expression of the input v (float), p0 and p1
     derivative  dy/dv the same way; at a kink, the value PyTorch's backward gives
   A comparison is written so that NaN takes the branch PyTorch's takes (relu(NaN) is NaN
   and its gradient passes, since v <= 0 is false for NaN; clamps keep NaN), and infinities
   give what PyTorch's formula gives (tests/test_nanprop.c).
   A function is a line here (with helpers above the table when its formula needs
   statements), its declaration in src/api/api.h and its cases in tests/test_activation.c.
   Formulas follow PyTorch's definitions (ATen's CPU kernels); where an equal expression is
   safer in float (softplus without overflow, expm1 near 0) that one is used.
   NN__BINARY_FNS(X), at the end, lists the binary ops' functions the same way. */
#ifndef NN__ACTIVATION_H
#define NN__ACTIVATION_H

#ifdef __OPENCL_VERSION__
/* No contraction in the kernels that include this file (elementwise, loss, the generated
   fused chains): the CPU backend does not contract (src/base/fp_begin.h), and a fused chain
   must give its unfused nodes' bits; drivers contract a * b + c by default (NVIDIA does). */
#pragma OPENCL FP_CONTRACT OFF
#define NN__EXP exp
#define NN__EXPM1 expm1
#define NN__LOG1P log1p
#define NN__TANH tanh
#define NN__ERF erf
#define NN__FABS fabs
#define NN__LOG log
#define NN__SQRT sqrt
#define NN__SIN sin
#define NN__COS cos
#define NN__FLOOR floor
#define NN__RINT rint
#define NN__POW pow
#else
#include <math.h>
#define NN__EXP expf
#define NN__EXPM1 expm1f
#define NN__LOG1P log1pf
#define NN__TANH tanhf
#define NN__ERF erff
#define NN__FABS fabsf
#define NN__LOG logf
#define NN__SQRT sqrtf
#define NN__SIN sinf
#define NN__COS cosf
#define NN__FLOOR floorf
#define NN__RINT rintf /* round half to even in the default rounding mode, as torch.round */
#define NN__POW powf
#endif

static inline float nn__act_sigmoid(float v) { return 1.0f / (1.0f + NN__EXP(-v)); }
static inline float nn__act_sigmoid_der(float v) {
    float s = nn__act_sigmoid(v);
    return s * (1.0f - s);
}
static inline float nn__act_tanh_der(float v) {
    float t = NN__TANH(v);
    return 1.0f - t * t;
}
/* the exact GELU: x * Phi(x), with Phi'(x) = exp(-x^2/2) / sqrt(2 pi) */
static inline float nn__act_gelu(float v) { return 0.5f * v * (1.0f + NN__ERF(v * 0.70710678118654752f)); }
static inline float nn__act_gelu_der(float v) {
    return 0.5f * (1.0f + NN__ERF(v * 0.70710678118654752f)) + v * 0.39894228040143268f * NN__EXP(-0.5f * v * v);
}
/* GELU's tanh approximation (PyTorch's approximate="tanh"): 0.5 x (1 + tanh(u)), u =
   sqrt(2/pi) (x + 0.044715 x^3), and its derivative as PyTorch writes it:
   0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2);
   t is exactly +-1 beyond |u| = 10 (where float's tanh is), since an OpenCL tanh may stop an
   ulp short of 1 at +-inf, where PyTorch's -inf * 0 and 0 * inf give NaN. */
static inline float nn__act_gelu_tanh_t(float v) {
    float u = 0.79788456080286536f * (v + 0.044715f * (v * v * v));
    return u > 10.0f ? 1.0f : u < -10.0f ? -1.0f : NN__TANH(u);
}
static inline float nn__act_gelu_tanh(float v) { return 0.5f * v * (1.0f + nn__act_gelu_tanh_t(v)); }
static inline float nn__act_gelu_tanh_der(float v) {
    float t = nn__act_gelu_tanh_t(v);
    return 0.5f * (1.0f + t) + 0.5f * v * ((1.0f - t * t) * (0.79788456080286536f * (1.0f + 0.134145f * (v * v))));
}
static inline float nn__act_silu_der(float v) {
    float s = nn__act_sigmoid(v);
    return s * (1.0f + v * (1.0f - s));
}
/* leaky ReLU with slope w; PReLU (its own op, with w learned per channel) uses these too */
static inline float nn__act_leaky(float v, float w) { return v > 0.0f ? v : w * v; }
static inline float nn__act_leaky_der(float v, float w) { return v > 0.0f ? 1.0f : w; }
static inline float nn__act_leaky_dslope(float v) { return v > 0.0f ? 0.0f : v; } /* d/dw */

/* SELU with PyTorch's constants (Klambauer et al.): scale 1.0507..., scale * alpha 1.7581... */
static inline float nn__act_selu(float v) {
    return v > 0.0f ? 1.05070098735548049342f * v : 1.75809934084737685994f * NN__EXPM1(v);
}
static inline float nn__act_selu_der(float v) {
    return v > 0.0f ? 1.05070098735548049342f : 1.75809934084737685994f * NN__EXP(v);
}

/* log(1 + exp(z)) without overflow for large z */
static inline float nn__act_softplus(float z) { return (z > 0.0f ? z : 0.0f) + NN__LOG1P(NN__EXP(-NN__FABS(z))); }

/* at +-inf PyTorch's formula gives NaN (inf * 0); (v - v), 0 for finite v, says so
   explicitly, since an OpenCL tanh may stop an ulp short of 1 there */
static inline float nn__act_mish_der(float v) {
    float t = NN__TANH(nn__act_softplus(v));
    return t + v * nn__act_sigmoid(v) * (1.0f - t * t) + (v - v);
}

/* v clamped to [lo, hi]; NaN stays NaN, as with PyTorch's min(max(v, lo), hi) */
static inline float nn__act_clamp(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

/* PyTorch's softsign is x / (1 + |x|) through autograd, whose derivative is NaN at +-inf
   (inf / inf): (v - v) is 0 for finite v and NaN there */
static inline float nn__act_softsign_der(float v) {
    float d = 1.0f + NN__FABS(v);
    return 1.0f / (d * d) + (v - v);
}

#define NN__ACTIVATIONS(X)                                                                                  \
    X(RELU, relu, 0, 1, v <= 0.0f ? 0.0f : v, v <= 0.0f ? 0.0f : 1.0f)                                      \
    X(LEAKY_RELU, leaky_relu, 1, 1, nn__act_leaky(v, p0), nn__act_leaky_der(v, p0))                         \
    X(SIGMOID, sigmoid, 0, 1, nn__act_sigmoid(v), nn__act_sigmoid_der(v))                                   \
    X(TANH, tanh, 0, 1, NN__TANH(v), nn__act_tanh_der(v))                                                   \
    X(GELU, gelu, 0, 1, nn__act_gelu(v), nn__act_gelu_der(v))                                               \
    X(SILU, silu, 0, 1, v / (1.0f + NN__EXP(-v)), nn__act_silu_der(v))                                      \
    X(ELU, elu, 1, 1, v > 0.0f ? v : p0 * NN__EXPM1(v), v > 0.0f ? 1.0f : p0 * NN__EXP(v))                  \
    X(SELU, selu, 0, 1, nn__act_selu(v), nn__act_selu_der(v))                                               \
    X(CELU, celu, 1, p0 != 0.0f, v > 0.0f ? v : p0 * NN__EXPM1(v / p0), v > 0.0f ? 1.0f : NN__EXP(v / p0))  \
    X(SOFTPLUS, softplus, 2, p0 != 0.0f, v * p0 > p1 ? v : nn__act_softplus(v * p0) / p0,                   \
      v * p0 > p1 ? 1.0f : nn__act_sigmoid(v * p0))                                                         \
    X(MISH, mish, 0, 1, v * NN__TANH(nn__act_softplus(v)), nn__act_mish_der(v))                             \
    X(HARDSWISH, hardswish, 0, 1, v * nn__act_clamp(v + 3.0f, 0.0f, 6.0f) / 6.0f,                           \
      v < -3.0f ? 0.0f : v <= 3.0f ? v / 3.0f + 0.5f : 1.0f)                                                \
    X(HARDSIGMOID, hardsigmoid, 0, 1, nn__act_clamp(v + 3.0f, 0.0f, 6.0f) / 6.0f,                           \
      v > -3.0f && v < 3.0f ? 1.0f / 6.0f : 0.0f)                                                           \
    X(HARDTANH, hardtanh, 2, p0 <= p1, nn__act_clamp(v, p0, p1), v <= p0 || v >= p1 ? 0.0f : 1.0f)          \
    X(RELU6, relu6, 0, 1, nn__act_clamp(v, 0.0f, 6.0f), v <= 0.0f || v >= 6.0f ? 0.0f : 1.0f)               \
    X(SOFTSIGN, softsign, 0, 1, v / (1.0f + NN__FABS(v)), nn__act_softsign_der(v))                          \
    X(LOG_SIGMOID, log_sigmoid, 0, 1, (v < 0.0f ? v : 0.0f) - NN__LOG1P(NN__EXP(-NN__FABS(v))),             \
      nn__act_sigmoid(-v))                                                                                  \
    X(GELU_TANH, gelu_tanh, 0, 1, nn__act_gelu_tanh(v), nn__act_gelu_tanh_der(v))

/* Elementwise math (torch.exp, torch.clamp, ...), the same columns as NN__ACTIVATIONS and
   the same op (UNARY): a line each, its builder nn_<name> and kernels stamped the same way.
   Derivatives are PyTorch's (ATen's derivatives.yaml): abs's is sign(x), 0 at 0; sqrt's is
   1 / (2 sqrt(x)), inf at 0; floor, round and sign have 0. */

/* x clamped to [lo, hi], a NaN bound meaning none: min(max(x, lo), hi) as torch.clamp
   (lo > hi gives hi everywhere); a NaN x stays NaN. */
static inline float nn__ew_clamp(float v, float lo, float hi) {
    float t = (lo == lo && v < lo) ? lo : v;
    return (hi == hi && t > hi) ? hi : t;
}
/* torch.clamp's gradient: 1 where lo <= x <= hi (bounds included), an absent bound passing */
static inline float nn__ew_clamp_der(float v, float lo, float hi) {
    return (lo != lo || v >= lo) && (hi != hi || v <= hi) ? 1.0f : 0.0f;
}
static inline float nn__ew_sign(float v) { return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : 0.0f; } /* NaN: 0, as ATen */
static inline float nn__ew_rsqrt(float v) { return 1.0f / NN__SQRT(v); }
/* x ** p and its gradient p * x ** (p - 1), 0 for p == 0 (PyTorch's pow_backward) */
static inline float nn__ew_pow_der(float v, float p) { return p == 0.0f ? 0.0f : p * NN__POW(v, p - 1.0f); }

#define NN__MATH(X)                                                                                         \
    X(NEG, neg, 0, 1, -v, -1.0f)                                                                            \
    X(ABS, abs, 0, 1, NN__FABS(v), nn__ew_sign(v))                                                          \
    X(SIGN, sign, 0, 1, nn__ew_sign(v), 0.0f)                                                               \
    X(EXP, exp, 0, 1, NN__EXP(v), NN__EXP(v))                                                               \
    X(EXPM1, expm1, 0, 1, NN__EXPM1(v), NN__EXP(v))                                                         \
    X(LOG, log, 0, 1, NN__LOG(v), 1.0f / v)                                                                 \
    X(LOG1P, log1p, 0, 1, NN__LOG1P(v), 1.0f / (1.0f + v))                                                  \
    X(SQRT, sqrt, 0, 1, NN__SQRT(v), 0.5f / NN__SQRT(v))                                                    \
    X(RSQRT, rsqrt, 0, 1, nn__ew_rsqrt(v), -0.5f * nn__ew_rsqrt(v) / v)                                     \
    X(RECIPROCAL, reciprocal, 0, 1, 1.0f / v, -1.0f / (v * v))                                              \
    X(SQUARE, square, 0, 1, v * v, 2.0f * v)                                                                \
    X(SIN, sin, 0, 1, NN__SIN(v), NN__COS(v))                                                               \
    X(COS, cos, 0, 1, NN__COS(v), -NN__SIN(v))                                                              \
    X(ERF, erf, 0, 1, NN__ERF(v), 1.12837916709551257f * NN__EXP(-v * v))                                   \
    X(FLOOR, floor, 0, 1, NN__FLOOR(v), 0.0f)                                                               \
    X(ROUND, round, 0, 1, NN__RINT(v), 0.0f)                                                                \
    X(CLAMP, clamp, 2, 1, nn__ew_clamp(v, p0, p1), nn__ew_clamp_der(v, p0, p1))                             \
    X(ADD_SCALAR, add_scalar, 1, 1, v + p0, 1.0f)                                                           \
    X(POW_SCALAR, pow_scalar, 1, 1, NN__POW(v, p0), nn__ew_pow_der(v, p0))

/* Functions with no gradient at all (op UNARY_NOGRAD: nothing flows back through them). */
#define NN__NOGRAD(X)                                                                                       \
    X(DETACH, detach, 0, 1, v, 0.0f)                                                                        \
    X(LOGICAL_NOT, logical_not, 0, 1, v == 0.0f ? 1.0f : 0.0f, 0.0f)

/* Every function of the unary ops, in enum order. */
#define NN__UNARY_ALL(X) NN__ACTIVATIONS(X) NN__MATH(X) NN__NOGRAD(X)

/* The binary functions, broadcast over both operands (NumPy's rules):
   X(ENUM, name, forward, d/du, d/dw) of u (the first operand) and w (the second). minimum
   and maximum propagate NaN and split the gradient half and half on ties (PyTorch's);
   pow's d/dw is 0 where u == 0 and w >= 0, as PyTorch's pow_backward_exponent. The
   comparisons and logical ops (float 0/1 masks, nonzero is true) have no gradient. */
#define NN__BINARY_FNS(X)                                                                                   \
    X(ADD, add, u + w, 1.0f, 1.0f)                                                                          \
    X(SUB, sub, u - w, 1.0f, -1.0f)                                                                         \
    X(MUL, mul, u * w, w, u)                                                                                \
    X(DIV, div, u / w, 1.0f / w, -u / (w * w))                                                              \
    X(MINIMUM, minimum, (u != u || w != w) ? u + w : u < w ? u : w, u == w ? 0.5f : u > w ? 0.0f : 1.0f,    \
      u == w ? 0.5f : u < w ? 0.0f : 1.0f)                                                                  \
    X(MAXIMUM, maximum, (u != u || w != w) ? u + w : u > w ? u : w, u == w ? 0.5f : u < w ? 0.0f : 1.0f,    \
      u == w ? 0.5f : u > w ? 0.0f : 1.0f)                                                                  \
    X(POW, pow, NN__POW(u, w), nn__ew_pow_der(u, w), (u == 0.0f && w >= 0.0f) ? 0.0f : NN__POW(u, w) * NN__LOG(u)) \
    X(EQ, eq, u == w ? 1.0f : 0.0f, 0.0f, 0.0f)                                                             \
    X(NE, ne, u != w ? 1.0f : 0.0f, 0.0f, 0.0f)                                                             \
    X(LT, lt, u < w ? 1.0f : 0.0f, 0.0f, 0.0f)                                                              \
    X(LE, le, u <= w ? 1.0f : 0.0f, 0.0f, 0.0f)                                                             \
    X(GT, gt, u > w ? 1.0f : 0.0f, 0.0f, 0.0f)                                                              \
    X(GE, ge, u >= w ? 1.0f : 0.0f, 0.0f, 0.0f)                                                             \
    X(LOGICAL_AND, logical_and, (u != 0.0f && w != 0.0f) ? 1.0f : 0.0f, 0.0f, 0.0f)                         \
    X(LOGICAL_OR, logical_or, (u != 0.0f || w != 0.0f) ? 1.0f : 0.0f, 0.0f, 0.0f)

/* The enums: NN__U_* a unary function, NN__B_* a binary one (shared with the kernels, which
   take the function as an argument). */
enum {
#define NN__X(E, name, params, valid, fwd, der) NN__U_##E,
    NN__UNARY_ALL(NN__X)
#undef NN__X
    NN__U_COUNT
};
enum {
#define NN__X(E, name, fwd, da, db) NN__B_##E,
    NN__BINARY_FNS(NN__X)
#undef NN__X
    NN__B_COUNT
};
#ifdef __OPENCL_VERSION__
/* i % m for i in [0, n), m >= 1, as the chains' bias operands read on devices tuned as CPUs
   (src/ops/fuse.c writes it in the generated kernels, fused and GEMM epilogues; GPUs keep
   i % m): an integer division an element does
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
#endif
#endif /* NN__ACTIVATION_H */
