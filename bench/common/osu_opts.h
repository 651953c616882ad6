/* OSU-7-compatible command line of gdrpipe_latency / _bw / _bibw. */
#ifndef GDRPIPE_BENCH_OSU_OPTS_H
#define GDRPIPE_BENCH_OSU_OPTS_H

#include "membuf.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { GP_BENCH_LATENCY, GP_BENCH_BW, GP_BENCH_BIBW } gp_bench_kind_t;

typedef struct {
    gp_bench_kind_t kind;
    gp_mem_t mem[2];     /* buffer placement of rank 0 and rank 1 */
    int any_cuda;        /* some rank uses device buffers */
    size_t min_size, max_size;
    int iters, iters_large;
    int skip, skip_large;
    size_t large_size;   /* sizes above it use the _large counts */
    int window;          /* bw / bibw */
    int validate;        /* -c */
    int device;          /* -G, -1 = local rank % device count */
} gp_osu_opts_t;

/* Returns 0 to run, 1 if help/version was printed (exit 0), -1 on error
 * (message printed; exit 1). Only rank 0 should print: pass quiet=1 on the
 * other ranks. */
int gp_osu_parse(int argc, char **argv, gp_bench_kind_t kind, int quiet,
                 gp_osu_opts_t *o);

/* OSU's header lines: "# gdrpipe <Name> Test v<ver>", buffer placement, and
 * the column header. */
void gp_osu_print_header(const gp_osu_opts_t *o, const char *name,
                         const char *column);

#ifdef __cplusplus
}
#endif
#endif
