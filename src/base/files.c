/* Reading and writing whole files, and the platform block for files and processes. Every
   reader treats its input as untrusted: sizes are checked before they are used, and any
   failure returns NN_ERR_IO naming the file (NN_ERR_OUT_OF_MEMORY when an allocation
   fails), with nothing allocated.

   Reading: only regular files. A FIFO is opened without waiting for a writer and then
   refused, so a path to one cannot hang the caller; a directory or a device is refused by
   name. Writing (nn__wfile): the bytes go to a new temporary file beside the target, which
   is flushed to disk (fsync) and renamed over the target, so a reader sees the old file or
   the new one, never a part, and a failed save leaves the old file as it was. An existing
   target must be a regular file; a symbolic link to one is followed and the file it names
   is replaced (the link stays, as when PyTorch or numpy write through it); a link that
   names nothing, a directory, a FIFO or a device node is refused.

   Files are read and written only through these (src/files/ for the formats, the OpenCL
   backend for its program cache, the OpenCL loader for .icd files). The program cache's
   directory is made 0700, and used only while it is the user's alone (nn__dir_private). */
#include "internal.h"

#include <sys/stat.h>
#include <time.h>
#if defined(_WIN32)
#  include <windows.h>
#  include <direct.h>
#  include <io.h>
#  include <fcntl.h>
#  include <process.h>
#  define nn__mkdir(p) _mkdir(p)
#  define nn__getpid() _getpid()
#  define nn__sleep_ms(ms) Sleep(ms)
#  define NN__S_ISREG(m) (((m) & _S_IFMT) == _S_IFREG)
#  define NN__S_ISDIR(m) (((m) & _S_IFMT) == _S_IFDIR)
#else
#  include <fcntl.h>
#  include <unistd.h>
#  include <poll.h>
#  define nn__mkdir(p) mkdir(p, 0700) /* the program cache's: the user's alone */
#  define nn__getpid() getpid()
#  define nn__sleep_ms(ms) (void)poll(NULL, 0, ms) /* declared even where a strict -std hides nanosleep */
#  define NN__S_ISREG(m) S_ISREG(m)
#  define NN__S_ISDIR(m) S_ISDIR(m)
/* POSIX.1-2008 (lstat, realpath, O_CLOEXEC) is declared unless a strict ISO mode hides it
   (-std=c99 with a system header included before nn.h): then a symbolic link is not seen
   as one, and a save replaces the link itself. */
#  if defined(O_CLOEXEC)
#    define NN__POSIX2008 1
#  else
#    define NN__POSIX2008 0
#    define O_CLOEXEC 0
#  endif
#  ifndef O_DIRECTORY
#    define O_DIRECTORY 0
#  endif
#endif

/* How a save makes its bytes durable before the rename (a test build may count calls). */
#ifndef NN__FSYNC
#  if defined(_WIN32)
#    define NN__FSYNC(fd) _commit(fd)
#  else
#    define NN__FSYNC(fd) fsync(fd)
#  endif
#endif

/* What a path that is not a regular file is, for messages. */
static const char *nn__file_kind(unsigned mode) {
    if (NN__S_ISDIR(mode)) return "a directory";
#if !defined(_WIN32)
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
#  ifdef S_ISSOCK
    if (S_ISSOCK(mode)) return "a socket";
#  endif
#endif
    return "not a regular file";
}

/* The core of the readers, quiet: the first bytes of a regular file, or the whole of it.
   whole: the file, which must have at most max bytes; else its first min(size, max) bytes.
   Either way one byte more (set to 0) follows the *len bytes read. On failure the code
   (NN_ERR_IO, NN_ERR_OUT_OF_MEMORY), nothing allocated, and the message in why; *kind
   (when given) is NN__READ_MISSING when the path does not exist, NN__READ_TOO_LARGE when
   the whole file has more than max bytes. A FIFO is opened without waiting for a writer
   and refused; so are directories and devices. */
enum { NN__READ_FAILED = 1, NN__READ_MISSING, NN__READ_TOO_LARGE };
static nn_result nn__read_regular(const char *path, size_t max, int whole, unsigned char **data, size_t *len, char *why,
                                  size_t why_n, int *kind) {
    unsigned char *buf;
    size_t n, got = 0;
    *data = NULL;
    *len = 0;
    if (kind) *kind = NN__READ_FAILED;
    if (max >= SIZE_MAX) max = SIZE_MAX - 1;
#define NN__RFAIL(code, ...) return (snprintf(why, why_n, __VA_ARGS__), (code))
    if (!path) NN__RFAIL(NN_ERR_INVALID_ARGUMENT, "no path given");
#if defined(_WIN32)
    {
        struct _stat64 st;
        FILE *f;
        if (_stat64(path, &st) != 0) {
            if (kind && errno == ENOENT) *kind = NN__READ_MISSING;
            NN__RFAIL(NN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        }
        if (!NN__S_ISREG(st.st_mode))
            NN__RFAIL(NN_ERR_IO, "%s: %s, not a regular file", path, nn__file_kind((unsigned)st.st_mode));
        if (st.st_size < 0 || (whole && (uint64_t)st.st_size > (uint64_t)max)) {
            if (kind) *kind = NN__READ_TOO_LARGE;
            NN__RFAIL(NN_ERR_IO, "%s: too large to read (%lld bytes)", path, (long long)st.st_size);
        }
        n = (uint64_t)st.st_size > (uint64_t)max ? max : (size_t)st.st_size;
        f = fopen(path, "rb");
        if (!f) NN__RFAIL(NN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        buf = (unsigned char *)NN_MALLOC(n + 1);
        if (!buf) {
            fclose(f);
            NN__RFAIL(NN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %llu bytes to read it", path, (unsigned long long)n + 1);
        }
        got = fread(buf, 1, n, f);
        fclose(f);
        if (got != n) {
            NN_FREE(buf);
            NN__RFAIL(NN_ERR_IO, "%s: read error (%llu of %llu bytes)", path, (unsigned long long)got, (unsigned long long)n);
        }
    }
#else
    {
        struct stat st;
        int fd, fl, e = 0;
        /* O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused below) */
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            e = errno;
            if (kind && e == ENOENT) *kind = NN__READ_MISSING;
            NN__RFAIL(NN_ERR_IO, "%s: cannot open: %s", path, strerror(e));
        }
        if (fstat(fd, &st) != 0) {
            e = errno;
            close(fd);
            NN__RFAIL(NN_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
        }
        if (!S_ISREG(st.st_mode)) {
            close(fd);
            NN__RFAIL(NN_ERR_IO, "%s: %s, not a regular file", path, nn__file_kind((unsigned)st.st_mode));
        }
        if (st.st_size < 0 || (whole && (uint64_t)st.st_size > (uint64_t)max)) {
            close(fd);
            if (kind) *kind = NN__READ_TOO_LARGE;
            NN__RFAIL(NN_ERR_IO, "%s: too large to read (%lld bytes)", path, (long long)st.st_size);
        }
        fl = fcntl(fd, F_GETFL);
        if (fl != -1) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        n = (uint64_t)st.st_size > (uint64_t)max ? max : (size_t)st.st_size;
        buf = (unsigned char *)NN_MALLOC(n + 1);
        if (!buf) {
            close(fd);
            NN__RFAIL(NN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %llu bytes to read it", path, (unsigned long long)n + 1);
        }
        while (got < n) {
            size_t want = n - got > ((size_t)1 << 30) ? ((size_t)1 << 30) : n - got;
            ssize_t k = read(fd, buf + got, want);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                e = k < 0 ? errno : 0;
                break;
            }
            got += (size_t)k;
        }
        close(fd);
        if (got != n) {
            NN_FREE(buf);
            if (e) NN__RFAIL(NN_ERR_IO, "%s: read error: %s", path, strerror(e));
            NN__RFAIL(NN_ERR_IO, "%s: read error: the file shrank to %llu of its %llu bytes while read", path,
                      (unsigned long long)got, (unsigned long long)n);
        }
    }
#endif
#undef NN__RFAIL
    buf[n] = 0;
    *data = buf;
    *len = n;
    return NN_OK;
}

/* The whole of a regular file, with one byte more (set to 0) after its len bytes; a
   failure is the context's error. */
static NN__MAYBE_UNUSED nn_result nn__read_file(nn_context *ctx, const char *path, unsigned char **data, size_t *len) {
    char why[NN__ERRLEN];
    nn_result r = nn__read_regular(path, SIZE_MAX, 1, data, len, why, sizeof why, NULL);
    return r == NN_OK ? NN_OK : nn__fail(ctx, r, "%s", why);
}

/* ---- writing a file in place of another, all at once ---- */

typedef struct nn__wfile {
    char *target;             /* the file replaced: the path, or the file its symbolic link names */
    char *tmp;                /* the temporary file beside it, while it exists */
    int fd;
    char why[300];            /* the last failure's message (also nn_context_last_error's when a context is given) */
} nn__wfile;

/* A writer's failure: its message in w->why, and the context's error when there is one
   (none: a quiet writer, as the program cache's, which only logs). */
static nn_result nn__wfail(nn_context *ctx, nn__wfile *w, nn_result code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->why, sizeof w->why, fmt, ap);
    va_end(ap);
    return nn__fail(ctx, code, "%s", w->why);
}

static void nn__wfile_abort(nn__wfile *w) {
    if (w->fd >= 0) {
#if defined(_WIN32)
        _close(w->fd);
#else
        close(w->fd);
#endif
    }
    if (w->tmp) remove(w->tmp);
    NN_FREE(w->tmp);
    NN_FREE(w->target);
    w->tmp = w->target = NULL;
    w->fd = -1;
}

#if !defined(_WIN32)
/* The file a save to path replaces: path itself, or where its chain of symbolic links ends
   (a relative link is read from its link's directory), so the save writes through links as
   PyTorch's and numpy's do. *target (allocated) and *st: that file's lstat, st_mode 0 when
   it does not exist yet. */
static nn_result nn__save_target(nn_context *ctx, nn__wfile *w, const char *path, char **target, struct stat *st) {
    char *cur = nn__strdup(path);
    int hops = 0;
    *target = NULL;
    if (!cur) return nn__wfail(ctx, w, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
#if !NN__POSIX2008
    (void)hops;
    if (stat(cur, st) != 0) { /* links are not seen as such */
        int e = errno;
        memset(st, 0, sizeof *st);
        if (e != ENOENT) {
            NN_FREE(cur);
            return nn__wfail(ctx, w, NN_ERR_IO, "%s: %s", path, strerror(e));
        }
    }
#else
    for (hops = 0;; hops++) {
        char *link, *next;
        size_t size, dir;
        ssize_t k;
        if (lstat(cur, st) != 0) {
            int e = errno;
            memset(st, 0, sizeof *st);
            if (e == ENOENT) break; /* a new file (or one that a dangling link names) */
            NN_FREE(cur);
            return nn__wfail(ctx, w, NN_ERR_IO, "%s: %s", path, strerror(e));
        }
        if (!S_ISLNK(st->st_mode)) break;
        if (hops == 40) {
            NN_FREE(cur);
            return nn__wfail(ctx, w, NN_ERR_IO, "%s: more than 40 symbolic links in a row: not replaced", path);
        }
        for (size = (size_t)st->st_size + 1 > 256 ? (size_t)st->st_size + 1 : 256;; size *= 2) {
            link = (char *)NN_MALLOC(size);
            if (!link) {
                NN_FREE(cur);
                return nn__wfail(ctx, w, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
            }
            k = readlink(cur, link, size);
            if (k < 0 || (size_t)k < size || size >= 65536) break;
            NN_FREE(link); /* truncated: try a larger buffer */
        }
        if (k < 0 || (size_t)k >= size) {
            int e = k < 0 ? errno : ENAMETOOLONG;
            NN_FREE(link);
            NN_FREE(cur);
            return nn__wfail(ctx, w, NN_ERR_IO, "%s: cannot read its symbolic link: %s", path, strerror(e));
        }
        link[k] = 0;
        for (dir = strlen(cur); dir > 0 && cur[dir - 1] != '/'; dir--) {}
        if (link[0] == '/' || dir == 0) next = link;
        else { /* relative to the link's directory */
            next = (char *)NN_MALLOC(dir + (size_t)k + 1);
            if (next) {
                memcpy(next, cur, dir);
                memcpy(next + dir, link, (size_t)k + 1);
            }
            NN_FREE(link);
            if (!next) {
                NN_FREE(cur);
                return nn__wfail(ctx, w, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
            }
        }
        NN_FREE(cur);
        cur = next;
    }
#endif
    *target = cur;
    return NN_OK;
}
#endif

/* Creates the temporary file for a save to path (nothing is written to path yet). */
static nn_result nn__wfile_open(nn_context *ctx, const char *path, nn__wfile *w) {
    size_t tlen;
    unsigned attempt;
    long pid;
    int keep_mode = -1;
    memset(w, 0, sizeof *w);
    w->fd = -1;
    if (!path || !path[0]) return nn__wfail(ctx, w, NN_ERR_INVALID_ARGUMENT, "no path given");
#if defined(_WIN32)
    {
        struct _stat64 st;
        if (_stat64(path, &st) == 0 && !NN__S_ISREG(st.st_mode))
            return nn__wfail(ctx, w, NN_ERR_IO, "%s: %s, not a regular file: not replaced", path, nn__file_kind((unsigned)st.st_mode));
        w->target = nn__strdup(path);
        pid = (long)_getpid();
    }
#else
    {
        struct stat st;
        nn_result r = nn__save_target(ctx, w, path, &w->target, &st);
        if (r != NN_OK) return r;
        if (st.st_mode != 0 && !S_ISREG(st.st_mode)) {
            r = nn__wfail(ctx, w, NN_ERR_IO, "%s: %s%s%s, not a regular file: not replaced", path, nn__file_kind((unsigned)st.st_mode),
                         strcmp(path, w->target) ? " at the end of its symbolic link, " : "",
                         strcmp(path, w->target) ? w->target : "");
            NN_FREE(w->target);
            w->target = NULL;
            return r;
        }
        if (st.st_mode != 0) keep_mode = (int)(st.st_mode & 0777);
        pid = (long)getpid();
    }
#endif
    if (!w->target) return nn__wfail(ctx, w, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    tlen = strlen(w->target) + 48;
    w->tmp = (char *)NN_MALLOC(tlen);
    if (!w->tmp) {
        nn__wfile_abort(w);
        return nn__wfail(ctx, w, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    /* TARGET.tmp.PID.N: unique between processes by the pid, between threads by O_EXCL */
    for (attempt = 0; attempt < 1000; attempt++) {
        snprintf(w->tmp, tlen, "%s.tmp.%ld.%u", w->target, pid, attempt);
#if defined(_WIN32)
        w->fd = _open(w->tmp, _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY, _S_IREAD | _S_IWRITE);
#else
        w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* O_EXCL: never through a link */
#endif
        if (w->fd >= 0 || errno != EEXIST) break;
    }
    if (w->fd < 0) {
        nn_result r = nn__wfail(ctx, w, NN_ERR_IO, "%s: cannot create a temporary file beside it (%s): %s", path, w->tmp,
                               strerror(errno));
        NN_FREE(w->tmp); /* not created: nothing to remove */
        w->tmp = NULL;
        nn__wfile_abort(w);
        return r;
    }
#if !defined(_WIN32)
    if (keep_mode >= 0) (void)chmod(w->tmp, (mode_t)keep_mode); /* the replaced file's permissions */
#else
    (void)keep_mode;
#endif
    return NN_OK;
}

static nn_result nn__wfile_write(nn_context *ctx, nn__wfile *w, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    while (n > 0) {
        size_t want = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
#if defined(_WIN32)
        int k = _write(w->fd, p, (unsigned)want);
#else
        ssize_t k = write(w->fd, p, want);
        if (k < 0 && errno == EINTR) continue;
#endif
        if (k <= 0) return nn__wfail(ctx, w, NN_ERR_IO, "%s: write error: %s", w->tmp, k < 0 ? strerror(errno) : "nothing written");
        p += k;
        n -= (size_t)k;
    }
    return NN_OK;
}

/* Flushes the temporary file to disk and renames it over the target; on failure the
   temporary file is removed and the target is as it was. Releases w either way. */
static nn_result nn__wfile_commit(nn_context *ctx, const char *path, nn__wfile *w) {
    nn_result r = NN_OK;
    int fd = w->fd;
    w->fd = -1;
    if (NN__FSYNC(fd) != 0) r = nn__wfail(ctx, w, NN_ERR_IO, "%s: cannot flush it to disk: %s", w->tmp, strerror(errno));
#if defined(_WIN32)
    if (_close(fd) != 0 && r == NN_OK) r = nn__wfail(ctx, w, NN_ERR_IO, "%s: write error: %s", w->tmp, strerror(errno));
    if (r == NN_OK && rename(w->tmp, w->target) != 0) {
        remove(w->target); /* Windows' rename does not replace */
        if (rename(w->tmp, w->target) != 0)
            r = nn__wfail(ctx, w, NN_ERR_IO, "%s: cannot rename %s to it: %s", path, w->tmp, strerror(errno));
    }
#else
    if (close(fd) != 0 && r == NN_OK) r = nn__wfail(ctx, w, NN_ERR_IO, "%s: write error: %s", w->tmp, strerror(errno));
    if (r == NN_OK && rename(w->tmp, w->target) != 0)
        r = nn__wfail(ctx, w, NN_ERR_IO, "%s: cannot rename %s to it: %s", path, w->tmp, strerror(errno));
    if (r == NN_OK) { /* the directory entry too, so the rename outlives a crash (best effort) */
        char *slash = strrchr(w->target, '/'), save;
        const char *dir = ".";
        int dfd;
        if (slash) {
            save = slash[1];
            slash[1] = 0; /* "/x" keeps its "/" */
            dir = w->target;
            dfd = open(dir, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
            slash[1] = save;
        } else dfd = open(dir, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
        if (dfd >= 0) {
            (void)NN__FSYNC(dfd);
            close(dfd);
        }
    }
#endif
    if (r == NN_OK) {
        NN_FREE(w->tmp); /* renamed: nothing to remove */
        w->tmp = NULL;
    }
    nn__wfile_abort(w);
    return r;
}

/* Whether the directory at path is the user's alone, as ssh asks of its files: owned by
   this process's user (or root) and not writable by group or others; so no other user can
   put a file in it. 1, or 0 and why (n bytes). Windows: 1 (no owner check there). */
static NN__MAYBE_UNUSED int nn__dir_private(const char *path, char *why, size_t n) {
#if defined(_WIN32)
    (void)path, (void)why, (void)n;
    return 1;
#else
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, n, "%s: %s", path, strerror(errno));
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, n, "%s: %s, not a directory", path, nn__file_kind((unsigned)st.st_mode));
        return 0;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        snprintf(why, n, "%s is owned by user %lu, not by this process's user %lu", path, (unsigned long)st.st_uid,
                 (unsigned long)geteuid());
        return 0;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, n, "%s is writable by %s (mode %04o; chmod go-w it)", path,
                 (st.st_mode & S_IWGRP) && (st.st_mode & S_IWOTH) ? "group and others"
                 : (st.st_mode & S_IWGRP)                         ? "its group"
                                                                  : "others",
                 (unsigned)(st.st_mode & 07777));
        return 0;
    }
    return 1;
#endif
}

/* mkdir -p, each directory made 0700; 0 or -1 (errno set) */
static NN__MAYBE_UNUSED int nn__mkdirs(const char *path) {
    char tmp[1024];
    size_t i, n = strlen(path);
    if (n >= sizeof tmp) return -1;
    memcpy(tmp, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == 0) {
            char c = tmp[i];
            tmp[i] = 0;
            if (nn__mkdir(tmp) != 0 && errno != EEXIST) return -1;
            tmp[i] = c;
        }
    }
    return 0;
}
