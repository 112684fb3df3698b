/*
 * coll_ringx_decision.c - the choice of algorithm per call: forced by an
 * MCA variable, or from rules measured on the machine (a rules file), or
 * from the defaults (an MCA list per collective, built in otherwise).
 */
#include "coll_ringx_decision.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *const coll_names[RINGX_COLL_COUNT] = {
    "allreduce", "allgather", "reduce_scatter_block"
};

static const char *const coll_mpi_names[RINGX_COLL_COUNT] = {
    "MPI_Allreduce", "MPI_Allgather", "MPI_Reduce_scatter_block"
};

static const char *const alg_names[RINGX_ALG_COUNT] = {
    "auto", "ring", "recursive_doubling", "rabenseifner", "bruck", "recursive_halving",
    "neighbor_exchange", "direct_read", "hierarchical"
};

static const char *const fallback_names[RINGX_FALLBACK_COUNT] = {
    "disabled", "datatype", "op", "memory", "transport", "communicator"
};

/* Which algorithms each collective has (bit per ringx_alg_t). */
static const unsigned algs_of[RINGX_COLL_COUNT] = {
    [RINGX_COLL_ALLREDUCE] = 1u << RINGX_ALG_RING | 1u << RINGX_ALG_RECURSIVE_DOUBLING |
                             1u << RINGX_ALG_RABENSEIFNER | 1u << RINGX_ALG_DIRECT_READ |
                             1u << RINGX_ALG_HIERARCHICAL,
    [RINGX_COLL_ALLGATHER] = 1u << RINGX_ALG_RING | 1u << RINGX_ALG_RECURSIVE_DOUBLING |
                             1u << RINGX_ALG_BRUCK | 1u << RINGX_ALG_NEIGHBOR_EXCHANGE |
                             1u << RINGX_ALG_DIRECT_READ | 1u << RINGX_ALG_HIERARCHICAL,
    [RINGX_COLL_REDUCE_SCATTER_BLOCK] = 1u << RINGX_ALG_RING | 1u << RINGX_ALG_RECURSIVE_HALVING |
                                        1u << RINGX_ALG_DIRECT_READ | 1u << RINGX_ALG_HIERARCHICAL,
};

/*
 * Built-in defaults, from ringx_bench at np 2..8 on the development
 * machine (2 cores, host memory, float sum; README).  "a|b": a where it
 * fits the rank count and the communicator, else b (below).
 *
 * On one node (the ranks share memory), direct reads at every size: small
 * buffers through the outboxes (coll_ringx_mailbox.c: each rank copies
 * its data into its own shared memory once and every peer copies or
 * reduces it from there, one synchronisation per call, none at the end),
 * larger ones allgather and reduce_scatter_block as single copies out of
 * the peers' buffers, allreduce in outbox-sized pieces.  Against the
 * message-based defaults below, in one session: allgather np 8 128 KiB
 * 4.2x the stock collective where direct single copies gave 0.92x and
 * recursive doubling less; allreduce np 8 16-64 KiB 3.9-5.1x where
 * Rabenseifner gave 1.2-2.5x, 16 MiB 1.96x against 1.48x;
 * reduce_scatter_block np 8 up to 64 KiB 2.5-4.6x against 1.1-2.1x.
 *
 * Elsewhere: recursive doubling / halving while latency dominates (up to
 * 8-16 KiB), Rabenseifner for medium allreduce, the pipelined ring beyond.
 * Allreduce above 1 MiB: Rabenseifner on powers of two (np 4 and 8,
 * 1-16 MiB: 1.13-1.43x the stock collective where the ring gave
 * 1.02-1.26x), the ring on other counts (np 6: 1.4-1.7x against 1.2-1.4x).
 * Allgather above 16 KiB: recursive doubling on powers of two (np 8,
 * 64 KiB - 16 MiB: 1.00-1.04x the stock collective where neighbour
 * exchange gave 0.90-0.97x; np 4, 32 KiB - 1 MiB: 1.4-1.8x against
 * 0.95-1.02x), neighbour exchange on other even counts, the ring on odd
 * ones.  Reduce_scatter_block from 16 KiB to 2 MiB: recursive halving on
 * powers of two (np 4, 64-128 KiB: 1.6-1.7x where the ring gave
 * 1.1-1.2x; the ring ahead from 4 MiB), the ring on other counts (np 3
 * and 6, 384 KiB - 3 MiB: 1.2-1.8 times as fast as folded halving).  These
 * were measured with the ranks on one node and direct reads off.
 *
 * Across nodes with as many ranks (2 or more) on each, the hierarchical
 * algorithms at every size: through one leader per node for small calls,
 * rings above (coll_ringx_hierarchical.c).  On test hosts of this project (network
 * namespaces, links shaped to 1 Gbit/s by tbf, UCX over TCP between
 * hosts), 2 hosts x 2 ranks, against the stock collectives: allreduce
 * 16 KiB - 1 MiB 0.9-1.3x where Rabenseifner gave 0.5-1.2x (its first
 * halving step crosses the nodes with half the buffer), 2-8 MiB
 * 1.2-1.5x against 0.6-0.75x; allgather 16 KiB - 8 MiB 1.4-3.4x against
 * recursive doubling's 0.9-1.5x; reduce_scatter_block 64 KiB - 8 MiB
 * 2.1-5.5x against recursive halving and the ring's 1.0-3.6x.  At 3 hosts
 * x 2 ranks: allreduce 64 KiB - 4 MiB 1.05-1.8x against 0.7-1.5x,
 * allgather from 64 KiB 1.9-2.3x against 1.1-2.4x, reduce_scatter_block
 * from 64 KiB 1.2-5.5x against 0.9-4.7x.  Below those sizes the flat
 * log(p) algorithms were as fast or faster (allreduce 32 B - 1 KiB at 2
 * x 2: 1.4-1.5x against 0.9-1.0x, before the leaders).  Timed one by
 * one (ringx_bench --write-rules, 3 rounds), 2 hosts x 2 ranks: allreduce
 * 8 B - 8 KiB 22-59 us hierarchical (leaders) against 24-93 us recursive
 * doubling, allgather 22-32 us against 24-64, reduce_scatter_block 23-33
 * us against 26-60 us recursive halving; 3 hosts x 2 ranks: allreduce
 * 30-50 us against 38-67 up to 4 KiB, allgather 34-52 us against Bruck's
 * 52-117 (neighbour exchange, 33-52 us, does not run on odd node counts),
 * reduce_scatter_block 33-55 us against 35-121.
 *
 * One run per algorithm, forced through the MCA variables.  Machines
 * differ: a rules file measured on the machine replaces these.
 */
static const char *const builtin_defaults[RINGX_COLL_COUNT] = {
    [RINGX_COLL_ALLREDUCE] = "8K:direct_read|hierarchical|recursive_doubling,"
                             "1M:direct_read|hierarchical|rabenseifner,"
                             "direct_read|hierarchical|rabenseifner|ring",
    [RINGX_COLL_ALLGATHER] = "16K:direct_read|hierarchical|recursive_doubling,"
                             "direct_read|hierarchical|recursive_doubling|neighbor_exchange",
    [RINGX_COLL_REDUCE_SCATTER_BLOCK] = "16K:direct_read|hierarchical|recursive_halving,"
                                        "2M:direct_read|hierarchical|recursive_halving|ring,"
                                        "direct_read|hierarchical|ring",
};

#define MAX_DEFAULTS 8
#define MAX_ALTERNATIVES 4
#define MAX_FILE_RULES 256

/* Buffers up to max_bytes: the first of algs that fits the rank count
 * (ringx_alg_fits), else the last. */
typedef struct default_entry {
    size_t max_bytes;
    ringx_alg_t algs[MAX_ALTERNATIVES];
    int nalgs;
} default_entry_t;

static struct {
    int initialised;
    default_entry_t defaults[RINGX_COLL_COUNT][MAX_DEFAULTS];
    int ndefaults[RINGX_COLL_COUNT];
    ringx_rule_t file_rules[MAX_FILE_RULES];
    int nfile_rules;
} table;

/* ---------------------------------------------------------------- names */

const char *ringx_coll_name(ringx_coll_t coll)
{
    return (unsigned)coll < RINGX_COLL_COUNT ? coll_names[coll] : "?";
}

const char *ringx_coll_mpi_name(ringx_coll_t coll)
{
    return (unsigned)coll < RINGX_COLL_COUNT ? coll_mpi_names[coll] : "?";
}

const char *ringx_alg_name(ringx_alg_t alg)
{
    return (unsigned)alg < RINGX_ALG_COUNT ? alg_names[alg] : "?";
}

const char *ringx_fallback_name(ringx_fallback_t reason)
{
    return (unsigned)reason < RINGX_FALLBACK_COUNT ? fallback_names[reason] : "?";
}

ringx_coll_t ringx_coll_by_name(const char *name)
{
    for (int c = 0; c < RINGX_COLL_COUNT; c++) {
        if (strcmp(name, coll_names[c]) == 0) {
            return (ringx_coll_t)c;
        }
    }
    return RINGX_COLL_COUNT;
}

ringx_alg_t ringx_alg_by_name(const char *name)
{
    for (int a = 0; a < RINGX_ALG_COUNT; a++) {
        if (strcmp(name, alg_names[a]) == 0) {
            return (ringx_alg_t)a;
        }
    }
    return RINGX_ALG_COUNT;
}

int ringx_alg_valid(ringx_coll_t coll, ringx_alg_t alg)
{
    if ((unsigned)coll >= RINGX_COLL_COUNT || (unsigned)alg >= RINGX_ALG_COUNT) {
        return 0;
    }
    return alg == RINGX_ALG_AUTO || (algs_of[coll] >> alg & 1u);
}

int ringx_alg_runs_on(ringx_coll_t coll, ringx_alg_t alg, int comm_size, int layout)
{
    int pof2 = comm_size > 0 && (comm_size & (comm_size - 1)) == 0;
    if (!ringx_alg_valid(coll, alg) || alg == RINGX_ALG_AUTO) {
        return 0;
    }
    if (alg == RINGX_ALG_DIRECT_READ) {
        return layout == RINGX_LAYOUT_ONE_NODE;
    }
    if (alg == RINGX_ALG_HIERARCHICAL) {
        return layout == RINGX_LAYOUT_NODES;
    }
    if (alg == RINGX_ALG_NEIGHBOR_EXCHANGE) {
        return comm_size % 2 == 0 && comm_size <= RINGX_NEIGHBOR_EXCHANGE_MAX_RANKS;
    }
    return !(coll == RINGX_COLL_ALLGATHER && alg == RINGX_ALG_RECURSIVE_DOUBLING) || pof2;
}

int ringx_alg_fits(ringx_coll_t coll, ringx_alg_t alg, int comm_size, int layout)
{
    int pof2 = comm_size > 0 && (comm_size & (comm_size - 1)) == 0;
    int folds = alg == RINGX_ALG_RECURSIVE_DOUBLING || alg == RINGX_ALG_RABENSEIFNER ||
                alg == RINGX_ALG_RECURSIVE_HALVING;
    return ringx_alg_runs_on(coll, alg, comm_size, layout) && (!folds || pof2);
}

/* ---------------------------------------------------------------- parsing */

int ringx_parse_bytes(const char *text, size_t *bytes)
{
    char *end;
    unsigned long long v;

    while (isspace((unsigned char)*text)) {
        text++;
    }
    if (strcmp(text, "inf") == 0) {
        *bytes = SIZE_MAX;
        return 0;
    }
    if (!isdigit((unsigned char)*text)) {
        return -1;
    }
    v = strtoull(text, &end, 10);
    switch (toupper((unsigned char)*end)) {
    case 'K': v <<= 10; end++; break;
    case 'M': v <<= 20; end++; break;
    case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end != '\0') {
        return -1;
    }
    *bytes = (size_t)v;
    return 0;
}

int ringx_rule_parse(const char *line, ringx_rule_t *rule)
{
    char coll[64], alg[64], max[32], extra[2];
    const char *p = line;
    int n;

    while (isspace((unsigned char)*p)) {
        p++;
    }
    if (*p == '\0' || *p == '#') {
        return 0;
    }
    n = sscanf(p, "%63s %d %d %31s %63s %1s", coll, &rule->np_min, &rule->np_max, max, alg,
               extra);
    if (n != 5 && !(n == 6 && extra[0] == '#')) {
        return -1;
    }
    rule->coll = ringx_coll_by_name(coll);
    rule->alg = ringx_alg_by_name(alg);
    if (rule->coll == RINGX_COLL_COUNT || !ringx_alg_valid(rule->coll, rule->alg) ||
        rule->alg == RINGX_ALG_AUTO || rule->np_min > rule->np_max ||
        ringx_parse_bytes(max, &rule->max_bytes) != 0) {
        return -1;
    }
    return 1;
}

int ringx_rule_format(const ringx_rule_t *rule, char *buf, size_t len)
{
    char max[32];
    if (rule->max_bytes == SIZE_MAX) {
        snprintf(max, sizeof(max), "inf");
    } else {
        snprintf(max, sizeof(max), "%zu", rule->max_bytes);
    }
    return snprintf(buf, len, "%s %d %d %s %s\n", ringx_coll_name(rule->coll), rule->np_min,
                    rule->np_max, max, ringx_alg_name(rule->alg));
}

/* ----------------------------------------------------------------- tables */

/* "a|b|c" -> the algorithms of one entry. */
static int parse_alternatives(ringx_coll_t coll, char *text, default_entry_t *e)
{
    char *save = NULL;
    size_t len = strlen(text);

    e->nalgs = 0;
    if (len == 0 || text[0] == '|' || text[len - 1] == '|' || strstr(text, "||")) {
        return -1;      /* an empty alternative */
    }
    for (char *name = strtok_r(text, "|", &save); name; name = strtok_r(NULL, "|", &save)) {
        ringx_alg_t alg = ringx_alg_by_name(name);
        if (e->nalgs == MAX_ALTERNATIVES || !ringx_alg_valid(coll, alg) ||
            alg == RINGX_ALG_AUTO) {
            return -1;
        }
        e->algs[e->nalgs++] = alg;
    }
    return e->nalgs > 0 ? 0 : -1;
}

static int parse_defaults(ringx_coll_t coll, const char *list, default_entry_t *out)
{
    char copy[512], *save = NULL;
    int n = 0;

    if (strlen(list) >= sizeof(copy)) {
        return -1;
    }
    strcpy(copy, list);
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':');
        default_entry_t e = { .max_bytes = SIZE_MAX };
        if (n == MAX_DEFAULTS) {
            return -1;
        }
        if (colon) {
            *colon = '\0';
            if (ringx_parse_bytes(item, &e.max_bytes) != 0) {
                return -1;
            }
            item = colon + 1;
        }
        if (parse_alternatives(coll, item, &e) != 0 ||
            (n > 0 && e.max_bytes <= out[n - 1].max_bytes)) {
            return -1;
        }
        out[n++] = e;
    }
    /* the last entry must cover every size */
    return n > 0 && out[n - 1].max_bytes == SIZE_MAX ? n : -1;
}

int ringx_defaults_set(ringx_coll_t coll, const char *list)
{
    default_entry_t parsed[MAX_DEFAULTS];
    int n;

    if ((unsigned)coll >= RINGX_COLL_COUNT || (n = parse_defaults(coll, list, parsed)) < 0) {
        return -1;
    }
    memcpy(table.defaults[coll], parsed, sizeof(parsed[0]) * (size_t)n);
    table.ndefaults[coll] = n;
    return 0;
}

const char *ringx_defaults_builtin(ringx_coll_t coll)
{
    return (unsigned)coll < RINGX_COLL_COUNT ? builtin_defaults[coll] : "";
}

static void ensure_initialised(void)
{
    if (!table.initialised) {
        for (int c = 0; c < RINGX_COLL_COUNT; c++) {
            if (table.ndefaults[c] == 0) {
                (void)ringx_defaults_set((ringx_coll_t)c, builtin_defaults[c]);
            }
        }
        table.initialised = 1;
    }
}

void ringx_rules_clear(void)
{
    table.nfile_rules = 0;
}

/* Reads f up to the end of the line fgets stopped inside; whether there
 * was more of it (a comment longer than the buffer is still a comment). */
static int skip_rest_of_line(FILE *f)
{
    int ch, more = 0;
    while ((ch = getc(f)) != EOF && ch != '\n') {
        more = 1;
    }
    return more;
}

int ringx_rules_load(const char *path, char *err, size_t errlen)
{
    ringx_rule_t rules[MAX_FILE_RULES];
    char line[256];
    int n = 0, lineno = 0, rc = 0;
    FILE *f = fopen(path, "r");

    if (f == NULL) {
        snprintf(err, errlen, "cannot open %s", path);
        return -1;
    }
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        int got = ringx_rule_parse(line, &rules[n]);
        lineno++;
        if (strchr(line, '\n') == NULL && skip_rest_of_line(f) && got != 0) {
            got = -1;           /* a rule longer than the buffer: not one we read whole */
        }
        if (got < 0 || (got == 1 && n == MAX_FILE_RULES)) {
            snprintf(err, errlen, "%s:%d: not a rule (<collective> <np_min> <np_max> "
                                  "<max_bytes> <algorithm>)", path, lineno);
            rc = -1;
        }
        n += got == 1 && rc == 0;
    }
    fclose(f);
    if (rc == 0) {
        memcpy(table.file_rules, rules, sizeof(rules[0]) * (size_t)n);
        table.nfile_rules = n;
    }
    return rc == 0 ? n : -1;
}

/* --------------------------------------------------------------- choice */

/* What runs instead of an algorithm that cannot run here. */
static ringx_alg_t substitute(ringx_coll_t coll, ringx_alg_t alg, int comm_size,
                              int layout)
{
    if (ringx_alg_runs_on(coll, alg, comm_size, layout)) {
        return alg;
    }
    /* Bruck for the latency-bound allgather, the ring for the rest
     * (direct reads included: they serve large buffers). */
    return coll == RINGX_COLL_ALLGATHER && alg == RINGX_ALG_RECURSIVE_DOUBLING ? RINGX_ALG_BRUCK
                                                                              : RINGX_ALG_RING;
}

static ringx_alg_t alternative(const default_entry_t *e, ringx_coll_t coll, int comm_size,
                               int layout)
{
    for (int i = 0; i + 1 < e->nalgs; i++) {
        if (ringx_alg_fits(coll, e->algs[i], comm_size, layout)) {
            return e->algs[i];
        }
    }
    return e->algs[e->nalgs - 1];
}

/* The smallest-max_bytes file rule of coll for comm_size covering bytes. */
static const ringx_rule_t *file_rule(ringx_coll_t coll, size_t bytes, int comm_size)
{
    const ringx_rule_t *best = NULL;
    for (int i = 0; i < table.nfile_rules; i++) {
        const ringx_rule_t *r = &table.file_rules[i];
        if (r->coll == coll && r->np_min <= comm_size && comm_size <= r->np_max &&
            bytes <= r->max_bytes && (!best || r->max_bytes < best->max_bytes)) {
            best = r;
        }
    }
    return best;
}

ringx_decision_t ringx_decide(ringx_coll_t coll, ringx_alg_t forced, size_t bytes,
                              int comm_size, int layout)
{
    ringx_decision_t d = { RINGX_ALG_RING, "default" };
    const ringx_rule_t *rule;

    ensure_initialised();
    if (forced != RINGX_ALG_AUTO && ringx_alg_valid(coll, forced)) {
        d.alg = substitute(coll, forced, comm_size, layout);
        d.why = d.alg == forced ? "forced by MCA variable"
                                : "forced algorithm cannot run on this communicator";
        return d;
    }
    if ((rule = file_rule(coll, bytes, comm_size)) != NULL) {
        d.alg = substitute(coll, rule->alg, comm_size, layout);
        d.why = "rules file";
        return d;
    }
    for (int i = 0; i < table.ndefaults[coll]; i++) {
        if (bytes <= table.defaults[coll][i].max_bytes) {
            d.alg = substitute(coll,
                               alternative(&table.defaults[coll][i], coll, comm_size,
                                           layout),
                               comm_size, layout);
            d.why = i + 1 < table.ndefaults[coll] ? "default: below the size threshold"
                                                  : "default: above every size threshold";
            break;
        }
    }
    return d;
}
