/*
 * ringx_bench_report.c - what the comparison prints and writes: the table
 * (rank 0's stdout), the CSV and the JSON file.  Every figure is the median
 * of the interleaved rounds with its range; the CSV keeps its earlier
 * columns in place (the median where it had the best round) and appends
 * the ranges.
 */
#include <string.h>
#include <time.h>

#include "ringx_bench.h"
#include "ringx_pvars.h"

static FILE *csv, *json;
static int json_records, noisy_points, reported_points;

const char *human(size_t bytes, char *buf, size_t len)
{
    const char *units[] = { "B", "KiB", "MiB", "GiB" };
    int u = 0;
    /* whole units only, so that sizes such as 2^31+2 bytes print exactly */
    while (bytes >= 1024 && u < 3 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, len, "%zu %s", bytes, units[u]);
    return buf;
}

double bus_factor(int coll)
{
    double p = nprocs;
    return coll == COLL_ALLREDUCE ? 2 * (p - 1) / p : (p - 1) / p;
}

int is_noisy(const options_t *o, const rx_spread_t *s)
{
    return rx_spread_relative(s) > o->noise;
}

static const char *mem_name(const options_t *o)
{
    return o->device ? "cuda" : "host";
}

/* The stock side is whatever Open MPI selects without ringx: say so where
 * that is coll/han rather than tuned (coll_han_priority raised). */
static void print_stock_side(void)
{
    int han, tuned;

    if (cvar_read_int("coll_han_priority", &han) == 0 &&
        cvar_read_int("coll_tuned_priority", &tuned) == 0 && han > tuned) {
        printf("# stock side: coll/han (coll_han_priority %d, above tuned's %d) where it serves "
               "the collective, tuned where it does not\n", han, tuned);
    }
}

static void print_header(const options_t *o, const buffers_t *b)
{
    printf("# ringx vs stock Open MPI collectives: np=%d (%s), %s %s, %s, %s, %s calls\n",
           nprocs, node_layout_text(), o->dtype->name, o->op->name, memory_label(o, b),
           o->in_place ? "in place" : "out of place", form_names[o->form]);
    print_stock_side();
    if (o->load > 0) {
        printf("# with %d busy process%s per node competing for the cores\n", o->load,
               o->load > 1 ? "es" : "");
    }
    if (o->overlap) {
        printf("# overlap: each call also timed with computation as long as the call between its "
               "start and its wait (MPI_Test every 50 us); overlap = 1 - (total - compute) / call\n");
    }
    printf("# timing: %s; time per call = median of %d interleaved rounds, each the mean of N "
           "calls, max over ranks; range = (max - min) / median of the rounds\n",
           o->timing == TIMING_SYNC ? "synchronised (a barrier before every call, as OSU and "
                                      "IMB)"
                                    : "back to back (no barrier between calls)",
           o->rounds);
    printf("# busbw as in nccl-tests; ratio = stock time / ringx time (= ringx busbw / stock "
           "busbw), median and min-max of the rounds' ratios\n");
    printf("%-21s %10s %9s %6s | %10s %5s %9s %-10s | %10s %5s %9s | %6s %-13s %s\n",
           "collective", "size", "count", "iters", "ringx us", "range", "GB/s", "algorithm",
           "stock us", "range", "GB/s", "ratio", "(min-max)", "check");
    fflush(stdout);
}

int report_open(const options_t *o, const buffers_t *b)
{
    char stamp[32];
    time_t now = time(NULL);

    if (rank != 0) {
        return 0;
    }
    if (o->csv && !(csv = fopen(o->csv, "w"))) {
        perror(o->csv);
        return -1;
    }
    if (o->json && !(json = fopen(o->json, "w"))) {
        perror(o->json);
        return -1;
    }
    if (csv) {
        fprintf(csv, "collective,bytes,count,np,dtype,op,mem,in_place,ringx_us,"
                     "ringx_algbw_GBs,ringx_busbw_GBs,ringx_algorithm,stock_us,"
                     "stock_algbw_GBs,stock_busbw_GBs,ratio,check,form,load,ringx_overlap,"
                     "stock_overlap,timing,rounds,ringx_us_min,ringx_us_max,stock_us_min,"
                     "stock_us_max,ratio_min,ratio_max,noisy\n");
    }
    if (json) {
        strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        fprintf(json,
                "{\n  \"benchmark\": \"ringx_bench\",\n  \"date\": \"%s\",\n"
                "  \"open_mpi\": \"%d.%d.%d\",\n  \"np\": %d,\n  \"nodes\": %d,\n"
                "  \"ranks_per_node_min\": %d,\n  \"ranks_per_node_max\": %d,\n"
                "  \"dtype\": \"%s\",\n"
                "  \"op\": \"%s\",\n  \"mem\": \"%s\",\n  \"in_place\": %s,\n"
                "  \"form\": \"%s\",\n  \"load\": %d,\n  \"timing\": \"%s\",\n"
                "  \"rounds\": %d,\n  \"noise_threshold\": %.3f,\n  \"results\": [",
                stamp, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION, nprocs,
                node_layout.nodes, node_layout.min_ranks, node_layout.max_ranks, o->dtype->name, o->op->name, mem_name(o), o->in_place ? "true" : "false",
                form_names[o->form], o->load, timing_names[o->timing], o->rounds, o->noise);
    }
    print_header(o, b);
    return 0;
}

static const char *check_of(const comparison_t *c)
{
    return c->rx.valid && c->stock.valid ? "ok" : !c->rx.valid ? "FAIL(ringx)" : "FAIL(stock)";
}

static void print_row(const options_t *o, const point_t *pt, const comparison_t *c, int noisy,
                      int index, int total)
{
    char size[32], range[32];
    double f = bus_factor(pt->coll);
    double rx_bus = pt->bytes / c->rx.time.median / 1e9 * f;
    double st_bus = pt->bytes / c->stock.time.median / 1e9 * f;

    snprintf(range, sizeof(range), "(%.2f-%.2f)", c->ratio.min, c->ratio.max);
    printf("%-21s %10s %9zu %6d | %10.2f %4.0f%% %9.3f %-10s | %10.2f %4.0f%% %9.3f | %6.2f "
           "%-13s %-5s%s [%d/%d]",
           coll_names[pt->coll], human(pt->bytes, size, sizeof(size)), pt->count, pt->iters,
           c->rx.time.median * 1e6, rx_spread_relative(&c->rx.time) * 100, rx_bus, c->rx.alg,
           c->stock.time.median * 1e6, rx_spread_relative(&c->stock.time) * 100, st_bus,
           c->ratio.median, range, check_of(c), noisy ? " noisy" : "", index, total);
    if (o->overlap) {
        printf(" overlap: ringx %3.0f%% stock %3.0f%%", c->rx.overlap * 100,
               c->stock.overlap * 100);
    }
    printf("\n");
    fflush(stdout);
}

static void write_csv_row(const options_t *o, const point_t *pt, const comparison_t *c,
                          int noisy)
{
    double f = bus_factor(pt->coll);
    double rx_alg = pt->bytes / c->rx.time.median / 1e9;
    double st_alg = pt->bytes / c->stock.time.median / 1e9;

    fprintf(csv, "%s,%zu,%zu,%d,%s,%s,%s,%d,%.3f,%.6f,%.6f,%s,%.3f,%.6f,%.6f,%.4f,%s,%s,%d",
            coll_names[pt->coll], pt->bytes, pt->count, nprocs, o->dtype->name, o->op->name,
            mem_name(o), o->in_place, c->rx.time.median * 1e6, rx_alg, rx_alg * f, c->rx.alg,
            c->stock.time.median * 1e6, st_alg, st_alg * f, c->ratio.median, check_of(c),
            form_names[o->form], o->load);
    if (o->overlap) {
        fprintf(csv, ",%.4f,%.4f", c->rx.overlap, c->stock.overlap);
    } else {
        fprintf(csv, ",,");
    }
    fprintf(csv, ",%s,%d,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%d\n", timing_names[o->timing],
            o->rounds, c->rx.time.min * 1e6, c->rx.time.max * 1e6, c->stock.time.min * 1e6,
            c->stock.time.max * 1e6, c->ratio.min, c->ratio.max, noisy);
    fflush(csv);
}

static void write_json_side(const char *name, const point_t *pt, const side_result_t *s,
                            int with_overlap, int last)
{
    fprintf(json,
            "\"%s\": { \"us\": %.3f, \"us_min\": %.3f, \"us_max\": %.3f, "
            "\"busbw_GBs\": %.6f",
            name, s->time.median * 1e6, s->time.min * 1e6, s->time.max * 1e6,
            pt->bytes / s->time.median / 1e9 * bus_factor(pt->coll));
    if (s->alg[0]) {
        fprintf(json, ", \"algorithm\": \"%s\"", s->alg);
    }
    if (with_overlap) {
        fprintf(json, ", \"overlap\": %.4f", s->overlap);
    }
    fprintf(json, ", \"rounds_us\": [");
    for (int r = 0; r < s->nrounds; r++) {
        fprintf(json, "%s%.3f", r ? ", " : "", s->rounds[r] * 1e6);
    }
    fprintf(json, "] }%s", last ? "" : ", ");
}

static void write_json_record(const options_t *o, const point_t *pt, const comparison_t *c,
                              int noisy)
{
    fprintf(json,
            "%s\n    { \"collective\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
            "\"iters\": %d, ",
            json_records++ ? "," : "", coll_names[pt->coll], pt->bytes, pt->count, pt->iters);
    write_json_side("ringx", pt, &c->rx, o->overlap, 0);
    write_json_side("stock", pt, &c->stock, o->overlap, 0);
    fprintf(json,
            "\"ratio\": %.4f, \"ratio_min\": %.4f, \"ratio_max\": %.4f, \"check\": \"%s\", "
            "\"noisy\": %s }",
            c->ratio.median, c->ratio.min, c->ratio.max, check_of(c), noisy ? "true" : "false");
    fflush(json);
}

void report_point(const options_t *o, const point_t *pt, const comparison_t *cmp, int index,
                  int total)
{
    int noisy = is_noisy(o, &cmp->rx.time) || is_noisy(o, &cmp->stock.time);

    noisy_points += noisy;
    reported_points++;
    print_row(o, pt, cmp, noisy, index, total);
    if (csv) {
        write_csv_row(o, pt, cmp, noisy);
    }
    if (json) {
        write_json_record(o, pt, cmp, noisy);
    }
}

static void print_pvar_summary(void)
{
    printf("\n# ringx performance variables of this process (rank 0), whole run:\n");
    for (int c = 0; c < NCOLL; c++) {
        char algs[16][RINGX_PVAR_NAME_LEN];
        unsigned long long calls[16];
        int n = ringx_pvars_algorithms(coll_names[c], algs, calls, 16);
        printf("#   %-21s", coll_names[c]);
        for (int i = 0; i < n; i++) {
            printf(" %s=%llu", algs[i], calls[i]);
        }
        printf(" mailbox=%llu bytes_sent=%llu\n", ringx_pvar_read_coll(coll_names[c], "mailbox"),
               ringx_pvar_read_coll(coll_names[c], "bytes_sent"));
    }
    unsigned long long slept = 0, timed_out = 0, missed = 0, in_progress = 0;
    if (ringx_pvar_read("coll_ringx_waits_slept", &slept) == 0 &&
        ringx_pvar_read("coll_ringx_sleeps_timed_out", &timed_out) == 0 &&
        ringx_pvar_read("coll_ringx_rings_missed", &missed) == 0 &&
        ringx_pvar_read("coll_ringx_progress_waits_slept", &in_progress) == 0) {
        printf("#   waits slept=%llu (timed out, not woken: %llu, with a ring missed: %llu; in "
               "MPI_Wait and the like on nonblocking calls: %llu)\n", slept, timed_out, missed,
               in_progress);
    }
}

void report_close(const options_t *o, int failures)
{
    if (rank != 0) {
        return;
    }
    print_pvar_summary();
    if (noisy_points > 0) {
        printf("# WARNING: the machine is noisy: at %d of %d sizes the rounds of one side ranged "
               "over more than %.0f%% of their median (marked \"noisy\"); read those ratios with "
               "their min-max, or rerun with more --rounds on a quieter machine\n",
               noisy_points, reported_points, o->noise * 100);
    }
    printf("# %s\n", failures ? "FAILED: some results were wrong or not served as expected"
                              : "all results validated");
    if (csv) {
        fclose(csv);
    }
    if (json) {
        fprintf(json, "\n  ],\n  \"noisy_points\": %d,\n  \"validated\": %s\n}\n", noisy_points,
                failures ? "false" : "true");
        fclose(json);
    }
}
