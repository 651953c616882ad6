// Connection state machine of one RC endpoint (see connection.hpp).
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/connection.hpp>

#include <cerrno>
#include <random>

namespace gdrpipe::rdma {

const char *to_string(ConnState s) noexcept {
    switch (s) {
    case ConnState::created: return "created";
    case ConnState::connected: return "connected";
    case ConnState::error: return "error";
    case ConnState::closed: return "closed";
    }
    return "?";
}

Expected<std::unique_ptr<Connection>> Connection::create(Context &ctx, ProtectionDomain &pd,
                                                         const ConnectionConfig &cfg,
                                                         ErrorCallback on_error) {
    std::unique_ptr<Connection> c(new Connection());
    c->on_error_ = std::move(on_error);
    auto cq = ctx.create_cq(cfg.cq_depth);
    if (!cq) {
        return cq.error();
    }
    c->cq_ = std::move(cq.value());
    auto qp = pd.create_qp(*c->cq_, *c->cq_, cfg.caps);
    if (!qp) {
        return qp.error();
    }
    c->qp_ = std::move(qp.value());
    if (int rc = c->qp_->to_init(); rc != 0) {
        return make_error(rc, "rdma: QP to INIT failed");
    }
    std::random_device rd;
    const PortInfo &port = ctx.port();
    c->local_.gid = port.gid;
    c->local_.lid = port.lid;
    c->local_.qpn = c->qp_->qp_num();
    c->local_.psn = rd() & 0xffffffu;
    c->local_.mtu = port.active_mtu;
    GP_DEBUG("rdma: %s endpoint qp 0x%x created", port.name.c_str(), c->local_.qpn);
    return c;
}

Connection::~Connection() { close(); }

RemoteQp Connection::local_qp() const { return local_; }

int Connection::connect(const RemoteQp &peer) {
    if (state_ != ConnState::created) {
        return -EINVAL;
    }
    int rc = qp_->to_rtr(peer);
    if (rc == 0) {
        rc = qp_->to_rts(local_.psn);
    }
    if (rc != 0) {
        fail(rc, "connect to qp " + std::to_string(peer.qpn) + " failed");
        return rc;
    }
    state_ = ConnState::connected;
    GP_DEBUG("rdma: qp 0x%x connected to qp 0x%x", local_.qpn, peer.qpn);
    return 0;
}

int Connection::progress(const CompletionHandler &handler, int max) {
    if (!cq_) {
        return 0;
    }
    Completion wc[16];
    int total = 0;
    while (total < max) {
        const int n = cq_->poll(std::span<Completion>(wc, static_cast<std::size_t>(
                                                             std::min(16, max - total))));
        if (n < 0) {
            fail(n, "poll_cq failed");
            return n;
        }
        for (int i = 0; i < n; ++i) {
            // A flush means the QP is in error: if we did not put it there
            // (link failure, async fatal event) it is an endpoint error too.
            if (wc[i].status != WcStatus::success) {
                fail(-EIO, std::string("completion error: ") + to_string(wc[i].status));
            }
            handler(wc[i]);
        }
        total += n;
        if (n < 16) {
            break;
        }
    }
    return total;
}

void Connection::fail(int code, const std::string &why) {
    if (state_ == ConnState::error || state_ == ConnState::closed) {
        return;
    }
    state_ = ConnState::error;
    GP_WARN("rdma: endpoint qp 0x%x error: %s", local_.qpn, why.c_str());
    if (qp_) {
        qp_->to_error();
    }
    if (on_error_) {
        on_error_(code, why);
    }
}

void Connection::close() {
    if (state_ == ConnState::closed) {
        return;
    }
    state_ = ConnState::closed;
    qp_.reset(); // before its CQ
    cq_.reset();
}

} // namespace gdrpipe::rdma
