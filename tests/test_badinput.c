/* Bad input, op family by op family: one row per case, a builder that makes the bad graph,
   the nn_result it must give and the words its message must hold (the op's name and the
   offending shape or value, '|' between the parts). Every row runs on every backend: the
   build records the error (or, for the rows marked so, succeeds and nn_graph_compile
   refuses), nn_graph_compile returns the code, nn_graph_step then refuses to run
   (NN_ERR_STATE), nothing crashes and nothing leaks (make test-asan).

   Elsewhere, and not repeated here:
   - tests/test_errors.c: matmul [3, 4] x [5, 6] and add [7, 33] + [7] by name and shape; a
     failed input propagating quietly; float labels for softmax_cross_entropy; a loss that
     is not a scalar; short writes and reads of unkept tensors; nn_relu on a compiled
     graph; a 2^40-element input refused by name; a kernel that does not build; NULL
     arguments of nn_graph_create and nn_graph_step; a tensor id of another graph;
     dropout p = 1.5; a zero dim in nn_input; stepping an uncompiled graph.
   - tests/test_limits.c: shapes whose element count wraps int64 ([2^40, 2^24]); a matmul
     output of 2^32 elements; a dense layer 2^31 wide (refused before allocating); slice
     with length INT64_MAX; conv2d padding of INT_MAX.
   - tests/test_options.c: every optimizer field out of torch.optim's range or NaN; init
     kind 99; pad and upsample modes out of their enums; nn_pad2d pads of INT_MAX.
   - tests/test_activation.c: celu alpha 0, softplus beta 0, hardtanh min > max. */
#include "test.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef nn_tensor (*bad_build)(nn_graph *g, nn_compile_desc *cd);

typedef struct bad_row {
    const char *family, *label;
    bad_build build;
    nn_result code;
    const char *needle; /* '|'-separated parts, each of which the message must contain */
    int at_compile;     /* 1: the build succeeds and nn_graph_compile refuses */
} bad_row;

static nn_tensor F(nn_graph *g, nn_shape s) { return nn_input(g, "x", NN_F32, s); }
static nn_tensor I(nn_graph *g, nn_shape s) { return nn_input(g, "i", NN_I32, s); }
static nn_shape S1(int64_t a) { return nn_shape1(a); }
static nn_shape S2(int64_t a, int64_t b) { return nn_shape2(a, b); }
static nn_shape S3(int64_t a, int64_t b, int64_t c) { return nn_shape3(a, b, c); }
static nn_shape S4(int64_t a, int64_t b, int64_t c, int64_t d) { return nn_shape4(a, b, c, d); }
static nn_shape S5(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) { return nn_shape5(a, b, c, d, e); }
static nn_tensor T(int id) {
    nn_tensor t;
    t.id = id;
    return t;
}

/* A builder that is one expression of g */
#define B(NAME, EXPR)                                                   \
    static nn_tensor NAME(nn_graph *g, nn_compile_desc *cd) {           \
        (void)cd;                                                       \
        return EXPR;                                                    \
    }

/* ---- the graph itself: handles, leaves, compiling ---- */

B(g_none_unary, nn_relu(g, NN_NONE))
B(g_none_second, nn_matmul(g, F(g, S2(2, 3)), NN_NONE, 0, 0))
B(g_id_range, nn_sigmoid(g, T(1000)))
B(g_id_negative, nn_tanh(g, T(-5)))
B(g_input_negdim, F(g, S2(-3, 4)))
/* a rank-0 tensor is a valid input, but an op that handles none refuses it */
static nn_tensor g_input_ndim0(nn_graph *g, nn_compile_desc *cd) {
    nn_shape s;
    (void)cd;
    memset(&s, 0, sizeof s);
    return nn_softmax(g, nn_input(g, "x0", NN_F32, s), -1);
}
static nn_tensor g_param_ndim0(nn_graph *g, nn_compile_desc *cd) {
    nn_shape s;
    nn_init z;
    (void)cd;
    memset(&s, 0, sizeof s);
    memset(&z, 0, sizeof z);
    return nn_param(g, "w0", s, z);
}
static nn_tensor g_sum_dim_ndim0(nn_graph *g, nn_compile_desc *cd) {
    nn_shape s;
    int d = 1;
    (void)cd;
    memset(&s, 0, sizeof s);
    return nn_sum_dim(g, nn_input(g, "x0", NN_F32, s), &d, 1, 0);
}
B(g_input_dtype, nn_input(g, "x", (nn_dtype)5, S1(3)))
static nn_tensor g_input_ndim7(nn_graph *g, nn_compile_desc *cd) {
    nn_shape s = S2(2, 2);
    (void)cd;
    s.ndim = 7;
    return nn_input(g, "x7", NN_F32, s);
}
static nn_tensor g_param_zero(nn_graph *g, nn_compile_desc *cd) {
    nn_init z;
    (void)cd;
    memset(&z, 0, sizeof z);
    return nn_param(g, "w", S2(0, 3), z);
}
static nn_tensor g_param_noname(nn_graph *g, nn_compile_desc *cd) {
    nn_init z;
    (void)cd;
    memset(&z, 0, sizeof z);
    return nn_param(g, NULL, S1(3), z);
}
static nn_tensor g_param_reshape(nn_graph *g, nn_compile_desc *cd) {
    nn_init z;
    (void)cd;
    memset(&z, 0, sizeof z);
    nn_param(g, "fc.weight", S2(4, 3), z);
    return nn_param(g, "fc.weight", S2(3, 4), z);
}
static nn_tensor g_buffer_clash(nn_graph *g, nn_compile_desc *cd) {
    nn_init z;
    (void)cd;
    memset(&z, 0, sizeof z);
    nn_param(g, "bn.weight", S1(4), z);
    return nn_buffer(g, "bn.weight", S1(4), z);
}
static nn_tensor g_grad_int(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    nn_graph_requires_grad(g, I(g, S1(4)));
    return NN_NONE;
}
static nn_tensor g_output_none(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    F(g, S1(2));
    nn_graph_output(g, NN_NONE);
    return NN_NONE;
}
/* leaves and ops on a compiled graph */
static nn_tensor g_compiled(nn_graph *g, int which) {
    nn_tensor x = F(g, S2(2, 3));
    nn_graph_output(g, nn_sigmoid(g, x));
    if (nn_graph_compile(g, NULL) != NN_OK) return T(-1);
    if (which == 0) return F(g, S1(3));
    if (which == 1) {
        nn_init z;
        memset(&z, 0, sizeof z);
        return nn_param(g, "late", S1(3), z);
    }
    return nn_softmax(g, x, -1);
}
static nn_tensor g_compiled_input(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    return g_compiled(g, 0);
}
static nn_tensor g_compiled_param(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    return g_compiled(g, 1);
}
static nn_tensor g_compiled_op(nn_graph *g, nn_compile_desc *cd) {
    (void)cd;
    return g_compiled(g, 2);
}
/* compile-time refusals */
static nn_tensor c_loss_int(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor a = nn_argmax_rows(g, F(g, S2(1, 4)));
    cd->loss = a;
    return a;
}
static nn_tensor c_loss_foreign(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor x = F(g, S1(1));
    cd->loss = T(77);
    return x;
}
static nn_tensor c_opt_kind(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l = nn_sum(g, F(g, S1(3)));
    cd->loss = l;
    cd->optimizer.kind = (nn_optimizer_kind)99;
    return l;
}
static nn_tensor c_schedule_kind(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l = nn_sum(g, F(g, S1(3)));
    cd->loss = l;
    cd->optimizer.kind = NN_OPT_SGD;
    cd->schedule.kind = (nn_lr_schedule_kind)42;
    return l;
}
static nn_tensor c_schedule_milestones(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l = nn_sum(g, F(g, S1(3)));
    cd->loss = l;
    cd->optimizer.kind = NN_OPT_SGD;
    cd->schedule.kind = NN_LR_MULTISTEP;
    cd->schedule.n_milestones = NN_LR_MAX_MILESTONES + 1;
    return l;
}
static nn_tensor c_schedule_step(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor l = nn_sum(g, F(g, S1(3)));
    cd->loss = l;
    cd->optimizer.kind = NN_OPT_SGD;
    cd->schedule.kind = NN_LR_STEP;
    cd->schedule.step_size = -3;
    return l;
}

/* ---- elementwise ---- */

B(e_add_shape, nn_add(g, F(g, S2(3, 4)), F(g, S2(4, 3))))
B(e_sub_rank, nn_sub(g, F(g, S2(3, 4)), F(g, S2(2, 4))))
B(e_mul_int, nn_mul(g, I(g, S2(2, 2)), F(g, S2(2, 2))))
B(e_scale_int, nn_mul_scalar(g, I(g, S1(5)), 2.0f))
B(e_relu_int, nn_relu(g, I(g, S1(5))))
B(e_gelu_none, nn_gelu(g, NN_NONE))
B(e_hardtanh_nan, nn_hardtanh(g, F(g, S1(3)), NAN, 1.0f))
B(e_softplus_neg0, nn_softplus(g, F(g, S1(3)), -0.0f, 20.0f))
B(e_prelu_size, nn_prelu(g, F(g, S3(2, 3, 4)), F(g, S1(2))))
B(e_prelu_rank, nn_prelu(g, F(g, S3(2, 3, 4)), F(g, S2(1, 3))))
B(e_prelu_int, nn_prelu(g, F(g, S3(2, 3, 4)), I(g, S1(3))))
B(e_prelu_xint, nn_prelu(g, I(g, S3(2, 3, 4)), F(g, S1(3))))
B(e_prelu_layer_n, nn_prelu_layer(g, F(g, S3(2, 3, 4)), 0, NULL, "act"))
B(e_prelu_layer_c, nn_prelu_layer(g, F(g, S3(2, 3, 4)), 5, NULL, "act"))
B(e_prelu_layer_name, nn_prelu_layer(g, F(g, S3(2, 3, 4)), 1, NULL, ""))
B(e_dropout_neg, nn_dropout(g, F(g, S1(4)), -0.1f))
B(e_dropout_one, nn_dropout(g, F(g, S1(4)), 1.0f))
B(e_dropout_nan, nn_dropout(g, F(g, S1(4)), NAN))
B(e_dropout_int, nn_dropout(g, I(g, S1(4)), 0.5f))
B(e_accumulate_int, nn_accumulate(g, I(g, S1(4))))

/* ---- matmul and dense ---- */

B(m_rank, nn_matmul(g, F(g, S3(2, 3, 4)), F(g, S3(3, 4, 5)), 0, 0))
B(m_trans, nn_matmul(g, F(g, S2(4, 3)), F(g, S2(5, 6)), 1, 0))
B(m_int, nn_matmul(g, F(g, S2(2, 3)), I(g, S2(3, 2)), 0, 0))
B(m_dense_rank, nn_linear_layer(g, F(g, S3(2, 3, 4)), 5, NULL, "fc"))
B(m_dense_zero, nn_linear_layer(g, F(g, S2(2, 3)), 0, NULL, "fc"))
B(m_dense_neg, nn_linear_layer(g, F(g, S2(2, 3)), -5, NULL, "fc"))
B(m_dense_name, nn_linear_layer(g, F(g, S2(2, 3)), 4, NULL, NULL))
B(m_dense_int, nn_linear_layer(g, I(g, S2(2, 3)), 4, NULL, "fc"))

/* ---- reductions, softmax, argmax ---- */

B(r_sum_int, nn_sum(g, I(g, S1(3))))
B(r_mean_none, nn_mean(g, NN_NONE))
B(r_argmax_rank, nn_argmax_rows(g, F(g, S3(2, 3, 4))))
B(r_acc_float, nn_accuracy(g, F(g, S2(5, 3)), F(g, S1(5))))
B(r_acc_len, nn_accuracy(g, F(g, S2(4, 3)), I(g, S1(5))))
B(s_softmax_int, nn_softmax(g, I(g, S2(2, 3)), -1))
B(s_logsoftmax_id, nn_log_softmax(g, T(99), -1))

/* ---- losses ---- */

static nn_loss_desc LD(nn_reduction r) {
    nn_loss_desc d;
    memset(&d, 0, sizeof d);
    d.reduction = r;
    return d;
}
static nn_tensor l_opt(nn_graph *g, int which) {
    nn_loss_desc d = LD(NN_REDUCTION_DEFAULT);
    nn_tensor p = F(g, S2(4, 3)), t = F(g, S2(4, 3));
    switch (which) {
    case 0: d.delta = -1.0f; return nn_huber_loss(g, p, t, &d);
    case 1: d.delta = NAN; return nn_smooth_l1_loss(g, p, t, &d);
    case 2: d.tau = 1.5f; return nn_quantile_loss(g, p, t, &d);
    case 3: d.gamma = -1.0f; return nn_sigmoid_focal_loss(g, p, t, &d);
    case 4: d.reduction = (nn_reduction)9; return nn_mse_loss(g, p, t, &d);
    case 5: d.reduction = (nn_reduction)-1; return nn_l1_loss(g, p, t, &d);
    case 6: d.reduction = NN_REDUCTION_BATCHMEAN; return nn_mse_loss(g, p, t, &d);
    case 7: d.pos_weight = F(g, S1(3)); return nn_mse_loss(g, p, t, &d);
    case 8: d.pos_weight = F(g, S1(4)); return nn_bce_with_logits_loss(g, p, t, &d);
    case 9: d.weight = F(g, S1(4)); return nn_mse_loss(g, p, t, &d);
    case 10: d.pos_weight = I(g, S1(3)); return nn_bce_with_logits_loss(g, p, t, &d);
    case 11: d.weight = T(-3); return nn_l1_loss(g, p, t, &d);
    default: return T(-1);
    }
}
#define LOPT(N) \
    static nn_tensor l_opt##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return l_opt(g, N); }
LOPT(0) LOPT(1) LOPT(2) LOPT(3) LOPT(4) LOPT(5) LOPT(6) LOPT(7) LOPT(8) LOPT(9) LOPT(10) LOPT(11)
B(l_mse_shape, nn_mse_loss(g, F(g, S2(4, 3)), F(g, S2(3, 4)), NULL))
B(l_l1_int, nn_l1_loss(g, F(g, S1(4)), I(g, S1(4)), NULL))
B(l_kl_none, nn_kl_div_loss(g, F(g, S1(4)), NN_NONE, NULL))
static nn_tensor l_ce(nn_graph *g, int which) {
    nn_loss_desc d = LD(NN_REDUCTION_DEFAULT);
    nn_tensor x = F(g, S2(5, 4)), y = I(g, S1(5));
    switch (which) {
    case 0: return nn_cross_entropy_loss(g, F(g, S3(2, 3, 4)), I(g, S1(2)), &d);
    case 1: return nn_cross_entropy_loss(g, x, F(g, S1(5)), &d);
    case 2: return nn_cross_entropy_loss(g, x, I(g, S1(6)), &d);
    case 3: d.label_smoothing = 1.5f; return nn_cross_entropy_loss(g, x, y, &d);
    case 4: d.label_smoothing = NAN; return nn_cross_entropy_loss(g, x, y, &d);
    case 5: d.weight = F(g, S1(3)); return nn_cross_entropy_loss(g, x, y, &d);
    case 6: d.label_smoothing = 0.1f; return nn_nll_loss(g, x, y, &d);
    case 7: d.pos_weight = F(g, S1(4)); return nn_cross_entropy_loss(g, x, y, &d);
    case 8: d.reduction = NN_REDUCTION_BATCHMEAN; return nn_nll_loss(g, x, y, &d);
    case 9: d.weight = I(g, S1(4)); return nn_nll_loss(g, x, y, &d);
    case 10: return nn_cross_entropy_loss(g, x, I(g, S2(5, 1)), &d);
    default: return T(-1);
    }
}
#define LCE(N) \
    static nn_tensor l_ce##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return l_ce(g, N); }
LCE(0) LCE(1) LCE(2) LCE(3) LCE(4) LCE(5) LCE(6) LCE(7) LCE(8) LCE(9) LCE(10)
B(l_cos_target, nn_cosine_embedding_loss(g, F(g, S2(4, 3)), F(g, S2(4, 3)), F(g, S2(4, 1)), NULL))
B(l_cos_rank, nn_cosine_embedding_loss(g, F(g, S1(4)), F(g, S1(4)), F(g, S1(4)), NULL))
B(l_triplet_shape, nn_triplet_margin_loss(g, F(g, S2(4, 3)), F(g, S2(4, 3)), F(g, S2(4, 2)), NULL))
B(l_triplet_int, nn_triplet_margin_loss(g, F(g, S2(4, 3)), I(g, S2(4, 3)), F(g, S2(4, 3)), NULL))
static nn_tensor l_dice_weight(nn_graph *g, nn_compile_desc *cd) {
    nn_loss_desc d = LD(NN_REDUCTION_DEFAULT);
    (void)cd;
    d.weight = F(g, S1(3));
    return nn_dice_loss(g, F(g, S2(4, 3)), F(g, S2(4, 3)), &d);
}
B(l_xent_rank, nn_softmax_cross_entropy(g, F(g, S1(5)), I(g, S1(5))))
B(l_bcel_shape, nn_bce_with_logits(g, F(g, S2(2, 3)), F(g, S2(3, 2))))
B(l_mse_legacy, nn_mse(g, F(g, S1(3)), F(g, S1(4))))

/* ---- gather ---- */

B(ga_float_idx, nn_gather_rows(g, F(g, S2(5, 3)), F(g, S1(2))))
B(ga_idx_rank, nn_gather_rows(g, F(g, S2(5, 3)), I(g, S2(2, 2))))
B(ga_none, nn_gather_rows(g, NN_NONE, I(g, S1(2))))

/* ---- structure ---- */

B(sh_reshape_count, nn_reshape(g, F(g, S2(2, 3)), S2(4, 2)))
B(sh_reshape_neg, nn_reshape(g, F(g, S2(2, 3)), S2(-1, 6)))
B(sh_reshape_zero, nn_reshape(g, F(g, S2(2, 3)), S2(0, 6)))
B(sh_reshape_wrap, nn_reshape(g, F(g, S2(2, 3)), S2((int64_t)1 << 32, (int64_t)1 << 32)))
static nn_tensor sh_permute(nn_graph *g, int which) {
    static const int rep[3] = {0, 1, 1}, out[3] = {0, 3, 1};
    nn_tensor x = F(g, S3(2, 3, 4));
    return nn_permute(g, x, which == 0 ? rep : which == 1 ? out : NULL, 3);
}
static nn_tensor sh_permute0(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_permute(g, 0); }
static nn_tensor sh_permute1(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_permute(g, 1); }
static nn_tensor sh_permute2(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_permute(g, 2); }
B(sh_transpose_axis, nn_transpose(g, F(g, S2(2, 3)), 0, 3))
static nn_tensor sh_concat(nn_graph *g, int which) {
    nn_tensor xs[65];
    int k;
    for (k = 0; k < 65; k++) xs[k] = F(g, S2(2, 3));
    switch (which) {
    case 0: return nn_concat(g, xs, 0, 0);
    case 1: return nn_concat(g, xs, 65, 0);
    case 2: xs[1] = F(g, S2(3, 4)); return nn_concat(g, xs, 2, 0);
    case 3: xs[1] = I(g, S2(2, 3)); return nn_concat(g, xs, 2, 0);
    case 4: return nn_concat(g, xs, 2, 2);
    case 5: return nn_concat(g, NULL, 2, 0);
    case 6: xs[1] = F(g, S3(2, 3, 1)); return nn_concat(g, xs, 2, 1);
    case 7: /* two of 2^30: the joined tensor would hold 2^31 elements */
        xs[0] = F(g, S1((int64_t)1 << 30));
        xs[1] = F(g, S1((int64_t)1 << 30));
        return nn_concat(g, xs, 2, 0);
    default: return T(-1);
    }
}
#define SHC(N) \
    static nn_tensor sh_concat##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_concat(g, N); }
SHC(0) SHC(1) SHC(2) SHC(3) SHC(4) SHC(5) SHC(6) SHC(7)
B(sh_slice_start, nn_slice(g, F(g, S2(4, 5)), 1, -1, 2))
B(sh_slice_len0, nn_slice(g, F(g, S2(4, 5)), 1, 0, 0))
B(sh_slice_past, nn_slice(g, F(g, S2(4, 5)), 0, 4, 1))
B(sh_slice_axis, nn_slice(g, F(g, S2(4, 5)), -3, 0, 1))
B(sh_slice_startmax, nn_slice(g, F(g, S2(4, 5)), 1, INT64_MAX, 1))
static nn_tensor sh_split(nn_graph *g, int which) {
    static const int64_t sum[2] = {2, 2}, neg[2] = {5, -1}, big[2] = {INT64_MAX, INT64_MAX};
    nn_tensor out[2];
    nn_split(g, F(g, S2(4, 5)), which == 0 ? sum : which == 1 ? neg : big, 2, 1, out);
    return NN_NONE;
}
static nn_tensor sh_split0(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_split(g, 0); }
static nn_tensor sh_split1(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_split(g, 1); }
static nn_tensor sh_split2(nn_graph *g, nn_compile_desc *cd) { (void)cd; return sh_split(g, 2); }
static nn_tensor sh_split_null(nn_graph *g, nn_compile_desc *cd) {
    nn_tensor out[2];
    (void)cd;
    nn_split(g, F(g, S2(4, 5)), NULL, 2, 1, out);
    return NN_NONE;
}
B(sh_pad_neg, nn_pad2d(g, F(g, S4(1, 1, 3, 3)), -1, 0, 0, 0, NN_PAD_ZEROS))
B(sh_pad_reflect, nn_pad2d(g, F(g, S4(1, 1, 3, 3)), 0, 0, 3, 0, NN_PAD_REFLECT))
B(sh_pad_rank, nn_pad2d(g, F(g, S1(5)), 1, 1, 0, 0, NN_PAD_ZEROS))
B(sh_pad_int, nn_pad2d(g, I(g, S4(1, 1, 3, 3)), 1, 1, 1, 1, NN_PAD_ZEROS))
B(sh_up_zero, nn_upsample2d(g, F(g, S4(1, 1, 3, 3)), 0, 2, NN_UPSAMPLE_NEAREST))
B(sh_up_big, nn_upsample2d(g, F(g, S4(1, 1, 3, 3)), 2, 65, NN_UPSAMPLE_BILINEAR))
B(sh_up_int, nn_upsample2d(g, I(g, S4(1, 1, 3, 3)), 2, 2, NN_UPSAMPLE_NEAREST))
B(sh_up_rank, nn_upsample2d(g, F(g, S1(5)), 2, 2, NN_UPSAMPLE_NEAREST))
B(sh_up_numel, nn_upsample2d(g, F(g, S4(1, 4, 8192, 8192)), 64, 64, NN_UPSAMPLE_NEAREST))
B(sh_shuffle_r0, nn_pixel_shuffle(g, F(g, S4(1, 4, 2, 2)), 0))
B(sh_shuffle_c, nn_pixel_shuffle(g, F(g, S4(1, 5, 2, 2)), 2))
B(sh_flatten_none, nn_flatten(g, NN_NONE))

/* ---- convolutions ---- */

static nn_tensor cv2(nn_graph *g, nn_shape xs, nn_shape ws, nn_tensor bias, int s, int p, int d, int groups, int no_bias) {
    nn_conv2d_desc c;
    memset(&c, 0, sizeof c);
    c.stride_h = c.stride_w = s;
    c.pad_h = c.pad_w = p;
    c.dilation_h = c.dilation_w = d;
    c.groups = groups;
    c.no_bias = no_bias;
    return nn_conv2d(g, F(g, xs), F(g, ws), bias, &c);
}
B(c2_rank, cv2(g, S3(1, 3, 8), S4(4, 3, 3, 3), NN_NONE, 0, 0, 0, 0, 0))
B(c2_stride0, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), NN_NONE, NN_ZERO, 0, 0, 0, 0))
B(c2_stride_neg, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), NN_NONE, -2, 0, 0, 0, 0))
B(c2_pad_neg, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), NN_NONE, 0, -1, 0, 0, 0))
B(c2_dil0, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), NN_NONE, 0, 0, NN_ZERO, 0, 0))
B(c2_groups_c, cv2(g, S4(1, 3, 8, 8), S4(4, 1, 3, 3), NN_NONE, 0, 0, 0, 2, 0))
B(c2_groups_k, cv2(g, S4(1, 4, 8, 8), S4(3, 2, 3, 3), NN_NONE, 0, 0, 0, 2, 0))
B(c2_groups_neg, cv2(g, S4(1, 4, 8, 8), S4(4, 4, 3, 3), NN_NONE, 0, 0, 0, -1, 0))
B(c2_kernel, cv2(g, S4(1, 3, 4, 4), S4(4, 3, 7, 3), NN_NONE, 0, 1, 0, 0, 0))
B(c2_dil_kernel, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), NN_NONE, 0, 0, 4, 0, 0))
B(c2_bias, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), F(g, S1(5)), 0, 0, 0, 0, 0))
B(c2_bias_int, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), I(g, S1(4)), 0, 0, 0, 0, 0))
B(c2_no_bias, cv2(g, S4(1, 3, 8, 8), S4(4, 3, 3, 3), F(g, S1(4)), 0, 0, 0, 0, 1))
B(c2_w_int, nn_conv2d(g, F(g, S4(1, 3, 8, 8)), I(g, S4(4, 3, 3, 3)), NN_NONE, NULL))
B(c2_bias_failed, nn_conv2d(g, F(g, S4(1, 3, 8, 8)), F(g, S4(4, 3, 3, 3)), T(-2), NULL))
/* a row pad of 2^30 with stride 2: the output (2^30 + 1 rows of 1) is small enough to
   build, but row 2^31 of the padded input is past 32-bit index arithmetic */
static nn_tensor c2_pad_overflow(nn_graph *g, nn_compile_desc *cd) {
    nn_conv2d_desc c;
    (void)cd;
    memset(&c, 0, sizeof c);
    c.stride_h = 2;
    c.pad_h = 1 << 30;
    return nn_conv2d(g, F(g, S4(1, 1, 3, 3)), F(g, S4(1, 1, 3, 3)), NN_NONE, &c);
}
static nn_tensor cv1(nn_graph *g, nn_shape xs, nn_shape ws, int s, int p, int d, int groups) {
    nn_conv1d_desc c;
    memset(&c, 0, sizeof c);
    c.stride = s;
    c.pad = p;
    c.dilation = d;
    c.groups = groups;
    return nn_conv1d(g, F(g, xs), F(g, ws), NN_NONE, &c);
}
B(c1_stride0, cv1(g, S3(1, 2, 9), S3(4, 2, 3), NN_ZERO, 0, 0, 0))
B(c1_rank, cv1(g, S4(1, 2, 3, 4), S3(4, 2, 3), 0, 0, 0, 0))
B(c1_groups, cv1(g, S3(1, 4, 9), S3(4, 4, 3), 0, 0, 0, 2))
B(c1_kernel, cv1(g, S3(1, 2, 4), S3(4, 2, 7), 0, 0, 0, 0))
B(c1_pad_neg, cv1(g, S3(1, 2, 9), S3(4, 2, 3), 0, -2, 0, 0))
static nn_tensor c2_layer(nn_graph *g, int which) {
    nn_tensor x = F(g, S4(1, 3, 8, 8));
    switch (which) {
    case 0: return nn_conv2d_layer(g, x, 4, 0, 3, NULL, "conv");
    case 1: return nn_conv2d_layer(g, x, 0, 3, 3, NULL, "conv");
    case 2: return nn_conv2d_layer(g, x, 4, 3, 3, NULL, NULL);
    case 3: return nn_conv1d_layer(g, x, 4, 3, NULL, "conv");
    case 4: return nn_conv3d_layer(g, x, 4, 1, 3, 3, NULL, "conv");
    default: return T(-1);
    }
}
static nn_tensor c2_layer0(nn_graph *g, nn_compile_desc *cd) { (void)cd; return c2_layer(g, 0); }
static nn_tensor c2_layer1(nn_graph *g, nn_compile_desc *cd) { (void)cd; return c2_layer(g, 1); }
static nn_tensor c2_layer2(nn_graph *g, nn_compile_desc *cd) { (void)cd; return c2_layer(g, 2); }
static nn_tensor c1_layer3(nn_graph *g, nn_compile_desc *cd) { (void)cd; return c2_layer(g, 3); }
static nn_tensor c3_layer4(nn_graph *g, nn_compile_desc *cd) { (void)cd; return c2_layer(g, 4); }
static nn_tensor ct(nn_graph *g, nn_shape xs, nn_shape ws, int s, int p, int oph, int opw) {
    nn_conv_transpose2d_desc c;
    memset(&c, 0, sizeof c);
    c.stride_h = c.stride_w = s;
    c.pad_h = c.pad_w = p;
    c.output_pad_h = oph;
    c.output_pad_w = opw;
    return nn_conv_transpose2d(g, F(g, xs), F(g, ws), NN_NONE, &c);
}
B(ct_outpad, ct(g, S4(1, 3, 4, 4), S4(3, 2, 3, 3), 2, 0, 2, 0))
B(ct_outpad_neg, ct(g, S4(1, 3, 4, 4), S4(3, 2, 3, 3), 2, 0, 0, -1))
B(ct_channels, ct(g, S4(1, 3, 4, 4), S4(4, 2, 3, 3), 1, 0, 0, 0))
B(ct_empty, ct(g, S4(1, 3, 2, 2), S4(3, 2, 3, 3), 1, 3, 0, 0))
B(ct_stride0, ct(g, S4(1, 3, 4, 4), S4(3, 2, 3, 3), NN_ZERO, 0, 0, 0))
/* pads and strides of INT_MAX that cancel in the output size: the gradient arithmetic
   would still run past 32 bits */
B(ct_pad_overflow, ct(g, S4(1, 1, 3, 3), S4(1, 1, 3, 3), INT32_MAX, INT32_MAX, 0, 0))
static nn_tensor cv3(nn_graph *g, nn_shape xs, nn_shape ws, nn_tensor bias, int s, int p, int groups) {
    nn_conv3d_desc c;
    memset(&c, 0, sizeof c);
    c.stride_d = c.stride_h = c.stride_w = s;
    c.pad_d = c.pad_h = c.pad_w = p;
    c.groups = groups;
    return nn_conv3d(g, F(g, xs), F(g, ws), bias, &c);
}
B(c3_rank, cv3(g, S4(1, 2, 4, 4), S5(3, 2, 2, 2, 2), NN_NONE, 0, 0, 0))
B(c3_pad_neg, cv3(g, S5(1, 2, 4, 4, 4), S5(3, 2, 2, 2, 2), NN_NONE, 0, -1, 0))
B(c3_stride0, cv3(g, S5(1, 2, 4, 4, 4), S5(3, 2, 2, 2, 2), NN_NONE, NN_ZERO, 0, 0))
B(c3_groups, cv3(g, S5(1, 4, 4, 4, 4), S5(3, 1, 2, 2, 2), NN_NONE, 0, 0, 3))
B(c3_kernel, cv3(g, S5(1, 2, 4, 4, 4), S5(3, 2, 5, 2, 2), NN_NONE, 0, 0, 0))
B(c3_bias, cv3(g, S5(1, 2, 4, 4, 4), S5(3, 2, 2, 2, 2), F(g, S2(1, 3)), 0, 0, 0))
static nn_tensor c3_pad_overflow(nn_graph *g, nn_compile_desc *cd) {
    nn_conv3d_desc c;
    (void)cd;
    memset(&c, 0, sizeof c);
    c.stride_w = 2;
    c.pad_w = 1 << 30;
    return nn_conv3d(g, F(g, S5(1, 1, 1, 1, 3)), F(g, S5(1, 1, 1, 1, 3)), NN_NONE, &c);
}

/* ---- normalisation ---- */

static nn_tensor bn(nn_graph *g, int which) {
    nn_norm_desc d;
    nn_init z;
    nn_tensor x = F(g, S4(2, 3, 4, 4));
    memset(&d, 0, sizeof d);
    memset(&z, 0, sizeof z);
    switch (which) {
    case 0: return nn_batch_norm(g, F(g, S1(5)), NN_NONE, NN_NONE, &d);
    case 1: return nn_batch_norm(g, x, F(g, S1(4)), NN_NONE, &d);
    case 2: d.momentum = 1.5f; return nn_batch_norm(g, x, NN_NONE, NN_NONE, &d);
    case 3: d.eps = -1e-5f; return nn_batch_norm(g, x, NN_NONE, NN_NONE, &d);
    case 4: d.running_mean = nn_buffer(g, "rm", S1(3), z); return nn_batch_norm(g, x, NN_NONE, NN_NONE, &d);
    case 5:
        d.running_mean = nn_buffer(g, "rm", S1(3), z);
        d.running_var = nn_buffer(g, "rv", S1(4), z);
        return nn_batch_norm(g, x, NN_NONE, NN_NONE, &d);
    case 6: return nn_batch_norm(g, F(g, S2(1, 3)), NN_NONE, NN_NONE, &d);
    case 7: return nn_batch_norm(g, I(g, S4(2, 3, 4, 4)), NN_NONE, NN_NONE, &d);
    case 8: d.momentum = NAN; return nn_batch_norm(g, x, NN_NONE, NN_NONE, &d);
    case 9: return nn_batch_norm(g, x, NN_NONE, I(g, S1(3)), &d);
    case 10: return nn_batch_norm1d_layer(g, x, NULL, "bn");
    case 11: return nn_batch_norm2d_layer(g, x, NULL, NULL);
    case 12: return nn_layer_norm(g, F(g, S2(3, 4)), 0, NN_NONE, NN_NONE, NULL);
    case 13: return nn_layer_norm(g, F(g, S2(3, 4)), 3, NN_NONE, NN_NONE, NULL);
    case 14: return nn_layer_norm(g, F(g, S2(3, 4)), 1, F(g, S1(3)), NN_NONE, NULL);
    case 15: return nn_layer_norm(g, F(g, S2(3, 4)), 1, NN_NONE, NN_NONE, &(nn_norm_desc){.eps = NAN});
    case 16: return nn_group_norm(g, F(g, S3(2, 6, 4)), 0, NN_NONE, NN_NONE, NULL);
    case 17: return nn_group_norm(g, F(g, S3(2, 6, 4)), 4, NN_NONE, NN_NONE, NULL);
    case 18: return nn_group_norm(g, F(g, S3(2, 6, 4)), 3, NN_NONE, I(g, S1(6)), NULL);
    case 19: return nn_instance_norm(g, F(g, S2(4, 3)), NN_NONE, NN_NONE, NULL);
    case 20: return nn_instance_norm(g, F(g, S3(4, 3, 1)), NN_NONE, NN_NONE, NULL);
    case 21: return nn_instance_norm(g, F(g, S3(4, 3, 5)), F(g, S1(4)), NN_NONE, &(nn_norm_desc){.eps = -1.0f});
    case 22: return nn_group_norm(g, F(g, S3(2, 6, 4)), 3, T(500), NN_NONE, NULL);
    case 23: return nn_layer_norm(g, I(g, S2(3, 4)), 1, NN_NONE, NN_NONE, NULL);
    default: return T(-1);
    }
}
#define BN(N) \
    static nn_tensor n_bn##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return bn(g, N); }
BN(0) BN(1) BN(2) BN(3) BN(4) BN(5) BN(6) BN(7) BN(8) BN(9) BN(10) BN(11) BN(12) BN(13) BN(14) BN(15) BN(16) BN(17)
BN(18) BN(19) BN(20) BN(21) BN(22) BN(23)

/* ---- pooling ---- */

static nn_tensor pl(nn_graph *g, int which) {
    nn_pool2d_desc d;
    nn_pool1d_desc e;
    nn_tensor x = F(g, S4(1, 2, 6, 6));
    memset(&d, 0, sizeof d);
    memset(&e, 0, sizeof e);
    d.kernel_h = d.kernel_w = 2;
    e.kernel = 3;
    switch (which) {
    case 0: return nn_max_pool2d(g, x, NULL);
    case 1: d.kernel_h = 0; return nn_max_pool2d(g, x, &d);
    case 2: d.stride_w = NN_ZERO; return nn_max_pool2d(g, x, &d);
    case 3: d.kernel_h = d.kernel_w = 3; d.pad_h = 2; return nn_max_pool2d(g, x, &d);
    case 4: d.dilation_h = NN_ZERO; return nn_max_pool2d(g, x, &d);
    case 5: d.kernel_h = 7; return nn_max_pool2d(g, x, &d);
    case 6: return nn_max_pool2d(g, F(g, S3(1, 6, 6)), &d);
    case 7: d.dilation_w = 2; return nn_avg_pool2d(g, x, &d);
    case 8: return nn_avg_pool2d(g, I(g, S4(1, 2, 6, 6)), &d);
    case 9: d.pad_w = -1; return nn_avg_pool2d(g, x, &d);
    case 10: return nn_max_pool1d(g, x, &e);
    case 11: e.dilation = 2; return nn_avg_pool1d(g, F(g, S3(1, 2, 9)), &e);
    case 12: e.kernel = 10; return nn_max_pool1d(g, F(g, S3(1, 2, 9)), &e);
    case 13: return nn_max_pool1d(g, F(g, S3(1, 2, 9)), NULL);
    case 14: d.kernel_h = 3; d.dilation_h = 4; return nn_max_pool2d(g, x, &d);
    case 15: return nn_global_max_pool2d(g, F(g, S3(1, 6, 6)));
    case 16: return nn_global_avg_pool2d(g, I(g, S4(1, 2, 6, 6)));
    case 17: return nn_adaptive_avg_pool2d(g, x, 0, 3);
    case 18: return nn_adaptive_avg_pool2d(g, x, (int64_t)1 << 32, (int64_t)1 << 32);
    case 19: e.kernel = -3; return nn_avg_pool1d(g, F(g, S3(1, 2, 9)), &e);
    case 20: /* a kernel and padding (at most half of it) of 2^30: past 32-bit indices */
        d.kernel_h = 1;
        d.kernel_w = 1 << 30;
        d.pad_w = 1 << 29;
        return nn_max_pool2d(g, F(g, S4(1, 1, 1, (1 << 30) + 1)), &d);
    default: return T(-1);
    }
}
#define PL(N) \
    static nn_tensor p_##N(nn_graph *g, nn_compile_desc *cd) { (void)cd; return pl(g, N); }
PL(0) PL(1) PL(2) PL(3) PL(4) PL(5) PL(6) PL(7) PL(8) PL(9) PL(10) PL(11) PL(12) PL(13) PL(14) PL(15) PL(16) PL(17)
PL(18) PL(19) PL(20)

/* ---- overflow ---- */

B(o_input_2p31, F(g, S1((int64_t)1 << 31)))
B(o_input_prod, F(g, S3(1 << 16, 1 << 16, 1)))
B(o_param_2p31, nn_prelu_layer(g, F(g, S2(2, 2)), (int64_t)1 << 31, NULL, "p"))

#define R_INV NN_ERR_INVALID_ARGUMENT
#define R_SHAPE NN_ERR_SHAPE
#define R_STATE NN_ERR_STATE

static const bad_row rows[] = {
    {"graph", "NN_NONE as the input of nn_relu", g_none_unary, R_INV, "nn_relu|NN_NONE", 0},
    {"graph", "NN_NONE as matmul's b", g_none_second, R_INV, "nn_matmul|input 1|NN_NONE", 0},
    {"graph", "tensor id 1000 of a 1-node graph", g_id_range, R_INV, "nn_sigmoid|not a tensor of this graph", 0},
    {"graph", "tensor id -5 with no earlier error", g_id_negative, R_INV, "nn_tanh|not a tensor", 0},
    {"graph", "nn_input [-3, 4]", g_input_negdim, R_SHAPE, "nn_input|[-3, 4]", 0},
    {"graph", "softmax of a rank-0 input", g_input_ndim0, R_SHAPE, "nn_softmax|rank 0|[1]", 0},
    {"graph", "nn_param of 0 dims", g_param_ndim0, R_SHAPE, "nn_param|w0|not 0", 0},
    {"graph", "nn_sum_dim dim 1 of a rank-0 input", g_sum_dim_ndim0, R_INV, "nn_sum_dim|rank 0|0 or -1", 0},
    {"graph", "nn_input of 7 dims", g_input_ndim7, R_SHAPE, "nn_input|7", 0},
    {"graph", "nn_input dtype 5", g_input_dtype, R_INV, "nn_input|dtype 5", 0},
    {"graph", "nn_param [0, 3]", g_param_zero, R_SHAPE, "nn_param|w|[0, 3]", 0},
    {"graph", "nn_param without a name", g_param_noname, R_INV, "nn_param|name", 0},
    {"graph", "nn_param again with another shape", g_param_reshape, R_SHAPE, "nn_param|fc.weight|[4, 3]|[3, 4]", 0},
    {"graph", "nn_buffer over a parameter's name", g_buffer_clash, R_INV, "nn_buffer|bn.weight", 0},
    {"graph", "nn_graph_requires_grad on int32", g_grad_int, R_INV, "nn_graph_requires_grad|int32", 0},
    {"graph", "nn_graph_output(NN_NONE)", g_output_none, R_INV, "nn_graph_output|NN_NONE", 0},
    {"graph", "nn_input on a compiled graph", g_compiled_input, R_STATE, "nn_input|compiled", 0},
    {"graph", "nn_param on a compiled graph", g_compiled_param, R_STATE, "nn_param|compiled", 0},
    {"graph", "nn_softmax on a compiled graph", g_compiled_op, R_STATE, "nn_softmax|compiled", 0},
    {"graph", "an int32 loss", c_loss_int, R_SHAPE, "nn_graph_compile|loss|float32|int32", 1},
    {"graph", "a loss of id 77", c_loss_foreign, R_INV, "nn_graph_compile|loss", 1},
    {"graph", "optimizer kind 99", c_opt_kind, R_INV, "nn_graph_compile|optimizer kind 99", 1},
    {"graph", "schedule kind 42", c_schedule_kind, R_INV, "schedule|kind 42", 1},
    {"graph", "17 milestones", c_schedule_milestones, R_INV, "schedule|17 milestones", 1},
    {"graph", "schedule step_size -3", c_schedule_step, R_INV, "schedule|step_size -3", 1},

    {"elementwise", "add [3, 4] + [4, 3]", e_add_shape, R_SHAPE, "nn_add|[3, 4]|[4, 3]", 0},
    {"elementwise", "sub [3, 4] - [2, 4] (3 against 2 does not broadcast)", e_sub_rank, R_SHAPE, "nn_sub|[3, 4]|[2, 4]", 0},
    {"elementwise", "mul of int32", e_mul_int, R_SHAPE, "nn_mul|int32", 0},
    {"elementwise", "scale of int32", e_scale_int, R_SHAPE, "nn_mul_scalar|int32", 0},
    {"elementwise", "relu of int32", e_relu_int, R_SHAPE, "nn_relu|int32", 0},
    {"elementwise", "gelu of NN_NONE", e_gelu_none, R_INV, "nn_gelu|NN_NONE", 0},
    {"elementwise", "hardtanh min NaN", e_hardtanh_nan, R_INV, "nn_hardtanh|nan", 0},
    {"elementwise", "softplus beta -0", e_softplus_neg0, R_INV, "nn_softplus|p0 = -0", 0},
    {"elementwise", "prelu weight [2] for 3 channels", e_prelu_size, R_SHAPE, "nn_prelu|[2]|[2, 3, 4]", 0},
    {"elementwise", "prelu weight [1, 3]", e_prelu_rank, R_SHAPE, "nn_prelu|[1, 3]", 0},
    {"elementwise", "prelu weight int32", e_prelu_int, R_SHAPE, "nn_prelu|weight|int32", 0},
    {"elementwise", "prelu of int32", e_prelu_xint, R_SHAPE, "nn_prelu|x|int32", 0},
    {"elementwise", "prelu_layer num_parameters 0", e_prelu_layer_n, R_INV, "nn_prelu_layer|num_parameters = 0", 0},
    {"elementwise", "prelu_layer num_parameters 5 for 3 channels", e_prelu_layer_c, R_SHAPE, "nn_prelu|[5]|[3]", 0},
    {"elementwise", "prelu_layer name \"\"", e_prelu_layer_name, R_INV, "nn_prelu_layer|name", 0},
    {"elementwise", "dropout p -0.1", e_dropout_neg, R_INV, "nn_dropout|-0.1", 0},
    {"elementwise", "dropout p 1", e_dropout_one, R_INV, "nn_dropout|p = 1 ", 0},
    {"elementwise", "dropout p NaN", e_dropout_nan, R_INV, "nn_dropout|nan", 0},
    {"elementwise", "dropout of int32", e_dropout_int, R_SHAPE, "nn_dropout|int32", 0},
    {"elementwise", "accumulate of int32", e_accumulate_int, R_SHAPE, "nn_accumulate|int32", 0},

    {"matmul", "matmul batches [2] and [3] of [2, 3, 4] x [3, 4, 5]", m_rank, R_SHAPE, "nn_matmul|[2, 3, 4]|[3, 4, 5]|broadcast", 0},
    {"matmul", "matmul [4, 3]^T x [5, 6]", m_trans, R_SHAPE, "nn_matmul|[4, 3] (transposed)|[5, 6]", 0},
    {"matmul", "matmul with int32 b", m_int, R_SHAPE, "nn_matmul|b|int32", 0},
    {"matmul", "dense of [2, 3, 4]", m_dense_rank, R_SHAPE, "nn_linear_layer|fc|[2, 3, 4]", 0},
    {"matmul", "dense out_features 0", m_dense_zero, R_INV, "nn_linear_layer|fc|out_features 0", 0},
    {"matmul", "dense out_features -5", m_dense_neg, R_INV, "nn_linear_layer|fc|out_features -5", 0},
    {"matmul", "dense without a name", m_dense_name, R_INV, "nn_linear_layer|name", 0},
    {"matmul", "dense of int32", m_dense_int, R_SHAPE, "nn_linear_layer|int32", 0},

    {"reduce", "sum of int32", r_sum_int, R_SHAPE, "nn_sum|int32", 0},
    {"reduce", "mean of NN_NONE", r_mean_none, R_INV, "nn_mean|NN_NONE", 0},
    {"reduce", "argmax of [2, 3, 4]", r_argmax_rank, R_SHAPE, "nn_argmax_rows|[2, 3, 4]", 0},
    {"reduce", "accuracy with float labels", r_acc_float, R_SHAPE, "nn_accuracy|[5] float32", 0},
    {"reduce", "accuracy labels [5] for 4 rows", r_acc_len, R_SHAPE, "nn_accuracy|[4, 3]|[5]", 0},
    {"softmax", "softmax of int32", s_softmax_int, R_SHAPE, "nn_softmax|int32", 0},
    {"softmax", "log_softmax of id 99", s_logsoftmax_id, R_INV, "nn_log_softmax|not a tensor of this graph", 0},

    {"loss", "huber delta -1", l_opt0, R_INV, "nn_huber_loss|delta -1", 0},
    {"loss", "smooth_l1 beta NaN", l_opt1, R_INV, "nn_smooth_l1_loss|beta|nan", 0},
    {"loss", "quantile tau 1.5", l_opt2, R_INV, "nn_quantile_loss|tau 1.5", 0},
    {"loss", "focal gamma -1", l_opt3, R_INV, "nn_sigmoid_focal_loss|gamma -1", 0},
    {"loss", "reduction 9", l_opt4, R_INV, "nn_mse_loss|reduction 9", 0},
    {"loss", "reduction -1", l_opt5, R_INV, "nn_l1_loss|reduction -1", 0},
    {"loss", "batchmean for mse", l_opt6, R_INV, "nn_mse_loss|reduction 4", 0},
    {"loss", "pos_weight for mse", l_opt7, R_INV, "nn_mse_loss|pos_weight", 0},
    {"loss", "pos_weight [4] for logits [4, 3]", l_opt8, R_SHAPE, "nn_bce_with_logits_loss|pos_weight [4]|[4, 3]", 0},
    {"loss", "weight [4] for [4, 3]", l_opt9, R_SHAPE, "nn_mse_loss|[4, 3]|[4]", 0},
    {"loss", "pos_weight int32", l_opt10, R_SHAPE, "nn_bce_with_logits_loss|pos_weight|int32", 0},
    {"loss", "weight of a failed id", l_opt11, R_INV, "nn_l1_loss|not a tensor", 0},
    {"loss", "mse [4, 3] against [3, 4]", l_mse_shape, R_SHAPE, "nn_mse_loss|[4, 3]|[3, 4]", 0},
    {"loss", "l1 target int32", l_l1_int, R_SHAPE, "nn_l1_loss|target|int32", 0},
    {"loss", "kl_div target NN_NONE", l_kl_none, R_INV, "nn_kl_div_loss|NN_NONE", 0},
    {"loss", "cross_entropy logits [2, 3, 4]", l_ce0, R_SHAPE, "nn_cross_entropy_loss|[2, 3, 4]", 0},
    {"loss", "cross_entropy float labels", l_ce1, R_SHAPE, "nn_cross_entropy_loss|[5] float32", 0},
    {"loss", "cross_entropy 6 labels for 5 rows", l_ce2, R_SHAPE, "nn_cross_entropy_loss|[5, 4]|[6]", 0},
    {"loss", "cross_entropy label_smoothing 1.5", l_ce3, R_INV, "nn_cross_entropy_loss|label_smoothing 1.5", 0},
    {"loss", "cross_entropy label_smoothing NaN", l_ce4, R_INV, "nn_cross_entropy_loss|label_smoothing nan", 0},
    {"loss", "cross_entropy weight [3] for 4 classes", l_ce5, R_SHAPE, "nn_cross_entropy_loss|weight [3]|[4]", 0},
    {"loss", "nll label_smoothing 0.1", l_ce6, R_INV, "nn_nll_loss|label_smoothing 0.1", 0},
    {"loss", "cross_entropy pos_weight", l_ce7, R_INV, "nn_cross_entropy_loss|pos_weight", 0},
    {"loss", "nll batchmean", l_ce8, R_INV, "nn_nll_loss|reduction 4", 0},
    {"loss", "nll weight int32", l_ce9, R_SHAPE, "nn_nll_loss|weight|int32", 0},
    {"loss", "cross_entropy labels [5, 1]", l_ce10, R_SHAPE, "nn_cross_entropy_loss|[5, 1]", 0},
    {"loss", "cosine_embedding target [4, 1]", l_cos_target, R_SHAPE, "nn_cosine_embedding_loss|[4, 1]", 0},
    {"loss", "cosine_embedding of [4]", l_cos_rank, R_SHAPE, "nn_cosine_embedding_loss|[4]", 0},
    {"loss", "triplet negative [4, 2]", l_triplet_shape, R_SHAPE, "nn_triplet_margin_loss|[4, 2]|[4, 3]", 0},
    {"loss", "triplet positive int32", l_triplet_int, R_SHAPE, "nn_triplet_margin_loss|int32", 0},
    {"loss", "dice with a weight", l_dice_weight, R_INV, "nn_dice_loss|weight", 0},
    {"loss", "softmax_cross_entropy logits [5]", l_xent_rank, R_SHAPE, "nn_softmax_cross_entropy|[5]", 0},
    {"loss", "bce_with_logits [2, 3] and [3, 2]", l_bcel_shape, R_SHAPE, "nn_bce_with_logits|[2, 3]|[3, 2]", 0},
    {"loss", "mse [3] and [4]", l_mse_legacy, R_SHAPE, "nn_mse|[3]|[4]", 0},

    {"gather", "gather_rows float idx", ga_float_idx, R_SHAPE, "nn_gather_rows|[2] float32", 0},
    {"gather", "gather_rows idx [2, 2]", ga_idx_rank, R_SHAPE, "nn_gather_rows|[2, 2]", 0},
    {"gather", "gather_rows data NN_NONE", ga_none, R_INV, "nn_gather_rows|NN_NONE", 0},

    {"shape", "reshape [2, 3] to [4, 2]", sh_reshape_count, R_SHAPE, "nn_reshape|[2, 3]|[4, 2]", 0},
    {"shape", "reshape to [-1, 6]", sh_reshape_neg, R_SHAPE, "nn_reshape|[-1, 6]", 0},
    {"shape", "reshape to [0, 6]", sh_reshape_zero, R_SHAPE, "nn_reshape|[0, 6]", 0},
    {"shape", "reshape to [2^32, 2^32]", sh_reshape_wrap, R_SHAPE, "nn_reshape|[4294967296, 4294967296]", 0},
    {"shape", "permute (0, 1, 1)", sh_permute0, R_INV, "nn_permute|[2, 3, 4]", 0},
    {"shape", "permute (0, 3, 1)", sh_permute1, R_INV, "nn_permute|[2, 3, 4]", 0},
    {"shape", "permute NULL", sh_permute2, R_INV, "nn_permute|NULL", 0},
    {"shape", "transpose axis 3 of [2, 3]", sh_transpose_axis, R_SHAPE, "nn_transpose|dim|[2, 3]", 0},
    {"shape", "concat of 0 tensors", sh_concat0, R_INV, "nn_concat|1 to 64", 0},
    {"shape", "concat of 65 tensors", sh_concat1, R_INV, "nn_concat|1 to 64", 0},
    {"shape", "concat [2, 3] and [3, 4] on axis 0", sh_concat2, R_SHAPE, "nn_concat|[2, 3]|[3, 4]", 0},
    {"shape", "concat float32 and int32", sh_concat3, R_SHAPE, "nn_concat|float32|int32", 0},
    {"shape", "concat on axis 2 of [2, 3]", sh_concat4, R_SHAPE, "nn_concat|dim|[2, 3]", 0},
    {"shape", "concat of NULL", sh_concat5, R_INV, "nn_concat", 0},
    {"shape", "concat [2, 3] and [2, 3, 1]", sh_concat6, R_SHAPE, "nn_concat|[2, 3]|[2, 3, 1]", 0},
    {"shape", "slice start -1", sh_slice_start, R_SHAPE, "nn_slice|start -1|[4, 5]", 0},
    {"shape", "slice length 0", sh_slice_len0, R_SHAPE, "nn_slice|length 0", 0},
    {"shape", "slice from the end", sh_slice_past, R_SHAPE, "nn_slice|start 4", 0},
    {"shape", "slice axis -3 of [4, 5]", sh_slice_axis, R_SHAPE, "nn_slice|dim|[4, 5]", 0},
    {"shape", "slice start INT64_MAX", sh_slice_startmax, R_SHAPE, "nn_slice|start 9223372036854775807", 0},
    {"shape", "split sizes 2 + 2 of 5", sh_split0, R_SHAPE, "nn_split|4|5", 0},
    {"shape", "split sizes 5 + -1", sh_split1, R_SHAPE, "nn_split|-1", 0},
    {"shape", "split sizes INT64_MAX + INT64_MAX", sh_split2, R_SHAPE, "nn_split|9223372036854775807", 0},
    {"shape", "split sizes NULL", sh_split_null, R_INV, "nn_split|sizes", 0},
    {"shape", "pad2d left -1", sh_pad_neg, R_SHAPE, "nn_pad2d|left -1", 0},
    {"shape", "pad2d reflect of 3 rows by 3", sh_pad_reflect, R_SHAPE, "nn_pad2d|top 3|reflection", 0},
    {"shape", "pad2d of [5]", sh_pad_rank, R_SHAPE, "nn_pad2d|[5]", 0},
    {"shape", "pad2d of int32", sh_pad_int, R_SHAPE, "nn_pad2d|int32", 0},
    {"shape", "upsample2d scale 0", sh_up_zero, R_INV, "nn_upsample2d|0, 2", 0},
    {"shape", "upsample2d scale 65", sh_up_big, R_INV, "nn_upsample2d|2, 65", 0},
    {"shape", "upsample2d of int32", sh_up_int, R_SHAPE, "nn_upsample2d|int32", 0},
    {"shape", "upsample2d of [5]", sh_up_rank, R_SHAPE, "nn_upsample2d|[5]", 0},
    {"shape", "pixel_shuffle r 0", sh_shuffle_r0, R_SHAPE, "nn_pixel_shuffle|r = 0", 0},
    {"shape", "pixel_shuffle of 5 channels by 2", sh_shuffle_c, R_SHAPE, "nn_pixel_shuffle|[1, 5, 2, 2]", 0},
    {"shape", "flatten NN_NONE", sh_flatten_none, R_INV, "nn_flatten|NN_NONE", 0},

    {"conv", "conv2d x [1, 3, 8]", c2_rank, R_SHAPE, "nn_conv2d|[1, 3, 8]", 0},
    {"conv", "conv2d stride 0", c2_stride0, R_INV, "nn_conv2d|stride", 0},
    {"conv", "conv2d stride -2", c2_stride_neg, R_INV, "nn_conv2d|stride|-2", 0},
    {"conv", "conv2d padding -1", c2_pad_neg, R_INV, "nn_conv2d|padding|-1", 0},
    {"conv", "conv2d dilation 0", c2_dil0, R_INV, "nn_conv2d|dilation", 0},
    {"conv", "conv2d groups 2 of 3 channels", c2_groups_c, R_SHAPE, "nn_conv2d|groups = 2|[1, 3, 8, 8]", 0},
    {"conv", "conv2d groups 2 of 3 filters", c2_groups_k, R_SHAPE, "nn_conv2d|groups = 2|[3, 2, 3, 3]", 0},
    {"conv", "conv2d groups -1", c2_groups_neg, R_INV, "nn_conv2d|groups|-1", 0},
    {"conv", "conv2d kernel 7 over 4 + 2 padding", c2_kernel, R_SHAPE, "nn_conv2d|larger|[4, 3, 7, 3]|[1, 3, 4, 4]", 0},
    {"conv", "conv2d dilation 4 over 8", c2_dil_kernel, R_SHAPE, "nn_conv2d|larger|[1, 3, 8, 8]", 0},
    {"conv", "conv2d bias [5] for 4 filters", c2_bias, R_SHAPE, "nn_conv2d|bias [5]|[4]", 0},
    {"conv", "conv2d bias int32", c2_bias_int, R_SHAPE, "nn_conv2d|bias|float32", 0},
    {"conv", "conv2d bias with no_bias", c2_no_bias, R_INV, "nn_conv2d|no_bias", 0},
    {"conv", "conv2d w int32", c2_w_int, R_SHAPE, "nn_conv2d|w|int32", 0},
    {"conv", "conv2d bias a failed id", c2_bias_failed, R_INV, "nn_conv2d|not a tensor", 0},
    {"conv", "conv2d pad 2^30, stride 2", c2_pad_overflow, R_SHAPE, "nn_conv2d|1073741824|[1, 1, 3, 3]", 0},
    {"conv", "conv1d stride 0", c1_stride0, R_INV, "nn_conv1d|stride", 0},
    {"conv", "conv1d x [1, 2, 3, 4]", c1_rank, R_SHAPE, "nn_conv1d|[1, 2, 3, 4]", 0},
    {"conv", "conv1d groups 2 with w [4, 4, 3]", c1_groups, R_SHAPE, "nn_conv1d|groups = 2|[1, 4, 9]", 0},
    {"conv", "conv1d kernel 7 over 4", c1_kernel, R_SHAPE, "nn_conv1d|larger|[4, 2, 7]|[1, 2, 4]", 0},
    {"conv", "conv1d padding -2", c1_pad_neg, R_INV, "nn_conv1d|padding|-2", 0},
    {"conv", "conv2d_layer kernel 0x3", c2_layer0, R_SHAPE, "nn_conv2d_layer|conv|0x3", 0},
    {"conv", "conv2d_layer 0 filters", c2_layer1, R_SHAPE, "nn_conv2d_layer|conv|[1, 3, 8, 8]", 0},
    {"conv", "conv2d_layer without a name", c2_layer2, R_INV, "nn_conv2d_layer|name", 0},
    {"conv", "conv1d_layer of [1, 3, 8, 8]", c1_layer3, R_SHAPE, "nn_conv1d_layer|conv|[1, 3, 8, 8]", 0},
    {"conv", "conv3d_layer of [1, 3, 8, 8]", c3_layer4, R_SHAPE, "nn_conv3d_layer|conv|[1, 3, 8, 8]", 0},
    {"conv", "conv_transpose2d output padding 2, stride 2", ct_outpad, R_INV, "nn_conv_transpose2d|output padding (2, 0)", 0},
    {"conv", "conv_transpose2d output padding -1", ct_outpad_neg, R_INV, "nn_conv_transpose2d|output padding (0, -1)", 0},
    {"conv", "conv_transpose2d w [4, ...] for 3 channels", ct_channels, R_SHAPE, "nn_conv_transpose2d|[1, 3, 4, 4]|[4, 2, 3, 3]", 0},
    {"conv", "conv_transpose2d empty output", ct_empty, R_SHAPE, "nn_conv_transpose2d|empty|[1, 3, 2, 2]", 0},
    {"conv", "conv_transpose2d stride 0", ct_stride0, R_INV, "nn_conv_transpose2d|stride", 0},
    {"conv", "conv_transpose2d pad and stride INT_MAX", ct_pad_overflow, R_SHAPE, "nn_conv_transpose2d|2147483647", 0},
    {"conv", "conv3d x [1, 2, 4, 4]", c3_rank, R_SHAPE, "nn_conv3d|[1, 2, 4, 4]", 0},
    {"conv", "conv3d padding -1", c3_pad_neg, R_INV, "nn_conv3d|padding|-1", 0},
    {"conv", "conv3d stride 0", c3_stride0, R_INV, "nn_conv3d|stride", 0},
    {"conv", "conv3d groups 3 of 4 channels", c3_groups, R_SHAPE, "nn_conv3d|groups = 3|[1, 4, 4, 4, 4]", 0},
    {"conv", "conv3d kernel depth 5 over 4", c3_kernel, R_SHAPE, "nn_conv3d|larger|[3, 2, 5, 2, 2]", 0},
    {"conv", "conv3d bias [1, 3]", c3_bias, R_SHAPE, "nn_conv3d|bias [1, 3]", 0},
    {"conv", "conv3d pad 2^30, stride 2", c3_pad_overflow, R_SHAPE, "nn_conv3d|1073741824|[1, 1, 1, 1, 3]", 0},

    {"norm", "batch_norm of [5]", n_bn0, R_SHAPE, "nn_batch_norm|[5]", 0},
    {"norm", "batch_norm gamma [4] for 3 channels", n_bn1, R_SHAPE, "nn_batch_norm|gamma [4]|[3]", 0},
    {"norm", "batch_norm momentum 1.5", n_bn2, R_INV, "nn_batch_norm|momentum 1.5", 0},
    {"norm", "batch_norm eps -1e-5", n_bn3, R_INV, "nn_batch_norm|eps -1e-05", 0},
    {"norm", "batch_norm running_mean alone", n_bn4, R_INV, "nn_batch_norm|running_mean|running_var", 0},
    {"norm", "batch_norm running_var [4]", n_bn5, R_SHAPE, "nn_batch_norm|running_var [4]", 0},
    {"norm", "batch_norm of [1, 3]", n_bn6, R_SHAPE, "nn_batch_norm|[1, 3]|1 value", 0},
    {"norm", "batch_norm of int32", n_bn7, R_SHAPE, "nn_batch_norm|int32", 0},
    {"norm", "batch_norm momentum NaN", n_bn8, R_INV, "nn_batch_norm|momentum nan", 0},
    {"norm", "batch_norm beta int32", n_bn9, R_SHAPE, "nn_batch_norm|beta|int32", 0},
    {"norm", "batch_norm1d_layer of [2, 3, 4, 4]", n_bn10, R_SHAPE, "nn_batch_norm1d_layer|[2, 3, 4, 4]", 0},
    {"norm", "batch_norm2d_layer without a name", n_bn11, R_INV, "nn_batch_norm2d_layer|name", 0},
    {"norm", "layer_norm n_norm_dims 0", n_bn12, R_SHAPE, "nn_layer_norm|n_norm_dims 0|[3, 4]", 0},
    {"norm", "layer_norm n_norm_dims 3 of 2-D", n_bn13, R_SHAPE, "nn_layer_norm|n_norm_dims 3", 0},
    {"norm", "layer_norm gamma [3] for [3, 4]", n_bn14, R_SHAPE, "nn_layer_norm|gamma [3]|[4]", 0},
    {"norm", "layer_norm eps NaN", n_bn15, R_INV, "nn_layer_norm|eps nan", 0},
    {"norm", "group_norm groups 0", n_bn16, R_SHAPE, "nn_group_norm|groups = 0", 0},
    {"norm", "group_norm groups 4 of 6 channels", n_bn17, R_SHAPE, "nn_group_norm|groups = 4|[2, 6, 4]", 0},
    {"norm", "group_norm beta int32", n_bn18, R_SHAPE, "nn_group_norm|beta|int32", 0},
    {"norm", "instance_norm of [4, 3]", n_bn19, R_SHAPE, "nn_instance_norm|[4, 3]", 0},
    {"norm", "instance_norm of 1 spatial value", n_bn20, R_SHAPE, "nn_instance_norm|[4, 3, 1]", 0},
    {"norm", "instance_norm eps -1", n_bn21, R_INV, "nn_instance_norm|eps -1", 0},
    {"norm", "group_norm gamma id 500", n_bn22, R_INV, "nn_group_norm|not a tensor of this graph", 0},
    {"norm", "layer_norm of int32", n_bn23, R_SHAPE, "nn_layer_norm|int32", 0},

    {"pool", "max_pool2d without a desc", p_0, R_INV, "nn_max_pool2d|desc", 0},
    {"pool", "max_pool2d kernel 0x2", p_1, R_INV, "nn_max_pool2d|kernel 0x2", 0},
    {"pool", "max_pool2d stride_w 0", p_2, R_INV, "nn_max_pool2d|stride 2x0", 0},
    {"pool", "max_pool2d pad 2 of kernel 3", p_3, R_INV, "nn_max_pool2d|padding 2x0|kernel 3x3", 0},
    {"pool", "max_pool2d dilation 0", p_4, R_INV, "nn_max_pool2d|dilation 0x1", 0},
    {"pool", "max_pool2d kernel 7 over 6", p_5, R_SHAPE, "nn_max_pool2d|larger|[1, 2, 6, 6]", 0},
    {"pool", "max_pool2d of [1, 6, 6]", p_6, R_SHAPE, "nn_max_pool2d|[1, 6, 6]", 0},
    {"pool", "avg_pool2d dilation 2", p_7, R_INV, "nn_avg_pool2d|dilation 1x2", 0},
    {"pool", "avg_pool2d of int32", p_8, R_SHAPE, "nn_avg_pool2d|int32", 0},
    {"pool", "avg_pool2d padding -1", p_9, R_INV, "nn_avg_pool2d|padding 0x-1", 0},
    {"pool", "max_pool1d of [1, 2, 6, 6]", p_10, R_SHAPE, "nn_max_pool1d|[1, 2, 6, 6]", 0},
    {"pool", "avg_pool1d dilation 2", p_11, R_INV, "nn_avg_pool1d|dilation 2", 0},
    {"pool", "max_pool1d kernel 10 over 9", p_12, R_SHAPE, "nn_max_pool1d|larger|[1, 2, 9]", 0},
    {"pool", "max_pool1d without a desc", p_13, R_INV, "nn_max_pool1d|desc", 0},
    {"pool", "max_pool2d kernel 3, dilation 4 over 6", p_14, R_SHAPE, "nn_max_pool2d|dilation 4x1|[1, 2, 6, 6]", 0},
    {"pool", "global_max_pool2d of [1, 6, 6]", p_15, R_SHAPE, "nn_global_max_pool2d|[1, 6, 6]", 0},
    {"pool", "global_avg_pool2d of int32", p_16, R_SHAPE, "nn_global_avg_pool2d|int32", 0},
    {"pool", "adaptive_avg_pool2d 0x3", p_17, R_SHAPE, "nn_adaptive_avg_pool2d|0x3", 0},
    {"pool", "adaptive_avg_pool2d 2^32 x 2^32", p_18, R_SHAPE, "nn_adaptive_avg_pool2d|4294967296x4294967296", 0},
    {"pool", "avg_pool1d kernel -3", p_19, R_INV, "nn_avg_pool1d|kernel -3", 0},
    {"pool", "max_pool2d kernel and padding past 2^30", p_20, R_SHAPE, "nn_max_pool2d|536870912|[1, 1, 1, 1073741825]", 0},

    {"overflow", "nn_input [2^31]", o_input_2p31, R_SHAPE, "nn_input|[2147483648]", 0},
    {"overflow", "nn_input [2^16, 2^16, 1]", o_input_prod, R_SHAPE, "nn_input|[65536, 65536, 1]", 0},
    {"overflow", "concat of two [2^30]", sh_concat7, R_SHAPE, "concat|[2147483648]", 0},
    {"overflow", "upsample2d x64 of [1, 4, 8192, 8192]", sh_up_numel, R_SHAPE, "upsample2d|[1, 4, 524288, 524288]", 0},
    {"overflow", "prelu_layer of 2^31 slopes", o_param_2p31, R_SHAPE, "p.weight|[2147483648]", 0},
};
#define N_ROWS ((int)(sizeof rows / sizeof rows[0]))

/* 1 when every '|'-separated part of needle is in msg */
static int has_all(const char *msg, const char *needle) {
    char part[160];
    while (*needle) {
        size_t n = strcspn(needle, "|");
        if (n >= sizeof part) n = sizeof part - 1;
        memcpy(part, needle, n);
        part[n] = 0;
        if (!strstr(msg, part)) return 0;
        needle += n;
        if (*needle == '|') needle++;
    }
    return 1;
}

static void run_row(const t_env *e, const bad_row *r) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_compile_desc cd;
    nn_tensor t;
    nn_result st, rc;
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) return;
    memset(&cd, 0, sizeof cd);
    t = r->build(g, &cd);
    st = nn_graph_status(g);
    if (r->at_compile) {
        T_CHECK(st == NN_OK && t.id > 0, "%s: the build failed (%d: %s), the compile should refuse", r->label, (int)st,
                nn_context_last_error(ctx));
    } else {
        T_CHECK(st == r->code, "%s: status %d (%s) after the build, not %d", r->label, (int)st, nn_result_string(st), (int)r->code);
        T_CHECK(t.id <= 0, "%s: the op returned tensor %d", r->label, t.id);
        if (st == NN_OK) goto done; /* accepted: reported above */
        T_CHECK(has_all(nn_context_last_error(ctx), r->needle), "%s: the message \"%s\" lacks \"%s\"", r->label, nn_context_last_error(ctx),
                r->needle);
    }
    rc = nn_graph_compile(g, &cd);
    T_CHECK(rc == r->code, "%s: nn_graph_compile returned %d (%s), not %d (%s)", r->label, (int)rc, nn_result_string(rc),
            (int)r->code, nn_result_string(r->code));
    if (r->at_compile)
        T_CHECK(has_all(nn_context_last_error(ctx), r->needle), "%s: the message \"%s\" lacks \"%s\"", r->label, nn_context_last_error(ctx),
                r->needle);
    rc = nn_graph_step(g);
    T_CHECK(rc == NN_ERR_STATE, "%s: nn_graph_step on the refused graph returned %d", r->label, (int)rc);
done:
    nn_graph_destroy(g);
}

void suite_badinput(const t_env *e) {
    int i, j;
    for (i = 0; i < N_ROWS; i = j) {
        char name[120];
        int n = 0;
        for (j = i; j < N_ROWS && strcmp(rows[j].family, rows[i].family) == 0; j++) n++;
        snprintf(name, sizeof name, "badinput: %s (%d rows)", rows[i].family, n);
        if (!t_begin(e, name)) continue;
        for (j = i; j < N_ROWS && strcmp(rows[j].family, rows[i].family) == 0; j++) run_row(e, &rows[j]);
        t_end();
    }
}
