/* File readers (untrusted input) and the compiled-program cache. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_bytes(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = fwrite(b, 1, n, f) == n;
    return (fclose(f) == 0) && ok;
}

static void test_idx(const t_env *e) {
    /* a 2x3 ubyte IDX, then broken variants of it */
    unsigned char good[] = {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 255};
    unsigned char huge[] = {0, 0, 0x08, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1};
    unsigned char gz[] = {0x1f, 0x8b, 8, 0, 0, 0};
    unsigned char badtype[] = {0, 0, 0x07, 1, 0, 0, 0, 1, 0};
    char path[] = "/tmp/nn-test-idx-XXXXXX";
    nn_context *ctx = e->ctx;
    nn_array a;
    int fd;
    if (!t_begin(e, "files: idx loader validates its input")) return;
    fd = mkstemp(path);
    if (!T_CHECK(fd >= 0, "mkstemp failed")) goto done;
    {
        FILE *f = fdopen(fd, "wb");
        if (f) fclose(f);
    }
    if (T_CHECK(write_bytes(path, good, sizeof good), "write failed") && T_OK(nn_load_idx(ctx, path, NN_F32, &a), ctx)) {
        T_CHECK(a.shape.ndim == 2 && a.shape.dim[0] == 2 && a.shape.dim[1] == 3, "shape");
        T_CHECK(((float *)a.data)[5] == 255.0f && ((float *)a.data)[0] == 1.0f, "values");
        nn_array_free(&a);
    }
    if (T_OK(nn_load_idx(ctx, path, NN_I32, &a), ctx)) {
        T_CHECK(((int32_t *)a.data)[3] == 4, "int values");
        nn_array_free(&a);
    }
    write_bytes(path, good, sizeof good - 1); /* one byte short */
    T_CHECK(nn_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO && a.data == NULL, "truncated file accepted");
    T_CHECK(strstr(nn_last_error(ctx), "truncated") && strstr(nn_last_error(ctx), path), "message: %s", nn_last_error(ctx));
    write_bytes(path, huge, sizeof huge);
    T_CHECK(nn_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO, "2^64 elements accepted");
    write_bytes(path, gz, sizeof gz);
    T_CHECK(nn_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO && strstr(nn_last_error(ctx), "gzip"), "gzip: %s",
            nn_last_error(ctx));
    write_bytes(path, badtype, sizeof badtype);
    T_CHECK(nn_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO, "type 0x07 accepted");
    write_bytes(path, good, 3);
    T_CHECK(nn_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO, "3-byte file accepted");
    remove(path);
    T_CHECK(nn_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO && strstr(nn_last_error(ctx), path), "missing file: %s",
            nn_last_error(ctx));
done:
    t_end();
}

/* Programs are cached on disk; a second context loads them; a corrupt entry is rebuilt. */
static void test_program_cache(const t_env *e) {
    char dir[] = "/tmp/nn-test-cache-XXXXXX", cmd[300];
    int round;
    if (!t_begin(e, "opencl: program cache (fill, reuse, corrupt)")) return;
    if (!e->opencl) {
        t_skip("no programs on the CPU backend");
        t_end();
        return;
    }
    if (!T_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed")) goto done;
    for (round = 0; round < 3; round++) {
        nn_context_desc d;
        nn_context *ctx = NULL;
        nn_graph *g = NULL;
        float x[3] = {-1, 2, -3}, y[3];
        nn_tensor xt, yt;
        t_context_desc(e, &d); /* the same device and tuning as e->ctx */
        d.cache_dir = dir;
        if (T_OK(nn_context_create(&ctx, &d), ctx) && T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
            xt = nn_input(g, "x", NN_F32, nn_shape1(3));
            yt = nn_relu(g, xt);
            nn_output(g, yt);
            if (T_OK(nn_graph_compile(g, NULL), ctx) && T_OK(nn_tensor_write(g, xt, x, 12), ctx) &&
                T_OK(nn_graph_forward(g), ctx) && T_OK(nn_tensor_read(g, yt, y, 12), ctx))
                T_CHECK(y[0] == 0 && y[1] == 2 && y[2] == 0, "round %d: relu gave %g %g %g", round, y[0], y[1], y[2]);
        }
        nn_graph_destroy(g);
        nn_context_destroy(ctx);
        if (round == 0) { /* the cache holds the program now; then corrupt every entry */
            snprintf(cmd, sizeof cmd, "ls %s/elementwise-*.bin >/dev/null 2>&1", dir);
            T_CHECK(system(cmd) == 0, "no elementwise program in the cache %s", dir);
        }
        if (round == 1) {
            snprintf(cmd, sizeof cmd, "for f in %s/*.bin; do echo garbage > \"$f\"; done", dir);
            T_CHECK(system(cmd) == 0, "cannot corrupt the cache");
        }
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
done:
    t_end();
}

void suite_io(const t_env *e) {
    test_idx(e);
    test_program_cache(e);
}
