/* The attention family (src/ops/attention.c): nn_attention through the op checker
   (tests/op_check.c) against a double-precision softmax(q k^T scale + mask) v written here,
   at odd lengths (T = 1, 7, 33, 65, 129), head dims 16, 24, 48, 64, 80, 128 and 256, GQA ratios 1,
   2 and 4, causal and not, key padding masks (int and float, a batch wholly masked: 0),
   additive and boolean masks of 2 and 4 dims, dropout (the mask drawn here by an
   independent Philox, so finite differences of the reference check the backward),
   cross-attention (top-left causal), sliding windows, both layouts; CPU/OpenCL parity
   through the op checker; the same bits across runs and CPU thread counts; refusals. */
#define _POSIX_C_SOURCE 200809L /* setenv, as tests/nn_test.c */
#include "test.h"
#include "bad_rows.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct acfg {
    const char *name;
    int B, H, Hkv, Tq, Tk, D, layout, causal, window;
    int mask;      /* 0 none, 1 float [Tq, Tk], 2 bool (int32) [B, 1, Tq, Tk]; with gradient,
                      float: 3 [Tq, Tk], 4 [B, 1, Tq, Tk], 5 [B, H, 1, Tk], 6 [H, 1, Tk]
                      (a mask broadcast over keys only shifts a row: gradient 0) */
    int kpm;       /* 0 none, 1 float, 2 int32, 3 int32 with batch 0 wholly masked */
    float scale, p;
    int dirs;
    int v_grad_only; /* Tq = Tk = 1: the weight is 1 whatever q and k, their gradients 0
                        exactly in the reference, float rounding elsewhere: not compared;
                        2: q's gradient only (k and v constants: the dQ op alone) */
    int Dv;          /* v's head dim (0: D) */
} acfg;

static int a_dv(const acfg *c) { return c->Dv ? c->Dv : c->D; }

static int attn_key; /* the ATTENTION node's id, dropout's key (the build records it) */

static nn_tensor b_attn(nn_graph *g, const nn_tensor *in, const spec *s) {
    const acfg *c = (const acfg *)s->arg;
    nn_attention_desc d;
    nn_tensor y;
    int k = 3;
    memset(&d, 0, sizeof d);
    d.causal = c->causal;
    d.window = c->window;
    d.layout = c->layout;
    d.scale = c->scale;
    d.dropout = c->p;
    if (c->mask) d.mask = in[k++];
    if (c->kpm) d.key_padding_mask = in[k++];
    y = nn_attention(g, in[0], in[1], in[2], &d);
    attn_key = y.id - 2; /* nn_attention's nodes: ATTENTION, its slice, the reshape */
    return y;
}

/* the additive mask's element at (b, h, i, j) by its broadcast shape */
static double a_madd(const acfg *c, const double *m, int b, int h, int i, int j) {
    switch (c->mask) {
    case 1:
    case 3: return m[(long)i * c->Tk + j];
    case 4: return m[((long)b * c->Tq + i) * c->Tk + j];
    case 5: return m[((long)b * c->H + h) * c->Tk + j];
    case 6: return m[(long)h * c->Tk + j];
    default: return 0;
    }
}

static long a_offd(const acfg *c, int heads, int T, int D, int b, int h, int t) {
    return c->layout ? (((long)b * T + t) * heads + h) * D : (((long)b * heads + h) * T + t) * D;
}
static long a_off(const acfg *c, int heads, int T, int b, int h, int t) { return a_offd(c, heads, T, c->D, b, h, t); }

/* dropout's factor of weight (b, h, i, j), from tests' own Philox: seed 1234 (op_check's),
   step 1 (the first step) */
static double a_keep(const acfg *c, int b, int h, int i, int j) {
    unsigned ctr[4];
    double u;
    ctr[0] = (unsigned)((((long)b * c->H + h) * c->Tq + i) * c->Tk + j);
    ctr[1] = (unsigned)attn_key;
    ctr[2] = 1;
    ctr[3] = 0;
    t_philox(ctr, 1234u, 0u);
    u = (double)(ctr[0] >> 8) / 16777216.0;
    return u >= c->p ? 1.0 / (1.0 - c->p) : 0.0;
}

static void r_attn(const spec *s, double *const *in, double *out) {
    const acfg *c = (const acfg *)s->arg;
    const double *q = in[0], *k = in[1], *v = in[2], *mask = NULL, *kpm = NULL;
    double scale = c->scale != 0 ? c->scale : 1.0 / sqrt((double)c->D);
    double *sc = (double *)malloc((size_t)c->Tk * sizeof(double));
    char *alive = (char *)malloc((size_t)c->Tk);
    int b, h, i, j, d, n = 3, Dv = a_dv(c);
    if (c->mask) mask = in[n++];
    if (c->kpm) kpm = in[n++];
    for (b = 0; b < c->B; b++)
        for (h = 0; h < c->H; h++)
            for (i = 0; i < c->Tq; i++) {
                int hk = h / (c->H / c->Hkv), any = 0;
                long qo = a_off(c, c->H, c->Tq, b, h, i);
                double m = -INFINITY, sum = 0;
                for (j = 0; j < c->Tk; j++) {
                    long ko = a_off(c, c->Hkv, c->Tk, b, hk, j);
                    double acc = 0;
                    alive[j] = 1;
                    if (c->causal && j > i) alive[j] = 0;
                    if (c->window > 0 && (i - j >= c->window || (!c->causal && j - i >= c->window))) alive[j] = 0;
                    if (kpm && kpm[(long)b * c->Tk + j] != 0) alive[j] = 0;
                    if (c->mask == 2 && mask[((long)b * c->Tq + i) * c->Tk + j] == 0) alive[j] = 0;
                    for (d = 0; d < c->D; d++) acc += q[qo + d] * k[ko + d];
                    sc[j] = acc * scale + (c->mask != 2 ? a_madd(c, mask, b, h, i, j) : 0);
                    if (alive[j] && sc[j] > m) m = sc[j];
                    any |= alive[j];
                }
                long oo = a_offd(c, c->H, c->Tq, Dv, b, h, i);
                for (d = 0; d < Dv; d++) out[oo + d] = 0;
                if (!any) continue; /* a wholly masked row: 0 */
                for (j = 0; j < c->Tk; j++) sum += alive[j] ? exp(sc[j] - m) : 0;
                for (j = 0; j < c->Tk; j++) {
                    long vo = a_offd(c, c->Hkv, c->Tk, Dv, b, hk, j);
                    double w;
                    if (!alive[j]) continue;
                    w = exp(sc[j] - m) / sum;
                    if (c->p > 0) w *= a_keep(c, b, h, i, j);
                    for (d = 0; d < Dv; d++) out[oo + d] += w * v[vo + d];
                }
            }
    free(sc);
    free(alive);
}

static nn_shape a_shaped(const acfg *c, int heads, int T, int D) {
    return c->layout ? nn_shape4(c->B, T, heads, D) : nn_shape4(c->B, heads, T, D);
}
static nn_shape a_shape(const acfg *c, int heads, int T) { return a_shaped(c, heads, T, c->D); }

/* float key padding masks as 0/1; case 3: batch 0's keys all ignored */
static void a_fill(const spec *s, double *const *in) {
    const acfg *c = (const acfg *)s->arg;
    int n = 3 + (c->mask ? 1 : 0), j;
    long i;
    if (!c->kpm) return;
    if (c->kpm == 1)
        for (i = 0; i < (long)c->B * c->Tk; i++) in[n][i] = in[n][i] < -1.0 ? 1.0 : 0.0;
    if (c->kpm == 3)
        for (j = 0; j < c->Tk; j++) in[n][j] = 1;
}

static spec a_spec(const acfg *c) {
    spec s = mk(c->name, b_attn, r_attn, a_shaped(c, c->H, c->Tq, a_dv(c)));
    in_f(&s, a_shape(c, c->H, c->Tq));
    in_f(&s, a_shape(c, c->Hkv, c->Tk));
    in_f(&s, a_shaped(c, c->Hkv, c->Tk, a_dv(c)));
    if (c->mask == 1) {
        in_fr(&s, nn_shape2(c->Tq, c->Tk), -1, 1);
        s.grad[s.n_in - 1] = 0; /* a constant: no gradient */
    }
    if (c->mask == 2) in_i(&s, nn_shape4(c->B, 1, c->Tq, c->Tk), 0, 2);
    if (c->mask == 3) in_fr(&s, nn_shape2(c->Tq, c->Tk), -1, 1);
    if (c->mask == 4) in_fr(&s, nn_shape4(c->B, 1, c->Tq, c->Tk), -1, 1);
    if (c->mask == 5) in_fr(&s, nn_shape4(c->B, c->H, 1, c->Tk), -1, 1);
    if (c->mask == 6) in_fr(&s, nn_shape3(c->H, 1, c->Tk), -1, 1);
    if (c->kpm == 1) {
        in_fr(&s, nn_shape2(c->B, c->Tk), -2, 2);
        s.grad[s.n_in - 1] = 0;
    }
    if (c->kpm >= 2) in_i(&s, nn_shape2(c->B, c->Tk), 0, 2);
    if (c->v_grad_only == 1) s.grad[0] = s.grad[1] = 0;
    if (c->v_grad_only == 2) s.grad[1] = s.grad[2] = 0;
    s.arg = c;
    s.fill = a_fill;
    s.dirs = c->dirs;
    return s;
}

static void attention_cases(const t_env *e) {
    /* name, B, H, Hkv, Tq, Tk, D, layout, causal, window, mask, kpm, scale, p, dirs, v_grad_only, Dv */
    static const acfg cases[] = {
        {"attention T1 D16 gqa2", 2, 2, 1, 1, 1, 16, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0},
        {"attention T1 causal D24", 1, 2, 2, 1, 1, 24, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0},
        {"attention Tq1 Tk5 D16 gqa2", 2, 2, 1, 1, 5, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {"attention Tq5 Tk1 causal D24", 1, 2, 2, 5, 1, 24, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0},
        {"attention T7 causal D24 gqa2", 1, 4, 2, 7, 7, 24, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
        {"attention T33 causal D64 kpm int", 2, 2, 2, 33, 33, 64, 0, 1, 0, 0, 2, 0, 0, 6, 0, 0},
        {"attention T65 D80 mqa4 float mask", 1, 4, 1, 65, 65, 80, 0, 0, 0, 1, 0, 0, 0, 6, 0, 0},
        {"attention T129 causal window20 D16 gqa2", 1, 2, 1, 129, 129, 16, 0, 1, 20, 0, 0, 0, 0, 6, 0, 0},
        {"attention cross Tq7 Tk33 causal bool mask BTHD", 2, 2, 1, 7, 33, 24, 1, 1, 0, 2, 0, 0, 0, 0, 0, 0},
        {"attention cross Tq33 Tk7 D16 scale 0.5", 1, 2, 2, 33, 7, 16, 0, 0, 0, 0, 0, 0.5f, 0, 0, 0, 0},
        {"attention T33 BTHD window5 float kpm", 2, 4, 2, 33, 33, 64, 1, 0, 5, 0, 1, 0, 0, 6, 0, 0},
        {"attention T7 wholly masked batch", 2, 2, 1, 7, 7, 16, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0},
        {"attention T33 dropout 0.3 gqa2", 1, 2, 1, 33, 33, 16, 0, 0, 0, 0, 0, 0, 0.3f, 6, 0, 0},
        {"attention T7 causal dropout 0.5 BTHD", 1, 4, 1, 7, 9, 24, 1, 1, 0, 0, 2, 0, 0.5f, 0, 0, 0},
        {"attention T7 D256", 1, 1, 1, 7, 7, 256, 0, 1, 0, 0, 0, 0, 0, 6, 0, 0},
        /* additive masks with their gradient (dS summed over the broadcast dims) */
        {"attention T7 mask grad [Tq, Tk] gqa2", 2, 2, 1, 7, 7, 16, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0},
        {"attention T65 causal mask grad [Tq, Tk] D24 kpm", 2, 2, 1, 65, 65, 24, 0, 1, 0, 3, 2, 0, 0, 6, 0, 0},
        {"attention cross Tq33 Tk7 mask grad [B, 1, Tq, Tk] BTHD", 2, 2, 2, 33, 7, 16, 1, 0, 0, 4, 0, 0, 0, 0, 0, 0},
        {"attention T129 mask grad [B, H, 1, Tk] window9", 1, 2, 1, 129, 129, 16, 0, 0, 9, 5, 0, 0, 0, 6, 0, 0},
        {"attention cross Tq33 Tk65 mask grad [H, 1, Tk] dropout 0.3", 2, 2, 1, 33, 65, 16, 0, 0, 0, 6, 0, 0, 0.3f, 6, 0, 0},
        /* v's head dim other than q's and k's */
        {"attention T7 causal D16 Dv24 gqa2", 2, 4, 2, 7, 7, 16, 0, 1, 0, 0, 0, 0, 0, 0, 0, 24},
        {"attention T33 D64 Dv80 BTHD kpm int", 2, 2, 1, 33, 33, 64, 1, 0, 0, 0, 2, 0, 0, 6, 0, 80},
        {"attention cross Tq65 Tk33 D80 Dv16 mask grad dropout 0.2", 1, 2, 2, 65, 33, 80, 0, 0, 0, 4, 0, 0, 0.2f, 6, 0, 16},
        {"attention T1 D24 Dv64", 1, 2, 1, 1, 1, 24, 0, 0, 0, 0, 0, 0, 0, 0, 1, 64},
        /* several tiles and partial ones of the tiled OpenCL kernels (tiles of 8 to 64) */
        {"attention T129 causal D80 gqa2 dropout 0.2 kpm int", 1, 4, 2, 129, 129, 80, 0, 1, 0, 0, 2, 0, 0.2f, 4, 0, 0},
        {"attention cross Tq65 Tk129 D80 bool mask window30 BTHD", 1, 2, 1, 65, 129, 80, 1, 0, 30, 2, 0, 0, 0, 4, 0, 0},
        {"attention cross Tq129 Tk65 D48 causal float mask", 2, 2, 2, 129, 65, 48, 0, 1, 0, 1, 0, 0, 0, 4, 0, 0},
        {"attention T65 D128 gqa4 float kpm", 1, 4, 1, 65, 65, 128, 0, 0, 0, 0, 1, 0, 0, 4, 0, 0},
        /* q's gradient alone (k and v constants) */
        {"attention q grad only T65 causal D24 gqa2 kpm int", 2, 4, 2, 65, 65, 24, 0, 1, 0, 0, 2, 0, 0, 6, 2, 0},
        {"attention q grad only cross Tq7 Tk33 D16 Dv24 dropout 0.3 BTHD", 1, 2, 1, 7, 33, 16, 1, 0, 0, 0, 0, 0, 0.3f, 0, 2, 24},
    };
    int i;
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        spec s = a_spec(&cases[i]);
        check_case(e, &s);
    }
}

/* ---- the flash kernels (kernels/attention.cl attn_flash_fwd, _dq, _dkv), default off
   (NN_CL_ATTN=flash, read when a context opens): in the gpu-tuning pass, a context opened
   with it runs two cases through the op checker (the double reference, parity with the CPU
   backend): D 64 causal and D 32 not, T 33 (a partial block of rows). Both take one program
   build (the flash program's cold build on PoCL is most of the cost). ---- */
static void attention_flash(const t_env *e) {
    /* name, B, H, Hkv, Tq, Tk, D, layout, causal, window, mask, kpm, scale, p, dirs, v_grad_only, Dv */
    static const acfg cases[] = {
        {"attention flash T33 causal D64 gqa2", 1, 2, 1, 33, 33, 64, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
        {"attention flash T33 D32 BTHD kpm int", 2, 2, 2, 33, 33, 32, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0},
    };
    const char *old = getenv("NN_CL_ATTN");
    char *saved = old ? strdup(old) : NULL;
    nn_context_desc d;
    nn_context *c = NULL;
    nn_graph *g = NULL;
    t_env f;
    int i, flash = 0;
    if (!e->opencl || !t_gpu_tuned(e)) { free(saved); return; } /* GPU kernels: the gpu-tuning pass (and GPUs) */
    setenv("NN_CL_ATTN", "flash", 1);
    t_context_desc(e, &d);
    i = nn_context_create(&d, &c) == NN_OK;
    if (saved) setenv("NN_CL_ATTN", saved, 1);
    else unsetenv("NN_CL_ATTN");
    free(saved);
    if (t_begin(e, "attention: NN_CL_ATTN=flash launches attn_flash_fwd, _dq and _dkv")) {
        if (T_CHECK(i, "a context with NN_CL_ATTN=flash: %s", nn_context_last_error(NULL)) &&
            T_OK(nn_graph_create(c, NULL, &g), c)) {
            nn_attention_desc ad;
            nn_tensor q = nn_input(g, "q", NN_F32, nn_shape4(1, 2, 33, 64)), o;
            memset(&ad, 0, sizeof ad);
            ad.causal = 1;
            nn_graph_requires_grad(g, q);
            o = nn_attention(g, q, q, q, &ad);
            if (T_OK(nn_graph_compile(g, &(nn_compile_desc){.loss = nn_sum(g, nn_mul(g, o, o))}), c))
                flash = t_graph_launches(g, "attn_flash_fwd") && t_graph_launches(g, "attn_flash_dq") &&
                        t_graph_launches(g, "attn_flash_dkv");
            T_CHECK(flash, "the graph runs no attn_flash_fwd, _dq and _dkv (the tiled kernels?)");
        }
        nn_graph_destroy(g);
        t_end();
    }
    if (c) {
        f = *e;
        f.ctx = c;
        for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
            spec s = a_spec(&cases[i]);
            check_case(&f, &s);
        }
        nn_context_destroy(c);
    }
}

/* ---- the same bits run to run, and at 1 and 2 CPU threads (the OpenCL device: run to run) ---- */

static int attn_run_bits(nn_context *ctx, float *y, float *dq, float *dk, float *dv) {
    enum { B = 2, H = 4, HKV = 2, T = 100, D = 32 };
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_attention_desc ad;
    nn_tensor q, k, v, y0;
    float *buf;
    long nq = (long)B * H * T * D, nk = (long)B * HKV * T * D, i;
    int ok = 0;
    memset(&gd, 0, sizeof gd);
    gd.seed = 77;
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return 0;
    q = nn_input(g, "q", NN_F32, nn_shape4(B, H, T, D));
    k = nn_input(g, "k", NN_F32, nn_shape4(B, HKV, T, D));
    v = nn_input(g, "v", NN_F32, nn_shape4(B, HKV, T, D));
    nn_graph_requires_grad(g, q);
    nn_graph_requires_grad(g, k);
    nn_graph_requires_grad(g, v);
    memset(&ad, 0, sizeof ad);
    ad.causal = 1;
    ad.dropout = 0.2f;
    y0 = nn_attention(g, q, k, v, &ad);
    nn_graph_output(g, y0);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, y0, y0));
    if (nn_graph_compile(g, &cd) != NN_OK) goto done;
    buf = (float *)malloc((size_t)nq * 4);
    t_seed(5);
    for (i = 0; i < nq; i++) buf[i] = (float)t_uniform(-2, 2);
    nn_tensor_write(g, q, buf, (size_t)nq * 4);
    for (i = 0; i < nk; i++) buf[i] = (float)t_uniform(-2, 2);
    nn_tensor_write(g, k, buf, (size_t)nk * 4);
    for (i = 0; i < nk; i++) buf[i] = (float)t_uniform(-2, 2);
    nn_tensor_write(g, v, buf, (size_t)nk * 4);
    free(buf);
    ok = nn_graph_step(g) == NN_OK && nn_tensor_read(g, y0, y, (size_t)nq * 4) == NN_OK &&
         nn_tensor_read(g, nn_graph_grad(g, q), dq, (size_t)nq * 4) == NN_OK &&
         nn_tensor_read(g, nn_graph_grad(g, k), dk, (size_t)nk * 4) == NN_OK &&
         nn_tensor_read(g, nn_graph_grad(g, v), dv, (size_t)nk * 4) == NN_OK;
done:
    nn_graph_destroy(g);
    return ok;
}

static void attention_bits(const t_env *e) {
    enum { NQ = 2 * 4 * 100 * 32, NK = 2 * 2 * 100 * 32 };
    float *r[2][4];
    int run, j;
    nn_context *c2 = NULL;
    if (!t_begin(e, "attention: the same bits run to run and at 1 and 2 CPU threads")) return;
    for (run = 0; run < 2; run++) {
        r[run][0] = (float *)malloc(NQ * 4);
        r[run][1] = (float *)malloc(NQ * 4);
        r[run][2] = (float *)malloc(NK * 4);
        r[run][3] = (float *)malloc(NK * 4);
    }
    if (e->opencl) {
        T_CHECK(attn_run_bits(e->ctx, r[0][0], r[0][1], r[0][2], r[0][3]), "first run: %s", nn_context_last_error(e->ctx));
        T_CHECK(attn_run_bits(e->ctx, r[1][0], r[1][1], r[1][2], r[1][3]), "second run: %s", nn_context_last_error(e->ctx));
    } else {
        nn_context_desc d;
        nn_context *c1 = NULL;
        memset(&d, 0, sizeof d);
        d.device = "cpu";
        d.log_level = NN_LOG_WARN;
        d.threads = 1;
        T_OK(nn_context_create(&d, &c1), c1);
        d.threads = 2;
        T_OK(nn_context_create(&d, &c2), c2);
        T_CHECK(c1 && attn_run_bits(c1, r[0][0], r[0][1], r[0][2], r[0][3]), "1 thread: failed");
        T_CHECK(c2 && attn_run_bits(c2, r[1][0], r[1][1], r[1][2], r[1][3]), "2 threads: failed");
        nn_context_destroy(c1);
    }
    for (j = 0; j < 4; j++)
        T_CHECK(memcmp(r[0][j], r[1][j], (size_t)(j < 2 ? NQ : NK) * 4) == 0, "output %d differs between the runs", j);
    nn_context_destroy(c2);
    for (run = 0; run < 2; run++)
        for (j = 0; j < 4; j++) free(r[run][j]);
    t_end();
}

/* ---- the CPU attention's causal skipping inside a tile (the AVX-512 path: a tile's keys
   past its rows' diagonal are neither computed nor summed) against whole tiles: the same
   values, at lengths around the tile of 64 and its vector widths of 16 ---- */

typedef struct skipcfg {
    int Tq, Tk, D, Dv, H, Hkv, mask, window;
    float p;
} skipcfg;

/* y, dq, dk, dv (and the mask's gradient when c->mask) of sum(y * y) into r[0..4] */
static int attn_run_skip(nn_context *ctx, const skipcfg *c, float *const *r, const long *n) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_attention_desc ad;
    nn_tensor in[4], y;
    long i;
    int j, ok = 0;
    float *buf;
    memset(&gd, 0, sizeof gd);
    gd.seed = 9;
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return 0;
    in[0] = nn_input(g, "q", NN_F32, nn_shape4(2, c->H, c->Tq, c->D));
    in[1] = nn_input(g, "k", NN_F32, nn_shape4(2, c->Hkv, c->Tk, c->D));
    in[2] = nn_input(g, "v", NN_F32, nn_shape4(2, c->Hkv, c->Tk, c->Dv));
    in[3] = c->mask ? nn_input(g, "mask", NN_F32, nn_shape2(c->Tq, c->Tk)) : NN_NONE;
    for (j = 0; j < (c->mask ? 4 : 3); j++) nn_graph_requires_grad(g, in[j]);
    memset(&ad, 0, sizeof ad);
    ad.causal = 1;
    ad.dropout = c->p;
    ad.window = c->window;
    ad.mask = in[3];
    y = nn_attention(g, in[0], in[1], in[2], &ad);
    nn_graph_output(g, y);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, y, y));
    if (nn_graph_compile(g, &cd) != NN_OK) goto done;
    buf = (float *)malloc((size_t)n[1] * 4 + (size_t)n[2] * 4 + (size_t)n[3] * 4 + (size_t)n[4] * 4 + 16);
    if (!buf) goto done;
    t_seed(11);
    for (j = 0; j < (c->mask ? 4 : 3); j++) {
        for (i = 0; i < n[j + 1]; i++) buf[i] = (float)t_uniform(-2, 2);
        nn_tensor_write(g, in[j], buf, (size_t)n[j + 1] * 4);
    }
    free(buf);
    ok = nn_graph_step(g) == NN_OK && nn_tensor_read(g, y, r[0], (size_t)n[0] * 4) == NN_OK;
    for (j = 0; ok && j < (c->mask ? 4 : 3); j++) ok = nn_tensor_read(g, nn_graph_grad(g, in[j]), r[j + 1], (size_t)n[j + 1] * 4) == NN_OK;
done:
    nn_graph_destroy(g);
    return ok;
}

static void attn_skip_set(int run) { t_attn_causal_skip(run == 0); }
static void attn_skip_reset(void) { t_attn_causal_skip(1); }
static void attn_pass_set(int run) { t_attn_one_pass(run == 0 ? 2 : 0); }
static void attn_pass_reset(void) { t_attn_one_pass(1); }

/* runs each case twice, set(0) and set(1) before the runs, reset() after; the same values */
static void attn_two_ways(const t_env *e, const char *title, void (*set)(int), void (*reset)(void)) {
    static const skipcfg cases[] = {
        {1, 1, 32, 32, 2, 1, 0, 0, 0},     {3, 3, 32, 32, 2, 2, 0, 0, 0},     {33, 33, 32, 32, 4, 2, 0, 0, 0},
        {63, 63, 32, 32, 2, 2, 0, 0, 0},   {64, 64, 32, 32, 4, 4, 0, 0, 0},   {65, 65, 80, 80, 2, 1, 0, 0, 0},
        {127, 127, 16, 24, 2, 2, 0, 0, 0}, {128, 128, 64, 64, 2, 2, 0, 0, 0}, {129, 129, 32, 32, 2, 1, 1, 0, 0},
        {33, 129, 24, 24, 2, 2, 0, 0, 0},  {129, 33, 32, 48, 2, 1, 0, 0, 0},  {65, 65, 32, 32, 2, 2, 0, 0, 0.3f},
        {127, 127, 32, 32, 2, 2, 0, 20, 0}, {17, 17, 32, 32, 2, 2, 1, 0, 0},
    };
    int ci, j;
    if (e->opencl) return; /* the CPU backend's code path */
    if (!t_begin(e, title)) return;
    for (ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) {
        const skipcfg *c = &cases[ci];
        long n[5], k, bad = 0;
        float *r[2][5];
        int run, nout = c->mask ? 5 : 4, ok = 1;
        n[0] = 2L * c->H * c->Tq * c->Dv;
        n[1] = 2L * c->H * c->Tq * c->D;
        n[2] = 2L * c->Hkv * c->Tk * c->D;
        n[3] = 2L * c->Hkv * c->Tk * c->Dv;
        n[4] = c->mask ? (long)c->Tq * c->Tk : 0;
        for (run = 0; run < 2; run++)
            for (j = 0; j < 5; j++) r[run][j] = (float *)calloc((size_t)n[j] + 1, 4);
        for (run = 0; run < 2; run++) {
            set(run);
            ok = ok && attn_run_skip(e->ctx, c, r[run], n);
        }
        reset();
        T_CHECK(ok, "case %d (Tq %d Tk %d): %s", ci, c->Tq, c->Tk, nn_context_last_error(e->ctx));
        for (j = 0; ok && j < nout; j++)
            for (k = 0; k < n[j]; k++)
                if (!(r[0][j][k] == r[1][j][k]) || !isfinite(r[0][j][k])) bad++;
        T_CHECK(bad == 0, "case %d (Tq %d Tk %d D %d Dv %d): %ld values differ", ci, c->Tq, c->Tk, c->D, c->Dv, bad);
        for (run = 0; run < 2; run++)
            for (j = 0; j < 5; j++) free(r[run][j]);
    }
    t_end();
}

static void attention_causal_skip(const t_env *e) {
    attn_two_ways(e, "attention: causal skipping inside a tile gives whole tiles' values (T 1 to 129, cross, mask grad, dropout, window)",
                  attn_skip_set, attn_skip_reset);
}

/* the one-pass backward (dq, dk, dv per batch and key/value head) against the dK/dV pass
   then the dQ pass: the same bits */
static void attention_one_pass(const t_env *e) {
    attn_two_ways(e, "attention: the one-pass backward gives the two passes' bits (T 1 to 129, cross, mask grad, dropout, window)",
                  attn_pass_set, attn_pass_reset);
}

/* ---- q, k, v as [B, T, H, D] views of one projection's rows (reshape of slices along the
   last dim, as the GPT block's c_attn): read in place and their gradients written in place
   (src/ops/attention.c, nn__attn_views) against the slices' copies and the gradient's
   CONCAT: the same bits on every backend (the same arithmetic, other addresses) ---- */

typedef struct viewcfg {
    int T, Tk, H, Hkv, D, Dv, causal, mask;
    float p;
    int order; /* the columns: 0 q, k, v; 1 v, q, k */
    int gviews; /* in-place gradients expected (0: cross-attention, k and v from another tensor) */
    nn_dtype dt; /* the projection's (and the attention's) storage: x converted to it */
} viewcfg;

/* y and the gradients of x (and x2, the keys' rows in cross-attention; the mask) of
   sum(y * r) into out[0..3]; *views, *gv what the compile made */
static int attn_run_views(nn_context *ctx, const viewcfg *c, float *const *out, const long *n, int *views, int *gv) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_attention_desc ad;
    nn_tensor x, x2, src[3], q, k, v, y, mask, r;
    int64_t w[3], off[3];
    long i;
    int j, ok = 0, cross = c->Tk != c->T;
    float *buf;
    memset(&gd, 0, sizeof gd);
    gd.seed = 13;
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return 0;
    w[0] = (int64_t)c->H * c->D, w[1] = (int64_t)c->Hkv * c->D, w[2] = (int64_t)c->Hkv * c->Dv;
    if (c->order == 0) off[0] = 0, off[1] = w[0], off[2] = w[0] + w[1];
    else off[2] = 0, off[0] = w[2], off[1] = w[2] + w[0];
    if (cross) off[0] = 0, off[1] = 0, off[2] = w[1];
    x = nn_input(g, "x", NN_F32, nn_shape2(2L * c->T, cross ? w[0] : w[0] + w[1] + w[2]));
    x2 = cross ? nn_input(g, "x2", NN_F32, nn_shape2(2L * c->Tk, w[1] + w[2])) : x;
    mask = c->mask ? nn_input(g, "mask", NN_F32, nn_shape2(c->T, c->Tk)) : NN_NONE;
    r = nn_input(g, "r", NN_F32, nn_shape4(2, c->T, c->H, c->Dv));
    nn_graph_requires_grad(g, x);
    if (cross) nn_graph_requires_grad(g, x2);
    if (c->mask) nn_graph_requires_grad(g, mask);
    src[0] = x, src[1] = x2, src[2] = x2;
    if (c->dt != NN_F32) {
        src[0] = nn_to_dtype(g, x, c->dt);
        src[1] = src[2] = cross ? nn_to_dtype(g, x2, c->dt) : src[0];
    }
    q = nn_reshape(g, nn_slice(g, src[0], 1, off[0], w[0]), nn_shape4(2, c->T, c->H, c->D));
    k = nn_reshape(g, nn_slice(g, src[1], 1, off[1], w[1]), nn_shape4(2, c->Tk, c->Hkv, c->D));
    v = nn_reshape(g, nn_slice(g, src[2], 1, off[2], w[2]), nn_shape4(2, c->Tk, c->Hkv, c->Dv));
    memset(&ad, 0, sizeof ad);
    ad.layout = NN_ATTN_BTHD;
    ad.causal = c->causal;
    ad.dropout = c->p;
    ad.mask = mask;
    y = nn_attention(g, q, k, v, &ad);
    if (c->dt != NN_F32) y = nn_to_dtype(g, y, NN_F32);
    nn_graph_output(g, y);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, y, r));
    if (nn_graph_compile(g, &cd) != NN_OK) goto done;
    *gv = t_attn_views_count(g, views);
    buf = (float *)malloc((size_t)(n[1] > n[0] ? n[1] : n[0]) * 4 + (size_t)n[2] * 4 + (size_t)n[3] * 4 + 16);
    if (!buf) goto done;
    t_seed(21);
    for (i = 0; i < n[1]; i++) buf[i] = (float)t_uniform(-2, 2);
    nn_tensor_write(g, x, buf, (size_t)n[1] * 4);
    if (cross) {
        for (i = 0; i < n[2]; i++) buf[i] = (float)t_uniform(-2, 2);
        nn_tensor_write(g, x2, buf, (size_t)n[2] * 4);
    }
    if (c->mask) {
        for (i = 0; i < n[3]; i++) buf[i] = (float)t_uniform(-1, 1);
        nn_tensor_write(g, mask, buf, (size_t)n[3] * 4);
    }
    for (i = 0; i < n[0]; i++) buf[i] = (float)t_uniform(-1, 1);
    nn_tensor_write(g, r, buf, (size_t)n[0] * 4);
    free(buf);
    ok = nn_graph_step(g) == NN_OK && nn_tensor_read(g, y, out[0], (size_t)n[0] * 4) == NN_OK &&
         nn_tensor_read(g, nn_graph_grad(g, x), out[1], (size_t)n[1] * 4) == NN_OK;
    if (ok && cross) ok = nn_tensor_read(g, nn_graph_grad(g, x2), out[2], (size_t)n[2] * 4) == NN_OK;
    if (ok && c->mask) ok = nn_tensor_read(g, nn_graph_grad(g, mask), out[3], (size_t)n[3] * 4) == NN_OK;
    for (j = 0; ok && j < 4; j++)
        for (i = 0; i < n[j]; i++)
            if (!isfinite(out[j][i])) ok = 0;
done:
    nn_graph_destroy(g);
    return ok;
}

static void attention_views(const t_env *e) {
    static const viewcfg cases[] = {
        {1, 1, 2, 2, 16, 16, 1, 0, 0, 0, 1, NN_F32},       {7, 7, 4, 4, 32, 32, 1, 0, 0, 1, 1, NN_F32},
        {65, 65, 4, 2, 32, 32, 1, 0, 0, 0, 1, NN_F32},     {33, 33, 4, 1, 16, 16, 0, 1, 0, 1, 1, NN_F32},
        {33, 33, 2, 2, 24, 16, 1, 0, 0, 0, 1, NN_F32},     {40, 40, 2, 2, 32, 32, 1, 0, 0.25f, 1, 1, NN_F32},
        {17, 29, 4, 2, 16, 16, 0, 0, 0, 0, 0, NN_F32},     {33, 33, 4, 2, 16, 16, 1, 0, 0, 1, 1, NN_BF16},
        {65, 65, 2, 2, 32, 16, 1, 0, 0, 0, 1, NN_F16}, {9, 9, 2, 2, 16, 16, 1, 0, 0, 0, 1, NN_BF16},
    };
    int ci, j;
    if (!t_begin(e, "attention: q, k, v as views of one projection's rows, read and their gradients written in place: the copies' bits (GQA, cross, mask, dropout, Dv != D, bf16, f16)")) return;
    for (ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) {
        const viewcfg *c = &cases[ci];
        long n[4], k, bad = 0;
        float *r[2][4];
        int run, ok = 1, views[2] = {0, 0}, gv[2] = {0, 0}, cross = c->Tk != c->T;
        long wq = (long)c->H * c->D, wk = (long)c->Hkv * c->D, wv = (long)c->Hkv * c->Dv;
        n[0] = 2L * c->T * c->H * c->Dv;
        n[1] = 2L * c->T * (cross ? wq : wq + wk + wv);
        n[2] = cross ? 2L * c->Tk * (wk + wv) : 0;
        n[3] = c->mask ? (long)c->T * c->Tk : 0;
        for (run = 0; run < 2; run++)
            for (j = 0; j < 4; j++) r[run][j] = (float *)calloc((size_t)n[j] + 1, 4);
        for (run = 0; run < 2; run++) {
            t_attn_views(run == 0);
            ok = ok && attn_run_views(e->ctx, c, r[run], n, &views[run], &gv[run]);
        }
        t_attn_views(1);
        T_CHECK(ok, "case %d: %s", ci, nn_context_last_error(e->ctx));
        /* every attention node of the graph reads its three operands in place */
        T_CHECK(ok && views[0] >= 6 && gv[0] == c->gviews && views[1] == 0 && gv[1] == 0,
                "case %d: views %d (in-place gradients %d, %d expected), without: %d, %d", ci, views[0], gv[0], c->gviews, views[1], gv[1]);
        for (j = 0; ok && j < 4; j++)
            for (k = 0; k < n[j]; k++)
                if (!(r[0][j][k] == r[1][j][k])) bad++;
        T_CHECK(bad == 0, "case %d (T %d Tk %d H %d Hkv %d D %d Dv %d): %ld values differ from the copies'", ci, c->T, c->Tk, c->H,
                c->Hkv, c->D, c->Dv, bad);
        for (run = 0; run < 2; run++)
            for (j = 0; j < 4; j++) free(r[run][j]);
    }
    t_end();
}

/* ==== bad input ==== */

static nn_tensor a_q(nn_graph *g, int B, int H, int T, int D) { return nn_input(g, "q", NN_F32, nn_shape4(B, H, T, D)); }
static nn_tensor a_kv(nn_graph *g, const char *n, int B, int H, int T, int D) { return nn_input(g, n, NN_F32, nn_shape4(B, H, T, D)); }
static nn_tensor a_with(nn_graph *g, nn_tensor mask, nn_tensor kpm, float p, int window, int layout) {
    nn_attention_desc d;
    memset(&d, 0, sizeof d);
    d.mask = mask;
    d.key_padding_mask = kpm;
    d.dropout = p;
    d.window = window;
    d.layout = layout;
    return nn_attention(g, a_q(g, 2, 4, 5, 8), a_kv(g, "k", 2, 2, 6, 8), a_kv(g, "v", 2, 2, 6, 8), &d);
}

B(s_attn_rank, nn_attention(g, F(g, S3(4, 5, 8)), a_kv(g, "k", 1, 4, 5, 8), a_kv(g, "v", 1, 4, 5, 8), NULL))
B(s_attn_int, nn_attention(g, nn_input(g, "q", NN_I32, S4(1, 4, 5, 8)), a_kv(g, "k", 1, 4, 5, 8), a_kv(g, "v", 1, 4, 5, 8), NULL))
B(s_attn_heads, nn_attention(g, a_q(g, 1, 4, 5, 8), a_kv(g, "k", 1, 3, 5, 8), a_kv(g, "v", 1, 3, 5, 8), NULL))
B(s_attn_dim, nn_attention(g, a_q(g, 1, 4, 5, 8), a_kv(g, "k", 1, 4, 5, 16), a_kv(g, "v", 1, 4, 5, 16), NULL))
B(s_attn_vlen, nn_attention(g, a_q(g, 1, 4, 5, 8), a_kv(g, "k", 1, 4, 5, 8), a_kv(g, "v", 1, 4, 6, 8), NULL))
B(s_attn_batch, nn_attention(g, a_q(g, 2, 4, 5, 8), a_kv(g, "k", 1, 4, 5, 8), a_kv(g, "v", 1, 4, 5, 8), NULL))
B(s_attn_d512, nn_attention(g, a_q(g, 1, 1, 5, 512), a_kv(g, "k", 1, 1, 5, 512), a_kv(g, "v", 1, 1, 5, 512), NULL))
B(s_attn_dv512, nn_attention(g, a_q(g, 1, 1, 5, 8), a_kv(g, "k", 1, 1, 5, 8), a_kv(g, "v", 1, 1, 5, 512), NULL))
B(s_attn_mask, a_with(g, F(g, S2(5, 7)), NN_NONE, 0, 0, 0))
B(s_attn_mask1, a_with(g, F(g, S1(6)), NN_NONE, 0, 0, 0))
B(s_attn_kpm, a_with(g, NN_NONE, I(g, S2(2, 5)), 0, 0, 0))
B(s_attn_p, a_with(g, NN_NONE, NN_NONE, 1.0f, 0, 0))
B(s_attn_window, a_with(g, NN_NONE, NN_NONE, 0, -1, 0))
B(s_attn_layout, a_with(g, NN_NONE, NN_NONE, 0, 0, 2))
B(s_attn_id, nn_attention(g, T(99), a_kv(g, "k", 1, 4, 5, 8), a_kv(g, "v", 1, 4, 5, 8), NULL))

static const bad_row attention_bad[] = {
    {"attention", "q of 3 dims", s_attn_rank, R_SHAPE, "nn_attention|[4, 5, 8]|4-D", 0},
    {"attention", "int32 q", s_attn_int, R_SHAPE, "nn_attention|q must be float32", 0},
    {"attention", "4 query heads over 3 key heads", s_attn_heads, R_SHAPE, "nn_attention|not a multiple", 0},
    {"attention", "head dims 8 and 16", s_attn_dim, R_SHAPE, "nn_attention|[1, 4, 5, 16]|disagree", 0},
    {"attention", "k and v lengths 5 and 6", s_attn_vlen, R_SHAPE, "nn_attention|[1, 4, 6, 8]|disagree", 0},
    {"attention", "batch 2 against 1", s_attn_batch, R_SHAPE, "nn_attention|[2, 4, 5, 8]|disagree", 0},
    {"attention", "head dim 512", s_attn_d512, R_SHAPE, "nn_attention|head dim 512|over 256", 0},
    {"attention", "v's head dim 512", s_attn_dv512, R_SHAPE, "nn_attention|head dim 512 of v [1, 1, 5, 512]|over 256", 0},
    {"attention", "mask [5, 7] for Tk 6", s_attn_mask, R_SHAPE, "nn_attention|mask [5, 7]|broadcast", 0},
    {"attention", "mask of 1 dim", s_attn_mask1, R_SHAPE, "nn_attention|mask [6]|2 to 4 dims", 0},
    {"attention", "key padding mask [2, 5] for Tk 6", s_attn_kpm, R_SHAPE, "nn_attention|key_padding_mask [2, 5]", 0},
    {"attention", "dropout 1", s_attn_p, R_INV, "nn_attention|dropout = 1", 0},
    {"attention", "window -1", s_attn_window, R_INV, "nn_attention|window = -1", 0},
    {"attention", "layout 2", s_attn_layout, R_INV, "nn_attention|layout 2", 0},
    {"attention", "q of id 99", s_attn_id, R_INV, "nn_attention|not a tensor of this graph", 0},
};

void suite_attention(const t_env *e) {
    T_RUN(e, attention_cases, attention_flash, attention_bits, attention_causal_skip, attention_one_pass, attention_views);
    t_bad_rows(e, attention_bad, (int)(sizeof attention_bad / sizeof attention_bad[0]));
}
