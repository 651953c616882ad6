/* The RDMA transport of gdrpipe ("gdrpipe_rdma" component, transport
 * "gp_rdma"): one memory domain
 * and one NET device per active RDMA port (named like UCX names them,
 * "mlx5_0:1"), endpoints connected to endpoints (RC queue pairs) through
 * UCP's wireup, one-sided put/get (short, bcopy, zcopy). No active messages:
 * UCP runs them and the wireup on another transport. The data paths are the
 * core's RDMA wire behind gdrpipe/capi_rdma.h; design: docs/rdma.md. */
#ifndef GDRPIPE_RDMA_H
#define GDRPIPE_RDMA_H

#include "gdrpipe.h"

#include <gdrpipe/capi_rdma.h>

#define GDRPIPE_RDMA_NAME          "gdrpipe_rdma" /* component */
#define GDRPIPE_RDMA_TL_NAME       "gp_rdma"      /* transport (UCX_TLS); 9 chars max */
#define GDRPIPE_RDMA_CONFIG_PREFIX "GDRPIPE_RDMA_"

typedef struct gdrpipe_rdma_md_config {
    uct_md_config_t super;
    unsigned        cache_max_regions;
    size_t          cache_max_bytes;
} gdrpipe_rdma_md_config_t;

typedef struct gdrpipe_rdma_md {
    uct_md_t      super;
    gp_rdma_dev_t *dev;
    char          port[64];
} gdrpipe_rdma_md_t;

typedef struct gdrpipe_rdma_iface_config {
    uct_iface_config_t super;
    double             bw;
    double             latency;
    int                path;        /* enum gp_path */
    size_t             thresh;      /* UCS_MEMUNITS_AUTO: measured per (GPU, port) */
    gdrpipe_calib_config_t calib;   /* RDMA_CALIBRATE, _CALIB_DIR, _BUDGET, _WAIT */
    size_t             calib_max_size;
    size_t             chunk_size;
    unsigned           slots;
    size_t             seg_size;    /* short/bcopy bounce buffer */
    unsigned           bounce_count;
    double             stall_timeout;
} gdrpipe_rdma_iface_config_t;

typedef struct gdrpipe_rdma_iface {
    uct_base_iface_t    super;
    gdrpipe_rdma_md_t   *md;
    gp_rdma_ep_config_t ep_cfg;
    char                *calib_dir;  /* ep_cfg.calib_dir (owned) */
    double              bw;
    double              latency;
    size_t              seg_size;
    unsigned            bounce_count;
    char                *bounce_area;
    void                *bounce_reg;
    void                **bounce_free;
    unsigned            bounce_nfree;
    ucs_list_link_t     eps;
    uint64_t            id;          /* iface address: unique among live ifaces */
} gdrpipe_rdma_iface_t;

typedef struct gdrpipe_rdma_flush {
    ucs_queue_elem_t queue;
    uct_completion_t *comp;
} gdrpipe_rdma_flush_t;

typedef struct gdrpipe_rdma_ep {
    uct_base_ep_t    super;
    gp_rdma_ep_t     *core;
    ucs_list_link_t  link;         /* iface->eps */
    ucs_queue_head_t pending_q;
    ucs_queue_head_t flush_q;
    ucs_list_link_t  ops;          /* operations in flight */
    size_t           outstanding;  /* our operations not completed yet */
    int              fenced;       /* later operations wait for outstanding */
    int              connected;
    int              err_pending;  /* core reported a failure, UCX not told yet */
    int              err_reported;
    int              err_code;
} gdrpipe_rdma_ep_t;

typedef struct {
    uint64_t fabric_id;
} gdrpipe_rdma_dev_addr_t;

/* The interface address tells an interface its own address apart: nothing
 * connects to it (endpoints connect to endpoints). */
typedef struct {
    uint64_t id;
} gdrpipe_rdma_iface_addr_t;

extern uct_component_t *gdrpipe_rdma_component;
void gdrpipe_rdma_register(void);
void gdrpipe_rdma_unregister(void);
/* rdma_fake.c: the test-only fake fabric in place of the RDMA devices when
 * the test suite's environment asks for it (before UCX lists the devices) */
void gdrpipe_rdma_fake_apply(void);

ucs_status_t gdrpipe_rdma_iface_open(uct_md_h md, uct_worker_h worker,
                                     const uct_iface_params_t *params,
                                     const uct_iface_config_t *config,
                                     uct_iface_h *iface_p);
ucs_status_t gdrpipe_rdma_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                        unsigned *num_devices_p);

/* endpoint operations (rdma_ep.c) */
UCS_CLASS_DECLARE_NEW_FUNC(gdrpipe_rdma_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(gdrpipe_rdma_ep_t, uct_ep_t);
ucs_status_t gdrpipe_rdma_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr);
ucs_status_t gdrpipe_rdma_ep_connect_to_ep(uct_ep_h tl_ep, const uct_device_addr_t *dev_addr,
                                           const uct_ep_addr_t *ep_addr);
ucs_status_t gdrpipe_rdma_ep_put_short(uct_ep_h tl_ep, const void *buffer, unsigned length,
                                       uint64_t remote_addr, uct_rkey_t rkey);
ssize_t gdrpipe_rdma_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                                  uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t gdrpipe_rdma_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp);
ucs_status_t gdrpipe_rdma_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                       void *arg, size_t length, uint64_t remote_addr,
                                       uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t gdrpipe_rdma_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp);
ucs_status_t gdrpipe_rdma_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                         unsigned flags);
void gdrpipe_rdma_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                                   void *arg);
ucs_status_t gdrpipe_rdma_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);
ucs_status_t gdrpipe_rdma_ep_fence(uct_ep_h tl_ep, unsigned flags);
/* progress of one endpoint: completions, flushes, pending requests */
unsigned gdrpipe_rdma_ep_progress(gdrpipe_rdma_ep_t *ep);

#endif
