/* Reductions of device buffers on the GPU (allreduce, reduce,
 * reduce_scatter and its block form), for communicators whose
 * processes all run on this host (coll_gdrpipe_devreduce.c). The ranks must
 * agree (a rank cannot know the others' buffers): one small allgather per
 * qualifying call, host buffers included. MCA parameter
 * coll_gdrpipe_device_reduce: 0 off, 1 every qualifying call, 2 (default)
 * on communicators once their reductions had device buffers. */
#ifndef GDRPIPE_COLL_GDRPIPE_DEVREDUCE_H
#define GDRPIPE_COLL_GDRPIPE_DEVREDUCE_H

#include "coll_gdrpipe.h"

/* MPI_Allreduce on the GPU. 0: done, *rc the result; 1: not taken (the
 * same answer on every rank of comm: the caller stages as before). */
int gpo_devreduce_allreduce(const void *sbuf, void *rbuf, gpo_count_t count,
                            struct ompi_datatype_t *dt, struct ompi_op_t *op,
                            struct ompi_communicator_t *comm,
                            mca_coll_gdrpipe_module_t *m, int *rc);

/* MPI_Reduce to root on the GPU: the same contract */
int gpo_devreduce_reduce(const void *sbuf, void *rbuf, gpo_count_t count, struct ompi_datatype_t *dt,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_gdrpipe_module_t *m, int *rc);

/* MPI_Reduce_scatter (rcounts) and MPI_Reduce_scatter_block (rcount each)
 * on the GPU: the same contract; in place is staged */
int gpo_devreduce_reduce_scatter(const void *sbuf, void *rbuf, const gpo_counts_t *rcounts,
                                 gpo_count_t rcount, struct ompi_datatype_t *dt,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                 mca_coll_gdrpipe_module_t *m, int *rc);

/* enum gp_red_type of a predefined datatype, enum gp_red_op of a predefined
 * operation; -1 when the kernel does not do it */
int gpo_red_type_of(struct ompi_datatype_t *dt);
int gpo_red_op_of(struct ompi_op_t *op);

#endif
