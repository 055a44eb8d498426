#!/usr/bin/env python3
"""safetensors interop between nn.h and PyTorch, with no safetensors package: struct, json
and numpy read and write the format, torch checks that the names and layouts are its own.
Not part of `make test`.

  python3 tests/interop_safetensors.py read FILE     print a file's tensors (e.g. one that
                                                      nn_graph_save_safetensors wrote) and load it
                                                      into the torch model of `roundtrip`
  python3 tests/interop_safetensors.py write FILE    write a torch state dict as safetensors
  python3 tests/interop_safetensors.py roundtrip     torch -> file -> nn.h (forward) -> file ->
                                                      torch, checked (needs cc and ./nn.h)
  python3 tests/interop_safetensors.py fixture       the byte arrays of tests/test_safetensors.c
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
          "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    """name -> numpy array (BF16 comes back as float32), plus the metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        if info["dtype"] == "BF16":
            u = np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(data[b:e], dtype=np.dtype(DTYPES[info["dtype"]]).newbyteorder("<"))
        out[name] = arr.reshape(info["shape"]).copy()
    return out, meta


def to_bytes(t):
    """(dtype, shape, little-endian bytes) of a torch tensor or numpy array."""
    try:
        import torch
        if isinstance(t, torch.Tensor):
            if t.dtype == torch.bfloat16:
                return "BF16", list(t.shape), t.contiguous().view(torch.int16).numpy().astype("<i2").tobytes()
            t = t.detach().cpu().numpy()
    except ImportError:
        pass
    a = np.asarray(t).copy(order="C")  # (ascontiguousarray would make a scalar 1-d)
    name = [k for k, v in DTYPES.items() if np.dtype(v) == a.dtype][0]
    return name, list(a.shape), a.astype(a.dtype.newbyteorder("<")).tobytes()


def safetensors_bytes(tensors, metadata=None):
    """The layout the reference writer (safetensors.torch.save_file) produces: compact JSON,
    __metadata__ first, tensors by descending dtype alignment then name, header padded with
    spaces to a multiple of 8."""
    items = [(name,) + to_bytes(t) for name, t in tensors.items()]
    size = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
    items.sort(key=lambda it: (-size[it[1]], it[0]))
    header, off, blobs = {}, 0, []
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, blob in items:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(blob)]}
        off += len(blob)
        blobs.append(blob)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def write_safetensors(path, tensors, metadata=None):
    with open(path, "wb") as f:
        f.write(safetensors_bytes(tensors, metadata))


def model():
    import torch
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))


C_PROGRAM = r"""
#define NN_IMPLEMENTATION
#include "nn.h"
#include <stdio.h>
int main(int argc, char **argv) {
    nn_context *ctx = NULL; nn_graph *g = NULL; nn_context_desc d = {0}; nn_compile_desc c = {0};
    float x[8] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f, 0.0f, 3.0f}, y[4];
    nn_tensor xt, yt;
    int i;
    (void)argc;
    d.device = "cpu";
    d.log_level = NN_LOG_ERROR;
    if (nn_context_create(&d, &ctx) != NN_OK || nn_graph_create(ctx, NULL, &g) != NN_OK) return 1;
    xt = nn_input(g, "x", NN_F32, nn_shape2(2, 4));
    yt = nn_linear_layer(g, nn_relu(g, nn_linear_layer(g, xt, 3, NULL, "0")), 2, NULL, "2");
    nn_graph_output(g, yt);
    if (nn_graph_load_safetensors(g, argv[1], 0) != NN_OK || nn_graph_compile(g, &c) != NN_OK ||
        nn_tensor_write(g, xt, x, sizeof x) != NN_OK || nn_graph_forward(g) != NN_OK ||
        nn_tensor_read(g, yt, y, sizeof y) != NN_OK || nn_graph_save_safetensors(g, argv[2]) != NN_OK) {
        fprintf(stderr, "%s\n", nn_context_last_error(ctx));
        return 1;
    }
    for (i = 0; i < 4; i++) printf("%.9g\n", y[i]);
    nn_graph_destroy(g);
    nn_context_destroy(ctx);
    return 0;
}
"""


def roundtrip():
    import torch
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    net = model()
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "rt.c"), os.path.join(tmp, "rt")
        a, b = os.path.join(tmp, "torch.safetensors"), os.path.join(tmp, "nn.safetensors")
        with open(src, "w") as f:
            f.write(C_PROGRAM)
        subprocess.run(["cc", "-O1", "-DNN_NO_OPENCL", "-I", root, "-o", exe, src, "-lm", "-lpthread"], check=True)
        write_safetensors(a, net.state_dict(), {"format": "pt"})
        out = subprocess.run([exe, a, b], check=True, capture_output=True, text=True).stdout.split()
        y = np.array([float(v) for v in out], dtype=np.float32).reshape(2, 2)
        x = torch.tensor([[0.5, -1.0, 2.0, 0.25], [-0.75, 1.5, 0.0, 3.0]])
        ref = net(x).detach().numpy()
        err = float(np.abs(y - ref).max())
        print(f"forward of the torch weights in nn.h: max |diff| = {err:.3g}")
        assert err < 1e-5, (y, ref)
        back, meta = read_safetensors(b)
        print(f"nn.h's file: {sorted(back)} metadata={meta}")
        net2 = model()
        for p in net2.parameters():
            torch.nn.init.zeros_(p)
        net2.load_state_dict({k: torch.from_numpy(v) for k, v in back.items()}, strict=True)
        for (k, v), (k2, v2) in zip(net.state_dict().items(), net2.state_dict().items()):
            assert k == k2 and torch.equal(v, v2), k
        print("torch -> nn.h -> torch: every parameter bitwise equal; load_state_dict(strict=True) ok")


def c_array(name, blob):
    lines = [f"static const unsigned char {name}[{len(blob)}] = {{"]
    for i in range(0, len(blob), 16):
        lines.append("    " + ", ".join(f"0x{c:02x}" for c in blob[i:i + 16]) + ",")
    lines.append("};")
    return "\n".join(lines)


def fixture():
    """A torch Linear(3, 2) as the reference writer stores it, in F32 (with an int64 extra that
    the loader must ignore), and again with the weight in F16 and the bias in BF16."""
    import torch
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    sd = {"fc.weight": lin.weight.detach(), "fc.bias": lin.bias.detach(),
          "bn.num_batches_tracked": torch.tensor(7, dtype=torch.int64)}
    print("/* torch.manual_seed(0); torch.nn.Linear(3, 2) as safetensors.torch.save_file writes it */")
    print(c_array("torch_f32", safetensors_bytes(sd, {"format": "pt"})))
    w = lin.weight.detach().to(torch.float16)
    bias = lin.bias.detach().to(torch.bfloat16)
    print(c_array("torch_half", safetensors_bytes({"fc.weight": w, "fc.bias": bias}, {"format": "pt"})))
    f = lambda t: ", ".join(f"{v:.9g}f" for v in t.float().flatten().tolist())
    print(f"static const float torch_w[6] = {{{f(lin.weight)}}}, torch_b[2] = {{{f(lin.bias)}}};")
    print(f"static const float torch_w16[6] = {{{f(w)}}}, torch_b16[2] = {{{f(bias)}}};")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "read":
        tensors, meta = read_safetensors(sys.argv[2])
        print("metadata:", meta)
        for k in sorted(tensors):
            print(f"{k}: {tensors[k].dtype} {list(tensors[k].shape)}")
    elif cmd == "write":
        write_safetensors(sys.argv[2], model().state_dict(), {"format": "pt"})
    elif cmd == "roundtrip":
        roundtrip()
    elif cmd == "fixture":
        fixture()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
