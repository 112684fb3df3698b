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

/* Waits in Open MPI's progress loop (MPI_Wait and the like on nonblocking
 * calls spin on opal_progress, which yields after every turn without
 * events).  turn_begins and turn_ends bracket every turn of ringx's
 * progress callback (idle: the turn had no event); a turn that began long
 * after an idle one, where the thread did nothing else meanwhile, marks
 * the core contended.  rest: an idle turn over calls whose waits may all
 * sleep; where the core is contended and the thread did nothing but turns
 * since the last one (less than 20 us of CPU time), sleeps on the bell
 * after one more round() (the calls' progress: returns what it completed)
 * that did no work; returns what the rounds completed. */
void ringx_bell_turn_begins(void);
int ringx_bell_rest(int (*round)(void));
void ringx_bell_turn_ends(int idle);

#endif /* COLL_RINGX_BELL_H */
