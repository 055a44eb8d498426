/* The part of OpenCL 1.2 that nn.h calls, declared here so that a program needs neither
   OpenCL headers nor link flags: src/opencl/loader.c loads the library at run time into the
   table nn__clfn, and the calls in src/opencl/backend.c, spelled clFoo(...) as in any OpenCL
   program, reach the table through the macros at the end of this file (as clew does).
   src/opencl/backend.c takes the macros back at its end, so the program's own OpenCL calls below
   nn.h are not redirected.

   When the program included <CL/cl.h> (1.2 or later) before nn.h, its types and constants
   are used and only the table is declared here; including <CL/cl.h> after nn.h's
   implementation in the same file is not supported (the type names would be declared
   twice). */
#ifndef NN__CL_API_H
#define NN__CL_API_H
#include <stddef.h>
#include <stdint.h>

#if defined(CL_VERSION_1_0) || defined(__OPENCL_CL_H)
#  if !defined(CL_VERSION_1_2)
#    error "nn.h: the <CL/cl.h> included before nn.h lacks OpenCL 1.2 (define CL_TARGET_OPENCL_VERSION 120 before it)"
#  endif
#  define NN__CL_CALL CL_API_CALL
#  define NN__CL_CALLBACK CL_CALLBACK
#  ifndef CL_PLATFORM_NOT_FOUND_KHR
#    define CL_PLATFORM_NOT_FOUND_KHR -1001
#  endif
#else
#  if defined(_WIN32)
#    define NN__CL_CALL __stdcall
#  else
#    define NN__CL_CALL
#  endif
#  define NN__CL_CALLBACK NN__CL_CALL

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef float cl_float;
typedef cl_uint cl_bool;
typedef cl_ulong cl_bitfield;
typedef struct { cl_int s[8]; } cl_int8; /* only its size matters here (a kernel argument) */

typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

typedef cl_bitfield cl_device_type;
typedef cl_bitfield cl_device_fp_config;
typedef cl_uint cl_platform_info;
typedef cl_uint cl_device_info;
typedef intptr_t cl_context_properties;
typedef cl_bitfield cl_command_queue_properties;
typedef cl_bitfield cl_mem_flags;
typedef cl_uint cl_program_info;
typedef cl_uint cl_program_build_info;
typedef cl_uint cl_buffer_create_type;
typedef struct _cl_buffer_region { size_t origin; size_t size; } cl_buffer_region;

/* The values of the Khronos headers (CL/cl.h, CL/cl_ext.h). */
#define CL_SUCCESS 0
#define CL_DEVICE_NOT_FOUND -1
#define CL_MEM_OBJECT_ALLOCATION_FAILURE -4
#define CL_OUT_OF_RESOURCES -5
#define CL_OUT_OF_HOST_MEMORY -6
#define CL_BUILD_PROGRAM_FAILURE -11
#define CL_MISALIGNED_SUB_BUFFER_OFFSET -13
#define CL_INVALID_VALUE -30
#define CL_INVALID_BINARY -42
#define CL_INVALID_KERNEL_NAME -46
#define CL_INVALID_ARG_SIZE -51
#define CL_INVALID_KERNEL_ARGS -52
#define CL_INVALID_WORK_GROUP_SIZE -54
#define CL_INVALID_WORK_ITEM_SIZE -55
#define CL_INVALID_BUFFER_SIZE -61
#define CL_INVALID_GLOBAL_WORK_SIZE -63
#define CL_PLATFORM_NOT_FOUND_KHR -1001

#define CL_FALSE 0
#define CL_TRUE 1

#define CL_PLATFORM_VERSION 0x0901
#define CL_PLATFORM_NAME 0x0902

#define CL_DEVICE_TYPE_CPU (1 << 1)
#define CL_DEVICE_TYPE_GPU (1 << 2)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF

#define CL_DEVICE_TYPE 0x1000
#define CL_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT 0x100A
#define CL_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010
#define CL_DEVICE_MAX_PARAMETER_SIZE 0x1017
#define CL_DEVICE_MEM_BASE_ADDR_ALIGN 0x1019
#define CL_DEVICE_SINGLE_FP_CONFIG 0x101B
#define CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (1 << 7)
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_DEVICE_NAME 0x102B
#define CL_DEVICE_VENDOR 0x102C
#define CL_DRIVER_VERSION 0x102D
#define CL_DEVICE_VERSION 0x102F

#define CL_CONTEXT_PLATFORM 0x1084
#define CL_QUEUE_PROFILING_ENABLE (1 << 1)
#define CL_PROFILING_COMMAND_START 0x1282
#define CL_PROFILING_COMMAND_END 0x1283
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_BUFFER_CREATE_TYPE_REGION 0x1220
#define CL_PROGRAM_BINARY_SIZES 0x1165
#define CL_PROGRAM_BINARIES 0x1166
#define CL_PROGRAM_BUILD_LOG 0x1183
#endif /* our own declarations */

/* Every OpenCL function nn.h calls, as
   X(return type, name without "cl", parameters, arguments, an object of the call, index)
   where the last two serve a vendor driver used without an ICD loader (opencl/loader.c): the
   call goes through that object's dispatch table, whose entries are in the order the
   Khronos ICD extension fixes (CL/cl_icd.h's struct _cl_icd_dispatch). clGetPlatformIDs
   has no object: the driver's clIcdGetPlatformIDsKHR takes its place. */
#define NN__CL_OBJ_FUNCS(X)                                                                       \
    X(cl_int, GetPlatformInfo, (cl_platform_id p, cl_platform_info w, size_t n, void *v, size_t *r), \
      (p, w, n, v, r), p, 1)                                                                      \
    X(cl_int, GetDeviceIDs, (cl_platform_id p, cl_device_type t, cl_uint n, cl_device_id *d, cl_uint *nd), \
      (p, t, n, d, nd), p, 2)                                                                     \
    X(cl_int, GetDeviceInfo, (cl_device_id d, cl_device_info w, size_t n, void *v, size_t *r),     \
      (d, w, n, v, r), d, 3)                                                                      \
    X(cl_context, CreateContext,                                                                  \
      (const cl_context_properties *pr, cl_uint n, const cl_device_id *d,                         \
       void (NN__CL_CALLBACK *f)(const char *, const void *, size_t, void *), void *u, cl_int *e), \
      (pr, n, d, f, u, e), d[0], 4)                                                               \
    X(cl_int, ReleaseContext, (cl_context c), (c), c, 7)                                          \
    X(cl_command_queue, CreateCommandQueue,                                                       \
      (cl_context c, cl_device_id d, cl_command_queue_properties pr, cl_int *e), (c, d, pr, e), c, 9) \
    X(cl_int, ReleaseCommandQueue, (cl_command_queue q), (q), q, 11)                              \
    X(cl_mem, CreateBuffer, (cl_context c, cl_mem_flags fl, size_t n, void *h, cl_int *e),         \
      (c, fl, n, h, e), c, 14)                                                                    \
    X(cl_int, ReleaseMemObject, (cl_mem m), (m), m, 18)                                           \
    X(cl_program, CreateProgramWithSource,                                                        \
      (cl_context c, cl_uint n, const char **s, const size_t *len, cl_int *e), (c, n, s, len, e), c, 26) \
    X(cl_program, CreateProgramWithBinary,                                                        \
      (cl_context c, cl_uint n, const cl_device_id *d, const size_t *len, const unsigned char **b, \
       cl_int *st, cl_int *e),                                                                    \
      (c, n, d, len, b, st, e), c, 27)                                                            \
    X(cl_int, ReleaseProgram, (cl_program p), (p), p, 29)                                         \
    X(cl_int, BuildProgram,                                                                       \
      (cl_program p, cl_uint n, const cl_device_id *d, const char *o,                             \
       void (NN__CL_CALLBACK *f)(cl_program, void *), void *u),                                   \
      (p, n, d, o, f, u), p, 30)                                                                  \
    X(cl_int, GetProgramInfo, (cl_program p, cl_program_info w, size_t n, void *v, size_t *r),     \
      (p, w, n, v, r), p, 32)                                                                     \
    X(cl_int, GetProgramBuildInfo,                                                                \
      (cl_program p, cl_device_id d, cl_program_build_info w, size_t n, void *v, size_t *r),      \
      (p, d, w, n, v, r), p, 33)                                                                  \
    X(cl_kernel, CreateKernel, (cl_program p, const char *name, cl_int *e), (p, name, e), p, 34)  \
    X(cl_int, ReleaseKernel, (cl_kernel k), (k), k, 37)                                           \
    X(cl_int, SetKernelArg, (cl_kernel k, cl_uint i, size_t n, const void *v), (k, i, n, v), k, 38) \
    X(cl_int, WaitForEvents, (cl_uint n, const cl_event *ev), (n, ev), ev[0], 41)                 \
    X(cl_int, ReleaseEvent, (cl_event ev), (ev), ev, 44)                                          \
    X(cl_int, GetEventProfilingInfo, (cl_event ev, cl_uint w, size_t n, void *v, size_t *r),       \
      (ev, w, n, v, r), ev, 45)                                                                   \
    X(cl_int, Finish, (cl_command_queue q), (q), q, 47)                                           \
    X(cl_int, EnqueueReadBuffer,                                                                  \
      (cl_command_queue q, cl_mem m, cl_bool bl, size_t off, size_t n, void *h, cl_uint ne,       \
       const cl_event *w, cl_event *ev),                                                          \
      (q, m, bl, off, n, h, ne, w, ev), q, 48)                                                    \
    X(cl_int, EnqueueWriteBuffer,                                                                 \
      (cl_command_queue q, cl_mem m, cl_bool bl, size_t off, size_t n, const void *h, cl_uint ne, \
       const cl_event *w, cl_event *ev),                                                          \
      (q, m, bl, off, n, h, ne, w, ev), q, 49)                                                    \
    X(cl_int, EnqueueNDRangeKernel,                                                               \
      (cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *off, const size_t *gws,        \
       const size_t *lws, cl_uint ne, const cl_event *w, cl_event *ev),                           \
      (q, k, dims, off, gws, lws, ne, w, ev), q, 59)                                              \
    X(cl_mem, CreateSubBuffer,                                                                    \
      (cl_mem m, cl_mem_flags fl, cl_buffer_create_type t, const void *info, cl_int *e),          \
      (m, fl, t, info, e), m, 82)                                                                 \
    X(cl_int, EnqueueFillBuffer,                                                                  \
      (cl_command_queue q, cl_mem m, const void *pat, size_t pn, size_t off, size_t n, cl_uint ne, \
       const cl_event *w, cl_event *ev),                                                          \
      (q, m, pat, pn, off, n, ne, w, ev), q, 102)

#define NN__CL_FUNCS(X)                                                                           \
    X(cl_int, GetPlatformIDs, (cl_uint n, cl_platform_id *p, cl_uint *np), (n, p, np), NULL, 0)   \
    NN__CL_OBJ_FUNCS(X)

/* nn__clpfn_GetPlatformIDs, ...: the functions' pointer types; nn__cl_api: the table. */
#define NN__CL_PFN(R, N, P, A, O, I) typedef R (NN__CL_CALL *nn__clpfn_##N) P;
NN__CL_FUNCS(NN__CL_PFN)
#undef NN__CL_PFN
#define NN__CL_FIELD(R, N, P, A, O, I) nn__clpfn_##N N;
typedef struct nn__cl_api {
    NN__CL_FUNCS(NN__CL_FIELD)
} nn__cl_api;
#undef NN__CL_FIELD

/* Filled once per process by nn__cl_load() (opencl/loader.c); read only after it succeeded. */
static nn__cl_api nn__clfn;

#define clGetPlatformIDs nn__clfn.GetPlatformIDs
#define clGetPlatformInfo nn__clfn.GetPlatformInfo
#define clGetDeviceIDs nn__clfn.GetDeviceIDs
#define clGetDeviceInfo nn__clfn.GetDeviceInfo
#define clCreateContext nn__clfn.CreateContext
#define clReleaseContext nn__clfn.ReleaseContext
#define clCreateCommandQueue nn__clfn.CreateCommandQueue
#define clReleaseCommandQueue nn__clfn.ReleaseCommandQueue
#define clCreateBuffer nn__clfn.CreateBuffer
#define clReleaseMemObject nn__clfn.ReleaseMemObject
#define clCreateProgramWithSource nn__clfn.CreateProgramWithSource
#define clCreateProgramWithBinary nn__clfn.CreateProgramWithBinary
#define clReleaseProgram nn__clfn.ReleaseProgram
#define clBuildProgram nn__clfn.BuildProgram
#define clGetProgramInfo nn__clfn.GetProgramInfo
#define clGetProgramBuildInfo nn__clfn.GetProgramBuildInfo
#define clCreateKernel nn__clfn.CreateKernel
#define clReleaseKernel nn__clfn.ReleaseKernel
#define clSetKernelArg nn__clfn.SetKernelArg
#define clWaitForEvents nn__clfn.WaitForEvents
#define clReleaseEvent nn__clfn.ReleaseEvent
#define clGetEventProfilingInfo nn__clfn.GetEventProfilingInfo
#define clFinish nn__clfn.Finish
#define clEnqueueReadBuffer nn__clfn.EnqueueReadBuffer
#define clEnqueueWriteBuffer nn__clfn.EnqueueWriteBuffer
#define clEnqueueNDRangeKernel nn__clfn.EnqueueNDRangeKernel
#define clCreateSubBuffer nn__clfn.CreateSubBuffer
#define clEnqueueFillBuffer nn__clfn.EnqueueFillBuffer
#endif /* NN__CL_API_H */
