/* The elementwise family's typed attributes (a node's a.ew), set by the builders of
   src/ops/elementwise/ (broadcast.c, unary.c, binary.c, select.c) and read by their
   gradient rules, CPU bodies and launches; a gradient node copies its forward's whole. */
#ifndef NN__OPS_ELEMENTWISE_H
#define NN__OPS_ELEMENTWISE_H
#include <stdint.h>

typedef struct nn__ew_attr {
    int fn;              /* UNARY, UNARY_GRAD: the activation (NN__U_*, kernels/activation.h) */
    float param[2];      /*   its parameters */
    float s;             /* SCALE: the factor; FILL, MASKED_FILL: the value */
    int C, S, N;         /* PRELU*: the weight's size, elements per channel and sample, samples */
    int bfn;             /* BINARY, COMPARE, BINARY_GRAD: the function (NN__B_*, kernels/activation.h);
                            ADD, SUB and MUL go by their op */
    int wrt;             /* BINARY_GRAD: the operand differentiated (0: a, 1: b) */
    int invert;          /* MASKED_FILL: fill where the mask is 0 rather than nonzero */
} nn__ew_attr;

#endif
