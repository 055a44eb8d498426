/* Training state for exact resume, and datasets that live on the device.

   nn_graph_save_state() writes one safetensors file holding everything a compiled training graph
   carries from one step to the next:
     NAME                  every parameter and buffer (PyTorch's names, as nn_graph_save_safetensors)
     NAME.__opt.K          the optimizer's K-th state tensor for parameter NAME, in the order
                           of nn__opt_n_aux (Adam: 0 m, 1 v, 2 max v; SGD: 0 momentum, ...)
     NAME.__grad_acc       the running gradient mean when accumulate_steps > 1
   and, as strings in "__metadata__": the format, the optimizer kind and state count, the
   step and update counters (g->step, the optimizer clock, NAdam's momentum product), the
   graph seed, accumulate_steps, and each dataset's seed, epoch and position. Doubles are
   written with 17 significant digits and integers in decimal, so they round-trip exactly.
   nn_graph_load_state() checks all of it against the graph (optimizer kind, state count, every
   tensor present with its shape) before it writes anything.

   A dataset (nn_dataset_create) is owned by its graph. Its samples are two inputs written
   once; each batch writes only the B indices that nn_gather_rows reads. The order of epoch e
   is a Fisher-Yates shuffle driven by Philox4x32-10 keyed by the dataset's seed with e in
   the counter: a pure function of (seed, epoch), so it can be recomputed on resume. */

#include "../../kernels/optim.h"

struct nn_dataset {
    nn_graph *g;
    char *name;
    struct nn_dataset *next;
    nn_tensor x_all, y_all, idx, xb, yb;
    int64_t n, batch, per_epoch;  /* samples, batch size, batches per epoch (ceil(n/batch); floor with drop_last) */
    int drop_last;
    int shuffle;
    uint64_t seed;
    int64_t epoch, pos;           /* batches taken in the epoch running */
    int32_t *perm;                /* the order of `epoch`, valid when perm_epoch == epoch */
    int64_t perm_epoch;
    void *x_host, *y_host;        /* until the first batch uploads them */
    size_t x_bytes, y_bytes;
};

static void nn__datasets_free(nn_graph *g) {
    nn_dataset *d = g->datasets, *next;
    for (; d; d = next) {
        next = d->next;
        NN_FREE(d->name);
        NN_FREE(d->perm);
        NN_FREE(d->x_host);
        NN_FREE(d->y_host);
        NN_FREE(d);
    }
    g->datasets = NULL;
}

/* ---- metadata: "__metadata__" of a header that nn__st_parse has validated ---- */

typedef struct nn__kv {
    char **k, **v;
    int n, cap;
} nn__kv;

static void nn__kv_free(nn__kv *m) {
    int i;
    for (i = 0; i < m->n; i++) {
        NN_FREE(m->k[i]);
        NN_FREE(m->v[i]);
    }
    NN_FREE(m->k);
    NN_FREE(m->v);
    memset(m, 0, sizeof *m);
}

static const char *nn__kv_get(const nn__kv *m, const char *key) {
    int i;
    for (i = 0; i < m->n; i++)
        if (strcmp(m->k[i], key) == 0) return m->v[i];
    return NULL;
}

/* The string-valued entries of the header's "__metadata__" into out (others are skipped);
   0 on failure, with ps->oom set when an allocation failed. */
static int nn__st_metadata_kv(nn__st_parser *ps, nn__kv *out) {
    int first = 1;
    if (!nn__st_expect(ps, '{', "'{'")) return 0;
    for (;;) {
        char *name = NULL;
        nn__st_ws(ps);
        if (ps->p < ps->end && *ps->p == '}') return 1;
        if (!first && !nn__st_expect(ps, ',', "','")) return 0;
        first = 0;
        if (!nn__st_string(ps, &name)) return 0;
        if (!nn__st_expect(ps, ':', "':'")) {
            NN_FREE(name);
            return 0;
        }
        if (strcmp(name, "__metadata__") != 0) {
            NN_FREE(name);
            if (!nn__st_skip(ps, 1)) return 0;
            continue;
        }
        NN_FREE(name);
        if (!nn__st_expect(ps, '{', "'{'")) return 0;
        for (first = 1;;) {
            char *k = NULL, *v = NULL;
            nn__st_ws(ps);
            if (ps->p < ps->end && *ps->p == '}') return 1; /* the rest was validated by the parser */
            if (!first && !nn__st_expect(ps, ',', "','")) return 0;
            first = 0;
            if (!nn__st_string(ps, &k)) return 0;
            if (!nn__st_expect(ps, ':', "':'")) {
                NN_FREE(k);
                return 0;
            }
            nn__st_ws(ps);
            if (ps->p >= ps->end || *ps->p != '"') {
                NN_FREE(k);
                if (!nn__st_skip(ps, 1)) return 0;
                continue;
            }
            if (!nn__st_string(ps, &v)) {
                NN_FREE(k);
                return 0;
            }
            if (out->n == out->cap) {
                int cap = out->cap ? out->cap * 2 : 16;
                char **nk = (char **)NN_REALLOC(out->k, (size_t)cap * sizeof *nk), **nv;
                if (nk) out->k = nk;
                nv = nk ? (char **)NN_REALLOC(out->v, (size_t)cap * sizeof *nv) : NULL;
                if (nv) out->v = nv;
                if (!nk || !nv) {
                    NN_FREE(k);
                    NN_FREE(v);
                    ps->oom = 1;
                    return nn__st_error(ps, "out of memory");
                }
                out->cap = cap;
            }
            out->k[out->n] = k;
            out->v[out->n++] = v;
        }
    }
}

/* The metadata of a header that nn__st_parse has validated: NN_OK, NN_ERR_IO (err says
   why) or NN_ERR_OUT_OF_MEMORY; on failure out is empty. */
static nn_result nn__st_metadata(const unsigned char *buf, size_t data_off, nn__kv *out, char *err, size_t errlen) {
    nn__st_parser ps;
    memset(out, 0, sizeof *out);
    memset(&ps, 0, sizeof ps);
    ps.base = ps.p = buf + 8;
    ps.end = buf + data_off;
    ps.err = err;
    ps.errlen = errlen;
    if (nn__st_metadata_kv(&ps, out)) return NN_OK;
    nn__kv_free(out);
    return ps.oom ? NN_ERR_OUT_OF_MEMORY : NN_ERR_IO;
}

/* ---- the tensors of a training state ---- */

typedef struct nn__state_list {
    nn__st_item *it;     /* names owned by the list */
    int n, cap;
} nn__state_list;

static void nn__state_list_free(nn__state_list *l) {
    int i;
    for (i = 0; i < l->n; i++) NN_FREE(l->it[i].name);
    NN_FREE(l->it);
    memset(l, 0, sizeof *l);
}

static int nn__state_add(nn__state_list *l, const char *name, const char *suffix, nn_shape shape, nn__buf *buf, float *host,
                         nn_dtype stored) {
    nn__st_item *it;
    size_t n = strlen(name) + strlen(suffix) + 1;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 32;
        nn__st_item *ni = (nn__st_item *)NN_REALLOC(l->it, (size_t)cap * sizeof *ni);
        if (!ni) return 0;
        l->it = ni;
        l->cap = cap;
    }
    it = &l->it[l->n];
    memset(it, 0, sizeof *it);
    it->name = (char *)NN_MALLOC(n);
    if (!it->name) return 0;
    snprintf(it->name, n, "%s%s", name, suffix);
    it->shape = shape;
    it->numel = nn__numel(&shape);
    it->buf = buf;
    it->stored = stored;
    it->host = host;
    l->n++;
    return 1;
}

static int nn__is_opt_node(const nn__node *n) {
    return n->op == NN__OP_OPT_SGD || n->op == NN__OP_OPT_ADAM || n->op == NN__OP_OPT_STEP;
}

/* Every tensor of g's training state, sorted by name. */
static nn_result nn__state_collect(nn_graph *g, const char *path, nn__state_list *l) {
    nn__params *ps = g->params;
    int i, k, ok = 1;
    memset(l, 0, sizeof *l);
    for (i = 0; i < ps->n && ok; i++) {
        nn__param *p = &ps->p[i];
        if (!p->allocated && !p->init)
            return nn__fail(g->ctx, NN_ERR_STATE, "%s: parameter %s has no storage", path, p->name);
        ok = nn__state_add(l, p->name, "", p->shape, p->allocated ? &p->buf : NULL, p->allocated ? NULL : p->init,
                           p->dtype);
    }
    for (i = 0; i < g->n_nodes && ok; i++) {
        nn__node *n = &g->nodes[i];
        if (nn__is_opt_node(n) && n->live) {
            nn__node *pn = &g->nodes[n->in[0]];
            for (k = 0; k < n->n_aux && ok; k++) {
                char suffix[32];
                snprintf(suffix, sizeof suffix, ".__opt.%d", k);
                ok = nn__state_add(l, pn->name, suffix, pn->shape, &n->aux[k], NULL, NN_F32);
            }
        }
        if (n->op == NN__OP_PARAM && n->grad >= 0 && g->nodes[n->grad].op == NN__OP_GRAD_ACC && g->nodes[n->grad].live)
            ok = nn__state_add(l, n->name, ".__grad_acc", n->shape, &g->nodes[n->grad].buf, NULL, NN_F32);
#ifdef NN_MPI /* ZeRO-1 (src/dist/dist.c): no update ops; the whole state gathered into host buffers */
        for (k = 0; g->zero && n->op == NN__OP_PARAM && n->grad >= 0 && k < nn__opt_n_aux(&g->opt) && ok; k++) {
            char suffix[32];
            float *host = nn__dist_zero_tensor(g, k, i);
            if (!host) continue; /* not rank 0 while saving: it writes nothing */
            snprintf(suffix, sizeof suffix, ".__opt.%d", k);
            ok = nn__state_add(l, n->name, suffix, n->shape, NULL, host, NN_F32);
        }
#endif
    }
    if (!ok) {
        nn__state_list_free(l);
        return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    if (l->n > 1) qsort(l->it, (size_t)l->n, sizeof l->it[0], nn__st_cmp_item);
    for (i = 1; i < l->n; i++)
        if (strcmp(l->it[i - 1].name, l->it[i].name) == 0) {
            nn_result r = nn__fail(g->ctx, NN_ERR_STATE, "%s: two state tensors named %s", path, l->it[i].name);
            nn__state_list_free(l);
            return r;
        }
    return NN_OK;
}

static void nn__meta_put(nn__jtext *h, int *first, const char *key, const char *value) {
    if (!*first) nn__jt_puts(h, ",");
    *first = 0;
    nn__st_put_string(h, key); /* ASCII keys; dataset names checked to be UTF-8 at creation */
    nn__jt_puts(h, ":");
    nn__st_put_string(h, value);
}

static void nn__meta_u64(nn__jtext *h, int *first, const char *key, uint64_t v) {
    char b[32];
    snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    nn__meta_put(h, first, key, b);
}

static int nn__parse_u64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!s || !*s) return 0;
    for (; *s; s++) {
        unsigned d;
        if (*s < '0' || *s > '9') return 0;
        d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

/* The steps a training state's update averages: accumulate_steps, times the ranks of a
   data-parallel graph (each rank's step is one of that many micro-steps). */
static int nn__accum_effective(const nn_graph *g) { return g->accum_steps * (g->dist_size > 1 ? g->dist_size : 1); }

static nn_result nn__save_state(nn_graph *g, const char *path) {
    nn_context *ctx;
    nn__state_list l;
    nn__jtext h;
    nn_dataset *d;
    char b[64];
    int first = 1;
    nn_result r;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    ctx = g->ctx;
    if ((r = nn__graph_orphaned(g, "nn_graph_save_state")) != NN_OK) return r;
    if (!path || !path[0]) return nn__fail(ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_save_state: no path given");
    if (!g->compiled || g->status != NN_OK)
        return nn__fail(ctx, NN_ERR_STATE, "nn_graph_save_state: %s: compile the graph first", path);
    r = nn__state_collect(g, path, &l);
    if (r != NN_OK) return r;
    memset(&h, 0, sizeof h);
    nn__jt_puts(&h, "{");
    nn__meta_put(&h, &first, "format", "pt");
    nn__meta_put(&h, &first, "nn.state", "1");
    nn__meta_put(&h, &first, "nn.optimizer", nn__opt_kind_name(g->opt.kind));
    nn__meta_u64(&h, &first, "nn.optimizer_state", (uint64_t)nn__opt_n_aux(&g->opt) * (g->opt.kind != NN_OPT_NONE));
    nn__meta_u64(&h, &first, "nn.accumulate_steps", (uint64_t)nn__accum_effective(g));
    nn__meta_u64(&h, &first, "nn.seed", g->seed);
    nn__meta_u64(&h, &first, "nn.step", g->step);
    nn__meta_u64(&h, &first, "nn.updates", g->clock.t);
    nn__format_double(b, sizeof b, g->clock.mu_prod); /* '.' whatever the locale */
    nn__meta_put(&h, &first, "nn.nadam_mu_product", b);
    for (d = g->datasets; d; d = d->next) {
        char key[300];
        snprintf(key, sizeof key, "nn.dataset.%.200s.seed", d->name);
        nn__meta_u64(&h, &first, key, d->seed);
        snprintf(key, sizeof key, "nn.dataset.%.200s.epoch", d->name);
        nn__meta_u64(&h, &first, key, (uint64_t)d->epoch);
        snprintf(key, sizeof key, "nn.dataset.%.200s.position", d->name);
        nn__meta_u64(&h, &first, key, (uint64_t)d->pos);
    }
    nn__jt_puts(&h, "}");
    if (h.oom) r = nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    else r = nn__st_save(ctx, path, h.s, l.it, l.n, NN_F32);
    NN_FREE(h.s);
    nn__state_list_free(&l);
    return r;
}

#ifdef NN_MPI /* data-parallel (src/dist/dist.c): rank 0 writes, the others wait for its result */
static nn_result nn__save_state_ranks(nn_graph *g, const char *path) {
    nn_result r;
    if (!g || !g->dist) return nn__save_state(g, path);
    if (!g->zero) return nn__dist_agree(g, g->dist_rank == 0 ? nn__save_state(g, path) : NN_OK, "nn_graph_save_state");
    r = nn__dist_zero_full(g, 1, "nn_graph_save_state"); /* ZeRO-1: the shards gathered to rank 0 */
    if (r == NN_OK) r = nn__dist_agree(g, g->dist_rank == 0 ? nn__save_state(g, path) : NN_OK, "nn_graph_save_state");
    nn__dist_zero_release(g, 0);
    return r;
}
#define nn__save_state nn__save_state_ranks
#endif

NN_API nn_result nn_graph_save_state(nn_graph *g, const char *path) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_save_state", nn__save_state(g, path));
}

static nn_result nn__dataset_order(nn_dataset *d);

/* A metadata value that must be there and be a decimal integer. */
static int nn__meta_need(nn_context *ctx, const nn__kv *m, const char *path, const char *key, uint64_t *v, nn_result *r) {
    const char *s = nn__kv_get(m, key);
    if (!s) {
        *r = nn__fail(ctx, NN_ERR_IO, "%s: no \"%s\" in the metadata: not a training state of this graph", path, key);
        return 0;
    }
    if (!nn__parse_u64(s, v)) {
        *r = nn__fail(ctx, NN_ERR_IO, "%s: metadata \"%s\" is \"%.40s\", not an unsigned integer", path, key, s);
        return 0;
    }
    return 1;
}

static nn_result nn__load_state_mem(nn_graph *g, const char *path, const unsigned char *buf, size_t len) {
    nn_context *ctx = g->ctx;
    nn__st_file f;
    nn__kv m;
    nn__state_list l;
    nn_dataset *d;
    char err[512];
    const char *s;
    float *tmp = NULL;
    size_t most = 1;
    uint64_t n_state, accum, seed, step, updates;
    double mu = 1.0;
    int i, k;
    nn_result r;
    memset(&m, 0, sizeof m);
    memset(&l, 0, sizeof l);
    r = nn__st_parse(buf, len, &f, err, sizeof err);
    if (r != NN_OK) return nn__fail(ctx, r, "%s: %s", path, err);
    r = nn__st_metadata(buf, f.data_off, &m, err, sizeof err);
    if (r != NN_OK) {
        r = nn__fail(ctx, r, "%s: %s", path, err);
        goto done;
    }
    s = nn__kv_get(&m, "nn.state");
    if (!s || strcmp(s, "1") != 0) {
        r = nn__fail(ctx, NN_ERR_IO, "%s: not an nn.h training state (metadata \"nn.state\" is %s)", path, s ? s : "missing");
        goto done;
    }
    s = nn__kv_get(&m, "nn.optimizer");
    if (!s || strcmp(s, nn__opt_kind_name(g->opt.kind)) != 0) {
        r = nn__fail(ctx, NN_ERR_STATE, "%s: the state is of optimizer %.40s, the graph's is %s", path, s ? s : "(missing)",
                     nn__opt_kind_name(g->opt.kind));
        goto done;
    }
    if (!nn__meta_need(ctx, &m, path, "nn.optimizer_state", &n_state, &r) ||
        !nn__meta_need(ctx, &m, path, "nn.accumulate_steps", &accum, &r) || !nn__meta_need(ctx, &m, path, "nn.seed", &seed, &r) ||
        !nn__meta_need(ctx, &m, path, "nn.step", &step, &r) || !nn__meta_need(ctx, &m, path, "nn.updates", &updates, &r))
        goto done;
    if (n_state != (uint64_t)nn__opt_n_aux(&g->opt) * (g->opt.kind != NN_OPT_NONE)) {
        r = nn__fail(ctx, NN_ERR_STATE, "%s: the optimizer has %llu state tensors per parameter there, %d here (other options)",
                     path, (unsigned long long)n_state, nn__opt_n_aux(&g->opt) * (g->opt.kind != NN_OPT_NONE));
        goto done;
    }
    if (accum != (uint64_t)nn__accum_effective(g)) {
        r = nn__fail(ctx, NN_ERR_STATE, "%s: accumulate_steps is %llu there, %d here", path, (unsigned long long)accum,
                     nn__accum_effective(g));
        goto done;
    }
    if (g->dist_size > 1 && step % (uint64_t)g->dist_size) { /* data-parallel: whole cycles only */
        r = nn__fail(ctx, NN_ERR_STATE, "%s: saved at step %llu, inside a cycle of %d accumulated steps: %d ranks resume at a "
                     "cycle's end only", path, (unsigned long long)step, g->dist_size, g->dist_size);
        goto done;
    }
    if (updates > step) {
        r = nn__fail(ctx, NN_ERR_IO, "%s: metadata: updates %llu > steps %llu is impossible", path,
                     (unsigned long long)updates, (unsigned long long)step);
        goto done;
    }
    s = nn__kv_get(&m, "nn.nadam_mu_product");
    if (s) {
        /* '.' in every locale; a ',' alone is read as one too (files saved by versions that
           printed with the locale's decimal point, under de_DE and the like) */
        char num[64];
        size_t n = strlen(s), i;
        int commas = 0, points = 0;
        for (i = 0; i < n && n < sizeof num; i++) {
            commas += s[i] == ',';
            points += s[i] == '.';
            num[i] = s[i] == ',' ? '.' : s[i];
        }
        if (n >= sizeof num || commas > 1 || (commas && points) || nn__parse_real(num, n, 0, &mu) != 1 || mu != mu ||
            mu > DBL_MAX || mu < -DBL_MAX) {
            r = nn__fail(ctx, NN_ERR_IO, "%s: metadata \"nn.nadam_mu_product\" is \"%.40s\", not a finite number", path, s);
            goto done;
        }
    }
    for (d = g->datasets; d; d = d->next) { /* checked here, set below */
        char key[300];
        uint64_t v[3];
        static const char *const what[3] = {"seed", "epoch", "position"};
        for (k = 0; k < 3; k++) {
            snprintf(key, sizeof key, "nn.dataset.%.200s.%s", d->name, what[k]);
            if (!nn__meta_need(ctx, &m, path, key, &v[k], &r)) goto done;
        }
        if (v[1] > (uint64_t)INT64_MAX / 2 || v[2] > (uint64_t)d->per_epoch) {
            r = nn__fail(ctx, NN_ERR_IO, "%s: dataset %s: epoch %llu, position %llu out of range (%lld batches an epoch)", path,
                         d->name, (unsigned long long)v[1], (unsigned long long)v[2], (long long)d->per_epoch);
            goto done;
        }
    }
    r = nn__state_collect(g, path, &l);
    if (r != NN_OK) goto done;
    for (i = 0; i < l.n; i++) {
        nn__st_item *it = &l.it[i];
        const nn__st_tensor *t = nn__st_find(&f, it->name);
        int same;
        if (!t && accum > 0 && step % accum == 0 && strlen(it->name) > 11 &&
            strcmp(it->name + strlen(it->name) - 11, ".__grad_acc") == 0)
            continue; /* saved at a cycle's end (by ranks, data-parallel): the next step resets it */
        if (!t) {
            r = nn__fail(ctx, NN_ERR_IO, "%s: no tensor %s", path, it->name);
            goto done;
        }
        if (t->dtype >= NN__ST_N_FLOAT) {
            r = nn__fail(ctx, NN_ERR_SHAPE, "%s: tensor %s is %s, not a float dtype", path, it->name, nn__st_dtype_names[t->dtype]);
            goto done;
        }
        same = t->ndim == it->shape.ndim;
        for (k = 0; same && k < t->ndim; k++) same = t->shape[k] == it->shape.dim[k];
        if (!same) {
            char sh[160];
            nn__shape_str(&it->shape, sh, sizeof sh);
            r = nn__fail(ctx, NN_ERR_SHAPE, "%s: tensor %s has another shape than the graph's %s", path, it->name, sh);
            goto done;
        }
        it->t = t;
        if ((size_t)it->numel > most) most = (size_t)it->numel;
    }
    tmp = (float *)nn__calloc(most, sizeof(float));
    if (!tmp) {
        r = nn__fail(ctx, NN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    /* every check passed: now write */
    for (i = 0; i < l.n && r == NN_OK; i++) {
        nn__st_item *it = &l.it[i];
        if (!it->t) continue; /* a running mean the next step resets (above) */
        nn__st_convert(tmp, buf + f.data_off + (size_t)it->t->begin, (size_t)it->numel, it->t->dtype);
        if (it->buf) r = nn__buf_write_f32(ctx, it->buf, it->stored, tmp, it->numel);
        else memcpy(it->host, tmp, (size_t)it->numel * 4);
    }
    if (r != NN_OK) goto done;
    g->seed = seed;
    g->step = step;
    g->clock.t = updates;
    g->clock.mu_prod = mu;
    g->lr = nn__lr_at(&g->schedule, updates > 0 ? (int64_t)updates - 1 : 0);
    for (d = g->datasets; d && r == NN_OK; d = d->next) {
        char key[300];
        uint64_t v;
        snprintf(key, sizeof key, "nn.dataset.%.200s.seed", d->name);
        nn__parse_u64(nn__kv_get(&m, key), &v);
        d->seed = v;
        snprintf(key, sizeof key, "nn.dataset.%.200s.epoch", d->name);
        nn__parse_u64(nn__kv_get(&m, key), &v);
        d->epoch = (int64_t)v;
        snprintf(key, sizeof key, "nn.dataset.%.200s.position", d->name);
        nn__parse_u64(nn__kv_get(&m, key), &v);
        d->pos = (int64_t)v;
        d->perm_epoch = -1;
        r = nn__dataset_order(d);
    }
done:
    NN_FREE(tmp);
    nn__state_list_free(&l);
    nn__kv_free(&m);
    nn__st_free(&f);
    return r;
}

static nn_result nn__load_state(nn_graph *g, const char *path) {
    unsigned char *buf = NULL;
    size_t len = 0;
    nn_result r;
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    if ((r = nn__graph_orphaned(g, "nn_graph_load_state")) != NN_OK) return r;
    if (!path || !path[0]) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_graph_load_state: no path given");
    if (!g->compiled || g->status != NN_OK)
        return nn__fail(g->ctx, NN_ERR_STATE, "nn_graph_load_state: %s: compile the graph first", path);
    r = nn__read_file(g->ctx, path, &buf, &len);
    if (r != NN_OK) return r;
#ifdef NN_MPI /* ZeRO-1 (src/dist/dist.c): the whole state read, this rank's slices kept */
    if (g->zero && g->dist) {
        r = nn__dist_zero_full(g, 0, "nn_graph_load_state");
        if (r == NN_OK) r = nn__load_state_mem(g, path, buf, len);
        nn__dist_zero_release(g, r == NN_OK);
    } else
#endif
    r = nn__load_state_mem(g, path, buf, len);
    NN_FREE(buf);
    if (r == NN_OK) g->broken = 0; /* a whole state again after a failed step */
    return r;
}

NN_API nn_result nn_graph_load_state(nn_graph *g, const char *path) {
    if (!g) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(g->ctx, "nn_graph_load_state", nn__load_state(g, path));
}

/* ---- datasets ---- */

/* The order of d->epoch into d->perm: identity, or a Fisher-Yates shuffle whose draws are
   Philox4x32-10 of counter (i, epoch, "DSET") under key seed. */
static nn_result nn__dataset_order(nn_dataset *d) {
    int64_t i;
    if (d->perm_epoch == d->epoch) return NN_OK;
    for (i = 0; i < d->n; i++) d->perm[i] = (int32_t)i;
    if (d->shuffle)
        for (i = d->n - 1; i > 0; i--) {
            uint32_t ctr[4], key[2];
            uint64_t r;
            int64_t j;
            int32_t tmp;
            ctr[0] = (uint32_t)i;
            ctr[1] = (uint32_t)d->epoch;
            ctr[2] = (uint32_t)((uint64_t)d->epoch >> 32);
            ctr[3] = 0x44534554u;
            key[0] = (uint32_t)d->seed;
            key[1] = (uint32_t)(d->seed >> 32);
            nn__philox(ctr, key);
            r = ((uint64_t)ctr[0] << 32) | ctr[1];
            j = (int64_t)(r % (uint64_t)(i + 1));
            tmp = d->perm[i];
            d->perm[i] = d->perm[j];
            d->perm[j] = tmp;
        }
    d->perm_epoch = d->epoch;
    return NN_OK;
}

/* An array given to nn_dataset_create: its dtype, its ndim before any dim is read, every dim,
   and its size in bytes (4 per element) without overflow. */
static nn_result nn__dataset_check_array(nn_graph *g, const char *name, const char *which, const nn_array *a) {
    uint64_t numel = 1;
    int k;
    if (!a || !a->data)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_dataset_create: %s: %s must be an array [N, ...] with data", name,
                        which);
    if (a->dtype != NN_F32 && a->dtype != NN_I32)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_dataset_create: %s: %s has unknown dtype %d", name, which,
                        (int)a->dtype);
    if (a->shape.ndim < 1 || a->shape.ndim > NN_MAX_DIMS)
        return nn__fail(g->ctx, NN_ERR_SHAPE, "nn_dataset_create: %s: %s has %d dims, not 1 to %d", name, which, a->shape.ndim,
                        NN_MAX_DIMS);
    for (k = 0; k < a->shape.ndim; k++) {
        int64_t d = a->shape.dim[k];
        if (d < 1 || (uint64_t)d > ((uint64_t)1 << 40) / numel)
            return nn__fail(g->ctx, NN_ERR_SHAPE, "nn_dataset_create: %s: %s's dim %d is %lld: empty or too large", name, which,
                            k, (long long)d);
        numel *= (uint64_t)d;
    }
    if (numel > (uint64_t)(SIZE_MAX / 4))
        return nn__fail(g->ctx, NN_ERR_SHAPE, "nn_dataset_create: %s: %s is too large", name, which);
    return NN_OK;
}

/* A model's variant (src/engine/model.c) builds its graph's dataset again: the same inputs
   NAME.x and NAME.y (which share the graph's storage: nn__model_source), an index input
   NAME.idx of the variant's batch, and the gathers; the dataset is the graph's. */
static nn_result nn__dataset_variant(nn_graph *g, const char *name, nn_dataset **out) {
    nn_graph *p = g->model_of;
    nn_dataset *d;
    char buf[300];
    for (d = p->datasets; d && strcmp(d->name, name) != 0; d = d->next) {}
    if (!d)
        return nn__fail(g->ctx, NN_ERR_STATE, "nn_dataset_create: %s: the model function made no such dataset at batch %lld", name,
                        (long long)p->batch);
    snprintf(buf, sizeof buf, "%s.x", name);
    nn_input(g, buf, p->nodes[d->x_all.id].dtype, p->nodes[d->x_all.id].shape);
    snprintf(buf, sizeof buf, "%s.y", name);
    nn_input(g, buf, p->nodes[d->y_all.id].dtype, p->nodes[d->y_all.id].shape);
    snprintf(buf, sizeof buf, "%s.idx", name);
    if (nn_input(g, buf, NN_I32, nn_shape1(g->batch)).id == d->idx.id) g->nodes[d->idx.id].per_step = 1;
    nn_gather_rows(g, d->x_all, d->idx);
    nn_gather_rows(g, d->y_all, d->idx);
    if (g->status != NN_OK) return g->status;
    *out = d;
    return NN_OK;
}

NN_API nn_result nn_dataset_create(nn_graph *g, const nn_dataset_desc *desc, nn_dataset **out) {
    nn_dataset *d;
    nn_dataset_desc dd;
    const char *name;
    size_t nlen, i;
    int64_t n;
    char buf[300];
    nn_result r, status0;
    if (out) *out = NULL;
    if (!g || !desc || !out) return g ? nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_dataset_create: NULL argument") : NN_ERR_INVALID_ARGUMENT;
    dd = *desc;
    name = dd.name ? dd.name : "data";
    nlen = strlen(name);
    if (g->compiled) return nn__fail(g->ctx, NN_ERR_STATE, "nn_dataset_create: %s: the graph is compiled already", name);
    for (i = 0; i < nlen;) { /* it goes into the state file's metadata keys */
        size_t k = nn__st_utf8_len((const unsigned char *)name + i, nlen - i);
        if (!k) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_dataset_create: the name is not valid UTF-8");
        i += k;
    }
    if (!nlen || nlen > 200)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_dataset_create: name \"%.40s\" is empty or over 200 bytes", name);
    for (d = g->datasets; d; d = d->next)
        if (strcmp(d->name, name) == 0) return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_dataset_create: a dataset %s exists", name);
    if (g->model_of) return nn__dataset_variant(g, name, out);
    if ((r = nn__dataset_check_array(g, name, "x", dd.x)) != NN_OK || (r = nn__dataset_check_array(g, name, "y", dd.y)) != NN_OK)
        return r;
    n = dd.x->shape.dim[0];
    if (dd.y->shape.dim[0] != n || n < 1 || n > INT32_MAX)
        return nn__fail(g->ctx, NN_ERR_SHAPE, "nn_dataset_create: %s: x has %lld samples, y %lld", name, (long long)n,
                        (long long)dd.y->shape.dim[0]);
    if (dd.batch < 1 || dd.batch > n)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_dataset_create: %s: batch %lld is not in [1, %lld]", name,
                        (long long)dd.batch, (long long)n);
    if (g->model && dd.batch != g->batch)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_dataset_create: %s: batch %lld in a model built at batch %lld: give "
                        "the dataset the model function's batch", name, (long long)dd.batch, (long long)g->batch);
    if (!dd.drop_last && n % dd.batch && !g->model)
        return nn__fail(g->ctx, NN_ERR_INVALID_ARGUMENT, "nn_dataset_create: %s: %lld samples at batch %lld leave a last batch of "
                        "%lld, which a graph built at one batch size cannot run: build the graph with nn_graph_build (any "
                        "batch size), or set nn_dataset_desc.drop_last = 1 to drop it", name, (long long)n,
                        (long long)dd.batch, (long long)(n % dd.batch));
    d = (nn_dataset *)nn__calloc(1, sizeof *d);
    if (!d) return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_dataset_create: out of memory");
    d->g = g;
    d->n = n;
    d->batch = dd.batch;
    d->drop_last = dd.drop_last != 0;
    d->per_epoch = d->drop_last ? n / dd.batch : (n + dd.batch - 1) / dd.batch;
    d->shuffle = dd.shuffle;
    d->seed = nn__defu64(dd.seed, g->seed);
    d->perm_epoch = -1;
    d->x_bytes = (size_t)nn__numel(&dd.x->shape) * 4;
    d->y_bytes = (size_t)nn__numel(&dd.y->shape) * 4;
    d->name = nn__strdup(name);
    d->perm = (int32_t *)nn__calloc((size_t)n, sizeof(int32_t));
    d->x_host = NN_MALLOC(d->x_bytes);
    d->y_host = NN_MALLOC(d->y_bytes);
    if (!d->name || !d->perm || !d->x_host || !d->y_host) {
        NN_FREE(d->name);
        NN_FREE(d->perm);
        NN_FREE(d->x_host);
        NN_FREE(d->y_host);
        NN_FREE(d);
        return nn__fail(g->ctx, NN_ERR_OUT_OF_MEMORY, "nn_dataset_create: %s: out of memory", name);
    }
    memcpy(d->x_host, dd.x->data, d->x_bytes);
    memcpy(d->y_host, dd.y->data, d->y_bytes);
    status0 = g->status;
    snprintf(buf, sizeof buf, "%s.x", name);
    d->x_all = nn_input(g, buf, dd.x->dtype, dd.x->shape);
    snprintf(buf, sizeof buf, "%s.y", name);
    d->y_all = nn_input(g, buf, dd.y->dtype, dd.y->shape);
    snprintf(buf, sizeof buf, "%s.idx", name);
    d->idx = nn_input(g, buf, NN_I32, nn_shape1(dd.batch));
    if (d->idx.id > 0) g->nodes[d->idx.id].per_step = 1; /* a step refuses it unless written since the last */
    d->xb = nn_gather_rows(g, d->x_all, d->idx);
    d->yb = nn_gather_rows(g, d->y_all, d->idx);
    if (g->status != NN_OK) { /* no dataset (the nodes made stay, unused, in a graph that cannot compile) */
        NN_FREE(d->name);
        NN_FREE(d->perm);
        NN_FREE(d->x_host);
        NN_FREE(d->y_host);
        NN_FREE(d);
        if (status0 == NN_OK) { /* the error is this call's: say so */
            char why[NN__ERRLEN];
            snprintf(why, sizeof why, "%s", g->ctx->err);
            nn__fail(g->ctx, g->status, "nn_dataset_create: %s: %s", name, why);
        }
        return g->status;
    }
    d->next = g->datasets;
    g->datasets = d;
    g->datasets_free = nn__datasets_free;
    *out = d;
    return NN_OK;
}

NN_API nn_tensor nn_dataset_x(const nn_dataset *d) { return d ? d->xb : nn__tensor_of(NULL, -1); }
NN_API nn_tensor nn_dataset_y(const nn_dataset *d) { return d ? d->yb : nn__tensor_of(NULL, -1); }
NN_API nn_result nn_dataset_epoch(const nn_dataset *d, int64_t *epoch) {
    if (!epoch) return NN_ERR_INVALID_ARGUMENT;
    *epoch = d ? d->epoch : -1;
    return d ? NN_OK : NN_ERR_INVALID_ARGUMENT;
}

static nn_result nn__dataset_next_batch(nn_dataset *d) {
    nn_graph *g;
    nn_result r;
    int64_t rows;
    if (!d) return NN_ERR_INVALID_ARGUMENT;
    g = d->g;
    if (!g->compiled) return nn__fail(g->ctx, NN_ERR_STATE, "nn_dataset_next_batch: %s: compile the graph first", d->name);
    if (d->x_host) { /* the samples go to the device once */
        r = NN_OK; /* (a part the graph does not use has no storage) */
        if (g->nodes[d->x_all.id].live) r = nn__tensor_write(g, d->x_all, d->x_host, d->x_bytes);
        if (r == NN_OK && g->nodes[d->y_all.id].live) r = nn__tensor_write(g, d->y_all, d->y_host, d->y_bytes);
        if (r != NN_OK) return r;
        NN_FREE(d->x_host);
        NN_FREE(d->y_host);
        d->x_host = d->y_host = NULL;
    }
    if (g->dist_size > 1 && !d->drop_last && d->n % d->batch) /* a partial last batch */
        return nn__fail(g->ctx, NN_ERR_STATE, "nn_dataset_next_batch: %s: data-parallel training takes whole batches: set "
                        "nn_dataset_desc.drop_last = 1", d->name);
    if (g->dist_size > 1) { /* data-parallel: of the next N batches of the sequence (across
                               epochs), rank r takes the r-th; every rank advances by N */
        int64_t e = d->epoch, p = d->pos, me_e = e, me_p = p, e0 = d->epoch;
        int i;
        for (i = 0; i < g->dist_size; i++) {
            if (p >= d->per_epoch) {
                e++;
                p = 0;
            }
            if (i == g->dist_rank) {
                me_e = e;
                me_p = p;
            }
            p++;
        }
        d->epoch = me_e;
        r = nn__dataset_order(d);
        if (r == NN_OK) r = nn__tensor_write(g, d->idx, d->perm + me_p * d->batch, (size_t)d->batch * sizeof(int32_t));
        d->epoch = r == NN_OK ? e : e0;
        if (r == NN_OK) d->pos = p;
        return r;
    }
    if (d->pos >= d->per_epoch) {
        d->epoch++;
        d->pos = 0;
    }
    r = nn__dataset_order(d);
    if (r != NN_OK) return r;
    rows = d->n - d->pos * d->batch < d->batch ? d->n - d->pos * d->batch : d->batch; /* the last batch may be partial */
    if (g->model) { /* a model graph runs at the batch's rows, in the mode selected (src/engine/model.c) */
        r = nn__model_select(g, rows, g->model->eval, "nn_dataset_next_batch");
        if (r != NN_OK) return r;
    }
    r = nn__tensor_write(nn__active(g), d->idx, d->perm + d->pos * d->batch, (size_t)rows * sizeof(int32_t));
    if (r == NN_OK) d->pos++;
    return r;
}

NN_API nn_result nn_dataset_next_batch(nn_dataset *d) {
    if (!d) return NN_ERR_INVALID_ARGUMENT;
    return NN__EXCLUSIVE(d->g->ctx, "nn_dataset_next_batch", nn__dataset_next_batch(d));
}
