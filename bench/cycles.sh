#!/bin/sh
# bench/cycles.sh - CPU time per training step of a benchmark, from `perf stat` (a figure
# that a loaded shared machine disturbs less than wall-clock time: what the process's
# threads ran, the pool's spinning included), with cycles and instructions where the CPU's
# counters are readable (not in a KVM guest without a PMU: they print as 0). The command
# runs with BENCH_STEPS=N1 and BENCH_STEPS=N2 timed steps and the difference of the two
# runs' counts over N2 - N1 steps is printed, so start-up, compiling and warm-up cancel.
#
#   ./bench/cycles.sh ./bench/gpt_bench train cpu tiny
#   N1=10 N2=40 ./bench/cycles.sh ./bench/rnn_bench train cpu char
# prints: CYCLES cmd=... steps=N2-N1 cpu_ms_per_step=X cycles_per_step=X instructions_per_step=X
set -u
N1=${N1:-20}
N2=${N2:-80}
run() {
    n=$1
    shift
    BENCH_STEPS=$n NN_LOG=warn perf stat -x, -e task-clock,cycles,instructions -o "/tmp/cycles.$$" "$@" >/dev/null ||
        { echo "cycles.sh: $* failed" >&2; exit 1; }
    awk -F, '$3 ~ /^task-clock/ {t = $1} $3 ~ /^cycles/ {c = $1 + 0} $3 ~ /^instructions/ {i = $1 + 0} END {print t, c, i}' "/tmp/cycles.$$"
}
a=$(run "$N1" "$@")
b=$(run "$N2" "$@")
rm -f "/tmp/cycles.$$"
echo "$a $b" | awk -v n=$((N2 - N1)) -v cmd="$*" '{gsub(/ /, "_", cmd); printf "CYCLES cmd=%s steps=%d cpu_ms_per_step=%.4g cycles_per_step=%.4g instructions_per_step=%.4g\n", cmd, n, ($4 - $1) / n, ($5 - $2) / n, ($6 - $3) / n}'
