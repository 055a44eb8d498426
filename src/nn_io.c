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
