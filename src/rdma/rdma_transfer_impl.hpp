// The RDMA transfer engine's internals (rdma_transfer.cc: connection,
// operations, completions and the interface; rdma_streams.cc: the staged
// chunk streams and their control messages). Internal to the engine.
#pragma once
#include <gdrpipe/bytes.hpp>
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/ctrl_msg.hpp>
#include <gdrpipe/rdma/transfer.hpp>
#include <gdrpipe/secret_token.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

namespace gdrpipe::rdma {
namespace transfer_detail {
constexpr std::uint32_t kMaxIds = 1024;
constexpr std::uint32_t kMaxChunks = 1u << 16;
// CUDA stream slots of the default copiers (cuda::DeviceManager): the
// intra-host engine's requester/owner slots, so that a stream's D2H and
// another's H2D overlap.
constexpr unsigned kStageOutStream = 2;
constexpr unsigned kStageInStream = 3;

constexpr std::uint32_t kCtrlBufSize = 64;
// the most send-slot memory a peer's slot size may make us pin, unless our
// own receive slots are larger
constexpr std::size_t kMaxPeerSendArea = std::size_t{256} << 20;

// wr_id: kind in the top byte, index below
enum WrKind : std::uint64_t { kWrCtrlSend = 1, kWrChunk = 2, kWrDirect = 3, kWrRecv = 4 };
inline std::uint64_t wr(WrKind k, std::uint64_t idx) { return (std::uint64_t{k} << 56) | idx; }
inline WrKind wr_kind(std::uint64_t w) { return static_cast<WrKind>(w >> 56); }
inline std::uint64_t wr_idx(std::uint64_t w) { return w & ((std::uint64_t{1} << 56) - 1); }

struct AlignedFree {
    void operator()(std::uint8_t *p) const noexcept { std::free(p); }
};
using Buf = std::unique_ptr<std::uint8_t, AlignedFree>;
inline Buf alloc_buf(std::size_t n) {
    const std::size_t len = (n + 4095) / 4096 * 4096;
    return Buf(static_cast<std::uint8_t *>(std::aligned_alloc(4096, len)));
}

} // namespace transfer_detail
using namespace transfer_detail;

struct TransferEngine::Impl {
    // An outgoing chunk stream (our put, or the peer's get we serve) as the
    // wire of its chunk pipeline: slots are this side's send slots, ship =
    // RDMA WRITE WITH IMM into a receive slot the peer credited, drained once
    // every chunk's credit is back.
    struct OutStream final : pipeline::ChunkWire {
        Impl *im = nullptr;
        std::uint64_t key = 0; // (get_resp << 32) | id
        bool get_resp = false;
        std::uint32_t id = 0;
        pipeline::ChunkPipe pipe;
        std::uint32_t posted = 0;   // chunks written (posted)
        std::uint32_t credited = 0; // credits back for this stream
        int status = 0;             // nonzero: refused / failed (the pipe stops)
        bool failed = false;        // the pipe has stopped for good

        int aborted(std::string *why) override {
            if (status != 0) *why = "the peer refused or failed the transfer";
            return status;
        }
        bool acquire(std::uint64_t, pipeline::ChunkSlot *slot) override {
            if (im->send_free.empty()) return false;
            slot->id = im->send_free.back();
            slot->p = reinterpret_cast<char *>(im->send_slot(slot->id));
            im->send_free.pop_back();
            return true;
        }
        void unacquire(const pipeline::ChunkSlot &slot) override { im->send_free.push_back(slot.id); }
        bool ship(std::uint64_t chunk, const pipeline::ChunkSlot &slot, std::size_t len) override {
            return im->post_chunk(*this, static_cast<std::uint32_t>(chunk), slot.id, len);
        }
        // on_credit refuses credits beyond `posted`, so credited <= posted
        bool drained(std::uint64_t nchunks) override { return credited >= nchunks; }
    };

    // An incoming chunk stream (our get, or the peer's put we receive) as
    // the wire of its chunk pipeline: a chunk has landed when its WRITE WITH
    // IMM arrived (the imm names the receive slot), release = CREDIT.
    struct InStream final : pipeline::ChunkWire {
        Impl *im = nullptr;
        bool get_resp = false;
        std::uint32_t id = 0;
        std::size_t len = 0;
        std::uint32_t nchunks = 0;
        pipeline::ChunkPipe pipe;
        bool active = false;        // the pipe was set up (a refused put has none)
        std::deque<std::pair<std::uint32_t, std::uint32_t>> arrived; // (chunk, slot) not taken yet
        std::uint32_t arrivals = 0; // chunks that arrived in total
        int status = 0;             // nonzero: failed or refused; arrivals are credited unread
        bool failed = false;        // the pipe has stopped for good
        bool ended = false;         // nothing more will arrive (NACK)

        int aborted(std::string *why) override {
            if (status != 0) *why = "the transfer was refused or failed";
            return status;
        }
        bool landed(std::uint64_t chunk, pipeline::ChunkSlot *slot) override {
            for (auto it = arrived.begin(); it != arrived.end(); ++it) {
                if (it->first == chunk) {
                    slot->id = it->second;
                    slot->p = reinterpret_cast<char *>(im->recv_slot(it->second));
                    arrived.erase(it);
                    return true;
                }
            }
            return false;
        }
        void release(std::uint64_t chunk, const pipeline::ChunkSlot &slot, int st) override {
            im->credit(get_resp, id, slot.id, static_cast<std::uint32_t>(chunk), st);
        }
        // The pipe stopped: whatever arrived and was not taken goes back unread.
        void stop(int st) {
            failed = true;
            if (status == 0) status = st;
            while (!arrived.empty()) {
                im->credit(get_resp, id, arrived.front().second, arrived.front().first, status);
                arrived.pop_front();
            }
        }
    };

    // A transfer this side started.
    struct Xfer {
        std::uint32_t id = 0;
        bool is_get = false;
        bool staged = false;
        Callback cb;
        bool done = false;
        int status = 0;
        // direct
        Registration reg;
        bool direct_posted = false;
        Sge sge{};
        std::uint64_t raddr = 0;
        std::uint32_t rkey = 0;
        std::uint32_t key_id = 0;
        std::uint64_t token = 0;
        bool flush_at_target = false; // direct put: WRITE_FLUSH after the WRITE
        bool flush_requested = false;
        // staged
        pipeline::LocalMem mem;
        std::size_t len = 0;
        std::uint32_t nchunks = 0;
        InStream in; // staged get: the chunks coming back
    };

    struct Exposure {
        std::uintptr_t addr = 0;
        std::size_t len = 0;
        std::uint64_t token = 0; // handed out in the RemoteKey, asked back
        Registration reg;
    };

    TransferEngine *self = nullptr;
    TransferConfig cfg;
    std::shared_ptr<pipeline::ChunkCopier> out_copier; // D2H into send slots
    std::shared_ptr<pipeline::ChunkCopier> in_copier;  // H2D out of receive slots
    Registrar *reg = nullptr;
    ProtectionDomain *pd = nullptr;
    std::unique_ptr<Connection> conn;
    Connection::ErrorCallback user_on_error;
    bool closing = false; // destructor: no more control messages
    // the last progress() that moved something, or found nothing outstanding
    std::chrono::steady_clock::time_point last_moved = std::chrono::steady_clock::now();

    // receive side: slots the peer writes into, control receive buffers
    Buf recv_area;
    pipeline::HostPin recv_pin; // for the H2D copies out of it
    std::unique_ptr<MemoryRegion> recv_mr;
    std::uint32_t nrecv = 0;
    // control send buffers
    Buf ctrl_area;
    std::unique_ptr<MemoryRegion> ctrl_mr;
    std::vector<std::uint32_t> ctrl_free;
    std::deque<CtrlMsg> ctrl_backlog;
    // send side: local bounce slots (peer's slot size), credits for peer slots
    Buf send_area;
    pipeline::HostPin send_pin; // for the D2H copies into it
    std::unique_ptr<MemoryRegion> send_mr;
    std::vector<std::uint32_t> send_free;
    std::deque<std::uint32_t> peer_credits;
    // bit r: the peer's receive slot r is credited to us (in peer_credits);
    // a credit for a slot already credited is a protocol error, so
    // peer_credits never holds more than peer.stage_slots entries
    std::uint64_t peer_slot_credited = 0;
    EpAddress peer{};
    std::uint32_t sq_used = 0;

    std::deque<std::unique_ptr<Xfer>> xfers; // start order
    std::unordered_map<std::uint32_t, Xfer *> by_id;
    std::uint32_t next_id = 0;
    std::map<std::uint64_t, std::unique_ptr<OutStream>> out; // by key; service order below
    std::deque<std::uint64_t> out_order;
    std::unordered_map<std::uint32_t, std::unique_ptr<InStream>> in_puts;
    std::unordered_map<std::uint32_t, Exposure> exposures;
    std::uint32_t next_key_id = 1;

    std::uint8_t *recv_slot(std::uint32_t s) const { return recv_area.get() + std::size_t{s} * cfg.slot_size; }

    std::uint8_t *ctrl_recv_buf(std::uint32_t i) const;
    std::uint8_t *ctrl_send_buf(std::uint32_t i) const { return ctrl_area.get() + std::size_t{i} * kCtrlBufSize; }
    std::uint8_t *send_slot(std::uint32_t s) const { return send_area.get() + std::size_t{s} * peer.stage_slot_size; }
    bool sq_full() const { return sq_used >= cfg.conn.caps.max_send_wr; }
    bool connected() const { return conn && conn->state() == ConnState::connected; }
    // ------------------------------------------------------------ posting --
    void send_ctrl(const CtrlMsg &m);
    void flush_ctrl();
    void post_recv(std::uint32_t i);
    // ------------------------------------------------------- transfers ----
    int alloc_id(std::uint32_t &id);
    void finish(Xfer &x, int status);
    int start(bool is_get, const LocalBuffer &local, std::uint64_t raddr, const RemoteKey &key,
              Callback cb, PathChoice path);
    void post_direct(Xfer &x);
    // ------------------------------------------------------------ pipeline --
    // The staging side of every stream is a pipeline::ChunkPipe (the same
    // engine as the intra-host rings); what follows is this wire's part.
    void add_out_stream(bool get_resp, std::uint32_t id, pipeline::LocalMem mem);
    // ship: one chunk from send slot `slot` into a credited receive slot.
    bool post_chunk(OutStream &s, std::uint32_t ch, std::uint32_t slot, std::size_t n);
    // release: the receive slot of chunk `ch` goes back to the peer.
    void credit(bool get_resp, std::uint32_t id, std::uint32_t slot, std::uint32_t ch, int status);
    void complete_stream(OutStream &s);
    // Steps an outgoing stream; true when it is finished.
    bool step_out(OutStream &s, int *events);
    // Steps an incoming stream; 1 finished, 0 not yet.
    int step_in(InStream &in, int *events);
    void pump(int *events = nullptr);
    // ------------------------------------------------------ completions --
    void on_completion(const Completion &c);
    // fails the connection when work is outstanding and nothing moved for
    // cfg.stall_timeout_s (moved: events of this progress call)
    void check_stall(int moved);
    void protocol_error(const char *why) { conn->fail(-EPROTO, std::string("protocol error: ") + why); }
    void on_recv(const Completion &c, std::uint32_t buf);
    void on_ctrl(const void *msg, std::size_t len);
    // Owner side: is [addr, addr+len) inside exposure key_id, whose token
    // is `token`?
    bool exposed(std::uint32_t key_id, std::uint64_t token, std::uint64_t addr,
                 std::uint64_t len) const;
    void nack(std::uint32_t id, bool get, int status);
    void on_put_begin(const CtrlMsg &m);
    void on_get_req(const CtrlMsg &m);
    void on_put_abort(const CtrlMsg &m);
    void on_credit(const CtrlMsg &m);
    // Owner side: the peer's direct WRITE into an exposed range is placed;
    // make it visible to CUDA work before the peer's put completes.
    void on_write_flush(const CtrlMsg &m);
    void on_flush_ack(const CtrlMsg &m);
    void on_nack(const CtrlMsg &m);
    void on_chunk(std::uint32_t imm, std::uint32_t byte_len);
    void on_conn_error(int code, const std::string &why);
    // Stops every pipeline and waits for its copies (they touch the bounce
    // slots and user memory).
    void abort_all();
    int progress();
};

} // namespace gdrpipe::rdma
