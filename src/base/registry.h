/* The op registry. Each family's list names its ops once: the enum value, the name used
   in messages, and the functions that define the op, all in src/ops/FAMILY.c:
     cpu    nn_result f(nn_graph *g, nn__node *n)  the CPU backend's body
     dev    nn_result f(nn_graph *g, int id)       the device plan: the launches of
                                                   kernels/FAMILY.cl (nn__launch_add, nn__args)
     grad   void f(nn_graph *g, int id)            the autograd rule (nn__grad_none: no rule)
     plan   void f(nn_graph *g, nn__node *n)       compile time, before memory is planned:
                                                   the algorithm and scratch size (0: none)
     flags  NN__OPF_*
   The enum, the names and the table in src/ops/registry.c are all made from these lists,
   so an op with a missing function does not compile. */
#ifndef NN__OPS_H
#define NN__OPS_H
#include "internal.h"

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

#define NN__OPS_LEAF(X)                                                                                   \
    X(INPUT, "input", nn__cpu_leaf, nn__dev_leaf, nn__grad_none, 0, NN__OPF_LEAF | NN__OPF_RANK0)                          \
    X(PARAM, "param", nn__cpu_leaf, nn__dev_leaf, nn__grad_none, 0, NN__OPF_LEAF)

#define NN__OPS_ELEMENTWISE(X)                                                                              \
    X(ADD, "add", nn__cpu_binary, nn__dev_binary, nn__grad_add_sub, 0, NN__OPF_RANK0)                                  \
    X(SUB, "sub", nn__cpu_binary, nn__dev_binary, nn__grad_add_sub, 0, NN__OPF_RANK0)                                  \
    X(MUL, "mul", nn__cpu_binary, nn__dev_binary, nn__grad_mul, 0, NN__OPF_RANK0)                                      \
    X(SCALE, "scale", nn__cpu_scale, nn__dev_scale, nn__grad_scale, 0, NN__OPF_RANK0)                                  \
    X(UNARY, "activation", nn__cpu_unary, nn__dev_unary, nn__grad_unary, 0, NN__OPF_RANK0)                             \
    X(UNARY_GRAD, "activation_grad", nn__cpu_unary_grad, nn__dev_unary_grad, nn__grad_none, 0, NN__OPF_RANK0)          \
    X(PRELU, "prelu", nn__cpu_prelu, nn__dev_prelu, nn__grad_prelu, 0, 0)                                  \
    X(PRELU_DX, "prelu_grad_input", nn__cpu_prelu, nn__dev_prelu, nn__grad_none, 0, 0)                     \
    X(PRELU_DW, "prelu_grad_weight", nn__cpu_prelu_dw, nn__dev_prelu_dw, nn__grad_none, nn__plan_prelu_dw, 0) \
    X(DROPOUT, "dropout", nn__cpu_dropout, nn__dev_dropout, nn__grad_dropout, 0, NN__OPF_RANK0)                        \
    X(ACCUMULATE, "accumulate", nn__cpu_accumulate, nn__dev_accumulate, nn__grad_none, 0,                 \
      NN__OPF_NO_GRAD | NN__OPF_WRITABLE | NN__OPF_RANK0) \
    X(FILL, "fill", nn__cpu_fill, nn__dev_fill, nn__grad_none, 0, NN__OPF_NO_GRAD | NN__OPF_RANK0)                          \
    X(BINARY, "binary", nn__cpu_binary, nn__dev_binary, nn__grad_binary, 0, NN__OPF_RANK0)                             \
    X(BINARY_GRAD, "binary_grad", nn__cpu_binary_grad, nn__dev_binary_grad, nn__grad_none, 0, NN__OPF_RANK0)           \
    X(COMPARE, "compare", nn__cpu_binary, nn__dev_binary, nn__grad_none, 0, NN__OPF_NO_GRAD | NN__OPF_RANK0)               \
    X(WHERE, "where", nn__cpu_where, nn__dev_where, nn__grad_where, 0, NN__OPF_RANK0)                                  \
    X(MASKED_FILL, "masked_fill", nn__cpu_masked_fill, nn__dev_masked_fill, nn__grad_masked_fill, 0, NN__OPF_RANK0)    \
    X(EXPAND, "expand", nn__cpu_expand, nn__dev_expand, nn__grad_expand, 0, NN__OPF_RANK0)                             \
    X(SUM_TO, "sum_to", nn__cpu_sum_to, nn__dev_sum_to, nn__grad_sum_to, 0, NN__OPF_RANK0)                             \
    X(UNARY_NOGRAD, "unary_nograd", nn__cpu_unary, nn__dev_unary, nn__grad_none, 0, NN__OPF_NO_GRAD | NN__OPF_RANK0)

#define NN__OPS_MATMUL(X) X(MATMUL, "matmul", nn__cpu_matmul, nn__dev_matmul, nn__grad_matmul, nn__plan_matmul, 0)

#define NN__OPS_REDUCE(X)                                                                                   \
    X(SUM_ALL, "sum", nn__cpu_sum_all, nn__dev_sum_all, nn__grad_sum_all, 0, NN__OPF_RANK0)                            \
    X(EXPAND_SCALAR, "expand", nn__cpu_expand_scalar, nn__dev_expand_scalar, nn__grad_expand_scalar, 0, NN__OPF_RANK0) \
    X(ARGMAX, "argmax", nn__cpu_argmax, nn__dev_argmax, nn__grad_none, 0, NN__OPF_NO_GRAD)            \
    X(CORRECT_ROWS, "accuracy", nn__cpu_correct_rows, nn__dev_correct_rows, nn__grad_none, 0, NN__OPF_NO_GRAD) \
    X(GRAD_SUMSQ, "grad_norm", nn__cpu_grad_sumsq, nn__dev_grad_sumsq, nn__grad_none, 0, 0)                   \
    X(CLIP_SCALE, "clip_scale", nn__cpu_clip_scale, nn__dev_clip_scale, nn__grad_none, 0, 0)            \
    X(RED_SUM, "sum_dim", nn__cpu_reduce, nn__dev_reduce, nn__grad_reduce, 0, NN__OPF_RANK0)                          \
    X(RED_PROD, "prod_dim", nn__cpu_reduce, nn__dev_reduce, nn__grad_reduce, 0, NN__OPF_RANK0)                        \
    X(RED_AMAX, "amax", nn__cpu_reduce, nn__dev_reduce, nn__grad_reduce, 0, NN__OPF_RANK0)                            \
    X(RED_AMIN, "amin", nn__cpu_reduce, nn__dev_reduce, nn__grad_reduce, 0, NN__OPF_RANK0)                            \
    X(RED_MAX, "max_dim", nn__cpu_reduce, nn__dev_reduce, nn__grad_reduce, 0, NN__OPF_RANK0)                          \
    X(RED_MIN, "min_dim", nn__cpu_reduce, nn__dev_reduce, nn__grad_reduce, 0, NN__OPF_RANK0)                          \
    X(RED_VAR, "var_dim", nn__cpu_reduce, nn__dev_reduce, nn__grad_reduce, 0, NN__OPF_RANK0)                          \
    X(RED_STD, "std_dim", nn__cpu_reduce, nn__dev_reduce, nn__grad_reduce, 0, NN__OPF_RANK0)                          \
    X(RED_LSE, "logsumexp", nn__cpu_reduce, nn__dev_reduce, nn__grad_reduce, 0, NN__OPF_RANK0)                        \
    X(RED_NORM, "norm_dim", nn__cpu_reduce, nn__dev_reduce, nn__grad_reduce, 0, NN__OPF_RANK0)                        \
    X(ARGMAX_DIM, "argmax_dim", nn__cpu_reduce, nn__dev_reduce, nn__grad_none, 0, NN__OPF_NO_GRAD | NN__OPF_RANK0)        \
    X(ARGMIN_DIM, "argmin_dim", nn__cpu_reduce, nn__dev_reduce, nn__grad_none, 0, NN__OPF_NO_GRAD | NN__OPF_RANK0)        \
    X(REDUCE_GRAD, "reduce_grad", nn__cpu_reduce_grad, nn__dev_reduce_grad, nn__grad_none, 0, NN__OPF_RANK0)          \
    X(CUMSUM, "cumsum", nn__cpu_cumsum, nn__dev_cumsum, nn__grad_cumsum, 0, 0)                            \
    X(CUMSUM_REV, "cumsum_reverse", nn__cpu_cumsum, nn__dev_cumsum, nn__grad_cumsum, 0, 0)

#define NN__OPS_SOFTMAX(X)                                                                                  \
    X(SOFTMAX, "softmax", nn__cpu_softmax, nn__dev_softmax, nn__grad_softmax, 0, 0)                        \
    X(LOG_SOFTMAX, "log_softmax", nn__cpu_softmax, nn__dev_softmax, nn__grad_log_softmax, 0, 0)            \
    X(SOFTMAX_GRAD, "softmax_grad", nn__cpu_softmax_grad, nn__dev_softmax_grad, nn__grad_none, 0, 0)       \
    X(LOG_SOFTMAX_GRAD, "log_softmax_grad", nn__cpu_softmax_grad, nn__dev_softmax_grad, nn__grad_none, 0, 0)

#define NN__OPS_LOSS(X)                                                                                     \
    X(XENT_ROWS, "softmax_cross_entropy", nn__cpu_xent_rows, nn__dev_xent_rows, nn__grad_xent_rows, 0, 0)  \
    X(XENT_GRAD, "softmax_cross_entropy_grad", nn__cpu_xent_grad, nn__dev_xent_grad, nn__grad_none, 0, 0)  \
    X(BCE_LOGITS, "bce_with_logits", nn__cpu_bce_logits, nn__dev_bce_logits, nn__grad_bce_logits, 0, 0)    \
    X(BCE_LOGITS_GRAD, "bce_with_logits_grad", nn__cpu_bce_logits_grad, nn__dev_bce_logits_grad,           \
      nn__grad_none, 0, 0)                                                                                 \
    X(LOSS_EW, "loss", nn__cpu_loss_ew, nn__dev_loss_ew, nn__grad_loss_ew, 0, 0)                           \
    X(LOSS_EW_GRAD, "loss_grad", nn__cpu_loss_ew_grad, nn__dev_loss_ew, nn__grad_none, 0, 0)               \
    X(CE_ROWS, "cross_entropy", nn__cpu_ce_rows, nn__dev_ce_rows, nn__grad_ce_rows, 0, 0)                  \
    X(CE_ROWS_GRAD, "cross_entropy_grad", nn__cpu_ce_rows_grad, nn__dev_ce_rows, nn__grad_none, 0, 0)      \
    X(CE_WEIGHTS, "cross_entropy_weights", nn__cpu_ce_weights, nn__dev_ce_weights, nn__grad_none, 0,       \
      NN__OPF_NO_GRAD)                                                                                     \
    X(DIV_SCALAR, "div_scalar", nn__cpu_div_scalar, nn__dev_div_scalar, nn__grad_div_scalar, 0, 0)         \
    X(LOSS_ROWS, "row_loss", nn__cpu_loss_rows, nn__dev_loss_rows, nn__grad_loss_rows, 0, 0)               \
    X(LOSS_ROWS_GRAD, "row_loss_grad", nn__cpu_loss_rows_grad, nn__dev_loss_rows, nn__grad_none, 0, 0)

#define NN__OPS_GATHER(X)                                                                                   \
    X(GATHER_ROWS, "gather_rows", nn__cpu_gather_rows, nn__dev_gather_rows, nn__grad_gather_rows, 0, 0)    \
    X(GATHER_ROWS_GRAD, "gather_rows_grad", nn__cpu_gather_rows_grad, nn__dev_gather_rows_grad,            \
      nn__grad_none, 0, 0)                                                                                 \
    X(INDEX_SELECT, "index_select", nn__cpu_index_select, nn__dev_index_select, nn__grad_index_select, 0, 0) \
    X(INDEX_SELECT_GRAD, "index_select_grad", nn__cpu_index_select, nn__dev_index_select, nn__grad_none, 0, 0) \
    X(GATHER, "gather", nn__cpu_gather, nn__dev_gather, nn__grad_gather, 0, 0)                             \
    X(SCATTER_ADD, "scatter_add", nn__cpu_scatter_add, nn__dev_scatter_add, nn__grad_scatter_add, 0, 0)    \
    X(ONE_HOT, "one_hot", nn__cpu_one_hot, nn__dev_one_hot, nn__grad_none, 0, NN__OPF_NO_GRAD)

#define NN__OPS_SHAPE(X)                                                                                    \
    X(RESHAPE, "reshape", nn__cpu_reshape, nn__dev_reshape, nn__grad_reshape, 0, NN__OPF_VIEW | NN__OPF_RANK0)             \
    X(PERMUTE, "permute", nn__cpu_permute, nn__dev_permute, nn__grad_permute, 0, 0)                        \
    X(CONCAT, "concat", nn__cpu_concat, nn__dev_concat, nn__grad_concat, 0, 0)                             \
    X(SLICE, "slice", nn__cpu_slice, nn__dev_slice, nn__grad_slice, 0, 0)                                  \
    X(SLICE_GRAD, "slice_grad", nn__cpu_slice, nn__dev_slice, nn__grad_none, 0, 0)                         \
    X(FLIP, "flip", nn__cpu_flip, nn__dev_flip, nn__grad_flip, 0, 0)                                       \
    X(REPEAT, "repeat", nn__cpu_repeat, nn__dev_repeat, nn__grad_repeat, 0, 0)                             \
    X(REPEAT_GRAD, "repeat_grad", nn__cpu_repeat, nn__dev_repeat, nn__grad_none, 0, 0)                     \
    X(TRIL, "tril_triu", nn__cpu_tril, nn__dev_tril, nn__grad_tril, 0, 0)                                  \
    X(CONST, "constant", nn__cpu_const, nn__dev_const, nn__grad_none, 0, NN__OPF_NO_GRAD | NN__OPF_CONST)  \
    X(PAD2D, "pad2d", nn__cpu_pad2d, nn__dev_pad_upsample, nn__grad_pad_upsample, 0, 0)                    \
    X(PAD2D_GRAD, "pad2d_grad", nn__cpu_pad2d, nn__dev_pad_upsample, nn__grad_none, 0, 0)                  \
    X(UPSAMPLE2D, "upsample2d", nn__cpu_upsample2d, nn__dev_pad_upsample, nn__grad_pad_upsample, 0, 0)     \
    X(UPSAMPLE2D_GRAD, "upsample2d_grad", nn__cpu_upsample2d, nn__dev_pad_upsample, nn__grad_none, 0, 0)

#define NN__OPS_CONV(X)                                                                                     \
    X(CONV2D, "conv2d", nn__cpu_conv2d, nn__dev_conv2d, nn__grad_conv2d, nn__plan_conv2d, 0)               \
    X(CONV2D_DX, "conv2d_grad_input", nn__cpu_conv2d, nn__dev_conv2d, nn__grad_conv2d_dx, nn__plan_conv2d, 0) \
    X(CONV2D_DW, "conv2d_grad_weight", nn__cpu_conv2d, nn__dev_conv2d, nn__grad_none, nn__plan_conv2d, 0)  \
    X(CHANNEL_BIAS, "channel_bias", nn__cpu_channel_bias, nn__dev_channel_bias, nn__grad_channel_bias, 0, 0) \
    X(CHANNEL_SUM, "channel_sum", nn__cpu_channel_sum, nn__dev_channel_sum, nn__grad_none, 0, 0)           \
    X(CONV3D, "conv3d", nn__cpu_conv3d, nn__dev_conv3d, nn__grad_conv3d, nn__plan_conv3d, 0)               \
    X(CONV3D_DX, "conv3d_grad_input", nn__cpu_conv3d, nn__dev_conv3d, nn__grad_none, nn__plan_conv3d, 0)   \
    X(CONV3D_DW, "conv3d_grad_weight", nn__cpu_conv3d, nn__dev_conv3d, nn__grad_none, nn__plan_conv3d, 0)

#define NN__OPS_NORM(X)                                                                                     \
    X(NORM_STATS, "norm_stats", nn__cpu_norm, nn__dev_norm_reduce, nn__grad_none, 0, 0)                    \
    X(NORM_FORWARD, "norm", nn__cpu_norm, nn__dev_norm_forward, nn__grad_norm_forward, 0, 0)               \
    X(NORM_DX, "norm_grad_input", nn__cpu_norm, nn__dev_norm_reduce, nn__grad_none, 0, 0)                  \
    X(NORM_DGAMMA, "norm_grad_weight", nn__cpu_norm, nn__dev_norm_reduce, nn__grad_none, 0, 0)             \
    X(NORM_DBETA, "norm_grad_bias", nn__cpu_norm, nn__dev_norm_reduce, nn__grad_none, 0, 0)                \
    X(BN_RUNNING, "batch_norm_running_update", nn__cpu_bn_running, nn__dev_bn_running, nn__grad_none, 0, 0) \
    X(BN_PACK, "batch_norm_running_stats", nn__cpu_bn_pack, nn__dev_bn_pack, nn__grad_none, 0, 0)

#define NN__OPS_POOL(X)                                                                                     \
    X(MAXPOOL2D, "max_pool2d", nn__cpu_pool2d, nn__dev_pool2d, nn__grad_maxpool2d, 0, 0)                   \
    X(MAXPOOL2D_ARGMAX, "max_pool2d_argmax", nn__cpu_pool2d, nn__dev_pool2d, nn__grad_none, 0, 0)          \
    X(MAXPOOL2D_GRAD, "max_pool2d_grad", nn__cpu_pool2d, nn__dev_pool2d, nn__grad_none, 0, 0)              \
    X(AVGPOOL2D, "avg_pool2d", nn__cpu_pool2d, nn__dev_pool2d, nn__grad_avgpool2d, 0, 0)                   \
    X(AVGPOOL2D_GRAD, "avg_pool2d_grad", nn__cpu_pool2d, nn__dev_pool2d, nn__grad_none, 0, 0)

#define NN__OPS_OPTIM(X)                                                                                    \
    X(OPT_SGD, "sgd", nn__cpu_opt_sgd, nn__dev_opt_sgd, nn__grad_none, 0, 0)                               \
    X(OPT_ADAM, "adam", nn__cpu_opt_adam, nn__dev_opt_adam, nn__grad_none, 0, 0)                           \
    X(OPT_STEP, "optimizer", nn__cpu_opt_step, nn__dev_opt_step, nn__grad_none, 0, 0)                      \
    X(GRAD_ACC, "grad_accumulate", nn__cpu_grad_acc, nn__dev_grad_acc, nn__grad_none, 0, 0)                \
    X(NONFINITE_COUNT, "nonfinite_count", nn__cpu_nonfinite_count, nn__dev_nonfinite_count, nn__grad_none, 0, \
      NN__OPF_NO_GRAD)                                                                                     \
    X(SKIP_GATE, "skip_gate", nn__cpu_skip_gate, nn__dev_skip_gate, nn__grad_none, 0, NN__OPF_NO_GRAD)

#define NN__OPS_RANDOM(X)                                                                                   \
    X(RAND, "rand", nn__cpu_random, nn__dev_random, nn__grad_none, 0, NN__OPF_NO_GRAD | NN__OPF_RANK0)                     \
    X(RANDN, "randn", nn__cpu_random, nn__dev_random, nn__grad_none, 0, NN__OPF_NO_GRAD | NN__OPF_RANK0)                   \
    X(RANDINT, "randint", nn__cpu_random, nn__dev_random, nn__grad_none, 0, NN__OPF_NO_GRAD | NN__OPF_RANK0)               \
    X(BERNOULLI, "bernoulli", nn__cpu_random, nn__dev_random, nn__grad_none, 0, NN__OPF_NO_GRAD | NN__OPF_RANK0)           \
    X(GAUSSIAN_NOISE, "gaussian_noise", nn__cpu_random, nn__dev_random, nn__grad_gaussian_noise, 0, NN__OPF_RANK0)     \
    X(ALPHA_DROPOUT, "alpha_dropout", nn__cpu_random, nn__dev_random, nn__grad_alpha_dropout, 0, NN__OPF_RANK0)        \
    X(ALPHA_DROPOUT_GRAD, "alpha_dropout_grad", nn__cpu_random, nn__dev_random, nn__grad_none, 0, NN__OPF_RANK0)

#define NN__OPS(X)                                                                                          \
    NN__OPS_LEAF(X) NN__OPS_ELEMENTWISE(X) NN__OPS_MATMUL(X) NN__OPS_REDUCE(X) NN__OPS_SOFTMAX(X)          \
    NN__OPS_LOSS(X) NN__OPS_GATHER(X) NN__OPS_SHAPE(X) NN__OPS_CONV(X) NN__OPS_NORM(X) NN__OPS_POOL(X)    \
    NN__OPS_OPTIM(X) NN__OPS_RANDOM(X)

typedef enum nn__opcode {
#define NN__X(e, s, cpu, dev, grad, plan, flags) NN__OP_##e,
    NN__OPS(NN__X)
#undef NN__X
    NN__OP_COUNT
} nn__opcode;

typedef struct nn__op_def {
    const char *name;
    nn_result (*cpu)(nn_graph *g, nn__node *n);
    nn_result (*dev)(nn_graph *g, int id);
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

/* The optimizer's part of compiling (src/ops/optim.c): its settings checked and its
   schedule set, then its ops added after autograd. */
static nn_result nn__optim_configure(nn_graph *g, const nn_compile_desc *d);
static int nn__optim_updates(const nn_graph *g); /* the graph updates its parameters */
static nn_result nn__add_optimizer(nn_graph *g);
#endif /* NN__OPS_H */
