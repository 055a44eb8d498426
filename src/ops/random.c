/* The random ops, one block per op: builder, registry aliases, autograd rule, CPU body and
   kernel launch (kernels/random.cl; dropout's loop in src/cpu/random.c). Element i of a
   random node draws the Philox4x32-10 words of counter (i, key, step) under the graph's
   seed (nn__philox, kernels/random.cl's nn_philox) and turns them into a sample with the
   formulas of kernels/random.h, which the kernels share: the CPU and OpenCL backends give
   the same bits. The key is the node's id (a backward op reuses its forward's), the step
   is the graph's step counter, so each nn_graph_step draws afresh and the same graph built
   the same way with the same seed draws the same sequence. */
#include "../base/internal.h"
#include "../base/registry.h"
#include "../../kernels/random.h"

/* ==== shared by the family: the sources' builder, the Philox loop of the CPU bodies, the
   step's update of the launches ==== */

/* A node of op with no inputs and the given shape (rand, randn, randint). */
static nn_tensor nn__random_source(nn_graph *g, int op, const char *opname, nn_dtype dt, nn_shape shape) {
    int id;
    if (!nn__check(g, opname, 0, NULL) || !nn__check_shape(g, opname, shape)) return nn__tensor(-1);
    id = nn__new_node(g, op, dt, shape, NULL, 0);
    if (id >= 0) g->nodes[id].a.random.key = id;
    return nn__tensor(id);
}

static nn_tensor nn__random_like(nn_graph *g, int op, const char *opname, nn_tensor x) {
    if (!nn__check0(g, opname, 1, &x) || !nn__expect_f32(g, opname, x, "x")) return nn__tensor(-1);
    return nn__random_source(g, op, opname, NN_F32, nn__n(g, x)->shape);
}

/* One element's sample: y[i] (float, or int32 for randint) from its Philox words r and the
   input x (p for bernoulli, dy for a gradient; NULL for the sources); returns 1 for a bad
   input (bernoulli's p outside [0, 1]), else 0. */
typedef int (*nn__sampler)(const nn__random_attr *ra, const uint32_t r[4], const float *x, void *y, int64_t i);

typedef struct nn__random_task {
    const nn__node *n;
    nn__sampler sample;
    const float *x;
    void *y;
    int64_t numel, bad[64]; /* bad: the sampler's count, per task */
    uint64_t seed, step;
} nn__random_task;

static void nn__random_range(void *arg, int task, int n_tasks) {
    nn__random_task *rt = (nn__random_task *)arg;
    const nn__random_attr *ra = &rt->n->a.random;
    int64_t chunk = (rt->numel + n_tasks - 1) / n_tasks, i = chunk * task, end = i + chunk < rt->numel ? i + chunk : rt->numel;
    uint32_t key[2];
    int64_t bad = 0;
    key[0] = (uint32_t)rt->seed;
    key[1] = (uint32_t)(rt->seed >> 32);
    for (; i < end; i++) {
        uint32_t r[4];
        r[0] = (uint32_t)i;
        r[1] = (uint32_t)ra->key;
        r[2] = (uint32_t)rt->step;
        r[3] = (uint32_t)(rt->step >> 32);
        nn__philox(r, key);
        bad += rt->sample(ra, r, rt->x, rt->y, i);
    }
    rt->bad[task] = bad;
}

/* n's elements in contiguous chunks over the pool's threads (up to 64), each drawing its
   counter's words: the same bits for any thread count; bad inputs into n's counter. */
static nn_result nn__random_run(nn_graph *g, nn__node *n, nn__sampler sample) {
    nn__random_task rt;
    int tasks = n->numel >= NN__PAR_MIN / 8 ? nn__threadpool_size(g->ctx->threads) : 1, k;
    int64_t bad = 0;
    if (tasks > 64) tasks = 64;
    rt.n = n;
    rt.sample = sample;
    rt.x = n->n_in > 0 ? NN__F(n->in[0]) : NULL;
    rt.y = n->buf.host;
    rt.numel = n->numel;
    rt.seed = g->seed;
    rt.step = g->step;
    for (k = 0; k < tasks; k++) rt.bad[k] = 0;
    nn__threadpool_run(g->ctx->threads, nn__random_range, &rt, tasks);
    for (k = 0; k < tasks; k++) bad += rt.bad[k];
    if (n->check && bad > 0) {
        int32_t *c = (int32_t *)g->checks.host + n->check_slot;
        *c = (int32_t)((uint32_t)*c + (uint32_t)bad);
    }
    return NN_OK;
}

/* Before each run: the step's counter words, the last two arguments of every random kernel
   (NN__KARGS_RNG and dropout's), through rand's signature. */
static void nn__update_rng(nn_graph *g, nn__launch *l) {
    nn__k_rand k;
    memset(&k, 0, sizeof k);
    k.step_lo = (unsigned)g->step;
    k.step_hi = (unsigned)(g->step >> 32);
    nn__kstep_rand(l, &k);
}

/* A random kernel's launch, one work-item per element of the node, its step updated before
   each run. */
static nn_result nn__random_launch(nn_graph *g, int id, const char *kernel, nn__launch **l) {
    nn_result r = nn__launch_kernel(g, id, "random", kernel, (size_t)g->nodes[id].numel, l);
    if (r == NN_OK) (*l)->update = nn__update_rng;
    return r;
}

/* A random launch function's opening: n, and NN__KWITH's l, r and k, kernel `kernel` of
   signature SIG, with the fields every kernel with NN__KARGS_RNG takes: node n's element
   count, the graph's seed, the node's key (the step is nn__update_rng's). */
#define NN__RNG_KLAUNCH(sig, kernel)                           \
    nn__node *n = &g->nodes[id];                               \
    NN__KWITH(sig, nn__random_launch(g, id, kernel, &l));      \
    k.n = (int)n->numel;                                       \
    k.seed_lo = (unsigned)g->seed;                             \
    k.seed_hi = (unsigned)(g->seed >> 32);                     \
    k.key = (unsigned)n->a.random.key

/* rand's and randn's launch: y, n and the Philox fields (rand's signature, which randn takes) */
static nn_result nn__launch_rand_sig(nn_graph *g, int id, const char *kernel) {
    NN__RNG_KLAUNCH(rand, kernel);
    k.y = &n->buf;
    return nn__kargs_rand(l, &k);
}

/* ==== rand: y [shape] uniform in [0, 1) on a grid of 2^-24 (torch.rand; nn_rand_like takes
   x's shape) ==== */

NN_API nn_tensor nn_rand(nn_graph *g, nn_shape shape) {
    return nn__random_source(g, NN__OP_RAND, "nn_rand", NN_F32, shape);
}
NN_API nn_tensor nn_rand_like(nn_graph *g, nn_tensor x) { return nn__random_like(g, NN__OP_RAND, "nn_rand_like", x); }

#define nn__grad_rand nn__grad_none
#define nn__plan_rand nn__no_plan

static int nn__sample_rand(const nn__random_attr *ra, const uint32_t r[4], const float *x, void *y, int64_t i) {
    (void)ra, (void)x;
    ((float *)y)[i] = nn__rng_uniform(r[0]);
    return 0;
}
static nn_result nn__cpu_rand(nn_graph *g, nn__node *n) { return nn__random_run(g, n, nn__sample_rand); }

static nn_result nn__launch_rand(nn_graph *g, int id) { return nn__launch_rand_sig(g, id, "rand_uniform"); }

/* ==== randn: y [shape] standard normal, Box-Muller on kernels/random.h's exact formulas
   (torch.randn; nn_randn_like takes x's shape) ==== */

NN_API nn_tensor nn_randn(nn_graph *g, nn_shape shape) {
    return nn__random_source(g, NN__OP_RANDN, "nn_randn", NN_F32, shape);
}
NN_API nn_tensor nn_randn_like(nn_graph *g, nn_tensor x) { return nn__random_like(g, NN__OP_RANDN, "nn_randn_like", x); }

#define nn__grad_randn nn__grad_none
#define nn__plan_randn nn__no_plan

static int nn__sample_randn(const nn__random_attr *ra, const uint32_t r[4], const float *x, void *y, int64_t i) {
    (void)ra, (void)x;
    ((float *)y)[i] = nn__rng_normal(r[0], r[1]);
    return 0;
}
static nn_result nn__cpu_randn(nn_graph *g, nn__node *n) { return nn__random_run(g, n, nn__sample_randn); }

static nn_result nn__launch_randn(nn_graph *g, int id) { return nn__launch_rand_sig(g, id, "randn"); }

/* ==== randint: y [shape] int32 uniform in [low, high) (torch.randint) ==== */

NN_API nn_tensor nn_randint(nn_graph *g, int64_t low, int64_t high, nn_shape shape) {
    nn_tensor t;
    if (!nn__check(g, "nn_randint", 0, NULL)) return nn__tensor(-1);
    if (low < INT32_MIN || high > (int64_t)INT32_MAX + 1)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_randint: [low, high) = [%lld, %lld) is not within int32's range",
                           (long long)low, (long long)high);
    if (low >= high)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_randint: low = %lld is not less than high = %lld", (long long)low,
                           (long long)high);
    t = nn__random_source(g, NN__OP_RANDINT, "nn_randint", NN_I32, shape);
    if (t.id >= 0) {
        g->nodes[t.id].a.random.low = (int)low;
        g->nodes[t.id].a.random.range = (uint32_t)(high - low - 1);
    }
    return t;
}

#define nn__grad_randint nn__grad_none
#define nn__plan_randint nn__no_plan

static int nn__sample_randint(const nn__random_attr *ra, const uint32_t r[4], const float *x, void *y, int64_t i) {
    (void)x;
    ((int32_t *)y)[i] = nn__rng_int(r[0], r[1], ra->low, (uint64_t)ra->range + 1);
    return 0;
}
static nn_result nn__cpu_randint(nn_graph *g, nn__node *n) { return nn__random_run(g, n, nn__sample_randint); }

static nn_result nn__launch_randint(nn_graph *g, int id) {
    NN__RNG_KLAUNCH(randint, "randint");
    k.y = &n->buf;
    k.low = n->a.random.low;
    k.range_m1 = (unsigned)n->a.random.range;
    return nn__kargs_randint(l, &k);
}

/* ==== bernoulli: p [any] -> y [same], 1 with probability p (u < p on a grid of 2^-24),
   torch.bernoulli; a p outside [0, 1] (or NaN) counts as a bad input ==== */

NN_API nn_tensor nn_bernoulli(nn_graph *g, nn_tensor p) {
    nn_tensor t;
    if (!nn__check0(g, "nn_bernoulli", 1, &p) || !nn__expect_f32(g, "nn_bernoulli", p, "p")) return nn__tensor(-1);
    t = nn__op1(g, NN__OP_BERNOULLI, NN_F32, nn__n(g, p)->shape, p.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.random.key = t.id;
        g->nodes[t.id].check = "nn_bernoulli: probabilities outside [0, 1]";
    }
    return t;
}

#define nn__grad_bernoulli nn__grad_none
#define nn__plan_bernoulli nn__no_plan

static int nn__sample_bernoulli(const nn__random_attr *ra, const uint32_t r[4], const float *x, void *y, int64_t i) {
    (void)ra;
    ((float *)y)[i] = nn__rng_uniform(r[0]) < x[i] ? 1.0f : 0.0f;
    return !(x[i] >= 0.0f && x[i] <= 1.0f);
}
static nn_result nn__cpu_bernoulli(nn_graph *g, nn__node *n) { return nn__random_run(g, n, nn__sample_bernoulli); }

static nn_result nn__launch_bernoulli(nn_graph *g, int id) {
    NN__RNG_KLAUNCH(bernoulli, "bernoulli");
    k.p = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.bad = &g->checks;
    k.slot = n->check_slot;
    return nn__kargs_bernoulli(l, &k);
}

/* ==== gaussian noise: x [any] -> y [same] = x + std z, z standard normal (the identity in
   eval mode or at std 0); the gradient passes dy through ==== */

NN_API nn_tensor nn_gaussian_noise(nn_graph *g, nn_tensor x, float std) {
    nn_tensor t;
    if (!nn__check0(g, "nn_gaussian_noise", 1, &x) || !nn__expect_f32(g, "nn_gaussian_noise", x, "x")) return nn__tensor(-1);
    if (!(std >= 0.0f && std <= 3.4e38f))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_gaussian_noise: std = %g is not a finite value >= 0", std);
    if (std == 0.0f) return x;
    if (g->eval) return nn__eval_identity(g, x);
    t = nn__op1(g, NN__OP_GAUSSIAN_NOISE, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.random.key = t.id;
        g->nodes[t.id].a.random.std = std;
    }
    return t;
}

#define nn__plan_gaussian_noise nn__no_plan

static void nn__grad_gaussian_noise(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    if (ga) nn__acc_grad(g, a, gy);
}

static int nn__sample_gaussian_noise(const nn__random_attr *ra, const uint32_t r[4], const float *x, void *y, int64_t i) {
    ((float *)y)[i] = fmaf(ra->std, nn__rng_normal(r[0], r[1]), x[i]);
    return 0;
}
static nn_result nn__cpu_gaussian_noise(nn_graph *g, nn__node *n) { return nn__random_run(g, n, nn__sample_gaussian_noise); }

static nn_result nn__launch_gaussian_noise(nn_graph *g, int id) {
    NN__RNG_KLAUNCH(gaussian_noise, "gaussian_noise");
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.std = n->a.random.std;
    return nn__kargs_gaussian_noise(l, &k);
}

/* ==== alpha dropout: x [any] -> y [same], kept (u >= p) elements scale x + shift, dropped
   ones a constant (torch.nn.AlphaDropout in training); ALPHA_DROPOUT_GRAD, dx = dy * scale
   where kept, 0 where dropped: the forward's mask, drawn again with its key and step ==== */

/* torch.nn.AlphaDropout (ATen's _dropout_impl with alpha_dropout): keep with probability
   1 - p; a = 1 / sqrt((alpha^2 p + 1)(1 - p)), alpha = SELU's scale * alpha; kept
   elements become a x + alpha a p, dropped ones alpha a p - alpha a. p = 1 gives x * 0. */
NN_API nn_tensor nn_alpha_dropout(nn_graph *g, nn_tensor x, float p) {
    const double alpha = 1.7580993408473766;
    double a;
    nn_tensor t;
    if (!nn__check0(g, "nn_alpha_dropout", 1, &x) || !nn__expect_f32(g, "nn_alpha_dropout", x, "x")) return nn__tensor(-1);
    if (!(p >= 0.0f && p <= 1.0f))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_alpha_dropout: p = %g is outside [0, 1]", p);
    if (p == 0.0f) return x;
    if (g->eval) return nn__eval_identity(g, x);
    if (p == 1.0f) return nn_mul_scalar(g, x, 0.0f);
    t = nn__op1(g, NN__OP_ALPHA_DROPOUT, NN_F32, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) {
        nn__random_attr *r = &g->nodes[t.id].a.random;
        a = 1.0 / sqrt((alpha * alpha * p + 1.0) * (1.0 - p));
        r->key = t.id; /* the mask's key, shared with the backward op */
        r->p = p;
        r->scale = (float)a;
        r->shift = (float)(alpha * a * p);
        r->dropped = (float)(alpha * a * p - alpha * a);
    }
    return t;
}

#define nn__plan_alpha_dropout nn__no_plan
#define nn__grad_alpha_dropout_grad nn__grad_none
#define nn__plan_alpha_dropout_grad nn__no_plan

static void nn__grad_alpha_dropout(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    if (!ga) return;
    t = nn__op1(g, NN__OP_ALPHA_DROPOUT_GRAD, NN_F32, n.shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
}

static int nn__sample_alpha_dropout(const nn__random_attr *ra, const uint32_t r[4], const float *x, void *y, int64_t i) {
    ((float *)y)[i] = nn__rng_uniform(r[0]) >= ra->p ? fmaf(ra->scale, x[i], ra->shift) : ra->dropped;
    return 0;
}
static nn_result nn__cpu_alpha_dropout(nn_graph *g, nn__node *n) { return nn__random_run(g, n, nn__sample_alpha_dropout); }

static int nn__sample_alpha_dropout_grad(const nn__random_attr *ra, const uint32_t r[4], const float *x, void *y, int64_t i) {
    ((float *)y)[i] = nn__rng_uniform(r[0]) >= ra->p ? ra->scale * x[i] : 0.0f;
    return 0;
}
static nn_result nn__cpu_alpha_dropout_grad(nn_graph *g, nn__node *n) {
    return nn__random_run(g, n, nn__sample_alpha_dropout_grad);
}

static nn_result nn__launch_alpha_dropout(nn_graph *g, int id) {
    NN__RNG_KLAUNCH(alpha_dropout, "alpha_dropout_forward");
    const nn__random_attr *ra = &n->a.random;
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.p = ra->p;
    k.scale = ra->scale;
    k.shift = ra->shift;
    k.dropped = ra->dropped;
    return nn__kargs_alpha_dropout(l, &k);
}

static nn_result nn__launch_alpha_dropout_grad(nn_graph *g, int id) {
    NN__RNG_KLAUNCH(alpha_dropout_grad, "alpha_dropout_grad");
    const nn__random_attr *ra = &n->a.random;
    k.dy = &g->nodes[n->in[0]].buf;
    k.dx = &n->buf;
    k.p = ra->p;
    k.scale = ra->scale;
    return nn__kargs_alpha_dropout_grad(l, &k);
}

/* ==== dropout: y [any] = x * mask / (1 - p), mask[i] = uniform(key, step, i) >= p
   (torch.nn.functional.dropout in training; the identity in eval mode or at p = 0). The
   backward op is this op applied to dy with the same key, so it draws the same mask; the
   step changes the mask every run (nn__update_rng). CPU loop in src/cpu/random.c. A bf16 or
   f16 x gives y of its dtype (PyTorch's dropout keeps the input's; under autocast too):
   each element x * scale in float32, rounded once. ==== */
#define nn__plan_dropout nn__no_plan

NN_API nn_tensor nn_dropout(nn_graph *g, nn_tensor x, float p) {
    nn_tensor t;
    if (!nn__check0(g, "nn_dropout", 1, &x)) return nn__tensor(-1);
    if (nn__n(g, x)->dtype != NN_F32 && !nn__dtype_half(nn__n(g, x)->dtype))
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_dropout: x must be float32, bfloat16 or float16, not %s", nn__dtype_name(nn__n(g, x)->dtype));
    if (!(p >= 0.0f && p < 1.0f)) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "nn_dropout: p = %g is outside [0, 1)", p);
    if (p == 0.0f) return x;
    if (g->eval) return nn__eval_identity(g, x);
    t = nn__op1(g, NN__OP_DROPOUT, nn__n(g, x)->dtype, nn__n(g, x)->shape, x.id);
    if (t.id >= 0) {
        g->nodes[t.id].a.random.p = p;
        g->nodes[t.id].a.random.key = t.id; /* the mask's key, shared with the backward op */
    }
    return t;
}

static void nn__grad_dropout(nn_graph *g, int id) {
    NN__GRAD_RULE(g, id);
    nn_tensor t;
    t = nn__op1(g, NN__OP_DROPOUT, g->nodes[gy.id].dtype, n.shape, gy.id);
    if (t.id >= 0) g->nodes[t.id].a = n.a;
    nn__acc_grad(g, a, t);
}

static nn_result nn__cpu_dropout(nn_graph *g, nn__node *n) {
    const int *in = n->in;
    float *y = n->buf.host;
    int64_t N = n->numel;
    if (nn__dtype_half(n->dtype))
        nn__dropout16_forward((uint16_t *)(void *)y, (const uint16_t *)(const void *)g->nodes[in[0]].buf.host, N, n->a.random.p, g->seed,
                              n->a.random.key, g->step, n->dtype == NN_BF16);
    else
        nn__dropout_forward(y, NN__F(in[0]), N, n->a.random.p, g->seed, n->a.random.key, g->step);
    return NN_OK;
}

static nn_result nn__launch_dropout(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    NN__KWITH(dropout, nn__random_launch(g, id, "dropout", &l));
    l->store = n->dtype; /* 16-bit: the program built with NN_STORE_BF16 / _F16 */
    k.x = &g->nodes[n->in[0]].buf;
    k.y = &n->buf;
    k.n = (int)n->numel;
    k.p = n->a.random.p;
    k.seed_lo = (unsigned)g->seed;
    k.seed_hi = (unsigned)(g->seed >> 32);
    k.node = (unsigned)n->a.random.key;
    return nn__kargs_dropout(l, &k);
}

/* ==== sample_logits: y [B] int32, a token id per row of logits [B, V], drawn with
   temperature, top-k and top-p (the usual HF / nanoGPT sampling), or the argmax (greedy);
   kernels/random.h's lanes, so both backends draw the same token. Its scratch [B, V] holds
   each row's exp(s - max). The draw's counter is (row, key, the graph's run count), so each
   run, forward or step, draws afresh without recompiling. ==== */

NN_API nn_tensor nn_sample_logits(nn_graph *g, nn_tensor logits, const nn_sample_desc *desc) {
    nn_sample_desc d;
    nn__node *nz;
    char sz[128];
    nn_tensor t;
    if (!nn__check(g, "nn_sample_logits", 1, &logits) || !nn__expect_f32(g, "nn_sample_logits", logits, "logits"))
        return nn__tensor(-1);
    nz = nn__n(g, logits);
    nn__shape_str(&nz->shape, sz, sizeof sz);
    if (nz->shape.ndim != 2 || nz->shape.dim[1] < 1 || nz->shape.dim[1] > INT32_MAX / 2 || nz->numel > INT32_MAX)
        return nn__op_fail(g, NN_ERR_SHAPE, "nn_sample_logits: logits %s must be [B, V], V >= 1, under 2^31 elements", sz);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    d.top_p = nn__deff(d.top_p, 1.0f);
    if (d.temperature == (float)NN_ZERO) d.temperature = 0.0f;
    if (!(d.temperature >= 0.0f && d.temperature < INFINITY) || (d.temperature > 0.0f && !(1.0f / d.temperature < INFINITY)) || d.top_k < 0 ||
        !(d.top_p >= 0.0f && d.top_p <= 1.0f))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT,
                           "nn_sample_logits: temperature %g must be finite and >= 0 (1 / temperature too), top_k %d >= 0, "
                           "top_p %g in [0, 1]",
                           d.temperature, d.top_k, d.top_p);
    t = nn__tensor(nn__new_node(g, NN__OP_SAMPLE_LOGITS, NN_I32, nn_shape1(nz->shape.dim[0]), &logits.id, 1));
    if (t.id < 0) return t;
    g->nodes[t.id].a.random.key = t.id;
    g->nodes[t.id].a.random.inv_t = d.temperature > 0.0f ? 1.0f / d.temperature : 0.0f;
    g->nodes[t.id].a.random.top_k = d.top_k;
    g->nodes[t.id].a.random.top_p = d.top_p;
    return t;
}

#define nn__grad_sample_logits nn__grad_none

static void nn__plan_sample_logits(nn_graph *g, nn__node *n) { n->scratch = g->nodes[n->in[0]].numel; }

/* One row, kernels/random.h's lanes one after another (the kernel's order exactly). */
static int32_t nn__sample_row(const float *z, float *p, int V, const nn__random_attr *ra, float u) {
    float lf[NN__SAMP_LANES], m, before;
    uint32_t lu[NN__SAMP_LANES], mkey = 0, tk = 0, tau;
    int ch = (V + NN__SAMP_LANES - 1) / NN__SAMP_LANES, j, lane, t, greedy = ra->inv_t == 0.0f, bit;
#define NN__LANE_RANGE(j) (j) * ch < V ? (j) * ch : V, (j) * ch + ch < V ? (j) * ch + ch : V
    for (j = 0; j < NN__SAMP_LANES; j++) {
        uint32_t k = nn__samp_lane_max(z, NN__LANE_RANGE(j), ra->inv_t, greedy);
        mkey = k > mkey ? k : mkey;
    }
    if (greedy) {
        for (j = 0; j < NN__SAMP_LANES; j++)
            if ((t = nn__samp_lane_first(z, NN__LANE_RANGE(j), ra->inv_t, 1, mkey)) >= 0) return t;
        return 0;
    }
    m = nn__samp_unkey(mkey);
    for (j = 0; j < NN__SAMP_LANES; j++) nn__samp_lane_exp(z, p, NN__LANE_RANGE(j), ra->inv_t, m);
    if (ra->top_k > 0 && ra->top_k < V)
        for (bit = 31; bit >= 0; bit--) {
            uint32_t c = tk | (1u << bit);
            for (j = 0; j < NN__SAMP_LANES; j++) lu[j] = nn__samp_lane_count(z, NN__LANE_RANGE(j), ra->inv_t, c);
            if (nn__samp_count_lanes(lu) >= (uint32_t)ra->top_k) tk = c;
        }
    tau = tk;
    if (ra->top_p < 1.0f) {
        uint32_t res = 0;
        float target;
        for (j = 0; j < NN__SAMP_LANES; j++) lf[j] = nn__samp_lane_sum(z, p, NN__LANE_RANGE(j), ra->inv_t, tk);
        target = ra->top_p * nn__samp_sum_lanes(lf);
        for (bit = 31; bit >= 0; bit--) {
            uint32_t c = res | (1u << bit), cc = c > tk ? c : tk;
            for (j = 0; j < NN__SAMP_LANES; j++) lf[j] = nn__samp_lane_sum(z, p, NN__LANE_RANGE(j), ra->inv_t, cc);
            float sum = nn__samp_sum_lanes(lf);
            if (sum >= target && sum > 0.0f) res = c; /* at least one token */
        }
        tau = res > tk ? res : tk;
    }
    for (j = 0; j < NN__SAMP_LANES; j++) lf[j] = nn__samp_lane_sum(z, p, NN__LANE_RANGE(j), ra->inv_t, tau);
    u = u * nn__samp_sum_lanes(lf);
    lane = nn__samp_pick_lane(lf, u, &before);
    t = nn__samp_lane_pick(z, p, NN__LANE_RANGE(lane), ra->inv_t, tau, before, u);
#undef NN__LANE_RANGE
    return t < 0 ? 0 : t;
}

static nn_result nn__cpu_sample_logits(nn_graph *g, nn__node *n) {
    const nn__node *nz = &g->nodes[n->in[0]];
    int V = (int)nz->shape.dim[1];
    int64_t b;
    uint32_t key[2];
    key[0] = (uint32_t)g->seed;
    key[1] = (uint32_t)(g->seed >> 32);
    for (b = 0; b < n->numel; b++) {
        uint32_t r[4];
        r[0] = (uint32_t)b;
        r[1] = (uint32_t)n->a.random.key;
        r[2] = (uint32_t)g->runs;
        r[3] = (uint32_t)(g->runs >> 32);
        nn__philox(r, key);
        ((int32_t *)n->buf.host)[b] = nn__sample_row(nz->buf.host + b * V, n->scratch_buf.host + b * V, V, &n->a.random,
                                                     nn__rng_uniform(r[0]));
    }
    return NN_OK;
}

/* Before each run: the run's counter words. */
static void nn__update_sample_logits(nn_graph *g, nn__launch *l) {
    nn__k_sample_logits k;
    memset(&k, 0, sizeof k);
    k.run_lo = (unsigned)g->runs;
    k.run_hi = (unsigned)(g->runs >> 32);
    nn__kstep_sample_logits(l, &k);
}

/* one work-group per row, of up to NN__SAMP_LANES work-items */
static nn_result nn__launch_sample_logits(nn_graph *g, int id) {
    nn__node *n = &g->nodes[id];
    size_t wg = g->ctx->dev.max_wg < NN__SAMP_LANES ? g->ctx->dev.max_wg : NN__SAMP_LANES;
    NN__KWITH(sample_logits, nn__launch_groups(g, id, "random", "sample_logits", (size_t)n->numel, wg, &l));
    l->update = nn__update_sample_logits;
    k.z = &g->nodes[n->in[0]].buf;
    k.p = &n->scratch_buf;
    k.y = &n->buf;
    k.V = (int)g->nodes[n->in[0]].shape.dim[1];
    k.inv_t = n->a.random.inv_t;
    k.greedy = n->a.random.inv_t == 0.0f;
    k.top_k = n->a.random.top_k;
    k.top_p = n->a.random.top_p;
    k.seed_lo = (unsigned)g->seed;
    k.seed_hi = (unsigned)(g->seed >> 32);
    k.key = (unsigned)n->a.random.key;
    return nn__kargs_sample_logits(l, &k);
}
