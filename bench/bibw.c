/* gdrpipe_bibw: OSU-style bidirectional bandwidth: both ranks post a window
 * of receives and a window of sends at once; prints the total MB/s of both
 * directions (10^6 B/s). */
#include "common/mpi_bench.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    gp_mpi_bench_t b;
    int rc = gp_mpi_bench_start(&b, argc, argv, GP_BENCH_BIBW, 1);
    if (rc != 0 || b.sbuf == NULL) {
        return rc;
    }
    const int peer = 1 - b.rank;
    const int W = b.o.window;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)W);
    if (b.rank == 0) {
        gp_osu_print_header(&b.o, "Bi-Directional Bandwidth", "Bandwidth (MB/s)");
    }
    for (size_t size = b.o.min_size; size <= b.o.max_size;
         size = size ? size * 2 : 1) {
        const int iters = gp_mpi_bench_iters(&b, size);
        const int skip = gp_mpi_bench_skip(&b, size);
        long bad = 0;
        double elapsed = 0.0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < iters + skip; ++i) {
            for (int j = 0; b.o.validate && j < W; ++j) {
                uint64_t id = (uint64_t)i * (uint64_t)W + (uint64_t)j;
                gp_mpi_bench_fill(&b, j, size, id);
                gp_mpi_bench_poison(&b, j, size);
            }
            double t0 = MPI_Wtime();
            for (int j = 0; j < W; ++j) {
                MPI_Irecv(b.rbuf[j % b.nslots], (int)size, MPI_CHAR, peer, 10,
                          MPI_COMM_WORLD, &reqs[j]);
            }
            for (int j = 0; j < W; ++j) {
                MPI_Isend(b.sbuf[j % b.nslots], (int)size, MPI_CHAR, peer, 10,
                          MPI_COMM_WORLD, &reqs[W + j]);
            }
            MPI_Waitall(2 * W, reqs, MPI_STATUSES_IGNORE);
            if (i >= skip) {
                elapsed += MPI_Wtime() - t0;
            }
            for (int j = 0; b.o.validate && j < W; ++j) {
                uint64_t id = (uint64_t)i * (uint64_t)W + (uint64_t)j;
                bad += gp_mpi_bench_check(&b, j, size, id) != 0;
            }
        }
        bad = b.o.validate ? gp_mpi_bench_sum(bad) : 0;
        double mbytes = (double)size / 1e6 * iters * W * 2;
        gp_mpi_bench_row(&b, size, elapsed > 0 ? mbytes / elapsed : 0.0, bad);
    }
    free(reqs);
    return gp_mpi_bench_finish(&b);
}
