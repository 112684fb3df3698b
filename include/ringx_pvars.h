/*
 * ringx_pvars.h - reading ringx's MPI_T performance variables from an MPI
 * program: the tests and the benchmark use them to prove which algorithm
 * (or which fallback) served a call.
 *
 * Header-only (static functions), standard MPI_T only: any MPI program can
 * include it.  Call ringx_pvars_open() after MPI_Init.
 *
 * Counters (process-wide totals, MPI_T class COUNTER):
 *   coll_ringx_<coll>_<alg>_calls          calls served by algorithm <alg>
 *   coll_ringx_<coll>_fallback_<reason>    calls handed to the previous component
 *   coll_ringx_<coll>_bytes_sent           bytes sent by ringx for <coll>
 * with <coll> one of allreduce, allgather, reduce_scatter_block.
 */
#ifndef RINGX_PVARS_H
#define RINGX_PVARS_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define RINGX_PVARS_MAX 128
#define RINGX_PVAR_NAME_LEN 96

static struct {
    int open;
    MPI_T_pvar_session session;
    int count;
    char names[RINGX_PVARS_MAX][RINGX_PVAR_NAME_LEN];
    MPI_T_pvar_handle handles[RINGX_PVARS_MAX];
} ringx_pvars __attribute__((unused));

static inline int ringx_pvars_is_ours(const char *name)
{
    return strncmp(name, "coll_ringx_", 11) == 0;
}

/* Binds a handle to every coll_ringx_* counter.  Returns the number of
 * ringx counters found (0: the component is not loaded), -1 on error. */
static inline int ringx_pvars_open(void)
{
    int provided, num, rc;

    if (ringx_pvars.open) {
        return ringx_pvars.count;
    }
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS ||
        MPI_T_pvar_session_create(&ringx_pvars.session) != MPI_SUCCESS ||
        MPI_T_pvar_get_num(&num) != MPI_SUCCESS) {
        return -1;
    }
    ringx_pvars.open = 1;
    for (int i = 0; i < num && ringx_pvars.count < RINGX_PVARS_MAX; i++) {
        char name[RINGX_PVAR_NAME_LEN], desc[256];
        int name_len = sizeof(name), desc_len = sizeof(desc);
        int verbosity, var_class, bind, readonly, continuous, atomic, count;
        MPI_Datatype type;
        MPI_T_enum enumtype;

        rc = MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &type, &enumtype,
                                 desc, &desc_len, &bind, &readonly, &continuous, &atomic);
        if (rc != MPI_SUCCESS || !ringx_pvars_is_ours(name) ||
            var_class != MPI_T_PVAR_CLASS_COUNTER) {
            continue;
        }
        MPI_T_pvar_handle *h = &ringx_pvars.handles[ringx_pvars.count];
        if (MPI_T_pvar_handle_alloc(ringx_pvars.session, i, NULL, h, &count) != MPI_SUCCESS) {
            continue;
        }
        snprintf(ringx_pvars.names[ringx_pvars.count], RINGX_PVAR_NAME_LEN, "%s", name);
        ringx_pvars.count++;
    }
    return ringx_pvars.count;
}

static inline void ringx_pvars_close(void)
{
    if (!ringx_pvars.open) {
        return;
    }
    for (int i = 0; i < ringx_pvars.count; i++) {
        MPI_T_pvar_handle_free(ringx_pvars.session, &ringx_pvars.handles[i]);
    }
    MPI_T_pvar_session_free(&ringx_pvars.session);
    MPI_T_finalize();
    memset(&ringx_pvars, 0, sizeof(ringx_pvars));
}

/* Reads the counter called name (full name, "coll_ringx_..."); returns 0,
 * or -1 if there is no such counter. */
static inline int ringx_pvar_read(const char *name, unsigned long long *value)
{
    *value = 0;
    for (int i = 0; i < ringx_pvars.count; i++) {
        if (strcmp(ringx_pvars.names[i], name) == 0) {
            return MPI_T_pvar_read(ringx_pvars.session, ringx_pvars.handles[i], value) ==
                           MPI_SUCCESS ? 0 : -1;
        }
    }
    return -1;
}

/* The algorithm counter at index i if it belongs to coll: its algorithm
 * name goes to alg (NULL when i is another counter). */
static inline const char *ringx_pvars_algorithm_of(int i, const char *coll, char *alg, size_t len)
{
    char prefix[RINGX_PVAR_NAME_LEN];
    const char *name = ringx_pvars.names[i];
    size_t plen, nlen = strlen(name);

    snprintf(prefix, sizeof(prefix), "coll_ringx_%s_", coll);
    plen = strlen(prefix);
    if (strncmp(name, prefix, plen) != 0 || nlen < plen + 6 ||
        strcmp(name + nlen - 6, "_calls") != 0 ||
        strncmp(name + plen, "fallback_", 9) == 0) {
        return NULL;
    }
    snprintf(alg, len, "%.*s", (int)(nlen - plen - 6), name + plen);
    return alg;
}

/* Calls of coll served by ringx, over all its algorithms. */
static inline unsigned long long ringx_pvars_served(const char *coll)
{
    unsigned long long total = 0, v;
    char alg[RINGX_PVAR_NAME_LEN];

    for (int i = 0; i < ringx_pvars.count; i++) {
        if (ringx_pvars_algorithm_of(i, coll, alg, sizeof(alg)) &&
            MPI_T_pvar_read(ringx_pvars.session, ringx_pvars.handles[i], &v) == MPI_SUCCESS) {
            total += v;
        }
    }
    return total;
}

/* Per-algorithm counters of coll: fills up to max names and values and
 * returns how many there are. */
static inline int ringx_pvars_algorithms(const char *coll, char (*algs)[RINGX_PVAR_NAME_LEN],
                                  unsigned long long *values, int max)
{
    int n = 0;
    for (int i = 0; i < ringx_pvars.count && n < max; i++) {
        if (ringx_pvars_algorithm_of(i, coll, algs[n], RINGX_PVAR_NAME_LEN)) {
            MPI_T_pvar_read(ringx_pvars.session, ringx_pvars.handles[i], &values[n]);
            n++;
        }
    }
    return n;
}

#endif /* RINGX_PVARS_H */
