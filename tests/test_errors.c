#define _POSIX_C_SOURCE 200809L
/* Error paths: each returns an error and a message that names what went wrong, and leaks
   nothing (make test-asan runs these on the CPU backend under AddressSanitizer). */
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_shape_errors(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor a, b, c;
    if (!t_begin(e, "errors: shape mismatch names the op and shapes")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    a = nn_input(g, "a", NN_F32, nn_shape2(3, 4));
    b = nn_input(g, "b", NN_F32, nn_shape2(5, 6));
    c = nn_matmul(g, a, b, 0, 0);
    T_CHECK(c.id < 0, "matmul of [3, 4] and [5, 6] gave a tensor");
    c = nn_relu(g, c); /* a failed input propagates without a new message */
    T_CHECK(c.id < 0, "an op on a failed tensor gave a tensor");
    T_CHECK(nn_graph_status(g) == NN_ERR_SHAPE, "status %d", nn_graph_status(g));
    T_CHECK(nn_graph_compile(g, NULL) == NN_ERR_SHAPE, "compile did not return NN_ERR_SHAPE");
    T_CHECK(strstr(nn_context_last_error(ctx), "nn_matmul") && strstr(nn_context_last_error(ctx), "[3, 4]") &&
                strstr(nn_context_last_error(ctx), "[5, 6]"),
            "message: %s", nn_context_last_error(ctx));
    nn_graph_destroy(g);
    g = NULL;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    a = nn_input(g, "a", NN_F32, nn_shape2(7, 33));
    b = nn_input(g, "b", NN_F32, nn_shape1(7));
    T_CHECK(nn_add(g, a, b).id < 0, "add of [7, 33] and [7] gave a tensor");
    T_CHECK(strstr(nn_context_last_error(ctx), "nn_add") && strstr(nn_context_last_error(ctx), "[7, 33]") &&
                strstr(nn_context_last_error(ctx), "[7]"),
            "message: %s", nn_context_last_error(ctx));
    nn_graph_destroy(g);
    g = NULL;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    a = nn_input(g, "a", NN_F32, nn_shape2(4, 3));
    b = nn_input(g, "labels", NN_F32, nn_shape1(4));
    T_CHECK(nn_softmax_cross_entropy(g, a, b).id < 0, "float labels accepted");
    T_CHECK(strstr(nn_context_last_error(ctx), "int32") != NULL, "message: %s", nn_context_last_error(ctx));
    /* a loss that is not a scalar */
    nn_graph_destroy(g);
    g = NULL;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    a = nn_input(g, "a", NN_F32, nn_shape2(4, 3));
    {
        nn_compile_desc cd;
        memset(&cd, 0, sizeof cd);
        cd.loss = nn_relu(g, a);
        T_CHECK(nn_graph_compile(g, &cd) == NN_ERR_SHAPE, "a [4, 3] loss compiled");
        T_CHECK(strstr(nn_context_last_error(ctx), "scalar") != NULL, "message: %s", nn_context_last_error(ctx));
    }
    /* wrong sizes on write and read */
    nn_graph_destroy(g);
    g = NULL;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    a = nn_input(g, "a", NN_F32, nn_shape2(4, 3));
    b = nn_relu(g, a);
    if (T_OK(nn_graph_compile(g, NULL), ctx)) {
        float buf[12] = {0};
        T_CHECK(nn_tensor_write(g, a, buf, 11 * 4) == NN_ERR_SHAPE, "a short write was accepted");
        T_CHECK(nn_tensor_read(g, b, buf, sizeof buf) == NN_ERR_STATE, "reading an unkept tensor was accepted");
        T_CHECK(nn_relu(g, a).id < 0, "an op was added to a compiled graph");
    }
done:
    nn_graph_destroy(g);
    t_end();
}

/* A tensor too big to index (2^40 elements): refused when built, the error naming the
   tensor; compile then reports it and the graph never runs. */
static void test_alloc_failure(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor a;
    nn_result r;
    if (!t_begin(e, "errors: an oversized tensor is refused by name")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    a = nn_input(g, "huge", NN_F32, nn_shape2((int64_t)1 << 20, (int64_t)1 << 20)); /* 4 TiB */
    nn_graph_output(g, nn_relu(g, a));
    r = nn_graph_compile(g, NULL);
    T_CHECK(r == NN_ERR_SHAPE, "compile returned %d (%s)", r, nn_context_last_error(ctx));
    T_CHECK(strstr(nn_context_last_error(ctx), "huge") != NULL, "message does not name the tensor: %s", nn_context_last_error(ctx));
    T_CHECK(nn_graph_step(g) == NN_ERR_STATE, "a failed graph ran");
done:
    nn_graph_destroy(g);
    t_end();
}

/* A driver that counts the lines of the whole source it was given and ignores #line
   (NVIDIA's "<kernel>:4:12: error"): the log is mapped to kernels/FILE.cl:LINE by the
   source's #line directives, also across an included header; other logs stay as they are. */
static void test_build_log_map(const t_env *e) {
    static const char *src[] = {"#line 1 \"kernels/elementwise.cl\"\n", "/* c */\n#define A 1\n",
                                "#line 1 \"kernels/kargs.h\"\n", "int h0;\nint h1 = nope;\n",
                                "\n#line 3 \"kernels/elementwise.cl\"\n", "__kernel void f(__global float *x) {\n",
                                "    x[0] = undefined_name;\n", "}\n"};
    /* physical lines: 1 #line, 2 comment, 3 define, 4 #line, 5 h0, 6 h1, 7 blank, 8 #line,
       9 __kernel (elementwise.cl:3), 10 x[0] (elementwise.cl:4), 11 } */
    char out[400];
    if (!t_begin(e, "errors: a build log counting lines of the whole source (<kernel>:N) names kernels/FILE.cl:LINE")) return;
    if (!t_cl_map_log(src, 8, "<kernel>:10:12: error: use of undeclared identifier 'undefined_name'", out, sizeof out)) {
        t_skip("built without the OpenCL backend");
        t_end();
        return;
    }
    T_CHECK(strcmp(out, "kernels/elementwise.cl:4:12: error: use of undeclared identifier 'undefined_name'") == 0,
            "mapped to: %s", out);
    t_cl_map_log(src, 8, "<kernel>:6:9: error: x\n<kernel>:2:1: note: y\n<kernel>:9:5: z", out, sizeof out);
    T_CHECK(strcmp(out, "kernels/kargs.h:2:9: error: x\nkernels/elementwise.cl:1:1: note: y\nkernels/elementwise.cl:3:5: z") == 0,
            "mapped to: %s", out);
    t_cl_map_log(src, 8, "kernels/elementwise.cl:4:12: error: a\n<built-in>:3:1: b\n<kernel>:99:1: c <kernel>", out, sizeof out);
    T_CHECK(strcmp(out, "kernels/elementwise.cl:4:12: error: a\n<built-in>:3:1: b\n<kernel>:99:1: c <kernel>") == 0,
            "changed: %s", out);
    t_cl_map_log(src, 8, "<kernel>:10:12: error", out, 12); /* cut short, still ended */
    T_CHECK(strlen(out) < 12, "overran: %s", out);
    t_end();
}

/* A kernel that does not compile: the error names kernels/FILE.cl and the line. */
static void test_build_error(const t_env *e) {
    char dir[] = "/tmp/nn-test-kernels-XXXXXX", path[256];
    nn_context *ctx = NULL;
    nn_context_desc d;
    nn_graph *g = NULL;
    FILE *f;
    nn_result r;
    if (!t_begin(e, "errors: kernel build error names file:line")) return;
    if (!e->opencl) {
        t_skip("no kernels on the CPU backend");
        t_end();
        return;
    }
    if (!mkdtemp(dir)) {
        T_CHECK(0, "mkdtemp failed");
        t_end();
        return;
    }
    snprintf(path, sizeof path, "%s/elementwise.cl", dir);
    f = fopen(path, "w");
    if (f) {
        fputs("/* broken on purpose */\n__kernel void relu_forward(__global float *x) {\n    x[0] = undefined_name;\n}\n", f);
        fclose(f);
    }
    t_context_desc(e, &d); /* the same device and tuning as e->ctx */
    d.backend.kernel_dir = dir;
    d.backend.cache_dir = "off";
    if (T_OK(nn_context_create(&d, &ctx), ctx) && T_OK(nn_graph_create(ctx, NULL, &g), ctx)) {
        nn_graph_output(g, nn_relu(g, nn_input(g, "x", NN_F32, nn_shape1(3))));
        r = nn_graph_compile(g, NULL);
        T_CHECK(r == NN_ERR_BUILD, "compile returned %d", r);
        T_CHECK(strstr(nn_context_last_error(ctx), "kernels/elementwise.cl:3") != NULL, "message lacks kernels/elementwise.cl:3: %.300s",
                nn_context_last_error(ctx));
    }
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    snprintf(path, sizeof path, "%s/elementwise.cl", dir);
    remove(path);
    remove(dir);
    t_end();
}

/* Bad arguments: NULLs and tensors of another graph. */
static void test_bad_arguments(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *h = NULL;
    nn_tensor a, b;
    if (!t_begin(e, "errors: bad arguments")) return;
    T_CHECK(nn_graph_create(ctx, NULL, NULL) == NN_ERR_INVALID_ARGUMENT, "NULL out accepted");
    T_CHECK(nn_graph_step(NULL) == NN_ERR_INVALID_ARGUMENT, "NULL graph accepted");
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx) || !T_OK(nn_graph_create(ctx, NULL, &h), ctx)) goto done;
    a = nn_input(g, "a", NN_F32, nn_shape1(3));
    b = nn_input(h, "b", NN_F32, nn_shape1(3));
    (void)b;
    b.id = 99;
    T_CHECK(nn_add(g, a, b).id < 0, "a tensor of another graph accepted");
    T_CHECK(nn_dropout(h, nn_input(h, "c", NN_F32, nn_shape1(2)), 1.5f).id < 0, "dropout p = 1.5 accepted");
    T_CHECK(nn_input(h, "bad", NN_F32, nn_shape2(0, 3)).id < 0, "a zero dim accepted");
    T_CHECK(nn_graph_step(g) == NN_ERR_STATE, "an uncompiled graph ran");
done:
    nn_graph_destroy(g);
    nn_graph_destroy(h);
    t_end();
}

/* A tensor made by one graph and given to another: nodes of the same id exist in both, so
   only the handle's graph stamp can tell. Every entry point that takes a tensor refuses it. */
static void test_foreign_tensor(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *h = NULL;
    nn_tensor a, b, ha, hb, hl;
    float buf[3] = {1, 2, 3};
    nn_compile_desc cd;
    nn_loss_desc ld;
    if (!t_begin(e, "errors: a tensor of another graph is refused, not aliased")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx) || !T_OK(nn_graph_create(ctx, NULL, &h), ctx)) goto done;
    a = nn_input(g, "a", NN_F32, nn_shape1(3));
    b = nn_input(g, "b", NN_F32, nn_shape1(3));
    ha = nn_input(h, "a", NN_F32, nn_shape1(3)); /* the same ids as a, b */
    hb = nn_input(h, "b", NN_F32, nn_shape1(3));
    T_CHECK(a.id == ha.id && b.id == hb.id, "ids differ: the test needs equal ids (%d %d, %d %d)", a.id, ha.id, b.id, hb.id);
    T_CHECK(nn_add(h, ha, b).id < 0, "nn_add took a tensor of another graph");
    T_CHECK(nn_graph_status(h) == NN_ERR_INVALID_ARGUMENT, "status %d", nn_graph_status(h));
    T_CHECK(strstr(nn_context_last_error(ctx), "nn_add") && strstr(nn_context_last_error(ctx), "another graph"), "message: %s",
            nn_context_last_error(ctx));
    nn_graph_destroy(h);
    h = NULL;
    if (!T_OK(nn_graph_create(ctx, NULL, &h), ctx)) goto done;
    ha = nn_input(h, "a", NN_F32, nn_shape1(3));
    hb = nn_input(h, "b", NN_F32, nn_shape1(3));
    memset(&ld, 0, sizeof ld);
    ld.weight = a; /* an optional operand from g */
    T_CHECK(nn_mse_loss(h, ha, hb, &ld).id < 0, "a loss weight of another graph accepted");
    T_CHECK(strstr(nn_context_last_error(ctx), "another graph") != NULL, "message: %s", nn_context_last_error(ctx));
    nn_graph_destroy(h);
    h = NULL;
    if (!T_OK(nn_graph_create(ctx, NULL, &h), ctx)) goto done;
    ha = nn_input(h, "a", NN_F32, nn_shape1(3));
    hb = nn_input(h, "b", NN_F32, nn_shape1(3));
    hl = nn_mse_loss(h, ha, hb, NULL);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_mse_loss(g, a, b, NULL); /* g's loss given to h's compile */
    T_CHECK(cd.loss.id == hl.id, "loss ids differ (%d, %d)", cd.loss.id, hl.id);
    T_CHECK(nn_graph_compile(h, &cd) != NN_OK, "h compiled with g's loss");
    cd.loss = hl;
    if (T_OK(nn_graph_compile(h, &cd), ctx)) {
        T_CHECK(nn_tensor_write(h, a, buf, sizeof buf) == NN_ERR_INVALID_ARGUMENT, "h wrote g's tensor");
        T_CHECK(nn_tensor_read(h, b, buf, sizeof buf) == NN_ERR_INVALID_ARGUMENT, "h read g's tensor");
        T_CHECK(nn_tensor_write(h, ha, buf, sizeof buf) == NN_OK, "h's own tensor: %s", nn_context_last_error(ctx));
    }
done:
    nn_graph_destroy(g);
    nn_graph_destroy(h);
    t_end();
}

/* A handle made by hand, {id, graph 0}, or with a made-up tag: every graph refuses it
   (naming the op), never takes it as its own node of that id. */
static nn_tensor forged(int32_t id, uint32_t tag) {
    nn_tensor t;
    t.id = id;
    t.graph = tag;
    return t;
}

static void test_forged_handle(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL, *h = NULL;
    nn_tensor a, b, x, y, loss, f;
    nn_loss_desc ld;
    nn_compile_desc cd;
    float buf[3] = {1, 2, 3};
    int k;
    if (!t_begin(e, "errors: a forged handle {id, graph 0} or a made-up tag is refused, naming the op")) return;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    a = nn_input(g, "a", NN_F32, nn_shape1(3));
    b = nn_input(g, "b", NN_F32, nn_shape1(3));
    for (k = 0; k < 5; k++) { /* builders: each a fresh graph, since the first error sticks */
        nn_graph *q = NULL;
        nn_tensor qa, qb;
        if (!T_OK(nn_graph_create(ctx, NULL, &q), ctx)) break;
        qa = nn_input(q, "a", NN_F32, nn_shape1(3));
        qb = nn_input(q, "b", NN_F32, nn_shape1(3));
        /* no tag; small made-up ones; the graph's own tag off by one bit or one count */
        f = forged(qb.id, k == 0 ? 0u : k == 1 ? 1u : k == 2 ? 2u : k == 3 ? qb.graph + 1 : qb.graph ^ 0x80000000u);
        T_CHECK(nn_add(q, qa, f).id < 0, "nn_add took {%d, %u} as node %d", f.id, (unsigned)f.graph, qb.id);
        T_CHECK(nn_graph_status(q) == NN_ERR_INVALID_ARGUMENT, "status %d", nn_graph_status(q));
        T_CHECK(strstr(nn_context_last_error(ctx), "nn_add: input 1 is not a tensor of this graph") &&
                    strstr(nn_context_last_error(ctx), k == 0 ? "carries no graph tag" : "another graph"),
                "tag %u: message: %s", (unsigned)f.graph, nn_context_last_error(ctx));
        nn_graph_destroy(q);
    }
    memset(&ld, 0, sizeof ld); /* an optional operand */
    ld.weight = forged(a.id, 0);
    T_CHECK(nn_mse_loss(g, a, b, &ld).id < 0, "a forged loss weight accepted");
    T_CHECK(strstr(nn_context_last_error(ctx), "nn_mse_loss") && strstr(nn_context_last_error(ctx), "no graph tag"), "message: %s",
            nn_context_last_error(ctx));
    /* a compiled graph: reads, writes, fills, queries and the loss */
    if (!T_OK(nn_graph_create(ctx, NULL, &h), ctx)) goto done;
    x = nn_input(h, "x", NN_F32, nn_shape1(3));
    y = nn_mul(h, x, x);
    loss = nn_sum(h, y);
    nn_graph_output(h, y);
    memset(&cd, 0, sizeof cd);
    cd.loss = forged(loss.id, 0);
    T_CHECK(nn_graph_compile(h, &cd) == NN_ERR_INVALID_ARGUMENT, "compiled with a forged loss");
    T_CHECK(strstr(nn_context_last_error(ctx), "nn_graph_compile") && strstr(nn_context_last_error(ctx), "no graph tag"), "message: %s",
            nn_context_last_error(ctx));
    cd.loss = loss;
    if (T_OK(nn_graph_compile(h, &cd), ctx)) {
        f = forged(x.id, 0);
        T_CHECK(nn_tensor_write(h, f, buf, sizeof buf) == NN_ERR_INVALID_ARGUMENT, "wrote through a forged handle");
        T_CHECK(strstr(nn_context_last_error(ctx), "nn_tensor_write") && strstr(nn_context_last_error(ctx), "no graph tag"), "message: %s",
                nn_context_last_error(ctx));
        T_CHECK(nn_tensor_fill(h, f, 0.0f) == NN_ERR_INVALID_ARGUMENT, "filled through a forged handle");
        T_CHECK(strstr(nn_context_last_error(ctx), "nn_tensor_fill"), "message: %s", nn_context_last_error(ctx));
        f = forged(y.id, y.graph + 1);
        T_CHECK(nn_tensor_read(h, f, buf, sizeof buf) == NN_ERR_INVALID_ARGUMENT, "read through a made-up tag");
        T_CHECK(strstr(nn_context_last_error(ctx), "nn_tensor_read") && strstr(nn_context_last_error(ctx), "another graph"), "message: %s",
                nn_context_last_error(ctx));
        {
            nn_shape sh;
            int64_t numel = 1;
            T_CHECK(nn_tensor_shape(h, f, &sh) == NN_ERR_INVALID_ARGUMENT && sh.ndim == 0 &&
                        nn_tensor_numel(h, f, &numel) == NN_ERR_INVALID_ARGUMENT && numel == 0 &&
                        nn_graph_grad(h, forged(x.id, 0)).id < 0,
                    "a shape, size or gradient of a forged handle");
        }
        T_CHECK(nn_tensor_write(h, x, buf, sizeof buf) == NN_OK, "the real handle: %s", nn_context_last_error(ctx));
    }
done:
    nn_graph_destroy(g);
    nn_graph_destroy(h);
    t_end();
}

void suite_errors(const t_env *e) {
    T_RUN(e, test_shape_errors, test_alloc_failure, test_build_log_map, test_build_error, test_bad_arguments, test_foreign_tensor,
          test_forged_handle);
}
