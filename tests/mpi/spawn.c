/*
 * spawn.c - communicators with processes from MPI_Comm_spawn.
 *
 * The launched processes spawn as many more (this same program) and merge
 * the intercommunicator into one intracommunicator, parents first; a split
 * of it reverses the ranks, so that neighbours come from different jobs.
 * ringx connects such communicators with an agreement and an exchange of
 * worker addresses (the spawned processes are not in the parents'
 * MPI_COMM_WORLD); both must be served by ringx, on every process, with
 * exact results, for counts from 1 to 2 MiB per rank, blocking, in place
 * and nonblocking.  The intercommunicator itself goes to the previous
 * component (ringx does not serve intercommunicators) with the right
 * result.  Every process, parent or child, checks its own counters and
 * results; the tally runs over the merged communicator.
 *
 * On Open MPI 5 it says SKIP (exit 77) unless RINGX_TEST_SPAWN=1: in this
 * project's Debian 13 chroot (Open MPI 5.0.7) the spawned processes often
 * cannot reach their parents at all ("host: unknown", no BTL reaches them,
 * the job aborts or hangs), with --mca coll ^ringx too (2026-12-07: 12 of 12
 * launches each way in one hour, 0 of 28 an hour before).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringx_test_util.h"

static const char *const colls[] = { "allreduce", "allgather", "reduce_scatter_block" };
enum { NCOLLS = 3 };

/* Five calls per count: allreduce out of place and in place, allgather,
 * reduce_scatter_block, then a nonblocking allreduce and allgather
 * waited for together.  Values are integers, so every sum is exact. */
static void calls(MPI_Comm comm, const char *name, size_t count, long long want[NCOLLS])
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int n = (int)count;
    double *in = malloc(sizeof(double) * count * size), *out = malloc(sizeof(double) * count * size);
    int *gin = malloc(sizeof(int) * count), *gout = malloc(sizeof(int) * count * size);
    double *iout = malloc(sizeof(double) * count);
    double tri = size * (size - 1) / 2.0;

    for (size_t i = 0; i < count * size; i++) {
        in[i] = rank + (double)i;
    }
    for (size_t i = 0; i < count; i++) {
        gin[i] = rank * 1000003 + (int)i;
    }
    rx_call_t ar = { "allreduce", "MPI_DOUBLE", "MPI_SUM", count, 0, comm };
    MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm);
    for (size_t i = 0; i < count; i++) {
        rx_check(&ar, out[i] == tri + (double)size * i, "%s: element %zu %g", name, i, out[i]);
    }
    rx_call_t ip = { "allreduce", "MPI_DOUBLE", "MPI_MAX", count, 1, comm };
    MPI_Allreduce(MPI_IN_PLACE, in, n, MPI_DOUBLE, MPI_MAX, comm);
    for (size_t i = 0; i < count; i++) {
        rx_check(&ip, in[i] == size - 1 + (double)i, "%s: element %zu %g", name, i, in[i]);
    }
    rx_call_t ag = { "allgather", "MPI_INT", "-", count, 0, comm };
    MPI_Allgather(gin, n, MPI_INT, gout, n, MPI_INT, comm);
    for (size_t i = 0; i < count * size; i++) {
        rx_check(&ag, gout[i] == (int)(i / count) * 1000003 + (int)(i % count),
                 "%s: element %zu", name, i);
    }
    for (size_t i = 0; i < count * size; i++) {
        in[i] = rank + (double)i;
    }
    rx_call_t rs = { "reduce_scatter_block", "MPI_DOUBLE", "MPI_SUM", count, 0, comm };
    MPI_Reduce_scatter_block(in, out, n, MPI_DOUBLE, MPI_SUM, comm);
    for (size_t i = 0; i < count; i++) {
        rx_check(&rs, out[i] == tri + (double)size * (rank * count + i), "%s: element %zu", name,
                 i);
    }
    MPI_Request req[2];
    MPI_Iallreduce(in, iout, n, MPI_DOUBLE, MPI_SUM, comm, &req[0]);
    MPI_Iallgather(gin, n, MPI_INT, gout, n, MPI_INT, comm, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    rx_call_t nb = { "allreduce", "MPI_DOUBLE", "MPI_SUM", count, 0, comm };
    for (size_t i = 0; i < count; i++) {
        rx_check(&nb, iout[i] == tri + (double)size * i, "%s: nonblocking, element %zu", name, i);
    }
    for (size_t i = 0; i < count * size; i++) {
        rx_check(&ag, gout[i] == (int)(i / count) * 1000003 + (int)(i % count),
                 "%s: nonblocking, element %zu", name, i);
    }
    want[0] += 3;
    want[1] += 2;
    want[2] += 1;
    free(in);
    free(out);
    free(gin);
    free(gout);
    free(iout);
}

/* Every count's calls on comm, each served by ringx on this process. */
static void served_by_ringx(MPI_Comm comm, const char *name)
{
    static const size_t counts[] = { 1, 7, 1031, 65537, 262147 };
    long long want[NCOLLS] = { 0, 0, 0 };
    rx_counters_t before[NCOLLS], after[NCOLLS];

    for (int c = 0; c < NCOLLS; c++) {
        rx_counters_read(colls[c], NULL, &before[c]);
    }
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        calls(comm, name, counts[k], want);
    }
    for (int c = 0; c < NCOLLS; c++) {
        rx_counters_read(colls[c], NULL, &after[c]);
        rx_check(NULL, (long long)(after[c].served - before[c].served) == want[c],
                 "%s on %s: %llu calls served by ringx, want %lld", colls[c], name,
                 after[c].served - before[c].served, want[c]);
    }
}

/* An allreduce on the intercommunicator: the sum over the other group,
 * from the previous component. */
static void on_intercomm(MPI_Comm inter, int is_child)
{
    int remote, local_rank, value, sum = -1;
    unsigned long long served = rx_served("allreduce");

    MPI_Comm_remote_size(inter, &remote);
    MPI_Comm_rank(inter, &local_rank);
    value = (is_child ? 100 : 1) * (local_rank + 1);
    MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, inter);
    rx_check(NULL, sum == (is_child ? 1 : 100) * remote * (remote + 1) / 2,
             "allreduce on the intercommunicator: %d", sum);
    rx_check(NULL, rx_served("allreduce") == served,
             "allreduce on the intercommunicator served by ringx");
}

/* Open MPI 5.0's spawn: see the top of this file. */
static int skip_on_this_mpi(void)
{
    const char *force = getenv("RINGX_TEST_SPAWN");
    int rank;

    if (OMPI_MAJOR_VERSION < 5 || (force != NULL && strcmp(force, "1") == 0)) {
        return 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        printf("SKIP: MPI_Comm_spawn on Open MPI %d: its spawned processes often cannot reach "
               "their parents here, without ringx too (RINGX_TEST_SPAWN=1 runs it)\n",
               OMPI_MAJOR_VERSION);
    }
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Comm parent, inter, merged, reversed;
    int world, rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (skip_on_this_mpi()) {
        MPI_Finalize();
        return 77;
    }
    if (rx_pvar_init() != 0 || !rx_component_loaded()) {
        rx_fail("the ringx component is not loaded (no coll_ringx pvars)");
    }
    MPI_Comm_get_parent(&parent);
    int is_child = parent != MPI_COMM_NULL;
    if (is_child) {
        inter = parent;
    } else {
        MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, world, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                       MPI_ERRCODES_IGNORE);
    }
    on_intercomm(inter, is_child);
    MPI_Intercomm_merge(inter, is_child, &merged);
    MPI_Comm_rank(merged, &rank);
    MPI_Comm_size(merged, &size);
    rx_check(NULL, size == 2 * world, "merged communicator of %d ranks, want %d", size, 2 * world);
    served_by_ringx(merged, "the merged communicator");
    MPI_Comm_split(merged, 0, size - rank, &reversed);
    served_by_ringx(reversed, "the merged communicator reversed");

    /* the tally over both jobs: mpirun's status is the parents' */
    int status = rx_finish_on(merged, "spawn");
    MPI_Comm_free(&reversed);
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&inter);
    rx_pvar_finalize();
    MPI_Finalize();
    return status;
}
