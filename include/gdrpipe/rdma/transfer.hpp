// One-sided transfers over one RDMA connection (one endpoint pair).
//
// Direct path: RDMA WRITE (put) / READ (get) between registered user memory
// and the peer's registered memory (GPUDirect RDMA for device memory).
// Staged path: each side's staging is a pipeline::ChunkPipe (chunk_pipe.hpp,
// the same engine as the intra-host rings): the source is copied chunk by
// chunk into pinned, registered local bounce slots (a D2H copy on a CUDA
// stream for device memory, memcpy for host memory), each chunk is
// RDMA-written into a receive slot of the peer with immediate data naming
// (transfer, slot, chunk), the receiver's pipe copies it out (H2D) into the
// destination and returns the slot credit with a SEND. Up to `slots` chunks
// are in flight per direction, so D2H, wire and H2D overlap. Gets ask the
// owner (a SEND) to stream the range back the same way.
//
// Path: direct when both sides have an MR for the range and len < threshold
// (the caller's measured crossover), else staged; forcing direct where it is
// impossible falls back to staged (counted), never fails.
//
// Threading: one thread drives progress() and start calls; copiers may
// complete on any thread. Transfer callbacks run from progress(), in start
// order. Protocol: docs/rdma.md.
#pragma once
#include <gdrpipe/pipeline/chunk_pipe.hpp>
#include <gdrpipe/rdma/connection.hpp>
#include <gdrpipe/rdma/registration.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace gdrpipe::rdma {

struct TransferConfig {
    std::size_t direct_threshold = 64 * 1024; // direct if len < threshold (AUTO)
    std::uint32_t slot_size = 1u << 20;       // receive slot = chunk size (mult. of 4096)
    std::uint32_t slots = 4;                  // pipeline depth per direction (<= 32)
    ConnectionConfig conn{};
    // The chunk copies into the send slots (stage out) and out of the receive
    // slots (stage in). Null: pipeline::StreamCopier, the core's copies
    // (memcpy for host memory, cuMemcpyAsync + event on CUDA stream slot 2
    // out / 3 in). Tests and calibration put their own here.
    std::shared_ptr<pipeline::ChunkCopier> out_copier;
    std::shared_ptr<pipeline::ChunkCopier> in_copier;
    // Owner-side check of a staged request (key_id, its secret token, [addr,
    // addr+len)). Empty: this engine's own expose() table. Set by users whose
    // keys are shared by several endpoints (the UCX glue: one rkey per memory
    // domain).
    std::function<bool(std::uint32_t key_id, std::uint64_t token, std::uint64_t addr,
                       std::uint64_t len)>
        exposed;
    // Owner side: a peer's direct put into [addr, addr+len) (a range exposed
    // with kKeyFlushOnWrite) has been placed by the NIC; make it visible to
    // CUDA work (cuFlushGPUDirectRDMAWrites). 0 or -errno (the put fails).
    // Set: expose() flags device buffers with kKeyFlushOnWrite.
    std::function<int(std::uint64_t addr, std::uint64_t len)> flush_remote_writes;
    // A connection with work outstanding (our transfers, or streams we
    // serve) on which nothing moved for this long fails (-ETIMEDOUT): a peer
    // alive but no longer progressing, or crediting, never ends it
    // otherwise. 0: never (a peer busy outside MPI for long is legal).
    double stall_timeout_s = 0;
};

enum class PathChoice { automatic, direct, staged };

struct LocalBuffer {
    void *ptr = nullptr;
    std::size_t len = 0;
    MemKind kind = MemKind::host;
    std::uint64_t tag = 0;
    cache::AddrRange bounds = cache::AddrRange::all();
};

// key_id bit: direct puts into this range must be flushed at the owner
// (device memory on a GPU that needs cuFlushGPUDirectRDMAWrites): the put
// sends WRITE_FLUSH after its WRITE and completes on the owner's FLUSH_ACK.
inline constexpr std::uint32_t kKeyFlushOnWrite = 1u << 31;

// What an owner hands to a requester for a range it exposes.
struct RemoteKey {
    std::uint64_t addr = 0;
    std::uint64_t len = 0;
    std::uint32_t rkey = 0;   // 0: no MR, staged only
    std::uint32_t key_id = 0; // owner-side exposure id (staged requests)
    // the exposure's secret token (secret_token.hpp): key ids are small and
    // reused, so a staged request must also name this to be served (review
    // finding M4)
    std::uint64_t token = 0;
    bool direct() const noexcept { return rkey != 0; }
    bool flush_on_write() const noexcept { return (key_id & kKeyFlushOnWrite) != 0; }
};
inline constexpr std::size_t kRemoteKeySize = 32;
std::vector<std::uint8_t> pack_remote_key(const RemoteKey &k);
Expected<RemoteKey> unpack_remote_key(std::span<const std::uint8_t> blob);

struct TransferStats {
    std::uint64_t direct = 0;
    std::uint64_t staged = 0;
    std::uint64_t fallbacks = 0; // direct requested/expected, staged instead
    std::uint64_t errors = 0;    // transfers completed with an error
    std::uint64_t chunks_sent = 0;
    std::uint64_t chunks_received = 0;
    std::uint64_t nacks_sent = 0;
    std::uint64_t flush_requests = 0; // direct puts that asked the owner to flush
    std::uint64_t flushes_done = 0;   // owner side: flush_remote_writes calls
};

class TransferEngine {
  public:
    // status 0 or -errno: -ECONNRESET (connection failed), -EACCES (the peer
    // refused the range), -EIO (a chunk copy failed), -EINVAL.
    using Callback = std::function<void(int status)>;

    static Expected<std::unique_ptr<TransferEngine>>
    create(Context &ctx, ProtectionDomain &pd, Registrar &reg, const TransferConfig &cfg,
           Connection::ErrorCallback on_error = {});
    // Waits for chunk copies still running (they touch the bounce slots).
    ~TransferEngine();
    TransferEngine(const TransferEngine &) = delete;
    TransferEngine &operator=(const TransferEngine &) = delete;

    std::vector<std::uint8_t> address() const;
    // Parses the peer's blob (-EINVAL on garbage) and connects.
    int connect(std::span<const std::uint8_t> peer_address);

    // Owner side: makes [ptr, ptr+len) reachable by the peer.
    Expected<RemoteKey> expose(const LocalBuffer &buf);
    void unexpose(std::uint32_t key_id);
    // Memory freed: drops registrations and exposures overlapping it.
    std::size_t invalidate(const void *ptr, std::size_t len);

    // put: local -> peer [remote_addr, +local.len); get: peer -> local.
    // Returns 0 (started; cb runs later from progress()) or -errno (cb not run).
    int put(const LocalBuffer &local, std::uint64_t remote_addr, const RemoteKey &key,
            Callback cb, PathChoice path = PathChoice::automatic);
    int get(const LocalBuffer &local, std::uint64_t remote_addr, const RemoteKey &key,
            Callback cb, PathChoice path = PathChoice::automatic);

    // Polls completions and chunk copies, advances the pipelines, runs the
    // callbacks of finished transfers. Returns the number of events handled.
    int progress();
    // Handles `msg` as a control message that arrived from the peer (what
    // the receive path does after the QP delivered it): the entry point for
    // tests of misbehaving peers and for fuzzing (ctrl_msg.hpp: the layout).
    // Ignored unless connected.
    void handle_peer_control(std::span<const std::uint8_t> msg);
    // No own transfer and no transfer of the peer's being served in flight.
    bool idle() const;
    ConnState state() const noexcept;
    std::uint32_t qp_num() const noexcept;
    TransferStats stats() const noexcept { return stats_; }

    struct Impl;

  private:
    TransferEngine() = default;
    std::unique_ptr<Impl> impl_;
    TransferStats stats_{};
};

} // namespace gdrpipe::rdma
