/* The loss kinds, listed once for both backends. This file is a part of nn.h (C99 and C++:
   the builders in src/ops/loss/, the loops in src/cpu/loss.c) and is included by
   kernels/loss.cl (OpenCL C 1.2), so the kind numbers a plan passes and the kernels'
   switches are one enum.

   NN__LOSS_EW_KINDS(X): the elementwise losses (op LOSS_EW), one X(ENUM, name, of_d) each:
     ENUM  NN__L_ENUM, the node's a.loss.kind and the kernels' `kind`; its formulas are the
           case NN__L_ENUM of nn__loss_ew1 / nn__loss_ew1_dx (src/cpu/loss.c) and of
           nn_loss1 / nn_loss1_dx (kernels/loss.cl)
     name  the builder nn_<name> (declared in src/api/api.h, stamped in src/ops/loss/),
           and so the op's name in messages
     of_d  1: a function of d = x - t alone, so d/dt = -d/dx and the target gets that
           gradient; 0: the target gets none
   NN__LOSS_ROW_KINDS(X): the losses of op LOSS_ROWS, one per row of [B, ...] inputs,
   X(ENUM, name): NN__R_ENUM and the builder nn_<name>.
   NN__L_COUNT and NN__R_COUNT are the range checks' bounds. */
#ifndef NN__LOSS_H
#define NN__LOSS_H

#define NN__LOSS_EW_KINDS(X)          \
    X(MSE, mse_loss, 1)               \
    X(L1, l1_loss, 1)                 \
    X(HUBER, huber_loss, 1)           \
    X(SMOOTH_L1, smooth_l1_loss, 1)   \
    X(LOG_COSH, log_cosh_loss, 1)     \
    X(QUANTILE, quantile_loss, 1)     \
    X(HINGE, hinge_loss, 0)           \
    X(SQ_HINGE, squared_hinge_loss, 0) \
    X(BCE, bce_loss, 0)               \
    X(BCE_LOGITS, bce_with_logits_loss, 0) \
    X(FOCAL, sigmoid_focal_loss, 0)   \
    X(KL, kl_div_loss, 0)

#define NN__LOSS_ROW_KINDS(X) \
    X(DICE, dice_loss)        \
    X(COSINE, cosine_embedding_loss) \
    X(TRIPLET, triplet_margin_loss)

#define NN__L_ENUM(E, name, of_d) NN__L_##E,
#define NN__R_ENUM(E, name) NN__R_##E,
typedef enum nn__loss_kind { NN__LOSS_EW_KINDS(NN__L_ENUM) NN__L_COUNT } nn__loss_kind;
typedef enum nn__row_kind { NN__LOSS_ROW_KINDS(NN__R_ENUM) NN__R_COUNT } nn__row_kind;

#ifdef __OPENCL_VERSION__
/* Softmax cross-entropy of one row xr [C] at its label t in [0, C): logsumexp(xr) - xr[t]
   (kernels/loss.cl's xent_forward; kernels/reduce.cl's xent_sum, its mean in one pass) */
inline float nn_xent_row(__global const float *xr, int t, int C) {
    float m = xr[0], s = 0.0f;
    for (int c = 1; c < C; c++) m = fmax(m, xr[c]);
    for (int c = 0; c < C; c++) s += exp(xr[c] - m);
    return log(s) + m - xr[t];
}

/* Softmax cross-entropy's gradient of row xr [C] at its label t into dxr [C]: g (softmax(xr)
   - onehot(t)), zeros for a label outside [0, C) (kernels/loss.cl's xent_backward, reduce.cl's
   xent_tail) */
inline void nn_xent_grad_row(__global const float *xr, __global float *dxr, int t, int C, float g) {
#pragma OPENCL FP_CONTRACT OFF
    float m = xr[0], s = 0.0f;
    if (t < 0 || t >= C) {
        for (int c = 0; c < C; c++) dxr[c] = 0.0f;
        return;
    }
    for (int c = 1; c < C; c++) m = fmax(m, xr[c]);
    for (int c = 0; c < C; c++) s += exp(xr[c] - m);
    for (int c = 0; c < C; c++) dxr[c] = g * (exp(xr[c] - m) / s - (c == t ? 1.0f : 0.0f));
}

/* nn_xent_row's value and nn_xent_grad_row's gradient of row xr at a label t in [0, C), with
   each exp(xr[c] - m) computed once (kept in dxr until the gradient replaces it): the same
   terms in the same order, so the bits of the two (kernels/reduce.cl's xent_tail in one group;
   PoCL calls a scalar exp for each, 30 a row apart, 10 here) */
inline float nn_xent_row_grad(__global const float *xr, __global float *dxr, int t, int C, float g) {
#pragma OPENCL FP_CONTRACT OFF
    float m = xr[0], s = 0.0f;
    for (int c = 1; c < C; c++) m = fmax(m, xr[c]);
    for (int c = 0; c < C; c++) {
        const float e = exp(xr[c] - m);
        dxr[c] = e;
        s += e;
    }
    for (int c = 0; c < C; c++) dxr[c] = g * (dxr[c] / s - (c == t ? 1.0f : 0.0f));
    return log(s) + m - xr[t];
}

/* Row b's label: label[b], or with labels by index (ln > 0: a gather of rows folded in, src/ops/
   fuse.c's nn__fuse_gather_labels) label[lidx[b]] of ln, 0 for an index outside [0, ln) as the
   gather's */
inline int nn_label_at(__global const int *label, __global const int *lidx, int ln, int b) {
    int j;
    if (ln <= 0) return label[b];
    j = lidx[b];
    return j >= 0 && j < ln ? label[j] : 0;
}
#endif

#endif /* NN__LOSS_H */
