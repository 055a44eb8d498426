/* char_lstm.c - a character-level LSTM language model trained on a text file, then sampling
   200 characters from it.

   Build and run (from the repository root, after `make nn.h`):
       cc -O2 -I. examples/char_lstm.c -o examples/char_lstm -lm -lpthread
       ./examples/char_lstm [TEXT]     (STEPS=n overrides the step count, default 300;
                                        SEED=n the initialisation and batch seed, default
                                        1; NN_DEVICE picks the backend; STATEFUL=1
                                        truncated BPTT: below)

   Text: TEXT, or the regular files of /usr/share/common-licenses concatenated in name order
   (the GPT example's corpus). Characters: newline and printable ASCII (vocabulary 96),
   anything else a space; the first 90% trains, the last 10% is held out. Model: an
   embedding of 32 (a parameter table, N(0, 1) as nn.Embedding's, gathered with
   nn_index_select), one nn_lstm layer of 128 (batch_first), a linear head to 96; context 64,
   batches of 32 windows, Adam lr 1e-3 (PyTorch's other defaults); bench/char_lstm_torch.py
   is the same run in PyTorch.

   The text is written to the device once, in rows of 64 characters. A batch is built
   there: each step writes only the windows' start offsets (the two rows a window of 65
   characters spans, and its offset in them: 3 int32 per window, 384 bytes a step) and
   reads nothing back but the loss every 50 steps. Sampling runs one character per
   nn_graph_forward of a batch-1, one-step graph sharing the parameters, its states fed
   back on the host (h and c: 1 KiB each way a character).

   STATEFUL=1 trains as truncated backpropagation through time: the training text is cut
   into B streams, batch row b reads stream b contiguously, 64 characters a step, and the
   LSTM is stateful (nn_rnn_desc.stateful): each step starts from the previous step's final
   states, carried on the device, the gradient cut between steps. The held-out batches start
   from zero states (nn_rnn_reset_state before each).

   The held-out loss is the mean over every 64-character window of the held-out text, one
   after another (whole batches only), the same windows as bench/char_lstm_torch.py's.

   After training the model is saved with its architecture (nn_model_save: tokens int32
   [B, 64] -> logits [B * 64, 96]) to char_lstm.safetensors (MODEL_OUT: another path), a
   file nn_model_load builds into a graph with no model code.

   The last line: RESULT device=<name> steps=<n> tokens_per_sec=<x> heldout_loss=<x>
   h2d_bytes_per_step=<x> d2h_bytes_per_step=<x>

   A progress line (steps, loss, tokens/s, time left) runs on stderr during training
   (PROGRESS=0: none); METRICS=path writes a CSV log (step, train_loss, heldout_loss,
   seconds) that tools/plot_metrics draws as an SVG (examples/progress.h). */
#define _POSIX_C_SOURCE 200809L
#define NN_IMPLEMENTATION
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define V 96
#define E 32
#define H 128
#define T 64
#define B 32
#define DEFAULT_STEPS 300
#define GEN_CHARS 200

#include "text_corpus.h"
#include "progress.h" /* the progress line (stderr), the METRICS log */

static int fail(nn_context *ctx, const char *what) {
    fprintf(stderr, "char_lstm: %s: %s\n", what, ctx ? nn_context_last_error(ctx) : "");
    return 1;
}

/* Samples a token from probabilities p (temperature: p^(1/temp), renormalised). */
static int sample(const float *p, float temp) {
    double w[V], sum = 0, u;
    int i;
    for (i = 0; i < V; i++) sum += (w[i] = pow((double)p[i], 1.0 / temp));
    u = (rnd() / 4294967296.0) * sum;
    for (i = 0; i < V - 1; i++) {
        if (u < w[i]) return i;
        u -= w[i];
    }
    return V - 1;
}

/* embedding -> LSTM -> linear: tokens [Bn, Tn] int32 -> logits [Bn * Tn, V]. */
static nn_tensor model(nn_graph *g, nn_tensor tokens, int64_t bn, int64_t tn, nn_tensor h0, nn_tensor c0,
                       nn_tensor *h_n, nn_tensor *c_n, int stateful) {
    nn_init emb_init = {NN_INIT_NORMAL, 0.0f, 1.0f};
    nn_rnn_desc rd;
    nn_tensor table = nn_param(g, "embedding.weight", nn_shape2(V, E), emb_init);
    nn_tensor x = nn_reshape(g, nn_index_select(g, table, 0, nn_reshape(g, tokens, nn_shape1(bn * tn))),
                             nn_shape3(bn, tn, E));
    nn_tensor y;
    memset(&rd, 0, sizeof rd);
    rd.batch_first = 1;
    rd.h0 = h0;
    rd.c0 = c0;
    rd.h_n = h_n;
    rd.c_n = c_n;
    rd.stateful = stateful;
    y = nn_lstm(g, x, H, &rd, "lstm");
    return nn_linear_layer(g, nn_reshape(g, y, nn_shape2(bn * tn, H)), V, NULL, "head");
}

int main(int argc, char **argv) {
    nn_context *ctx = NULL;
    nn_graph *g = NULL, *gen = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor text, rows, off, dx, dy, xt, yt, logits, loss, tok, h0, c0, hn, cn, probs;
    nn_stats st0, st1;
    nn_device_info dev;
    char *raw, devname[128], out[GEN_CHARS + 1];
    size_t n, i;
    int64_t ntrain, nrows, steps = DEFAULT_STEPS, step, s[B];
    int32_t *txt = NULL, *tab = NULL, brow[2 * B], boff[B];
    int k;
    double t0, train_time = 0, heldout = 0;
    ex_progress bar;
    ex_metrics log = {NULL, 0};
    float lossv = 0;
    uint64_t seed = 1;
    int stateful = getenv("STATEFUL") && atoi(getenv("STATEFUL")) != 0;

    if (getenv("STEPS")) steps = atoll(getenv("STEPS"));
    if (steps < 1) steps = 1;
    if (getenv("SEED")) seed = (uint64_t)atoll(getenv("SEED"));
    rng ^= (seed - 1) * 0xD1B54A32D192ED03ull; /* SEED=1: the default stream */
    if (rng == 0) rng = 1;
    raw = read_corpus(argc > 1 ? argv[1] : NULL, &n);
    if (!raw || n < 20 * (T + 1)) {
        fprintf(stderr, "char_lstm: cannot read the text (%s), or it is shorter than %d characters\n",
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

    /* ---- the training graph: batches gathered from the text on the device ---- */
    memset(&gd, 0, sizeof gd);
    gd.seed = seed;
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
    logits = model(g, nn_reshape(g, xt, nn_shape2(B, T)), B, T, NN_NONE, NN_NONE, NULL, NULL, stateful);
    loss = nn_cross_entropy_loss(g, logits, yt, NULL);
    nn_graph_output(g, loss);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-3f;
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
        if (stateful) { /* row b: stream b of the training text, the next 64 characters */
            int64_t seg = ntrain / B, k = ((step - 1) * T) % (seg - T - 1 > T ? (seg - T - 1) / T * T : T);
            for (b = 0; b < B; b++) s[b] = b * seg + k;
        } else {
            for (b = 0; b < B; b++) s[b] = (int64_t)(rnd() % (uint32_t)(ntrain - T - 1));
        }
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
       last 10% one after another (as many whole batches as it holds: 14 of 32 on the default
       text), so the figure depends on the model alone; bench/char_lstm_torch.py
       --heldout-after N takes the same windows ---- */
    {
        int64_t e, b, nbatch = (((int64_t)n - ntrain - 1) / T) / B;
        for (e = 0; e < nbatch; e++) {
            for (b = 0; b < B; b++) s[b] = ntrain + (e * B + b) * T;
            fill_batch(s, brow, boff);
            if ((stateful && nn_rnn_reset_state(g, "lstm") != NN_OK) || nn_tensor_write(g, rows, brow, sizeof brow) != NN_OK ||
                nn_tensor_write(g, off, boff, sizeof boff) != NN_OK || nn_graph_forward(g) != NN_OK || nn_tensor_read(g, loss, &lossv, 4) != NN_OK)
                return fail(ctx, "eval");
            heldout += lossv;
        }
        if (nbatch < 1) return fail(ctx, "the held-out text is shorter than one batch of windows");
        heldout /= (double)nbatch;
        {
            double row[4];
            row[0] = (double)steps, row[1] = NAN, row[2] = heldout, row[3] = train_time;
            ex_metrics_row(&log, row);
            ex_metrics_close(&log);
        }
        printf("held-out loss %.4f (%lld batches of %d x %d: the held-out text's windows in order)\n", heldout, (long long)nbatch, B, T);
    }

    { /* the model with its architecture (nn_model_save): tokens int32 [B, 64] -> logits
         [B * 64, 96], loadable with no model code (nn_model_load; MODEL_OUT: another path) */
        const char *mout = getenv("MODEL_OUT") ? getenv("MODEL_OUT") : "char_lstm.safetensors";
        nn_graph *mg = NULL;
        nn_tensor mt, ml;
        memset(&gd, 0, sizeof gd);
        gd.share_params = g;
        gd.eval = 1;
        if (nn_graph_create(ctx, &gd, &mg) != NN_OK) return fail(ctx, "nn_graph_create");
        mt = nn_input(mg, "tokens", NN_I32, nn_shape2(1, T));
        ml = model(mg, mt, 1, T, NN_NONE, NN_NONE, NULL, NULL, 0);
        if (nn_graph_output(mg, ml) != NN_OK || nn_graph_compile(mg, NULL) != NN_OK || nn_model_save(mg, mt, ml, mout) != NN_OK) {
            nn_graph_destroy(mg);
            return fail(ctx, "save the model");
        }
        nn_graph_destroy(mg);
        printf("saved %s (the model file: nn_model_load builds it with no code)\n", mout);
    }

    /* ---- sampling: one step at a time, the states carried on the host ---- */
    memset(&gd, 0, sizeof gd);
    gd.share_params = g;
    gd.eval = 1;
    if (nn_graph_create(ctx, &gd, &gen) != NN_OK) return fail(ctx, "nn_graph_create");
    tok = nn_input(gen, "token", NN_I32, nn_shape2(1, 1));
    h0 = nn_input(gen, "h0", NN_F32, nn_shape3(1, 1, H));
    c0 = nn_input(gen, "c0", NN_F32, nn_shape3(1, 1, H));
    probs = nn_softmax(gen, model(gen, tok, 1, 1, h0, c0, &hn, &cn, 0), -1);
    nn_graph_output(gen, probs);
    nn_graph_output(gen, hn);
    nn_graph_output(gen, cn);
    memset(&cd, 0, sizeof cd);
    if (nn_graph_compile(gen, &cd) != NN_OK) return fail(ctx, "compile (sampling)");
    {
        const char *prompt = "The ";
        static float hv[H], cv[H];
        float pr[V];
        int c, plen = (int)strlen(prompt);
        for (c = 0; c < H; c++) hv[c] = cv[c] = 0.0f;
        /* feed the prompt, then each sampled character; after the prompt's last, sample */
        for (c = 0; c < plen + GEN_CHARS - 1; c++) {
            int32_t tv = (int32_t)(c < plen ? tok_of((unsigned char)prompt[c]) : tok_of((unsigned char)out[c - plen]));
            if (nn_tensor_write(gen, tok, &tv, 4) != NN_OK || nn_tensor_write(gen, h0, hv, sizeof hv) != NN_OK ||
                nn_tensor_write(gen, c0, cv, sizeof cv) != NN_OK || nn_graph_forward(gen) != NN_OK ||
                nn_tensor_read(gen, probs, pr, sizeof pr) != NN_OK || nn_tensor_read(gen, hn, hv, sizeof hv) != NN_OK ||
                nn_tensor_read(gen, cn, cv, sizeof cv) != NN_OK)
                return fail(ctx, "sample");
            if (c >= plen - 1) out[c - plen + 1] = (char)chr_of(sample(pr, 0.8f));
        }
        out[GEN_CHARS] = 0;
        printf("---- %d characters after \"%s\" ----\n%s%s\n----\n", GEN_CHARS, prompt, prompt, out);
    }

    printf("RESULT device=%s steps=%lld tokens_per_sec=%.0f heldout_loss=%.4f h2d_bytes_per_step=%.1f "
           "d2h_bytes_per_step=%.2f\n",
           devname, (long long)steps, (double)steps * B * T / train_time, heldout,
           (double)(st1.h2d_bytes - st0.h2d_bytes) / (double)steps, (double)(st1.d2h_bytes - st0.d2h_bytes) / (double)steps);
    nn_graph_destroy(gen);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    free(txt);
    free(tab);
    free(raw);
    return 0;
}
