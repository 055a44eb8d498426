/* gen/amalg.c - builds the single-file nn.h from src/ and kernels/.
 *
 * usage: amalg MANIFEST OUTPUT
 *
 * The manifest lists the parts in order, one per line:
 *   path/to/file      copied verbatim under a banner naming the part
 *   #...              a preprocessor line, copied as it is (guards around parts)
 *   @kernels DIR F..  every named DIR/F.cl embedded as an array of per-line string
 *                     literals starting with `#line 1 "kernels/F.cl"`, plus a table
 *                     nn__cl_sources[] naming them; its #include "x.h" lines are
 *                     replaced by DIR/x.h (a header shared with the C parts)
 *   (blank lines and lines starting with ';' are ignored)
 *
 * One literal per source line keeps every literal short (-Woverlength-strings, MSVC's
 * limit) and lets clCreateProgramWithSource take the array as it is. The output is
 * written to OUTPUT.tmp and renamed, so a failed run never leaves half a header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *path) {
    fprintf(stderr, "amalg: %s: %s\n", what, path);
    return 1;
}

static char *read_all(const char *path, long *len_out) {
    FILE *f = fopen(path, "rb");
    char *buf;
    long len;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    buf = (char *)malloc((size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[len] = 0;
    if (len_out) *len_out = len;
    return buf;
}

static void banner(FILE *out, const char *name) {
    fprintf(out, "\n/* ======================================================================\n");
    fprintf(out, "   %s\n", name);
    fprintf(out, "   ====================================================================== */\n");
}

/* A part's own #include "..." lines name other parts (so that each part compiles on its
   own); in the single file those parts stand above it, so the lines are dropped. */
static int is_local_include(const char *line, long n) {
    long i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i >= n || line[i++] != '#') return 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    if (n - i < 7 || strncmp(line + i, "include", 7) != 0) return 0;
    i += 7;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    return i < n && line[i] == '"';
}

static int copy_part(FILE *out, const char *path) {
    long len, start, i;
    char *text = read_all(path, &len);
    if (!text) return fail("cannot read part", path);
    banner(out, path);
    for (start = 0, i = 0; i <= len; i++) {
        if (i == len || text[i] == '\n') {
            long n = i - start;
            if (i == len && n == 0) break;
            if (!is_local_include(text + start, n)) {
                fwrite(text + start, 1, (size_t)n, out);
                fputc('\n', out);
            }
            start = i + 1;
        }
    }
    free(text);
    return 0;
}

/* Writes one source line as a C string literal, escaping what C needs escaped. */
static void put_literal(FILE *out, const char *s, size_t n) {
    size_t i;
    fputc('"', out);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == '"') fprintf(out, "\\%c", c);
        else if (c == '\t') fputs("\\t", out);
        else if (c == '?' && i + 1 < n && s[i + 1] == '?') fputs("?\\", out); /* trigraphs */
        else if (c < 32 || c >= 127) fprintf(out, "\\%03o", c);
        else fputc(c, out);
    }
    fputs("\\n\"", out);
}

/* The name inside the quotes of an #include "NAME" line (is_local_include says it is one). */
static void include_name(const char *line, long n, char *name, size_t size) {
    const char *q = (const char *)memchr(line, '"', (size_t)n), *e;
    size_t len;
    name[0] = 0;
    if (!q) return;
    e = (const char *)memchr(q + 1, '"', (size_t)(n - (q + 1 - line)));
    len = e ? (size_t)(e - q - 1) : 0;
    if (len < size) {
        memcpy(name, q + 1, len);
        name[len] = 0;
    }
}

/* The lines of DIR/FILE as literals; an #include "x.h" line becomes the lines of DIR/x.h
   between #line directives, so a device compiler's error names the header's own line
   and, after it, the including file's. (The runtime loader does the same with
   NN_KERNEL_DIR: src/opencl/backend.c.) */
static int embed_lines(FILE *out, const char *dir, const char *file, int depth) {
    char path[1024], inc[256], dir_line[600];
    long len, i, start, lineno = 1;
    char *text;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (depth > 8) return fail("includes nested too deep at", path);
    text = read_all(path, &len);
    if (!text) return fail("cannot read kernel", path);
    for (start = 0, i = 0; i <= len; i++) {
        if (i == len || text[i] == '\n') {
            long n = i - start;
            if (i == len && n == 0) break;
            if (n > 0 && text[start + n - 1] == '\r') n--;
            if (is_local_include(text + start, n)) {
                include_name(text + start, n, inc, sizeof inc);
                if (!inc[0]) {
                    free(text);
                    return fail("bad #include line in", path);
                }
                snprintf(dir_line, sizeof dir_line, "#line 1 \"kernels/%s\"", inc);
                put_literal(out, dir_line, strlen(dir_line));
                fputs(",\n", out);
                if (embed_lines(out, dir, inc, depth + 1)) {
                    free(text);
                    return 1;
                }
                snprintf(dir_line, sizeof dir_line, "#line %ld \"kernels/%s\"", lineno + 1, file);
                put_literal(out, dir_line, strlen(dir_line));
            } else {
                put_literal(out, text + start, (size_t)n);
            }
            fputs(",\n", out);
            start = i + 1;
            lineno++;
        }
    }
    free(text);
    return 0;
}

static int embed_kernel(FILE *out, const char *dir, const char *name) {
    char file[128], path[1024];
    snprintf(file, sizeof file, "%s.cl", name);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    banner(out, path);
    fprintf(out, "static const char *const nn__cl_src_%s[] = {\n", name);
    fprintf(out, "\"#line 1 \\\"kernels/%s.cl\\\"\\n\",\n", name);
    if (embed_lines(out, dir, file, 0)) return 1;
    fputs("0 };\n", out);
    return 0;
}

int main(int argc, char **argv) {
    char line[4096], tmp[1100];
    char names[64][64];
    int n_names = 0, rc = 0, i;
    FILE *man, *out;
    if (argc != 3) {
        fprintf(stderr, "usage: amalg MANIFEST OUTPUT\n");
        return 2;
    }
    man = fopen(argv[1], "r");
    if (!man) return fail("cannot open manifest", argv[1]);
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
    out = fopen(tmp, "wb");
    if (!out) {
        fclose(man);
        return fail("cannot write", tmp);
    }
    fputs("/* nn.h - neural networks in one C header, on OpenCL devices or the CPU.\n"
          "   GENERATED by gen/amalg.c from src/ and kernels/ (see gen/parts.txt): do not edit.\n"
          "   Documentation and licence follow. */\n", out);
    while (!rc && fgets(line, sizeof line, man)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) line[--n] = 0;
        if (n == 0 || line[0] == ';') continue;
        if (line[0] == '#') {
            fprintf(out, "%s\n", line);
        } else if (strncmp(line, "@kernels ", 9) == 0) {
            char *dir = strtok(line + 9, " ");
            char *name;
            while (!rc && (name = strtok(NULL, " ")) != NULL) {
                if (n_names == 64 || strlen(name) >= 64) {
                    rc = fail("too many or too long kernel names at", name);
                    break;
                }
                strcpy(names[n_names++], name);
                rc = embed_kernel(out, dir, name);
            }
            if (rc) break;
            banner(out, "kernel table");
            fputs("typedef struct nn__cl_source { const char *name; const char *const *lines; } nn__cl_source;\n", out);
            fputs("static const nn__cl_source nn__cl_sources[] = {\n", out);
            for (i = 0; i < n_names; i++) fprintf(out, "    { \"%s\", nn__cl_src_%s },\n", names[i], names[i]);
            fputs("};\n", out);
            fprintf(out, "#define NN__CL_NSOURCES %d\n", n_names);
        } else {
            rc = copy_part(out, line);
        }
    }
    fclose(man);
    if (fclose(out) != 0 && !rc) rc = fail("cannot finish", tmp);
    if (rc) {
        remove(tmp);
        return rc;
    }
    if (rename(tmp, argv[2]) != 0) return fail("cannot rename onto", argv[2]);
    return 0;
}
