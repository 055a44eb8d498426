#!/bin/sh
# bench/run.sh - what `make bench` runs: nn.h's figures on the CPU backend and on every
# OpenCL device, PyTorch's (and OpenBLAS's, and CLBlast's if installed) on the same work,
# then their ratios. Every figure is one line:
#     BENCH name=sgemm backend=B n=N gflops=X
#     BENCH name=mlp_train backend=B batch=128 samples_per_sec=X
#     BENCH name=conv2d backend=B shape=NxCxHxWkK pass=fwd|bwd gflops=X ms=X
#     BENCH name=cnn_train backend=B batch=64 samples_per_sec=X
#     BENCH name=start backend=B cold_ms=X warm_ms=X
#     BENCH name=ratio what=W value=X
# Other lines start with '#'. Builds only through make (bench/nn_bench is make's
# prerequisite; bench/sgemm_clblast has its own rule and is optional).
set -u
cd "$(dirname "$0")/.." || exit 1
export NN_LOG=warn # no "backend: ..." lines between the figures

NN=./bench/nn_bench
PY=/usr/bin/python3
T0=$(date +%s)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nn-bench.XXXXXX") || exit 1
LINES=$WORK/lines
: >"$LINES"
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

[ -x "$NN" ] || { echo "run.sh: $NN is missing; run it as 'make bench'" >&2; exit 1; }

# Lines go to stdout and are kept for the ratios.
keep() { tee -a "$LINES"; }
note() { echo "# $*"; }

# "SELECTOR NAME" per backend: cpu first, then the OpenCL devices.
DEVICES=$("$NN" devices) || { echo "run.sh: nn_bench devices failed" >&2; exit 1; }
CL_NAME=$(echo "$DEVICES" | awk '$1 != "cpu" { print $2; exit }')
note "backends: $(echo "$DEVICES" | awk '{ printf "%s%s", sep, $2; sep = ", " }')"

# ---- nn.h ------------------------------------------------------------------------------
echo "$DEVICES" | while read -r sel name; do
    "$NN" sgemm "$sel" | keep
    "$NN" mlp "$sel" | keep
    "$NN" conv "$sel" | keep
    "$NN" cnn "$sel" | keep
    # Start-up: one process with empty caches, one with them filled. PoCL keeps its own
    # kernel cache, so it is emptied too; otherwise "cold" would only be nn.h's cache cold.
    c=$WORK/cache-$sel
    mkdir -p "$c/nn" "$c/pocl"
    cold=$(NN_CACHE_DIR="$c/nn" POCL_CACHE_DIR="$c/pocl" "$NN" start "$sel" | awk '{ print $2 }')
    warm=$(NN_CACHE_DIR="$c/nn" POCL_CACHE_DIR="$c/pocl" "$NN" start "$sel" | awk '{ print $2 }')
    rm -rf "$c"
    if [ -n "$cold" ] && [ -n "$warm" ]; then
        echo "BENCH name=start backend=$name cold_ms=$cold warm_ms=$warm" | keep
    else
        note "start-up time on $name failed"
    fi
done

# ---- PyTorch and OpenBLAS ----------------------------------------------------------------
# OPENBLAS_CORETYPE=SkylakeX is OpenBLAS's fastest x86 kernel set, but it needs AVX-512 and
# dies with SIGILL without it; there OpenBLAS's own detection picks the best one.
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    CORETYPE=SkylakeX
else
    CORETYPE=
    note "no AVX-512 here: OPENBLAS_CORETYPE left to OpenBLAS's detection"
fi
pyrun() { # pyrun ENV... -- runs $PY with OpenBLAS's core type and the given variables
    if [ -n "$CORETYPE" ]; then env OPENBLAS_CORETYPE="$CORETYPE" "$@"; else env "$@"; fi
}
if "$PY" -c 'import torch' 2>/dev/null; then
    pyrun OMP_WAIT_POLICY=PASSIVE "$PY" bench/sgemm_torch.py torch | keep
    pyrun OMP_WAIT_POLICY=PASSIVE "$PY" bench/mlp_torch.py | keep
    pyrun OMP_WAIT_POLICY=PASSIVE "$PY" bench/cnn_torch.py | keep
else
    note "no PyTorch for $PY (python3-torch); skipping its figures"
fi
if "$PY" -c 'import numpy' 2>/dev/null; then
    pyrun OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE "$PY" bench/sgemm_torch.py numpy | keep
else
    note "no NumPy for $PY (python3-numpy); skipping OpenBLAS's figures"
fi

# ---- CLBlast (optional) ----------------------------------------------------------------------
if [ -z "$CL_NAME" ]; then
    note "no OpenCL device: skipping CLBlast"
elif make -s bench/sgemm_clblast >/dev/null 2>&1; then
    ./bench/sgemm_clblast | keep
else
    note "CLBlast is not installed (libclblast-dev): skipping its figures"
fi

# ---- ratios ------------------------------------------------------------------------------------
# fig NAME BACKEND KEY=VALUE FIELD: the FIELD of the kept line that matches.
fig() {
    awk -v n="name=$1" -v b="backend=$2" -v k="$3" -v f="$4" '
        { hit = 0; for (i = 1; i <= NF; i++) if ($i == n || $i == b || $i == k) hit++ }
        hit == 3 { for (i = 1; i <= NF; i++) if (index($i, f "=") == 1) v = substr($i, length(f) + 2) }
        END { print v }' "$LINES"
}
ratio() { # ratio WHAT A B: A/B when both figures exist
    if [ -n "$2" ] && [ -n "$3" ]; then
        awk -v w="$1" -v a="$2" -v b="$3" 'BEGIN { if (b > 0) printf "BENCH name=ratio what=%s value=%.3f\n", w, a / b }'
    else
        note "ratio $1: a figure is missing"
    fi
}
MLP_CPU=$(fig mlp_train cpu batch=128 samples_per_sec)
MLP_TORCH=$(fig mlp_train torch batch=128 samples_per_sec)
ratio mlp_train_cpu_vs_torch "$MLP_CPU" "$MLP_TORCH"
CNN_CPU=$(fig cnn_train cpu batch=64 samples_per_sec)
CNN_TORCH=$(fig cnn_train torch batch=64 samples_per_sec)
ratio cnn_train_cpu_vs_torch "$CNN_CPU" "$CNN_TORCH"
ratio sgemm1024_cpu_vs_openblas "$(fig sgemm cpu n=1024 gflops)" "$(fig sgemm openblas n=1024 gflops)"
ratio sgemm1024_cpu_vs_torch "$(fig sgemm cpu n=1024 gflops)" "$(fig sgemm torch n=1024 gflops)"
if [ -n "$CL_NAME" ]; then
    ratio mlp_train_opencl_vs_torch "$(fig mlp_train "$CL_NAME" batch=128 samples_per_sec)" "$MLP_TORCH"
    ratio mlp_train_opencl_vs_cpu "$(fig mlp_train "$CL_NAME" batch=128 samples_per_sec)" "$MLP_CPU"
    ratio cnn_train_opencl_vs_torch "$(fig cnn_train "$CL_NAME" batch=64 samples_per_sec)" "$CNN_TORCH"
    ratio sgemm1024_opencl_vs_clblast "$(fig sgemm "$CL_NAME" n=1024 gflops)" "$(fig sgemm "clblast:$CL_NAME" n=1024 gflops)"
fi
note "opencl = $CL_NAME; total $(($(date +%s) - T0)) s"
