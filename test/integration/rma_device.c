/* rma_device [--fatal]: one-sided communication and device memory through
 * gdrpipe-run (the interposer's ompi_rma.c), any number of ranks.
 *
 * Default: with MPI_ERRORS_RETURN, every refusal is checked:
 *   - MPI_Win_create whose memory is device memory on rank 1 only fails with
 *     MPI_ERR_BASE on every rank (MPI_WIN_NULL), and MPI_Win_attach of
 *     device memory to a dynamic window fails with MPI_ERR_BASE;
 *   - on a window of host memory, each one-sided operation with a device
 *     origin, result or compare buffer fails with MPI_ERR_BUFFER (request
 *     calls leave MPI_REQUEST_NULL) and moves nothing;
 *   - the same window then works with host buffers: put, accumulate, get,
 *     fetch-and-op, compare-and-swap, rput/rget, get-accumulate to the next
 *     rank, every value checked; a dynamic window takes host memory, and a
 *     shared window shows each rank the next one's value.
 * --fatal: the default error handlers and a window of device memory on
 * rank 1: the job must end (with the interposer's message), not fault;
 * without the interposer, rank 0's put into that window faults in Open MPI.
 * --device-windows (Open MPI 5 with osc ucx, where UCX moves the window's
 * memory): the window of device memory on rank 1 is made, and puts and gets
 * with device and host buffers into and out of it move every value;
 * accumulates from host buffers work on it, atomics (fetch-and-op,
 * compare-and-swap) are refused with MPI_ERR_UNSUPPORTED_OPERATION, an
 * accumulate from device memory with MPI_ERR_BUFFER, MPI_Win_attach of
 * device memory with MPI_ERR_BASE; then the host windows as above. With
 * --fatal: rank 0's fetch-and-op on that window ends the job.
 * Exit 0 when every check passed. */
#include "devmem.h"

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 256 };

static int rank, nranks, fails;

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "rma_device: rank %d: FAIL: %s\n", rank, what);
        ++fails;
    }
}

static int err_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
    }
    return cls;
}

/* every operation with one device buffer: refused, the window untouched */
static void refused_ops(MPI_Win win, int *dev, int *host, int next)
{
    MPI_Request req = (MPI_Request)0x1;
    int one = 1, out = 0;

    check(err_class(MPI_Put(dev, N, MPI_INT, next, 0, N, MPI_INT, win)) == MPI_ERR_BUFFER,
          "MPI_Put from device memory refused");
    check(err_class(MPI_Get(dev, N, MPI_INT, next, 0, N, MPI_INT, win)) == MPI_ERR_BUFFER,
          "MPI_Get into device memory refused");
    check(err_class(MPI_Accumulate(dev, N, MPI_INT, next, 0, N, MPI_INT, MPI_SUM, win)) ==
              MPI_ERR_BUFFER, "MPI_Accumulate from device memory refused");
    check(err_class(MPI_Get_accumulate(host, N, MPI_INT, dev, N, MPI_INT, next, 0, N, MPI_INT,
                                       MPI_SUM, win)) == MPI_ERR_BUFFER,
          "MPI_Get_accumulate into device memory refused");
    check(err_class(MPI_Fetch_and_op(&one, dev, MPI_INT, next, 0, MPI_SUM, win)) ==
              MPI_ERR_BUFFER, "MPI_Fetch_and_op into device memory refused");
    check(err_class(MPI_Compare_and_swap(&one, dev, &out, MPI_INT, next, 0, win)) ==
              MPI_ERR_BUFFER, "MPI_Compare_and_swap with a device compare buffer refused");
    check(err_class(MPI_Rput(dev, N, MPI_INT, next, 0, N, MPI_INT, win, &req)) ==
              MPI_ERR_BUFFER && req == MPI_REQUEST_NULL, "MPI_Rput from device memory refused");
    req = (MPI_Request)0x1;
    check(err_class(MPI_Rget(dev, N, MPI_INT, next, 0, N, MPI_INT, win, &req)) ==
              MPI_ERR_BUFFER && req == MPI_REQUEST_NULL, "MPI_Rget into device memory refused");
    req = (MPI_Request)0x1;
    check(err_class(MPI_Raccumulate(dev, N, MPI_INT, next, 0, N, MPI_INT, MPI_SUM, win,
                                    &req)) == MPI_ERR_BUFFER && req == MPI_REQUEST_NULL,
          "MPI_Raccumulate from device memory refused");
    req = (MPI_Request)0x1;
    check(err_class(MPI_Rget_accumulate(dev, N, MPI_INT, host, N, MPI_INT, next, 0, N, MPI_INT,
                                        MPI_SUM, win, &req)) == MPI_ERR_BUFFER &&
              req == MPI_REQUEST_NULL, "MPI_Rget_accumulate from device memory refused");
}

/* the window of host memory at work: base[0..N) is the target area */
static void host_ops(MPI_Win win, int *base, int next, int prev)
{
    int src[N], got[N], acc[N];
    for (int i = 0; i < N; ++i) {
        src[i] = rank * 1000 + i;
        acc[i] = 1;
    }
    MPI_Win_fence(0, win);
    MPI_Put(src, N, MPI_INT, next, 0, N, MPI_INT, win);
    MPI_Win_fence(0, win);
    int ok = 1;
    for (int i = 0; i < N; ++i) {
        ok &= base[i] == prev * 1000 + i;
    }
    if (!ok) {
        fprintf(stderr, "rma_device: rank %d: window %d %d %d, wanted %d %d %d\n", rank, base[0],
                base[1], base[N - 1], prev * 1000, prev * 1000 + 1, prev * 1000 + N - 1);
    }
    check(ok, "MPI_Put of host memory delivered (fence)");
    /* every rank has read its window before the next epoch writes it */
    MPI_Win_fence(0, win);
    MPI_Accumulate(acc, N, MPI_INT, next, 0, N, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    MPI_Get(got, N, MPI_INT, next, 0, N, MPI_INT, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    ok = 1;
    for (int i = 0; i < N; ++i) {
        ok &= got[i] == rank * 1000 + i + 1;
    }
    check(ok, "MPI_Accumulate then MPI_Get of host memory (fence)");

    /* passive target: atomics and request-based calls */
    int one = 1, old = -1, swap = 7, cmp, was = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win);
    MPI_Fetch_and_op(&one, &old, MPI_INT, next, 0, MPI_SUM, win);
    MPI_Win_flush(next, win);
    cmp = old + 1;
    MPI_Compare_and_swap(&swap, &cmp, &was, MPI_INT, next, 0, win);
    MPI_Win_unlock(next, win);
    check(old == rank * 1000 + 1, "MPI_Fetch_and_op of host memory");
    check(was == rank * 1000 + 2, "MPI_Compare_and_swap of host memory");
    MPI_Barrier(MPI_COMM_WORLD);
    check(base[0] == 7, "the window after compare-and-swap");
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Request req[2];
    int back[N];
    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    MPI_Rput(src, N, MPI_INT, next, 0, N, MPI_INT, win, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Win_flush(next, win);
    MPI_Rget(got, N, MPI_INT, next, 0, N, MPI_INT, win, &req[1]);
    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
    MPI_Get_accumulate(acc, N, MPI_INT, back, N, MPI_INT, next, 0, N, MPI_INT, MPI_SUM, win);
    MPI_Win_unlock(next, win);
    ok = 1;
    for (int i = 0; i < N; ++i) {
        ok &= got[i] == rank * 1000 + i && back[i] == rank * 1000 + i;
    }
    check(ok, "MPI_Rput, MPI_Rget and MPI_Get_accumulate of host memory");
    MPI_Barrier(MPI_COMM_WORLD);
    ok = 1;
    for (int i = 0; i < N; ++i) {
        ok &= base[i] == prev * 1000 + i + 1;
    }
    check(ok, "the window after MPI_Get_accumulate");
}

/* this rank's window memory (device on rank 1) read back */
static void window_now(const int *win_mem, int *out)
{
    if (rank == 1) {
        gp_devmem_dtoh(out, win_mem, N * sizeof(int));
    } else {
        memcpy(out, win_mem, N * sizeof(int));
    }
}

/* Open MPI 5 with osc ucx: a window of device memory on rank 1 at work */
static void device_window_ops(int *dev, int *host, int next, int prev)
{
    int *mem = rank == 1 ? dev : host, now[N], src[N], one[N];
    for (int i = 0; i < N; ++i) {
        src[i] = rank * 1000 + i;
        one[i] = 1;
        now[i] = -1;
    }
    if (rank == 1) {
        gp_devmem_htod(dev, now, N * sizeof(int));
    } else {
        memcpy(host, now, N * sizeof(int));
    }
    MPI_Win win = MPI_WIN_NULL;
    check(MPI_Win_create(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                         &win) == MPI_SUCCESS && win != MPI_WIN_NULL,
          "MPI_Win_create with device memory on rank 1");
    if (win == MPI_WIN_NULL) {
        return;
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    /* a device origin: every rank puts its values, from device memory */
    int *odev = gp_devmem_alloc(N * sizeof(int));
    gp_devmem_htod(odev, src, N * sizeof(int));
    MPI_Win_fence(0, win);
    check(MPI_Put(odev, N, MPI_INT, next, 0, N, MPI_INT, win) == MPI_SUCCESS,
          "MPI_Put from device memory");
    MPI_Win_fence(0, win);
    window_now(mem, now);
    int ok = 1;
    for (int i = 0; i < N; ++i) {
        ok &= now[i] == prev * 1000 + i;
    }
    check(ok, "MPI_Put from device memory delivered (fence)");
    /* a host accumulate, then a get into device memory */
    MPI_Win_fence(0, win);
    check(MPI_Accumulate(one, N, MPI_INT, next, 0, N, MPI_INT, MPI_SUM, win) == MPI_SUCCESS,
          "MPI_Accumulate from host memory");
    MPI_Win_fence(0, win);
    check(MPI_Get(odev, N, MPI_INT, next, 0, N, MPI_INT, win) == MPI_SUCCESS,
          "MPI_Get into device memory");
    MPI_Win_fence(0, win);
    int got[N];
    gp_devmem_dtoh(got, odev, N * sizeof(int));
    ok = 1;
    for (int i = 0; i < N; ++i) {
        ok &= got[i] == rank * 1000 + i + 1;
    }
    check(ok, "MPI_Accumulate then MPI_Get into device memory (fence)");
    /* refused: atomics on this window, an accumulate from device memory */
    int o = 1, r = -1, c = 0;
    MPI_Request req = (MPI_Request)0x1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win);
    check(err_class(MPI_Fetch_and_op(&o, &r, MPI_INT, next, 0, MPI_SUM, win)) ==
              MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Fetch_and_op on a device window refused");
    check(err_class(MPI_Compare_and_swap(&o, &c, &r, MPI_INT, next, 0, win)) ==
              MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Compare_and_swap on a device window refused");
    check(err_class(MPI_Accumulate(odev, N, MPI_INT, next, 0, N, MPI_INT, MPI_SUM, win)) ==
              MPI_ERR_BUFFER, "MPI_Accumulate from device memory refused");
    check(err_class(MPI_Raccumulate(odev, N, MPI_INT, next, 0, N, MPI_INT, MPI_SUM, win,
                                    &req)) == MPI_ERR_BUFFER && req == MPI_REQUEST_NULL,
          "MPI_Raccumulate from device memory refused");
    /* request-based put and get with device memory */
    MPI_Request rq[2];
    gp_devmem_htod(odev, src, N * sizeof(int));
    check(MPI_Rput(odev, N, MPI_INT, next, 0, N, MPI_INT, win, &rq[0]) == MPI_SUCCESS,
          "MPI_Rput from device memory");
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Win_flush(next, win);
    int *back = gp_devmem_alloc(N * sizeof(int));
    check(MPI_Rget(back, N, MPI_INT, next, 0, N, MPI_INT, win, &rq[1]) == MPI_SUCCESS,
          "MPI_Rget into device memory");
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    MPI_Win_unlock(next, win);
    gp_devmem_dtoh(got, back, N * sizeof(int));
    ok = 1;
    for (int i = 0; i < N; ++i) {
        ok &= got[i] == rank * 1000 + i;
    }
    check(ok, "MPI_Rput then MPI_Rget of device memory (passive target)");
    MPI_Barrier(MPI_COMM_WORLD);
    window_now(mem, now);
    ok = 1;
    for (int i = 0; i < N; ++i) {
        ok &= now[i] == prev * 1000 + i;
    }
    check(ok, "the window after MPI_Rput");
    MPI_Win_free(&win);
    /* accumulates that osc ucx may turn into atomics: refused too */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "acc_single_intrinsic", "true");
    check(MPI_Win_create(mem, N * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &win) ==
              MPI_SUCCESS, "MPI_Win_create with acc_single_intrinsic");
    MPI_Info_free(&info);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    check(err_class(MPI_Accumulate(one, 1, MPI_INT, next, 0, 1, MPI_INT, MPI_SUM, win)) ==
              MPI_ERR_UNSUPPORTED_OPERATION,
          "MPI_Accumulate on a device window with acc_single_intrinsic refused");
    MPI_Win_unlock(next, win);
    MPI_Win_free(&win);
    gp_devmem_free(back);
    gp_devmem_free(odev);
}

int main(int argc, char **argv)
{
    int fatal = 0, device_windows = 0;
    for (int i = 1; i < argc; ++i) {
        fatal |= strcmp(argv[i], "--fatal") == 0;
        device_windows |= strcmp(argv[i], "--device-windows") == 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (gp_devmem_init(-1, -1) != 0) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int *dev = gp_devmem_alloc(N * sizeof(int));
    int *host = calloc(N, sizeof(int));
    if (dev == NULL || host == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    MPI_Win win;

    if (fatal) {
        /* default handlers: the job ends here (with device windows, at the
         * fetch-and-op) */
        MPI_Win_create(rank == 1 ? (void *)dev : (void *)host, N * sizeof(int), sizeof(int),
                       MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        if (device_windows) {
            int o = 1, r = 0;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
            if (rank == 0) {
                MPI_Fetch_and_op(&o, &r, MPI_INT, 1, 0, MPI_SUM, win);
            }
            MPI_Win_unlock(1, win);
            MPI_Barrier(MPI_COMM_WORLD);
            fprintf(stderr, "rma_device: rank %d: FAIL: a fetch-and-op on a device window "
                            "returned\n", rank);
            MPI_Finalize();
            return 1;
        }
        fprintf(stderr, "rma_device: rank %d: MPI_Win_create of device memory returned\n", rank);
        /* without the interposer: Open MPI writes rank 1's device window */
        int src[N] = {0};
        MPI_Win_fence(0, win);
        if (rank == 0) {
            MPI_Put(src, N, MPI_INT, 1, 0, N, MPI_INT, win);
        }
        MPI_Win_fence(0, win);
        fprintf(stderr, "rma_device: rank %d: FAIL: a put into a device window completed\n",
                rank);
        MPI_Finalize();
        return 1;
    }

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (device_windows) {
        device_window_ops(dev, host, next, prev);
    } else {
        win = (MPI_Win)0x1;
        int rc = MPI_Win_create(rank == 1 ? (void *)dev : (void *)host, N * sizeof(int),
                                sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        check(err_class(rc) == MPI_ERR_BASE && win == MPI_WIN_NULL,
              "MPI_Win_create with device memory on rank 1 refused on every rank");
    }

    MPI_Win dyn = MPI_WIN_NULL;
    int drc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
    /* (Open MPI 5 makes dynamic windows with osc ucx only, which gdrpipe-run
     * keeps there) */
    {
        check(drc == MPI_SUCCESS, "MPI_Win_create_dynamic");
        MPI_Win_set_errhandler(dyn, MPI_ERRORS_RETURN);
        check(err_class(MPI_Win_attach(dyn, dev, N * sizeof(int))) == MPI_ERR_BASE,
              "MPI_Win_attach of device memory refused");
        check(MPI_Win_attach(dyn, host, N * sizeof(int)) == MPI_SUCCESS &&
                  MPI_Win_detach(dyn, host) == MPI_SUCCESS, "MPI_Win_attach of host memory");
        MPI_Win_free(&dyn);
    }

    int *base;
    MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < N; ++i) {
        base[i] = -1;
    }
    if (!device_windows) {
        MPI_Win_fence(0, win);
        refused_ops(win, dev, host, next);
        MPI_Win_fence(0, win);
        int untouched = 1;
        for (int i = 0; i < N; ++i) {
            untouched &= base[i] == -1;
        }
        check(untouched, "the window untouched by the refused operations");
    }
    host_ops(win, base, next, prev);
    MPI_Win_free(&win);

    /* a shared window beside them (every rank of these runs on one host) */
    int *mine = NULL, *theirs = NULL, disp = 0;
    MPI_Aint len = 0;
    MPI_Win sw = MPI_WIN_NULL;
    check(MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                  &mine, &sw) == MPI_SUCCESS,
          "MPI_Win_allocate_shared");
    if (sw != MPI_WIN_NULL) {
        *mine = 1000 + rank;
        MPI_Win_fence(0, sw);
        check(MPI_Win_shared_query(sw, next, &len, &disp, &theirs) == MPI_SUCCESS &&
                  theirs != NULL && *theirs == 1000 + next,
              "the next rank's value read through the shared window");
        MPI_Win_fence(0, sw);
        MPI_Win_free(&sw);
    }

    gp_devmem_free(dev);
    free(host);
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("rma_device: %d ranks: %s\n", nranks, all ? "FAILED" : "every check passed");
    }
    MPI_Finalize();
    return all ? 1 : 0;
}
