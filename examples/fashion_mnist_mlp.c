/* fashion_mnist_mlp.c - a 784-256-128-10 MLP on Fashion-MNIST, trained on the device.

   Build (from the repository root, after `make nn.h`):
       cc -O2 -I. examples/fashion_mnist_mlp.c -o examples/fashion_mnist_mlp -lz -lm -lpthread
   or, without zlib (reads uncompressed IDX files only):
       cc -O2 -I. -DFMNIST_NO_ZLIB examples/fashion_mnist_mlp.c -o examples/fashion_mnist_mlp -lm -lpthread
   (`make demo` picks one of the two; add -DNN_NO_OPENCL for the CPU alone).
   Run:
       ./examples/fashion_mnist_mlp [DATA_DIR] [EPOCHS]
   DATA_DIR holds train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz),
   t10k-images-idx3-ubyte(.gz) and t10k-labels-idx1-ubyte(.gz) (.gz only with zlib; without
   it `tools/get_fashion_mnist.sh --gunzip DIR` writes the plain files); without DATA_DIR the
   program looks in ./data/fashion-mnist, then /usr/share/datasets/fashion-mnist
   (tools/get_fashion_mnist.sh fetches them). EPOCHS (default 10) can also come from $EPOCHS.
   NN_DEVICE picks the backend.

   Training: Adam, batch 128, the learning rate on a cosine schedule from 2e-3 at the first
   step to 1e-5 at the last, computed on the host and set with nn_graph_set_lr before each
   step (a kernel argument, no transfer).

   What stays on the device: the whole training set ([60000, 784] float32 images and [60000]
   int32 labels, written once), the test set, the parameters, Adam's state and the running sums
   of loss and accuracy. Each batch's images and labels are gathered on the device with
   nn_gather_rows from the same 128 indices, so the only thing a training step moves is those
   indices, written by the host: 512 bytes. The sums are read once per epoch. The last line
   is machine-readable:
       RESULT device=... epochs=... test_accuracy=... samples_per_sec=... ... */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define NN_IMPLEMENTATION
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fashion_mnist.h" /* IDX loading, the data folder, shuffle, clock */

#define BATCH 128
#define IMG FMNIST_IMG
#define CLASSES FMNIST_CLASSES
#define LR_MAX 2e-3 /* the cosine schedule's first and last learning rates */
#define LR_MIN 1e-5

/* ---- the model ------------------------------------------------------------------------- */

/* Both graphs call this; the second (share_params) finds fc1..fc3 by name. */
static nn_tensor mlp(nn_graph *g, nn_tensor x) {
    nn_tensor h = nn_relu(g, nn_linear_layer(g, x, 256, NULL, "fc1"));
    h = nn_relu(g, nn_linear_layer(g, h, 128, NULL, "fc2"));
    return nn_linear_layer(g, h, CLASSES, NULL, "fc3");
}

/* The learning rate of step t of total: cosine decay from LR_MAX (t = 0) to LR_MIN (the last). */
static float cosine_lr(int64_t t, int64_t total) {
    const double pi = 3.14159265358979323846;
    double frac = total > 1 ? (double)t / (double)(total - 1) : 1.0;
    return (float)(LR_MIN + 0.5 * (LR_MAX - LR_MIN) * (1.0 + cos(pi * frac)));
}

int main(int argc, char **argv) {
    const char *dir = NULL, *env = getenv("EPOCHS");
    fmnist_dataset train = {0, NULL, NULL}, test = {0, NULL, NULL};
    nn_context *ctx = NULL;
    nn_graph *g = NULL, *ev = NULL;
    nn_graph_desc gd = {0}, ed = {0};
    nn_compile_desc cd = {0}, ecd = {0};
    nn_tensor x_all, y_all, idx, xb, yb, logits, loss, loss_sum, acc_sum, x_test, y_test, test_acc;
    nn_result r = NN_OK;
    int32_t *perm = NULL;
    int epochs = 10, epoch, step, steps, status = 1;
    double train_secs = 0.0, first_loss = 0.0, last_test_acc = 0.0;
    uint64_t h2d = 0, d2h = 0, measured_steps = 0;
    char devname[256];

    if (argc > 2) epochs = atoi(argv[2]);
    else if (env) epochs = atoi(env);
    if (epochs < 1) {
        fprintf(stderr, "usage: %s [DATA_DIR] [EPOCHS >= 1]\n", argv[0]);
        return 2;
    }
    dir = fmnist_find_dir(argc > 1 ? argv[1] : NULL); /* "" means: search */
    if (!dir) return 1;
    if (!fmnist_load_split(dir, "train", &train) || !fmnist_load_split(dir, "t10k", &test)) goto done;
    printf("data: %s: %ld training, %ld test examples\n", dir, (long)train.n, (long)test.n);
    steps = (int)(train.n / BATCH); /* the last partial batch is dropped */
    perm = (int32_t *)malloc((size_t)train.n * sizeof(int32_t));
    if (!perm || steps < 1) {
        fprintf(stderr, "fashion_mnist: out of memory or fewer than %d examples\n", BATCH);
        goto done;
    }

    r = nn_context_create(NULL, &ctx);
    if (r != NN_OK) {
        fprintf(stderr, "fashion_mnist: nn_context_create: %s\n", nn_result_string(r));
        goto done;
    }
    {
        nn_device_info dev; /* the device the context runs on, with its backend */
        nn_context_device(ctx, &dev);
        fmnist_device_name(dev.name, devname, sizeof devname);
        printf("backend: %s\n", dev.name);
    }

    /* The training graph: the batch's images and labels are gathered on the device from the
       resident dataset with the same indices. */
    gd.seed = 1;
    if ((r = nn_graph_create(ctx, &gd, &g)) != NN_OK) goto fail;
    x_all = nn_input(g, "x_all", NN_F32, nn_shape2(train.n, IMG));
    y_all = nn_input(g, "y_all", NN_I32, nn_shape1(train.n));
    idx = nn_input(g, "idx", NN_I32, nn_shape1(BATCH));
    xb = nn_gather_rows(g, x_all, idx);
    yb = nn_gather_rows(g, y_all, idx);
    logits = mlp(g, xb);
    loss = nn_softmax_cross_entropy(g, logits, yb);
    loss_sum = nn_accumulate(g, loss);                          /* sum of batch losses */
    acc_sum = nn_accumulate(g, nn_accuracy(g, logits, yb));     /* sum of batch accuracies */
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = cosine_lr(0, (int64_t)epochs * steps);
    if ((r = nn_graph_compile(g, &cd)) != NN_OK) goto fail;
    nn_graph_summary(g, stdout); /* ops, parameters and the memory plan's bytes by kind */

    /* The evaluation graph: the same parameters, the whole test set as one forward pass. */
    ed.share_params = g;
    ed.eval = 1;
    if ((r = nn_graph_create(ctx, &ed, &ev)) != NN_OK) goto fail;
    x_test = nn_input(ev, "x_test", NN_F32, nn_shape2(test.n, IMG));
    y_test = nn_input(ev, "y_test", NN_I32, nn_shape1(test.n));
    test_acc = nn_accumulate(ev, nn_accuracy(ev, mlp(ev, x_test), y_test));
    if ((r = nn_graph_compile(ev, &ecd)) != NN_OK) goto fail;

    /* Upload both datasets once. */
    if ((r = nn_tensor_write(g, x_all, train.x, (size_t)train.n * IMG * sizeof(float))) != NN_OK ||
        (r = nn_tensor_write(g, y_all, train.y, (size_t)train.n * sizeof(int32_t))) != NN_OK ||
        (r = nn_tensor_write(ev, x_test, test.x, (size_t)test.n * IMG * sizeof(float))) != NN_OK ||
        (r = nn_tensor_write(ev, y_test, test.y, (size_t)test.n * sizeof(int32_t))) != NN_OK)
        goto fail;

    printf("epoch  train_loss  train_acc  test_acc  seconds  samples/s\n");
    for (epoch = 1; epoch <= epochs; epoch++) {
        float lsum = 0.0f, asum = 0.0f, tacc = 0.0f;
        double t0, secs;
        nn_stats s0, s1;

        fmnist_shuffle(perm, train.n, 12345u + (uint64_t)epoch);
        if ((r = nn_tensor_fill(g, loss_sum, 0.0f)) != NN_OK || (r = nn_tensor_fill(g, acc_sum, 0.0f)) != NN_OK ||
            (r = nn_tensor_fill(ev, test_acc, 0.0f)) != NN_OK || (r = nn_graph_finish(g)) != NN_OK)
            goto fail;

        t0 = fmnist_now();
        nn_context_stats(ctx, &s0);
        for (step = 0; step < steps; step++) {
            /* The step's only transfer: 128 indices into the resident dataset (images and
               labels). The learning rate is a kernel argument: setting it moves nothing. */
            const int32_t *bi = perm + (size_t)step * BATCH;
            float lr = cosine_lr((int64_t)(epoch - 1) * steps + step, (int64_t)epochs * steps);
            if ((r = nn_graph_set_lr(g, lr)) != NN_OK ||
                (r = nn_tensor_write(g, idx, bi, BATCH * sizeof(int32_t))) != NN_OK || (r = nn_graph_step(g)) != NN_OK)
                goto fail;
        }
        if ((r = nn_graph_finish(g)) != NN_OK) goto fail;
        nn_context_stats(ctx, &s1);
        secs = fmnist_now() - t0;
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
           "d2h_bytes_per_step=%.0f first_epoch_loss=%.9g\n",
           devname, epochs, last_test_acc, (double)measured_steps * BATCH / train_secs, (double)h2d / measured_steps,
           (double)d2h / measured_steps, first_loss);
    { /* the model with its architecture, for examples/predict.c (MODEL_OUT: another path) */
        const char *out = getenv("MODEL_OUT") ? getenv("MODEL_OUT") : "fashion_mnist_mlp.safetensors";
        if ((r = nn_model_save(g, xb, logits, out)) != NN_OK) goto fail;
        printf("saved %s (./examples/predict %s)\n", out, out);
    }
    goto done;

fail:
    fprintf(stderr, "fashion_mnist: %s: %s\n", nn_result_string(r), nn_context_last_error(ctx));
    status = 1;
done:
    nn_graph_destroy(ev);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    free(perm);
    fmnist_free(&train);
    fmnist_free(&test);
    return status;
}
