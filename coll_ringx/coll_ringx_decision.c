/*
 * coll_ringx_decision.c - the choice of algorithm per call.
 *
 * Only the pipelined ring exists so far; the table below is where the
 * log(p) algorithms join it, each with the sizes and rank counts it wins.
 */
#include "coll_ringx_decision.h"

static const char *const coll_names[RINGX_COLL_COUNT] = {
    "allreduce", "allgather", "reduce_scatter_block"
};

static const char *const coll_mpi_names[RINGX_COLL_COUNT] = {
    "MPI_Allreduce", "MPI_Allgather", "MPI_Reduce_scatter_block"
};

static const char *const alg_names[RINGX_ALG_COUNT] = { "auto", "ring" };

static const char *const fallback_names[RINGX_FALLBACK_COUNT] = {
    "disabled", "datatype", "op", "memory", "transport"
};

const char *ringx_coll_name(ringx_coll_t coll)
{
    return (unsigned)coll < RINGX_COLL_COUNT ? coll_names[coll] : "?";
}

const char *ringx_coll_mpi_name(ringx_coll_t coll)
{
    return (unsigned)coll < RINGX_COLL_COUNT ? coll_mpi_names[coll] : "?";
}

const char *ringx_alg_name(ringx_alg_t alg)
{
    return (unsigned)alg < RINGX_ALG_COUNT ? alg_names[alg] : "?";
}

const char *ringx_fallback_name(ringx_fallback_t reason)
{
    return (unsigned)reason < RINGX_FALLBACK_COUNT ? fallback_names[reason] : "?";
}

int ringx_alg_valid(ringx_coll_t coll, ringx_alg_t alg)
{
    if ((unsigned)coll >= RINGX_COLL_COUNT) {
        return 0;
    }
    return alg == RINGX_ALG_AUTO || alg == RINGX_ALG_RING;
}

ringx_decision_t ringx_decide(ringx_coll_t coll, ringx_alg_t forced, size_t bytes,
                              int comm_size)
{
    ringx_decision_t d = { RINGX_ALG_RING, "ring: the only algorithm built" };

    (void)bytes;
    (void)comm_size;
    if (forced != RINGX_ALG_AUTO && ringx_alg_valid(coll, forced)) {
        d.alg = forced;
        d.why = "forced by MCA variable";
    }
    return d;
}
