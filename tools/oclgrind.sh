#!/bin/sh
# make test-oclgrind: the op checker's cases on Oclgrind (a simulator that checks every
# OpenCL API call and memory access), with NVIDIA-like limits (48 KiB of local memory,
# 1,024 work-items a group), in the CPU-tuning and the GPU-tuning shapes:
#
#   1. survey   every op-checker case compiled, not run (NN_TEST_SURVEY): for each graph its
#               (op kind, function) pairs, kernels and cost (--check-api: the API calls of
#               compiling are checked for all of them);
#   2. pick     for each (tuning, pair or kernel) the cheapest case that has it and the
#               costliest one up to NN_OCLGRIND_CAP (tools/oclgrind_pick.awk);
#   3. api      those cases run under --check-api (NN_TEST_CASES);
#   4. races    the cheapest case of every kernel of the kernel files that use __local memory
#               or barriers (grep), per tuning, under --data-races too;
#   5. small    the fusion cases (tests/test_fuse.c: GEMM epilogues, folded tails) on a device of
#               32 work-items a group and 32 KiB of local memory, whose GPU tuning takes the
#               GEMM's direct strategy (kernels/gemm.cl's USE_LOCAL 0), which no other pass reaches;
#   6. check    any report of Oclgrind fails the run, naming the kernel, the .cl file and
#               line (the line's text read from the file) and the case; so does any case the
#               test binary fails (tools/oclgrind_check.awk, which also lists what is skipped).
#
# Environment: NN_OCLGRIND_OUT (the logs: default tests/oclgrind-out), NN_OCLGRIND_CAP
# (default 65536 work-items), NN_OCLGRIND_LIB (Oclgrind's OpenCL library, loaded through
# NN_OPENCL_LIBRARY: default /usr/lib/oclgrind/liboclgrind-rt.so), NN_OCLGRIND_BIN (the
# test binary: default tests/nn_test). Programs are built from source in every pass
# (NN_CACHE_DIR=off). Needs Debian's oclgrind package (Oclgrind 21.10).
set -u
cd "$(dirname "$0")/.."
BIN=${NN_OCLGRIND_BIN:-./tests/nn_test}
OUT=${NN_OCLGRIND_OUT:-tests/oclgrind-out}
CAP=${NN_OCLGRIND_CAP:-65536}
LIB=${NN_OCLGRIND_LIB:-/usr/lib/oclgrind/liboclgrind-rt.so}
LIMITS="--local-mem-size 49152 --max-wgsize 1024"

if ! command -v oclgrind >/dev/null 2>&1 || [ ! -f "$LIB" ]; then
    echo "test-oclgrind: Oclgrind not found (oclgrind, $LIB): apt-get install oclgrind"
    exit 1
fi
[ -x "$BIN" ] || { echo "test-oclgrind: no test binary $BIN (make tests/nn_test)"; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT" || exit 1

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# pass NAME [oclgrind options]: the test binary under Oclgrind on both tunings of its device;
# stdout to OUT/NAME.log, stderr (Oclgrind's reports, the binary's markers) to OUT/NAME.err.
pass() {
    name=$1
    shift
    t=$(now)
    # NN_CL_GUARDS=0: Oclgrind checks every access itself, and reads or writes past a
    # buffer's end would land in nn.h's guard bytes, where it sees nothing wrong
    NN_OPENCL_LIBRARY="$LIB" NN_CACHE_DIR=off NN_CL_GUARDS=0 NN_TEST_BACKENDS=opencl,gpu-tuning NN_TEST_TIME=1 \
        oclgrind "$@" $LIMITS "$BIN" >"$OUT/$name.log" 2>"$OUT/$name.err"
    rc=$?
    last=$(tail -n 1 "$OUT/$name.log")
    echo "test-oclgrind: pass $name: $last ($(since "$t") s)"
    case "$last" in
    *" passed, "*" failed, "*" skipped") ;;
    *) echo "test-oclgrind: pass $name: the test binary did not finish (status $rc); see $OUT/$name.log, $OUT/$name.err"
       unfinished=1 ;;
    esac
}

unfinished=0
start=$(now)
NN_TEST_SURVEY="$OUT/survey.tsv" pass survey --check-api
[ -s "$OUT/survey.tsv" ] || { echo "test-oclgrind: the survey wrote nothing"; exit 1; }

local_files=$(grep -l -e '__local' -e 'barrier' kernels/*.cl | sed 's|^kernels/||; s|\.cl$||' | tr '\n' '|' | sed 's/|$//')
: >"$OUT/api.txt"
: >"$OUT/races.txt"
awk -v cap="$CAP" -v local_re="^k:($local_files)/" -v api="$OUT/api.txt" -v races="$OUT/races.txt" \
    -f tools/oclgrind_pick.awk "$OUT/survey.tsv" | tee "$OUT/pick.txt" | sed 's/^/test-oclgrind: /'

NN_TEST_CASES="$OUT/api.txt" pass api --check-api
NN_TEST_CASES="$OUT/races.txt" pass races --check-api --data-races
grep '^coverage ' "$OUT/api.log" | sed 's/^/test-oclgrind: api: /'
LIMITS="--local-mem-size 32768 --max-wgsize 32"
NN_TEST_FILTER=fuse pass small --check-api

awk -f tools/oclgrind_check.awk "$OUT/survey.err" "$OUT/api.err" "$OUT/races.err" "$OUT/small.err" | tee "$OUT/check.txt"
bad=$?
# tee's status hides awk's: the report says it
grep -q '^oclgrind: ERROR\|^oclgrind: FAIL' "$OUT/check.txt" && bad=1
echo "test-oclgrind: $(since "$start") s in all; logs in $OUT"
if [ "$bad" -ne 0 ] || [ "$unfinished" -ne 0 ]; then
    echo "test-oclgrind: FAILED"
    exit 1
fi
echo "test-oclgrind: passed"
