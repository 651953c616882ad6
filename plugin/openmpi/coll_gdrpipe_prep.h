/* Which buffers of each collective are inputs and outputs, and how many
 * bytes of them the operation touches (Open MPI 4.1 argument lists; for
 * intercommunicators the roles of MPI_ROOT / MPI_PROC_NULL). Each function
 * replaces the device buffers among its pointer arguments by staged host
 * copies (inputs copied in) and returns 0 when no buffer is on the device
 * (nothing changed), 1 when some are staged (end with gpo_end_*), or an
 * OMPI error code (nothing left staged). */
#ifndef GDRPIPE_COLL_GDRPIPE_PREP_H
#define GDRPIPE_COLL_GDRPIPE_PREP_H

#include "coll_gdrpipe.h"

typedef struct ompi_communicator_t gpo_comm_t;
typedef struct ompi_datatype_t gpo_dt_t;

int gpo_prep_allgather(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                       void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm);
int gpo_prep_allgatherv(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                        void **rbuf, gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt,
                        gpo_comm_t *comm);
/* allreduce, scan, exscan */
int gpo_prep_allreduce(gpo_stage_t *st, const void **sbuf, void **rbuf, gpo_count_t count,
                       gpo_dt_t *dt, gpo_comm_t *comm);
int gpo_prep_alltoall(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                      void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm);
int gpo_prep_alltoallv(gpo_stage_t *st, const void **sbuf, gpo_counts_t scounts,
                       gpo_displs_t sdispls, gpo_dt_t *sdt, void **rbuf, gpo_counts_t rcounts,
                       gpo_displs_t rdispls, gpo_dt_t *rdt, gpo_comm_t *comm);
int gpo_prep_alltoallw(gpo_stage_t *st, const void **sbuf, gpo_counts_t scounts,
                       gpo_displs_t sdispls, gpo_dt_t *const *sdts, void **rbuf,
                       gpo_counts_t rcounts, gpo_displs_t rdispls, gpo_dt_t *const *rdts,
                       gpo_comm_t *comm);
int gpo_prep_bcast(gpo_stage_t *st, void **buf, gpo_count_t count, gpo_dt_t *dt, int root,
                   gpo_comm_t *comm);
int gpo_prep_gather(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                    void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm);
int gpo_prep_gatherv(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                     void **rbuf, gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt,
                     int root, gpo_comm_t *comm);
int gpo_prep_reduce(gpo_stage_t *st, const void **sbuf, void **rbuf, gpo_count_t count, gpo_dt_t *dt,
                    int root, gpo_comm_t *comm);
int gpo_prep_reduce_scatter(gpo_stage_t *st, const void **sbuf, void **rbuf,
                            gpo_counts_t rcounts, gpo_dt_t *dt, gpo_comm_t *comm);
int gpo_prep_reduce_scatter_block(gpo_stage_t *st, const void **sbuf, void **rbuf,
                                  gpo_count_t rcount, gpo_dt_t *dt, gpo_comm_t *comm);
int gpo_prep_scatter(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                     void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm);
int gpo_prep_scatterv(gpo_stage_t *st, const void **sbuf, gpo_counts_t scounts,
                      gpo_displs_t displs, gpo_dt_t *sdt, void **rbuf, gpo_count_t rcount,
                      gpo_dt_t *rdt, int root, gpo_comm_t *comm);
int gpo_prep_reduce_local(gpo_stage_t *st, const void **inbuf, void **inoutbuf, gpo_count_t count,
                          gpo_dt_t *dt);

/* neighborhood collectives: blocks per in/out neighbour of the topology */
int gpo_prep_neighbor_allgather(gpo_stage_t *st, const void **sbuf, gpo_count_t scount,
                                gpo_dt_t *sdt, void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                gpo_comm_t *comm);
int gpo_prep_neighbor_allgatherv(gpo_stage_t *st, const void **sbuf, gpo_count_t scount,
                                 gpo_dt_t *sdt, void **rbuf, gpo_counts_t rcounts,
                                 gpo_displs_t displs, gpo_dt_t *rdt, gpo_comm_t *comm);
int gpo_prep_neighbor_alltoall(gpo_stage_t *st, const void **sbuf, gpo_count_t scount,
                               gpo_dt_t *sdt, void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                               gpo_comm_t *comm);
int gpo_prep_neighbor_alltoallv(gpo_stage_t *st, const void **sbuf, gpo_counts_t scounts,
                                gpo_displs_t sdispls, gpo_dt_t *sdt, void **rbuf,
                                gpo_counts_t rcounts, gpo_displs_t rdispls, gpo_dt_t *rdt,
                                gpo_comm_t *comm);
int gpo_prep_neighbor_alltoallw(gpo_stage_t *st, const void **sbuf, gpo_counts_t scounts,
                                gpo_adispls_t sdispls, gpo_dt_t *const *sdts, void **rbuf,
                                gpo_counts_t rcounts, gpo_adispls_t rdispls,
                                gpo_dt_t *const *rdts, gpo_comm_t *comm);

/* data-moving collectives whose device buffers went to the modules below
 * as they were (coll_gdrpipe_params.h, device_moves), over the process */
extern unsigned long gpo_moves_handed_on;
/* nonzero while a nonblocking or persistent collective prepares its buffers
 * (coll_gdrpipe_wrap.h): Open MPI 4.1 moves device buffers in blocking ones
 * only */
extern __thread int gpo_prep_in_request;

#endif
