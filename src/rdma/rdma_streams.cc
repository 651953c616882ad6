// The RDMA transfer engine's staged chunk streams (rdma_transfer_impl.hpp):
// outgoing streams (our puts, the peer's gets we serve) written into the
// peer's credited receive slots, incoming ones landing in ours, and the
// control messages that start, credit and abort them.
#include "rdma_transfer_impl.hpp"

namespace gdrpipe::rdma {

void TransferEngine::Impl::add_out_stream(bool get_resp, std::uint32_t id, pipeline::LocalMem mem) {
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

bool TransferEngine::Impl::post_chunk(OutStream &s, std::uint32_t ch, std::uint32_t slot, std::size_t n) {
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
    peer_slot_credited &= ~(std::uint64_t{1} << r);
    ++s.posted;
    ++sq_used;
    ++self->stats_.chunks_sent;
    return true;
}

void TransferEngine::Impl::credit(bool get_resp, std::uint32_t id, std::uint32_t slot, std::uint32_t ch, int status) {
    if (closing) {
        return;
    }
    CtrlMsg m;
    m.type = static_cast<std::uint32_t>(CtrlType::credit);
    m.imm = make_imm(get_resp, id, slot, ch);
    m.status = status;
    send_ctrl(m);
}

void TransferEngine::Impl::complete_stream(OutStream &s) {
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

bool TransferEngine::Impl::step_out(OutStream &s, int *events) {
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
    return s.failed && s.credited >= s.posted;
}

int TransferEngine::Impl::step_in(InStream &in, int *events) {
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

void TransferEngine::Impl::pump(int *events) {
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

void TransferEngine::Impl::on_put_begin(const CtrlMsg &m) {
    if (m.id >= kMaxIds || m.len == 0 || (m.len + cfg.slot_size - 1) / cfg.slot_size > kMaxChunks) {
        protocol_error("bad PUT_BEGIN");
        return;
    }
    if (in_puts.count(m.id) != 0) {
        // replacing it would drop a stream whose copies may still run
        protocol_error("duplicate PUT_BEGIN");
        return;
    }
    auto in = std::make_unique<InStream>();
    in->im = this;
    in->id = m.id;
    in->len = m.len;
    in->nchunks = static_cast<std::uint32_t>((m.len + cfg.slot_size - 1) / cfg.slot_size);
    pipeline::LocalMem mem;
    if (!exposed(m.key_id, m.token, m.addr, m.len)) {
        GP_PEER_ERROR("rdma: peer put %u to 0x%llx+%llu outside any exposed range: refused",
                      m.id, static_cast<unsigned long long>(m.addr),
                      static_cast<unsigned long long>(m.len));
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

void TransferEngine::Impl::on_get_req(const CtrlMsg &m) {
    if (m.id >= kMaxIds || m.len == 0 ||
        (m.len + peer.stage_slot_size - 1) / std::max<std::uint32_t>(peer.stage_slot_size, 1) > kMaxChunks) {
        protocol_error("bad GET_REQ");
        return;
    }
    if (!exposed(m.key_id, m.token, m.addr, m.len)) {
        GP_PEER_ERROR("rdma: peer get %u from 0x%llx+%llu outside any exposed range: refused",
                      m.id, static_cast<unsigned long long>(m.addr),
                      static_cast<unsigned long long>(m.len));
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

void TransferEngine::Impl::on_put_abort(const CtrlMsg &m) {
    auto it = in_puts.find(m.id);
    if (it != in_puts.end()) {
        if (it->second->active) {
            it->second->pipe.abort();
        }
        in_puts.erase(it);
    }
}

void TransferEngine::Impl::on_credit(const CtrlMsg &m) {
    const std::uint32_t r = imm_slot(m.imm);
    if (r >= peer.stage_slots) {
        protocol_error("credit for a bad slot");
        return;
    }
    if (peer_slot_credited & (std::uint64_t{1} << r)) {
        protocol_error("credit for a slot already credited");
        return;
    }
    const std::uint64_t key = (std::uint64_t{imm_get(m.imm)} << 32) | imm_id(m.imm);
    auto it = out.find(key);
    if (it != out.end() && it->second->credited >= it->second->posted) {
        protocol_error("credit beyond the chunks sent");
        return;
    }
    peer_credits.push_back(r);
    peer_slot_credited |= std::uint64_t{1} << r;
    if (it != out.end()) {
        OutStream &s = *it->second;
        ++s.credited;
        if (m.status != 0 && s.status == 0) {
            s.status = -EIO; // the peer's stage-in failed
        }
    }
}

void TransferEngine::Impl::on_chunk(std::uint32_t imm, std::uint32_t byte_len) {
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

} // namespace gdrpipe::rdma
