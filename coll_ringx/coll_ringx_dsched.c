/*
 * coll_ringx_dsched.c - the three collectives as direct reads out of the
 * peers' buffers (ranks on one node), as a resumable schedule: blocking
 * calls run it to the end, nonblocking ones leave it to Open MPI's
 * progress engine.
 *
 *   allgather             each rank reads every peer's block into place;
 *   reduce_scatter_block  each rank reads its block of every peer's input
 *                         and reduces it, a segment at a time;
 *   allreduce             each rank reduces its 1/p share from every
 *                         peer's input into its own result buffer, signals
 *                         it, and reads every other share out of its
 *                         owner's result buffer.
 *
 * A call waits for the other ranks only where the data says so: for their
 * records (their buffers exposed), for allreduce's shares, and at the end
 * until every peer has read this rank's buffers.  Those waits are phases
 * that the progress function polls.  In place, a rank writes only its own
 * share of its buffer (allreduce) until every peer has signalled its share,
 * i.e. finished reading; reduce_scatter_block's result is made aside
 * (rbuf's first block is input that rank 0 reads) and copied in last.
 */
#include "coll_ringx.h"

enum {
    P_TURN,                     /* an earlier direct call still ends here */
    P_RECORDS,                  /* waiting for the peers' records */
    P_SHARES,                   /* allreduce: the peers' shares, as they come */
    P_DRAIN,                    /* waiting until every peer has read this rank's buffers */
    P_DONE
};

int ringx_dsched_build(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_dsched_t *s = &c->sched.u.ds;

    c->sched.engine = RINGX_ENGINE_DIRECT;
    *s = (ringx_dsched_t){
        .module = c->m,
        .mem = &c->mem,
        .coll = c->coll,
        .red = c->red,
        .input = c->input,
        .result = c->result,
        .in_place = c->in_place,
        .persistent = c->sched.persistent,
        .count = c->count,
        .elem_size = c->elem_size,
    };
    (void)alg;
    return OMPI_SUCCESS;
}

/* The bytes of the input that the peers read. */
static size_t exposed_bytes(const ringx_dsched_t *s)
{
    size_t bytes = s->count * s->elem_size;
    return s->coll == RINGX_COLL_REDUCE_SCATTER_BLOCK ? bytes * (size_t)s->module->size : bytes;
}

static void publish(ringx_dsched_t *s)
{
    size_t bytes = exposed_bytes(s);
    int allreduce = s->coll == RINGX_COLL_ALLREDUCE;

    ringx_direct_publish(&s->d, s->input, bytes, allreduce ? s->result : NULL,
                         allreduce ? bytes : 0);
}

/* Scratch: one segment, and reduce_scatter_block's result in place. */
static int get_scratch(ringx_dsched_t *s, size_t acc_bytes)
{
    char *scratch;

    s->seg = ringx_segment_elems(mca_coll_ringx_component.segment_size, s->elem_size) *
             s->elem_size;
    scratch = ringx_mem_scratch(s->mem, RINGX_SCRATCH_BLOCKS, acc_bytes + s->seg + 1);
    s->acc = scratch;
    s->segment = scratch == NULL ? NULL : scratch + acc_bytes;
    return scratch == NULL ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

/* A persistent call's registrations and scratch, once (the first start
 * publishes with them). */
int ringx_dsched_prepare(ringx_dsched_t *s)
{
    int rsb_in_place = s->coll == RINGX_COLL_REDUCE_SCATTER_BLOCK && s->in_place;

    ringx_direct_prepare(&s->d, s->module, s->mem, s->persistent);
    return s->d.rkeys == NULL ? OMPI_ERR_OUT_OF_RESOURCE
                              : get_scratch(s, rsb_in_place ? s->count * s->elem_size : 0);
}

int ringx_dsched_start(ringx_dsched_t *s)
{
    s->phase = P_TURN;
    s->rc = OMPI_SUCCESS;
    s->declined = 0;
    s->gathered = 0;
    if (!s->persistent) {
        ringx_direct_prepare(&s->d, s->module, s->mem, 0);
    }
    ringx_direct_begin(&s->d);
    return OMPI_SUCCESS;
}

void ringx_dsched_release(ringx_dsched_t *s)
{
    ringx_direct_release(&s->d);
}

static int allgather_reads(ringx_dsched_t *s)
{
    mca_coll_ringx_module_t *m = s->module;
    size_t block = s->count * s->elem_size;
    int rc = OMPI_SUCCESS;

    /* Starting at the next rank spreads the readers over the buffers. */
    for (int k = 1; k < m->size && rc == OMPI_SUCCESS; k++) {
        int rank = (m->rank + k) % m->size;
        rc = ringx_direct_read(&s->d, rank, s->result + (size_t)rank * block, 0, block);
        if (rc == OMPI_SUCCESS) {
            rc = ringx_direct_wait(&s->d, rank);
        }
    }
    s->bytes_sent += block * (size_t)(m->size - 1);
    return rc;
}

static int rsb_reads(ringx_dsched_t *s)
{
    mca_coll_ringx_module_t *m = s->module;
    size_t block = s->count * s->elem_size, mine = (size_t)m->rank * block;
    int rc = get_scratch(s, s->in_place ? block : 0);

    if (rc == OMPI_SUCCESS) {
        rc = ringx_direct_read_reduce(&s->d, mine, s->input + mine,
                                      s->in_place ? s->acc : s->result, s->segment, s->seg,
                                      block, s->red);
    }
    s->bytes_sent += block * (size_t)(m->size - 1);
    return rc;
}

static size_t share_offset(const ringx_dsched_t *s, int rank)
{
    return ringx_block_offset(s->count, s->module->size, rank) * s->elem_size;
}

static size_t share_bytes(const ringx_dsched_t *s, int rank)
{
    return ringx_block_count(s->count, s->module->size, rank) * s->elem_size;
}

/* Signalled even after an error (rc): the peers wait for it. */
static int allreduce_own_share(ringx_dsched_t *s, int rc)
{
    int rank = s->module->rank;
    size_t off = share_offset(s, rank);

    rc = rc == OMPI_SUCCESS ? get_scratch(s, 0) : rc;
    if (rc == OMPI_SUCCESS) {
        rc = ringx_direct_read_reduce(&s->d, off, s->input + off, s->result + off, s->segment,
                                      s->seg, share_bytes(s, rank), s->red);
    }
    ringx_direct_signal(&s->d, rc);
    /* what the peers take from this rank: a share of its input and of its result */
    s->bytes_sent += share_bytes(s, rank) * (size_t)(s->module->size - 1) * 2;
    return rc;
}

/* The peers' shares whose signals are in, in rank order from the next;
 * 1 once all are read. */
static int allreduce_gather(ringx_dsched_t *s)
{
    mca_coll_ringx_module_t *m = s->module;

    while (s->gathered < m->size - 1 && s->rc == OMPI_SUCCESS) {
        int owner = (m->rank + 1 + s->gathered) % m->size;
        int in = ringx_direct_signal_in(&s->d, owner);
        if (in == 0) {
            return 0;
        }
        s->rc = in < 0 ? in
                       : ringx_direct_read_second(&s->d, owner, s->result + share_offset(s, owner),
                                                  share_offset(s, owner), share_bytes(s, owner));
        if (s->rc == OMPI_SUCCESS) {
            s->rc = ringx_direct_wait(&s->d, owner);
        }
        s->gathered++;
    }
    return 1;
}

static void finish_reads(ringx_dsched_t *s)
{
    s->rc = ringx_direct_finish_reads(&s->d, s->rc);
    s->phase = P_DRAIN;
}

/* Once every record is in: the reads this rank does before it may end
 * (allreduce: its own share; the others' come as they are signalled). */
static void open_and_read(ringx_dsched_t *s)
{
    int opened = ringx_direct_open(&s->d);

    if (opened == RINGX_DIRECT_DECLINED) {
        s->declined = 1;            /* over once the peers have seen the records */
        finish_reads(s);
        return;
    }
    s->rc = s->rc == OMPI_SUCCESS ? opened : s->rc;
    if (s->coll == RINGX_COLL_ALLREDUCE) {
        s->rc = allreduce_own_share(s, s->rc);
        s->phase = P_SHARES;
        return;
    }
    if (s->rc == OMPI_SUCCESS) {
        s->rc = s->coll == RINGX_COLL_ALLGATHER ? allgather_reads(s) : rsb_reads(s);
    }
    finish_reads(s);
}

/* allgather: this rank's own block into place, while the peers expose
 * theirs (harmless if the call declines: the choice without direct reads
 * writes the result again). */
static int copy_own_block(ringx_dsched_t *s)
{
    size_t block = s->count * s->elem_size;
    char *own = s->result + (size_t)s->module->rank * block;
    return s->coll != RINGX_COLL_ALLGATHER || s->input == own
               ? OMPI_SUCCESS
               : ringx_mem_copy(s->mem, own, s->input, block);
}

/* The end, once every peer has read this rank's buffers (or, declined,
 * seen its record). */
static int end(ringx_dsched_t *s)
{
    size_t block = s->count * s->elem_size;
    int rc = s->rc;

    ringx_direct_end(&s->d);
    s->phase = P_DONE;
    if (s->declined) {
        return RINGX_DIRECT_DECLINED;
    }
    if (rc == OMPI_SUCCESS && s->coll == RINGX_COLL_REDUCE_SCATTER_BLOCK && s->in_place) {
        rc = ringx_mem_copy(s->mem, s->result, s->acc, block);
    }
    if (rc == OMPI_SUCCESS) {
        ringx_count(&mca_coll_ringx_counters.buffer_reads[s->coll], 1);
    }
    return rc == OMPI_SUCCESS ? RINGX_DONE : rc;
}

int ringx_dsched_progress(ringx_dsched_t *s)
{
    if (s->phase == P_TURN) {
        if (!ringx_direct_my_turn(&s->d)) {
            return RINGX_PENDING;
        }
        publish(s);
        s->rc = copy_own_block(s);
        s->phase = P_RECORDS;
    }
    if (s->phase == P_RECORDS) {
        if (!ringx_direct_records_in(&s->d)) {
            return RINGX_PENDING;
        }
        open_and_read(s);
    }
    if (s->phase == P_SHARES) {
        if (!allreduce_gather(s)) {
            return RINGX_PENDING;
        }
        finish_reads(s);
    }
    if (s->phase == P_DRAIN) {
        return ringx_direct_drained(&s->d) ? end(s) : RINGX_PENDING;
    }
    return RINGX_DONE;
}
