/* The recurrent family's typed attributes (a node's a.rec), read and written by
   src/ops/recurrent.c and the CPU loops of src/cpu/recurrent.c. */
#ifndef NN__OPS_RECURRENT_H
#define NN__OPS_RECURRENT_H

/* The cell of a sequence node (kernels/recurrent.cl's `kind`). */
enum { NN__REC_RNN_TANH = 0, NN__REC_RNN_RELU = 1, NN__REC_LSTM = 2, NN__REC_GRU = 3 };

typedef struct nn__rec_attr {
    int kind;            /* NN__REC_* */
    int T, B, H, Hr;     /* steps, batch, hidden, the state's width (proj_size, else H) */
    int G;               /* gates: 1, 4 or 3 */
    int reverse;         /* runs t = T-1 .. 0 */
    int i_bias, i_h0, i_c0, i_len, i_whr; /* optional inputs' positions in in[] (-1: absent) */
    int batch_first;     /* nn_last_valid: y is [B, T, F] */
    int F;               /* nn_last_valid: features */
} nn__rec_attr;

#endif
