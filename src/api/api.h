#ifndef NN_H_INCLUDED
#define NN_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* FILE, for nn_graph_summary */
#ifdef NN_MPI /* data-parallel training (the end of this file) */
#include <mpi.h>
#endif

#ifndef NN_API
#  if defined(NN_STATIC) && defined(__GNUC__)
#    define NN_API static __attribute__((unused)) /* a program calls only some of them */
#  elif defined(NN_STATIC)
#    define NN_API static
#  else
#    define NN_API extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define NN_VERSION_MAJOR 0
#define NN_VERSION_MINOR 2
#define NN_MAX_DIMS 6

/* ==== The rules every section follows ===================================================
   Names: nn_ and NN_ are public, nn__ private. A function acting on an object carries its
   prefix (nn_context_*, nn_graph_*, nn_tensor_*, nn_dataset_*, nn_array_*,
   nn_lr_schedule_*); an op is named after torch / torch.nn.functional (nn_softmax,
   nn_cross_entropy_loss), its arguments in their order, `dim` (never "axis") for a
   dimension.
   One error channel:
   - builders (every op, nn_input, nn_param, the layers) return an nn_tensor; a failure is a
     tensor with id < 0, every op given one fails too, and nn_graph_status() /
     nn_graph_compile() report the first error (nn_context_last_error() has the words), so
     a network is written without checking each call;
   - everything else returns an nn_result (NN_OK or an error) and a query writes its
     answer through its last argument (nn_tensor_shape(g, t, &shape));
   - nn_context_last_error(), nn_result_string(), nn_op_name() and nn_op_count() return
     their value: they cannot fail.
   Types: sizes and element counts (a dim's size, out_channels, numel, a batch) are
   int64_t; dims (an index into a shape, negative from the end), kernel sizes, strides,
   paddings, groups, factors and counts of arguments are int; byte counts are size_t.
   Options come in descs (nn_*_desc, nn_optimizer, nn_lr_schedule), zeroed and given the
   fields that differ; NULL for a desc pointer is the zeroed desc. */

/* ---- results and types -------------------------------------------------------------- */

typedef enum nn_result {
    NN_OK = 0,
    NN_ERR_INVALID_ARGUMENT = -1, /* a NULL, an out-of-range value, a tensor of another graph */
    NN_ERR_SHAPE = -2,            /* shapes or dtypes that do not fit the op */
    NN_ERR_OUT_OF_MEMORY = -3,    /* host or device allocation failed */
    NN_ERR_DEVICE = -4,           /* the device or its driver failed a call (a queue, a
                                     transfer, a launch, a lost device) */
    NN_ERR_BUILD = -5,            /* a kernel did not compile; the message holds the build log */
    NN_ERR_IO = -6,               /* a file could not be read or written, or is malformed */
    NN_ERR_STATE = -7,            /* the call does not fit the object's state (e.g. not compiled) */
    NN_ERR_UNAVAILABLE = -8       /* the backend or device asked for does not exist here */
} nn_result;

/* A tensor's storage type: float32, int32, and the 16-bit floats bfloat16 (torch.bfloat16)
   and float16 (torch.float16), which are storage only: the ops that take them compute in
   float32 (section 3, "16-bit storage"). */
typedef enum nn_dtype { NN_F32 = 0, NN_I32 = 1, NN_BF16 = 2, NN_F16 = 3 } nn_dtype;

typedef struct nn_context nn_context;
typedef struct nn_graph nn_graph;

/* A symbolic tensor: a handle into one graph. id > 0 is a tensor; id 0 is NN_NONE, "no
   tensor"; id < 0 means "the op failed". Every op given a failed tensor returns a failed
   tensor, and nn_graph_compile() reports the first error, so a network can be written
   without checking each call. `graph` is the tag of the graph that made the handle (never
   0, and no two of a process's last 2^32 - 1 graphs share one): a graph takes only its
   own, so a tensor of another graph, or a handle made by hand ({id, 0}, a made-up tag), is
   an error naming the op (NN_ERR_INVALID_ARGUMENT), not a silent use of that graph's
   node of the same id. Take handles from the builders only. */
typedef struct nn_tensor { int32_t id; uint32_t graph; } nn_tensor;

/* "No tensor": what an optional operand takes to be absent (a bias, gamma and beta, class
   weights), and what a zeroed desc's tensor fields already are (nn_compile_desc.loss,
   nn_loss_desc.weight, ...): id 0 is never a tensor. nn_graph_find and nn_graph_grad return
   it when there is no such tensor. A failed tensor (id < 0) is not NN_NONE: given as an
   optional operand it fails the op too. In a static initializer write {0}. */
#ifdef __cplusplus
#  define NN_NONE (nn_tensor{0, 0})
#else
#  define NN_NONE ((nn_tensor){0, 0})
#endif

/* A shape: ndim dims (0 to NN_MAX_DIMS), each >= 1. ndim 0 is a scalar [] (PyTorch's 0-dim
   tensor, one element; a zeroed nn_shape): nn_input, nn_reshape, nn_unsqueeze/nn_squeeze,
   the random ops, the elementwise ops (broadcast as PyTorch's: [] with [3, 4] gives
   [3, 4], [] with [] gives []) and the reductions along dims (dims {}, {0} or {-1}) take and
   make it; any other op refuses one, naming itself ("nn_reshape it to [1]"). Parameters
   have 1 or more dims. Ops that reduce a tensor of 1 or more dims to a single value (nn_sum,
   nn_mean, the losses, a reduction over every dim without keepdim, a 1-D dot product) give
   [1], not [] as PyTorch does: the one difference in shapes, and the same 4 bytes. */
typedef struct nn_shape { int ndim; int64_t dim[NN_MAX_DIMS]; } nn_shape;

/* Shapes of 1 to 5 dims, by value: nn_shape2(3, 4) is [3, 4] (ndim 2, the other dims 0).
   The dims are not checked here: the builder that takes the shape refuses a dim < 1,
   naming itself and the shape. A scalar [] is a zeroed nn_shape; one of NN_MAX_DIMS (6)
   dims is set by hand (s.ndim, s.dim[k]). */
NN_API nn_shape nn_shape1(int64_t d0);
NN_API nn_shape nn_shape2(int64_t d0, int64_t d1);
NN_API nn_shape nn_shape3(int64_t d0, int64_t d1, int64_t d2);
NN_API nn_shape nn_shape4(int64_t d0, int64_t d1, int64_t d2, int64_t d3);
NN_API nn_shape nn_shape5(int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t d4);

/* ---- descs: zero is the default, NN_ZERO is zero ------------------------------------------
   Every options struct (nn_*_desc, nn_optimizer, nn_lr_schedule) is meant to be zeroed
   ({0} or memset) and then given the fields that differ. A numeric field left 0 takes its
   default, PyTorch's where PyTorch has one: Adam's beta1 0.9, AdamW's weight_decay 1e-2,
   batch norm's momentum 0.1, every norm's eps 1e-5, cross-entropy's ignore_index -100.
   For an exact zero write NN_ZERO: every int and float field reads it as 0
   (weight_decay = NN_ZERO: no decay; beta1 = NN_ZERO; ignore_index = NN_ZERO: ignore
   class 0; nn_norm_desc.eps = NN_ZERO). A field that cannot be 0 (a stride, a thread
   count) rejects it as an invalid argument; where 0 is the default anyway NN_ZERO is the
   same 0. NN_ZERO is a tag, INT32_MIN, exact as a float too and no field's real value.
   Flags (0 or 1) and enums are taken as they are: an enum's 0 is its default. Function
   arguments are values, not options (nn_leaky_relu's slope 0 is 0, nn_dropout's p 0 is
   no dropout). */
#define NN_ZERO (-2147483647 - 1)

/* ==== 1. Contexts and devices ==========================================================
   A context is one backend on one device: every graph, buffer and message belongs to
   one. Created with nn_context_create(desc, &ctx), freed with nn_context_destroy(). A
   device is named the same way everywhere (nn_context_desc.device, $NN_DEVICE): "cpu",
   "opencl", a device index as nn_list_devices numbers it, or a name substring.
   Threads: contexts are independent (threads may each create and use one at once). A
   context and its graphs are one thread's at a time, and a lock per context holds calls to
   that: one that returns nn_result and runs on the backend, the parameters or files
   (compile, step, forward, finish, tensor read/write/fill, state and safetensors
   save/load, dataset batches, skipped steps) while another thread's call runs on the
   context is refused with NN_ERR_STATE, changing nothing (nn_context_last_error on the
   refused thread: "in use by another thread"); nn_graph_create, nn_graph_destroy,
   nn_param, nn_buffer and the counters wait for that call instead. The caller's duty:
   build and destroy a graph on one thread at a time (builders touch only their graph),
   and destroy the context after the other threads' calls returned. nn.h's header
   (THREADS AND LIFETIMES) has the whole contract. */

/* Message levels, most severe first; a context logs its level and those above it.
   NN_LOG_DEFAULT (0, a zeroed nn_context_desc) means $NN_LOG (error|warn|info|debug), else
   NN_LOG_INFO; a log callback is never given it. */
typedef enum nn_log_level { NN_LOG_DEFAULT = 0, NN_LOG_ERROR, NN_LOG_WARN, NN_LOG_INFO, NN_LOG_DEBUG } nn_log_level;
typedef void (*nn_log_fn)(void *user, nn_log_level level, const char *message);

/* The backends: the built-in CPU loops, or OpenCL kernels on a device. */
typedef enum nn_backend_kind { NN_BACKEND_CPU = 0, NN_BACKEND_OPENCL = 1 } nn_backend_kind;

/* Which kernel variants and launch shapes a device backend uses: NN_TUNING_AUTO (0:
   $NN_CL_TUNING = cpu|gpu, else by the device's type), NN_TUNING_CPU or NN_TUNING_GPU
   (e.g. to run the GPU paths on a CPU OpenCL device such as PoCL). */
typedef enum nn_tuning { NN_TUNING_AUTO = 0, NN_TUNING_CPU = 1, NN_TUNING_GPU = 2 } nn_tuning;

/* What a device backend (one that compiles kernels) takes; the CPU backend ignores it.
   Every field's zero means "default". */
typedef struct nn_backend_options {
    nn_tuning tuning;
    const char *cache_dir;  /* compiled-program cache; NULL: $NN_CACHE_DIR, else
                               $XDG_CACHE_HOME/nn or ~/.cache/nn; "off" disables it */
    const char *kernel_dir; /* load kernels/NAME.cl from here; NULL: $NN_KERNEL_DIR, else
                               the sources embedded in nn.h */
} nn_backend_options;

/* Every field's zero means "default". */
typedef struct nn_context_desc {
    const char *device;     /* "cpu", "opencl", a device index ("0") or a name substring;
                               NULL: $NN_DEVICE, else the first GPU, else cpu */
    int threads;            /* CPU-backend threads; 0: $NN_THREADS, else all cores; < 0 and
                               NN_ZERO: an invalid argument */
    nn_log_fn log;          /* NULL: messages of log_level and more severe go to stderr */
    void *log_user;
    nn_log_level log_level; /* the most detailed level logged; NN_LOG_DEFAULT: $NN_LOG, else
                               NN_LOG_INFO (one line: the backend chosen) */
    nn_backend_options backend;
} nn_context_desc;

/* Creates a context on the chosen backend (desc NULL: every default). Like every *_create,
   the object comes back through the last argument. On failure *out is NULL and the reason
   has gone to the log (an explicitly requested device that cannot be opened is an error:
   NN_ERR_UNAVAILABLE when it is not here, no OpenCL library that loads or no such device;
   no OpenCL platform at all, when none was requested, means the CPU backend). */
NN_API nn_result nn_context_create(const nn_context_desc *desc, nn_context **out);
/* Frees the context; a graph still alive fails with NN_ERR_STATE from then on. NULL does
   nothing; destroying a context (or a graph) a second time is undefined behaviour, as
   free() twice is (THREADS AND LIFETIMES, at the top of this file). */
NN_API void nn_context_destroy(nn_context *ctx);
/* The words of the context's last error ("" when there is none); on a thread whose call
   was refused because another thread's call ran, the words of that refusal. */
NN_API const char *nn_context_last_error(const nn_context *ctx);
/* The name of a result code ("NN_ERR_SHAPE"). */
NN_API const char *nn_result_string(nn_result r);

/* A device, as nn_list_devices lists it and nn_context_device reports a context's. */
typedef struct nn_device_info {
    nn_backend_kind backend; /* the backend that runs it */
    int index;               /* what NN_DEVICE=<index> takes; -1 for the CPU backend */
    int is_gpu;
    int is_cpu;
    char name[128];          /* the device's name; "cpu" for the CPU backend */
    char platform[128];      /* the OpenCL platform ("" for the CPU backend) */
} nn_device_info;
/* The devices of every device backend (the CPU backend always exists and is not listed):
   up to max into out, and into *count how many exist (0 without OpenCL). out may be NULL
   when max is 0. */
NN_API nn_result nn_list_devices(nn_device_info *out, int max, int *count);
/* The device the context runs on, with its backend. */
NN_API nn_result nn_context_device(const nn_context *ctx, nn_device_info *out);

/* What has crossed between host and device, counted since creation or the last reset.
   On the CPU backend the same counters count nn_tensor_write/read copies and op runs. */
typedef struct nn_stats {
    uint64_t h2d_bytes, d2h_bytes;
    uint64_t h2d_transfers, d2h_transfers;
    uint64_t kernel_launches;
} nn_stats;
/* The counters into *out (a read of the context's own; no device call). */
NN_API nn_result nn_context_stats(const nn_context *ctx, nn_stats *out);
/* Sets every counter of nn_context_stats to 0. */
NN_API void nn_context_reset_stats(nn_context *ctx);

/* The op registry, for tools and tests: how many op kinds exist, each one's name (as in
   error messages; NULL when op is out of range), and into *count how many nodes of kind
   op this context has compiled into graphs (forward, backward and optimizer ops alike). */
NN_API int nn_op_count(void);
NN_API const char *nn_op_name(int op);
NN_API nn_result nn_context_op_compiled(const nn_context *ctx, int op, uint64_t *count);

/* ==== 2. Graphs ============================================================================
   A graph is built once from leaves (section 3) and ops (sections 4 to 13), compiled once
   (nn_graph_compile: shapes checked, autograd and the optimizer's ops added, memory
   planned, kernels built), then run: nn_graph_step (forward, backward, update) or
   nn_graph_forward. Its errors while building are kept (nn_graph_status) and reported by
   nn_graph_compile. Training options (nn_compile_desc, the optimizer, the schedule) are in
   section 14, files in section 15. */

/* Mixed precision, torch.autocast's policy: with NN_PRECISION_BF16 (or _FP16) every nn_matmul
   (and so nn_linear_layer, nn_einsum and the layers built on them) converts its float32
   operands to bfloat16 (float16) with nn_to_dtype, multiplies them there with float32
   accumulation, and keeps the product in 16 bits, as does nn_linear_layer's bias add (the
   bias converted: F.linear under autocast). Ops that take 16-bit storage take it as is (the
   activations, add, sub, mul, div, minimum, maximum, pow of two tensors of that type, the
   next matmul, conv2d, the max, average, 1-D, global and adaptive pools, nn_attention,
   nn_layer_norm (which converts a float32 x to the policy's type, so its output is 16-bit),
   nn_dropout, and reshape, permute/transpose, slice/split and concat, whose output and
   gradient keep the input's type); every other op (the other norms, softmax, losses, reductions, the other shape ops,
   the optimizer) gets its 16-bit inputs converted to float32 first, once per tensor, and
   runs in float32 as before; float32 with 16-bit operands is float32 (PyTorch's promotion).
   nn_conv2d (so nn_conv1d and the conv layers) converts a float32 x and w likewise and
   convolves in 16 bits with float32 sums, its output kept in 16 bits, its bias converted
   and added there (F.conv2d under autocast). Parameters stay float32 (master weights), or
   16-bit with nn_graph_desc.param_dtype (below). The gradient of a float32 tensor the
   policy converted (a weight, a bias, an input that requires a gradient) is the float32 sums
   of the 16-bit products as they are, not rounded to 16 bits first as torch.autocast's
   are: float32's precision in the update, and no 16-bit gradient of a weight's size
   (nn_memory_report's activation_gradients_max: half of float32's for an MLP). NN_PRECISION_FP32 (0, the default) builds the graph as before, bit for bit.
   A training graph in FP16 scales its loss by default (nn_compile_desc.loss_scale, section
   14), as torch.cuda.amp.GradScaler: without it gradients under float16's range (6e-8) become 0. */
typedef enum nn_precision { NN_PRECISION_FP32 = 0, NN_PRECISION_BF16 = 1, NN_PRECISION_FP16 = 2 } nn_precision;

typedef struct nn_graph_desc {
    nn_graph *share_params; /* use this graph's parameters (same names, same shapes) */
    int eval;               /* evaluation mode: dropout is the identity */
    uint64_t seed;          /* parameter initialisation and dropout; 0: 1; NN_ZERO: 0 */
    nn_precision precision; /* the matmuls' (and what follows them) storage type (above); 0: NN_PRECISION_FP32 */
    /* The trainable parameters' storage type (nn_param; buffers stay float32): 0 (NN_F32)
       float32; NN_BF16 (or NN_F16) stores them in 16 bits with no float32 master copy, as
       PyTorch's model.to(torch.bfloat16) followed by optimizer.step(): initialised in
       float32 and rounded once; their gradients are of their type; the update reads the
       16-bit parameter and the gradient converted to float32, keeps its state in float32
       (nn_optimizer), computes in float32 and writes the parameter back rounded to nearest
       even, or stochastically (nn_optimizer.stochastic_rounding, bfloat16 only). Needs the
       precision policy of the same type (NN_PRECISION_BF16 with NN_BF16); every optimizer
       but LAMB and LARS; not data-parallel. A graph made with share_params of such a graph
       (param_dtype and precision 0) takes its param_dtype and its precision. Half the parameters' bytes (nn_graph_memory);
       nn_tensor_read / write and the files see float32 values, nn_graph_save_safetensors
       and nn_graph_save_state write them as BF16 (F16). As in PyTorch after model.to(),
       what starts from a 16-bit parameter stays 16-bit: an embedding's rows (nn_embedding
       of a 16-bit table gives that type), so nn_gpt's token and position embeddings, its
       residual stream (16-bit adds), the norms and the head; the loss converts the logits
       to float32 once. */
    nn_dtype param_dtype;
} nn_graph_desc;

/* Creates an empty graph on ctx (desc NULL: every default) into *out. */
NN_API nn_result nn_graph_create(nn_context *ctx, const nn_graph_desc *desc, nn_graph **out);
/* Frees the graph, its buffers and its datasets. */
NN_API void nn_graph_destroy(nn_graph *g);
/* The first error while building, or NN_OK. */
NN_API nn_result nn_graph_status(const nn_graph *g);

/* Options of nn_graph_compile: the loss, the optimizer, the schedule (section 14). */
typedef struct nn_compile_desc nn_compile_desc;
/* Shape-checks, adds the backward and optimizer ops, plans memory, builds kernels. An
   optimizer set with no loss is refused (NN_ERR_INVALID_ARGUMENT): a forward-only graph is
   a zeroed optimizer. Once compiled, a graph takes no more ops or leaves: a builder called
   on it fails at once (NN_ERR_STATE naming the graph's state, nn_context_last_error) and
   the compiled graph is left as it was. Chains of elementwise ops next to each other in the
   schedule (a bias add and its activation, a residual add) run as one pass, one kernel
   launch, with the same bits as op by op; NN_FUSE=0 in the environment turns that off. */
NN_API nn_result nn_graph_compile(nn_graph *g, const nn_compile_desc *desc);
/* A run refuses a dataset whose batch was never taken, and nn_graph_step one whose batch
   (its NAME.idx input) was not taken since the last step: NN_ERR_STATE naming the input;
   call nn_dataset_next_batch before each step. Other inputs keep their contents across
   steps until written again (nn_input). */
NN_API nn_result nn_graph_step(nn_graph *g);    /* forward, backward, update */
NN_API nn_result nn_graph_forward(nn_graph *g); /* forward only */
/* Waits for queued work; then, as nn_tensor_read does, reports inputs that PyTorch would
   have raised on in the runs since the last report (labels out of range: see
   nn_cross_entropy_loss) as NN_ERR_INVALID_ARGUMENT. Reading those counters is 4 bytes per
   checking op, once per read or finish after a run (nn_context_stats counts it). */
NN_API nn_result nn_graph_finish(nn_graph *g);

/* The tensor named name in g: an input (nn_input's name, a dataset's NAME.x, NAME.y,
   NAME.idx), a parameter or a buffer (a layer's are "NAME.weight", "NAME.bias", ...), as
   this graph made it; a parameter of a share_params graph that this graph never asked for
   is not found. NN_NONE when there is none; a failed tensor (id < 0) when g or name is
   NULL. Before and after compile; by name only (a walk over the graph's nodes). */
NN_API nn_tensor nn_graph_find(nn_graph *g, const char *name);
/* After compile: t's gradient (a parameter's with nn_compile_desc.keep_grads, an input's
   marked by nn_graph_requires_grad), NN_NONE when it has none (no loss depends on t). A
   parameter's gradient compiled without keep_grads is a tensor, but reading it is
   NN_ERR_STATE naming the parameter and keep_grads. The gradient read is the one of the
   loss, before clipping (nn_optimizer.clip_norm / clip_value scale or clamp
   only what the update uses), and with gradient accumulation the running mean. */
NN_API nn_tensor nn_graph_grad(nn_graph *g, nn_tensor t);
/* Before compile: ask for d(loss)/d(t) of an input (float32 only). */
NN_API nn_result nn_graph_requires_grad(nn_graph *g, nn_tensor t);
/* Before compile: keep t readable after a run (an op's output is otherwise reused). */
NN_API nn_result nn_graph_output(nn_graph *g, nn_tensor t);

/* ---- 2a. Inspecting a graph: parameters, the memory plan, a summary -----------------------
   (src/engine/memory.c) */

/* A parameter or buffer of a graph (nn_graph_param_at). name is the graph's own copy
   (valid while the graph lives); tensor is its handle in this graph. */
typedef struct nn_param_info {
    const char *name;
    nn_tensor tensor;
    nn_shape shape;
    int64_t numel;
    int buffer;          /* 1: a buffer (nn_buffer, state not trained); 0: a parameter */
} nn_param_info;
/* Into *count: the parameters and buffers g uses (model.named_parameters() and
   named_buffers() together), each counted once however many ops read it. */
NN_API nn_result nn_graph_param_count(nn_graph *g, int *count);
/* Into *out: the index-th of them (0 <= index < count), in the order g created (or, with
   share_params, first used) them: insertion order, as PyTorch's named_parameters(). */
NN_API nn_result nn_graph_param_at(nn_graph *g, int index, nn_param_info *out);

/* What g's memory plan needs, in bytes (nn_graph_memory). Every tensor is 4 bytes an
   element, but 2 in 16-bit storage (NN_BF16, NN_F16). Storage held for the graph's life counts whole: parameters, buffers, inputs,
   optimizer state, and the tensors kept after a run (outputs, kept gradients, gradient
   accumulators, constants). The tensors the planner places in the arena by liveness
   (activations, the backward's gradients, ops' workspace) count as live at the plan's
   peak: the schedule position where the arena's live bytes are largest, so the kinds sum
   to `peak`. Without reuse (summing every tensor) the figures would be larger. */
typedef struct nn_memory_report {
    int64_t parameters;      /* trainable parameters the graph uses (shared ones included),
                                and under a precision policy their 16-bit copies (live at the
                                peak) that the matmuls read */
    int64_t gradients;       /* what the backward pass makes: parameters' gradients (kept,
                                accumulated or in the arena) and the activations' gradients
                                live at the peak */
    int64_t optimizer_state; /* the optimizer's per-parameter state this process holds
                                (SGD momentum: 1x the trained parameters; Adam/AdamW: 2x,
                                3x with amsgrad); 0 for a graph with no optimizer. With
                                data-parallel training it is this rank's share */
    int64_t activations;     /* the forward's outputs: kept outputs, and arena tensors live
                                at the peak (those the backward still needs, included) */
    int64_t workspace;       /* ops' scratch (convolution im2col, LAMB's update) at the peak */
    int64_t buffers;         /* nn_buffer state (batch norm's running statistics) */
    int64_t inputs;          /* nn_input tensors (a dataset held on the device counts here) */
    int64_t other;           /* constants, the update's sums and coefficients, counters */
    int64_t peak;            /* the sum of the eight above: bytes in use at the peak */
    int64_t persistent;      /* bytes held for the graph's life (outside the arena) */
    int64_t arena;           /* the arena's planned size: >= its share of the peak (alignment,
                                fragmentation, NN_CL_GUARDS' guard bytes) */
    int arena_buffers;       /* device buffers the arena is split into (1 unless it exceeds
                                the device's largest allocation; 0 when empty) */
    int64_t allocated;       /* persistent + arena: what the graph allocates, what
                                nn_compile_desc.memory_limit bounds */
    const char *peak_op;     /* the op running at the peak (a static name), NULL if none */
    int peak_position;       /* its position in the schedule */
    int64_t activations_max; /* the activations at their own peak (the most live at any one
                                position of the schedule: in training, the forward's end, where
                                what the backward reads is held), persistent ones included */
    int64_t gradients_max;   /* the gradients likewise, at their own peak */
    int64_t parameter_gradients;      /* of the gradients, the parameters' own (each parameter's
                                         gradient or accumulator, whole: float32, as the master
                                         weights', under any precision policy) */
    int64_t activation_gradients_max; /* the other gradients (of activations, inputs and a
                                         policy's 16-bit parameter copies: their storage type's
                                         bytes) at their own peak, persistent ones included */
} nn_memory_report;
/* Into *out: the plan's bytes by kind (nn_memory_report). Needs the plan that
   nn_graph_compile makes (NN_ERR_STATE before it); after a compile refused by
   memory_limit the plan is still there to read. Costs a pass over the nodes, no device
   call. */
NN_API nn_result nn_graph_memory(nn_graph *g, nn_memory_report *out);

/* A printable report of g (as torchinfo's summary): one row per op of the forward (every
   node before compile) with its output shape, name and the parameters it reads; the
   parameters and buffers with shapes and counts in insertion order, and the totals; once
   compiled, nn_graph_memory's bytes by kind. nn_graph_summary writes it to f;
   nn_graph_summary_string writes at most cap bytes, NUL included, into buf (as snprintf)
   and the full length into *len (NULL: not wanted): call with cap 0 to size buf. */
NN_API nn_result nn_graph_summary(nn_graph *g, FILE *f);
NN_API nn_result nn_graph_summary_string(nn_graph *g, char *buf, size_t cap, size_t *len);

/* Activation recompute (torch.utils.checkpoint, gradient checkpointing): the ops built
   between nn_checkpoint_begin(g) and nn_checkpoint_end(g) form a segment whose outputs are
   not kept for the backward pass: they die with the forward, and the backward computes
   what it reads of them again from the segment's inputs, just before it needs them. Memory
   then holds each segment's inputs instead of all its activations (nn_graph_memory shows
   it) for about one more forward pass of the segments. Results are the same bits as
   without (random ops draw the same numbers); outputs (nn_graph_output) and accumulators
   in a segment are kept. A segment per transformer block or residual block is usual.
   Segments do not nest; both calls are refused (NN_ERR_STATE) on a compiled graph, and
   compile refuses a segment begun and not ended. Without a loss they change nothing. */
NN_API nn_result nn_checkpoint_begin(nn_graph *g);
NN_API nn_result nn_checkpoint_end(nn_graph *g);

/* ---- 2b. Any batch size, and train/eval mode on one graph (src/engine/model.c) --------------
   A graph built by a model function runs at any batch size and in either mode without the
   program building it again (PyTorch's module called on any batch, model.train() and
   model.eval()): nn_graph_build(g, fn, batch, user) calls fn(g, batch, user), which builds
   the network for `batch` rows (its inputs' dim 0 and all that follows from it: views,
   batch norm's statistics, mean-reduced losses) and keeps the handles it wants in *user;
   then the graph is compiled as any other. nn_graph_set_batch(g, n) and nn_graph_train(g, 0
   or 1) select the batch and the mode that g's calls (nn_tensor_write/read/fill/shape/
   numel, nn_graph_step/forward/finish, nn_graph_grad, nn_dataset_next_batch) run at: the
   first time a pair is selected, fn builds the network again at that batch on a graph of
   its own, sharing g's parameters, and that graph is compiled (its memory plan, arena and
   kernels its own; bench/batch_bench.c gives the cost of that first selection and of a
   cached one) and kept, so selecting it again costs nothing. The results are those of a
   graph built at that batch (bitwise: it is one), with g's parameters, optimizer state,
   step counters and dataset positions. Eval mode: dropout (and alpha dropout, gaussian
   noise, attention dropout) is the identity, batch norm normalises with its running
   statistics and does not update them, and nothing trains: nn_graph_step is refused
   (NN_ERR_STATE), nn_graph_forward runs, the loss reads. Inputs whose shape does not
   depend on the batch (a dataset's samples) are shared by every batch size; the others
   are the selected batch's own: write them after selecting it. fn must build the same ops
   for every batch (a different node count, or an input or parameter in another place, is
   refused naming the node) and only build (no runs, no reads). nn_graph_memory and
   nn_graph_summary describe the graph as built (each variant's arena is more memory); a
   checked op's count of bad inputs is reported by the read or finish that follows a run
   of the same batch and mode. Refused (NN_ERR_STATE): a
   graph not made by nn_graph_build, or not compiled; training at another batch a graph
   that accumulates gradients, skips non-finite updates or trains data-parallel. */
typedef nn_result (*nn_model_fn)(nn_graph *g, int64_t batch, void *user);
/* On a new, empty graph: builds it with fn at batch rows (fn's result, or the graph's
   first build error). Compile it next (nn_graph_compile), with the loss fn made. */
NN_API nn_result nn_graph_build(nn_graph *g, nn_model_fn fn, int64_t batch, void *user);
/* After compile: g's calls run at batch rows (>= 1, larger than the built batch too). */
NN_API nn_result nn_graph_set_batch(nn_graph *g, int64_t batch);
/* After compile: training mode (1, as built) or eval mode (0). A graph not made by
   nn_graph_build takes only the mode it is in. */
NN_API nn_result nn_graph_train(nn_graph *g, int training);
/* Into *batch and *training (either may be NULL): the batch and mode g's calls run at. */
NN_API nn_result nn_graph_batch(nn_graph *g, int64_t *batch, int *training);

/* ==== 3. Tensors: leaves and access ========================================================
   Leaves are the tensors a graph starts from: inputs (written by the program), parameters
   (trained), buffers (state, not trained) and constants. A tensor's data is reached
   through nn_tensor_write / read / fill, by the byte count of its whole shape (4 bytes an
   element for float32 and int32; a 16-bit tensor is written and read as float32 values,
   also 4 bytes an element, below). */

typedef enum nn_init_kind {
    NN_INIT_ZEROS = 0,
    NN_INIT_CONSTANT,        /* a */
    NN_INIT_UNIFORM,         /* U(a, b) */
    NN_INIT_NORMAL,          /* N(mean a, std b) */
    NN_INIT_KAIMING_UNIFORM, /* U(-g*sqrt(3/fan_in), +...), gain g = a (0: sqrt(2), ReLU) */
    NN_INIT_KAIMING_NORMAL,  /* N(0, g/sqrt(fan_in)), gain g = a (0: sqrt(2)) */
    NN_INIT_XAVIER_UNIFORM,  /* U(+-a*sqrt(6/(fan_in+fan_out))), a = gain (0: 1) */
    NN_INIT_XAVIER_NORMAL    /* N(0, a*sqrt(2/(fan_in+fan_out))), a = gain (0: 1) */
} nn_init_kind;
/* fan_in / fan_out of a shape [out, in, k...] are in*k... and out*k... (PyTorch's rule).
   The gains follow the desc rule (0: the default named, NN_ZERO: 0); the a and b of
   CONSTANT, UNIFORM and NORMAL are values, not options: 0 is 0 there. Refused, as
   torch.nn.init refuses them: UNIFORM with a > b, NORMAL with std b < 0, and NaN or an
   infinity in UNIFORM's or NORMAL's a and b or in a gain (CONSTANT takes any value). */
typedef struct nn_init { nn_init_kind kind; float a, b; } nn_init;

/* Leaves. An input keeps its contents across steps until written again, so a whole
   dataset can live on the device as an input written once. Until its first write an
   input's contents are unspecified (zeros on the CPU backend). */
/* An input [shape] of dtype (NN_F32, NN_I32, NN_BF16 or NN_F16) named name (NULL: "input"; names of inputs
   need not be unique, but nn_graph_find finds the first). */
NN_API nn_tensor nn_input(nn_graph *g, const char *name, nn_dtype dtype, nn_shape shape);
/* A trained parameter [shape] (1 to NN_MAX_DIMS dims) named name (required; PyTorch's
   names make safetensors files interchange: "fc1.weight"), filled by init when first made
   in the graph's parameter store (drawn from the graph's seed and the parameter's index,
   the same on every backend). A name the store already has (made by a share_params graph)
   is that parameter, and must have its shape. */
NN_API nn_tensor nn_param(nn_graph *g, const char *name, nn_shape shape, nn_init init);
/* Names are one parameter each: a second nn_param or nn_buffer (or layer) with a name this
   graph already made is refused (NN_ERR_INVALID_ARGUMENT naming it), so two layers given
   one name by mistake do not share weights. nn_graph_share_names(g, 1) makes such a name
   the same tensor again (weight tying, a layer applied twice), until nn_graph_share_names(
   g, 0). A graph made with nn_graph_desc.share_params uses the other graph's parameters by
   name without it (each name once per graph). */
NN_API nn_result nn_graph_share_names(nn_graph *g, int on);
/* A buffer: a parameter-store entry that is state, not trained (PyTorch's buffers, e.g.
   batch norm's running statistics). No gradient flows to it and no optimizer updates it;
   it is saved and loaded with the parameters and shared by graphs made with share_params.
   A name is either a parameter or a buffer. */
NN_API nn_tensor nn_buffer(nn_graph *g, const char *name, nn_shape shape, nn_init init);
/* Constants, float32, computed once when the graph is compiled (not every step), with no
   gradient: torch.arange(start, end, step) ([ceil((end - start) / step)] elements
   start + i*step, computed in double; step nonzero with the sign of end - start) and
   torch.eye(n, m) ([n, m], ones on the diagonal; m 0: n). */
NN_API nn_tensor nn_arange(nn_graph *g, double start, double end, double step);
NN_API nn_tensor nn_eye(nn_graph *g, int64_t n, int64_t m);

/* t's shape into *out (ndim and dims; the unused dims 0), before or after compile. A
   handle that is not a tensor of g (NN_NONE, a failed one, another graph's) is
   NN_ERR_INVALID_ARGUMENT with *out zeroed. */
NN_API nn_result nn_tensor_shape(nn_graph *g, nn_tensor t, nn_shape *out);
/* t's element count (the product of its dims; 1 for a scalar []) into *out, as
   nn_tensor_shape (*out 0 on error). Its bytes in nn_tensor_write/read are 4 * *out. */
NN_API nn_result nn_tensor_numel(nn_graph *g, nn_tensor t, int64_t *out);
/* t's storage type (tensor.dtype) into *out, as nn_tensor_shape (*out NN_F32 on error):
   what the precision policy and param_dtype made of it, before or after compile. */
NN_API nn_result nn_tensor_dtype(nn_graph *g, nn_tensor t, nn_dtype *out);
/* bytes must equal the tensor's size. Writes go to inputs and parameters; reads come from
   inputs, parameters, outputs, accumulators and kept gradients. data may be reused as soon
   as nn_tensor_write returns. On an OpenCL device a write of at most 1 MiB is copied into
   one of 8 staging buffers and queued without waiting, so the host runs ahead of the
   device (nn_graph_step returns before the step is done; after 8 such writes without a
   read or nn_graph_finish, the next one waits for the device); NN_CL_STAGING=0 makes every
   write wait. A read waits for all queued work. */
NN_API nn_result nn_tensor_write(nn_graph *g, nn_tensor t, const void *data, size_t bytes);
NN_API nn_result nn_tensor_read(nn_graph *g, nn_tensor t, void *data, size_t bytes);
NN_API nn_result nn_tensor_fill(nn_graph *g, nn_tensor t, float value); /* no transfer */

/* ---- 16-bit storage (NN_BF16, NN_F16) ----
   A bfloat16 or float16 tensor holds 2 bytes an element on the device (nn_graph_memory
   counts them so), and every op that takes one computes in float32: it widens on load and
   rounds to nearest even on store (bfloat16: a NaN stays a quiet NaN; float16: past 65504
   an infinity, subnormals kept), the same bits on every backend. Only the ops that read
   16-bit storage take such a tensor; any other op refuses it when built
   (NN_ERR_SHAPE, "OP: takes no bfloat16 tensor (input N) ..."): convert it with
   nn_to_dtype first. Today that is nn_to_dtype itself. nn_tensor_write of a 16-bit input
   takes float32 values (4 bytes an element, as nn_tensor_numel says) and stores them
   rounded; nn_tensor_read gives them back widened to float32, exactly; nn_tensor_fill
   fills with the value rounded. */
/* x converted to dtype (PyTorch's x.to(dtype)) among NN_F32, NN_BF16 and NN_F16: a new
   tensor of x's shape, x itself rounded to nearest even going to 16 bits and widened
   exactly coming back (x of dtype already: a copy). Its gradient is gy converted back to
   x's dtype. An int32 x or dtype is refused (NN_ERR_SHAPE). */
NN_API nn_tensor nn_to_dtype(nn_graph *g, nn_tensor x, nn_dtype dtype);

/* ==== 4. Elementwise ops ===================================================================
   torch's functions of the same names, forward and gradient, on float32 tensors unless
   an op says otherwise. Binary ops broadcast (below); the _scalar forms take a float for
   the second operand. */

/* Binary elementwise ops broadcast both operands by NumPy's and PyTorch's rules: shapes are
   aligned at their last dims, a missing leading dim counts as 1, and each dim must be 1 or
   the other's size (b = [N] against a = [M, N]: a bias; [3, 1, 7] with [1, 33, 1] gives
   [3, 33, 7]); the result has the broadcast shape. The gradient of an operand is summed
   over the dims it was broadcast along, in a fixed order (the same bits every run and for
   any thread count). Shapes that do not broadcast are NN_ERR_SHAPE. 16-bit storage (add,
   sub, mul, div, minimum, maximum, pow): two tensors of one 16-bit type give that type
   (float32 arithmetic, rounded once; gradients of that type); a 16-bit tensor with a float32
   one, or bfloat16 with float16, gives float32, the 16-bit operands converted first
   (PyTorch's type promotion). The comparisons take float32 only. */
NN_API nn_tensor nn_add(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_sub(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_mul(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_div(nn_graph *g, nn_tensor a, nn_tensor b); /* true division, torch.div */
/* torch.minimum / torch.maximum: NaN in either operand gives NaN; on ties the gradient is
   split half and half between a and b (PyTorch's rule). */
NN_API nn_tensor nn_minimum(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_maximum(nn_graph *g, nn_tensor a, nn_tensor b);
/* torch.pow(a, b) with a tensor exponent: d/da = b * a^(b-1) (0 where b == 0), d/db =
   a^b * log(a) (0 where a == 0 and b >= 0; NaN for a < 0, as PyTorch's). */
NN_API nn_tensor nn_pow(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_mul_scalar(nn_graph *g, nn_tensor x, float s); /* x * s */
NN_API nn_tensor nn_add_scalar(nn_graph *g, nn_tensor x, float s); /* x + s (x - s: add -s) */
NN_API nn_tensor nn_pow_scalar(nn_graph *g, nn_tensor x, float p); /* x ** p; gradient p * x^(p-1), 0 for p = 0 */

/* Elementwise math, torch's functions of the same names, forward and gradient. */
NN_API nn_tensor nn_neg(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_abs(nn_graph *g, nn_tensor x);  /* gradient sign(x): 0 at 0, as PyTorch's */
NN_API nn_tensor nn_sign(nn_graph *g, nn_tensor x); /* -1, 0 or 1 (NaN gives 0, as torch.sign); gradient 0 */
NN_API nn_tensor nn_exp(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_expm1(nn_graph *g, nn_tensor x); /* exp(x) - 1, exact near 0 */
NN_API nn_tensor nn_log(nn_graph *g, nn_tensor x);   /* natural log; -inf at 0, NaN below */
NN_API nn_tensor nn_log1p(nn_graph *g, nn_tensor x); /* log(1 + x), exact near 0 */
NN_API nn_tensor nn_sqrt(nn_graph *g, nn_tensor x);  /* gradient 1 / (2 sqrt(x)): inf at 0 */
NN_API nn_tensor nn_rsqrt(nn_graph *g, nn_tensor x); /* 1 / sqrt(x) */
NN_API nn_tensor nn_reciprocal(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_square(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_sin(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_cos(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_erf(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_floor(nn_graph *g, nn_tensor x); /* gradient 0, as PyTorch's */
/* torch.round: to the nearest integer, halves to even (0.5 -> 0, 1.5 -> 2, -2.5 -> -2);
   gradient 0, as PyTorch's. */
NN_API nn_tensor nn_round(nn_graph *g, nn_tensor x);
/* torch.clamp(x, min, max) = min(max(x, min), max); NAN for a bound means none (clamp(x,
   NAN, 6): only a max; clamp(x, 0, NAN): only a min); min > max gives max everywhere, as
   PyTorch's. A NaN x stays NaN. The gradient is 1 where min <= x <= max, bounds included,
   and 0 elsewhere (PyTorch's). */
NN_API nn_tensor nn_clamp(nn_graph *g, nn_tensor x, float min, float max);

/* Comparisons and logic, broadcast as the binary ops above: float32 masks of 0 and 1 with
   no gradient (torch.eq, ne, lt, le, gt, ge; logical_* take nonzero as true, NaN too). */
NN_API nn_tensor nn_eq(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_ne(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_lt(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_le(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_gt(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_ge(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_logical_and(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_logical_or(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_logical_not(nn_graph *g, nn_tensor x);
/* torch.where(cond, a, b): a where cond is nonzero, else b, the three broadcast together;
   the gradient reaches a where cond holds and b elsewhere (summed to their shapes), cond
   none. */
NN_API nn_tensor nn_where(nn_graph *g, nn_tensor cond, nn_tensor a, nn_tensor b);
/* torch.masked_fill(x, mask, value): value where mask is nonzero, else x; mask broadcasts
   to x's shape (the result's). The gradient reaches x where it was kept. */
NN_API nn_tensor nn_masked_fill(nn_graph *g, nn_tensor x, nn_tensor mask, float value);
/* torch.detach: x's values, with no gradient flowing back through it. */
NN_API nn_tensor nn_detach(nn_graph *g, nn_tensor x);

/* ==== 5. Reductions ========================================================================
   One rule: nn_X(g, x) reduces every element to a scalar [1]; nn_X_dim(g, x, dims...,
   keepdim) reduces along dims with torch.X's semantics and argument order: a list
   (const int *dims, int n_dims) where torch takes a tuple, one int dim where torch takes
   one (prod, max, min, argmax, argmin). A negative dim counts from the end; n_dims = 0
   reduces every dim (as torch.sum(x, dim=[]) does). keepdim keeps each reduced dim with
   size 1; without it they are dropped, and a result with no dim left has shape [1]
   (PyTorch's is a 0-dim tensor). A dim out of range or repeated is an error naming the op
   and x's shape. Every reduction runs in a fixed order (the same bits run to run, and for
   any CPU thread count); CPU sums accumulate in double. float32 x only; indices are
   int32. */

NN_API nn_tensor nn_sum(nn_graph *g, nn_tensor x);  /* torch.sum(x): [1] */
NN_API nn_tensor nn_mean(nn_graph *g, nn_tensor x); /* torch.mean(x): [1] */
/* torch.sum(x, dims, keepdim) / torch.mean. */
NN_API nn_tensor nn_sum_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int keepdim);
NN_API nn_tensor nn_mean_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int keepdim);
/* torch.prod(x, dim, keepdim); its gradient is right with zeros in x (the product of the
   others at a single zero, 0 elsewhere), as PyTorch's. */
NN_API nn_tensor nn_prod_dim(nn_graph *g, nn_tensor x, int dim, int keepdim);
/* torch.amax / torch.amin: a NaN in a row gives NaN; the gradient is split evenly among
   the elements equal to the result (ties), as PyTorch's. */
NN_API nn_tensor nn_amax_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int keepdim);
NN_API nn_tensor nn_amin_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int keepdim);
/* torch.max(x, dim, keepdim) / torch.min: the values, and when indices is not NULL, the
   int32 indices into *indices (the first of ties; a NaN counts as the max and the min, the
   first NaN). The gradient goes to that first element alone, as PyTorch's. */
NN_API nn_tensor nn_max_dim(nn_graph *g, nn_tensor x, int dim, int keepdim, nn_tensor *indices);
NN_API nn_tensor nn_min_dim(nn_graph *g, nn_tensor x, int dim, int keepdim, nn_tensor *indices);
/* torch.argmax(x, dim, keepdim) / torch.argmin: int32, the first of ties, a NaN counting
   as the max (and the min); no gradient. */
NN_API nn_tensor nn_argmax_dim(nn_graph *g, nn_tensor x, int dim, int keepdim);
NN_API nn_tensor nn_argmin_dim(nn_graph *g, nn_tensor x, int dim, int keepdim);
/* torch.var / torch.std with correction (PyTorch's default is 1, Bessel's: pass 1; 0: the
   biased estimate): the sum of squared deviations over max(0, N - correction), N the
   elements reduced (two passes: the mean, then the deviations). std's gradient is 0 where
   std is 0, as PyTorch's. */
NN_API nn_tensor nn_var_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int correction, int keepdim);
NN_API nn_tensor nn_std_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int correction, int keepdim);
/* torch.logsumexp: max + log(sum(exp(x - max))), an infinite max not subtracted (PyTorch's
   rule); n_dims = 0 reduces every dim (torch 1.13 raises there; later versions reduce all). */
NN_API nn_tensor nn_logsumexp_dim(nn_graph *g, nn_tensor x, const int *dims, int n_dims, int keepdim);
/* torch.linalg.vector_norm(x, p, dims, keepdim) (torch.norm's p-norm): p >= 0 or
   INFINITY (the max of |x|; the gradient split among ties); p = 0 counts the nonzero
   elements (no gradient). The gradient is 0 where the norm is 0, and for p < 1 at zero
   elements, as PyTorch's. */
NN_API nn_tensor nn_norm_dim(nn_graph *g, nn_tensor x, float p, const int *dims, int n_dims, int keepdim);
/* torch.cumsum(x, dim): the running sum along dim, x's shape. */
NN_API nn_tensor nn_cumsum(nn_graph *g, nn_tensor x, int dim);
/* x [B, C] -> int32 [B]: the argmax of each row (nn_argmax_dim(g, x, 1, 0) for 2-D x). */
NN_API nn_tensor nn_argmax_rows(nn_graph *g, nn_tensor x);
/* Fraction of rows of logits [B, C] whose argmax equals the int32 label [B] (a scalar; no
   gradient). */
NN_API nn_tensor nn_accuracy(nn_graph *g, nn_tensor logits, nn_tensor labels);
/* A running sum kept on the device: each run adds x to it. Reset with nn_tensor_fill(). */
NN_API nn_tensor nn_accumulate(nn_graph *g, nn_tensor x);

/* ==== 6. Shape and indexing ================================================================
   A dim is an int, negative from the end; a list of dims is (const int *dims, int
   n_dims), sizes (const int64_t *, int n). Views (reshape, flatten, squeeze, unsqueeze)
   share x's storage; the others copy. Either dtype unless an op says float32. */

/* The same data in another shape of the same element count. A view, as torch's on a
   contiguous tensor: the output shares x's storage and nothing is copied or run (a
   parameter, which the optimizer updates in place, is copied instead). */
NN_API nn_tensor nn_reshape(nn_graph *g, nn_tensor x, nn_shape shape);
NN_API nn_tensor nn_flatten(nn_graph *g, nn_tensor x); /* [N, ...] -> [N, rest] */
/* torch.squeeze(x, dim): dim removed if its size is 1, else x unchanged ([1] gives the
   scalar [], and a scalar stays one for dim 0 or -1); torch.unsqueeze(x, dim): a dim of
   size 1 inserted at dim, in [-ndim-1, ndim]. Both views, as nn_reshape. */
NN_API nn_tensor nn_squeeze(nn_graph *g, nn_tensor x, int dim);
NN_API nn_tensor nn_unsqueeze(nn_graph *g, nn_tensor x, int dim);
/* torch.expand / broadcast_to: x repeated along its size-1 dims and new leading dims to
   shape (-1 keeps a dim of x); the gradient is summed back to x's shape. */
NN_API nn_tensor nn_expand(nn_graph *g, nn_tensor x, nn_shape shape);
/* torch.permute(x, dims): output dim d is x's dim dims[d]; n_dims must be x's dims, each
   once. */
NN_API nn_tensor nn_permute(nn_graph *g, nn_tensor x, const int *dims, int n_dims);
/* torch.transpose(x, dim0, dim1). */
NN_API nn_tensor nn_transpose(nn_graph *g, nn_tensor x, int dim0, int dim1);
/* torch.cat(xs, dim): joins up to 64 tensors that agree on every other dim, each written
   once (one op of up to 16 inputs; more are joined in groups of 16 first); its backward
   is one slice per input. */
NN_API nn_tensor nn_concat(nn_graph *g, const nn_tensor *xs, int n, int dim);
/* torch.stack(xs, dim): up to 64 tensors of one shape joined along a new dim, in
   [-ndim-1, ndim]. */
NN_API nn_tensor nn_stack(nn_graph *g, const nn_tensor *xs, int n, int dim);
/* len elements of x along dim from start (torch's x.narrow(dim, start, len)); the step
   form takes every step-th: start, start + step, ..., start + (len-1)*step, which is
   torch's x[..., start:end:step] with len = ceil((end - start) / step). start >= 0,
   step >= 1, and every index taken inside the dim. */
NN_API nn_tensor nn_slice(nn_graph *g, nn_tensor x, int dim, int64_t start, int64_t len);
NN_API nn_tensor nn_slice_step(nn_graph *g, nn_tensor x, int dim, int64_t start, int64_t len, int64_t step);
/* torch.split(x, sizes, dim): x cut along dim into n parts of sizes[0..n) (adding up to
   the dim), written into out[0..n); returns out[0], a failed tensor (and every out[k]
   failed) when the split fails. */
NN_API nn_tensor nn_split(nn_graph *g, nn_tensor x, const int64_t *sizes, int n, int dim, nn_tensor *out);
/* torch.flip: x reversed along each of dims[0..n_dims) (each once; negative from the end). */
NN_API nn_tensor nn_flip(nn_graph *g, nn_tensor x, const int *dims, int n_dims);
/* torch.Tensor.repeat: x tiled repeats[d] times along each dim; n >= x's dims, and when
   n is more, x counts as having leading dims of size 1 (the output has n dims). torch.tile
   is the same with repeats padded to x's dims by leading 1s: nn_repeat with those. The
   backward sums the tiles (each gradient element sums its copies in a fixed order). */
NN_API nn_tensor nn_repeat(nn_graph *g, nn_tensor x, const int64_t *repeats, int n);
/* torch.tril / torch.triu over the last two dims (float32 x, >= 2 dims): elements with
   col - row <= diagonal (tril) or >= diagonal (triu) kept, the rest zero; diagonal 0 is
   the main one. */
NN_API nn_tensor nn_tril(nn_graph *g, nn_tensor x, int diagonal);
NN_API nn_tensor nn_triu(nn_graph *g, nn_tensor x, int diagonal);
/* Padding of the last two dims (H, W), the pads in F.pad's order (left, right, top,
   bottom: the last dim first): zeros, or reflection (PyTorch's "reflect": each pad
   smaller than its dim). */
typedef enum nn_pad_mode { NN_PAD_ZEROS = 0, NN_PAD_REFLECT = 1 } nn_pad_mode;
NN_API nn_tensor nn_pad2d(nn_graph *g, nn_tensor x, int left, int right, int top, int bottom, nn_pad_mode mode);

/* Upsampling of the last two dims by integer factors: nearest, or bilinear with
   align_corners = False (PyTorch's default). */
typedef enum nn_upsample_mode { NN_UPSAMPLE_NEAREST = 0, NN_UPSAMPLE_BILINEAR = 1 } nn_upsample_mode;
NN_API nn_tensor nn_upsample2d(nn_graph *g, nn_tensor x, int scale_h, int scale_w, nn_upsample_mode mode);
/* [N, C*r*r, H, W] -> [N, C, H*r, W*r], as torch.nn.PixelShuffle (a reshape-permute-reshape). */
NN_API nn_tensor nn_pixel_shuffle(nn_graph *g, nn_tensor x, int r);
/* out[i, ...] = data[idx[i], ...]: batches from a dataset that lives on the device (data
   of either dtype: images and their labels). An index out of range gives a row of zeros. */
NN_API nn_tensor nn_gather_rows(nn_graph *g, nn_tensor data, nn_tensor idx);
/* Indexing by int32 tensors, PyTorch's semantics (dim negative: from the end). An index
   value out of range is what PyTorch raises on: it reads or writes nothing (a zero where
   it would have read), and the next nn_tensor_read or nn_graph_finish fails naming the op
   and the count, as the losses' labels do. Repeated indices sum their gradients (scatters)
   in a fixed order, with no float atomics: the same bits every run, on every backend.
   nn_index_select (torch.index_select): x with dim cut to index [K] (1-D): out[.., k, ..] =
   x[.., index[k], ..]; x of either dtype. The backward costs numel(x) + K * (its row):
   the index is sorted once (the segment ops below).
   nn_gather (torch.gather): out (index's shape) at c = x at c with c[dim] = index[c];
   index has x's dims and index.size(d) <= x.size(d) for d != dim.
   nn_scatter_add (torch.Tensor.scatter_add): x plus src[c] added at c with c[dim] =
   index[c], for c over index's shape; index.size(d) <= src.size(d) for every d and
   <= x.size(d) for d != dim. Forward and the gather's backward cost numel(x) +
   numel(index): the index is sorted once by (its other coordinates, value).
   nn_one_hot (F.one_hot, as float32): int32 labels [..] -> [.., num_classes]. */
NN_API nn_tensor nn_index_select(nn_graph *g, nn_tensor x, int dim, nn_tensor index);
NN_API nn_tensor nn_gather(nn_graph *g, nn_tensor x, int dim, nn_tensor index);
NN_API nn_tensor nn_scatter_add(nn_graph *g, nn_tensor x, int dim, nn_tensor index, nn_tensor src);
NN_API nn_tensor nn_one_hot(nn_graph *g, nn_tensor labels, int64_t num_classes);

/* Segment reductions (torch_scatter's scatter(src, index, dim=0, dim_size=num_segments,
   reduce=...); TensorFlow's unsorted_segment_*): src [E, ...] and an int32 index [E] ->
   [num_segments, ...], row s reducing the rows k of src with index[k] == s. The index is
   sorted once a step on the device (a stable radix sort; a counting sort on the CPU) and
   each segment reduced in index order: cost linear in E plus the output, no float atomics,
   the same bits every run, on every CPU thread count and on both backends. An index value
   outside [0, num_segments) is left out and reported as the indexing ops' are. An empty
   segment gives 0 (sum, mean, and max, as torch_scatter's segment_max; PyTorch's
   scatter_reduce with include_self=False leaves the input there instead). Gradients:
   sum, each row of src gets its segment's; mean, divided by the segment's count; max,
   the whole gradient to the first row in index order that holds the maximum (ties: the
   first), 0 to the others. NaN is a maximum. */
NN_API nn_tensor nn_segment_sum(nn_graph *g, nn_tensor src, nn_tensor index, int64_t num_segments);
NN_API nn_tensor nn_segment_mean(nn_graph *g, nn_tensor src, nn_tensor index, int64_t num_segments);
NN_API nn_tensor nn_segment_max(nn_graph *g, nn_tensor src, nn_tensor index, int64_t num_segments);
/* torch.index_add(x, dim, index, source) (alpha 1: scale source for another): x plus, for
   each k, source's slice k along dim added to x's slice index[k]; index [K] int32, source x's
   shape with K at dim. On the segment sort: cost linear in numel(x) + numel(source). */
NN_API nn_tensor nn_index_add(nn_graph *g, nn_tensor x, int dim, nn_tensor index, nn_tensor source);

/* ==== 7. Matrix products =================================================================== */

/* nn_matmul: torch.matmul(op(a), op(b)), where trans_a / trans_b swap the last two dims of
   a / b (op(x) = x.mT; a 1-D operand has nothing to swap and its flag is ignored).
     1-D x 1-D   [K] @ [K] -> [1], the dot product (PyTorch gives a 0-dim tensor; here a
                 scalar is [1], as nn_sum's)
     1-D x N-D   [K] @ [..., K, N] -> [..., N]: a is taken as [1, K], the 1 dropped after
     N-D x 1-D   [..., M, K] @ [K] -> [..., M]: b is taken as [K, 1], the 1 dropped after
     2-D x 2-D   [M, K] @ [K, N] -> [M, N]
     N-D x N-D   the batch dims (all but the last two) broadcast as elementwise ops' dims
                 do, right-aligned, 1 against n and missing against n:
                 [2, 1, 3, 4] @ [5, 4, 6] -> [2, 5, 3, 6]
   The gradients of a broadcast operand are summed over the batch dims it was broadcast
   along, in a fixed order (the same bits run to run). Bad shapes are NN_ERR_SHAPE with a
   message naming nn_matmul and both shapes. Runs on the blocked GEMM of the CPU backend
   (threaded over the batch when the products are small) and the OpenCL GEMM kernels (one
   batched launch, a broadcast operand's batch stride 0).
   16-bit storage: a and b both NN_BF16 (or both NN_F16) give a product of that dtype,
   accumulated in float32 and rounded once (PyTorch: bf16 @ bf16 -> bf16); its gradients are
   of that dtype too. The CPU backend runs nn_cpu_gemm_bf16 / _f16's paths, OpenCL the same
   GEMM kernels reading 16-bit storage. Operands of different dtypes are NN_ERR_SHAPE, as in
   PyTorch. A graph made with nn_graph_desc.precision converts float32 operands to its type
   itself and keeps the product in it. */
NN_API nn_tensor nn_matmul(nn_graph *g, nn_tensor a, nn_tensor b, int trans_a, int trans_b);
/* nn_einsum: torch.einsum(spec, a, b) for the specs that are one nn_matmul: "ij,jk->ik",
   "ij,kj->ik", "ji,jk->ki", "bij,bjk->bik", "bhqd,bhkd->bhqk", "ij,j->i", "i,i->" (a [1]),
   and without "->" the labels seen once in alphabetical order ("ij,jk" is "ij,jk->ik").
   Labels are letters. The labels of a, b and the output (batch) lead all three in the same
   order; then a keeps at most one label, b at most one, in either order in the output, and
   one label is summed; a label's sizes must agree (no broadcasting). Other specs (outer
   products, sums over a label of one operand, diagonals, permuted batch labels) are
   NN_ERR_INVALID_ARGUMENT naming the spec. */
NN_API nn_tensor nn_einsum(nn_graph *g, const char *spec, nn_tensor a, nn_tensor b);

/* ---- 7b. GEMM on 16-bit operands (mixed precision), outside graphs ----
   nn_cpu_gemm_bf16: C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C, row-major, A and B
   bf16 (uint16_t: a float's top 16 bits, torch.bfloat16's bits), C float32, the products
   accumulated in float32 (torch.addmm(C, A, B, beta=beta, alpha=alpha) on bfloat16 inputs
   with a float32 result). trans_a: A is stored [k, m] (op(A) = A^T; lda >= m), else
   [m, k] (lda >= k); trans_b likewise ([n, k], ldb >= k; else [k, n], ldb >= n);
   ldc >= n. beta = 0 ignores C's old contents (NaN-safe, as BLAS); k = 0 or alpha = 0 gives
   beta * C. Runs on the CPU whatever the context's backend: on AVX-512 BF16 CPUs with
   vdpbf16ps (which flushes bf16 denormal inputs to zero), else widened to float32 for
   the AVX-512 / AVX2 or plain-C float32 kernels; threaded on the pool of a CPU-backend ctx
   (nn_context_desc.threads), on the calling thread with ctx NULL or another backend's.
   Sizes past INT_MAX, negative sizes, short leading dimensions and NULL matrices are
   NN_ERR_INVALID_ARGUMENT naming the function and the values. */
NN_API nn_result nn_cpu_gemm_bf16(nn_context *ctx, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                                  float alpha, const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                                  float beta, float *c, int64_t ldc);
/* nn_cpu_gemm_f16: the same with A and B fp16 (IEEE binary16, torch.float16's bits), widened
   with F16C's vcvtph2ps where the CPU has it (AVX-512F or AVX2 + FMA + F16C), else in
   plain C; denormals kept. */
NN_API nn_result nn_cpu_gemm_f16(nn_context *ctx, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                                 float alpha, const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                                 float beta, float *c, int64_t ldc);
/* n values converted, as torch's .to(): nn_f32_to_bf16 and nn_f32_to_f16 round to nearest,
   ties to even (overflow to +-inf, NaN kept NaN, denormals rounded, not flushed);
   nn_bf16_to_f32 and nn_f16_to_f32 are exact. NULL with n > 0, or n < 0, is
   NN_ERR_INVALID_ARGUMENT. */
NN_API nn_result nn_f32_to_bf16(const float *src, uint16_t *dst, int64_t n);
NN_API nn_result nn_bf16_to_f32(const uint16_t *src, float *dst, int64_t n);
NN_API nn_result nn_f32_to_f16(const float *src, uint16_t *dst, int64_t n);
NN_API nn_result nn_f16_to_f32(const uint16_t *src, float *dst, int64_t n);

/* ---- 7a. Attention ---- */

/* nn_attention's layouts: q [B, H, Tq, D] (PyTorch's) or [B, Tq, H, D] (batch_first
   projections viewed by nn_reshape, read in place without a copy); k and v alike. */
#define NN_ATTN_BHTD 0
#define NN_ATTN_BTHD 1
typedef struct nn_attention_desc {
    int causal;                /* 1: key j > query i is masked, aligned top-left as PyTorch's
                                  is_causal (cross-attention with Tq != Tk included) */
    float scale;               /* the scores' scale (0: 1/sqrt(D); NN_ZERO: 0) */
    float dropout;             /* dropout on the attention weights, in [0, 1) (0: none; off in
                                  eval graphs) */
    int layout;                /* NN_ATTN_BHTD (0, the default) or NN_ATTN_BTHD */
    nn_tensor mask;            /* NN_NONE, or attn_mask [.., Tq, Tk] broadcast to [B, H, Tq, Tk]
                                  (2 to 4 dims, each its size or 1): float32 added to the scores
                                  (-inf masks), or int32 as PyTorch's bool (nonzero: attend).
                                  A float mask gets its gradient, as in PyTorch: dS (the
                                  scores' gradient, before the scale) summed over the dims it
                                  broadcasts, in a fixed order; no [Tq, Tk] tile per head is
                                  kept unless the mask itself has one */
    nn_tensor key_padding_mask; /* NN_NONE, or [B, Tk] float32 or int32: nonzero keys are
                                  ignored, as nn.MultiheadAttention's */
    int window;                /* sliding window (0: none): with causal, query i sees keys
                                  i - window < j <= i; without, |i - j| < window */
} nn_attention_desc;
/* nn_attention: torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask,
   dropout_p, is_causal, scale, enable_gqa=True), fused: y = softmax(q k^T scale + mask)
   v, of q's shape with v's head dim. q [B, H, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk,
   Dv] (NN_ATTN_BTHD: [B, T, H, D]) with H % Hkv == 0: query head h reads key/value head
   h / (H / Hkv) (grouped- and multi-query attention, no copy); Tq != Tk is
   cross-attention; D and Dv in 1..256 (Dv may differ from D, as PyTorch allows; the
   default scale is 1/sqrt(D)). desc NULL is the zeroed desc.
   Flash-attention's algorithm: the forward keeps the output and one log-sum-exp per row;
   the backward recomputes the scores tile by tile (dK/dV in one pass over key blocks, dQ
   in another; no atomics, a fixed order: the same bits every run and at every CPU thread
   count), so no [Tq, Tk] matrix is stored and working memory grows with T. Dropout draws
   the mask of weight (b, h, i, j) from the counter-based generator of nn_dropout (the
   node's key and the graph's step), so the backward regenerates it.
   A row whose keys are all masked gives 0 (PyTorch's math path gives NaN) and gradient 0.
   q, k, v of NN_BF16 (or NN_F16), one dtype: the output and the gradients of that dtype,
   every sum, the softmax's statistics and the log-sum-exp in float32, each output rounded
   once (a 16-bit float mask is converted to float32; under a precision policy float32
   operands beside 16-bit ones are converted to its type).
   Refusals (NN_ERR_SHAPE, NN_ERR_INVALID_ARGUMENT): other ranks or dtypes (int32, or q, k,
   v of different float dtypes outside a policy), mismatched
   batch, q/k head dim or key length, H % Hkv != 0, D or Dv > 256, a mask that does not broadcast,
   dropout outside [0, 1), a negative window, an unknown layout. */
NN_API nn_tensor nn_attention(nn_graph *g, nn_tensor q, nn_tensor k, nn_tensor v, const nn_attention_desc *desc);

/* ==== 8. Activations =======================================================================
   torch.nn.functional's activations, elementwise on float32 x unless they say otherwise;
   parameters in F's order with PyTorch's defaults named (pass them: a 0 is a 0 here). */

NN_API nn_tensor nn_relu(nn_graph *g, nn_tensor x); /* max(x, 0); gradient 0 at 0, as PyTorch's */
/* x for x > 0, else negative_slope * x (PyTorch's default slope 0.01). */
NN_API nn_tensor nn_leaky_relu(nn_graph *g, nn_tensor x, float negative_slope);
NN_API nn_tensor nn_sigmoid(nn_graph *g, nn_tensor x); /* 1 / (1 + exp(-x)) */
NN_API nn_tensor nn_tanh(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_gelu(nn_graph *g, nn_tensor x); /* exact (erf), as PyTorch's default */
/* F.gelu(x, approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), PyTorch's
   formula and its derivative (GPT-2's activation). */
NN_API nn_tensor nn_gelu_tanh(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_silu(nn_graph *g, nn_tensor x); /* x * sigmoid(x) */
/* ELU (nn.ELU; PyTorch's default alpha is 1): x for x > 0, else alpha * (exp(x) - 1); the
   gradient at 0 is alpha, as PyTorch's. */
NN_API nn_tensor nn_elu(nn_graph *g, nn_tensor x, float alpha);
/* SELU (nn.SELU): scale * x for x > 0, else scale * alpha * (exp(x) - 1), with PyTorch's
   scale = 1.0507009873554805 and alpha = 1.6732632423543772; the gradient at 0 is
   scale * alpha, as PyTorch's. */
NN_API nn_tensor nn_selu(nn_graph *g, nn_tensor x);
/* CELU (nn.CELU; PyTorch's default alpha is 1): x for x > 0, else
   alpha * (exp(x / alpha) - 1); alpha must not be 0 (PyTorch refuses it too). */
NN_API nn_tensor nn_celu(nn_graph *g, nn_tensor x, float alpha);
/* Softplus (nn.Softplus; PyTorch's defaults beta 1, threshold 20):
   log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (gradient 1
   there), PyTorch's reversion to the linear function; beta must not be 0. */
NN_API nn_tensor nn_softplus(nn_graph *g, nn_tensor x, float beta, float threshold);
/* Mish (nn.Mish): x * tanh(softplus(x)). */
NN_API nn_tensor nn_mish(nn_graph *g, nn_tensor x);
/* Hardswish (nn.Hardswish): x * relu6(x + 3) / 6. Its gradient is x / 3 + 0.5 on [-3, 3],
   ends included (-0.5 at -3, 1.5 at 3: PyTorch's), 0 below and 1 above. */
NN_API nn_tensor nn_hardswish(nn_graph *g, nn_tensor x);
/* Hardsigmoid (nn.Hardsigmoid): relu6(x + 3) / 6. Its gradient is 1/6 strictly inside
   (-3, 3) and 0 elsewhere, at -3 and 3 too (PyTorch's). */
NN_API nn_tensor nn_hardsigmoid(nn_graph *g, nn_tensor x);
/* Hardtanh (nn.Hardtanh; PyTorch's defaults min_val -1, max_val 1): x clamped to
   [min_val, max_val], min_val <= max_val. Its gradient is 1 strictly inside and 0 at the
   bounds and outside (PyTorch's). */
NN_API nn_tensor nn_hardtanh(nn_graph *g, nn_tensor x, float min_val, float max_val);
/* ReLU6 (nn.ReLU6): min(max(x, 0), 6), PyTorch's hardtanh on [0, 6]: gradient 0 at 0 and
   at 6. */
NN_API nn_tensor nn_relu6(nn_graph *g, nn_tensor x);
/* Softsign (nn.Softsign): x / (1 + |x|). */
NN_API nn_tensor nn_softsign(nn_graph *g, nn_tensor x);
/* LogSigmoid (nn.LogSigmoid): log(1 / (1 + exp(-x))), as min(x, 0) - log1p(exp(-|x|)),
   PyTorch's form, which neither overflows nor loses the tails. */
NN_API nn_tensor nn_log_sigmoid(nn_graph *g, nn_tensor x);
/* PReLU (PyTorch's prelu): x for x > 0, else weight * x, with a learned slope per channel:
   weight [C] for x [N, C, ...] (channels: dim 1), or weight [1], one slope shared by all.
   Gradients reach x (weight at 0, as PyTorch's) and weight, its sum over the other dims
   taken in a fixed order. */
NN_API nn_tensor nn_prelu(nn_graph *g, nn_tensor x, nn_tensor weight);
/* torch.softmax(x, dim) / torch.log_softmax(x, dim) (PyTorch's F.softmax with dim given):
   along dim, -1 the last. */
NN_API nn_tensor nn_softmax(nn_graph *g, nn_tensor x, int dim);
NN_API nn_tensor nn_log_softmax(nn_graph *g, nn_tensor x, int dim);
/* torch.nn.functional.glu(x, dim): x cut in halves a, b along dim (an even size; dim
   negative: from the end), a * sigmoid(b). */
NN_API nn_tensor nn_glu(nn_graph *g, nn_tensor x, int dim);

/* ==== 9. Convolution and pooling ===========================================================
   NCHW (PyTorch's layout), one desc per op and dimensionality (zero fields: stride 1,
   padding 0, dilation 1, groups 1), PyTorch's F.conv1d/2d/3d, F.conv_transpose2d and
   pooling functions. Kernel sizes, strides, paddings and dilations are ints; weights are
   [out_channels, C/groups, k...] (a transposed convolution's [Cin, Cout/groups, k...]).
   no_bias is PyTorch's bias=False for the layers of section 12 (which then make no
   NAME.bias); the functional ops then refuse a bias operand, so desc and call never
   disagree in silence. */

/* 1-D over x [N, C, L] with w [K, C/groups, KL] and an optional bias [K] (NN_NONE: none)
   -> [N, K, OL], OL = (L + 2*pad - dilation*(KL-1) - 1) / stride + 1. */
typedef struct nn_conv1d_desc {
    int stride, pad, dilation, groups;
    int no_bias;
} nn_conv1d_desc;
NN_API nn_tensor nn_conv1d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv1d_desc *desc);

/* 2-D over x [N, C, H, W] (NCHW, PyTorch's layout) with w [K, C/groups, KH, KW] and an
   optional bias [K] -> [N, K, OH, OW], OH = (H + 2*pad_h - dilation_h*(KH-1) - 1) / stride_h + 1.
   x and w float32, or both NN_BF16 (or both NN_F16) without a bias: y and the gradients of
   that dtype, summed in float32 (nn_graph_desc.precision converts float32 ones). */
typedef struct nn_conv2d_desc {
    int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
    int no_bias;
} nn_conv2d_desc;
NN_API nn_tensor nn_conv2d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv2d_desc *desc);

/* Transposed convolution (PyTorch's F.conv_transpose2d / nn.ConvTranspose2d): x
   [N, Cin, H, W] with w [Cin, Cout/groups, KH, KW] (PyTorch's layout: in channels first)
   and an optional bias [Cout] (NN_NONE: none) -> [N, Cout, OH, OW],
   OH = (H-1)*stride_h - 2*pad_h + dilation_h*(KH-1) + output_pad_h + 1, and so for W. It
   is the gradient of conv2d with respect to its input. Zero fields: stride 1, padding 0,
   output padding 0, dilation 1, groups 1; output padding must be below the stride or the
   dilation. */
typedef struct nn_conv_transpose2d_desc {
    int stride_h, stride_w, pad_h, pad_w;
    int output_pad_h, output_pad_w; /* added to one side of the output (PyTorch's output_padding) */
    int dilation_h, dilation_w, groups;
    int no_bias;
} nn_conv_transpose2d_desc;
NN_API nn_tensor nn_conv_transpose2d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias,
                                     const nn_conv_transpose2d_desc *desc);

/* 3-D over x [N, C, D, H, W] (NCDHW, PyTorch's Conv3d) with w [K, C/groups, KD, KH, KW]
   and an optional bias [K] -> [N, K, OD, OH, OW],
   OD = (D + 2*pad_d - dilation_d*(KD-1) - 1) / stride_d + 1, and so on for H and W. */
typedef struct nn_conv3d_desc {
    int stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dilation_d, dilation_h, dilation_w, groups;
    int no_bias;
} nn_conv3d_desc;
NN_API nn_tensor nn_conv3d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv3d_desc *desc);

/* Pooling over x [N, C, H, W] (NCHW) with PyTorch's semantics. Zero fields mean: stride =
   the kernel size, padding 0, dilation 1, floor mode, count_include_pad=True. Output
   OH = floor_or_ceil((H + 2*pad_h - dilation_h*(kernel_h-1) - 1) / stride_h) + 1, where in
   ceil mode a last window that would start in the right padding is dropped. Padding is at
   most half the kernel; max pooling pads with -inf (a window with no input element gives
   -inf and no gradient) and sends the gradient to the first maximum in window order;
   average pooling has no dilation. */
typedef struct nn_pool2d_desc {
    int kernel_h, kernel_w;     /* the window, >= 1 (required) */
    int stride_h, stride_w;     /* 0: the kernel size */
    int pad_h, pad_w;           /* on both sides */
    int dilation_h, dilation_w; /* max pooling only; 0: 1 */
    int ceil_mode;              /* 1: ceil instead of floor in the output size */
    int exclude_pad;            /* average pooling: 1 divides by the input elements in the
                                   window alone (PyTorch's count_include_pad=False) */
} nn_pool2d_desc;
NN_API nn_tensor nn_max_pool2d(nn_graph *g, nn_tensor x, const nn_pool2d_desc *desc);
NN_API nn_tensor nn_avg_pool2d(nn_graph *g, nn_tensor x, const nn_pool2d_desc *desc);
/* The same over x [N, C, L] -> [N, C, OL]. */
typedef struct nn_pool1d_desc {
    int kernel, stride, pad, dilation, ceil_mode, exclude_pad; /* as nn_pool2d_desc */
} nn_pool1d_desc;
NN_API nn_tensor nn_max_pool1d(nn_graph *g, nn_tensor x, const nn_pool1d_desc *desc);
NN_API nn_tensor nn_avg_pool1d(nn_graph *g, nn_tensor x, const nn_pool1d_desc *desc);
/* [N, C, H, W] -> [N, C, 1, 1]: the mean or the maximum of each channel. */
NN_API nn_tensor nn_global_avg_pool2d(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_global_max_pool2d(nn_graph *g, nn_tensor x);
/* [N, C, H, W] -> [N, C, oh, ow] averaging PyTorch's bins: output row i covers input rows
   floor(i*H/oh) to ceil((i+1)*H/oh) - 1 (bins overlap when oh does not divide H). */
NN_API nn_tensor nn_adaptive_avg_pool2d(nn_graph *g, nn_tensor x, int64_t oh, int64_t ow);

/* ==== 10. Normalisation ====================================================================
   Batch, layer, group and instance norm, PyTorch's semantics, all with one desc,
   nn_norm_desc (NULL: the defaults). gamma (the weight) and beta (the bias) are optional:
   NN_NONE for none. The variance that normalises is the biased one (divided by n). */

/* eps: 0 is PyTorch's default 1e-5, NN_ZERO exactly 0. momentum (batch norm's running
   statistics; the others have none and ignore it): 0 is PyTorch's 0.1, NN_ZERO 0. */
typedef struct nn_norm_desc {
    float eps;
    float momentum;
    nn_tensor running_mean, running_var;  /* batch norm: [C] buffers (nn_buffer); both or
                                             neither (NN_NONE: no running statistics) */
    int no_bias;         /* nn_layer_norm_layer: 1 makes no NAME.bias (PyTorch's bias=False) */
} nn_norm_desc;

/* Batch norm over x [N, C], [N, C, L] or [N, C, H, W] (any [N, C, ...]) with gamma, beta
   and the running statistics [C]. Training graphs normalise with the statistics of the
   batch (N * spatial must be > 1) and, when running statistics are given, update them on
   the device at every run: running = (1 - momentum) * running + momentum * batch, with the
   unbiased variance for running_var. Evaluation graphs (nn_graph_desc.eval) normalise with
   the running statistics, or with the batch's when there are none (PyTorch's
   track_running_stats=False). Zero fields: momentum 0.1, eps 1e-5 (NN_ZERO: exactly 0). */
NN_API nn_tensor nn_batch_norm(nn_graph *g, nn_tensor x, nn_tensor gamma, nn_tensor beta, const nn_norm_desc *desc);
/* Layer norm over the trailing n_norm_dims dims of x (PyTorch's normalized_shape); gamma
   and beta have the shape of those dims. Arguments in F.layer_norm's order. x may be
   NN_BF16 or NN_F16: y and x's gradient are then of x's dtype, the statistics and every
   sum float32, gamma, beta and their gradients float32 (PyTorch's layer_norm on bf16
   tensors); under a precision policy x is first converted to the policy's type. */
NN_API nn_tensor nn_layer_norm(nn_graph *g, nn_tensor x, int n_norm_dims, nn_tensor gamma, nn_tensor beta, const nn_norm_desc *desc);
/* RMS norm (F.rms_norm) over the trailing n_norm_dims dims of x: y = x / sqrt(mean(x^2) +
   eps) * weight, the mean over those dims; weight (NN_NONE: none) has their shape. desc's
   eps: 0 is PyTorch's None, torch.finfo(float32).eps = 2^-23 (1.1920929e-07); NN_ZERO
   exactly 0. One fused op, forward and backward one pass per row on each backend. */
NN_API nn_tensor nn_rms_norm(nn_graph *g, nn_tensor x, int n_norm_dims, nn_tensor weight, const nn_norm_desc *desc);
/* Group norm over x [N, C, ...]: the C channels in `groups` groups of C/groups, each
   normalised over its channels and the spatial dims; gamma and beta [C], per channel.
   Arguments in F.group_norm's order. */
NN_API nn_tensor nn_group_norm(nn_graph *g, nn_tensor x, int groups, nn_tensor gamma, nn_tensor beta, const nn_norm_desc *desc);
/* Instance norm over x [N, C, L] or [N, C, H, W] (any [N, C, spatial...]): each channel of
   each sample normalised over its spatial dims (group norm with groups = C), of which there
   must be more than one value (PyTorch's check); gamma and beta [C]. Always the instance's
   statistics (PyTorch's track_running_stats=False). */
NN_API nn_tensor nn_instance_norm(nn_graph *g, nn_tensor x, nn_tensor gamma, nn_tensor beta, const nn_norm_desc *desc);

/* ==== 11. Losses ===========================================================================
   One name per loss, torch.nn.functional's with _loss (nn_mse_loss is F.mse_loss), each
   taking (prediction(s), target, const nn_loss_desc *desc) in F's order. desc NULL or
   zeroed: PyTorch's defaults, the reduction included: NN_REDUCTION_DEFAULT is the mean,
   except torchvision's sigmoid_focal_loss, whose default is none.
   NN_REDUCTION_NONE returns the per-element (or per-row) losses; SUM and MEAN a scalar [1];
   BATCHMEAN (KL divergence's recommended mode) the sum divided by the batch size (dim 0).
   A float option whose PyTorch default is not zero reads 0 as that default; pass
   NN_ZERO for an exact zero. Gradients flow to the prediction(s) only: targets,
   labels, class weights and pos_weight get none, except where a loss says otherwise. */
typedef enum nn_reduction {
    NN_REDUCTION_DEFAULT = 0, NN_REDUCTION_MEAN, NN_REDUCTION_SUM, NN_REDUCTION_NONE, NN_REDUCTION_BATCHMEAN
} nn_reduction;
typedef struct nn_loss_desc {
    nn_reduction reduction;
    float delta;           /* Huber's delta and smooth L1's beta (0: 1.0; smooth L1 with beta
                              NN_ZERO is L1) */
    float tau;             /* quantile level in (0, 1) (0: 0.5, the median) */
    float margin;          /* hinge (0: 1), triplet (0: 1), cosine embedding (default 0) */
    float label_smoothing; /* cross-entropy, in [0, 1] */
    float alpha;           /* focal: weight of positives (0: 0.25; negative: no weighting) */
    float gamma;           /* focal: focusing exponent (0: 2) */
    float smooth;          /* dice: added to numerator and denominator (0: 1) */
    int ignore_index;      /* cross-entropy / NLL: this label contributes nothing and is
                              not counted (0: -100, PyTorch's default; NN_ZERO: class 0) */
    nn_tensor weight;      /* cross-entropy / NLL: class weights [C]; elementwise losses: a
                              per-element rescaling of the target's shape or a trailing part
                              (NN_NONE: none) */
    nn_tensor pos_weight;  /* BCE with logits: weight of positives, [C] over the last dims
                              (NN_NONE: none) */
    int log_target;        /* KL divergence: the target is given as log-probabilities */
} nn_loss_desc;

/* Regression, pred and target of one shape: (p - t)^2; |p - t|; Huber (delta); smooth L1
   (beta = desc->delta); log(cosh(p - t)); quantile (pinball) max(tau*d, (tau-1)*d) with
   d = t - p. These six also give the target a gradient (minus the prediction's). */
NN_API nn_tensor nn_mse_loss(nn_graph *g, nn_tensor pred, nn_tensor target, const nn_loss_desc *desc);
NN_API nn_tensor nn_l1_loss(nn_graph *g, nn_tensor pred, nn_tensor target, const nn_loss_desc *desc);
NN_API nn_tensor nn_huber_loss(nn_graph *g, nn_tensor pred, nn_tensor target, const nn_loss_desc *desc);
NN_API nn_tensor nn_smooth_l1_loss(nn_graph *g, nn_tensor pred, nn_tensor target, const nn_loss_desc *desc);
NN_API nn_tensor nn_log_cosh_loss(nn_graph *g, nn_tensor pred, nn_tensor target, const nn_loss_desc *desc);
NN_API nn_tensor nn_quantile_loss(nn_graph *g, nn_tensor pred, nn_tensor target, const nn_loss_desc *desc);
/* Margin classification with targets +-1: max(0, margin - t*x) and its square. */
NN_API nn_tensor nn_hinge_loss(nn_graph *g, nn_tensor pred, nn_tensor target, const nn_loss_desc *desc);
NN_API nn_tensor nn_squared_hinge_loss(nn_graph *g, nn_tensor pred, nn_tensor target, const nn_loss_desc *desc);
/* Binary: BCE on probabilities (log clamped at -100 as PyTorch), BCE with logits (with
   pos_weight), and torchvision's sigmoid_focal_loss on logits (alpha, gamma; reduction
   none unless asked, as torchvision). */
NN_API nn_tensor nn_bce_loss(nn_graph *g, nn_tensor prob, nn_tensor target, const nn_loss_desc *desc);
NN_API nn_tensor nn_bce_with_logits_loss(nn_graph *g, nn_tensor logits, nn_tensor target, const nn_loss_desc *desc);
NN_API nn_tensor nn_sigmoid_focal_loss(nn_graph *g, nn_tensor logits, nn_tensor target, const nn_loss_desc *desc);
/* PyTorch's kl_div: input holds log-probabilities; target probabilities (log-probabilities
   with log_target). Use NN_REDUCTION_BATCHMEAN for the true KL divergence per sample. */
NN_API nn_tensor nn_kl_div_loss(nn_graph *g, nn_tensor input, nn_tensor target, const nn_loss_desc *desc);
/* logits [B, C] float32 and labels [B] int32, with class weights, ignore_index and label
   smoothing; the mean divides by the summed weights of the counted labels (PyTorch). NLL
   takes log-probabilities instead of logits. A label outside [0, C) other than ignore_index
   is an error, as in PyTorch: the op leaves its row out and counts it (on the device; no
   label is read out of bounds), and the next nn_tensor_read or nn_graph_finish of the
   graph returns NN_ERR_INVALID_ARGUMENT naming the loss and the count since the last
   report. */
NN_API nn_tensor nn_cross_entropy_loss(nn_graph *g, nn_tensor logits, nn_tensor labels, const nn_loss_desc *desc);
NN_API nn_tensor nn_nll_loss(nn_graph *g, nn_tensor log_probs, nn_tensor labels, const nn_loss_desc *desc);
/* Per row b of [B, ...]: soft dice 1 - (2*sum(p*t) + smooth) / (sum(p) + sum(t) + smooth),
   p probabilities; reduced over the batch. */
NN_API nn_tensor nn_dice_loss(nn_graph *g, nn_tensor prob, nn_tensor target, const nn_loss_desc *desc);
/* x1, x2 [B, D], target [B] float32 of +-1: 1 - cos (t = 1), max(0, cos - margin) (t = -1);
   gradients to x1 and x2. */
NN_API nn_tensor nn_cosine_embedding_loss(nn_graph *g, nn_tensor x1, nn_tensor x2, nn_tensor target, const nn_loss_desc *desc);
/* anchor, positive, negative [B, D]: max(0, |a - p + eps| - |a - n + eps| + margin), the
   2-norm with eps 1e-6 (PyTorch's pairwise_distance); gradients to all three. */
NN_API nn_tensor nn_triplet_margin_loss(nn_graph *g, nn_tensor anchor, nn_tensor positive, nn_tensor negative,
                                        const nn_loss_desc *desc);
/* sqrt(nn_mse_loss(pred, target, desc)): the root of the mean (desc's reduction: of the
   sum, or per element with NN_REDUCTION_NONE); its gradient is infinite or NaN where the
   loss is 0, as torch.sqrt's. */
NN_API nn_tensor nn_rmse_loss(nn_graph *g, nn_tensor pred, nn_tensor target, const nn_loss_desc *desc);
/* InfoNCE (NT-Xent one way, as CLIP's per side) on z1, z2 [B, D], row i of z2 the positive
   of row i of z1: rows L2-normalised (F.normalize, eps 1e-12), logits = z1n z2n^T /
   temperature (> 0), F.cross_entropy(logits, arange(B)), computed with no labels as
   mean_i(logsumexp_j logits[i, j] - logits[i, i]). Gradients to z1 and z2. */
/* desc: its reduction only (NONE: the [B] per-row losses; BATCHMEAN is refused). */
NN_API nn_tensor nn_info_nce_loss(nn_graph *g, nn_tensor z1, nn_tensor z2, float temperature, const nn_loss_desc *desc);

/* Shorthands, documented aliases kept for the examples' numbers: nn_softmax_cross_entropy
   is nn_cross_entropy_loss with a NULL desc but no ignore_index (every label must be in
   [0, C); others are errors, reported as nn_cross_entropy_loss's) and its mean taken as
   sum * (1/B); nn_mse is nn_mse_loss and nn_bce_with_logits nn_bce_with_logits_loss, each
   with a NULL desc. Each can differ from its desc form in the last bit (another order of
   the same operations); new code should use the desc forms. */
NN_API nn_tensor nn_softmax_cross_entropy(nn_graph *g, nn_tensor logits, nn_tensor labels);
NN_API nn_tensor nn_mse(nn_graph *g, nn_tensor pred, nn_tensor target);
NN_API nn_tensor nn_bce_with_logits(nn_graph *g, nn_tensor logits, nn_tensor target);

/* ==== 12. Layers ===========================================================================
   One rule: nn_X_layer(g, x, sizes..., const nn_X_desc *desc, const char *name) makes its
   parameters under NAME with PyTorch's names, layouts and initialisation (NAME.weight,
   NAME.bias, ...) and applies the op: sizes are what PyTorch's module takes besides the
   input's (out_features, out_channels, kernel sizes, n_centers), desc (NULL: PyTorch's
   defaults) its options, the same desc as the functional op where there is one; a layer
   that has no options yet takes no desc. Parameters are made once per name: a second call
   with the same name reuses them (their shapes must agree), and graphs made with
   share_params share them. The composed layers (SE, SwiGLU, highway, RBF, MoE) are short
   functions of the builders above (src/layers/layers.c): no op kinds of their own, their
   gradients the ops'. A layer taking x [..., D] runs its linear layers on the rows of x. */

/* A fully connected layer (PyTorch's nn.Linear): x [B, in] -> [B, out] with parameters
   NAME.weight [out, in] and NAME.bias [out] (PyTorch's names and layout), initialised as
   nn.Linear. */
typedef struct nn_linear_desc {
    int no_bias;         /* 1: no NAME.bias (PyTorch's bias=False) */
} nn_linear_desc;
NN_API nn_tensor nn_linear_layer(nn_graph *g, nn_tensor x, int64_t out_features, const nn_linear_desc *desc, const char *name);

/* nn.Conv1d/2d/3d: NAME.weight [out_channels, C/groups, k...] and NAME.bias
   [out_channels], both U(+-1/sqrt(fan_in)) as PyTorch initialises them. */
NN_API nn_tensor nn_conv1d_layer(nn_graph *g, nn_tensor x, int64_t out_channels, int kernel,
                                 const nn_conv1d_desc *desc, const char *name);
NN_API nn_tensor nn_conv2d_layer(nn_graph *g, nn_tensor x, int64_t out_channels, int kh, int kw,
                                 const nn_conv2d_desc *desc, const char *name);
NN_API nn_tensor nn_conv3d_layer(nn_graph *g, nn_tensor x, int64_t out_channels, int kd, int kh, int kw,
                                 const nn_conv3d_desc *desc, const char *name);

/* PyTorch's BatchNorm2d / BatchNorm1d modules: NAME.weight (ones), NAME.bias (zeros) and
   the buffers NAME.running_mean (zeros), NAME.running_var (ones), all [C]; desc's eps and
   momentum (zero: 1e-5 and 0.1), its running statistics left NN_NONE (the layer makes
   its own). 2d takes x [N, C, H, W]; 1d takes [N, C] or [N, C, L]. */
NN_API nn_tensor nn_batch_norm2d_layer(nn_graph *g, nn_tensor x, const nn_norm_desc *desc, const char *name);
NN_API nn_tensor nn_batch_norm1d_layer(nn_graph *g, nn_tensor x, const nn_norm_desc *desc, const char *name);
/* PyTorch's LayerNorm(normalized_shape = the trailing n_norm_dims dims of x) and
   RMSNorm(same, eps=None) modules: NAME.weight (ones) and, for LayerNorm, NAME.bias
   (zeros), both of those dims' shape; desc's eps (zero: 1e-5 for LayerNorm, 2^-23 for
   RMSNorm) and no_bias (LayerNorm's bias=False: no NAME.bias). */
NN_API nn_tensor nn_layer_norm_layer(nn_graph *g, nn_tensor x, int n_norm_dims, const nn_norm_desc *desc, const char *name);
NN_API nn_tensor nn_rms_norm_layer(nn_graph *g, nn_tensor x, int n_norm_dims, const nn_norm_desc *desc, const char *name);

/* PyTorch's nn.PReLU(num_parameters, init): NAME.weight [num_parameters], all init;
   num_parameters is 1 or the channels of x. */
typedef struct nn_prelu_desc {
    float init;          /* the slopes' first value (0: 0.25, PyTorch's; NN_ZERO: 0) */
} nn_prelu_desc;
NN_API nn_tensor nn_prelu_layer(nn_graph *g, nn_tensor x, int64_t num_parameters, const nn_prelu_desc *desc, const char *name);

/* Squeeze-and-excitation (Hu et al. 2018) on x [N, C, H, W]: the channel means, NAME.fc1
   (C -> max(1, C / reduction)), ReLU, NAME.fc2 (-> C), sigmoid, and x scaled by the result
   per channel. fc1 and fc2 are nn.Linear layers ([out, in] weights; torchvision's
   SqueezeExcitation stores the same numbers as 1x1 convolutions [out, in, 1, 1]). */
NN_API nn_tensor nn_se_layer(nn_graph *g, nn_tensor x, int reduction, const char *name);
/* The LLaMA feed-forward on x [..., D]: NAME.w2(silu(NAME.w1(x)) * NAME.w3(x)), w1 and w3
   [hidden, D], w2 [D, hidden], no biases (NAME.w1.weight, ...). */
NN_API nn_tensor nn_swiglu_layer(nn_graph *g, nn_tensor x, int64_t hidden, const char *name);
/* A highway layer (Srivastava et al. 2015) on x [..., D]: t * relu(H(x)) + (1 - t) * x,
   t = sigmoid(T(x)), H and T D -> D linear layers with biases (NAME.H.weight, NAME.H.bias,
   NAME.T.weight, NAME.T.bias, nn.Linear's initialisation; the paper starts T.bias
   negative, e.g. nn_tensor_fill(g, nn_graph_find(g, "NAME.T.bias"), -2) after compile). */
NN_API nn_tensor nn_highway_layer(nn_graph *g, nn_tensor x, const char *name);
/* Radial basis functions on x [B, D]: out[b, k] = exp(-gamma_k * ||x_b - c_k||^2) [B, K],
   K = n_centers, with NAME.centers [K, D] (N(0, 1) at first) and NAME.log_gamma [K]
   (gamma_k = exp(log_gamma_k), zeros at first: gamma 1). Costs B * K * D memory (the
   differences are formed whole). */
NN_API nn_tensor nn_rbf_layer(nn_graph *g, nn_tensor x, int64_t n_centers, const char *name);
/* Mixture of experts with top-k gating on x [B, D]: gate probabilities p = softmax(NAME.gate
   (x)) (a D -> E linear layer without bias), each row keeps its top_k largest (ties with
   the k-th largest are all kept), and the output is sum_e p[b, e] * kept[b, e] *
   expert_e(x_b), the kept probabilities not renormalised (Switch Transformer's gate value).
   Expert e is NAME.experts.e.fc1 (D -> hidden), ReLU, NAME.experts.e.fc2 (hidden -> D).
   aux_loss (NULL: none) receives Switch Transformer's load-balancing loss, a scalar:
   E * sum_e f_e * P_e, f_e = the fraction of rows that kept expert e (over the k slots, as
   Hugging Face's load_balancing_loss_func), P_e = the mean of p[:, e]; its gradient flows
   through P. By default every expert runs on every row (dense), so a step costs n_experts
   full feed-forwards, not top_k. With capacity_factor > 0 the rows are dispatched instead
   (GShard's and Switch Transformer's capacity): expert e runs on at most C = ceil(
   capacity_factor * top_k * B / n_experts) rows (at most B), the first C rows (in row
   order) that kept it; a row past the capacity gets nothing from that expert (it is
   dropped there, as in Switch Transformer); the results are summed back per row in expert
   order. Expert FLOPs then follow top_k / n_experts * capacity_factor; with C = B (no row
   dropped) the output is the dense one. The slots are made on the device (one pass over
   [B, E] per expert), no read-back, the same bits every run. */
typedef struct nn_moe_desc {
    nn_tensor *aux_loss;   /* receives the load-balancing loss (NULL: not made) */
    float capacity_factor; /* 0: dense (every expert on every row); > 0: dispatch (1.25 is
                              Switch Transformer's training value; n_experts / top_k: none
                              dropped) */
} nn_moe_desc;
NN_API nn_tensor nn_moe_layer(nn_graph *g, nn_tensor x, int64_t n_experts, int64_t top_k, int64_t hidden,
                              const nn_moe_desc *desc, const char *name);

/* Embeddings (torch.nn.Embedding, F.embedding): int32 indices [*] -> [*, embedding_dim],
   rows of a weight [num_embeddings, embedding_dim]. padding_idx: 0 none (PyTorch's None),
   NN_ZERO row 0, negative from the end; its row gets no gradient and nn_embedding
   initialises it to zeros, as PyTorch does. An index outside [0, num_embeddings) gives a
   row of zeros and is reported as the indexing ops' are (PyTorch raises). The weight's
   gradient sums the rows of dy by index over the segment sort (nn_segment_sum): linear in
   the index count, deterministic. A weight may also be used elsewhere (weight tying: an
   output head nn_matmul(h, weight, 0, 1)); its gradients add. A bf16 or f16 weight gives
   rows of its type (copied as they are; F.embedding on a model.to(bfloat16)), and its
   gradient is summed in float32 and rounded once to the weight's type. max_norm and
   scale_grad_by_freq are left out. */
typedef struct nn_embedding_desc {
    int padding_idx;
} nn_embedding_desc;
/* NAME.weight [num_embeddings, embedding_dim], initialised N(0, 1) */
NN_API nn_tensor nn_embedding(nn_graph *g, nn_tensor indices, int64_t num_embeddings, int64_t embedding_dim,
                              const nn_embedding_desc *desc, const char *name);
NN_API nn_tensor nn_embedding_lookup(nn_graph *g, nn_tensor weight, nn_tensor indices, const nn_embedding_desc *desc);
/* ---- Recurrent layers and cells (src/ops/recurrent.c) --------------------------------------
   PyTorch's nn.RNN, nn.LSTM and nn.GRU, and their single-step cells, with PyTorch's math,
   parameter names, layouts and initialisation (every parameter U(+-1/sqrt(hidden_size))),
   so that a state dict of theirs loads as it is. Gate order: LSTM i, f, g, o; GRU r, z, n
   with the reset gate applied after the hidden product,
   n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h. The input
   projection of all time steps is one matrix product; each time step is one product of
   the state and one fused gate kernel (backward: one gate kernel and the products), the
   recurrent weights' gradients one product over all steps. */
typedef enum nn_rnn_nonlinearity {
    NN_RNN_TANH = 0,     /* PyTorch's default */
    NN_RNN_RELU = 1
} nn_rnn_nonlinearity;

/* nn_rnn, nn_lstm and nn_gru's options and extra inputs and outputs (NULL: PyTorch's
   defaults: one layer, one direction, [T, B, I] input, no dropout, biases, zero initial
   states, all sequences of length T, no final states made). */
typedef struct nn_rnn_desc {
    int num_layers;      /* stacked layers (0: 1; at most 32); layer k > 0 takes layer k - 1's output */
    int bidirectional;   /* 1: each layer also runs backwards in time (parameters
                            ..._l{k}_reverse); outputs concatenate forward then reverse */
    int batch_first;     /* 1: x is [B, T, I] and the output [B, T, D * Hout]; 0: [T, B, ...].
                            The states are [L * D, B, H] either way, as PyTorch's */
    float dropout;       /* dropout on each layer's output but the last's, while training */
    int no_bias;         /* 1: no bias_ih_l{k} / bias_hh_l{k} (PyTorch's bias=False) */
    nn_rnn_nonlinearity nonlinearity; /* nn_rnn only */
    int64_t proj_size;   /* nn_lstm only (0: none): h = W_hr (o * tanh(c)), weight_hr_l{k}
                            [proj_size, hidden_size]; Hout = proj_size, else hidden_size */
    nn_tensor h0;        /* initial hidden state [L * D, B, Hout] (NN_NONE: zeros) */
    nn_tensor c0;        /* nn_lstm's initial cell state [L * D, B, hidden_size] (NN_NONE: zeros) */
    nn_tensor lengths;   /* int32 [B], each in [1, T] (NN_NONE: all T): PyTorch's packed
                            sequences: a sequence's states stop after its length, its outputs
                            there are 0, and the reverse direction starts at its own last
                            element; h_n / c_n are each sequence's states at its length. Values
                            outside [1, T] (PyTorch raises) are counted and reported by the next
                            nn_tensor_read / nn_graph_finish (NN_ERR_INVALID_ARGUMENT); meanwhile
                            one <= 0 keeps its initial states, one > T runs all T steps */
    nn_tensor *h_n;      /* receives the final hidden states [L * D, B, Hout] (NULL: not made) */
    nn_tensor *c_n;      /* nn_lstm: receives the final cell states [L * D, B, hidden_size] */
    int stateful;        /* 1: truncated backpropagation through time. The initial states are
                            tensors the graph keeps on the device, NAME.h_state [L * D, B, Hout]
                            and nn_lstm's NAME.c_state [L * D, B, hidden_size] (zeros at
                            compile); each run starts from them and, after its forward part,
                            writes its final states (h_n, c_n) into them on the device (no
                            transfer). No gradient flows into them: backpropagation stops at
                            the run's first step (PyTorch: h = h.detach() between chunks).
                            h0 and c0 must be NN_NONE. Zero them with nn_rnn_reset_state;
                            nn_graph_find(g, "NAME.h_state") gives the tensor to read, write
                            or fill (one row, a sequence: nn_tensor_write). They are not
                            parameters: the save and load functions leave them out */
} nn_rnn_desc;

/* The layers on x [T, B, I] ([B, T, I] with batch_first) -> the last layer's hidden states
   at every step [T, B, D * Hout] (D = 2 when bidirectional, else 1). Parameters under
   NAME: weight_ih_l{k} [G * H, I_k], weight_hh_l{k} [G * H, Hout], bias_ih_l{k} [G * H],
   bias_hh_l{k} [G * H] (G = 1, 4, 3 for RNN, LSTM, GRU; I_0 = I, I_k = D * Hout), with
   _reverse twins, and nn_lstm's weight_hr_l{k} [proj_size, H]: "NAME.weight_ih_l0", as
   PyTorch's state dict keys. */
NN_API nn_tensor nn_rnn(nn_graph *g, nn_tensor x, int64_t hidden_size, const nn_rnn_desc *desc, const char *name);
NN_API nn_tensor nn_lstm(nn_graph *g, nn_tensor x, int64_t hidden_size, const nn_rnn_desc *desc, const char *name);
NN_API nn_tensor nn_gru(nn_graph *g, nn_tensor x, int64_t hidden_size, const nn_rnn_desc *desc, const char *name);
/* Zeros the carried states of the stateful layer NAME (nn_rnn_desc.stateful), on the
   device, e.g. at an epoch's start: the next run starts from zero states, as the first. */
NN_API nn_result nn_rnn_reset_state(nn_graph *g, const char *name);

/* One direction of a recurrent layer, for nn_bidirectional: x in its layout (time, batch,
   features... as the caller gave it), lengths NN_NONE or int32 [B] (pass them on, e.g. as
   nn_rnn_desc.lengths), parameters under name -> the outputs at every step, x's time and
   batch dims first (in x's order) and features after. user is nn_bidirectional's. */
typedef nn_tensor (*nn_rnn_direction_fn)(nn_graph *g, nn_tensor x, nn_tensor lengths, const char *name, void *user);
/* A bidirectional wrapper (Keras' Bidirectional; PyTorch's bidirectional=True as a
   function of any layer): fn's layer over x forward in time (parameters under NAME), and
   over x with each sequence reversed (NAME_reverse), its output reversed back;
   concatenated along dim 2 (the features: [T, B, Hf + Hr], or [B, T, Hf + Hr] with
   batch_first; a ConvLSTM's [B, T, Cf + Cr, H, W]). x is [T, B, ...] ([B, T, ...]). With
   lengths (int32 [B] in [1, T]), PyTorch's packed-sequence semantics: the reverse direction
   starts at each sequence's own last element, steps past a length stay where they are
   (fn gets the lengths: nn_rnn_desc.lengths then zeroes them). Gradients flow through the
   reversals. For nn_rnn / nn_lstm / nn_gru themselves, nn_rnn_desc.bidirectional is the
   same math in fewer nodes (parameter names ..._reverse instead). */
NN_API nn_tensor nn_bidirectional(nn_graph *g, nn_tensor x, nn_tensor lengths, int batch_first, nn_rnn_direction_fn fn, void *user,
                                  const char *name);

/* ConvLSTM2D (Shi et al. 2015, without peepholes, as the common PyTorch ConvLSTM and Keras'
   ConvLSTM2D): x [B, T, C, H, W] -> the hidden states of every step [B, T, hidden, H, W].
   Per step the gates are one convolution over concat(x_t, h_{t-1}) along channels,
   kernel_size square, stride 1, 'same' padding (kernel_size / 2), gate order i, f, g, o as
   nn_lstm's (the common PyTorch ConvLSTM splits i, f, o, g: swap its weight's and bias's
   last two blocks of hidden rows); c = f * c + i * g (g = tanh), h = o * tanh(c).
   Parameters NAME.conv.weight [4 * hidden, C + hidden, k, k] and NAME.conv.bias
   [4 * hidden], U(+-1/sqrt((C + hidden) k k)) as nn.Conv2d's. Built unrolled over T (at
   most 4096 steps) of conv2d and elementwise ops; nn_bidirectional (batch_first 1) makes it
   bidirectional. */
typedef struct nn_conv_lstm_desc {
    int kernel_size;     /* odd, in [1, 31] (0: 3) */
    int no_bias;         /* 1: no NAME.conv.bias */
    nn_tensor h0, c0;    /* initial states [B, hidden, H, W] (NN_NONE: zeros) */
    nn_tensor *h_n, *c_n; /* receive the final states [B, hidden, H, W] (NULL: not made) */
} nn_conv_lstm_desc;
NN_API nn_tensor nn_conv_lstm2d(nn_graph *g, nn_tensor x, int64_t hidden_channels, const nn_conv_lstm_desc *desc,
                                const char *name);

/* The cells' options (NULL: biases, tanh). */
typedef struct nn_rnn_cell_desc {
    int no_bias;         /* 1: no NAME.bias_ih / NAME.bias_hh */
    nn_rnn_nonlinearity nonlinearity; /* nn_rnn_cell only */
} nn_rnn_cell_desc;

/* One step, PyTorch's nn.RNNCell, nn.LSTMCell and nn.GRUCell: x [B, I], h [B, H] (NN_NONE:
   zeros) -> h' [B, H]; nn_lstm_cell also takes c [B, H] (NN_NONE: zeros) and writes c'
   [B, H] to *c_out (NULL: not made). Parameters NAME.weight_ih [G * H, I],
   NAME.weight_hh [G * H, H], NAME.bias_ih [G * H], NAME.bias_hh [G * H]. */
NN_API nn_tensor nn_rnn_cell(nn_graph *g, nn_tensor x, nn_tensor h, int64_t hidden_size,
                             const nn_rnn_cell_desc *desc, const char *name);
NN_API nn_tensor nn_lstm_cell(nn_graph *g, nn_tensor x, nn_tensor h, nn_tensor c, int64_t hidden_size,
                              const nn_rnn_cell_desc *desc, const char *name, nn_tensor *c_out);
NN_API nn_tensor nn_gru_cell(nn_graph *g, nn_tensor x, nn_tensor h, int64_t hidden_size,
                             const nn_rnn_cell_desc *desc, const char *name);

/* The output at each sequence's last valid step, for classifiers: y [T, B, F] ([B, T, F]
   with batch_first), lengths int32 [B] in [1, T] -> [B, F], row b = y[lengths[b] - 1, b]
   (PyTorch: y[lengths - 1, arange(B)]). For a bidirectional layer's output this is the
   forward direction's last state beside the reverse direction's output at that step.
   Lengths outside [1, T] are clamped there, counted and reported as nn_rnn_desc.lengths'. */
NN_API nn_tensor nn_last_valid(nn_graph *g, nn_tensor y, nn_tensor lengths, int batch_first);
/* ---- Transformers (src/layers/transformer.c) ----
   nanoGPT's GPT (Karpathy's model.py, GPT-2's layout): parameters named as its state dict,
   PREFIX.transformer.wte.weight [vocab_size, n_embd], .wpe.weight [block_size, n_embd],
   .h.{i}.ln_1.{weight,bias}, .h.{i}.attn.c_attn.{weight [3C, C], bias [3C]} (q | k | v),
   .h.{i}.attn.c_proj [C, C], .h.{i}.ln_2, .h.{i}.mlp.c_fc [4C, C], .h.{i}.mlp.c_proj
   [C, 4C], .ln_f; lm_head.weight is wte's (tied: one parameter, the sum of both gradients;
   a PyTorch state dict's lm_head.weight is the same tensor). Initialised as nanoGPT: every
   weight N(0, 0.02), the c_proj weights N(0, 0.02 / sqrt(2 n_layer)), biases zeros, layer
   norms ones and zeros. GELU is the exact one (nn.GELU()). Attention is nn_attention's
   (fused: no [T, T] matrix per head is stored). */
typedef struct nn_gpt_config {
    int64_t vocab_size;  /* tokens */
    int64_t block_size;  /* context length (positions) */
    int n_layer, n_head;
    int64_t n_embd;      /* width, divisible by n_head */
    float dropout;       /* nanoGPT's dropout (0: none; the identity in eval graphs) */
    int no_bias;         /* nanoGPT's bias=False: no Linear and LayerNorm biases */
    const char *name;    /* a prefix for the parameter names (NULL or "": none) */
} nn_gpt_config;
/* The model: idx int32 [B, T] (T <= block_size) -> logits [B*T, vocab_size] (rows in
   (b, t) order, ready for nn_softmax_cross_entropy against the targets as [B*T]). */
NN_API nn_tensor nn_gpt(nn_graph *g, nn_tensor idx, const nn_gpt_config *cfg);
/* One block, x [B, T, n_embd] -> [B, T, n_embd] with the causal mask: x + attn(ln_1(x)),
   then + mlp(ln_2(.)); parameters NAME.ln_1 ... as above. */
NN_API nn_tensor nn_gpt_block(nn_graph *g, nn_tensor x, const nn_gpt_config *cfg, const char *name);
/* Generation, one token per run: idx int32 [B] (the current token of each sequence) at
   position pos (int32 [1], the same for every sequence, 0 <= pos < block_size) -> logits
   [B, vocab_size] of the next token, against a key/value cache held on the device: per
   layer a key and a value tensor [B, n_head, block_size, n_embd / n_head] (running sums,
   nn_accumulate: each run adds the new key and value at slot pos, zero elsewhere), so a run
   costs one token's work plus the attention over the cache, never the context again. The
   caches start at zero; before a new sequence (pos 0 again) zero them with nn_tensor_fill
   (caches, NULL or 2 * n_layer tensors, receives them: key of layer i at 2i, value at
   2i + 1). Positions must be run in order 0, 1, 2, ... Use an eval graph made with
   share_params of the trained one; parameter names as nn_gpt's. */
NN_API nn_tensor nn_gpt_decode(nn_graph *g, nn_tensor idx, nn_tensor pos, const nn_gpt_config *cfg, nn_tensor *caches);
/* The prompt (or the window kept when the context is full) in one pass: nn_gpt's graph on
   idx int32 [B, T] (T <= block_size; logits [B*T, V], bitwise nn_gpt's: row (b, T - 1)
   gives the token after the window) whose blocks also hand out their keys and values in the
   cache's layout: caches (2 * n_layer tensors, required) receives, as outputs of g, the key
   of layer i at 2i and its value at 2i + 1, each [B, n_head, block_size, n_embd / n_head]
   float32: the T positions' rows, then zeros. Copy them into nn_gpt_decode's caches (read
   each, nn_tensor_write it there: the decode's caches are running sums, so the zeros after
   T are what its next runs add to) and decode on from pos T: one run instead of T
   one-token runs. A graph has one T: build one per window length (eval, share_params of
   the trained graph, as nn_gpt_decode's). */
NN_API nn_tensor nn_gpt_prefill(nn_graph *g, nn_tensor idx, const nn_gpt_config *cfg, nn_tensor *caches);
/* PyTorch's nn.MultiheadAttention(embed_dim, num_heads, dropout, bias, kdim, vdim,
   batch_first) called
   as forward(query, key, value, key_padding_mask, need_weights=False, attn_mask,
   is_causal): query [T, B, E] ([B, T, E] with batch_first), key and value [S, B, E] (one
   shape but the last) -> [T, B, E]. Parameters NAME.in_proj_weight [3E, E] (q | k | v rows,
   Xavier uniform), NAME.in_proj_bias [3E] (zeros), NAME.out_proj.weight [E, E] (nn.Linear's
   init), NAME.out_proj.bias [E] (zeros); no_bias: none of the biases. With kdim or vdim
   other than E (key [S, B, kdim], value [S, B, vdim]) the projections are separate, as
   PyTorch's: NAME.q_proj_weight [E, E], NAME.k_proj_weight [E, kdim], NAME.v_proj_weight
   [E, vdim] (Xavier uniform) instead of in_proj_weight; in_proj_bias as before. Masks as PyTorch's:
   key_padding_mask [B, S], int32 (PyTorch's bool: nonzero where a key is padding, left out)
   or float32 (added to the scores, -inf hides; it gets a gradient); attn_mask [T, S] or
   [B*num_heads, T, S], float32 added to the scores (-inf hides; it gets a gradient) or int32
   as PyTorch's bool attn_mask (nonzero: not attended; an int32 attn_mask wants an int32
   key_padding_mask, if any);
   is_causal hides the keys after each query (top-left aligned). The weights are not
   returned (need_weights=False). The attention is nn_attention's (fused; both float masks
   given: their sum [B, H or 1, T, S] is formed, as PyTorch does). */
typedef struct nn_mha_desc {
    float dropout;                /* on the attention weights (0: none, PyTorch's default) */
    int no_bias;                  /* PyTorch's bias=False */
    int batch_first;              /* 1: [B, T, E] tensors */
    nn_tensor key_padding_mask;   /* NN_NONE: none */
    nn_tensor attn_mask;          /* NN_NONE: none */
    int is_causal;
    int64_t kdim, vdim;           /* key's and value's feature sizes (0: embed_dim) */
} nn_mha_desc;
NN_API nn_tensor nn_multihead_attention(nn_graph *g, nn_tensor query, nn_tensor key, nn_tensor value, int64_t embed_dim,
                                        int num_heads, const nn_mha_desc *desc, const char *name);
/* PyTorch's nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
   layer_norm_eps, batch_first, norm_first) and nn.TransformerDecoderLayer, with their names:
   NAME.self_attn.* (nn_multihead_attention's), NAME.linear1 [dim_feedforward, d_model],
   NAME.linear2 [d_model, dim_feedforward], NAME.norm1, NAME.norm2 (weight, bias), and for
   the decoder NAME.multihead_attn.* (attention over memory) and NAME.norm3. Post-norm
   (PyTorch's default): x = norm1(x + sa(x)), x = norm2(x + ff(x)); norm_first: x = x +
   sa(norm1(x)), x = x + ff(norm2(x)) (the decoder's cross-attention between, with norm2;
   its feed-forward with norm3). Dropout after each sub-block, inside the feed-forward and on
   the attention weights (PyTorch's places). src / tgt [T, B, E] ([B, T, E] with
   batch_first), memory [S, B, E]; masks as nn_multihead_attention's. The stacks
   (nn.TransformerEncoder / Decoder without a final norm) name their layers NAME.layers.{i}. */
typedef struct nn_transformer_desc {
    int64_t dim_feedforward;      /* 0: 2048 */
    float dropout;                /* 0: 0.1 (PyTorch's); NN_ZERO: none */
    int activation;               /* 0: relu, 1: gelu (exact) */
    float layer_norm_eps;         /* 0: 1e-5; NN_ZERO: 0 */
    int batch_first, norm_first;
    nn_tensor src_mask, src_key_padding_mask;  /* encoder */
    int is_causal;                             /* encoder: src_mask is causal */
    nn_tensor tgt_mask, tgt_key_padding_mask;  /* decoder's self-attention */
    int tgt_is_causal;
    nn_tensor memory_mask, memory_key_padding_mask; /* decoder's cross-attention */
} nn_transformer_desc;
NN_API nn_tensor nn_transformer_encoder_layer(nn_graph *g, nn_tensor src, int64_t d_model, int nhead,
                                              const nn_transformer_desc *desc, const char *name);
NN_API nn_tensor nn_transformer_decoder_layer(nn_graph *g, nn_tensor tgt, nn_tensor memory, int64_t d_model, int nhead,
                                              const nn_transformer_desc *desc, const char *name);
NN_API nn_tensor nn_transformer_encoder(nn_graph *g, nn_tensor src, int num_layers, int64_t d_model, int nhead,
                                        const nn_transformer_desc *desc, const char *name);
NN_API nn_tensor nn_transformer_decoder(nn_graph *g, nn_tensor tgt, nn_tensor memory, int num_layers, int64_t d_model, int nhead,
                                        const nn_transformer_desc *desc, const char *name);
/* ViT's patch embedding (timm's PatchEmbed and VisionTransformer's tokens): x [B, C, H, W]
   (H and W multiples of patch_size P) -> a convolution of kernel = stride = P,
   NAME.proj.weight [E, C, P, P] and NAME.proj.bias [E] (nn.Conv2d's init), flattened to
   [B, N, E], N = (H/P)(W/P), patches in row-major order (flatten(2).transpose(1, 2));
   class_token: a learned cls_token [1, 1, E] (N(0, 1e-6), timm's) first, [B, N + 1, E];
   pos_embed: a learned pos_embed [1, N (+1), E] (N(0, 0.02); timm truncates at 2 std)
   added. cls_token and pos_embed are named at the model's root as timm's
   (`cls_token`, `pos_embed`), or PREFIX.cls_token with desc->prefix. */
typedef struct nn_patch_embedding_desc {
    int class_token;    /* 1: a cls_token first */
    int pos_embed;      /* 1: a learned position embedding added */
    const char *prefix; /* NULL or "": cls_token and pos_embed at the root */
} nn_patch_embedding_desc;
NN_API nn_tensor nn_patch_embedding(nn_graph *g, nn_tensor x, int patch_size, int64_t embed_dim,
                                    const nn_patch_embedding_desc *desc, const char *name);

/* ==== 13. Random ops and dropout =========================================================
   Samples drawn on the device, PyTorch's names and semantics. The generator is counter-based
   (Philox4x32-10, Salmon et al., SC'11): element i of a random op takes the words of counter
   (i, the op's key, the graph's step) under the graph's seed (nn_graph_desc.seed), and turns
   them into a sample with arithmetic that every backend rounds the same way. Guarantees:
   - the CPU and OpenCL backends give the same bits (no math library calls; see
     kernels/random.h), except under -ffast-math / -cl-fast-relaxed-math, x87 extended
     precision, and subnormal inputs of gaussian noise and alpha dropout on devices that
     flush them;
   - every nn_graph_step draws afresh (the step counter is part of the counter);
     nn_graph_forward does not advance the step, so forwards between two steps repeat the
     last step's draw (the first forwards, before any step, draw step 0);
   - the same seed and the same graph built in the same order (the key is the op's node
     id) give the same sequence, in any graph, on any backend, with any thread count;
   - training state saved and loaded (nn_graph_save_state) carries the step, so a resumed run
     draws what the original would have.
   Uniforms are multiples of 2^-24 in [0, 1); normals are Box-Muller (one of the pair) on
   24-bit uniforms, so |z| <= 5.77 (the tail beyond it, 8e-9 of the mass, is cut). */

/* torch.rand / torch.randn: float32 uniform in [0, 1) / standard normal, of the given shape;
   the _like forms take x's shape (x float32, its values unused). Not differentiable. */
NN_API nn_tensor nn_rand(nn_graph *g, nn_shape shape);
NN_API nn_tensor nn_randn(nn_graph *g, nn_shape shape);
NN_API nn_tensor nn_rand_like(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_randn_like(nn_graph *g, nn_tensor x);
/* torch.randint(low, high, shape): int32 (not int64) uniform in [low, high); needs
   INT32_MIN <= low < high <= INT32_MAX + 1. Each value is (a 64-bit word) mod (high - low),
   so its probability is 1/(high - low) within a relative 2^-32. */
NN_API nn_tensor nn_randint(nn_graph *g, int64_t low, int64_t high, nn_shape shape);
/* torch.bernoulli(p): float32 1 with probability p[i] (rounded up to a multiple of 2^-24),
   else 0; the shape of p. Not differentiable. p outside [0, 1] (or NaN), which PyTorch
   raises on, is counted and reported by the next nn_tensor_read / nn_graph_finish. */
NN_API nn_tensor nn_bernoulli(nn_graph *g, nn_tensor p);
/* x + std * N(0, 1) in training graphs, x itself in eval graphs (and for std 0); the
   gradient is 1. std: finite, >= 0. */
NN_API nn_tensor nn_gaussian_noise(nn_graph *g, nn_tensor x, float std);
/* torch.nn.AlphaDropout (F.alpha_dropout, training=True) in training graphs, the identity
   in eval graphs: keeps each element with probability 1 - p, dropped elements take SELU's
   negative saturation -alpha (alpha = 1.7580993408473766), then all get the affine a x + b,
   a = 1/sqrt((alpha^2 p + 1)(1 - p)), b = alpha a p, which keeps zero mean and unit
   variance. Gradient: dy * mask * a (PyTorch's). p in [0, 1]; p = 1 gives x * 0. */
NN_API nn_tensor nn_alpha_dropout(nn_graph *g, nn_tensor x, float p);
/* Dropout with probability p in training graphs (identity in eval graphs); the mask comes
   from the generator above keyed by seed, op and step, so every backend draws the same
   mask. A bf16 or f16 x gives y (and dx) of its type: x * scale in float32, rounded once. */
NN_API nn_tensor nn_dropout(nn_graph *g, nn_tensor x, float p);

/* A token id per row of logits [B, V] (float32), drawn on the device: int32 [B], not
   differentiable. The usual sampling of HF's generate and nanoGPT: logits * (1 /
   temperature) (the reciprocal rounded to float, then a product: PyTorch divides), then
   top-k (keep the logits >= the k-th largest: ties with it stay, as HF's), then top-p on
   the softmax of what is left (keep the largest probabilities whose sum reaches top_p of
   the mass: a token stays when the mass strictly above it is < top_p, so at least one;
   ties with the last one stay), then one draw from the renormalised probabilities. A
   temperature of 0 (the zeroed desc: HF's default do_sample=False) is greedy: the first
   index of the largest logit, as torch.argmax. Non-finite logits (no error is raised):
   NaN counts as -inf (never drawn while a logit is finite or +inf; greedy skips it where
   torch.argmax would take it); the +inf logits share the whole mass equally (PyTorch's
   multinomial raises on the NaN softmax); a row of only NaN and -inf draws each of its V
   tokens with probability 1/V (greedy: index 0). The draw's
   uniform is the Philox word of counter (row, the op's key, the graph's run count: every
   nn_graph_forward or nn_graph_step is a run) under the graph's seed, and the
   probabilities use only exactly rounded arithmetic in a fixed order (kernels/random.h),
   so the CPU and OpenCL backends draw the same token, and each run draws afresh with no
   recompiling; one work-group per row on a device. */
typedef struct nn_sample_desc {
    float temperature;   /* 0 (and NN_ZERO): greedy; else > 0, finite */
    int top_k;           /* 0: off (every token) */
    float top_p;         /* 0: 1 (off); in [0, 1], NN_ZERO 0: the most likely token(s) only */
} nn_sample_desc;
NN_API nn_tensor nn_sample_logits(nn_graph *g, nn_tensor logits, const nn_sample_desc *desc);

/* ==== positions (transformers) ============================================================
   Learned positional embeddings are a parameter added with broadcasting, nothing more:
       nn_tensor wpe = nn_param(g, "transformer.wpe.weight", nn_shape2(T, D), init);
       h = nn_add(g, tok_emb, wpe);              (tok_emb [B, T, D] + wpe [T, D])
   (tests/test_rope.c trains one). */

/* The fixed encodings of "Attention is all you need" as the PyTorch tutorials write them:
   pe[t, 2i] = sin(t / 10000^(2i/D)), pe[t, 2i + 1] = cos(t / 10000^(2i/D)), float32
   [T, D] (odd D: the last column is a sin), computed once at compile time in double and
   rounded (PyTorch's tutorial computes in float32: within a few ulp of it). A constant. */
NN_API nn_tensor nn_sinusoidal_positions(nn_graph *g, int64_t T, int64_t D);

/* Rotary position embeddings (RoPE, Su et al.) of x [B, H, T, D] (or [B, T, H, D] with
   bthd), q or k of attention: the token at position p has its first rot_dim dims turned
   in pairs, pair i by angle p * theta^(-2i / rot_dim) (the angle in float32, as HF's
   rotary embeddings): y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin. Pairs are GPT-NeoX's and
   LLaMA's halves (x1 = x[i], x2 = x[i + rot_dim/2], HF's rotate_half) by default, GPT-J's
   neighbours (x[2i], x[2i + 1]) with interleaved. Positions: positions[t] (int32 [T]) or
   positions[b, t] (int32 [B, T], HF's position_ids), else t; offset is added to each (a
   generation step with a cache of `offset` tokens). The gradient is the inverse rotation;
   positions get none. NaN and infinities go through PyTorch's products: a NaN makes its
   pair's two outputs NaN, an infinity its own output infinite and its partner's NaN at
   angle 0 (inf * sin 0), else infinite (NaN where two infinities meet); the gradient stays
   finite. */
typedef struct nn_rope_desc {
    float theta;         /* the base: 0 is 10000 (must be > 1) */
    int rot_dim;         /* 0: D; else even, <= D (partial rotary: the rest is copied) */
    int interleaved;     /* 1: GPT-J's pairs (2i, 2i + 1) */
    int bthd;            /* 1: x is [B, T, H, D] */
    int offset;          /* added to every position (>= 0) */
    nn_tensor positions; /* NN_NONE, or int32 [T] or [B, T] */
} nn_rope_desc;
NN_API nn_tensor nn_rope(nn_graph *g, nn_tensor x, const nn_rope_desc *desc);

/* ==== 14. Optimizers, schedules and compiling ==============================================
   torch.optim's optimizers and lr_scheduler's schedules, as options of nn_graph_compile
   (nn_compile_desc): the optimizer's update runs on the device after each backward. */

typedef enum nn_optimizer_kind {
    NN_OPT_NONE = 0, /* compute gradients only */
    NN_OPT_SGD,
    NN_OPT_ADAM,     /* amsgrad: AMSGrad */
    NN_OPT_ADAMW,    /* amsgrad: AMSGrad with decoupled decay */
    NN_OPT_ADAMAX,
    NN_OPT_NADAM,
    NN_OPT_RADAM,
    NN_OPT_RMSPROP,
    NN_OPT_ADAGRAD,
    NN_OPT_ADADELTA,
    NN_OPT_LION,     /* Chen et al. 2023 (lucidrains/lion-pytorch) */
    NN_OPT_LAMB,     /* You et al. 2019 as timm's Lamb, trust ratio always applied */
    NN_OPT_LARS,     /* You et al. 2017 as timm's Lars, trust ratio always applied */
    NN_OPT_FTRL      /* FTRL-Proximal as TensorFlow's Ftrl (alpha is lr) */
} nn_optimizer_kind;

/* torch.optim's semantics and defaults; every zero field takes the default, and NN_ZERO
   asks for an exact 0 (weight_decay = NN_ZERO: AdamW without decay; beta1 = NN_ZERO):
     lr: 1e-2 SGD, RMSprop, Adagrad; 2e-3 Adamax, NAdam; 1.0 AdaDelta, LARS; 1e-4 Lion;
         1e-3 the others (Adam, AdamW, RAdam, LAMB, FTRL)
     beta1, beta2: 0.9, 0.999 (Lion: 0.9, 0.99)
     eps: 1e-8; 1e-10 Adagrad; 1e-6 AdaDelta, LAMB
     weight_decay: 0, but 1e-2 for AdamW: L2 into the gradient, except decoupled
         (p *= 1 - lr*wd) for AdamW, Lion, and NAdam/RAdam with decoupled_weight_decay;
         LAMB and LARS add it to the update before the trust ratio; FTRL ignores it (l2)
     alpha 0.99 (RMSprop), rho 0.9 (AdaDelta), momentum_decay 4e-3 (NAdam),
     trust_coef 1e-3 (LARS), lr_power -0.5 and initial_accumulator_value 0.1 (FTRL;
     Adagrad's is 0). Clipping acts on the (accumulated, averaged) gradient: first the
   global L2 norm (clip_norm), then each element (clip_value). */
typedef struct nn_optimizer {
    nn_optimizer_kind kind;
    float lr;
    float momentum, dampening; /* SGD, RMSprop (momentum), LARS */
    int nesterov;              /* SGD, LARS */
    float weight_decay;
    float beta1, beta2, eps;   /* the Adam family, Lion, LAMB */
    float clip_norm;           /* > 0: scale gradients to this global L2 norm at most */
    /* added with the optimizer family (zero: the default above) */
    float clip_value;          /* > 0: clamp each gradient element to [-clip_value, clip_value] */
    int amsgrad;               /* Adam, AdamW */
    int decoupled_weight_decay;/* NAdam, RAdam: AdamW-style decay */
    float momentum_decay;      /* NAdam */
    float alpha;               /* RMSprop's smoothing constant */
    int centered;              /* RMSprop */
    float lr_decay;            /* Adagrad */
    float initial_accumulator_value; /* Adagrad, FTRL */
    float rho;                 /* AdaDelta */
    float trust_coef;          /* LARS */
    float l1, l2, beta;        /* FTRL: l1, l2 regularisation strengths and beta */
    float lr_power;            /* FTRL; 0: -0.5 */
    int no_decay_1d;           /* no weight decay on parameters of one dimension (biases, norms) */
    int accumulate_steps;      /* > 1: average gradients over this many nn_graph_step calls and
                                  update on every k-th (nn_graph_grad then reads the running mean);
                                  0: 1; below 1: an invalid argument */
    int skip_nonfinite;        /* 1: an update whose (clipped, accumulated) gradients hold a NaN
                                  or an Inf is skipped, as torch.cuda.amp.GradScaler skips
                                  optimizer.step(): every parameter and optimizer state stays
                                  as it was. Decided on the device, with no read-back; the
                                  skips are counted (nn_graph_skipped_steps). Unlike PyTorch,
                                  the update count (the schedule's t, Adam's bias corrections)
                                  still advances on a skipped update. */
    int stochastic_rounding;   /* 1: bfloat16 parameters (nn_graph_desc.param_dtype) are written
                                  back rounded stochastically: up with the probability of the
                                  distance to the lower neighbour, so the rounding is unbiased
                                  and updates under half a unit of the last place still move
                                  the parameter on average. Counter-based: the random bits are
                                  a hash of the graph's seed, the update count, the parameter
                                  and the element, the same on every backend and thread count
                                  and across a resume. 0: round to nearest even. A graph with
                                  no bfloat16 parameter refuses 1 at compile. */
} nn_optimizer;

/* Learning-rate schedules, torch.optim.lr_scheduler's closed forms, evaluated on the host
   for update t = 0, 1, ... (the t-th optimizer update, as PyTorch's scheduler.step() count):
     CONSTANT    lr
     STEP        lr * gamma^floor(t / step_size)                            (StepLR)
     MULTISTEP   lr * gamma^(number of milestones <= t)                     (MultiStepLR)
     EXPONENTIAL lr * gamma^t                                               (ExponentialLR)
     COSINE      warm-up, then min_lr + (lr - min_lr) * (1 + cos(pi * s / S)) / 2 with
                 s = t - warmup_steps, S = total_steps - warmup_steps, s clamped to S
                 (LinearLR then CosineAnnealingLR in a SequentialLR)
     LINEAR      warm-up, then lr + (min_lr - lr) * s / S, s clamped to S (LinearLR twice)
     ONECYCLE    OneCycleLR (cosine annealing, two phases; momentum is not cycled): from
                 lr/div_factor up to lr at pct_start * total_steps - 1, then down to
                 lr/div_factor/final_div_factor at total_steps - 1
   Warm-up (t < warmup_steps): lr * (f + (1 - f) * t / warmup_steps), f = warmup_start_factor.
   Zero fields: gamma 0.1, step_size 1, warmup_start_factor 1/3 (LinearLR's), pct_start 0.3,
   div_factor 25, final_div_factor 1e4; NN_ZERO in any of them is an exact 0. */
typedef enum nn_lr_schedule_kind {
    NN_LR_CONSTANT = 0,
    NN_LR_STEP,
    NN_LR_MULTISTEP,
    NN_LR_EXPONENTIAL,
    NN_LR_COSINE,
    NN_LR_LINEAR,
    NN_LR_ONECYCLE
} nn_lr_schedule_kind;

#define NN_LR_MAX_MILESTONES 16
typedef struct nn_lr_schedule {
    nn_lr_schedule_kind kind;
    float lr;               /* base (peak) rate; 0 in a compile desc: the optimizer's lr;
                               NN_ZERO: 0 */
    float gamma;            /* STEP, MULTISTEP, EXPONENTIAL */
    int step_size;          /* STEP */
    int milestones[NN_LR_MAX_MILESTONES]; /* MULTISTEP, increasing */
    int n_milestones;
    int warmup_steps;       /* COSINE, LINEAR */
    float warmup_start_factor;
    int total_steps;        /* COSINE, LINEAR (> warmup_steps), ONECYCLE (>= 1) */
    float min_lr;           /* COSINE (eta_min), LINEAR (the rate reached at total_steps) */
    float pct_start, div_factor, final_div_factor; /* ONECYCLE */
} nn_lr_schedule;
/* Into *lr: the rate a schedule gives update t (counted from 0). s->lr 0, which in a
   compile desc means the optimizer's rate, has no rate to stand for here: it is
   NN_ERR_INVALID_ARGUMENT with *lr 0 (give the base rate; NN_ZERO for an exact 0). */
NN_API nn_result nn_lr_schedule_at(const nn_lr_schedule *s, int64_t t, float *lr);

/* Dynamic loss scaling, torch.cuda.amp.GradScaler's: each step seeds the loss's gradient
   with the scale S instead of 1, so every gradient is S times the loss's; after the
   backward, on the device and with no read-back, one flag says whether any parameter's
   (accumulated) gradient holds a NaN or an Inf (or their sum of squares, for clip_norm,
   overflowed). Set: the update is skipped (every parameter and optimizer state stays as it
   was, as with skip_nonfinite; the update count still advances) and S *= backoff_factor.
   Clear: the gradients are unscaled by 1/S before clipping and the update, and after
   growth_interval such updates in a row S *= growth_factor (kept when that overflows).
   nn_graph_grad and nn_graph_backward's gradients are the scaled ones. Zero fields:
     enabled          on for a graph of NN_PRECISION_FP16 with an optimizer, off otherwise;
                      1: on (an optimizer needed); NN_ZERO: off
     init_scale       65536 (2^16), finite and > 0
     growth_factor    2, > 1
     backoff_factor   0.5, in (0, 1)
     growth_interval  2000, >= 1
   Powers of 2 (the defaults) scale and unscale exactly. Not with zero_stage 1. */
typedef struct nn_loss_scale {
    int enabled;
    float init_scale;
    float growth_factor;
    float backoff_factor;
    int growth_interval;
} nn_loss_scale;

struct nn_compile_desc {
    nn_tensor loss;      /* a float32 scalar; NN_NONE (a zeroed desc): a forward-only graph */
    nn_optimizer optimizer;
    int keep_grads;      /* keep every parameter's gradient readable (nn_graph_grad) */
    nn_lr_schedule schedule; /* kind 0: the constant optimizer.lr */
    int data_parallel;   /* builds with -DNN_MPI (see "Data-parallel training" at the end):
                            0: a training graph is data-parallel over nn_dist_init's
                            communicator (MPI_COMM_WORLD, initialised here when the program
                            did not) when it has more than one rank; NN_ZERO: this process
                            alone. Ignored without NN_MPI. */
    /* memory (src/engine/memory.c) */
    int64_t memory_limit; /* bytes; > 0: compile fails with NN_ERR_OUT_OF_MEMORY, before
                             allocating anything, when the plan's allocation
                             (nn_memory_report.allocated) exceeds it, naming the total, the
                             limit and the largest tensors; 0: no limit; < 0 refused */
    int zero_stage;      /* with data_parallel over more than one rank: 1 shards the optimizer
                            state (ZeRO stage 1, see "Data-parallel training"); 0: every rank
                            holds all of it. Ignored without NN_MPI. */
    /* dynamic loss scaling (src/ops/optim.c) */
    nn_loss_scale loss_scale; /* zeroed: on for a graph of NN_PRECISION_FP16 with an optimizer */
};

/* Into *count: the updates skip_nonfinite skipped since compile (a read of 8 bytes; 0
   without it). */
NN_API nn_result nn_graph_skipped_steps(nn_graph *g, int64_t *count);
/* Into *scale the loss scale the next step seeds with, and into *skipped the updates loss
   scaling skipped since compile (either pointer may be NULL; a read of 20 bytes). Without
   loss scaling: 1 and 0. GradScaler.get_scale(). */
NN_API nn_result nn_graph_loss_scale(nn_graph *g, float *scale, int64_t *skipped);
/* Sets the schedule's base rate (the rate itself for the default constant schedule). */
NN_API nn_result nn_graph_set_lr(nn_graph *g, float lr);
/* Replaces the schedule (after compile too); s->lr 0 keeps the current base rate. The
   next update uses nn_lr_schedule_at(s, number of updates done so far). */
NN_API nn_result nn_graph_set_schedule(nn_graph *g, const nn_lr_schedule *s);
/* Before compile: parameters whose name starts with prefix get lr * lr_mult and
   weight_decay * wd_mult (the last group added that matches wins; no_decay_1d still
   zeroes one-dimensional parameters' decay). Parameters in no group: 1 and 1. */
NN_API nn_result nn_graph_param_group(nn_graph *g, const char *prefix, float lr_mult, float wd_mult);

/* ==== 15. Files ============================================================================
   Arrays from files (nn_array_*), datasets on the device (nn_dataset_*), parameters and
   training state (nn_graph_save_* / nn_graph_load_*). Every file is untrusted: a
   malformed one is NN_ERR_IO naming the path and the reason, and a load changes nothing
   unless every check passes; a save writes a temporary file and renames it over the
   path. */

/* An IDX file (the MNIST family's format), uncompressed, read whole and converted to
   float32 or int32 (values as stored, no scaling). Every header field is checked against
   the file's size; a malformed or unreadable file is NN_ERR_IO with the path and reason. */
typedef struct nn_array {
    nn_dtype dtype;
    nn_shape shape;
    void *data;          /* float or int32_t, numel elements; free with nn_array_free */
} nn_array;
/* Loads path into *out (zeroed on failure), converted to dtype as (NN_F32 or NN_I32);
   ctx holds the error message. */
NN_API nn_result nn_array_load_idx(nn_context *ctx, const char *path, nn_dtype as, nn_array *out);
/* Frees a->data and zeroes *a; NULL or a zeroed array does nothing. */
NN_API void nn_array_free(nn_array *a);

/* A CSV file of numbers into a float32 array [rows, columns]: every row (after the header
   row, when there is one) must have the first row's number of fields, each a decimal number
   ([+-]digits[.digits][e[+-]digits], or inf, infinity, nan; '.' whatever the C locale;
   spaces around it allowed) rounded to the nearest float32; blank lines are skipped; \n or
   \r\n; a UTF-8 byte order mark at the start is skipped. An empty file, a ragged row, or a
   field that is not a number or is beyond float32's range is NN_ERR_IO naming path:line and
   the field. Zero fields: delimiter ',', no header. */
typedef struct nn_csv_desc {
    char delimiter;      /* 0: ',' */
    int header;          /* 1: the first line names the columns and is skipped */
} nn_csv_desc;
NN_API nn_result nn_array_load_csv(nn_context *ctx, const char *path, const nn_csv_desc *desc, nn_array *out);

/* A dataset that lives on the device: its samples x [N, ...] and labels y [N, ...] (either
   dtype) become the inputs NAME.x and NAME.y, written once (at the first batch), and
   nn_dataset_x/y are the batch's rows [batch, ...] gathered by the input NAME.idx [batch].
   nn_dataset_next_batch() writes only those batch indices. An epoch is ceil(N / batch)
   batches, the last one of N mod batch rows when batch does not divide N (PyTorch's
   DataLoader, drop_last=False): that needs a graph made by nn_graph_build, whose calls
   nn_dataset_next_batch then sets to the batch's rows (nn_graph_set_batch); with
   drop_last it is floor(N / batch) batches, the rest of the epoch's order unused (this
   was the only behaviour before: nn_dataset_create on a graph built at one batch size now
   refuses a batch that does not divide N unless drop_last is set). In a model function
   (nn_graph_build) give the dataset the function's batch; its builds at other batches
   make the same dataset's inputs again. With shuffle, epoch e's order is a
   Fisher-Yates shuffle drawn from Philox4x32-10 keyed by (seed, e): reproducible, and
   recomputed on resume. The dataset belongs to the graph (freed with it); create it before
   compiling. Its seed, epoch and position are part of nn_graph_save_state's training state. */
typedef struct nn_dataset nn_dataset;
typedef struct nn_dataset_desc {
    const char *name;    /* NULL: "data" */
    const nn_array *x, *y; /* copied; free them after the call */
    int64_t batch;
    int shuffle;
    uint64_t seed;       /* 0: the graph's seed; NN_ZERO: 0 */
    int drop_last;       /* 1: drop the last partial batch of an epoch; 0: keep it (PyTorch's default) */
} nn_dataset_desc;
/* Makes the dataset (its inputs and gathers in g, before compile) into *out. */
NN_API nn_result nn_dataset_create(nn_graph *g, const nn_dataset_desc *desc, nn_dataset **out);
/* The batch's samples [batch, ...] and labels [batch, ...]: tensors of g to build on. */
NN_API nn_tensor nn_dataset_x(const nn_dataset *ds);
NN_API nn_tensor nn_dataset_y(const nn_dataset *ds);
/* After compile, before each step: writes the next batch's indices (the next epoch's
   order after the last batch of one). A step without it is refused (nn_graph_step). */
NN_API nn_result nn_dataset_next_batch(nn_dataset *ds);
/* Into *epoch: the epoch of the batch taken last (from 0). */
NN_API nn_result nn_dataset_epoch(const nn_dataset *ds, int64_t *epoch);

/* Saves every parameter of g's parameter store as float32 safetensors (PyTorch's names and
   layouts, e.g. fc1.weight [out, in]), keys sorted by name, with metadata {"format": "pt"}.
   Works before and after compile. Writes a temporary file beside path, flushes it to disk
   and renames it over path, so a failed save leaves the old file. An existing path must be
   a regular file (a directory, FIFO or device is NN_ERR_IO, left as it is); a symbolic link
   is followed and the file it names is replaced, keeping its permissions. nn_graph_save_state
   saves alike. */
NN_API nn_result nn_graph_save_safetensors(nn_graph *g, const char *path);
/* nn_graph_save_safetensors with the tensors stored as dtype: NN_F32 (the same file), NN_BF16
   or NN_F16 (safetensors "BF16", "F16": each value rounded to nearest even, as
   save_file({k: v.to(torch.bfloat16)}) writes them); another dtype is NN_ERR_INVALID_ARGUMENT.
   nn_graph_load_safetensors reads them back, widened exactly. */
NN_API nn_result nn_graph_save_safetensors_dtype(nn_graph *g, const char *path, nn_dtype dtype);
/* Loads parameters by name into g (before or after compile). A tensor in the file whose
   name matches a parameter must have its shape (else NN_ERR_SHAPE naming it) and dtype F32,
   F16, BF16 or F64 (converted to float32); a parameter missing from the file is NN_ERR_IO
   unless allow_missing, which loads the parameters found and logs at info level how many
   of how many it loaded (and the first missing name); a file that matches none of the
   graph's parameters is NN_ERR_IO even with allow_missing. Other tensors in the file are
   ignored. The file is untrusted: a
   malformed one is NN_ERR_IO with the path and the reason, and no parameter changes unless
   every check passes. */
NN_API nn_result nn_graph_load_safetensors(nn_graph *g, const char *path, int allow_missing);

/* The whole training state of a compiled graph, for exact resume: parameters and buffers
   (their own names), each optimizer state tensor (NAME.__opt.K, K in the optimizer's state
   order), gradient-accumulation means (NAME.__grad_acc), and as metadata strings the
   optimizer kind, step and update counters, the graph seed and every dataset's seed, epoch
   and position. nn_graph_load_state() into a graph built and compiled the same way continues
   exactly as the saved run would have: the same bits on the CPU backend. It checks the
   optimizer kind and options, accumulate_steps and every tensor's presence and shape
   (NN_ERR_STATE / NN_ERR_IO / NN_ERR_SHAPE naming what) before it changes anything; the
   gradient-accumulation means may be missing from a state saved at the end of a cycle
   (as data-parallel ranks save: see "Data-parallel training"), where the next step resets
   them. */
NN_API nn_result nn_graph_save_state(nn_graph *g, const char *path);
NN_API nn_result nn_graph_load_state(nn_graph *g, const char *path);

/* ---- Model files: the architecture with the weights (src/files/model.c) -------------------
   A model is a graph of layers from its inputs, written as JSON (schema version 1); most
   are a chain:

     {"format": "nn.model", "version": 1,
      "inputs": [{"name": "x", "shape": [784], "dtype": "float32"}],
      "layers": [{"type": "linear", "name": "fc1", "in": 784, "out": 256}, {"type": "relu"},
                 {"type": "linear", "name": "fc2", "out": 10}]}

   inputs: 1 to 16; shape is a sample's (no batch dim), dtype "float32" (default) or
   "int32" (indices for an embedding), name "x" (the first), "x1", "x2", ... by default.
   format and version may be left out. Each layer is an object with "type" and that
   type's fields (PyTorch's names and defaults; a size field takes an integer or [h, w]),
   and two fields every layer takes:
     name          the layer's name, unique among the inputs' and layers' names (default
                   "layers.K", K its index): its parameters are NAME.weight, ..., and later
                   layers and "outputs" refer to it by it
     inputs        a list of names of model inputs or earlier layers (never later ones: a
                   model has no loops); absent: the layer before (the first: inputs[0])
   and at the top level "outputs": a list of layer names (default: the last layer).
     linear        name, in, out (required), bias (true); on [B, in] or [B, ..., in] (the
                   last dim, as nn.Linear)
     conv1d/conv2d name, in, out, kernel (required), stride (1), padding (0), dilation (1),
                   groups (1), bias (true)
     max_pool2d    kernel (required), stride (kernel), padding (0), dilation (1), ceil_mode
     avg_pool2d    kernel (required), stride (kernel), padding (0), ceil_mode (false),
                   count_include_pad (true)
     batch_norm1d/batch_norm2d  name, num_features, eps (1e-5), momentum (0.1)
     layer_norm    name, normalized_shape (an integer or a list: the input's trailing
                   dims), eps (1e-5), bias (true)
     embedding     name, num_embeddings, embedding_dim (required), padding_idx (none)
     dropout p (0.5); flatten (start_dim 1, end_dim -1 only); reshape shape (a sample's,
     one -1 allowed; include_batch true: the whole shape, its -1 the batch's share, as
     x.view(-1, C)); softmax, log_softmax dim (-1)
   The sequence tier (each nn.h builder's parameters, PyTorch's names):
     rms_norm      name, normalized_shape (required), eps (null: float32's epsilon)
     position_embedding  name, num_positions, embedding_dim (required): x [B, T, D] +
                   NAME.weight[:T] (nanoGPT's learned positions, wpe)
     multihead_attention  name, embed_dim, num_heads (required), dropout (0), bias (true),
                   batch_first (false), is_causal (false), kdim, vdim (embed_dim); inputs:
                   one (self-attention) or three (query, key, value)
     transformer_encoder_layer, transformer_decoder_layer  name, d_model, nhead
                   (required), dim_feedforward (2048), dropout (0.1), activation ("relu"
                   or "gelu"), layer_norm_eps (1e-5), batch_first (false), norm_first
                   (false), is_causal (the encoder's) or tgt_is_causal (the decoder's); a
                   decoder's inputs are two: tgt and memory
     transformer_encoder, transformer_decoder  the same and num_layers (required): the
                   stacks, layers NAME.layers.{i}
     gpt           name (a prefix; default none: nanoGPT's names), vocab_size, block_size,
                   n_layer, n_head, n_embd (required), dropout (0), bias (true): nn_gpt on
                   int32 [B, T] -> [B * T, vocab_size]
     gpt_block     name, n_embd, n_head, block_size (required), n_layer (1: the init's
                   scale only), dropout (0), bias (true)
     patch_embedding  name, patch_size, embed_dim (required), in_chans (checked),
                   class_token (false), pos_embed (false), prefix (none): nn_patch_embedding
                   (ViT, timm's names) on [B, C, H, W] -> [B, N (+ 1), embed_dim]
     conv_lstm2d   name, hidden_channels (required), in_channels (checked), kernel_size (3,
                   odd), bias (true): nn_conv_lstm2d on [B, T, C, H, W]
     lstm, gru, rnn  name, input_size (checked), hidden_size (required), num_layers (1),
                   bias (true), batch_first (false), dropout (0), bidirectional (false),
                   lstm's proj_size (0), rnn's nonlinearity ("tanh" or "relu")
     add, sub, mul (two inputs, broadcast); concat dim (required; dim 0 is the batch's),
     2 to 16 inputs
     an activation by its builder's name (relu, gelu, tanh, sigmoid, silu, elu, ...), with
     its parameters: leaky_relu negative_slope (0.01), elu and celu alpha (1), softplus
     beta (1) and threshold (20), hardtanh min_val (-1) and max_val (1)
   "in" and "num_features" are optional and checked against the layer's input. A layer's
   parameters are NAME.weight, NAME.bias, ... as its nn_X_layer makes them. An unknown
   field or type, a wrong value, a layer that does not fit its input, a name used twice or
   an input that is no earlier layer's is an error naming the JSON path ("layers[3].out:
   expected a positive integer", "layers[0].inputs[0]: \"b\" is layers[1], not an earlier
   layer"); the text is read strictly (RFC 8259, UTF-8, no duplicate keys) and bounded
   (4 MiB, 32 levels of nesting). */

/* Builds the layers of the model json on x ([batch, inputs[0].shape...], of its dtype):
   the last layer's output, or a failed tensor (the graph keeps the error). */
NN_API nn_tensor nn_model_build(nn_graph *g, nn_tensor x, const char *json);
/* nn_model_build for a model of several inputs or outputs: xs[k] ([batch, inputs[k].shape...]
   of its dtype) for each of the n_x inputs, in the JSON's order; the outputs (the JSON's
   "outputs", or the last layer's) into ys (cap entries), their count in *n_y. A failure is
   the graph's error (as nn_model_build's, naming the JSON path); *n_y is then 0. */
NN_API nn_result nn_model_build_io(nn_graph *g, const nn_tensor *xs, int n_x, const char *json, nn_tensor *ys, int cap, int *n_y);
/* The JSON of the model from x to y: the layers y comes from (each recognised from the
   nodes that nn_X_layer, the activations, the pools, nn_dropout, nn_reshape/nn_flatten,
   nn_softmax, nn_embedding (or nn_index_select of the rows of a table NAME.weight),
   nn_add/nn_sub/nn_mul of two tensors and nn_concat make, or
   noted by the composed builders: the transformer layers and stacks, nn_gpt,
   nn_gpt_block, nn_multihead_attention, nn_lstm/nn_gru/nn_rnn), x's shape without its
   first dim as the input's. x NN_NONE: every input the outputs come from is the model's
   (in node order); y NN_NONE: every tensor marked with nn_graph_output is an output. A
   layer that is not the one before's output gets "inputs"; a layer without a name is
   referred to as layers.K. Into buf (cap bytes, NUL-terminated) when it fits; *len: its
   length (buf NULL: only that). A node on the way that is no layer's (a custom op), an
   input besides x, a layer given tensors the schema has no field for (masks, initial
   states, lengths, stateful) is NN_ERR_INVALID_ARGUMENT naming it; so is a buf too small. */
NN_API nn_result nn_model_json(nn_graph *g, nn_tensor x, nn_tensor y, char *buf, size_t cap, size_t *len);
/* nn_graph_save_safetensors's file with the model's JSON (nn_model_json) as the metadata
   string "nn.model" beside {"format": "pt"}: a PyTorch state dict, and a model that
   nn_model_load rebuilds with no builder code. */
NN_API nn_result nn_model_save(nn_graph *g, nn_tensor x, nn_tensor y, const char *path);
/* nn_model_load's options (NULL: all zero). */
typedef struct nn_model_desc {
    int64_t batch;              /* the input's first dim (0: 1) */
    int train;                  /* 0: an evaluation graph (dropout off, batch norm on its running
                                   statistics), compiled, its output kept; 1: a training graph
                                   (nn_graph_desc.eval 0), not compiled: add a loss, compile */
    const char *json;           /* non-NULL: build this model instead of the file's (an edited
                                   copy), loading the file's weights into it */
    int fresh_mismatched;       /* with json: a parameter that is missing from the file or has
                                   another shape there keeps its fresh initialisation (logged at
                                   info level); 0: that is an error (NN_ERR_IO, NN_ERR_SHAPE)
                                   naming the tensor. At least one must load. */
    const nn_graph_desc *graph; /* the graph's seed (NULL: defaults); eval is train's, and
                                   share_params is refused (the model's parameters are its own) */
    nn_tensor *input, *output;  /* receive the model's (first) input and output tensors (NULL: not wanted) */
    nn_tensor *inputs, *outputs; /* receive every input and output, in the JSON's order, max_io
                                   entries each (those past the model's count: NN_NONE) */
    int max_io;
} nn_model_desc;
/* Reads a file of nn_model_save and builds its model into a new graph *out: the input
   (named as in the JSON, shape [batch, ...]), the layers (the output kept: nn_graph_output),
   and every parameter loaded from
   the file (float32, F16, BF16 or F64, by name and shape). The file is untrusted: a
   malformed one is NN_ERR_IO, a bad model NN_ERR_INVALID_ARGUMENT naming the JSON path;
   nothing leaks and *out stays NULL on any error. */
NN_API nn_result nn_model_load(nn_context *ctx, const char *path, const nn_model_desc *desc, nn_graph **out);

/* ---- Data-parallel training over MPI (compiled in with -DNN_MPI, linked with mpicc) ----
   One process per rank, each with its own context and the same graph. A training graph
   compiled with data_parallel 0 (the default) over more than one rank runs each
   nn_graph_step as one micro-step of a gradient accumulation over the ranks: rank r's
   step s is micro-step s * N + r of one process with accumulate_steps N (its dropout draws
   included), and the N gradients are averaged in rank order, acc = 0 + g_0 / N, then
   acc + g_r / N for r = 1 .. N-1, exactly as that process's GRAD_ACC sums them, by a
   reduce-scatter and all-gather over MPI point-to-point (each rank owns a slice of the
   flat gradient and sums its slice in that order). So N ranks with per-rank batch B give
   the same bits on the CPU backend as one process with batch B and accumulate_steps N, and
   the parameters stay identical on every rank; nn_graph_step counts N steps per call on
   every rank (the saved step, the schedules). accumulate_steps > 1 is refused with it.
   Compile compares a hash of the graph (ops, shapes, parameters, optimizer) across the
   ranks and fails on a mismatch; a rank that does not answer within the timeout makes the
   step (or compile) fail with NN_ERR_STATE naming it, never hang. A nn_dataset gives each
   rank a disjoint shard of every epoch's permutation (rank r takes the batches r, r + N,
   ...); nn_graph_save_state writes on rank 0 only. Declared only when NN_MPI is defined
   (nn.h then includes <mpi.h>).
   zero_stage 1 (ZeRO stage 1): rank c keeps the optimizer state of its slice of every
   bucket of the flat gradient only (about 1/N of it, on the host), the reduce-scatter
   leaves it that slice of the mean gradient, it updates that slice of the parameters on
   the host with the CPU backend's SGD or Adam loop, and the updated slices are
   all-gathered into every rank's parameters (in place of the gradients' all-gather): the
   same bits as without it on the CPU backend (on a device backend the host's loops and
   the kernels round a few last bits apart). SGD, Adam and AdamW (not amsgrad) only;
   clip_norm works (the norm's running sum passes from rank to rank in the single
   process's order: a message per piece of a parameter, latency-bound); skip_nonfinite is
   refused. nn_graph_grad reads this rank's own
   gradient, not the mean. nn_graph_save_state gathers the shards to rank 0, which writes
   the whole state (the same file as without it); nn_graph_load_state reads the whole
   state on every rank and keeps its slice, so a state moves between rank counts and
   zero_stage settings. */
#ifdef NN_MPI
/* Sets the communicator data-parallel graphs use (a duplicate of *comm; NULL:
   MPI_COMM_WORLD), calling MPI_Init first when MPI is not initialised (MPI_Finalize then
   runs at exit). Optional: the first data-parallel compile calls nn_dist_init(NULL).
   Graphs compiled before keep theirs. */
NN_API nn_result nn_dist_init(const MPI_Comm *comm);
/* Into *rank / *size: this process's rank in that communicator and the number of ranks
   (initialising it as nn_dist_init(NULL) when needed). */
NN_API nn_result nn_dist_rank(int *rank);
NN_API nn_result nn_dist_size(int *size);
/* The seconds a rank waits for the others in a step or compile before failing (default 300;
   NN_DIST_TIMEOUT in the environment sets the default). */
NN_API nn_result nn_dist_set_timeout(double seconds);
/* The gradients' bucket size for graphs compiled after (0: NN_DIST_BUCKET_MB in the
   environment, else 25 MB). The backward pass is cut where a bucket's gradients are
   complete; with more than one bucket, and MPI initialised with at least
   MPI_THREAD_SERIALIZED (nn_dist_init's own MPI_Init_thread asks for it), a communication
   thread reduces each bucket (host staging) while the backward pass goes on, and the
   update waits for the last one (NN_DIST_OVERLAP=0 in the environment: after the backward
   pass instead). The bits do not depend on the buckets. */
NN_API nn_result nn_dist_set_bucket_bytes(int64_t bytes);
/* A data-parallel graph's figures (nn_graph_dist_stats). */
typedef struct nn_dist_stats {
    double comm_seconds;           /* since compile: the time the reduction took (the
                                      communication thread's, or the step's own without it) */
    double wait_seconds;           /* the time steps waited for it after their backward part;
                                      1 - wait / comm is the share hidden behind the backward pass */
    int64_t optimizer_state_bytes; /* the optimizer state this rank holds: all of it, or its
                                      shard (about 1/N) with zero_stage 1 */
    int64_t gradient_bytes;        /* the flat gradient buffer a step reduces (4 per float) */
} nn_dist_stats;
/* Into *stats: the figures above (zeros for a graph that is not data-parallel, but its
   optimizer_state_bytes). */
NN_API nn_result nn_graph_dist_stats(nn_graph *g, nn_dist_stats *stats);
#endif

#ifdef __cplusplus
}
#endif
#endif /* NN_H_INCLUDED */
