#!/usr/bin/env python3
"""nn.h against PyTorch on the same training run (`make interop`; not part of `make test`).

  1. nn.h initialises the Fashion-MNIST MLP (784-256-128-10, ReLU) and saves its weights
     (tests/interop_mlp init): PyTorch loads nn.h's file into its own nn.Module.
  2. Both train 20 Adam steps (lr 1e-3, batch 128) from those weights on the same batches in
     the same order: the first 20*128 training images (pixels / 255), read here from the gz
     IDX files and handed to the C driver as one raw file.
  3. Both save the per-step losses and final weights; nn.h then loads PyTorch's final
     weights (tests/interop_mlp eval) and must give PyTorch's loss on the first batch.

Prints exactly one line, INTEROP steps=20 max_rel_loss_diff=<x> max_abs_weight_diff=<x>,
and exits non-zero unless max_rel_loss_diff <= 1e-4 (and the cross-load agrees as well).
Usage: interop_torch.py DRIVER [DATA_DIR]; diagnostics go to stderr.
"""
import gzip
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_safetensors import read_safetensors  # noqa: E402

STEPS, BATCH, LR = 20, 128, 1e-3


def idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def write_safetensors(path, tensors):
    import json
    header, off, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    driver = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "tests/interop_mlp")
    data = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
    import torch
    torch.set_num_threads(2)
    torch.manual_seed(0)
    n = STEPS * BATCH
    x = idx(os.path.join(data, "train-images-idx3-ubyte.gz"))[:n].reshape(n, 784).astype(np.float32) / 255.0
    y = idx(os.path.join(data, "train-labels-idx1-ubyte.gz"))[:n].astype(np.int32)
    with tempfile.TemporaryDirectory() as tmp:
        p = lambda name: os.path.join(tmp, name)  # noqa: E731
        with open(p("batches.bin"), "wb") as f:
            f.write(x.astype("<f4").tobytes() + y.astype("<i4").tobytes())
        run = lambda *a: subprocess.run([driver] + list(a), check=True, stdout=subprocess.PIPE).stdout  # noqa: E731
        run("init", p("w0.safetensors"))
        run("train", p("w0.safetensors"), p("batches.bin"), str(STEPS), p("nn_losses.bin"), p("nn_final.safetensors"))
        nn_losses = np.fromfile(p("nn_losses.bin"), dtype="<f4").astype(np.float64)
        nn_final, _ = read_safetensors(p("nn_final.safetensors"))

        # PyTorch from nn.h's initial weights
        w0, _ = read_safetensors(p("w0.safetensors"))
        model = torch.nn.Sequential()
        model.add_module("fc1", torch.nn.Linear(784, 256))
        model.add_module("relu1", torch.nn.ReLU())
        model.add_module("fc2", torch.nn.Linear(256, 128))
        model.add_module("relu2", torch.nn.ReLU())
        model.add_module("fc3", torch.nn.Linear(128, 10))
        model.load_state_dict({k: torch.from_numpy(v) for k, v in w0.items()}, strict=True)
        opt = torch.optim.Adam(model.parameters(), lr=LR)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
        t_losses = []
        for s in range(STEPS):
            xb, yb = xt[s * BATCH:(s + 1) * BATCH], yt[s * BATCH:(s + 1) * BATCH]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            t_losses.append(loss.item())
        t_losses = np.array(t_losses, dtype=np.float64)
        t_final = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
        write_safetensors(p("torch_final.safetensors"), t_final)

        # PyTorch's weights back into nn.h: the same loss on the first batch
        with torch.no_grad():
            t_eval = torch.nn.functional.cross_entropy(model(xt[:BATCH]), yt[:BATCH]).item()
        nn_eval = float(run("eval", p("torch_final.safetensors"), p("batches.bin"), str(STEPS)).decode().strip())

    rel = float(np.max(np.abs(nn_losses - t_losses) / np.abs(t_losses)))
    wdiff = max(float(np.max(np.abs(nn_final[k].astype(np.float64) - t_final[k]))) for k in t_final)
    eval_rel = abs(nn_eval - t_eval) / abs(t_eval)
    print("nn.h losses:    " + " ".join("%.6f" % v for v in nn_losses), file=sys.stderr)
    print("torch losses:   " + " ".join("%.6f" % v for v in t_losses), file=sys.stderr)
    print("torch weights in nn.h: loss %.7f, torch %.7f (rel %.2e)" % (nn_eval, t_eval, eval_rel), file=sys.stderr)
    print("INTEROP steps=%d max_rel_loss_diff=%.3e max_abs_weight_diff=%.3e" % (STEPS, rel, wdiff))
    return 0 if rel <= 1e-4 and eval_rel <= 1e-4 and set(nn_final) == set(t_final) else 1


if __name__ == "__main__":
    sys.exit(main())
