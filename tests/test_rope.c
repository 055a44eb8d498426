/* Positions: rotary embeddings (nn_rope) through the op checker against a double reference
   written here (HF's rotate_half for GPT-NeoX / LLaMA, GPT-J's interleaved pairs), both
   layouts, partial rotary, offsets, positions [T] and [B, T], theta, T = 1 to 65; the
   sinusoidal encodings against the tutorial's formula in double; a learned positional
   embedding (an nn_param [T, D] added with broadcasting) through the op checker; and the
   refusals. */
#include "test.h"
#include "bad_rows.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ip[0] layout bthd, ip[1] rot_dim (0: D), ip[2] interleaved, ip[3] offset, ip[4]
   positions (0 none, 1 [T], 2 [B, T]: input 1), fp[0] theta (0: 10000) */
static nn_tensor b_rope(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_rope_desc d;
    memset(&d, 0, sizeof d);
    d.bthd = s->ip[0];
    d.rot_dim = s->ip[1];
    d.interleaved = s->ip[2];
    d.offset = s->ip[3];
    d.theta = s->fp[0];
    if (s->ip[4]) d.positions = in[1];
    return nn_rope(g, in[0], &d);
}

static void r_rope(const spec *s, double *const *in, double *out) {
    const nn_shape *x = &s->shape[0];
    long B = (long)x->dim[0], H = (long)x->dim[s->ip[0] ? 2 : 1], T = (long)x->dim[s->ip[0] ? 1 : 2], D = (long)x->dim[3];
    long rot = s->ip[1] ? s->ip[1] : D, b, h, t, i;
    double theta = s->fp[0] ? s->fp[0] : 10000.0;
    for (b = 0; b < B; b++)
        for (h = 0; h < H; h++)
            for (t = 0; t < T; t++) {
                long o = s->ip[0] ? ((b * T + t) * H + h) * D : ((b * H + h) * T + t) * D;
                double p = (s->ip[4] == 0 ? (double)t : s->ip[4] == 1 ? in[1][t] : in[1][b * T + t]) + s->ip[3];
                for (i = rot; i < D; i++) out[o + i] = in[0][o + i];
                for (i = 0; i < rot / 2; i++) {
                    double ang = p * pow(theta, -2.0 * (double)i / (double)rot), c = cos(ang), sn = sin(ang);
                    long i1 = s->ip[2] ? o + 2 * i : o + i, i2 = s->ip[2] ? o + 2 * i + 1 : o + i + rot / 2;
                    out[i1] = in[0][i1] * c - in[0][i2] * sn;
                    out[i2] = in[0][i2] * c + in[0][i1] * sn;
                }
            }
}

static void rope_case(const t_env *e, nn_shape x, int bthd, int rot, int interleaved, int offset, int pos, float theta) {
    char name[160];
    spec s;
    long B = (long)x.dim[0], T = (long)x.dim[bthd ? 1 : 2];
    snprintf(name, sizeof name, "rope [%lld, %lld, %lld, %lld]%s rot %d%s offset %d pos %d theta %g", (long long)x.dim[0],
             (long long)x.dim[1], (long long)x.dim[2], (long long)x.dim[3], bthd ? " bthd" : "", rot, interleaved ? " gptj" : "",
             offset, pos, theta);
    s = mk(name, b_rope, r_rope, x);
    s.ip[0] = bthd;
    s.ip[1] = rot;
    s.ip[2] = interleaved;
    s.ip[3] = offset;
    s.ip[4] = pos;
    s.fp[0] = theta;
    in_f(&s, x);
    if (pos == 1) in_i(&s, nn_shape1(T), 0, 100);
    if (pos == 2) in_i(&s, nn_shape2(B, T), 0, 100);
    check_case(e, &s);
}

static void rope_cases(const t_env *e) {
    rope_case(e, nn_shape4(2, 3, 7, 16), 0, 0, 0, 0, 0, 0);
    rope_case(e, nn_shape4(1, 2, 33, 24), 0, 0, 1, 0, 0, 0);
    rope_case(e, nn_shape4(2, 1, 5, 80), 0, 20, 0, 70, 0, 0);    /* partial rotary (1/4), a cache of 70 */
    rope_case(e, nn_shape4(1, 2, 1, 64), 0, 32, 1, 129, 0, 500);  /* T = 1: one generated token */
    rope_case(e, nn_shape4(1, 1, 3, 64), 0, 0, 0, 32765, 0, 0);   /* long context: angles up to 32767 rad, reduced exactly */
    rope_case(e, nn_shape4(2, 7, 3, 16), 1, 0, 0, 0, 0, 0);       /* [B, T, H, D] */
    rope_case(e, nn_shape4(1, 65, 2, 8), 1, 6, 1, 3, 0, 0);
    rope_case(e, nn_shape4(2, 2, 7, 16), 0, 0, 0, 0, 1, 0);       /* positions [T] */
    rope_case(e, nn_shape4(2, 7, 3, 16), 1, 8, 0, 2, 2, 0);       /* positions [B, T] */
}

/* ---- sinusoidal encodings: the tutorial's pe, in double ---- */

static void sinusoidal_case(const t_env *e, long T, long D) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_tensor y;
    char label[96];
    float *got = (float *)malloc((size_t)T * D * 4);
    long t, c;
    snprintf(label, sizeof label, "sinusoidal_positions [%ld, %ld]", T, D);
    if (!t_begin_op(e, label)) goto out;
    memset(&gd, 0, sizeof gd);
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    y = nn_sinusoidal_positions(g, T, D);
    nn_graph_output(g, y);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    if (t_survey_graph(g)) goto done;
    if (!T_OK(nn_graph_forward(g), ctx) || !T_OK(nn_tensor_read(g, y, got, (size_t)T * D * 4), ctx)) goto done;
    for (t = 0; t < T; t++)
        for (c = 0; c < D; c++) {
            double div = exp((double)(c - c % 2) * (-log(10000.0) / (double)D)), want = c % 2 ? cos(t * div) : sin(t * div);
            if (!T_CHECK(fabs(got[t * D + c] - want) <= 1e-7, "%s: pe[%ld, %ld] = %.9g, want %.9g", label, t, c, got[t * D + c], want))
                goto done;
        }
done:
    nn_graph_destroy(g);
out:
    free(got);
    t_end();
}

static void sinusoidal_cases(const t_env *e) {
    sinusoidal_case(e, 1, 1);
    sinusoidal_case(e, 64, 128);
    sinusoidal_case(e, 33, 7);
}

/* ---- a learned positional embedding: y = x [B, T, D] + pos.weight [T, D] ---- */

static nn_tensor b_learned(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_init init;
    memset(&init, 0, sizeof init);
    init.kind = NN_INIT_NORMAL;
    init.b = 0.02f;
    return nn_add(g, in[0], nn_param(g, "wpe.weight", nn_shape2(s->shape[0].dim[1], s->shape[0].dim[2]), init));
}
static void r_learned(const spec *s, double *const *in, double *out) {
    long n = numel(s->shape[0]), TD = (long)(s->shape[0].dim[1] * s->shape[0].dim[2]), i;
    for (i = 0; i < n; i++) out[i] = in[0][i] + in[1][i % TD];
}
static void learned_cases(const t_env *e) {
    spec s = mk("learned positional embedding x [3, 7, 5] + wpe.weight [7, 5]", b_learned, r_learned, nn_shape3(3, 7, 5));
    s.kind = "layer";
    in_f(&s, nn_shape3(3, 7, 5));
    in_param(&s, "wpe.weight", nn_shape2(7, 5), -1, 1);
    check_case(e, &s);
}

/* ---- bad input ---- */

static nn_tensor bad_pos(nn_graph *g, int which) {
    nn_rope_desc d;
    memset(&d, 0, sizeof d);
    switch (which) {
    case 0: return nn_rope(g, F(g, S3(2, 3, 4)), NULL);
    case 1: d.rot_dim = 3; return nn_rope(g, F(g, S4(1, 2, 3, 8)), &d);
    case 2: d.rot_dim = 10; return nn_rope(g, F(g, S4(1, 2, 3, 8)), &d);
    case 3: d.theta = 0.5f; return nn_rope(g, F(g, S4(1, 2, 3, 8)), &d);
    case 4: d.offset = -1; return nn_rope(g, F(g, S4(1, 2, 3, 8)), &d);
    case 5: d.positions = I(g, S1(4)); return nn_rope(g, F(g, S4(1, 2, 3, 8)), &d);
    case 6: d.positions = F(g, S1(3)); return nn_rope(g, F(g, S4(1, 2, 3, 8)), &d);
    case 7: return nn_rope(g, I(g, S4(1, 2, 3, 8)), NULL);
    case 8: return nn_sinusoidal_positions(g, 0, 8);
    default: return T(-1);
    }
}
#define BP(N) \
    static nn_tensor n_bp##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return bad_pos(g, N); }
BP(0) BP(1) BP(2) BP(3) BP(4) BP(5) BP(6) BP(7) BP(8)

static const bad_row pos_bad[] = {
    {"positions", "rope of [2, 3, 4]", n_bp0, R_SHAPE, "nn_rope|[2, 3, 4]|[B, H, T, D]", 0},
    {"positions", "rope rot_dim 3", n_bp1, R_INV, "nn_rope|rot_dim 3|even", 0},
    {"positions", "rope rot_dim 10 > D", n_bp2, R_INV, "nn_rope|rot_dim 10|D = 8", 0},
    {"positions", "rope theta 0.5", n_bp3, R_INV, "nn_rope|theta 0.5", 0},
    {"positions", "rope offset -1", n_bp4, R_INV, "nn_rope|offset -1", 0},
    {"positions", "rope positions [4] for T 3", n_bp5, R_SHAPE, "nn_rope|positions [4]|T = 3", 0},
    {"positions", "rope positions float32", n_bp6, R_SHAPE, "nn_rope|positions [3] float32", 0},
    {"positions", "rope of int32", n_bp7, R_SHAPE, "nn_rope|int32", 0},
    {"positions", "sinusoidal_positions T 0", n_bp8, R_SHAPE, "nn_sinusoidal_positions|T 0", 0},
};

/* NaN and infinities: the rotation is PyTorch's products (HF's x * cos + rotate_half(x) *
   sin), so a NaN spreads to its pair's two outputs, and an infinity to its own (inf * cos)
   and, through inf * sin, to its partner's: at position 0 (sin 0 = 0) that is inf * 0 = NaN.
   The gradient is the inverse rotation of dy, finite whatever x holds. x [1, 1, 2, 4]
   (GPT-NeoX halves: pairs (0, 2) and (1, 3)), t = 0: angle 0; t = 1: angles 1 and 0.01. */
static void rope_nanprop(const t_env *e) {
    double x[8] = {NAN, INFINITY, 1, 2, -INFINITY, 0.5, 1, 3}, y[8], dx[8];
    double c1 = cos(1.0), s1 = sin(1.0), a2 = (double)exp2f(-0.5f * (float)log2(10000.0)), c2 = cos(a2), s2 = sin(a2);
    np_case cs;
    y[0] = NAN, y[2] = NAN;          /* NaN * 1 - 1 * 0, 1 * 1 + NaN * 0 */
    y[1] = INFINITY, y[3] = NAN;     /* inf * 1 - 2 * 0, 2 * 1 + inf * 0 */
    y[4] = -INFINITY, y[6] = -INFINITY; /* -inf * c1 - 1 * s1, 1 * c1 + -inf * s1 */
    y[5] = 0.5 * c2 - 3 * s2, y[7] = 3 * c2 + 0.5 * s2;
    dx[0] = dx[1] = dx[2] = dx[3] = 1;
    dx[4] = c1 + s1, dx[6] = c1 - s1, dx[5] = c2 + s2, dx[7] = c2 - s2;
    np_init(&cs, "rope x[1, 1, 2, 4] NaN, +inf, -inf", b_rope, NULL);
    np_in(&cs, nn_shape4(1, 1, 2, 4), x, dx);
    cs.y_expect = y;
    np_run(e, &cs);
}

void suite_rope(const t_env *e) {
    T_RUN(e, rope_cases, sinusoidal_cases, learned_cases, rope_nanprop);
    t_bad_rows(e, pos_bad, (int)(sizeof pos_bad / sizeof pos_bad[0]));
}
