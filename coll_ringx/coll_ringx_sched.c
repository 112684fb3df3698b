/*
 * coll_ringx_sched.c - a call's schedule: its engine, then the copies the
 * collective owes, advanced by ringx_sched_progress (coll_ringx_sched.h).
 */
#include "coll_ringx.h"
#include "coll_ringx_bell.h"

void ringx_sched_copy_after(ringx_sched_t *s, char *dst, const char *src, size_t len)
{
    if (s->ncopies < RINGX_SCHED_MAX_COPIES) {
        s->copies[s->ncopies++] = (ringx_copy_t){ dst, src, len };
    }
}

void ringx_sched_copy_before(ringx_sched_t *s, char *dst, const char *src, size_t len)
{
    s->before = (ringx_copy_t){ dst, src, len };
}

static ringx_mem_t *mem_of(ringx_sched_t *s)
{
    return s->engine == RINGX_ENGINE_RING     ? s->u.ring.mem
           : s->engine == RINGX_ENGINE_DIRECT ? s->u.ds.mem
           : s->engine == RINGX_ENGINE_OUTBOX ? &s->u.os.call->mem
                                              : s->u.xs.mem;
}

int ringx_sched_prepare(ringx_sched_t *s)
{
    switch (s->engine) {
    case RINGX_ENGINE_RING:
        return ringx_ring_prepare(&s->u.ring);
    case RINGX_ENGINE_EXCHANGE:
        return ringx_xsched_prepare(&s->u.xs);
    case RINGX_ENGINE_DIRECT:
        return s->persistent ? ringx_dsched_prepare(&s->u.ds) : OMPI_SUCCESS;
    default:
        return OMPI_SUCCESS;
    }
}

/* The input whose datatype leaves gaps, packed into place. */
static int pack(const ringx_convert_t *p)
{
    return p->dtype == NULL ? OMPI_SUCCESS
                            : ringx_datatype_pack(p->packed, p->bytes, p->user, p->count, p->dtype);
}

/* The packed result, out into the caller's buffer. */
static int unpack(const ringx_sched_t *s)
{
    const ringx_convert_t *u = &s->unpack;

    if (s->pack.dtype != NULL || u->dtype != NULL) {
        ringx_count(&mca_coll_ringx_counters.packed[s->coll], 1);
    }
    return u->dtype == NULL ? RINGX_DONE
           : ringx_datatype_unpack(u->user, u->count, u->dtype, u->packed, u->bytes) ==
                   OMPI_SUCCESS ? RINGX_DONE : OMPI_ERROR;
}

int ringx_sched_start(ringx_sched_t *s)
{
    int rc = pack(&s->pack);

    if (rc == OMPI_SUCCESS && s->before.len) {
        rc = ringx_mem_copy(mem_of(s), s->before.dst, s->before.src, s->before.len);
    }

    s->started = 1;
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    switch (s->engine) {
    case RINGX_ENGINE_RING:
        return ringx_ring_start(&s->u.ring, s->seq);
    case RINGX_ENGINE_EXCHANGE:
        return ringx_xsched_start(&s->u.xs, s->seq);
    case RINGX_ENGINE_DIRECT:
        return ringx_dsched_start(&s->u.ds);
    case RINGX_ENGINE_OUTBOX:
        return ringx_osched_start(&s->u.os);
    default:
        return OMPI_SUCCESS;
    }
}

static int copies(ringx_sched_t *s, ringx_mem_t *mem)
{
    int rc = OMPI_SUCCESS;
    for (int i = 0; rc == OMPI_SUCCESS && i < s->ncopies; i++) {
        rc = ringx_mem_copy(mem, s->copies[i].dst, s->copies[i].src, s->copies[i].len);
    }
    return rc == OMPI_SUCCESS ? RINGX_DONE : rc;
}

/* Messages of a finished walk or exchange may still sit inside UCX where
 * no mailbox carried them (TCP between nodes, or UCX without shared
 * memory): ringx_ucx_flush_behind. */
static void leave_nothing_behind(const ringx_sched_t *s)
{
    const mca_coll_ringx_module_t *m = s->engine == RINGX_ENGINE_RING ? s->u.ring.module
                                                                      : s->u.xs.module;
    if (!ringx_direct_possible(m)) {
        ringx_requests_flush_behind();
    }
}

int ringx_sched_progress(ringx_sched_t *s)
{
    int rc = RINGX_DONE;

    switch (s->engine) {
    case RINGX_ENGINE_RING:
        rc = ringx_ring_progress(&s->u.ring);
        break;
    case RINGX_ENGINE_EXCHANGE:
        rc = ringx_xsched_progress(&s->u.xs);
        break;
    case RINGX_ENGINE_DIRECT:
        rc = ringx_dsched_progress(&s->u.ds);
        break;
    case RINGX_ENGINE_OUTBOX:
        rc = ringx_osched_progress(&s->u.os);
        break;
    default:
        break;
    }
    if (rc == RINGX_DONE && (s->engine == RINGX_ENGINE_RING || s->engine == RINGX_ENGINE_EXCHANGE)) {
        leave_nothing_behind(s);
    }
    if (rc == RINGX_DONE && s->engine != RINGX_ENGINE_NONE) {
        rc = copies(s, mem_of(s));
    }
    return rc == RINGX_DONE ? unpack(s) : rc;
}

void ringx_sched_abandon(ringx_sched_t *s)
{
    if (s->engine == RINGX_ENGINE_RING) {
        ringx_ring_abandon(&s->u.ring);
    } else if (s->engine == RINGX_ENGINE_EXCHANGE) {
        ringx_xsched_abandon(&s->u.xs);
    }
}

void ringx_sched_release(ringx_sched_t *s)
{
    if (s->engine == RINGX_ENGINE_RING) {
        ringx_ring_release(&s->u.ring);
    } else if (s->engine == RINGX_ENGINE_EXCHANGE) {
        ringx_xsched_release(&s->u.xs);
    } else if (s->engine == RINGX_ENGINE_DIRECT) {
        ringx_dsched_release(&s->u.ds);
    }
}

void ringx_sched_cleanup(ringx_sched_t *s)
{
    size_t *sent = s->engine == RINGX_ENGINE_RING       ? &s->u.ring.msgs.bytes_sent
                   : s->engine == RINGX_ENGINE_EXCHANGE ? &s->u.xs.msgs.bytes_sent
                   : s->engine == RINGX_ENGINE_DIRECT   ? &s->u.ds.bytes_sent
                   : s->engine == RINGX_ENGINE_OUTBOX   ? &s->u.os.bytes_sent
                                                        : NULL;

    if (!s->started) {
        return;
    }
    if (sent != NULL) {
        ringx_count(&mca_coll_ringx_counters.bytes_sent[s->coll], *sent);
        *sent = 0;
    }
    if (!s->persistent) {
        ringx_sched_release(s);
    }
    s->started = 0;
}

/* Whether the call's waits may sleep on the bell: the peers of the direct
 * reads and the outboxes are all on this node and ring when they store
 * what this rank waits for; reads through UCP gets need the peers awake
 * (UCX 1.13 answers them in the peer's progress), single copies do not. */
int ringx_sched_may_sleep(const ringx_sched_t *s)
{
    return s->engine == RINGX_ENGINE_OUTBOX ||
           (s->engine == RINGX_ENGINE_DIRECT && s->u.ds.module->mailbox.single_copy);
}

int ringx_sched_run(ringx_sched_t *s, ringx_mem_t *mem)
{
    unsigned idle = 0;
    int rc = ringx_sched_start(s);

    ringx_bell_wait_begins(ringx_sched_may_sleep(s));
    while (rc == OMPI_SUCCESS && (rc = ringx_sched_progress(s)) == RINGX_PENDING) {
        ringx_mem_progress(mem, &idle);
        rc = OMPI_SUCCESS;
    }
    ringx_bell_wait_ends();
    if (rc != RINGX_DONE) {
        ringx_sched_abandon(s);
    }
    ringx_sched_cleanup(s);
    return rc == RINGX_DONE ? OMPI_SUCCESS : rc;
}
