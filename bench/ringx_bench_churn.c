/*
 * ringx_bench_churn.c - --churn N: what a communicator costs to make, use
 * once and free, ringx next to the stock collectives.
 *
 * An iteration makes a communicator of every rank (MPI_Comm_dup and
 * MPI_Comm_split with the ranks reversed, alternately, of the side's own
 * duplicate of MPI_COMM_WORLD: its context-id agreements are that side's
 * nonblocking allreduces), runs one
 * MPI_Allreduce of one int on it and frees it: what libraries that make a
 * communicator per operation do.  The stock side makes its communicators
 * while ringx's priority is negative, so ringx does not serve them.  Each
 * round times N iterations of each side, the sides interleaved; figures
 * are the rounds' medians and ranges, max over ranks.  The resident set
 * size (max over ranks) is reported at the start and after each side's
 * rounds: it must stay flat however many communicators come and go.
 *
 * The pvars prove who served: in each ringx round ringx connected N
 * communicators and served N blocking allreduces; in a stock round it
 * served no allreduce at all (the timing's own reductions run on the
 * stock side's communicator).
 */
#include <stdlib.h>
#include <unistd.h>

#include "ringx_bench.h"
#include "ringx_pvars.h"

enum { SIDE_STOCK, SIDE_RINGX, NSIDES };
static const char *const side_names[NSIDES] = { "stock", "ringx" };

/* The resident set size of this process in MiB, max over ranks. */
static double rss_mib(void)
{
    long pages = 0, resident = 0;
    double mine, worst;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) {
            resident = 0;
        }
        fclose(f);
    }
    mine = (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, stock_comm);
    return worst;
}

/* One iteration; 0 if the allreduce's result was right. */
static int churn_once(MPI_Comm parent, int i)
{
    MPI_Comm comm;
    int one = 1, sum = 0;

    if (i % 2 == 0) {
        MPI_Comm_dup(parent, &comm);
    } else {
        MPI_Comm_split(parent, 0, nprocs - rank, &comm);
    }
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    MPI_Comm_free(&comm);
    return sum != nprocs;
}

/* Seconds per iteration of n iterations of one side, max over ranks; adds
 * the wrong results to *wrong. */
static double time_side(int side, int n, int *wrong)
{
    int priority = 0;
    double t0, mine, worst;

    if (side == SIDE_STOCK) {
        cvar_write_int("coll_ringx_priority", -1, &priority);
    }
    MPI_Barrier(stock_comm);
    t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        *wrong += churn_once(side == SIDE_STOCK ? stock_comm : ringx_comm, i);
    }
    mine = (MPI_Wtime() - t0) / n;
    if (side == SIDE_STOCK) {
        cvar_write_int("coll_ringx_priority", priority, NULL);
    }
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, stock_comm);
    return worst;
}

/* What ringx's counters show of a round: blocking allreduces served,
 * nonblocking ones, communicators connected. */
typedef struct churn_counts {
    unsigned long long blocking, nonblocking, comms;
} churn_counts_t;

static churn_counts_t counts_now(void)
{
    unsigned long long nonblocking = ringx_pvar_read_coll("allreduce", "nonblocking"), one = 0,
                       multi = 0;

    (void)ringx_pvar_read("coll_ringx_comms_one_node", &one);
    (void)ringx_pvar_read("coll_ringx_comms_multi_node", &multi);
    return (churn_counts_t){ ringx_pvars_served("allreduce") - nonblocking, nonblocking,
                             one + multi };
}

/* Whether a round of n iterations of side was served as it must be. */
static int served_as_expected(int side, int n, const churn_counts_t *a, const churn_counts_t *b)
{
    unsigned long long blocking = b->blocking - a->blocking, comms = b->comms - a->comms;

    if (side == SIDE_STOCK) {
        return blocking == 0 && comms == 0 && b->nonblocking == a->nonblocking;
    }
    return blocking == (unsigned long long)n && comms == (unsigned long long)n;
}

int churn(const options_t *o)
{
    double t[NSIDES][RX_MAX_ROUNDS], rss[NSIDES] = { 0, 0 }, rss_start, rss_first = 0;
    int wrong = 0, unproven = 0, n = o->churn;
    rx_spread_t s[NSIDES];

    (void)time_side(SIDE_RINGX, 10, &wrong);        /* warm-up: UCX endpoints, windows */
    (void)time_side(SIDE_STOCK, 10, &wrong);
    rss_start = rss_mib();
    if (rank == 0) {
        printf("# ringx churn: np=%d (%s); an iteration: MPI_Comm_dup or MPI_Comm_split (alternately), "
               "one MPI_Allreduce of 1 int, MPI_Comm_free; us per iteration, median [min-max] of "
               "%d interleaved rounds of %d iterations (max over ranks)\n",
               nprocs, node_layout_text(), o->rounds, n);
    }
    for (int r = 0; r < o->rounds; r++) {
        for (int side = 0; side < NSIDES; side++) {
            churn_counts_t before = counts_now(), after;
            t[side][r] = time_side(side, n, &wrong);
            after = counts_now();
            unproven += !served_as_expected(side, n, &before, &after);
            rss[side] = rss_mib();
        }
        rss_first = r == 0 ? rss[SIDE_RINGX] : rss_first;
    }
    for (int side = 0; side < NSIDES; side++) {
        s[side] = rx_spread_of(t[side], o->rounds);
    }
    wrong = !all_true(wrong == 0 && unproven == 0);
    if (rank == 0) {
        for (int side = 0; side < NSIDES; side++) {
            printf("%-6s %10.1f us/iteration [%.1f-%.1f]  RSS %.1f MiB after its rounds\n",
                   side_names[side], s[side].median * 1e6, s[side].min * 1e6, s[side].max * 1e6,
                   rss[side]);
        }
        printf("ratio stock/ringx %.2fx (above 1: ringx is faster)\n",
               s[SIDE_STOCK].median / s[SIDE_RINGX].median);
        printf("RSS (max over ranks): %.1f MiB at the start, %.1f MiB after the first round, "
               "%.1f MiB after the last\n", rss_start, rss_first, rss[SIDE_STOCK]);
        printf("# %s\n", wrong ? "FAILED: some results were wrong or not served as expected"
                               : "all results validated; ringx served every ringx iteration "
                                 "(pvars)");
    }
    return wrong;
}
