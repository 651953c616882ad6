// extern "C" face of the shared-memory wire, for the UCX glue.
#include "gdrpipe/capi.h"
#include "set_err.hpp"
#include "gdrpipe/log.hpp"
#include "gdrpipe/wire/shm_iface.hpp"

#include <cstdio>
#include <cstring>
#include <string>

using gdrpipe::wire::ShmIface;
using gdrpipe::wire::ShmPeer;

struct gp_shm_iface : ShmIface {};
struct gp_shm_peer : ShmPeer {};

namespace {
ShmIface *core(gp_shm_iface_t *i) { return reinterpret_cast<ShmIface *>(i); }
const ShmIface *core(const gp_shm_iface_t *i) { return reinterpret_cast<const ShmIface *>(i); }
ShmPeer *core(gp_shm_peer_t *p) { return reinterpret_cast<ShmPeer *>(p); }
const ShmPeer *core(const gp_shm_peer_t *p) { return reinterpret_cast<const ShmPeer *>(p); }
using gdrpipe::capi::set_err;
} // namespace

extern "C" {

int gp_shm_iface_open(unsigned num_elems, unsigned seg_size, gp_shm_iface_t **iface_p,
                      char *err, size_t errlen) {
    gdrpipe::wire::ShmConfig cfg;
    cfg.num_elems = num_elems;
    cfg.seg_size = seg_size;
    std::string why;
    auto iface = ShmIface::open(cfg, &why);
    if (!iface) {
        set_err(err, errlen, why);
        return -1;
    }
    *iface_p = reinterpret_cast<gp_shm_iface_t *>(iface.release());
    return 0;
}

void gp_shm_iface_close(gp_shm_iface_t *iface) { delete core(iface); }

unsigned gp_shm_iface_max_payload(const gp_shm_iface_t *iface) {
    return const_cast<ShmIface *>(core(iface))->max_payload();
}

size_t gp_shm_address_length(void) { return sizeof(gdrpipe::wire::ShmAddress); }

void gp_shm_iface_address(const gp_shm_iface_t *iface, void *addr) {
    auto a = core(iface)->address();
    std::memcpy(addr, &a, sizeof(a));
}

const char *gp_shm_check_address(const void *addr, size_t len) {
    return ShmIface::check_address(addr, len);
}

gp_shm_peer_t *gp_shm_connect(gp_shm_iface_t *iface, const void *addr, size_t len,
                              char *err, size_t errlen) {
    std::string why;
    ShmPeer *p = core(iface)->connect(addr, len, &why);
    if (p == nullptr) set_err(err, errlen, why);
    return reinterpret_cast<gp_shm_peer_t *>(p);
}

void gp_shm_disconnect(gp_shm_iface_t *iface, gp_shm_peer_t *peer) {
    core(iface)->release(core(peer));
}

pid_t gp_shm_peer_pid(const gp_shm_peer_t *peer) { return core(peer)->pid(); }
int gp_shm_peer_alive(const gp_shm_peer_t *peer) { return core(peer)->alive() ? 1 : 0; }
unsigned gp_shm_peer_max_payload(gp_shm_peer_t *peer) { return core(peer)->fifo().max_payload(); }

void *gp_shm_reserve(gp_shm_peer_t *peer, uint64_t *index) {
    return core(peer)->fifo().reserve(index);
}

void gp_shm_commit(gp_shm_peer_t *peer, uint64_t index, uint8_t am_id, uint32_t length) {
    core(peer)->fifo().commit(index, am_id, length);
}

int gp_shm_has_space(const gp_shm_peer_t *peer) {
    return const_cast<ShmPeer *>(core(peer))->fifo().has_space() ? 1 : 0;
}

unsigned gp_shm_progress(gp_shm_iface_t *iface, gp_shm_am_cb_t cb, void *arg,
                         unsigned max) {
    auto &rx = core(iface)->rx();
    unsigned n = 0;
    gdrpipe::wire::Fifo::Message msg;
    while (n < max && rx.peek(&msg)) {
        if (msg.corrupt) {
            GP_PEER_ERROR("shm: dropped element %llu with a corrupt length header",
                     static_cast<unsigned long long>(rx.read_index()));
        } else if (msg.am_id != gdrpipe::wire::kAmIdDiscard) {
            cb(arg, msg.am_id, msg.data, msg.length);
        }
        rx.release();
        ++n;
    }
    return n;
}

ssize_t gp_cma_read(pid_t pid, const struct iovec *local, size_t iovcnt,
                    uint64_t remote_addr) {
    return gdrpipe::wire::cma_read(pid, local, iovcnt, remote_addr);
}

ssize_t gp_cma_write(pid_t pid, const struct iovec *local, size_t iovcnt,
                     uint64_t remote_addr) {
    return gdrpipe::wire::cma_write(pid, local, iovcnt, remote_addr);
}

int gp_cma_available(void) { return gdrpipe::wire::cma_available() ? 1 : 0; }


} // extern "C"
