/* File readers (untrusted input). The compiled-program cache: tests/test_cache.c. */
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
    if (T_CHECK(write_bytes(path, good, sizeof good), "write failed") && T_OK(nn_array_load_idx(ctx, path, NN_F32, &a), ctx)) {
        T_CHECK(a.shape.ndim == 2 && a.shape.dim[0] == 2 && a.shape.dim[1] == 3, "shape");
        T_CHECK(((float *)a.data)[5] == 255.0f && ((float *)a.data)[0] == 1.0f, "values");
        nn_array_free(&a);
    }
    if (T_OK(nn_array_load_idx(ctx, path, NN_I32, &a), ctx)) {
        T_CHECK(((int32_t *)a.data)[3] == 4, "int values");
        nn_array_free(&a);
    }
    write_bytes(path, good, sizeof good - 1); /* one byte short */
    T_CHECK(nn_array_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO && a.data == NULL, "truncated file accepted");
    T_CHECK(strstr(nn_context_last_error(ctx), "truncated") && strstr(nn_context_last_error(ctx), path), "message: %s", nn_context_last_error(ctx));
    write_bytes(path, huge, sizeof huge);
    T_CHECK(nn_array_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO, "2^64 elements accepted");
    write_bytes(path, gz, sizeof gz);
    T_CHECK(nn_array_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO && strstr(nn_context_last_error(ctx), "gzip"), "gzip: %s",
            nn_context_last_error(ctx));
    write_bytes(path, badtype, sizeof badtype);
    T_CHECK(nn_array_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO, "type 0x07 accepted");
    write_bytes(path, good, 3);
    T_CHECK(nn_array_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO, "3-byte file accepted");
    remove(path);
    T_CHECK(nn_array_load_idx(ctx, path, NN_F32, &a) == NN_ERR_IO && strstr(nn_context_last_error(ctx), path), "missing file: %s",
            nn_context_last_error(ctx));
done:
    t_end();
}

void suite_io(const t_env *e) {
    test_idx(e);
}
