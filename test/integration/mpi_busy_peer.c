/* mpi_busy_peer [-n COUNT] [-s SIZE] [-t SECONDS]: a peer that is alive but
 * busy. Rank 0 sends COUNT messages of SIZE bytes to rank 1 at once; rank 1
 * first computes (sleeps) for SECONDS without calling MPI, so that the
 * connection's buffers fill and its window closes, then receives them all and
 * checks every byte. Any other rank only takes part in the barriers.
 *
 * Run with UCX_GDRPIPE_TCP_TIMEOUT well below SECONDS across hosts: a bound
 * on a silent peer must not take a busy one for dead (its kernel answers the
 * window probes). Exit status 0 when every message arrived intact. */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char pattern(long msg, long byte)
{
    return (unsigned char)((msg * 131 + byte * 7 + 1) & 0xff);
}

int main(int argc, char **argv)
{
    long count = 16384, size = 4096, i, j, bad = 0;
    int seconds = 12, rank, nranks, opt;
    unsigned char *buf;
    MPI_Request *reqs;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    while ((opt = getopt(argc, argv, "n:s:t:")) != -1) {
        switch (opt) {
        case 'n': count = atol(optarg); break;
        case 's': size = atol(optarg); break;
        case 't': seconds = atoi(optarg); break;
        default:
            if (rank == 0) {
                fprintf(stderr, "usage: mpi_busy_peer [-n COUNT] [-s SIZE] [-t SECONDS]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if ((nranks < 2) || (count < 1) || (size < 1) || (seconds < 0)) {
        if (rank == 0) {
            fprintf(stderr, "mpi_busy_peer: needs 2 ranks or more, positive sizes\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    buf  = malloc((size_t)count * (size_t)size);
    reqs = malloc((size_t)count * sizeof(*reqs));
    if ((buf == NULL) || (reqs == NULL)) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (i = 0; i < count; ++i) {
            for (j = 0; j < size; ++j) {
                buf[i * size + j] = pattern(i, j);
            }
            MPI_Isend(buf + i * size, (int)size, MPI_BYTE, 1, (int)(i & 0x7fff),
                      MPI_COMM_WORLD, &reqs[i]);
        }
        MPI_Waitall((int)count, reqs, MPI_STATUSES_IGNORE);
    } else if (rank == 1) {
        sleep((unsigned)seconds); /* busy: no MPI call */
        memset(buf, 0, (size_t)count * (size_t)size);
        for (i = 0; i < count; ++i) {
            MPI_Irecv(buf + i * size, (int)size, MPI_BYTE, 0, (int)(i & 0x7fff),
                      MPI_COMM_WORLD, &reqs[i]);
        }
        MPI_Waitall((int)count, reqs, MPI_STATUSES_IGNORE);
        for (i = 0; i < count; ++i) {
            for (j = 0; j < size; ++j) {
                bad += buf[i * size + j] != pattern(i, j);
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_busy_peer: %ld messages of %ld bytes, receiver busy %d s: %s "
               "(%ld bytes wrong)\n", count, size, seconds, bad ? "FAILED" : "passed", bad);
    }
    free(reqs);
    free(buf);
    MPI_Finalize();
    return bad ? 1 : 0;
}
