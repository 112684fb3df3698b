/*
 * coll_ringx_pvar.c - MPI_T performance variables: the proof of which
 * algorithm served a call, and of every fallback.
 *
 * Each counter is a process-wide total over all communicators, read
 * through Open MPI's default pvar reader (ctx points at the counter).
 */
#include "coll_ringx.h"

#include <stdio.h>

#include "opal/mca/base/mca_base_pvar.h"

ringx_counters_t mca_coll_ringx_counters;

static int register_counter(const char *name, const char *description,
                            unsigned long long *counter)
{
    int index = mca_base_component_pvar_register(
        &mca_coll_ringx_component.super.collm_version, name, description,
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG,
        NULL, MPI_T_BIND_NO_OBJECT,
        MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL,
        counter);
    return index < 0 ? index : OMPI_SUCCESS;
}

/* The counters of one number per collective: pvar name suffix, and the
 * description, a format taking the MPI name of the collective. */
static const struct {
    const char *suffix;
    const char *description;
    unsigned long long *counters;
} totals[] = {
    { "bytes_sent", "bytes this process sent for %s calls served by ringx",
      mca_coll_ringx_counters.bytes_sent },
    { "on_device", "%s calls served by ringx on device (CUDA) memory",
      mca_coll_ringx_counters.on_device },
    { "staged", "%s calls served by ringx through host bounce buffers (staging)",
      mca_coll_ringx_counters.staged },
    { "nonblocking", "nonblocking %s calls (MPI_I...) served by ringx; also counted under "
      "their algorithm", mca_coll_ringx_counters.nonblocking },
    { "persistent", "starts of persistent %s calls (..._init, MPI_Start) served by ringx; also "
      "counted under their algorithm", mca_coll_ringx_counters.persistent },
    { "direct_buffers", "%s calls served by ringx's direct reads out of the peers' buffers "
      "(no outboxes)", mca_coll_ringx_counters.buffer_reads },
    { "handed_back", "%s calls the previous component handed back to ringx (it could not "
      "run them and called the communicator's table instead of its own fallback), served by Open "
      "MPI's point-to-point base algorithms", mca_coll_ringx_counters.handed_back },
    { "mailbox", "%s calls served by ringx that wrote or read at least one message through "
                 "the mailboxes or the outboxes, posted ones included (coll_ringx_mailbox_bytes)",
      mca_coll_ringx_counters.mailbox },
    { "sent_ahead", "%s calls served by ringx in which a later step's message left while an "
      "earlier step still received (the algorithm's phases overlapped)",
      mca_coll_ringx_counters.sent_ahead },
    { "packed", "%s calls served by ringx whose send or receive datatype leaves gaps: packed "
      "into and unpacked out of contiguous bytes with Open MPI's convertor (allgather only; the "
      "reductions hand such datatypes on)", mca_coll_ringx_counters.packed },
};

static int register_collective(ringx_coll_t coll)
{
    const char *cname = ringx_coll_name(coll);
    const char *mpi_name = ringx_coll_mpi_name(coll);
    char name[128], description[256];
    int rc = OMPI_SUCCESS;

    for (int alg = RINGX_ALG_AUTO + 1; alg < RINGX_ALG_COUNT && rc == OMPI_SUCCESS; alg++) {
        if (!ringx_alg_valid(coll, (ringx_alg_t)alg)) {
            continue;
        }
        snprintf(name, sizeof(name), "%s_%s_calls", cname, ringx_alg_name((ringx_alg_t)alg));
        snprintf(description, sizeof(description),
                 "%s calls served by ringx's %s algorithm", mpi_name,
                 ringx_alg_name((ringx_alg_t)alg));
        rc = register_counter(name, description, &mca_coll_ringx_counters.calls[coll][alg]);
    }
    for (int reason = 0; reason < RINGX_FALLBACK_COUNT && rc == OMPI_SUCCESS; reason++) {
        snprintf(name, sizeof(name), "%s_fallback_%s", cname,
                 ringx_fallback_name((ringx_fallback_t)reason));
        snprintf(description, sizeof(description),
                 "%s calls handed to the previous component (reason: %s)", mpi_name,
                 ringx_fallback_name((ringx_fallback_t)reason));
        rc = register_counter(name, description,
                              &mca_coll_ringx_counters.fallbacks[coll][reason]);
    }
    for (size_t i = 0; i < sizeof(totals) / sizeof(totals[0]) && rc == OMPI_SUCCESS; i++) {
        snprintf(name, sizeof(name), "%s_%s", cname, totals[i].suffix);
        snprintf(description, sizeof(description), totals[i].description, mpi_name);
        rc = register_counter(name, description, &totals[i].counters[coll]);
    }
    return rc;
}

/* Counters of the process, not of a collective. */
static const struct {
    const char *name;
    const char *description;
    unsigned long long *counter;
} process_counters[] = {
    { "comms_one_node", "communicators ringx connected whose ranks all share a node (Open MPI's "
      "locality): direct reads may serve them",
      &mca_coll_ringx_counters.comms_one_node },
    { "comms_multi_node", "communicators ringx connected whose ranks are on more than one node: "
      "only message-based algorithms serve them (flat or hierarchical; mailboxes only between "
      "ranks of one node)",
      &mca_coll_ringx_counters.comms_multi_node },
    { "comms_exchanged", "communicators whose connection exchanged worker addresses because some "
      "member met a process it had not met in an earlier communicator; the others connected "
      "with one small agreement, or none", &mca_coll_ringx_counters.comms_exchanged },
    { "comms_from_world", "communicators connected without any message: every member is a "
      "process of MPI_COMM_WORLD, whose connection in MPI_Init told every process what it needs "
      "of every other", &mca_coll_ringx_counters.comms_from_world },
    { "comms_own_id", "communicators ringx connected whose members share no context id it can "
      "use (Open MPI 5: made with MPI_Comm_create_from_group or from a session): their messages "
      "carry an id ringx derived from Open MPI's extended context id",
      &mca_coll_ringx_counters.comms_own_id },
    { "comms_hierarchical", "communicators ringx connected across nodes with the same number of "
      "ranks (2 or more) on every node: the hierarchical algorithms may serve them",
      &mca_coll_ringx_counters.comms_hierarchical },
    { "comms_uneven", "communicators ringx connected across nodes with different numbers of "
      "ranks per node: the flat message-based algorithms serve them, not the hierarchical ones",
      &mca_coll_ringx_counters.comms_uneven },
    { "waits_slept", "waits for ranks of this node that slept until a peer woke them, after a "
      "yield showed other processes holding the core (coll_ringx_sleep_after_yield_us)",
      &mca_coll_ringx_counters.waits_slept },
    { "sleeps_timed_out", "of coll_ringx_waits_slept, those that ended at the time limit (1 ms) "
      "rather than woken by a peer", &mca_coll_ringx_counters.sleeps_timed_out },
    { "rings_missed", "of coll_ringx_sleeps_timed_out, those after which the first look found "
      "what the wait was for already there: the peer stored it without waking the sleeper "
      "(a peer descheduled between its store and its ring, rarely; many: a ring lost)",
      &mca_coll_ringx_counters.rings_missed },
    { "progress_waits_slept", "of coll_ringx_waits_slept, those in Open MPI's progress: waits "
      "(MPI_Wait and the like) for nonblocking and persistent calls",
      &mca_coll_ringx_counters.progress_slept },
};

int mca_coll_ringx_register_pvars(void)
{
    int rc = OMPI_SUCCESS;

    for (size_t i = 0; i < sizeof(process_counters) / sizeof(process_counters[0]) &&
                       rc == OMPI_SUCCESS; i++) {
        rc = register_counter(process_counters[i].name, process_counters[i].description,
                              process_counters[i].counter);
    }
    for (int coll = 0; coll < RINGX_COLL_COUNT && rc == OMPI_SUCCESS; coll++) {
        rc = register_collective((ringx_coll_t)coll);
    }
    return rc;
}
