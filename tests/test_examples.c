/* The examples' helpers: the progress line and the metrics log (examples/progress.h), and
   tools/plot_metrics.c (included with its main renamed) run on a small log, its SVG checked
   for well-formed XML by a checker written here. No device is involved: the cases run on the
   CPU pass only. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "../examples/progress.h"

#define main plot_metrics_main
#include "../tools/plot_metrics.c"
#undef main

#define NO_DEVICE "the examples' helpers use no device"

static void test_progress_format(const t_env *e) {
    char b[256], small[16];
    int n;
    if (!t_begin_cpu(e, "examples: progress line text (rate, time left, no loss, hours, truncation)", NO_DEVICE)) return;
    /* 120 of 468 steps in 2 s at 128 samples a step: 7680 samples/s, 348 steps left = 5.8 s */
    n = ex_progress_format(b, sizeof b, "epoch 3/10", 120, 468, 0.412345, 2.0, 128, "samples");
    T_CHECK(!strcmp(b, "epoch 3/10  step 120/468  loss 0.4123  7680 samples/s  0:06 left") && n == (int)strlen(b),
            "got \"%s\" (%d)", b, n);
    ex_progress_format(b, sizeof b, NULL, 0, 300, NAN, 0.0, 4096, "tokens");
    T_CHECK(!strcmp(b, "step 0/300"), "step 0 gave \"%s\"", b);
    ex_progress_format(b, sizeof b, "", 1, 10000, NAN, 1.5, 4096, "tokens");
    T_CHECK(!strcmp(b, "step 1/10000  2731 tokens/s  4:09:59 left"), "hours gave \"%s\"", b);
    ex_progress_format(b, sizeof b, "epoch 1/1", 468, 468, 0.25, 10.0, 128, "samples");
    T_CHECK(!strcmp(b, "epoch 1/1  step 468/468  loss 0.2500  5990 samples/s"), "the last step gave \"%s\"", b);
    n = ex_progress_format(small, sizeof small, "epoch 3/10", 120, 468, 0.4, 2.0, 128, "samples");
    T_CHECK(n == 15 && !strcmp(small, "epoch 3/10  ste"), "truncated to \"%s\" (%d)", small, n);
    t_end();
}

/* What ex_progress_show and ex_progress_end wrote into a temporary file. */
static size_t progress_output(int tty, char *buf, size_t size) {
    ex_progress p;
    size_t n;
    FILE *f = tmpfile();
    if (!f) return 0;
    ex_progress_begin(&p, "epoch 1/2", 100, 10, "samples");
    p.out = f;
    p.tty = tty;
    p.on = 1;
    ex_progress_show(&p, 10, 1.5);
    ex_progress_show(&p, 20, NAN); /* shorter: the terminal's line is blanked to its end */
    ex_progress_end(&p);
    rewind(f);
    n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

static void test_progress_terminal(const t_env *e) {
    char tty[1024], plain[1024], *a, *b;
    size_t nt, np, i;
    int crs = 0, nls = 0;
    if (!t_begin_cpu(e, "examples: progress redrawn with \\r on a terminal, plain lines otherwise", NO_DEVICE)) return;
    nt = progress_output(1, tty, sizeof tty);
    np = progress_output(0, plain, sizeof plain);
    for (i = 0; i < nt; i++) crs += tty[i] == '\r', nls += tty[i] == '\n';
    /* two draws and the clearing: \r line, \r shorter line + blanks, \r blanks \r */
    T_CHECK(crs == 4 && nls == 0 && tty[0] == '\r' && tty[nt - 1] == '\r', "terminal output \"%s\"", tty);
    a = strstr(tty, "epoch 1/2  step 10/100  loss 1.5000");
    b = strstr(tty, "\repoch 1/2  step 20/100  ");
    T_CHECK(a && b && b > a && !strstr(b, "loss"), "terminal lines in \"%s\"", tty);
    /* the second draw is 13 characters shorter ("  loss 1.5000"): padded to the first's length */
    T_CHECK(a == tty + 1 && b && strcspn(b + 1, "\r") == strcspn(tty + 1, "\r"),
            "the second draw is not padded to the first's length: \"%s\"", tty);
    for (i = 0, crs = 0, nls = 0; i < np; i++) crs += plain[i] == '\r', nls += plain[i] == '\n';
    T_CHECK(crs == 0 && nls == 2 && !strncmp(plain, "epoch 1/2  step 10/100  loss 1.5000", 35) &&
                strstr(plain, "\nepoch 1/2  step 20/100  ") && plain[np - 1] == '\n',
            "plain output \"%s\"", plain);
    t_end();
}

static void test_metrics_log(const t_env *e) {
    char path[64], buf[512];
    double row1[4] = {1, 0.5, 0.75, NAN}, row2[4] = {2, 0.25, NAN, 0.875}, wide[2] = {1e300, -1e300};
    ex_metrics m;
    FILE *f;
    size_t n;
    int fd;
    if (!t_begin_cpu(e, "examples: metrics log (CSV header, rows, empty fields; off without METRICS)", NO_DEVICE)) return;
    T_CHECK(ex_metrics_format(buf, sizeof buf, 4, row1) == 11 && !strcmp(buf, "1,0.5,0.75,\n"), "row 1 \"%s\"", buf);
    T_CHECK(ex_metrics_format(buf, 8, 2, wide) == -1, "a row that does not fit was written");
    snprintf(path, sizeof path, "/tmp/nn_test_metrics_XXXXXX");
    fd = mkstemp(path);
    T_CHECK(fd >= 0, "mkstemp");
    if (fd >= 0) close(fd);
    unsetenv("METRICS");
    T_CHECK(ex_metrics_open(&m, "epoch,train_loss,train_acc,test_acc") == 1 && m.f == NULL && m.ncols == 4,
            "without METRICS: %p, %d columns", (void *)m.f, m.ncols);
    ex_metrics_row(&m, row1); /* does nothing */
    setenv("METRICS", path, 1);
    T_CHECK(ex_metrics_open(&m, "epoch,train_loss,train_acc,test_acc") == 1 && m.f != NULL, "METRICS=%s", path);
    ex_metrics_row(&m, row1);
    ex_metrics_row(&m, row2);
    ex_metrics_close(&m);
    unsetenv("METRICS");
    f = fopen(path, "r");
    n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
    T_CHECK(!strcmp(buf, "epoch,train_loss,train_acc,test_acc\n1,0.5,0.75,\n2,0.25,,0.875\n"), "the log: \"%s\"", buf);
    remove(path);
    t_end();
}

/* ---- a well-formedness checker for the SVG: elements nest and close, attributes are
   name="value", text has only the five entities. Counts the elements named `count`. */
static int xml_well_formed(const char *s, const char *count, int *counted, char *why, size_t wsize) {
    char stack[32][32];
    int depth = 0, root_done = 0;
    *counted = 0;
    if (!strncmp(s, "<?xml", 5)) {
        s = strstr(s, "?>");
        if (!s) return snprintf(why, wsize, "the declaration is not closed"), 0;
        s += 2;
    }
    while (*s) {
        if (*s == '<') {
            char name[32];
            int n = 0, close = s[1] == '/';
            s += 1 + close;
            while (isalnum((unsigned char)*s) || *s == '-' || *s == ':') {
                if (n < 31) name[n++] = *s;
                s++;
            }
            name[n] = '\0';
            if (!n) return snprintf(why, wsize, "a tag without a name"), 0;
            if (close) {
                if (!depth || strcmp(stack[depth - 1], name)) return snprintf(why, wsize, "</%s> closes nothing open", name), 0;
                if (*s++ != '>') return snprintf(why, wsize, "</%s not ended by >", name), 0;
                if (--depth == 0) root_done = 1;
                continue;
            }
            if (root_done) return snprintf(why, wsize, "<%s> after the root element", name), 0;
            if (!strcmp(name, count)) (*counted)++;
            for (;;) { /* attributes */
                while (isspace((unsigned char)*s)) s++;
                if (*s == '>' || (s[0] == '/' && s[1] == '>')) break;
                if (!isalpha((unsigned char)*s)) return snprintf(why, wsize, "<%s>: a bad attribute", name), 0;
                while (isalnum((unsigned char)*s) || *s == '-' || *s == ':') s++;
                if (s[0] != '=' || s[1] != '"') return snprintf(why, wsize, "<%s>: an attribute without =\"", name), 0;
                s += 2;
                while (*s && *s != '"' && *s != '<') s++;
                if (*s++ != '"') return snprintf(why, wsize, "<%s>: an unterminated value", name), 0;
            }
            if (*s == '/') s += 2;
            else {
                if (depth == 32) return snprintf(why, wsize, "nested too deep"), 0;
                snprintf(stack[depth++], sizeof stack[0], "%s", name);
                s++;
            }
        } else if (*s == '&') {
            const char *ent[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"};
            int i, ok = 0;
            for (i = 0; i < 5; i++)
                if (!strncmp(s, ent[i], strlen(ent[i]))) ok = (int)strlen(ent[i]);
            if (!ok) return snprintf(why, wsize, "a bare &"), 0;
            s += ok;
        } else {
            if (!depth && !isspace((unsigned char)*s)) return snprintf(why, wsize, "text outside the root"), 0;
            s++;
        }
    }
    if (depth || !root_done) return snprintf(why, wsize, "%d elements left open", depth), 0;
    return 1;
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    long n;
    char *s;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    s = (char *)malloc((size_t)n + 1);
    if (s) s[fread(s, 1, (size_t)n, f)] = '\0';
    fclose(f);
    return s;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_plot_metrics(const t_env *e) {
    char csv[] = "/tmp/nn_test_plot_XXXXXX", svg[64], why[128];
    char *argv[4], *out;
    int fd, count = 0, rc;
    int saved;
    if (!t_begin_cpu(e, "examples: tools/plot_metrics draws a small log as well-formed SVG, refuses bad logs", NO_DEVICE))
        return;
    fd = mkstemp(csv);
    if (!T_CHECK(fd >= 0, "mkstemp")) {
        t_end();
        return;
    }
    close(fd);
    snprintf(svg, sizeof svg, "%s.svg", csv);
    /* steps with a loss each, epochs' rows with accuracies, a name that needs escaping */
    write_text(csv, "step,train_loss,train_acc,test_acc,a<b&c,seconds\n"
                    "0,2.3,,,,0\n100,0.9,,,1,1\n200,0.6,0.78,0.8,,2\n300,0.5,,,2,3\n400,0.45,0.85,0.84,,4\n");
    argv[0] = (char *)"plot_metrics";
    argv[1] = csv;
    argv[2] = svg;
    argv[3] = (char *)"loss & accuracy <test>";
    rc = plot_metrics_main(4, argv);
    out = read_all(svg);
    T_CHECK(rc == 0 && out, "plot_metrics returned %d", rc);
    if (out) {
        T_CHECK(xml_well_formed(out, "polyline", &count, why, sizeof why), "not well-formed: %s", why);
        T_CHECK(count == 4, "%d curves, 4 expected (the clock column not drawn)", count);
        T_CHECK(strstr(out, "loss &amp; accuracy &lt;test&gt;") && strstr(out, "a&lt;b&amp;c") &&
                    strstr(out, "test_acc (right)"),
                "title, escaped names or the right axis missing");
        free(out);
    }
    remove(svg);
    /* malformed logs: an error, no file (stderr quiet meanwhile) */
    fflush(stderr);
    saved = dup(2);
    fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) dup2(fd, 2), close(fd);
    {
        static const char *bad[] = {"", "step\n1\n", "step,loss\n", "step,loss\n1,2,3\n", "step,loss\n1,abc\n",
                                    "step,loss\n,1\n", "step,loss\n1,inf\n", "step,loss\n1,\n2,\n", "step,seconds\n1,2\n"};
        size_t i;
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            write_text(csv, bad[i]);
            rc = plot_metrics_main(3, argv);
            out = read_all(svg);
            T_CHECK(rc == 1 && !out, "bad log %u (\"%s\"): rc %d, %s", (unsigned)i, bad[i], rc, out ? "an SVG written" : "");
            free(out);
            remove(svg);
        }
    }
    fflush(stderr);
    if (saved >= 0) dup2(saved, 2), close(saved);
    remove(csv);
    t_end();
}

void suite_examples(const t_env *e) {
    T_RUN(e, test_progress_format, test_progress_terminal, test_metrics_log, test_plot_metrics);
}
