/* coll_verify: neighbourhood collectives on a periodic ring (a 1-D
 * Cartesian communicator): neighbour 0 is the rank before, 1 the rank
 * after. Every block a rank sends holds its own values, so the expected
 * blocks depend only on who the neighbours are. */
#include "coll_check.h"

#include <stdio.h>
#include <stdlib.h>

static long ring(MPI_Comm comm, int n, int nb, int form /* 0 allgather .. 4 alltoallw */)
{
    int p, rank;
    MPI_Comm cart;
    int dims[1], periods[1] = {1};
    MPI_Comm_size(comm, &p);
    dims[0] = p;
    MPI_Cart_create(comm, 1, dims, periods, 0, &cart);
    MPI_Comm_rank(cart, &rank);
    int nbr[2] = {(rank - 1 + p) % p, (rank + 1) % p};
    int v = form == 1 || form == 3 || form == 4;
    /* blocks of n elements; v forms: a gap of 2 between the two blocks */
    int counts[2] = {n, n}, displs[2] = {0, n + (v ? 2 : 0)};
    MPI_Aint bdispls[2] = {0, (MPI_Aint)displs[1] * (MPI_Aint)sizeof(double)};
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_DOUBLE};
    int len = displs[1] + n;
    double *hs = malloc(len * sizeof(double)), *want = malloc(len * sizeof(double));
    for (int i = 0; i < len; i++) {
        hs[i] = want[i] = CC_SENTINEL;
    }
    for (int b = 0; b < 2; b++) {
        for (int i = 0; i < n; i++) {
            hs[displs[b] + i] = cc_val(rank, i);
            want[displs[b] + i] = cc_val(nbr[b], i);
        }
    }
    double *s = cc_dup(hs, len), *r = cc_sentinels(len);
    static const char *names[] = {"neighbor_allgather", "neighbor_allgatherv",
                                  "neighbor_alltoall", "neighbor_alltoallv",
                                  "neighbor_alltoallw"};
    switch (form) {
    case 0:
        CC_CALL(nb, MPI_Neighbor_allgather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, cart),
                MPI_Ineighbor_allgather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, cart, CC_REQ));
        break;
    case 1:
        CC_CALL(nb, MPI_Neighbor_allgatherv(s, n, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, cart),
                MPI_Ineighbor_allgatherv(s, n, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, cart,
                                         CC_REQ));
        break;
    case 2:
        CC_CALL(nb, MPI_Neighbor_alltoall(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, cart),
                MPI_Ineighbor_alltoall(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, cart, CC_REQ));
        break;
    case 3:
        CC_CALL(nb,
                MPI_Neighbor_alltoallv(s, counts, displs, MPI_DOUBLE, r, counts, displs,
                                       MPI_DOUBLE, cart),
                MPI_Ineighbor_alltoallv(s, counts, displs, MPI_DOUBLE, r, counts, displs,
                                        MPI_DOUBLE, cart, CC_REQ));
        break;
    default:
        CC_CALL(nb,
                MPI_Neighbor_alltoallw(s, counts, bdispls, types, r, counts, bdispls, types,
                                       cart),
                MPI_Ineighbor_alltoallw(s, counts, bdispls, types, r, counts, bdispls, types,
                                        cart, CC_REQ));
        break;
    }
    char what[64];
    snprintf(what, sizeof(what), "%s%s", nb ? "I" : "", names[form]);
    long f = cc_check(what, n, r, want, len);
    cc_free(s);
    cc_free(r);
    free(hs);
    free(want);
    MPI_Comm_free(&cart);
    return f;
}

long cc_run_neighbor(MPI_Comm comm, int n)
{
    long f = 0;
    for (int nb = 0; nb < 2; nb++) {
        for (int form = 0; form < 5; form++) {
            f += ring(comm, n, nb, form);
        }
    }
    return f;
}
