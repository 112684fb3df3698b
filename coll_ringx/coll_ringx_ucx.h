/*
 * coll_ringx_ucx.h - ringx's transport: one UCP context and worker per
 * process, endpoints cached per peer process and shared by every
 * communicator, tag-matched nonblocking send and receive, progress.
 *
 * Everything here is per process; what is per communicator (which peer is
 * rank i, the tag space) lives in the module.
 */
#ifndef COLL_RINGX_UCX_H
#define COLL_RINGX_UCX_H

#include <stddef.h>
#include <stdint.h>

#include "ringx_memtype.h"

/* A peer process: its worker address and, once first used, its endpoint. */
typedef struct ringx_peer ringx_peer_t;

/* An outstanding send or receive; NULL when none (or already complete). */
typedef void *ringx_req_t;

/* Starts UCX once per process; later calls return the first outcome.
 * window_bytes: the size of this process's window (below; 0: none);
 * single_copy: open UCX's cma transport for direct reads too.
 * Returns 0 on success, an OMPI error code if UCX cannot start. */
int ringx_ucx_start(int thread_multiple, int verbose_output, size_t window_bytes,
                    int single_copy);

/* Whether ringx_ucx_start() succeeded. */
int ringx_ucx_ready(void);

/* Releases endpoints, worker and context (MPI_Finalize). */
void ringx_ucx_stop(void);

/* This process's worker address and the key that names this process. */
const void *ringx_ucx_local_address(size_t *len);
uint64_t ringx_ucx_local_key(void);

/* The key that names a process: its Open MPI job id and its rank there. */
uint64_t ringx_ucx_key(uint32_t jobid, uint32_t vpid);

/* The cached peer for key, created from its worker address on first sight. */
ringx_peer_t *ringx_ucx_peer(uint64_t key, const void *address, size_t len);

/* The cached peer for key; NULL if no communicator has connected this
 * process to it yet. */
ringx_peer_t *ringx_ucx_known_peer(uint64_t key);

/* Where peer's window is mapped here (ringx_ucx_peer_window), or NULL. */
char *ringx_ucx_mapped_window(const ringx_peer_t *peer);

/* The window: memory of this process that peers on the same node read
 * and write directly once they have mapped it (not cleared: each user
 * clears its part before use); NULL (and *bytes 0)
 * if UCX could not allocate one. */
void *ringx_ucx_window(size_t *bytes);

/* What a peer needs to map this process's window (its address and UCX
 * key); NULL if there is no window. */
const void *ringx_ucx_window_desc(size_t *len);

/* Maps peer's window, described by desc, into this process: its address
 * here, or NULL where UCX reaches the peer only through messages (another
 * node, no shared-memory transport).  Mapped once per peer. */
char *ringx_ucx_peer_window(ringx_peer_t *peer, const void *desc, size_t len);

/* A host buffer this process lets its peers read for a while: its
 * registration and the packed key a peer needs to read it. */
typedef struct ringx_exposed {
    void *memh;
    void *packed_rkey;
    size_t packed_rkey_len;
    int single_copy;
} ringx_exposed_t;

/* Whether reads from peer are single copies by the kernel (UCX's cma
 * transport, coll_ringx_cma.c); otherwise they go through UCP, which
 * between processes of a node may carry them in messages. */
int ringx_ucx_single_copy(const ringx_peer_t *peer);

/* Registers len bytes at buf for peers' reads (ringx_ucx_iget), for single
 * copies or through UCP; returns 0 or an OMPI error code (then *e holds
 * nothing to release).  The reads and keys must use the same way. */
int ringx_ucx_expose(const void *buf, size_t len, int single_copy, ringx_exposed_t *e);
void ringx_ucx_unexpose(ringx_exposed_t *e);

/* A peer's key, unpacked for reads from it; NULL on failure. */
void *ringx_ucx_rkey(ringx_peer_t *peer, const void *packed_rkey, int single_copy);
void ringx_ucx_rkey_release(void *rkey, int single_copy);

/* Posts a read of len bytes at remote (in peer's memory, under rkey) into
 * buf; as ringx_ucx_isend for *req and the result (a single copy is done
 * when this returns). */
int ringx_ucx_iget(ringx_peer_t *peer, void *buf, size_t len, uint64_t remote, void *rkey,
                   int single_copy, ringx_req_t *req);

/* Posts a send to peer / a receive matching tag exactly.  On success *req
 * is set (NULL if the operation already completed); returns 0 or an OMPI
 * error code. */
int ringx_ucx_isend(ringx_peer_t *peer, const void *buf, size_t len, uint64_t tag,
                    ringx_req_t *req);
int ringx_ucx_irecv(void *buf, size_t len, uint64_t tag, ringx_req_t *req);

/* The same, for buffers of memory type memtype: device and managed memory
 * go to UCX as such (only where ringx_ucx_cuda_memory() says UCX can move
 * them); host and pinned memory as host memory. */
int ringx_ucx_isend_mem(ringx_peer_t *peer, const void *buf, size_t len, uint64_t tag,
                        ringx_memtype_t memtype, ringx_req_t *req);
int ringx_ucx_irecv_mem(void *buf, size_t len, uint64_t tag, ringx_memtype_t memtype,
                        ringx_req_t *req);

/* Whether the UCP context moves CUDA device memory (a CUDA-aware UCX with
 * its cuda transports loaded). */
int ringx_ucx_cuda_memory(void);

/* Tests *req without progressing: 1 if complete (and *req released and
 * set to NULL), 0 if pending, an OMPI error code (< 0) if it failed. */
int ringx_ucx_test(ringx_req_t *req);

/* Drops an outstanding request on an error path: a receive is cancelled,
 * a send is left to finish inside UCX without notifying ringx. */
void ringx_ucx_abandon(ringx_req_t *req);

/* One round of progress.  idle counts consecutive rounds that found
 * nothing to do; past a threshold the process yields the CPU when Open
 * MPI asks for it (oversubscription, mpi_yield_when_idle) or when
 * coll_ringx_yield says so. */
void ringx_ucx_progress(unsigned *idle);

/* Every few idle rounds the waits also run Open MPI's progress engine
 * (MPI's progress rule), except inside it: ringx's progress callback says
 * when this thread runs there (1 on entry; on exit, what this returned). */
int ringx_ucx_inside_progress(int inside);

/* One round of the worker's progress, without yielding (Open MPI's
 * progress engine yields itself); returns what ucp_worker_progress does. */
unsigned ringx_ucx_progress_worker(void);

/*
 * A send UCX reports complete may still be inside UCX: over TCP its bytes
 * wait in the endpoint's send buffer until the worker progresses again
 * (when the kernel's socket buffer is full, as on a slow link).  A rank
 * that has left a ringx call and waits in another component would then
 * never hand them to the kernel, and the peers still in the call would
 * wait for them for ever.  So a call that sent messages starts a flush of
 * the worker (flush_behind; 1 if it is under way), and Open MPI's progress
 * engine drives the worker until the flush is over (flush_pending: 0 once
 * it is, or when none was started).
 */
int ringx_ucx_flush_behind(void);
int ringx_ucx_flush_pending(void);

/* Waits until *req completes; returns 0 or an OMPI error code. */
int ringx_ucx_wait(ringx_req_t *req);

/* Lets go of an outstanding request without cancelling it: the operation
 * completes inside UCX (a receive still consumes its message) and ringx is
 * not told.  Only for requests whose completion no longer matters. */
void ringx_ucx_release(ringx_req_t *req);

/* The largest message that UCX surely sends eagerly (its send completes
 * without the receiver's help): a call whose whole buffer is no larger
 * needs no end-of-call handshake.  Lowered when the rendezvous threshold
 * (UCX_RNDV_THRESH, or ringx_ucx_set_rndv_thresh) is below it. */
size_t ringx_ucx_eager_limit(void);

/* The rendezvous threshold the context starts with (before
 * ringx_ucx_start; 0: UCX's own; UCX_RNDV_THRESH in the environment
 * prevails). */
void ringx_ucx_set_rndv_thresh(size_t bytes);

/* Set by the component from coll_ringx_yield and Open MPI's settings. */
void ringx_ucx_set_yield(int yield);

#endif /* COLL_RINGX_UCX_H */
