/*
 * coll_ringx_allreduce.c - MPI_Allreduce.
 *
 * Ring: a reduce-scatter walk of p-1 steps leaves block rank+1 complete on
 * every rank, and an allgather walk of p-1 more steps continues the same
 * walk to spread the complete blocks: 2(p-1) steps, each rank sending
 * 2(p-1)/p of the buffer, which is bandwidth-optimal.
 */
#include "coll_ringx.h"

typedef struct allreduce_buffers {
    const char *input;      /* sbuf, or rbuf when MPI_IN_PLACE */
    char *result;           /* rbuf */
} allreduce_buffers_t;

static const char *allreduce_send_block(const ringx_ring_t *ring, int step, int block)
{
    const allreduce_buffers_t *b = ring->ctx;
    /* Step 0 sends untouched input; later steps pass on what arrived. */
    const char *base = step == 0 ? b->input : b->result;
    return base + ringx_block_bytes_offset(ring, block);
}

static void allreduce_recv_block(const ringx_ring_t *ring, int step, int block,
                                 ringx_ring_recv_target_t *target)
{
    const allreduce_buffers_t *b = ring->ctx;
    size_t off = ringx_block_bytes_offset(ring, block);

    if (step < ring->reduce_steps) {
        /* Three operands: the input is never copied into the result first. */
        target->direct = NULL;
        target->reduce_dst = b->result + off;
        target->reduce_local = b->input + off;
        target->dst_read_by_prev_send = 0;
    } else {
        target->direct = b->result + off;
    }
}

static int allreduce_ring(mca_coll_ringx_module_t *m, const void *sbuf, void *rbuf,
                          size_t count, ringx_reduction_t red)
{
    allreduce_buffers_t bufs = { sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf };
    ringx_ring_t ring = {
        .module = m,
        .nsteps = 2 * (m->size - 1),
        .reduce_steps = m->size - 1,
        .shift = 0,
        .count = count,
        .elem_size = ringx_type_size(red.type),
        .red = red,
        .ctx = &bufs,
        .send_block = allreduce_send_block,
        .recv_block = allreduce_recv_block,
    };
    int rc = ringx_ring_run(&ring);
    ringx_count(&mca_coll_ringx_counters.bytes_sent[RINGX_COLL_ALLREDUCE], ring.bytes_sent);
    return rc;
}

int mca_coll_ringx_allreduce(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_ringx_module_t *m = (mca_coll_ringx_module_t *)module;
    ringx_reduction_t red;
    int rc;
    int buffers = ringx_classify_reduction(dtype, op, &red);

    if (ringx_admit(m, comm, RINGX_COLL_ALLREDUCE, buffers, &rc) != RINGX_SERVE) {
        return rc != OMPI_SUCCESS ? rc
                                  : m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                                      m->prev_allreduce_module);
    }
    (void)ringx_choose(m, RINGX_COLL_ALLREDUCE, (size_t)count * ringx_type_size(red.type));
    return allreduce_ring(m, sbuf, rbuf, (size_t)count, red);
}
