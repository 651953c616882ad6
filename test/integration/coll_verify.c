/* coll_verify: every MPI collective (blocking, nonblocking, v/w forms,
 * neighbourhood), reductions over several predefined types and operations
 * (MPI_IN_PLACE too), on MPI_COMM_WORLD, on communicators from
 * MPI_Comm_split and on an intercommunicator between them, and
 * point-to-point with MPI_Type_vector, on buffers in device memory
 * (-d cuda) or host memory (-d host), or device memory on even ranks and host
 * memory on odd ones (-d mixed). Inputs are written and
 * results read back through the CUDA driver (devmem.h); every result is
 * checked on the host, including the gaps a datatype or a displacement
 * leaves alone. Exit status 0 when every check passed on every rank.
 *
 * usage: coll_verify [-d host|cuda|mixed] [--sizes N,N,...] [--no-p2p | --only-p2p]
 *                    [--expect-cuda-support 0|1] */
#include "coll_check.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int MPIX_Query_cuda_support(void);

static int parse_sizes(const char *s, int *sizes, int max)
{
    int n = 0;
    while (*s != '\0' && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0) {
            return -1;
        }
        sizes[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* one line on stderr per finished step, from rank 0, with the time since
 * MPI_Init: where a run that is stopped from outside had got to */
static void progress(int rank, const char *what, int n)
{
    static double t0 = -1;
    if (t0 < 0) {
        t0 = MPI_Wtime();
    }
    if (rank == 0) {
        fprintf(stderr, "coll_verify: %s, %d elements: done at %.1f s\n", what, n,
                MPI_Wtime() - t0);
    }
}

int main(int argc, char **argv)
{
    int sizes[16] = {1, 100, 4096}, nsizes = 3, p2p = 1, coll = 1, expect_cs = -1, mixed = 0;
    cc_mem_t mem = CC_HOST;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-d") && i + 1 < argc) {
            ++i;
            mem = !strcmp(argv[i], "cuda") ? CC_DEVICE : CC_HOST;
            if (!strcmp(argv[i], "mixed")) {
                /* device buffers on even ranks, host buffers on odd ones
                 * (Open MPI's rank, known before MPI_Init) */
                const char *r = getenv("OMPI_COMM_WORLD_RANK");
                mem = (r != NULL && atoi(r) % 2 == 1) ? CC_HOST : CC_DEVICE;
                mixed = 1;
            }
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            nsizes = parse_sizes(argv[++i], sizes, 16);
        } else if (!strcmp(argv[i], "--no-p2p")) {
            p2p = 0;
        } else if (!strcmp(argv[i], "--only-p2p")) {
            coll = 0;
        } else if (!strcmp(argv[i], "--expect-cuda-support") && i + 1 < argc) {
            expect_cs = atoi(argv[++i]);
        } else {
            nsizes = -1;
        }
    }
    if (nsizes <= 0) {
        fprintf(stderr, "usage: coll_verify [-d host|cuda|mixed] [--sizes N,N,...] "
                        "[--no-p2p | --only-p2p] [--expect-cuda-support 0|1]\n");
        return 2;
    }
    if (cc_mem_init(mem) != 0) {
        return 1;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long fails = 0;
    progress(-1, NULL, 0);
    if (expect_cs >= 0 && MPIX_Query_cuda_support() != expect_cs) {
        fprintf(stderr, "coll_verify: rank %d: MPIX_Query_cuda_support() = %d, expected %d\n",
                rank, MPIX_Query_cuda_support(), expect_cs);
        fails++;
    }
    /* world, halves (ranks of one parity, in reverse order), and a
     * communicator of one rank */
    MPI_Comm comms[3];
    const char *names[3] = {"world", "split", "self"};
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &comms[2]);
    for (int c = 0; coll && c < 3; c++) {
        for (int s = 0; s < nsizes; s++) {
            long f = cc_run_all(comms[c], sizes[s]) + cc_persistent(comms[c], sizes[s]);
            progress(rank, names[c], sizes[s]);
            if (f != 0) {
                fprintf(stderr, "coll_verify: rank %d: %ld failed checks on %s, %d elements\n",
                        rank, f, names[c], sizes[s]);
            }
            fails += f;
        }
    }
    for (int s = 0; coll && s < nsizes; s++) {
        long f = cc_run_inter(sizes[s]);
        progress(rank, "intercommunicator", sizes[s]);
        if (f != 0) {
            fprintf(stderr, "coll_verify: rank %d: %ld failed checks on the intercommunicator, "
                            "%d elements\n", rank, f, sizes[s]);
        }
        fails += f;
    }
    if (p2p) {
        for (int s = 0; s < nsizes; s++) {
            fails += cc_p2p_vector(MPI_COMM_WORLD, sizes[s]);
            progress(rank, "point-to-point", sizes[s]);
        }
    }
    long total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("coll_verify: %d ranks, %s buffers, %d sizes: %s (%ld failed checks)\n", size,
               mixed ? "device and host" : mem == CC_DEVICE ? "device" : "host", nsizes,
               total ? "FAILED" : "passed",
               total);
    }
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    MPI_Finalize();
    cc_mem_fini();
    return total != 0;
}
