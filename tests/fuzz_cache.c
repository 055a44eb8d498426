/* libFuzzer target for the compiled-program cache's file parser (nn__cache_parse, in
   src/opencl/cache.c, which is pure and outside the OpenCL part): `make fuzz` (clang,
   -DNN_FUZZ, -DNN_NO_OPENCL). Each input is checked twice:
   - as a cache file, for a fixed key and for the key its bytes 16..23 hold: a parse that
     succeeds must give the payload inside the input (bytes 40 to the end, at least one),
     and the header made again from that payload and key must be the input's own 40 bytes;
     one that fails must give no payload and a reason;
   - as a payload: the file made from it must parse back to it, and that file with one
     byte changed (position and bits drawn from the input), one byte short or one byte
     longer must be refused.
   NN_FUZZ_WRITE_SEEDS=DIR ./tests/fuzz_cache writes the seed corpus into DIR and exits.
   Without -DNN_FUZZ this file is empty, so the test binary (which compiles every tests/ C file) ignores it. */
#if defined(NN_FUZZ)
#define NN_IMPLEMENTATION
#include "../nn.h"
#include "fuzz.h"

#define FZ_KEY 0x0123456789abcdefULL

/* A valid file for the payload and key, then the usual ways one is broken. */
static int fz_write_seeds(const char *dir) {
    static const unsigned char payload[] = "\x7f" "ELF a program binary, or what a driver calls one";
    unsigned char f[NN__CACHE_HEADER + sizeof payload], g[NN__CACHE_HEADER + sizeof payload];
    size_t n = sizeof f;
    int ok;
    nn__cache_header(f, FZ_KEY, payload, sizeof payload);
    memcpy(f + NN__CACHE_HEADER, payload, sizeof payload);
    ok = fz_write(dir, "valid.bin", f, n);
    nn__cache_header(g, 42, payload, 1);
    memcpy(g + NN__CACHE_HEADER, payload, 1);
    ok = ok && fz_write(dir, "valid_1byte_key42.bin", g, NN__CACHE_HEADER + 1);
    ok = ok && fz_write(dir, "bad_header_only.bin", f, NN__CACHE_HEADER);
    ok = ok && fz_write(dir, "bad_cut.bin", f, n - 5);
    ok = ok && fz_write(dir, "bad_short.bin", f, 20);
    memcpy(g, f, n);
    g[NN__CACHE_HEADER + 3] ^= 1;
    ok = ok && fz_write(dir, "bad_payload_byte.bin", g, n);
    memcpy(g, f, n);
    g[8] = 2;
    ok = ok && fz_write(dir, "bad_version.bin", g, n);
    memcpy(g, f, n);
    g[0] = 'N';
    ok = ok && fz_write(dir, "bad_magic.bin", g, n);
    memcpy(g, f, n);
    g[30] = 0xff; /* a length of 2^55 and more */
    ok = ok && fz_write(dir, "bad_huge_length.bin", g, n);
    return ok;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return fz_init(0, "fuzz_cache", fz_write_seeds);
}

/* The input as a cache file, for key. */
static void fz_as_file(const uint8_t *data, size_t size, uint64_t key) {
    const unsigned char *payload = (const unsigned char *)"x";
    size_t len = 7;
    int st = nn__cache_parse(data, size, key, &payload, &len);
    if (st == NN__CACHE_OK) {
        unsigned char hdr[NN__CACHE_HEADER];
        volatile unsigned sink = 0;
        fz_check(size > NN__CACHE_HEADER && payload == data + NN__CACHE_HEADER && len == size - NN__CACHE_HEADER);
        sink += payload[0] + payload[len - 1]; /* ASan sees a payload outside the input */
        (void)sink;
        nn__cache_header(hdr, key, payload, len);
        fz_check(memcmp(hdr, data, NN__CACHE_HEADER) == 0);
    } else {
        fz_check(payload == NULL && len == 0);
        fz_check(st > NN__CACHE_OK && st <= NN__CACHE_BAD_CHECKSUM && strcmp(nn__cache_status_str(st), "invalid") != 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_as_file(data, size, FZ_KEY);
    if (size >= 24) fz_as_file(data, size, nn__cache_get(data + 16, 8));
    if (size > 0) { /* the input as a payload */
        size_t n = NN__CACHE_HEADER + size, at;
        unsigned char *f = (unsigned char *)malloc(n + 1);
        const unsigned char *payload;
        size_t len;
        unsigned char flip;
        if (!f) return 0;
        nn__cache_header(f, FZ_KEY, data, size);
        memcpy(f + NN__CACHE_HEADER, data, size);
        fz_check(nn__cache_parse(f, n, FZ_KEY, &payload, &len) == NN__CACHE_OK && payload == f + NN__CACHE_HEADER &&
                 len == size && memcmp(payload, data, size) == 0);
        fz_check(nn__cache_parse(f, n, FZ_KEY ^ 1, &payload, &len) == NN__CACHE_BAD_KEY);
        fz_check(nn__cache_parse(f, n - 1, FZ_KEY, &payload, &len) != NN__CACHE_OK);
        f[n] = data[0];
        fz_check(nn__cache_parse(f, n + 1, FZ_KEY, &payload, &len) != NN__CACHE_OK);
        at = (size_t)(nn__fnv(NN__FNV_BASIS, data, size) % n);
        flip = data[size / 2] ? data[size / 2] : 0x80;
        f[at] ^= flip;
        fz_check(nn__cache_parse(f, n, FZ_KEY, &payload, &len) != NN__CACHE_OK);
        free(f);
    }
    return 0;
}
#else
typedef int nn_fuzz_cache_needs_NN_FUZZ; /* ISO C wants a declaration in every file */
#endif
