/* The component mca_coll_gdrpipe: found by Open MPI in the folder that
 * gdrpipe-run adds to mca_base_component_path. It takes part only where
 * the gdrpipe UCX plugin is loaded and has a usable CUDA driver. */
#include "coll_gdrpipe.h"

#include "gpo_dev.h"
#include "gpo_mpix.h"

#include "opal/util/output.h"

static int gdrpipe_register(void);
static int gdrpipe_init_query(bool enable_progress_threads, bool enable_mpi_threads);

mca_coll_gdrpipe_component_t mca_coll_gdrpipe_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "gdrpipe",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_register_component_params = gdrpipe_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = gdrpipe_init_query,
        .collm_comm_query = mca_coll_gdrpipe_comm_query,
    },
    /* above every module that moves data itself (tuned 30, libnbc 10,
     * basic 10, self 75), as coll/cuda */
    .priority = 78,
    .verbose = 0,
    .device_reduce = 2,
};

static int gdrpipe_register(void)
{
    (void)mca_base_component_var_register(&mca_coll_gdrpipe_component.super.collm_version,
        "priority", "Priority of coll gdrpipe (device buffers staged through host memory "
        "around the collectives of the modules below it)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gdrpipe_component.priority);
    (void)mca_base_component_var_register(&mca_coll_gdrpipe_component.super.collm_version,
        "verbose", "Say why coll gdrpipe does not take part (0: silent)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gdrpipe_component.verbose);
    (void)mca_base_component_var_register(&mca_coll_gdrpipe_component.super.collm_version,
        "device_reduce", "Reduce device buffers on the GPU (MPI_Allreduce and MPI_Reduce of the "
        "predefined operations on integer and floating point types, communicators of up to "
        "16 processes, all on one host): one process per GPU maps the others' buffers and "
        "runs one kernel; the ranks agree on it with one small allgather per call. "
        "0: off (device buffers staged through host memory); 1: every such call; "
        "2: on communicators once their reductions had device buffers (checked with a "
        "one-integer allreduce at the 1st, 2nd, 4th, ... 64th such call, then every 64th)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gdrpipe_component.device_reduce);
    return OMPI_SUCCESS;
}

static int gdrpipe_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    (void)enable_mpi_threads;
    /* without CUDA the module still takes part, passing every host buffer
     * through: the device reductions need every rank of a communicator to
     * make the same collective calls, a rank without CUDA included */
    if (gpo_dev() == NULL) {
        if (mca_coll_gdrpipe_component.verbose > 0) {
            opal_output(0, "coll gdrpipe: no device buffers here: %s", gpo_dev_why_not());
        }
        return OMPI_SUCCESS;
    }
    gpo_mpix_set_supported(1);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_gdrpipe_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority)
{
    (void)comm;
    if (mca_coll_gdrpipe_component.priority < 0) {
        return NULL;
    }
    mca_coll_gdrpipe_module_t *m = OBJ_NEW(mca_coll_gdrpipe_module_t);
    if (m == NULL) {
        return NULL;
    }
    gpo_module_set_functions(&m->super);
    *priority = mca_coll_gdrpipe_component.priority;
    return &m->super;
}
