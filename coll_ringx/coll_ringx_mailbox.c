/*
 * coll_ringx_mailbox.c - small messages between ranks on one node, written
 * straight into the receiver's memory.
 *
 * A tagged UCX message over shared memory costs its sender an atomic
 * claim of a slot in the receiver's queue, and its receiver a queue poll,
 * an unexpected-message lookup and a copy.  For the few hundred bytes of
 * a small collective's step that is most of the time the step takes.
 * Here each process has a window of memory that UCX lets its peers on the
 * node map (coll_ringx_ucx.c); a communicator with a context id below
 * RINGX_MAILBOX_COMMS owns one region of every member's window.  A region
 * holds one slot per (call parity, exchange step): the sender copies its
 * data into the receiver's slot and then stores the call's sequence number
 * in the slot's flag (release); the receiver waits for that number
 * (acquire) and reads the data in place.
 *
 * Two slots per step are enough: ringx's blocking collectives make every
 * rank wait for data from every other, so a rank in call n+2 knows every
 * rank has finished call n, and with it read the slots that call n+2
 * rewrites.  The calls are numbered for that among themselves
 * (ringx_mailbox_next_call): a nonblocking call, which may still be under
 * way when later calls start, uses no mailbox and takes no number.
 *
 * Sender and receiver choose the mailbox from what they both know, the
 * step and its size, so they always agree; a communicator has regions
 * only if every member can map the windows of every other member on its
 * node (agreed when it connects), and mailboxes link only ranks on one
 * node by Open MPI's locality: across nodes of a communicator, messages
 * go through UCX, and the argument above holds all the same (a call's
 * result needs every rank's input, wherever it comes from).  Only a
 * communicator on one node reads buffers and outboxes directly.  A
 * region starts with its owner's exposure record for direct reads
 * (coll_ringx_direct.c), which needs no slots: with
 * coll_ringx_mailbox_bytes 0 the regions hold only that.
 *
 * Beside the slots, outboxes serve the other way round: the owner copies
 * its data into its own region once and every peer copies it out (direct
 * reads, a piece at a time, coll_ringx_osched.c).  Every rank
 * then copies each byte it gets once, where a mailbox message is copied
 * by its sender and its receiver.  Each piece waits for every rank, so
 * calls of many pieces read the peers' buffers instead
 * (ringx_direct_from_buffers, coll_ringx_direct.c).  The calls of the
 * first RINGX_LARGE_OUTBOX_COMMS communicators take large outboxes
 * (coll_ringx_outbox_bytes, blocking and posted), laid out after the
 * regions, so that calls of a few MiB are one piece.
 */
#include "coll_ringx.h"
#include "coll_ringx_bell.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "opal/class/opal_hash_table.h"

#include "ringx_host_reduce.h"

/* A slot: the flag, then the data (on the flag's cache line when small). */
#define FLAG_BYTES sizeof(uint64_t)
#define CACHE_LINE 64

static size_t slot_bytes(void)
{
    size_t bytes = mca_coll_ringx_component.mailbox_bytes;
    return bytes > RINGX_MAILBOX_MAX_BYTES ? RINGX_MAILBOX_MAX_BYTES : bytes;
}

static size_t slot_stride(size_t bytes)
{
    return (FLAG_BYTES + bytes + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
}

/* The data bytes of a posted outbox: the mailboxes' size, or
 * RINGX_POSTED_BYTES if more (0: no mailboxes, no outboxes). */
static size_t posted_bytes(size_t bytes)
{
    return bytes == 0 ? 0 : bytes > RINGX_POSTED_BYTES ? bytes : RINGX_POSTED_BYTES;
}

/* The data bytes of a blocking call's outbox: what the mailbox slots of a
 * call parity hold together, less a cache line (64.9 KiB with the default
 * coll_ringx_mailbox_bytes; the size its pieces were measured with). */
static size_t blocking_bytes(size_t bytes)
{
    return bytes == 0 ? 0 : RINGX_MAILBOX_STEPS * slot_stride(bytes) - CACHE_LINE;
}

/* An outbox: a cache line of flags, one per part (the input, then
 * allreduce's share of the result), then the data.  The data stays off
 * the flags' line: peers poll the share's flag while its owner reduces
 * into the data, and with the data on that line (from 16 bytes on) the
 * line went back and forth between them (np 2, blocking, each against the
 * release before in the same run: allreduce 2 KiB 1.35-1.44 us against
 * 1.12-1.23 with the data from byte 16, 1.27-1.31 against 1.11-1.23 with
 * the data on lines of its own; calls of at most 48 bytes gained 0.02-0.05
 * us from one line fewer; with the share's flag on a line of its own and
 * the input's beside the data, 80 bytes on, allreduce 2 KiB took 1.38-1.52
 * against 1.17-1.33). */
#define OUTBOX_DATA_OFFSET CACHE_LINE

static size_t outbox_stride(size_t data_bytes)
{
    return slot_stride(OUTBOX_DATA_OFFSET - FLAG_BYTES + data_bytes);
}

/*
 * A region: the exposure record, the mailbox slots (two calls' worth),
 * the two blocking outboxes, a cache line of acknowledgements and the
 * posted outboxes.  The outboxes are apart from the slots: a slot's flag
 * inside an outbox's data (or an outbox's flag inside a slot's data) may
 * hold, from a call two before, the very value a later call waits for
 * (the number of that call + 1: small integers in the data of ordinary
 * programs), which then reads as there when it is not.
 */
static size_t mailboxes_end(size_t bytes)
{
    return RINGX_DIRECT_RECORD_BYTES + 2 * RINGX_MAILBOX_STEPS * slot_stride(bytes);
}

/* After the two blocking outboxes: a cache line of acknowledgements, then
 * the posted outboxes. */
static size_t posted_acks_at(size_t bytes)
{
    return mailboxes_end(bytes) + 2 * outbox_stride(blocking_bytes(bytes));
}

static size_t region_bytes(size_t bytes)
{
    return bytes ? posted_acks_at(bytes) + CACHE_LINE +
                       RINGX_POSTED_SLOTS * outbox_stride(posted_bytes(bytes))
                 : RINGX_DIRECT_RECORD_BYTES;
}

/* The large outboxes (coll_ringx_outbox_bytes): 0 where there are none,
 * or they would be no larger than a region's own blocking ones. */
static size_t large_outbox_bytes(size_t bytes)
{
    size_t large = mca_coll_ringx_component.outbox_bytes;

    large = large > RINGX_OUTBOX_MAX_BYTES ? RINGX_OUTBOX_MAX_BYTES : large;
    return bytes == 0 || large <= blocking_bytes(bytes) ? 0 : large;
}

/* The large outboxes come after the regions, LARGE_OUTBOXES per context id
 * below RINGX_LARGE_OUTBOX_COMMS (the two blocking ones, then the posted
 * ones): the regions stay small, so the window does not grow with
 * RINGX_MAILBOX_COMMS times the large size. */
#define LARGE_OUTBOXES (2 + RINGX_POSTED_SLOTS)

static size_t large_outboxes_at(size_t bytes)
{
    return RINGX_MAILBOX_COMMS * region_bytes(bytes);
}

/* Communicator comm_id's large outbox size: none beyond the first
 * RINGX_LARGE_OUTBOX_COMMS context ids. */
static size_t comm_large_outbox_bytes(uint32_t comm_id, size_t bytes)
{
    return comm_id < RINGX_LARGE_OUTBOX_COMMS ? large_outbox_bytes(bytes) : 0;
}

static size_t large_outbox_stride(size_t bytes)
{
    size_t large = large_outbox_bytes(bytes);
    return large > 0 ? outbox_stride(large) : 0;
}

static size_t window_needed(size_t bytes)
{
    return large_outboxes_at(bytes) +
           RINGX_LARGE_OUTBOX_COMMS * LARGE_OUTBOXES * large_outbox_stride(bytes);
}

_Static_assert(RINGX_OUTBOX_PARTS * FLAG_BYTES <= OUTBOX_DATA_OFFSET,
               "an outbox's flags before its data");
_Static_assert(RINGX_POSTED_SLOTS * sizeof(uint64_t) <= CACHE_LINE,
               "a posted outbox's acknowledgement per slot on one cache line");

static uint64_t *posted_acks(size_t bytes, char *region)
{
    return (uint64_t *)(region + posted_acks_at(bytes));
}

/* Where a region's outboxes of a kind start (posted: after the
 * acknowledgements) and how far apart they are: laid out once, at
 * connect, into the mailbox (outbox_in reads it in every turn of a wait). */
static void lay_out_outboxes(ringx_mailbox_t *mb, size_t bytes, uint32_t comm_id)
{
    size_t large = comm_large_outbox_bytes(comm_id, bytes);

    if (large > 0) {
        /* the same offset from the communicator's region in every window */
        size_t stride = large_outbox_stride(bytes);

        mb->outbox_at[0] = large_outboxes_at(bytes) + comm_id * LARGE_OUTBOXES * stride -
                           comm_id * region_bytes(bytes);
        mb->outbox_at[1] = mb->outbox_at[0] + 2 * stride;
        mb->outbox_stride[0] = mb->outbox_stride[1] = stride;
        mb->outbox_bytes[0] = mb->outbox_bytes[1] = large;
        return;
    }
    mb->outbox_at[0] = mailboxes_end(bytes);
    mb->outbox_stride[0] = outbox_stride(blocking_bytes(bytes));
    mb->outbox_bytes[0] = blocking_bytes(bytes);
    mb->outbox_at[1] = posted_acks_at(bytes) + CACHE_LINE;
    mb->outbox_stride[1] = outbox_stride(posted_bytes(bytes));
    mb->outbox_bytes[1] = posted_bytes(bytes);
}

/* The outbox of call n (its flags, one per part, then its data) in a
 * region: two blocking ones, RINGX_POSTED_SLOTS posted ones. */
static char *outbox_in(const ringx_mailbox_t *mb, char *region, int posted, uint64_t n)
{
    uint64_t slot = posted ? n % RINGX_POSTED_SLOTS : n & 1;
    return region + mb->outbox_at[posted] + slot * mb->outbox_stride[posted];
}

size_t ringx_mailbox_window_bytes(void)
{
    return window_needed(slot_bytes());
}

/* Where communicator comm_id's region starts in a window. */
static char *region_of(char *window, uint32_t comm_id, size_t bytes)
{
    return window + comm_id * region_bytes(bytes);
}

static char *slot_of(const ringx_mailbox_t *mb, char *region, uint32_t seq, int step)
{
    return region + RINGX_DIRECT_RECORD_BYTES +
           ((seq & 1u) * RINGX_MAILBOX_STEPS + (size_t)step) * mb->stride;
}

/* The flag written for call seq: never 0, the value of a fresh slot. */
static uint64_t flag_of(uint32_t seq)
{
    return (uint64_t)seq + 1;
}

/* Set with an outbox flag when the owner could not copy its data in, or
 * declined to (its buffers are not in host memory). */
#define FLAG_FAILED (UINT64_C(1) << 63)
#define FLAG_DECLINED (UINT64_C(1) << 62)
#define FLAG_STATUS (FLAG_FAILED | FLAG_DECLINED)

/* A call's outcome at the owner (OMPI_SUCCESS, RINGX_DIRECT_DECLINED or an
 * error) as flag bits, and back. */
static uint64_t status_bits(int status)
{
    return status == OMPI_SUCCESS           ? 0
           : status == RINGX_DIRECT_DECLINED ? FLAG_DECLINED
                                             : FLAG_FAILED;
}

static int status_of(uint64_t bits)
{
    return bits == 0 ? OMPI_SUCCESS : bits & FLAG_FAILED ? OMPI_ERROR : RINGX_DIRECT_DECLINED;
}

/* ------------------------------------------------------------ connect */

/* Whether rank has a region here that this rank uses: it is on this
 * rank's node by Open MPI's locality, whatever UCX could map. */
static int region_peer(const mca_coll_ringx_module_t *m, int rank)
{
    return rank != m->rank && ringx_nodes_on_my_node(m->comm, rank);
}

/* Whether this rank can use mailboxes on m: a window, a region for the
 * communicator, and the window of every peer on its node mapped. */
static int usable_here(const mca_coll_ringx_module_t *m, char *const *windows, size_t bytes)
{
    size_t window_bytes;
    int ok = m->comm_id < RINGX_MAILBOX_COMMS &&
             ringx_ucx_window(&window_bytes) != NULL &&
             window_bytes >= window_needed(bytes);

    ok = ok && windows != NULL;
    for (int r = 0; ok && r < m->size; r++) {
        ok = !region_peer(m, r) || windows[r] != NULL;
    }
    return ok;
}

/*
 * Where a collective's calls read the peers' buffers rather than pass
 * through the outboxes: coll_ringx_direct_buffer_bytes where it was set.
 * Measured with ringx_bench (2 cores, 2026-12-05, ratios to the stock
 * collectives): at np 2, each rank on a core of its own, allgather 32-128
 * KiB went 0.57-0.86x through the outboxes and 1.07-1.22x from the
 * buffers, reduce_scatter_block 16-128 KiB 1.21-2.12x and 2.40-3.61x;
 * allreduce stays ahead through the outboxes up to 128 KiB (64 KiB: 2.2x
 * against 1.4x).  With more ranks than cores (np 4 and 8), where every
 * read waits for its peer to be scheduled, the outboxes won at 32-128 KiB
 * (allgather np 8 64 KiB: 3.3x against 0.94x).  There, blocking calls that
 * one large outbox takes pass through it at any size: with OSU's
 * osu_allreduce and osu_allgather (2 cores, 2026-12-06, medians of 3 runs,
 * stock time / ringx's), np 4 allreduce 128 KiB - 4 MiB 1.54-3.48x against
 * 1.13-2.37x reading the buffers from 256 KiB, np 8 1.59-2.56x against
 * 1.08-2.75x, allgather 1.39-2.40x against 0.87-1.53x; with two busy
 * processes beside the job 1.65-4.09x against 0.66-2.99x.  A read of a
 * peer's buffer is a system call, and at np 8 a rank reads 14 of them per
 * allreduce, each share an eighth of the call.  Allgather passes through
 * the large outboxes at every size, several pieces beyond one: osu_allgather
 * of 8-16 MiB per rank (2026-12-06, two runs each, ms per call) took 9.9-24
 * in pieces against 12.7-31 reading the buffers at np 4, 30-77 against
 * 55-123 at np 8, and with two busy processes 12-34 against 20-50 (np 4) and
 * 34-79 against 63-145 (np 8), where the stock collective took 18-52 and
 * 64-139.  Allreduce in pieces lost under load from 16 MiB (np 4 64 MiB:
 * 127-128 against 70-81), so it reads the buffers beyond one outbox.
 */
/* Allgathers where each rank has a core (np 2 here, 2026-12-07, ringx_bench
 * -c allgather -b 4K -e 256K, ratios to the stock collective, launches of
 * each in turn): through the outboxes, 16 KiB gathered went 2.09-2.39x on
 * the quiet machine where reading the buffers gave 0.88-0.95x, and
 * 0.92-2.26x beside two busy processes (0.90-1.11x); 32 KiB 1.36-1.53x
 * quiet (0.88-1.03x) but, beside busy processes, 0.57-0.63x in 7 of 10
 * launches (the buffers 0.93-1.09x in most): one synchronisation more, and
 * the ranks, which do not yield, are scheduled out of phase.  From 64 KiB
 * the buffers won or tied.  The outboxes' engine has changed since the
 * figures above. */
#define RINGX_ALLGATHER_BUFFERS_BYTES (32 * 1024)

/* Nonblocking allgathers where ranks share cores pass through the posted
 * outboxes at any size, in pieces of one outbox of each rank's block, as
 * blocking ones pass through the large outboxes.  With 256 KiB outboxes
 * (2026-12-07, ringx_bench -f nonblocking -c allgather, 128 KiB - 16 MiB
 * gathered, against libnbc), np 4 quiet 1.26-1.70x where reading the
 * buffers from 256 KiB gave 0.86-1.57x, np 8 1.52-3.18x against
 * 0.97-2.67x; with two busy processes, up to 2 MiB np 4 1.37-2.46x against
 * 0.93-1.94x and np 8 1.12-1.51x against 0.70-1.31x, but from 4 MiB np 4
 * 0.21-0.38x against 0.67-1.04x: a synchronisation per piece, each
 * waiting for a descheduled rank.  So they read the buffers from 4 MiB,
 * where np 8 beside the busy processes ran at 0.74-0.91x from 4 to 64 MiB
 * (medians of 5 launches).  The large posted outboxes (4 MiB, the first
 * RINGX_LARGE_OUTBOX_COMMS communicators) hold up there: 1.04-1.28x, np 4
 * 1.32-1.89x against 0.98-1.20x, and quiet 1.21-1.65x (np 8) and
 * 1.37-1.87x from 8 MiB (np 4) against 0.86-1.38x (np 4 an hour later:
 * 0.88-1.30x against 0.88-0.95x); pieces of 1 MiB gave
 * np 4 16-32 MiB beside busy processes 0.70-0.78x where 2 MiB gave
 * 1.12-1.15x, and 2 MiB 1.14-1.21x where 4 MiB gave 1.31-1.38x. */

static size_t buffers_from(const mca_coll_ringx_module_t *m, ringx_coll_t coll, int crowded,
                           int set, int blocking)
{
    size_t bytes = mca_coll_ringx_component.direct_buffer_bytes;
    size_t large = comm_large_outbox_bytes(m->comm_id, slot_bytes());

    if (!set && crowded && coll == RINGX_COLL_ALLGATHER && (large > 0 || !blocking)) {
        return 0;   /* never: through the outboxes, in pieces beyond one */
    }
    if (blocking && !set && crowded && large > 0) {
        return large >= bytes ? large + 1 : bytes;      /* beyond one outbox */
    }
    if (set || coll == RINGX_COLL_ALLREDUCE || crowded) {
        return bytes;
    }
    return coll == RINGX_COLL_ALLGATHER ? RINGX_ALLGATHER_BUFFERS_BYTES : 16 * 1024;
}

/* ------------------------------------------------------------- stamps */

static struct {
    pthread_mutex_t lock;
    int made;
    opal_hash_table_t connected;    /* by hash of (context id, members): connections */
} stamps = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* How many communicators of this hash connected here before (counted). */
static uint64_t connections_before(uint64_t hash)
{
    void *found = NULL;
    uint64_t before;

    pthread_mutex_lock(&stamps.lock);
    if (!stamps.made) {
        OBJ_CONSTRUCT(&stamps.connected, opal_hash_table_t);
        stamps.made = opal_hash_table_init(&stamps.connected, 64) == OPAL_SUCCESS;
    }
    if (stamps.made) {
        (void)opal_hash_table_get_value_uint64(&stamps.connected, hash, &found);
        (void)opal_hash_table_set_value_uint64(&stamps.connected, hash,
                                               (void *)((uintptr_t)found + 1));
    }
    before = (uint64_t)(uintptr_t)found;
    pthread_mutex_unlock(&stamps.lock);
    return before;
}

/* Communicators of one context id exist one after the other, and the
 * mailboxes of each connect on all its members or on none (agreed), so the
 * count is the same on every member. */
static uint64_t stamp_for(const mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm)
{
    uint64_t h = ringx_hash_in(RINGX_HASH_START, m->comm_id), stamp;

    for (int r = 0; r < m->size; r++) {
        const opal_process_name_t *name = &ompi_comm_peer_lookup(comm, r)->super.proc_name;
        h = ringx_hash_in(h, ringx_ucx_key(name->jobid, name->vpid));
    }
    stamp = h ^ (connections_before(h) + 1) * UINT64_C(0x9e3779b97f4a7c15);
    return stamp != 0 ? stamp : 1;      /* 0: a cleared region */
}

static uint64_t *stamp_of(char *region)
{
    return (uint64_t *)(region + RINGX_REGION_STAMP_OFFSET);
}

int ringx_mailbox_stamped(mca_coll_ringx_module_t *m, int rank)
{
    ringx_mailbox_t *mb = &m->mailbox;

    if (!mb->stamped[rank]) {
        mb->stamped[rank] =
            __atomic_load_n(stamp_of(mb->remote[rank]), __ATOMIC_ACQUIRE) == mb->stamp;
    }
    return mb->stamped[rank];
}

static void wait_stamped(mca_coll_ringx_module_t *m, ringx_mem_t *mem, int rank, unsigned *idle)
{
    while (!ringx_mailbox_stamped(m, rank)) {
        ringx_mem_progress(mem, idle);
    }
}

/* Cleared before the stamp tells the peers they may use the region: a
 * communicator freed earlier may have used it, and its flags would read
 * as calls of this one.  Only what is read as a flag: the exposure record
 * and the first cache line of every slot (its flag) and outbox (its
 * flags), not the data, which a reader takes only after its flag: a
 * communicator used once stores 2.8 KiB here, not its whole region (1.3
 * MiB with the default coll_ringx_mailbox_bytes). */
static void clear_and_stamp(const ringx_mailbox_t *mb, char *region, uint64_t stamp)
{
    size_t bytes = mb->bytes, stride = slot_stride(bytes);

    memset(region, 0, RINGX_DIRECT_RECORD_BYTES);
    for (size_t i = 0; bytes > 0 && i < 2 * RINGX_MAILBOX_STEPS; i++) {
        memset(region + RINGX_DIRECT_RECORD_BYTES + i * stride, 0, CACHE_LINE);
    }
    for (uint64_t n = 0; bytes > 0 && n < 2; n++) {
        memset(outbox_in(mb, region, 0, n), 0, CACHE_LINE);
    }
    if (bytes > 0) {
        memset(posted_acks(bytes, region), 0, CACHE_LINE);
    }
    for (uint64_t n = 0; bytes > 0 && n < RINGX_POSTED_SLOTS; n++) {
        memset(outbox_in(mb, region, 1, n), 0, CACHE_LINE);
    }
    __atomic_store_n(stamp_of(region), stamp, __ATOMIC_RELEASE);
}

/* --------------------------------------------- readers of a freed region */

static uint64_t *calls_of(char *region)
{
    return (uint64_t *)(region + RINGX_REGION_CALLS_OFFSET);
}

void ringx_mailbox_calls_over(mca_coll_ringx_module_t *m)
{
    if (m->mailbox.local != NULL) {
        __atomic_store_n(calls_of(m->mailbox.local), (uint64_t)m->mailbox_seq, __ATOMIC_RELEASE);
        ringx_mailbox_ring(m);
    }
}

/*
 * A peer may still be copying out of this rank's outbox of a freed
 * communicator's last two calls (nothing in a call waits for that), and
 * the next communicator of the context id clears the region and writes
 * its own calls' flags and data there: the peer would take them for its
 * call's, or wait for ever.  So a freed communicator leaves behind who may
 * read its region, and the next one to use the region waits until they
 * have left (not at the free, where they mostly still are).
 */
typedef struct {
    char **remote;          /* the peers' regions (NULL: none left behind) */
    int size, rank;
    uint64_t stamp, calls;  /* the freed communicator's stamp and numbered calls */
    uint64_t posted;        /* its calls through the posted outboxes */
    size_t bytes;           /* its mailboxes' (the regions' layout) */
} readers_t;

static readers_t left_behind[RINGX_MAILBOX_COMMS];

/* Whether rank no longer reads this rank's region: it has finished every
 * numbered call this rank has, or it has moved on (its region carries
 * another stamp: cleared for a later communicator of the context id, so
 * the freed one's calls are over there).  Every rank of a numbered call
 * this rank finished had stamped its region, each call needing every
 * rank's input, so a stamp other than the freed one's is a later one. */
static int reader_gone(const readers_t *r, int rank)
{
    const uint64_t *acks = posted_acks(r->bytes, r->remote[rank]);
    int gone = __atomic_load_n(calls_of(r->remote[rank]), __ATOMIC_ACQUIRE) >= r->calls;

    /* the posted outboxes' last calls, one per slot, acknowledged */
    for (uint64_t n = r->posted > RINGX_POSTED_SLOTS ? r->posted - RINGX_POSTED_SLOTS : 0;
         gone && n < r->posted; n++) {
        gone = __atomic_load_n(&acks[n % RINGX_POSTED_SLOTS], __ATOMIC_ACQUIRE) >= n + 1;
    }
    return gone || __atomic_load_n(stamp_of(r->remote[rank]), __ATOMIC_ACQUIRE) != r->stamp;
}

/* Waits for the readers that a freed communicator of comm_id left here;
 * they finish their calls without this rank (they have its input). */
static void wait_readers_gone(uint32_t comm_id)
{
    readers_t r;

    pthread_mutex_lock(&stamps.lock);
    r = left_behind[comm_id];
    left_behind[comm_id].remote = NULL;
    pthread_mutex_unlock(&stamps.lock);
    for (int rank = 0; r.remote != NULL && rank < r.size; rank++) {
        while (r.remote[rank] != NULL && !reader_gone(&r, rank)) {
            if (ringx_ucx_progress_worker() == 0) {
                sched_yield();
            }
        }
    }
    free(r.remote);
}

/* Hands m's regions over to the next communicator of its context id. */
static void leave_readers_behind(mca_coll_ringx_module_t *m)
{
    readers_t r = { m->mailbox.remote, m->size,         m->rank,          m->mailbox.stamp,
                    m->mailbox_seq,   m->posted_next, m->mailbox.bytes };

    pthread_mutex_lock(&stamps.lock);
    free(left_behind[m->comm_id].remote);      /* none: the connect took them */
    left_behind[m->comm_id] = r;
    pthread_mutex_unlock(&stamps.lock);
    m->mailbox.remote = NULL;
}

void ringx_mailbox_close(void)
{
    pthread_mutex_lock(&stamps.lock);
    if (stamps.made) {
        OBJ_DESTRUCT(&stamps.connected);
        stamps.made = 0;
    }
    for (int id = 0; id < RINGX_MAILBOX_COMMS; id++) {
        free(left_behind[id].remote);
        left_behind[id].remote = NULL;
    }
    pthread_mutex_unlock(&stamps.lock);
}

/* ------------------------------------------------------------ connect */

void ringx_mailbox_agree_local(mca_coll_ringx_module_t *m, char *const *windows, int crowded,
                               int local[RINGX_MAILBOX_AGREE_INTS])
{
    size_t bytes = slot_bytes();
    int node_ranks = ompi_group_count_local_peers(m->comm->c_local_group);
    int ok = usable_here(m, windows, bytes);
    int set = ringx_direct_buffer_bytes_set();     /* looked up once, not per collective */

    local[RINGX_MB_USABLE] = ok;
    local[RINGX_MB_BYTES] = (int)bytes;
    local[RINGX_MB_BYTES_NEG] = -(int)bytes;
    /* single copies to every peer, or no direct reads of buffers */
    local[RINGX_MB_SINGLE_COPY] = ok && node_ranks == m->size && ringx_direct_single_copy(m);
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        local[RINGX_MB_DIRECT + coll] =
            ringx_int_clamp(buffers_from(m, (ringx_coll_t)coll, crowded, set, 0));
        local[RINGX_MB_BLOCKING_DIRECT + coll] =
            ringx_int_clamp(buffers_from(m, (ringx_coll_t)coll, crowded, set, 1));
    }
    local[RINGX_MB_NODE_MIN] = node_ranks;          /* MIN: the fewest ranks on a node */
    local[RINGX_MB_NODE_MAX_NEG] = -node_ranks;     /* MIN: minus the most */
    local[RINGX_MB_OUTBOX] = (int)large_outbox_bytes(bytes);
    local[RINGX_MB_OUTBOX_NEG] = -local[RINGX_MB_OUTBOX];
}

int ringx_mailbox_settings_agree(const int global[RINGX_MAILBOX_AGREE_INTS])
{
    return global[RINGX_MB_BYTES] == -global[RINGX_MB_BYTES_NEG] &&
           global[RINGX_MB_OUTBOX] == -global[RINGX_MB_OUTBOX_NEG];
}

/* Records and reports the node layout the agreement found. */
static void note_layout(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                        const int global[RINGX_MAILBOX_AGREE_INTS])
{
    m->node_ranks_min = global[RINGX_MB_NODE_MIN];
    m->node_ranks_max = -global[RINGX_MB_NODE_MAX_NEG];
    if (ringx_one_node(m)) {
        ringx_count(&mca_coll_ringx_counters.comms_one_node, 1);
        RINGX_LOG(2, "%s: %d ranks on one node", ringx_comm_label(comm), m->size);
        return;
    }
    ringx_count(&mca_coll_ringx_counters.comms_multi_node, 1);
    if (m->node_ranks_min == m->node_ranks_max) {
        RINGX_LOG(1, "%s: %d ranks on %d nodes, %d per node: no direct reads, mailboxes only "
                  "inside a node", ringx_comm_label(comm), m->size, m->size / m->node_ranks_min,
                  m->node_ranks_min);
    } else {
        RINGX_LOG(1, "%s: %d ranks on several nodes, %d to %d per node: no direct reads, "
                  "mailboxes only inside a node", ringx_comm_label(comm), m->size, m->node_ranks_min,
                  m->node_ranks_max);
    }
}

int ringx_mailbox_connect(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                          char *const *windows, const int global[RINGX_MAILBOX_AGREE_INTS])
{
    ringx_mailbox_t *mb = &m->mailbox;
    size_t bytes = slot_bytes(), window_bytes;
    char *window = ringx_ucx_window(&window_bytes);

    note_layout(m, comm, global);
    if (!global[RINGX_MB_USABLE] || !ringx_mailbox_settings_agree(global)) {
        RINGX_LOG(2, "%s: no mailboxes, no direct reads (%s)", ringx_comm_label(comm),
                  !global[RINGX_MB_USABLE] ? "some rank cannot map the window of every peer on "
                                             "its node, or the context id is too large"
                                           : "coll_ringx_mailbox_bytes or coll_ringx_outbox_bytes "
                                             "differs between ranks");
        return OMPI_SUCCESS;
    }
    mb->remote = calloc((size_t)m->size, sizeof(*mb->remote));
    mb->stamped = calloc((size_t)m->size, sizeof(*mb->stamped));
    mb->bells = calloc((size_t)m->size, sizeof(*mb->bells));
    if (mb->remote == NULL || mb->stamped == NULL || mb->bells == NULL) {
        ringx_mailbox_disconnect(m);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int r = 0; r < m->size; r++) {
        mb->remote[r] = region_peer(m, r) ? region_of(windows[r], m->comm_id, bytes) : NULL;
        mb->bells[r] = mb->remote[r] != NULL ? ringx_bell_of_window(windows[r]) : NULL;
    }
    mb->bytes = bytes;
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        int reads = ringx_one_node(m) && global[RINGX_MB_SINGLE_COPY];
        mb->buffers_from[0][coll] = reads ? (size_t)global[RINGX_MB_DIRECT + coll] : 0;
        mb->buffers_from[1][coll] = reads ? (size_t)global[RINGX_MB_BLOCKING_DIRECT + coll] : 0;
    }
    mb->single_copy = ringx_one_node(m) && ringx_direct_single_copy(m);
    mb->stride = slot_stride(bytes);
    mb->local = region_of(window, m->comm_id, bytes);
    lay_out_outboxes(mb, bytes, m->comm_id);
    mb->stamp = stamp_for(m, comm);
    mb->stamped[m->rank] = 1;
    wait_readers_gone(m->comm_id);
    clear_and_stamp(mb, mb->local, mb->stamp);
    ringx_mailbox_ring(m);
    if (ringx_one_node(m)) {
        const size_t *blocking = mb->buffers_from[1], *nonblocking = mb->buffers_from[0];
        RINGX_LOG(2, "%s: direct reads (%s; blocking calls through outboxes of %zu bytes, "
                     "nonblocking ones of %zu; out of the peers' buffers from %zu / %zu / %zu "
                     "bytes for allreduce / allgather / reduce_scatter_block, nonblocking ones "
                     "from %zu / %zu / %zu, 0: never); messages up to %zu bytes go through "
                     "mailboxes",
                  ringx_comm_label(comm), mb->single_copy ? "single copies" : "UCP gets",
                  mb->outbox_bytes[0], mb->outbox_bytes[1],
                  blocking[RINGX_COLL_ALLREDUCE], blocking[RINGX_COLL_ALLGATHER],
                  blocking[RINGX_COLL_REDUCE_SCATTER_BLOCK], nonblocking[RINGX_COLL_ALLREDUCE],
                  nonblocking[RINGX_COLL_ALLGATHER], nonblocking[RINGX_COLL_REDUCE_SCATTER_BLOCK],
                  bytes);
    }
    return OMPI_SUCCESS;
}

void ringx_mailbox_disconnect(mca_coll_ringx_module_t *m)
{
    if (m->mailbox.local != NULL && m->mailbox.remote != NULL &&
        (m->mailbox_seq > 0 || m->posted_next > 0)) {
        leave_readers_behind(m);
    }
    free(m->mailbox.remote);
    free(m->mailbox.stamped);
    free(m->mailbox.bells);
    m->mailbox.bells = NULL;
    m->mailbox.remote = NULL;
    m->mailbox.stamped = NULL;
    m->mailbox.local = NULL;
}

/* -------------------------------------------------------------- a step */

/* Device memory is copied with the call's backend, and the copy finished
 * before the flag says the data is there. */
static int copy_now(ringx_mem_t *mem, void *dst, const void *src, size_t len)
{
    int rc = ringx_mem_copy(mem, dst, src, len);
    return rc == OMPI_SUCCESS && ringx_memtype_on_device(mem->type) ? mem->ops->sync(mem->ctx)
                                                                    : rc;
}

int ringx_mailbox_put(mca_coll_ringx_module_t *m, ringx_mem_t *mem, int to, uint32_t seq,
                      int step, const void *buf, size_t len)
{
    char *slot = slot_of(&m->mailbox, m->mailbox.remote[to], seq, step);
    unsigned idle = 0;
    int rc;

    wait_stamped(m, mem, to, &idle);
    rc = copy_now(mem, slot + FLAG_BYTES, buf, len);

    if (rc == OMPI_SUCCESS) {
        __atomic_store_n((uint64_t *)slot, flag_of(seq), __ATOMIC_RELEASE);
        ringx_mailbox_ring(m);
    }
    return rc;
}

uint32_t ringx_mailbox_next_call(mca_coll_ringx_module_t *m)
{
    return m->mailbox_seq++;
}

const char *ringx_mailbox_arrived(mca_coll_ringx_module_t *m, uint32_t seq, int step)
{
    char *slot = slot_of(&m->mailbox, m->mailbox.local, seq, step);
    uint64_t flag = __atomic_load_n((const uint64_t *)slot, __ATOMIC_ACQUIRE);

    return (flag & ~FLAG_STATUS) == flag_of(seq) ? slot + FLAG_BYTES : NULL;
}

int ringx_mailbox_take(ringx_mem_t *mem, void *dst, const char *data, size_t len)
{
    return copy_now(mem, dst, data, len);
}

/* ------------------------------------------------------------ outboxes */

static char *region_at(const mca_coll_ringx_module_t *m, int rank)
{
    return rank == m->rank ? m->mailbox.local : m->mailbox.remote[rank];
}

/* Rank's outbox for call n. */
static char *outbox_at(const mca_coll_ringx_module_t *m, int posted, int rank, uint64_t n)
{
    return outbox_in(&m->mailbox, region_at(m, rank), posted, n);
}

static uint64_t *outbox_flag(const mca_coll_ringx_module_t *m, int posted, int rank, uint64_t n,
                             ringx_outbox_part_t part)
{
    return (uint64_t *)outbox_at(m, posted, rank, n) + part;
}

size_t ringx_outbox_bytes(const mca_coll_ringx_module_t *m, int posted)
{
    return m->mailbox.local != NULL && m->mailbox.bytes > 0 ? m->mailbox.outbox_bytes[posted] : 0;
}

char *ringx_outbox_data(const mca_coll_ringx_module_t *m, int posted, int rank, uint64_t n)
{
    return outbox_at(m, posted, rank, n) + OUTBOX_DATA_OFFSET;
}

int ringx_outbox_holds(const ringx_mem_t *mem)
{
    return !ringx_memtype_on_device(mem->type) && !mem->staged;
}

/* A blocking call's outbox is always free: the call before its last one
 * waited for every rank's input, given after each had finished the call
 * before (read everything it reads).  A posted one is free once every
 * rank, this one too (its own earlier call reads its own outbox), has
 * acknowledged the slot's earlier call; a peer's acknowledgements count
 * once its region is stamped: before, they may be an earlier
 * communicator's. */
int ringx_outbox_free(mca_coll_ringx_module_t *m, int posted, uint64_t n)
{
    for (int r = 0; posted && n >= RINGX_POSTED_SLOTS && r < m->size; r++) {
        if (!ringx_mailbox_stamped(m, r) ||
            __atomic_load_n(&posted_acks(m->mailbox.bytes, region_at(m, r))[n % RINGX_POSTED_SLOTS],
                            __ATOMIC_ACQUIRE) < n - RINGX_POSTED_SLOTS + 1) {
            return 0;
        }
    }
    return 1;
}

void ringx_mailbox_ring(const mca_coll_ringx_module_t *m)
{
    if (m->mailbox.bells != NULL) {
        ringx_bell_ring(m->mailbox.bells, m->size);
    }
}

void ringx_outbox_publish(mca_coll_ringx_module_t *m, int posted, uint64_t n,
                          ringx_outbox_part_t part, int status)
{
    __atomic_store_n(outbox_flag(m, posted, m->rank, n, part), (n + 1) | status_bits(status),
                     __ATOMIC_RELEASE);
    ringx_mailbox_ring(m);
}

int ringx_outbox_arrived(mca_coll_ringx_module_t *m, int posted, int rank, uint64_t n,
                         ringx_outbox_part_t part)
{
    uint64_t flag = ringx_mailbox_stamped(m, rank)
                        ? __atomic_load_n(outbox_flag(m, posted, rank, n, part), __ATOMIC_ACQUIRE)
                        : 0;
    int status = status_of(flag & FLAG_STATUS);

    return (flag & ~FLAG_STATUS) != n + 1 ? RINGX_PENDING
           : status == OMPI_SUCCESS       ? RINGX_DONE
                                          : status;
}

void ringx_outbox_done(mca_coll_ringx_module_t *m, int posted, uint64_t n)
{
    if (posted) {
        __atomic_store_n(&posted_acks(m->mailbox.bytes, m->mailbox.local)[n % RINGX_POSTED_SLOTS],
                         n + 1, __ATOMIC_RELEASE);
        ringx_mailbox_ring(m);
    }
}
