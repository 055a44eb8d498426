#!/bin/sh
# Elementwise fusion on and off (NN_FUSE=0), interleaved: MLP training (bench/nn_bench mlp)
# and the tiny GPT's (bench/gpt_bench train SEL tiny) on each device given, ROUNDS rounds,
# each figure's median. Usage: bench/fuse.sh [SEL...] (default cpu); ROUNDS=3.
# Build first: make bench/nn_bench bench/gpt_bench
set -u
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
[ $# -gt 0 ] || set -- cpu
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "load: $(uptime | sed 's/.*load average/load average/')"
for sel in "$@"; do
    r=1
    while [ "$r" -le "$ROUNDS" ]; do
        for fuse in 0 1; do
            if [ "$fuse" = 0 ]; then env="NN_FUSE=0"; else env="NN_FUSE=1"; fi
            v=$(env $env ./bench/nn_bench mlp "$sel" | sed -n 's/.*samples_per_sec=\([0-9.]*\).*/\1/p')
            echo "$sel mlp_samples_per_sec fuse=$fuse $v" >> "$tmp"
            v=$(env $env ./bench/gpt_bench train "$sel" tiny | sed -n 's/.*tokens_per_sec=\([0-9.]*\).*/\1/p')
            echo "$sel gpt_tiny_tokens_per_sec fuse=$fuse $v" >> "$tmp"
        done
        r=$((r + 1))
    done
done
sort -k1,3 -k4n "$tmp" | awk '
    { key = $1 " " $2 " " $3; v[key, ++n[key]] = $4; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
    END { for (i = 1; i <= k; i++) { key = order[i]; m = n[key]; printf "%s median %s (of", key, v[key, int((m + 1) / 2)];
          for (j = 1; j <= m; j++) printf " %s", v[key, j]; print ")" } }'
echo "load: $(uptime | sed 's/.*load average/load average/')"
