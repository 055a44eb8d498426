"""pyenv.py - what the PyTorch and NumPy counterparts run on: versions, the BLAS library that
really serves their SGEMM, its kernels and threads, and a quick SGEMM timing as a check.

Usage: /usr/bin/python3 bench/pyenv.py torch|numpy
Prints one line (bench/run.sh keeps it and warns when the BLAS is not a fast one):
    BENCH name=env what=torch version=V blas=KIND blas_lib=PATH [blas_version=V]
          [blas_core=CORE] [blas_threading=pthread|openmp|serial] [blas_threads=N]
          sgemm1024_gflops=X blas_ok=yes|no
KIND: openblas, mkl, blis, atlas, flexiblas, reference (Netlib's reference BLAS, e.g. Debian's
libblas3 when no libopenblas0-* is installed: about 7 GFLOP/s), or unknown.

How the BLAS is found: the library (libtorch_cpu for torch, numpy's _multiarray_umath for
numpy) asks the dynamic linker for the SGEMM symbol it calls (sgemm_, cblas_sgemm), and
dladdr names the file that defines it. That is the file the calls go to, whatever
libblas.so.3 points at (update-alternatives), LD_LIBRARY_PATH or LD_PRELOAD say.

The other scripts import this module for thread_label(): "T/B", torch's intra-op threads /
the BLAS's threads.
"""
import ctypes
import ctypes.util
import os
import sys
import time

SLOW_GFLOPS = 20.0  # below this at n=1024 the BLAS is flagged (the reference BLAS: ~7)


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _provider(lib_path, symbols):
    """(path of the file defining the first of symbols as lib_path resolves it, symbol)."""
    try:
        lib = ctypes.CDLL(lib_path, mode=getattr(os, "RTLD_NOLOAD", 4) | os.RTLD_LOCAL)
    except OSError:
        try:
            lib = ctypes.CDLL(lib_path)
        except OSError:
            return None, None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libdl = libc
    if not hasattr(libc, "dladdr"):
        libdl = ctypes.CDLL(ctypes.util.find_library("dl") or "libdl.so.2")
    libdl.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    for sym in symbols:
        try:
            fn = getattr(lib, sym)
        except AttributeError:
            continue
        info = _DlInfo()
        if libdl.dladdr(ctypes.cast(fn, ctypes.c_void_p), ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode()), sym
    return None, None


def _kind(path):
    base = os.path.basename(path).lower()
    full = path.lower()
    for k in ("openblas", "mkl", "blis", "flexiblas", "atlas"):
        if k in full:
            return k
    # Debian's reference BLAS: /usr/lib/<triplet>/blas/libblas.so.3 (package libblas3)
    if base.startswith("libblas") and os.path.basename(os.path.dirname(full)) in ("blas", "lib", "lib64"):
        return "reference"
    if base.startswith("libblas") or base.startswith("libcblas"):
        return "reference"
    return "unknown"


def _openblas_details(path):
    out = {}
    try:
        ob = ctypes.CDLL(path)
    except OSError:
        return out
    for fn, key in (("openblas_get_config", "config"), ("openblas_get_corename", "blas_core")):
        if hasattr(ob, fn):
            getattr(ob, fn).restype = ctypes.c_char_p
            v = getattr(ob, fn)()
            if v:
                out[key] = v.decode().strip()
    if "config" in out:
        words = out.pop("config").split()
        if len(words) > 1 and words[0] == "OpenBLAS":
            out["blas_version"] = words[1]
    if hasattr(ob, "openblas_get_parallel"):
        out["blas_threading"] = {0: "serial", 1: "pthread", 2: "openmp"}.get(ob.openblas_get_parallel(), "?")
    if hasattr(ob, "openblas_get_num_threads"):
        out["blas_threads"] = str(ob.openblas_get_num_threads())
    return out


def blas_info(which):
    """Dict describing the BLAS that `which` ("torch" or "numpy", already importable) calls."""
    info = {"blas": "unknown", "blas_lib": "?"}
    if which == "torch":
        import torch
        lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
        path, _ = _provider(lib, ("sgemm_", "cblas_sgemm", "sgemm"))
        if path is None or os.path.basename(path).startswith("libtorch"):
            # BLAS linked into libtorch itself (pip wheels: MKL): ask the build.
            cfg = torch.__config__.show()
            for kind in ("mkl", "openblas", "blis", "accelerate"):
                if f"BLAS_INFO={kind}" in cfg:
                    info["blas"] = kind
            info["blas_lib"] = path or lib
        else:
            info["blas"], info["blas_lib"] = _kind(path), path
    else:
        import numpy
        lib = None
        core = os.path.join(os.path.dirname(numpy.__file__), "core")
        for f in sorted(os.listdir(core)) if os.path.isdir(core) else []:
            if f.startswith("_multiarray_umath") and ".so" in f:
                lib = os.path.join(core, f)
        path, _ = _provider(lib, ("cblas_sgemm", "scipy_cblas_sgemm", "sgemm_")) if lib else (None, None)
        if path is None or "_multiarray_umath" in os.path.basename(path):
            info["blas_lib"] = path or "?"
            name = ""
            try:
                cfg = numpy.show_config(mode="dicts")  # numpy >= 1.25
                name = str(cfg.get("Build Dependencies", {}).get("blas", {}).get("name", ""))
            except TypeError:
                pass
            info["blas"] = _kind(name) if name else "unknown"
            if "openblas" in name.lower():
                info["blas"] = "openblas"
        else:
            info["blas"], info["blas_lib"] = _kind(path), path
    if info["blas"] == "openblas" and os.path.exists(info["blas_lib"]):
        info.update(_openblas_details(info["blas_lib"]))
    return info


def sgemm1024_gflops(which):
    n = 1024
    if which == "torch":
        import torch
        a, b = torch.rand(n, n), torch.rand(n, n)
        c = torch.empty(n, n)
        fn = lambda: torch.mm(a, b, out=c)  # noqa: E731
    else:
        import numpy as np
        a = np.random.default_rng(0).random((n, n), dtype=np.float32)
        b, c = a.copy(), np.empty((n, n), np.float32)
        fn = lambda: np.matmul(a, b, out=c)  # noqa: E731
    fn()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best / 1e9


def thread_label(which, torch_threads=None):
    """T/B for the BENCH lines' threads=: torch's intra-op threads (none for numpy) / the
    BLAS's threads as OpenBLAS reports them (else OPENBLAS_NUM_THREADS, else "-")."""
    b = blas_info(which).get("blas_threads") or os.environ.get("OPENBLAS_NUM_THREADS") or "-"
    return f"{torch_threads}/{b}" if torch_threads is not None else f"{b}"


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    if which == "torch":
        import torch
        version = torch.__version__
        if len(sys.argv) > 2:
            torch.set_num_threads(int(sys.argv[2]))
    elif which == "numpy":
        import numpy
        version = numpy.__version__
    else:
        sys.exit("usage: pyenv.py torch|numpy")
    info = blas_info(which)
    g = sgemm1024_gflops(which)
    info["sgemm1024_gflops"] = f"{g:.1f}"
    info["blas_ok"] = "yes" if info["blas"] in ("openblas", "mkl", "blis") and g >= SLOW_GFLOPS else "no"
    fields = " ".join(f"{k}={str(v).replace(' ', '_')}" for k, v in info.items())
    print(f"BENCH name=env what={which} version={version} {fields}", flush=True)


if __name__ == "__main__":
    main()
