/* Ownership: destroying a context invalidates its graphs. Their later calls fail with
   NN_ERR_STATE instead of touching freed memory, and nn_graph_destroy still frees them
   (the ASan run checks both), in either order and with shared parameters. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
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

/* The calls that reach no device after the context went: saving a graph's parameters
   returned NN_OK and wrote their initial values (the trained ones were gone with the
   device) on the CPU backend. Files, settings and counters of a compiled and of an
   uncompiled graph all fail with NN_ERR_STATE now, naming the call, and write no file. */
static void test_orphan_files(const t_env *e) {
    static const char *const calls[] = {"nn_graph_save_safetensors", "nn_graph_load_safetensors", "nn_graph_save_state", "nn_graph_load_state",
                                        "nn_graph_set_lr", "nn_graph_set_schedule", "nn_graph_skipped_steps",
                                        "nn_graph_loss_scale"};
    char dir[] = "/tmp/nn-test-lifetime-XXXXXX", st_path[300], state_path[300], out[300];
    nn_context_desc d;
    nn_context *ctx = NULL;
    nn_graph *g[2] = {NULL, NULL};
    nn_tensor x, y;
    nn_lr_schedule s;
    int64_t skipped;
    int k, c, made = 0;
    FILE *f;
    if (!t_begin(e, "lifetime: files and settings of a graph whose context went: NN_ERR_STATE")) return;
    t_context_desc(e, &d);
    d.log_level = NN_LOG_ERROR; /* not the warning that graphs outlive it */
    if (!T_CHECK((made = mkdtemp(dir) != NULL), "mkdtemp failed")) goto done;
    if (!T_CHECK(nn_context_create(&d, &ctx) == NN_OK, "cannot create a context on %s", e->backend)) goto done;
    g[0] = small_net(ctx, NULL, &x, &y); /* compiled */
    if (nn_graph_create(ctx, NULL, &g[1]) == NN_OK) nn_linear_layer(g[1], nn_input(g[1], "x", NN_F32, nn_shape2(3, 5)), 2, NULL, "fc1");
    if (!T_CHECK(g[0] && g[1], "cannot build the graphs: %s", nn_context_last_error(ctx))) goto done;
    snprintf(st_path, sizeof st_path, "%s/w.safetensors", dir);
    snprintf(state_path, sizeof state_path, "%s/s.safetensors", dir);
    T_OK(nn_graph_save_safetensors(g[0], st_path), ctx);
    T_OK(nn_graph_save_state(g[0], state_path), ctx);
    nn_context_destroy(ctx);
    memset(&s, 0, sizeof s);
    for (k = 0; k < 2; k++) {
        for (c = 0; c < (int)(sizeof calls / sizeof calls[0]); c++) {
            nn_result r = NN_OK;
            snprintf(out, sizeof out, "%s/out-%d-%d", dir, k, c);
            switch (c) {
            case 0: r = nn_graph_save_safetensors(g[k], out); break;
            case 1: r = nn_graph_load_safetensors(g[k], st_path, 0); break;
            case 2: r = nn_graph_save_state(g[k], out); break;
            case 3: r = nn_graph_load_state(g[k], state_path); break;
            case 4: r = nn_graph_set_lr(g[k], 0.5f); break;
            case 5: r = nn_graph_set_schedule(g[k], &s); break;
            case 6: r = nn_graph_skipped_steps(g[k], &skipped); break;
            default: r = nn_graph_loss_scale(g[k], NULL, &skipped); break;
            }
            T_CHECK(r == NN_ERR_STATE, "%s on the %s graph after nn_context_destroy gave %d, not %d (NN_ERR_STATE)",
                    calls[c], k ? "uncompiled" : "compiled", (int)r, (int)NN_ERR_STATE);
            T_CHECK(strstr(nn_context_last_error(ctx), calls[c]) && strstr(nn_context_last_error(ctx), "context was destroyed"),
                    "%s: the message \"%s\" does not name the call and why", calls[c], nn_context_last_error(ctx));
            if ((f = fopen(out, "rb")) != NULL) {
                fclose(f);
                T_CHECK(0, "%s wrote %s after the context went", calls[c], out);
            }
        }
    }
done:
    nn_graph_destroy(g[0]);
    nn_graph_destroy(g[1]);
    if (made) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
    }
    t_end();
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
        t_context_desc(e, &d); /* e's device and tuning */
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
    test_orphan_files(e);
}
