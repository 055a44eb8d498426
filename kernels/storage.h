/* 16-bit storage, fp32 arithmetic. A header in the common subset of C99 and OpenCL C (as
   kernels/activation.h): the CPU bodies and the kernels read and write a tensor's storage
   through these, and compute in float.

   bfloat16: the high half of a float32, stored as a 16-bit integer and widened in registers
   (float from bits << 16); written rounded to nearest, ties to even, a NaN kept a quiet NaN
   (PyTorch's round_to_nearest_even). float16 (IEEE binary16): in OpenCL C through
   vload_half / vstore_half_rte (OpenCL 1.2 core: no cl_khr_fp16 needed), in C the same
   conversion written out (round to nearest even, subnormals, overflow to infinity), so both
   backends store the same bits.

   Per element, by type: NN__LD_BF16(p, i), NN__ST_BF16(p, i, v), NN__LD_F16(p, i),
   NN__ST_F16(p, i, v) over a pointer to 16-bit words (ushort in OpenCL C, uint16_t in C).
   Per program: a kernel file built with -DNN_STORE_BF16 or -DNN_STORE_F16 (the launch's
   `store`, src/opencl/backend.c) reads NN__STORE_T storage with NN__SLOAD(p, i) and writes it
   with NN__SSTORE(p, i, v); built with neither, NN__STORE_T is float and they are plain
   accesses, so one .cl source serves f32, bf16 and f16. */
#ifndef NN__STORAGE_H
#define NN__STORAGE_H

#ifdef __OPENCL_VERSION__

#define NN__U16 ushort
static inline float nn__bf16_to_f32(ushort h) { return as_float((uint)h << 16); }
static inline ushort nn__f32_to_bf16(float f) {
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u); /* NaN: quiet, sign kept */
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
#define NN__U32 uint
static inline uint nn__f32_bits(float f) { return as_uint(f); }
#define NN__LD_BF16(p, i) nn__bf16_to_f32((p)[i])
#define NN__ST_BF16(p, i, v) ((p)[i] = nn__f32_to_bf16(v))
#define NN__LD_F16(p, i) vload_half((i), (__global const half *)(p))
#define NN__ST_F16(p, i, v) vstore_half_rte((v), (i), (__global half *)(p))

#else /* C */

#define NN__U16 uint16_t
#define NN__U32 uint32_t
static inline uint32_t nn__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float nn__bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t nn__f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline float nn__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    float f;
    if (e == 0x1f) {
        u = sign | 0x7f800000u | (m << 13);
    } else if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float */
        f = (float)m * (1.0f / 16777216.0f);
        return sign ? -f : f;
    } else {
        u = sign | ((e + 112u) << 23) | (m << 13);
    }
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t nn__f32_to_f16(float f) {
    uint32_t u, sign, a, r, rem;
    memcpy(&u, &f, 4);
    sign = (u >> 16) & 0x8000u;
    a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN: quiet */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* from 65520 up: infinity */
    if (a < 0x38800000u) {                                   /* below 2^-14: a subnormal or 0 */
        uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126u - (a >> 23), half;
        if (a < 0x33000000u) return (uint16_t)sign; /* below 2^-25: 0 */
        half = 1u << (shift - 1);
        r = m >> shift;
        rem = m & ((1u << shift) - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    r = (a - 0x38000000u) >> 13; /* the exponent rebiased (127 - 15), the mantissa's top 10 bits */
    rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}
#define NN__LD_BF16(p, i) nn__bf16_to_f32((p)[i])
#define NN__ST_BF16(p, i, v) ((p)[i] = nn__f32_to_bf16(v))
#define NN__LD_F16(p, i) nn__f16_to_f32((p)[i])
#define NN__ST_F16(p, i, v) ((p)[i] = nn__f32_to_f16(v))

#endif

/* Stochastic rounding to bfloat16 (16-bit parameters' updates, nn_optimizer.stochastic_rounding):
   the float's low 16 bits plus 16 random bits r, truncated: up (away from zero) with
   probability (low bits) / 2^16, exactly the distance to the lower neighbour in units of
   the last place, so the mean is the float32 value and the result is one of its two
   bfloat16 neighbours. Infinity and NaN round to nearest (NaN kept quiet). A finite value
   within half a unit of the largest bfloat16 can round up to infinity, as rounding up does.
   The bits are counter-based: nn__sr_bits(element, key) mixes the element's index with a
   key that the host makes per parameter and update from the graph's seed (nn__sr_key in
   src/ops/optim.c), the murmur3 finaliser twice: integer operations only, the same bits in
   C and OpenCL C. */
static inline NN__U32 nn__sr_mix(NN__U32 h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}
static inline NN__U32 nn__sr_bits(NN__U32 i, NN__U32 key) { return nn__sr_mix(nn__sr_mix(i ^ key) + key); }
static inline NN__U16 nn__f32_to_bf16_sr(float f, NN__U32 r) {
    NN__U32 u = nn__f32_bits(f);
    if ((u & 0x7fffffffu) >= 0x7f800000u) return nn__f32_to_bf16(f);
    return (NN__U16)((u + (r >> 16)) >> 16);
}

#if defined(NN_STORE_BF16)
#define NN__STORE_T NN__U16
#define NN__SLOAD(p, i) NN__LD_BF16(p, i)
#define NN__SSTORE(p, i, v) NN__ST_BF16(p, i, v)
#elif defined(NN_STORE_F16)
#define NN__STORE_T NN__U16
#define NN__SLOAD(p, i) NN__LD_F16(p, i)
#define NN__SSTORE(p, i, v) NN__ST_F16(p, i, v)
#else
#define NN__STORE_T float
#define NN__SLOAD(p, i) ((p)[i])
#define NN__SSTORE(p, i, v) ((p)[i] = (v))
#endif

#endif
