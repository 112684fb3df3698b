/*
 * coll_ringx_cma.h - single-copy reads from the memory of other processes
 * on this node through UCX's cma transport, driven at UCX's transport layer
 * (UCT): UCP 1.13 uses cma only inside its rendezvous protocol and carries
 * a ucp_get_nbx between processes of a node by active messages instead.
 * Used by coll_ringx_ucx.c only.
 */
#ifndef COLL_RINGX_CMA_H
#define COLL_RINGX_CMA_H

#include <stddef.h>
#include <stdint.h>

/* Opens the cma transport once per process; 0, or nonzero (logged on
 * output) when it is not available. */
int ringx_cma_open(int output);
void ringx_cma_close(void);

/* What a peer needs to connect to this process (NULL, *len 0: no cma). */
const void *ringx_cma_address(size_t *len);

/* An endpoint to the process at address, or NULL. */
void *ringx_cma_connect(const void *address, size_t len);
void ringx_cma_disconnect(void *ep);

/* Registers len bytes at buf for peers' reads and packs its key into key
 * (ringx_cma_key_bytes() long); 0 or an OMPI error code. */
size_t ringx_cma_key_bytes(void);
int ringx_cma_register(const void *buf, size_t len, void **memh, void *key);
void ringx_cma_deregister(void *memh);

/* A peer's key, unpacked for reads (NULL on failure), and its release. */
void *ringx_cma_key_unpack(const void *key);
void ringx_cma_key_release(void *unpacked);

/* Reads len bytes at remote in the peer's memory into buf, one copy by the
 * kernel; returns when done: 0 or an OMPI error code. */
int ringx_cma_get(void *ep, void *buf, size_t len, uint64_t remote, void *unpacked);

#endif /* COLL_RINGX_CMA_H */
