/* Layer notes: what a composed layer's builder was called with (its type and options as a
   model file's JSON layer object), the node it made last and the tensors it took, for
   nn_model_json (src/files/model.c) to describe the layer as one object instead of reading
   it back from its nodes. The builders of composed layers note themselves (the
   transformer layers and stacks, nn_gpt, nn_gpt_block, nn_multihead_attention, the
   recurrent layers, and the model builder's own compositions); a layer given something a
   model file cannot hold (a mask tensor, initial states) notes why instead. Notes are held
   by the graph and freed with it; out of memory, a layer is not noted (nn_model_json then
   refuses its nodes, naming the first it meets). */
#include "../base/internal.h"

typedef struct nn__note {
    int out, first, n_in;
    int in[4];
    char *json; /* the layer's object, {"type": ..., ...}; NULL: why */
    char *why;
} nn__note;

struct nn__notes {
    nn__note *v;
    int n, cap;
};

static void nn__notes_free(nn_graph *g) {
    int i;
    if (!g->notes) return;
    for (i = 0; i < g->notes->n; i++) {
        NN_FREE(g->notes->v[i].json);
        NN_FREE(g->notes->v[i].why);
    }
    NN_FREE(g->notes->v);
    NN_FREE(g->notes);
    g->notes = NULL;
}

/* s as a JSON string (quoted, escaped) into out; cap 1300 holds a name of 200 bytes. */
static const char *nn__note_str(const char *s, char *out, size_t cap) {
    size_t i = 0;
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    out[i++] = '"';
    for (; *u && i + 8 < cap; u++) {
        if (*u == '"' || *u == '\\') out[i++] = '\\', out[i++] = (char)*u;
        else if (*u < 0x20) i += (size_t)snprintf(out + i, cap - i, "\\u%04x", *u);
        else out[i++] = (char)*u;
    }
    out[i++] = '"';
    out[i] = 0;
    return out;
}

/* v as the shortest decimal that reads back as the same float (for the JSON's numbers). */
static const char *nn__note_f(float v, char *out, size_t cap) {
    int prec;
    for (prec = 6; prec < 9; prec++) {
        snprintf(out, cap, "%.*g", prec, (double)v);
        if ((float)strtod(out, NULL) == v) return out;
    }
    snprintf(out, cap, "%.9g", (double)v);
    return out;
}

/* Notes the layer that made the nodes from first to y out of ins (n_in, at most 4): its
   JSON object from fmt, or (why non-NULL) the reason it has none. Nothing when y failed. */
static void nn__note_layer(nn_graph *g, nn_tensor y, int first, const nn_tensor *ins, int n_in, const char *why, const char *fmt, ...) {
    nn__note *n;
    char *text = NULL;
    int i;
    if (!g || g->status != NN_OK || y.id <= 0 || n_in > 4) return;
    if (!g->notes) {
        g->notes = (struct nn__notes *)nn__calloc(1, sizeof *g->notes);
        if (!g->notes) return;
        g->notes_free = nn__notes_free;
    }
    if (g->notes->n == g->notes->cap) {
        int nc = g->notes->cap ? 2 * g->notes->cap : 8;
        nn__note *nv = (nn__note *)NN_REALLOC(g->notes->v, (size_t)nc * sizeof *nv);
        if (!nv) return;
        g->notes->v = nv;
        g->notes->cap = nc;
    }
    if (why) text = nn__strdup(why);
    else {
        va_list ap;
        int len;
        va_start(ap, fmt);
        len = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (len < 0) return;
        text = (char *)NN_MALLOC((size_t)len + 1);
        if (text) {
            va_start(ap, fmt);
            vsnprintf(text, (size_t)len + 1, fmt, ap);
            va_end(ap);
        }
    }
    if (!text) return;
    n = &g->notes->v[g->notes->n++];
    memset(n, 0, sizeof *n);
    n->out = y.id;
    n->first = first;
    n->n_in = n_in;
    for (i = 0; i < n_in; i++) n->in[i] = ins[i].id;
    if (why) n->why = text;
    else n->json = text;
}

/* The outermost noted layer whose output is node id (the one begun first), or NULL. */
static const nn__note *nn__note_find(const nn_graph *g, int id) {
    const nn__note *best = NULL;
    int i;
    if (!g->notes) return NULL;
    for (i = 0; i < g->notes->n; i++)
        if (g->notes->v[i].out == id && (!best || g->notes->v[i].first < best->first)) best = &g->notes->v[i];
    return best;
}
