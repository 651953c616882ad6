/* coll_verify: persistent collectives (MPI 4's MPI_*_init; Open MPI 4.1
 * has them as MPIX_*_init, its mpiext pcollreq): each request started three times, with new inputs written
 * into the device buffers before each start, through MPI_Start and
 * MPI_Startall (two requests at once); then freed. */
#include "coll_check.h"

#include <mpi-ext.h>
#include <stdlib.h>

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Gather_init MPIX_Gather_init
#endif

static void fill(double *h, int n, long src)
{
    for (int i = 0; i < n; i++) {
        h[i] = cc_val(src, i);
    }
}

long cc_persistent(MPI_Comm comm, int n)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    double *in = malloc((size_t)n * p * sizeof(double));
    double *want = malloc((size_t)n * p * sizeof(double));
    double *s = cc_sentinels(n), *r = cc_sentinels(n), *g = cc_sentinels((size_t)n * p);
    MPI_Request q[2];
    MPI_Allreduce_init(s, r, n, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &q[0]);
    MPI_Gather_init(s, n, MPI_DOUBLE, g, n, MPI_DOUBLE, 0, comm, MPI_INFO_NULL, &q[1]);
    long f = 0;
    for (int round = 0; round < 3; round++) {
        fill(in, n, (long)round * 100 + rank);
        cc_put(s, in, (size_t)n * sizeof(double));
        if (round == 1) {
            MPI_Startall(2, q);
        } else {
            MPI_Start(&q[0]);
            MPI_Start(&q[1]);
        }
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        for (int i = 0; i < n; i++) {
            want[i] = 0;
            for (int k = 0; k < p; k++) {
                want[i] += cc_val((long)round * 100 + k, i);
            }
        }
        f += cc_check("persistent allreduce", n, r, want, n);
        if (rank == 0) {
            for (int k = 0; k < p; k++) {
                fill(want + (size_t)k * n, n, (long)round * 100 + k);
            }
            f += cc_check("persistent gather", n, g, want, (size_t)n * p);
        }
    }
    MPI_Request_free(&q[0]);
    MPI_Request_free(&q[1]);
    cc_free(s);
    cc_free(r);
    cc_free(g);
    free(in);
    free(want);
    return f;
}
