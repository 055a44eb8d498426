# nn.h: generate the header, build and run the tests, examples and benchmarks.
CC      ?= cc
CFLAGS  ?= -O2
WARN     = -std=c99 -Wall -Wextra -pedantic -Werror
KERNELS  = $(wildcard kernels/*.cl)
SOURCES  = $(wildcard src/*.c src/*.h) gen/parts.txt
TESTSRC  = $(wildcard tests/*.c)
DATA_DIR ?= data/fashion-mnist

# OpenCL when its headers and library are here; otherwise the CPU backend alone.
HAVE_OPENCL := $(shell printf '\043include <CL/cl.h>\nint main(void){return 0;}\n' | \
                 $(CC) -x c - -o /dev/null -lOpenCL >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_OPENCL),1)
  CL_FLAGS =
  CL_LIBS  = -lOpenCL
else
  CL_FLAGS = -DNN_NO_OPENCL
  CL_LIBS  =
  $(info nn.h: no OpenCL headers/library found: building the CPU backend only (-DNN_NO_OPENCL))
endif
LIBS = $(CL_LIBS) -lm -lpthread

.PHONY: all test test-asan check-gen check-warnings examples demo bench clean

all: nn.h

gen/amalg: gen/amalg.c
	$(CC) -O2 $(WARN) -o $@ $<

nn.h: gen/amalg $(SOURCES) $(KERNELS)
	./gen/amalg gen/parts.txt nn.h

# Fails when the committed nn.h is not what the generator makes.
check-gen: gen/amalg
	./gen/amalg gen/parts.txt /tmp/nn-check-gen.h
	@cmp -s nn.h /tmp/nn-check-gen.h || { echo "check-gen: nn.h differs from a fresh generation; run make"; exit 1; }
	@echo "check-gen: nn.h is up to date"

tests/nn_test: nn.h $(TESTSRC) tests/test.h
	$(CC) $(CFLAGS) $(WARN) $(CL_FLAGS) -o $@ $(TESTSRC) $(LIBS)

test: tests/nn_test
	./tests/nn_test

# The CPU backend under AddressSanitizer and UBSan.
tests/nn_test_asan: nn.h $(TESTSRC) tests/test.h
	$(CC) -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all $(WARN) \
	  $(CL_FLAGS) -o $@ $(TESTSRC) $(LIBS)

test-asan: tests/nn_test_asan
	ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 NN_TEST_BACKENDS=cpu ./tests/nn_test_asan

# nn.h as C99 and C++, with gcc and clang, with and without OpenCL.
check-warnings: nn.h
	@for cc in gcc clang; do for lang in c c++; do for cl in "" -DNN_NO_OPENCL; do for opt in -O0 -O2 -O3; do \
	  std=-std=c99; [ $$lang = c++ ] && std=-std=c++11; \
	  printf '#define NN_IMPLEMENTATION\n#include "nn.h"\nint main(void){return 0;}\n' | \
	  $$cc -x $$lang $$std $$opt -Wall -Wextra -pedantic -Werror $$cl -I. -c - -o /dev/null || exit 1; \
	  echo "ok: $$cc -x $$lang $$cl $$opt"; done; done; done; done

EXAMPLES = examples/xor examples/fashion_mnist_mlp
examples: $(EXAMPLES)
examples/xor: examples/xor.c nn.h
	$(CC) $(CFLAGS) $(CL_FLAGS) -I. -o $@ $< $(LIBS)
examples/fashion_mnist_mlp: examples/fashion_mnist_mlp.c nn.h
	$(CC) $(CFLAGS) $(CL_FLAGS) -I. -o $@ $< -lz $(LIBS)

# Trains the MLP on Fashion-MNIST, fetching the dataset into ./data if it is not here.
demo: examples/fashion_mnist_mlp
	@./tools/get_fashion_mnist.sh $(DATA_DIR)
	./examples/fashion_mnist_mlp $(DATA_DIR)

bench/nn_bench: bench/nn_bench.c nn.h
	$(CC) $(CFLAGS) $(CL_FLAGS) -I. -o $@ $< -lz $(LIBS)

# Optional: CLBlast's SGEMM on the same OpenCL devices, for comparison (libclblast-dev).
bench/sgemm_clblast: bench/sgemm_clblast.c
	$(CC) $(CFLAGS) -o $@ $< -lclblast -lOpenCL

bench: bench/nn_bench
	./bench/run.sh

clean:
	rm -f gen/amalg tests/nn_test tests/nn_test_asan $(EXAMPLES) bench/nn_bench bench/sgemm_clblast
