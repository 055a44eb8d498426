/* ConvLSTM2D (Shi et al. 2015, "Convolutional LSTM Network", without the peephole terms, as
   the common PyTorch ConvLSTM cells and Keras' ConvLSTM2D): nn_conv_lstm2d, composed of
   the public builders (conv2d, split, sigmoid, tanh, mul, add, stack), unrolled over T at
   build time. Why unrolled and not a sequence node as nn_lstm's: each step's gates are a
   convolution, and the conv family chooses its algorithm, scratch and kernels per node at
   plan time (src/ops/conv/conv2d.c, forward and both gradients on both backends); a node
   looping over time would have to repeat all of that inside itself. ConvLSTM sequences
   are short (tens of frames), so O(T) nodes cost little next to the convolutions. */
#include "../base/internal.h"

NN_API nn_tensor nn_conv_lstm2d(nn_graph *g, nn_tensor x, int64_t hidden_channels, const nn_conv_lstm_desc *desc,
                                const char *name) {
    static const char *op = "nn_conv_lstm2d";
    nn_conv_lstm_desc d;
    nn_conv2d_desc cd;
    nn_init init;
    char wn[256], bn[256];
    int64_t B, T, C, Hh, Ww, Ch = hidden_channels, sizes[4], t;
    int k, ng = 0, nb = 0, first = g ? g->n_nodes : 0;
    nn_tensor w, bias = NN_NONE, wx = NN_NONE, h, c, ys[64], groups[64], gate[4], parts[2], y;
    nn_shape st;
    if (desc) d = *desc;
    else memset(&d, 0, sizeof d);
    if (!nn__check(g, op, 1, &x) || !nn__expect_f32(g, op, x, "x")) return nn__tensor(-1);
    if (!name || !name[0] || strlen(name) > 200) return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s: needs a name (at most 200 chars)", op);
    if (nn__n(g, x)->shape.ndim != 5) {
        char s[128];
        nn__shape_str(&nn__n(g, x)->shape, s, sizeof s);
        return nn__op_fail(g, NN_ERR_SHAPE, "%s %s: x %s must be 5-D [B, T, C, H, W]", op, name, s);
    }
    k = nn__defi(d.kernel_size, 3);
    if (k < 1 || k > 31 || k % 2 == 0)
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: kernel_size %d must be odd, in [1, 31] ('same' padding)", op, name, k);
    if (Ch < 1 || Ch > (1 << 20))
        return nn__op_fail(g, NN_ERR_INVALID_ARGUMENT, "%s %s: hidden_channels %lld is not in [1, 2^20]", op, name, (long long)Ch);
    B = nn__n(g, x)->shape.dim[0];
    T = nn__n(g, x)->shape.dim[1];
    C = nn__n(g, x)->shape.dim[2];
    Hh = nn__n(g, x)->shape.dim[3];
    Ww = nn__n(g, x)->shape.dim[4];
    if (T > 64 * 64)
        return nn__op_fail(g, NN_ERR_SHAPE, "%s %s: %lld steps; the layer is unrolled and takes at most 4096", op, name, (long long)T);
    st = nn_shape4(B, Ch, Hh, Ww);
    {
        nn_tensor s[2];
        const char *what[2] = {"h0", "c0"};
        int i;
        s[0] = d.h0, s[1] = d.c0;
        for (i = 0; i < 2; i++) {
            int o = nn__optional(g, op, s[i]);
            nn__node *n;
            if (o < 0) return nn__tensor(-1);
            if (o == 0) continue;
            if (!nn__expect_f32(g, op, s[i], what[i])) return nn__tensor(-1);
            n = nn__n(g, s[i]);
            if (n->shape.ndim != 4 || n->shape.dim[0] != B || n->shape.dim[1] != Ch || n->shape.dim[2] != Hh || n->shape.dim[3] != Ww) {
                char s1[128], s2[128];
                nn__shape_str(&n->shape, s1, sizeof s1);
                nn__shape_str(&st, s2, sizeof s2);
                return nn__op_fail(g, NN_ERR_SHAPE, "%s %s: %s %s must be %s", op, name, what[i], s1, s2);
            }
        }
    }
    init.kind = NN_INIT_UNIFORM; /* nn.Conv2d's: U(+-1/sqrt(fan_in)), weight and bias */
    init.a = (float)(-1.0 / sqrt((double)((C + Ch) * k * k)));
    init.b = -init.a;
    snprintf(wn, sizeof wn, "%s.conv.weight", name);
    snprintf(bn, sizeof bn, "%s.conv.bias", name);
    w = nn_param(g, wn, nn_shape4(4 * Ch, C + Ch, k, k), init);
    if (!d.no_bias) bias = nn_param(g, bn, nn_shape1(4 * Ch), init);
    memset(&cd, 0, sizeof cd);
    cd.pad_h = cd.pad_w = k / 2;
    cd.no_bias = d.no_bias;
    sizes[0] = sizes[1] = sizes[2] = sizes[3] = Ch;
    h = d.h0, c = d.c0;
    for (t = 0; t < T && g->status == NN_OK; t++) {
        nn_tensor xt = nn_reshape(g, nn_slice(g, x, 1, t, 1), nn_shape4(B, C, Hh, Ww)), gates;
        if (h.id == 0) { /* zero h: only x's channels of the weight count */
            if (wx.id == 0) wx = nn_slice(g, w, 1, 0, C);
            gates = nn_conv2d(g, xt, wx, bias, &cd);
        } else {
            parts[0] = xt, parts[1] = h;
            gates = nn_conv2d(g, nn_concat(g, parts, 2, 1), w, bias, &cd);
        }
        nn_split(g, gates, sizes, 4, 1, gate); /* i, f, g, o */
        gate[0] = nn_sigmoid(g, gate[0]);
        gate[1] = nn_sigmoid(g, gate[1]);
        gate[2] = nn_tanh(g, gate[2]);
        gate[3] = nn_sigmoid(g, gate[3]);
        c = c.id == 0 ? nn_mul(g, gate[0], gate[2]) : nn_add(g, nn_mul(g, gate[1], c), nn_mul(g, gate[0], gate[2]));
        h = nn_mul(g, gate[3], nn_tanh(g, c));
        ys[nb++] = h;
        if (nb == 64 || t == T - 1) {
            groups[ng++] = nn_stack(g, ys, nb, 1);
            nb = 0;
        }
    }
    if (g->status != NN_OK) return nn__tensor(-1);
    y = ng == 1 ? groups[0] : nn_concat(g, groups, ng, 1);
    if (d.h_n) *d.h_n = h;
    if (d.c_n) *d.c_n = c;
    if (g->status == NN_OK) { /* for model files (nn_model_json): the options nn__mb_layer reads */
        char qn[1300];
        nn__note_layer(g, y, first, &x, 1, d.h0.id || d.c0.id ? "a conv_lstm2d given initial states" : NULL,
                       "{\"type\": \"conv_lstm2d\", \"name\": %s, \"in_channels\": %lld, \"hidden_channels\": %lld, "
                       "\"kernel_size\": %d, \"bias\": %s}", nn__note_str(name, qn, sizeof qn), (long long)C, (long long)Ch, k,
                       d.no_bias ? "false" : "true");
    }
    return g->status == NN_OK ? y : nn__tensor(-1);
}
