/* The file format of the compiled-program cache (the OpenCL backend's program binaries,
   src/opencl/backend.c), as pure functions over bytes: no I/O, no allocation, no OpenCL, so
   tests/fuzz_cache.c fuzzes the parser in a build without OpenCL.

   A cache file is a 40-byte header, then the payload (the driver's program binary):

       offset size
        0      8   magic "nnh-prog"
        8      4   format version, little-endian (NN__CACHE_FORMAT)
       12      4   header bytes (40)
       16      8   key: the hash of what the program was built from (its source, build
                   options, device name, driver and device versions; also in the file's name)
       24      8   payload bytes (at least 1; the header and payload are the whole file)
       32      8   checksum of bytes 0..31 and the payload (nn__cache_checksum)
       40          payload

   Every integer is little-endian. The checksum covers the key and the length, so a file
   renamed to another key, cut short, grown or with any one byte changed is refused. */
#include "../base/internal.h"

#define NN__CACHE_HEADER 40
#define NN__CACHE_FORMAT 1u
#define NN__FNV_BASIS 14695981039346656037ULL /* 0xcbf29ce484222325 */
#define NN__FNV_PRIME 1099511628211ULL

/* What nn__cache_parse found: NN__CACHE_OK (0) for a good file, else what is wrong. */
typedef enum nn__cache_status {
    NN__CACHE_OK = 0,
    NN__CACHE_BAD_SHORT,    /* fewer bytes than the header */
    NN__CACHE_BAD_MAGIC,    /* not a cache file */
    NN__CACHE_BAD_VERSION,  /* another format version, or another header size */
    NN__CACHE_BAD_KEY,      /* made for another key */
    NN__CACHE_BAD_LENGTH,   /* the payload length is 0 or not what the file holds */
    NN__CACHE_BAD_CHECKSUM  /* the checksum does not match the bytes */
} nn__cache_status;

/* 64-bit FNV-1a: h continues a hash (start from NN__FNV_BASIS). Cache keys and checksums. */
static NN__MAYBE_UNUSED uint64_t nn__fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= NN__FNV_PRIME;
    }
    return h;
}

static NN__MAYBE_UNUSED const char *nn__cache_status_str(int s) {
    switch (s) {
    case NN__CACHE_OK: return "valid";
    case NN__CACHE_BAD_SHORT: return "shorter than the 40-byte header";
    case NN__CACHE_BAD_MAGIC: return "not a program cache file";
    case NN__CACHE_BAD_VERSION: return "written in another format version";
    case NN__CACHE_BAD_KEY: return "made for another source, options, device or driver";
    case NN__CACHE_BAD_LENGTH: return "its size is not the header's (cut short or grown)";
    case NN__CACHE_BAD_CHECKSUM: return "checksum mismatch (damaged)";
    default: return "invalid";
    }
}

/* Lanes 0..7 of the checksum (below) over n bytes at p, whose first byte is in lane 0. */
static NN__MAYBE_UNUSED void nn__cache_lanes(uint64_t lane[8], const unsigned char *p, size_t n) {
    uint64_t l0 = lane[0], l1 = lane[1], l2 = lane[2], l3 = lane[3], l4 = lane[4], l5 = lane[5], l6 = lane[6],
             l7 = lane[7]; /* in registers: eight independent multiplies per 8 bytes */
    size_t i;
    for (i = 0; i + 8 <= n; i += 8, p += 8) {
        l0 = (l0 ^ p[0]) * NN__FNV_PRIME;
        l1 = (l1 ^ p[1]) * NN__FNV_PRIME;
        l2 = (l2 ^ p[2]) * NN__FNV_PRIME;
        l3 = (l3 ^ p[3]) * NN__FNV_PRIME;
        l4 = (l4 ^ p[4]) * NN__FNV_PRIME;
        l5 = (l5 ^ p[5]) * NN__FNV_PRIME;
        l6 = (l6 ^ p[6]) * NN__FNV_PRIME;
        l7 = (l7 ^ p[7]) * NN__FNV_PRIME;
    }
    lane[0] = l0, lane[1] = l1, lane[2] = l2, lane[3] = l3, lane[4] = l4, lane[5] = l5, lane[6] = l6, lane[7] = l7;
    for (i = 0; i < n % 8; i++) lane[i] = (lane[i] ^ p[i]) * NN__FNV_PRIME;
}

/* The checksum: 8 interleaved 64-bit FNV-1a hashes (lane j starts from the offset basis
   + j and hashes the bytes at positions j, j + 8, j + 16, ... of header bytes 0..31
   followed by the payload), folded as c = basis, then c = (c ^ lane_j) * prime for j = 0..7.
   Any one changed byte changes its lane (each FNV-1a step is a bijection of the state)
   and so the fold. The lanes run side by side: 3 ms for a 7 MB binary where one FNV-1a
   chain takes 9. */
static NN__MAYBE_UNUSED uint64_t nn__cache_checksum(const unsigned char head[32], const unsigned char *payload,
                                                    size_t len) {
    uint64_t lane[8], c = NN__FNV_BASIS;
    int j;
    for (j = 0; j < 8; j++) lane[j] = NN__FNV_BASIS + (uint64_t)j;
    nn__cache_lanes(lane, head, 32); /* 32 bytes: the payload starts in lane 0 */
    nn__cache_lanes(lane, payload, len);
    for (j = 0; j < 8; j++) c = (c ^ lane[j]) * NN__FNV_PRIME;
    return c;
}

static NN__MAYBE_UNUSED uint64_t nn__cache_get(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    int i;
    for (i = bytes - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static NN__MAYBE_UNUSED void nn__cache_put(unsigned char *p, uint64_t v, int bytes) {
    int i;
    for (i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The header for a payload of len bytes (len > 0) made for key. */
static NN__MAYBE_UNUSED void nn__cache_header(unsigned char hdr[NN__CACHE_HEADER], uint64_t key,
                                              const unsigned char *payload, size_t len) {
    memcpy(hdr, "nnh-prog", 8);
    nn__cache_put(hdr + 8, NN__CACHE_FORMAT, 4);
    nn__cache_put(hdr + 12, NN__CACHE_HEADER, 4);
    nn__cache_put(hdr + 16, key, 8);
    nn__cache_put(hdr + 24, (uint64_t)len, 8);
    nn__cache_put(hdr + 32, nn__cache_checksum(hdr, payload, len), 8);
}

/* Checks the size bytes of a cache file against the format and key. NN__CACHE_OK: the
   payload is *payload (inside data) of *len > 0 bytes; else *payload is NULL and *len 0. */
static NN__MAYBE_UNUSED int nn__cache_parse(const unsigned char *data, size_t size, uint64_t key,
                                            const unsigned char **payload, size_t *len) {
    uint64_t n;
    *payload = NULL;
    *len = 0;
    if (!data || size < NN__CACHE_HEADER) return NN__CACHE_BAD_SHORT;
    if (memcmp(data, "nnh-prog", 8) != 0) return NN__CACHE_BAD_MAGIC;
    if (nn__cache_get(data + 8, 4) != NN__CACHE_FORMAT || nn__cache_get(data + 12, 4) != NN__CACHE_HEADER)
        return NN__CACHE_BAD_VERSION;
    if (nn__cache_get(data + 16, 8) != key) return NN__CACHE_BAD_KEY;
    n = nn__cache_get(data + 24, 8);
    if (n == 0 || n != (uint64_t)(size - NN__CACHE_HEADER)) return NN__CACHE_BAD_LENGTH;
    if (nn__cache_get(data + 32, 8) != nn__cache_checksum(data, data + NN__CACHE_HEADER, (size_t)n))
        return NN__CACHE_BAD_CHECKSUM;
    *payload = data + NN__CACHE_HEADER;
    *len = (size_t)n;
    return NN__CACHE_OK;
}
