// One-sided transfer engine over one RC connection (transfer.hpp).
//
// Wire protocol (both sides little-endian hosts; the structs are memcpy'd):
//   control SENDs (CtrlMsg): PUT_BEGIN, GET_REQ, CREDIT, NACK, PUT_ABORT;
//   chunks: RDMA WRITE WITH IMM into a receive slot of the peer, imm =
//     [31] get-response  [30:21] transfer id  [20:16] slot  [15:0] chunk.
// Transfer ids are the requester's; a get's chunks carry the get's id with
// the get-response bit set.
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/transfer.hpp>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace gdrpipe::rdma {

namespace {

constexpr std::uint32_t kMaxIds = 1024;
constexpr std::uint32_t kMaxChunks = 1u << 16;
constexpr std::uint32_t kCtrlMagic = 0x47504331; // "GPC1"

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

template <class T> void put_le(std::uint8_t *p, T v) {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        p[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * i));
    }
}
template <class T> T get_le(const std::uint8_t *p) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    }
    return static_cast<T>(v);
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
    // --- events from stage callbacks (any thread)
    struct Event {
        bool in = false; // stage_in (else stage_out)
        std::uint64_t stream = 0;
        std::uint32_t chunk = 0;
        std::uint32_t slot = 0;
        int status = 0;
        std::uint32_t imm = 0; // stage_in: the chunk's imm
    };
    struct Events {
        std::mutex mu;
        std::condition_variable cv;
        std::deque<Event> q;
        int outstanding = 0;
    };

    // An outgoing chunk stream: our put, or the peer's get we serve.
    struct OutStream {
        std::uint64_t key = 0; // (get_resp << 32) | id
        bool get_resp = false;
        std::uint32_t id = 0;
        const std::uint8_t *src = nullptr;
        std::size_t len = 0;
        std::uint32_t nchunks = 0;
        std::uint32_t next_stage = 0;
        std::uint32_t staging = 0;  // stage_out in flight
        std::uint32_t posted = 0;   // chunks written (posted)
        std::uint32_t credited = 0; // credits back for this stream
        std::deque<std::pair<std::uint32_t, std::uint32_t>> ready; // (chunk, send slot)
        bool failed = false;
        int status = 0;
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
        // staged get
        std::uint8_t *dst = nullptr;
        std::size_t len = 0;
        std::uint32_t nchunks = 0;
        std::uint32_t landed = 0; // chunks staged in
        std::uint32_t staging_in = 0;
    };

    // A put of the peer's we receive.
    struct InPut {
        std::uint8_t *dst = nullptr;
        std::size_t len = 0;
        std::uint32_t nchunks = 0;
        std::uint32_t landed = 0;
        bool rejected = false;
    };

    struct Exposure {
        std::uintptr_t addr = 0;
        std::size_t len = 0;
        Registration reg;
    };

    TransferEngine *self = nullptr;
    TransferConfig cfg;
    StageOps ops;
    Registrar *reg = nullptr;
    ProtectionDomain *pd = nullptr;
    std::unique_ptr<Connection> conn;
    std::shared_ptr<Events> ev = std::make_shared<Events>();
    Connection::ErrorCallback user_on_error;

    // receive side: slots the peer writes into, control receive buffers
    Buf recv_area;
    std::unique_ptr<MemoryRegion> recv_mr;
    std::uint32_t nrecv = 0;
    // control send buffers
    Buf ctrl_area;
    std::unique_ptr<MemoryRegion> ctrl_mr;
    std::vector<std::uint32_t> ctrl_free;
    std::deque<CtrlMsg> ctrl_backlog;
    // send side: local bounce slots (peer's slot size), credits for peer slots
    Buf send_area;
    std::unique_ptr<MemoryRegion> send_mr;
    std::vector<std::uint32_t> send_free;
    std::deque<std::uint32_t> peer_credits;
    EpAddress peer{};
    std::uint32_t sq_used = 0;

    std::deque<std::unique_ptr<Xfer>> xfers; // start order
    std::unordered_map<std::uint32_t, Xfer *> by_id;
    std::uint32_t next_id = 0;
    std::map<std::uint64_t, OutStream> out; // ordered by key; service order below
    std::deque<std::uint64_t> out_order;
    std::unordered_map<std::uint32_t, InPut> in_puts;
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
            xr.dst = static_cast<std::uint8_t *>(local.ptr);
            m.type = static_cast<std::uint32_t>(CtrlType::get_req);
            send_ctrl(m);
        } else {
            m.type = static_cast<std::uint32_t>(CtrlType::put_begin);
            send_ctrl(m); // before any chunk: RC keeps the order
            OutStream s;
            s.id = xr.id;
            s.key = xr.id;
            s.src = static_cast<const std::uint8_t *>(local.ptr);
            s.len = local.len;
            s.nchunks = xr.nchunks;
            out.emplace(s.key, std::move(s));
            out_order.push_back(xr.id);
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
    void stage_out(OutStream &s) {
        while (!s.failed && s.next_stage < s.nchunks && !send_free.empty()) {
            const std::uint32_t slot = send_free.back();
            send_free.pop_back();
            const std::uint32_t ch = s.next_stage++;
            const std::size_t off = std::size_t{ch} * peer.stage_slot_size;
            const std::size_t n = std::min<std::size_t>(peer.stage_slot_size, s.len - off);
            ++s.staging;
            std::shared_ptr<Events> e = ev;
            {
                std::lock_guard<std::mutex> g(e->mu);
                ++e->outstanding;
            }
            const std::uint64_t key = s.key;
            ops.stage_out(s.src + off, send_slot(slot), n, [e, key, ch, slot](int st) {
                std::lock_guard<std::mutex> g(e->mu);
                e->q.push_back(Event{false, key, ch, slot, st, 0});
                --e->outstanding;
                e->cv.notify_all();
            });
        }
    }

    void post_chunks(OutStream &s) {
        while (!s.ready.empty() && !peer_credits.empty() && !sq_full() && connected()) {
            auto [ch, slot] = s.ready.front();
            const std::uint32_t r = peer_credits.front();
            const std::size_t off = std::size_t{ch} * peer.stage_slot_size;
            const std::size_t n = std::min<std::size_t>(peer.stage_slot_size, s.len - off);
            Sge sg{reinterpret_cast<std::uintptr_t>(send_slot(slot)), static_cast<std::uint32_t>(n),
                   send_mr->lkey()};
            const int rc = conn->qp().post_write(
                wr(kWrChunk, slot), {&sg, 1}, peer.stage_addr + std::uint64_t{r} * peer.stage_slot_size,
                peer.stage_rkey, make_imm(s.get_resp, s.id, r, ch), true);
            if (rc != 0) {
                conn->fail(rc, "post chunk failed");
                return;
            }
            s.ready.pop_front();
            peer_credits.pop_front();
            ++s.posted;
            ++sq_used;
            ++self->stats_.chunks_sent;
        }
    }

    // Drains a failed stream's ready chunks; true when the stream is finished.
    bool stream_finished(OutStream &s) {
        if (s.failed) {
            while (!s.ready.empty()) {
                send_free.push_back(s.ready.front().second);
                s.ready.pop_front();
            }
            return s.staging == 0 && s.credited == s.posted;
        }
        return s.credited == s.nchunks;
    }

    void complete_stream(OutStream &s) {
        if (!s.get_resp) {
            auto it = by_id.find(s.id);
            if (it != by_id.end()) {
                finish(*it->second, s.status);
            }
            if (s.failed && s.posted < s.nchunks) {
                CtrlMsg m;
                m.type = static_cast<std::uint32_t>(CtrlType::put_abort);
                m.id = s.id;
                send_ctrl(m);
            }
        }
    }

    void pump() {
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
            OutStream &s = sit->second;
            stage_out(s);
            post_chunks(s);
            if (stream_finished(s)) {
                complete_stream(s);
                out.erase(sit);
                it = out_order.erase(it);
                continue;
            }
            ++it;
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
        case CtrlType::put_abort: in_puts.erase(m.id); break;
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
        InPut p;
        p.len = m.len;
        p.nchunks = static_cast<std::uint32_t>((m.len + cfg.slot_size - 1) / cfg.slot_size);
        if (m.id >= kMaxIds || m.len == 0 || (m.len + cfg.slot_size - 1) / cfg.slot_size > kMaxChunks) {
            protocol_error("bad PUT_BEGIN");
            return;
        }
        if (!exposed(m.key_id, m.addr, m.len)) {
            GP_WARN("rdma: peer put %u to 0x%llx+%llu outside any exposed range: refused", m.id,
                    static_cast<unsigned long long>(m.addr), static_cast<unsigned long long>(m.len));
            p.rejected = true;
            nack(m.id, false, -EACCES);
        } else {
            p.dst = reinterpret_cast<std::uint8_t *>(m.addr);
        }
        in_puts[m.id] = p;
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
        OutStream s;
        s.get_resp = true;
        s.id = m.id;
        s.key = (std::uint64_t{1} << 32) | m.id;
        if (out.count(s.key) != 0) {
            protocol_error("duplicate GET_REQ");
            return;
        }
        s.src = reinterpret_cast<const std::uint8_t *>(m.addr);
        s.len = m.len;
        s.nchunks = static_cast<std::uint32_t>((m.len + peer.stage_slot_size - 1) / peer.stage_slot_size);
        out.emplace(s.key, std::move(s));
        out_order.push_back((std::uint64_t{1} << 32) | m.id);
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
            ++it->second.credited;
            if (m.status != 0 && !it->second.failed) {
                it->second.failed = true;
                it->second.status = -EIO;
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
            if (it != out.end() && !it->second.failed) {
                it->second.failed = true;
                it->second.status = st;
            }
        } else { // our get: nothing will come
            auto it = by_id.find(m.id);
            if (it != by_id.end() && it->second->staging_in == 0) {
                finish(*it->second, st);
            } else if (it != by_id.end()) {
                it->second->status = st;
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
        std::uint8_t *dst = nullptr;
        std::size_t len = 0;
        std::uint32_t nchunks = 0;
        bool skip = false;
        if (imm_get(imm)) {
            auto it = by_id.find(id);
            if (it == by_id.end() || !it->second->is_get || !it->second->staged) {
                protocol_error("chunk for an unknown get");
                return;
            }
            Xfer &x = *it->second;
            dst = x.dst;
            len = x.len;
            nchunks = x.nchunks;
            skip = x.status != 0;
            ++x.staging_in;
        } else {
            auto it = in_puts.find(id);
            if (it == in_puts.end()) {
                protocol_error("chunk for an unknown put");
                return;
            }
            dst = it->second.dst;
            len = it->second.len;
            nchunks = it->second.nchunks;
            skip = it->second.rejected;
        }
        const std::size_t off = std::size_t{ch} * cfg.slot_size;
        if (ch >= nchunks || byte_len != std::min<std::size_t>(cfg.slot_size, len - off)) {
            protocol_error("chunk of bad index or size");
            return;
        }
        std::shared_ptr<Events> e = ev;
        if (skip) {
            std::lock_guard<std::mutex> g(e->mu);
            e->q.push_back(Event{true, 0, ch, slot, 0, imm});
            return;
        }
        {
            std::lock_guard<std::mutex> g(e->mu);
            ++e->outstanding;
        }
        ops.stage_in(recv_slot(slot), dst + off, byte_len, [e, ch, slot, imm](int st) {
            std::lock_guard<std::mutex> g(e->mu);
            e->q.push_back(Event{true, 0, ch, slot, st, imm});
            --e->outstanding;
            e->cv.notify_all();
        });
    }

    void on_event(const Event &e) {
        if (!e.in) {
            auto it = out.find(e.stream);
            if (it == out.end()) {
                send_free.push_back(e.slot);
                return;
            }
            OutStream &s = it->second;
            --s.staging;
            if (e.status != 0 || s.failed) {
                if (!s.failed) {
                    s.failed = true;
                    s.status = -EIO;
                }
                send_free.push_back(e.slot);
                return;
            }
            s.ready.emplace_back(e.chunk, e.slot);
            return;
        }
        // a chunk landed (or was skipped): return the slot credit
        CtrlMsg m;
        m.type = static_cast<std::uint32_t>(CtrlType::credit);
        m.imm = e.imm;
        m.status = e.status;
        send_ctrl(m);
        const std::uint32_t id = imm_id(e.imm);
        if (imm_get(e.imm)) {
            auto it = by_id.find(id);
            if (it != by_id.end()) {
                Xfer &x = *it->second;
                if (x.staging_in > 0) {
                    --x.staging_in;
                }
                if (e.status != 0 && x.status == 0) {
                    x.status = -EIO;
                }
                ++x.landed;
                if (x.landed == x.nchunks || (x.status != 0 && x.staging_in == 0)) {
                    finish(x, x.status);
                }
            }
        } else {
            auto it = in_puts.find(id);
            if (it != in_puts.end()) {
                if (e.status != 0 && !it->second.rejected) {
                    it->second.rejected = true; // the requester learns it from the credit status
                }
                if (++it->second.landed == it->second.nchunks) {
                    in_puts.erase(it);
                }
            }
        }
    }

    void on_conn_error(int code, const std::string &why) {
        for (auto &x : xfers) {
            finish(*x, -ECONNRESET);
        }
        for (auto &[k, s] : out) {
            s.failed = true;
            s.status = -ECONNRESET;
        }
        if (user_on_error) {
            user_on_error(code, why);
        }
    }

    int progress() {
        int n = 0;
        if (conn && conn->state() != ConnState::closed) {
            const int r = conn->progress([this](const Completion &c) { on_completion(c); }, 256);
            n += r > 0 ? r : 0;
        }
        std::deque<Event> evs;
        {
            std::lock_guard<std::mutex> g(ev->mu);
            evs.swap(ev->q);
        }
        for (const Event &e : evs) {
            on_event(e);
        }
        n += static_cast<int>(evs.size());
        if (conn && conn->state() == ConnState::error) {
            // nothing more will complete: drop the streams we serve or own
            for (auto &[k, s] : out) {
                s.credited = s.posted;
                s.ready.clear();
            }
            for (auto it = out.begin(); it != out.end();) {
                if (it->second.staging == 0) {
                    complete_stream(it->second);
                    it = out.erase(it);
                } else {
                    ++it;
                }
            }
            in_puts.clear();
        } else {
            pump();
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
TransferEngine::create(Context &ctx, ProtectionDomain &pd, Registrar &reg, StageOps ops,
                       const TransferConfig &cfg, Connection::ErrorCallback on_error) {
    if (cfg.slots == 0 || cfg.slots > kMaxStageSlots || cfg.slot_size == 0 ||
        cfg.slot_size % 4096 != 0 || cfg.slot_size > kMaxStageSlotSize || !ops.stage_in ||
        !ops.stage_out) {
        return make_error(-EINVAL, "rdma transfer: bad configuration");
    }
    std::unique_ptr<TransferEngine> e(new TransferEngine());
    e->impl_ = std::make_unique<Impl>();
    Impl &im = *e->impl_;
    im.self = e.get();
    im.cfg = cfg;
    im.ops = std::move(ops);
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
    // stage steps in flight write into our bounce slots: wait for them
    {
        std::unique_lock<std::mutex> lk(impl_->ev->mu);
        impl_->ev->cv.wait(lk, [this] { return impl_->ev->outstanding == 0; });
    }
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

void TransferEngine::set_direct_threshold(std::size_t bytes) noexcept { impl_->cfg.direct_threshold = bytes; }

int TransferEngine::progress() { return impl_->progress(); }

bool TransferEngine::idle() const {
    return impl_->xfers.empty() && impl_->out.empty() && impl_->in_puts.empty();
}

ConnState TransferEngine::state() const noexcept { return impl_->conn->state(); }

std::uint32_t TransferEngine::qp_num() const noexcept { return impl_->conn->qp().qp_num(); }

} // namespace gdrpipe::rdma
