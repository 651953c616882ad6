/* Reductions of device buffers on the GPU (coll_gdrpipe_devreduce.h),
 * MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter and
 * MPI_Reduce_scatter_block: every process of the communicator exports its
 * buffers, one process per GPU imports the others' (CUDA IPC / VMM handles,
 * through the plugin's import cache) and runs the kernel that combines its
 * share of the elements of all the sources and writes it into the
 * destinations that get those elements (every rank's result buffer; the
 * root's for MPI_Reduce; for the reduce-scatters each rank's buffer gets its
 * block of elements, one launch per block). Nothing passes
 * through host memory and, with several processes on one GPU, only one of
 * them works on it.
 *
 * A call qualifies by its arguments alone (the same on every rank, so every
 * rank takes the same branch): intracommunicator of at most
 * GP_REDUCE_MAX_BUFS ranks, all on this host; count > 0; a predefined type
 * and operation the kernel does. Then:
 *  1. each rank waits for its device's legacy stream (the application's
 *     queued work on its buffers) and exports its send and receive buffers;
 *  2. allgather of one record per rank (the next module's, host memory):
 *     whether it can take part, its start time, its remote keys;
 *  3. if any rank cannot (host buffers, memory no other process can map),
 *     every rank returns "not taken" and the caller stages through host
 *     memory; else the first rank of each GPU reduces that GPU's share;
 *  4. with several GPUs, an allreduce (max) of the launchers' import
 *     status first: no launcher writes unless every one has its mappings;
 *  5. allreduce (max) of the launchers' status: a rank's buffers are not
 *     touched after it. A failed import, or the one launcher's failed
 *     launch, wrote nothing: every rank stages the call, and the
 *     communicator's later ones. A launch that fails beside another
 *     launcher's success fails the call (MPI_ERR_INTERN): shares already
 *     reduced in place cannot be redone. */
#include "coll_gdrpipe_devreduce.h"
#include "coll_gdrpipe_devshare.h"
#include "coll_gdrpipe_params.h"

#include "gpo_dev.h"

#include "ompi/group/group.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct gpo_red_rec {
    int32_t ok;     /* 1: takes part */
    int32_t has_result; /* 1: rkey filled (a rank that gets the result) */
    uint8_t uuid[16]; /* its GPU */
    uint64_t start; /* the process's start time (gp_dev_import) */
    uint64_t saddr, raddr;
    gp_rkey_t skey, rkey;
} gpo_red_rec_t;

#define GPO_SINT(t) \
    (sizeof(t) == 1 ? GP_RED_I8 : sizeof(t) == 2 ? GP_RED_I16 : sizeof(t) == 4 ? GP_RED_I32 : GP_RED_I64)

int gpo_red_type_of(struct ompi_datatype_t *dt)
{
    const struct {
        MPI_Datatype dt;
        int type;
    } table[] = {
        {MPI_CHAR, GP_RED_I8},            {MPI_SIGNED_CHAR, GP_RED_I8},
        {MPI_INT8_T, GP_RED_I8},          {MPI_UNSIGNED_CHAR, GP_RED_U8},
        {MPI_UINT8_T, GP_RED_U8},         {MPI_BYTE, GP_RED_U8},
        {MPI_C_BOOL, GP_RED_U8},          {MPI_SHORT, GP_RED_I16},
        {MPI_INT16_T, GP_RED_I16},        {MPI_UNSIGNED_SHORT, GP_RED_U16},
        {MPI_UINT16_T, GP_RED_U16},       {MPI_INT, GP_RED_I32},
        {MPI_INT32_T, GP_RED_I32},        {MPI_UNSIGNED, GP_RED_U32},
        {MPI_UINT32_T, GP_RED_U32},       {MPI_LONG, GPO_SINT(long)},
        {MPI_UNSIGNED_LONG, GPO_SINT(long) + 1},
        {MPI_LONG_LONG, GP_RED_I64},      {MPI_INT64_T, GP_RED_I64},
        {MPI_UNSIGNED_LONG_LONG, GP_RED_U64}, {MPI_UINT64_T, GP_RED_U64},
        {MPI_AINT, GPO_SINT(MPI_Aint)},   {MPI_OFFSET, GPO_SINT(MPI_Offset)},
        {MPI_COUNT, GPO_SINT(MPI_Count)}, {MPI_FLOAT, GP_RED_F32},
        {MPI_DOUBLE, GP_RED_F64},
    };
    if (sizeof(float) != 4 || sizeof(double) != 8 || sizeof(char) != 1) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); ++i) {
        if (table[i].dt == dt) {
            return table[i].type;
        }
    }
    return -1;
}

int gpo_red_op_of(struct ompi_op_t *op)
{
    const struct {
        MPI_Op op;
        int red;
    } table[] = {
        {MPI_SUM, GP_RED_SUM},   {MPI_PROD, GP_RED_PROD}, {MPI_MIN, GP_RED_MIN},
        {MPI_MAX, GP_RED_MAX},   {MPI_LAND, GP_RED_LAND}, {MPI_LOR, GP_RED_LOR},
        {MPI_LXOR, GP_RED_LXOR}, {MPI_BAND, GP_RED_BAND}, {MPI_BOR, GP_RED_BOR},
        {MPI_BXOR, GP_RED_BXOR},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); ++i) {
        if (table[i].op == op) {
            return table[i].red;
        }
    }
    return -1;
}

/* which elements of the result each rank gets: [begin, begin + count),
 * count 0 for none (alike on every rank) */
typedef struct gpo_red_res {
    unsigned long long begin[GP_REDUCE_MAX_BUFS], count[GP_REDUCE_MAX_BUFS];
} gpo_red_res_t;

/* whether this rank's buffers can take part; fills its record (rbuf NULL:
 * a rank without a result, the non-roots of MPI_Reduce) */
static int local_part(const gp_companion_t *c, const void *sbuf, size_t sbytes, void *rbuf,
                      size_t rbytes, gpo_red_rec_t *rec)
{
    int dev = -1;
    memset(rec, 0, sizeof(*rec));
    if ((c == NULL) || (c->version < 2) ||
        (gpo_dev_share(c, sbuf, sbytes, &dev, &rec->skey, "device reduction") != 0) ||
        ((rbuf != NULL) &&
         (gpo_dev_share(c, rbuf, rbytes, &dev, &rec->rkey, "device reduction") != 0))) {
        return 0;
    }
    rec->start = c->self_start_time();
    rec->saddr = (uint64_t)(uintptr_t)sbuf;
    rec->raddr = (uint64_t)(uintptr_t)rbuf;
    rec->has_result = rbuf != NULL ? 1 : 0;
    memcpy(rec->uuid, rec->skey.dev_uuid, sizeof(rec->uuid));
    rec->ok = 1;
    return 1;
}

/* The launcher's part, in two steps: import every rank's buffers into its
 * device's context, filling the kernel's arguments and the holds on the
 * mappings (0, or -1: nothing written anywhere); then run the reduction of
 * elements [begin, end) into the result buffers of the ranks that get them.
 * A destination's address is that of its element 0 (the kernel indexes
 * every buffer alike): a rank that gets elements from `b` on has its buffer
 * at dst + b elements. */
typedef struct {
    gp_reduce_args_t a;
    int owner[GP_REDUCE_MAX_BUFS]; /* the rank of each destination */
    void *holds[2 * GP_REDUCE_MAX_BUFS];
    int nholds, dev;
    char err[256];
} gpo_launch_t;

static int launch_import(const gp_companion_t *c, const gpo_red_rec_t *all, int n, int dev,
                         size_t esize, unsigned long long count, const gpo_red_res_t *res,
                         gpo_launch_t *l)
{
    memset(l, 0, sizeof(*l));
    l->dev = dev;
    for (int r = 0; r < n; ++r) {
        void *sp = NULL, *dp = NULL;
        if (c->dev_import(&all[r].skey, all[r].start, all[r].saddr, count * esize, dev, &sp,
                          &l->holds[l->nholds++], l->err, sizeof(l->err)) != 0) {
            return -1;
        }
        if (all[r].has_result) {
            if (c->dev_import(&all[r].rkey, all[r].start, all[r].raddr, res->count[r] * esize,
                              dev, &dp, &l->holds[l->nholds++], l->err,
                              sizeof(l->err)) != 0) {
                return -1;
            }
            l->owner[l->a.ndst] = r;
            l->a.dst[l->a.ndst++] = (unsigned long long)(uintptr_t)dp - res->begin[r] * esize;
        }
        l->a.src[r] = (unsigned long long)(uintptr_t)sp;
    }
    l->a.nsrc = (unsigned)n;
    return 0;
}

/* elements [begin, end) into every destination that gets them: one launch
 * when all get every element, else one per destination */
static int launch_run(const gp_companion_t *c, gpo_launch_t *l, unsigned long long begin,
                      unsigned long long end, int type, int red, unsigned long long count,
                      const gpo_red_res_t *res)
{
    int whole = 1;
    l->a.type = (unsigned)type;
    l->a.op = (unsigned)red;
    for (unsigned k = 0; k < l->a.ndst; ++k) {
        whole &= (res->begin[l->owner[k]] == 0) && (res->count[l->owner[k]] == count);
    }
    if (whole) {
        l->a.begin = begin;
        l->a.end = end;
        return c->reduce(l->dev, &l->a, l->err, sizeof(l->err)) != 0 ? -1 : 0;
    }
    gp_reduce_args_t one = l->a;
    one.ndst = 1;
    for (unsigned k = 0; k < l->a.ndst; ++k) {
        const unsigned long long b = res->begin[l->owner[k]], e = b + res->count[l->owner[k]];
        one.begin = b > begin ? b : begin;
        one.end = e < end ? e : end;
        one.dst[0] = l->a.dst[k];
        if ((one.begin < one.end) && (c->reduce(l->dev, &one, l->err, sizeof(l->err)) != 0)) {
            return -1;
        }
    }
    return 0;
}

static void launch_release(const gp_companion_t *c, gpo_launch_t *l)
{
    for (int i = 0; i < l->nholds; ++i) {
        if (l->holds[i] != NULL) {
            c->dev_release(l->holds[i]);
        }
    }
    l->nholds = 0;
}

/* a failure of the GPU path, agreed by every rank: the communicator stages
 * its reductions from now on (said once) */
static void gpu_path_failed(mca_coll_gdrpipe_module_t *m, const gpo_launch_t *l, int launcher)
{
    if (!m->red_failed && launcher && l->err[0] != '\0') {
        opal_output(0, "coll gdrpipe: device reduction failed (%s): this communicator's "
                    "reductions are staged from now on", l->err);
    }
    m->red_failed = 1;
    m->red_staged++;
}

/* what every rank sees alike about the communicator and the operands */
static int may_reduce(gpo_count_t count, struct ompi_datatype_t *dt, struct ompi_op_t *op,
                      struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m)
{
    const int type = gpo_red_type_of(dt), red = gpo_red_op_of(op);
    return (gpo_coll_params.device_reduce > 0) && m->all_local && !m->red_failed &&
           (count > 0) && (ompi_comm_size(comm) <= GP_REDUCE_MAX_BUFS) && (type >= 0) &&
           (red >= 0) && gp_red_valid((unsigned)type, (unsigned)red) &&
           (m->next.coll_allgather != NULL) && (m->next.coll_allreduce != NULL);
}

/* count elements of every rank's sbuf reduced, each rank getting the
 * elements res names in its rbuf (the caller checked may_reduce) */
static int devreduce(const void *sbuf, void *rbuf, gpo_count_t count, struct ompi_datatype_t *dt,
                     struct ompi_op_t *op, const gpo_red_res_t *res, const char *what,
                     struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m, int *rc)
{
    const gp_companion_t *c = gpo_dev();
    const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    const int type = gpo_red_type_of(dt), red = gpo_red_op_of(op);
    gpo_red_rec_t mine, all[GP_REDUCE_MAX_BUFS];
    gpo_launch_t l;
    int status = 0, worst = 0, ok = 1;

    /* qualifies by the arguments and by what every rank agreed alike (not
     * by this process's CUDA: a rank without it takes part and says no) */
    const size_t esize = gp_red_type_size((unsigned)type);
    const int has_result = res->count[me] > 0;
    if ((gpo_coll_params.device_reduce >= 2) &&
        !gpo_auto_on(c, m, &m->red_auto, (sbuf == MPI_IN_PLACE) ? rbuf : sbuf, comm, rc)) {
        return *rc == OMPI_SUCCESS ? 1 : 0;
    }
    (void)local_part(c, (sbuf == MPI_IN_PLACE) ? rbuf : sbuf, (size_t)count * esize,
                     has_result ? rbuf : NULL, (size_t)res->count[me] * esize, &mine);
    *rc = m->next.coll_allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE,
                                 comm, m->next.coll_allgather_module);
    if (*rc != OMPI_SUCCESS) {
        return 0;
    }
    for (int r = 0; r < n; ++r) {
        const int part = (all[r].ok == 1) && (all[r].has_result == (res->count[r] > 0));
        if (!part && (r == me) && (gpo_coll_params.verbose > 1)) {
            opal_output(0, "coll gdrpipe: %s of %ld elements staged: rank %d's buffers cannot "
                        "take part", what, (long)count, r);
        }
        ok &= part;
    }
    if (!ok) {
        m->red_staged++;
        return 1;
    }
    /* the GPUs, in the order of their first rank; this rank launches when
     * it is the first of its GPU, for that GPU's share of the elements */
    int ngpu = 0, my_gpu = -1;
    for (int r = 0; r < n; ++r) {
        int first = 1;
        for (int q = 0; (q < r) && first; ++q) {
            first = memcmp(all[q].uuid, all[r].uuid, 16) != 0;
        }
        if (first) {
            if (r == me) {
                my_gpu = ngpu;
            }
            ++ngpu;
        }
    }
    const unsigned long long share = ((unsigned long long)count + ngpu - 1) / ngpu;
    unsigned long long begin = 0, end = 0;
    if (my_gpu >= 0) {
        begin = share * (unsigned long long)my_gpu;
        end = begin + share > (unsigned long long)count ? (unsigned long long)count
                                                         : begin + share;
        status = launch_import(c, all, n, c->device_of((sbuf == MPI_IN_PLACE) ? rbuf : sbuf),
                               esize, (unsigned long long)count, res, &l) != 0;
    } else {
        memset(&l, 0, sizeof(l));
    }
    if (ngpu > 1) {
        /* several launchers: none may write before every one has its
         * mappings, or a failure would leave some shares reduced in place */
        *rc = gpo_agree_max(m, comm, status, &worst);
        if ((*rc != OMPI_SUCCESS) || (worst != 0)) {
            launch_release(c, &l);
            if (*rc != OMPI_SUCCESS) {
                return 0;
            }
            gpu_path_failed(m, &l, my_gpu >= 0);
            return 1;
        }
    }
    if ((my_gpu >= 0) && (status == 0) && (begin < end)) {
        status = launch_run(c, &l, begin, end, type, red, (unsigned long long)count, res);
    }
    launch_release(c, &l);
    *rc = gpo_agree_max(m, comm, status, &worst);
    if (*rc != OMPI_SUCCESS) {
        return 0;
    }
    if (worst != 0) {
        gpu_path_failed(m, &l, my_gpu >= 0);
        if (ngpu > 1) {
            /* another launcher may have written its share: nothing to
             * redo it from (in place), so the call fails */
            *rc = OMPI_ERROR;
            return 0;
        }
        return 1; /* the one launcher wrote nothing: staged instead */
    }
    m->red_gpu++;
    return 0;
}

int gpo_devreduce_allreduce(const void *sbuf, void *rbuf, gpo_count_t count,
                            struct ompi_datatype_t *dt, struct ompi_op_t *op,
                            struct ompi_communicator_t *comm,
                            mca_coll_gdrpipe_module_t *m, int *rc)
{
    gpo_red_res_t res;
    if (!may_reduce(count, dt, op, comm, m)) {
        return 1;
    }
    for (int r = 0; r < ompi_comm_size(comm); ++r) {
        res.begin[r] = 0;
        res.count[r] = (unsigned long long)count;
    }
    return devreduce(sbuf, rbuf, count, dt, op, &res, "allreduce", comm, m, rc);
}

int gpo_devreduce_reduce(const void *sbuf, void *rbuf, gpo_count_t count, struct ompi_datatype_t *dt,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_gdrpipe_module_t *m, int *rc)
{
    gpo_red_res_t res;
    if (!may_reduce(count, dt, op, comm, m) || (root < 0) || (root >= ompi_comm_size(comm))) {
        return 1;
    }
    for (int r = 0; r < ompi_comm_size(comm); ++r) {
        res.begin[r] = 0;
        res.count[r] = r == root ? (unsigned long long)count : 0;
    }
    return devreduce(sbuf, rbuf, count, dt, op, &res, "reduce", comm, m, rc);
}

int gpo_devreduce_reduce_scatter(const void *sbuf, void *rbuf, const gpo_counts_t *rcounts,
                                 gpo_count_t rcount, struct ompi_datatype_t *dt,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                 mca_coll_gdrpipe_module_t *m, int *rc)
{
    const int n = ompi_comm_size(comm);
    gpo_red_res_t res;
    unsigned long long total = 0;
    if ((n > GP_REDUCE_MAX_BUFS) || (sbuf == MPI_IN_PLACE)) {
        return 1;
    }
    for (int r = 0; r < n; ++r) {
        const gpo_count_t k = rcounts != NULL ? GPO_COUNT_AT(*rcounts, r) : rcount;
        res.begin[r] = total;
        res.count[r] = k > 0 ? (unsigned long long)k : 0;
        total += res.count[r];
    }
    if (((unsigned long long)(gpo_count_t)total != total) ||
        !may_reduce((gpo_count_t)total, dt, op, comm, m)) {
        return 1;
    }
    return devreduce(sbuf, rbuf, (gpo_count_t)total, dt, op, &res,
                     rcounts != NULL ? "reduce_scatter" : "reduce_scatter_block", comm, m, rc);
}
