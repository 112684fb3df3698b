/*
 * coll_ringx_comm_id.c - the id in the tags of a communicator's messages
 * (ringx_schedule.h): the same on every member, and on no other live
 * communicator of this process, since every communicator's messages share
 * the process's one UCX worker.
 *
 * Open MPI's context id serves where it is the same on every member (every
 * communicator on Open MPI 4.1; on 5.0 those with a global index) and below
 * RINGX_TAG_OWN_ID_BASE.  The others (Open MPI 5.0: communicators made with
 * MPI_Comm_create_from_group or from a session) get an id of ringx's own,
 * from RINGX_TAG_OWN_ID_BASE up: a hash of Open MPI's extended context id,
 * which every member holds alike, so choosing it takes no message.  Each
 * process claims its id when the connection starts; the connection's
 * agreement (coll_ringx_connect.c) then checks that every member could, so
 * that two live communicators whose ids clash on some process cannot both
 * be served: the later one falls back (reason communicator).  Those ids are
 * beyond the mailboxes' regions, so these communicators take the
 * message-based algorithms.
 */
#include "coll_ringx.h"

#include <pthread.h>
#include <stdlib.h>

/* The own ids claimed on this process (few: one per live communicator
 * without a common context id). */
static struct {
    pthread_mutex_t lock;
    uint32_t *ids;
    size_t count, capacity;
} claimed = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 };

void ringx_comm_id_take(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm)
{
    m->comm_id_common = ringx_comm_common_id(comm, &m->comm_id) &&
                        m->comm_id < RINGX_TAG_OWN_ID_BASE;
    m->comm_id_claimed = false;
}

static uint32_t own_id(struct ompi_communicator_t *comm)
{
    uint64_t base, sub;
    uint32_t span = RINGX_TAG_ID_MAX - RINGX_TAG_OWN_ID_BASE + 1;
    int test_span = mca_coll_ringx_component.test_own_ids;

    if (test_span > 0 && (uint32_t)test_span < span) {
        span = (uint32_t)test_span;
    }
    ringx_comm_key(comm, &base, &sub);
    return RINGX_TAG_OWN_ID_BASE +
           (uint32_t)(ringx_hash_in(ringx_hash_in(RINGX_HASH_START, base), sub) % span);
}

/* Where id is among the claimed ones; claimed.count where it is not. */
static size_t held_at(uint32_t id)
{
    size_t i = 0;

    while (i < claimed.count && claimed.ids[i] != id) {
        i++;
    }
    return i;
}

static int hold(uint32_t id)
{
    if (claimed.count == claimed.capacity) {
        size_t capacity = claimed.capacity ? 2 * claimed.capacity : 8;
        uint32_t *ids = realloc(claimed.ids, capacity * sizeof(*ids));
        if (ids == NULL) {
            return 0;
        }
        claimed.ids = ids;
        claimed.capacity = capacity;
    }
    claimed.ids[claimed.count++] = id;
    return 1;
}

int ringx_comm_id_claim(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm)
{
    uint32_t id = own_id(comm);

    pthread_mutex_lock(&claimed.lock);
    m->comm_id = id;
    m->comm_id_claimed = held_at(id) == claimed.count && hold(id);
    pthread_mutex_unlock(&claimed.lock);
    return m->comm_id_claimed;
}

void ringx_comm_id_release(mca_coll_ringx_module_t *m)
{
    if (!m->comm_id_claimed) {
        return;
    }
    pthread_mutex_lock(&claimed.lock);
    size_t i = held_at(m->comm_id);
    if (i < claimed.count) {
        claimed.ids[i] = claimed.ids[--claimed.count];
    }
    if (claimed.count == 0) {
        free(claimed.ids);      /* nothing left behind after the last one */
        claimed.ids = NULL;
        claimed.capacity = 0;
    }
    pthread_mutex_unlock(&claimed.lock);
    m->comm_id_claimed = false;
}
