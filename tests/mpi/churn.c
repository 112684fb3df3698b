/*
 * churn.c - communicators made, used once and freed, many times over.
 *
 * Libraries that make a communicator per operation (dup, split) make
 * ringx connect thousands of times.  Each iteration here makes one
 * (MPI_Comm_dup, MPI_Comm_create_group of all ranks but the last,
 * MPI_Comm_split into halves, MPI_Comm_split with the ranks reversed, in
 * turn), runs one of the three collectives on it
 * --calls times with a count that changes, checks every result against a
 * reference computed here, and frees it.  Proven through the pvars: ringx
 * served every call on a communicator of two ranks or more and connected
 * every such communicator, and every one without a message
 * (coll_ringx_comms_from_world: from what MPI_COMM_WORLD's connection in
 * MPI_Init learnt) and with no exchange of worker addresses
 * (coll_ringx_comms_exchanged).  The calls go through the mailboxes and
 * outboxes, in shared memory that earlier communicators of the same
 * context id wrote: a flag left there, or a peer's write before the owner
 * has cleared it, would give a wrong result or a hang.  The resident set size and the number of open file descriptors must stay
 * flat: measured after the first tenth of the iterations and at the end.
 *
 *   churn [--iterations N] [--calls C] [--rss-growth-kib K] [--slow-reader US]
 *                                       (defaults 10000, 1, 1024, 0)
 */
#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringx_pvars.h"
#include "ringx_test_util.h"

static const char *const colls[] = { "allreduce", "allgather", "reduce_scatter_block" };
enum { NCOLLS = 3, MAX_COUNT = 7, MAX_RANKS = 64 };

static int world_rank, world_size, calls = 1;

enum { KINDS = 4 };

/* Iteration i's communicator; MPI_COMM_NULL on a rank not in it.  The
 * second kind follows a dup of MPI_COMM_WORLD and leaves out the last
 * rank: its members give it the context id the dup had, and their regions
 * of the dup's shared memory to its calls, while the last rank (made slow
 * by --slow-reader) may still be reading them for the dup's last call. */
static MPI_Comm make_comm(int i)
{
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Group world, all_but_last;
    int last = world_size - 1;

    switch (i % KINDS) {
    case 0:
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        break;
    case 1:
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_excl(world, 1, &last, &all_but_last);
        if (world_rank != last) {
            MPI_Comm_create_group(MPI_COMM_WORLD, all_but_last, 1, &comm);
        }
        MPI_Group_free(&all_but_last);
        MPI_Group_free(&world);
        break;
    case 2:
        MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &comm);
        break;
    default:
        MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &comm);
        break;
    }
    return comm;
}

/* --slow-reader US: the last rank sleeps US microseconds in every call
 * through the outboxes before it reads its peers' (ringx's testing
 * parameter), set before MPI_Init from what mpirun tells the process. */
static void slow_last_reader(const char *us)
{
    const char *rank = getenv("OMPI_COMM_WORLD_RANK"), *size = getenv("OMPI_COMM_WORLD_SIZE");

    if (rank != NULL && size != NULL && atoi(rank) == atoi(size) - 1) {
        setenv("OMPI_MCA_coll_ringx_test_outbox_delay_us", us, 1);
    }
}

/* The input element k of comm rank r in iteration i. */
static int input(int i, int r, int k)
{
    return (i % 101) * 3 + r * 5 + k;
}

/* Collective coll on comm with count elements (per rank's block), the
 * result checked; 1 if right. */
static int call_checked(int i, int coll, int count, MPI_Comm comm)
{
    int in[MAX_COUNT * MAX_RANKS], out[MAX_COUNT * MAX_RANKS], rank, size, ok = 1;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int k = 0; k < count * size; k++) {
        in[k] = input(i, rank, k);
    }
    if (coll == 0) {
        MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
    } else if (coll == 1) {
        MPI_Allgather(in, count, MPI_INT, out, count, MPI_INT, comm);
    } else {
        MPI_Reduce_scatter_block(in, out, count, MPI_INT, MPI_SUM, comm);
    }
    for (int k = 0; k < (coll == 1 ? count * size : count); k++) {
        int want = 0;
        for (int r = 0; r < size; r++) {
            want += coll == 0 ? input(i, r, k) : input(i, r, rank * count + k);
        }
        /* allgather: block j is the input of comm rank j */
        want = coll == 1 ? input(i, k / count, k % count) : want;
        ok = ok && out[k] == want;
    }
    return ok;
}

static long resident_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) {
            resident = 0;
        }
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");

    if (d == NULL) {
        return -1;
    }
    while (readdir(d) != NULL) {
        n++;
    }
    closedir(d);
    return n;
}

static unsigned long long counter(const char *name)
{
    unsigned long long v = 0;
    (void)ringx_pvar_read(name, &v);
    return v;
}

static unsigned long long comms_connected(void)
{
    return counter("coll_ringx_comms_one_node") + counter("coll_ringx_comms_multi_node");
}

/* Iteration i's calls on comm, each checked; 1 if all were right.  In
 * every fourth iteration one rank comes late to every call, so that the
 * others reach the shared memory first: they would take a flag that a
 * freed communicator left in this rank's region, or write to the region
 * before this rank has cleared it. */
static int calls_checked(int i, int coll, int count, MPI_Comm comm)
{
    int right = 1, rank, size;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int k = 0; k < calls; k++) {
        if (i % 4 == 0 && rank == (i / 4) % size) {
            usleep(200);
        }
        right = call_checked(i + k, coll, count, comm) && right;
    }
    return right;
}

/* Whether ringx served the calls and connected the communicator, without
 * a message: the counters read around the calls alone, as the making of
 * the communicator runs collectives of its own on MPI_COMM_WORLD. */
static int served_by_ringx(int i, int coll, int count, MPI_Comm comm, int *right)
{
    unsigned long long served = rx_served(colls[coll]), comms = comms_connected(),
                       quiet = counter("coll_ringx_comms_from_world");

    *right = calls_checked(i, coll, count, comm);
    return rx_served(colls[coll]) - served == (unsigned long long)calls &&
           comms_connected() - comms == 1 && counter("coll_ringx_comms_from_world") - quiet == 1;
}

int main(int argc, char **argv)
{
    int iterations = 10000, wrong = 0, unproven = 0, fds_early = 0;
    long growth_kib = 1024, rss_early = 0;
    unsigned long long exchanged0;

    for (int a = 1; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "--slow-reader") == 0) {
            slow_last_reader(argv[a + 1]);
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    for (int a = 1; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "--iterations") == 0) {
            iterations = atoi(argv[a + 1]);
        } else if (strcmp(argv[a], "--calls") == 0) {
            calls = atoi(argv[a + 1]);
        } else if (strcmp(argv[a], "--rss-growth-kib") == 0) {
            growth_kib = atol(argv[a + 1]);
        }
    }
    if (rx_pvar_init() != 0 || !rx_component_loaded() || world_size > MAX_RANKS) {
        rx_fail("the ringx component is not loaded (no coll_ringx pvars), or too many ranks");
    }
    (void)call_checked(0, 0, 1, MPI_COMM_WORLD);       /* MPI_COMM_WORLD connects */
    exchanged0 = counter("coll_ringx_comms_exchanged");
    for (int i = 0; i < iterations; i++) {
        MPI_Comm comm = make_comm(i);
        int coll = (i / KINDS) % NCOLLS, count = 1 + i % MAX_COUNT, size, right = 1;

        if (comm != MPI_COMM_NULL) {
            MPI_Comm_size(comm, &size);
            if (size > 1) {
                unproven += !served_by_ringx(i, coll, count, comm, &right);
            } else {
                right = calls_checked(i, coll, count, comm);    /* not ringx's: one rank */
            }
            wrong += !right;
            MPI_Comm_free(&comm);
        }
        if (i + 1 == iterations / 10) {
            rss_early = resident_kib();
            fds_early = open_fds();
        }
    }
    long rss_end = resident_kib();
    int fds_end = open_fds();

    rx_check(NULL, wrong == 0, "%d of %d iterations gave wrong results", wrong, iterations);
    rx_check(NULL, unproven == 0, "%d of %d iterations not served by ringx on a communicator it "
             "connected for them without a message", unproven, iterations);
    rx_check(NULL, counter("coll_ringx_comms_exchanged") == exchanged0,
             "%llu connections exchanged worker addresses although every peer was known",
             counter("coll_ringx_comms_exchanged") - exchanged0);
    rx_check(NULL, rss_end - rss_early <= growth_kib,
             "resident set grew by %ld KiB from iteration %d to %d (at most %ld)",
             rss_end - rss_early, iterations / 10, iterations, growth_kib);
    rx_check(NULL, fds_end == fds_early, "open file descriptors: %d, then %d", fds_early,
             fds_end);
    if (world_rank == 0) {
        printf("churn: %d communicators made, used %d times and freed; resident set %ld KiB "
               "after %d, %ld KiB after %d; %d open files\n", iterations, calls, rss_early,
               iterations / 10, rss_end, iterations, fds_end);
    }
    rx_pvar_finalize();
    int status = rx_finish("churn");
    MPI_Finalize();
    return status;
}
