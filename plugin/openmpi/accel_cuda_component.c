/* The component mca_accelerator_cuda: found by Open MPI 5 in the folder
 * that gdrpipe-run adds to mca_base_component_path, and selected ahead of
 * null when it initialises, which it does only where the gdrpipe UCX plugin
 * is loaded and has a usable CUDA driver. */
#include "accel_cuda.h"

#include "gpo_dev.h"

#include "opal/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

static int accel_cuda_register(void);
static opal_accelerator_base_module_t *accel_cuda_init(void);
static void accel_cuda_finalize(opal_accelerator_base_module_t *module);

static int accel_cuda_verbose;

__attribute__((visibility("default")))
opal_accelerator_base_component_t mca_accelerator_cuda_component = {
    .base_version = {
        OPAL_ACCELERATOR_BASE_VERSION_1_0_0,
        .mca_component_name = "cuda",
        MCA_BASE_MAKE_VERSION(component, OPAL_MAJOR_VERSION, OPAL_MINOR_VERSION,
                              OPAL_RELEASE_VERSION),
        .mca_register_component_params = accel_cuda_register,
    },
    .base_data = {
        MCA_BASE_METADATA_PARAM_CHECKPOINT
    },
    .accelerator_init = accel_cuda_init,
    .accelerator_finalize = accel_cuda_finalize,
};

static int accel_cuda_register(void)
{
    accel_cuda_verbose = 0;
    (void)mca_base_component_var_register(
        &mca_accelerator_cuda_component.base_version, "verbose",
        "gdrpipe's cuda accelerator: 1 says at selection whether it takes part, and why not",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &accel_cuda_verbose);
    return OPAL_SUCCESS;
}

static opal_accelerator_base_module_t *accel_cuda_init(void)
{
    const gp_companion_t *c = gpo_dev();
    if (c == NULL) {
        if (accel_cuda_verbose > 0) {
            opal_output(0, "accelerator/cuda (gdrpipe): not used: %s", gpo_dev_why_not());
        }
        return NULL;
    }
    if (accel_cuda_verbose > 0) {
        opal_output(0, "accelerator/cuda (gdrpipe): %d device(s), device buffers handled",
                    c->device_count());
    }
    return &gpo_accel_cuda_module;
}

static void accel_cuda_finalize(opal_accelerator_base_module_t *module)
{
    (void)module;
}
