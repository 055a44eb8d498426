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

/* A zeroed desc for another context on e's backend (device, tuning), quiet. Every context a
   case opens on e's backend starts from it, so the gpu-tuning pass's contexts are all tuned
   for a GPU; a context on "cpu" (a CPU-backend setting under test) needs no tuning. */
void t_context_desc(const t_env *e, nn_context_desc *d);
/* Whether e's OpenCL context is tuned for a GPU: the gpu-tuning pass, $NN_CL_TUNING, or a
   device that is not a CPU (the GPU kernels and launch shapes) */
int t_gpu_tuned(const t_env *e);
/* steps nn_graph_step calls on compiled g: the first step's loss into *first, the loss after
   the last into *last; 0 on a failure (reported) */
int t_train_losses(nn_graph *g, nn_context *ctx, nn_tensor loss, int steps, float *first, float *last);

/* Begins a case; 0 when NN_TEST_FILTER excludes it: return without running any of it
   (t_skip and t_end do nothing for such a case). */
int t_begin(const t_env *e, const char *name);
/* t_begin for a case of the CPU backend only: on an OpenCL backend it is skipped (why), 0 */
int t_begin_cpu(const t_env *e, const char *name, const char *why);
/* t_begin for a case of the op checker (check_case, the optimizer checks): the cases that
   NN_TEST_SURVEY and NN_TEST_CASES choose from (tests/nn_test.c); every other case is
   filtered out in those modes. */
int t_begin_op(const t_env *e, const char *name);
/* In survey mode (NN_TEST_SURVEY), for a compiled graph of the case begun: writes what it
   would run (tests/coverage.c, t_survey_write) and returns 1, and the caller returns
   without running it; otherwise 0. */
int t_survey_graph(const nn_graph *g);
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

/* v rounded to nearest even at d's precision (NN_BF16: 8 significant bits, NN_F16: 11, its
   subnormals below 2^-14), from the formats' definitions in double; no overflow handled:
   the 16-bit storage tests' reference rounding. The name of d for messages. */
double t_rnd16(nn_dtype d, double v);
const char *t_name16(nn_dtype d);

/* Philox4x32-10 (Salmon et al., SC'11) written here, independently of the library's, as the
   reference of its random ops and dropout masks: c is encrypted in place with key (k0, k1). */
void t_philox(unsigned c[4], unsigned k0, unsigned k1);

/* max over i of |a - b| / (|b| + 0.01 * max|b| + tiny): relative error with a floor for
   elements that are small next to the rest. */
double t_relerr(const double *a, const double *b, long n);

/* ---- the op checker (tests/op_check.c) ---- */
#define MAXIN 20 /* inputs and named parameters of a case (a layer's weights) */
typedef struct spec spec;
/* torch.matmul in double precision, the op checker's reference of s's two inputs with s->ta
   and s->tb (tests/test_matmul.c; tests/test_mixed.c uses it too) */
void t_ref_matmul(const spec *s, double *const *in, double *out);
typedef nn_tensor (*build_fn)(nn_graph *g, const nn_tensor *in, const spec *s);
typedef void (*ref_fn)(const spec *s, double *const *in, double *out);
struct spec {
    const char *name;
    const char *kind;     /* the case's label is "KIND NAME": "op" (mk's), "layer", ... */
    int n_in;             /* inputs and parameters: in[0..n_in), in the order added */
    nn_shape shape[MAXIN];
    char param[MAXIN][64]; /* non-empty: not an input but the parameter of this name that
                             build created (found with nn_graph_find, its shape checked); its
                             values are written like an input's and its gradient checked */
    double in_lo[MAXIN], in_hi[MAXIN]; /* in_lo < in_hi: this one's range instead of lo, hi */
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
    const void *arg;      /* free for the case's builder and reference */
    /* Expected-value mode (NaN/Inf propagation, values PyTorch gives): expect set, inputs
       x[k] given (no draw), the loss's weights w (NULL: ones; the output's shape is the
       graph's, s->out unused), and the output and each gradient compared element by
       element with t_expect_compare against y_expect and dx_expect[k] (NULL: that one is
       not asked for); no finite differences. */
    int expect;
    const double *x[MAXIN];
    const double *y_expect;
    const double *dx_expect[MAXIN];
    const double *w;
    int eval;             /* the graph is an eval graph (nn_graph_desc.eval) */
    int dirs;             /* > 0: each gradient checked along this many dense random
                             directions over the whole input (directional derivatives), for
                             ops whose reference is costly (matmul, einsum) */
    double tol;           /* > 0: the forward, gradient and parity tolerance instead of 1e-4
                             (16-bit storage: each case states its own) */
    int w16;              /* 1: the loss's weights w drawn exact in bfloat16 and float16
                             (multiples of 1/128 in [-1, 1)), so that a 16-bit case's
                             gradients are rounded once, at the op's own store */
};
long numel(nn_shape s);
/* A case named `name` whose output has shape `out`; float inputs uniform in [-2, 2). */
spec mk(const char *name, build_fn b, ref_fn r, nn_shape out);
void in_f(spec *s, nn_shape sh);                 /* a float input, gradient checked */
void in_i(spec *s, nn_shape sh, int lo, int hi); /* an int32 input in [lo, hi) */
void in_fr(spec *s, nn_shape sh, double lo, double hi); /* a float input in [lo, hi), gradient checked */
/* the parameter `name` that build creates, values in [lo, hi), gradient checked */
void in_param(spec *s, const char *name, nn_shape sh, double lo, double hi);
/* The sweeps at the odd 2-D shapes [7, 33], [1, 129], [129, 3] (T_N_ODD of them): mk_odd
   makes the case "LABEL [r, c]" at the j-th (its name written to name, cap bytes) with one
   float input of that shape and an output of that shape, or [1] when scalar; t_odd_cases
   checks each row at each shape in turn, with s.p = the row's p. */
#define T_N_ODD 3
spec mk_odd(char *name, size_t cap, const char *label, int j, build_fn b, ref_fn r, int scalar);
typedef struct t_odd {
    const char *label;
    build_fn build;
    ref_fn ref;
    int scalar;
    float p;
} t_odd;
/* Runs the case on e's backend: forward vs the reference, gradients vs finite
   differences, and CPU parity on OpenCL devices; one ok/FAIL line. */
void check_case(const t_env *e, const spec *s);
void t_odd_cases(const t_env *e, const t_odd *rows, int n);
/* Expected-value mode inside a case already begun: runs s (s->expect set) on e's backend
   and compares; got_y, got_dx0 (optional): the output and input 0's gradient read back
   (malloc'ed, the caller frees), for checks of their own (dropout's mask). 1 when it ran. */
int check_values(const t_env *e, const spec *s, double **got_y, double **got_dx0);
/* got against want element by element: want NaN needs NaN, +-inf the same infinity,
   T_FINITE any finite value, and a finite want is met within 1e-4 relative + 1e-5
   absolute; the first four differences are reported, named "name: what[i]". */
#define T_FINITE 1e300
int t_expect_compare(const char *name, const char *what, const double *got, const double *want, long n);
/* "NaN", "+inf", "-inf", "finite" or the number */
const char *t_expect_desc(double w, char *buf, size_t n);

/* Bad-input rows (tests/bad_rows.h): a builder of a refused graph, the code it gives and
   the words its message holds. */
typedef nn_tensor (*bad_build)(nn_graph *g, nn_compile_desc *cd);

typedef struct bad_row {
    const char *family, *label;
    bad_build build;
    nn_result code;
    const char *needle; /* '|'-separated parts, each of which the message must contain */
    int at_compile;     /* 1: the build succeeds and nn_graph_compile refuses; R_CALL (2): the
                           builder makes the refused call itself (an op on a compiled graph, a
                           load, a step) and returns CALL(its nn_result), the words in
                           t_call_msg when the call has no context to hold them, and the
                           graph's status must stay NN_OK */
} bad_row;
/* R_CALL rows' message when their refused call leaves it nowhere else (a context that
   failed to open): the builder copies it here; empty otherwise. */
extern char t_call_msg[512];
/* The context the running row's graph is on (for R_CALL builders). */
extern nn_context *t_row_ctx;
/* Runs each row on e's backend, one case per run of rows of the same family, labelled
   "badinput: FAMILY (N rows)". */
void t_bad_rows(const t_env *e, const bad_row *rows, int n);

/* NaN and infinity rows (each family's test file, beside its other cases): cases of the
   expected-value mode labelled "nanprop: NAME", with the inputs and PyTorch's outputs and
   gradients written out (the rules: tests/op_check.c). */
typedef spec np_case;
#define FIN T_FINITE /* expected: any finite value */
#define np_run check_case
#define np_desc t_expect_desc
void np_init(np_case *c, const char *name, build_fn build, const void *arg);
/* a float input with values x and expected gradient dx (NULL: not asked for) */
void np_in(np_case *c, nn_shape s, const double *x, const double *dx);
/* an int32 input with values x */
void np_in_i(np_case *c, nn_shape s, const double *x);
/* the parameter `name` that the builder creates, its values x, its expected gradient dx */
void np_param(np_case *c, const char *name, nn_shape s, const double *x, const double *dx);
/* a deterministic fill in [lo, hi), float-representable */
void np_fill(double *v, long n, double lo, double hi, unsigned long long seed);

/* A suite's parts, each run in turn on e's backend: T_RUN(e, part, ...). */
typedef void (*t_part)(const t_env *e);
void t_run_parts(const t_env *e, const t_part *parts, int n);
#define T_RUN(e, ...)                                                    \
    do {                                                                 \
        static const t_part t_parts_[] = {__VA_ARGS__};                  \
        t_run_parts(e, t_parts_, (int)(sizeof t_parts_ / sizeof t_parts_[0])); \
    } while (0)

/* The suites, one line each, in the order they run on every backend (tests/nn_test.c):
   suite_NAME(const t_env *) in tests/test_NAME.c. registry stays last: it checks what the
   others covered on the backend. */
#define T_SUITES(X)                                                                                \
    X(matmul) X(activation) X(elementwise) X(conv) X(softmax) X(loss) X(shape) X(reduce)    \
    X(index) X(norm) X(pool) X(layers) X(optim) X(graph) X(errors) X(io) X(cache) X(safetensors)   \
    X(ckpt) X(files) X(numerics) X(api) X(limits) X(options) X(lifetime) X(threads) X(randexpr)    \
    X(random) X(launch)                                                                            \
    X(segment)                                                                                     \
    X(sample) X(rope)                                                                              \
    X(attention)                                                                                   \
    X(recurrent)                                                                                   \
    X(transformer)                                                                                 \
    X(memory)                                                                                      \
    X(usability)                                                                                   \
    X(dtype)                                                                                       \
    X(batch)                                                                                       \
    X(examples)                                                                                    \
    X(model)                                                                                       \
    X(gemm16)                                                                                      \
    X(conv_algo)                                                                                   \
    X(mixed)                                                                                       \
    X(fuse)                                                                                        \
    X(lossscale)                                                                                   \
    X(conv16)                                                                                      \
    X(pool16)                                                                                      \
    X(attn16)                                                                                      \
    X(ln16)                                                                                        \
    X(bf16param)                                                                                   \
    X(gpu_shapes)                                                                                  \
    X(registry)
/* The test binary's path (argv[0]), for the cases that run it again in a child process. */
extern const char *t_argv0;
/* tests/test_threads.c's child (NN_TEST_THREADS_CHILD=which, dispatched from main). */
int t_threads_child(const char *which);
/* the CPU attention's causal skipping inside a tile on (1) or off (0) (tests/coverage.c) */
void t_attn_causal_skip(int on);
/* the CPU attention backward in one pass as the threads fit (1), two passes (0), one pass (2) */
void t_attn_one_pass(int mode);
void t_attn_views(int on);
int t_attn_views_count(const nn_graph *g, int *views);
void t_norm_vec(int on);

/* nn_graph_compile with elementwise fusion off (NN_FUSE=0; tests/test_fuse.c), for cases
   that hold the op-by-op plan (a chain's memory by position) */
nn_result t_compile_unfused(nn_graph *g, const nn_compile_desc *desc);
#define X(name) void suite_##name(const t_env *e);
T_SUITES(X)
#undef X

/* Coverage (tests/coverage.c): the (op kind, function) pairs of the library's function
   tables (unary, binary, loss, row loss, optimizer) compared against a reference on the
   backend under test. t_cover_graph records the pairs of g's nodes from..to (ids) and of
   its optimizer's update; the op checker calls it on a graph whose results it compared. */
void t_cover_graph(const nn_graph *g, int from, int to);
void t_cover_reset(void);
int t_cover_count(int *total);   /* pairs covered; *total: pairs in the tables */
/* pair i of the tables (0 <= i < total): its op kind, function and the graphs that covered
   it; 0 past the end */
int t_cover_pair(int i, const char **kind, const char **fn, int *count);
/* One line for the survey file: "BACKEND<TAB>LABEL<TAB>COST<TAB> p:OP/FN ... k:FILE/KERNEL ...":
   the (op kind, function or -) of each node but the leaves, the kernels of its launches,
   and its cost (the work-items of its launches, plus 256 a launch). */
void t_survey_write(FILE *f, const char *backend, const char *label, const nn_graph *g);
/* Once, not per backend: how the OpenCL library is found, each case in a child process
   (argv0 run again with NN_TEST_CL_LOAD=<case>, which main hands to t_cl_load_child). */
void suite_cl_load(const t_env *e, const char *argv0, int with_devices);
/* The GEMM on 16-bit operands: fmt 0 (bf16) or 1 (f16)'s path forced by name, NULL for the
   automatic choice; returns the path now in use (tests/coverage.c, nn__gemm16_force). */
const char *t_gemm16_force(int fmt, const char *name);
/* The float32 GEMM's kernel ("generic", "avx2", "avx512f") forced, NULL for the automatic
   choice; returns the kernel now in use (tests/coverage.c, nn__sgemm_force_kernel). */
const char *t_sgemm_force(const char *name);
int t_sgemm_nc(void);
/* 1: nn_group_norm takes a 16-bit x as it is (a test hook: the API converts it to float32) */
void t_norm_half_groups(int on);
/* Whether compiled g launches the device kernel named (tests/coverage.c) */
int t_graph_launches(const nn_graph *g, const char *kernel);
/* how many of compiled g's launches run the device kernel named; 0 on the CPU backend */
int t_graph_launch_count(const nn_graph *g, const char *kernel);
/* The Winograd transforms of name (generic, avx2, avx512) for every Winograd convolution from
   now on, NULL: the CPU's own; 0 where this CPU has not that instruction set */
int t_wino_force(const char *name);
/* The elementwise chains fusion formed in compiled g (src/ops/fuse.c), and into *gemm those
   that start in a GEMM's epilogue; 0 with NN_FUSE=0 (tests/coverage.c) */
int t_fused_chains(const nn_graph *g, int *gemm);
int t_sgemm_pre(int threads, int pre, int ta, int tb, int M, int N, int K, const float *A, const float *B, float *C);
int t_sgemm_pb(int threads, int pb, int ta, int tb, int M, int N, int K, const float *A, const float *B, float *C);
int t_cl_load_child(const char *which);
/* src/opencl/backend.c's nn__cl_map_log (tests/coverage.c); 0 without the OpenCL backend */
int t_cl_map_log(const char **lines, unsigned count, const char *log, char *out, size_t n);
#endif
