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
#include "rdma_transfer_impl.hpp"

namespace gdrpipe::rdma {

std::vector<std::uint8_t> pack_remote_key(const RemoteKey &k) {
    std::vector<std::uint8_t> b(kRemoteKeySize);
    put_le<std::uint64_t>(&b[0], k.addr);
    put_le<std::uint64_t>(&b[8], k.len);
    put_le<std::uint32_t>(&b[16], k.rkey);
    put_le<std::uint32_t>(&b[20], k.key_id);
    put_le<std::uint64_t>(&b[24], k.token);
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
    k.token = get_le<std::uint64_t>(&b[24]);
    if (k.len == 0 || k.addr + k.len < k.addr || k.key_id == 0 || k.token == 0) {
        return make_error(-EINVAL, "rdma remote key: bad range");
    }
    return k;
}

// ---------------------------------------------------------------------------

std::uint8_t *TransferEngine::Impl::ctrl_recv_buf(std::uint32_t i) const {
    return recv_area.get() + std::size_t{cfg.slots} * cfg.slot_size + std::size_t{i} * kCtrlBufSize;
}

void TransferEngine::Impl::send_ctrl(const CtrlMsg &m) {
    ctrl_backlog.push_back(m);
    flush_ctrl();
}

void TransferEngine::Impl::flush_ctrl() {
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

void TransferEngine::Impl::post_recv(std::uint32_t i) {
    Sge s{reinterpret_cast<std::uintptr_t>(ctrl_recv_buf(i)), kCtrlBufSize, recv_mr->lkey()};
    if (int rc = conn->qp().post_recv(wr(kWrRecv, i), {&s, 1}); rc != 0) {
        conn->fail(rc, "post_recv failed");
    }
}

int TransferEngine::Impl::alloc_id(std::uint32_t &id) {
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

void TransferEngine::Impl::finish(Xfer &x, int status) {
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

int TransferEngine::Impl::start(bool is_get, const LocalBuffer &local, std::uint64_t raddr, const RemoteKey &key,
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
        xr.token = key.token;
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
    m.token = key.token;
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

void TransferEngine::Impl::post_direct(Xfer &x) {
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

void TransferEngine::Impl::on_completion(const Completion &c) {
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
                m.token = x.token;
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

void TransferEngine::Impl::on_recv(const Completion &c, std::uint32_t buf) {
    if (c.opcode == WcOpcode::recv_rdma_with_imm && c.has_imm) {
        post_recv(buf); // the receive buffer was not used
        on_chunk(c.imm, c.byte_len);
        return;
    }
    const std::uint32_t len = c.byte_len;
    CtrlMsg m;
    std::memcpy(&m, ctrl_recv_buf(buf), std::min<std::size_t>(len, sizeof(m)));
    post_recv(buf);
    on_ctrl(&m, len);
}

void TransferEngine::Impl::on_ctrl(const void *msg, std::size_t len) {
    CtrlMsg m;
    if (len != sizeof(CtrlMsg)) {
        protocol_error("control message of bad size");
        return;
    }
    std::memcpy(&m, msg, sizeof(m));
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

bool TransferEngine::Impl::exposed(std::uint32_t key_id, std::uint64_t token, std::uint64_t addr,
                                   std::uint64_t len) const {
    if (cfg.exposed) {
        return len != 0 && token != 0 && cfg.exposed(key_id, token, addr, len);
    }
    auto it = exposures.find(key_id);
    if (it == exposures.end() || len == 0 || token == 0 || it->second.token != token) {
        return false;
    }
    const Exposure &e = it->second;
    return addr >= e.addr && len <= e.len && addr - e.addr <= e.len - len;
}

void TransferEngine::Impl::nack(std::uint32_t id, bool get, int status) {
    CtrlMsg m;
    m.type = static_cast<std::uint32_t>(CtrlType::nack);
    m.id = id;
    m.status = status;
    m.imm = get ? 1 : 0;
    ++self->stats_.nacks_sent;
    send_ctrl(m);
}

void TransferEngine::Impl::on_write_flush(const CtrlMsg &m) {
    CtrlMsg a;
    a.type = static_cast<std::uint32_t>(CtrlType::flush_ack);
    a.id = m.id;
    if (!exposed(m.key_id, m.token, m.addr, m.len)) {
        a.status = -EACCES;
    } else if (cfg.flush_remote_writes) {
        a.status = cfg.flush_remote_writes(m.addr, m.len);
        ++self->stats_.flushes_done;
    }
    send_ctrl(a);
}

void TransferEngine::Impl::on_flush_ack(const CtrlMsg &m) {
    auto it = by_id.find(m.id);
    if (it == by_id.end() || !it->second->flush_requested) {
        protocol_error("FLUSH_ACK for no flush");
        return;
    }
    finish(*it->second, m.status <= 0 ? m.status : -EIO);
}

void TransferEngine::Impl::on_nack(const CtrlMsg &m) {
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

void TransferEngine::Impl::on_conn_error(int code, const std::string &why) {
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

void TransferEngine::Impl::abort_all() {
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

void TransferEngine::Impl::check_stall(int moved) {
    const auto now = std::chrono::steady_clock::now();
    const bool outstanding = !xfers.empty() || !out.empty() || !in_puts.empty();
    if (moved > 0 || !outstanding || cfg.stall_timeout_s <= 0) {
        last_moved = now;
        return;
    }
    if (std::chrono::duration<double>(now - last_moved).count() < cfg.stall_timeout_s) {
        return;
    }
    char why[160];
    std::snprintf(why, sizeof(why),
                  "nothing moved for %.3g s with transfers outstanding (the stall timeout)",
                  cfg.stall_timeout_s);
    conn->fail(-ETIMEDOUT, why);
}

int TransferEngine::Impl::progress() {
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
        check_stall(n);
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
    // the receive slots take the peer's WRITE WITH IMM, the control buffers
    // its SENDs; our outgoing control messages and send slots are only read
    // by our own adapter: no remote rights on either
    auto rmr = reg.register_bounce(im.recv_area.get(), recv_bytes,
                                   kAccessLocalWrite | kAccessRemoteWrite);
    if (!rmr) {
        return rmr.error();
    }
    im.recv_mr = std::move(rmr.value());
    auto cmr = reg.register_bounce(im.ctrl_area.get(), std::size_t{nctrl} * kCtrlBufSize,
                                   kAccessLocalWrite);
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
    if (a.value().stage_slots != 0) {
        // our send slots take the peer's slot size: bounded by what this
        // side would pin for its own receive slots, or 256 MiB, whichever
        // is more (a peer cannot make us pin up to 32 GiB per endpoint)
        const std::size_t bytes = std::size_t{im.cfg.slots} * a.value().stage_slot_size;
        const std::size_t limit = std::max(std::size_t{im.cfg.slots} * im.cfg.slot_size,
                                           kMaxPeerSendArea);
        if (bytes > limit) {
            GP_ERROR("rdma: the peer's staging slots of %u bytes would need %zu bytes of pinned "
                     "send slots here, above %zu: UCX_GDRPIPE_RDMA_CHUNK_SIZE differs between "
                     "the processes",
                     unsigned(a.value().stage_slot_size), bytes, limit);
            return -EINVAL;
        }
    }
    im.peer = a.value();
    if (im.peer.stage_slots != 0) {
        const std::size_t bytes = std::size_t{im.cfg.slots} * im.peer.stage_slot_size;
        im.send_area = alloc_buf(bytes);
        if (!im.send_area) {
            return -ENOMEM;
        }
        im.send_pin.pin(im.send_area.get(), bytes, "rdma send slots");
        auto smr = im.reg->register_bounce(im.send_area.get(), bytes, kAccessLocalWrite);
        if (!smr) {
            return smr.error().code;
        }
        im.send_mr = std::move(smr.value());
        for (std::uint32_t s = 0; s < im.cfg.slots; ++s) {
            im.send_free.push_back(im.cfg.slots - 1 - s);
        }
        for (std::uint32_t r = 0; r < im.peer.stage_slots; ++r) {
            im.peer_credits.push_back(r);
            im.peer_slot_credited |= std::uint64_t{1} << r;
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
    x.token = new_secret_token();
    RemoteKey k;
    k.addr = x.addr;
    k.len = x.len;
    k.rkey = x.reg.rkey();
    k.token = x.token;
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

void TransferEngine::handle_peer_control(std::span<const std::uint8_t> msg) {
    if (impl_->conn->state() == ConnState::connected) {
        impl_->on_ctrl(msg.data(), msg.size());
    }
}

bool TransferEngine::idle() const {
    return impl_->xfers.empty() && impl_->out.empty() && impl_->in_puts.empty();
}

ConnState TransferEngine::state() const noexcept { return impl_->conn->state(); }

std::uint32_t TransferEngine::qp_num() const noexcept { return impl_->conn->qp().qp_num(); }

} // namespace gdrpipe::rdma
