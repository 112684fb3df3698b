/*
 * nonblocking.c - MPI_Iallreduce, MPI_Iallgather and MPI_Ireduce_scatter_block
 * served by ringx, many at a time.
 *
 *   out_of_order  several calls of all three collectives, small to large,
 *                 outstanding at once on two communicators, completed with
 *                 MPI_Waitall in reverse order, an MPI_Testany loop that
 *                 exchanges point-to-point messages between tests, MPI_Test
 *                 loops and MPI_Waitsome;
 *   mixed         blocking calls on a communicator while nonblocking ones
 *                 are outstanding on it (the blocking ones use the mailboxes
 *                 and outboxes, the nonblocking ones must not disturb them);
 *   many_small    more small calls outstanding on one communicator than it
 *                 has posted outboxes, completed in different orders;
 *   progress      rank 0 starts a large nonblocking call and then a blocking
 *                 one, while the other ranks wait for the nonblocking one
 *                 first: rank 0's blocking call must advance the nonblocking
 *                 one (MPI's progress rule), or the job hangs;
 *   threads       (MPI_THREAD_MULTIPLE) two threads, each on its own
 *                 communicator, nonblocking calls completed by MPI_Test loops;
 *   persistent    MPI_Allreduce_init and the like (MPIX_..._init on Open MPI
 *                 4.1): each request started 1000 times (large ones 20),
 *                 the input changed between starts, and three requests
 *                 started together with MPI_Startall;
 *   soak          a random mix of blocking, nonblocking and persistent calls
 *                 of all three collectives and many sizes, several
 *                 outstanding, completed in a different order on each rank.
 *
 * With --expect-staged (run with coll_ringx_stage_host_buffers 1), every
 * served call, each persistent start too, must also be counted by
 * coll_ringx_<coll>_staged.
 *
 * Every result is checked against a reference computed locally (integers:
 * exact), and the pvars must show that ringx served every call as a
 * nonblocking one (coll_ringx_<coll>_nonblocking), every start as a
 * persistent one (coll_ringx_<coll>_persistent).
 */
#include <mpi.h>
#include <mpi-ext.h>    /* MPIX_..._init: Open MPI 4.1's persistent collectives */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringx_test_util.h"

enum { ALLREDUCE, ALLGATHER, RSB, NCOLL };
static const char *const colls[NCOLL] = { "allreduce", "allgather", "reduce_scatter_block" };

/* One nonblocking call and its buffers. */
typedef struct nbcall {
    int coll;
    size_t count;           /* allreduce: elements; the others: per rank */
    uint64_t key;           /* of the inputs */
    MPI_Comm comm;
    int32_t *in, *out;
    MPI_Request req;
} nbcall_t;

static int32_t input_of(uint64_t key, int rank, size_t i)
{
    return (int32_t)(uint32_t)rx_mix64(key ^ ((uint64_t)rank << 40) ^ i);
}

static size_t inputs_of(const nbcall_t *c, int size)
{
    return c->coll == RSB ? c->count * (size_t)size : c->count;
}

static size_t outputs_of(const nbcall_t *c, int size)
{
    return c->coll == ALLGATHER ? c->count * (size_t)size : c->count;
}

/* The call's buffers, filled for key. */
static void nb_prepare(nbcall_t *c, int coll, size_t count, uint64_t key, MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    *c = (nbcall_t){ coll, count, key, comm, NULL, NULL, MPI_REQUEST_NULL };
    c->in = malloc(4 * inputs_of(c, size) + 4);
    c->out = malloc(4 * outputs_of(c, size) + 4);
}

static void nb_fill(nbcall_t *c, uint64_t key)
{
    int rank, size;
    MPI_Comm_rank(c->comm, &rank);
    MPI_Comm_size(c->comm, &size);

    c->key = key;
    for (size_t i = 0; i < inputs_of(c, size); i++) {
        c->in[i] = input_of(key, rank, i);
    }
    memset(c->out, 0xA5, 4 * outputs_of(c, size));
}

static void nb_post(nbcall_t *c, int coll, size_t count, uint64_t key, MPI_Comm comm)
{
    nb_prepare(c, coll, count, key, comm);
    nb_fill(c, key);
    if (coll == ALLREDUCE) {
        MPI_Iallreduce(c->in, c->out, (int)count, MPI_INT32_T, MPI_SUM, comm, &c->req);
    } else if (coll == ALLGATHER) {
        MPI_Iallgather(c->in, (int)count, MPI_INT32_T, c->out, (int)count, MPI_INT32_T, comm,
                       &c->req);
    } else {
        MPI_Ireduce_scatter_block(c->in, c->out, (int)count, MPI_INT32_T, MPI_SUM, comm,
                                  &c->req);
    }
}

/* Checks the result (exact: sums wrap in uint32_t). */
static void nb_verify(nbcall_t *c, const char *how)
{
    int rank, size;
    MPI_Comm_rank(c->comm, &rank);
    MPI_Comm_size(c->comm, &size);
    size_t nout = c->coll == ALLGATHER ? c->count * (size_t)size : c->count;
    size_t bad = 0, first = 0;
    rx_call_t call = { colls[c->coll], "MPI_INT32_T", c->coll == ALLGATHER ? "-" : "MPI_SUM",
                       c->count, 0, c->comm };

    for (size_t i = 0; i < nout; i++) {
        uint32_t want = 0;
        if (c->coll == ALLGATHER) {
            want = (uint32_t)input_of(c->key, (int)(i / c->count), i % c->count);
        } else {
            size_t at = c->coll == RSB ? (size_t)rank * c->count + i : i;
            for (int r = 0; r < size; r++) {
                want += (uint32_t)input_of(c->key, r, at);
            }
        }
        if ((uint32_t)c->out[i] != want && bad++ == 0) {
            first = i;
        }
    }
    rx_check(&call, bad == 0, "%s: %zu of %zu elements wrong, first at %zu", how, bad, nout,
             first);
}

static void nb_check(nbcall_t *c, const char *how)
{
    nb_verify(c, how);
    free(c->in);
    free(c->out);
}

enum { AS_NONBLOCKING, AS_PERSISTENT, AS_ANY, AS_STAGED };

/* Calls of all three collectives that ringx served: as nonblocking ones,
 * as starts of persistent ones, in any form, or through the staging
 * pipeline (any form). */
static unsigned long long served_as(int how)
{
    unsigned long long n = 0;
    for (int i = 0; i < NCOLL; i++) {
        rx_counters_t k;
        rx_counters_read(colls[i], NULL, &k);
        n += how == AS_PERSISTENT    ? k.persistent
             : how == AS_NONBLOCKING ? k.nonblocking
             : how == AS_STAGED      ? k.staged
                                     : k.served;
    }
    return n;
}

/* ------------------------------------------------------------ cases */

enum { NCALLS = 9 };

/* NCALLS calls over two communicators, sizes from a few elements to about
 * a megabyte and more per rank. */
static void post_set(nbcall_t *calls, MPI_Comm a, MPI_Comm b, uint64_t round)
{
    static const size_t counts[NCALLS] = { 1, 7, 1000, 3, 65537, 257, 300007, 0, 13 };
    for (int i = 0; i < NCALLS; i++) {
        nb_post(&calls[i], i % NCOLL, counts[i], rx_mix(round, (uint64_t)i), i % 2 ? b : a);
    }
}

static void out_of_order(MPI_Comm a, MPI_Comm b)
{
    nbcall_t calls[NCALLS];
    MPI_Request reqs[NCALLS];
    int rank, size, left, right;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;

    /* Waitall, the requests in reverse order */
    post_set(calls, a, b, 1);
    for (int i = 0; i < NCALLS; i++) {
        reqs[i] = calls[NCALLS - 1 - i].req;
    }
    MPI_Waitall(NCALLS, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < NCALLS; i++) {
        nb_check(&calls[i], "Waitall");
    }

    /* Testany, with point-to-point traffic between the tests */
    post_set(calls, a, b, 2);
    for (int i = 0; i < NCALLS; i++) {
        reqs[i] = calls[i].req;
    }
    /* every rank exchanges the same number of messages, however many
     * tests its calls take */
    for (int left_to_do = NCALLS, exchanges = 0; left_to_do > 0 || exchanges < 20;) {
        int index, flag, got;
        if (left_to_do > 0) {
            MPI_Testany(NCALLS, reqs, &index, &flag, MPI_STATUS_IGNORE);
            left_to_do = flag && index == MPI_UNDEFINED ? 0 : left_to_do - (flag != 0);
        }
        if (exchanges < 20) {
            MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            rx_check(NULL, got == left, "point-to-point message %d from rank %d", got, left);
            exchanges++;
        }
    }
    for (int i = 0; i < NCALLS; i++) {
        nb_check(&calls[i], "Testany");
    }

    /* Test loops, last request first */
    post_set(calls, a, b, 3);
    for (int i = NCALLS - 1; i >= 0; i--) {
        int flag = 0;
        while (!flag) {
            MPI_Test(&calls[i].req, &flag, MPI_STATUS_IGNORE);
        }
    }
    for (int i = 0; i < NCALLS; i++) {
        nb_check(&calls[i], "Test");
    }

    /* Waitsome */
    post_set(calls, a, b, 4);
    for (int i = 0; i < NCALLS; i++) {
        reqs[i] = calls[i].req;
    }
    for (int done = 0; done < NCALLS;) {
        int outcount, indices[NCALLS];
        MPI_Waitsome(NCALLS, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
        done += outcount == MPI_UNDEFINED ? NCALLS : outcount;
    }
    for (int i = 0; i < NCALLS; i++) {
        nb_check(&calls[i], "Waitsome");
    }
}

/* Blocking calls on comm between the start and the end of nonblocking ones. */
static void mixed(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    for (int iter = 0; iter < 200; iter++) {
        nbcall_t small, large;
        int32_t in[64], out[64], gathered[64 * 64];
        rx_call_t call = { "allreduce", "MPI_INT32_T", "MPI_SUM", 64, 0, comm };

        nb_post(&small, iter % NCOLL, 5 + (size_t)iter % 17, rx_mix(5, (uint64_t)iter), comm);
        nb_post(&large, (iter + 1) % NCOLL, iter % 10 == 0 ? 100003 : 301,
                rx_mix(6, (uint64_t)iter), comm);
        for (int i = 0; i < 64; i++) {
            in[i] = rank * 1000 + i + iter;
        }
        MPI_Allreduce(in, out, 64, MPI_INT32_T, MPI_SUM, comm);
        for (int i = 0; i < 64; i++) {
            rx_check(&call, out[i] == 1000 * size * (size - 1) / 2 + size * (i + iter),
                     "blocking allreduce between nonblocking calls, element %d", i);
        }
        if (size <= 64) {
            MPI_Allgather(in, 1, MPI_INT32_T, gathered, 1, MPI_INT32_T, comm);
            for (int r = 0; r < size; r++) {
                rx_check(&call, gathered[r] == r * 1000 + iter,
                         "blocking allgather between nonblocking calls, block %d", r);
            }
        }
        MPI_Wait(&large.req, MPI_STATUS_IGNORE);
        MPI_Wait(&small.req, MPI_STATUS_IGNORE);
        nb_check(&small, "mixed, small");
        nb_check(&large, "mixed, large");
    }
}

/* Rank 0 goes into a blocking call while the others wait for the
 * nonblocking one: only if rank 0's wait advances the nonblocking call can
 * the others leave their MPI_Wait and join the blocking call. */
enum { NSMALL = 19 };

/* Calls of all three collectives through the mailboxes or outboxes, in
 * all (coll_ringx_<coll>_mailbox). */
static unsigned long long through_mailboxes(void)
{
    unsigned long long n = 0;
    for (int i = 0; i < NCOLL; i++) {
        rx_counters_t k;
        rx_counters_read(colls[i], NULL, &k);
        n += k.mailbox;
    }
    return n;
}

/* Whether comm's ranks share a node (Open MPI's locality, as ringx's). */
static int one_node(MPI_Comm comm)
{
    MPI_Comm node;
    int node_size, size;

    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_size(comm, &size);
    MPI_Comm_free(&node);
    return node_size == size;
}

/* More small calls outstanding on one communicator than it has posted
 * outboxes (4), so that later calls wait for their outbox to be read;
 * completed in reverse order on even ranks and by MPI_Testsome in a
 * rank-dependent order on odd ones.  want: how many must have gone
 * through the posted outboxes (-1: not checked); on one node, all, or
 * none where the ranks stage their buffers (the outboxes hold host data
 * only: every call is declined there and takes a message-based
 * algorithm). */
static void many_small(MPI_Comm comm, int want)
{
    nbcall_t calls[NSMALL];
    MPI_Request reqs[NSMALL];
    int rank, size, done = 0, idx[NSMALL];
    unsigned long long before, through;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    before = through_mailboxes();
    for (int i = 0; i < NSMALL; i++) {
        /* reduce_scatter_block's inputs of about 12 KB, every other
         * allreduce of about 16 KB (reduced by shares, two flags per
         * outbox), the others' a few hundred bytes: all fit the 64 KiB
         * outboxes */
        int larger = i % NCOLL == RSB || (i % NCOLL == ALLREDUCE && i % 2 == 0);
        size_t count = i % NCOLL == RSB ? (3000 + (size_t)i) / (size_t)size
                       : larger         ? 4000 + (size_t)i
                                        : 1 + (size_t)(i * 7) % 97;
        nb_post(&calls[i], i % NCOLL, count, rx_mix(7, (uint64_t)i), comm);
    }
    for (int i = 0; i < NSMALL; i++) {
        reqs[i] = calls[rank % 2 ? (i + rank) % NSMALL : NSMALL - 1 - i].req;
    }
    if (rank % 2 == 0) {
        MPI_Waitall(NSMALL, reqs, MPI_STATUSES_IGNORE);
    } else {
        while (done < NSMALL) {
            int n = 0;
            MPI_Testsome(NSMALL, reqs, &n, idx, MPI_STATUSES_IGNORE);
            done += n > 0 ? n : 0;
        }
    }
    through = through_mailboxes() - before;
    for (int i = 0; i < NSMALL; i++) {
        nb_check(&calls[i], "many small outstanding");
    }
    rx_check(NULL, want < 0 || through == (unsigned long long)want,
             "%llu of %d small nonblocking calls went through the posted outboxes; expected %d",
             through, NSMALL, want);
}

static void progress(MPI_Comm comm)
{
    int rank;
    int32_t x, sum;
    nbcall_t big;

    MPI_Comm_rank(comm, &rank);
    nb_post(&big, ALLREDUCE, 1 << 20, 77, comm);
    x = rank;
    if (rank == 0) {
        MPI_Allreduce(&x, &sum, 1, MPI_INT32_T, MPI_SUM, comm);
        MPI_Wait(&big.req, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&big.req, MPI_STATUS_IGNORE);
        MPI_Allreduce(&x, &sum, 1, MPI_INT32_T, MPI_SUM, comm);
    }
    nb_check(&big, "progress");
}

static void *thread_main(void *arg)
{
    MPI_Comm comm = *(MPI_Comm *)arg;
    for (int iter = 0; iter < 50; iter++) {
        nbcall_t c[NCOLL];
        for (int k = 0; k < NCOLL; k++) {
            nb_post(&c[k], k, 1 + (size_t)(iter * 37 + k * 1000) % 20000, rx_mix(9, (uint64_t)iter),
                    comm);
        }
        for (int k = NCOLL - 1; k >= 0; k--) {
            int flag = 0;
            while (!flag) {
                MPI_Test(&c[k].req, &flag, MPI_STATUS_IGNORE);
            }
            nb_check(&c[k], "threads");
        }
    }
    return NULL;
}

/* MPI 4.0's persistent collectives: Open MPI 4.1's pcollreq extension,
 * the standard names in Open MPI 5. */
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define PERSISTENT(name) MPIX_##name##_init
#elif OMPI_MAJOR_VERSION >= 5
#define PERSISTENT(name) MPI_##name##_init
#endif

enum { STARTS = 1000, LARGE_STARTS = 20 };

#ifdef PERSISTENT
static void persistent_init(nbcall_t *c)
{
    if (c->coll == ALLREDUCE) {
        PERSISTENT(Allreduce)(c->in, c->out, (int)c->count, MPI_INT32_T, MPI_SUM, c->comm,
                              MPI_INFO_NULL, &c->req);
    } else if (c->coll == ALLGATHER) {
        PERSISTENT(Allgather)(c->in, (int)c->count, MPI_INT32_T, c->out, (int)c->count,
                              MPI_INT32_T, c->comm, MPI_INFO_NULL, &c->req);
    } else {
        PERSISTENT(Reduce_scatter_block)(c->in, c->out, (int)c->count, MPI_INT32_T, MPI_SUM,
                                         c->comm, MPI_INFO_NULL, &c->req);
    }
}

/* Each collective's request, small (STARTS starts) and large
 * (LARGE_STARTS), then all three at once with MPI_Startall. */
static unsigned long long persistent(MPI_Comm comm)
{
    static const size_t counts[2] = { 1000, 300007 };
    unsigned long long starts = 0;
    nbcall_t c[NCOLL];
    MPI_Request reqs[NCOLL];

    for (int k = 0; k < NCOLL; k++) {
        for (int big = 0; big < 2; big++) {
            int n = big ? LARGE_STARTS : STARTS;
            nb_prepare(&c[k], k, counts[big], 0, comm);
            persistent_init(&c[k]);
            for (int it = 0; it < n; it++) {
                nb_fill(&c[k], rx_mix(11 + (uint64_t)big, (uint64_t)it));
                MPI_Start(&c[k].req);
                MPI_Wait(&c[k].req, MPI_STATUS_IGNORE);
                nb_verify(&c[k], big ? "persistent, large" : "persistent");
            }
            MPI_Request_free(&c[k].req);
            free(c[k].in);
            free(c[k].out);
            starts += (unsigned long long)n;
        }
    }
    for (int k = 0; k < NCOLL; k++) {
        nb_prepare(&c[k], k, 4099, 0, comm);
        persistent_init(&c[k]);
    }
    for (int it = 0; it < 100; it++) {
        for (int k = 0; k < NCOLL; k++) {
            nb_fill(&c[k], rx_mix(13 + (uint64_t)k, (uint64_t)it));
            reqs[k] = c[k].req;
        }
        MPI_Startall(NCOLL, reqs);
        MPI_Waitall(NCOLL, reqs, MPI_STATUSES_IGNORE);
        for (int k = 0; k < NCOLL; k++) {
            nb_verify(&c[k], "persistent, Startall");
        }
    }
    for (int k = 0; k < NCOLL; k++) {
        MPI_Request_free(&c[k].req);
        free(c[k].in);
        free(c[k].out);
    }
    return starts + 100 * NCOLL;
}
#else
static unsigned long long persistent(MPI_Comm comm)
{
    (void)comm;
    printf("note: no persistent collectives in this MPI: persistent case skipped\n");
    return 0;
}
#endif

/* ------------------------------------------------------------- soak */

enum { SOAK_STEPS = 1500, SOAK_OUTSTANDING = 6 };

/* What the soak asked ringx to serve, to compare with the pvars. */
typedef struct soak_tally {
    unsigned long long blocking, nonblocking, starts;
} soak_tally_t;

static void blocking_call(int coll, size_t count, uint64_t key, MPI_Comm comm)
{
    nbcall_t c;
    nb_prepare(&c, coll, count, key, comm);
    nb_fill(&c, key);
    if (coll == ALLREDUCE) {
        MPI_Allreduce(c.in, c.out, (int)count, MPI_INT32_T, MPI_SUM, comm);
    } else if (coll == ALLGATHER) {
        MPI_Allgather(c.in, (int)count, MPI_INT32_T, c.out, (int)count, MPI_INT32_T, comm);
    } else {
        MPI_Reduce_scatter_block(c.in, c.out, (int)count, MPI_INT32_T, MPI_SUM, comm);
    }
    nb_check(&c, "soak, blocking");
}

/* Completes outstanding call i (a persistent one stays allocated). */
static void soak_complete(nbcall_t *calls, int *persistent, int i)
{
    MPI_Wait(&calls[i].req, MPI_STATUS_IGNORE);
    if (persistent[i]) {
        nb_verify(&calls[i], "soak, persistent");
    } else {
        nb_check(&calls[i], "soak, nonblocking");
        calls[i].in = NULL;
    }
}

/* A random mix, the same sequence on every rank, of blocking, nonblocking
 * and persistent calls on comm, up to SOAK_OUTSTANDING outstanding at
 * once (slots 0..NCOLL-1 hold one persistent request per collective),
 * completed in an order that differs from rank to rank. */
static soak_tally_t soak(MPI_Comm comm, int with_persistent)
{
    static const size_t counts[] = { 1, 2, 3, 7, 13, 1000, 4099, 65537, 300007 };
    nbcall_t calls[SOAK_OUTSTANDING];
    int persistent[SOAK_OUTSTANDING] = { 0 }, busy[SOAK_OUTSTANDING] = { 0 }, rank;
    soak_tally_t tally = { 0, 0, 0 };

    MPI_Comm_rank(comm, &rank);
#ifdef PERSISTENT
    for (int k = 0; k < NCOLL && with_persistent; k++) {
        nb_prepare(&calls[k], k, counts[5 + k], 0, comm);
        persistent_init(&calls[k]);
        persistent[k] = 1;
    }
#endif
    for (int step = 0; step < SOAK_STEPS; step++) {
        uint64_t r = rx_mix(21, (uint64_t)step), key = rx_mix(22, (uint64_t)step);
        int coll = (int)(r % NCOLL), kind = (int)(r / 3 % 3), slot = -1;
        size_t count = counts[r / 9 % (sizeof counts / sizeof counts[0] - (r % 7 ? 2 : 0))];
        int first_free = with_persistent ? NCOLL : 0;

        /* Which calls are still outstanding differs from rank to rank, so
         * a rank completes what it must to start the same calls as every
         * other (MPI's ordering rule), never skips one. */
        if (kind == 2 && with_persistent) {
            if (busy[coll]) {
                soak_complete(calls, persistent, coll);
            }
            nb_fill(&calls[coll], key);
            MPI_Start(&calls[coll].req);
            busy[coll] = 1;
            tally.starts++;
        } else if (kind == 1) {
            for (int i = first_free; i < SOAK_OUTSTANDING && slot < 0; i++) {
                slot = busy[i] ? slot : i;
            }
            if (slot < 0) {
                slot = first_free + (int)(r % (uint64_t)(SOAK_OUTSTANDING - first_free));
                soak_complete(calls, persistent, slot);
            }
            nb_post(&calls[slot], coll, count, key, comm);
            busy[slot] = 1;
            tally.nonblocking++;
        } else {
            blocking_call(coll, count, key, comm);
            tally.blocking++;
        }
        /* each rank completes a different call now and then */
        int victim = (int)(rx_mix(23 + (uint64_t)rank, (uint64_t)step) % SOAK_OUTSTANDING);
        if (busy[victim] && (r >> 20) % 3 == 0) {
            soak_complete(calls, persistent, victim);
            busy[victim] = 0;
        }
    }
    for (int i = 0; i < SOAK_OUTSTANDING; i++) {
        if (busy[i]) {
            soak_complete(calls, persistent, i);
        }
        if (persistent[i]) {
            MPI_Request_free(&calls[i].req);
            free(calls[i].in);
            free(calls[i].out);
        }
    }
    return tally;
}

static void soak_checked(MPI_Comm comm)
{
    unsigned long long nb = served_as(AS_NONBLOCKING), starts = served_as(AS_PERSISTENT), all = served_as(AS_ANY);
#ifdef PERSISTENT
    soak_tally_t t = soak(comm, 1);
#else
    soak_tally_t t = soak(comm, 0);
#endif
    int size;
    MPI_Comm_size(comm, &size);
    if (size < 2) {
        return;
    }
    rx_check(NULL, served_as(AS_NONBLOCKING) - nb == t.nonblocking,
             "soak: ringx served %llu nonblocking calls; expected %llu", served_as(AS_NONBLOCKING) - nb,
             t.nonblocking);
    rx_check(NULL, served_as(AS_PERSISTENT) - starts == t.starts,
             "soak: ringx served %llu persistent starts; expected %llu", served_as(AS_PERSISTENT) - starts,
             t.starts);
    rx_check(NULL, served_as(AS_ANY) - all == t.blocking + t.nonblocking + t.starts,
             "soak: ringx served %llu calls in all; expected %llu", served_as(AS_ANY) - all,
             t.blocking + t.nonblocking + t.starts);
}

static void threads(MPI_Comm a, MPI_Comm b)
{
    pthread_t t;
    pthread_create(&t, NULL, thread_main, &b);
    thread_main(&a);
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Comm a, b, c, d;
    unsigned long long before;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rx_pvar_init() != 0 || !rx_component_loaded()) {
        rx_fail("the ringx component is not loaded (no coll_ringx pvars)");
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &b);     /* reversed */
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_dup(MPI_COMM_WORLD, &d);

    /* --expect-staged: every call served through the staging pipeline
     * (run with coll_ringx_stage_host_buffers 1), persistent starts each */
    int expect_staged = argc > 1 && strcmp(argv[1], "--expect-staged") == 0;
    int node = one_node(a);         /* before the counts: it runs collectives */
    unsigned long long any_before = served_as(AS_ANY), staged_before = served_as(AS_STAGED);
    unsigned long long persistent_before = served_as(AS_PERSISTENT), persistent_starts;
    before = served_as(AS_NONBLOCKING);
    out_of_order(a, b);
    mixed(a);
    progress(b);
    many_small(a, !node ? -1 : expect_staged ? 0 : NSMALL);
    if (provided == MPI_THREAD_MULTIPLE) {
        threads(c, d);
    } else if (rank == 0) {
        printf("note: no MPI_THREAD_MULTIPLE (provided %d): threads case skipped\n", provided);
    }
    persistent_starts = persistent(c);
    /* out_of_order: 4 rounds of NCALLS (one empty allgather may not reach
     * ringx, see ringx_correctness); mixed: 2 x 200; progress: 1;
     * many_small: NSMALL; threads: 2 x 50 x 3 */
    unsigned long long want = 4 * NCALLS + 400 + 1 + NSMALL +
                              (provided == MPI_THREAD_MULTIPLE ? 300 : 0);
    unsigned long long got = served_as(AS_NONBLOCKING) - before;
    rx_check(NULL, size < 2 || got == want || got == want - 4,
             "ringx served %llu nonblocking calls; expected %llu", got, want);
    got = served_as(AS_PERSISTENT) - persistent_before;
    rx_check(NULL, size < 2 || got == persistent_starts,
             "ringx served %llu starts of persistent calls; expected %llu", got, persistent_starts);
    soak_checked(b);    /* counts its own calls */
    got = served_as(AS_STAGED) - staged_before;
    rx_check(NULL, !expect_staged || got == served_as(AS_ANY) - any_before,
             "%llu calls served through the staging pipeline; expected all %llu", got,
             served_as(AS_ANY) - any_before);

    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    MPI_Comm_free(&c);
    MPI_Comm_free(&d);
    rx_pvar_finalize();
    int status = rx_finish("nonblocking");
    MPI_Finalize();
    return status;
}
