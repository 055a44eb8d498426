/* Back to the level before src/base/cold_begin.h (the program's, with contraction off). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) && \
    !defined(NN_OPTIMIZE_ALL)
#pragma GCC pop_options
#endif
