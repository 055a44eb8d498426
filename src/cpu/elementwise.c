/* The elementwise family's CPU loops, called by the CPU bodies of src/ops/elementwise/
   (kernels/elementwise.cl has the OpenCL twins): the unary functions, PReLU and scale
   (unary.c), the broadcast geometry with expand and the sum back to a broadcast shape
   (broadcast.c), the binary functions (binary.c), where and masked_fill (select.c). */

#include "../../kernels/activation.h"
#include "../../kernels/storage.h"

/* ---- unary functions (src/ops/elementwise/unary.c): the formulas of kernels/activation.h,
   one loop each ---- */

/* c ? a : 0.0f without a branch: ReLU's sign test is a coin flip on real activations, and
   a mispredicted branch per element made ReLU cost more than the convolution beside it.
   ReLU's c is !(x <= 0), one compare like x > 0, but true for NaN: relu(NaN) is NaN and
   its gradient passes, as PyTorch's. */
static float nn__relu_sel(int c, float a) {
    uint32_t b;
    memcpy(&b, &a, 4);
    b &= (uint32_t) - (int32_t)c;
    memcpy(&a, &b, 4);
    return a;
}

/* out[i] = !(x[i] <= 0) ? v[i] : +0.0f (ReLU's forward with v = x, its gradient with v =
   dy), 16 or 8 floats a compare: the select's bits, where the plain loop took one float at a
   time (ReLU was 7% of the CNN step on one core). 0 when no vector unit: the caller loops. */
#if defined(NN__VM_X86)
__attribute__((target("avx512f"))) static void nn__relu_sel_avx512(float *out, const float *x, const float *v, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i += 16) {
        __mmask16 k = nn__vmask_avx512(n - i);
        __mmask16 c = _mm512_mask_cmp_ps_mask(k, _mm512_maskz_loadu_ps(k, x + i), _mm512_setzero_ps(), _CMP_NLE_UQ);
        _mm512_mask_storeu_ps(out + i, k, _mm512_maskz_loadu_ps(c, v + i));
    }
}
__attribute__((target("avx2"))) static void nn__relu_sel_avx2(float *out, const float *x, const float *v, int64_t n) {
    int64_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 c = _mm256_cmp_ps(_mm256_loadu_ps(x + i), _mm256_setzero_ps(), _CMP_NLE_UQ);
        _mm256_storeu_ps(out + i, _mm256_and_ps(c, _mm256_loadu_ps(v + i)));
    }
    for (; i < n; i++) out[i] = nn__relu_sel(!(x[i] <= 0.0f), v[i]);
}
#endif
static int nn__relu_vec(float *out, const float *x, const float *v, int64_t n) {
#if defined(NN__VM_X86)
    if (nn__vm_isa() == 2) {
        nn__relu_sel_avx512(out, x, v, n);
        return 1;
    }
    if (nn__vm_isa() == 1) {
        nn__relu_sel_avx2(out, x, v, n);
        return 1;
    }
#endif
    (void)out, (void)x, (void)v, (void)n;
    return 0;
}

/* y = f(x) for the activation fn with parameters p[0], p[1]. The switch sits outside the
   loops so each loop is one function the compiler can vectorise; ReLU keeps its
   branchless select (the same values as its table formula). */
static void nn__unary_forward(int fn, const float *p, float *y, const float *x, int64_t n) {
    int64_t i;
    float p0 = p[0], p1 = p[1];
    if (fn == NN__U_RELU) {
        if (nn__relu_vec(y, x, x, n)) return;
        for (i = 0; i < n; i++) y[i] = nn__relu_sel(!(x[i] <= 0.0f), x[i]);
        return;
    }
#if defined(NN__VM_X86)
    if (nn__vm_isa() == 2 && nn__vunary_avx512(fn, p0, p1, y, x, NULL, n)) return;
    if (nn__vm_isa() == 1 && nn__vunary_avx2(fn, p0, p1, y, x, NULL, n)) return;
#endif
    switch (fn) {
#define NN__X(E, name, params, valid, fwd, der) \
    case NN__U_##E: for (i = 0; i < n; i++) { float v = x[i]; y[i] = (fwd); } break;
    NN__UNARY_ALL(NN__X)
#undef NN__X
    default: break;
    }
    (void)p0, (void)p1;
}

/* dx = dy * f'(x) */
static void nn__unary_backward(int fn, const float *p, float *dx, const float *x, const float *dy, int64_t n) {
    int64_t i;
    float p0 = p[0], p1 = p[1];
    if (fn == NN__U_RELU) {
        if (nn__relu_vec(dx, x, dy, n)) return;
        for (i = 0; i < n; i++) dx[i] = nn__relu_sel(!(x[i] <= 0.0f), dy[i]);
        return;
    }
#if defined(NN__VM_X86)
    if (nn__vm_isa() == 2 && nn__vunary_avx512(fn, p0, p1, dx, x, dy, n)) return;
    if (nn__vm_isa() == 1 && nn__vunary_avx2(fn, p0, p1, dx, x, dy, n)) return;
#endif
    switch (fn) {
#define NN__X(E, name, params, valid, fwd, der) \
    case NN__U_##E: for (i = 0; i < n; i++) { float v = x[i]; (void)v; dx[i] = dy[i] * (der); } break;
    NN__UNARY_ALL(NN__X)
#undef NN__X
    default: break;
    }
    (void)p0, (void)p1;
}

/* ---- PReLU: x [N, C, S] with the slope w[c] of its channel (C = 1: one shared slope); the
   formulas are leaky ReLU's, from kernels/activation.h ---- */

static void nn__prelu_forward(float *y, const float *x, const float *w, int64_t N, int64_t C, int64_t S) {
    int64_t k, j;
    for (k = 0; k < N * C; k++) {
        float wk = w[k % C];
        for (j = 0; j < S; j++) y[k * S + j] = nn__act_leaky(x[k * S + j], wk);
    }
}

static void nn__prelu_backward_input(float *dx, const float *x, const float *w, const float *dy, int64_t N, int64_t C,
                                     int64_t S) {
    int64_t k, j;
    for (k = 0; k < N * C; k++) {
        float wk = w[k % C];
        for (j = 0; j < S; j++) dx[k * S + j] = dy[k * S + j] * nn__act_leaky_der(x[k * S + j], wk);
    }
}

/* dw [C] = sum over n and s of dy * dy/dw: a partial sum over s for each (n, c), then the
   partials in n order, as kernels/elementwise.cl sums them. */
static void nn__prelu_backward_weight(float *dw, const float *x, const float *dy, int64_t N, int64_t C, int64_t S) {
    int64_t c, n, s;
    for (c = 0; c < C; c++) {
        float acc = 0.0f;
        for (n = 0; n < N; n++) {
            const float *xr = x + (n * C + c) * S, *dr = dy + (n * C + c) * S;
            float part = 0.0f;
            for (s = 0; s < S; s++) part += dr[s] * nn__act_leaky_dslope(xr[s]);
            acc += part;
        }
        dw[c] = acc;
    }
}

static void nn__scale_forward(float *y, const float *x, float s, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++) y[i] = x[i] * s;
}

/* ---- elementwise ops with broadcasting (NumPy's rules; src/ops/elementwise/broadcast.c) ----
   An output shape and operands whose dims are 1 or the output's, missing leading dims
   counting as 1. nn__bcast_init drops the output's size-1 dims and merges neighbouring
   dims wherever every operand is contiguous (or broadcast) across them, so a same-shape op
   is one flat dim, a bias [N] over [M, N] two, and [3, 1, 7] with [1, 33, 1] three. The
   innermost dim then has stride 0 or 1 in each operand. Device plans pass the same
   geometry to kernels/elementwise.cl. */

typedef struct nn__bcast {
    int nd;                       /* dims after merging, 1 to NN_MAX_DIMS */
    int n_op;                     /* operands, at most 3 */
    int64_t n;                    /* output elements */
    int64_t dim[NN_MAX_DIMS];     /* outermost first */
    int64_t st[3][NN_MAX_DIMS];   /* each operand's element stride per dim, 0 where broadcast */
} nn__bcast;

static void nn__bcast_init(nn__bcast *bc, const nn_shape *out, const nn_shape *const *ops, int n_op) {
    int64_t dim[NN_MAX_DIMS], st[3][NN_MAX_DIMS], run[3] = {1, 1, 1};
    int d, k, nd = 0;
    memset(bc, 0, sizeof *bc);
    bc->n_op = n_op;
    bc->n = nn__numel(out);
    for (d = out->ndim - 1; d >= 0; d--) { /* innermost first */
        int64_t D = out->dim[d];
        if (D == 1) continue;
        for (k = 0; k < n_op; k++) {
            int od = d - (out->ndim - ops[k]->ndim);
            int64_t s = od >= 0 ? ops[k]->dim[od] : 1;
            st[k][nd] = s == 1 ? 0 : run[k];
            run[k] *= s;
        }
        dim[nd++] = D;
    }
    if (nd == 0) { /* one element */
        bc->nd = 1;
        bc->dim[0] = 1;
        return;
    }
    { /* merge dim j into the group below it when every operand continues across */
        int c = 0, j;
        for (j = 1; j < nd; j++) {
            int ok = 1;
            for (k = 0; k < n_op; k++) ok &= st[k][j] == st[k][c] * dim[c];
            if (ok) {
                dim[c] *= dim[j];
            } else {
                c++;
                dim[c] = dim[j];
                for (k = 0; k < n_op; k++) st[k][c] = st[k][j];
            }
        }
        nd = c + 1;
    }
    bc->nd = nd;
    for (d = 0; d < nd; d++) { /* outermost first */
        bc->dim[d] = dim[nd - 1 - d];
        for (k = 0; k < n_op; k++) bc->st[k][d] = st[k][nd - 1 - d];
    }
}

/* Each operand's offset at output element e (at the start of its row when e is). */
static void nn__bcast_offsets(const nn__bcast *bc, int64_t e, int64_t *off) {
    int d, k;
    for (k = 0; k < bc->n_op; k++) off[k] = 0;
    for (d = bc->nd - 1; d >= 0; d--) {
        int64_t c = e % bc->dim[d];
        e /= bc->dim[d];
        for (k = 0; k < bc->n_op; k++) off[k] += c * bc->st[k][d];
    }
}

/* Below this many elements an elementwise loop runs on the calling thread alone. */
#define NN__EW_PAR_MIN 65536

/* y [n] = f(a, b) along a row: a and b advance by sa and sb (0 or 1). */
static void nn__binary_row_scalar(int fn, float *y, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n) {
    int64_t i;
    switch (fn) {
#define NN__X(E, name, fwd, da, db)                                                              \
    case NN__B_##E:                                                                              \
        for (i = 0; i < n; i++) { float u = a[i * sa], w = b[i * sb]; y[i] = (fwd); }            \
        break;
        NN__BINARY_FNS(NN__X)
#undef NN__X
    default: break;
    }
}

#if defined(NN__VM_X86)
/* The SIMD rows: the same IEEE operations as the scalar formulas, so the same bits (min and
   max take u where u < w (u > w), else w, and NaN from u + w, as the formulas). They return
   how many elements they did; the scalar row does the rest. */
#define NN__EW_ROW(ISA, TARGET, V, W, LOAD, SET1, STORE, BODY)                                    \
    __attribute__((target(TARGET))) static int64_t nn__binary_row_##ISA(int fn, float *y, const float *a, \
                                                                          int64_t sa, const float *b,  \
                                                                          int64_t sb, int64_t n) {      \
        int64_t i = 0;                                                                           \
        V one = SET1(1.0f), zero = SET1(0.0f);                                                   \
        (void)one, (void)zero;                                                                   \
        switch (fn) { BODY default: break; }                                                     \
        return i;                                                                                \
    }
#define NN__EW_CASE(E, EXPR, V, W, LOAD, SET1, STORE)                                             \
    case NN__B_##E:                                                                              \
        for (; i + W <= n; i += W) {                                                             \
            V u = sa ? LOAD(a + i) : SET1(a[0]), w = sb ? LOAD(b + i) : SET1(b[0]);              \
            STORE(y + i, EXPR);                                                                  \
        }                                                                                        \
        break;
#define NN__A2(E, EXPR) NN__EW_CASE(E, EXPR, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_storeu_ps)
#define NN__A2_MASK(P) _mm256_and_ps(_mm256_cmp_ps(u, w, P), one)
#define NN__A2_NZ(x) _mm256_cmp_ps(x, zero, _CMP_NEQ_UQ)
#define NN__A2_NANSEL(m) _mm256_blendv_ps(m, _mm256_add_ps(u, w), _mm256_cmp_ps(u, w, _CMP_UNORD_Q))
NN__EW_ROW(avx2, "avx2", __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_storeu_ps,
           NN__A2(ADD, _mm256_add_ps(u, w)) NN__A2(SUB, _mm256_sub_ps(u, w)) NN__A2(MUL, _mm256_mul_ps(u, w))
           NN__A2(DIV, _mm256_div_ps(u, w)) NN__A2(MINIMUM, NN__A2_NANSEL(_mm256_min_ps(u, w)))
           NN__A2(MAXIMUM, NN__A2_NANSEL(_mm256_max_ps(u, w))) NN__A2(EQ, NN__A2_MASK(_CMP_EQ_OQ))
           NN__A2(NE, NN__A2_MASK(_CMP_NEQ_UQ)) NN__A2(LT, NN__A2_MASK(_CMP_LT_OQ))
           NN__A2(LE, NN__A2_MASK(_CMP_LE_OQ)) NN__A2(GT, NN__A2_MASK(_CMP_GT_OQ)) NN__A2(GE, NN__A2_MASK(_CMP_GE_OQ))
           NN__A2(LOGICAL_AND, _mm256_and_ps(_mm256_and_ps(NN__A2_NZ(u), NN__A2_NZ(w)), one))
           NN__A2(LOGICAL_OR, _mm256_and_ps(_mm256_or_ps(NN__A2_NZ(u), NN__A2_NZ(w)), one)))
#define NN__A5(E, EXPR) NN__EW_CASE(E, EXPR, __m512, 16, _mm512_loadu_ps, _mm512_set1_ps, _mm512_storeu_ps)
#define NN__A5_MASK(P) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(u, w, P), one)
#define NN__A5_NZ(x) _mm512_cmp_ps_mask(x, zero, _CMP_NEQ_UQ)
/* u where u < w (u > w), else w: _mm512_min_ps's result, without the intrinsic (g++ 12
   warns on its undefined pass-through operand) */
#define NN__A5_SEL(P) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, w, P), w, u)
#define NN__A5_NANSEL(m) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, w, _CMP_UNORD_Q), m, _mm512_add_ps(u, w))
NN__EW_ROW(avx512, "avx512f", __m512, 16, _mm512_loadu_ps, _mm512_set1_ps, _mm512_storeu_ps,
           NN__A5(ADD, _mm512_add_ps(u, w)) NN__A5(SUB, _mm512_sub_ps(u, w)) NN__A5(MUL, _mm512_mul_ps(u, w))
           NN__A5(DIV, _mm512_div_ps(u, w)) NN__A5(MINIMUM, NN__A5_NANSEL(NN__A5_SEL(_CMP_LT_OQ)))
           NN__A5(MAXIMUM, NN__A5_NANSEL(NN__A5_SEL(_CMP_GT_OQ))) NN__A5(EQ, NN__A5_MASK(_CMP_EQ_OQ))
           NN__A5(NE, NN__A5_MASK(_CMP_NEQ_UQ)) NN__A5(LT, NN__A5_MASK(_CMP_LT_OQ))
           NN__A5(LE, NN__A5_MASK(_CMP_LE_OQ)) NN__A5(GT, NN__A5_MASK(_CMP_GT_OQ)) NN__A5(GE, NN__A5_MASK(_CMP_GE_OQ))
           NN__A5(LOGICAL_AND, _mm512_maskz_mov_ps(NN__A5_NZ(u) & NN__A5_NZ(w), one))
           NN__A5(LOGICAL_OR, _mm512_maskz_mov_ps(NN__A5_NZ(u) | NN__A5_NZ(w), one)))
#undef NN__A2
#undef NN__A5

#endif

static void nn__binary_row(int fn, float *y, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n) {
    int64_t i = 0;
#if defined(NN__VM_X86)
    if (nn__vm_isa() == 2) i = nn__binary_row_avx512(fn, y, a, sa, b, sb, n);
    else if (nn__vm_isa() == 1) i = nn__binary_row_avx2(fn, y, a, sa, b, sb, n);
#endif
    if (i < n) nn__binary_row_scalar(fn, y + i, a + i * sa, sa, b + i * sb, sb, n - i);
}

/* The elementwise kinds the drivers below run. */
enum { NN__EWK_BINARY, NN__EWK_BINARY_GRAD, NN__EWK_WHERE, NN__EWK_MASKED_FILL, NN__EWK_EXPAND };

typedef struct nn__ew_job {
    int kind, fn, wrt, invert;
    float value;
    float *y;
    const float *in[3];           /* the operands, in the order of bc's */
    const float *dy;              /* BINARY_GRAD: the output's gradient, contiguous */
    const nn__bcast *bc;
    int64_t chunk;                /* elements per task, a multiple of 64 */
} nn__ew_job;

/* Output elements [e0, e1) of a job, row piece by row piece. */
static void nn__ew_range(const nn__ew_job *j, int64_t e0, int64_t e1) {
    const nn__bcast *bc = j->bc;
    int last = bc->nd - 1, k;
    int64_t inner = bc->dim[last], s[3], off[3], e = e0, i;
    for (k = 0; k < 3; k++) s[k] = k < bc->n_op ? bc->st[k][last] : 0;
    while (e < e1) {
        int64_t c = e % inner, len = inner - c < e1 - e ? inner - c : e1 - e;
        const float *p[3];
        float *y = j->y + e;
        nn__bcast_offsets(bc, e - c, off);
        for (k = 0; k < bc->n_op; k++) p[k] = j->in[k] + off[k] + c * s[k];
        switch (j->kind) {
        case NN__EWK_BINARY: nn__binary_row(j->fn, y, p[0], s[0], p[1], s[1], len); break;
        case NN__EWK_BINARY_GRAD: {
            const float *dy = j->dy + e;
            switch (j->fn) {
#define NN__X(E, name, fwd, da, db)                                                               \
    case NN__B_##E:                                                                               \
        if (j->wrt == 0)                                                                          \
            for (i = 0; i < len; i++) { float u = p[0][i * s[0]], w = p[1][i * s[1]]; y[i] = dy[i] * (da); (void)u, (void)w; } \
        else                                                                                      \
            for (i = 0; i < len; i++) { float u = p[0][i * s[0]], w = p[1][i * s[1]]; y[i] = dy[i] * (db); (void)u, (void)w; } \
        break;
                NN__BINARY_FNS(NN__X)
#undef NN__X
            default: break;
            }
            break;
        }
        case NN__EWK_WHERE:
            for (i = 0; i < len; i++) y[i] = p[0][i * s[0]] != 0.0f ? p[1][i * s[1]] : p[2][i * s[2]];
            break;
        case NN__EWK_MASKED_FILL:
            for (i = 0; i < len; i++) y[i] = (p[0][i * s[0]] != 0.0f) != j->invert ? j->value : p[1][i * s[1]];
            break;
        default: /* EXPAND */
            if (s[0]) memcpy(y, p[0], (size_t)len * sizeof(float));
            else for (i = 0; i < len; i++) y[i] = p[0][0];
            break;
        }
        e += len;
    }
}

static void nn__ew_task(void *arg, int t, int n_tasks) {
    const nn__ew_job *j = (const nn__ew_job *)arg;
    int64_t e0 = j->chunk * t, e1 = e0 + j->chunk < j->bc->n ? e0 + j->chunk : j->bc->n;
    (void)n_tasks;
    if (e0 < e1) nn__ew_range(j, e0, e1);
}

/* Runs a job over the whole output, split over the pool's threads above NN__EW_PAR_MIN
   elements (each element is computed the same way whichever thread does it). */
static void nn__ew_run(nn__threadpool *pool, nn__ew_job *j) {
    int64_t n = j->bc->n;
#if defined(NN__VM_X86)
    (void)nn__vm_isa();
#endif
    int tasks = n >= NN__EW_PAR_MIN ? nn__threadpool_size(pool) : 1;
    if (tasks <= 1) {
        nn__ew_range(j, 0, n);
        return;
    }
    j->chunk = ((n + tasks - 1) / tasks + 63) / 64 * 64;
    nn__threadpool_run(pool, nn__ew_task, j, (int)((n + j->chunk - 1) / j->chunk));
}

/* y = f(a, b), fn one of NN__BINARY_FNS; bc over (a, b). */
static void nn__binary_forward(nn__threadpool *pool, int fn, float *y, const float *a, const float *b, const nn__bcast *bc) {
    nn__ew_job j;
    memset(&j, 0, sizeof j);
    j.kind = NN__EWK_BINARY;
    j.fn = fn;
    j.y = y;
    j.in[0] = a;
    j.in[1] = b;
    j.bc = bc;
    nn__ew_run(pool, &j);
}

/* dx [out] = dy * df/du (wrt 0) or df/dw (wrt 1), before the sum to the operand's shape */
static void nn__binary_backward(nn__threadpool *pool, int fn, int wrt, float *dx, const float *a, const float *b,
                                const float *dy, const nn__bcast *bc) {
    nn__ew_job j;
    memset(&j, 0, sizeof j);
    j.kind = NN__EWK_BINARY_GRAD;
    j.fn = fn;
    j.wrt = wrt;
    j.y = dx;
    j.in[0] = a;
    j.in[1] = b;
    j.dy = dy;
    j.bc = bc;
    nn__ew_run(pool, &j);
}

/* y = cond != 0 ? a : b; bc over (cond, a, b) */
static void nn__where_forward(nn__threadpool *pool, float *y, const float *c, const float *a, const float *b, const nn__bcast *bc) {
    nn__ew_job j;
    memset(&j, 0, sizeof j);
    j.kind = NN__EWK_WHERE;
    j.y = y;
    j.in[0] = c;
    j.in[1] = a;
    j.in[2] = b;
    j.bc = bc;
    nn__ew_run(pool, &j);
}

/* y = (mask != 0) != invert ? value : x; bc over (mask, x) */
static void nn__masked_fill_forward(nn__threadpool *pool, float *y, const float *mask, const float *x, float value,
                                    int invert, const nn__bcast *bc) {
    nn__ew_job j;
    memset(&j, 0, sizeof j);
    j.kind = NN__EWK_MASKED_FILL;
    j.y = y;
    j.in[0] = mask;
    j.in[1] = x;
    j.value = value;
    j.invert = invert;
    j.bc = bc;
    nn__ew_run(pool, &j);
}

/* y = x broadcast to y's shape; bc over (x) */
static void nn__expand_forward(nn__threadpool *pool, float *y, const float *x, const nn__bcast *bc) {
    nn__ew_job j;
    memset(&j, 0, sizeof j);
    j.kind = NN__EWK_EXPAND;
    j.y = y;
    j.in[0] = x;
    j.bc = bc;
    nn__ew_run(pool, &j);
}

/* ---- the sum of x [X] to a shape T that broadcasts to X (the gradient of a broadcast) ----
   bc is over X with T as its one operand: T's stride is 0 on the dims summed away. Each
   element of y is 0 plus its elements of x in increasing index order, in one float: the
   order kernels/elementwise.cl's sum_to adds in, and the same for any thread count. A task
   owns whole elements of y: rows of y's innermost dim (cut into column ranges when y has
   few rows) when that dim is kept, single elements when it is summed. */
typedef struct nn__sum_to_job {
    float *y;
    const float *x;
    const uint16_t *xh;           /* x in 16-bit storage of xdt (NN_BF16, NN_F16), else NULL */
    nn_dtype xdt;
    const nn__bcast *bc;
    int64_t xs[NN_MAX_DIMS];      /* x's contiguous strides */
    int64_t m;                    /* y's elements */
    int64_t reduced;              /* x elements per y element */
    int64_t units, cols;          /* tasks' units: (y row, column range) or y elements */
} nn__sum_to_job;

/* x's offset of y element (or y row when skip_inner) k: its kept dims' index. */
static int64_t nn__sum_to_base(const nn__sum_to_job *j, int64_t k, int skip_inner) {
    const nn__bcast *bc = j->bc;
    int64_t off = 0;
    int d;
    for (d = bc->nd - 1 - skip_inner; d >= 0; d--) {
        if (bc->st[0][d] == 0) continue;
        off += (k % bc->dim[d]) * j->xs[d];
        k /= bc->dim[d];
    }
    return off;
}

/* The next summed index after idx (an odometer over the summed dims, innermost first,
   skipping dim `skip`); returns the change of x's offset. */
static int64_t nn__sum_to_next(const nn__sum_to_job *j, int64_t *idx, int skip) {
    const nn__bcast *bc = j->bc;
    int64_t delta = 0;
    int d;
    for (d = bc->nd - 1; d >= 0; d--) {
        if (bc->st[0][d] != 0 || d == skip) continue;
        idx[d]++;
        delta += j->xs[d];
        if (idx[d] < bc->dim[d]) break;
        delta -= j->xs[d] * bc->dim[d];
        idx[d] = 0;
    }
    return delta;
}

static void nn__sum_to_unit(const nn__sum_to_job *j, int64_t u) {
    const nn__bcast *bc = j->bc;
    int last = bc->nd - 1;
    int64_t idx[NN_MAX_DIMS], r;
    memset(idx, 0, sizeof idx);
    if (bc->st[0][last] != 0) { /* kept innermost: add x's rows into y's row */
        int64_t inner = bc->dim[last], per = (inner + j->cols - 1) / j->cols, row = u / j->cols;
        int64_t c0 = (u % j->cols) * per, c1 = c0 + per < inner ? c0 + per : inner, off;
        float *y = j->y + row * inner + c0;
        if (c0 >= c1) return;
        off = nn__sum_to_base(j, row, 1) + c0;
        memset(y, 0, (size_t)(c1 - c0) * sizeof(float));
        for (r = 0; r < j->reduced; r++) {
            if (j->xh) { /* 16 bits: widened a block at a time, the same adds */
                float w[256];
                int64_t c, b;
                for (c = 0; c < c1 - c0; c += b) {
                    b = c1 - c0 - c < 256 ? c1 - c0 - c : 256;
                    nn__g16_widen_fn(j->xdt == NN_BF16 ? NN__G16_BF16 : NN__G16_F16)(j->xh + off + c, w, (int)b);
                    nn__binary_row(NN__B_ADD, y + c, y + c, 1, w, 1, b);
                }
            } else
                nn__binary_row(NN__B_ADD, y, y, 1, j->x + off, 1, c1 - c0);
            off += nn__sum_to_next(j, idx, -1);
        }
    } else { /* summed innermost: runs of `inner` consecutive elements */
        int64_t inner = bc->dim[last], off = nn__sum_to_base(j, u, 0), t;
        float acc = 0.0f;
        for (r = 0; r < j->reduced; r += inner) {
            if (j->xh)
                for (t = 0; t < inner; t++) acc += j->xdt == NN_BF16 ? NN__LD_BF16(j->xh, off + t) : NN__LD_F16(j->xh, off + t);
            else {
                const float *x = j->x + off;
                for (t = 0; t < inner; t++) acc += x[t];
            }
            off += nn__sum_to_next(j, idx, last);
        }
        j->y[u] = acc;
    }
}

static void nn__sum_to_task(void *arg, int t, int n_tasks) {
    const nn__sum_to_job *j = (const nn__sum_to_job *)arg;
    int64_t per = (j->units + n_tasks - 1) / n_tasks, u0 = per * t, u1 = u0 + per < j->units ? u0 + per : j->units;
    for (; u0 < u1; u0++) nn__sum_to_unit(j, u0);
}

/* x: float32, or 16-bit storage of dtype xdt (summed as the float32 values it widens to) */
static void nn__sum_to_forward(nn__threadpool *pool, float *y, const void *x, nn_dtype xdt, const nn__bcast *bc) {
    nn__sum_to_job j;
    int last = bc->nd - 1, d, tasks = bc->n >= NN__EW_PAR_MIN ? nn__threadpool_size(pool) : 1;
    memset(&j, 0, sizeof j);
    j.y = y;
    j.x = (const float *)x;
    j.xh = nn__dtype_half(xdt) ? (const uint16_t *)x : NULL;
    j.xdt = xdt;
    j.bc = bc;
    j.m = 1;
    for (d = last; d >= 0; d--) {
        j.xs[d] = d == last ? 1 : j.xs[d + 1] * bc->dim[d + 1];
        if (bc->st[0][d]) j.m *= bc->dim[d];
    }
    j.reduced = bc->n / j.m;
    if (bc->st[0][last] != 0) {
        int64_t rows = j.m / bc->dim[last];
        j.cols = rows >= tasks ? 1 : (tasks + rows - 1) / rows;
        if (j.cols > bc->dim[last] / 64) j.cols = bc->dim[last] / 64 > 1 ? bc->dim[last] / 64 : 1;
        j.units = rows * j.cols;
    } else {
        j.cols = 1;
        j.units = j.m;
    }
    if (tasks > j.units) tasks = (int)j.units;
#if defined(NN__VM_X86)
    (void)nn__vm_isa();
#endif
    nn__threadpool_run(pool, nn__sum_to_task, &j, tasks);
}

/* The unary loops over the pool's threads above NN__EW_PAR_MIN elements, in chunks of
   whole multiples of 64 (each element computed the same whichever thread does it). */
typedef struct nn__unary_job {
    int fn, backward;
    const float *p;
    float *y;
    const float *x, *dy;
    int64_t n, chunk;
} nn__unary_job;

static void nn__unary_task(void *arg, int t, int n_tasks) {
    const nn__unary_job *j = (const nn__unary_job *)arg;
    int64_t e0 = j->chunk * t, e1 = e0 + j->chunk < j->n ? e0 + j->chunk : j->n;
    (void)n_tasks;
    if (e0 >= e1) return;
    if (j->backward) nn__unary_backward(j->fn, j->p, j->y + e0, j->x + e0, j->dy + e0, e1 - e0);
    else nn__unary_forward(j->fn, j->p, j->y + e0, j->x + e0, e1 - e0);
}

/* The same over 16-bit storage (dtype NN_BF16 or NN_F16; kernels/storage.h): each thread's
   chunk in blocks of 256, widened into float32, through the float32 loops, rounded back, so
   every element gets the float32 path's value on its widened input, rounded. */
typedef struct nn__unary_half_job {
    int fn, backward;
    nn_dtype dtype;
    const float *p;
    uint16_t *y;
    const uint16_t *x, *dy;
    int64_t n, chunk;
} nn__unary_half_job;

static void nn__half_widen(nn_dtype d, const uint16_t *h, float *f, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++) f[i] = d == NN_BF16 ? NN__LD_BF16(h, i) : NN__LD_F16(h, i);
}

static void nn__unary_half_task(void *arg, int t, int n_tasks) {
    const nn__unary_half_job *j = (const nn__unary_half_job *)arg;
    int64_t e0 = j->chunk * t, e1 = e0 + j->chunk < j->n ? e0 + j->chunk : j->n, b, m;
    float xb[256], db[256], yb[256];
    (void)n_tasks;
    for (b = e0; b < e1; b += 256) {
        m = e1 - b < 256 ? e1 - b : 256;
        nn__half_widen(j->dtype, j->x + b, xb, m);
        if (j->backward) {
            nn__half_widen(j->dtype, j->dy + b, db, m);
            nn__unary_backward(j->fn, j->p, yb, xb, db, m);
        } else {
            nn__unary_forward(j->fn, j->p, yb, xb, m);
        }
        nn__g16_narrow_fn(j->dtype == NN_BF16 ? NN__G16_BF16 : NN__G16_F16)(yb, j->y + b, (int)m);
    }
}

static void nn__unary_run_half(nn__threadpool *pool, int fn, const float *p, nn_dtype dtype, void *y, const void *x,
                               const void *dy, int64_t n) {
    nn__unary_half_job j;
    int tasks = n >= NN__EW_PAR_MIN ? nn__threadpool_size(pool) : 1;
#if defined(NN__VM_X86)
    (void)nn__vm_isa();
#endif
    j.fn = fn;
    j.backward = dy != NULL;
    j.dtype = dtype;
    j.p = p;
    j.y = (uint16_t *)y;
    j.x = (const uint16_t *)x;
    j.dy = (const uint16_t *)dy;
    j.n = n;
    j.chunk = ((n + tasks - 1) / tasks + 63) / 64 * 64;
    if (j.chunk < 1) j.chunk = 1;
    nn__threadpool_run(pool, nn__unary_half_task, &j, (int)((n + j.chunk - 1) / j.chunk));
}

/* y = f(x) (dy NULL), or y = dy * f'(x) */
static void nn__unary_run(nn__threadpool *pool, int fn, const float *p, float *y, const float *x, const float *dy, int64_t n) {
    nn__unary_job j;
    int tasks = n >= NN__EW_PAR_MIN ? nn__threadpool_size(pool) : 1;
#if defined(NN__VM_X86)
    (void)nn__vm_isa();
#endif
    j.fn = fn;
    j.backward = dy != NULL;
    j.p = p;
    j.y = y;
    j.x = x;
    j.dy = dy;
    j.n = n;
    j.chunk = ((n + tasks - 1) / tasks + 63) / 64 * 64;
    if (j.chunk < 1) j.chunk = 1;
    nn__threadpool_run(pool, nn__unary_task, &j, (int)((n + j.chunk - 1) / j.chunk));
}

/* ---- binary functions on 16-bit storage (NN_BF16, NN_F16: a, b, dy and the output all of
   dtype dt): each element widened (kernels/storage.h), the float32 formula of
   kernels/activation.h, one rounding at the store; the float32 path's value on the widened
   inputs, rounded. grad: dx = dy * df/da (wrt 0) or df/db (wrt 1) at the output's shape. ---- */

typedef struct nn__binary16_job {
    int fn, wrt, grad;
    nn_dtype dt;
    uint16_t *y;
    const uint16_t *a, *b, *dy;
    const nn__bcast *bc;
} nn__binary16_job;

static float nn__binary16_ld(nn_dtype dt, const uint16_t *p, int64_t i) {
    return dt == NN_BF16 ? NN__LD_BF16(p, i) : NN__LD_F16(p, i);
}

/* The forward of add, sub and mul along the innermost dim where a and b each step 1 or 0
   there (a bias, a residual, a sum of gradients): runs of up to 256 widened into float32
   blocks by gemm16's vector widening, the formula over the blocks (vector code), each
   element rounded at the store; the same value as the element loop below, which the
   caller runs from *e on. Returns the first element it did not do. */
static int64_t nn__binary16_rows(const nn__binary16_job *j, int64_t e, int64_t e1, int64_t *off, int64_t *idx) {
    const nn__bcast *bc = j->bc;
    nn__g16_cvt_fn cvt = nn__g16_widen_fn(j->dt == NN_BF16 ? NN__G16_BF16 : NN__G16_F16);
    int last = bc->nd - 1, d, k, i;
    int64_t L = bc->dim[last], sa = bc->st[0][last], sb = bc->st[1][last];
    float ua[256], ub[256], v[256];
    if (j->grad || (j->fn != NN__B_ADD && j->fn != NN__B_SUB && j->fn != NN__B_MUL) || (sa != 0 && sa != 1) ||
        (sb != 0 && sb != 1) || L < 16)
        return e;
    while (e < e1) {
        int n = (int)(L - idx[last] < 256 ? L - idx[last] : 256);
        if (e1 - e < n) n = (int)(e1 - e);
        if (sa) cvt(j->a + off[0], ua, n);
        else for (i = 0; i < n; i++) ua[i] = nn__binary16_ld(j->dt, j->a, off[0]);
        if (sb) cvt(j->b + off[1], ub, n);
        else for (i = 0; i < n; i++) ub[i] = nn__binary16_ld(j->dt, j->b, off[1]);
        if (j->fn == NN__B_ADD) for (i = 0; i < n; i++) v[i] = ua[i] + ub[i];
        else if (j->fn == NN__B_SUB) for (i = 0; i < n; i++) v[i] = ua[i] - ub[i];
        else for (i = 0; i < n; i++) v[i] = ua[i] * ub[i];
        nn__g16_narrow_fn(j->dt == NN_BF16 ? NN__G16_BF16 : NN__G16_F16)(v, j->y + e, n);
        e += n;
        off[0] += n * sa, off[1] += n * sb;
        idx[last] += n;
        if (idx[last] < L) continue;
        for (k = 0; k < 2; k++) off[k] -= bc->st[k][last] * L; /* the row's end: carry into the outer dims */
        idx[last] = 0;
        for (d = last - 1; d >= 0; d--) {
            for (k = 0; k < 2; k++) off[k] += bc->st[k][d];
            if (++idx[d] < bc->dim[d]) break;
            for (k = 0; k < 2; k++) off[k] -= bc->st[k][d] * bc->dim[d];
            idx[d] = 0;
        }
    }
    return e;
}

static void nn__binary16_range(void *arg, int64_t e0, int64_t e1) {
    const nn__binary16_job *j = (const nn__binary16_job *)arg;
    const nn__bcast *bc = j->bc;
    int64_t e, off[3], idx[NN_MAX_DIMS], r = e0;
    int d, k;
    off[0] = off[1] = off[2] = 0; /* e0's index and offsets; then an odometer, no division an element */
    for (d = bc->nd - 1; d >= 0; d--) {
        idx[d] = r % bc->dim[d];
        r /= bc->dim[d];
        for (k = 0; k < bc->n_op; k++) off[k] += idx[d] * bc->st[k][d];
    }
    for (e = nn__binary16_rows(j, e0, e1, off, idx); e < e1; e++) {
        float u, w, v = 0.0f;
        u = nn__binary16_ld(j->dt, j->a, off[0]);
        w = nn__binary16_ld(j->dt, j->b, off[1]);
        switch (j->fn) {
#define NN__X(E, name, fwd, da, db)                                                              \
        case NN__B_##E:                                                                          \
            v = j->grad ? nn__binary16_ld(j->dt, j->dy, e) * (j->wrt ? (db) : (da)) : (fwd);     \
            break;
            NN__BINARY_FNS(NN__X)
#undef NN__X
        default: break;
        }
        if (j->dt == NN_BF16) NN__ST_BF16(j->y, e, v);
        else NN__ST_F16(j->y, e, v);
        for (d = bc->nd - 1; d >= 0; d--) { /* the next element's index, innermost first */
            for (k = 0; k < bc->n_op; k++) off[k] += bc->st[k][d];
            if (++idx[d] < bc->dim[d]) break;
            for (k = 0; k < bc->n_op; k++) off[k] -= bc->st[k][d] * bc->dim[d];
            idx[d] = 0;
        }
    }
}

static void nn__binary16_run(nn__threadpool *pool, int fn, int grad, int wrt, nn_dtype dt, void *y, const void *a,
                             const void *b, const void *dy, const nn__bcast *bc) {
    nn__binary16_job j;
    j.fn = fn;
    j.wrt = wrt;
    j.grad = grad;
    j.dt = dt;
    j.y = (uint16_t *)y;
    j.a = (const uint16_t *)a;
    j.b = (const uint16_t *)b;
    j.dy = (const uint16_t *)dy;
    j.bc = bc;
    nn__par_for(pool, bc->n, bc->n, nn__binary16_range, &j);
}
