/* Open MPI 4.1's copy of a datatype's content between two buffers
 * (opal_datatype_copy_content_same_ddt, exported by libopen-pal and called
 * from libmpi through its PLT, so the preloaded interposer's definition comes
 * first): Open MPI's blocking collective algorithms make it for a rank's own
 * block (ompi_datatype_sndrcv with one datatype on both sides) and for their
 * temporary buffers. With either buffer in device memory it copies through
 * the driver: a contiguous layout in one copy, any other staged through host
 * memory around Open MPI's own copy. Host buffers go straight to Open MPI's.
 * This is what lets coll/gdrpipe hand device buffers of blocking
 * data-moving collectives to Open MPI 4.1's algorithms (gpo_ompi_copies). */
#include "ompi_config.h"

#include "opal/constants.h"
#include "opal/datatype/opal_datatype.h"

#include "gpo_dev.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int32_t (*copy_fn_t)(const opal_datatype_t *, int32_t, char *, char *);

static copy_fn_t real_copy(void)
{
    static copy_fn_t fn;
    copy_fn_t f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (f == NULL) {
        f = (copy_fn_t)dlsym(RTLD_NEXT, "opal_datatype_copy_content_same_ddt");
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
    }
    return f;
}

/* the datatype's span of count elements through host memory: both spans
 * copied in (the destination's gaps must survive), Open MPI's copy between
 * the host copies, the destination's span copied back */
static int32_t staged_copy(const opal_datatype_t *dt, int32_t count, char *dst, char *src,
                           copy_fn_t real)
{
    ptrdiff_t gap;
    const ptrdiff_t span = opal_datatype_span(dt, (size_t)count, &gap);
    char *hs = malloc((size_t)span), *hd = malloc((size_t)span);
    int32_t rc = OPAL_ERROR;
    if (hs != NULL && hd != NULL && gpo_copy(hs, src + gap, (size_t)span) == 0 &&
        gpo_copy(hd, dst + gap, (size_t)span) == 0) {
        rc = real(dt, count, hd - gap, hs - gap);
        if (rc == OPAL_SUCCESS && gpo_copy(dst + gap, hd, (size_t)span) != 0) {
            rc = OPAL_ERROR;
        }
    }
    free(hs);
    free(hd);
    return rc;
}

__attribute__((visibility("default")))
int32_t opal_datatype_copy_content_same_ddt(const opal_datatype_t *dt, int32_t count, char *dst,
                                            char *src)
{
    copy_fn_t real = real_copy();
    if (real == NULL) {
        fprintf(stderr, "gdrpipe (Open MPI): opal_datatype_copy_content_same_ddt not found\n");
        return OPAL_ERROR;
    }
    if (count <= 0 || dt->size == 0 || dst == src ||
        (!gpo_is_device(dst) && !gpo_is_device(src))) {
        return real(dt, count, dst, src);
    }
    if (opal_datatype_is_contiguous_memory_layout(dt, count)) {
        ptrdiff_t gap;
        const ptrdiff_t span = opal_datatype_span(dt, (size_t)count, &gap);
        return gpo_copy(dst + gap, src + gap, (size_t)span) == 0 ? OPAL_SUCCESS : OPAL_ERROR;
    }
    return staged_copy(dt, count, dst, src, real);
}

/* coll/gdrpipe looks this up: the copies above are in place */
__attribute__((visibility("default"))) int gdrpipe_ompi_copies_device = 1;
