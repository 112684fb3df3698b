/*
 * ringx_bench_tune.c - ringx_bench --write-rules FILE: for every size of
 * the sweep, time each of ringx's algorithms (forced one after the other
 * through its coll_ringx_<coll>_algorithm control variable), validate each
 * result, and write the fastest per size as rules for this rank count, in
 * the format ringx reads through coll_ringx_rules_file.  A cluster tunes
 * ringx to itself with one run per rank count.
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

typedef struct tuned {
    int npoints;
    size_t bytes[MAX_POINTS];
    ringx_alg_t best[MAX_POINTS];
} tuned_t;

/* Seconds per call with alg forced (best of the rounds), or -1 when ringx
 * did not run alg (it cannot run on this rank count).  *valid tells
 * whether every round's result was right on every rank. */
static double time_forced(const options_t *o, const point_t *pt, buffers_t *b, const char *alg,
                          int *valid)
{
    char what[2 * RINGX_PVAR_NAME_LEN];
    unsigned long long before, after;
    double best = 1e30;

    snprintf(what, sizeof(what), "%.*s_calls", RINGX_PVAR_NAME_LEN, alg);
    fill_input(o, pt, b);
    (void)time_calls(o, pt, b, ringx_comm, 1);           /* warm-up */
    before = ringx_pvar_read_coll(coll_names[pt->coll], what);
    *valid = 1;
    for (int r = 0; r < o->rounds; r++) {
        fill_input(o, pt, b);
        double t = time_calls(o, pt, b, ringx_comm, pt->iters);
        best = t < best ? t : best;
        *valid &= check_output(o, pt, b);
    }
    after = ringx_pvar_read_coll(coll_names[pt->coll], what);
    *valid = all_true(*valid);
    return all_true(after - before == (unsigned long long)o->rounds * (unsigned long long)pt->iters)
               ? best
               : -1;
}

/* Within this fraction of the fastest, the previous size's winner keeps
 * winning: measurements this close are noise, and flapping rules are not. */
#define KEEP_PREVIOUS_WITHIN 0.05

/* Times every algorithm at one point; returns the fastest (or prev, when it
 * is as good within noise). */
static ringx_alg_t tune_point(const options_t *o, point_t *pt, buffers_t *b, ringx_alg_t prev,
                              int *failures)
{
    const char *coll = coll_names[pt->coll];
    char var[64], algs[MAX_ALGS][RINGX_PVAR_NAME_LEN], size[32];
    unsigned long long unused[MAX_ALGS];
    int nalg = ringx_pvars_algorithms(coll, algs, unused, MAX_ALGS);
    ringx_alg_t best = RINGX_ALG_RING;
    double best_t = 1e30, prev_t = 1e30, stock;

    snprintf(var, sizeof(var), "coll_ringx_%s_algorithm", coll);
    pt->iters = choose_iters(o, pt, b);
    fill_input(o, pt, b);
    stock = time_calls(o, pt, b, stock_comm, pt->iters);
    if (rank == 0) {
        printf("%-21s %10s", coll, human(pt->bytes, size, sizeof(size)));
    }
    for (int a = 0; a < nalg; a++) {
        int valid;
        double t;
        if (cvar_write_int(var, cvar_enum_value(var, algs[a]), NULL) != 0) {
            continue;
        }
        t = time_forced(o, pt, b, algs[a], &valid);
        *failures += !valid;
        if (t >= 0 && t < best_t) {
            best_t = t;
            best = ringx_alg_by_name(algs[a]);
        }
        if (t >= 0 && ringx_alg_by_name(algs[a]) == prev) {
            prev_t = t;
        }
        if (rank == 0 && t >= 0) {
            printf(" | %s %.2f%s", algs[a], t * 1e6, valid ? "" : " FAIL");
        }
    }
    cvar_write_int(var, cvar_enum_value(var, "auto"), NULL);
    if (prev_t <= best_t * (1 + KEEP_PREVIOUS_WITHIN)) {
        best = prev;
        best_t = prev_t;
    }
    if (rank == 0) {
        printf(" | stock %.2f | best %s (%.2fx stock)\n", stock * 1e6, ringx_alg_name(best),
               stock / best_t);
        fflush(stdout);
    }
    return best;
}

/* The rules of one collective: consecutive sizes with the same winner
 * become one rule, the last covering every larger size. */
static void format_rules(int coll, const tuned_t *t, FILE *out)
{
    for (int i = 0; i < t->npoints; i++) {
        if (i + 1 == t->npoints || t->best[i] != t->best[i + 1]) {
            ringx_rule_t rule = { (ringx_coll_t)coll, nprocs, nprocs,
                                  i + 1 == t->npoints ? SIZE_MAX : t->bytes[i], t->best[i] };
            char line[160];
            ringx_rule_format(&rule, line, sizeof(line));
            fputs(line, out);
        }
    }
}

/* Keeps the lines of an existing file that are not rules this run
 * replaces (those of a measured collective for exactly this rank count). */
static void copy_kept_lines(const char *path, const options_t *o, FILE *out)
{
    char line[256], this_run[32];
    FILE *in = fopen(path, "r");

    /* the header comment of an earlier run for this rank count goes too */
    snprintf(this_run, sizeof(this_run), "--write-rules, np=%d,", nprocs);
    while (in && fgets(line, sizeof(line), in)) {
        ringx_rule_t r;
        int replaced = ringx_rule_parse(line, &r) == 1 && o->colls[r.coll] &&
                       r.np_min == nprocs && r.np_max == nprocs;
        if (!replaced && !strstr(line, this_run)) {
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
    fprintf(out, "# ringx_bench --write-rules, np=%d, %s %s, %s memory, %s\n", nprocs,
            o->dtype->name, o->op->name, o->device ? "device" : "host", stamp);
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
    tuned_t results[NCOLL] = { { 0 } };
    int failures = 0;

    if (rank == 0) {
        printf("# ringx algorithms timed one by one: np=%d, %s %s, %s memory; us per call, "
               "best of %d rounds (each the mean of N calls, max over ranks)\n",
               nprocs, o->dtype->name, o->op->name, o->device ? "device" : "host", o->rounds);
    }
    for (int c = 0; c < NCOLL; c++) {
        point_t pt = first_point(o, c);
        tuned_t *t = &results[c];
        for (int more = o->colls[c] && pt.bytes <= o->max_bytes; more && t->npoints < MAX_POINTS;
             more = next_point(o, &pt)) {
            t->bytes[t->npoints] = pt.bytes;
            ringx_alg_t prev = t->npoints ? t->best[t->npoints - 1] : RINGX_ALG_AUTO;
            t->best[t->npoints] = tune_point(o, &pt, b, prev, &failures);
            t->npoints++;
        }
    }
    if (rank == 0 && failures == 0) {
        failures += write_rules(o, results);
    }
    return failures;
}
