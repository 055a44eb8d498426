"""cnn_torch.py - PyTorch's side of bench/nn_bench's conv2d and cnn_train figures.

Usage: /usr/bin/python3 bench/cnn_torch.py
Prints:
    BENCH name=conv2d backend=torch shape=NxCxHxWkK pass=fwd|bwd gflops=X ms=X
    BENCH name=cnn_train backend=torch batch=64 samples_per_sec=X

The same work as nn_bench conv and nn_bench cnn, in PyTorch's best CPU configuration (2
threads; run.sh sets OMP_WAIT_POLICY=PASSIVE):
  conv2d: a 3x3 pad-1 conv without bias for the CNN example's two convs at batch 64 and a
    ResNet-style 64->64 at 56x56, batch 8. fwd: the forward under no_grad; bwd: forward +
    backward of the sum (dw, and dx when C > 1) minus fwd, counted as the flops of dw and dx.
  cnn_train: examples/fashion_mnist_cnn.c's network (conv-bn-relu-pool x2, 3136-128-10 with
    dropout 0.25), Adam lr 1e-3, batch 64, 60000 random images in memory, batches taken with
    index_select, loss and accuracy summed into tensors (no per-step .item()), 5 warm-up steps
    then >= 2 s of steps.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

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

        def step():
            wt.grad = None
            x.grad = None
            F.conv2d(x, wt, padding=1).sum().backward()

        fwd_ms = time_runs(fwd)
        step_ms = time_runs(step)
        fwd_ms = min(fwd_ms, time_runs(fwd))  # again: the lower of the two
        bwd_ms = max(step_ms - fwd_ms, 0.01 * step_ms)  # noise on a loaded machine
        shape = f"{n}x{c}x{h}x{w}k{k}"
        print(f"BENCH name=conv2d backend=torch shape={shape} pass=fwd gflops={flops / fwd_ms / 1e6:.2f} ms={fwd_ms:.3f}")
        print(f"BENCH name=conv2d backend=torch shape={shape} pass=bwd "
              f"gflops={flops * (2 if c > 1 else 1) / bwd_ms / 1e6:.2f} ms={bwd_ms:.3f}", flush=True)


def block(cin, cout):
    return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]


def bench_cnn():
    torch.manual_seed(0)
    x_all = torch.rand(N, 1, 28, 28) * 2 - 1
    y_all = torch.randint(0, 10, (N,))
    model = nn.Sequential(*block(1, 32), *block(32, 64), nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(),
                          nn.Dropout(0.25), nn.Linear(128, 10))
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    loss_sum = torch.zeros(())
    acc_sum = torch.zeros(())

    def step():
        nonlocal loss_sum, acc_sum
        idx = torch.randint(0, N, (BATCH,))
        xb = x_all.index_select(0, idx)
        yb = y_all.index_select(0, idx)
        logits = model(xb)
        loss = loss_fn(logits, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            loss_sum += loss.detach()
            acc_sum += (logits.argmax(1) == yb).float().mean()

    for _ in range(5):
        step()
    steps, t0 = 0, time.perf_counter()
    while steps < 20 or time.perf_counter() - t0 < 2.0:
        step()
        steps += 1
    dt = time.perf_counter() - t0
    float(loss_sum)  # as nn_bench, read the sums once at the end
    print(f"BENCH name=cnn_train backend=torch batch={BATCH} samples_per_sec={steps * BATCH / dt:.0f}", flush=True)


def main():
    torch.set_num_threads(2)
    bench_conv()
    bench_cnn()


if __name__ == "__main__":
    main()
