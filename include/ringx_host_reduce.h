/*
 * ringx_host_reduce.h - element-wise reduction of host memory.
 *
 * ringx reduces host data itself instead of through Open MPI's op
 * framework: the op/avx component of Open MPI 4.1.4 saturates 8-bit
 * MPI_SUM on AVX-512 CPUs (open-mpi/ompi#8045), and op.h cannot be
 * included from Debian's devel headers.  Integer arithmetic wraps
 * modulo 2^bits, as C unsigned arithmetic does.
 */
#ifndef RINGX_HOST_REDUCE_H
#define RINGX_HOST_REDUCE_H

#include "ringx_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * dst[i] = a[i] op b[i] for i in [0, n).  dst may be the same pointer as a
 * or b (but must not partially overlap either).  The caller guarantees
 * ringx_op_valid(op, type).
 */
void ringx_host_reduce(void *dst, const void *a, const void *b, size_t n,
                       ringx_type_t type, ringx_op_t op);

/*
 * dst[i] = in[0][i] op in[1][i] op ... op in[k - 1][i] for i in [0, n),
 * k >= 1, left to right.  SUM and PROD of float, complex float and
 * float16 accumulate in double and round once per element, so the result
 * is as close to the exact one as the type allows (and the same wherever
 * the same inputs are reduced).  dst may be in[0], no other input.
 */
void ringx_host_reduce_all(void *dst, const void *const *in, int k, size_t n,
                           ringx_type_t type, ringx_op_t op);

#ifdef __cplusplus
}
#endif

#endif /* RINGX_HOST_REDUCE_H */
