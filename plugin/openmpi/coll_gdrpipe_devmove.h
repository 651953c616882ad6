/* Data-moving collectives of device buffers on the GPU, for communicators
 * whose processes all run on this host (coll_gdrpipe_devmove.c): one
 * process per GPU maps the others' buffers and moves every block in one
 * launch. The ranks agree with one small allgather per qualifying call.
 * MCA parameter coll_gdrpipe_device_moves_gpu: 0 off, 1 every qualifying
 * call, 2 (default) on communicators once their calls had device buffers. */
#ifndef GDRPIPE_COLL_GDRPIPE_DEVMOVE_H
#define GDRPIPE_COLL_GDRPIPE_DEVMOVE_H

#include "coll_gdrpipe.h"

/* MPI_Allgather / MPI_Alltoall on the GPU. 0: done, *rc the result; 1: not
 * taken (the same answer on every rank of comm: the caller goes on as
 * before). */
int gpo_devmove_allgather(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                          void *rbuf, gpo_count_t rcount, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                          int *rc);
int gpo_devmove_alltoall(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                         void *rbuf, gpo_count_t rcount, struct ompi_datatype_t *rdt,
                         struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                         int *rc);

#endif
