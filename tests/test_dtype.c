/* Storage types: nn_to_dtype between float32, bfloat16 and float16 (src/ops/cast.c,
   src/cpu/cast.c, kernels/cast.cl, kernels/storage.h), 16-bit inputs written and read as
   float32, their 2-byte elements in the memory plan, and the refusal of a 16-bit tensor
   by the ops that do not read 16-bit storage. The references round in double precision
   here (rint at the type's spacing: round to nearest, ties to even), not with the
   library's bit arithmetic; every backend must give them exactly. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "bad_rows.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dname(nn_dtype d) { return d == NN_BF16 ? "bf16" : d == NN_F16 ? "f16" : "f32"; }

/* v rounded to the 16-bit type d, as a double (float32 when d is NN_F32): p significant
   bits (bfloat16 8, float16 11), the smallest exponent emin (of the normal numbers: -126,
   -14; below it the spacing stays 2^(emin - p + 1)), and the first magnitude that rounds
   to infinity (halfway past the largest finite value). */
static double ref_round(nn_dtype d, double v) {
    int p = d == NN_BF16 ? 8 : 11, emin = d == NN_BF16 ? -126 : -14, e;
    double a = fabs(v), big = d == NN_BF16 ? ldexp(2.0 - ldexp(1.0, -8), 127) : 65520.0, q, ulp;
    if (d == NN_F32 || v != v || a == 0.0) return v;
    if (a >= big) return v < 0 ? -INFINITY : INFINITY;
    frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
    if (e - 1 < emin) e = emin + 1;
    ulp = ldexp(1.0, e - p);
    q = rint(a / ulp) * ulp;
    return v < 0 ? -q : q;
}

static int same(double got, double want) {
    if (want != want) return got != got;
    if (want == 0.0) return got == 0.0 && signbit(got) == signbit(want);
    return got == want;
}

/* count differences of got against ref_round(d, x), the first three reported */
static int check_round(const char *what, nn_dtype d, const float *x, const float *got, long n) {
    long i, bad = 0;
    for (i = 0; i < n; i++) {
        double want = ref_round(d, (double)x[i]);
        if (same((double)got[i], want)) continue;
        if (bad++ < 3) T_CHECK(0, "%s [%ld]: x %.9g gave %.9g, want %.9g", what, i, (double)x[i], (double)got[i], want);
    }
    return bad == 0;
}

#define NV 301
/* the values tried: the special ones, then ties and near-ties at both types' spacings, then
   random values from 1e-9 to 1e6 (float16's subnormals and overflow included) */
static void fill_values(float *x) {
    static const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, -65536.0f, 1e6f, 6.0e-8f,
                               2.9802322e-8f, 2.98023259e-8f, 5.9604645e-8f, 8.94069672e-8f, 6.1035156e-5f, 6.1e-5f,
                               3.3895314e38f, 3.4028235e38f, 1e-40f, -1e-45f, 1.00390625f, 1.01171875f,
                               1.0009765625f, 1.0029296875f, 0.333333343f, -2.71828175f};
    int i, k = (int)(sizeof sp / sizeof sp[0]);
    for (i = 0; i < k; i++) x[i] = sp[i];
    x[k++] = NAN;
    x[k++] = INFINITY;
    x[k++] = -INFINITY;
    for (i = k; i < NV; i++) {
        double mag = pow(10.0, t_uniform(-9.0, 6.0));
        x[i] = (float)(t_uniform(0, 1) < 0.5 ? -mag : mag);
    }
}

/* x float32 -> d (read as float32 through nn_tensor_read), back to float32, to the other
   16-bit type, and a d input written with float32 values, read and widened */
static void values_case(const t_env *e, nn_dtype d) {
    nn_context *ctx = e->ctx;
    nn_dtype other = d == NN_BF16 ? NN_F16 : NN_BF16;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_tensor x, h, z, o, w, wz, f, fz;
    float xv[NV], got[NV], mid[NV], tmp[NV];
    char label[96];
    long i;
    snprintf(label, sizeof label, "dtype: to_dtype %s values (ties, NaN, inf, subnormals)", dname(d));
    if (!t_begin(e, label)) return;
    t_seed(77 + (unsigned long long)d);
    fill_values(xv);
    memset(&gd, 0, sizeof gd);
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape1(NV));
    h = nn_to_dtype(g, x, d);
    z = nn_to_dtype(g, h, NN_F32);
    o = nn_to_dtype(g, h, other);
    w = nn_input(g, "w", d, nn_shape1(NV));
    wz = nn_to_dtype(g, w, NN_F32);
    f = nn_input(g, "f", d, nn_shape2(3, 5));
    fz = nn_to_dtype(g, nn_to_dtype(g, f, d), NN_F32); /* a 16-bit copy, then widened */
    {
        nn_dtype dt = NN_I32;
        T_CHECK(nn_tensor_dtype(g, x, &dt) == NN_OK && dt == NN_F32, "nn_tensor_dtype of a float32 input: got %d", (int)dt);
        T_CHECK(nn_tensor_dtype(g, h, &dt) == NN_OK && dt == d, "nn_tensor_dtype of to_dtype(x, %s): got %d", dname(d), (int)dt);
        T_CHECK(nn_tensor_dtype(g, o, &dt) == NN_OK && dt == other, "nn_tensor_dtype of the other 16-bit type: got %d", (int)dt);
        T_CHECK(nn_tensor_dtype(g, w, &dt) == NN_OK && dt == d, "nn_tensor_dtype of a %s input: got %d", dname(d), (int)dt);
        T_CHECK(nn_tensor_dtype(g, NN_NONE, &dt) == NN_ERR_INVALID_ARGUMENT && dt == NN_F32,
                "nn_tensor_dtype of NN_NONE: must be refused with NN_F32 written");
        T_CHECK(nn_tensor_dtype(g, x, NULL) == NN_ERR_INVALID_ARGUMENT, "nn_tensor_dtype with no out must be refused");
    }
    nn_graph_output(g, h);
    nn_graph_output(g, z);
    nn_graph_output(g, o);
    nn_graph_output(g, wz);
    nn_graph_output(g, fz);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, xv, sizeof xv), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, w, xv, sizeof xv), ctx)) goto done;
    if (!T_OK(nn_tensor_fill(g, f, 1.0f / 3.0f), ctx)) goto done;
    T_CHECK(nn_tensor_write(g, w, xv, NV * 2) == NN_ERR_SHAPE, "a write of 2 bytes an element must be refused");
    if (!T_OK(nn_graph_forward(g), ctx)) goto done;
    if (T_OK(nn_tensor_read(g, h, got, sizeof got), ctx)) check_round("to_dtype, read", d, xv, got, NV);
    if (T_OK(nn_tensor_read(g, z, got, sizeof got), ctx)) check_round("to_dtype and back", d, xv, got, NV);
    if (T_OK(nn_tensor_read(g, w, got, sizeof got), ctx)) check_round("a written input, read", d, xv, got, NV);
    if (T_OK(nn_tensor_read(g, wz, got, sizeof got), ctx)) check_round("a written input, widened", d, xv, got, NV);
    for (i = 0; i < NV; i++) mid[i] = (float)ref_round(d, (double)xv[i]);
    if (T_OK(nn_tensor_read(g, o, got, sizeof got), ctx)) {
        for (i = 0; i < NV; i++) tmp[i] = got[i];
        check_round("to the other 16-bit type", other, mid, tmp, NV);
    }
    if (T_OK(nn_tensor_read(g, fz, got, 15 * 4), ctx)) {
        float third[15];
        for (i = 0; i < 15; i++) third[i] = 1.0f / 3.0f;
        check_round("nn_tensor_fill", d, third, got, 15);
    }
done:
    nn_graph_destroy(g);
    t_end();
}

/* d(loss)/dx through x -> d -> float32 with loss = sum(y * w): w rounded to d (the
   gradient converted back at each step); and of a d input itself (a d-typed gradient). */
static void grad_case(const t_env *e, nn_dtype d) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, x16, w, y, y16;
    enum { N = 67 };
    float xv[N], wv[N], got[N];
    char label[96];
    int i;
    snprintf(label, sizeof label, "dtype: to_dtype %s gradients", dname(d));
    if (!t_begin(e, label)) return;
    t_seed(99 + (unsigned long long)d);
    for (i = 0; i < N; i++) {
        xv[i] = (float)t_uniform(-3, 3);
        wv[i] = (float)t_uniform(-2, 2);
    }
    memset(&gd, 0, sizeof gd);
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape1(N));
    x16 = nn_input(g, "x16", d, nn_shape1(N));
    w = nn_input(g, "w", NN_F32, nn_shape1(N));
    nn_graph_requires_grad(g, x);
    nn_graph_requires_grad(g, x16);
    y = nn_to_dtype(g, nn_to_dtype(g, x, d), NN_F32);
    y16 = nn_to_dtype(g, x16, NN_F32);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_add(g, nn_sum(g, nn_mul(g, y, w)), nn_sum(g, nn_mul(g, y16, w)));
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, xv, sizeof xv), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x16, xv, sizeof xv), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, w, wv, sizeof wv), ctx)) goto done;
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    if (T_OK(nn_tensor_read(g, nn_graph_grad(g, x), got, sizeof got), ctx)) check_round("d/dx", d, wv, got, N);
    if (T_OK(nn_tensor_read(g, nn_graph_grad(g, x16), got, sizeof got), ctx)) check_round("d/dx16", d, wv, got, N);
done:
    nn_graph_destroy(g);
    t_end();
}

/* The memory plan counts 2 bytes an element of 16-bit storage: x [64, 257] float32 -> h
   (float32 or d, in the arena) -> y float32 (an output): the activations differ by h's
   2 bytes an element. */
static int64_t chain_activations(const t_env *e, nn_dtype hd) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_memory_report r;
    nn_tensor x, y;
    int64_t act = -1;
    memset(&gd, 0, sizeof gd);
    memset(&r, 0, sizeof r);
    if (!T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) return -1;
    x = nn_input(g, "x", NN_F32, nn_shape2(64, 257));
    y = nn_to_dtype(g, nn_to_dtype(g, x, hd), NN_F32);
    nn_graph_output(g, y);
    if (T_OK(nn_graph_compile(g, NULL), e->ctx) && T_OK(nn_graph_memory(g, &r), e->ctx)) act = r.activations;
    nn_graph_destroy(g);
    return act;
}

static void memory_case(const t_env *e) {
    int64_t f32, bf16, f16;
    if (!t_begin(e, "dtype: 16-bit activations take 2 bytes an element in nn_graph_memory")) return;
    f32 = chain_activations(e, NN_F32);
    bf16 = chain_activations(e, NN_BF16);
    f16 = chain_activations(e, NN_F16);
    T_CHECK(f32 == 2 * 64 * 257 * 4, "float32: activations %lld, want %lld", (long long)f32, (long long)(2 * 64 * 257 * 4));
    T_CHECK(bf16 == 64 * 257 * 4 + 64 * 257 * 2, "bfloat16: activations %lld, want %lld", (long long)bf16,
            (long long)(64 * 257 * 6));
    T_CHECK(f16 == bf16, "float16: activations %lld, want %lld", (long long)f16, (long long)bf16);
    t_end();
}

/* ---- the op checker: x -> d -> float32 against the rounding in double (no gradient:
   a staircase), and float32 -> float32 (a copy) with its gradient ---- */

static nn_tensor b_round(nn_graph *g, const nn_tensor *in, const spec *s) {
    return nn_to_dtype(g, nn_to_dtype(g, in[0], (nn_dtype)s->ip[0]), NN_F32);
}
static void r_round(const spec *s, double *const *in, double *out) {
    long i, n = numel(s->shape[0]);
    for (i = 0; i < n; i++) out[i] = ref_round((nn_dtype)s->ip[0], in[0][i]);
}

static void op_cases(const t_env *e) {
    static const nn_shape shapes[3] = {{2, {7, 33}}, {2, {1, 129}}, {1, {1}}};
    int j, t;
    for (t = 0; t < 3; t++) {
        nn_dtype d = t == 0 ? NN_F32 : t == 1 ? NN_BF16 : NN_F16;
        for (j = 0; j < 3; j++) {
            char name[64];
            spec s;
            snprintf(name, sizeof name, "to_dtype %s [%lld%s", dname(d), (long long)shapes[j].dim[0],
                     shapes[j].ndim == 2 ? (j == 0 ? ", 33]" : ", 129]") : "]");
            s = mk(name, b_round, r_round, shapes[j]);
            if (d == NN_F32) in_fr(&s, shapes[j], -2.0, 2.0);
            else in_fr(&s, shapes[j], -3000.0, 3000.0);
            s.ip[0] = (int)d;
            s.grad[0] = d == NN_F32; /* the rounding is a staircase: its gradient is grad_case's */
            check_case(e, &s);
        }
    }
}

/* ---- refusals ---- */

static nn_tensor bad_dtype(nn_graph *g, int which) {
    switch (which) {
    case 0: return nn_lt(g, nn_input(g, "h", NN_BF16, S2(3, 4)), F(g, S2(3, 4)));
    case 1: return nn_add(g, I(g, S2(3, 4)), nn_input(g, "h", NN_F16, S2(3, 4)));
    case 2: return nn_matmul(g, nn_to_dtype(g, F(g, S2(3, 4)), NN_BF16), F(g, S2(4, 5)), 0, 0);
    case 3: return nn_to_dtype(g, I(g, S1(3)), NN_F32);
    case 4: return nn_to_dtype(g, F(g, S1(3)), NN_I32);
    case 5: return nn_to_dtype(g, F(g, S1(3)), (nn_dtype)7);
    case 6: return nn_input(g, "x", (nn_dtype)7, S1(3));
    case 7: { /* reshape, permute, slice and concat take 16-bit storage; flip does not */
        static const int d0[1] = {0};
        return nn_flip(g, nn_input(g, "h", NN_BF16, S2(3, 4)), d0, 1);
    }
    case 8: return nn_sum(g, nn_input(g, "h", NN_F16, S2(3, 4)));
    case 9: return nn_softmax(g, nn_input(g, "h", NN_BF16, S2(3, 4)), 1);
    default: return T(-1);
    }
}
#define BD(N) \
    static nn_tensor n_bd##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return bad_dtype(g, N); }
BD(0) BD(1) BD(2) BD(3) BD(4) BD(5) BD(6) BD(7) BD(8) BD(9)

static const bad_row dtype_bad[] = {
    {"dtype", "lt of bfloat16", n_bd0, R_SHAPE, "nn_lt|bfloat16|nn_to_dtype", 0},
    {"dtype", "add of int32 and float16", n_bd1, R_SHAPE, "nn_add|a must be float32|int32", 0},
    {"dtype", "matmul of bfloat16", n_bd2, R_SHAPE, "nn_matmul|bfloat16|nn_to_dtype", 0},
    {"dtype", "to_dtype of int32", n_bd3, R_SHAPE, "nn_to_dtype|int32 to float32", 0},
    {"dtype", "to_dtype to int32", n_bd4, R_SHAPE, "nn_to_dtype|float32 to int32", 0},
    {"dtype", "to_dtype to dtype 7", n_bd5, R_SHAPE, "nn_to_dtype|float32 to an unknown dtype", 0},
    {"dtype", "input of dtype 7", n_bd6, R_INV, "nn_input|unknown dtype 7", 0},
    {"dtype", "flip of bfloat16", n_bd7, R_SHAPE, "flip|bfloat16|nn_to_dtype", 0},
    {"dtype", "sum of float16", n_bd8, R_SHAPE, "sum|float16|nn_to_dtype", 0},
    {"dtype", "softmax of bfloat16", n_bd9, R_SHAPE, "softmax|bfloat16|nn_to_dtype", 0},
};

/* ---- safetensors in BF16 / F16: the file's dtype and size, and the parameters loaded back
   equal to the saved ones rounded ---- */

static void safetensors_case(const t_env *e, nn_dtype d) {
    nn_context *ctx = e->ctx;
    nn_graph *g1 = NULL, *g2 = NULL;
    nn_graph_desc gd;
    nn_init init;
    char path[] = "/tmp/nn-test-dtype-XXXXXX", label[96];
    float w[3 * 7], got[3 * 7];
    unsigned char file[4096];
    long size = 0;
    int fd;
    FILE *f;
    snprintf(label, sizeof label, "dtype: safetensors saved in %s, loaded back", dname(d));
    if (!t_begin(e, label)) return;
    fd = mkstemp(path);
    if (!T_CHECK(fd >= 0, "mkstemp failed")) goto done;
    close(fd);
    memset(&gd, 0, sizeof gd);
    memset(&init, 0, sizeof init);
    init.kind = NN_INIT_UNIFORM;
    init.a = -3.0f;
    init.b = 3.0f;
    if (!T_OK(nn_graph_create(ctx, &gd, &g1), ctx) || !T_OK(nn_graph_create(ctx, &gd, &g2), ctx)) goto done;
    nn_graph_output(g1, nn_param(g1, "fc.weight", nn_shape2(3, 7), init));
    init.kind = NN_INIT_ZEROS;
    nn_graph_output(g2, nn_param(g2, "fc.weight", nn_shape2(3, 7), init));
    if (!T_OK(nn_graph_compile(g1, NULL), ctx) || !T_OK(nn_graph_compile(g2, NULL), ctx)) goto done;
    if (!T_OK(nn_tensor_read(g1, nn_graph_find(g1, "fc.weight"), w, sizeof w), ctx)) goto done;
    T_CHECK(nn_graph_save_safetensors_dtype(g1, path, NN_I32) == NN_ERR_INVALID_ARGUMENT, "an int32 save must be refused");
    if (!T_OK(nn_graph_save_safetensors_dtype(g1, path, d), ctx)) goto done;
    f = fopen(path, "rb");
    if (f) {
        size = (long)fread(file, 1, sizeof file - 1, f);
        fclose(f);
    }
    if (T_CHECK(size > 8, "cannot read back %s", path)) {
        unsigned long long h = 0;
        int k;
        for (k = 7; k >= 0; k--) h = (h << 8) | file[k];
        file[size] = 0;
        T_CHECK(h + 8 + 2 * 21 == (unsigned long long)size, "file size %ld, header %llu: want 2 bytes an element", size, h);
        if (h + 8 <= (unsigned long long)size) file[8 + h] = 0;
        T_CHECK(strstr((const char *)file + 8, d == NN_BF16 ? "\"dtype\":\"BF16\"" : "\"dtype\":\"F16\"") != NULL,
                "the header has no %s dtype: %s", dname(d), (const char *)file + 8);
    }
    if (T_OK(nn_graph_load_safetensors(g2, path, 0), ctx) &&
        T_OK(nn_tensor_read(g2, nn_graph_find(g2, "fc.weight"), got, sizeof got), ctx))
        check_round("loaded back", d, w, got, 21);
done:
    nn_graph_destroy(g1);
    nn_graph_destroy(g2);
    remove(path);
    t_end();
}

/* ---- activations in 16-bit storage: against the float32 path. Graph A: x float32 -> d ->
   f -> float32, loss sum(y * w); graph B, float32: f of x rounded to d, loss sum(f * w
   rounded to d). A's y and dx must be B's rounded to d, exactly (the 16-bit path is the
   float32 one on the widened values, rounded at each store), and A's y within 2e-2 (bf16)
   or 2e-3 (fp16) of f on x itself, as max |difference| / max |f| over the row: the input's
   rounding (up to 2^-8 or 2^-11 relative, 3 units at x = 3) through f' plus the output's
   rounding, which exp at x near 3 comes closest to (about 1.2e-2 and 1.5e-3) ---- */

typedef struct act_row {
    const char *name;
    nn_tensor (*f)(nn_graph *g, nn_tensor x);
} act_row;
static nn_tensor a_leaky(nn_graph *g, nn_tensor x) { return nn_leaky_relu(g, x, 0.1f); }
static nn_tensor a_elu(nn_graph *g, nn_tensor x) { return nn_elu(g, x, 1.0f); }
static nn_tensor a_clamp(nn_graph *g, nn_tensor x) { return nn_clamp(g, x, -1.0f, 1.5f); }
static nn_tensor a_softplus(nn_graph *g, nn_tensor x) { return nn_softplus(g, x, 1.0f, 20.0f); }
static const act_row acts[] = {
    {"relu", nn_relu}, {"leaky_relu", a_leaky}, {"sigmoid", nn_sigmoid}, {"tanh", nn_tanh}, {"gelu", nn_gelu},
    {"gelu_tanh", nn_gelu_tanh}, {"silu", nn_silu}, {"elu", a_elu}, {"selu", nn_selu}, {"softplus", a_softplus},
    {"mish", nn_mish}, {"hardswish", nn_hardswish}, {"softsign", nn_softsign}, {"log_sigmoid", nn_log_sigmoid},
    {"exp", nn_exp}, {"sin", nn_sin}, {"clamp", a_clamp},
};
#define NA ((int)(sizeof acts / sizeof acts[0]))
#define AN 129

static void act_case(const t_env *e, nn_dtype d) {
    nn_context *ctx = e->ctx;
    nn_graph *ga = NULL, *gb = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor xa[NA], xb[NA], wa[NA], wb[NA], ya[NA], yb[NA], la = {0, 0}, lb = {0, 0}, yf[NA], xf[NA];
    static float x[NA][AN], xr[NA][AN], w[NA][AN], wr[NA][AN], got[AN], want[AN], gotd[AN], ref32[AN];
    double tol = d == NN_BF16 ? 2e-2 : 2e-3;
    char label[96];
    int k, i;
    snprintf(label, sizeof label, "dtype: activations in %s against the float32 path", dname(d));
    if (!t_begin(e, label)) return;
    t_seed(123 + (unsigned long long)d);
    for (k = 0; k < NA; k++)
        for (i = 0; i < AN; i++) {
            x[k][i] = (float)t_uniform(-3, 3);
            w[k][i] = (float)t_uniform(-1, 1);
            xr[k][i] = (float)ref_round(d, x[k][i]);
            wr[k][i] = (float)ref_round(d, w[k][i]);
        }
    memset(&gd, 0, sizeof gd);
    if (!T_OK(nn_graph_create(ctx, &gd, &ga), ctx) || !T_OK(nn_graph_create(ctx, &gd, &gb), ctx)) goto done;
    for (k = 0; k < NA; k++) {
        nn_tensor sa, sb;
        xa[k] = nn_input(ga, "x", NN_F32, nn_shape1(AN));
        wa[k] = nn_input(ga, "w", NN_F32, nn_shape1(AN));
        xb[k] = nn_input(gb, "x", NN_F32, nn_shape1(AN));
        wb[k] = nn_input(gb, "w", NN_F32, nn_shape1(AN));
        nn_graph_requires_grad(ga, xa[k]);
        nn_graph_requires_grad(gb, xb[k]);
        ya[k] = nn_to_dtype(ga, acts[k].f(ga, nn_to_dtype(ga, xa[k], d)), NN_F32);
        yb[k] = acts[k].f(gb, xb[k]);
        xf[k] = nn_input(gb, "xf", NN_F32, nn_shape1(AN));
        yf[k] = acts[k].f(gb, xf[k]); /* f on x unrounded */
        nn_graph_output(ga, ya[k]);
        nn_graph_output(gb, yb[k]);
        nn_graph_output(gb, yf[k]);
        sa = nn_sum(ga, nn_mul(ga, ya[k], wa[k]));
        sb = nn_sum(gb, nn_mul(gb, yb[k], wb[k]));
        la = k ? nn_add(ga, la, sa) : sa;
        lb = k ? nn_add(gb, lb, sb) : sb;
    }
    memset(&cd, 0, sizeof cd);
    cd.loss = la;
    if (!T_OK(nn_graph_compile(ga, &cd), ctx)) goto done;
    cd.loss = lb;
    if (!T_OK(nn_graph_compile(gb, &cd), ctx)) goto done;
    for (k = 0; k < NA; k++) {
        T_OK(nn_tensor_write(ga, xa[k], x[k], sizeof x[k]), ctx);
        T_OK(nn_tensor_write(ga, wa[k], w[k], sizeof w[k]), ctx);
        T_OK(nn_tensor_write(gb, xb[k], xr[k], sizeof xr[k]), ctx);
        T_OK(nn_tensor_write(gb, wb[k], wr[k], sizeof wr[k]), ctx);
        T_OK(nn_tensor_write(gb, xf[k], x[k], sizeof x[k]), ctx);
    }
    if (!T_OK(nn_graph_step(ga), ctx) || !T_OK(nn_graph_step(gb), ctx)) goto done;
    for (k = 0; k < NA; k++) {
        char what[96];
        double g64[AN], r64[AN];
        if (!T_OK(nn_tensor_read(gb, yb[k], want, sizeof want), ctx) || !T_OK(nn_tensor_read(ga, ya[k], got, sizeof got), ctx))
            break;
        snprintf(what, sizeof what, "%s forward, against float32 rounded", acts[k].name);
        check_round(what, d, want, got, AN);
        if (T_OK(nn_tensor_read(gb, yf[k], ref32, sizeof ref32), ctx)) {
            double err = 0, big = 0;
            for (i = 0; i < AN; i++) {
                g64[i] = fabs((double)got[i] - (double)ref32[i]);
                r64[i] = fabs((double)ref32[i]);
                if (g64[i] > err) err = g64[i];
                if (r64[i] > big) big = r64[i];
            }
            err = big > 0 ? err / big : err;
            T_CHECK(err <= tol, "%s in %s: relative error %.3g against float32 > %.0e", acts[k].name, dname(d), err, tol);
        }
        if (!T_OK(nn_tensor_read(gb, nn_graph_grad(gb, xb[k]), want, sizeof want), ctx) ||
            !T_OK(nn_tensor_read(ga, nn_graph_grad(ga, xa[k]), gotd, sizeof gotd), ctx))
            break;
        snprintf(what, sizeof what, "%s gradient, against float32 rounded", acts[k].name);
        check_round(what, d, want, gotd, AN);
    }
done:
    nn_graph_destroy(ga);
    nn_graph_destroy(gb);
    t_end();
}

void suite_dtype(const t_env *e) {
    values_case(e, NN_BF16);
    values_case(e, NN_F16);
    grad_case(e, NN_BF16);
    grad_case(e, NN_F16);
    act_case(e, NN_BF16);
    act_case(e, NN_F16);
    memory_case(e);
    safetensors_case(e, NN_BF16);
    safetensors_case(e, NN_F16);
    op_cases(e);
    t_bad_rows(e, dtype_bad, (int)(sizeof dtype_bad / sizeof dtype_bad[0]));
}
