/* File formats. Every reader treats its input as untrusted: sizes are checked before they
   are used, and any failure returns NN_ERR_IO naming the file, with nothing allocated. */

static nn_result nn__read_file(nn_context *ctx, const char *path, unsigned char **data, size_t *len) {
    FILE *f;
    long n = -1;
    *data = NULL;
    *len = 0;
    if (!path) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "no path given");
    f = fopen(path, "rb");
    if (!f) return nn__fail(ctx, NN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return nn__fail(ctx, NN_ERR_IO, "%s: cannot determine its size", path);
    }
    *data = (unsigned char *)NN_MALLOC((size_t)n + 1);
    if (!*data) {
        fclose(f);
        return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %ld bytes", path, n);
    }
    if (fread(*data, 1, (size_t)n, f) != (size_t)n) {
        NN_FREE(*data);
        *data = NULL;
        fclose(f);
        return nn__fail(ctx, NN_ERR_IO, "%s: read error", path);
    }
    fclose(f);
    *len = (size_t)n;
    return NN_OK;
}

static uint32_t nn__be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

NN_API void nn_array_free(nn_array *a) {
    if (!a) return;
    NN_FREE(a->data);
    memset(a, 0, sizeof *a);
}

/* IDX: 0x00 0x00 TYPE NDIM, NDIM big-endian uint32 dims, then big-endian values. */
NN_API nn_result nn_load_idx(nn_context *ctx, const char *path, nn_dtype as, nn_array *out) {
    unsigned char *buf;
    size_t len, esize, off, i;
    uint64_t numel = 1;
    int ndim, type, k;
    nn_result r;
    if (!out) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_load_idx: out is NULL");
    memset(out, 0, sizeof *out);
    if (as != NN_F32 && as != NN_I32) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_load_idx: unknown dtype");
    r = nn__read_file(ctx, path, &buf, &len);
    if (r != NN_OK) return r;
    if (len < 4 || buf[0] != 0 || buf[1] != 0) {
        int gzip = len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
        NN_FREE(buf);
        return nn__fail(ctx, NN_ERR_IO, "%s: not an IDX file (bad magic)%s", path,
                        gzip ? "; it is gzip-compressed: gunzip it first" : "");
    }
    type = buf[2];
    ndim = buf[3];
    switch (type) {
    case 0x08: case 0x09: esize = 1; break;
    case 0x0B: esize = 2; break;
    case 0x0C: case 0x0D: esize = 4; break;
    case 0x0E: esize = 8; break;
    default:
        NN_FREE(buf);
        return nn__fail(ctx, NN_ERR_IO, "%s: unknown IDX element type 0x%02x", path, type);
    }
    if (ndim < 1 || ndim > NN_MAX_DIMS || len < 4 + 4 * (size_t)ndim) {
        NN_FREE(buf);
        return nn__fail(ctx, NN_ERR_IO, "%s: %d dims (1 to %d supported) or a truncated header", path, ndim, NN_MAX_DIMS);
    }
    out->shape.ndim = ndim;
    for (k = 0; k < ndim; k++) {
        uint32_t d = nn__be32(buf + 4 + 4 * k);
        if (d == 0 || numel > ((uint64_t)1 << 40) / d) {
            NN_FREE(buf);
            memset(out, 0, sizeof *out);
            return nn__fail(ctx, NN_ERR_IO, "%s: dim %d is %u: empty or too large", path, k, d);
        }
        out->shape.dim[k] = d;
        numel *= d;
    }
    off = 4 + 4 * (size_t)ndim;
    if ((len - off) / esize < numel) {
        NN_FREE(buf);
        memset(out, 0, sizeof *out);
        return nn__fail(ctx, NN_ERR_IO, "%s: truncated: %llu values declared, %llu bytes of data", path,
                        (unsigned long long)numel, (unsigned long long)(len - off));
    }
    out->data = NN_MALLOC((size_t)numel * 4);
    if (!out->data) {
        NN_FREE(buf);
        memset(out, 0, sizeof *out);
        return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %llu values", path, (unsigned long long)numel);
    }
    out->dtype = as;
    for (i = 0; i < numel; i++) {
        const unsigned char *p = buf + off + i * esize;
        double v;
        switch (type) {
        case 0x08: v = p[0]; break;
        case 0x09: v = (signed char)p[0]; break;
        case 0x0B: v = (int16_t)(((unsigned)p[0] << 8) | p[1]); break;
        case 0x0C: v = (int32_t)nn__be32(p); break;
        case 0x0D: { uint32_t u = nn__be32(p); float f; memcpy(&f, &u, 4); v = f; break; }
        default: {
            uint64_t u = ((uint64_t)nn__be32(p) << 32) | nn__be32(p + 4);
            memcpy(&v, &u, 8);
            break;
        }
        }
        if (as == NN_F32) ((float *)out->data)[i] = (float)v;
        else ((int32_t *)out->data)[i] = v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : v == v ? (int32_t)v : 0;
    }
    NN_FREE(buf);
    return NN_OK;
}

/* CSV of numbers: one pass that counts rows and checks every field, then one that stores. */
static int nn__csv_blank(const char *s, const char *e) {
    for (; s < e; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r') return 0;
    return 1;
}

NN_API nn_result nn_load_csv(nn_context *ctx, const char *path, const nn_csv_desc *desc, nn_array *out) {
    unsigned char *buf;
    size_t len;
    char delim = desc && desc->delimiter ? desc->delimiter : ',';
    int header = desc ? desc->header : 0, pass;
    int64_t cols = -1, rows = 0;
    float *data = NULL;
    nn_result r;
    if (!out) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_load_csv: out is NULL");
    memset(out, 0, sizeof *out);
    if (delim == '\n' || delim == '\r' || delim == '.' || delim == '-' || delim == '+' || (delim >= '0' && delim <= '9'))
        return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_load_csv: %s: delimiter '%c' cannot separate numbers", path ? path : "",
                        delim);
    r = nn__read_file(ctx, path, &buf, &len);
    if (r != NN_OK) return r;
    buf[len] = 0; /* nn__read_file leaves a byte for this */
    if (memchr(buf, 0, len)) {
        NN_FREE(buf);
        return nn__fail(ctx, NN_ERR_IO, "%s: a NUL byte: not a text file", path);
    }
    for (pass = 0; pass < 2; pass++) {
        char *p = (char *)buf, *end = (char *)buf + len;
        long line = 0;
        int64_t row = 0;
        while (p < end) {
            char *eol = (char *)memchr(p, '\n', (size_t)(end - p)), *q;
            int64_t c = 0;
            if (!eol) eol = end;
            line++;
            if ((line == 1 && header) || nn__csv_blank(p, eol)) {
                p = eol + 1;
                continue;
            }
            for (q = p;;) { /* the fields of this line */
                char *fe = q, *num_end;
                double v;
                char save;
                while (fe < eol && *fe != delim) fe++;
                save = *fe;
                *fe = 0; /* the field as a C string (the byte is restored below) */
                errno = 0;
                v = strtod(q, &num_end);
                while (num_end < fe && (*num_end == ' ' || *num_end == '\t' || *num_end == '\r')) num_end++;
                if (num_end == q || num_end != fe || nn__csv_blank(q, fe)) {
                    char shown[40];
                    size_t n = (size_t)(fe - q) < sizeof shown - 1 ? (size_t)(fe - q) : sizeof shown - 1;
                    memcpy(shown, q, n);
                    shown[n] = 0;
                    while (n > 0 && (shown[n - 1] == '\r' || shown[n - 1] == ' ')) shown[--n] = 0;
                    *fe = save;
                    NN_FREE(buf);
                    NN_FREE(data);
                    return nn__fail(ctx, NN_ERR_IO, "%s:%ld: field %lld \"%s\" is not a number", path, line, (long long)c + 1,
                                    shown);
                }
                *fe = save;
                if (pass == 1) data[row * cols + c] = (float)v;
                c++;
                if (fe >= eol) break;
                q = fe + 1;
            }
            if (cols < 0) cols = c;
            else if (c != cols) {
                NN_FREE(buf);
                NN_FREE(data);
                return nn__fail(ctx, NN_ERR_IO, "%s:%ld: %lld fields, the first row has %lld", path, line, (long long)c,
                                (long long)cols);
            }
            row++;
            p = eol + 1;
        }
        if (pass == 0) {
            if (row == 0) {
                NN_FREE(buf);
                return nn__fail(ctx, NN_ERR_IO, "%s:%ld: no data rows%s", path, line > 0 ? line : 1L,
                                len ? "" : " (an empty file)");
            }
            rows = row;
            if ((uint64_t)rows * (uint64_t)cols > ((uint64_t)1 << 40) ||
                (data = (float *)nn__calloc((size_t)rows * (size_t)cols, sizeof(float))) == NULL) {
                NN_FREE(buf);
                return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %lld x %lld values", path, (long long)rows,
                                (long long)cols);
            }
        }
    }
    NN_FREE(buf);
    out->dtype = NN_F32;
    out->shape = nn_shape2(rows, cols);
    out->data = data;
    return NN_OK;
}
