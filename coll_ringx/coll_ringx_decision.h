/*
 * coll_ringx_decision.h - which algorithm serves a call, and the names of
 * collectives, algorithms and fallback reasons used by MCA variables,
 * performance variables and log lines.  Pure C: unit-tested without MPI.
 */
#ifndef COLL_RINGX_DECISION_H
#define COLL_RINGX_DECISION_H

#include <stddef.h>

typedef enum ringx_coll {
    RINGX_COLL_ALLREDUCE,
    RINGX_COLL_ALLGATHER,
    RINGX_COLL_REDUCE_SCATTER_BLOCK,
    RINGX_COLL_COUNT
} ringx_coll_t;

/* RINGX_ALG_AUTO is only a request ("let ringx choose"), never a result. */
typedef enum ringx_alg {
    RINGX_ALG_AUTO,
    RINGX_ALG_RING,
    RINGX_ALG_RECURSIVE_DOUBLING,   /* allreduce, allgather (powers of two) */
    RINGX_ALG_RABENSEIFNER,         /* allreduce */
    RINGX_ALG_BRUCK,                /* allgather */
    RINGX_ALG_RECURSIVE_HALVING,    /* reduce_scatter_block */
    RINGX_ALG_NEIGHBOR_EXCHANGE,    /* allgather (even rank counts) */
    RINGX_ALG_DIRECT_READ,          /* every collective (one node) */
    RINGX_ALG_HIERARCHICAL,         /* every collective (several nodes, as many ranks on each) */
    RINGX_ALG_COUNT
} ringx_alg_t;

/* Neighbour exchange takes p/2 steps; beyond this many ranks the ring
 * serves instead (the step list of a call has a fixed size). */
#define RINGX_NEIGHBOR_EXCHANGE_MAX_RANKS 128

typedef enum ringx_fallback {
    RINGX_FALLBACK_DISABLED,   /* collective switched off by its MCA variable */
    RINGX_FALLBACK_DATATYPE,   /* derived, non-contiguous or unsupported datatype */
    RINGX_FALLBACK_OP,         /* user-defined, non-commutative or undefined for the type */
    RINGX_FALLBACK_MEMORY,     /* buffer memory ringx does not handle */
    RINGX_FALLBACK_TRANSPORT,  /* UCX unavailable on some rank of the communicator */
    RINGX_FALLBACK_COMMUNICATOR, /* no context id common to every member that fits the tags */
    RINGX_FALLBACK_COUNT
} ringx_fallback_t;

const char *ringx_coll_name(ringx_coll_t coll);      /* "allreduce" */
const char *ringx_coll_mpi_name(ringx_coll_t coll);  /* "MPI_Allreduce" */
const char *ringx_alg_name(ringx_alg_t alg);
const char *ringx_fallback_name(ringx_fallback_t reason);

/* The collective / algorithm called name, or RINGX_COLL_COUNT / RINGX_ALG_COUNT. */
ringx_coll_t ringx_coll_by_name(const char *name);
ringx_alg_t ringx_alg_by_name(const char *name);

/* Whether alg is an algorithm of coll (AUTO is valid for every collective). */
int ringx_alg_valid(ringx_coll_t coll, ringx_alg_t alg);

/* Where a communicator's ranks are, as the choice sees it. */
typedef enum ringx_layout_kind {
    RINGX_LAYOUT_FLAT,          /* message-based algorithms only */
    RINGX_LAYOUT_ONE_NODE,      /* every rank maps every other's window: direct reads */
    RINGX_LAYOUT_NODES          /* several nodes, as many ranks (2 or more) on each:
                                 * the hierarchical algorithms */
} ringx_layout_kind_t;

/* Whether alg can run on comm_size ranks laid out as layout (recursive
 * doubling allgather needs a power of two, direct reads one node, the
 * hierarchical algorithms several even nodes). */
int ringx_alg_runs_on(ringx_coll_t coll, ringx_alg_t alg, int comm_size, int layout);

/* Whether alg runs on comm_size ranks without folding the ranks beyond a
 * power of two into partners (recursive doubling and halving, Rabenseifner
 * fold on other counts; the thresholds' "a|b" picks a only where it fits). */
int ringx_alg_fits(ringx_coll_t coll, ringx_alg_t alg, int comm_size, int layout);

/*
 * Rules: "for coll on np_min..np_max ranks, buffers up to max_bytes use
 * alg".  A rules file holds one per line:
 *     <collective> <np_min> <np_max> <max_bytes> <algorithm>
 * ("#" starts a comment; max_bytes may be "inf").  The benchmark writes
 * such files from its measurements (ringx_bench --write-rules).
 */
typedef struct ringx_rule {
    ringx_coll_t coll;
    int np_min, np_max;
    size_t max_bytes;
    ringx_alg_t alg;
} ringx_rule_t;

/* Parses one line: 1 if it holds a rule, 0 if blank or comment, -1 if
 * malformed. */
int ringx_rule_parse(const char *line, ringx_rule_t *rule);

/* Writes rule as a rules-file line (with newline); returns its length. */
int ringx_rule_format(const ringx_rule_t *rule, char *buf, size_t len);

/* "4096", "64K", "1M", "2G", "inf" -> bytes (inf: SIZE_MAX); 0 or -1. */
int ringx_parse_bytes(const char *text, size_t *bytes);

/* Replaces the rules read from files with those of path.  Returns the
 * number of rules, or -1 (with a message in err) if the file cannot be
 * read or a line is malformed; the previous rules then stay. */
int ringx_rules_load(const char *path, char *err, size_t errlen);
void ringx_rules_clear(void);

/*
 * Sets the default choice of a collective for any rank count from a list
 * "MAX:ALG,MAX:ALG,...,ALG" (sizes in bytes, K/M/G suffixes allowed; the
 * last entry, without size, covers everything larger).  Returns 0, or -1
 * if the list is malformed (the previous choice then stays).
 */
int ringx_defaults_set(ringx_coll_t coll, const char *list);

/* The built-in default list of coll (measured on the development machine). */
const char *ringx_defaults_builtin(ringx_coll_t coll);

typedef struct ringx_decision {
    ringx_alg_t alg;
    const char *why;           /* for the verbose log */
} ringx_decision_t;

/*
 * The algorithm for one call: forced is the collective's algorithm MCA
 * variable (RINGX_ALG_AUTO unless the user set it), bytes the size of the
 * whole buffer, comm_size the number of ranks, layout as for
 * ringx_alg_runs_on.  Forced first (when it can run), then the rules file,
 * then the defaults.
 */
ringx_decision_t ringx_decide(ringx_coll_t coll, ringx_alg_t forced, size_t bytes,
                              int comm_size, int layout);

#endif /* COLL_RINGX_DECISION_H */
