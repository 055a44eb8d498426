/* libFuzzer target for the CSV loader (nn_array_load_csv) and its number parser: `make fuzz`
   (clang, -DNN_FUZZ). Each input is parsed from memory with four settings (',' with and
   without a header, ';' and tab with a header); a parse that succeeds must give rows x
   columns values, one that fails an empty array and a message naming the input. The whole
   input, read as one number by nn__parse_real, must also agree bit for bit with the C
   library's strtod and strtof (in the C locale) wherever they read it whole as decimal.
   NN_FUZZ_WRITE_SEEDS=DIR ./tests/fuzz_csv writes the seed corpus into DIR and exits.
   Without -DNN_FUZZ this file is empty, so the test binary (which compiles every tests/ C file) ignores it. */
#if defined(NN_FUZZ)
#define NN_IMPLEMENTATION
#include "../nn.h"
#include "fuzz.h"


static int fz_write_seeds(const char *dir) {
    static const char *const seeds[][2] = {
        {"plain.csv", "1,2,3\n4,5,6\n"},
        {"header_crlf.csv", "x, y ,label\r\n1.5, -2,0\r\n\r\n 3e2,4,1\r\n"},
        {"bom.csv", "\xEF\xBB\xBFx,y\n0.1,0.2\n"},
        {"semicolon.csv", "a;b\n1.25;-0.5e-3\n+7;.5\n"},
        {"tab.csv", "a\tb\n1\t2\n"},
        {"special.csv", "inf,-Infinity,nan,NaN\n0,-0,1e-45,3.4028234e38\n"},
        {"long_digits.csv", "0.1000000000000000055511151231257827021181583404541015625,"
                            "3.40282356779733661637539395458142568447e38\n"},
        {"bad_overflow.csv", "1,2\n3,1e39\n"},
        {"bad_ragged.csv", "1,2\n3\n"},
        {"bad_text.csv", "1,x\n"},
        {"bad_empty_field.csv", "1,,2\n"},
        {"number.txt", "2.2250738585072011e-308"},
    };
    size_t i;
    for (i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        if (!fz_write(dir, seeds[i][0], seeds[i][1], strlen(seeds[i][1]))) return 0;
    return 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return fz_init(1, "fuzz_csv", fz_write_seeds);
}

/* nn__parse_real against strtod/strtof on the whole input, where the C library reads it
   whole as a decimal number (not hex, no leading space, which nn__parse_real refuses). */
static void fz_differential(const uint8_t *data, size_t size) {
    char *s, *end;
    double want, got;
    float wantf;
    int rc, hex = 0;
    size_t i;
    if (size == 0 || size > 4096) return;
    for (i = 0; i < size; i++)
        if (data[i] == 'x' || data[i] == 'X' || data[i] == '(' || data[i] == 0) hex = 1;
    if (hex || data[0] == ' ' || (data[0] >= '\t' && data[0] <= '\r')) return;
    s = (char *)malloc(size + 1);
    if (!s) return;
    memcpy(s, data, size);
    s[size] = 0;
    errno = 0;
    want = strtod(s, &end);
    if (end == s + size) {
        int over = errno == ERANGE && (want == HUGE_VAL || want == -HUGE_VAL);
        rc = nn__parse_real(s, size, 0, &got);
        fz_check(rc == (over ? -1 : 1));
        if (!over) fz_check(memcmp(&got, &want, sizeof got) == 0 || (got != got && want != want));
        errno = 0;
        wantf = strtof(s, &end);
        over = errno == ERANGE && (wantf == HUGE_VALF || wantf == -HUGE_VALF);
        rc = nn__parse_real(s, size, 1, &got);
        fz_check(rc == (over ? -1 : 1));
        if (!over) {
            float f = (float)got;
            fz_check(memcmp(&f, &wantf, sizeof f) == 0 || (f != f && wantf != wantf));
        }
    } else {
        fz_check(nn__parse_real(s, size, 0, &got) == 0);
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const nn_csv_desc modes[4] = {{',', 0}, {',', 1}, {';', 1}, {'\t', 1}};
    int m;
    for (m = 0; m < 4; m++) {
        nn_array a;
        nn_result r = nn__csv_parse(fz_ctx, "fuzz-input", data, size, &modes[m], &a);
        if (r == NN_OK) {
            volatile float sink = 0;
            int64_t n;
            fz_check(a.data != NULL && a.dtype == NN_F32 && a.shape.ndim == 2 && a.shape.dim[0] >= 1 && a.shape.dim[1] >= 1);
            n = a.shape.dim[0] * a.shape.dim[1];
            fz_check(n <= (int64_t)size); /* a field is at least a byte */
            sink += ((const float *)a.data)[n - 1]; /* ASan sees a short array */
            (void)sink;
            nn_array_free(&a);
        } else {
            const char *err = nn_context_last_error(fz_ctx);
            fz_check(r == NN_ERR_IO || r == NN_ERR_OUT_OF_MEMORY);
            fz_check(a.data == NULL && strncmp(err, "fuzz-input", 10) == 0);
        }
    }
    fz_differential(data, size);
    return 0;
}
#else
typedef int nn_fuzz_csv_needs_NN_FUZZ; /* ISO C wants a declaration in every file */
#endif
