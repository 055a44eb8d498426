/* nn_matmul with torch.matmul's semantics, through the op checker (tests/op_check.c): dot
   products, vector-matrix and matrix-vector products, batched products whose batch dims
   broadcast (right-aligned, 1 against n), either operand transposed, at odd shapes (1, 3,
   7, 33, 127); the gradients reduce over the broadcast batch dims. The 2-D products are
   in tests/test_ops.c. Tolerances are op_check.c's (1e-4 relative). */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static nn_tensor b_mm(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_matmul(g, in[0], in[1], s->ta, s->tb); }

/* torch.matmul in double precision, written from its definition: a 1-D a is [1, K] and a
   1-D b is [K, 1] (the 1 is dropped from the result), the batch dims (all but the last
   two) broadcast right-aligned, and trans_a / trans_b swap an operand's last two dims. */
static void r_mm(const spec *s, double *const *in, double *out) {
    const nn_shape *A = &s->shape[0], *B = &s->shape[1];
    int a1 = A->ndim == 1, b1 = B->ndim == 1, ta = a1 ? 0 : s->ta, tb = b1 ? 0 : s->tb;
    long ar = a1 ? 1 : (long)A->dim[A->ndim - 2], ac = (long)A->dim[A->ndim - 1];
    long br = b1 ? (long)B->dim[0] : (long)B->dim[B->ndim - 2], bc = b1 ? 1 : (long)B->dim[B->ndim - 1];
    long M = ta ? ac : ar, K = ta ? ar : ac, N = tb ? br : bc;
    int nba = a1 ? 0 : A->ndim - 2, nbb = b1 ? 0 : B->ndim - 2, nbo = nba > nbb ? nba : nbb, d;
    long ext[NN_MAX_DIMS], nbatch = 1, z, m, n, k;
    for (d = 0; d < nbo; d++) {
        long ea = d - (nbo - nba) >= 0 ? (long)A->dim[d - (nbo - nba)] : 1;
        long eb = d - (nbo - nbb) >= 0 ? (long)B->dim[d - (nbo - nbb)] : 1;
        ext[d] = ea > eb ? ea : eb;
        nbatch *= ext[d];
    }
    for (z = 0; z < nbatch; z++) {
        long idx[NN_MAX_DIMS], rest = z, za = 0, zb = 0;
        const double *pa, *pb;
        for (d = nbo - 1; d >= 0; d--) {
            idx[d] = rest % ext[d];
            rest /= ext[d];
        }
        for (d = 0; d < nba; d++) za = za * (long)A->dim[d] + (A->dim[d] == 1 ? 0 : idx[d + nbo - nba]);
        for (d = 0; d < nbb; d++) zb = zb * (long)B->dim[d] + (B->dim[d] == 1 ? 0 : idx[d + nbo - nbb]);
        pa = in[0] + za * ar * ac;
        pb = in[1] + zb * br * bc;
        for (m = 0; m < M; m++)
            for (n = 0; n < N; n++) {
                double acc = 0;
                for (k = 0; k < K; k++)
                    acc += (ta ? pa[k * ac + m] : pa[m * ac + k]) * (tb ? pb[n * bc + k] : pb[k * bc + n]);
                out[(z * M + m) * N + n] = acc;
            }
    }
}

static nn_shape shp(const int *d) {
    nn_shape s;
    memset(&s, 0, sizeof s);
    while (s.ndim < NN_MAX_DIMS && d[s.ndim] > 0) {
        s.dim[s.ndim] = d[s.ndim];
        s.ndim++;
    }
    return s;
}

static void shape_text(nn_shape s, char *buf, size_t n) {
    int i;
    size_t len = 0;
    buf[0] = 0;
    for (i = 0; i < s.ndim && len + 16 < n; i++) len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "," : "[", (long long)s.dim[i]);
    snprintf(buf + len, n - len, "]");
}

/* Stored shape of an operand given untransposed: its last two dims swapped. */
static nn_shape swap_last(nn_shape s) {
    if (s.ndim >= 2) {
        int64_t t = s.dim[s.ndim - 1];
        s.dim[s.ndim - 1] = s.dim[s.ndim - 2];
        s.dim[s.ndim - 2] = t;
    }
    return s;
}

static void mm_case(const t_env *e, nn_shape a, nn_shape b, nn_shape out, int ta, int tb) {
    char name[160], sa[48], sb[48], so[48];
    spec s;
    nn_shape as = ta ? swap_last(a) : a, bs = tb ? swap_last(b) : b;
    shape_text(as, sa, sizeof sa);
    shape_text(bs, sb, sizeof sb);
    shape_text(out, so, sizeof so);
    snprintf(name, sizeof name, "matmul %s%s @ %s%s -> %s", sa, ta ? "^T" : "", sb, tb ? "^T" : "", so);
    s = mk(name, b_mm, r_mm, out);
    s.ta = ta;
    s.tb = tb;
    in_f(&s, as);
    in_f(&s, bs);
    check_case(e, &s);
}

/* nn_matmul's refusals name the op and both shapes. */
static void mm_error(const t_env *e, const int *da, const int *db, int ta, int tb, const char *what) {
    char label[160], sa[48], sb[48];
    nn_graph *g = NULL;
    nn_graph_desc gd;
    nn_shape a = shp(da), b = shp(db);
    shape_text(a, sa, sizeof sa);
    shape_text(b, sb, sizeof sb);
    snprintf(label, sizeof label, "matmul %s%s @ %s%s is refused: %s", sa, ta ? "^T" : "", sb, tb ? "^T" : "", what);
    if (!t_begin(e, label)) return;
    memset(&gd, 0, sizeof gd);
    if (T_OK(nn_graph_create(e->ctx, &gd, &g), e->ctx)) {
        nn_tensor x = nn_input(g, "a", NN_F32, a), y = nn_input(g, "b", NN_F32, b), c = nn_matmul(g, x, y, ta, tb);
        const char *msg = nn_context_last_error(e->ctx);
        char ea[64], eb[64];
        int i;
        size_t len = 0;
        /* nn__shape_str's spelling: "[2, 3, 4]" */
        ea[0] = eb[0] = 0;
        for (i = 0; i < a.ndim; i++) len += (size_t)snprintf(ea + len, sizeof ea - len, "%s%lld", i ? ", " : "[", (long long)a.dim[i]);
        snprintf(ea + len, sizeof ea - len, "]");
        len = 0;
        for (i = 0; i < b.ndim; i++) len += (size_t)snprintf(eb + len, sizeof eb - len, "%s%lld", i ? ", " : "[", (long long)b.dim[i]);
        snprintf(eb + len, sizeof eb - len, "]");
        T_CHECK(c.id < 0, "gave a tensor");
        T_CHECK(strstr(msg, "nn_matmul") && strstr(msg, ea) && strstr(msg, eb) && strstr(msg, what),
                "the error does not name the op, both shapes and \"%s\": %s", what, msg);
        T_CHECK(nn_graph_compile(g, NULL) != NN_OK, "the graph compiled after a refused matmul");
        nn_graph_destroy(g);
    }
    t_end();
}

/* ---- nn_einsum ---- */

static const char *const einsum_specs[] = {
    "ij,jk->ik", "ij,kj->ik", "ji,jk->ik", "ij,jk->ki", "bij,bjk->bik", "bhqd,bhkd->bhqk",
    "i,i->", "ij,j->i", "j,jk->k", "ij,jk", "bqd,bkd->bkq", "ji,j->i",
};

static nn_tensor b_einsum(nn_graph *g, const nn_tensor *in, const spec *s) {
    return nn_einsum(g, einsum_specs[s->ip[0]], in[0], in[1]);
}

/* torch.einsum from its definition: every assignment of the labels, the output's element
   adding a * b (an implicit output is the labels seen once, alphabetically). */
static void r_einsum(const spec *s, double *const *in, double *out) {
    const char *sp = einsum_specs[s->ip[0]], *arrow = strstr(sp, "->"), *comma = strchr(sp, ',');
    char la[8], lb[8], lo[8], all[16];
    int na = (int)(comma - sp), nb = (int)((arrow ? arrow : sp + strlen(sp)) - comma - 1), no = 0, nall = 0, i, j;
    long size[16], idx[16], total = 1, t;
    memcpy(la, sp, (size_t)na);
    memcpy(lb, comma + 1, (size_t)nb);
    if (arrow) {
        no = (int)strlen(arrow + 2);
        memcpy(lo, arrow + 2, (size_t)no);
    } else {
        for (i = 'a'; i <= 'z'; i++) {
            int c = (memchr(la, i, (size_t)na) != NULL) + (memchr(lb, i, (size_t)nb) != NULL);
            if (c == 1) lo[no++] = (char)i;
        }
    }
    for (i = 0; i < na + nb; i++) {
        char c = i < na ? la[i] : lb[i - na];
        long d = (long)(i < na ? s->shape[0].dim[i] : s->shape[1].dim[i - na]);
        if (!memchr(all, c, (size_t)nall)) all[nall] = c, size[nall++] = d, total *= d;
    }
    for (i = 0; i < numel(s->out); i++) out[i] = 0;
    for (t = 0; t < total; t++) {
        long rest = t, ia = 0, ib = 0, io = 0;
        for (j = nall - 1; j >= 0; j--) idx[j] = rest % size[j], rest /= size[j];
        for (j = 0; j < na; j++) ia = ia * (long)s->shape[0].dim[j] + idx[(const char *)memchr(all, la[j], (size_t)nall) - all];
        for (j = 0; j < nb; j++) ib = ib * (long)s->shape[1].dim[j] + idx[(const char *)memchr(all, lb[j], (size_t)nall) - all];
        for (j = 0; j < no; j++) {
            int k = (int)((const char *)memchr(all, lo[j], (size_t)nall) - all);
            io = io * size[k] + idx[k];
        }
        out[io] += in[0][ia] * in[1][ib];
    }
}

static void einsum_cases(const t_env *e) {
    static const struct { int spec, a[5], b[5], out[5]; } cases[] = {
        {0, {7, 33}, {33, 3}, {7, 3}},          {1, {7, 33}, {3, 33}, {7, 3}},
        {2, {33, 7}, {33, 1}, {7, 1}},          {3, {7, 33}, {33, 3}, {3, 7}},
        {4, {3, 7, 33}, {3, 33, 5}, {3, 7, 5}}, {5, {2, 3, 7, 5}, {2, 3, 33, 5}, {2, 3, 7, 33}},
        {6, {127}, {127}, {1}},                 {7, {7, 33}, {33}, {7}},
        {8, {33}, {33, 3}, {3}},                {9, {1, 7}, {7, 127}, {1, 127}},
        {10, {3, 7, 5}, {3, 33, 5}, {3, 33, 7}}, {11, {33, 7}, {33}, {7}},
    };
    char name[160], sa[48], sb[48];
    int k;
    for (k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        spec s;
        nn_shape a = shp(cases[k].a), b = shp(cases[k].b);
        shape_text(a, sa, sizeof sa);
        shape_text(b, sb, sizeof sb);
        snprintf(name, sizeof name, "einsum \"%s\" %s %s", einsum_specs[cases[k].spec], sa, sb);
        s = mk(name, b_einsum, r_einsum, shp(cases[k].out));
        s.ip[0] = cases[k].spec;
        in_f(&s, a);
        in_f(&s, b);
        check_case(e, &s);
    }
}

static void einsum_error(const t_env *e, const char *sp, const int *da, const int *db, const char *what) {
    char label[160];
    nn_graph *g = NULL;
    snprintf(label, sizeof label, "einsum \"%s\" is refused: %s", sp, what);
    if (!t_begin(e, label)) return;
    if (T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) {
        nn_tensor x = nn_input(g, "a", NN_F32, shp(da)), y = nn_input(g, "b", NN_F32, shp(db));
        nn_tensor c = nn_einsum(g, sp, x, y);
        const char *msg = nn_context_last_error(e->ctx);
        T_CHECK(c.id < 0, "gave a tensor");
        T_CHECK(strstr(msg, "nn_einsum") && strstr(msg, sp) && strstr(msg, what), "the error does not name the op, the spec and \"%s\": %s", what, msg);
        nn_graph_destroy(g);
    }
    t_end();
}

/* A broadcast operand's gradient is summed in a fixed order: two steps give the same bits. */
static void mm_deterministic(const t_env *e) {
    nn_graph *g = NULL;
    nn_tensor a, b, c;
    nn_compile_desc cd;
    float *va = NULL, *vb = NULL, *g1 = NULL, *g2 = NULL;
    long na = 7 * 33, nb = 127 * 33 * 3, i;
    int run;
    if (!t_begin(e, "matmul: a broadcast operand's gradient is the same bits run to run")) return;
    if (!T_OK(nn_graph_create(e->ctx, NULL, &g), e->ctx)) goto done;
    a = nn_input(g, "a", NN_F32, nn_shape2(7, 33));
    b = nn_input(g, "b", NN_F32, nn_shape3(127, 33, 3));
    nn_graph_requires_grad(g, a);
    nn_graph_requires_grad(g, b);
    c = nn_matmul(g, a, b, 0, 0);
    memset(&cd, 0, sizeof cd);
    cd.loss = nn_sum(g, nn_mul(g, c, c));
    if (!T_OK(nn_graph_compile(g, &cd), e->ctx)) goto done;
    va = (float *)malloc((size_t)na * 4);
    vb = (float *)malloc((size_t)nb * 4);
    g1 = (float *)malloc((size_t)na * 4);
    g2 = (float *)malloc((size_t)na * 4);
    t_seed(77);
    for (i = 0; i < na; i++) va[i] = (float)t_uniform(-1, 1);
    for (i = 0; i < nb; i++) vb[i] = (float)t_uniform(-1, 1);
    for (run = 0; run < 2; run++) {
        T_OK(nn_tensor_write(g, a, va, (size_t)na * 4), e->ctx);
        T_OK(nn_tensor_write(g, b, vb, (size_t)nb * 4), e->ctx);
        T_OK(nn_graph_step(g), e->ctx);
        T_OK(nn_tensor_read(g, nn_graph_grad(g, a), run ? g2 : g1, (size_t)na * 4), e->ctx);
    }
    T_CHECK(memcmp(g1, g2, (size_t)na * 4) == 0, "two steps gave different gradients");
done:
    free(va);
    free(vb);
    free(g1);
    free(g2);
    nn_graph_destroy(g);
    t_end();
}

void suite_matmul(const t_env *e) {
    /* untransposed shapes of a, b and the result (0 ends a shape) */
    static const struct { int a[7], b[7], out[7]; int transposes; } cases[] = {
        /* 1-D x 1-D: the dot product, a [1] */
        {{33}, {33}, {1}, 0},
        {{1}, {1}, {1}, 0},
        {{127}, {127}, {1}, 0},
        /* 1-D x 2-D and 2-D x 1-D */
        {{7}, {7, 33}, {33}, 1},
        {{1}, {1, 3}, {3}, 1},
        {{33, 7}, {7}, {33}, 1},
        {{127, 3}, {3}, {127}, 1},
        /* 1-D against a batch */
        {{7}, {3, 7, 5}, {3, 5}, 1},
        {{3, 1, 7, 5}, {5}, {3, 1, 7}, 1},
        {{2, 3, 33}, {33}, {2, 3}, 1},
        /* the same batch */
        {{3, 7, 33}, {3, 33, 1}, {3, 7, 1}, 1},
        {{127, 3, 7}, {127, 7, 1}, {127, 3, 1}, 0},
        {{127, 1, 3}, {127, 3, 7}, {127, 1, 7}, 1},
        /* one operand broadcast whole: a weight shared by a batch, and the other way */
        {{3, 7, 33}, {33, 5}, {3, 7, 5}, 1},
        {{3, 33, 127}, {127, 7}, {3, 33, 7}, 1},
        {{127, 1, 3}, {3, 7}, {127, 1, 7}, 1},
        {{7, 33}, {5, 33, 3}, {5, 7, 3}, 1},
        {{1, 3}, {127, 3, 1}, {127, 1, 1}, 0},
        /* broadcast batch dims (1 against n, and missing) */
        {{2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}, 1},
        {{1, 3, 1, 7, 4}, {2, 1, 5, 4, 6}, {2, 3, 5, 7, 6}, 1},
        {{2, 1, 3, 1, 4, 5}, {1, 3, 1, 2, 5, 3}, {2, 3, 3, 2, 4, 3}, 1},
        {{7, 1, 1, 33}, {3, 33, 1}, {7, 3, 1, 1}, 0},
        /* gradients summed over two dims apart: a over dims 1 and 3, b over dims 0 and 2 */
        {{2, 1, 2, 1, 3, 4}, {1, 2, 1, 2, 4, 5}, {2, 2, 2, 2, 3, 5}, 0},
        /* many small products (threaded over the batch on the CPU) */
        {{33, 33, 9}, {33, 9, 33}, {33, 33, 33}, 0},
    };
    int k, ta, tb;
    for (k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        nn_shape a = shp(cases[k].a), b = shp(cases[k].b), out = shp(cases[k].out);
        for (ta = 0; ta < 2; ta++)
            for (tb = 0; tb < 2; tb++) {
                if ((ta || tb) && !cases[k].transposes) continue;
                if ((ta && a.ndim < 2) || (tb && b.ndim < 2)) continue;
                mm_case(e, a, b, out, ta, tb);
            }
    }
    {
        static const int a1[] = {2, 3, 4, 0}, b1[] = {5, 6, 0}, a2[] = {2, 3, 4, 0}, b2[] = {3, 4, 5, 0};
        static const int a3[] = {4, 0}, b3[] = {5, 0}, a4[] = {2, 1, 3, 4, 0}, b4[] = {3, 3, 4, 5, 0};
        mm_error(e, a1, b1, 0, 0, "inner dims differ");
        mm_error(e, a1, b1, 1, 1, "inner dims differ");
        mm_error(e, a2, b2, 0, 0, "do not broadcast");
        mm_error(e, a3, b3, 0, 0, "inner dims differ");
        mm_error(e, a4, b4, 0, 0, "do not broadcast");
    }
    mm_deterministic(e);
    einsum_cases(e);
    {
        static const int m34[] = {3, 4, 0}, m45[] = {4, 5, 0}, m55[] = {5, 5, 0}, v3[] = {3, 0}, v4[] = {4, 0};
        einsum_error(e, "ij,jk->ik", m34, m55, "label j is 4");
        einsum_error(e, "i,j->ij", v3, v4, "not a single matmul");
        einsum_error(e, "ij,jk->k", m34, m45, "alone is summed");
        einsum_error(e, "ii,ij->j", m34, m45, "repeats");
        einsum_error(e, "ij,jk,kl->il", m34, m45, "expected");
        einsum_error(e, "ij,jk->ijk", m34, m45, "must lead");
    }
}
