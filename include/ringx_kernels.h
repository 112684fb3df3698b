/*
 * ringx_kernels.h - the C API of ringx's CUDA reduction kernels
 * (kernels/ringx_reduce.cu).
 *
 * Plain C with no CUDA header, so that the component's C files can include
 * it: a stream is a `void *` holding a cudaStream_t.  Built only when
 * configure found CUDA (RINGX_HAVE_CUDA in config.h).
 *
 * The kernels use the CUDA runtime that is linked statically into
 * mca_coll_ringx.so.  Its current device is the driver's current context
 * of the thread, shared with the application's runtime, so the caller
 * makes the buffers' device current before reducing them and gives the
 * application's context back afterwards (coll_ringx_cuda.c).  Streams are
 * driver objects, so memory allocated by the application's runtime is
 * usable here.
 *
 * Every function returns 0 or one of the negative codes below; none of them
 * aborts or prints.
 */
#ifndef RINGX_KERNELS_H
#define RINGX_KERNELS_H

#include <stddef.h>

#include "ringx_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Invalid arguments: a (type, op) pair ringx_op_valid() rejects, a NULL
 * buffer, or a buffer not aligned to its element type. */
#define RINGX_KERNEL_EINVAL (-1)
/* No usable device: no driver, no device, or a device the kernels were
 * not built for (they carry sm_80 and sm_90 code and compute_90 PTX). */
#define RINGX_KERNEL_ENODEV (-2)
/* Any other CUDA error (launch failure, a fault reported by a sync). */
#define RINGX_KERNEL_ECUDA  (-3)

/*
 * 1 if a CUDA driver is present and reports at least one device, else 0.
 * Never fails otherwise: on a machine without a driver it returns 0.  It
 * initialises the driver (no context is created), which takes time and
 * must not precede a fork() whose child uses CUDA: call it once, when GPU
 * support is first needed.
 */
int ringx_kernels_available(void);

/* Why ringx_kernels_available() answered 0: the CUDA error's name (e.g.
 * "cudaErrorInsufficientDriver" for a driver older than the runtime, or
 * "cudaErrorNoDevice") or "no device"; a static string. */
const char *ringx_kernels_unavailable_why(void);

/*
 * 0 if the kernels can run on the current device: its driver takes the
 * runtime ringx was built with, and the kernels carry code for it (or PTX
 * it can compile); else RINGX_KERNEL_ENODEV or RINGX_KERNEL_ECUDA.  Loads
 * the kernels' module on the device; no kernel runs.
 */
int ringx_kernels_usable(void);

/*
 * dst[i] = a[i] op b[i] for i in [0, n), enqueued on `stream` (NULL: the
 * legacy default stream) of the current device; the result is there once
 * the stream has reached this point (ringx_kernel_sync).  Same semantics
 * as ringx_host_reduce(): integers wrap, logical ops give 0 or 1, BOOL is
 * a byte (nonzero is true), MINLOC/MAXLOC keep the smaller index on ties,
 * and the complex product is computed without fused multiply-adds.
 * dst may be the same pointer as a or b, but must not partially overlap
 * either.  All three must be device-accessible and aligned to the element
 * type's members (e.g. 8 bytes for CDOUBLE); 16-byte vector loads are used
 * where the three are equally placed relative to 16 bytes.
 * n == 0 does nothing and succeeds (for a valid pair).
 */
int ringx_kernel_reduce(void *dst, const void *a, const void *b, size_t n,
                        ringx_type_t type, ringx_op_t op, void *stream);

/* A stream on the current device that does not synchronise with the
 * legacy default stream (cudaStreamNonBlocking), so ringx's reductions do
 * not wait for the application's work or hold it up. */
int ringx_kernel_stream_create(void **stream);
int ringx_kernel_stream_destroy(void *stream);

/* Waits until everything enqueued on `stream` has finished; reports an
 * error a kernel met while running. */
int ringx_kernel_sync(void *stream);

/*
 * For tests only: the same computation as ringx_kernel_reduce, with the
 * same argument checks and the same split into vector and scalar parts,
 * but the kernel's code runs on the CPU, one GPU thread after another,
 * over a small grid.  The buffers are host memory.  This lets machines
 * without a GPU check the kernels' arithmetic and indexing.
 */
int ringx_kernel_reduce_on_cpu(void *dst, const void *a, const void *b,
                               size_t n, ringx_type_t type, ringx_op_t op);

#ifdef __cplusplus
}
#endif

#endif /* RINGX_KERNELS_H */
