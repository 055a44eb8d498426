#!/bin/sh
# tools/gpu_tune.sh - the choices a lent GPU must make that no CPU device can: the GPU-tuned
# GEMM's tile (NN_CL_GEMM, src/opencl/gemm_plan.c) and the fused attention's kernels
# (NN_CL_ATTN=tiled|flash, src/ops/attention.c), timed side by side in one run, with the GPT,
# MLP and CNN under the default and the best tile, then the OpenCL tests under the best tile
# and the attention cases with flash. About 7 minutes on an H200 (its tests: about 2);
# needs no compiler there.
#
#   here:  make -j2 gpu-report-build bench/gpt_bench bench/attention_bench
#   there: sh tools/gpu_tune.sh [OUT]      (from the tree; OUT defaults to $OUT, else .)
#
# Writes OUT/gpu-tune.log (BENCH lines prefixed by the tile or the knob, a BEST line) and
# OUT/tests.log, OUT/tests-flash.log. NVIDIA's driver library is used directly where it is in a usual folder
# (its ICD loader may offer PoCL first); NN_OPENCL_LIBRARY set beforehand wins. What it
# says goes into the defaults by hand: nn__gemm_config's GPU branch, NN__ATTN_FLASH_DEFAULT
# in kernels/attention_tile.h.
set -u
cd "$(dirname "$0")/.." || exit 2
OUTDIR=${1:-${OUT:-.}}
mkdir -p "$OUTDIR" || exit 2
B=build/gpu-report
for f in "$B/bench/nn_bench" "$B/tests/nn_test" bench/gpt_bench bench/attention_bench; do
    [ -x "$f" ] || { echo "gpu_tune.sh: no $f: run 'make -j2 gpu-report-build bench/gpt_bench bench/attention_bench' first" >&2; exit 2; }
done
if [ -z "${NN_OPENCL_LIBRARY:-}" ]; then
    for f in /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1; do
        [ -f "$f" ] && { export NN_OPENCL_LIBRARY=$f; break; }
    done
fi
export NN_CACHE_DIR=${NN_CACHE_DIR:-/tmp/nn-gpu-tune-cache}
mkdir -p "$NN_CACHE_DIR"
T0=$(date +%s)
el() { echo "== t=$(($(date +%s) - T0))s $*"; }
exec >"$OUTDIR/gpu-tune.log" 2>&1
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "NN_OPENCL_LIBRARY=${NN_OPENCL_LIBRARY:-unset}"
el "GEMM tiles (WPT_M,WPT_N,VW,WG_M,WG_N,TS_K; default 4,4,4,16,16,16)"
best= bestg=0
for g in "" 8,8,4,16,16,16 8,8,4,16,16,8 8,8,4,16,16,32 8,4,4,16,16,16 4,8,4,16,16,16 8,8,8,16,16,16 8,8,4,8,16,16 4,4,4,16,16,32; do
    out=$(NN_CL_GEMM=$g timeout 40 "$B/bench/nn_bench" sgemm 0 2>&1 | grep '^BENCH')
    echo "$out" | sed "s/^/tile=${g:-default} /"
    v=$(echo "$out" | awk '/n=2048/ { for (i = 1; i <= NF; i++) if ($i ~ /^gflops=/) { sub("gflops=", "", $i); print int($i) } }')
    if [ -n "$v" ] && [ "$v" -gt "$bestg" ]; then bestg=$v best=$g; fi
done
echo "BEST tile=${best:-default} gflops_2048=$bestg"
el "fused attention, B=4 H=8 D=64 causal, forward+backward"
for T in 1024 4096; do for A in tiled flash; do
    NN_CL_ATTN=$A timeout 40 ./bench/attention_bench gpu $T fused causal 2>&1 | grep '^BENCH' | sed "s/^/attn=$A /"
done; done
el "GPT, MLP and CNN training under the default and the best tile"
for g in "" "$best"; do
    for m in tiny gpt2s; do NN_CL_GEMM=$g timeout 40 ./bench/gpt_bench train gpu $m 2>&1 | grep '^BENCH' | sed "s/^/tile=${g:-default} /"; done
    for w in mlp cnn; do NN_CL_GEMM=$g timeout 60 "$B/bench/nn_bench" $w 0 2>&1 | grep '^BENCH' | sed "s/^/tile=${g:-default} /"; done
done
el "tests on OpenCL under the best tile (all), then the attention cases with NN_CL_ATTN=flash"
NN_CL_GEMM=$best NN_TEST_BACKENDS=opencl timeout 200 "$B/tests/nn_test" >"$OUTDIR/tests.log" 2>&1
echo "tests tile=${best:-default} rc=$?: $(tail -n 1 "$OUTDIR/tests.log")"
grep '^FAIL' "$OUTDIR/tests.log" | head -n 20
NN_CL_ATTN=flash NN_CL_GEMM=$best NN_TEST_BACKENDS=opencl NN_TEST_FILTER=attention timeout 120 "$B/tests/nn_test" >"$OUTDIR/tests-flash.log" 2>&1
echo "attention tests flash rc=$?: $(tail -n 1 "$OUTDIR/tests-flash.log")"
grep '^FAIL' "$OUTDIR/tests-flash.log" | head -n 20
el done
