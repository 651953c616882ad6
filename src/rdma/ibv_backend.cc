// The real verbs backend: a thin layer over libibverbs (rdma-core >= 34 for
// ibv_reg_dmabuf_mr). RC QPs only. Written against the rdma-core man pages
// (ibv_get_device_list(3), ibv_query_port(3), ibv_query_gid_ex(3),
// ibv_reg_mr(3), ibv_create_qp(3), ibv_modify_qp(3), ibv_post_send(3),
// ibv_poll_cq(3)); never run on RDMA hardware in this project (docs/rdma.md).
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/verbs.hpp>

#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>

namespace gdrpipe::rdma {

static_assert(static_cast<int>(WcStatus::rem_access_err) == IBV_WC_REM_ACCESS_ERR);
static_assert(static_cast<int>(WcStatus::wr_flush_err) == IBV_WC_WR_FLUSH_ERR);
static_assert(static_cast<int>(WcStatus::retry_exc_err) == IBV_WC_RETRY_EXC_ERR);
static_assert(static_cast<int>(WcStatus::general_err) == IBV_WC_GENERAL_ERR);
static_assert(static_cast<int>(WcStatus::fatal_err) == IBV_WC_FATAL_ERR);

namespace {

int neg_errno(int fallback = EIO) { return errno != 0 ? -errno : -fallback; }

std::uint32_t mtu_bytes(ibv_mtu m) {
    switch (m) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
    }
    return 1024;
}

ibv_mtu mtu_enum(std::uint32_t bytes) {
    if (bytes >= 4096) return IBV_MTU_4096;
    if (bytes >= 2048) return IBV_MTU_2048;
    if (bytes >= 1024) return IBV_MTU_1024;
    if (bytes >= 512) return IBV_MTU_512;
    return IBV_MTU_256;
}

int ibv_access(unsigned a) {
    int f = 0;
    if ((a & kAccessLocalWrite) != 0) f |= IBV_ACCESS_LOCAL_WRITE;
    if ((a & kAccessRemoteWrite) != 0) f |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if ((a & kAccessRemoteRead) != 0) f |= IBV_ACCESS_REMOTE_READ;
    return f;
}

bool is_ipv4_mapped(const ibv_gid &g) {
    for (int i = 0; i < 10; ++i) {
        if (g.raw[i] != 0) return false;
    }
    return g.raw[10] == 0xff && g.raw[11] == 0xff;
}

// RoCE: prefer a RoCE v2 GID that maps an IPv4 address, then any RoCE v2
// GID, then index 0 (RoCE v1). InfiniBand: index 0.
int pick_gid(ibv_context *ctx, std::uint8_t port, const ibv_port_attr &pa, Gid &out) {
    int best = -1;
    int best_rank = -1;
    ibv_gid best_gid{};
    if (pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
        for (int i = 0; i < pa.gid_tbl_len; ++i) {
            ibv_gid_entry e{};
            if (ibv_query_gid_ex(ctx, port, static_cast<std::uint32_t>(i), &e, 0) != 0) {
                continue; // empty entry (ENODATA) or unsupported
            }
            int rank = 0;
            if (e.gid_type == IBV_GID_TYPE_ROCE_V2) {
                rank = is_ipv4_mapped(e.gid) ? 2 : 1;
            }
            if (rank > best_rank) {
                best_rank = rank;
                best = i;
                best_gid = e.gid;
            }
        }
    }
    if (best < 0) {
        best = 0;
        if (ibv_query_gid(ctx, port, 0, &best_gid) != 0) {
            std::memset(&best_gid, 0, sizeof(best_gid));
        }
    }
    std::memcpy(out.data(), best_gid.raw, out.size());
    return best;
}

class IbvMr final : public MemoryRegion {
  public:
    explicit IbvMr(ibv_mr *mr, std::uint64_t iova) : mr_(mr), iova_(iova) {}
    ~IbvMr() override {
        if (int rc = ibv_dereg_mr(mr_); rc != 0) {
            GP_WARN("rdma: ibv_dereg_mr failed: %s", std::strerror(rc));
        }
    }
    std::uint32_t lkey() const noexcept override { return mr_->lkey; }
    std::uint32_t rkey() const noexcept override { return mr_->rkey; }
    std::uint64_t iova() const noexcept override { return iova_; }
    std::size_t length() const noexcept override { return mr_->length; }

  private:
    ibv_mr *mr_;
    std::uint64_t iova_;
};

class IbvCq final : public CompletionQueue {
  public:
    explicit IbvCq(ibv_cq *cq) : cq_(cq) {}
    ~IbvCq() override {
        if (int rc = ibv_destroy_cq(cq_); rc != 0) {
            GP_WARN("rdma: ibv_destroy_cq failed: %s", std::strerror(rc));
        }
    }
    int poll(std::span<Completion> out) override {
        ibv_wc wc[16];
        int total = 0;
        while (static_cast<std::size_t>(total) < out.size()) {
            const int want = static_cast<int>(
                std::min<std::size_t>(16, out.size() - static_cast<std::size_t>(total)));
            const int n = ibv_poll_cq(cq_, want, wc);
            if (n < 0) {
                return total > 0 ? total : -EIO;
            }
            for (int i = 0; i < n; ++i) {
                Completion &c = out[static_cast<std::size_t>(total + i)];
                c = Completion{};
                c.wr_id = wc[i].wr_id;
                c.status = static_cast<WcStatus>(wc[i].status);
                c.byte_len = wc[i].byte_len;
                c.qp_num = wc[i].qp_num;
                switch (wc[i].opcode) {
                case IBV_WC_RDMA_WRITE: c.opcode = WcOpcode::rdma_write; break;
                case IBV_WC_RDMA_READ: c.opcode = WcOpcode::rdma_read; break;
                case IBV_WC_RECV: c.opcode = WcOpcode::recv; break;
                case IBV_WC_RECV_RDMA_WITH_IMM: c.opcode = WcOpcode::recv_rdma_with_imm; break;
                default: c.opcode = WcOpcode::send; break;
                }
                if (wc[i].status == IBV_WC_SUCCESS && (wc[i].wc_flags & IBV_WC_WITH_IMM) != 0) {
                    c.has_imm = true;
                    c.imm = ntohl(wc[i].imm_data);
                }
            }
            total += n;
            if (n < want) {
                break;
            }
        }
        return total;
    }
    ibv_cq *raw() const noexcept { return cq_; }

  private:
    ibv_cq *cq_;
};

class IbvQp final : public QueuePair {
  public:
    IbvQp(ibv_qp *qp, const PortInfo &port, std::uint32_t max_inline)
        : qp_(qp), port_(port), max_inline_(max_inline) {}
    ~IbvQp() override {
        if (int rc = ibv_destroy_qp(qp_); rc != 0) {
            GP_WARN("rdma: ibv_destroy_qp failed: %s", std::strerror(rc));
        }
    }
    std::uint32_t qp_num() const noexcept override { return qp_->qp_num; }
    QpState state() const noexcept override { return state_; }
    std::uint32_t max_inline() const noexcept override { return max_inline_; }

    int to_init() override {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num = port_.port;
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
        return modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                      QpState::init);
    }
    int to_rtr(const RemoteQp &r) override {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = mtu_enum(std::min(port_.active_mtu, r.mtu));
        a.dest_qp_num = r.qpn;
        a.rq_psn = r.psn & 0xffffffu;
        a.max_dest_rd_atomic = static_cast<std::uint8_t>(std::min<std::uint32_t>(port_.max_qp_rd_atom, 16));
        a.min_rnr_timer = 12; // 0.64 ms
        a.ah_attr.port_num = port_.port;
        a.ah_attr.dlid = r.lid;
        a.ah_attr.sl = 0;
        const bool global = port_.link_layer == LinkLayer::ethernet || r.lid == 0;
        if (global) {
            a.ah_attr.is_global = 1;
            std::memcpy(a.ah_attr.grh.dgid.raw, r.gid.data(), r.gid.size());
            a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(port_.gid_index);
            a.ah_attr.grh.hop_limit = 64;
        }
        return modify(a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                          IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                      QpState::rtr);
    }
    int to_rts(std::uint32_t psn) override {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTS;
        a.timeout = 14; // 4.096 us * 2^14 = 67 ms
        a.retry_cnt = 7;
        a.rnr_retry = 7; // infinite
        a.sq_psn = psn & 0xffffffu;
        a.max_rd_atomic = static_cast<std::uint8_t>(std::min<std::uint32_t>(port_.max_qp_rd_atom, 16));
        return modify(a,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                      QpState::rts);
    }
    int to_error() override {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_ERR;
        return modify(a, IBV_QP_STATE, QpState::error);
    }

    int post_write(std::uint64_t wr_id, std::span<const Sge> local, std::uint64_t raddr,
                   std::uint32_t rkey, std::optional<std::uint32_t> imm, bool signaled) override {
        ibv_send_wr wr{};
        wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
        if (imm) wr.imm_data = htonl(*imm);
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey = rkey;
        return post(wr, wr_id, local, signaled, false);
    }
    int post_read(std::uint64_t wr_id, std::span<const Sge> local, std::uint64_t raddr,
                  std::uint32_t rkey, bool signaled) override {
        ibv_send_wr wr{};
        wr.opcode = IBV_WR_RDMA_READ;
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey = rkey;
        return post(wr, wr_id, local, signaled, false);
    }
    int post_send(std::uint64_t wr_id, std::span<const Sge> local,
                  std::optional<std::uint32_t> imm, bool signaled, bool inline_data) override {
        ibv_send_wr wr{};
        wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
        if (imm) wr.imm_data = htonl(*imm);
        return post(wr, wr_id, local, signaled, inline_data);
    }
    int post_recv(std::uint64_t wr_id, std::span<const Sge> local) override {
        ibv_sge sg[4];
        if (local.size() > 4) return -EINVAL;
        for (std::size_t i = 0; i < local.size(); ++i) {
            sg[i] = ibv_sge{local[i].addr, local[i].length, local[i].lkey};
        }
        ibv_recv_wr wr{};
        wr.wr_id = wr_id;
        wr.sg_list = sg;
        wr.num_sge = static_cast<int>(local.size());
        ibv_recv_wr *bad = nullptr;
        const int rc = ibv_post_recv(qp_, &wr, &bad);
        return rc == 0 ? 0 : -rc;
    }

  private:
    int post(ibv_send_wr &wr, std::uint64_t wr_id, std::span<const Sge> local, bool signaled,
             bool inline_data) {
        ibv_sge sg[4];
        if (local.size() > 4) return -EINVAL;
        std::size_t total = 0;
        for (std::size_t i = 0; i < local.size(); ++i) {
            sg[i] = ibv_sge{local[i].addr, local[i].length, local[i].lkey};
            total += local[i].length;
        }
        if (inline_data && total > max_inline_) return -EINVAL;
        wr.wr_id = wr_id;
        wr.sg_list = sg;
        wr.num_sge = static_cast<int>(local.size());
        wr.send_flags = (signaled ? static_cast<unsigned>(IBV_SEND_SIGNALED) : 0u) |
                        (inline_data ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u);
        ibv_send_wr *bad = nullptr;
        const int rc = ibv_post_send(qp_, &wr, &bad); // returns an errno value
        return rc == 0 ? 0 : -rc;
    }

    int modify(ibv_qp_attr &a, int mask, QpState to) {
        const int rc = ibv_modify_qp(qp_, &a, mask);
        if (rc != 0) {
            GP_ERROR("rdma: %s qp 0x%x -> %s failed: %s", port_.name.c_str(), qp_->qp_num,
                     to_string(to), std::strerror(rc));
            return -rc;
        }
        state_ = to;
        return 0;
    }

    ibv_qp *qp_;
    PortInfo port_;
    std::uint32_t max_inline_;
    QpState state_ = QpState::reset;
};

class IbvPd final : public ProtectionDomain {
  public:
    IbvPd(ibv_pd *pd, const PortInfo &port) : pd_(pd), port_(port) {}
    ~IbvPd() override {
        if (int rc = ibv_dealloc_pd(pd_); rc != 0) {
            GP_WARN("rdma: ibv_dealloc_pd failed (MRs or QPs still alive?): %s", std::strerror(rc));
        }
    }
    Expected<std::unique_ptr<MemoryRegion>> reg_mr(void *addr, std::size_t len,
                                                   unsigned access) override {
        errno = 0;
        ibv_mr *mr = ibv_reg_mr(pd_, addr, len, ibv_access(access));
        if (mr == nullptr) {
            const int rc = neg_errno();
            return make_error(rc, std::string("ibv_reg_mr: ") + std::strerror(-rc));
        }
        return std::unique_ptr<MemoryRegion>(
            std::make_unique<IbvMr>(mr, reinterpret_cast<std::uintptr_t>(addr)));
    }
    Expected<std::unique_ptr<MemoryRegion>> reg_dmabuf_mr(int fd, std::uint64_t offset,
                                                          std::size_t len, std::uint64_t iova,
                                                          unsigned access) override {
        errno = 0;
        ibv_mr *mr = ibv_reg_dmabuf_mr(pd_, offset, len, iova, fd,
                                       ibv_access(access) | IBV_ACCESS_RELAXED_ORDERING);
        if (mr == nullptr) {
            const int rc = neg_errno();
            return make_error(rc, std::string("ibv_reg_dmabuf_mr: ") + std::strerror(-rc));
        }
        return std::unique_ptr<MemoryRegion>(std::make_unique<IbvMr>(mr, iova));
    }
    Expected<std::unique_ptr<QueuePair>> create_qp(CompletionQueue &send_cq,
                                                   CompletionQueue &recv_cq,
                                                   const QpCaps &caps) override {
        auto *s = dynamic_cast<IbvCq *>(&send_cq);
        auto *r = dynamic_cast<IbvCq *>(&recv_cq);
        if (s == nullptr || r == nullptr) {
            return make_error(-EINVAL, "ibv create_qp: CQ of another backend");
        }
        ibv_qp_init_attr ia{};
        ia.send_cq = s->raw();
        ia.recv_cq = r->raw();
        ia.qp_type = IBV_QPT_RC;
        ia.sq_sig_all = 0;
        ia.cap.max_send_wr = caps.max_send_wr;
        ia.cap.max_recv_wr = caps.max_recv_wr;
        ia.cap.max_send_sge = caps.max_sge;
        ia.cap.max_recv_sge = caps.max_sge;
        ia.cap.max_inline_data = caps.max_inline;
        errno = 0;
        ibv_qp *qp = ibv_create_qp(pd_, &ia);
        if (qp == nullptr && caps.max_inline != 0) {
            // some devices refuse large inline sizes: retry without inline
            ia.cap.max_inline_data = 0;
            errno = 0;
            qp = ibv_create_qp(pd_, &ia);
        }
        if (qp == nullptr) {
            const int rc = neg_errno();
            return make_error(rc, std::string("ibv_create_qp: ") + std::strerror(-rc));
        }
        // ibv_create_qp writes the granted capabilities back into ia.cap
        return std::unique_ptr<QueuePair>(
            std::make_unique<IbvQp>(qp, port_, ia.cap.max_inline_data));
    }

  private:
    ibv_pd *pd_;
    PortInfo port_;
};

class IbvContext final : public Context {
  public:
    IbvContext(ibv_context *ctx, PortInfo port) : ctx_(ctx), port_(std::move(port)) {}
    ~IbvContext() override {
        if (ibv_close_device(ctx_) != 0) {
            GP_WARN("rdma: ibv_close_device(%s) failed", port_.device.c_str());
        }
    }
    const PortInfo &port() const noexcept override { return port_; }
    Expected<std::unique_ptr<ProtectionDomain>> alloc_pd() override {
        errno = 0;
        ibv_pd *pd = ibv_alloc_pd(ctx_);
        if (pd == nullptr) {
            const int rc = neg_errno();
            return make_error(rc, std::string("ibv_alloc_pd: ") + std::strerror(-rc));
        }
        return std::unique_ptr<ProtectionDomain>(std::make_unique<IbvPd>(pd, port_));
    }
    Expected<std::unique_ptr<CompletionQueue>> create_cq(int depth) override {
        errno = 0;
        ibv_cq *cq = ibv_create_cq(ctx_, depth, nullptr, nullptr, 0);
        if (cq == nullptr) {
            const int rc = neg_errno();
            return make_error(rc, std::string("ibv_create_cq: ") + std::strerror(-rc));
        }
        return std::unique_ptr<CompletionQueue>(std::make_unique<IbvCq>(cq));
    }

  private:
    ibv_context *ctx_;
    PortInfo port_;
};

// RAII over ibv_get_device_list.
struct DeviceList {
    DeviceList() {
        errno = 0;
        list = ibv_get_device_list(&n);
        if (list == nullptr) {
            n = 0;
        }
    }
    ~DeviceList() {
        if (list != nullptr) ibv_free_device_list(list);
    }
    DeviceList(const DeviceList &) = delete;
    DeviceList &operator=(const DeviceList &) = delete;
    ibv_device **list = nullptr;
    int n = 0;
};

// Active ports of one opened device.
void collect_ports(ibv_context *ctx, const char *dev, std::vector<PortInfo> &out) {
    ibv_device_attr da{};
    if (int rc = ibv_query_device(ctx, &da); rc != 0) {
        GP_WARN("rdma: ibv_query_device(%s) failed: %s", dev, std::strerror(rc));
        return;
    }
    for (std::uint8_t p = 1; p <= da.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (int rc = ibv_query_port(ctx, p, &pa); rc != 0) {
            GP_WARN("rdma: ibv_query_port(%s:%u) failed: %s", dev, p, std::strerror(rc));
            continue;
        }
        if (pa.state != IBV_PORT_ACTIVE) {
            GP_DEBUG("rdma: %s:%u is %s, skipped", dev, p, ibv_port_state_str(pa.state));
            continue;
        }
        PortInfo pi;
        pi.device = dev;
        pi.port = p;
        pi.name = pi.device + ":" + std::to_string(p);
        pi.link_layer =
            pa.link_layer == IBV_LINK_LAYER_ETHERNET ? LinkLayer::ethernet : LinkLayer::infiniband;
        pi.lid = pa.lid;
        pi.active_mtu = mtu_bytes(pa.active_mtu);
        pi.max_qp_rd_atom = static_cast<std::uint32_t>(da.max_qp_rd_atom);
        pi.gid_index = pick_gid(ctx, p, pa, pi.gid);
        GP_DEBUG("rdma: resource %s (%s, lid %u, gid index %d, mtu %u)", pi.name.c_str(),
                 pi.link_layer == LinkLayer::ethernet ? "RoCE" : "IB", pi.lid, pi.gid_index,
                 pi.active_mtu);
        out.push_back(std::move(pi));
    }
}

class IbvBackend final : public Backend {
  public:
    const char *name() const noexcept override { return "ibv"; }
    std::vector<PortInfo> ports() override {
        std::vector<PortInfo> out;
        DeviceList dl;
        if (dl.n == 0) {
            GP_INFO("rdma: no RDMA devices%s%s", errno != 0 ? ": " : "",
                    errno != 0 ? std::strerror(errno) : "");
            return out;
        }
        for (int i = 0; i < dl.n; ++i) {
            const char *dev = ibv_get_device_name(dl.list[i]);
            ibv_context *ctx = ibv_open_device(dl.list[i]);
            if (ctx == nullptr) {
                GP_WARN("rdma: cannot open %s: %s", dev, std::strerror(errno));
                continue;
            }
            collect_ports(ctx, dev, out);
            ibv_close_device(ctx);
        }
        if (out.empty()) {
            GP_INFO("rdma: %d RDMA device(s), no active port", dl.n);
        }
        return out;
    }
    Expected<std::unique_ptr<Context>> open(const PortInfo &port) override {
        DeviceList dl;
        for (int i = 0; i < dl.n; ++i) {
            if (port.device != ibv_get_device_name(dl.list[i])) {
                continue;
            }
            ibv_context *ctx = ibv_open_device(dl.list[i]);
            if (ctx == nullptr) {
                return make_error(neg_errno(), "ibv_open_device(" + port.device + ") failed");
            }
            // re-query: the port may have changed state since listing
            std::vector<PortInfo> ports;
            collect_ports(ctx, port.device.c_str(), ports);
            for (PortInfo &p : ports) {
                if (p.port == port.port) {
                    return std::unique_ptr<Context>(std::make_unique<IbvContext>(ctx, std::move(p)));
                }
            }
            ibv_close_device(ctx);
            return make_error(-ENETDOWN, port.name + " is not active");
        }
        return make_error(-ENODEV, "no RDMA device " + port.device);
    }
};

} // namespace

std::unique_ptr<Backend> make_ibv_backend() { return std::make_unique<IbvBackend>(); }
bool ibv_backend_available() noexcept { return true; }

} // namespace gdrpipe::rdma
