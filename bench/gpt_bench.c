/* gpt_bench.c - GPT figures of nn.h (bench/run.sh, FIGURES=gpt; PyTorch's side is
   bench/gpt_torch.py), one machine-readable line each.

   Build: cc -O2 -I. bench/gpt_bench.c -o bench/gpt_bench -lm -lpthread
   Usage: gpt_bench train SEL MODEL   BENCH name=gpt_train backend=NAME model=MODEL batch=B
                                      context=T tokens_per_sec=X gflops=X
              MODEL tiny:  examples/tiny_gpt.c's model and step (vocabulary 96, context 64,
                           4 layers, width 128, 4 heads, batch 16, AdamW lr 3e-4)
              MODEL gpt2s: GPT-2 small's shape (12 layers, width 768, 12 heads, context
                           256, batch 4; the character vocabulary of 96, not GPT-2's 50257)
              The text (/usr/share/common-licenses, in name order) lives on the device; a
              step writes the windows' start offsets only, as the example does. gflops:
              tokens/s x (6 x parameters + 12 x n_layer x context x width) per token (the
              matmul work of a training step, forward and backward; the attention's
              QK^T and AV counted at full T x T, as a causal mask does not save it here).
              PRECISION=bf16|fp16 trains with that nn_graph_desc.precision (the matmuls in
              16 bits, master weights float32) and adds precision=bf16|fp16 to the line;
              PARAMS=bf16 with PRECISION=bf16 stores the parameters in bf16 too
              (nn_graph_desc.param_dtype: embeddings and residual stream in bf16, as
              PyTorch's model.to(torch.bfloat16)) and adds params=bf16
          gpt_bench generate SEL      BENCH name=gpt_generate backend=NAME cache=yes|no
                                      tokens_per_sec=X: the tiny model (untrained) producing
              the 200 tokens after one, against the key/value cache (nn_gpt_decode: one
              token per run, greedy on the device, 4 bytes read back; a full context is
              refilled with its last 32 tokens in one nn_gpt_prefill pass whose caches are
              copied in) and without it (the whole window of up to 64 tokens run for each
              token, nanoGPT's generate(), reading back the logits)
          gpt_bench mem SEL            BENCH name=memory backend=NAME model=mlp784|tiny_gpt
                                      precision=fp32|bf16|fp16|bf16p act_max=B grad_max=B
                                      act_grad_max=B param_grads=B
                                      parameters=B ... peak=B: nn_graph_memory's bytes by
                                      kind of an MLP 784-1024-1024-10 (batch 256) and the
                                      tiny GPT, per precision (bench_mem below; bf16p:
                                      the bf16 policy with bf16 parameters)
          gpt_bench peak               BENCH name=fma_peak threads=N gflops=X: independent
                                      FMA chains on 1 and 2 threads (AVX-512 where the CPU
                                      has it, else AVX2+FMA), 3 tries each, the best: the
                                      machine's float32 FMA peak as measured */
#define _POSIX_C_SOURCE 200809L
#define NN_IMPLEMENTATION
#include "nn.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#define V 96

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench_name(const char *name, char *out, size_t n) {
    size_t i;
    snprintf(out, n, "%s", name);
    for (i = 0; out[i]; i++)
        if (out[i] == ' ' || out[i] == '\t' || out[i] == '=') out[i] = '_';
}

/* PRECISION=bf16|fp16|fp32 (unset: fp32) as nn_graph_desc.precision; -1 for anything else */
static int env_precision(const char **label) {
    const char *p = getenv("PRECISION");
    *label = p && p[0] ? p : "fp32";
    if (!p || !p[0] || strcmp(p, "fp32") == 0) return NN_PRECISION_FP32;
    if (strcmp(p, "bf16") == 0) return NN_PRECISION_BF16;
    if (strcmp(p, "fp16") == 0) return NN_PRECISION_FP16;
    fprintf(stderr, "gpt_bench: PRECISION=%s is not bf16, fp16 or fp32\n", p);
    return -1;
}

static nn_context *open_ctx(const char *sel, char *name, size_t n) {
    nn_context_desc cd;
    nn_context *ctx = NULL;
    nn_device_info dev;
    memset(&cd, 0, sizeof cd);
    cd.device = sel;
    if (nn_context_create(&cd, &ctx) != NN_OK) {
        fprintf(stderr, "gpt_bench: cannot open device %s\n", sel);
        return NULL;
    }
    nn_context_device(ctx, &dev);
    bench_name(dev.name, name, n);
    return ctx;
}

static int fail(nn_context *ctx, const char *what) {
    fprintf(stderr, "gpt_bench: %s: %s\n", what, ctx ? nn_context_last_error(ctx) : "");
    return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The files of /usr/share/common-licenses in name order, as tokens (newline 0, printable
   ASCII 1..95, others a space); random tokens where the folder is missing. */
static int32_t *corpus(int64_t *len) {
    const char *dir = "/usr/share/common-licenses";
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    int n = 0, i;
    int32_t *t = NULL;
    int64_t cap = 0;
    *len = 0;
    while (d && (e = readdir(d)) != NULL) {
        char **nn;
        if (e->d_name[0] == '.') continue;
        nn = (char **)realloc(names, sizeof *names * (size_t)(n + 1));
        if (!nn) break;
        names = nn;
        names[n++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    if (n) qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (i = 0; i < n; i++) {
        char p[1024];
        struct stat st;
        FILE *f;
        int c;
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && (f = fopen(p, "rb")) != NULL) {
            while ((c = getc(f)) != EOF) {
                if (*len == cap) {
                    int32_t *nt = (int32_t *)realloc(t, (size_t)(cap = cap * 2 + 65536) * 4);
                    if (!nt) break;
                    t = nt;
                }
                t[(*len)++] = c == '\n' ? 0 : (c >= 32 && c < 127) ? c - 31 : 1;
            }
            fclose(f);
        }
        free(names[i]);
    }
    free(names);
    if (*len < 100000) {
        uint32_t s = 1;
        free(t);
        *len = 300000;
        t = (int32_t *)malloc((size_t)*len * 4);
        for (i = 0; t && i < *len; i++) t[i] = (int32_t)((s = s * 1664525u + 1013904223u) >> 8) % V;
    }
    return t;
}

/* ---- training ---- */
static int bench_train(const char *sel, const char *model) {
    char name[256];
    nn_context *ctx = open_ctx(sel, name, sizeof name);
    nn_graph *g = NULL;
    nn_gpt_config cfg;
    nn_compile_desc cd;
    nn_graph_desc gd;
    nn_tensor text, rows, off, dx, dy, xt, yt, loss;
    const char *prec_label;
    int prec = env_precision(&prec_label), pbf16 = getenv("PARAMS") && strcmp(getenv("PARAMS"), "bf16") == 0;
    int64_t n, nrows, b, r, t, B, T, i, params;
    int32_t *txt, *tok, *tab, *brow, *boff;
    uint32_t seed = 7;
    int steps = 0, warm, status = 0, min_steps;
    double t0 = 0, dt = 0, min_time;
    if (!ctx) return 1;
    if (prec < 0) return 2;
    if (getenv("PARAMS") && getenv("PARAMS")[0] && (!pbf16 || prec != NN_PRECISION_BF16)) {
        fprintf(stderr, "gpt_bench: PARAMS=%s: bf16, with PRECISION=bf16\n", getenv("PARAMS"));
        return 2;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.vocab_size = V;
    if (strcmp(model, "tiny") == 0) {
        B = 16, T = 64, cfg.n_layer = 4, cfg.n_head = 4, cfg.n_embd = 128, warm = 10, min_steps = 30, min_time = 2.0;
    } else if (strcmp(model, "gpt2s") == 0) {
        B = 4, T = 256, cfg.n_layer = 12, cfg.n_head = 12, cfg.n_embd = 768, warm = 1, min_steps = 2, min_time = 0.0;
    } else {
        fprintf(stderr, "gpt_bench: model %s is not tiny or gpt2s\n", model);
        return 2;
    }
    if (getenv("BENCH_STEPS")) min_steps = atoi(getenv("BENCH_STEPS")), min_time = 0.0; /* bench/cycles.sh */
    cfg.block_size = T;
    tok = corpus(&n);
    nrows = n / T + 2;
    txt = (int32_t *)calloc((size_t)(nrows * T), 4);
    tab = (int32_t *)malloc((size_t)(B * T * T) * 4);
    brow = (int32_t *)malloc((size_t)B * 2 * 4);
    boff = (int32_t *)malloc((size_t)B * 4);
    if (!tok || !txt || !tab || !brow || !boff) return fail(ctx, "out of memory");
    memcpy(txt, tok, (size_t)n * 4);
    memset(&cd, 0, sizeof cd);
    memset(&gd, 0, sizeof gd);
    gd.precision = (nn_precision)prec;
    gd.param_dtype = pbf16 ? NN_BF16 : NN_F32;
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return fail(ctx, "graph");
    /* examples/tiny_gpt.c's batch on the device: rows (q, q+1) of the 64-wide text and
       offsets b*T + r, gathered through the tables dx, dy */
    text = nn_input(g, "text", NN_I32, nn_shape2(nrows, T));
    rows = nn_input(g, "rows", NN_I32, nn_shape1(2 * B));
    off = nn_input(g, "offsets", NN_I32, nn_shape1(B));
    dx = nn_input(g, "x_index", NN_I32, nn_shape2(B * T, T));
    dy = nn_input(g, "y_index", NN_I32, nn_shape2(B * T, T));
    {
        nn_tensor flat = nn_reshape(g, nn_gather_rows(g, text, rows), nn_shape1(B * 2 * T));
        xt = nn_index_select(g, flat, 0, nn_reshape(g, nn_gather_rows(g, dx, off), nn_shape1(B * T)));
        yt = nn_index_select(g, flat, 0, nn_reshape(g, nn_gather_rows(g, dy, off), nn_shape1(B * T)));
    }
    loss = nn_softmax_cross_entropy(g, nn_gpt(g, nn_reshape(g, xt, nn_shape2(B, T)), &cfg), yt);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAMW;
    cd.optimizer.lr = 3e-4f;
    if (nn_graph_compile(g, &cd) != NN_OK) return fail(ctx, "compile");
    for (b = 0; b < B; b++)
        for (r = 0; r < T; r++)
            for (t = 0; t < T; t++) tab[(b * T + r) * T + t] = (int32_t)(b * 2 * T + r + t);
    if (nn_tensor_write(g, dx, tab, (size_t)(B * T * T) * 4) != NN_OK) return fail(ctx, "write");
    for (i = 0; i < B * T * T; i++) tab[i]++;
    if (nn_tensor_write(g, dy, tab, (size_t)(B * T * T) * 4) != NN_OK ||
        nn_tensor_write(g, text, txt, (size_t)(nrows * T) * 4) != NN_OK)
        return fail(ctx, "write");
    while ((steps < min_steps || dt < min_time) && steps < 100000) {
        for (b = 0; b < B; b++) {
            int64_t s;
            seed = seed * 1664525u + 1013904223u;
            s = (int64_t)(seed >> 4) % (n * 9 / 10 - T - 1);
            brow[2 * b] = (int32_t)(s / T);
            brow[2 * b + 1] = (int32_t)(s / T + 1);
            boff[b] = (int32_t)(b * T + s % T);
        }
        if (nn_tensor_write(g, rows, brow, (size_t)B * 2 * 4) != NN_OK || nn_tensor_write(g, off, boff, (size_t)B * 4) != NN_OK ||
            nn_graph_step(g) != NN_OK)
            return fail(ctx, "step");
        if (warm > 0) {
            if (--warm == 0) {
                if (nn_graph_finish(g) != NN_OK) return fail(ctx, "finish");
                t0 = now();
            }
            continue;
        }
        steps++;
        if (nn_graph_finish(g) != NN_OK) return fail(ctx, "finish");
        dt = now() - t0;
    }
    params = 12 * cfg.n_layer * cfg.n_embd * cfg.n_embd + V * cfg.n_embd; /* the matmuls' weights, the tied head's */
    {
        double tps = (double)steps * B * T / dt;
        double flop = 6.0 * (double)params + 12.0 * cfg.n_layer * (double)T * (double)cfg.n_embd;
        printf("BENCH name=gpt_train backend=%s model=%s%s%s%s batch=%lld context=%lld tokens_per_sec=%.1f gflops=%.2f\n", name,
               model, prec ? " precision=" : "", prec ? prec_label : "", pbf16 ? " params=bf16" : "", (long long)B, (long long)T, tps, tps * flop / 1e9);
    }
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    free(tok);
    free(txt);
    free(tab);
    free(brow);
    free(boff);
    return status;
}

/* ---- generation with and without the cache ---- */
static int argmax(const float *p) {
    int i, k = 0;
    for (i = 1; i < V; i++)
        if (p[i] > p[k]) k = i;
    return k;
}

static int bench_generate(const char *sel) {
    enum { T = 64, N = 200, KEEP = T / 2 };
    char name[256];
    nn_context *ctx = open_ctx(sel, name, sizeof name);
    nn_graph *g = NULL, *d = NULL, *pf = NULL;
    nn_gpt_config cfg;
    nn_compile_desc cd;
    nn_graph_desc gd;
    nn_sample_desc sd;
    nn_tensor w, logits, tok, pos, out, pidx, pout, caches[8], pcaches[8];
    static float lg[T * V], kv[T * 128];
    int hist[N + T + 2], nh, p, c, k;
    nn_stats st;
    double t0;
    if (!ctx) return 1;
    memset(&cfg, 0, sizeof cfg);
    cfg.vocab_size = V;
    cfg.block_size = T;
    cfg.n_layer = 4;
    cfg.n_head = 4;
    cfg.n_embd = 128;
    memset(&cd, 0, sizeof cd);
    memset(&gd, 0, sizeof gd);
    memset(&sd, 0, sizeof sd); /* greedy, on the device: the read-back is the token id */
    gd.eval = 1;
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return fail(ctx, "graph");
    w = nn_input(g, "window", NN_I32, nn_shape2(1, T));
    logits = nn_gpt(g, w, &cfg);
    nn_graph_output(g, logits);
    if (nn_graph_compile(g, &cd) != NN_OK) return fail(ctx, "compile");
    gd.share_params = g;
    if (nn_graph_create(ctx, &gd, &d) != NN_OK) return fail(ctx, "graph");
    tok = nn_input(d, "token", NN_I32, nn_shape1(1));
    pos = nn_input(d, "position", NN_I32, nn_shape1(1));
    out = nn_sample_logits(d, nn_gpt_decode(d, tok, pos, &cfg, caches), &sd);
    nn_graph_output(d, out);
    if (nn_graph_compile(d, &cd) != NN_OK) return fail(ctx, "compile");
    /* the refill: the last KEEP tokens in one pass (nn_gpt_prefill), its caches copied in */
    if (nn_graph_create(ctx, &gd, &pf) != NN_OK) return fail(ctx, "graph");
    pidx = nn_input(pf, "window", NN_I32, nn_shape2(1, KEEP));
    pout = nn_sample_logits(pf, nn_slice(pf, nn_gpt_prefill(pf, pidx, &cfg, pcaches), 0, KEEP - 1, 1), &sd);
    nn_graph_output(pf, pout);
    if (nn_graph_compile(pf, &cd) != NN_OK) return fail(ctx, "compile");
    /* with the cache: one token a run; a full context is refilled with its last KEEP tokens */
    nh = 0;
    hist[nh++] = 52;
    p = 0;
    nn_context_reset_stats(ctx);
    t0 = now();
    for (c = 0; c < N; c++) {
        int32_t tv, pv, next;
        if (p == T) {
            int32_t win[KEEP];
            for (k = 0; k < KEEP; k++) win[k] = hist[nh - KEEP + k];
            if (nn_tensor_write(pf, pidx, win, sizeof win) != NN_OK || nn_graph_forward(pf) != NN_OK ||
                nn_tensor_read(pf, pout, &next, 4) != NN_OK)
                return fail(ctx, "generate");
            for (k = 0; k < 2 * cfg.n_layer; k++)
                if (nn_tensor_read(pf, pcaches[k], kv, sizeof kv) != NN_OK || nn_tensor_write(d, caches[k], kv, sizeof kv) != NN_OK)
                    return fail(ctx, "generate");
            p = KEEP;
        } else {
            tv = hist[nh - 1], pv = p++;
            if (nn_tensor_write(d, tok, &tv, 4) != NN_OK || nn_tensor_write(d, pos, &pv, 4) != NN_OK || nn_graph_forward(d) != NN_OK ||
                nn_tensor_read(d, out, &next, 4) != NN_OK)
                return fail(ctx, "generate");
        }
        hist[nh++] = next;
    }
    t0 = now() - t0;
    nn_context_stats(ctx, &st);
    printf("BENCH name=gpt_generate backend=%s cache=yes tokens_per_sec=%.1f launches_per_token=%.1f\n", name, N / t0,
           (double)st.kernel_launches / N);
    /* without: the window of the last (up to) 64 tokens for every token */
    nh = 0;
    hist[nh++] = 52;
    nn_context_reset_stats(ctx);
    t0 = now();
    for (c = 0; c < N; c++) {
        int32_t win[T];
        int len = nh < T ? nh : T;
        memset(win, 0, sizeof win);
        for (k = 0; k < len; k++) win[k] = hist[nh - len + k];
        if (nn_tensor_write(g, w, win, sizeof win) != NN_OK || nn_graph_forward(g) != NN_OK ||
            nn_tensor_read(g, logits, lg, sizeof lg) != NN_OK)
            return fail(ctx, "generate");
        hist[nh++] = argmax(lg + (size_t)(len - 1) * V);
    }
    t0 = now() - t0;
    nn_context_stats(ctx, &st);
    printf("BENCH name=gpt_generate backend=%s cache=no tokens_per_sec=%.1f launches_per_token=%.1f\n", name, N / t0,
           (double)st.kernel_launches / N);
    nn_graph_destroy(pf);
    nn_graph_destroy(d);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return 0;
}

/* ---- the FMA peak ---- */
#define PEAK_ITERS 20000000L
#if defined(__x86_64__) && defined(__GNUC__)
/* Twelve independent chains in named variables: an array of accumulators is kept in memory
   by gcc -O2 (a store and a load per FMA), which measured a third of the real peak. */
#define PEAK_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
__attribute__((target("avx512f"))) static float fma512(long iters) {
    __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f), s = _mm512_setzero_ps();
    long i;
#define PEAK_DECL(k) __m512 a##k = _mm512_set1_ps((float)(k));
#define PEAK_STEP(k) a##k = _mm512_fmadd_ps(a##k, m, c);
#define PEAK_SUM(k) s = _mm512_add_ps(s, a##k);
    PEAK_CHAINS(PEAK_DECL)
    for (i = 0; i < iters; i++) {
        PEAK_CHAINS(PEAK_STEP)
    }
    PEAK_CHAINS(PEAK_SUM)
#undef PEAK_DECL
#undef PEAK_STEP
#undef PEAK_SUM
    return _mm512_reduce_add_ps(s);
}
__attribute__((target("avx2,fma"))) static float fma256(long iters) {
    __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f), s = _mm256_setzero_ps();
    float o[8];
    long i;
#define PEAK_DECL(k) __m256 a##k = _mm256_set1_ps((float)(k));
#define PEAK_STEP(k) a##k = _mm256_fmadd_ps(a##k, m, c);
#define PEAK_SUM(k) s = _mm256_add_ps(s, a##k);
    PEAK_CHAINS(PEAK_DECL)
    for (i = 0; i < iters; i++) {
        PEAK_CHAINS(PEAK_STEP)
    }
    PEAK_CHAINS(PEAK_SUM)
#undef PEAK_DECL
#undef PEAK_STEP
#undef PEAK_SUM
    _mm256_storeu_ps(o, s);
    return o[0] + o[1] + o[2] + o[3] + o[4] + o[5] + o[6] + o[7];
}
static int peak_width(void) { return __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("fma") ? 8 : 0; }
static void *peak_thread(void *arg) {
    volatile float s = peak_width() == 16 ? fma512(PEAK_ITERS) : fma256(PEAK_ITERS);
    (void)s;
    return arg;
}
#else
static int peak_width(void) { return 0; }
static void *peak_thread(void *arg) { return arg; }
#endif

static int bench_peak(void) {
    int th, best_t = 1, w = peak_width();
    double best = 0;
    if (!w) {
        printf("BENCH name=fma_peak threads=0 gflops=0\n");
        return 0;
    }
    /* the best of 3 tries a thread count: the peak is what the cores can do, and a try that
       shares a core with other work (a 2-core VM's neighbour, a late thread) only reads
       lower (single tries on one machine read 360-442 within minutes) */
    for (th = 1; th <= 2; th++) {
        int rep;
        for (rep = 0; rep < 3; rep++) {
            pthread_t ids[2];
            double t0 = now(), g;
            int k;
            for (k = 0; k < th; k++) pthread_create(&ids[k], NULL, peak_thread, NULL);
            for (k = 0; k < th; k++) pthread_join(ids[k], NULL);
            g = th * (double)PEAK_ITERS * 12 * w * 2 / (now() - t0) / 1e9;
            if (g > best) best = g, best_t = th;
        }
    }
    printf("BENCH name=fma_peak threads=%d width=%d gflops=%.1f\n", best_t, w, best);
    return 0;
}

/* gpt_bench mem SEL: nn_graph_memory of two training graphs in float32, bf16 and fp16
   (nn_graph_desc.precision), bytes by kind, one line each: an MLP 784-1024-1024-10 at batch
   256 (cross-entropy, Adam) and examples/tiny_gpt.c's model (batch 16, context 64, AdamW).
   act_max and grad_max: the activations and gradients at their own peak (the forward's end);
   act_grad_max: the gradients other than the parameters' at their own peak; param_grads:
   the parameters' gradients (float32, as the master weights);
   the other kinds at the plan's peak. bf16p: the bf16 policy with the parameters stored in
   bf16 too (nn_graph_desc.param_dtype), no float32 master weights. */
static int bench_mem(const char *sel) {
    char name[256];
    nn_context *ctx = open_ctx(sel, name, sizeof name);
    static const char *const pl[4] = {"fp32", "bf16", "fp16", "bf16p"};
    int m, p;
    if (!ctx) return 1;
    for (m = 0; m < 2; m++)
        for (p = 0; p < 4; p++) {
            nn_graph *g = NULL;
            nn_graph_desc gd;
            nn_compile_desc cd;
            nn_memory_report r;
            memset(&gd, 0, sizeof gd);
            memset(&cd, 0, sizeof cd);
            gd.precision = p == 3 ? NN_PRECISION_BF16 : (nn_precision)p;
            gd.param_dtype = p == 3 ? NN_BF16 : NN_F32;
            if (nn_graph_create(ctx, &gd, &g) != NN_OK) return fail(ctx, "graph");
            if (m == 0) {
                nn_tensor x = nn_input(g, "x", NN_F32, nn_shape2(256, 784)), y = nn_input(g, "y", NN_I32, nn_shape1(256)), h;
                h = nn_relu(g, nn_linear_layer(g, x, 1024, NULL, "fc1"));
                h = nn_relu(g, nn_linear_layer(g, h, 1024, NULL, "fc2"));
                cd.loss = nn_cross_entropy_loss(g, nn_linear_layer(g, h, 10, NULL, "fc3"), y, NULL);
                cd.optimizer.kind = NN_OPT_ADAM;
            } else {
                nn_gpt_config cfg;
                nn_tensor x = nn_input(g, "x", NN_I32, nn_shape2(16, 64)), y = nn_input(g, "y", NN_I32, nn_shape1(16 * 64));
                memset(&cfg, 0, sizeof cfg);
                cfg.vocab_size = V;
                cfg.n_layer = 4;
                cfg.n_head = 4;
                cfg.n_embd = 128;
                cfg.block_size = 64;
                cd.loss = nn_softmax_cross_entropy(g, nn_gpt(g, x, &cfg), y);
                cd.optimizer.kind = NN_OPT_ADAMW;
            }
            cd.optimizer.lr = 1e-3f;
            if (nn_graph_compile(g, &cd) != NN_OK || nn_graph_memory(g, &r) != NN_OK) return fail(ctx, "compile");
            printf("BENCH name=memory backend=%s model=%s precision=%s act_max=%lld grad_max=%lld act_grad_max=%lld "
                   "param_grads=%lld parameters=%lld gradients=%lld optimizer_state=%lld activations=%lld workspace=%lld inputs=%lld peak=%lld\n",
                   name, m == 0 ? "mlp784" : "tiny_gpt", pl[p], (long long)r.activations_max, (long long)r.gradients_max,
                   (long long)r.activation_gradients_max, (long long)r.parameter_gradients, (long long)r.parameters, (long long)r.gradients, (long long)r.optimizer_state, (long long)r.activations,
                   (long long)r.workspace, (long long)r.inputs, (long long)r.peak);
            nn_graph_destroy(g);
        }
    nn_context_destroy(ctx);
    return 0;
}

int main(int argc, char **argv) {
    const char *cmd = argc > 1 ? argv[1] : "";
    if (argc == 4 && strcmp(cmd, "train") == 0) return bench_train(argv[2], argv[3]);
    if (argc == 3 && strcmp(cmd, "generate") == 0) return bench_generate(argv[2]);
    if (argc == 2 && strcmp(cmd, "peak") == 0) return bench_peak();
    if (argc == 3 && strcmp(cmd, "mem") == 0) return bench_mem(argv[2]);
    fprintf(stderr, "usage: %s train DEVICE tiny|gpt2s | generate DEVICE | peak | mem DEVICE\n", argv[0]);
    return 2;
}
