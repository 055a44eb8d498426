# The cases tools/oclgrind.sh runs, picked from the survey (NN_TEST_SURVEY: one line per
# compiled graph, "BACKEND<TAB>LABEL<TAB>COST<TAB> p:OP/FN ... k:FILE/KERNEL ...", written by
# tests/coverage.c's t_survey_write; a case with several graphs has several lines, their
# costs added and their features joined).
#
# A feature is an (op kind, function or -) pair of a node (p:) or a kernel launched (k:),
# on one backend (the CPU-tuning and the GPU-tuning pass pick separately: their kernels and
# shapes differ). For each (backend, feature):
#   api:   the cheapest case that has it, and the costliest one whose cost is at most cap
#          (larger shapes: more work-groups, tiles with edges), for the --check-api pass;
#   races: the cheapest case, for the kernels of the files matching local_re (the kernel
#          files that use __local memory or barriers), for the --data-races pass.
# Cost: the work-items of the graph's launches plus 256 a launch (t_survey_write). Ties go
# to the case surveyed first, so the pick is the same run to run.
#
# awk -v cap=N -v local_re=RE -v api=FILE -v races=FILE -f tools/oclgrind_pick.awk SURVEY
# writes "BACKEND<TAB>LABEL" lines (NN_TEST_CASES) to the two files and a summary to stdout.
BEGIN { FS = "\t" }
NF >= 4 {
    key = $1 "\t" $2
    if (!(key in cost)) {
        order[++n] = key
        cost[key] = 0
        if (!($1 in nback)) border[++nb] = $1
        nback[$1]++
    }
    cost[key] += $3
    m = split($4, f, " ")
    for (i = 1; i <= m; i++) {
        if ((key, f[i]) in has) continue
        has[key, f[i]] = 1
        nf[key]++
        feats[key, nf[key]] = f[i]
    }
}
END {
    for (i = 1; i <= n; i++) {
        key = order[i]
        split(key, kb, "\t")
        for (j = 1; j <= nf[key]; j++) {
            ft = feats[key, j]
            bf = kb[1] SUBSEP ft
            if (!(bf in small)) { bfeat[++nbf] = bf }
            if (!(bf in small) || cost[key] < cost[small[bf]]) small[bf] = key
            if (cost[key] <= cap && (!(bf in big) || cost[key] > cost[big[bf]])) big[bf] = key
            if (ft ~ /^p:/) { pair[kb[1], ft] = 1; allpair[ft] = 1 }
            else { kern[kb[1], ft] = 1; allkern[ft] = 1 }
        }
    }
    for (i = 1; i <= nbf; i++) {
        bf = bfeat[i]
        in_api[small[bf]] = 1
        if (bf in big) in_api[big[bf]] = 1
        split(bf, parts, SUBSEP)
        if (parts[2] ~ local_re) in_races[small[bf]] = 1
    }
    na = nr = 0
    for (i = 1; i <= n; i++) {
        key = order[i]
        if (key in in_api) { print key > api; na++; split(key, kb, "\t"); api_b[kb[1]]++; api_cost += cost[key] }
        if (key in in_races) { print key > races; nr++ }
    }
    close(api)
    close(races)
    for (b = 1; b <= nb; b++) {
        np = nk = 0
        for (k in pair) { split(k, parts, SUBSEP); if (parts[1] == border[b]) np++ }
        for (k in kern) { split(k, parts, SUBSEP); if (parts[1] == border[b]) nk++ }
        printf "pick [%s]: %d (op kind, function) pairs and %d kernels in %d cases surveyed; %d cases picked\n", border[b], np, nk, nback[border[b]], api_b[border[b]]
    }
    np = nk = 0
    for (k in allpair) np++
    for (k in allkern) nk++
    printf "pick: %d (op kind, function) pairs and %d kernels over both tunings; %d cases for --check-api (cost %d, cap %d), %d for --data-races (kernels matching %s)\n", np, nk, na, api_cost, cap, nr, local_re
}
