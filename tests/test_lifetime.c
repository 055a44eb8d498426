/* Ownership: destroying a context invalidates its graphs. Their later calls fail with
   NN_ERR_STATE instead of touching freed memory, and nn_graph_destroy still frees them
   (the ASan run checks both), in either order and with shared parameters. */
#include "test.h"
#include <string.h>

static nn_graph *small_net(nn_context *ctx, nn_graph *share, nn_tensor *x_out, nn_tensor *y_out) {
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor x, y;
    memset(&gd, 0, sizeof gd);
    gd.share_params = share;
    if (nn_graph_create(ctx, &gd, &g) != NN_OK) return NULL;
    x = nn_input(g, "x", NN_F32, nn_shape2(3, 5));
    y = nn_linear_layer(g, nn_relu(g, nn_linear_layer(g, x, 7, NULL, "fc1")), 2, NULL, "fc2");
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mean(g, nn_mul(g, y, y));
    cd.optimizer.kind = NN_OPT_SGD;
    cd.optimizer.lr = 0.1f;
    nn_graph_output(g, y);
    if (nn_graph_compile(g, &cd) != NN_OK) {
        nn_graph_destroy(g);
        return NULL;
    }
    *x_out = x;
    *y_out = y;
    return g;
}

void suite_lifetime(const t_env *e) {
    int order;
    for (order = 0; order < 2; order++) {
        nn_context_desc d;
        nn_context *ctx = NULL;
        nn_graph *g1, *g2;
        nn_tensor x1, y1, x2, y2;
        float xs[15], ys[6];
        int i;
        if (!t_begin(e, order ? "lifetime: graphs destroyed after their context, shared parameters, other order"
                              : "lifetime: graphs destroyed after their context, shared parameters"))
            continue;
        memset(&d, 0, sizeof d);
        d.device = e->device ? e->device : "cpu";
        d.log_level = NN_LOG_ERROR;
        if (!T_CHECK(nn_context_create(&d, &ctx) == NN_OK, "cannot create a context on %s", d.device)) {
            t_end();
            continue;
        }
        for (i = 0; i < 15; i++) xs[i] = (float)(i % 4) - 1.5f;
        g1 = small_net(ctx, NULL, &x1, &y1);
        g2 = g1 ? small_net(ctx, g1, &x2, &y2) : NULL;
        if (T_CHECK(g1 && g2, "cannot build the graphs: %s", nn_context_last_error(ctx))) {
            T_OK(nn_tensor_write(g1, x1, xs, sizeof xs), ctx);
            T_OK(nn_graph_step(g1), ctx);
            T_OK(nn_tensor_write(g2, x2, xs, sizeof xs), ctx);
            T_OK(nn_graph_forward(g2), ctx);
        }
        nn_context_destroy(ctx);
        if (g1 && g2) {
            T_CHECK(nn_graph_step(g1) == NN_ERR_STATE, "a step ran on a graph whose context was destroyed");
            T_CHECK(nn_graph_forward(g2) == NN_ERR_STATE, "a forward pass ran on a graph whose context was destroyed");
            T_CHECK(nn_tensor_read(g1, y1, ys, sizeof ys) == NN_ERR_STATE, "a read succeeded after the context went");
            T_CHECK(nn_tensor_write(g2, x2, xs, sizeof xs) == NN_ERR_STATE, "a write succeeded after the context went");
            T_CHECK(nn_graph_compile(g1, NULL) != NN_OK, "a graph compiled again after its context went");
            T_CHECK(nn_graph_finish(g2) == NN_ERR_STATE, "finish succeeded after the context went");
        }
        if (order) {
            nn_graph_destroy(g2);
            nn_graph_destroy(g1);
        } else {
            nn_graph_destroy(g1);
            nn_graph_destroy(g2);
        }
        t_end();
    }
}
