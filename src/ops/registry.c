/* The op table, made from the registry lists of src/base/registry.h: one entry per op, in enum
   order, so the table cannot fall out of step with the enum, and an op whose functions
   are missing does not compile. */
#include "../base/internal.h"
#include "../base/registry.h"

static const nn__op_def nn__op_table[] = {
#define NN__X(e, s, stem, flags) \
    {s, nn__cpu_##stem, nn__launch_##stem, nn__grad_##stem, nn__plan_##stem, flags},
    NN__OPS(NN__X)
#undef NN__X
};
typedef char nn__op_table_complete[sizeof nn__op_table / sizeof nn__op_table[0] == NN__OP_COUNT ? 1 : -1];

static const nn__op_def *nn__op(int op) { return &nn__op_table[op]; }

static const nn__optim_hooks nn__optim_table = {nn__optim_configure, nn__optim_updates, nn__add_optimizer};
static const nn__optim_hooks *nn__optim(void) { return &nn__optim_table; }
