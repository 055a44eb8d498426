#!/bin/sh
# make check-parts: compiles each part of gen/parts.txt as its own translation unit, after
# the parts above it (made by the generator from the manifest cut just before it), with the
# part itself included by its real path, so a diagnostic names the part's own file and
# line. It fails when a part uses what no part above it declares, or does not compile with
# the project's warnings. A function declared above and defined below (the registry's
# accessor, the optimizer's compile hooks) is allowed: clang's -Wundefined-internal is off.
# Usage: tools/check_parts.sh [CC]   (default clang)
set -eu
cc=${1:-clang}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0
grep -n "" gen/parts.txt | grep -E "model.c|compile.c|graph.c|ckpt.c|view.c|random.c|norm.c" | grep -v kernels | while IFS=: read -r lineno line; do
    case "$line" in ''|';'*|'#'*|'@'*) continue ;; esac
    head -n $((lineno - 1)) gen/parts.txt > "$tmp/prefix.txt"
    opened=$(grep -c '^#if' "$tmp/prefix.txt" || true)
    i=$(grep -c '^#endif' "$tmp/prefix.txt" || true)
    while [ "$i" -lt "$opened" ]; do echo '#endif' >> "$tmp/prefix.txt"; i=$((i + 1)); done
    ./gen/amalg "$tmp/prefix.txt" "$tmp/prefix.h"
    {
        echo '#define NN_IMPLEMENTATION'
        echo "#include \"$tmp/prefix.h\""
        echo "#include \"$PWD/$line\""
        echo 'typedef int nn__check_parts_unit; /* never an empty unit */'
    } > "$tmp/tu.c"
    if $cc -std=c99 -Wall -Wextra -pedantic -Werror -Wno-unused-function -Wno-undefined-internal -fsyntax-only -I. "$tmp/tu.c" 2> "$tmp/err"; then
        echo "ok: $line"
    else
        echo "FAIL: $line"; head -n 20 "$tmp/err"
        exit 1
    fi
done
