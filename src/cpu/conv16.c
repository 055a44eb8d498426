/* conv2d and its gradients on bf16/f16 storage, CPU side (the node bodies are
   nn__conv2d_cpu in src/ops/conv/conv2d.c): the two operands are widened to float32 (exact)
   into the node's scratch after the float32 path's own, that path runs on them into a
   float32 output there, and the output is rounded once into the node's storage. Every sum
   is the float32 path's, in its order; an output is the float32 conv of the widened inputs,
   rounded. */

/* Floats at the end of a 16-bit conv node's scratch: a [na], b [nb], y [ny], each from a
   multiple of 16 floats (64 bytes, the vector loops' alignment). */
static int64_t nn__conv16_extra(int64_t na, int64_t nb, int64_t ny) {
    return 16 + (na + 15) / 16 * 16 + (nb + 15) / 16 * 16 + (ny + 15) / 16 * 16;
}

/* The regions of that scratch, after the float32 path's `base` floats (rounded up to 16). */
static void nn__conv16_cpu_layout(float *scratch, int64_t base, int64_t na, int64_t nb, float **a, float **b, float **y) {
    base = (base + 15) / 16 * 16;
    *a = scratch + base;
    *b = *a + (na + 15) / 16 * 16;
    *y = *b + (nb + 15) / 16 * 16;
}
