/* nn_matmul with torch.matmul's semantics, through the op checker (tests/op_check.c): dot
   products, vector-matrix and matrix-vector products, batched products whose batch dims
   broadcast (right-aligned, 1 against n), either operand transposed, at odd shapes (1, 3,
   7, 33, 127); the gradients reduce over the broadcast batch dims.
   Gradients along one dense random direction per input (op_check.c's dirs). Tolerances
   are op_check.c's (1e-4 relative). */
#define _POSIX_C_SOURCE 200809L /* setenv, as tests/nn_test.c */
#include "test.h"
#include "bad_rows.h"
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static nn_tensor b_mm(nn_graph *g, const nn_tensor *in, const spec *s) { return nn_matmul(g, in[0], in[1], s->ta, s->tb); }

/* torch.matmul in double precision, written from its definition: a 1-D a is [1, K] and a
   1-D b is [K, 1] (the 1 is dropped from the result), the batch dims (all but the last
   two) broadcast right-aligned, and trans_a / trans_b swap an operand's last two dims.
   Shared with tests/test_mixed.c (test.h). */
void t_ref_matmul(const spec *s, double *const *in, double *out) {
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
    s = mk(name, b_mm, t_ref_matmul, out);
    s.ta = ta;
    s.tb = tb;
    s.dirs = 1; /* directional derivatives: one dense random direction per input */
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
        s.dirs = 1;
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

/* A CPU GEMM with one of its paths on or off (tests/coverage.c's t_sgemm_pre, t_sgemm_pb):
   the product into C, alpha 0.75, beta 0; returns 1 when the path was planned, 0 when not,
   -1 on failure */
typedef int (*mm_switch_fn)(int threads, int on, int ta, int tb, int M, int N, int K, const float *A, const float *B,
                            float *C);

/* a and b of n floats each, uniform in [-1, 1) from seed */
static void mm_fill2(float *a, float *b, int n, unsigned long long seed) {
    int i;
    t_seed(seed);
    for (i = 0; i < n; i++) a[i] = (float)t_uniform(-1, 1);
    for (i = 0; i < n; i++) b[i] = (float)t_uniform(-1, 1);
}

/* fn on 1 and 3 threads with its path on (c[0], c[1]) and off (c[2], c[3]): the four give the
   same bits, the off runs plan no such path; plan[0], plan[1] what the on runs planned */
static void mm_switch_runs(mm_switch_fn fn, const char *what, const char *kernel, int ta, int tb, int M, int N, int K,
                           const float *a, const float *b, float *const *c, int plan[2]) {
    static const char *const runs[4] = {"on, 1 thread", "on, 3 threads", "off, 1 thread", "off, 3 threads"};
    int got[4], i;
    for (i = 0; i < 4; i++) got[i] = fn(i % 2 ? 3 : 1, i < 2, ta, tb, M, N, K, a, b, c[i]);
    T_CHECK(got[0] >= 0 && got[1] >= 0 && got[2] >= 0 && got[3] >= 0, "no pool");
    T_CHECK(got[2] == 0 && got[3] == 0, "%s: off, still planned", what);
    for (i = 1; i < 4; i++)
        T_CHECK(memcmp(c[0], c[i], (size_t)M * N * 4) == 0, "%s %s %dx%dx%d ta=%d tb=%d: %s differs from on, 1 thread",
                what, kernel, M, N, K, ta, tb, runs[i]);
    plan[0] = got[0];
    plan[1] = got[1];
}

/* The CPU GEMM with op(A) packed once for a task's NC blocks (N > 512: two NC blocks; the
   tasks split M, or one task) gives the bits of packing it per NC block, on 1 and 3 threads,
   each kernel this CPU runs, both transposes; edge tiles on both sides and two to four K
   blocks. K 1,024: rows of A [M,K] 4 KB apart, which the AVX-512 kernel packs (it reads rows
   that keep to L1's sets in place, nn__gemm_direct_lda_ok). */
static void mm_prepack(const t_env *e) {
    static const char *const kernels[] = {"generic", "avx2", "avx512f"};
    static const int shapes[2][3] = {{37, 530, 1024}, {600, 530, 1024}}; /* 3 threads split N, M */
    enum { MAXF = 600 * 1024 }; /* the largest operand: op(A) of the second shape, M x K */
    float *a = NULL, *b = NULL, *c[4] = {NULL, NULL, NULL, NULL};
    int k, s, ta, tb, i, planned = 0, two_nc = 0;
    if (!t_begin_cpu(e, "matmul: the CPU GEMM's op(A) packed once gives the bits of packing it per NC block",
                     "the CPU backend's GEMM"))
        return;
    a = (float *)malloc((size_t)MAXF * 4);
    b = (float *)malloc((size_t)MAXF * 4);
    for (i = 0; i < 4; i++) c[i] = (float *)malloc((size_t)600 * 530 * 4);
    if (!T_CHECK(a && b && c[0] && c[1] && c[2] && c[3], "out of memory")) goto done;
    mm_fill2(a, b, MAXF, 91);
    for (k = 0; k < 3; k++) {
        if (strcmp(t_sgemm_force(kernels[k]), kernels[k]) != 0) continue; /* not on this CPU */
        for (s = 0; s < 2; s++)
            for (ta = 0; ta < 2; ta++)
                for (tb = 0; tb < 2; tb++) {
                    int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], p[2];
                    mm_switch_runs(t_sgemm_pre, "op(A) packed once", kernels[k], ta, tb, M, N, K, a, b, c, p);
                    planned += (p[0] > 0) + (p[1] > 0);
                    /* two NC blocks (this kernel's NC below N): packed once on 1 thread, and on 3
                       where they split M */
                    two_nc += N > t_sgemm_nc();
                    if (N > t_sgemm_nc())
                        T_CHECK(p[0] > 0 && (s == 0 || p[1] > 0), "%s %dx%dx%d ta=%d tb=%d: op(A) not packed once (%d, %d)",
                                kernels[k], M, N, K, ta, tb, p[0], p[1]);
                }
    }
    T_CHECK(planned > 0 || !two_nc, "no product packed its operands once");
done:
    t_sgemm_force(NULL);
    free(a);
    free(b);
    for (i = 0; i < 4; i++) free(c[i]);
    t_end();
}

/* The CPU GEMM with op(B) packed by the first A panel's tiles as they multiply (the AVX-512
   kernel's nn__gemm_ukr_avx512_pb) gives the bits of a packing pass of its own, on 1 and 3
   threads, both transposes (B^T packs as before): a last partial B panel, A's edge rows, op(A)
   read in place and packed, two K blocks, two NC blocks, fewer rows than a panel. */
static void mm_pack_b(const t_env *e) {
    static const int shapes[][3] = {{37, 530, 580}, {100, 64, 513}, {13, 33, 1}, {11, 70, 600}, {25, 96, 7}};
    enum { MAXF = 530 * 580 }; /* the largest operand: op(B) of the first shape, K x N */
    float *a = NULL, *b = NULL, *c[4] = {NULL, NULL, NULL, NULL};
    int s, ta, tb, i, fused = 0;
    if (!t_begin_cpu(e, "matmul: the CPU GEMM's op(B) packed on the way gives the bits of a packing pass",
                     "the CPU backend's GEMM"))
        return;
    if (strcmp(t_sgemm_force("avx512f"), "avx512f") != 0) {
        t_skip("the CPU has no AVX-512F (the only kernel that packs op(B) on the way)");
        goto done;
    }
    a = (float *)malloc((size_t)MAXF * 4);
    b = (float *)malloc((size_t)MAXF * 4);
    for (i = 0; i < 4; i++) c[i] = (float *)malloc((size_t)MAXF * 4);
    if (!T_CHECK(a && b && c[0] && c[1] && c[2] && c[3], "out of memory")) goto done;
    mm_fill2(a, b, MAXF, 92);
    for (s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++)
        for (ta = 0; ta < 2; ta++)
            for (tb = 0; tb < 2; tb++) {
                int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], p[2];
                mm_switch_runs(t_sgemm_pb, "op(B) packed on the way", "avx512f", ta, tb, M, N, K, a, b, c, p);
                /* B [K,N], the first shape's A packed (ta) or read in place (rows 580 apart) */
                if (s == 0 && !tb) T_CHECK(p[0] == 1, "%dx%dx%d ta=%d: op(B) not packed on the way", M, N, K, ta);
                fused += p[0] == 1;
            }
    T_CHECK(fused > 0, "no product packed op(B) on the way");
done:
    t_sgemm_force(NULL);
    free(a);
    free(b);
    for (i = 0; i < 4; i++) free(c[i]);
    t_end();
}

/* The 2-D products, both operands transposed or not, at odd shapes (1, 3, 7, 33, 129). */
static void matmul_cases(const t_env *e) {
    static const int shapes[][3] = {{7, 33, 3}, {1, 129, 7}, {33, 1, 129}, {3, 7, 1}, {129, 33, 33}};
    char name[96];
    int k, ta, tb;
    for (k = 0; k < 5; k++)
        for (ta = 0; ta < 2; ta++)
            for (tb = 0; tb < 2; tb++) {
                int M = shapes[k][0], N = shapes[k][1], K = shapes[k][2];
                spec s;
                snprintf(name, sizeof name, "matmul%s%s M=%d N=%d K=%d", ta ? " A^T" : "", tb ? " B^T" : "", M, N, K);
                s = mk(name, b_mm, t_ref_matmul, nn_shape2(M, N));
                s.ta = ta;
                s.tb = tb;
                s.dirs = 1; /* directional derivatives: one dense random direction per input */
                in_f(&s, ta ? nn_shape2(K, M) : nn_shape2(M, K));
                in_f(&s, tb ? nn_shape2(N, K) : nn_shape2(K, N));
                check_case(e, &s);
            }
    /* Above the size CPU-tuned devices run in one item (2 MFLOP: NN__GEMM_ONE_ITEM_FLOPS in
       src/opencl/gemm_plan.c; the cases above all run there in one): 3 x 3 items, edge tiles
       on both sides */
    for (ta = 0; ta < 2; ta++)
        for (tb = 0; tb < 2; tb++) {
            const int M = 67, N = 131, K = 129;
            spec s;
            snprintf(name, sizeof name, "matmul%s%s M=%d N=%d K=%d", ta ? " A^T" : "", tb ? " B^T" : "", M, N, K);
            s = mk(name, b_mm, t_ref_matmul, nn_shape2(M, N));
            s.ta = ta;
            s.tb = tb;
            s.dirs = 1;
            in_f(&s, ta ? nn_shape2(K, M) : nn_shape2(M, K));
            in_f(&s, tb ? nn_shape2(N, K) : nn_shape2(K, N));
            check_case(e, &s);
        }
    {   /* the same above it in a batched launch (kernels/gemm.cl's gemm_nn_batched): 2 x 3 x 3 items */
        spec s = mk("matmul batched [2] M=67 N=131 K=129", b_mm, t_ref_matmul, nn_shape3(2, 67, 131));
        s.dirs = 1;
        in_f(&s, nn_shape3(2, 67, 129));
        in_f(&s, nn_shape3(2, 129, 131));
        check_case(e, &s);
    }
    {   /* NT on the CPU devices' dot products (gemm_nt_dot, 1,024 k a block): K past a block
           (two whole blocks and a tail); K a multiple of 16, so the whole tiles store a row's
           sums as one vector and the edge tiles element by element, above 2 MFLOP (several
           items); and that past a block (the second block's whole tiles add onto the first's) */
        static const int nt[3][3] = {{5, 7, 2100}, {67, 131, 128}, {13, 9, 2048}};
        for (k = 0; k < 3; k++) {
            const int M = nt[k][0], N = nt[k][1], K = nt[k][2];
            spec s;
            snprintf(name, sizeof name, "matmul B^T M=%d N=%d K=%d", M, N, K);
            s = mk(name, b_mm, t_ref_matmul, nn_shape2(M, N));
            s.tb = 1;
            s.dirs = 1;
            in_f(&s, nn_shape2(M, K));
            in_f(&s, nn_shape2(N, K));
            check_case(e, &s);
        }
    }
}

/* ==== NaN and infinity propagation (the op checker's expected-value mode: PyTorch's
   NaN, +-inf and values; the rules in tests/op_check.c) ==== */

/* ---- matmul and dense ---- */

typedef struct np_mm { int ta, tb; } np_mm;
static nn_tensor b_matmul(nn_graph *g, const nn_tensor *in, const spec *s_) {
    const np_mm *m = (const np_mm *)s_->arg;
    return nn_matmul(g, in[0], in[1], m->ta, m->tb);
}

/* y [M, N] = op(A) op(B) and the gradients of sum(y * w) in double */
static void mm_ref(const double *A, const double *B, const double *w, double *y, double *dA, double *dB, int M, int K, int N,
                   int ta, int tb) {
    int i, j, k;
    for (i = 0; i < M * K; i++) dA[i] = 0;
    for (i = 0; i < K * N; i++) dB[i] = 0;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double s = 0;
            for (k = 0; k < K; k++) {
                double a = ta ? A[k * M + i] : A[i * K + k], b = tb ? B[j * K + k] : B[k * N + j];
                s += a * b;
                if (ta) dA[k * M + i] += w[i * N + j] * b;
                else dA[i * K + k] += w[i * N + j] * b;
                if (tb) dB[j * K + k] += w[i * N + j] * a;
                else dB[k * N + j] += w[i * N + j] * a;
            }
            y[i * N + j] = s;
        }
}

static void nanprop_matmul_one(const t_env *e, const char *name, int M, int K, int N, int ta, int tb, unsigned seed) {
    double *A = (double *)malloc(sizeof(double) * M * K), *B = (double *)malloc(sizeof(double) * K * N);
    double *y = (double *)malloc(sizeof(double) * M * N), *w = (double *)malloc(sizeof(double) * M * N);
    double *dA = (double *)malloc(sizeof(double) * M * K), *dB = (double *)malloc(sizeof(double) * K * N);
    np_mm mm;
    np_case c;
    int i;
    np_fill(A, (long)M * K, -1, 1, seed);
    np_fill(B, (long)K * N, -1, 1, seed + 1);
    for (i = 0; i < M * N; i++) w[i] = 1;
    /* a NaN row of op(A) and an inf in another whose column of op(B) holds a 0, a -inf
       in B, a column of B that meets +inf and -inf */
    A[(ta ? 2 * M + 1 : 1 * K + 2)] = NAN;
    A[(ta ? 0 * M + M - 1 : (M - 1) * K)] = INFINITY;
    B[(tb ? 1 * K + 0 : 0 * N + 1)] = 0;
    B[(tb ? (N - 1) * K + K - 1 : (K - 1) * N + N - 1)] = -INFINITY;
    mm_ref(A, B, w, y, dA, dB, M, K, N, ta, tb);
    mm.ta = ta;
    mm.tb = tb;
    np_init(&c, name, b_matmul, &mm);
    np_in(&c, ta ? nn_shape2(K, M) : nn_shape2(M, K), A, dA);
    np_in(&c, tb ? nn_shape2(N, K) : nn_shape2(K, N), B, dB);
    c.y_expect = y;
    np_run(e, &c);
    free(A);
    free(B);
    free(y);
    free(w);
    free(dA);
    free(dB);
}

/* nn_linear_layer (x W^T + b with its own parameters fc.weight and fc.bias): x [3, 4] with NaN in
   row 1, inf in W row 2, NaN in b[4]; the parameters written before the step */
static nn_tensor b_dense(nn_graph *g, const nn_tensor *in, const spec *s_) {
    (void)s_;
    return nn_linear_layer(g, in[0], 5, NULL, "fc");
}
static void nanprop_dense(const t_env *e) {
    double xv[12], Wv[20], bv[5], ry[15], w1[15], rdx[12], rdW[20], rdb[5];
    int i, j;
    np_case c;
    np_fill(xv, 12, -1, 1, 56);
    np_fill(Wv, 20, -1, 1, 57);
    np_fill(bv, 5, -1, 1, 58);
    xv[5] = NAN;
    Wv[9] = INFINITY;
    bv[4] = NAN;
    for (i = 0; i < 15; i++) w1[i] = 1;
    mm_ref(xv, Wv, w1, ry, rdx, rdW, 3, 4, 5, 0, 1);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 5; j++) ry[i * 5 + j] += bv[j];
    for (j = 0; j < 5; j++) rdb[j] = 3;
    np_init(&c, "dense x[3, 4] -> 5", b_dense, NULL);
    np_in(&c, nn_shape2(3, 4), xv, rdx);
    np_param(&c, "fc.weight", nn_shape2(5, 4), Wv, rdW); /* its own parameters, written before the step */
    np_param(&c, "fc.bias", nn_shape1(5), bv, rdb);
    c.y_expect = ry;
    np_run(e, &c);
}

static void nanprop_matmul(const t_env *e) {
    nanprop_matmul_one(e, "matmul [5, 7] x [7, 6]", 5, 7, 6, 0, 0, 51);
    nanprop_matmul_one(e, "matmul [5, 7]^T x [7, 6]^T", 5, 7, 6, 1, 1, 52);
    nanprop_matmul_one(e, "matmul [37, 70] x [70, 45]", 37, 70, 45, 0, 0, 53); /* the blocked kernels */
    nanprop_matmul_one(e, "matmul [37, 70] x [45, 70]^T", 37, 70, 45, 0, 1, 54);
    nanprop_matmul_one(e, "matmul [130, 33]^T x [33, 67]", 130, 33, 67, 1, 0, 55);
    nanprop_dense(e);
}

/* ==== bad input: one row per refusal, the code and the words of the message (run by
   the op checker's t_bad_rows; the rules in tests/bad_rows.h) ==== */

/* ---- matmul and dense ---- */

B(m_rank, nn_matmul(g, F(g, S3(2, 3, 4)), F(g, S3(3, 4, 5)), 0, 0))
B(m_trans, nn_matmul(g, F(g, S2(4, 3)), F(g, S2(5, 6)), 1, 0))
B(m_int, nn_matmul(g, F(g, S2(2, 3)), I(g, S2(3, 2)), 0, 0))
B(m_dense_rank, nn_linear_layer(g, F(g, S3(2, 3, 4)), 5, NULL, "fc"))
B(m_dense_zero, nn_linear_layer(g, F(g, S2(2, 3)), 0, NULL, "fc"))
B(m_dense_neg, nn_linear_layer(g, F(g, S2(2, 3)), -5, NULL, "fc"))
B(m_dense_name, nn_linear_layer(g, F(g, S2(2, 3)), 4, NULL, NULL))
B(m_dense_int, nn_linear_layer(g, I(g, S2(2, 3)), 4, NULL, "fc"))

static const bad_row matmul_bad[] = {
    {"matmul", "matmul batches [2] and [3] of [2, 3, 4] x [3, 4, 5]", m_rank, R_SHAPE, "nn_matmul|[2, 3, 4]|[3, 4, 5]|broadcast", 0},
    {"matmul", "matmul [4, 3]^T x [5, 6]", m_trans, R_SHAPE, "nn_matmul|[4, 3] (transposed)|[5, 6]", 0},
    {"matmul", "matmul with int32 b", m_int, R_SHAPE, "nn_matmul|b|int32", 0},
    {"matmul", "dense of [2, 3, 4]", m_dense_rank, R_SHAPE, "nn_linear_layer|fc|[2, 3, 4]", 0},
    {"matmul", "dense out_features 0", m_dense_zero, R_INV, "nn_linear_layer|fc|out_features 0", 0},
    {"matmul", "dense out_features -5", m_dense_neg, R_INV, "nn_linear_layer|fc|out_features -5", 0},
    {"matmul", "dense without a name", m_dense_name, R_INV, "nn_linear_layer|name", 0},
    {"matmul", "dense of int32", m_dense_int, R_SHAPE, "nn_linear_layer|int32", 0},
};

/* ---- x W^T + b (matmul with trans_b, then add) through the op checker ---- */

static nn_tensor b_linear(nn_graph *g, const nn_tensor *in, const spec *s) {
    (void)s;
    return nn_add(g, nn_matmul(g, in[0], in[1], 0, 1), in[2]);
}
static void r_linear(const spec *s, double *const *in, double *out) {
    long B = s->shape[0].dim[0], I = s->shape[0].dim[1], O = s->shape[1].dim[0], b, o, i;
    for (b = 0; b < B; b++)
        for (o = 0; o < O; o++) {
            double acc = in[2][o];
            for (i = 0; i < I; i++) acc += in[0][b * I + i] * in[1][o * I + i];
            out[b * O + o] = acc;
        }
}

static void linear_case(const t_env *e) {
    spec s = mk("dense [7, 33] -> 129", b_linear, r_linear, nn_shape2(7, 129));
    in_f(&s, nn_shape2(7, 33));
    in_f(&s, nn_shape2(129, 33));
    in_f(&s, nn_shape1(129));
    check_case(e, &s);
}

/* Log lines of one context, for mm_env_tile. */
typedef struct {
    int warns, n;
    char text[4][512];
} mm_lines;
static void mm_collect(void *user, nn_log_level level, const char *msg) {
    mm_lines *l = (mm_lines *)user;
    if (level != NN_LOG_WARN) return;
    if (l->warns < 4) snprintf(l->text[l->warns], sizeof l->text[0], "%s", msg);
    l->warns++;
}

/* $NN_CL_GEMM (src/opencl/gemm_plan.c): a tile the kernel cannot build or the device cannot
   run is ignored with one warning a context, naming the value and why, and the products (two
   plans, one graph) still come out right; a tile the device takes gives the same products and
   no warning (on a CPU-tuned device, which has no such tile, a warning too). 33 x 129 x 65
   against the double product. */
static void mm_env_tile(const t_env *e) {
    static const struct { const char *env, *why; } tiles[] = {
        {"4,4,3,16,16,16", "VW is not"},                    /* VW 3 */
        {"4,6,4,16,16,16", "VW does not divide WPT_N"},
        {"4,4,4,256,256,16", "largest work-group"},          /* 65536 items */
        {"256,256,16,16,16,256", "local memory"},             /* 8 MiB of panels */
        {"4,4,4,16", "six integers"},
        {"8,8,4,8,8,8", NULL},                                /* taken where GPU-tuned */
    };
    enum { M = 33, K = 129, N = 65 };
    static float va[M * K], vb[K * N], vc[M * N], vd[N * M];
    double ref[M * N], worst = 0;
    int t, i, j, k, gpu = t_gpu_tuned(e);
    char *saved;
    if (!t_begin(e, "matmul: NN_CL_GEMM's tile that the device cannot take is ignored with one warning, products right"))
        return;
    if (!e->opencl) {
        t_skip("NN_CL_GEMM is the OpenCL GEMM's tile");
        return;
    }
    saved = getenv("NN_CL_GEMM") ? strdup(getenv("NN_CL_GEMM")) : NULL;
    t_seed(5);
    for (i = 0; i < M * K; i++) va[i] = (float)t_uniform(-1, 1);
    for (i = 0; i < K * N; i++) vb[i] = (float)t_uniform(-1, 1);
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double s = 0;
            for (k = 0; k < K; k++) s += (double)va[i * K + k] * vb[k * N + j];
            ref[i * N + j] = s;
        }
    for (t = 0; t < (int)(sizeof tiles / sizeof tiles[0]); t++) {
        nn_context_desc d;
        nn_context *c = NULL;
        nn_graph *g = NULL;
        nn_tensor a, b, y, yt;
        nn_compile_desc cd;
        mm_lines lines;
        int want = tiles[t].why || !gpu, parse = tiles[t].why && strstr(tiles[t].why, "six");
        const char *why = parse ? tiles[t].why : !gpu ? "CPU-tuned" : tiles[t].why;
        memset(&lines, 0, sizeof lines);
        setenv("NN_CL_GEMM", tiles[t].env, 1);
        t_context_desc(e, &d);
        d.log = mm_collect;
        d.log_user = &lines;
        d.log_level = NN_LOG_WARN;
        if (!T_OK(nn_context_create(&d, &c), NULL)) break;
        if (T_OK(nn_graph_create(c, NULL, &g), c)) {
            a = nn_input(g, "a", NN_F32, nn_shape2(M, K));
            b = nn_input(g, "b", NN_F32, nn_shape2(K, N));
            y = nn_matmul(g, a, b, 0, 0);
            yt = nn_matmul(g, b, a, 1, 1); /* (a b)^T: the TT kernel, a second plan */
            nn_graph_output(g, y);
            nn_graph_output(g, yt);
            memset(&cd, 0, sizeof cd);
            if (T_OK(nn_graph_compile(g, &cd), c) && T_OK(nn_tensor_write(g, a, va, sizeof va), c) &&
                T_OK(nn_tensor_write(g, b, vb, sizeof vb), c) && T_OK(nn_graph_forward(g), c) &&
                T_OK(nn_tensor_read(g, y, vc, sizeof vc), c) && T_OK(nn_tensor_read(g, yt, vd, sizeof vd), c))
                for (i = 0; i < M; i++)
                    for (j = 0; j < N; j++) {
                        double r = ref[i * N + j], e1 = fabs(vc[i * N + j] - r), e2 = fabs(vd[j * M + i] - r);
                        if (e1 > worst) worst = e1;
                        if (e2 > worst) worst = e2;
                    }
        }
        T_CHECK(worst < 1e-4, "NN_CL_GEMM=%s: products off by %g", tiles[t].env, worst);
        T_CHECK(lines.warns == want, "NN_CL_GEMM=%s: %d warnings, want %d (first: %s)", tiles[t].env, lines.warns, want,
                lines.warns ? lines.text[0] : "");
        if (lines.warns >= 1) {
            char v[64];
            snprintf(v, sizeof v, "NN_CL_GEMM=%s ignored", tiles[t].env);
            T_CHECK(strstr(lines.text[0], v) && strstr(lines.text[0], why) &&
                        strstr(lines.text[0], "keeps its own tile"),
                    "the warning names neither the value, why, nor the fallback: %s", lines.text[0]);
        }
        nn_graph_destroy(g);
        nn_context_destroy(c);
    }
    if (saved) setenv("NN_CL_GEMM", saved, 1);
    else unsetenv("NN_CL_GEMM");
    free(saved);
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
    T_RUN(e, mm_deterministic, einsum_cases);
    {
        static const int m34[] = {3, 4, 0}, m45[] = {4, 5, 0}, m55[] = {5, 5, 0}, v3[] = {3, 0}, v4[] = {4, 0};
        einsum_error(e, "ij,jk->ik", m34, m55, "label j is 4");
        einsum_error(e, "i,j->ij", v3, v4, "not a single matmul");
        einsum_error(e, "ij,jk->k", m34, m45, "alone is summed");
        einsum_error(e, "ii,ij->j", m34, m45, "repeats");
        einsum_error(e, "ij,jk,kl->il", m34, m45, "expected");
        einsum_error(e, "ij,jk->ijk", m34, m45, "must lead");
    }
    T_RUN(e, matmul_cases, nanprop_matmul);
    mm_prepack(e);
    mm_pack_b(e);
    mm_env_tile(e);
    t_bad_rows(e, matmul_bad, (int)(sizeof matmul_bad / sizeof matmul_bad[0]));
    linear_case(e);
}
