/* The test harness: every suite runs once per backend (the CPU backend, then each OpenCL
   device), and each case prints one line. The binary closes with "N passed, N failed". */
#ifndef NN_TEST_H
#define NN_TEST_H
#include "../nn.h"
#include <stdio.h>

typedef struct t_env {
    nn_context *ctx;     /* the backend under test */
    nn_context *cpu;     /* the CPU backend, for parity checks (NULL when ctx is the CPU) */
    const char *backend; /* its name for the report */
    int opencl;
} t_env;

void t_begin(const t_env *e, const char *name);
void t_end(void);                 /* prints ok/FAIL/skipped for the case begun last */
void t_skip(const char *why);     /* the current case is counted as skipped */
int t_fail(const char *file, int line, const char *fmt, ...);
#define T_CHECK(cond, ...) ((cond) ? 1 : t_fail(__FILE__, __LINE__, __VA_ARGS__))
#define T_OK(call, ctx) T_CHECK((call) == NN_OK, "%s failed: %s", #call, nn_last_error(ctx))

/* Deterministic test data. */
void t_seed(unsigned long long s);
double t_uniform(double lo, double hi);
int t_randint(int n);

/* max over i of |a - b| / (|b| + 0.01 * max|b| + tiny): relative error with a floor for
   elements that are small next to the rest. */
double t_relerr(const double *a, const double *b, long n);

void suite_ops(const t_env *e);
void suite_optim(const t_env *e);
void suite_graph(const t_env *e);
void suite_errors(const t_env *e);
void suite_io(const t_env *e);
#endif
