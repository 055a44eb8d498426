#define _POSIX_C_SOURCE 200809L
/* How nn.h finds the OpenCL library (src/opencl/loader.c). The library is loaded once per
   process, so each case runs this binary again with its own environment; the child
   (NN_TEST_CL_LOAD=<case>, dispatched from main) checks what nn_context_create returns and
   logs, prints what differs, and exits 0 when all is as expected. */
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32) && !defined(NN_NO_OPENCL)
#  include <dirent.h>
#  include <spawn.h>
#  include <sys/wait.h>
#  define T_CL_LOAD 1
extern char **environ;
#else
#  define T_CL_LOAD 0
#endif

#define T_MISSING_LIB "/nonexistent/libOpenCL-nn-test.so.1"

static char child_log[8192];

static void child_logger(void *user, nn_log_level level, const char *message) {
    size_t used = strlen(child_log);
    (void)user;
    snprintf(child_log + used, sizeof child_log - used, "%d %s\n", (int)level, message);
}

/* A context on `device` with every log line kept in child_log. */
static nn_result child_context(const char *device, nn_context **ctx) {
    nn_context_desc d;
    memset(&d, 0, sizeof d);
    d.device = device;
    d.log = child_logger;
    d.log_level = NN_LOG_DEBUG;
    child_log[0] = 0;
    return nn_context_create(&d, ctx);
}

#define C_CHECK(cond, ...) ((cond) ? 1 : (printf("  child %s: ", which), printf(__VA_ARGS__), printf("\n"), bad++, 0))

/* relu on the device that the child opened, to show that calls reach the library. */
static int child_relu(const char *which, nn_context *ctx) {
    static const float x[5] = {-2.0f, -0.5f, 0.0f, 0.25f, 3.0f};
    float y[5] = {9, 9, 9, 9, 9};
    nn_graph *g = NULL;
    nn_tensor in, out;
    int bad = 0, i;
    if (!C_CHECK(nn_graph_create(ctx, NULL, &g) == NN_OK, "nn_graph_create: %s", nn_context_last_error(ctx))) return bad;
    in = nn_input(g, "x", NN_F32, nn_shape1(5));
    out = nn_relu(g, in);
    nn_graph_output(g, out);
    if (C_CHECK(nn_graph_compile(g, NULL) == NN_OK, "compile: %s", nn_context_last_error(ctx)) &&
        C_CHECK(nn_tensor_write(g, in, x, sizeof x) == NN_OK, "write: %s", nn_context_last_error(ctx)) &&
        C_CHECK(nn_graph_forward(g) == NN_OK, "forward: %s", nn_context_last_error(ctx)) &&
        C_CHECK(nn_tensor_read(g, out, y, sizeof y) == NN_OK, "read: %s", nn_context_last_error(ctx)))
        for (i = 0; i < 5; i++) C_CHECK(y[i] == (x[i] > 0 ? x[i] : 0.0f), "relu(%g) = %g", x[i], y[i]);
    nn_graph_destroy(g);
    return bad;
}

int t_cl_load_child(const char *which) {
    nn_context *ctx = NULL;
    nn_result r;
    int bad = 0;
    if (strcmp(which, "missing-opencl") == 0) {
        /* asked for OpenCL: an error that names the library */
        r = child_context("opencl", &ctx);
        C_CHECK(r != NN_OK && ctx == NULL, "NN_DEVICE=opencl without its library gave %d", (int)r);
        C_CHECK(strstr(child_log, "1 NN_DEVICE=opencl: OpenCL library " T_MISSING_LIB " not found (") != NULL, /* 1: NN_LOG_ERROR */
                "no error naming the library; the log:\n%s", child_log);
        C_CHECK(t_devices(NULL, 0) == 0, "nn_list_devices found devices without a library");
    } else if (strcmp(which, "missing-default") == 0) {
        /* the default device: the CPU backend, and an info line saying why */
        r = child_context(NULL, &ctx);
        C_CHECK(r == NN_OK && t_backend(ctx) == NN_BACKEND_CPU, "the default device gave %d", (int)r);
        C_CHECK(strstr(child_log, "3 OpenCL library " T_MISSING_LIB " not found (") != NULL && /* 3: NN_LOG_INFO */
                    strstr(child_log, "): using the CPU backend\n") != NULL,
                "no info line naming the library; the log:\n%s", child_log);
        nn_context_destroy(ctx);
    } else if (strcmp(which, "vendor") == 0) {
        /* a vendor driver named by NN_OPENCL_LIBRARY, not the loader (through its ICD
           dispatch tables when it exports only clIcdGetPlatformIDsKHR, as Debian's PoCL) */
        r = child_context("opencl", &ctx);
        if (C_CHECK(r == NN_OK && t_backend(ctx) == NN_BACKEND_OPENCL, "NN_DEVICE=opencl gave %d; the log:\n%s", (int)r,
                    child_log)) {
            C_CHECK(strstr(child_log, "(NN_OPENCL_LIBRARY)") != NULL, "no line naming the library; the log:\n%s",
                    child_log);
            bad += child_relu(which, ctx);
        }
        nn_context_destroy(ctx);
    } else {
        printf("  child: no case %s\n", which);
        bad++;
    }
    fflush(stdout);
    return bad ? 1 : 0;
}

#if T_CL_LOAD
/* Runs argv0 with NN_TEST_CL_LOAD=which and NN_OPENCL_LIBRARY=lib in the environment
   (NN_DEVICE and NN_LOG taken out); its exit status, or -1. */
static int run_child(const char *argv0, const char *which, const char *lib) {
    static const char *const drop[] = {"NN_TEST_CL_LOAD=", "NN_OPENCL_LIBRARY=", "NN_DEVICE=", "NN_LOG="};
    char case_var[64], lib_var[600], *argv[2], **envp;
    size_t n = 0, i, k;
    pid_t pid;
    int status = -1;
    while (environ[n]) n++;
    envp = (char **)malloc((n + 3) * sizeof *envp);
    if (!envp) return -1;
    for (i = 0, n = 0; environ[i]; i++) {
        for (k = 0; k < sizeof drop / sizeof drop[0]; k++)
            if (strncmp(environ[i], drop[k], strlen(drop[k])) == 0) break;
        if (k == sizeof drop / sizeof drop[0]) envp[n++] = environ[i];
    }
    snprintf(case_var, sizeof case_var, "NN_TEST_CL_LOAD=%s", which);
    snprintf(lib_var, sizeof lib_var, "NN_OPENCL_LIBRARY=%s", lib);
    envp[n++] = case_var;
    envp[n++] = lib_var;
    envp[n] = NULL;
    argv[0] = (char *)argv0;
    argv[1] = NULL;
    fflush(stdout);
    if (posix_spawnp(&pid, argv0, NULL, NULL, argv, envp) == 0 && waitpid(pid, &status, 0) == pid)
        status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    else
        status = -1;
    free(envp);
    return status;
}

/* The library that the first .icd file (of $OCL_ICD_VENDORS or /etc/OpenCL/vendors) names. */
static int vendor_library(char *lib, size_t n) {
    const char *env = getenv("OCL_ICD_VENDORS"), *dir = env && env[0] ? env : "/etc/OpenCL/vendors";
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    if (!d) return 0;
    while (!found && (e = readdir(d)) != NULL) {
        char path[1024];
        size_t len = strlen(e->d_name);
        FILE *f;
        if (len < 5 || strcmp(e->d_name + len - 4, ".icd") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!(f = fopen(path, "r"))) continue;
        if (fgets(lib, (int)n, f)) {
            len = strlen(lib);
            while (len > 0 && (lib[len - 1] == '\n' || lib[len - 1] == '\r' || lib[len - 1] == ' ')) lib[--len] = 0;
            found = len > 0;
        }
        fclose(f);
    }
    closedir(d);
    return found;
}
#endif

void suite_cl_load(const t_env *e, const char *argv0, int with_devices) {
#if T_CL_LOAD
    char lib[512];
    int st;
    if (t_begin(e, "cl_load: missing library, NN_DEVICE=opencl: error naming it")) {
        st = run_child(argv0, "missing-opencl", T_MISSING_LIB);
        T_CHECK(st == 0, "child process: status %d", st);
    }
    t_end();
    if (t_begin(e, "cl_load: missing library, default device: CPU + info")) {
        st = run_child(argv0, "missing-default", T_MISSING_LIB);
        T_CHECK(st == 0, "child process: status %d", st);
    }
    t_end();
    if (!t_begin(e, "cl_load: NN_OPENCL_LIBRARY=<vendor driver>: runs")) (void)0;
    else if (!with_devices) t_skip("NN_TEST_BACKENDS=cpu");
    else if (!vendor_library(lib, sizeof lib)) t_skip("no .icd file names a vendor driver");
    else {
        st = run_child(argv0, "vendor", lib);
        T_CHECK(st == 0, "child process with NN_OPENCL_LIBRARY=%s: status %d", lib, st);
    }
    t_end();
#else
    (void)argv0;
    (void)with_devices;
    t_begin(e, "cl_load: loading the OpenCL library");
    t_skip("no OpenCL here (NN_NO_OPENCL) or no posix_spawn");
    t_end();
#endif
}
