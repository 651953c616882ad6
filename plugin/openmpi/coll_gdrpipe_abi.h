/* What differs between the coll frameworks of Open MPI 4.1 (coll API 2.3.0)
 * and 5.0 (2.4.0) as coll/gdrpipe uses them; nothing else in the component
 * knows the Open MPI version. */
#ifndef GDRPIPE_COLL_GDRPIPE_ABI_H
#define GDRPIPE_COLL_GDRPIPE_ABI_H

#include "ompi_config.h"

#include "ompi/mca/coll/coll.h"

#if OMPI_MAJOR_VERSION >= 5
#include "opal/mca/accelerator/base/base.h"

#include <string.h>

typedef mca_coll_base_component_2_4_0_t gpo_coll_component_t;
#define GPO_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
/* 5.0 no longer defines it: the component symbol must be visible */
#define OMPI_MODULE_DECLSPEC __attribute__((visibility("default")))
/* 1 when Open MPI's own code moves device buffers: its accelerator
 * framework runs gdrpipe's component (or any other named cuda), so its
 * datatype engine and nonblocking collectives copy them through it */
static inline int gpo_ompi_moves_device(void)
{
    const char *name = opal_accelerator_base_selected_component.base_version.mca_component_name;
    return strcmp(name, "cuda") == 0;
}
#else
typedef mca_coll_base_component_2_0_0_t gpo_coll_component_t;
#define GPO_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
/* Open MPI 4.1 has no accelerator framework: its code never moves device
 * buffers */
static inline int gpo_ompi_moves_device(void)
{
    return 0;
}
#endif

#endif
