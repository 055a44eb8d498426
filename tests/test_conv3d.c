/* nn_conv3d and nn_conv3d_layer through the op checker (tests/op_check.c): forward
   against a double reference, the input, weight and bias gradients against finite
   differences. Shapes are small and odd: the check costs inputs * reference. */
#include "test.h"
#include <string.h>

/* conv[0..2] stride d/h/w, conv[3..5] padding d/h/w, conv[6] groups, ip[0..2] dilation d/h/w */
static nn_tensor b_conv3d(nn_graph *g, const nn_tensor *in, const spec *s) {
    nn_conv3d_desc d;
    nn_tensor none = NN_NONE;
    memset(&d, 0, sizeof d);
    d.stride_d = s->conv[0];
    d.stride_h = s->conv[1];
    d.stride_w = s->conv[2];
    d.pad_d = s->conv[3];
    d.pad_h = s->conv[4];
    d.pad_w = s->conv[5];
    d.groups = s->conv[6];
    d.dilation_d = s->ip[0];
    d.dilation_h = s->ip[1];
    d.dilation_w = s->ip[2];
    return nn_conv3d(g, in[0], in[1], s->n_in > 2 ? in[2] : none, &d);
}

static void r_conv3d(const spec *s, double *const *in, double *out) {
    long N = s->shape[0].dim[0], C = s->shape[0].dim[1], D = s->shape[0].dim[2], H = s->shape[0].dim[3];
    long W = s->shape[0].dim[4], K = s->shape[1].dim[0], KD = s->shape[1].dim[2], KH = s->shape[1].dim[3];
    long KW = s->shape[1].dim[4], OD = s->out.dim[2], OH = s->out.dim[3], OW = s->out.dim[4];
    long G = s->conv[6], Cg = C / G, Kg = K / G, n, k, od, oh, ow, ci, kd, kh, kw;
    for (n = 0; n < N; n++)
        for (k = 0; k < K; k++)
            for (od = 0; od < OD; od++)
                for (oh = 0; oh < OH; oh++)
                    for (ow = 0; ow < OW; ow++) {
                        double acc = s->n_in > 2 ? in[2][k] : 0.0;
                        for (ci = 0; ci < Cg; ci++)
                            for (kd = 0; kd < KD; kd++)
                                for (kh = 0; kh < KH; kh++)
                                    for (kw = 0; kw < KW; kw++) {
                                        long id = od * s->conv[0] - s->conv[3] + kd * s->ip[0];
                                        long ih = oh * s->conv[1] - s->conv[4] + kh * s->ip[1];
                                        long iw = ow * s->conv[2] - s->conv[5] + kw * s->ip[2];
                                        if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                        acc += in[0][(((n * C + (k / Kg) * Cg + ci) * D + id) * H + ih) * W + iw] *
                                               in[1][(((k * Cg + ci) * KD + kd) * KH + kh) * KW + kw];
                                    }
                        out[(((n * K + k) * OD + od) * OH + oh) * OW + ow] = acc;
                    }
}

static void conv3d_cases(const t_env *e) {
    /* N, C, D, H, W, K, KD, KH, KW, stride d/h/w, pad d/h/w, dilation d/h/w, groups, bias */
    static const int cs[][20] = {
        {1, 1, 3, 4, 5, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, /* batch 1, 'same' padding */
        {2, 2, 5, 4, 3, 3, 2, 3, 1, 2, 1, 2, 0, 1, 0, 1, 1, 1, 1, 1}, /* stride 2, uneven padding */
        {1, 4, 4, 5, 3, 2, 2, 2, 2, 1, 2, 1, 1, 0, 1, 2, 1, 2, 2, 0}, /* dilation, groups 2, no bias */
        {2, 2, 1, 3, 2, 4, 1, 2, 2, 1, 2, 1, 0, 1, 1, 1, 1, 1, 2, 1}, /* D = 1, groups 2 */
        {1, 3, 2, 1, 4, 2, 3, 1, 3, 1, 1, 2, 1, 0, 1, 1, 1, 1, 1, 0}, /* kernel deeper than D, padded */
    };
    int k;
    for (k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
        const int *c = cs[k];
        char name[200];
        int j, O[3];
        spec s;
        for (j = 0; j < 3; j++) O[j] = (c[2 + j] + 2 * c[12 + j] - c[15 + j] * (c[6 + j] - 1) - 1) / c[9 + j] + 1;
        snprintf(name, sizeof name, "conv3d x[%d,%d,%d,%d,%d] w[%d,%d,%d,%d,%d] s%d,%d,%d p%d,%d,%d d%d,%d,%d g%d%s", c[0],
                 c[1], c[2], c[3], c[4], c[5], c[1] / c[18], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14],
                 c[15], c[16], c[17], c[18], c[19] ? " bias" : "");
        s = mk(name, b_conv3d, r_conv3d, nn_shape5(c[0], c[5], O[0], O[1], O[2]));
        memcpy(s.conv, c + 9, 6 * sizeof(int));
        s.conv[6] = c[18];
        memcpy(s.ip, c + 15, 3 * sizeof(int));
        in_f(&s, nn_shape5(c[0], c[1], c[2], c[3], c[4]));
        in_f(&s, nn_shape5(c[5], c[1] / c[18], c[6], c[7], c[8]));
        if (c[19]) in_f(&s, nn_shape1(c[5]));
        check_case(e, &s);
    }
}

/* The layer helper: its parameters' names and shapes, the output shape, a bad input */
static void conv3d_layer_case(const t_env *e) {
    nn_context *ctx = e->ctx;
    nn_graph_desc gd;
    nn_graph *g = NULL;
    nn_conv3d_desc d;
    nn_tensor x, y, bad;
    nn_shape ys;
    if (!t_begin(e, "conv3d_layer x[2,4,3,5,6] k2x3x3 s1,2,2 p0,1,1 g2")) return;
    memset(&gd, 0, sizeof gd);
    gd.seed = 3;
    if (!T_OK(nn_graph_create(ctx, &gd, &g), ctx)) goto done;
    memset(&d, 0, sizeof d);
    d.stride_h = d.stride_w = 2;
    d.pad_h = d.pad_w = 1;
    d.groups = 2;
    x = nn_input(g, "x", NN_F32, nn_shape5(2, 4, 3, 5, 6));
    y = nn_conv3d_layer(g, x, 6, 2, 3, 3, &d, "c3");
    if (!T_CHECK(y.id >= 0, "nn_conv3d_layer failed: %s", nn_context_last_error(ctx))) goto done;
    ys = t_shape(g, y);
    T_CHECK(ys.ndim == 5 && ys.dim[0] == 2 && ys.dim[1] == 6 && ys.dim[2] == 2 && ys.dim[3] == 3 && ys.dim[4] == 3,
            "output shape [%lld, %lld, %lld, %lld, %lld]", (long long)ys.dim[0], (long long)ys.dim[1],
            (long long)ys.dim[2], (long long)ys.dim[3], (long long)ys.dim[4]);
    bad = nn_conv3d_layer(g, nn_input(g, "x4", NN_F32, nn_shape4(2, 4, 5, 6)), 6, 1, 1, 1, NULL, "bad");
    T_CHECK(bad.id < 0 && nn_graph_status(g) == NN_ERR_SHAPE, "a 4-D input must fail with NN_ERR_SHAPE");
done:
    nn_graph_destroy(g);
    t_end();
}

void suite_conv3d(const t_env *e) {
    conv3d_cases(e);
    conv3d_layer_case(e);
}
