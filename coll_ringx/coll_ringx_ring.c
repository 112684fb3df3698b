/*
 * coll_ringx_ring.c - the pipelined ring walk shared by all three ring
 * collectives.
 *
 * Every block travels in segments.  Receives are kept posted `depth`
 * segments ahead; as soon as segment k of step t has arrived (and been
 * reduced), segment k of step t+1 is sent on.  So the reduction of one
 * segment overlaps the transfer of the next, and successive steps overlap
 * too: the ring never waits for a whole block.  The walk only paces the
 * segments: they travel as the call's messages (ringx_msgs_t,
 * coll_ringx_link.c), which keep the pending sends, the receive slots and
 * scratch, and end the call.
 */
#include "coll_ringx.h"

#include <string.h>

enum { RING_RUN, RING_FINISH, RING_DONE };

typedef ringx_ring_cursor_t ring_cursor_t;

static size_t block_elems(const ringx_ring_t *ring, int block)
{
    return ringx_block_count(ring->count, ring->module->size, block);
}

static int recv_block_of(const ringx_ring_t *ring, int step)
{
    return ringx_ring_recv_block(ring->module->rank, ring->module->size, step, ring->shift);
}

static size_t segs_of_step(const ringx_ring_t *ring, int step)
{
    return ringx_segment_total(block_elems(ring, recv_block_of(ring, step)), ring->walk.seg_elems);
}

/* Moves c to the next segment that exists (blocks may be empty). */
static void cursor_advance(const ringx_ring_t *ring, ring_cursor_t *c)
{
    c->seg++;
    while (c->step < ring->nsteps && c->seg >= segs_of_step(ring, c->step)) {
        c->step++;
        c->seg = 0;
    }
}

static void cursor_start(const ringx_ring_t *ring, ring_cursor_t *c)
{
    c->step = 0;
    c->seg = (size_t)-1;
    cursor_advance(ring, c);
}

static size_t seg_elems_at(const ringx_ring_t *ring, int block, size_t seg)
{
    return ringx_segment_count(block_elems(ring, block), ring->walk.seg_elems, seg);
}

/* Sends segment seg of the block that step sends. */
static int post_send(ringx_ring_t *ring, int step, size_t seg)
{
    ringx_ring_walk_t *w = &ring->walk;
    int block = ringx_ring_send_block(ring->module->rank, ring->module->size, step, ring->shift);
    size_t len = seg_elems_at(ring, block, seg) * ring->elem_size;
    const char *src = ring->send_block(ring, step, block) + seg * ring->msgs.seg_bytes;

    return ringx_msgs_send_segment(&ring->msgs, step, seg, w->right, src, len);
}

static int post_recv(ringx_ring_t *ring)
{
    ringx_ring_walk_t *w = &ring->walk;
    ring_cursor_t c = w->next_post;
    int block = recv_block_of(ring, c.step);
    size_t len = seg_elems_at(ring, block, c.seg) * ring->elem_size;
    ringx_ring_recv_target_t target;
    char *dst;

    ring->recv_block(ring, c.step, block, &target);
    dst = target.direct ? target.direct + c.seg * ring->msgs.seg_bytes
                        : ringx_msgs_scratch(&ring->msgs, w->posted);
    cursor_advance(ring, &w->next_post);
    return ringx_msgs_post_recv(&ring->msgs, c.step, c.seg, w->posted++, dst, len);
}

/*
 * Whether the next segment to finish can be finished now: it has arrived;
 * to reduce, no pending send still reads where the reduction writes; and
 * its onward send has room.  1, 0 or an error.
 */
static int ready_to_finish(ringx_ring_t *ring, const ringx_ring_recv_target_t *target)
{
    ringx_ring_walk_t *w = &ring->walk;
    ring_cursor_t c = w->next_done;
    int block = recv_block_of(ring, c.step);
    int rc = ringx_msgs_test_recv(&ring->msgs, w->done);

    if (rc == 1 && target->direct == NULL) {
        rc = ringx_msgs_writable(&ring->msgs, target->reduce_dst + c.seg * ring->msgs.seg_bytes,
                                 seg_elems_at(ring, block, c.seg) * ring->elem_size);
    }
    if (rc == 1 && c.step + 1 < ring->nsteps) {
        rc = ringx_msgs_send_room(&ring->msgs);
    }
    return rc;
}

/* Reduces the segment that has arrived, then passes it on. */
static int finish_recv(ringx_ring_t *ring, const ringx_ring_recv_target_t *target)
{
    ringx_ring_walk_t *w = &ring->walk;
    ring_cursor_t c = w->next_done;
    int block = recv_block_of(ring, c.step);
    int rc = OMPI_SUCCESS;

    if (target->direct == NULL) {
        size_t off = c.seg * ring->msgs.seg_bytes;
        rc = ringx_mem_reduce(ring->mem, target->reduce_dst + off, target->reduce_local + off,
                              ringx_msgs_scratch(&ring->msgs, w->done),
                              seg_elems_at(ring, block, c.seg),
                              ring->red.type, ring->red.op);
    }
    cursor_advance(ring, &w->next_done);
    w->done++;
    if (rc == OMPI_SUCCESS && c.step + 1 < ring->nsteps) {
        rc = post_send(ring, c.step + 1, c.seg);
    }
    return rc;
}

static int post_first_sends(ringx_ring_t *ring)
{
    int block = ringx_ring_send_block(ring->module->rank, ring->module->size, 0, ring->shift);
    size_t nsegs = ringx_segment_total(block_elems(ring, block), ring->walk.seg_elems);
    int rc = OMPI_SUCCESS;

    for (size_t seg = 0; seg < nsegs && rc == OMPI_SUCCESS; seg++) {
        rc = post_send(ring, 0, seg);
    }
    return rc;
}

/* Receives kept posted ahead, and every segment that can be finished. */
static int walk(ringx_ring_t *ring)
{
    ringx_ring_walk_t *w = &ring->walk;
    int rc = OMPI_SUCCESS;

    while (w->next_done.step < ring->nsteps) {
        ringx_ring_recv_target_t target;
        while (w->next_post.step < ring->nsteps && w->posted - w->done < (size_t)ring->msgs.depth) {
            if ((rc = post_recv(ring)) != OMPI_SUCCESS) {
                return rc;
            }
        }
        ring->recv_block(ring, w->next_done.step, recv_block_of(ring, w->next_done.step),
                         &target);
        if ((rc = ready_to_finish(ring, &target)) != 1) {
            return rc;
        }
        if ((rc = finish_recv(ring, &target)) != OMPI_SUCCESS) {
            return rc;
        }
    }
    return RINGX_DONE;
}

int ringx_ring_progress(ringx_ring_t *ring)
{
    ringx_ring_walk_t *w = &ring->walk;
    int rc;

    switch (w->phase) {
    case RING_RUN:
        if ((rc = walk(ring)) != RINGX_DONE) {
            return rc;
        }
        w->phase = RING_FINISH;
        return ringx_ring_progress(ring);
    case RING_FINISH:
        rc = ringx_msgs_finish(&ring->msgs, ring->count * ring->elem_size);
        w->phase = rc == RINGX_DONE ? RING_DONE : w->phase;
        return rc;
    default:
        return RINGX_DONE;
    }
}

/* On an error nothing may hang: outstanding receives are cancelled and
 * sends are left to UCX. */
void ringx_ring_abandon(ringx_ring_t *ring)
{
    RINGX_LOG(1, "ring walk failed; outstanding transfers dropped");
    ringx_msgs_abandon(&ring->msgs);
}

void ringx_ring_release(ringx_ring_t *ring)
{
    ringx_msgs_release(&ring->msgs);
}

/* The walk's segment size, and room for its pending sends: twice the
 * segments of the largest block, as many as segment k of step t+1 can
 * leave before segment k of step t-1 has been received. */
int ringx_ring_prepare(ringx_ring_t *ring)
{
    ringx_ring_walk_t *w = &ring->walk;
    ringx_msgs_t *x = &ring->msgs;
    size_t largest_block = ringx_block_count(ring->count, ring->module->size, 0);
    int rc;

    if (x->module == NULL) {            /* the build left it zeroed */
        ringx_msgs_init(x, ring->module, ring->mem, ring->red, ring->elem_size);
        x->mailboxes = 0;
    }
    if ((rc = ringx_msgs_prepare(x, ring->reduce_steps > 0)) != OMPI_SUCCESS) {
        return rc;
    }
    w->seg_elems = x->seg_bytes / ring->elem_size;
    return ringx_msgs_reserve(x, 2 * ringx_segment_total(largest_block, w->seg_elems));
}

int ringx_ring_start(ringx_ring_t *ring, uint32_t seq)
{
    mca_coll_ringx_module_t *m = ring->module;
    ringx_ring_walk_t *w = &ring->walk;
    int rc;

    memset(w, 0, sizeof(*w));
    if ((rc = ringx_ring_prepare(ring)) != OMPI_SUCCESS) {
        return rc;
    }
    ringx_msgs_start(&ring->msgs, seq);
    w->right = (m->rank + 1) % m->size;
    ringx_handshake_add(&ring->msgs.handshake, 1, w->right);
    ringx_handshake_add(&ring->msgs.handshake, 0, (m->rank + m->size - 1) % m->size);
    if (ring->count == 0) {
        w->phase = RING_DONE;           /* nothing moves, on any rank */
        return OMPI_SUCCESS;
    }
    cursor_start(ring, &w->next_post);
    cursor_start(ring, &w->next_done);
    return post_first_sends(ring);
}
