// extern "C" face of the GPU data paths (include/gdrpipe/capi.h, section
// "GPU data paths between processes"), for the UCX glue. Meant to live in
// src/capi/xfer_capi.cc; kept under src/pipeline/ until the lead moves it.
#include "gdrpipe/capi.h"
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
void set_err(char *err, size_t len, const std::string &msg) {
    if (err != nullptr && len > 0) std::snprintf(err, len, "%s", msg.c_str());
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

gp_xfer_engine_t *gp_xfer_engine_create(gp_shm_iface_t *wire, const gp_xfer_config_t *cfg,
                                        char *err, size_t errlen) {
    std::string why;
    auto e = XferEngine::create(reinterpret_cast<ShmIface *>(wire), cfg, &why);
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

void gp_xfer_on_control(gp_xfer_engine_t *engine, const void *data, uint32_t len) {
    core(engine)->on_control(data, len);
}

size_t gp_xfer_outstanding(const gp_xfer_engine_t *engine) { return core(engine)->outstanding(); }

void gp_xfer_peer_failed(gp_xfer_engine_t *engine, gp_shm_peer_t *peer) {
    core(engine)->peer_failed(reinterpret_cast<ShmPeer *>(peer));
}

} // extern "C"
