/*
 * coll_ringx_exchange.c - runs a schedule of exchange steps: the engine of
 * the log(p) algorithms (recursive doubling and halving, Bruck, the folds
 * for rank counts that are not powers of two).
 *
 * A step sends one buffer to one peer and receives one buffer from one
 * peer, straight into place or reduced into it.  Steps run in order; how
 * their messages travel (mailboxes or UCX, in segments, the reduction of
 * one segment overlapping the arrival of the next), and that no receive
 * writes bytes an outstanding send still reads, is the messages' business
 * (coll_ringx_link.c), so an algorithm only describes its steps.
 *
 * A later step's send leaves early, with the step under way, where it
 * reads nothing that this step's receive or any receive before its own
 * still writes (send_ahead): the phases of the hierarchical algorithms
 * then overlap, e.g. a node ring's messages, which read blocks that have
 * all arrived, leave together instead of one per step.  Every message is
 * still received at its own step (its tag), so nothing waits for anything
 * it did not wait for before.
 */
#include "coll_ringx.h"

enum { X_SEND, X_RECV, X_FINISH, X_DONE };

/* After step 0's sends are out: the peers can take this rank's data while
 * it copies.  No send of step 0 reads the destination (in place, where the
 * own block is sent, there is nothing to copy). */
static int local_copy(ringx_xsched_t *s)
{
    return ringx_mem_copy(s->mem, s->copy_dst, s->copy_src, s->copy_bytes);
}

static int recv_step(ringx_xsched_t *s, int step, const ringx_xstep_t *st)
{
    int reduces = st->recv_buf == NULL;
    return ringx_msgs_recv(&s->msgs, step, st->recv_from, reduces ? st->reduce_dst : st->recv_buf,
                           reduces ? st->reduce_local : NULL, st->recv_bytes,
                           st->received_first);
}

/* Whether step st's receive writes any of [buf, buf + bytes). */
static int writes(const ringx_xstep_t *st, const char *buf, size_t bytes)
{
    const char *dst = st->recv_buf != NULL ? st->recv_buf : st->reduce_dst;
    return st->recv_from >= 0 && st->recv_bytes && bytes && dst < buf + bytes &&
           buf < dst + st->recv_bytes;
}

/* Whether step j's send may leave while step `now` receives: no receive
 * of steps now .. j - 1 writes what it reads.  Latest first: a ring's send
 * reads what the step before received, so the scan mostly ends at once. */
static int may_send_early(const ringx_xsched_t *s, int now, int j)
{
    const ringx_xstep_t *st = &s->steps[j];

    for (int i = j - 1; i >= now; i--) {
        if (writes(&s->steps[i], st->send_buf, st->send_bytes)) {
            return 0;
        }
    }
    return 1;
}

/* How far ahead sends leave: enough for a node ring's steps (one per
 * node), short enough that the scan costs nothing beside a message. */
#define RINGX_SEND_AHEAD_STEPS 16

/* The sends of the steps after `now` that may leave already, once each.
 * Not through the staged transfers: their bounce buffers are taken in
 * order, and a send ahead holding one until its receiver reaches its step
 * could keep the sends that receiver waits for from leaving. */
static int send_ahead(ringx_xsched_t *s, int now)
{
    int last = now + RINGX_SEND_AHEAD_STEPS < s->nsteps ? now + RINGX_SEND_AHEAD_STEPS
                                                        : s->nsteps - 1;
    int rc = OMPI_SUCCESS;

    if (s->mem->staged) {
        return OMPI_SUCCESS;
    }
    for (int j = now + 1; rc == OMPI_SUCCESS && j <= last; j++) {
        ringx_xstep_t *st = &s->steps[j];
        if (st->send_to >= 0 && !st->sent && may_send_early(s, now, j)) {
            rc = ringx_msgs_send(&s->msgs, j, st->send_to, st->send_buf, st->send_bytes);
            st->sent = 1;
            s->sent_ahead |= st->send_bytes > 0;
        }
    }
    return rc;
}

int ringx_xsched_progress(ringx_xsched_t *s)
{
    ringx_exchange_t *x = &s->x;
    int rc = OMPI_SUCCESS;

    while (x->phase != X_DONE) {
        const ringx_xstep_t *st = &s->steps[x->step];
        switch (x->phase) {
        case X_SEND:
            rc = st->sent ? OMPI_SUCCESS
                          : ringx_msgs_send(&s->msgs, x->step, st->send_to, st->send_buf,
                                            st->send_bytes);
            if (rc == OMPI_SUCCESS && x->step == 0 && s->copy_bytes) {
                rc = local_copy(s);
            }
            rc = rc == OMPI_SUCCESS ? send_ahead(s, x->step) : rc;
            x->phase = X_RECV;
            ringx_msgs_next_recv(&s->msgs);
            break;
        case X_RECV:
            if ((rc = recv_step(s, x->step, st)) != RINGX_DONE) {
                return rc;
            }
            x->phase = ++x->step < s->nsteps ? X_SEND : X_FINISH;
            rc = OMPI_SUCCESS;
            break;
        default:
            if ((rc = ringx_msgs_finish(&s->msgs, s->total_bytes)) != RINGX_DONE) {
                return rc;
            }
            x->phase = X_DONE;
            if (s->msgs.mailbox_used) {
                ringx_count(&mca_coll_ringx_counters.mailbox[s->coll], 1);
            }
            if (s->sent_ahead) {
                ringx_count(&mca_coll_ringx_counters.sent_ahead[s->coll], 1);
            }
            break;
        }
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    return RINGX_DONE;
}

void ringx_xsched_abandon(ringx_xsched_t *s)
{
    RINGX_LOG(1, "exchange schedule failed; outstanding transfers dropped");
    ringx_msgs_abandon(&s->msgs);
}

void ringx_xsched_release(ringx_xsched_t *s)
{
    ringx_msgs_release(&s->msgs);
}

int ringx_xsched_prepare(ringx_xsched_t *s)
{
    size_t sends = 0;
    int reduces = 0, rc;

    for (int i = 0; i < s->nsteps; i++) {
        reduces |= s->steps[i].recv_from >= 0 && s->steps[i].recv_buf == NULL;
    }
    if ((rc = ringx_msgs_prepare(&s->msgs, reduces)) != OMPI_SUCCESS) {
        return rc;
    }
    for (int i = 0; i < s->nsteps; i++) {
        sends += s->steps[i].send_to >= 0 ? ringx_msgs_segments(&s->msgs, s->steps[i].send_bytes)
                                          : 0;
    }
    return ringx_msgs_reserve(&s->msgs, sends);
}

int ringx_xsched_start(ringx_xsched_t *s, uint32_t seq)
{
    ringx_exchange_t *x = &s->x;
    int rc;

    ringx_msgs_start(&s->msgs, seq);
    if (s->overflow) {
        RINGX_LOG(0, "an exchange schedule built more than its %d steps", s->cap_steps);
        return OMPI_ERR_BAD_PARAM;
    }
    if ((rc = ringx_xsched_prepare(s)) != OMPI_SUCCESS) {
        return rc;
    }
    for (int i = 0; i < s->nsteps; i++) {
        s->steps[i].sent = 0;
        ringx_handshake_add(&s->msgs.handshake, 1, s->steps[i].send_to);
        ringx_handshake_add(&s->msgs.handshake, 0, s->steps[i].recv_from);
    }
    x->step = 0;
    x->phase = s->nsteps > 0 ? X_SEND : X_FINISH;
    s->sent_ahead = 0;
    /* a schedule without steps still makes its copy */
    return s->nsteps == 0 && s->copy_bytes ? local_copy(s) : OMPI_SUCCESS;
}

/* ----------------------------------------------------- building steps */

void ringx_xsched_init(ringx_xsched_t *s, mca_coll_ringx_module_t *m, ringx_mem_t *mem,
                       ringx_coll_t coll, ringx_reduction_t red, size_t elem_size,
                       size_t total_bytes)
{
    s->module = m;
    s->mem = mem;
    s->coll = coll;
    s->elem_size = elem_size;
    s->total_bytes = total_bytes;
    s->nsteps = 0;
    s->cap_steps = RINGX_XSCHED_INLINE_STEPS;
    s->overflow = 0;
    s->steps = s->inline_steps;
    s->copy_bytes = 0;
    ringx_msgs_init(&s->msgs, m, mem, red, elem_size);
}

int ringx_xsched_room(ringx_xsched_t *s, ringx_scratch_set_t *set, int nsteps)
{
    ringx_xstep_t *room =
        nsteps <= s->cap_steps ? s->steps
                               : ringx_scratch_get(&set->steps, (size_t)nsteps * sizeof(*room));

    if (room == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (room != s->steps) {
        s->steps = room;
        s->cap_steps = nsteps;
    }
    return OMPI_SUCCESS;
}

void ringx_xsched_local_copy(ringx_xsched_t *s, char *dst, const char *src, size_t bytes)
{
    s->copy_dst = dst;
    s->copy_src = src;
    s->copy_bytes = bytes;
}

/* A step past the room is a bug of a build; it is written to the last
 * one and the call fails at its start, rather than anything else being
 * overwritten. */
static ringx_xstep_t *new_step(ringx_xsched_t *s)
{
    ringx_xstep_t *st;

    if (s->nsteps == s->cap_steps) {
        s->overflow = 1;
        s->nsteps--;
    }
    st = &s->steps[s->nsteps++];
    *st = (ringx_xstep_t){ .send_to = -1, .recv_from = -1 };
    return st;
}

void ringx_xsched_skip(ringx_xsched_t *s)
{
    (void)new_step(s);
}

void ringx_xsched_skip_steps(ringx_xsched_t *s, int nsteps)
{
    for (int i = 0; i < nsteps; i++) {
        ringx_xsched_skip(s);
    }
}

void ringx_xsched_also_send(ringx_xsched_t *s, int to, const char *buf, size_t bytes)
{
    ringx_xstep_t *st = &s->steps[s->nsteps - 1];
    st->send_to = to;
    st->send_buf = buf;
    st->send_bytes = bytes;
}

void ringx_xsched_received_first(ringx_xsched_t *s)
{
    s->steps[s->nsteps - 1].received_first = 1;
}

void ringx_xsched_send(ringx_xsched_t *s, int to, const char *buf, size_t bytes)
{
    (void)new_step(s);
    ringx_xsched_also_send(s, to, buf, bytes);
}

void ringx_xsched_recv(ringx_xsched_t *s, int from, char *buf, size_t bytes)
{
    ringx_xstep_t *st = new_step(s);
    st->recv_from = from;
    st->recv_buf = buf;
    st->recv_bytes = bytes;
}

void ringx_xsched_reduce(ringx_xsched_t *s, int from, char *dst, const char *local,
                         size_t bytes)
{
    ringx_xstep_t *st = new_step(s);
    st->recv_from = from;
    st->reduce_dst = dst;
    st->reduce_local = local;
    st->recv_bytes = bytes;
}

