/* Text and tensor file formats: CSV, IDX and raw tensors (whole files are read and written
   by src/base/files.c). Numbers in text (CSV fields, training-state metadata) do not go
   through strtod or printf's decimal point, which follow the C locale (LC_NUMERIC): under
   de_DE strtod stops at the '.' of "1.5". nn__parse_real reads them in every locale alike,
   rounded correctly. */
#include <float.h>


/* ---- numbers as text, the same in every locale ---- */

/* Unsigned big integers, 32-bit limbs, least significant first: enough for the exact
   quotients of nn__parse_real (10^1126 and 2^1076 shifts stay under 4352 bits). */
#define NN__BIG_LIMBS 136
#define NN__MAX_DIGITS 800 /* more significant digits than any halfway case needs (767) */
typedef struct nn__big {
    int n;
    uint32_t d[NN__BIG_LIMBS];
} nn__big;

static int nn__big_mul_add(nn__big *b, uint32_t m, uint32_t a) {
    uint64_t carry = a;
    int i;
    for (i = 0; i < b->n; i++) {
        uint64_t t = (uint64_t)b->d[i] * m + carry;
        b->d[i] = (uint32_t)t;
        carry = t >> 32;
    }
    if (carry) {
        if (b->n == NN__BIG_LIMBS) return 0;
        b->d[b->n++] = (uint32_t)carry;
    }
    return 1;
}

static int nn__big_pow10(nn__big *b, int64_t e) {
    static const uint32_t p10[10] = {1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u, 1000000000u};
    for (; e >= 9; e -= 9)
        if (!nn__big_mul_add(b, p10[9], 0)) return 0;
    return nn__big_mul_add(b, p10[e], 0);
}

static int nn__big_shl(nn__big *b, int64_t bits) {
    int words = (int)(bits / 32), sh = (int)(bits % 32), i;
    if (b->n == 0) return 1;
    if (bits < 0 || bits > 32 * NN__BIG_LIMBS || b->n + words + 1 > NN__BIG_LIMBS) return 0;
    b->d[b->n + words] = 0;
    for (i = b->n - 1; i >= 0; i--) {
        if (sh) b->d[i + words + 1] |= b->d[i] >> (32 - sh);
        b->d[i + words] = b->d[i] << sh;
    }
    for (i = 0; i < words; i++) b->d[i] = 0;
    b->n += words + 1;
    while (b->n > 0 && b->d[b->n - 1] == 0) b->n--;
    return 1;
}

static void nn__big_shr1(nn__big *b) {
    int i;
    for (i = 0; i < b->n; i++) b->d[i] = (b->d[i] >> 1) | (i + 1 < b->n ? b->d[i + 1] << 31 : 0);
    while (b->n > 0 && b->d[b->n - 1] == 0) b->n--;
}

static int nn__big_cmp(const nn__big *a, const nn__big *b) {
    int i;
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    for (i = a->n - 1; i >= 0; i--)
        if (a->d[i] != b->d[i]) return a->d[i] < b->d[i] ? -1 : 1;
    return 0;
}

static void nn__big_sub(nn__big *a, const nn__big *b) { /* a -= b, a >= b */
    int64_t borrow = 0;
    int i;
    for (i = 0; i < a->n; i++) {
        int64_t t = (int64_t)a->d[i] - (i < b->n ? b->d[i] : 0) - borrow;
        borrow = t < 0;
        a->d[i] = (uint32_t)(t + (borrow ? ((int64_t)1 << 32) : 0));
    }
    while (a->n > 0 && a->d[a->n - 1] == 0) a->n--;
}

static int64_t nn__big_bits(const nn__big *b) {
    uint32_t top;
    int64_t bits;
    if (b->n == 0) return 0;
    top = b->d[b->n - 1];
    bits = 32 * (int64_t)(b->n - 1);
    while (top) {
        bits++;
        top >>= 1;
    }
    return bits;
}

static void nn__big_copy(nn__big *dst, const nn__big *src) {
    dst->n = src->n;
    memcpy(dst->d, src->d, (size_t)src->n * sizeof src->d[0]);
}

/* digits * 10^e10 (digits: nd significant decimal digits, the first not 0) rounded to the
   nearest float (float32) or double, ties to even: the exact quotient num / den, P + 2 bits
   of it by long division and the remainder as the sticky bit. 1, or -1 beyond the range. */
static int nn__real_from_digits(const char *digits, int nd, int64_t e10, int float32, double *out) {
    const int P = float32 ? 24 : 53, emin = float32 ? -126 : -1022, emax = float32 ? 127 : 1023;
    nn__big num, den, a, b;
    int64_t mag = nd + e10, L, e_ulp, s;
    uint64_t q = 0, m;
    int i, sticky;
    double r;
    if (mag > (float32 ? 39 : 309)) return -1;  /* >= 10^39 > FLT_MAX, >= 10^309 > DBL_MAX */
    if (mag < (float32 ? -46 : -324)) {         /* < half the smallest subnormal */
        *out = 0.0;
        return 1;
    }
    num.n = den.n = 0;
    den.d[0] = 1;
    den.n = 1;
    for (i = 0; i < nd; i += 9) { /* nine digits at a time */
        uint32_t chunk = 0, scale = 1;
        int k;
        for (k = i; k < nd && k < i + 9; k++) {
            chunk = chunk * 10 + (uint32_t)(digits[k] - '0');
            scale *= 10;
        }
        if (!nn__big_mul_add(&num, scale, chunk)) return 0;
    }
    if (!(e10 >= 0 ? nn__big_pow10(&num, e10) : nn__big_pow10(&den, -e10))) return 0;
    /* L = floor(log2(num / den)): the bit lengths' difference, or one less */
    L = nn__big_bits(&num) - nn__big_bits(&den);
    nn__big_copy(&a, &num);
    nn__big_copy(&b, &den);
    if (!(L >= 0 ? nn__big_shl(&b, L) : nn__big_shl(&a, -L))) return 0;
    if (nn__big_cmp(&a, &b) < 0) L--;
    if (L > emax) return -1;
    e_ulp = L - (P - 1); /* the weight of the last bit kept; subnormals keep fewer bits */
    if (e_ulp < emin - (P - 1)) e_ulp = emin - (P - 1);
    s = 2 - e_ulp;       /* q = floor(num * 2^s / den) < 2^(P + 2): the result, a guard and a round bit */
    if (!(s >= 0 ? nn__big_shl(&num, s) : nn__big_shl(&den, -s))) return 0;
    if (!nn__big_shl(&den, P + 1)) return 0;
    for (i = P + 1; i >= 0; i--) {
        if (nn__big_cmp(&num, &den) >= 0) {
            nn__big_sub(&num, &den);
            q |= (uint64_t)1 << i;
        }
        nn__big_shr1(&den);
    }
    sticky = num.n != 0;
    m = q >> 2;
    if ((q & 2) && ((q & 1) || sticky || (m & 1))) m++;
    r = ldexp((double)m, (int)e_ulp); /* exact: m < 2^(P + 1) at a representable weight */
    if (r > (float32 ? (double)FLT_MAX : DBL_MAX)) return -1;
    *out = r;
    return 1;
}

static int nn__ascii_ieq(const char *s, size_t n, const char *word) {
    size_t i;
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (!word[i] || c != word[i]) return 0;
    }
    return word[n] == 0;
}

/* The whole of s[0..n) as a number: [+-] digits [. digits] [e|E [+-] digits] (digits on
   at least one side of the '.'), or inf, infinity, nan in any case; '.' in every locale.
   Rounded to nearest-even float (float32) or double. 1: *out is the value; 0: not a
   number; -1: finite but beyond the format's range (*out is +-HUGE_VAL). */
static int nn__parse_real(const char *s, size_t n, int float32, double *out) {
    const char *p = s, *e = s + n;
    char digits[NN__MAX_DIGITS + 1];
    int nd = 0, neg = 0, any = 0, dropped = 0, rc;
    int64_t e10 = 0;
    *out = 0.0;
    if (p < e && (*p == '+' || *p == '-')) neg = *p++ == '-';
    if (nn__ascii_ieq(p, (size_t)(e - p), "inf") || nn__ascii_ieq(p, (size_t)(e - p), "infinity")) {
        *out = neg ? -HUGE_VAL : HUGE_VAL;
        return 1;
    }
    if (nn__ascii_ieq(p, (size_t)(e - p), "nan")) {
        *out = neg ? -NAN : NAN;
        return 1;
    }
    for (; p < e && *p >= '0' && *p <= '9'; p++) { /* value = digits * 10^e10 */
        any = 1;
        if (nd == 0 && *p == '0') continue;
        if (nd < NN__MAX_DIGITS) digits[nd++] = *p;
        else {
            dropped |= *p != '0';
            e10++;
        }
    }
    if (p < e && *p == '.')
        for (p++; p < e && *p >= '0' && *p <= '9'; p++) {
            any = 1;
            if (nd == 0 && *p == '0') e10--;
            else if (nd < NN__MAX_DIGITS) {
                digits[nd++] = *p;
                e10--;
            } else dropped |= *p != '0';
        }
    if (!any) return 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        int64_t x = 0;
        int eneg = 0;
        const char *start;
        p++;
        if (p < e && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        start = p;
        for (; p < e && *p >= '0' && *p <= '9'; p++)
            if (x < 1000000000) x = x * 10 + (*p - '0');
        if (p == start) return 0;
        e10 += eneg ? -x : x;
    }
    if (p != e) return 0;
    if (dropped) { /* digits past the 800th: a 1 after the kept ones rounds the same way */
        digits[nd++] = '1';
        e10--;
    } else
        while (nd > 0 && digits[nd - 1] == '0') {
            nd--;
            e10++;
        }
    if (nd == 0) {
        *out = neg ? -0.0 : 0.0;
        return 1;
    }
    rc = nn__real_from_digits(digits, nd, e10, float32, out);
    if (rc < 0) *out = HUGE_VAL;
    if (neg) *out = -*out;
    return rc;
}

/* A double as text that nn__parse_real reads back to the same bits: printf's "%.17g"
   digits, with the locale's decimal point (whatever its bytes) written as '.'. */
static void nn__format_double(char *buf, size_t size, double v) {
    char raw[64];
    size_t i, k = 0;
    if (!size) return;
    snprintf(raw, sizeof raw, "%.17g", v);
    for (i = 0; raw[i] && k + 1 < size; i++) {
        char c = raw[i];
        if ((c >= '0' && c <= '9') || c == '+' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            buf[k++] = c;
        else if (k == 0 || buf[k - 1] != '.')
            buf[k++] = '.';
    }
    buf[k] = 0;
}

/* ---- IDX ---- */

static uint32_t nn__be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

NN_API void nn_array_free(nn_array *a) {
    if (!a) return;
    NN_FREE(a->data);
    memset(a, 0, sizeof *a);
}

/* IDX: 0x00 0x00 TYPE NDIM, NDIM big-endian uint32 dims, then big-endian values. The file
   is buf[0..len) (path names it in messages); out is filled on success, else left zeroed. */
static nn_result nn__idx_parse(nn_context *ctx, const char *path, const unsigned char *buf, size_t len, nn_dtype as,
                               nn_array *out) {
    size_t esize, off, i;
    uint64_t numel = 1;
    int ndim, type, k;
    memset(out, 0, sizeof *out);
    if (len < 4 || buf[0] != 0 || buf[1] != 0) {
        int gzip = len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
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
    default: return nn__fail(ctx, NN_ERR_IO, "%s: unknown IDX element type 0x%02x", path, type);
    }
    if (ndim < 1 || ndim > NN_MAX_DIMS || len < 4 + 4 * (size_t)ndim)
        return nn__fail(ctx, NN_ERR_IO, "%s: %d dims (1 to %d supported) or a truncated header", path, ndim, NN_MAX_DIMS);
    for (k = 0; k < ndim; k++) {
        uint32_t d = nn__be32(buf + 4 + 4 * k);
        if (d == 0 || numel > ((uint64_t)1 << 40) / d) {
            memset(out, 0, sizeof *out);
            return nn__fail(ctx, NN_ERR_IO, "%s: dim %d is %u: empty or too large", path, k, d);
        }
        out->shape.dim[k] = d;
        numel *= d;
    }
    out->shape.ndim = ndim;
    off = 4 + 4 * (size_t)ndim;
    if ((len - off) / esize < numel) {
        memset(out, 0, sizeof *out);
        return nn__fail(ctx, NN_ERR_IO, "%s: truncated: %llu values declared, %llu bytes of data", path,
                        (unsigned long long)numel, (unsigned long long)(len - off));
    }
    out->data = NN_MALLOC((size_t)numel * 4);
    if (!out->data) {
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
    return NN_OK;
}

NN_API nn_result nn_array_load_idx(nn_context *ctx, const char *path, nn_dtype as, nn_array *out) {
    unsigned char *buf;
    size_t len;
    nn_result r;
    if (!out) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_array_load_idx: out is NULL");
    memset(out, 0, sizeof *out);
    if (as != NN_F32 && as != NN_I32) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_array_load_idx: unknown dtype");
    r = nn__read_file(ctx, path, &buf, &len);
    if (r != NN_OK) return r;
    r = nn__idx_parse(ctx, path, buf, len, as, out);
    NN_FREE(buf);
    return r;
}

/* ---- CSV of numbers: one pass that counts rows and checks every field, then one that stores ---- */

static int nn__csv_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

static int nn__csv_blank(const char *s, const char *e) {
    for (; s < e; s++)
        if (!nn__csv_space(*s)) return 0;
    return 1;
}

static nn_result nn__csv_check_delimiter(nn_context *ctx, const char *path, char delim) {
    if (delim == '\n' || delim == '\r' || delim == '.' || delim == '-' || delim == '+' || (delim >= '0' && delim <= '9'))
        return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_array_load_csv: %s: delimiter '%c' cannot separate numbers", path ? path : "",
                        delim);
    return NN_OK;
}

/* The CSV text buf[0..len) (path names it in messages) into out; a UTF-8 byte order mark
   at the start is skipped. */
static nn_result nn__csv_parse(nn_context *ctx, const char *path, const unsigned char *buf, size_t len,
                               const nn_csv_desc *desc, nn_array *out) {
    char delim = desc && desc->delimiter ? desc->delimiter : ',';
    int header = desc ? desc->header : 0, pass;
    int64_t cols = -1, rows = 0;
    const char *text = (const char *)buf, *text_end = (const char *)buf + len;
    float *data = NULL;
    nn_result r;
    memset(out, 0, sizeof *out);
    r = nn__csv_check_delimiter(ctx, path, delim);
    if (r != NN_OK) return r;
    if (memchr(buf, 0, len)) return nn__fail(ctx, NN_ERR_IO, "%s: a NUL byte: not a text file", path);
    if (len >= 3 && buf[0] == 0xEF && buf[1] == 0xBB && buf[2] == 0xBF) text += 3; /* UTF-8 BOM */
    for (pass = 0; pass < 2; pass++) {
        const char *p = text;
        long long line = 0;
        int64_t row = 0;
        while (p < text_end) {
            const char *eol = (const char *)memchr(p, '\n', (size_t)(text_end - p)), *q;
            int64_t c = 0;
            if (!eol) eol = text_end;
            line++;
            if ((line == 1 && header) || nn__csv_blank(p, eol)) {
                p = eol + 1;
                continue;
            }
            for (q = p;;) { /* the fields of this line */
                const char *fe = q, *a, *b;
                double v = 0;
                int rc = 0;
                while (fe < eol && *fe != delim) fe++;
                for (a = q; a < fe && nn__csv_space(*a); a++) {}
                for (b = fe; b > a && nn__csv_space(b[-1]); b--) {}
                if (a < b) rc = nn__parse_real(a, (size_t)(b - a), 1, &v);
                if (rc != 1) {
                    char shown[40];
                    size_t n = (size_t)(b - a) < sizeof shown - 1 ? (size_t)(b - a) : sizeof shown - 1;
                    memcpy(shown, a, n);
                    shown[n] = 0;
                    NN_FREE(data);
                    if (rc < 0)
                        return nn__fail(ctx, NN_ERR_IO, "%s:%lld: field %lld \"%s\" is out of the float32 range", path, line,
                                        (long long)c + 1, shown);
                    return nn__fail(ctx, NN_ERR_IO, "%s:%lld: field %lld \"%s\" is not a number", path, line, (long long)c + 1,
                                    shown);
                }
                if (pass == 1) data[row * cols + c] = (float)v;
                c++;
                if (fe >= eol) break;
                q = fe + 1;
            }
            if (cols < 0) cols = c;
            else if (c != cols) {
                NN_FREE(data);
                return nn__fail(ctx, NN_ERR_IO, "%s:%lld: %lld fields, the first row has %lld", path, line, (long long)c,
                                (long long)cols);
            }
            row++;
            p = eol + 1;
        }
        if (pass == 0) {
            if (row == 0)
                return nn__fail(ctx, NN_ERR_IO, "%s:%lld: no data rows%s", path, line > 0 ? line : 1LL,
                                len ? "" : " (an empty file)");
            rows = row;
            if ((uint64_t)rows * (uint64_t)cols > ((uint64_t)1 << 40) ||
                (data = (float *)nn__calloc((size_t)rows * (size_t)cols, sizeof(float))) == NULL)
                return nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %lld x %lld values", path, (long long)rows,
                                (long long)cols);
        }
    }
    out->dtype = NN_F32;
    out->shape = nn_shape2(rows, cols);
    out->data = data;
    return NN_OK;
}

NN_API nn_result nn_array_load_csv(nn_context *ctx, const char *path, const nn_csv_desc *desc, nn_array *out) {
    unsigned char *buf;
    size_t len;
    nn_result r;
    if (!out) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_array_load_csv: out is NULL");
    memset(out, 0, sizeof *out);
    r = nn__csv_check_delimiter(ctx, path, desc && desc->delimiter ? desc->delimiter : ',');
    if (r != NN_OK) return r;
    r = nn__read_file(ctx, path, &buf, &len);
    if (r != NN_OK) return r;
    r = nn__csv_parse(ctx, path, buf, len, desc, out);
    NN_FREE(buf);
    return r;
}
