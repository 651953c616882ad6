/* Flushes of the intra-host wire: completions queued until the GPU transfers
 * in flight have completed (shm_flush.h). */
#include "shm_flush.h"


typedef struct gdrpipe_shm_flush {
    ucs_queue_elem_t  queue;
    uct_completion_t  *comp;
} gdrpipe_shm_flush_t;

ucs_status_t gdrpipe_shm_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                     uct_completion_t *comp)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_shm_iface_t);
    gdrpipe_shm_flush_t *f;

    if (!gdrpipe_shm_iface_busy(iface)) {
        return UCS_OK;
    }
    if (comp != NULL) {
        f = ucs_malloc(sizeof(*f), "gdrpipe flush");
        if (f == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        f->comp = comp;
        ucs_queue_push(&iface->flush_q, &f->queue);
    }
    return UCS_INPROGRESS;
}

static void gdrpipe_shm_flush_complete_all(gdrpipe_shm_iface_t *iface, ucs_status_t status)
{
    gdrpipe_shm_flush_t *f;

    while (!ucs_queue_is_empty(&iface->flush_q)) {
        f = ucs_queue_pull_elem_non_empty(&iface->flush_q, gdrpipe_shm_flush_t, queue);
        uct_invoke_completion(f->comp, status);
        ucs_free(f);
    }
}

void gdrpipe_shm_flush_progress(gdrpipe_shm_iface_t *iface)
{
    if (!gdrpipe_shm_iface_busy(iface)) {
        gdrpipe_shm_flush_complete_all(iface, UCS_OK);
    }
}

void gdrpipe_shm_flush_cancel(gdrpipe_shm_iface_t *iface)
{
    gdrpipe_shm_flush_complete_all(iface, UCS_ERR_CANCELED);
}
