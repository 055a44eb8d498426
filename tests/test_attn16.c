/* The fused attention and the shape ops on 16-bit storage (issue 20): nn_attention of bf16
   and f16 q, k, v (output and gradients of that dtype; every sum, the softmax's statistics
   and the log-sum-exp in float32: src/ops/attention.c's CPU bodies widen around
   src/cpu/attention.c's float32 loops, kernels/attention.cl built with NN_STORE_BF16 /
   _F16), and slice, concat, permute, reshape moving 16-bit words.

   The reference is the float32 op, on the same backend, of the inputs rounded to the type
   here. The forward output must be the float32 output rounded, bit for bit (the same loops
   and kernels in the same order, one rounding at the store). The gradients read the
   rounded output (delta = rowsum(dO o)), as PyTorch's do, so they are held to a stated
   tolerance: 2^-6 (bf16) and 2^-9 (f16) of the largest magnitude of each. The shape ops
   are copies: bit for bit, forward and gradient. Then the policy: a small GPT under
   NN_PRECISION_BF16 trains, and its activations at their peak are at most 0.55x float32's
   (16-bit layer norms, tests/test_ln16.c), its activation gradients 0.6x (nn_graph_memory);
   with bf16 parameters too (16-bit embeddings and residual stream) both at most 0.501x. */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct a16_case {
    int B, H, Hkv, Tq, Tk, D, Dv, layout, causal, mask; /* mask 1: a float [Tq, Tk] additive mask */
} a16_case;

static nn_shape a16_shape(const a16_case *c, int heads, int T, int D) {
    return c->layout == NN_ATTN_BTHD ? nn_shape4(c->B, T, heads, D) : nn_shape4(c->B, heads, T, D);
}

/* y, dq, dk, dv (float32 reads) of the attention at c with q, k, v in storage d; loss
   sum(y * wl). */
static int a16_run(nn_context *ctx, nn_dtype d, const a16_case *c, const float *qv, const float *kv, const float *vv,
                   const float *mv, const float *wl, float *y, float *dq, float *dk, float *dv) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_attention_desc ad;
    nn_tensor q, k, v, m = NN_NONE, l, yt;
    long nq = (long)c->B * c->H * c->Tq * c->D, nk = (long)c->B * c->Hkv * c->Tk * c->D;
    long nv = (long)c->B * c->Hkv * c->Tk * c->Dv, ny = (long)c->B * c->H * c->Tq * c->Dv;
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    q = nn_input(g, "q", NN_F32, a16_shape(c, c->H, c->Tq, c->D));
    k = nn_input(g, "k", NN_F32, a16_shape(c, c->Hkv, c->Tk, c->D));
    v = nn_input(g, "v", NN_F32, a16_shape(c, c->Hkv, c->Tk, c->Dv));
    nn_graph_requires_grad(g, q);
    nn_graph_requires_grad(g, k);
    nn_graph_requires_grad(g, v);
    if (c->mask) m = nn_input(g, "m", NN_F32, nn_shape2(c->Tq, c->Tk));
    memset(&ad, 0, sizeof ad);
    ad.causal = c->causal;
    ad.layout = c->layout;
    ad.mask = m;
    if (d == NN_F32)
        yt = nn_attention(g, q, k, v, &ad);
    else
        yt = nn_to_dtype(g, nn_attention(g, nn_to_dtype(g, q, d), nn_to_dtype(g, k, d), nn_to_dtype(g, v, d), &ad), NN_F32);
    if (!T_CHECK(yt.id >= 0, "%s attention: %s", d == NN_F32 ? "f32" : t_name16(d), nn_context_last_error(ctx))) goto done;
    l = nn_input(g, "wl", NN_F32, t_shape(g, yt));
    nn_graph_output(g, yt);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, yt, l));
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, q, qv, nq * sizeof(float)), ctx) || !T_OK(nn_tensor_write(g, k, kv, nk * sizeof(float)), ctx) ||
        !T_OK(nn_tensor_write(g, v, vv, nv * sizeof(float)), ctx) || !T_OK(nn_tensor_write(g, l, wl, ny * sizeof(float)), ctx) ||
        (c->mask && !T_OK(nn_tensor_write(g, m, mv, (size_t)c->Tq * c->Tk * sizeof(float)), ctx)) || !T_OK(nn_graph_step(g), ctx))
        goto done;
    ok = T_OK(nn_tensor_read(g, yt, y, ny * sizeof(float)), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_grad(g, q), dq, nq * sizeof(float)), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_grad(g, k), dk, nk * sizeof(float)), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_grad(g, v), dv, nv * sizeof(float)), ctx);
done:
    nn_graph_destroy(g);
    return ok;
}

/* got must be want rounded to d, bit for bit */
static int a16_same(const char *name, nn_dtype d, const float *got, const float *want, long n) {
    long i;
    for (i = 0; i < n; i++) {
        float r = (float)t_rnd16(d, want[i]);
        if (memcmp(&got[i], &r, sizeof r) != 0)
            return T_CHECK(0, "%s %s y[%ld] = %.9g, the float32 attention's rounded %.9g (float32 %.9g)", name, t_name16(d), i,
                           (double)got[i], (double)r, (double)want[i]);
    }
    return 1;
}

/* |got - want| within tol of the largest |want| */
static int a16_near(const char *name, const char *what, nn_dtype d, const float *got, const float *want, long n, double tol) {
    long i;
    double mx = 0;
    for (i = 0; i < n; i++) mx = fabs(want[i]) > mx ? fabs(want[i]) : mx;
    for (i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol * mx))
            return T_CHECK(0, "%s %s %s[%ld] = %.9g, float32's %.9g (tolerance %g of %g)", name, t_name16(d), what, i,
                           (double)got[i], (double)want[i], tol, mx);
    return 1;
}

static void attn16_vs_f32(const t_env *e) {
    /* B, H, Hkv, Tq, Tk, D, Dv, layout, causal, mask */
    static const a16_case cs[] = {
        {1, 1, 1, 1, 1, 8, 8, NN_ATTN_BHTD, 0, 0},
        {2, 4, 2, 17, 17, 16, 16, NN_ATTN_BTHD, 1, 0},  /* GQA, causal, odd rows: the tiles' ends */
        {1, 2, 2, 9, 13, 12, 12, NN_ATTN_BHTD, 0, 1},   /* cross lengths, head dim not a multiple of 8, a float mask */
        {2, 2, 1, 7, 7, 8, 5, NN_ATTN_BTHD, 1, 0},      /* Dv != D (the row kernels), odd output size */
    };
    int t, k;
    if (!t_begin(e, "attn16: attention on bf16/f16: y is the float32 attention's rounded, dq dk dv within 2 units")) return;
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        double tol = d == NN_BF16 ? 1.0 / 64 : 1.0 / 512;
        for (k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
            const a16_case *c = &cs[k];
            long nq = (long)c->B * c->H * c->Tq * c->D, nk = (long)c->B * c->Hkv * c->Tk * c->D;
            long nv = (long)c->B * c->Hkv * c->Tk * c->Dv, ny = (long)c->B * c->H * c->Tq * c->Dv, nm = (long)c->Tq * c->Tk, i;
            long total = nq + nk + nv + nm + ny + 2 * (ny + nq + nk + nv);
            float *buf = (float *)malloc(sizeof(float) * (size_t)total);
            char name[96];
            int ok;
            snprintf(name, sizeof name, "B%d H%d/%d T%d/%d D%d/%d %s%s%s", c->B, c->H, c->Hkv, c->Tq, c->Tk, c->D, c->Dv,
                     c->layout == NN_ATTN_BTHD ? "bthd" : "bhtd", c->causal ? " causal" : "", c->mask ? " mask" : "");
            if (!T_CHECK(buf != NULL, "out of memory")) goto done;
            {
                float *qv = buf, *kv = qv + nq, *vv = kv + nk, *mv = vv + nv, *wl = mv + nm;
                float *y32 = wl + ny, *dq32 = y32 + ny, *dk32 = dq32 + nq, *dv32 = dk32 + nk;
                float *y16 = dv32 + nv, *dq16 = y16 + ny, *dk16 = dq16 + nq, *dv16 = dk16 + nk;
                t_seed(3000 + 10 * (unsigned long long)k + (unsigned long long)t);
                for (i = 0; i < nq + nk + nv; i++) qv[i] = (float)t_rnd16(d, t_uniform(-2, 2));
                for (i = 0; i < nm; i++) mv[i] = (float)((t_randint(8) - 4) / 4.0);
                for (i = 0; i < ny; i++) wl[i] = (float)((t_randint(256) - 128) / 128.0); /* exact in 16 bits */
                ok = a16_run(e->ctx, NN_F32, c, qv, kv, vv, mv, wl, y32, dq32, dk32, dv32) &&
                     a16_run(e->ctx, d, c, qv, kv, vv, mv, wl, y16, dq16, dk16, dv16) && a16_same(name, d, y16, y32, ny) &&
                     a16_near(name, "dq", d, dq16, dq32, nq, tol) && a16_near(name, "dk", d, dk16, dk32, nk, tol) &&
                     a16_near(name, "dv", d, dv16, dv32, nv, tol);
            }
            free(buf);
            if (!ok) goto done;
        }
    }
done:
    t_end();
}

/* ---- the shape ops on 16-bit words: y = concat(permute(x, 2 0 1), slice_step(x')) ...
   against the float32 graph: copies, so the same bits, and the gradients too ---- */

static int s16_run(nn_context *ctx, nn_dtype d, const float *xv, const float *wl, float *y, float *dx, long *ny) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor x, h, p, s, parts[3], l, yt;
    static const int perm[3] = {2, 0, 1};
    int ok = 0;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_F32, nn_shape3(3, 5, 7));
    nn_graph_requires_grad(g, x);
    h = d == NN_F32 ? x : nn_to_dtype(g, x, d);
    p = nn_reshape(g, nn_permute(g, h, perm, 3), nn_shape2(7, 15));   /* [7, 3, 5] -> [7, 15] */
    s = nn_reshape(g, nn_slice_step(g, h, 2, 1, 3, 2), nn_shape2(5, 9)); /* [3, 5, 3] -> ... */
    parts[0] = nn_slice(g, p, 1, 3, 9);                               /* [7, 9] */
    parts[1] = s;
    parts[2] = nn_transpose(g, nn_slice(g, p, 0, 2, 3), 0, 1);        /* [15, 3] -> not 9 wide */
    parts[2] = nn_reshape(g, parts[2], nn_shape2(5, 9));
    yt = nn_concat(g, parts, 3, 0); /* [17, 9] */
    if (d != NN_F32) yt = nn_to_dtype(g, yt, NN_F32);
    if (!T_CHECK(yt.id >= 0, "%s shapes: %s", d == NN_F32 ? "f32" : t_name16(d), nn_context_last_error(ctx))) goto done;
    *ny = (long)t_numel(g, yt);
    l = nn_input(g, "wl", NN_F32, t_shape(g, yt));
    nn_graph_output(g, yt);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, yt, l));
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    if (!T_OK(nn_tensor_write(g, x, xv, 105 * sizeof(float)), ctx) || !T_OK(nn_tensor_write(g, l, wl, *ny * sizeof(float)), ctx) ||
        !T_OK(nn_graph_step(g), ctx))
        goto done;
    ok = T_OK(nn_tensor_read(g, yt, y, *ny * sizeof(float)), ctx) &&
         T_OK(nn_tensor_read(g, nn_graph_grad(g, x), dx, 105 * sizeof(float)), ctx);
done:
    nn_graph_destroy(g);
    return ok;
}

static void shape16_vs_f32(const t_env *e) {
    float xv[105], wl[153], y32[153], y16[153], dx32[105], dx16[105];
    long ny = 0, n2 = 0, i;
    int t;
    if (!t_begin(e, "attn16: permute, slice, slice_step, concat, reshape on bf16/f16 move the bits (y and dx)")) return;
    for (t = 0; t < 2; t++) {
        nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
        t_seed(3100 + (unsigned long long)t);
        for (i = 0; i < 105; i++) xv[i] = (float)t_rnd16(d, t_uniform(-3, 3));
        for (i = 0; i < 153; i++) wl[i] = (float)(t_randint(16) / 8.0); /* small integers / 8: sums exact in 16 bits */
        if (!s16_run(e->ctx, NN_F32, xv, wl, y32, dx32, &ny) || !s16_run(e->ctx, d, xv, wl, y16, dx16, &n2)) break;
        if (!T_CHECK(ny == 153 && n2 == 153, "y has %ld and %ld elements, not 153", ny, n2)) break;
        if (!T_CHECK(memcmp(y32, y16, sizeof y32) == 0, "%s: y differs from float32's", t_name16(d))) break;
        for (i = 0; i < 105; i++)
            if (!T_CHECK((float)t_rnd16(d, dx32[i]) == dx16[i], "%s: dx[%ld] = %.9g, float32's rounded %.9g", t_name16(d), i,
                         (double)dx16[i], t_rnd16(d, dx32[i])))
                break;
    }
    t_end();
}

/* ---- 16-bit add, sub, mul along rows (the bias adds and gradient sums the GPT now runs
   in 16 bits; src/cpu/elementwise.c's nn__binary16_rows): each element the float32 op on
   the widened inputs, rounded, bit for bit; rows shorter and longer than its 256-element
   runs, a broadcast bias, a broadcast column, a [1] ---- */

static void binary16_rows(const t_env *e) {
    static const int shp[4][4] = {{5, 37, 1, 37}, {3, 300, 3, 300}, {37, 40, 37, 1}, {4, 70, 1, 1}}; /* a [r, c], b [br, bc] */
    static float av[1480], bv[1480], y[1480];
    int t, c, f;
    if (!t_begin(e, "attn16: bf16/f16 add, sub, mul along rows (bias, broadcast) are float32's rounded, bit for bit")) return;
    for (t = 0; t < 2; t++)
        for (c = 0; c < 4; c++)
            for (f = 0; f < 3; f++) {
                nn_dtype d = t == 0 ? NN_BF16 : NN_F16;
                nn_graph *g = NULL;
                nn_tensor a, b, yt, ah, bh;
                int r = shp[c][0], n = shp[c][1], br = shp[c][2], bn = shp[c][3], i, ok = 1;
                if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) goto done;
                a = nn_input(g, "a", NN_F32, nn_shape2(r, n));
                b = nn_input(g, "b", NN_F32, nn_shape2(br, bn));
                ah = nn_to_dtype(g, a, d), bh = nn_to_dtype(g, b, d);
                yt = nn_to_dtype(g, f == 0 ? nn_add(g, ah, bh) : f == 1 ? nn_sub(g, ah, bh) : nn_mul(g, ah, bh), NN_F32);
                nn_graph_output(g, yt);
                t_seed(3200 + 100 * (unsigned long long)t + 10 * (unsigned long long)c + (unsigned long long)f);
                for (i = 0; i < r * n; i++) av[i] = (float)t_rnd16(d, t_uniform(-3, 3));
                for (i = 0; i < br * bn; i++) bv[i] = (float)t_rnd16(d, t_uniform(-3, 3));
                if (T_OK(nn_graph_compile(g, NULL), e->ctx) && T_OK(nn_tensor_write(g, a, av, (size_t)r * n * sizeof(float)), e->ctx) &&
                    T_OK(nn_tensor_write(g, b, bv, (size_t)br * bn * sizeof(float)), e->ctx) && T_OK(nn_graph_forward(g), e->ctx) &&
                    T_OK(nn_tensor_read(g, yt, y, (size_t)r * n * sizeof(float)), e->ctx)) {
                    for (i = 0; i < r * n && ok; i++) {
                        float u = av[i], w = bv[(br == 1 ? 0 : i / n) * bn + (bn == 1 ? 0 : i % n)];
                        float v = f == 0 ? u + w : f == 1 ? u - w : u * w, want = (float)t_rnd16(d, v);
                        ok = T_CHECK(memcmp(&want, &y[i], sizeof want) == 0, "%s op %d a [%d, %d] b [%d, %d]: y[%d] = %.9g, not %.9g",
                                     t_name16(d), f, r, n, br, bn, i, (double)y[i], (double)want);
                    }
                } else {
                    ok = 0;
                }
                nn_graph_destroy(g);
                if (!ok) goto done;
            }
done:
    t_end();
}

/* ---- the policy: a small GPT (2 layers, 2 heads, 32 wide, context 16, batch 4) under
   NN_PRECISION_BF16: its activations at their peak at most 0.55x float32's (0.53x with the
   16-bit layer norms), its activation gradients 0.6x (0.57x); with bf16 parameters
   (nn_graph_desc.param_dtype: the embeddings, the residual stream and its gradient in bf16)
   both 0.501x (0.5000x); and 12 Adam steps bring the loss down as float32's do (within 5%) ---- */

static int a16_gpt(nn_context *ctx, nn_precision prec, nn_dtype params, nn_memory_report *mr, float *first, float *last) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_gpt_config cfg;
    nn_tensor x, y;
    int xv[64], yv[64], i, ok = 0;
    memset(&gd, 0, sizeof gd);
    gd.precision = prec;
    gd.param_dtype = params;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) return 0;
    x = nn_input(g, "x", NN_I32, nn_shape2(4, 16));
    y = nn_input(g, "y", NN_I32, nn_shape1(64));
    memset(&cfg, 0, sizeof cfg);
    cfg.vocab_size = 16;
    cfg.n_layer = 2;
    cfg.n_head = 2;
    cfg.n_embd = 32;
    cfg.block_size = 16;
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_softmax_cross_entropy(g, nn_gpt(g, x, &cfg), y);
    cd.optimizer.kind = NN_OPT_ADAMW;
    cd.optimizer.lr = 3e-3f;
    if (!T_OK(nn_graph_compile(g, &cd), ctx) || !T_OK(nn_graph_memory(g, mr), ctx)) goto done;
    for (i = 0; i < 64; i++) { /* a cycle of period 5: learnable */
        xv[i] = (i % 16 + i / 16) % 5;
        yv[i] = (xv[i] + 1) % 5;
    }
    T_OK(nn_tensor_write(g, x, xv, sizeof xv), ctx);
    T_OK(nn_tensor_write(g, y, yv, sizeof yv), ctx);
    ok = t_train_losses(g, ctx, cd.loss, 12, first, last);
done:
    nn_graph_destroy(g);
    return ok;
}

static void attn16_gpt(const t_env *e) {
    nn_memory_report m32, m16, mp;
    float f32a = 0, f32b = 0, f16a = 0, f16b = 0, fpa = 0, fpb = 0;
    if (!t_begin(e, "attn16: a GPT under bf16: activations <= 0.55x and their gradients <= 0.6x float32's, <= 0.501x both with bf16 parameters; it trains as float32"))
        return;
    if (!a16_gpt(e->ctx, NN_PRECISION_FP32, NN_F32, &m32, &f32a, &f32b) || !a16_gpt(e->ctx, NN_PRECISION_BF16, NN_F32, &m16, &f16a, &f16b) ||
        !a16_gpt(e->ctx, NN_PRECISION_BF16, NN_BF16, &mp, &fpa, &fpb))
        goto done;
    T_CHECK(m16.activations_max <= 0.55 * m32.activations_max, "bf16 activations %lld, float32's %lld",
            (long long)m16.activations_max, (long long)m32.activations_max);
    T_CHECK(m16.activation_gradients_max <= 0.6 * m32.activation_gradients_max, "bf16 activation gradients %lld, float32's %lld",
            (long long)m16.activation_gradients_max, (long long)m32.activation_gradients_max);
    T_CHECK(mp.activations_max <= 0.501 * m32.activations_max && mp.activation_gradients_max <= 0.501 * m32.activation_gradients_max,
            "bf16 parameters: activations %lld, float32's %lld; activation gradients %lld, float32's %lld", (long long)mp.activations_max,
            (long long)m32.activations_max, (long long)mp.activation_gradients_max, (long long)m32.activation_gradients_max);
    printf("  attn16 gpt: activations %.4fx %.4fx, activation gradients %.4fx %.4fx (bf16, bf16 parameters)\n",
           (double)m16.activations_max / (double)m32.activations_max, (double)mp.activations_max / (double)m32.activations_max,
           (double)m16.activation_gradients_max / (double)m32.activation_gradients_max,
           (double)mp.activation_gradients_max / (double)m32.activation_gradients_max);
    T_CHECK(f32b < f32a && f16b < f16a && fpb < fpa && fabs(f16b - f32b) <= 0.05 * f32b + 0.02 && fabs(fpb - f32b) <= 0.05 * f32b + 0.02,
            "losses: float32 %g -> %g, bf16 %g -> %g, bf16 parameters %g -> %g over 12 AdamW steps", (double)f32a, (double)f32b, (double)f16a,
            (double)f16b, (double)fpa, (double)fpb);
done:
    t_end();
}

void suite_attn16(const t_env *e) {
    attn16_vs_f32(e);
    shape16_vs_f32(e);
    binary16_rows(e);
    attn16_gpt(e);
}
