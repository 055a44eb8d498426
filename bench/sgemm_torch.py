"""sgemm_torch.py - the PyTorch (and NumPy/OpenBLAS) side of bench/nn_bench's sgemm figure.

Usage: /usr/bin/python3 bench/sgemm_torch.py [torch|numpy] [--threads T]
Prints one line per size, C = A @ B, square float32:
    BENCH name=sgemm backend=torch threads=T/B n=N gflops=X    (torch.mm)
    BENCH name=sgemm backend=openblas threads=B n=N gflops=X   (numpy.matmul)
T: torch.set_num_threads (default 1); B: the BLAS's threads, which for both lines are
OpenBLAS's own (torch.mm calls OpenBLAS's sgemm, whose threads torch.set_num_threads does
not set): run it with OPENBLAS_NUM_THREADS=B. bench/run.sh runs B = T = 1 and 2 and keeps
the best, with OPENBLAS_CORETYPE (where the CPU has AVX-512) and OMP_WAIT_POLICY=PASSIVE.

NumPy's line is named after the BLAS that really serves its SGEMM (bench/pyenv.py): backend=
openblas only when it is OpenBLAS; otherwise backend=numpy-KIND (numpy-reference for Netlib's
reference BLAS, about 7 GFLOP/s), so no slow BLAS is ever reported as OpenBLAS.
"""
import argparse
import sys
import time

sys.dont_write_bytecode = True  # importing pyenv leaves no bench/__pycache__
import pyenv  # noqa: E402

SIZES = (256, 512, 1024, 2048)


def bench(fn, n):
    """GFLOP/s of fn() (one n x n x n product): warm-up, then reps for >= 0.5 s (>= 3). A
    product slower than 0.5 s (a reference BLAS at n=2048 takes seconds) is timed once after
    one warm-up, so that a slow BLAS is reported in seconds rather than minutes."""
    t0 = time.perf_counter()
    fn()
    if time.perf_counter() - t0 > 0.5:
        t0 = time.perf_counter()
        fn()
        return 2.0 * n ** 3 / (time.perf_counter() - t0) / 1e9
    fn()
    reps, t0 = 0, time.perf_counter()
    while reps < 3 or time.perf_counter() - t0 < 0.5:
        fn()
        reps += 1
    dt = time.perf_counter() - t0
    return 2.0 * n ** 3 * reps / dt / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("which", nargs="?", default="torch", choices=("torch", "numpy"))
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (torch only)")
    args = ap.parse_args()
    if args.which == "torch":
        import torch
        torch.set_num_threads(args.threads)
        torch.manual_seed(0)
        head = f"BENCH name=sgemm backend=torch threads={pyenv.thread_label('torch', torch.get_num_threads())}"
        for n in SIZES:
            a = torch.rand(n, n) * 2 - 1
            b = torch.rand(n, n) * 2 - 1
            c = torch.empty(n, n)
            g = bench(lambda: torch.mm(a, b, out=c), n)
            print(f"{head} n={n} gflops={g:.2f}", flush=True)
    else:
        import numpy as np
        kind = pyenv.blas_info("numpy")["blas"]
        backend = "openblas" if kind == "openblas" else f"numpy-{kind}"
        head = f"BENCH name=sgemm backend={backend} threads={pyenv.thread_label('numpy')}"
        rng = np.random.default_rng(0)
        for n in SIZES:
            a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
            b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
            c = np.empty((n, n), np.float32)
            g = bench(lambda: np.matmul(a, b, out=c), n)
            print(f"{head} n={n} gflops={g:.2f}", flush=True)


if __name__ == "__main__":
    main()
