// An in-process fake RDMA fabric implementing the verbs interface, for tests
// of everything above it. What it models and what it does not: docs/rdma.md.
//
// - Memory regions with lkey/rkey, bounds and access checks. A remote access
//   outside a registration (unknown rkey, other PD, out of bounds, missing
//   access right) completes with rem_access_err and the requester QP goes to
//   the error state; a bad local SGE gives loc_prot_err.
// - RC QPs of one fabric connected pairwise (any contexts/threads of the
//   process); per-QP ordered execution by one worker thread, which also
//   delivers the completions (asynchronously, in order per QP).
// - Receives: a SEND or WRITE_WITH_IMM waits at the head of its QP until the
//   peer posts a receive (like rnr_retry = 7, infinite).
// - Latency and bandwidth per QP: an op is done at
//   max(now, qp busy) + bytes/bandwidth + latency; operations touching
//   declared device memory use device_bandwidth_gbps if lower.
// - Time is real (a worker thread executes each operation when it is due) or
//   modeled (modeled_clock): the fabric's clock starts at 0 and moves only
//   when a caller has nothing to do (Context::idle), to the next due
//   operation, which then runs on that caller's thread. Timings read from
//   Context::modeled_now are then exactly the modeled ones, whatever the
//   load of the machine.
// - Faults: a QP forced to error; failing registrations; an MR limit
//   (-ENOMEM beyond it); dma-buf unsupported; device memory that reg_mr
//   refuses (-EFAULT) unless "peermem" is on.
#pragma once
#include <gdrpipe/rdma/verbs.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace gdrpipe::rdma {

struct FakeConfig {
    int devices = 1;
    int ports_per_device = 1;
    bool ports_active = true;
    double latency_us = 1.0;
    double bandwidth_gbps = 0.0; // GB/s; 0 = unlimited
    // GB/s of operations that touch memory declared as device memory (the
    // NIC's peer-to-peer access to GPU memory); 0 = same as bandwidth_gbps
    double device_bandwidth_gbps = 0.0;
    std::size_t max_mrs = 0;     // live MRs on the fabric; 0 = unlimited
    bool dmabuf_supported = true;
    bool peermem = false;        // reg_mr accepts device memory
    std::uint32_t max_inline = 64;
    bool modeled_clock = false;  // see above
};

struct FakeStats {
    std::uint64_t ops_executed = 0;
    std::uint64_t bytes_moved = 0;
    std::uint64_t live_mrs = 0;
    std::uint64_t reg_calls = 0;      // reg_mr + reg_dmabuf_mr attempts
    std::uint64_t dmabuf_regs = 0;    // successful dma-buf registrations
    std::uint64_t access_errors = 0;  // rem_access_err / loc_prot_err produced
};

namespace fake_detail {
struct Fabric;
}

class FakeFabric {
  public:
    explicit FakeFabric(FakeConfig config = {});
    ~FakeFabric(); // stops the worker; objects created from it stay safe to destroy
    FakeFabric(const FakeFabric &) = delete;
    FakeFabric &operator=(const FakeFabric &) = delete;

    // A Backend view of this fabric (several may exist; they share state).
    std::unique_ptr<Backend> backend();

    // --- fault injection and device-memory modelling
    // The next n registrations fail with `err` (negative errno).
    void fail_next_registrations(int n, int err);
    void set_max_mrs(std::size_t n);
    void set_dmabuf_supported(bool on);
    void set_peermem(bool on);
    void set_latency(double latency_us, double bandwidth_gbps);
    // Moves a QP to the error state as if the link failed: its outstanding
    // work is flushed; the peer's later operations to it fail (retry_exc_err).
    bool force_qp_error(std::uint32_t qpn);
    // Marks [ptr, ptr+len) as "GPU memory": reg_mr refuses it (-EFAULT)
    // unless peermem is on; export_dmabuf accepts only such memory.
    void add_device_memory(const void *ptr, std::size_t len);
    void remove_device_memory(const void *ptr);
    // A fake dma-buf fd for [ptr, ptr+len) of device memory (>= 1<<20, not a
    // real descriptor), or -EINVAL. close_dmabuf forgets it.
    int export_dmabuf(const void *ptr, std::size_t len);
    void close_dmabuf(int fd);
    int open_dmabufs() const;

    FakeStats stats() const;
    // The live memory regions: host address, length, access rights (kAccess*).
    struct MrView {
        const void *addr = nullptr;
        std::size_t len = 0;
        unsigned access = 0;
    };
    std::vector<MrView> memory_regions() const;

  private:
    std::shared_ptr<fake_detail::Fabric> f_;
};

} // namespace gdrpipe::rdma
