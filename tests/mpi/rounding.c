/*
 * rounding.c - small allreduces that every rank reduces whole from every
 * rank's input (direct reads through the outboxes, one node): float and
 * complex float SUM and PROD, and float16 where the MPI has MPIX_C_FLOAT16,
 * must be the exact result rounded once, bit for bit the same on every
 * rank.  The references are exact: products of integers in uint64_t (or
 * long double for float16), sums that double holds exactly.
 *
 * The inputs are chosen so that rounding at every step (the left-to-right
 * chain of pairwise operations) gives another answer at some index: the
 * program checks that too, so the case cannot pass by accident.  Every
 * call must be served by ringx's direct_read algorithm and counted by its
 * mailbox counter.
 *
 * And, under any algorithm (`--order-only --expect-alg NAME`: only these,
 * every call served by NAME; `--nonblocking`: as MPI_Iallreduce): MAX and MIN of +0 and -0, and MAX, MIN,
 * MINLOC and MAXLOC where some ranks hold NaNs.  MPI leaves open which
 * operand such a reduction returns, but every rank must end with the same
 * bits; an algorithm in which two ranks each reduce the other's partial
 * result with their own must take the two in the same order on both.
 */
#include <mpi.h>
#include <mpi-ext.h>    /* MPIX_C_FLOAT16 (Open MPI 5) */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringx_test_util.h"

enum { N = 100 };

static int rank, nranks, calls, nonblocking;

/* The result on every rank must be this rank's, bit for bit. */
static void check_same_everywhere(const rx_call_t *call, const void *result, size_t bytes)
{
    static unsigned char all[64 * 2 * N * sizeof(float)];
    int same = 1;

    if (nranks > 64 || bytes > 2 * N * sizeof(float)) {
        rx_fail("check_same_everywhere: %d ranks, %zu bytes: too many", nranks, bytes);
        return;
    }
    MPI_Gather(result, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (int r = 1; rank == 0 && r < nranks; r++) {
        same = same && memcmp(all, all + (size_t)r * bytes, bytes) == 0;
    }
    rx_check(call, same, "results differ between ranks");
}

static void allreduce(const void *in, void *out, int count, MPI_Datatype t, MPI_Op op)
{
    MPI_Request request;

    if (nonblocking) {
        MPI_Iallreduce(in, out, count, t, op, MPI_COMM_WORLD, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else {
        MPI_Allreduce(in, out, count, t, op, MPI_COMM_WORLD);
    }
    calls++;
}

/* PROD of i + 1 over every rank at index i: (i + 1)^p rounded once. */
static void float_prod(void)
{
    float in[N], out[N];
    int chain_differs = 0;
    rx_call_t call = { "allreduce", "MPI_FLOAT", "MPI_PROD", N, 0, MPI_COMM_WORLD };

    for (int i = 0; i < N; i++) {
        in[i] = (float)(i + 1);
    }
    allreduce(in, out, N, MPI_FLOAT, MPI_PROD);
    for (int i = 0; i < N; i++) {
        uint64_t exact = 1;
        float chain = 1;
        for (int r = 0; r < nranks; r++) {
            exact *= (uint64_t)(i + 1);
            chain *= in[i];
        }
        chain_differs += chain != (float)exact;
        rx_check(&call, out[i] == (float)exact, "index %d: %.9g, want %.9g ((%d)^%d rounded once)",
                 i, out[i], (float)exact, i + 1, nranks);
    }
    rx_check(&call, nranks < 5 || chain_differs > 0,
             "the left-to-right product is right everywhere: the case proves nothing");
    check_same_everywhere(&call, out, sizeof(out));
}

/* Rank 0 holds a large value, every other rank a value below half its
 * last bit: each pairwise sum rounds the small one away, the exact sum
 * does not. */
static double sum_input(int r, int i)
{
    return r == 0 ? 1.0 + i : ldexp(1.0 + (i % 3), -25) * (1 + i / 50);
}

static void float_sum(void)
{
    float in[N], out[N];
    int chain_differs = 0;
    rx_call_t call = { "allreduce", "MPI_FLOAT", "MPI_SUM", N, 0, MPI_COMM_WORLD };

    for (int i = 0; i < N; i++) {
        in[i] = (float)sum_input(rank, i);
    }
    allreduce(in, out, N, MPI_FLOAT, MPI_SUM);
    for (int i = 0; i < N; i++) {
        double exact = 0;
        float chain = 0;
        for (int r = 0; r < nranks; r++) {
            exact += (float)sum_input(r, i);
            chain += (float)sum_input(r, i);
        }
        chain_differs += chain != (float)exact;
        rx_check(&call, out[i] == (float)exact, "index %d: %.9g, want %.9g", i, out[i],
                 (float)exact);
    }
    rx_check(&call, nranks < 5 || chain_differs > 0,
             "the left-to-right sum is right everywhere: the case proves nothing");
    check_same_everywhere(&call, out, sizeof(out));
}

/* Complex: the real parts as float_sum, the imaginary parts as float_prod
 * would not be a complex product; products of Gaussian integers instead,
 * exact in int64_t. */
static void complex_float(void)
{
    float in[2 * N], out[2 * N];
    rx_call_t sum = { "allreduce", "MPI_C_FLOAT_COMPLEX", "MPI_SUM", N, 0, MPI_COMM_WORLD };
    rx_call_t prod = { "allreduce", "MPI_C_FLOAT_COMPLEX", "MPI_PROD", N, 0, MPI_COMM_WORLD };

    for (int i = 0; i < N; i++) {
        in[2 * i] = (float)sum_input(rank, i);
        in[2 * i + 1] = (float)sum_input(rank, N - 1 - i);
    }
    allreduce(in, out, N, MPI_C_FLOAT_COMPLEX, MPI_SUM);
    for (int i = 0; i < 2 * N; i++) {
        double exact = 0;
        for (int r = 0; r < nranks; r++) {
            exact += (float)sum_input(r, i % 2 ? N - 1 - i / 2 : i / 2);
        }
        rx_check(&sum, out[i] == (float)exact, "part %d: %.9g, want %.9g", i, out[i],
                 (float)exact);
    }
    check_same_everywhere(&sum, out, sizeof(out));

    for (int i = 0; i < N; i++) {
        in[2 * i] = (float)(i % 13 + 3);
        in[2 * i + 1] = (float)(i % 7) - 3;
    }
    allreduce(in, out, N, MPI_C_FLOAT_COMPLEX, MPI_PROD);
    for (int i = 0; i < N; i++) {
        int64_t re = 1, im = 0, xr = i % 13 + 3, xi = i % 7 - 3;
        for (int r = 0; r < nranks; r++) {
            int64_t t = re * xr - im * xi;
            im = re * xi + im * xr;
            re = t;
        }
        rx_check(&prod, out[2 * i] == (float)re && out[2 * i + 1] == (float)im,
                 "index %d: (%.9g, %.9g), want (%.9g, %.9g)", i, out[2 * i], out[2 * i + 1],
                 (float)re, (float)im);
    }
    check_same_everywhere(&prod, out, sizeof(out));
}

#if defined(MPIX_C_FLOAT16) && defined(__FLT16_MAX__)
/* PROD of (32 + i % 32) / 32 (exact in double for up to 8 ranks) and SUM
 * as float_sum, rounded once to binary16 by the compiler's conversion. */
static void float16(void)
{
    _Float16 in[N], out[N];
    rx_call_t prod = { "allreduce", "MPIX_C_FLOAT16", "MPI_PROD", N, 0, MPI_COMM_WORLD };
    rx_call_t sum = { "allreduce", "MPIX_C_FLOAT16", "MPI_SUM", N, 0, MPI_COMM_WORLD };
    int chain_differs = 0;

    for (int i = 0; i < N; i++) {
        in[i] = (_Float16)((32 + i % 32) / 32.0);
    }
    allreduce(in, out, N, MPIX_C_FLOAT16, MPI_PROD);
    for (int i = 0; i < N; i++) {
        long double exact = 1;
        _Float16 chain = 1;
        for (int r = 0; r < nranks; r++) {
            exact *= (long double)in[i];
            chain = (_Float16)(chain * in[i]);
        }
        chain_differs += chain != (_Float16)exact;
        rx_check(&prod, out[i] == (_Float16)exact, "index %d: %.6g, want %.6g", i,
                 (double)out[i], (double)(_Float16)exact);
    }
    rx_check(&prod, nranks < 5 || chain_differs > 0,
             "the left-to-right product is right everywhere: the case proves nothing");
    check_same_everywhere(&prod, out, sizeof(out));

    for (int i = 0; i < N; i++) {
        in[i] = (_Float16)(rank == 0 ? 1.0 + i % 16 : ldexp(1.0 + i % 3, -12 - i % 4));
    }
    allreduce(in, out, N, MPIX_C_FLOAT16, MPI_SUM);
    for (int i = 0; i < N; i++) {
        double exact = 0;
        for (int r = 0; r < nranks; r++) {
            exact += r == 0 ? 1.0 + i % 16 : ldexp(1.0 + i % 3, -12 - i % 4);
        }
        rx_check(&sum, out[i] == (_Float16)exact, "index %d: %.6g, want %.6g", i,
                 (double)out[i], (double)(_Float16)exact);
    }
    check_same_everywhere(&sum, out, sizeof(out));
}
#else
static void float16(void)
{
    if (rank == 0) {
        printf("note: MPIX_C_FLOAT16 is not provided by this MPI library; float16 skipped\n");
    }
}
#endif

/* Rank r's element i of a MAX or MIN: a zero of either sign (i % 3 == 0),
 * on some ranks a NaN whose payload names the rank (i % 3 == 1), or a
 * small integer (i % 3 == 2). */
static double order_input(int r, int i)
{
    switch (i % 3) {
    case 0:
        return (r + i / 3) % 2 ? -0.0 : 0.0;
    case 1:
        return (r + i) % 3 == 0 ? nan(r % 2 ? "1" : "2") : (double)((r * 7 + i) % 5);
    default:
        return (double)((r * 5 + i) % 11);
    }
}

/* The integers' MAX or MIN, and a zero where every rank holds one. */
static void check_order(const rx_call_t *call, const double *out, int count, MPI_Op op)
{
    for (int i = 2; i < count; i += 3) {
        double want = order_input(0, i);
        for (int r = 1; r < nranks; r++) {
            double x = order_input(r, i);
            want = op == MPI_MAX ? (x > want ? x : want) : (x < want ? x : want);
        }
        rx_check(call, out[i] == want, "index %d: %g, want %g", i, out[i], want);
    }
    for (int i = 0; i < count; i += 3) {
        rx_check(call, out[i] == 0.0, "index %d: %g, want a zero", i, out[i]);
    }
}

static void order_double(MPI_Op op, const char *opname)
{
    double in[N], out[N];
    rx_call_t call = { "allreduce", "MPI_DOUBLE", opname, N, 0, MPI_COMM_WORLD };

    for (int i = 0; i < N; i++) {
        in[i] = order_input(rank, i);
    }
    allreduce(in, out, N, MPI_DOUBLE, op);
    check_order(&call, out, N, op);
    check_same_everywhere(&call, out, sizeof(out));
}

static void order_float(MPI_Op op, const char *opname)
{
    float in[N], out[N];
    double wide[N];
    rx_call_t call = { "allreduce", "MPI_FLOAT", opname, N, 0, MPI_COMM_WORLD };

    for (int i = 0; i < N; i++) {
        in[i] = (float)order_input(rank, i);
    }
    allreduce(in, out, N, MPI_FLOAT, op);
    for (int i = 0; i < N; i++) {
        wide[i] = out[i];
    }
    check_order(&call, wide, N, op);
    check_same_everywhere(&call, out, sizeof(out));
}

/* MINLOC and MAXLOC: the value of element i is a NaN on some ranks, so
 * that comparisons say neither operand is smaller. */
static void order_loc(MPI_Op op, const char *opname)
{
    struct { float v; int i; } in[N], out[N];
    rx_call_t call = { "allreduce", "MPI_FLOAT_INT", opname, N, 0, MPI_COMM_WORLD };

    for (int i = 0; i < N; i++) {
        in[i].v = (rank + i) % 3 == 0 ? nanf(rank % 2 ? "1" : "2") : (float)((rank + i) % 4);
        in[i].i = rank;
    }
    allreduce(in, out, N, MPI_FLOAT_INT, op);
    check_same_everywhere(&call, out, sizeof(out));
}

static void operand_order(void)
{
    order_double(MPI_MAX, "MPI_MAX");
    order_double(MPI_MIN, "MPI_MIN");
    order_float(MPI_MAX, "MPI_MAX");
    order_float(MPI_MIN, "MPI_MIN");
    order_loc(MPI_MINLOC, "MPI_MINLOC");
    order_loc(MPI_MAXLOC, "MPI_MAXLOC");
}

int main(int argc, char **argv)
{
    rx_counters_t before, after;
    const char *alg = "direct_read";
    int order_only = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--order-only") == 0) {
            order_only = 1;
        } else if (strcmp(argv[a], "--expect-alg") == 0 && a + 1 < argc) {
            alg = argv[++a];
        } else if (strcmp(argv[a], "--nonblocking") == 0) {
            nonblocking = 1;
        } else {
            rx_fail("usage: rounding [--order-only] [--expect-alg NAME] [--nonblocking]");
        }
    }
    if (rx_pvar_init() != 0 || !rx_component_loaded()) {
        rx_fail("the ringx component is not loaded (no coll_ringx pvars)");
    }

    rx_counters_read("allreduce", alg, &before);
    if (!order_only) {
        float_prod();
        float_sum();
        complex_float();
        float16();
    }
    operand_order();
    rx_counters_read("allreduce", alg, &after);

    rx_check(NULL, after.served - before.served == (unsigned long long)calls,
             "ringx served %llu of %d allreduces", after.served - before.served, calls);
    rx_check(NULL, after.alg_calls - before.alg_calls == (unsigned long long)calls,
             "%s served %llu of %d allreduces", alg, after.alg_calls - before.alg_calls, calls);
    rx_check(NULL, after.nonblocking - before.nonblocking == (unsigned long long)(nonblocking * calls),
             "%llu of %d allreduces nonblocking", after.nonblocking - before.nonblocking,
             nonblocking * calls);
    rx_check(NULL, strcmp(alg, "direct_read") != 0 ||
                       after.mailbox - before.mailbox == (unsigned long long)calls,
             "%llu of %d allreduces through the outboxes", after.mailbox - before.mailbox, calls);

    rx_pvar_finalize();
    int status = rx_finish("rounding");
    MPI_Finalize();
    return status;
}
