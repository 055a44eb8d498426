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
   NN_DEVICE picks the backend. Environment:
       CKPT=path      save the training state there after every epoch (safetensors:
                      parameters, Adam's state, the step, the dataset's epoch and position)
                      and, when the file exists at the start, resume from it (unset or
                      empty: no checkpoint)
       METRICS=path   write a CSV log (epoch, train_loss, train_acc, test_acc, seconds);
                      tools/plot_metrics draws it as an SVG
       PROGRESS=0     no progress line (examples/progress.h; stderr)
       PRECISION=bf16|fp16|fp32  the graphs' precision policy (nn_graph_desc.precision:
                      matmuls in 16 bits, float32 parameters); default fp32; in the RESULT line;
                      (bf16 and fp16 save no model file: it holds layers, not conversions)

   The pieces of the API it shows, in order:
     - nn_dataset_create: the training set lives on the device ([60000, 784] float32 images
       and [60000] int32 labels, written once); nn_dataset_next_batch shuffles each epoch and
       writes one batch's 128 indices (512 bytes, the only transfer of a step), and the
       batch's rows are gathered on the device (nn_dataset_x, nn_dataset_y).
     - the learning-rate schedule in the compile desc: cosine from 2e-3 at the first step to
       1e-5 at the last (PyTorch's CosineAnnealingLR with T_max = steps - 1), applied on the
       device with no transfer.
     - nn_accumulate: the running sums of loss and accuracy stay on the device and are read
       once per epoch (and by the progress line, at most twice a second).
     - an evaluation graph that shares the parameters (share_params, eval): the whole test
       set in one forward pass.
     - nn_graph_save_state / nn_graph_load_state: checkpoint and exact resume.
   The last line is machine-readable:
       RESULT device=... precision=... epochs=... test_accuracy=... samples_per_sec=... ... */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty */
#define NN_IMPLEMENTATION
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fashion_mnist.h" /* IDX loading, the data folder */
#include "progress.h"      /* the progress line, the metrics log */

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

int main(int argc, char **argv) {
    const char *dir = NULL, *env = getenv("EPOCHS"), *ckpt = getenv("CKPT");
    fmnist_dataset train = {0, NULL, NULL}, test = {0, NULL, NULL};
    nn_array xs, ys;
    nn_context *ctx = NULL;
    nn_graph *g = NULL, *ev = NULL;
    nn_dataset *ds = NULL;
    nn_dataset_desc dd = {0};
    nn_graph_desc gd = {0}, ed = {0};
    nn_compile_desc cd = {0}, ecd = {0};
    nn_tensor xb, yb, logits, loss, loss_sum, acc_sum, x_test, y_test, test_acc;
    nn_result r = NN_OK;
    ex_metrics log = {NULL, 0};
    int epochs = 10, first_epoch = 1, epoch, step, steps, uploaded = 0, status = 1;
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

    /* The training graph. The dataset's inputs (train.x, train.y, train.idx) and the gathers
       of a batch's rows are built into g; the data is copied now and written to the device
       at the first batch. */
    gd.seed = 1;
    gd.precision = (nn_precision)precision;
    if ((r = nn_graph_create(ctx, &gd, &g)) != NN_OK) goto fail;
    xs.dtype = NN_F32;
    xs.shape = nn_shape2(train.n, IMG);
    xs.data = train.x;
    ys.dtype = NN_I32;
    ys.shape = nn_shape1(train.n);
    ys.data = train.y;
    dd.name = "train";
    dd.x = &xs;
    dd.y = &ys;
    dd.batch = BATCH;
    dd.shuffle = 1; /* a new order each epoch, drawn from the graph's seed */
    dd.drop_last = 1; /* a graph of one batch size: the last partial batch is dropped */
    if ((r = nn_dataset_create(g, &dd, &ds)) != NN_OK) goto fail;
    xb = nn_dataset_x(ds); /* [128, 784] */
    yb = nn_dataset_y(ds); /* [128] */
    logits = mlp(g, xb);
    loss = nn_softmax_cross_entropy(g, logits, yb);
    loss_sum = nn_accumulate(g, loss);                          /* sum of batch losses */
    acc_sum = nn_accumulate(g, nn_accuracy(g, logits, yb));     /* sum of batch accuracies */
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = LR_MAX;
    cd.schedule.kind = NN_LR_COSINE; /* lr at update t: cosine from LR_MAX (t = 0) to min_lr */
    cd.schedule.total_steps = epochs * steps - 1 > 0 ? epochs * steps - 1 : 1; /* min_lr at the last */
    cd.schedule.min_lr = (float)LR_MIN;
    if ((r = nn_graph_compile(g, &cd)) != NN_OK) goto fail;
    nn_graph_summary(g, stdout); /* ops, parameters and the memory plan's bytes by kind */
#ifdef NN_MPI
    { /* data-parallel: each rank takes every size-th batch of the epoch */
        int size = 1;
        if (nn_dist_size(&size) == NN_OK && size > 1) steps /= size;
    }
#endif

    /* The evaluation graph: the same parameters, the whole test set as one forward pass. */
    ed.share_params = g;
    ed.precision = gd.precision;
    ed.eval = 1;
    if ((r = nn_graph_create(ctx, &ed, &ev)) != NN_OK) goto fail;
    x_test = nn_input(ev, "x_test", NN_F32, nn_shape2(test.n, IMG));
    y_test = nn_input(ev, "y_test", NN_I32, nn_shape1(test.n));
    test_acc = nn_accumulate(ev, nn_accuracy(ev, mlp(ev, x_test), y_test));
    if ((r = nn_graph_compile(ev, &ecd)) != NN_OK) goto fail;
    if ((r = nn_tensor_write(ev, x_test, test.x, (size_t)test.n * IMG * sizeof(float))) != NN_OK ||
        (r = nn_tensor_write(ev, y_test, test.y, (size_t)test.n * sizeof(int32_t))) != NN_OK)
        goto fail;

    /* Resume: the saved state holds the parameters, Adam's moments, the update count (so the
       schedule goes on where it was) and the dataset's epoch and position. */
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
            /* The step's only transfer: the batch's 128 indices into the resident dataset.
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

        /* Once per epoch: read the running sums, then the test accuracy. */
        if ((r = nn_tensor_read(g, loss_sum, &lsum, sizeof lsum)) != NN_OK ||
            (r = nn_tensor_read(g, acc_sum, &asum, sizeof asum)) != NN_OK || (r = nn_graph_forward(ev)) != NN_OK ||
            (r = nn_tensor_read(ev, test_acc, &tacc, sizeof tacc)) != NN_OK)
            goto fail;
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
        const char *out = getenv("MODEL_OUT") ? getenv("MODEL_OUT") : "fashion_mnist_mlp.safetensors";
        if ((r = nn_model_save(g, xb, logits, out)) != NN_OK) goto fail;
        printf("saved %s (./examples/predict %s)\n", out, out);
    }
    goto done;

fail:
    fprintf(stderr, "fashion_mnist: %s: %s\n", nn_result_string(r), nn_context_last_error(ctx));
    status = 1;
done:
    ex_metrics_close(&log);
    nn_graph_destroy(ev);
    nn_graph_destroy(g); /* frees the dataset too */
    nn_context_destroy(ctx);
    fmnist_free(&train);
    fmnist_free(&test);
    return status;
}
