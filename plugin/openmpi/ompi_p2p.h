/* Point-to-point on device buffers with non-contiguous datatypes, for an
 * Open MPI without CUDA support: its pml ucx packs and unpacks such
 * datatypes with the CPU (UCP generic datatypes calling Open MPI's
 * convertor), which faults on device memory. The interposer
 * (libgdrpipe_ompi.so, in gdrpipe-run's LD_PRELOAD) stages them instead:
 * the bytes the datatype spans are copied to host memory, the MPI function
 * runs on the host copy, and a receive buffer's span is copied back when the
 * receive completes. Contiguous datatypes and host buffers go straight to
 * the PMPI function. */
#ifndef GDRPIPE_OMPI_P2P_H
#define GDRPIPE_OMPI_P2P_H

#include <mpi.h>

#include "gpo_stage.h"

/* the predefined contiguous datatype the last call passed (ompi_p2p_span.c) */
extern MPI_Datatype gpo_last_predefined;

/* 1 when buf is device memory and (count, dt) is not one contiguous run of
 * bytes, i.e. when the call needs staging */
int gpo_p2p_needs_staging(const void *buf, int count, MPI_Datatype dt);

/* 1 when (count, dt) surely needs no staging: the datatype of the last call
 * that passed a predefined one, or nothing to move. Inline, so that such a
 * call costs a load and a compare before it goes on to PMPI. */
static inline int gpo_p2p_surely_direct(int count, MPI_Datatype dt)
{
    return dt == __atomic_load_n(&gpo_last_predefined, __ATOMIC_RELAXED) || count <= 0;
}

/* the bytes (count, dt) touches relative to buf, from public MPI queries */
gpo_span_t gpo_p2p_span(int count, MPI_Datatype dt);

#endif
