/* mpi_tags: MPI's matching rules on device buffers through pml ucx. One
 * stream of sends mixes host and device buffers of every size class (empty,
 * inline, eager, rendezvous) with receive buffers of the other kind, and the
 * order is checked message by message: receives posted before the sends
 * (expected) and after them (unexpected), wildcard tag and source, probe,
 * matched probe, cancel, synchronous sends, truncation; with 4 ranks, every
 * rank sending to every other one at once into wildcard-source receives.
 * `-d cuda` puts every other buffer in device memory; `-d host` none. */
#include "devmem.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank, g_size, g_cuda;
static long g_checks, g_fails;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        ++g_checks;                                                           \
        if (!(cond)) {                                                        \
            ++g_fails;                                                        \
            fprintf(stderr, "mpi_tags: rank %d: ", g_rank);                   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
        }                                                                     \
    } while (0)

static const size_t k_sizes[] = {0, 1, 63, 1000, 4096, 8191, 8192, 20000, 65536,
                                 1 << 20};
#define NSIZES (sizeof(k_sizes) / sizeof(k_sizes[0]))
#define NMSG   ((int)(2 * NSIZES)) /* each size from a host and from a device buffer */
#define MAXLEN (1 << 20)

typedef struct {
    char *p;
    int dev;
} buf_t;

static buf_t buf_alloc(int dev)
{
    buf_t b = {NULL, dev && g_cuda};
    b.p = b.dev ? gp_devmem_alloc(MAXLEN) : malloc(MAXLEN);
    if (b.p == NULL) {
        fprintf(stderr, "mpi_tags: allocation failed\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return b;
}

static void buf_free(buf_t b)
{
    if (b.dev) {
        gp_devmem_free(b.p);
    } else {
        free(b.p);
    }
}

static uint8_t pattern(unsigned seed, size_t i)
{
    return (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1u);
}

static char g_tmp[MAXLEN];

static void buf_fill(buf_t b, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; ++i) {
        g_tmp[i] = (char)pattern(seed, i);
    }
    if (b.dev) {
        gp_devmem_htod(b.p, g_tmp, n);
    } else {
        memcpy(b.p, g_tmp, n);
    }
}

/* 1 when the first n bytes carry message `seed` */
static int buf_holds(buf_t b, size_t n, unsigned seed)
{
    const char *q = b.p;
    size_t i;
    if (b.dev) {
        gp_devmem_dtoh(g_tmp, b.p, n);
        q = g_tmp;
    }
    for (i = 0; i < n; ++i) {
        if ((uint8_t)q[i] != pattern(seed, i)) {
            return 0;
        }
    }
    return 1;
}

static void buf_clear(buf_t b, size_t n)
{
    if (b.dev) {
        gp_devmem_memset(b.p, 0, n ? n : 1);
    } else {
        memset(b.p, 0, n ? n : 1);
    }
}

/* message k: its size, tag, and the kinds of its send and receive buffers */
static size_t msg_size(int k) { return k_sizes[k % NSIZES]; }
static int msg_tag(int k) { return 10 + k % 3; }
static int msg_send_dev(int k) { return k % 2; }
static int msg_recv_dev(int k) { return (k / 2) % 2 == 0; }

typedef struct {
    buf_t s[2], r[NMSG];
} bufs_t;

static void phase_end(const char *name, long c0, long f0)
{
    long c = g_checks - c0, f = g_fails - f0, all[2] = {c, f}, sum[2] = {0, 0};
    MPI_Reduce(all, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("mpi_tags: phase %-18s %6ld checks, %ld failed\n", name, sum[0], sum[1]);
        fflush(stdout);
    }
}

/* The stream between the pair: the sender sends NMSG messages (send buffers
 * filled per message), the receiver receives them in order. expected: the
 * receives are posted first; wildcard: MPI_ANY_TAG / MPI_ANY_SOURCE. */
static void stream(bufs_t *b, MPI_Comm pair, int sender, int expected, int wildcard,
                   int sync)
{
    MPI_Request rq[NMSG];
    MPI_Status st[NMSG];
    buf_t sb[NMSG];
    int k, me, peer, n;

    MPI_Comm_rank(pair, &me);
    peer = 1 - me;
    if (me == sender) {
        /* one buffer per message in flight at once: sb[k] */
        for (k = 0; k < NMSG; ++k) {
            sb[k] = buf_alloc(msg_send_dev(k));
            buf_fill(sb[k], msg_size(k), (unsigned)k);
        }
        if (expected) {
            MPI_Barrier(pair);
        }
        for (k = 0; k < NMSG; ++k) {
            if (sync) {
                MPI_Issend(sb[k].p, (int)msg_size(k), MPI_CHAR, peer, msg_tag(k), pair, &rq[k]);
            } else {
                MPI_Isend(sb[k].p, (int)msg_size(k), MPI_CHAR, peer, msg_tag(k), pair, &rq[k]);
            }
        }
        if (!expected) {
            MPI_Barrier(pair);
        }
        CHECK(MPI_Waitall(NMSG, rq, st) == MPI_SUCCESS, "sends failed");
        for (k = 0; k < NMSG; ++k) {
            buf_free(sb[k]);
        }
        return;
    }
    if (!expected) {
        MPI_Barrier(pair); /* every send is posted before any receive */
    }
    for (k = 0; k < NMSG; ++k) {
        buf_clear(b->r[k], msg_size(k));
        MPI_Irecv(b->r[k].p, (int)msg_size(k), MPI_CHAR,
                  (wildcard && k % 2) ? MPI_ANY_SOURCE : peer,
                  wildcard ? MPI_ANY_TAG : msg_tag(k), pair, &rq[k]);
    }
    if (expected) {
        MPI_Barrier(pair);
    }
    if (MPI_Waitall(NMSG, rq, st) != MPI_SUCCESS) {
        for (k = 0; k < NMSG; ++k) {
            CHECK(st[k].MPI_ERROR == MPI_SUCCESS, "message %d (%zu bytes): error %d", k,
                  msg_size(k), st[k].MPI_ERROR);
        }
        return;
    }
    for (k = 0; k < NMSG; ++k) {
        MPI_Get_count(&st[k], MPI_CHAR, &n);
        CHECK(n == (int)msg_size(k), "message %d: %d bytes, expected %zu", k, n, msg_size(k));
        CHECK(st[k].MPI_TAG == msg_tag(k) && st[k].MPI_SOURCE == peer,
              "message %d: tag %d source %d, expected %d %d", k, st[k].MPI_TAG,
              st[k].MPI_SOURCE, msg_tag(k), peer);
        CHECK(buf_holds(b->r[k], msg_size(k), (unsigned)k),
              "message %d (%zu bytes, %s -> %s): wrong data or order", k, msg_size(k),
              msg_send_dev(k) ? "device" : "host", b->r[k].dev ? "device" : "host");
    }
}

/* probe / mprobe / iprobe before receiving into a device buffer */
static void probes(bufs_t *b, MPI_Comm pair)
{
    MPI_Status st;
    MPI_Message msg;
    int me, k, n, flag;

    MPI_Comm_rank(pair, &me);
    for (k = 0; k < NMSG; ++k) {
        if (me == 0) {
            buf_fill(b->s[msg_send_dev(k)], msg_size(k), 1000u + k);
            MPI_Send(b->s[msg_send_dev(k)].p, (int)msg_size(k), MPI_CHAR, 1, msg_tag(k), pair);
            continue;
        }
        buf_clear(b->r[k], msg_size(k));
        switch (k % 3) {
        case 0:
            MPI_Probe(0, MPI_ANY_TAG, pair, &st);
            MPI_Get_count(&st, MPI_CHAR, &n);
            CHECK(n == (int)msg_size(k) && st.MPI_TAG == msg_tag(k),
                  "probe %d: %d bytes tag %d", k, n, st.MPI_TAG);
            MPI_Recv(b->r[k].p, n, MPI_CHAR, 0, st.MPI_TAG, pair, &st);
            break;
        case 1:
            MPI_Mprobe(0, msg_tag(k), pair, &msg, &st);
            MPI_Get_count(&st, MPI_CHAR, &n);
            CHECK(n == (int)msg_size(k), "mprobe %d: %d bytes", k, n);
            MPI_Mrecv(b->r[k].p, n, MPI_CHAR, &msg, &st);
            break;
        default:
            flag = 0;
            while (!flag) {
                MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, pair, &flag, &st);
            }
            MPI_Get_count(&st, MPI_CHAR, &n);
            CHECK(n == (int)msg_size(k), "iprobe %d: %d bytes", k, n);
            MPI_Recv(b->r[k].p, n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, pair, &st);
            break;
        }
        MPI_Get_count(&st, MPI_CHAR, &n);
        CHECK(n == (int)msg_size(k) && buf_holds(b->r[k], msg_size(k), 1000u + k),
              "probed message %d (%zu bytes): wrong data", k, msg_size(k));
    }
}

/* a device receive that nothing matches is cancelled; then a message of
 * the same tag still arrives where it should */
static void cancel(bufs_t *b, MPI_Comm pair)
{
    MPI_Request rq;
    MPI_Status st;
    int me, flag = 0;

    MPI_Comm_rank(pair, &me);
    if (me == 1) {
        MPI_Irecv(b->r[1].p, 4096, MPI_CHAR, 0, 77, pair, &rq);
        MPI_Cancel(&rq);
        MPI_Wait(&rq, &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag, "the receive was not cancelled");
    }
    MPI_Barrier(pair);
    if (me == 0) {
        buf_fill(b->s[1], 4096, 77);
        MPI_Send(b->s[1].p, 4096, MPI_CHAR, 1, 77, pair);
    } else {
        buf_clear(b->r[0], 4096);
        MPI_Recv(b->r[0].p, 4096, MPI_CHAR, 0, 77, pair, &st);
        CHECK(buf_holds(b->r[0], 4096, 77), "message after the cancel: wrong data");
    }
}

/* a message longer than its receive buffer: MPI_ERR_TRUNCATE, and the
 * stream goes on */
static void truncation(bufs_t *b, MPI_Comm pair)
{
    static const size_t sizes[][2] = {{1000, 500}, {65536, 4096}};
    MPI_Status st;
    int me, i, rc, cls;

    MPI_Comm_rank(pair, &me);
    for (i = 0; i < 2; ++i) {
        if (me == 0) {
            buf_fill(b->s[1], sizes[i][0], 5u + i);
            MPI_Send(b->s[1].p, (int)sizes[i][0], MPI_CHAR, 1, 90 + i, pair);
        } else {
            rc = MPI_Recv(b->r[0].p, (int)sizes[i][1], MPI_CHAR, 0, 90 + i, pair, &st);
            cls = MPI_SUCCESS;
            if (rc != MPI_SUCCESS) {
                MPI_Error_class(rc, &cls);
            }
            CHECK(cls == MPI_ERR_TRUNCATE, "%zu bytes into %zu: error class %d, expected "
                  "MPI_ERR_TRUNCATE", sizes[i][0], sizes[i][1], cls);
        }
    }
    cancel(b, pair); /* and a regular message right after */
}

/* every rank sends NSIZES device messages to every other rank at once; the
 * receives take any source: per source, the messages arrive in order */
static void all_to_all(void)
{
    MPI_Request *rq = calloc((size_t)g_size * 2 * NSIZES, sizeof(*rq));
    buf_t *sb = calloc((size_t)g_size * NSIZES, sizeof(*sb));
    buf_t r = buf_alloc(1);
    int *next = calloc((size_t)g_size, sizeof(int));
    int p, k, nr = 0, n, i;
    MPI_Status st;

    for (p = 0; p < g_size; ++p) {
        if (p == g_rank) continue;
        for (k = 0; k < (int)NSIZES; ++k) {
            i = p * (int)NSIZES + k;
            sb[i] = buf_alloc(k % 2);
            buf_fill(sb[i], 4096, (unsigned)(g_rank * 100 + k));
            MPI_Isend(sb[i].p, 4096, MPI_CHAR, p, 55, MPI_COMM_WORLD, &rq[nr++]);
        }
    }
    for (i = 0; i < (g_size - 1) * (int)NSIZES; ++i) {
        MPI_Recv(r.p, 4096, MPI_CHAR, MPI_ANY_SOURCE, 55, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_CHAR, &n);
        p = st.MPI_SOURCE;
        CHECK(n == 4096 && p >= 0 && p < g_size && p != g_rank, "message from %d: %d bytes",
              p, n);
        if (p >= 0 && p < g_size) {
            CHECK(buf_holds(r, 4096, (unsigned)(p * 100 + next[p])),
                  "message %d from rank %d: wrong data or order", next[p], p);
            ++next[p];
        }
    }
    MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
    for (p = 0; p < g_size; ++p) {
        if (p == g_rank) continue;
        for (k = 0; k < (int)NSIZES; ++k) {
            buf_free(sb[p * (int)NSIZES + k]);
        }
    }
    buf_free(r);
    free(next);
    free(sb);
    free(rq);
}

int main(int argc, char **argv)
{
    bufs_t b;
    MPI_Comm pair;
    long c0, f0, fails = 0;
    int k, i;

    g_cuda = (argc > 2) && (strcmp(argv[1], "-d") == 0) && (strcmp(argv[2], "cuda") == 0);
    if (g_cuda && gp_devmem_init(-1, -1) != 0) { /* like OSU: CUDA before MPI_Init */
        return 1;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (g_size % 2 != 0) {
        fprintf(stderr, "mpi_tags: needs an even number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_split(MPI_COMM_WORLD, g_rank / 2, g_rank % 2, &pair);
    MPI_Comm_set_errhandler(pair, MPI_ERRORS_RETURN); /* failures are reported per message */
    b.s[0] = buf_alloc(0);
    b.s[1] = buf_alloc(1);
    for (k = 0; k < NMSG; ++k) {
        b.r[k] = buf_alloc(msg_recv_dev(k));
    }

    static const struct {
        const char *name;
        int expected, wildcard, sync;
    } streams[] = {
        {"expected", 1, 0, 0},  {"unexpected", 0, 0, 0}, {"wildcard-expected", 1, 1, 0},
        {"wildcard-unexp", 0, 1, 0}, {"ssend-expected", 1, 0, 1}, {"ssend-unexpected", 0, 0, 1},
    };
    for (i = 0; i < (int)(sizeof(streams) / sizeof(streams[0])); ++i) {
        c0 = g_checks;
        f0 = g_fails;
        stream(&b, pair, i % 2, streams[i].expected, streams[i].wildcard, streams[i].sync);
        phase_end(streams[i].name, c0, f0);
    }
    c0 = g_checks; f0 = g_fails;
    probes(&b, pair);
    phase_end("probe-mprobe", c0, f0);
    c0 = g_checks; f0 = g_fails;
    cancel(&b, pair);
    phase_end("cancel", c0, f0);
    c0 = g_checks; f0 = g_fails;
    truncation(&b, pair);
    phase_end("truncate", c0, f0);
    c0 = g_checks; f0 = g_fails;
    all_to_all();
    phase_end("all-to-all-any-src", c0, f0);

    for (k = 0; k < NMSG; ++k) {
        buf_free(b.r[k]);
    }
    buf_free(b.s[0]);
    buf_free(b.s[1]);
    MPI_Allreduce(&g_fails, &fails, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("mpi_tags: %s\n", fails == 0 ? "all checks passed" : "FAILED");
    }
    MPI_Comm_free(&pair);
    MPI_Finalize();
    if (g_cuda) {
        gp_devmem_fini();
    }
    return fails != 0;
}
