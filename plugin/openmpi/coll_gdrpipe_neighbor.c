/* Blocking neighbourhood collectives of the module. */
#include "coll_gdrpipe_wrap.h"
#include "coll_gdrpipe_funcs.h"

int mca_coll_gdrpipe_neighbor_allgather(const void *sbuf, int scount, gpo_dt_t *sdt,
                                        void *rbuf, int rcount, gpo_dt_t *rdt,
                                        gpo_comm_t *comm, mca_coll_base_module_t *module)
{
    GPO_BLOCKING(neighbor_allgather,
                 gpo_prep_neighbor_allgather(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_neighbor_allgatherv(const void *sbuf, int scount, gpo_dt_t *sdt,
                                         void *rbuf, const int *rcounts, const int *displs,
                                         gpo_dt_t *rdt, gpo_comm_t *comm,
                                         mca_coll_base_module_t *module)
{
    GPO_BLOCKING(neighbor_allgatherv,
                 gpo_prep_neighbor_allgatherv(ST, &sbuf, scount, sdt, &rbuf, rcounts, displs,
                                              rdt, comm),
                 sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
}

int mca_coll_gdrpipe_neighbor_alltoall(const void *sbuf, int scount, gpo_dt_t *sdt,
                                       void *rbuf, int rcount, gpo_dt_t *rdt,
                                       gpo_comm_t *comm, mca_coll_base_module_t *module)
{
    GPO_BLOCKING(neighbor_alltoall,
                 gpo_prep_neighbor_alltoall(ST, &sbuf, scount, sdt, &rbuf, rcount, rdt, comm),
                 sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

int mca_coll_gdrpipe_neighbor_alltoallv(const void *sbuf, const int *scounts,
                                        const int *sdispls, gpo_dt_t *sdt, void *rbuf,
                                        const int *rcounts, const int *rdispls,
                                        gpo_dt_t *rdt, gpo_comm_t *comm,
                                        mca_coll_base_module_t *module)
{
    GPO_BLOCKING(neighbor_alltoallv,
                 gpo_prep_neighbor_alltoallv(ST, &sbuf, scounts, sdispls, sdt, &rbuf, rcounts,
                                             rdispls, rdt, comm),
                 sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
}

int mca_coll_gdrpipe_neighbor_alltoallw(const void *sbuf, const int *scounts,
                                        const MPI_Aint *sdispls, gpo_dt_t *const *sdts,
                                        void *rbuf, const int *rcounts,
                                        const MPI_Aint *rdispls, gpo_dt_t *const *rdts,
                                        gpo_comm_t *comm, mca_coll_base_module_t *module)
{
    GPO_BLOCKING(neighbor_alltoallw,
                 gpo_prep_neighbor_alltoallw(ST, &sbuf, scounts, sdispls, sdts, &rbuf, rcounts,
                                             rdispls, rdts, comm),
                 sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm);
}
