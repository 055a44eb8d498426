/* bench/cnn_block.h - examples/fashion_mnist_cnn.c's block, shared by the benchmarks that
   build its network (bench/nn_bench.c, bench/dist_bench.c, bench/ab_step_tu.c); included
   after nn.h. */
#ifndef BENCH_CNN_BLOCK_H
#define BENCH_CNN_BLOCK_H
#include <string.h>

/* conv 3x3 pad 1 -> batch norm -> ReLU -> 2x2 max pool, as in examples/fashion_mnist_cnn.c */
static nn_tensor cnn_block(nn_graph *g, nn_tensor x, int64_t channels, const char *conv, const char *bn) {
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

#endif
