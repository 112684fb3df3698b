/*
 * ringx_bench.c - ringx next to Open MPI's stock collectives, in one run.
 *
 * Two duplicates of MPI_COMM_WORLD: one made while ringx's priority is
 * negative (the stock collectives serve it) and one served by ringx.  For
 * every size the two are timed in interleaved rounds, so machine noise
 * hits both alike, and every result of both is validated.  Bandwidths
 * follow nccl-tests: algbw = S / t; busbw = algbw * 2(p-1)/p for
 * allreduce and algbw * (p-1)/p for allgather and reduce_scatter_block,
 * S being the full (gathered or reduced) buffer.
 *
 * With --mem cuda the buffers are device memory.  ringx takes them as
 * they are; the stock side does what users of an MPI that is not
 * CUDA-aware do: copy the input to host memory, call the collective, copy
 * the result back, all inside the timed region.
 */
#include <stdlib.h>
#include <string.h>

#include "ringx_bench.h"

#include <mpi-ext.h>    /* MPIX_Query_cuda_support, where Open MPI has it */
#include "ringx_pvars.h"
#include "ringx_test_device.h"

const char *const coll_names[NCOLL] = { "allreduce", "allgather", "reduce_scatter_block" };
const char *const form_names[NFORMS] = { "blocking", "nonblocking", "persistent" };
const char *const timing_names[NTIMINGS] = { "sync", "back-to-back" };

static const dtype_desc_t dtypes[] = {
    { "float", MPI_FLOAT, 4, 1, 1 },    { "double", MPI_DOUBLE, 8, 1, 1 },
    { "int8", MPI_INT8_T, 1, 0, 1 },    { "uint8", MPI_UINT8_T, 1, 0, 0 },
    { "int32", MPI_INT32_T, 4, 0, 1 },  { "uint32", MPI_UINT32_T, 4, 0, 0 },
    { "int64", MPI_INT64_T, 8, 0, 1 },  { "uint64", MPI_UINT64_T, 8, 0, 0 },
};

static const op_desc_t ops[] = {
    { "sum", MPI_SUM, OP_SUM },    { "prod", MPI_PROD, OP_PROD }, { "min", MPI_MIN, OP_MIN },
    { "max", MPI_MAX, OP_MAX },    { "band", MPI_BAND, OP_BAND }, { "bor", MPI_BOR, OP_BOR },
    { "bxor", MPI_BXOR, OP_BXOR },
};

#define LEN(a) (sizeof(a) / sizeof((a)[0]))
/* Calls per measurement at most: a measurement of the smallest sizes lasts
 * the target time too (tens of milliseconds), long enough to average over
 * the scheduling noise of ranks that share cores. */
#define MAX_ITERS 100000

int rank, nprocs;
MPI_Comm stock_comm, ringx_comm;
node_layout_t node_layout;

/* ------------------------------------------------------------ options */

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (size_t)v;
}

static void usage(void)
{
    if (rank == 0) {
        printf("usage: ringx_bench [options]\n"
               "  -b, --min-bytes SIZE   smallest buffer S (default 8)\n"
               "  -e, --max-bytes SIZE   largest buffer S (default 64M)\n"
               "  -c, --coll LIST        allreduce,allgather,reduce_scatter_block (default all)\n"
               "  -d, --dtype NAME       float double int8 uint8 int32 uint32 int64 uint64\n"
               "  -o, --op NAME          sum prod min max band bor bxor (default sum)\n"
               "  -m, --mem host|cuda    buffer memory (default host)\n"
               "  -i, --in-place         use MPI_IN_PLACE\n"
               "  -r, --rounds N         interleaved rounds per size; figures are their\n"
               "                         medians, with their min-max (default 5, at most 64)\n"
               "  -t, --time SECONDS     target time per measurement (default 0.1)\n"
               "  --timing sync|back-to-back\n"
               "                         sync (default): a barrier before every call, the\n"
               "                         slowest rank's time, as OSU and IMB; back-to-back:\n"
               "                         calls in a loop without barriers\n"
               "  --noise FRACTION       flag sizes whose rounds range over more than FRACTION\n"
               "                         of their median (default 0.25)\n"
               "  -f, --form FORM        blocking (default), nonblocking (MPI_I... then MPI_Wait)\n"
               "                         or persistent (one ..._init per size, then MPI_Start\n"
               "                         and MPI_Wait per call), on both sides\n"
               "  --overlap              with --form nonblocking or persistent: also time each\n"
               "                         call overlapped with computation as long as the call\n"
               "                         (MPI_Test every 50 us) and report the share hidden\n"
               "  -l, --load N           N busy processes per node compete with the ranks for\n"
               "                         the cores while measuring (default 0)\n"
               "  --csv FILE             write the results as CSV\n"
               "  --json FILE            write the results as JSON\n"
               "  --write-rules FILE     time every ringx algorithm per size instead, and write\n"
               "                         the fastest as rules for this rank count into FILE\n"
               "                         (other rank counts' rules in FILE are kept); use it\n"
               "                         with --mca coll_ringx_rules_file FILE; a candidate\n"
               "                         replaces the built-in choice only when it is faster\n"
               "                         beyond the rounds' range (and by --margin, default\n"
               "                         0.05)\n"
               "  --check-rules FILE     re-measure FILE's choices against the built-in ones\n"
               "                         (run without coll_ringx_rules_file) and report where\n"
               "                         the rules help or hurt beyond the rounds' range\n"
               "  --margin FRACTION      what a candidate must gain besides the range, for\n"
               "                         --write-rules and --check-rules (default 0.05)\n"
               "  --churn N              time communicators instead: per round N times make\n"
               "                         one (dup or split), one allreduce of 1 int, free it;\n"
               "                         reports us per iteration and the resident set size\n");
    }
}

static int lookup_dtype(const char *name, options_t *o)
{
    for (size_t i = 0; i < LEN(dtypes); i++) {
        if (strcmp(dtypes[i].name, name) == 0) {
            o->dtype = &dtypes[i];
            return 0;
        }
    }
    return -1;
}

static int lookup_op(const char *name, options_t *o)
{
    for (size_t i = 0; i < LEN(ops); i++) {
        if (strcmp(ops[i].name, name) == 0) {
            o->op = &ops[i];
            return 0;
        }
    }
    return -1;
}

static int parse_colls(char *list, options_t *o)
{
    memset(o->colls, 0, sizeof(o->colls));
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int c = 0; c < NCOLL; c++) {
            if (strcmp(tok, coll_names[c]) == 0) {
                o->colls[c] = found = 1;
            }
        }
        if (!found) {
            return -1;
        }
    }
    return 0;
}

/* The index of name among names[0..n-1], or -1. */
static int index_of(const char *name, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(name, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* Returns 0, or an error message. */
static const char *parse_options(int argc, char **argv, options_t *o)
{
    *o = (options_t){ 8, 64u << 20, { 1, 1, 1 }, &dtypes[0], &ops[0], 0, 5, 0.1, NULL, NULL, 0,
                      FORM_BLOCKING, 0, 0, TIMING_SYNC, 0.25, NULL, NULL, 0.05, 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (!strcmp(a, "-b") || !strcmp(a, "--min-bytes")) {
            if (v) o->min_bytes = parse_size(v);
        } else if (!strcmp(a, "-e") || !strcmp(a, "--max-bytes")) {
            if (v) o->max_bytes = parse_size(v);
        } else if (!strcmp(a, "-c") || !strcmp(a, "--coll")) {
            if (v && parse_colls(argv[i + 1], o)) return "unknown collective";
        } else if (!strcmp(a, "-d") || !strcmp(a, "--dtype")) {
            if (v && lookup_dtype(v, o)) return "unknown datatype";
        } else if (!strcmp(a, "-o") || !strcmp(a, "--op")) {
            if (v && lookup_op(v, o)) return "unknown op";
        } else if (!strcmp(a, "-m") || !strcmp(a, "--mem")) {
            if (v && strcmp(v, "host") != 0 && strcmp(v, "cuda") != 0) {
                return "--mem: host or cuda";
            }
            o->device = v && !strcmp(v, "cuda");
        } else if (!strcmp(a, "-r") || !strcmp(a, "--rounds")) {
            if (v) o->rounds = atoi(v) < 1 ? 1 : atoi(v) > RX_MAX_ROUNDS ? RX_MAX_ROUNDS : atoi(v);
        } else if (!strcmp(a, "-t") || !strcmp(a, "--time")) {
            if (v) o->target_seconds = atof(v);
        } else if (!strcmp(a, "-f") || !strcmp(a, "--form")) {
            if (v && (o->form = index_of(v, form_names, NFORMS)) < 0) {
                return "--form: blocking, nonblocking or persistent";
            }
        } else if (!strcmp(a, "--timing")) {
            if (v && (o->timing = index_of(v, timing_names, NTIMINGS)) < 0) {
                return "--timing: sync or back-to-back";
            }
        } else if (!strcmp(a, "--noise")) {
            if (v) o->noise = atof(v);
        } else if (!strcmp(a, "--margin")) {
            if (v) o->margin = atof(v);
        } else if (!strcmp(a, "--json")) {
            o->json = v;
        } else if (!strcmp(a, "--churn")) {
            if (v && (o->churn = atoi(v)) < 1) return "--churn: a number of iterations";
        } else if (!strcmp(a, "--check-rules")) {
            o->check_rules = v;
        } else if (!strcmp(a, "--overlap")) {
            o->overlap = 1;
            takes = 0;
        } else if (!strcmp(a, "-l") || !strcmp(a, "--load")) {
            if (v) o->load = atoi(v) > 0 ? atoi(v) : 0;
        } else if (!strcmp(a, "--csv")) {
            o->csv = v;
        } else if (!strcmp(a, "--write-rules")) {
            o->rules = v;
        } else if (!strcmp(a, "-i") || !strcmp(a, "--in-place")) {
            o->in_place = 1;
            takes = 0;
        } else {
            return "unknown option";
        }
        if (takes && v == NULL) {
            return "option needs a value";
        }
        i += takes;
    }
    if (o->dtype->floating && o->op->kind >= OP_BAND) {
        return "bitwise ops need an integer datatype";
    }
    if (o->overlap && o->form == FORM_BLOCKING) {
        return "--overlap needs --form nonblocking or persistent";
    }
    if ((o->rules || o->check_rules) && o->form == FORM_PERSISTENT) {
        return "--write-rules and --check-rules time blocking or nonblocking calls (a persistent "
               "request keeps the algorithm of its init)";
    }
    if (o->rules && o->check_rules) {
        return "--write-rules and --check-rules exclude each other";
    }
    if (o->min_bytes == 0 || o->max_bytes < o->min_bytes) {
        return "bad size range";
    }
    return NULL;
}

/* ------------------------------------------------ values and reference */

/* Small integers: sums and products of up to 8 ranks stay exact in float. */
static int64_t input_value(const options_t *o, int r, size_t i)
{
    if (o->op->kind == OP_PROD) {
        return 1 + ((r + i) % 3 == 0);
    }
    return 1 + (int64_t)((r * 7 + i * 13) % 5) + (o->op->kind >= OP_BAND ? (int64_t)(i % 64) : 0);
}

static int64_t combine(op_kind_t k, int64_t a, int64_t b)
{
    switch (k) {
    case OP_SUM:  return a + b;
    case OP_PROD: return a * b;
    case OP_MIN:  return a < b ? a : b;
    case OP_MAX:  return a > b ? a : b;
    case OP_BAND: return a & b;
    case OP_BOR:  return a | b;
    default:      return a ^ b;
    }
}

static int64_t reduced_value(const options_t *o, size_t i)
{
    int64_t acc = input_value(o, 0, i);
    for (int r = 1; r < nprocs; r++) {
        acc = combine(o->op->kind, acc, input_value(o, r, i));
    }
    return acc;
}

static void store(const dtype_desc_t *t, void *buf, size_t i, int64_t v)
{
    char *p = (char *)buf + i * t->size;
    if (t->floating) {
        if (t->size == 4) { float f = (float)v; memcpy(p, &f, 4); }
        else { double d = (double)v; memcpy(p, &d, 8); }
    } else {
        memcpy(p, &v, t->size);    /* little-endian: the low bytes */
    }
}

/* Reads element i as an integer, and says whether it equals v once v is
 * narrowed to the element type (integers wrap, as C arithmetic does). */
static int element_equals(const dtype_desc_t *t, const void *buf, size_t i, int64_t v)
{
    const char *p = (const char *)buf + i * t->size;
    if (t->floating) {
        double got;
        if (t->size == 4) { float f; memcpy(&f, p, 4); got = f; }
        else { memcpy(&got, p, 8); }
        return got == (double)v;
    }
    uint64_t got = 0, want = (uint64_t)v;
    memcpy(&got, p, t->size);
    if (t->size < 8) {
        uint64_t mask = (UINT64_C(1) << (8 * t->size)) - 1;
        got &= mask;
        want &= mask;
    }
    return got == want;
}

/* ------------------------------------------------------------ buffers */

/* Puts this rank's input where the call reads it. */
void fill_input(const options_t *o, const point_t *pt, buffers_t *b)
{
    const dtype_desc_t *t = o->dtype;
    size_t n = pt->coll == COLL_RSB ? pt->count * (size_t)nprocs : pt->count;
    void *dst = o->in_place ? b->host_recv : b->host_send;
    size_t first = 0;

    if (pt->coll == COLL_ALLGATHER && o->in_place) {
        first = (size_t)rank * pt->count;
    }
    for (size_t i = 0; i < n; i++) {
        store(t, dst, first + i, input_value(o, rank, i));
    }
    if (o->device) {
        rx_device_put((char *)(o->in_place ? b->recv : b->send) + first * t->size,
                      (char *)dst + first * t->size, n * t->size);
    }
}

/* Bytes the collective reads (input) and writes (output) at this point. */
static size_t input_bytes(const options_t *o, const point_t *pt)
{
    size_t block = pt->count * o->dtype->size;
    return pt->coll == COLL_ALLREDUCE ? block
           : pt->coll == COLL_RSB || o->in_place ? block * (size_t)nprocs : block;
}

static size_t output_bytes(const options_t *o, const point_t *pt)
{
    size_t block = pt->count * o->dtype->size;
    return pt->coll == COLL_ALLGATHER ? block * (size_t)nprocs : block;
}

int check_output(const options_t *o, const point_t *pt, const buffers_t *b)
{
    const dtype_desc_t *t = o->dtype;
    const void *recv = b->host_recv;

    if (o->device) {
        rx_device_get(b->host_recv, b->recv, output_bytes(o, pt));
    }
    if (pt->coll == COLL_ALLGATHER) {
        for (int r = 0; r < nprocs; r++) {
            for (size_t i = 0; i < pt->count; i++) {
                if (!element_equals(t, recv, (size_t)r * pt->count + i,
                                    input_value(o, r, i))) {
                    return 0;
                }
            }
        }
        return 1;
    }
    size_t first = pt->coll == COLL_RSB ? (size_t)rank * pt->count : 0;
    for (size_t i = 0; i < pt->count; i++) {
        if (!element_equals(t, recv, i, reduced_value(o, first + i))) {
            return 0;
        }
    }
    return 1;
}

static int call_blocking(const options_t *o, const point_t *pt, const void *s, void *recv,
                         MPI_Comm comm)
{
    MPI_Datatype t = o->dtype->type;
    int n = (int)pt->count;
    switch (pt->coll) {
    case COLL_ALLREDUCE:
        return MPI_Allreduce(s, recv, n, t, o->op->op, comm);
    case COLL_ALLGATHER:
        return MPI_Allgather(s, n, t, recv, n, t, comm);
    default:
        return MPI_Reduce_scatter_block(s, recv, n, t, o->op->op, comm);
    }
}

/* --overlap: seconds of computation between the start of a nonblocking
 * or persistent call and its wait (0: none), with an MPI_Test every
 * OVERLAP_POLL_SECONDS, as applications that overlap poll their requests:
 * neither ringx nor libnbc has a progress thread. */
static double compute_seconds;
#define OVERLAP_POLL_SECONDS 50e-6

static int finish(MPI_Request *req)
{
    double start = MPI_Wtime(), polled = start, now = start;
    int done = 0;

    while (compute_seconds > 0 && (now = MPI_Wtime()) - start < compute_seconds) {
        if (!done && now - polled >= OVERLAP_POLL_SECONDS) {
            MPI_Test(req, &done, MPI_STATUS_IGNORE);
            polled = now;
        }
    }
    return MPI_Wait(req, MPI_STATUS_IGNORE);
}

static int call_nonblocking(const options_t *o, const point_t *pt, const void *s, void *recv,
                            MPI_Comm comm)
{
    MPI_Datatype t = o->dtype->type;
    int n = (int)pt->count, rc;
    MPI_Request req;
    switch (pt->coll) {
    case COLL_ALLREDUCE:
        rc = MPI_Iallreduce(s, recv, n, t, o->op->op, comm, &req);
        break;
    case COLL_ALLGATHER:
        rc = MPI_Iallgather(s, n, t, recv, n, t, comm, &req);
        break;
    default:
        rc = MPI_Ireduce_scatter_block(s, recv, n, t, o->op->op, comm, &req);
        break;
    }
    return rc == MPI_SUCCESS ? finish(&req) : rc;
}

/* MPI 4.0's persistent collectives: Open MPI 4.1's pcollreq extension,
 * the standard names in Open MPI 5. */
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define PERSISTENT(name) MPIX_##name##_init
#elif OMPI_MAJOR_VERSION >= 5
#define PERSISTENT(name) MPI_##name##_init
#endif

/* One persistent request per side, made for the point being measured
 * (the init is collective: every rank moves to the next point together). */
static struct persistent_call {
    MPI_Comm comm;
    int coll;
    size_t count;
    const void *send;
    void *recv;
    MPI_Request req;
} persistent_calls[2] = { { MPI_COMM_NULL, 0, 0, NULL, NULL, MPI_REQUEST_NULL },
                          { MPI_COMM_NULL, 0, 0, NULL, NULL, MPI_REQUEST_NULL } };

static void persistent_free_all(void)
{
    for (int i = 0; i < 2; i++) {
        if (persistent_calls[i].req != MPI_REQUEST_NULL) {
            MPI_Request_free(&persistent_calls[i].req);
        }
    }
}

static int call_persistent(const options_t *o, const point_t *pt, const void *s, void *recv,
                           MPI_Comm comm)
{
#ifdef PERSISTENT
    struct persistent_call *p = &persistent_calls[comm == stock_comm ? 0 : 1];
    MPI_Datatype t = o->dtype->type;
    int n = (int)pt->count, rc = MPI_SUCCESS;

    if (p->req != MPI_REQUEST_NULL && (p->coll != pt->coll || p->count != pt->count ||
                                       p->send != s || p->recv != recv || p->comm != comm)) {
        MPI_Request_free(&p->req);
    }
    if (p->req == MPI_REQUEST_NULL) {
        *p = (struct persistent_call){ comm, pt->coll, pt->count, s, recv, MPI_REQUEST_NULL };
        rc = pt->coll == COLL_ALLREDUCE
                 ? PERSISTENT(Allreduce)(s, recv, n, t, o->op->op, comm, MPI_INFO_NULL, &p->req)
             : pt->coll == COLL_ALLGATHER
                 ? PERSISTENT(Allgather)(s, n, t, recv, n, t, comm, MPI_INFO_NULL, &p->req)
                 : PERSISTENT(Reduce_scatter_block)(s, recv, n, t, o->op->op, comm,
                                                    MPI_INFO_NULL, &p->req);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Start(&p->req);
    }
    return rc == MPI_SUCCESS ? finish(&p->req) : rc;
#else
    (void)o; (void)pt; (void)s; (void)recv; (void)comm;
    return MPI_ERR_OTHER;
#endif
}

static int call_on(const options_t *o, const point_t *pt, void *send, void *recv,
                   MPI_Comm comm)
{
    const void *s = o->in_place ? MPI_IN_PLACE : send;
    switch (o->form) {
    case FORM_NONBLOCKING:
        return call_nonblocking(o, pt, s, recv, comm);
    case FORM_PERSISTENT:
        return call_persistent(o, pt, s, recv, comm);
    default:
        return call_blocking(o, pt, s, recv, comm);
    }
}

/* The user's own staging around a collective of an MPI that is not
 * CUDA-aware. */
static int call_staged(const options_t *o, const point_t *pt, buffers_t *b, MPI_Comm comm)
{
    void *in = o->in_place ? b->recv : b->send;
    void *host_in = o->in_place ? b->host_recv : b->host_send;
    int rc;

    rx_device_get(host_in, in, input_bytes(o, pt));
    rc = call_on(o, pt, b->host_send, b->host_recv, comm);
    rx_device_put(b->recv, b->host_recv, output_bytes(o, pt));
    return rc;
}

static int call(const options_t *o, const point_t *pt, buffers_t *b, MPI_Comm comm)
{
    return comm == stock_comm && b->stock_stages ? call_staged(o, pt, b, comm)
                                                 : call_on(o, pt, b->send, b->recv, comm);
}

const char *memory_label(const options_t *o, const buffers_t *b)
{
    return !o->device        ? "host memory"
           : b->stock_stages ? "device memory (stock side: copy to host, collective, copy back)"
                             : "device memory (stock side: CUDA-aware MPI)";
}

/* --------------------------------------------------------------- timing */

/* Mean seconds per call over iters calls, max over ranks.  Synchronised
 * (the default), each call starts after a barrier and only the call is
 * timed, so a call that leaves before its peers are done gains nothing on
 * the next one.  In place, the input is restored before every call,
 * outside the timed region, so those calls are always synchronised. */
double time_calls(const options_t *o, const point_t *pt, buffers_t *b, MPI_Comm comm,
                  int iters)
{
    double total = 0, t0, worst;
    MPI_Barrier(comm);
    if (o->in_place || o->timing == TIMING_SYNC) {
        for (int i = 0; i < iters; i++) {
            if (o->in_place) {
                fill_input(o, pt, b);
            }
            MPI_Barrier(comm);
            t0 = MPI_Wtime();
            call(o, pt, b, comm);
            total += MPI_Wtime() - t0;
        }
    } else {
        t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            call(o, pt, b, comm);
        }
        total = MPI_Wtime() - t0;
    }
    total /= iters;
    MPI_Allreduce(&total, &worst, 1, MPI_DOUBLE, MPI_MAX, stock_comm);
    return worst;
}

int all_true(int ok)
{
    int all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, stock_comm);
    return all;
}

/* Seconds per call of the stock side with what surrounds it (barriers),
 * max over ranks: what a measurement of N calls takes. */
static double wall_per_call(const options_t *o, const point_t *pt, buffers_t *b, int iters)
{
    double t0 = MPI_Wtime(), wall, worst;
    (void)time_calls(o, pt, b, stock_comm, iters);
    wall = (MPI_Wtime() - t0) / iters;
    MPI_Allreduce(&wall, &worst, 1, MPI_DOUBLE, MPI_MAX, stock_comm);
    return worst;
}

/* Iterations for about target_seconds per measurement, same on all ranks. */
int choose_iters(const options_t *o, const point_t *pt, buffers_t *b)
{
    fill_input(o, pt, b);
    call(o, pt, b, stock_comm);                /* warm-up of both sides */
    fill_input(o, pt, b);
    call(o, pt, b, ringx_comm);
    double once = wall_per_call(o, pt, b, 1);
    if (once < o->target_seconds / 1000) {
        once = wall_per_call(o, pt, b, 100);            /* one call is too short to time */
    }
    int iters = once > 0 ? (int)(o->target_seconds / once) : 1000;
    return iters < 3 ? 3 : iters > MAX_ITERS ? MAX_ITERS : iters;
}

/* The ringx algorithms whose counters moved since before[]. */
static void algorithms_used(const char *coll, const unsigned long long *before, int n,
                            char *out, size_t len, unsigned long long *served)
{
    char algs[16][RINGX_PVAR_NAME_LEN];
    unsigned long long now[16];
    int m = ringx_pvars_algorithms(coll, algs, now, n < 16 ? n : 16);

    out[0] = '\0';
    *served = 0;
    for (int i = 0; i < m; i++) {
        if (now[i] > before[i]) {
            size_t used = strlen(out);
            snprintf(out + used, len - used, "%s%s", used ? "+" : "", algs[i]);
            *served += now[i] - before[i];
        }
    }
    if (!out[0]) {
        snprintf(out, len, "none");
    }
}

/* As OSU's nonblocking benchmarks: each call overlapped with computation
 * as long as the call alone (pure); overlap = 1 - (total - compute) /
 * pure, clamped to [0, 1].  Timed calls of the last round are counted by
 * the pvars like the others. */
static double overlap_of(const options_t *o, const point_t *pt, buffers_t *b, MPI_Comm comm,
                         double pure)
{
    double total, hidden;
    fill_input(o, pt, b);
    compute_seconds = pure;
    total = time_calls(o, pt, b, comm, pt->iters);
    compute_seconds = 0;
    hidden = 1 - (total - pure) / pure;
    return hidden < 0 ? 0 : hidden > 1 ? 1 : hidden;
}

/* The overlap of one side, its results validated and its calls counted
 * by ringx (all of them for the ringx side, none for the stock side). */
static void measure_overlap(const options_t *o, const point_t *pt, buffers_t *b,
                            side_result_t *side, MPI_Comm comm, int ringx_serves)
{
    const char *coll = coll_names[pt->coll];
    unsigned long long before = ringx_pvars_served(coll);
    side->overlap = overlap_of(o, pt, b, comm, side->time.median);
    side->valid = side->valid && all_true(check_output(o, pt, b)) &&
                  all_true(ringx_pvars_served(coll) - before ==
                           (ringx_serves ? (unsigned long long)pt->iters : 0));
}

/* The rounds' spread, and the rounds themselves in order (--json lists
 * them: a mode that sets in part-way through a run shows there). */
static void keep_rounds(side_result_t *side, const double *t, int n)
{
    side->time = rx_spread_of(t, n);
    memcpy(side->rounds, t, (size_t)n * sizeof(*t));
    side->nrounds = n;
}

static void measure(const options_t *o, const point_t *pt, buffers_t *b, comparison_t *cmp)
{
    const char *coll = coll_names[pt->coll];
    char algs[16][RINGX_PVAR_NAME_LEN];
    unsigned long long before[16];
    int nalg = ringx_pvars_algorithms(coll, algs, before, 16);
    unsigned long long stock_before = ringx_pvars_served(coll), rx_before = 0;
    side_result_t *rx = &cmp->rx, *stock = &cmp->stock;
    double rx_t[RX_MAX_ROUNDS], stock_t[RX_MAX_ROUNDS], ratio[RX_MAX_ROUNDS];

    for (int r = 0; r < o->rounds; r++) {
        if (r == 0) {
            rx_before = ringx_pvars_served(coll);
        }
        fill_input(o, pt, b);
        rx_t[r] = time_calls(o, pt, b, ringx_comm, pt->iters);
        if (r == o->rounds - 1) {
            rx->valid = all_true(check_output(o, pt, b));
            stock_before = ringx_pvars_served(coll);
        }
        fill_input(o, pt, b);
        stock_t[r] = time_calls(o, pt, b, stock_comm, pt->iters);
        ratio[r] = stock_t[r] / rx_t[r];
    }
    keep_rounds(rx, rx_t, o->rounds);
    keep_rounds(stock, stock_t, o->rounds);
    cmp->ratio = rx_spread_of(ratio, o->rounds);
    stock->valid = all_true(check_output(o, pt, b));
    algorithms_used(coll, before, nalg, rx->alg, sizeof(rx->alg), &rx->served);
    /* Proof of the code path: every ringx-side call counted by ringx, and
     * none of the stock side's. */
    stock->served = ringx_pvars_served(coll) - stock_before;
    rx->valid = rx->valid && all_true(stock_before - rx_before ==
                                      (unsigned long long)o->rounds * (unsigned long long)pt->iters);
    stock->valid = stock->valid && all_true(stock->served == 0);
    if (o->overlap) {
        measure_overlap(o, pt, b, rx, ringx_comm, 1);
        measure_overlap(o, pt, b, stock, stock_comm, 0);
    }
}

/* ---------------------------------------------------------- the sweep */

/* The point for a requested size: whole elements, and for allgather and
 * reduce_scatter_block whole blocks of at least one element per rank. */
static point_t make_point(const options_t *o, int coll, size_t bytes)
{
    size_t esize = o->dtype->size;
    size_t unit = coll == COLL_ALLREDUCE ? esize : esize * (size_t)nprocs;
    point_t pt = { coll, 0, 0, 0 };
    pt.count = bytes / unit ? bytes / unit : 1;
    pt.bytes = pt.count * unit;
    return pt;
}

point_t first_point(const options_t *o, int coll)
{
    return make_point(o, coll, o->min_bytes);
}

int next_point(const options_t *o, point_t *pt)
{
    for (size_t s = pt->bytes * 2; s <= o->max_bytes; s *= 2) {
        point_t next = make_point(o, pt->coll, s);
        if (next.bytes > pt->bytes) {
            *pt = next;
            return 1;
        }
    }
    return 0;
}

static int count_points(const options_t *o)
{
    int n = 0;
    for (int c = 0; c < NCOLL; c++) {
        point_t pt = first_point(o, c);
        for (int more = o->colls[c] && pt.bytes <= o->max_bytes; more; more = next_point(o, &pt)) {
            n++;
        }
    }
    return n;
}

static int sweep(const options_t *o, buffers_t *b)
{
    int failures = 0, index = 0, total = count_points(o);
    for (int c = 0; c < NCOLL; c++) {
        point_t pt = first_point(o, c);
        for (int more = o->colls[c] && pt.bytes <= o->max_bytes; more; more = next_point(o, &pt)) {
            comparison_t cmp = { 0 };
            pt.iters = choose_iters(o, &pt, b);
            measure(o, &pt, b, &cmp);
            failures += !(cmp.rx.valid && cmp.stock.valid);
            if (rank == 0) {
                report_point(o, &pt, &cmp, ++index, total);
            }
        }
    }
    return failures;
}

/* ----------------------------------------------- ringx's control variables */

int cvar_write_int(const char *name, int value, int *old)
{
    int index, count, ok;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS) {
        return -1;
    }
    ok = (old ? MPI_T_cvar_read(h, old) : MPI_SUCCESS) == MPI_SUCCESS &&
         MPI_T_cvar_write(h, &value) == MPI_SUCCESS;
    MPI_T_cvar_handle_free(&h);
    return ok ? 0 : -1;
}

int cvar_read_int(const char *name, int *value)
{
    int index, count, ok;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS) {
        return -1;
    }
    ok = MPI_T_cvar_read(h, value) == MPI_SUCCESS;
    MPI_T_cvar_handle_free(&h);
    return ok ? 0 : -1;
}

int cvar_enum_value(const char *name, const char *item)
{
    int index, verbosity, bind, scope, num, value;
    char cname[128], desc[512], iname[128];
    int clen = sizeof(cname), dlen = sizeof(desc);
    MPI_Datatype type;
    MPI_T_enum e;

    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS ||
        MPI_T_cvar_get_info(index, cname, &clen, &verbosity, &type, &e, desc, &dlen, &bind,
                            &scope) != MPI_SUCCESS ||
        e == MPI_T_ENUM_NULL || MPI_T_enum_get_info(e, &num, iname, &(int){ sizeof(iname) }) !=
                                    MPI_SUCCESS) {
        return -1;
    }
    for (int i = 0; i < num; i++) {
        int ilen = sizeof(iname);
        if (MPI_T_enum_get_item(e, i, &value, iname, &ilen) == MPI_SUCCESS &&
            strcmp(iname, item) == 0) {
            return value;
        }
    }
    return -1;
}

/* Components that make sub-communicators on their first calls (coll/han)
 * make them now: the stock side's while ringx stays off new communicators,
 * so that it runs without ringx at every level, and the ringx side's
 * before any call is counted. */
static void make_subcommunicators(MPI_Comm comm)
{
    int one = 1, sum;
    int *all = malloc(sizeof(int) * (size_t)nprocs);

    MPI_Barrier(comm);
    MPI_Bcast(&one, 1, MPI_INT, 0, comm);
    MPI_Reduce(&one, &sum, 1, MPI_INT, MPI_SUM, 0, comm);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (all != NULL) {
        MPI_Allgather(&one, 1, MPI_INT, all, 1, MPI_INT, comm);
        free(all);
    }
}

/* The stock side: a communicator made while ringx's priority is negative. */
static const char *make_communicators(void)
{
    int priority;
    if (cvar_write_int("coll_ringx_priority", -1, &priority) != 0) {
        return "ringx is not loaded (no coll_ringx_priority control variable): set "
               "OMPI_MCA_mca_base_component_path or install the component";
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &stock_comm);
    make_subcommunicators(stock_comm);
    cvar_write_int("coll_ringx_priority", priority, NULL);
    MPI_Comm_dup(MPI_COMM_WORLD, &ringx_comm);
    make_subcommunicators(ringx_comm);
    return NULL;
}

/* The nodes are Open MPI's (MPI_COMM_TYPE_SHARED), the same locality
 * ringx goes by. */
static void find_node_layout(void)
{
    MPI_Comm node;
    int here, local_rank, first, fewest, most;

    MPI_Comm_split_type(stock_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &here);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    first = local_rank == 0;
    MPI_Allreduce(&first, &node_layout.nodes, 1, MPI_INT, MPI_SUM, stock_comm);
    MPI_Allreduce(&here, &fewest, 1, MPI_INT, MPI_MIN, stock_comm);
    MPI_Allreduce(&here, &most, 1, MPI_INT, MPI_MAX, stock_comm);
    node_layout.min_ranks = fewest;
    node_layout.max_ranks = most;
}

const char *node_layout_text(void)
{
    static char text[64];
    const node_layout_t *l = &node_layout;

    if (l->min_ranks == l->max_ranks) {
        snprintf(text, sizeof(text), "%d node%s, %d rank%s per node", l->nodes,
                 l->nodes > 1 ? "s" : "", l->min_ranks, l->min_ranks > 1 ? "s" : "");
    } else {
        snprintf(text, sizeof(text), "%d nodes, %d to %d ranks per node", l->nodes,
                 l->min_ranks, l->max_ranks);
    }
    return text;
}

static int cuda_aware_mpi(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT)
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}

/* Host buffers, and device ones for --mem cuda; -1 (with "SKIP: ...") if
 * some rank has no device. */
static int open_buffers(const options_t *o, buffers_t *b, size_t bytes)
{
    const char *why = "";
    int mine = 1, all = 1;
    MPI_Comm node;
    int local_rank;

    *b = (buffers_t){ NULL, NULL, malloc(bytes), malloc(bytes), 0 };
    if (o->device) {
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &local_rank);
        MPI_Comm_free(&node);
        mine = rx_device_open(local_rank, &why);
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
    if (!all) {
        if (rank == 0) {
            printf("SKIP: %s\n", mine ? "no CUDA device on some rank" : why);
        }
        return -1;
    }
    b->send = o->device ? rx_device_copy_of(NULL, bytes) : b->host_send;
    b->recv = o->device ? rx_device_copy_of(NULL, bytes) : b->host_recv;
    b->stock_stages = o->device && !cuda_aware_mpi();
    return 0;
}

static void close_buffers(const options_t *o, buffers_t *b)
{
    if (o->device) {
        rx_device_free(b->send);
        rx_device_free(b->recv);
    }
    free(b->host_send);
    free(b->host_recv);
}

/* The run itself, between the buffers' opening and closing: the
 * comparison, the tuner or the check of a rules file. */
static int run(const options_t *o, buffers_t *b)
{
    int failures;

    if (o->rules || o->check_rules) {
        if (rank == 0) {
            printf("# ringx %s: np=%d, %s %s, %s, timing %s; us per call, median [min-max] of "
                   "%d interleaved rounds (each the mean of N calls, max over ranks)\n",
                   o->rules ? "algorithms timed one by one" : "rules checked against the built-in choice",
                   nprocs, o->dtype->name, o->op->name, memory_label(o, b),
                   timing_names[o->timing], o->rounds);
        }
        failures = o->rules ? tune(o, b) : check_rules(o, b);
        if (rank == 0) {
            printf("# %s\n", failures ? "FAILED: some results were wrong or not served as expected"
                                      : "all results validated");
        }
        return failures;
    }
    if (all_true(report_open(o, b) == 0) == 0) {
        return 1;
    }
    failures = sweep(o, b);
    report_close(o, failures);
    return failures;
}

/* The measurements on buffers (all but --churn), between the buffers'
 * opening and closing; 77 if some rank has no device. */
static int with_buffers(const options_t *o)
{
    buffers_t b;
    int failures;
    size_t max_buf = o->max_bytes + o->dtype->size * (size_t)nprocs;

    if (open_buffers(o, &b, max_buf) != 0) {
        return 77;      /* SKIP: no device */
    }
    if (load_start(o->load) != 0) {
        if (rank == 0) {
            fprintf(stderr, "ringx_bench: --load: could not start the busy processes\n");
        }
        failures = 1;
    } else {
        if (rank == 0 && o->load > 0 && (o->rules || o->check_rules)) {
            printf("# with %d busy process%s per node competing for the cores\n", o->load,
                   o->load > 1 ? "es" : "");
        }
        failures = run(o, &b);
    }
    load_stop();
    persistent_free_all();
    close_buffers(o, &b);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    options_t o;
    const char *err;
    int failures;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    err = parse_options(argc, argv, &o);
    if (!err && ringx_pvars_open() <= 0) {
        err = "ringx is not loaded (no coll_ringx_* performance variables)";
    }
    if (!err) {
        err = make_communicators();
    }
    if (err) {
        if (rank == 0) {
            fprintf(stderr, "ringx_bench: %s\n", err);
            usage();
        }
        MPI_Finalize();
        return 2;
    }
    find_node_layout();
    failures = o.churn ? churn(&o) : with_buffers(&o);
    MPI_Comm_free(&ringx_comm);
    MPI_Comm_free(&stock_comm);
    ringx_pvars_close();
    MPI_Finalize();
    return failures == 77 ? 77 : failures ? 1 : 0;
}
