// Endpoint address blob and the connection state machine.
#include "rdma_fixture.hpp"

#include <gdrpipe/rdma/connection.hpp>

#include <cerrno>

using namespace rdma_test;

namespace {
EpAddress sample() {
    EpAddress a;
    a.qp.gid[0] = 0xfe;
    a.qp.gid[15] = 3;
    a.qp.lid = 17;
    a.qp.qpn = 0x1234;
    a.qp.psn = 0xabcdef;
    a.qp.mtu = 4096;
    a.stage_addr = 0x7f0000001000ull;
    a.stage_rkey = 0x55aa;
    a.stage_slots = 8;
    a.stage_slot_size = 1 << 20;
    return a;
}
} // namespace

TEST_CASE("ep address: pack/unpack round trip", "[rdma][address]") {
    const EpAddress a = sample();
    const auto blob = pack_ep_address(a);
    REQUIRE(blob.size() == kEpAddressSize);
    auto b = unpack_ep_address(blob);
    REQUIRE(b);
    CHECK(b->qp.gid == a.qp.gid);
    CHECK(b->qp.lid == a.qp.lid);
    CHECK(b->qp.qpn == a.qp.qpn);
    CHECK(b->qp.psn == a.qp.psn);
    CHECK(b->qp.mtu == a.qp.mtu);
    CHECK(b->stage_addr == a.stage_addr);
    CHECK(b->stage_rkey == a.stage_rkey);
    CHECK(b->stage_slots == a.stage_slots);
    CHECK(b->stage_slot_size == a.stage_slot_size);
}

TEST_CASE("ep address: truncated, padded and garbled blobs are refused", "[rdma][address]") {
    const auto blob = pack_ep_address(sample());
    for (std::size_t n = 0; n < blob.size(); ++n) {
        auto r = unpack_ep_address(std::span<const std::uint8_t>(blob.data(), n));
        REQUIRE_FALSE(r);
        CHECK(r.error().code == -EINVAL);
    }
    auto longer = blob;
    longer.push_back(0);
    CHECK_FALSE(unpack_ep_address(longer));
    // every single-bit flip anywhere is caught (magic, version, checksum)
    for (std::size_t i = 0; i < blob.size(); ++i) {
        for (int bit = 0; bit < 8; ++bit) {
            auto g = blob;
            g[i] ^= static_cast<std::uint8_t>(1u << bit);
            INFO("byte " << i << " bit " << bit);
            CHECK_FALSE(unpack_ep_address(g));
        }
    }
    const auto garbage = pattern(kEpAddressSize, 99);
    CHECK_FALSE(unpack_ep_address(garbage));
}

TEST_CASE("ep address: well-formed but invalid fields are refused", "[rdma][address]") {
    auto check_bad = [](EpAddress a) {
        auto r = unpack_ep_address(pack_ep_address(a));
        REQUIRE_FALSE(r);
        CHECK(r.error().code == -EINVAL);
    };
    EpAddress a = sample();
    a.qp.qpn = 0;
    check_bad(a);
    a = sample();
    a.qp.qpn = 1u << 24;
    check_bad(a);
    a = sample();
    a.qp.psn = 1u << 24;
    check_bad(a);
    a = sample();
    a.qp.mtu = 3000;
    check_bad(a);
    a = sample();
    a.qp.lid = 0;
    a.qp.gid = {};
    check_bad(a);
    a = sample();
    a.stage_slots = kMaxStageSlots + 1;
    check_bad(a);
    a = sample();
    a.stage_slot_size = 4097;
    check_bad(a);
    a = sample();
    a.stage_slots = 0; // staging fields must be all zero or all set
    check_bad(a);
    a = sample();
    a.stage_addr = ~0ull - 4096;
    check_bad(a);
}

TEST_CASE("connection: connect both ways, error state, release", "[rdma][connection]") {
    FakeFabric fab;
    auto be = fab.backend();
    auto ctx = std::move(be->open(be->ports().at(0)).value());
    auto pd = std::move(ctx->alloc_pd().value());
    int errs_a = 0, errs_b = 0;
    std::string why_a;
    auto ca = std::move(Connection::create(*ctx, *pd, {}, [&](int code, const std::string &w) {
                            ++errs_a;
                            why_a = w;
                            CHECK(code < 0);
                        }).value());
    auto cb = std::move(Connection::create(*ctx, *pd, {}, [&](int, const std::string &) { ++errs_b; })
                            .value());
    CHECK(ca->state() == ConnState::created);
    CHECK(ca->qp().state() == QpState::init);
    REQUIRE(ca->connect(cb->local_qp()) == 0);
    REQUIRE(cb->connect(ca->local_qp()) == 0);
    CHECK(ca->state() == ConnState::connected);
    CHECK(ca->qp().state() == QpState::rts);
    CHECK(ca->connect(cb->local_qp()) == -EINVAL); // only once

    // a send from a to b completes; then b's QP dies and a's next send fails
    std::vector<std::uint8_t> buf(64, 1);
    auto mr = std::move(pd->reg_mr(buf.data(), buf.size(), kAccessAll).value());
    Sge s{reinterpret_cast<std::uintptr_t>(buf.data()), 64, mr->lkey()};
    Sge r = s;
    REQUIRE(cb->qp().post_recv(1, {&r, 1}) == 0);
    REQUIRE(ca->qp().post_send(2, {&s, 1}, std::nullopt, true, false) == 0);
    std::vector<Completion> seen;
    auto handler = [&](const Completion &c) { seen.push_back(c); };
    const auto end = Clock::now() + std::chrono::seconds(5);
    while (seen.size() < 2 && Clock::now() < end) {
        ca->progress(handler);
        cb->progress(handler);
    }
    REQUIRE(seen.size() == 2);
    CHECK(errs_a == 0);

    REQUIRE(fab.force_qp_error(cb->qp().qp_num()));
    REQUIRE(ca->qp().post_send(3, {&s, 1}, std::nullopt, true, false) == 0);
    while (errs_a == 0 && Clock::now() < end) {
        ca->progress(handler);
    }
    CHECK(errs_a == 1);
    CHECK(ca->state() == ConnState::error);
    CHECK(ca->qp().state() == QpState::error);
    CHECK(why_a.find("retry") != std::string::npos);
    ca->fail(-EIO, "again"); // callback only once
    CHECK(errs_a == 1);
    ca->close();
    CHECK(ca->state() == ConnState::closed);
    CHECK(errs_b == 0); // b's QP was forced; b never polled an error
}

TEST_CASE("engine: a garbage peer address is refused, a good one still works after",
          "[rdma][connection]") {
    FakeFabric fab;
    auto be = fab.backend();
    auto ctx = std::move(be->open(be->ports().at(0)).value());
    auto pd = std::move(ctx->alloc_pd().value());
    Registrar reg(*pd, {});
    auto e1 = std::move(TransferEngine::create(*ctx, *pd, reg, Pair::small_config()).value());
    auto e2 = std::move(TransferEngine::create(*ctx, *pd, reg, Pair::small_config()).value());
    auto blob = e2->address();
    CHECK(e1->connect(std::span<const std::uint8_t>(blob.data(), 10)) == -EINVAL);
    auto bad = blob;
    bad[30] ^= 0x40;
    CHECK(e1->connect(bad) == -EINVAL);
    CHECK(e1->state() == ConnState::created);
    CHECK(e1->connect(blob) == 0);
    CHECK(e1->state() == ConnState::connected);
    CHECK(e1->connect(blob) == -EISCONN);
}
