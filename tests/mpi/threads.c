/*
 * threads.c - MPI_THREAD_MULTIPLE: two threads run collectives at the same
 * time on two duplicates of MPI_COMM_WORLD (one small, one large buffer),
 * so the two communicators' messages are in flight together and must never
 * be mixed.  Results are checked against a local reference, and the pvars
 * must show ringx served every call.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ringx_pvars.h"

enum { THREADS = 2, ITERATIONS = 100 };

static MPI_Comm comms[THREADS];
static int failures[THREADS];

static void *run(void *arg)
{
    int t = (int)(long)arg, rank, size;
    int n = t ? 100003 : 7;
    double *in = malloc(sizeof(double) * (size_t)n), *out = malloc(sizeof(double) * (size_t)n);

    MPI_Comm_rank(comms[t], &rank);
    MPI_Comm_size(comms[t], &size);
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < n; i++) {
            in[i] = rank + i + it;
        }
        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comms[t]);
        for (int i = 0; i < n; i++) {
            if (out[i] != size * (size - 1) / 2.0 + (double)(i + it) * size) {
                failures[t]++;
                break;
            }
        }
    }
    free(in);
    free(out);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size, failed = 0, all_failed;
    pthread_t threads[THREADS];
    unsigned long long before, after;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) {
            printf("SKIP: this MPI does not provide MPI_THREAD_MULTIPLE\n");
        }
        MPI_Finalize();
        return 77;
    }
    if (ringx_pvars_open() <= 0) {
        printf("FAIL: ringx component not loaded (no coll_ringx_* pvars)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int t = 0; t < THREADS; t++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    }
    before = ringx_pvars_served("allreduce");
    for (long t = 0; t < THREADS; t++) {
        pthread_create(&threads[t], NULL, run, (void *)t);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        failed += failures[t];
    }
    after = ringx_pvars_served("allreduce");
    if (size > 1 && after - before != (unsigned long long)THREADS * ITERATIONS) {
        printf("FAIL rank %d: ringx served %llu of %d allreduce calls\n", rank, after - before,
               THREADS * ITERATIONS);
        failed++;
    }
    for (int t = 0; t < THREADS; t++) {
        MPI_Comm_free(&comms[t]);
    }
    MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("threads np=%d: %d failures\n", size, all_failed);
    }
    ringx_pvars_close();
    MPI_Finalize();
    return all_failed ? 1 : 0;
}
