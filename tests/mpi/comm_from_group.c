/*
 * comm_from_group.c - communicators whose members share no context id, and
 * programs of MPI Sessions alone.
 *
 * Open MPI 5 gives a communicator made by MPI_Comm_create_from_group (MPI
 * 4.0, sessions) no index that is the same on every member, which ringx's
 * message tags need: ringx derives an id of its own from Open MPI's
 * extended context id, and must serve such communicators, counted by
 * coll_ringx_comms_own_id; a duplicate of MPI_COMM_WORLD next to it too.
 * Every result is checked.
 *
 *   comm_from_group              after MPI_Init, beside MPI_COMM_WORLD; a
 *                                second one whose first calls are
 *                                nonblocking (connected in MPI_Iallreduce)
 *   comm_from_group --sessions   no MPI_Init: a session's communicator of
 *                                "mpi://WORLD" and a reordered split of it,
 *                                both served, in two sessions one after the
 *                                other (Open MPI closes and reopens its
 *                                components between them)
 *   comm_from_group --session-before-init
 *                                a session's communicator made before
 *                                MPI_Init, used before and after it, a dup
 *                                of MPI_COMM_WORLD beside it, also after the
 *                                session's end: all served
 *   comm_from_group --session-reinit
 *                                (session_reinit.sh) a session whose
 *                                communicator only runs an MPI_Reduce (which
 *                                ringx does not serve), then one with the
 *                                three collectives, served (results checked):
 *                                ringx must start UCX in the second only (the
 *                                script counts its log lines).  Starting it
 *                                with every communicator made the next
 *                                MPI_Session_init fail in 7 of 12 runs of
 *                                MPICH's session_re_init at 4 ranks (Open MPI
 *                                5.0.7: a peer's shared-memory segment not
 *                                found), none without ringx.  (More sessions
 *                                in a row hang now and then in Open MPI 5.0.7
 *                                itself: 1 of 16 runs of four, with or
 *                                without ringx.)
 *   comm_from_group --clash      (run with coll_ringx_test_own_ids 1: every
 *                                such communicator derives the same id) two
 *                                communicators from a group alive at once:
 *                                the first one served, the second handed on
 *                                (fallback "communicator": its id is held);
 *                                once the first is freed, a third served
 *
 * Without MPI_Comm_create_from_group (Open MPI 4.1; Open MPI 5.0 has it
 * although it reports MPI 3.1) the program says SKIP and exits 77.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "ringx_pvars.h"
#include "ringx_test_util.h"

#if OMPI_MAJOR_VERSION >= 5
static const char *const colls[] = { "allreduce", "allgather", "reduce_scatter_block" };

enum { N = 1000 };

/* The three collectives on comm, blocking or nonblocking (outstanding
 * together), results checked. */
static void three_calls(MPI_Comm comm, const char *name, int nonblocking)
{
    static int in[64 * N], out[3][64 * N];
    MPI_Request req[3];
    int rank, size;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (size > 64) {
        rx_fail("at most 64 ranks");
        return;
    }
    for (int i = 0; i < size * N; i++) {
        in[i] = rank * 7 + i;
    }
    if (nonblocking) {
        MPI_Iallreduce(in, out[0], N, MPI_INT, MPI_SUM, comm, &req[0]);
        MPI_Iallgather(in, N, MPI_INT, out[1], N, MPI_INT, comm, &req[1]);
        MPI_Ireduce_scatter_block(in, out[2], N, MPI_INT, MPI_SUM, comm, &req[2]);
        MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
    } else {
        MPI_Allreduce(in, out[0], N, MPI_INT, MPI_SUM, comm);
        MPI_Allgather(in, N, MPI_INT, out[1], N, MPI_INT, comm);
        MPI_Reduce_scatter_block(in, out[2], N, MPI_INT, MPI_SUM, comm);
    }
    rx_call_t ar = { "allreduce", "MPI_INT", "MPI_SUM", N, 0, comm };
    for (int i = 0; i < N; i++) {
        rx_check(&ar, out[0][i] == 7 * size * (size - 1) / 2 + size * i, "%s: element %d", name, i);
    }
    rx_call_t ag = { "allgather", "MPI_INT", "-", N, 0, comm };
    for (int i = 0; i < size * N; i++) {
        rx_check(&ag, out[1][i] == (i / N) * 7 + i % N, "%s: element %d", name, i);
    }
    rx_call_t rs = { "reduce_scatter_block", "MPI_INT", "MPI_SUM", N, 0, comm };
    for (int i = 0; i < N; i++) {
        rx_check(&rs, out[2][i] == 7 * size * (size - 1) / 2 + size * (rank * N + i),
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

/* Each collective served once by ringx since counters_start() (as a
 * nonblocking call where nonblocking), or handed on once as fallback
 * "communicator" and not served. */
static void counters_check(int served, int nonblocking, const char *name)
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
        rx_check(NULL, after.nonblocking - before[c].nonblocking ==
                           (unsigned long long)(served && nonblocking),
                 "%s on %s: %llu nonblocking calls served by ringx, want %d", colls[c], name,
                 after.nonblocking - before[c].nonblocking, served && nonblocking);
    }
}

static void calls_counted(MPI_Comm comm, const char *name, int served, int nonblocking)
{
    counters_start();
    three_calls(comm, name, nonblocking);
    counters_check(served, nonblocking, name);
}

static void three_calls_counted(MPI_Comm comm, const char *name, int served)
{
    calls_counted(comm, name, served, 0);
}

static unsigned long long own_ids(void)
{
    unsigned long long v = 0;
    (void)ringx_pvar_read("coll_ringx_comms_own_id", &v);
    return v;
}

/* The communicators connected with an id of ringx's own since *since. */
static void own_ids_check(unsigned long long *since, unsigned long long want, const char *what)
{
    unsigned long long now = own_ids();

    rx_check(NULL, now - *since == want, "%s: %llu communicators with an id of ringx's own, want %llu",
             what, now - *since, want);
    *since = now;
}

static void pvars_open(void)
{
    if (rx_pvar_init() != 0 || !rx_component_loaded()) {
        rx_fail("the ringx component is not loaded (no coll_ringx pvars)");
    }
}

static MPI_Comm comm_from(MPI_Group group, const char *tag)
{
    MPI_Comm comm;

    MPI_Comm_create_from_group(group, tag, MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &comm);
    return comm;
}

/* MPI_Init, the pvars, MPI_COMM_WORLD's group; returns the count of
 * communicators with an id of ringx's own so far. */
static unsigned long long init_world(int *argc, char ***argv, MPI_Group *group)
{
    MPI_Init(argc, argv);
    pvars_open();
    MPI_Comm_group(MPI_COMM_WORLD, group);
    return own_ids();
}

static int beside_world(int *argc, char ***argv)
{
    MPI_Group group;
    MPI_Comm from_group, nonblocking, dup;

    unsigned long long own = init_world(argc, argv, &group);
    from_group = comm_from(group, "org.ringx.test.from_group");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    three_calls_counted(from_group, "the communicator from a group", 1);
    own_ids_check(&own, 1, "the communicator from a group");
    three_calls_counted(dup, "a dup of MPI_COMM_WORLD", 1);
    own_ids_check(&own, 0, "a dup of MPI_COMM_WORLD");
    /* connected inside a nonblocking call, two such communicators alive */
    nonblocking = comm_from(group, "org.ringx.test.from_group.nonblocking");
    calls_counted(nonblocking, "a communicator from a group, nonblocking calls first", 1, 1);
    three_calls_counted(nonblocking, "the same, blocking calls", 1);
    calls_counted(from_group, "the first one, nonblocking calls", 1, 1);
    own_ids_check(&own, 1, "a second communicator from a group");
    MPI_Comm_free(&nonblocking);
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

    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &session);
    pvars_open();
    MPI_Group_from_session_pset(session, "mpi://WORLD", &group);
    world = comm_from(group, "org.ringx.test.sessions");
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    unsigned long long own = own_ids();
    three_calls_counted(world, "the session's communicator", 1);
    own_ids_check(&own, 1, "the session's communicator");
    MPI_Comm_split(world, 0, size - 1 - rank, &reordered);
    three_calls_counted(reordered, "a reordered split of the session's communicator", size > 1);
    own_ids_check(&own, 0, "a reordered split of the session's communicator");
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
    from_session = comm_from(group, "org.ringx.test.before_init");
    unsigned long long own = own_ids();
    three_calls_counted(from_session, "a session's communicator before MPI_Init", 1);
    own_ids_check(&own, 1, "a session's communicator before MPI_Init");
    MPI_Init(argc, argv);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    three_calls_counted(dup, "a dup of MPI_COMM_WORLD beside a session", 1);
    three_calls_counted(from_session, "a session's communicator after MPI_Init", 1);
    own_ids_check(&own, 0, "the same after MPI_Init, and a dup of MPI_COMM_WORLD");
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

/* One session whose communicator runs a reduction ringx does not serve:
 * the ranks leave it at different times. */
static void reduce_only_session(void)
{
    MPI_Session session;
    MPI_Group group;
    MPI_Comm comm;
    int rank, size, sum = 0;

    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &session);
    MPI_Group_from_session_pset(session, "mpi://WORLD", &group);
    comm = comm_from(group, "org.ringx.test.reinit");
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Reduce(&rank, &sum, 1, MPI_INT, MPI_SUM, 0, comm);
    rx_check(NULL, rank != 0 || sum == size * (size - 1) / 2, "MPI_Reduce: %d, want %d", sum,
             size * (size - 1) / 2);
    MPI_Comm_free(&comm);
    MPI_Group_free(&group);
    MPI_Session_finalize(&session);
}

static int session_reinit(void)
{
    reduce_only_session();
    return one_session(2);
}

/* Run with coll_ringx_test_own_ids 1: every communicator from a group
 * derives the same id, so only one of them at a time is served. */
static int clash(int *argc, char ***argv)
{
    MPI_Group group;
    MPI_Comm first, second, third;

    unsigned long long own = init_world(argc, argv, &group);
    first = comm_from(group, "org.ringx.test.clash.1");
    second = comm_from(group, "org.ringx.test.clash.2");
    three_calls_counted(first, "the first communicator from a group", 1);
    three_calls_counted(second, "a second one while the first holds the id", 0);
    own_ids_check(&own, 1, "two communicators from a group, one id");
    MPI_Comm_free(&first);
    third = comm_from(group, "org.ringx.test.clash.3");
    three_calls_counted(third, "a third one once the first is freed", 1);
    three_calls_counted(second, "the second one again", 0);
    own_ids_check(&own, 1, "the third communicator");
    MPI_Comm_free(&second);
    MPI_Comm_free(&third);
    MPI_Group_free(&group);
    rx_pvar_finalize();
    int status = rx_finish("comm_from_group --clash");
    MPI_Finalize();
    return status;
}

int main(int argc, char **argv)
{
    int status = 0;

    if (argc > 1 && strcmp(argv[1], "--session-before-init") == 0) {
        return session_before_init(&argc, &argv);
    }
    if (argc > 1 && strcmp(argv[1], "--clash") == 0) {
        return clash(&argc, &argv);
    }
    if (argc > 1 && strcmp(argv[1], "--session-reinit") == 0) {
        return session_reinit();
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
