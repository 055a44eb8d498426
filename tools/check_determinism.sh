#!/bin/sh
# make check-determinism: builds tools/init_hash.c (the CPU backend) with gcc and clang, -O0
# to -O3, each with and without -march=native, then with gcc's -ffp-contract=fast, -std=c99
# and as C++, runs each build, and fails unless all of them print the same line: the hashes
# of the initial weights and of 10 Adam / AdamW steps of an MLP and a CNN. nn.h turns
# floating-point contraction off in its implementation (src/base/fp_begin.h), which no flag
# but clang's -ffp-contract=fast and -ffast-math overrides; the clang -ffp-contract=fast build
# must say so instead ("fused": its CPU backend logs it). Builds run JOBS at a time (default 2).
# Usage: tools/check_determinism.sh
set -eu
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# one build a line: what it must print (same: the common line; fused: the "fused" word), then
# the compiler and its flags
{
    for cc in gcc clang; do
        for o in -O0 -O1 -O2 -O3; do
            echo "same $cc $o"
            echo "same $cc $o -march=native"
        done
        echo "same $cc -std=c99 -O2 -march=native"
    done
    echo "same gcc -O3 -march=native -ffp-contract=fast"
    echo "same g++ -x c++ -O2 -march=native"
    echo "same clang++ -x c++ -O2 -march=native"
    echo "fused clang -O3 -march=native -ffp-contract=fast"
} > "$tmp/builds"
n=0
while IFS= read -r b; do
    n=$((n + 1))
    printf '%s\n' "$n ${b#* }"
done < "$tmp/builds" | xargs -P "$jobs" -I{} sh -c '
    set -- {}; i=$1; shift
    if "$@" -DNN_NO_OPENCL -I. tools/init_hash.c -o "'"$tmp"'/h$i" -lm -lpthread 2> "'"$tmp"'/e$i" &&
       "'"$tmp"'/h$i" > "'"$tmp"'/o$i" 2>> "'"$tmp"'/e$i"; then :; else echo "build or run failed" >> "'"$tmp"'/o$i"; fi'
ref=
fails=0
n=0
while IFS= read -r b; do
    n=$((n + 1))
    want=${b%% *}
    h=$(cat "$tmp/o$n" 2>/dev/null || echo "no output")
    echo "${b#* }: $h"
    [ -s "$tmp/e$n" ] && sed 's/^/    /' "$tmp/e$n"
    if [ "$want" = fused ]; then
        case "$h" in *' fused') ;; *) echo "    (expected the word fused: the CPU backend's note on fused multiply-adds)"; fails=$((fails + 1)) ;; esac
        continue
    fi
    [ -z "$ref" ] && ref=$h
    [ "$h" = "$ref" ] || fails=$((fails + 1))
done < "$tmp/builds"
if [ "$fails" -ne 0 ]; then
    echo "check-determinism: $fails of $n builds differ"
    exit 1
fi
echo "check-determinism: one result from $((n - 1)) builds; clang -ffp-contract=fast says it fuses"
