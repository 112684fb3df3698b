/*
 * ringx_bench_load.c - --load N: N busy processes per node beside the
 * ranks while the benchmark measures, so that the ranks compete for the
 * cores as they do on a shared or oversubscribed machine.
 *
 * The node's first rank forks them before the sweep; each spins without
 * a system call until the same rank kills it after the sweep.  They touch
 * nothing of MPI's, and die with their parent (PR_SET_PDEATHSIG) should
 * the benchmark end some other way.
 */
#include "ringx_bench.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t *children;
static int nchildren;

static void spin(void)
{
    volatile unsigned long n = 0;
    for (;;) {
        n++;
    }
}

static int node_first_rank(void)
{
    MPI_Comm node;
    int local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    return local == 0;
}

int load_start(int n)
{
    int ok = 1;
    if (n <= 0 || !node_first_rank()) {
        return all_true(1) ? 0 : -1;
    }
    children = calloc((size_t)n, sizeof(*children));
    ok = children != NULL;
    for (int i = 0; ok && i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
            spin();
        }
        ok = pid > 0;
        if (ok) {
            children[nchildren++] = pid;
        }
    }
    return all_true(ok) ? 0 : -1;
}

void load_stop(void)
{
    for (int i = 0; i < nchildren; i++) {
        kill(children[i], SIGKILL);
        waitpid(children[i], NULL, 0);
    }
    free(children);
    children = NULL;
    nchildren = 0;
}
