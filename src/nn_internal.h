/* Private definitions shared by every part of the implementation. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>
#include <math.h>
#include <errno.h>

#if defined(NN_MALLOC) || defined(NN_REALLOC) || defined(NN_FREE)
#  if !defined(NN_MALLOC) || !defined(NN_REALLOC) || !defined(NN_FREE)
#    error "nn.h: define all of NN_MALLOC, NN_REALLOC and NN_FREE, or none"
#  endif
#else
#  define NN_MALLOC(sz) malloc(sz)
#  define NN_REALLOC(p, sz) realloc(p, sz)
#  define NN_FREE(p) free(p)
#endif

#ifndef NN_ASSERT
#  include <assert.h>
#  define NN_ASSERT(c) assert(c)
#endif

#if !defined(NN_NO_OPENCL)
#  ifndef CL_TARGET_OPENCL_VERSION
#    define CL_TARGET_OPENCL_VERSION 120
#  endif
#  ifdef __APPLE__
#    include <OpenCL/opencl.h>
#  else
#    include <CL/cl.h>
#  endif
#endif

#define NN__MAX_IN 4
#define NN__MAX_AUX 3
#define NN__ERRLEN 4096

/* Ops, in one list that makes the enum and the names used in messages. */
#define NN__OPS(X)                                                                        \
    X(INPUT, "input") X(PARAM, "param") X(MATMUL, "matmul") X(ADD, "add") X(SUB, "sub")    \
    X(MUL, "mul") X(SCALE, "scale") X(UNARY, "activation") X(UNARY_GRAD, "activation_grad") \
    X(SOFTMAX, "softmax") X(LOG_SOFTMAX, "log_softmax") X(SOFTMAX_GRAD, "softmax_grad")    \
    X(LOG_SOFTMAX_GRAD, "log_softmax_grad") X(SUM_ALL, "sum") X(EXPAND_SCALAR, "expand")   \
    X(SUM_LEAD, "sum_leading") X(XENT_ROWS, "softmax_cross_entropy")                      \
    X(XENT_GRAD, "softmax_cross_entropy_grad") X(BCE_LOGITS, "bce_with_logits")           \
    X(BCE_LOGITS_GRAD, "bce_with_logits_grad") X(DROPOUT, "dropout")                      \
    X(GATHER_ROWS, "gather_rows") X(GATHER_ROWS_GRAD, "gather_rows_grad")                 \
    X(ARGMAX, "argmax") X(CORRECT_ROWS, "accuracy") X(ACCUMULATE, "accumulate")           \
    X(FILL, "fill") X(GRAD_SUMSQ, "grad_norm") X(CLIP_SCALE, "clip_scale")                 \
    X(OPT_SGD, "sgd") X(OPT_ADAM, "adam") X(CONV2D, "conv2d") X(CONV2D_DX, "conv2d_grad_input")   \
    X(CONV2D_DW, "conv2d_grad_weight") X(CHANNEL_SUM, "channel_sum") X(RESHAPE, "reshape")          \
    X(PERMUTE, "permute") X(CONCAT2, "concat") X(SLICE, "slice") X(SLICE_GRAD, "slice_grad")          \
    X(PAD2D, "pad2d") X(PAD2D_GRAD, "pad2d_grad") X(UPSAMPLE2D, "upsample2d")                        \
    X(UPSAMPLE2D_GRAD, "upsample2d_grad")          \
    X(NORM_STATS, "norm_stats") X(NORM_FORWARD, "norm") X(NORM_DX, "norm_grad_input")             \
    X(NORM_DGAMMA, "norm_grad_weight") X(NORM_DBETA, "norm_grad_bias")                            \
    X(BN_RUNNING, "batch_norm_running_update") X(BN_PACK, "batch_norm_running_stats")          \
    X(OPT_STEP, "optimizer") X(GRAD_ACC, "grad_accumulate")          \
    X(MAXPOOL2D, "max_pool2d") X(MAXPOOL2D_ARGMAX, "max_pool2d_argmax")                   \
    X(MAXPOOL2D_GRAD, "max_pool2d_grad") X(AVGPOOL2D, "avg_pool2d")                       \
    X(AVGPOOL2D_GRAD, "avg_pool2d_grad")          \
    X(LOSS_EW, "loss") X(LOSS_EW_GRAD, "loss_grad") X(CE_ROWS, "cross_entropy")               \
    X(CE_ROWS_GRAD, "cross_entropy_grad") X(CE_WEIGHTS, "cross_entropy_weights")              \
    X(DIV_SCALAR, "div_scalar") X(LOSS_ROWS, "row_loss") X(LOSS_ROWS_GRAD, "row_loss_grad")          \
    X(CHANNEL_BIAS, "channel_bias")                                                          \
    X(CONV3D, "conv3d") X(CONV3D_DX, "conv3d_grad_input") X(CONV3D_DW, "conv3d_grad_weight")

typedef enum nn__opcode {
#define NN__X(e, s) NN__OP_##e,
    NN__OPS(NN__X)
#undef NN__X
    NN__OP_COUNT
} nn__opcode;

/* Activation functions of the UNARY op; their kernels are stamped from one table. */
typedef enum nn__unary {
    NN__U_RELU = 0, NN__U_LEAKY_RELU, NN__U_SIGMOID, NN__U_TANH, NN__U_GELU, NN__U_SILU,
    NN__U_COUNT
} nn__unary;

/* Where a tensor's storage comes from. */
typedef enum nn__storage {
    NN__ST_ARENA = 0,  /* planned by liveness inside the graph's arena */
    NN__ST_OWN,        /* its own buffer for the life of the graph (inputs, outputs, state) */
    NN__ST_PARAM       /* a parameter store entry, possibly shared between graphs */
} nn__storage;

typedef struct nn__buf {
    size_t bytes;
    float *host;          /* CPU backend: the data; OpenCL: NULL */
    int host_owned;
#if !defined(NN_NO_OPENCL)
    cl_mem mem;
#endif
} nn__buf;

typedef struct nn__node {
    int op;
    nn_dtype dtype;
    nn_shape shape;
    int64_t numel;
    int in[NN__MAX_IN];
    int n_in;
    float f[4];          /* op attributes */
    int i[12];           /* (conv3d: stride d/h/w, pad d/h/w, dilation d/h/w, groups) */
    char *name;          /* inputs and params; NULL otherwise */
    int param;           /* PARAM: index in the parameter store */
    int needs_grad;      /* d(loss)/d(this) is wanted */
    int requires_grad;   /* user asked for it (inputs) */
    int is_output;       /* user wants to read it after a run */
    int grad;            /* node holding d(loss)/d(this), or -1 */
    int live;            /* in the schedule */
    int storage;
    size_t offset;       /* NN__ST_ARENA: byte offset in the arena */
    int first, last;     /* schedule positions of definition and last use */
    nn__buf buf;         /* the output */
    nn__buf aux[NN__MAX_AUX]; /* persistent state (optimizer moments), each of in[0]'s size */
    int n_aux;
    int algo;            /* implementation chosen at compile time (convolutions: NN__CONV_*) */
    int64_t scratch;     /* floats of working memory for the op's run alone (arena) */
    size_t scratch_offset;
    nn__buf scratch_buf;
} nn__node;

typedef struct nn__param {
    char *name;
    nn_shape shape;
    int64_t numel;
    float *init;         /* host copy until the first compile uploads it */
    int buffer;          /* state, not trained: no gradient, no optimizer (nn_buffer) */
    nn__buf buf;
    int allocated;
} nn__param;

typedef struct nn__params {
    int refs;
    int n, cap;
    nn__param *p;
    nn_context *ctx;
} nn__params;

#if !defined(NN_NO_OPENCL)
/* What one OpenCL enqueue needs; `update` sets the arguments that change every step. */
typedef struct nn__launch {
    cl_kernel kernel;
    cl_uint dims;
    size_t gws[3], lws[3];
    int use_lws;
    int node;
    void (*update)(nn_graph *g, struct nn__launch *l);
} nn__launch;

typedef struct nn__cl {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    char name[128], vendor[128], driver[128], version[128];
    int is_cpu, is_gpu;               /* is_cpu: kernels tuned as for a CPU (its type, or desc.tuning) */
    size_t max_wg;
    cl_ulong local_mem, max_alloc;
    cl_uint units;                    /* compute units */
    size_t align;                     /* sub-buffer offset alignment in bytes */
    cl_program programs[64];          /* one per kernels/NAME.cl, built on first use */
    char gemm_options[512];
} nn__cl;
#endif

struct nn_context {
    int opencl;                  /* backend: 0 cpu, 1 OpenCL */
    char backend_name[160];
    char err[NN__ERRLEN];
    nn_log_fn log;
    void *log_user;
    int log_level;
    char *cache_dir;             /* NULL: cache off */
    char *kernel_dir;
    nn_stats stats;
    struct nn__pool *pool;
#if !defined(NN_NO_OPENCL)
    nn__cl cl;
#endif
};

/* What each optimizer update advances (nn_optim.c), restored if a step fails. */
typedef struct nn__opt_clock {
    uint64_t t;                  /* updates done, the running one included */
    double mu_prod;              /* NAdam's product of momentum coefficients */
    float c[4];                  /* per-update constants of the rule (bias corrections) */
} nn__opt_clock;

struct nn_graph {
    nn_context *ctx;
    nn__node *nodes;
    int n_nodes, cap_nodes;
    nn__params *params;
    nn_result status;            /* first build error */
    int compiled;
    int eval;
    uint64_t seed;
    uint64_t step;               /* completed training steps */
    nn_optimizer opt;
    int loss;
    int n_forward;               /* nodes created by the user (ids below this) */
    int *sched;                  /* node ids in run order */
    int n_sched, n_sched_forward;
    nn__buf arena;
    size_t arena_bytes;
    int clip_node;               /* CLIP_SCALE node or -1 */
    float lr;                    /* the rate of the update running (the schedule's) */
    /* optimizer extras (nn_optim.c) */
    nn_lr_schedule schedule;
    struct nn__pgroup *groups;   /* nn_graph_param_group, in the order added */
    int n_groups;
    int accum_steps;             /* update on every accum_steps-th step */
    int first_update_node;       /* nodes from here on run on update steps only */
    int n_sched_update;          /* their first schedule position */
    nn__opt_clock clock;
    struct nn_dataset *datasets; /* nn_dataset_create, owned by the graph (nn_ckpt.c) */
#if !defined(NN_NO_OPENCL)
    nn__launch *launches;
    int n_launches, cap_launches;
    int n_launches_forward;
    int n_launches_update;       /* launches before the update part */
    cl_mem one;                  /* a float 1.0 for optimizers without clipping */
    cl_mem *subs;                /* sub-buffers of the arena, to release */
    int n_subs;
#endif
};

static void nn__datasets_free(nn_graph *g); /* nn_ckpt.c */

static void *nn__calloc(size_t n, size_t size) {
    void *p;
    if (size && n > (size_t)-1 / size) return NULL;
    p = NN_MALLOC(n * size > 0 ? n * size : 1);
    if (p) memset(p, 0, n * size);
    return p;
}

static char *nn__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = (char *)NN_MALLOC(n);
    if (d) memcpy(d, s, n);
    return d;
}

static void nn__log(nn_context *ctx, nn_log_level level, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    if (ctx && (int)level > ctx->log_level) return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ctx && ctx->log) ctx->log(ctx->log_user, level, msg);
    else fprintf(stderr, "nn: %s\n", msg);
}

/* Records the message for nn_last_error() and returns the code. */
static nn_result nn__fail(nn_context *ctx, nn_result code, const char *fmt, ...) {
    va_list ap;
    if (!ctx) return code;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    nn__log(ctx, NN_LOG_DEBUG, "error: %s", ctx->err);
    return code;
}

static void nn__shape_str(const nn_shape *s, char *buf, size_t n) {
    size_t used = 0;
    int i;
    used += (size_t)snprintf(buf, n, "[");
    for (i = 0; i < s->ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)s->dim[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

static int64_t nn__numel(const nn_shape *s) {
    int64_t n = 1;
    int i;
    for (i = 0; i < s->ndim; i++) n *= s->dim[i];
    return n;
}

#if !defined(NN_NO_OPENCL)
/* 64-bit FNV-1a, for cache keys. */
static uint64_t nn__fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}
#endif

/* Philox4x32-10 (Salmon et al., SC'11), the counter-based generator that kernels/random.cl
   implements too: the same (counter, key) gives the same bits on every backend. */
static void nn__philox(uint32_t ctr[4], const uint32_t key_in[2]) {
    uint32_t k0 = key_in[0], k1 = key_in[1];
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0];
        uint64_t p1 = (uint64_t)0xCD9E8D57u * ctr[2];
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t c0 = hi1 ^ ctr[1] ^ k0, c2 = hi0 ^ ctr[3] ^ k1;
        ctr[0] = c0;
        ctr[1] = lo1;
        ctr[2] = c2;
        ctr[3] = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

/* The uniform in [0, 1) that dropout compares against p: 24 bits, exact in float. */
static float nn__dropout_uniform(uint64_t seed, int node, uint64_t step, uint32_t i) {
    uint32_t ctr[4], key[2];
    ctr[0] = i;
    ctr[1] = (uint32_t)node;
    ctr[2] = (uint32_t)step;
    ctr[3] = (uint32_t)(step >> 32);
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    nn__philox(ctr, key);
    return (float)(ctr[0] >> 8) * (1.0f / 16777216.0f);
}
