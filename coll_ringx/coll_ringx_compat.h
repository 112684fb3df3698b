/*
 * coll_ringx_compat.h - what differs between the Open MPI series ringx
 * builds against (4.1 and 5.0), in one place.  Every other file uses the
 * names defined here and no version test of its own.
 *
 *                        4.x                      5.0
 *  coll interface        2.0.0 / module 2.3.0     2.4.0 / module 2.4.0
 *  communicator id       ompi_comm_get_cid:       ompi_comm_get_local_cid: the
 *                        the same on every        same on every member only
 *                        member                   where OMPI_COMM_IS_GLOBAL_INDEX
 *                                                 holds (not for communicators
 *                                                 made from groups or sessions)
 *  collective slots      ...reduce_local          ...reduce_local, agree, iagree
 *                                                 (with fault tolerance, ULFM)
 *  nonblocking request   ompi_coll_base_nbc_request_t: the same head, a larger data part
 *  default selection     self, inter, tuned,      the same, plus ftagree (agree),
 *                        basic, libnbc            han and sm are above tuned
 *
 * Included by coll_ringx.h after Open MPI's headers.
 */
#ifndef MCA_COLL_RINGX_COMPAT_H
#define MCA_COLL_RINGX_COMPAT_H

#include <stdint.h>

#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"

#if OMPI_MAJOR_VERSION == 4

#define RINGX_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#define RINGX_COLL_API_MINOR 0
#define RINGX_DEFAULT_FILL "self,inter,tuned,basic,libnbc"
#define RINGX_VERSION_SLOTS(SLOT)
#define ringx_comm_local_id(comm) ompi_comm_get_cid(comm)
#define ringx_comm_id_is_common(comm) 1
/* the same on every member, unique among the job's live communicators */
#define ringx_comm_key(comm, base, sub) (*(base) = 0, *(sub) = ompi_comm_get_cid(comm))
/* ompi_coll_base_nbc_request_t's data: two objects (4.1) */
#define RINGX_NBC_REQUEST_DATA \
    union {                    \
        void *objs[2];         \
    }

#elif OMPI_MAJOR_VERSION == 5

#define RINGX_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#define RINGX_COLL_API_MINOR 4
#if OPAL_ENABLE_FT_MPI
#define RINGX_DEFAULT_FILL "self,inter,tuned,basic,libnbc,ftagree"
#define RINGX_VERSION_SLOTS(SLOT) SLOT(agree, 0), SLOT(iagree, 0),
#else
#define RINGX_DEFAULT_FILL "self,inter,tuned,basic,libnbc"
#define RINGX_VERSION_SLOTS(SLOT)
#endif
#define ringx_comm_local_id(comm) ompi_comm_get_local_cid(comm)
#define ringx_comm_id_is_common(comm) OMPI_COMM_IS_GLOBAL_INDEX(comm)
/* the same on every member, unique among the job's live communicators:
 * the extended context id (a PMIx group's context id for communicators
 * made from groups) */
#define ringx_comm_key(comm, base, sub)                             \
    (*(base) = ompi_comm_get_extended_cid(comm).cid_base,           \
     *(sub) = ompi_comm_get_extended_cid(comm).cid_sub.u64)
/* ompi_coll_base_nbc_request_t's data: two objects, or two arrays and
 * their counts, then OMPI_REQ_NB_RELEASE_ARRAYS (7) arrays (5.0) */
#define RINGX_NBC_REQUEST_DATA   \
    struct {                     \
        union {                  \
            void *objs[2];       \
            struct {             \
                void *s, *r;     \
                int sc, rc;      \
            } vecs;              \
        } refcounted;            \
        void *release_arrays[7]; \
    }

#else
#error "ringx builds against Open MPI 4.x (coll interface 2.0.0) and 5.0 (2.4.0)"
#endif

/* The coll interface is 2.<minor>.0 in both series. */
#define RINGX_COLL_API_MAJOR 2
#define RINGX_COLL_API_RELEASE 0

/*
 * The head of every nonblocking or persistent collective request: Open
 * MPI's bindings take the request a coll component returns for an
 * ompi_coll_base_nbc_request_t (ompi/mca/coll/base/coll_base_util.h, which
 * Debian's devel headers cannot compile: it includes ompi/op/op.h) and keep
 * derived datatypes and user ops in it until the call completes
 * (ompi_coll_base_retain_datatypes, ompi_coll_base_retain_op).  The same
 * layout; its class, Open MPI's own, constructs those fields.
 */
typedef struct ringx_nbc_request_head {
    ompi_request_t super;
    union {
        ompi_request_complete_fn_t req_complete_cb;
        ompi_request_free_fn_t req_free;
    } cb;
    void *req_complete_cb_data;
    RINGX_NBC_REQUEST_DATA data;
} ringx_nbc_request_head_t;

OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;
#define ringx_nbc_request_head_t_class ompi_coll_base_nbc_request_t_class

/* A communicator id that is the same on every member and on no other live
 * communicator of this process; 0 where the members have none (then
 * coll_ringx_comm_id.c derives one from ringx_comm_key). */
static inline int ringx_comm_common_id(struct ompi_communicator_t *comm, uint32_t *id)
{
    *id = ringx_comm_local_id(comm);
    return ringx_comm_id_is_common(comm) ? 1 : 0;
}

#endif /* MCA_COLL_RINGX_COMPAT_H */
