/*
 * stale_flags.c - a mailbox slot's flag and an outbox's flags must never
 * lie in the data of the other.
 *
 * A flag says "call n is here" by holding n + 1; the memory it lives in
 * keeps whatever was written there last.  If a blocking call's outbox
 * shared its memory with the mailbox slots of its call parity (as it once
 * did), data written by one call, two calls before a call that waits on a
 * flag at that spot, would read as that flag when the data holds the very
 * number the later call waits for: small integers, as ordinary programs
 * have.  This test writes exactly those numbers, on a communicator whose
 * calls it numbers from 0 (a new one, one number per call):
 *
 *   4i      allreduce of 64000 bytes through the outboxes (by shares),
 *           every element 4i + 3: the flag the allgather two calls later
 *           waits for in its mailbox slots;
 *   4i + 1  allreduce of one element;
 *   4i + 2  allgather through the mailboxes (the algorithm named on the
 *           command line, forced by the .mpi file), every rank's first
 *           element 4i + 5: the flag of the allreduce by shares two calls
 *           later;
 *   4i + 3  allreduce of one element.
 *
 * With the old layout this gave wrong allgather blocks at np 4 (the first
 * call after such an outbox took its own stale data as a peer's message)
 * or hung.  Every result is checked exactly, and the pvars must show that
 * ringx served every call with the algorithms above.
 */
#include "ringx_pvars.h"
#include "ringx_test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PROGRAM_NAME "stale_flags"
#define ITERATIONS 400
#define LARGE_COUNT 8000        /* int64: 64000 bytes, one outbox of the default size */
#define BLOCK_COUNT 4           /* int64 per rank in the allgather: mailbox messages */
#define WATCHDOG_SECONDS 120

static int64_t large_in[LARGE_COUNT], large_out[LARGE_COUNT];

static void allreduce_large(MPI_Comm comm, int size, int64_t value)
{
    rx_call_t call = { "allreduce", "MPI_INT64_T", "MPI_SUM", LARGE_COUNT, 0, comm };

    for (int i = 0; i < LARGE_COUNT; i++) {
        large_in[i] = value;
    }
    MPI_Allreduce(large_in, large_out, LARGE_COUNT, MPI_INT64_T, MPI_SUM, comm);
    for (int i = 0; i < LARGE_COUNT; i++) {
        if (!rx_check(&call, large_out[i] == value * size, "element %d: %lld, expected %lld", i,
                      (long long)large_out[i], (long long)(value * size))) {
            break;
        }
    }
}

static void allreduce_one(MPI_Comm comm, int rank, int size, int it)
{
    rx_call_t call = { "allreduce", "MPI_INT64_T", "MPI_SUM", 1, 0, comm };
    int64_t in = it + rank, out = 0, want = (int64_t)it * size + (int64_t)size * (size - 1) / 2;

    MPI_Allreduce(&in, &out, 1, MPI_INT64_T, MPI_SUM, comm);
    rx_check(&call, out == want, "iteration %d: %lld, expected %lld", it, (long long)out,
             (long long)want);
}

/* Element j of rank r's block: the first is the same on every rank. */
static int64_t block_value(int64_t first, int it, int r, int j)
{
    return j == 0 ? first : 1000000 * (int64_t)r + 1000 * (int64_t)it + j;
}

static void allgather_blocks(MPI_Comm comm, int rank, int size, int it, int64_t first)
{
    rx_call_t call = { "allgather", "MPI_INT64_T", "-", BLOCK_COUNT, 0, comm };
    int64_t in[BLOCK_COUNT], *out = malloc(sizeof(int64_t) * BLOCK_COUNT * (size_t)size);

    for (int j = 0; j < BLOCK_COUNT; j++) {
        in[j] = block_value(first, it, rank, j);
    }
    MPI_Allgather(in, BLOCK_COUNT, MPI_INT64_T, out, BLOCK_COUNT, MPI_INT64_T, comm);
    for (int r = 0; r < size; r++) {
        for (int j = 0; j < BLOCK_COUNT; j++) {
            int64_t want = block_value(first, it, r, j);
            if (!rx_check(&call, out[r * BLOCK_COUNT + j] == want,
                          "iteration %d, block %d, element %d: %lld, expected %lld", it, r, j,
                          (long long)out[r * BLOCK_COUNT + j], (long long)want)) {
                r = size;
                break;
            }
        }
    }
    free(out);
}

/* The allgather's algorithm: through the mailboxes, its steps. */
static const char *allgather_alg = "recursive_doubling";

/* pvar deltas: every call served, by the algorithms the test relies on. */
static void check_served(const rx_counters_t before[2], const rx_counters_t after[2])
{
    unsigned long long allreduces = 3ull * ITERATIONS, allgathers = ITERATIONS;

    rx_check(NULL, after[0].alg_calls - before[0].alg_calls == allreduces,
             "direct_read served %llu of %llu allreduces",
             after[0].alg_calls - before[0].alg_calls, allreduces);
    rx_check(NULL, after[0].mailbox - before[0].mailbox == allreduces,
             "coll_ringx_allreduce_mailbox grew by %llu over %llu calls (the outboxes)",
             after[0].mailbox - before[0].mailbox, allreduces);
    rx_check(NULL, after[1].alg_calls - before[1].alg_calls == allgathers,
             "%s served %llu of %llu allgathers", allgather_alg,
             after[1].alg_calls - before[1].alg_calls, allgathers);
    rx_check(NULL, after[1].mailbox - before[1].mailbox == allgathers,
             "coll_ringx_allgather_mailbox grew by %llu over %llu calls",
             after[1].mailbox - before[1].mailbox, allgathers);
}

int main(int argc, char **argv)
{
    int rank, size, status;
    rx_counters_t before[2], after[2];
    MPI_Comm comm;

    MPI_Init(&argc, &argv);
    if (argc == 2) {
        allgather_alg = argv[1];
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rx_pvar_init() != 0 || !rx_component_loaded()) {
        rx_fail("the ringx component is not loaded");
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    rx_counters_read("allreduce", "direct_read", &before[0]);
    rx_counters_read("allgather", allgather_alg, &before[1]);
    for (int it = 0; it < ITERATIONS; it++) {
        rx_call_t call = { "allgather", "MPI_INT64_T", "-", BLOCK_COUNT, 0, comm };
        int64_t n = 4 * (int64_t)it;

        rx_watchdog_arm(&call, WATCHDOG_SECONDS);
        allreduce_large(comm, size, n + 3);
        allreduce_one(comm, rank, size, it);
        allgather_blocks(comm, rank, size, it, n + 5);
        allreduce_one(comm, rank, size, it);
        rx_watchdog_disarm();
    }
    rx_counters_read("allreduce", "direct_read", &after[0]);
    rx_counters_read("allgather", allgather_alg, &after[1]);
    check_served(before, after);
    MPI_Comm_free(&comm);
    status = rx_finish(PROGRAM_NAME);
    rx_pvar_finalize();
    MPI_Finalize();
    return status;
}
