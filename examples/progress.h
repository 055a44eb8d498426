/* progress.h - a progress line and a metrics log for the examples (header only, C99 + POSIX).

   The progress line, on stderr, during a long loop:

       epoch 1/1  step 107/468  loss 0.6487  8997 samples/s  0:05 left

   On a terminal (isatty) it is redrawn in place with \r at most every 0.5 s and cleared by
   ex_progress_end, so the line printed next (an epoch's row) takes its place. When stderr is
   not a terminal (a log file, a pipe, CI), it is a plain line every PROGRESS_EVERY seconds
   (10 by default). PROGRESS=0 turns it off.

       ex_progress p;
       ex_progress_begin(&p, "epoch 1/1", steps, 128, "samples");
       for (step = 1; step <= steps; step++) {
           ... one training step ...
           if (ex_progress_due(&p, step)) ex_progress_show(&p, step, running_mean_loss());
       }
       ex_progress_end(&p);

   ex_progress_due is cheap (a clock read): call it every step, and read the loss from the
   device only when it says so (pass NAN to leave the loss out).

   The metrics log: with METRICS=path in the environment, ex_metrics_open writes a CSV file
   there, a header row of column names, then one row per ex_metrics_row call (an empty field
   for a NAN value). tools/plot_metrics turns it into an SVG curve:

       METRICS=mlp.csv ./examples/fashion_mnist_mlp
       ./tools/plot_metrics mlp.csv mlp.svg

   ex_progress_format and ex_metrics_format are pure (no clock, no I/O): tests/test_examples.c
   checks them. */
#ifndef EX_PROGRESS_H
#define EX_PROGRESS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h> /* isatty, fileno: POSIX (_POSIX_C_SOURCE 200809L before any include) */

/* The helpers are static: a program that uses some of them gets no unused-function warning
   for the others. */
#if defined(__GNUC__) || defined(__clang__)
#define EX_UNUSED __attribute__((unused))
#else
#define EX_UNUSED
#endif

typedef struct ex_progress {
    FILE *out;          /* stderr */
    int tty;            /* 1: redraw one line with \r; 0: a plain line every `every` seconds */
    int on;             /* 0: PROGRESS=0 */
    int drawn;          /* characters on the terminal's line now (0: none) */
    double every;       /* seconds between draws */
    double t0, last;    /* the start, the last draw (monotonic seconds) */
    int64_t total;      /* steps in this phase */
    double units;       /* samples or tokens per step */
    const char *unit;   /* "samples", "tokens" */
    char label[64];     /* "epoch 3/10" */
} ex_progress;

static EX_UNUSED double ex_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The line for step of total done after secs seconds, into buf (at most size bytes, always
   terminated); returns its length. loss NAN leaves the loss out; before the first step or
   second there is no rate and no time left. */
static EX_UNUSED int ex_progress_format(char *buf, size_t size, const char *label, int64_t step, int64_t total, double loss,
                              double secs, double units, const char *unit) {
    int n = 0, k;
    if (size == 0) return 0;
    buf[0] = '\0';
#define EX_PUT(...)                                                                                              \
    do {                                                                                                         \
        k = snprintf(buf + n, size - (size_t)n, __VA_ARGS__);                                                    \
        if (k < 0) return n;                                                                                     \
        n = (size_t)(n + k) >= size ? (int)size - 1 : n + k;                                                     \
    } while (0)
    if (label && label[0]) EX_PUT("%s  ", label);
    EX_PUT("step %lld/%lld", (long long)step, (long long)total);
    if (!isnan(loss)) EX_PUT("  loss %.4f", loss);
    if (step > 0 && secs > 0.0) {
        double rate = (double)step * units / secs, left = secs * (double)(total - step) / (double)step;
        long s = (long)(left + 0.5);
        EX_PUT("  %.0f %s/s", rate, unit ? unit : "samples");
        if (step < total) {
            if (s >= 3600) EX_PUT("  %ld:%02ld:%02ld left", s / 3600, s / 60 % 60, s % 60);
            else EX_PUT("  %ld:%02ld left", s / 60, s % 60);
        }
    }
#undef EX_PUT
    return n;
}

static EX_UNUSED void ex_progress_begin(ex_progress *p, const char *label, int64_t total, double units_per_step, const char *unit) {
    const char *on = getenv("PROGRESS"), *every = getenv("PROGRESS_EVERY");
    memset(p, 0, sizeof *p);
    p->out = stderr;
    p->tty = isatty(fileno(stderr));
    p->on = !(on && atoi(on) == 0);
    p->every = p->tty ? 0.5 : 10.0;
    if (every && atof(every) > 0.0) p->every = atof(every);
    p->total = total;
    p->units = units_per_step;
    p->unit = unit;
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    p->t0 = p->last = ex_now();
}

/* Whether ex_progress_show should run after this step: `every` seconds since the last draw
   (not at the last step: ex_progress_end and the caller's own line follow). */
static EX_UNUSED int ex_progress_due(const ex_progress *p, int64_t step) {
    return p->on && step < p->total && ex_now() - p->last >= p->every;
}

static EX_UNUSED void ex_progress_show(ex_progress *p, int64_t step, double loss) {
    char line[256];
    double t = ex_now();
    int n = ex_progress_format(line, sizeof line, p->label, step, p->total, loss, t - p->t0, p->units, p->unit);
    p->last = t;
    if (!p->on) return;
    if (p->tty) { /* redraw: blank what the last line left over */
        fprintf(p->out, "\r%s%*s", line, p->drawn > n ? p->drawn - n : 0, "");
        p->drawn = n;
    } else {
        fprintf(p->out, "%s\n", line);
    }
    fflush(p->out);
}

/* Clears the terminal's line (nothing when not a terminal). */
static EX_UNUSED void ex_progress_end(ex_progress *p) {
    if (p->on && p->tty && p->drawn > 0) {
        fprintf(p->out, "\r%*s\r", p->drawn, "");
        fflush(p->out);
    }
    p->drawn = 0;
}

/* ---- the metrics log ------------------------------------------------------------------- */

typedef struct ex_metrics {
    FILE *f;    /* NULL: no METRICS in the environment (every call does nothing) */
    int ncols;
} ex_metrics;

/* A CSV row of n values into buf: %.9g each, an empty field for NAN; returns its length
   (without the newline it ends with), or -1 when it does not fit. */
static EX_UNUSED int ex_metrics_format(char *buf, size_t size, int n, const double *v) {
    size_t len = 0;
    int i, k;
    for (i = 0; i < n; i++) {
        if (isnan(v[i])) k = snprintf(buf + len, size - len, "%s", i ? "," : "");
        else k = snprintf(buf + len, size - len, "%s%.9g", i ? "," : "", v[i]);
        if (k < 0 || len + (size_t)k >= size) return -1;
        len += (size_t)k;
    }
    if (len + 2 > size) return -1;
    buf[len] = '\n';
    buf[len + 1] = '\0';
    return (int)len;
}

/* Opens $METRICS (when set) and writes the header: the column names, comma-separated, the
   first being the x axis (step or epoch). Returns 0 only when METRICS is set and cannot be
   written (the message on stderr). */
static EX_UNUSED int ex_metrics_open(ex_metrics *m, const char *header) {
    const char *path = getenv("METRICS");
    const char *c;
    m->f = NULL;
    m->ncols = 1;
    for (c = header; *c; c++) m->ncols += *c == ',';
    if (!path || !path[0]) return 1;
    m->f = fopen(path, "w");
    if (!m->f) {
        fprintf(stderr, "metrics: cannot write %s\n", path);
        return 0;
    }
    fprintf(m->f, "%s\n", header);
    fflush(m->f);
    fprintf(stderr, "metrics: writing %s (tools/plot_metrics %s out.svg draws it)\n", path, path);
    return 1;
}

/* One row: v holds the header's number of values (NAN: an empty field); flushed at once so
   that the log can be plotted while the program runs. */
static EX_UNUSED void ex_metrics_row(ex_metrics *m, const double *v) {
    char line[32 * 24 + 2];
    if (!m->f) return;
    if (ex_metrics_format(line, sizeof line, m->ncols < 32 ? m->ncols : 32, v) >= 0) fputs(line, m->f);
    fflush(m->f);
}

static EX_UNUSED void ex_metrics_close(ex_metrics *m) {
    if (m->f) fclose(m->f);
    m->f = NULL;
}

#endif
