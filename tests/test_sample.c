/* nn_sample_logits, token sampling on the device (kernels/random.h's lanes): greedy equals
   the first argmax; top_k 1 and top_p 0 equal it too; the frequencies of 10,000 draws
   (1,000 rows of the same logits, 10 runs) match the renormalised probabilities written
   here (temperature, top-k, top-p in double) within 5 standard errors, tokens left out
   never drawn; each run draws afresh; on an OpenCL device the CPU backend draws the same
   tokens (memcmp) from the same graph and seed; bad arguments name the op. */
#include "test.h"
#include "bad_rows.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Builds z [B, V] -> nn_sample_logits on ctx (seed), writes z, runs `runs` forwards and
   reads the tokens of each into out [runs * B]. 1 when it ran. */
static int sample_runs(nn_context *ctx, int B, int V, const float *z, const nn_sample_desc *d, int runs, int32_t *out,
                       int survey) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_tensor x, y;
    int r, ok = 0;
    memset(&gd, 0, sizeof gd);
    gd.seed = 77;
    gd.eval = 1;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "z", NN_F32, nn_shape2(B, V));
    y = nn_sample_logits(g, x, d);
    nn_graph_output(g, y);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    if (survey && t_survey_graph(g)) goto done;
    if (!T_OK(nn_tensor_write(g, x, z, (size_t)B * V * 4), ctx)) goto done;
    for (r = 0; r < runs; r++)
        if (!T_OK(nn_graph_forward(g), ctx) || !T_OK(nn_tensor_read(g, y, out + (size_t)r * B, (size_t)B * 4), ctx)) goto done;
    ok = 1;
done:
    nn_graph_destroy(g);
    return ok;
}

static float *logits(int B, int V, double lo, double hi) {
    float *z = (float *)malloc((size_t)B * V * 4);
    long i;
    for (i = 0; i < (long)B * V; i++) z[i] = (float)t_uniform(lo, hi);
    return z;
}

static int first_argmax(const float *z, int V) {
    int i, m = 0;
    for (i = 1; i < V; i++)
        if (z[i] > z[m]) m = i;
    return m;
}

/* the tokens of every run equal each row's first argmax */
static void argmax_case(const t_env *e, const char *label, int B, int V, const nn_sample_desc *d, int tie) {
    float *z;
    int32_t *y = (int32_t *)malloc((size_t)3 * B * 4);
    int b, r;
    if (!t_begin_op(e, label)) {
        free(y);
        return;
    }
    t_seed(0x5a3 + (unsigned long long)V);
    z = logits(B, V, -4, 4);
    if (tie && V > 20) z[20] = z[3] = 9.0f; /* row 0: the first of two equal maxima */
    if (sample_runs(e->ctx, B, V, z, d, 3, y, 1))
        for (r = 0; r < 3; r++)
            for (b = 0; b < B; b++)
                T_CHECK(y[r * B + b] == first_argmax(z + (long)b * V, V), "%s: run %d row %d: token %d, argmax %d", label, r, b,
                        y[r * B + b], first_argmax(z + (long)b * V, V));
    free(z);
    free(y);
    t_end();
}

static void argmax_cases(const t_env *e) {
    nn_sample_desc d;
    memset(&d, 0, sizeof d);
    argmax_case(e, "sample_logits greedy = argmax [5, 33]", 5, 33, NULL, 1);
    argmax_case(e, "sample_logits greedy = argmax [3, 1]", 3, 1, &d, 0);
    d.temperature = NN_ZERO;
    argmax_case(e, "sample_logits greedy = argmax [2, 1000]", 2, 1000, &d, 0);
    d.temperature = 0.7f;
    d.top_k = 1;
    argmax_case(e, "sample_logits top_k 1 = argmax [7, 129]", 7, 129, &d, 0);
    d.top_k = 0;
    d.top_p = NN_ZERO;
    argmax_case(e, "sample_logits top_p 0 = argmax [4, 65]", 4, 65, &d, 0);
}

/* The renormalised probabilities of HF's sampling, in double: softmax(z / T) over the
   top_k largest, then the tokens whose strictly larger ones hold < top_p of that mass. */
static void ref_probs(const float *z, int V, double T, int top_k, double top_p, double *p) {
    int *o = (int *)malloc((size_t)V * sizeof(int)), i, j, kept = V;
    double Z = 0, above = 0;
    for (i = 0; i < V; i++) o[i] = i;
    for (i = 0; i < V; i++) /* sort descending (V is small) */
        for (j = i + 1; j < V; j++)
            if (z[o[j]] > z[o[i]]) {
                int t = o[i];
                o[i] = o[j];
                o[j] = t;
            }
    if (top_k > 0 && top_k < V) kept = top_k;
    for (i = 0; i < V; i++) p[i] = 0;
    for (i = 0; i < kept; i++) Z += p[o[i]] = exp(z[o[i]] / T - z[o[0]] / T);
    for (i = 0; i < kept; i++) {
        double q = p[o[i]] / Z;
        if (above >= top_p && i > 0) p[o[i]] = 0;
        above += q;
    }
    Z = 0;
    for (i = 0; i < V; i++) Z += p[i];
    for (i = 0; i < V; i++) p[i] /= Z;
    free(o);
}

/* want: the probabilities (NULL: ref_probs') */
static void distribution_case_p(const t_env *e, const char *label, const float *z1, int V, const nn_sample_desc *d,
                                const double *want) {
    enum { B = 1000, RUNS = 10 };
    float *z = (float *)malloc((size_t)B * V * 4);
    int32_t *y = (int32_t *)malloc((size_t)B * RUNS * 4);
    double p[16], n = (double)B * RUNS;
    long cnt[16], i;
    int k, changed = 0;
    if (!t_begin(e, label)) goto out;
    for (i = 0; i < (long)B * V; i++) z[i] = z1[i % V];
    if (want) memcpy(p, want, (size_t)V * sizeof(double));
    else ref_probs(z1, V, d->temperature, d->top_k, d->top_p == 0.0f ? 1.0 : d->top_p, p);
    if (sample_runs(e->ctx, B, V, z, d, RUNS, y, 0)) {
        memset(cnt, 0, sizeof cnt);
        for (i = 0; i < (long)B * RUNS; i++) {
            if (!T_CHECK(y[i] >= 0 && y[i] < V, "%s: token %d out of [0, %d)", label, y[i], V)) break;
            cnt[y[i]]++;
            if (i >= B && y[i] != y[i - B]) changed = 1;
        }
        for (k = 0; k < V; k++) {
            double f = cnt[k] / n, tol = 5 * sqrt(p[k] * (1 - p[k]) / n);
            T_CHECK(p[k] == 0 ? cnt[k] == 0 : fabs(f - p[k]) <= tol, "%s: token %d drawn %.4f of the time, p = %.4f (+-%.4f)", label,
                    k, f, p[k], tol);
        }
        T_CHECK(changed, "%s: every run drew what the first did", label);
    }
out:
    free(z);
    free(y);
    t_end();
}

static void distribution_case(const t_env *e, const char *label, const float *z1, int V, const nn_sample_desc *d) {
    distribution_case_p(e, label, z1, V, d, NULL);
}

/* Ties at the cut and non-finite logits, the probabilities written out: top-k keeps every
   logit equal to the k-th largest (PyTorch's filtering by value, logits < kth are removed);
   top-p keeps a token when the mass of the strictly larger ones is < top_p, so ties with the
   last kept one stay; NaN counts as -inf (never drawn while any logit is finite or +inf);
   the +inf logits share the whole mass; a row of only NaN and -inf draws each of its V
   tokens with probability 1/V (PyTorch's multinomial raises on the NaN softmax). */
static void tie_nonfinite_cases(const t_env *e) {
    static const float z6[6] = {1, 3, 3, 3, 0, 2}, z5[5] = {2, 2, 0, 0, -1};
    float zn[5], zi[4], za[3];
    double pk[6] = {0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0}, pp[5], pn[5], pi[4] = {0.5, 0, 0.5, 0}, pa[3] = {1.0 / 3, 1.0 / 3, 1.0 / 3};
    double e2 = exp(2.0), zs = 2 * e2 + 2, ez = exp(1.0) + exp(0.5);
    nn_sample_desc d;
    zn[0] = NAN, zn[1] = 1, zn[2] = -INFINITY, zn[3] = 0.5f, zn[4] = NAN;
    zi[0] = INFINITY, zi[1] = 3, zi[2] = INFINITY, zi[3] = NAN;
    za[0] = NAN, za[1] = -INFINITY, za[2] = NAN;
    pp[0] = pp[1] = e2 / zs, pp[2] = pp[3] = 1 / zs, pp[4] = 0; /* mass above the 0s: 0.862 < 0.9; above -1: 0.979 */
    pn[0] = pn[2] = pn[4] = 0, pn[1] = exp(1.0) / ez, pn[3] = exp(0.5) / ez;
    memset(&d, 0, sizeof d);
    d.temperature = 1.0f;
    d.top_k = 2;
    distribution_case_p(e, "sample_logits top_k 2 keeps the three tied at the cut", z6, 6, &d, pk);
    memset(&d, 0, sizeof d);
    d.temperature = 1.0f;
    d.top_p = 0.9f;
    distribution_case_p(e, "sample_logits top_p 0.9 keeps both tied at the cut", z5, 5, &d, pp);
    memset(&d, 0, sizeof d);
    d.temperature = 1.0f;
    distribution_case_p(e, "sample_logits NaN and -inf logits never drawn", zn, 5, &d, pn);
    d.temperature = 0.7f;
    distribution_case_p(e, "sample_logits +inf logits share the mass", zi, 4, &d, pi);
    d.temperature = 1.0f;
    d.top_k = 2;
    distribution_case_p(e, "sample_logits a row of NaN and -inf: uniform", za, 3, &d, pa);
}

/* greedy with non-finite logits: the first of the largest, NaN as -inf (torch.argmax would
   take a NaN); a row of only NaN and -inf gives its first index */
static void greedy_nonfinite_case(const t_env *e) {
    enum { B = 5, V = 5 };
    float z[B * V];
    static const int want[B] = {2, 1, 0, 3, 0};
    int32_t y[B];
    int b, i;
    if (!t_begin_op(e, "sample_logits greedy with NaN and infinities")) return;
    for (i = 0; i < B * V; i++) z[i] = -INFINITY;
    z[0] = NAN, z[1] = 1, z[2] = 3, z[3] = NAN, z[4] = 3;
    z[5] = 1, z[6] = INFINITY, z[7] = 2, z[8] = INFINITY, z[9] = NAN;
    for (i = 10; i < 15; i++) z[i] = NAN;
    z[18] = -2;
    if (sample_runs(e->ctx, B, V, z, NULL, 1, y, 1))
        for (b = 0; b < B; b++) T_CHECK(y[b] == want[b], "row %d: token %d, want %d", b, y[b], want[b]);
    t_end();
}

static void distribution_cases(const t_env *e) {
    static const float z7[7] = {1.0f, 0.2f, -0.5f, 2.0f, 0.7f, -1.2f, 0.0f};
    static const float z5[5] = {0.3f, -1.0f, 0.9f, 0.1f, -0.4f};
    nn_sample_desc d;
    memset(&d, 0, sizeof d);
    d.temperature = 0.8f;
    d.top_k = 5;
    d.top_p = 0.9f; /* keeps 3, 0, 4, 1: their mass above 1 is 0.888 < 0.9, above 6 0.951 */
    distribution_case(e, "sample_logits frequencies T 0.8 top_k 5 top_p 0.9", z7, 7, &d);
    memset(&d, 0, sizeof d);
    d.temperature = 1.3f;
    distribution_case(e, "sample_logits frequencies T 1.3", z5, 5, &d);
}

/* the same graph and seed on the CPU backend draw the same tokens, for 3 runs */
static void parity_case(const t_env *e, int B, int V, const nn_sample_desc *d, const char *label) {
    float *z;
    int32_t *y = (int32_t *)malloc((size_t)3 * B * 4), *yc = (int32_t *)malloc((size_t)3 * B * 4);
    int i;
    if (!t_begin_op(e, label)) goto out;
    t_seed(0x9e1 + (unsigned long long)V);
    z = logits(B, V, -3, 3);
    if (e->cpu == NULL) {
        if (sample_runs(e->ctx, B, V, z, d, 3, y, 1))
            for (i = 0; i < 3 * B; i++) T_CHECK(y[i] >= 0 && y[i] < V, "%s: token %d out of range", label, y[i]);
    } else if (sample_runs(e->ctx, B, V, z, d, 3, y, 1) && sample_runs(e->cpu, B, V, z, d, 3, yc, 0)) {
        for (i = 0; i < 3 * B; i++)
            if (!T_CHECK(y[i] == yc[i], "%s: run %d row %d: token %d, the CPU backend's %d", label, i / B, i % B, y[i], yc[i])) break;
    }
    free(z);
out:
    free(y);
    free(yc);
    t_end();
}

static void parity_cases(const t_env *e) {
    nn_sample_desc d;
    memset(&d, 0, sizeof d);
    d.temperature = 0.9f;
    d.top_k = 50;
    d.top_p = 0.95f;
    parity_case(e, 9, 1000, &d, "sample_logits parity [9, 1000] T 0.9 top_k 50 top_p 0.95");
    d.top_k = 0;
    parity_case(e, 3, 33, &d, "sample_logits parity [3, 33] T 0.9 top_p 0.95");
    d.top_p = 0;
    d.temperature = 1.0f;
    parity_case(e, 5, 7, &d, "sample_logits parity [5, 7] T 1");
    d.top_k = 3;
    parity_case(e, 1, 130, &d, "sample_logits parity [1, 130] top_k 3");
}

/* ---- bad input ---- */

static nn_tensor bad_sample(nn_graph *g, int which) {
    nn_sample_desc d;
    memset(&d, 0, sizeof d);
    switch (which) {
    case 0: return nn_sample_logits(g, I(g, S2(2, 5)), NULL);
    case 1: return nn_sample_logits(g, F(g, S1(5)), NULL);
    case 2: d.temperature = -1.0f; return nn_sample_logits(g, F(g, S2(2, 5)), &d);
    case 3: d.top_k = -1; return nn_sample_logits(g, F(g, S2(2, 5)), &d);
    case 4: d.top_p = 1.5f; return nn_sample_logits(g, F(g, S2(2, 5)), &d);
    case 5: d.temperature = NAN; return nn_sample_logits(g, F(g, S2(2, 5)), &d);
    default: return T(-1);
    }
}
#define BS(N) \
    static nn_tensor n_bs##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return bad_sample(g, N); }
BS(0) BS(1) BS(2) BS(3) BS(4) BS(5)

static const bad_row sample_bad[] = {
    {"sample_logits", "logits int32", n_bs0, R_SHAPE, "nn_sample_logits|int32", 0},
    {"sample_logits", "logits [5]", n_bs1, R_SHAPE, "nn_sample_logits|[5]|[B, V]", 0},
    {"sample_logits", "temperature -1", n_bs2, R_INV, "nn_sample_logits|temperature -1", 0},
    {"sample_logits", "top_k -1", n_bs3, R_INV, "nn_sample_logits|top_k -1", 0},
    {"sample_logits", "top_p 1.5", n_bs4, R_INV, "nn_sample_logits|top_p 1.5", 0},
    {"sample_logits", "temperature NaN", n_bs5, R_INV, "nn_sample_logits|temperature nan", 0},
};

void suite_sample(const t_env *e) {
    T_RUN(e, argmax_cases, distribution_cases, parity_cases, tie_nonfinite_cases, greedy_nonfinite_case);
    t_bad_rows(e, sample_bad, (int)(sizeof sample_bad / sizeof sample_bad[0]));
}
