/* gdrpipe_allreduce_bound: MPI_Allreduce on device buffers against the bound
 * "the same call on host buffers plus the two copies" (to the host before,
 * back to the device after), all three timed in the same processes, their
 * runs interleaved.
 *
 *   gdrpipe_allreduce_bound [-m MIN:MAX] [-i ITERS] [-I ITERS_LARGE]
 *                           [-r REPS] [-G DEVICE]
 *
 * MPI_DOUBLE, MPI_SUM, every power of two from MIN to MAX bytes (default
 * 8:67108864). Each rep times ITERS calls (ITERS_LARGE above 1 MiB) of each
 * kind; a kind's figure is the median over REPS (default 5) of the slowest
 * rank's mean. Rows: size, then in µs host (pageable buffers), pinned (the
 * same on page-locked buffers), copies, host + copies, by-hand (copy in,
 * pinned, copy out) and device, and device / (host + copies). The device
 * result is checked once per size. */
#include "devmem.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* host: pageable buffers; pinned: the same on page-locked buffers; copies:
 * device to pinned and back; by-hand: the copy in, pinned, the copy out (what
 * an application staging for itself runs); device: device buffers */
enum { K_HOST, K_PINNED, K_COPIES, K_BYHAND, K_DEVICE, K_N };

typedef struct {
    size_t min, max;
    int iters, iters_large, reps, device;
} opts_t;

static int parse(int argc, char **argv, opts_t *o)
{
    int c;
    *o = (opts_t){8, (size_t)64 << 20, 200, 20, 5, -1};
    while ((c = getopt(argc, argv, "m:i:I:r:G:")) != -1) {
        switch (c) {
        case 'm':
            if (sscanf(optarg, "%zu:%zu", &o->min, &o->max) != 2) {
                return -1;
            }
            break;
        case 'i': o->iters = atoi(optarg); break;
        case 'I': o->iters_large = atoi(optarg); break;
        case 'r': o->reps = atoi(optarg); break;
        case 'G': o->device = atoi(optarg); break;
        default: return -1;
        }
    }
    if (o->min < 8 || o->max < o->min || o->iters < 1 || o->iters_large < 1 ||
        o->reps < 1 || o->reps > 99) {
        return -1;
    }
    return 0;
}

typedef struct {
    double *hs, *hr; /* pageable host buffers, as an application has them */
    void *pin, *pin2; /* pinned buffers: the copies' and by-hand's */
    void *ds, *dr;   /* device buffers */
} bufs_t;

/* one timed call of kind k; returns nonzero on a failure */
static int one(int k, const bufs_t *b, size_t size)
{
    int n = (int)(size / sizeof(double));
    switch (k) {
    case K_HOST:
        return MPI_Allreduce(b->hs, b->hr, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case K_PINNED:
        return MPI_Allreduce(b->pin, b->pin2, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case K_COPIES:
        return gp_devmem_dtoh(b->pin, b->ds, size) || gp_devmem_htod(b->dr, b->pin, size);
    case K_BYHAND:
        return gp_devmem_dtoh(b->pin, b->ds, size) ||
               MPI_Allreduce(b->pin, b->pin2, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) ||
               gp_devmem_htod(b->dr, b->pin2, size);
    default:
        return MPI_Allreduce(b->ds, b->dr, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
}

/* the slowest rank's mean time of `iters` calls, in µs */
static double timed(int k, const bufs_t *b, size_t size, int iters)
{
    int bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        bad |= one(k, b, size);
    }
    double us = (MPI_Wtime() - t0) * 1e6 / iters, worst;
    MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (bad) {
        fprintf(stderr, "allreduce_bound: a call of kind %d failed at %zu bytes\n", k, size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return worst;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* every element of the device result must be the sum over ranks of rank + 1 */
static long check(const bufs_t *b, size_t size, int nranks)
{
    size_t n = size / sizeof(double);
    double want = (double)nranks * (nranks + 1) / 2;
    long bad = 0, all = 0;
    if (gp_devmem_dtoh(b->hr, b->dr, size) != 0) {
        bad = (long)n;
    } else {
        for (size_t i = 0; i < n; i++) {
            bad += b->hr[i] != want;
        }
    }
    MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

int main(int argc, char **argv)
{
    opts_t o;
    int rank, nranks, rc = 0;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: %s [-m MIN:MAX] [-i ITERS] [-I ITERS_LARGE] [-r REPS 1-99] "
                        "[-G DEVICE]\n", argv[0]);
        return 1;
    }
    if (gp_devmem_init(o.device, -1) != 0) {
        return 1;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    bufs_t b = {malloc(o.max), malloc(o.max), gp_devmem_host_alloc(o.max),
                gp_devmem_host_alloc(o.max), gp_devmem_alloc(o.max), gp_devmem_alloc(o.max)};
    if (!b.hs || !b.hr || !b.pin || !b.pin2 || !b.ds || !b.dr) {
        fprintf(stderr, "allreduce_bound: cannot allocate 2 x %zu bytes\n", o.max);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < o.max / sizeof(double); i++) {
        b.hs[i] = rank + 1;
    }
    if (gp_devmem_htod(b.ds, b.hs, o.max) != 0) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        printf("# gdrpipe allreduce bound: MPI_Allreduce, MPI_DOUBLE, MPI_SUM, %d ranks, "
               "median of %d reps (us)\n", nranks, o.reps);
        printf("%-10s %10s %10s %10s %12s %10s %10s %8s\n", "# Size", "host", "pinned",
               "copies", "host+copies", "by-hand", "device", "dev/bnd");
    }
    for (size_t size = o.min; size <= o.max; size *= 2) {
        int iters = size > ((size_t)1 << 20) ? o.iters_large : o.iters;
        double t[K_N][99];
        for (int k = 0; k < K_N; k++) {
            timed(k, &b, size, iters > 10 ? iters / 10 : 1); /* warm-up */
        }
        for (int r = 0; r < o.reps; r++) {
            for (int k = 0; k < K_N; k++) {
                t[k][r] = timed(k, &b, size, iters);
            }
        }
        long bad = check(&b, size, nranks);
        double med[K_N];
        for (int k = 0; k < K_N; k++) {
            qsort(t[k], (size_t)o.reps, sizeof(double), cmp);
            med[k] = t[k][o.reps / 2];
        }
        double bound = med[K_HOST] + med[K_COPIES];
        if (rank == 0) {
            printf("%-10zu %10.2f %10.2f %10.2f %12.2f %10.2f %10.2f %8.3f%s\n", size,
                   med[K_HOST], med[K_PINNED], med[K_COPIES], bound, med[K_BYHAND],
                   med[K_DEVICE], med[K_DEVICE] / bound,
                   bad ? "  WRONG RESULT" : "");
            fflush(stdout);
        }
        rc |= bad != 0;
    }
    gp_devmem_free(b.ds);
    gp_devmem_free(b.dr);
    gp_devmem_host_free(b.pin);
    gp_devmem_host_free(b.pin2);
    free(b.hs);
    free(b.hr);
    MPI_Finalize();
    return rc;
}
