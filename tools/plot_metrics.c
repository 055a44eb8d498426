/* plot_metrics.c - a metrics log (CSV) to an SVG line chart. C99, no libraries.

   Build:  cc -O2 -std=c99 tools/plot_metrics.c -o tools/plot_metrics -lm   (make plot-metrics)
   Run:    ./tools/plot_metrics IN.csv OUT.svg [TITLE]

   IN is what the examples write with METRICS=path (examples/progress.h): a header row of
   column names, then rows of numbers, an empty field where a row has no value. The first
   column is the x axis (step or epoch); every other column with a value is a curve. Columns
   whose name contains "acc" (accuracy) share the right axis, the others (losses) the left
   one. A column named seconds or time (or ending in _seconds) is the clock, not drawn. A
   curve joins its points in row order, passing over rows where it has no value.
   A malformed file (no header, a ragged row, a field that is not a number, no rows) is an
   error naming IN:line, and nothing is written. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 16
#define MAX_LINE 4096
#define W 800.0
#define H 450.0
#define LEFT 70.0
#define RIGHT 70.0
#define TOP 60.0
#define BOTTOM 50.0

static const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

typedef struct {
    char name[MAX_COLS][64];
    int ncols;
    double *v; /* rows * ncols, NAN where empty */
    long rows, cap;
} table;

static int fail(const char *path, long line, const char *what) {
    fprintf(stderr, "plot_metrics: %s:%ld: %s\n", path, line, what);
    return 0;
}

/* Splits line (its newline removed) at commas into at most MAX_COLS fields; returns the count
   or -1 when there are more. */
static int split(char *line, char **f) {
    int n = 0;
    char *c = line;
    for (;;) {
        if (n == MAX_COLS) return -1;
        f[n++] = c;
        c = strchr(c, ',');
        if (!c) return n;
        *c++ = '\0';
    }
}

static char *trim(char *s) {
    char *e;
    while (isspace((unsigned char)*s)) s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

static int read_table(const char *path, table *t) {
    char line[MAX_LINE + 2], msg[256], *f[MAX_COLS];
    long lineno = 0;
    int i, n;
    FILE *in;
    memset(t, 0, sizeof *t); /* t->v is the caller's to free, whatever the outcome */
    in = fopen(path, "r");
    if (!in) return fail(path, 0, "cannot open");
    while (fgets(line, sizeof line, in)) {
        size_t len = strlen(line);
        lineno++;
        if (len > MAX_LINE) { fclose(in); return fail(path, lineno, "line too long"); }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (!len) continue;
        n = split(line, f);
        if (n < 0) { fclose(in); return fail(path, lineno, "more than 16 columns"); }
        if (!t->ncols) { /* the header */
            if (n < 2) { fclose(in); return fail(path, lineno, "the header names fewer than 2 columns"); }
            for (i = 0; i < n; i++) {
                char *s = trim(f[i]);
                if (!s[0]) { fclose(in); return fail(path, lineno, "an empty column name in the header"); }
                snprintf(t->name[i], sizeof t->name[i], "%s", s);
            }
            t->ncols = n;
            continue;
        }
        if (n != t->ncols) {
            snprintf(msg, sizeof msg, "%d fields, the header has %d", n, t->ncols);
            fclose(in);
            return fail(path, lineno, msg);
        }
        if (t->rows == t->cap) {
            long cap = t->cap ? 2 * t->cap : 256;
            double *v = (double *)realloc(t->v, (size_t)cap * (size_t)t->ncols * sizeof(double));
            if (!v) { fclose(in); return fail(path, lineno, "out of memory"); }
            t->v = v;
            t->cap = cap;
        }
        for (i = 0; i < n; i++) {
            char *s = trim(f[i]), *end;
            double x = NAN;
            if (s[0]) {
                x = strtod(s, &end);
                if (*end || !isfinite(x)) {
                    snprintf(msg, sizeof msg, "column %s: \"%.40s\" is not a finite number", t->name[i], s);
                    fclose(in);
                    return fail(path, lineno, msg);
                }
            } else if (i == 0) {
                fclose(in);
                return fail(path, lineno, "no x value (the first column)");
            }
            t->v[t->rows * t->ncols + i] = x;
        }
        t->rows++;
    }
    fclose(in);
    if (!t->ncols) return fail(path, lineno, "no header row");
    if (!t->rows) return fail(path, lineno, "no data rows");
    return 1;
}

/* A tick step of 1, 2 or 5 times a power of ten giving about 5 ticks over [lo, hi]. */
static double tick_step(double lo, double hi) {
    double raw = (hi - lo) / 5.0, p = pow(10.0, floor(log10(raw))), m = raw / p;
    return p * (m < 1.5 ? 1.0 : m < 3.5 ? 2.0 : m < 7.5 ? 5.0 : 10.0);
}

/* [lo, hi] widened to whole ticks (and made non-empty). */
static void nice_range(double *lo, double *hi, double *step) {
    if (!(*hi > *lo)) {
        double d = fabs(*lo) > 0 ? fabs(*lo) * 0.1 : 1.0;
        *lo -= d;
        *hi += d;
    }
    *step = tick_step(*lo, *hi);
    *lo = floor(*lo / *step + 1e-9) * *step;
    *hi = ceil(*hi / *step - 1e-9) * *step;
}

static void xml_text(FILE *o, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", o);
        else if (*s == '>') fputs("&gt;", o);
        else if (*s == '&') fputs("&amp;", o);
        else if (*s == '"') fputs("&quot;", o);
        else if ((unsigned char)*s >= 32) fputc(*s, o);
    }
}

static void label_num(char *buf, size_t n, double v, double step) {
    int d = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (fabs(v) < step * 1e-6) v = 0.0;
    snprintf(buf, n, "%.*f", d > 6 ? 6 : d, v);
}

int main(int argc, char **argv) {
    table t;
    double xlo = INFINITY, xhi = -INFINITY, lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    double xs, ys[2], pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM, v, lx = LEFT;
    int axis[MAX_COLS], skip[MAX_COLS], used[2] = {0, 0}, i, c, k, color = 0;
    long r;
    char buf[64], tmp[4096];
    FILE *o;

    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s IN.csv OUT.svg [TITLE]\n", argv[0]);
        return 2;
    }
    if (!read_table(argv[1], &t)) {
        free(t.v);
        return 1;
    }
    for (r = 0; r < t.rows; r++) {
        v = t.v[r * t.ncols];
        if (v < xlo) xlo = v;
        if (v > xhi) xhi = v;
    }
    for (c = 1; c < t.ncols; c++) {
        size_t len = strlen(t.name[c]);
        axis[c] = strstr(t.name[c], "acc") != NULL;
        skip[c] = !strcmp(t.name[c], "seconds") || !strcmp(t.name[c], "time") ||
                  (len >= 8 && !strcmp(t.name[c] + len - 8, "_seconds"));
        if (skip[c]) continue;
        for (r = 0; r < t.rows; r++) {
            v = t.v[r * t.ncols + c];
            if (isnan(v)) continue;
            used[axis[c]] = 1;
            if (v < lo[axis[c]]) lo[axis[c]] = v;
            if (v > hi[axis[c]]) hi[axis[c]] = v;
        }
    }
    if (!used[0] && !used[1]) {
        fprintf(stderr, "plot_metrics: %s: no column to draw has a value\n", argv[1]);
        free(t.v);
        return 1;
    }
    nice_range(&xlo, &xhi, &xs);
    for (k = 0; k < 2; k++)
        if (used[k]) nice_range(&lo[k], &hi[k], &ys[k]);

    snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
    o = fopen(tmp, "w");
    if (!o) {
        fprintf(stderr, "plot_metrics: cannot write %s\n", tmp);
        free(t.v);
        return 1;
    }
#define PX(x) (LEFT + ((x) - xlo) / (xhi - xlo) * pw)
#define PY(y, k) (TOP + ph - ((y) - lo[k]) / (hi[k] - lo[k]) * ph)
    fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    fprintf(o, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(o, "<text x=\"%.1f\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">", W / 2);
    xml_text(o, argc > 3 ? argv[3] : argv[1]);
    fprintf(o, "</text>\n");
    /* grid and ticks: x, then each used axis */
    fprintf(o, "<g stroke=\"#ddd\" stroke-width=\"1\">\n");
    for (v = xlo; v <= xhi + xs * 1e-6; v += xs)
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", PX(v), TOP, PX(v), TOP + ph);
    k = used[0] ? 0 : 1;
    for (v = lo[k]; v <= hi[k] + ys[k] * 1e-6; v += ys[k])
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LEFT, PY(v, k), LEFT + pw, PY(v, k));
    fprintf(o, "</g>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n",
            LEFT, TOP, pw, ph);
    for (v = xlo; v <= xhi + xs * 1e-6; v += xs) {
        label_num(buf, sizeof buf, v, xs);
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", PX(v), TOP + ph + 16, buf);
    }
    fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", LEFT + pw / 2, H - 12);
    xml_text(o, t.name[0]);
    fprintf(o, "</text>\n");
    for (k = 0; k < 2; k++) {
        double x = k ? LEFT + pw + 6 : LEFT - 6;
        if (!used[k]) continue;
        for (v = lo[k]; v <= hi[k] + ys[k] * 1e-6; v += ys[k]) {
            label_num(buf, sizeof buf, v, ys[k]);
            fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>\n", x, PY(v, k) + 4,
                    k ? "start" : "end", buf);
        }
        fprintf(o, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\">%s</text>\n",
                k ? W - 14 : 16.0, TOP + ph / 2, k ? "accuracy" : "loss");
    }
    /* the curves, then the legend */
    for (c = 1; c < t.ncols; c++) {
        const char *col = colors[color % (int)(sizeof colors / sizeof colors[0])];
        long npts = 0;
        if (skip[c]) continue;
        for (r = 0; r < t.rows; r++) npts += !isnan(t.v[r * t.ncols + c]);
        if (!npts) continue;
        color++;
        fprintf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s points=\"", col,
                axis[c] ? " stroke-dasharray=\"6,3\"" : "");
        for (r = 0, i = 0; r < t.rows; r++) {
            v = t.v[r * t.ncols + c];
            if (isnan(v)) continue;
            fprintf(o, "%s%.1f,%.1f", i++ ? " " : "", PX(t.v[r * t.ncols]), PY(v, axis[c]));
        }
        fprintf(o, "\"/>\n");
        if (npts <= 60)
            for (r = 0; r < t.rows; r++) {
                v = t.v[r * t.ncols + c];
                if (!isnan(v))
                    fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", PX(t.v[r * t.ncols]),
                            PY(v, axis[c]), col);
            }
        /* the legend: a row above the plot, a short line and the name per curve */
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                lx, TOP - 18, lx + 25, TOP - 18, col, axis[c] ? " stroke-dasharray=\"6,3\"" : "");
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\">", lx + 30, TOP - 14);
        xml_text(o, t.name[c]);
        fprintf(o, axis[c] ? " (right)</text>\n" : "</text>\n");
        lx += 30 + 7.0 * (double)(strlen(t.name[c]) + (axis[c] ? 8 : 0)) + 20;
    }
    fprintf(o, "</svg>\n");
#undef PX
#undef PY
    free(t.v);
    if (ferror(o) | fclose(o) || rename(tmp, argv[2]) != 0) {
        fprintf(stderr, "plot_metrics: cannot write %s\n", argv[2]);
        remove(tmp);
        return 1;
    }
    return 0;
}
