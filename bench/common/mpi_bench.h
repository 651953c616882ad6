/* Start-up, buffers and output shared by the MPI benchmarks. */
#ifndef GDRPIPE_BENCH_MPI_BENCH_H
#define GDRPIPE_BENCH_MPI_BENCH_H

#include "osu_opts.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    gp_osu_opts_t o;
    int rank;
    gp_mem_t mem;      /* this rank's placement */
    int nslots;        /* buffers per direction: window with -c, else 1 */
    void **sbuf;       /* nslots send buffers of o.max_size */
    void **rbuf;       /* nslots receive buffers */
    void *ack;         /* 4-byte ack buffer (this rank's placement) */
    long failures;     /* validation failures seen by this rank */
} gp_mpi_bench_t;

/* Parse, initialise CUDA (before MPI_Init, as OSU does), MPI_Init, check 2
 * ranks, allocate. Returns 0 to run, otherwise the exit code to return
 * (after MPI_Finalize where MPI was initialised). */
int gp_mpi_bench_start(gp_mpi_bench_t *b, int argc, char **argv,
                       gp_bench_kind_t kind, int slots_with_validation);
/* Free, finalise; returns the exit code (1 if any rank saw a failure). */
int gp_mpi_bench_finish(gp_mpi_bench_t *b);

/* The timed and warm-up iteration counts of one size. */
int gp_mpi_bench_iters(const gp_mpi_bench_t *b, size_t size);
int gp_mpi_bench_skip(const gp_mpi_bench_t *b, size_t size);

/* Validation helpers: fill send slot `slot` with the pattern of (size,
 * iteration id, this rank); poison receive slot; verify receive slot holds
 * (size, id, peer). Verification counts failures in b->failures and prints
 * the first few. */
void gp_mpi_bench_fill(gp_mpi_bench_t *b, int slot, size_t size, uint64_t id);
void gp_mpi_bench_poison(gp_mpi_bench_t *b, int slot, size_t size);
int gp_mpi_bench_check(gp_mpi_bench_t *b, int slot, size_t size, uint64_t id);

/* One output row on rank 0; `ok` is this size's validation result summed
 * over ranks (only printed with -c). */
void gp_mpi_bench_row(const gp_mpi_bench_t *b, size_t size, double value,
                      long bad);
/* Sum a counter over both ranks (to rank 0 and everyone). */
long gp_mpi_bench_sum(long v);

#ifdef __cplusplus
}
#endif
#endif
