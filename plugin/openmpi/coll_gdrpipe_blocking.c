/* Blocking collectives of the module. */
#include "coll_gdrpipe_wrap.h"
#include "coll_gdrpipe_funcs.h"
#include "coll_gdrpipe_devmove.h"
#include "coll_gdrpipe_devreduce.h"

int mca_coll_gdrpipe_allgather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                               gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                               mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devmove_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm, GPO_M, NULL, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(allgather, gpo_prep_allgather(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_allgatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                                gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt,
                                gpo_comm_t *comm, mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devmove_allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm, GPO_M,
                               NULL, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(allgatherv,
                 gpo_prep_allgatherv(ST, &sbuf, scount, sdt, &rbuf, rcounts, displs, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
}

int mca_coll_gdrpipe_allreduce(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                               struct ompi_op_t *op, gpo_comm_t *comm,
                               mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devreduce_allreduce(sbuf, rbuf, count, dt, op, comm, GPO_M, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(allreduce, gpo_prep_allreduce(ST, &sbuf, &rbuf, count, dt, comm),
                 sbuf, rbuf, count, dt, op, comm);
}

int mca_coll_gdrpipe_alltoall(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                              gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                              mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devmove_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm, GPO_M, NULL, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(alltoall, gpo_prep_alltoall(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_alltoallv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *sdt, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *rdt, gpo_comm_t *comm,
                               mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devmove_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm,
                              GPO_M, NULL, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(alltoallv,
                 gpo_prep_alltoallv(ST, &sbuf, scounts, sdispls, sdt, &rbuf, rcounts, rdispls,
                                    rdt, comm),
                 sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
}

int mca_coll_gdrpipe_alltoallw(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *const *sdts, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *const *rdts, gpo_comm_t *comm,
                               mca_coll_base_module_t *module)
{
    GPO_BLOCKING(alltoallw,
                 gpo_prep_alltoallw(ST, &sbuf, scounts, sdispls, sdts, &rbuf, rcounts, rdispls,
                                    rdts, comm),
                 sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm);
}

int mca_coll_gdrpipe_bcast(void *buf, gpo_count_t count, gpo_dt_t *dt, int root, gpo_comm_t *comm,
                           mca_coll_base_module_t *module)
{
    GPO_BLOCKING(bcast, gpo_prep_bcast(ST, &buf, count, dt, root, comm),
                 buf, count, dt, root, comm);
}

int mca_coll_gdrpipe_exscan(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, gpo_comm_t *comm,
                            mca_coll_base_module_t *module)
{
    GPO_BLOCKING(exscan, gpo_prep_allreduce(ST, &sbuf, &rbuf, count, dt, comm),
                 sbuf, rbuf, count, dt, op, comm);
}

int mca_coll_gdrpipe_gather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                            gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                            mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devmove_gather(sbuf, scount, sdt, rbuf, rcount, NULL, NULL, rdt, root, comm,
                           GPO_M, NULL, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(gather,
                 gpo_prep_gather(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, root, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
}

int mca_coll_gdrpipe_gatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt, int root,
                             gpo_comm_t *comm, mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devmove_gather(sbuf, scount, sdt, rbuf, 0, &rcounts, &displs, rdt, root, comm,
                           GPO_M, NULL, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(gatherv,
                 gpo_prep_gatherv(ST, &sbuf, scount, sdt, &rbuf, rcounts, displs, rdt, root,
                                  comm),
                 sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm);
}

int mca_coll_gdrpipe_reduce(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, int root, gpo_comm_t *comm,
                            mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devreduce_reduce(sbuf, rbuf, count, dt, op, root, comm, GPO_M, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(reduce, gpo_prep_reduce(ST, &sbuf, &rbuf, count, dt, root, comm),
                 sbuf, rbuf, count, dt, op, root, comm);
}

int mca_coll_gdrpipe_reduce_scatter(const void *sbuf, void *rbuf, gpo_counts_t rcounts,
                                    gpo_dt_t *dt, struct ompi_op_t *op, gpo_comm_t *comm,
                                    mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devreduce_reduce_scatter(sbuf, rbuf, &rcounts, 0, dt, op, comm, GPO_M, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(reduce_scatter, gpo_prep_reduce_scatter(ST, &sbuf, &rbuf, rcounts, dt, comm),
                 sbuf, rbuf, rcounts, dt, op, comm);
}

int mca_coll_gdrpipe_reduce_scatter_block(const void *sbuf, void *rbuf, gpo_count_t rcount,
                                          gpo_dt_t *dt, struct ompi_op_t *op,
                                          gpo_comm_t *comm, mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devreduce_reduce_scatter(sbuf, rbuf, NULL, rcount, dt, op, comm, GPO_M, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(reduce_scatter_block,
                 gpo_prep_reduce_scatter_block(ST, &sbuf, &rbuf, rcount, dt, comm),
                 sbuf, rbuf, rcount, dt, op, comm);
}

int mca_coll_gdrpipe_scan(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                          struct ompi_op_t *op, gpo_comm_t *comm,
                          mca_coll_base_module_t *module)
{
    GPO_BLOCKING(scan, gpo_prep_allreduce(ST, &sbuf, &rbuf, count, dt, comm),
                 sbuf, rbuf, count, dt, op, comm);
}

int mca_coll_gdrpipe_scatter(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                             mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devmove_scatter(sbuf, scount, NULL, NULL, sdt, rbuf, rcount, rdt, root, comm,
                            GPO_M, NULL, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(scatter,
                 gpo_prep_scatter(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, root, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
}

int mca_coll_gdrpipe_scatterv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t displs,
                              gpo_dt_t *sdt, void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt, int root,
                              gpo_comm_t *comm, mca_coll_base_module_t *module)
{
    int rc;
    if (gpo_devmove_scatter(sbuf, 0, &scounts, &displs, sdt, rbuf, rcount, rdt, root, comm,
                            GPO_M, NULL, &rc) == 0) {
        return rc;
    }
    GPO_BLOCKING(scatterv,
                 gpo_prep_scatterv(ST, &sbuf, scounts, displs, sdt, &rbuf, rcount, rdt, root,
                                   comm),
                 sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm);
}

int mca_coll_gdrpipe_reduce_local(const void *inbuf, void *inoutbuf, gpo_count_t count, gpo_dt_t *dt,
                                  struct ompi_op_t *op, mca_coll_base_module_t *module)
{
    GPO_BLOCKING(reduce_local, gpo_prep_reduce_local(ST, &inbuf, &inoutbuf, count, dt),
                 inbuf, inoutbuf, count, dt, op);
}
