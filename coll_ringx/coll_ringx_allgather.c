/*
 * coll_ringx_allgather.c - MPI_Allgather.
 *
 * Ring: p-1 steps; at each a rank passes to its right neighbour the block
 * it received from its left one, straight from and into the result buffer.
 *
 * Recursive doubling (powers of two): log2(p) exchanges of the blocks
 * gathered so far, straight into place.
 *
 * Bruck (any rank count): log2(p) steps gathering the blocks of ranks
 * rank, rank+1, .. in a scratch buffer, rotated into place at the end.
 *
 * Neighbour exchange (even rank counts): p/2 steps, each swapping a pair
 * of blocks with one neighbour or the other, straight into place.
 *
 * Direct reads (ranks on one node): each rank copies its block, a piece at
 * a time, into its outbox and every peer copies it from there
 * (coll_ringx_osched.c); one synchronisation per piece.  For large calls
 * (ringx_direct_from_buffers) and without outboxes (coll_ringx_mailbox_bytes
 * 0), each rank reads every other rank's block straight out of its buffer
 * (coll_ringx_direct.c).  On a quiet development machine the outboxes were
 * faster for large allgathers (1.1-1.7x the stock collective where the
 * buffers gave 0.9-1.2x); with busy cores the outboxes fell to 0.05-0.1x
 * and the buffers held 1.0-2.0x (README, "One node under load").
 */
#include "coll_ringx.h"

#include "ompi/datatype/ompi_datatype.h"

static const char *allgather_send_block(const ringx_ring_t *ring, int step, int block)
{
    const ringx_ring_bufs_t *b = ring->ctx;
    return step == 0 ? b->input : b->result + ringx_block_bytes_offset(ring, block);
}

static void allgather_recv_block(const ringx_ring_t *ring, int step, int block,
                                 ringx_ring_recv_target_t *target)
{
    const ringx_ring_bufs_t *b = ring->ctx;
    target->direct = b->result + ringx_block_bytes_offset(ring, block);
}

/* The own block goes into place first: the ring sends it from the input. */
static int build_ring(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_sched_t *s = &c->sched;
    mca_coll_ringx_module_t *m = c->m;
    size_t block_bytes = c->count * c->elem_size;

    (void)alg;
    s->engine = RINGX_ENGINE_RING;
    s->bufs = (ringx_ring_bufs_t){ c->input, c->result, { NULL, NULL } };
    s->u.ring = (ringx_ring_t){
        .module = m,
        .mem = &c->mem,
        .nsteps = m->size - 1,
        .reduce_steps = 0,
        .shift = 0,
        .count = c->count * (size_t)m->size,
        .elem_size = c->elem_size,
        .ctx = &s->bufs,
        .send_block = allgather_send_block,
        .recv_block = allgather_recv_block,
    };
    ringx_sched_copy_before(s, c->result + (size_t)m->rank * block_bytes, c->input,
                            block_bytes);
    return OMPI_SUCCESS;
}

/*
 * The first step of each log(p) allgather sends only this rank's own block:
 * it goes from the caller's send buffer, as in the ring, not from the copy
 * just made in the result.  Measured at np 2 (32 KiB - 1 MiB), sending the
 * fresh copy took twice as long.
 */
static void recursive_doubling_steps(ringx_xsched_t *s, const char *own, char *result,
                                     size_t block_bytes)
{
    int rank = s->module->rank;
    for (int mask = 1; mask < s->module->size; mask <<= 1) {
        int partner = rank ^ mask;
        size_t mine = (size_t)ringx_doubling_window(rank, mask) * block_bytes;
        size_t theirs = (size_t)ringx_doubling_window(partner, mask) * block_bytes;
        ringx_xsched_recv(s, partner, result + theirs, (size_t)mask * block_bytes);
        ringx_xsched_also_send(s, partner, mask == 1 ? own : result + mine,
                               (size_t)mask * block_bytes);
    }
}

static void bruck_steps(ringx_xsched_t *s, const char *own, char *gathered, size_t block_bytes)
{
    int rank = s->module->rank, p = s->module->size;
    for (int d = 1; d < p; d *= 2) {
        size_t bytes = (size_t)ringx_bruck_count(p, d) * block_bytes;
        ringx_xsched_recv(s, (rank + d) % p, gathered + (size_t)d * block_bytes, bytes);
        ringx_xsched_also_send(s, (rank - d + p) % p, d == 1 ? own : gathered, bytes);
    }
}

_Static_assert(RINGX_NEIGHBOR_EXCHANGE_MAX_RANKS / 2 <= RINGX_XSCHED_INLINE_STEPS,
              "neighbour exchange fits the step list");

static void neighbor_exchange_steps(ringx_xsched_t *s, const char *own, char *result,
                                    size_t block_bytes)
{
    int rank = s->module->rank, p = s->module->size;
    int partner = ringx_neighbor_partner(rank, p, 0);
    size_t pair_bytes = 2 * block_bytes;

    ringx_xsched_recv(s, partner, result + (size_t)partner * block_bytes, block_bytes);
    ringx_xsched_also_send(s, partner, own, block_bytes);
    for (int step = 1; step < p / 2; step++) {
        partner = ringx_neighbor_partner(rank, p, step);
        ringx_xsched_recv(s, partner,
                          result + (size_t)ringx_neighbor_recv_pair(rank, p, step) * pair_bytes,
                          pair_bytes);
        ringx_xsched_also_send(s, partner,
                               result + (size_t)ringx_neighbor_send_pair(rank, p, step) * pair_bytes,
                               pair_bytes);
    }
}

static int build_log(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_xsched_t *s = &c->sched.u.xs;
    mca_coll_ringx_module_t *m = c->m;
    size_t block_bytes = c->count * c->elem_size, total = block_bytes * (size_t)m->size;
    char *own_block = c->result + (size_t)m->rank * block_bytes;
    /* Bruck gathers rank, rank+1, .. from the start of a scratch buffer. */
    char *gathered = alg == RINGX_ALG_BRUCK
                         ? ringx_mem_scratch(&c->mem, RINGX_SCRATCH_BLOCKS, total + 1)
                         : c->result;

    if (gathered == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    c->sched.engine = RINGX_ENGINE_EXCHANGE;
    ringx_xsched_init(s, m, &c->mem, RINGX_COLL_ALLGATHER, RINGX_NO_REDUCTION, c->elem_size, total);
    s->msgs.mailboxes = c->blocking;
    /* Step 0 sends from the send buffer and receives elsewhere, so the own
     * block is copied into place while step 0 travels. */
    if (alg == RINGX_ALG_BRUCK) {
        size_t head = total - (size_t)m->rank * block_bytes;
        ringx_xsched_local_copy(s, gathered, c->input, block_bytes);
        bruck_steps(s, c->input, gathered, block_bytes);
        /* the rotation into place */
        ringx_sched_copy_after(&c->sched, own_block, gathered, head);
        ringx_sched_copy_after(&c->sched, c->result, gathered + head, total - head);
    } else {
        ringx_xsched_local_copy(s, own_block, c->input, block_bytes);
        if (alg == RINGX_ALG_NEIGHBOR_EXCHANGE) {
            neighbor_exchange_steps(s, c->input, c->result, block_bytes);
        } else {
            recursive_doubling_steps(s, c->input, c->result, block_bytes);
        }
    }
    return OMPI_SUCCESS;
}

const ringx_alg_impl_t ringx_allgather_algs[] = {
    { RINGX_ALG_RING, build_ring },
    { RINGX_ALG_RECURSIVE_DOUBLING, build_log },
    { RINGX_ALG_BRUCK, build_log },
    { RINGX_ALG_NEIGHBOR_EXCHANGE, build_log },
    { RINGX_ALG_DIRECT_READ, ringx_direct_build },
    { RINGX_ALG_HIERARCHICAL, ringx_hier_build_allgather },
    { RINGX_ALG_COUNT, NULL },
};

/* The conversions of sides whose datatypes leave gaps: the result is
 * gathered packed and unpacked at the end; an input with gaps (or, in
 * place, the own block of such a result) is packed into its block of the
 * result, and the call runs in place (ringx_call_mem_start places them). */
static void plan_packing(ringx_call_t *c, const void *sbuf, int scount,
                         struct ompi_datatype_t *sdtype, int s_plain, void *rbuf, int rcount,
                         struct ompi_datatype_t *rdtype, int r_plain)
{
    ptrdiff_t lb, extent;

    if (!r_plain) {
        c->sched.unpack = (ringx_convert_t){ rbuf, (size_t)rcount * (size_t)c->m->size, rdtype,
                                             NULL, ringx_call_bytes(c) };
    }
    if (!s_plain) {
        c->sched.pack = (ringx_convert_t){ (void *)(uintptr_t)sbuf, (size_t)scount, sdtype, NULL,
                                           0 };
    } else if (!r_plain && c->in_place) {
        ompi_datatype_get_extent(rdtype, &lb, &extent);
        c->sched.pack = (ringx_convert_t){
            (char *)rbuf + (ptrdiff_t)c->m->rank * rcount * extent, (size_t)rcount, rdtype, NULL, 0
        };
    }
    c->in_place |= !s_plain;
}

/*
 * Classifies the call and fills c; RINGX_SERVE or the fallback reason.
 * Allgather moves bytes: a rank's block is its rcount elements' bytes,
 * whichever datatypes describe them (MPI lets ranks differ where the type
 * signatures match), so that every rank chooses and cuts blocks alike.
 */
static int prepare(ringx_call_t *c, const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                   void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                   mca_coll_ringx_module_t *m, int blocking)
{
    ptrdiff_t s_lb = 0, r_lb;
    int r_plain = ringx_datatype_plain(rdtype, rcount, &r_lb);
    int s_plain = sbuf == MPI_IN_PLACE || ringx_datatype_plain(sdtype, scount, &s_lb);
    int buffers;
    size_t type_size;

    ringx_call_init(c, m, RINGX_COLL_ALLGATHER, blocking);
    ompi_datatype_type_size(rdtype, &type_size);
    c->count = (size_t)rcount * type_size;
    c->elem_size = 1;
    c->in_place = sbuf == MPI_IN_PLACE;
    buffers = ringx_mem_classify(&c->mem, sbuf, rbuf, 1);
    if (buffers == RINGX_SERVE && !(r_plain && s_plain) && ringx_memtype_on_device(c->mem.type)) {
        RINGX_LOG(1, "allgather: device buffers whose datatype leaves gaps: not served");
        buffers = RINGX_FALLBACK_DATATYPE;
    }
    if (c->count > 0 && buffers == RINGX_SERVE) {
        plan_packing(c, sbuf, scount, sdtype, s_plain, rbuf, rcount, rdtype, r_plain);
    }
    c->result = (char *)rbuf + r_lb;
    c->input = c->in_place ? c->result + (size_t)m->rank * c->count
                           : (const char *)sbuf + s_lb;
    return buffers;
}

int mca_coll_ringx_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_ringx_module_t *m = ringx_module_of(module, comm);
    ringx_call_t c;
    int rc, buffers;

    if (m == NULL) {
        return OMPI_ERR_NOT_FOUND;
    }
    if (ringx_handed_back(m, RINGX_COLL_ALLGATHER)) {
        return ringx_handback_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m);
    }
    buffers = prepare(&c, sbuf, scount, sdtype, rbuf, rcount, rdtype, m, 1);
    if (ringx_admit(m, comm, RINGX_COLL_ALLGATHER, buffers, 1, &rc) != RINGX_SERVE) {
        return rc != OMPI_SUCCESS
                   ? rc
                   : RINGX_HAND_ON(m, RINGX_COLL_ALLGATHER,
                                   m->prev_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                                     comm, m->prev_allgather_module));
    }
    return ringx_call_serve(&c);
}

static int hand_on(const ringx_request_args_t *a, mca_coll_ringx_module_t *m,
                   struct ompi_communicator_t *comm, int persistent, struct ompi_info_t *info,
                   ompi_request_t **request)
{
    return persistent ? m->prev_allgather_init(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                               a->rdtype, comm, info, request,
                                               m->prev_allgather_init_module)
                      : m->prev_iallgather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                           a->rdtype, comm, request, m->prev_iallgather_module);
}

static int serve_request(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                         void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, struct ompi_info_t *info,
                         ompi_request_t **request, mca_coll_base_module_t *module,
                         int persistent)
{
    mca_coll_ringx_module_t *m = ringx_module_of(module, comm);
    ringx_request_t *req = ringx_request_new(m, persistent);
    ringx_request_args_t args = { sbuf, rbuf, scount, rcount, sdtype, rdtype, NULL, hand_on };
    int buffers = req == NULL ? RINGX_FALLBACK_MEMORY
                              : prepare(&req->call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                        m, 0);

    return ringx_request_serve(m, comm, RINGX_COLL_ALLGATHER, buffers, req, persistent, &args,
                               info, request);
}

int mca_coll_ringx_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    return serve_request(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, NULL, request, module,
                         0);
}

int mca_coll_ringx_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    return serve_request(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request, module,
                         1);
}
