/* A small strict JSON reader for model descriptions (src/files/model.c): RFC 8259's grammar
   and nothing more (no comments, no trailing commas, no NaN), UTF-8 checked, duplicate keys
   refused. The input is untrusted (a model file's metadata, a hand-written text), so it is
   bounded: at most NN__JSON_MAX_BYTES of text, NN__JSON_MAX_DEPTH levels of nesting (the
   descent recurses once per level, no deeper) and one value per byte at most. The values
   are a flat array (no pointers): an array's or object's children are linked by index in
   order, an object's keys and every string live in one pool of NUL-terminated texts.
   tests/fuzz_model.c fuzzes it alone and through the model loader. */
#include "../base/internal.h"
#include <float.h>

#define NN__JSON_MAX_BYTES ((size_t)4 << 20) /* 4 MiB of text */
#define NN__JSON_MAX_DEPTH 32

enum { NN__J_NULL, NN__J_FALSE, NN__J_TRUE, NN__J_NUM, NN__J_STR, NN__J_ARR, NN__J_OBJ };

typedef struct nn__jv {
    int type;
    int n;               /* ARR, OBJ: the children */
    int first, next;     /* the first child, the next sibling (-1: none) */
    size_t key;          /* in an object: its key's offset in the pool */
    size_t str;          /* STR: its offset in the pool */
    size_t len;          /* STR: its length in bytes (no NUL inside: \u0000 is refused) */
    double num;          /* NUM */
    int is_int;          /* NUM: written without fraction or exponent */
} nn__jv;

typedef struct nn__json {
    nn__jv *v;
    int n, cap;
    char *pool;
    size_t pn, pcap;
    /* while parsing */
    const unsigned char *p, *base, *end;
    char *err;
    size_t errlen;
    int failed, oom;
} nn__json;

static void nn__json_free(nn__json *j) {
    NN_FREE(j->v);
    NN_FREE(j->pool);
    memset(j, 0, sizeof *j);
}

static const char *nn__json_key(const nn__json *j, int i) { return j->pool + j->v[i].key; }
static const char *nn__json_str(const nn__json *j, int i) { return j->pool + j->v[i].str; }

static int nn__json_error(nn__json *j, const char *fmt, ...) {
    va_list ap;
    int n;
    size_t line = 1;
    const unsigned char *q;
    if (j->failed) return 0;
    j->failed = 1;
    if (!j->err || !j->errlen) return 0;
    for (q = j->base; q < j->p && q < j->end; q++) line += *q == '\n';
    n = snprintf(j->err, j->errlen, "JSON byte %lu (line %lu): ", (unsigned long)(j->p - j->base), (unsigned long)line);
    if (n < 0 || (size_t)n >= j->errlen) return 0;
    va_start(ap, fmt);
    vsnprintf(j->err + n, j->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return 0;
}

static int nn__json_oom(nn__json *j) {
    j->oom = 1;
    return nn__json_error(j, "out of memory");
}

static void nn__json_ws(nn__json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int nn__json_new(nn__json *j, int type) {
    nn__jv *v;
    if (j->n == j->cap) {
        int cap = j->cap ? j->cap * 2 : 64;
        nn__jv *nv = (nn__jv *)NN_REALLOC(j->v, (size_t)cap * sizeof *nv);
        if (!nv) return nn__json_oom(j) - 1;
        j->v = nv;
        j->cap = cap;
    }
    v = &j->v[j->n];
    memset(v, 0, sizeof *v);
    v->type = type;
    v->first = v->next = -1;
    return j->n++;
}

static int nn__json_pool_put(nn__json *j, const char *s, size_t n) {
    if (j->pn + n + 1 > j->pcap) {
        size_t cap = j->pcap ? j->pcap : 256;
        char *np;
        while (cap < j->pn + n + 1) cap *= 2;
        np = (char *)NN_REALLOC(j->pool, cap);
        if (!np) return nn__json_oom(j);
        j->pool = np;
        j->pcap = cap;
    }
    memcpy(j->pool + j->pn, s, n);
    j->pn += n;
    j->pool[j->pn] = 0;
    return 1;
}

static int nn__json_hex4(const unsigned char *s, uint32_t *out) {
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

/* The length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t nn__json_utf8(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t k, len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return 0;
    if (n < len) return 0;
    for (k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return len;
}

/* A string at j->p (its opening quote) into the pool: *off its offset, *len its bytes. */
static int nn__json_string(nn__json *j, size_t *off, size_t *len) {
    size_t start;
    if (j->p >= j->end || *j->p != '"') return nn__json_error(j, "expected a string");
    j->p++;
    start = j->pn;
    if (!nn__json_pool_put(j, "", 0)) return 0;
    for (;;) {
        unsigned c;
        if (j->p >= j->end) return nn__json_error(j, "unterminated string");
        c = *j->p;
        if (c == '"') {
            j->p++;
            break;
        }
        if (c < 0x20) return nn__json_error(j, "control character 0x%02x in a string", c);
        if (c == '\\') {
            char e[4];
            size_t en = 1;
            if (j->end - j->p < 2) return nn__json_error(j, "unterminated escape");
            switch (j->p[1]) {
            case '"': e[0] = '"'; break;
            case '\\': e[0] = '\\'; break;
            case '/': e[0] = '/'; break;
            case 'b': e[0] = '\b'; break;
            case 'f': e[0] = '\f'; break;
            case 'n': e[0] = '\n'; break;
            case 'r': e[0] = '\r'; break;
            case 't': e[0] = '\t'; break;
            case 'u': {
                uint32_t cp, lo;
                if (j->end - j->p < 6 || !nn__json_hex4(j->p + 2, &cp)) return nn__json_error(j, "bad \\u escape");
                if (cp >= 0xDC00 && cp <= 0xDFFF) return nn__json_error(j, "lone low surrogate \\u%04x", (unsigned)cp);
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (j->end - j->p < 12 || j->p[6] != '\\' || j->p[7] != 'u' || !nn__json_hex4(j->p + 8, &lo) ||
                        lo < 0xDC00 || lo > 0xDFFF)
                        return nn__json_error(j, "high surrogate \\u%04x without its low half", (unsigned)cp);
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    j->p += 6;
                }
                if (cp == 0) return nn__json_error(j, "\\u0000 in a string");
                if (cp < 0x80) e[0] = (char)cp;
                else if (cp < 0x800) {
                    e[0] = (char)(0xC0 | (cp >> 6));
                    e[1] = (char)(0x80 | (cp & 0x3F));
                    en = 2;
                } else if (cp < 0x10000) {
                    e[0] = (char)(0xE0 | (cp >> 12));
                    e[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    e[2] = (char)(0x80 | (cp & 0x3F));
                    en = 3;
                } else {
                    e[0] = (char)(0xF0 | (cp >> 18));
                    e[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
                    e[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    e[3] = (char)(0x80 | (cp & 0x3F));
                    en = 4;
                }
                j->p += 4;
                break;
            }
            default: return nn__json_error(j, "unknown escape \\%c", j->p[1] >= 0x20 && j->p[1] < 0x7F ? j->p[1] : '?');
            }
            j->p += 2;
            if (!nn__json_pool_put(j, e, en)) return 0;
        } else {
            size_t n = nn__json_utf8(j->p, (size_t)(j->end - j->p));
            if (!n) return nn__json_error(j, "invalid UTF-8 in a string");
            if (!nn__json_pool_put(j, (const char *)j->p, n)) return 0;
            j->p += n;
        }
    }
    *off = start;
    *len = j->pn - start;
    if (!nn__json_pool_put(j, "", 0)) return 0;
    j->pn++; /* its NUL, kept */
    return 1;
}

static int nn__json_number(nn__json *j, int id) {
    const unsigned char *s = j->p;
    int frac = 0, r;
    double v;
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return nn__json_error(j, "expected a value");
    if (*j->p == '0') j->p++;
    else
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    if (j->p < j->end && *j->p == '.') {
        frac = 1;
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return nn__json_error(j, "a digit must follow '.'");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        frac = 1;
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return nn__json_error(j, "a digit must follow the exponent");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    r = nn__parse_real((const char *)s, (size_t)(j->p - s), 0, &v);
    if (r != 1) return nn__json_error(j, "number out of range");
    j->v[id].num = v;
    j->v[id].is_int = !frac;
    return 1;
}

static int nn__json_literal(nn__json *j, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0) return nn__json_error(j, "expected a value");
    j->p += n;
    return 1;
}

/* One value at j->p: its index, or -1. */
static int nn__json_value(nn__json *j, int depth) {
    int id, last = -1;
    nn__json_ws(j);
    if (j->p >= j->end) return nn__json_error(j, "expected a value, found the end") - 1;
    switch (*j->p) {
    case '{':
    case '[': {
        int obj = *j->p == '{';
        char close = obj ? '}' : ']';
        if (depth >= NN__JSON_MAX_DEPTH) return nn__json_error(j, "nested deeper than %d levels", NN__JSON_MAX_DEPTH) - 1;
        if ((id = nn__json_new(j, obj ? NN__J_OBJ : NN__J_ARR)) < 0) return -1;
        j->p++;
        nn__json_ws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return id;
        }
        for (;;) {
            size_t key = 0, klen = 0;
            int c, k;
            if (obj) {
                nn__json_ws(j);
                if (!nn__json_string(j, &key, &klen)) return -1;
                for (k = j->v[id].first; k >= 0; k = j->v[k].next)
                    if (strcmp(j->pool + j->v[k].key, j->pool + key) == 0)
                        return nn__json_error(j, "duplicate key \"%.100s\"", j->pool + key) - 1;
                nn__json_ws(j);
                if (j->p >= j->end || *j->p != ':') return nn__json_error(j, "expected ':' after a key") - 1;
                j->p++;
            }
            if ((c = nn__json_value(j, depth + 1)) < 0) return -1;
            j->v[c].key = key;
            if (last < 0) j->v[id].first = c;
            else j->v[last].next = c;
            last = c;
            j->v[id].n++;
            nn__json_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == close) {
                j->p++;
                return id;
            }
            return nn__json_error(j, obj ? "expected ',' or '}'" : "expected ',' or ']'") - 1;
        }
    }
    case '"':
        if ((id = nn__json_new(j, NN__J_STR)) < 0) return -1;
        {
            size_t off, len;
            if (!nn__json_string(j, &off, &len)) return -1;
            j->v[id].str = off;
            j->v[id].len = len;
        }
        return id;
    case 't':
        if ((id = nn__json_new(j, NN__J_TRUE)) < 0) return -1;
        return nn__json_literal(j, "true") ? id : -1;
    case 'f':
        if ((id = nn__json_new(j, NN__J_FALSE)) < 0) return -1;
        return nn__json_literal(j, "false") ? id : -1;
    case 'n':
        if ((id = nn__json_new(j, NN__J_NULL)) < 0) return -1;
        return nn__json_literal(j, "null") ? id : -1;
    default:
        if ((id = nn__json_new(j, NN__J_NUM)) < 0) return -1;
        return nn__json_number(j, id) ? id : -1;
    }
}

/* Parses text[0..len) (at most max_bytes) as one JSON value (its root is value 0). NN_OK fills *j (release it
   with nn__json_free); otherwise *j is empty and err says where and what:
   NN_ERR_INVALID_ARGUMENT for malformed text, NN_ERR_OUT_OF_MEMORY. */
static nn_result nn__json_parse(const char *text, size_t len, size_t max_bytes, nn__json *j, char *err, size_t errlen) {
    memset(j, 0, sizeof *j);
    if (err && errlen) err[0] = 0;
    j->err = err;
    j->errlen = errlen;
    j->base = j->p = (const unsigned char *)text;
    j->end = j->p + (text ? len : 0);
    if (!text) {
        nn__json_error(j, "no text");
    } else if (len > max_bytes) {
        nn__json_error(j, "%lu bytes: over the %lu-byte limit", (unsigned long)len, (unsigned long)max_bytes);
    } else if (nn__json_value(j, 0) == 0) {
        nn__json_ws(j);
        if (j->p != j->end) nn__json_error(j, "text after the value");
    }
    if (j->failed) {
        int oom = j->oom;
        nn__json_free(j);
        return oom ? NN_ERR_OUT_OF_MEMORY : NN_ERR_INVALID_ARGUMENT;
    }
    return NN_OK;
}

/* The member of object o named key, or -1. */
static int nn__json_get(const nn__json *j, int o, const char *key) {
    int k;
    if (o < 0 || j->v[o].type != NN__J_OBJ) return -1;
    for (k = j->v[o].first; k >= 0; k = j->v[k].next)
        if (strcmp(j->pool + j->v[k].key, key) == 0) return k;
    return -1;
}

/* ---- writing: a growing text (nn__jtext, src/base/internal.h) ---- */

/* A JSON string (s valid UTF-8: names the builders accepted) */
static void nn__jt_string(nn__jtext *t, const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    nn__jt_put(t, "\"", 1);
    for (; *u; u++) {
        if (*u == '"' || *u == '\\') {
            char e[2];
            e[0] = '\\';
            e[1] = (char)*u;
            nn__jt_put(t, e, 2);
        } else if (*u < 0x20) nn__jt_printf(t, "\\u%04x", *u);
        else nn__jt_put(t, (const char *)u, 1);
    }
    nn__jt_put(t, "\"", 1);
}

/* A float as the shortest decimal text that reads back to the same float, '.' in every
   locale (nn__format_double's digits). */
static void nn__jt_float(nn__jtext *t, float v) {
    char raw[64], out[64];
    int prec;
    size_t i, k;
    double back;
    for (prec = 6; prec <= 9; prec++) {
        snprintf(raw, sizeof raw, "%.*g", prec, (double)v);
        for (i = k = 0; raw[i] && k + 1 < sizeof out; i++) {
            char c = raw[i];
            if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'e' || c == 'E') out[k++] = c;
            else if (k == 0 || out[k - 1] != '.') out[k++] = '.';
        }
        out[k] = 0;
        if (nn__parse_real(out, k, 1, &back) == 1 && (float)back == v) break;
    }
    nn__jt_puts(t, out);
}
