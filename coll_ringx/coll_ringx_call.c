/*
 * coll_ringx_call.c - one call of a collective that ringx serves, from its
 * choice of algorithm to its end: the one path that blocking and
 * nonblocking calls share (coll_ringx_request.c adds what only nonblocking
 * calls need).
 */
#include "coll_ringx.h"

#include <string.h>

void ringx_call_init(ringx_call_t *c, mca_coll_ringx_module_t *m, ringx_coll_t coll,
                     int blocking)
{
    c->m = m;
    c->coll = coll;
    c->blocking = blocking;
    memset(&c->mem, 0, sizeof(c->mem));
    c->input = NULL;
    c->result = NULL;
    c->in_place = 0;
    c->count = c->elem_size = 0;
    c->sched.engine = RINGX_ENGINE_NONE;
    c->sched.started = 0;
    c->sched.persistent = 0;
    c->sched.coll = coll;
    c->sched.ncopies = 0;
    c->sched.before.len = 0;
    c->sched.pack.dtype = c->sched.unpack.dtype = NULL;
}

/* A result whose datatype leaves gaps is gathered packed, in the call's
 * scratch (kept: a persistent call's starts allocate nothing), and an
 * input with gaps is packed into its own block there, or into the
 * result's, so that the call then runs in place. */
static int place_packed(ringx_call_t *c)
{
    ringx_sched_t *s = &c->sched;
    size_t block = c->count * c->elem_size;

    if (s->unpack.dtype != NULL) {
        ringx_scratch_set_t *set = ringx_mem_host_scratch(&c->mem, c->m);
        c->result = s->unpack.packed = ringx_scratch_get(&set->packed, ringx_call_bytes(c));
        if (c->result == NULL) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    if (s->pack.dtype != NULL) {
        s->pack.packed = c->result + (size_t)c->m->rank * block;
        s->pack.bytes = block;
        c->input = s->pack.packed;
    }
    return OMPI_SUCCESS;
}

int ringx_call_mem_start(ringx_call_t *c)
{
    int rc = ringx_mem_start(&c->mem, c->m, c->coll);
    return rc == OMPI_SUCCESS && ringx_call_bytes(c) > 0 ? place_packed(c) : rc;
}

int ringx_call_prepare_reduction(ringx_call_t *c, mca_coll_ringx_module_t *m, ringx_coll_t coll,
                                 const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 int blocking)
{
    int buffers;

    ringx_call_init(c, m, coll, blocking);
    buffers = ringx_classify_reduction(dtype, op, &c->red);
    if (buffers == RINGX_SERVE) {
        buffers = ringx_mem_classify(&c->mem, sbuf, rbuf, ringx_type_align(c->red.type));
    }
    c->in_place = sbuf == MPI_IN_PLACE;
    c->input = c->in_place ? rbuf : sbuf;
    c->result = rbuf;
    c->count = (size_t)count;
    c->elem_size = ringx_type_size(c->red.type);
    return buffers;
}

static const ringx_alg_impl_t *const algs_of[RINGX_COLL_COUNT] = {
    [RINGX_COLL_ALLREDUCE] = ringx_allreduce_algs,
    [RINGX_COLL_ALLGATHER] = ringx_allgather_algs,
    [RINGX_COLL_REDUCE_SCATTER_BLOCK] = ringx_reduce_scatter_block_algs,
};

static const ringx_alg_impl_t *impl_of(ringx_coll_t coll, ringx_alg_t alg)
{
    for (const ringx_alg_impl_t *a = algs_of[coll]; a->alg != RINGX_ALG_COUNT; a++) {
        if (a->alg == alg && a->build != NULL) {
            return a;
        }
    }
    return NULL;
}

int ringx_algs_complete(void)
{
    int complete = 1;
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        for (int alg = RINGX_ALG_AUTO + 1; alg < RINGX_ALG_COUNT; alg++) {
            if (ringx_alg_valid((ringx_coll_t)coll, (ringx_alg_t)alg) &&
                impl_of((ringx_coll_t)coll, (ringx_alg_t)alg) == NULL) {
                opal_output(0, "coll:ringx: %s has no implementation of %s",
                            ringx_coll_name((ringx_coll_t)coll), ringx_alg_name((ringx_alg_t)alg));
                complete = 0;
            }
        }
    }
    return complete;
}

size_t ringx_call_bytes(const ringx_call_t *c)
{
    size_t bytes = c->count * c->elem_size;
    return c->coll == RINGX_COLL_ALLREDUCE ? bytes : bytes * (size_t)c->m->size;
}

/* direct_ok: direct reads may serve the call, where the ranks share a node */
static ringx_decision_t decision(const ringx_call_t *c, int direct_ok)
{
    return ringx_decide(c->coll, mca_coll_ringx_component.algorithm[c->coll], ringx_call_bytes(c),
                        c->m->size, ringx_layout_of(c->m, direct_ok));
}

static void record_choice(const ringx_call_t *c, ringx_decision_t d)
{
    ringx_count(&mca_coll_ringx_counters.calls[c->coll][d.alg], 1);
    int packed = c->sched.pack.dtype != NULL || c->sched.unpack.dtype != NULL;

    RINGX_LOG(2, "%s%s%s: %s, %zu bytes%s, %d ranks, comm id %u (%s)", c->blocking ? "" : "i",
              ringx_coll_name(c->coll), c->sched.persistent ? "_init" : "", ringx_alg_name(d.alg),
              ringx_call_bytes(c), packed ? " (datatypes with gaps: packed)" : "", c->m->size,
              (unsigned)c->m->comm_id, d.why);
}

/* Runs alg's schedule to the end. */
static int run_alg(ringx_call_t *c, ringx_alg_t alg)
{
    int rc = impl_of(c->coll, alg)->build(c, alg);

    c->sched.seq = c->m->seq++;
    return rc == OMPI_SUCCESS ? ringx_sched_run(&c->sched, &c->mem) : rc;
}

static const char declined_why[] = "direct reads declined (some rank's buffers are on a device, "
                                   "staged or unreadable)";

/* A declined call is counted only under the algorithm that then serves it. */
static int choose_and_run(ringx_call_t *c)
{
    ringx_decision_t d = decision(c, 1);
    int rc = RINGX_DIRECT_DECLINED;

    if (ringx_call_bytes(c) == 0) {
        /* (zero-size datatypes) Nothing moves, so no call number is taken:
         * the mailboxes need every numbered call to wait for every rank. */
        record_choice(c, d);
        return OMPI_SUCCESS;
    }
    if (d.alg == RINGX_ALG_DIRECT_READ && (rc = run_alg(c, d.alg)) == RINGX_DIRECT_DECLINED) {
        d = decision(c, 0);
        d.why = declined_why;
    }
    record_choice(c, d);
    return rc == RINGX_DIRECT_DECLINED ? run_alg(c, d.alg) : rc;
}

int ringx_call_serve(ringx_call_t *c)
{
    int rc = ringx_call_mem_start(c);

    if (rc == OMPI_SUCCESS) {
        ringx_mem_count(&c->mem, c->coll);
        rc = choose_and_run(c);
    }
    ringx_mailbox_calls_over(c->m);
    rc = ringx_mem_finish(&c->mem, rc);
    ringx_mem_leave(&c->mem);
    return rc;
}

/* Nonblocking and persistent calls may still be under way when later
 * calls start, so they use neither the mailboxes nor the blocking calls'
 * outboxes (ringx_call_t.blocking).  On one node, those that blocking
 * calls of their size pass through outboxes take the posted outboxes
 * (coll_ringx_osched.c, in pieces beyond one), and those large enough to
 * read the peers' buffers read them: direct reads, a schedule of their
 * own; the others (none with the default outboxes) choose as across nodes.
 * Without outboxes to compare with, reading the buffers pays from 32 KiB
 * (or coll_ringx_direct_buffer_bytes if smaller): against libnbc at np 2,
 * 32-128 KiB, allgather 2.2-2.8x where recursive doubling gave 1.8-2.5x,
 * allreduce 1.6-1.7x against Rabenseifner's 1.4-1.5x, reduce_scatter_block
 * 2.9-3.4x against recursive halving's 2.3-2.9x; at np 4 (2 ranks a core)
 * 1.1-1.9x against 0.8-1.6x; below 16 KiB the message-based algorithms
 * were ahead. */
#define RINGX_NONBLOCKING_BUFFERS_BYTES (32 * 1024)

static int nonblocking_from_buffers(const ringx_call_t *c)
{
    size_t bytes = ringx_call_bytes(c);
    return ringx_direct_from_buffers(c->m, c->coll, bytes, 0) ||
           (c->m->mailbox.buffers_from[0][c->coll] > 0 && bytes >= RINGX_NONBLOCKING_BUFFERS_BYTES);
}

/* Through the outboxes, unless its size reads the peers' buffers. */
static int through_outboxes(const ringx_call_t *c)
{
    return ringx_osched_fits(c) &&
           !ringx_direct_from_buffers(c->m, c->coll, ringx_call_bytes(c), c->blocking);
}

static int build(ringx_call_t *c, int direct)
{
    const ringx_alg_impl_t *impl;

    c->choice = decision(c, direct);
    impl = impl_of(c->coll, c->choice.alg);
    if (ringx_call_bytes(c) == 0) {
        return OMPI_SUCCESS;        /* nothing to do: an empty schedule */
    }
    return impl != NULL && impl->build != NULL ? impl->build(c, c->choice.alg)
                                               : OMPI_ERR_NOT_SUPPORTED;
}

int ringx_direct_build(ringx_call_t *c, ringx_alg_t alg)
{
    return through_outboxes(c) ? ringx_osched_build(c) : ringx_dsched_build(c, alg);
}

int ringx_call_build(ringx_call_t *c)
{
    return build(c, ringx_direct_possible(c->m) &&
                        (through_outboxes(c) || nonblocking_from_buffers(c)));
}

int ringx_call_build_declined(ringx_call_t *c)
{
    int rc = build(c, 0);
    c->choice.why = declined_why;
    return rc;
}

void ringx_call_count(const ringx_call_t *c)
{
    record_choice(c, c->choice);
}
