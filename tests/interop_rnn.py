#!/usr/bin/env python3
"""nn.h against PyTorch on recurrent networks (`make interop`; not part of `make test`).

char: examples/char_lstm.c's model (nn.Embedding(96, 32), nn.LSTM(32, 128, batch_first=True),
nn.Linear(128, 96)) initialised by PyTorch (seed 0) and saved as safetensors; nn.h loads it
(tests/interop_rnn char) and both train 20 Adam steps (lr 1e-3) on the same 20 batches of 32
random windows of 64 of /usr/share/common-licenses (random tokens when it is missing).
Prints INTEROP model=char_lstm steps=20 max_rel_loss_diff=<x> max_abs_weight_diff=<x> and
exits non-zero unless max_rel_loss_diff <= 1e-4.
layers: nn.LSTM, nn.GRU and nn.RNN (one layer, and two bidirectional layers) with PyTorch's
weights (safetensors) against nn_lstm / nn_gru / nn_rnn: outputs, final states, the input's
and every parameter's gradient of sum(y * Ry) + sum(h_n * Rh) (+ sum(c_n * Rc)), relative
to the reference's largest magnitude, each <= 1e-5 (one INTEROP model=KIND ... line each).
Usage: interop_rnn.py DRIVER; diagnostics go to stderr.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_safetensors import read_safetensors, write_safetensors  # noqa: E402

V, B, T, STEPS = 96, 32, 64, 20


class CharLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(V, 32)
        self.lstm = nn.LSTM(32, 128, batch_first=True)
        self.head = nn.Linear(128, V)

    def forward(self, x, y):
        out, _ = self.lstm(self.embedding(x))
        return F.cross_entropy(self.head(out).reshape(-1, V), y.reshape(-1))


def corpus():
    d = "/usr/share/common-licenses"
    try:
        raw = b"".join(open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))
                       if os.path.isfile(os.path.join(d, f)))
    except OSError:
        raw = b""
    if len(raw) < 100000:
        return torch.randint(0, V, (300000,))
    return torch.tensor([0 if c == 10 else (c - 31 if 32 <= c < 127 else 1) for c in raw], dtype=torch.long)


def char_lstm(driver, tmp):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = CharLSTM()
    write_safetensors(os.path.join(tmp, "init.safetensors"), {k: v.detach() for k, v in model.state_dict().items()})
    data = corpus()
    ix = torch.randint(len(data) - T - 1, (STEPS, B))
    xs = torch.stack([torch.stack([data[i:i + T] for i in row]) for row in ix])
    ys = torch.stack([torch.stack([data[i + 1:i + T + 1] for i in row]) for row in ix])
    with open(os.path.join(tmp, "batches"), "wb") as f:
        f.write(xs.numpy().astype("<i4").tobytes() + ys.numpy().astype("<i4").tobytes())
    subprocess.run([driver, "char", os.path.join(tmp, "init.safetensors"), os.path.join(tmp, "batches"), str(STEPS),
                    os.path.join(tmp, "losses"), os.path.join(tmp, "final.safetensors")], check=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ref = []
    for s in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = model(xs[s], ys[s])
        loss.backward()
        opt.step()
        ref.append(loss.item())
    got = np.fromfile(os.path.join(tmp, "losses"), dtype="<f4")
    rel = max(abs(float(g) - r) / abs(r) for g, r in zip(got, ref))
    final, _ = read_safetensors(os.path.join(tmp, "final.safetensors"))
    wdiff = max(float(np.abs(final[k] - v.detach().numpy()).max()) for k, v in model.state_dict().items())
    print("torch losses:", " ".join(f"{r:.6f}" for r in ref), file=sys.stderr)
    print("nn.h  losses:", " ".join(f"{g:.6f}" for g in got), file=sys.stderr)
    print(f"INTEROP model=char_lstm steps={STEPS} max_rel_loss_diff={rel:.3g} max_abs_weight_diff={wdiff:.3g}")
    return rel <= 1e-4


LAYERS = [  # kind, layers, bidirectional, input, hidden, T, batch
    ("lstm", 1, 0, 5, 7, 6, 3),
    ("gru", 1, 0, 5, 7, 6, 3),
    ("rnn", 1, 0, 5, 7, 6, 3),
    ("lstm", 2, 1, 5, 7, 6, 3),
    ("gru", 2, 1, 5, 7, 6, 3),
    ("rnn", 2, 1, 5, 7, 6, 3),
]


def rel_err(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def layer(driver, tmp, kind, L, bidir, I, H, T, B):
    torch.manual_seed(1)
    mod = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind](I, H, num_layers=L, bidirectional=bool(bidir))
    D = 2 if bidir else 1
    x = torch.randn(T, B, I, requires_grad=True)
    ry, rh, rc = torch.randn(T, B, D * H), torch.randn(L * D, B, H), torch.randn(L * D, B, H)
    write_safetensors(os.path.join(tmp, "layer.safetensors"), {"rnn." + k: v.detach() for k, v in mod.state_dict().items()})
    ins = [x.detach(), ry, rh] + ([rc] if kind == "lstm" else [])
    with open(os.path.join(tmp, "inputs"), "wb") as f:
        f.write(b"".join(t.numpy().astype("<f4").tobytes() for t in ins))
    subprocess.run([driver, "layer", kind, str(L), str(bidir), str(I), str(H), str(T), str(B),
                    os.path.join(tmp, "layer.safetensors"), os.path.join(tmp, "inputs"), os.path.join(tmp, "outputs")],
                   check=True)
    y, st = mod(x)
    if kind == "lstm":
        hn, cn = st
        loss = (y * ry).sum() + (hn * rh).sum() + (cn * rc).sum()
        outs = [y, hn, cn]
    else:
        hn = st
        loss = (y * ry).sum() + (hn * rh).sum()
        outs = [y, hn]
    loss.backward()
    ref = [t.detach().numpy() for t in outs] + [x.grad.numpy()] + [p.grad.numpy() for _, p in mod.named_parameters()]
    got = np.fromfile(os.path.join(tmp, "outputs"), dtype="<f4")
    off, out_err, grad_err = 0, 0.0, 0.0
    for i, r in enumerate(ref):
        g = got[off:off + r.size].reshape(r.shape)
        off += r.size
        e = rel_err(g, r)
        if i < len(outs):
            out_err = max(out_err, e)
        else:
            grad_err = max(grad_err, e)
    ok = off == got.size and out_err <= 1e-5 and grad_err <= 1e-5
    print(f"INTEROP model={kind} layers={L} bidirectional={bidir} input={I} hidden={H} T={T} batch={B} "
          f"max_rel_output_diff={out_err:.3g} max_rel_grad_diff={grad_err:.3g}{'' if ok else ' FAIL'}")
    return ok


def main():
    driver = sys.argv[1] if len(sys.argv) > 1 else "tests/interop_rnn"
    with tempfile.TemporaryDirectory() as tmp:
        ok = True
        for cfg in LAYERS:
            ok = layer(driver, tmp, *cfg) and ok
        ok = char_lstm(driver, tmp) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
