"""mlp_torch.py - PyTorch's side of bench/nn_bench's mlp_train figure.

Usage: /usr/bin/python3 bench/mlp_torch.py [--threads T]
Prints: BENCH name=mlp_train backend=torch threads=T/B batch=128 samples_per_sec=X
(T: torch.set_num_threads, default 1; B: OpenBLAS's threads, from OPENBLAS_NUM_THREADS.
bench/run.sh runs it for several T/B and keeps the best.)

The same work as nn_bench mlp, written as a PyTorch user writes a training loop: the
784-256-128-10 ReLU MLP (nn.Linear's initialisation), Adam lr 1e-3, batch 128, 60000 random
examples in memory, pre-made as batch tensors (views, made once; no per-step indexing or
copies), and per step only zero_grad(set_to_none=True), forward, loss, backward, step. Like
nn_bench's graph (nn_accumulate of the loss and the accuracy), the loop keeps a running loss
and count of correct predictions as tensors, read once at the end (no per-step .item()).
20 warm-up steps, then >= 50 steps and >= 2 s.
"""
import argparse
import itertools
import sys
import time

import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # importing pyenv leaves no bench/__pycache__
import pyenv  # noqa: E402

BATCH, N, IMG = 128, 60000, 784


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (intra-op threads)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x_all = torch.rand(N, IMG) * 2 - 1
    y_all = torch.randint(0, 10, (N,))
    n_full = N // BATCH  # drop_last
    batches = list(zip(x_all.split(BATCH)[:n_full], y_all.split(BATCH)[:n_full]))
    model = nn.Sequential(nn.Linear(IMG, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    loss_sum = torch.zeros(())
    correct = torch.zeros((), dtype=torch.int64)
    data = itertools.cycle(batches)

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        logits = model(xb)
        loss = loss_fn(logits, yb)
        loss.backward()
        opt.step()
        with torch.no_grad():
            loss_sum.add_(loss)
            correct.add_((logits.argmax(1) == yb).sum())

    for _ in range(20):
        step(*next(data))
    steps, t0 = 0, time.perf_counter()
    while steps < 50 or time.perf_counter() - t0 < 2.0:
        step(*next(data))
        steps += 1
    dt = time.perf_counter() - t0
    float(loss_sum), int(correct)  # as nn_bench, read the sums once at the end
    print(f"BENCH name=mlp_train backend=torch threads={pyenv.thread_label('torch', torch.get_num_threads())} "
          f"batch={BATCH} samples_per_sec={steps * BATCH / dt:.0f}", flush=True)


if __name__ == "__main__":
    main()
