/* fashion_mnist.h - Fashion-MNIST for the examples: reading the IDX files (gzip'd with zlib,
   plain without it), finding the data folder, a seeded shuffle and a clock. Static functions
   only, included by examples/fashion_mnist_mlp.c and examples/fashion_mnist_cnn.c, so each
   example still builds with one cc command:
       cc -O2 -I. examples/NAME.c -o examples/NAME -lz -lm -lpthread
       cc -O2 -I. -DFMNIST_NO_ZLIB examples/NAME.c -o examples/NAME -lm -lpthread
   -DFMNIST_NO_ZLIB reads uncompressed IDX files only (`tools/get_fashion_mnist.sh --gunzip DIR`
   writes them). The includer defines _POSIX_C_SOURCE 200809L (for clock_gettime) before
   its first system header.

   fmnist_find_dir(arg)          the data folder: arg when non-empty, else the first of
                                 ./data/fashion-mnist and /usr/share/datasets/fashion-mnist
                                 that holds the training images; NULL (after saying why)
   fmnist_load_split(dir, prefix, &ds)   PREFIX-images-idx3-ubyte and PREFIX-labels-idx1-ubyte
                                 ("train" or "t10k") into ds: pixels as (p/255 - FMNIST_MEAN) /
                                 FMNIST_STD, [n, 784] row-major (= [n, 1, 28, 28]), labels int32
   fmnist_free(&ds)              frees what load_split allocated
   fmnist_shuffle(p, n, seed)    p = a seeded permutation of 0..n-1, the same everywhere
   fmnist_now()                  monotonic seconds
   fmnist_file_exists(path)      1 when path can be opened for reading (a checkpoint to resume)
   fmnist_device_name(name, out, size)  name with spaces as _ (for RESULT lines) */
#ifndef FASHION_MNIST_H_INCLUDED
#define FASHION_MNIST_H_INCLUDED

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef FMNIST_NO_ZLIB
#include <zlib.h>
#endif

#define FMNIST_IMG 784     /* 28 x 28 pixels */
#define FMNIST_CLASSES 10
#define FMNIST_MEAN 0.2860f /* Fashion-MNIST's pixel mean and standard deviation in [0, 1] */
#define FMNIST_STD 0.3530f

typedef struct fmnist_dataset {
    int64_t n;       /* examples */
    float *x;        /* [n, 784], normalised */
    int32_t *y;      /* [n] in 0..9 */
} fmnist_dataset;

static uint32_t fmnist_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* A file, gzip'd or plain with zlib (gzread reads plain files as they are), plain only
   without it (-DFMNIST_NO_ZLIB). fmnist_xread returns the bytes read, 0 at the end, -1 on
   error. */
#ifndef FMNIST_NO_ZLIB
typedef gzFile fmnist_xfile;
static fmnist_xfile fmnist_xopen(const char *path) { return gzopen(path, "rb"); }
static long fmnist_xread(fmnist_xfile f, void *buf, size_t n) {
    /* gzread takes an unsigned count: read in chunks of at most 1 GiB. */
    size_t done = 0;
    while (done < n) {
        size_t want = n - done > (1u << 30) ? (1u << 30) : n - done;
        int got = gzread(f, (unsigned char *)buf + done, (unsigned)want);
        if (got < 0) return -1;
        if (got == 0) break;
        done += (size_t)got;
    }
    return (long)done;
}
static void fmnist_xclose(fmnist_xfile f) {
    if (f) gzclose(f);
}
#define FMNIST_SUFFIXES 2 /* NAME, then NAME.gz */
#else
typedef FILE *fmnist_xfile;
static fmnist_xfile fmnist_xopen(const char *path) { return fopen(path, "rb"); }
static long fmnist_xread(fmnist_xfile f, void *buf, size_t n) {
    size_t got = fread(buf, 1, n, f);
    return got < n && ferror(f) ? -1 : (long)got;
}
static void fmnist_xclose(fmnist_xfile f) {
    if (f) fclose(f);
}
#define FMNIST_SUFFIXES 1 /* NAME only */
#endif

/* Opens DIR/NAME or (with zlib) DIR/NAME.gz, the path opened in path; NULL if neither. */
static fmnist_xfile fmnist_open_in(const char *dir, const char *name, char *path, size_t size) {
    static const char *const suffix[2] = {"", ".gz"};
    fmnist_xfile f = NULL;
    int s;
    for (s = 0; s < FMNIST_SUFFIXES && !f; s++) {
        snprintf(path, size, "%s/%s%s", dir, name, suffix[s]);
        f = fmnist_xopen(path);
    }
    return f;
}

/* 1 when DIR/NAME.gz exists (to explain a failure in a build without zlib). */
static int fmnist_has_gz(const char *dir, const char *name) {
    char path[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s.gz", dir, name);
    f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Reads DIR/NAME, or (with zlib) DIR/NAME.gz, checks its IDX header (unsigned bytes, ndim
   dimensions, inner dimensions as given) and returns the payload and the first dimension,
   or NULL after printing why. */
static unsigned char *fmnist_read_idx(const char *dir, const char *name, int ndim, const uint32_t *inner,
                                      uint32_t *count) {
    char path[1024];
    unsigned char hdr[16], extra;
    unsigned char *data = NULL;
    size_t bytes = 1;
    fmnist_xfile f = NULL;
    int i, hlen = 4 + 4 * ndim;

    f = fmnist_open_in(dir, name, path, sizeof path);
    if (!f) {
        if (FMNIST_SUFFIXES == 1 && fmnist_has_gz(dir, name))
            fprintf(stderr, "fashion_mnist: %s/%s is gzip'd only and this build has no zlib (-DFMNIST_NO_ZLIB);\n"
                            "  run tools/get_fashion_mnist.sh --gunzip %s to write the plain files beside it\n",
                    dir, name, dir);
        else fprintf(stderr, "fashion_mnist: cannot open %s/%s%s\n", dir, name, FMNIST_SUFFIXES == 2 ? "(.gz)" : "");
        return NULL;
    }
    if (fmnist_xread(f, hdr, (size_t)hlen) != hlen) {
        fprintf(stderr, "fashion_mnist: %s: too short for an IDX header\n", path);
        goto fail;
    }
    /* Magic: two zero bytes, type 0x08 (unsigned byte), number of dimensions. */
    if (hdr[0] != 0 || hdr[1] != 0 || hdr[2] != 0x08 || hdr[3] != ndim) {
        fprintf(stderr, "fashion_mnist: %s: bad IDX magic %02x%02x%02x%02x (want 000008%02x); not a %d-D ubyte IDX file\n",
                path, hdr[0], hdr[1], hdr[2], hdr[3], ndim, ndim);
        goto fail;
    }
    *count = fmnist_be32(hdr + 4);
    if (*count == 0 || *count > 1000000) {
        fprintf(stderr, "fashion_mnist: %s: implausible example count %lu\n", path, (unsigned long)*count);
        goto fail;
    }
    for (i = 1; i < ndim; i++) {
        uint32_t d = fmnist_be32(hdr + 4 + 4 * i);
        if (d != inner[i - 1]) {
            fprintf(stderr, "fashion_mnist: %s: dimension %d is %lu, want %lu\n", path, i, (unsigned long)d,
                    (unsigned long)inner[i - 1]);
            goto fail;
        }
        bytes *= d;
    }
    bytes *= *count;
    data = (unsigned char *)malloc(bytes);
    if (!data) {
        fprintf(stderr, "fashion_mnist: out of memory reading %s\n", path);
        goto fail;
    }
    if (fmnist_xread(f, data, bytes) != (long)bytes) {
        fprintf(stderr, "fashion_mnist: %s: truncated: the header promises %lu bytes of data\n", path, (unsigned long)bytes);
        goto fail;
    }
    if (fmnist_xread(f, &extra, 1) != 0) {
        fprintf(stderr, "fashion_mnist: %s: trailing bytes after the %lu promised by the header\n", path, (unsigned long)bytes);
        goto fail;
    }
    fmnist_xclose(f);
    return data;
fail:
    free(data);
    fmnist_xclose(f);
    return NULL;
}

/* Frees a split's arrays (safe on a zeroed or failed one). */
static void fmnist_free(fmnist_dataset *ds) {
    free(ds->x);
    free(ds->y);
    ds->x = NULL;
    ds->y = NULL;
    ds->n = 0;
}

/* Loads PREFIX-images-idx3-ubyte and PREFIX-labels-idx1-ubyte; pixels to (p/255-MEAN)/STD.
   Returns 1, or 0 after printing why (ds then holds nothing). */
static int fmnist_load_split(const char *dir, const char *prefix, fmnist_dataset *ds) {
    static const uint32_t img_dims[2] = {28, 28};
    char name[64];
    unsigned char *img, *lab;
    uint32_t ni = 0, nl = 0, i;
    size_t k;

    ds->x = NULL;
    ds->y = NULL;
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    img = fmnist_read_idx(dir, name, 3, img_dims, &ni);
    if (!img) return 0;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    lab = fmnist_read_idx(dir, name, 1, NULL, &nl);
    if (!lab) {
        free(img);
        return 0;
    }
    if (ni != nl) {
        fprintf(stderr, "fashion_mnist: %s/%s: %lu images but %lu labels\n", dir, prefix, (unsigned long)ni, (unsigned long)nl);
        goto fail;
    }
    ds->n = ni;
    ds->x = (float *)malloc((size_t)ni * FMNIST_IMG * sizeof(float));
    ds->y = (int32_t *)malloc((size_t)ni * sizeof(int32_t));
    if (!ds->x || !ds->y) {
        fprintf(stderr, "fashion_mnist: out of memory\n");
        goto fail;
    }
    for (i = 0; i < ni; i++) {
        if (lab[i] >= FMNIST_CLASSES) {
            fprintf(stderr, "fashion_mnist: %s/%s labels: label %u of example %lu is not in 0..9\n", dir, prefix, lab[i],
                    (unsigned long)i);
            goto fail;
        }
        ds->y[i] = lab[i];
    }
    for (k = 0; k < (size_t)ni * FMNIST_IMG; k++) ds->x[k] = (img[k] / 255.0f - FMNIST_MEAN) / FMNIST_STD;
    free(img);
    free(lab);
    return 1;
fail:
    free(img);
    free(lab);
    fmnist_free(ds);
    return 0;
}

/* The data folder: arg when it is non-empty (NULL or "" means: search), else the first of
   ./data/fashion-mnist and /usr/share/datasets/fashion-mnist holding the training images;
   NULL after printing how to get the dataset. */
static const char *fmnist_find_dir(const char *arg) {
    static const char *const dirs[] = {"data/fashion-mnist", "/usr/share/datasets/fashion-mnist"};
    size_t i;
    if (arg && arg[0]) return arg;
    for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char probe[1024];
        fmnist_xfile f = fmnist_open_in(dirs[i], "train-images-idx3-ubyte", probe, sizeof probe);
        if (f) {
            fmnist_xclose(f);
            return dirs[i];
        }
    }
    fprintf(stderr, "fashion_mnist: no dataset%s in ./data/fashion-mnist or /usr/share/datasets/fashion-mnist;\n"
                    "  run tools/get_fashion_mnist.sh%s data/fashion-mnist, or pass the folder as the first argument\n",
            FMNIST_SUFFIXES == 1 ? " (uncompressed: this build has no zlib)" : "", FMNIST_SUFFIXES == 1 ? " --gunzip" : "");
    return NULL;
}

/* A seeded Fisher-Yates shuffle (splitmix64), the same on every platform. */
static uint64_t fmnist_splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* (not every example uses every helper: no unused-function warning for these) */
#if defined(__GNUC__) || defined(__clang__)
#define FMNIST_UNUSED __attribute__((unused))
#else
#define FMNIST_UNUSED
#endif
static FMNIST_UNUSED void fmnist_shuffle(int32_t *p, int64_t n, uint64_t seed) {
    int64_t i;
    for (i = 0; i < n; i++) p[i] = (int32_t)i;
    for (i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(fmnist_splitmix64(&seed) % (uint64_t)(i + 1));
        int32_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

static double fmnist_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static FMNIST_UNUSED int fmnist_file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fclose(f);
    return 1;
}

/* out = name with spaces as '_', for key=value lines. */
static void fmnist_device_name(const char *name, char *out, size_t size) {
    size_t i;
    snprintf(out, size, "%s", name);
    for (i = 0; out[i]; i++)
        if (out[i] == ' ') out[i] = '_';
}

/* $PRECISION: "fp32" (or unset: float32), "bf16" or "fp16", the graphs' precision policy
   (nn_graph_desc.precision: matmuls and convolutions in 16 bits, parameters, norms and
   losses in float32); *name is the word for the RESULT line. -1 for another value. */
static FMNIST_UNUSED int fmnist_precision(const char **name) {
    const char *p = getenv("PRECISION");
    *name = p && p[0] ? p : "fp32";
    if (!strcmp(*name, "fp32")) return 0;
    if (!strcmp(*name, "bf16")) return 1;
    if (!strcmp(*name, "fp16")) return 2;
    fprintf(stderr, "fashion_mnist: PRECISION=%s: give fp32, bf16 or fp16\n", *name);
    return -1;
}

#endif /* FASHION_MNIST_H_INCLUDED */
