"""gpt_torch.py - PyTorch's side of bench/gpt_bench's gpt_train figure.

Usage: /usr/bin/python3 bench/gpt_torch.py [--threads T] [--model tiny|gpt2s] [--device cuda]
Prints: BENCH name=gpt_train backend=torch threads=T/B model=M batch=B context=T
        tokens_per_sec=X gflops=X
(bench/run.sh runs it for several T/B and keeps the best.)

The same work as gpt_bench train, written as a PyTorch user writes it: nanoGPT's model.py
(GELU exact, LayerNorm with bias, the head tied to wte; attention through
F.scaled_dot_product_attention where this torch has it, else nanoGPT's masked-softmax path),
AdamW lr 3e-4, the text of /usr/share/common-licenses as one int64 tensor in memory, a
batch as nanoGPT's get_batch makes it (torch.stack of the windows at random starts), and per
step only zero_grad(set_to_none=True), forward, loss, backward, step; no per-step .item().
tiny: vocabulary 96, context 64, 4 layers, width 128, 4 heads, batch 16; gpt2s: 12 layers,
width 768, 12 heads, context 256, batch 4 (vocabulary 96). Warm-up steps (10), then
>= 30 steps and >= 2 s (gpt2s: 1 warm-up step, then 2). gflops: as gpt_bench's.
--device cuda: the same loop on a CUDA GPU (the text and the model on the device, the clock
read after torch.cuda.synchronize()), for the figures beside nn.h on a GPU's OpenCL.
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
import pyenv  # noqa: E402

V = 96


class Block(nn.Module):
    def __init__(self, c, h, t):
        super().__init__()
        self.h = h
        self.ln_1, self.ln_2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.c_attn, self.c_proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.c_fc, self.mlp_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.register_buffer("mask", torch.ones(t, t, dtype=torch.bool).triu(1))
        self.flash = hasattr(F, "scaled_dot_product_attention")

    def attn(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.mask[:t, :t], float("-inf")), dim=-1)
            y = att @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, layers, c, h, t):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, c), nn.Embedding(t, c)
        self.h = nn.ModuleList([Block(c, h, t) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(c)
        self.lm_head = nn.Linear(c, V, bias=False)
        self.wte.weight = self.lm_head.weight
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for blk in self.h:
            x = blk(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model", default="tiny", choices=["tiny", "gpt2s"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--heldout-after", type=int, default=0,
                    help="train this many steps, then print the held-out loss (every T-window of the last 10%% in order)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.model == "tiny":
        B, T, L, C, H, warm, min_steps, min_time = 16, 64, 4, 128, 4, 10, 30, 2.0
    else:
        B, T, L, C, H, warm, min_steps, min_time = 4, 256, 12, 768, 12, 1, 2, 0.0
    dev = torch.device(args.device)
    data = corpus().to(dev)
    train = data[: len(data) * 9 // 10]
    model = GPT(L, C, H, T).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    def get_batch():
        ix = torch.randint(len(train) - T - 1, (B,)).tolist() if dev.type != "cpu" else torch.randint(len(train) - T - 1, (B,))
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
        nb = (len(held) - 1) // T // B  # every T-window of the held-out text in order, whole batches (examples/tiny_gpt.c)
        tot = 0.0
        with torch.no_grad():
            for e in range(nb):
                ix = [(e * B + b) * T for b in range(B)]
                x = torch.stack([held[i:i + T] for i in ix])
                y = torch.stack([held[i + 1:i + T + 1] for i in ix])
                tot += model(x, y).item()
        print(f"BENCH name=gpt_heldout backend=torch model={args.model} steps={args.heldout_after} heldout_loss={tot / nb:.4f}")
        return
    if dev.type == "cuda":
        warm, min_steps = max(warm, 10), max(min_steps, 30)
    for _ in range(warm):
        step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    steps, t0 = 0, time.perf_counter()
    while steps < min_steps or time.perf_counter() - t0 < min_time:
        loss = step()
        steps += 1
    float(loss)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    tps = steps * B * T / dt
    flop = 6.0 * (12 * L * C * C + V * C) + 12.0 * L * T * C
    where = "" if dev.type == "cpu" else f"device={args.device} "
    print(f"BENCH name=gpt_train backend=torch {where}threads={pyenv.thread_label('torch', torch.get_num_threads())} "
          f"model={args.model} batch={B} context={T} tokens_per_sec={tps:.1f} gflops={tps * flop / 1e9:.2f}", flush=True)


if __name__ == "__main__":
    main()
