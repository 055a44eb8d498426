/* The program's own floating-point contraction again after nn.h's implementation (see
   src/base/fp_begin.h). */
#if defined(__clang__)
#pragma float_control(pop)
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif
