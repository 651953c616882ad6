// extern "C" face of the GPU data paths (include/gdrpipe/capi.h, section
// "GPU data paths between processes"), for the UCX glue: translates the C
// configuration into the core's (pipeline::XferConfig).
#include "gdrpipe/capi.h"
#include "set_err.hpp"
#include "gdrpipe/log.hpp"
#include "gdrpipe/pipeline/engine.hpp"
#include "gdrpipe/pipeline/registry.hpp"

#include <cerrno>
#include <cstdio>
#include <string>

using gdrpipe::pipeline::XferEngine;
using gdrpipe::wire::ShmIface;
using gdrpipe::wire::ShmPeer;

struct gp_xfer_engine : XferEngine {};

namespace {
XferEngine *core(gp_xfer_engine_t *e) { return reinterpret_cast<XferEngine *>(e); }
const XferEngine *core(const gp_xfer_engine_t *e) {
    return reinterpret_cast<const XferEngine *>(e);
}
using gdrpipe::capi::set_err;

namespace pl = gdrpipe::pipeline;
static_assert(GP_CTRL_AM_ID == pl::kCtrlAmId);
static_assert(GP_THRESH_AUTO == pl::kThreshAuto);
static_assert(GP_PATH_AUTO == int(pl::PathMode::automatic) &&
              GP_PATH_DIRECT == int(pl::PathMode::direct) &&
              GP_PATH_STAGED == int(pl::PathMode::staged));

pl::XferConfig to_core(const gp_xfer_config_t *c) {
    pl::XferConfig x;
    if (c == nullptr) return x;
    x.path = (c->path == GP_PATH_DIRECT)   ? pl::PathMode::direct
             : (c->path == GP_PATH_STAGED) ? pl::PathMode::staged
                                           : pl::PathMode::automatic;
    x.thresh = c->thresh;
    x.chunk_size = c->chunk_size;
    x.depth = c->depth;
    x.cache_max_regions = c->cache_max_regions;
    x.cache_max_bytes = c->cache_max_bytes;
    x.calibrate = c->calibrate == GP_CALIB_FORCE ? gdrpipe::model::CalibMode::force
                  : c->calibrate == GP_CALIB_OFF ? gdrpipe::model::CalibMode::off
                                                 : gdrpipe::model::CalibMode::automatic;
    if (c->calib_dir != nullptr) x.calib_dir = c->calib_dir;
    x.calib_budget_s = c->calib_budget_s;
    x.calib_wait_s = c->calib_wait_s;
    x.calib_max_size = c->calib_max_size;
    x.calib_online = c->calib_online;
    x.copy_kernel = c->no_copy_kernel == 0;
    x.stall_timeout_s = c->stall_timeout_s > 0 ? c->stall_timeout_s : 0;
    return x;
}
} // namespace

extern "C" {

void gp_set_pool_ipc(int enable) { gdrpipe::pipeline::set_pool_ipc(enable != 0); }

int gp_mem_register(void *addr, size_t len, uint64_t host_id, gp_rkey_t *rkey, void **reg,
                    char *err, size_t errlen) {
    if (rkey == nullptr || reg == nullptr || (addr == nullptr && len != 0)) {
        set_err(err, errlen, "invalid argument");
        return -EINVAL;
    }
    std::string why;
    auto *r = gdrpipe::pipeline::register_memory(addr, len, host_id, rkey, &why);
    if (r == nullptr) {
        set_err(err, errlen, why);
        return -EINVAL;
    }
    *reg = r;
    return 0;
}

void gp_mem_deregister(void *reg) {
    gdrpipe::pipeline::deregister(static_cast<gdrpipe::pipeline::Registration *>(reg));
}

int gp_mem_is_registered(const void *addr, size_t len, uint64_t token) {
    bool host = false;
    return gdrpipe::pipeline::registered(reinterpret_cast<uintptr_t>(addr), len, token, &host)
               ? 1
               : 0;
}

gp_xfer_engine_t *gp_xfer_engine_create(gp_shm_iface_t *wire, const gp_xfer_config_t *cfg,
                                        char *err, size_t errlen) {
    std::string why;
    auto e = XferEngine::create(reinterpret_cast<ShmIface *>(wire), to_core(cfg), &why);
    if (!e) {
        set_err(err, errlen, why);
        return nullptr;
    }
    return reinterpret_cast<gp_xfer_engine_t *>(e.release());
}

void gp_xfer_engine_destroy(gp_xfer_engine_t *engine) { delete core(engine); }

int gp_xfer_start(gp_xfer_engine_t *engine, gp_shm_peer_t *peer, int is_get,
                  const struct iovec *local, size_t iovcnt, uint64_t remote_addr,
                  const gp_rkey_t *rkey, gp_xfer_done_cb_t cb, void *arg) {
    return core(engine)->start(reinterpret_cast<ShmPeer *>(peer), is_get != 0, local, iovcnt,
                               remote_addr, rkey, cb, arg);
}

unsigned gp_xfer_progress(gp_xfer_engine_t *engine) { return core(engine)->progress(); }

void gp_xfer_round_begin(gp_xfer_engine_t *engine) { core(engine)->begin_round(); }

void gp_xfer_round_end(gp_xfer_engine_t *engine) { core(engine)->end_round(); }

void gp_xfer_on_control(gp_xfer_engine_t *engine, const void *data, uint32_t len) {
    core(engine)->on_control(data, len);
}

size_t gp_xfer_outstanding(const gp_xfer_engine_t *engine) { return core(engine)->outstanding(); }

void gp_xfer_peer_failed(gp_xfer_engine_t *engine, gp_shm_peer_t *peer) {
    core(engine)->peer_failed(reinterpret_cast<ShmPeer *>(peer));
}

} // extern "C"
