/*
 * ringx_test_device.c - see ringx_test_device.h.
 */
#include "ringx_test_device.h"

#include <mpi.h>
#include <stdio.h>

#if RINGX_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdlib.h>

static int selected = -1;
/* --no-current-context: the driver's context calls (from libcuda.so.1,
 * which the test does not link: it must start without a driver) */
static int (*context_get)(void **context);
static int (*context_set)(void *context);

static void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

int rx_device_open(int local_rank, const char **why)
{
    static char reason[160];
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);

    if (e != cudaSuccess || n < 1) {
        snprintf(reason, sizeof(reason), "no CUDA device (%s)",
                 e == cudaSuccess ? "none found" : cudaGetErrorName(e));
        *why = reason;
        return 0;
    }
    selected = local_rank % n;
    check(cudaSetDevice(selected), "cudaSetDevice");
    return 1;
}

void rx_device_without_context(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);

    context_get = lib ? (int (*)(void **))dlsym(lib, "cuCtxGetCurrent") : NULL;
    context_set = lib ? (int (*)(void *))dlsym(lib, "cuCtxSetCurrent") : NULL;
    if (context_get == NULL || context_set == NULL) {
        fprintf(stderr, "no cuCtxGetCurrent / cuCtxSetCurrent in libcuda.so.1\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    (void)context_set(NULL);
}

/* Around the test's own CUDA calls: its device's context current, and none
 * again afterwards where the MPI calls are to run without one. */
static void own_calls_begin(void)
{
    if (context_set != NULL) {
        check(cudaSetDevice(selected), "cudaSetDevice");
    }
}

static void own_calls_end(void)
{
    if (context_set != NULL) {
        (void)context_set(NULL);
    }
}

int rx_device_context_kept(void)
{
    void *now = NULL;
    int device = -1;

    if (context_get != NULL) {
        return context_get(&now) == 0 && now == NULL;
    }
    return cudaGetDevice(&device) == cudaSuccess && device == selected;
}

void *rx_device_copy_of(const void *host, size_t bytes)
{
    void *dev = NULL;

    own_calls_begin();
    check(cudaMalloc(&dev, bytes ? bytes : 1), "cudaMalloc");
    if (host != NULL) {
        check(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
    }
    own_calls_end();
    return dev;
}

void rx_device_put(void *dev, const void *host, size_t bytes)
{
    own_calls_begin();
    check(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
    own_calls_end();
}

void rx_device_get(void *host, const void *dev, size_t bytes)
{
    own_calls_begin();
    check(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    own_calls_end();
}

void rx_device_free(void *dev)
{
    own_calls_begin();
    check(cudaFree(dev), "cudaFree");
    own_calls_end();
}

#else /* !RINGX_HAVE_CUDA */

int rx_device_open(int local_rank, const char **why)
{
    (void)local_rank;
    *why = "no CUDA device (built without CUDA)";
    return 0;
}

static void unreachable(void);

void rx_device_without_context(void)
{
    unreachable();
}

int rx_device_context_kept(void)
{
    return 1;
}

static void unreachable(void)
{
    fprintf(stderr, "device memory in a build without CUDA\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
}

void *rx_device_copy_of(const void *host, size_t bytes)
{
    (void)host;
    (void)bytes;
    unreachable();
    return NULL;
}

void rx_device_put(void *dev, const void *host, size_t bytes)
{
    (void)dev;
    (void)host;
    (void)bytes;
    unreachable();
}

void rx_device_get(void *host, const void *dev, size_t bytes)
{
    (void)host;
    (void)dev;
    (void)bytes;
    unreachable();
}

void rx_device_free(void *dev)
{
    (void)dev;
    unreachable();
}

#endif
