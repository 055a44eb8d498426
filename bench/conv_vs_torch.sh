#!/bin/sh
# bench/conv_vs_torch.sh - the CPU backend's convolutions (and the CNN training step) side by
# side with PyTorch's, interleaved, medians: issue 19's "each benchmark convolution forward
# and backward >= 1.0x PyTorch" and "CNN training >= 1.5x PyTorch at its best".
#
#   make bench/nn_bench && ./bench/conv_vs_torch.sh
#   ROUNDS=n ...                 # rounds (default 5)
#   WHAT="conv cnn" ...          # the conv lines (nn_bench conv / cnn_torch.py conv) and/or
#                                # the CNN step (nn_bench cnn / cnn_torch.py train)
#   TORCH_THREADS="1 2" ...      # torch.set_num_threads tried per round (the best median kept)
#   BASELINE=/other/bench/nn_bench ...   # another build's nn_bench in every round too
#
# Each round runs nn_bench (and the baseline), then PyTorch at each thread count, in an order
# rotated per round. Output: the load average before and after, a RUN line per measurement,
# then per figure the median of each side and the ratio (PyTorch's ms / nn.h's ms for conv,
# nn.h's samples/s / PyTorch's for the CNN: above 1, nn.h is faster), and the median of the
# rounds' own ratios (each round's nn.h against its best PyTorch run: "paired"), which a load
# that changes from round to round (other users of the machine) moves less. The load average
# is printed before each round.
set -u
cd "$(dirname "$0")/.." || exit 1
export NN_LOG=warn OMP_WAIT_POLICY=PASSIVE
PY=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-5}
WHAT=${WHAT:-conv cnn}
TORCH_THREADS=${TORCH_THREADS:-1 2}
BASELINE=${BASELINE:-}
grep -qw avx512f /proc/cpuinfo 2>/dev/null && export OPENBLAS_CORETYPE=SkylakeX
OUT=$(mktemp) || exit 1
trap 'rm -f "$OUT"' EXIT
echo "# $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    echo "# round $r load: $(cut -d' ' -f1-3 /proc/loadavg)"
    for what in $WHAT; do
        case $what in conv) py=conv ;; cnn) py=train ;; *) echo "unknown WHAT $what" >&2; exit 1 ;; esac
        runs="nn"
        [ -n "$BASELINE" ] && runs="$runs base"
        for t in $TORCH_THREADS; do runs="$runs t$t"; done
        # rotate the order by the round number
        set -- $runs
        i=1
        while [ "$i" -lt "$r" ]; do first=$1; shift; set -- "$@" "$first"; i=$((i + 1)); done
        for who in "$@"; do
            case $who in
            nn) ./bench/nn_bench "$what" cpu | sed -n "s/^BENCH /RUN round=$r who=nn /p" ;;
            base) "$BASELINE" "$what" cpu | sed -n "s/^BENCH /RUN round=$r who=baseline /p" ;;
            t*) "$PY" bench/cnn_torch.py "$py" --threads "${who#t}" 2>/dev/null |
                    sed -n "s/^BENCH /RUN round=$r who=torch${who#t} /p" ;;
            esac
        done | tee -a "$OUT"
    done
    r=$((r + 1))
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
function med(key,   n, i, j, t, a) {
    n = split(vals[key], a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    who = fig = v = rd = ""
    for (i = 1; i <= NF; i++) {
        split($i, kv, "=")
        if (kv[1] == "who") who = kv[2]
        if (kv[1] == "round") rd = kv[2]
        if (kv[1] == "shape") fig = fig "conv " kv[2]
        if (kv[1] == "pass") fig = fig " " kv[2]
        if (kv[1] == "ms") v = kv[2]
        if (kv[1] == "samples_per_sec") { fig = "cnn_train samples/s"; v = kv[2] }
    }
    if (fig == "" || v == "") next
    key = fig SUBSEP who
    vals[key] = vals[key] " " v
    one[fig, who, rd] = v
    if (!(rd in rounds)) { rounds[rd] = 1; nr++; rlist[nr] = rd }
    if (!(fig in seen)) { seen[fig] = 1; order[++nf] = fig }
    whos[who] = 1
}
END {
    for (f = 1; f <= nf; f++) {
        fig = order[f]; nn = med(fig SUBSEP "nn"); best = ""; bw = ""
        cnn = fig ~ /^cnn/
        for (w in whos) if (w ~ /^torch/ && ((fig SUBSEP w) in vals)) {
            m = med(fig SUBSEP w)
            if (best == "" || (cnn ? m > best : m < best)) { best = m; bw = w }
        }
        line = sprintf("BENCH %s: nn.h %s", fig, nn)
        if ((fig SUBSEP "baseline") in vals) line = line sprintf(" baseline %s", med(fig SUBSEP "baseline"))
        if (best != "") line = line sprintf(" %s %s ratio %.2f", bw, best, cnn ? nn / best : best / nn)
        pr = ""
        for (k = 1; k <= nr; k++) {
            rd = rlist[k]; b = ""
            if (!((fig SUBSEP "nn" SUBSEP rd) in one)) continue
            for (w in whos) if (w ~ /^torch/ && ((fig SUBSEP w SUBSEP rd) in one)) {
                m = one[fig, w, rd]
                if (b == "" || (cnn ? m > b : m < b)) b = m
            }
            if (b != "" && one[fig, "nn", rd] > 0 && b > 0) pr = pr " " (cnn ? one[fig, "nn", rd] / b : b / one[fig, "nn", rd])
        }
        if (pr != "") { vals["paired"] = pr; line = line sprintf(" paired %.2f", med("paired")) }
        print line (cnn ? "" : " (ms)")
    }
}' "$OUT"
