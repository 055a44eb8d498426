/* tests/fault_cl: device-call fault injection. Every OpenCL call nn.h makes goes through
   its runtime-loaded table (src/opencl/cl_api.h); this program wraps the table, runs a
   training scenario (an MLP and a small CNN: build, compile, write, steps with a retry,
   read) once cleanly, then once for every N with the N-th OpenCL call failing
   (CL_OUT_OF_RESOURCES), and checks each run: an error code and a message, never a crash
   (run under ASan) or a hang; no OpenCL object leaked (creations minus releases); a
   failed step either undone (the retry then gives the clean run's bits) or refused
   until a state is loaded; and the final parameters identical to the clean run's
   whenever every call returned NN_OK; the message of a failed run names the OpenCL error
   (CL_OUT_OF_RESOURCES), and when device discovery failed (clGetPlatformIDs,
   clGetDeviceIDs) the call too, not "no such device"; one failing clCreateContext is
   retried (the run succeeds). `make fault-cl` builds and runs it; it prints FAULT calls=N
   runs=N failed=N broken_refused=N crashes=0 leaks=N wrong=N silent=N unnamed=N
   unretried=N and fails unless leaks, wrong, silent (an error without a message), unnamed
   (a message that does not name the error) and unretried are 0. NN_FAULT_SHARD=i/n runs
   only the N with N % n == i (make fault-cl runs FAULT_JOBS shards at once). A crash or a sanitizer
   report ends the run with an error. */
#define NN_IMPLEMENTATION
#include "../nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#if defined(NN_NO_OPENCL)
int main(void) {
    puts("FAULT skipped: built with NN_NO_OPENCL");
    return 0;
}
#else

static nn__cl_api real;
static long calls, fail_at, live, injected;
static const char *failed_call; /* the function of the failing call ("GetPlatformIDs") */

#define FAILV_cl_int (injected = 1, (cl_int)CL_OUT_OF_RESOURCES)
#define FAILV_cl_context (injected = 1, e ? (void)(*e = CL_OUT_OF_RESOURCES) : (void)0, (cl_context)0)
#define FAILV_cl_command_queue (injected = 1, e ? (void)(*e = CL_OUT_OF_RESOURCES) : (void)0, (cl_command_queue)0)
#define FAILV_cl_mem (injected = 1, e ? (void)(*e = CL_OUT_OF_RESOURCES) : (void)0, (cl_mem)0)
#define FAILV_cl_program (injected = 1, e ? (void)(*e = CL_OUT_OF_RESOURCES) : (void)0, (cl_program)0)
#define FAILV_cl_kernel (injected = 1, e ? (void)(*e = CL_OUT_OF_RESOURCES) : (void)0, (cl_kernel)0)
#define COUNT_cl_int(name, r) (void)(r)
#define COUNT_cl_context(name, r) (live += (r) != 0)
#define COUNT_cl_command_queue(name, r) (live += (r) != 0)
#define COUNT_cl_mem(name, r) (live += (r) != 0)
#define COUNT_cl_program(name, r) (live += (r) != 0)
#define COUNT_cl_kernel(name, r) (live += (r) != 0)

#define WRAP(R, N, P, A, O, I)                                                  \
    static R NN__CL_CALL w_##N P {                                            \
        R ret_;                                                               \
        if (++calls == fail_at) failed_call = #N;                             \
        if (calls == fail_at && strncmp(#N, "Release", 7) != 0) return FAILV_##R; \
        ret_ = real.N A;                                                      \
        if (calls == fail_at) { /* a failed release still releases: report, not leak */ \
            injected = 1;                                                     \
            if (ret_ == CL_SUCCESS) live--;                                   \
            return (R)(intptr_t)CL_OUT_OF_RESOURCES;                          \
        }                                                                     \
        COUNT_##R(N, ret_);                                                   \
        if (strncmp(#N, "Release", 7) == 0 && ret_ == CL_SUCCESS) live--;    \
        return ret_;                                                          \
    }
NN__CL_FUNCS(WRAP)
#undef WRAP

static void install(void) {
    real = nn__clfn;
#define SET(R, N, P, A, O, I) nn__clfn.N = w_##N;
    NN__CL_FUNCS(SET)
#undef SET
}

enum { NOUT = 64 };
typedef struct outcome {
    nn_result first_error;
    char message[4096]; /* its message */
    int broken_refused, undone;
    float params[NOUT];
    int n_params;
} outcome;

static char create_error[1024]; /* what nn_context_create logged as an error (it returns no context) */

static void logger(void *user, nn_log_level level, const char *message) {
    (void)user;
    if (level == NN_LOG_ERROR && !create_error[0]) snprintf(create_error, sizeof create_error, "%s", message);
}

static void note_msg(outcome *o, nn_result r, const char *message) {
    if (r != NN_OK && o->first_error == NN_OK) {
        o->first_error = r;
        snprintf(o->message, sizeof o->message, "%s", message);
    }
}
#define note(o, r) do { nn_result r_ = (r); note_msg(o, r_, nn_context_last_error(ctx)); } while (0)

/* The scenario; returns 0, or -1 when an error came without a message. */
static int scenario(outcome *o) {
    nn_context_desc cd;
    nn_context *ctx = NULL;
    nn_graph *g = NULL;
    nn_compile_desc c;
    nn_conv2d_desc conv;
    nn_tensor x, y, xi, h, loss;
    float xs[4 * 1 * 6 * 6], buf[256];
    int32_t ys[4] = {0, 1, 2, 1};
    int i, bad = 0;
    nn_result r;
    memset(o, 0, sizeof *o);
    for (i = 0; i < 4 * 36; i++) xs[i] = (float)((i * 37) % 17) / 8.0f - 1.0f;
    memset(&cd, 0, sizeof cd);
    cd.device = "opencl";
    cd.log_level = NN_LOG_ERROR;
    cd.log = logger;
    create_error[0] = 0;
    r = nn_context_create(&cd, &ctx);
    note_msg(o, r, create_error);
    if (r != NN_OK) return 0;
    r = nn_graph_create(ctx, NULL, &g);
    note(o, r);
    if (r == NN_OK) {
        memset(&conv, 0, sizeof conv);
        conv.pad_h = conv.pad_w = 1;
        x = nn_input(g, "x", NN_F32, nn_shape4(4, 1, 6, 6));
        y = nn_input(g, "y", NN_I32, nn_shape1(4));
        h = nn_relu(g, nn_conv2d_layer(g, x, 3, 3, 3, &conv, "conv"));
        xi = nn_flatten(g, h);
        h = nn_linear_layer(g, nn_relu(g, nn_linear_layer(g, xi, 8, NULL, "fc1")), 3, NULL, "fc2");
        loss = nn_softmax_cross_entropy(g, h, y);
        memset(&c, 0, sizeof c);
        c.loss = loss;
        c.optimizer.kind = NN_OPT_ADAM;
        c.optimizer.lr = 0.01f;
        r = nn_graph_compile(g, &c);
        note(o, r);
        if (r == NN_OK) {
            note(o, nn_tensor_write(g, x, xs, sizeof xs));
            note(o, nn_tensor_write(g, y, ys, sizeof ys));
            for (i = 0; i < 3; i++) {
                r = nn_graph_step(g);
                if (r != NN_OK && r != NN_ERR_STATE) { /* the retry: undone, or refused as broken */
                    nn_result r2;
                    char why[4096];
                    snprintf(why, sizeof why, "%s", nn_context_last_error(ctx));
                    r2 = nn_graph_step(g);
                    if (r2 == NN_ERR_STATE) o->broken_refused = 1;
                    if (r2 == NN_OK) o->undone = 1; /* then the run must end with the clean bits */
                    else note_msg(o, r, why);
                } else {
                    note(o, r);
                }
            }
            r = nn_graph_finish(g);
            note(o, r);
            {
                nn_tensor p = nn_graph_find(g, "fc2.weight");
                int64_t n64 = 0;
                long n;
                nn_tensor_numel(g, p, &n64);
                n = (long)n64;
                if (n > NOUT) n = NOUT;
                r = nn_tensor_read(g, p, buf, (size_t)n * 4);
                note(o, r);
                if (r == NN_OK) {
                    memcpy(o->params, buf, (size_t)n * 4);
                    o->n_params = (int)n;
                }
            }
        }
    }
    if (o->first_error != NN_OK && !nn_context_last_error(ctx)[0]) bad = -1;
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return bad;
}

int main(void) {
    outcome clean, o;
    long total, n, runs = 0, leaks = 0, wrong = 0, silent = 0, refused = 0, failed = 0, undone = 0, unnamed = 0,
         unretried = 0;
    nn_device_info info[4];
    long shard = 0, shards = 1; /* NN_FAULT_SHARD=i/n: only the calls N with N % n == i */
    const char *sh = getenv("NN_FAULT_SHARD");
    if (sh && (sscanf(sh, "%ld/%ld", &shard, &shards) != 2 || shards < 1 || shard < 0 || shard >= shards)) {
        printf("FAULT NN_FAULT_SHARD=%s: expected i/n with 0 <= i < n\n", sh);
        return 1;
    }
    setenv("NN_CACHE_DIR", "/tmp/nn-fault-cl-cache", 1);
    int n_devices = 0;
    nn_list_devices(info, 4, &n_devices);
    if (n_devices < 1) {
        puts("FAULT skipped: no OpenCL device");
        return 0;
    }
    install();
    fail_at = -1;
    calls = 0;
    scenario(&clean); /* twice: the first fills the program cache */
    calls = 0;
    live = 0;
    if (scenario(&clean) != 0 || clean.first_error != NN_OK || clean.n_params == 0) {
        printf("FAULT the clean run failed: %d\n", (int)clean.first_error);
        return 1;
    }
    total = calls;
    if (live != 0) printf("clean run leaks %ld OpenCL objects\n", live);
    for (n = 1; n <= total; n++) {
        int rc;
        if (n % shards != shard) continue;
        calls = 0;
        live = 0;
        injected = 0;
        failed_call = "";
        fail_at = n;
        rc = scenario(&o);
        runs++;
        failed += o.first_error != NN_OK;
        refused += o.broken_refused;
        undone += o.undone && o.first_error == NN_OK;
        if (rc != 0) {
            silent++;
            printf("call %ld: an error without a message\n", n);
        }
        if (o.first_error != NN_OK && !strstr(o.message, "CL_OUT_OF_RESOURCES")) {
            unnamed++;
            printf("call %ld (cl%s): the error does not name the OpenCL error: %s\n", n, failed_call, o.message);
        } else if (strcmp(failed_call, "GetPlatformIDs") == 0 || strcmp(failed_call, "GetDeviceIDs") == 0) {
            char want[64]; /* device discovery: the call and its error, not "no such device" */
            snprintf(want, sizeof want, "cl%s failed", failed_call);
            if (o.first_error == NN_OK || !strstr(o.message, want)) {
                unnamed++;
                printf("call %ld (cl%s): the error does not name the call: %s\n", n, failed_call, o.message);
            }
        }
        if (strcmp(failed_call, "CreateContext") == 0 && o.first_error != NN_OK) {
            unretried++;
            printf("call %ld (clCreateContext): one failure was not retried: %s\n", n, o.message);
        }
        if (live != 0) {
            leaks++;
            printf("call %ld: %ld OpenCL object(s) not released\n", n, live);
        }
        if (o.first_error == NN_OK && !o.broken_refused &&
            (o.n_params != clean.n_params || memcmp(o.params, clean.params, (size_t)clean.n_params * 4) != 0)) {
            wrong++;
            printf("call %ld: every call returned NN_OK but the parameters differ from the clean run\n", n);
        }
    }
    if (shards > 1) printf("FAULT shard %ld of %ld (calls N with N %% %ld == %ld)\n", shard, shards, shards, shard);
    printf("FAULT calls=%ld runs=%ld failed=%ld undone_and_retried=%ld broken_refused=%ld crashes=0 leaks=%ld wrong=%ld "
           "silent=%ld unnamed=%ld unretried=%ld\n", total, runs, failed, undone, refused, leaks, wrong, silent, unnamed,
           unretried);
    return leaks || wrong || silent || unnamed || unretried ? 1 : 0;
}
#endif
