/* bench/models.h - the examples' networks as the benchmarks build them (bench/nn_bench.c,
   bench/dist_bench.c, bench/ab_step_tu.c): one copy of each (static inline: a file may use only some); included after nn.h. */
#ifndef BENCH_MODELS_H
#define BENCH_MODELS_H
#include <string.h>

/* conv 3x3 pad 1 -> batch norm -> ReLU -> 2x2 max pool, as in examples/fashion_mnist_cnn.c */
static inline nn_tensor cnn_block(nn_graph *g, nn_tensor x, int64_t channels, const char *conv, const char *bn) {
    nn_conv2d_desc cd;
    nn_pool2d_desc pd;
    memset(&cd, 0, sizeof cd);
    memset(&pd, 0, sizeof pd);
    cd.pad_h = cd.pad_w = 1;
    pd.kernel_h = pd.kernel_w = 2;
    x = nn_conv2d_layer(g, x, channels, 3, 3, &cd, conv);
    x = nn_relu(g, nn_batch_norm2d_layer(g, x, NULL, bn));
    return nn_max_pool2d(g, x, &pd);
}

/* softmax cross-entropy of logits against labels yb, its value and the accuracy accumulated
   (what the examples report an epoch); the loss */
static inline nn_tensor bench_head(nn_graph *g, nn_tensor logits, nn_tensor yb) {
    nn_tensor loss = nn_softmax_cross_entropy(g, logits, yb);
    nn_accumulate(g, loss);
    nn_accumulate(g, nn_accuracy(g, logits, yb));
    return loss;
}

/* examples/fashion_mnist_mlp.c's network on the batch's images xb [B, 784]: its loss */
static inline nn_tensor bench_mlp_loss(nn_graph *g, nn_tensor xb, nn_tensor yb) {
    nn_tensor h = nn_relu(g, nn_linear_layer(g, xb, 256, NULL, "fc1"));
    h = nn_relu(g, nn_linear_layer(g, h, 128, NULL, "fc2"));
    return bench_head(g, nn_linear_layer(g, h, 10, NULL, "fc3"), yb);
}

/* examples/fashion_mnist_cnn.c's network on the batch's images xb [B, 1, 28, 28]: its loss */
static inline nn_tensor bench_cnn_loss(nn_graph *g, nn_tensor xb, nn_tensor yb) {
    nn_tensor h = cnn_block(g, cnn_block(g, xb, 32, "conv1", "bn1"), 64, "conv2", "bn2");
    h = nn_dropout(g, nn_relu(g, nn_linear_layer(g, nn_flatten(g, h), 128, NULL, "fc1")), 0.25f);
    return bench_head(g, nn_linear_layer(g, h, 10, NULL, "fc2"), yb);
}

#endif
