/* MPIX_Query_cuda_support() of the interposer (gpo_mpix.h): 1 once the
 * gdrpipe collective component has taken part in MPI_Init, so exactly where
 * collectives, point-to-point and derived datatypes on device buffers work;
 * 0 otherwise (as Open MPI's own answer for a build without CUDA). */
#include "gpo_mpix.h"

#include <mpi.h>

static volatile int cuda_support;

__attribute__((visibility("default"))) void gdrpipe_ompi_set_cuda_support(int yes)
{
    cuda_support = yes != 0;
}

__attribute__((visibility("default"))) int MPIX_Query_cuda_support(void)
{
    return cuda_support;
}
