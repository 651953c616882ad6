// The fake verbs device itself: the behaviour the layers above rely on.
#include <gdrpipe/rdma/fake_backend.hpp>

#include "gp_catch.hpp"

#include <cerrno>
#include <sys/mman.h>
#include <unistd.h>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

using namespace gdrpipe::rdma;

namespace {

struct Ep {
    std::unique_ptr<Backend> be;
    std::unique_ptr<Context> ctx;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<QueuePair> qp;
};

Ep make_ep(FakeFabric &f) {
    Ep e;
    e.be = f.backend();
    auto ports = e.be->ports();
    REQUIRE(ports.size() == 1);
    e.ctx = std::move(e.be->open(ports[0]).value());
    e.pd = std::move(e.ctx->alloc_pd().value());
    e.cq = std::move(e.ctx->create_cq(256).value());
    auto qp = e.pd->create_qp(*e.cq, *e.cq, QpCaps{});
    REQUIRE(qp);
    e.qp = std::move(qp.value());
    REQUIRE(e.qp->to_init() == 0);
    return e;
}

void connect(Ep &a, Ep &b) {
    RemoteQp ra{a.ctx->port().gid, a.ctx->port().lid, a.qp->qp_num(), 0, 1024};
    RemoteQp rb{b.ctx->port().gid, b.ctx->port().lid, b.qp->qp_num(), 0, 1024};
    REQUIRE(a.qp->to_rtr(rb) == 0);
    REQUIRE(a.qp->to_rts(0) == 0);
    REQUIRE(b.qp->to_rtr(ra) == 0);
    REQUIRE(b.qp->to_rts(0) == 0);
}

Completion wait_one(CompletionQueue &cq, int timeout_ms = 5000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    Completion c;
    while (std::chrono::steady_clock::now() < end) {
        if (cq.poll({&c, 1}) == 1) {
            return c;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    FAIL("no completion within the timeout");
    return c;
}

Sge sge(const std::vector<std::uint8_t> &v, const MemoryRegion &mr, std::size_t off = 0,
        std::size_t n = 0) {
    return Sge{reinterpret_cast<std::uintptr_t>(v.data()) + off,
               static_cast<std::uint32_t>(n ? n : v.size() - off), mr.lkey()};
}

} // namespace

TEST_CASE("fake: ports are named device:port and can be turned off", "[rdma][fake]") {
    FakeConfig fc;
    fc.devices = 2;
    fc.ports_per_device = 2;
    FakeFabric f(fc);
    auto ports = f.backend()->ports();
    REQUIRE(ports.size() == 4);
    CHECK(ports[0].name == "fake0:1");
    CHECK(ports[3].name == "fake1:2");
    FakeConfig off;
    off.ports_active = false;
    FakeFabric g(off);
    CHECK(g.backend()->ports().empty());
}

TEST_CASE("fake: RDMA write and read move bytes between registered regions", "[rdma][fake]") {
    FakeFabric f;
    Ep a = make_ep(f), b = make_ep(f);
    connect(a, b);
    std::vector<std::uint8_t> src(4096), dst(4096, 0);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7);
    auto ms = a.pd->reg_mr(src.data(), src.size(), kAccessAll).value();
    auto md = b.pd->reg_mr(dst.data(), dst.size(), kAccessAll).value();
    Sge s = sge(src, *ms, 100, 1000);
    REQUIRE(a.qp->post_write(1, {&s, 1}, md->iova() + 50, md->rkey(), std::nullopt, true) == 0);
    Completion c = wait_one(*a.cq);
    CHECK(c.status == WcStatus::success);
    CHECK(c.opcode == WcOpcode::rdma_write);
    CHECK(std::memcmp(dst.data() + 50, src.data() + 100, 1000) == 0);
    CHECK(dst[49] == 0);
    CHECK(dst[1050] == 0);

    std::vector<std::uint8_t> back(1000, 0);
    auto mb = a.pd->reg_mr(back.data(), back.size(), kAccessAll).value();
    Sge r = sge(back, *mb);
    REQUIRE(a.qp->post_read(2, {&r, 1}, md->iova() + 50, md->rkey(), true) == 0);
    c = wait_one(*a.cq);
    CHECK(c.status == WcStatus::success);
    CHECK(c.wr_id == 2);
    CHECK(std::memcmp(back.data(), src.data() + 100, 1000) == 0);
}

TEST_CASE("fake: out-of-bounds or unknown rkey -> rem_access_err, QP to error, later work flushed",
          "[rdma][fake]") {
    FakeFabric f;
    Ep a = make_ep(f), b = make_ep(f);
    connect(a, b);
    std::vector<std::uint8_t> src(256, 1), dst(256, 0);
    auto ms = a.pd->reg_mr(src.data(), src.size(), kAccessAll).value();
    auto md = b.pd->reg_mr(dst.data(), dst.size(), kAccessAll).value();
    Sge s = sge(src, *ms);
    bool oob = GENERATE(true, false);
    const std::uint64_t raddr = oob ? md->iova() + 1 : md->iova();
    const std::uint32_t rkey = oob ? md->rkey() : md->rkey() ^ 0x100u;
    REQUIRE(a.qp->post_write(1, {&s, 1}, raddr, rkey, std::nullopt, false) == 0);
    REQUIRE(a.qp->post_write(2, {&s, 1}, md->iova(), md->rkey(), std::nullopt, true) == 0);
    Completion c = wait_one(*a.cq); // reported although unsignaled: it failed
    CHECK(c.wr_id == 1);
    CHECK(c.status == WcStatus::rem_access_err);
    c = wait_one(*a.cq);
    CHECK(c.wr_id == 2);
    CHECK(c.status == WcStatus::wr_flush_err);
    CHECK(a.qp->state() == QpState::error);
    CHECK(dst[0] == 0);
    CHECK(f.stats().access_errors == 1);
}

TEST_CASE("fake: access rights and local keys are checked", "[rdma][fake]") {
    FakeFabric f;
    Ep a = make_ep(f), b = make_ep(f);
    connect(a, b);
    std::vector<std::uint8_t> src(64, 1), dst(64, 0);
    auto ms = a.pd->reg_mr(src.data(), src.size(), kAccessAll).value();
    SECTION("remote region without remote write") {
        auto md = b.pd->reg_mr(dst.data(), dst.size(), kAccessLocalWrite | kAccessRemoteRead).value();
        Sge s = sge(src, *ms);
        REQUIRE(a.qp->post_write(1, {&s, 1}, md->iova(), md->rkey(), std::nullopt, true) == 0);
        CHECK(wait_one(*a.cq).status == WcStatus::rem_access_err);
    }
    SECTION("local SGE with a key of another PD") {
        auto md = b.pd->reg_mr(dst.data(), dst.size(), kAccessAll).value();
        Sge s{reinterpret_cast<std::uintptr_t>(dst.data()), 64, md->lkey()};
        REQUIRE(a.qp->post_write(1, {&s, 1}, md->iova(), md->rkey(), std::nullopt, true) == 0);
        CHECK(wait_one(*a.cq).status == WcStatus::loc_prot_err);
    }
}

TEST_CASE("fake: SEND and WRITE_WITH_IMM consume receives, in order", "[rdma][fake]") {
    FakeFabric f;
    Ep a = make_ep(f), b = make_ep(f);
    connect(a, b);
    std::vector<std::uint8_t> src(64), rbuf(64, 0), dst(64, 0);
    for (std::size_t i = 0; i < 64; ++i) src[i] = static_cast<std::uint8_t>(i + 1);
    auto ms = a.pd->reg_mr(src.data(), 64, kAccessAll).value();
    auto mr = b.pd->reg_mr(rbuf.data(), 64, kAccessAll).value();
    auto md = b.pd->reg_mr(dst.data(), 64, kAccessAll).value();
    Sge s = sge(src, *ms, 0, 16);
    // the write-with-imm waits for a receive (rnr retry): post it first
    REQUIRE(a.qp->post_write(1, {&s, 1}, md->iova(), md->rkey(), 0xabcdu, true) == 0);
    REQUIRE(a.qp->post_send(2, {&s, 1}, 7u, true, false) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    Completion none;
    CHECK(b.cq->poll({&none, 1}) == 0);
    Sge r = sge(rbuf, *mr);
    REQUIRE(b.qp->post_recv(10, {&r, 1}) == 0);
    REQUIRE(b.qp->post_recv(11, {&r, 1}) == 0);
    Completion c1 = wait_one(*b.cq);
    Completion c2 = wait_one(*b.cq);
    CHECK(c1.wr_id == 10);
    CHECK(c1.opcode == WcOpcode::recv_rdma_with_imm);
    CHECK(c1.imm == 0xabcdu);
    CHECK(c1.byte_len == 16);
    CHECK(c2.wr_id == 11);
    CHECK(c2.opcode == WcOpcode::recv);
    CHECK(c2.imm == 7u);
    CHECK(std::memcmp(dst.data(), src.data(), 16) == 0);
    CHECK(std::memcmp(rbuf.data(), src.data(), 16) == 0);
    CHECK(wait_one(*a.cq).wr_id == 1);
    CHECK(wait_one(*a.cq).wr_id == 2);
}

TEST_CASE("fake: registration faults", "[rdma][fake]") {
    FakeFabric f;
    Ep a = make_ep(f);
    std::vector<std::uint8_t> buf(1 << 16);
    SECTION("injected failures") {
        f.fail_next_registrations(2, -EIO);
        CHECK(a.pd->reg_mr(buf.data(), 10, kAccessAll).error().code == -EIO);
        CHECK(a.pd->reg_mr(buf.data(), 10, kAccessAll).error().code == -EIO);
        CHECK(a.pd->reg_mr(buf.data(), 10, kAccessAll));
    }
    SECTION("MR limit") {
        f.set_max_mrs(2);
        auto m1 = a.pd->reg_mr(buf.data(), 10, kAccessAll);
        auto m2 = a.pd->reg_mr(buf.data() + 100, 10, kAccessAll);
        REQUIRE(m1);
        REQUIRE(m2);
        CHECK(a.pd->reg_mr(buf.data() + 200, 10, kAccessAll).error().code == -ENOMEM);
        m1.value().reset();
        CHECK(a.pd->reg_mr(buf.data() + 200, 10, kAccessAll));
    }
    SECTION("device memory: reg_mr needs peermem, dma-buf needs support") {
        f.add_device_memory(buf.data(), buf.size());
        CHECK(a.pd->reg_mr(buf.data(), 10, kAccessAll).error().code == -EFAULT);
        f.set_peermem(true);
        CHECK(a.pd->reg_mr(buf.data(), 10, kAccessAll));
        const int fd = f.export_dmabuf(buf.data(), buf.size());
        REQUIRE(fd >= 0);
        CHECK(a.pd->reg_dmabuf_mr(fd, 0, buf.size() + 1, 0x1000, kAccessAll).error().code == -EINVAL);
        auto mr = a.pd->reg_dmabuf_mr(fd, 4096, 4096, 0x1000, kAccessAll);
        REQUIRE(mr);
        CHECK(mr.value()->iova() == 0x1000);
        f.set_dmabuf_supported(false);
        CHECK(a.pd->reg_dmabuf_mr(fd, 0, 4096, 0x1000, kAccessAll).error().code == -EOPNOTSUPP);
        f.close_dmabuf(fd);
        CHECK(f.export_dmabuf(buf.data() + 1, buf.size()) == -EINVAL);
    }
}

TEST_CASE("fake: a QP forced to error flushes posted receives", "[rdma][fake]") {
    FakeFabric f;
    Ep a = make_ep(f), b = make_ep(f);
    connect(a, b);
    std::vector<std::uint8_t> buf(64);
    auto mr = b.pd->reg_mr(buf.data(), 64, kAccessAll).value();
    Sge r = sge(buf, *mr);
    REQUIRE(b.qp->post_recv(5, {&r, 1}) == 0);
    REQUIRE(f.force_qp_error(b.qp->qp_num()));
    Completion c = wait_one(*b.cq);
    CHECK(c.wr_id == 5);
    CHECK(c.status == WcStatus::wr_flush_err);
    // the peer's next operation finds a dead responder
    auto ma = a.pd->reg_mr(buf.data(), 64, kAccessAll).value();
    Sge s = sge(buf, *ma);
    REQUIRE(a.qp->post_send(1, {&s, 1}, std::nullopt, true, false) == 0);
    CHECK(wait_one(*a.cq).status == WcStatus::retry_exc_err);
}

TEST_CASE("fake: a real dma-buf descriptor is imported by mapping it at its position",
          "[rdma][fake]") {
    // the CUDA simulator's convention: a memfd whose file position is where
    // the exported range starts
    FakeFabric f;
    Ep a = make_ep(f), b = make_ep(f);
    connect(a, b);
    const int fd = memfd_create("gp-fake-dmabuf", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, 1 << 20) == 0);
    REQUIRE(lseek(fd, 64 << 10, SEEK_SET) == (64 << 10));
    const std::uint64_t iova = 0x7f0000000000ull;
    auto mr = b.pd->reg_dmabuf_mr(fd, 4096 + 100, 8192, iova, kAccessAll);
    REQUIRE(mr);
    CHECK(f.stats().dmabuf_regs == 1);
    // beyond the file: refused
    CHECK(b.pd->reg_dmabuf_mr(fd, 1 << 20, 4096, iova, kAccessAll).error().code == -EINVAL);
    // not a descriptor at all
    CHECK(b.pd->reg_dmabuf_mr(987654, 0, 4096, iova, kAccessAll).error().code == -EBADF);

    std::vector<std::uint8_t> src(8192);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 13 + 1);
    auto ms = a.pd->reg_mr(src.data(), src.size(), kAccessAll).value();
    Sge s = sge(src, *ms, 0, 5000);
    REQUIRE(a.qp->post_write(1, {&s, 1}, iova + 10, mr.value()->rkey(), std::nullopt, true) == 0);
    CHECK(wait_one(*a.cq).status == WcStatus::success);
    std::vector<std::uint8_t> got(5000);
    REQUIRE(pread(fd, got.data(), got.size(), (64 << 10) + 4096 + 100 + 10) == 5000);
    CHECK(std::memcmp(got.data(), src.data(), 5000) == 0);
    mr.value().reset(); // unmaps
    close(fd);
}
