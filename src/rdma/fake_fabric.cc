// Execution of the fake fabric's operations (src/rdma/fake_fabric.hpp).
#include "fake_fabric.hpp"

#include <gdrpipe/log.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

namespace gdrpipe::rdma::fake_detail {

void Fabric::push(CqRec *cq, const Completion &c) {
    if (cq != nullptr) {
        cq->q.push_back(c);
    }
}

void Fabric::set_error(QpRec &q) {
    if (q.state == QpState::error) {
        return;
    }
    q.state = QpState::error;
    // Posted receives are flushed now; queued sends by the worker, in order.
    for (const RecvWr &r : q.recvs) {
        Completion c;
        c.wr_id = r.wr_id;
        c.status = WcStatus::wr_flush_err;
        c.opcode = WcOpcode::recv;
        c.qp_num = q.qpn;
        push(q.rcq.get(), c);
    }
    q.recvs.clear();
    cv.notify_all();
}

bool Fabric::overlaps_device_mem(std::uintptr_t a, std::size_t len) const {
    for (const auto &[lo, n] : device_mem) {
        if (a < lo + n && lo < a + len) {
            return true;
        }
    }
    return false;
}

int Fabric::reg_precheck() {
    ++st.reg_calls;
    if (fail_regs > 0) {
        --fail_regs;
        return fail_err;
    }
    if (cfg.max_mrs != 0 && mrs.size() >= cfg.max_mrs) {
        return -ENOMEM;
    }
    return 0;
}

std::uint32_t Fabric::add_mr(const MrRec &rec) {
    std::uint32_t key = 0;
    do {
        key = (next_key++ << 8) | 0xa5u;
    } while (key == 0 || mrs.count(key) != 0);
    mrs.emplace(key, rec);
    st.live_mrs = mrs.size();
    return key;
}

std::uint8_t *Fabric::translate(const MrRec &mr, std::uint64_t addr, std::size_t len) {
    if (addr < mr.iova || len > mr.len || addr - mr.iova > mr.len - len) {
        return nullptr;
    }
    return mr.host + (addr - mr.iova);
}

bool Fabric::resolve_local(const QpRec &q, const std::vector<Sge> &sges, bool need_write,
                   std::vector<std::pair<std::uint8_t *, std::size_t>> &out) {
    out.clear();
    for (const Sge &s : sges) {
        if (s.length == 0) {
            continue;
        }
        auto it = mrs.find(s.lkey);
        if (it == mrs.end() || it->second.pd_id != q.pd_id ||
            (need_write && (it->second.access & kAccessLocalWrite) == 0)) {
            return false;
        }
        std::uint8_t *p = translate(it->second, s.addr, s.length);
        if (p == nullptr) {
            return false;
        }
        out.emplace_back(p, s.length);
    }
    return true;
}

std::uint8_t *Fabric::resolve_remote(const QpRec &peer, std::uint32_t rkey, std::uint64_t addr,
                             std::size_t len, unsigned need) {
    auto it = mrs.find(rkey);
    if (it == mrs.end() || it->second.pd_id != peer.pd_id ||
        (it->second.access & need) != need) {
        return nullptr;
    }
    return translate(it->second, addr, len);
}

void Fabric::complete_req(QpRec &q, const Op &op, WcStatus status, WcOpcode opc, std::uint32_t len) {
    if (q.sq_outstanding > 0) {
        --q.sq_outstanding;
    }
    if (status == WcStatus::success && !op.signaled) {
        return;
    }
    Completion c;
    c.wr_id = op.wr_id;
    c.status = status;
    c.opcode = opc;
    c.byte_len = len;
    c.qp_num = q.qpn;
    push(q.scq.get(), c);
}

Exec Fabric::fail(QpRec &q, const Op &op, WcStatus status, WcOpcode opc) {
    if (status == WcStatus::rem_access_err || status == WcStatus::loc_prot_err) {
        ++st.access_errors;
    }
    GP_DEBUG("fake rdma: qp 0x%x wr %llu failed: %s", q.qpn,
             static_cast<unsigned long long>(op.wr_id), to_string(status));
    complete_req(q, op, status, opc, 0);
    set_error(q);
    return Exec::done;
}

Exec Fabric::execute(QpRec &q, const Op &op) {
    const WcOpcode opc = op.kind == OpKind::write  ? WcOpcode::rdma_write
                         : op.kind == OpKind::read ? WcOpcode::rdma_read
                                                   : WcOpcode::send;
    auto pit = qps.find(q.remote_qpn);
    if (pit == qps.end() || pit->second->remote_qpn != q.qpn ||
        (pit->second->state != QpState::rtr && pit->second->state != QpState::rts)) {
        return fail(q, op, WcStatus::retry_exc_err, opc);
    }
    QpRec &peer = *pit->second;
    std::vector<std::pair<std::uint8_t *, std::size_t>> local;
    std::size_t total = 0;
    if (op.is_inline) {
        total = op.inline_data.size();
    } else {
        if (!resolve_local(q, op.sges, op.kind == OpKind::read, local)) {
            return fail(q, op, WcStatus::loc_prot_err, opc);
        }
        for (const auto &l : local) {
            total += l.second;
        }
    }
    switch (op.kind) {
    case OpKind::write: {
        std::uint8_t *dst =
            total == 0 ? nullptr
                       : resolve_remote(peer, op.rkey, op.raddr, total, kAccessRemoteWrite);
        if (total != 0 && dst == nullptr) {
            return fail(q, op, WcStatus::rem_access_err, opc);
        }
        if (op.imm && peer.recvs.empty()) {
            return Exec::stall;
        }
        for (const auto &[p, n] : local) {
            std::memmove(dst, p, n);
            dst += n;
        }
        if (op.imm) {
            RecvWr r = std::move(peer.recvs.front());
            peer.recvs.pop_front();
            Completion c;
            c.wr_id = r.wr_id;
            c.opcode = WcOpcode::recv_rdma_with_imm;
            c.byte_len = static_cast<std::uint32_t>(total);
            c.imm = *op.imm;
            c.has_imm = true;
            c.qp_num = peer.qpn;
            push(peer.rcq.get(), c);
        }
        break;
    }
    case OpKind::read: {
        const std::uint8_t *src =
            total == 0 ? nullptr
                       : resolve_remote(peer, op.rkey, op.raddr, total, kAccessRemoteRead);
        if (total != 0 && src == nullptr) {
            return fail(q, op, WcStatus::rem_access_err, opc);
        }
        for (const auto &[p, n] : local) {
            std::memmove(p, src, n);
            src += n;
        }
        break;
    }
    case OpKind::send: {
        if (peer.recvs.empty()) {
            return Exec::stall;
        }
        RecvWr r = std::move(peer.recvs.front());
        peer.recvs.pop_front();
        std::vector<std::pair<std::uint8_t *, std::size_t>> rl;
        std::size_t cap = 0;
        const bool ok = resolve_local(peer, r.sges, true, rl);
        for (const auto &x : rl) {
            cap += x.second;
        }
        if (!ok || cap < total) {
            Completion c;
            c.wr_id = r.wr_id;
            c.status = ok ? WcStatus::loc_len_err : WcStatus::loc_prot_err;
            c.opcode = WcOpcode::recv;
            c.qp_num = peer.qpn;
            push(peer.rcq.get(), c);
            set_error(peer);
            return fail(q, op, WcStatus::rem_inv_req_err, opc);
        }
        // gather the source into one buffer, then scatter
        std::vector<std::uint8_t> data;
        if (op.is_inline) {
            data = op.inline_data;
        } else {
            data.reserve(total);
            for (const auto &[p, n] : local) {
                data.insert(data.end(), p, p + n);
            }
        }
        std::size_t off = 0;
        for (const auto &[p, n] : rl) {
            if (off >= data.size()) {
                break;
            }
            const std::size_t k = std::min(n, data.size() - off);
            std::memcpy(p, data.data() + off, k);
            off += k;
        }
        Completion c;
        c.wr_id = r.wr_id;
        c.opcode = WcOpcode::recv;
        c.byte_len = static_cast<std::uint32_t>(total);
        if (op.imm) {
            c.imm = *op.imm;
            c.has_imm = true;
        }
        c.qp_num = peer.qpn;
        push(peer.rcq.get(), c);
        break;
    }
    }
    ++st.ops_executed;
    st.bytes_moved += total;
    complete_req(q, op, WcStatus::success, opc, static_cast<std::uint32_t>(total));
    return Exec::done;
}

bool Fabric::sweep(Clock::time_point now, std::optional<Clock::time_point> &next) {
    std::unordered_set<std::uint32_t> blocked;
    bool progressed = false;
    next.reset();
    for (auto it = ops.begin(); it != ops.end();) {
        auto qit = qps.find(it->qpn);
        if (qit == qps.end()) { // QP destroyed: its work vanishes
            it = ops.erase(it);
            continue;
        }
        QpRec &q = *qit->second;
        if (q.state == QpState::error) {
            const Op op = std::move(*it);
            it = ops.erase(it);
            complete_req(q, op, WcStatus::wr_flush_err,
                         op.kind == OpKind::read ? WcOpcode::rdma_read : WcOpcode::rdma_write,
                         0);
            progressed = true;
            continue;
        }
        if (blocked.count(it->qpn) != 0) {
            ++it;
            continue;
        }
        if (it->due > now) {
            blocked.insert(it->qpn);
            if (!next || it->due < *next) {
                next = it->due;
            }
            ++it;
            continue;
        }
        if (execute(q, *it) == Exec::stall) {
            blocked.insert(it->qpn);
            ++it;
            continue;
        }
        it = ops.erase(it);
        progressed = true;
    }
    return progressed;
}

void Fabric::run() {
    std::unique_lock<std::mutex> lk(mu);
    while (!stop) {
        if (cfg.modeled_clock) { // operations run in idle(), on the caller's thread
            cv.wait(lk);
            continue;
        }
        std::optional<Clock::time_point> next;
        if (sweep(Clock::now(), next)) {
            continue;
        }
        if (next) {
            cv.wait_until(lk, *next);
        } else {
            cv.wait(lk);
        }
    }
}

void Fabric::idle() {
    std::optional<Clock::time_point> next;
    if (sweep(vnow, next) || !next) {
        return;
    }
    vnow = *next;
    sweep(vnow, next);
}

} // namespace gdrpipe::rdma::fake_detail
