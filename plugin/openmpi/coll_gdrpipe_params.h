/* coll/gdrpipe's MCA parameters (coll_gdrpipe_params.c): registered with
 * the component, read by its module and by the device reductions. */
#ifndef GDRPIPE_COLL_GDRPIPE_PARAMS_H
#define GDRPIPE_COLL_GDRPIPE_PARAMS_H

#include "ompi_config.h"

#include "opal/mca/mca.h"

typedef struct gpo_coll_params {
    int priority;      /* of the module; below 0 it never takes part */
    int verbose;       /* say why it does not take part (0: silent) */
    int device_reduce; /* reductions of device buffers on the GPU (devreduce.h):
                        * 0 off, 1 always, 2 once device buffers were seen */
    int device_moves;  /* collectives that only move data (no reduction) hand
                        * device buffers to the modules below where Open MPI's
                        * own code moves them (Open MPI 5 with accelerator/cuda):
                        * 0 stage them instead, 1 hand them on */
    size_t device_moves_min;        /* ... from blocks of this many bytes (the
                                     * largest one a process sends or receives) */
    size_t device_moves_min_gather; /* ... for gather and gatherv */
    int device_moves_gpu; /* data-moving collectives moved on the GPU by one
                           * process per GPU (devmove.h): 0 off, 1 always,
                           * 2 once device buffers were seen */
    size_t device_moves_gpu_min_gather; /* MPI_Gather on the GPU from blocks of this size */
} gpo_coll_params_t;

extern gpo_coll_params_t gpo_coll_params;

/* 1 when the component reports its counters: verbose > 0, or
 * UCX_GDRPIPE_STATS=y as for the plugin's own counters */
int gpo_coll_report_counters(void);

/* registers them as the component's variables (coll_gdrpipe_priority, ...) */
int gpo_coll_params_register(const mca_base_component_t *component);

#endif
