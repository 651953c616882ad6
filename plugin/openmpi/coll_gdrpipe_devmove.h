/* Data-moving collectives of device buffers on the GPU, for communicators
 * whose processes all run on this host (coll_gdrpipe_devmove.c): one
 * process per GPU maps the others' buffers and moves every block in one
 * launch. The ranks agree with one small allgather per qualifying call.
 * MCA parameter coll_gdrpipe_device_moves_gpu: 0 off, 1 every qualifying
 * call, 2 (default) on communicators once their calls had device buffers.
 *
 * Each function returns 0 when it did the call (*rc: its result) and 1 when
 * it did not take it, the same answer on every rank of comm: the caller then
 * goes on as before. how NULL: the blocking form; else the nonblocking or
 * persistent one, whose request the call makes (coll_gdrpipe_idevmove.c). */
#ifndef GDRPIPE_COLL_GDRPIPE_DEVMOVE_H
#define GDRPIPE_COLL_GDRPIPE_DEVMOVE_H

#include "coll_gdrpipe.h"
#include "coll_gdrpipe_mvpart.h"

int gpo_devmove_allgather(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                          void *rbuf, gpo_count_t rcount, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                          const gpo_mv_how_t *how, int *rc);
int gpo_devmove_alltoall(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                         void *rbuf, gpo_count_t rcount, struct ompi_datatype_t *rdt,
                         struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                         const gpo_mv_how_t *how, int *rc);
int gpo_devmove_allgatherv(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                           void *rbuf, gpo_counts_t rcounts, gpo_displs_t displs,
                           struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                           mca_coll_gdrpipe_module_t *m, const gpo_mv_how_t *how, int *rc);
int gpo_devmove_alltoallv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                          struct ompi_datatype_t *sdt, void *rbuf, gpo_counts_t rcounts,
                          gpo_displs_t rdispls, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                          const gpo_mv_how_t *how, int *rc);
/* gather and gatherv: rcounts NULL for gather (rcount each) */
int gpo_devmove_gather(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                       void *rbuf, gpo_count_t rcount, const gpo_counts_t *rcounts,
                       const gpo_displs_t *displs, struct ompi_datatype_t *rdt, int root,
                       struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                       const gpo_mv_how_t *how, int *rc);
/* scatter and scatterv: scounts NULL for scatter (scount each) */
int gpo_devmove_scatter(const void *sbuf, gpo_count_t scount, const gpo_counts_t *scounts,
                        const gpo_displs_t *displs, struct ompi_datatype_t *sdt, void *rbuf,
                        gpo_count_t rcount, struct ompi_datatype_t *rdt, int root,
                        struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                       const gpo_mv_how_t *how, int *rc);

#endif
