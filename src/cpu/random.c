/* The random family's CPU loops beside src/ops/random.c (the samplers' own bodies are there,
   on kernels/random.h's formulas): dropout's mask. */

/* y = x * mask / (1 - p), mask from Philox (see nn__dropout_uniform): a product, so a
   dropped NaN or inf is NaN, as PyTorch's. Backward is the same op applied to dy with the
   same (seed, node, step). */
static void nn__dropout_forward(float *y, const float *x, int64_t n, float p, uint64_t seed, int node, uint64_t step) {
    float scale = 1.0f / (1.0f - p);
    int64_t i;
    for (i = 0; i < n; i++) y[i] = x[i] * (nn__dropout_uniform(seed, node, step, (uint32_t)i) >= p ? scale : 0.0f);
}

/* the same on 16-bit storage (bf16: bf 1, else f16): each element widened, x * scale in
   float32 as above, rounded once */
static void nn__dropout16_forward(uint16_t *y, const uint16_t *x, int64_t n, float p, uint64_t seed, int node, uint64_t step, int bf) {
    float scale = 1.0f / (1.0f - p);
    int64_t i;
    for (i = 0; i < n; i++) {
        float v = (bf ? nn__bf16_to_f32(x[i]) : nn__f16_to_f32(x[i])) * (nn__dropout_uniform(seed, node, step, (uint32_t)i) >= p ? scale : 0.0f);
        y[i] = bf ? nn__f32_to_bf16(v) : nn__f32_to_f16(v);
    }
}
