/* Shapes at the limits: a tensor holds at most 2^31 - 1 elements (kernels and loops use
   32-bit indices), so larger shapes are refused when built, with the op and the shape in
   the message, before anything is allocated; arithmetic on sizes never wraps. */
#include "test.h"
#include <stdint.h>
#include <string.h>
#include <time.h>

static void expect_refused(const t_env *e, const char *name, nn_graph *g, nn_tensor t, const char *needle) {
    const char *msg = nn_context_last_error(e->ctx);
    T_CHECK(t.id < 0, "%s: built a tensor (id %d)", name, t.id);
    T_CHECK(nn_graph_status(g) == NN_ERR_SHAPE, "%s: status %d, not NN_ERR_SHAPE", name, (int)nn_graph_status(g));
    T_CHECK(strstr(msg, needle) != NULL, "%s: message \"%s\" does not name %s", name, msg, needle);
}

void suite_limits(const t_env *e) {
    nn_graph *g = NULL;
    nn_tensor x, t;
    nn_shape s;
    clock_t c0;
    if (!t_begin(e, "limits: oversized shapes are refused when built")) return;
    /* [2^40, 2^24] has 2^64 elements: an int64 product wraps to 0 */
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        s = nn_shape2((int64_t)1 << 40, (int64_t)1 << 24);
        expect_refused(e, "nn_input [2^40, 2^24]", g, nn_input(g, "x", NN_F32, s), "nn_input");
    }
    nn_graph_destroy(g);
    g = NULL;
    /* a matmul whose output has 2^32 elements */
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        nn_tensor a = nn_input(g, "a", NN_F32, nn_shape2(65536, 1)), b = nn_input(g, "b", NN_F32, nn_shape2(1, 65536));
        expect_refused(e, "matmul [65536, 1] x [1, 65536]", g, nn_matmul(g, a, b, 0, 0), "matmul");
    }
    nn_graph_destroy(g);
    g = NULL;
    /* a dense layer 2^31 wide: refused before 8 GiB of weights are allocated and filled */
    c0 = clock();
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        x = nn_input(g, "x", NN_F32, nn_shape2(1, 2));
        t = nn_linear_layer(g, x, (int64_t)1 << 31, NULL, "fc");
        T_CHECK(t.id < 0 && nn_graph_status(g) == NN_ERR_SHAPE, "a 2^31-wide dense layer was built");
    }
    nn_graph_destroy(g);
    g = NULL;
    T_CHECK((double)(clock() - c0) / CLOCKS_PER_SEC < 5.0, "refusing the 2^31-wide layer took %.1f s of CPU",
            (double)(clock() - c0) / CLOCKS_PER_SEC);
    /* slice bounds: start + len would overflow int64 */
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        x = nn_input(g, "x", NN_F32, nn_shape1(4));
        expect_refused(e, "nn_slice(x[4], 0, 2, INT64_MAX)", g, nn_slice(g, x, 0, 2, INT64_MAX), "nn_slice");
    }
    nn_graph_destroy(g);
    g = NULL;
    /* conv2d padding of INT_MAX: 2 * pad overflows an int */
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        nn_conv2d_desc d;
        nn_tensor w, none;
        none = NN_NONE; /* no bias */
        memset(&d, 0, sizeof d);
        d.pad_h = d.pad_w = INT32_MAX;
        x = nn_input(g, "x", NN_F32, nn_shape4(1, 1, 4, 4));
        w = nn_input(g, "w", NN_F32, nn_shape4(1, 1, 3, 3));
        t = nn_conv2d(g, x, w, none, &d);
        T_CHECK(t.id < 0 && nn_graph_status(g) != NN_OK, "conv2d with INT_MAX padding built a tensor");
    }
    nn_graph_destroy(g);
    t_end();
}
