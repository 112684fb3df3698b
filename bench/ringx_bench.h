/*
 * ringx_bench.h - what the benchmark's files share: options, the point
 * being measured, buffers, and the timing and validation helpers.
 */
#ifndef RINGX_BENCH_H
#define RINGX_BENCH_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "ringx_bench_stats.h"

enum { COLL_ALLREDUCE, COLL_ALLGATHER, COLL_RSB, NCOLL };
extern const char *const coll_names[NCOLL];

typedef struct dtype_desc {
    const char *name;
    MPI_Datatype type;
    size_t size;
    int floating;
    int is_signed;
} dtype_desc_t;

typedef enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_BAND, OP_BOR, OP_BXOR } op_kind_t;

typedef struct op_desc {
    const char *name;
    MPI_Op op;
    op_kind_t kind;
} op_desc_t;

typedef struct options {
    size_t min_bytes, max_bytes;
    int colls[NCOLL];
    const dtype_desc_t *dtype;
    const op_desc_t *op;
    int in_place;
    int rounds;
    double target_seconds;      /* per measurement */
    const char *csv;
    const char *rules;          /* --write-rules FILE */
    int device;                 /* --mem cuda */
    int form;                   /* --form: FORM_BLOCKING, FORM_NONBLOCKING, FORM_PERSISTENT */
    int load;                   /* --load N: busy processes per node while measuring */
    int overlap;                /* --overlap: also time calls overlapped with computation */
    int timing;                 /* --timing: TIMING_SYNC or TIMING_BACK_TO_BACK */
    double noise;               /* --noise: warn when a range exceeds this fraction of its median */
    const char *json;           /* --json FILE */
    const char *check_rules;    /* --check-rules FILE */
    double margin;              /* --margin: what a tuning candidate must gain besides the range */
    int churn;                  /* --churn N: communicators made, used once and freed per round */
} options_t;

enum { FORM_BLOCKING, FORM_NONBLOCKING, FORM_PERSISTENT, NFORMS };
extern const char *const form_names[NFORMS];

/* How calls are timed: each after a barrier, the slowest rank's time (as
 * OSU and IMB do), or back to back (the mean of a loop without barriers). */
enum { TIMING_SYNC, TIMING_BACK_TO_BACK, NTIMINGS };
extern const char *const timing_names[NTIMINGS];

typedef struct point {
    int coll;
    size_t bytes;               /* S */
    size_t count;               /* the count argument of the call */
    int iters;
} point_t;

/* The buffers given to the collectives (device memory with --mem cuda)
 * and host buffers of the same size, where inputs are made and results
 * checked, and through which the stock side stages device data when the
 * MPI is not CUDA-aware. */
typedef struct buffers {
    void *send;
    void *recv;
    void *host_send;
    void *host_recv;
    int stock_stages;           /* stock side: copy to host, collective, copy back */
} buffers_t;

/* One side of a comparison at one point. */
typedef struct side_result {
    rx_spread_t time;           /* seconds per call over the rounds (each: mean of N calls,
                                 * max over ranks) */
    double rounds[RX_MAX_ROUNDS]; /* each round's seconds per call, in the order run */
    int nrounds;
    double overlap;             /* --overlap: the share of the call hidden by computation */
    int valid;
    char alg[64];               /* ringx algorithm(s) that served the calls */
    unsigned long long served;  /* ringx calls counted by the pvars */
} side_result_t;

/* A point measured on both sides; ratio = stock time / ringx time, per
 * round (the rounds are interleaved pairs). */
typedef struct comparison {
    side_result_t rx, stock;
    rx_spread_t ratio;
} comparison_t;

/* "host memory" or "device memory (stock side: ...)" for headers. */
const char *memory_label(const options_t *o, const buffers_t *b);

extern int rank, nprocs;
extern MPI_Comm stock_comm, ringx_comm;

/* How the ranks sit on nodes, as Open MPI places them. */
typedef struct node_layout {
    int nodes, min_ranks, max_ranks;
} node_layout_t;
extern node_layout_t node_layout;
/* One line for the headers: "2 nodes, 2 ranks per node". */
const char *node_layout_text(void);

/* The sizes of the sweep, for coll: the first point, then the next one
 * (0 when there is none). */
point_t first_point(const options_t *o, int coll);
int next_point(const options_t *o, point_t *pt);

void fill_input(const options_t *o, const point_t *pt, buffers_t *b);
int check_output(const options_t *o, const point_t *pt, const buffers_t *b);
double time_calls(const options_t *o, const point_t *pt, buffers_t *b, MPI_Comm comm,
                  int iters);
int all_true(int ok);
int choose_iters(const options_t *o, const point_t *pt, buffers_t *b);
const char *human(size_t bytes, char *buf, size_t len);

/* Writes an integer (or enumeration) control variable, returning the old
 * value in *old if old is not NULL; 0 or -1. */
int cvar_write_int(const char *name, int value, int *old);
int cvar_read_int(const char *name, int *value);

/* The value of item in the enumeration of control variable name, or -1. */
int cvar_enum_value(const char *name, const char *item);

/* --load: starts n busy processes on each node (0: none) for the
 * measurements, and ends them; 0 or -1 (on every rank alike). */
int load_start(int n);
void load_stop(void);

/* --write-rules: measures every ringx algorithm; returns failures.
 * --check-rules: re-measures a rules file against the built-in choice. */
int tune(const options_t *o, buffers_t *b);
int check_rules(const options_t *o, buffers_t *b);

/* ringx_bench_churn.c */
int churn(const options_t *o);

/* Output (ringx_bench_report.c): the table on rank 0's stdout, and the CSV
 * and JSON files; report_open and report_close frame one run. */
int report_open(const options_t *o, const buffers_t *b);
void report_point(const options_t *o, const point_t *pt, const comparison_t *cmp, int index,
                  int total);
void report_close(const options_t *o, int failures);
int is_noisy(const options_t *o, const rx_spread_t *s);
double bus_factor(int coll);

#endif /* RINGX_BENCH_H */
