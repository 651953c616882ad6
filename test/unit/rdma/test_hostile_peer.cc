// A peer that breaks the RDMA wire's protocol (security review M1, M5):
// what it sends is refused with a connection error, never a hang, unbounded
// growth or an oversized allocation.
#include "rdma_fixture.hpp"

#include <gdrpipe/rdma/ctrl_msg.hpp>

#include <cstring>
#include <thread>

using namespace rdma_test;
using namespace std::chrono_literals;
namespace td = gdrpipe::rdma::transfer_detail;

namespace {

std::vector<std::uint8_t> credit_msg(std::uint32_t id, std::uint32_t slot, std::uint32_t chunk) {
    td::CtrlMsg m;
    m.type = static_cast<std::uint32_t>(td::CtrlType::credit);
    m.imm = td::make_imm(false, id, slot, chunk);
    std::vector<std::uint8_t> b(sizeof(m));
    std::memcpy(b.data(), &m, sizeof(m));
    return b;
}

// A staged put of 3 chunks from a to b, one slot, b's stage-in slow (50 ms
// a chunk): the put stays in flight on both sides for a while.
struct SlowPut {
    static constexpr std::size_t n = 3 * 16384;
    // declared before the pair: b's copier may still be copying into them
    // when the pair is destroyed with the transfer cut off
    std::vector<std::uint8_t> owner = std::vector<std::uint8_t>(n, 0);
    std::vector<std::uint8_t> src;
    Pair p;
    RemoteKey key;
    Result r;
    explicit SlowPut(int seed) : src(pattern(n, seed)), p({}, config()) {
        p.b.in->set_delay(std::chrono::milliseconds(50));
        key = p.b.eng->expose({owner.data(), n}).value();
        REQUIRE(p.a.eng->put({src.data(), n}, key.addr, key, r.cb(), PathChoice::staged) == 0);
    }
    static TransferConfig config() {
        TransferConfig tc = Pair::small_config();
        tc.slots = 1;
        return tc;
    }
};

} // namespace

TEST_CASE("hostile peer: a credit for a slot already credited fails the link",
          "[rdma][hostile]") {
    Pair p;
    // nothing sent yet: every receive slot of the peer is credited to a
    REQUIRE(p.a.eng->state() == ConnState::connected);
    p.a.eng->handle_peer_control(credit_msg(1, 0, 0));
    CHECK(p.a.eng->state() == ConnState::error);
    CHECK(p.a.conn_errors == 1);
}

TEST_CASE("hostile peer: a second credit for one chunk fails the link, the transfer ends",
          "[rdma][hostile]") {
    SlowPut s(7);
    Pair &p = s.p;
    Result &r = s.r;
    // a's only chunk in flight waits in b's slow stage-in, so its slot is
    // not credited back yet
    REQUIRE(p.run_until([&] { return p.a.eng->stats().chunks_sent >= 1; }));
    // the slot's credit, early and then again: the second is one too many
    const auto c = credit_msg(0, 0, 0);
    p.a.eng->handle_peer_control(c);
    CHECK(p.a.eng->state() == ConnState::connected);
    p.a.eng->handle_peer_control(c);
    CHECK(p.a.eng->state() == ConnState::error);
    // the put completes (with an error) instead of waiting forever
    REQUIRE(p.run_until([&] { return r.done; }));
    CHECK(r.status != 0);
}

TEST_CASE("hostile peer: a second PUT_BEGIN for a put in flight fails the link",
          "[rdma][hostile]") {
    SlowPut s(9);
    Pair &p = s.p;
    const auto &key = s.key;
    const std::size_t n = s.n;
    // b's first chunk copy is slow, so the put's stream is in flight at b
    REQUIRE(p.run_until([&] { return p.b.eng->stats().chunks_received >= 1; }));
    // the same put announced again (a's first transfer has id 0)
    td::CtrlMsg m;
    m.type = static_cast<std::uint32_t>(td::CtrlType::put_begin);
    m.id = 0;
    m.key_id = key.key_id;
    m.addr = key.addr;
    m.len = n;
    m.token = key.token;
    std::vector<std::uint8_t> b(sizeof(m));
    std::memcpy(b.data(), &m, sizeof(m));
    CHECK(p.b.eng->state() == ConnState::connected);
    p.b.eng->handle_peer_control(b);
    // before: the stream was replaced while its copy ran (freed under it)
    CHECK(p.b.eng->state() == ConnState::error);
}

namespace {
// progresses a only (b stopped) until the put's callback ran or `ms` passed
bool run_a_only(Pair &p, const Result &r, int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!r.done && std::chrono::steady_clock::now() < end) {
        if (p.a.eng->progress() == 0) std::this_thread::sleep_for(200us);
    }
    return r.done;
}
} // namespace

TEST_CASE("a live peer that stops progressing: the connection fails after the stall timeout",
          "[rdma][hostile]") {
    const std::size_t n = 32 * 16384; // 8 x the slots: a needs b's credits
    std::vector<std::uint8_t> owner(n, 0);
    auto src = pattern(n, 3);
    TransferConfig tc = Pair::small_config();
    SECTION("without it (the default) the put waits") {
        Pair p({}, tc);
        auto key = p.b.eng->expose({owner.data(), n}).value();
        Result r;
        REQUIRE(p.a.eng->put({src.data(), n}, key.addr, key, r.cb(), PathChoice::staged) == 0);
        CHECK_FALSE(run_a_only(p, r, 300));
        CHECK(p.a.eng->state() == ConnState::connected);
        // b comes back: the put completes
        REQUIRE(p.run_until([&] { return r.done; }));
        CHECK(r.status == 0);
        CHECK(owner == src);
    }
    SECTION("with it, the put fails instead of waiting forever") {
        tc.stall_timeout_s = 0.05;
        Pair p({}, tc);
        auto key = p.b.eng->expose({owner.data(), n}).value();
        Result r;
        REQUIRE(p.a.eng->put({src.data(), n}, key.addr, key, r.cb(), PathChoice::staged) == 0);
        REQUIRE(run_a_only(p, r, 30000));
        CHECK(r.status != 0);
        CHECK(p.a.eng->state() == ConnState::error);
        CHECK(p.a.conn_errors == 1);
    }
    SECTION("with it, transfers that move complete") {
        tc.stall_timeout_s = 30;
        Pair p({}, tc);
        auto key = p.b.eng->expose({owner.data(), n}).value();
        for (int i = 0; i < 4; ++i) {
            Result r;
            REQUIRE(p.a.eng->put({src.data(), n}, key.addr, key, r.cb(), PathChoice::staged) == 0);
            REQUIRE(p.run_until([&] { return r.done; }));
            CHECK(r.status == 0);
        }
        CHECK(owner == src);
        CHECK(p.a.eng->state() == ConnState::connected);
    }
}

TEST_CASE("bounce areas give the peer no right to read them", "[rdma][hostile]") {
    const std::size_t n = 3 * 16384;
    std::vector<std::uint8_t> owner(n, 0);
    auto src = pattern(n, 5);
    Pair p;
    auto key = p.b.eng->expose({owner.data(), n}).value();
    Result r;
    REQUIRE(p.a.eng->put({src.data(), n}, key.addr, key, r.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return r.done; }));
    REQUIRE(r.status == 0);
    CHECK(owner == src);
    // every region now: both sides' receive slots and control buffers, a's
    // send slots, and what b exposed; only the exposed buffer may be read
    // remotely, only it and the receive slots written remotely
    // (registrations are page-aligned)
    const auto lo = reinterpret_cast<std::uintptr_t>(owner.data()) & ~std::uintptr_t{4095};
    const auto hi = (reinterpret_cast<std::uintptr_t>(owner.data()) + n + 4095) & ~std::uintptr_t{4095};
    int remote_write = 0;
    const auto mrs = p.fab.memory_regions();
    REQUIRE(mrs.size() >= 5);
    for (const auto &mr : mrs) {
        const auto a = reinterpret_cast<std::uintptr_t>(mr.addr);
        const bool in_exposed = a >= lo && a + mr.len <= hi;
        if (mr.access & gdrpipe::rdma::kAccessRemoteRead) CHECK(in_exposed);
        if ((mr.access & gdrpipe::rdma::kAccessRemoteWrite) && !in_exposed) ++remote_write;
    }
    CHECK(remote_write == 2); // the two receive areas
}

TEST_CASE("hostile peer: staging slots above the pin limit are refused at connect",
          "[rdma][hostile]") {
    FakeFabric fab;
    Side a, b;
    for (Side *s : {&a, &b}) {
        s->be = fab.backend();
        s->ctx = std::move(s->be->open(s->be->ports()[0]).value());
        s->pd = std::move(s->ctx->alloc_pd().value());
        s->reg = std::make_unique<Registrar>(*s->pd, DeviceRegHooks{}, RegistrarConfig{});
        TransferConfig tc = Pair::small_config();
        tc.out_copier = s->out;
        tc.in_copier = s->in;
        s->eng = std::move(TransferEngine::create(*s->ctx, *s->pd, *s->reg, tc).value());
    }
    // b's address as a peer would forge it: 1 GiB slots (the format's
    // maximum), which a's 4 send slots would have to match
    auto addr = b.eng->address();
    auto ep = unpack_ep_address(addr);
    REQUIRE(ep);
    EpAddress forged = ep.value();
    forged.stage_slot_size = kMaxStageSlotSize;
    CHECK(a.eng->connect(pack_ep_address(forged)) == -EINVAL);
    CHECK(a.eng->state() == ConnState::created);
    // the honest address still connects
    CHECK(a.eng->connect(addr) == 0);
}
