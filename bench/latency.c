/* gdrpipe_latency: OSU-style ping-pong between 2 ranks; prints the one-way
 * latency in microseconds per message size. */
#include "common/mpi_bench.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    gp_mpi_bench_t b;
    int rc = gp_mpi_bench_start(&b, argc, argv, GP_BENCH_LATENCY, 0);
    if (rc != 0 || b.sbuf == NULL) {
        return rc;
    }
    const int peer = 1 - b.rank;
    const int tag = 1;
    if (b.rank == 0) {
        gp_osu_print_header(&b.o, "Latency", "Latency (us)");
    }
    for (size_t size = b.o.min_size; size <= b.o.max_size;
         size = size ? size * 2 : 1) {
        const int iters = gp_mpi_bench_iters(&b, size);
        const int skip = gp_mpi_bench_skip(&b, size);
        long bad = 0;
        double elapsed = 0.0, t0 = 0.0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < iters + skip; ++i) {
            if (b.o.validate) {
                gp_mpi_bench_fill(&b, 0, size, (uint64_t)i);
                gp_mpi_bench_poison(&b, 0, size);
            }
            if (b.rank == 0) {
                t0 = MPI_Wtime();
                MPI_Send(b.sbuf[0], (int)size, MPI_CHAR, peer, tag, MPI_COMM_WORLD);
                MPI_Recv(b.rbuf[0], (int)size, MPI_CHAR, peer, tag, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                if (i >= skip) {
                    elapsed += MPI_Wtime() - t0;
                }
            } else {
                MPI_Recv(b.rbuf[0], (int)size, MPI_CHAR, peer, tag, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                MPI_Send(b.sbuf[0], (int)size, MPI_CHAR, peer, tag, MPI_COMM_WORLD);
            }
            if (b.o.validate && gp_mpi_bench_check(&b, 0, size, (uint64_t)i) != 0) {
                ++bad;
            }
        }
        bad = b.o.validate ? gp_mpi_bench_sum(bad) : 0;
        gp_mpi_bench_row(&b, size, elapsed * 1e6 / (2.0 * iters), bad);
    }
    return gp_mpi_bench_finish(&b);
}
