"""char_lstm_torch.py - PyTorch's side of bench/rnn_bench's figures and of examples/char_lstm.c.

Usage: /usr/bin/python3 bench/char_lstm_torch.py [--threads T] [--model char|lstm512|gru512]
                                                 [--heldout-after N]
Prints: BENCH name=rnn_train backend=torch threads=T/B model=M batch=B seq=S tokens_per_sec=X
(bench/run.sh runs it at 1 and 2 threads and keeps the best.) With --heldout-after N: trains
N steps of the char model and prints BENCH name=char_lstm_heldout ... heldout_loss=X, the
example's held-out measure (every 64-character window of the last 10% in order, whole batches of 32).

The same work as rnn_bench, written as a PyTorch user writes it:
  char     nn.Embedding(96, 32), nn.LSTM(32, 128, batch_first=True), nn.Linear(128, 96), batch
           32, context 64, the text of /usr/share/common-licenses (regular files in name order)
           as one int64 tensor, batches as torch.stack of windows at random starts
  lstm512  embedding 96 -> 512, nn.LSTM(512, 512, num_layers=2, batch_first=True), a linear
           head to 96; batch 64, sequence 128, the same text
  gru512   the same with nn.GRU
F.cross_entropy, torch.optim.Adam lr 1e-3; per step only zero_grad(set_to_none=True), forward,
loss, backward, step; no per-step .item(). Warm-up steps (3), then >= 5 steps and >= 2 s.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
import pyenv  # noqa: E402

V = 96
MODELS = {  # embedding, hidden, layers, batch, sequence, cell
    "char": (32, 128, 1, 32, 64, nn.LSTM),
    "lstm512": (512, 512, 2, 64, 128, nn.LSTM),
    "gru512": (512, 512, 2, 64, 128, nn.GRU),
}


class Model(nn.Module):
    def __init__(self, e, h, layers, cell):
        super().__init__()
        self.embedding = nn.Embedding(V, e)
        self.rnn = cell(e, h, num_layers=layers, batch_first=True)
        self.head = nn.Linear(h, V)

    def forward(self, x, y):
        out, _ = self.rnn(self.embedding(x))
        return F.cross_entropy(self.head(out).reshape(-1, V), y.reshape(-1))


def corpus(path=None):
    d = "/usr/share/common-licenses"
    try:
        if path:
            raw = open(path, "rb").read()
        else:
            raw = b"".join(open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))
                           if os.path.isfile(os.path.join(d, f)))
    except OSError:
        raw = b""
    if len(raw) < 100000:
        return torch.randint(0, V, (300000,))
    return torch.tensor([0 if c == 10 else (c - 31 if 32 <= c < 127 else 1) for c in raw], dtype=torch.long)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model", default="char", choices=sorted(MODELS))
    ap.add_argument("--heldout-after", type=int, default=0)
    ap.add_argument("--text", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    e, h, layers, B, T, cell = MODELS[args.model]
    data = corpus(args.text)
    train = data[: len(data) * 9 // 10]
    model = Model(e, h, layers, cell)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def get_batch():
        ix = torch.randint(len(train) - T - 1, (B,))
        return torch.stack([train[i:i + T] for i in ix]), torch.stack([train[i + 1:i + T + 1] for i in ix])

    def step():
        x, y = get_batch()
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        opt.step()
        return loss

    if args.heldout_after:
        for _ in range(args.heldout_after):
            step()
        held = data[len(data) * 9 // 10:]
        nb = (len(held) - 1) // T // B  # every T-window of the held-out text in order, whole batches (examples/char_lstm.c)
        tot = 0.0
        with torch.no_grad():
            for e in range(nb):
                ix = [(e * B + b) * T for b in range(B)]
                x = torch.stack([held[i:i + T] for i in ix])
                y = torch.stack([held[i + 1:i + T + 1] for i in ix])
                tot += model(x, y).item()
        print(f"BENCH name=char_lstm_heldout backend=torch model={args.model} steps={args.heldout_after} "
              f"heldout_loss={tot / nb:.4f}", flush=True)
        return
    for _ in range(3):
        step()
    steps, t0 = 0, time.perf_counter()
    while steps < 5 or time.perf_counter() - t0 < 2.0:
        loss = step()
        steps += 1
    float(loss)
    dt = time.perf_counter() - t0
    print(f"BENCH name=rnn_train backend=torch threads={pyenv.thread_label('torch', torch.get_num_threads())} "
          f"model={args.model} batch={B} seq={T} tokens_per_sec={steps * B * T / dt:.1f}", flush=True)


if __name__ == "__main__":
    main()
