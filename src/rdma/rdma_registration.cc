// Registration of memory for RDMA through the region cache (registration.hpp).
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/registration.hpp>

#include <cerrno>
#include <unistd.h>

namespace gdrpipe::rdma {

const char *to_string(RegPath p) noexcept {
    switch (p) {
    case RegPath::host: return "host";
    case RegPath::dmabuf: return "dma-buf";
    case RegPath::peermem: return "peermem";
    case RegPath::none: return "staged-only";
    }
    return "?";
}

namespace {

struct RegPayload {
    std::unique_ptr<MemoryRegion> mr; // null: staged only
    RegPath path = RegPath::none;
};

bool exhausted(int code) { return code == -ENOMEM || code == -ENOSPC || code == -EAGAIN; }

bool unsupported(int code) {
    return code == -EOPNOTSUPP || code == -ENOSYS || code == -EPROTONOSUPPORT;
}

cache::Payload payload(std::unique_ptr<MemoryRegion> mr, RegPath path) {
    auto p = std::make_shared<RegPayload>();
    p->mr = std::move(mr);
    p->path = path;
    return p;
}

} // namespace

Registrar::Registrar(ProtectionDomain &pd, DeviceRegHooks hooks, RegistrarConfig cfg)
    : pd_(pd), hooks_(std::move(hooks)), cfg_(cfg) {
    if (!hooks_.close_dmabuf_fd) {
        hooks_.close_dmabuf_fd = [](int fd) { ::close(fd); };
    }
    cache::RegionOps host_ops;
    host_ops.pin = [this](const cache::RegionInfo &ri) -> cache::Result<cache::Payload> {
        auto mr = pd_.reg_mr(reinterpret_cast<void *>(ri.addr), ri.len, cfg_.access);
        if (mr) {
            return payload(std::move(mr.value()), RegPath::host);
        }
        if (exhausted(mr.error().code)) {
            return cache::make_cache_error(-mr.error().code, mr.error().message);
        }
        GP_INFO("rdma: host buffer 0x%lx+%zu not registrable (%s): staged only for this buffer",
                static_cast<unsigned long>(ri.addr), ri.len, mr.error().message.c_str());
        return payload(nullptr, RegPath::none);
    };
    cache::RegionOps dev_ops;
    dev_ops.pin = [this](const cache::RegionInfo &ri) -> cache::Result<cache::Payload> {
        void *ptr = reinterpret_cast<void *>(ri.addr);
        std::string why;
        if (cfg_.try_dmabuf && hooks_.get_dmabuf_fd && !dmabuf_off_.load()) {
            int fd = -1;
            std::uint64_t off = 0;
            const int rc = hooks_.get_dmabuf_fd(ptr, ri.len, &fd, &off);
            if (rc == 0) {
                auto mr = pd_.reg_dmabuf_mr(fd, off, ri.len, ri.addr, cfg_.access);
                hooks_.close_dmabuf_fd(fd); // the MR keeps the dma-buf referenced
                if (mr) {
                    return payload(std::move(mr.value()), RegPath::dmabuf);
                }
                if (exhausted(mr.error().code)) {
                    return cache::make_cache_error(-mr.error().code, mr.error().message);
                }
                if (unsupported(mr.error().code) && !dmabuf_off_.exchange(true)) {
                    GP_INFO("rdma: dma-buf registration unsupported (%s); not tried again",
                            mr.error().message.c_str());
                }
                why = "dma-buf: " + mr.error().message;
            } else {
                why = "dma-buf export failed (" + std::to_string(rc) + ")";
            }
        }
        if (cfg_.try_peermem) {
            auto mr = pd_.reg_mr(ptr, ri.len, cfg_.access);
            if (mr) {
                return payload(std::move(mr.value()), RegPath::peermem);
            }
            if (exhausted(mr.error().code)) {
                return cache::make_cache_error(-mr.error().code, mr.error().message);
            }
            why += (why.empty() ? "" : "; ") + ("peermem: " + mr.error().message);
        }
        GP_INFO("rdma: no direct registration for device buffer 0x%lx+%zu (%s): staged only "
                "for this buffer",
                static_cast<unsigned long>(ri.addr), ri.len, why.c_str());
        return payload(nullptr, RegPath::none);
    };
    cache::CacheConfig hc;
    hc.alignment = cfg_.host_alignment;
    hc.max_regions = cfg_.max_regions;
    hc.max_bytes = cfg_.max_bytes;
    hc.name = "rdma-host-reg";
    cache::CacheConfig dc = hc;
    dc.alignment = cfg_.device_alignment;
    dc.name = "rdma-dev-reg";
    host_ = std::make_unique<cache::RegionCache>(std::move(host_ops), hc);
    device_ = std::make_unique<cache::RegionCache>(std::move(dev_ops), dc);
}

Registrar::~Registrar() = default;

Expected<Registration> Registrar::wrap(cache::Result<cache::RegionRef> r) {
    if (!r) {
        const int code = r.error().code > 0 ? -r.error().code : -EINVAL;
        return make_error(code, "rdma registration: " + r.error().message);
    }
    Registration reg;
    reg.ref_ = std::move(r.value());
    const auto *p = reg.ref_.payload_as<RegPayload>();
    reg.mr_ = p->mr.get();
    reg.path_ = p->path;
    return reg;
}

Expected<Registration> Registrar::get(const void *ptr, std::size_t len, MemKind kind,
                                      std::uint64_t tag, cache::AddrRange bounds) {
    if (ptr == nullptr || len == 0) {
        return make_error(-EINVAL, "rdma registration: empty range");
    }
    cache::RegionCache &c = kind == MemKind::device ? *device_ : *host_;
    return wrap(c.get(ptr, len, tag, bounds));
}

std::size_t Registrar::invalidate(const void *ptr, std::size_t len) {
    return host_->invalidate(ptr, len) + device_->invalidate(ptr, len);
}

Expected<std::unique_ptr<MemoryRegion>> Registrar::register_bounce(void *ptr, std::size_t len,
                                                                   unsigned access) {
    return pd_.reg_mr(ptr, len, access);
}

cache::CacheStats Registrar::stats(MemKind kind) const {
    return kind == MemKind::device ? device_->stats() : host_->stats();
}

} // namespace gdrpipe::rdma
