/*
 * coll_ringx_handback.c - calls the previous component hands back to ringx.
 *
 * ringx hands a call it does not serve to the component below it.  Some
 * components, where they cannot run, call the communicator's table again
 * instead of their own fallback: coll/han 4.1, on a communicator with one
 * rank per node, calls the table's allreduce (ringx, the top component)
 * with the table's reduce module.  Handing such a call on again would
 * recurse for ever, so ringx serves it with Open MPI's point-to-point base
 * algorithms, which take any datatype and op: counted
 * (coll_ringx_<coll>_handed_back) and logged.
 */
#include "coll_ringx.h"

#include <limits.h>
#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_base_functions.h"

/* The blocking collective this thread is handing to the previous
 * component, if any (collectives on one communicator never overlap on
 * two threads: MPI's ordering rule). */
static __thread ringx_hand_on_t handing_on = { NULL, RINGX_COLL_COUNT };

ringx_hand_on_t ringx_hand_on_begin(const mca_coll_ringx_module_t *m, ringx_coll_t coll)
{
    ringx_hand_on_t outer = handing_on;

    handing_on.m = m;
    handing_on.coll = coll;
    return outer;
}

void ringx_hand_on_end(ringx_hand_on_t outer)
{
    handing_on = outer;
}

int ringx_handed_back(const mca_coll_ringx_module_t *m, ringx_coll_t coll)
{
    if (handing_on.m != m || handing_on.coll != coll) {
        return 0;
    }
    ringx_count(&mca_coll_ringx_counters.handed_back[coll], 1);
    RINGX_LOG(1, "%s on %s: the previous component handed the call back to ringx; Open MPI's "
                 "point-to-point base algorithm serves it", ringx_coll_name(coll),
              ringx_comm_label(m->comm));
    return 1;
}

/* The base algorithms keep their requests in the module's base data. */
static mca_coll_base_module_t *base_module(mca_coll_ringx_module_t *m)
{
    if (m->super.base_data == NULL) {
        m->super.base_data = OBJ_NEW(mca_coll_base_comm_t);
    }
    return m->super.base_data == NULL ? NULL : &m->super;
}

int ringx_handback_allreduce(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm, mca_coll_ringx_module_t *m)
{
    mca_coll_base_module_t *base = base_module(m);

    /* a linear reduce in rank order, then a linear broadcast: right for
     * non-commutative ops too */
    return base == NULL ? OMPI_ERR_OUT_OF_RESOURCE
                        : ompi_coll_base_allreduce_intra_basic_linear(sbuf, rbuf, count, dtype,
                                                                      op, comm, base);
}

int ringx_handback_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_ringx_module_t *m)
{
    mca_coll_base_module_t *base = base_module(m);

    return base == NULL ? OMPI_ERR_OUT_OF_RESOURCE
                        : ompi_coll_base_allgather_intra_ring(sbuf, scount, sdtype, rbuf, rcount,
                                                              rdtype, comm, base);
}

/* The whole vector reduced everywhere, then the own block kept: point to
 * point only, unlike the base reduce_scatter_block, which calls the
 * table's reduce and scatter.  The base allreduce takes an int count, and
 * the vector (rcount per rank) may hold more elements: it goes in pieces
 * of at most INT_MAX. */
int ringx_handback_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_ringx_module_t *m)
{
    size_t total = (size_t)rcount * (size_t)m->size;
    ptrdiff_t lb, extent, true_lb, true_extent;
    const char *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    char *scratch;
    int rc = OMPI_SUCCESS;

    if (total == 0) {
        return OMPI_SUCCESS;
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    scratch = malloc((size_t)true_extent + (total - 1) * (size_t)extent);
    if (scratch == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (size_t done = 0; rc == OMPI_SUCCESS && done < total; done += INT_MAX) {
        size_t n = total - done < INT_MAX ? total - done : INT_MAX;
        ptrdiff_t at = (ptrdiff_t)done * extent;
        rc = ringx_handback_allreduce(input + at, scratch - true_lb + at, (int)n, dtype, op,
                                      comm, m);
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_datatype_copy_content_same_ddt(
            dtype, rcount, rbuf, scratch - true_lb + (ptrdiff_t)m->rank * rcount * extent);
    }
    free(scratch);
    return rc;
}
