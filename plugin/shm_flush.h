/* Flushes of the intra-host wire (shm_flush.c). Active messages by copy and
 * CMA complete before they return; GPU transfers of the data paths complete
 * from progress, and a flush waits for them: its completion is queued on the
 * interface until nothing is in flight. */
#ifndef GDRPIPE_SHM_FLUSH_H
#define GDRPIPE_SHM_FLUSH_H

#include "shm_iface.h"

/* uct_iface_flush, also behind every endpoint's flush: UCS_OK when nothing
 * is in flight, else UCS_INPROGRESS (comp, if any, completes later) */
ucs_status_t gdrpipe_shm_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                     uct_completion_t *comp);
/* completes the queued flushes once nothing is in flight (from progress) */
void gdrpipe_shm_flush_progress(gdrpipe_shm_iface_t *iface);
/* completes every queued flush with UCS_ERR_CANCELED (the interface closes) */
void gdrpipe_shm_flush_cancel(gdrpipe_shm_iface_t *iface);

#endif
