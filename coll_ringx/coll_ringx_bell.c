/*
 * coll_ringx_bell.c - where ranks share cores with other processes, a wait
 * for the ranks of its node sleeps until a peer rings the process's bell,
 * instead of yielding the core (coll_ringx_bell.h).
 *
 * Why: a yield hands the core to whatever else runs there, and a busy
 * process keeps it for a time slice.  Measured on 2 cores, np 4 with two
 * busy processes beside the job: small calls took 1.3 to 6.7 ms, in
 * steps of a slice, on both ringx and the stock collectives.  A sleeping
 * process is woken by the peer that stores the flag it waits for, and the
 * kernel soon runs a task that wakes.  Where the cores are shared only
 * among ranks of the job, a yield hands the core to the rank that is
 * needed, while sleeping costs a wakeup per wait (np 4 on 2 cores, quiet:
 * a small allreduce took 28-48 us sleeping at every wait, 6-7 us
 * yielding), so waits sleep only after a yield took longer than
 * coll_ringx_sleep_after_yield_us: then other processes hold the core.
 *
 * Nonblocking and persistent calls are waited for in Open MPI's progress
 * loop, which yields between turns without events: ringx's progress
 * callback sleeps in an idle turn (ringx_bell_rest), with a turn that
 * came back late as the long yield.
 *
 * No ring is lost: a sleeper announces itself (asleep), then looks at its
 * flags once more (one more round of its call) before it sleeps on the
 * ring count it read before announcing; a ringer stores its flag, then
 * looks whether anyone sleeps.  With a full fence between store and load
 * on both sides, one of them sees the other's store.  A sleep that ends at
 * the time limit while what it waited for is already there (the next look
 * finds work) is counted as a ring missed: where peers lose no ring, that
 * takes a peer descheduled between its store and its ring, so the count
 * stays near 0 however busy the cores, where the time limit ends most
 * sleeps when the peers get no core for 1 ms.
 */
#include "coll_ringx.h"
#include "coll_ringx_bell.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The longest sleep: waits also cover what does not ring (UCX's messages,
 * the other components' traffic that MPI's progress rule moves on). */
#define RINGX_BELL_SLEEP_NS 1000000
/* How long after a long yield the waits sleep; then they yield again, and
 * the next long yield renews it. */
#define RINGX_BELL_CONTENDED_NS 20000000

__thread unsigned ringx_bell_work;

static ringx_bell_t *own_bell;
/* Whether the peers on this node may sleep: they share its cores, so they
 * yield where it does (until the first call decides: yes). */
static int peers_may_sleep = 1;

static __thread struct {
    int may_sleep;
    int announced;              /* asleep counted for this thread */
    uint32_t rings;             /* the count read before announcing */
    unsigned work;              /* ringx_bell_work at the last idle round */
    int64_t contended_until;    /* ns, CLOCK_MONOTONIC */
    int timed_out;              /* the last sleep ended at the time limit */
} waiter;

void ringx_bell_open(ringx_bell_t *own)
{
    own_bell = own;
}

static long futex(uint32_t *word, int op, uint32_t value, const struct timespec *timeout)
{
    return syscall(SYS_futex, word, op, value, timeout, NULL, 0);
}

void ringx_bell_peers_sleep(int may)
{
    __atomic_store_n(&peers_may_sleep, may, __ATOMIC_RELAXED);
}

void ringx_bell_ring(ringx_bell_t *const *bells, int n)
{
    ringx_bell_note_work();
    if (!__atomic_load_n(&peers_may_sleep, __ATOMIC_RELAXED)) {
        return;     /* a fence per flag: np 2's small calls about 8% slower */
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int i = 0; i < n; i++) {
        if (bells[i] != NULL && __atomic_load_n(&bells[i]->asleep, __ATOMIC_RELAXED) != 0) {
            __atomic_fetch_add(&bells[i]->rings, 1, __ATOMIC_SEQ_CST);
            (void)futex(&bells[i]->rings, FUTEX_WAKE, INT_MAX, NULL);
        }
    }
}

static int64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void announce(void)
{
    waiter.rings = __atomic_load_n(&own_bell->rings, __ATOMIC_ACQUIRE);
    __atomic_fetch_add(&own_bell->asleep, 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    waiter.announced = 1;
}

static void withdraw(void)
{
    if (waiter.announced) {
        __atomic_fetch_sub(&own_bell->asleep, 1, __ATOMIC_RELAXED);
        waiter.announced = 0;
    }
}

static void sleep_on_bell(void)
{
    struct timespec limit = { 0, RINGX_BELL_SLEEP_NS };
    long rc = futex(&own_bell->rings, FUTEX_WAIT, waiter.rings, &limit);

    ringx_count(&mca_coll_ringx_counters.waits_slept, 1);
    if (rc != 0 && errno == ETIMEDOUT) {
        ringx_count(&mca_coll_ringx_counters.sleeps_timed_out, 1);
        waiter.timed_out = 1;
    }
    withdraw();
}

/* After a sleep that timed out, the first look: found_work says whether
 * it found what the wait was for. */
static void after_timeout(int found_work)
{
    if (waiter.timed_out) {
        waiter.timed_out = 0;
        if (found_work) {
            ringx_count(&mca_coll_ringx_counters.rings_missed, 1);
        }
    }
}

/* A wait that was off its core for took ns, from start, while it had
 * nothing else to do: longer than coll_ringx_sleep_after_yield_us means
 * other processes hold the core. */
static void watch_gap(int64_t start, int64_t took, const char *what)
{
    int after_us = mca_coll_ringx_component.sleep_after_yield_us;
    static int told;

    if (after_us > 0 && took >= (int64_t)after_us * 1000) {
        waiter.contended_until = start + took + RINGX_BELL_CONTENDED_NS;
        if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED)) {
            RINGX_LOG(2, "%s took %lld us: other processes hold this core, so waits for ranks "
                         "of this node sleep until woken (coll_ringx_sleep_after_yield_us %d)",
                      what, (long long)(took / 1000), after_us);
        }
    }
}

static void yield_and_watch(void)
{
    int64_t start = now_ns();

    sched_yield();
    watch_gap(start, now_ns() - start, "a yield");
}

static int core_contended(void)
{
    return mca_coll_ringx_component.sleep_after_yield_us < 0 ||
           (waiter.contended_until != 0 && now_ns() < waiter.contended_until);
}

void ringx_bell_wait_begins(int may_sleep)
{
    waiter.may_sleep = may_sleep && own_bell != NULL &&
                       mca_coll_ringx_component.sleep_after_yield_us != 0;
    waiter.work = ringx_bell_work;
}

void ringx_bell_wait_ends(void)
{
    after_timeout(1);           /* the look after it ended the wait */
    withdraw();
    waiter.may_sleep = 0;
}

void ringx_bell_idle(void)
{
    int worked = waiter.work != ringx_bell_work;

    after_timeout(worked);      /* the sleep followed the last idle round */
    waiter.work = ringx_bell_work;
    if (!waiter.may_sleep || worked || !core_contended()) {
        withdraw();
        yield_and_watch();
    } else if (!waiter.announced) {
        announce();             /* the call looks at its flags once more */
    } else {
        sleep_on_bell();
    }
}

/* ------------------------------------------- Open MPI's progress loop */

/* A thread that ran for less than this between two turns of Open MPI's
 * progress did nothing but wait (a yield, the other components' progress:
 * a few us); one that computes between its MPI_Test calls ran longer, and
 * must not sleep in them. */
#define RINGX_BELL_WAIT_LOOP_CPU_NS 20000

static __thread struct {
    int64_t wall;               /* when the last turn ended */
    int64_t cpu;                /* and the thread's CPU time then, if known */
    int cpu_known;
    int idle;                   /* it had no event: Open MPI yielded after it */
    int suspect;                /* a long yield whose CPU time was not known */
} last_turn;

/* A system call (0.6 us here, against 23 ns for the wall clock): read only
 * where the waits may sleep or a long yield is to be confirmed. */
static int64_t thread_cpu_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Announces, looks once more, and sleeps unless that round did work. */
static int sleep_unless_work(int (*round)(void))
{
    unsigned work;
    int n;

    announce();
    work = ringx_bell_work;
    n = round();
    if (n != 0 || work != ringx_bell_work) {
        withdraw();
        return n;
    }
    sleep_on_bell();
    ringx_count(&mca_coll_ringx_counters.progress_slept, 1);
    n = round();
    after_timeout(n != 0 || work != ringx_bell_work);
    return n;
}

/* The thread's CPU time since the last turn ended, where it was read then
 * (else more than any loop takes). */
static int64_t cpu_since_last_turn(void)
{
    return last_turn.cpu_known ? thread_cpu_ns() - last_turn.cpu : INT64_MAX;
}

/* Open MPI yields after a turn without events: a yield that took longer
 * than coll_ringx_sleep_after_yield_us, while the thread did nothing else,
 * means other processes hold the core.  Where the thread's CPU time was
 * not read at the last turn's end, a long yield is confirmed by the next
 * one (read at this turn's end). */
void ringx_bell_turn_begins(void)
{
    int after_us = mca_coll_ringx_component.sleep_after_yield_us;
    int64_t gap;

    if (!__atomic_load_n(&peers_may_sleep, __ATOMIC_RELAXED) || !last_turn.idle) {
        return;
    }
    gap = now_ns() - last_turn.wall;
    if (after_us <= 0 || gap < (int64_t)after_us * 1000) {
        last_turn.suspect = 0;
    } else if (cpu_since_last_turn() < RINGX_BELL_WAIT_LOOP_CPU_NS) {
        watch_gap(last_turn.wall, gap, "a turn of Open MPI's progress");
        last_turn.suspect = 0;
    } else {
        last_turn.suspect = 1;
    }
}

int ringx_bell_rest(int (*round)(void))
{
    if (own_bell == NULL || !__atomic_load_n(&peers_may_sleep, __ATOMIC_RELAXED) ||
        !core_contended() || cpu_since_last_turn() >= RINGX_BELL_WAIT_LOOP_CPU_NS) {
        return 0;
    }
    return sleep_unless_work(round);
}

void ringx_bell_turn_ends(int idle)
{
    if (!__atomic_load_n(&peers_may_sleep, __ATOMIC_RELAXED)) {
        return;
    }
    last_turn.wall = now_ns();
    last_turn.idle = idle;
    last_turn.cpu_known = last_turn.suspect || core_contended();
    if (last_turn.cpu_known) {
        last_turn.cpu = thread_cpu_ns();
    }
}
