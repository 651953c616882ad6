/* The C interface between the UCX glue's RDMA transport (plugin/rdma_*.c) and
 * the core's RDMA wire (src/rdma, docs/rdma.md). Same rules as capi.h: the
 * glue never sees C++ types, the core never sees UCX types. */
#ifndef GDRPIPE_CAPI_RDMA_H
#define GDRPIPE_CAPI_RDMA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- backend selection ------------------------------------------------ */
/* TEST ONLY: replaces libibverbs by the in-process fake fabric
 * (include/gdrpipe/rdma/fake_backend.hpp) for the whole process, so that two
 * workers (or two endpoints) of one process can connect over the RDMA
 * transport without an RDMA NIC. Must be called before any other gp_rdma_*
 * call; later calls are ignored (returns 0 when applied, -1 when too late). */
typedef struct gp_rdma_fake_config {
    int dmabuf;             /* the fake device accepts dma-buf registrations */
    int peermem;            /* reg_mr accepts device memory */
    double latency_us;      /* per operation */
    double bandwidth_gbps;  /* GB/s, 0 = unlimited */
    double device_bandwidth_gbps; /* GB/s of operations touching device
                             * memory (the NIC's GPU access); 0 = bandwidth_gbps */
    unsigned fail_after;    /* >0: the n-th transfer started in this process
                             * forces its QP into the error state (fault test) */
    int modeled_clock;      /* the fabric's time is modeled, not real: it moves
                             * when the process has nothing to progress
                             * (gp_rdma_dev_idle), so calibrations measure the
                             * parameters above exactly, whatever the load */
} gp_rdma_fake_config_t;
int gp_rdma_use_fake(const gp_rdma_fake_config_t *cfg);
int gp_rdma_is_fake(void);

/* ---- devices ------------------------------------------------------------ */
typedef struct gp_rdma_port {
    char name[64];       /* "mlx5_0:1": the UCX resource name */
    char device[64];     /* "mlx5_0" */
} gp_rdma_port_t;
/* Every active port, up to max; returns how many there are (may exceed max).
 * 0 (not an error) when there is no RDMA device. */
int gp_rdma_list_ports(gp_rdma_port_t *ports, int max);

typedef struct gp_rdma_dev_config {
    size_t cache_max_regions; /* 0 = unbounded */
    size_t cache_max_bytes;   /* 0 = unbounded */
    int try_dmabuf;
    int try_peermem;
} gp_rdma_dev_config_t;

/* One port opened: verbs context, protection domain, registration cache and
 * the table of exposed ranges shared by its endpoints. Reference-counted:
 * endpoints keep it alive after gp_rdma_dev_close. */
typedef struct gp_rdma_dev gp_rdma_dev_t;
gp_rdma_dev_t *gp_rdma_dev_open(const char *port_name, const gp_rdma_dev_config_t *cfg,
                                char *err, size_t errlen);
void gp_rdma_dev_close(gp_rdma_dev_t *dev);
/* Peers with the same fabric id can reach each other (IB: the GID subnet
 * prefix; RoCE: 0, anything; fake: this process). */
uint64_t gp_rdma_dev_fabric_id(const gp_rdma_dev_t *dev);
/* The GPUDirect RDMA mode of this process, probed once (at the first
 * gp_rdma_dev_open; logged at INFO then): "dma-buf", "nvidia-peermem" or
 * "none" (device memory staged only). */
const char *gp_rdma_gpudirect_mode(void);

/* ---- memory ------------------------------------------------------------- */
#define GP_RDMA_RKEY_SIZE 32
/* Registers [addr, addr+len) (host or CUDA memory) and exposes it to every
 * endpoint of dev: writes GP_RDMA_RKEY_SIZE bytes to rkey_out. */
int gp_rdma_mem_reg(gp_rdma_dev_t *dev, void *addr, size_t len, void *rkey_out,
                    void **reg, char *err, size_t errlen);
void gp_rdma_mem_dereg(gp_rdma_dev_t *dev, void *reg);
/* NULL when the bytes are a well-formed remote key, else the reason. */
const char *gp_rdma_check_rkey(const void *rkey, size_t len);

/* ---- endpoints ---------------------------------------------------------- */
typedef struct gp_rdma_ep gp_rdma_ep_t;
/* The connection failed (QP error, peer gone): called once from
 * gp_rdma_ep_progress, after which every transfer in flight completes with
 * an error. code: negative errno. */
typedef void (*gp_rdma_err_cb_t)(void *arg, int code, const char *why);
typedef void (*gp_rdma_done_cb_t)(void *arg, int status /* 0 or -errno */);

typedef struct gp_rdma_ep_config {
    int path;           /* enum gp_path (capi.h): auto, direct, staged */
    size_t thresh;      /* auto: direct below, staged from here on;
                         * GP_THRESH_AUTO: measured per (local GPU, port) at
                         * the first device-memory transfer (port_crossover.hpp);
                         * host memory then goes direct */
    uint32_t slot_size; /* staged chunk = receive slot (multiple of 4096) */
    uint32_t slots;     /* staged chunks in flight per direction (1..32) */
    /* thresh == GP_THRESH_AUTO: the calibration (same meaning as the
     * intra-host wire's gp_xfer_config_t fields) */
    int calibrate;          /* enum gp_calib */
    const char *calib_dir;  /* NULL/"": the default cache directory; copied */
    double calib_budget_s;  /* 0: default */
    double calib_wait_s;    /* 0: default */
    size_t calib_max_size;  /* largest probed message; 0: default (4 MiB) */
    size_t fallback_thresh; /* when nothing is measured or cached */
    double stall_timeout_s; /* the connection fails after this long without
                             * progress while work is outstanding; 0: never */
} gp_rdma_ep_config_t;

gp_rdma_ep_t *gp_rdma_ep_create(gp_rdma_dev_t *dev, const gp_rdma_ep_config_t *cfg,
                                gp_rdma_err_cb_t err_cb, void *arg, char *err,
                                size_t errlen);
/* Transfers in flight are dropped without their callbacks. */
void gp_rdma_ep_destroy(gp_rdma_ep_t *ep);
size_t gp_rdma_ep_address_length(void);
void gp_rdma_ep_address(const gp_rdma_ep_t *ep, void *addr);
/* 0, or -errno (-EINVAL: malformed address). */
int gp_rdma_ep_connect(gp_rdma_ep_t *ep, const void *addr, size_t len);
/* One-sided transfer between local memory and the peer's [remote_addr,
 * +len) described by rkey; path: enum gp_path, GP_PATH_AUTO = the ep's
 * configuration. Returns 0 when started (cb runs from gp_rdma_ep_progress),
 * -EAGAIN when out of resources (retry later), other -errno on error. */
int gp_rdma_ep_start(gp_rdma_ep_t *ep, int is_get, void *local, size_t len,
                     uint64_t remote_addr, const void *rkey, int path,
                     gp_rdma_done_cb_t cb, void *arg);
unsigned gp_rdma_ep_progress(gp_rdma_ep_t *ep);
/* The caller's progress found nothing to do: a fabric on a modeled clock (the
 * fake's modeled_clock) moves to its next event; on hardware, nothing. */
void gp_rdma_dev_idle(gp_rdma_dev_t *dev);
/* transfers started and not yet completed, and whether the peer's staged
 * requests are still being served */
int gp_rdma_ep_idle(const gp_rdma_ep_t *ep);
int gp_rdma_ep_failed(const gp_rdma_ep_t *ep);

/* ---- test support ------------------------------------------------------- */
typedef struct gp_rdma_stats {
    uint64_t direct, staged, fallbacks, errors; /* transfers, all endpoints */
    uint64_t cuda_flushes; /* cuFlushGPUDirectRDMAWrites after gets into device memory */
    uint64_t fake_ops, fake_bytes, fake_dmabuf_regs; /* fake fabric (0 if real) */
    uint64_t live_eps;      /* endpoints not destroyed */
    uint64_t fake_live_mrs; /* memory regions alive on the fake fabric */
} gp_rdma_stats_t;
/* Exported from the plugin (dlsym) so that tests can see which path ran. */
__attribute__((visibility("default"))) void gp_rdma_get_stats(gp_rdma_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif
