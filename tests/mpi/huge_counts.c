/*
 * huge_counts.c - the three collectives with more than 2^31 bytes in one
 * buffer (issue 13): by default, at np 2, an allgather of 2^30+1 int8 per
 * rank (a result of 2^31+2 bytes), an int8 SUM allreduce of 2^31-1
 * elements and a reduce_scatter_block of 2^30+1 int8 per rank (an input
 * of 2^31+2 bytes).  Every result byte is checked against a reference
 * computed on the fly, and the pvars must show that ringx served each call
 * (its algorithm counters grew by one, no fallback counter moved).
 *
 *   --allgather N, --allreduce N, --reduce-scatter-block N
 *                          the counts (per rank for allgather and
 *                          reduce_scatter_block; 0 skips the collective)
 *   --form blocking|nonblocking|persistent
 *   --expect COLL=ALG      the algorithm that must serve COLL (repeatable)
 *   --in-place             MPI_IN_PLACE
 *
 * Memory: two buffers of the largest buffer size per rank (4 GiB at the
 * default counts; one in place), reused by the three calls.  A node
 * without that much available memory skips the test (exit 77).
 */
#include <mpi.h>
#include <mpi-ext.h>    /* MPIX_..._init (Open MPI 4.1) */

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringx_pvars.h"
#include "ringx_test_util.h"

enum { AG, AR, RSB, NCOLLS };
enum form { BLOCKING, NONBLOCKING, PERSISTENT };

static const char *const coll_names[NCOLLS] = { "allgather", "allreduce",
                                                "reduce_scatter_block" };
static const char *const form_names[] = { "blocking", "nonblocking", "persistent" };

static struct {
    size_t count[NCOLLS];
    enum form form;
    const char *expect[NCOLLS];
    int in_place;
} opts = { { ((size_t)1 << 30) + 1, ((size_t)1 << 31) - 1, ((size_t)1 << 30) + 1 },
           BLOCKING,
           { NULL, NULL, NULL },
           0 };

static int rank, nranks;

/*
 * The top byte of a multiplicative hash of i: it depends on every bit of
 * i, so a byte read from or written to a wrong offset (one wrapped at
 * 2^31, or off by a segment) differs with probability 255/256.
 */
static inline uint8_t hash_byte(uint64_t i)
{
    return (uint8_t)(((i + 1) * 0x9e3779b97f4a7c15ULL) >> 56);
}

/* Byte i of rank r's input: the rank's factor and offset make the ranks'
 * inputs differ and a missing or doubled contribution visible. */
static inline uint8_t input_byte(int r, uint64_t i)
{
    return (uint8_t)(hash_byte(i) * (2 * r + 1) + 17 * r);
}

/* The SUM over every rank of input_byte(r, i), wrapping as int8 does:
 * h p^2 + 17 p(p-1)/2, mod 256. */
static inline uint8_t sum_byte(uint64_t i)
{
    unsigned p = (unsigned)nranks;
    return (uint8_t)(hash_byte(i) * p * p + 17 * (p * (p - 1) / 2));
}

static void fill_input(uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        buf[i] = input_byte(rank, i);
    }
}

/* What a result holds at index g of the reference: rank r's input, or
 * (r < 0) the sum over every rank. */
static inline uint8_t want(int r, uint64_t g)
{
    return r >= 0 ? input_byte(r, g) : sum_byte(g);
}

/* One check of got[0, n) against want(r, first + i): the wrong bytes are
 * counted first (a loop the compiler vectorises), the first one found
 * only if there is any. */
static void check_bytes(const rx_call_t *call, const uint8_t *got, size_t n, uint64_t first,
                        int r)
{
    size_t bad = 0, at = 0;

    for (size_t i = 0; i < n; i++) {
        bad += got[i] != want(r, first + i);
    }
    while (bad > 0 && got[at] == want(r, first + at)) {
        at++;
    }
    rx_check(call, bad == 0, "%zu of %zu bytes wrong, the first at %zu: %u, want %u", bad, n, at,
             bad ? got[at] : 0u, bad ? want(r, first + at) : 0u);
}

/* MPI 4.0's persistent collectives: Open MPI 4.1's pcollreq extension,
 * the standard names in Open MPI 5. */
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define PERSISTENT(name) MPIX_##name##_init
#elif OMPI_MAJOR_VERSION >= 5
#define PERSISTENT(name) MPI_##name##_init
#endif

static void complete(MPI_Request *req)
{
    if (opts.form == PERSISTENT) {
        MPI_Start(req);
        MPI_Wait(req, MPI_STATUS_IGNORE);
        MPI_Request_free(req);
    } else if (opts.form == NONBLOCKING) {
        MPI_Wait(req, MPI_STATUS_IGNORE);
    }
}

/* The call in the chosen form; counts fit an int (the point is the bytes). */
static void call(int coll, const void *in, void *out, int n)
{
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Comm w = MPI_COMM_WORLD;

    if (opts.form == BLOCKING) {
        if (coll == AG) {
            MPI_Allgather(in, n, MPI_INT8_T, out, n, MPI_INT8_T, w);
        } else if (coll == AR) {
            MPI_Allreduce(in, out, n, MPI_INT8_T, MPI_SUM, w);
        } else {
            MPI_Reduce_scatter_block(in, out, n, MPI_INT8_T, MPI_SUM, w);
        }
        return;
    }
    if (opts.form == NONBLOCKING) {
        if (coll == AG) {
            MPI_Iallgather(in, n, MPI_INT8_T, out, n, MPI_INT8_T, w, &req);
        } else if (coll == AR) {
            MPI_Iallreduce(in, out, n, MPI_INT8_T, MPI_SUM, w, &req);
        } else {
            MPI_Ireduce_scatter_block(in, out, n, MPI_INT8_T, MPI_SUM, w, &req);
        }
    } else if (coll == AG) {
        PERSISTENT(Allgather)(in, n, MPI_INT8_T, out, n, MPI_INT8_T, w, MPI_INFO_NULL, &req);
    } else if (coll == AR) {
        PERSISTENT(Allreduce)(in, out, n, MPI_INT8_T, MPI_SUM, w, MPI_INFO_NULL, &req);
    } else {
        PERSISTENT(Reduce_scatter_block)(in, out, n, MPI_INT8_T, MPI_SUM, w, MPI_INFO_NULL, &req);
    }
    complete(&req);
}

typedef struct snapshot {
    char algs[32][RINGX_PVAR_NAME_LEN];
    unsigned long long calls[32];
    int nalgs;
    rx_counters_t c;
} snapshot_t;

static void snapshot(int coll, snapshot_t *s)
{
    s->nalgs = ringx_pvars_algorithms(coll_names[coll], s->algs, s->calls, 32);
    rx_counters_read(coll_names[coll], NULL, &s->c);
}

/* ringx, not a fallback, served the one call between before and after:
 * one algorithm counted it (the expected one, if any). */
static void check_served(const rx_call_t *rc, int coll, const snapshot_t *before, double secs)
{
    snapshot_t after;
    const char *alg = "none";
    unsigned long long served = 0, form_calls;

    snapshot(coll, &after);
    for (int a = 0; a < after.nalgs && a < before->nalgs; a++) {
        unsigned long long d = after.calls[a] - before->calls[a];
        served += d;
        alg = d ? after.algs[a] : alg;
    }
    rx_check(rc, served == 1, "ringx's algorithm counters grew by %llu, want 1", served);
    for (int i = 0; i < RX_NUM_FALLBACK_REASONS; i++) {
        rx_check(rc, after.c.fallback[i] == before->c.fallback[i], "fallback_%s grew by %llu",
                 rx_fallback_reasons[i], after.c.fallback[i] - before->c.fallback[i]);
    }
    form_calls = opts.form == NONBLOCKING  ? after.c.nonblocking - before->c.nonblocking
                 : opts.form == PERSISTENT ? after.c.persistent - before->c.persistent
                                           : 1;
    rx_check(rc, form_calls == 1, "counted %llu times as %s", form_calls,
             form_names[opts.form]);
    rx_check(rc, opts.expect[coll] == NULL || strcmp(opts.expect[coll], alg) == 0,
             "served by %s, want %s", alg, opts.expect[coll]);
    if (rank == 0) {
        printf("%s %s of %zu int8%s%s: served by %s, %.2f s\n", form_names[opts.form],
               coll_names[coll], rc->count, coll == AR ? "" : " per rank",
               opts.in_place ? " in place" : "", alg, secs);
        fflush(stdout);
    }
}

/* Runs coll (in: MPI_IN_PLACE in place), checks the pvars; the caller
 * checks the result. */
static void run(const rx_call_t *rc, int coll, const void *in, uint8_t *out)
{
    snapshot_t before;
    double t;

    snapshot(coll, &before);
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    call(coll, opts.in_place ? MPI_IN_PLACE : in, out, (int)rc->count);
    t = MPI_Wtime() - t;
    check_served(rc, coll, &before, t);
}

/* The result bytes that are not input are set first to a value that no
 * reference relies on. */
#define UNSET 0xa5

static void allgather(uint8_t *a, uint8_t *b)
{
    size_t n = opts.count[AG];
    rx_call_t rc = { "allgather", "MPI_INT8_T", "-", n, opts.in_place, MPI_COMM_WORLD };

    memset(b, UNSET, n * (size_t)nranks);
    fill_input(opts.in_place ? b + (size_t)rank * n : a, n);
    run(&rc, AG, a, b);
    for (int r = 0; r < nranks; r++) {
        check_bytes(&rc, b + (size_t)r * n, n, 0, r);
    }
}

static void allreduce(uint8_t *a, uint8_t *b)
{
    size_t n = opts.count[AR];
    rx_call_t rc = { "allreduce", "MPI_INT8_T", "MPI_SUM", n, opts.in_place, MPI_COMM_WORLD };

    memset(b, UNSET, n);
    fill_input(opts.in_place ? b : a, n);
    run(&rc, AR, a, b);
    check_bytes(&rc, b, n, 0, -1);
}

/* In place the input and the result are both in b. */
static void reduce_scatter_block(uint8_t *a, uint8_t *b)
{
    size_t n = opts.count[RSB];
    uint8_t *out = opts.in_place ? b : a;
    rx_call_t rc = { "reduce_scatter_block", "MPI_INT8_T", "MPI_SUM", n, opts.in_place,
                     MPI_COMM_WORLD };

    memset(out, UNSET, n);
    fill_input(b, n * (size_t)nranks);
    run(&rc, RSB, b, out);
    check_bytes(&rc, out, n, (uint64_t)rank * n, -1);
}

static int coll_named(const char *name, size_t len)
{
    for (int c = 0; c < NCOLLS; c++) {
        if (strlen(coll_names[c]) == len && strncmp(name, coll_names[c], len) == 0) {
            return c;
        }
    }
    return -1;
}

/* One option and its value (NULL: none); 0, or -1 if unknown. */
static int parse_option(const char *opt, const char *v)
{
    static const char *const count_opts[NCOLLS] = { "--allgather", "--allreduce",
                                                    "--reduce-scatter-block" };
    const char *eq = v != NULL ? strchr(v, '=') : NULL;

    for (int c = 0; v != NULL && c < NCOLLS; c++) {
        if (strcmp(opt, count_opts[c]) == 0) {
            opts.count[c] = strtoull(v, NULL, 0);
            return opts.count[c] <= INT_MAX ? 0 : -1;     /* MPI's counts are ints */
        }
    }
    if (v != NULL && strcmp(opt, "--form") == 0) {
        opts.form = strcmp(v, "nonblocking") == 0  ? NONBLOCKING
                    : strcmp(v, "persistent") == 0 ? PERSISTENT
                                                   : BLOCKING;
        return strcmp(form_names[opts.form], v) == 0 ? 0 : -1;
    }
    if (eq != NULL && strcmp(opt, "--expect") == 0 && coll_named(v, (size_t)(eq - v)) >= 0) {
        opts.expect[coll_named(v, (size_t)(eq - v))] = eq + 1;
        return 0;
    }
    return -1;
}

static int parse(int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--in-place") == 0) {
            opts.in_place = 1;
        } else if (a + 1 >= argc || parse_option(argv[a], argv[a + 1]) != 0) {
            return -1;
        } else {
            a++;
        }
    }
    return 0;
}

/* MemAvailable of this node in bytes, 0 if unknown. */
static size_t available_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kib = 0;

    while (f != NULL && fgets(line, sizeof line, f) != NULL &&
           sscanf(line, "MemAvailable: %llu kB", &kib) != 1) {
    }
    if (f != NULL) {
        fclose(f);
    }
    return (size_t)kib * 1024;
}

/* Whether every node has room for its ranks' buffers and 1 GiB besides:
 * Linux lets malloc promise more than there is, and the OOM killer would
 * end the test instead of a skip. */
static int room_for(size_t bytes_per_rank)
{
    MPI_Comm node;
    int local, ok, all;
    size_t available = available_bytes();

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    ok = available == 0 || available >= bytes_per_rank * (size_t)local + ((size_t)1 << 30);
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all && rank == 0) {
        printf("SKIP: %d ranks of %.1f GiB each need more memory than this node has available "
               "(%.1f GiB)\n", local, bytes_per_rank / 1073741824.0, available / 1073741824.0);
    }
    return all;
}

/* Two buffers of the largest size (in place, one), reused by the calls. */
int main(int argc, char **argv)
{
    size_t bytes = 0;
    uint8_t *a = NULL, *b = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (parse(argc, argv) != 0) {
        if (rank == 0) {
            fprintf(stderr, "usage: %s [--allgather N] [--allreduce N] [--reduce-scatter-block N] "
                    "[--form blocking|nonblocking|persistent] [--expect COLL=ALG]... "
                    "[--in-place]\n", argv[0]);
        }
        MPI_Finalize();
        return 2;
    }
    for (int c = 0; c < NCOLLS; c++) {
        size_t need = opts.count[c] * (c == AR ? 1 : (size_t)nranks);
        bytes = need > bytes ? need : bytes;
    }
    if (!room_for(bytes * (opts.in_place ? 1 : 2))) {
        MPI_Finalize();
        return 77;      /* automake's "skipped" */
    }
    if (rx_pvar_init() != 0 || !rx_component_loaded()) {
        rx_fail("the ringx component is not loaded (no coll_ringx pvars)");
    }
    b = malloc(bytes);
    a = opts.in_place ? NULL : malloc(bytes);
    if (b == NULL || (a == NULL && !opts.in_place)) {
        rx_fail("no memory for the buffers of %zu bytes", bytes);
    } else {
        if (opts.count[AG]) {
            allgather(a, b);
        }
        if (opts.count[AR]) {
            allreduce(a, b);
        }
        if (opts.count[RSB]) {
            reduce_scatter_block(a, b);
        }
    }
    free(a);
    free(b);
    rx_pvar_finalize();
    int status = rx_finish("huge_counts");
    MPI_Finalize();
    return status;
}
