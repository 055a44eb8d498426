# nn.h: generate the header, build and run the tests, examples and benchmarks.
CC      ?= cc
CFLAGS  ?= -O2
WARN     = -std=c99 -Wall -Wextra -pedantic -Werror
KERNELS  = $(wildcard kernels/*.cl kernels/*.h)
SOURCES  = $(wildcard src/*/*.c src/*/*.h src/*/*/*.c src/*/*/*.h) gen/parts.txt
TESTSRC  = $(filter-out tests/fuzz_%.c tests/interop_%.c tests/fault_%.c tests/dist_%.c,$(wildcard tests/*.c))
DATA_DIR ?= data/fashion-mnist

# No OpenCL headers or -lOpenCL: nn.h declares what it calls and loads the library at run
# time. dlopen is in the C library since glibc 2.34; older ones need -ldl.
DL_LIBS := $(shell printf '\043include <dlfcn.h>\nint main(void){return dlopen("x", 0) != 0;}\n' | \
             $(CC) -x c - -o /dev/null >/dev/null 2>&1 || echo -ldl)
LIBS = -lm -lpthread $(DL_LIBS)

.PHONY: all test test-asan test-tsan test-oclgrind check-gen check-warnings check-parts check-determinism examples demo bench bench-mem bench-layers compile-scale clean bench-rnn bench-gpt

all: nn.h

gen/amalg: gen/amalg.c
	$(CC) -O2 $(WARN) -o $@ $<

nn.h: gen/amalg $(SOURCES) $(KERNELS)
	./gen/amalg gen/parts.txt nn.h

# Fails when the committed nn.h is not what the generator makes.
check-gen: gen/amalg
	@t=$$(mktemp) && ./gen/amalg gen/parts.txt $$t && \
	if cmp -s nn.h $$t; then rm -f $$t; echo "check-gen: nn.h is up to date"; \
	else rm -f $$t; echo "check-gen: nn.h differs from a fresh generation; run make"; exit 1; fi

tests/nn_test: nn.h $(TESTSRC) $(wildcard tests/*.h) examples/progress.h tools/plot_metrics.c
	$(CC) $(CFLAGS) $(WARN) -o $@ $(TESTSRC) $(LIBS)

test: tests/nn_test
	./tests/nn_test

# The CPU backend under AddressSanitizer and UBSan.
tests/nn_test_asan: nn.h $(TESTSRC) $(wildcard tests/*.h) examples/progress.h tools/plot_metrics.c
	$(CC) -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all $(WARN) \
	  -o $@ $(TESTSRC) $(LIBS)

test-asan: tests/nn_test_asan
	ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 NN_TEST_BACKENDS=cpu ./tests/nn_test_asan

# The thread cases (tests/test_threads.c: one context from several threads, contexts on
# several threads at once) under ThreadSanitizer, on the CPU backend and PoCL.
tests/nn_test_tsan: nn.h $(TESTSRC) $(wildcard tests/*.h)
	$(CC) -O1 -g -fsanitize=thread -fno-omit-frame-pointer $(WARN) -o $@ $(TESTSRC) $(LIBS)

test-tsan: tests/nn_test_tsan
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" NN_TEST_FILTER="threads:" ./tests/nn_test_tsan

# The op checker's cases on Oclgrind (Debian's oclgrind) with NVIDIA-like limits, in the
# CPU-tuning and the GPU-tuning shapes: for every (op kind, function) pair and kernel its
# cheapest case and a larger one under --check-api, then the cheapest case of every kernel
# of the files that use local memory or barriers under --data-races; any Oclgrind report
# fails, naming the kernel and the .cl line (tools/oclgrind.sh; logs in tests/oclgrind-out/).
test-oclgrind: tests/nn_test
	./tools/oclgrind.sh

# Each part of gen/parts.txt compiled after the parts above it, diagnostics at its own lines.
check-parts: gen/amalg
	./tools/check_parts.sh
	./tools/check_api_docs.sh

# Every public function (NN_API in src/api/api.h) has a doc comment (tools/check_api_docs.sh).
.PHONY: check-api-docs
check-api-docs:
	./tools/check_api_docs.sh

# The same initial weights, and the same weights after 10 Adam and AdamW steps of an MLP and a
# CNN, from gcc and clang, -O0 to -O3, with and without -march=native, gcc's
# -ffp-contract=fast, C and C++ (tools/init_hash.c prints their hashes; tools/check_determinism.sh
# builds and compares; the clang -ffp-contract=fast build must say that it fuses instead).
check-determinism: nn.h tools/init_hash.c tools/check_determinism.sh
	./tools/check_determinism.sh

# nn.h as C99 and C++, with gcc and clang, with and without OpenCL, with and without
# NN_STATIC; nn.h including no CL/ header; then nn.h after the system's <CL/cl.h>, whose
# types it then uses (where that header is installed). gcc at -O2 and -O3 (its flow-based
# warnings need the optimiser; -O0 too for the plain builds), clang at -O2 (its warnings
# are its front end's); JOBS builds at a time (tools/check_warnings.sh, default 2).
check-warnings: nn.h tools/check_warnings.sh
	./tools/check_warnings.sh

# The implementation compiled once (tools/nn_impl.c), and the examples linked against it:
# each example defines NN_IMPLEMENTATION (so that it also builds alone, as README shows),
# and -DNN_IMPLEMENTATION_DONE makes that define include the declarations only. The test
# binary's implementation is tests/coverage.c's (it reads the library's internals).
IMPL_OBJ = build/nn_impl.o
EXAMPLE_CFLAGS = $(CFLAGS) -I. -DNN_IMPLEMENTATION_DONE
$(IMPL_OBJ): tools/nn_impl.c nn.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -I. -c -o $@ tools/nn_impl.c

EXAMPLES = examples/xor examples/fashion_mnist_mlp examples/fashion_mnist_cnn examples/fashion_mnist_vae \
           examples/char_lstm examples/tiny_gpt
# classifies with a model file alone (fashion_mnist_mlp saves one at its end)
EXAMPLES += examples/predict
examples: $(EXAMPLES)
examples/xor: examples/xor.c $(IMPL_OBJ)
	$(CC) $(EXAMPLE_CFLAGS) -o $@ $< $(IMPL_OBJ) $(LIBS)
examples/char_lstm: examples/char_lstm.c examples/text_corpus.h examples/progress.h $(IMPL_OBJ)
	$(CC) $(EXAMPLE_CFLAGS) -o $@ $< $(IMPL_OBJ) $(LIBS)
examples/tiny_gpt: examples/tiny_gpt.c examples/text_corpus.h examples/progress.h $(IMPL_OBJ)
	$(CC) $(EXAMPLE_CFLAGS) -o $@ $< $(IMPL_OBJ) $(LIBS)
# zlib (zlib1g-dev) when its header and library are here: then the example reads the .gz
# files as they are; without it, -DFMNIST_NO_ZLIB: plain IDX files only, which `make demo`
# has tools/get_fashion_mnist.sh --gunzip write into $(DATA_DIR) with gzip -dc. A compile
# test like dlopen's above, run only by the two rules below (a recursive variable).
FMNIST_HAVE_ZLIB = $(shell printf '\043include <zlib.h>\nint main(void){return zlibVersion()==0;}\n' | \
                     $(CC) -x c - -o /dev/null -lz >/dev/null 2>&1 && echo 1)
examples/fashion_mnist_mlp examples/fashion_mnist_cnn examples/fashion_mnist_vae examples/predict: examples/%: examples/%.c examples/fashion_mnist.h examples/progress.h $(IMPL_OBJ)
	$(if $(FMNIST_HAVE_ZLIB),,@echo "nn.h: no zlib headers/library found: the example reads uncompressed IDX files only (-DFMNIST_NO_ZLIB)")
	$(CC) $(EXAMPLE_CFLAGS) $(if $(FMNIST_HAVE_ZLIB),,-DFMNIST_NO_ZLIB) -o $@ $< $(IMPL_OBJ) $(if $(FMNIST_HAVE_ZLIB),-lz) $(LIBS)

# Trains the MLP on Fashion-MNIST, fetching the dataset into ./data if it is not here
# (decompressed there when the example is built without zlib). When the script finds the
# system copy instead (/usr/share/datasets/fashion-mnist), DATA_DIR stays empty and the
# example is given "" (search), which finds it.
demo: examples/fashion_mnist_mlp
	@./tools/get_fashion_mnist.sh $(if $(FMNIST_HAVE_ZLIB),,--gunzip) $(DATA_DIR)
	@d='$(DATA_DIR)'; [ -s "$$d/train-images-idx3-ubyte" ] || [ -s "$$d/train-images-idx3-ubyte.gz" ] || d=; \
	  echo "./examples/fashion_mnist_mlp '$$d'"; ./examples/fashion_mnist_mlp "$$d"

bench/nn_bench: bench/nn_bench.c bench/models.h nn.h
	$(CC) $(CFLAGS) -I. -o $@ $< $(LIBS)

# Two builds of nn.h side by side in one process, the MLP's or the CNN's step alternating
# (bench/ab_step.c): `make bench/ab_step AB_A=/old/tree/nn.h` (AB_B defaults to this nn.h),
# then `./bench/ab_step DEVICE [mlp|cnn] [ROUNDS]`.
AB_A ?= nn.h
AB_B ?= nn.h
bench/ab_step: bench/ab_step.c bench/ab_step_tu.c bench/models.h $(AB_A) $(AB_B)
	$(CC) $(CFLAGS) $(WARN) -c -DAB_PREFIX=a_ -DAB_HEADER='"$(abspath $(AB_A))"' -o $@_a.o bench/ab_step_tu.c
	$(CC) $(CFLAGS) $(WARN) -c -DAB_PREFIX=b_ -DAB_HEADER='"$(abspath $(AB_B))"' -o $@_b.o bench/ab_step_tu.c
	$(CC) $(CFLAGS) $(WARN) -o $@ bench/ab_step.c $@_a.o $@_b.o $(LIBS)
	rm -f $@_a.o $@_b.o

# Optional: CLBlast's SGEMM on the same OpenCL devices, for comparison (libclblast-dev).
bench/sgemm_clblast: bench/sgemm_clblast.c
	$(CC) $(CFLAGS) -o $@ $< -lclblast -lOpenCL

bench/compile_scale: bench/compile_scale.c nn.h
	$(CC) $(CFLAGS) $(WARN) -D_POSIX_C_SOURCE=200809L -I. -o $@ $< $(LIBS)

# nn_graph_compile's time for 2,000 and 20,000 dense layers (it must grow about linearly).
compile-scale: bench/compile_scale
	./bench/compile_scale 2000
	./bench/compile_scale 20000

# bench/run.sh: ROUNDS rounds (default 4) of nn.h's figures and their PyTorch, OpenBLAS and
# CLBlast counterparts, interleaved; medians with min/max, ratios and README's table. About
# 8 minutes on a quiet 2-core machine. `make bench ROUNDS=n`; `make bench ONLY=nn
# BASELINE=/other/tree/bench/nn_bench` runs another build's nn_bench beside this one and
# prints this/baseline per figure (see bench/run.sh for the other knobs).
bench: bench/nn_bench bench/gpt_bench
	./bench/run.sh

# Only the memory-bound lines (copy bandwidth, y = a*b + c, a sum over the last axis), in
# GB/s: `make bench-mem [ROUNDS=n]`.
bench-mem: bench/nn_bench
	FIGURES=mem ./bench/run.sh

# ms per training step of each composed layer (src/layers/layers.c) on every backend beside
# PyTorch's (bench/layers_torch.py) at 1 and 2 threads: `make bench-layers [ROUNDS=n]`.
bench-layers: bench/nn_bench
	FIGURES=layers ./bench/run.sh

# GPT training tokens/s (the tiny GPT of examples/tiny_gpt.c, a GPT-2-small-shaped one) per
# backend beside PyTorch's (bench/gpt_torch.py), the FMA peak, generation with and without
# the key/value cache: `make bench-gpt [ROUNDS=n]` (the GPT-2-small figures take minutes).
bench/gpt_bench: bench/gpt_bench.c nn.h
	$(CC) $(CFLAGS) -I. -o $@ $< $(LIBS)

bench-gpt: bench/nn_bench bench/gpt_bench
	FIGURES=gpt ./bench/run.sh

# ---- the GPU report: built here, run where the GPU is (tools/gpu_report.sh) ------------------
# `make gpu-report-build` puts into build/gpu-report/ (about 6 MiB) what a machine with a GPU
# and no compiler, package or network needs: tests/nn_test, bench/nn_bench with run.sh and
# report.awk, tools/cl_facts, the script, their sources (src/: rebuilt there when the
# binaries need a newer C library than that machine has), and BUILD-INFO (commit, compiler,
# the C library the binaries need). There: `sh build/gpu-report/gpu_report.sh [OUT]` writes
# OUT/gpu-report.log and OUT/gpu-report-summary.txt in at most GPU_REPORT_SECONDS (540).
# `make gpu-report` does both here, on this machine's OpenCL devices (GPU_REPORT_OUT).
GPU_REPORT_DIR = build/gpu-report
GPU_REPORT_OUT ?= build/gpu-report-out
.PHONY: gpu-report-build gpu-report

# ---- the segment family's figures (issue 17): the embedding's backward at 20000 x 128 with
# 2048 indices and nn_scatter_add on 2000 nodes, 20000 edges, 128 features, ms per step on
# the CPU backend and OpenCL (bench/segment_bench.c; SEG_BASELINE=dir/nn.h also times that
# build's code, built from the same source with -DSEG_BASELINE).
bench/segment_bench: bench/segment_bench.c nn.h
	$(CC) $(CFLAGS) -I. -o $@ $< $(LIBS)
.PHONY: bench-segment
bench-segment: bench/segment_bench
	@for dev in cpu opencl; do ./bench/segment_bench $$dev || exit 1; done
	@if [ -n "$(SEG_BASELINE)" ]; then \
	  $(CC) $(CFLAGS) -I$$(dirname $(SEG_BASELINE)) -DSEG_BASELINE -o bench/segment_bench_base bench/segment_bench.c $(LIBS) && \
	  for dev in cpu opencl; do ./bench/segment_bench_base $$dev 1 | sed 's/^segment /segment baseline=$(subst /,\/,$(SEG_BASELINE)) /' || exit 1; done; fi

# ---- a mixture of experts' training step, dense against top-2 dispatch at capacity 1.25 and
# 4 (issue 19; bench/moe_bench.c): `make bench-moe [ROUNDS=n]`, ms per step on cpu and opencl.
bench/moe_bench: bench/moe_bench.c nn.h
	$(CC) $(CFLAGS) -I. -o $@ $< $(LIBS)
.PHONY: bench-moe
bench-moe: bench/moe_bench
	@for dev in cpu opencl; do ./bench/moe_bench $$dev $(or $(ROUNDS),3) || exit 1; done

$(GPU_REPORT_DIR)/tools/cl_facts: tools/cl_facts.c nn.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -I. -o $@ tools/cl_facts.c $(LIBS)

gpu-report-build: tests/nn_test bench/nn_bench $(GPU_REPORT_DIR)/tools/cl_facts tools/gpu_report.sh bench/run.sh bench/report.awk
	@d=$(GPU_REPORT_DIR); rm -rf $$d/src && mkdir -p $$d/tests $$d/bench $$d/src/tests $$d/src/bench $$d/src/tools && \
	  cp tests/nn_test $$d/tests/ && cp bench/nn_bench bench/run.sh bench/report.awk $$d/bench/ && \
	  cp tools/gpu_report.sh $$d/ && cp nn.h $$d/src/ && cp $(TESTSRC) $(wildcard tests/*.h) $$d/src/tests/ && \
	  cp bench/nn_bench.c bench/models.h $$d/src/bench/ && cp tools/cl_facts.c $$d/src/tools/ && \
	  glibc=$$(for f in $$d/tests/nn_test $$d/bench/nn_bench $$d/tools/cl_facts; do objdump -T $$f 2>/dev/null; done | \
	    grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1) && \
	  { echo "built: commit $$(git rev-parse --short HEAD 2>/dev/null || echo '?')$$(git diff --quiet HEAD -- 2>/dev/null || \
	      echo ' with uncommitted changes'), $$(date -u '+%Y-%m-%d %H:%M UTC'), $$($(CC) --version | head -n 1), CFLAGS $(CFLAGS)"; \
	    echo "build machine: $$(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' /etc/os-release 2>/dev/null)," \
	      "$$(getconf GNU_LIBC_VERSION 2>/dev/null)"; \
	    echo "needs: a C library with GLIBC_$${glibc:-?} (objdump -T), Linux, an OpenCL driver (loaded at run time)"; } >$$d/BUILD-INFO && \
	  cat $$d/BUILD-INFO && echo "$$d: $$(du -sk $$d | cut -f1) KiB; run there: sh $$d/gpu_report.sh [OUT]"

gpu-report: gpu-report-build
	sh $(GPU_REPORT_DIR)/gpu_report.sh $(GPU_REPORT_OUT)

clean:
	rm -rf tests/oclgrind-out
	rm -f $(IMPL_OBJ)
	rm -f gen/amalg tests/nn_test tests/nn_test_asan tests/nn_test_tsan tests/interop_mlp $(EXAMPLES) bench/nn_bench bench/ab_step bench/compile_scale bench/sgemm_clblast bench/segment_bench bench/segment_bench_base bench/moe_bench tests/interop_rnn bench/rnn_bench tests/interop_gpt bench/gpt_bench
	rm -rf build/gpu-report build/gpu-report-out

# ---- fuzzing: every loader of untrusted bytes under libFuzzer, ASan and UBSan (clang) -------
# `make fuzz [FUZZ_SECONDS=n]` runs each target for n seconds (default 30) and prints one line
# per target: FUZZ target=<t> execs=N crashes=N; then the allocation-failure sweep (below).
# Targets: safetensors (nn_load_safetensors), state (nn_load_state), idx (nn_load_idx), csv
# (nn_load_csv and its number parser), cache (the program cache's file parser,
# nn__cache_parse), model (nn_model_load's JSON and model files). Seeds:
# tests/fuzz_corpus/<t>/ (stays as committed; `make fuzz-seeds` rewrites the state, idx,
# csv, cache and model seeds from the library itself); new
# inputs go to tests/fuzz_work/<t>/, crash, leak and timeout inputs to
# tests/fuzz_artifacts/<t>/, the fuzzer's log to tests/fuzz_<t>.log.
FUZZ_SECONDS ?= 30
FUZZ_CC ?= clang
FUZZ_TARGETS = safetensors state idx csv cache model
FUZZ_BINS = $(FUZZ_TARGETS:%=tests/fuzz_%)
.PHONY: fuzz fuzz-seeds fuzz-alloc clean-fuzz fault-cl

$(FUZZ_BINS): tests/fuzz_%: tests/fuzz_%.c tests/fuzz.h nn.h
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DNN_NO_OPENCL -DNN_FUZZ \
	  $(WARN) -o $@ $< -lm -lpthread

fuzz: $(FUZZ_BINS) tests/fuzz_alloc
	@status=0; for t in $(FUZZ_TARGETS); do \
	  art=tests/fuzz_artifacts/$$t; log=tests/fuzz_$$t.log; mkdir -p tests/fuzz_work/$$t $$art; \
	  before=$$(ls $$art | grep -cE '^(crash|leak|timeout|oom)-'); rc=0; \
	  ./tests/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 \
	    -artifact_prefix=$$art/ tests/fuzz_work/$$t tests/fuzz_corpus/$$t >$$log 2>&1 || rc=$$?; \
	  crashes=$$(( $$(ls $$art | grep -cE '^(crash|leak|timeout|oom)-') - before )); \
	  execs=$$(sed -n 's/^stat::number_of_executed_units: *\([0-9][0-9]*\).*/\1/p' $$log | tail -n 1); \
	  [ -n "$$execs" ] || execs=$$(sed -n 's/^Done \([0-9][0-9]*\) runs.*/\1/p' $$log | tail -n 1); \
	  echo "FUZZ target=$$t execs=$${execs:-0} crashes=$$crashes"; \
	  if [ $$crashes -gt 0 ] || [ $$rc -ne 0 ]; then tail -n 30 $$log >&2; status=1; fi; \
	done; \
	./tests/fuzz_alloc || status=1; \
	exit $$status

fuzz-seeds: tests/fuzz_state tests/fuzz_idx tests/fuzz_csv tests/fuzz_cache tests/fuzz_model
	@for t in state idx csv cache model; do mkdir -p tests/fuzz_corpus/$$t; \
	  NN_FUZZ_WRITE_SEEDS=tests/fuzz_corpus/$$t ./tests/fuzz_$$t || exit 1; done

# Allocation failures over a training life cycle: tests/fuzz_alloc.c runs a scenario on the
# CPU backend (a context; an MLP and a CNN built, compiled with Adam and SGD with momentum
# and clipping, trained a few steps, their outputs read; an eval graph sharing parameters;
# safetensors and training state saved and loaded; a CSV and an IDX file loaded into a
# dataset that trains; everything destroyed) and fails its Nth allocation, for every N of
# the clean run's T (about 475), once and then from the Nth on: 2T + 1 runs, about 20-40 s.
# Each call must give the clean run's results bit for bit, or NN_ERR_OUT_OF_MEMORY with a
# message; no leak, no open file, no hang. It also checks that the GEMM's fallback for
# failed packing buffers gives the blocked path's bits. ASan, LSan and UBSan; any compiler
# that has them. NN_FUZZ_ALLOC_WHERE=N prints where the clean run's Nth allocation is.
FUZZ_ALLOC_CC ?= $(FUZZ_CC)
tests/fuzz_alloc: tests/fuzz_alloc.c nn.h
	$(FUZZ_ALLOC_CC) -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -DNN_NO_OPENCL \
	  -DNN_FUZZ_ALLOC $(WARN) -o $@ $< -lm -lpthread

fuzz-alloc: tests/fuzz_alloc
	./tests/fuzz_alloc

# ---- device-call fault injection: the N-th OpenCL call fails, for every N ----------------------
# `make fault-cl` prints FAULT calls=N runs=N ... leaks=0 wrong=0 silent=0 (tests/fault_cl.c).
tests/fault_cl: tests/fault_cl.c nn.h
	$(CC) -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all $(WARN) \
	  -D_POSIX_C_SOURCE=200809L -o $@ tests/fault_cl.c -lm -lpthread

# The binaries CI runs that are each one long compile of nn.h: `make -j2 ci-binaries` builds
# them two at a time (.ci/run).
.PHONY: ci-binaries
ci-binaries: tests/nn_test tests/nn_test_asan tests/nn_test_tsan tests/fault_cl $(FUZZ_BINS) tests/fuzz_alloc

# FAULT_JOBS shards at once (NN_FAULT_SHARD=i/n), each printing its own FAULT line.
FAULT_JOBS ?= 2
fault-cl: tests/fault_cl
	@i=0; pids=; while [ $$i -lt $(FAULT_JOBS) ]; do \
	  ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/fault_cl.supp \
	    NN_FAULT_SHARD=$$i/$(FAULT_JOBS) ./tests/fault_cl >tests/fault_cl.$$i.log 2>&1 & pids="$$pids $$!"; i=$$((i + 1)); done; \
	status=0; for p in $$pids; do wait $$p || status=1; done; \
	i=0; while [ $$i -lt $(FAULT_JOBS) ]; do cat tests/fault_cl.$$i.log; rm -f tests/fault_cl.$$i.log; i=$$((i + 1)); done; \
	exit $$status

clean-fuzz:
	rm -rf $(FUZZ_BINS) tests/fuzz_alloc tests/fuzz_work $(FUZZ_TARGETS:%=tests/fuzz_%.log)

# ---- interop: nn.h and PyTorch train the Fashion-MNIST MLP side by side ---------------------
# `make interop` prints one line, INTEROP steps=20 max_rel_loss_diff=<x> max_abs_weight_diff=<x>,
# and fails unless the per-step losses agree within 1e-4 relative (tests/interop_torch.py).
# PyTorch in its best configuration here: 2 threads, passive OpenMP waits, and OpenBLAS
# choosing its own kernels (OPENBLAS_CORETYPE unset). INTEROP_DATA: the gz IDX files.
INTEROP_DATA ?= /usr/share/datasets/fashion-mnist
.PHONY: interop
tests/interop_mlp: tests/interop_mlp.c nn.h
	$(CC) $(CFLAGS) $(WARN) -o $@ $< $(LIBS)

interop: tests/interop_mlp tests/interop_rnn tests/interop_gpt
	env -u OPENBLAS_CORETYPE OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tests/interop_torch.py tests/interop_mlp $(INTEROP_DATA)
	env -u OPENBLAS_CORETYPE OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tests/interop_rnn.py tests/interop_rnn
	env -u OPENBLAS_CORETYPE OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tests/interop_gpt.py tests/interop_gpt

# ---- attention: fused nn_attention against the composed matmul + softmax + matmul ----------
# forward + backward at B = 4, H = 8, D = 64, T = 256, 1024, 4096, per backend, time and
# arena bytes (bench/attention.sh; ROUNDS, BACKENDS, TS, MASK, COMPOSED_4096 there).
bench/attention_bench: bench/attention_bench.c nn.h
	$(CC) $(CFLAGS) $(WARN) -I. -o $@ $< $(LIBS)

bench-attention: bench/attention_bench
	./bench/attention.sh
.PHONY: bench-attention

# the recurrent lines (tests/interop_rnn.py): examples/char_lstm.c's model, 20 Adam steps
tests/interop_rnn: tests/interop_rnn.c nn.h
	$(CC) $(CFLAGS) $(WARN) -o $@ $< $(LIBS)

# ---- recurrent: the time loop's representation, measured (HACKING.md, "Recurrent layers") ----
# `make bench/rnn_loop && ./bench/rnn_loop [T B I H steps]` (NN_DEVICE picks the backend)
bench/rnn_loop: bench/rnn_loop.c nn.h
	$(CC) $(CFLAGS) $(WARN) -D_POSIX_C_SOURCE=200809L -I. -o $@ $< $(LIBS)
# ---- recurrent examples' figures (bench/rnn_bench.c, bench/char_lstm_torch.py) ----------------
# Training tokens/s of the char-LSTM (examples/char_lstm.c's model), a 2-layer LSTM and GRU of
# 512 (batch 64, sequence 128) on every backend, with kernel launches per time step, beside
# PyTorch's at 1 and 2 threads: `make bench-rnn [ROUNDS=n]`.
bench/rnn_bench: bench/rnn_bench.c nn.h
	$(CC) $(CFLAGS) $(WARN) -I. -o $@ $< $(LIBS)
bench-rnn: bench/nn_bench bench/rnn_bench
	FIGURES=rnn ./bench/run.sh

# the tiny GPT against nanoGPT's model in PyTorch (tests/interop_gpt.py): logits, 20 AdamW steps
tests/interop_gpt: tests/interop_gpt.c nn.h
	$(CC) $(CFLAGS) $(WARN) -o $@ $< $(LIBS)

# Data-parallel training over MPI (src/dist/dist.c, -DNN_MPI): tests/dist_test.c under
# mpirun with 2 and 3 ranks on this machine (Open MPI: libopenmpi-dev openmpi-bin; as root
# the two OMPI_ALLOW_RUN_AS_ROOT variables; --oversubscribe for more ranks than cores).
MPICC  ?= mpicc
MPIRUN ?= mpirun
MPIRUN_FLAGS ?= --oversubscribe
.PHONY: dist-test dist-bench
tests/dist_test: nn.h tests/dist_test.c
	$(MPICC) $(CFLAGS) $(WARN) -I. -o $@ tests/dist_test.c $(LIBS)

# the examples as they are, built with -DNN_MPI: under mpirun every rank trains the same
# batches (their own shuffle), data-parallel, the parameters equal on every rank
EXAMPLES_MPI = examples/fashion_mnist_mlp_mpi examples/fashion_mnist_cnn_mpi
$(EXAMPLES_MPI): examples/%_mpi: examples/%.c examples/fashion_mnist.h nn.h
	$(MPICC) $(CFLAGS) -DNN_MPI $(if $(FMNIST_HAVE_ZLIB),,-DFMNIST_NO_ZLIB) -I. -o $@ $< $(if $(FMNIST_HAVE_ZLIB),-lz) $(LIBS)

bench/dist_bench: bench/dist_bench.c bench/models.h nn.h
	$(MPICC) $(CFLAGS) $(WARN) -I. -o $@ $< $(LIBS)

# ms per step of the CNN, 2 ranks x 1 thread, data-parallel against local, interleaved
dist-bench: bench/dist_bench
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NN_THREADS=1 NN_DEVICE=cpu $(MPIRUN) $(MPIRUN_FLAGS) \
	  -x NN_THREADS -x NN_DEVICE -np 2 ./bench/dist_bench

dist-test: tests/dist_test $(EXAMPLES_MPI)
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 $(MPIRUN) $(MPIRUN_FLAGS) -np 2 ./tests/dist_test
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 $(MPIRUN) $(MPIRUN_FLAGS) -np 3 ./tests/dist_test
	@# the data-parallel cases on the first OpenCL device (PoCL in CI), whose fused kernels
	@# complete some gradients later than their nodes; skipped without a device
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 $(MPIRUN) $(MPIRUN_FLAGS) -np 2 ./tests/dist_test device
	@# rank 1 exits mid-training (--enable-recovery keeps the others alive): both others must
	@# fail their step naming it within the timeout
	@out=$$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 $(MPIRUN) $(MPIRUN_FLAGS) --enable-recovery \
	  --quiet -np 3 ./tests/dist_test exit 2>&1); echo "$$out" | grep -E 'rank exits|dist_test exit|FAIL'; \
	  test "$$(echo "$$out" | grep -c 'passed, 0 failed')" = 2
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 EPOCHS=1 NN_DEVICE=cpu $(MPIRUN) $(MPIRUN_FLAGS) \
	  -x EPOCHS -x NN_DEVICE -np 2 ./examples/fashion_mnist_mlp_mpi '$(if $(wildcard $(DATA_DIR)/train-images-idx3-ubyte*),$(DATA_DIR))' | grep RESULT

# ---- activation recompute (issue 20 item 5): GPT-2 small's memory plan with and without a
# recompute segment per block (nn_graph_memory, nothing allocated), and the step time of a
# small GPT both ways: `make bench-recompute [ROUNDS=n]` (NN_DEVICE picks the backend).
bench/recompute_bench: bench/recompute_bench.c nn.h
	$(CC) $(CFLAGS) -I. -D_POSIX_C_SOURCE=200809L -o $@ $< $(LIBS)
.PHONY: bench-recompute
bench-recompute: bench/recompute_bench
	./bench/recompute_bench plan && ./bench/recompute_bench time $(or $(ROUNDS),5)

# ---- any batch size on one graph (issue 22 item 2): nn_graph_set_batch's first run at a new
# size (the model built again and compiled) and a cached one, against a forward pass and a
# graph built anew: `make bench-batch [ROUNDS=n]` (NN_DEVICE picks the backend).
bench/batch_bench: bench/batch_bench.c nn.h
	$(CC) $(CFLAGS) -I. -D_POSIX_C_SOURCE=200809L -o $@ $< $(LIBS)
.PHONY: bench-batch
bench-batch: bench/batch_bench
	./bench/batch_bench $(or $(ROUNDS),7)

# ---- the examples' metrics log as a picture (examples/progress.h, tools/plot_metrics.c) ----------
# METRICS=log.csv ./examples/fashion_mnist_mlp writes a CSV log; tools/plot_metrics draws it
# as an SVG (C99, no libraries; tests/test_examples.c checks it on a small log).
# `make docs/fashion_mnist_mlp.svg` retrains the MLP (EPOCHS, NN_DEVICE as usual) for README's picture.
.PHONY: plot-metrics
plot-metrics: tools/plot_metrics
tools/plot_metrics: tools/plot_metrics.c
	$(CC) $(CFLAGS) $(WARN) -o $@ $< -lm
docs/fashion_mnist_mlp.svg: examples/fashion_mnist_mlp tools/plot_metrics
	@mkdir -p docs
	METRICS=build/fashion_mnist_mlp.csv ./examples/fashion_mnist_mlp '$(if $(wildcard $(DATA_DIR)/train-images-idx3-ubyte*),$(DATA_DIR))'
	./tools/plot_metrics build/fashion_mnist_mlp.csv $@ "fashion_mnist_mlp: 784-256-128-10 MLP, Adam, batch 128"
