/* tools/init_hash: prints a hash of the initial values of every init kind (and of the
   layers that create parameters), so `make check-determinism` can compare builds made with
   different compilers and flags: the same seed must give the same bits everywhere. */
#define NN_IMPLEMENTATION
#include "nn.h"
#include <stdio.h>
#include <string.h>

static unsigned long long hash_floats(unsigned long long h, const float *x, long n) {
    const unsigned char *b = (const unsigned char *)x;
    long i;
    for (i = 0; i < n * 4; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

int main(void) {
    static float buf[4096];
    nn_context_desc cd;
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_compile_desc c;
    unsigned long long h = 1469598103934665603ULL;
    nn_tensor t[16], x;
    int n = 0, k;
    memset(&cd, 0, sizeof cd);
    cd.device = "cpu";
    cd.log_level = NN_LOG_ERROR;
    if (nn_context_create(&cd, &ctx) != NN_OK || nn_graph_create(ctx, NULL, &g) != NN_OK) return 1;
    for (k = NN_INIT_ZEROS; k <= NN_INIT_XAVIER_NORMAL; k++) {
        nn_init init;
        char name[32];
        memset(&init, 0, sizeof init);
        init.kind = (nn_init_kind)k;
        init.a = k == NN_INIT_UNIFORM ? -0.3f : 0.7f;
        init.b = k == NN_INIT_UNIFORM ? 0.9f : 1.3f;
        snprintf(name, sizeof name, "p%d", k);
        t[n++] = nn_param(g, name, nn_shape2(31, 33), init);
    }
    x = nn_input(g, "x", NN_F32, nn_shape4(2, 3, 8, 8));
    nn_graph_output(g, nn_conv2d_layer(g, x, 5, 3, 3, NULL, "conv"));
    nn_graph_output(g, nn_linear_layer(g, nn_flatten(g, x), 7, NULL, "fc"));
    memset(&c, 0, sizeof c);
    if (nn_graph_compile(g, &c) != NN_OK) {
        printf("compile failed: %s\n", nn_context_last_error(ctx));
        return 1;
    }
    for (k = 0; k < n; k++) {
        nn_tensor_read(g, t[k], buf, 31 * 33 * 4);
        h = hash_floats(h, buf, 31 * 33);
    }
    {
        const char *names[] = {"conv.weight", "conv.bias", "fc.weight", "fc.bias"};
        for (k = 0; k < 4; k++) {
            nn_tensor p = nn_graph_find(g, names[k]);
            int64_t m64 = 0;
            long m;
            nn_tensor_numel(g, p, &m64);
            m = (long)m64;
            if (m <= 0 || m > 4096 || nn_tensor_read(g, p, buf, (size_t)m * 4) != NN_OK) {
                printf("cannot read %s\n", names[k]);
                return 1;
            }
            h = hash_floats(h, buf, m);
        }
    }
    printf("%016llx\n", h);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return 0;
}
