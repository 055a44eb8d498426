/* Losses (nn_loss_desc family): CPU bodies. kernels/loss.cl holds their OpenCL twins, with
   the same formulas in the same order; the kinds (nn__loss_kind, nn__row_kind) are
   kernels/loss.h's, the kernels' too.

   LOSS_EW       elementwise loss of (pred, target[, pos_weight]) -> pred's shape
   LOSS_EW_GRAD  d/d(pred) of it, given dy
   CE_ROWS       cross-entropy / NLL per row of [B, C] with labels, class weights, ignore
                 index and label smoothing -> [B]
   CE_WEIGHTS    the weight each row counts with in the mean: w[label] (1 without weights),
                 0 for an ignored label -> [B]
   DIV_SCALAR    a / b[0]: the weighted mean
   LOSS_ROWS     a loss per row of [B, D] inputs (dice, cosine embedding, triplet) -> [B]
   LOSS_ROWS_GRAD its gradient for input i[1] */

#include "../../kernels/loss.h"

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
        s = nn__vexp_map(NN__VE_EXP_SHIFT, NULL, xr, NULL, NULL, m, C);
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
        s = nn__vexp_map(NN__VE_EXP_SHIFT, dxr, xr, NULL, NULL, m, C); /* dxr = exp(x - m) */
        for (c = 0; c < C; c++) dxr[c] = g * (dxr[c] / s - (c == t ? 1.0f : 0.0f));
    }
}

/* elementwise BCE with logits in PyTorch's form, (1 - t) x + max(-x, 0) + log(1 + exp(-|x|)),
   which is NaN where PyTorch's is (-inf logits: -inf + inf) */
static void nn__bce_forward(float *y, const float *x, const float *t, int64_t n) {
    (void)nn__vexp_map(NN__VE_BCE, y, x, t, NULL, 0.0f, n); /* the formula above, vector or scalar */
}

static void nn__bce_backward(float *dx, const float *x, const float *t, const float *dy, int64_t n) {
    (void)nn__vexp_map(NN__VE_SIGMOID_SUB, dx, x, t, dy, 0.0f, n);
}

/* The cross-entropy and BCE loops over the pool's threads: rows [r0, r1) (elements for BCE)
   each, by the loops above at an offset. */
typedef struct nn__xent_job {
    int bce;
    float *y;
    const float *x, *b, *c;
    const int32_t *label;
    int64_t C;
} nn__xent_job;

static void nn__xent_range(void *arg, int64_t r0, int64_t r1) {
    const nn__xent_job *j = (const nn__xent_job *)arg;
    int64_t o = r0 * j->C, n = r1 - r0;
    if (j->bce) {
        if (j->c) nn__bce_backward(j->y + o, j->x + o, j->b + o, j->c + o, n);
        else nn__bce_forward(j->y + o, j->x + o, j->b + o, n);
    } else if (j->b) {
        nn__xent_backward(j->y + o, j->x + o, j->label + r0, j->b + r0, n, j->C);
    } else {
        (void)nn__xent_forward(j->y + r0, j->x + o, j->label + r0, n, j->C);
    }
}

/* loss [B] of the fused cross-entropy of x [B, C] and labels (dloss NULL), or dx [B, C]
   given dloss [B]; returns the count of labels outside [0, C) */
static int64_t nn__xent_rows(nn__threadpool *pool, float *y, const float *x, const int32_t *label, const float *dloss,
                             int64_t B, int64_t C) {
    nn__xent_job j;
    int64_t bad = 0, r;
    j.bce = 0;
    j.y = y;
    j.x = x;
    j.b = dloss;
    j.c = NULL;
    j.label = label;
    j.C = C;
    nn__par_for(pool, B, B * C * 4, nn__xent_range, &j);
    if (!dloss)
        for (r = 0; r < B; r++) bad += label[r] < 0 || label[r] >= C;
    return bad;
}

/* y [n] = BCE with logits of (x, t) (dy NULL), or its gradient dy * (sigmoid(x) - t) */
static void nn__bce_rows(nn__threadpool *pool, float *y, const float *x, const float *t, const float *dy, int64_t n) {
    nn__xent_job j;
    j.bce = 1;
    j.y = y;
    j.x = x;
    j.b = t;
    j.c = dy;
    j.label = NULL;
    j.C = 1;
    nn__par_for(pool, n, n, nn__xent_range, &j);
}


static float nn__sgnf(float v) { return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : 0.0f; } /* 0 at NaN, as torch.sign */

/* max(v, -100) that keeps NaN (BCE's clamped log, std::max in PyTorch) */
static float nn__log_floor(float v) { return v < -100.0f ? -100.0f : v; }

/* One element's loss; a: delta / beta / tau / margin / alpha, b: gamma, pw: pos_weight. */
static float nn__loss_ew1(int kind, float x, float t, float a, float b, float pw, int log_target) {
    float d = x - t, ad = fabsf(d), m, p, ce, pt, l;
    switch (kind) {
    case NN__L_MSE: return d * d;
    case NN__L_L1: return ad;
    case NN__L_HUBER: return ad < a ? 0.5f * d * d : a * (ad - 0.5f * a);
    case NN__L_SMOOTH_L1: return a == 0.0f ? ad : ad < a ? 0.5f * d * d / a : ad - 0.5f * a;
    case NN__L_LOG_COSH: return ad + log1pf(expf(-2.0f * ad)) - 0.69314718055994531f;
    case NN__L_QUANTILE: return -d > 0.0f ? a * -d : (a - 1.0f) * -d;
    case NN__L_HINGE: m = a - t * x; return m <= 0.0f ? 0.0f : m; /* clamp_min: NaN stays NaN */
    case NN__L_SQ_HINGE: m = a - t * x; return m <= 0.0f ? 0.0f : m * m;
    case NN__L_BCE:
        return -(t * nn__log_floor(logf(x)) + (1.0f - t) * nn__log_floor(logf(1.0f - x)));
    case NN__L_BCE_LOGITS:
        return (1.0f - t) * x + (1.0f + (pw - 1.0f) * t) * (log1pf(expf(-fabsf(x))) + fmaxf(-x, 0.0f));
    case NN__L_FOCAL:
        p = 1.0f / (1.0f + expf(-x));
        ce = (1.0f - t) * x + fmaxf(-x, 0.0f) + log1pf(expf(-fabsf(x))); /* PyTorch's BCE with logits */
        pt = p * t + (1.0f - p) * (1.0f - t);
        l = ce * powf(1.0f - pt, b);
        return a >= 0.0f ? l * (a * t + (1.0f - a) * (1.0f - t)) : l;
    case NN__L_KL: /* xlogy(t, t) - t x (PyTorch's): t = 0 gives 0 - 0 * x, NaN for a NaN or inf x */
        if (log_target) return expf(t) * (t - x);
        return (t == 0.0f ? 0.0f : t * logf(t)) - t * x;
    default: return 0.0f;
    }
}

/* d(loss)/dx of one element */
static float nn__loss_ew1_dx(int kind, float x, float t, float a, float b, float pw, int log_target) {
    float d = x - t, ad = fabsf(d), m, p, ce, pt, q, at;
    switch (kind) {
    case NN__L_MSE: return 2.0f * d;
    case NN__L_L1: return nn__sgnf(d);
    /* NaN fails both tests and stays NaN, as PyTorch's backward formulas give */
    case NN__L_HUBER: return ad < a ? d : ad >= a ? a * nn__sgnf(d) : d;
    case NN__L_SMOOTH_L1: return ad < a ? d / a : ad >= a ? nn__sgnf(d) : d; /* beta 0: sign(d) */
    case NN__L_LOG_COSH: return tanhf(d);
    /* the losses PyTorch lacks: NaN in, NaN out (the last branch) */
    case NN__L_QUANTILE: return d < 0.0f ? -a : d >= 0.0f ? 1.0f - a : d;
    case NN__L_HINGE: m = a - t * x; return m > 0.0f ? -t : m <= 0.0f ? 0.0f : m;
    case NN__L_SQ_HINGE: m = a - t * x; return m > 0.0f ? -2.0f * t * m : m <= 0.0f ? 0.0f : m;
    case NN__L_BCE: return (x - t) / fmaxf((1.0f - x) * x, 1e-12f);
    case NN__L_BCE_LOGITS: return (1.0f - t) - (1.0f + (pw - 1.0f) * t) / (1.0f + expf(x));
    case NN__L_FOCAL:
        p = 1.0f / (1.0f + expf(-x));
        ce = (1.0f - t) * x + fmaxf(-x, 0.0f) + log1pf(expf(-fabsf(x))); /* PyTorch's BCE with logits */
        pt = p * t + (1.0f - p) * (1.0f - t);
        q = 1.0f - pt;
        at = a >= 0.0f ? a * t + (1.0f - a) * (1.0f - t) : 1.0f;
        return at * ((q > 0.0f ? -b * powf(q, b - 1.0f) * (2.0f * t - 1.0f) * p * (1.0f - p) * ce : 0.0f) +
                     powf(q, b) * (p - t));
    case NN__L_KL:
        if (log_target) return -expf(t);
        return -t;
    default: return 0.0f;
    }
}

/* The elementwise losses over the pool's threads: elements [i0, i1) per task, each computed
   the same whichever task does it. MSE and BCE with logits without pos_weight run as the
   vector rows of src/cpu/simd.c (nn__vexp_map: nn__loss_ew1's and nn__loss_ew1_dx's
   formulas, without the switch per element). */
typedef struct nn__loss_ew_job {
    float *y;
    const float *x, *t, *pw, *dy; /* dy NULL: forward */
    int64_t npw;
    int kind, log_target;
    float a, b;
} nn__loss_ew_job;

static void nn__loss_ew_range(void *arg, int64_t i0, int64_t i1) {
    const nn__loss_ew_job *j = (const nn__loss_ew_job *)arg;
    const float *x = j->x, *t = j->t, *pw = j->pw, *dy = j->dy;
    float *y = j->y;
    int64_t i;
    if (j->kind == NN__L_BCE_LOGITS && !pw) { /* nn__loss_ew1's formulas, pos_weight 1, on the vector exp */
        (void)nn__vexp_map(dy ? NN__VE_BCE_LOSS_DX : NN__VE_BCE_LOSS, y + i0, x + i0, t + i0, dy ? dy + i0 : NULL, 1.0f, i1 - i0);
    } else if (j->kind == NN__L_MSE) {
        (void)nn__vexp_map(dy ? NN__VE_MSE_DX : NN__VE_MSE, y + i0, x + i0, t + i0, dy ? dy + i0 : NULL, 0.0f, i1 - i0);
    } else if (!dy) {
        for (i = i0; i < i1; i++) y[i] = nn__loss_ew1(j->kind, x[i], t[i], j->a, j->b, pw ? pw[i % j->npw] : 1.0f, j->log_target);
    } else {
        for (i = i0; i < i1; i++)
            y[i] = dy[i] * nn__loss_ew1_dx(j->kind, x[i], t[i], j->a, j->b, pw ? pw[i % j->npw] : 1.0f, j->log_target);
    }
}

/* y (or dx, given dy) [n]; pw repeats with period npw (NULL: 1) */
static void nn__loss_ew_run(nn__threadpool *pool, float *y, const float *x, const float *t, const float *pw, int64_t npw,
                            const float *dy, int64_t n, int kind, float a, float b, int log_target) {
    nn__loss_ew_job j;
    j.y = y;
    j.x = x;
    j.t = t;
    j.pw = pw;
    j.dy = dy;
    j.npw = npw;
    j.kind = kind;
    j.log_target = log_target;
    j.a = a;
    j.b = b;
    nn__par_for(pool, n, kind == NN__L_MSE ? n : 4 * n, nn__loss_ew_range, &j);
}

static int nn__ce_ignored(int32_t t, int64_t C, int ignore) { return t == ignore || t < 0 || t >= C; }

/* Per row: (1 - eps) * w[t] * -logp[t] + eps / C * sum_c w[c] * -logp[c], logp the row's
   log-softmax (or x itself for NLL); 0 for an ignored label. Returns how many labels were
   outside [0, C) without being ignore_index (errors in PyTorch; 0 here too). */
static int64_t nn__ce_rows_forward(float *loss, const float *x, const int32_t *label, const float *w, int64_t B, int64_t C,
                                   int ignore, int log_input, float eps) {
    int64_t b, c, bad = 0;
    for (b = 0; b < B; b++) {
        const float *xr = x + b * C;
        float m = xr[0], s = 0.0f, lse = 0.0f, sm = 0.0f;
        int32_t t = label[b];
        bad += t != ignore && (t < 0 || t >= C);
        if (nn__ce_ignored(t, C, ignore)) { loss[b] = 0.0f; continue; }
        if (!log_input) {
            for (c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
            s = nn__vexp_map(NN__VE_EXP_SHIFT, NULL, xr, NULL, NULL, m, C);
            lse = logf(s) + m;
        }
        for (c = 0; c < C && eps != 0.0f; c++) sm += (w ? w[c] : 1.0f) * (lse - xr[c]);
        loss[b] = (1.0f - eps) * (w ? w[t] : 1.0f) * (lse - xr[t]) + eps / (float)C * sm;
    }
    return bad;
}

/* q[c] = (1 - eps) * w[t] * [c == t] + eps / C * w[c]: cross-entropy dx = dy * (p * sum(q) - q),
   NLL dx = -dy * q */
static void nn__ce_rows_backward(float *dx, const float *x, const int32_t *label, const float *w, const float *dloss,
                                 int64_t B, int64_t C, int ignore, int log_input, float eps) {
    int64_t b, c;
    for (b = 0; b < B; b++) {
        const float *xr = x + b * C;
        float *dxr = dx + b * C;
        float m = xr[0], s = 0.0f, Q = 0.0f, g = dloss[b];
        int32_t t = label[b];
        if (nn__ce_ignored(t, C, ignore)) { for (c = 0; c < C; c++) dxr[c] = 0.0f; continue; }
        for (c = 0; c < C; c++) Q += (1.0f - eps) * (c == t ? (w ? w[t] : 1.0f) : 0.0f) + eps / (float)C * (w ? w[c] : 1.0f);
        if (!log_input) {
            for (c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
            s = nn__vexp_map(NN__VE_EXP_SHIFT, dxr, xr, NULL, NULL, m, C); /* dxr = exp(x - m) */
        }
        for (c = 0; c < C; c++) {
            float q = (1.0f - eps) * (c == t ? (w ? w[t] : 1.0f) : 0.0f) + eps / (float)C * (w ? w[c] : 1.0f);
            dxr[c] = log_input ? -g * q : g * (dxr[c] / s * Q - q);
        }
    }
}

/* The rows above over the pool's threads: rows [b0, b1) per task (dloss NULL: forward);
   returns the forward's count of bad labels. */
typedef struct nn__ce_job {
    float *y;
    const float *x, *w, *dloss;
    const int32_t *label;
    int64_t C;
    int ignore, log_input;
    float eps;
} nn__ce_job;

static void nn__ce_range(void *arg, int64_t b0, int64_t b1) {
    const nn__ce_job *j = (const nn__ce_job *)arg;
    if (j->dloss)
        nn__ce_rows_backward(j->y + b0 * j->C, j->x + b0 * j->C, j->label + b0, j->w, j->dloss + b0, b1 - b0, j->C, j->ignore,
                             j->log_input, j->eps);
    else
        (void)nn__ce_rows_forward(j->y + b0, j->x + b0 * j->C, j->label + b0, j->w, b1 - b0, j->C, j->ignore, j->log_input,
                                  j->eps);
}

static int64_t nn__ce_rows_run(nn__threadpool *pool, float *y, const float *x, const int32_t *label, const float *w,
                               const float *dloss, int64_t B, int64_t C, int ignore, int log_input, float eps) {
    nn__ce_job j;
    int64_t b, bad = 0;
    j.y = y;
    j.x = x;
    j.w = w;
    j.dloss = dloss;
    j.label = label;
    j.C = C;
    j.ignore = ignore;
    j.log_input = log_input;
    j.eps = eps;
    nn__par_for(pool, B, 4 * B * C, nn__ce_range, &j);
    if (!dloss)
        for (b = 0; b < B; b++) bad += label[b] != ignore && (label[b] < 0 || label[b] >= C);
    return bad;
}

static void nn__ce_weights_forward(float *y, const int32_t *label, const float *w, int64_t B, int64_t C, int ignore) {
    int64_t b;
    for (b = 0; b < B; b++) y[b] = nn__ce_ignored(label[b], C, ignore) ? 0.0f : w ? w[label[b]] : 1.0f;
}

/* Row losses of [B, D] inputs; x2 is the target [B] for cosine, the negative for triplet. */
static float nn__row_loss1(int kind, const float *x0, const float *x1, const float *x2, int64_t b, int64_t D, float a) {
    const float *u = x0 + b * D, *v = x1 + b * D;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
    int64_t j;
    switch (kind) {
    case NN__R_DICE:
        for (j = 0; j < D; j++) {
            s0 += u[j] * v[j];
            s1 += u[j] + v[j];
        }
        return 1.0f - (2.0f * s0 + a) / (s1 + a);
    case NN__R_COSINE: {
        float c, y = x2[b];
        for (j = 0; j < D; j++) {
            s0 += u[j] * v[j];
            s1 += u[j] * u[j];
            s2 += v[j] * v[j];
        }
        c = s0 / sqrtf((s1 + 1e-12f) * (s2 + 1e-12f));
        return y == 1.0f ? 1.0f - c : y == -1.0f ? (c - a <= 0.0f ? 0.0f : c - a) : 0.0f; /* clamp_min keeps NaN */
    }
    case NN__R_TRIPLET: {
        const float *n = x2 + b * D;
        for (j = 0; j < D; j++) {
            float dp = u[j] - v[j] + 1e-6f, dn = u[j] - n[j] + 1e-6f;
            s0 += dp * dp;
            s1 += dn * dn;
        }
        s2 = sqrtf(s0) - sqrtf(s1) + a;
        return s2 <= 0.0f ? 0.0f : s2; /* clamp_min keeps NaN */
    }
    default: return 0.0f;
    }
}

/* d(row loss)/d(input `which`) of row b, times g, into dx [D] */
static void nn__row_loss1_dx(float *dx, int kind, int which, const float *x0, const float *x1, const float *x2, int64_t b,
                             int64_t D, float a, float g) {
    const float *u = x0 + b * D, *v = x1 + b * D;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
    int64_t j;
    switch (kind) {
    case NN__R_DICE: { /* d/dp_j = -(2 t_j S - N) / S^2 */
        float N, S;
        for (j = 0; j < D; j++) {
            s0 += u[j] * v[j];
            s1 += u[j] + v[j];
        }
        N = 2.0f * s0 + a;
        S = s1 + a;
        for (j = 0; j < D; j++) dx[j] = g * (N - 2.0f * v[j] * S) / (S * S);
        return;
    }
    case NN__R_COSINE: {
        float y = x2[b], m1, m2, den, c, k;
        const float *self = which == 0 ? u : v, *other = which == 0 ? v : u;
        for (j = 0; j < D; j++) {
            s0 += u[j] * v[j];
            s1 += u[j] * u[j];
            s2 += v[j] * v[j];
        }
        m1 = s1 + 1e-12f;
        m2 = s2 + 1e-12f;
        den = sqrtf(m1 * m2);
        c = s0 / den;
        k = y == 1.0f ? -g : (y == -1.0f && c - a > 0.0f) ? g : 0.0f;
        for (j = 0; j < D; j++) dx[j] = k * (other[j] / den - c * self[j] / (which == 0 ? m1 : m2));
        return;
    }
    case NN__R_TRIPLET: {
        const float *n = x2 + b * D;
        float dap, dan, l;
        for (j = 0; j < D; j++) {
            float dp = u[j] - v[j] + 1e-6f, dn = u[j] - n[j] + 1e-6f;
            s0 += dp * dp;
            s1 += dn * dn;
        }
        dap = sqrtf(s0);
        dan = sqrtf(s1);
        l = dap - dan + a > 0.0f ? g : 0.0f; /* the clamp's gradient, then the chain rule: 0 * NaN is NaN, as PyTorch's */
        for (j = 0; j < D; j++) {
            float gp = l * ((u[j] - v[j] + 1e-6f) / dap);
            float gn = l * ((u[j] - n[j] + 1e-6f) / dan);
            dx[j] = which == 0 ? gp - gn : which == 1 ? -gp : gn;
        }
        return;
    }
    default:
        for (j = 0; j < D; j++) dx[j] = 0.0f;
    }
}

static void nn__row_loss_forward(float *y, int kind, const float *x0, const float *x1, const float *x2, int64_t B,
                                 int64_t D, float a) {
    int64_t b;
    for (b = 0; b < B; b++) y[b] = nn__row_loss1(kind, x0, x1, x2, b, D, a);
}

static void nn__row_loss_backward(float *dx, int kind, int which, const float *x0, const float *x1, const float *x2,
                                  const float *dy, int64_t B, int64_t D, float a) {
    int64_t b;
    for (b = 0; b < B; b++) nn__row_loss1_dx(dx + b * D, kind, which, x0, x1, x2, b, D, a, dy[b]);
}
