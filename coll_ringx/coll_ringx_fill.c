/*
 * coll_ringx_fill.c - what ringx arranges to be present when it is alone.
 *
 * Open MPI (4.1 and 5.0) refuses a communicator unless, after selection, every
 * collective slot of comm->c_coll is filled (blocking, nonblocking,
 * persistent, reduce_local; see mca_coll_base_comm_select), and creating a
 * communicator already runs an iallreduce.  Under `--mca coll ringx` ringx is
 * the only selected component and serves three collectives, so MPI_Init
 * fails.
 *
 * What ringx does about it: Open MPI enables the modules of a communicator
 * in increasing priority and ringx's comes last, so when it is enabled the
 * table holds everything the other selected components filled.  For every
 * slot still empty (and defined for this kind of communicator), ringx asks
 * the stock components named by coll_ringx_fill that the selection left out
 * (by default self, inter, tuned, basic and libnbc: the ones that serve
 * those slots under the default selection).  They are loaded once per
 * process, from libmpi where Open MPI was built with them inside, else
 * through Open MPI's component repository, and registered, opened and
 * queried for the communicator exactly as Open MPI would have done, and each
 * empty slot goes to the highest-priority one that provides it.  So
 * `--mca coll ringx` behaves like the default selection with ringx on top,
 * and a component that is selected is never loaded a second time: ringx only
 * ever writes slots that no selected component filled.
 *
 * Module lifetime: a borrowed module goes into the table the way the
 * selection's COPY puts one there, with one reference per slot, so that
 * mca_coll_base_comm_unselect's per-slot disable and OBJ_RELEASE free it.
 * The reference the query returned is released here once the slots hold
 * theirs.  The loaded components are closed (and their variables
 * deregistered) when ringx's component closes, after every communicator.
 */
#include "coll_ringx.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ompi/mca/coll/base/base.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_component_repository.h"
#include "opal/util/argv.h"

/* ------------------------------------------------------------- slots */

/* Left empty on intercommunicators: the scans, which MPI defines on
 * intracommunicators only, and the nonblocking and persistent neighborhood
 * collectives, which libnbc offers on intracommunicators only.  The default
 * selection leaves them empty there, and so does ringx. */
#define SLOT_NOT_ON_INTER 1u

typedef struct ringx_slot {
    const char *name;
    size_t module_fn;        /* offset of the function in mca_coll_base_module_t */
    size_t table_fn;         /* offsets in mca_coll_base_comm_coll_t */
    size_t table_module;
    unsigned flags;
} ringx_slot_t;

/* The slots of the coll module interface, in the order of
 * mca_coll_base_comm_select; the series' own ones last. */
#define SLOT(n, f)                                                              \
    { #n, offsetof(mca_coll_base_module_t, coll_##n),                           \
      offsetof(mca_coll_base_comm_coll_t, coll_##n),                            \
      offsetof(mca_coll_base_comm_coll_t, coll_##n##_module), (f) }
#define SLOT_BLOCKING_NONBLOCKING_PERSISTENT(n, f) SLOT(n, f), SLOT(i##n, f), SLOT(n##_init, f)
#define SLOT_NEIGHBORHOOD(n) \
    SLOT(n, 0), SLOT(i##n, SLOT_NOT_ON_INTER), SLOT(n##_init, SLOT_NOT_ON_INTER)

static const ringx_slot_t slots[] = {
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(allgather, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(allgatherv, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(allreduce, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(alltoall, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(alltoallv, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(alltoallw, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(barrier, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(bcast, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(exscan, SLOT_NOT_ON_INTER),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(gather, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(gatherv, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(reduce, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(reduce_scatter_block, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(reduce_scatter, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(scan, SLOT_NOT_ON_INTER),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(scatter, 0),
    SLOT_BLOCKING_NONBLOCKING_PERSISTENT(scatterv, 0),
    SLOT_NEIGHBORHOOD(neighbor_allgather),
    SLOT_NEIGHBORHOOD(neighbor_allgatherv),
    SLOT_NEIGHBORHOOD(neighbor_alltoall),
    SLOT_NEIGHBORHOOD(neighbor_alltoallv),
    SLOT_NEIGHBORHOOD(neighbor_alltoallw),
    SLOT(reduce_local, 0),
    RINGX_VERSION_SLOTS(SLOT)
};
#undef SLOT_BLOCKING_NONBLOCKING_PERSISTENT
#undef SLOT_NEIGHBORHOOD
#undef SLOT

#define NSLOTS (sizeof(slots) / sizeof(slots[0]))

/* Function pointers of different types are read and written through one
 * generic type; the table only ever copies them. */
typedef void (*any_fn_t)(void);

static any_fn_t fn_at(const void *base, size_t offset)
{
    any_fn_t fn;
    memcpy(&fn, (const char *)base + offset, sizeof(fn));
    return fn;
}

static void put_slot(mca_coll_base_comm_coll_t *table, const ringx_slot_t *s,
                     mca_coll_base_module_t *module)
{
    mca_coll_base_module_t **owner =
        (mca_coll_base_module_t **)((char *)table + s->table_module);
    any_fn_t fn = fn_at(module, s->module_fn);

    /* As the selection's COPY: the slot holds its own reference. */
    if (*owner != NULL) {
        OBJ_RELEASE(*owner);
    }
    memcpy((char *)table + s->table_fn, &fn, sizeof(fn));
    *owner = module;
    OBJ_RETAIN(module);
}

/* Marks the slots that comm needs and nobody filled; returns how many. */
static int find_empty(struct ompi_communicator_t *comm, bool empty[NSLOTS])
{
    int n = 0;
    for (size_t i = 0; i < NSLOTS; i++) {
        empty[i] = fn_at(comm->c_coll, slots[i].table_fn) == NULL &&
                   !(OMPI_COMM_IS_INTER(comm) && (slots[i].flags & SLOT_NOT_ON_INTER));
        n += empty[i];
    }
    return n;
}

/* ------------------------------------------------------------ donors */

#define MAX_DONORS 8

/* The components ringx loaded, in coll_ringx_fill's order. */
static struct {
    bool tried;
    int count;
    const mca_coll_base_component_t *components[MAX_DONORS];
    /* mca_base_component_repository_open() appends what it opens to the
     * framework's component list, and Open MPI's selection queries every
     * component on ompi_coll_base_framework's list.  The donors go on this
     * private list instead, so that they serve only the slots ringx gives
     * them. */
    mca_base_framework_t framework;
} donors;

static pthread_mutex_t donors_lock = PTHREAD_MUTEX_INITIALIZER;

bool ringx_fill_enabled(void)
{
    const char *list = mca_coll_ringx_component.fill;
    return list != NULL && list[strspn(list, ", ")] != '\0';
}

static bool is_selected(const char *name)
{
    mca_base_component_list_item_t *cli;

    OPAL_LIST_FOREACH (cli, &ompi_coll_base_framework.framework_components,
                       mca_base_component_list_item_t) {
        if (strcmp(cli->cli_component->mca_component_name, name) == 0) {
            return true;
        }
    }
    return false;
}

static mca_base_component_repository_item_t *find_in_repository(const char *name)
{
    opal_list_t *all = NULL;
    mca_base_component_repository_item_t *ri;

    if (mca_base_component_repository_get_components(&ompi_coll_base_framework, &all) !=
            OPAL_SUCCESS || all == NULL) {
        return NULL;
    }
    OPAL_LIST_FOREACH (ri, all, mca_base_component_repository_item_t) {
        if (strcmp(ri->ri_name, name) == 0) {
            return ri;
        }
    }
    return NULL;
}

/* A component built into libmpi (Debian 13 builds every coll component
 * in): the framework's static components, which the selection filters just
 * as it filters the repository's. */
static const mca_base_component_t *find_built_in(const char *name)
{
    const mca_base_component_t **all = ompi_coll_base_framework.framework_static_components;

    for (int i = 0; all != NULL && all[i] != NULL; i++) {
        if (strcmp(all[i]->mca_component_name, name) == 0) {
            return all[i];
        }
    }
    return NULL;
}

/* Opens the component name from Open MPI's component repository; NULL
 * with *why set if it cannot. */
static const mca_base_component_t *open_from_repository(const char *name, const char **why)
{
    mca_base_component_repository_item_t *ri = find_in_repository(name);
    bool was_loaded;

    if (ri == NULL) {
        *why = "neither built into libmpi nor found in Open MPI's component path";
        return NULL;
    }
    /* A cached open does not count a reference: take one, so that closing
     * the donor releases only what ringx holds. */
    was_loaded = ri->ri_dlhandle != NULL;
    if (mca_base_component_repository_open(&donors.framework, ri) != OPAL_SUCCESS) {
        *why = "could not be opened";
        return NULL;
    }
    if (was_loaded) {
        (void)mca_base_component_repository_retain_component(ri->ri_type, ri->ri_name);
    }
    return ri->ri_component_struct;
}

/* Loads the coll component name as Open MPI's coll framework would have
 * (built in, or repository open; register, open, init_query).  Returns
 * NULL with *out set, or why it could not.  Closing a built-in component
 * releases nothing in the repository (mca_base_component_unload). */
static const char *load_donor(const char *name, const mca_coll_base_component_t **out)
{
    const char *why = NULL;
    const mca_base_component_t *c = find_built_in(name);
    const mca_coll_base_component_t *coll;
    int output = ompi_coll_base_framework.framework_output;

    if (c == NULL && (c = open_from_repository(name, &why)) == NULL) {
        return why;
    }
    coll = (const mca_coll_base_component_t *)c;
    if (c->mca_type_major_version != RINGX_COLL_API_MAJOR ||
        c->mca_type_minor_version != RINGX_COLL_API_MINOR ||
        c->mca_type_release_version != RINGX_COLL_API_RELEASE) {
        mca_base_component_unload(c, output);
        return "implements another coll interface version";
    }
    if (c->mca_register_component_params != NULL &&
        c->mca_register_component_params() != OPAL_SUCCESS) {
        mca_base_component_unload(c, output);
        return "its register function failed";
    }
    if (c->mca_open_component != NULL && c->mca_open_component() != OPAL_SUCCESS) {
        mca_base_component_unload(c, output);
        return "its open function failed";
    }
    if (coll->collm_init_query != NULL &&
        coll->collm_init_query(OPAL_ENABLE_PROGRESS_THREADS, ompi_mpi_thread_multiple) !=
            OMPI_SUCCESS) {
        mca_base_component_close(c, output);
        return "it declined this process's thread level";
    }
    *out = coll;
    return NULL;
}

/* Once per process: loads the components of coll_ringx_fill that are not
 * selected, and logs what it did. */
static void load_donors(void)
{
    char **names = opal_argv_split(mca_coll_ringx_component.fill, ',');
    char loaded[512] = "", skipped[1024] = "";

    donors.tried = true;
    donors.framework.framework_project = "ompi";
    donors.framework.framework_name = "coll";
    donors.framework.framework_output = ompi_coll_base_framework.framework_output;
    OBJ_CONSTRUCT(&donors.framework.framework_components, opal_list_t);
    OBJ_CONSTRUCT(&donors.framework.framework_failed_components, opal_list_t);

    for (int i = 0; names != NULL && names[i] != NULL; i++) {
        const char *why = NULL;
        const mca_coll_base_component_t *c = NULL;

        if (names[i][0] == '\0' || strcmp(names[i], "ringx") == 0) {
            continue;
        }
        if (is_selected(names[i])) {
            why = "selected already";
        } else if (donors.count == MAX_DONORS) {
            why = "too many components in coll_ringx_fill";
        } else if ((why = load_donor(names[i], &c)) == NULL) {
            donors.components[donors.count++] = c;
            snprintf(loaded + strlen(loaded), sizeof(loaded) - strlen(loaded), " %s", names[i]);
            continue;
        }
        snprintf(skipped + strlen(skipped), sizeof(skipped) - strlen(skipped), " %s (%s);",
                 names[i], why);
    }
    opal_argv_free(names);
    RINGX_LOG(1, "to serve the collective slots no selected component fills, loaded:%s%s%s",
              donors.count > 0 ? loaded : " nothing", skipped[0] != '\0' ? "; not loaded:" : "",
              skipped);
}

void ringx_fill_close(void)
{
    pthread_mutex_lock(&donors_lock);
    if (donors.tried) {
        for (int i = donors.count - 1; i >= 0; i--) {
            mca_base_component_close(&donors.components[i]->collm_version,
                                     ompi_coll_base_framework.framework_output);
        }
        OPAL_LIST_DESTRUCT(&donors.framework.framework_components);
        OPAL_LIST_DESTRUCT(&donors.framework.framework_failed_components);
    }
    memset(&donors, 0, sizeof(donors));
    pthread_mutex_unlock(&donors_lock);
}

/* --------------------------------------------------------------- fill */

typedef struct candidate {
    const char *name;
    mca_coll_base_module_t *module;
    int priority;
} candidate_t;

/* Queries every donor for comm; returns how many offered a module, sorted
 * by decreasing priority (stable: ties keep coll_ringx_fill's order). */
static int query_donors(struct ompi_communicator_t *comm, candidate_t out[MAX_DONORS])
{
    int n = 0;

    for (int i = 0; i < donors.count; i++) {
        int priority = -1;
        mca_coll_base_module_t *module = donors.components[i]->collm_comm_query(comm, &priority);
        int j;

        if (module == NULL) {
            continue;
        }
        if (priority < 0) {          /* as the selection: unavailable */
            OBJ_RELEASE(module);
            continue;
        }
        for (j = n; j > 0 && out[j - 1].priority < priority; j--) {
            out[j] = out[j - 1];
        }
        out[j] = (candidate_t){ donors.components[i]->collm_version.mca_component_name, module,
                                priority };
        n++;
    }
    return n;
}

/* Appends " name" to one of two lists: the slots the donor serves, and
 * those where it becomes ringx's fallback (ringx serves them itself). */
static void note_slot(char *buf, size_t len, const char *name)
{
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, " %s", name);
}

/* Gives cand the empty slots it provides; returns how many it took. */
static int fill_from(candidate_t *cand, mca_coll_base_module_t *ringx_module,
                     struct ompi_communicator_t *comm, bool empty[NSLOTS])
{
    char serves[2048] = "", fallback[256] = "";
    const char *name = ringx_comm_label(comm);
    int taken = 0;

    for (size_t i = 0; i < NSLOTS; i++) {
        taken += empty[i] && fn_at(cand->module, slots[i].module_fn) != NULL;
    }
    /* Enabled only when it will be used, as the selection enables only what
     * it keeps. */
    if (taken == 0) {
        return 0;
    }
    if (cand->module->coll_module_enable != NULL &&
        cand->module->coll_module_enable(cand->module, comm) != OMPI_SUCCESS) {
        RINGX_LOG(1, "%s: %s could not be enabled", name, cand->name);
        return 0;
    }
    for (size_t i = 0; i < NSLOTS; i++) {
        if (!empty[i] || fn_at(cand->module, slots[i].module_fn) == NULL) {
            continue;
        }
        put_slot(comm->c_coll, &slots[i], cand->module);
        empty[i] = false;
        if (fn_at(ringx_module, slots[i].module_fn) != NULL) {
            note_slot(fallback, sizeof(fallback), slots[i].name);
        } else {
            note_slot(serves, sizeof(serves), slots[i].name);
        }
    }
    RINGX_LOG(1, "%s: %s (priority %d, loaded by ringx) serves%s%s%s", name, cand->name,
              cand->priority, serves[0] != '\0' ? serves : " no slot of its own",
              fallback[0] != '\0' ? "; and is ringx's fallback for" : "", fallback);
    return taken;
}

int ringx_fill_empty_slots(mca_coll_base_module_t *ringx_module, struct ompi_communicator_t *comm)
{
    bool empty[NSLOTS];
    candidate_t cands[MAX_DONORS];
    int filled = 0, n;
    char left[1024] = "";

    if (!ringx_fill_enabled() || find_empty(comm, empty) == 0) {
        return 0;     /* the default selection: every slot is taken */
    }
    pthread_mutex_lock(&donors_lock);
    if (!donors.tried) {
        load_donors();
    }
    pthread_mutex_unlock(&donors_lock);

    n = query_donors(comm, cands);
    for (int i = 0; i < n; i++) {
        filled += fill_from(&cands[i], ringx_module, comm, empty);
        /* the query's reference: the slots hold their own */
        OBJ_RELEASE(cands[i].module);
    }
    for (size_t i = 0; i < NSLOTS; i++) {
        if (empty[i] && fn_at(ringx_module, slots[i].module_fn) == NULL) {
            note_slot(left, sizeof(left), slots[i].name);
        }
    }
    if (left[0] != '\0') {
        RINGX_LOG(1, "%s: no selected component nor coll_ringx_fill provides%s",
                  ringx_comm_label(comm), left);
    }
    return filled;
}
