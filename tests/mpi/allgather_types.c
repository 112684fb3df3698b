/*
 * allgather_types.c - MPI_Allgather, MPI_Iallgather and the persistent
 * form where the ranks describe their blocks with different datatypes of
 * one type signature (MPI allows it), and with datatypes that leave gaps,
 * on the send side, the receive side, both, and in place.
 *
 *   allgather_types [--expect-alg ALG] [--quick]
 *
 * --quick leaves out the largest blocks (for valgrind).
 *
 * A rank's block is 3k ints, described per rank and side as 3k MPI_INT,
 * k contiguous(3, MPI_INT), k triples each followed by a 3-int hole, or
 * 3k ints each followed by a 1-int hole.  Every call must be served by
 * ringx (coll_ringx_allgather's calls grow by one, by ALG's counter if
 * given, no fallback counter grows), a call on a rank with gaps on either
 * side must be counted by coll_ringx_allgather_packed, and every element
 * must arrive where its receive datatype puts it while every hole keeps
 * its sentinel.  Half the cases run on a communicator in reversed order.
 * Nonblocking and persistent calls get duplicates of the datatypes, freed
 * as soon as the call is made (MPI allows it).
 * A call that does not return within a minute (ranks that chose
 * differently) fails the test, named.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringx_test_util.h"

#include <mpi-ext.h>    /* MPIX_..._init: Open MPI 4.1's persistent collectives */

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define ALLGATHER_INIT MPIX_Allgather_init
#elif defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
#define ALLGATHER_INIT MPI_Allgather_init
#endif

enum layout { L_INTS, L_TRIPLES, L_TRIPLE_HOLES, L_INT_HOLES, NUM_LAYOUTS };
enum form { BLOCKING, NONBLOCKING, PERSISTENT, NUM_FORMS };

static const char *const layout_names[NUM_LAYOUTS] = {
    "3k MPI_INT", "k contiguous(3,MPI_INT)", "k triples with 3-int holes",
    "3k ints with 1-int holes"
};
static const char *const form_names[NUM_FORMS] = { "blocking", "nonblocking", "persistent" };

enum { STARTS = 3, SENTINEL = -7777777, WATCHDOG_SECONDS = 60 };

static MPI_Datatype types[NUM_LAYOUTS];
static const char *expect_alg;

/* A block of k triples in layout l: its datatype and count, where its
 * i-th int lies (in ints from the block's start), and its extent in ints. */
static int count_of(enum layout l, int k)
{
    return l == L_INTS || l == L_INT_HOLES ? 3 * k : k;
}

static size_t int_at(enum layout l, size_t i)
{
    switch (l) {
    case L_TRIPLE_HOLES: return i / 3 * 6 + i % 3;
    case L_INT_HOLES:    return 2 * i;
    default:             return i;
    }
}

static size_t block_ints(enum layout l, int k)
{
    return l == L_TRIPLE_HOLES || l == L_INT_HOLES ? 6 * (size_t)k : 3 * (size_t)k;
}

static int has_gaps(enum layout l)
{
    return l == L_TRIPLE_HOLES || l == L_INT_HOLES;
}

static void make_types(void)
{
    MPI_Datatype triple;

    types[L_INTS] = MPI_INT;
    MPI_Type_contiguous(3, MPI_INT, &types[L_TRIPLES]);
    MPI_Type_contiguous(3, MPI_INT, &triple);
    MPI_Type_create_resized(triple, 0, 6 * (MPI_Aint)sizeof(int), &types[L_TRIPLE_HOLES]);
    MPI_Type_free(&triple);
    MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &types[L_INT_HOLES]);
    for (int l = L_TRIPLES; l < NUM_LAYOUTS; l++) {
        MPI_Type_commit(&types[l]);
    }
}

static void free_types(void)
{
    for (int l = L_TRIPLES; l < NUM_LAYOUTS; l++) {
        MPI_Type_free(&types[l]);
    }
}

/* One case: the layouts this rank uses, the size and the call's form. */
typedef struct gather_case {
    MPI_Comm comm;
    int rank, size, k, in_place, start;
    enum layout send, recv;
    enum form form;
    uint64_t key;
} gather_case_t;

static int value(const gather_case_t *g, int rank, size_t i)
{
    return (int)(rx_random(rx_case_seed(g->key + (uint64_t)g->start, rank), i) >> 33);
}

/* The send buffer, or in place the own block of the receive buffer,
 * filled for the current start; holes hold the sentinel. */
static void fill(const gather_case_t *g, int *sbuf, int *rbuf)
{
    size_t rblock = block_ints(g->recv, g->k);

    for (size_t i = 0; i < rblock * (size_t)g->size; i++) {
        rbuf[i] = SENTINEL;
    }
    if (g->in_place) {
        for (size_t i = 0; i < 3 * (size_t)g->k; i++) {
            rbuf[(size_t)g->rank * rblock + int_at(g->recv, i)] = value(g, g->rank, i);
        }
        return;
    }
    for (size_t i = 0; i < block_ints(g->send, g->k); i++) {
        sbuf[i] = SENTINEL;
    }
    for (size_t i = 0; i < 3 * (size_t)g->k; i++) {
        sbuf[int_at(g->send, i)] = value(g, g->rank, i);
    }
}

/* What the case is, for its failures. */
static const char *describe(const gather_case_t *g)
{
    static char text[256];

    snprintf(text, sizeof text,
             "%s allgather, k=%d (%d ints a rank), %d ranks%s, send %s, receive %s, start %d",
             form_names[g->form], g->k, 3 * g->k, g->size,
             g->comm == MPI_COMM_WORLD ? "" : " (reversed)",
             g->in_place ? "MPI_IN_PLACE" : layout_names[g->send], layout_names[g->recv],
             g->start);
    return text;
}

static void check_result(const gather_case_t *g, const int *rbuf)
{
    size_t rblock = block_ints(g->recv, g->k);
    long bad = 0, holes = 0, first = -1;

    for (int p = 0; p < g->size; p++) {
        const int *block = rbuf + (size_t)p * rblock;
        size_t next = 0;
        for (size_t at = 0; at < rblock; at++) {
            if (next < 3 * (size_t)g->k && at == int_at(g->recv, next)) {
                if (block[at] != value(g, p, next)) {
                    first = first < 0 ? (long)((size_t)p * rblock + at) : first;
                    bad++;
                }
                next++;
            } else if (block[at] != SENTINEL) {
                holes++;
            }
        }
    }
    rx_check(NULL, bad == 0, "%s: %ld wrong elements, the first at int %ld", describe(g), bad,
             first);
    rx_check(NULL, holes == 0, "%s: %ld holes of the receive datatype overwritten", describe(g),
             holes);
}

/* The counters that prove who served a call. */
typedef struct proof {
    unsigned long long served, alg, packed, fallbacks;
} proof_t;

static proof_t proof_now(void)
{
    rx_counters_t k;
    proof_t p;

    rx_counters_read("allgather", expect_alg, &k);
    p.served = k.served;
    p.alg = k.alg_calls;
    p.packed = k.packed;
    p.fallbacks = 0;
    for (int i = 0; i < RX_NUM_FALLBACK_REASONS; i++) {
        p.fallbacks += k.fallback[i];
    }
    return p;
}

/* A call of no bytes may end in Open MPI's bindings before reaching any
 * component (blocking ones do), or be counted: either is right. */
static void check_proof(const gather_case_t *g, proof_t before, proof_t after)
{
    unsigned long long want = g->k > 0;
    int gaps = has_gaps(g->recv) || (!g->in_place && has_gaps(g->send));

    rx_check(NULL, after.served - before.served == want || g->k == 0,
             "%s: %llu calls served by ringx", describe(g), after.served - before.served);
    rx_check(NULL, expect_alg == NULL || after.alg - before.alg == want || g->k == 0,
             "%s: %llu calls counted by %s", describe(g), after.alg - before.alg,
             expect_alg ? expect_alg : "-");
    rx_check(NULL, after.packed - before.packed == (unsigned long long)(gaps && want),
             "%s: %llu calls counted by coll_ringx_allgather_packed", describe(g),
             after.packed - before.packed);
    rx_check(NULL, after.fallbacks == before.fallbacks, "%s: %llu calls handed on", describe(g),
             after.fallbacks - before.fallbacks);
}

static void call(gather_case_t *g, int *sbuf, int *rbuf, MPI_Request *persistent)
{
    const void *from = g->in_place ? MPI_IN_PLACE : (const void *)sbuf;
    int scount = count_of(g->send, g->k), rcount = count_of(g->recv, g->k);
    MPI_Datatype st = types[g->send], rt = types[g->recv];
    MPI_Request req;

    switch (g->form) {
    case BLOCKING:
        MPI_Allgather(from, scount, st, rbuf, rcount, rt, g->comm);
        break;
    case NONBLOCKING:
        /* MPI lets the caller free the datatypes of a call under way */
        MPI_Type_dup(types[g->send], &st);
        MPI_Type_dup(types[g->recv], &rt);
        MPI_Iallgather(from, scount, st, rbuf, rcount, rt, g->comm, &req);
        MPI_Type_free(&st);
        MPI_Type_free(&rt);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    default:
        MPI_Start(persistent);
        MPI_Wait(persistent, MPI_STATUS_IGNORE);
        break;
    }
}

static void run_case(gather_case_t *g)
{
    size_t sints = block_ints(g->send, g->k) + 1, rints = block_ints(g->recv, g->k) * g->size + 1;
    int *sbuf = malloc(sints * sizeof(int)), *rbuf = malloc(rints * sizeof(int));
    int starts = g->form == PERSISTENT ? STARTS : 1;
    MPI_Request persistent = MPI_REQUEST_NULL;

    if (sbuf == NULL || rbuf == NULL) {
        rx_fail("out of memory for k=%d", g->k);
        exit(1);
    }
#ifdef ALLGATHER_INIT
    if (g->form == PERSISTENT) {
        MPI_Datatype st, rt;        /* freed at once, as MPI allows */
        MPI_Type_dup(types[g->send], &st);
        MPI_Type_dup(types[g->recv], &rt);
        ALLGATHER_INIT(g->in_place ? MPI_IN_PLACE : (const void *)sbuf, count_of(g->send, g->k),
                       st, rbuf, count_of(g->recv, g->k), rt, g->comm, MPI_INFO_NULL, &persistent);
        MPI_Type_free(&st);
        MPI_Type_free(&rt);
    }
#endif
    for (g->start = 0; g->start < starts; g->start++) {
        fill(g, sbuf, rbuf);
        proof_t before = proof_now();
        rx_call_t what = { "allgather", describe(g), "-", 3 * (size_t)g->k, g->in_place, g->comm };
        rx_watchdog_arm(&what, WATCHDOG_SECONDS);   /* ranks that disagree would hang */
        call(g, sbuf, rbuf, &persistent);
        rx_watchdog_disarm();
        check_proof(g, before, proof_now());
        check_result(g, rbuf);
    }
    if (persistent != MPI_REQUEST_NULL) {
        MPI_Request_free(&persistent);
    }
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    static const int ks[] = { 0, 1, 5, 337, 30011 };
    size_t nks = sizeof ks / sizeof ks[0];
    int rank, size, nforms = NUM_FORMS;
    MPI_Comm reversed;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect-alg") == 0 && i + 1 < argc) {
            expect_alg = argv[++i];
        } else if (strcmp(argv[i], "--quick") == 0) {
            nks--;                  /* no large blocks (under valgrind) */
        }
    }
    if (rx_pvar_init() != 0 || !rx_component_loaded()) {
        rx_fail("the ringx component is not loaded (no coll_ringx pvars)");
    }
#ifndef ALLGATHER_INIT
    nforms = PERSISTENT;
    if (rank == 0) {
        printf("note: no persistent collectives in this MPI; persistent form skipped\n");
    }
#endif
    make_types();
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
    /* every pair of layouts meets on some pair of ranks: case c gives rank
     * r the send layout (r + c) % 4 and the receive layout (3r + c / 4) % 4;
     * cases 16-19 run in place */
    for (int c = 0; c < 4 * NUM_LAYOUTS + NUM_LAYOUTS && size > 1; c++) {
        for (size_t s = 0; s < nks; s++) {
            for (int f = 0; f < nforms; f++) {
                gather_case_t g = { .comm = c % 2 ? reversed : MPI_COMM_WORLD, .k = ks[s],
                                    .form = (enum form)f };
                MPI_Comm_rank(g.comm, &g.rank);
                MPI_Comm_size(g.comm, &g.size);
                g.in_place = c >= 4 * NUM_LAYOUTS;
                g.send = (enum layout)((g.rank + c) % NUM_LAYOUTS);
                g.recv = (enum layout)((3 * g.rank + c / NUM_LAYOUTS) % NUM_LAYOUTS);
                g.key = rx_mix(rx_mix((uint64_t)c, (uint64_t)ks[s]), (uint64_t)f);
                run_case(&g);
            }
        }
    }
    if (size == 1 && rank == 0) {
        printf("note: one rank: ringx serves no collective on it; nothing to test\n");
    }
    MPI_Comm_free(&reversed);
    free_types();
    rx_pvar_finalize();
    int status = rx_finish("allgather_types");
    MPI_Finalize();
    return status;
}
