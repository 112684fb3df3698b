/*
 * mailbox_skew.c - many small collectives back to back while the ranks
 * drift apart, for the mailboxes' reuse of their slots.
 *
 * A mailbox slot is written again two calls later (call parity), which is
 * safe because no rank can run two calls ahead of another.  Here each rank
 * sleeps now and then, at iterations that differ between ranks, so that
 * the others run ahead as far as the collectives let them; the three
 * collectives alternate with counts that change every call, on two
 * communicators in turn (their regions are separate).  Every result is
 * checked exactly (integer sums of values known on every rank), and the
 * pvars must show that ringx served each call through its mailboxes (or
 * outboxes, the same memory).  --max-count N makes calls of up to N ints
 * per rank, for outboxes used a piece at a time.
 * (A single slot per step, tried on purpose, hangs the correctness matrix,
 * whose larger calls leave a receiver behind inside a call.)
 */
#include "ringx_pvars.h"
#include "ringx_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROGRAM_NAME "mailbox_skew"
#define ITERATIONS 3000
#define DEFAULT_MAX_COUNT 32  /* ints per rank: every call stays within 1 KiB at 8 ranks */

/* --max-count N: calls of up to N ints per rank (outboxes in pieces) */
static int max_count = DEFAULT_MAX_COUNT;

static const char *const colls[] = { "allreduce", "allgather", "reduce_scatter_block" };

/* The value rank r contributes at index i of iteration it. */
static int value(int it, int r, int i)
{
    return it * 7919 + r * 131 + i;
}

static void check_allreduce(MPI_Comm comm, int it, int count, int rank, int size)
{
    int *in = malloc(sizeof(int) * (size_t)count), *out = malloc(sizeof(int) * (size_t)count);
    rx_call_t call = { "allreduce", "MPI_INT", "MPI_SUM", (size_t)count, 0, comm };

    for (int i = 0; i < count; i++) {
        in[i] = value(it, rank, i);
    }
    MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < count; i++) {
        int want = 0;
        for (int r = 0; r < size; r++) {
            want += value(it, r, i);
        }
        if (!rx_check(&call, out[i] == want, "iteration %d, element %d: %d, expected %d", it, i,
                      out[i], want)) {
            break;
        }
    }
    free(in);
    free(out);
}

static void check_allgather(MPI_Comm comm, int it, int count, int rank, int size)
{
    int *in = malloc(sizeof(int) * (size_t)count);
    int *out = malloc(sizeof(int) * (size_t)count * (size_t)size);
    rx_call_t call = { "allgather", "MPI_INT", "-", (size_t)count, 0, comm };

    for (int i = 0; i < count; i++) {
        in[i] = value(it, rank, i);
    }
    MPI_Allgather(in, count, MPI_INT, out, count, MPI_INT, comm);
    for (int r = 0; r < size; r++) {
        for (int i = 0; i < count; i++) {
            if (!rx_check(&call, out[r * count + i] == value(it, r, i),
                          "iteration %d, block %d, element %d: %d, expected %d", it, r, i,
                          out[r * count + i], value(it, r, i))) {
                r = size;
                break;
            }
        }
    }
    free(in);
    free(out);
}

static void check_reduce_scatter_block(MPI_Comm comm, int it, int count, int rank, int size)
{
    int *in = malloc(sizeof(int) * (size_t)count * (size_t)size);
    int *out = malloc(sizeof(int) * (size_t)count);
    rx_call_t call = { "reduce_scatter_block", "MPI_INT", "MPI_SUM", (size_t)count, 0, comm };

    for (int i = 0; i < count * size; i++) {
        in[i] = value(it, rank, i);
    }
    MPI_Reduce_scatter_block(in, out, count, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < count; i++) {
        int want = 0;
        for (int r = 0; r < size; r++) {
            want += value(it, r, rank * count + i);
        }
        if (!rx_check(&call, out[i] == want, "iteration %d, element %d: %d, expected %d", it, i,
                      out[i], want)) {
            break;
        }
    }
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    int rank, size, status;
    unsigned long long before[3], after[3], served_before[3], served_after[3];
    MPI_Comm comms[2];

    MPI_Init(&argc, &argv);
    if (argc == 3 && strcmp(argv[1], "--max-count") == 0) {
        max_count = atoi(argv[2]);
    }
    if (max_count < 1) {
        rx_fail("usage: mailbox_skew [--max-count N]");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rx_pvar_init() != 0 || !rx_component_loaded()) {
        rx_fail("the ringx component is not loaded");
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[1]);   /* reversed order */
    for (int c = 0; c < 3; c++) {
        before[c] = ringx_pvar_read_coll(colls[c], "mailbox");
        served_before[c] = rx_served(colls[c]);
    }
    for (int it = 0; it < ITERATIONS; it++) {
        MPI_Comm comm = comms[it % 2];
        int crank, count = 1 + (it * 5 + 3) % max_count;
        MPI_Comm_rank(comm, &crank);
        if ((it + 1) % (rank + 7) == 0) {
            usleep(200);        /* this rank falls behind; the others run ahead */
        }
        switch (it % 3) {
        case 0: check_allreduce(comm, it, count, crank, size); break;
        case 1: check_allgather(comm, it, count, crank, size); break;
        default: check_reduce_scatter_block(comm, it, count, crank, size); break;
        }
    }
    for (int c = 0; c < 3; c++) {
        after[c] = ringx_pvar_read_coll(colls[c], "mailbox");
        served_after[c] = rx_served(colls[c]);
        unsigned long long calls = ITERATIONS / 3;
        rx_check(NULL, served_after[c] - served_before[c] == calls,
                 "ringx served %llu %s calls of %llu", served_after[c] - served_before[c],
                 colls[c], calls);
        rx_check(NULL, after[c] - before[c] == calls,
                 "coll_ringx_%s_mailbox grew by %llu over %llu calls", colls[c],
                 after[c] - before[c], calls);
    }
    MPI_Comm_free(&comms[0]);
    MPI_Comm_free(&comms[1]);
    status = rx_finish(PROGRAM_NAME);
    rx_pvar_finalize();
    MPI_Finalize();
    return status;
}
