/* The C interface between the UCX glue (plugin/, C) and the core (src/, C++).
 * The glue never sees C++ types; the core never sees UCX types. */
#ifndef GDRPIPE_CAPI_H
#define GDRPIPE_CAPI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "gdrpipe/rkey.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- logging: the glue routes the core's log lines to UCX's logger ---- */
typedef void (*gp_log_sink_t)(int level /* 0 error .. 4 trace */, const char *file,
                              int line, const char *message);
void gp_set_log_sink(gp_log_sink_t sink, int max_level);
/* whether the n-th error of one kind about a peer's input is logged: the
 * first 10, then the 100th, 1000th, ... (a peer can send them without end) */
int gp_log_peer_due(uint64_t occurrence);

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
/* bytes one element of the peer's FIFO holds (>= this interface's
 * gp_shm_iface_max_payload: gp_shm_connect refuses smaller peers) */
unsigned gp_shm_peer_max_payload(gp_shm_peer_t *peer);
/* producer: a payload area of gp_shm_peer_max_payload bytes, or NULL when the
 * peer's FIFO is full; every reservation must be committed (am_id 0xff
 * discards it) */
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

/* ---- CUDA ----------------------------------------------------------- */
enum gp_mem_kind {
    GP_MEM_HOST    = 0, /* not CUDA memory (or pinned host memory) */
    GP_MEM_DEVICE  = 1,
    GP_MEM_MANAGED = 2
};

typedef struct gp_mem_info {
    int kind;            /* enum gp_mem_kind */
    int device;          /* ordinal, -1 for host */
    uint64_t base;       /* whole allocation */
    uint64_t length;
    uint64_t buffer_id;
    int is_vmm;
    int is_pool;
    int legacy_ipc;
    int pinned_host;
} gp_mem_info_t;

/* Loads the driver (once); 1 when CUDA can be used, else 0 and why. */
int gp_cuda_available(void);

/* This process's pid, cached (renewed in a forked child): getpid() is a
 * system call per use. */
pid_t gp_self_pid(void);
const char *gp_cuda_why_not(void);
int gp_cuda_device_count(void);
/* 0 and *info filled for any pointer (host too); <0 on a driver error */
int gp_cuda_mem_query(const void *ptr, gp_mem_info_t *info);
/* Waits for the legacy stream of a device's primary context (cuda::wait_legacy:
 * for pool and VMM memory, which cannot carry SYNC_MEMOPS) */
void gp_cuda_wait_legacy(int device);
/* synchronous copy between any two pointers; 0 or <0 with err filled */
int gp_cuda_copy(void *dst, const void *src, size_t len, char *err, size_t errlen);
/* which side of a copy the caller knows to be device memory: the copy fails
 * with GP_CUDA_NOT_DEVICE (err filled, nothing copied) when the driver does
 * not know that pointer (memory freed while a transfer was in flight)
 * instead of touching it with the CPU; other failures are -1 */
#define GP_CUDA_DST_DEVICE 1
#define GP_CUDA_SRC_DEVICE 2
#define GP_CUDA_NOT_DEVICE (-2)
int gp_cuda_copy_dev(void *dst, const void *src, size_t len, int device_side, char *err,
                     size_t errlen);
/* a copy from memory of a known device into host memory, without asking the
 * driver about either pointer: on the device's stream that waits for its
 * legacy stream (as cuMemcpy is ordered), landed at return; 0 or -1 with err
 * filled */
int gp_cuda_copy_from_device(void *host, const void *src, size_t len, int device, char *err,
                             size_t errlen);
/* a copy from host memory into memory of a known device, without asking the
 * driver about either pointer: on the device's stream as gp_cuda_copy_dev's
 * copies into device memory, landed at return; 0 or -1 with err filled */
int gp_cuda_copy_to_device(void *dst, const void *host, size_t len, int device, char *err,
                           size_t errlen);

/* page-locked host memory, usable by every context (CU_MEMHOSTALLOC_PORTABLE),
 * for staging; NULL with err filled on failure */
void *gp_cuda_host_alloc(size_t len, char *err, size_t errlen);
void gp_cuda_host_free(void *ptr);

typedef struct gp_cuda_op gp_cuda_op_t;
/* asynchronous copy; NULL with err filled on failure */
gp_cuda_op_t *gp_cuda_copy_async(void *dst, const void *src, size_t len, char *err,
                                 size_t errlen);
/* the same, device_side as for gp_cuda_copy_dev: 0 with *op set, else
 * GP_CUDA_NOT_DEVICE or -1 (err filled) */
int gp_cuda_copy_async_dev(void *dst, const void *src, size_t len, int device_side,
                           gp_cuda_op_t **op, char *err, size_t errlen);
/* 1 done, 0 pending, <0 failed (err filled) */
int gp_cuda_op_poll(gp_cuda_op_t *op, char *err, size_t errlen);
void gp_cuda_op_release(gp_cuda_op_t *op);
/* 1 when the CPU can read the first and last byte of host memory [ptr,
 * ptr+len); 0 where a device buffer freed while its transfer was in flight
 * left the range unmapped or unreadable */
int gp_host_accessible(const void *ptr, size_t len);
/* releases streams, events and primary contexts (last user gone) */
void gp_cuda_shutdown(void);

/* What an MPI library's accelerator layer asks of the driver (accel_capi.cc).
 * Device memory allocated and freed as the application would, through the
 * driver's exported entry points (so through gdrpipe's interception: the
 * region cache hears of the free); 0, or -1 with err filled. */
int gp_cuda_app_alloc(int device, size_t len, void **ptr, char *err, size_t errlen);
int gp_cuda_app_free(void *ptr, char *err, size_t errlen);
/* page-locks host memory for every context; 0, or -1 with err filled */
int gp_cuda_host_register(void *ptr, size_t len, char *err, size_t errlen);
int gp_cuda_host_unregister(void *ptr, char *err, size_t errlen);
/* the device of the calling thread's current context, else 0; -1 without CUDA */
int gp_cuda_current_device(void);
/* the device's PCI address; 0, or -1 for an unknown device */
int gp_cuda_pci_address(int device, unsigned *domain, unsigned *bus, unsigned *dev,
                        unsigned *fn);
/* 1 when device can map peer's memory (always for itself), 0 if not, -1 for
 * an unknown device */
int gp_cuda_can_access_peer(int device, int peer);

/* ---- interception of CUDA allocations and frees ----------------------- */
enum gp_hook_kind {
    GP_HOOK_DEVICE = 1, GP_HOOK_MANAGED = 2, GP_HOOK_HOST_PINNED = 3,
    GP_HOOK_VMM = 4, GP_HOOK_POOL = 5
};
typedef void (*gp_mem_event_cb_t)(void *arg, int is_free, uint64_t address,
                                  size_t length, int kind /* gp_hook_kind */);
/* Loads the driver library (no cuInit) and patches its allocation and free
 * entry points. Returns 1 when every hook is in place, 0 when there is no
 * driver, -1 when some hook failed (reason in `why`). Idempotent. */
int gp_hooks_install(char *why, size_t whylen);
int gp_hooks_active(void);
/* one listener (the glue's); events arrive on the calling thread, free
 * events before the memory is released, alloc events after */
void gp_hooks_set_listener(gp_mem_event_cb_t cb, void *arg);
/* allocations alive now: seen since install, plus those found by a scan */
void gp_hooks_for_each_allocation(gp_mem_event_cb_t cb, void *arg);

/* ---- device reductions across the processes of one host --------------- */
/* For the Open MPI component (plugin/openmpi/gpo_devreduce.c): each process
 * exports its buffers, one process per GPU imports the others' and runs the
 * reduction kernel over all of them (gdrpipe/cuda/reduce_abi.h). */
struct gp_reduce_args;
/* The remote key of the device allocation holding [ptr, ptr+len), when it
 * can be mapped by other processes (legacy IPC or VMM handle): 0; -ENOTSUP
 * for other memory (host, unexportable device memory, stream-ordered pools);
 * <0 with err on failure. */
int gp_dev_export(const void *ptr, size_t len, gp_rkey_t *rkey, char *err, size_t errlen);
/* The local address of [addr, addr+len) of the peer allocation `rkey` names
 * (process `rkey->pid`, started at `start_time` by its own account, checked
 * against the kernel's once per pid), mapped in device `device`'s context
 * and kept in the import cache; *hold keeps the mapping until
 * gp_dev_release(). An rkey of this process gives addr itself. 0, or <0
 * with err. */
int gp_dev_import(const gp_rkey_t *rkey, uint64_t start_time, uint64_t addr, size_t len,
                  int device, void **local, void **hold, char *err, size_t errlen);
void gp_dev_release(void *hold);
/* this process's start time as gp_dev_import() expects it */
uint64_t gp_self_start_time(void);
/* The reduction on `device`, on a stream of gdrpipe's own, waited for (the
 * caller waits for the application's work on the buffers first:
 * gp_cuda_sync_device). 0, -ENOTSUP when the kernel is not available, <0
 * with err. */
int gp_cuda_reduce(int device, const struct gp_reduce_args *a, char *err, size_t errlen);
/* Waits until the legacy stream of `device` is idle (the application's
 * queued work on a buffer it hands to MPI). 0 or <0. */
int gp_cuda_sync_device(int device);
/* Copies d[0..n) (struct gp_copy_desc: dst, src, len; addresses in
 * `device`'s context: its own memory or peers' mapped with gp_dev_import)
 * on the reductions' stream, GP_COPY_BATCH_MAX copies a launch of the
 * batched copy kernel (one copy each through the driver without it), and
 * waits for them. 0, or <0 with err. */
struct gp_copy_desc;
int gp_cuda_copy_many(int device, const struct gp_copy_desc *d, size_t n, char *err,
                      size_t errlen);

/* ---- GPU data paths between processes (direct / staged) -------------- */
/* Control messages of the data paths travel on the wire FIFO with this
 * active-message id (UCT's own ids are below UCT_AM_ID_MAX = 64). */
#define GP_CTRL_AM_ID 0xfe

enum gp_path { GP_PATH_AUTO = 0, GP_PATH_DIRECT = 1, GP_PATH_STAGED = 2 };

/* thresh: measure the crossover per device pair (same value as UCX's
 * UCS_MEMUNITS_AUTO); SIZE_MAX (or 0): never staged where direct works */
#define GP_THRESH_AUTO ((size_t)-2)

enum gp_calib_mode {
    GP_CALIB_AUTO  = 0, /* cached crossover, else measure now and cache */
    GP_CALIB_FORCE = 1, /* measure again once per process (ignores older entries) */
    GP_CALIB_OFF   = 2  /* cached crossover only, else the fallback threshold */
};

typedef struct gp_xfer_config {
    int path;                 /* enum gp_path */
    size_t thresh;            /* AUTO: direct below, staged from here on;
                                 GP_THRESH_AUTO: measured per device pair */
    size_t chunk_size;        /* staged pipeline chunk; 0: calibrated, else 1 MiB */
    unsigned depth;           /* staged chunks in flight; 0: calibrated, else 4 */
    size_t cache_max_regions; /* pinned-region caches bounds */
    size_t cache_max_bytes;
    /* per-pair calibration (thresh == GP_THRESH_AUTO) */
    int calibrate;            /* enum gp_calib_mode */
    const char *calib_dir;    /* NULL or "": $XDG_CACHE_HOME/gdrpipe or ~/.cache/gdrpipe */
    double calib_budget_s;    /* 0: 0.5 s */
    double calib_wait_s;      /* wait for another process's calibration; 0: 10 s */
    size_t calib_max_size;    /* largest size measured; 0: 64 MiB */
    unsigned calib_online;    /* transfers per path that check the calibration
                                 through the peer (online_check.hpp); 0: off */
    int no_copy_kernel;       /* 1: no batched copy kernel, every direct copy on the
                                 copy engine (gp_xfer_round_begin) */
    double stall_timeout_s;   /* a staged transfer that moves nothing this long, on
                                 either side, fails; 0: never */
} gp_xfer_config_t;

/* Registration of local memory for peers (process-wide, cached): fills the
 * remote key (host memory: CMA by pid; device memory: IPC / VMM / pool
 * handle, or staged-only). *reg is released with gp_mem_deregister. */
/* Whether memory of exportable stream-ordered pools is shared for the direct
 * path (GP_RKEY_CUDA_POOL); on by default; off: such memory is staged. */
void gp_set_pool_ipc(int enable);
int gp_mem_register(void *addr, size_t len, uint64_t host_id, gp_rkey_t *rkey,
                    void **reg, char *err, size_t errlen);
void gp_mem_deregister(void *reg);
/* 1 when [addr, addr+len) lies inside a live registration of this process
 * whose token is `token` (the rkey's; device registrations cover their whole
 * allocation), else 0: what a transfer addressed to this process itself may
 * touch. */
int gp_mem_is_registered(const void *addr, size_t len, uint64_t token);

typedef struct gp_xfer_engine gp_xfer_engine_t;
typedef void (*gp_xfer_done_cb_t)(void *arg, int status /* 0 ok, <0 error */);

gp_xfer_engine_t *gp_xfer_engine_create(gp_shm_iface_t *wire,
                                        const gp_xfer_config_t *cfg, char *err,
                                        size_t errlen);
void gp_xfer_engine_destroy(gp_xfer_engine_t *engine);
/* One-sided transfer between local memory (iov; host or device) and the
 * peer's memory described by rkey at remote_addr; is_get: peer -> local.
 * Returns 0 when complete, 1 when in progress (cb runs later from
 * gp_xfer_progress), <0 on error. */
int gp_xfer_start(gp_xfer_engine_t *engine, gp_shm_peer_t *peer, int is_get,
                  const struct iovec *local, size_t iovcnt, uint64_t remote_addr,
                  const gp_rkey_t *rkey, gp_xfer_done_cb_t cb, void *arg);
unsigned gp_xfer_progress(gp_xfer_engine_t *engine);
/* A round of calls (the interface's progress): direct device copies started
 * between begin and end are launched together at the end (one batched copy
 * kernel per device); rounds nest. */
void gp_xfer_round_begin(gp_xfer_engine_t *engine);
void gp_xfer_round_end(gp_xfer_engine_t *engine);
void gp_xfer_on_control(gp_xfer_engine_t *engine, const void *data, uint32_t len);
size_t gp_xfer_outstanding(const gp_xfer_engine_t *engine);
/* fails every transfer with this peer (it died or disconnected) */
void gp_xfer_peer_failed(gp_xfer_engine_t *engine, gp_shm_peer_t *peer);

#ifdef __cplusplus
}
#endif
#endif
