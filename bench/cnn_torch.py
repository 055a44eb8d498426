"""cnn_torch.py - PyTorch's side of bench/nn_bench's conv2d and cnn_train figures.

Usage: /usr/bin/python3 bench/cnn_torch.py [conv|train|all] [--threads T]
Prints:
    BENCH name=conv2d backend=torch threads=T/B shape=NxCxHxWkK pass=fwd|bwd gflops=X ms=X
    BENCH name=cnn_train backend=torch threads=T/B batch=64 samples_per_sec=X
(T: torch.set_num_threads, default 1; B: OpenBLAS's threads, from OPENBLAS_NUM_THREADS.
bench/run.sh runs conv and train for several T/B, with OMP_WAIT_POLICY=PASSIVE, and keeps
the best.)

The same work as nn_bench conv and nn_bench cnn:
  conv2d: a 3x3 pad-1 conv without bias for the CNN example's two convs at batch 64 and a
    ResNet-style 64->64 at 56x56, batch 8. fwd: the better of the forward under no_grad and
    the forward under autograd; bwd: .backward() of the sum (dw, and dx when C > 1) timed
    alone, its forward outside the timer, counted as the flops of dw and dx. (bwd used to
    be a step minus the no_grad forward; for C = 1 PyTorch's no_grad forward is slower than
    the forward inside the step, which made bwd come out near 0.)
  cnn_train: examples/fashion_mnist_cnn.c's network (conv-bn-relu-pool x2, 3136-128-10 with
    dropout 0.25), Adam lr 1e-3, batch 64, 60000 random images in memory pre-made as batch
    tensors (views, made once: no per-step indexing or copies), a standard loop (zero_grad
    with set_to_none=True, forward, loss, backward, step) that, like nn_bench's graph, keeps a
    running loss and count of correct predictions as tensors read once at the end (no
    per-step .item()); 5 warm-up steps then >= 20 steps and >= 2 s.
"""
import argparse
import itertools
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True  # importing pyenv leaves no bench/__pycache__
import pyenv  # noqa: E402

SHAPES = [(64, 1, 28, 28, 32), (64, 32, 14, 14, 64), (8, 64, 56, 56, 64)]
BATCH, N = 64, 60000


def time_runs(fn, min_s=0.4):
    for _ in range(2):
        fn()
    reps, t0 = 0, time.perf_counter()
    while reps < 3 or time.perf_counter() - t0 < min_s:
        fn()
        reps += 1
    return (time.perf_counter() - t0) * 1e3 / reps


def bench_conv():
    threads = pyenv.thread_label("torch", torch.get_num_threads())
    for n, c, h, w, k in SHAPES:
        x = torch.rand(n, c, h, w) * 2 - 1
        x.requires_grad_(c > 1)  # the first layer needs no dx
        wt = torch.empty(k, c, 3, 3)
        nn.init.kaiming_uniform_(wt)
        wt.requires_grad_(True)
        flops = 2.0 * n * k * h * w * c * 9

        def fwd():
            with torch.no_grad():
                F.conv2d(x, wt, padding=1)

        def fwd_grad():  # the forward as a training step runs it (autograd recording)
            F.conv2d(x, wt, padding=1)

        def bwd_alone(min_s=0.4):  # ms of .backward() alone, its forward untimed
            reps, dt = 0, 0.0
            while reps < 5 or dt < min_s:
                wt.grad = None
                x.grad = None
                s = F.conv2d(x, wt, padding=1).sum()
                t0 = time.perf_counter()
                s.backward()
                dt += time.perf_counter() - t0
                reps += 1
            return dt * 1e3 / reps

        # fwd: the better of the no_grad forward and the forward under autograd (for C = 1
        # PyTorch's no_grad forward takes a slower path than the one inside a training step)
        fwd_ms = min(time_runs(fwd), time_runs(fwd_grad))
        bwd_alone()  # warm-up
        bwd_ms = bwd_alone()
        fwd_ms = min(fwd_ms, time_runs(fwd), time_runs(fwd_grad))  # again: the lower
        shape = f"{n}x{c}x{h}x{w}k{k}"
        head = f"BENCH name=conv2d backend=torch threads={threads} shape={shape}"
        print(f"{head} pass=fwd gflops={flops / fwd_ms / 1e6:.2f} ms={fwd_ms:.3f}")
        print(f"{head} pass=bwd gflops={flops * (2 if c > 1 else 1) / bwd_ms / 1e6:.2f} ms={bwd_ms:.3f}", flush=True)


def block(cin, cout):
    return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]


def bench_cnn():
    torch.manual_seed(0)
    x_all = torch.rand(N, 1, 28, 28) * 2 - 1
    y_all = torch.randint(0, 10, (N,))
    n_full = N // BATCH  # drop_last
    batches = list(zip(x_all.split(BATCH)[:n_full], y_all.split(BATCH)[:n_full]))
    model = nn.Sequential(*block(1, 32), *block(32, 64), nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(),
                          nn.Dropout(0.25), nn.Linear(128, 10))
    model.train()
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

    for _ in range(5):
        step(*next(data))
    steps, t0 = 0, time.perf_counter()
    while steps < 20 or time.perf_counter() - t0 < 2.0:
        step(*next(data))
        steps += 1
    dt = time.perf_counter() - t0
    float(loss_sum), int(correct)  # as nn_bench, read the sums once at the end
    print(f"BENCH name=cnn_train backend=torch threads={pyenv.thread_label('torch', torch.get_num_threads())} "
          f"batch={BATCH} samples_per_sec={steps * BATCH / dt:.0f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="?", default="all", choices=("conv", "train", "all"))
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (intra-op threads)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.what in ("conv", "all"):
        bench_conv()
    if args.what in ("train", "all"):
        bench_cnn()


if __name__ == "__main__":
    main()
