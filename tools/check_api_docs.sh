#!/bin/sh
# Lists every public function of src/api/api.h (an NN_API declaration) that has no doc
# comment, and fails when there is one. Documented: the comment ends on the line just above
# the declaration, or the declaration carries one on its own line(s); declarations written
# one after another with no blank line between share the comment above the first of them
# (nn_graph_save_state / nn_graph_load_state), and a typedef between a comment and the
# declaration (the function's desc) passes the comment on. `make check-api-docs`; part of
# check-parts.
set -eu
cd "$(dirname "$0")/.."
api=${1:-src/api/api.h}
awk -v file="$api" '
function name_of(s) { sub(/\(.*/, "", s); n = split(s, w, /[ \t*]+/); return w[n] }
{
    line = $0
    if (incont) {                       # the rest of a declaration spanning lines
        if (line ~ /\/\*|\/\//) gdoc = 1
        if (line ~ /;/) { incont = 0; if (!gdoc) bad[++nbad] = sprintf("%s:%d: %s", file, start, nm) }
        prev = "decl"; next
    }
    if (line ~ /^NN_API /) {
        if (prev == "comment") gdoc = 1
        else if (prev != "decl") gdoc = 0
        nm = name_of(line)
        if (line ~ /\/\*|\/\//) gdoc = 1
        if (line ~ /;/) { if (!gdoc) bad[++nbad] = sprintf("%s:%d: %s", file, NR, nm); prev = "decl" }
        else { incont = 1; start = NR }
        total++
        next
    }
    if (intype) {                       # inside a typedef struct/enum: its closing line
        if (line ~ /^}.*;/) { intype = 0; prev = tdoc ? "comment" : "other" }
        next
    }
    if (line ~ /^(typedef|struct|enum) /) {
        tdoc = (prev == "comment")
        if (line ~ /;[ \t]*(\/\*.*)?$/ && line !~ /{[^}]*$/) prev = tdoc ? "comment" : "other"
        else intype = 1
        next
    }
    if (incomment) { if (line ~ /\*\//) { incomment = 0 }; prev = "comment"; next }
    if (line ~ /^[ \t]*\/\*/) { if (line !~ /\*\//) incomment = 1; prev = "comment"; next }
    if (line ~ /^[ \t]*\/\//) { prev = "comment"; next }
    if (line ~ /\*\/[ \t]*$/) { prev = "comment"; next }   # a comment closing after code
    prev = (line ~ /^[ \t]*$/) ? "blank" : "other"
}
END {
    for (i = 1; i <= nbad; i++) print bad[i] ": no doc comment"
    printf "check-api-docs: %d public functions, %d without a doc comment\n", total, nbad
    exit nbad > 0
}' "$api"
