# bench/report.awk - bench/run.sh's summary: reads its RUN and BENCH name=env lines (a saved
# run's output will do: awk -f bench/report.awk saved.txt) and prints
#   - per figure, the median over the rounds with min and max, as a BENCH line. A figure
#     measured in several thread configurations (threads=T/B, the counterparts) reports the
#     configuration with the best median (threads=) and every configuration's (tried=);
#   - BENCH name=ratio lines from the medians (nn.h / the counterpart; for the composed
#     layers' ms per step, the counterpart / nn.h, so that above 1 nn.h is faster too);
#   - with a baseline build (build=baseline lines): BENCH name=vs_baseline lines, this build's
#     median / the baseline's, and their geometric mean over the throughput figures;
#   - the table of README.md's benchmark section, and the baseline table.
# Medians: of an even count, the mean of the two middle values.

function fmt(m, v) {
    if (v == "") return ""
    if (m == "samples_per_sec") return sprintf("%.0f", v)
    if (m == "gflops" || m == "gbps") return sprintf("%.2f", v)
    if (m == "ms" || m == "ms_per_step") return sprintf("%.3f", v)
    return sprintf("%.1f", v)
}
function lower_better(m) { return m ~ /ms$/ || m == "ms_per_step" }
# stats(KEY, N): median of V[KEY, 1..N] into MED, with LO and HI
function stats(key, n,    a, i, j, t) {
    for (i = 1; i <= n; i++) a[i] = V[key, i]
    for (i = 2; i <= n; i++) {
        t = a[i]
        for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]
        a[j + 1] = t
    }
    LO = a[1]; HI = a[n]
    MED = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# thousands separators for the table
function commas(x,    s, neg) {
    s = sprintf("%.0f", x); neg = ""
    if (s ~ /^-/) { neg = "-"; s = substr(s, 2) }
    while (s ~ /[0-9][0-9][0-9][0-9]$/ || s ~ /[0-9][0-9][0-9][0-9],/) sub(/[0-9][0-9][0-9](,|$)/, ",&", s)
    sub(/^,/, "", s)
    return neg s
}
function tfmt(m, v) {
    if (v == "") return "n/a"
    if (m == "samples_per_sec" || v >= 1000) return commas(v)
    return sprintf("%.1f", v)
}
# the memory-bound rows of the table: GB/s beside the host's copy bandwidth
function memrows(cl,    cp, k, op, label, c, o) {
    cp = get("name=mem backend=host op=copy", "gbps")
    for (k = 1; k <= 2; k++) {
        op = k == 1 ? "mul_add" : "sum_last"
        label = k == 1 ? "y = a*b + c over 16M floats (nn_mul, nn_add; 6 x 64 MiB moved), GB/s" : "sum over the last axis of [4096, 4096] (nn_sum_dim), GB/s"
        c = get("name=mem backend=cpu op=" op, "gbps"); o = cl != "" ? get("name=mem backend=" cl " op=" op, "gbps") : ""
        printf "| %s | %s | %s | memcpy of 256 MiB %s (read + written, best of 1 and 2 threads) | %s |\n", label, tfmt("gbps", c), tfmt("gbps", o),
            tfmt("gbps", cp), join("; ", x(c, cp) != "" ? "CPU " x(c, cp) " copy" : "", x(o, cp) != "" ? "OpenCL " x(o, cp) " copy" : "", "")
    }
}
# the composed layers' rows (FIGURES=layers): ms per training step, nn.h beside PyTorch
function layerrows(cl,    k, l, c, o, r, id) {
    for (k = 1; k <= NLAYER; k++) {
        l = LAYER[k]
        c = get("name=layer backend=cpu layer=" l, "ms_per_step")
        o = cl != "" ? get("name=layer backend=" cl " layer=" l, "ms_per_step") : ""
        id = "name=layer backend=torch layer=" l
        r = get(id, "ms_per_step")
        if (c == "" && o == "" && r == "") continue
        printf "| %s, ms per step | %s | %s | %s | %s |\n", LAYER_LABEL[l], lfmt(c), lfmt(o),
            r != "" ? "PyTorch " lfmt(r) thr(id) slow("torch") : "",
            join("; ", x(r, c) != "" ? "CPU " x(r, c) : "", x(r, o) != "" ? "OpenCL " x(r, o) : "", "")
    }
}
function lfmt(v) { return v == "" ? "n/a" : v >= 100 ? sprintf("%.0f", v) : v >= 10 ? sprintf("%.1f", v) : sprintf("%.2f", v) }
# get(ID, METRIC): the reported median of a figure, "" if none
# is_metric(K): whether a RUN line's field K is a figure (its median kept), not a part of the
# figure's name: the METRIC list, and any rate or time a benchmark adds later (a key with
# _per_ in it, or ms, or ending in _ms), so that a new field such as cpu_ms_per_step does not
# make every round's line a figure of its own (the README's cells then came out n/a)
function is_metric(k) { return (k in METRIC) || k ~ /_per_/ || k == "ms" || k ~ /_ms$/ }
function get(id, m) { return ((id, m) in M) ? M[id, m] : "" }
function x(a, b) { return (a != "" && b != "" && b > 0) ? sprintf("%.2fx", a / b) : "" }
# ratio(WHAT, A, B[, LIB]): A/B; LIB (torch, numpy) marks a ratio to a counterpart on a slow BLAS
function ratio(what, a, b, lib) {
    if (a != "" && b != "" && b > 0)
        printf "BENCH name=ratio what=%s value=%.3f%s\n", what, a / b,
            (lib != "" && ENV[lib, "blas_ok"] == "no") ? " warning=" lib "_on_" ENV[lib, "blas"] "_blas" : ""
}
# blasdesc(LIB): the BLAS under torch or numpy, in words
function blasdesc(lib,    s) {
    if (ENV[lib, "blas"] == "openblas")
        return "OpenBLAS " ENV[lib, "blas_version"] " (" ENV[lib, "blas_threading"] ", core " ENV[lib, "blas_core"] ")"
    s = ENV[lib, "blas"] == "reference" ? "the REFERENCE BLAS" : "BLAS " ENV[lib, "blas"]
    return s " (" ENV[lib, "blas_lib"] ")"
}
# slow(LIB): a mark for a table cell whose counterpart runs on a slow BLAS
function slow(lib) { return ENV[lib, "blas_ok"] == "no" ? " [on the " ENV[lib, "blas"] " BLAS]" : "" }
function thr(id) { return (id in BEST && BEST[id] != "") ? " (threads " BEST[id] ")" : "" }
# the threads of two figures shown together (conv forward / backward)
function thr2(a, b) {
    if (!(a in BEST) || !(b in BEST) || BEST[a] == BEST[b]) return thr(a)
    return " (threads " BEST[a] " forward, " BEST[b] " backward)"
}
function join(sep, a, b, c,    s) {
    s = a
    if (b != "" || s != "") s = s (s != "" && b != "" ? sep : "") b
    if (c != "") s = s (s != "" ? sep : "") c
    return s
}

BEGIN {
    METRIC["gbps"] = METRIC["gflops"] = METRIC["ms"] = METRIC["samples_per_sec"] = METRIC["cold_ms"] = METRIC["warm_ms"] = 1
    PRIMARY["sgemm"] = PRIMARY["conv2d"] = "gflops"
    PRIMARY["mlp_train"] = PRIMARY["cnn_train"] = "samples_per_sec"
    PRIMARY["cnn_train_bf16"] = "samples_per_sec"
    PRIMARY["start"] = "cold_ms"
    PRIMARY["mem"] = "gbps"
    PRIMARY["layer"] = "ms_per_step"
    PRIMARY["gpt_train"] = PRIMARY["gpt_generate"] = "tokens_per_sec"
    PRIMARY["fma_peak"] = "gflops"
    METRIC["tokens_per_sec"] = 1
    METRIC["ms_per_step"] = 1
    METRIC["tokens_per_sec"] = METRIC["launches_per_timestep"] = 1
    PRIMARY["rnn_train"] = "tokens_per_sec"
    NLAYER = split("se_block glu swiglu_ffn highway rmse_loss info_nce_loss rbf moe", LAYER, " ")
    LAYER_LABEL["se_block"] = "nn_se_layer x [32, 64, 16, 16], reduction 16"
    LAYER_LABEL["glu"] = "nn_glu x [256, 1024], dim -1"
    LAYER_LABEL["swiglu_ffn"] = "nn_swiglu_layer x [16, 64, 256], hidden 683"
    LAYER_LABEL["highway"] = "nn_highway_layer x [256, 512]"
    LAYER_LABEL["rmse_loss"] = "nn_rmse_loss [256, 512]"
    LAYER_LABEL["info_nce_loss"] = "nn_info_nce_loss z1, z2 [256, 128], temperature 0.1"
    LAYER_LABEL["rbf"] = "nn_rbf_layer x [256, 32], 128 centers"
    LAYER_LABEL["moe"] = "nn_moe_layer x [256, 256], 8 experts, top 2, hidden 512"
}

$1 == "BENCH" && $2 == "name=env" {
    what = ""
    for (i = 2; i <= NF; i++) if ($i ~ /^what=/) what = substr($i, 6)
    for (i = 2; i <= NF; i++) { p = index($i, "="); if (p) ENV[what, substr($i, 1, p - 1)] = substr($i, p + 1) }
    next
}

$1 == "RUN" {
    id = ""; cfg = ""; name = ""; nm = 0
    for (i = 2; i <= NF; i++) {
        p = index($i, "="); k = substr($i, 1, p - 1); v = substr($i, p + 1)
        if (k == "round") continue
        if (k == "threads") { cfg = v; continue }
        if (is_metric(k)) { MK[++nm] = k; MV[nm] = v; continue }
        id = id (id == "" ? "" : " ") $i
        if (k == "name") name = v
    }
    if (!(id in SEEN)) { SEEN[id] = 1; IDS[++NID] = id; NAME[id] = name }
    if (!((id, cfg) in CSEEN)) { CSEEN[id, cfg] = 1; NC[id]++; CFG[id, NC[id]] = cfg }
    for (j = 1; j <= nm; j++) {
        if (!((id, MK[j]) in MSEEN)) { MSEEN[id, MK[j]] = 1; NMET[id]++; MET[id, NMET[id]] = MK[j] }
        n = ++CNT[id SUBSEP cfg SUBSEP MK[j]]
        V[id SUBSEP cfg SUBSEP MK[j], n] = MV[j] + 0
    }
}

END {
    # ---- medians -------------------------------------------------------------------------
    for (f = 1; f <= NID; f++) {
        id = IDS[f]
        pm = (NAME[id] in PRIMARY) ? PRIMARY[NAME[id]] : MET[id, 1]
        best = ""; bestv = ""; tried = ""
        for (c = 1; c <= NC[id]; c++) {
            cfg = CFG[id, c]
            key = id SUBSEP cfg SUBSEP pm
            if (!(key in CNT)) continue
            stats(key, CNT[key])
            if (cfg != "") tried = tried (tried == "" ? "" : ",") cfg ":" fmt(pm, MED)
            if (bestv == "" || (lower_better(pm) ? MED < bestv : MED > bestv)) { bestv = MED; best = cfg }
        }
        BEST[id] = best
        line = "BENCH " id
        rounds = 0
        for (k = 1; k <= NMET[id]; k++) {
            m = MET[id, k]
            key = id SUBSEP best SUBSEP m
            if (!(key in CNT)) continue
            stats(key, CNT[key])
            M[id, m] = MED
            if (CNT[key] > rounds) rounds = CNT[key]
            line = line " " m "=" fmt(m, MED) " " m "_min=" fmt(m, LO) " " m "_max=" fmt(m, HI)
        }
        line = line " rounds=" rounds
        if (best != "") line = line " threads=" best " tried=" tried
        print line
    }

    # ---- ratios (as bench/run.sh printed them before rounds, from the medians) -------------
    cl = ENV["backends", "opencl"]; if (cl == "-") cl = ""
    ob = "name=sgemm backend=openblas"
    MLP_CPU = get("name=mlp_train backend=cpu batch=128", "samples_per_sec")
    MLP_TORCH = get("name=mlp_train backend=torch batch=128", "samples_per_sec")
    CNN_CPU = get("name=cnn_train backend=cpu batch=64", "samples_per_sec")
    CNN_TORCH = get("name=cnn_train backend=torch batch=64", "samples_per_sec")
    ratio("mlp_train_cpu_vs_torch", MLP_CPU, MLP_TORCH, "torch")
    for (rm = 1; rm <= split("char lstm512 gru512", RNNM, " "); rm++) {
        rid = "model=" RNNM[rm] " batch=" (RNNM[rm] == "char" ? "32 seq=64" : "64 seq=128")
        RT = get("name=rnn_train backend=torch " rid, "tokens_per_sec")
        ratio("rnn_" RNNM[rm] "_cpu_vs_torch", get("name=rnn_train backend=cpu " rid, "tokens_per_sec"), RT, "torch")
        if (cl != "") ratio("rnn_" RNNM[rm] "_opencl_vs_torch", get("name=rnn_train backend=" cl " " rid, "tokens_per_sec"), RT, "torch")
    }
    ratio("cnn_train_cpu_vs_torch", CNN_CPU, CNN_TORCH, "torch")
    ratio("cnn_train_bf16_vs_f32_cpu", get("name=cnn_train_bf16 backend=cpu batch=64", "samples_per_sec"), CNN_CPU, "")
    ratio("sgemm1024_cpu_vs_openblas", get("name=sgemm backend=cpu n=1024", "gflops"), get(ob " n=1024", "gflops"), "numpy")
    ratio("gemm16_1024_bf16_vs_f32", get("name=gemm16 backend=cpu shape=1024x1024x1024 dtype=bf16", "gflops"),
          get("name=gemm16 backend=cpu shape=1024x1024x1024 dtype=f32", "gflops"), "")
    ratio("gemm16_1024_f16_vs_f32", get("name=gemm16 backend=cpu shape=1024x1024x1024 dtype=f16", "gflops"),
          get("name=gemm16 backend=cpu shape=1024x1024x1024 dtype=f32", "gflops"), "")
    ratio("sgemm1024_cpu_vs_torch", get("name=sgemm backend=cpu n=1024", "gflops"), get("name=sgemm backend=torch n=1024", "gflops"), "torch")
    COPY = get("name=mem backend=host op=copy", "gbps")
    ratio("mem_mul_add_cpu_vs_copy", get("name=mem backend=cpu op=mul_add", "gbps"), COPY, "")
    ratio("mem_sum_last_cpu_vs_copy", get("name=mem backend=cpu op=sum_last", "gbps"), COPY, "")
    if (cl != "") {
        ratio("mem_mul_add_opencl_vs_copy", get("name=mem backend=" cl " op=mul_add", "gbps"), COPY, "")
        ratio("mem_sum_last_opencl_vs_copy", get("name=mem backend=" cl " op=sum_last", "gbps"), COPY, "")
        MLP_CL = get("name=mlp_train backend=" cl " batch=128", "samples_per_sec")
        ratio("mlp_train_opencl_vs_torch", MLP_CL, MLP_TORCH, "torch")
        ratio("mlp_train_opencl_vs_cpu", MLP_CL, MLP_CPU, "")
        ratio("cnn_train_opencl_vs_torch", get("name=cnn_train backend=" cl " batch=64", "samples_per_sec"), CNN_TORCH, "torch")
        ratio("sgemm1024_opencl_vs_clblast", get("name=sgemm backend=" cl " n=1024", "gflops"),
              get("name=sgemm backend=clblast:" cl " n=1024", "gflops"), "")
    }
    for (k = 1; k <= NLAYER; k++) {
        lt = get("name=layer backend=torch layer=" LAYER[k], "ms_per_step")
        ratio("layer_" LAYER[k] "_cpu_vs_torch", lt, get("name=layer backend=cpu layer=" LAYER[k], "ms_per_step"), "torch")
        if (cl != "") ratio("layer_" LAYER[k] "_opencl_vs_torch", lt, get("name=layer backend=" cl " layer=" LAYER[k], "ms_per_step"), "torch")
    }
    # GPT (FIGURES=gpt): nn.h / PyTorch tokens/s, the share of the FMA peak, cache / no cache
    for (f = 1; f <= NID; f++) {
        id = IDS[f]
        if (NAME[id] == "gpt_train" && id !~ /backend=torch/ && id !~ /^build=/) {
            tid = id; sub(/backend=[^ ]*/, "backend=torch", tid)
            mdl = id; sub(/.*model=/, "", mdl); sub(/ .*/, "", mdl)
            bk = id; sub(/.*backend=/, "", bk); sub(/ .*/, "", bk)
            ratio("gpt_" mdl "_" (bk == "cpu" ? "cpu" : "opencl") "_vs_torch", get(id, "tokens_per_sec"), get(tid, "tokens_per_sec"), "torch")
            pk = get("name=fma_peak", "gflops")
            if (pk == "") for (q = 1; q <= NID; q++) if (NAME[IDS[q]] == "fma_peak") pk = get(IDS[q], "gflops")
            if (pk != "") ratio("gpt_" mdl "_" (bk == "cpu" ? "cpu" : "opencl") "_fma_peak_share", get(id, "gflops"), pk, "")
        }
        if (NAME[id] == "gpt_generate" && id ~ /cache=yes/) {
            nid = id; sub(/cache=yes/, "cache=no", nid)
            bk = id; sub(/.*backend=/, "", bk); sub(/ .*/, "", bk)
            ratio("gpt_generate_" (bk == "cpu" ? "cpu" : "opencl") "_cache_vs_none", get(id, "tokens_per_sec"), get(nid, "tokens_per_sec"), "")
        }
    }
    PEAK = get("name=fma_peak", "gflops")
    if (PEAK == "") for (q = 1; q <= NID; q++) if (NAME[IDS[q]] == "fma_peak") PEAK = get(IDS[q], "gflops")
    if (PEAK != "") ratio("sgemm1024_cpu_fma_peak_share", get("name=sgemm backend=cpu n=1024", "gflops"), PEAK, "")
    nsh = split("64x1x28x28k32 64x32x14x14k64 8x64x56x56k64", SH, " ")
    for (s = 1; s <= nsh; s++)
        for (q = 1; q <= 2; q++) {
            ps = q == 1 ? "fwd" : "bwd"
            ratio("conv2d_" SH[s] "_" ps "_cpu_vs_torch", get("name=conv2d backend=cpu shape=" SH[s] " pass=" ps, "gflops"),
                  get("name=conv2d backend=torch shape=" SH[s] " pass=" ps, "gflops"), "torch")
            if (PEAK != "") ratio("conv2d_" SH[s] "_" ps "_cpu_fma_peak_share", get("name=conv2d backend=cpu shape=" SH[s] " pass=" ps, "gflops"), PEAK, "")
        }

    # ---- this build against the baseline ------------------------------------------------------
    nb = 0; logsum = 0; nlog = 0
    for (f = 1; f <= NID; f++) {
        id = IDS[f]
        if (id !~ /^build=baseline /) continue
        nid = substr(id, length("build=baseline ") + 1)
        if (!(nid in SEEN)) continue
        for (k = 1; k <= NMET[id]; k++) {
            m = MET[id, k]
            if (NAME[id] == "conv2d" && m == "ms") continue # the same figure as gflops
            a = get(nid, m); b = get(id, m)
            if (a == "" || b == "" || b <= 0) continue
            fig = nid; sub(/^name=/, "figure=", fig)
            printf "BENCH name=vs_baseline %s metric=%s this=%s baseline=%s value=%.3f\n", fig, m, fmt(m, a), fmt(m, b), a / b
            BL[++nb] = nid SUBSEP m
            if (!lower_better(m) && a > 0) { logsum += log(a / b); nlog++ }
        }
    }
    if (nlog > 0) printf "BENCH name=vs_baseline_geomean figures=%d value=%.3f\n", nlog, exp(logsum / nlog)

    # ---- the table -----------------------------------------------------------------------------
    rounds = ENV["run", "rounds"]
    cpu = ENV["machine", "cpu"]; gsub(/_/, " ", cpu)
    os = ENV["machine", "os"]; gsub(/_/, " ", os)
    print "#"
    printf "# %s rounds, medians (min and max in the BENCH lines); %s, %s cores, AVX-512 %s (%s); %s;\n",
        rounds, cpu, ENV["machine", "cores"], ENV["machine", "avx512"], ENV["machine", "simd"], os
    LAYERS_RUN = ENV["run", "figures"] == "layers"
    if (LAYERS_RUN && ("torch", "version") in ENV)
        printf "# PyTorch %s on %s, the best of %s threads (intra-op and OpenBLAS alike);\n",
            ENV["torch", "version"], blasdesc("torch"), ENV["run", "blas_threads"]
    else if (("torch", "version") in ENV)
        printf "# PyTorch %s on %s; training: the best of threads %s (intra-op/OpenBLAS),\n",
            ENV["torch", "version"], blasdesc("torch"), ENV["run", "torch_threads"]
    if (("numpy", "version") in ENV)
        printf "# NumPy %s on %s;\n", ENV["numpy", "version"], blasdesc("numpy")
    if (LAYERS_RUN) {
        printf "# OMP_WAIT_POLICY=PASSIVE, OPENBLAS_CORETYPE=%s. Composed layers: ms per training step (forward,\n", ENV["machine", "openblas_coretype"]
        print "# backward, Adam; no optimizer for glu, rmse_loss and info_nce_loss, whose inputs take the gradients),"
        print "# lower is faster; ratio: PyTorch's ms / nn.h's, above 1 nn.h is faster."
    } else
        printf "# SGEMM and conv counterparts: the best of %s threads; OMP_WAIT_POLICY=PASSIVE, OPENBLAS_CORETYPE=%s.\n",
            ENV["run", "blas_threads"], ENV["machine", "openblas_coretype"]
    for (w = 1; w <= 2; w++) {
        lib = w == 1 ? "torch" : "numpy"
        if (ENV[lib, "blas_ok"] == "no")
            printf "# !! WARNING: %s's BLAS is %s (%s, SGEMM 1024 at %s GFLOP/s): its figures are NOT its best.\n",
                lib, ENV[lib, "blas"], ENV[lib, "blas_lib"], ENV[lib, "sgemm1024_gflops"]
    }
    printf "# OpenCL column: %s\n", cl != "" ? cl : "no OpenCL device"
    print ""
    print "| figure | nn.h CPU backend | nn.h on OpenCL | reference (same run) | ratio |"
    print "|---|---|---|---|---|"
    if (ENV["run", "figures"] == "mem") { memrows(cl); exit }
    if (ENV["run", "figures"] == "gpt") exit # the BENCH lines above
    if (LAYERS_RUN) { layerrows(cl); exit }
    ofig = ""; oname = ""
    if (get(ob " n=1024", "gflops") != "") { oname = "OpenBLAS"; ofig = ob }
    else for (f = 1; f <= NID; f++) if (IDS[f] ~ /^name=sgemm backend=numpy-/ && IDS[f] ~ / n=1024$/) {
        ofig = IDS[f]; sub(/ n=1024$/, "", ofig); oname = ofig; sub(/.*backend=numpy-/, "", oname)
        oname = "NumPy on " (oname == "reference" ? "the reference BLAS" : "BLAS " oname) " (NOT OpenBLAS)"
    }
    c = get("name=sgemm backend=cpu n=1024", "gflops"); o = cl != "" ? get("name=sgemm backend=" cl " n=1024", "gflops") : ""
    r1 = ofig != "" ? get(ofig " n=1024", "gflops") : ""
    r2 = get("name=sgemm backend=torch n=1024", "gflops")
    r3 = cl != "" ? get("name=sgemm backend=clblast:" cl " n=1024", "gflops") : ""
    ref = join("; ", r1 != "" ? oname " " tfmt("gflops", r1) thr(ofig " n=1024") : "",
               r2 != "" ? "PyTorch " tfmt("gflops", r2) thr("name=sgemm backend=torch n=1024") slow("torch") : "",
               r3 != "" ? "CLBlast on OpenCL " tfmt("gflops", r3) : "")
    rat = join("; ", x(c, r1) != "" ? "CPU " x(c, r1) " " (oname == "OpenBLAS" ? "OpenBLAS" : "that BLAS") : "",
               x(o, r3) != "" ? "OpenCL " x(o, r3) " CLBlast" : "", "")
    printf "| SGEMM 1024, GFLOP/s | %s | %s | %s | %s |\n", tfmt("gflops", c), tfmt("gflops", o), ref, rat
    cs = os_ = rs = ""
    for (s = 1; s <= 3; s++) {
        n = s == 1 ? 256 : s == 2 ? 512 : 2048
        cs = cs (s > 1 ? " / " : "") tfmt("gflops", get("name=sgemm backend=cpu n=" n, "gflops"))
        os_ = os_ (s > 1 ? " / " : "") tfmt("gflops", cl != "" ? get("name=sgemm backend=" cl " n=" n, "gflops") : "")
        rs = rs (s > 1 ? " / " : "") tfmt("gflops", ofig != "" ? get(ofig " n=" n, "gflops") : "")
    }
    printf "| SGEMM 256 / 512 / 2048, GFLOP/s | %s | %s | %s %s | |\n", cs, os_, oname != "" ? oname : "OpenBLAS", rs
    for (t = 1; t <= 2; t++) {
        if (t == 1) { nm = "mlp_train"; b = "batch=128"; label = "MLP 784-256-128-10 training, samples/s (Adam, batch 128)" }
        else { nm = "cnn_train"; b = "batch=64"; label = "CNN of `examples/fashion_mnist_cnn.c` training, samples/s (batch 64)" }
        c = get("name=" nm " backend=cpu " b, "samples_per_sec")
        o = cl != "" ? get("name=" nm " backend=" cl " " b, "samples_per_sec") : ""
        r = get("name=" nm " backend=torch " b, "samples_per_sec")
        printf "| %s | %s | %s | %s | %s |\n", label, tfmt("samples_per_sec", c), tfmt("samples_per_sec", o),
            r != "" ? "PyTorch " tfmt("samples_per_sec", r) thr("name=" nm " backend=torch " b) slow("torch") : "",
            join("; ", x(c, r) != "" ? "CPU " x(c, r) " PyTorch" : "", x(o, r) != "" ? "OpenCL " x(o, r) " PyTorch" : "", "")
    }
    for (s = 1; s <= nsh; s++) {
        split(SH[s], d, /[xk]/)
        label = "conv " d[1] "x" d[2] "x" d[3] "x" d[4] " -> " d[5] ", 3x3, forward / backward GFLOP/s"
        cf = get("name=conv2d backend=cpu shape=" SH[s] " pass=fwd", "gflops")
        cb = get("name=conv2d backend=cpu shape=" SH[s] " pass=bwd", "gflops")
        of = cl != "" ? get("name=conv2d backend=" cl " shape=" SH[s] " pass=fwd", "gflops") : ""
        obk = cl != "" ? get("name=conv2d backend=" cl " shape=" SH[s] " pass=bwd", "gflops") : ""
        tf = get("name=conv2d backend=torch shape=" SH[s] " pass=fwd", "gflops")
        tb = get("name=conv2d backend=torch shape=" SH[s] " pass=bwd", "gflops")
        printf "| %s | %s / %s | %s / %s | %s | %s |\n", label, tfmt("gflops", cf), tfmt("gflops", cb),
            tfmt("gflops", of), tfmt("gflops", obk),
            (tf != "" || tb != "") ? "PyTorch " tfmt("gflops", tf) " / " tfmt("gflops", tb) thr2("name=conv2d backend=torch shape=" SH[s] " pass=fwd", "name=conv2d backend=torch shape=" SH[s] " pass=bwd") slow("torch") : "",
            (tf != "" || tb != "") ? "CPU " x(cf, tf) " / " x(cb, tb) : ""
    }
    c1 = get("name=start backend=cpu", "cold_ms"); c2 = get("name=start backend=cpu", "warm_ms")
    o1 = cl != "" ? get("name=start backend=" cl, "cold_ms") : ""; o2 = cl != "" ? get("name=start backend=" cl, "warm_ms") : ""
    printf "| start: context + MLP graph compile, ms (cold / warm program cache) | %s / %s | %s / %s | | |\n",
        tfmt("ms", c1), tfmt("ms", c2), tfmt("ms", o1), tfmt("ms", o2)
    memrows(cl)

    if (nb > 0) {
        print ""
        printf "# This build against the baseline (%s): medians of %s interleaved rounds.\n", ENV["run", "baseline"], rounds
        print "# this/baseline above 1 is faster, except for the ms lines (start-up), where below 1 is faster."
        print ""
        print "| figure | backend | this build | baseline | this / baseline |"
        print "|---|---|---|---|---|"
        for (i = 1; i <= nb; i++) {
            split(BL[i], pr, SUBSEP); nid = pr[1]; m = pr[2]
            fig = nid; be = ""
            if (match(fig, / backend=[^ ]*/)) { be = substr(fig, RSTART + 9, RLENGTH - 9); fig = substr(fig, 1, RSTART - 1) substr(fig, RSTART + RLENGTH) }
            sub(/^name=/, "", fig)
            unit = m == "gflops" ? "GFLOP/s" : m == "samples_per_sec" ? "samples/s" : m
            a = get(nid, m); b = get("build=baseline " nid, m)
            printf "| %s, %s | %s | %s | %s | %.3f |\n", fig, unit, be, tfmt(m, a), tfmt(m, b), a / b
        }
        if (nlog > 0) printf "| geometric mean of the %d throughput figures | | | | %.3f |\n", nlog, exp(logsum / nlog)
    }
}
