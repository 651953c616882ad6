/* mpi_verify: data verification over MPI between pairs of ranks (see
 * verify_core.h for the schedule): ranks 2k and 2k+1 form pair k, and all
 * pairs run at once, each on a communicator of its own (with 4 ranks on 2
 * GPUs: two pairs across the GPUs, so two processes per direction calibrate
 * and share the crossover of one GPU pair). Contiguous MPI_CHAR only, so Open
 * MPI's pml ucx passes the buffer pointers straight to UCP. */
#include "devmem.h"
#include "verify_core.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    MPI_Comm comm; /* the pair's */
    int peer;      /* the other rank of the pair, in comm */
} m_pair_t;

static int m_send(void *ctx, const void *buf, size_t len, uint32_t tag)
{
    const m_pair_t *p = ctx;
    return MPI_Send(buf, (int)len, MPI_CHAR, p->peer, (int)tag, p->comm) != MPI_SUCCESS;
}

static int m_recv(void *ctx, void *buf, size_t len, uint32_t tag)
{
    MPI_Status st;
    int n = -1;
    const m_pair_t *p = ctx;
    if (MPI_Recv(buf, (int)len, MPI_CHAR, p->peer, (int)tag, p->comm, &st) != MPI_SUCCESS) {
        return -1;
    }
    MPI_Get_count(&st, MPI_CHAR, &n);
    return n == (int)len ? 0 : -1;
}

typedef struct {
    MPI_Request r;
    int expect; /* receive length, -1 for sends */
} m_req_t;

static int m_post(void *ctx, void *buf, size_t len, uint32_t tag, void **req,
                  int is_recv)
{
    const m_pair_t *p = ctx;
    m_req_t *q = malloc(sizeof(*q));
    if (q == NULL) {
        return -1;
    }
    q->expect = is_recv ? (int)len : -1;
    int rc = is_recv ? MPI_Irecv(buf, (int)len, MPI_CHAR, p->peer, (int)tag, p->comm, &q->r)
                     : MPI_Isend(buf, (int)len, MPI_CHAR, p->peer, (int)tag, p->comm, &q->r);
    if (rc != MPI_SUCCESS) {
        free(q);
        return -1;
    }
    *req = q;
    return 0;
}

static int m_isend(void *ctx, const void *buf, size_t len, uint32_t tag, void **req)
{
    return m_post(ctx, (void *)buf, len, tag, req, 0);
}

static int m_irecv(void *ctx, void *buf, size_t len, uint32_t tag, void **req)
{
    return m_post(ctx, buf, len, tag, req, 1);
}

static int m_wait(void *ctx, void *req)
{
    m_req_t *q = req;
    MPI_Status st;
    int n = -1, rc = MPI_Wait(&q->r, &st) != MPI_SUCCESS;
    (void)ctx;
    if (!rc && q->expect >= 0) {
        MPI_Get_count(&st, MPI_CHAR, &n);
        rc = n != q->expect;
    }
    free(q);
    return rc ? -1 : 0;
}

static int m_barrier(void *ctx)
{
    const m_pair_t *p = ctx;
    return MPI_Barrier(p->comm) != MPI_SUCCESS;
}

static long m_sum(void *ctx, long v)
{
    const m_pair_t *p = ctx;
    long s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, p->comm);
    return s;
}

static void m_abort(void *ctx)
{
    (void)ctx;
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

int main(int argc, char **argv)
{
    vx_t v;
    int prc = vx_parse(&v, "mpi_verify", argc, argv, NULL, NULL, NULL);
    if (prc != 0) {
        return prc > 0 ? 0 : 1;
    }
    /* like OSU: CUDA before MPI_Init (none in a rank without a GPU) */
    const int cuda_here = v.o.mem == GP_MEM_CUDA && !gp_mem_device_as_host();
    if (cuda_here && gp_devmem_init(v.o.device, -1) != 0) {
        return 1;
    }
    if (v.o.alloc_before && vx_alloc(&v) != 0) {
        fprintf(stderr, "mpi_verify: allocation before MPI_Init failed\n");
        return 1;
    }
    MPI_Init(&argc, &argv);
    int rank = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n < 2 || n % 2 != 0) {
        if (rank == 0) {
            fprintf(stderr, "mpi_verify: needs an even number of ranks, got %d\n", n);
        }
        MPI_Finalize();
        return 1;
    }
    m_pair_t pair = {.comm = MPI_COMM_NULL, .peer = 1 - rank % 2};
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank % 2, &pair.comm);
    int ok = v.o.alloc_before || vx_alloc(&v) == 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        fprintf(stderr, "mpi_verify: rank %d: allocation failed\n", rank);
        MPI_Comm_free(&pair.comm);
        MPI_Finalize();
        return 1;
    }
    if (rank == 0) {
        printf("mpi_verify: %d pair(s) of ranks, buffers allocated %s MPI_Init", n / 2,
               v.o.alloc_before ? "before" : "after");
        if (cuda_here) {
            printf(", CUDA device %d of %d", gp_devmem_device(), gp_devmem_count());
        }
        printf("\n");
    }
    vx_comm_t c = {.ctx = &pair, .rank = rank % 2, .pair = rank / 2, .send = m_send, .recv = m_recv,
                   .isend = m_isend, .irecv = m_irecv, .wait = m_wait,
                   .barrier = m_barrier, .sum = m_sum, .abort = m_abort};
    long fails = vx_run(&v, &c);
    vx_free(&v);
    /* every pair's verdict (vx_run returns the pair's failed checks on both
     * of its ranks, or -1 when the transport failed): a pair that failed
     * fails the job on every rank */
    int bad = fails != 0, any_bad = 0, pairs_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int pair_bad = rank % 2 == 0 && bad;
    MPI_Reduce(&pair_bad, &pairs_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && n > 2) {
        printf("mpi_verify: %d of %d pairs failed\n", pairs_bad, n / 2);
    }
    MPI_Comm_free(&pair.comm);
    MPI_Finalize();
    if (cuda_here) {
        gp_devmem_fini();
    }
    return any_bad != 0;
}
