// One endpoint of an RC connection: its address blob and state machine.
//
//   created (QP in INIT) --connect(peer)--> connected (RTR, RTS)
//   any --error completion / fail()--> error (QP to ERR, callback once)
//   any --close()/destructor--> closed (QP and CQ destroyed)
//
// The address blob is what the UCX glue exchanges (ep address): it is parsed
// like network input; truncated, padded or garbled blobs are refused.
#pragma once
#include <gdrpipe/rdma/verbs.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gdrpipe::rdma {

// Everything a peer needs to connect to and stream into this endpoint.
struct EpAddress {
    RemoteQp qp;                        // gid, lid, qpn, psn, mtu
    std::uint64_t stage_addr = 0;       // receive bounce slots (0 = none)
    std::uint32_t stage_rkey = 0;
    std::uint32_t stage_slots = 0;      // <= kMaxStageSlots
    std::uint32_t stage_slot_size = 0;  // bytes, multiple of 4096
};

inline constexpr std::size_t kEpAddressSize = 60;
inline constexpr std::uint32_t kMaxStageSlots = 32;
inline constexpr std::uint32_t kMaxStageSlotSize = 1u << 30;

std::vector<std::uint8_t> pack_ep_address(const EpAddress &a);
// -EINVAL (with a reason) for anything but a well-formed blob of this version.
Expected<EpAddress> unpack_ep_address(std::span<const std::uint8_t> blob);

enum class ConnState { created, connected, error, closed };
const char *to_string(ConnState s) noexcept;

struct ConnectionConfig {
    QpCaps caps{};
    int cq_depth = 1024;
};

class Connection {
  public:
    // code: negative errno; why: a readable reason. Called once, from
    // progress() or fail(), never concurrently.
    using ErrorCallback = std::function<void(int code, const std::string &why)>;
    using CompletionHandler = std::function<void(const Completion &)>;

    // Creates CQ + QP and moves the QP to INIT.
    static Expected<std::unique_ptr<Connection>> create(Context &ctx, ProtectionDomain &pd,
                                                        const ConnectionConfig &cfg,
                                                        ErrorCallback on_error);
    ~Connection();
    Connection(const Connection &) = delete;
    Connection &operator=(const Connection &) = delete;

    // This endpoint's QP address (for the blob).
    RemoteQp local_qp() const;
    // INIT -> RTR -> RTS towards `peer`. 0, or -errno (state -> error).
    int connect(const RemoteQp &peer);
    ConnState state() const noexcept { return state_; }
    QueuePair &qp() noexcept { return *qp_; }
    std::uint32_t max_inline() const noexcept { return qp_ ? qp_->max_inline() : 0; }

    // Polls the CQ; every completion goes to `handler`. The first failed
    // completion (a flush too: the QP left RTS) puts the endpoint in the error state
    // before the handler sees it. Returns the number of completions, or -errno.
    int progress(const CompletionHandler &handler, int max = 64);
    // Puts the endpoint in the error state (QP to ERR; callback once).
    void fail(int code, const std::string &why);
    // Releases QP and CQ. Idempotent.
    void close();

  private:
    Connection() = default;
    ConnState state_ = ConnState::created;
    RemoteQp local_{};
    ErrorCallback on_error_;
    std::unique_ptr<CompletionQueue> cq_;
    std::unique_ptr<QueuePair> qp_;
};

} // namespace gdrpipe::rdma
