/*
 * ringx_pvars.h - reading ringx's MPI_T performance variables from an MPI
 * program: the tests and the benchmark use them to prove which algorithm
 * (or which fallback) served a call.
 *
 * Header-only (static inline functions and one weak variable), standard
 * MPI_T only: any MPI program can include it, from any number of its
 * files.  Call ringx_pvars_open() after MPI_Init.
 *
 * Counters (process-wide totals, MPI_T class COUNTER):
 *   coll_ringx_<coll>_<alg>_calls          calls served by algorithm <alg>
 *   coll_ringx_<coll>_fallback_<reason>    calls handed to the previous component
 *   coll_ringx_<coll>_bytes_sent           bytes sent by ringx for <coll>
 *   coll_ringx_<coll>_on_device            calls served on device (CUDA) memory
 *   coll_ringx_<coll>_staged               calls served through host bounce buffers
 * with <coll> one of allreduce, allgather, reduce_scatter_block.
 */
#ifndef RINGX_PVARS_H
#define RINGX_PVARS_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define RINGX_PVARS_MAX 256
#define RINGX_PVAR_NAME_LEN 96

/* What MPI_T says about one coll_ringx_* variable. */
typedef struct ringx_pvar_info {
    char name[RINGX_PVAR_NAME_LEN];
    int index;
    int var_class;
    MPI_Datatype datatype;
    int bind;
    int readonly;
    int continuous;
    int has_handle;
    MPI_T_pvar_handle handle;
} ringx_pvar_info_t;

typedef struct ringx_pvars_state {
    int open;
    MPI_T_pvar_session session;
    int count;
    ringx_pvar_info_t vars[RINGX_PVARS_MAX];
} ringx_pvars_state_t;

/* One state per program, though every file including this header defines
 * it: the definitions are weak, and the linker keeps a single one. */
__attribute__((weak)) ringx_pvars_state_t ringx_pvars;

/* The collectives whose names prefix the pvar names. */
static const char *const ringx_pvars_colls[] __attribute__((unused)) = {
    "allreduce", "allgather", "reduce_scatter_block"
};

static inline void ringx_pvars_add(int index)
{
    ringx_pvar_info_t *v = &ringx_pvars.vars[ringx_pvars.count];
    char desc[512];
    int name_len = RINGX_PVAR_NAME_LEN, desc_len = sizeof(desc);
    int verbosity, atomic, count;
    MPI_T_enum enumtype;

    if (MPI_T_pvar_get_info(index, v->name, &name_len, &verbosity, &v->var_class,
                            &v->datatype, &enumtype, desc, &desc_len, &v->bind,
                            &v->readonly, &v->continuous, &atomic) != MPI_SUCCESS ||
        strncmp(v->name, "coll_ringx_", 11) != 0) {
        return;
    }
    v->index = index;
    v->has_handle = v->var_class == MPI_T_PVAR_CLASS_COUNTER &&
                    MPI_T_pvar_handle_alloc(ringx_pvars.session, index, NULL, &v->handle,
                                            &count) == MPI_SUCCESS;
    ringx_pvars.count++;
}

/* Finds every coll_ringx_* variable and binds a handle to each counter.
 * Returns how many there are (0: the component is not loaded), -1 if
 * MPI_T fails. */
static inline int ringx_pvars_open(void)
{
    int provided, num;

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
        ringx_pvars_add(i);
    }
    return ringx_pvars.count;
}

static inline void ringx_pvars_close(void)
{
    if (!ringx_pvars.open) {
        return;
    }
    for (int i = 0; i < ringx_pvars.count; i++) {
        if (ringx_pvars.vars[i].has_handle) {
            MPI_T_pvar_handle_free(ringx_pvars.session, &ringx_pvars.vars[i].handle);
        }
    }
    MPI_T_pvar_session_free(&ringx_pvars.session);
    MPI_T_finalize();
    memset(&ringx_pvars, 0, sizeof(ringx_pvars));
}

static inline const ringx_pvar_info_t *ringx_pvar_find(const char *name)
{
    for (int i = 0; i < ringx_pvars.count; i++) {
        if (strcmp(ringx_pvars.vars[i].name, name) == 0) {
            return &ringx_pvars.vars[i];
        }
    }
    return NULL;
}

static inline int ringx_pvar_read_info(const ringx_pvar_info_t *v, unsigned long long *value)
{
    *value = 0;
    return v && v->has_handle &&
                   MPI_T_pvar_read(ringx_pvars.session, v->handle, value) == MPI_SUCCESS
               ? 0
               : -1;
}

/* Reads the counter with this full name; 0, or -1 if there is none. */
static inline int ringx_pvar_read(const char *name, unsigned long long *value)
{
    return ringx_pvar_read_info(ringx_pvar_find(name), value);
}

/* Reads coll_ringx_<coll>_<what> (0 if there is no such counter). */
static inline unsigned long long ringx_pvar_read_coll(const char *coll, const char *what)
{
    char name[256];
    unsigned long long value;

    snprintf(name, sizeof(name), "coll_ringx_%s_%s", coll, what);
    (void)ringx_pvar_read(name, &value);
    return value;
}

/* The collective a pvar belongs to: the longest known name that prefixes
 * it, so that a "reduce_scatter" could never claim "reduce_scatter_block_*". */
static inline const char *ringx_pvar_coll(const char *name)
{
    const char *best = NULL;
    const char *rest = name + 11;

    for (size_t i = 0; i < sizeof(ringx_pvars_colls) / sizeof(ringx_pvars_colls[0]); i++) {
        size_t len = strlen(ringx_pvars_colls[i]);
        if (strncmp(rest, ringx_pvars_colls[i], len) == 0 && rest[len] == '_' &&
            (!best || len > strlen(best))) {
            best = ringx_pvars_colls[i];
        }
    }
    return best;
}

/* If variable v counts the calls of one algorithm of coll, writes the
 * algorithm's name to alg and returns it; NULL otherwise. */
static inline const char *ringx_pvar_algorithm(const ringx_pvar_info_t *v, const char *coll,
                                               char *alg, size_t len)
{
    const char *owner = ringx_pvar_coll(v->name);
    size_t nlen = strlen(v->name), plen = 11 + (owner ? strlen(owner) + 1 : 0);
    const char *rest = v->name + plen;

    if (!owner || strcmp(owner, coll) != 0 || nlen < plen + 6 ||
        strcmp(v->name + nlen - 6, "_calls") != 0 || strncmp(rest, "fallback_", 9) == 0) {
        return NULL;
    }
    snprintf(alg, len, "%.*s", (int)(nlen - plen - 6), rest);
    return alg;
}

/* Per-algorithm counters of coll: fills up to max names and values and
 * returns how many were filled. */
static inline int ringx_pvars_algorithms(const char *coll, char (*algs)[RINGX_PVAR_NAME_LEN],
                                         unsigned long long *values, int max)
{
    int n = 0;
    for (int i = 0; i < ringx_pvars.count && n < max; i++) {
        if (ringx_pvar_algorithm(&ringx_pvars.vars[i], coll, algs[n], RINGX_PVAR_NAME_LEN)) {
            ringx_pvar_read_info(&ringx_pvars.vars[i], &values[n]);
            n++;
        }
    }
    return n;
}

/* Calls of coll served by ringx, over all its algorithms. */
static inline unsigned long long ringx_pvars_served(const char *coll)
{
    char algs[32][RINGX_PVAR_NAME_LEN];
    unsigned long long values[32], total = 0;
    int n = ringx_pvars_algorithms(coll, algs, values, 32);

    for (int i = 0; i < n; i++) {
        total += values[i];
    }
    return total;
}

#endif /* RINGX_PVARS_H */
