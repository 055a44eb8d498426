/* The public GEMM on 16-bit operands and the 16-bit conversions (api.h, 7b): argument
   checks around src/cpu/gemm16.c. No op kind: nothing here is a graph's. */
#include "../base/internal.h"

static nn_result nn__gemm16_api(int fmt, const char *fn, nn_context *ctx, int trans_a, int trans_b, int64_t m,
                                int64_t n, int64_t k, float alpha, const uint16_t *a, int64_t lda, const uint16_t *b,
                                int64_t ldb, float beta, float *c, int64_t ldc) {
    const int64_t big = 2147483647;
    int64_t need_a = trans_a ? m : k, need_b = trans_b ? k : n;
    int reads = m > 0 && n > 0 && k > 0 && alpha != 0.0f;
    if (m < 0 || n < 0 || k < 0 || m > big || n > big || k > big)
        return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: sizes m %lld, n %lld, k %lld: each must be in [0, 2^31 - 1]",
                        fn, (long long)m, (long long)n, (long long)k);
    if (lda < (need_a > 1 ? need_a : 1) || ldb < (need_b > 1 ? need_b : 1) || ldc < (n > 1 ? n : 1) || lda > big ||
        ldb > big || ldc > big)
        return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT,
                        "%s: leading dimensions lda %lld, ldb %lld, ldc %lld too small (or past 2^31 - 1) for m %lld, "
                        "n %lld, k %lld, trans_a %d, trans_b %d: lda >= %lld, ldb >= %lld, ldc >= %lld",
                        fn, (long long)lda, (long long)ldb, (long long)ldc, (long long)m, (long long)n, (long long)k,
                        trans_a, trans_b, (long long)(need_a > 1 ? need_a : 1), (long long)(need_b > 1 ? need_b : 1),
                        (long long)(n > 1 ? n : 1));
    if ((m > 0 && n > 0 && !c) || (reads && (!a || !b)))
        return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "%s: a NULL matrix (a %s, b %s, c %s) for m %lld, n %lld, k %lld",
                        fn, a ? "set" : "NULL", b ? "set" : "NULL", c ? "set" : "NULL", (long long)m, (long long)n,
                        (long long)k);
    (fmt == NN__G16_BF16 ? nn__cpu_gemm_bf16 : nn__cpu_gemm_f16)(ctx ? ctx->threads : NULL, trans_a != 0, trans_b != 0,
                                                                 (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb,
                                                                 beta, c, (int)ldc);
    return NN_OK;
}

NN_API nn_result nn_cpu_gemm_bf16(nn_context *ctx, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                                  float alpha, const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                                  float beta, float *c, int64_t ldc) {
    if (!ctx)
        return nn__gemm16_api(NN__G16_BF16, "nn_cpu_gemm_bf16", NULL, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                              beta, c, ldc);
    return NN__EXCLUSIVE(ctx, "nn_cpu_gemm_bf16",
                         nn__gemm16_api(NN__G16_BF16, "nn_cpu_gemm_bf16", ctx, trans_a, trans_b, m, n, k, alpha, a, lda,
                                        b, ldb, beta, c, ldc));
}

NN_API nn_result nn_cpu_gemm_f16(nn_context *ctx, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                                 float alpha, const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                                 float beta, float *c, int64_t ldc) {
    if (!ctx)
        return nn__gemm16_api(NN__G16_F16, "nn_cpu_gemm_f16", NULL, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                              beta, c, ldc);
    return NN__EXCLUSIVE(ctx, "nn_cpu_gemm_f16",
                         nn__gemm16_api(NN__G16_F16, "nn_cpu_gemm_f16", ctx, trans_a, trans_b, m, n, k, alpha, a, lda,
                                        b, ldb, beta, c, ldc));
}

static nn_result nn__cvt16_api(int what, const void *src, void *dst, int64_t n) {
    if (n < 0 || (n > 0 && (!src || !dst))) return NN_ERR_INVALID_ARGUMENT;
    nn__cvt16_n(what, src, dst, n);
    return NN_OK;
}
NN_API nn_result nn_f32_to_bf16(const float *src, uint16_t *dst, int64_t n) { return nn__cvt16_api(0, src, dst, n); }
NN_API nn_result nn_bf16_to_f32(const uint16_t *src, float *dst, int64_t n) { return nn__cvt16_api(1, src, dst, n); }
NN_API nn_result nn_f32_to_f16(const float *src, uint16_t *dst, int64_t n) { return nn__cvt16_api(2, src, dst, n); }
NN_API nn_result nn_f16_to_f32(const uint16_t *src, float *dst, int64_t n) { return nn__cvt16_api(3, src, dst, n); }
