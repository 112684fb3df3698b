/*
 * ringx_test_util.h - helpers shared by the ringx MPI integration tests.
 *
 * Three concerns:
 *   - reading the component's MPI_T performance variables (the only way a
 *     test can tell whether ringx or the stock component served a call);
 *   - a stateless, deterministic random source keyed by (case, rank), so
 *     that every rank can regenerate the inputs of every other rank and
 *     compute the expected result without communicating;
 *   - failure bookkeeping: descriptive reports and a job-wide final tally.
 */
#ifndef RINGX_TEST_UTIL_H
#define RINGX_TEST_UTIL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* MPI_T performance variables                                         */
/* ------------------------------------------------------------------ */

/* The fallback reasons of the component's contract, in a fixed order. */
enum { RX_NUM_FALLBACK_REASONS = 6 };
extern const char *const rx_fallback_reasons[RX_NUM_FALLBACK_REASONS];

/* Index of reason in rx_fallback_reasons, or -1. */
int rx_fallback_reason_index(const char *reason);

/* Initialise MPI_T and create the pvar session.  Call after MPI_Init.
 * Returns 0 on success. */
int rx_pvar_init(void);
void rx_pvar_finalize(void);

/* True iff at least one coll_ringx_* pvar is registered. */
int rx_component_loaded(void);

/* Sum of every coll_ringx_<coll>_<alg>_calls counter: the calls of that
 * collective ringx served, whatever algorithm it picked. */
unsigned long long rx_served(const char *coll);

/* coll_ringx_<coll>_fallback_<reason> (0 when missing). */
unsigned long long rx_fallback(const char *coll, const char *reason);

/* coll_ringx_<coll>_bytes_sent (0 when missing). */
unsigned long long rx_bytes_sent(const char *coll);

/* All counters of one collective, read together. */
typedef struct rx_counters {
    unsigned long long served;
    unsigned long long alg_calls;   /* of the algorithm asked for, if any */
    unsigned long long bytes_sent;
    unsigned long long staged;      /* calls through bounce buffers */
    unsigned long long on_device;   /* calls on device memory */
    unsigned long long mailbox;     /* calls with mailbox messages */
    unsigned long long sent_ahead;  /* calls with a message sent ahead of its step */
    unsigned long long packed;      /* calls whose datatypes left gaps, packed */
    unsigned long long direct_buffers; /* direct reads out of the peers' buffers */
    unsigned long long nonblocking; /* nonblocking calls served */
    unsigned long long persistent;  /* starts of persistent calls served */
    unsigned long long handed_back; /* calls the previous component handed back */
    unsigned long long fallback[RX_NUM_FALLBACK_REASONS];
} rx_counters_t;

/* alg: also read coll_ringx_<coll>_<alg>_calls into alg_calls (or NULL). */
void rx_counters_read(const char *coll, const char *alg, rx_counters_t *out);

/* Check the shape of the pvar interface against the contract (class,
 * datatype, binding, flags, and presence of every counter of each of the
 * ncolls collectives).  Reports and counts each violation. */
void rx_check_pvar_contract(const char *const *colls, int ncolls);

/* ------------------------------------------------------------------ */
/* Deterministic inputs                                                */
/* ------------------------------------------------------------------ */

/* Seed of one rank's input for one test case.  case_key must be the same
 * on every rank of the communicator; rank is the rank in it. */
uint64_t rx_case_seed(uint64_t case_key, int rank);

/* splitmix64 finaliser: a cheap bijective mixer with good avalanche. */
static inline uint64_t rx_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Combine values into a case key (order matters). */
uint64_t rx_mix(uint64_t a, uint64_t b);

/* Random 64 bits for element `index` of the stream `seed`.  Stateless, so
 * any element of any rank's input can be regenerated independently.
 * Inline: the reference computation calls it for every input scalar of
 * every rank. */
static inline uint64_t rx_random(uint64_t seed, uint64_t index)
{
    return rx_mix64(seed + (index + 1) * 0x9e3779b97f4a7c15ULL);
}

/* Uniform double in [0, 1) from the top 53 bits. */
static inline double rx_unit(uint64_t bits)
{
    return (double)(bits >> 11) * (1.0 / 9007199254740992.0);
}

/* ------------------------------------------------------------------ */
/* Failures                                                            */
/* ------------------------------------------------------------------ */

/* What a failing call was; printed with every failure. */
typedef struct rx_call {
    const char *coll;       /* "allreduce", ... */
    const char *type_name;  /* "MPI_INT8_T", ... */
    const char *op_name;    /* "MPI_SUM", "-" for allgather */
    size_t count;
    int in_place;
    MPI_Comm comm;
} rx_call_t;

/* Count one check; when !ok, count a failure and report it for call
 * (NULL: a failure not tied to a call).  Returns ok. */
int rx_check(const rx_call_t *call, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Count a failure outside any call (e.g. setup problems). */
void rx_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Watchdog around one blocking call: unless disarmed within `seconds`
 * (0: no watchdog), print a failure naming the call and _exit(3), so that
 * a deadlock is reported with its culprit instead of by a job timeout. */
void rx_watchdog_arm(const rx_call_t *call, unsigned seconds);
void rx_watchdog_disarm(void);

/* Sum checks and failures over MPI_COMM_WORLD (with a plain MPI_Allreduce,
 * which ringx itself may serve), print "<program> np=N: M checks, F
 * failures" on rank 0 and return the process exit status: 0 iff F == 0. */
int rx_finish(const char *program);

/* The same over comm (e.g. one that joins spawned processes to their
 * parents); N is comm's size. */
int rx_finish_on(MPI_Comm comm, const char *program);

#endif /* RINGX_TEST_UTIL_H */
