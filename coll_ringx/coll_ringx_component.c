/*
 * coll_ringx_component.c - the component: MCA variables, open and close.
 *
 * UCX is not touched here: it starts when ringx first connects a
 * communicator (MPI_COMM_WORLD in MPI_Init; in a program of MPI Sessions,
 * the first communicator whose collective ringx serves), so ompi_info and
 * processes that never need it pay nothing.
 */
#include "coll_ringx.h"

#include <dirent.h>
#include <unistd.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"

/* Above tuned (30), han and coll/cuda (78): below coll/cuda ringx would
 * never see a device buffer in a CUDA-aware Open MPI. */
#define RINGX_DEFAULT_PRIORITY 90
#define RINGX_DEFAULT_SEGMENT_SIZE (512 * 1024)
#define RINGX_DEFAULT_PIPELINE_DEPTH 4
/* Send-side bounce buffers per staged call: enough to keep copies out,
 * transfers and the receiver's copies in of a few segments in flight. */
#define RINGX_DEFAULT_BOUNCE_BUFFERS 4
#define RINGX_DEFAULT_MAILBOX_BYTES 4096
/* A busy process keeps a core it got from a yield for a time slice (1.3 ms
 * and more on the development machine), ranks of a job on a quiet machine
 * rarely that long.  np 4 and 8 with two busy processes beside them, 8 B -
 * 4 MiB (2 launches each): no size below 0.95x the stock collectives'
 * speed with 300, against 0-4 per launch without sleeping; quiet: alike.
 * See README, "One node under load". */
#define RINGX_DEFAULT_SLEEP_AFTER_YIELD_US 300
/* Flat is faster where few ranks share a node: the leader finds the
 * others' messages in its mailboxes at once, where a tree makes some ranks
 * wait for their subtree and pass it on (2 test hosts x 4 ranks on the
 * 2-core development machine, 6 interleaved runs of ringx_bench -b 64 -e
 * 4K each: the binomial tree took 1.02-1.32x the flat one's time, medians
 * per size).  Beyond 8, the L - 1 steps each way outgrow the mailboxes'
 * 16 steps, and a leader takes its node's messages one after another. */
#define RINGX_DEFAULT_LEADERS_FLAT_RANKS 8
/* Measured with ringx_bench --load on the development machine (2 cores):
 * see README, "One node under load". */
#define RINGX_DEFAULT_DIRECT_BUFFER_BYTES (256 * 1024)
#define RINGX_DEFAULT_OUTBOX_BYTES (4 * 1024 * 1024)
#define RINGX_MAX_BOUNCE_BUFFERS 64
/* UCX 1.13's automatic rendezvous threshold over TCP lies below 32 KiB
 * (a 32 KiB message there went faster with any fixed threshold above it).
 * On 2 test hosts x 2 ranks, links shaped to 10 Gbit/s (3 interleaved runs
 * of ringx_bench -b 16K -e 8M per value), 256 KiB took 0.35-0.90x the time
 * of UCX's choice at 128-512 KiB and 0.93-1.06x from 1 MiB; 64 KiB 0.36-1.03x
 * at 128-512 KiB, and in full runs against coll/han allgathers of 256-512
 * KiB fell to 0.25-0.69x han's speed, against 0.71-0.74x with 256 KiB.  The
 * price, at 1 Gbit/s (3 runs of -b 128K -e 1M): reduce_scatter_block of
 * 256-512 KiB took 1.4-2.0x the time (still 1.0-1.4x the stock one's
 * speed); the rest of those runs stayed within 0.99-1.01x.  One node
 * keeps UCX's choice: there a fixed threshold made allreduce of 4-16 KiB
 * 1.3x slower. */
#define RINGX_DEFAULT_UCX_RNDV_THRESH (256 * 1024)
/* RINGX_DEFAULT_FILL (coll_ringx_compat.h): the stock components that
 * serve the other collectives under the default selection: self
 * (MPI_COMM_SELF), inter (intercommunicators), tuned and basic (blocking),
 * libnbc (nonblocking and persistent), and on 5.0 ftagree (agreement). */

static int ringx_register(void);
static int ringx_open(void);
static int ringx_close(void);
static int ringx_init_query(bool enable_progress_threads, bool enable_mpi_threads);

mca_coll_ringx_component_t mca_coll_ringx_component = {
    .super = {
        .collm_version = {
            RINGX_COLL_BASE_VERSION,
            .mca_component_name = "ringx",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = ringx_open,
            .mca_close_component = ringx_close,
            .mca_register_component_params = ringx_register,
        },
        .collm_data = { .param_field = MCA_BASE_METADATA_PARAM_NONE },
        .collm_init_query = ringx_init_query,
        .collm_comm_query = mca_coll_ringx_comm_query,
    },
    .priority = RINGX_DEFAULT_PRIORITY,
    .verbose = 0,
    .segment_size = RINGX_DEFAULT_SEGMENT_SIZE,
    .pipeline_depth = RINGX_DEFAULT_PIPELINE_DEPTH,
    .yield = -1,
    .sleep_after_yield_us = RINGX_DEFAULT_SLEEP_AFTER_YIELD_US,
    .gpu_bounce_buffers = RINGX_DEFAULT_BOUNCE_BUFFERS,
    .mailbox_bytes = RINGX_DEFAULT_MAILBOX_BYTES,
    .leaders_flat_ranks = RINGX_DEFAULT_LEADERS_FLAT_RANKS,
    .direct_buffer_bytes = RINGX_DEFAULT_DIRECT_BUFFER_BYTES,
    .outbox_bytes = RINGX_DEFAULT_OUTBOX_BYTES,
    .single_copy = true,
    .ucx_rndv_thresh = RINGX_DEFAULT_UCX_RNDV_THRESH,
    .output = -1,
};

static const mca_base_component_t *self(void)
{
    return &mca_coll_ringx_component.super.collm_version;
}

/*
 * Scopes: variables that every rank must agree on are ALL_EQ, which also
 * lets MPI_T change them at run time (the benchmark makes its stock
 * communicator by setting the priority to -1 around MPI_Comm_dup).
 */
static int register_var(const char *name, const char *help, mca_base_var_type_t type,
                        mca_base_var_enum_t *values, mca_base_var_info_lvl_t level,
                        mca_base_var_scope_t scope, void *storage)
{
    mca_base_var_flag_t flags =
        scope == MCA_BASE_VAR_SCOPE_ALL_EQ ? MCA_BASE_VAR_FLAG_SETTABLE : 0;
    return mca_base_component_var_register(self(), name, help, type, values, 0, flags, level,
                                           scope, storage);
}

static int direct_buffer_bytes_var = -1;

int ringx_direct_buffer_bytes_set(void)
{
    mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;

    if (direct_buffer_bytes_var < 0 ||
        mca_base_var_get_value(direct_buffer_bytes_var, NULL, &source, NULL) != OPAL_SUCCESS) {
        return 0;
    }
    return source != MCA_BASE_VAR_SOURCE_DEFAULT;
}

/* The algorithm names a collective accepts, as an enumerator for its
 * algorithm variable (ompi_info lists them). */
static mca_base_var_enum_t *algorithm_enum(ringx_coll_t coll)
{
    static mca_base_var_enum_value_t values[RINGX_COLL_COUNT][RINGX_ALG_COUNT + 1];
    mca_base_var_enum_t *e = NULL;
    char enum_name[64];
    int n = 0;

    for (int alg = 0; alg < RINGX_ALG_COUNT; alg++) {
        if (ringx_alg_valid(coll, (ringx_alg_t)alg)) {
            values[coll][n].value = alg;
            values[coll][n].string = ringx_alg_name((ringx_alg_t)alg);
            n++;
        }
    }
    values[coll][n].value = 0;
    values[coll][n].string = NULL;
    snprintf(enum_name, sizeof(enum_name), "coll_ringx_%s_algorithms", ringx_coll_name(coll));
    if (mca_base_var_enum_create(enum_name, values[coll], &e) != OPAL_SUCCESS) {
        return NULL;
    }
    return e;
}

static void register_collective_params(ringx_coll_t coll)
{
    mca_coll_ringx_component_t *c = &mca_coll_ringx_component;
    const char *cname = ringx_coll_name(coll);
    const char *mpi_name = ringx_coll_mpi_name(coll);
    char name[64], help[1024];
    mca_base_var_enum_t *algorithms = algorithm_enum(coll);

    c->enable[coll] = true;
    snprintf(name, sizeof(name), "%s_enable", cname);
    snprintf(help, sizeof(help),
             "Serve %s with ringx (1) or hand every call to the previous component (0)",
             mpi_name);
    register_var(name, help, MCA_BASE_VAR_TYPE_BOOL, NULL, OPAL_INFO_LVL_5,
                 MCA_BASE_VAR_SCOPE_ALL_EQ, &c->enable[coll]);

    c->algorithm[coll] = RINGX_ALG_AUTO;
    snprintf(name, sizeof(name), "%s_algorithm", cname);
    snprintf(help, sizeof(help),
             "Algorithm for %s: auto lets ringx choose by message size and rank "
             "count; any other value forces that algorithm", mpi_name);
    register_var(name, help, MCA_BASE_VAR_TYPE_INT, algorithms, OPAL_INFO_LVL_5,
                 MCA_BASE_VAR_SCOPE_ALL_EQ, &c->algorithm[coll]);
    if (algorithms != NULL) {
        OBJ_RELEASE(algorithms);
    }

    c->thresholds[coll] = (char *)ringx_defaults_builtin(coll);
    snprintf(name, sizeof(name), "%s_thresholds", cname);
    snprintf(help, sizeof(help),
             "What auto chooses for %s by buffer size, as MAX:ALGORITHM,...,ALGORITHM "
             "(bytes, K/M/G allowed; the last algorithm covers larger buffers). A|B: A where "
             "it runs without folding ranks (recursive doubling, halving and Rabenseifner on "
             "powers of two), else B. A rules file (coll_ringx_rules_file) takes precedence",
             mpi_name);
    register_var(name, help, MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_5,
                 MCA_BASE_VAR_SCOPE_ALL_EQ, &c->thresholds[coll]);

    c->leaders_bytes[coll] = ringx_hier_leaders_default(coll);
    snprintf(name, sizeof(name), "%s_leaders_bytes", cname);
    snprintf(help, sizeof(help),
             "Where the hierarchical algorithm serves %s (several nodes), calls of up to this "
             "many bytes (the whole buffer) per rank of a node, ranks counted up to 4, go "
             "through one leader per node; larger ones through rings among all ranks. The "
             "leaders send fewer, larger messages between nodes (they win where latency "
             "counts); the rings share the data among all ranks (they win where the links' "
             "bandwidth counts). 0: never. Must be the same on every rank", mpi_name);
    register_var(name, help, MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_6,
                 MCA_BASE_VAR_SCOPE_ALL_EQ, &c->leaders_bytes[coll]);
}

static int ringx_register(void)
{
    mca_coll_ringx_component_t *c = &mca_coll_ringx_component;
    static mca_base_var_enum_value_t yield_values[] = {
        { -1, "auto" }, { 0, "never" }, { 1, "always" }, { 0, NULL }
    };
    mca_base_var_enum_t *yield_enum = NULL;

    register_var("priority",
                 "Priority of the ringx coll component (default 90: above tuned, han and "
                 "coll/cuda); negative: ringx takes no communicator created from now on",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
                 &c->priority);
    register_var("verbose",
                 "Verbosity of ringx: 1 = setup and fallbacks, 2 = every call served and "
                 "the algorithm chosen, 3 = communicators declined",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
                 &c->verbose);
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        register_collective_params((ringx_coll_t)coll);
    }
    c->rules_file = NULL;
    register_var("rules_file",
                 "File of rules \"<collective> <np_min> <np_max> <max_bytes> <algorithm>\" "
                 "choosing the algorithm per rank count and size, as written by "
                 "ringx_bench --write-rules; used before the thresholds",
                 MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
                 &c->rules_file);
    register_var("segment_size",
                 "Pipeline segment size in bytes (the same on every rank): each ring block "
                 "travels in segments of this size so that reducing one segment overlaps "
                 "the transfer of the next",
                 MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
                 &c->segment_size);
    register_var("ucx_rndv_thresh",
                 "Rendezvous threshold (bytes) of ringx's own UCX context on machines without "
                 "RDMA devices (no /sys/class/infiniband entry), where UCX carries messages "
                 "between nodes over TCP: UCX's automatic threshold there is a few KiB, and "
                 "each larger message waits for a round trip before its data moves. Messages "
                 "below it go eagerly. 0: UCX's own choice; UCX_RNDV_THRESH in the environment "
                 "takes precedence. Must be the same on every rank",
                 MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
                 &c->ucx_rndv_thresh);
    register_var("leaders_flat_ranks",
                 "Ranks per node (the same on every rank) up to which the hierarchical "
                 "algorithms' node leaders take their node's data for small calls straight "
                 "from every rank and hand the result to every rank; with more ranks per "
                 "node, along a binomial tree",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
                 &c->leaders_flat_ranks);
    register_var("pipeline_depth",
                 "Receives kept in flight per ring walk or exchange step (each holds one "
                 "segment; 1 to 16)",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL,
                 &c->pipeline_depth);
    (void)mca_base_var_enum_create("coll_ringx_yield_modes", yield_values, &yield_enum);
    register_var("yield",
                 "Yield the CPU while waiting for the network: auto = when Open MPI's "
                 "mpi_yield_when_idle is set or the node has more ranks than cores",
                 MCA_BASE_VAR_TYPE_INT, yield_enum, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL,
                 &c->yield);
    register_var("sleep_after_yield_us",
                 "Where waits yield the CPU: once a yield took at least this many microseconds "
                 "(other processes hold the core), waits for ranks of the same node (direct "
                 "reads, outboxes) sleep until a peer wakes them, for the next 20 ms, instead "
                 "of yielding. 0: never sleep; negative: sleep at every such wait (testing)",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL,
                 &c->sleep_after_yield_us);
    if (yield_enum != NULL) {
        OBJ_RELEASE(yield_enum);
    }
    register_var("gpu_force_staging",
                 "Stage device buffers through pinned host bounce buffers even when UCX "
                 "can move CUDA memory itself",
                 MCA_BASE_VAR_TYPE_BOOL, NULL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
                 &c->gpu_force_staging);
    register_var("gpu_bounce_buffers",
                 "Pinned host bounce buffers (of coll_ringx_segment_size bytes each) for the "
                 "sends of a staged call, 1 to 64; its receives get coll_ringx_pipeline_depth "
                 "more",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL,
                 &c->gpu_bounce_buffers);
    register_var("stage_host_buffers",
                 "Testing: send host buffers through the staging pipeline too (bounce "
                 "buffers, host copies), to exercise it on machines without a GPU",
                 MCA_BASE_VAR_TYPE_BOOL, NULL, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
                 &c->stage_host_buffers);
    register_var("test_outbox_delay_us",
                 "Testing: microseconds a rank sleeps in each call through the outboxes "
                 "after publishing its input, before reading the peers' (0: never), so that "
                 "the peers leave the call first",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
                 &c->test_outbox_delay_us);
    register_var("test_own_ids",
                 "Testing: how many ids of its own ringx chooses from for communicators whose "
                 "members share no context id (Open MPI 5: MPI_Comm_create_from_group, "
                 "sessions); 0: all 8388608. With 1, a second such communicator alive at once "
                 "finds the id taken and falls back",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
                 &c->test_own_ids);
    register_var("mailbox_bytes",
                 "Largest message (bytes, at most 65536) that a rank writes straight into the "
                 "memory of a peer on its node instead of sending it through UCX's message "
                 "queues; 0: never. Used by the exchange steps of blocking calls between "
                 "ranks of one node, also inside communicators that span nodes. Per "
                 "communicator (64 at most) each process reserves in shared memory 32 slots "
                 "of this size, two outboxes as large as 16 slots through which blocking "
                 "direct reads (algorithm direct_read) pass a piece of each rank's data at a "
                 "time (beyond the first 16 communicators: see coll_ringx_outbox_bytes), "
                 "and 4 outboxes of 256 KiB (or this size, if larger) for nonblocking "
                 "and persistent ones. 0 also turns the outboxes off and makes direct reads "
                 "read the peers' buffers themselves at every size (allreduce only with "
                 "single copies; it declines otherwise)",
                 MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                 &c->mailbox_bytes);
    direct_buffer_bytes_var = register_var(
        "direct_buffer_bytes",
        "Direct reads (algorithm direct_read) of calls of at least this many bytes (the whole "
        "buffer: reduced, gathered, or reduce_scatter_block's input) read the peers' buffers "
        "themselves with single copies instead of passing through the outboxes a piece at a "
        "time: a few synchronisations per call instead of one or two per piece, which holds "
        "up when ranks are descheduled (busy or oversubscribed cores). Needs single copies "
        "(UCX's cma transport) between every pair of ranks; the smallest value of the ranks "
        "counts. 0: outboxes for every size. Left at its default, allgather reads the "
        "buffers from 32768 bytes and reduce_scatter_block from 16384 where no rank yields "
        "its core (see coll_ringx_yield), and where ranks share cores allgathers never read "
        "them (through the outboxes of coll_ringx_outbox_bytes, in pieces beyond one)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->direct_buffer_bytes);
    register_var("outbox_bytes",
                 "Size (bytes, at most 1 GiB) of each of the two outboxes through which the "
                 "blocking calls of the first 16 communicators (context ids below 16) pass "
                 "their data on one node (algorithm direct_read), and of each of the four "
                 "posted outboxes of their nonblocking and persistent calls, in place of the "
                 "outboxes of coll_ringx_mailbox_bytes (64.9 KiB with its default; posted: 256 "
                 "KiB): a call that fits takes one piece, a synchronisation or two, and where "
                 "ranks share cores (see coll_ringx_yield) blocking allreduce and "
                 "reduce_scatter_block calls up to this size, and allgathers of any size (in "
                 "pieces beyond one), go through them rather than read the peers' buffers. "
                 "Each process reserves six times this per communicator in shared memory "
                 "(virtual; touched only where calls use it). 0, or no larger than the mailbox "
                 "outboxes: none. The same on every rank",
                 MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                 &c->outbox_bytes);
    register_var("single_copy",
                 "Direct reads out of the peers' buffers (algorithm direct_read from "
                 "coll_ringx_direct_buffer_bytes, or without outboxes: coll_ringx_mailbox_bytes "
                 "0) copy straight from the peer's memory "
                 "through UCX's cma transport where it opens; false: through UCP gets, which "
                 "UCX 1.13 carries between processes of a node as messages the peer answers",
                 MCA_BASE_VAR_TYPE_BOOL, NULL, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
                 &c->single_copy);
    c->fill = RINGX_DEFAULT_FILL;
    register_var("fill",
                 "Open MPI coll components that ringx loads to serve the collective slots "
                 "that no selected component fills on a communicator (e.g. under --mca coll "
                 "ringx); each such slot goes to the one of highest priority that provides it. "
                 "Selected components are never loaded again. Empty: fill nothing",
                 MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                 &c->fill);
    return mca_coll_ringx_register_pvars();
}

/* Applies the thresholds and the rules file; a bad value is reported and
 * the built-in choice stays. */
static void load_choices(mca_coll_ringx_component_t *c)
{
    char err[256];
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        if (c->thresholds[coll] && ringx_defaults_set((ringx_coll_t)coll, c->thresholds[coll])) {
            opal_output(0, "coll:ringx: ignoring coll_ringx_%s_thresholds=\"%s\" (not "
                           "MAX:ALGORITHM,...,ALGORITHM of %s's algorithms, A|B allowed); "
                           "using \"%s\"",
                        ringx_coll_name((ringx_coll_t)coll), c->thresholds[coll],
                        ringx_coll_name((ringx_coll_t)coll),
                        ringx_defaults_builtin((ringx_coll_t)coll));
            (void)ringx_defaults_set((ringx_coll_t)coll, ringx_defaults_builtin((ringx_coll_t)coll));
        }
    }
    ringx_rules_clear();
    if (c->rules_file && c->rules_file[0]) {
        int n = ringx_rules_load(c->rules_file, err, sizeof(err));
        if (n < 0) {
            opal_output(0, "coll:ringx: ignoring coll_ringx_rules_file: %s", err);
        } else {
            RINGX_LOG(1, "%d rules read from %s", n, c->rules_file);
        }
    }
}

static int ringx_open(void)
{
    mca_coll_ringx_component_t *c = &mca_coll_ringx_component;

    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    if (!ringx_algs_complete()) {
        return OMPI_ERROR;          /* a chosen algorithm would have nothing to run */
    }
    /* The size Open MPI's class gives its nonblocking requests, against the
     * layout ringx mirrors (coll_ringx_compat.h): should they ever differ,
     * ringx serves blocking calls only. */
    c->requests = ompi_coll_base_nbc_request_t_class.cls_sizeof == sizeof(ringx_nbc_request_head_t);
    if (!c->requests) {
        opal_output(0, "coll:ringx: Open MPI's nonblocking collective requests are %zu bytes, "
                       "not the %zu this ringx was built for: nonblocking and persistent calls "
                       "go to the previous component",
                    ompi_coll_base_nbc_request_t_class.cls_sizeof,
                    sizeof(ringx_nbc_request_head_t));
    }
    load_choices(c);
    if (c->segment_size == 0) {
        c->segment_size = RINGX_DEFAULT_SEGMENT_SIZE;
    }
    if (c->pipeline_depth < 1 || c->pipeline_depth > RINGX_MAX_PIPELINE_DEPTH) {
        c->pipeline_depth = c->pipeline_depth < 1 ? 1 : RINGX_MAX_PIPELINE_DEPTH;
    }
    if (c->gpu_bounce_buffers < 1 || c->gpu_bounce_buffers > RINGX_MAX_BOUNCE_BUFFERS) {
        c->gpu_bounce_buffers = c->gpu_bounce_buffers < 1 ? 1 : RINGX_MAX_BOUNCE_BUFFERS;
    }
    return OMPI_SUCCESS;
}

static int ringx_close(void)
{
    ringx_requests_close();
    ringx_fill_close();
    ringx_job_release();
    ringx_mailbox_close();
    ringx_ucx_stop();
#if RINGX_HAVE_CUDA
    ringx_cuda_close();        /* after UCX: it may have registered bounce buffers */
#endif
    if (mca_coll_ringx_component.output >= 0) {
        opal_output_close(mca_coll_ringx_component.output);
        mca_coll_ringx_component.output = -1;
    }
    return OMPI_SUCCESS;
}

static int ringx_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    return OMPI_SUCCESS;
}

int mca_coll_ringx_should_yield(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int oversubscribed = cores > 0 && opal_process_info.num_local_peers + 1 > cores;

    if (mca_coll_ringx_component.yield >= 0) {
        return mca_coll_ringx_component.yield;
    }
    return opal_progress_yield_when_idle || oversubscribed;
}

/* Whether this machine has RDMA devices (InfiniBand, RoCE) for UCX. */
static int has_rdma_devices(void)
{
    DIR *dir = opendir("/sys/class/infiniband");
    struct dirent *entry;
    int found = 0;

    while (dir != NULL && !found && (entry = readdir(dir)) != NULL) {
        found = entry->d_name[0] != '.';
    }
    if (dir != NULL) {
        closedir(dir);
    }
    return found;
}

size_t mca_coll_ringx_ucx_rndv_thresh(struct ompi_communicator_t *comm)
{
    /* A program of MPI Sessions alone (no MPI_Init) has no MPI_COMM_WORLD:
     * the first communicator ringx connects tells whether the job spans nodes. */
    struct ompi_communicator_t *job = ompi_mpi_comm_world.comm.c_local_group != NULL
                                          ? &ompi_mpi_comm_world.comm
                                          : comm;
    int spans_nodes = (int)opal_process_info.num_local_peers + 1 < ompi_comm_size(job);

    if (mca_coll_ringx_component.ucx_rndv_thresh == 0 || !spans_nodes || has_rdma_devices()) {
        return 0;
    }
    return mca_coll_ringx_component.ucx_rndv_thresh;
}
