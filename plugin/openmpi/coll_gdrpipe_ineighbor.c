/* Nonblocking neighbourhood collectives of the module. */
#include "coll_gdrpipe_wrap.h"
#include "coll_gdrpipe_funcs.h"


int mca_coll_gdrpipe_ineighbor_allgather(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                        void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                        gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(ineighbor_allgather,
                 gpo_prep_neighbor_allgather(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_ineighbor_allgatherv(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                         void *rbuf, gpo_counts_t rcounts, gpo_displs_t displs,
                                         gpo_dt_t *rdt, gpo_comm_t *comm,
                                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(ineighbor_allgatherv,
                 gpo_prep_neighbor_allgatherv(ST, &sbuf, scount, sdt, &rbuf, rcounts, displs,
                                              rdt, comm),
                 sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
}

int mca_coll_gdrpipe_ineighbor_alltoall(const void *sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                                       void *rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                       gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(ineighbor_alltoall,
                 gpo_prep_neighbor_alltoall(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_ineighbor_alltoallv(const void *sbuf, gpo_counts_t scounts,
                                        gpo_displs_t sdispls, gpo_dt_t *sdt, void *rbuf,
                                        gpo_counts_t rcounts, gpo_displs_t rdispls,
                                        gpo_dt_t *rdt, gpo_comm_t *comm,
                                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(ineighbor_alltoallv,
                 gpo_prep_neighbor_alltoallv(ST, &sbuf, scounts, sdispls, sdt, &rbuf, rcounts,
                                             rdispls, rdt, comm),
                 sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
}

int mca_coll_gdrpipe_ineighbor_alltoallw(const void *sbuf, gpo_counts_t scounts,
                                        gpo_adispls_t sdispls, gpo_dt_t *const *sdts,
                                        void *rbuf, gpo_counts_t rcounts,
                                        gpo_adispls_t rdispls, gpo_dt_t *const *rdts,
                                        gpo_comm_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    GPO_NONBLOCKING(ineighbor_alltoallw,
                 gpo_prep_neighbor_alltoallw(ST, &sbuf, scounts, sdispls, sdts, &rbuf, rcounts,
                                             rdispls, rdts, comm),
                 sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm);
}
