/*
 * comm_from_group.c - communicators whose members share no context id.
 *
 * Open MPI 5 gives a communicator made by MPI_Comm_create_from_group (MPI
 * 4.0, sessions) no index that is the same on every member, which ringx's
 * message tags and shared-memory regions need: ringx must hand its calls
 * on to the previous component, counted as fallback "communicator", and
 * the results must be right.  A duplicate of MPI_COMM_WORLD, next to it,
 * must still be served by ringx.  Without MPI_Comm_create_from_group (Open
 * MPI 4.1; Open MPI 5.0 has it although it reports MPI 3.1) the program
 * says SKIP and exits 77.
 */
#include <mpi.h>
#include <stdio.h>

#include "ringx_test_util.h"

#if OMPI_MAJOR_VERSION >= 5
static const char *const colls[] = { "allreduce", "allgather", "reduce_scatter_block" };

enum { N = 1000 };

/* The three collectives on comm, results checked. */
static void three_calls(MPI_Comm comm, const char *name)
{
    static int in[64 * N], out[64 * N];
    int rank, size;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int i = 0; i < size * N; i++) {
        in[i] = rank * 7 + i;
    }
    rx_call_t ar = { "allreduce", "MPI_INT", "MPI_SUM", N, 0, comm };
    MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < N; i++) {
        rx_check(&ar, out[i] == 7 * size * (size - 1) / 2 + size * i, "%s: element %d", name, i);
    }
    rx_call_t ag = { "allgather", "MPI_INT", "-", N, 0, comm };
    MPI_Allgather(in, N, MPI_INT, out, N, MPI_INT, comm);
    for (int i = 0; i < size * N; i++) {
        rx_check(&ag, out[i] == (i / N) * 7 + i % N, "%s: element %d", name, i);
    }
    rx_call_t rs = { "reduce_scatter_block", "MPI_INT", "MPI_SUM", N, 0, comm };
    MPI_Reduce_scatter_block(in, out, N, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < N; i++) {
        rx_check(&rs, out[i] == 7 * size * (size - 1) / 2 + size * (rank * N + i),
                 "%s: element %d", name, i);
    }
}

int main(int argc, char **argv)
{
    rx_counters_t before[3], after[3];
    int rank, size;
    MPI_Group group;
    MPI_Comm from_group, dup;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rx_pvar_init() != 0 || !rx_component_loaded() || size > 64) {
        rx_fail("the ringx component is not loaded (no coll_ringx pvars), or too many ranks");
    }
    MPI_Comm_group(MPI_COMM_WORLD, &group);
    MPI_Comm_create_from_group(group, "org.ringx.test.from_group", MPI_INFO_NULL,
                               MPI_ERRORS_ARE_FATAL, &from_group);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);

    for (int c = 0; c < 3; c++) {
        rx_counters_read(colls[c], NULL, &before[c]);
    }
    three_calls(from_group, "from group");
    for (int c = 0; c < 3; c++) {
        rx_counters_read(colls[c], NULL, &after[c]);
        int k = rx_fallback_reason_index("communicator");
        rx_check(NULL, after[c].fallback[k] - before[c].fallback[k] == 1,
                 "%s on the communicator from a group: %llu fallbacks \"communicator\", want 1",
                 colls[c], after[c].fallback[k] - before[c].fallback[k]);
        rx_check(NULL, after[c].served == before[c].served,
                 "%s on the communicator from a group: served by ringx", colls[c]);
        before[c] = after[c];
    }
    three_calls(dup, "dup of world");
    for (int c = 0; c < 3; c++) {
        rx_counters_read(colls[c], NULL, &after[c]);
        rx_check(NULL, after[c].served - before[c].served == 1,
                 "%s on a dup of MPI_COMM_WORLD: %llu calls served by ringx, want 1", colls[c],
                 after[c].served - before[c].served);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&from_group);
    MPI_Group_free(&group);
    rx_pvar_finalize();
    int status = rx_finish("comm_from_group");
    MPI_Finalize();
    return status;
}
#else
int main(int argc, char **argv)
{
    int rank;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        printf("SKIP: no MPI_Comm_create_from_group in this MPI (Open MPI 5 has it)\n");
    }
    MPI_Finalize();
    return 77;
}
#endif
