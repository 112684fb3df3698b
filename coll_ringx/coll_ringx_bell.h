/*
 * coll_ringx_bell.h - a process's doorbell, in the page before its shared
 * window: where other processes hold the cores, a wait for the ranks of
 * its node sleeps until a peer rings, instead of yielding the core
 * (coll_ringx_bell.c).
 */
#ifndef COLL_RINGX_BELL_H
#define COLL_RINGX_BELL_H

#include <stdint.h>

typedef struct ringx_bell {
    uint32_t rings;             /* a futex word: every ring bumps it */
    uint32_t asleep;            /* threads of the process about to sleep or sleeping */
} ringx_bell_t;

/* The page before the window holds its process's bell, so every peer
 * that maps the window reaches it (coll_ringx_ucx.c). */
#define RINGX_BELL_BYTES 4096

static inline ringx_bell_t *ringx_bell_of_window(void *window)
{
    return (ringx_bell_t *)((char *)window - RINGX_BELL_BYTES);
}

/* This process's bell (NULL: none, no window: waits only yield). */
void ringx_bell_open(ringx_bell_t *own);

/* Whether the processes on this node may sleep in their waits: where this
 * one yields its core and may sleep itself, so do they (they share its
 * cores and, as a rule, its settings); a peer that sleeps unrung wakes at
 * the time limit.  Decided at the first call; until then, yes. */
void ringx_bell_peers_sleep(int may);

/* After a store of a flag that peers may wait for: wakes those of the n
 * bells (NULL entries skipped) whose process sleeps. */
void ringx_bell_ring(ringx_bell_t *const *bells, int n);

/* Counts work done by this thread (a copy, a reduction, a read, a flag
 * stored): a wait that did some since its last idle round does not sleep. */
extern __thread unsigned ringx_bell_work;

static inline void ringx_bell_note_work(void)
{
    ringx_bell_work++;
}

/* Whether this thread's waits may sleep: set around the waits of a call
 * whose peers are all on this node and ring (the direct reads' and the
 * outboxes' schedules); cleared, and any announced sleep withdrawn, when
 * that call's wait ends. */
void ringx_bell_wait_begins(int may_sleep);
void ringx_bell_wait_ends(void);

/* An idle round of a wait of a process that yields its core: sleeps on the
 * bell where the wait may and other processes hold the core, else yields. */
void ringx_bell_idle(void);

/* An idle turn of Open MPI's progress over nonblocking calls whose waits
 * may sleep (MPI_Wait and the like spin on opal_progress, which yields
 * between turns that did nothing): where the thread did nothing but such
 * turns since its last one, and a turn took longer than
 * coll_ringx_sleep_after_yield_us (other processes hold the core), sleeps
 * on the bell, after one more round() (the calls' progress; returns what
 * it completed) that did no work.  Returns what the rounds completed. */
int ringx_bell_rest(int (*round)(void));

#endif /* COLL_RINGX_BELL_H */
