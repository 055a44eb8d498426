/* libFuzzer target for the safetensors loader: `make fuzz` (clang, -DNN_FUZZ). Each input
   goes through nn__st_parse() alone, with the invariants of a parse that succeeded checked
   (every range inside the data section, names sorted and unique, sizes consistent), and
   then through the whole load path into a graph's parameters, from memory.
   Without -DNN_FUZZ this file is empty, so the test binary (which compiles every tests/ C file) ignores it. */
#if defined(NN_FUZZ)
#define NN_IMPLEMENTATION
#include "../nn.h"
#include "fuzz.h"

static nn_graph *fz_g;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    nn_init zero;
    (void)argc;
    (void)argv;
    memset(&zero, 0, sizeof zero);
    if (!fz_context() || nn_graph_create(fz_ctx, NULL, &fz_g) != NN_OK) return 1;
    /* the names of the seed corpus: a torch Linear(3, 2), and "w" [2] */
    nn_param(fz_g, "fc.weight", nn_shape2(2, 3), zero);
    nn_param(fz_g, "fc.bias", nn_shape1(2), zero);
    nn_param(fz_g, "w", nn_shape1(2), zero);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nn__st_file f;
    char err[256];
    volatile unsigned sink = 0;
    int i;
    nn_result r = nn__st_parse(data, size, &f, err, sizeof err);
    if (r == NN_OK) {
        fz_check(f.data_off >= 8 && f.data_off <= size && f.data_off + f.data_len == size);
        for (i = 0; i < f.n; i++) {
            const nn__st_tensor *t = &f.t[i];
            fz_check(t->name != NULL && t->dtype >= 0 && t->dtype < NN__ST_N_DTYPES);
            fz_check(t->begin <= t->end && t->end <= f.data_len);
            fz_check(t->numel * nn__st_dtype_sizes[t->dtype] == t->end - t->begin);
            if (i) fz_check(strcmp(f.t[i - 1].name, t->name) < 0);
            if (t->end > t->begin) sink += data[f.data_off + t->end - 1]; /* ASan sees a stray range */
        }
        nn__st_free(&f);
    } else {
        fz_check((r == NN_ERR_IO || r == NN_ERR_OUT_OF_MEMORY) && err[0] != 0 && f.n == 0 && f.t == NULL);
    }
    (void)sink;
    if (fz_g) {
        nn__st_load_mem(fz_g, "fuzz-input", data, size, 1);
        nn__st_load_mem(fz_g, "fuzz-input", data, size, 0);
    }
    return 0;
}
#else
typedef int nn_fuzz_safetensors_needs_NN_FUZZ; /* ISO C wants a declaration in every file */
#endif
