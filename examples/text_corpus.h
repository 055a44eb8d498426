/* text_corpus.h - what the character-level examples (tiny_gpt.c, char_lstm.c) share: the
   corpus (a file, or the regular files of /usr/share/common-licenses in name order), the
   96-token character vocabulary (newline and printable ASCII; anything else a space), a
   small xorshift generator for batches and sampling, a clock, and the batch's device
   inputs. Include it after nn.h and after defining B (windows a batch) and T (context). */
#ifndef TEXT_CORPUS_H
#define TEXT_CORPUS_H
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

static int tok_of(int c) { return c == '\n' ? 0 : (c >= 32 && c < 127) ? c - 31 : 1; }
static int chr_of(int t) { return t == 0 ? '\n' : t + 31; }

static int append_file(const char *path, char **buf, size_t *len, size_t *cap) {
    FILE *f = fopen(path, "rb");
    size_t n;
    if (!f) return 0;
    for (;;) {
        if (*cap - *len < 65536) {
            char *nb = (char *)realloc(*buf, *cap * 2 + 65536);
            if (!nb) {
                fclose(f);
                return 0;
            }
            *buf = nb;
            *cap = *cap * 2 + 65536;
        }
        n = fread(*buf + *len, 1, *cap - *len, f);
        *len += n;
        if (n == 0) break;
    }
    fclose(f);
    return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The corpus: one file, or the regular files of dir in name order. */
static char *read_corpus(const char *path, size_t *len) {
    char *buf = NULL;
    size_t cap = 0;
    *len = 0;
    if (path) {
        if (!append_file(path, &buf, len, &cap)) {
            free(buf);
            return NULL;
        }
        return buf;
    } else {
        const char *dir = "/usr/share/common-licenses";
        DIR *d = opendir(dir);
        struct dirent *e;
        char **names = NULL;
        int n = 0, i;
        if (!d) return NULL;
        while ((e = readdir(d)) != NULL) {
            char **nn;
            if (e->d_name[0] == '.') continue;
            nn = (char **)realloc(names, sizeof *names * (size_t)(n + 1));
            if (!nn) break;
            names = nn;
            names[n++] = strdup(e->d_name);
        }
        closedir(d);
        qsort(names, (size_t)n, sizeof *names, cmp_str);
        for (i = 0; i < n; i++) {
            char p[1024];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", dir, names[i]);
            if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) append_file(p, &buf, len, &cap);
            free(names[i]);
        }
        free(names);
        return buf;
    }
}

/* The batch's device inputs: rows (q, q+1) of the text's 64-wide view for each window, and
   b*64 + r (its offset r in them), for windows starting at s[b]. */
static void fill_batch(const int64_t *s, int32_t *rows, int32_t *off) {
    int b;
    for (b = 0; b < B; b++) {
        rows[2 * b] = (int32_t)(s[b] / T);
        rows[2 * b + 1] = (int32_t)(s[b] / T + 1);
        off[b] = (int32_t)(b * T + s[b] % T);
    }
}

#endif
