# Reads what Oclgrind and tests/nn_test wrote on stderr in each pass of tools/oclgrind.sh
# (PASS.err: the test binary's markers "nn_test: backend|case|fail|end ..." between
# Oclgrind's reports, which are blocks of lines separated by empty lines) and fails on any
# report, naming the kernel, the .cl file and line and the case, with the line's text read
# from the file (the sources nn.h builds start with #line directives, which the locations
# in Oclgrind's reports follow but the source text it prints does not: that text is left
# out). A case the test binary failed is a failure too, and so is any other output there.
#
# Kernel: Oclgrind names it ("Kernel: NAME", "When creating kernel 'NAME'", "Kernel 'NAME'
# not found"), or for an error an API call returned (a launch's total local memory) the
# case's own failure message does: nn.h's "kernels/FILE.cl KERNEL: CL_..."
#
# Temporary skips (skip_* below): reports of Oclgrind 21.10's own limits, each with the
# kernels it may touch; a failed case is excused only when every report in it is skipped.
#
# awk -f tools/oclgrind_check.awk OUT/survey.err OUT/api.err OUT/races.err OUT/small.err
# prints the report; exits 1 on any error.
BEGIN {
    # None today: the kernels' names prefix no other (Oclgrind 21.10 bills a kernel for the
    # __local variables of every kernel whose name starts with its own), and pad2d's
    # reflection is written without the llvm.abs that clang made of `if (i < 0) i = -i;`.
    # A skip is skip_kernel[r] (a regular expression for the kernel), skip_text[r] (for
    # the report) and skip_why[r], r = 1..nskip.
    nskip = 0
}

function flush(   i, nl, l, k, p, rest, head, fn, er, msg) {
    if (blk == "") return
    ne++
    e_text[ne] = blk
    e_case[ne] = pass SUBSEP cur
    nl = split(blk, l, "\n")
    head = l[1]
    k = ""
    e_loc[ne] = ""
    fn = er = msg = ""
    for (i = 1; i <= nl; i++) {
        if (l[i] ~ /^\tKernel: /) { k = l[i]; sub(/^\tKernel: /, "", k) }
        if (k == "" && match(l[i], /[Kk]ernel '[^']*'/)) k = substr(l[i], RSTART + 8, RLENGTH - 9) # creating one
        if (match(l[i], /At line [0-9]+ \(column [0-9]+\) of [^:]+:/)) {
            rest = substr(l[i], RSTART + 8, RLENGTH - 9) # "N (column M) of FILE"
            p = rest
            sub(/ .*/, "", p)
            sub(/.* of /, "", rest)
            if (index(" " e_loc[ne] " ", " " rest ":" p " ") == 0) e_loc[ne] = e_loc[ne] (e_loc[ne] == "" ? "" : " ") rest ":" p
        }
        if (l[i] ~ /^\tFunction: /) { fn = l[i]; sub(/^\tFunction: */, "", fn) }
        else if (l[i] ~ /^\tError: /) { er = l[i]; sub(/^\tError: */, "", er) }
        else if (i > 1 && fn != "" && l[i] ~ /^\t/) { msg = l[i]; sub(/^\t/, "", msg) }
    }
    if (head ~ /errors generated - suppressing further errors/) k = "(any: Oclgrind's limit of reports)"
    if (head ~ /^Oclgrind - OpenCL runtime error detected/) head = "API error: " fn " " er (msg == "" ? "" : ": " msg)
    else if (head ~ /^OCLGRIND FATAL ERROR/) { head = "fatal: " (nl > 1 ? l[2] : head) }
    gsub(/0x[0-9a-fA-F]+/, "0x...", head)
    e_head[ne] = head
    e_kernel[ne] = k
    blk = ""
}

# the text of line n of file f (a path from the repository root), or "?"
function source_line(f, n,   i, s, t) {
    i = 0
    t = "?"
    while ((getline s < f) > 0) if (++i == n) { t = s; break }
    close(f)
    sub(/^[ \t]+/, "", t)
    return t
}

FNR == 1 {
    flush()
    pass = FILENAME
    sub(/.*\//, "", pass)
    sub(/\.err$/, "", pass)
    cur = "(before the first case)"
    passes[++npass] = pass
}
/^nn_test: / {
    flush()
    line = $0
    sub(/^nn_test: /, "", line)
    if (line ~ /^backend /) { sub(/^backend /, "", line); cur = "(opening " line ")" }
    else if (line ~ /^case /) { sub(/^case /, "", line); cur = line; ncases[pass]++ }
    else if (line ~ /^fail /) {
        sub(/^fail /, "", line)
        c = pass SUBSEP cur
        failmsg[c] = failmsg[c] "        " line "\n"
        if (match(line, /kernels\/[A-Za-z0-9_]+\.cl [A-Za-z0-9_]+:/) && !(c in case_kernel)) {
            t = substr(line, RSTART, RLENGTH - 1)
            sub(/.* /, "", t)
            case_kernel[c] = t
        }
    } else if (line ~ /^end /) {
        sub(/^end /, "", line)
        if (line == "FAIL") failed[++nfailed] = pass SUBSEP cur
        else if (line == "ok") nok[pass]++
    }
    next
}
/^$/ { flush(); next }
{ blk = blk (blk == "" ? "" : "\n") $0 }

END {
    flush()
    bad = 0
    for (i = 1; i <= ne; i++) {
        if (e_kernel[i] == "" && (e_case[i] in case_kernel)) e_kernel[i] = case_kernel[e_case[i]]
        e_skip[i] = 0
        for (r = 1; r <= nskip; r++)
            if (e_kernel[i] ~ skip_kernel[r] && e_text[i] ~ skip_text[r]) { e_skip[i] = r; break }
        c = e_case[i]
        n_err[c]++
        if (e_skip[i]) { n_skipped_err[c]++; skip_count[e_skip[i]]++; skip_kernels[e_skip[i], e_kernel[i]] = 1 }
    }
    # the reports, one group per (kernel, locations, headline)
    for (i = 1; i <= ne; i++) {
        if (e_skip[i]) continue
        g = (e_kernel[i] == "" ? "?" : e_kernel[i]) SUBSEP e_loc[i] SUBSEP e_head[i]
        if (!(g in gcount)) { gorder[++ng] = g; gfirst[g] = i }
        gcount[g]++
    }
    for (j = 1; j <= ng; j++) {
        g = gorder[j]
        i = gfirst[g]
        split(e_case[i], cp, SUBSEP)
        split(g, gp, SUBSEP)
        printf "oclgrind: ERROR in kernel %s%s: %s\n", gp[1], (e_loc[i] == "" ? "" : " at " e_loc[i]), e_head[i]
        printf "    %d report%s; the first in pass %s, case %s\n", gcount[g], gcount[g] == 1 ? "" : "s", cp[1], cp[2]
        nloc = split(e_loc[i], locs, " ")
        for (m = 1; m <= nloc; m++) {
            f = locs[m]
            ln = f
            sub(/.*:/, "", ln)
            sub(/:[0-9]+$/, "", f)
            printf "    %s:%s: %s\n", f, ln, source_line(f, ln + 0)
        }
        nl = split(e_text[i], tl, "\n")
        for (m = 1; m <= nl; m++) # the report, less the source text after "At line" (see above)
            if (!(m > 1 && tl[m - 1] ~ /^\tAt line /)) printf "    | %s\n", tl[m]
        bad = 1
    }
    # the cases the test binary failed, unless every report in them was skipped
    for (j = 1; j <= nfailed; j++) {
        c = failed[j]
        split(c, cp, SUBSEP)
        if (n_err[c] > 0 && n_skipped_err[c] == n_err[c]) { excused[c] = 1; continue }
        if (++nbadcase <= 20) printf "oclgrind: FAIL in pass %s: %s\n%s", cp[1], cp[2], failmsg[c]
        bad = 1
    }
    if (nbadcase > 20) printf "oclgrind: FAIL in %d more cases (PASS.log and PASS.err)\n", nbadcase - 20
    for (r = 1; r <= nskip; r++) {
        if (!skip_count[r]) continue
        ks = ""
        for (k in skip_kernels) { split(k, kp, SUBSEP); if (kp[1] == r) ks = ks (ks == "" ? "" : ", ") kp[2] }
        printf "oclgrind: SKIPPED (temporary) %d report%s in kernels %s: %s\n", skip_count[r], skip_count[r] == 1 ? "" : "s", ks, skip_why[r]
    }
    for (j = 1; j <= nfailed; j++)
        if (failed[j] in excused) {
            split(failed[j], cp, SUBSEP)
            printf "oclgrind: SKIPPED (temporary) the failure of pass %s, case %s: only skipped reports\n", cp[1], cp[2]
        }
    for (j = 1; j <= npass; j++) printf "oclgrind: pass %s: %d cases begun, %d ok\n", passes[j], ncases[passes[j]], nok[passes[j]]
    ns = 0
    for (r = 1; r <= nskip; r++) ns += skip_count[r]
    printf "oclgrind: %d Oclgrind report%s (%d skipped), %d case%s failed by the test binary\n", ne, ne == 1 ? "" : "s", ns, nfailed, nfailed == 1 ? "" : "s"
    exit bad
}
