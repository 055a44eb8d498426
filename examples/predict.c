/* predict.c - classifies with a model file alone: no model code. The file is one that
   nn_model_save wrote (examples/fashion_mnist_mlp.c writes fashion_mnist_mlp.safetensors at
   its end, examples/fashion_mnist_cnn.c fashion_mnist_cnn.safetensors): the weights, and the architecture as JSON in the safetensors metadata, which
   nn_model_load builds into an inference graph.

   Build (from the repository root):  make examples/predict
   or:  cc -O2 -I. examples/predict.c -o examples/predict -lz -lm -lpthread   (-DFMNIST_NO_ZLIB: no zlib)
   Run:
       ./examples/predict [MODEL] [DATA_DIR | FILE.csv]
   MODEL defaults to fashion_mnist_mlp.safetensors. With DATA_DIR (or none: the folders
   fashion_mnist_mlp searches), the Fashion-MNIST test set, scaled as the MLP example scales
   it, and the accuracy against its labels. With FILE.csv, each row is one sample's inputs as
   the model takes them (784 for the MLP and the CNN), or a label first and then the inputs: it prints
   each row's class, and the accuracy when there are labels. The last line is
       RESULT model=... rows=... test_accuracy=...   (accuracy only with labels) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime (fashion_mnist.h) */
#define NN_IMPLEMENTATION
#include "nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fashion_mnist.h"

static int is_csv(const char *s) {
    size_t n = s ? strlen(s) : 0;
    return n > 4 && strcmp(s + n - 4, ".csv") == 0;
}

int main(int argc, char **argv) {
    const char *model = argc > 1 ? argv[1] : "fashion_mnist_mlp.safetensors", *data = argc > 2 ? argv[2] : NULL;
    fmnist_dataset test = {0, NULL, NULL};
    nn_array csv = {NN_F32, {0, {0}}, NULL};
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_model_desc md;
    nn_tensor x = NN_NONE, y = NN_NONE;
    nn_result r = NN_OK;
    float *feat = NULL, *logits = NULL;
    int32_t *labels = NULL;
    int64_t rows = 0, cols = 0, per_row = 0, classes = 0, correct = 0, i, k;
    int status = 1;

    if ((r = nn_context_create(NULL, &ctx)) != NN_OK) {
        fprintf(stderr, "predict: nn_context_create: %s\n", nn_result_string(r));
        return 1;
    }
    if (is_csv(data)) { /* rows of inputs, or of a label and inputs */
        if ((r = nn_array_load_csv(ctx, data, NULL, &csv)) != NN_OK) goto fail;
        rows = csv.shape.dim[0];
        cols = csv.shape.dim[1];
        feat = (float *)csv.data;
    } else { /* the Fashion-MNIST test set */
        const char *dir = fmnist_find_dir(data);
        if (!dir || !fmnist_load_split(dir, "t10k", &test)) goto done;
        rows = test.n;
        cols = FMNIST_IMG;
        feat = test.x;
        labels = test.y;
    }

    /* The model: its graph, built from the file for a batch of every row, and its weights. */
    memset(&md, 0, sizeof md);
    md.batch = rows;
    md.input = &x;
    md.output = &y;
    if ((r = nn_model_load(ctx, model, &md, &g)) != NN_OK) goto fail;
    nn_tensor_numel(g, x, &per_row);
    nn_tensor_numel(g, y, &classes);
    per_row /= rows;
    classes /= rows;

    if (csv.data && per_row == cols - 1) { /* the first column is the label */
        labels = (int32_t *)malloc((size_t)rows * sizeof *labels);
        if (!labels) goto done;
        for (i = 0; i < rows; i++) {
            labels[i] = (int32_t)feat[i * cols];
            memmove(feat + i * per_row, feat + i * cols + 1, (size_t)per_row * sizeof *feat);
        }
    } else if (per_row != cols) {
        fprintf(stderr, "predict: the model takes %lld inputs a row; %s has %lld columns\n", (long long)per_row,
                data ? data : "the data", (long long)cols);
        goto done;
    }
    logits = (float *)malloc((size_t)(rows * classes) * sizeof *logits);
    if (!logits) goto done;
    if ((r = nn_tensor_write(g, x, feat, (size_t)(rows * per_row) * sizeof *feat)) != NN_OK ||
        (r = nn_graph_forward(g)) != NN_OK ||
        (r = nn_tensor_read(g, y, logits, (size_t)(rows * classes) * sizeof *logits)) != NN_OK)
        goto fail;

    /* The class of each row: its largest output (the first of equals, as torch.argmax). */
    for (i = 0; i < rows; i++) {
        const float *l = logits + i * classes;
        int64_t best = 0;
        for (k = 1; k < classes; k++)
            if (l[k] > l[best]) best = k;
        if (labels) correct += best == labels[i];
        else printf("%lld\n", (long long)best);
    }
    if (labels)
        printf("RESULT model=%s rows=%lld test_accuracy=%.4f\n", model, (long long)rows, (double)correct / (double)rows);
    else
        printf("RESULT model=%s rows=%lld\n", model, (long long)rows);
    status = 0;
    goto done;

fail:
    fprintf(stderr, "predict: %s: %s\n", nn_result_string(r), nn_context_last_error(ctx));
done:
    if (csv.data && labels) free(labels);
    free(logits);
    nn_array_free(&csv);
    fmnist_free(&test);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return status;
}
