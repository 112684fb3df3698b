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

/* From now on the MPI calls run with no CUDA context current (the test's
 * own CUDA calls above make its device's current and drop it again), as
 * in a thread that has never used CUDA itself. */
void rx_device_without_context(void);

/* Whether the thread's CUDA state is still the test's after an MPI call:
 * no context current after rx_device_without_context, else the device
 * rx_device_open selected.  ringx makes the buffers' device current while
 * it works on them, and must give the caller's context back. */
int rx_device_context_kept(void);

#endif /* RINGX_TEST_DEVICE_H */
