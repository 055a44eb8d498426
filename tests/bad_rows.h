/* Bad input rows, written in each family's test file (tests/test_FAMILY.c) beside its other
   cases, and run by the op checker's t_bad_rows (tests/op_check.c): one row per case, a
   builder that makes the bad graph,
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
/* The short helpers the rows are written with; included by the family files after test.h. */
#ifndef NN_TEST_BAD_ROWS_H
#define NN_TEST_BAD_ROWS_H
#include "test.h"
#include <stdint.h>


static inline nn_tensor F(nn_graph *g, nn_shape s) { return nn_input(g, "x", NN_F32, s); }
static inline nn_tensor I(nn_graph *g, nn_shape s) { return nn_input(g, "i", NN_I32, s); }
static inline nn_shape S1(int64_t a) { return nn_shape1(a); }
static inline nn_shape S2(int64_t a, int64_t b) { return nn_shape2(a, b); }
static inline nn_shape S3(int64_t a, int64_t b, int64_t c) { return nn_shape3(a, b, c); }
static inline nn_shape S4(int64_t a, int64_t b, int64_t c, int64_t d) { return nn_shape4(a, b, c, d); }
static inline nn_shape S5(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) { return nn_shape5(a, b, c, d, e); }
/* A handle made by hand (no graph tag): every graph refuses it, naming the op. */
static inline nn_tensor T(int id) {
    nn_tensor t;
    t.id = id;
    t.graph = 0;
    return t;
}

/* A builder that is one expression of g */
#define B(NAME, EXPR)                                                   \
    static nn_tensor NAME(nn_graph *g, nn_compile_desc *cd) {           \
        (void)cd;                                                       \
        return EXPR;                                                    \
    }

/* An R_CALL row's builder returns the refused call's result as a tensor id (<= 0). */
static inline nn_tensor CALL(nn_result r) { return T((int)r); }
#define R_CALL 2

#define R_INV NN_ERR_INVALID_ARGUMENT
#define R_SHAPE NN_ERR_SHAPE
#define R_STATE NN_ERR_STATE
#endif
