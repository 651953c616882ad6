// The handful of verbs gdrpipe needs, as an abstract interface.
//
// Two implementations: ibv_backend (libibverbs, RC QPs; make_ibv_backend())
// and fake_backend (an in-process fabric for tests; FakeFabric). Everything
// above this header (connection, registration, transfer) must work on both
// and must not know which one it runs on. Design: docs/rdma.md.
//
// Lifetimes: a Context outlives its ProtectionDomains and CompletionQueues, a
// ProtectionDomain outlives its MemoryRegions and QueuePairs, a
// CompletionQueue outlives the QueuePairs that use it. Objects are not
// thread-safe unless noted; one thread drives one Context.
#pragma once
#include <gdrpipe/expected.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gdrpipe::rdma {

// Access rights of a memory region (mapped onto IBV_ACCESS_*).
enum Access : unsigned {
    kAccessLocalWrite = 1u << 0,
    kAccessRemoteWrite = 1u << 1,
    kAccessRemoteRead = 1u << 2,
};
inline constexpr unsigned kAccessAll =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;

// Work completion status. Numeric values are those of enum ibv_wc_status.
enum class WcStatus : int {
    success = 0,
    loc_len_err = 1,
    loc_qp_op_err = 2,
    loc_prot_err = 4,
    wr_flush_err = 5,
    loc_access_err = 8,
    rem_inv_req_err = 9,
    rem_access_err = 10,
    rem_op_err = 11,
    retry_exc_err = 12,
    rnr_retry_exc_err = 13,
    fatal_err = 19,
    general_err = 21,
};
const char *to_string(WcStatus s) noexcept;

enum class WcOpcode : int { send, rdma_write, rdma_read, recv, recv_rdma_with_imm };
const char *to_string(WcOpcode o) noexcept;

struct Completion {
    std::uint64_t wr_id = 0;
    WcStatus status = WcStatus::success;
    WcOpcode opcode = WcOpcode::send; // not meaningful when status != success
    std::uint32_t byte_len = 0;       // receives: bytes received
    std::uint32_t imm = 0;            // host order; valid if has_imm
    bool has_imm = false;
    std::uint32_t qp_num = 0;
};

// A scatter/gather element: addr is in the MR's address space (its iova).
struct Sge {
    std::uint64_t addr = 0;
    std::uint32_t length = 0;
    std::uint32_t lkey = 0;
};

using Gid = std::array<std::uint8_t, 16>;

enum class LinkLayer : int { infiniband, ethernet };

// One active port: a gdrpipe resource, named like UCX names IB resources.
struct PortInfo {
    std::string name;        // "mlx5_0:1"
    std::string device;      // "mlx5_0"
    std::uint8_t port = 1;
    LinkLayer link_layer = LinkLayer::infiniband;
    std::uint16_t lid = 0;
    Gid gid{};
    int gid_index = 0;
    std::uint32_t active_mtu = 4096; // bytes
    std::uint32_t max_qp_rd_atom = 16;
};

enum class QpState : int { reset, init, rtr, rts, error };
const char *to_string(QpState s) noexcept;

// What the peer tells us about its QP (exchanged out of band).
struct RemoteQp {
    Gid gid{};
    std::uint16_t lid = 0;
    std::uint32_t qpn = 0;
    std::uint32_t psn = 0;
    std::uint32_t mtu = 1024; // bytes
};

struct QpCaps {
    std::uint32_t max_send_wr = 128;
    std::uint32_t max_recv_wr = 128;
    std::uint32_t max_sge = 1;
    std::uint32_t max_inline = 64; // requested; the granted value is reported
};

class MemoryRegion {
  public:
    virtual ~MemoryRegion() = default; // deregisters
    virtual std::uint32_t lkey() const noexcept = 0;
    virtual std::uint32_t rkey() const noexcept = 0;
    virtual std::uint64_t iova() const noexcept = 0; // start address, as seen by RDMA
    virtual std::size_t length() const noexcept = 0;
};

class CompletionQueue {
  public:
    virtual ~CompletionQueue() = default;
    // Writes up to out.size() completions; returns how many, or -errno.
    virtual int poll(std::span<Completion> out) = 0;
};

class QueuePair {
  public:
    virtual ~QueuePair() = default; // destroys the QP
    virtual std::uint32_t qp_num() const noexcept = 0;
    virtual QpState state() const noexcept = 0;
    virtual std::uint32_t max_inline() const noexcept = 0;
    // RESET -> INIT -> RTR -> RTS. 0 or -errno.
    virtual int to_init() = 0;
    virtual int to_rtr(const RemoteQp &remote) = 0;
    virtual int to_rts(std::uint32_t local_psn) = 0;
    // Moves the QP to the error state (outstanding work is flushed).
    virtual int to_error() = 0;

    // Posting returns 0 or -errno (-ENOMEM: send/recv queue full; -EINVAL:
    // QP in a state that does not accept the post). Completions of
    // unsignaled sends are only reported on error (flush).
    virtual int post_write(std::uint64_t wr_id, std::span<const Sge> local,
                           std::uint64_t remote_addr, std::uint32_t rkey,
                           std::optional<std::uint32_t> imm, bool signaled) = 0;
    virtual int post_read(std::uint64_t wr_id, std::span<const Sge> local,
                          std::uint64_t remote_addr, std::uint32_t rkey,
                          bool signaled) = 0;
    virtual int post_send(std::uint64_t wr_id, std::span<const Sge> local,
                          std::optional<std::uint32_t> imm, bool signaled,
                          bool inline_data) = 0;
    virtual int post_recv(std::uint64_t wr_id, std::span<const Sge> local) = 0;
};

class ProtectionDomain {
  public:
    virtual ~ProtectionDomain() = default;
    // Registers host (or, with nvidia-peermem, device) virtual memory.
    virtual Expected<std::unique_ptr<MemoryRegion>> reg_mr(void *addr, std::size_t len,
                                                           unsigned access) = 0;
    // Registers a dma-buf: bytes [offset, offset+len) of the buffer behind fd,
    // addressed as [iova, iova+len) by work requests.
    virtual Expected<std::unique_ptr<MemoryRegion>>
    reg_dmabuf_mr(int fd, std::uint64_t offset, std::size_t len, std::uint64_t iova,
                  unsigned access) = 0;
    // An RC queue pair whose sends and receives complete on the given CQs.
    virtual Expected<std::unique_ptr<QueuePair>>
    create_qp(CompletionQueue &send_cq, CompletionQueue &recv_cq, const QpCaps &caps) = 0;
};

class Context {
  public:
    virtual ~Context() = default;
    virtual const PortInfo &port() const noexcept = 0;
    virtual Expected<std::unique_ptr<ProtectionDomain>> alloc_pd() = 0;
    virtual Expected<std::unique_ptr<CompletionQueue>> create_cq(int depth) = 0;
    // The fabric's own clock in seconds where it models time (the fake
    // fabric's modeled_clock), else nullopt: callers time with the steady
    // clock.
    virtual std::optional<double> modeled_now() const { return std::nullopt; }
    // The caller has nothing to do until a completion arrives: a fabric on a
    // modeled clock moves to its next event; a real one does nothing.
    virtual void idle() {}
};

class Backend {
  public:
    virtual ~Backend() = default;
    virtual const char *name() const noexcept = 0;
    // Every ACTIVE port of every device; empty (not an error) when none.
    virtual std::vector<PortInfo> ports() = 0;
    virtual Expected<std::unique_ptr<Context>> open(const PortInfo &port) = 0;
};

// The real backend (libibverbs). Without libibverbs at build time it reports
// no ports.
std::unique_ptr<Backend> make_ibv_backend();
// true if this build has the libibverbs backend.
bool ibv_backend_available() noexcept;

} // namespace gdrpipe::rdma
