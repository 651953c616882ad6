// In-process fake RDMA fabric (see include/gdrpipe/rdma/fake_backend.hpp):
// the verbs objects over the fabric of src/rdma/fake_fabric.hpp.
#include "fake_fabric.hpp"

#include <gdrpipe/log.hpp>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gdrpipe::rdma {
namespace fake_detail {

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
std::vector<FakeFabric::MrView> FakeFabric::memory_regions() const {
    std::lock_guard<std::mutex> g(f_->mu);
    std::vector<MrView> v;
    for (const auto &kv : f_->mrs) v.push_back({kv.second.host, kv.second.len, kv.second.access});
    return v;
}

FakeStats FakeFabric::stats() const {
    std::lock_guard<std::mutex> g(f_->mu);
    FakeStats s = f_->st;
    s.live_mrs = f_->mrs.size();
    return s;
}

} // namespace gdrpipe::rdma
