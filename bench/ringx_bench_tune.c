/*
 * ringx_bench_tune.c - ringx_bench --write-rules FILE and --check-rules FILE.
 *
 * --write-rules: for every size of the sweep, every ringx algorithm that
 * runs on this communicator is forced in turn (its coll_ringx_<coll>_algorithm
 * control variable) in interleaved rounds, every result validated; an
 * algorithm replaces the built-in choice (what ringx runs unforced, read
 * off the pvars) only when it is faster beyond the rounds' range and by the
 * margin (rx_tune_choose), so noise keeps the built-in choice.  The fastest
 * per size becomes rules for this rank count, in the format ringx reads
 * through coll_ringx_rules_file, with the medians and ranges seen as
 * comments.  A cluster tunes ringx to itself with one run per rank count.
 *
 * --check-rules: the same measurement between the built-in choice and the
 * rules file's at every size, reporting where the rules help, hurt, or
 * are within noise.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ringx_bench.h"
#include "ringx_pvars.h"
#include "coll_ringx_decision.h"

#define MAX_ALGS 8
#define MAX_POINTS 64

/* An algorithm to time: name as the pvars and control variable spell it. */
typedef struct candidate {
    char name[RINGX_PVAR_NAME_LEN];
    int value;                  /* in the enumeration of the control variable */
    rx_spread_t time;           /* seconds per call; median -1: it did not run */
} candidate_t;

/* What one size's tuning saw, for the rules file's comments. */
typedef struct tuned_point {
    size_t bytes;
    ringx_alg_t best;
    int replaced;               /* best is not the built-in choice */
    candidate_t builtin, rival; /* rival: the fastest other algorithm (none: median -1) */
} tuned_point_t;

typedef struct tuned {
    int npoints;
    tuned_point_t p[MAX_POINTS];
} tuned_t;

static void algorithm_var(int coll, char *var, size_t len)
{
    snprintf(var, len, "coll_ringx_%s_algorithm", coll_names[coll]);
}

static int force(int coll, const char *alg)
{
    char var[64];
    algorithm_var(coll, var, sizeof(var));
    return cvar_write_int(var, cvar_enum_value(var, alg), NULL);
}

static unsigned long long calls_of(int coll, const char *alg)
{
    char what[2 * RINGX_PVAR_NAME_LEN];
    snprintf(what, sizeof(what), "%.*s_calls", RINGX_PVAR_NAME_LEN, alg);
    return ringx_pvar_read_coll(coll_names[coll], what);
}

/* The algorithm ringx runs unforced at this point (one call, read off the
 * pvars; the same on every rank); 0, or -1 when no single one ran. */
static int builtin_of(const options_t *o, const point_t *pt, buffers_t *b, char *name)
{
    char algs[MAX_ALGS][RINGX_PVAR_NAME_LEN];
    unsigned long long before[MAX_ALGS], after[MAX_ALGS];
    int n = ringx_pvars_algorithms(coll_names[pt->coll], algs, before, MAX_ALGS), moved = 0;

    force(pt->coll, "auto");
    fill_input(o, pt, b);
    (void)time_calls(o, pt, b, ringx_comm, 1);
    ringx_pvars_algorithms(coll_names[pt->coll], algs, after, MAX_ALGS);
    for (int i = 0; i < n; i++) {
        if (after[i] != before[i]) {
            snprintf(name, RINGX_PVAR_NAME_LEN, "%.*s", RINGX_PVAR_NAME_LEN - 1, algs[i]);
            moved++;
        }
    }
    return all_true(moved == 1) ? 0 : -1;
}

/* Whether ringx runs alg forced at this point (one warm-up call). */
static int runs_forced(const options_t *o, const point_t *pt, buffers_t *b, const char *alg)
{
    unsigned long long before = calls_of(pt->coll, alg);
    if (!all_true(force(pt->coll, alg) == 0)) {
        return 0;
    }
    fill_input(o, pt, b);
    (void)time_calls(o, pt, b, ringx_comm, 1);
    return all_true(calls_of(pt->coll, alg) - before == 1);
}

/*
 * Times the n candidates in interleaved rounds (a round times each once),
 * so that the machine's noise hits all alike; and, when stock is not
 * NULL, the stock collective in every round too.  Every result is
 * validated and every candidate's calls counted by its own pvar; returns
 * the number of failures.
 */
static int time_interleaved(const options_t *o, const point_t *pt, buffers_t *b,
                            candidate_t *cand, int n, rx_spread_t *stock)
{
    double t[MAX_ALGS + 1][RX_MAX_ROUNDS];
    unsigned long long before[MAX_ALGS];
    int valid = 1;

    for (int i = 0; i < n; i++) {
        before[i] = calls_of(pt->coll, cand[i].name);
    }
    for (int r = 0; r < o->rounds; r++) {
        for (int i = 0; i < n; i++) {
            force(pt->coll, cand[i].name);
            fill_input(o, pt, b);
            t[i][r] = time_calls(o, pt, b, ringx_comm, pt->iters);
            valid &= check_output(o, pt, b);
        }
        if (stock) {
            fill_input(o, pt, b);
            t[n][r] = time_calls(o, pt, b, stock_comm, pt->iters);
        }
    }
    force(pt->coll, "auto");
    for (int i = 0; i < n; i++) {
        cand[i].time = rx_spread_of(t[i], o->rounds);
        valid &= calls_of(pt->coll, cand[i].name) - before[i] ==
                 (unsigned long long)o->rounds * (unsigned long long)pt->iters;
    }
    if (stock) {
        *stock = rx_spread_of(t[n], o->rounds);
    }
    return !all_true(valid);
}

static void print_candidate(const candidate_t *c, const char *mark)
{
    printf(" | %s%s %.2f [%.2f-%.2f]", c->name, mark, c->time.median * 1e6, c->time.min * 1e6,
           c->time.max * 1e6);
}

/* The candidates at a point: every algorithm that runs here, forced.
 * *builtin: the index of the built-in choice among them. */
static int candidates_of(const options_t *o, const point_t *pt, buffers_t *b, candidate_t *cand,
                         int *builtin)
{
    char algs[MAX_ALGS][RINGX_PVAR_NAME_LEN], name[RINGX_PVAR_NAME_LEN];
    unsigned long long unused[MAX_ALGS];
    int nalg = ringx_pvars_algorithms(coll_names[pt->coll], algs, unused, MAX_ALGS), n = 0;

    *builtin = -1;
    if (builtin_of(o, pt, b, name) != 0) {
        return -1;
    }
    for (int a = 0; a < nalg; a++) {
        if (runs_forced(o, pt, b, algs[a])) {
            snprintf(cand[n].name, sizeof(cand[n].name), "%.*s", RINGX_PVAR_NAME_LEN - 1, algs[a]);
            *builtin = strcmp(algs[a], name) == 0 ? n : *builtin;
            n++;
        }
    }
    force(pt->coll, "auto");
    return *builtin >= 0 ? n : -1;
}

/* A candidate that beat the built-in choice beyond the range is timed
 * against it once more, on fresh rounds, and must win again: one set of
 * rounds lets an equal candidate win by chance (all of its rounds below
 * all of the built-in's) about once in 50 decisions on a noisy machine.
 * The fresh times replace the first ones. */
static int confirmed(const options_t *o, const point_t *pt, buffers_t *b, candidate_t *builtin,
                     candidate_t *cand, int *failures)
{
    candidate_t pair[2] = { *builtin, *cand };
    *failures += time_interleaved(o, pt, b, pair, 2, NULL);
    *builtin = pair[0];
    *cand = pair[1];
    return rx_clearly_faster(&cand->time, &builtin->time, o->margin);
}

/* Tunes one point; *failures counts wrong or uncounted results. */
static tuned_point_t tune_point(const options_t *o, point_t *pt, buffers_t *b, int *failures)
{
    candidate_t cand[MAX_ALGS];
    char size[32];
    int builtin, n, best, rival = -1;
    rx_spread_t stock, times[MAX_ALGS];
    tuned_point_t result = { pt->bytes, RINGX_ALG_AUTO, 0, { "", 0, { -1, -1, -1 } },
                             { "", 0, { -1, -1, -1 } } };

    pt->iters = choose_iters(o, pt, b);
    if ((n = candidates_of(o, pt, b, cand, &builtin)) < 0) {
        (*failures)++;
        if (rank == 0) {
            printf("%-21s FAIL: could not tell which algorithm ringx runs unforced\n",
                   coll_names[pt->coll]);
        }
        return result;
    }
    *failures += time_interleaved(o, pt, b, cand, n, &stock);
    for (int i = 0; i < n; i++) {
        times[i] = cand[i].time;
    }
    best = rx_tune_choose(times, n, builtin, o->margin);
    if (best != builtin && !confirmed(o, pt, b, &cand[builtin], &cand[best], failures)) {
        best = builtin;
    }
    result.best = ringx_alg_by_name(cand[best].name);
    result.replaced = best != builtin;
    result.builtin = cand[builtin];
    for (int i = 0; i < n; i++) {
        if (i != builtin && (rival < 0 || cand[i].time.median < cand[rival].time.median)) {
            rival = i;
        }
    }
    rival = best != builtin ? best : rival;
    if (rival >= 0) {
        result.rival = cand[rival];
    }
    if (rank == 0) {
        printf("%-21s %10s", coll_names[pt->coll], human(pt->bytes, size, sizeof(size)));
        for (int i = 0; i < n; i++) {
            print_candidate(&cand[i], i == builtin ? "*" : "");
        }
        printf(" | stock %.2f | %s %s (%.2fx stock)\n", stock.median * 1e6,
               best == builtin ? "keep built-in" : "choose", cand[best].name,
               stock.median / cand[best].time.median);
        fflush(stdout);
    }
    return result;
}

/* The rules of one collective: consecutive sizes with the same winner
 * become one rule, the last covering every larger size.  Each size's
 * measurements go before its rule as a comment. */
static void format_rules(int coll, const tuned_t *t, FILE *out)
{
    for (int i = 0; i < t->npoints; i++) {
        const tuned_point_t *p = &t->p[i];
        char size[32];
        fprintf(out, "# np=%d %s %s: built-in %s %.2f [%.2f-%.2f]", nprocs, coll_names[coll],
                human(p->bytes, size, sizeof(size)), p->builtin.name, p->builtin.time.median * 1e6,
                p->builtin.time.min * 1e6, p->builtin.time.max * 1e6);
        if (p->rival.time.median >= 0) {
            fprintf(out, ", %s %s %.2f [%.2f-%.2f]", p->replaced ? "chosen" : "fastest other",
                    p->rival.name, p->rival.time.median * 1e6, p->rival.time.min * 1e6,
                    p->rival.time.max * 1e6);
        }
        fprintf(out, ": %s\n", p->replaced ? "replaced" : "kept");
        if (i + 1 == t->npoints || t->p[i].best != t->p[i + 1].best) {
            ringx_rule_t rule = { (ringx_coll_t)coll, nprocs, nprocs,
                                  i + 1 == t->npoints ? SIZE_MAX : p->bytes, p->best };
            char line[160];
            ringx_rule_format(&rule, line, sizeof(line));
            fputs(line, out);
        }
    }
}

/* Whether line is one this run replaces: a rule of a measured collective
 * for exactly this rank count, a measurement comment of one, or the
 * header of an earlier run for this rank count. */
static int replaced_line(const char *line, const options_t *o)
{
    char header[32], comment[64];
    ringx_rule_t r;

    snprintf(header, sizeof(header), "--write-rules, np=%d,", nprocs);
    snprintf(comment, sizeof(comment), "# np=%d: ", nprocs);
    if (strstr(line, header) || strncmp(line, comment, strlen(comment)) == 0) {
        return 1;
    }
    if (ringx_rule_parse(line, &r) == 1) {
        return o->colls[r.coll] && r.np_min == nprocs && r.np_max == nprocs;
    }
    for (int c = 0; c < NCOLL; c++) {
        snprintf(comment, sizeof(comment), "# np=%d %s ", nprocs, coll_names[c]);
        if (o->colls[c] && strncmp(line, comment, strlen(comment)) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Keeps the lines of an existing file that this run does not replace. */
static void copy_kept_lines(const char *path, const options_t *o, FILE *out)
{
    char line[4096];
    FILE *in = fopen(path, "r");

    while (in && fgets(line, sizeof(line), in)) {
        if (!replaced_line(line, o)) {
            fputs(line, out);
        }
    }
    if (in) {
        fclose(in);
    }
}

static int write_rules(const options_t *o, const tuned_t *t)
{
    char tmp[1024], stamp[64];
    time_t now = time(NULL);
    FILE *out;

    snprintf(tmp, sizeof(tmp), "%s.tmp", o->rules);
    if ((out = fopen(tmp, "w")) == NULL) {
        perror(tmp);
        return 1;
    }
    copy_kept_lines(o->rules, o, out);
    strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M", localtime(&now));
    fprintf(out,
            "# ringx_bench --write-rules, np=%d, %s %s, %s memory, timing %s, %d rounds, "
            "load %d, margin %.2f, %s\n"
            "# np=%d: an algorithm replaced the built-in choice only where its slowest round "
            "beat the built-in's fastest\n"
            "# np=%d: (twice, on fresh rounds) and its median was more than %.0f%% faster; "
            "times: us per call, median [min-max]\n",
            nprocs, o->dtype->name, o->op->name, o->device ? "device" : "host",
            timing_names[o->timing], o->rounds, o->load, o->margin, stamp, nprocs, nprocs,
            o->margin * 100);
    for (int c = 0; c < NCOLL; c++) {
        if (o->colls[c]) {
            format_rules(c, &t[c], out);
        }
    }
    fclose(out);
    if (rename(tmp, o->rules) != 0) {
        perror(o->rules);
        return 1;
    }
    printf("# rules for np=%d written to %s (use --mca coll_ringx_rules_file %s)\n", nprocs,
           o->rules, o->rules);
    return 0;
}

int tune(const options_t *o, buffers_t *b)
{
    static tuned_t results[NCOLL];
    int failures = 0;

    for (int c = 0; c < NCOLL; c++) {
        point_t pt = first_point(o, c);
        tuned_t *t = &results[c];
        for (int more = o->colls[c] && pt.bytes <= o->max_bytes; more && t->npoints < MAX_POINTS;
             more = next_point(o, &pt)) {
            t->p[t->npoints++] = tune_point(o, &pt, b, &failures);
        }
    }
    if (rank == 0 && failures == 0) {
        failures += write_rules(o, results);
    }
    return failures;
}

/* ------------------------------------------------------ --check-rules */

enum { VERDICT_HELPS, VERDICT_NOISE, VERDICT_HURTS, VERDICT_SAME, VERDICT_NO_RULE, NVERDICTS };
static const char *const verdict_names[NVERDICTS] = {
    "helps", "within noise", "HURTS", "same algorithm as built-in", "no rule"
};

/* Whether ringx itself reads a rules file: then its unforced choice is
 * not the built-in one. */
static int component_reads_rules(void)
{
    char value[1024] = "";
    int index, count;
    MPI_T_cvar_handle h;

    if (MPI_T_cvar_get_index("coll_ringx_rules_file", &index) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS) {
        return 0;
    }
    if (MPI_T_cvar_read(h, value) != MPI_SUCCESS) {
        value[0] = '\0';
    }
    MPI_T_cvar_handle_free(&h);
    return value[0] != '\0';
}

/* The verdict at one point; its line on rank 0. */
static int check_point(const options_t *o, point_t *pt, buffers_t *b, int *failures)
{
    ringx_decision_t d = ringx_decide((ringx_coll_t)pt->coll, RINGX_ALG_AUTO, pt->bytes, nprocs, 1);
    candidate_t cand[2] = { { "", 0, { -1, -1, -1 } }, { "", 0, { -1, -1, -1 } } };
    int verdict = VERDICT_SAME;
    char size[32];

    pt->iters = choose_iters(o, pt, b);
    if (builtin_of(o, pt, b, cand[0].name) != 0) {
        (*failures)++;
        return VERDICT_NOISE;
    }
    snprintf(cand[1].name, sizeof(cand[1].name), "%s", ringx_alg_name(d.alg));
    if (strcmp(d.why, "rules file") != 0) {
        verdict = VERDICT_NO_RULE;
    } else if (strcmp(cand[0].name, cand[1].name) != 0) {
        if (!runs_forced(o, pt, b, cand[1].name)) {
            (*failures)++;
            return VERDICT_NOISE;
        }
        *failures += time_interleaved(o, pt, b, cand, 2, NULL);
        verdict = rx_clearly_faster(&cand[1].time, &cand[0].time, o->margin)   ? VERDICT_HELPS
                  : rx_clearly_faster(&cand[0].time, &cand[1].time, o->margin) ? VERDICT_HURTS
                                                                               : VERDICT_NOISE;
    }
    if (rank == 0) {
        printf("%-21s %10s | built-in %s", coll_names[pt->coll],
               human(pt->bytes, size, sizeof(size)), cand[0].name);
        if (cand[0].time.median >= 0) {
            printf(" %.2f [%.2f-%.2f] | rules %s %.2f [%.2f-%.2f] (%.2fx)", cand[0].time.median * 1e6,
                   cand[0].time.min * 1e6, cand[0].time.max * 1e6, cand[1].name,
                   cand[1].time.median * 1e6, cand[1].time.min * 1e6, cand[1].time.max * 1e6,
                   cand[0].time.median / cand[1].time.median);
        } else if (verdict == VERDICT_SAME) {
            printf(" | rules %s", cand[1].name);
        }
        printf(" | %s\n", verdict_names[verdict]);
        fflush(stdout);
    }
    return verdict;
}

int check_rules(const options_t *o, buffers_t *b)
{
    char err[256];
    int failures = 0, counts[NVERDICTS] = { 0 };

    if (!all_true(!component_reads_rules())) {
        if (rank == 0) {
            fprintf(stderr, "ringx_bench --check-rules: run it without coll_ringx_rules_file, "
                            "so that ringx's unforced choice is the built-in one\n");
        }
        return 1;
    }
    if (!all_true(ringx_rules_load(o->check_rules, err, sizeof(err)) >= 0)) {
        if (rank == 0) {
            fprintf(stderr, "ringx_bench --check-rules: %s\n", err);
        }
        return 1;
    }
    for (int c = 0; c < NCOLL; c++) {
        point_t pt = first_point(o, c);
        for (int more = o->colls[c] && pt.bytes <= o->max_bytes; more; more = next_point(o, &pt)) {
            counts[check_point(o, &pt, b, &failures)]++;
        }
    }
    if (rank == 0) {
        printf("# check of %s at np=%d (margin %.2f, %d rounds):", o->check_rules, nprocs,
               o->margin, o->rounds);
        for (int v = 0; v < NVERDICTS; v++) {
            printf(" %s %d%s", verdict_names[v], counts[v], v + 1 < NVERDICTS ? "," : "\n");
        }
    }
    return failures;
}
