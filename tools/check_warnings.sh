#!/bin/sh
# make check-warnings: nn.h's implementation compiled as C99 and C++11, by gcc and clang,
# with and without NN_NO_OPENCL and NN_STATIC, with -Wall -Wextra -pedantic -Werror; then
# that nn.h includes no CL/ header; then nn.h after the system's <CL/cl.h> (where installed),
# whose types it then uses. Builds run JOBS at a time (default 2).
# Optimisation levels: gcc's flow-based warnings (-Wmaybe-uninitialized, -Warray-bounds,
# -Wstringop-*) depend on the optimiser, so gcc builds every combination at -O2 and -O3 and
# the plain C and C++ builds at -O0 too; clang's warnings come from its front end whatever
# the level, so clang builds each combination once, at -O2.
# Usage: tools/check_warnings.sh
set -eu
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#define NN_IMPLEMENTATION\n#include "nn.h"\nint main(void){return 0;}\n' > "$tmp/plain.c"
printf '#define CL_TARGET_OPENCL_VERSION 120\n#include <CL/cl.h>\n#define NN_IMPLEMENTATION\n#include "nn.h"\nint main(void){cl_uint n = 0; return clGetPlatformIDs(0, NULL, &n) != CL_SUCCESS;}\n' > "$tmp/withcl.c"
# one build a line: source, compiler, language, then flags
{
    for cc in gcc clang; do for lang in c c++; do for cl in "" -DNN_NO_OPENCL; do for st in "" -DNN_STATIC; do
        if [ $cc = gcc ]; then opts="-O2 -O3"; else opts="-O2"; fi
        [ $cc = gcc ] && [ -z "$cl$st" ] && opts="-O0 $opts"
        for opt in $opts; do echo "plain $cc $lang $opt $cl $st"; done
    done; done; done; done
    if printf '#include <CL/cl.h>\n' | ${CC:-cc} -x c -E - >/dev/null 2>&1; then
        for cc in gcc clang; do for lang in c c++; do for st in "" -DNN_STATIC; do
            echo "withcl $cc $lang -O2 $st"
        done; done; done
    fi
} > "$tmp/builds"
n=0
while IFS= read -r b; do
    n=$((n + 1))
    echo "$n $b"
done < "$tmp/builds" | xargs -P "$jobs" -I{} sh -c '
    set -- {}; i=$1; src=$2; cc=$3; lang=$4; shift 4
    std=-std=c99; [ "$lang" = c++ ] && std=-std=c++11
    if $cc -x $lang $std "$@" -Wall -Wextra -pedantic -Werror -I. -c "'"$tmp"'/$src.c" -o /dev/null > "'"$tmp"'/e$i" 2>&1; then
        echo ok > "'"$tmp"'/r$i"; else echo FAIL > "'"$tmp"'/r$i"; fi'
fails=0
n=0
while IFS= read -r b; do
    n=$((n + 1))
    r=$(cat "$tmp/r$n" 2>/dev/null || echo FAIL)
    echo "$r: $b" | tr -s ' '
    if [ "$r" != ok ]; then
        fails=$((fails + 1))
        sed 's/^/    /' "$tmp/e$n" | head -n 40
    fi
done < "$tmp/builds"
if printf '#define NN_IMPLEMENTATION\n#include "nn.h"\n' | ${CC:-cc} -x c -M -I. - | grep -q '/CL/'; then
    echo "check-warnings: nn.h includes an OpenCL header"
    fails=$((fails + 1))
fi
grep -q '^withcl' "$tmp/builds" || echo "check-warnings: no <CL/cl.h> here: the builds with it included first are skipped"
if [ "$fails" -ne 0 ]; then
    echo "check-warnings: $fails of $n checks failed"
    exit 1
fi
echo "check-warnings: $n builds warning-free"
