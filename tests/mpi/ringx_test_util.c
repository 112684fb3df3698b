/*
 * ringx_test_util.c - pvar access, deterministic inputs and failure
 * bookkeeping for the ringx MPI integration tests.
 */
/* sigaction(), alarm() and write() for the watchdog under strict C11 */
#define _POSIX_C_SOURCE 200809L

#include "ringx_test_util.h"
#include "ringx_pvars.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* MPI_T performance variables (read through include/ringx_pvars.h)    */
/* ------------------------------------------------------------------ */

const char *const rx_fallback_reasons[RX_NUM_FALLBACK_REASONS] = {
    "disabled", "datatype", "op", "memory", "transport", "communicator"
};

int rx_fallback_reason_index(const char *reason)
{
    for (int i = 0; i < RX_NUM_FALLBACK_REASONS; i++) {
        if (0 == strcmp(reason, rx_fallback_reasons[i])) {
            return i;
        }
    }
    return -1;
}

int rx_pvar_init(void)
{
    if (ringx_pvars_open() < 0) {
        rx_fail("MPI_T could not be initialised");
        return -1;
    }
    return 0;
}

void rx_pvar_finalize(void)
{
    ringx_pvars_close();
}

int rx_component_loaded(void)
{
    return ringx_pvars.count > 0;
}

unsigned long long rx_served(const char *coll)
{
    return ringx_pvars_served(coll);
}

unsigned long long rx_fallback(const char *coll, const char *reason)
{
    char what[64];

    snprintf(what, sizeof what, "fallback_%s", reason);
    return ringx_pvar_read_coll(coll, what);
}

unsigned long long rx_bytes_sent(const char *coll)
{
    return ringx_pvar_read_coll(coll, "bytes_sent");
}

void rx_counters_read(const char *coll, const char *alg, rx_counters_t *out)
{
    char what[96];

    snprintf(what, sizeof what, "%s_calls", alg ? alg : "");
    out->alg_calls = alg ? ringx_pvar_read_coll(coll, what) : 0;
    out->served = rx_served(coll);
    out->bytes_sent = rx_bytes_sent(coll);
    out->staged = ringx_pvar_read_coll(coll, "staged");
    out->on_device = ringx_pvar_read_coll(coll, "on_device");
    out->mailbox = ringx_pvar_read_coll(coll, "mailbox");
    out->sent_ahead = ringx_pvar_read_coll(coll, "sent_ahead");
    out->packed = ringx_pvar_read_coll(coll, "packed");
    out->direct_buffers = ringx_pvar_read_coll(coll, "direct_buffers");
    out->nonblocking = ringx_pvar_read_coll(coll, "nonblocking");
    out->persistent = ringx_pvar_read_coll(coll, "persistent");
    out->handed_back = ringx_pvar_read_coll(coll, "handed_back");
    for (int i = 0; i < RX_NUM_FALLBACK_REASONS; i++) {
        out->fallback[i] = rx_fallback(coll, rx_fallback_reasons[i]);
    }
}

static void check_pvar_shape(const ringx_pvar_info_t *p)
{
    rx_check(NULL, MPI_T_PVAR_CLASS_COUNTER == p->var_class,
             "pvar %s: class is not MPI_T_PVAR_CLASS_COUNTER", p->name);
    rx_check(NULL, MPI_UNSIGNED_LONG_LONG == p->datatype,
             "pvar %s: datatype is not MPI_UNSIGNED_LONG_LONG", p->name);
    rx_check(NULL, MPI_T_BIND_NO_OBJECT == p->bind,
             "pvar %s: binding is not MPI_T_BIND_NO_OBJECT", p->name);
    rx_check(NULL, p->continuous, "pvar %s: not continuous", p->name);
    rx_check(NULL, p->readonly, "pvar %s: not read-only", p->name);
    rx_check(NULL, p->has_handle, "pvar %s: no MPI_T handle", p->name);
}

static void check_coll_pvars_present(const char *coll)
{
    char name[RINGX_PVAR_NAME_LEN], alg[RINGX_PVAR_NAME_LEN];
    int algorithms = 0;

    for (int i = 0; i < ringx_pvars.count; i++) {
        algorithms += NULL != ringx_pvar_algorithm(&ringx_pvars.vars[i], coll, alg, sizeof alg);
    }
    rx_check(NULL, algorithms > 0,
             "no coll_ringx_%s_<alg>_calls pvar registered", coll);
    static const char *const counters[] = { "bytes_sent", "staged", "on_device", "mailbox",
                                            "sent_ahead", "direct_buffers", "nonblocking",
                                            "persistent", "handed_back", "packed" };
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
        snprintf(name, sizeof name, "coll_ringx_%s_%s", coll, counters[i]);
        rx_check(NULL, NULL != ringx_pvar_find(name), "pvar %s is missing", name);
    }
    for (int i = 0; i < RX_NUM_FALLBACK_REASONS; i++) {
        snprintf(name, sizeof name, "coll_ringx_%s_fallback_%s", coll,
                 rx_fallback_reasons[i]);
        rx_check(NULL, NULL != ringx_pvar_find(name), "pvar %s is missing", name);
    }
}

void rx_check_pvar_contract(const char *const *colls, int ncolls)
{
    for (int i = 0; i < ringx_pvars.count; i++) {
        check_pvar_shape(&ringx_pvars.vars[i]);
    }
    for (int i = 0; i < ncolls; i++) {
        check_coll_pvars_present(colls[i]);
    }
}

/* ------------------------------------------------------------------ */
/* Deterministic inputs                                                */
/* ------------------------------------------------------------------ */

uint64_t rx_mix(uint64_t a, uint64_t b)
{
    return rx_mix64(a * 0x9e3779b97f4a7c15ULL + rx_mix64(b + 0x632be59bd9b4e019ULL));
}

uint64_t rx_case_seed(uint64_t case_key, int rank)
{
    return rx_mix(case_key, (uint64_t)(unsigned)rank + 1);
}

/* ------------------------------------------------------------------ */
/* Failures                                                            */
/* ------------------------------------------------------------------ */

/* Detailed reports per rank; beyond this only the count grows, so a
 * systematic bug does not drown the log. */
#ifndef RX_MAX_REPORTS
#define RX_MAX_REPORTS 20
#endif

static long long rx_checks;
static long long rx_failures;

/* -1 in a program of MPI Sessions alone, which has no MPI_COMM_WORLD. */
static int world_rank(void)
{
    int rank = -1, initialized = 0, finalized = 0;

    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    return rank;
}

/* "FAIL rank R: <call>" into buf. */
static void format_failure_prefix(const rx_call_t *call, char *buf, size_t len)
{
    char comm_name[MPI_MAX_OBJECT_NAME] = "?";
    int name_len = 0;

    if (!call) {
        snprintf(buf, len, "FAIL rank %d", world_rank());
        return;
    }
    MPI_Comm_get_name(call->comm, comm_name, &name_len);
    snprintf(buf, len,
             "FAIL rank %d: %s type=%s op=%s count=%zu in_place=%s comm=%s",
             world_rank(), call->coll, call->type_name, call->op_name,
             call->count, call->in_place ? "yes" : "no", comm_name);
}

static void report(const rx_call_t *call, const char *fmt, va_list ap)
{
    char prefix[512], msg[1024];

    rx_failures++;
    if (rx_failures > RX_MAX_REPORTS) {
        return;
    }
    vsnprintf(msg, sizeof msg, fmt, ap);
    format_failure_prefix(call, prefix, sizeof prefix);
    fprintf(stderr, "%s: %s\n", prefix, msg);
    if (RX_MAX_REPORTS == rx_failures) {
        fprintf(stderr, "rank %d: further failures are counted, not shown\n",
                world_rank());
    }
    fflush(stderr);
}

int rx_check(const rx_call_t *call, int ok, const char *fmt, ...)
{
    va_list ap;

    rx_checks++;
    if (!ok) {
        va_start(ap, fmt);
        report(call, fmt, ap);
        va_end(ap);
    }
    return ok;
}

void rx_fail(const char *fmt, ...)
{
    va_list ap;

    rx_checks++;
    va_start(ap, fmt);
    report(NULL, fmt, ap);
    va_end(ap);
}

/* The watchdog's message is formatted when it is armed: the signal handler
 * may only use async-signal-safe functions. */
static char rx_watchdog_text[1024];

static void watchdog_fired(int sig)
{
    (void)sig;
    if (write(STDERR_FILENO, rx_watchdog_text, strlen(rx_watchdog_text)) < 0) {
        /* nothing left to try: exit anyway */
    }
    _exit(3);
}

void rx_watchdog_arm(const rx_call_t *call, unsigned seconds)
{
    static int installed;
    char prefix[512];
    struct sigaction sa;

    if (0 == seconds) {
        return;
    }
    if (!installed) {
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = watchdog_fired;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, NULL);
        installed = 1;
    }
    format_failure_prefix(call, prefix, sizeof prefix);
    snprintf(rx_watchdog_text, sizeof rx_watchdog_text,
             "%s: the call did not return within %u s (deadlock?); "
             "aborting\n", prefix, seconds);
    alarm(seconds);
}

void rx_watchdog_disarm(void)
{
    alarm(0);
}

int rx_finish(const char *program)
{
    return rx_finish_on(MPI_COMM_WORLD, program);
}

int rx_finish_on(MPI_Comm comm, const char *program)
{
    long long local[2] = { rx_checks, rx_failures }, global[2] = { 0, 0 };
    int size, rank;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    MPI_Allreduce(local, global, 2, MPI_LONG_LONG, MPI_SUM, comm);
    if (0 == rank) {
        printf("%s np=%d: %lld checks, %lld failures\n", program, size,
               global[0], global[1]);
        fflush(stdout);
    }
    /* A rank with local failures fails even if the tally (possibly served
     * by the component under test) came back wrong. */
    return (0 == global[1] && 0 == rx_failures) ? 0 : 1;
}
