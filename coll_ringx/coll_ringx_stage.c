/*
 * coll_ringx_stage.c - transfers through host bounce buffers.
 *
 * A staged send copies its segment out of the buffers' memory into a free
 * send slot, then hands the slot to UCX; a staged receive lands in a free
 * receive slot and is copied into place.  Copies are asynchronous (CUDA
 * streams and events, see coll_ringx_cuda.c), so while one segment is on
 * the wire the next is being copied out and the previous one copied in and
 * reduced.
 *
 * Slots are few (coll_ringx_gpu_bounce_buffers for sends, the pipeline
 * depth for receives); transfers without one wait in a FIFO per direction
 * and take the next free slot.  Posting never blocks: a send blocked on a
 * slot while its receiver waits for it would deadlock the ring.  FIFO
 * order keeps segments in the order the peers expect them, so the oldest
 * waiting send is always one its receiver will take.
 *
 * Everything advances when any transfer of the call is tested, and in every
 * wait loop of the engines (ringx_mem_progress).
 */
#include "coll_ringx.h"

#include <stdlib.h>
#include <string.h>

typedef enum {
    ENTRY_FREE,
    ENTRY_WAITING,      /* no slot yet */
    ENTRY_COPYING,      /* send: copy out; receive: copy in */
    ENTRY_WIRE,         /* in UCX */
    ENTRY_DONE,
    ENTRY_FAILED
} entry_state_t;

enum { DIR_RECV, DIR_SEND, DIRS };

typedef struct stage_entry {
    entry_state_t state;
    int dir;
    int slot;                   /* -1 while waiting */
    ringx_peer_t *peer;
    uint64_t tag;
    char *buf;                  /* in the buffers' memory */
    size_t len;
    ringx_req_t req;
    int rc;
    int next_free;
} stage_entry_t;

typedef struct fifo {
    int *items;
    size_t head, tail, cap;
} fifo_t;

struct ringx_stage {
    stage_entry_t *entries;
    int nentries, cap, free_list;
    fifo_t waiting[DIRS];
    int nslots[DIRS];
    int first_slot[DIRS];       /* slots are numbered sends first, then receives */
    int *owner;                 /* entry using each slot, or -1 */
    char *bounce;
    size_t slot_bytes;
    int poisoned;               /* UCX may still use a slot: never reuse them */
};

static char *slot_buffer(const ringx_stage_t *st, int slot)
{
    return st->bounce + (size_t)slot * st->slot_bytes;
}

static int fifo_push(fifo_t *f, int item)
{
    if (f->tail == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 32;
        int *grown = realloc(f->items, cap * sizeof(*grown));
        if (grown == NULL) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        f->items = grown;
        f->cap = cap;
    }
    f->items[f->tail++] = item;
    return OMPI_SUCCESS;
}

static int fifo_pop(fifo_t *f)
{
    int item = f->head < f->tail ? f->items[f->head++] : -1;
    if (f->head == f->tail) {
        f->head = f->tail = 0;
    }
    return item;
}

static int new_entry(ringx_stage_t *st)
{
    if (st->free_list < 0) {
        if (st->nentries == st->cap) {
            int cap = st->cap ? 2 * st->cap : 64;
            stage_entry_t *grown = realloc(st->entries, (size_t)cap * sizeof(*grown));
            if (grown == NULL) {
                return -1;
            }
            st->entries = grown;
            st->cap = cap;
        }
        st->entries[st->nentries].next_free = -1;
        st->free_list = st->nentries++;
    }
    int i = st->free_list;
    st->free_list = st->entries[i].next_free;
    return i;
}

static void free_slot(ringx_stage_t *st, stage_entry_t *e)
{
    if (e->slot >= 0) {
        st->owner[e->slot] = -1;
        e->slot = -1;
    }
}

static void free_entry(ringx_stage_t *st, int i)
{
    free_slot(st, &st->entries[i]);
    st->entries[i].state = ENTRY_FREE;
    st->entries[i].next_free = st->free_list;
    st->free_list = i;
}

static void fail(ringx_stage_t *st, stage_entry_t *e, int rc)
{
    e->rc = rc;
    e->state = ENTRY_FAILED;
    free_slot(st, e);
}

/* Whether a poll (1 done, 0 not yet, < 0 failed) says the entry's current
 * stage is over; a failure is recorded in the entry. */
static int polled_done(ringx_stage_t *st, stage_entry_t *e, int rc)
{
    if (rc < 0) {
        fail(st, e, rc);
    }
    return rc > 0;
}

/* Moves entry i on as far as it can go now. */
static void advance(ringx_mem_t *mem, int i)
{
    ringx_stage_t *st = mem->stage;
    stage_entry_t *e = &st->entries[i];
    int rc;

    for (;;) {
        if (e->state == ENTRY_COPYING) {
            if (!polled_done(st, e, mem->ops->copied(mem->ctx, e->slot))) {
                return;
            }
            if (e->dir == DIR_RECV) {
                free_slot(st, e);
                e->state = ENTRY_DONE;
                return;
            }
            rc = ringx_ucx_isend(e->peer, slot_buffer(st, e->slot), e->len, e->tag, &e->req);
            e->state = ENTRY_WIRE;
        } else if (e->state == ENTRY_WIRE) {
            if (!polled_done(st, e, ringx_ucx_test(&e->req))) {
                return;
            }
            if (e->dir == DIR_SEND) {
                free_slot(st, e);
                e->state = ENTRY_DONE;
                return;
            }
            rc = mem->ops->copy_in(mem->ctx, e->buf, slot_buffer(st, e->slot), e->len, e->slot);
            e->state = ENTRY_COPYING;
        } else {
            return;
        }
        if (rc != OMPI_SUCCESS) {
            fail(st, e, rc);
            return;
        }
    }
}

/* Gives a free slot to entry i and starts it. */
static void start(ringx_mem_t *mem, int i, int slot)
{
    ringx_stage_t *st = mem->stage;
    stage_entry_t *e = &st->entries[i];
    int rc;

    e->slot = slot;
    st->owner[slot] = i;
    if (e->dir == DIR_SEND) {
        rc = mem->ops->copy_out(mem->ctx, slot_buffer(st, slot), e->buf, e->len, slot);
        e->state = ENTRY_COPYING;
    } else {
        rc = ringx_ucx_irecv(slot_buffer(st, slot), e->len, e->tag, &e->req);
        e->state = ENTRY_WIRE;
    }
    if (rc != OMPI_SUCCESS) {
        fail(st, e, rc);
        return;
    }
    advance(mem, i);
}

static int free_slot_of(const ringx_stage_t *st, int dir)
{
    for (int s = st->first_slot[dir]; s < st->first_slot[dir] + st->nslots[dir]; s++) {
        if (st->owner[s] < 0) {
            return s;
        }
    }
    return -1;
}

void ringx_stage_progress(ringx_mem_t *mem)
{
    ringx_stage_t *st = mem->stage;
    int nslots = st->nslots[DIR_SEND] + st->nslots[DIR_RECV];

    for (int s = 0; s < nslots; s++) {
        if (st->owner[s] >= 0) {
            advance(mem, st->owner[s]);
        }
    }
    for (int dir = 0; dir < DIRS; dir++) {
        int slot;
        while (st->waiting[dir].head < st->waiting[dir].tail &&
               (slot = free_slot_of(st, dir)) >= 0) {
            int i = fifo_pop(&st->waiting[dir]);
            if (st->entries[i].state == ENTRY_WAITING) {
                start(mem, i, slot);
            }
        }
    }
}

static int post(ringx_mem_t *mem, int dir, ringx_peer_t *peer, const void *buf, size_t len,
                uint64_t tag, ringx_xfer_t *x)
{
    ringx_stage_t *st = mem->stage;
    int i = new_entry(st);

    x->req = NULL;
    x->staged = 0;
    if (i < 0 || fifo_push(&st->waiting[dir], i) != OMPI_SUCCESS) {
        if (i >= 0) {
            free_entry(st, i);
        }
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    st->entries[i] = (stage_entry_t){ .state = ENTRY_WAITING, .dir = dir, .slot = -1,
                                      .peer = peer, .tag = tag, .buf = (char *)buf,
                                      .len = len, .next_free = -1 };
    x->staged = i + 1;
    ringx_stage_progress(mem);
    return OMPI_SUCCESS;
}

int ringx_stage_send(ringx_mem_t *mem, ringx_peer_t *peer, const void *buf, size_t len,
                     uint64_t tag, ringx_xfer_t *x)
{
    return post(mem, DIR_SEND, peer, buf, len, tag, x);
}

int ringx_stage_recv(ringx_mem_t *mem, void *buf, size_t len, uint64_t tag, ringx_xfer_t *x)
{
    return post(mem, DIR_RECV, NULL, buf, len, tag, x);
}

int ringx_stage_test(ringx_mem_t *mem, ringx_xfer_t *x)
{
    ringx_stage_t *st = mem->stage;
    int i = x->staged - 1;
    int rc;

    ringx_stage_progress(mem);
    switch (st->entries[i].state) {
    case ENTRY_DONE:
        rc = 1;
        break;
    case ENTRY_FAILED:
        rc = st->entries[i].rc;
        break;
    default:
        return 0;
    }
    free_entry(st, i);
    x->staged = 0;
    return rc;
}

void ringx_stage_abandon(ringx_mem_t *mem, ringx_xfer_t *x)
{
    ringx_stage_t *st = mem->stage;
    int i = x->staged - 1;
    stage_entry_t *e = &st->entries[i];

    if (e->state == ENTRY_COPYING) {
        while (mem->ops->copied(mem->ctx, e->slot) == 0) {
            /* a copy cannot be cancelled; it finishes soon */
        }
    } else if (e->state == ENTRY_WIRE) {
        ringx_ucx_abandon(&e->req);
        st->poisoned = 1;
    }
    free_entry(st, i);
    x->staged = 0;
}

void ringx_stage_release(ringx_mem_t *mem, ringx_xfer_t *x)
{
    ringx_stage_t *st = mem->stage;
    stage_entry_t *e = &st->entries[x->staged - 1];

    if (e->state != ENTRY_WIRE || e->dir != DIR_SEND) {
        ringx_stage_abandon(mem, x);
        return;
    }
    /* Its receiver holds every byte: the slot is read no more. */
    ringx_ucx_release(&e->req);
    free_entry(st, x->staged - 1);
    x->staged = 0;
}

ringx_stage_t *ringx_stage_create(ringx_mem_t *mem, int send_slots, int recv_slots)
{
    ringx_stage_t *st = calloc(1, sizeof(*st));
    int nslots = send_slots + recv_slots;

    if (st == NULL) {
        return NULL;
    }
    st->free_list = -1;
    st->nslots[DIR_SEND] = send_slots;
    st->nslots[DIR_RECV] = recv_slots;
    st->first_slot[DIR_SEND] = 0;
    st->first_slot[DIR_RECV] = send_slots;
    /* Room for one segment of any element size, cache-line multiple. */
    st->slot_bytes = (mca_coll_ringx_component.segment_size + 16 + 63) / 64 * 64;
    st->owner = malloc((size_t)nslots * sizeof(*st->owner));
    st->bounce = mem->ops->bounce(mem->ctx, st->slot_bytes, nslots);
    if (st->owner == NULL || st->bounce == NULL) {
        free(st->owner);
        free(st);
        return NULL;
    }
    for (int s = 0; s < nslots; s++) {
        st->owner[s] = -1;
    }
    return st;
}

void ringx_stage_destroy(ringx_mem_t *mem)
{
    ringx_stage_t *st = mem->stage;

    for (int i = 0; i < st->nentries; i++) {
        entry_state_t state = st->entries[i].state;
        if (state == ENTRY_WAITING || state == ENTRY_COPYING || state == ENTRY_WIRE) {
            ringx_xfer_t x = { NULL, i + 1 };
            ringx_stage_abandon(mem, &x);
        }
    }
    if (st->poisoned) {
        RINGX_LOG(1, "staging: transfers abandoned after an error; bounce buffers retired");
        mem->ops->forget_bounce(mem->ctx);
    }
    for (int dir = 0; dir < DIRS; dir++) {
        free(st->waiting[dir].items);
    }
    free(st->entries);
    free(st->owner);
    free(st);
    mem->stage = NULL;
}
