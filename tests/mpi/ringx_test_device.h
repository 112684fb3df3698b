/*
 * ringx_test_device.h - device memory for the MPI tests and the benchmark
 * (--mem cuda): the CUDA runtime when the build has CUDA, otherwise
 * stubs that report no device.
 */
#ifndef RINGX_TEST_DEVICE_H
#define RINGX_TEST_DEVICE_H

#include <stddef.h>

/* Selects a device for this process (local rank modulo the device count;
 * ranks may share one) and returns 1, or 0 with why filled in ("no CUDA
 * device", "built without CUDA"). */
int rx_device_open(int local_rank, const char **why);

/* Device memory of bytes bytes holding a copy of host (NULL: left unset);
 * aborts the job if the allocation fails. */
void *rx_device_copy_of(const void *host, size_t bytes);
void rx_device_put(void *dev, const void *host, size_t bytes);
void rx_device_get(void *host, const void *dev, size_t bytes);
void rx_device_free(void *dev);

#endif /* RINGX_TEST_DEVICE_H */
