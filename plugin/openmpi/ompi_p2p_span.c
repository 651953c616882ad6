/* Which point-to-point calls the interposer stages, from public MPI datatype
 * queries only. */
#include "ompi_p2p.h"

#include "gpo_dev.h"

gpo_span_t gpo_p2p_span(int count, MPI_Datatype dt)
{
    gpo_span_t s = {0, 0};
    MPI_Aint lb, extent, tlb, textent;
    if (count <= 0) {
        return s;
    }
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, &tlb, &textent);
    MPI_Aint last = (MPI_Aint)(count - 1) * extent;
    s.lo = (last < 0 ? last : 0) + tlb;
    s.hi = (last > 0 ? last : 0) + tlb + textent;
    return s;
}

int gpo_p2p_needs_staging(const void *buf, int count, MPI_Datatype dt)
{
    if (count <= 0 || dt == MPI_DATATYPE_NULL || !gpo_is_device(buf)) {
        return 0;
    }
    int size;
    MPI_Aint lb, extent, tlb, textent;
    PMPI_Type_size(dt, &size);
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, &tlb, &textent);
    /* one element without holes, elements back to back: the pml hands the
     * bytes to UCX, which moves device memory itself */
    int contiguous = (MPI_Aint)size == textent && extent == textent;
    return !contiguous;
}
