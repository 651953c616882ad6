// Staged path: chunk pipeline through bounce slots with credits.
#include "rdma_fixture.hpp"

#include <cerrno>

using namespace rdma_test;
using namespace std::chrono_literals;

TEST_CASE("staged: put and get are byte-exact across chunk boundaries", "[rdma][staged]") {
    Pair p; // 16 KiB slots, 4 slots
    std::vector<std::uint8_t> owner(400000, 0);
    auto key = p.b.eng->expose({owner.data(), owner.size()}).value();
    const std::size_t sizes[] = {1, 4096, 16383, 16384, 16385, 65536, 100001, 16384 * 20 + 7};
    unsigned seed = 100;
    for (std::size_t n : sizes) {
        const std::size_t off = (seed * 37) % 1000;
        auto src = pattern(n, seed++);
        Result put;
        REQUIRE(p.a.eng->put({src.data(), n}, key.addr + off, key, put.cb(), PathChoice::staged) == 0);
        REQUIRE(p.run_until([&] { return put.done; }));
        REQUIRE(put.status == 0);
        REQUIRE(std::memcmp(owner.data() + off, src.data(), n) == 0);
        std::vector<std::uint8_t> back(n, 0);
        Result get;
        REQUIRE(p.a.eng->get({back.data(), n}, key.addr + off, key, get.cb(), PathChoice::staged) == 0);
        REQUIRE(p.run_until([&] { return get.done; }));
        REQUIRE(get.status == 0);
        REQUIRE(back == src);
    }
    REQUIRE(p.drain());
    const auto st = p.a.eng->stats();
    CHECK(st.staged == 2 * std::size(sizes));
    CHECK(st.direct == 0);
    CHECK(st.chunks_sent == p.b.eng->stats().chunks_received);
}

TEST_CASE("staged: automatic path choice follows the caller's threshold", "[rdma][staged]") {
    TransferConfig tc = Pair::small_config();
    tc.direct_threshold = 10000;
    Pair p({}, tc);
    std::vector<std::uint8_t> owner(100000, 0);
    auto key = p.b.eng->expose({owner.data(), owner.size()}).value();
    auto src = pattern(50000, 1);
    Result r1, r2;
    REQUIRE(p.a.eng->put({src.data(), 9999}, key.addr, key, r1.cb()) == 0);
    REQUIRE(p.a.eng->put({src.data(), 50000}, key.addr, key, r2.cb()) == 0);
    REQUIRE(p.run_until([&] { return r1.done && r2.done; }));
    CHECK(r1.status == 0);
    CHECK(r2.status == 0);
    CHECK(p.a.eng->stats().direct == 1);
    CHECK(p.a.eng->stats().staged == 1);
    CHECK(std::memcmp(owner.data(), src.data(), 50000) == 0);
}

TEST_CASE("staged: D2H, wire and H2D overlap", "[rdma][staged][timing]") {
    // 12 chunks; each stage step 20 ms, the wire 15 ms per chunk. Done one
    // after another that is 12 * (20 + 15 + 20) = 660 ms (plus credit trips);
    // pipelined about (12 + 2) * 20 = 280 ms. Whether the stages overlapped
    // is read from the copiers themselves (two of them copying at once), not
    // from the wall time, which a loaded machine stretches; the wall time is
    // reported.
    FakeConfig fc;
    fc.latency_us = 15000;
    std::atomic<int> active{0}, peak{0};
    Pair p(fc);
    const auto step = 20ms;
    for (Side *s : {&p.a, &p.b}) {
        s->out->set_delay(step);
        s->in->set_delay(step);
        s->out->share_activity(&active, &peak);
        s->in->share_activity(&active, &peak);
    }
    const std::size_t n = 12 * 16384;
    std::vector<std::uint8_t> owner(n, 0);
    auto key = p.b.eng->expose({owner.data(), n}).value();
    auto src = pattern(n, 9);
    Result r;
    const auto t0 = Clock::now();
    REQUIRE(p.a.eng->put({src.data(), n}, key.addr, key, r.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return r.done; }));
    const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    REQUIRE(r.status == 0);
    CHECK(std::memcmp(owner.data(), src.data(), n) == 0);
    const auto serial = 12 * (step + 15ms + step);
    INFO("wall " << wall.count() << " ms (serial " << serial.count() << " ms, pipelined ~280 ms)");
    CHECK(wall >= 12 * step); // every stage step really ran
    CHECK(peak.load() >= 2);  // and stages ran at once
}

TEST_CASE("staged: both directions at once", "[rdma][staged]") {
    Pair p;
    const std::size_t n = 200000;
    std::vector<std::uint8_t> at_a(n, 0), at_b(n, 0);
    auto ka = p.a.eng->expose({at_a.data(), n}).value();
    auto kb = p.b.eng->expose({at_b.data(), n}).value();
    auto sa = pattern(n, 21), sb = pattern(n, 22);
    std::vector<std::uint8_t> ga(n / 2), gb(n / 2);
    Result ra, rb;
    REQUIRE(p.a.eng->put({sa.data(), n}, kb.addr, kb, ra.cb(), PathChoice::staged) == 0);
    REQUIRE(p.b.eng->put({sb.data(), n}, ka.addr, ka, rb.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return ra.done && rb.done; }));
    CHECK(ra.status == 0);
    CHECK(rb.status == 0);
    CHECK(at_b == sa);
    CHECK(at_a == sb);
    // gets in both directions, concurrently with each other
    Result ga_r, gb_r;
    REQUIRE(p.a.eng->get({ga.data(), n / 2}, kb.addr + 1, kb, ga_r.cb(), PathChoice::staged) == 0);
    REQUIRE(p.b.eng->get({gb.data(), n / 2}, ka.addr + 2, ka, gb_r.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return ga_r.done && gb_r.done; }));
    CHECK(ga_r.status == 0);
    CHECK(gb_r.status == 0);
    CHECK(std::memcmp(ga.data(), sa.data() + 1, n / 2) == 0);
    CHECK(std::memcmp(gb.data(), sb.data() + 2, n / 2) == 0);
    REQUIRE(p.drain());
}

TEST_CASE("staged: QP error mid-transfer -> error completion and cleanup", "[rdma][staged]") {
    FakeConfig fc;
    fc.latency_us = 500;
    // declared before the pair: its copier threads may still be copying
    // into them when the pair is destroyed with the transfer cut off
    const std::size_t n = 40 * 16384;
    std::vector<std::uint8_t> owner(n, 0);
    auto src = pattern(n, 4);
    Pair p(fc);
    for (Side *s : {&p.a, &p.b}) s->out->set_delay(1ms);
    auto key = p.b.eng->expose({owner.data(), n}).value();
    Result r1, r2;
    REQUIRE(p.a.eng->put({src.data(), n}, key.addr, key, r1.cb(), PathChoice::staged) == 0);
    // queued behind the first one: it cannot finish before the failure
    REQUIRE(p.a.eng->put({src.data(), 100}, key.addr, key, r2.cb(), PathChoice::staged) == 0);
    // let a few chunks through, then kill the requester's QP
    REQUIRE(p.run_until([&] { return p.b.eng->stats().chunks_received >= 3; }));
    REQUIRE(p.fab.force_qp_error(p.a.eng->qp_num()));
    REQUIRE(p.run_until([&] { return r1.done && r2.done; }));
    CHECK(r1.status == -ECONNRESET);
    CHECK(r2.status == -ECONNRESET);
    CHECK(p.a.conn_errors == 1);
    CHECK(p.a.eng->state() == ConnState::error);
    CHECK(p.a.eng->stats().errors == 2);
    CHECK(p.run_until([&] { return p.a.eng->idle(); }));
    // the engines can be destroyed with the peer stuck mid-transfer
}

TEST_CASE("staged: ranges the owner did not expose are refused (NACK), link survives",
          "[rdma][staged]") {
    Pair p;
    std::vector<std::uint8_t> owner(100000, 0);
    auto key = p.b.eng->expose({owner.data(), 50000}).value();
    auto src = pattern(60000, 8);
    RemoteKey forged = key;
    forged.len = 100000; // claims more than was exposed
    forged.rkey = 0;     // force the staged path
    Result r1, r2, r3;
    REQUIRE(p.a.eng->put({src.data(), 60000}, key.addr, forged, r1.cb()) == 0);
    std::vector<std::uint8_t> back(60000);
    REQUIRE(p.a.eng->get({back.data(), 60000}, key.addr, forged, r2.cb()) == 0);
    REQUIRE(p.run_until([&] { return r1.done && r2.done; }));
    CHECK(r1.status == -EACCES);
    CHECK(r2.status == -EACCES);
    CHECK(std::all_of(owner.begin() + 50000, owner.end(), [](std::uint8_t b) { return b == 0; }));
    CHECK(p.b.eng->stats().nacks_sent == 2);
    // unknown key id
    RemoteKey unknown = key;
    unknown.rkey = 0;
    unknown.key_id += 77;
    REQUIRE(p.a.eng->put({src.data(), 100}, key.addr, unknown, r3.cb()) == 0);
    REQUIRE(p.run_until([&] { return r3.done; }));
    CHECK(r3.status == -EACCES);
    // the connection is fine
    Result ok;
    REQUIRE(p.a.eng->put({src.data(), 40000}, key.addr, key, ok.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return ok.done; }));
    CHECK(ok.status == 0);
    CHECK(std::memcmp(owner.data(), src.data(), 40000) == 0);
    CHECK(p.a.conn_errors == 0);
    REQUIRE(p.drain());
    // after unexpose the key is refused too
    p.b.eng->unexpose(key.key_id);
    Result gone;
    REQUIRE(p.a.eng->put({src.data(), 100}, key.addr, key, gone.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return gone.done; }));
    CHECK(gone.status == -EACCES);
}

// Review finding M4: key ids count up and are easy to guess; a staged
// request must also carry the exposure's secret token, which only the
// holders of its RemoteKey have.
TEST_CASE("staged: a live exposure's key id without its token is refused", "[rdma][staged]") {
    Pair p;
    std::vector<std::uint8_t> given(4096, 0), other(4096, 0);
    auto gkey = p.b.eng->expose({given.data(), given.size()}).value();
    auto okey = p.b.eng->expose({other.data(), other.size()}).value();
    CHECK(gkey.token != 0);
    CHECK(okey.token != 0);
    CHECK(gkey.token != okey.token);
    auto src = pattern(4096, 5);
    for (std::uint64_t token : {gkey.token, okey.token ^ 1, okey.token + 1}) {
        RemoteKey guessed = okey; // id, address and length right
        guessed.rkey = 0;         // the staged path
        guessed.token = token;
        Result put, get;
        REQUIRE(p.a.eng->put({src.data(), 4096}, okey.addr, guessed, put.cb()) == 0);
        std::vector<std::uint8_t> back(4096, 1);
        REQUIRE(p.a.eng->get({back.data(), 4096}, okey.addr, guessed, get.cb()) == 0);
        REQUIRE(p.run_until([&] { return put.done && get.done; }));
        CHECK(put.status == -EACCES);
        CHECK(get.status == -EACCES);
        CHECK(std::all_of(back.begin(), back.end(), [](std::uint8_t b) { return b == 1; }));
    }
    CHECK(std::all_of(other.begin(), other.end(), [](std::uint8_t b) { return b == 0; }));
    // a remote key without a token does not even unpack
    RemoteKey none = okey;
    none.token = 0;
    CHECK(!unpack_remote_key(pack_remote_key(none)));
    CHECK(unpack_remote_key(pack_remote_key(okey)).value().token == okey.token);
    // with its own token the same request is served
    RemoteKey own = okey;
    own.rkey = 0;
    Result ok;
    REQUIRE(p.a.eng->put({src.data(), 4096}, okey.addr, own, ok.cb()) == 0);
    REQUIRE(p.run_until([&] { return ok.done; }));
    CHECK(ok.status == 0);
    CHECK(std::memcmp(other.data(), src.data(), 4096) == 0);
    CHECK(p.a.conn_errors == 0);
    REQUIRE(p.drain());
}

TEST_CASE("staged: a failing stage step fails that transfer only", "[rdma][staged]") {
    Pair p;
    std::vector<std::uint8_t> owner(100000, 0);
    auto key = p.b.eng->expose({owner.data(), owner.size()}).value();
    auto src = pattern(100000, 2);
    SECTION("stage out (D2H) fails") { p.a.out->fail_next = 1; }
    SECTION("stage in (H2D) fails") { p.b.in->fail_next = 1; }
    Result bad;
    REQUIRE(p.a.eng->put({src.data(), 100000}, key.addr, key, bad.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return bad.done; }));
    CHECK(bad.status == -EIO);
    REQUIRE(p.drain());
    Result good;
    REQUIRE(p.a.eng->put({src.data(), 100000}, key.addr, key, good.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return good.done; }));
    CHECK(good.status == 0);
    CHECK(std::memcmp(owner.data(), src.data(), 100000) == 0);
    CHECK(p.a.conn_errors == 0);
}

TEST_CASE("staged: a copy failing mid-stream fails that transfer only (put and get)",
          "[rdma][staged][pipe]") {
    Pair p; // 16 KiB slots: 100000 bytes are 7 chunks
    std::vector<std::uint8_t> owner(100000, 0);
    auto key = p.b.eng->expose({owner.data(), owner.size()}).value();
    auto src = pattern(100000, 12);
    std::vector<std::uint8_t> back(100000, 0);
    bool get = false;
    SECTION("put: 5th D2H at the requester") { p.a.out->fail_skip = 4; p.a.out->fail_next = 1; }
    SECTION("put: 5th H2D at the owner") { p.b.in->fail_skip = 4; p.b.in->fail_next = 1; }
    SECTION("get: 5th D2H at the owner") {
        get = true;
        p.b.out->fail_skip = 4;
        p.b.out->fail_next = 1;
    }
    SECTION("get: 5th H2D at the requester") {
        get = true;
        p.a.in->fail_skip = 4;
        p.a.in->fail_next = 1;
    }
    Result bad;
    if (get) {
        REQUIRE(p.a.eng->get({back.data(), back.size()}, key.addr, key, bad.cb(), PathChoice::staged) == 0);
    } else {
        REQUIRE(p.a.eng->put({src.data(), src.size()}, key.addr, key, bad.cb(), PathChoice::staged) == 0);
    }
    REQUIRE(p.run_until([&] { return bad.done; }));
    CHECK(bad.status == -EIO);
    REQUIRE(p.drain());
    CHECK(p.a.conn_errors == 0);
    CHECK(p.b.conn_errors == 0);
    // every slot and credit came back: a full-size transfer each way works
    Result good_put, good_get;
    REQUIRE(p.a.eng->put({src.data(), src.size()}, key.addr, key, good_put.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return good_put.done; }));
    CHECK(good_put.status == 0);
    REQUIRE(p.a.eng->get({back.data(), back.size()}, key.addr, key, good_get.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return good_get.done; }));
    CHECK(good_get.status == 0);
    CHECK(back == src);
    REQUIRE(p.drain());
}

TEST_CASE("staged: out of credit, streams share one slot each way", "[rdma][staged][pipe]") {
    TransferConfig tc = Pair::small_config();
    tc.slots = 1; // one send slot and one receive slot per side
    Pair p({}, tc);
    const std::size_t n = 5 * 16384 + 11;
    std::vector<std::uint8_t> at_b(4 * n, 0);
    const auto tail = pattern(n, 50); // what the get reads, concurrently with the puts
    std::memcpy(at_b.data() + 3 * n, tail.data(), n);
    auto kb = p.b.eng->expose({at_b.data(), at_b.size()}).value();
    std::vector<std::vector<std::uint8_t>> srcs;
    for (unsigned i = 0; i < 3; ++i) srcs.push_back(pattern(n, 40 + i));
    Result r[3];
    for (unsigned i = 0; i < 3; ++i) {
        REQUIRE(p.a.eng->put({srcs[i].data(), n}, kb.addr + i * n, kb, r[i].cb(), PathChoice::staged) == 0);
    }
    std::vector<std::uint8_t> back(n);
    Result g;
    REQUIRE(p.a.eng->get({back.data(), n}, kb.addr + 3 * n, kb, g.cb(), PathChoice::staged) == 0);
    REQUIRE(p.run_until([&] { return r[0].done && r[1].done && r[2].done && g.done; }));
    for (unsigned i = 0; i < 3; ++i) {
        CHECK(r[i].status == 0);
        CHECK(std::memcmp(at_b.data() + i * n, srcs[i].data(), n) == 0);
    }
    CHECK(g.status == 0);
    CHECK(back == tail);
    CHECK(p.a.eng->stats().chunks_sent == 3 * 6);
    CHECK(p.b.eng->stats().chunks_sent == 6);
    REQUIRE(p.drain());
}

TEST_CASE("staged: engines destroyed with chunk copies in flight wait for them",
          "[rdma][staged][pipe]") {
    auto p = std::make_unique<Pair>();
    for (Side *s : {&p->a, &p->b}) {
        s->out->set_delay(std::chrono::milliseconds(5));
        s->in->set_delay(std::chrono::milliseconds(5));
    }
    const std::size_t n = 30 * 16384;
    auto owner = std::make_unique<std::vector<std::uint8_t>>(n, 0);
    auto key = p->b.eng->expose({owner->data(), n}).value();
    auto src = pattern(n, 3);
    Result put;
    REQUIRE(p->a.eng->put({src.data(), n}, key.addr, key, put.cb(), PathChoice::staged) == 0);
    REQUIRE(p->run_until([&] { return p->b.eng->stats().chunks_received >= 3; }));
    const int copies_before = p->b.in->copies.load();
    // both sides still have copies queued or running on their copiers
    p->b.eng.reset();
    p->a.eng.reset();
    CHECK(!put.done); // destroyed engines run no callbacks
    CHECK(p->b.in->copies.load() >= copies_before);
    p.reset();
}
