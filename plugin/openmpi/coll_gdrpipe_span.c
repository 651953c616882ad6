/* Byte spans that MPI operations touch in a buffer, from Open MPI 4.1's
 * datatypes: element i of a datatype lies at i * extent + [true_lb,
 * true_lb + true_extent). Count and displacement arrays are read through
 * coll_gdrpipe_abi.h (Open MPI 6: either width). */
#include "coll_gdrpipe.h"

static gpo_span_t span_at(struct ompi_datatype_t *dt, ptrdiff_t offset, gpo_count_t count)
{
    gpo_span_t s = {0, 0};
    ptrdiff_t lb, extent, tlb, textent;
    if (count <= 0) {
        return s;
    }
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &tlb, &textent);
    ptrdiff_t last = (ptrdiff_t)(count - 1) * extent;
    s.lo = offset + (last < 0 ? last : 0) + tlb;
    s.hi = offset + (last > 0 ? last : 0) + tlb + textent;
    return s;
}

static void span_join(gpo_span_t *acc, gpo_span_t s)
{
    if (s.hi <= s.lo) {
        return;
    }
    if (acc->hi <= acc->lo) {
        *acc = s;
        return;
    }
    if (s.lo < acc->lo) acc->lo = s.lo;
    if (s.hi > acc->hi) acc->hi = s.hi;
}

gpo_span_t gpo_span(struct ompi_datatype_t *dt, gpo_count_t count)
{
    return span_at(dt, 0, count);
}

gpo_span_t gpo_span_v(struct ompi_datatype_t *dt, gpo_counts_t counts, gpo_displs_t displs, int n)
{
    gpo_span_t acc = {0, 0};
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dt, &lb, &extent);
    for (int i = 0; i < n; i++) {
        span_join(&acc, span_at(dt, GPO_DISP_AT(displs, i) * extent, GPO_COUNT_AT(counts, i)));
    }
    return acc;
}

gpo_span_t gpo_span_w(struct ompi_datatype_t *const *dts, gpo_counts_t counts,
                      gpo_displs_t displs, int n)
{
    gpo_span_t acc = {0, 0};
    for (int i = 0; i < n; i++) {
        span_join(&acc, span_at(dts[i], GPO_DISP_AT(displs, i), GPO_COUNT_AT(counts, i)));
    }
    return acc;
}

gpo_span_t gpo_span_w_aint(struct ompi_datatype_t *const *dts, gpo_counts_t counts,
                           gpo_adispls_t displs, int n)
{
    gpo_span_t acc = {0, 0};
    for (int i = 0; i < n; i++) {
        span_join(&acc, span_at(dts[i], GPO_DISP_AT(displs, i), GPO_COUNT_AT(counts, i)));
    }
    return acc;
}

int gpo_dense(struct ompi_datatype_t *dt, gpo_count_t count)
{
    return count <= 0 || ompi_datatype_is_contiguous_memory_layout(dt, count);
}
