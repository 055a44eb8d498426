#define _POSIX_C_SOURCE 200809L
/* How nn.h finds the OpenCL library (src/opencl/loader.c). The library is loaded once per
   process, so each case runs this binary again with its own environment; the child
   (NN_TEST_CL_LOAD=<case>, dispatched from main) checks what nn_context_create returns and
   logs, prints what differs, and exits 0 when all is as expected. A child that blocks
   (on a FIFO) is ended by its alarm after T_CHILD_ALARM seconds, which fails its case. */
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32) && !defined(NN_NO_OPENCL)
#  include <dirent.h>
#  include <errno.h>
#  include <spawn.h>
#  include <sys/stat.h>
#  include <sys/wait.h>
#  include <unistd.h>
#  define T_CL_LOAD 1
extern char **environ;
#else
#  define T_CL_LOAD 0
#endif

#define T_MISSING_LIB "/nonexistent/libOpenCL-nn-test.so.1"
#define T_CHILD_ALARM 60
/* the .icd file of the vendors cases whose name and library path hold raw bytes: an
   escape sequence, BEL, an invalid byte and a C1 control (U+0085) */
#define T_RAW_ICD "v40-\033[7m.icd"
#define T_RAW_ICD_ESC "v40-\\x1b[7m.icd"
#define T_RAW_LIB "/nonexistent/raw-\033]0;title\007-\377\302\205.so"
#define T_RAW_LIB_ESC "/nonexistent/raw-\\x1b]0;title\\x07-\\xff\\xc2\\x85.so"
#define T_N_ICD 42 /* v00..v39, a FIFO, T_RAW_ICD; the driver case adds zz.icd */

static char child_log[8192];
static int nested_devices = -1; /* nn_list_devices called from the log line naming the library */

static void child_logger(void *user, nn_log_level level, const char *message) {
    size_t used = strlen(child_log);
    (void)user;
    snprintf(child_log + used, sizeof child_log - used, "%d %s\n", (int)level, message);
    /* logged while the device is opened, under the process's discovery lock: a nested
       discovery on the same thread goes on, never deadlocks */
    if (nested_devices < 0 && strstr(message, "(NN_OPENCL_LIBRARY)")) nn_list_devices(NULL, 0, &nested_devices);
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

/* The log's bytes are all printable or newlines (no raw byte of a file reached it). */
static int child_log_printable(void) {
    const unsigned char *p = (const unsigned char *)child_log;
    for (; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f || *p >= 0x80) return 0;
    return 1;
}

int t_cl_load_child(const char *which) {
    nn_context *ctx = NULL;
    nn_result r;
    int bad = 0;
    const char *expect = getenv("NN_TEST_CL_EXPECT"), *lib = getenv("NN_OPENCL_LIBRARY");
    const char *vendors = getenv("OCL_ICD_VENDORS");
    char want[1200];
#if T_CL_LOAD
    alarm(T_CHILD_ALARM); /* a blocked open ends the child (a failed case), not the suite */
#endif
    if (strcmp(which, "missing-opencl") == 0) {
        /* asked for OpenCL: an error that names the library */
        r = child_context("opencl", &ctx);
        C_CHECK(r == NN_ERR_UNAVAILABLE && ctx == NULL, "NN_DEVICE=opencl without its library gave %d, not %d "
                "(NN_ERR_UNAVAILABLE)", (int)r, (int)NN_ERR_UNAVAILABLE);
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
            C_CHECK(nested_devices >= 1, "nn_list_devices from the log callback found %d devices", nested_devices);
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
    } else if (strcmp(which, "bad-library") == 0) {
        /* NN_OPENCL_LIBRARY names something that is not a library: NN_ERR_UNAVAILABLE, and
           the message says what it is (expect), for a named device and the default alike */
        r = child_context("opencl", &ctx);
        snprintf(want, sizeof want, "1 NN_DEVICE=opencl: OpenCL library %s %s", lib ? lib : "", expect ? expect : "");
        C_CHECK(r == NN_ERR_UNAVAILABLE && ctx == NULL, "NN_DEVICE=opencl gave %d, not %d (NN_ERR_UNAVAILABLE)", (int)r,
                (int)NN_ERR_UNAVAILABLE);
        C_CHECK(strstr(child_log, want) != NULL, "no line \"%s\"; the log:\n%s", want, child_log);
        r = child_context(NULL, &ctx);
        C_CHECK(r == NN_OK && t_backend(ctx) == NN_BACKEND_CPU, "the default device gave %d", (int)r);
        snprintf(want, sizeof want, "3 OpenCL library %s %s", lib ? lib : "", expect ? expect : "");
        C_CHECK(strstr(child_log, want) != NULL, "no info line \"%s\"; the log:\n%s", want, child_log);
        nn_context_destroy(ctx);
    } else if (strcmp(which, "vendors-none") == 0) {
        /* no loader; of the T_N_ICD .icd files none names a driver that loads: all are tried
           (the last in name order is named), the FIFO among them is not waited on, and the
           raw bytes of a file's name and contents reach the log escaped */
        r = child_context(NULL, &ctx);
        C_CHECK(r == NN_OK && t_backend(ctx) == NN_BACKEND_CPU, "the default device gave %d; the log:\n%s", (int)r,
                child_log);
        snprintf(want, sizeof want, "no vendor driver loads either (%d .icd files in %s, the last: OpenCL library "
                 T_RAW_LIB_ESC " not found (", T_N_ICD, vendors ? vendors : "");
        C_CHECK(strstr(child_log, want) != NULL, "no line \"%s\"; the log:\n%s", want, child_log);
        snprintf(want, sizeof want, "(named by %s/" T_RAW_ICD_ESC ")", vendors ? vendors : "");
        C_CHECK(strstr(child_log, want) != NULL, "no \"%s\"; the log:\n%s", want, child_log);
        C_CHECK(child_log_printable(), "raw bytes in the log:\n%s", child_log);
        nn_context_destroy(ctx);
        ctx = NULL;
        r = child_context("opencl", &ctx);
        C_CHECK(r == NN_ERR_UNAVAILABLE, "NN_DEVICE=opencl gave %d, not %d (NN_ERR_UNAVAILABLE)", (int)r,
                (int)NN_ERR_UNAVAILABLE);
        C_CHECK(child_log_printable(), "raw bytes in the error:\n%s", child_log);
    } else if (strcmp(which, "vendors-driver") == 0) {
        /* the same files and zz.icd, the last, naming the driver: it is found and runs */
        r = child_context("opencl", &ctx);
        snprintf(want, sizeof want, " named by %s/zz.icd", vendors ? vendors : "");
        if (C_CHECK(r == NN_OK && t_backend(ctx) == NN_BACKEND_OPENCL, "NN_DEVICE=opencl gave %d; the log:\n%s", (int)r,
                    child_log)) {
            C_CHECK(strstr(child_log, want) != NULL, "no line with \"%s\"; the log:\n%s", want, child_log);
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
/* Runs argv0 with NN_TEST_CL_LOAD=which, NN_OPENCL_LIBRARY=lib and the "NAME=value"
   entries of extra (NULL-ended, or NULL) in the environment (NN_DEVICE, NN_LOG,
   NN__OPENCL_DRIVER_DIRS and every name that these set, taken out; lib "": the loader's
   own search); its exit status, or -1 (killed: its alarm ended a blocked child). */
static int run_child_env(const char *argv0, const char *which, const char *lib, const char *const *extra) {
    static const char *const drop[] = {"NN_TEST_CL_LOAD=", "NN_OPENCL_LIBRARY=", "NN_DEVICE=", "NN_LOG=",
                                       "NN__OPENCL_DRIVER_DIRS="};
    char case_var[64], lib_var[600], *argv[2], **envp;
    size_t n = 0, i, k, n_extra = 0;
    pid_t pid;
    int status = -1;
    while (environ[n]) n++;
    while (extra && extra[n_extra]) n_extra++;
    envp = (char **)malloc((n + n_extra + 3) * sizeof *envp);
    if (!envp) return -1;
    for (i = 0, n = 0; environ[i]; i++) {
        int keep = 1;
        for (k = 0; k < sizeof drop / sizeof drop[0]; k++)
            if (strncmp(environ[i], drop[k], strlen(drop[k])) == 0) keep = 0;
        for (k = 0; k < n_extra; k++) {
            size_t name = strcspn(extra[k], "=") + 1;
            if (strncmp(environ[i], extra[k], name) == 0) keep = 0;
        }
        if (keep) envp[n++] = environ[i];
    }
    snprintf(case_var, sizeof case_var, "NN_TEST_CL_LOAD=%s", which);
    snprintf(lib_var, sizeof lib_var, "NN_OPENCL_LIBRARY=%s", lib);
    envp[n++] = case_var;
    envp[n++] = lib_var;
    for (k = 0; k < n_extra; k++) envp[n++] = (char *)extra[k];
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

static int run_child(const char *argv0, const char *which, const char *lib) {
    return run_child_env(argv0, which, lib, NULL);
}

static int t_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = fputs(text, f) >= 0;
    return (fclose(f) == 0) && ok;
}

static void t_rm_rf(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
}

/* The path of the loaded libm (from /proc/self/maps): a shared library that is not an
   OpenCL library, to stand in for the ICD loader so that the vendor .icd files are read. */
static int t_libm_path(char *out, size_t n) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1400];
    int found = 0;
    if (!f) return 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *p = strchr(line, '/');
        size_t len;
        if (!p || (!strstr(p, "/libm.so") && !strstr(p, "/libm-"))) continue;
        len = strcspn(p, "\n");
        if (len < n) {
            memcpy(out, p, len);
            out[len] = 0;
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* dir/lib: libOpenCL.so.1 and libOpenCL.so, both links to libm (no ICD loader, for the
   child whose LD_LIBRARY_PATH is dir/lib); dir/vendors: v00..v39.icd naming drivers that
   do not exist, a FIFO v20-fifo.icd, T_RAW_ICD naming T_RAW_LIB, and zz.icd naming driver
   when it is not NULL. 1 when all is made. */
static int t_vendors_dir(const char *dir, const char *libm, const char *driver) {
    char path[1100], text[200];
    int i, ok = 1;
    snprintf(path, sizeof path, "%s/lib", dir);
    ok &= mkdir(path, 0700) == 0;
    snprintf(path, sizeof path, "%s/lib/libOpenCL.so.1", dir);
    ok &= symlink(libm, path) == 0;
    snprintf(path, sizeof path, "%s/lib/libOpenCL.so", dir);
    ok &= symlink(libm, path) == 0;
    snprintf(path, sizeof path, "%s/vendors", dir);
    ok &= mkdir(path, 0700) == 0;
    for (i = 0; ok && i < 40; i++) {
        snprintf(path, sizeof path, "%s/vendors/v%02d.icd", dir, i);
        snprintf(text, sizeof text, "/nonexistent/nn-test-driver-%02d.so\n", i);
        ok &= t_file(path, text);
    }
    snprintf(path, sizeof path, "%s/vendors/v20-fifo.icd", dir);
    ok &= mkfifo(path, 0600) == 0;
    snprintf(path, sizeof path, "%s/vendors/" T_RAW_ICD, dir);
    ok &= t_file(path, T_RAW_LIB "\n");
    if (driver) {
        snprintf(path, sizeof path, "%s/vendors/zz.icd", dir);
        snprintf(text, sizeof text, "%.190s\n", driver);
        ok &= t_file(path, text);
    }
    return ok;
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
    return run_child_env(argv0, which, "", vars);
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
                "no OpenCL ICD loader or .icd file: OpenCL library libOpenCL.so.1 |; using "
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
                              "OpenCL library libOpenCL.so.1 |; no NVIDIA driver libnvidia-opencl.so.1 in "
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
    if (t_begin(e, "cl_load: NN_OPENCL_LIBRARY not a library: NN_ERR_UNAVAILABLE, what it is")) {
        static const char *const kinds[4][2] = {
            {"text", "is a text file, not a shared library (it begins \"# not a library\";"},
            {"empty", "is an empty file, not a shared library"},
            {"fifo", "is a FIFO, not a shared library: not loaded"},
            {"dir", "is a directory, not a shared library: not loaded"}};
        char dir[] = "/tmp/nn-test-cl-load-XXXXXX", path[300], expect[300];
        const char *env[2];
        int k;
        if (T_CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno))) {
            for (k = 0; k < 4; k++) {
                snprintf(path, sizeof path, "%s/%s", dir, kinds[k][0]);
                if (k == 0 && !T_CHECK(t_file(path, "# not a library\nat all\n"), "cannot write %s", path)) continue;
                if (k == 1 && !T_CHECK(t_file(path, ""), "cannot write %s", path)) continue;
                if (k == 2 && !T_CHECK(mkfifo(path, 0600) == 0, "mkfifo %s: %s", path, strerror(errno))) continue;
                if (k == 3 && !T_CHECK(mkdir(path, 0700) == 0, "mkdir %s: %s", path, strerror(errno))) continue;
                snprintf(expect, sizeof expect, "NN_TEST_CL_EXPECT=%s", kinds[k][1]);
                env[0] = expect;
                env[1] = NULL;
                st = run_child_env(argv0, "bad-library", path, env);
                T_CHECK(st == 0, "child process with NN_OPENCL_LIBRARY=<%s>: status %d%s", kinds[k][0], st,
                        st == -1 ? " (killed: blocked?)" : "");
            }
            t_rm_rf(dir);
        }
    }
    t_end();
    /* no ICD loader (libm stands in for it), the vendor .icd files: all of them tried */
    if (t_begin(e, "cl_load: vendor .icd files: all tried, a FIFO skipped, raw bytes escaped")) {
        char dir[] = "/tmp/nn-test-cl-load-XXXXXX", libm[1024], lp[300], ocl[300], nv[300];
        const char *env[4];
        if (!t_libm_path(libm, sizeof libm)) t_skip("no libm in /proc/self/maps to stand in for the ICD loader");
        else if (T_CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno))) {
            if (T_CHECK(t_vendors_dir(dir, libm, NULL), "cannot make the files in %s: %s", dir, strerror(errno))) {
                snprintf(lp, sizeof lp, "LD_LIBRARY_PATH=%s/lib", dir);
                snprintf(ocl, sizeof ocl, "OCL_ICD_VENDORS=%s/vendors", dir);
                snprintf(nv, sizeof nv, "NN__OPENCL_DRIVER_DIRS=%s/no-nvidia", dir); /* not this machine's */
                env[0] = lp;
                env[1] = ocl;
                env[2] = nv;
                env[3] = NULL;
                st = run_child_env(argv0, "vendors-none", "", env);
                T_CHECK(st == 0, "child process: status %d%s", st, st == -1 ? " (killed: blocked on the FIFO?)" : "");
            }
            t_rm_rf(dir);
        }
    }
    t_end();
    if (!t_begin(e, "cl_load: vendor .icd files: the 43rd names the driver, which runs")) (void)0;
    else if (!with_devices) t_skip("NN_TEST_BACKENDS=cpu");
    else if (!vendor_library(lib, sizeof lib)) t_skip("no .icd file names a vendor driver");
    else {
        char dir[] = "/tmp/nn-test-cl-load-XXXXXX", libm[1024], lp[300], ocl[300], nv[300];
        const char *env[4];
        if (!t_libm_path(libm, sizeof libm)) t_skip("no libm in /proc/self/maps to stand in for the ICD loader");
        else if (T_CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno))) {
            if (T_CHECK(t_vendors_dir(dir, libm, lib), "cannot make the files in %s: %s", dir, strerror(errno))) {
                snprintf(lp, sizeof lp, "LD_LIBRARY_PATH=%s/lib", dir);
                snprintf(ocl, sizeof ocl, "OCL_ICD_VENDORS=%s/vendors", dir);
                snprintf(nv, sizeof nv, "NN__OPENCL_DRIVER_DIRS=%s/no-nvidia", dir); /* not this machine's */
                env[0] = lp;
                env[1] = ocl;
                env[2] = nv;
                env[3] = NULL;
                st = run_child_env(argv0, "vendors-driver", "", env);
                T_CHECK(st == 0, "child process with zz.icd naming %s: status %d%s", lib, st,
                        st == -1 ? " (killed: blocked on the FIFO?)" : "");
            }
            t_rm_rf(dir);
        }
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
