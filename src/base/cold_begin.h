/* Code that runs once per graph, launch plan or file, not once per element, compiled by
   gcc at -Og when the program is built at -O2 or -O3: the OpenCL backend's setup and
   launch records, the ops' builders, gradient rules, plans and CPU-body wrappers, layers,
   files (and the platform block of src/base/files.c). That is over half of nn.h's machine
   code; at -Og it compiles in under half the time, which takes about 45% off a -O2
   compile of a file with NN_IMPLEMENTATION (HACKING.md, "Compile time"). The loops every
   step runs (src/cpu/, the thread pool) and the engine (nn_graph_compile's planning, whose
   time grows with the graph) stay at the program's level, so steps and compiles take what
   they took. The same bits either way: no optimisation level changes a float result here
   (fp_begin.h turns contraction off; no -ffast-math), as `make check-determinism` checks.
   Define NN_OPTIMIZE_ALL to compile all of it at the program's level. gcc only: clang has
   no level pragma. src/base/cold_end.h returns to the level before. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) && \
    !defined(NN_OPTIMIZE_ALL)
#pragma GCC push_options
#pragma GCC optimize("Og")
#endif
