"""sgemm_torch.py - the PyTorch (and NumPy/OpenBLAS) side of bench/nn_bench's sgemm figure.

Usage: /usr/bin/python3 bench/sgemm_torch.py [torch|numpy]
Prints one line per size, C = A @ B, square float32:
    BENCH name=sgemm backend=torch n=N gflops=X      (torch.mm, torch.set_num_threads(2))
    BENCH name=sgemm backend=openblas n=N gflops=X   (numpy.matmul; run it with
                                                      OPENBLAS_NUM_THREADS=2)
bench/run.sh sets OPENBLAS_CORETYPE and OMP_WAIT_POLICY=PASSIVE.
"""
import sys
import time

SIZES = (256, 512, 1024, 2048)


def bench(fn, n):
    """GFLOP/s of fn() (one n x n x n product): warm-up, then reps for >= 0.5 s (>= 3)."""
    fn()
    fn()
    reps, t0 = 0, time.perf_counter()
    while reps < 3 or time.perf_counter() - t0 < 0.5:
        fn()
        reps += 1
    dt = time.perf_counter() - t0
    return 2.0 * n ** 3 * reps / dt / 1e9


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "torch"
    if which == "torch":
        import torch
        torch.set_num_threads(2)
        torch.manual_seed(0)
        for n in SIZES:
            a = torch.rand(n, n) * 2 - 1
            b = torch.rand(n, n) * 2 - 1
            c = torch.empty(n, n)
            g = bench(lambda: torch.mm(a, b, out=c), n)
            print(f"BENCH name=sgemm backend=torch n={n} gflops={g:.2f}", flush=True)
    elif which == "numpy":
        import numpy as np
        rng = np.random.default_rng(0)
        for n in SIZES:
            a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
            b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
            c = np.empty((n, n), np.float32)
            g = bench(lambda: np.matmul(a, b, out=c), n)
            print(f"BENCH name=sgemm backend=openblas n={n} gflops={g:.2f}", flush=True)
    else:
        sys.exit("usage: sgemm_torch.py [torch|numpy]")


if __name__ == "__main__":
    main()
