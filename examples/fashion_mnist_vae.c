/* fashion_mnist_vae.c - a variational autoencoder (Kingma & Welling) on Fashion-MNIST,
   the model of PyTorch's VAE example, trained on the device.

   Build (from the repository root, after `make nn.h`):
       cc -O2 -I. examples/fashion_mnist_vae.c -o examples/fashion_mnist_vae -lz -lm -lpthread
   or, without zlib (reads uncompressed IDX files only):
       cc -O2 -I. -DFMNIST_NO_ZLIB examples/fashion_mnist_vae.c -o examples/fashion_mnist_vae -lm -lpthread
   (add -DNN_NO_OPENCL for the CPU alone).
   Run:
       ./examples/fashion_mnist_vae [DATA_DIR] [EPOCHS]
   DATA_DIR and the dataset's files as for examples/fashion_mnist_mlp.c (the loading code is
   examples/fashion_mnist.h); EPOCHS (default 10) can also come from $EPOCHS; NN_DEVICE
   picks the backend.

   The model (PyTorch's names):
       encoder  fc1 Linear(784, 400) -> ReLU -> fc21 Linear(400, 20) = mu
                                              -> fc22 Linear(400, 20) = logvar
       sample   z = mu + exp(0.5 * logvar) * eps, eps = nn_randn [B, 20] (the
                reparameterisation trick: eps is drawn afresh every step from the graph's
                seed, and the gradient flows to mu and logvar through z)
       decoder  fc3 Linear(20, 400) -> ReLU -> fc4 Linear(400, 784) = logits of the pixels
   Pixels are in [0, 1] (the loader's normalisation undone). The loss is the negative ELBO
   per sample: (BCE(sigmoid(logits), x) summed over the pixels and the batch
   + KL(q(z|x) || N(0, I)) = -0.5 * sum(1 + logvar - mu^2 - exp(logvar))) / B, with
   nn_bce_with_logits_loss (sum reduction) for the stable form of sigmoid + BCE.
   Training: Adam, lr 1e-3, batch 128, the last partial batch dropped.

   Evaluation: a graph sharing the parameters (share_params, eval = 1) scores the whole test
   set in one forward, two ways: test_neg_elbo samples z as training does (eval mode leaves
   random ops as they are, and PyTorch's example samples in its test loss too; forwards do
   not advance the step, so every epoch's evaluation draws the same eps), and
   test_neg_elbo_zmu puts z = mu (a deterministic reconstruction term, the same KL). Both
   are averages per test sample; train_neg_elbo is the average over the epoch's steps, taken
   while training (as PyTorch's example reports it).
   The last line is machine-readable:
       RESULT device=... epochs=... train_neg_elbo=... test_neg_elbo=... samples_per_sec=...
   A progress line runs on stderr during an epoch (PROGRESS=0: none); METRICS=path writes a
   CSV log that tools/plot_metrics draws (examples/progress.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty */
#define NN_IMPLEMENTATION
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fashion_mnist.h" /* IDX loading, the data folder, shuffle, clock */
#include "progress.h"      /* the progress line, the metrics log */

#define BATCH 128
#define IMG FMNIST_IMG
#define HIDDEN 400
#define LATENT 20
#define LR 1e-3f

/* ---- the model ------------------------------------------------------------------------- */

typedef struct vae_out {
    nn_tensor loss_sum; /* BCE + KL summed over the rows (a scalar): the negative ELBO of the batch */
    nn_tensor loss_sum_zmu; /* the same with z = mu (NN_NONE unless asked) */
} vae_out;

/* KL(N(mu, exp(logvar)) || N(0, I)) summed over rows and latents: a scalar. */
static nn_tensor kl_sum(nn_graph *g, nn_tensor mu, nn_tensor logvar) {
    nn_tensor t = nn_sub(g, nn_sub(g, nn_add_scalar(g, logvar, 1.0f), nn_square(g, mu)), nn_exp(g, logvar));
    return nn_mul_scalar(g, nn_sum(g, t), -0.5f);
}

static nn_tensor decode(nn_graph *g, nn_tensor z) {
    nn_tensor h = nn_relu(g, nn_linear_layer(g, z, HIDDEN, NULL, "fc3"));
    return nn_linear_layer(g, h, IMG, NULL, "fc4"); /* logits; sigmoid gives the pixel means */
}

/* Both graphs call this; the second (share_params) finds fc1..fc4 by name. x [rows, 784] in
   [0, 1]. with_zmu: also the loss with z = mu (the decoder applied a second time). */
static vae_out vae(nn_graph *g, nn_tensor x, int64_t rows, int with_zmu) {
    nn_loss_desc sum;
    nn_tensor h = nn_relu(g, nn_linear_layer(g, x, HIDDEN, NULL, "fc1"));
    nn_tensor mu = nn_linear_layer(g, h, LATENT, NULL, "fc21");
    nn_tensor logvar = nn_linear_layer(g, h, LATENT, NULL, "fc22");
    nn_tensor eps = nn_randn(g, nn_shape2(rows, LATENT));
    nn_tensor z = nn_add(g, mu, nn_mul(g, nn_exp(g, nn_mul_scalar(g, logvar, 0.5f)), eps));
    nn_tensor kl = kl_sum(g, mu, logvar);
    vae_out o;
    memset(&sum, 0, sizeof sum); /* PyTorch's defaults, */
    sum.reduction = NN_REDUCTION_SUM; /* but summed */
    o.loss_sum = nn_add(g, nn_bce_with_logits_loss(g, decode(g, z), x, &sum), kl);
    o.loss_sum_zmu = with_zmu ? nn_add(g, nn_bce_with_logits_loss(g, decode(g, mu), x, &sum), kl) : NN_NONE;
    return o;
}

/* The loader gives (p/255 - FMNIST_MEAN) / FMNIST_STD; the VAE's targets are p/255. */
static void to_unit_range(fmnist_dataset *ds) {
    size_t i, n = (size_t)ds->n * IMG;
    for (i = 0; i < n; i++) {
        float v = ds->x[i] * FMNIST_STD + FMNIST_MEAN;
        ds->x[i] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
}

int main(int argc, char **argv) {
    const char *dir = NULL, *env = getenv("EPOCHS");
    fmnist_dataset train = {0, NULL, NULL}, test = {0, NULL, NULL};
    nn_context *ctx = NULL;
    nn_graph *g = NULL, *ev = NULL;
    nn_graph_desc gd = {0}, ed = {0};
    nn_compile_desc cd = {0}, ecd = {0};
    nn_tensor x_all, idx, xb, loss, loss_acc, x_test, test_acc, test_acc_zmu;
    vae_out tr, te;
    nn_result r = NN_OK;
    int32_t *perm = NULL;
    int epochs = 10, epoch, step, steps, status = 1;
    double train_secs = 0.0, last_train = 0.0, last_test = 0.0, last_test_zmu = 0.0;
    uint64_t measured_steps = 0;
    char devname[256];
    ex_metrics log = {NULL, 0};

    if (argc > 2) epochs = atoi(argv[2]);
    else if (env) epochs = atoi(env);
    if (epochs < 1) {
        fprintf(stderr, "usage: %s [DATA_DIR] [EPOCHS >= 1]\n", argv[0]);
        return 2;
    }
    dir = fmnist_find_dir(argc > 1 ? argv[1] : NULL); /* "" means: search */
    if (!dir) return 1;
    if (!fmnist_load_split(dir, "train", &train) || !fmnist_load_split(dir, "t10k", &test)) goto done;
    to_unit_range(&train);
    to_unit_range(&test);
    printf("data: %s: %ld training, %ld test examples\n", dir, (long)train.n, (long)test.n);
    steps = (int)(train.n / BATCH); /* the last partial batch is dropped */
    perm = (int32_t *)malloc((size_t)train.n * sizeof(int32_t));
    if (!perm || steps < 1) {
        fprintf(stderr, "fashion_mnist_vae: out of memory or fewer than %d examples\n", BATCH);
        goto done;
    }

    r = nn_context_create(NULL, &ctx);
    if (r != NN_OK) {
        fprintf(stderr, "fashion_mnist_vae: nn_context_create: %s\n", nn_result_string(r));
        goto done;
    }
    {
        nn_device_info dev; /* the device the context runs on, with its backend */
        nn_context_device(ctx, &dev);
        fmnist_device_name(dev.name, devname, sizeof devname);
        printf("backend: %s\n", dev.name);
    }

    /* The training graph: the batch is gathered on the device from the resident images. */
    gd.seed = 1;
    if ((r = nn_graph_create(ctx, &gd, &g)) != NN_OK) goto fail;
    x_all = nn_input(g, "x_all", NN_F32, nn_shape2(train.n, IMG));
    idx = nn_input(g, "idx", NN_I32, nn_shape1(BATCH));
    xb = nn_gather_rows(g, x_all, idx);
    tr = vae(g, xb, BATCH, 0);
    loss = nn_mul_scalar(g, tr.loss_sum, 1.0f / BATCH); /* per sample, as the gradient's scale */
    loss_acc = nn_accumulate(g, tr.loss_sum);      /* the epoch's sum over its samples */
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = LR;
    if ((r = nn_graph_compile(g, &cd)) != NN_OK) goto fail;

    /* The evaluation graph: the same parameters, the whole test set as one forward. */
    ed.share_params = g;
    ed.eval = 1;
    ed.seed = 2;
    if ((r = nn_graph_create(ctx, &ed, &ev)) != NN_OK) goto fail;
    /* it applies the decoder twice (z sampled, z = mu): fc3 and fc4 are each one layer used
       twice, which a name given twice is only when asked for */
    if ((r = nn_graph_share_names(ev, 1)) != NN_OK) goto fail;
    x_test = nn_input(ev, "x_test", NN_F32, nn_shape2(test.n, IMG));
    te = vae(ev, x_test, test.n, 1);
    test_acc = nn_accumulate(ev, te.loss_sum);
    test_acc_zmu = nn_accumulate(ev, te.loss_sum_zmu);
    if ((r = nn_graph_compile(ev, &ecd)) != NN_OK) goto fail;

    /* Upload both image sets once. */
    if ((r = nn_tensor_write(g, x_all, train.x, (size_t)train.n * IMG * sizeof(float))) != NN_OK ||
        (r = nn_tensor_write(ev, x_test, test.x, (size_t)test.n * IMG * sizeof(float))) != NN_OK)
        goto fail;

    if (!ex_metrics_open(&log, "epoch,train_neg_elbo,test_neg_elbo,test_neg_elbo_zmu,seconds")) goto done;
    printf("epoch  train_neg_elbo  test_neg_elbo  test_neg_elbo_zmu  seconds  samples/s\n");
    for (epoch = 1; epoch <= epochs; epoch++) {
        float lsum = 0.0f, tsum = 0.0f, tsum_zmu = 0.0f;
        double t0, secs;
        ex_progress bar;
        char label[32];

        fmnist_shuffle(perm, train.n, 12345u + (uint64_t)epoch);
        if ((r = nn_tensor_fill(g, loss_acc, 0.0f)) != NN_OK || (r = nn_tensor_fill(ev, test_acc, 0.0f)) != NN_OK ||
            (r = nn_tensor_fill(ev, test_acc_zmu, 0.0f)) != NN_OK || (r = nn_graph_finish(g)) != NN_OK)
            goto fail;

        snprintf(label, sizeof label, "epoch %d/%d", epoch, epochs);
        ex_progress_begin(&bar, label, steps, BATCH, "samples");
        t0 = fmnist_now();
        for (step = 0; step < steps; step++) {
            const int32_t *bi = perm + (size_t)step * BATCH; /* the step's only transfer */
            if ((r = nn_tensor_write(g, idx, bi, BATCH * sizeof(int32_t))) != NN_OK || (r = nn_graph_step(g)) != NN_OK)
                goto fail;
            if (ex_progress_due(&bar, step + 1)) { /* the running mean -ELBO per sample: 4 bytes */
                if ((r = nn_tensor_read(g, loss_acc, &lsum, sizeof lsum)) != NN_OK) goto fail;
                ex_progress_show(&bar, step + 1, (double)lsum / ((double)(step + 1) * BATCH));
            }
        }
        if ((r = nn_graph_finish(g)) != NN_OK) goto fail;
        secs = fmnist_now() - t0;
        ex_progress_end(&bar);
        train_secs += secs;
        measured_steps += (uint64_t)steps;

        if ((r = nn_tensor_read(g, loss_acc, &lsum, sizeof lsum)) != NN_OK || (r = nn_graph_forward(ev)) != NN_OK ||
            (r = nn_tensor_read(ev, test_acc, &tsum, sizeof tsum)) != NN_OK ||
            (r = nn_tensor_read(ev, test_acc_zmu, &tsum_zmu, sizeof tsum_zmu)) != NN_OK)
            goto fail;
        last_train = (double)lsum / ((double)steps * BATCH);
        last_test = (double)tsum / (double)test.n;
        last_test_zmu = (double)tsum_zmu / (double)test.n;
        printf("%5d  %14.4f  %13.4f  %17.4f  %7.2f  %9.0f\n", epoch, last_train, last_test, last_test_zmu, secs,
               steps * BATCH / secs);
        fflush(stdout);
        {
            double row[5];
            row[0] = epoch, row[1] = last_train, row[2] = last_test, row[3] = last_test_zmu, row[4] = train_secs;
            ex_metrics_row(&log, row);
        }
    }
    if (!(last_train == last_train) || !(last_test == last_test)) {
        fprintf(stderr, "fashion_mnist_vae: the loss is not a number\n");
        goto done;
    }
    status = 0;
    printf("RESULT device=%s epochs=%d train_neg_elbo=%.4f test_neg_elbo=%.4f test_neg_elbo_zmu=%.4f "
           "samples_per_sec=%.0f\n",
           devname, epochs, last_train, last_test, last_test_zmu, (double)measured_steps * BATCH / train_secs);
    goto done;

fail:
    fprintf(stderr, "fashion_mnist_vae: %s: %s\n", nn_result_string(r), nn_context_last_error(ctx));
    status = 1;
done:
    ex_metrics_close(&log);
    nn_graph_destroy(ev);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    free(perm);
    fmnist_free(&train);
    fmnist_free(&test);
    return status;
}
