/* Launch geometry and the guards after every device buffer (NN_CL_GUARDS, which main turns
   on): a context tuned for a GPU (a GPU, or PoCL in the gpu-tuning pass) runs the 1-D
   launches that a plan leaves to the backend in work-groups of 64, the global size rounded
   up, so the padded work-items of a kernel without its bound check write past its output's
   end, and the guards make that a run's error naming the kernel. A context tuned for a CPU
   rounds them up to its own groups (whole vectors, about 8 a compute unit: 16 items for 3
   on PoCL with AVX-512, 1 on Oclgrind), so there too a padded launch must be caught. Kernels
   planted through nn_context_desc.kernel_dir (an elementwise.cl of three unary kernels). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#endif
#include "test.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The unary kernels' parameters (kernels/elementwise_args.h: unary_forward) written out:
   relu reports its launch's global and local sizes, sigmoid writes every work-item's
   element with no bound check, tanh writes one element past its own. */
static const char planted[] =
    "#define P __global const float *x, __global float *y, const int n, const float p0, const float p1\n"
    "__kernel void relu_forward(P) {\n"
    "    int i = get_global_id(0);\n"
    "    if (i < n) y[i] = (float)(get_global_size(0) * 1000 + get_local_size(0));\n"
    "}\n"
    "__kernel void sigmoid_forward(P) { /* planted: no bound check */\n"
    "    int i = get_global_id(0);\n"
    "    y[i] = x[i];\n"
    "}\n"
    "__kernel void tanh_forward(P) { /* planted: one element to the right */\n"
    "    int i = get_global_id(0);\n"
    "    if (i < n) y[i + 1] = x[i];\n"
    "}\n";

/* y = fn(x) for x of n elements on a context of e's device and tuning with the planted
   kernels: its forward pass's result, y (n floats) and the context's last error. */
static nn_result run_planted(const t_env *e, const char *dir, nn_tensor (*fn)(nn_graph *, nn_tensor), int n, float *y,
                             char *err, size_t err_n) {
    nn_context_desc d;
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_result r;
    float x[8];
    int i;
    for (i = 0; i < n; i++) x[i] = (float)(i + 1);
    t_context_desc(e, &d);
    d.backend.kernel_dir = dir;
    d.backend.cache_dir = "off";
    d.log_level = NN_LOG_ERROR; /* the run's error is the case's to check */
    r = nn_context_create(&d, &ctx);
    if (r == NN_OK) r = nn_graph_create(ctx, NULL, &g);
    if (r == NN_OK) {
        nn_tensor in = nn_input(g, "x", NN_F32, nn_shape1(n)), out = fn(g, in);
        nn_graph_output(g, out);
        r = nn_graph_compile(g, NULL);
        if (r == NN_OK) r = nn_tensor_write(g, in, x, (size_t)n * 4);
        if (r == NN_OK) r = nn_graph_forward(g);
        if (r == NN_OK) r = nn_tensor_read(g, out, y, (size_t)n * 4);
    }
    snprintf(err, err_n, "%s", ctx ? nn_context_last_error(ctx) : "no context");
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return r;
}

/* the lines that name NN_CL_PROFILE (its profile, info; its warning, warn) as one text */
typedef struct prof_log {
    char text[8192];
    size_t len;
} prof_log;
static void prof_collect(void *user, nn_log_level level, const char *msg) {
    prof_log *l = (prof_log *)user;
    if (level > NN_LOG_INFO || !strstr(msg, "NN_CL_PROFILE")) return;
    l->len += (size_t)snprintf(l->text + l->len, l->len < sizeof l->text ? sizeof l->text - l->len : 0, "%s\n", msg);
    if (l->len >= sizeof l->text) l->len = sizeof l->text - 1;
}

/* y = relu(a b) + a b, 3 forward runs, on a context of e's device with $NN_CL_PROFILE set to
   profile (restored after): y, and the profile's lines (none when profile is "0") */
static nn_result run_profiled(const t_env *e, const char *profile, float *y, prof_log *log) {
    enum { M = 33, K = 65, N = 7 };
    static float a[M * K], b[K * N];
    char *saved = getenv("NN_CL_PROFILE") ? strdup(getenv("NN_CL_PROFILE")) : NULL;
    nn_context_desc d;
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_result r;
    int i;
    for (i = 0; i < M * K; i++) a[i] = (float)((i * 37) % 101 - 50) / 50.0f;
    for (i = 0; i < K * N; i++) b[i] = (float)((i * 53) % 89 - 44) / 44.0f;
    memset(log, 0, sizeof *log);
    setenv("NN_CL_PROFILE", profile, 1);
    t_context_desc(e, &d);
    d.log = prof_collect;
    d.log_user = log;
    d.log_level = NN_LOG_INFO;
    r = nn_context_create(&d, &ctx);
    if (saved) setenv("NN_CL_PROFILE", saved, 1);
    else unsetenv("NN_CL_PROFILE");
    free(saved);
    if (r == NN_OK) r = nn_graph_create(ctx, NULL, &g);
    if (r == NN_OK) {
        nn_tensor ta = nn_input(g, "a", NN_F32, nn_shape2(M, K)), tb = nn_input(g, "b", NN_F32, nn_shape2(K, N));
        nn_tensor p = nn_matmul(g, ta, tb, 0, 0), out = nn_add(g, nn_relu(g, p), p);
        nn_graph_output(g, out);
        r = nn_graph_compile(g, NULL);
        if (r == NN_OK) r = nn_tensor_write(g, ta, a, sizeof a);
        if (r == NN_OK) r = nn_tensor_write(g, tb, b, sizeof b);
        for (i = 0; i < 3 && r == NN_OK; i++) r = nn_graph_forward(g);
        if (r == NN_OK) r = nn_tensor_read(g, out, y, (size_t)M * N * sizeof(float));
    }
    nn_graph_destroy(g); /* the profile is logged here */
    nn_context_destroy(ctx);
    return r;
}

void suite_launch(const t_env *e) {
    char dir[] = "/tmp/nn-test-launch-XXXXXX", path[300], err[1024];
    const char *guards = getenv("NN_CL_GUARDS");
    int gpu, ok = 1, i, gsize = 0, lsize = 0;
    float y[8];
    nn_result r;
    FILE *f;
    if (!e->opencl) { /* no launches on the CPU backend: NN_CL_PROFILE is a warning there */
        if (t_begin(e, "launch: NN_CL_PROFILE on the CPU backend warns that it has no effect")) {
            static float yc[33 * 7];
            static prof_log lc;
            nn_result rc = run_profiled(e, "1", yc, &lc);
            T_CHECK(rc == NN_OK, "the run returned %d", (int)rc);
            T_CHECK(strstr(lc.text, "NN_CL_PROFILE=1 has no effect on the CPU backend") && !strstr(lc.text, "a graph of"),
                    "no warning, or a profile:\n%s", lc.text);
            t_end();
        }
        return;
    }
    gpu = t_gpu_tuned(e);
    if (!mkdtemp(dir)) ok = 0;
    snprintf(path, sizeof path, "%s/elementwise.cl", dir);
    if (ok && (f = fopen(path, "w")) != NULL) {
        ok = fputs(planted, f) >= 0;
        ok = fclose(f) == 0 && ok;
    } else {
        ok = 0;
    }

    if (t_begin(e, "launch: 1-D launches in work-groups of 64 when tuned for a GPU")) {
        if (T_CHECK(ok, "cannot write %s", path)) {
            r = run_planted(e, dir, nn_relu, 3, y, err, sizeof err);
            if (T_CHECK(r == NN_OK, "relu with the geometry kernel: %s", err)) {
                gsize = (int)y[0] / 1000;
                lsize = (int)y[0] % 1000;
                for (i = 0; i < 3; i++)
                    if (gpu)
                        T_CHECK(y[i] == 64064.0f, "y[%d] = %.0f: global size * 1000 + local size, not 64 * 1000 + 64", i, y[i]);
                    else /* whole groups over the 3 items, no group wholly padding */
                        T_CHECK(y[i] == y[0] && lsize >= 1 && gsize % lsize == 0 && gsize >= 3 && gsize - 3 < lsize,
                                "y[%d] = %.0f: global size * 1000 + local size, not whole groups over 3 items", i, y[i]);
            }
        }
        t_end();
    }

    if (t_begin(e, "launch: a kernel without its bound check fails when tuned for a GPU (NN_CL_GUARDS)")) {
        if (!guards || strcmp(guards, "0") == 0) {
            t_skip("NN_CL_GUARDS=0");
        } else if (T_CHECK(ok, "cannot write %s", path)) {
            r = run_planted(e, dir, nn_sigmoid, 3, y, err, sizeof err);
            if (gpu || gsize > 3) {
                char want[200];
                if (gpu) gsize = lsize = 64;
                snprintf(want, sizeof want,
                         "kernels/elementwise.cl sigmoid_forward wrote past the end of its argument 1 (12 bytes): "
                         "float 0 after the end changed, with %d x 1 x 1 work-items in groups of %d x 1 x 1",
                         gsize, lsize);
                T_CHECK(r == NN_ERR_DEVICE, "the padded launch of sigmoid_forward without its bound check returned %d (%s)", r,
                        nn_result_string(r));
                T_CHECK(strstr(err, want) != NULL, "the message does not name the kernel, its output and the geometry: %s", err);
            } else if (T_CHECK(r == NN_OK, "an unpadded launch without the bound check failed: %s", err)) {
                for (i = 0; i < 3; i++) T_CHECK(y[i] == (float)(i + 1), "y[%d] = %g, not %d", i, y[i], i + 1);
            }
        }
        t_end();
    }

    if (t_begin(e, "launch: a kernel writing one past its output's end fails (NN_CL_GUARDS)")) {
        if (!guards || strcmp(guards, "0") == 0) {
            t_skip("NN_CL_GUARDS=0");
        } else if (T_CHECK(ok, "cannot write %s", path)) {
            r = run_planted(e, dir, nn_tanh, 5, y, err, sizeof err);
            T_CHECK(r == NN_ERR_DEVICE, "tanh_forward writing y[n] returned %d (%s)", r, nn_result_string(r));
            T_CHECK(strstr(err, "kernels/elementwise.cl tanh_forward wrote past the end of its argument 1 (20 bytes): float 0 "
                                "after the end changed") != NULL,
                    "the message does not name the kernel and its output: %s", err);
        }
        t_end();
    }

    if (t_begin(e, "launch: NN_CL_PROFILE logs each kernel's device time when the graph goes, results unchanged")) {
        static float y0[33 * 7], y1[33 * 7];
        static prof_log l0, l1;
        nn_result r0 = run_profiled(e, "0", y0, &l0), r1 = run_profiled(e, "1", y1, &l1);
        if (T_CHECK(r0 == NN_OK && r1 == NN_OK, "the runs returned %d and %d", (int)r0, (int)r1)) {
            T_CHECK(memcmp(y0, y1, sizeof y0) == 0, "profiled results differ from unprofiled ones");
            T_CHECK(l0.len == 0, "NN_CL_PROFILE=0 logged a profile:\n%s", l0.text);
            if (strstr(l1.text, "did not record them")) {
                t_skip("the driver records no kernel times");
            } else {
                const char *head = strstr(l1.text, "NN_CL_PROFILE: a graph of "), *gemm = strstr(l1.text, "  kernels/gemm.cl gemm_nn_");
                T_CHECK(head && strstr(head, " launches, 3 runs on ") && strstr(head, " ms a run on the device, ") &&
                            strstr(head, " ms between them"),
                        "no profile line of 3 runs:\n%s", l1.text);
                /* the product's line: its share, ms a run, and 1 launch a run */
                T_CHECK(gemm && strstr(l1.text, "share  ms a run  launches a run  kernel") && gemm - l1.text > 8 &&
                            strncmp(gemm - 5, "  1.0", 5) == 0,
                        "no line for the product's kernel with 1 launch a run:\n%s", l1.text);
            }
        }
        t_end();
    }
    remove(path);
    rmdir(dir);
}
