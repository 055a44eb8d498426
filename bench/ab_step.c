/* bench/ab_step.c - two builds of nn.h side by side in one process: the MLP's (or the CNN's)
   training step of bench/nn_bench.c, built from each, timed in alternating blocks of steps
   (which goes first alternates too), and the median of the per-round ratios. On a machine
   whose speed moves between states within seconds, two processes run one after the other can
   differ by more than a change does; one process that alternates every 0.1 s does not.

       make bench/ab_step AB_A=/path/to/old/nn.h [AB_B=nn.h]
       ./bench/ab_step DEVICE [mlp|cnn] [ROUNDS]       # DEVICE as NN_DEVICE: cpu, opencl, 0, ...

   prints  AB model=M device=D a_us=X b_us=Y a_over_b=R min=R0 max=R1 rounds=N
   (a_us, b_us: medians of the step's time; a_over_b above 1: build B is faster). The same
   build on both sides shows the harness's own spread (about 2% on the 2-core VM).
   AB_A_ENV / AB_B_ENV ("NAME=VALUE NAME=VALUE ..."): set while that side's graph is built
   (and unset after), so one build against itself compares settings read at compile time,
   e.g. AB_A_ENV=NN_CL_STAGES=0. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int a_build(const char *device, int cnn, int batch, const float *x, const int *y);
void a_step(const int *idx, int batch);
void a_finish(void);
int b_build(const char *device, int cnn, int batch, const float *x, const int *y);
void b_step(const int *idx, int batch);
void b_finish(void);

#define TRAIN_N 60000
#define MAX_ROUNDS 201

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint32_t seed = 7;

/* steps training steps of one build, on random batches; seconds a step */
static double run(void (*step)(const int *, int), void (*finish)(void), int batch, int steps) {
    int idx[128], s, i;
    double t0;
    finish();
    t0 = now();
    for (s = 0; s < steps; s++) {
        for (i = 0; i < batch; i++) {
            seed = seed * 1664525u + 1013904223u;
            idx[i] = (int)((seed >> 8) % TRAIN_N);
        }
        step(idx, batch);
    }
    finish();
    return (now() - t0) / steps;
}

/* the words NAME=VALUE of $var set (on) or unset (off); 0 (and a message) for a word that
   is not NAME=VALUE or is longer than 255 characters */
static int side_env(const char *var, int on) {
    const char *spec = getenv(var);
    char word[256];
    while (spec && *spec) {
        size_t n = strcspn(spec, " ");
        char *eq = NULL;
        if (n > 0 && n < sizeof word) {
            memcpy(word, spec, n);
            word[n] = 0;
            eq = strchr(word, '=');
        }
        if (n > 0 && (!eq || eq == word)) {
            fprintf(stderr, "ab_step: %s: '%.*s' is not NAME=VALUE (words of at most 255 characters, separated by spaces)\n",
                    var, (int)n, spec);
            return 0;
        }
        if (eq) {
            *eq = 0;
            if (on) setenv(word, eq + 1, 1);
            else unsetenv(word);
        }
        spec += n;
        spec += strspn(spec, " ");
    }
    return 1;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const char *device = argc > 1 ? argv[1] : "cpu";
    int cnn = argc > 2 && strcmp(argv[2], "cnn") == 0, rounds = argc > 3 ? atoi(argv[3]) : 31, k;
    int batch = cnn ? 64 : 128, steps = cnn ? 10 : 150;
    static double ta[MAX_ROUNDS], tb[MAX_ROUNDS], r[MAX_ROUNDS];
    float *x = (float *)malloc((size_t)TRAIN_N * 784 * sizeof(float));
    int *y = (int *)malloc((size_t)TRAIN_N * sizeof(int));
    uint32_t s = 3;
    size_t i;
    if (argc > 2 && !cnn && strcmp(argv[2], "mlp") != 0) {
        fprintf(stderr, "usage: %s DEVICE [mlp|cnn] [ROUNDS]\n", argv[0]);
        return 2;
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "ab_step: ROUNDS must be 1 to %d (got '%s')\n", MAX_ROUNDS, argv[3]);
        return 2;
    }
    if (!x || !y) {
        fprintf(stderr, "ab_step: out of memory\n");
        return 1;
    }
    for (i = 0; i < (size_t)TRAIN_N * 784; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    for (i = 0; i < TRAIN_N; i++) y[i] = (int)((uint32_t)i * 2654435761u % 10u);
    if (!side_env("AB_A_ENV", 0) || !side_env("AB_B_ENV", 0)) return 2;
    side_env("AB_A_ENV", 1);
    k = a_build(device, cnn, batch, x, y);
    side_env("AB_A_ENV", 0);
    side_env("AB_B_ENV", 1);
    k = k || b_build(device, cnn, batch, x, y);
    side_env("AB_B_ENV", 0);
    if (k) {
        fprintf(stderr, "ab_step: a build failed on %s\n", device);
        return 1;
    }
    run(a_step, a_finish, batch, steps / 3 + 1); /* warm-up */
    run(b_step, b_finish, batch, steps / 3 + 1);
    for (k = 0; k < rounds; k++) {
        if (k & 1) {
            tb[k] = run(b_step, b_finish, batch, steps);
            ta[k] = run(a_step, a_finish, batch, steps);
        } else {
            ta[k] = run(a_step, a_finish, batch, steps);
            tb[k] = run(b_step, b_finish, batch, steps);
        }
        r[k] = ta[k] / tb[k];
    }
    qsort(ta, (size_t)rounds, sizeof ta[0], cmp);
    qsort(tb, (size_t)rounds, sizeof tb[0], cmp);
    qsort(r, (size_t)rounds, sizeof r[0], cmp);
    printf("AB model=%s device=%s a_us=%.1f b_us=%.1f a_over_b=%.3f min=%.3f max=%.3f rounds=%d\n", cnn ? "cnn" : "mlp",
           device, ta[rounds / 2] * 1e6, tb[rounds / 2] * 1e6, r[rounds / 2], r[0], r[rounds - 1], rounds);
    free(x);
    free(y);
    return 0;
}
