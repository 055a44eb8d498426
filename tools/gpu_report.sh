#!/bin/sh
# tools/gpu_report.sh - what a machine with a GPU can tell about nn.h, in one command that
# ends inside 10 minutes and needs there no compiler, package, Python or network: only the
# folder `make gpu-report-build` makes on a machine with a compiler (build/gpu-report/: the
# test binary, bench/nn_bench, tools/cl_facts, this script, and their sources).
#
#   make gpu-report-build                          # here: build/gpu-report/ (a few MiB)
#   sh build/gpu-report/gpu_report.sh [OUT]        # there, from the tree or the folder alone
#   make gpu-report                                # both, on this machine's OpenCL devices
#
# Steps, each with its own time limit inside the whole run's:
#   machine  OS, C library, CPU, memory, nvidia-smi, the OpenCL libraries and .icd files here
#   facts    tools/cl_facts: the OpenCL library nn.h loads and why that one, then clinfo's facts
#            of every device (driver, OpenCL C version, local memory, work-group limits,
#            extensions), nn.h's tuning of it, and a small check against the CPU backend
#   tests    tests/nn_test on every OpenCL device (NN_TEST_BACKENDS=opencl,gpu-tuning), the
#            GPUs first (NN_TEST_DEVICES)
#   profile  NN_CL_PROFILE=1 bench/nn_bench mlp and cnn on the first GPU (else the first
#            OpenCL device): each kernel's device time a step, and the runtime's time between
#            kernels
#   bench    make bench's figures of nn.h on each GPU, or every OpenCL device when there is
#            no GPU (bench/run.sh, ONLY=nn, 1 round)
#   cpu      tests/nn_test on the CPU backend (this machine's CPU), with the time left
# into one log, OUT/gpu-report.log, and a short summary, OUT/gpu-report-summary.txt, printed
# last. When the binaries do not start here (a C library older than the build's) and a C
# compiler is here, they are built again from the folder's sources first.
#
# OUT: where the two files go (default $OUT when set, else ./gpu-report-out).
# GPU_REPORT_SECONDS=540   the whole run's limit; a step cut off leaves what it printed in the
#                          log, and the summary says so
# GPU_REPORT_STEPS="facts tests profile bench cpu"   the steps to run (machine always runs)
# GPU_REPORT_BENCH="0 1"   nn_bench's device selectors (default: the GPUs, else every OpenCL device)
# Exit status: 0 when every step ran to its end and passed, else 1.
set -u

T_START=$(date +%s)
BUDGET=${GPU_REPORT_SECONDS:-540}
STEPS=${GPU_REPORT_STEPS:-facts tests profile bench cpu}
case $BUDGET in '' | *[!0-9]*) echo "gpu_report.sh: GPU_REPORT_SECONDS must be a number of seconds" >&2; exit 2 ;; esac
DEADLINE=$((T_START + BUDGET))
RESERVE=10 # seconds kept for the summary

HERE=$(cd "$(dirname "$0")" && pwd)
if [ -x "$HERE/tests/nn_test" ]; then
    B=$HERE
elif [ -x "$HERE/../build/gpu-report/tests/nn_test" ]; then
    B=$(cd "$HERE/../build/gpu-report" && pwd)
else
    echo "gpu_report.sh: no build/gpu-report/ beside this script: run 'make gpu-report-build' on a machine" \
         "with a C compiler first, and bring that folder (or the tree with it)" >&2
    exit 2
fi

OUTDIR=${1:-${OUT:-gpu-report-out}}
mkdir -p "$OUTDIR" || exit 2
OUTDIR=$(cd "$OUTDIR" && pwd)
LOG=$OUTDIR/gpu-report.log
SUM=$OUTDIR/gpu-report-summary.txt
: >"$LOG" || exit 2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nn-gpu-report.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
export NN_CACHE_DIR="$WORK/cache" # a fresh program cache, shared by the steps
mkdir -p "$NN_CACHE_DIR"

TIMEOUT=$(command -v timeout 2>/dev/null || true)
PROBLEMS=
STEP_TIMES=
problem() { PROBLEMS="${PROBLEMS:+$PROBLEMS; }$*"; }
say() { echo "gpu_report: $*"; }
log() { echo "$*" >>"$LOG"; }
left() { echo $((DEADLINE - $(date +%s) - RESERVE)); }

# limited SECONDS CMD...: CMD, stopped after SECONDS (status 124 then), with coreutils' or
# BusyBox's timeout, else a watchdog of our own
limited() {
    lim=$1
    shift
    if [ -n "$TIMEOUT" ]; then
        "$TIMEOUT" -k 10 "$lim" "$@"
        return $?
    fi
    rm -f "$WORK/cut"
    "$@" &
    cmd=$!
    ( # its sleeps go with it when it is stopped
        trap 'kill $nap 2>/dev/null; exit 0' TERM
        sleep "$lim" & nap=$!
        wait $nap && : >"$WORK/cut" && kill -TERM "$cmd" && { sleep 10 & nap=$!; wait $nap; } && kill -KILL "$cmd"
    ) </dev/null >/dev/null 2>&1 &
    dog=$!
    wait "$cmd"
    st=$?
    kill "$dog" 2>/dev/null
    [ -f "$WORK/cut" ] && st=124
    return $st
}

# step NAME CAP CMD...: CMD's output into the log (and into $WORK/NAME.out), in at most CAP
# seconds, less when the run has less left; STEP_RC and STEP_S say how it went (STEP_RC
# 124: cut off; 125: not run, no time left). CAP "fn": CMD is a function of this script,
# which limits what it runs itself.
step() {
    name=$1 cap=$2
    shift 2
    if [ "$cap" = fn ]; then
        log ""
        log "==== $name"
        at=$(wc -c <"$LOG")
        t0=$(date +%s)
        "$@" </dev/null >>"$LOG" 2>&1
        STEP_RC=$?
        STEP_S=$(($(date +%s) - t0))
        tail -c +$((at + 1)) "$LOG" >"$WORK/$name.out"
        log "==== $name: exit status $STEP_RC in $STEP_S s"
        STEP_TIMES="${STEP_TIMES:+$STEP_TIMES, }$name $STEP_S s"
        return
    fi
    lim=$(left)
    [ "$lim" -gt "$cap" ] && lim=$cap
    STEP_S=0
    if [ "$lim" -lt 15 ]; then
        log "==== $name: not run: $(left) s left of the run's $BUDGET"
        say "$name: not run (no time left)"
        problem "$name not run (no time left)"
        : >"$WORK/$name.out"
        STEP_RC=125
        return
    fi
    say "$name: $* (at most $lim s)"
    log ""
    log "==== $name: $* (at most $lim s) at $(date -u +%H:%M:%S)"
    at=$(wc -c <"$LOG")
    t0=$(date +%s)
    limited "$lim" "$@" </dev/null >>"$LOG" 2>&1
    STEP_RC=$?
    STEP_S=$(($(date +%s) - t0))
    tail -c +$((at + 1)) "$LOG" >"$WORK/$name.out"
    if [ $STEP_RC -eq 124 ]; then
        log "==== $name: CUT OFF after $STEP_S s (its limit)"
        problem "$name cut off after $STEP_S s"
    else
        log "==== $name: exit status $STEP_RC in $STEP_S s"
    fi
    STEP_TIMES="${STEP_TIMES:+$STEP_TIMES, }$name $STEP_S s"
    say "$name: exit status $STEP_RC in $STEP_S s"
}

wants() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- machine ---------------------------------------------------------------------------------
machine() {
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "host: $(uname -n 2>/dev/null); $(uname -srm 2>/dev/null)"
    [ -r /etc/os-release ] && echo "os: $(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release)"
    echo "C library: $(getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>&1 | head -n 1)"
    echo "cpu: $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)," \
         "$(nproc 2>/dev/null || echo '?') cores; flags: $(grep -o -w -E 'avx2|fma|avx512f|avx512bw|avx512_bf16|amx_tile' \
         /proc/cpuinfo 2>/dev/null | sort -u | tr '\n' ' ')"
    echo "memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)"
    echo "compiler: $(command -v cc || command -v gcc || command -v clang || echo none)"
    for v in LD_LIBRARY_PATH OCL_ICD_VENDORS NN_OPENCL_LIBRARY NN_DEVICE NN_CL_TUNING CUDA_VISIBLE_DEVICES \
             NVIDIA_VISIBLE_DEVICES NVIDIA_DRIVER_CAPABILITIES; do
        eval "val=\${$v-}"
        [ -n "$val" ] && echo "env: $v=$val"
    done
    if command -v nvidia-smi >/dev/null 2>&1; then
        echo "nvidia-smi:"
        limited 20 nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap,clocks.max.sm,pci.bus_id \
            --format=csv 2>&1 | sed 's/^/  /'
        limited 20 nvidia-smi 2>&1 | sed 's/^/  /'
    else
        echo "nvidia-smi: not here"
    fi
    echo "OpenCL libraries in the usual folders:"
    for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib/aarch64-linux-gnu /usr/lib /usr/local/lib \
             /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/wsl/lib /run/nvidia/driver/usr/lib/x86_64-linux-gnu; do
        for f in "$d"/libOpenCL.so* "$d"/libnvidia-opencl.so* "$d"/libcuda.so.1 "$d"/libpocl.so*; do
            [ -e "$f" ] && echo "  $f$( [ -L "$f" ] && echo " -> $(readlink "$f")")"
        done
    done
    if command -v ldconfig >/dev/null 2>&1 || [ -x /sbin/ldconfig ]; then
        echo "ldconfig -p (OpenCL):"
        { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -i -E 'opencl|nvidia-opencl' | sed 's/^/ /'
    fi
    vd=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
    echo ".icd files in $vd:"
    if [ -d "$vd" ]; then
        for f in "$vd"/*.icd; do [ -f "$f" ] && echo "  $f: $(head -c 200 "$f" | head -n 1)"; done
    else
        echo "  (no such folder)"
    fi
    echo "the build:"
    sed 's/^/  /' "$B/BUILD-INFO" 2>/dev/null
}
step machine fn machine

# ---- the binaries: the folder's, or built again here -----------------------------------------
BIN=$B
"$BIN/bench/nn_bench" >"$WORK/probe" 2>&1
if [ $? -ne 2 ]; then # its usage exits 2; 127 and the like: it cannot start here
    log ""
    log "==== the folder's binaries do not start here:"
    cat "$WORK/probe" >>"$LOG"
    CC_HERE=$(command -v cc || command -v gcc || command -v clang || true)
    if [ -n "$CC_HERE" ] && [ -f "$B/src/nn.h" ]; then
        rebuild() { # the Makefile's lines, the three at once, with -ldl where dlopen is not in the C library
            mkdir -p "$WORK/bin/tests" "$WORK/bin/bench" "$WORK/bin/tools" &&
            cp "$B/bench/run.sh" "$B/bench/report.awk" "$WORK/bin/bench/" || return 1
            DL=$(printf '#include <dlfcn.h>\nint main(void){return dlopen("x", 0) != 0;}\n' |
                 "$CC_HERE" -x c - -o "$WORK/dl" >/dev/null 2>&1 || echo -ldl)
            echo "$CC_HERE -O2 -I$B/src -o $WORK/bin/bench/nn_bench $B/src/bench/nn_bench.c -lm -lpthread $DL"
            limited 240 "$CC_HERE" -O2 -I"$B/src" -o "$WORK/bin/bench/nn_bench" "$B/src/bench/nn_bench.c" -lm -lpthread $DL &
            p1=$!
            echo "$CC_HERE -O2 -I$B/src -o $WORK/bin/tools/cl_facts $B/src/tools/cl_facts.c -lm -lpthread $DL"
            limited 240 "$CC_HERE" -O2 -I"$B/src" -o "$WORK/bin/tools/cl_facts" "$B/src/tools/cl_facts.c" -lm -lpthread $DL &
            p2=$!
            echo "$CC_HERE -O2 -o $WORK/bin/tests/nn_test $B/src/tests/*.c -lm -lpthread $DL"
            limited 240 "$CC_HERE" -O2 -o "$WORK/bin/tests/nn_test" "$B"/src/tests/*.c -lm -lpthread $DL
            st=$?
            wait $p1 || st=1
            wait $p2 || st=1
            return $st
        }
        step rebuild fn rebuild
        if [ $STEP_RC -eq 0 ]; then BIN=$WORK/bin; else problem "the binaries do not start here and do not build here"; fi
    else
        problem "the binaries do not start here ($(head -n 1 "$WORK/probe")), and no C compiler is here to build them"
    fi
fi

# ---- facts, tests, bench, cpu ------------------------------------------------------------------
FACTS_RC=- TESTS_RC=- BENCH_RC=- CPU_RC=-
if wants facts; then
    step facts 90 "$BIN/tools/cl_facts"
    FACTS_RC=$STEP_RC
    [ $FACTS_RC -ne 0 ] && [ $FACTS_RC -ne 124 ] && problem "cl_facts: a device did not open or failed its check (exit status $FACTS_RC)"
fi
# the GPUs first: a machine with PoCL beside the GPU (its ICD loader finds both) spent the whole
# tests step on the CPU device before (cl_facts' SUMMARY lines say which devices are GPUs)
GPUS= OTHERS=
if [ -s "$WORK/facts.out" ]; then
    GPUS=$(sed -n 's/^SUMMARY device \([0-9][0-9]*\): .*(GPU; .*/\1/p' "$WORK/facts.out" | tr '\n' ' ')
    OTHERS=$(grep '^SUMMARY device [0-9]' "$WORK/facts.out" | grep -v '(GPU; ' |
        sed -n 's/^SUMMARY device \([0-9][0-9]*\): .*/\1/p' | tr '\n' ' ')
fi
ORDER=
[ -n "$GPUS" ] && ORDER=$(echo $GPUS $OTHERS | tr ' ' ',')
if wants tests; then
    step tests 300 env NN_TEST_BACKENDS=opencl,gpu-tuning NN_TEST_TIME=1 ${ORDER:+NN_TEST_DEVICES=$ORDER} "$BIN/tests/nn_test"
    TESTS_RC=$STEP_RC TESTS_S=$STEP_S
    [ $TESTS_RC -ne 0 ] && [ $TESTS_RC -lt 124 ] && problem "tests on OpenCL failed"
fi
PROFILE_RC=-
if wants profile; then
    sel=${GPU_REPORT_BENCH:-$GPUS}
    [ -z "$sel" ] && sel=$("$BIN/bench/nn_bench" devices 2>/dev/null | awk '$1 != "cpu" { printf "%s%s", s, $1; s = " " }')
    sel=${sel%% *}
    if [ -n "$sel" ]; then
        step profile 90 env NN_CL_PROFILE=1 sh -c '"$1" mlp "$2" && "$1" cnn "$2"' sh "$BIN/bench/nn_bench" "$sel"
        PROFILE_RC=$STEP_RC
        [ $PROFILE_RC -ne 0 ] && [ $PROFILE_RC -lt 124 ] && problem "NN_CL_PROFILE's runs failed (exit status $PROFILE_RC)"
    fi
fi
if wants bench; then
    sel=${GPU_REPORT_BENCH:-$GPUS}
    [ -z "$sel" ] && sel=$("$BIN/bench/nn_bench" devices 2>/dev/null | awk '$1 != "cpu" { printf "%s%s", s, $1; s = " " }')
    if [ -n "$sel" ]; then
        step bench 240 env ONLY=nn ROUNDS=1 BACKENDS="$sel" FIGURE_TIMEOUT=150 sh "$BIN/bench/run.sh"
        BENCH_RC=$STEP_RC BENCH_S=$STEP_S
        [ $BENCH_RC -ne 0 ] && [ $BENCH_RC -lt 124 ] && problem "bench failed (exit status $BENCH_RC)"
    else
        log ""
        log "==== bench: no OpenCL device to measure"
        BENCH_RC=0
    fi
fi
if wants cpu; then
    step cpu 180 env NN_TEST_BACKENDS=cpu "$BIN/tests/nn_test"
    CPU_RC=$STEP_RC CPU_S=$STEP_S
    [ $CPU_RC -ne 0 ] && [ $CPU_RC -lt 124 ] && problem "tests on the CPU backend failed"
fi

# ---- the summary ------------------------------------------------------------------------------
# tests_line NAME LABEL SECONDS RC: the step's count line, its failures, the cut
tests_line() {
    f=$WORK/$1.out
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$f" | tail -n 1)
    if [ "$4" = 124 ]; then
        echo "$2: CUT OFF after $3 s; $(grep -c '^ok ' "$f") passed, $(grep -c '^FAIL' "$f") failed so far;" \
             "the last line: $(grep -E '^(ok |FAIL|skipped|== )' "$f" | tail -n 1 | cut -c 1-100)"
    elif [ "$4" = 125 ]; then
        echo "$2: not run (no time left)"
    else
        echo "$2: ${last:-no count line (exit status $4)} ($3 s)"
    fi
    grep -E '^FAIL' "$f" | head -n 20 | sed 's/^/  /'
    [ "$(grep -c '^FAIL' "$f")" -gt 20 ] && echo "  ... $(($(grep -c '^FAIL' "$f") - 20)) more FAIL lines in the log"
    grep -E '^(== backend|\(no OpenCL device found\))' "$f" | sed 's/^/  /'
}
{
    echo "nn.h GPU report, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n 2>/dev/null)"
    sed -n 's/^built: /built: /p' "$B/BUILD-INFO" 2>/dev/null | head -n 1
    awk '/^(os|C library|cpu|memory): / { sub(/; flags:.*/, ""); printf "%s%s", sep, $0; sep = "; " } END { print "" }' \
        "$WORK/machine.out"
    awk '/^nvidia-smi:/ { on = 1; next } on && /^  [0-9]+, / { sub(/^  /, ""); print "nvidia-smi: " $0; next } on && !/^  / { on = 0 }' \
        "$WORK/machine.out"
    if wants facts; then
        lib=$(grep '^library: ' "$WORK/facts.out" | head -n 1)
        echo "OpenCL ${lib:-library: (cl_facts printed none; exit status $FACTS_RC)}"
        sed -n 's/^SUMMARY //p' "$WORK/facts.out"
        grep -E '^  nn.h: (cannot|check FAILED)' "$WORK/facts.out" | head -n 8
        [ "$FACTS_RC" = 124 ] && echo "cl_facts: CUT OFF"
    fi
    if wants tests; then tests_line tests "tests on every OpenCL device (opencl, gpu-tuning)" "${TESTS_S:-0}" "$TESTS_RC"; fi
    if wants tests && [ -s "$WORK/tests.out" ]; then
        # "ok      NAME [BACKEND] W ms, cpu C ms": NAME may hold brackets, the backend's are
        # the ones followed by the time
        echo "  slowest cases:$(awk '/^(ok |FAIL)/ && match($0, / \[[^]]*\] [0-9.]+ ms, cpu /) {
            name = substr($0, 9, RSTART - 9); sub(/ +$/, "", name); t = substr($0, RSTART + 1, RLENGTH - 1)
            split(substr(t, index(t, "] ") + 2), a, " "); print a[1] "\t" name " " substr(t, 1, index(t, "]")) }' \
            "$WORK/tests.out" | sort -rn | head -n 3 |
            awk -F '\t' '{ printf "%s %s %.0f ms", sep, $2, $1; sep = ";" }')"
    fi
    if wants bench; then
        if [ "$BENCH_RC" = 125 ]; then echo "bench: not run (no time left)"
        elif [ "$BENCH_RC" = 0 ] && ! grep -q '^BENCH name=sgemm' "$WORK/bench.out" 2>/dev/null; then echo "bench: no OpenCL device"
        else
            echo "bench (nn.h on each OpenCL device, 1 round; exit status $BENCH_RC in ${BENCH_S:-0} s):"
            # the medians if run.sh finished, else the single round's lines
            if grep -q '^BENCH name=sgemm' "$WORK/bench.out"; then pat='^BENCH name='; else pat='^RUN round=1 name='; fi
            grep -E "$pat" "$WORK/bench.out" | sed 's/^RUN round=1 /BENCH /' | awk '
                { delete F; for (i = 2; i <= NF; i++) { k = substr($i, 1, index($i, "=") - 1); F[k] = substr($i, index($i, "=") + 1) } }
                F["name"] == "env" || F["name"] == "ratio" || F["backend"] == "" { next }
                { b = F["backend"]; if (!(b in seen)) { seen[b] = 1; order[++nb] = b } }
                F["name"] == "sgemm" { S[b] = S[b] (S[b] == "" ? "" : " / ") F["gflops"]; SN[b] = SN[b] (SN[b] == "" ? "" : "/") F["n"] }
                F["name"] == "mlp_train" { M[b] = F["samples_per_sec"] }
                F["name"] == "cnn_train" { C[b] = F["samples_per_sec"] }
                F["name"] == "conv2d" { V[b] = V[b] (V[b] == "" ? "" : ", ") F["shape"] " " F["pass"] " " F["gflops"] }
                F["name"] == "start" { T[b] = F["cold_ms"] " / " F["warm_ms"] }
                F["name"] == "mem" { G[b] = G[b] (G[b] == "" ? "" : ", ") F["op"] " " F["gbps"] }
                END { for (i = 1; i <= nb; i++) { b = order[i]; print "  " b ":"
                    if (S[b] != "") print "    SGEMM " SN[b] ": " S[b] " GFLOP/s"
                    if (M[b] != "" || C[b] != "") print "    training: MLP " (M[b] == "" ? "n/a" : M[b]) " samples/s (batch 128), CNN " (C[b] == "" ? "n/a" : C[b]) " samples/s (batch 64)"
                    if (V[b] != "") print "    conv 3x3, GFLOP/s: " V[b]
                    if (T[b] != "") print "    start (context + MLP compile), ms cold / warm: " T[b]
                    if (G[b] != "") print "    memory-bound, GB/s: " G[b] } }'
            grep -E '^nn_bench|failed' "$WORK/bench.out" | grep -v '^BENCH\|^RUN' | head -n 5 | sed 's/^/  /'
        fi
    fi
    if wants profile && [ -s "$WORK/profile.out" ]; then
        # the fused MLP's and CNN's profiles (each run's first graph): the totals and the 8
        # largest kernels
        echo "profile (NN_CL_PROFILE=1 nn_bench mlp, cnn; exit status $PROFILE_RC):"
        awk '/NN_CL_PROFILE: a graph of/ { n++; k = 0 } /NN_CL_PROFILE:/ && (n == 1 || n == 3) && k++ < 10 { sub(/^nn: NN_CL_PROFILE: /, ""); print "  " $0 }' \
            "$WORK/profile.out"
    fi
    if wants cpu; then tests_line cpu "tests on the CPU backend" "${CPU_S:-0}" "$CPU_RC"; fi
    echo "steps: $STEP_TIMES; total $(($(date +%s) - T_START)) s of the run's $BUDGET s"
    if [ -n "$PROBLEMS" ]; then echo "result: PROBLEMS: $PROBLEMS"; else echo "result: ok"; fi
    echo "log: $LOG"
} >"$SUM" 2>&1
log ""
log "==== summary"
cat "$SUM" >>"$LOG"
echo
cat "$SUM"
[ -z "$PROBLEMS" ]
