/* Nonblocking collectives of the module: the outputs are copied back when
 * the next module's request completes (gpo_end_request). */
#include "coll_gdrpipe_wrap.h"
#include "coll_gdrpipe_funcs.h"
#include "coll_gdrpipe_devmove.h"


int mca_coll_gdrpipe_iallgather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                               gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(0, gpo_devmove_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm, GPO_M, &how_, &rc_));
    GPO_NONBLOCKING(iallgather, gpo_prep_allgather(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_iallgatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                                gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt,
                                gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(0, gpo_devmove_allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm, GPO_M, &how_, &rc_));
    GPO_NONBLOCKING(iallgatherv,
                 gpo_prep_allgatherv(ST, &sbuf, scount, sdt, &rbuf, rcounts, displs, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
}

int mca_coll_gdrpipe_iallreduce(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                               struct ompi_op_t *op, gpo_comm_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(iallreduce, gpo_prep_allreduce(ST, &sbuf, &rbuf, count, dt, comm),
                 sbuf, rbuf, count, dt, op, comm);
}

int mca_coll_gdrpipe_ialltoall(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                              gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(0, gpo_devmove_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm, GPO_M, &how_, &rc_));
    GPO_NONBLOCKING(ialltoall, gpo_prep_alltoall(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_ialltoallv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *sdt, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *rdt, gpo_comm_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(0, gpo_devmove_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm, GPO_M, &how_, &rc_));
    GPO_NONBLOCKING(ialltoallv,
                 gpo_prep_alltoallv(ST, &sbuf, scounts, sdispls, sdt, &rbuf, rcounts, rdispls,
                                    rdt, comm),
                 sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
}

int mca_coll_gdrpipe_ialltoallw(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *const *sdts, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *const *rdts, gpo_comm_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(ialltoallw,
                 gpo_prep_alltoallw(ST, &sbuf, scounts, sdispls, sdts, &rbuf, rcounts, rdispls,
                                    rdts, comm),
                 sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm);
}

int mca_coll_gdrpipe_ibcast(void *buf, gpo_count_t count, gpo_dt_t *dt, int root, gpo_comm_t *comm,
                           ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(ibcast, gpo_prep_bcast(ST, &buf, count, dt, root, comm),
                 buf, count, dt, root, comm);
}

int mca_coll_gdrpipe_iexscan(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, gpo_comm_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(iexscan, gpo_prep_allreduce(ST, &sbuf, &rbuf, count, dt, comm),
                 sbuf, rbuf, count, dt, op, comm);
}

int mca_coll_gdrpipe_igather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                            gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(0, gpo_devmove_gather(sbuf, scount, sdt, rbuf, rcount, NULL, NULL, rdt, root, comm, GPO_M, &how_, &rc_));
    GPO_NONBLOCKING(igather,
                 gpo_prep_gather(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, root, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
}

int mca_coll_gdrpipe_igatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt, int root,
                             gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(0, gpo_devmove_gather(sbuf, scount, sdt, rbuf, 0, &rcounts, &displs, rdt, root, comm, GPO_M, &how_, &rc_));
    GPO_NONBLOCKING(igatherv,
                 gpo_prep_gatherv(ST, &sbuf, scount, sdt, &rbuf, rcounts, displs, rdt, root,
                                  comm),
                 sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm);
}

int mca_coll_gdrpipe_ireduce(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, int root, gpo_comm_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(ireduce, gpo_prep_reduce(ST, &sbuf, &rbuf, count, dt, root, comm),
                 sbuf, rbuf, count, dt, op, root, comm);
}

int mca_coll_gdrpipe_ireduce_scatter(const void *sbuf, void *rbuf, gpo_counts_t rcounts,
                                    gpo_dt_t *dt, struct ompi_op_t *op, gpo_comm_t *comm,
                                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(ireduce_scatter, gpo_prep_reduce_scatter(ST, &sbuf, &rbuf, rcounts, dt, comm),
                 sbuf, rbuf, rcounts, dt, op, comm);
}

int mca_coll_gdrpipe_ireduce_scatter_block(const void *sbuf, void *rbuf, gpo_count_t rcount,
                                          gpo_dt_t *dt, struct ompi_op_t *op,
                                          gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(ireduce_scatter_block,
                 gpo_prep_reduce_scatter_block(ST, &sbuf, &rbuf, rcount, dt, comm),
                 sbuf, rbuf, rcount, dt, op, comm);
}

int mca_coll_gdrpipe_iscan(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                          struct ompi_op_t *op, gpo_comm_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(iscan, gpo_prep_allreduce(ST, &sbuf, &rbuf, count, dt, comm),
                 sbuf, rbuf, count, dt, op, comm);
}

int mca_coll_gdrpipe_iscatter(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(0, gpo_devmove_scatter(sbuf, scount, NULL, NULL, sdt, rbuf, rcount, rdt, root, comm, GPO_M, &how_, &rc_));
    GPO_NONBLOCKING(iscatter,
                 gpo_prep_scatter(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, root, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
}

int mca_coll_gdrpipe_iscatterv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t displs,
                              gpo_dt_t *sdt, void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt, int root,
                              gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(0, gpo_devmove_scatter(sbuf, 0, &scounts, &displs, sdt, rbuf, rcount, rdt, root, comm, GPO_M, &how_, &rc_));
    GPO_NONBLOCKING(iscatterv,
                 gpo_prep_scatterv(ST, &sbuf, scounts, displs, sdt, &rbuf, rcount, rdt, root,
                                   comm),
                 sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm);
}

