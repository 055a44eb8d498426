/* The op registry. Each family's list names its ops once, X(ENUM, "name", stem, flags): the
   enum value NN__OP_ENUM, the name used in messages, and the stem that names the op's
   functions in src/ops/FAMILY.c:
     nn__cpu_STEM     nn_result f(nn_graph *g, nn__node *n)  the CPU backend's body
     nn__launch_STEM  nn_result f(nn_graph *g, int id)       the kernel launches of kernels/FAMILY.cl
                                                             for a device backend (nn__launch_kernel
                                                             and the kernel's nn__kargs_SIG)
     nn__grad_STEM    void f(nn_graph *g, int id)            the autograd rule
     nn__plan_STEM    void f(nn_graph *g, nn__node *n)       compile time, before memory is planned:
                                                             the algorithm and scratch size
     flags            NN__OPF_*
   A function an op shares with another, or has none of, is a one-line alias beside the op
   (#define nn__cpu_sub nn__cpu_binary; nn__grad_none: no gradient rule; nn__no_plan: no
   compile-time plan). The enum, the names and the table in src/ops/registry.c are made
   from these lists, so an op with a missing function does not compile. */
#ifndef NN__OPS_H
#define NN__OPS_H
#include "internal.h"

/* The plan of an op that needs none (its nn__plan_STEM alias). */
#define nn__no_plan 0

#define NN__OPF_LEAF 1u    /* an input or parameter: no body, no plan */
#define NN__OPF_NO_GRAD 2u /* not differentiable: no gradient flows through it */
#define NN__OPF_WRITABLE 4u /* its value persists across runs and the user may write it (accumulators) */
#define NN__OPF_VIEW 8u    /* its output is its first input's data in another shape: the planner gives it
                              that input's storage (NN__ST_VIEW) unless the input is a parameter; its
                              body and device plan then do nothing (n->storage == NN__ST_VIEW) */
#define NN__OPF_CONST 16u  /* no inputs: computed once at compile time by its CPU body (into a host
                              copy written to the device), never scheduled; its own storage */

#define NN__OPF_RANK0 32u  /* takes and makes rank-0 (scalar []) tensors: its shape rule, bodies and plans
                              handle 0 dims; nodes of other ops refuse them when built */

#define NN__OPF_HALF 64u   /* takes 16-bit storage (NN_BF16, NN_F16) as well as float32: its CPU body and its
                              kernels read and write through kernels/storage.h; nodes of other ops refuse a
                              16-bit input when built, naming the op */

#define NN__OPS_LEAF(X)                                     \
    X(INPUT, "input", input, NN__OPF_LEAF | NN__OPF_RANK0)  \
    X(PARAM, "param", param, NN__OPF_LEAF)

#define NN__OPS_ELEMENTWISE(X)                                                                   \
    X(ADD, "add", add, NN__OPF_RANK0 | NN__OPF_HALF)                                                          \
    X(SUB, "sub", sub, NN__OPF_RANK0 | NN__OPF_HALF)                                                          \
    X(MUL, "mul", mul, NN__OPF_RANK0 | NN__OPF_HALF)                                                          \
    X(SCALE, "scale", scale, NN__OPF_RANK0)                                                      \
    X(UNARY, "activation", unary, NN__OPF_RANK0 | NN__OPF_HALF)                                  \
    X(UNARY_GRAD, "activation_grad", unary_grad, NN__OPF_RANK0 | NN__OPF_HALF)                   \
    X(PRELU, "prelu", prelu, 0)                                                                  \
    X(PRELU_DX, "prelu_grad_input", prelu_dx, 0)                                                 \
    X(PRELU_DW, "prelu_grad_weight", prelu_dw, 0)                                                \
    X(ACCUMULATE, "accumulate", accumulate, NN__OPF_NO_GRAD | NN__OPF_WRITABLE | NN__OPF_RANK0)  \
    X(FILL, "fill", fill, NN__OPF_NO_GRAD | NN__OPF_RANK0)                                       \
    X(BINARY, "binary", binary, NN__OPF_RANK0 | NN__OPF_HALF)                                                 \
    X(BINARY_GRAD, "binary_grad", binary_grad, NN__OPF_RANK0 | NN__OPF_HALF)                                  \
    X(COMPARE, "compare", compare, NN__OPF_NO_GRAD | NN__OPF_RANK0)                              \
    X(WHERE, "where", where, NN__OPF_RANK0)                                                      \
    X(MASKED_FILL, "masked_fill", masked_fill, NN__OPF_RANK0)                                    \
    X(EXPAND, "expand", expand, NN__OPF_RANK0)                                                   \
    X(SUM_TO, "sum_to", sum_to, NN__OPF_RANK0 | NN__OPF_HALF)                                                   \
    X(UNARY_NOGRAD, "unary_nograd", unary_nograd, NN__OPF_NO_GRAD | NN__OPF_RANK0 | NN__OPF_HALF)

#define NN__OPS_MATMUL(X)           \
    X(MATMUL, "matmul", matmul, NN__OPF_HALF)

#define NN__OPS_REDUCE(X)                                                     \
    X(SUM_ALL, "sum", sum_all, NN__OPF_RANK0)                                 \
    X(EXPAND_SCALAR, "expand", expand_scalar, NN__OPF_RANK0)                  \
    X(ARGMAX, "argmax", argmax, NN__OPF_NO_GRAD)                              \
    X(CORRECT_ROWS, "accuracy", correct_rows, NN__OPF_NO_GRAD)                \
    X(GRAD_SUMSQ, "grad_norm", grad_sumsq, 0)                                 \
    X(CLIP_SCALE, "clip_scale", clip_scale, 0)                                \
    X(RED_SUM, "sum_dim", red_sum, NN__OPF_RANK0)                             \
    X(RED_PROD, "prod_dim", red_prod, NN__OPF_RANK0)                          \
    X(RED_AMAX, "amax", red_amax, NN__OPF_RANK0)                              \
    X(RED_AMIN, "amin", red_amin, NN__OPF_RANK0)                              \
    X(RED_MAX, "max_dim", red_max, NN__OPF_RANK0)                             \
    X(RED_MIN, "min_dim", red_min, NN__OPF_RANK0)                             \
    X(RED_VAR, "var_dim", red_var, NN__OPF_RANK0)                             \
    X(RED_STD, "std_dim", red_std, NN__OPF_RANK0)                             \
    X(RED_LSE, "logsumexp", red_lse, NN__OPF_RANK0)                           \
    X(RED_NORM, "norm_dim", red_norm, NN__OPF_RANK0)                          \
    X(ARGMAX_DIM, "argmax_dim", argmax_dim, NN__OPF_NO_GRAD | NN__OPF_RANK0)  \
    X(ARGMIN_DIM, "argmin_dim", argmin_dim, NN__OPF_NO_GRAD | NN__OPF_RANK0)  \
    X(REDUCE_GRAD, "reduce_grad", reduce_grad, NN__OPF_RANK0)                 \
    X(CUMSUM, "cumsum", cumsum, 0)                                            \
    X(CUMSUM_REV, "cumsum_reverse", cumsum_rev, 0)

#define NN__OPS_SOFTMAX(X)                                        \
    X(SOFTMAX, "softmax", softmax, 0)                             \
    X(LOG_SOFTMAX, "log_softmax", log_softmax, 0)                 \
    X(SOFTMAX_GRAD, "softmax_grad", softmax_grad, 0)              \
    X(LOG_SOFTMAX_GRAD, "log_softmax_grad", log_softmax_grad, 0)

#define NN__OPS_LOSS(X)                                                  \
    X(XENT_ROWS, "softmax_cross_entropy", xent_rows, 0)                  \
    X(XENT_GRAD, "softmax_cross_entropy_grad", xent_grad, 0)             \
    X(BCE_LOGITS, "bce_with_logits", bce_logits, 0)                      \
    X(BCE_LOGITS_GRAD, "bce_with_logits_grad", bce_logits_grad, 0)       \
    X(LOSS_EW, "loss", loss_ew, 0)                                       \
    X(LOSS_EW_GRAD, "loss_grad", loss_ew_grad, 0)                        \
    X(CE_ROWS, "cross_entropy", ce_rows, 0)                              \
    X(CE_ROWS_GRAD, "cross_entropy_grad", ce_rows_grad, 0)               \
    X(CE_WEIGHTS, "cross_entropy_weights", ce_weights, NN__OPF_NO_GRAD)  \
    X(DIV_SCALAR, "div_scalar", div_scalar, 0)                           \
    X(LOSS_ROWS, "row_loss", loss_rows, 0)                               \
    X(LOSS_ROWS_GRAD, "row_loss_grad", loss_rows_grad, 0)

#define NN__OPS_GATHER(X)                                            \
    X(GATHER_ROWS, "gather_rows", gather_rows, 0)                    \
    X(INDEX_SELECT, "index_select", index_select, 0)                 \
    X(GATHER, "gather", gather, 0)                                   \
    X(SCATTER_ADD, "scatter_add", scatter_add, 0)                    \
    X(ONE_HOT, "one_hot", one_hot, NN__OPF_NO_GRAD)

#define NN__OPS_SHAPE(X)                                          \
    X(RESHAPE, "reshape", reshape, NN__OPF_VIEW | NN__OPF_RANK0 | NN__OPF_HALF) \
    X(PERMUTE, "permute", permute, NN__OPF_HALF)                  \
    X(CONCAT, "concat", concat, NN__OPF_HALF)                     \
    X(SLICE, "slice", slice, NN__OPF_HALF)                        \
    X(SLICE_GRAD, "slice_grad", slice_grad, NN__OPF_HALF)         \
    X(FLIP, "flip", flip, 0)                                      \
    X(REPEAT, "repeat", repeat, 0)                                \
    X(REPEAT_GRAD, "repeat_grad", repeat_grad, 0)                 \
    X(TRIL, "tril_triu", tril, 0)                                 \
    X(CONST, "constant", const, NN__OPF_NO_GRAD | NN__OPF_CONST)  \
    X(PAD2D, "pad2d", pad2d, 0)                                   \
    X(PAD2D_GRAD, "pad2d_grad", pad2d_grad, 0)                    \
    X(UPSAMPLE2D, "upsample2d", upsample2d, 0)                    \
    X(UPSAMPLE2D_GRAD, "upsample2d_grad", upsample2d_grad, 0)

#define NN__OPS_CONV(X)                                          \
    X(CONV2D, "conv2d", conv2d, NN__OPF_HALF)                    \
    X(CONV2D_DX, "conv2d_grad_input", conv2d_dx, NN__OPF_HALF)   \
    X(CONV2D_DW, "conv2d_grad_weight", conv2d_dw, NN__OPF_HALF)  \
    X(CHANNEL_BIAS, "channel_bias", channel_bias, 0)             \
    X(CHANNEL_SUM, "channel_sum", channel_sum, 0)                \
    X(CONV3D, "conv3d", conv3d, 0)                               \
    X(CONV3D_DX, "conv3d_grad_input", conv3d_dx, 0)              \
    X(CONV3D_DW, "conv3d_grad_weight", conv3d_dw, 0)

#define NN__OPS_NORM(X)                                        \
    X(NORM_STATS, "norm_stats", norm_stats, NN__OPF_HALF)      \
    X(NORM_FORWARD, "norm", norm_forward, NN__OPF_HALF)        \
    X(NORM_DX, "norm_grad_input", norm_dx, NN__OPF_HALF)       \
    X(NORM_DGAMMA, "norm_grad_weight", norm_dgamma, NN__OPF_HALF) \
    X(NORM_DBETA, "norm_grad_bias", norm_dbeta, NN__OPF_HALF)  \
    X(BN_RUNNING, "batch_norm_running_update", bn_running, 0)  \
    X(BN_PACK, "batch_norm_running_stats", bn_pack, 0)          \
    X(RMS_NORM, "rms_norm", rms_norm, 0)                         \
    X(RMS_NORM_DX, "rms_norm_grad_input", rms_norm_dx, 0)

#define NN__OPS_POOL(X)                                                      \
    X(MAXPOOL2D, "max_pool2d", maxpool2d, NN__OPF_HALF)                      \
    X(MAXPOOL2D_ARGMAX, "max_pool2d_argmax", maxpool2d_argmax, NN__OPF_HALF) \
    X(MAXPOOL2D_GRAD, "max_pool2d_grad", maxpool2d_grad, NN__OPF_HALF)       \
    X(AVGPOOL2D, "avg_pool2d", avgpool2d, NN__OPF_HALF)                      \
    X(AVGPOOL2D_GRAD, "avg_pool2d_grad", avgpool2d_grad, NN__OPF_HALF)

#define NN__OPS_OPTIM(X)                                                     \
    X(OPT_SGD, "sgd", opt_sgd, NN__OPF_HALF)                                 \
    X(OPT_ADAM, "adam", opt_adam, NN__OPF_HALF)                              \
    X(OPT_STEP, "optimizer", opt_step, NN__OPF_HALF)                         \
    X(GRAD_ACC, "grad_accumulate", grad_acc, 0)                              \
    X(NONFINITE_COUNT, "nonfinite_count", nonfinite_count, NN__OPF_NO_GRAD)  \
    X(SKIP_GATE, "skip_gate", skip_gate, NN__OPF_NO_GRAD)                    \
    /* dynamic loss scaling */                                               \
    X(LOSS_SEED, "loss_scale_seed", loss_seed, NN__OPF_NO_GRAD | NN__OPF_RANK0)\
    X(LOSS_SCALE, "loss_scale", loss_scale, NN__OPF_NO_GRAD)

#define NN__OPS_RANDOM(X)                                                           \
    X(RAND, "rand", rand, NN__OPF_NO_GRAD | NN__OPF_RANK0)                          \
    X(RANDN, "randn", randn, NN__OPF_NO_GRAD | NN__OPF_RANK0)                       \
    X(RANDINT, "randint", randint, NN__OPF_NO_GRAD | NN__OPF_RANK0)                 \
    X(BERNOULLI, "bernoulli", bernoulli, NN__OPF_NO_GRAD | NN__OPF_RANK0)           \
    X(GAUSSIAN_NOISE, "gaussian_noise", gaussian_noise, NN__OPF_RANK0)              \
    X(ALPHA_DROPOUT, "alpha_dropout", alpha_dropout, NN__OPF_RANK0)                 \
    X(ALPHA_DROPOUT_GRAD, "alpha_dropout_grad", alpha_dropout_grad, NN__OPF_RANK0)  \
    X(DROPOUT, "dropout", dropout, NN__OPF_RANK0 | NN__OPF_HALF)                    \
    X(SAMPLE_LOGITS, "sample_logits", sample_logits, NN__OPF_NO_GRAD)

#define NN__OPS_ROPE(X)                                                                  \
    X(ROPE, "rope", rope, 0)                                                              \
    X(SINUSOIDAL, "sinusoidal_positions", sinusoidal, NN__OPF_NO_GRAD | NN__OPF_CONST)

/* src/ops/segment.c: a stable sort of an index once, then segment reductions in index order */
#define NN__OPS_SEGMENT(X)                                                  \
    X(SEGMENT_SORT, "segment_sort", segment_sort, NN__OPF_NO_GRAD)          \
    X(SEGMENT_REDUCE, "segment_reduce", segment_reduce, 0)                  \
    X(SEGMENT_GATHER, "segment_gather", segment_gather, 0)                  \
    X(SEGMENT_MAX_GRAD, "segment_max_grad", segment_max_grad, 0)            \
    X(EMBEDDING, "embedding", embedding, NN__OPF_HALF)                       \
    X(MOE_SLOTS, "moe_slots", moe_slots, NN__OPF_NO_GRAD)

/* the fused scaled dot-product attention (src/ops/attention.c) */
#define NN__OPS_ATTENTION(X)                                                  \
    X(ATTENTION, "attention", attention, NN__OPF_HALF)                        \
    X(ATTENTION_DELTA, "attention_grad_delta", attention_delta, NN__OPF_HALF) \
    X(ATTENTION_DQ, "attention_grad_query", attention_dq, NN__OPF_HALF)       \
    X(ATTENTION_DKV, "attention_grad_key_value", attention_dkv, NN__OPF_HALF) \
    X(ATTENTION_DMASK, "attention_grad_mask", attention_dmask, NN__OPF_HALF)

#define NN__OPS_RECURRENT(X)                                         \
    X(REC_WS, "recurrent_workspace", rec_ws, NN__OPF_NO_GRAD)        \
    X(REC_SEQ, "recurrent", rec_seq, 0)                              \
    X(REC_SEQ_GRAD, "recurrent_grad", rec_seq_grad, 0)               \
    X(LAST_VALID, "last_valid", last_valid, 0)                       \
    X(LAST_VALID_GRAD, "last_valid_grad", last_valid_grad, 0)                \
    X(REC_STATE, "recurrent_state", rec_state, NN__OPF_NO_GRAD | NN__OPF_WRITABLE) \
    X(REC_STATE_SET, "recurrent_state_set", rec_state_set, NN__OPF_NO_GRAD)   \
    X(REC_REVERSE, "reverse_sequences", rec_reverse, 0)

/* src/ops/cast.c: storage types (nn_to_dtype) */
#define NN__OPS_CAST(X) \
    X(CAST, "to_dtype", cast, NN__OPF_HALF | NN__OPF_RANK0)

#define NN__OPS(X)                                                                                          \
    NN__OPS_LEAF(X) NN__OPS_ELEMENTWISE(X) NN__OPS_MATMUL(X) NN__OPS_REDUCE(X) NN__OPS_SOFTMAX(X)          \
    NN__OPS_LOSS(X) NN__OPS_GATHER(X) NN__OPS_SHAPE(X) NN__OPS_CONV(X) NN__OPS_NORM(X) NN__OPS_POOL(X)    \
    NN__OPS_OPTIM(X) NN__OPS_RANDOM(X)                                                                     \
    NN__OPS_SEGMENT(X)                                                                                     \
    NN__OPS_ROPE(X)                                                                                        \
    NN__OPS_ATTENTION(X)                                                                                   \
    NN__OPS_RECURRENT(X)                                                                                   \
    NN__OPS_CAST(X)                                                                                        \
    /* a new family's list goes on the line above */

typedef enum nn__opcode {
#define NN__X(e, s, stem, flags) NN__OP_##e,
    NN__OPS(NN__X)
#undef NN__X
    NN__OP_COUNT
} nn__opcode;

typedef struct nn__op_def {
    const char *name;
    nn_result (*cpu)(nn_graph *g, nn__node *n);
    nn_result (*launch)(nn_graph *g, int id);
    void (*grad)(nn_graph *g, int id);
    void (*plan)(nn_graph *g, nn__node *n);
    unsigned flags;
} nn__op_def;

static const nn__op_def *nn__op(int op); /* src/ops/registry.c */

/* In CPU bodies: node id's data as float and as int32. */
#define NN__F(id) (g->nodes[(id)].buf.host)
#define NN__I(id) ((int32_t *)g->nodes[(id)].buf.host)

/* The locals every autograd rule starts from: n (a copy: nodes may move while the rule
   adds nodes), gy = d(loss)/d(n), the first two inputs a and b, and whether each needs a
   gradient (ga, gb). */
#define NN__GRAD_RULE(g, id)                                                                \
    nn__node n = (g)->nodes[(id)];                                                          \
    nn_tensor gy = nn__tensor(n.grad);                                                      \
    int a = n.in[0], b = n.n_in > 1 ? n.in[1] : -1;                                         \
    int ga = a >= 0 && (g)->nodes[a].needs_grad, gb = b >= 0 && (g)->nodes[b].needs_grad;  \
    (void)gy, (void)a, (void)b, (void)ga, (void)gb

/* The optimizer's part of compiling (src/ops/optim.c), which the engine reaches through the
   registry as it reaches ops: its settings checked and its schedule set, whether the graph
   updates its parameters, then its ops added after autograd. */
typedef struct nn__optim_hooks {
    nn_result (*configure)(nn_graph *g, const nn_compile_desc *d);
    int (*updates)(const nn_graph *g);
    nn_result (*add)(nn_graph *g);
} nn__optim_hooks;
static const nn__optim_hooks *nn__optim(void); /* src/ops/registry.c */

/* Elementwise fusion (src/ops/fuse.c), reached as the optimizer is: `plan` finds the chains
   of elementwise nodes adjacent in the schedule (compile, after the ops' plans, before
   memory is planned; off with NN_FUSE=0) and marks their nodes (nn__node.fused); `cpu` runs
   a chain on the CPU backend at its last node, `launch` records its one generated kernel. */
typedef struct nn__fuse_hooks {
    nn_result (*plan)(nn_graph *g);
    nn_result (*cpu)(nn_graph *g, nn__node *last);
    nn_result (*launch)(nn_graph *g, int last);
    char *(*stage_text)(const nn_graph *g, int id, const char *sfx, int part);
} nn__fuse_hooks;
static const nn__fuse_hooks *nn__fuse(void); /* src/ops/fuse.c */

/* Launches of stages (src/ops/matmul.c): what src/opencl/backend.c's nn__cl_stages asks of the
   GEMM's launches */
static int nn__gemm_stage_kind(const nn__launch *l);
static int nn__gemm_sig_index(const char *name);
static char *nn__gemm_stages_source(const nn_graph *g, int first, int n);
#endif /* NN__OPS_H */
