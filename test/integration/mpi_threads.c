/* mpi_threads: MPI_THREAD_MULTIPLE through pml ucx and gdrpipe. Every rank
 * runs 4 threads, each on a communicator of its own, exchanging host and
 * device messages of every size class (empty, eager, rendezvous, large) with
 * the same thread of its partner rank (rank ^ 1), every message checked;
 * meanwhile another thread allocates, fills and frees device buffers without
 * pause, so gdrpipe's allocation hooks, UCX's memory-type cache and the
 * pinned-region caches change under the transfers. `-d cuda`: every other
 * buffer in device memory; `-d host`: none. Ends with "N checks, M failed";
 * exit status 77 when MPI gives less than MPI_THREAD_MULTIPLE. */
#include "devmem.h"

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define ROUNDS   12
#define MAXLEN   (1 << 20)

static const size_t k_sizes[] = {0, 1, 100, 8000, 20000, 300000, MAXLEN};
#define NSIZES (sizeof(k_sizes) / sizeof(k_sizes[0]))

static int g_rank, g_size, g_cuda;
static MPI_Comm g_comm[NTHREADS];
static volatile int g_stop;
static long g_checks[NTHREADS], g_fails[NTHREADS];
static long g_churn_ops, g_churn_fails;

static unsigned char pattern(int rank, int t, int round, size_t size, size_t i)
{
    return (unsigned char)(rank * 131 + t * 31 + round * 7 + size * 3 + i);
}

typedef struct {
    int t;
} worker_arg_t;

static int fill(char *p, int dev, const char *host, size_t n)
{
    if (!dev) {
        memcpy(p, host, n);
        return 0;
    }
    return n ? gp_devmem_htod(p, host, n) : 0;
}

static int fetch(char *host, const char *p, int dev, size_t n)
{
    if (!dev) {
        memcpy(host, p, n);
        return 0;
    }
    return n ? gp_devmem_dtoh(host, p, n) : 0;
}

static void *worker(void *argp)
{
    const int t    = ((worker_arg_t *)argp)->t;
    const int peer = g_rank ^ 1;
    char *host_s   = malloc(MAXLEN), *host_r = malloc(MAXLEN), *expect = malloc(MAXLEN);
    char *bufs[2][2]; /* [device?][send/recv] */
    int d, k;

    if (g_cuda && gp_devmem_thread_init() != 0) {
        ++g_fails[t];
        return NULL;
    }
    for (d = 0; d < 2; ++d) {
        for (k = 0; k < 2; ++k) {
            bufs[d][k] = (d && g_cuda) ? gp_devmem_alloc(MAXLEN) : malloc(MAXLEN);
        }
    }
    for (int round = 0; round < ROUNDS; ++round) {
        for (size_t si = 0; si < NSIZES; ++si) {
            const size_t n   = k_sizes[si];
            const int sdev   = g_cuda && ((round + t + (int)si) & 1);
            const int rdev   = g_cuda && ((round + t + (int)si + g_rank) % 3 != 0);
            char *sbuf       = bufs[sdev][0];
            char *rbuf       = bufs[rdev][1];
            MPI_Request req[2];

            for (size_t i = 0; i < n; ++i) {
                host_s[i] = (char)pattern(g_rank, t, round, n, i);
                expect[i] = (char)pattern(peer, t, round, n, i);
            }
            if (fill(sbuf, sdev, host_s, n) != 0) {
                ++g_fails[t];
                continue;
            }
            MPI_Irecv(rbuf, (int)n, MPI_BYTE, peer, round, g_comm[t], &req[0]);
            MPI_Isend(sbuf, (int)n, MPI_BYTE, peer, round, g_comm[t], &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            ++g_checks[t];
            if (fetch(host_r, rbuf, rdev, n) != 0 || memcmp(host_r, expect, n) != 0) {
                ++g_fails[t];
                fprintf(stderr, "mpi_threads: rank %d thread %d round %d: %zu bytes "
                        "(%s -> %s) differ\n", g_rank, t, round, n,
                        sdev ? "device" : "host", rdev ? "device" : "host");
            }
        }
    }
    for (d = 0; d < 2; ++d) {
        for (k = 0; k < 2; ++k) {
            if (d && g_cuda) {
                gp_devmem_free(bufs[d][k]);
            } else {
                free(bufs[d][k]);
            }
        }
    }
    free(host_s);
    free(host_r);
    free(expect);
    return NULL;
}

/* allocation, use and free of device memory next to the transfers */
static void *churn(void *unused)
{
    static const size_t sizes[] = {4096, 65536, 1 << 20, 3 << 20};
    unsigned i = 0;

    (void)unused;
    if (gp_devmem_thread_init() != 0) {
        ++g_churn_fails;
        return NULL;
    }
    while (!g_stop) {
        const size_t n = sizes[i++ % 4];
        char *p        = gp_devmem_alloc(n);
        if (p == NULL || gp_devmem_memset(p, (uint8_t)i, n) != 0) {
            ++g_churn_fails;
        }
        gp_devmem_free(p);
        ++g_churn_ops;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[NTHREADS], ch;
    worker_arg_t args[NTHREADS];
    long checks = 0, fails = 0, all[2];
    int provided;

    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
            g_cuda = strcmp(argv[++i], "cuda") == 0;
        }
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (provided < MPI_THREAD_MULTIPLE || (g_size & 1)) {
        if (g_rank == 0) {
            fprintf(stderr, "mpi_threads: needs MPI_THREAD_MULTIPLE (got %d) and an even "
                    "number of ranks (%d)\n", provided, g_size);
        }
        MPI_Finalize();
        return 77;
    }
    if (g_cuda && gp_devmem_init(-1, -1) != 0) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int t = 0; t < NTHREADS; ++t) {
        MPI_Comm_dup(MPI_COMM_WORLD, &g_comm[t]);
    }
    if (g_cuda) {
        pthread_create(&ch, NULL, churn, NULL);
    }
    for (int t = 0; t < NTHREADS; ++t) {
        args[t].t = t;
        pthread_create(&th[t], NULL, worker, &args[t]);
    }
    for (int t = 0; t < NTHREADS; ++t) {
        pthread_join(th[t], NULL);
        checks += g_checks[t];
        fails += g_fails[t];
    }
    g_stop = 1;
    if (g_cuda) {
        pthread_join(ch, NULL);
        fails += g_churn_fails;
    }
    for (int t = 0; t < NTHREADS; ++t) {
        MPI_Comm_free(&g_comm[t]);
    }
    all[0] = checks;
    all[1] = fails;
    MPI_Allreduce(MPI_IN_PLACE, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("mpi_threads: %d ranks x %d threads, %ld device allocations beside: "
               "%ld checks, %ld failed\n", g_size, NTHREADS, g_churn_ops, all[0], all[1]);
    }
    if (g_cuda) {
        gp_devmem_fini();
    }
    MPI_Finalize();
    return all[1] == 0 && all[0] == (long)g_size * NTHREADS * ROUNDS * (long)NSIZES ? 0 : 1;
}
