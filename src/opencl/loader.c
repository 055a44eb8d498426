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

/* src into dst (n bytes), each byte that is a control character, not valid UTF-8, or a C1
   control (U+0080..U+009F) as \xNN, cut at a whole character: the names and bytes that
   .icd files, directories and drivers supply never reach a message raw. */
static void nn__cl_escape(char *dst, size_t n, const char *src) {
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0;
    if (n == 0) return;
    while (*s) {
        unsigned c = s[0];
        size_t len = 1, k;
        int ok = c >= 0x20 && c < 0x7f;
        if (c >= 0xc2 && c <= 0xf4) { /* a UTF-8 lead byte and its continuation bytes */
            len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
            for (ok = 1, k = 1; k < len && ok; k++) ok = (s[k] & 0xc0) == 0x80; /* stops at the NUL */
            if (ok && ((c == 0xc2 && s[1] < 0xa0) || (c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) ||
                       (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90)))
                ok = 0; /* C1 controls, overlong forms, surrogates, beyond U+10FFFF */
        }
        if (!ok) len = 1;
        if (o + (ok ? len : 4) >= n) break;
        if (ok) memcpy(dst + o, s, len);
        else snprintf(dst + o, 5, "\\x%02x", c);
        o += ok ? len : 4;
        s += len;
    }
    dst[o] = 0;
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

/* What lib is when the dynamic linker cannot load it: "not found", or what stands there
   (a FIFO, a text file, a binary for another machine...), from its first bytes. */
static void nn__cl_unloadable(const char *lib, const char *err, char *why, size_t n) {
#if defined(_WIN32)
    nn__cl_msg(why, n, "OpenCL library %s %s (%s)", lib, strstr(err, "error 126") ? "not found" : "cannot be loaded", err);
#else
    unsigned char *head = NULL;
    size_t len = 0, i;
    char what[160];
    int kind = 0, text = 1;
    if (!strchr(lib, '/')) { /* searched for by name: not found, unless the linker says otherwise */
        nn__cl_msg(why, n, "OpenCL library %s %s (%s)", lib, strstr(err, "No such file") ? "not found" : "cannot be loaded",
                   err);
        return;
    }
    if (nn__read_regular(lib, 64, 0, &head, &len, what, sizeof what, &kind) != NN_OK) {
        if (kind == NN__READ_MISSING) nn__cl_msg(why, n, "OpenCL library %s not found (%s)", lib, err);
        else nn__cl_msg(why, n, "OpenCL library %s cannot be loaded (%s)", lib, err);
        return;
    }
    for (i = 0; i < len; i++) text &= head[i] >= 0x20 || head[i] == '\n' || head[i] == '\r' || head[i] == '\t';
    if (len >= 4 && (memcmp(head, "\177ELF", 4) == 0 || memcmp(head, "\xfe\xed\xfa", 3) == 0 ||
                     memcmp(head + 1, "\xfa\xed\xfe", 3) == 0 || memcmp(head, "\xca\xfe\xba\xbe", 4) == 0))
        nn__cl_msg(why, n, "OpenCL library %s cannot be loaded: a binary, but not a shared library for this process "
                   "(%s)", lib, err); /* ELF or Mach-O: another machine, a missing dependency... */
    else if (len == 0)
        nn__cl_msg(why, n, "OpenCL library %s is an empty file, not a shared library (%s)", lib, err);
    else if (text) {
        for (i = 0; i < len && head[i] != '\n' && head[i] != '\r'; i++) {}
        head[i < 40 ? i : 40] = 0;
        nn__cl_msg(why, n, "OpenCL library %s is a text file, not a shared library (it begins \"%s\"; %s)", lib,
                   (const char *)head, err);
    } else
        nn__cl_msg(why, n, "OpenCL library %s is not a shared library (no ELF header; %s)", lib, err);
    NN_FREE(head);
#endif
}

/* Loads lib into nn__clfn: 0 (and why) when it cannot, else as nn__cl_resolve. A library
   that is not usable is unloaded again. A path to anything but a regular file is refused
   before the dynamic linker opens it (which would wait forever on a FIFO). */
static int nn__cl_try(const char *lib, char *why, size_t n) {
    char err[1024];
    nn__cl_api api;
    int mode;
    void *h;
#if !defined(_WIN32)
    struct stat st;
    if (strchr(lib, '/') && stat(lib, &st) == 0 && !S_ISREG(st.st_mode)) {
        nn__cl_msg(why, n, "OpenCL library %s is %s, not a shared library: not loaded", lib,
                   nn__file_kind((unsigned)st.st_mode));
        return 0;
    }
#endif
    h = nn__dl_open(lib, err, sizeof err);
    if (!h) {
        nn__cl_unloadable(lib, err, why, n);
        return 0;
    }
    memset(&api, 0, sizeof api);
    mode = nn__cl_resolve(h, lib, &api, why, n);
    if (mode) nn__clfn = api;
    else nn__dl_close(h);
    return mode;
}

#if NN__CL_VENDOR_ICDS
static int nn__cl_strcmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The library that the .icd file at path names (its first line), or 0 and why. The file
   is read as the library's other files are (nn__read_regular): a FIFO or a device is
   refused without waiting on it. */
static int nn__cl_icd_line(const char *path, char *lib, size_t lib_n, char *why, size_t n) {
    unsigned char *text = NULL;
    size_t len = 0, k;
    if (nn__read_regular(path, 65536, 1, &text, &len, why, n, NULL) != NN_OK) return 0;
    for (k = 0; k < len && text[k] != '\n' && text[k] != '\r' && text[k] != 0; k++) {}
    while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) k--;
    if (k == 0 || k >= lib_n) {
        nn__cl_msg(why, n, "%s: %s", path, k == 0 ? "names no library" : "names a library path too long to load");
        NN_FREE(text);
        return 0;
    }
    memcpy(lib, text, k);
    lib[k] = 0;
    NN_FREE(text);
    return 1;
}

/* No loader: the vendor drivers that the .icd files of $OCL_ICD_VENDORS (a directory, or
   one .icd file) or /etc/OpenCL/vendors name, every one in name order; the first that loads
   is used. 0 and the reason (appended to why) when none does: how many files were tried,
   and the last one's failure. */
static int nn__cl_try_vendors(char *why, size_t n) {
    const char *env = getenv("OCL_ICD_VENDORS"), *dir = env && env[0] ? env : "/etc/OpenCL/vendors";
    char **names = NULL, last[1536] = "", lib[1024], cut[160] = "";
    int count = 0, cap = 0, k, mode = 0, is_dir = 0;
    size_t used = strlen(why);
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        is_dir = 1;
        while ((e = readdir(d)) != NULL) {
            size_t len = strlen(e->d_name);
            char *copy;
            if (len <= 4 || strcmp(e->d_name + len - 4, ".icd") != 0) continue;
            if (count == cap) {
                int grow = cap ? cap * 2 : 32;
                char **more = (char **)NN_REALLOC(names, (size_t)grow * sizeof *names);
                if (!more) break;
                names = more;
                cap = grow;
            }
            if (!(copy = nn__strdup(e->d_name))) break;
            names[count++] = copy;
        }
        if (e) nn__cl_msg(cut, sizeof cut, " (out of memory listing %s: only %d .icd files tried)", dir, count);
        closedir(d);
        if (count > 1) qsort(names, (size_t)count, sizeof *names, nn__cl_strcmp);
    } else if (strlen(dir) > 4 && strcmp(dir + strlen(dir) - 4, ".icd") == 0) {
        count = 1; /* the file itself */
    }
    for (k = 0; k < count && !mode; k++) {
        size_t plen = is_dir ? strlen(dir) + strlen(names[k]) + 2 : strlen(dir) + 1;
        char *path = (char *)NN_MALLOC(plen);
        if (!path) {
            nn__cl_msg(last, sizeof last, "out of memory");
            break;
        }
        if (is_dir) snprintf(path, plen, "%s/%s", dir, names[k]);
        else memcpy(path, dir, plen);
        if (!nn__cl_icd_line(path, lib, sizeof lib, last, sizeof last)) {
            NN_FREE(path);
            continue;
        }
        mode = nn__cl_try(lib, last, sizeof last);
        if (mode)
            nn__cl_msg(nn__cl_ld.note, sizeof nn__cl_ld.note, "no OpenCL ICD loader: %s; using the driver %s named by %s%s",
                       why, lib, path, mode == 2 ? ", through its ICD dispatch table" : "");
        else
            nn__cl_msg(last + strlen(last), sizeof last - strlen(last), " (named by %s)", path);
        NN_FREE(path);
    }
    for (k = 0; is_dir && k < count; k++) NN_FREE(names[k]);
    NN_FREE(names);
    if (mode || used >= n) return mode;
    if (last[0] && count > 1)
        nn__cl_msg(why + used, n - used, "; no vendor driver loads either (%d .icd files in %s%s, the last: %s)", count,
                   dir, cut, last);
    else if (last[0]) nn__cl_msg(why + used, n - used, "; no vendor driver loads either: %s%s", last, cut);
    else nn__cl_msg(why + used, n - used, "; no vendor driver in %s%s", dir, cut);
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

#if defined(__linux__)
#if !defined(__cplusplus)
/* POSIX's, declared again: a program that included <stdlib.h> before nn.h, without asking for
   POSIX (strict C99), has no declaration of it (C++ compilers on Linux ask for it) */
int setenv(const char *name, const char *value, int overwrite);
#endif
/* The first line of a small text file starting with key (the whole first line where key is
   ""), after the key and any blanks, without its newline; 0 where there is none. */
static int nn__cl_text_line(const char *path, const char *key, char *out, size_t n) {
    FILE *f = fopen(path, "r");
    char line[512];
    size_t kl = strlen(key);
    int found = 0;
    if (!f) return 0;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0) {
            const char *s = line + kl;
            size_t len;
            while (*s == ' ' || *s == '\t') s++;
            len = strcspn(s, "\r\n");
            if (len < n) {
                memcpy(out, s, len);
                out[len] = 0;
                found = 1;
            }
            break;
        }
    }
    fclose(f);
    return found;
}
#endif

/* PoCL's CPU device runs a launch's work-groups on worker threads that sleep on a condition
   variable whenever its queue is empty, which happens between any two kernels. On the
   2-vCPU VMs this project is measured on, the woken worker did not run for the first
   100-150 us of a launch, so a kernel of 150 us ran on one core: 1.02x one worker's speed with two,
   against 1.73-1.88x with each worker pinned to its own CPU (PoCL's POCL_AFFINITY=1), and
   the MLP's training step 2% faster (median of 8 alternating process pairs; BENCHMARKS.md,
   "PoCL's step in four launches"). So before
   the OpenCL library loads, POCL_AFFINITY=1 goes into the environment, where: the user has
   set none of POCL_AFFINITY, POCL_MAX_PTHREAD_COUNT and POCL_CPU_MAX_CU_COUNT (PoCL pins
   worker i to CPU i, which must exist and be allowed: it aborts where the call fails), the
   process may run on every online CPU, those are 0..N-1, and NN_POCL_AFFINITY is not 0
   (which leaves PoCL as it is). Other drivers do not read the variable. Linux only. */
static void nn__cl_pocl_affinity(void) {
#if defined(__linux__)
    char online[256], allowed[256];
    const char *opt = getenv("NN_POCL_AFFINITY"), *s;
    if ((opt && strcmp(opt, "0") == 0) || getenv("POCL_AFFINITY") || getenv("POCL_MAX_PTHREAD_COUNT") ||
        getenv("POCL_CPU_MAX_CU_COUNT"))
        return;
    if (!nn__cl_text_line("/sys/devices/system/cpu/online", "", online, sizeof online) ||
        !nn__cl_text_line("/proc/self/status", "Cpus_allowed_list:", allowed, sizeof allowed) ||
        strcmp(online, allowed) != 0)
        return;
    /* "0" or "0-N": CPUs 0..N, no gaps */
    s = online;
    if (*s++ != '0') return;
    if (*s == '-') {
        s++;
        if (!(*s >= '0' && *s <= '9')) return;
        while (*s >= '0' && *s <= '9') s++;
    }
    if (*s) return;
    setenv("POCL_AFFINITY", "1", 0);
#endif
}

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
    nn__cl_pocl_affinity();
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

/* nn__cl_load_once, then its messages escaped (they hold file names, .icd files' bytes and
   the dynamic linker's words). */
static void nn__cl_load_once_escaped(void) {
    static char raw[sizeof nn__cl_ld.note];
    nn__cl_load_once();
    memcpy(raw, nn__cl_ld.why, sizeof nn__cl_ld.why);
    nn__cl_escape(nn__cl_ld.why, sizeof nn__cl_ld.why, raw);
    memcpy(raw, nn__cl_ld.note, sizeof nn__cl_ld.note);
    nn__cl_escape(nn__cl_ld.note, sizeof nn__cl_ld.note, raw);
}

#if defined(_WIN32)
static INIT_ONCE nn__cl_once = INIT_ONCE_STATIC_INIT;
static BOOL CALLBACK nn__cl_load_once_win(PINIT_ONCE once, PVOID param, PVOID *context) {
    (void)once;
    (void)param;
    (void)context;
    nn__cl_load_once_escaped();
    return TRUE;
}
#else
static pthread_once_t nn__cl_once = PTHREAD_ONCE_INIT;
#endif

/* Device discovery and opening (clGetPlatformIDs, clGetDeviceIDs, the device queries,
   clCreateContext), one thread at a time in the process: PoCL's first discovery is not
   thread-safe (two threads creating contexts at once found no device in 4 of 5 runs
   through the ICD loader, and crashed with PoCL loaded directly). A nested call on the
   thread that holds it (from a log callback) goes on without taking it again. */
static struct nn__mutex nn__cl_discovery = NN__MUTEX_INIT;
#ifdef NN__TLS
static NN__TLS int nn__cl_discovering; /* this thread holds it: a log callback's nested call */
#endif
static NN__MAYBE_UNUSED void nn__cl_discovery_lock(void) {
#ifdef NN__TLS
    if (nn__cl_discovering++) return;
#endif
    nn__mutex_lock(&nn__cl_discovery);
}
static NN__MAYBE_UNUSED void nn__cl_discovery_unlock(void) {
#ifdef NN__TLS
    if (--nn__cl_discovering) return;
#endif
    nn__mutex_unlock(&nn__cl_discovery);
}

/* 1 when nn__clfn can be called; else 0, and nn__cl_ld.why says why. Thread-safe. */
static int nn__cl_load(void) {
#if defined(_WIN32)
    InitOnceExecuteOnce(&nn__cl_once, nn__cl_load_once_win, NULL, NULL);
#else
    pthread_once(&nn__cl_once, nn__cl_load_once_escaped);
#endif
    return nn__cl_ld.ok;
}
