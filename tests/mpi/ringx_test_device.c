/*
 * ringx_test_device.c - see ringx_test_device.h.
 */
#include "ringx_test_device.h"

#include <mpi.h>
#include <stdio.h>

#if RINGX_HAVE_CUDA
#include <cuda_runtime_api.h>

static void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

int rx_device_open(int local_rank, const char **why)
{
    int n = 0;

    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        *why = "no CUDA device";
        return 0;
    }
    check(cudaSetDevice(local_rank % n), "cudaSetDevice");
    return 1;
}

void *rx_device_copy_of(const void *host, size_t bytes)
{
    void *dev = NULL;

    check(cudaMalloc(&dev, bytes ? bytes : 1), "cudaMalloc");
    if (host != NULL) {
        rx_device_put(dev, host, bytes);
    }
    return dev;
}

void rx_device_put(void *dev, const void *host, size_t bytes)
{
    check(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

void rx_device_get(void *host, const void *dev, size_t bytes)
{
    check(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

void rx_device_free(void *dev)
{
    check(cudaFree(dev), "cudaFree");
}

#else /* !RINGX_HAVE_CUDA */

int rx_device_open(int local_rank, const char **why)
{
    (void)local_rank;
    *why = "no CUDA device (built without CUDA)";
    return 0;
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
