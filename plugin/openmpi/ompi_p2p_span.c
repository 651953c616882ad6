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

/* predefined types without holes */
static int gpo_contiguous_predefined_list(MPI_Datatype dt)
{
    return dt == MPI_BYTE || dt == MPI_CHAR || dt == MPI_UNSIGNED_CHAR || dt == MPI_SIGNED_CHAR ||
           dt == MPI_SHORT || dt == MPI_UNSIGNED_SHORT || dt == MPI_INT || dt == MPI_UNSIGNED ||
           dt == MPI_LONG || dt == MPI_UNSIGNED_LONG || dt == MPI_LONG_LONG ||
           dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_FLOAT || dt == MPI_DOUBLE ||
           dt == MPI_INT8_T || dt == MPI_INT16_T || dt == MPI_INT32_T || dt == MPI_INT64_T ||
           dt == MPI_UINT8_T || dt == MPI_UINT16_T || dt == MPI_UINT32_T || dt == MPI_UINT64_T ||
           dt == MPI_C_BOOL || dt == MPI_PACKED;
}

/* the last handle the list above matched (predefined handles are never
 * freed, so it cannot come to name another type); any thread may store it */
MPI_Datatype gpo_last_predefined;

/* predefined types without holes: most calls pass one of these, and a
 * comparison of handles costs nothing where the datatype queries below cost
 * a few calls per message (visible in host message rates). The compiler
 * evaluates the whole list without branches (~80 instructions), so the last
 * match is remembered and tried first (gpo_p2p_surely_direct, inline). */
static int gpo_contiguous_predefined(MPI_Datatype dt)
{
    if (!gpo_contiguous_predefined_list(dt)) {
        return 0;
    }
    __atomic_store_n(&gpo_last_predefined, dt, __ATOMIC_RELAXED);
    return 1;
}

int gpo_p2p_needs_staging(const void *buf, int count, MPI_Datatype dt)
{
    if (count <= 0 || dt == MPI_DATATYPE_NULL || gpo_contiguous_predefined(dt)) {
        return 0;
    }
    int size;
    MPI_Aint lb, extent, tlb, textent;
    PMPI_Type_size(dt, &size);
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, &tlb, &textent);
    /* one element without holes, elements back to back: the pml hands the
     * bytes to UCX, which moves device memory itself. Checked first: it is
     * what nearly every call passes, and the datatype queries are cheap
     * where asking where the buffer lives is a driver call (~0.25 us per
     * message, measured as a 2 x loss of host message rate on the H200) */
    int contiguous = (MPI_Aint)size == textent && extent == textent;
    return !contiguous && gpo_is_device(buf);
}
