/* The CPU backend's op bodies (GEMM is in nn_cpu_gemm.c). Plain loops over flat arrays,
   llm.c style: one _forward / _backward pair per op, shapes in the comments. Each has a
   twin kernel in kernels/ that must compute the same thing. */

#include "../kernels/activation.h"

/* ---- activations: the formulas of kernels/activation.h, one loop each ---- */

/* c ? a : 0.0f without a branch: ReLU's sign test is a coin flip on real activations, and
   a mispredicted branch per element made ReLU cost more than the convolution beside it.
   ReLU's c is !(x <= 0), one compare like x > 0, but true for NaN: relu(NaN) is NaN and
   its gradient passes, as PyTorch's. */
static float nn__relu_sel(int c, float a) {
    uint32_t b;
    memcpy(&b, &a, 4);
    b &= (uint32_t) - (int32_t)c;
    memcpy(&a, &b, 4);
    return a;
}

/* y = f(x) for the activation fn with parameters p[0], p[1]. The switch sits outside the
   loops so each loop is one function the compiler can vectorise; ReLU keeps its
   branchless select (the same values as its table formula). */
static void nn__unary_forward(int fn, const float *p, float *y, const float *x, int64_t n) {
    int64_t i;
    float p0 = p[0], p1 = p[1];
    if (fn == NN__U_RELU) {
        for (i = 0; i < n; i++) y[i] = nn__relu_sel(!(x[i] <= 0.0f), x[i]);
        return;
    }
    switch (fn) {
#define NN__X(E, name, params, valid, fwd, der) \
    case NN__U_##E: for (i = 0; i < n; i++) { float v = x[i]; y[i] = (fwd); } break;
    NN__ACTIVATIONS(NN__X)
#undef NN__X
    default: break;
    }
    (void)p0, (void)p1;
}

/* dx = dy * f'(x) */
static void nn__unary_backward(int fn, const float *p, float *dx, const float *x, const float *dy, int64_t n) {
    int64_t i;
    float p0 = p[0], p1 = p[1];
    if (fn == NN__U_RELU) {
        for (i = 0; i < n; i++) dx[i] = nn__relu_sel(!(x[i] <= 0.0f), dy[i]);
        return;
    }
    switch (fn) {
#define NN__X(E, name, params, valid, fwd, der) \
    case NN__U_##E: for (i = 0; i < n; i++) { float v = x[i]; dx[i] = dy[i] * (der); } break;
    NN__ACTIVATIONS(NN__X)
#undef NN__X
    default: break;
    }
    (void)p0, (void)p1;
}

/* ---- PReLU: x [N, C, S] with the slope w[c] of its channel (C = 1: one shared slope); the
   formulas are leaky ReLU's, from kernels/activation.h ---- */

static void nn__prelu_forward(float *y, const float *x, const float *w, int64_t N, int64_t C, int64_t S) {
    int64_t k, j;
    for (k = 0; k < N * C; k++) {
        float wk = w[k % C];
        for (j = 0; j < S; j++) y[k * S + j] = nn__act_leaky(x[k * S + j], wk);
    }
}

static void nn__prelu_backward_input(float *dx, const float *x, const float *w, const float *dy, int64_t N, int64_t C,
                                     int64_t S) {
    int64_t k, j;
    for (k = 0; k < N * C; k++) {
        float wk = w[k % C];
        for (j = 0; j < S; j++) dx[k * S + j] = dy[k * S + j] * nn__act_leaky_der(x[k * S + j], wk);
    }
}

/* dw [C] = sum over n and s of dy * dy/dw: a partial sum over s for each (n, c), then the
   partials in n order, as kernels/elementwise.cl sums them. */
static void nn__prelu_backward_weight(float *dw, const float *x, const float *dy, int64_t N, int64_t C, int64_t S) {
    int64_t c, n, s;
    for (c = 0; c < C; c++) {
        float acc = 0.0f;
        for (n = 0; n < N; n++) {
            const float *xr = x + (n * C + c) * S, *dr = dy + (n * C + c) * S;
            float part = 0.0f;
            for (s = 0; s < S; s++) part += dr[s] * nn__act_leaky_dslope(xr[s]);
            acc += part;
        }
        dw[c] = acc;
    }
}

/* ---- binary ops: a [n], b [nb] with n % nb == 0, b repeated over a's leading dims ---- */

static void nn__binary_forward(int op, float *y, const float *a, const float *b, int64_t n, int64_t nb) {
    int64_t i, j;
    for (i = 0; i < n; i += nb) {
        float *yy = y + i;
        const float *aa = a + i;
        switch (op) {
        case NN__OP_ADD: for (j = 0; j < nb; j++) yy[j] = aa[j] + b[j]; break;
        case NN__OP_SUB: for (j = 0; j < nb; j++) yy[j] = aa[j] - b[j]; break;
        default: for (j = 0; j < nb; j++) yy[j] = aa[j] * b[j]; break;
        }
    }
}

static void nn__scale_forward(float *y, const float *x, float s, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++) y[i] = x[i] * s;
}

/* y [nb] = sum over the leading dims of x [n / nb, nb] (the gradient of a broadcast). */
static void nn__sum_lead_forward(float *y, const float *x, int64_t n, int64_t nb) {
    int64_t i, j;
    for (j = 0; j < nb; j++) y[j] = 0.0f;
    for (i = 0; i < n; i += nb)
        for (j = 0; j < nb; j++) y[j] += x[i + j];
}

/* y [1] = scale * sum(x); double accumulation keeps large sums exact enough. */
static void nn__sum_all_forward(float *y, const float *x, int64_t n, float scale) {
    double s = 0.0;
    int64_t i;
    for (i = 0; i < n; i++) s += x[i];
    y[0] = (float)(s * scale);
}

static void nn__expand_scalar_forward(float *y, const float *x, int64_t n, float scale) {
    float v = x[0] * scale;
    int64_t i;
    for (i = 0; i < n; i++) y[i] = v;
}

/* ---- softmax family, rows of length C ---- */

static void nn__softmax_forward(float *y, const float *x, int64_t rows, int64_t C, int log_space) {
    int64_t r, c;
    for (r = 0; r < rows; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C;
        float m = xr[0], s = 0.0f;
        for (c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        for (c = 0; c < C; c++) s += expf(xr[c] - m);
        if (log_space) {
            float ls = logf(s) + m;
            for (c = 0; c < C; c++) yr[c] = xr[c] - ls;
        } else {
            float inv = 1.0f / s;
            for (c = 0; c < C; c++) yr[c] = expf(xr[c] - m) * inv;
        }
    }
}

/* softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy). */
static void nn__softmax_backward(float *dx, const float *y, const float *dy, int64_t rows, int64_t C, int log_space) {
    int64_t r, c;
    for (r = 0; r < rows; r++) {
        const float *yr = y + r * C, *dyr = dy + r * C;
        float *dxr = dx + r * C;
        float s = 0.0f;
        if (log_space) {
            for (c = 0; c < C; c++) s += dyr[c];
            for (c = 0; c < C; c++) dxr[c] = dyr[c] - expf(yr[c]) * s;
        } else {
            for (c = 0; c < C; c++) s += dyr[c] * yr[c];
            for (c = 0; c < C; c++) dxr[c] = yr[c] * (dyr[c] - s);
        }
    }
}

/* loss [B] = logsumexp(x[b]) - x[b, label[b]]; a label outside [0, C) gives 0 and is
   counted: returns how many (the caller reports them). */
static int64_t nn__xent_forward(float *loss, const float *x, const int32_t *label, int64_t B, int64_t C) {
    int64_t b, c, bad = 0;
    for (b = 0; b < B; b++) {
        const float *xr = x + b * C;
        float m = xr[0], s = 0.0f;
        int32_t t = label[b];
        if (t < 0 || t >= C) { loss[b] = 0.0f; bad++; continue; }
        for (c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        for (c = 0; c < C; c++) s += expf(xr[c] - m);
        loss[b] = logf(s) + m - xr[t];
    }
    return bad;
}

/* dx [B, C] = dloss[b] * (softmax(x[b]) - onehot(label[b])) */
static void nn__xent_backward(float *dx, const float *x, const int32_t *label, const float *dloss, int64_t B, int64_t C) {
    int64_t b, c;
    for (b = 0; b < B; b++) {
        const float *xr = x + b * C;
        float *dxr = dx + b * C;
        float m = xr[0], s = 0.0f, g = dloss[b];
        int32_t t = label[b];
        if (t < 0 || t >= C) { for (c = 0; c < C; c++) dxr[c] = 0.0f; continue; }
        for (c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        for (c = 0; c < C; c++) s += expf(xr[c] - m);
        for (c = 0; c < C; c++) dxr[c] = g * (expf(xr[c] - m) / s - (c == t ? 1.0f : 0.0f));
    }
}

/* elementwise BCE with logits in PyTorch's form, (1 - t) x + max(-x, 0) + log(1 + exp(-|x|)),
   which is NaN where PyTorch's is (-inf logits: -inf + inf) */
static void nn__bce_forward(float *y, const float *x, const float *t, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++) {
        float v = x[i];
        y[i] = (1.0f - t[i]) * v + (v < 0.0f ? -v : 0.0f) + log1pf(expf(-fabsf(v)));
    }
}

static void nn__bce_backward(float *dx, const float *x, const float *t, const float *dy, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++) dx[i] = dy[i] * (1.0f / (1.0f + expf(-x[i])) - t[i]);
}

/* y = x * mask / (1 - p), mask from Philox (see nn__dropout_uniform): a product, so a
   dropped NaN or inf is NaN, as PyTorch's. Backward is the same op applied to dy with the
   same (seed, node, step). */
static void nn__dropout_forward(float *y, const float *x, int64_t n, float p, uint64_t seed, int node, uint64_t step) {
    float scale = 1.0f / (1.0f - p);
    int64_t i;
    for (i = 0; i < n; i++) y[i] = x[i] * (nn__dropout_uniform(seed, node, step, (uint32_t)i) >= p ? scale : 0.0f);
}

/* y [B, D] = data[idx[b]] of data [N, D] */
static void nn__gather_rows_forward(float *y, const float *data, const int32_t *idx, int64_t B, int64_t N, int64_t D) {
    int64_t b;
    for (b = 0; b < B; b++) {
        int32_t r = idx[b];
        if (r >= 0 && r < N) memcpy(y + b * D, data + (int64_t)r * D, (size_t)D * sizeof(float));
        else memset(y + b * D, 0, (size_t)D * sizeof(float));
    }
}

/* ddata [N, D] = sum over b with idx[b] == r of dy[b]: a fixed order, no atomics. */
static void nn__gather_rows_backward(float *ddata, const int32_t *idx, const float *dy, int64_t B, int64_t N, int64_t D) {
    int64_t b, j;
    memset(ddata, 0, (size_t)(N * D) * sizeof(float));
    for (b = 0; b < B; b++) {
        int32_t r = idx[b];
        if (r < 0 || r >= N) continue;
        for (j = 0; j < D; j++) ddata[(int64_t)r * D + j] += dy[b * D + j];
    }
}

/* first index of the row maximum, a NaN counting as the maximum (torch.argmax) */
static int64_t nn__argmax_row(const float *xr, int64_t C) {
    int64_t c, best = 0;
    for (c = 1; c < C; c++)
        if (xr[c] > xr[best] || (xr[c] != xr[c] && xr[best] == xr[best])) best = c;
    return best;
}

static void nn__argmax_forward(int32_t *y, const float *x, int64_t B, int64_t C) {
    int64_t b;
    for (b = 0; b < B; b++) y[b] = (int32_t)nn__argmax_row(x + b * C, C);
}

static void nn__correct_forward(float *y, const float *x, const int32_t *label, int64_t B, int64_t C) {
    int64_t b;
    for (b = 0; b < B; b++) y[b] = nn__argmax_row(x + b * C, C) == label[b] ? 1.0f : 0.0f;
}

/* ---- optimizers (PyTorch's update rules); g is scaled by clip first ---- */

static void nn__sgd_update(float *p, const float *grad, float *buf, int64_t n, float lr, float momentum,
                           float dampening, float wd, int nesterov, int first_step, float clip, float cv) {
    int64_t i;
    for (i = 0; i < n; i++) {
        float g = grad[i] * clip;
        g = (g > cv ? cv : g < -cv ? -cv : g) + wd * p[i];
        if (momentum != 0.0f) {
            float b = first_step ? g : momentum * buf[i] + (1.0f - dampening) * g;
            buf[i] = b;
            g = nesterov ? g + momentum * b : b;
        }
        p[i] -= lr * g;
    }
}

/* Adam and AdamW, one parameter tensor. keep = 1 - lr*wd for AdamW (decoupled decay) and
   l2 = wd for Adam; step = lr / (1 - beta1^t); inv_sbc2 = 1 / sqrt(1 - beta2^t):
   p = p*keep - step * m / (sqrt(v) * inv_sbc2 + eps), with g = clamp(grad*clip, +-cv) + l2*p. */
typedef struct nn__adam_args {
    float *p, *m, *v;
    const float *g;
    int64_t n;
    float clip, b1, b2, step, inv_sbc2, eps, keep, l2, cv;
} nn__adam_args;

static void nn__adam_range(const nn__adam_args *a, int64_t i0, int64_t i1) {
    int64_t i;
    for (i = i0; i < i1; i++) {
        float w = a->p[i], g = a->g[i] * a->clip;
        g = (g > a->cv ? a->cv : g < -a->cv ? -a->cv : g) + a->l2 * w;
        float m = a->b1 * a->m[i] + (1.0f - a->b1) * g;
        float v = a->b2 * a->v[i] + (1.0f - a->b2) * g * g;
        a->m[i] = m;
        a->v[i] = v;
        a->p[i] = w * a->keep - a->step * m / (sqrtf(v) * a->inv_sbc2 + a->eps);
    }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define NN__CPU_X86 1
/* The same update eight lanes at a time: sqrtf's errno semantics keep compilers from
   vectorising the scalar loop at -O2. */
__attribute__((target("avx2,fma"))) static void nn__adam_range_avx2(const nn__adam_args *a, int64_t i0, int64_t i1) {
    __m256 clip = _mm256_set1_ps(a->clip), l2 = _mm256_set1_ps(a->l2), b1 = _mm256_set1_ps(a->b1);
    __m256 c1 = _mm256_set1_ps(1.0f - a->b1), b2 = _mm256_set1_ps(a->b2), c2 = _mm256_set1_ps(1.0f - a->b2);
    __m256 keep = _mm256_set1_ps(a->keep), step = _mm256_set1_ps(a->step), isb = _mm256_set1_ps(a->inv_sbc2);
    __m256 eps = _mm256_set1_ps(a->eps), cv = _mm256_set1_ps(a->cv), ncv = _mm256_set1_ps(-a->cv);
    int64_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        __m256 w = _mm256_loadu_ps(a->p + i);
        /* min/max return their second operand when one is NaN: x second, so NaN stays */
        __m256 gc = _mm256_max_ps(ncv, _mm256_min_ps(cv, _mm256_mul_ps(_mm256_loadu_ps(a->g + i), clip)));
        __m256 g = _mm256_add_ps(gc, _mm256_mul_ps(l2, w));
        __m256 m = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(a->m + i)), _mm256_mul_ps(c1, g));
        __m256 v = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(a->v + i)), _mm256_mul_ps(c2, _mm256_mul_ps(g, g)));
        __m256 den = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(v), isb), eps);
        _mm256_storeu_ps(a->m + i, m);
        _mm256_storeu_ps(a->v + i, v);
        _mm256_storeu_ps(a->p + i, _mm256_sub_ps(_mm256_mul_ps(w, keep), _mm256_div_ps(_mm256_mul_ps(step, m), den)));
    }
    nn__adam_range(a, i, i1);
}
static int nn__cpu_avx2(void) {
    static int have = -1; /* a cached CPUID answer: the same for every context */
    if (have < 0) have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return have;
}
#endif

/* Chunks are whole multiples of 8 elements, so the vector and scalar code see the same
   elements for any thread count (the scalar tail is always the tensor's last n % 8) and
   the result has the same bits with 1 thread or 8. */
static void nn__adam_task(void *arg, int t, int n_tasks) {
    const nn__adam_args *a = (const nn__adam_args *)arg;
    int64_t chunk = ((a->n + n_tasks - 1) / n_tasks + 7) / 8 * 8, i0 = chunk * t;
    int64_t i1 = i0 + chunk < a->n ? i0 + chunk : a->n;
    if (i0 >= i1) return;
#if defined(NN__CPU_X86)
    if (nn__cpu_avx2()) {
        nn__adam_range_avx2(a, i0, i1);
        return;
    }
#endif
    nn__adam_range(a, i0, i1);
}

/* Element counts below which splitting a loop over threads costs more than it saves. */
#define NN__PAR_MIN 32768

static void nn__adam_update(nn__threadpool *pool, float *p, const float *grad, float *m, float *v, int64_t n, float lr,
                            float b1, float b2, float eps, float wd, int decoupled, float bc1, float bc2, float clip,
                            float cv) {
    nn__adam_args a;
    a.p = p;
    a.g = grad;
    a.m = m;
    a.v = v;
    a.n = n;
    a.clip = clip;
    a.b1 = b1;
    a.b2 = b2;
    a.step = lr / bc1;
    a.inv_sbc2 = 1.0f / sqrtf(bc2);
    a.eps = eps;
    a.keep = decoupled ? 1.0f - lr * wd : 1.0f;
    a.l2 = decoupled ? 0.0f : wd;
    a.cv = cv;
    nn__threadpool_run(pool, nn__adam_task, &a, n >= NN__PAR_MIN ? nn__threadpool_size(pool) : 1);
}
