/* Persistent collectives of the module (MPIX_*_init): the next module's
 * request on host buffers that stay staged for the request's life
 * (gpo_end_persistent); host buffers go straight to the next module. */
#include "coll_gdrpipe_wrap.h"
#include "coll_gdrpipe_funcs.h"
#include "coll_gdrpipe_devmove.h"


int mca_coll_gdrpipe_allgather_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                               gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(1, gpo_devmove_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm, GPO_M, &how_, &rc_));
    GPO_PERSISTENT(allgather_init, gpo_prep_allgather(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_allgatherv_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                                gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt,
                                gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(1, gpo_devmove_allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm, GPO_M, &how_, &rc_));
    GPO_PERSISTENT(allgatherv_init,
                 gpo_prep_allgatherv(ST, &sbuf, scount, sdt, &rbuf, rcounts, displs, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
}

int mca_coll_gdrpipe_allreduce_init(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                               struct ompi_op_t *op, gpo_comm_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(allreduce_init, gpo_prep_allreduce(ST, &sbuf, &rbuf, count, dt, comm),
                 sbuf, rbuf, count, dt, op, comm);
}

int mca_coll_gdrpipe_alltoall_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                              gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                              struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(1, gpo_devmove_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm, GPO_M, &how_, &rc_));
    GPO_PERSISTENT(alltoall_init, gpo_prep_alltoall(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_alltoallv_init(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *sdt, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *rdt, gpo_comm_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(1, gpo_devmove_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm, GPO_M, &how_, &rc_));
    GPO_PERSISTENT(alltoallv_init,
                 gpo_prep_alltoallv(ST, &sbuf, scounts, sdispls, sdt, &rbuf, rcounts, rdispls,
                                    rdt, comm),
                 sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
}

int mca_coll_gdrpipe_alltoallw_init(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *const *sdts, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *const *rdts, gpo_comm_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(alltoallw_init,
                 gpo_prep_alltoallw(ST, &sbuf, scounts, sdispls, sdts, &rbuf, rcounts, rdispls,
                                    rdts, comm),
                 sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm);
}

int mca_coll_gdrpipe_bcast_init(void *buf, gpo_count_t count, gpo_dt_t *dt, int root, gpo_comm_t *comm,
                           struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(bcast_init, gpo_prep_bcast(ST, &buf, count, dt, root, comm),
                 buf, count, dt, root, comm);
}

int mca_coll_gdrpipe_exscan_init(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, gpo_comm_t *comm,
                            struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(exscan_init, gpo_prep_allreduce(ST, &sbuf, &rbuf, count, dt, comm),
                 sbuf, rbuf, count, dt, op, comm);
}

int mca_coll_gdrpipe_gather_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                            gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                            struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(1, gpo_devmove_gather(sbuf, scount, sdt, rbuf, rcount, NULL, NULL, rdt, root, comm, GPO_M, &how_, &rc_));
    GPO_PERSISTENT(gather_init,
                 gpo_prep_gather(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, root, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
}

int mca_coll_gdrpipe_gatherv_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt, int root,
                             gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(1, gpo_devmove_gather(sbuf, scount, sdt, rbuf, 0, &rcounts, &displs, rdt, root, comm, GPO_M, &how_, &rc_));
    GPO_PERSISTENT(gatherv_init,
                 gpo_prep_gatherv(ST, &sbuf, scount, sdt, &rbuf, rcounts, displs, rdt, root,
                                  comm),
                 sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm);
}

int mca_coll_gdrpipe_reduce_init(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, int root, gpo_comm_t *comm,
                            struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(reduce_init, gpo_prep_reduce(ST, &sbuf, &rbuf, count, dt, root, comm),
                 sbuf, rbuf, count, dt, op, root, comm);
}

int mca_coll_gdrpipe_reduce_scatter_init(const void *sbuf, void *rbuf, gpo_counts_t rcounts,
                                    gpo_dt_t *dt, struct ompi_op_t *op, gpo_comm_t *comm,
                                    struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(reduce_scatter_init, gpo_prep_reduce_scatter(ST, &sbuf, &rbuf, rcounts, dt, comm),
                 sbuf, rbuf, rcounts, dt, op, comm);
}

int mca_coll_gdrpipe_reduce_scatter_block_init(const void *sbuf, void *rbuf, gpo_count_t rcount,
                                          gpo_dt_t *dt, struct ompi_op_t *op,
                                          gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(reduce_scatter_block_init,
                 gpo_prep_reduce_scatter_block(ST, &sbuf, &rbuf, rcount, dt, comm),
                 sbuf, rbuf, rcount, dt, op, comm);
}

int mca_coll_gdrpipe_scan_init(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                          struct ompi_op_t *op, gpo_comm_t *comm,
                          struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(scan_init, gpo_prep_allreduce(ST, &sbuf, &rbuf, count, dt, comm),
                 sbuf, rbuf, count, dt, op, comm);
}

int mca_coll_gdrpipe_scatter_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                             struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(1, gpo_devmove_scatter(sbuf, scount, NULL, NULL, sdt, rbuf, rcount, rdt, root, comm, GPO_M, &how_, &rc_));
    GPO_PERSISTENT(scatter_init,
                 gpo_prep_scatter(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, root, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
}

int mca_coll_gdrpipe_scatterv_init(const void *sbuf, gpo_counts_t scounts, gpo_displs_t displs,
                              gpo_dt_t *sdt, void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt, int root,
                              gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_DEVMOVE_FIRST(1, gpo_devmove_scatter(sbuf, 0, &scounts, &displs, sdt, rbuf, rcount, rdt, root, comm, GPO_M, &how_, &rc_));
    GPO_PERSISTENT(scatterv_init,
                 gpo_prep_scatterv(ST, &sbuf, scounts, displs, sdt, &rbuf, rcount, rdt, root,
                                   comm),
                 sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm);
}


int mca_coll_gdrpipe_neighbor_allgather_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                        void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                        gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(neighbor_allgather_init,
                 gpo_prep_neighbor_allgather(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_neighbor_allgatherv_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                         void *rbuf, gpo_counts_t rcounts, gpo_displs_t displs,
                                         gpo_dt_t *rdt, gpo_comm_t *comm,
                                         struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(neighbor_allgatherv_init,
                 gpo_prep_neighbor_allgatherv(ST, &sbuf, scount, sdt, &rbuf, rcounts, displs,
                                              rdt, comm),
                 sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
}

int mca_coll_gdrpipe_neighbor_alltoall_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                       void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                       gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(neighbor_alltoall_init,
                 gpo_prep_neighbor_alltoall(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_neighbor_alltoallv_init(const void *sbuf, gpo_counts_t scounts,
                                        gpo_displs_t sdispls, gpo_dt_t *sdt, void *rbuf,
                                        gpo_counts_t rcounts, gpo_displs_t rdispls,
                                        gpo_dt_t *rdt, gpo_comm_t *comm,
                                        struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(neighbor_alltoallv_init,
                 gpo_prep_neighbor_alltoallv(ST, &sbuf, scounts, sdispls, sdt, &rbuf, rcounts,
                                             rdispls, rdt, comm),
                 sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
}

int mca_coll_gdrpipe_neighbor_alltoallw_init(const void *sbuf, gpo_counts_t scounts,
                                        gpo_adispls_t sdispls, gpo_dt_t *const *sdts,
                                        void *rbuf, gpo_counts_t rcounts,
                                        gpo_adispls_t rdispls, gpo_dt_t *const *rdts,
                                        gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_PERSISTENT(neighbor_alltoallw_init,
                 gpo_prep_neighbor_alltoallw(ST, &sbuf, scounts, sdispls, sdts, &rbuf, rcounts,
                                             rdispls, rdts, comm),
                 sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm);
}
