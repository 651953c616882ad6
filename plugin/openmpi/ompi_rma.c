/* One-sided communication and device memory (the interposer, preloaded by
 * gdrpipe-run).
 *
 * Open MPI 4.1's one-sided components (osc rdma, pt2pt and sm; gdrpipe-run
 * turns osc ucx off, which needs UCX's own CUDA support) read and write a
 * window, and the origin and result buffers of an operation, with the CPU:
 * with device memory the process dies in Open MPI's code (SIGSEGV). One-sided
 * communication is not staged through host memory, so device memory there is
 * refused before Open MPI touches it, with a message naming the cause,
 * through the window's error handler (the communicator's for a window being
 * created): with the default MPI_ERRORS_ARE_FATAL the job ends with that
 * message; with MPI_ERRORS_RETURN the call returns MPI_ERR_BASE (a window) or
 * MPI_ERR_BUFFER (an operation's buffer) and nothing was done.
 *
 * MPI_Win_create is collective: the ranks agree on the refusal (one
 * allreduce of two integers per window), so that a window whose memory is
 * device memory on one rank fails on all of them instead of leaving the
 * others waiting in Open MPI. Where handlers are fatal, one rank's ends the
 * job and the others wait for it (Open MPI 4.1.4's mpirun can fault in its
 * PMIx log handler when several ranks abort at once); the operations, which
 * are local, cannot agree so: there each rank with a device buffer aborts.
 * Windows Open MPI allocates (MPI_Win_allocate, _shared) are host memory and
 * pass; so does managed memory, which the CPU can reach.
 *
 * Open MPI 5's osc ucx (gdrpipe-run's choice there: OMPI_MCA_osc "ucx,sm")
 * moves a window's memory and the buffers of puts and gets only through
 * UCX, which with gdrpipe moves device memory. Where it serves windows,
 * device memory is let through MPI_Win_create and the puts and gets
 * (MPI_Put, MPI_Get, MPI_Rput, MPI_Rget). What it does with the CPU stays
 * refused: accumulates reduce on the host (a device origin or result buffer:
 * MPI_ERR_BUFFER), and its atomics (MPI_Fetch_and_op, MPI_Compare_and_swap,
 * accumulates under the acc_single_intrinsic info key) are carried out by
 * the target's CPU, so on a window with device memory on any rank they are
 * refused with MPI_ERR_UNSUPPORTED_OPERATION (the ranks agree on the window
 * at its creation). MPI_Win_attach still refuses device memory: it is
 * local, so the other ranks could not know to refuse atomics into it. */
#include "gpo_dev.h"

#include <mpi.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 where device memory may go to the one-sided calls: Open MPI 5 or later
 * with osc ucx first in the components it may select */
static int device_rma(void)
{
#if OMPI_MAJOR_VERSION >= 5
    static int answer = -1;
    if (answer < 0) {
        const char *osc = getenv("OMPI_MCA_osc");
        answer = osc != NULL && strncmp(osc, "ucx", 3) == 0 && (osc[3] == '\0' || osc[3] == ',');
    }
    return answer;
#else
    return 0;
#endif
}

/* the attribute that marks a window with device memory on some rank */
static int device_win_key = MPI_KEYVAL_INVALID;

static void mark_device_win(MPI_Win win)
{
    if (device_win_key == MPI_KEYVAL_INVALID &&
        PMPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &device_win_key,
                               NULL) != MPI_SUCCESS) {
        return;
    }
    PMPI_Win_set_attr(win, device_win_key, (void *)1);
}

static int is_device_win(MPI_Win win)
{
    void *v = NULL;
    int found = 0;
    if (device_win_key == MPI_KEYVAL_INVALID ||
        PMPI_Win_get_attr(win, device_win_key, &v, &found) != MPI_SUCCESS) {
        return 0;
    }
    return found && v != NULL;
}

/* whether win's accumulates may take osc ucx's atomics (acc_single_intrinsic) */
static int intrinsic_accumulates(MPI_Win win)
{
    MPI_Info info = MPI_INFO_NULL;
    char value[16] = "";
    int flag = 0;
    if (PMPI_Win_get_info(win, &info) != MPI_SUCCESS) {
        return 1;
    }
#if MPI_VERSION >= 4
    int len = (int)sizeof(value);
    PMPI_Info_get_string(info, "acc_single_intrinsic", &len, value, &flag);
#else
    PMPI_Info_get(info, "acc_single_intrinsic", (int)sizeof(value) - 1, value, &flag);
#endif
    PMPI_Info_free(&info);
    return flag && (strcmp(value, "true") == 0 || strcmp(value, "1") == 0);
}

/* refuses call on a window with device memory (its target's CPU would
 * touch it), said once, through the window's handler */
static int refuse_atomic(int *said, const char *call, MPI_Win win, MPI_Request *req)
{
    if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED)) {
        fprintf(stderr,
                "gdrpipe (Open MPI): %s: the window holds device memory, and this Open MPI "
                "carries out atomic one-sided operations with the target's CPU: use a window "
                "of host memory for atomics\n",
                call);
    }
    if (req != NULL) {
        *req = MPI_REQUEST_NULL;
    }
    PMPI_Win_call_errhandler(win, MPI_ERR_UNSUPPORTED_OPERATION);
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

/* what the calls refuse, said once per process and call (ptr NULL: another
 * rank's memory) */
static void say(int *said, const char *call, const char *what, const void *ptr)
{
    char at[32] = "";
    if (__atomic_exchange_n(said, 1, __ATOMIC_RELAXED)) {
        return;
    }
    if (ptr != NULL) {
        snprintf(at, sizeof(at), " %p", ptr);
    }
    fprintf(stderr,
            "gdrpipe (Open MPI): %s: %s%s is device memory; this Open MPI's one-sided "
            "components access it with the CPU, and gdrpipe does not stage one-sided "
            "communication: use host memory (e.g. MPI_Win_allocate) for windows and "
            "for the buffers of one-sided operations\n",
            call, what, at);
}

/* the first of an operation's buffers (a, b, c holding na, nb, nc
 * elements; unused ones NULL, 0) that is device memory, NULL if none */
static const void *device_buf(const void *a, int na, const void *b, int nb, const void *c,
                              int nc)
{
    if ((na > 0) && gpo_is_device(a)) {
        return a;
    }
    if ((nb > 0) && gpo_is_device(b)) {
        return b;
    }
    return ((nc > 0) && gpo_is_device(c)) ? c : NULL;
}

/* refuses operation call of win whose buffer dev (what) is device memory:
 * said once, through the window's handler; a request call's request is
 * MPI_REQUEST_NULL */
static int refuse_op(int *said, const char *call, const char *what, const void *dev, MPI_Win win,
                     MPI_Request *req)
{
    say(said, call, what, dev);
    if (req != NULL) {
        *req = MPI_REQUEST_NULL;
    }
    PMPI_Win_call_errhandler(win, MPI_ERR_BUFFER);
    return MPI_ERR_BUFFER;
}

/* whether comm's error handler is MPI_ERRORS_ARE_FATAL */
static int fatal_handler(MPI_Comm comm)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS) {
        return 0;
    }
    const int fatal = (eh == MPI_ERRORS_ARE_FATAL);
    PMPI_Errhandler_free(&eh);
    return fatal;
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   MPI_Win *win)
{
    static int said;
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    /* [0]: some rank's memory is device memory; [1]: INT_MAX less the
     * lowest rank whose handler is fatal (-1: none) */
    int mine[2] = {(size > 0) && gpo_is_device(base), fatal_handler(comm) ? INT_MAX - rank : -1};
    int all[2];
    if (mine[0] && !device_rma()) {
        say(&said, "MPI_Win_create", "the window's memory at", base);
    }
    int rc = PMPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, comm);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!all[0] || device_rma()) {
        rc = PMPI_Win_create(base, size, disp_unit, info, comm, win);
        if (rc == MPI_SUCCESS && all[0]) {
            mark_device_win(*win);
        }
        return rc;
    }
    if (!mine[0]) {
        /* this rank may be the one whose error handler ends the job */
        say(&said, "MPI_Win_create", "on another rank of the communicator, the window's memory",
            NULL);
    }
    if ((all[1] >= 0) && (all[1] != mine[1])) {
        /* one rank's fatal handler ends the job: Open MPI 4.1's mpirun can
         * fault when several ranks abort at once, so the others wait for it */
        PMPI_Barrier(comm);
    }
    *win = MPI_WIN_NULL;
    PMPI_Comm_call_errhandler(comm, MPI_ERR_BASE);
    return MPI_ERR_BASE;
}

int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    static int said;
    if ((size > 0) && gpo_is_device(base)) {
        if (device_rma()) {
            if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
                fprintf(stderr,
                        "gdrpipe (Open MPI): MPI_Win_attach: the memory at %p is device "
                        "memory; one rank attaches it alone, so the others could not refuse "
                        "atomic operations into it (this Open MPI carries them out with the "
                        "target's CPU): make a window of device memory with MPI_Win_create\n",
                        base);
            }
        } else {
            say(&said, "MPI_Win_attach", "the memory at", base);
        }
        PMPI_Win_call_errhandler(win, MPI_ERR_BASE);
        return MPI_ERR_BASE;
    }
    return PMPI_Win_attach(win, base, size);
}

int MPI_Put(const void *origin, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp,
            int tcount, MPI_Datatype ttype, MPI_Win win)
{
    static int said;
    const void *dev = device_rma() ? NULL : device_buf(origin, ocount, NULL, 0, NULL, 0);
    if (dev != NULL) {
        return refuse_op(&said, "MPI_Put", "the origin buffer", dev, win, NULL);
    }
    return PMPI_Put(origin, ocount, otype, target, tdisp, tcount, ttype, win);
}

int MPI_Get(void *origin, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp,
            int tcount, MPI_Datatype ttype, MPI_Win win)
{
    static int said;
    const void *dev = device_rma() ? NULL : device_buf(origin, ocount, NULL, 0, NULL, 0);
    if (dev != NULL) {
        return refuse_op(&said, "MPI_Get", "the origin buffer", dev, win, NULL);
    }
    return PMPI_Get(origin, ocount, otype, target, tdisp, tcount, ttype, win);
}

int MPI_Accumulate(const void *origin, int ocount, MPI_Datatype otype, int target,
                   MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win)
{
    static int said;
    const void *dev = device_buf(origin, ocount, NULL, 0, NULL, 0);
    if (dev != NULL) {
        return refuse_op(&said, "MPI_Accumulate", "the origin buffer", dev, win, NULL);
    }
    if (is_device_win(win) && intrinsic_accumulates(win)) {
        static int said_atomic;
        return refuse_atomic(&said_atomic, "MPI_Accumulate", win, NULL);
    }
    return PMPI_Accumulate(origin, ocount, otype, target, tdisp, tcount, ttype, op, win);
}

int MPI_Get_accumulate(const void *origin, int ocount, MPI_Datatype otype, void *result,
                       int rcount, MPI_Datatype rtype, int target, MPI_Aint tdisp, int tcount,
                       MPI_Datatype ttype, MPI_Op op, MPI_Win win)
{
    static int said;
    const void *dev = device_buf(origin, ocount, result, rcount, NULL, 0);
    if (dev != NULL) {
        return refuse_op(&said, "MPI_Get_accumulate", "the origin or result buffer",
                         dev, win, NULL);
    }
    if (is_device_win(win) && intrinsic_accumulates(win)) {
        static int said_atomic;
        return refuse_atomic(&said_atomic, "MPI_Get_accumulate", win, NULL);
    }
    return PMPI_Get_accumulate(origin, ocount, otype, result, rcount, rtype, target, tdisp,
                               tcount, ttype, op, win);
}

int MPI_Fetch_and_op(const void *origin, void *result, MPI_Datatype dt, int target,
                     MPI_Aint tdisp, MPI_Op op, MPI_Win win)
{
    static int said;
    const void *dev = device_buf(origin, 1, result, 1, NULL, 0);
    if (dev != NULL) {
        return refuse_op(&said, "MPI_Fetch_and_op", "the origin or result buffer", dev, win, NULL);
    }
    if (is_device_win(win)) {
        static int said_atomic;
        return refuse_atomic(&said_atomic, "MPI_Fetch_and_op", win, NULL);
    }
    return PMPI_Fetch_and_op(origin, result, dt, target, tdisp, op, win);
}

int MPI_Compare_and_swap(const void *origin, const void *compare, void *result,
                         MPI_Datatype dt, int target, MPI_Aint tdisp, MPI_Win win)
{
    static int said;
    const void *dev = device_buf(origin, 1, compare, 1, result, 1);
    if (dev != NULL) {
        return refuse_op(&said, "MPI_Compare_and_swap",
                         "the origin, compare or result buffer", dev, win, NULL);
    }
    if (is_device_win(win)) {
        static int said_atomic;
        return refuse_atomic(&said_atomic, "MPI_Compare_and_swap", win, NULL);
    }
    return PMPI_Compare_and_swap(origin, compare, result, dt, target, tdisp, win);
}

int MPI_Rput(const void *origin, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp,
             int tcount, MPI_Datatype ttype, MPI_Win win, MPI_Request *req)
{
    static int said;
    const void *dev = device_rma() ? NULL : device_buf(origin, ocount, NULL, 0, NULL, 0);
    if (dev != NULL) {
        return refuse_op(&said, "MPI_Rput", "the origin buffer", dev, win, req);
    }
    return PMPI_Rput(origin, ocount, otype, target, tdisp, tcount, ttype, win, req);
}

int MPI_Rget(void *origin, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp,
             int tcount, MPI_Datatype ttype, MPI_Win win, MPI_Request *req)
{
    static int said;
    const void *dev = device_rma() ? NULL : device_buf(origin, ocount, NULL, 0, NULL, 0);
    if (dev != NULL) {
        return refuse_op(&said, "MPI_Rget", "the origin buffer", dev, win, req);
    }
    return PMPI_Rget(origin, ocount, otype, target, tdisp, tcount, ttype, win, req);
}

int MPI_Raccumulate(const void *origin, int ocount, MPI_Datatype otype, int target,
                    MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win,
                    MPI_Request *req)
{
    static int said;
    const void *dev = device_buf(origin, ocount, NULL, 0, NULL, 0);
    if (dev != NULL) {
        return refuse_op(&said, "MPI_Raccumulate", "the origin buffer", dev, win, req);
    }
    if (is_device_win(win) && intrinsic_accumulates(win)) {
        static int said_atomic;
        return refuse_atomic(&said_atomic, "MPI_Raccumulate", win, req);
    }
    return PMPI_Raccumulate(origin, ocount, otype, target, tdisp, tcount, ttype, op, win, req);
}

int MPI_Rget_accumulate(const void *origin, int ocount, MPI_Datatype otype, void *result,
                        int rcount, MPI_Datatype rtype, int target, MPI_Aint tdisp, int tcount,
                        MPI_Datatype ttype, MPI_Op op, MPI_Win win, MPI_Request *req)
{
    static int said;
    const void *dev = device_buf(origin, ocount, result, rcount, NULL, 0);
    if (dev != NULL) {
        return refuse_op(&said, "MPI_Rget_accumulate", "the origin or result buffer",
                         dev, win, req);
    }
    if (is_device_win(win) && intrinsic_accumulates(win)) {
        static int said_atomic;
        return refuse_atomic(&said_atomic, "MPI_Rget_accumulate", win, req);
    }
    return PMPI_Rget_accumulate(origin, ocount, otype, result, rcount, rtype, target, tdisp,
                                tcount, ttype, op, win, req);
}
