/* What the libFuzzer targets (tests/fuzz_*.c, under -DNN_FUZZ) share, included after nn.h:
   the context they parse with, the check that traps, and the seed corpus's files. */
#ifndef NN_TESTS_FUZZ_H
#define NN_TESTS_FUZZ_H

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static NN__MAYBE_UNUSED nn_context *fz_ctx;

static NN__MAYBE_UNUSED void fz_check(int cond) {
    if (!cond) __builtin_trap();
}

/* n bytes b as the seed file dir/name; 1 when written */
static NN__MAYBE_UNUSED int fz_write(const char *dir, const char *name, const void *b, size_t n) {
    char path[1024];
    FILE *f;
    int ok;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f) return 0;
    ok = fwrite(b, 1, n, f) == n;
    return (fclose(f) == 0) && ok;
}

/* fz_ctx: a CPU context, one thread, errors only; 0 when it cannot be made */
static NN__MAYBE_UNUSED int fz_context(void) {
    nn_context_desc d;
    memset(&d, 0, sizeof d);
    d.device = "cpu";
    d.threads = 1;
    d.log_level = NN_LOG_ERROR;
    return nn_context_create(&d, &fz_ctx) == NN_OK;
}

/* With NN_FUZZ_WRITE_SEEDS=DIR: the seed corpus written into DIR by write_seeds (1: all
   written), said on stderr as target's, then exit; otherwise nothing. */
static NN__MAYBE_UNUSED void fz_seeds(const char *target, int (*write_seeds)(const char *dir)) {
    const char *seeds = getenv("NN_FUZZ_WRITE_SEEDS");
    int ok;
    if (!seeds) return;
    ok = write_seeds(seeds);
    fprintf(stderr, "%s: %s seeds in %s%s%s\n", target, ok ? "wrote" : "FAILED to write", seeds,
            ok || !fz_ctx ? "" : ": ", ok || !fz_ctx ? "" : nn_context_last_error(fz_ctx));
    exit(ok ? 0 : 1);
}

/* The usual LLVMFuzzerInitialize: fz_ctx (when with_ctx), then fz_seeds; 1 on failure */
static NN__MAYBE_UNUSED int fz_init(int with_ctx, const char *target, int (*write_seeds)(const char *dir)) {
    if (with_ctx && !fz_context()) return 1;
    fz_seeds(target, write_seeds);
    return 0;
}

#endif
