/* safetensors checkpoints (https://github.com/huggingface/safetensors): an 8-byte
   little-endian header length N, N bytes of JSON naming each tensor's dtype, shape and byte
   range, then the raw little-endian data. Parameters are saved as float32 under their own
   names (PyTorch's, e.g. fc1.weight [out, in]), so a PyTorch state dict loads directly.

   The loader treats the file as untrusted. nn__st_parse() is a small strict JSON parser of
   its own that needs nothing but the bytes and an error buffer (tests/fuzz_safetensors.c
   fuzzes it alone): every length, offset, shape and dtype is checked before it is used, and
   a malformed file gives NN_ERR_IO naming the file and the problem, with nothing leaked. */

#define NN__ST_MAX_HEADER ((uint64_t)100 * 1024 * 1024) /* a sane cap on the JSON header */
#define NN__ST_MAX_DEPTH 64                             /* nesting inside "__metadata__" */

/* Every dtype the format defines; the first four convert to float32 on load. */
static const char *const nn__st_dtype_names[] = {"F32",  "F16", "BF16", "F64",     "BOOL",    "U8",  "I8", "I16",
                                                 "U16",  "I32", "U32",  "I64",     "U64",     "F8_E5M2", "F8_E4M3"};
static const unsigned char nn__st_dtype_sizes[] = {4, 2, 2, 8, 1, 1, 1, 2, 2, 4, 4, 8, 8, 1, 1};
enum { NN__ST_F32 = 0, NN__ST_F16 = 1, NN__ST_BF16 = 2, NN__ST_F64 = 3, NN__ST_N_FLOAT = 4, NN__ST_N_DTYPES = 15 };

typedef struct nn__st_tensor {
    char *name;               /* decoded UTF-8, NUL-free */
    int dtype;                /* index in nn__st_dtype_names */
    int ndim;                 /* may exceed NN_MAX_DIMS; shape[] holds the first NN_MAX_DIMS */
    int64_t shape[NN_MAX_DIMS];
    uint64_t numel;
    uint64_t begin, end;      /* byte range inside the data section */
} nn__st_tensor;

typedef struct nn__st_file {
    nn__st_tensor *t;         /* sorted by name, names unique */
    int n, cap;
    size_t data_off;          /* the data section starts at buf + data_off */
    size_t data_len;
} nn__st_file;

typedef struct nn__st_parser {
    const unsigned char *p, *end, *base;
    char *err;
    size_t errlen;
    int failed, oom;
} nn__st_parser;

static int nn__st_error(nn__st_parser *ps, const char *fmt, ...) {
    va_list ap;
    int n;
    if (ps->failed || !ps->err || !ps->errlen) {
        ps->failed = 1;
        return 0;
    }
    ps->failed = 1;
    n = snprintf(ps->err, ps->errlen, "header byte %lu: ", (unsigned long)(ps->p - ps->base));
    if (n < 0 || (size_t)n >= ps->errlen) return 0;
    va_start(ap, fmt);
    vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return 0;
}

static void nn__st_ws(nn__st_parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

/* Skips whitespace, then consumes c; 0 (and an error) when the next byte is not c. */
static int nn__st_expect(nn__st_parser *ps, char c, const char *what) {
    nn__st_ws(ps);
    if (ps->p >= ps->end) return nn__st_error(ps, "unexpected end of the header, expected %s", what);
    if (*ps->p != (unsigned char)c) return nn__st_error(ps, "expected %s", what);
    ps->p++;
    return 1;
}

static int nn__st_hex4(const unsigned char *s, uint32_t *out) {
    uint32_t v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        unsigned c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return 0;
    }
    *out = v;
    return 1;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if it is not one. */
static size_t nn__st_utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
        if (c == 0xED && s[1] >= 0xA0) return 0; /* a surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
        if (c == 0xF4 && s[1] >= 0x90) return 0; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

/* A JSON string at ps->p, decoded to NUL-terminated UTF-8 in *out (NULL: validate only). */
static int nn__st_string(nn__st_parser *ps, char **out) {
    const unsigned char *s, *q;
    char *d = NULL;
    size_t k = 0;
    if (out) *out = NULL;
    if (!nn__st_expect(ps, '"', "a string")) return 0;
    s = ps->p;
    for (q = s; q < ps->end && *q != '"'; q++) /* the closing quote bounds the decoded size */
        if (*q == '\\' && q + 1 < ps->end) q++;
    if (q >= ps->end) return nn__st_error(ps, "unterminated string");
    if (out) {
        d = (char *)NN_MALLOC((size_t)(q - s) + 1);
        if (!d) {
            ps->oom = 1;
            return nn__st_error(ps, "out of memory");
        }
    }
    while (ps->p < q) {
        unsigned c = *ps->p;
        if (c < 0x20) {
            NN_FREE(d);
            return nn__st_error(ps, "control character 0x%02x in a string", c);
        }
        if (c == '\\') {
            uint32_t u;
            unsigned char enc[4];
            size_t n = 1;
            if (ps->p + 1 >= q) { /* cannot happen: the scan above skipped escaped bytes */
                NN_FREE(d);
                return nn__st_error(ps, "bad escape");
            }
            switch (ps->p[1]) {
            case '"': case '\\': case '/': enc[0] = ps->p[1]; break;
            case 'b': enc[0] = '\b'; break;
            case 'f': enc[0] = '\f'; break;
            case 'n': enc[0] = '\n'; break;
            case 'r': enc[0] = '\r'; break;
            case 't': enc[0] = '\t'; break;
            case 'u':
                if (q - ps->p < 6 || !nn__st_hex4(ps->p + 2, &u)) {
                    NN_FREE(d);
                    return nn__st_error(ps, "bad \\u escape");
                }
                if (u >= 0xDC00 && u <= 0xDFFF) {
                    NN_FREE(d);
                    return nn__st_error(ps, "lone low surrogate \\u%04x", (unsigned)u);
                }
                if (u >= 0xD800 && u <= 0xDBFF) {
                    uint32_t lo;
                    if (q - ps->p < 12 || ps->p[6] != '\\' || ps->p[7] != 'u' || !nn__st_hex4(ps->p + 8, &lo) ||
                        lo < 0xDC00 || lo > 0xDFFF) {
                        NN_FREE(d);
                        return nn__st_error(ps, "high surrogate \\u%04x without its low half", (unsigned)u);
                    }
                    u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                    ps->p += 6;
                }
                if (u == 0) {
                    NN_FREE(d);
                    return nn__st_error(ps, "\\u0000 in a string");
                }
                if (u < 0x80) enc[0] = (unsigned char)u;
                else if (u < 0x800) {
                    enc[0] = (unsigned char)(0xC0 | (u >> 6));
                    enc[1] = (unsigned char)(0x80 | (u & 0x3F));
                    n = 2;
                } else if (u < 0x10000) {
                    enc[0] = (unsigned char)(0xE0 | (u >> 12));
                    enc[1] = (unsigned char)(0x80 | ((u >> 6) & 0x3F));
                    enc[2] = (unsigned char)(0x80 | (u & 0x3F));
                    n = 3;
                } else {
                    enc[0] = (unsigned char)(0xF0 | (u >> 18));
                    enc[1] = (unsigned char)(0x80 | ((u >> 12) & 0x3F));
                    enc[2] = (unsigned char)(0x80 | ((u >> 6) & 0x3F));
                    enc[3] = (unsigned char)(0x80 | (u & 0x3F));
                    n = 4;
                }
                ps->p += 4;
                break;
            default:
                NN_FREE(d);
                return nn__st_error(ps, "bad escape \\%c", ps->p[1] >= 0x20 && ps->p[1] < 0x7F ? ps->p[1] : '?');
            }
            ps->p += 2;
            if (d) memcpy(d + k, enc, n);
            k += n;
        } else {
            size_t n = nn__st_utf8_len(ps->p, (size_t)(q - ps->p));
            if (!n) {
                NN_FREE(d);
                return nn__st_error(ps, "invalid UTF-8 in a string");
            }
            if (d) memcpy(d + k, ps->p, n);
            k += n;
            ps->p += n;
        }
    }
    ps->p = q + 1;
    if (d) {
        d[k] = 0;
        *out = d;
    }
    return 1;
}

/* A non-negative JSON integer that fits in 64 bits (no sign, fraction or exponent). */
static int nn__st_uint(nn__st_parser *ps, uint64_t *out, const char *what) {
    uint64_t v = 0;
    const unsigned char *start;
    nn__st_ws(ps);
    if (ps->p < ps->end && *ps->p == '-') return nn__st_error(ps, "%s is negative", what);
    start = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        unsigned dgt = *ps->p - '0';
        if (v > (UINT64_MAX - dgt) / 10) return nn__st_error(ps, "%s does not fit in 64 bits", what);
        v = v * 10 + dgt;
        ps->p++;
    }
    if (ps->p == start) return nn__st_error(ps, "%s is not an integer", what);
    if (ps->p - start > 1 && *start == '0') return nn__st_error(ps, "%s has a leading zero", what);
    if (ps->p < ps->end && (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E'))
        return nn__st_error(ps, "%s is not an integer", what);
    *out = v;
    return 1;
}

/* Any JSON value (inside "__metadata__" or an unknown field), validated and dropped. */
static int nn__st_skip(nn__st_parser *ps, int depth) {
    nn__st_ws(ps);
    if (ps->p >= ps->end) return nn__st_error(ps, "unexpected end of the header, expected a value");
    if (depth > NN__ST_MAX_DEPTH) return nn__st_error(ps, "nested deeper than %d levels", NN__ST_MAX_DEPTH);
    if (*ps->p == '"') return nn__st_string(ps, NULL);
    if (*ps->p == '{' || *ps->p == '[') {
        char close = *ps->p == '{' ? '}' : ']';
        int first = 1;
        ps->p++;
        for (;;) {
            nn__st_ws(ps);
            if (ps->p < ps->end && *ps->p == (unsigned char)close) {
                ps->p++;
                return 1;
            }
            if (!first && !nn__st_expect(ps, ',', "',' or the end of the object or array")) return 0;
            first = 0;
            if (close == '}' && (!nn__st_string(ps, NULL) || !nn__st_expect(ps, ':', "':'"))) return 0;
            if (!nn__st_skip(ps, depth + 1)) return 0;
        }
    }
    if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) { /* a JSON number */
        const unsigned char *st;
        if (*ps->p == '-') ps->p++;
        st = ps->p;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
        if (ps->p == st || (ps->p - st > 1 && *st == '0')) return nn__st_error(ps, "bad number");
        if (ps->p < ps->end && *ps->p == '.') {
            st = ++ps->p;
            while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
            if (ps->p == st) return nn__st_error(ps, "bad number");
        }
        if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
            ps->p++;
            if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
            st = ps->p;
            while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
            if (ps->p == st) return nn__st_error(ps, "bad number");
        }
        return 1;
    }
    {
        static const char *const words[] = {"true", "false", "null"};
        int i;
        for (i = 0; i < 3; i++) {
            size_t n = strlen(words[i]);
            if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, words[i], n) == 0) {
                ps->p += n;
                return 1;
            }
        }
    }
    return nn__st_error(ps, "not a JSON value");
}

/* One tensor entry: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}. */
static int nn__st_entry(nn__st_parser *ps, nn__st_tensor *t, size_t data_len) {
    int have_dtype = 0, have_shape = 0, have_offsets = 0, first = 1;
    uint64_t numel = 1, bytes;
    t->dtype = -1;
    if (!nn__st_expect(ps, '{', "an object for the tensor")) return 0;
    for (;;) {
        char *key = NULL;
        nn__st_ws(ps);
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            break;
        }
        if (!first && !nn__st_expect(ps, ',', "',' or '}'")) return 0;
        first = 0;
        if (!nn__st_string(ps, &key)) return 0;
        if (!nn__st_expect(ps, ':', "':'")) {
            NN_FREE(key);
            return 0;
        }
        if (strcmp(key, "dtype") == 0) {
            char *dt = NULL;
            int i;
            NN_FREE(key);
            if (have_dtype++) return nn__st_error(ps, "tensor %s: duplicate key \"dtype\"", t->name);
            nn__st_ws(ps);
            if (ps->p >= ps->end || *ps->p != '"') return nn__st_error(ps, "tensor %s: dtype is not a string", t->name);
            if (!nn__st_string(ps, &dt)) return 0;
            for (i = 0; i < NN__ST_N_DTYPES; i++)
                if (strcmp(dt, nn__st_dtype_names[i]) == 0) t->dtype = i;
            if (t->dtype < 0) {
                nn__st_error(ps, "tensor %s: unknown dtype \"%.32s\"", t->name, dt);
                NN_FREE(dt);
                return 0;
            }
            NN_FREE(dt);
        } else if (strcmp(key, "shape") == 0) {
            NN_FREE(key);
            if (have_shape++) return nn__st_error(ps, "tensor %s: duplicate key \"shape\"", t->name);
            if (!nn__st_expect(ps, '[', "'[' opening the shape")) return 0;
            nn__st_ws(ps);
            if (ps->p < ps->end && *ps->p == ']') ps->p++; /* a scalar */
            else
                for (;;) {
                    uint64_t d;
                    if (!nn__st_uint(ps, &d, "a shape dim")) return 0;
                    if (d > (uint64_t)INT64_MAX) return nn__st_error(ps, "tensor %s: shape dim too large", t->name);
                    if (d && numel > UINT64_MAX / d) return nn__st_error(ps, "tensor %s: shape overflows", t->name);
                    numel *= d;
                    if (t->ndim < NN_MAX_DIMS) t->shape[t->ndim] = (int64_t)d;
                    t->ndim++;
                    nn__st_ws(ps);
                    if (ps->p < ps->end && *ps->p == ']') {
                        ps->p++;
                        break;
                    }
                    if (!nn__st_expect(ps, ',', "',' or ']' in the shape")) return 0;
                }
        } else if (strcmp(key, "data_offsets") == 0) {
            NN_FREE(key);
            if (have_offsets++) return nn__st_error(ps, "tensor %s: duplicate key \"data_offsets\"", t->name);
            if (!nn__st_expect(ps, '[', "'[' opening data_offsets") || !nn__st_uint(ps, &t->begin, "an offset") ||
                !nn__st_expect(ps, ',', "two data_offsets") || !nn__st_uint(ps, &t->end, "an offset") ||
                !nn__st_expect(ps, ']', "']' after two data_offsets"))
                return 0;
        } else {
            NN_FREE(key); /* unknown fields are ignored, as the reference reader does */
            if (!nn__st_skip(ps, 1)) return 0;
        }
    }
    if (!have_dtype || !have_shape || !have_offsets)
        return nn__st_error(ps, "tensor %s: no %s", t->name, !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    if (t->begin > t->end)
        return nn__st_error(ps, "tensor %s: data_offsets [%llu, %llu] run backwards", t->name,
                            (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > (uint64_t)data_len)
        return nn__st_error(ps, "tensor %s: data_offsets [%llu, %llu] run past the data section (%llu bytes)", t->name,
                            (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)data_len);
    if (numel > UINT64_MAX / nn__st_dtype_sizes[t->dtype])
        return nn__st_error(ps, "tensor %s: shape overflows", t->name);
    bytes = numel * nn__st_dtype_sizes[t->dtype];
    if (bytes != t->end - t->begin)
        return nn__st_error(ps, "tensor %s: shape and dtype make %llu bytes, data_offsets %llu", t->name,
                            (unsigned long long)bytes, (unsigned long long)(t->end - t->begin));
    t->numel = numel;
    return 1;
}

static int nn__st_cmp_name(const void *a, const void *b) {
    return strcmp(((const nn__st_tensor *)a)->name, ((const nn__st_tensor *)b)->name);
}

static int nn__st_cmp_range(const void *a, const void *b) {
    const nn__st_tensor *x = *(const nn__st_tensor *const *)a, *y = *(const nn__st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end ? 1 : 0;
}

static void nn__st_free(nn__st_file *f) {
    int i;
    if (!f) return;
    for (i = 0; i < f->n; i++) NN_FREE(f->t[i].name);
    NN_FREE(f->t);
    memset(f, 0, sizeof *f);
}

/* Parses and validates a whole safetensors file held in buf[0..len). NN_OK fills *out
   (release it with nn__st_free); otherwise *out is empty and err says what is wrong:
   NN_ERR_IO for a malformed file, NN_ERR_OUT_OF_MEMORY. */
static nn_result nn__st_parse(const unsigned char *buf, size_t len, nn__st_file *out, char *err, size_t errlen) {
    nn__st_parser ps;
    uint64_t hlen = 0;
    int i, first = 1, have_meta = 0;
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = 0;
    if (!buf || len < 8) {
        if (err) snprintf(err, errlen, "%lu bytes: too short for the 8-byte header length", (unsigned long)len);
        return NN_ERR_IO;
    }
    for (i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i];
    if (hlen > (uint64_t)(len - 8)) {
        if (err)
            snprintf(err, errlen, "header length %llu runs past the end of the file (%lu bytes)", (unsigned long long)hlen,
                     (unsigned long)len);
        return NN_ERR_IO;
    }
    if (hlen > NN__ST_MAX_HEADER) {
        if (err) snprintf(err, errlen, "header length %llu is over the 100 MB limit", (unsigned long long)hlen);
        return NN_ERR_IO;
    }
    out->data_off = 8 + (size_t)hlen;
    out->data_len = len - out->data_off;
    memset(&ps, 0, sizeof ps);
    ps.base = ps.p = buf + 8;
    ps.end = ps.p + hlen;
    ps.err = err;
    ps.errlen = errlen;
    if (!nn__st_expect(&ps, '{', "'{' opening the header")) goto fail;
    for (;;) {
        char *name = NULL;
        nn__st_ws(&ps);
        if (ps.p < ps.end && *ps.p == '}') {
            ps.p++;
            break;
        }
        if (!first && !nn__st_expect(&ps, ',', "',' or '}' after a tensor")) goto fail;
        first = 0;
        if (!nn__st_string(&ps, &name)) goto fail;
        if (!nn__st_expect(&ps, ':', "':' after a name")) {
            NN_FREE(name);
            goto fail;
        }
        if (strcmp(name, "__metadata__") == 0) {
            NN_FREE(name);
            if (have_meta++) {
                nn__st_error(&ps, "duplicate key \"__metadata__\"");
                goto fail;
            }
            nn__st_ws(&ps);
            if (ps.p >= ps.end || *ps.p != '{') {
                nn__st_error(&ps, "__metadata__ is not an object");
                goto fail;
            }
            if (!nn__st_skip(&ps, 1)) goto fail;
            continue;
        }
        if (out->n == out->cap) {
            int cap = out->cap ? out->cap * 2 : 16;
            nn__st_tensor *nt = (nn__st_tensor *)NN_REALLOC(out->t, (size_t)cap * sizeof *nt);
            if (!nt) {
                NN_FREE(name);
                ps.oom = 1;
                nn__st_error(&ps, "out of memory");
                goto fail;
            }
            out->t = nt;
            out->cap = cap;
        }
        memset(&out->t[out->n], 0, sizeof out->t[0]);
        out->t[out->n].name = name;
        out->n++;
        if (!nn__st_entry(&ps, &out->t[out->n - 1], out->data_len)) goto fail;
    }
    nn__st_ws(&ps);
    if (ps.p != ps.end) {
        nn__st_error(&ps, "bytes after the header's JSON object");
        goto fail;
    }
    /* names unique (sorted, so the loader can search them) */
    if (out->n > 1) qsort(out->t, (size_t)out->n, sizeof out->t[0], nn__st_cmp_name);
    for (i = 1; i < out->n; i++)
        if (strcmp(out->t[i - 1].name, out->t[i].name) == 0) {
            if (err) snprintf(err, errlen, "duplicate tensor name \"%.200s\"", out->t[i].name);
            nn__st_free(out);
            return NN_ERR_IO;
        }
    /* no two tensors share a byte */
    if (out->n > 1) {
        nn__st_tensor **by = (nn__st_tensor **)NN_MALLOC((size_t)out->n * sizeof *by);
        uint64_t reach = 0;
        const char *last = NULL;
        if (!by) {
            if (err) snprintf(err, errlen, "out of memory");
            nn__st_free(out);
            return NN_ERR_OUT_OF_MEMORY;
        }
        for (i = 0; i < out->n; i++) by[i] = &out->t[i];
        qsort(by, (size_t)out->n, sizeof *by, nn__st_cmp_range);
        for (i = 0; i < out->n; i++) {
            if (by[i]->begin == by[i]->end) continue;
            if (last && by[i]->begin < reach) {
                if (err)
                    snprintf(err, errlen, "tensors \"%.100s\" and \"%.100s\" overlap in the data section", last, by[i]->name);
                NN_FREE(by);
                nn__st_free(out);
                return NN_ERR_IO;
            }
            reach = by[i]->end;
            last = by[i]->name;
        }
        NN_FREE(by);
    }
    return NN_OK;
fail:
    nn__st_free(out);
    return ps.oom ? NN_ERR_OUT_OF_MEMORY : NN_ERR_IO;
}

static const nn__st_tensor *nn__st_find(const nn__st_file *f, const char *name) {
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(f->t[mid].name, name);
        if (c == 0) return &f->t[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

/* n little-endian values of a float dtype to float32 (the source may be unaligned). */
static void nn__st_convert(float *dst, const unsigned char *s, size_t n, int dtype) {
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t u;
        float f;
        switch (dtype) {
        case NN__ST_F32:
            u = (uint32_t)s[4 * i] | ((uint32_t)s[4 * i + 1] << 8) | ((uint32_t)s[4 * i + 2] << 16) |
                ((uint32_t)s[4 * i + 3] << 24);
            memcpy(&f, &u, 4);
            break;
        case NN__ST_F16: f = nn__f16_to_f32((uint16_t)(s[2 * i] | (s[2 * i + 1] << 8))); break;
        case NN__ST_BF16:
            u = ((uint32_t)s[2 * i] << 16) | ((uint32_t)s[2 * i + 1] << 24);
            memcpy(&f, &u, 4);
            break;
        default: {
            uint64_t v = 0;
            double d;
            int k;
            for (k = 7; k >= 0; k--) v = (v << 8) | s[8 * i + (size_t)k];
            memcpy(&d, &v, 8);
            f = (float)d;
            break;
        }
        }
        dst[i] = f;
    }
}

/* The loader on a file already in memory (path names it in messages). Nothing is written
   to a parameter until every one has been matched and checked. */
static nn_result nn__st_load_mem(nn_graph *g, const char *path, const unsigned char *buf, size_t len, int allow_missing) {
    nn_context *ctx = g->ctx;
    nn__params *ps = g->params;
    nn__st_file f;
    char err[512];
    const nn__st_tensor **match = NULL;
    float *tmp = NULL;
    size_t most = 1;
    int i, missing = 0, first_missing = -1;
    nn_result r = nn__st_parse(buf, len, &f, err, sizeof err);
    if (r != NN_OK) return nn__fail(ctx, r, "%s: %s", path, err);
    match = (const nn__st_tensor **)nn__calloc((size_t)(ps->n > 0 ? ps->n : 1), sizeof *match);
    if (!match) {
        r = nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    for (i = 0; i < ps->n; i++) {
        nn__param *p = &ps->p[i];
        const nn__st_tensor *t = nn__st_find(&f, p->name);
        int k, same;
        if (!t) {
            if (first_missing < 0) first_missing = i;
            missing++;
            continue;
        }
        if (t->dtype >= NN__ST_N_FLOAT) {
            r = nn__fail(ctx, NN_ERR_SHAPE, "%s: tensor %s is %s; F32, F16, BF16 or F64 can be loaded", path, p->name,
                         nn__st_dtype_names[t->dtype]);
            goto done;
        }
        same = t->ndim == p->shape.ndim;
        for (k = 0; same && k < t->ndim; k++) same = t->shape[k] == p->shape.dim[k];
        if (!same) {
            char a[160], b[160];
            nn_shape s;
            memset(&s, 0, sizeof s);
            s.ndim = t->ndim < NN_MAX_DIMS ? t->ndim : NN_MAX_DIMS;
            for (k = 0; k < s.ndim; k++) s.dim[k] = t->shape[k];
            nn__shape_str(&s, a, sizeof a);
            if (t->ndim > NN_MAX_DIMS) snprintf(a, sizeof a, "of %d dims", t->ndim);
            nn__shape_str(&p->shape, b, sizeof b);
            r = nn__fail(ctx, NN_ERR_SHAPE, "%s: tensor %s has shape %s, the parameter %s", path, p->name, a, b);
            goto done;
        }
        if (!p->allocated && !p->init) {
            r = nn__fail(ctx, NN_ERR_STATE, "%s: parameter %s has no storage", path, p->name);
            goto done;
        }
        match[i] = t;
        if ((size_t)p->numel > most) most = (size_t)p->numel;
    }
    if (missing && !allow_missing) {
        r = nn__fail(ctx, NN_ERR_IO, "%s: no tensor for parameter %s (%d of %d parameters missing)", path,
                     ps->p[first_missing].name, missing, ps->n);
        goto done;
    }
    if (missing && missing == ps->n) { /* allow_missing lets some be missing, not all: names that all differ */
        r = nn__fail(ctx, NN_ERR_IO, "%s: none of the graph's %d parameters (%s, ...) is in the file (%d tensor%s, %s%s): "
                     "allow_missing loads a part, not nothing; check the names (a prefix?)", path, ps->n, ps->p[0].name,
                     f.n, f.n == 1 ? "" : "s", f.n ? f.t[0].name : "none", f.n > 1 ? ", ..." : "");
        goto done;
    }
    if (missing)
        nn__log(ctx, NN_LOG_INFO, "%s: loaded %d of %d parameters (allow_missing; %s and %d more kept their values); "
                "%d of the file's %d tensors matched", path, ps->n - missing, ps->n, ps->p[first_missing].name, missing - 1,
                ps->n - missing, f.n);
    else
        nn__log(ctx, NN_LOG_DEBUG, "%s: loaded all %d parameters; %d of the file's tensors matched none", path, ps->n,
                f.n - ps->n);
    tmp = (float *)nn__calloc(most, sizeof(float));
    if (!tmp) {
        r = nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    for (i = 0; i < ps->n && r == NN_OK; i++) {
        nn__param *p = &ps->p[i];
        const nn__st_tensor *t = match[i];
        if (!t) continue;
        nn__st_convert(tmp, buf + f.data_off + (size_t)t->begin, (size_t)p->numel, t->dtype);
        if (p->allocated) r = nn__buf_write_f32(ctx, &p->buf, p->dtype, tmp, p->numel); /* rounded: a 16-bit parameter */
        else memcpy(p->init, tmp, (size_t)p->numel * 4);
    }
done:
    NN_FREE(tmp);
    NN_FREE((void *)match);
    nn__st_free(&f);
    return r;
}

static nn_result nn__load_safetensors(nn_graph *g, const char *path, int allow_missing) {
    unsigned char *buf = NULL;
    size_t len = 0;
    nn_result r;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if ((r = nn__graph_orphaned(g, "nn_graph_load_safetensors")) != NN_OK) return r;
    r = nn__read_file(g->ctx, path, &buf, &len);
    if (r != NN_OK) return r;
    r = nn__st_load_mem(g, path, buf, len, allow_missing);
    NN_FREE(buf);
    return r;
}

NN_API nn_result nn_graph_load_safetensors(nn_graph *g, const char *path, int allow_missing) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_load_safetensors", nn__load_safetensors(g, path, allow_missing));
}

/* ---- saving ---- */

/* The header's text grows in an nn__jtext (src/base/internal.h) */

/* A JSON string; 0 if s is not valid UTF-8 (JSON cannot carry it). */
static int nn__st_put_string(nn__jtext *t, const char *name) {
    const unsigned char *s = (const unsigned char *)name;
    size_t len = strlen(name), i = 0;
    nn__jt_put(t, "\"", 1);
    while (i < len) {
        size_t n = nn__st_utf8_len(s + i, len - i);
        if (!n) return 0;
        if (s[i] == '"' || s[i] == '\\') {
            char e[2];
            e[0] = '\\';
            e[1] = (char)s[i];
            nn__jt_put(t, e, 2);
        } else if (s[i] < 0x20) {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", s[i]);
            nn__jt_puts(t, e);
        } else nn__jt_put(t, name + i, n);
        i += n;
    }
    nn__jt_put(t, "\"", 1);
    return 1;
}

/* A tensor to save (or, for nn_graph_load_state, to load): its name, shape, and where its float32
   data lives, a backend buffer or a host copy (a parameter before its first upload). */
typedef struct nn__st_item {
    char *name;
    nn_shape shape;
    int64_t numel;
    nn__buf *buf;
    nn_dtype stored;          /* buf's storage type (a 16-bit parameter's); host is float32 */
    float *host;
    const nn__st_tensor *t;   /* on load: its match in the file */
} nn__st_item;

static int nn__st_cmp_item(const void *a, const void *b) {
    return strcmp(((const nn__st_item *)a)->name, ((const nn__st_item *)b)->name);
}

/* Writes items[0..n) (sorted by name) as safetensors of dtype (NN_BF16 or NN_F16: each
   float rounded to nearest even, kernels/storage.h; NN_F32: each item in its storage type,
   float32 but for 16-bit parameters) with the JSON object metadata as
   "__metadata__", through nn__wfile: a temporary file beside path, synced and renamed over
   it, so a failure leaves path as it was. */
static nn_result nn__st_save(nn_context *ctx, const char *path, const char *metadata, const nn__st_item *items, int n,
                             nn_dtype dtype) {
    static const char spaces[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
    nn__jtext h;
    nn__wfile w;
    unsigned char *bytes = NULL, len8[8];
    uint64_t off = 0;
    size_t most = 1;
    int i, k;
    nn_result r = NN_OK;
    memset(&h, 0, sizeof h);
    memset(&w, 0, sizeof w);
    w.fd = -1;
    /* the header: keys sorted by name, data in that order, padded with spaces to 8 bytes */
    nn__jt_puts(&h, "{\"__metadata__\":");
    nn__jt_puts(&h, metadata);
    for (i = 0; i < n; i++) {
        const nn__st_item *it = &items[i];
        nn__jt_puts(&h, ",");
        if (!nn__st_put_string(&h, it->name)) {
            r = nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: tensor name %s is not valid UTF-8", path, it->name);
            goto done;
        }
        nn_dtype odt = dtype != NN_F32 ? dtype : it->stored;
        nn__jt_puts(&h, odt == NN_BF16 ? ":{\"dtype\":\"BF16\",\"shape\":[" : odt == NN_F16 ? ":{\"dtype\":\"F16\",\"shape\":["
                                                                      : ":{\"dtype\":\"F32\",\"shape\":[");
        for (k = 0; k < it->shape.ndim; k++) {
            if (k) nn__jt_puts(&h, ",");
            nn__jt_printf(&h, "%llu", (unsigned long long)it->shape.dim[k]);
        }
        nn__jt_puts(&h, "],\"data_offsets\":[");
        nn__jt_printf(&h, "%llu", (unsigned long long)off);
        nn__jt_puts(&h, ",");
        off += (uint64_t)it->numel * nn__dtype_size(odt);
        nn__jt_printf(&h, "%llu", (unsigned long long)off);
        nn__jt_puts(&h, "]}");
        if ((size_t)it->numel > most) most = (size_t)it->numel;
    }
    nn__jt_puts(&h, "}");
    nn__jt_put(&h, spaces, (8 - h.n % 8) % 8); /* (once: the text stops growing when out of memory) */
    if (h.oom || (bytes = (unsigned char *)NN_MALLOC(most * 4)) == NULL) {
        r = nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    for (k = 0; k < 8; k++) len8[k] = (unsigned char)((uint64_t)h.n >> (8 * k));
    r = nn__wfile_open(ctx, path, &w);
    if (r != NN_OK) goto done;
    r = nn__wfile_write(ctx, &w, len8, 8);
    if (r == NN_OK) r = nn__wfile_write(ctx, &w, h.s, h.n);
    for (i = 0; i < n && r == NN_OK; i++) {
        const nn__st_item *it = &items[i];
        size_t m = (size_t)it->numel, j;
        nn_dtype odt = dtype != NN_F32 ? dtype : it->stored;
        if (it->buf) r = nn__buf_read_f32(ctx, it->buf, it->stored, (float *)(void *)bytes, it->numel);
        else memcpy(bytes, it->host, m * 4);
        for (j = 0; j < m && r == NN_OK; j++) { /* to little-endian, in place (a 16-bit element j over bytes 2j, 2j + 1,
                                                   before float j's bytes 4j..4j + 3, read first) */
            uint32_t u;
            memcpy(&u, bytes + 4 * j, 4);
            if (odt != NN_F32) {
                float f;
                uint16_t hv;
                memcpy(&f, &u, 4);
                hv = odt == NN_BF16 ? nn__f32_to_bf16(f) : nn__f32_to_f16(f);
                bytes[2 * j] = (unsigned char)hv;
                bytes[2 * j + 1] = (unsigned char)(hv >> 8);
                continue;
            }
            bytes[4 * j] = (unsigned char)u;
            bytes[4 * j + 1] = (unsigned char)(u >> 8);
            bytes[4 * j + 2] = (unsigned char)(u >> 16);
            bytes[4 * j + 3] = (unsigned char)(u >> 24);
        }
        if (r == NN_OK) r = nn__wfile_write(ctx, &w, bytes, m * nn__dtype_size(odt));
    }
    if (r == NN_OK) r = nn__wfile_commit(ctx, path, &w);
done:
    nn__wfile_abort(&w); /* after a commit: nothing left to do */
    NN_FREE(h.s);
    NN_FREE(bytes);
    return r;
}

static nn_result nn__save_safetensors(nn_graph *g, const char *path, nn_dtype dtype, const char *fn) {
    nn_context *ctx;
    nn__params *ps;
    nn__st_item *items;
    int i;
    nn_result r;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    ctx = g->ctx;
    ps = g->params;
    if ((r = nn__graph_orphaned(g, fn)) != NN_OK) return r;
    if (!path || !path[0]) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: no path given", fn);
    if (dtype != NN_F32 && !nn__dtype_half(dtype))
        return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: dtype %d: saves NN_F32, NN_BF16 or NN_F16", fn, (int)dtype);
    items = (nn__st_item *)nn__calloc((size_t)(ps->n > 0 ? ps->n : 1), sizeof *items);
    if (!items) return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    for (i = 0; i < ps->n; i++) {
        nn__param *p = &ps->p[i];
        if (!p->allocated && !p->init) {
            NN_FREE(items);
            return nn__fail(ctx, NN_ERR_STATE, "%s: parameter %s has no storage", path, p->name);
        }
        items[i].name = p->name;
        items[i].shape = p->shape;
        items[i].numel = p->numel;
        items[i].buf = p->allocated ? &p->buf : NULL;
        items[i].stored = p->dtype;
        items[i].host = p->allocated ? NULL : p->init;
    }
    if (ps->n > 1) qsort(items, (size_t)ps->n, sizeof *items, nn__st_cmp_item);
    r = nn__st_save(ctx, path, "{\"format\":\"pt\"}", items, ps->n, dtype);
    NN_FREE(items);
    return r;
}

NN_API nn_result nn_graph_save_safetensors(nn_graph *g, const char *path) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_save_safetensors", nn__save_safetensors(g, path, NN_F32, "nn_graph_save_safetensors"));
}

NN_API nn_result nn_graph_save_safetensors_dtype(nn_graph *g, const char *path, nn_dtype dtype) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_save_safetensors_dtype",
                         nn__save_safetensors(g, path, dtype, "nn_graph_save_safetensors_dtype"));
}
