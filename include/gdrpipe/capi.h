/* The C interface between the UCX glue (plugin/, C) and the core (src/, C++).
 * The glue never sees C++ types; the core never sees UCX types. */
#ifndef GDRPIPE_CAPI_H
#define GDRPIPE_CAPI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- logging: the glue routes the core's log lines to UCX's logger ---- */
typedef void (*gp_log_sink_t)(int level /* 0 error .. 4 trace */, const char *file,
                              int line, const char *message);
void gp_set_log_sink(gp_log_sink_t sink, int max_level);

/* ---- intra-host shared-memory wire ------------------------------------ */
typedef struct gp_shm_iface gp_shm_iface_t;
typedef struct gp_shm_peer gp_shm_peer_t;
typedef void (*gp_shm_am_cb_t)(void *arg, uint8_t am_id, void *data, uint32_t len);

int gp_shm_iface_open(unsigned num_elems, unsigned seg_size, gp_shm_iface_t **iface_p,
                      char *err, size_t errlen);
void gp_shm_iface_close(gp_shm_iface_t *iface);
unsigned gp_shm_iface_max_payload(const gp_shm_iface_t *iface);
size_t gp_shm_address_length(void);
void gp_shm_iface_address(const gp_shm_iface_t *iface, void *addr);
/* NULL when the bytes are an acceptable address, else the reason */
const char *gp_shm_check_address(const void *addr, size_t len);
gp_shm_peer_t *gp_shm_connect(gp_shm_iface_t *iface, const void *addr, size_t len,
                              char *err, size_t errlen);
void gp_shm_disconnect(gp_shm_iface_t *iface, gp_shm_peer_t *peer);
pid_t gp_shm_peer_pid(const gp_shm_peer_t *peer);
int gp_shm_peer_alive(const gp_shm_peer_t *peer);
/* producer: a payload area of max_payload bytes, or NULL when the peer's FIFO
 * is full; every reservation must be committed (am_id 0xff discards it) */
void *gp_shm_reserve(gp_shm_peer_t *peer, uint64_t *index);
void gp_shm_commit(gp_shm_peer_t *peer, uint64_t index, uint8_t am_id, uint32_t length);
int gp_shm_has_space(const gp_shm_peer_t *peer);
/* consumer: delivers up to max messages; returns how many were consumed */
unsigned gp_shm_progress(gp_shm_iface_t *iface, gp_shm_am_cb_t cb, void *arg,
                         unsigned max);

ssize_t gp_cma_read(pid_t pid, const struct iovec *local, size_t iovcnt,
                    uint64_t remote_addr);
ssize_t gp_cma_write(pid_t pid, const struct iovec *local, size_t iovcnt,
                     uint64_t remote_addr);
int gp_cma_available(void);

#ifdef __cplusplus
}
#endif
#endif
