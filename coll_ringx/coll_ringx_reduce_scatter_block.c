/*
 * coll_ringx_reduce_scatter_block.c - MPI_Reduce_scatter_block.
 *
 * Ring: p-1 reducing steps, started one block earlier than allreduce's
 * (shift 1) so that rank r ends with block r.  Partial sums live in two
 * block-sized buffers used alternately: the block received at step t is
 * sent on at step t+1, and its buffer is free again once that send is done.
 */
#include "coll_ringx.h"

#include <string.h>

typedef struct rsb_buffers {
    const char *input;      /* all p blocks: sbuf, or rbuf when MPI_IN_PLACE */
    char *result;           /* where the final block goes */
    char *partial[2];
} rsb_buffers_t;

static const char *rsb_send_block(const ringx_ring_t *ring, int step, int block)
{
    const rsb_buffers_t *b = ring->ctx;
    return step == 0 ? b->input + ringx_block_bytes_offset(ring, block)
                     : b->partial[(step - 1) & 1];
}

static void rsb_recv_block(const ringx_ring_t *ring, int step, int block,
                           ringx_ring_recv_target_t *target)
{
    const rsb_buffers_t *b = ring->ctx;
    int last = step == ring->nsteps - 1;

    target->direct = NULL;
    target->reduce_local = b->input + ringx_block_bytes_offset(ring, block);
    target->reduce_dst = last && b->result ? b->result : b->partial[step & 1];
    target->dst_read_by_prev_send = target->reduce_dst != b->result;
}

static int rsb_ring(mca_coll_ringx_module_t *m, const void *sbuf, void *rbuf, size_t rcount,
                    ringx_reduction_t red)
{
    size_t elem = ringx_type_size(red.type);
    size_t block_bytes = rcount * elem;
    int in_place = sbuf == MPI_IN_PLACE;
    /* In place, the last step cannot write rbuf's first block while a send
     * may still read it as input: it lands in a partial buffer, copied last. */
    rsb_buffers_t bufs = { in_place ? rbuf : sbuf, in_place ? NULL : rbuf, { NULL, NULL } };
    char *partials = ringx_scratch_get(&m->blocks, 2 * block_bytes + 1);
    ringx_ring_t ring = {
        .module = m,
        .nsteps = m->size - 1,
        .reduce_steps = m->size - 1,
        .shift = 1,
        .count = rcount * (size_t)m->size,
        .elem_size = elem,
        .red = red,
        .ctx = &bufs,
        .send_block = rsb_send_block,
        .recv_block = rsb_recv_block,
    };
    int rc;

    if (partials == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    bufs.partial[0] = partials;
    bufs.partial[1] = partials + block_bytes;
    rc = ringx_ring_run(&ring);
    if (rc == OMPI_SUCCESS && in_place) {
        memcpy(rbuf, bufs.partial[(ring.nsteps - 1) & 1], block_bytes);
    }
    ringx_count(&mca_coll_ringx_counters.bytes_sent[RINGX_COLL_REDUCE_SCATTER_BLOCK],
                ring.bytes_sent);
    return rc;
}

int mca_coll_ringx_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module)
{
    mca_coll_ringx_module_t *m = (mca_coll_ringx_module_t *)module;
    ringx_reduction_t red;
    int rc;
    int buffers = ringx_classify_reduction(dtype, op, &red);

    if (ringx_admit(m, comm, RINGX_COLL_REDUCE_SCATTER_BLOCK, buffers, &rc) != RINGX_SERVE) {
        return rc != OMPI_SUCCESS
                   ? rc
                   : m->prev_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                                  m->prev_reduce_scatter_block_module);
    }
    (void)ringx_choose(m, RINGX_COLL_REDUCE_SCATTER_BLOCK,
                       (size_t)rcount * ringx_type_size(red.type) * (size_t)m->size);
    return rsb_ring(m, sbuf, rbuf, (size_t)rcount, red);
}
