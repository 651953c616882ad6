// The direct and staged data paths between two processes, on the CUDA-driver
// simulator (2 devices).
#include "server.hpp"

#include "gdrpipe/pipeline/control.hpp"
#include "gdrpipe/wire/shm_iface.hpp"

#include <cerrno>
#include <random>
#include <set>

using namespace pt;

namespace {

const size_t kMiB = size_t(1) << 20;

std::vector<gp_xfer_config_t> three_engines() {
    // [0] forced direct, [1] forced staged, [2] auto with a 1 MiB threshold
    return {config(GP_PATH_DIRECT), config(GP_PATH_STAGED), config(GP_PATH_AUTO, kMiB)};
}

} // namespace

TEST_CASE("rkeys: truncated or garbage keys are rejected", "[pipeline]") {
    gp_rkey_t k{};
    k.kind = GP_RKEY_CUDA_IPC;
    k.pid = 1234;
    k.handle_fd = -1;
    k.base = 0x10000;
    k.length = 4096;
    gp_rkey_seal(&k);
    REQUIRE(gp_rkey_check(&k) == nullptr);
    gp_rkey_t t = k;
    std::memset(reinterpret_cast<char *>(&t) + sizeof(t) / 2, 0, sizeof(t) - sizeof(t) / 2);
    REQUIRE(gp_rkey_check(&t) != nullptr); // truncated
    std::mt19937 rng(7);
    for (int i = 0; i < 100; ++i) {
        gp_rkey_t g;
        for (size_t b = 0; b < sizeof(g); ++b) reinterpret_cast<uint8_t *>(&g)[b] = uint8_t(rng());
        REQUIRE(gp_rkey_check(&g) != nullptr);
        gp_rkey_t f = k; // one flipped byte
        reinterpret_cast<uint8_t *>(&f)[rng() % offsetof(gp_rkey_t, checksum)] ^= 0x5a;
        REQUIRE(gp_rkey_check(&f) != nullptr);
    }
}

TEST_CASE("control messages: validation", "[pipeline]") {
    using namespace gdrpipe::pipeline;
    CtrlMsg m{};
    m.type = kStageOut;
    m.req_pid = 100;
    m.seg_fd = 3;
    m.depth = 4;
    m.chunk = 256 << 10;
    m.xfer_id = 1;
    m.remote_addr = 0x1000;
    m.length = 10;
    ctrl_seal(m);
    REQUIRE(ctrl_check(&m, sizeof(m)) == nullptr);
    REQUIRE(ctrl_check(&m, sizeof(m) - 1) != nullptr);
    CtrlMsg b = m;
    b.length = 0;
    ctrl_seal(b);
    REQUIRE(ctrl_check(&b, sizeof(b)) != nullptr);
    b = m;
    b.chunk = 1000; // below 64 KiB
    ctrl_seal(b);
    REQUIRE(ctrl_check(&b, sizeof(b)) != nullptr);
    b = m;
    b.remote_addr = ~uint64_t(0) - 4; // overflows
    ctrl_seal(b);
    REQUIRE(ctrl_check(&b, sizeof(b)) != nullptr);
    b = m;
    b.xfer_id = 2; // not resealed
    REQUIRE(ctrl_check(&b, sizeof(b)) != nullptr);
}

TEST_CASE("paths x directions x sizes x memory kinds", "[pipeline][sim]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, three_engines())) return rc;
        const size_t sizes[] = {0, 1, 4095, 64 << 10, kMiB + 3, 8 * kMiB};
        const int combos[][2] = {{kDev0, kDev0}, {kDev0, kDev1}, {kHost, kDev0}, {kDev1, kHost},
                                 {kHost, kHost}, {kDev0, kVmm0}, {kDev1, kPool1}};
        uint64_t seed = 1;
        auto t0 = Clock::now();
        for (size_t e = 0; e < 3; ++e) {
            for (auto &cb : combos) {
                for (size_t len : sizes) {
                    // 8 MiB for device-device pairs only (keeps the test short)
                    if (len > kMiB && (cb[0] == kHost || cb[1] == kHost)) continue;
                    if (int rc = get_put(n, e, cb[0], cb[1], len, seed++)) return rc;
                }
            }
            // one larger transfer, device to device across devices
            if (int rc = get_put(n, e, kDev0, kDev1, 24 * kMiB + 5, seed++)) return rc;
        }
        double dt = std::chrono::duration<double>(Clock::now() - t0).count();
        auto d = n.eng(0)->stats(), s = n.eng(1)->stats(), au = n.eng(2)->stats();
        std::fprintf(stderr, "matrix: %.2f s\n  direct engine: %s\n  staged engine: %s\n"
                             "  auto engine: %s\n", dt,
                     gdrpipe::pipeline::format_stats(d).c_str(),
                     gdrpipe::pipeline::format_stats(s).c_str(),
                     gdrpipe::pipeline::format_stats(au).c_str());
        PT_CHECK(d.direct.xfers > 0);
        PT_CHECK(d.fallbacks > 0); // default-pool memory: staged only
        PT_CHECK(s.direct.xfers == 0 && s.staged.xfers > 0);
        PT_CHECK(au.direct.xfers > 0 && au.staged.xfers > 0);
        PT_CHECK(d.failed == 0 && s.failed == 0 && au.failed == 0);
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    REQUIRE(run_pair(a, b, 60) == "");
}

TEST_CASE("both directions at once between the same processes", "[pipeline][sim]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, three_engines())) return rc;
        const size_t sizes[] = {4095, kMiB + 3, 8 * kMiB};
        uint64_t seed = 100;
        for (size_t e = 0; e < 3; ++e) {
            for (size_t len : sizes) {
                for (int is_get = 0; is_get < 2; ++is_get) {
                    // my buffer for B's transfer
                    Buf mine;
                    void *reg = nullptr;
                    gp_rkey_t mk;
                    char err[128];
                    PT_CHECK(buf_alloc(mine, kDev1, len));
                    PT_CHECK(is_get ? buf_fill(mine, seed) : buf_zero(mine));
                    PT_CHECK(gp_mem_register(mine.p, len, 42, &mk, &reg, err, sizeof(err)) == 0);
                    // B's buffer for my transfer
                    Reply r;
                    PT_CHECK(remote_alloc(n, kDev0, len, seed + 1, is_get != 0, &r));
                    Cmd c;
                    c.op = kXfer;
                    c.where = kDev0;
                    c.flag = is_get;
                    c.engine = int(e);
                    c.len = len;
                    c.seed = seed;
                    c.addr = reinterpret_cast<uint64_t>(mine.p);
                    c.rkey = mk;
                    PT_CHECK(n.send_all(&c, sizeof(c))); // B starts its transfer
                    Buf l;
                    PT_CHECK(buf_alloc(l, kDev0, len));
                    PT_CHECK(is_get ? buf_zero(l) : buf_fill(l, seed + 1));
                    int st = xfer(n, e, is_get != 0, l.p, len, r.addr, r.rkey);
                    PT_CHECK(st == 0);
                    Reply br;
                    PT_CHECK(n.recv_all(&br, sizeof(br)));
                    PT_CHECK(br.status == 0);
                    if (is_get) {
                        PT_CHECK(buf_check(l, seed + 1));
                    } else {
                        PT_CHECK(buf_check(mine, seed));
                        PT_CHECK(remote_check(n, r.addr, seed + 1));
                    }
                    PT_CHECK(remote_free(n, r.addr));
                    gp_mem_deregister(reg);
                    buf_free(mine);
                    buf_free(l);
                    seed += 2;
                }
            }
        }
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, three_engines()); };
    REQUIRE(run_pair(a, b, 60) == "");
}

TEST_CASE("nopeer topology: direct impossible across devices, staged instead", "[pipeline][sim]") {
    SKIP_UNLESS_SIM_MODEL();
    const SimTopo topo("nopeer");
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_DIRECT)})) return rc;
        PT_CHECK(!gdrpipe::cuda::devices().can_access_peer(0, 1));
        for (size_t len : {size_t(4095), kMiB + 3, 8 * kMiB}) {
            if (int rc = get_put(n, 0, kDev0, kDev1, len, len)) return rc;
        }
        auto s = n.eng()->stats();
        PT_CHECK(s.direct.xfers == 0 && s.staged.xfers == 6 && s.fallbacks == 6);
        if (int rc = get_put(n, 0, kDev0, kDev0, kMiB + 3, 9)) return rc; // same device: direct
        PT_CHECK(n.eng()->stats().direct.xfers == 2);
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    std::string res = run_pair(a, b, 60);
    REQUIRE(res == "");
}

namespace {

// Alloc / register / transfer / free / realloc at the same address, both
// sides, random sizes, paths, directions: never stale data.
int stale_stress(Node &n) {
    if (int rc = node_setup(n, three_engines())) return rc;
    std::mt19937 rng(12345);
    const size_t sizes[] = {4095, 64 << 10, kMiB + 3};
    std::map<uint64_t, int> seen;
    int repeats = 0;
    const int iters = 60;
    for (int i = 0; i < iters; ++i) {
        size_t len = sizes[rng() % 3];
        int where_r = (rng() % 2) ? kDev0 : kDev1;
        int where_l = (rng() % 2) ? kDev0 : kDev1;
        size_t eng = rng() % 3;
        uint64_t seed = 1000 + uint64_t(i) * 3;
        Reply r;
        PT_CHECK(remote_alloc(n, where_r, len, seed, true, &r));
        if (seen[r.addr]++ > 0) ++repeats;
        Buf l;
        PT_CHECK(buf_alloc(l, where_l, len));
        PT_CHECK(buf_zero(l));
        PT_CHECK(xfer(n, eng, true, l.p, len, r.addr, r.rkey) == 0);
        PT_CHECK(buf_check(l, seed));
        PT_CHECK(buf_fill(l, seed + 1));
        PT_CHECK(xfer(n, (eng + 1) % 3, false, l.p, len, r.addr, r.rkey) == 0);
        PT_CHECK(remote_check(n, r.addr, seed + 1));
        PT_CHECK(remote_free(n, r.addr));
        buf_free(l);
    }
    std::fprintf(stderr, "stale stress: %d of %d remote allocations reused an address\n",
                 repeats, iters);
    PT_CHECK(repeats >= iters / 2);
    PT_CHECK(quit(n));
    node_teardown(n);
    return 0;
}

} // namespace

namespace {
// A's side of a peer that stops serving: an 8 MiB device buffer in B (*r),
// then B stalls (alive, serving nothing); *l: a local 8 MiB device buffer.
int stall_peer(Node &n, Reply *r, Buf *l) {
    PT_CHECK(remote_alloc(n, kDev0, 8 * kMiB, 5, true, r));
    Cmd c;
    c.op = kStall;
    Reply sr;
    PT_CHECK(call(n, c, &sr));
    PT_CHECK(buf_alloc(*l, kDev1, 8 * kMiB));
    return 0;
}
} // namespace

TEST_CASE("free and realloc at the same address: no stale data (free hooks)", "[pipeline][sim]") {
    SKIP_WITHOUT_SIM();
    auto b = [](Node &n) { return serve_main(n, three_engines(), true); };
    REQUIRE(run_pair(stale_stress, b, 60) == "");
}

TEST_CASE("free and realloc at the same address: no stale data (BUFFER_ID only)",
          "[pipeline][sim]") {
    SKIP_WITHOUT_SIM();
    auto b = [](Node &n) { return serve_main(n, three_engines(), false); };
    REQUIRE(run_pair(stale_stress, b, 60) == "");
}

TEST_CASE("peer failure: reported and SIGKILLed mid-transfer", "[pipeline][sim]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_STAGED)})) return rc;
        Reply r;
        Buf l;
        if (int rc = stall_peer(n, &r, &l)) return rc; // B stops serving
        struct iovec iov{l.p, l.len};
        // reported failure: the transfer fails at once
        Done d1;
        PT_CHECK(gp_xfer_start(n.engines[0], n.peer, 1, &iov, 1, r.addr, &r.rkey, Done::cb, &d1) ==
                 1);
        for (int i = 0; i < 10; ++i) n.pump();
        PT_CHECK(!d1.done);
        gp_xfer_peer_failed(n.engines[0], n.peer);
        PT_CHECK(d1.done && d1.status < 0);
        // killed peer: the transfer fails within a bounded time
        Done d2;
        PT_CHECK(gp_xfer_start(n.engines[0], n.peer, 1, &iov, 1, r.addr, &r.rkey, Done::cb, &d2) ==
                 1);
        for (int i = 0; i < 10; ++i) n.pump();
        PT_CHECK(!d2.done);
        PT_CHECK(::kill(n.other, SIGKILL) == 0);
        auto t0 = Clock::now();
        double dt = 0;
        while (!d2.done && dt < 5) {
            n.pump();
            dt = std::chrono::duration<double>(Clock::now() - t0).count();
        }
        std::fprintf(stderr, "killed peer detected after %.3f s\n", dt);
        PT_CHECK(d2.done && d2.status < 0);
        PT_CHECK(dt < 1.0);
        PT_CHECK(gp_xfer_outstanding(n.engines[0]) == 0);
        // new transfers to the dead peer are refused
        Done d3;
        PT_CHECK(gp_xfer_start(n.engines[0], n.peer, 1, &iov, 1, r.addr, &r.rkey, Done::cb, &d3) <
                 0);
        buf_free(l);
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    REQUIRE(run_pair(a, b, 30, true) == "");
}

TEST_CASE("a live peer that stops serving: the staged transfer fails after the stall timeout",
          "[pipeline][sim][security]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        gp_xfer_config_t quick = config(GP_PATH_STAGED);
        quick.stall_timeout_s = 0.3;
        gp_xfer_config_t patient = config(GP_PATH_STAGED);
        patient.stall_timeout_s = 30; // far above any chunk's time
        if (int rc = node_setup(n, {quick, patient})) return rc;
        // with the timeout set, transfers that move complete as before
        PT_CHECK(get_put(n, 1, kDev1, kDev0, 8 * kMiB, 21) == 0);
        Reply r;
        Buf l;
        if (int rc = stall_peer(n, &r, &l)) return rc; // B alive, but serves nothing any more
        struct iovec iov{l.p, l.len};
        Done d;
        PT_CHECK(gp_xfer_start(n.engines[0], n.peer, 1, &iov, 1, r.addr, &r.rkey, Done::cb, &d) ==
                 1);
        // B sleeps 60 s: the failure can only be the timeout's (not a
        // dead peer's), whatever the machine's speed
        auto t0 = Clock::now();
        while (!d.done && std::chrono::duration<double>(Clock::now() - t0).count() < 50) n.pump();
        PT_CHECK(d.done && d.status == -ETIMEDOUT);
        PT_CHECK(gp_xfer_outstanding(n.engines[0]) == 0);
        PT_CHECK(::kill(n.other, SIGKILL) == 0);
        buf_free(l);
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_STAGED)}); };
    REQUIRE(run_pair(a, b, 90, true) == "");
}

TEST_CASE("garbage control messages are dropped, service continues", "[pipeline][sim]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_STAGED)})) return rc;
        using namespace gdrpipe::pipeline;
        std::mt19937 rng(99);
        auto post = [&](const void *p, uint32_t len) {
            uint64_t idx;
            void *buf = nullptr;
            while ((buf = gp_shm_reserve(n.peer, &idx)) == nullptr) n.pump();
            std::memcpy(buf, p, len);
            gp_shm_commit(n.peer, idx, GP_CTRL_AM_ID, len);
        };
        int posted = 0;
        uint8_t junk[sizeof(CtrlMsg)];
        for (int i = 0; i < 20; ++i) { // random bytes of the right size
            for (auto &j : junk) j = uint8_t(rng());
            post(junk, sizeof(junk));
            ++posted;
        }
        post(junk, 7); // wrong size
        ++posted;
        CtrlMsg m{}; // well formed, pointing at nothing
        m.type = kStageOut;
        m.req_pid = getpid();
        m.seg_fd = 1000;
        m.req_start_time = 1;
        m.seg_id = 77;
        m.seg_size = 1 << 24;
        m.depth = 4;
        m.chunk = 256 << 10;
        m.xfer_id = 5;
        m.remote_addr = 0x1000;
        m.length = 100;
        ctrl_seal(m);
        post(&m, sizeof(m));
        ++posted;
        m.req_start_time = gdrpipe::wire::process_start_time(getpid());
        ctrl_seal(m);
        post(&m, sizeof(m)); // live requester, no such segment
        ++posted;
        // service still works (B's transfer counters move)
        if (int rc = get_put(n, 0, kDev0, kDev1, kMiB + 3, 3)) return rc;
        Cmd c;
        c.op = kStats;
        Reply r;
        PT_CHECK(call(n, c, &r));
        std::fprintf(stderr, "garbage: dropped %llu of %d posted\n",
                     static_cast<unsigned long long>(r.value), posted);
        PT_CHECK(r.value == uint64_t(posted));
        PT_CHECK(r.value2 == 2);
        // a start with a garbage rkey is refused
        gp_rkey_t bad{};
        Buf l;
        PT_CHECK(buf_alloc(l, kDev0, 4096));
        struct iovec iov{l.p, 4096};
        PT_CHECK(gp_xfer_start(n.engines[0], n.peer, 1, &iov, 1, 0, &bad, nullptr, nullptr) ==
                 -EINVAL);
        buf_free(l);
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    REQUIRE(run_pair(a, b, 30) == "");
}
