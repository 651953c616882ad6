/* coll_verify: what gdrpipe's Open MPI glue refuses on device buffers, as an
 * error code (MPI_ERRORS_RETURN here) instead of a crash: persistent
 * point-to-point with a non-contiguous datatype. On host buffers the same
 * call works. */
#include "coll_check.h"

#include <stdio.h>

static long expect(const char *what, int rc, int want_error)
{
    if ((rc != MPI_SUCCESS) == want_error) {
        return 0;
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "coll_verify: rank %d: %s returned %d, expected %s\n", rank, what, rc,
            want_error ? "an error" : "MPI_SUCCESS");
    return 1;
}

long cc_refused(MPI_Comm comm, int n)
{
    int dev = cc_on_device();
    if (n < 2) {
        n = 2; /* one element of a vector is contiguous: nothing to refuse */
    }
    MPI_Comm c;
    MPI_Comm_dup(comm, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Datatype vec;
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    double *s = cc_sentinels(2 * n), *r = cc_sentinels(2 * n);
    MPI_Request req = MPI_REQUEST_NULL;
    long f = expect("MPI_Send_init(vector)", MPI_Send_init(s, 1, vec, 0, 5, c, &req), dev);
    if (req != MPI_REQUEST_NULL) {
        MPI_Request_free(&req);
    }
    cc_free(s);
    cc_free(r);
    MPI_Type_free(&vec);
    MPI_Comm_free(&c);
    return f;
}
