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
    const char *device;  /* nn_context_desc.device and .tuning that opened ctx */
    nn_tuning tuning;
} t_env;

/* A zeroed desc for another context on e's backend (device, tuning), quiet. */
void t_context_desc(const t_env *e, nn_context_desc *d);

/* Begins a case; 0 when NN_TEST_FILTER excludes it: return without running any of it
   (t_skip and t_end do nothing for such a case). */
int t_begin(const t_env *e, const char *name);
void t_end(void);                 /* prints ok/FAIL/skipped for the case begun last */
void t_skip(const char *why);     /* the current case is counted as skipped */
int t_fail(const char *file, int line, const char *fmt, ...);
#define T_CHECK(cond, ...) ((cond) ? 1 : t_fail(__FILE__, __LINE__, __VA_ARGS__))
#define T_OK(call, ctx) T_CHECK((call) == NN_OK, "%s failed: %s", #call, nn_context_last_error(ctx))

/* The queries' answers as values, for checks written as expressions (each query writes
   through its last argument; a failed query gives the zero it wrote). */
static inline int64_t t_numel(nn_graph *g, nn_tensor t) { int64_t n = 0; nn_tensor_numel(g, t, &n); return n; }
static inline nn_shape t_shape(nn_graph *g, nn_tensor t) { nn_shape s; nn_tensor_shape(g, t, &s); return s; }
static inline nn_stats t_stats(const nn_context *ctx) { nn_stats s; nn_context_stats(ctx, &s); return s; }
static inline float t_lr_at(const nn_lr_schedule *s, int64_t t) { float lr = 0; nn_lr_schedule_at(s, t, &lr); return lr; }
static inline uint64_t t_op_compiled(const nn_context *ctx, int op) { uint64_t n = 0; nn_context_op_compiled(ctx, op, &n); return n; }
static inline int t_devices(nn_device_info *out, int max) { int n = 0; nn_list_devices(out, max, &n); return n; }
static inline int64_t t_epoch(const nn_dataset *ds) { int64_t e = -1; nn_dataset_epoch(ds, &e); return e; }
static inline nn_backend_kind t_backend(const nn_context *ctx) { nn_device_info d; nn_context_device(ctx, &d); return d.backend; }

/* Deterministic test data. */
void t_seed(unsigned long long s);
double t_uniform(double lo, double hi);
int t_randint(int n);

/* Philox4x32-10 (Salmon et al., SC'11) written here, independently of the library's, as the
   reference of its random ops and dropout masks: c is encrypted in place with key (k0, k1). */
void t_philox(unsigned c[4], unsigned k0, unsigned k1);

/* max over i of |a - b| / (|b| + 0.01 * max|b| + tiny): relative error with a floor for
   elements that are small next to the rest. */
double t_relerr(const double *a, const double *b, long n);

/* ---- the op checker (tests/op_check.c) ---- */
#define MAXIN 4
typedef struct spec spec;
typedef nn_tensor (*build_fn)(nn_graph *g, const nn_tensor *in, const spec *s);
typedef void (*ref_fn)(const spec *s, double *const *in, double *out);
struct spec {
    const char *name;
    int n_in;
    nn_shape shape[MAXIN];
    int int_range[MAXIN]; /* > 0: an int32 input with values in [lo_int, int_range) */
    int lo_int;
    int grad[MAXIN];      /* check d(loss)/d(input) */
    double lo, hi;        /* float inputs uniform in [lo, hi) */
    nn_shape out;
    build_fn build;
    ref_fn ref;
    float p;              /* op parameter (slope, probability) */
    int ta, tb;
    int conv[7];          /* stride h/w, pad h/w, dilation h/w, groups */
    int ip[8];            /* free for an op's integer parameters */
    float fp[4];          /* and its float parameters */
    void (*fill)(const spec *s, double *const *in); /* NULL, or adjusts the drawn inputs */
};
long numel(nn_shape s);
/* A case named `name` whose output has shape `out`; float inputs uniform in [-2, 2). */
spec mk(const char *name, build_fn b, ref_fn r, nn_shape out);
void in_f(spec *s, nn_shape sh);                 /* a float input, gradient checked */
void in_i(spec *s, nn_shape sh, int lo, int hi); /* an int32 input in [lo, hi) */
/* Runs the case on e's backend: forward vs the reference, gradients vs finite
   differences, and CPU parity on OpenCL devices; one ok/FAIL line. */
void check_case(const t_env *e, const spec *s);

void suite_ops(const t_env *e);
void suite_matmul(const t_env *e);
void suite_activation(const t_env *e);
void suite_elementwise(const t_env *e);
void suite_conv3d(const t_env *e);
void suite_loss(const t_env *e);
void suite_shape(const t_env *e);
void suite_reduce(const t_env *e);
void suite_index(const t_env *e);
void suite_norm(const t_env *e);
void suite_pool(const t_env *e);
void suite_layers(const t_env *e);
void suite_optim(const t_env *e);
void suite_graph(const t_env *e);
void suite_errors(const t_env *e);
void suite_io(const t_env *e);
void suite_cache(const t_env *e);
void suite_safetensors(const t_env *e);
void suite_ckpt(const t_env *e);
void suite_files(const t_env *e);
void suite_numerics(const t_env *e);
void suite_api(const t_env *e);
void suite_limits(const t_env *e);
void suite_options(const t_env *e);
void suite_lifetime(const t_env *e);
void suite_randexpr(const t_env *e);
void suite_random(const t_env *e);
void suite_nanprop(const t_env *e);
void suite_badinput(const t_env *e);
void suite_registry(const t_env *e); /* last: every op kind ran on this backend */
/* Once, not per backend: how the OpenCL library is found, each case in a child process
   (argv0 run again with NN_TEST_CL_LOAD=<case>, which main hands to t_cl_load_child). */
void suite_cl_load(const t_env *e, const char *argv0, int with_devices);
int t_cl_load_child(const char *which);
#endif
