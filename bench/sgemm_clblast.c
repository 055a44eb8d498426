/* sgemm_clblast.c - CLBlast's SGEMM on every OpenCL device, for comparison with nn.h's.

   Build (bench/run.sh does it through make's built-in rule when libclblast-dev is here):
       cc -O2 bench/sgemm_clblast.c -o bench/sgemm_clblast -lclblast -lOpenCL
   Prints BENCH name=sgemm backend=clblast:DEVICE n=N gflops=X for N = 256..2048: C = A*B,
   square, float32, row-major, timed as nn_bench times nn.h: one warm-up call (CLBlast compiles
   its kernels then), then reps for >= 0.5 s (at least 3), one clFinish at the end. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <clblast_c.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int bench_device(cl_device_id dev) {
    static const size_t sizes[] = {256, 512, 1024, 2048};
    char name[256];
    cl_int err;
    cl_context ctx;
    cl_command_queue q;
    size_t s, i;
    int status = 0;

    if (clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL) != CL_SUCCESS) strcpy(name, "unknown");
    name[sizeof name - 1] = 0;
    for (i = 0; name[i]; i++)
        if (name[i] == ' ' || name[i] == '=') name[i] = '_';
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "sgemm_clblast: %s: clCreateContext: %d\n", name, (int)err);
        return 1;
    }
    q = clCreateCommandQueue(ctx, dev, 0, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "sgemm_clblast: %s: clCreateCommandQueue: %d\n", name, (int)err);
        clReleaseContext(ctx);
        return 1;
    }
    for (s = 0; s < sizeof sizes / sizeof sizes[0] && status == 0; s++) {
        size_t n = sizes[s], bytes = n * n * sizeof(float);
        float *host = (float *)malloc(bytes);
        cl_mem m[3] = {NULL, NULL, NULL};
        CLBlastStatusCode st = CLBlastSuccess;
        uint32_t seed = 1;
        int reps = 0, k;
        double t0, dt = 0.0;

        if (!host) {
            fprintf(stderr, "sgemm_clblast: out of memory\n");
            status = 1;
            break;
        }
        for (i = 0; i < n * n; i++) {
            seed = seed * 1664525u + 1013904223u;
            host[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
        }
        for (k = 0; k < 3 && status == 0; k++) {
            m[k] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, host, &err);
            if (err != CL_SUCCESS) {
                fprintf(stderr, "sgemm_clblast: %s: clCreateBuffer: %d\n", name, (int)err);
                status = 1;
            }
        }
        t0 = now();
        for (k = 0; status == 0 && st == CLBlastSuccess && (k < 1 + 3 || dt < 0.5) && k < 1 + 200; k++) {
            if (k == 1) { /* the warm-up call is done */
                clFinish(q);
                t0 = now();
            }
            st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 1.0f, m[0], 0, n,
                              m[1], 0, n, 0.0f, m[2], 0, n, &q, NULL);
            if (k >= 1) {
                reps++;
                if (reps % 2 == 0) {
                    clFinish(q);
                    dt = now() - t0;
                }
            }
        }
        if (status == 0 && st != CLBlastSuccess) {
            fprintf(stderr, "sgemm_clblast: %s: CLBlastSgemm: status %d\n", name, (int)st);
            status = 1;
        }
        if (status == 0) {
            clFinish(q);
            dt = now() - t0;
            printf("BENCH name=sgemm backend=clblast:%s n=%d gflops=%.2f\n", name, (int)n,
                   2.0 * (double)n * n * n * reps / dt / 1e9);
            fflush(stdout);
        }
        for (k = 0; k < 3; k++)
            if (m[k]) clReleaseMemObject(m[k]);
        free(host);
    }
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return status;
}

int main(void) {
    cl_platform_id plats[8];
    cl_uint np = 0, p;
    int status = 0, found = 0;
    if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS || np == 0) {
        fprintf(stderr, "sgemm_clblast: no OpenCL platform\n");
        return 1;
    }
    if (np > 8) np = 8;
    for (p = 0; p < np; p++) {
        cl_device_id devs[16];
        cl_uint nd = 0, d;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) continue;
        if (nd > 16) nd = 16;
        for (d = 0; d < nd; d++) {
            found = 1;
            status |= bench_device(devs[d]);
        }
    }
    if (!found) fprintf(stderr, "sgemm_clblast: no OpenCL device\n");
    return status || !found;
}
