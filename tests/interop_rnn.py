#!/usr/bin/env python3
"""nn.h against PyTorch on recurrent networks (`make interop`; not part of `make test`).

char: examples/char_lstm.c's model (nn.Embedding(96, 32), nn.LSTM(32, 128, batch_first=True),
nn.Linear(128, 96)) initialised by PyTorch (seed 0) and saved as safetensors; nn.h loads it
(tests/interop_rnn char) and both train 20 Adam steps (lr 1e-3) on the same 20 batches of 32
random windows of 64 of /usr/share/common-licenses (random tokens when it is missing).
Prints INTEROP model=char_lstm steps=20 max_rel_loss_diff=<x> max_abs_weight_diff=<x> and
exits non-zero unless max_rel_loss_diff <= 1e-4.
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


def main():
    driver = sys.argv[1] if len(sys.argv) > 1 else "tests/interop_rnn"
    with tempfile.TemporaryDirectory() as tmp:
        ok = char_lstm(driver, tmp)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
