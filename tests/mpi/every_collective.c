/*
 * every_collective.c - calls every MPI collective of Open MPI 4.1 and checks
 * each result against a reference computed locally, so that a run under
 * `--mca coll ringx` proves that every collective slot is served, and a run
 * under the default selection that the same program passes there.
 *
 *   - blocking, nonblocking (MPI_I*) and persistent (MPIX_*_init, Open MPI
 *     4.1's pcollreq extension, MPI_*_init in Open MPI 5: each request is
 *     started twice) versions of barrier,
 *     bcast, gather(v), scatter(v), allgather(v), alltoall(v,w), reduce,
 *     allreduce, reduce_scatter, reduce_scatter_block, scan, exscan;
 *   - on MPI_COMM_WORLD, MPI_COMM_SELF, a dup, a split (reversed order), a
 *     communicator from MPI_Comm_create (reversed, without the last rank) and
 *     an intercommunicator between the two halves of MPI_COMM_WORLD (no scans
 *     there: MPI defines them on intracommunicators only);
 *   - the reductions with MPI_INT / MPI_SUM and with a derived datatype (a
 *     2x2 matrix of unsigned ints) under a non-commutative user op (matrix
 *     product), whose reference is the product in rank order;
 *   - the neighborhood collectives (all three versions) on a 1-D
 *     non-periodic Cartesian communicator, and MPI_Reduce_local.
 *
 * Through ringx's pvars (include/ringx_pvars.h) it also checks who served
 * MPI_Allreduce, MPI_Allgather and MPI_Reduce_scatter_block: ringx, for every
 * blocking call on an intracommunicator of 2 or more ranks with MPI_INT /
 * MPI_SUM; the previous component (a fallback counted by ringx) for the user
 * op; and ringx takes no part on 1-rank communicators nor in the nonblocking
 * and persistent calls.  Intercommunicators are not checked: coll/inter serves
 * them through the collectives of the local intracommunicator, which ringx
 * may serve.
 *
 * Prints "every_collective np=N: M checks, F failures" and exits non-zero on
 * any failure.
 */
#include "ringx_pvars.h"
#include "ringx_test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#define PROGRAM_NAME "every_collective"
#define COUNT 7                        /* elements per block */
#define SENTINEL 0xA5A5A5A5u           /* receive bytes nobody may write */
#define MAX_COMMS 8

/* ------------------------------------------------------------------ */
/* Communicators                                                       */
/* ------------------------------------------------------------------ */

typedef struct tcomm {
    MPI_Comm comm;
    int inter;
    int rank, size;       /* in the local group */
    int rsize;            /* the peers' group: the remote one, or the same */
    int group, rgroup;    /* intercommunicator halves 0 and 1; 0 when intra */
    uint64_t salt;
} tcomm_t;

static void describe(tcomm_t *t, MPI_Comm comm, const char *name, uint64_t salt)
{
    char full[MPI_MAX_OBJECT_NAME];

    snprintf(full, sizeof full, "%s:%s", PROGRAM_NAME, name);
    if (comm != MPI_COMM_WORLD && comm != MPI_COMM_SELF) {
        MPI_Comm_set_name(comm, full);
    }
    memset(t, 0, sizeof *t);
    t->comm = comm;
    t->salt = salt;
    MPI_Comm_test_inter(comm, &t->inter);
    MPI_Comm_rank(comm, &t->rank);
    MPI_Comm_size(comm, &t->size);
    t->rsize = t->size;
    if (t->inter) {
        int wrank, wsize;
        MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
        MPI_Comm_size(MPI_COMM_WORLD, &wsize);
        MPI_Comm_remote_size(comm, &t->rsize);
        t->group = wrank < wsize / 2 ? 0 : 1;
        t->rgroup = 1 - t->group;
    }
}

/* ------------------------------------------------------------------ */
/* Data: every value is a function of who sends it, so that each rank  */
/* can compute what any other rank sent                                 */
/* ------------------------------------------------------------------ */

/* The int that rank src of group g sends to dst (-1: to everyone) as
 * element i, in the call keyed by key. */
static uint32_t val(uint64_t key, int g, int src, int dst, int i)
{
    uint64_t h = rx_mix(rx_mix(key, (uint64_t)(g * 4096 + src)),
                        (uint64_t)(dst + 1) * 65536 + (uint64_t)i);
    return (uint32_t)((int)(h % 2001) - 1000);
}

static uint64_t call_key(const tcomm_t *t, const char *coll, int mode, int kind)
{
    uint64_t h = t->salt * 31 + (uint64_t)(mode * 8 + kind);
    for (const char *p = coll; *p; p++) {
        h = rx_mix(h, (uint64_t)(unsigned char)*p);
    }
    return h;
}

/* ------------------------------------------------------------------ */
/* Reductions: MPI_INT / MPI_SUM, and a 2x2 matrix product              */
/* ------------------------------------------------------------------ */

enum { KIND_SUM, KIND_MAT, NUM_KINDS };

typedef struct kind {
    const char *type_name, *op_name;
    MPI_Datatype type;
    MPI_Op op;
    int words;            /* 32-bit words per element */
    int predefined;       /* a type and op ringx serves itself */
} kind_t;

static kind_t kinds[NUM_KINDS];

/* b = a op b, MPI's order for user functions (a from the lower ranks). */
static void apply(const kind_t *k, const uint32_t *a, uint32_t *b)
{
    if (k->words == 1) {
        b[0] = a[0] + b[0];           /* two's complement: the int sum */
        return;
    }
    uint32_t r[4] = { a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                      a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3] };
    memcpy(b, r, sizeof r);
}

static void mat_product(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) {
        apply(&kinds[KIND_MAT], (const uint32_t *)in + 4 * i, (uint32_t *)inout + 4 * i);
    }
}

static void make_kinds(void)
{
    kinds[KIND_SUM] = (kind_t){ "MPI_INT", "MPI_SUM", MPI_INT, MPI_SUM, 1, 1 };
    kinds[KIND_MAT] = (kind_t){ "mat2x2(MPI_UNSIGNED)", "matrix product (non-commutative)",
                                MPI_DATATYPE_NULL, MPI_OP_NULL, 4, 0 };
    MPI_Type_contiguous(4, MPI_UNSIGNED, &kinds[KIND_MAT].type);
    MPI_Type_commit(&kinds[KIND_MAT].type);
    MPI_Op_create(mat_product, 0, &kinds[KIND_MAT].op);
}

static void free_kinds(void)
{
    MPI_Type_free(&kinds[KIND_MAT].type);
    MPI_Op_free(&kinds[KIND_MAT].op);
}

/* Element i of what rank src of group g contributes. */
static void element(const kind_t *k, uint64_t key, int g, int src, int i, uint32_t *out)
{
    for (int w = 0; w < k->words; w++) {
        out[w] = k->words == 1 ? val(key, g, src, -1, i)
                               : (uint32_t)rx_mix(rx_mix(key, (uint64_t)(g * 4096 + src)),
                                                  (uint64_t)i * 4 + (uint64_t)w);
    }
}

/* Element i of the reduction, in rank order, of ranks lo..hi of group g. */
static void reduced(const kind_t *k, uint64_t key, int g, int lo, int hi, int i, uint32_t *out)
{
    uint32_t e[4];

    element(k, key, g, lo, i, out);
    for (int j = lo + 1; j <= hi; j++) {
        element(k, key, g, j, i, e);
        apply(k, out, e);             /* e = out op e */
        memcpy(out, e, sizeof(uint32_t) * (size_t)k->words);
    }
}

/* ------------------------------------------------------------------ */
/* Calling a collective in one of the three modes                       */
/* ------------------------------------------------------------------ */

enum { BLOCKING, NONBLOCKING, PERSISTENT, NUM_MODES };

/* MPI 4.0's persistent collectives: Open MPI 4.1's pcollreq extension
 * (MPIX_..._init), the standard names in Open MPI 5. */
#ifdef OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT 1
#define PERSISTENT_CALL(Name, ...) MPIX_##Name##_init(__VA_ARGS__, MPI_INFO_NULL, &req_)
#elif OMPI_MAJOR_VERSION >= 5
#define HAVE_PERSISTENT 1
#define PERSISTENT_CALL(Name, ...) MPI_##Name##_init(__VA_ARGS__, MPI_INFO_NULL, &req_)
#else
#define HAVE_PERSISTENT 0
#define PERSISTENT_CALL(Name, ...) MPI_ERR_OTHER
#endif

/* What a call is, for the failure reports. */
typedef struct what {
    char coll[64];
    const char *type_name, *op_name;
    size_t count;
} what_t;

static what_t what(int mode, const char *coll, const kind_t *k, size_t count)
{
    what_t w;
    snprintf(w.coll, sizeof w.coll, "%s%s%s", mode == NONBLOCKING ? "i" : "", coll,
             mode == PERSISTENT ? "_init" : "");
    w.type_name = k ? k->type_name : "MPI_INT";
    w.op_name = k ? k->op_name : "-";
    w.count = count;
    return w;
}

static rx_call_t as_call(const tcomm_t *t, const what_t *w)
{
    rx_call_t c = { w->coll, w->type_name, w->op_name, w->count, 0, t->comm };
    return c;
}

/* Completes a call started in mode: waits for a nonblocking one; starts a
 * persistent one twice, waiting each time, and frees it. */
static void complete(const tcomm_t *t, int mode, const what_t *w, int rc, MPI_Request *req)
{
    rx_call_t call = as_call(t, w);

    if (rc == MPI_SUCCESS && mode == NONBLOCKING) {
        rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    }
    for (int round = 0; rc == MPI_SUCCESS && mode == PERSISTENT && round < 2; round++) {
        rc = MPI_Start(req);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Wait(req, MPI_STATUS_IGNORE);
        }
    }
    if (mode == PERSISTENT && *req != MPI_REQUEST_NULL) {
        MPI_Request_free(req);
    }
    rx_check(&call, rc == MPI_SUCCESS, "returned error %d", rc);
}

#define COLL(t, mode, w, Name, lname, ...)                                         \
    do {                                                                           \
        MPI_Request req_ = MPI_REQUEST_NULL;                                       \
        int rc_ = (mode) == BLOCKING      ? MPI_##Name(__VA_ARGS__)                \
                  : (mode) == NONBLOCKING ? MPI_I##lname(__VA_ARGS__, &req_)       \
                                          : PERSISTENT_CALL(Name, __VA_ARGS__);    \
        complete((t), (mode), (w), rc_, &req_);                                    \
    } while (0)

/* Compares n 32-bit words with the reference; reports the first mismatch. */
static void verify(const tcomm_t *t, const what_t *w, const uint32_t *got,
                   const uint32_t *want, size_t n)
{
    rx_call_t call = as_call(t, w);
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            rx_check(&call, 0, "word %zu: got 0x%08x, expected 0x%08x", i, got[i], want[i]);
            return;
        }
    }
    rx_check(&call, 1, "ok");
}

static uint32_t *words(size_t n)
{
    uint32_t *p = malloc(sizeof(uint32_t) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        p[i] = SENTINEL;
    }
    return p;
}

/* ------------------------------------------------------------------ */
/* Who served it: ringx's pvars                                         */
/* ------------------------------------------------------------------ */

typedef struct served {
    unsigned long long ringx, fallbacks;
} served_t;

static served_t served_now(const char *coll)
{
    char name[64];
    served_t s = { ringx_pvars_served(coll), 0 };
    for (int r = 0; r < RX_NUM_FALLBACK_REASONS; r++) {
        snprintf(name, sizeof name, "fallback_%s", rx_fallback_reasons[r]);
        s.fallbacks += ringx_pvar_read_coll(coll, name);
    }
    return s;
}

static unsigned long long ringx_served_total;

/* ringx serves a blocking, nonblocking or persistent call (counted per
 * start) on an intracommunicator of 2 or more ranks with a type and op of
 * its own, counts a fallback for the user op (once, at its init), and is
 * not there at all on 1-rank communicators. */
static void check_served(const tcomm_t *t, int mode, const what_t *w, const kind_t *k,
                         const char *coll, served_t before)
{
    served_t after = served_now(coll);
    unsigned long long ringx = after.ringx - before.ringx;
    unsigned long long fallbacks = after.fallbacks - before.fallbacks;
    int ringx_there = t->size >= 2;
    /* a persistent call is served at each of its two starts */
    unsigned long long want_ringx = (ringx_there && k->predefined) * (mode == PERSISTENT ? 2u : 1u);
    unsigned long long want_fallbacks = ringx_there && !k->predefined;
    rx_call_t call = as_call(t, w);

    if (t->inter) {
        return;
    }
    ringx_served_total += ringx;
    rx_check(&call, ringx == want_ringx && fallbacks == want_fallbacks,
             "ringx served %llu and handed on %llu calls; expected %llu and %llu", ringx, fallbacks,
             want_ringx, want_fallbacks);
}

/* ------------------------------------------------------------------ */
/* Rooted collectives                                                   */
/* ------------------------------------------------------------------ */

/* The root is the last rank of an intracommunicator (not 0, to catch root
 * mix-ups).  On an intercommunicator it is rank 0 of group 0, which passes
 * MPI_ROOT; the rest of group 0 passes MPI_PROC_NULL and group 1 names the
 * root's rank in group 0. */
typedef struct root {
    int arg;                /* the root argument this rank passes */
    int is_root;
    int is_peer;            /* sends to or receives from the root */
    int group, rank;        /* where the root is */
} root_t;

static root_t root_of(const tcomm_t *t)
{
    root_t r = { t->size - 1, t->rank == t->size - 1, 1, 0, t->size - 1 };

    if (t->inter) {
        r.group = 0;
        r.rank = 0;
        r.is_root = t->group == 0 && t->rank == 0;
        r.is_peer = t->group == 1;
        r.arg = t->group == 1 ? 0 : r.is_root ? MPI_ROOT : MPI_PROC_NULL;
    }
    return r;
}

/* Where the blocks of a gather, scatter or allgather lie: block j has
 * counts[j] elements at element displacement displs[j].  FIXED: COUNT
 * elements each, back to back.  Otherwise (the "v" collectives)
 * 1 + (j + shift) % 3 each, with a one-element gap after each block. */
#define FIXED (-1)

typedef struct layout {
    int *counts, *displs;
    size_t n;               /* elements spanned */
} layout_t;

static int vcount(int j, int shift)
{
    return shift == FIXED ? COUNT : 1 + (j + shift) % 3;
}

static layout_t layout_new(int blocks, int shift)
{
    layout_t l = { malloc(sizeof(int) * (size_t)blocks), malloc(sizeof(int) * (size_t)blocks), 0 };

    for (int j = 0; j < blocks; j++) {
        l.counts[j] = vcount(j, shift);
        l.displs[j] = (int)l.n;
        l.n += (size_t)l.counts[j] + (shift != FIXED);
    }
    return l;
}

static void layout_free(layout_t *l)
{
    free(l->counts);
    free(l->displs);
}

/* A buffer laid out as l, whose block j holds what rank j of group g sent
 * to everyone (from < 0: gathers) or what rank `from` of group g sent to
 * rank j (scatters); the gaps hold sentinels. */
static uint32_t *blocks_of(const layout_t *l, int blocks, uint64_t key, int g, int from)
{
    uint32_t *buf = words(l->n);

    for (int j = 0; j < blocks; j++) {
        for (int i = 0; i < l->counts[j]; i++) {
            buf[l->displs[j] + i] = from < 0 ? val(key, g, j, -1, i) : val(key, g, from, j, i);
        }
    }
    return buf;
}

/* The count of the block rank s of group g sends to rank r (alltoallv/w). */
static int pair_count(int g, int s, int r)
{
    return 1 + (g + s + 2 * r) % 3;
}

static void t_barrier(const tcomm_t *t, int mode)
{
    what_t w = what(mode, "barrier", NULL, 0);
    COLL(t, mode, &w, Barrier, barrier, t->comm);
}

static void t_bcast(const tcomm_t *t, int mode)
{
    root_t r = root_of(t);
    uint64_t key = call_key(t, "bcast", mode, 0);
    uint32_t buf[COUNT], want[COUNT];
    what_t w = what(mode, "bcast", NULL, COUNT);

    for (int i = 0; i < COUNT; i++) {
        uint32_t v = val(key, r.group, r.rank, -1, i);
        buf[i] = r.is_root ? v : SENTINEL;
        want[i] = r.is_root || r.is_peer ? v : SENTINEL;
    }
    COLL(t, mode, &w, Bcast, bcast, buf, COUNT, MPI_INT, r.arg, t->comm);
    verify(t, &w, buf, want, COUNT);
}

/* gather, gatherv (all = 0) and allgather, allgatherv (all = 1): block j of
 * the result holds what peer j sent; the root, or every rank, checks it. */
static void t_gathers(const tcomm_t *t, int mode, int all, int shift)
{
    const char *coll = all ? shift == FIXED ? "allgather" : "allgatherv"
                           : shift == FIXED ? "gather" : "gatherv";
    root_t r = root_of(t);
    uint64_t key = call_key(t, coll, mode, 0);
    layout_t l = layout_new(t->rsize, shift);
    int mine = vcount(t->rank, shift);
    uint32_t send[COUNT], *recv = words(l.n), *want = blocks_of(&l, t->rsize, key, t->rgroup, -1);
    what_t w = what(mode, coll, NULL, (size_t)mine);
    served_t before = served_now("allgather");

    for (int i = 0; i < mine; i++) {
        send[i] = val(key, t->group, t->rank, -1, i);
    }
    if (all && shift == FIXED) {
        COLL(t, mode, &w, Allgather, allgather, send, mine, MPI_INT, recv, COUNT, MPI_INT,
             t->comm);
        check_served(t, mode, &w, &kinds[KIND_SUM], "allgather", before);
    } else if (all) {
        COLL(t, mode, &w, Allgatherv, allgatherv, send, mine, MPI_INT, recv, l.counts, l.displs,
             MPI_INT, t->comm);
    } else if (shift == FIXED) {
        COLL(t, mode, &w, Gather, gather, send, mine, MPI_INT, recv, COUNT, MPI_INT, r.arg,
             t->comm);
    } else {
        COLL(t, mode, &w, Gatherv, gatherv, send, mine, MPI_INT, recv, l.counts, l.displs, MPI_INT,
             r.arg, t->comm);
    }
    verify(t, &w, recv, want, all || r.is_root ? l.n : 0);
    layout_free(&l);
    free(recv);
    free(want);
}

/* scatter and scatterv: the root's block j goes to peer j. */
static void t_scatters(const tcomm_t *t, int mode, int shift)
{
    const char *coll = shift == FIXED ? "scatter" : "scatterv";
    root_t r = root_of(t);
    uint64_t key = call_key(t, coll, mode, 0);
    layout_t l = layout_new(t->rsize, shift);
    int mine = r.is_peer ? vcount(t->rank, shift) : 0;
    uint32_t *send = blocks_of(&l, t->rsize, key, r.group, r.rank), recv[COUNT], want[COUNT];
    what_t w = what(mode, coll, NULL, (size_t)vcount(t->rank, shift));

    for (int i = 0; i < COUNT; i++) {
        recv[i] = SENTINEL;
        want[i] = i < mine ? val(key, r.group, r.rank, t->rank, i) : SENTINEL;
    }
    if (shift == FIXED) {
        COLL(t, mode, &w, Scatter, scatter, send, COUNT, MPI_INT, recv, COUNT, MPI_INT, r.arg,
             t->comm);
    } else {
        COLL(t, mode, &w, Scatterv, scatterv, send, l.counts, l.displs, MPI_INT, recv, mine,
             MPI_INT, r.arg, t->comm);
    }
    verify(t, &w, recv, want, COUNT);
    layout_free(&l);
    free(send);
}

/* ------------------------------------------------------------------ */
/* All-to-all                                                           */
/* ------------------------------------------------------------------ */

static void t_alltoall(const tcomm_t *t, int mode)
{
    uint64_t key = call_key(t, "alltoall", mode, 0);
    size_t n = (size_t)t->rsize * COUNT;
    uint32_t *send = words(n), *recv = words(n), *want = words(n);
    what_t w = what(mode, "alltoall", NULL, COUNT);

    for (int j = 0; j < t->rsize; j++) {
        for (int i = 0; i < COUNT; i++) {
            send[j * COUNT + i] = val(key, t->group, t->rank, j, i);
            want[j * COUNT + i] = val(key, t->rgroup, j, t->rank, i);
        }
    }
    COLL(t, mode, &w, Alltoall, alltoall, send, COUNT, MPI_INT, recv, COUNT, MPI_INT, t->comm);
    verify(t, &w, recv, want, n);
    free(send);
    free(recv);
    free(want);
}

/* The layout of alltoallv and alltoallw: counts and element displacements
 * of what this rank sends to and receives from each peer. */
typedef struct exchange {
    int *scounts, *sdispls, *rcounts, *rdispls;
    uint32_t *send, *recv, *want;
    size_t rwords;
} exchange_t;

static exchange_t exchange_new(const tcomm_t *t, uint64_t key)
{
    exchange_t x;
    int p = t->rsize, s = 0, r = 0;

    x.scounts = malloc(sizeof(int) * (size_t)p);
    x.sdispls = malloc(sizeof(int) * (size_t)p);
    x.rcounts = malloc(sizeof(int) * (size_t)p);
    x.rdispls = malloc(sizeof(int) * (size_t)p);
    for (int j = 0; j < p; j++) {
        x.scounts[j] = pair_count(t->group, t->rank, j);
        x.rcounts[j] = pair_count(t->rgroup, j, t->rank);
        x.sdispls[j] = s;
        x.rdispls[j] = r;
        s += x.scounts[j] + 1;
        r += x.rcounts[j] + 1;
    }
    x.send = words((size_t)s);
    x.recv = words((size_t)r);
    x.want = words((size_t)r);
    x.rwords = (size_t)r;
    for (int j = 0; j < p; j++) {
        for (int i = 0; i < x.scounts[j]; i++) {
            x.send[x.sdispls[j] + i] = val(key, t->group, t->rank, j, i);
        }
        for (int i = 0; i < x.rcounts[j]; i++) {
            x.want[x.rdispls[j] + i] = val(key, t->rgroup, j, t->rank, i);
        }
    }
    return x;
}

static void exchange_free(exchange_t *x)
{
    free(x->scounts);
    free(x->sdispls);
    free(x->rcounts);
    free(x->rdispls);
    free(x->send);
    free(x->recv);
    free(x->want);
}

/* alltoallv, and alltoallw (wide) with byte displacements */
static void t_alltoallvw(const tcomm_t *t, int mode, int wide)
{
    const char *coll = wide ? "alltoallw" : "alltoallv";
    exchange_t x = exchange_new(t, call_key(t, coll, mode, 0));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)t->rsize);
    what_t w = what(mode, coll, NULL, 3);

    for (int j = 0; wide && j < t->rsize; j++) {
        types[j] = MPI_INT;
        x.sdispls[j] *= (int)sizeof(uint32_t);
        x.rdispls[j] *= (int)sizeof(uint32_t);
    }
    if (wide) {
        COLL(t, mode, &w, Alltoallw, alltoallw, x.send, x.scounts, x.sdispls, types, x.recv,
             x.rcounts, x.rdispls, types, t->comm);
    } else {
        COLL(t, mode, &w, Alltoallv, alltoallv, x.send, x.scounts, x.sdispls, MPI_INT, x.recv,
             x.rcounts, x.rdispls, MPI_INT, t->comm);
    }
    verify(t, &w, x.recv, x.want, x.rwords);
    free(types);
    exchange_free(&x);
}

/* ------------------------------------------------------------------ */
/* Reductions                                                           */
/* ------------------------------------------------------------------ */

/* A reduction's input: n elements of kind k from this rank. */
static uint32_t *input(const tcomm_t *t, const kind_t *k, uint64_t key, int n)
{
    uint32_t *in = words((size_t)n * (size_t)k->words);
    for (int i = 0; i < n; i++) {
        element(k, key, t->group, t->rank, i, in + i * k->words);
    }
    return in;
}

/* Elements first..first+n-1 of the reduction over all peers. */
static uint32_t *expected(const tcomm_t *t, const kind_t *k, uint64_t key, int first, int n)
{
    uint32_t *want = words((size_t)n * (size_t)k->words);
    for (int i = 0; i < n; i++) {
        reduced(k, key, t->rgroup, 0, t->rsize - 1, first + i, want + i * k->words);
    }
    return want;
}

static void t_reduce(const tcomm_t *t, int mode, const kind_t *k)
{
    root_t r = root_of(t);
    uint64_t key = call_key(t, "reduce", mode, (int)(k - kinds));
    uint32_t *in = input(t, k, key, COUNT), *out = words((size_t)COUNT * (size_t)k->words);
    uint32_t *want = expected(t, k, key, 0, COUNT);
    what_t w = what(mode, "reduce", k, COUNT);

    COLL(t, mode, &w, Reduce, reduce, in, out, COUNT, k->type, k->op, r.arg, t->comm);
    verify(t, &w, out, want, r.is_root ? (size_t)COUNT * (size_t)k->words : 0);
    free(in);
    free(out);
    free(want);
}

static void t_allreduce(const tcomm_t *t, int mode, const kind_t *k)
{
    uint64_t key = call_key(t, "allreduce", mode, (int)(k - kinds));
    uint32_t *in = input(t, k, key, COUNT), *out = words((size_t)COUNT * (size_t)k->words);
    uint32_t *want = expected(t, k, key, 0, COUNT);
    what_t w = what(mode, "allreduce", k, COUNT);
    served_t before = served_now("allreduce");

    COLL(t, mode, &w, Allreduce, allreduce, in, out, COUNT, k->type, k->op, t->comm);
    check_served(t, mode, &w, k, "allreduce", before);
    verify(t, &w, out, want, (size_t)COUNT * (size_t)k->words);
    free(in);
    free(out);
    free(want);
}

/* reduce_scatter: T elements spread over the local group as evenly as
 * possible.  On an intercommunicator both groups must reduce the same
 * number of elements, so T does not depend on the group's size there. */
static void t_reduce_scatter(const tcomm_t *t, int mode, const kind_t *k)
{
    int total = t->inter ? 12 : 2 * t->size + 3, first = 0;
    int *counts = malloc(sizeof(int) * (size_t)t->size);
    uint64_t key = call_key(t, "reduce_scatter", mode, (int)(k - kinds));
    uint32_t *in = input(t, k, key, total), *out, *want;
    what_t w;

    for (int j = 0; j < t->size; j++) {
        counts[j] = total / t->size + (j < total % t->size);
        first += j < t->rank ? counts[j] : 0;
    }
    out = words((size_t)counts[t->rank] * (size_t)k->words);
    want = expected(t, k, key, first, counts[t->rank]);
    w = what(mode, "reduce_scatter", k, (size_t)total);
    COLL(t, mode, &w, Reduce_scatter, reduce_scatter, in, out, counts, k->type, k->op, t->comm);
    verify(t, &w, out, want, (size_t)counts[t->rank] * (size_t)k->words);
    free(counts);
    free(in);
    free(out);
    free(want);
}

/* reduce_scatter_block: on an intercommunicator both groups must reduce
 * size * count elements, hence count = 3 x the remote group's size. */
static void t_reduce_scatter_block(const tcomm_t *t, int mode, const kind_t *k)
{
    int count = t->inter ? 3 * t->rsize : 3;
    uint64_t key = call_key(t, "reduce_scatter_block", mode, (int)(k - kinds));
    uint32_t *in = input(t, k, key, count * t->size);
    uint32_t *out = words((size_t)count * (size_t)k->words);
    uint32_t *want = expected(t, k, key, t->rank * count, count);
    what_t w = what(mode, "reduce_scatter_block", k, (size_t)count);
    served_t before = served_now("reduce_scatter_block");

    COLL(t, mode, &w, Reduce_scatter_block, reduce_scatter_block, in, out, count, k->type, k->op,
         t->comm);
    check_served(t, mode, &w, k, "reduce_scatter_block", before);
    verify(t, &w, out, want, (size_t)count * (size_t)k->words);
    free(in);
    free(out);
    free(want);
}

/* scan and exscan (intracommunicators): the reduction over ranks 0..rank,
 * or 0..rank-1 (undefined on rank 0, not checked there). */
static void t_scans(const tcomm_t *t, int mode, const kind_t *k, int exclusive)
{
    const char *coll = exclusive ? "exscan" : "scan";
    uint64_t key = call_key(t, coll, mode, (int)(k - kinds));
    uint32_t *in = input(t, k, key, COUNT), *out = words((size_t)COUNT * (size_t)k->words);
    uint32_t *want = words((size_t)COUNT * (size_t)k->words);
    int last = exclusive ? t->rank - 1 : t->rank;
    what_t w = what(mode, coll, k, COUNT);

    for (int i = 0; last >= 0 && i < COUNT; i++) {
        reduced(k, key, 0, 0, last, i, want + i * k->words);
    }
    if (exclusive) {
        COLL(t, mode, &w, Exscan, exscan, in, out, COUNT, k->type, k->op, t->comm);
    } else {
        COLL(t, mode, &w, Scan, scan, in, out, COUNT, k->type, k->op, t->comm);
    }
    verify(t, &w, out, want, last >= 0 ? (size_t)COUNT * (size_t)k->words : 0);
    free(in);
    free(out);
    free(want);
}

/* Every collective of one communicator in one mode. */
static void run_all(const tcomm_t *t, int mode)
{
    t_barrier(t, mode);
    t_bcast(t, mode);
    for (int all = 0; all < 2; all++) {
        t_gathers(t, mode, all, FIXED);
        t_gathers(t, mode, all, all ? 2 : 0);
    }
    t_scatters(t, mode, FIXED);
    t_scatters(t, mode, 1);
    t_alltoall(t, mode);
    t_alltoallvw(t, mode, 0);
    t_alltoallvw(t, mode, 1);
    for (int k = 0; k < NUM_KINDS; k++) {
        t_reduce(t, mode, &kinds[k]);
        t_allreduce(t, mode, &kinds[k]);
        t_reduce_scatter(t, mode, &kinds[k]);
        t_reduce_scatter_block(t, mode, &kinds[k]);
        if (!t->inter) {
            t_scans(t, mode, &kinds[k], 0);
            t_scans(t, mode, &kinds[k], 1);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Neighborhood collectives on a 1-D non-periodic Cartesian topology:   */
/* the neighbors are [rank-1, rank+1], MPI_PROC_NULL past either end    */
/* ------------------------------------------------------------------ */

static void neighbors(const tcomm_t *t, int nb[2])
{
    MPI_Cart_shift(t->comm, 0, 1, &nb[0], &nb[1]);
}

static void t_neighbor_allgather(const tcomm_t *t, int mode)
{
    uint64_t key = call_key(t, "neighbor_allgather", mode, 0);
    uint32_t send[COUNT], recv[2 * COUNT], want[2 * COUNT];
    int nb[2];
    what_t w = what(mode, "neighbor_allgather", NULL, COUNT);

    neighbors(t, nb);
    for (int i = 0; i < COUNT; i++) {
        send[i] = val(key, 0, t->rank, -1, i);
        for (int b = 0; b < 2; b++) {
            recv[b * COUNT + i] = SENTINEL;
            want[b * COUNT + i] = nb[b] == MPI_PROC_NULL ? SENTINEL : val(key, 0, nb[b], -1, i);
        }
    }
    COLL(t, mode, &w, Neighbor_allgather, neighbor_allgather, send, COUNT, MPI_INT, recv, COUNT,
         MPI_INT, t->comm);
    verify(t, &w, recv, want, 2 * COUNT);
}

static void t_neighbor_allgatherv(const tcomm_t *t, int mode)
{
    uint64_t key = call_key(t, "neighbor_allgatherv", mode, 0);
    uint32_t send[3], recv[8], want[8];
    int nb[2], counts[2], displs[2] = { 0, 4 };
    what_t w = what(mode, "neighbor_allgatherv", NULL, 3);

    neighbors(t, nb);
    for (int i = 0; i < 8; i++) {
        recv[i] = want[i] = SENTINEL;
    }
    for (int i = 0; i < vcount(t->rank, 0); i++) {
        send[i] = val(key, 0, t->rank, -1, i);
    }
    for (int b = 0; b < 2; b++) {
        counts[b] = nb[b] == MPI_PROC_NULL ? 1 : vcount(nb[b], 0);
        for (int i = 0; nb[b] != MPI_PROC_NULL && i < counts[b]; i++) {
            want[displs[b] + i] = val(key, 0, nb[b], -1, i);
        }
    }
    COLL(t, mode, &w, Neighbor_allgatherv, neighbor_allgatherv, send, vcount(t->rank, 0), MPI_INT,
         recv, counts, displs, MPI_INT, t->comm);
    verify(t, &w, recv, want, 8);
}

static void t_neighbor_alltoall(const tcomm_t *t, int mode)
{
    uint64_t key = call_key(t, "neighbor_alltoall", mode, 0);
    uint32_t send[2 * COUNT], recv[2 * COUNT], want[2 * COUNT];
    int nb[2];
    what_t w = what(mode, "neighbor_alltoall", NULL, COUNT);

    neighbors(t, nb);
    for (int b = 0; b < 2; b++) {
        for (int i = 0; i < COUNT; i++) {
            send[b * COUNT + i] = val(key, 0, t->rank, nb[b], i);
            recv[b * COUNT + i] = SENTINEL;
            want[b * COUNT + i] =
                nb[b] == MPI_PROC_NULL ? SENTINEL : val(key, 0, nb[b], t->rank, i);
        }
    }
    COLL(t, mode, &w, Neighbor_alltoall, neighbor_alltoall, send, COUNT, MPI_INT, recv, COUNT,
         MPI_INT, t->comm);
    verify(t, &w, recv, want, 2 * COUNT);
}

/* neighbor_alltoallv and _w: block b has pair_count(0, sender, receiver)
 * elements, at element displacement 4 * b. */
static void neighbor_exchange(const tcomm_t *t, uint64_t key, const int nb[2], int scounts[2],
                              int rcounts[2], uint32_t send[8], uint32_t recv[8], uint32_t want[8])
{
    for (int i = 0; i < 8; i++) {
        send[i] = recv[i] = want[i] = SENTINEL;
    }
    for (int b = 0; b < 2; b++) {
        int real = nb[b] != MPI_PROC_NULL;
        scounts[b] = real ? pair_count(0, t->rank, nb[b]) : 1;
        rcounts[b] = real ? pair_count(0, nb[b], t->rank) : 1;
        for (int i = 0; i < scounts[b]; i++) {
            send[4 * b + i] = val(key, 0, t->rank, nb[b], i);
        }
        for (int i = 0; real && i < rcounts[b]; i++) {
            want[4 * b + i] = val(key, 0, nb[b], t->rank, i);
        }
    }
}

/* neighbor_alltoallv, and neighbor_alltoallw (wide) with byte displacements */
static void t_neighbor_alltoallvw(const tcomm_t *t, int mode, int wide)
{
    const char *coll = wide ? "neighbor_alltoallw" : "neighbor_alltoallv";
    uint32_t send[8], recv[8], want[8];
    int nb[2], scounts[2], rcounts[2], displs[2] = { 0, 4 };
    MPI_Aint bytes[2] = { 0, 4 * (MPI_Aint)sizeof(uint32_t) };
    MPI_Datatype types[2] = { MPI_INT, MPI_INT };
    what_t w = what(mode, coll, NULL, 3);

    neighbors(t, nb);
    neighbor_exchange(t, call_key(t, coll, mode, 0), nb, scounts, rcounts, send, recv, want);
    if (wide) {
        COLL(t, mode, &w, Neighbor_alltoallw, neighbor_alltoallw, send, scounts, bytes, types,
             recv, rcounts, bytes, types, t->comm);
    } else {
        COLL(t, mode, &w, Neighbor_alltoallv, neighbor_alltoallv, send, scounts, displs, MPI_INT,
             recv, rcounts, displs, MPI_INT, t->comm);
    }
    verify(t, &w, recv, want, 8);
}

static void run_neighbors(const tcomm_t *t, int mode)
{
    t_neighbor_allgather(t, mode);
    t_neighbor_allgatherv(t, mode);
    t_neighbor_alltoall(t, mode);
    t_neighbor_alltoallvw(t, mode, 0);
    t_neighbor_alltoallvw(t, mode, 1);
}

/* MPI_Reduce_local: inout = in op inout. */
static void t_reduce_local(const tcomm_t *t, const kind_t *k)
{
    uint64_t key = call_key(t, "reduce_local", 0, (int)(k - kinds));
    size_t n = (size_t)COUNT * (size_t)k->words;
    uint32_t *in = words(n), *inout = words(n), *want = words(n);
    what_t w = what(BLOCKING, "reduce_local", k, COUNT);
    rx_call_t call = as_call(t, &w);
    int rc;

    for (int i = 0; i < COUNT; i++) {
        element(k, key, 0, 0, i, in + i * k->words);
        element(k, key, 0, 1, i, inout + i * k->words);
        element(k, key, 0, 1, i, want + i * k->words);
        apply(k, in + i * k->words, want + i * k->words);
    }
    rc = MPI_Reduce_local(in, inout, COUNT, k->type, k->op);
    rx_check(&call, rc == MPI_SUCCESS, "returned error %d", rc);
    verify(t, &w, inout, want, n);
    free(in);
    free(inout);
    free(want);
}

/* ------------------------------------------------------------------ */
/* main                                                                 */
/* ------------------------------------------------------------------ */

/* MPI_COMM_WORLD, MPI_COMM_SELF, a dup, a split, MPI_Comm_create and an
 * intercommunicator.  Returns how many; a rank outside a communicator
 * (MPI_Comm_create) simply has one fewer. */
static int make_comms(tcomm_t *t, MPI_Comm *cart)
{
    int wrank, wsize, n = 0;
    MPI_Comm c;

    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    describe(&t[n++], MPI_COMM_WORLD, "world", 1);
    describe(&t[n++], MPI_COMM_SELF, "self", 2);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    describe(&t[n++], c, "dup", 3);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wsize - wrank, &c);
    describe(&t[n++], c, "split", 4);
    if (wsize >= 2) {
        MPI_Group world_group, group;
        int *ranks = malloc(sizeof(int) * (size_t)wsize);
        for (int i = 0; i < wsize - 1; i++) {
            ranks[i] = wsize - 2 - i;
        }
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        MPI_Group_incl(world_group, wsize - 1, ranks, &group);
        MPI_Comm_create(MPI_COMM_WORLD, group, &c);
        if (c != MPI_COMM_NULL) {
            describe(&t[n++], c, "create", 5);
        }
        MPI_Group_free(&group);
        MPI_Group_free(&world_group);
        free(ranks);

        MPI_Comm local;
        int half = wsize / 2, color = wrank < half ? 0 : 1;
        MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? half : 0, 77, &c);
        MPI_Comm_free(&local);
        describe(&t[n++], c, "inter", 6);
    }
    int dims[1] = { wsize }, periods[1] = { 0 };
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, cart);
    return n;
}

int main(int argc, char **argv)
{
    tcomm_t comms[MAX_COMMS], cart;
    MPI_Comm cart_comm;
    int n, wrank, status;
    const char *mode_names[NUM_MODES] = { "blocking", "nonblocking", "persistent" };

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (ringx_pvars_open() <= 0) {
        rx_fail("the ringx component is not loaded (no coll_ringx_* pvar)");
    }
    make_kinds();
    n = make_comms(comms, &cart_comm);
    describe(&cart, cart_comm, "cart", 7);

    for (int mode = 0; mode < NUM_MODES; mode++) {
        if (mode == PERSISTENT && !HAVE_PERSISTENT) {
            continue;
        }
        for (int i = 0; i < n; i++) {
            run_all(&comms[i], mode);
        }
        run_neighbors(&cart, mode);
        if (wrank == 0) {
            printf("%s: %s collectives done on %d communicators and a Cartesian one\n",
                   PROGRAM_NAME, mode_names[mode], n);
        }
    }
    for (int k = 0; k < NUM_KINDS; k++) {
        t_reduce_local(&comms[0], &kinds[k]);
    }

    for (int i = 0; i < n; i++) {
        if (comms[i].comm != MPI_COMM_WORLD && comms[i].comm != MPI_COMM_SELF) {
            MPI_Comm_free(&comms[i].comm);
        }
    }
    MPI_Comm_free(&cart_comm);
    free_kinds();
    printf("%s: rank %d: ringx served %llu allreduce, allgather and reduce_scatter_block calls\n",
           PROGRAM_NAME, wrank, ringx_served_total);
    status = rx_finish(PROGRAM_NAME);
    ringx_pvars_close();
    MPI_Finalize();
    return status;
}
