/*
nn.h - train and run neural networks from C, on any OpenCL device or on the CPU.

    #define NN_IMPLEMENTATION   (in exactly one .c file, before the include)
    #include "nn.h"

    Best in a file of its own (nn.c: those two lines), compiled only when nn.h changes; the
    program's other files include nn.h alone and compile in hundredths of a second (README,
    "Two files"). -DNN_IMPLEMENTATION_DONE makes a file that defines NN_IMPLEMENTATION
    include only the declarations; -DNN_OPTIMIZE_ALL compiles all of the implementation at
    the program's optimisation level (by default gcc compiles its run-once code at -Og).

    cc -O2 app.c -o app -lm -lpthread         (OpenCL devices and the CPU)
    (-ldl too with a glibc older than 2.34.) No OpenCL headers or -lOpenCL: nn.h declares
    the OpenCL calls it makes and loads the OpenCL library when a context is created, so
    one binary runs on the CPU backend where there is none and on any OpenCL device where
    there is. -DNN_NO_OPENCL leaves all OpenCL code out.

HOW IT WORKS
    Build a graph by calling op functions on symbolic tensors, compile it once (shapes are
    checked, the backward and optimizer ops are added, memory is planned, kernels are built
    and their arguments bound), then run steps. A step enqueues forward, backward and the
    optimizer update on the device; parameters, gradients, optimizer state and activations
    stay there. The host reads back only what it asks for. nn_context_stats() counts bytes moved
    and kernels launched, so what a step costs can be checked.

    nn_context *ctx; nn_graph *g;
    nn_context_create(NULL, &ctx);                 // NN_DEVICE picks the backend
    nn_graph_create(ctx, NULL, &g);
    nn_tensor x = nn_input(g, "x", NN_F32, nn_shape2(128, 784));
    nn_tensor y = nn_input(g, "y", NN_I32, nn_shape1(128));
    nn_tensor h = nn_relu(g, nn_linear_layer(g, x, 256, NULL, "fc1"));
    nn_tensor loss = nn_cross_entropy_loss(g, nn_linear_layer(g, h, 10, NULL, "fc2"), y, NULL);
    nn_compile_desc cd = {0}; cd.loss = loss;     // loss left NN_NONE: inference only
    cd.optimizer.kind = NN_OPT_ADAM;              // zero fields: torch.optim.Adam's defaults
    if (nn_graph_compile(g, &cd) != NN_OK) puts(nn_context_last_error(ctx));
    nn_tensor_write(g, x, xs, sizeof xs); nn_tensor_write(g, y, ys, sizeof ys);
    nn_graph_step(g);

CONVENTIONS
    Options come in structs (nn_*_desc, nn_optimizer, nn_lr_schedule) that are zeroed and
    then given the fields that differ: a field left 0 takes PyTorch's default (AdamW's
    weight_decay 1e-2, every norm's eps 1e-5, ignore_index -100, reduction mean), and
    NN_ZERO asks for an exact 0 where 0 is a default (weight_decay = NN_ZERO). NN_NONE
    (tensor id 0, never a tensor) is "no tensor": an absent bias or weight, a forward-only
    compile desc; a failed op returns id < 0. Names, argument orders and defaults are
    torch.nn.functional's (nn_pad2d takes F.pad's (left, right, top, bottom); nn_layer_norm
    F.layer_norm's; `dim`, never "axis"). Builders return an nn_tensor; every other call an
    nn_result, a query writing its answer through its last argument, every *_create its
    object. Sizes and element counts are int64_t, dims and kernel sizes int. The API
    below is ordered by topic, each section opening with its conventions. Inputs PyTorch
    raises on (a label outside [0, C)) are counted where the op runs and reported by the
    next nn_tensor_read or nn_graph_finish.

DEVICES
    NN_DEVICE=cpu | opencl | <OpenCL device index> | <device name substring>. By default the
    first GPU, else the built-in CPU backend (a CPU OpenCL device such as PoCL only when
    asked for: the native CPU path is faster there). No OpenCL library or platform at all
    means the CPU backend (NN_DEVICE=opencl then fails, naming the library). The log says
    which backend was chosen, and why not OpenCL (log level info).

    The OpenCL library is loaded once per process: $NN_OPENCL_LIBRARY, else the ICD loader
    (libOpenCL.so.1 or libOpenCL.so; OpenCL.dll; OpenCL.framework on macOS), else on Linux
    and the BSDs the vendor driver that an .icd file in $OCL_ICD_VENDORS or
    /etc/OpenCL/vendors names (called through its ICD dispatch table if it exports no cl*
    functions of its own).

ENVIRONMENT
    NN_DEVICE       backend choice, as above
    NN_THREADS      CPU-backend threads (default: all cores)
    NN_CACHE_DIR    compiled OpenCL programs (default $XDG_CACHE_HOME/nn or ~/.cache/nn;
                    "off" disables). Keyed by source, options, device and driver; each
                    file carries its key, length and a checksum, and is written to a
                    temporary file, synced and renamed, so processes may share the
                    directory. A damaged or foreign file is ignored (an info line), the
                    program is built from source and the file replaced; a directory that
                    cannot be written only costs the cache (debug lines). It is made 0700,
                    and not used (an info line) when another user owns it or group or
                    others may write to it: they could supply the programs' native code.
    NN_KERNEL_DIR   load kernels/NAME.cl from this directory instead of the copies
                    embedded here (for kernel development)
    NN_CL_TUNING    gpu | cpu: the OpenCL kernels, tiles and launch geometry made for that
                    kind of device, on any device (default: by the device's type)
    NN_CL_GUARDS    1: 256 guard bytes after every OpenCL buffer; a launch that writes one
                    fails its run, naming the kernel (a debugging aid; the tests set it)
    NN_CL_PROFILE   1: time every OpenCL kernel on the device; destroying a graph logs (info)
                    its kernels' time a run, the time between them, and one line a kernel.
                    A run then waits for the previous one's kernels before queuing its own
    NN_LOG          error | warn | info (default: one line naming the backend) | debug
    NN_FUSE         0: no elementwise fusion at nn_graph_compile (default on: a chain of
                    elementwise ops runs as one pass; the same bits either way)
    NN_CL_STAGES    0: on an OpenCL device tuned as a CPU (PoCL), each product its own
                    launch (default: a run of consecutive products is one launch whose
                    work-groups go from product to product; the same bits either way)
    NN_POCL_AFFINITY  0: leave PoCL's worker threads unpinned. By default, on Linux, nn.h sets
                    POCL_AFFINITY=1 before it loads the OpenCL library (PoCL then pins
                    worker i to CPU i) where none of POCL_AFFINITY, POCL_MAX_PTHREAD_COUNT
                    and POCL_CPU_MAX_CU_COUNT is set and the process may run on every online
                    CPU, numbered 0..N-1; other drivers ignore the variable
    NN_OPENCL_LIBRARY  the OpenCL library (an ICD loader or a vendor driver) to load
                    instead of the system's

CONFIGURATION (define before including)
    NN_STATIC                      make every function static
    NN_API                         decorate the API (default extern)
    NN_MALLOC, NN_REALLOC, NN_FREE allocator (all three or none)
    NN_ASSERT                      assertion macro (default assert)
    NN_NO_OPENCL                   CPU backend only, no OpenCL code at all
    NN_NO_THREADS                  CPU backend on the calling thread only
    A file that defines NN_IMPLEMENTATION may include <CL/cl.h> (1.2 or later) before nn.h,
    and nn.h then uses its types; not after nn.h.
    Flags do not change the CPU backend's bits: the implementation turns floating-point
    contraction off (a*b + c never becomes an FMA the compiler chose) and restores the
    program's setting after it, so gcc and clang, -O0 to -O3, with or without -march=native,
    C or C++, train to the same weights and a checkpoint resumes bit for bit in any of them.
    Only clang's -ffp-contract=fast and -ffast-math override this (the log then says so).

ERRORS
    Functions return nn_result; nn_context_last_error(ctx) explains the last failure (the op and its
    shapes, or the kernels/FILE.cl:LINE of a build error). Ops given bad input return a
    failed tensor (id < 0) and the graph remembers the first error, which
    nn_graph_compile() returns. Nothing aborts and nothing leaks on an error path.

THREADS AND LIFETIMES
    Separate contexts are independent: threads may each create, use and destroy a context
    at once (OpenCL device discovery is serialised inside nn.h). A context and its graphs
    are one thread's at a time: hand them over when that thread's calls have returned (a
    join, a mutex). A lock per context holds every call that touches its shared state to it:
    - a call that returns nn_result and runs on the backend, the parameters or files
      (compile, step, forward, finish, tensor read, write and fill, saving and loading
      states and safetensors, dataset batches, skipped steps) while another thread's call
      runs on the context returns NN_ERR_STATE and changes nothing; nn_context_last_error
      on the refused thread says "in use by another thread" (the running call's message
      is untouched);
    - nn_graph_create, nn_graph_destroy, nn_param and nn_buffer (and the layers that make
      parameters: graphs may share them) and the counters (nn_context_stats,
      nn_context_reset_stats, nn_context_op_compiled) wait for that call to return;
    - left to the caller: a graph is built and set up (nn_input, nn_add, ...,
      nn_graph_set_lr, nn_graph_param_group: they touch only that graph) and destroyed by
      one thread at a time; nn_array_load_idx/csv use the context
      only for a failure's message (on another thread give them their own, or NULL);
      nn_context_destroy comes after every other thread's calls on the context returned.
    The log callback runs on the thread of the call that logs (a refusal is logged, at
    debug level, by the refused thread). From inside it, a call on the same context is
    refused, or, for those that wait, goes on under the running call.
    Destroy graphs before their context; a graph that outlives its context keeps its host
    memory until nn_graph_destroy, and every other call on it fails with NN_ERR_STATE. Each
    is destroyed once: nn_context_destroy or nn_graph_destroy a second time on the same
    pointer is undefined behaviour, as free() twice is (the memory is gone, and nothing can
    tell); NULL is always safe (nn_array_free may be repeated).

LICENCE
    MIT License. Copyright (c) 2026 the nn.h authors.
    Permission is hereby granted, free of charge, to any person obtaining a copy of this
    software and associated documentation files (the "Software"), to deal in the Software
    without restriction, including without limitation the rights to use, copy, modify,
    merge, publish, distribute, sublicense, and/or sell copies of the Software, and to
    permit persons to whom the Software is furnished to do so, subject to the following
    conditions: The above copyright notice and this permission notice shall be included in
    all copies or substantial portions of the Software. THE SOFTWARE IS PROVIDED "AS IS",
    WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE
    WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN
    NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR
    OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT
    OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*/

/* The implementation uses POSIX.1-2008 (threads, files). A strict ISO mode (-std=c99)
   hides it unless a feature macro comes before the first system header, which is here. */
#if defined(NN_IMPLEMENTATION) && defined(__STRICT_ANSI__) && !defined(_WIN32) && !defined(_POSIX_C_SOURCE) && \
    !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE) && !defined(_BSD_SOURCE)
#  define _POSIX_C_SOURCE 200809L
#endif
