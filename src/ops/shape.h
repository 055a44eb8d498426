/* The shape family's typed attributes (a node's a.shape), read and written by the files
   of src/ops/shape/ and the CPU loops they call. */
#ifndef NN__OPS_SHAPE_H
#define NN__OPS_SHAPE_H
#include <stdint.h>

typedef struct nn__shape_attr {
    int perm[NN_MAX_DIMS]; /* PERMUTE: output dim d is input dim perm[d] */
    int axis;            /* CONCAT, SLICE*: the axis */
    int start;           /* SLICE*: the first index taken */
    int step;            /* SLICE*: the distance between indices taken (1: contiguous) */
    int flip;            /* FLIP: bit d set: dim d reversed */
    int diagonal, upper; /* TRIL: the diagonal kept (torch.tril/triu's), triu rather than tril */
    int kind;            /* CONST: NN__CONST_ARANGE or NN__CONST_EYE */
    double c_start, c_step; /* CONST (arange): element i is c_start + i * c_step */
    int top, left;       /* PAD2D*: padding before H and W */
    int reflect;         /* PAD2D*: reflection padding, not zeros */
    int scale_h, scale_w; /* UPSAMPLE2D*: the factors */
    int bilinear;        /* UPSAMPLE2D*: bilinear (align_corners = False), not nearest */
} nn__shape_attr;

#endif
