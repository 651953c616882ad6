/* Shared pieces of coll_verify: buffers in device or host memory, values
 * that say where they came from, result checks, and the groups of tests.
 * Every test returns the number of failed checks on this rank. */
#ifndef GDRPIPE_TEST_COLL_CHECK_H
#define GDRPIPE_TEST_COLL_CHECK_H

#include <mpi.h>
#include <stddef.h>

typedef enum { CC_HOST = 0, CC_DEVICE = 1 } cc_mem_t;

int cc_mem_init(cc_mem_t mem);
void cc_mem_fini(void);
/* a buffer of the chosen kind; the CPU never touches a device one */
void *cc_alloc(size_t bytes);
void cc_free(void *buf);
void cc_put(void *buf, const void *host, size_t bytes);
void cc_get(void *host, const void *buf, size_t bytes);

/* a buffer of n doubles holding host[0..n) */
double *cc_dup(const double *host, size_t n);
/* n doubles all set to CC_SENTINEL */
double *cc_sentinels(size_t n);
#define CC_SENTINEL (-1.0)

/* value number i from source s */
static inline double cc_val(long s, long i)
{
    return (double)s * 1e7 + (double)i;
}

/* compares n doubles of buf (read back) with want; prints the first
 * difference with what/n; returns 1 on a difference, else 0 */
long cc_check(const char *what, int n, const double *buf, const double *want, size_t len);

/* runs the blocking form (nb 0) or the nonblocking one and MPI_Wait */
#define CC_CALL(nb, blocking, nonblocking)              \
    do {                                                \
        if (nb) {                                       \
            MPI_Request req_;                           \
            nonblocking;                                \
            MPI_Wait(&req_, MPI_STATUS_IGNORE);         \
        } else {                                        \
            blocking;                                   \
        }                                               \
    } while (0)
#define CC_REQ (&req_)

long cc_run_move(MPI_Comm comm, int n);     /* coll_move.c */
long cc_run_reduce(MPI_Comm comm, int n);   /* coll_reduce.c */
long cc_run_neighbor(MPI_Comm comm, int n); /* coll_neighbor.c */
long cc_p2p_vector(MPI_Comm comm, int n);   /* coll_p2p.c */
long cc_persistent(MPI_Comm comm, int n);   /* coll_persist.c */
long cc_run_inter(int n);                   /* coll_inter.c: world's halves */

static inline long cc_run_all(MPI_Comm comm, int n)
{
    return cc_run_move(comm, n) + cc_run_reduce(comm, n) + cc_run_neighbor(comm, n);
}

#endif
