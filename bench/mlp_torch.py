"""mlp_torch.py - PyTorch's side of bench/nn_bench's mlp_train figure.

Usage: /usr/bin/python3 bench/mlp_torch.py
Prints: BENCH name=mlp_train backend=torch batch=128 samples_per_sec=X

The same work as nn_bench mlp, in PyTorch's best CPU configuration: the 784-256-128-10 ReLU
MLP (nn.Linear's initialisation), Adam lr 1e-3, batch 128, 60000 random examples already in
memory, batches taken with index_select (no DataLoader), the loss and accuracy summed into
tensors without a per-step .item(), 2 threads, 20 warm-up steps then >= 2 s of steps.
"""
import time

import torch
import torch.nn as nn

BATCH, N, IMG = 128, 60000, 784


def main():
    torch.set_num_threads(2)
    torch.manual_seed(0)
    x_all = torch.rand(N, IMG) * 2 - 1
    y_all = torch.randint(0, 10, (N,))
    model = nn.Sequential(nn.Linear(IMG, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
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

    for _ in range(20):
        step()
    steps, t0 = 0, time.perf_counter()
    while steps < 50 or time.perf_counter() - t0 < 2.0:
        step()
        steps += 1
    dt = time.perf_counter() - t0
    float(loss_sum)  # as nn_bench, read the sums once at the end
    print(f"BENCH name=mlp_train backend=torch batch={BATCH} samples_per_sec={steps * BATCH / dt:.0f}", flush=True)


if __name__ == "__main__":
    main()
