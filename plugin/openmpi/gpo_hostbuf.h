/* Host buffers for staging: page-locked memory from the plugin (copies to
 * and from the device run at full speed, without the driver's own bounce
 * through pinned memory), kept in a small cache because pinning costs far
 * more than copying a few KiB; pageable memory when pinning fails or every
 * cached buffer is in use. Thread-safe. The cached buffers live until the
 * process ends. */
#ifndef GDRPIPE_OMPI_HOSTBUF_H
#define GDRPIPE_OMPI_HOSTBUF_H

#include <stddef.h>

/* NULL when there is no memory at all */
void *gpo_hostbuf_get(size_t len);
void gpo_hostbuf_put(void *buf);

#endif
