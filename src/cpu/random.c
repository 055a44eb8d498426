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
