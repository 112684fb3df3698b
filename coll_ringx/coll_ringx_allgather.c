/*
 * coll_ringx_allgather.c - MPI_Allgather.
 *
 * Ring: p-1 steps; at each a rank passes to its right neighbour the block
 * it received from its left one, straight from and into the result buffer.
 */
#include "coll_ringx.h"

#include <string.h>

typedef struct allgather_buffers {
    const char *own;        /* this rank's contribution */
    char *result;
} allgather_buffers_t;

static const char *allgather_send_block(const ringx_ring_t *ring, int step, int block)
{
    const allgather_buffers_t *b = ring->ctx;
    return step == 0 ? b->own : b->result + ringx_block_bytes_offset(ring, block);
}

static void allgather_recv_block(const ringx_ring_t *ring, int step, int block,
                                 ringx_ring_recv_target_t *target)
{
    const allgather_buffers_t *b = ring->ctx;
    target->direct = b->result + ringx_block_bytes_offset(ring, block);
}

static int allgather_ring(mca_coll_ringx_module_t *m, const char *own, char *result,
                          size_t block_count, size_t elem_size)
{
    allgather_buffers_t bufs = { own, result };
    ringx_ring_t ring = {
        .module = m,
        .nsteps = m->size - 1,
        .reduce_steps = 0,
        .shift = 0,
        .count = block_count * (size_t)m->size,
        .elem_size = elem_size,
        .ctx = &bufs,
        .send_block = allgather_send_block,
        .recv_block = allgather_recv_block,
    };
    char *own_block = result + ringx_block_bytes_offset(&ring, m->rank);

    if (own != own_block) {
        memcpy(own_block, own, block_count * elem_size);
    }
    int rc = ringx_ring_run(&ring);
    ringx_count(&mca_coll_ringx_counters.bytes_sent[RINGX_COLL_ALLGATHER], ring.bytes_sent);
    return rc;
}

/* Both sides must be plain runs of bytes: allgather moves bytes only, so
 * any contiguous datatype qualifies, derived ones included. */
static int allgather_classify(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              int rcount, struct ompi_datatype_t *rdtype,
                              ptrdiff_t *s_lb, ptrdiff_t *r_lb, size_t *r_elem)
{
    size_t s_elem = 0;
    int why = ringx_classify_contiguous(rdtype, rcount, r_lb, r_elem);

    *s_lb = 0;
    if (why == RINGX_SERVE && sbuf != MPI_IN_PLACE) {
        why = ringx_classify_contiguous(sdtype, scount, s_lb, &s_elem);
    }
    return why;
}

int mca_coll_ringx_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_ringx_module_t *m = (mca_coll_ringx_module_t *)module;
    ptrdiff_t s_lb, r_lb;
    size_t r_elem = 0;
    int rc;
    int buffers = allgather_classify(sbuf, scount, sdtype, rcount, rdtype, &s_lb, &r_lb,
                                     &r_elem);

    if (ringx_admit(m, comm, RINGX_COLL_ALLGATHER, buffers, &rc) != RINGX_SERVE) {
        return rc != OMPI_SUCCESS ? rc
                                  : m->prev_allgather(sbuf, scount, sdtype, rbuf, rcount,
                                                      rdtype, comm, m->prev_allgather_module);
    }
    char *result = (char *)rbuf + r_lb;
    size_t block_bytes = (size_t)rcount * r_elem;
    const char *own = sbuf == MPI_IN_PLACE ? result + (size_t)m->rank * block_bytes
                                           : (const char *)sbuf + s_lb;
    (void)ringx_choose(m, RINGX_COLL_ALLGATHER, block_bytes * (size_t)m->size);
    return allgather_ring(m, own, result, (size_t)rcount, r_elem);
}
