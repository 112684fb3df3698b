/*
 * coll_ringx_direct.c - direct reads: on one node, a rank reads the blocks
 * it needs out of the other ranks' buffers (UCX reads) in the order it
 * likes, instead of exchanging them with one partner per step.  Used for
 * calls of coll_ringx_direct_buffer_bytes and more (ringx_direct_from_buffers)
 * and where there are no outboxes (coll_ringx_mailbox_bytes 0); the
 * outboxes (coll_ringx_mailbox.c) serve the smaller calls.  The outboxes
 * wait for every rank once or twice per piece; a call here waits two or
 * three times in all, which matters when ranks are descheduled.
 *
 * With more ranks than cores, an exchange step needs both partners on a
 * core at once, and a rank that is not scheduled holds up its partners at
 * every step.  Reads need the address and key of each peer's buffer,
 * written once per call into the peer's exposure record (the head of the
 * communicator's region of its window, see coll_ringx_mailbox.c).
 *
 * The reads are single copies by the kernel through UCX's cma transport
 * (coll_ringx_cma.c) when every rank of the communicator has it; else
 * UCP gets, which UCX 1.13 carries between processes of a node as active
 * messages that the peer answers whenever it progresses (it does in every
 * wait below).
 *
 * A call: every rank exposes its buffer and publishes the record (flag =
 * call number + 1, release); waits for every peer's record (acquire); if
 * every rank could expose, and for the same kind of reads, reads what it
 * needs; then adds one to each peer's count of finished reads and waits
 * until its own count says every peer has finished reading its buffer,
 * which must stay untouched until then.  If some rank could not expose its
 * buffer (device memory, a staged call, a failed registration), every rank
 * sees it in the records and the call goes to a message-based algorithm
 * instead.  The record of call n is rewritten only in a later call, which
 * no rank starts before every rank has read it: a rank leaves call n only
 * after every peer has taken part.
 */
#include "coll_ringx.h"

#include <stdlib.h>
#include <string.h>

#define RKEY_MAX_BYTES 256

/* The head of a region: written by its owner, read by the peers, except
 * reads_done, which the peers increment. */
typedef struct exposure_record {
    uint64_t flag;                  /* call number + 1 once the rest is written */
    uint64_t address;               /* the exposed buffer */
    uint64_t readable;              /* 0: this rank's buffer cannot be read */
    uint64_t single_copy;           /* the key is for single-copy reads */
    uint64_t rkey_len;              /* may be 0: cma needs no key */
    uint64_t address2;              /* a second buffer (single copies), or 0 */
    char rkey[RKEY_MAX_BYTES];      /* the key, then the second buffer's */
    char pad_to_line[64 - (6 * sizeof(uint64_t) + RKEY_MAX_BYTES) % 64];
    uint64_t reads_done;            /* peers' finished reads, over all calls */
    uint64_t signal;                /* call number + 1 (| status) once the owner says so */
} exposure_record_t;

_Static_assert(sizeof(exposure_record_t) <= RINGX_REGION_CALLS_OFFSET,
               "the exposure record fits the head of a region, before its count of calls");

static exposure_record_t *record_of(const mca_coll_ringx_module_t *m, int rank)
{
    return (exposure_record_t *)(rank == m->rank ? m->mailbox.local : m->mailbox.remote[rank]);
}

/* Writes this rank's record for call seq: readable or not. */
static void publish(ringx_direct_t *d, const void *buf, const void *buf2, int readable)
{
    exposure_record_t *own = record_of(d->m, d->m->rank);
    size_t key = d->own.packed_rkey_len;

    readable = readable && key + d->own2.packed_rkey_len <= RKEY_MAX_BYTES;
    own->address = (uint64_t)(uintptr_t)buf;
    own->address2 = (uint64_t)(uintptr_t)buf2;
    own->readable = (uint64_t)readable;
    own->rkey_len = readable ? key : 0;
    own->single_copy = (uint64_t)d->own.single_copy;
    if (readable) {
        memcpy(own->rkey, d->own.packed_rkey, key);
        if (d->own2.packed_rkey_len > 0) { /* memcpy from NULL is undefined, even of 0 bytes */
            memcpy(own->rkey + key, d->own2.packed_rkey, d->own2.packed_rkey_len);
        }
    }
    __atomic_store_n(&own->flag, (uint64_t)d->seq + 1, __ATOMIC_RELEASE);
    ringx_mailbox_ring(d->m);
}

static int record_in(const ringx_direct_t *d, int rank)
{
    return ringx_mailbox_stamped(d->m, rank) &&
           __atomic_load_n(&record_of(d->m, rank)->flag, __ATOMIC_ACQUIRE) ==
               (uint64_t)d->seq + 1;
}

/* Reads every peer's record (all there); 1 if every rank exposed its
 * buffer, all of them for the same kind of reads. */
static int every_rank_readable(ringx_direct_t *d)
{
    int all = 1;
    uint64_t kind = (uint64_t)d->own.single_copy;
    for (int k = 1; k < d->m->size; k++) {
        int rank = (d->m->rank + k) % d->m->size;
        const exposure_record_t *r = record_of(d->m, rank);
        all = all && r->readable && r->single_copy == kind;
    }
    return all && record_of(d->m, d->m->rank)->readable;
}

/* The key of rank's buffer, or with second of its second buffer (whose
 * key follows the first: the same kind and length on every rank). */
static void *unpack_key(ringx_direct_t *d, int rank, int second)
{
    const exposure_record_t *r = record_of(d->m, rank);
    return ringx_ucx_rkey(d->m->peers[rank], r->rkey + (second ? r->rkey_len : 0),
                          d->own.single_copy);
}

static void release_keys(ringx_direct_t *d, int rank)
{
    ringx_ucx_rkey_release(d->rkeys[rank], d->own.single_copy);
    ringx_ucx_rkey_release(d->rkeys2[rank], d->own.single_copy);
    d->rkeys[rank] = d->rkeys2[rank] = NULL;
}

/* Learns every peer's buffers and unpacks their keys; a kept call keeps
 * the keys of a peer whose buffers have not changed since its last start
 * (a persistent call's peers expose the same buffers every time). */
static int unpack_keys(ringx_direct_t *d)
{
    for (int rank = 0; rank < d->m->size; rank++) {
        const exposure_record_t *r = record_of(d->m, rank);
        if (rank == d->m->rank) {
            continue;
        }
        if (d->keep && d->rkeys[rank] != NULL && d->remote[rank] == r->address &&
            d->remote2[rank] == r->address2) {
            continue;
        }
        release_keys(d, rank);
        d->remote[rank] = r->address;
        d->remote2[rank] = r->address2;
        d->rkeys[rank] = unpack_key(d, rank, 0);
        d->rkeys2[rank] = d->two ? unpack_key(d, rank, 1) : NULL;
        if (d->rkeys[rank] == NULL || (d->two && d->rkeys2[rank] == NULL)) {
            release_keys(d, rank);
            return OMPI_ERROR;
        }
    }
    return OMPI_SUCCESS;
}

static void release(ringx_direct_t *d)
{
    for (int rank = 0; d->rkeys != NULL && rank < d->m->size; rank++) {
        release_keys(d, rank);
    }
    ringx_ucx_unexpose(&d->own);
    ringx_ucx_unexpose(&d->own2);
    free(d->rkeys);
    d->rkeys = NULL;
}

int ringx_direct_single_copy(const mca_coll_ringx_module_t *m)
{
    for (int rank = 0; rank < m->size; rank++) {
        if (rank != m->rank && !ringx_ucx_single_copy(m->peers[rank])) {
            return 0;
        }
    }
    return 1;
}

/* Whether this rank can expose buf (and buf2, if any) for the call. */
static int expose_buffers(ringx_direct_t *d, const void *buf, size_t len, const void *buf2,
                          size_t len2)
{
    int single_copy = d->m->mailbox.single_copy;

    if (d->rkeys == NULL || len == 0 || ringx_memtype_on_device(d->mem->type) ||
        d->mem->staged || (buf2 != NULL && !single_copy) ||
        ringx_ucx_expose(buf, len, single_copy, &d->own) != OMPI_SUCCESS) {
        return 0;
    }
    return buf2 == NULL || ringx_ucx_expose(buf2, len2, single_copy, &d->own2) == OMPI_SUCCESS;
}

void ringx_direct_prepare(ringx_direct_t *d, mca_coll_ringx_module_t *m, ringx_mem_t *mem,
                          int keep)
{
    int p = m->size;

    memset(d, 0, sizeof(*d));
    d->m = m;
    d->mem = mem;
    d->keep = keep;
    /* rkeys, rkeys2, remote, remote2 and reqs in one allocation */
    d->rkeys = calloc((size_t)p, 2 * sizeof(void *) + 2 * sizeof(uint64_t) + sizeof(ringx_req_t));
    if (d->rkeys != NULL) {
        d->rkeys2 = d->rkeys + p;
        d->remote = (uint64_t *)(d->rkeys2 + p);
        d->remote2 = d->remote + p;
        d->reqs = (ringx_req_t *)(d->remote2 + p);
    }
}

void ringx_direct_begin(ringx_direct_t *d)
{
    d->seq = d->m->direct_next++;
}

int ringx_direct_my_turn(const ringx_direct_t *d)
{
    return __atomic_load_n(&d->m->direct_done, __ATOMIC_ACQUIRE) == d->seq;
}

void ringx_direct_publish(ringx_direct_t *d, const void *buf, size_t len, const void *buf2,
                          size_t len2)
{
    if (!d->exposed) {
        d->two = buf2 != NULL;
        d->readable = expose_buffers(d, buf, len, buf2, len2);
        d->exposed = d->keep;       /* kept for the next start */
    }
    publish(d, buf, buf2, d->readable);
}

int ringx_direct_records_in(const ringx_direct_t *d)
{
    for (int rank = 0; rank < d->m->size; rank++) {
        if (rank != d->m->rank && !record_in(d, rank)) {
            return 0;
        }
    }
    return 1;
}

int ringx_direct_open(ringx_direct_t *d)
{
    if (!every_rank_readable(d)) {
        return RINGX_DIRECT_DECLINED;
    }
    d->open = 1;
    return unpack_keys(d);
}

void ringx_direct_end(ringx_direct_t *d)
{
    if (!d->keep) {
        release(d);
    }
    d->open = 0;
    __atomic_store_n(&d->m->direct_done, d->seq + 1, __ATOMIC_RELEASE);
}

int ringx_direct_read(ringx_direct_t *d, int rank, void *dst, size_t offset, size_t len)
{
    return len == 0 ? OMPI_SUCCESS
                    : ringx_ucx_iget(d->m->peers[rank], dst, len, d->remote[rank] + offset,
                                     d->rkeys[rank], d->own.single_copy, &d->reqs[rank]);
}

int ringx_direct_read_second(ringx_direct_t *d, int rank, void *dst, size_t offset, size_t len)
{
    return len == 0 ? OMPI_SUCCESS
                    : ringx_ucx_iget(d->m->peers[rank], dst, len, d->remote2[rank] + offset,
                                     d->rkeys2[rank], d->own.single_copy, &d->reqs[rank]);
}

#define SIGNAL_FAILED (UINT64_C(1) << 63)

void ringx_direct_signal(ringx_direct_t *d, int rc)
{
    uint64_t value = ((uint64_t)d->seq + 1) | (rc == OMPI_SUCCESS ? 0 : SIGNAL_FAILED);
    __atomic_store_n(&record_of(d->m, d->m->rank)->signal, value, __ATOMIC_RELEASE);
    ringx_mailbox_ring(d->m);
}

int ringx_direct_signal_in(const ringx_direct_t *d, int rank)
{
    uint64_t value = __atomic_load_n(&record_of(d->m, rank)->signal, __ATOMIC_ACQUIRE);
    return (value & ~SIGNAL_FAILED) != (uint64_t)d->seq + 1 ? 0
           : value & SIGNAL_FAILED                          ? OMPI_ERROR
                                                            : 1;
}

/* Reads bytes at offset of every peer's (first) buffer, a segment of all
 * the peers after the other, and reduces them with own into acc. */
int ringx_direct_read_reduce(ringx_direct_t *d, size_t offset, const char *own, char *acc,
                             char *segment, size_t seg, size_t bytes, ringx_reduction_t red)
{
    mca_coll_ringx_module_t *m = d->m;
    size_t elem = ringx_type_size(red.type);
    int rc = OMPI_SUCCESS;

    for (size_t off = 0; off < bytes && rc == OMPI_SUCCESS; off += seg) {
        size_t len = bytes - off < seg ? bytes - off : seg;
        for (int k = 1; k < m->size && rc == OMPI_SUCCESS; k++) {
            int peer = (m->rank + k) % m->size;
            rc = ringx_direct_read(d, peer, segment, offset + off, len);
            if (rc == OMPI_SUCCESS) {
                rc = ringx_direct_wait(d, peer);
            }
            if (rc == OMPI_SUCCESS) {
                rc = ringx_mem_reduce(d->mem, acc + off, (k == 1 ? own : acc) + off, segment,
                                      len / elem, red.type, red.op);
            }
        }
    }
    return rc;
}

int ringx_direct_wait(ringx_direct_t *d, int rank)
{
    int done;
    while ((done = ringx_ucx_test(&d->reqs[rank])) == 0) {
        ringx_mem_progress(d->mem, &d->idle);
    }
    return done < 0 ? done : OMPI_SUCCESS;
}

void ringx_direct_release(ringx_direct_t *d)
{
    if (d->m != NULL) {
        release(d);
    }
    d->exposed = 0;
}

int ringx_direct_finish_reads(ringx_direct_t *d, int rc)
{
    mca_coll_ringx_module_t *m = d->m;

    for (int rank = 0; rank < m->size; rank++) {
        int waited = ringx_direct_wait(d, rank);
        rc = rc == OMPI_SUCCESS ? waited : rc;
    }
    for (int rank = 0; rank < m->size; rank++) {
        if (rank != m->rank) {
            __atomic_fetch_add(&record_of(m, rank)->reads_done, 1, __ATOMIC_RELEASE);
        }
    }
    ringx_mailbox_ring(m);
    m->direct_calls++;
    return rc;
}

int ringx_direct_drained(const ringx_direct_t *d)
{
    const mca_coll_ringx_module_t *m = d->m;
    return __atomic_load_n(&record_of(m, m->rank)->reads_done, __ATOMIC_ACQUIRE) >=
           m->direct_calls * (uint64_t)(m->size - 1);
}
