/* accelerator/cuda for Open MPI 5 or 6 built without CUDA (its only accelerator
 * component is null): the framework's calls carried out by the CUDA driver
 * through the gdrpipe UCX plugin's companion table (gpo_dev.h). Named
 * "cuda" because that is the name Open MPI's own checks ask for
 * (MPIX_Query_cuda_support of the cuda extension compares the selected
 * component's name). */
#ifndef GDRPIPE_OMPI_ACCEL_CUDA_H
#define GDRPIPE_OMPI_ACCEL_CUDA_H

#include "opal_config.h"

#include "opal/mca/accelerator/accelerator.h"

/* Open MPI 6 keeps the framework's version (1.0.0) but its module table
 * (opal_accelerator_base_module_t) has 33 members where 5.0 has 17: a
 * stream sync, an event wait, an asynchronous move, allocations on a
 * stream, the IPC calls, the device count, the memory bandwidth and the
 * memory kind (MPI 4.1's memory_alloc_kinds, ompi/info/info_memkind.h), and
 * create_event takes whether the event is shared between processes.
 * accel_cuda_module.c fills either table; the member count is checked
 * there at compile time. */
#if OPAL_MAJOR_VERSION >= 6
#define GPO_ACCEL_TABLE_6 1
#define GPO_ACCEL_TABLE_MEMBERS 33
#else
#define GPO_ACCEL_TABLE_6 0
#define GPO_ACCEL_TABLE_MEMBERS 17
#endif

/* create_event as Open MPI's own callers make it (a process-local event) */
#if GPO_ACCEL_TABLE_6
#define GPO_ACCEL_CREATE_EVENT(dev_id, event) opal_accelerator.create_event((dev_id), (event), false)
#else
#define GPO_ACCEL_CREATE_EVENT(dev_id, event) opal_accelerator.create_event((dev_id), (event))
#endif

/* the module's functions (accel_cuda_module.c) */
extern opal_accelerator_base_module_t gpo_accel_cuda_module;

#endif
