#ifndef NN_H_INCLUDED
#define NN_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#ifndef NN_API
#  ifdef NN_STATIC
#    define NN_API static
#  else
#    define NN_API extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define NN_VERSION_MAJOR 0
#define NN_VERSION_MINOR 1
#define NN_MAX_DIMS 6

/* ---- results ---------------------------------------------------------------------- */

typedef enum nn_result {
    NN_OK = 0,
    NN_ERR_INVALID_ARGUMENT = -1, /* a NULL, an out-of-range value, a tensor of another graph */
    NN_ERR_SHAPE = -2,            /* shapes or dtypes that do not fit the op */
    NN_ERR_OUT_OF_MEMORY = -3,    /* host or device allocation failed */
    NN_ERR_DEVICE = -4,           /* an OpenCL call failed */
    NN_ERR_BUILD = -5,            /* a kernel did not compile; the message holds the build log */
    NN_ERR_IO = -6,               /* a file could not be read or written, or is malformed */
    NN_ERR_STATE = -7             /* the call does not fit the object's state (e.g. not compiled) */
} nn_result;

typedef enum nn_dtype { NN_F32 = 0, NN_I32 = 1 } nn_dtype;

typedef enum nn_log_level { NN_LOG_ERROR = 0, NN_LOG_WARN = 1, NN_LOG_INFO = 2, NN_LOG_DEBUG = 3 } nn_log_level;
typedef void (*nn_log_fn)(void *user, nn_log_level level, const char *message);

typedef struct nn_context nn_context;
typedef struct nn_graph nn_graph;

/* A symbolic tensor: a handle into one graph. id < 0 means "the op failed"; every op
   given a failed tensor returns a failed tensor, and nn_graph_compile() reports the first
   error, so a network can be written without checking each call. */
typedef struct nn_tensor { int32_t id; } nn_tensor;

typedef struct nn_shape { int ndim; int64_t dim[NN_MAX_DIMS]; } nn_shape;

NN_API nn_shape nn_shape1(int64_t d0);
NN_API nn_shape nn_shape2(int64_t d0, int64_t d1);
NN_API nn_shape nn_shape3(int64_t d0, int64_t d1, int64_t d2);
NN_API nn_shape nn_shape4(int64_t d0, int64_t d1, int64_t d2, int64_t d3);

/* ---- contexts and devices ------------------------------------------------------------ */

/* Every field's zero means "default". */
typedef struct nn_context_desc {
    const char *device;     /* "cpu", "opencl", an OpenCL device index ("0") or a name
                               substring; NULL: $NN_DEVICE, else the first GPU, else cpu */
    int threads;            /* CPU-backend threads; 0: $NN_THREADS, else all cores */
    const char *cache_dir;  /* compiled-program cache; NULL: $NN_CACHE_DIR, else
                               $XDG_CACHE_HOME/nn or ~/.cache/nn; "off" disables it */
    const char *kernel_dir; /* load kernels/NAME.cl from here; NULL: $NN_KERNEL_DIR, else
                               the sources embedded in nn.h */
    nn_log_fn log;          /* NULL: messages at or below log_level go to stderr */
    void *log_user;
    int log_level;          /* 0: $NN_LOG (error|warn|info|debug), else NN_LOG_INFO (one line:
                               the backend chosen); else the nn_log_level plus one */
} nn_context_desc;

/* Creates a context on the chosen backend. On failure *out is NULL and the reason has
   gone to the log (an explicitly requested device that cannot be opened is an error; no
   OpenCL platform at all, when none was requested, means the CPU backend). */
NN_API nn_result nn_context_create(nn_context **out, const nn_context_desc *desc);
NN_API void nn_context_destroy(nn_context *ctx);
NN_API const char *nn_last_error(const nn_context *ctx); /* "" when there is none */
NN_API const char *nn_result_string(nn_result r);
NN_API const char *nn_backend_name(const nn_context *ctx); /* "cpu" or the device's name */
NN_API int nn_backend_is_opencl(const nn_context *ctx);

typedef struct nn_device_info {
    int index;          /* what NN_DEVICE=<index> takes */
    int is_gpu;
    int is_cpu;
    char name[128];
    char platform[128];
} nn_device_info;
/* Lists OpenCL devices into out (up to max); returns how many exist (0 without OpenCL). */
NN_API int nn_list_devices(nn_device_info *out, int max);

/* What has crossed between host and device, counted since creation or the last reset.
   On the CPU backend the same counters count nn_tensor_write/read copies and op runs. */
typedef struct nn_stats {
    uint64_t h2d_bytes, d2h_bytes;
    uint64_t h2d_transfers, d2h_transfers;
    uint64_t kernel_launches;
} nn_stats;
NN_API nn_stats nn_get_stats(const nn_context *ctx);
NN_API void nn_reset_stats(nn_context *ctx);

/* ---- graphs ---------------------------------------------------------------------------- */

typedef struct nn_graph_desc {
    nn_graph *share_params; /* use this graph's parameters (same names, same shapes) */
    int eval;               /* evaluation mode: dropout is the identity */
    uint64_t seed;          /* parameter initialisation and dropout; 0 means 1 */
} nn_graph_desc;

NN_API nn_result nn_graph_create(nn_context *ctx, const nn_graph_desc *desc, nn_graph **out);
NN_API void nn_graph_destroy(nn_graph *g);
NN_API nn_result nn_graph_status(const nn_graph *g); /* first error while building, or NN_OK */

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
/* fan_in / fan_out of a shape [out, in, k...] are in*k... and out*k... (PyTorch's rule). */
typedef struct nn_init { nn_init_kind kind; float a, b; } nn_init;

/* Leaves. An input keeps its contents across steps until written again, so a whole
   dataset can live on the device as an input written once. Until its first write an
   input's contents are unspecified (zeros on the CPU backend). */
NN_API nn_tensor nn_input(nn_graph *g, const char *name, nn_dtype dtype, nn_shape shape);
NN_API nn_tensor nn_param(nn_graph *g, const char *name, nn_shape shape, nn_init init);
NN_API void nn_requires_grad(nn_graph *g, nn_tensor t); /* ask for d(loss)/d(input) */
NN_API void nn_output(nn_graph *g, nn_tensor t);        /* keep t readable after a run */

/* Linear algebra and elementwise ops. Binary ops take b of a's shape or of a trailing part
   of it (b = [N] against a = [M, N]: a bias). */
NN_API nn_tensor nn_matmul(nn_graph *g, nn_tensor a, nn_tensor b, int trans_a, int trans_b);
NN_API nn_tensor nn_add(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_sub(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_mul(nn_graph *g, nn_tensor a, nn_tensor b);
NN_API nn_tensor nn_scale(nn_graph *g, nn_tensor a, float s);

/* Activations. */
NN_API nn_tensor nn_relu(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_leaky_relu(nn_graph *g, nn_tensor x, float negative_slope);
NN_API nn_tensor nn_sigmoid(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_tanh(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_gelu(nn_graph *g, nn_tensor x); /* exact (erf), as PyTorch's default */
NN_API nn_tensor nn_silu(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_softmax(nn_graph *g, nn_tensor x);     /* over the last axis */
NN_API nn_tensor nn_log_softmax(nn_graph *g, nn_tensor x); /* over the last axis */

/* Reductions to a scalar (shape [1]). */
NN_API nn_tensor nn_sum(nn_graph *g, nn_tensor x);
NN_API nn_tensor nn_mean(nn_graph *g, nn_tensor x);

/* Losses, each the mean over the batch (a scalar). */
NN_API nn_tensor nn_softmax_cross_entropy(nn_graph *g, nn_tensor logits, nn_tensor labels);
NN_API nn_tensor nn_mse(nn_graph *g, nn_tensor pred, nn_tensor target);
NN_API nn_tensor nn_bce_with_logits(nn_graph *g, nn_tensor logits, nn_tensor target);

/* Dropout with probability p in training graphs (identity in eval graphs); the mask comes
   from a counter-based generator (Philox4x32-10) keyed by seed, op and step, so every
   backend draws the same mask. */
NN_API nn_tensor nn_dropout(nn_graph *g, nn_tensor x, float p);

/* out[i, ...] = data[idx[i], ...]: batches from a dataset that lives on the device (data
   of either dtype: images and their labels). An index out of range gives a row of zeros. */
NN_API nn_tensor nn_gather_rows(nn_graph *g, nn_tensor data, nn_tensor idx);
NN_API nn_tensor nn_argmax(nn_graph *g, nn_tensor x); /* [B, C] -> int32 [B] */
/* Fraction of rows whose argmax equals the label (a scalar; no gradient). */
NN_API nn_tensor nn_accuracy(nn_graph *g, nn_tensor logits, nn_tensor labels);
/* A running sum kept on the device: each run adds x to it. Reset with nn_tensor_fill(). */
NN_API nn_tensor nn_accumulate(nn_graph *g, nn_tensor x);

/* Convolution over x [N, C, H, W] (NCHW, PyTorch's layout) with w [K, C/groups, KH, KW]
   and an optional bias [K] (pass a tensor with id < 0 for none). Zero fields mean stride 1,
   padding 0, dilation 1, groups 1. Output [N, K, OH, OW] with
   OH = (H + 2*pad_h - dilation_h*(KH-1) - 1) / stride_h + 1. */
typedef struct nn_conv2d_desc {
    int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
} nn_conv2d_desc;
NN_API nn_tensor nn_conv2d(nn_graph *g, nn_tensor x, nn_tensor w, nn_tensor bias, const nn_conv2d_desc *desc);

/* The same data in another shape of the same element count (a copy). */
NN_API nn_tensor nn_reshape(nn_graph *g, nn_tensor x, nn_shape shape);
NN_API nn_tensor nn_flatten(nn_graph *g, nn_tensor x); /* [N, ...] -> [N, rest] */

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

/* A fully connected layer: x [B, in] -> [B, out] with parameters NAME.weight [out, in] and
   NAME.bias [out] (PyTorch's names and layout), initialised as PyTorch's nn.Linear. */
NN_API nn_tensor nn_dense(nn_graph *g, nn_tensor x, int64_t out_features, const char *name);

/* ---- compiling and running --------------------------------------------------------------- */

typedef enum nn_optimizer_kind {
    NN_OPT_NONE = 0, /* compute gradients only */
    NN_OPT_SGD,
    NN_OPT_ADAM,
    NN_OPT_ADAMW
} nn_optimizer_kind;

/* PyTorch's semantics. Zero fields take PyTorch's defaults: lr 1e-3 (Adam, AdamW) or 1e-2
   (SGD), betas 0.9 and 0.999, eps 1e-8, AdamW weight_decay 1e-2. */
typedef struct nn_optimizer {
    nn_optimizer_kind kind;
    float lr;
    float momentum, dampening; /* SGD */
    int nesterov;              /* SGD */
    float weight_decay;        /* L2 for SGD/Adam, decoupled for AdamW */
    float beta1, beta2, eps;   /* Adam, AdamW */
    float clip_norm;           /* > 0: scale gradients to this global L2 norm at most */
} nn_optimizer;

typedef struct nn_compile_desc {
    nn_tensor loss;      /* scalar; id 0 is a valid tensor, so set has_loss */
    int has_loss;        /* 0: a forward-only (inference) graph */
    nn_optimizer optimizer;
    int keep_grads;      /* keep every parameter's gradient readable (nn_grad) */
} nn_compile_desc;

/* Shape-checks, adds the backward and optimizer ops, plans memory, builds kernels. */
NN_API nn_result nn_graph_compile(nn_graph *g, const nn_compile_desc *desc);
NN_API nn_result nn_graph_step(nn_graph *g);    /* forward, backward, update */
NN_API nn_result nn_graph_forward(nn_graph *g); /* forward only */
NN_API nn_result nn_graph_finish(nn_graph *g);  /* waits for queued work */
NN_API nn_result nn_graph_set_lr(nn_graph *g, float lr);

NN_API nn_tensor nn_find(nn_graph *g, const char *name);
NN_API nn_tensor nn_grad(nn_graph *g, nn_tensor t); /* after compile */
NN_API nn_shape nn_tensor_shape(nn_graph *g, nn_tensor t);
NN_API int64_t nn_tensor_numel(nn_graph *g, nn_tensor t);
/* bytes must equal the tensor's size. Writes go to inputs and parameters; reads come from
   inputs, parameters, outputs, accumulators and kept gradients. */
NN_API nn_result nn_tensor_write(nn_graph *g, nn_tensor t, const void *data, size_t bytes);
NN_API nn_result nn_tensor_read(nn_graph *g, nn_tensor t, void *data, size_t bytes);
NN_API nn_result nn_tensor_fill(nn_graph *g, nn_tensor t, float value); /* no transfer */

/* ---- files ------------------------------------------------------------------------------- */

/* An IDX file (the MNIST family's format), uncompressed, read whole and converted to
   float32 or int32 (values as stored, no scaling). Every header field is checked against
   the file's size; a malformed or unreadable file is NN_ERR_IO with the path and reason. */
typedef struct nn_array {
    nn_dtype dtype;
    nn_shape shape;
    void *data;          /* float or int32_t, numel elements; free with nn_array_free */
} nn_array;
NN_API nn_result nn_load_idx(nn_context *ctx, const char *path, nn_dtype as, nn_array *out);
NN_API void nn_array_free(nn_array *a);

/* ---- checkpoints ------------------------------------------------------------------------- */

/* Saves every parameter of g's parameter store as float32 safetensors (PyTorch's names and
   layouts, e.g. fc1.weight [out, in]), keys sorted by name, with metadata {"format": "pt"}.
   Works before and after compile; writes PATH.tmp and renames it over path. */
NN_API nn_result nn_save_safetensors(nn_graph *g, const char *path);
/* Loads parameters by name into g (before or after compile). A tensor in the file whose
   name matches a parameter must have its shape (else NN_ERR_SHAPE naming it) and dtype F32,
   F16, BF16 or F64 (converted to float32); a parameter missing from the file is NN_ERR_IO
   unless allow_missing; other tensors in the file are ignored. The file is untrusted: a
   malformed one is NN_ERR_IO with the path and the reason, and no parameter changes unless
   every check passes. */
NN_API nn_result nn_load_safetensors(nn_graph *g, const char *path, int allow_missing);

#ifdef __cplusplus
}
#endif
#endif /* NN_H_INCLUDED */
