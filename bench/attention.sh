#!/bin/sh
# bench/attention.sh - what `make bench-attention` runs: attention forward + backward at
# B = 4, H = 8, D = 64 for T = 256, 1024, 4096, the fused nn_attention against the composed
# nn_matmul + softmax + nn_matmul (bench/attention_bench.c), causal, per backend, interleaved
# over ROUNDS rounds; then the median ms per step of each with its arena bytes and its median
# CPU ms per step (every thread: steadier than the clock on a loaded machine), and the
# composed/fused ratio (of the clock's ms).
#
#   ROUNDS=n          rounds (default 3)
#   BACKENDS="cpu 0"  devices as bench/attention_bench takes them (default: cpu and OpenCL device 0)
#   TS="256 1024"     lengths (default 256 1024 4096)
#   MASK=full         no causal mask (default causal)
#   COMPOSED_4096=1   also the composed version at T = 4096: its [4, 8, 4096, 4096] scores are
#                     2 GiB a tensor and its arena about 12 GiB, so it is off by default
#   FIGURE_TIMEOUT=s  stop each run after s seconds (default 300)
set -u
cd "$(dirname "$0")/.." || exit 1
export NN_LOG=warn
B=./bench/attention_bench
ROUNDS=${ROUNDS:-3}
BACKENDS=${BACKENDS:-cpu 0}
TS=${TS:-256 1024 4096}
MASK=${MASK:-causal}
FIGURE_TIMEOUT=${FIGURE_TIMEOUT:-300}
[ -x "$B" ] || { echo "attention.sh: $B is missing; run it as 'make bench-attention'" >&2; exit 1; }
LINES=$(mktemp) || exit 1
trap 'rm -f "$LINES"' EXIT
echo "# $(uptime)"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    for T in $TS; do
        for dev in $BACKENDS; do
            for impl in fused composed; do
                if [ "$impl" = composed ] && [ "$T" -ge 4096 ] && [ "${COMPOSED_4096:-0}" != 1 ]; then continue; fi
                timeout "$FIGURE_TIMEOUT" "$B" "$dev" "$T" "$impl" "$MASK" | sed -n "s/^BENCH /RUN round=$r /p" | tee -a "$LINES"
            done
        done
    done
    r=$((r + 1))
done
echo "# $(uptime)"
# medians per (backend, T, impl), then the composed / fused ratio
awk '
function kv(line, key,   i, n, a) { n = split(line, a, " "); for (i = 1; i <= n; i++) if (index(a[i], key "=") == 1) return substr(a[i], length(key) + 2); return "" }
{ k = kv($0, "backend") " " kv($0, "T") " " kv($0, "impl") " " kv($0, "mask"); n[k]++; v[k, n[k]] = kv($0, "ms_per_step"); cv[k, n[k]] = kv($0, "cpu_ms_per_step"); mem[k] = kv($0, "arena_bytes") }
END {
    for (k in n) {
        m = n[k]; for (i = 1; i <= m; i++) s[i] = v[k, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (s[j] + 0 < s[i] + 0) { t = s[i]; s[i] = s[j]; s[j] = t }
        med[k] = s[int((m + 1) / 2)]
        for (i = 1; i <= m; i++) s[i] = cv[k, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (s[j] + 0 < s[i] + 0) { t = s[i]; s[i] = s[j]; s[j] = t }
        split(k, f, " ")
        printf "BENCH name=attention backend=%s T=%s impl=%s mask=%s ms_per_step=%s arena_bytes=%s cpu_ms_per_step=%s rounds=%d\n", f[1], f[2], f[3], f[4], med[k], mem[k], s[int((m + 1) / 2)], m
    }
    for (k in n) {
        split(k, f, " ")
        if (f[3] != "fused") continue
        c = f[1] " " f[2] " composed " f[4]
        if (c in med) printf "BENCH name=ratio what=attention_%s_T%s_composed_vs_fused value=%.2f\n", f[1], f[2], med[c] / med[k]
    }
}' "$LINES" | sort
