#!/bin/sh
# bench/run.sh - what `make bench` runs: nn.h's figures on the CPU backend and on every
# OpenCL device, and PyTorch's, OpenBLAS's (through NumPy) and CLBlast's on the same work,
# interleaved over ROUNDS rounds; then medians, ratios and the README's table.
#
#   make bench                                  # or ./bench/run.sh after make bench/nn_bench bench/gpt_bench
#                                               # (gpt_bench for the FMA peak: GEMM and conv shares of it)
#   ROUNDS=n make bench                         # default 4
#   BASELINE=/path/to/old/bench/nn_bench ./bench/run.sh
#       also runs that nn_bench (another build of nn.h) beside this one, alternating which
#       goes first, and prints each figure of both with the ratio this/baseline
#   ONLY=nn ...                                 # nn.h's figures only (no PyTorch, NumPy, CLBlast)
#   BACKENDS="cpu" ...                          # selectors as `nn_bench devices` lists them
#   TORCH_THREADS="1/1 1/2 2/1 2/2" ...         # PyTorch training: intra-op/OpenBLAS threads
#   BLAS_THREADS="1 2" ...                      # SGEMM and conv lines: threads (both kinds)
#   FIGURES=mem ...                             # only the memory-bound lines (make bench-mem):
#       the host's copy bandwidth, y = a*b + c and a sum over the last axis per backend, GB/s
#   FIGURES=layers ...                          # only the composed layers (make bench-layers):
#       ms per training step of each layer of src/layers/layers.c per backend, and PyTorch's at
#       each of BLAS_THREADS threads (bench/layers_torch.py)
#   FIGURES=rnn ...                             # only the recurrent figures (make bench-rnn):
#       training tokens/s of the char-LSTM (examples/char_lstm.c's model) and a 2-layer LSTM and
#       GRU of 512 (batch 64, sequence 128) per backend with kernel launches per time step
#       (bench/rnn_bench), PyTorch's in TORCH_THREADS configurations (bench/char_lstm_torch.py)
#   FIGURES=gpt ...                             # only the GPT figures (make bench-gpt): tokens/s
#       training the tiny GPT (examples/tiny_gpt.c's) and a GPT-2-small-shaped one per backend
#       (bench/gpt_bench), PyTorch's in TORCH_THREADS configurations (bench/gpt_torch.py), the
#       machine's FMA peak, and generation tokens/s with the key/value cache and without
#   FIGURE_TIMEOUT=s ...                        # stop each nn_bench run after s seconds
#       (with timeout(1); tools/gpu_report.sh sets it, so one hung figure leaves the others)
#
# Each round measures, figure by figure: nn.h on every backend (and the baseline), then the
# counterparts of that figure in each thread configuration (in an order rotated per round).
# Every measurement is one line (the counterparts' also carry threads=T/B):
#     RUN round=R [build=baseline] name=sgemm backend=B n=N gflops=X
#     RUN round=R name=gemm16 backend=cpu shape=MxKxN dtype=f32|bf16|bf16w|f16 gflops=X
#     RUN round=R ... name=mlp_train backend=B batch=128 [fuse=0] samples_per_sec=X cpu_ms_per_step=X
#         host_ms_per_step=X launches_per_step=X (fuse=0: compiled with NN_FUSE=0)
#     RUN round=R ... name=conv2d backend=B shape=NxCxHxWkK pass=fwd|bwd gflops=X ms=X
#     RUN round=R ... name=cnn_train backend=B batch=64 [fuse=0] samples_per_sec=X (and the same fields)
#     RUN round=R ... name=start backend=B cold_ms=X warm_ms=X
#     RUN round=R ... name=mem backend=B op=copy|mul_add|sum_last gbps=X
#     RUN round=R ... name=layer backend=B layer=L ms_per_step=X
# then bench/report.awk prints, per figure, the median over the rounds with its min and
# max (for a counterpart: of the thread configuration with the best median, named in
# threads=, the medians of all in tried=):
#     BENCH name=mlp_train backend=B batch=128 samples_per_sec=MEDIAN samples_per_sec_min=X
#           samples_per_sec_max=X rounds=N [threads=T/B tried=T/B:X,...]
#     BENCH name=ratio what=W value=X       (layers: what=layer_L_cpu|opencl_vs_torch, value
#           PyTorch's ms / nn.h's ms: above 1, nn.h is faster)
#     BENCH name=vs_baseline figure=F backend=B ... metric=M this=X baseline=X value=X
# and the table in README.md's format. The machine: BENCH name=env what=machine|torch|
# numpy|run lines. Other lines start with '#' (or '|': the table). Builds only through make
# (bench/nn_bench is make's prerequisite; bench/sgemm_clblast has its own rule, optional).
set -u
cd "$(dirname "$0")/.." || exit 1
export NN_LOG=warn # no "backend: ..." lines between the figures

NN=./bench/nn_bench
PY=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-4}
BASELINE=${BASELINE:-}
ONLY=${ONLY:-}
FIGURES=${FIGURES:-all}
case $FIGURES in all | layers | rnn | gpt) ;; mem) ONLY=nn ;; *) echo "run.sh: FIGURES must be all, mem, layers, rnn or gpt (got '$FIGURES')" >&2; exit 1 ;; esac
TORCH_THREADS=${TORCH_THREADS:-1/1 1/2 2/1 2/2}
BLAS_THREADS=${BLAS_THREADS:-1 2}
T0=$(date +%s)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nn-bench.XXXXXX") || exit 1
LINES=$WORK/lines
: >"$LINES"
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

note() { echo "# $*"; }
die() { echo "run.sh: $*" >&2; exit 1; }
# run.sh builds nothing (make bench does): a binary older than nn.h would measure an old build
for b in "$NN" ./bench/gpt_bench; do
    if [ -f nn.h ] && [ -x "$b" ] && [ nn.h -nt "$b" ]; then die "$b is older than nn.h: run 'make ${b#./}' (or make bench) first"; fi
done
# Lines go to stdout and are kept for the report.
keep() { tee -a "$LINES"; }
# tag ROUND [BUILD]: a command's BENCH lines as RUN lines of that round (and build)
tag() {
    if [ -n "${2:-}" ]; then sed -n "s/^BENCH /RUN round=$1 build=$2 /p"; else sed -n "s/^BENCH /RUN round=$1 /p"; fi | keep
}

case $ROUNDS in '' | *[!0-9]* | 0) die "ROUNDS must be a positive integer (got '$ROUNDS')" ;; esac
[ -x "$NN" ] || die "$NN is missing; run it as 'make bench'"
if [ -n "$BASELINE" ]; then
    [ -d "$BASELINE" ] && BASELINE=$BASELINE/bench/nn_bench
    [ -x "$BASELINE" ] || die "BASELINE=$BASELINE is not an executable nn_bench"
    case $BASELINE in /*) ;; *) BASELINE=$(pwd)/$BASELINE ;; esac
fi

# ---- the machine -------------------------------------------------------------------------
CPU_MODEL=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)
[ -n "$CPU_MODEL" ] || CPU_MODEL=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
CPU_FLAGS=$(sed -n 's/^flags[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
has_flag() { case " $CPU_FLAGS " in *" $1 "*) echo yes ;; *) echo no ;; esac; }
SIMD=
for f in sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512_vnni avx512_bf16 amx_tile; do
    [ "$(has_flag $f)" = yes ] && SIMD=${SIMD:+$SIMD,}$f
done
AVX512=$(has_flag avx512f)
CORES=$(nproc 2>/dev/null || echo '?')
OS=$(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release 2>/dev/null)
# OPENBLAS_CORETYPE=SkylakeX is OpenBLAS's fastest x86 kernel set, but it needs AVX-512 and
# dies with SIGILL without it; there OpenBLAS's own detection picks the best one.
if [ "$AVX512" = yes ]; then CORETYPE=SkylakeX; else CORETYPE=; fi
u() { echo "$*" | tr ' =\t' '___'; } # a value for a key=value field
note "cpu: ${CPU_MODEL:-unknown}, $CORES cores, AVX-512: $AVX512 (${SIMD:-no SIMD flags found})"
note "os: ${OS:-unknown}; OPENBLAS_CORETYPE=${CORETYPE:-<unset: OpenBLAS detects the CPU>}, OMP_WAIT_POLICY=PASSIVE"
echo "BENCH name=env what=machine cpu=$(u "${CPU_MODEL:-unknown}") cores=$CORES avx512=$AVX512 simd=${SIMD:-none}" \
     "os=$(u "${OS:-unknown}") openblas_coretype=${CORETYPE:-auto} date=$(date -u +%Y-%m-%dT%H:%MZ)" | keep

# "SELECTOR NAME" per backend: cpu first, then the OpenCL devices.
DEVICES=$("$NN" devices) || die "nn_bench devices failed"
if [ -n "${BACKENDS:-}" ]; then
    DEVICES=$(echo "$DEVICES" | awk -v want=" $BACKENDS " 'index(want, " " $1 " ")')
    [ -n "$DEVICES" ] || die "BACKENDS='$BACKENDS' matches none of: $("$NN" devices | awk '{ printf "%s ", $1 }')"
fi
CL_NAME=$(echo "$DEVICES" | awk '$1 != "cpu" { print $2; exit }')
if [ -n "$BASELINE" ]; then
    "$BASELINE" devices >"$WORK/bdev" 2>/dev/null || die "$BASELINE devices failed"
    echo "$DEVICES" | while read -r sel name; do
        grep -qx "$sel $name" "$WORK/bdev" || note "WARNING: the baseline lists no backend '$sel $name'"
    done
fi
note "backends: $(echo "$DEVICES" | awk '{ printf "%s%s", sep, $2; sep = ", " }')"
echo "BENCH name=env what=backends list=$(echo "$DEVICES" | awk '{ printf "%s%s", sep, $2; sep = "," }') opencl=${CL_NAME:--}" | keep

# ---- PyTorch, NumPy and their BLAS ----------------------------------------------------------
pyrun() { # pyrun ENV... -- $PY with OpenBLAS's core type, passive OpenMP waits and ENV
    if [ -n "$CORETYPE" ]; then
        env OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE="$CORETYPE" "$@"
    else
        env -u OPENBLAS_CORETYPE OMP_WAIT_POLICY=PASSIVE "$@"
    fi
}
HAVE_TORCH='' HAVE_NUMPY='' HAVE_CLBLAST=''
BLAS_WARN=
if [ "$ONLY" != nn ]; then
    mods="torch numpy"
    [ "$FIGURES" = layers ] && mods=torch # no NumPy figure among the layers
    case $FIGURES in rnn | gpt) mods=torch ;; esac
    for m in $mods; do
        if ! "$PY" -c "import $m" 2>/dev/null; then
            note "no $m for $PY (python3-$m): skipping its figures"
            continue
        fi
        line=$(pyrun "$PY" bench/pyenv.py $m) || { note "bench/pyenv.py $m failed"; continue; }
        echo "$line" | keep
        [ $m = torch ] && HAVE_TORCH=1 || HAVE_NUMPY=1
        blas=$(echo "$line" | sed -n 's/.* blas=\([^ ]*\).*/\1/p')
        lib=$(echo "$line" | sed -n 's/.* blas_lib=\([^ ]*\).*/\1/p')
        g=$(echo "$line" | sed -n 's/.* sgemm1024_gflops=\([^ ]*\).*/\1/p')
        note "$m: $(echo "$line" | sed -n 's/.* version=\([^ ]*\).*/\1/p'), BLAS $blas ($lib), core" \
             "$(echo "$line" | sed -n 's/.* blas_core=\([^ ]*\).*/\1/p'), SGEMM 1024 $g GFLOP/s"
        case $line in
        *" blas_ok=no"*)
            BLAS_WARN="$BLAS_WARN $m"
            note "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
            note "!! WARNING: $m's SGEMM goes to BLAS '$blas' ($lib) at $g GFLOP/s."
            [ "$blas" = reference ] && note "!! That is Netlib's reference BLAS, not OpenBLAS: $m's figures are NOT its best."
            note "!! Install an optimised BLAS (Debian: apt-get install libopenblas0-pthread) and rerun."
            note "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
            ;;
        esac
    done
    if [ "$FIGURES" != all ]; then
        : # CLBlast has SGEMM figures only
    elif [ -z "$CL_NAME" ]; then
        note "no OpenCL device: skipping CLBlast"
    elif make -s bench/sgemm_clblast >/dev/null 2>&1; then
        HAVE_CLBLAST=1
    else
        note "CLBlast is not installed (libclblast-dev): skipping its figures"
    fi
fi
echo "BENCH name=env what=run rounds=$ROUNDS torch_threads=$(u "$TORCH_THREADS" | tr _ ,) blas_threads=$(u "$BLAS_THREADS" | tr _ ,)" \
     "baseline=${BASELINE:--} only=${ONLY:-all} figures=$FIGURES" | keep

# ---- one round's measurements ----------------------------------------------------------------
# limit CMD...: CMD, stopped after $FIGURE_TIMEOUT seconds when that is set; in this
# process group where timeout(1) allows it, so that a limit put around run.sh stops it too
TIMEOUT_FG=
timeout --foreground 5 true 2>/dev/null && TIMEOUT_FG=--foreground
limit() {
    if [ -n "${FIGURE_TIMEOUT:-}" ] && command -v timeout >/dev/null 2>&1; then
        timeout $TIMEOUT_FG -k 5 "$FIGURE_TIMEOUT" "$@"
    else
        "$@"
    fi
}
# nn_one ROUND BIN BUILD CMD SEL NAME: one nn_bench figure (start: cold and warm)
nn_one() {
    if [ "$4" = start ]; then
        # One process with empty caches, one with them filled. PoCL and NVIDIA's driver keep
        # their own kernel caches, so they are emptied too; otherwise "cold" would only be
        # nn.h's cache cold.
        c=$WORK/cache
        rm -rf "$c"
        mkdir -p "$c/nn" "$c/pocl" "$c/cuda"
        cold=$(NN_CACHE_DIR="$c/nn" POCL_CACHE_DIR="$c/pocl" CUDA_CACHE_PATH="$c/cuda" limit "$2" start "$5" </dev/null |
               awk '{ print $2 }')
        warm=$(NN_CACHE_DIR="$c/nn" POCL_CACHE_DIR="$c/pocl" CUDA_CACHE_PATH="$c/cuda" limit "$2" start "$5" </dev/null |
               awk '{ print $2 }')
        rm -rf "$c"
        if [ -n "$cold" ] && [ -n "$warm" ]; then
            echo "BENCH name=start backend=$6 cold_ms=$cold warm_ms=$warm"
        else
            note "start-up time on $6 failed${3:+ ($3)}" >&2
        fi
    else
        limit "$2" "$4" "$5" </dev/null || note "nn_bench $4 $5 failed${3:+ ($3)}" >&2
    fi | tag "$1" "$3"
}
# nn_fig ROUND CMD: the nn.h figure on every backend; with BASELINE, both builds, the
# baseline first in even rounds
nn_fig() {
    echo "$DEVICES" | while read -r sel name; do
        if [ -z "$BASELINE" ]; then
            nn_one "$1" "$NN" "" "$2" "$sel" "$name"
        elif [ $(($1 % 2)) -eq 1 ]; then
            nn_one "$1" "$NN" "" "$2" "$sel" "$name"
            nn_one "$1" "$BASELINE" baseline "$2" "$sel" "$name"
        else
            nn_one "$1" "$BASELINE" baseline "$2" "$sel" "$name"
            nn_one "$1" "$NN" "" "$2" "$sel" "$name"
        fi
    done
}
rotate() { # rotate N WORD...: the words, starting at word N mod count (from 0)
    k=$(($1 % ($# - 1)))
    shift
    i=0 head='' tail=''
    for w; do
        if [ $i -lt $k ]; then tail="$tail $w"; else head="$head $w"; fi
        i=$((i + 1))
    done
    # shellcheck disable=SC2086 # one word each
    echo $head $tail
}
# torch_fig ROUND CONFIGS SCRIPT ARGS...: a counterpart once per thread configuration T/B
# (T: torch's intra-op threads, B: OpenBLAS's; a bare N means N/N)
torch_fig() {
    r=$1 cfgs=$2
    shift 2
    # shellcheck disable=SC2086 # cfgs: words
    for cfg in $(rotate $((r - 1)) $cfgs); do
        t=${cfg%/*} b=${cfg#*/}
        pyrun OMP_NUM_THREADS="$t" OPENBLAS_NUM_THREADS="$b" "$PY" "$@" --threads "$t" | tag "$r"
    done
}

R=1
while [ $R -le "$ROUNDS" ]; do
    note "round $R of $ROUNDS ($(($(date +%s) - T0)) s)"
    if [ "$FIGURES" = rnn ]; then
        [ -x ./bench/rnn_bench ] || die "./bench/rnn_bench is missing; run it as 'make bench-rnn'"
        for model in char lstm512 gru512; do
            echo "$DEVICES" | while read -r sel name; do
                limit ./bench/rnn_bench train "$sel" $model </dev/null | tag $R || note "rnn_bench train $sel $model failed"
            done
            if [ -n "$HAVE_TORCH" ]; then torch_fig $R "$TORCH_THREADS" bench/char_lstm_torch.py --model $model; fi
        done
        R=$((R + 1))
        continue
    fi
    if [ "$FIGURES" = gpt ]; then
        [ $R -eq 1 ] && ./bench/gpt_bench peak | tag $R
        for model in tiny gpt2s; do
            echo "$DEVICES" | while read -r sel name; do
                limit ./bench/gpt_bench train "$sel" $model </dev/null | tag $R || note "gpt_bench train $sel $model failed"
            done
            if [ -n "$HAVE_TORCH" ]; then torch_fig $R "$TORCH_THREADS" bench/gpt_torch.py --model $model; fi
        done
        echo "$DEVICES" | while read -r sel name; do
            limit ./bench/gpt_bench generate "$sel" </dev/null | tag $R || note "gpt_bench generate $sel failed"
        done
        R=$((R + 1))
        continue
    fi
    if [ "$FIGURES" = layers ]; then
        nn_fig $R layers
        if [ -n "$HAVE_TORCH" ]; then torch_fig $R "$BLAS_THREADS" bench/layers_torch.py; fi
        R=$((R + 1))
        continue
    fi
    nn_fig $R mem
    if [ "$FIGURES" = mem ]; then
        R=$((R + 1))
        continue
    fi
    # the machine's FMA peak, once, for the GEMM and convolution shares (report.awk)
    if [ $R -eq 1 ] && [ -x ./bench/gpt_bench ] && echo "$DEVICES" | grep -q '^cpu '; then ./bench/gpt_bench peak | tag $R; fi
    nn_fig $R sgemm
    # the CPU GEMM on bf16 and fp16 operands beside its fp32 one (the cpu selector only)
    if echo "$DEVICES" | grep -q '^cpu '; then
        ROUNDS=1 GEMM16_ROTATE=$R limit "$NN" gemm16 cpu </dev/null | tag $R || note "nn_bench gemm16 cpu failed"
    fi
    if [ -n "$HAVE_TORCH" ]; then torch_fig $R "$BLAS_THREADS" bench/sgemm_torch.py torch; fi
    if [ -n "$HAVE_NUMPY" ]; then torch_fig $R "$BLAS_THREADS" bench/sgemm_torch.py numpy; fi
    if [ -n "$HAVE_CLBLAST" ]; then ./bench/sgemm_clblast | tag $R; fi
    nn_fig $R mlp
    if [ -n "$HAVE_TORCH" ]; then torch_fig $R "$TORCH_THREADS" bench/mlp_torch.py; fi
    nn_fig $R conv
    if [ -n "$HAVE_TORCH" ]; then torch_fig $R "$BLAS_THREADS" bench/cnn_torch.py conv; fi
    nn_fig $R cnn
    if [ -n "$HAVE_TORCH" ]; then torch_fig $R "$TORCH_THREADS" bench/cnn_torch.py train; fi
    nn_fig $R start
    R=$((R + 1))
done

# ---- medians, ratios, the table ----------------------------------------------------------------
note "$ROUNDS rounds in $(($(date +%s) - T0)) s"
awk -f bench/report.awk "$LINES"
[ -n "$BLAS_WARN" ] && note "WARNING: the BLAS under$BLAS_WARN is not an optimised one (see above): those figures are not their best"
note "total $(($(date +%s) - T0)) s"
