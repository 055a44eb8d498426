"""vae_torch.py - PyTorch's side of examples/fashion_mnist_vae.c: the same VAE, data and loss.

Usage: /usr/bin/python3 bench/vae_torch.py [DATA_DIR] [EPOCHS] [--threads T]
(--threads: torch.set_num_threads, default 1: on a shared 2-core machine 2 threads ran at a
quarter of 1 thread's speed.) Prints per-epoch lines and, last,
    RESULT device=torch epochs=N train_neg_elbo=X test_neg_elbo=X test_neg_elbo_zmu=X samples_per_sec=X

The model of PyTorch's VAE example (fc1 784-400 ReLU, fc21/fc22 400-20 for mu and logvar,
z = mu + exp(0.5 logvar) * randn, fc3 20-400 ReLU, fc4 400-784 logits), Adam lr 1e-3,
batch 128 with the last partial batch dropped, pixels in [0, 1], loss per sample
(BCE-with-logits summed over pixels + KL) / batch, as the C example. The test set is scored
in one forward, with z sampled and with z = mu. The epoch's permutation differs from the C
example's (torch.randperm); the data and everything else are the same. DATA_DIR defaults to
./data/fashion-mnist, then /usr/share/datasets/fashion-mnist (plain or .gz IDX files).
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, IMG, HIDDEN, LATENT = 128, 784, 400, 20


def read_images(d, prefix):
    for name in (prefix + "-images-idx3-ubyte", prefix + "-images-idx3-ubyte.gz"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            with (gzip.open if p.endswith(".gz") else open)(p, "rb") as f:
                raw = f.read()
            n = int.from_bytes(raw[4:8], "big")
            return torch.from_numpy(np.frombuffer(raw, np.uint8, n * IMG, 16).reshape(n, IMG).astype(np.float32) / 255.0)
    raise SystemExit("vae_torch: no %s images in %s" % (prefix, d))


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(IMG, HIDDEN)
        self.fc21 = nn.Linear(HIDDEN, LATENT)
        self.fc22 = nn.Linear(HIDDEN, LATENT)
        self.fc3 = nn.Linear(LATENT, HIDDEN)
        self.fc4 = nn.Linear(HIDDEN, IMG)

    def decode(self, z):
        return self.fc4(F.relu(self.fc3(z)))

    def loss_sum(self, x, zmu=False):
        h = F.relu(self.fc1(x))
        mu, logvar = self.fc21(h), self.fc22(h)
        z = mu if zmu else mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        bce = F.binary_cross_entropy_with_logits(self.decode(z), x, reduction="sum")
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return bce + kl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir", nargs="?", default="")
    ap.add_argument("epochs", nargs="?", type=int, default=int(os.environ.get("EPOCHS", "10")))
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    d = args.data_dir
    if not d:
        d = next((c for c in ("data/fashion-mnist", "/usr/share/datasets/fashion-mnist")
                  if any(os.path.exists(os.path.join(c, "train-images-idx3-ubyte" + s)) for s in ("", ".gz"))), None)
        if d is None:
            raise SystemExit("vae_torch: no Fashion-MNIST folder found")
    x_train, x_test = read_images(d, "train"), read_images(d, "t10k")
    model = VAE()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps = x_train.shape[0] // BATCH
    secs_total, train, test, test_zmu = 0.0, 0.0, 0.0, 0.0
    print("epoch  train_neg_elbo  test_neg_elbo  test_neg_elbo_zmu  seconds  samples/s")
    for epoch in range(1, args.epochs + 1):
        perm = torch.randperm(x_train.shape[0])
        batches = x_train[perm[: steps * BATCH]].split(BATCH)  # made before the clock starts
        acc = torch.zeros(())
        model.train()
        t0 = time.perf_counter()
        for xb in batches:
            opt.zero_grad(set_to_none=True)
            ls = model.loss_sum(xb)
            (ls / BATCH).backward()
            opt.step()
            acc += ls.detach()
        secs = time.perf_counter() - t0
        secs_total += secs
        model.eval()
        with torch.no_grad():
            test = model.loss_sum(x_test).item() / x_test.shape[0]
            test_zmu = model.loss_sum(x_test, zmu=True).item() / x_test.shape[0]
        train = acc.item() / (steps * BATCH)
        print("%5d  %14.4f  %13.4f  %17.4f  %7.2f  %9.0f" % (epoch, train, test, test_zmu, secs, steps * BATCH / secs),
              flush=True)
    print("RESULT device=torch epochs=%d train_neg_elbo=%.4f test_neg_elbo=%.4f test_neg_elbo_zmu=%.4f samples_per_sec=%.0f"
          % (args.epochs, train, test, test_zmu, args.epochs * steps * BATCH / secs_total))


if __name__ == "__main__":
    main()
