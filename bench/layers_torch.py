"""layers_torch.py - PyTorch's side of bench/nn_bench's composed-layer figures.

Usage: /usr/bin/python3 bench/layers_torch.py [--threads T] [LAYER ...]
Prints one line per layer:
    BENCH name=layer backend=torch threads=T/B layer=NAME ms_per_step=X
(T: torch.set_num_threads, default 1; B: OpenBLAS's threads, from OPENBLAS_NUM_THREADS.
bench/run.sh runs it at 1 and 2 threads and keeps the best.) LAYER picks layers (default:
the eight nn_bench layers measures); moe_dense, never run by default, is the MoE with every
expert run on every row, as nn_moe_layer computes it (for explaining the moe figure).

The same layers and sizes as nn_bench layers, written as a PyTorch user writes them
(nn.Linear, F.glu, F.normalize, F.cross_entropy, torch.optim.Adam lr 1e-3), per step only
zero_grad(set_to_none=True) (x.grad = None for the layers without parameters, whose
inputs require gradients instead), forward, loss (the mean of the layer's output, or the
loss itself), backward, step:
  se_block       x [32, 64, 16, 16], squeeze-and-excitation with reduction 16 (64 -> 4 -> 64)
  glu            x [256, 1024], F.glu(x, -1)
  swiglu_ffn     x [16, 64, 256], w2(silu(w1(x)) * w3(x)), hidden 683, no biases
  highway        x [256, 512], t * relu(H(x)) + (1 - t) * x, t = sigmoid(T(x))
  rmse_loss      sqrt(F.mse_loss(pred, target)), [256, 512], gradient to pred
  info_nce_loss  z1, z2 [256, 128], F.normalize, z1n @ z2n.T / 0.1, F.cross_entropy with
                 arange labels (made once); gradients to z1 and z2
  rbf            x [256, 32], 128 centers: exp(-exp(log_gamma) * ((x[:, None] - c) ** 2).sum(-1))
  moe            x [256, 256], 8 experts (Linear 256-512, ReLU, Linear 512-256), top 2 of the
                 softmax gate (Linear without bias), the kept probabilities not renormalised,
                 dispatched as Mixtral's Hugging Face code does: each expert runs on the rows
                 that kept it (torch.where, index_add_); loss = mean(y) + 0.01 * Switch
                 Transformer's load-balancing loss
3 warm-up steps, then steps until >= 0.5 s and >= 5 steps.
"""
import argparse
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True  # importing pyenv leaves no bench/__pycache__
import pyenv  # noqa: E402

LAYERS = ["se_block", "glu", "swiglu_ffn", "highway", "rmse_loss", "info_nce_loss", "rbf", "moe"]


def rand(*shape):
    return torch.rand(*shape) * 2 - 1


class SE(nn.Module):
    def __init__(self, c, reduction):
        super().__init__()
        self.fc1 = nn.Linear(c, max(1, c // reduction))
        self.fc2 = nn.Linear(max(1, c // reduction), c)

    def forward(self, x):
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(x.mean((2, 3))))))
        return x * s[:, :, None, None]


class SwiGLU(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.w1 = nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)
        self.w3 = nn.Linear(d, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Highway(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.H = nn.Linear(d, d)
        self.T = nn.Linear(d, d)

    def forward(self, x):
        t = torch.sigmoid(self.T(x))
        return t * F.relu(self.H(x)) + (1 - t) * x


class RBF(nn.Module):
    def __init__(self, d, k):
        super().__init__()
        self.centers = nn.Parameter(torch.randn(k, d))
        self.log_gamma = nn.Parameter(torch.zeros(k))

    def forward(self, x):
        d2 = (x[:, None, :] - self.centers).pow(2).sum(-1)
        return torch.exp(-torch.exp(self.log_gamma) * d2)


class MoE(nn.Module):
    def __init__(self, d, n_experts, top_k, hidden, dense=False):
        super().__init__()
        self.top_k, self.dense = top_k, dense
        self.gate = nn.Linear(d, n_experts, bias=False)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, d))
                                     for _ in range(n_experts))

    def forward(self, x):
        e = len(self.experts)
        probs = F.softmax(self.gate(x), dim=-1)
        topw, topi = probs.topk(self.top_k, dim=-1)
        if self.dense:  # every expert on every row, weighted by its kept probability (0 if not kept)
            w = torch.zeros_like(probs).scatter(1, topi, topw)
            y = sum(w[:, i:i + 1] * expert(x) for i, expert in enumerate(self.experts))
        else:  # Mixtral's dispatch: each expert on the rows that kept it
            y = torch.zeros_like(x)
            for i, expert in enumerate(self.experts):
                rows, slot = torch.where(topi == i)
                if rows.numel():
                    y.index_add_(0, rows, expert(x[rows]) * topw[rows, slot, None])
        # Switch Transformer: E * sum_e f_e P_e (f over the k slots, as load_balancing_loss_func)
        f = F.one_hot(topi, e).float().sum(1).mean(0)
        aux = e * (f * probs.mean(0)).sum()
        return y, aux


def make(name):
    """(the step's loss function, the optimizer or None, the tensors to clear)"""
    if name == "se_block":
        m, x = SE(64, 16), rand(32, 64, 16, 16)
        return (lambda: m(x).mean()), m, []
    if name == "glu":
        x = rand(256, 1024).requires_grad_()
        return (lambda: F.glu(x, -1).mean()), None, [x]
    if name == "swiglu_ffn":
        m, x = SwiGLU(256, 683), rand(16, 64, 256)
        return (lambda: m(x).mean()), m, []
    if name == "highway":
        m, x = Highway(512), rand(256, 512)
        return (lambda: m(x).mean()), m, []
    if name == "rmse_loss":
        pred, target = rand(256, 512).requires_grad_(), rand(256, 512)
        return (lambda: torch.sqrt(F.mse_loss(pred, target))), None, [pred]
    if name == "info_nce_loss":
        z1, z2 = rand(256, 128).requires_grad_(), rand(256, 128).requires_grad_()
        labels = torch.arange(256)

        def loss():
            logits = F.normalize(z1, dim=1) @ F.normalize(z2, dim=1).T / 0.1
            return F.cross_entropy(logits, labels)
        return loss, None, [z1, z2]
    if name == "rbf":
        m, x = RBF(32, 128), rand(256, 32)
        return (lambda: m(x).mean()), m, []
    if name in ("moe", "moe_dense"):
        m, x = MoE(256, 8, 2, 512, dense=name == "moe_dense"), rand(256, 256)

        def loss():
            y, aux = m(x)
            return y.mean() + 0.01 * aux
        return loss, m, []
    raise SystemExit(f"layers_torch: no layer {name} (have {', '.join(LAYERS + ['moe_dense'])})")


def bench(name, threads):
    torch.manual_seed(0)
    loss_fn, model, leaves = make(name)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3) if model is not None else None

    def step():
        if opt is not None:
            opt.zero_grad(set_to_none=True)
        for t in leaves:
            t.grad = None
        loss_fn().backward()
        if opt is not None:
            opt.step()

    for _ in range(3):
        step()
    steps, t0 = 0, time.perf_counter()
    while steps < 5 or time.perf_counter() - t0 < 0.5:
        step()
        steps += 1
    dt = time.perf_counter() - t0
    print(f"BENCH name=layer backend=torch threads={threads} layer={name} ms_per_step={dt * 1e3 / steps:.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("layers", nargs="*", default=LAYERS)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (intra-op threads)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    threads = pyenv.thread_label("torch", torch.get_num_threads())
    for name in args.layers:
        bench(name, threads)


if __name__ == "__main__":
    main()
