/* Activation recompute (torch.utils.checkpoint): the ops built between nn_checkpoint_begin
   and nn_checkpoint_end form a segment (node.ckpt, numbered from 1). After autograd,
   nn__checkpoint_apply gives every backward node that reads a segment's output a copy of
   that node instead (node.recompute_of: the original), computed from the segment's own
   inputs again, copies of its other nodes as needed and the originals of what lies
   outside the segment (its checkpointed inputs). The originals then die with the forward
   pass; the copies are scheduled just before their first reader in the backward pass
   (nn__sched_recompute in src/engine/compile.c), so a segment's activations live in the
   arena only while its backward runs. A copy is the same op on the same inputs, its
   random key included (a.random.key), so it gives the same bits. */
#include "../base/internal.h"
#include "../base/registry.h"

static nn_result nn__ckpt_refuse(nn_graph *g, nn_result code, const char *fmt, const char *fn) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, fn);
    nn__op_fail(g, code, "%s", msg);
    return code;
}

NN_API nn_result nn_checkpoint_begin(nn_graph *g) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (g->compiled) return nn__ckpt_refuse(g, NN_ERR_STATE, "%s: the graph is already compiled", "nn_checkpoint_begin");
    if (g->ckpt_open)
        return nn__ckpt_refuse(g, NN_ERR_STATE, "%s: a segment is open already (segments do not nest): nn_checkpoint_end it first",
                               "nn_checkpoint_begin");
    g->ckpt_open = ++g->n_ckpt;
    return NN_OK;
}

NN_API nn_result nn_checkpoint_end(nn_graph *g) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (g->compiled) return nn__ckpt_refuse(g, NN_ERR_STATE, "%s: the graph is already compiled", "nn_checkpoint_end");
    if (!g->ckpt_open) return nn__ckpt_refuse(g, NN_ERR_STATE, "%s: no segment is open (nn_checkpoint_begin)", "nn_checkpoint_end");
    g->ckpt_open = 0;
    return NN_OK;
}

/* May node i's backward readers take a copy? A node of a segment computed by an op (not a
   leaf, constant or accumulator), not kept for the program to read. */
static int nn__ckpt_droppable(const nn_graph *g, int i) {
    const nn__node *n = &g->nodes[i];
    unsigned flags = nn__op(n->op)->flags;
    return n->ckpt > 0 && !n->is_output && n->numel > 0 && !(flags & (NN__OPF_LEAF | NN__OPF_CONST | NN__OPF_WRITABLE));
}

/* After autograd (the backward's nodes are ids n_user..g->n_nodes - 1): the copies, and
   the backward's inputs pointed at them. */
static nn_result nn__checkpoint_apply(nn_graph *g, int n_user) {
    int *copy, i, k, n_bwd = g->n_nodes;
    unsigned char *need;
    if (g->n_ckpt == 0 || g->status != NN_OK) return g->status;
    need = (unsigned char *)nn__calloc((size_t)n_user + 1, 1);
    copy = (int *)nn__calloc((size_t)n_user + 1, sizeof *copy);
    if (!need || !copy) {
        NN_FREE(need);
        NN_FREE(copy);
        nn__op_fail(g, NN_ERR_OUT_OF_MEMORY, "nn_graph_compile: out of memory");
        return g->status;
    }
    for (i = n_user; i < n_bwd; i++) /* what the backward reads of the segments */
        for (k = 0; k < g->nodes[i].n_in; k++) {
            int s = g->nodes[i].in[k];
            if (s < n_user && nn__ckpt_droppable(g, s)) need[s] = 1;
        }
    for (i = n_user - 1; i >= 0; i--) /* and what that needs of its own segment, computed again */
        if (need[i])
            for (k = 0; k < g->nodes[i].n_in; k++) {
                int s = g->nodes[i].in[k];
                if (g->nodes[s].ckpt == g->nodes[i].ckpt && nn__ckpt_droppable(g, s)) need[s] = 1;
            }
    for (i = 0; i < n_user && g->status == NN_OK; i++) { /* the copies, in id order: inputs first */
        nn__node c;
        int id;
        if (!need[i]) continue;
        c = g->nodes[i];
        for (k = 0; k < c.n_in; k++)
            if (need[c.in[k]] && g->nodes[c.in[k]].ckpt == c.ckpt) c.in[k] = copy[c.in[k]];
        id = nn__new_node(g, c.op, c.dtype, c.shape, c.in, c.n_in);
        if (id < 0) break;
        g->nodes[id].a = c.a;
        g->nodes[id].recompute_of = i;
        copy[i] = id;
    }
    for (i = n_user; i < n_bwd && g->status == NN_OK; i++)
        for (k = 0; k < g->nodes[i].n_in; k++) {
            int s = g->nodes[i].in[k];
            if (s < n_user && need[s]) g->nodes[i].in[k] = copy[s];
        }
    NN_FREE(need);
    NN_FREE(copy);
    return g->status;
}
