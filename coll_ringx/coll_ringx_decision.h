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
    RINGX_ALG_COUNT
} ringx_alg_t;

typedef enum ringx_fallback {
    RINGX_FALLBACK_DISABLED,   /* collective switched off by its MCA variable */
    RINGX_FALLBACK_DATATYPE,   /* derived, non-contiguous or unsupported datatype */
    RINGX_FALLBACK_OP,         /* user-defined, non-commutative or undefined for the type */
    RINGX_FALLBACK_MEMORY,     /* buffer memory ringx does not handle */
    RINGX_FALLBACK_TRANSPORT,  /* UCX unavailable on some rank of the communicator */
    RINGX_FALLBACK_COUNT
} ringx_fallback_t;

const char *ringx_coll_name(ringx_coll_t coll);      /* "allreduce" */
const char *ringx_coll_mpi_name(ringx_coll_t coll);  /* "MPI_Allreduce" */
const char *ringx_alg_name(ringx_alg_t alg);
const char *ringx_fallback_name(ringx_fallback_t reason);

/* Whether alg is an algorithm of coll (AUTO is valid for every collective). */
int ringx_alg_valid(ringx_coll_t coll, ringx_alg_t alg);

typedef struct ringx_decision {
    ringx_alg_t alg;
    const char *why;           /* for the verbose log */
} ringx_decision_t;

/*
 * The algorithm for one call: forced is the collective's algorithm MCA
 * variable (RINGX_ALG_AUTO unless the user set it), bytes the size of the
 * whole result buffer, comm_size the number of ranks.
 */
ringx_decision_t ringx_decide(ringx_coll_t coll, ringx_alg_t forced, size_t bytes,
                              int comm_size);

#endif /* COLL_RINGX_DECISION_H */
