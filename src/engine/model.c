/* Any batch size and train/eval mode on one graph (issue 22): a graph built by a model
   function (nn_graph_build) builds and compiles itself again for another batch size or
   mode, the first time that pair is asked for, and keeps each such variant for the next
   time.

   A variant is a graph of its own (its nodes, schedule, memory plan, arena, kernels and
   their arguments), built by the same function on the graph's parameter store (shared, as
   nn_graph_desc.share_params), compiled with the graph's compile options (training mode)
   or forward only (eval mode). It carries the graph's handle tag, so the handles the
   function returned for the graph name the same tensors of every variant: the function
   must make the same ops for every batch (checked: a different count or leaf is refused),
   and an eval build keeps the training build's node ids (dropout a view, batch norm's
   running update an unused view: nn__eval_identity). What persists is the graph's: the
   parameters (the store), the optimizer state (a variant's update views the graph's
   update of the same parameter: src/engine/compile.c, nn__model_source), the inputs whose
   shape does not depend on the batch (a dataset's samples: views too), and the step,
   run and optimizer counters (copied in and out around each run, compile.c). Each
   variant's arena is its own, planned for its size: memory grows with the sizes used.
   Refused: variants of a graph that accumulates gradients, skips non-finite updates, or
   trains data-parallel (their running state is per graph). */
#include "../base/internal.h"
#include "../base/registry.h"

typedef struct nn__variant {
    int64_t batch;
    int eval;
    nn_graph *g;
} nn__variant;

struct nn__model {
    nn_model_fn fn;
    void *user;
    int64_t batch;      /* the batch selected (nn_graph_set_batch) */
    int eval;           /* the mode selected (nn_graph_train) */
    nn__variant *v;
    int n, cap;
};

static void nn__model_free(nn_graph *g) {
    struct nn__model *m = g->model;
    int i;
    if (!m) return;
    for (i = 0; i < m->n; i++) nn__graph_free(m->v[i].g); /* never the context's last graph: g is still there */
    NN_FREE(m->v);
    NN_FREE(m);
    g->model = NULL;
    g->active = NULL;
}

NN_API nn_result nn_graph_build(nn_graph *g, nn_model_fn build, int64_t batch, void *user) {
    struct nn__model *m;
    nn_result r;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (!build) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_build: the model function is NULL");
    if (batch < 1 || batch > NN__MAX_NUMEL)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_build: batch %lld is not in [1, 2^31 - 1]", (long long)batch);
    if (g->compiled || g->model || g->n_nodes > 1)
        return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_build: the graph %s: build a model on a new, empty graph",
                        g->compiled ? "is compiled" : g->model ? "has a model already" : "has ops already");
    m = (struct nn__model *)nn__calloc(1, sizeof *m);
    if (!m) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_graph_build: out of memory");
    m->fn = build;
    m->user = user;
    m->batch = batch;
    m->eval = g->eval;
    g->model = m;
    g->model_free = nn__model_free;
    g->batch = batch;
    r = build(g, batch, user);
    if (r == NN_OK && g->status != NN_OK) r = g->status;
    if (r != NN_OK && g->status == NN_OK) g->status = r; /* the function's own failure: the graph cannot compile */
    return r;
}

/* The function's build of a variant against the graph's: the same node count, the same
   leaves (inputs and parameters, by name), and in the same mode the same ops. */
static nn_result nn__variant_check(nn_graph *g, nn_graph *v, const char *fn) {
    int i;
    if (v->n_nodes != g->n_forward)
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: the model function made %d nodes at batch %lld%s and %d at batch %lld: it must "
                        "build the same ops for every batch size and mode", fn, v->n_nodes - 1, (long long)v->batch,
                        v->eval ? " (eval mode)" : "", g->n_forward - 1, (long long)g->batch);
    for (i = 1; i < v->n_nodes; i++) {
        const nn__node *a = &g->nodes[i], *b = &v->nodes[i];
        int leaf = a->op == NN__OP_INPUT || a->op == NN__OP_PARAM || b->op == NN__OP_INPUT || b->op == NN__OP_PARAM;
        if ((leaf || v->eval == g->eval) &&
            (a->op != b->op || (leaf && (!a->name || !b->name || strcmp(a->name, b->name) != 0))))
            return nn__fail(g->ctx, NN_ERR_STATE, "%s: the model function made node %d a %s %s at batch %lld%s, a %s %s at batch "
                            "%lld: it must build the same ops for every batch size and mode", fn, i, nn__op(b->op)->name,
                            b->name ? b->name : "", (long long)v->batch, v->eval ? " (eval mode)" : "", nn__op(a->op)->name,
                            a->name ? a->name : "", (long long)g->batch);
    }
    return NN_OK;
}

/* Builds and compiles the variant (batch, eval) of g into *out. */
static nn_result nn__variant_make(nn_graph *g, int64_t batch, int eval, const char *fn, nn_graph **out) {
    struct nn__model *m = g->model;
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_graph *v = NULL;
    nn_result r;
    int i, training = !eval && g->loss > 0;
    if (training && (g->accum_steps > 1 || g->skip_node > 0 || g->dist))
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: batch %lld: a graph that %s trains at its own batch (%lld) only", fn,
                        (long long)batch, g->accum_steps > 1 ? "accumulates gradients (accumulate_steps > 1)" :
                        g->skip_node > 0 ? "skips non-finite updates (skip_nonfinite or loss scaling)" : "trains data-parallel",
                        (long long)g->batch);
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 4;
        nn__variant *nv = (nn__variant *)NN_REALLOC(m->v, (size_t)cap * sizeof *nv);
        if (!nv) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        m->v = nv;
        m->cap = cap;
    }
    memset(&gd, 0, sizeof gd);
    gd.share_params = g;
    gd.eval = eval;
    gd.seed = g->seed ? g->seed : (uint64_t)(int64_t)NN_ZERO;
    gd.precision = (nn_precision)g->precision;
    gd.param_dtype = g->param_dtype;
    r = nn__graph_create(g->ctx, &gd, &v);
    if (r != NN_OK) return r;
    v->serial = g->serial; /* the graph's handles are the variant's */
    v->model_of = g;
    v->batch = batch;
    v->eval_ids = eval;
    v->share_names = g->share_names;
    for (i = 0; i < g->n_groups && r == NN_OK; i++)
        r = nn_graph_param_group(v, g->groups[i].prefix, g->groups[i].lr_mult, g->groups[i].wd_mult);
    if (r == NN_OK) r = m->fn(v, batch, m->user);
    if (r == NN_OK && v->status != NN_OK) r = v->status;
    if (r != NN_OK) {
        char why[NN__ERRLEN];
        snprintf(why, sizeof why, "%s", g->ctx->err);
        nn__graph_free(v);
        return nn__fail(g->ctx, r, "%s: the model function at batch %lld%s: %s", fn, (long long)batch, eval ? " (eval mode)" : "", why);
    }
    r = nn__variant_check(g, v, fn);
    if (r == NN_OK) {
        for (i = 1; i < g->n_forward; i++) { /* what was asked of g outside the function too */
            v->nodes[i].is_output |= g->nodes[i].is_output;
            if (training) v->nodes[i].requires_grad |= g->nodes[i].requires_grad;
        }
        if (training) {
            cd = g->compile_desc;
        } else {
            memset(&cd, 0, sizeof cd);
            cd.memory_limit = g->compile_desc.memory_limit;
            if (g->loss > 0) v->nodes[g->loss].is_output = 1; /* the loss reads in eval mode too */
        }
        r = nn__graph_compile(v, &cd);
        if (r != NN_OK) {
            char why[NN__ERRLEN];
            snprintf(why, sizeof why, "%s", g->ctx->err);
            r = nn__fail(g->ctx, r, "%s: compiling the model at batch %lld%s: %s", fn, (long long)batch, eval ? " (eval mode)" : "", why);
        }
    }
    if (r != NN_OK) {
        nn__graph_free(v);
        return r;
    }
    v->step = g->step;
    v->runs = g->runs;
    m->v[m->n].batch = batch;
    m->v[m->n].eval = eval;
    m->v[m->n].g = v;
    m->n++;
    nn__log(g->ctx, NN_LOG_DEBUG, "%s: the model compiled at batch %lld%s (%d variants)", fn, (long long)batch,
            eval ? " in eval mode" : "", m->n);
    *out = v;
    return NN_OK;
}

/* Makes (batch, eval) the pair g's calls run on: g itself at its own batch in training
   mode, else that variant, built the first time. */
static nn_result nn__model_select(nn_graph *g, int64_t batch, int eval, const char *fn) {
    struct nn__model *m;
    nn_graph *v = NULL;
    nn_result r;
    int i;
    if (!g->model)
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: the graph was built at one batch size and mode: build it with "
                        "nn_graph_build (a function of the batch) to run it at others", fn);
    m = g->model;
    if (nn__graph_orphaned(g, fn) != NN_OK) return NN_ERR_STATE;
    if (g->model_of) return nn__fail(g->ctx, NN_ERR_STATE, "%s: not on a variant", fn);
    if (!g->compiled || g->status != NN_OK)
        return nn__fail(g->ctx, NN_ERR_STATE, "%s: %s", fn, g->compiled ? "the graph failed to compile" : "compile the graph first");
    if (batch < 1 || batch > NN__MAX_NUMEL)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "%s: batch %lld is not in [1, 2^31 - 1]", fn, (long long)batch);
    if (batch == g->batch && eval == g->eval) {
        v = NULL;
    } else {
        for (i = 0; i < m->n && !(m->v[i].batch == batch && m->v[i].eval == eval); i++) {}
        if (i < m->n) v = m->v[i].g;
        else if ((r = nn__variant_make(g, batch, eval, fn, &v)) != NN_OK) return r;
    }
    g->active = v;
    m->batch = batch;
    m->eval = eval;
    return NN_OK;
}

NN_API nn_result nn_graph_set_batch(nn_graph *g, int64_t batch) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_set_batch",
                         nn__model_select(g, batch, g->model ? g->model->eval : g->eval, "nn_graph_set_batch"));
}

NN_API nn_result nn_graph_train(nn_graph *g, int training) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (training != 0 && training != 1)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_train: training is %d, not 0 (eval) or 1 (train)", training);
    if ((g->model ? g->model->eval : g->eval) == !training) return NN_OK; /* the mode it is in */
    if (g->model && training && g->eval)
        return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_train: the graph was made in eval mode (nn_graph_desc.eval): it does not train");
    return NN__EXCLUSIVE(g->ctx, "nn_graph_train", nn__model_select(g, g->model ? g->model->batch : g->batch, !training, "nn_graph_train"));
}

NN_API nn_result nn_graph_batch(nn_graph *g, int64_t *batch, int *training) {
    if (batch) *batch = 0;
    if (training) *training = 0;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if (batch) *batch = g->model ? g->model->batch : g->batch;
    if (training) *training = g->model ? !g->model->eval : !g->eval;
    return NN_OK;
}
