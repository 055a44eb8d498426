#!/bin/sh
# bench/gpt_vs_torch.sh - GPT training tokens/s of nn.h's CPU backend beside PyTorch's, side
# by side in one run: ROUNDS rounds, each running nn.h (bench/gpt_bench train cpu MODEL) and
# PyTorch at 1 and 2 threads (bench/gpt_torch.py, OMP_WAIT_POLICY=PASSIVE) in an order rotated
# per round, then the median of each and nn.h's median over PyTorch's best median. The load
# average is printed before and after: on a loaded machine only the interleaved ratio means
# something, and PyTorch's figures swing more than nn.h's.
#
#   make bench/gpt_bench && ./bench/gpt_vs_torch.sh
#   ROUNDS=5 MODEL=gpt2s ./bench/gpt_vs_torch.sh      # default ROUNDS=3, MODEL=tiny
#   BASELINE=/other/tree/bench/gpt_bench ...          # also that build's nn.h, and this/baseline
#   PYTHON=/usr/bin/python3 (default: Debian's python3-torch, not the pyenv python3 on PATH)
#
# prints RUN lines (one a measurement), then
#   BENCH name=gpt_vs_torch model=M who=nn|baseline|torch_1|torch_2 tokens_per_sec=MEDIAN rounds=N
#   BENCH name=ratio what=gpt_MODEL_cpu_vs_torch_best value=X   (above 1: nn.h is faster)
#   BENCH name=ratio what=gpt_MODEL_cpu_vs_baseline value=X
set -u
cd "$(dirname "$0")/.." || exit 1
export NN_LOG=warn
NN=./bench/gpt_bench
PY=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3}
MODEL=${MODEL:-tiny}
BASELINE=${BASELINE:-}
[ -x "$NN" ] || { echo "gpt_vs_torch.sh: $NN is missing: make bench/gpt_bench" >&2; exit 1; }
LINES=$(mktemp) || exit 1
trap 'rm -f "$LINES"' EXIT
tps() { sed -n 's/.*tokens_per_sec=\([0-9.]*\).*/\1/p' | head -1; }
one() { # one WHO: a measurement, one RUN line
    case $1 in
    nn) v=$("$NN" train cpu "$MODEL" | tps) ;;
    baseline) v=$("$BASELINE" train cpu "$MODEL" | tps) ;;
    torch_*) v=$(OMP_WAIT_POLICY=PASSIVE "$PY" bench/gpt_torch.py --model "$MODEL" --threads "${1#torch_}" | tps) ;;
    esac
    echo "RUN round=$r who=$1 model=$MODEL tokens_per_sec=${v:-0} load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$LINES"
}
echo "# $(uptime)"
whos="nn torch_1 torch_2"
[ -n "$BASELINE" ] && whos="nn baseline torch_1 torch_2"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    for w in $whos; do one "$w"; done
    whos="${whos#* } ${whos%% *}" # rotate: a different one goes first each round
    r=$((r + 1))
done
echo "# $(uptime)"
awk -v model="$MODEL" '
function kv(line, key,   i, n, a) { n = split(line, a, " "); for (i = 1; i <= n; i++) if (index(a[i], key "=") == 1) return substr(a[i], length(key) + 2); return "" }
{ w = kv($0, "who"); n[w]++; v[w, n[w]] = kv($0, "tokens_per_sec") + 0 }
END {
    for (w in n) {
        m = n[w]; for (i = 1; i <= m; i++) s[i] = v[w, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
        med[w] = s[int((m + 1) / 2)]
        printf "BENCH name=gpt_vs_torch model=%s who=%s tokens_per_sec=%.1f rounds=%d\n", model, w, med[w], m
    }
    best = med["torch_1"] > med["torch_2"] ? med["torch_1"] : med["torch_2"]
    if (best > 0) printf "BENCH name=ratio what=gpt_%s_cpu_vs_torch_best value=%.2f\n", model, med["nn"] / best
    if (("baseline" in med) && med["baseline"] > 0) printf "BENCH name=ratio what=gpt_%s_cpu_vs_baseline value=%.2f\n", model, med["nn"] / med["baseline"]
}' "$LINES" | sort
