/*
 * coll_ringx_mem.h - where a call's buffers live, and how its data is
 * moved, copied and reduced there.
 *
 * The algorithms are written once, against the primitives below; the
 * memory backend of the call decides how each runs:
 *
 *   host     UCX sends and receives the buffers; the CPU reduces.
 *   direct   device buffers handed to a CUDA-aware UCX with their memory
 *            type; ringx's CUDA kernels reduce.
 *   staged   device buffers go through pinned host bounce buffers:
 *            device-to-host copy, UCX, host-to-device copy, kernel, with
 *            the copies, transfers and kernels of different segments in
 *            flight together (coll_ringx_stage.c).
 *
 * Staging can also be forced over host buffers with host copies
 * (coll_ringx_stage_host_buffers), so that its scheduling is tested on
 * machines without a GPU.
 */
#ifndef COLL_RINGX_MEM_H
#define COLL_RINGX_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "ringx_memtype.h"
#include "ringx_ops.h"
#include "coll_ringx_ucx.h"

struct mca_coll_ringx_module_t;
typedef struct ringx_stage ringx_stage_t;
typedef struct ringx_scratch_set ringx_scratch_set_t;

/* Which module scratch buffer: receive slots of the pipelines, or whole
 * blocks (partial results, Bruck's rotation). */
typedef enum { RINGX_SCRATCH_SEGMENTS, RINGX_SCRATCH_BLOCKS, RINGX_SCRATCH_KINDS } ringx_scratch_kind_t;

/*
 * How the memory of a call is copied and reduced.  Copies and reductions
 * are ordered among themselves (one stream on a GPU); a staging copy's
 * completion is polled through its bounce slot.  Every function returns
 * OMPI_SUCCESS or an OMPI error code.
 */
typedef struct ringx_mem_ops {
    int (*reduce)(void *ctx, void *dst, const void *a, const void *b, size_t n,
                  ringx_type_t type, ringx_op_t op);
    int (*copy)(void *ctx, void *dst, const void *src, size_t len);
    /* bounce slot `slot` <-> the buffers' memory, asynchronous */
    int (*copy_out)(void *ctx, void *bounce, const void *src, size_t len, int slot);
    int (*copy_in)(void *ctx, void *dst, const void *bounce, size_t len, int slot);
    int (*copied)(void *ctx, int slot);             /* 1 done, 0 not yet, < 0 error */
    int (*sync)(void *ctx);                         /* everything enqueued has finished */
    void *(*scratch)(void *ctx, ringx_scratch_kind_t kind, size_t size);
    void *(*bounce)(void *ctx, size_t size, int slots);  /* host memory UCX sends from */
    void (*forget_bounce)(void *ctx);               /* UCX may still read it: never reuse */
} ringx_mem_ops_t;

/* The memory of one call. */
typedef struct ringx_mem {
    ringx_memtype_t type;       /* of the buffers (host for host and pinned) */
    int device;                 /* CUDA ordinal of device buffers, else -1 */
    int staged;                 /* transfers go through bounce buffers */
    const ringx_mem_ops_t *ops;
    void *ctx;                  /* the ops' state */
    ringx_stage_t *stage;       /* the staged transfers of this call */
    ringx_scratch_set_t *scratch;   /* the call's host scratch; NULL: the module's */
    ringx_cuda_caller_t caller; /* the CUDA context to give back on leaving */
} ringx_mem_t;

/* A transfer: a UCX request, or a staged transfer of mem->stage. */
typedef struct ringx_xfer {
    ringx_req_t req;
    int staged;                 /* stage entry + 1, 0 when direct */
} ringx_xfer_t;

/* Finds where the buffers live (MPI_IN_PLACE and NULL are skipped):
 * RINGX_SERVE, or RINGX_FALLBACK_MEMORY for memory ringx cannot serve
 * (device memory in a build without CUDA, a host/device mix, buffers on
 * two devices, device buffers off the elements' alignment `align`, which
 * the kernels cannot read). */
int ringx_mem_classify(ringx_mem_t *mem, const void *a, const void *b, size_t align);

/* The host scratch of a call of module m, whatever its buffers' memory:
 * the call's own, or the module's (blocking calls). */
ringx_scratch_set_t *ringx_mem_host_scratch(ringx_mem_t *mem, struct mca_coll_ringx_module_t *m);

/* Makes mem ready to serve a call of module m: picks the backend and sets
 * up its resources (a persistent call's: once, at its init).  Device
 * memory: its device current, the caller's context kept for
 * ringx_mem_leave. */
int ringx_mem_start(ringx_mem_t *mem, struct mca_coll_ringx_module_t *m, int coll);

/* Counts a served call (a persistent call: each start) of coll in the
 * device and staged pvars, as mem_start set it up. */
void ringx_mem_count(const ringx_mem_t *mem, int coll);

/* Ends the call: waits for the copies and kernels still queued and frees
 * the call's staging state.  Returns rc, or the first error it meets when
 * rc is OMPI_SUCCESS. */
int ringx_mem_finish(ringx_mem_t *mem, int rc);

/* Before a call started earlier advances again (a nonblocking call, in
 * whatever thread drives progress): its device current, the caller's
 * context kept for ringx_mem_leave. */
int ringx_mem_resume(ringx_mem_t *mem);

/* Before ringx returns to whoever called it (the application, Open MPI's
 * progress, or a call of ringx's own whose wait advanced this one): the
 * CUDA context that was current before ringx_mem_start or
 * ringx_mem_resume made the device's current, back.  Without it a
 * collective on one device's buffers would leave that device current for
 * the application's next CUDA call. */
void ringx_mem_leave(ringx_mem_t *mem);

/* dst = a op b, n elements; dst may be a or b. */
int ringx_mem_reduce(ringx_mem_t *mem, void *dst, const void *a, const void *b, size_t n,
                     ringx_type_t type, ringx_op_t op);
int ringx_mem_copy(ringx_mem_t *mem, void *dst, const void *src, size_t len);
void *ringx_mem_scratch(ringx_mem_t *mem, ringx_scratch_kind_t kind, size_t size);

/* ---------------------------------------------- staging (coll_ringx_stage.c) */

/* send_slots and recv_slots bounce buffers of one segment (coll_ringx_segment_size); NULL if
 * out of memory. */
ringx_stage_t *ringx_stage_create(ringx_mem_t *mem, int send_slots, int recv_slots);
void ringx_stage_destroy(ringx_mem_t *mem);
int ringx_stage_send(ringx_mem_t *mem, ringx_peer_t *peer, const void *buf, size_t len,
                     uint64_t tag, ringx_xfer_t *x);
int ringx_stage_recv(ringx_mem_t *mem, void *buf, size_t len, uint64_t tag, ringx_xfer_t *x);
int ringx_stage_test(ringx_mem_t *mem, ringx_xfer_t *x);
void ringx_stage_progress(ringx_mem_t *mem);
void ringx_stage_abandon(ringx_mem_t *mem, ringx_xfer_t *x);
void ringx_stage_release(ringx_mem_t *mem, ringx_xfer_t *x);

/* --------------------------------------------------------------- transfers */

/* As ringx_ucx_* (a zeroed ringx_xfer_t is "none").  Inline: they sit in
 * the engines' polling loops, where host memory must pay no more than a
 * branch for the GPU support. */
static inline int ringx_xfer_send(ringx_mem_t *mem, ringx_peer_t *peer, const void *buf,
                                  size_t len, uint64_t tag, ringx_xfer_t *x)
{
    x->staged = 0;
    return mem->staged ? ringx_stage_send(mem, peer, buf, len, tag, x)
                       : ringx_ucx_isend_mem(peer, buf, len, tag, mem->type, &x->req);
}

static inline int ringx_xfer_recv(ringx_mem_t *mem, void *buf, size_t len, uint64_t tag,
                                  ringx_xfer_t *x)
{
    x->staged = 0;
    return mem->staged ? ringx_stage_recv(mem, buf, len, tag, x)
                       : ringx_ucx_irecv_mem(buf, len, tag, mem->type, &x->req);
}

static inline int ringx_xfer_test(ringx_mem_t *mem, ringx_xfer_t *x)
{
    return x->staged ? ringx_stage_test(mem, x) : ringx_ucx_test(&x->req);
}

static inline void ringx_xfer_abandon(ringx_mem_t *mem, ringx_xfer_t *x)
{
    if (x->staged) {
        ringx_stage_abandon(mem, x);
    } else {
        ringx_ucx_abandon(&x->req);
    }
}

/* A send whose receiver has confirmed every byte: UCX finishes it alone. */
static inline void ringx_xfer_release(ringx_mem_t *mem, ringx_xfer_t *x)
{
    if (x->staged) {
        ringx_stage_release(mem, x);
    } else {
        ringx_ucx_release(&x->req);
    }
}

/* Requests under way and their progress (coll_ringx_request.c). */
extern volatile int ringx_requests_active;
int ringx_requests_progress(void);

/* One round of progress while waiting: UCX, the staged transfers, and the
 * nonblocking calls under way, which MPI requires to progress while a
 * process waits for anything (see ringx_ucx_progress for idle). */
static inline void ringx_mem_progress(ringx_mem_t *mem, unsigned *idle)
{
    if (mem->stage != NULL) {
        ringx_stage_progress(mem);
    }
    if (ringx_requests_active) {
        (void)ringx_requests_progress();
    }
    ringx_ucx_progress(idle);
}

/* ------------------------------------------------ CUDA (coll_ringx_cuda.c) */

/* A state of the CUDA backend for one call on device's memory, the
 * device made current; NULL (with a verbose message) if the device cannot
 * be used.  direct: UCX moves device memory itself, so every copy and
 * kernel finishes before its call returns to the algorithm.  The call
 * gives it back when it ends (ringx_cuda_give); ringx_cuda_resume makes
 * its device current again, in whatever thread advances the call next;
 * ringx_cuda_close frees every state given back (component close). */
void *ringx_cuda_take(int device, int direct);
int ringx_cuda_resume(void *state);
void ringx_cuda_give(void *state);
void ringx_cuda_close(void);
extern const ringx_mem_ops_t ringx_cuda_ops;

/* Whether ringx can work on device's memory: a state made for it (streams,
 * events) and its kernels loadable there (a driver too old for ringx's
 * CUDA runtime, or a GPU the kernels carry no code for, fail).  Asked once
 * per device; the caller's CUDA context is kept. */
int ringx_cuda_usable(int device);

#endif /* COLL_RINGX_MEM_H */
