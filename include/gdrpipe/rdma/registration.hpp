// Registration of user memory for RDMA through the pinned-region cache
// (include/gdrpipe/cache/region_cache.hpp): registrations are kept after use
// (lazy deregistration), evicted by the cache's bounds, and dropped when the
// memory is freed (invalidate(), called from gdrpipe's free hooks).
//
// Device memory: dma-buf (caller-supplied get_dmabuf_fd, ibv_reg_dmabuf_mr)
// -> nvidia-peermem (ibv_reg_mr on the device VA) -> "staged only": the
// registration succeeds without an MR and transfers of that buffer take the
// host-staged path (a log line, never a failed transfer). That outcome is
// cached like an MR, so it is not retried until the memory is freed.
// Resource exhaustion (-ENOMEM/-ENOSPC) is reported to the cache as a pin
// failure, which flushes unused registrations and retries once.
#pragma once
#include <gdrpipe/cache/region_cache.hpp>
#include <gdrpipe/rdma/verbs.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace gdrpipe::rdma {

enum class MemKind { host, device };
enum class RegPath { host, dmabuf, peermem, none };
const char *to_string(RegPath p) noexcept;

struct DeviceRegHooks {
    // dma-buf fd for [ptr, ptr+len) of device memory (in gdrpipe:
    // cuMemGetHandleForAddressRange); 0 with *fd/*offset set, or -errno.
    std::function<int(const void *ptr, std::size_t len, int *fd, std::uint64_t *offset)>
        get_dmabuf_fd;
    // Closes an fd from get_dmabuf_fd once it is registered (default close()).
    std::function<void(int fd)> close_dmabuf_fd;
};

struct RegistrarConfig {
    std::size_t device_alignment = 64 * 1024; // GPU BAR granularity
    std::size_t host_alignment = 4096;
    std::size_t max_regions = 0; // per cache (host, device); 0 = unbounded
    std::size_t max_bytes = 0;
    bool try_dmabuf = true;
    bool try_peermem = true;
    unsigned access = kAccessAll;
};

// A reference to a registered (or staged-only) region. While it lives the MR
// stays valid. Addresses in work requests are virtual addresses (iova = VA).
class Registration {
  public:
    Registration() = default;
    bool direct() const noexcept { return mr_ != nullptr; }
    RegPath path() const noexcept { return path_; }
    std::uint32_t lkey() const noexcept { return mr_ ? mr_->lkey() : 0; }
    std::uint32_t rkey() const noexcept { return mr_ ? mr_->rkey() : 0; }
    std::uintptr_t addr() const noexcept { return ref_ ? ref_.addr() : 0; }
    std::size_t len() const noexcept { return ref_ ? ref_.len() : 0; }
    bool cached() const noexcept { return ref_.cached(); }

  private:
    friend class Registrar;
    cache::RegionRef ref_;
    const MemoryRegion *mr_ = nullptr;
    RegPath path_ = RegPath::none;
};

class Registrar {
  public:
    Registrar(ProtectionDomain &pd, DeviceRegHooks hooks, RegistrarConfig cfg = {});
    ~Registrar();
    Registrar(const Registrar &) = delete;
    Registrar &operator=(const Registrar &) = delete;

    // A registration covering [ptr, ptr+len). tag: the allocation's identity
    // (e.g. BUFFER_ID) so a new allocation at the same address is not served
    // a stale MR; bounds: the allocation, which clamps the 64 KiB widening.
    // Errors only for invalid arguments or exhausted resources (callers then
    // stage that transfer).
    Expected<Registration> get(const void *ptr, std::size_t len, MemKind kind,
                               std::uint64_t tag = 0,
                               cache::AddrRange bounds = cache::AddrRange::all());
    // Memory [ptr, ptr+len) was (or is about to be) freed: drop overlapping
    // registrations (in-use ones are deregistered at their last release).
    std::size_t invalidate(const void *ptr, std::size_t len);
    // A bounce buffer: registered once, not cached, with only the rights its
    // use needs (kAccess*: the receive slots take the peer's writes; what we
    // only send from needs none)
    Expected<std::unique_ptr<MemoryRegion>> register_bounce(void *ptr, std::size_t len,
                                                            unsigned access);

    cache::CacheStats stats(MemKind kind) const;
    ProtectionDomain &pd() noexcept { return pd_; }

  private:
    Expected<Registration> wrap(cache::Result<cache::RegionRef> r);
    ProtectionDomain &pd_;
    DeviceRegHooks hooks_;
    RegistrarConfig cfg_;
    std::atomic<bool> dmabuf_off_{false};
    std::unique_ptr<cache::RegionCache> host_;
    std::unique_ptr<cache::RegionCache> device_;
};

} // namespace gdrpipe::rdma
