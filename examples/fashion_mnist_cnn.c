/* fashion_mnist_cnn.c - a small CNN on Fashion-MNIST, trained on the device.

   Build (from the repository root, after `make nn.h`):
       cc -O2 -I. examples/fashion_mnist_cnn.c -o examples/fashion_mnist_cnn -lz -lm -lpthread
   or, without zlib (reads uncompressed IDX files only):
       cc -O2 -I. -DFMNIST_NO_ZLIB examples/fashion_mnist_cnn.c -o examples/fashion_mnist_cnn -lm -lpthread
   (add -DNN_NO_OPENCL for the CPU alone).
   Run:
       ./examples/fashion_mnist_cnn [DATA_DIR] [EPOCHS]
   DATA_DIR and the dataset's files as for examples/fashion_mnist_mlp.c (the loading code is
   examples/fashion_mnist.h); EPOCHS (default 10) can also come from $EPOCHS; NN_DEVICE
   picks the backend; CKPT=path (checkpoint after every epoch, resume when the file
   exists; unset or empty: none), METRICS=path (a CSV log for tools/plot_metrics) and PROGRESS=0 as for
   examples/fashion_mnist_mlp.c. At the end the model is saved with its architecture
   (nn_model_save) to fashion_mnist_cnn.safetensors (MODEL_OUT: another path), which
   examples/predict.c classifies with, no model code (fp32 only).
   PRECISION=bf16|fp16|fp32 (default fp32, printed in the RESULT line): the graphs' precision
   policy (nn_graph_desc.precision: the convolutions and the linear layers in 16 bits,
   float32 parameters, batch norm and loss).

   The network (PyTorch's names):
       conv1  Conv2d(1, 32, 3, padding=1) -> bn1 BatchNorm2d(32) -> ReLU -> MaxPool2d(2)
       conv2  Conv2d(32, 64, 3, padding=1) -> bn2 BatchNorm2d(64) -> ReLU -> MaxPool2d(2)
       flatten -> fc1 Linear(3136, 128) -> ReLU -> Dropout(0.25) -> fc2 Linear(128, 10)
   Training: Adam, batch 64, the learning rate on the compile desc's cosine schedule from
   LR_MAX at the first step to LR_MIN at the last (applied on the device, no transfer).

   What stays on the device: the training set ([60000, 1, 28, 28] float32 images and [60000]
   int32 labels, an nn_dataset written once), the test set (a second nn_dataset, in order,
   no shuffle), the parameters, batch norm's running statistics, Adam's state and the
   running sums of loss and accuracy. nn_dataset_next_batch writes a batch's 64 indices, the
   only thing a step moves (256 bytes), and the batch's rows are gathered on the device.
   The sums are read once per epoch (and by the progress line); the test set is scored by
   an evaluation graph (share_params, eval = 1: dropout off, batch norm on its running
   statistics) in batches of TEST_BATCH, its accuracy summed on the device too.
   The last line is machine-readable:
       RESULT device=... precision=... epochs=... test_accuracy=... samples_per_sec=... ... */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty */
#define NN_IMPLEMENTATION
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fashion_mnist.h" /* IDX loading, the data folder, clock */
#include "progress.h"      /* the progress line, the metrics log */

#define BATCH 64
#define TEST_BATCH 1000 /* the evaluation graph's batch: 10 forward passes over the test set */
#define CLASSES FMNIST_CLASSES
#define LR_MAX 2e-3 /* the cosine schedule's first and last learning rates */
#define LR_MIN 1e-5

/* ---- the model ------------------------------------------------------------------------- */

/* conv 3x3 pad 1 -> batch norm -> ReLU -> 2x2 max pool */
static nn_tensor conv_block(nn_graph *g, nn_tensor x, int64_t channels, const char *conv, const char *bn) {
    nn_conv2d_desc cd = {0};
    nn_pool2d_desc pd = {0};
    cd.pad_h = cd.pad_w = 1;
    pd.kernel_h = pd.kernel_w = 2;
    x = nn_conv2d_layer(g, x, channels, 3, 3, &cd, conv);
    x = nn_relu(g, nn_batch_norm2d_layer(g, x, NULL, bn));
    return nn_max_pool2d(g, x, &pd);
}

/* Both graphs call this; the second (share_params) finds the parameters and buffers by
   name. x: [B, 1, 28, 28] -> logits [B, 10]. */
static nn_tensor cnn(nn_graph *g, nn_tensor x) {
    nn_tensor h = conv_block(g, x, 32, "conv1", "bn1"); /* [B, 32, 14, 14] */
    h = conv_block(g, h, 64, "conv2", "bn2");           /* [B, 64, 7, 7] */
    h = nn_relu(g, nn_linear_layer(g, nn_flatten(g, h), 128, NULL, "fc1"));
    h = nn_dropout(g, h, 0.25f);
    return nn_linear_layer(g, h, CLASSES, NULL, "fc2");
}

/* A dataset of g on the device from images [n, 1, 28, 28] and labels [n]. */
static nn_result make_dataset(nn_graph *g, const char *name, const fmnist_dataset *d, int64_t batch, int shuffle,
                              nn_dataset **out) {
    nn_array x, y;
    nn_dataset_desc dd = {0};
    x.dtype = NN_F32;
    x.shape = nn_shape4(d->n, 1, 28, 28);
    x.data = d->x;
    y.dtype = NN_I32;
    y.shape = nn_shape1(d->n);
    y.data = d->y;
    dd.name = name;
    dd.x = &x;
    dd.y = &y;
    dd.batch = batch;
    dd.shuffle = shuffle; /* a new order each epoch, drawn from the graph's seed */
    dd.drop_last = 1;     /* a graph of one batch size: the last partial batch is dropped */
    return nn_dataset_create(g, &dd, out);
}

int main(int argc, char **argv) {
    const char *dir = NULL, *env = getenv("EPOCHS"), *ckpt = getenv("CKPT");
    fmnist_dataset train = {0, NULL, NULL}, test = {0, NULL, NULL};
    nn_context *ctx = NULL;
    nn_graph *g = NULL, *ev = NULL;
    nn_dataset *ds = NULL, *ts = NULL;
    nn_graph_desc gd = {0}, ed = {0};
    nn_compile_desc cd = {0}, ecd = {0};
    nn_tensor xb, yb, logits, loss, loss_sum, acc_sum, test_acc;
    nn_result r = NN_OK;
    ex_metrics log = {NULL, 0};
    int epochs = 10, first_epoch = 1, epoch, step, steps, test_steps, uploaded = 0, status = 1;
    double train_secs = 0.0, first_loss = 0.0, last_test_acc = 0.0;
    uint64_t h2d = 0, d2h = 0, measured_steps = 0;
    char devname[256];
    const char *precision_name = "fp32";
    int precision = fmnist_precision(&precision_name); /* $PRECISION: fp32 (default), bf16, fp16 */

    if (ckpt && !ckpt[0]) ckpt = NULL; /* CKPT= (empty): no checkpoint, as unset */
    if (argc > 2) epochs = atoi(argv[2]);
    else if (env) epochs = atoi(env);
    if (precision < 0) return 2;
    if (epochs < 1) {
        fprintf(stderr, "usage: %s [DATA_DIR] [EPOCHS >= 1]\n", argv[0]);
        return 2;
    }
    dir = fmnist_find_dir(argc > 1 ? argv[1] : NULL); /* "" means: search */
    if (!dir) return 1;
    if (!fmnist_load_split(dir, "train", &train) || !fmnist_load_split(dir, "t10k", &test)) goto done;
    printf("data: %s: %ld training, %ld test examples\n", dir, (long)train.n, (long)test.n);
    steps = (int)(train.n / BATCH); /* batches per epoch: the dataset drops the last partial one */
    test_steps = (int)(test.n / TEST_BATCH);
    if (test.n % TEST_BATCH != 0) {
        fprintf(stderr, "fashion_mnist: %ld test examples are not a multiple of %d\n", (long)test.n, TEST_BATCH);
        goto done;
    }
    if (steps < 1) {
        fprintf(stderr, "fashion_mnist: fewer than %d examples\n", BATCH);
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
       resident training set (nn_dataset: written at the first batch). */
    gd.seed = 1;
    gd.precision = (nn_precision)precision;
    if ((r = nn_graph_create(ctx, &gd, &g)) != NN_OK) goto fail;
    if ((r = make_dataset(g, "train", &train, BATCH, 1, &ds)) != NN_OK) goto fail;
    xb = nn_dataset_x(ds); /* [64, 1, 28, 28] */
    yb = nn_dataset_y(ds); /* [64] */
    logits = cnn(g, xb);
    loss = nn_softmax_cross_entropy(g, logits, yb);
    loss_sum = nn_accumulate(g, loss);                      /* sum of batch losses */
    acc_sum = nn_accumulate(g, nn_accuracy(g, logits, yb)); /* sum of batch accuracies */
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = LR_MAX;
    cd.schedule.kind = NN_LR_COSINE; /* lr at update t: cosine from LR_MAX (t = 0) to min_lr */
    cd.schedule.total_steps = epochs * steps - 1 > 0 ? epochs * steps - 1 : 1; /* min_lr at the last */
    cd.schedule.min_lr = (float)LR_MIN;
    if ((r = nn_graph_compile(g, &cd)) != NN_OK) goto fail;
#ifdef NN_MPI
    { /* data-parallel: each rank takes every size-th batch of the epoch */
        int size = 1;
        if (nn_dist_size(&size) == NN_OK && size > 1) steps /= size;
    }
#endif

    /* The evaluation graph: the same parameters and running statistics, the resident test
       set scored TEST_BATCH images at a time, in order. */
    ed.share_params = g;
    ed.precision = gd.precision;
    ed.eval = 1;
    if ((r = nn_graph_create(ctx, &ed, &ev)) != NN_OK) goto fail;
    if ((r = make_dataset(ev, "test", &test, TEST_BATCH, 0, &ts)) != NN_OK) goto fail;
    test_acc = nn_accumulate(ev, nn_accuracy(ev, cnn(ev, nn_dataset_x(ts)), nn_dataset_y(ts)));
    if ((r = nn_graph_compile(ev, &ecd)) != NN_OK) goto fail;

    /* Resume: parameters, batch norm's running statistics, Adam's moments, the update count
       (the schedule goes on where it was) and the dataset's epoch and position. */
    if (ckpt && fmnist_file_exists(ckpt)) {
        int64_t done_epochs = 0;
        if ((r = nn_graph_load_state(g, ckpt)) != NN_OK || (r = nn_dataset_epoch(ds, &done_epochs)) != NN_OK)
            goto fail;
        first_epoch = (int)done_epochs + 2; /* the state was saved after epoch done_epochs + 1 */
        printf("resumed from %s after epoch %d\n", ckpt, first_epoch - 1);
    }
    if (!ex_metrics_open(&log, "epoch,train_loss,train_acc,test_acc,seconds")) goto done;

    printf("epoch  train_loss  train_acc  test_acc  seconds  samples/s\n");
    for (epoch = first_epoch; epoch <= epochs; epoch++) {
        float lsum = 0.0f, asum = 0.0f, tacc = 0.0f;
        double t0, secs;
        nn_stats s0, s1;
        ex_progress bar;
        char label[32];

        if ((r = nn_tensor_fill(g, loss_sum, 0.0f)) != NN_OK || (r = nn_tensor_fill(g, acc_sum, 0.0f)) != NN_OK ||
            (r = nn_tensor_fill(ev, test_acc, 0.0f)) != NN_OK || (r = nn_graph_finish(g)) != NN_OK)
            goto fail;

        snprintf(label, sizeof label, "epoch %d/%d", epoch, epochs);
        ex_progress_begin(&bar, label, steps, BATCH, "samples");
        t0 = fmnist_now();
        nn_context_stats(ctx, &s0);
        for (step = 1; step <= steps; step++) {
            /* The step's only transfer: the batch's 64 indices into the resident dataset.
               The learning rate is a kernel argument: the schedule moves nothing. */
            if ((r = nn_dataset_next_batch(ds)) != NN_OK) goto fail;
            if (!uploaded) { /* the run's first batch also wrote the dataset to the device, once:
                                the clock and the counts start after it, less this batch's indices */
                uploaded = 1;
                t0 = fmnist_now();
                nn_context_stats(ctx, &s0);
                s0.h2d_bytes -= BATCH * sizeof(int32_t);
            }
            if ((r = nn_graph_step(g)) != NN_OK) goto fail;
            if (ex_progress_due(&bar, step)) { /* the running mean loss: a read of 4 bytes */
                if ((r = nn_tensor_read(g, loss_sum, &lsum, sizeof lsum)) != NN_OK) goto fail;
                ex_progress_show(&bar, step, lsum / step);
            }
        }
        if ((r = nn_graph_finish(g)) != NN_OK) goto fail;
        nn_context_stats(ctx, &s1);
        secs = fmnist_now() - t0;
        ex_progress_end(&bar);
        train_secs += secs;
        h2d += s1.h2d_bytes - s0.h2d_bytes;
        d2h += s1.d2h_bytes - s0.d2h_bytes;
        measured_steps += (uint64_t)steps;

        /* Once per epoch: read the running sums, then score the test set (the sum of the
           test batches' accuracies, read once). */
        if ((r = nn_tensor_read(g, loss_sum, &lsum, sizeof lsum)) != NN_OK ||
            (r = nn_tensor_read(g, acc_sum, &asum, sizeof asum)) != NN_OK)
            goto fail;
        for (step = 0; step < test_steps; step++)
            if ((r = nn_dataset_next_batch(ts)) != NN_OK || (r = nn_graph_forward(ev)) != NN_OK) goto fail;
        if ((r = nn_tensor_read(ev, test_acc, &tacc, sizeof tacc)) != NN_OK) goto fail;
        tacc /= (float)test_steps;
        if (epoch == first_epoch) first_loss = lsum / steps;
        last_test_acc = tacc;
        printf("%5d  %10.6f  %9.4f  %8.4f  %7.2f  %9.0f\n", epoch, lsum / steps, asum / steps, tacc, secs,
               steps * BATCH / secs);
        fflush(stdout);
        {
            double row[5];
            row[0] = epoch, row[1] = lsum / steps, row[2] = asum / steps, row[3] = tacc, row[4] = train_secs;
            ex_metrics_row(&log, row);
        }
        if (ckpt && (r = nn_graph_save_state(g, ckpt)) != NN_OK) goto fail;
    }
    if (ckpt) printf("checkpoint: %s\n", ckpt);
    status = 0;
    if (measured_steps > 0)
        printf("RESULT device=%s precision=%s epochs=%d test_accuracy=%.4f samples_per_sec=%.0f h2d_bytes_per_step=%.0f "
               "d2h_bytes_per_step=%.0f first_epoch_loss=%.9g\n",
               devname, precision_name, epochs, last_test_acc, (double)measured_steps * BATCH / train_secs,
               (double)h2d / measured_steps, (double)d2h / measured_steps, first_loss);
    if (precision != 0) /* a model file holds layers; the policy's conversions are none of them */
        printf("no model file under PRECISION=%s (train with fp32 to save one)\n", precision_name);
    else { /* the model with its architecture, for examples/predict.c (MODEL_OUT: another path) */
        const char *out = getenv("MODEL_OUT") ? getenv("MODEL_OUT") : "fashion_mnist_cnn.safetensors";
        if ((r = nn_model_save(g, xb, logits, out)) != NN_OK) goto fail;
        printf("saved %s (./examples/predict %s)\n", out, out);
    }
    goto done;

fail:
    fprintf(stderr, "fashion_mnist: %s: %s\n", nn_result_string(r), nn_context_last_error(ctx));
    status = 1;
done:
    ex_metrics_close(&log);
    nn_graph_destroy(ev); /* frees the test dataset */
    nn_graph_destroy(g);  /* and the training one */
    nn_context_destroy(ctx);
    fmnist_free(&train);
    fmnist_free(&test);
    return status;
}
