/* coll_verify: point-to-point with a non-contiguous datatype on each side
 * (MPI_Type_vector, strides 2 and 3) around a ring: MPI_Sendrecv, MPI_Isend
 * / MPI_Irecv, MPI_Send / MPI_Recv, and persistent MPI_Send_init /
 * MPI_Recv_init started three times with new data. The gaps of the receive
 * buffer must keep their sentinels. */
#include "coll_check.h"

#include <stdio.h>
#include <stdlib.h>

long cc_p2p_vector(MPI_Comm comm, int n)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    int right = (rank + 1) % p, left = (rank - 1 + p) % p;
    MPI_Datatype s2, s3;
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &s2);
    MPI_Type_vector(n, 1, 3, MPI_DOUBLE, &s3);
    MPI_Type_commit(&s2);
    MPI_Type_commit(&s3);
    int slen = 2 * n - 1, rlen = 3 * n - 2;
    double *hs = malloc(slen * sizeof(double)), *want = malloc(rlen * sizeof(double));
    for (int i = 0; i < slen; i++) {
        hs[i] = i % 2 ? CC_SENTINEL : cc_val(rank, i / 2);
    }
    for (int i = 0; i < rlen; i++) {
        want[i] = i % 3 ? CC_SENTINEL : cc_val(left, i / 3);
    }
    double *s = cc_dup(hs, slen);
    long f = 0;
    for (int form = 0; form < 3; form++) {
        double *r = cc_sentinels(rlen);
        const char *what = "sendrecv(vector)";
        if (form == 0) {
            MPI_Sendrecv(s, 1, s2, right, 7, r, 1, s3, left, 7, comm, MPI_STATUS_IGNORE);
        } else if (form == 1) {
            what = "isend/irecv(vector)";
            MPI_Request q[2];
            MPI_Irecv(r, 1, s3, left, 8, comm, &q[0]);
            MPI_Isend(s, 1, s2, right, 8, comm, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        } else {
            what = "send/recv(vector)";
            if (rank % 2 == 0) {
                MPI_Send(s, 1, s2, right, 9, comm);
                MPI_Recv(r, 1, s3, left, 9, comm, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(r, 1, s3, left, 9, comm, MPI_STATUS_IGNORE);
                MPI_Send(s, 1, s2, right, 9, comm);
            }
        }
        f += cc_check(what, n, r, want, rlen);
        cc_free(r);
    }
    /* persistent: new values in the send buffer before every start */
    MPI_Request q[2];
    double *r = cc_sentinels(rlen);
    MPI_Recv_init(r, 1, s3, left, 10, comm, &q[0]);
    MPI_Send_init(s, 1, s2, right, 10, comm, &q[1]);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < slen; i += 2) {
            hs[i] = cc_val((long)round * 100 + rank, i / 2);
        }
        for (int i = 0; i < rlen; i += 3) {
            want[i] = cc_val((long)round * 100 + left, i / 3);
        }
        cc_put(s, hs, (size_t)slen * sizeof(double));
        MPI_Startall(2, q);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        f += cc_check("send_init/recv_init(vector)", n, r, want, rlen);
    }
    MPI_Request_free(&q[0]);
    MPI_Request_free(&q[1]);
    cc_free(r);
    cc_free(s);
    free(hs);
    free(want);
    MPI_Type_free(&s2);
    MPI_Type_free(&s3);
    return f;
}
