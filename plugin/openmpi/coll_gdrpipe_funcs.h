/* The functions of the module, one per slot of Open MPI's collective table
 * (4.1: mca_coll_base_module_2_3_0_t); counts and displacements have the
 * types of coll_gdrpipe_abi.h, which 6.0 widens. */
#ifndef GDRPIPE_COLL_GDRPIPE_FUNCS_H
#define GDRPIPE_COLL_GDRPIPE_FUNCS_H

#include "coll_gdrpipe_prep.h"

int mca_coll_gdrpipe_allgather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                               gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                               mca_coll_base_module_t *module);
int mca_coll_gdrpipe_allgatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                                gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt,
                                gpo_comm_t *comm, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_allreduce(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                               struct ompi_op_t *op, gpo_comm_t *comm,
                               mca_coll_base_module_t *module);
int mca_coll_gdrpipe_alltoall(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                              gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                              mca_coll_base_module_t *module);
int mca_coll_gdrpipe_alltoallv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *sdt, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *rdt, gpo_comm_t *comm,
                               mca_coll_base_module_t *module);
int mca_coll_gdrpipe_alltoallw(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *const *sdts, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *const *rdts, gpo_comm_t *comm,
                               mca_coll_base_module_t *module);
int mca_coll_gdrpipe_bcast(void *buf, gpo_count_t count, gpo_dt_t *dt, int root, gpo_comm_t *comm,
                           mca_coll_base_module_t *module);
int mca_coll_gdrpipe_exscan(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, gpo_comm_t *comm,
                            mca_coll_base_module_t *module);
int mca_coll_gdrpipe_gather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                            gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                            mca_coll_base_module_t *module);
int mca_coll_gdrpipe_gatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt, int root,
                             gpo_comm_t *comm, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_reduce(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, int root, gpo_comm_t *comm,
                            mca_coll_base_module_t *module);
int mca_coll_gdrpipe_reduce_scatter(const void *sbuf, void *rbuf, gpo_counts_t rcounts,
                                    gpo_dt_t *dt, struct ompi_op_t *op, gpo_comm_t *comm,
                                    mca_coll_base_module_t *module);
int mca_coll_gdrpipe_reduce_scatter_block(const void *sbuf, void *rbuf, gpo_count_t rcount,
                                          gpo_dt_t *dt, struct ompi_op_t *op,
                                          gpo_comm_t *comm, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_scan(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                          struct ompi_op_t *op, gpo_comm_t *comm,
                          mca_coll_base_module_t *module);
int mca_coll_gdrpipe_scatter(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                             mca_coll_base_module_t *module);
int mca_coll_gdrpipe_scatterv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t displs,
                              gpo_dt_t *sdt, void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt, int root,
                              gpo_comm_t *comm, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_reduce_local(const void *inbuf, void *inoutbuf, gpo_count_t count, gpo_dt_t *dt,
                                  struct ompi_op_t *op, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_iallgather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                               gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_iallgatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                                gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt,
                                gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_iallreduce(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                               struct ompi_op_t *op, gpo_comm_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ialltoall(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                              gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                              ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ialltoallv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *sdt, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *rdt, gpo_comm_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ialltoallw(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *const *sdts, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *const *rdts, gpo_comm_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ibcast(void *buf, gpo_count_t count, gpo_dt_t *dt, int root, gpo_comm_t *comm,
                           ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_iexscan(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, gpo_comm_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_igather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                            gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_igatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt, int root,
                             gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ireduce(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, int root, gpo_comm_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ireduce_scatter(const void *sbuf, void *rbuf, gpo_counts_t rcounts,
                                    gpo_dt_t *dt, struct ompi_op_t *op, gpo_comm_t *comm,
                                    ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ireduce_scatter_block(const void *sbuf, void *rbuf, gpo_count_t rcount,
                                          gpo_dt_t *dt, struct ompi_op_t *op,
                                          gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_iscan(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                          struct ompi_op_t *op, gpo_comm_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_iscatter(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_iscatterv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t displs,
                              gpo_dt_t *sdt, void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt, int root,
                              gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_neighbor_allgather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                        void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                        gpo_comm_t *comm, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_neighbor_allgatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                         void *rbuf, gpo_counts_t rcounts, gpo_displs_t displs,
                                         gpo_dt_t *rdt, gpo_comm_t *comm,
                                         mca_coll_base_module_t *module);
int mca_coll_gdrpipe_neighbor_alltoall(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                       void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                       gpo_comm_t *comm, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_neighbor_alltoallv(const void *sbuf, gpo_counts_t scounts,
                                        gpo_displs_t sdispls, gpo_dt_t *sdt, void *rbuf,
                                        gpo_counts_t rcounts, gpo_displs_t rdispls,
                                        gpo_dt_t *rdt, gpo_comm_t *comm,
                                        mca_coll_base_module_t *module);
int mca_coll_gdrpipe_neighbor_alltoallw(const void *sbuf, gpo_counts_t scounts,
                                        gpo_adispls_t sdispls, gpo_dt_t *const *sdts,
                                        void *rbuf, gpo_counts_t rcounts,
                                        gpo_adispls_t rdispls, gpo_dt_t *const *rdts,
                                        gpo_comm_t *comm, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ineighbor_allgather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                        void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                        gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ineighbor_allgatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                         void *rbuf, gpo_counts_t rcounts, gpo_displs_t displs,
                                         gpo_dt_t *rdt, gpo_comm_t *comm,
                                         ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ineighbor_alltoall(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                       void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                       gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ineighbor_alltoallv(const void *sbuf, gpo_counts_t scounts,
                                        gpo_displs_t sdispls, gpo_dt_t *sdt, void *rbuf,
                                        gpo_counts_t rcounts, gpo_displs_t rdispls,
                                        gpo_dt_t *rdt, gpo_comm_t *comm,
                                        ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_ineighbor_alltoallw(const void *sbuf, gpo_counts_t scounts,
                                        gpo_adispls_t sdispls, gpo_dt_t *const *sdts,
                                        void *rbuf, gpo_counts_t rcounts,
                                        gpo_adispls_t rdispls, gpo_dt_t *const *rdts,
                                        gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_allgather_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                               gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_allgatherv_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                                gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt,
                                gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_allreduce_init(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                               struct ompi_op_t *op, gpo_comm_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_alltoall_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                              gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm,
                              struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_alltoallv_init(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *sdt, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *rdt, gpo_comm_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_alltoallw_init(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                               gpo_dt_t *const *sdts, void *rbuf, gpo_counts_t rcounts,
                               gpo_displs_t rdispls, gpo_dt_t *const *rdts, gpo_comm_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_bcast_init(void *buf, gpo_count_t count, gpo_dt_t *dt, int root, gpo_comm_t *comm,
                           struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_exscan_init(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, gpo_comm_t *comm,
                            struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_gather_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                            gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                            struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_gatherv_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt, int root,
                             gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_reduce_init(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                            struct ompi_op_t *op, int root, gpo_comm_t *comm,
                            struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_reduce_scatter_init(const void *sbuf, void *rbuf, gpo_counts_t rcounts,
                                    gpo_dt_t *dt, struct ompi_op_t *op, gpo_comm_t *comm,
                                    struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_reduce_scatter_block_init(const void *sbuf, void *rbuf, gpo_count_t rcount,
                                          gpo_dt_t *dt, struct ompi_op_t *op,
                                          gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_scan_init(const void *sbuf, void *rbuf, gpo_count_t count, gpo_dt_t *dt,
                          struct ompi_op_t *op, gpo_comm_t *comm,
                          struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_scatter_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt, void *rbuf,
                             gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm,
                             struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_scatterv_init(const void *sbuf, gpo_counts_t scounts, gpo_displs_t displs,
                              gpo_dt_t *sdt, void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt, int root,
                              gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_neighbor_allgather_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                        void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                        gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_neighbor_allgatherv_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                         void *rbuf, gpo_counts_t rcounts, gpo_displs_t displs,
                                         gpo_dt_t *rdt, gpo_comm_t *comm,
                                         struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_neighbor_alltoall_init(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                       void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                       gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_neighbor_alltoallv_init(const void *sbuf, gpo_counts_t scounts,
                                        gpo_displs_t sdispls, gpo_dt_t *sdt, void *rbuf,
                                        gpo_counts_t rcounts, gpo_displs_t rdispls,
                                        gpo_dt_t *rdt, gpo_comm_t *comm,
                                        struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_gdrpipe_neighbor_alltoallw_init(const void *sbuf, gpo_counts_t scounts,
                                        gpo_adispls_t sdispls, gpo_dt_t *const *sdts,
                                        void *rbuf, gpo_counts_t rcounts,
                                        gpo_adispls_t rdispls, gpo_dt_t *const *rdts,
                                        gpo_comm_t *comm, struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);

#endif
