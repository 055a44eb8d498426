/* libFuzzer target for the IDX loader (nn_array_load_idx): `make fuzz` (clang, -DNN_FUZZ). Each
   input is parsed from memory as float32 and as int32; a parse that succeeds must describe
   an array that the input's bytes hold (every element is read back), one that fails must
   leave the array empty and say why.
   NN_FUZZ_WRITE_SEEDS=DIR ./tests/fuzz_idx writes the seed corpus into DIR and exits.
   Without -DNN_FUZZ this file is empty, so the test binary (which compiles every tests/ C file) ignores it. */
#if defined(NN_FUZZ)
#define NN_IMPLEMENTATION
#include "../nn.h"
#include "fuzz.h"


/* Each element type, one to three dims, and the usual ways a file is broken. */
static int fz_write_seeds(const char *dir) {
    static const unsigned char u8[] = {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 255};
    static const unsigned char i8[] = {0, 0, 0x09, 1, 0, 0, 0, 4, 0x80, 0xff, 0, 0x7f};
    static const unsigned char i16[] = {0, 0, 0x0B, 1, 0, 0, 0, 2, 0x80, 0x00, 0x7f, 0xff};
    static const unsigned char i32[] = {0, 0, 0x0C, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0x80, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff};
    static const unsigned char f32[] = {0, 0, 0x0D, 1, 0, 0, 0, 3, 0x3f, 0xc0, 0, 0, 0x7f, 0x80, 0, 0, 0x7f, 0xc0, 0, 0};
    static const unsigned char f64[] = {0, 0, 0x0E, 1, 0, 0, 0, 2, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xc7, 0xef, 0xff, 0xff, 0xe0, 0, 0, 0};
    static const unsigned char cut[] = {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3};
    static const unsigned char huge[] = {0, 0, 0x08, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 1};
    static const unsigned char zero[] = {0, 0, 0x08, 1, 0, 0, 0, 0};
    static const unsigned char gz[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0};
    static const unsigned char dims7[] = {0, 0, 0x08, 7, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 9};
    return fz_write(dir, "u8_2x3.idx", u8, sizeof u8) && fz_write(dir, "i8.idx", i8, sizeof i8) &&
           fz_write(dir, "i16.idx", i16, sizeof i16) && fz_write(dir, "i32_1x1x2.idx", i32, sizeof i32) &&
           fz_write(dir, "f32_inf_nan.idx", f32, sizeof f32) && fz_write(dir, "f64_big.idx", f64, sizeof f64) &&
           fz_write(dir, "bad_cut.idx", cut, sizeof cut) && fz_write(dir, "bad_huge.idx", huge, sizeof huge) &&
           fz_write(dir, "bad_zero_dim.idx", zero, sizeof zero) && fz_write(dir, "bad_gzip.idx", gz, sizeof gz) &&
           fz_write(dir, "bad_7_dims.idx", dims7, sizeof dims7);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return fz_init(1, "fuzz_idx", fz_write_seeds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int pass;
    for (pass = 0; pass < 2; pass++) {
        nn_array a;
        nn_result r = nn__idx_parse(fz_ctx, "fuzz-input", data, size, pass ? NN_I32 : NN_F32, &a);
        if (r == NN_OK) {
            uint64_t numel = 1;
            volatile unsigned sink = 0;
            int k;
            fz_check(a.data != NULL && a.shape.ndim >= 1 && a.shape.ndim <= NN_MAX_DIMS && a.shape.ndim == data[3]);
            fz_check(a.dtype == (pass ? NN_I32 : NN_F32));
            for (k = 0; k < a.shape.ndim; k++) {
                fz_check(a.shape.dim[k] >= 1);
                numel *= (uint64_t)a.shape.dim[k];
            }
            fz_check(4 + 4 * (uint64_t)a.shape.ndim + numel <= size); /* at least a byte each */
            for (k = 0; (uint64_t)k < numel && k < 4096; k++) sink += ((const unsigned char *)a.data)[4 * (size_t)k];
            sink += ((const unsigned char *)a.data)[4 * (size_t)numel - 1]; /* ASan sees a short array */
            (void)sink;
            nn_array_free(&a);
        } else {
            fz_check(r == NN_ERR_IO || r == NN_ERR_OUT_OF_MEMORY);
            fz_check(a.data == NULL && a.shape.ndim == 0 && nn_context_last_error(fz_ctx)[0] != 0);
        }
    }
    return 0;
}
#else
typedef int nn_fuzz_idx_needs_NN_FUZZ; /* ISO C wants a declaration in every file */
#endif
