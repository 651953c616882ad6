/* coll/gdrpipe: Open MPI collectives on device buffers for an Open MPI built
 * without CUDA. Its module sits above every other collective module of a
 * communicator (priority 78, as coll/cuda) and keeps the functions it found
 * there (the "next" module). For buffers in host memory each function costs
 * a memory-type check and calls the next one; for device buffers the
 * buffers are staged through host memory around the next module's
 * algorithm (gpo_stage.h), so that Open MPI's datatype engine and reduction
 * operators only ever touch host memory. */
#ifndef GDRPIPE_COLL_GDRPIPE_H
#define GDRPIPE_COLL_GDRPIPE_H

#include "ompi_config.h"

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/coll.h"

#include "coll_gdrpipe_abi.h"
#include "ompi/request/request.h"

#include "gpo_request.h"
#include "gpo_stage.h"

BEGIN_C_DECLS

/* its parameters: coll_gdrpipe_params.h */
typedef struct mca_coll_gdrpipe_component_t {
    gpo_coll_component_t super;
} mca_coll_gdrpipe_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_gdrpipe_component_t mca_coll_gdrpipe_component;

/* device_reduce / device_moves_gpu 2: qualifying calls so far, whether this
 * rank's buffers were on the device in one since the last check, whether
 * the communicator agrees on every call now (once set, for good) */
typedef struct gpo_auto {
    unsigned long calls;
    int dev_seen, on;
} gpo_auto_t;

typedef struct mca_coll_gdrpipe_module_t {
    mca_coll_base_module_t super;
    /* the communicator's functions below this module, retained */
    mca_coll_base_comm_coll_t next;
    /* every process of the communicator runs on this host */
    int all_local;
    /* reductions done on the GPU, and qualifying ones staged instead */
    unsigned long red_gpu, red_staged;
    /* device_reduce 2: when the communicator agrees on the GPU path */
    gpo_auto_t red_auto;
    /* the GPU path failed on this communicator (agreed): staged from now on */
    int red_failed;
    /* the same for the data-moving collectives moved on the GPU
     * (coll_gdrpipe_devmove.c) */
    unsigned long mv_gpu, mv_other;
    gpo_auto_t mv_auto;
    int mv_failed;
} mca_coll_gdrpipe_module_t;

OBJ_CLASS_DECLARATION(mca_coll_gdrpipe_module_t);

mca_coll_base_module_t *mca_coll_gdrpipe_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority);
/* fills the module's function table (coll_gdrpipe_table.c) */
void gpo_module_set_functions(mca_coll_base_module_t *m);

/* ---- spans of datatypes (coll_gdrpipe_span.c) ---------------------------- */
/* count elements from the buffer pointer */
gpo_span_t gpo_span(struct ompi_datatype_t *dt, gpo_count_t count);
/* n blocks of counts[i] elements at displs[i] extents */
gpo_span_t gpo_span_v(struct ompi_datatype_t *dt, gpo_counts_t counts, gpo_displs_t displs, int n);
/* n blocks of counts[i] elements of dts[i] at displs[i] bytes */
gpo_span_t gpo_span_w(struct ompi_datatype_t *const *dts, gpo_counts_t counts,
                      gpo_displs_t displs, int n);
gpo_span_t gpo_span_w_aint(struct ompi_datatype_t *const *dts, gpo_counts_t counts,
                           gpo_adispls_t displs, int n);
/* 1 when count elements leave no gaps (an output need not be copied in) */
int gpo_dense(struct ompi_datatype_t *dt, gpo_count_t count);

END_C_DECLS

#endif
