/* What differs between the coll frameworks of Open MPI 4.1 (coll API 2.3.0),
 * 5.0 (2.4.0) and 6.0 (3.0.0) as coll/gdrpipe uses them; nothing else in the
 * component knows the Open MPI version. */
#ifndef GDRPIPE_COLL_GDRPIPE_ABI_H
#define GDRPIPE_COLL_GDRPIPE_ABI_H

#include "ompi_config.h"

#include "ompi/mca/coll/coll.h"

#include <stddef.h>

/* Counts and displacements of the collective table's functions. 4.1 and
 * 5.0: int, and arrays of int (MPI_Aint for the byte displacements of the
 * neighbourhood alltoallw). 6.0 (big counts): size_t, and arrays that hold
 * either int or 64-bit values (ompi/util/count_disp_array.h), read one
 * element at a time. */
#if OMPI_MAJOR_VERSION >= 6
#include "ompi/util/count_disp_array.h"
typedef size_t gpo_count_t;
typedef ompi_count_array_t gpo_counts_t;
typedef ompi_disp_array_t gpo_displs_t;
typedef ompi_disp_array_t gpo_adispls_t;
#define GPO_COUNT_AT(a, i) ((gpo_count_t)ompi_count_array_get((a), (size_t)(i)))
#define GPO_DISP_AT(a, i) ((ptrdiff_t)ompi_disp_array_get((a), (size_t)(i)))
#else
typedef int gpo_count_t;
typedef const int *gpo_counts_t;
typedef const int *gpo_displs_t;
typedef const MPI_Aint *gpo_adispls_t;
#define GPO_COUNT_AT(a, i) ((a)[i])
#define GPO_DISP_AT(a, i) ((ptrdiff_t)(a)[i])
#endif

/* Room behind a nonblocking or persistent collective's request that Open
 * MPI's MPI layer writes into: it takes every such request for an
 * ompi_coll_base_nbc_request_t (coll_base_util.h) and keeps there the
 * callback it chains and the datatypes and arrays it retains until the
 * request completes (4.1: 32 bytes; 5.0: 96 bytes, seven arrays to
 * release among them). A request of coll/gdrpipe's own reserves this much after
 * its ompi_request_t. */
#define GPO_NBC_REQUEST_ROOM 32 /* pointers */

/* 4.1 and 5.0: the framework copies each selected module's functions into
 * the communicator's table, lowest priority first, before it enables the
 * next one. 6.0: it only calls each module's enable (lowest priority
 * first), which installs the module's functions itself, and its disable
 * (highest first), which puts back what was there before. */
#if OMPI_MAJOR_VERSION >= 6
#define GPO_COLL_MODULE_INSTALLS 1
#else
#define GPO_COLL_MODULE_INSTALLS 0
#endif

#if OMPI_MAJOR_VERSION >= 5
#include "opal/mca/accelerator/base/base.h"

#include <string.h>

#if OMPI_MAJOR_VERSION >= 6
typedef mca_coll_base_component_3_0_0_t gpo_coll_component_t;
#define GPO_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_3_0_0
#else
typedef mca_coll_base_component_2_4_0_t gpo_coll_component_t;
#define GPO_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#endif
/* 5.0 and 6.0 no longer define it: the component symbol must be visible */
#define OMPI_MODULE_DECLSPEC __attribute__((visibility("default")))
/* 1 when Open MPI's own algorithms move the device buffers of a
 * data-moving collective whose send and receive datatypes are sdt and rdt
 * (NULL: several), blocking or not: its accelerator framework runs gdrpipe's
 * component (or any other named cuda), through which its datatype engine
 * and nonblocking collectives copy device memory, whatever the datatypes
 * (coll_gdrpipe_prep.c still stages datatypes with gaps: one copy per
 * piece) */
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
