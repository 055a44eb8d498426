/* fashion_mnist_mlp.c - a 784-256-128-10 MLP on Fashion-MNIST, trained on the device.

   Build (from the repository root, after `make nn.h`):
       cc -O2 -I. examples/fashion_mnist_mlp.c -o examples/fashion_mnist_mlp -lOpenCL -lz -lm -lpthread
   Run:
       ./examples/fashion_mnist_mlp [DATA_DIR] [EPOCHS]
   DATA_DIR holds train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz),
   t10k-images-idx3-ubyte(.gz) and t10k-labels-idx1-ubyte(.gz); without it the program looks
   in ./data/fashion-mnist, then /usr/share/datasets/fashion-mnist (tools/get_fashion_mnist.sh
   fetches them). EPOCHS (default 10) can also come from $EPOCHS. NN_DEVICE picks the backend.

   What stays on the device: the whole training set ([60000, 784] float32 and [60000] int32
   labels, written once), the test set, the parameters, Adam's state and the running sums of
   loss and accuracy. What a training step moves: the 128 batch indices the host writes
   (512 bytes; plus the batch's 128 labels while nn_gather_rows gathers float32 rows only,
   see can_gather_labels). The sums are read once per epoch. The last line is machine-readable:
       RESULT device=... epochs=... test_accuracy=... samples_per_sec=... ... */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define NN_IMPLEMENTATION
#include "nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define BATCH 128
#define IMG 784
#define CLASSES 10
#define MEAN 0.2860f /* Fashion-MNIST's pixel mean and standard deviation in [0, 1] */
#define STD 0.3530f

/* ---- the dataset: IDX files, gzip'd or plain ------------------------------------------ */

typedef struct dataset {
    int64_t n;       /* examples */
    float *x;        /* [n, 784], normalised */
    int32_t *y;      /* [n] in 0..9 */
} dataset;

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads DIR/NAME, or DIR/NAME.gz (gzread reads plain files as they are), checks its IDX
   header (unsigned bytes, ndim dimensions, inner dimensions as given) and returns the
   payload and the first dimension, or NULL after printing why. */
static unsigned char *read_idx(const char *dir, const char *name, int ndim, const uint32_t *inner, uint32_t *count) {
    char path[1024];
    unsigned char hdr[16], extra;
    unsigned char *data = NULL;
    size_t bytes = 1;
    gzFile f = NULL;
    int i, hlen = 4 + 4 * ndim;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = gzopen(path, "rb");
    if (!f) {
        snprintf(path, sizeof path, "%s/%s.gz", dir, name);
        f = gzopen(path, "rb");
    }
    if (!f) {
        fprintf(stderr, "fashion_mnist: cannot open %s/%s(.gz)\n", dir, name);
        return NULL;
    }
    if (gzread(f, hdr, (unsigned)hlen) != hlen) {
        fprintf(stderr, "fashion_mnist: %s: too short for an IDX header\n", path);
        goto fail;
    }
    /* Magic: two zero bytes, type 0x08 (unsigned byte), number of dimensions. */
    if (hdr[0] != 0 || hdr[1] != 0 || hdr[2] != 0x08 || hdr[3] != ndim) {
        fprintf(stderr, "fashion_mnist: %s: bad IDX magic %02x%02x%02x%02x (want 000008%02x); not a %d-D ubyte IDX file\n",
                path, hdr[0], hdr[1], hdr[2], hdr[3], ndim, ndim);
        goto fail;
    }
    *count = be32(hdr + 4);
    if (*count == 0 || *count > 1000000) {
        fprintf(stderr, "fashion_mnist: %s: implausible example count %lu\n", path, (unsigned long)*count);
        goto fail;
    }
    for (i = 1; i < ndim; i++) {
        uint32_t d = be32(hdr + 4 + 4 * i);
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
    if (gzread(f, data, (unsigned)bytes) != (int)bytes) {
        fprintf(stderr, "fashion_mnist: %s: truncated: the header promises %lu bytes of data\n", path, (unsigned long)bytes);
        goto fail;
    }
    if (gzread(f, &extra, 1) != 0) {
        fprintf(stderr, "fashion_mnist: %s: trailing bytes after the %lu promised by the header\n", path, (unsigned long)bytes);
        goto fail;
    }
    gzclose(f);
    return data;
fail:
    free(data);
    gzclose(f);
    return NULL;
}

/* Loads PREFIX-images-idx3-ubyte and PREFIX-labels-idx1-ubyte; pixels to (p/255-MEAN)/STD. */
static int load_split(const char *dir, const char *prefix, dataset *ds) {
    static const uint32_t img_dims[2] = {28, 28};
    char name[64];
    unsigned char *img, *lab;
    uint32_t ni = 0, nl = 0, i;
    size_t k;

    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    img = read_idx(dir, name, 3, img_dims, &ni);
    if (!img) return 0;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    lab = read_idx(dir, name, 1, NULL, &nl);
    if (!lab) {
        free(img);
        return 0;
    }
    if (ni != nl) {
        fprintf(stderr, "fashion_mnist: %s/%s: %lu images but %lu labels\n", dir, prefix, (unsigned long)ni, (unsigned long)nl);
        goto fail;
    }
    ds->n = ni;
    ds->x = (float *)malloc((size_t)ni * IMG * sizeof(float));
    ds->y = (int32_t *)malloc((size_t)ni * sizeof(int32_t));
    if (!ds->x || !ds->y) {
        fprintf(stderr, "fashion_mnist: out of memory\n");
        goto fail;
    }
    for (i = 0; i < ni; i++) {
        if (lab[i] >= CLASSES) {
            fprintf(stderr, "fashion_mnist: %s/%s labels: label %u of example %lu is not in 0..9\n", dir, prefix, lab[i],
                    (unsigned long)i);
            goto fail;
        }
        ds->y[i] = lab[i];
    }
    for (k = 0; k < (size_t)ni * IMG; k++) ds->x[k] = (img[k] / 255.0f - MEAN) / STD;
    free(img);
    free(lab);
    return 1;
fail:
    free(img);
    free(lab);
    free(ds->x);
    free(ds->y);
    ds->x = NULL;
    ds->y = NULL;
    return 0;
}

/* ---- the model ------------------------------------------------------------------------- */

/* Both graphs call this; the second (share_params) finds fc1..fc3 by name. */
static nn_tensor mlp(nn_graph *g, nn_tensor x) {
    nn_tensor h = nn_relu(g, nn_dense(g, x, 256, "fc1"));
    h = nn_relu(g, nn_dense(g, h, 128, "fc2"));
    return nn_dense(g, h, CLASSES, "fc3");
}

/* 1 when nn_gather_rows can gather int32 rows (the labels). This nn.h version gathers
   float32 data only; then the host writes each batch's labels too (512 more bytes a step).
   The probe is a throwaway graph; its failure is quiet (no log, only nn_last_error). */
static int can_gather_labels(nn_context *ctx) {
    nn_graph *p;
    nn_tensor logits, labels;
    int ok;
    if (nn_graph_create(ctx, NULL, &p) != NN_OK) return 0;
    logits = nn_input(p, "logits", NN_F32, nn_shape2(2, CLASSES));
    labels = nn_gather_rows(p, nn_input(p, "y", NN_I32, nn_shape1(4)), nn_input(p, "i", NN_I32, nn_shape1(2)));
    nn_softmax_cross_entropy(p, logits, labels);
    ok = nn_graph_status(p) == NN_OK;
    nn_graph_destroy(p);
    return ok;
}

/* A seeded Fisher-Yates shuffle (splitmix64), the same on every platform. */
static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static void shuffle(int32_t *p, int64_t n, uint64_t seed) {
    int64_t i;
    for (i = 0; i < n; i++) p[i] = (int32_t)i;
    for (i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(splitmix64(&seed) % (uint64_t)(i + 1));
        int32_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    static const char *dirs[] = {"data/fashion-mnist", "/usr/share/datasets/fashion-mnist"};
    const char *dir = NULL, *env = getenv("EPOCHS");
    dataset train = {0, NULL, NULL}, test = {0, NULL, NULL};
    nn_context *ctx = NULL;
    nn_graph *g = NULL, *ev = NULL;
    nn_graph_desc gd = {0}, ed = {0};
    nn_compile_desc cd = {0}, ecd = {0};
    nn_tensor x_all, y_all, idx, xb, yb, logits, loss, loss_sum, acc_sum, x_test, y_test, test_acc;
    nn_result r = NN_OK;
    int32_t *perm = NULL, ybatch[BATCH];
    int epochs = 10, epoch, step, steps, status = 1, gather_labels;
    double train_secs = 0.0, first_loss = 0.0, last_test_acc = 0.0;
    uint64_t h2d = 0, d2h = 0, measured_steps = 0;
    char devname[256];
    size_t i;

    if (argc > 2) epochs = atoi(argv[2]);
    else if (env) epochs = atoi(env);
    if (epochs < 1) {
        fprintf(stderr, "usage: %s [DATA_DIR] [EPOCHS >= 1]\n", argv[0]);
        return 2;
    }
    if (argc > 1 && argv[1][0]) dir = argv[1]; /* "" means: search */
    for (i = 0; !dir && i < sizeof dirs / sizeof dirs[0]; i++) {
        char probe[1024];
        gzFile f;
        snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte", dirs[i]);
        f = gzopen(probe, "rb");
        if (!f) {
            snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte.gz", dirs[i]);
            f = gzopen(probe, "rb");
        }
        if (f) {
            gzclose(f);
            dir = dirs[i];
        }
    }
    if (!dir) {
        fprintf(stderr, "fashion_mnist: no dataset in ./data/fashion-mnist or /usr/share/datasets/fashion-mnist;\n"
                        "  run tools/get_fashion_mnist.sh data/fashion-mnist, or pass the folder as the first argument\n");
        return 1;
    }
    if (!load_split(dir, "train", &train) || !load_split(dir, "t10k", &test)) goto done;
    printf("data: %s: %ld training, %ld test examples\n", dir, (long)train.n, (long)test.n);
    steps = (int)(train.n / BATCH); /* the last partial batch is dropped */
    perm = (int32_t *)malloc((size_t)train.n * sizeof(int32_t));
    if (!perm || steps < 1) {
        fprintf(stderr, "fashion_mnist: out of memory or fewer than %d examples\n", BATCH);
        goto done;
    }

    r = nn_context_create(&ctx, NULL);
    if (r != NN_OK) {
        fprintf(stderr, "fashion_mnist: nn_context_create: %s\n", nn_result_string(r));
        goto done;
    }
    snprintf(devname, sizeof devname, "%s", nn_backend_name(ctx));
    for (i = 0; devname[i]; i++)
        if (devname[i] == ' ') devname[i] = '_';
    printf("backend: %s\n", nn_backend_name(ctx));
    gather_labels = can_gather_labels(ctx);
    if (!gather_labels) printf("note: nn_gather_rows cannot gather int32 labels; the host writes them each step\n");

    /* The training graph: the batch is gathered on the device from the resident dataset. */
    gd.seed = 1;
    if ((r = nn_graph_create(ctx, &gd, &g)) != NN_OK) goto fail;
    x_all = nn_input(g, "x_all", NN_F32, nn_shape2(train.n, IMG));
    y_all = nn_input(g, "y_all", NN_I32, nn_shape1(train.n));
    idx = nn_input(g, "idx", NN_I32, nn_shape1(BATCH));
    xb = nn_gather_rows(g, x_all, idx);
    yb = gather_labels ? nn_gather_rows(g, y_all, idx) : nn_input(g, "yb", NN_I32, nn_shape1(BATCH));
    logits = mlp(g, xb);
    loss = nn_softmax_cross_entropy(g, logits, yb);
    loss_sum = nn_accumulate(g, loss);                          /* sum of batch losses */
    acc_sum = nn_accumulate(g, nn_accuracy(g, logits, yb));     /* sum of batch accuracies */
    cd.loss = loss;
    cd.has_loss = 1;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 1e-3f;
    if ((r = nn_graph_compile(g, &cd)) != NN_OK) goto fail;

    /* The evaluation graph: the same parameters, the whole test set as one forward pass. */
    ed.share_params = g;
    ed.eval = 1;
    if ((r = nn_graph_create(ctx, &ed, &ev)) != NN_OK) goto fail;
    x_test = nn_input(ev, "x_test", NN_F32, nn_shape2(test.n, IMG));
    y_test = nn_input(ev, "y_test", NN_I32, nn_shape1(test.n));
    test_acc = nn_accumulate(ev, nn_accuracy(ev, mlp(ev, x_test), y_test));
    ecd.has_loss = 0;
    if ((r = nn_graph_compile(ev, &ecd)) != NN_OK) goto fail;

    /* Upload both datasets once. */
    if ((r = nn_tensor_write(g, x_all, train.x, (size_t)train.n * IMG * sizeof(float))) != NN_OK ||
        (gather_labels && (r = nn_tensor_write(g, y_all, train.y, (size_t)train.n * sizeof(int32_t))) != NN_OK) ||
        (r = nn_tensor_write(ev, x_test, test.x, (size_t)test.n * IMG * sizeof(float))) != NN_OK ||
        (r = nn_tensor_write(ev, y_test, test.y, (size_t)test.n * sizeof(int32_t))) != NN_OK)
        goto fail;

    printf("epoch  train_loss  train_acc  test_acc  seconds  samples/s\n");
    for (epoch = 1; epoch <= epochs; epoch++) {
        float lsum = 0.0f, asum = 0.0f, tacc = 0.0f;
        double t0, secs;
        nn_stats s0, s1;

        shuffle(perm, train.n, 12345u + (uint64_t)epoch);
        if ((r = nn_tensor_fill(g, loss_sum, 0.0f)) != NN_OK || (r = nn_tensor_fill(g, acc_sum, 0.0f)) != NN_OK ||
            (r = nn_tensor_fill(ev, test_acc, 0.0f)) != NN_OK || (r = nn_graph_finish(g)) != NN_OK)
            goto fail;

        t0 = now();
        s0 = nn_get_stats(ctx);
        for (step = 0; step < steps; step++) {
            /* The step's only transfer: 128 indices into the resident dataset. */
            const int32_t *bi = perm + (size_t)step * BATCH;
            if ((r = nn_tensor_write(g, idx, bi, BATCH * sizeof(int32_t))) != NN_OK) goto fail;
            if (!gather_labels) {
                int k;
                for (k = 0; k < BATCH; k++) ybatch[k] = train.y[bi[k]];
                if ((r = nn_tensor_write(g, yb, ybatch, sizeof ybatch)) != NN_OK) goto fail;
            }
            if ((r = nn_graph_step(g)) != NN_OK) goto fail;
        }
        if ((r = nn_graph_finish(g)) != NN_OK) goto fail;
        s1 = nn_get_stats(ctx);
        secs = now() - t0;
        train_secs += secs;
        h2d += s1.h2d_bytes - s0.h2d_bytes;
        d2h += s1.d2h_bytes - s0.d2h_bytes;
        measured_steps += (uint64_t)steps;

        /* Once per epoch: read the running sums, then the test accuracy. */
        if ((r = nn_tensor_read(g, loss_sum, &lsum, sizeof lsum)) != NN_OK ||
            (r = nn_tensor_read(g, acc_sum, &asum, sizeof asum)) != NN_OK || (r = nn_graph_forward(ev)) != NN_OK ||
            (r = nn_tensor_read(ev, test_acc, &tacc, sizeof tacc)) != NN_OK)
            goto fail;
        if (epoch == 1) first_loss = lsum / steps;
        last_test_acc = tacc;
        printf("%5d  %10.6f  %9.4f  %8.4f  %7.2f  %9.0f\n", epoch, lsum / steps, asum / steps, tacc, secs,
               steps * BATCH / secs);
        fflush(stdout);
    }
    status = 0;
    printf("RESULT device=%s epochs=%d test_accuracy=%.4f samples_per_sec=%.0f h2d_bytes_per_step=%.0f "
           "d2h_bytes_per_step=%.0f first_epoch_loss=%.6f\n",
           devname, epochs, last_test_acc, (double)measured_steps * BATCH / train_secs, (double)h2d / measured_steps,
           (double)d2h / measured_steps, first_loss);
    goto done;

fail:
    fprintf(stderr, "fashion_mnist: %s: %s\n", nn_result_string(r), nn_last_error(ctx));
    status = 1;
done:
    nn_graph_destroy(ev);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    free(perm);
    free(train.x);
    free(train.y);
    free(test.x);
    free(test.y);
    return status;
}
