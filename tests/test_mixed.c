/* Mixed precision (issue 20): nn_matmul on 16-bit storage (bf16 @ bf16 -> bf16, float32
   accumulation; src/ops/matmul.c on gemm16.c's CPU paths and kernels/gemm.cl's 16-bit
   programs) and the graph's precision policy (nn_graph_desc.precision: float32 operands
   converted around every matmul, parameters kept float32).

   The op checker's cases: inputs drawn and then rounded to the type here (so the op's
   input conversions are exact and the double reference is plain torch.matmul), the loss's
   weights exact in 16 bits (spec.w16), so the output and each gradient are rounded once,
   at the matmul's store: half a unit in the last place, 2^-9 relative (bf16) or 2^-11
   (fp16), against double. The stated tolerances (tol) are two units, 8e-3 (bf16) and
   2e-3 (fp16): room for the CPU and OpenCL float32 sums, which differ in their last bits,
   to round to neighbouring 16-bit values. Gradients element by element (inputs of at most
   1,024 elements, dirs 0). */
#include "test.h"
#include "bad_rows.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *dname(nn_dtype d) { return d == NN_BF16 ? "bf16" : d == NN_F16 ? "f16" : "f32"; }

/* v rounded to nearest even at d's precision (bfloat16: 8 significant bits, float16: 11,
   its subnormals below 2^-14), written from the formats' definitions; no overflow here */
static double round16(nn_dtype d, double v) {
    int p = d == NN_BF16 ? 8 : 11, emin = d == NN_BF16 ? -126 : -14, e;
    double a = fabs(v), ulp, q;
    if (d == NN_F32 || a == 0.0 || v != v) return v;
    frexp(a, &e);
    if (e - 1 < emin) e = emin + 1;
    ulp = ldexp(1.0, e - p);
    q = rint(a / ulp) * ulp;
    return v < 0 ? -q : q;
}

/* float32 in (the reference: t_ref_matmul, tests/test_matmul.c), d's matmul, float32 out (s->ip[0]: d) */
static nn_tensor b_mm16(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_dtype d = (nn_dtype)s->ip[0];
    return nn_to_dtype(g, nn_matmul(g, nn_to_dtype(g, in[0], d), nn_to_dtype(g, in[1], d), s->ta, s->tb), NN_F32);
}

/* the drawn inputs rounded to the case's type */
static void fill16(const spec *s, double *const *in) {
    int k;
    long i;
    for (k = 0; k < s->n_in; k++)
        for (i = 0; i < numel(s->shape[k]); i++) in[k][i] = round16((nn_dtype)s->ip[0], in[k][i]);
}

typedef struct mm16_row {
    int a[4], b[4], out[4]; /* stored shapes, 0-terminated */
    int ta, tb;
    const char *what;
} mm16_row;

static nn_shape shp(const int *d) {
    nn_shape s;
    memset(&s, 0, sizeof s);
    while (s.ndim < 4 && d[s.ndim] > 0) {
        s.dim[s.ndim] = d[s.ndim];
        s.ndim++;
    }
    return s;
}

/* odd shapes; each path of the matmul node: one GEMM (NN, NT, TN, TT), a vector, batches
   folded into M, batched launches, and gradients summed over broadcast batch dims (the
   float32 scratch taking beta 1 before the one rounding) */
static const mm16_row mm16_rows[] = {
    {{7, 33}, {33, 5}, {7, 5}, 0, 0, "[7, 33] @ [33, 5]"},
    {{3, 20}, {20, 33}, {3, 33}, 0, 0, "[3, 20] @ [20, 33]"}, /* whole vectors of B (N >= 16) */
    {{7, 33}, {5, 33}, {7, 5}, 0, 1, "[7, 33] @ [5, 33]^T"},
    {{33, 3}, {33, 7}, {3, 7}, 1, 0, "[33, 3]^T @ [33, 7]"},
    {{33, 1}, {3, 33}, {1, 3}, 1, 1, "[33, 1]^T @ [3, 33]^T"},
    {{33}, {33, 7}, {7}, 0, 0, "[33] @ [33, 7]"},
    {{3, 7, 9}, {9, 5}, {3, 7, 5}, 0, 0, "[3, 7, 9] @ [9, 5]"},
    {{3, 5, 4}, {3, 4, 7}, {3, 5, 7}, 0, 0, "[3, 5, 4] @ [3, 4, 7]"},
    {{2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}, 0, 0, "[2, 1, 3, 4] @ [5, 4, 6]"},
};

static void matmul16_cases(const t_env *e) {
    int t, j;
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        for (j = 0; j < (int)(sizeof mm16_rows / sizeof mm16_rows[0]); j++) {
            const mm16_row *r = &mm16_rows[j];
            char name[96];
            spec s;
            snprintf(name, sizeof name, "matmul %s %s", dname(d), r->what);
            s = mk(name, b_mm16, t_ref_matmul, shp(r->out));
            in_f(&s, shp(r->a));
            in_f(&s, shp(r->b));
            s.ta = r->ta;
            s.tb = r->tb;
            s.ip[0] = (int)d;
            s.fill = fill16;
            s.w16 = 1;
            s.tol = d == NN_BF16 ? 8e-3 : 2e-3;
            check_case(e, &s);
        }
    }
}

/* ---- the precision policy: nn_linear_layer in a graph made with precision BF16 / FP16.
   Reference (F.linear under torch.autocast: the output in the type, the bias converted and
   added there): y = r(r(sum_k r(x) r(w)) + r(b)) (r: rounding to the type), within two
   units of the type of the double sums. The gradients of the float32 tensors the policy
   converted (the weight, the bias and the input x) are float32 sums of the 16-bit products,
   not rounded to the type (PyTorch's autocast rounds them first): dW = sum_b gy x~ for gy
   exact in 16 bits, db = sum_b gy, dx = gy W~, within float32's rounding (1e-5) of the
   double sums; the weight and its gradient read as float32. ---- */

#define PB 5
#define PI 12
#define PO 7

static void policy_case(const t_env *e, nn_precision prec) {
    nn_context *ctx = e->ctx;
    nn_dtype d = prec == NN_PRECISION_BF16 ? NN_BF16 : NN_F16;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y, wl, loss, w, b;
    float xv[PB * PI], wv[PO * PI], bv[PO], gyv[PB * PO], got[PB * PO], gw[PO * PI], gb[PO], gx[PB * PI];
    double want_y[PB * PO], want_gw[PO * PI], want_gb[PO], want_gx[PB * PI], gy_val[PB * PO];
    double tol = d == NN_BF16 ? 8e-3 : 2e-3;
    char label[96];
    int i, j, k;
    snprintf(label, sizeof label, "mixed: precision %s, nn_linear_layer against its reference", dname(d));
    if (!t_begin(e, label)) return;
    t_seed(2020 + (unsigned long long)prec);
    for (i = 0; i < PB * PI; i++) xv[i] = (float)t_uniform(-2, 2);
    for (i = 0; i < PB * PO; i++) gyv[i] = (float)((t_randint(256) - 128) / 128.0); /* exact in 16 bits */
    memset(&gd, 0, sizeof gd);
    gd.precision = prec;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(PB, PI));
    wl = nn_input(g, "wl", NN_F32, nn_shape2(PB, PO));
    nn_graph_requires_grad(g, x);
    y = nn_linear_layer(g, x, PO, NULL, "fc");
    loss = nn_sum(g, nn_mul(g, y, wl));
    nn_graph_output(g, y);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.keep_grads = 1;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    w = nn_graph_find(g, "fc.weight");
    b = nn_graph_find(g, "fc.bias");
    if (!T_OK(nn_tensor_read(g, w, wv, sizeof wv), ctx) || !T_OK(nn_tensor_read(g, b, bv, sizeof bv), ctx)) goto done;
    T_OK(nn_tensor_write(g, x, xv, sizeof xv), ctx);
    T_OK(nn_tensor_write(g, wl, gyv, sizeof gyv), ctx);
    if (!T_OK(nn_graph_forward(g), ctx)) goto done;
    /* forward only: the gradients come from a step's backward, read before its update
       through keep_grads (the weight's gradient is of the step's own weights) */
    if (!T_OK(nn_tensor_read(g, y, got, sizeof got), ctx)) goto done;
    for (i = 0; i < PB; i++)
        for (j = 0; j < PO; j++) {
            double acc = 0;
            for (k = 0; k < PI; k++) acc += round16(d, xv[i * PI + k]) * round16(d, wv[j * PI + k]);
            want_y[i * PO + j] = round16(d, (double)(float)round16(d, acc) + (double)(float)round16(d, bv[j]));
            gy_val[i * PO + j] = gyv[i * PO + j];
        }
    for (i = 0; i < PB * PO; i++) {
        double err = fabs((double)got[i] - want_y[i]) / (fabs(want_y[i]) + 1e-3);
        if (!T_CHECK(err <= tol, "y[%d] = %.9g, want %.9g (%s)", i, (double)got[i], want_y[i], dname(d))) break;
    }
    if (!T_OK(nn_graph_step(g), ctx)) goto done;
    if (!T_OK(nn_tensor_read(g, nn_graph_grad(g, w), gw, sizeof gw), ctx) ||
        !T_OK(nn_tensor_read(g, nn_graph_grad(g, b), gb, sizeof gb), ctx) ||
        !T_OK(nn_tensor_read(g, nn_graph_grad(g, x), gx, sizeof gx), ctx))
        goto done;
    for (j = 0; j < PO; j++) {
        double s = 0;
        for (k = 0; k < PI; k++) {
            double acc = 0;
            for (i = 0; i < PB; i++) acc += gy_val[i * PO + j] * round16(d, xv[i * PI + k]);
            want_gw[j * PI + k] = acc;
        }
        for (i = 0; i < PB; i++) s += gy_val[i * PO + j];
        want_gb[j] = s;
    }
    for (i = 0; i < PB; i++)
        for (k = 0; k < PI; k++) {
            double acc = 0;
            for (j = 0; j < PO; j++) acc += gy_val[i * PO + j] * round16(d, wv[j * PI + k]);
            want_gx[i * PI + k] = acc;
        }
    for (i = 0; i < PO * PI; i++)
        if (!T_CHECK(fabs(gw[i] - want_gw[i]) <= 1e-5 * (1 + fabs(want_gw[i])), "d fc.weight[%d] = %.9g, want %.9g", i,
                     (double)gw[i], want_gw[i]))
            break;
    for (i = 0; i < PO; i++)
        if (!T_CHECK(fabs(gb[i] - want_gb[i]) <= 1e-5 * (1 + fabs(want_gb[i])), "d fc.bias[%d] = %.9g, want %.9g", i,
                     (double)gb[i], want_gb[i]))
            break;
    for (i = 0; i < PB * PI; i++)
        if (!T_CHECK(fabs(gx[i] - want_gx[i]) <= 1e-5 * (1 + fabs(want_gx[i])), "dx[%d] = %.9g, want %.9g", i,
                     (double)gx[i], want_gx[i]))
            break;
done:
    nn_graph_destroy(g);
    t_end();
}

/* ---- training: a two-layer MLP regression, 60 Adam steps in float32 and in each 16-bit
   policy from the same initial weights; the 16-bit final loss within 5% of float32's, and
   both under a quarter of the first ---- */

#define TN 64
#define TI 16
#define TH 32

static int train_mlp(nn_context *ctx, nn_precision prec, const float *xv, const float *yv, float *first, float *last) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y, h, out, loss;
    int ok = 0;
    memset(&gd, 0, sizeof gd);
    gd.precision = prec;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(TN, TI));
    y = nn_input(g, "y", NN_F32, nn_shape2(TN, 1));
    h = nn_tanh(g, nn_linear_layer(g, x, TH, NULL, "fc1"));
    out = nn_linear_layer(g, h, 1, NULL, "fc2");
    loss = nn_mse_loss(g, out, y, NULL);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-2f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_write(g, x, xv, TN * TI * sizeof(float)), ctx);
    T_OK(nn_tensor_write(g, y, yv, TN * sizeof(float)), ctx);
    ok = t_train_losses(g, ctx, loss, 60, first, last);
done:
    nn_graph_destroy(g);
    return ok;
}

static void train_case(const t_env *e) {
    static float xv[TN * TI], yv[TN];
    float f32_first = 0, f32_last = 0, first = 0, last = 0;
    int i, k, p;
    if (!t_begin(e, "mixed: an MLP trained in bf16 and fp16 against float32 (60 Adam steps)")) return;
    t_seed(20);
    for (i = 0; i < TN; i++) {
        double s = 0;
        for (k = 0; k < TI; k++) {
            xv[i * TI + k] = (float)t_uniform(-1, 1);
            s += sin(1.5 * xv[i * TI + k] * (k % 3 + 1));
        }
        yv[i] = (float)(s / 4);
    }
    if (!train_mlp(e->ctx, NN_PRECISION_FP32, xv, yv, &f32_first, &f32_last)) goto done;
    T_CHECK(f32_last < 0.25f * f32_first, "float32 did not train: %g -> %g", (double)f32_first, (double)f32_last);
    for (p = 1; p <= 2; p++) {
        nn_precision prec = p == 1 ? NN_PRECISION_BF16 : NN_PRECISION_FP16;
        if (!train_mlp(e->ctx, prec, xv, yv, &first, &last)) break;
        T_CHECK(fabs((double)first - (double)f32_first) <= 0.02 * f32_first, "%s first loss %g, float32 %g",
                p == 1 ? "bf16" : "fp16", (double)first, (double)f32_first);
        T_CHECK(fabs((double)last - (double)f32_last) <= 0.05 * f32_last, "%s final loss %g, float32 %g",
                p == 1 ? "bf16" : "fp16", (double)last, (double)f32_last);
    }
done:
    t_end();
}

/* ---- binary elementwise ops on 16-bit storage: add, sub, mul, div of two bf16 (fp16)
   tensors, same shapes, a bias [33] and a scalar [1] broadcast, through the op checker.
   Inputs rounded to the type first (fill16), so the reference is the double op on them; the
   output is rounded once at the op's store (half a unit), each gradient once at its store,
   and a broadcast operand's gradient is the float32 sum of the stored 16-bit terms rounded
   once more: tol two units (8e-3 bf16, 2e-3 fp16), as the matmul cases. mul's and div's
   broadcast b: its gradient sums 21 (693) products each rounded to the type first (as
   PyTorch's autocast sums a bf16 gradient), whose errors add up where the sum cancels:
   measured 3.1e-2 (bf16) and 5.5e-3 (fp16) against finite differences, held to 5e-2 and
   1.2e-2. div's b in [0.5, 2). ---- */

static nn_tensor b_bin16(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_dtype d = (nn_dtype)s->ip[0];
    nn_tensor a = nn_to_dtype(g, in[0], d), b = nn_to_dtype(g, in[1], d), y;
    switch (s->ip[1]) {
    case 0: y = nn_add(g, a, b); break;
    case 1: y = nn_sub(g, a, b); break;
    case 2: y = nn_mul(g, a, b); break;
    default: y = nn_div(g, a, b); break;
    }
    return nn_to_dtype(g, y, NN_F32);
}

/* b broadcast over a's leading dims (b's elements the trailing ones) */
static void r_bin16(const spec *s, double *const *in, double *out) {
    long n = numel(s->shape[0]), nb = numel(s->shape[1]), i;
    for (i = 0; i < n; i++) { /* b: the trailing [33] or [1], or [7, 1] over [3, 7, 33] */
        double a = in[0][i], b = s->shape[1].ndim == 2 ? in[1][(i / 33) % 7] : in[1][i % nb];
        out[i] = s->ip[1] == 0 ? a + b : s->ip[1] == 1 ? a - b : s->ip[1] == 2 ? a * b : a / b;
    }
}

static void binary16_cases(const t_env *e) {
    static const char *const op[4] = {"add", "sub", "mul", "div"};
    int t, j, v;
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        for (j = 0; j < 4; j++)
            for (v = 0; v < 4; v++) { /* v 3: a middle dim's broadcast (a conv's [K, 1, 1] bias) */
                nn_shape bs = v == 0 ? nn_shape3(3, 7, 33) : v == 1 ? nn_shape1(33) : v == 2 ? nn_shape1(1) : nn_shape2(7, 1);
                char name[96];
                spec s;
                snprintf(name, sizeof name, "%s %s [3, 7, 33] with %s", op[j], dname(d),
                         v == 0 ? "[3, 7, 33]" : v == 1 ? "[33]" : v == 2 ? "[1]" : "[7, 1]");
                s = mk(name, b_bin16, r_bin16, nn_shape3(3, 7, 33));
                in_f(&s, nn_shape3(3, 7, 33));
                if (j == 3) in_fr(&s, bs, 0.5, 2.0);
                else in_f(&s, bs);
                s.ip[0] = (int)d;
                s.ip[1] = j;
                s.fill = fill16;
                s.w16 = 1;
                s.tol = d == NN_BF16 ? 8e-3 : 2e-3;
                if (v > 0 && j >= 2) s.tol = d == NN_BF16 ? 5e-2 : 1.2e-2; /* below */
                check_case(e, &s);
            }
    }
}

/* ---- PyTorch's type promotion: bf16 + f32 is f32 (the 16-bit operand converted, the sum
   not rounded to 16 bits: a float32 op, which nn_softmax takes), bf16 + bf16 stays bf16
   (nn_softmax refuses it outside a policy; nn_reshape takes it, a 16-bit view) ---- */

static void promotion_case(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor h, f, y, z;
    float hv[15], fv[15], got[15];
    int i;
    if (!t_begin(e, "mixed: bf16 + f32 is a float32 add, bf16 + bf16 a bf16 one")) return;
    t_seed(77);
    for (i = 0; i < 15; i++) {
        hv[i] = (float)round16(NN_BF16, t_uniform(-2, 2));
        fv[i] = (float)t_uniform(-2, 2);
    }
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    h = nn_input(g, "h", NN_BF16, nn_shape2(3, 5));
    f = nn_input(g, "f", NN_F32, nn_shape2(3, 5));
    y = nn_softmax(g, nn_add(g, h, f), 1);
    z = nn_reshape(g, nn_add(g, h, h), nn_shape1(15));
    T_CHECK(y.id >= 0 && z.id >= 0, "build failed: %s", nn_context_last_error(ctx));
    nn_softmax(g, z, 0);
    T_CHECK(nn_graph_status(g) == NN_ERR_SHAPE && strstr(nn_context_last_error(ctx), "bfloat16") != NULL,
            "softmax of bf16 + bf16 was not refused: %s", nn_context_last_error(ctx));
done:
    nn_graph_destroy(g);
    g = NULL;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto end;
    h = nn_input(g, "h", NN_BF16, nn_shape2(3, 5));
    f = nn_input(g, "f", NN_F32, nn_shape2(3, 5));
    y = nn_add(g, h, f);
    nn_graph_output(g, y);
    if (!T_OK(nn_graph_compile(g, NULL), ctx)) goto end;
    T_OK(nn_tensor_write(g, h, hv, sizeof hv), ctx);
    T_OK(nn_tensor_write(g, f, fv, sizeof fv), ctx);
    if (!T_OK(nn_graph_forward(g), ctx) || !T_OK(nn_tensor_read(g, y, got, sizeof got), ctx)) goto end;
    for (i = 0; i < 15; i++)
        if (!T_CHECK(got[i] == hv[i] + fv[i], "y[%d] = %.9g, want the float32 sum %.9g", i, (double)got[i],
                     (double)(hv[i] + fv[i])))
            break;
end:
    nn_graph_destroy(g);
    t_end();
}

/* ---- the policy's memory (nn_graph_memory): an MLP 784-1024-1024-10 at batch 256 with
   cross-entropy and Adam, compiled in float32 and in bf16: the bf16 plan's activations at
   their peak (activations_max) at most 0.55x float32's (the matmuls' products, the bias adds
   and the ReLUs in 16 bits), and so the activations' gradients at their peak
   (activation_gradients_max: 16 bits from the loss's gradient down, no float32 copy of a
   weight's or an activation's size on the way); the parameters' gradients the same
   float32 bytes as the parameters in both (master weights: float32 sums straight into
   them). bench/gpt_bench mem prints them all. ---- */

static int mlp_memory(nn_context *ctx, nn_precision prec, nn_memory_report *m) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, lab, h;
    int ok = 0;
    memset(&gd, 0, sizeof gd);
    gd.precision = prec;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape2(256, 784));
    lab = nn_input(g, "y", NN_I32, nn_shape1(256));
    h = nn_relu(g, nn_linear_layer(g, x, 1024, NULL, "fc1"));
    h = nn_relu(g, nn_linear_layer(g, h, 1024, NULL, "fc2"));
    h = nn_linear_layer(g, h, 10, NULL, "fc3");
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_cross_entropy_loss(g, h, lab, NULL);
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-3f;
    if (T_OK(nn_graph_compile(g, &cd), ctx) && T_OK(nn_graph_memory(g, m), ctx)) ok = 1;
    nn_graph_destroy(g);
    return ok;
}

static void memory_case(const t_env *e) {
    nn_memory_report f, b;
    if (!t_begin(e, "mixed: an MLP's activations and their gradients in bf16 at most 0.55x float32's (nn_graph_memory)")) return;
    if (mlp_memory(e->ctx, NN_PRECISION_FP32, &f) && mlp_memory(e->ctx, NN_PRECISION_BF16, &b)) {
        T_CHECK(b.activations_max <= 0.55 * (double)f.activations_max, "activations bf16 %lld bytes, float32 %lld",
                (long long)b.activations_max, (long long)f.activations_max);
        T_CHECK(b.activation_gradients_max <= 0.55 * (double)f.activation_gradients_max && b.activation_gradients_max > 0,
                "activations' gradients bf16 %lld bytes, float32 %lld", (long long)b.activation_gradients_max,
                (long long)f.activation_gradients_max);
        T_CHECK(f.parameter_gradients == f.parameters && b.parameter_gradients == f.parameters,
                "parameters' gradients: float32 %lld, bf16 %lld bytes; the parameters %lld", (long long)f.parameter_gradients,
                (long long)b.parameter_gradients, (long long)f.parameters);

    }
    t_end();
}

/* ---- a broadcast operand's gradient from 16-bit sums: b (a float32 input converted to
   16 bits, as a policy converts a bias) added to a 16-bit x of shape sx, loss sum(y * wl).
   b's float32 gradient is SUM_TO over the 16-bit gradient as it is (16 bits read, float32
   sums, no float32 copy) straight into b: element j the float32 adds, in index order, of
   the rounded wl over its cells: the same bits on every backend. Shapes with b kept
   innermost ([C] of [R, C]) and summed innermost ([R, 1] of [R, C]), odd sizes. ---- */
static void bias16_case(const t_env *e, nn_dtype d, int R, int C, int col) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, b, wl, y, loss;
    int nb = col ? R : C, i, j;
    float *xv = (float *)calloc((size_t)R * C, 4), *wv = (float *)calloc((size_t)R * C, 4), *bv = (float *)calloc((size_t)nb, 4);
    float *gb = (float *)calloc((size_t)nb, 4);
    char label[128];
    snprintf(label, sizeof label, "mixed: %s [%d, %d] + b [%d%s]: b's float32 gradient from 16-bit sums, in order", dname(d),
             R, C, nb, col ? ", 1" : "");
    if (!t_begin(e, label)) goto out;
    if (!xv || !wv || !bv || !gb) {
        T_CHECK(0, "out of memory");
        goto done;
    }
    t_seed(4040 + (unsigned long long)(R * 131 + C + col));
    for (i = 0; i < R * C; i++) xv[i] = (float)t_uniform(-1, 1), wv[i] = (float)t_uniform(-3, 3);
    for (i = 0; i < nb; i++) bv[i] = (float)t_uniform(-1, 1);
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(R, C));
    b = nn_input(g, "b", NN_F32, col ? nn_shape2(R, 1) : nn_shape1(C));
    wl = nn_input(g, "wl", NN_F32, nn_shape2(R, C));
    nn_graph_requires_grad(g, b);
    y = nn_add(g, nn_to_dtype(g, x, d), nn_to_dtype(g, b, d));
    loss = nn_sum(g, nn_mul(g, nn_to_dtype(g, y, NN_F32), wl));
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.keep_grads = 1;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_write(g, x, xv, (size_t)R * C * 4), ctx);
    T_OK(nn_tensor_write(g, b, bv, (size_t)nb * 4), ctx);
    T_OK(nn_tensor_write(g, wl, wv, (size_t)R * C * 4), ctx);
    if (!T_OK(nn_graph_step(g), ctx) || !T_OK(nn_tensor_read(g, nn_graph_grad(g, b), gb, (size_t)nb * 4), ctx)) goto done;
    for (j = 0; j < nb; j++) {
        float acc = 0.0f; /* the float32 adds in index order of the gradient's 16-bit values */
        if (col)
            for (i = 0; i < C; i++) acc += (float)round16(d, wv[j * C + i]);
        else
            for (i = 0; i < R; i++) acc += (float)round16(d, wv[i * C + j]);
        if (!T_CHECK(memcmp(&acc, &gb[j], 4) == 0, "d b[%d] = %.9g, want %.9g (%s)", j, (double)gb[j], (double)acc, dname(d)))
            break;
    }
done:
    nn_graph_destroy(g);
    t_end();
out:
    free(xv);
    free(wv);
    free(bv);
    free(gb);
}

static void bias16_cases(const t_env *e) {
    static const int shapes[][3] = {{1, 1, 0}, {3, 7, 0}, {127, 33, 0}, {7, 1, 1}, {33, 127, 1}};
    int k, d;
    for (d = 0; d < 2; d++)
        for (k = 0; k < 5; k++) bias16_case(e, d ? NN_F16 : NN_BF16, shapes[k][0], shapes[k][1], shapes[k][2]);
}

/* ---- a 16-bit tensor into an op without 16-bit bodies under the policy: the op reads the
   float32 copy, and its output is float32 (a view such as nn_reshape of a bf16 matmul once
   kept the 16-bit dtype over the float32 copy's buffer and read it as 16-bit words). The
   reshape of the product against the product converted by nn_to_dtype, bitwise. ---- */
static void view16_case(const t_env *e, nn_precision prec) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_tensor x, y, r, c;
    float xv[5 * 12], rv[35], cv[35];
    int i;
    if (!t_begin(e, prec == NN_PRECISION_BF16 ? "mixed: bf16 policy, reshape of a 16-bit product reads it as float32"
                                              : "mixed: fp16 policy, reshape of a 16-bit product reads it as float32"))
        return;
    memset(&gd, 0, sizeof gd);
    gd.precision = prec;
    for (i = 0; i < 5 * 12; i++) xv[i] = (float)((i * 37) % 19) / 9.0f - 1.0f;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    x = nn_input(g, "x", NN_F32, nn_shape2(5, 12));
    y = nn_linear_layer(g, x, 7, NULL, "fc");
    r = nn_reshape(g, y, nn_shape1(35));
    c = nn_to_dtype(g, y, NN_F32);
    nn_graph_output(g, r);
    nn_graph_output(g, c);
    if (!T_OK(nn_graph_compile(g, NULL), ctx) || !T_OK(nn_tensor_write(g, x, xv, sizeof xv), ctx) ||
        !T_OK(nn_graph_forward(g), ctx) || !T_OK(nn_tensor_read(g, r, rv, sizeof rv), ctx) ||
        !T_OK(nn_tensor_read(g, c, cv, sizeof cv), ctx))
        goto done;
    for (i = 0; i < 35; i++)
        if (!T_CHECK(memcmp(&rv[i], &cv[i], 4) == 0 && cv[i] != 0.0f, "reshape[%d] = %.9g, the product %.9g", i,
                     (double)rv[i], (double)cv[i]))
            break;
done:
    nn_graph_destroy(g);
    t_end();
}

/* ---- refusals ---- */

B(n_mixed_dt, nn_matmul(g, nn_to_dtype(g, F(g, S2(3, 4)), NN_BF16), nn_to_dtype(g, F(g, S2(4, 5)), NN_F16), 0, 0))
B(n_int_mm, nn_matmul(g, I(g, S2(3, 4)), I(g, S2(4, 5)), 0, 0))
B(n_mm16_shape, nn_matmul(g, nn_to_dtype(g, F(g, S2(3, 4)), NN_BF16), nn_to_dtype(g, F(g, S2(5, 6)), NN_BF16), 0, 0))
static nn_tensor n_bad_precision(nn_graph *g, nn_compile_desc *cd) {
    nn_graph_desc d;
    nn_graph *h = NULL;
    nn_result r;
    (void)g;
    (void)cd;
    memset(&d, 0, sizeof d);
    d.precision = (nn_precision)7;
    r = nn_graph_create(t_row_ctx, &d, &h);
    nn_graph_destroy(h);
    return CALL(r);
}

static const bad_row mixed_bad[] = {
    {"mixed", "matmul of bfloat16 and float16", n_mixed_dt, R_SHAPE, "nn_matmul|bfloat16|float16|one dtype", 0},
    {"mixed", "matmul of int32", n_int_mm, R_SHAPE, "nn_matmul|int32|float32, bfloat16 or float16", 0},
    {"mixed", "matmul bf16 [3, 4] x [5, 6]", n_mm16_shape, R_SHAPE, "nn_matmul|[3, 4]|[5, 6]", 0},
    {"mixed", "graph precision 7", n_bad_precision, R_INV, "nn_graph_create|precision 7", R_CALL},
};

void suite_mixed(const t_env *e) {
    matmul16_cases(e);
    policy_case(e, NN_PRECISION_BF16);
    policy_case(e, NN_PRECISION_FP16);
    train_case(e);
    binary16_cases(e);
    promotion_case(e);
    memory_case(e);
    bias16_cases(e);
    view16_case(e, NN_PRECISION_BF16);
    view16_case(e, NN_PRECISION_FP16);
    t_bad_rows(e, mixed_bad, (int)(sizeof mixed_bad / sizeof mixed_bad[0]));
}
