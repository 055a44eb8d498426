/* Optimizers against a scalar double-precision reference of PyTorch's update rules, over
   several steps, with two parameters so that global-norm clipping has something to do.
   The loss is L = 0.5 * sum(c1 * p1^2) + 0.5 * sum(c2 * p2^2), so dL/dp = c * p.
   Tolerance: 1e-5 relative to the parameters' scale after each of 6 steps. */
#include "test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N1 7
#define N2 33
#define STEPS 6

typedef struct ref_state { double p[N1 + N2], m[N1 + N2], v[N1 + N2], buf[N1 + N2]; } ref_state;

/* torch.optim.SGD / Adam / AdamW, one step, on all parameters */
static void ref_step(const nn_optimizer *o, ref_state *s, const double *c, int t) {
    double g[N1 + N2], norm = 0, clip = 1;
    double lr = o->lr, b1 = o->beta1 ? o->beta1 : 0.9, b2 = o->beta2 ? o->beta2 : 0.999, eps = o->eps ? o->eps : 1e-8;
    double wd = o->weight_decay;
    int i;
    if (o->kind == NN_OPT_ADAMW && wd == 0) wd = 1e-2;
    for (i = 0; i < N1 + N2; i++) {
        g[i] = c[i] * s->p[i];
        norm += g[i] * g[i];
    }
    if (o->clip_norm > 0) {
        clip = o->clip_norm / (sqrt(norm) + 1e-6);
        if (clip > 1) clip = 1;
    }
    for (i = 0; i < N1 + N2; i++) {
        double gi = g[i] * clip;
        if (o->kind == NN_OPT_SGD) {
            gi += wd * s->p[i];
            if (o->momentum != 0) {
                s->buf[i] = t == 1 ? gi : o->momentum * s->buf[i] + (1 - o->dampening) * gi;
                gi = o->nesterov ? gi + o->momentum * s->buf[i] : s->buf[i];
            }
            s->p[i] -= lr * gi;
        } else {
            double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
            if (o->kind == NN_OPT_ADAMW) s->p[i] *= 1 - lr * wd;
            else gi += wd * s->p[i];
            s->m[i] = b1 * s->m[i] + (1 - b1) * gi;
            s->v[i] = b2 * s->v[i] + (1 - b2) * gi * gi;
            s->p[i] -= lr / bc1 * s->m[i] / (sqrt(s->v[i]) / sqrt(bc2) + eps);
        }
    }
}

static void check_optimizer(const t_env *e, const char *name, nn_optimizer o) {
    nn_context *ctx = e->ctx;
    nn_graph *g = NULL;
    nn_tensor p1, p2, c1, c2, loss;
    nn_compile_desc cd;
    nn_init zero;
    float f[N1 + N2], cf[N1 + N2];
    double c[N1 + N2];
    ref_state s;
    int i, t;
    char label[128];
    snprintf(label, sizeof label, "optimizer %s", name);
    t_begin(e, label);
    memset(&s, 0, sizeof s);
    memset(&zero, 0, sizeof zero);
    t_seed(99);
    for (i = 0; i < N1 + N2; i++) {
        f[i] = (float)t_uniform(-1, 1);
        cf[i] = (float)t_uniform(0.1, 3);
        s.p[i] = f[i];
        c[i] = cf[i];
    }
    if (!T_OK(nn_graph_create(ctx, NULL, &g), ctx)) goto done;
    p1 = nn_param(g, "p1", nn_shape1(N1), zero);
    p2 = nn_param(g, "p2", nn_shape1(N2), zero);
    c1 = nn_input(g, "c1", NN_F32, nn_shape1(N1));
    c2 = nn_input(g, "c2", NN_F32, nn_shape1(N2));
    loss = nn_scale(g, nn_add(g, nn_sum(g, nn_mul(g, nn_mul(g, p1, p1), c1)), nn_sum(g, nn_mul(g, nn_mul(g, p2, p2), c2))), 0.5f);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.has_loss = 1;
    cd.optimizer = o;
    if (!T_OK(nn_graph_compile(g, &cd), ctx)) goto done;
    T_OK(nn_tensor_write(g, p1, f, N1 * 4), ctx);
    T_OK(nn_tensor_write(g, p2, f + N1, N2 * 4), ctx);
    T_OK(nn_tensor_write(g, c1, cf, N1 * 4), ctx);
    T_OK(nn_tensor_write(g, c2, cf + N1, N2 * 4), ctx);
    for (t = 1; t <= STEPS; t++) {
        double got[N1 + N2], err;
        if (!T_OK(nn_graph_step(g), ctx)) break;
        ref_step(&o, &s, c, t);
        T_OK(nn_tensor_read(g, p1, f, N1 * 4), ctx);
        T_OK(nn_tensor_read(g, p2, f + N1, N2 * 4), ctx);
        for (i = 0; i < N1 + N2; i++) got[i] = f[i];
        err = t_relerr(got, s.p, N1 + N2);
        if (!T_CHECK(err <= 1e-5, "step %d: parameters differ from the reference by %.3g", t, err)) break;
    }
done:
    nn_graph_destroy(g);
    t_end();
}

void suite_optim(const t_env *e) {
    nn_optimizer o;
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_SGD;
    o.lr = 0.1f;
    check_optimizer(e, "sgd", o);
    o.momentum = 0.9f;
    check_optimizer(e, "sgd momentum", o);
    o.dampening = 0.3f;
    o.weight_decay = 0.01f;
    check_optimizer(e, "sgd momentum dampening weight_decay", o);
    o.dampening = 0;
    o.nesterov = 1;
    check_optimizer(e, "sgd nesterov", o);
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_ADAM;
    o.lr = 0.05f;
    check_optimizer(e, "adam", o);
    o.weight_decay = 0.1f;
    o.beta1 = 0.8f;
    o.beta2 = 0.99f;
    o.eps = 1e-6f;
    check_optimizer(e, "adam weight_decay betas eps", o);
    o.clip_norm = 0.5f;
    check_optimizer(e, "adam clip_norm 0.5", o);
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_ADAMW;
    o.lr = 0.05f;
    check_optimizer(e, "adamw", o);
    o.weight_decay = 0.3f;
    o.clip_norm = 0.25f;
    check_optimizer(e, "adamw weight_decay clip_norm", o);
    memset(&o, 0, sizeof o);
    o.kind = NN_OPT_SGD;
    o.lr = 0.2f;
    o.momentum = 0.5f;
    o.clip_norm = 0.1f;
    check_optimizer(e, "sgd momentum clip_norm", o);
}
