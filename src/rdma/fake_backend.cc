// In-process fake RDMA fabric (see include/gdrpipe/rdma/fake_backend.hpp).
// One mutex guards the whole fabric. In real time one worker thread executes
// the posted operations in post order per QP and delivers their completions;
// on a modeled clock the thread that calls Context::idle does.
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/fake_backend.hpp>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace gdrpipe::rdma {
namespace fake_detail {

using Clock = std::chrono::steady_clock;

struct MrRec {
    std::uint64_t pd_id = 0;
    std::uint64_t iova = 0;
    std::size_t len = 0;
    std::uint8_t *host = nullptr;
    unsigned access = 0;
};

struct CqRec {
    std::deque<Completion> q;
};

struct RecvWr {
    std::uint64_t wr_id = 0;
    std::vector<Sge> sges;
};

struct QpRec {
    std::uint32_t qpn = 0;
    std::uint64_t pd_id = 0;
    std::shared_ptr<CqRec> scq, rcq;
    QpState state = QpState::reset;
    std::uint32_t remote_qpn = 0;
    Clock::time_point busy{};
    std::deque<RecvWr> recvs;
    std::uint32_t sq_outstanding = 0;
    QpCaps caps;
};

enum class OpKind { write, read, send };

struct Op {
    std::uint32_t qpn = 0;
    OpKind kind = OpKind::write;
    std::uint64_t wr_id = 0;
    std::vector<Sge> sges;
    std::uint64_t raddr = 0;
    std::uint32_t rkey = 0;
    std::optional<std::uint32_t> imm;
    bool signaled = true;
    bool is_inline = false;
    std::vector<std::uint8_t> inline_data;
    Clock::time_point due{};
};

enum class Exec { done, stall };

struct Fabric {
    explicit Fabric(FakeConfig c) : cfg(c) {}

    FakeConfig cfg;
    mutable std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    std::thread worker;

    std::unordered_map<std::uint32_t, MrRec> mrs;
    std::unordered_map<std::uint32_t, std::shared_ptr<QpRec>> qps;
    std::deque<Op> ops;
    std::vector<std::pair<std::uintptr_t, std::size_t>> device_mem;
    std::unordered_map<int, std::pair<std::uint8_t *, std::size_t>> dmabufs;
    int next_fd = 1 << 20;
    std::uint32_t next_qpn = 0x100;
    std::uint32_t next_key = 1;
    std::uint64_t next_pd = 1;
    int fail_regs = 0;
    int fail_err = 0;
    FakeStats st;
    Clock::time_point vnow{}; // the clock when cfg.modeled_clock

    // ---- everything below runs with mu held
    static void push(CqRec *cq, const Completion &c) {
        if (cq != nullptr) {
            cq->q.push_back(c);
        }
    }

    void set_error(QpRec &q) {
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

    bool overlaps_device_mem(std::uintptr_t a, std::size_t len) const {
        for (const auto &[lo, n] : device_mem) {
            if (a < lo + n && lo < a + len) {
                return true;
            }
        }
        return false;
    }

    // Pre-registration checks shared by both registration kinds.
    int reg_precheck() {
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

    std::uint32_t add_mr(const MrRec &rec) {
        std::uint32_t key = 0;
        do {
            key = (next_key++ << 8) | 0xa5u;
        } while (key == 0 || mrs.count(key) != 0);
        mrs.emplace(key, rec);
        st.live_mrs = mrs.size();
        return key;
    }

    static std::uint8_t *translate(const MrRec &mr, std::uint64_t addr, std::size_t len) {
        if (addr < mr.iova || len > mr.len || addr - mr.iova > mr.len - len) {
            return nullptr;
        }
        return mr.host + (addr - mr.iova);
    }

    // Resolves local SGEs of QP `q` to host pointers; false on a bad SGE.
    bool resolve_local(const QpRec &q, const std::vector<Sge> &sges, bool need_write,
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

    std::uint8_t *resolve_remote(const QpRec &peer, std::uint32_t rkey, std::uint64_t addr,
                                 std::size_t len, unsigned need) {
        auto it = mrs.find(rkey);
        if (it == mrs.end() || it->second.pd_id != peer.pd_id ||
            (it->second.access & need) != need) {
            return nullptr;
        }
        return translate(it->second, addr, len);
    }

    void complete_req(QpRec &q, const Op &op, WcStatus status, WcOpcode opc, std::uint32_t len) {
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

    Exec fail(QpRec &q, const Op &op, WcStatus status, WcOpcode opc) {
        if (status == WcStatus::rem_access_err || status == WcStatus::loc_prot_err) {
            ++st.access_errors;
        }
        GP_DEBUG("fake rdma: qp 0x%x wr %llu failed: %s", q.qpn,
                 static_cast<unsigned long long>(op.wr_id), to_string(status));
        complete_req(q, op, status, opc, 0);
        set_error(q);
        return Exec::done;
    }

    Exec execute(QpRec &q, const Op &op) {
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

    // Executes, in post order per QP, every operation due at `now`; returns
    // whether any ran and leaves in `next` the earliest due time still ahead.
    bool sweep(Clock::time_point now, std::optional<Clock::time_point> &next) {
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

    // Real time: the worker thread executes each operation when it is due.
    void run() {
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

    // Modeled time: the caller waits for a completion. Whatever is due now
    // runs; if nothing is, the clock moves to the next due operation and
    // everything due then runs. Deterministic: no thread, no host time.
    void idle() {
        std::optional<Clock::time_point> next;
        if (sweep(vnow, next) || !next) {
            return;
        }
        vnow = *next;
        sweep(vnow, next);
    }

    Clock::time_point now() const { return cfg.modeled_clock ? vnow : Clock::now(); }
};

// ---------------------------------------------------------------- objects --

class FakeMr final : public MemoryRegion {
  public:
    FakeMr(std::shared_ptr<Fabric> f, std::uint32_t key, std::uint64_t iova, std::size_t len,
           void *map = nullptr, std::size_t map_len = 0)
        : f_(std::move(f)), key_(key), iova_(iova), len_(len), map_(map), map_len_(map_len) {}
    ~FakeMr() override {
        {
            std::lock_guard<std::mutex> g(f_->mu);
            f_->mrs.erase(key_);
            f_->st.live_mrs = f_->mrs.size();
        }
        if (map_ != nullptr) {
            munmap(map_, map_len_);
        }
    }
    std::uint32_t lkey() const noexcept override { return key_; }
    std::uint32_t rkey() const noexcept override { return key_; }
    std::uint64_t iova() const noexcept override { return iova_; }
    std::size_t length() const noexcept override { return len_; }

  private:
    std::shared_ptr<Fabric> f_;
    std::uint32_t key_;
    std::uint64_t iova_;
    std::size_t len_;
    void *map_;          // the "NIC's" mapping of a real dma-buf fd
    std::size_t map_len_;
};

class FakeCq final : public CompletionQueue {
  public:
    explicit FakeCq(std::shared_ptr<Fabric> f) : f_(std::move(f)), rec_(std::make_shared<CqRec>()) {}
    int poll(std::span<Completion> out) override {
        std::lock_guard<std::mutex> g(f_->mu);
        int n = 0;
        while (static_cast<std::size_t>(n) < out.size() && !rec_->q.empty()) {
            out[static_cast<std::size_t>(n++)] = rec_->q.front();
            rec_->q.pop_front();
        }
        return n;
    }
    const std::shared_ptr<CqRec> &rec() const noexcept { return rec_; }

  private:
    std::shared_ptr<Fabric> f_;
    std::shared_ptr<CqRec> rec_;
};

class FakeQp final : public QueuePair {
  public:
    FakeQp(std::shared_ptr<Fabric> f, std::shared_ptr<QpRec> q) : f_(std::move(f)), q_(std::move(q)) {}
    ~FakeQp() override {
        std::lock_guard<std::mutex> g(f_->mu);
        f_->qps.erase(q_->qpn);
    }
    std::uint32_t qp_num() const noexcept override { return q_->qpn; }
    QpState state() const noexcept override {
        std::lock_guard<std::mutex> g(f_->mu);
        return q_->state;
    }
    std::uint32_t max_inline() const noexcept override { return q_->caps.max_inline; }

    int to_init() override { return transition(QpState::reset, QpState::init); }
    int to_rtr(const RemoteQp &r) override {
        if (r.qpn == 0 || r.qpn >= (1u << 24)) {
            return -EINVAL;
        }
        std::lock_guard<std::mutex> g(f_->mu);
        if (q_->state != QpState::init) {
            return -EINVAL;
        }
        q_->remote_qpn = r.qpn;
        q_->state = QpState::rtr;
        return 0;
    }
    int to_rts(std::uint32_t /*psn*/) override { return transition(QpState::rtr, QpState::rts); }
    int to_error() override {
        std::lock_guard<std::mutex> g(f_->mu);
        f_->set_error(*q_);
        return 0;
    }

    int post_write(std::uint64_t wr_id, std::span<const Sge> local, std::uint64_t raddr,
                   std::uint32_t rkey, std::optional<std::uint32_t> imm, bool signaled) override {
        Op op;
        op.kind = OpKind::write;
        op.wr_id = wr_id;
        op.sges.assign(local.begin(), local.end());
        op.raddr = raddr;
        op.rkey = rkey;
        op.imm = imm;
        op.signaled = signaled;
        return post(std::move(op));
    }
    int post_read(std::uint64_t wr_id, std::span<const Sge> local, std::uint64_t raddr,
                  std::uint32_t rkey, bool signaled) override {
        Op op;
        op.kind = OpKind::read;
        op.wr_id = wr_id;
        op.sges.assign(local.begin(), local.end());
        op.raddr = raddr;
        op.rkey = rkey;
        op.signaled = signaled;
        return post(std::move(op));
    }
    int post_send(std::uint64_t wr_id, std::span<const Sge> local,
                  std::optional<std::uint32_t> imm, bool signaled, bool inline_data) override {
        Op op;
        op.kind = OpKind::send;
        op.wr_id = wr_id;
        op.imm = imm;
        op.signaled = signaled;
        if (inline_data) {
            std::size_t total = 0;
            for (const Sge &s : local) {
                total += s.length;
            }
            if (total > q_->caps.max_inline) {
                return -EINVAL;
            }
            // inline: the bytes are read from the virtual address at post time
            for (const Sge &s : local) {
                const auto *p = reinterpret_cast<const std::uint8_t *>(s.addr);
                op.inline_data.insert(op.inline_data.end(), p, p + s.length);
            }
            op.is_inline = true;
        } else {
            op.sges.assign(local.begin(), local.end());
        }
        return post(std::move(op));
    }
    int post_recv(std::uint64_t wr_id, std::span<const Sge> local) override {
        std::lock_guard<std::mutex> g(f_->mu);
        if (q_->state == QpState::reset) {
            return -EINVAL;
        }
        if (q_->state == QpState::error) {
            Completion c;
            c.wr_id = wr_id;
            c.status = WcStatus::wr_flush_err;
            c.opcode = WcOpcode::recv;
            c.qp_num = q_->qpn;
            Fabric::push(q_->rcq.get(), c);
            return 0;
        }
        if (q_->recvs.size() >= q_->caps.max_recv_wr) {
            return -ENOMEM;
        }
        q_->recvs.push_back(RecvWr{wr_id, std::vector<Sge>(local.begin(), local.end())});
        f_->cv.notify_all();
        return 0;
    }

  private:
    int transition(QpState from, QpState to) {
        std::lock_guard<std::mutex> g(f_->mu);
        if (q_->state != from) {
            return -EINVAL;
        }
        q_->state = to;
        return 0;
    }

    int post(Op op) {
        std::lock_guard<std::mutex> g(f_->mu);
        if (q_->state != QpState::rts && q_->state != QpState::error) {
            return -EINVAL;
        }
        if (q_->sq_outstanding >= q_->caps.max_send_wr) {
            return -ENOMEM;
        }
        std::size_t bytes = op.inline_data.size();
        for (const Sge &s : op.sges) {
            bytes += s.length;
        }
        const Clock::time_point now = f_->now();
        Clock::time_point start = std::max(now, q_->busy);
        double bw = f_->cfg.bandwidth_gbps;
        if (f_->cfg.device_bandwidth_gbps > 0 && touches_device_mem(op, bytes)) {
            // GPUDirect: the NIC reads/writes GPU memory across PCIe peer-to-peer
            bw = bw > 0 ? std::min(bw, f_->cfg.device_bandwidth_gbps) : f_->cfg.device_bandwidth_gbps;
        }
        if (bw > 0) {
            start += std::chrono::nanoseconds(
                static_cast<long long>(static_cast<double>(bytes) / bw));
        }
        q_->busy = start;
        op.due = start + std::chrono::nanoseconds(
                             static_cast<long long>(f_->cfg.latency_us * 1000.0));
        op.qpn = q_->qpn;
        ++q_->sq_outstanding;
        f_->ops.push_back(std::move(op));
        f_->cv.notify_all();
        return 0;
    }

    bool touches_device_mem(const Op &op, std::size_t bytes) const {
        for (const Sge &s : op.sges) {
            if (f_->overlaps_device_mem(s.addr, s.length)) {
                return true;
            }
        }
        return op.kind != OpKind::send && f_->overlaps_device_mem(op.raddr, bytes);
    }

    std::shared_ptr<Fabric> f_;
    std::shared_ptr<QpRec> q_;
};

class FakePd final : public ProtectionDomain {
  public:
    FakePd(std::shared_ptr<Fabric> f, std::uint64_t id) : f_(std::move(f)), id_(id) {}

    Expected<std::unique_ptr<MemoryRegion>> reg_mr(void *addr, std::size_t len,
                                                   unsigned access) override {
        std::lock_guard<std::mutex> g(f_->mu);
        if (addr == nullptr || len == 0) {
            return make_error(-EINVAL, "fake reg_mr: empty range");
        }
        if (int rc = f_->reg_precheck(); rc != 0) {
            return make_error(rc, "fake reg_mr: refused");
        }
        const auto a = reinterpret_cast<std::uintptr_t>(addr);
        if (!f_->cfg.peermem && f_->overlaps_device_mem(a, len)) {
            return make_error(-EFAULT, "fake reg_mr: device memory without peermem");
        }
        MrRec rec{id_, a, len, static_cast<std::uint8_t *>(addr), access};
        const std::uint32_t key = f_->add_mr(rec);
        return std::unique_ptr<MemoryRegion>(std::make_unique<FakeMr>(f_, key, a, len));
    }

    Expected<std::unique_ptr<MemoryRegion>> reg_dmabuf_mr(int fd, std::uint64_t offset,
                                                          std::size_t len, std::uint64_t iova,
                                                          unsigned access) override {
        std::lock_guard<std::mutex> g(f_->mu);
        if (len == 0) {
            return make_error(-EINVAL, "fake reg_dmabuf_mr: empty range");
        }
        if (int rc = f_->reg_precheck(); rc != 0) {
            return make_error(rc, "fake reg_dmabuf_mr: refused");
        }
        if (!f_->cfg.dmabuf_supported) {
            return make_error(-EOPNOTSUPP, "fake reg_dmabuf_mr: not supported");
        }
        auto it = f_->dmabufs.find(fd);
        if (it == f_->dmabufs.end()) {
            return import_real_dmabuf(fd, offset, len, iova, access);
        }
        if (offset > it->second.second || len > it->second.second - offset) {
            return make_error(-EINVAL, "fake reg_dmabuf_mr: range outside the dma-buf");
        }
        MrRec rec{id_, iova, len, it->second.first + offset, access};
        const std::uint32_t key = f_->add_mr(rec);
        ++f_->st.dmabuf_regs;
        return std::unique_ptr<MemoryRegion>(std::make_unique<FakeMr>(f_, key, iova, len));
    }

    // A real descriptor (the CUDA simulator's cuMemGetHandleForAddressRange:
    // a memfd whose file position is where the exported range starts): the
    // fake NIC maps it, as a real one would DMA into the dma-buf's pages.
    // Called with f_->mu held.
    Expected<std::unique_ptr<MemoryRegion>> import_real_dmabuf(int fd, std::uint64_t offset,
                                                               std::size_t len, std::uint64_t iova,
                                                               unsigned access) {
        const off_t pos = lseek(fd, 0, SEEK_CUR);
        if (pos < 0) {
            return make_error(-EBADF, "fake reg_dmabuf_mr: unknown fd");
        }
        struct stat st;
        if (fstat(fd, &st) != 0 || static_cast<std::uint64_t>(pos) + offset + len >
                                       static_cast<std::uint64_t>(st.st_size)) {
            return make_error(-EINVAL, "fake reg_dmabuf_mr: range outside the dma-buf");
        }
        const std::uint64_t start = static_cast<std::uint64_t>(pos) + offset;
        const std::uint64_t page = 4096;
        const std::uint64_t astart = start & ~(page - 1);
        const std::size_t mlen = static_cast<std::size_t>(start - astart) + len;
        void *m = mmap(nullptr, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                       static_cast<off_t>(astart));
        if (m == MAP_FAILED) {
            return make_error(-errno, "fake reg_dmabuf_mr: cannot map the dma-buf");
        }
        MrRec rec{id_, iova, len, static_cast<std::uint8_t *>(m) + (start - astart), access};
        const std::uint32_t key = f_->add_mr(rec);
        ++f_->st.dmabuf_regs;
        return std::unique_ptr<MemoryRegion>(
            std::make_unique<FakeMr>(f_, key, iova, len, m, mlen));
    }

    Expected<std::unique_ptr<QueuePair>> create_qp(CompletionQueue &send_cq,
                                                   CompletionQueue &recv_cq,
                                                   const QpCaps &caps) override {
        auto *s = dynamic_cast<FakeCq *>(&send_cq);
        auto *r = dynamic_cast<FakeCq *>(&recv_cq);
        if (s == nullptr || r == nullptr) {
            return make_error(-EINVAL, "fake create_qp: CQ of another backend");
        }
        auto q = std::make_shared<QpRec>();
        q->pd_id = id_;
        q->scq = s->rec();
        q->rcq = r->rec();
        q->caps = caps;
        q->caps.max_inline = std::min(caps.max_inline, f_->cfg.max_inline);
        std::lock_guard<std::mutex> g(f_->mu);
        q->qpn = f_->next_qpn++ & 0xffffffu;
        f_->qps.emplace(q->qpn, q);
        return std::unique_ptr<QueuePair>(std::make_unique<FakeQp>(f_, std::move(q)));
    }

  private:
    std::shared_ptr<Fabric> f_;
    std::uint64_t id_;
};

class FakeContext final : public Context {
  public:
    FakeContext(std::shared_ptr<Fabric> f, PortInfo p) : f_(std::move(f)), port_(std::move(p)) {}
    const PortInfo &port() const noexcept override { return port_; }
    Expected<std::unique_ptr<ProtectionDomain>> alloc_pd() override {
        std::lock_guard<std::mutex> g(f_->mu);
        return std::unique_ptr<ProtectionDomain>(std::make_unique<FakePd>(f_, f_->next_pd++));
    }
    Expected<std::unique_ptr<CompletionQueue>> create_cq(int depth) override {
        if (depth <= 0) {
            return make_error(-EINVAL, "fake create_cq: bad depth");
        }
        return std::unique_ptr<CompletionQueue>(std::make_unique<FakeCq>(f_));
    }
    std::optional<double> modeled_now() const override {
        if (!f_->cfg.modeled_clock) {
            return std::nullopt;
        }
        std::lock_guard<std::mutex> g(f_->mu);
        return std::chrono::duration<double>(f_->vnow.time_since_epoch()).count();
    }
    void idle() override {
        if (f_->cfg.modeled_clock) {
            std::lock_guard<std::mutex> g(f_->mu);
            f_->idle();
        }
    }

  private:
    std::shared_ptr<Fabric> f_;
    PortInfo port_;
};

class FakeBackend final : public Backend {
  public:
    explicit FakeBackend(std::shared_ptr<Fabric> f) : f_(std::move(f)) {}
    const char *name() const noexcept override { return "fake"; }
    std::vector<PortInfo> ports() override {
        std::vector<PortInfo> out;
        if (!f_->cfg.ports_active) {
            GP_INFO("fake rdma: no active ports");
            return out;
        }
        for (int d = 0; d < f_->cfg.devices; ++d) {
            for (int p = 1; p <= f_->cfg.ports_per_device; ++p) {
                PortInfo pi;
                pi.device = "fake" + std::to_string(d);
                pi.port = static_cast<std::uint8_t>(p);
                pi.name = pi.device + ":" + std::to_string(p);
                pi.lid = static_cast<std::uint16_t>(d * 16 + p + 1);
                pi.gid[0] = 0xfe;
                pi.gid[1] = 0x80;
                pi.gid[14] = static_cast<std::uint8_t>(d);
                pi.gid[15] = static_cast<std::uint8_t>(p);
                out.push_back(pi);
            }
        }
        return out;
    }
    Expected<std::unique_ptr<Context>> open(const PortInfo &port) override {
        for (const PortInfo &p : ports()) {
            if (p.name == port.name) {
                return std::unique_ptr<Context>(std::make_unique<FakeContext>(f_, p));
            }
        }
        return make_error(-ENODEV, "fake rdma: no port " + port.name);
    }

  private:
    std::shared_ptr<Fabric> f_;
};

} // namespace fake_detail

using fake_detail::Fabric;

FakeFabric::FakeFabric(FakeConfig config) : f_(std::make_shared<Fabric>(config)) {
    Fabric *raw = f_.get();
    f_->worker = std::thread([raw] { raw->run(); });
}

FakeFabric::~FakeFabric() {
    {
        std::lock_guard<std::mutex> g(f_->mu);
        f_->stop = true;
    }
    f_->cv.notify_all();
    f_->worker.join();
}

std::unique_ptr<Backend> FakeFabric::backend() {
    return std::make_unique<fake_detail::FakeBackend>(f_);
}

void FakeFabric::fail_next_registrations(int n, int err) {
    std::lock_guard<std::mutex> g(f_->mu);
    f_->fail_regs = n;
    f_->fail_err = err;
}
void FakeFabric::set_max_mrs(std::size_t n) {
    std::lock_guard<std::mutex> g(f_->mu);
    f_->cfg.max_mrs = n;
}
void FakeFabric::set_dmabuf_supported(bool on) {
    std::lock_guard<std::mutex> g(f_->mu);
    f_->cfg.dmabuf_supported = on;
}
void FakeFabric::set_peermem(bool on) {
    std::lock_guard<std::mutex> g(f_->mu);
    f_->cfg.peermem = on;
}
void FakeFabric::set_latency(double latency_us, double bandwidth_gbps) {
    std::lock_guard<std::mutex> g(f_->mu);
    f_->cfg.latency_us = latency_us;
    f_->cfg.bandwidth_gbps = bandwidth_gbps;
}
bool FakeFabric::force_qp_error(std::uint32_t qpn) {
    std::lock_guard<std::mutex> g(f_->mu);
    auto it = f_->qps.find(qpn);
    if (it == f_->qps.end()) {
        return false;
    }
    f_->set_error(*it->second);
    return true;
}
void FakeFabric::add_device_memory(const void *ptr, std::size_t len) {
    std::lock_guard<std::mutex> g(f_->mu);
    f_->device_mem.emplace_back(reinterpret_cast<std::uintptr_t>(ptr), len);
}
void FakeFabric::remove_device_memory(const void *ptr) {
    std::lock_guard<std::mutex> g(f_->mu);
    const auto a = reinterpret_cast<std::uintptr_t>(ptr);
    std::erase_if(f_->device_mem, [a](const auto &r) { return r.first == a; });
}
int FakeFabric::export_dmabuf(const void *ptr, std::size_t len) {
    std::lock_guard<std::mutex> g(f_->mu);
    const auto a = reinterpret_cast<std::uintptr_t>(ptr);
    bool inside = false;
    for (const auto &[lo, n] : f_->device_mem) {
        if (a >= lo && len <= n && a - lo <= n - len) {
            inside = true;
        }
    }
    if (!inside || len == 0) {
        return -EINVAL;
    }
    const int fd = f_->next_fd++;
    f_->dmabufs.emplace(fd, std::make_pair(reinterpret_cast<std::uint8_t *>(a), len));
    return fd;
}
void FakeFabric::close_dmabuf(int fd) {
    std::lock_guard<std::mutex> g(f_->mu);
    f_->dmabufs.erase(fd);
}
int FakeFabric::open_dmabufs() const {
    std::lock_guard<std::mutex> g(f_->mu);
    return static_cast<int>(f_->dmabufs.size());
}
FakeStats FakeFabric::stats() const {
    std::lock_guard<std::mutex> g(f_->mu);
    FakeStats s = f_->st;
    s.live_mrs = f_->mrs.size();
    return s;
}

} // namespace gdrpipe::rdma
