/* Private definitions shared by every part of the implementation. */
#ifndef NN__INTERNAL_H
#define NN__INTERNAL_H
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L
#endif
#include "../api/api.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>
#include <math.h>
#include <errno.h>

/* Static helpers that a given build of the amalgamation may not call. */
#ifndef NN__MAYBE_UNUSED
#if defined(__GNUC__)
#define NN__MAYBE_UNUSED __attribute__((unused))
#else
#define NN__MAYBE_UNUSED
#endif
#endif

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

#define NN__MAX_IN 16 /* inputs of one node: a concat of up to 16 tensors is one node */
#define NN__MAX_NUMEL ((int64_t)0x7fffffff) /* elements of one tensor: 32-bit indices */
#define NN__MAX_AUX 3
#define NN__ERRLEN 4096

/* Where a tensor's storage comes from. */
typedef enum nn__storage {
    NN__ST_ARENA = 0,  /* planned by liveness inside the graph's arena */
    NN__ST_OWN,        /* its own buffer for the life of the graph (inputs, outputs, state) */
    NN__ST_PARAM,      /* a parameter store entry, possibly shared between graphs */
    NN__ST_VIEW        /* another node's storage (view_of), reinterpreted: an op flagged
                          NN__OPF_VIEW whose input is not a parameter */
} nn__storage;

/* A buffer of a backend: host memory on the CPU backend; a device object (an OpenCL
   cl_mem) on a device backend. The engine only passes it around; views (offset > 0)
   alias part of another buffer. */
typedef struct nn__buf {
    size_t bytes;
    float *host;          /* CPU backend: the data */
    void *handle;         /* device backends: their buffer object */
    size_t offset;        /* a view: bytes from the start of the buffer it aliases */
    int owned;            /* host memory this buffer must free */
} nn__buf;

/* Typed attributes: one struct per op family, each read and written only by its family's
   file (src/ops/FAMILY.c) and the CPU loops it calls. A node holds them in a union; the
   ops of a family and their gradient ops share the family's struct, so a gradient op
   copies its forward node's `a` whole. Each family's struct is in src/ops/FAMILY.h. */
#include "../ops/elementwise.h"
#include "../ops/matmul.h"
#include "../ops/reduce.h"
#include "../ops/loss.h"
#include "../ops/shape.h"
#include "../ops/gather.h"
#include "../ops/conv.h"
#include "../ops/pool.h"
#include "../ops/norm.h"
#include "../ops/optim.h"
#include "../ops/random.h"
#include "../ops/segment.h"
#include "../ops/rope.h"
#include "../ops/attention.h"
#include "../ops/recurrent.h"

typedef union nn__attr {
    nn__ew_attr ew;
    nn__matmul_attr matmul;
    nn__reduce_attr reduce;
    nn__loss_attr loss;
    nn__shape_attr shape;
    nn__gather_attr gather;
    nn__conv_attr conv;
    nn__pool_attr pool;
    nn__norm_attr norm;
    nn__optim_attr optim;
    nn__random_attr random;
    nn__segment_attr seg;
    nn__rope_attr rope;
    nn__attn_attr attn;
    nn__rec_attr rec;
} nn__attr;

typedef struct nn__node {
    int op;
    nn_dtype dtype;
    nn_shape shape;
    int64_t numel;
    int in[NN__MAX_IN];
    int n_in;
    nn__attr a;          /* the op's attributes, typed by its family */
    char *name;          /* inputs and params; NULL otherwise */
    int param;           /* PARAM: index in the parameter store */
    int needs_grad;      /* d(loss)/d(this) is wanted */
    int requires_grad;   /* user asked for it (inputs) */
    int is_output;       /* user wants to read it after a run */
    int grad;            /* node holding d(loss)/d(this), or -1 */
    int live;            /* in the schedule */
    int storage;
    size_t offset;       /* NN__ST_ARENA: byte offset in the arena */
    int view_of;         /* NN__ST_VIEW: the node whose storage this is (never itself a view) */
    int first, last;     /* schedule positions of definition and last use */
    nn__buf buf;         /* the output */
    nn__buf aux[NN__MAX_AUX]; /* persistent state (optimizer moments), each of in[0]'s size */
    int n_aux;
    int algo;            /* implementation chosen at compile time (convolutions: NN__CONV_*) */
    int64_t scratch;     /* floats of working memory for the op's run alone (arena) */
    size_t scratch_offset;
    nn__buf scratch_buf;
    const char *check;   /* non-NULL: the op counts inputs PyTorch would raise on (labels out of
                            range) into g->checks[check_slot]; what they are, for the report */
    int check_slot;
    int ckpt;            /* the recompute segment it was built in (nn_checkpoint_begin), 0 none */
    int recompute_of;    /* > 0: a copy of that node the backward reads, computed again (engine/checkpoint.c) */
    int written;         /* INPUT: 0 never written, 1 written since the last step, 2 since read by a step */
    int per_step;        /* INPUT: a step refuses it unless written since the last step (a dataset's indices) */
    int fused;           /* elementwise fusion (src/ops/fuse.c): k > 0 the last node of chain k - 1, which
                            runs the whole chain; -1 a node another node runs (its chain's last, or
                            a device's fold): at schedule position done_at; 0 none */
    int done_at;         /* fused -1: the schedule position whose launches write its value */
} nn__node;

/* The schedule position from which node n's storage holds its value: its first use, or where
   a fold writes it earlier (src/ops/fuse.c's nn__fuse_xent_tail: the logits' gradient made
   with the loss in the forward) */
static NN__MAYBE_UNUSED int nn__live_from(const nn__node *n) {
    return n->fused < 0 && n->done_at >= 0 && n->done_at < n->first ? n->done_at : n->first;
}

typedef struct nn__param {
    char *name;
    nn_shape shape;
    int64_t numel;
    float *init;         /* host copy until the first compile uploads it */
    int buffer;          /* state, not trained: no gradient, no optimizer (nn_buffer) */
    nn_dtype dtype;      /* buf's storage type (nn_graph_desc.param_dtype); init is float32 */
    nn__buf buf;
    int allocated;
} nn__param;

typedef struct nn__params {
    int refs;
    int n, cap;
    nn__param *p;
    int *index, index_cap;       /* open-addressing hash of names: entry + 1, 0 empty */
    nn_context *ctx;
} nn__params;

/* One argument of a kernel launch, as kernels/kargs.h records it: a buffer, a scalar, a
   vector of 8 ints or local memory. */
typedef struct nn__karg {
    char kind;                  /* 'm' buffer, 'i' int, 'u' uint, 'f' float, '8' int8, 'L' local bytes */
    union { nn__buf buf; int32_t i; uint32_t u; float f; int32_t v8[8]; size_t local; } v;
} nn__karg;

#define NN__MAX_KARGS 40 /* adam6's 37; gemm_epi: the product's 15 and a chain's */
#define NN__MAX_KUPD 6

/* A kernel launch that an op's launch function records at compile time (kernels/FILE.cl,
   kernel, geometry, arguments: nn__launch_kernel, then the kernel's nn__kargs_SIG of
   kernels/kargs.h) and a device backend turns into its own objects. `update` rewrites the
   step arguments (upd[] holds their positions) before each run, via nn__kstep_SIG. */
typedef struct nn__launch {
    const char *file;
    char kernel[64];
    int store;                  /* the program's storage type (kernels/storage.h): NN_F32, or NN_BF16 /
                                   NN_F16 to build kernels/FILE.cl with -DNN_STORE_BF16 / -DNN_STORE_F16 */
    int node;
    int dims;
    size_t gws[3], lws[3];
    int use_lws;
    nn__karg args[NN__MAX_KARGS];
    int n_args;
    int upd[NN__MAX_KUPD], n_upd;
    void (*update)(nn_graph *g, struct nn__launch *l);
    const char *bad_arg;        /* the argument a plan left unset (kernels/kargs.h), for the message */
    const char *source;         /* generated kernel source appended to kernels/FILE.cl's (a fused chain,
                                   src/ops/fuse.c), owned by the graph; NULL: the file alone */
    void *bk;                   /* the backend's kernel object */
    int merged;                 /* OpenCL on a device tuned as a CPU: > 0, the first of that many launches run as
                                   one launch of stages (bk its kernel: opencl/backend.c, nn__cl_stages); -1, one
                                   of them after the first (no kernel of its own); 0, on its own */
    int n_stage_args;           /* merged > 0: its kernel's arguments before lo_ and hi_ (the products it runs) */
    void *bev;                  /* NN_CL_PROFILE: the event of its last enqueue, not yet read */
    uint64_t prof_ns, prof_gap_ns; /* NN_CL_PROFILE: its time on the device, and the time from the end
                                   of the launch before it (in the same run) to its start, summed */
    long prof_n;                /* NN_CL_PROFILE: the runs summed */
} nn__launch;

/* What device plans may ask about the device (filled by a device backend's open). */
typedef struct nn__device {
    int cpu_tuned;              /* kernels, tiles and launch geometry as for a CPU (its type, or
                                   desc.tuning); else every GPU choice, the OpenCL backend's
                                   1-D work-groups of 64 included: no other flag, so the GPU
                                   tuning of a CPU device (PoCL) runs all of them */
    int attn_flash;             /* GPUs: nn_attention's flash kernels where they take the head dim
                                   (kernels/attention.cl attn_flash_*), else the tiled ones:
                                   $NN_CL_ATTN flash or tiled, default NN__ATTN_FLASH_DEFAULT */
    int gemm_tile[6];           /* GPUs: $NN_CL_GEMM's tile (WPT_M, WPT_N, VW, WG_M, WG_N, TS_K)
                                   where the kernel builds it and the device runs it, read once
                                   when the device opens (src/opencl/gemm_plan.c,
                                   nn__gemm_env_read); all 0: the planner's own */
    size_t max_wg;              /* largest work-group */
    uint64_t local_mem;         /* bytes of local memory */
    uint64_t max_alloc;         /* largest buffer in bytes */
    unsigned units;             /* compute units */
    unsigned vec_float;         /* preferred float vector width (OpenCL: CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT,
                                   16 on PoCL for AVX-512); 0: unknown */
    size_t align;               /* view offset alignment in bytes */
    size_t guard;               /* bytes after each buffer's end that the planner leaves free
                                   and no kernel may write (NN_CL_GUARDS); 0: none */
    nn_device_info info;        /* what nn_context_device reports (the backend's open fills it) */
} nn__device;

/* A backend: what the engine asks of one. The engine knows no backend by name; backends
   are tried in the order of nn__backends[] (engine/context.c), the CPU last. */
typedef struct nn__backend {
    const char *name;
    nn_backend_kind kind;
    int host_memory;             /* buffers are host memory (nn__buf.host) */
    /* NN_ERR_UNAVAILABLE: no such device here, try the next backend (ctx->err says why) */
    nn_result (*open)(nn_context *ctx, const char *device, const nn_context_desc *desc);
    void (*close)(nn_context *ctx);
    int (*list_devices)(nn_device_info *out, int max);
    nn_result (*alloc)(nn_context *ctx, nn__buf *b, size_t bytes, int zero, const char *what);
    nn_result (*view)(nn_context *ctx, const nn__buf *base, size_t offset, size_t bytes, nn__buf *out, const char *what);
    void (*release)(nn_context *ctx, nn__buf *b);
    nn_result (*write)(nn_context *ctx, nn__buf *b, const void *src, size_t bytes);
    nn_result (*read)(nn_context *ctx, const nn__buf *b, void *dst, size_t bytes);
    nn_result (*fill)(nn_context *ctx, nn__buf *b, float value, size_t bytes);
    nn_result (*prepare)(nn_graph *g);        /* after memory is planned: the schedule's op plans */
    nn_result (*run)(nn_graph *g, int n_sched); /* the first n_sched nodes of the schedule */
    nn_result (*finish)(nn_context *ctx);
    void (*release_graph)(nn_graph *g);
} nn__backend;

struct nn_context {
    const nn__backend *backend;
    void *bk;                    /* the backend's state */
    nn__device dev;
    char backend_name[160];
    char err[NN__ERRLEN];
    nn_log_fn log;
    void *log_user;
    int log_level;
    char *cache_dir;             /* NULL: cache off */
    char *kernel_dir;
    nn_stats stats;
    uint64_t *op_compiled;       /* [NN__OP_COUNT]: nodes compiled per op kind (nn_context_op_compiled) */
    nn_graph *graphs;            /* graphs created on it, not yet destroyed */
    int dead_refs;               /* a destroyed context's stand-in: graphs still holding it */
    struct nn__lock *lock;       /* the thread running a call on it (base/threads.c) */
    struct nn__threadpool *threads;
};

/* What each optimizer update advances (cpu/optim.c), restored if a step fails. */
typedef struct nn__opt_clock {
    uint64_t t;                  /* updates done, the running one included */
    double mu_prod;              /* NAdam's product of momentum coefficients */
    float c[4];                  /* per-update constants of the rule (bias corrections) */
} nn__opt_clock;

struct nn_graph {
    nn_context *ctx;
    uint32_t serial;     /* stamped on its tensor handles (nn_tensor.graph); never 0 */
    nn_graph *ctx_prev, *ctx_next; /* the context's list of its graphs */
    nn__node *nodes;
    int n_nodes, cap_nodes;
    nn__params *params;
    int *param_node;             /* [params->n]: this graph's node of each entry + 1, 0 none */
    int param_node_cap;
    nn_result status;            /* first build error */
    int compiled;
    int eval;
    uint64_t seed;
    int precision;               /* nn_graph_desc.precision: the storage type matmuls run in (nn_precision) */
    nn_dtype param_dtype;        /* nn_graph_desc.param_dtype: new trainable parameters' storage type */
    uint64_t step;               /* completed training steps */
    uint64_t runs;               /* runs started, forward or step (nn_sample_logits's counter) */
    int progress;                /* launches (ops) of the running step enqueued so far (backends count) */
    int broken;                  /* a step failed part way: parameters may be partly updated */
    nn_optimizer opt;
    int loss;
    int n_forward;               /* nodes created by the user (ids below this) */
    int *sched;                  /* node ids in run order */
    int n_sched, n_sched_forward;
    nn__buf arena;
    size_t arena_bytes;
    int clip_node;               /* CLIP_SCALE node or -1 */
    float lr;                    /* the rate of the update running (the schedule's) */
    /* optimizer extras (cpu/optim.c) */
    nn_lr_schedule schedule;
    struct nn__pgroup *groups;   /* nn_graph_param_group, in the order added */
    int n_groups;
    int accum_steps;             /* update on every accum_steps-th step */
    int loss_scaling;            /* the compile desc turns loss scaling on (set by the optimizer's configure hook) */
    int skip_node;               /* SKIP_GATE node (skip_nonfinite) or 0 */
    int first_update_node;       /* nodes from here on run on update steps only */
    int n_sched_update;          /* their first schedule position */
    nn__opt_clock clock;
    struct nn_dataset *datasets; /* nn_dataset_create, owned by the graph (files/ckpt.c) */
    void (*datasets_free)(nn_graph *g); /* their destructor, set with the first (files/ckpt.c) */
    nn__launch *launches;        /* device plans, in schedule order */
    int n_launches, cap_launches;
    long prof_missing;          /* NN_CL_PROFILE: launches whose event had no times */
    int *sched_launch;           /* [n_sched + 1]: the first launch of each schedule position */
    nn__buf one;                 /* a float 1.0, for kernels' absent operands */
    nn__buf checks;              /* int32 [n_checks]: bad inputs counted by checked ops (node.check) */
    nn__buf claim;               /* int32 [4], 0 between launches (a device's): the CPU-tuned GEMM's items taken, groups
                                    done and (a launch of stages) items done (kernels/gemm.cl's GEMM_ITEMS_BEGIN, gemm_stages) */
    int n_checks;
    int checks_pending;          /* a run since the counters were last read */
    /* data-parallel training (src/dist/dist.c, NN_MPI builds; unset otherwise) */
    int run_from;                /* backend->run starts at this schedule position (0; the update part's
                                    first when a data-parallel step runs it after the reduction) */
    int dist_rank, dist_size;    /* this rank and the ranks' count (both 0 unless data-parallel) */
    void *dist;                  /* the reduction's communicator and buffers (NULL: not data-parallel) */
    void (*dist_free)(nn_graph *g); /* its destructor, set by the compile that made it */
    /* the memory plan as nn_graph_memory reports it (src/engine/memory.c) */
    int mem_planned;             /* nn__plan_memory placed every item */
    int mem_backward_end;        /* nodes from n_forward to here are autograd's (gradients) */
    size_t arena_chunk;          /* > 0: the arena is split in buffers of this many bytes, no
                                    item crossing a boundary (the device's largest allocation) */
    int ckpt_open, n_ckpt;       /* the open recompute segment (0 none) and the segments begun */
    nn__buf *arena_parts;        /* then the arena's buffers, n_arena_parts of them (g->arena unused) */
    int n_arena_parts;
    int zero;                    /* ZeRO stage 1: no update ops; dist.c updates this rank's slice */
    /* misuse refused rather than silent (issue 22) */
    int share_names;             /* nn_graph_share_names: a parameter name made again is the same tensor */
    /* any batch size, train and eval on one graph (src/engine/model.c, issue 22) */
    struct nn__model *model;     /* nn_graph_build's: the function and the variants built from it */
    void (*model_free)(nn_graph *g); /* its destructor (model.c), set by nn_graph_build */
    nn_graph *active;            /* the variant the graph's calls run on now (NULL: the graph itself) */
    nn_graph *model_of;          /* a variant: the graph whose model built it (its parameters, optimizer state) */
    int64_t batch;               /* the batch the model function built this graph for (0: not a model's) */
    int eval_ids;                /* an eval variant: dropout and batch norm keep the training build's node ids */
    nn_compile_desc compile_desc; /* the compile's options, for the variants' compiles */
    /* elementwise fusion (src/ops/fuse.c, issue 19) */
    struct nn__fusion *fusion;   /* the chains found at compile (NULL: none, or NN_FUSE=0) */
    void (*fusion_free)(nn_graph *g); /* its destructor, set by the compile that made it */
    /* composed layers' notes, for nn_model_json (src/engine/layer_notes.c, issue 22) */
    struct nn__notes *notes;
    void (*notes_free)(nn_graph *g); /* their destructor, set with the first note */
};


/* A desc field's value (api/api.h, NN_ZERO): its default for 0, exactly 0 for NN_ZERO. */
static float nn__deff(float v, float dflt) { return v == 0.0f ? dflt : v == (float)NN_ZERO ? 0.0f : v; }
static int nn__defi(int v, int dflt) { return v == 0 ? dflt : v == NN_ZERO ? 0 : v; }
static uint64_t nn__defu64(uint64_t v, uint64_t dflt) { return v == 0 ? dflt : v == (uint64_t)(int64_t)NN_ZERO ? 0 : v; }

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

/* A growing text, 0-terminated (the JSON writers, src/files/json.c; the safetensors header and
   its metadata, src/files/safetensors.c, ckpt.c, model.c; the generated source of a launch of
   stages, src/ops/matmul.c); oom set after an allocation failed (later puts do nothing).
   nn__jt_printf writes at most 511 bytes a call: longer pieces go through nn__jt_puts. */

typedef struct nn__jtext {
    char *s;
    size_t n, cap;
    int oom;
} nn__jtext;

static NN__MAYBE_UNUSED void nn__jt_put(nn__jtext *t, const char *s, size_t n) {
    if (t->oom) return;
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        char *ns;
        while (cap < t->n + n + 1) cap *= 2;
        ns = (char *)NN_REALLOC(t->s, cap);
        if (!ns) {
            t->oom = 1;
            return;
        }
        t->s = ns;
        t->cap = cap;
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = 0;
}

static NN__MAYBE_UNUSED void nn__jt_puts(nn__jtext *t, const char *s) { nn__jt_put(t, s, strlen(s)); }

static NN__MAYBE_UNUSED void nn__jt_printf(nn__jtext *t, const char *fmt, ...) {
    char b[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n > 0) nn__jt_put(t, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
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

/* A call refused because another thread runs one on the same context: its message is
   the refused thread's own (nn_context_last_error on that thread gives it), so the refusal writes
   nothing the running call may be writing. Thread-local where the compiler has it. */
#if defined(__GNUC__) || defined(__clang__)
#  define NN__TLS __thread
#elif defined(_MSC_VER)
#  define NN__TLS __declspec(thread)
#elif defined(__cplusplus) && __cplusplus >= 201103L
#  define NN__TLS thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#  define NN__TLS _Thread_local
#endif
#ifdef NN__TLS
static NN__TLS const nn_context *nn__refused_ctx; /* this thread's last refusal was on it */
static NN__TLS char nn__refused_msg[256] NN__MAYBE_UNUSED;
#endif

/* Records the message for nn_context_last_error() and returns the code. */
static nn_result nn__fail(nn_context *ctx, nn_result code, const char *fmt, ...) {
    va_list ap;
    if (!ctx) return code;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
#ifdef NN__TLS
    if (nn__refused_ctx == ctx) nn__refused_ctx = NULL; /* a later failure of this thread's */
#endif
    nn__log(ctx, NN_LOG_DEBUG, "error: %s", ctx->err);
    return code;
}

/* A reason kept in ctx->err for the caller to report (a backend that does not take the
   device asked for): nn__fail without its debug line, so that the reason is logged once. */
static NN__MAYBE_UNUSED nn_result nn__reason(nn_context *ctx, nn_result code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    return code;
}

/* NN_ERR_STATE (named by fn) when g's context was destroyed before g: for the calls that
   reach no device yet must not act then (a save would write the initial values, the
   trained ones having gone with the device). */
static NN__MAYBE_UNUSED nn_result nn__graph_orphaned(nn_graph *g, const char *fn) {
    if (!g->ctx->dead_refs) return NN_OK;
    return nn__fail(g->ctx, NN_ERR_STATE, "%s: the graph's context was destroyed (nn_context_destroy) before the graph", fn);
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

/* Storage types: bytes an element (NN_BF16, NN_F16 2; NN_F32, NN_I32 4), whether a type is
   16-bit storage (kernels/storage.h), and a buffer's bytes for numel elements: rounded up to
   whole 4-byte words, so every buffer's size is a multiple of the backends' fill pattern. */
static NN__MAYBE_UNUSED size_t nn__dtype_size(nn_dtype d) { return d == NN_BF16 || d == NN_F16 ? 2 : 4; }
static NN__MAYBE_UNUSED int nn__dtype_half(nn_dtype d) { return d == NN_BF16 || d == NN_F16; }
static NN__MAYBE_UNUSED size_t nn__dtype_bytes(nn_dtype d, int64_t numel) {
    return ((size_t)numel * nn__dtype_size(d) + 3) / 4 * 4;
}


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
#endif /* NN__INTERNAL_H */
