#!/usr/bin/env python3
"""nn.h's GPT against PyTorch's nanoGPT on the same training run (`make interop`).

  1. nn.h initialises the tiny GPT of examples/tiny_gpt.c (vocabulary 96, context 64, 4
     layers, width 128, 4 heads) and saves it (tests/interop_gpt init); a PyTorch GPT written
     as nanoGPT's model.py (GELU exact, LayerNorm with bias, lm_head tied to wte) loads that
     file by nanoGPT's names (lm_head.weight is wte's tensor: the file holds it once).
  2. The logits of the first batch must agree, then both train 20 AdamW steps (lr 3e-4,
     PyTorch's defaults: weight_decay 0.01 on every parameter) on the same batches of 4
     windows of 64 characters (the text of /usr/share/common-licenses, or random tokens
     where that is missing).
  3. nn.h loads PyTorch's final weights and must give PyTorch's loss on the first batch.

Then nn.TransformerEncoderLayer (d_model 32, 4 heads, dim_feedforward 64, dropout 0,
batch_first; post-norm with ReLU, and norm_first with GELU) against
nn_transformer_encoder_layer from nn.h's initial weights, and nn.MultiheadAttention(32, 4,
kdim=24, vdim=16) with a float attn_mask, then a float key_padding_mask (added), against
nn_multihead_attention: the outputs on x [3, 7, 32], and the losses of 20 AdamW steps (lr
1e-3) on the MSE against a random target.

Prints INTEROP model=gpt steps=20 max_rel_logit_diff=<x> max_rel_loss_diff=<x>
max_abs_weight_diff=<x> and INTEROP model=encoder_layer variant=V steps=20
max_rel_out_diff=<x> max_rel_loss_diff=<x>, and exits non-zero unless the outputs and the
per-step losses agree within 1e-4 relative (outputs: max |diff| / max |value|), and the
cross-load as well.
Usage: interop_gpt.py DRIVER; diagnostics go to stderr.
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_safetensors import read_safetensors  # noqa: E402
from interop_torch import write_safetensors  # noqa: E402

STEPS, B, T, V, L, H, C, LR = 20, 4, 64, 96, 4, 4, 128, 3e-4


def gpt_module(torch):
    nn, F = torch.nn, torch.nn.functional

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)

        def forward(self, x):
            b, t, c = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (z.view(b, t, H, c // H).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
            y = F.softmax(att, dim=-1) @ v  # nanoGPT's path without flash attention
            return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(C, 4 * C)
            self.c_proj = nn.Linear(4 * C, C)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2, self.mlp = nn.LayerNorm(C), Attn(), nn.LayerNorm(C), MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(V, C), wpe=nn.Embedding(T, C),
                                                  h=nn.ModuleList([Block() for _ in range(L)]), ln_f=nn.LayerNorm(C)))
            self.lm_head = nn.Linear(C, V, bias=False)
            self.transformer.wte.weight = self.lm_head.weight

        def forward(self, idx):
            t = idx.size(1)
            x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t))
            for blk in self.transformer.h:
                x = blk(x)
            return self.lm_head(self.transformer.ln_f(x))

    return GPT()


def batches():
    d = "/usr/share/common-licenses"
    try:
        raw = b"".join(open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))
                       if os.path.isfile(os.path.join(d, f)))
        toks = np.array([0 if c == 10 else (c - 31 if 32 <= c < 127 else 1) for c in raw], dtype=np.int32)
    except OSError:
        toks = np.random.RandomState(0).randint(0, V, 100000).astype(np.int32)
    rs = np.random.RandomState(1)
    starts = rs.randint(0, len(toks) - T - 1, STEPS * B)
    x = np.stack([toks[s:s + T] for s in starts]).reshape(STEPS, B, T)
    y = np.stack([toks[s + 1:s + T + 1] for s in starts]).reshape(STEPS, B, T)
    return x, y


def main():
    driver = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "tests/interop_gpt")
    import torch
    torch.set_num_threads(2)
    x, y = batches()
    with tempfile.TemporaryDirectory() as tmp:
        p = lambda name: os.path.join(tmp, name)  # noqa: E731
        with open(p("batches.bin"), "wb") as f:
            f.write(x.astype("<i4").tobytes() + y.astype("<i4").tobytes())
        run = lambda *a: subprocess.run([driver] + list(a), check=True, stdout=subprocess.PIPE).stdout  # noqa: E731
        run("init", p("w0.safetensors"))
        run("train", p("w0.safetensors"), p("batches.bin"), str(STEPS), p("nn_losses.bin"), p("nn_final.safetensors"),
            p("nn_logits.bin"))
        nn_losses = np.fromfile(p("nn_losses.bin"), dtype="<f4").astype(np.float64)
        nn_logits = np.fromfile(p("nn_logits.bin"), dtype="<f4").astype(np.float64)
        nn_final, _ = read_safetensors(p("nn_final.safetensors"))

        w0, _ = read_safetensors(p("w0.safetensors"))
        model = gpt_module(torch)
        missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in w0.items()}, strict=False)
        if list(missing) != ["lm_head.weight"] or unexpected:
            print("interop_gpt: names differ: missing %s, unexpected %s" % (missing, unexpected), file=sys.stderr)
            return 1
        opt = torch.optim.AdamW(model.parameters(), lr=LR)
        xt, yt = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))
        with torch.no_grad():
            t_logits = model(xt[0]).reshape(-1).double().numpy()
        t_losses = []
        for s in range(STEPS):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xt[s]).view(-1, V), yt[s].reshape(-1))
            loss.backward()
            opt.step()
            t_losses.append(loss.item())
        t_losses = np.array(t_losses, dtype=np.float64)
        t_final = {k: v.detach().numpy().copy() for k, v in model.state_dict().items() if k != "lm_head.weight"}
        write_safetensors(p("torch_final.safetensors"), t_final)
        with torch.no_grad():
            t_eval = torch.nn.functional.cross_entropy(model(xt[0]).view(-1, V), yt[0].reshape(-1)).item()
        nn_eval = float(run("eval", p("torch_final.safetensors"), p("batches.bin"), str(STEPS)).decode().strip())

    lrel = float(np.max(np.abs(nn_logits - t_logits)) / np.max(np.abs(t_logits)))
    rel = float(np.max(np.abs(nn_losses - t_losses) / np.abs(t_losses)))
    wdiff = max(float(np.max(np.abs(nn_final[k].astype(np.float64) - t_final[k]))) for k in t_final)
    eval_rel = abs(nn_eval - t_eval) / abs(t_eval)
    print("nn.h losses:    " + " ".join("%.6f" % v for v in nn_losses), file=sys.stderr)
    print("torch losses:   " + " ".join("%.6f" % v for v in t_losses), file=sys.stderr)
    print("torch weights in nn.h: loss %.7f, torch %.7f (rel %.2e)" % (nn_eval, t_eval, eval_rel), file=sys.stderr)
    print("INTEROP model=gpt steps=%d max_rel_logit_diff=%.3e max_rel_loss_diff=%.3e max_abs_weight_diff=%.3e"
          % (STEPS, lrel, rel, wdiff))
    ok = lrel <= 1e-4 and rel <= 1e-4 and eval_rel <= 1e-4 and set(nn_final) == set(t_final) and math.isfinite(rel)
    for variant in (0, 1, 2, 3):
        ok = encoder(torch, driver, variant) and ok
    return 0 if ok else 1


def encoder(torch, driver, variant):
    eb, et, ee = 3, 7, 32
    rs = np.random.RandomState(5 + variant)
    xt = rs.uniform(-1, 1, (2, eb, et, ee)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        p = lambda name: os.path.join(tmp, name)  # noqa: E731
        xt.astype("<f4").tofile(p("x.bin"))
        subprocess.run([driver, "encoder", str(variant), p("w0.safetensors"), p("x.bin"), str(STEPS), p("out.bin"),
                        p("losses.bin"), p("final.safetensors")], check=True, stdout=subprocess.PIPE)
        w0, _ = read_safetensors(p("w0.safetensors"))
        nn_out = np.fromfile(p("out.bin"), dtype="<f4").astype(np.float64)
        nn_losses = np.fromfile(p("losses.bin"), dtype="<f4").astype(np.float64)
    if variant >= 2:  # nn.MultiheadAttention with kdim, vdim and a float mask (nn.h's variants 2, 3)
        mha = torch.nn.MultiheadAttention(ee, 4, kdim=24, vdim=16, batch_first=True)
        am = torch.tensor([[0.1 * (i - j) for j in range(et)] for i in range(et)], dtype=torch.float32)
        kp = torch.tensor([[-0.3 * j * (b + 1) for j in range(et)] for b in range(eb)], dtype=torch.float32)

        class Wrap(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = mha

            def forward(self, x):
                return self.m(x, x[..., :24], x[..., 8:24], key_padding_mask=kp if variant == 3 else None,
                              attn_mask=am if variant == 2 else None, need_weights=False)[0]
        layer = Wrap()
        layer.m.load_state_dict({k[len("enc."):]: torch.from_numpy(v) for k, v in w0.items()}, strict=True)
    else:
        layer = torch.nn.TransformerEncoderLayer(ee, 4, dim_feedforward=64, dropout=0.0, batch_first=True,
                                                 norm_first=bool(variant), activation="gelu" if variant else "relu")
        sd = {k[len("enc."):]: torch.from_numpy(v) for k, v in w0.items()}
        layer.load_state_dict(sd, strict=True)
    x, target = torch.from_numpy(xt[0]), torch.from_numpy(xt[1])
    with torch.no_grad():
        t_out = layer(x).reshape(-1).double().numpy()
    opt = torch.optim.AdamW(layer.parameters(), lr=1e-3)
    t_losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(layer(x), target)
        loss.backward()
        opt.step()
        t_losses.append(loss.item())
    orel = float(np.max(np.abs(nn_out - t_out)) / np.max(np.abs(t_out)))
    rel = float(np.max(np.abs(nn_losses - np.array(t_losses)) / np.abs(np.array(t_losses))))
    print("INTEROP model=%s variant=%s steps=%d max_rel_out_diff=%.3e max_rel_loss_diff=%.3e"
          % ("multihead_attention" if variant >= 2 else "encoder_layer",
             ("post_norm_relu", "norm_first_gelu", "kdim24_vdim16_float_attn_mask", "kdim24_vdim16_float_key_padding_mask")[variant],
             STEPS, orel, rel))
    return orel <= 1e-4 and rel <= 1e-4


if __name__ == "__main__":
    sys.exit(main())
