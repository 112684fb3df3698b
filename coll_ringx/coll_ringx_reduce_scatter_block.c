/*
 * coll_ringx_reduce_scatter_block.c - MPI_Reduce_scatter_block.
 *
 * Ring: p-1 reducing steps, started one block earlier than allreduce's
 * (shift 1) so that rank r ends with block r.  Partial sums live in two
 * block-sized buffers used alternately: the block received at step t is
 * sent on at step t+1, and its buffer is free again once that send is done.
 *
 * Recursive halving (any rank count, commutative ops): log2(p) steps, each
 * sending the half of the current window of blocks that the partner keeps
 * and reducing the half this rank keeps, in a scratch buffer of all p
 * blocks.  Rank counts that are not powers of two fold first (see
 * ringx_schedule.h); a newrank then ends with the blocks of both ranks it
 * stands for and hands one back.
 *
 * Direct reads (ranks on one node): each rank copies a piece of every
 * block into its outbox, reduces its own block's piece from every
 * outbox into its result (coll_ringx_osched.c); one synchronisation per
 * piece.  For large calls (ringx_direct_from_buffers)
 * and without outboxes (coll_ringx_mailbox_bytes 0), each rank reads its
 * block of every peer's input straight out of the peer's buffer
 * (coll_ringx_direct.c) and reduces it, a segment at a time so that the
 * partial result stays in cache.  On the development machine
 * the outboxes took 5-56% less time from 128 KiB at np 4 and 8, and 2-26%
 * less at np 2 up to 8 MiB (3-9% more above).
 */
#include "coll_ringx.h"

static const char *rsb_send_block(const ringx_ring_t *ring, int step, int block)
{
    const ringx_ring_bufs_t *b = ring->ctx;
    return step == 0 ? b->input + ringx_block_bytes_offset(ring, block)
                     : b->partial[(step - 1) & 1];
}

static void rsb_recv_block(const ringx_ring_t *ring, int step, int block,
                           ringx_ring_recv_target_t *target)
{
    const ringx_ring_bufs_t *b = ring->ctx;
    int last = step == ring->nsteps - 1;

    target->direct = NULL;
    target->reduce_local = b->input + ringx_block_bytes_offset(ring, block);
    target->reduce_dst = last && b->result ? b->result : b->partial[step & 1];
}

/* In place, the last step cannot write rbuf's first block while a send
 * may still read it as input: it lands in a partial buffer, copied last. */
static int build_ring(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_sched_t *s = &c->sched;
    mca_coll_ringx_module_t *m = c->m;
    size_t block_bytes = c->count * c->elem_size;
    char *partials = ringx_mem_scratch(&c->mem, RINGX_SCRATCH_BLOCKS, 2 * block_bytes + 1);

    (void)alg;
    if (partials == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    s->engine = RINGX_ENGINE_RING;
    s->bufs = (ringx_ring_bufs_t){ c->input, c->in_place ? NULL : c->result,
                                   { partials, partials + block_bytes } };
    s->u.ring = (ringx_ring_t){
        .module = m,
        .mem = &c->mem,
        .nsteps = m->size - 1,
        .reduce_steps = m->size - 1,
        .shift = 1,
        .count = c->count * (size_t)m->size,
        .elem_size = c->elem_size,
        .red = c->red,
        .ctx = &s->bufs,
        .send_block = rsb_send_block,
        .recv_block = rsb_recv_block,
    };
    if (c->in_place) {
        ringx_sched_copy_after(s, c->result, s->bufs.partial[(m->size - 2) & 1], block_bytes);
    }
    return OMPI_SUCCESS;
}

static void halving_steps(ringx_xsched_t *s, const char *input, char *acc, char *rbuf,
                          size_t block_bytes)
{
    int rank = s->module->rank, p = s->module->size, pof2 = ringx_pof2_floor(p);
    int rem = p - pof2, newrank = ringx_fold_newrank(rank, p);
    size_t total = block_bytes * (size_t)p;
    const char *cur = input;

    /* Step numbers must agree on every rank: see ringx_xsched_skip(). */
    if (newrank < 0) {
        ringx_xsched_send(s, rank + 1, input, total);
        for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
            ringx_xsched_skip(s);
        }
        ringx_xsched_recv(s, rank + 1, rbuf, block_bytes);
        return;
    }
    if (rank < 2 * rem) {
        ringx_xsched_reduce(s, rank - 1, acc, input, total);
        cur = acc;
    } else {
        ringx_xsched_skip(s);
    }
    for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
        int partner = ringx_fold_rank(newrank ^ mask, p), klo, khi, slo, shi;
        ringx_halving_ranges(newrank, mask, &klo, &khi, &slo, &shi);
        size_t keep = (size_t)ringx_fold_first(klo, p) * block_bytes;
        size_t send = (size_t)ringx_fold_first(slo, p) * block_bytes;
        ringx_xsched_reduce(s, partner, acc + keep, cur + keep,
                            (size_t)ringx_fold_first(khi, p) * block_bytes - keep);
        ringx_xsched_also_send(s, partner, cur + send,
                               (size_t)ringx_fold_first(shi, p) * block_bytes - send);
        cur = acc;
    }
    if (rank < 2 * rem) {
        ringx_xsched_send(s, rank - 1, acc + (size_t)(rank - 1) * block_bytes, block_bytes);
    } else {
        ringx_xsched_skip(s);
    }
}

static int build_halving(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_xsched_t *s = &c->sched.u.xs;
    mca_coll_ringx_module_t *m = c->m;
    size_t block_bytes = c->count * c->elem_size;
    char *acc = ringx_mem_scratch(&c->mem, RINGX_SCRATCH_BLOCKS,
                                  block_bytes * (size_t)m->size + 1);

    (void)alg;
    if (acc == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    c->sched.engine = RINGX_ENGINE_EXCHANGE;
    ringx_xsched_init(s, m, &c->mem, RINGX_COLL_REDUCE_SCATTER_BLOCK, c->red, c->elem_size,
                      block_bytes * (size_t)m->size);
    s->msgs.mailboxes = c->blocking;
    halving_steps(s, c->input, acc, c->result, block_bytes);
    /* Copied last: in place, the input blocks were being sent from rbuf. */
    if (ringx_fold_newrank(m->rank, m->size) >= 0) {
        ringx_sched_copy_after(&c->sched, c->result, acc + (size_t)m->rank * block_bytes,
                               block_bytes);
    }
    return OMPI_SUCCESS;
}

const ringx_alg_impl_t ringx_reduce_scatter_block_algs[] = {
    { RINGX_ALG_RING, build_ring },
    { RINGX_ALG_RECURSIVE_HALVING, build_halving },
    { RINGX_ALG_DIRECT_READ, ringx_direct_build },
    { RINGX_ALG_HIERARCHICAL, ringx_hier_build_reduce_scatter_block },
    { RINGX_ALG_COUNT, NULL },
};


int mca_coll_ringx_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module)
{
    mca_coll_ringx_module_t *m = ringx_module_of(module, comm);
    ringx_call_t c;
    int rc, buffers;

    if (m == NULL) {
        return OMPI_ERR_NOT_FOUND;
    }
    if (ringx_handed_back(m, RINGX_COLL_REDUCE_SCATTER_BLOCK)) {
        return ringx_handback_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, m);
    }
    buffers = ringx_call_prepare_reduction(&c, m, RINGX_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf,
                                           rcount, dtype, op, 1);
    if (ringx_admit(m, comm, RINGX_COLL_REDUCE_SCATTER_BLOCK, buffers, 1, &rc) != RINGX_SERVE) {
        return rc != OMPI_SUCCESS
                   ? rc
                   : RINGX_HAND_ON(m, RINGX_COLL_REDUCE_SCATTER_BLOCK,
                                   m->prev_reduce_scatter_block(
                                       sbuf, rbuf, rcount, dtype, op, comm,
                                       m->prev_reduce_scatter_block_module));
    }
    return ringx_call_serve(&c);
}

static int hand_on(const ringx_request_args_t *a, mca_coll_ringx_module_t *m,
                   struct ompi_communicator_t *comm, int persistent, struct ompi_info_t *info,
                   ompi_request_t **request)
{
    return persistent
               ? m->prev_reduce_scatter_block_init(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op,
                                                   comm, info, request,
                                                   m->prev_reduce_scatter_block_init_module)
               : m->prev_ireduce_scatter_block(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op,
                                               comm, request,
                                               m->prev_ireduce_scatter_block_module);
}

static int serve_request(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         struct ompi_info_t *info, ompi_request_t **request,
                         mca_coll_base_module_t *module, int persistent)
{
    mca_coll_ringx_module_t *m = ringx_module_of(module, comm);
    ringx_request_t *req = ringx_request_new(m, persistent);
    ringx_request_args_t args = { sbuf, rbuf, rcount, rcount, NULL, dtype, op, hand_on };
    int buffers = req == NULL ? RINGX_FALLBACK_MEMORY
                              : ringx_call_prepare_reduction(&req->call, m,
                                                             RINGX_COLL_REDUCE_SCATTER_BLOCK, sbuf,
                                                             rbuf, rcount, dtype, op, 0);

    return ringx_request_serve(m, comm, RINGX_COLL_REDUCE_SCATTER_BLOCK, buffers, req,
                               persistent, &args, info, request);
}

int mca_coll_ringx_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         ompi_request_t **request,
                                         mca_coll_base_module_t *module)
{
    return serve_request(sbuf, rbuf, rcount, dtype, op, comm, NULL, request, module, 0);
}

int mca_coll_ringx_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                             struct ompi_datatype_t *dtype,
                                             struct ompi_op_t *op,
                                             struct ompi_communicator_t *comm,
                                             struct ompi_info_t *info, ompi_request_t **request,
                                             mca_coll_base_module_t *module)
{
    return serve_request(sbuf, rbuf, rcount, dtype, op, comm, info, request, module, 1);
}
