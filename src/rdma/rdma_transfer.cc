// One-sided transfer engine over one RC connection (transfer.hpp).
//
// Wire protocol (both sides little-endian hosts; the structs are memcpy'd):
//   control SENDs (CtrlMsg): PUT_BEGIN, GET_REQ, CREDIT, NACK, PUT_ABORT;
//   chunks: RDMA WRITE WITH IMM into a receive slot of the peer, imm =
//     [31] get-response  [30:21] transfer id  [20:16] slot  [15:0] chunk.
// Transfer ids are the requester's; a get's chunks carry the get's id with
// the get-response bit set.
//
// The staging side of every stream (chunk iteration, the D2H/H2D copies
// into/out of the bounce slots, their completion in order, the depth limit,
// failure and abort) is pipeline::ChunkPipe, the engine of the intra-host
// rings too; OutStream / InStream are this wire's ChunkWire.
#include <gdrpipe/bytes.hpp>
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/transfer.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gdrpipe::rdma {

namespace {

constexpr std::uint32_t kMaxIds = 1024;
constexpr std::uint32_t kMaxChunks = 1u << 16;
constexpr std::uint32_t kCtrlMagic = 0x47504331; // "GPC1"
// CUDA stream slots of the default copiers (cuda::DeviceManager): the
// intra-host engine's requester/owner slots, so that a stream's D2H and
// another's H2D overlap.
constexpr unsigned kStageOutStream = 2;
constexpr unsigned kStageInStream = 3;

enum class CtrlType : std::uint32_t { put_begin = 1, get_req, credit, nack, put_abort, write_flush,
                                       flush_ack };

struct CtrlMsg {
    std::uint32_t magic = kCtrlMagic;
    std::uint32_t type = 0;
    std::uint32_t id = 0;
    std::uint32_t key_id = 0;
    std::uint64_t addr = 0;
    std::uint64_t len = 0;
    std::int32_t status = 0;
    std::uint32_t imm = 0; // CREDIT: the imm of the chunk; NACK: 1 = get
};
static_assert(sizeof(CtrlMsg) == 40);
constexpr std::uint32_t kCtrlBufSize = 64;

std::uint32_t make_imm(bool get_resp, std::uint32_t id, std::uint32_t slot, std::uint32_t chunk) {
    return (get_resp ? 1u << 31 : 0u) | ((id & 0x3ffu) << 21) | ((slot & 0x1fu) << 16) |
           (chunk & 0xffffu);
}
bool imm_get(std::uint32_t imm) { return (imm >> 31) != 0; }
std::uint32_t imm_id(std::uint32_t imm) { return (imm >> 21) & 0x3ffu; }
std::uint32_t imm_slot(std::uint32_t imm) { return (imm >> 16) & 0x1fu; }
std::uint32_t imm_chunk(std::uint32_t imm) { return imm & 0xffffu; }

// wr_id: kind in the top byte, index below
enum WrKind : std::uint64_t { kWrCtrlSend = 1, kWrChunk = 2, kWrDirect = 3, kWrRecv = 4 };
std::uint64_t wr(WrKind k, std::uint64_t idx) { return (std::uint64_t{k} << 56) | idx; }
WrKind wr_kind(std::uint64_t w) { return static_cast<WrKind>(w >> 56); }
std::uint64_t wr_idx(std::uint64_t w) { return w & ((std::uint64_t{1} << 56) - 1); }

struct AlignedFree {
    void operator()(std::uint8_t *p) const noexcept { std::free(p); }
};
using Buf = std::unique_ptr<std::uint8_t, AlignedFree>;
Buf alloc_buf(std::size_t n) {
    const std::size_t len = (n + 4095) / 4096 * 4096;
    return Buf(static_cast<std::uint8_t *>(std::aligned_alloc(4096, len)));
}

} // namespace

std::vector<std::uint8_t> pack_remote_key(const RemoteKey &k) {
    std::vector<std::uint8_t> b(kRemoteKeySize);
    put_le<std::uint64_t>(&b[0], k.addr);
    put_le<std::uint64_t>(&b[8], k.len);
    put_le<std::uint32_t>(&b[16], k.rkey);
    put_le<std::uint32_t>(&b[20], k.key_id);
    return b;
}

Expected<RemoteKey> unpack_remote_key(std::span<const std::uint8_t> b) {
    if (b.size() != kRemoteKeySize) {
        return make_error(-EINVAL, "rdma remote key: bad size");
    }
    RemoteKey k;
    k.addr = get_le<std::uint64_t>(&b[0]);
    k.len = get_le<std::uint64_t>(&b[8]);
    k.rkey = get_le<std::uint32_t>(&b[16]);
    k.key_id = get_le<std::uint32_t>(&b[20]);
    if (k.len == 0 || k.addr + k.len < k.addr || k.key_id == 0) {
        return make_error(-EINVAL, "rdma remote key: bad range");
    }
    return k;
}

// ---------------------------------------------------------------------------

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
        bool drained(std::uint64_t nchunks) override { return credited == nchunks; }
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
    std::uint8_t *ctrl_recv_buf(std::uint32_t i) const {
        return recv_area.get() + std::size_t{cfg.slots} * cfg.slot_size + std::size_t{i} * kCtrlBufSize;
    }
    std::uint8_t *ctrl_send_buf(std::uint32_t i) const { return ctrl_area.get() + std::size_t{i} * kCtrlBufSize; }
    std::uint8_t *send_slot(std::uint32_t s) const { return send_area.get() + std::size_t{s} * peer.stage_slot_size; }
    bool sq_full() const { return sq_used >= cfg.conn.caps.max_send_wr; }
    bool connected() const { return conn && conn->state() == ConnState::connected; }

    // ------------------------------------------------------------ posting --
    void send_ctrl(const CtrlMsg &m) {
        ctrl_backlog.push_back(m);
        flush_ctrl();
    }
    void flush_ctrl() {
        while (!ctrl_backlog.empty() && connected() && !ctrl_free.empty() && !sq_full()) {
            const std::uint32_t i = ctrl_free.back();
            std::memcpy(ctrl_send_buf(i), &ctrl_backlog.front(), sizeof(CtrlMsg));
            Sge s{reinterpret_cast<std::uintptr_t>(ctrl_send_buf(i)), sizeof(CtrlMsg), ctrl_mr->lkey()};
            const int rc = conn->qp().post_send(wr(kWrCtrlSend, i), {&s, 1}, std::nullopt, true, false);
            if (rc != 0) {
                conn->fail(rc, "post_send failed");
                return;
            }
            ctrl_free.pop_back();
            ctrl_backlog.pop_front();
            ++sq_used;
        }
    }
    void post_recv(std::uint32_t i) {
        Sge s{reinterpret_cast<std::uintptr_t>(ctrl_recv_buf(i)), kCtrlBufSize, recv_mr->lkey()};
        if (int rc = conn->qp().post_recv(wr(kWrRecv, i), {&s, 1}); rc != 0) {
            conn->fail(rc, "post_recv failed");
        }
    }

    // ------------------------------------------------------- transfers ----
    int alloc_id(std::uint32_t &id) {
        for (std::uint32_t k = 0; k < kMaxIds; ++k) {
            const std::uint32_t c = (next_id + k) % kMaxIds;
            if (by_id.count(c) == 0 && out.count(c) == 0) {
                id = c;
                next_id = (c + 1) % kMaxIds;
                return 0;
            }
        }
        return -EAGAIN;
    }

    void finish(Xfer &x, int status) {
        if (x.done) {
            return;
        }
        if (x.staged && x.is_get && x.in.active) {
            x.in.pipe.abort(); // its copies read our receive slots
        }
        x.done = true;
        if (x.status == 0) {
            x.status = status;
        }
        if (x.status != 0) {
            ++self->stats_.errors;
        }
    }

    int start(bool is_get, const LocalBuffer &local, std::uint64_t raddr, const RemoteKey &key,
              Callback cb, PathChoice path) {
        if (!connected()) {
            return conn && conn->state() == ConnState::error ? -ECONNRESET : -ENOTCONN;
        }
        if (local.ptr == nullptr || local.len == 0 || raddr < key.addr || local.len > key.len ||
            raddr - key.addr > key.len - local.len) {
            return -EINVAL;
        }
        auto x = std::make_unique<Xfer>();
        x->is_get = is_get;
        x->cb = std::move(cb);
        if (int rc = alloc_id(x->id); rc != 0) {
            return rc;
        }
        bool want_direct = path == PathChoice::direct ||
                           (path == PathChoice::automatic && local.len < cfg.direct_threshold);
        bool direct = false;
        if (want_direct && key.direct() && local.len <= 0x7fffffffu) {
            auto r = reg->get(local.ptr, local.len, local.kind, local.tag, local.bounds);
            if (r && r->direct()) {
                x->reg = std::move(r.value());
                direct = true;
            }
        }
        if (want_direct && !direct) {
            ++self->stats_.fallbacks;
            GP_DEBUG("rdma: transfer %u of %zu bytes staged (no direct registration)", x->id,
                     local.len);
        }
        if (!direct) {
            if (peer.stage_slots == 0 || !send_area) {
                return -ENOTSUP;
            }
            // chunks land in the receiver's slots: a put uses the peer's slot
            // size, a get ours
            const std::uint64_t chunk = is_get ? cfg.slot_size : peer.stage_slot_size;
            const std::uint64_t nch = (local.len + chunk - 1) / chunk;
            if (nch > kMaxChunks) {
                return -EMSGSIZE;
            }
            if (!pipeline::classify_one(local.ptr, local.len, &x->mem)) {
                return -EINVAL;
            }
            x->nchunks = static_cast<std::uint32_t>(nch);
        }
        Xfer &xr = *x;
        by_id[x->id] = x.get();
        xfers.push_back(std::move(x));
        if (direct) {
            ++self->stats_.direct;
            xr.sge = Sge{reinterpret_cast<std::uintptr_t>(local.ptr),
                         static_cast<std::uint32_t>(local.len), xr.reg.lkey()};
            xr.raddr = raddr;
            xr.rkey = key.rkey;
            xr.key_id = key.key_id;
            xr.flush_at_target = key.flush_on_write();
            post_direct(xr);
            return 0;
        }
        ++self->stats_.staged;
        xr.staged = true;
        xr.len = local.len;
        CtrlMsg m;
        m.id = xr.id;
        m.key_id = key.key_id;
        m.addr = raddr;
        m.len = local.len;
        if (is_get) {
            InStream &in = xr.in;
            in.im = this;
            in.get_resp = true;
            in.id = xr.id;
            in.len = xr.len;
            in.nchunks = xr.nchunks;
            in.pipe.init(pipeline::ChunkPipe::Role::consumer, &in, in_copier.get(), xr.mem,
                         cfg.slot_size, cfg.slots);
            in.active = true;
            m.type = static_cast<std::uint32_t>(CtrlType::get_req);
            send_ctrl(m);
        } else {
            m.type = static_cast<std::uint32_t>(CtrlType::put_begin);
            send_ctrl(m); // before any chunk: RC keeps the order
            add_out_stream(false, xr.id, xr.mem);
        }
        pump();
        return 0;
    }

    void post_direct(Xfer &x) {
        if (x.direct_posted || sq_full() || !connected()) {
            return;
        }
        const int rc = x.is_get
                           ? conn->qp().post_read(wr(kWrDirect, x.id), {&x.sge, 1}, x.raddr, x.rkey, true)
                           : conn->qp().post_write(wr(kWrDirect, x.id), {&x.sge, 1}, x.raddr, x.rkey,
                                                   std::nullopt, true);
        if (rc != 0) {
            finish(x, rc);
            return;
        }
        x.direct_posted = true;
        ++sq_used;
    }

    // ------------------------------------------------------------ pipeline --
    // The staging side of every stream is a pipeline::ChunkPipe (the same
    // engine as the intra-host rings); what follows is this wire's part.
    void add_out_stream(bool get_resp, std::uint32_t id, pipeline::LocalMem mem) {
        auto s = std::make_unique<OutStream>();
        s->im = this;
        s->get_resp = get_resp;
        s->id = id;
        s->key = (std::uint64_t{get_resp} << 32) | id;
        s->pipe.init(pipeline::ChunkPipe::Role::producer, s.get(), out_copier.get(), std::move(mem),
                     peer.stage_slot_size, cfg.slots, /*wait_drain=*/true);
        out_order.push_back(s->key);
        out.emplace(s->key, std::move(s));
    }

    // ship: one chunk from send slot `slot` into a credited receive slot.
    bool post_chunk(OutStream &s, std::uint32_t ch, std::uint32_t slot, std::size_t n) {
        if (peer_credits.empty() || sq_full() || !connected()) {
            return false;
        }
        const std::uint32_t r = peer_credits.front();
        Sge sg{reinterpret_cast<std::uintptr_t>(send_slot(slot)), static_cast<std::uint32_t>(n),
               send_mr->lkey()};
        const int rc = conn->qp().post_write(
            wr(kWrChunk, slot), {&sg, 1}, peer.stage_addr + std::uint64_t{r} * peer.stage_slot_size,
            peer.stage_rkey, make_imm(s.get_resp, s.id, r, ch), true);
        if (rc != 0) {
            conn->fail(rc, "post chunk failed");
            return false;
        }
        peer_credits.pop_front();
        ++s.posted;
        ++sq_used;
        ++self->stats_.chunks_sent;
        return true;
    }

    // release: the receive slot of chunk `ch` goes back to the peer.
    void credit(bool get_resp, std::uint32_t id, std::uint32_t slot, std::uint32_t ch, int status) {
        if (closing) {
            return;
        }
        CtrlMsg m;
        m.type = static_cast<std::uint32_t>(CtrlType::credit);
        m.imm = make_imm(get_resp, id, slot, ch);
        m.status = status;
        send_ctrl(m);
    }

    void complete_stream(OutStream &s) {
        if (!s.get_resp) {
            auto it = by_id.find(s.id);
            if (it != by_id.end()) {
                finish(*it->second, s.status);
            }
            if (s.status != 0 && s.posted < s.pipe.nchunks()) {
                CtrlMsg m;
                m.type = static_cast<std::uint32_t>(CtrlType::put_abort);
                m.id = s.id;
                send_ctrl(m);
            }
        } else if (s.status != 0 && s.posted < s.pipe.nchunks()) {
            nack(s.id, true, -EIO); // the requester's get: nothing more comes
        }
    }

    // Steps an outgoing stream; true when it is finished.
    bool step_out(OutStream &s, int *events) {
        if (!s.failed) {
            bool busy = false;
            std::string why;
            const int r = s.pipe.step(&busy, &why);
            *events += busy ? 1 : 0;
            if (r == 1) {
                return true;
            }
            if (r < 0) {
                s.failed = true;
                if (s.status == 0) {
                    s.status = r; // a failed copy: -EIO
                }
                GP_DEBUG("rdma: outgoing stream %u%s failed: %s", s.id, s.get_resp ? " (get)" : "",
                         why.c_str());
            }
        }
        // a failed stream waits for the credits of what it put on the wire
        return s.failed && s.credited == s.posted;
    }

    // Steps an incoming stream; 1 finished, 0 not yet.
    int step_in(InStream &in, int *events) {
        if (!in.active) { // refused put: credited unread on arrival
            return in.arrivals == in.nchunks || in.ended ? 1 : 0;
        }
        if (!in.failed) {
            bool busy = false;
            std::string why;
            const int r = in.pipe.step(&busy, &why);
            *events += busy ? 1 : 0;
            if (r == 1) {
                return 1;
            }
            if (r < 0) {
                in.stop(r);
                GP_DEBUG("rdma: incoming stream %u%s failed: %s", in.id, in.get_resp ? " (get)" : "",
                         why.c_str());
            }
        }
        return in.failed && (in.arrivals == in.nchunks || in.ended) ? 1 : 0;
    }

    void pump(int *events = nullptr) {
        int ev = 0;
        flush_ctrl();
        for (auto &xp : xfers) {
            if (!xp->staged && !xp->direct_posted && !xp->done) {
                post_direct(*xp);
            }
        }
        // oldest stream first: it gets slots and credits first
        for (auto it = out_order.begin(); it != out_order.end();) {
            auto sit = out.find(*it);
            if (sit == out.end()) {
                it = out_order.erase(it);
                continue;
            }
            OutStream &s = *sit->second;
            if (step_out(s, &ev)) {
                complete_stream(s);
                out.erase(sit);
                it = out_order.erase(it);
                ++ev;
                continue;
            }
            ++it;
        }
        for (auto &xp : xfers) {
            if (xp->staged && xp->is_get && !xp->done && step_in(xp->in, &ev) == 1) {
                finish(*xp, xp->in.status);
            }
        }
        for (auto it = in_puts.begin(); it != in_puts.end();) {
            if (step_in(*it->second, &ev) == 1) {
                it = in_puts.erase(it);
                ++ev;
            } else {
                ++it;
            }
        }
        flush_ctrl();
        if (events != nullptr) {
            *events += ev;
        }
    }

    // ------------------------------------------------------ completions --
    void on_completion(const Completion &c) {
        const WrKind k = wr_kind(c.wr_id);
        const std::uint64_t idx = wr_idx(c.wr_id);
        const bool ok = c.status == WcStatus::success;
        switch (k) {
        case kWrCtrlSend:
            --sq_used;
            ctrl_free.push_back(static_cast<std::uint32_t>(idx));
            break;
        case kWrChunk:
            --sq_used;
            send_free.push_back(static_cast<std::uint32_t>(idx));
            break;
        case kWrDirect: {
            --sq_used;
            auto it = by_id.find(static_cast<std::uint32_t>(idx));
            if (it != by_id.end()) {
                Xfer &x = *it->second;
                if (ok && x.flush_at_target && !x.is_get) {
                    // the data is placed; the target flushes it for CUDA and
                    // answers FLUSH_ACK, which completes the put
                    CtrlMsg m;
                    m.type = static_cast<std::uint32_t>(CtrlType::write_flush);
                    m.id = x.id;
                    m.key_id = x.key_id;
                    m.addr = x.raddr;
                    m.len = x.sge.length;
                    x.flush_requested = true;
                    ++self->stats_.flush_requests;
                    send_ctrl(m);
                } else {
                    finish(x, ok ? 0 : (c.status == WcStatus::rem_access_err ? -EACCES : -ECONNRESET));
                }
            }
            break;
        }
        case kWrRecv:
            if (ok) {
                on_recv(c, static_cast<std::uint32_t>(idx));
            }
            break;
        }
    }

    void protocol_error(const char *why) { conn->fail(-EPROTO, std::string("protocol error: ") + why); }

    void on_recv(const Completion &c, std::uint32_t buf) {
        if (c.opcode == WcOpcode::recv_rdma_with_imm && c.has_imm) {
            post_recv(buf); // the receive buffer was not used
            on_chunk(c.imm, c.byte_len);
            return;
        }
        CtrlMsg m;
        if (c.byte_len != sizeof(CtrlMsg)) {
            protocol_error("control message of bad size");
            return;
        }
        std::memcpy(&m, ctrl_recv_buf(buf), sizeof(m));
        post_recv(buf);
        if (m.magic != kCtrlMagic) {
            protocol_error("bad control magic");
            return;
        }
        switch (static_cast<CtrlType>(m.type)) {
        case CtrlType::put_begin: on_put_begin(m); break;
        case CtrlType::get_req: on_get_req(m); break;
        case CtrlType::credit: on_credit(m); break;
        case CtrlType::nack: on_nack(m); break;
        case CtrlType::put_abort: on_put_abort(m); break;
        case CtrlType::write_flush: on_write_flush(m); break;
        case CtrlType::flush_ack: on_flush_ack(m); break;
        default: protocol_error("unknown control message"); break;
        }
    }

    // Owner side: is [addr, addr+len) inside exposure key_id?
    bool exposed(std::uint32_t key_id, std::uint64_t addr, std::uint64_t len) const {
        if (cfg.exposed) {
            return len != 0 && cfg.exposed(key_id, addr, len);
        }
        auto it = exposures.find(key_id);
        if (it == exposures.end() || len == 0) {
            return false;
        }
        const Exposure &e = it->second;
        return addr >= e.addr && len <= e.len && addr - e.addr <= e.len - len;
    }

    void nack(std::uint32_t id, bool get, int status) {
        CtrlMsg m;
        m.type = static_cast<std::uint32_t>(CtrlType::nack);
        m.id = id;
        m.status = status;
        m.imm = get ? 1 : 0;
        ++self->stats_.nacks_sent;
        send_ctrl(m);
    }

    void on_put_begin(const CtrlMsg &m) {
        if (m.id >= kMaxIds || m.len == 0 || (m.len + cfg.slot_size - 1) / cfg.slot_size > kMaxChunks) {
            protocol_error("bad PUT_BEGIN");
            return;
        }
        auto in = std::make_unique<InStream>();
        in->im = this;
        in->id = m.id;
        in->len = m.len;
        in->nchunks = static_cast<std::uint32_t>((m.len + cfg.slot_size - 1) / cfg.slot_size);
        pipeline::LocalMem mem;
        if (!exposed(m.key_id, m.addr, m.len)) {
            GP_WARN("rdma: peer put %u to 0x%llx+%llu outside any exposed range: refused", m.id,
                    static_cast<unsigned long long>(m.addr), static_cast<unsigned long long>(m.len));
            in->status = -EACCES;
            nack(m.id, false, -EACCES);
        } else if (!pipeline::classify_one(reinterpret_cast<void *>(m.addr), m.len, &mem)) {
            in->status = -EFAULT;
            nack(m.id, false, -EFAULT);
        } else {
            in->pipe.init(pipeline::ChunkPipe::Role::consumer, in.get(), in_copier.get(),
                          std::move(mem), cfg.slot_size, cfg.slots);
            in->active = true;
        }
        in_puts[m.id] = std::move(in);
    }

    void on_get_req(const CtrlMsg &m) {
        if (m.id >= kMaxIds || m.len == 0 ||
            (m.len + peer.stage_slot_size - 1) / std::max<std::uint32_t>(peer.stage_slot_size, 1) > kMaxChunks) {
            protocol_error("bad GET_REQ");
            return;
        }
        if (!exposed(m.key_id, m.addr, m.len)) {
            GP_WARN("rdma: peer get %u from 0x%llx+%llu outside any exposed range: refused", m.id,
                    static_cast<unsigned long long>(m.addr), static_cast<unsigned long long>(m.len));
            nack(m.id, true, -EACCES);
            return;
        }
        if (out.count((std::uint64_t{1} << 32) | m.id) != 0) {
            protocol_error("duplicate GET_REQ");
            return;
        }
        pipeline::LocalMem mem;
        if (!pipeline::classify_one(reinterpret_cast<void *>(m.addr), m.len, &mem)) {
            nack(m.id, true, -EFAULT);
            return;
        }
        add_out_stream(true, m.id, std::move(mem));
    }

    void on_put_abort(const CtrlMsg &m) {
        auto it = in_puts.find(m.id);
        if (it != in_puts.end()) {
            if (it->second->active) {
                it->second->pipe.abort();
            }
            in_puts.erase(it);
        }
    }

    void on_credit(const CtrlMsg &m) {
        const std::uint32_t r = imm_slot(m.imm);
        if (r >= peer.stage_slots) {
            protocol_error("credit for a bad slot");
            return;
        }
        peer_credits.push_back(r);
        const std::uint64_t key = (std::uint64_t{imm_get(m.imm)} << 32) | imm_id(m.imm);
        auto it = out.find(key);
        if (it != out.end()) {
            OutStream &s = *it->second;
            ++s.credited;
            if (m.status != 0 && s.status == 0) {
                s.status = -EIO; // the peer's stage-in failed
            }
        }
    }

    // Owner side: the peer's direct WRITE into an exposed range is placed;
    // make it visible to CUDA work before the peer's put completes.
    void on_write_flush(const CtrlMsg &m) {
        CtrlMsg a;
        a.type = static_cast<std::uint32_t>(CtrlType::flush_ack);
        a.id = m.id;
        if (!exposed(m.key_id, m.addr, m.len)) {
            a.status = -EACCES;
        } else if (cfg.flush_remote_writes) {
            a.status = cfg.flush_remote_writes(m.addr, m.len);
            ++self->stats_.flushes_done;
        }
        send_ctrl(a);
    }

    void on_flush_ack(const CtrlMsg &m) {
        auto it = by_id.find(m.id);
        if (it == by_id.end() || !it->second->flush_requested) {
            protocol_error("FLUSH_ACK for no flush");
            return;
        }
        finish(*it->second, m.status <= 0 ? m.status : -EIO);
    }

    void on_nack(const CtrlMsg &m) {
        const int st = m.status < 0 ? m.status : -EACCES;
        if (m.imm == 0) { // our put
            auto it = out.find(m.id);
            if (it != out.end() && it->second->status == 0) {
                it->second->status = st;
            }
        } else { // our get: nothing (more) will come
            auto it = by_id.find(m.id);
            if (it != by_id.end() && it->second->staged && it->second->is_get) {
                InStream &in = it->second->in;
                in.ended = true;
                if (in.status == 0) {
                    in.status = st;
                }
            }
        }
    }

    void on_chunk(std::uint32_t imm, std::uint32_t byte_len) {
        const std::uint32_t id = imm_id(imm), slot = imm_slot(imm), ch = imm_chunk(imm);
        if (slot >= cfg.slots) {
            protocol_error("chunk into a bad slot");
            return;
        }
        ++self->stats_.chunks_received;
        InStream *in = nullptr;
        if (imm_get(imm)) {
            auto it = by_id.find(id);
            if (it == by_id.end() || !it->second->is_get || !it->second->staged || it->second->done) {
                protocol_error("chunk for an unknown get");
                return;
            }
            in = &it->second->in;
        } else {
            auto it = in_puts.find(id);
            if (it == in_puts.end()) {
                protocol_error("chunk for an unknown put");
                return;
            }
            in = it->second.get();
        }
        const std::size_t off = std::size_t{ch} * cfg.slot_size;
        if (ch >= in->nchunks || byte_len != std::min<std::size_t>(cfg.slot_size, in->len - off)) {
            protocol_error("chunk of bad index or size");
            return;
        }
        ++in->arrivals;
        if (in->status != 0 || in->failed || !in->active) {
            credit(in->get_resp, id, slot, ch, in->status); // skipped: the slot goes back unread
            return;
        }
        in->arrived.emplace_back(ch, slot); // the pipe copies it out on its next step
    }

    void on_conn_error(int code, const std::string &why) {
        for (auto &x : xfers) {
            finish(*x, -ECONNRESET);
        }
        for (auto &[k, s] : out) {
            if (s->status == 0) {
                s->status = -ECONNRESET;
            }
        }
        for (auto &[k, in] : in_puts) {
            if (in->status == 0) {
                in->status = -ECONNRESET;
            }
        }
        if (user_on_error) {
            user_on_error(code, why);
        }
    }

    // Stops every pipeline and waits for its copies (they touch the bounce
    // slots and user memory).
    void abort_all() {
        for (auto &[k, s] : out) {
            s->pipe.abort();
            s->failed = true;
        }
        for (auto &[k, in] : in_puts) {
            if (in->active) {
                in->pipe.abort();
            }
        }
        for (auto &x : xfers) {
            if (x->staged && x->is_get && x->in.active) {
                x->in.pipe.abort();
            }
        }
    }

    int progress() {
        int n = 0;
        if (conn && conn->state() != ConnState::closed) {
            const int r = conn->progress([this](const Completion &c) { on_completion(c); }, 256);
            n += r > 0 ? r : 0;
        }
        if (conn && conn->state() == ConnState::error) {
            // nothing more will complete: drop the streams we serve or own
            abort_all();
            for (auto &[k, s] : out) {
                s->credited = s->posted;
                complete_stream(*s);
                ++n;
            }
            out.clear();
            out_order.clear();
            in_puts.clear();
        } else {
            pump(&n);
        }
        // in-order completion of our transfers
        while (!xfers.empty() && xfers.front()->done) {
            std::unique_ptr<Xfer> x = std::move(xfers.front());
            xfers.pop_front();
            by_id.erase(x->id);
            x->reg = Registration{};
            if (x->cb) {
                x->cb(x->status);
            }
            ++n;
        }
        return n;
    }
};

// ---------------------------------------------------------------------------

Expected<std::unique_ptr<TransferEngine>>
TransferEngine::create(Context &ctx, ProtectionDomain &pd, Registrar &reg,
                       const TransferConfig &cfg, Connection::ErrorCallback on_error) {
    if (cfg.slots == 0 || cfg.slots > kMaxStageSlots || cfg.slot_size == 0 ||
        cfg.slot_size % 4096 != 0 || cfg.slot_size > kMaxStageSlotSize) {
        return make_error(-EINVAL, "rdma transfer: bad configuration");
    }
    std::unique_ptr<TransferEngine> e(new TransferEngine());
    e->impl_ = std::make_unique<Impl>();
    Impl &im = *e->impl_;
    im.self = e.get();
    im.cfg = cfg;
    im.out_copier = cfg.out_copier ? cfg.out_copier
                                   : std::make_shared<pipeline::StreamCopier>(kStageOutStream);
    im.in_copier = cfg.in_copier ? cfg.in_copier
                                 : std::make_shared<pipeline::StreamCopier>(kStageInStream);
    im.reg = &reg;
    im.pd = &pd;
    im.user_on_error = std::move(on_error);
    // receive WRs: chunks (one per slot) + control messages
    im.nrecv = std::min<std::uint32_t>(cfg.conn.caps.max_recv_wr, 4 * cfg.slots + 64);
    im.cfg.conn.caps.max_recv_wr = im.nrecv;
    Impl *ip = &im;
    auto conn = Connection::create(ctx, pd, im.cfg.conn,
                                   [ip](int code, const std::string &why) { ip->on_conn_error(code, why); });
    if (!conn) {
        return conn.error();
    }
    im.conn = std::move(conn.value());
    const std::size_t recv_bytes = std::size_t{cfg.slots} * cfg.slot_size + std::size_t{im.nrecv} * kCtrlBufSize;
    im.recv_area = alloc_buf(recv_bytes);
    const std::uint32_t nctrl = cfg.conn.caps.max_send_wr;
    im.ctrl_area = alloc_buf(std::size_t{nctrl} * kCtrlBufSize);
    if (!im.recv_area || !im.ctrl_area) {
        return make_error(-ENOMEM, "rdma transfer: bounce allocation failed");
    }
    im.recv_pin.pin(im.recv_area.get(), recv_bytes, "rdma receive slots");
    auto rmr = reg.register_bounce(im.recv_area.get(), recv_bytes);
    if (!rmr) {
        return rmr.error();
    }
    im.recv_mr = std::move(rmr.value());
    auto cmr = reg.register_bounce(im.ctrl_area.get(), std::size_t{nctrl} * kCtrlBufSize);
    if (!cmr) {
        return cmr.error();
    }
    im.ctrl_mr = std::move(cmr.value());
    for (std::uint32_t i = 0; i < nctrl; ++i) {
        im.ctrl_free.push_back(nctrl - 1 - i);
    }
    return e;
}

TransferEngine::~TransferEngine() {
    if (!impl_) {
        return;
    }
    // copies in flight touch our bounce slots and user memory: wait for them
    impl_->closing = true;
    impl_->abort_all();
    impl_->conn.reset(); // the QP goes before the memory it targets
}

std::vector<std::uint8_t> TransferEngine::address() const {
    EpAddress a;
    a.qp = impl_->conn->local_qp();
    a.stage_addr = reinterpret_cast<std::uintptr_t>(impl_->recv_area.get());
    a.stage_rkey = impl_->recv_mr->rkey();
    a.stage_slots = impl_->cfg.slots;
    a.stage_slot_size = impl_->cfg.slot_size;
    return pack_ep_address(a);
}

int TransferEngine::connect(std::span<const std::uint8_t> peer_address) {
    Impl &im = *impl_;
    auto a = unpack_ep_address(peer_address);
    if (!a) {
        GP_WARN("%s", a.error().message.c_str());
        return a.error().code;
    }
    if (im.conn->state() != ConnState::created) {
        return -EISCONN;
    }
    im.peer = a.value();
    if (im.peer.stage_slots != 0) {
        const std::size_t bytes = std::size_t{im.cfg.slots} * im.peer.stage_slot_size;
        im.send_area = alloc_buf(bytes);
        if (!im.send_area) {
            return -ENOMEM;
        }
        im.send_pin.pin(im.send_area.get(), bytes, "rdma send slots");
        auto smr = im.reg->register_bounce(im.send_area.get(), bytes);
        if (!smr) {
            return smr.error().code;
        }
        im.send_mr = std::move(smr.value());
        for (std::uint32_t s = 0; s < im.cfg.slots; ++s) {
            im.send_free.push_back(im.cfg.slots - 1 - s);
        }
        for (std::uint32_t r = 0; r < im.peer.stage_slots; ++r) {
            im.peer_credits.push_back(r);
        }
    }
    for (std::uint32_t i = 0; i < im.nrecv; ++i) { // receives before RTR
        Sge s{reinterpret_cast<std::uintptr_t>(im.ctrl_recv_buf(i)), kCtrlBufSize, im.recv_mr->lkey()};
        if (int rc = im.conn->qp().post_recv(wr(kWrRecv, i), {&s, 1}); rc != 0) {
            return rc;
        }
    }
    return im.conn->connect(im.peer.qp);
}

Expected<RemoteKey> TransferEngine::expose(const LocalBuffer &buf) {
    Impl &im = *impl_;
    if (buf.ptr == nullptr || buf.len == 0) {
        return make_error(-EINVAL, "rdma expose: empty range");
    }
    Impl::Exposure x;
    x.addr = reinterpret_cast<std::uintptr_t>(buf.ptr);
    x.len = buf.len;
    auto r = im.reg->get(buf.ptr, buf.len, buf.kind, buf.tag, buf.bounds);
    if (r) {
        x.reg = std::move(r.value());
    }
    RemoteKey k;
    k.addr = x.addr;
    k.len = x.len;
    k.rkey = x.reg.rkey();
    const std::uint32_t flag =
        (buf.kind == MemKind::device && im.cfg.flush_remote_writes) ? kKeyFlushOnWrite : 0;
    do {
        k.key_id = ((im.next_key_id++) & ~kKeyFlushOnWrite) | flag;
    } while ((k.key_id & ~kKeyFlushOnWrite) == 0 || im.exposures.count(k.key_id) != 0);
    im.exposures.emplace(k.key_id, std::move(x));
    return k;
}

void TransferEngine::unexpose(std::uint32_t key_id) { impl_->exposures.erase(key_id); }

std::size_t TransferEngine::invalidate(const void *ptr, std::size_t len) {
    const auto a = reinterpret_cast<std::uintptr_t>(ptr);
    std::erase_if(impl_->exposures, [a, len](const auto &kv) {
        return kv.second.addr < a + len && a < kv.second.addr + kv.second.len;
    });
    return impl_->reg->invalidate(ptr, len);
}

int TransferEngine::put(const LocalBuffer &local, std::uint64_t remote_addr, const RemoteKey &key,
                        Callback cb, PathChoice path) {
    return impl_->start(false, local, remote_addr, key, std::move(cb), path);
}

int TransferEngine::get(const LocalBuffer &local, std::uint64_t remote_addr, const RemoteKey &key,
                        Callback cb, PathChoice path) {
    return impl_->start(true, local, remote_addr, key, std::move(cb), path);
}


int TransferEngine::progress() { return impl_->progress(); }

bool TransferEngine::idle() const {
    return impl_->xfers.empty() && impl_->out.empty() && impl_->in_puts.empty();
}

ConnState TransferEngine::state() const noexcept { return impl_->conn->state(); }

std::uint32_t TransferEngine::qp_num() const noexcept { return impl_->conn->qp().qp_num(); }

} // namespace gdrpipe::rdma
