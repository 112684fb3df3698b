/*
 * comm_from_group.c - communicators whose members share no context id, and
 * programs of MPI Sessions alone.
 *
 * Open MPI 5 gives a communicator made by MPI_Comm_create_from_group (MPI
 * 4.0, sessions) no index that is the same on every member, which ringx's
 * message tags and shared-memory regions need: ringx must hand its calls
 * on to the previous component, counted as fallback "communicator", and
 * the results must be right.  A duplicate of MPI_COMM_WORLD, next to it,
 * must still be served by ringx.
 *
 *   comm_from_group              after MPI_Init, beside MPI_COMM_WORLD
 *   comm_from_group --sessions   no MPI_Init: a session's communicator of
 *                                "mpi://WORLD" (handed on) and a reordered
 *                                split of it (served by ringx), in two
 *                                sessions one after the other (Open MPI
 *                                closes and reopens its components between
 *                                them)
 *   comm_from_group --session-before-init
 *                                a session's communicator made before
 *                                MPI_Init (handed on), a dup of
 *                                MPI_COMM_WORLD beside it (served), also
 *                                after the session's end
 *
 * Without MPI_Comm_create_from_group (Open MPI 4.1; Open MPI 5.0 has it
 * although it reports MPI 3.1) the program says SKIP and exits 77.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

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

static rx_counters_t before[3];

static void counters_start(void)
{
    for (int c = 0; c < 3; c++) {
        rx_counters_read(colls[c], NULL, &before[c]);
    }
}

/* Each collective served once by ringx since counters_start(), or handed
 * on once as fallback "communicator" and not served. */
static void counters_check(int served, const char *name)
{
    int k = rx_fallback_reason_index("communicator");

    for (int c = 0; c < 3; c++) {
        rx_counters_t after;
        rx_counters_read(colls[c], NULL, &after);
        rx_check(NULL, after.served - before[c].served == (unsigned long long)served,
                 "%s on %s: %llu calls served by ringx, want %d", colls[c], name,
                 after.served - before[c].served, served);
        rx_check(NULL, after.fallback[k] - before[c].fallback[k] == (unsigned long long)!served,
                 "%s on %s: %llu fallbacks \"communicator\", want %d", colls[c], name,
                 after.fallback[k] - before[c].fallback[k], !served);
    }
}

static void three_calls_counted(MPI_Comm comm, const char *name, int served)
{
    counters_start();
    three_calls(comm, name);
    counters_check(served, name);
}

static void pvars_open(void)
{
    if (rx_pvar_init() != 0 || !rx_component_loaded()) {
        rx_fail("the ringx component is not loaded (no coll_ringx pvars)");
    }
}

static int beside_world(int *argc, char ***argv)
{
    int size;
    MPI_Group group;
    MPI_Comm from_group, dup;

    MPI_Init(argc, argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    pvars_open();
    if (size > 64) {
        rx_fail("at most 64 ranks");
    }
    MPI_Comm_group(MPI_COMM_WORLD, &group);
    MPI_Comm_create_from_group(group, "org.ringx.test.from_group", MPI_INFO_NULL,
                               MPI_ERRORS_ARE_FATAL, &from_group);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    three_calls_counted(from_group, "the communicator from a group", 0);
    three_calls_counted(dup, "a dup of MPI_COMM_WORLD", 1);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&from_group);
    MPI_Group_free(&group);
    rx_pvar_finalize();
    int status = rx_finish("comm_from_group");
    MPI_Finalize();
    return status;
}

/* One session: its world communicator handed on, a reordered split served.
 * The component is opened at the session's start, so are its pvars. */
static int one_session(int round)
{
    MPI_Session session;
    MPI_Group group;
    MPI_Comm world, reordered;
    int rank, size, status;

    if (MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &session) != MPI_SUCCESS) {
        rx_fail("MPI_Session_init failed");
        return 1;
    }
    pvars_open();
    MPI_Group_from_session_pset(session, "mpi://WORLD", &group);
    MPI_Comm_create_from_group(group, "org.ringx.test.sessions", MPI_INFO_NULL,
                               MPI_ERRORS_ARE_FATAL, &world);
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    if (size > 64) {
        rx_fail("at most 64 ranks");
    }
    three_calls_counted(world, "the session's communicator", 0);
    MPI_Comm_split(world, 0, size - 1 - rank, &reordered);
    three_calls_counted(reordered, "a reordered split of the session's communicator", size > 1);
    if (rank == 0) {
        printf("session %d: the three collectives checked\n", round);
    }
    MPI_Comm_free(&reordered);
    rx_pvar_finalize();
    status = rx_finish_on(world, "comm_from_group --sessions");
    MPI_Comm_free(&world);
    MPI_Group_free(&group);
    MPI_Session_finalize(&session);
    return status;
}

/* A session's communicator made before MPI_Init, used on both sides of it
 * and of the end of MPI_COMM_WORLD's first use. */
static int session_before_init(int *argc, char ***argv)
{
    MPI_Session session;
    MPI_Group group;
    MPI_Comm from_session, dup;

    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &session);
    pvars_open();
    MPI_Group_from_session_pset(session, "mpi://WORLD", &group);
    MPI_Comm_create_from_group(group, "org.ringx.test.before_init", MPI_INFO_NULL,
                               MPI_ERRORS_ARE_FATAL, &from_session);
    three_calls_counted(from_session, "a session's communicator before MPI_Init", 0);
    MPI_Init(argc, argv);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    three_calls_counted(dup, "a dup of MPI_COMM_WORLD beside a session", 1);
    three_calls_counted(from_session, "a session's communicator after MPI_Init", 0);
    MPI_Comm_free(&from_session);
    MPI_Group_free(&group);
    MPI_Session_finalize(&session);
    three_calls_counted(dup, "a dup of MPI_COMM_WORLD after the session", 1);
    MPI_Comm_free(&dup);
    rx_pvar_finalize();
    int status = rx_finish("comm_from_group --session-before-init");
    MPI_Finalize();
    return status;
}

int main(int argc, char **argv)
{
    int status = 0;

    if (argc > 1 && strcmp(argv[1], "--session-before-init") == 0) {
        return session_before_init(&argc, &argv);
    }
    if (argc < 2 || strcmp(argv[1], "--sessions") != 0) {
        return beside_world(&argc, &argv);
    }
    for (int round = 1; round <= 2; round++) {
        status |= one_session(round);
    }
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
