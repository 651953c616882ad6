/* coll/gdrpipe's MCA parameters and their defaults (coll_gdrpipe_params.h). */
#include "coll_gdrpipe_params.h"

#include "opal/mca/base/mca_base_var.h"
#include "ompi/constants.h"

#include <stdlib.h>

gpo_coll_params_t gpo_coll_params = {
    /* above every module that moves data itself (tuned 30, libnbc 10,
     * basic 10, self 75), as coll/cuda */
    .priority = 78,
    .verbose = 0,
    .device_reduce = 2,
    .device_moves = 1,
    /* where handing on measured faster than staging (bench/RESULTS.md:
     * two ranks on one H100, Open MPI 4.1.6 and 5.0.7): alltoall(v),
     * allgather and scatter from 2 MiB blocks, gather from 32 KiB */
    .device_moves_min = (size_t)2 << 20,
    .device_moves_min_gather = (size_t)32 << 10,
    .device_moves_gpu = 2,
    /* below, staging measured faster (only the root writes device memory) */
    .device_moves_gpu_min_gather = (size_t)8 << 10,
};

int gpo_coll_report_counters(void)
{
    const char *stats = getenv("UCX_GDRPIPE_STATS");
    return gpo_coll_params.verbose > 0 ||
           (stats != NULL && (stats[0] == 'y' || stats[0] == 'Y' || stats[0] == '1'));
}

int gpo_coll_params_register(const mca_base_component_t *component)
{
    (void)mca_base_component_var_register(component,
        "priority", "Priority of coll gdrpipe (device buffers staged through host memory "
        "around the collectives of the modules below it)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &gpo_coll_params.priority);
    (void)mca_base_component_var_register(component,
        "verbose", "Say why coll gdrpipe does not take part (0: silent)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &gpo_coll_params.verbose);
    (void)mca_base_component_var_register(component,
        "device_reduce", "Reduce device buffers on the GPU (MPI_Allreduce and MPI_Reduce of the "
        "predefined operations on integer and floating point types, communicators of up to "
        "16 processes, all on one host): one process per GPU maps the others' buffers and "
        "runs one kernel; the ranks agree on it with one small allgather per call. "
        "0: off (device buffers staged through host memory); 1: every such call; "
        "2: on communicators once their reductions had device buffers (checked with a "
        "one-integer allreduce at the 1st, 2nd, 4th, ... 64th such call, then every 64th)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &gpo_coll_params.device_reduce);
    (void)mca_base_component_var_register(component,
        "device_moves", "Collectives that move data without reducing it (bcast, gather, "
        "scatter, allgather, alltoall, their v/w, nonblocking, persistent and neighbourhood "
        "forms): 1: device buffers go to the modules below as they are, where Open MPI's "
        "own code moves device memory (Open MPI 5 with accelerator/cuda selected): the "
        "exchanges run by point-to-point on the device buffers; 0: staged through host "
        "memory. Open MPI 4.1 always stages",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &gpo_coll_params.device_moves);
    (void)mca_base_component_var_register(component,
        "device_moves_min", "With device_moves 1: hand a data-moving collective's device "
        "buffers on only when the largest block a process sends or receives (one peer's "
        "part) has at least this many bytes; smaller ones are staged (bcast: always handed "
        "on; gather and gatherv: device_moves_min_gather)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &gpo_coll_params.device_moves_min);
    (void)mca_base_component_var_register(component,
        "device_moves_min_gather", "device_moves_min of gather and gatherv",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &gpo_coll_params.device_moves_min_gather);
    (void)mca_base_component_var_register(component,
        "device_moves_gpu", "Move the blocking data-moving collectives of device buffers "
        "(allgather(v), alltoall(v), gather(v), scatter(v); communicators of up to 16 "
        "processes, all on one host, blocks without gaps, not in place) on the GPU: one "
        "process per GPU maps the others' buffers and copies every block in one launch; the "
        "ranks agree on it with one small allgather per call. Otherwise as device_moves says. "
        "0: off; 1: every such call; 2: on communicators once their calls had device buffers "
        "(checked as device_reduce 2)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &gpo_coll_params.device_moves_gpu);
    (void)mca_base_component_var_register(component,
        "device_moves_gpu_min_gather", "MPI_Gather moves on the GPU (device_moves_gpu) from "
        "blocks of this many bytes; smaller ones go as device_moves says",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &gpo_coll_params.device_moves_gpu_min_gather);
    return OMPI_SUCCESS;
}
