/* accelerator/cuda for Open MPI 5 built without CUDA (its only accelerator
 * component is null): the framework's calls carried out by the CUDA driver
 * through the gdrpipe UCX plugin's companion table (gpo_dev.h). Named
 * "cuda" because that is the name Open MPI's own checks ask for
 * (MPIX_Query_cuda_support of the cuda extension compares the selected
 * component's name). */
#ifndef GDRPIPE_OMPI_ACCEL_CUDA_H
#define GDRPIPE_OMPI_ACCEL_CUDA_H

#include "opal_config.h"

#include "opal/mca/accelerator/accelerator.h"

/* the module's functions (accel_cuda_module.c) */
extern opal_accelerator_base_module_t gpo_accel_cuda_module;

#endif
