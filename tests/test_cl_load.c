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

/* 1 when the log holds every '|'-separated part of $NN_TEST_CL_EXPECT (set and not empty). */
static int child_log_has_expected(void) {
    const char *p = getenv("NN_TEST_CL_EXPECT");
    if (!p || !p[0]) return 0;
    while (*p) {
        char part[1024];
        size_t len = strcspn(p, "|");
        if (len >= sizeof part) return 0;
        memcpy(part, p, len);
        part[len] = 0;
        if (!strstr(child_log, part)) return 0;
        p += len;
        if (*p == '|') p++;
    }
    return 1;
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
    } else if (strcmp(which, "nvidia") == 0) {
        /* no loader, no .icd file: NVIDIA's driver (PoCL under its name), and the info line
           that names the file used ($NN_TEST_CL_EXPECT) */
        r = child_context("opencl", &ctx);
        if (C_CHECK(r == NN_OK && t_backend(ctx) == NN_BACKEND_OPENCL, "NN_DEVICE=opencl gave %d; the log:\n%s", (int)r,
                    child_log)) {
            C_CHECK(child_log_has_expected(), "no info line with \"%s\"; the log:\n%s", getenv("NN_TEST_CL_EXPECT"),
                    child_log);
            bad += child_relu(which, ctx);
        }
        nn_context_destroy(ctx);
    } else if (strcmp(which, "nvidia-none") == 0) {
        /* no loader, no .icd file, no NVIDIA driver that loads: the CPU backend, and why */
        r = child_context(NULL, &ctx);
        C_CHECK(r == NN_OK && t_backend(ctx) == NN_BACKEND_CPU, "the default device gave %d", (int)r);
        C_CHECK(child_log_has_expected() && strstr(child_log, ": using the CPU backend\n") != NULL,
                "no info line with \"%s\"; the log:\n%s", getenv("NN_TEST_CL_EXPECT"), child_log);
        nn_context_destroy(ctx);
    } else {
        printf("  child: no case %s\n", which);
        bad++;
    }
    fflush(stdout);
    return bad ? 1 : 0;
}

#if T_CL_LOAD
#  include <sys/stat.h>
#  include <unistd.h>

/* Runs argv0 with NN_TEST_CL_LOAD=which and the "NAME=value" strings of vars (NULL-ended)
   in the environment, NN_DEVICE, NN_LOG, NN_OPENCL_LIBRARY and NN__OPENCL_DRIVER_DIRS taken
   out unless vars sets them; its exit status, or -1. */
static int run_child_env(const char *argv0, const char *which, const char *const *vars) {
    static const char *const drop[] = {"NN_TEST_CL_LOAD=", "NN_OPENCL_LIBRARY=", "NN_DEVICE=", "NN_LOG=",
                                       "NN__OPENCL_DRIVER_DIRS="};
    char case_var[64], *argv[2], **envp;
    size_t n = 0, nv = 0, i, k;
    pid_t pid;
    int status = -1;
    while (environ[n]) n++;
    while (vars[nv]) nv++;
    envp = (char **)malloc((n + nv + 2) * sizeof *envp);
    if (!envp) return -1;
    for (i = 0, n = 0; environ[i]; i++) {
        int keep = 1;
        for (k = 0; k < sizeof drop / sizeof drop[0] && keep; k++)
            keep = strncmp(environ[i], drop[k], strlen(drop[k])) != 0;
        for (k = 0; k < nv && keep; k++) /* a variable vars sets */
            keep = strncmp(environ[i], vars[k], (size_t)(strchr(vars[k], '=') - vars[k]) + 1) != 0;
        if (keep) envp[n++] = environ[i];
    }
    snprintf(case_var, sizeof case_var, "NN_TEST_CL_LOAD=%s", which);
    envp[n++] = case_var;
    for (k = 0; k < nv; k++) envp[n++] = (char *)vars[k];
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

/* Runs argv0 with NN_TEST_CL_LOAD=which and NN_OPENCL_LIBRARY=lib. */
static int run_child(const char *argv0, const char *which, const char *lib) {
    char lib_var[600];
    const char *vars[2];
    snprintf(lib_var, sizeof lib_var, "NN_OPENCL_LIBRARY=%s", lib);
    vars[0] = lib_var;
    vars[1] = NULL;
    return run_child_env(argv0, which, vars);
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

/* The file of library lib (an .icd file's text: a path, or a name in a usual library
   folder) into path; 0 when it is not found. */
static int library_file(const char *lib, char *path, size_t n) {
    static const char *const dirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                                       "/usr/lib", "/usr/local/lib", "/lib/x86_64-linux-gnu", "/lib64"};
    struct stat st;
    size_t k;
    if (strchr(lib, '/')) return snprintf(path, n, "%s", lib) < (int)n && stat(path, &st) == 0;
    for (k = 0; k < sizeof dirs / sizeof dirs[0]; k++)
        if (snprintf(path, n, "%s/%s", dirs[k], lib) < (int)n && stat(path, &st) == 0) return 1;
    return 0;
}

/* The folders the NVIDIA cases hand the child, under one temporary folder:
     loaders/      libOpenCL.so.1 and libOpenCL.so, a few bytes that are no library: first
                   on LD_LIBRARY_PATH, they hide the system's ICD loader (glibc's dynamic
                   linker stops at a file it cannot load rather than search on)
     lib/path/     the same, and libnvidia-opencl.so.1: a link to the vendor driver (PoCL)
     lib/drivers/  libnvidia-opencl.so.1, a link to the vendor driver
     broken/       libnvidia-opencl.so.1 that is no library
     empty/        nothing (OCL_ICD_VENDORS: no .icd file)
   A relocatable PoCL finds its devices and headers from the file it was loaded as
   (DIR/pocl/, DIR/../../share/pocl/): links to the real ones stand there, beside each link
   to the driver. */
static const char *const nv_files[] = {"loaders/libOpenCL.so.1", "loaders/libOpenCL.so", "lib/path/libOpenCL.so.1",
                                       "lib/path/libOpenCL.so", "broken/libnvidia-opencl.so.1"};
static const char *const nv_links[] = {"lib/path/libnvidia-opencl.so.1", "lib/drivers/libnvidia-opencl.so.1",
                                       "lib/path/pocl", "lib/drivers/pocl", "share/pocl"};
static const char *const nv_dirs[] = {"loaders", "lib", "lib/path", "lib/drivers", "broken", "empty", "share"};

static void nv_remove(const char *root) {
    char p[1024];
    size_t k;
    for (k = 0; k < sizeof nv_files / sizeof nv_files[0]; k++) {
        snprintf(p, sizeof p, "%s/%s", root, nv_files[k]);
        remove(p);
    }
    for (k = 0; k < sizeof nv_links / sizeof nv_links[0]; k++) {
        snprintf(p, sizeof p, "%s/%s", root, nv_links[k]);
        remove(p);
    }
    for (k = sizeof nv_dirs / sizeof nv_dirs[0]; k-- > 0;) {
        snprintf(p, sizeof p, "%s/%s", root, nv_dirs[k]);
        rmdir(p);
    }
    rmdir(root);
}

/* Makes the folders in root (a mkdtemp template, filled in); driver: the vendor driver's
   file, or NULL (no links). 1 when all is made. */
static int nv_make(char *root, const char *driver) {
    char p[1024], target[1024];
    const char *slash;
    size_t k;
    int ok = 1;
    if (!mkdtemp(root)) return 0;
    for (k = 0; k < sizeof nv_dirs / sizeof nv_dirs[0] && ok; k++) {
        snprintf(p, sizeof p, "%s/%s", root, nv_dirs[k]);
        ok = mkdir(p, 0700) == 0;
    }
    for (k = 0; k < sizeof nv_files / sizeof nv_files[0] && ok; k++) {
        FILE *f;
        snprintf(p, sizeof p, "%s/%s", root, nv_files[k]);
        if ((ok = (f = fopen(p, "w")) != NULL) != 0) {
            fputs("no library\n", f);
            ok = fclose(f) == 0;
        }
    }
    slash = driver ? strrchr(driver, '/') : NULL;
    for (k = 0; k < sizeof nv_links / sizeof nv_links[0] && ok && slash; k++) {
        if (strncmp(nv_links[k], "share/", 6) == 0)
            snprintf(target, sizeof target, "%.*s/../../share/pocl", (int)(slash - driver), driver);
        else if (strstr(nv_links[k], "/pocl"))
            snprintf(target, sizeof target, "%.*s/pocl", (int)(slash - driver), driver);
        else
            snprintf(target, sizeof target, "%s", driver);
        snprintf(p, sizeof p, "%s/%s", root, nv_links[k]);
        ok = symlink(target, p) == 0;
    }
    if (!ok) nv_remove(root);
    return ok;
}

/* Runs the child case `which` with LD_LIBRARY_PATH=root/ld, OCL_ICD_VENDORS=root/empty,
   NN__OPENCL_DRIVER_DIRS=dirs (unset when NULL), and NN_TEST_CL_EXPECT=expect. */
static int run_nvidia_child(const char *argv0, const char *which, const char *root, const char *ld, const char *dirs,
                            const char *expect) {
    char v_ld[1100], v_icd[1100], v_dirs[2200], v_expect[2200];
    const char *vars[5];
    int k = 0;
    snprintf(v_ld, sizeof v_ld, "LD_LIBRARY_PATH=%s/%s", root, ld);
    snprintf(v_icd, sizeof v_icd, "OCL_ICD_VENDORS=%s/empty", root);
    snprintf(v_expect, sizeof v_expect, "NN_TEST_CL_EXPECT=%s", expect);
    vars[k++] = v_ld;
    vars[k++] = v_icd;
    vars[k++] = v_expect;
    if (dirs) {
        snprintf(v_dirs, sizeof v_dirs, "NN__OPENCL_DRIVER_DIRS=%s", dirs);
        vars[k++] = v_dirs;
    }
    vars[k] = NULL;
    return run_child_env(argv0, which, vars);
}
#endif

#if T_CL_LOAD
/* No ICD loader and no .icd file: NVIDIA's driver (src/opencl/loader.c, nn__cl_try_nvidia),
   played by the vendor driver (PoCL) under NVIDIA's file name; then no driver, and a
   broken one. */
static void suite_cl_load_nvidia(const t_env *e, const char *argv0, int with_devices) {
    const char *tmp = getenv("TMPDIR");
    char root[256], lib[512], driver[1024], dirs[1024], expect[1500];
    int st, made, have_driver;
#  if !defined(__linux__) || !defined(__GLIBC__)
    (void)argv0, (void)with_devices, (void)tmp, (void)root, (void)lib, (void)driver, (void)dirs, (void)expect, (void)st,
        (void)made, (void)have_driver;
    if (t_begin(e, "cl_load: no loader or .icd: NVIDIA's driver")) t_skip("not Linux with glibc's dynamic linker");
    t_end();
#  else
    have_driver = with_devices && vendor_library(lib, sizeof lib) && library_file(lib, driver, sizeof driver);
    snprintf(root, sizeof root, "%s/nn-cl-load-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    made = nv_make(root, have_driver ? driver : NULL);
    if (t_begin(e, "cl_load: no loader or .icd: NVIDIA's driver on the loader path")) {
        if (!with_devices) t_skip("NN_TEST_BACKENDS=cpu");
        else if (!have_driver) t_skip("no .icd file names a vendor driver to play NVIDIA's");
        else if (T_CHECK(made, "cannot make the folders in %s", root)) {
            st = run_nvidia_child(
                argv0, "nvidia", root, "lib/path", NULL,
                "no OpenCL ICD loader or .icd file: OpenCL library libOpenCL.so.1 not found (|; using "
                "NVIDIA's driver libnvidia-opencl.so.1 (on the loader path), through its ICD dispatch table");
            T_CHECK(st == 0, "child process: status %d", st);
        }
    }
    t_end();
    if (t_begin(e, "cl_load: no loader or .icd: NVIDIA's driver in a driver folder")) {
        if (!with_devices) t_skip("NN_TEST_BACKENDS=cpu");
        else if (!have_driver) t_skip("no .icd file names a vendor driver to play NVIDIA's");
        else if (T_CHECK(made, "cannot make the folders in %s", root)) {
            snprintf(dirs, sizeof dirs, "%s/empty:%s/not-there:%s/lib/drivers", root, root, root);
            snprintf(expect, sizeof expect, "; using NVIDIA's driver %s/lib/drivers/libnvidia-opencl.so.1, through",
                     root);
            st = run_nvidia_child(argv0, "nvidia", root, "loaders", dirs, expect);
            T_CHECK(st == 0, "child process: status %d", st);
        }
    }
    t_end();
    if (t_begin(e, "cl_load: no loader, .icd or NVIDIA driver: CPU + info") && T_CHECK(made, "cannot make %s", root)) {
        snprintf(dirs, sizeof dirs, "%s/empty", root);
        st = run_nvidia_child(argv0, "nvidia-none", root, "loaders", dirs,
                              "OpenCL library libOpenCL.so.1 not found (|; no NVIDIA driver libnvidia-opencl.so.1 in "
                              "$NN__OPENCL_DRIVER_DIRS");
        T_CHECK(st == 0, "child process: status %d", st);
    }
    t_end();
    if (t_begin(e, "cl_load: no loader or .icd, a broken NVIDIA driver: CPU + info") &&
        T_CHECK(made, "cannot make %s", root)) {
        snprintf(dirs, sizeof dirs, "%s/broken", root);
        snprintf(expect, sizeof expect, "; NVIDIA's driver does not load either: |%s/broken/libnvidia-opencl.so.1",
                 root);
        st = run_nvidia_child(argv0, "nvidia-none", root, "loaders", dirs, expect);
        T_CHECK(st == 0, "child process: status %d", st);
    }
    t_end();
    if (made) nv_remove(root);
#  endif
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
    suite_cl_load_nvidia(e, argv0, with_devices);
#else
    (void)argv0;
    (void)with_devices;
    t_begin(e, "cl_load: loading the OpenCL library");
    t_skip("no OpenCL here (NN_NO_OPENCL) or no posix_spawn");
    t_end();
#endif
}
