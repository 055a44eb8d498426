/* xor.c - the smallest complete nn.h program: a 2-8-1 MLP learns XOR.

   Build and run (from the repository root, after `make nn.h`):
       cc -O2 -I. examples/xor.c -o examples/xor -lm -lpthread
       ./examples/xor                 (NN_DEVICE=cpu or NN_DEVICE=opencl picks the backend)

   It prints the loss every 100 steps and the four predictions at the end, and exits with
   status 1 if the network did not learn XOR. */
#define NN_IMPLEMENTATION
#include "nn.h"

#include <stdio.h>

#define STEPS 1000
#define PRINT_EVERY 100

int main(void) {
    /* The whole truth table is one batch of 4: inputs [4, 2], targets [4, 1]. */
    static const float xs[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
    static const float ys[4][1] = {{0}, {1}, {1}, {0}};
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_tensor x, y, logits, prob, loss;
    nn_compile_desc cd = {0};
    nn_graph_desc gd = {0};
    nn_result r;
    float l = 0.0f, p[4];
    int step, i, wrong = 0, status = 1;

    /* A context is one backend ($NN_DEVICE: cpu, opencl, a device index or name). */
    r = nn_context_create(NULL, &ctx);
    if (r != NN_OK) {
        fprintf(stderr, "xor: nn_context_create: %s\n", nn_result_string(r));
        return 1;
    }
    {
        nn_device_info dev; /* the device the context runs on, with its backend */
        nn_context_device(ctx, &dev);
        printf("backend: %s\n", dev.name);
    }

    gd.seed = 42; /* parameter initialisation */
    r = nn_graph_create(ctx, &gd, &g);
    if (r != NN_OK) goto fail;

    /* The network: x -> dense(8) -> tanh -> dense(1) = logits. Ops never fail loudly here;
       a bad shape makes a failed tensor and nn_graph_compile() reports the first error. */
    x = nn_input(g, "x", NN_F32, nn_shape2(4, 2));
    y = nn_input(g, "y", NN_F32, nn_shape2(4, 1));
    logits = nn_linear_layer(g, nn_tanh(g, nn_linear_layer(g, x, 8, NULL, "fc1")), 1, NULL, "fc2");
    loss = nn_bce_with_logits(g, logits, y);
    prob = nn_sigmoid(g, logits);
    nn_graph_output(g, loss); /* keep both readable after a step */
    nn_graph_output(g, prob);

    /* Compiling adds the backward pass and the Adam update (lr 0.05). */
    cd.loss = loss;
    cd.optimizer.kind = NN_OPT_ADAM;
    cd.optimizer.lr = 0.05f;
    r = nn_graph_compile(g, &cd);
    if (r != NN_OK) goto fail;

    /* Inputs stay on the device until written again: write the data once. */
    r = nn_tensor_write(g, x, xs, sizeof xs);
    if (r == NN_OK) r = nn_tensor_write(g, y, ys, sizeof ys);
    if (r != NN_OK) goto fail;

    for (step = 1; step <= STEPS; step++) {
        r = nn_graph_step(g); /* forward, backward, update: no transfers */
        if (r != NN_OK) goto fail;
        if (step % PRINT_EVERY == 0) {
            r = nn_tensor_read(g, loss, &l, sizeof l); /* the only read: 4 bytes */
            if (r != NN_OK) goto fail;
            printf("step %4d  loss %.6f\n", step, l);
        }
    }

    /* prob holds the sigmoid of the last step's forward pass (before its update). Run one
       more forward pass so the predictions reflect the final parameters. */
    r = nn_graph_forward(g);
    if (r == NN_OK) r = nn_tensor_read(g, prob, p, sizeof p);
    if (r != NN_OK) goto fail;
    for (i = 0; i < 4; i++) {
        int ok = (p[i] > 0.5f) == (ys[i][0] > 0.5f);
        wrong += !ok;
        printf("%g xor %g -> %.4f (want %g)%s\n", xs[i][0], xs[i][1], p[i], ys[i][0], ok ? "" : "  WRONG");
    }
    status = (wrong == 0 && l < 0.1f) ? 0 : 1;
    printf(status == 0 ? "learned XOR\n" : "did NOT learn XOR\n");
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return status;

fail:
    fprintf(stderr, "xor: %s: %s\n", nn_result_string(r), nn_context_last_error(ctx));
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return 1;
}
