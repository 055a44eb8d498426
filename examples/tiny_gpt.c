/* tiny_gpt.c - a character-level GPT (nanoGPT's model) trained on a text file, then
   generating from a prompt against a key/value cache on the device.

   Build and run (from the repository root, after `make nn.h`):
       cc -O2 -I. examples/tiny_gpt.c -o examples/tiny_gpt -lm -lpthread
       ./examples/tiny_gpt [TEXT]      (STEPS=n overrides the step count; NN_DEVICE picks the
                                        backend; CKPT=path the checkpoint, default
                                        tiny_gpt.safetensors, CKPT= none; SEED=n the
                                        initialisation and batch seed, default 1;
                                        PRECISION=bf16|fp16|fp32 the matmuls' storage
                                        type, nn_graph_desc.precision: master weights,
                                        norms, attention and the loss stay float32;
                                        PARAMS=bf16 with PRECISION=bf16 stores the
                                        parameters in bf16 too, nn_graph_desc.param_dtype,
                                        no float32 master weights; PARAMS=bf16sr rounds
                                        their updates stochastically)

   Text: TEXT, or the files of /usr/share/common-licenses concatenated in name order.
   Characters: newline and printable ASCII (vocabulary 96), anything else a space; the
   first 90% trains, the last 10% is held out. Model: 4 layers, width 128, 4 heads,
   context 64; AdamW (lr 3e-4, PyTorch's other defaults), batches of 16 windows.

   The text is written to the device once. A batch is built there: each step writes only
   the windows' start offsets (as the two 64-character rows each window spans and its
   offset in them: 3 int32 per window), and reads nothing back but the loss every 50 steps.
   The checkpoint is a safetensors file with nanoGPT's names (transformer.wte.weight, ...;
   lm_head.weight is tied to wte: load it with strict=False or set it to wte's tensor).
   Generation runs one token per nn_graph_forward against the cache (nn_gpt_decode) and
   samples the next token on the device (nn_sample_logits, temperature 0.8): the read-back
   is the token id, 4 bytes. When the 64 positions are used up, the last 32 characters
   are run in one pass (nn_gpt_prefill, which also draws the next character), their keys
   and values copied into the cache, and generation goes on from position 32.

   The last line: RESULT device=<name> steps=<n> tokens_per_sec=<x> heldout_loss=<x>
   h2d_bytes_per_step=<x> d2h_bytes_per_step=<x> generate_tokens_per_sec=<x>
   (and precision=bf16|fp16 when PRECISION is not fp32, params=bf16|bf16sr with PARAMS)

   A progress line (steps, loss, tokens/s, time left) runs on stderr during training
   (PROGRESS=0: none); METRICS=path writes a CSV log (step, train_loss, heldout_loss,
   seconds) that tools/plot_metrics draws as an SVG (examples/progress.h). */
#define _POSIX_C_SOURCE 200809L
#define NN_IMPLEMENTATION
#include "nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define V 96
#define T 64
#define B 16
#define DEFAULT_STEPS 300
#define GEN_CHARS 200
#define N_EMBD 128

#include "text_corpus.h"
#include "progress.h" /* the progress line (stderr), the METRICS log */

static int fail(nn_context *ctx, const char *what) {
    fprintf(stderr, "tiny_gpt: %s: %s\n", what, ctx ? nn_context_last_error(ctx) : "");
    return 1;
}

int main(int argc, char **argv) {
    nn_context *ctx = NULL;
    nn_graph *g = NULL, *gen = NULL, *full = NULL, *pf = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_gpt_config cfg;
    nn_tensor text, rows, off, dx, dy, xt, yt, logits, loss, tok, pos, nexttok, caches[8], widx, wnext, pidx, pnext, pcaches[8];
    nn_sample_desc sd;
    nn_stats st0, st1;
    nn_device_info dev;
    char *raw, devname[128], out[GEN_CHARS + 1];
    const char *ckpt = getenv("CKPT") ? getenv("CKPT") : "tiny_gpt.safetensors";
    size_t n, i;
    int64_t ntrain, nrows, steps = DEFAULT_STEPS, step, s[B];
    int32_t *txt = NULL, *tab = NULL, brow[2 * B], boff[B];
    int rc = 1, k;
    double t0, train_time = 0, heldout = 0, gen_tps = 0, nocache_tps = 0;
    ex_progress bar;
    ex_metrics log = {NULL, 0};
    uint64_t seed = 1;
    float lossv = 0;
    const char *prec = "fp32", *params = getenv("PARAMS") ? getenv("PARAMS") : "";

    if (getenv("STEPS")) steps = atoll(getenv("STEPS"));
    if (getenv("PRECISION") && getenv("PRECISION")[0]) {
        prec = getenv("PRECISION");
        if (strcmp(prec, "bf16") != 0 && strcmp(prec, "fp16") != 0 && strcmp(prec, "fp32") != 0) {
            fprintf(stderr, "tiny_gpt: PRECISION=%s is not bf16, fp16 or fp32\n", prec);
            return 1;
        }
    }
    if (params[0] && ((strcmp(params, "bf16") != 0 && strcmp(params, "bf16sr") != 0) || strcmp(prec, "bf16") != 0)) {
        fprintf(stderr, "tiny_gpt: PARAMS=%s: bf16 or bf16sr, with PRECISION=bf16\n", params);
        return 1;
    }
    if (getenv("SEED")) seed = (uint64_t)atoll(getenv("SEED"));
    rng ^= (seed - 1) * 0xD1B54A32D192ED03ull; /* SEED=1: the default stream */
    raw = read_corpus(argc > 1 ? argv[1] : NULL, &n);
    if (!raw || n < 20 * (T + 1)) {
        fprintf(stderr, "tiny_gpt: cannot read the text (%s), or it is shorter than %d characters\n",
                argc > 1 ? argv[1] : "/usr/share/common-licenses", 20 * (T + 1));
        free(raw);
        return 1;
    }
    ntrain = (int64_t)(n * 9 / 10);
    nrows = (int64_t)n / T + 2;
    txt = (int32_t *)calloc((size_t)(nrows * T), 4);
    tab = (int32_t *)malloc((size_t)B * T * T * 4);
    if (!txt || !tab) return fail(NULL, "out of memory");
    for (i = 0; i < n; i++) txt[i] = tok_of((unsigned char)raw[i]);
    printf("text: %zu characters (%lld train, %lld held out)\n", n, (long long)ntrain, (long long)(n - ntrain));

    if (nn_context_create(NULL, &ctx) != NN_OK) return fail(NULL, "nn_context_create");
    nn_context_device(ctx, &dev);
    printf("backend: %s\n", dev.name);
    snprintf(devname, sizeof devname, "%s", dev.name);
    for (k = 0; devname[k]; k++)
        if (devname[k] == ' ') devname[k] = '_';

    memset(&cfg, 0, sizeof cfg);
    cfg.vocab_size = V;
    cfg.block_size = T;
    cfg.n_layer = 4;
    cfg.n_head = 4;
    cfg.n_embd = N_EMBD;

    /* ---- the training graph: batches gathered from the text on the device ---- */
    memset(&gd, 0, sizeof gd);
    gd.seed = seed;
    gd.precision = strcmp(prec, "bf16") == 0 ? NN_PRECISION_BF16 : strcmp(prec, "fp16") == 0 ? NN_PRECISION_FP16 : NN_PRECISION_FP32;
    gd.param_dtype = params[0] ? NN_BF16 : NN_F32;
    printf("precision: %s%s%s\n", prec, params[0] ? ", parameters " : "", params);
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return fail(ctx, "nn_graph_create");
    text = nn_input(g, "text", NN_I32, nn_shape2(nrows, T));  /* the text in rows of 64 */
    rows = nn_input(g, "rows", NN_I32, nn_shape1(2 * B));     /* per window: rows q, q+1 */
    off = nn_input(g, "offsets", NN_I32, nn_shape1(B));       /* per window: b*64 + r */
    dx = nn_input(g, "x_index", NN_I32, nn_shape2(B * T, T)); /* [b*64 + r, t]: b*128 + r + t */
    dy = nn_input(g, "y_index", NN_I32, nn_shape2(B * T, T)); /* the same + 1 */
    {
        nn_tensor flat = nn_reshape(g, nn_gather_rows(g, text, rows), nn_shape1(B * 2 * T)); /* [B, 128] flat */
        xt = nn_index_select(g, flat, 0, nn_reshape(g, nn_gather_rows(g, dx, off), nn_shape1(B * T)));
        yt = nn_index_select(g, flat, 0, nn_reshape(g, nn_gather_rows(g, dy, off), nn_shape1(B * T)));
    }
    logits = nn_gpt(g, nn_reshape(g, xt, nn_shape2(B, T)), &cfg);
    loss = nn_softmax_cross_entropy(g, logits, yt);
    nn_graph_output(g, loss);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAMW;
    cd.optimizer.lr = 3e-4f;
    cd.optimizer.stochastic_rounding = strcmp(params, "bf16sr") == 0;
    if (nn_graph_compile(g, &cd) != NN_OK) return fail(ctx, "compile");
    {
        int64_t b, r, t;
        for (b = 0; b < B; b++)
            for (r = 0; r < T; r++)
                for (t = 0; t < T; t++) tab[(b * T + r) * T + t] = (int32_t)(b * 2 * T + r + t);
        if (nn_tensor_write(g, dx, tab, (size_t)B * T * T * 4) != NN_OK) return fail(ctx, "write");
        for (i = 0; i < (size_t)B * T * T; i++) tab[i]++;
        if (nn_tensor_write(g, dy, tab, (size_t)B * T * T * 4) != NN_OK ||
            nn_tensor_write(g, text, txt, (size_t)(nrows * T) * 4) != NN_OK)
            return fail(ctx, "write");
    }

    /* ---- training ---- */
    if (!ex_metrics_open(&log, "step,train_loss,heldout_loss,seconds")) return 1;
    ex_progress_begin(&bar, "", steps, (double)B * T, "tokens");
    nn_context_stats(ctx, &st0);
    t0 = now();
    for (step = 1; step <= steps; step++) {
        int b;
        for (b = 0; b < B; b++) s[b] = (int64_t)(rnd() % (uint32_t)(ntrain - T - 1));
        fill_batch(s, brow, boff);
        if (nn_tensor_write(g, rows, brow, sizeof brow) != NN_OK || nn_tensor_write(g, off, boff, sizeof boff) != NN_OK ||
            nn_graph_step(g) != NN_OK)
            return fail(ctx, "step");
        if (ex_progress_due(&bar, step)) ex_progress_show(&bar, step, step >= 50 ? lossv : NAN); /* the loss read last */
        if (step % 50 == 0 || step == steps) {
            if (nn_tensor_read(g, loss, &lossv, 4) != NN_OK) return fail(ctx, "read");
            train_time = now() - t0;
            ex_progress_end(&bar);
            {
                double row[4];
                row[0] = (double)step, row[1] = lossv, row[2] = NAN, row[3] = train_time;
                ex_metrics_row(&log, row);
            }
            printf("step %5lld  loss %.4f  %.0f tokens/s\n", (long long)step, lossv, (double)step * B * T / train_time);
            fflush(stdout);
        }
    }
    train_time = now() - t0;
    nn_context_stats(ctx, &st1);

    /* ---- held-out loss: the same graph, forward only, on every 64-character window of the
       last 10% one after another (as many whole batches as it holds: 29 of 16 on the default
       text), so the figure depends on the model alone; bench/gpt_torch.py --heldout-after N
       takes the same windows ---- */
    {
        int64_t e, b, nbatch = (((int64_t)n - ntrain - 1) / T) / B;
        if (nbatch < 1) return fail(ctx, "the held-out text is shorter than one batch of windows");
        for (e = 0; e < nbatch; e++) {
            for (b = 0; b < B; b++) s[b] = ntrain + (e * B + b) * T;
            fill_batch(s, brow, boff);
            if (nn_tensor_write(g, rows, brow, sizeof brow) != NN_OK || nn_tensor_write(g, off, boff, sizeof boff) != NN_OK ||
                nn_graph_forward(g) != NN_OK || nn_tensor_read(g, loss, &lossv, 4) != NN_OK)
                return fail(ctx, "eval");
            heldout += lossv;
        }
        heldout /= (double)nbatch;
        {
            double row[4];
            row[0] = (double)steps, row[1] = NAN, row[2] = heldout, row[3] = train_time;
            ex_metrics_row(&log, row);
            ex_metrics_close(&log);
        }
        printf("held-out loss %.4f (%lld batches of %d x %d: the held-out text's windows in order)\n", heldout, (long long)nbatch, B, T);
    }
    if (ckpt[0]) {
        if (nn_graph_save_safetensors(g, ckpt) != NN_OK) return fail(ctx, "save");
        printf("checkpoint: %s\n", ckpt);
    }

    /* ---- generation against the key/value cache ---- */
    memset(&gd, 0, sizeof gd);
    gd.share_params = g;
    gd.eval = 1;
    if (nn_graph_create(ctx, &gd, &gen) != NN_OK) return fail(ctx, "nn_graph_create");
    tok = nn_input(gen, "token", NN_I32, nn_shape1(1));
    pos = nn_input(gen, "position", NN_I32, nn_shape1(1));
    memset(&sd, 0, sizeof sd);
    sd.temperature = 0.8f;
    nexttok = nn_sample_logits(gen, nn_gpt_decode(gen, tok, pos, &cfg, caches), &sd); /* int32 [1] */
    nn_graph_output(gen, nexttok);
    memset(&cd, 0, sizeof cd);
    if (nn_graph_compile(gen, &cd) != NN_OK) return fail(ctx, "compile (generation)");
    /* the refill: the last T / 2 characters in one pass, drawing the character after them */
    if (nn_graph_create(ctx, &gd, &pf) != NN_OK) return fail(ctx, "nn_graph_create");
    pidx = nn_input(pf, "window", NN_I32, nn_shape2(1, T / 2));
    pnext = nn_sample_logits(pf, nn_slice(pf, nn_gpt_prefill(pf, pidx, &cfg, pcaches), 0, T / 2 - 1, 1), &sd);
    nn_graph_output(pf, pnext);
    if (nn_graph_compile(pf, &cd) != NN_OK) return fail(ctx, "compile (prefill)");
    {
        const char *prompt = "The ";
        int hist[T + GEN_CHARS + 8], nh = 0, p = 0, next = 0, c;
        int32_t drawn = 0, win[T / 2];
        static float kv[T * N_EMBD]; /* one layer's keys or values: [1, heads, T, N_EMBD / heads] */
        double tg;
        for (k = 0; prompt[k]; k++) hist[nh++] = tok_of((unsigned char)prompt[k]);
        tg = now();
        /* run hist[from..nh) into the cache from position 0 */
#define RUN_TOKEN(tk)                                                                                                   \
    do {                                                                                                                \
        int32_t tv = (int32_t)(tk), pv = (int32_t)p;                                                                   \
        if (nn_tensor_write(gen, tok, &tv, 4) != NN_OK || nn_tensor_write(gen, pos, &pv, 4) != NN_OK ||                \
            nn_graph_forward(gen) != NN_OK || nn_tensor_read(gen, nexttok, &drawn, 4) != NN_OK)                       \
            return fail(ctx, "generate");                                                                               \
        p++;                                                                                                            \
    } while (0)
        for (k = 0; k < 2 * cfg.n_layer; k++) nn_tensor_fill(gen, caches[k], 0.0f);
        for (k = 0; k < nh; k++) RUN_TOKEN(hist[k]);
        for (c = 0; c < GEN_CHARS; c++) {
            next = (int)drawn; /* drawn on the device after the last token run */
            out[c] = (char)chr_of(next);
            hist[nh++] = next;
            if (p == T) { /* the context is full: the last T / 2 characters in one pass */
                for (k = 0; k < T / 2; k++) win[k] = hist[nh - T / 2 + k];
                if (nn_tensor_write(pf, pidx, win, sizeof win) != NN_OK || nn_graph_forward(pf) != NN_OK ||
                    nn_tensor_read(pf, pnext, &drawn, 4) != NN_OK)
                    return fail(ctx, "generate (prefill)");
                for (k = 0; k < 2 * cfg.n_layer; k++)
                    if (nn_tensor_read(pf, pcaches[k], kv, sizeof kv) != NN_OK ||
                        nn_tensor_write(gen, caches[k], kv, sizeof kv) != NN_OK)
                        return fail(ctx, "generate (cache copy)");
                p = T / 2;
                continue;
            }
            RUN_TOKEN(next);
        }
        out[GEN_CHARS] = 0;
        gen_tps = GEN_CHARS / (now() - tg);
        printf("---- %d characters after \"%s\" ----\n%s%s\n----\n", GEN_CHARS, prompt, prompt, out);
#undef RUN_TOKEN
    }

    /* ---- the same generation without the cache: the whole context run for every token ---- */
    memset(&gd, 0, sizeof gd);
    gd.share_params = g;
    gd.eval = 1;
    if (nn_graph_create(ctx, &gd, &full) != NN_OK) return fail(ctx, "nn_graph_create");
    widx = nn_input(full, "window", NN_I32, nn_shape2(1, T));
    wnext = nn_sample_logits(full, nn_gpt(full, widx, &cfg), &sd); /* a draw per position: int32 [T] */
    nn_graph_output(full, wnext);
    memset(&cd, 0, sizeof cd);
    if (nn_graph_compile(full, &cd) != NN_OK) return fail(ctx, "compile (no cache)");
    {
        int32_t w[T], drawn[T];
        int hist[T + GEN_CHARS + 8], nh = 0, c, len;
        double tg = now();
        hist[nh++] = tok_of('T');
        for (c = 0; c < GEN_CHARS; c++) {
            len = nh < T ? nh : T;
            memset(w, 0, sizeof w);
            for (k = 0; k < len; k++) w[k] = hist[nh - len + k];
            if (nn_tensor_write(full, widx, w, sizeof w) != NN_OK || nn_graph_forward(full) != NN_OK ||
                nn_tensor_read(full, wnext, drawn, sizeof drawn) != NN_OK)
                return fail(ctx, "generate (no cache)");
            hist[nh++] = (int)drawn[len - 1];
        }
        nocache_tps = GEN_CHARS / (now() - tg);
        printf("generation: %.0f tokens/s with the cache, %.0f tokens/s running the context for each token\n", gen_tps,
               nocache_tps);
    }

    printf("RESULT device=%s steps=%lld tokens_per_sec=%.0f heldout_loss=%.4f h2d_bytes_per_step=%.1f d2h_bytes_per_step=%.2f "
           "generate_tokens_per_sec=%.0f%s%s%s%s\n",
           devname, (long long)steps, (double)steps * B * T / train_time, heldout,
           (double)(st1.h2d_bytes - st0.h2d_bytes) / (double)steps, (double)(st1.d2h_bytes - st0.d2h_bytes) / (double)steps,
           gen_tps, strcmp(prec, "fp32") != 0 ? " precision=" : "", strcmp(prec, "fp32") != 0 ? prec : "",
           params[0] ? " params=" : "", params);
    rc = 0;
    nn_graph_destroy(full);
    nn_graph_destroy(pf);
    nn_graph_destroy(gen);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    free(txt);
    free(tab);
    free(raw);
    return rc;
}
