"""attention_torch.py - PyTorch's side of bench/attention_bench: attention forward + backward
at B = 4, H = 8, D = 64 through F.scaled_dot_product_attention (what a PyTorch user calls;
torch < 2.0 has none: there softmax(q k^T / 8, masked) @ v),
with the same step as attention_bench's: loss = sum(y * w), w fixed, gradients of q, k, v.

Usage: /usr/bin/python3 bench/attention_torch.py T [causal|full] [--threads N] [--device cuda]
Prints: BENCH name=attention backend=torch [device=D] threads=T/B T=T impl=sdpa|composed mask=M ms_per_step=X
2 warm-up steps, then steps until >= 1 s and >= 3 steps; the median (on a GPU, each step
ended by torch.cuda.synchronize()).
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
import pyenv  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("T", type=int)
    ap.add_argument("mask", nargs="?", default="causal", choices=["causal", "full"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    g = torch.Generator().manual_seed(0)
    shape = (4, 8, a.T, 64)
    q, k, v, w = (torch.rand(shape, generator=g).mul_(2).sub_(1).to(dev) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(True)

    sdpa = hasattr(F, "scaled_dot_product_attention")
    hide = torch.ones(a.T, a.T, dtype=torch.bool, device=dev).triu(1)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    def step():
        for t in (q, k, v):
            t.grad = None
        if sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=a.mask == "causal")
        else:  # torch < 2.0: the composed form a user of it writes
            s = (q @ k.transpose(-2, -1)) * (1.0 / 8.0)
            if a.mask == "causal":
                s = s.masked_fill(hide, float("-inf"))
            y = torch.softmax(s, dim=-1) @ v
        (y * w).sum().backward()
        sync()

    for _ in range(2):
        step()
    times, t0 = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - t0 < 1.0:
        s = time.perf_counter()
        step()
        times.append(time.perf_counter() - s)
    where = "" if dev.type == "cpu" else f"device={a.device} "
    print(f"BENCH name=attention backend=torch {where}threads={pyenv.thread_label('torch', torch.get_num_threads())} "
          f"T={a.T} impl={'sdpa' if sdpa else 'composed'} mask={a.mask} ms_per_step={statistics.median(times) * 1e3:.3f}", flush=True)


if __name__ == "__main__":
    main()
