/*
 * three_collectives.c - calls MPI_Allreduce, MPI_Allgather and
 * MPI_Reduce_scatter_block once each and prints a checksum of every
 * result, so that a run with ringx and a run without it
 * (--mca coll ^ringx) can be compared line by line.
 *   three_collectives --idle: none of them, only MPI_Alltoall and
 *   MPI_Barrier (ringx connects MPI_COMM_WORLD in MPI_Init and serves no
 *   call), then "rank N idle": MPI_Finalize must end cleanly even so.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COUNT = 1000 };

/* Order-sensitive checksum of n ints. */
static uint64_t checksum(const int *v, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (uint32_t)v[i]) * 1099511628211ULL;
    }
    return h;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int *in = malloc(sizeof(int) * COUNT * (size_t)size);
    int *out = malloc(sizeof(int) * COUNT * (size_t)size);
    for (int i = 0; i < COUNT * size; i++) {
        in[i] = rank * 1000003 + i * 7;
    }
    if (argc > 1 && strcmp(argv[1], "--idle") == 0) {
        MPI_Alltoall(in, COUNT, MPI_INT, out, COUNT, MPI_INT, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        printf("rank %d idle\n", rank);
        free(in);
        free(out);
        MPI_Finalize();
        return 0;
    }

    MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d allreduce %016llx\n", rank, (unsigned long long)checksum(out, COUNT));
    MPI_Allgather(in, COUNT, MPI_INT, out, COUNT, MPI_INT, MPI_COMM_WORLD);
    printf("rank %d allgather %016llx\n", rank,
           (unsigned long long)checksum(out, (size_t)COUNT * size));
    MPI_Reduce_scatter_block(in, out, COUNT, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    printf("rank %d reduce_scatter_block %016llx\n", rank,
           (unsigned long long)checksum(out, COUNT));

    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
