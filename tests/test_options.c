/* Option validation: optimizer settings outside the ranges torch.optim accepts, or NaN,
   are refused by nn_graph_compile with a message naming the field and its value. */
#include "test.h"
#include <math.h>
#include <string.h>

static void expect_refused(const t_env *e, nn_optimizer o, const char *field) {
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_init init;
    nn_tensor w;
    nn_result r;
    memset(&init, 0, sizeof init);
    if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) return;
    w = nn_param(g, "w", nn_shape1(3), init);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, w, w));
    cd.optimizer = o;
    r = nn_graph_compile(g, &cd);
    T_CHECK(r == NN_ERR_INVALID_ARGUMENT, "%s: compile returned %d, not NN_ERR_INVALID_ARGUMENT", field, (int)r);
    T_CHECK(strstr(nn_context_last_error(e->ctx), field) != NULL, "%s: message \"%s\" does not name it", field,
            nn_context_last_error(e->ctx));
    nn_graph_destroy(g);
}

void suite_options(const t_env *e) {
    nn_optimizer o;
    if (!t_begin(e, "options: bad optimizer settings are refused by name")) return;
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_SGD;
    o.lr = -0.1f;
    expect_refused(e, o, "lr");
    o.lr = (float)NAN;
    expect_refused(e, o, "lr");
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_ADAM;
    o.beta1 = 1.0f;
    expect_refused(e, o, "beta1");
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_ADAM;
    o.beta2 = 1.5f;
    expect_refused(e, o, "beta2");
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_ADAMW;
    o.eps = -1e-8f;
    expect_refused(e, o, "eps");
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_SGD;
    o.weight_decay = -1e-4f;
    expect_refused(e, o, "weight_decay");
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_SGD;
    o.clip_norm = (float)NAN;
    expect_refused(e, o, "clip_norm");
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_SGD;
    o.momentum = -0.9f;
    expect_refused(e, o, "momentum");
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_ADADELTA;
    o.rho = 1.5f;
    expect_refused(e, o, "rho");
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_SGD;
    o.accumulate_steps = -2;
    expect_refused(e, o, "accumulate_steps");
    t_end();
    if (!t_begin(e, "options: bad enum values and overflowing pads are refused by name")) return;
    {
        nn_graph *g = NULL;
        nn_init init;
        nn_tensor x;
        if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
            memset(&init, 0, sizeof init);
            init.kind = (nn_init_kind)99;
            T_CHECK(nn_param(g, "w", nn_shape1(3), init).id < 0 && strstr(nn_context_last_error(e->ctx), "init kind 99"),
                    "init kind 99 accepted (%s)", nn_context_last_error(e->ctx));
        }
        nn_graph_destroy(g);
        g = NULL;
        if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
            x = nn_input(g, "x", NN_F32, nn_shape4(1, 1, 2, 2));
            T_CHECK(nn_pad2d(g, x, 1, 1, 1, 1, (nn_pad_mode)7).id < 0 && strstr(nn_context_last_error(e->ctx), "mode 7"),
                    "pad mode 7 accepted (%s)", nn_context_last_error(e->ctx));
        }
        nn_graph_destroy(g);
        g = NULL;
        if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
            x = nn_input(g, "x", NN_F32, nn_shape4(1, 1, 2, 2));
            T_CHECK(nn_upsample2d(g, x, 2, 2, (nn_upsample_mode)5).id < 0 && strstr(nn_context_last_error(e->ctx), "mode 5"),
                    "upsample mode 5 accepted (%s)", nn_context_last_error(e->ctx));
        }
        nn_graph_destroy(g);
        g = NULL;
        if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) { /* INT_MAX + INT_MAX overflowed an int */
            x = nn_input(g, "x", NN_F32, nn_shape4(1, 1, 2, 2));
            T_CHECK(nn_pad2d(g, x, 2147483647, 2147483647, 0, 0, NN_PAD_ZEROS).id < 0 && nn_graph_status(g) != NN_OK,
                    "pads of INT_MAX built a tensor");
        }
        nn_graph_destroy(g);
    }
    t_end();
}
