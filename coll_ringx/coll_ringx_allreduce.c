/*
 * coll_ringx_allreduce.c - MPI_Allreduce.
 *
 * Ring: a reduce-scatter walk of p-1 steps leaves block rank+1 complete on
 * every rank, and an allgather walk of p-1 more steps continues the same
 * walk to spread the complete blocks: 2(p-1) steps, each rank sending
 * 2(p-1)/p of the buffer, which is bandwidth-optimal.
 *
 * Recursive doubling: log2(p) exchanges of the whole buffer: fewest
 * latencies, for small buffers.
 *
 * Rabenseifner: a reduce-scatter by recursive halving and an allgather by
 * recursive doubling: 2 log2(p) latencies and 2(p-1)/p of the buffer sent,
 * for medium buffers.
 *
 * The log(p) algorithms fold rank counts that are not powers of two (see
 * ringx_schedule.h): each even rank of the first pairs hands its buffer to
 * its odd neighbour first and gets the result back last.
 *
 * Direct reads (ranks on one node): through the outboxes
 * (coll_ringx_osched.c), a reduce-scatter and an allgather in which every
 * rank reads from every other at once, one synchronisation each per piece;
 * large calls the same out of the peers' buffers (coll_ringx_direct.c),
 * three synchronisations per call.
 */
#include "coll_ringx.h"

#include "ringx_host_reduce.h"

static const char *allreduce_send_block(const ringx_ring_t *ring, int step, int block)
{
    const ringx_ring_bufs_t *b = ring->ctx;
    /* Step 0 sends untouched input; later steps pass on what arrived. */
    const char *base = step == 0 ? b->input : b->result;
    return base + ringx_block_bytes_offset(ring, block);
}

static void allreduce_recv_block(const ringx_ring_t *ring, int step, int block,
                                 ringx_ring_recv_target_t *target)
{
    const ringx_ring_bufs_t *b = ring->ctx;
    size_t off = ringx_block_bytes_offset(ring, block);

    if (step < ring->reduce_steps) {
        /* Three operands: the input is never copied into the result first. */
        target->direct = NULL;
        target->reduce_dst = b->result + off;
        target->reduce_local = b->input + off;
    } else {
        target->direct = b->result + off;
    }
}

static int build_ring(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_sched_t *s = &c->sched;
    mca_coll_ringx_module_t *m = c->m;

    (void)alg;
    s->engine = RINGX_ENGINE_RING;
    s->bufs = (ringx_ring_bufs_t){ c->input, c->result, { NULL, NULL } };
    s->u.ring = (ringx_ring_t){
        .module = m,
        .mem = &c->mem,
        .nsteps = 2 * (m->size - 1),
        .reduce_steps = m->size - 1,
        .shift = 0,
        .count = c->count,
        .elem_size = c->elem_size,
        .red = c->red,
        .ctx = &s->bufs,
        .send_block = allreduce_send_block,
        .recv_block = allreduce_recv_block,
    };
    return OMPI_SUCCESS;
}

/* The communicator rank of group member i. */
static int member(const ringx_group_t *g, int i)
{
    return g->ranks != NULL ? g->ranks[i] : i;
}

/*
 * The fold around the power-of-two part of a log(p) schedule: one step in
 * (where this rank's data is afterwards, NULL for a rank folded away), one
 * step out.  Every rank takes both steps, empty or not, so that step
 * numbers agree.
 */
static const char *fold_in(ringx_xsched_t *s, const ringx_group_t *g, const char *input,
                           char *result, size_t bytes)
{
    int rank = g->rank, rem = g->size - ringx_pof2_floor(g->size);
    if (rank >= 2 * rem) {
        ringx_xsched_skip(s);
        return input;
    }
    if (rank % 2) {
        ringx_xsched_reduce(s, member(g, rank - 1), result, input, bytes);
        return result;
    }
    ringx_xsched_send(s, member(g, rank + 1), input, bytes);
    return NULL;
}

static void fold_out(ringx_xsched_t *s, const ringx_group_t *g, char *result, size_t bytes)
{
    int rank = g->rank, rem = g->size - ringx_pof2_floor(g->size);
    if (rank >= 2 * rem) {
        ringx_xsched_skip(s);
    } else if (rank % 2) {
        ringx_xsched_send(s, member(g, rank - 1), result, bytes);
    } else {
        ringx_xsched_recv(s, member(g, rank + 1), result, bytes);
    }
}

void ringx_allreduce_doubling(ringx_xsched_t *s, const ringx_group_t *g, const char *input,
                              char *result, size_t bytes)
{
    int p = g->size, pof2 = ringx_pof2_floor(p), newrank = ringx_fold_newrank(g->rank, p);
    const char *cur = fold_in(s, g, input, result, bytes);

    if (newrank < 0) {
        ringx_xsched_skip_steps(s, ringx_log2_pof2(pof2));   /* folded away */
    }
    for (int mask = 1; newrank >= 0 && mask < pof2; mask <<= 1) {
        int partner = member(g, ringx_fold_rank(newrank ^ mask, p));
        ringx_xsched_reduce(s, partner, result, cur, bytes);
        ringx_xsched_also_send(s, partner, cur, bytes);
        /* Both partners reduce the same two operands, the lower newrank's
         * first, so that every rank ends with the same bits where the
         * operand order shows: MAX and MIN of +0 and -0 or with a NaN,
         * MINLOC and MAXLOC with a NaN, NaN payloads of SUM. */
        if (newrank & mask) {
            ringx_xsched_received_first(s);
        }
        cur = result;
    }
    fold_out(s, g, result, bytes);
}

/* Byte offset of chunk c of count elements cut into pof2 chunks. */
static size_t chunk_offset(const ringx_xsched_t *s, size_t count, int pof2, int c)
{
    return ringx_block_offset(count, pof2, c) * s->elem_size;
}

static void rabenseifner_steps(ringx_xsched_t *s, const ringx_group_t *g, const char *input,
                               char *result, size_t count)
{
    int p = g->size, pof2 = ringx_pof2_floor(p), newrank = ringx_fold_newrank(g->rank, p);
    size_t bytes = count * s->elem_size;
    const char *cur = fold_in(s, g, input, result, bytes);

    if (newrank < 0) {
        ringx_xsched_skip_steps(s, 2 * ringx_log2_pof2(pof2));
    }
    for (int mask = pof2 / 2; newrank >= 0 && mask >= 1; mask /= 2) {
        int partner = member(g, ringx_fold_rank(newrank ^ mask, p)), klo, khi, slo, shi;
        ringx_halving_ranges(newrank, mask, &klo, &khi, &slo, &shi);
        size_t keep = chunk_offset(s, count, pof2, klo), send = chunk_offset(s, count, pof2, slo);
        ringx_xsched_reduce(s, partner, result + keep, cur + keep,
                            chunk_offset(s, count, pof2, khi) - keep);
        ringx_xsched_also_send(s, partner, cur + send,
                               chunk_offset(s, count, pof2, shi) - send);
        cur = result;
    }
    for (int mask = 1; newrank >= 0 && mask < pof2; mask <<= 1) {
        int partner = member(g, ringx_fold_rank(newrank ^ mask, p));
        int mine = ringx_doubling_window(newrank, mask);
        int theirs = ringx_doubling_window(newrank ^ mask, mask);
        size_t in = chunk_offset(s, count, pof2, theirs), out = chunk_offset(s, count, pof2, mine);
        ringx_xsched_recv(s, partner, result + in,
                          chunk_offset(s, count, pof2, theirs + mask) - in);
        ringx_xsched_also_send(s, partner, result + out,
                               chunk_offset(s, count, pof2, mine + mask) - out);
    }
    fold_out(s, g, result, bytes);
}

static int build_log(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_xsched_t *s = &c->sched.u.xs;
    const ringx_group_t all = { c->m->rank, c->m->size, NULL };

    c->sched.engine = RINGX_ENGINE_EXCHANGE;
    ringx_xsched_init(s, c->m, &c->mem, RINGX_COLL_ALLREDUCE, c->red, c->elem_size,
                      c->count * c->elem_size);
    s->msgs.mailboxes = c->blocking;
    if (alg == RINGX_ALG_RECURSIVE_DOUBLING) {
        ringx_allreduce_doubling(s, &all, c->input, c->result, s->total_bytes);
    } else {
        rabenseifner_steps(s, &all, c->input, c->result, c->count);
    }
    return OMPI_SUCCESS;
}

const ringx_alg_impl_t ringx_allreduce_algs[] = {
    { RINGX_ALG_RING, build_ring },
    { RINGX_ALG_RECURSIVE_DOUBLING, build_log },
    { RINGX_ALG_RABENSEIFNER, build_log },
    { RINGX_ALG_DIRECT_READ, ringx_direct_build },
    { RINGX_ALG_HIERARCHICAL, ringx_hier_build_allreduce },
    { RINGX_ALG_COUNT, NULL },
};


int mca_coll_ringx_allreduce(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_ringx_module_t *m = ringx_module_of(module, comm);
    ringx_call_t c;
    int rc, buffers;

    if (m == NULL) {
        return OMPI_ERR_NOT_FOUND;
    }
    if (ringx_handed_back(m, RINGX_COLL_ALLREDUCE)) {
        return ringx_handback_allreduce(sbuf, rbuf, count, dtype, op, comm, m);
    }
    buffers =
        ringx_call_prepare_reduction(&c, m, RINGX_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, 1);
    if (ringx_admit(m, comm, RINGX_COLL_ALLREDUCE, buffers, 1, &rc) != RINGX_SERVE) {
        return rc != OMPI_SUCCESS
                   ? rc
                   : RINGX_HAND_ON(m, RINGX_COLL_ALLREDUCE,
                                   m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                                     m->prev_allreduce_module));
    }
    return ringx_call_serve(&c);
}

static int hand_on(const ringx_request_args_t *a, mca_coll_ringx_module_t *m,
                   struct ompi_communicator_t *comm, int persistent, struct ompi_info_t *info,
                   ompi_request_t **request)
{
    return persistent ? m->prev_allreduce_init(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, comm,
                                               info, request, m->prev_allreduce_init_module)
                      : m->prev_iallreduce(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, comm,
                                           request, m->prev_iallreduce_module);
}

static int serve_request(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         struct ompi_info_t *info, ompi_request_t **request,
                         mca_coll_base_module_t *module, int persistent)
{
    mca_coll_ringx_module_t *m = ringx_module_of(module, comm);
    ringx_request_t *req = ringx_request_new(m, persistent);
    ringx_request_args_t args = { sbuf, rbuf, count, count, NULL, dtype, op, hand_on };
    int buffers = req == NULL ? RINGX_FALLBACK_MEMORY
                              : ringx_call_prepare_reduction(&req->call, m, RINGX_COLL_ALLREDUCE,
                                                             sbuf, rbuf, count, dtype, op, 0);

    return ringx_request_serve(m, comm, RINGX_COLL_ALLREDUCE, buffers, req, persistent, &args,
                               info, request);
}

int mca_coll_ringx_iallreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    return serve_request(sbuf, rbuf, count, dtype, op, comm, NULL, request, module, 0);
}

int mca_coll_ringx_allreduce_init(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    return serve_request(sbuf, rbuf, count, dtype, op, comm, info, request, module, 1);
}
