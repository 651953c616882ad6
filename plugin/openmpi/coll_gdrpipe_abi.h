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
/* 1 when Open MPI's own algorithms move the device buffers of a
 * data-moving collective whose send and receive datatypes are sdt and rdt
 * (NULL: several), blocking or not: its accelerator framework runs gdrpipe's
 * component (or any other named cuda), through which its datatype engine
 * and nonblocking collectives copy device memory, whatever the datatypes */
static inline int gpo_ompi_moves_device(const struct ompi_datatype_t *sdt,
                                        const struct ompi_datatype_t *rdt, int blocking,
                                        int derived41)
{
    const char *name = opal_accelerator_base_selected_component.base_version.mca_component_name;
    (void)sdt;
    (void)rdt;
    (void)blocking;
    (void)derived41;
    return strcmp(name, "cuda") == 0;
}
#else
typedef mca_coll_base_component_2_0_0_t gpo_coll_component_t;
#define GPO_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
/* Open MPI 4.1 has no accelerator framework. Its blocking algorithms move
 * device buffers where their only CPU copies are copies of one datatype's
 * content (ompi_datatype_sndrcv with the same type on both sides, their
 * temporary buffers): the interposer's opal_datatype_copy_content_same_ddt
 * (ompi_copy.c) makes those on device memory, and one datatype without
 * gaps keeps the exchanges contiguous for pml ucx. Its nonblocking ones
 * (libnbc) copy intrinsic types with memcpy: staged. derived41: this call
 * may reach an algorithm that builds a derived datatype over the user's
 * buffer (allgatherv's bruck and neighbour exchange, alltoall's bruck),
 * which pml ucx would pack with the CPU: staged. */
#include "ompi/datatype/ompi_datatype.h"

#include <dlfcn.h>

static inline int gpo_ompi_moves_device(const struct ompi_datatype_t *sdt,
                                        const struct ompi_datatype_t *rdt, int blocking,
                                        int derived41)
{
    static int copies = -1;
    if (copies < 0) {
        copies = dlsym(RTLD_DEFAULT, "gdrpipe_ompi_copies_device") != NULL;
    }
    /* compared before either is read: a type that does not matter on this
     * rank (a receive type off the root) may be anything */
    return copies && blocking && !derived41 && sdt != NULL && sdt == rdt &&
           opal_datatype_is_contiguous_memory_layout(&sdt->super, 2);
}
#endif

#endif
