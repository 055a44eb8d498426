/* The attention family's typed attributes (a node's a.attn), read and written by
   src/ops/attention.c and the CPU loops of src/cpu/attention.c. */
#ifndef NN__OPS_ATTENTION_H
#define NN__OPS_ATTENTION_H
#include <stdint.h>

typedef struct nn__attn_attr { /* q [B, H, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] (or [B, T, H, .]) */
    int B, H, Hkv, Tq, Tk, D, Dv;
    int layout;          /* NN_ATTN_BHTD (0) or NN_ATTN_BTHD (1) */
    int causal, window;  /* top-left causal (key j > query i masked); sliding window (0: none) */
    float scale, p;      /* the scores' scale; dropout's probability on the weights */
    int key;             /* dropout's Philox key: the forward node's id, shared by its backward ops */
    int mask_in, kpm_in; /* the input index of the mask and of the key padding mask (0: none) */
    int mask_mode;       /* 0 none, 1 additive float, 2 boolean int32 (nonzero: attend), 3 boolean
                            int32 (nonzero: hidden; nn.MultiheadAttention's bool attn_mask) */
    int kpm_mode;        /* 0 none, 1 float, 2 int32 (nonzero: ignore the key) */
    int ms[4];           /* the mask's element strides over b, h, i, j (0: broadcast) */
    int with_dq;         /* ATTENTION_DKV: dq too, after dk and dv (q, k or v all need gradients) */
    int vrs[3], voff[3]; /* NN_ATTN_BTHD views (nn__attn_views): q, k, v read from the rows of a wider
                            tensor, row r (b T + t) at r vrs[i] + voff[i] (vrs 0: q's, k's, v's own) */
    int gview;           /* ATTENTION_DKV with dq: dq, dk, dv written at their views' places in one
                            [rows, vrs] gradient (the three views of one tensor), not [dk, dv, dq] */
} nn__attn_attr;

/* nn_attention with an int32 mask read as nn.MultiheadAttention's (nonzero: hidden) when
   mask_hides is 1, as scaled_dot_product_attention's (nonzero: attend) when 0
   (src/ops/attention.c; nn_multihead_attention calls it). */
static nn_tensor nn__attention(nn_graph *g, nn_tensor q, nn_tensor k, nn_tensor v, const nn_attention_desc *desc, int mask_hides);

/* At compile, after the autograd: attention operands that are reshapes of a slice along
   the last dim of one tensor read in place, and their gradients' CONCAT written in place
   by ATTENTION_DKV (src/ops/attention.c); 1 when a node changed (liveness to redo). */
static int nn__attn_views(nn_graph *g);
static int nn__attn_views_on = 1; /* 0: the copies (tests compare the two) */

#endif
