/* The component mca_coll_gdrpipe: found by Open MPI in the folder that
 * gdrpipe-run adds to mca_base_component_path. It takes part only where
 * the gdrpipe UCX plugin is loaded and has a usable CUDA driver. */
#include "coll_gdrpipe.h"
#include "coll_gdrpipe_mvpart.h"
#include "coll_gdrpipe_params.h"
#include "coll_gdrpipe_prep.h"

#include "gpo_dev.h"
#include "gpo_mpix.h"

#include "opal/util/output.h"

static int gdrpipe_register(void);
static int gdrpipe_close(void);
static int gdrpipe_init_query(bool enable_progress_threads, bool enable_mpi_threads);

mca_coll_gdrpipe_component_t mca_coll_gdrpipe_component = {
    .super = {
        .collm_version = {
            GPO_COLL_BASE_VERSION,
            .mca_component_name = "gdrpipe",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_register_component_params = gdrpipe_register,
            .mca_close_component = gdrpipe_close,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = gdrpipe_init_query,
        .collm_comm_query = mca_coll_gdrpipe_comm_query,
    },
};

/* the component's variables (coll_gdrpipe_params.c) */
static int gdrpipe_register(void)
{
    return gpo_coll_params_register(&mca_coll_gdrpipe_component.super.collm_version);
}

/* with UCX_GDRPIPE_STATS=y or verbose > 0: the data-moving collectives
 * whose device buffers Open MPI's own code moved (device_moves) */
static int gdrpipe_close(void)
{
    gpo_idevmove_fini();
    if (gpo_moves_handed_on > 0 && gpo_coll_report_counters()) {
        opal_output(0, "coll gdrpipe: device buffers handed on in %lu data-moving collectives",
                    gpo_moves_handed_on);
    }
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
        if (gpo_coll_params.verbose > 0) {
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
    if (gpo_coll_params.priority < 0) {
        return NULL;
    }
    mca_coll_gdrpipe_module_t *m = OBJ_NEW(mca_coll_gdrpipe_module_t);
    if (m == NULL) {
        return NULL;
    }
    gpo_module_set_functions(&m->super);
    *priority = gpo_coll_params.priority;
    return &m->super;
}
