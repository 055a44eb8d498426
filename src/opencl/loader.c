/* Loading the OpenCL library at run time, once per process, into nn__clfn (opencl/cl_api.h).

   Which library: $NN_OPENCL_LIBRARY when set (that one alone); else the system's ICD loader
   (libOpenCL.so.1, then libOpenCL.so; OpenCL.dll; the OpenCL framework on macOS); else, on
   Linux and the BSDs, a vendor driver named by an .icd file in $OCL_ICD_VENDORS or
   /etc/OpenCL/vendors, which is what a loader would have loaded; else, on Linux, NVIDIA's
   driver libnvidia-opencl.so.1, which GPU containers often ship without a loader or an
   .icd file, where the dynamic linker finds it or in the folders drivers are installed
   in. A library that exports
   the cl* functions is called directly. A vendor driver built for a loader exports only
   clIcdGetPlatformIDsKHR (often only through clGetExtensionFunctionAddress): then the
   platforms come from it, and every other call goes through the dispatch table that the
   first member of each OpenCL object points to, as a loader does. The library stays
   loaded for the life of the process. */
#include "../base/internal.h"
#include "cl_api.h"
#if defined(_WIN32)
#  include <windows.h>
#else
#  include <dlfcn.h>
#  include <pthread.h>
#endif
#if !defined(_WIN32) && !defined(__APPLE__)
#  include <dirent.h>
#  define NN__CL_VENDOR_ICDS 1
#else
#  define NN__CL_VENDOR_ICDS 0
#endif
#if defined(__linux__)
#  include <sys/stat.h>
#  define NN__CL_NVIDIA 1
#else
#  define NN__CL_NVIDIA 0
#endif

typedef void (*nn__cl_voidfn)(void);

typedef struct nn__cl_loader {
    int ok;              /* nn__clfn is filled */
    char why[1536];      /* !ok: why not */
    char note[4096];     /* ok: which library, when it is not the system's loader */
} nn__cl_loader;

static nn__cl_loader nn__cl_ld;

/* Messages: written whole, or cut at n - 1 characters (a long path only shortens them). */
static void nn__cl_msg(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    if (n == 0) return;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

/* ---- the dynamic linker ---- */

static void *nn__dl_open(const char *path, char *err, size_t n) {
#if defined(_WIN32)
    void *h = (void *)LoadLibraryA(path);
    if (!h) snprintf(err, n, "LoadLibrary error %lu", (unsigned long)GetLastError());
    return h;
#else
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(err, n, "%s", e ? e : "dlopen failed");
    }
    return h;
#endif
}

static void nn__dl_close(void *h) {
#if defined(_WIN32)
    FreeLibrary((HMODULE)h);
#else
    dlclose(h);
#endif
}

static nn__cl_voidfn nn__dl_sym(void *h, const char *name) {
    nn__cl_voidfn f;
#if defined(_WIN32)
    f = (nn__cl_voidfn)GetProcAddress((HMODULE)h, name);
#else
    void *p = dlsym(h, name);
    memcpy(&f, &p, sizeof f); /* ISO C has no cast from an object to a function pointer */
#endif
    return f;
}

/* ---- calls through a vendor driver's dispatch tables ---- */

static const nn__cl_voidfn *nn__cl_dispatch(const void *obj) { return *(const nn__cl_voidfn *const *)obj; }

/* nn__icd_GetPlatformInfo, ...: each calls the entry of its object's dispatch table. */
#define NN__CL_ICD_CALL(R, N, P, A, O, I) \
    static R NN__CL_CALL nn__icd_##N P { return ((nn__clpfn_##N)nn__cl_dispatch(O)[I]) A; }
NN__CL_OBJ_FUNCS(NN__CL_ICD_CALL)
#undef NN__CL_ICD_CALL

/* The dispatch tables index OpenCL 1.2 entries (clEnqueueFillBuffer), which a 1.0 or 1.1
   driver's table does not have: such a driver is refused before any call reaches one. */
static int nn__cl_icd_check(nn__clpfn_GetPlatformIDs get, const char *lib, char *why, size_t n) {
    cl_platform_id plats[16];
    cl_uint np = 0, i;
    if (get(16, plats, &np) != CL_SUCCESS) return 1; /* no platform: nothing will be called */
    for (i = 0; i < np && i < 16; i++) {
        char ver[256];
        int major = 0, minor = 0;
        ver[0] = 0;
        nn__icd_GetPlatformInfo(plats[i], CL_PLATFORM_VERSION, sizeof ver, ver, NULL);
        ver[sizeof ver - 1] = 0;
        if (sscanf(ver, "OpenCL %d.%d", &major, &minor) != 2 || major * 100 + minor < 102) {
            nn__cl_msg(why, n, "%s implements \"%s\", and nn.h needs OpenCL 1.2", lib, ver);
            return 0;
        }
    }
    return 1;
}

/* Fills api from a loaded library: 1 called directly, 2 through dispatch tables, 0 (and
   why) when it is not an OpenCL 1.2 library. */
static int nn__cl_resolve(void *h, const char *lib, nn__cl_api *api, char *why, size_t n) {
    nn__cl_voidfn f;
    if (nn__dl_sym(h, "clGetPlatformIDs")) {
#define NN__CL_SYM(R, N, P, A, O, I)                                                               \
        if (!(f = nn__dl_sym(h, "cl" #N))) {                                                        \
            nn__cl_msg(why, n, "OpenCL library %s has no symbol cl" #N " (nn.h needs OpenCL 1.2)", lib); \
            return 0;                                                                               \
        }                                                                                           \
        api->N = (nn__clpfn_##N)f;
        NN__CL_FUNCS(NN__CL_SYM)
#undef NN__CL_SYM
        return 1;
    }
    f = nn__dl_sym(h, "clIcdGetPlatformIDsKHR");
    if (!f) {
        nn__cl_voidfn gefa = nn__dl_sym(h, "clGetExtensionFunctionAddress");
        if (gefa) {
            void *p = ((void *(NN__CL_CALL *)(const char *))gefa)("clIcdGetPlatformIDsKHR");
            memcpy(&f, &p, sizeof f);
        }
    }
    if (!f) {
        nn__cl_msg(why, n, "%s is not an OpenCL library: it has neither clGetPlatformIDs nor clIcdGetPlatformIDsKHR",
                   lib);
        return 0;
    }
    if (!nn__cl_icd_check((nn__clpfn_GetPlatformIDs)f, lib, why, n)) return 0;
    api->GetPlatformIDs = (nn__clpfn_GetPlatformIDs)f;
#define NN__CL_ICD_SET(R, N, P, A, O, I) api->N = nn__icd_##N;
    NN__CL_OBJ_FUNCS(NN__CL_ICD_SET)
#undef NN__CL_ICD_SET
    return 2;
}

/* Loads lib into nn__clfn: 0 (and why) when it cannot, else as nn__cl_resolve. A library
   that is not usable is unloaded again. */
static int nn__cl_try(const char *lib, char *why, size_t n) {
    char err[1024];
    nn__cl_api api;
    int mode;
    void *h = nn__dl_open(lib, err, sizeof err);
    if (!h) {
        nn__cl_msg(why, n, "OpenCL library %s not found (%s)", lib, err);
        return 0;
    }
    memset(&api, 0, sizeof api);
    mode = nn__cl_resolve(h, lib, &api, why, n);
    if (mode) nn__clfn = api;
    else nn__dl_close(h);
    return mode;
}

#if NN__CL_VENDOR_ICDS
static int nn__cl_strcmp(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* No loader: the vendor drivers that the .icd files of $OCL_ICD_VENDORS (a directory, or
   one .icd file) or /etc/OpenCL/vendors name, in name order; the first that loads is
   used. 0 and the reason (appended to why) when none does. */
static int nn__cl_try_vendors(char *why, size_t n) {
    const char *env = getenv("OCL_ICD_VENDORS"), *dir = env && env[0] ? env : "/etc/OpenCL/vendors";
    char names[32][256], last[1536] = "";
    int count = 0, k, mode = 0, is_dir = 0;
    size_t used = strlen(why);
    DIR *d = opendir(dir);
    if (d) {
        is_dir = 1;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && count < 32) {
            size_t len = strlen(e->d_name);
            if (len > 4 && len < sizeof names[0] && strcmp(e->d_name + len - 4, ".icd") == 0)
                memcpy(names[count++], e->d_name, len + 1);
        }
        closedir(d);
        qsort(names, (size_t)count, sizeof names[0], nn__cl_strcmp);
    } else if (strlen(dir) > 4 && strcmp(dir + strlen(dir) - 4, ".icd") == 0) {
        count = 1; /* the file itself */
    }
    for (k = 0; k < count && !mode; k++) {
        char path[1024], lib[512];
        FILE *f;
        size_t len;
        int w = is_dir ? snprintf(path, sizeof path, "%s/%s", dir, names[k]) : snprintf(path, sizeof path, "%s", dir);
        if (w < 0 || (size_t)w >= sizeof path || !(f = fopen(path, "r"))) continue;
        lib[0] = 0;
        if (!fgets(lib, sizeof lib, f)) lib[0] = 0;
        fclose(f);
        len = strlen(lib);
        while (len > 0 && (lib[len - 1] == '\n' || lib[len - 1] == '\r' || lib[len - 1] == ' ')) lib[--len] = 0;
        if (!lib[0]) continue;
        mode = nn__cl_try(lib, last, sizeof last);
        if (mode)
            nn__cl_msg(nn__cl_ld.note, sizeof nn__cl_ld.note, "no OpenCL ICD loader: %s; using the driver %s named by %s%s",
                       why, lib, path, mode == 2 ? ", through its ICD dispatch table" : "");
        else
            nn__cl_msg(last + strlen(last), sizeof last - strlen(last), " (named by %s)", path);
    }
    if (mode || used >= n) return mode;
    if (last[0]) nn__cl_msg(why + used, n - used, "; no vendor driver loads either: %s", last);
    else nn__cl_msg(why + used, n - used, "; no vendor driver in %s", env && env[0] ? env : "/etc/OpenCL/vendors");
    return 0;
}
#endif

#if NN__CL_NVIDIA
/* No loader and no .icd file that loads: NVIDIA's OpenCL driver, which GPU containers often
   ship without either, where the dynamic linker finds it ($LD_LIBRARY_PATH, ld.so.cache),
   else in the folders drivers are installed in. $NN__OPENCL_DRIVER_DIRS, a colon list of
   folders, replaces both (for tests). 0 and the reason (appended to why) when none loads;
   else the note says which file was used. */
static int nn__cl_try_nvidia(char *why, size_t n) {
    static const char lib[] = "libnvidia-opencl.so.1";
    static const char *const usual[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu",
                                        "/usr/lib", "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
                                        "/usr/lib/wsl/lib", "/run/nvidia/driver/usr/lib/x86_64-linux-gnu",
                                        "/run/nvidia/driver/usr/lib64"};
    const char *dirs = getenv("NN__OPENCL_DRIVER_DIRS"), *p;
    char last[1536] = "", path[1024], where[600] = "";
    size_t used = strlen(why), k;
    int mode = 0;
    if (!dirs) { /* the loader path first; that it is not there is no news, a file that fails is */
        mode = nn__cl_try(lib, last, sizeof last);
        if (mode) snprintf(path, sizeof path, "%s (on the loader path)", lib);
        else if (strstr(last, "cannot open shared object file")) last[0] = 0;
        for (k = 0; k < sizeof usual / sizeof usual[0]; k++) /* 260 characters in all */
            nn__cl_msg(where + strlen(where), sizeof where - strlen(where), "%s%s", k ? ":" : "", usual[k]);
    } else {
        snprintf(where, sizeof where, "%s", dirs);
    }
    for (p = where; *p && !mode;) { /* each folder of the colon list */
        size_t len = strcspn(p, ":");
        struct stat st;
        if (len > 0 && len + sizeof lib + 1 < sizeof path) {
            memcpy(path, p, len);
            path[len] = '/';
            memcpy(path + len + 1, lib, sizeof lib);
            if (stat(path, &st) == 0) mode = nn__cl_try(path, last, sizeof last);
        }
        p += len;
        if (*p == ':') p++;
    }
    if (mode) {
        nn__cl_msg(nn__cl_ld.note, sizeof nn__cl_ld.note,
                   "no OpenCL ICD loader or .icd file: %s; using NVIDIA's driver %s%s", why, path,
                   mode == 2 ? ", through its ICD dispatch table" : "");
        return mode;
    }
    if (used >= n) return 0;
    if (last[0]) nn__cl_msg(why + used, n - used, "; NVIDIA's driver does not load either: %s", last);
    else nn__cl_msg(why + used, n - used, "; no NVIDIA driver %s %sin %s", lib, dirs ? "" : "on the loader path or ",
                    dirs ? "$NN__OPENCL_DRIVER_DIRS" : where);
    return 0;
}
#endif

static void nn__cl_load_once(void) {
#if defined(_WIN32)
    static const char *const libs[] = {"OpenCL.dll"};
#elif defined(__APPLE__)
    static const char *const libs[] = {"/System/Library/Frameworks/OpenCL.framework/OpenCL"};
#else
    static const char *const libs[] = {"libOpenCL.so.1", "libOpenCL.so"};
#endif
    nn__cl_loader *L = &nn__cl_ld;
    const char *env = getenv("NN_OPENCL_LIBRARY");
    char other[1536];
    size_t k;
    int mode;
    if (env && env[0]) {
        mode = nn__cl_try(env, L->why, sizeof L->why);
        if (mode)
            nn__cl_msg(L->note, sizeof L->note, "OpenCL library %s (NN_OPENCL_LIBRARY)%s", env,
                       mode == 2 ? ", called through its ICD dispatch table" : "");
        L->ok = mode != 0;
        return;
    }
    for (k = 0; k < sizeof libs / sizeof libs[0]; k++) {
        mode = nn__cl_try(libs[k], k == 0 ? L->why : other, k == 0 ? sizeof L->why : sizeof other);
        if (mode) {
            if (mode == 2)
                nn__cl_msg(L->note, sizeof L->note, "OpenCL library %s, called through its ICD dispatch table", libs[k]);
            L->ok = 1;
            return;
        }
    }
#if NN__CL_VENDOR_ICDS
    L->ok = nn__cl_try_vendors(L->why, sizeof L->why) != 0;
#endif
#if NN__CL_NVIDIA
    if (!L->ok) L->ok = nn__cl_try_nvidia(L->why, sizeof L->why) != 0;
#endif
}

#if defined(_WIN32)
static INIT_ONCE nn__cl_once = INIT_ONCE_STATIC_INIT;
static BOOL CALLBACK nn__cl_load_once_win(PINIT_ONCE once, PVOID param, PVOID *context) {
    (void)once;
    (void)param;
    (void)context;
    nn__cl_load_once();
    return TRUE;
}
#else
static pthread_once_t nn__cl_once = PTHREAD_ONCE_INIT;
#endif

/* 1 when nn__clfn can be called; else 0, and nn__cl_ld.why says why. Thread-safe. */
static int nn__cl_load(void) {
#if defined(_WIN32)
    InitOnceExecuteOnce(&nn__cl_once, nn__cl_load_once_win, NULL, NULL);
#else
    pthread_once(&nn__cl_once, nn__cl_load_once);
#endif
    return nn__cl_ld.ok;
}
