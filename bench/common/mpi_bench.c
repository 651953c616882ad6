/* See mpi_bench.h. */
#include "mpi_bench.h"

#include "devmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int gp_env_rank(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_RANK");
    if (v == NULL) {
        v = getenv("PMI_RANK");
    }
    return v ? atoi(v) : 0;
}

static int gp_mpi_bench_alloc(gp_mpi_bench_t *b)
{
    b->sbuf = calloc((size_t)b->nslots, sizeof(void *));
    b->rbuf = calloc((size_t)b->nslots, sizeof(void *));
    if (b->sbuf == NULL || b->rbuf == NULL) {
        return -1;
    }
    for (int i = 0; i < b->nslots; ++i) {
        b->sbuf[i] = gp_mem_alloc(b->mem, b->o.max_size);
        b->rbuf[i] = gp_mem_alloc(b->mem, b->o.max_size);
        if (b->sbuf[i] == NULL || b->rbuf[i] == NULL) {
            return -1;
        }
        /* OSU fills send with 'a' and receive with 'b' */
        if (gp_mem_set(b->mem, b->sbuf[i], 'a', b->o.max_size) != 0 ||
            gp_mem_set(b->mem, b->rbuf[i], 'b', b->o.max_size) != 0) {
            return -1;
        }
    }
    b->ack = gp_mem_alloc(b->mem, 4);
    return b->ack ? gp_mem_set(b->mem, b->ack, 'c', 4) : -1;
}

int gp_mpi_bench_start(gp_mpi_bench_t *b, int argc, char **argv,
                       gp_bench_kind_t kind, int slots_with_validation)
{
    int nprocs = 0;
    memset(b, 0, sizeof(*b));
    int prc = gp_osu_parse(argc, argv, kind, gp_env_rank() != 0, &b->o);
    if (prc != 0) {
        return prc > 0 ? 0 : 1;
    }
    if (b->o.any_cuda && gp_devmem_init(b->o.device, -1) != 0) {
        fprintf(stderr, "%s: CUDA initialisation failed\n", argv[0]);
        return 1;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &b->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs != 2) {
        if (b->rank == 0) {
            fprintf(stderr, "%s: needs exactly 2 ranks, got %d\n", argv[0], nprocs);
        }
        MPI_Finalize();
        return 1;
    }
    b->mem = b->o.mem[b->rank];
    b->nslots = (b->o.validate && slots_with_validation) ? b->o.window : 1;
    if ((double)b->nslots * 2 * (double)b->o.max_size > (double)(3ULL << 30)) {
        if (b->rank == 0) {
            fprintf(stderr, "%s: -c with window %d needs %d x %zu B buffers; "
                    "lower -m or -W\n", argv[0], b->nslots, 2 * b->nslots,
                    b->o.max_size);
        }
        MPI_Finalize();
        return 1;
    }
    int ok = gp_mpi_bench_alloc(b) == 0, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok) {
            fprintf(stderr, "%s: rank %d: buffer allocation failed\n", argv[0],
                    b->rank);
        }
        MPI_Finalize();
        return 1;
    }
    return 0;
}

int gp_mpi_bench_finish(gp_mpi_bench_t *b)
{
    long total = gp_mpi_bench_sum(b->failures);
    for (int i = 0; i < b->nslots; ++i) {
        gp_mem_free(b->mem, b->sbuf[i]);
        gp_mem_free(b->mem, b->rbuf[i]);
    }
    gp_mem_free(b->mem, b->ack);
    free(b->sbuf);
    free(b->rbuf);
    MPI_Finalize();
    if (b->o.any_cuda) {
        gp_devmem_fini();
    }
    return total ? 1 : 0;
}

int gp_mpi_bench_iters(const gp_mpi_bench_t *b, size_t size)
{
    return size > b->o.large_size ? b->o.iters_large : b->o.iters;
}

int gp_mpi_bench_skip(const gp_mpi_bench_t *b, size_t size)
{
    return size > b->o.large_size ? b->o.skip_large : b->o.skip;
}

void gp_mpi_bench_fill(gp_mpi_bench_t *b, int slot, size_t size, uint64_t id)
{
    if (gp_mem_fill(b->mem, b->sbuf[slot], size,
                    gp_pattern_seed(size, id, b->rank)) != 0) {
        ++b->failures;
    }
}

void gp_mpi_bench_poison(gp_mpi_bench_t *b, int slot, size_t size)
{
    if (gp_mem_set(b->mem, b->rbuf[slot], 0, size) != 0) {
        ++b->failures;
    }
}

int gp_mpi_bench_check(gp_mpi_bench_t *b, int slot, size_t size, uint64_t id)
{
    gp_mem_diff_t d;
    if (gp_mem_verify(b->mem, b->rbuf[slot], size,
                      gp_pattern_seed(size, id, 1 - b->rank), &d) != 0) {
        ++b->failures;
        return -1;
    }
    if (d.bad) {
        if (b->failures < 10) {
            fprintf(stderr, "rank %d: size %zu message %llu: %zu bad bytes, "
                    "first at %zu (got 0x%02x, want 0x%02x)\n", b->rank, size,
                    (unsigned long long)id, d.bad, d.first_bad, d.got, d.want);
        }
        ++b->failures;
        return -1;
    }
    return 0;
}

void gp_mpi_bench_row(const gp_mpi_bench_t *b, size_t size, double value,
                      long bad)
{
    if (b->rank != 0) {
        return;
    }
    if (b->o.validate) {
        printf("%-*zu%*.*f%*s\n", 10, size, 18, 2, value, 14,
               bad ? "Fail" : "Pass");
    } else {
        printf("%-*zu%*.*f\n", 10, size, 18, 2, value);
    }
    fflush(stdout);
}

long gp_mpi_bench_sum(long v)
{
    long s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return s;
}
