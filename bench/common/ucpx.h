/* A thin layer over UCP for the two-process programs (gdrpipe_ucp_sweep,
 * ucp_verify): one context, one worker, one endpoint to the peer, worker
 * addresses exchanged over a connected socket. Sends and receives pass no
 * memory-type hint, as Open MPI's pml ucx does. */
#ifndef GDRPIPE_BENCH_UCPX_H
#define GDRPIPE_BENCH_UCPX_H

#include <stddef.h>
#include <stdint.h>
#include <ucp/api/ucp.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_ep_h ep;
    volatile int ep_failed;        /* set by the endpoint error callback */
    volatile ucs_status_t ep_status;
    int yield_idle;                /* gp_ucp_wait: sched_yield() when progress
                                      found nothing (a CPU-starved machine) */
} gp_ucp_t;

/* Context (TAG feature) and worker. Returns 0 or -1. */
int gp_ucp_open(gp_ucp_t *u);
/* Same, with configuration changes: NULL-terminated name, value pairs
 * (names without the UCX_ prefix, as ucp_config_modify takes them). */
int gp_ucp_open_cfg(gp_ucp_t *u, const char *const *mods);
/* Exchange worker addresses over fd and connect. err_peer: endpoint in
 * UCP_ERR_HANDLING_MODE_PEER with an error callback. Returns 0 or -1. */
int gp_ucp_connect(gp_ucp_t *u, int fd, int err_peer);
/* Close the endpoint (flush, or force after an error), destroy worker and
 * context. */
void gp_ucp_close(gp_ucp_t *u, int force);

/* Nonblocking tag send / receive (full tag mask). The result is NULL (done),
 * a UCS_PTR_IS_ERR pointer, or a request to wait for. Receives always
 * return a request (so gp_ucp_wait can report the length); recv_len is
 * unused there and kept for symmetry. */
ucs_status_ptr_t gp_ucp_isend(gp_ucp_t *u, const void *buf, size_t len,
                              ucp_tag_t tag);
ucs_status_ptr_t gp_ucp_irecv(gp_ucp_t *u, void *buf, size_t len, ucp_tag_t tag,
                              size_t *recv_len);
/* Progress until `req` completes or timeout_s passes (<= 0: no limit).
 * Frees the request when it completed. For receives, *recv_len gets the
 * received length (pass NULL for sends). Returns the status, or
 * UCS_ERR_TIMED_OUT (the request is then left alive; see gp_ucp_cancel). */
ucs_status_t gp_ucp_wait(gp_ucp_t *u, ucs_status_ptr_t req, int is_recv,
                         size_t *recv_len, double timeout_s);
/* Cancel and release a request that timed out. */
void gp_ucp_cancel(gp_ucp_t *u, ucs_status_ptr_t req);

/* Blocking helpers built on the above. */
ucs_status_t gp_ucp_send(gp_ucp_t *u, const void *buf, size_t len,
                         ucp_tag_t tag, double timeout_s);
ucs_status_t gp_ucp_recv(gp_ucp_t *u, void *buf, size_t len, ucp_tag_t tag,
                         size_t *recv_len, double timeout_s);

/* Socket helpers: whole-buffer write/read (0 or -1), a one-byte barrier, and
 * the TCP rendezvous of gdrpipe_ucp_sweep. */
int gp_fd_write(int fd, const void *buf, size_t len);
int gp_fd_read(int fd, void *buf, size_t len);
int gp_fd_barrier(int fd);
/* The same, while progressing the workers of u[0..n-1] (those not closed):
 * a side whose own requests are all complete may still owe its peer protocol
 * messages (a rendezvous acknowledgement in a transport's pending queue),
 * without which the peer's requests never complete -- a plain blocking read
 * there can deadlock both. gp_fd_exchange_progress swaps len bytes. */
int gp_fd_barrier_progress(int fd, gp_ucp_t *u, int n);
int gp_fd_exchange_progress(int fd, gp_ucp_t *u, int n, const void *out, void *in,
                            size_t len);
int gp_tcp_listen_accept(int port);              /* returns fd or -1 */
int gp_tcp_connect(const char *host, int port, double timeout_s);

double gp_now(void);                              /* monotonic seconds */

/* fork() once this process has one thread, or after max_wait_s seconds
 * regardless. UCX's libucs starts a thread while it loads (its virtual file
 * system service, UCX_VFS_ENABLE), before main(); a fork while that thread
 * holds a lock of UCM's memory hooks leaves the child's copy of the lock
 * held forever, and the child's ucp_init() then never returns (ucm_mmap_install
 * -> ucm_event_enter_exclusive, seen with UCX 1.18 on a loaded machine). */
pid_t gp_fork_alone(double max_wait_s);

#ifdef __cplusplus
}
#endif
#endif
